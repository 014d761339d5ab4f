"""CSL JSON, what Zotero, Mendeley, Paperpile and pandoc export as "CSL JSON": a list of items
with ``id``, ``type``, ``title``, ``abstract``, ``author`` [{family, given} or {literal}],
``issued`` {date-parts: [[year, …]]} (or ``raw``/``literal``), ``container-title``, ``DOI`` and
``URL``."""

from __future__ import annotations

import re
from typing import Any

from assistant.ingest.formats import clean_doi, year_in

_ZOTERO_ITEM = re.compile(r"^https?://zotero\.org/(?:users|groups)/.+/items/(\w+)$")
_POSITIONAL = re.compile(r"^ITEM-\d+$")
_SHAPE = ("issued", "container-title")  # keys only CSL spells so (not DOI, URL: plain ones may)


def is_item(record: dict[str, Any]) -> bool:
    """A CSL item: a ``type`` and a field only CSL spells so, or its list of name objects."""
    names = record.get("author")
    named = isinstance(names, list) and any(
        isinstance(n, dict) and ("family" in n or "literal" in n) for n in names
    )
    return isinstance(record.get("type"), str) and (named or any(k in record for k in _SHAPE))


def record(item: dict[str, Any]) -> dict[str, Any]:
    """An item in the keys ``make_paper`` reads."""
    venue = item.get("container-title")
    if isinstance(venue, list):  # some exporters write every title variant
        venue = next((v for v in venue if isinstance(v, str)), None)
    return {
        "id": _key(item),
        "title": item.get("title") or "",
        "authors": [name for n in item.get("author") or [] if (name := _name(n))],
        "year": _year(item.get("issued")),
        "venue": venue if isinstance(venue, str) and venue.strip() else None,
        "doi": clean_doi(item.get("DOI")),
        "url": item.get("URL") if isinstance(item.get("URL"), str) else None,
        "abstract": item.get("abstract") or "",
    }


def _key(item: dict[str, Any]) -> object:
    """The BibTeX key Better BibTeX adds (``citation-key``), so a paper keeps one id whichever
    export it came in; else Zotero's item key, which its CSV export names ``Key``, out of the
    item's URI; else the ``id`` as written, unless it only numbers the items of the file
    (Mendeley's ``ITEM-1``: a second export would replace the first one's papers)."""
    given = item.get("id")
    if isinstance(given, str) and _POSITIONAL.match(given):
        given = None  # Mendeley's "ITEM-3": its place in the file, so no id (a hash instead)
    zotero = _ZOTERO_ITEM.match(given) if isinstance(given, str) else None
    return item.get("citation-key") or (zotero.group(1) if zotero else given)


def _name(name: object) -> str | None:
    """'Ashish Vaswani' from {given, family}; an institution's ``literal`` as written."""
    if not isinstance(name, dict):
        return None
    if isinstance(name.get("literal"), str):
        return name["literal"].strip() or None
    keys = ("given", "dropping-particle", "non-dropping-particle", "family", "suffix")
    parts = [name.get(k) for k in keys]  # 'Ludwig van Beethoven', 'Martin Luther King Jr.'
    return " ".join(p.strip() for p in parts if isinstance(p, str) and p.strip()) or None


def _year(issued: object) -> int | None:
    """The year of ``{"date-parts": [[2025, 5]]}``, or of a ``raw``/``literal`` date."""
    if not isinstance(issued, dict):
        return year_in(issued)
    parts = issued.get("date-parts")
    if isinstance(parts, list) and parts and isinstance(parts[0], list) and parts[0]:
        return year_in(parts[0][0])
    return year_in(issued.get("raw") or issued.get("literal"))
