"""Retrieval metrics against gold relevance: recall@k, MRR, nDCG@k.

``ranked`` is a list of ids, best first; ``relevant`` maps id -> graded relevance (> 0).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def recall_at_k(ranked: Sequence[str], relevant: Mapping[str, float], k: int) -> float:
    if not relevant:
        return 0.0
    found = sum(1 for doc in ranked[:k] if relevant.get(doc, 0) > 0)
    return found / sum(1 for r in relevant.values() if r > 0)


def mrr(ranked: Sequence[str], relevant: Mapping[str, float], k: int | None = None) -> float:
    for position, doc in enumerate(ranked[:k] if k else ranked, start=1):
        if relevant.get(doc, 0) > 0:
            return 1.0 / position
    return 0.0


def ndcg_at_k(ranked: Sequence[str], relevant: Mapping[str, float], k: int = 10) -> float:
    """Normalised DCG with exponential gain (2^rel - 1), as in BEIR / trec_eval."""
    gains = sorted((r for r in relevant.values() if r > 0), reverse=True)[:k]
    ideal = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(gains))
    if ideal == 0:
        return 0.0
    dcg = sum(
        (2 ** relevant.get(doc, 0) - 1) / math.log2(i + 2)
        for i, doc in enumerate(ranked[:k])
        if relevant.get(doc, 0) > 0
    )
    return dcg / ideal
