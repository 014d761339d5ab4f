"""What a question asks to count or measure, and whether a sentence gives it.

- ``counted_terms`` / ``states_count``: "How many videos does MoveBench contain?" is answered
  only by a sentence with a count that says "videos"; "5-second, 480p videos" counts none.
- ``measured_terms`` / ``states_value``: "What BLEU score does M1 reach?" is answered only by a
  sentence that names the measure and gives a value; "outperforms ChatGPT on BLEU score" gives
  none. "What score function ..." and "what accuracy bounds ..." ask for no value.
- ``asks_figure``: "by how much", "by what percentage": an abstract without a single figure
  cannot answer it.
- ``asks_quantity``: how many, how much, how fast ...: a sentence with a value answers best.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from functools import cache

from assistant.answer.offline.question import asking_terms
from assistant.text.terms import analyze

_HOW_MANY = re.compile(r"\bhow many ([\w-]+(?:\s+[\w-]+)?)", re.IGNORECASE)
_MATH = re.compile(r"\$")  # LaTeX: "$86.49$%" is a value once its dollars are gone
# A count: a whole number ("11,000", "25", "1018."), a scaled one ("7K", "1.2M", "7B-parameter")
# or a number word; not a unit's measure ("5-second", "480p", "4-bit", "Wan-I2V-14B"), not a
# ratio ("1.5", "1/k").
_COUNT = re.compile(
    r"(?<![\w./-])(?:\d+(?:\.\d+)?\s?[KMB](?![A-Za-z])|(?:\d{1,3}(?:,\d{3})+|\d+)(?![\w/-]|\.\d))"
    r"|\b(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|dozens|hundreds|"
    r"thousands|millions|billions)\b",
    re.IGNORECASE,
)
# "What top-1 accuracy does X reach?", "what BLEU score on ...", "what learning rate did X
# use?": a measured value (a result, or a detail of the set-up) is asked for.
_MEASURE = re.compile(
    r"\b(?:what|which)\s+(?:[\w-]+\s+){0,3}?((?:bleu|rouge|f1|iou|map) score|accuracy|score|f1|"
    r"bleu|rouge|auc|perplexity|error rate|speed-?up|latency|throughput|win rate|success rate|"
    r"learning rate|batch size|(?:image |input |output )?resolution|dropout(?: rate)?|"
    r"weight decay|temperature|momentum|(?:context|sequence) length|context window|"
    r"hidden size|embedding (?:size|dimension)|parameter count|model size|training time|"
    r"memory (?:usage|footprint)|compression ratio)"
    r"(?=\s+(?:does|do|did|is|was|are|were|can|could|on|in|at|of|for)\b|\s*\?)",
    re.IGNORECASE,
)
# A value: a number, a percentage, a multiplier or a size ("30%", "2.19×", "100x", "736x416"),
# not fused to a unit
# word ("4-bit", "480p"), not a label ("Stage 2", "M1") and not a year ("2021").
_VALUE = re.compile(r"(?<![\w.-])(\d+(?:[.,]\d+)*(?:\s?[x×]\s?\d+)?)\s?(?:%|x|×)?(?![\w-])")
_LABEL_WORDS = frozenset(
    "stage step phase module section table figure fig eq equation level version type part "
    "task round".split()
)
_QUANTITY = re.compile(
    r"\b(?:how (?:many|much|fast|large|big|long|often)|by how much|what (?:percentage|"
    r"fraction|accuracy|speed-?up|score|number|size)|to what extent)\b",
    re.IGNORECASE,
)
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


def _values(text: str) -> list[int]:
    """Where the values are: the character offsets of numbers that are not a label ("Stage 2")
    or a year ("Littman 1994")."""
    found = []
    for match in _VALUE.finditer(text):
        if (
            text[match.end() : match.end() + 1] == ")"
            and text[match.start() - 1 : match.start()] in "("
        ):
            continue  # a list marker: "(1)", "2)"
        before = text[: match.start()].split()
        if before and before[-1].lower().strip("(") in _LABEL_WORDS:
            continue
        if re.fullmatch(r"(?:19|20)\d\d", match.group(1)):
            continue
        found.append(match.start())
    return found


def has_value(sentence: str) -> bool:
    """Gives a value: a number, percentage or multiplier that is not a label or a year."""
    return bool(_values(_MATH.sub(" ", sentence)))


def _value_near(wanted: set[str], sentence: str, window: int = 6) -> bool:
    """A value within ``window`` words of a word for one of the wanted measures: "GPLQ is 100x
    faster ... competitive in accuracy" gives no accuracy."""
    text = _MATH.sub(" ", sentence)
    words = list(re.finditer(r"\S+", text))
    starts = [w.start() for w in words]
    at_values = {sum(1 for st in starts if st <= v) - 1 for v in _values(text)}
    at_measures = {i for i, w in enumerate(words) if wanted & set(analyze([w.group()])[0])}
    return any(abs(i - j) <= window for i in at_values for j in at_measures)


# A list marker counts nothing: "(1) automatic corpus collection ... (2) nugget generation from
# community-asked questions" does not say how many questions.
_LIST_MARKER = re.compile(r"\(\s*\d{1,2}\s*\)|(?<![\w.,(])\d{1,2}\)")


def _has_count(sentence: str) -> bool:
    return bool(_COUNT.search(_LIST_MARKER.sub(" ", _MATH.sub(" ", sentence))))


def counted_terms(question: str) -> list[list[str]]:
    """The things a question asks to count, the two words after each "how many": "How many
    images are in X and how many distinct groups?" -> [["imag"], ["distinct", "group"]]; []
    when it asks for no count."""
    return [
        [t for t in analyze([match.group(1)])[0] if t not in asking_terms()]
        for match in _HOW_MANY.finditer(question)
    ]


# The people a study counts: a word for anyone in it ("how many participants") is answered by
# any of its names for them ("2,400 healthy adults"; a user's trial was refused: "gives no
# number of participants"); a group ("how many children") only by its own name.
_ANYONE = "participant participants subject subjects volunteer volunteers people person persons "
_ANYONE += "individual individuals respondent respondents"
_GROUPS = "patient patients adult adults child children men women student students worker "
_GROUPS += "workers employee employees"


@cache
def _anyone() -> frozenset[str]:
    return frozenset(analyze([_ANYONE])[0])


@cache
def _people() -> frozenset[str]:
    return _anyone() | frozenset(analyze([_GROUPS])[0])


def said_of_people(terms: Iterable[str], text: str) -> set[str]:
    """The terms that are words for anyone in a study ("participants") when the text names
    the people it studied by any name ("adults"): the text says them, in its own words."""
    anyone = set(terms) & _anyone()
    return anyone if anyone and _people() & set(analyze([text])[0]) else set()


def states_count(counted: list[list[str]], sentences: Iterable[str]) -> bool:
    """Some sentence gives a count together with one of the things counted (people by any of
    their names). (Accepting any count in the sentence closest to the question, for things
    named otherwise, let "1.45M image-text pairs" answer "how many videos"; on tune and dev it
    answered nothing more.)"""
    wanted = {t for terms in counted for t in terms}
    sentences = list(sentences)
    if not wanted:
        return True
    if wanted & _anyone():
        wanted |= _people()
    return any(
        (_has_count(s) and wanted & set(analyze([s])[0])) or _counted_compound(wanted, s)
        for s in sentences
    )


# "a 72-qubit processor", "a 1,000-image test set": a count joined to what it counts.
_COMPOUND = re.compile(r"(?<![\w./-])(?:\d{1,3}(?:,\d{3})+|\d+)-([A-Za-z]+)\b")


def _counted_compound(wanted: set[str], sentence: str) -> bool:
    return any(wanted & set(analyze([m.group(1)])[0]) for m in _COMPOUND.finditer(sentence))


# "How much did the vaccine cost per dose?", "what is the price of …": a price is asked for
# (not a "training cost" or "computational cost", which abstracts give in hours and GPUs).
_COST = re.compile(
    r"\bhow much (?:does|did|do|will|would|could)\b[^?]{0,80}?\bcost\b"
    r"|\b(?:what|which)\s+(?:[\w-]+\s+){0,3}?"
    r"(?<!training )(?<!compute )(?<!computational )(?<!inference )(?<!memory )(?:cost|price)s?\b",
    re.IGNORECASE,
)


def measures(question: str) -> list[str]:
    """The measures a question asks the value of, in its words: "What ImageNet top-1 accuracy
    does GPLQ reach?" -> ["accuracy"], "What BLEU score ..." -> ["BLEU score"], "How much did
    it cost?" -> ["cost"]."""
    found = [m.group(1) for m in _MEASURE.finditer(question)]
    return found + (["cost"] if _COST.search(question) else [])


# A measure an abstract states in other words: "100x faster" is a speedup.
_SAID_AS = {
    "speedup": "faster speed accelerates acceleration",
    "speed-up": "faster speed",
    "cost": "price priced dollars",
}


def measured_terms(question: str) -> list[str]:
    """``measures`` as analysed terms, with the words that state them otherwise: "What BLEU
    score ..." -> ["bleu", "score"]."""
    phrases = [p for m in measures(question) for p in (m, _SAID_AS.get(m.lower(), ""))]
    terms = list(dict.fromkeys(t for phrase in phrases for t in analyze([phrase])[0]))
    specific = [t for t in terms if t != "score"]  # "BLEU score": an LPIPS score is no BLEU
    return specific or terms


def states_value(measured: list[str], sentences: Iterable[str]) -> bool:
    """Some sentence names one of the measures with a value near it ("outperforms ChatGPT on
    BLEU score" names the measure but gives none)."""
    wanted = set(measured)
    return not wanted or any(_value_near(wanted, s) for s in sentences)


# "Which three open-source LLMs does X use?": the things asked to be named, and how many.
_WHICH_COUNT = re.compile(
    r"\bwhich\s+(two|three|four|five|six|seven|eight|nine|ten|\d{1,2})\s+"
    r"((?:[\w-]+\s+){0,3}?[\w-]+)(?=\s+(?:does|do|did|are|were|is|was|can|could|has|have|had|"
    r"serve|served)\b|\s*\?)",
    re.IGNORECASE,
)
# What opens a list after "three open-source LLMs": "...: A, B and C", "(A, B, C)", "namely".
_LIST_OPENER = re.compile(
    r"^\W{0,2}(?::|\(|--|\u2014|\u2013|namely\b|including\b|such as\b|i\.e\.|e\.g\.|viz\.)",
    re.IGNORECASE,
)
# A name: a word with a capital after its first letter or with letters and digits ("GeCCo",
# "Llama-3", "GPT-4o", "Qwen2.5"), not an acronym's plural alone ("LLMs").
_NAME = re.compile(r"\b(?=[\w.-]*(?:[a-z][A-Z]|[A-Za-z]-?\d|\d[A-Za-z]))[\w.-]{3,}\b")


def _asked_to_name(question: str) -> tuple[str, str] | None:
    """ "Which three open-source LLMs does GeCCo use?" -> ("three", "open-source LLMs"): things
    the question asks to be named, with how many; None for any other question."""
    match = _WHICH_COUNT.search(question)
    return (match.group(1), match.group(2)) if match else None


def counts_without_naming(question: str, sentences: Iterable[str]) -> tuple[str, str] | None:
    """What the question asks to be named, with how many ("three", "open-source LLMs"), when
    the abstract restates that count ("using three open-source LLMs, spanning ...") and names
    none of them: no such sentence goes on to list them, and no sentence holds two names the
    question does not; else None. An abstract that never restates the count is not judged
    (it may name them in other words: "an evil model and a truthful model")."""
    asked = _asked_to_name(question)
    head = analyze([asked[1]])[0][-1:] if asked else []
    if not asked or not head:
        return None
    sentences = list(sentences)
    lists = [listed for s in sentences for listed in _restated(asked[0], head[0], s)]
    if not lists or any(lists):
        return None
    known = {w.lower() for w in re.findall(r"[\w.-]+", question)}
    named = any(
        len({n for n in _NAME.findall(s) if n.lower() not in known}) >= 2 for s in sentences
    )
    return None if named else asked


def _restated(count: str, head: str, sentence: str) -> Iterator[bool]:
    """For each place the sentence says the count with the thing counted within four words
    ("three open-source LLMs"): whether a list follows it."""
    words = list(re.finditer(r"\S+", sentence))
    for i, word in enumerate(words):
        if word.group().lower().strip("(,;") != count.lower():
            continue
        for later in words[i + 1 : i + 5]:
            if head in analyze([later.group()])[0]:
                end = later.start() + len(later.group().rstrip(":;,(\u2014\u2013"))
                yield bool(_LIST_OPENER.match(sentence[end:]))
                break
