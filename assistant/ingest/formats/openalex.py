"""OpenAlex works, as its API (``/works/W…``, or a page with ``results``) and its snapshot
(one work per JSONL line) give them: the abstract is rebuilt from ``abstract_inverted_index``
(word -> positions), authors come from ``authorships``, the venue from ``primary_location``."""

from __future__ import annotations

from typing import Any

from assistant.ingest.formats import clean_doi, year_in


def is_work(record: dict[str, Any]) -> bool:
    """An OpenAlex work, told by its id or the fields only OpenAlex has."""
    work_id = record.get("id")
    return (isinstance(work_id, str) and work_id.startswith("https://openalex.org/W")) or (
        "abstract_inverted_index" in record or "authorships" in record
    )


def abstract_of(index: object) -> str:
    """The text of an inverted index: each word put at each of its positions."""
    if not isinstance(index, dict):
        return ""
    placed: dict[int, str] = {}
    for word, positions in index.items():
        for position in positions if isinstance(positions, list) else []:
            if isinstance(position, int):
                placed[position] = str(word)
    return " ".join(placed[p] for p in sorted(placed))


def _source_name(location: object) -> str | None:
    if not isinstance(location, dict):
        return None
    source = location.get("source")
    name = source.get("display_name") if isinstance(source, dict) else None
    return name.strip() if isinstance(name, str) and name.strip() else None


def record(work: dict[str, Any]) -> dict[str, Any]:
    """A work in the keys ``make_paper`` reads."""
    authors = [
        a["author"]["display_name"]
        for a in work.get("authorships") or []
        if isinstance(a, dict)
        and isinstance(a.get("author"), dict)
        and isinstance(a["author"].get("display_name"), str)
    ]
    location = work.get("primary_location")
    landing = location.get("landing_page_url") if isinstance(location, dict) else None
    work_id = str(work.get("id") or "").rsplit("/", 1)[-1]
    doi = clean_doi(work.get("doi"))
    return {
        "id": work_id or None,
        "title": work.get("display_name") or work.get("title") or "",
        "authors": authors,
        "year": year_in(work.get("publication_year") or work.get("publication_date")),
        "venue": _source_name(location),
        "doi": doi,
        "url": landing if isinstance(landing, str) and landing else None,
        "abstract": abstract_of(work.get("abstract_inverted_index")),
    }
