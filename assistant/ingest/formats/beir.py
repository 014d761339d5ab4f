"""A BEIR corpus (``corpus.jsonl`` of SciFact, TREC-COVID, NFCorpus, SCIDOCS …): one document
per line with ``_id``, ``title``, ``text`` (the abstract) and optional ``metadata``."""

from __future__ import annotations

from typing import Any


def is_doc(record: dict[str, Any]) -> bool:
    """BEIR's shape: ``_id`` and ``text``, and no field of any other shape's."""
    return "_id" in record and isinstance(record.get("text"), str) and "abstract" not in record


def record(doc: dict[str, Any]) -> dict[str, Any]:
    """A document in the keys ``make_paper`` reads."""
    return {"id": doc["_id"], "title": doc.get("title") or "", "abstract": doc["text"]}
