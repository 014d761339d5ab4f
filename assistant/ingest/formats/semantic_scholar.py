"""Semantic Scholar's paper JSON (``/graph/v1/paper/…`` and its search and batch results):
``paperId``, ``title``, ``abstract``, ``authors`` [{name}], ``year``, ``venue`` or
``publicationVenue``, ``externalIds`` (DOI), ``url``."""

from __future__ import annotations

from typing import Any

from assistant.ingest.formats import clean_doi, year_in


def is_paper(record: dict[str, Any]) -> bool:
    return isinstance(record.get("paperId"), str)


def record(paper: dict[str, Any]) -> dict[str, Any]:
    """A paper in the keys ``make_paper`` reads."""
    authors = [
        a["name"]
        for a in paper.get("authors") or []
        if isinstance(a, dict) and isinstance(a.get("name"), str)
    ]
    venue = paper.get("venue")
    published = paper.get("publicationVenue")
    if not venue and isinstance(published, dict):
        venue = published.get("name")
    ids = paper.get("externalIds") if isinstance(paper.get("externalIds"), dict) else {}
    return {
        "id": paper["paperId"],
        "title": paper.get("title") or "",
        "authors": authors,
        "year": year_in(paper.get("year") or paper.get("publicationDate")),
        "venue": venue if isinstance(venue, str) and venue.strip() else None,
        "doi": clean_doi((ids or {}).get("DOI")),
        "url": paper.get("url") if isinstance(paper.get("url"), str) else None,
        "abstract": paper.get("abstract") or "",
    }
