"""What a question asks for, so the extractive answer quotes only what answers it.

- ``is_survey``: "which papers …", "are there papers …" want every paper that qualifies; any
  other question is about one paper, and is answered from the best one (or the ones it names).
- ``counted_terms`` / ``states_count``: "how many videos does MoveBench contain?" is answered
  only by a sentence that has a number and says "videos"; an abstract that mentions its videos
  but never counts them does not answer it.
- ``coverage``: how much of what the question asks for appears in an abstract, each asked-for
  term weighted by its rarity in the corpus (IDF). Names of the paper and question words do not
  count: "How many GPUs were used to train STARFlow?" asks for "GPUs", which the STARFlow
  abstract never mentions, so its coverage is low and the answer is a refusal, not three
  sentences about STARFlow.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from functools import cache

from assistant.lexical import analyze

# Document frequencies of terms in the corpus, and the corpus size: what makes a term rare.
Rarity = Callable[[list[str]], tuple[dict[str, int], int]]

_SURVEY = re.compile(
    r"\b(?:which|what|any|list|name|find|are there|is there)\b[^?]{0,30}\b(?:papers|works|"
    r"studies|abstracts|methods|approaches|articles)\b|\bpapers (?:that|which|on|about)\b"
    r"|\bcompare\b",
    re.IGNORECASE,
)
# Words that say how a question is asked, not what it is about.
_ASKING = (
    "which what who whom whose when where why how many much does do did is are was were be been "
    "the a an of in on for to by with from and or as at its it their this that these those "
    "paper papers study studies work works propose proposes proposed method methods approach "
    "approaches abstract abstracts article report reports reported according use used using "
    "show shows find finds result results new main kind type name named called neurips 2025 "
    "about any there tell me please give list describe explain up them they without like "
    "against such into onto over under via between so very too little lot lots much more most "
    "less least few fewer many also just still even only really well quite rather can could "
    "would should may might will shall must get gets got make makes made go goes going way "
    "ways thing things something anything actually exactly"
)


@cache
def _asking_terms() -> frozenset[str]:
    return frozenset(analyze([_ASKING])[0])


def is_survey(question: str) -> bool:
    """Asks for all the papers that qualify, not about one paper."""
    return bool(_SURVEY.search(question))


def asked_terms(question: str, names: Iterable[str] = ()) -> list[str]:
    """The question's content terms, without question words and the names of papers."""
    named = {t for name in names for t in analyze([name])[0]}
    skip = _asking_terms() | named
    return [t for t in dict.fromkeys(analyze([question])[0]) if t not in skip]


def idf_weights(terms: list[str], rarity: Rarity | None) -> dict[str, float]:
    """IDF of each term in the corpus; uniform when no corpus statistics are at hand."""
    if rarity is None:
        return dict.fromkeys(terms, 1.0)
    counts, total = rarity(terms)
    return {t: math.log((total + 1) / (counts.get(t, 0) + 0.5)) for t in terms}


def coverage(terms: list[str], weights: dict[str, float], text: str) -> float:
    """The IDF-weighted share of the asked-for terms that the text contains (1.0 when the
    question asks for nothing beyond names)."""
    total = sum(weights.get(t, 0.0) for t in terms)
    if total <= 0:
        return 1.0
    present = set(analyze([text])[0])
    return sum(weights.get(t, 0.0) for t in terms if t in present) / total


_HOW_MANY = re.compile(r"\bhow many ([\w-]+(?:\s+[\w-]+)?)", re.IGNORECASE)
# A count: a whole number ("11,000", "25", "7K", "1.2M") or a number word, not a unit's
# measure ("5-second", "480p", "4-bit", "14B" in "Wan-I2V-14B") and not a ratio ("1.5").
_COUNT = re.compile(
    r"(?<![\w.-])(?:\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?\s?[KMB]\b|\d+)(?![\w.-]|\.\d)|\b(?:one|two|"
    r"three|four|five|six|seven|eight|nine|ten|eleven|twelve|dozens?|hundreds?|thousands?|"
    r"millions?|billions?|single|pair|twice|double)\b",
    re.IGNORECASE,
)
# "What top-1 accuracy does X reach?", "what BLEU score ...": a measured value is asked for.
_MEASURE = re.compile(
    r"\b(?:what|which)\s+(?:[\w-]+\s+){0,3}?(accuracy|score|f1|bleu|rouge|auc|perplexity|"
    r"error|error rate|speed-?up|latency|throughput|win rate|success rate|improvement)\b",
    re.IGNORECASE,
)
# A value: a number not fused to a unit word ("4-bit", "100x" are settings, not results).
_VALUE = re.compile(r"(?<![\w.-])\d+(?:[.,]\d+)*\s?%?(?![\w-])")


# Questions that ask for a quantity are answered by sentences with numbers in them.
_QUANTITY = re.compile(
    r"\b(?:how (?:many|much|fast|large|big|long|often)|by how much|what (?:percentage|"
    r"fraction|accuracy|speed-?up|score|number|size)|to what extent)\b",
    re.IGNORECASE,
)
# "By how much ...", "by what percentage ...": only a figure answers.
_ASKS_FIGURE = re.compile(
    r"\b(?:by how much|how much (?:faster|slower|better|worse|cheaper|more|less|fewer|higher|"
    r"lower|smaller|larger)|by what (?:percentage|factor|margin|fraction)|what (?:percentage|"
    r"fraction))\b",
    re.IGNORECASE,
)


def asks_quantity(question: str) -> bool:
    """Asks how many, how much, how fast ...: a sentence with a number answers best."""
    return bool(_QUANTITY.search(question))


def asks_figure(question: str) -> bool:
    """Asks for a figure only an abstract's numbers can give ("by how much ...")."""
    return bool(_ASKS_FIGURE.search(question))


def has_value(sentence: str) -> bool:
    return bool(_VALUE.search(sentence))


def counted_terms(question: str) -> list[list[str]]:
    """The things a question asks to count, the two words after each "how many": "How many
    images are in X and how many distinct groups?" -> [["imag"], ["distinct", "group"]]; []
    when it asks for no count."""
    return [
        [t for t in analyze([match.group(1)])[0] if t not in _asking_terms()]
        for match in _HOW_MANY.finditer(question)
    ]


def states_count(counted: list[list[str]], sentences: Iterable[str]) -> bool:
    """Some sentence gives a count together with one of the things counted, or the last
    sentence given (the one closest to the question, which may name them otherwise: "people"
    for "participants") gives a count."""
    wanted = {t for terms in counted for t in terms}
    sentences = list(sentences)
    if not wanted or (sentences and _COUNT.search(sentences[-1])):
        return True
    return any(_COUNT.search(s) and wanted & set(analyze([s])[0]) for s in sentences)


def measured_terms(question: str) -> list[str]:
    """The measures a question asks the value of: "What ImageNet top-1 accuracy does GPLQ
    reach?" -> ["accuraci"]; [] when it asks for none."""
    return [t for m in _MEASURE.finditer(question) for t in analyze([m.group(1)])[0]]


def states_value(measured: list[str], sentences: Iterable[str]) -> bool:
    """Some sentence names one of the measures and gives a value ("outperforms ChatGPT on
    BLEU score" names the measure but gives none)."""
    wanted = set(measured)
    return not wanted or any(_VALUE.search(s) and wanted & set(analyze([s])[0]) for s in sentences)
