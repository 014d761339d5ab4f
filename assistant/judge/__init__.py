"""Is each sentence of an answer supported by the abstracts it cites? Exact checks (numbers,
names, negations) and a fitted offline judge, one decision used by answers and evals alike.
"""
