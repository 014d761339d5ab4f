"""Multi-turn state: follow-up questions become standalone search queries.

Two steps, the first always deterministic:
1. References to papers cited earlier ("[2]", "the second one", "that paper", "them") are
   resolved to those papers: the search is restricted to them and their labels join the query.
2. The question is condensed into a standalone one: by the LLM with the condense prompt when a
   model is configured, otherwise by carrying the previous query's key terms into a follow-up
   that does not name its topic (short, or opening with "and", "what about", "how", "why"...).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from assistant.answer import Answer, Citation
from assistant.lexical import analyze

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
    r"\b(?:those|these|both|all of them|them|they|their)\b"
    r"(?:\s+(?:papers|ones|works|methods|abstracts))?",
    re.IGNORECASE,
)


def _names_something(question: str) -> bool:
    """A name in the question: a capitalised word after the first, or a word with two
    capitals anywhere (KVFlow, LeMiCa, THG)."""
    words = re.findall(r"[A-Za-z][\w-]*", question)
    return any(sum(c.isupper() for c in w) >= 2 for w in words) or any(
        w[0].isupper() and w.lower() not in {"i"} for w in words[1:]
    )


_FOLLOW_UP = re.compile(
    r"^\s*(?:and|but|also|what about|how about|why|how|so|then|what else)\b", re.IGNORECASE
)


@dataclass
class Turn:
    question: str
    search_query: str
    answer: Answer


@dataclass
class Resolution:
    query: str  # the standalone query to search for
    papers: list[Citation] = field(default_factory=list)  # papers the question refers to


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

    def add(self, question: str, search_query: str, answer: Answer) -> None:
        self.turns.append(Turn(question, search_query, answer))

    def history(self, turns: int = 3) -> str:
        """The last few exchanges as plain text, for the condense prompt."""
        lines = []
        for turn in self.turns[-turns:]:
            lines.append(f"User: {turn.question}")
            lines.append(f"Assistant: {' '.join(turn.answer.text.split())[:600]}")
        return "\n".join(lines)

    def referenced(self, question: str) -> list[Citation]:
        """Earlier-cited papers the question points at, by number, ordinal or pronoun."""
        cited = self.last_citations
        if not cited:
            return []
        by_n = {c.n: c for c in cited}
        found: list[Citation] = []
        for match in _NUMBER_REF.finditer(question):
            n = int(match.group(1) or match.group(2))
            if n in by_n:
                found.append(by_n[n])
        for match in _ORDINAL_REF.finditer(question):
            index = _ORDINALS[match.group(1).lower()]
            position = len(cited) - 1 if index == -1 else index - 1
            if 0 <= position < len(cited):
                found.append(cited[position])
        if found or not self._is_follow_up(question):
            return list({c.paper_id: c for c in found}.values())
        if _PLURAL_REF.search(question) and len(cited) > 1:
            found = list(cited)
        elif _SINGULAR_REF.search(question):
            found = [cited[0]]
        return list({c.paper_id: c for c in found}.values())

    @staticmethod
    def _is_follow_up(question: str) -> bool:
        """Refers back ("it", "those"), or opens like a follow-up or is too short to name a
        topic of its own, unless it names something itself ("What is KVFlow?")."""
        if _SINGULAR_REF.search(question) or _PLURAL_REF.search(question):
            return True
        if _names_something(question):
            return False
        return bool(_FOLLOW_UP.search(question)) or len(analyze([question])[0]) <= 4

    def resolve(
        self, question: str, condense: Callable[[str, str], str | None] | None = None
    ) -> Resolution:
        """The standalone query for a (possibly follow-up) question."""
        if not self.turns:
            return Resolution(question)
        papers = self.referenced(question)
        query = None
        if condense is not None:
            query = condense(self.history(), question)
        if not query:
            query = self._condense_plainly(question, papers)
        elif papers and not any(p.label.lower() in query.lower() for p in papers):
            query = " ".join(p.label for p in papers) + " " + query
        return Resolution(query=" ".join(query.split()), papers=papers)

    def _condense_plainly(self, question: str, papers: list[Citation]) -> str:
        stripped = _NUMBER_REF.sub(" ", _ORDINAL_REF.sub(" ", question))
        if papers:
            return " ".join(p.label for p in papers) + " " + stripped
        previous = self.turns[-1].search_query
        if self.turns[-1].answer.refused:  # nothing was found: nothing to follow up on
            return question
        if self._is_follow_up(question):
            new_terms = set(analyze([question])[0])
            words = previous.split()
            carried = [
                word
                for word, terms in zip(words, analyze(words), strict=True)
                if terms and terms[0] not in new_terms
            ]
            return f"{stripped} {' '.join(carried[:12])}"
        return question
