"""Cited papers out as BibTeX, a reference list a writer can cite from (``ask --bib FILE``,
chat's ``/bib FILE``), written with bibtexparser.

Keys are stable across runs: a paper that came from a ``.bib`` keeps its own key; any other
gets one from its metadata as Google Scholar makes them (``okafor2023soil``: first author's
last name, year, first word of the title that is not a stop word), with ``a``, ``b``, … added
when two papers of one list would share it."""

from __future__ import annotations

import re
from collections.abc import Iterable

from assistant.answer.result import Answer
from assistant.ingest.corpus import Paper
from assistant.ingest.formats import is_suffix
from assistant.store.filters import fold

_CONFERENCE = re.compile(
    r"conference|proceedings|workshop|symposium|congress|meeting|neurips|nips|icml|iclr|cvpr|"
    r"iccv|eccv|acl|emnlp|naacl|aaai|ijcai|kdd|sigir|igarss",
    re.IGNORECASE,
)
_STOP = {"a", "an", "the", "on", "of", "for", "in", "and", "to", "with", "from", "towards"}
_SPECIAL = re.compile(r"([&%$#_])")
_KEY = re.compile(r"^[A-Za-z][\w:.\-/]*$")


def _latex(text: str) -> str:
    """Plain text as a BibTeX value: LaTeX's special characters escaped, braces dropped."""
    return _SPECIAL.sub(r"\\\1", text.replace("{", "").replace("}", "").replace("\\", ""))


def _ascii_word(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", fold(text))


def _name_parts(name: str) -> tuple[str, str, str]:
    """'Martin Luther King Jr.' -> ('King', 'Jr.', 'Martin Luther'); no suffix, no split."""
    words = name.split()
    if len(words) >= 3 and is_suffix(words[-1]):
        return words[-2], words[-1], " ".join(words[:-2])
    return name, "", ""


def _bibtex_name(name: str) -> str:
    """A name as BibTeX reads it: with a suffix, 'King, Jr., Martin Luther' (written as 'Martin
    Luther King Jr.' BibTeX takes 'Jr.' for the last name)."""
    last, suffix, given = _name_parts(name)
    return f"{last}, {suffix}, {given}" if suffix else name


def base_key(paper: Paper) -> str:
    """The paper's key before collisions are told apart."""
    if paper.source_file.lower().endswith(".bib") and _KEY.match(paper.paper_id):
        return paper.paper_id
    last_name = _name_parts(paper.authors[0])[0] if paper.authors else ""
    last = _ascii_word(last_name.split()[-1]) if last_name.strip() else ""  # not 'Jr.'s
    title_words = [w for w in re.findall(r"\w+", paper.title or paper.label)]
    first = next((_ascii_word(w) for w in title_words if fold(w) not in _STOP), "")
    key = f"{last or first or 'paper'}{paper.year or ''}{first if last else ''}"
    return key or "paper"


def _entry(paper: Paper, key: str) -> object:
    from bibtexparser.model import Entry, Field

    fields = [Field("title", _latex(paper.title or paper.label))]
    if paper.authors:
        fields.append(Field("author", " and ".join(_latex(_bibtex_name(a)) for a in paper.authors)))
    if paper.year is not None:
        fields.append(Field("year", str(paper.year)))
    kind = "misc"
    if paper.venue and paper.venue.lower() == "arxiv":
        fields.append(Field("howpublished", "arXiv"))
    elif paper.venue:
        kind = "inproceedings" if _CONFERENCE.search(paper.venue) else "article"
        venue_field = "booktitle" if kind == "inproceedings" else "journal"
        fields.append(Field(venue_field, _latex(paper.venue)))
    if paper.doi:
        fields.append(Field("doi", paper.doi))
    if paper.url and not (paper.doi and paper.url.lower().endswith(paper.doi.lower())):
        fields.append(Field("url", paper.url))
    return Entry(kind, key, fields)


def cited_papers(answers: Iterable[Answer]) -> list[Paper]:
    """The papers the answers cite, each once, in the order first cited."""
    found: dict[str, Paper] = {}
    for answer in answers:
        for citation in answer.citations:
            paper = answer.paper_of(citation)
            if paper is not None:
                found.setdefault(paper.paper_id, paper)
    return list(found.values())


def to_bibtex(papers: Iterable[Paper]) -> str:
    """The papers as BibTeX entries, each once, in the order given."""
    import bibtexparser
    from bibtexparser.library import Library

    library = Library()
    used: dict[str, int] = {}
    seen: set[str] = set()
    for paper in papers:
        if paper.paper_id in seen:
            continue
        seen.add(paper.paper_id)
        key = base_key(paper)
        count = used.get(key, 0)
        used[key] = count + 1
        if count:
            key += "abcdefghijklmnopqrstuvwxyz"[min(count, 26) - 1]
        library.add(_entry(paper, key))  # type: ignore[arg-type]
    return bibtexparser.write_string(library).strip() + "\n"
