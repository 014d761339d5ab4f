"""The noun phrase an abstract's first sentence is about, for papers that coin no name.

"Adafactor is an early memory-efficient optimization algorithm ..." -> "Adafactor";
"Conventional wisdom dictates that small batch sizes make ..." -> "Small batch sizes";
"In this paper, we address the problem of fast computation of X in Y" -> "Fast computation of X".

No tagger: the subject ends at the first verb (a closed list of auxiliaries and the verbs that
open abstracts, or an adverb), a sentence that opens with "we" or "this paper" gives the object of
its verb, and one that opens with prior work ("Recent works have highlighted X", "Conventional
wisdom dictates that X ...") gives what that work found. The phrase is then cut to a few words at
a preposition or conjunction, so it never reads as a clause.
"""

from __future__ import annotations

import re

_AUX = set(
    "is are was were be been being has have had can could may might will would shall should "
    "must does do did".split()
)
_VERBS = set(
    "play plays provide provides construct constructs highlight highlights dictate dictates "
    "suggest suggests require requires suffer suffers show shows offer offers reveal reveals "
    "predict predicts achieve achieves enable enables face faces lack lacks excel excels rely "
    "relies struggle struggles allow allows make makes tend tends remain remains pose poses aim "
    "aims seek seeks become becomes emerge emerges continue continues underlie underlies hinge "
    "hinges depend depends exhibit exhibits involve involves generate generates produce produces "
    "capture captures serve serves represent represents exist exists arise arises drive drives "
    "dominate dominates study studies explore explores address addresses consider considers "
    "examine examines investigate investigates analyze analyzes analyse analyses tackle tackles "
    "revisit revisits introduce introduces propose proposes present presents develop develops "
    "focus focuses demonstrate demonstrates find finds give gives yield yields establish "
    "establishes characterize characterizes describe describes learn learns".split()
)
_ADVERBS = set(
    "often also typically usually generally still increasingly recently commonly largely always "
    "now rarely frequently widely already mostly traditionally routinely first further".split()
)
_NOT_ADVERBS = {"family", "early", "only", "friendly", "rely", "apply", "supply", "assembly"}
_ANOMALY = {"anomaly", "monopoly", "poly", "reply", "italy", "july", "fly", "holy", "ply"}
_DETERMINERS = set(
    "the a an this these those its their our his her such some any first novel new one two "
    "three four five several".split()
)
# Where a long phrase may be cut: the words that start a modifier or a second conjunct.
_BOUNDARY = set(
    "in on for from with under over via by using to at into through within across like such "
    "which that where when while whose who and or but based as of during without between among "
    "against beyond toward towards versus".split()
)
_TRAILING = _BOUNDARY | _DETERMINERS | {"its", "their"}
# "the problem of X" -> X
_GENERIC_HEAD = re.compile(
    r"^(?:(?:problem|task|question|study|notion|concept|setting|challenge|issue)s? of"
    r"|(?:framework|method|approach|algorithm|model|technique)s? (?:for|to))\s+",
    re.IGNORECASE,
)
_FRAME = re.compile(
    r"^(?:in|within|for|over|across|despite|with|during|under|recently|here|today|nowadays"
    r"|traditionally)\b([^,]{0,80}),\s+",
    re.IGNORECASE,
)
_META_FRAME = re.compile(
    r"^(?:(?:the|this|our|the present) (?:paper|work|study|article|setting)|(?:the )?recent "
    r"years?|(?:the )?past|practice|particular|general|addition|contrast|summary|short|"
    r"recent (?:work|years)|the last)",
    re.IGNORECASE,
)
_SUBORDINATOR = {"while", "although", "though", "whereas", "as", "since", "because", "when"}
_SELF = re.compile(
    r"^(?:we|here,? we|(?:this|our|the present) (?:paper|work|study|article))\s+",
    re.IGNORECASE,
)
_PRIOR = re.compile(
    r"^(?:recent|previous|prior|existing|conventional|past|earlier)\s+(?:\w+\s+){0,1}"
    r"(?:works?|research|studies|advances|progress|developments|wisdom|literature|findings)\b",
    re.IGNORECASE,
)
_PRONOUNS = {"it", "they", "we", "this", "these", "that", "there", "one"}
_PARENTHETICAL = re.compile(r"\s*\([^()]*\)")
_MARKUP = re.compile(r"[*_`]|\$[^$]*\$")
_CLAUSE_END = re.compile(r"[;:—]|\s[-–]{1,2}\s|---")


def _is_verb(words: list[str], i: int) -> bool:
    word = words[i].lower().strip(",;:")
    if word in _AUX:
        return True
    if i == 0 or words[i - 1].lower() in _DETERMINERS:
        return False  # "The study of ...": a noun here
    if i + 1 < len(words) and words[i + 1].lower() == "of":
        return False
    if word in _VERBS or word in _ADVERBS:
        return True
    return word.endswith("ly") and word not in _NOT_ADVERBS and word not in _ANOMALY


def _subject(words: list[str]) -> tuple[list[str], int]:
    """Words before the first verb (or comma), and where the verb is (len(words) if none)."""
    for i, word in enumerate(words):
        if _is_verb(words, i):
            return words[:i], i
        if word.endswith(","):
            return [*words[:i], word.rstrip(",")], _next_verb(words, i + 1)
    return words, len(words)


def _next_verb(words: list[str], start: int) -> int:
    return next((i for i in range(start, len(words)) if _is_verb(words, i)), len(words))


def _object(words: list[str], verb: int) -> list[str]:
    """What follows the verb group at ``verb``: "have highlighted X" -> X."""
    i = verb
    while i < len(words) and (
        words[i].lower() in _AUX or words[i].lower() in _ADVERBS or words[i].lower() == "not"
    ):
        i += 1
    i += 1  # the main verb
    if i < len(words) and words[i].lower() in {"on", "that"}:  # "focus on X", "dictates that"
        if words[i].lower() == "that":
            return _subject(words[i + 1 :])[0]
        i += 1
    rest: list[str] = []
    for word in words[i:]:
        if word.lower() in {"which", "who", "whose", "where"}:
            break
        rest.append(word)
    return rest


def _tidy(words: list[str], max_words: int) -> str:
    while words and words[0].lower() in _DETERMINERS:
        words = words[1:]
    text = _GENERIC_HEAD.sub("", " ".join(words))
    words = text.split()
    while words and words[0].lower() in _DETERMINERS:
        words = words[1:]
    if len(words) > max_words:
        # Cut before the last modifier that fits; "of" only if nothing else does ("X of Y").
        cut = [i for i in range(1, max_words + 1) if words[i].lower() in _BOUNDARY]
        cut = [i for i in cut if words[i].lower() != "of"] or cut
        words = words[: cut[-1]] if cut else words[:max_words]
    while words and (words[-1].lower().strip(",") in _TRAILING or words[-1][-1] in ",;:"):
        if words[-1][-1] in ",;:" and words[-1].lower().strip(",;:") not in _TRAILING:
            words[-1] = words[-1].rstrip(",;:")
            break
        words = words[:-1]
    if not words:
        return ""
    first = words[0]
    if first[:1].islower() and not any(c.isupper() or c.isdigit() for c in first):
        words[0] = first[:1].upper() + first[1:]
    return " ".join(words)


def topic_phrase(sentence: str, max_words: int = 8) -> str:
    """A short noun phrase naming what the sentence is about ("" when none is found)."""
    text = _MARKUP.sub("", _PARENTHETICAL.sub("", sentence)).strip().rstrip(".")
    text = _CLAUSE_END.split(text)[0].strip()
    frame = ""
    match = _FRAME.match(text)
    if match:
        text = text[match.end() :]
        if not _META_FRAME.match(match.group(1).strip()):
            frame = match.group(1).strip()
    words = text.split()
    if words and words[0].lower() in _SUBORDINATOR:
        words = words[1:]
    if not words:
        return _tidy(frame.split(), max_words)
    if _SELF.match(" ".join(words)):
        lead = _SELF.match(" ".join(words))
        assert lead is not None
        rest = " ".join(words)[lead.end() :].split()
        return _tidy(_object(rest, 0), max_words) or _tidy(frame.split(), max_words)
    subject, verb = _subject(words)
    if _PRIOR.match(" ".join(subject)) or " ".join(subject).lower() in _PRONOUNS:
        found = _tidy(_object(words, verb), max_words)
        if found:
            return found
    pronoun = " ".join(subject).lower() in _PRONOUNS
    lone = len(subject) <= 1 and (not subject or subject[0][:1].islower())
    if frame and (lone or pronoun):
        return _tidy(frame.split(), max_words)
    return "" if pronoun else _tidy(subject, max_words)
