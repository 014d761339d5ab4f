"""Regression views: two runs side by side, and thresholds that fail a CI job."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from assistant.errors import AssistantError, InputFileError
from assistant.eval.harness import METRICS
from assistant.eval.reader import LOWER_IS_BETTER

WATCHED = ("faithfulness", "citation_f1", "correctness", "ndcg@10", "cited_precision")


def load_results(path: Path) -> dict[str, Any]:
    if path.is_dir():
        path = path / "results.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputFileError(str(path), f"not a results.json of `assistant eval` ({exc})") from exc
    if "aggregate" not in data or "questions" not in data:
        raise InputFileError(str(path), "not a results.json of `assistant eval`")
    return data


def compare(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Per-metric deltas (b - a) and the questions whose outcome changed."""
    metrics = []
    for name in (*METRICS, "latency_p50_ms", "latency_p95_ms", "cost_usd"):
        va, vb = a["aggregate"].get(name), b["aggregate"].get(name)
        delta = vb - va if va is not None and vb is not None else None
        metrics.append({"metric": name, "a": va, "b": vb, "delta": delta})
    rows_a = {r["id"]: r for r in a["questions"]}
    changes = []
    for row in b["questions"]:
        old = rows_a.get(row["id"])
        if old is None:
            continue
        notes = []
        if old["refused"] != row["refused"]:
            notes.append("now refused" if row["refused"] else "now answered")
        for name in WATCHED:
            va, vb = old["metrics"].get(name), row["metrics"].get(name)
            if va is not None and vb is not None and abs(vb - va) >= 0.1:
                notes.append(f"{name} {va:.2f} -> {vb:.2f}")
        if notes:
            changes.append({"id": row["id"], "question": row["question"], "changes": notes})
    return {"metrics": metrics, "questions": changes}


def parse_thresholds(specs: tuple[str, ...]) -> dict[str, float]:
    out = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        name = name.strip()
        if name in LOWER_IS_BETTER:
            raise AssistantError(
                f"--fail-under {spec!r}: for {name} lower is better, so a floor is no gate"
            )
        if not sep or name not in (*METRICS, "questions"):
            raise AssistantError(
                f"--fail-under {spec!r}: use METRIC=VALUE with a metric among {', '.join(METRICS)}"
            )
        try:
            out[name] = float(value)
        except ValueError as exc:
            raise AssistantError(f"--fail-under {spec!r}: {value!r} is not a number") from exc
    return out


def failures(aggregate: dict[str, Any], thresholds: dict[str, float]) -> list[str]:
    failed = []
    for name, minimum in thresholds.items():
        value = aggregate.get(name)
        if value is None or value < minimum:
            failed.append(f"{name} = {_show(value)} < {minimum}")
    return failed


def _show(value: Any) -> str:
    return "n/a" if value is None else f"{value:.3f}"
