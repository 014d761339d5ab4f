"""A question read as its parts, and the shapes that decide how the extractive answer reads it.

- ``split``: "Who wrote the wildfire paper, and how good are its forecasts?" asks two things; each
  half is answered (the first from the metadata, the second from the abstract), or said to be
  unanswered. A half that asks nothing of its own ("Which papers study X, and what do they
  find?") stays with the half it refers to.
- ``asks_definition``: "What is KVFlow?", "How does KVFlow decide …": the answer leads with the
  sentence that says what the paper is ("We present KVFlow, a …").
- ``asked_acronym``: "What does GPLQ stand for?" is answered from the expansion the abstract
  gives ("General, Practical, and Lightning Quantization (GPLQ)"), found by ``expansion``.
- ``refers_back``: a sentence that opens with an anaphor ("These values", "This approach") needs
  the sentence before it.
- ``literal_terms``: the literal condition of a survey ("on GitHub", "on CIFAR-10", "in 2022"),
  which every paper that qualifies contains word for word.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from assistant.answer.offline.metadata import parse as metadata_question
from assistant.answer.offline.question import asked_terms, is_survey, topic_terms
from assistant.retrieval.hybrid import Hit
from assistant.text.acronyms import defined_in, is_acronym
from assistant.text.terms import analyze

# Where a question's second half starts: a conjunction, then a question word or an auxiliary.
# ("… and by how much …", "… and in which …": a preposition may come first.)
_PREPOSITION = r"(?:by|in|on|at|to|for|with|from)"
_SECOND_HALF = re.compile(
    rf"(?:,|;|:)?\s+(?:and|but|also|plus)\s+(?=(?:{_PREPOSITION}\s+)?(?:what|how|"
    r"who|whom|which|when|where|why|does|do|did|is|are|was|were|can|could)\b)|(?:;|\?)\s+"
    rf"(?=(?:and\s+)?(?:{_PREPOSITION}\s+)?(?:what|how|who|which|when|where|"
    r"why)\b)",
    re.IGNORECASE,
)
# Words that point back to what the first half named.
_BACK = re.compile(
    r"\b(?:it|its|they|them|their|theirs|this|these|those|each|both|either)\b", re.IGNORECASE
)


# A first half that is itself a question, not a premise ("A 4D method organises …; what speed
# does that enable?" asks one thing).
_ASKS = re.compile(
    r"\s*(?:what|how|who|whom|which|when|where|why|does|do|did|is|are|was|were|can|could|"
    r"compare|contrast|tell|list|name|explain|describe|give|show|find)\b\s*\S",
    re.IGNORECASE,
)


_CONTINUES = re.compile(rf"\s*{_PREPOSITION}\s", re.IGNORECASE)

_WH = r"(?:what|how|who|whom|which|when|where|why)\b"
# What the questions after it are about, said first: "For the coral study, who wrote it, …".
_TOPIC_FIRST = re.compile(
    rf"\s*(?:for|about|regarding|concerning|as for|as to|on)\s+[^,;:?]+,\s*(?={_WH})",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Part:
    text: str  # the half as asked, for messages
    refers_back: bool  # it points at the first half's subject ("its", "they", "on which")


def split(question: str) -> list[Part]:
    """The question's parts, in order: the halves of "X, and Y?", or the items of "X, Y, and
    Z?"; one part when it asks one thing. A part without terms of its own ("what do they
    find?") is not a question apart."""
    match = _SECOND_HALF.search(question)
    if match is None:
        return [Part(question.strip(), False)]
    first = question[: match.start()].strip(" ,;:")
    second = question[match.end() :].strip()
    opening = _TOPIC_FIRST.match(first)
    if not _ASKS.match(first[opening.end() :] if opening else first):
        return [Part(question.strip(), False)]
    # "What does it find, and who wrote it?": a first half without terms of its own is still a
    # question apart when the second asks for metadata (it was answered as the authors only).
    if not asked_terms(first) and metadata_question(second) is None:
        return [Part(question.strip(), False)]
    # "Which papers study X, and what do they find?" asks one thing; "Who wrote the paper on
    # X, and what did it find?" asks two: who (the metadata), then what (the abstract).
    if not asked_terms(second) and metadata_question(first + "?") is None:
        return [Part(question.strip(), False)]
    listed = _listed(first)
    return [
        Part(listed[0] + "?", False),
        *(Part(part + "?", _points_back(part)) for part in listed[1:]),
        Part(second, _points_back(second)),
    ]


# The word a survey's topic follows ("Which papers study | X or Y?", "… are about | X or Y").
_LEADS = frozenset(
    "study studies use uses using about on in into of with for address addresses propose "
    "proposes examine examines investigate investigates consider considers measure measures "
    "analyse analyses analyze analyzes apply applies report reports describe describes explore "
    "explores predict predicts detect detects focus tackle tackles improve improves evaluate "
    "evaluates compare compares discuss discusses involve involves test tests to at".split()
)
_WHO = frozenset(
    "paper papers work works studies articles that which".split()
)  # "Which papers (that) …"
_LONGEST = 5  # words of an alternative said after its lead: longer, where it begins is unclear
_OR = re.compile(r"\s+or\s+", re.IGNORECASE)
_EITHER = re.compile(r"\s+either\s+", re.IGNORECASE)
_NOT_ALTERNATIVES = re.compile(
    r"\b(?:whether|more or less|or not|and/or|or so|such as|for example|for instance|"
    r"e\.g\.|including|like)\b|\b(?:what|how|who|which|when|where|why)\b[^?]*\bor\b[^?]*"
    r"\b(?:what|how|who|which|when|where|why)\b",
    re.IGNORECASE,
)


def alternatives(question: str) -> list[str]:
    """ "Which papers study the ocean or marine life?" -> "Which papers study the ocean?",
    "Which papers study marine life?": the topics a survey asks about either of; empty when it
    is not such a survey, or when where the alternatives begin cannot be told ("language or
    vision-language models", "evaluate or improve X")."""
    text = _EITHER.sub(" ", question.strip().rstrip("?").strip())  # "study either X or Y"
    pieces = _OR.split(text)
    if len(pieces) < 2 or not is_survey(text) or _NOT_ALTERNATIVES.search(text):
        return []
    left, right = ", ".join(p.strip(" ,") for p in pieces[:-1]), pieces[-1]  # "X or Y or Z"
    words, rest = left.split(), right.split()
    leads = [i for i, w in enumerate(words) if w.lower().strip(",") in _LEADS]
    if not leads or len(rest) > 6 or not asked_terms(right):
        return []
    if rest[0].lower() in _LEADS:  # "… propose optimizers or analyse convergence"
        if len(words) - leads[0] < 2:
            return []  # "evaluate or improve X": two verbs of one object
        # The verbs follow "Which papers" ("train with X or analyse Y").
        subject = [i for i, w in enumerate(words[: leads[0] + 1]) if w.lower() in _WHO]
        head = words[: subject[-1] + 1] if subject else words[: leads[0]]
    else:
        head = words[: leads[-1] + 1]
    first = words[len(head) :]
    if not head or not asked_terms(" ".join(first)) or len(first) > _LONGEST:
        return []
    if len(first) == 1 and len(rest) > 1:
        if _modifier(first[0]) and _modifier(rest[0]):
            first = [first[0], *rest[1:]]  # "3D or 4D generation": the noun is shared
        elif _describes(first[0]) or first[0].lower() in rest[0].lower():
            return []  # "language or vision-language models": shared or not cannot be told
    if len(rest) == 1 and len(first) > 1 and _describes(first[-2]):
        right = " ".join([*first[:-1], right])  # "generated images or videos": both generated
    said = " ".join(head)
    listed = [item.strip() for item in " ".join(first).split(",") if item.strip()]
    if len(listed) > 1 and all(len(item.split()) <= 3 for item in listed):
        return [f"{said} {item}?" for item in [*listed, right]]  # "for X, Y or Z"
    return [f"{' '.join([*head, *first])}?", f"{said} {right}?"]


_DESCRIBING = re.compile(r"(?:ed|ive|ous|ful|less|able|ible)$|-", re.IGNORECASE)


def _describes(word: str) -> bool:
    """ "generated", "interpretable", "medium-range": a word that describes the noun after it, so a
    one-word alternative to that noun shares it ("generated images or videos"); "coral" in
    "coral reefs or glaciers" does not."""
    return bool(_DESCRIBING.search(word)) and not _plural(word)


def topic_of(question: str) -> list[str]:
    """The words of one topic's question ("Did any paper measure hallucination?") that a paper
    on it holds: its asked terms, not the verb it is asked with ("measure")."""
    verbs = set(analyze([" ".join(_LEADS)])[0])
    return [t for t in asked_terms(question) if t not in verbs]


def _plural(word: str) -> bool:
    """ "honeybees", "glaciers": a noun of its own, not a modifier of the next topic's noun."""
    word = word.lower()
    return len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is"))


def _modifier(word: str) -> bool:
    """A word like "3D", "LLM": a modifier that shares the noun after it."""
    return any(c.isdigit() for c in word) or (len(word) > 1 and word.isupper())


def _points_back(part: str) -> bool:
    """ "…, and on which outcome?", "… and by how much?": a part that opens with a preposition
    continues the first part's clause, as one with "it" or "their" does."""
    return bool(_BACK.search(part) or _CONTINUES.match(part))


# A question in a list before the last "and": "What does A show, how many B, and who wrote C?"
_LISTED = re.compile(rf",\s+(?=(?:{_PREPOSITION}\s+)?{_WH})", re.IGNORECASE)


def _listed(first: str) -> list[str]:
    """The questions a list before the last "and" holds, when each asks something of its
    own; else the first part whole. A topic said first ("For the coral study, who wrote it,
    when …") stays with the first question."""
    listed = [part.strip() for part in _LISTED.split(first)]
    if len(listed) > 1 and _TOPIC_FIRST.match(first):
        listed[:2] = [f"{listed[0]}, {listed[1]}"]
    if len(listed) > 1 and all(
        asked_terms(part) or metadata_question(part + "?") is not None for part in listed
    ):
        return listed
    return [first]


_DEFINITION = re.compile(
    r"^\s*(?:so,?\s+|and\s+)?(?:what\s+(?:is|are|was)\b|what's\b|how\s+(?:does|do|did|is|are)\b|"
    r"explain\b|describe\b|tell me (?:about|what)\b|what does \S+ (?:do|propose|introduce)\b)",
    re.IGNORECASE,
)


def asks_definition(question: str) -> bool:
    """Asks what something is or how it works: the answer leads with what the paper is."""
    return bool(_DEFINITION.search(question))


_PRESENTS = re.compile(
    r"\b(?:we|this (?:paper|work|study))\s+(?:\w+\s+){0,2}?(?:present|propose|introduce|develop|"
    r"build|construct)s?\b",
    re.IGNORECASE,
)


def presents(sentence: str) -> bool:
    """States what the paper contributes: "we propose …", "this paper introduces …"."""
    return bool(_PRESENTS.search(sentence))


def defines(sentence: str, names: list[str]) -> bool:
    """The sentence says what the paper is: "We present KVFlow, a …", "Adafactor is an …",
    "this paper introduces … (GPLQ), a …"."""
    lowered = sentence.lower()
    for name in names:
        if re.match(rf"\s*{re.escape(name)}\s+(?:is|are)\b", sentence, re.IGNORECASE):
            return True
        if name.lower() in lowered and _PRESENTS.search(sentence):
            return True
    return False


_ACRONYM_ASKED = re.compile(
    r"\bwhat\s+(?:does|do|did)\s+(?:the\s+)?(?:acronym\s+|abbreviation\s+|name\s+)?"
    r"[\"'«]?([A-Za-z][\w-]*[A-Z][\w-]*)[\"'»]?\s+(?:stand for|mean|abbreviate)\b"
    r"|\bwhat\s+is\s+[\"'«]?([A-Za-z][\w-]*[A-Z][\w-]*)[\"'»]?\s+short for\b"
    r"|\b(?:expansion|full name|long form|abbreviation|acronym)\s+(?:of|for)\s+(?:the\s+)?"
    r"[\"'«]?([A-Za-z][\w-]*[A-Z][\w-]*)",
    re.IGNORECASE,
)


def asked_acronym(question: str) -> str | None:
    """The acronym a question asks to spell out ("What does GPLQ stand for?" -> "GPLQ")."""
    match = _ACRONYM_ASKED.search(question)
    if match is None:
        return None
    return next(g for g in match.groups() if g)


# "What is DPO?", "What are the SAEs?": the whole question asks what one term is.
_WHAT_IS = re.compile(
    r"^\s*what\s+(?:is|are)\s+(?:an?\s+|the\s+)?[\"'«]?([A-Za-z][\w-]*)[\"'»]?\s*\?*\s*$",
    re.IGNORECASE,
)


def asked_about_acronym(question: str) -> str | None:
    """The acronym a question asks about and nothing else: spelled out ("What does GPLQ stand
    for?") or what it is ("What is DPO?", "What are SAEs?")."""
    found = asked_acronym(question)
    if found is not None:
        return found
    match = _WHAT_IS.match(question)
    return match.group(1) if match and is_acronym(match.group(1)) else None


def defines_asked_acronym(question: str, hits: Sequence[Hit]) -> bool:
    """The question asks what an acronym is and a retrieved paper defines it: that paper is
    relevant however far the embedder puts "What is DPO?" from its abstract (0.24 to the
    paper that introduces direct preference optimization (DPO), under the bar). One that
    only uses it ("a single 24 GB GPU") does not say what it is."""
    acronym = asked_about_acronym(question)
    return acronym is not None and any(defined_in(acronym, h.paper.text_for_index) for h in hits)


def _initials(words: list[str]) -> str:
    """The capitals a run of words abbreviates to: each word's capitals, or its first letter."""
    out = []
    for word in words:
        caps = "".join(ch for ch in word if ch.isupper())
        out.append(caps or word[:1])
    return "".join(out).upper()


def expansion(acronym: str, sentence: str) -> bool:
    """The sentence spells the acronym out: "General, Practical, and Lightning Quantization
    (GPLQ)", "GPLQ (General ... Quantization)" or "GPLQ: General ...". The expansion's initials
    must match the acronym's letters."""
    letters = re.sub(r"[^A-Za-z]", "", acronym).upper()
    name = re.escape(acronym)
    before = re.search(rf"((?:[\w-]+[,\s]+){{1,12}})\(\s*{name}\s*[),;]", sentence)
    if before:
        words = [w for w in re.findall(r"[\w-]+", before.group(1)) if w.lower() != "and"]
        for start in range(len(words)):
            if _initials(words[start:]).startswith(letters[:1]) and _matches(
                letters, words[start:]
            ):
                return True
    after = re.search(rf"\b{name}\s*(?:\(|:|,? (?:short for|stands for))\s*([^)]+)", sentence)
    return bool(after and _matches(letters, re.findall(r"[\w-]+", after.group(1))))


def _matches(letters: str, words: list[str]) -> bool:
    """The acronym's letters appear in order in the words' initials and capitals."""
    initials = _initials([w for w in words if w.lower() not in {"of", "for", "the", "a", "an"}])
    it = iter(initials)
    return len(initials) >= 2 and all(ch in it for ch in letters) and letters[0] == initials[0]


_ANAPHOR = re.compile(
    r"^\s*(?:(?:these|this|those|such|the latter|the former)\b(?!\s+(?:paper|work|study|"
    r"article)\b)|(?:it|they|their|its)\b)",
    re.IGNORECASE,
)


def refers_back(sentence: str) -> bool:
    """Opens with an anaphor ("These values guide …", "This approach …"): read alone, it does
    not say what it is about. "This paper …" names its subject."""
    return bool(_ANAPHOR.search(sentence))


# A literal condition: a CamelCase name ("GitHub", "ImageNet"), a name with digits ("CIFAR-10",
# "GPT-4") or a quoted phrase. A year is the paper's metadata (``metadata_questions.asked_year``).
_LITERAL = re.compile(
    r"\"([^\"]{2,40})\"|(?<![\w-])((?:[A-Z][a-z]+[A-Z][\w-]*)|(?:[A-Za-z]+-?\d[\w.-]*))(?![\w-])"
)


# "… word embeddings such as word2vec": an example of the topic, not a condition.
_EXAMPLES = re.compile(
    r"\b(?:such as|like|e\.g\.|for example|for instance|including)\b[^,;?]*", re.IGNORECASE
)


def literal_terms(question: str) -> list[str]:
    """The literal words a "which papers …" question asks for, as indexed terms (not those it
    gives as examples)."""
    found = []
    for match in _LITERAL.finditer(_EXAMPLES.sub(" ", question)):
        found.extend(analyze([match.group(1) or match.group(2)])[0])
    return list(dict.fromkeys(found))


def holds_literal(question: str, hits: Sequence[Hit]) -> bool:
    """A survey with a literal condition that a retrieved paper contains word for word: it is
    relevant however little the question resembles the abstract ("… code on GitHub?"). With
    no literal term, the whole topic said word for word ("Which papers use a hypernetwork?":
    HyperMARL's abstract says "hypernetwork", far as the question's vector is from it)."""
    if not is_survey(question):
        return False
    terms = literal_terms(question) or topic_terms(question)
    if not terms:
        return False
    return any(holds(terms, h) for h in hits)


def holds(terms: list[str], hit: Hit) -> bool:
    """The paper's text contains every one of the (analysed) terms."""
    return set(terms) <= set(analyze([hit.paper.text_for_index])[0])
