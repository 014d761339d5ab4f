"""A claim that says what its source says, negated or reversed.

"KVFlow does not improve throughput" against "KVFlow improves throughput", "X is worse than Y"
against "X is better than Y": every content word is shared, so overlap and similarity call it
support. The claim is compared with the source sentence that shares most of its content words;
when that sentence is about the same thing (it holds most of the claim's content words) and the
claim negates it ("not", "fails to", "cannot" the sentence does not have) or puts a word of the
opposite direction where the sentence has its counterpart ("worse" for "better"), the claim
contradicts its source. When it repeats the sentence without the qualifier that limits it
("in some settings", "often", "up to"), it overstates it (``dropped_qualifier``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from assistant.text.terms import analyze

_NEGATION = re.compile(
    r"\b(?:not|no|never|cannot|can't|won't|n't|neither|nor|none|nothing|without|unable|"
    r"fail|fails|failed|failing|lack|lacks|lacking)\b|n't\b",
    re.IGNORECASE,
)
# Opposites: a claim with the left word where the sentence has the right one (or the reverse).
_OPPOSITES = (
    ("better", "worse"),
    ("best", "worst"),
    ("higher", "lower"),
    ("highest", "lowest"),
    ("more", "less"),
    ("more", "fewer"),
    ("faster", "slower"),
    ("larger", "smaller"),
    ("increase", "decrease"),
    ("increases", "decreases"),
    ("increased", "decreased"),
    ("increasing", "decreasing"),
    ("improve", "degrade"),
    ("improves", "degrades"),
    ("improved", "degraded"),
    ("improve", "worsen"),
    ("improves", "worsens"),
    ("outperform", "underperform"),
    ("outperforms", "underperforms"),
    ("outperformed", "underperformed"),
    ("enables", "prevents"),
    ("reduces", "increases"),
    ("reduce", "increase"),
    ("reduced", "increased"),
    ("lowers", "raises"),
    ("accelerates", "slows"),
    ("efficient", "inefficient"),
    ("effective", "ineffective"),
    ("consistent", "inconsistent"),
    ("stable", "unstable"),
    ("robust", "fragile"),
    ("significant", "insignificant"),
    ("superior", "inferior"),
    ("above", "below"),
    ("positive", "negative"),
    ("positively", "negatively"),
    ("strong", "weak"),
    ("stronger", "weaker"),
    ("easier", "harder"),
    ("success", "failure"),
)
_OPPOSITE = {a: b for a, b in _OPPOSITES} | {b: a for a, b in _OPPOSITES}
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
SAME_STATEMENT = 0.6  # share of the claim's content words the sentence must hold
RESTATED = 0.8  # ... for a claim to count as the sentence restated
_QUALIFIER = re.compile(
    r"\b(?:up to|as much as|in (?:some|certain|many|most) (?:settings|cases)|"
    r"under (?:some|certain) conditions|often|partially|in part)\b",
    re.IGNORECASE,
)


def _negations(text: str) -> int:
    return len(_NEGATION.findall(text))


def _terms(text: str) -> set[str]:
    words = [w for w in _WORD.findall(text) if w.lower() not in _OPPOSITE]
    return set(analyze([" ".join(words)])[0]) if words else set()


def closest(claim: str, sentences: Sequence[str]) -> tuple[str, float]:
    """The sentence holding the largest share of the claim's content words, and that share
    (direction and negation words left out, so a reversed claim still finds its sentence)."""
    wanted = _terms(claim)
    if not wanted or not sentences:
        return "", 0.0
    shares = [len(wanted & _terms(s)) / len(wanted) for s in sentences]
    best = max(range(len(sentences)), key=shares.__getitem__)
    return sentences[best], shares[best]


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def reversal(claim: str, sentences: Sequence[str]) -> str | None:
    """How the claim contradicts its closest sentence ("negates: ..."), or None."""
    sentence, share = closest(claim, sentences)
    if share < SAME_STATEMENT:
        return None
    if _negations(claim) > _negations(sentence):
        return f"negates the source: {sentence}"
    claim_words, sentence_words = _words(claim), _words(sentence)
    for word in sorted(claim_words - sentence_words):
        opposite = _OPPOSITE.get(word)
        if opposite and opposite in sentence_words and opposite not in claim_words:
            return f"says {word!r} where the source says {opposite!r}: {sentence}"
    return None


def dropped_qualifier(claim: str, sentences: Sequence[str]) -> str | None:
    """The qualifier of the sentence the claim restates that the claim leaves out, or None."""
    sentence, share = closest(claim, sentences)
    if share < RESTATED:
        return None
    kept = {q.lower() for q in _QUALIFIER.findall(claim)}
    missing = [q for q in _QUALIFIER.findall(sentence) if q.lower() not in kept]
    return f"the source says {missing[0]!r}: {sentence}" if missing else None
