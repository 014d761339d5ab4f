"""The ``assistant`` command: ``ingest``, ``search``, ``ask``, ``chat``, ``eval`` and
``info``, and the terminal rendering they share.
"""
