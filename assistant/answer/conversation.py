"""Multi-turn state: which questions are follow-ups, and the standalone query of each.

A question that names its own subject (a topic, a method, "which papers …") is a new question,
whatever pronouns it uses later ("Which papers study state space models, and what do they
find?"); a follow-up is one that cannot be searched alone ("how does the second one work?",
"compare them", "what else does it find?"). Two steps:
1. The decision. With a chat model, the condense prompt answers ``NEW: …`` or ``FOLLOW-UP: …``;
   otherwise (or when its reply says neither) ``is_follow_up`` reads the question's shape.
2. The query. A follow-up that points at papers cited earlier ("[2]", "the second one", "it",
   "them") is pinned to them: the search is restricted to them and their labels join the query.
   A follow-up is rewritten by the chat model, or else the previous query's key terms are carried
   into it. A new question is searched as it was asked.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from assistant.answer.result import Answer, Citation
from assistant.text.terms import analyze

_ORDINALS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
    "last": -1,
}
_ORDINAL_REF = re.compile(
    r"\b(?:the\s+)?(" + "|".join(_ORDINALS) + r")\s+(?:one|paper|abstract|source|result|work)\b",
    re.IGNORECASE,
)
_NUMBER_REF = re.compile(
    r"\[(\d+)\]|\b(?:paper|source|reference|citation)\s+#?(\d+)\b", re.IGNORECASE
)
_SINGULAR_REF = re.compile(
    r"\b(?:that|this|the same)\s+(?:paper|one|abstract|work|method|model)\b"
    r"|\b(?:it|its)\b",
    re.IGNORECASE,
)
_PLURAL_REF = re.compile(
    r"\b(?:those|these|both|all of them|them|they|their|which ones?|each one)\b"
    r"(?:\s+(?:papers|ones|works|methods|abstracts))?",
    re.IGNORECASE,
)
_FOLLOW_UP = re.compile(
    r"^\s*(?:and|but|also|what about|how about|why|how|so|then|what else)\b", re.IGNORECASE
)
# "Which papers …", "Are there papers on …": a survey names its subject (unless it is "of them").
_SURVEY = re.compile(
    r"^\s*(?:and\s+)?(?:(?:which|what)\s+(?:other\s+)?|(?:are|is)\s+there\s+(?:a\s+|any\s+)?|"
    r"(?:find|list|show(?:\s+me)?)\s+(?:the\s+|all\s+)?)"
    r"(?:papers?|works|studies|articles|abstracts)\b(?!\s+(?:of|among)\s+(?:them|these|those))",
    re.IGNORECASE,
)
# Points back at earlier papers whatever else it names: "of them", "these papers", "that paper".
_POINTS_BACK = re.compile(
    r"\b(?:of|among|between|from)\s+(?:them|these|those|both)\b"
    r"|\b(?:these|those|both)\s+(?:papers|ones|works|methods|abstracts|approaches|models)\b"
    r"|\b(?:that|this|the same)\s+(?:paper|one|abstract|work)\b",
    re.IGNORECASE,
)
_AUX = r"(?:do|does|did|is|are|was|were|can|could|will|would|has|have|had|should|might|may|must)"
# The subject of the first clause: "What speedup does IT get", "Do THEY", "How does KVFLOW".
_SUBJECT = re.compile(
    r"^\s*(?:(?:and|but|so|then|also)\s+)?"
    r"(?:(?:what|which|how|why|where|when|who|whose)\b(?P<asked>[^,;:?]*?)\s)?" + _AUX + r"\s+"
    r"(?P<subject>[\w'-]+(?:\s+[\w'-]+){0,2})",
    re.IGNORECASE,
)
_BACK = frozenset("it its they them their theirs these those this that both each either".split())
# Words that do not make a subject: "the main result", "the method", "the authors".
_GENERIC = frozenset(
    analyze(
        [
            "paper papers work works one ones method methods approach approaches model models "
            "result results finding findings main key idea contribution contributions author "
            "authors limitation limitations difference differences advantage advantages "
            "the a an any other same first second third last else more detail details "
            "study studies propose proposed use used find found show shown report reported "
            "better best worse well good new novel get gets achieve achieved improve improves "
            "performance perform evaluate evaluated compare compared comparison differ explain "
            "tell describe summarize summarise mean means do does done like about exactly "
            "which what how why where when who whose much many kind type way"
        ]
    )[0]
)
LONG_WORDS = 40  # a question this long states its own subject: never a follow-up
Decision = Literal["new", "follow-up"]


def _names_something(question: str) -> bool:
    """A name in the question: a capitalised word after the first, or a word with two
    capitals anywhere (KVFlow, LeMiCa, THG)."""
    words = re.findall(r"[A-Za-z][\w-]*", question)
    return any(sum(c.isupper() for c in w) >= 2 for w in words) or any(
        w[0].isupper() and w.lower() not in {"i"} for w in words[1:]
    )


def _topical(words: str) -> list[str]:
    """The terms of ``words`` that name a topic (not "paper", "result", "it", "which")."""
    return [t for t in analyze([words])[0] if t not in _GENERIC]


def is_long(question: str) -> bool:
    return len(question.split()) > LONG_WORDS


def is_follow_up(question: str) -> bool:
    """Whether the question cannot be searched alone. It can when it is long, is a survey of
    its own topic ("Which papers study Mamba, and what do they find?"), has a subject of its
    own ("How does KVFlow decide…"), or names something; it cannot when its subject points
    back ("What speedup does it get?"), it points back anywhere else ("compare them"), it
    opens like a follow-up ("and why?", "what about …") or it has too few words of its own."""
    if is_long(question):
        return False
    if _SURVEY.search(question) and _topical(question):
        return False
    if _POINTS_BACK.search(question):
        return True
    subject = _SUBJECT.search(question)
    if subject:
        asked = set((subject.group("asked") or "").lower().split())  # "which of THEM is …"
        if subject.group("subject").lower().split()[0] in _BACK or asked & (_BACK | {"one"}):
            return True
        if _topical(subject.group("subject")) or _names_something(subject.group("subject")):
            return False
    if _names_something(question):
        return False
    if _SINGULAR_REF.search(question) or _PLURAL_REF.search(question):
        return True
    return bool(_FOLLOW_UP.search(question)) or len(_topical(question)) <= 1


_DECISION = re.compile(
    r"^[\s*_#>`\"'\[(]*(new|follow[- ]?up)(?:\s+question)?[\s*_`\])]*[:–—-]+[\s*_`]*",
    re.IGNORECASE,
)


def read_condensed(reply: str | None) -> tuple[Decision | None, str]:
    """The chat model's decision and question from its condense reply: ``NEW: …`` or
    ``FOLLOW-UP: …`` (any case, markdown emphasis or quotes around); (None, reply) when it
    says neither."""
    text = (reply or "").strip()
    found = _DECISION.match(text)
    if not found:
        return None, text.strip("\"'")
    decision: Decision = "new" if found.group(1).lower() == "new" else "follow-up"
    return decision, text[found.end() :].strip().strip("\"'")


@dataclass
class Turn:
    question: str
    search_query: str
    answer: Answer
    pinned: list[Citation] = field(default_factory=list)  # earlier papers it was searched in


def _pointed_at(question: str) -> tuple[list[int], list[int]]:
    """The citation numbers ("[2]", "paper 2") and ordinals ("the second one"; -1 for "the last")
    a question points at, in its order."""
    numbers = [int(m.group(1) or m.group(2)) for m in _NUMBER_REF.finditer(question)]
    ordinals = [_ORDINALS[m.group(1).lower()] for m in _ORDINAL_REF.finditer(question)]
    return numbers, ordinals


@dataclass
class Resolution:
    query: str  # the standalone query to search for
    papers: list[Citation] = field(default_factory=list)  # papers the question refers to
    note: str = ""  # said before the answer: a reference to a paper the last answer lacks

    @property
    def pinned(self) -> bool:
        return bool(self.papers)


@dataclass
class Conversation:
    turns: list[Turn] = field(default_factory=list)

    def reset(self) -> None:
        self.turns.clear()

    @property
    def last_citations(self) -> list[Citation]:
        for turn in reversed(self.turns):
            if turn.answer.citations:
                return turn.answer.citations
        return []

    def add(
        self,
        question: str,
        search_query: str,
        answer: Answer,
        pinned: list[Citation] | None = None,
    ) -> None:
        self.turns.append(Turn(question, search_query, answer, list(pinned or [])))

    def history(self, turns: int = 3) -> str:
        """The last few exchanges as plain text, for the condense prompt."""
        lines = []
        for turn in self.turns[-turns:]:
            lines.append(f"User: {turn.question}")
            lines.append(f"Assistant: {' '.join(turn.answer.text.split())[:600]}")
        return "\n".join(lines)

    def referenced(self, question: str, follow_up: bool | None = None) -> list[Citation]:
        """Earlier-cited papers the question points at: by number or ordinal ("[2]", "the
        second one"), or, in a follow-up, by pronoun ("it", "them"). ``follow_up`` is the
        decision when it was already taken (by the chat model)."""
        cited = self.last_citations
        if not cited or is_long(question):
            return []
        by_n = {c.n: c for c in cited}
        numbers, ordinals = _pointed_at(question)
        found: list[Citation] = [by_n[n] for n in numbers if n in by_n]
        for index in ordinals:
            position = len(cited) - 1 if index == -1 else index - 1
            if 0 <= position < len(cited):
                found.append(cited[position])
        if not found and (is_follow_up(question) if follow_up is None else follow_up):
            if _PLURAL_REF.search(question):
                found = list(cited)
            elif _SINGULAR_REF.search(question):
                found = [cited[0]]
        return list({c.paper_id: c for c in found}.values())

    def beyond(self, question: str) -> str:
        """A number or ordinal ("[3]", "the second one") past the papers the last answer cited,
        said as a note: the question cannot be pinned to a paper that is not there."""
        cited = self.last_citations
        if not cited or is_long(question):
            return ""
        numbers, ordinals = _pointed_at(question)
        past = [n for n in numbers + ordinals if n > len(cited)]
        if not past:
            return ""
        count = f"{len(cited)} paper{'s' if len(cited) > 1 else ''}"
        return f"the last answer cited {count}, so there is no paper {past[0]} in it"

    def resolve(
        self, question: str, condense: Callable[[str, str], str | None] | None = None
    ) -> Resolution:
        """The standalone query for a question, and the earlier papers it is pinned to."""
        if not self.turns:
            return Resolution(question)
        decision, rewritten = None, ""
        if condense is not None:
            decision, rewritten = read_condensed(condense(self.history(), question))
        if decision == "new":
            return Resolution(question)  # the model says it stands alone: searched as asked
        if decision is None and rewritten and not is_follow_up(question):
            rewritten = ""  # a rewrite without a decision is used only for a follow-up
        papers = self.referenced(question, True if decision else None)
        if decision and not papers and rewritten:  # the rewrite names the papers it means
            papers = [c for c in self.last_citations if c.label.lower() in rewritten.lower()]
        if not rewritten:
            query = self._condense_plainly(question, papers)
        elif papers and not any(p.label.lower() in rewritten.lower() for p in papers):
            query = " ".join(p.label for p in papers) + " " + rewritten
        else:
            query = rewritten
        note = "" if papers else self.beyond(question)
        return Resolution(query=" ".join(query.split()), papers=papers, note=note)

    def _condense_plainly(self, question: str, papers: list[Citation]) -> str:
        stripped = _NUMBER_REF.sub(" ", _ORDINAL_REF.sub(" ", question))
        if papers:
            return " ".join(p.label for p in papers) + " " + stripped
        previous = self.turns[-1].search_query
        if self.turns[-1].answer.refused:  # nothing was found: nothing to follow up on
            return question
        if is_follow_up(question):
            new_terms = set(analyze([question])[0])
            words = previous.split()
            carried = [
                word
                for word, terms in zip(words, analyze(words), strict=True)
                if terms and terms[0] not in new_terms
            ]
            return f"{stripped} {' '.join(carried[:12])}"
        return question
