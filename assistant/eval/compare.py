"""Regression views: two runs side by side, and thresholds that fail a CI job."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from assistant.errors import AssistantError, InputFileError
from assistant.eval.formats import MACHINE_DEPENDENT, lower_is_better
from assistant.eval.harness import METRICS
from assistant.eval.whole_answer import LOWER_IS_BETTER

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


def _better(name: str, delta: float | None) -> bool | None:
    """Whether a change of ``delta`` is an improvement (None: no change, or unknown)."""
    if delta is None or abs(delta) < 1e-9:
        return None
    return (delta < 0) if lower_is_better(name) else (delta > 0)


def _question_changes(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, bool]]:
    """What changed for one question, each with whether it is an improvement."""
    notes: list[tuple[str, bool]] = []
    answerable = new.get("answerable", True)
    if bool(old.get("error")) != bool(new.get("error")):
        answered = not new.get("error")
        return [("answered, was no answer" if answered else "no answer now", answered)]
    if old["refused"] != new["refused"]:
        refused = new["refused"]
        notes.append(("now refused" if refused else "now answered", refused != answerable))
    elif answerable and not new["refused"] and "correct" in old and "correct" in new:
        if old["correct"] != new["correct"]:
            notes.append(("now correct" if new["correct"] else "no longer correct", new["correct"]))
    for name in WATCHED:
        va, vb = old["metrics"].get(name), new["metrics"].get(name)
        if va is not None and vb is not None and abs(vb - va) >= 0.1:
            notes.append((f"{name} {va:.2f} -> {vb:.2f}", vb > va))
    return notes


def compare(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Per-metric deltas (b - a), each said better or worse, and the questions whose outcome
    changed: ``direction`` "improved", "regressed" or "mixed". Latency is marked
    ``machine_dependent``: it moves with the load of the machine as much as with the code."""
    metrics = []
    for name in (*METRICS, "latency_p50_ms", "latency_p95_ms", "cost_usd"):
        va, vb = a["aggregate"].get(name), b["aggregate"].get(name)
        delta = vb - va if va is not None and vb is not None else None
        metrics.append(
            {
                "metric": name,
                "a": va,
                "b": vb,
                "delta": delta,
                "better": _better(name, delta),
                "machine_dependent": name in MACHINE_DEPENDENT,
            }
        )
    rows_a = {r["id"]: r for r in a["questions"]}
    ids_b = {r["id"] for r in b["questions"]}
    changes = []
    for row in b["questions"]:
        old = rows_a.get(row["id"])
        notes = _question_changes(old, row) if old is not None else []
        if notes:
            ups = {better for _, better in notes}
            direction = "mixed" if len(ups) == 2 else ("improved" if True in ups else "regressed")
            changes.append(
                {
                    "id": row["id"],
                    "question": row["question"],
                    "changes": [text for text, _ in notes],
                    "direction": direction,
                }
            )
    return {
        "metrics": metrics,
        "questions": changes,
        "only_in_a": [i for i in rows_a if i not in ids_b],
        "only_in_b": [r["id"] for r in b["questions"] if r["id"] not in rows_a],
    }


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
