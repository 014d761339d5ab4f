"""Each answer sentence judged against the abstracts it cites, after generation, for any provider.

A sentence is ``supported`` when the judge's score reaches its threshold, ``weak`` within
``WEAK_BAND`` below it, ``unsupported`` otherwise. A sentence the model left without a marker is
judged against every source; when one supports it, it is *attributed* to that source by the
checker (marked as such, never passed off as the model's citation). A mark is the judge's
judgement, not a proof: see the README for its measured agreement with human labels.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any, Literal

from assistant.citations import cited_numbers
from assistant.eval.claims import cited_sentences
from assistant.eval.judges import Judge
from assistant.text import split_sentences

Verdict = Literal["supported", "weak", "unsupported"]
WEAK_BAND = 0.15
_MARKER = re.compile(r"\[\d+(?:\s*[,;–-]\s*\d+)*\]")
MARKS = {"supported": ("✓", "+"), "weak": ("?", "?"), "unsupported": ("✗", "x")}


@dataclass(frozen=True)
class SentenceCheck:
    sentence: str
    sources: tuple[int, ...]  # the sources it was judged against
    score: float
    verdict: Verdict
    evidence: str  # the closest sentence of those sources
    attributed: bool = False  # the checker, not the model, chose the source

    def mark(self, unicode: bool = True) -> str:
        return MARKS[self.verdict][0 if unicode else 1]

    def to_json(self) -> dict[str, Any]:
        return {
            "sentence": self.sentence,
            "sources": list(self.sources),
            "score": round(self.score, 4),
            "verdict": self.verdict,
            "evidence": self.evidence,
            "attributed": self.attributed,
        }


def bare(sentence: str) -> str:
    """A sentence without its citation markers, spacing and final stop: what stays the same
    when markers are added or renumbered."""
    return " ".join(_MARKER.sub(" ", sentence).split()).rstrip(".!? ")


def closest_sentence(claim: str, passages: Sequence[str]) -> str:
    """The evidence sentence sharing most words with the claim (a reader's pointer)."""
    words = {w.lower().strip(".,;:()") for w in claim.split() if len(w) > 3}
    sentences = [s for p in passages for s in split_sentences(p)]
    if not sentences:
        return ""
    return max(sentences, key=lambda s: len(words & {w.lower().strip(".,;:()") for w in s.split()}))


class Verifier:
    def __init__(self, judge: Judge):
        self.judge = judge

    def verdict(self, score: float) -> Verdict:
        if score >= self.judge.threshold:
            return "supported"
        return "weak" if score >= self.judge.threshold - WEAK_BAND else "unsupported"

    def check(
        self, text: str, abstracts: Mapping[int, str], attributed: Set[str] = frozenset()
    ) -> list[SentenceCheck]:
        """One check per claim-making sentence of ``text``; sources are numbered as in it.
        ``attributed``: sentences (see ``bare``) whose markers the checker added earlier."""
        checks = []
        for sentence in cited_sentences(text):
            cited = tuple(n for n in cited_numbers(sentence.text) if n in abstracts)
            if cited:
                evidence = [abstracts[n] for n in cited]
                score = self.judge.support(sentence.text, evidence)
                by_checker = bare(sentence.text) in attributed
                checks.append(self._check(sentence.text, cited, score, evidence, by_checker))
            else:
                checks.append(self._attribute(sentence.text, abstracts))
        return checks

    def _attribute(self, sentence: str, abstracts: Mapping[int, str]) -> SentenceCheck:
        scores = {n: self.judge.support(sentence, [text]) for n, text in abstracts.items()}
        best = max(scores, key=lambda n: scores[n], default=None)
        if best is None or scores[best] < self.judge.threshold:
            score = scores[best] if best is not None else 0.0
            return SentenceCheck(sentence, (), score, "unsupported", "", attributed=False)
        return self._check(sentence, (best,), scores[best], [abstracts[best]], attributed=True)

    def _check(
        self,
        sentence: str,
        sources: tuple[int, ...],
        score: float,
        evidence: Sequence[str],
        attributed: bool,
    ) -> SentenceCheck:
        pointer = closest_sentence(sentence, evidence)
        return SentenceCheck(sentence, sources, score, self.verdict(score), pointer, attributed)
