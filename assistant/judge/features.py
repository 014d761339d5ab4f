"""Features for the offline support judge: does the evidence state the claim?

Each feature is cheap and explainable: embedding similarity to the best evidence sentence, how
many of the claim's terms, bigrams and numbers the evidence contains, how well the claim's word
pieces align with the evidence's in context (BERTScore-style recall, same MiniLM forward pass),
whether a negation appears on one side only, and whether the best sentence moves the claim's
quantity the other way or drops what the claim negates (polarity.py), alone and weighted by the
alignment. A logistic model over them is fitted on SciFact (see
evals/judge/fit_offline_judge.py) and shipped as JSON.
"""

from __future__ import annotations

import re
import string
import threading
from collections.abc import Sequence

import numpy as np

from assistant.embedding.embedders import MiniLMEmbedder, TokenStates
from assistant.judge.polarity import (
    aligned_direction,
    aligned_polarity,
    negated_assertion,
    words_from_pieces,
)
from assistant.text.normalise import split_sentences
from assistant.text.terms import analyze

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
    "token_recall_best",
    "token_recall_all",
    "direction_conflict",
    "direction_agree",
    "aligned_conflict",
    "aligned_agree",
    "negation_conflict",
    "negation_agree",
    "direction_conflict_x_recall",
    "aligned_conflict_x_recall",
    "negation_conflict_x_recall",
    "aligned_conflict_top3",
    "negation_conflict_top3",
)
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:[.,]\d+)*%?")
_NEGATION = re.compile(
    r"\b(?:not|no|never|none|neither|nor|without|cannot|can't|doesn't|don't|isn't|aren't|"
    r"wasn't|weren't|fails?|failed|lack|lacks|absence|unable|decrease[sd]?|reduce[sd]?|"
    r"lower|inhibit[s]?|prevent[s]?)\b",
    re.IGNORECASE,
)
# Word pieces that carry no content: left out of the claim side of the token alignment.
_FILLER = frozenset(
    "the of in and a an to is are was were be been by for with on at as that this these those "
    "from or it its their which we our than also can may into".split()
) | frozenset(string.punctuation)
_CACHE_LIMIT = 4_000  # texts' MiniLM states: about 60 KB each
_MARKERS = re.compile(r"\s*\[\d+(?:\s*[,;\-–]\s*\d+)*\]")


def strip_markers(text: str) -> str:
    return _MARKERS.sub("", text).strip()


def _numbers(text: str) -> set[str]:
    return {n.rstrip("%").replace(",", "") for n in _NUMBER.findall(text)}


def _bigrams(terms: list[str]) -> set[tuple[str, str]]:
    return set(zip(terms, terms[1:], strict=False))


class FeatureExtractor:
    """Computes FEATURES for (claim, evidence) pairs, caching MiniLM's output per text."""

    def __init__(self, embedder: MiniLMEmbedder):
        self.embedder = embedder
        self._states: dict[str, TokenStates] = {}
        self._lock = threading.Lock()  # eval workers share one judge

    def _encode(self, texts: list[str]) -> list[TokenStates]:
        # What this call needs is held locally, so another thread clearing the cache (to bound
        # its memory) cannot take it away between the look-up and the use.
        with self._lock:
            known = {t: self._states[t] for t in texts if t in self._states}
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        if missing:
            fresh = dict(zip(missing, self.embedder.token_states(missing), strict=True))
            known.update(fresh)
            with self._lock:
                if len(self._states) + len(fresh) > _CACHE_LIMIT:  # bound memory on long runs
                    self._states.clear()
                self._states.update(fresh)
        return [known[t] for t in texts]

    def _claim_pieces(self, claim: str) -> np.ndarray:
        states = self._encode([claim])[0]
        keep = np.array([p not in _FILLER for p in states.pieces], dtype=bool)
        return states.piece_vectors[keep] if keep.any() else states.piece_vectors

    def _words(self, text: str) -> tuple[list[str], np.ndarray]:
        states = self._encode([text])[0]
        return words_from_pieces(states.pieces, states.piece_vectors)

    def token_recalls(self, claim: str, sentences: list[str]) -> np.ndarray:
        """Per sentence: mean over the claim's pieces of their best match in the sentence,
        plus, last, the same against all sentences together."""
        claim_vectors = self._claim_pieces(claim)
        best = [
            (claim_vectors @ v.T).max(axis=1) if len(v) and len(claim_vectors) else None
            for v in (states.piece_vectors for states in self._encode(sentences))
        ]
        present = [b for b in best if b is not None]
        if not present:
            return np.zeros(len(sentences) + 1)
        per_sentence = [float(b.mean()) if b is not None else 0.0 for b in best]
        overall = float(np.max(np.stack(present), axis=0).mean())
        return np.array([*per_sentence, overall])

    def features(self, claim: str, evidence: Sequence[str]) -> np.ndarray:
        claim = strip_markers(claim)
        sentences = [s for passage in evidence for s in split_sentences(passage)] or [""]
        vectors = np.stack([states.vector for states in self._encode([claim, *sentences])])
        cosines = vectors[1:] @ vectors[0]
        order = np.argsort(-cosines)  # closest sentence first
        return np.array(
            [
                *_overlap(claim, sentences, cosines, order),
                *self._alignment(claim, sentences, order),
            ],
            dtype=np.float64,
        )

    def _alignment(self, claim: str, sentences: list[str], order: np.ndarray) -> list[float]:
        """Word-piece recall, then the contradiction cues of polarity.py."""
        recalls = self.token_recalls(claim, sentences)
        best = sentences[int(order[0])]
        recall_best = float(recalls[:-1].max())
        claim_polarity, best_polarity = aligned_polarity(claim, best)
        claim_words = self._words(claim)
        # Aligned cues for the three closest sentences, the closest first.
        near = []
        for index in order[:3]:
            words = self._words(sentences[int(index)])
            near.append(
                (
                    aligned_direction(claim_words, words),
                    negated_assertion(claim_words, words),
                    float(recalls[int(index)]),
                )
            )
        direction, negation, _ = near[0]
        conflicts = (
            float(claim_polarity * best_polarity < 0),
            float(direction[0] > 0),
            float(negation[0] > 0),
        )
        # The same conflicts in any of the three, weighted by how well that sentence aligns.
        near_direction = max([0.0, *(weight for d, _, weight in near if d[0])])
        near_negation = max([0.0, *(weight for _, n, weight in near if n[0])])
        return [
            recall_best,
            float(recalls[-1]),
            conflicts[0],
            float(claim_polarity * best_polarity > 0),
            conflicts[1],
            float(direction[1] > 0 and direction[0] == 0),
            conflicts[2],
            float(negation[1] > 0),
            # A conflict weighs more when the sentence is about what the claim is about.
            *(conflict * recall_best for conflict in conflicts),
            near_direction,
            near_negation,
        ]


def _overlap(
    claim: str, sentences: list[str], cosines: np.ndarray, order: np.ndarray
) -> list[float]:
    """Similarity and lexical overlap with the evidence, and the one-sided negation cue."""
    claim_terms = analyze([claim])[0]
    sentence_terms = analyze(sentences)
    all_terms = {t for terms in sentence_terms for t in terms}
    all_bigrams = set().union(*(_bigrams(t) for t in sentence_terms))
    unique = set(claim_terms) or {""}
    claim_bigrams = _bigrams(claim_terms)
    numbers = _numbers(claim)
    evidence_numbers = set().union(*(_numbers(s) for s in sentences))
    best = sentences[int(order[0])]
    return [
        float(cosines[order[0]]),
        float(cosines[order[:2]].mean()),
        max(len(unique & set(t)) / len(unique) for t in sentence_terms),
        len(unique & all_terms) / len(unique),
        len(claim_bigrams & all_bigrams) / len(claim_bigrams) if claim_bigrams else 1.0,
        len(numbers & evidence_numbers) / len(numbers) if numbers else 1.0,
        1.0 if numbers else 0.0,
        float(bool(_NEGATION.search(claim)) != bool(_NEGATION.search(best))),
        float(np.log1p(len(unique))),
    ]
