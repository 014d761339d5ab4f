"""How well a judge agrees with human labels: balanced accuracy, ROC AUC, confusion matrix."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from assistant.errors import InputFileError
from assistant.judge.conflicts import PaperText
from assistant.judge.judges import Judge
from assistant.judge.verify import judgement

LABELS = ("supported", "not_supported")
# What `assistant eval calibrate --json` prints; the text output adds the bootstrap interval and
# the acceptance per `kind`.
JSON_FIELDS = ("judge", "n", "balanced_accuracy", "auc", "confusion", "scores")


def balanced_accuracy(
    y: Sequence[float] | np.ndarray, predicted: Sequence[bool] | np.ndarray
) -> float:
    y_arr, p_arr = np.asarray(y) > 0.5, np.asarray(predicted, dtype=bool)
    recalls = [float((p_arr[y_arr == c] == c).mean()) for c in (True, False) if (y_arr == c).any()]
    return float(np.mean(recalls)) if recalls else 0.0


def roc_auc(y: Sequence[float] | np.ndarray, scores: Sequence[float] | np.ndarray) -> float:
    """Probability that a random positive outscores a random negative (ties count half)."""
    y_arr, s_arr = np.asarray(y) > 0.5, np.asarray(scores, dtype=float)
    pos, neg = s_arr[y_arr], s_arr[~y_arr]
    if not len(pos) or not len(neg):
        return float("nan")
    order = np.argsort(np.concatenate([pos, neg]), kind="mergesort")
    ranks = np.empty(len(order))
    values = np.concatenate([pos, neg])[order]
    i = 0
    while i < len(values):  # average ranks over ties
        j = i
        while j + 1 < len(values) and values[j + 1] == values[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def bootstrap_interval(
    y: Sequence[float] | np.ndarray,
    predicted: Sequence[bool] | np.ndarray,
    draws: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """95 % interval of the balanced accuracy over pairs resampled with replacement."""
    y_arr, p_arr = np.asarray(y), np.asarray(predicted, dtype=bool)
    rng = np.random.default_rng(seed)
    samples = []
    for _ in range(draws):
        pick = rng.integers(0, len(y_arr), len(y_arr))
        samples.append(balanced_accuracy(y_arr[pick], p_arr[pick]))
    low, high = np.percentile(samples, [2.5, 97.5])
    return float(low), float(high)


def accepted_by_kind(rows: list[dict[str, Any]], predicted: np.ndarray) -> dict[str, list[int]]:
    """[accepted, pairs] per optional ``kind`` field (e.g. SciFact's SUPPORT / CONTRADICT)."""
    counts: dict[str, list[int]] = {}
    for row, accepted in zip(rows, predicted, strict=True):
        if "kind" in row:
            tally = counts.setdefault(str(row["kind"]), [0, 0])
            tally[0] += int(accepted)
            tally[1] += 1
    return counts


def load_pairs(path: Path) -> list[dict[str, Any]]:
    rows = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFileError(str(path), f"cannot read pairs: {exc}") from exc
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputFileError(f"{path}:{n}", f"not valid JSON ({exc.msg})") from exc
        missing = [k for k in ("claim", "evidence", "label") if k not in row]
        if missing:
            raise InputFileError(f"{path}:{n}", f"missing field(s) {', '.join(missing)}")
        if row["label"] not in LABELS:
            raise InputFileError(
                f"{path}:{n}", f"label must be one of {LABELS}, not {row['label']!r}"
            )
        if isinstance(row["evidence"], str):
            row["evidence"] = [row["evidence"]]
        rows.append(row)
    if not rows:
        raise InputFileError(str(path), "no pairs found")
    return rows


def calibrate(judge: Judge, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The decision the marks use (``verify.judgement``: the judge and the exact checks),
    accepted when it is ✓, against the human labels."""
    found = [judgement(judge, r["claim"], [PaperText(e) for e in r["evidence"]]) for r in rows]
    scores = [j.score for j in found]
    y = np.array([r["label"] == "supported" for r in rows], dtype=float)
    predicted = np.array([j.verdict == "supported" for j in found])
    truth = y > 0.5
    return {
        "judge": judge.name,
        "n": len(rows),
        "balanced_accuracy": round(balanced_accuracy(y, predicted), 4),
        "auc": round(roc_auc(y, scores), 4),
        "confusion": {
            "supported": {
                "supported": int((truth & predicted).sum()),
                "not_supported": int((truth & ~predicted).sum()),
            },
            "not_supported": {
                "supported": int((~truth & predicted).sum()),
                "not_supported": int((~truth & ~predicted).sum()),
            },
        },
        "scores": [round(float(s), 4) for s in scores],
        "balanced_accuracy_95ci": [round(v, 4) for v in bootstrap_interval(y, predicted)],
        "accepted_by_kind": accepted_by_kind(rows, predicted),
    }
