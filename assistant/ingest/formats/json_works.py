"""Records of JSON and JSONL files, in whichever shape they come: an OpenAlex work, a Semantic
Scholar paper, a CSL JSON item (Zotero's, Mendeley's, pandoc's), a BEIR corpus document, or a
plain record with an ``abstract`` field (the project's own JSONL). A ``.json`` file may hold
one record, a list of them, or an API page (``results`` for OpenAlex, ``data`` for Semantic
Scholar's search)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

from assistant.ingest.formats import (
    Row,
    beir,
    csl,
    no_abstract_note,
    openalex,
    semantic_scholar,
)


def convert(record: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The record in ``make_paper``'s keys, and whether it came from a service's export (then a
    missing abstract is counted, not an error)."""
    if openalex.is_work(record):
        return openalex.record(record), True
    if semantic_scholar.is_paper(record):
        return semantic_scholar.record(record), True
    if csl.is_item(record):
        return csl.record(record), True
    if beir.is_doc(record):
        return beir.record(record), True
    return record, False


def _items(document: Any) -> list[Any]:
    if isinstance(document, list):
        return document
    if isinstance(document, dict):
        for key in ("results", "data"):  # OpenAlex's and Semantic Scholar's pages
            if isinstance(document.get(key), list):
                return list(document[key])
        return [document]
    return [document]


def _rows(
    items: Iterable[tuple[int, Any]], name: str, what: str, notes: list[str]
) -> Iterator[Row]:
    skipped: list[str] = []
    for position, item in items:
        if isinstance(item, str):  # already a problem
            yield position, item
            continue
        if not isinstance(item, dict):
            yield position, f"{what} {position} is not a JSON object"
            continue
        record, exported = convert(item)
        if exported and not str(record.get("abstract") or "").strip():
            skipped.append(str(record.get("id") or f"{what} {position}"))
            continue
        yield position, record
    note = no_abstract_note(name, skipped, "works")
    if note:
        notes.append(note)


def json_rows(handle: TextIO, name: str, notes: list[str]) -> Iterator[Row]:
    """A ``.json`` file: read whole (raises ``json.JSONDecodeError``)."""
    items = _items(json.load(handle))
    yield from _rows(enumerate(items, start=1), name, "record", notes)


def _parsed(lines: Iterable[str]) -> Iterator[tuple[int, Any]]:
    for line_no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if "\x00" in line:
            yield line_no, f"line {line_no} holds a NUL byte (\\0); skipped"
            continue
        try:
            yield line_no, json.loads(line)
        except json.JSONDecodeError as exc:
            yield line_no, f"line {line_no} is not valid JSON ({exc.msg})"


def jsonl_rows(handle: TextIO, name: str, notes: list[str]) -> Iterator[Row]:
    """A ``.jsonl`` file, one record a line, read as a stream."""
    yield from _rows(_parsed(handle), name, "line", notes)
