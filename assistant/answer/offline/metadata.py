"""Questions about papers rather than their findings: who wrote it, where to read it, when and
where it appeared, which papers are from a year.

They are answered from the stored title, authors, year, venue and URL, one cited sentence per
paper ("«Title» was written by A, B and C [1]."), and plainly when that metadata is missing ("The
abstracts I have do not list the authors of «KVFlow» [1]."), never with quotes from the abstract.
"papers from 2024" also restricts retrieval to that year (``asked_year``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Literal

from assistant.answer.result import CANNOT_ANSWER
from assistant.answer.sources import Context
from assistant.retrieval.hybrid import Hit
from assistant.store.filters import any_author
from assistant.text.terms import analyze

Kind = Literal["authors", "doi", "link", "venue", "year", "from_year", "by_author"]

_AUTHORS = re.compile(
    r"\bwho\b[^?.]{0,20}\b(?:wrote|write|writes|authored)\b|\bwho (?:are|were|is|was) the "
    r"authors?\b|\b(?:what|which) (?:are|were) the (?:names of the )?authors\b|\bby whom\b"
    r"|\b(?:list|name|give me) (?:all )?the authors\b|\bauthors? (?:list|names)\b",
    re.IGNORECASE,
)
_DOI = re.compile(r"\bdois?\b", re.IGNORECASE)
_LINK = re.compile(
    r"\bwhere can (?:i|one|we) (?:read|find|get|download|access)\b|\blinks? (?:to|for)\b"
    r"|\b(?:url|pdf|doi)\b",
    re.IGNORECASE,
)
_VENUE = re.compile(
    r"\b(?:what|which) (?:venue|conference|journal|workshop)\b|\bwhere (?:was|were)\b[^?]{0,80}"
    r"\b(?:published|presented)\b|\bpublished (?:at|in) (?:what|which)\b|\bvenue\b",
    re.IGNORECASE,
)
_WHEN = re.compile(
    r"\b(?:what|which) year\b|\bwhen (?:was|were)\b[^?]{0,80}\b(?:published|written|released)\b"
    r"|\byear of publication\b",
    re.IGNORECASE,
)
# "When was the THG source code released?", "what year was its implementation released?" ask
# about the code, not the paper ("when was the STARFlow model published?" is the paper's year).
_CODE_RELEASE = re.compile(
    r"\b(?:code(?! generation)|codebase|implementation|toolkit|repository|repo|software|"
    r"weights|checkpoints?)\b[^?]{0,40}\b(?:released|published|open[- ]sourced|made (?:public|"
    r"available)|available|on github)\b",
    re.IGNORECASE,
)
_YEAR = re.compile(r"\b((?:19|20)\d{2})\b")
_ABOUT_PAPERS = re.compile(
    r"\b(?:papers?|abstracts?|articles?|publications?|published|appeared)\b", re.IGNORECASE
)
_ASKING_WORDS = set(
    "the a an this that paper papers article abstract work published publish written wrote write "
    "writes authored author authors names name list give by whom of on about for to is was were "
    "are at in where what which who when did does do me i can one we it its please venue "
    "conference journal workshop link links url pdf doi read find get download access year "
    "presented released appeared".split()
)
_LISTING_WORDS = (
    "paper abstract work article publication published appeared written list show give me which "
    "what are were there any all from in of the year you have i do find tell library collection "
    "store corpus database here my our by did has write wrote author authored coauthored "
    "co-authored publish"
)
# A name as people write it in a question: capitalised words, with the particles of surnames
# ("Anna van der Berg", "J. R. Smith", "Siobhán O'Neill").
_NAME_WORD = r"[A-ZÀ-Þ][\w'’.-]*"
_PARTICLE = r"(?:van|von|der|den|de|del|della|da|di|du|la|le|dos|das|ten|ter)"
_NAME = rf"(?:{_PARTICLE}\s+)*{_NAME_WORD}(?:\s+(?:{_PARTICLE}\s+)*{_NAME_WORD}){{0,3}}"
_BY_AUTHOR = (
    # "Which papers did John Smith write?", "what has J. Smith published?"
    re.compile(
        rf"\b(?i:papers?|articles?|abstracts?|works?|publications?|what)\b[^?]{{0,20}}?"
        rf"\b(?i:did|has|have|had)\s+(?P<name>{_NAME})\s+(?i:write|wrote|written|author|"
        r"authored|co-?author|co-?authored|publish|published)\b"
    ),
    # "papers by Anna van der Berg", "anything written by Smith"
    re.compile(
        rf"\b(?i:written|authored|co-?authored|papers?|articles?|abstracts?|works?|"
        rf"publications?|anything)\s+(?i:by)\s+(?P<name>{_NAME})"
    ),
)
# "What do papers from 2024 find?": about what they find, not which they are.
_FINDINGS = re.compile(
    r"\bwhat (?:do|does|did)\b[^?]{0,80}\b(?:find|found|show|report|propose|conclude|claim|"
    r"discover|study|measure)\b",
    re.IGNORECASE,
)


@cache
def _listing_terms() -> frozenset[str]:
    """Terms of a question that only asks for a list ("show me the papers published in 2024")."""
    return frozenset(analyze([_LISTING_WORDS])[0])


@dataclass(frozen=True)
class MetadataQuestion:
    kind: Kind
    year: int | None = None  # the year asked for, for "from_year" (and "by_author")
    author: str | None = None  # the author asked for, for "by_author"


def asked_year(question: str) -> int | None:
    """The year in "papers from 2024 on soil moisture": a restriction on what to retrieve."""
    match = _YEAR.search(question)
    return int(match.group(1)) if match and _ABOUT_PAPERS.search(question) else None


def asked_author(question: str) -> str | None:
    """The author in "Which papers did John Smith write?", "papers by A. van der Berg on
    glaciers": a restriction on what to retrieve, as ``--filter author=`` is."""
    for pattern in _BY_AUTHOR:
        match = pattern.search(question)
        if match:
            return match.group("name").rstrip(".'’")
    return None


def unrestricted(question: str) -> str:
    """The question without the year and the author it restricts papers to: "What do papers
    by John Smith from 2024 find?" -> "What do papers by  from  find?"."""
    author = asked_author(question)
    return _YEAR.sub(" ", question.replace(author, " ") if author else question)


def is_listing(question: str) -> bool:
    """Asks only which papers are from a year or by an author, about no topic ("papers from
    2024", "Which papers did John Smith write?"), not what they find."""
    year, author = asked_year(question), asked_author(question)
    if (year is None and author is None) or _FINDINGS.search(question):
        return False
    return set(analyze([unrestricted(question)])[0]) <= _listing_terms()


def parse(question: str) -> MetadataQuestion | None:
    """What metadata the question asks for, or None when it asks about content."""
    checks: tuple[tuple[Kind, re.Pattern[str]], ...] = (
        ("authors", _AUTHORS),
        ("doi", _DOI),
        ("link", _LINK),
        ("venue", _VENUE),
        ("year", _WHEN),
    )
    for kind, pattern in checks:
        if pattern.search(question):
            if kind == "year" and _CODE_RELEASE.search(question):
                return None
            return MetadataQuestion(kind)
    if is_listing(question):
        author = asked_author(question)
        if author is not None:
            return MetadataQuestion("by_author", asked_year(question), author)
        return MetadataQuestion("from_year", asked_year(question))
    return None


def topic_query(question: str) -> str:
    """What to search for: "who wrote the soil-moisture paper?" -> "soil-moisture". The asking
    words are not about any abstract, and would only dilute the match with the paper named."""
    about = parse(question)
    if about is None or about.kind in ("from_year", "by_author"):
        return question
    words = [w.rstrip(".") for w in re.findall(r"\w[\w.+-]*", question)]
    return " ".join(w for w in words if w.lower() not in _ASKING_WORDS) or question


def _sentence(kind: Kind, hit: Hit, n: int) -> str:
    paper, name = hit.paper, f"«{hit.label}»"
    if kind == "authors":
        if paper.authors:
            return f"{name} was written by {paper.author_names()} [{n}]."
        return f"The abstracts I have do not list the authors of {name} [{n}]."
    if kind == "doi":
        if paper.doi:
            return f"The DOI of {name} is {paper.doi} [{n}]."
        return f"The abstracts I have do not record a DOI for {name} [{n}]."
    if kind == "link":
        if paper.url:
            return f"{name} is at {paper.url} [{n}]."
        where = paper.location
        return f"The abstracts I have give no link for {name}; its abstract is {where} [{n}]."
    if kind == "venue":
        if paper.venue:
            when = f" in {paper.year}" if paper.year and str(paper.year) not in paper.venue else ""
            return f"{name} appeared at {paper.venue}{when} [{n}]."
        return f"The abstracts I have do not record where {name} was published [{n}]."
    if paper.year:
        return f"{name} is from {paper.year} [{n}]."
    return f"The abstracts I have do not record when {name} was published [{n}]."


def answer(question: MetadataQuestion, context: Context) -> str:
    """One cited sentence per paper asked about, built from its metadata."""
    sources = context.sources
    if not sources:
        return CANNOT_ANSWER
    if question.kind == "from_year":
        found = [
            f"«{hit.label}» [{n}]"
            for n, hit in enumerate(sources, start=1)
            if hit.paper.year == question.year
        ]
        return f"From {question.year}: {', '.join(found)}." if found else CANNOT_ANSWER
    if question.kind == "by_author" and question.author:
        found = [
            f"«{hit.label}» [{n}]"
            for n, hit in enumerate(sources, start=1)
            if any_author(hit.paper.authors, question.author)
            and question.year in (None, hit.paper.year)
        ]
        when = f", from {question.year}" if question.year else ""
        return f"By {question.author}{when}: {', '.join(found)}." if found else CANNOT_ANSWER
    if context.pinned:  # a follow-up about papers already chosen: all of them
        targets = list(range(1, len(sources) + 1))
    else:  # the papers the question names, else the best match
        targets = [n for n, hit in enumerate(sources, start=1) if hit.named_in(context.question)]
        targets = targets or [1]
    return " ".join(_sentence(question.kind, sources[n - 1], n) for n in targets)
