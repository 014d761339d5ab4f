"""The offline answerer: no LLM. It quotes the abstract sentences that answer the question,
chosen by small fitted models (which sentences answer, which papers a survey keeps).
"""
