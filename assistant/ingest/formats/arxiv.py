"""arXiv's Atom feed (``.atom``, or ``.xml`` whose root is an Atom feed), as its API
(export.arxiv.org/api/query) returns it, parsed with defusedxml (no entity expansion, no
external entities). The arXiv id without its version (``2101.00001``) is the paper id, so a new
version of a paper replaces the old one."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, TextIO
from xml.etree.ElementTree import Element

from assistant.ingest.formats import Row, clean_doi, no_abstract_note, year_in

ATOM = "{http://www.w3.org/2005/Atom}"
ARXIV = "{http://arxiv.org/schemas/atom}"
_VERSION = re.compile(r"v\d+$")


class NotAtom(ValueError):
    """The XML is not an Atom feed."""


def _text(node: Element | None) -> str:
    return " ".join((node.text or "").split()) if node is not None else ""


def _record(entry: Element) -> dict[str, Any]:
    link = next(
        (
            e.get("href")
            for e in entry.findall(f"{ATOM}link")
            if e.get("rel") == "alternate" and e.get("href")
        ),
        None,
    )
    raw_id = _text(entry.find(f"{ATOM}id"))
    short = _VERSION.sub("", raw_id.rsplit("/abs/", 1)[-1]) if "/abs/" in raw_id else raw_id
    return {
        "id": short or None,
        "title": _text(entry.find(f"{ATOM}title")),
        "authors": [_text(a.find(f"{ATOM}name")) for a in entry.findall(f"{ATOM}author")],
        "year": year_in(_text(entry.find(f"{ATOM}published"))),
        "venue": _text(entry.find(f"{ARXIV}journal_ref")) or "arXiv",
        "doi": clean_doi(_text(entry.find(f"{ARXIV}doi"))),
        "url": link or (raw_id if raw_id.startswith("http") else None),
        "abstract": _text(entry.find(f"{ATOM}summary")),
    }


def rows(handle: TextIO, name: str, notes: list[str]) -> Iterator[Row]:
    """One row per ``<entry>`` with a summary; raises ``NotAtom`` or defusedxml's and
    ElementTree's errors (the caller names the file)."""
    from defusedxml import ElementTree

    root = ElementTree.fromstring(handle.read())
    if root.tag != f"{ATOM}feed":
        raise NotAtom(f"the root element is <{root.tag.rsplit('}', 1)[-1]}>, not an Atom <feed>")
    skipped: list[str] = []
    for position, entry in enumerate(root.findall(f"{ATOM}entry"), start=1):
        record = _record(entry)
        if not record["abstract"]:
            skipped.append(record["id"] or f"entry {position}")
            continue
        yield position, record
    note = no_abstract_note(name, skipped)
    if note:
        notes.append(note)
