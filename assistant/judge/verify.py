"""Each answer sentence judged against the abstracts it cites, after generation, for any provider.

A sentence is ``supported`` when the judge's score reaches its threshold, ``weak`` within
``WEAK_BAND`` below it, ``unsupported`` otherwise, unless an exact check
(``eval/conflicts.py``: a number no cited source gives, another paper's name, a negation of the
cited sentence, a dropped "up to") decides first; ``reason`` then says which. ``judgement`` is
that one decision; answer-time marks, ``--strict``, the eval's faithfulness and the judge's
calibration all call it. A sentence the model left without a marker is
judged against every source; when one supports it, it is *attributed* to that source by the
checker (marked as such, never passed off as the model's citation). A mark is the judge's
judgement, not a proof: see docs/verified-answers.md for its measured agreement with human labels.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any, Literal

from assistant.answer.citations import cited_numbers
from assistant.judge.claims import cited_sentences
from assistant.judge.conflicts import Conflict, PaperText, find_conflict
from assistant.judge.judges import Judge
from assistant.judge.names import Source
from assistant.text.normalise import split_sentences

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
    reason: str = ""  # the exact check that decided, when one did

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
            "reason": self.reason,
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


@dataclass(frozen=True)
class Judgement:
    score: float
    verdict: Verdict
    reason: str = ""


def verdict_of(score: float, threshold: float) -> Verdict:
    if score >= threshold:
        return "supported"
    return "weak" if score >= threshold - WEAK_BAND else "unsupported"


def judgement(
    judge: Judge, claim: str, cited: Sequence[Source], papers: Sequence[Source] = ()
) -> Judgement:
    """The one decision: the judge's score (the lowest over the claim's atomic claims, for a
    judge that splits them), overruled by an exact conflict, whose reason is kept. A claim
    that cites nothing is unsupported. ``papers``: every retrieved paper, to name the owner of
    a borrowed name."""
    if not cited:
        return Judgement(0.0, "unsupported")
    claim = without_lead(claim, cited)
    texts = [s.text for s in cited]
    claims = judge.claims(claim) or [claim]
    score = min(judge.support(c, texts) for c in claims)
    return overruled(score, find_conflict(claim, cited, papers), judge.threshold)


def without_lead(claim: str, cited: Sequence[Source]) -> str:
    """The claim without a lead that names a paper it cites ("KVFlow: ...", a whole title and
    a colon, as the extractive answer writes): who says it, not what is said, so a title's
    words ("No-Till", "Loss") are neither judged nor counted as negations. A lead naming a
    paper the sentence does not cite is kept, for the name check to catch."""
    text = claim.lstrip("-*• ")
    for source in cited:
        label = " ".join(source.label.split())
        if not label or not text.casefold().startswith(label.casefold()):
            continue
        rest = text[len(label) :].lstrip()
        if rest.startswith(":") and rest[1:].strip():
            return rest[1:].strip()
    return claim


def overruled(score: float, conflict: Conflict | None, threshold: float) -> Judgement:
    """The judge's score as a verdict, unless an exact conflict decides: the score is then
    capped below the conflict's band, so the mark and the number agree."""
    if conflict is None:
        return Judgement(score, verdict_of(score, threshold))
    ceiling = threshold - (WEAK_BAND if conflict.severity == "unsupported" else 0.0)
    capped = min(score, round(ceiling - 0.01, 4))
    return Judgement(capped, verdict_of(capped, threshold), conflict.reason)


def _sources(abstracts: Mapping[int, str], papers: Sequence[Source]) -> dict[int, Source]:
    """Each numbered abstract with its paper's label, when ``papers`` has it."""
    labels = {p.text: p.label for p in papers}
    return {n: PaperText(text, labels.get(text, "")) for n, text in abstracts.items()}


class Verifier:
    def __init__(self, judge: Judge):
        self.judge = judge

    def verdict(self, score: float) -> Verdict:
        return verdict_of(score, self.judge.threshold)

    def check(
        self,
        text: str,
        abstracts: Mapping[int, str],
        attributed: Set[str] = frozenset(),
        papers: Sequence[Source] = (),
    ) -> list[SentenceCheck]:
        """One check per claim-making sentence of ``text``; sources are numbered as in it.
        ``attributed``: sentences (see ``bare``) whose markers the checker added earlier.
        ``papers``: the retrieved papers (labels and abstracts), so a claim may use the cited
        paper's label and a name borrowed from another paper is told as such."""
        sources = _sources(abstracts, papers)
        checks = []
        for sentence in cited_sentences(text):
            cited = tuple(n for n in cited_numbers(sentence.text) if n in sources)
            if cited:
                evidence = [sources[n] for n in cited]
                found = judgement(self.judge, sentence.text, evidence, papers)
                by_checker = bare(sentence.text) in attributed
                checks.append(self._check(sentence.text, cited, found, evidence, by_checker))
            else:
                checks.append(self._attribute(sentence.text, sources, papers))
        return checks

    def _attribute(
        self, sentence: str, sources: Mapping[int, Source], papers: Sequence[Source]
    ) -> SentenceCheck:
        found = {n: judgement(self.judge, sentence, [s], papers) for n, s in sources.items()}
        supported = [n for n in found if found[n].verdict == "supported"]
        if not supported:
            best = max(found, key=lambda n: found[n].score, default=None)
            score = found[best].score if best is not None else 0.0
            return SentenceCheck(sentence, (), score, "unsupported", "", attributed=False)
        best = max(supported, key=lambda n: found[n].score)
        return self._check(sentence, (best,), found[best], [sources[best]], attributed=True)

    def _check(
        self,
        sentence: str,
        numbers: tuple[int, ...],
        found: Judgement,
        evidence: Sequence[Source],
        attributed: bool,
    ) -> SentenceCheck:
        pointer = closest_sentence(sentence, [s.text for s in evidence])
        return SentenceCheck(
            sentence, numbers, found.score, found.verdict, pointer, attributed, found.reason
        )
