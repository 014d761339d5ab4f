"""Each eval metric on small hand-made cases, with a transparent word-overlap judge."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from assistant.answer.result import Answer, Citation
from assistant.errors import AssistantError, InputFileError
from assistant.eval.citation_quality import citation_quality
from assistant.eval.compare import compare, failures, parse_thresholds
from assistant.eval.dataset import load_eval_set
from assistant.eval.faithfulness import faithfulness
from assistant.eval.refusal import Outcome, refusal_scores
from assistant.eval.relevance import correctness, fact_found
from assistant.eval.retrieval import mrr, ndcg_at_k, recall_at_k
from assistant.eval.speed import cost_and_speed
from assistant.eval.whole_answer import answer_length, cited_papers, reader_aggregate
from assistant.judge.calibration import (
    accepted_by_kind,
    balanced_accuracy,
    bootstrap_interval,
    load_pairs,
    roc_auc,
)
from assistant.judge.claims import cited_sentences
from assistant.judge.conflicts import PaperText
from assistant.judge.features import strip_markers
from assistant.judge.judges import Judge


class WordJudge(Judge):
    """Supported when every word of the claim (4+ letters) occurs in the evidence."""

    name = "words"

    def support(self, claim: str, evidence: Sequence[str]) -> float:
        text = " ".join(evidence).lower()
        words = [w.strip(".,").lower() for w in strip_markers(claim).split() if len(w) > 3]
        return float(bool(evidence) and all(w in text for w in words))


A = "KVFlow replaces LRU eviction with a workflow-aware policy. It reaches 2.19x speedup."
B = "THG reduces function evaluations by 30% without retraining."


def test_retrieval_metrics():
    gold = {"a": 1.0, "b": 1.0}
    assert recall_at_k(["x", "a", "y", "b"], gold, 2) == 0.5
    assert recall_at_k(["x", "a", "y", "b"], gold, 4) == 1.0
    assert mrr(["x", "y", "a"], gold) == pytest.approx(1 / 3)
    assert mrr(["x"], gold) == 0.0
    assert ndcg_at_k(["a", "b", "x"], gold, 10) == pytest.approx(1.0)
    # One relevant at rank 2 of 2 relevant: (1/log2(3)) / (1 + 1/log2(3))
    assert ndcg_at_k(["x", "a"], gold, 10) == pytest.approx(0.6309 / 1.6309, abs=1e-4)


def test_sentences_keep_their_citations():
    rows = cited_sentences("- KVFlow: It uses graphs [1]. It is fast [1][2].\n\nNo marker here.")
    assert [(r.text, r.citations) for r in rows] == [
        ("KVFlow: It uses graphs [1].", (1,)),
        ("It is fast [1][2].", (1, 2)),
        ("No marker here.", ()),
    ]


def test_faithfulness_counts_claims_supported_by_their_citations():
    answer = (
        "KVFlow replaces LRU eviction [1]. THG reduces function evaluations [1]. "
        "KVFlow runs on Mars [1]."
    )
    result = faithfulness(
        answer, {1: A}, [PaperText(A, "KVFlow"), PaperText(B, "THG")], WordJudge()
    )
    assert result.claims == 3
    assert result.score_cited == pytest.approx(1 / 3)
    # The THG claim is true of a retrieved abstract, just mis-cited.
    assert result.score_retrieved == pytest.approx(2 / 3)
    assert result.unsupported == ["THG reduces function evaluations.", "KVFlow runs on Mars."]


def test_citation_recall_and_precision_alce_style():
    cited = {1: A, 2: B}
    # Supported by [1]; [2] is irrelevant (neither supports alone nor is needed).
    q = citation_quality("KVFlow replaces LRU eviction [1][2].", cited, WordJudge())
    assert (q.recall, q.precision) == (1.0, 0.5)
    # Needs both: each citation is needed, so both count as relevant.
    q = citation_quality(
        "KVFlow replaces LRU and THG reduces evaluations [1][2].", cited, WordJudge()
    )
    assert (q.recall, q.precision) == (1.0, 1.0)
    # An uncited sentence lowers recall; a marker to nothing lowers precision.
    q = citation_quality(
        "KVFlow replaces LRU eviction. THG reduces evaluations [2][7].", cited, WordJudge()
    )
    assert (q.sentences, q.recall, q.citations, q.precision) == (2, 0.5, 2, 0.5)
    assert q.f1 == pytest.approx(0.5)


def test_correctness_against_reference_facts():
    answer = "KVFlow is 2.19× faster and served 40000 agents; THG saves 30%."
    assert fact_found("2.19x", answer) and fact_found("40,000", answer)
    assert correctness(answer, ["2.19", "30%", "1.83"]) == pytest.approx(2 / 3)
    assert correctness(answer, []) is None


def test_refusal_and_litqa_scores():
    outcomes = [
        Outcome(True, False, True),
        Outcome(True, False, False),
        Outcome(True, True, False),
        Outcome(False, True, False),
        Outcome(False, False, False),
    ]
    scores = refusal_scores(outcomes)
    assert scores["refusal_precision"] == 0.5  # 2 refusals, 1 of them right
    assert scores["refusal_recall"] == 0.5  # 2 unanswerable, 1 refused
    assert scores["accuracy"] == pytest.approx(1 / 5)
    assert scores["precision"] == pytest.approx(1 / 3)


def test_cost_and_speed():
    out = cost_and_speed([100, 200, 300, 400], [10, 10, 10, 10], [1, 2, 3, 4], [0.1, None, 0.2, 0])
    assert out["latency_p50_ms"] == 250 and out["prompt_tokens"] == 40
    assert out["completion_tokens"] == 10 and out["cost_usd"] == pytest.approx(0.3)


def test_calibration_statistics():
    assert balanced_accuracy([1, 1, 0, 0], [True, False, False, False]) == 0.75
    assert roc_auc([1, 1, 0, 0], [0.9, 0.4, 0.5, 0.1]) == 0.75
    assert roc_auc([1, 0], [0.5, 0.5]) == 0.5


def test_bootstrap_interval_and_acceptance_by_kind():
    y = [1] * 20 + [0] * 20
    perfect = [True] * 20 + [False] * 20
    assert bootstrap_interval(y, perfect) == (1.0, 1.0)
    noisy = [True] * 15 + [False] * 5 + [True] * 5 + [False] * 15  # balanced accuracy 0.75
    low, high = bootstrap_interval(y, noisy)
    assert low < 0.75 < high and high - low < 0.5
    rows = [{"kind": "SUPPORT"}, {"kind": "CONTRADICT"}, {"kind": "CONTRADICT"}, {}]
    assert accepted_by_kind(rows, np.array([True, True, False, True])) == {
        "SUPPORT": [1, 1],
        "CONTRADICT": [1, 2],
    }


def test_pairs_file_errors_name_the_line(tmp_path: Path):
    good = {"claim": "c", "evidence": "e", "label": "supported"}
    path = tmp_path / "pairs.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({"claim": "c", "label": "maybe"}) + "\n")
    with pytest.raises(InputFileError, match=r"pairs.jsonl:2: missing field\(s\) evidence"):
        load_pairs(path)
    path.write_text(json.dumps(good) + "\n")
    assert load_pairs(path)[0]["evidence"] == ["e"]


def test_eval_set_validation(tmp_path: Path):
    path = tmp_path / "set.jsonl"
    path.write_text('{"id": "a", "question": "Q?"}\n{"id": "b"}\n')
    with pytest.raises(InputFileError, match=r"set.jsonl:2: question: Field required"):
        load_eval_set(path)
    path.write_text('{"id": "a", "question": "Q?"}\n{"id": "a", "question": "R?"}\n')
    with pytest.raises(InputFileError, match="duplicate id 'a'"):
        load_eval_set(path)


def test_shipped_eval_set_is_well_formed(corpus_papers):
    items = load_eval_set(Path(__file__).parents[1] / "evals" / "neurips2025.jsonl")
    ids = {p.paper_id for p in corpus_papers}
    assert len(items) >= 60
    assert sum(not i.answerable for i in items) >= 10
    assert {i.type for i in items} >= {"factual", "multi", "paraphrase", "followup", "unanswerable"}
    assert all(set(i.gold_papers) <= ids for i in items)
    assert all(i.gold_papers for i in items if i.answerable)


def test_compare_and_thresholds():
    def run(faith: float, refused: bool) -> dict:
        row = {
            "id": "q1",
            "question": "Q",
            "refused": refused,
            "metrics": {"faithfulness": faith, "citation_f1": 1.0},
        }
        return {"aggregate": {"faithfulness": faith, "questions": 1}, "questions": [row]}

    diff = compare(run(0.9, False), run(0.5, True))
    faith = next(m for m in diff["metrics"] if m["metric"] == "faithfulness")
    assert faith["delta"] == pytest.approx(-0.4)
    assert diff["questions"][0]["changes"] == ["now refused", "faithfulness 0.90 -> 0.50"]
    limits = parse_thresholds(("faithfulness=0.8",))
    assert failures({"faithfulness": 0.5}, limits) == ["faithfulness = 0.500 < 0.8"]
    assert failures({"faithfulness": 0.9}, limits) == []
    with pytest.raises(AssistantError, match="METRIC=VALUE"):
        parse_thresholds(("speed=1",))


# -- what a reader sees (assistant.eval.whole_answer) ---------------------------------------------


def _cited_answer(text: str, paper_ids: list[str], refused: bool = False) -> Answer:
    citations = [
        Citation(n, pid, pid, f"{pid}.txt#1", "abstract") for n, pid in enumerate(paper_ids, 1)
    ]
    return Answer("q", text, refused, citations, [], "extractive", "extractive")


def test_a_padded_answer_loses_cited_paper_precision_not_faithfulness():
    """Quoting an unrelated paper faithfully is still padding: precision sees it."""
    focused = _cited_answer("THG cuts evaluations by 30% [1].", ["thg"])
    padded = _cited_answer(
        "THG cuts evaluations by 30% [1]. MNL learns choices [2].", ["thg", "mnl"]
    )
    assert cited_papers(focused, ["thg"]) == {"cited_precision": 1.0, "cited_recall": 1.0}
    assert cited_papers(padded, ["thg"]) == {"cited_precision": 0.5, "cited_recall": 1.0}
    assert cited_papers(focused, ["thg", "lemica"])["cited_recall"] == 0.5
    refused = _cited_answer("The abstracts I have do not answer this question.", [], refused=True)
    assert cited_papers(refused, ["thg"]) == {"cited_precision": None, "cited_recall": None}
    assert answer_length(padded)["answer_sentences"] == 2.0
    assert answer_length(padded)["answer_tokens"] > answer_length(focused)["answer_tokens"]


def test_reader_aggregate_splits_wordings_and_counts_false_refusals():
    def row(kind: str, answerable: bool, refused: bool, **metrics: float) -> dict:
        return {"type": kind, "answerable": answerable, "refused": refused, "metrics": metrics}

    rows = [
        row("factual", True, False, correctness=1.0, cited_precision=1.0),
        row("paraphrase", True, False, correctness=0.0, cited_precision=0.5),
        row("paraphrase", True, True),
        row("multi", True, False, cited_precision=1.0, cited_recall=0.5),
        row("unanswerable", False, True),
    ]
    out = reader_aggregate(rows)
    assert out["correctness_original"] == 1.0 and out["correctness_paraphrase"] == 0.0
    assert out["false_refusal_rate"] == 0.25  # 1 of 4 answerable questions refused
    assert out["cited_precision"] == round((1.0 + 0.5 + 1.0) / 3, 4)
    assert out["cited_recall_multi"] == 0.5


def test_fail_under_refuses_a_floor_on_a_lower_is_better_metric():
    with pytest.raises(AssistantError, match="lower is better"):
        parse_thresholds(("answer_tokens=10",))
