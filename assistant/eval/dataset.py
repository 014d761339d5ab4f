"""Eval sets: JSONL, one question per line.

Fields: ``id`` and ``question`` (required); ``gold_papers`` (paper ids that answer it);
``answerable`` (default true); ``reference`` (facts a correct answer states); ``history``
(earlier questions of the same conversation, for follow-ups); ``pinned`` (for a chat pair: whether
the question must be pinned to the papers the previous answer cited, true for a follow-up, false
for a new question that uses a pronoun); ``type`` and ``gold_labels``
(informative); ``paraphrase_of`` (the id of the factual question a paraphrase rewords);
``unanswerable_kind`` (``missing_detail`` or ``off_topic``); ``split``: ``tune`` and ``dev`` for the
questions thresholds and the survey bar were fitted on, ``test`` for those written afterwards,
blind to the system's answers, to report on (docs/evals.md); ``heldout``, the old
name of ``dev``, is read as ``dev``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from assistant.errors import InputFileError


class EvalItem(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    question: str = Field(min_length=1)
    gold_papers: list[str] = Field(default_factory=list)
    answerable: bool = True
    reference: list[str] = Field(default_factory=list)
    history: list[str] = Field(default_factory=list)
    pinned: bool | None = None
    type: str = "factual"  # "unanswerable" when not given and not answerable
    gold_labels: list[str] = Field(default_factory=list)
    paraphrase_of: str | None = None
    unanswerable_kind: str | None = None
    split: Literal["tune", "dev", "test"] = "tune"

    @model_validator(mode="before")
    @classmethod
    def _default_type(cls, data: Any) -> Any:
        """A question written as not answerable is of that type unless it says otherwise."""
        if isinstance(data, dict) and "type" not in data and data.get("answerable") is False:
            return {**data, "type": "unanswerable"}
        return data

    @field_validator("split", mode="before")
    @classmethod
    def _renamed(cls, value: object) -> object:
        """``heldout`` was the name of ``dev`` until the ``test`` split was written."""
        return "dev" if value == "heldout" else value


def load_eval_set(path: Path) -> list[EvalItem]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFileError(str(path), f"cannot read the eval set: {exc}") from exc
    items: list[EvalItem] = []
    seen: set[str] = set()
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = EvalItem.model_validate(json.loads(line))
        except json.JSONDecodeError as exc:
            raise InputFileError(f"{path}:{n}", f"not valid JSON ({exc.msg})") from exc
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'row'}: {e['msg']}" for e in exc.errors()
            )
            raise InputFileError(f"{path}:{n}", problems) from exc
        if item.id in seen:
            raise InputFileError(f"{path}:{n}", f"duplicate id {item.id!r}")
        seen.add(item.id)
        items.append(item)
    if not items:
        raise InputFileError(str(path), "no questions found")
    return items
