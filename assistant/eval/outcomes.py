"""What went wrong with one question of a run, as tags the report highlights and filters on.

A *failure* is a wrong outcome: no answer, a refusal of an answerable question, an answer to an
unanswerable one, an answer missing the reference facts, a sentence the judge does not find in
what it cites. A *warning* is a weaker sign: a cited paper that is not gold, a gold paper not
cited, a gold paper the search did not rank in its top 5.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class Tag(NamedTuple):
    slug: str  # for the report's filter
    text: str
    failure: bool  # False: a warning


TAGS = (
    Tag("no-answer", "no answer", True),
    Tag("false-refusal", "false refusal", True),
    Tag("answered-unanswerable", "answered unanswerable", True),
    Tag("incorrect", "incorrect", True),
    Tag("unsupported", "unsupported sentence", True),
    Tag("non-gold-cited", "cited a non-gold paper", False),
    Tag("gold-missed", "gold paper not cited", False),
    Tag("retrieval-miss", "gold not in top 5", False),
)
_BY_SLUG = {tag.slug: tag for tag in TAGS}


def _below_one(metrics: dict[str, Any], name: str) -> bool:
    value = metrics.get(name)
    return value is not None and value < 1.0


def tags_of(row: dict[str, Any]) -> list[Tag]:
    """The failures and warnings of one scored row of ``harness.score_item``, in ``TAGS`` order."""
    if row.get("error"):
        return [_BY_SLUG["no-answer"]]
    answerable, refused = row.get("answerable", True), row.get("refused", False)
    metrics = row.get("metrics") or {}
    found = {
        "false-refusal": answerable and refused,
        "answered-unanswerable": not answerable and not refused,
        "incorrect": answerable and not refused and not row.get("correct", True),
        "unsupported": _below_one(metrics, "faithfulness"),
        "non-gold-cited": _below_one(metrics, "cited_precision"),
        "gold-missed": _below_one(metrics, "cited_recall"),
        "retrieval-miss": _below_one(metrics, "recall@5"),
    }
    return [tag for tag in TAGS if found.get(tag.slug)]


def severity(tags: list[Tag]) -> str:
    """'fail', 'warn' or 'ok': how the report colours the row."""
    if any(tag.failure for tag in tags):
        return "fail"
    return "warn" if tags else "ok"
