"""Features for the offline support judge: does the evidence state the claim?

Each feature is cheap and explainable: embedding similarity to the best evidence sentence, how
many of the claim's terms, bigrams and numbers the evidence contains, and whether a negation
appears on one side only. A logistic model over them is fitted on SciFact (see
evals/judge/fit_offline_judge.py) and shipped as JSON.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from assistant.embeddings import Embedder
from assistant.lexical import analyze
from assistant.text import split_sentences

FEATURES = (
    "best_cosine",
    "mean_top2_cosine",
    "term_recall_best",
    "term_recall_all",
    "bigram_recall_all",
    "number_recall",
    "has_numbers",
    "negation_mismatch",
    "claim_terms_log",
)
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:[.,]\d+)*%?")
_NEGATION = re.compile(
    r"\b(?:not|no|never|none|neither|nor|without|cannot|can't|doesn't|don't|isn't|aren't|"
    r"wasn't|weren't|fails?|failed|lack|lacks|absence|unable|decrease[sd]?|reduce[sd]?|"
    r"lower|inhibit[s]?|prevent[s]?)\b",
    re.IGNORECASE,
)
_MARKERS = re.compile(r"\s*\[\d+(?:\s*[,;\-–]\s*\d+)*\]")


def strip_markers(text: str) -> str:
    return _MARKERS.sub("", text).strip()


def _numbers(text: str) -> set[str]:
    return {n.rstrip("%").replace(",", "") for n in _NUMBER.findall(text)}


def _bigrams(terms: list[str]) -> set[tuple[str, str]]:
    return set(zip(terms, terms[1:], strict=False))


class FeatureExtractor:
    """Computes FEATURES for (claim, evidence) pairs, caching sentence embeddings."""

    def __init__(self, embedder: Embedder):
        self.embedder = embedder
        self._cache: dict[str, np.ndarray] = {}

    def _embed(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            for text, vector in zip(missing, self.embedder.embed(missing), strict=True):
                self._cache[text] = vector
        if len(self._cache) > 200_000:  # bound memory on long calibration runs
            self._cache.clear()
            return self._embed(texts)
        return np.stack([self._cache[t] for t in texts])

    def features(self, claim: str, evidence: Sequence[str]) -> np.ndarray:
        claim = strip_markers(claim)
        sentences = [s for passage in evidence for s in split_sentences(passage)] or [""]
        vectors = self._embed([claim, *sentences])
        cosines = vectors[1:] @ vectors[0]
        order = np.argsort(-cosines)
        claim_terms = analyze([claim])[0]
        sentence_terms = analyze(sentences)
        all_terms = {t for terms in sentence_terms for t in terms}
        all_bigrams = set().union(*(_bigrams(t) for t in sentence_terms))
        unique = set(claim_terms) or {""}
        best_recall = max(len(unique & set(t)) / len(unique) for t in sentence_terms)
        claim_bigrams = _bigrams(claim_terms)
        numbers = _numbers(claim)
        evidence_numbers = set().union(*(_numbers(s) for s in sentences))
        best = sentences[int(order[0])]
        return np.array(
            [
                float(cosines[order[0]]),
                float(cosines[order[:2]].mean()),
                best_recall,
                len(unique & all_terms) / len(unique),
                len(claim_bigrams & all_bigrams) / len(claim_bigrams) if claim_bigrams else 1.0,
                len(numbers & evidence_numbers) / len(numbers) if numbers else 1.0,
                1.0 if numbers else 0.0,
                float(bool(_NEGATION.search(claim)) != bool(_NEGATION.search(best))),
                float(np.log1p(len(unique))),
            ],
            dtype=np.float64,
        )
