"""What a question asks for, so the extractive answer quotes only what answers it.

- ``is_survey``: "which papers …", "are there papers …" want every paper that qualifies; any
  other question is about one paper, and is answered from the best one (or the ones it names).
- what a question asks to count or measure is in ``assistant.answer.offline.quantities``.
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

from assistant.text.terms import analyze

# Document frequencies of terms in the corpus, and the corpus size: what makes a term rare.
Rarity = Callable[[list[str]], tuple[dict[str, int], int]]

_SURVEY = re.compile(
    r"\b(?:which|what|any|list|name|find|are there|is there)\b[^?]{0,30}\b(?:papers|works|"
    r"studies|abstracts|methods|approaches|articles)\b|\bpapers (?:that|which|on|about)\b"
    r"|\bcompare\b"
    # "Any work on …", "Is there a paper on …", "Did any paper measure …", "anything on …"
    r"|\b(?:any|is there|are there)\s+(?:\w+\s+)?(?:paper|study|work|research|literature)\b"
    r"|\bis there anything\b",
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
    "ways thing things something anything actually exactly than have has had having need needs "
    "take takes took taken part compare compared comparison versus vs look looks better worse "
    # how a question asks for a figure ("what error do they reach?"), not what it is about
    "reach reaches reached achieve achieves achieved attain attains attained else "
    # how a survey asks ("which papers mention FL?"), never what an abstract lacks
    "mention mentions mentioned "
    # what an acronym question asks, and words every abstract has: never what is missing
    "stand stands short mean means meaning abbreviation abbreviate acronym expansion spell "
    "data"
)
# Verbs a survey asks with ("which papers analyse X"): not part of the topic X.
_TOPIC_VERBS = (
    "analyse analyze analyses analyzes investigate investigates examine examines explore "
    "explores address addresses tackle tackles"
)


@cache
def asking_terms() -> frozenset[str]:
    return frozenset(analyze([_ASKING])[0])


def is_survey(question: str) -> bool:
    """Asks for all the papers that qualify, not about one paper."""
    return bool(_SURVEY.search(question))


def asked_terms(question: str, names: Iterable[str] = ()) -> list[str]:
    """The question's content terms, without question words and the names of papers."""
    named = {t for name in names for t in analyze([name])[0]}
    skip = asking_terms() | named
    return [t for t in dict.fromkeys(analyze([question])[0]) if t not in skip]


# "Which company ...", "what optimizer ...": the word after which/what names the kind of thing
# asked for. Not when it is a verb ("what happens", "what makes") or says how to ask.
_KIND = re.compile(
    r"\b(?:which|what)\s+(?:(?:kinds?|types?|sorts?)\s+of\s+)?([a-z][\w-]*)", re.IGNORECASE
)
_NOT_KINDS = frozenset(
    "happens happened happen makes made causes caused drives determines limits explains allows "
    "enables lets remains changes helps matters goes went gives gave".split()
)


def asked_kind(question: str) -> list[str]:
    """The terms of the kind of thing a "which/what X" question asks for (empty for other
    questions): an abstract that lacks them does not say which X."""
    found = _KIND.search(question)
    if not found or found.group(1).lower() in _NOT_KINDS:
        return []
    return [t for t in analyze([found.group(1)])[0] if t not in asking_terms()]


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


def surface(question: str, terms: Iterable[str]) -> list[str]:
    """The question's own words for analysed terms, for messages: "accuraci" -> "accuracy"."""
    words: dict[str, str] = {}
    for word in re.findall(r"[\w-]+", question):
        for term in analyze([word])[0]:
            words.setdefault(term, word)
    return list(dict.fromkeys(words.get(t, t) for t in terms))


def topic_terms(question: str) -> list[str]:
    """The asked-for terms of a survey's topic, without the verb it asks with."""
    verbs = set(analyze([_TOPIC_VERBS])[0])
    return [t for t in asked_terms(question) if t not in verbs]


def mentions(terms: Iterable[str], text: str) -> bool:
    """The text says every term, as the word or a variant sharing its first five letters
    ("equilibria" and "equilibrium")."""
    present = set(analyze([text])[0])
    prefixes = {t[:5] for t in present if len(t) >= 5}
    return all(t in present or (len(t) >= 5 and t[:5] in prefixes) for t in terms)
