"""A logistic model over standardised features, fitted with numpy (no scikit-learn): the shape
of the extractive path's learned decisions (``survey``: which papers a "which papers ..."
question wants; ``answering``: which sentences of a paper answer a question). Each ships as a
JSON file written by a script under ``evals/`` that fits it on the eval set's tune and dev
splits only."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Logistic:
    weights: tuple[float, ...]
    bias: float
    mean: tuple[float, ...]
    scale: tuple[float, ...]

    def logit(self, rows: Sequence[Sequence[float]]) -> np.ndarray:
        x = (np.asarray(rows, dtype=float) - np.asarray(self.mean)) / np.asarray(self.scale)
        return x @ np.asarray(self.weights) + self.bias

    def probability(self, rows: Sequence[Sequence[float]]) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-self.logit(rows)))

    def coefficients(self) -> dict[str, Any]:
        return {
            "weights": list(self.weights),
            "bias": self.bias,
            "mean": list(self.mean),
            "scale": list(self.scale),
        }


def read_coefficients(data: dict[str, Any], features: Sequence[str], file: str) -> Logistic:
    """The model in ``data`` (a JSON object), refused when fitted on other features."""
    if data.get("features") != list(features):
        raise ValueError(f"{file} was fitted on other features; refit it")
    return Logistic(
        weights=tuple(float(w) for w in data["weights"]),
        bias=float(data["bias"]),
        mean=tuple(float(m) for m in data["mean"]),
        scale=tuple(float(s) for s in data["scale"]),
    )


def fit_logistic(
    x: np.ndarray, y: np.ndarray, *, l2: float = 1.0, steps: int = 4000, lr: float = 0.1
) -> Logistic:
    """L2-regularised logistic regression by gradient descent on standardised features."""
    mean, scale = x.mean(0), x.std(0) + 1e-9
    z = (x - mean) / scale
    w, b = np.zeros(z.shape[1]), 0.0
    for _ in range(steps):
        g = 1 / (1 + np.exp(-(z @ w + b))) - y
        w -= lr * (z.T @ g + l2 * w) / len(y)
        b -= lr * g.mean()
    return Logistic(tuple(w.tolist()), float(b), tuple(mean.tolist()), tuple(scale.tolist()))


def fit_arguments(doc: str, out: Path, eval_set: Path) -> Any:
    """The command line every fit script under ``evals/`` takes: the store to read the
    shipped corpus from, the eval set, and where to write the model."""
    import argparse

    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--store", required=True, help="a store holding the shipped corpus")
    parser.add_argument("--eval-set", type=Path, default=eval_set)
    parser.add_argument("--out", type=Path, default=out)
    return parser.parse_args()
