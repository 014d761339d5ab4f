"""Reading papers in and indexing them: files -> ``Paper`` records -> token-aware chunks
and sentences -> vectors -> the store. Each run is incremental and idempotent.
"""
