"""Refusals: precision and recall of refusing on unanswerable questions, and LitQA2's pair
accuracy (correct / all) vs precision (correct / answered)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Outcome:
    answerable: bool
    refused: bool
    correct: bool  # an answer that is right; meaningless when refused


def refusal_scores(outcomes: Sequence[Outcome]) -> dict[str, float | None]:
    refused = [o for o in outcomes if o.refused]
    unanswerable = [o for o in outcomes if not o.answerable]
    true_refusals = sum(1 for o in refused if not o.answerable)
    answered = [o for o in outcomes if not o.refused]
    correct = sum(1 for o in answered if o.answerable and o.correct)
    return {
        "refusal_precision": true_refusals / len(refused) if refused else None,
        "refusal_recall": true_refusals / len(unanswerable) if unanswerable else None,
        "accuracy": correct / len(outcomes) if outcomes else None,
        "precision": correct / len(answered) if answered else None,
    }
