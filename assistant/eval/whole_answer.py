"""What a reader sees in an answer, measured against the eval set's gold papers.

Faithfulness and citation precision score each sentence against the abstract it cites, so an
answer padded with faithful quotes from unrelated papers scores 1.000 on both. These metrics
look at the answer as a whole instead:

- cited-paper precision: the share of the papers an answer cites that are gold papers;
- cited-paper recall: the share of the gold papers that the answer cites;
- answer length in sentences and tokens (shorter is better for the same content);
- the false-refusal rate: answerable questions that were refused;
- correctness on the original wording and on the paraphrase split, side by side;
- per question shape: every named paper cited (``compare``), both halves' reference facts
  (``compound``), the defining sentence (``definition``), the expansion (``acronym``), every
  paper holding a literal term (``literal_survey``).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from assistant.answer.result import Answer
from assistant.text.normalise import split_answer
from assistant.text.tokens import count_tokens

# Aggregates of this module; higher is better except where LOWER_IS_BETTER says otherwise.
READER_METRICS = (
    "cited_precision",
    "cited_recall",
    "cited_precision_multi",
    "cited_recall_multi",
    "false_refusal_rate",
    "correctness_original",
    "correctness_paraphrase",
    "cited_recall_compare",
    "correctness_compound",
    "correctness_definition",
    "correctness_acronym",
    "cited_recall_literal",
    "answer_sentences",
    "answer_tokens",
)
LOWER_IS_BETTER = frozenset(
    {
        "false_refusal_rate",
        "answer_sentences",
        "answer_tokens",
        "marked_unsupported",
        "strict_removed",
        "sentences_unsupported",
        "sentences_weak",
    }
)


def cited_papers(answer: Answer, gold: Sequence[str]) -> dict[str, float | None]:
    """Precision and recall of the cited papers against the gold ones (None without both)."""
    cited = {c.paper_id for c in answer.citations}
    wanted = set(gold)
    if answer.refused or not cited or not wanted:
        return {"cited_precision": None, "cited_recall": None}
    hits = len(cited & wanted)
    return {"cited_precision": hits / len(cited), "cited_recall": hits / len(wanted)}


def answer_length(answer: Answer) -> dict[str, float | None]:
    """Sentences and tokens of an answer that was given; None for a refusal."""
    if answer.refused:
        return {"answer_sentences": None, "answer_tokens": None}
    lines = [line for line in answer.text.splitlines() if line.strip()]
    sentences = sum(len(split_answer(line)) for line in lines)
    return {"answer_sentences": float(sentences), "answer_tokens": float(count_tokens(answer.text))}


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(statistics.mean(known), 4) if known else None


def reader_aggregate(rows: Sequence[dict[str, Any]]) -> dict[str, float | None]:
    """Run-level figures of this module, from the scored rows of ``harness.score_item``."""
    answerable = [r for r in rows if r["answerable"]]
    refused = sum(1 for r in answerable if r["refused"])

    def metric(name: str, kinds: set[str] | None = None) -> float | None:
        chosen = [r for r in rows if kinds is None or r.get("type") in kinds]
        return _mean([r["metrics"].get(name) for r in chosen])

    def shape(name: str, kind: str) -> float | None:
        chosen = [r for r in rows if r.get("type") == kind]
        return _mean([0.0 if r["refused"] else r["metrics"].get(name) for r in chosen])

    return {
        "cited_precision": metric("cited_precision"),
        "cited_recall": metric("cited_recall"),
        "cited_precision_multi": metric("cited_precision", {"multi"}),
        "cited_recall_multi": metric("cited_recall", {"multi"}),
        "false_refusal_rate": round(refused / len(answerable), 4) if answerable else None,
        "correctness_original": metric("correctness", {"factual"}),
        "correctness_paraphrase": metric("correctness", {"paraphrase"}),
        # question shapes (docs/evals.md): each with the metric it needs, a refusal scoring 0
        "cited_recall_compare": shape("cited_recall", "compare"),
        "correctness_compound": shape("correctness", "compound"),
        "correctness_definition": shape("correctness", "definition"),
        "correctness_acronym": shape("correctness", "acronym"),
        "cited_recall_literal": shape("cited_recall", "literal_survey"),
        "answer_sentences": metric("answer_sentences"),
        "answer_tokens": metric("answer_tokens"),
    }
