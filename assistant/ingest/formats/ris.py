"""RIS (``.ris``, or ``.txt`` that starts with ``TY  -``) as Zotero, Mendeley and EndNote export
it, read with rispy. The ``ID`` tag, when there is one, is the paper id."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TextIO

from assistant.ingest.formats import Row, clean_doi, first_last, no_abstract_note, year_in


def _first(record: dict[str, Any], *keys: str) -> str:
    for key in keys:
        value = record.get(key)
        if isinstance(value, list):
            value = next((v for v in value if isinstance(v, str) and v.strip()), None)
        if isinstance(value, str) and value.strip():
            return " ".join(value.split())
    return ""


def _record(raw: dict[str, Any]) -> dict[str, Any]:
    authors = [a for key in ("authors", "first_authors") for a in raw.get(key) or []]
    urls = [u for u in raw.get("urls") or [] if isinstance(u, str)]
    doi = clean_doi(_first(raw, "doi"))
    return {
        "id": _first(raw, "id") or None,
        "title": _first(raw, "title", "primary_title"),
        "authors": [first_last(a) for a in authors if isinstance(a, str) and a.strip()],
        "year": year_in(_first(raw, "year", "publication_year", "date")),
        "venue": _first(
            raw, "secondary_title", "journal_name", "alternate_title3", "alternate_title2"
        )
        or None,
        "doi": doi,
        "url": next((u.strip() for u in urls if "doi.org/" not in u), None) or None,
        "abstract": _first(raw, "abstract", "notes_abstract"),
    }


def rows(handle: TextIO, name: str, notes: list[str]) -> Iterator[Row]:
    """One row per record with an abstract (position: the record's number in the file)."""
    import rispy

    skipped: list[str] = []
    for position, raw in enumerate(rispy.load(handle), start=1):
        record = _record(raw)
        if not record["abstract"]:
            skipped.append(record["title"][:40] or f"record {position}")
            continue
        yield position, record
    note = no_abstract_note(name, skipped, "records")
    if note:
        notes.append(note)
