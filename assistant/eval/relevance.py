"""Answer relevance (does the answer address the question?) and correctness against reference
facts written with the eval set."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from assistant.embedding.embedders import Embedder
from assistant.judge.features import strip_markers


def answer_relevance(question: str, answer: str, embedder: Embedder) -> float:
    """Cosine similarity of question and answer (without markers), clipped to [0, 1]."""
    vectors = embedder.embed([question, strip_markers(answer)])
    return max(0.0, min(1.0, float(vectors[0] @ vectors[1])))


def _canon(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower().replace("×", "x")
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)  # 40,000 -> 40000
    return " ".join(re.sub(r"[^\w%.+-]+", " ", text).split())


def fact_found(fact: str, answer: str) -> bool:
    return _canon(fact) in _canon(answer)


def correctness(answer: str, reference: Sequence[str]) -> float | None:
    """Share of reference facts the answer states (None when there are none)."""
    if not reference:
        return None
    return sum(fact_found(f, answer) for f in reference) / len(reference)
