"""Running an eval set through ``Assistant`` and scoring every answer.

Each finished question is appended to ``answers.jsonl`` in the run folder at once (flushed and
fsynced), so an interrupted run resumes where it stopped. Remote providers run several
questions at a time (``workers``); the offline default runs one at a time.
"""

from __future__ import annotations

import json
import os
import statistics
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from assistant.answer.conversation import Conversation
from assistant.answer.result import Answer
from assistant.core import Assistant
from assistant.errors import NoAnswerError
from assistant.eval.citation_quality import citation_quality
from assistant.eval.dataset import EvalItem
from assistant.eval.faithfulness import faithfulness
from assistant.eval.refusal import Outcome, refusal_scores
from assistant.eval.relevance import answer_relevance, correctness
from assistant.eval.retrieval import mrr, ndcg_at_k, recall_at_k
from assistant.eval.speed import cost_and_speed
from assistant.eval.whole_answer import (
    READER_METRICS,
    answer_length,
    cited_papers,
    reader_aggregate,
)
from assistant.judge.judges import Judge

PER_QUESTION = (  # scored on each answer, then averaged
    "recall@5",
    "recall@10",
    "mrr",
    "ndcg@10",
    "faithfulness",
    "faithfulness_retrieved",
    # The same decision as the marks: shares of sentences the eval's judge marks ✗ and ?.
    "sentences_unsupported",
    "sentences_weak",
    "citation_recall",
    "citation_precision",
    "citation_f1",
    "answer_relevance",
    "correctness",
    # Verification at answer time (a chat model, ASSISTANT_LLM__VERIFY): the share of checked
    # sentences marked unsupported, faithfulness of the rest, and answers strict mode cut.
    "marked_unsupported",
    "faithfulness_unmarked",
    "strict_removed",
    # Chat pairs: 1 when the question was pinned to the earlier answer's papers (or searched
    # afresh) as the item's ``pinned`` says.
    "pinned_decision",
)
# Every aggregate metric, in the order of the report; higher is better except LOWER_IS_BETTER.
METRICS = (
    *PER_QUESTION,
    "refusal_precision",
    "refusal_recall",
    "accuracy",
    "precision",
    *READER_METRICS,
)


def _converse(assistant: Assistant, conversation: Conversation, question: str) -> Answer:
    resolution = conversation.resolve(question, assistant.provider.condense)
    filters = {"paper_id": [p.paper_id for p in resolution.papers]} if resolution.papers else None
    *_, answer = assistant.stream(question, filters=filters, search_query=resolution.query)
    assert isinstance(answer, Answer)
    conversation.add(question, resolution.query, answer, resolution.papers)
    return answer


def _about(item: EvalItem) -> dict[str, Any]:
    """What the eval set says of a question, copied into its row for the report."""
    return {
        "id": item.id,
        "split": item.split,
        "type": item.type,
        "question": item.question,
        "answerable": item.answerable,
        "gold": item.gold_labels,
        "gold_papers": item.gold_papers,
        "reference": item.reference,
    }


def error_row(item: EvalItem, error: Exception) -> dict[str, Any]:
    """A question the model gave no answer to (an empty or reasoning-only reply): counted
    apart, in no metric, and asked again by ``--resume``."""
    return {
        **_about(item),
        "search_query": item.question,
        "refused": False,
        "correct": False,
        "error": str(error),
        "answer": "",
        "cited": [],
        "cited_papers": [],
        "warnings": [str(error)],
        "latency_ms": 0.0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "tokens_estimated": False,
        "cost_usd": None,
        "metrics": {},
    }


def score_item(assistant: Assistant, item: EvalItem, judge: Judge) -> dict[str, Any]:
    """Answer one question (after its conversation history) and compute every metric."""
    conversation = Conversation()
    try:
        for earlier in item.history:
            _converse(assistant, conversation, earlier)
        answer = _converse(assistant, conversation, item.question)
    except NoAnswerError as exc:
        return error_row(item, exc)
    query = conversation.turns[-1].search_query
    ranked = [h.paper_id for h in assistant.search(query, k=10)]
    gold = {pid: 1.0 for pid in item.gold_papers}
    row: dict[str, Any] = {
        **_about(item),
        "search_query": query,
        "refused": answer.refused,
        "answer": answer.text,
        "cited": [c.label for c in answer.citations],
        "cited_papers": [c.paper_id for c in answer.citations],
        "warnings": answer.warnings,
        "latency_ms": round(answer.latency_ms, 1),
        "prompt_tokens": answer.usage.prompt_tokens,
        "completion_tokens": answer.usage.completion_tokens,
        "tokens_estimated": answer.usage.estimated,
        "cost_usd": answer.usage.cost_usd,
    }
    metrics: dict[str, float | None] = dict.fromkeys(PER_QUESTION)
    metrics["strict_removed"] = float(sum(w.startswith("strict: removed") for w in answer.warnings))
    if item.pinned is not None:
        row["pinned"] = [p.label for p in conversation.turns[-1].pinned]
        metrics["pinned_decision"] = float(bool(row["pinned"]) == item.pinned)
    if item.answerable and gold:
        metrics.update(
            {
                "recall@5": recall_at_k(ranked, gold, 5),
                "recall@10": recall_at_k(ranked, gold, 10),
                "mrr": mrr(ranked, gold),
                "ndcg@10": ndcg_at_k(ranked, gold, 10),
            }
        )
    if not answer.refused:
        cited = {c.n: c.text for c in answer.citations}
        faith = faithfulness(answer.text, cited, answer.retrieved, judge)
        quality = citation_quality(answer.text, cited, judge)
        metrics.update(
            {
                "faithfulness": faith.score_cited,
                "faithfulness_retrieved": faith.score_retrieved,
                "sentences_unsupported": faith.share_unsupported,
                "sentences_weak": faith.share_weak,
                "citation_recall": quality.recall,
                "citation_precision": quality.precision,
                "citation_f1": quality.f1,
                "answer_relevance": answer_relevance(
                    item.question, answer.text, assistant.embedder
                ),
            }
        )
        row["unsupported_claims"] = faith.unsupported
        if answer.checks:  # verified at answer time: what the reader is told to trust
            marked = [c for c in answer.checks if c.verdict == "unsupported"]
            trusted = answer.text
            for check in marked:
                trusted = trusted.replace(check.sentence, "", 1)
            shown = faithfulness(trusted, cited, answer.retrieved, judge)
            metrics["marked_unsupported"] = len(marked) / len(answer.checks)
            metrics["faithfulness_unmarked"] = shown.score_cited
        if item.answerable:
            metrics["correctness"] = correctness(answer.text, item.reference)
    cited_gold = any(c.paper_id in gold for c in answer.citations)
    score = metrics["correctness"]
    row["correct"] = bool(
        item.answerable
        and not answer.refused
        and (score >= 0.5 if score is not None else cited_gold)
    )
    metrics.update(cited_papers(answer, item.gold_papers) if item.answerable else {})
    metrics.update(answer_length(answer))
    row["metrics"] = {k: (round(v, 4) if v is not None else None) for k, v in metrics.items()}
    return row


def aggregate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Every metric over the answered questions; replies with no answer are counted apart."""
    errors = sum(1 for r in rows if r.get("error"))
    rows = [r for r in rows if not r.get("error")]
    out: dict[str, Any] = {"questions": len(rows) + errors, "no_answer": errors}
    for name in PER_QUESTION:
        values = [r["metrics"][name] for r in rows if r["metrics"].get(name) is not None]
        out[name] = round(statistics.mean(values), 4) if values else None
    outcomes = [Outcome(r["answerable"], r["refused"], r["correct"]) for r in rows]
    out.update(
        {k: (round(v, 4) if v is not None else None) for k, v in refusal_scores(outcomes).items()}
    )
    out.update(reader_aggregate(rows))
    out.update(
        cost_and_speed(
            [r["latency_ms"] for r in rows],
            [r["prompt_tokens"] for r in rows],
            [r["completion_tokens"] for r in rows],
            [r["cost_usd"] for r in rows],
            [r.get("tokens_estimated", False) for r in rows],
        )
    )
    return out


def read_done(path: Path) -> dict[str, dict[str, Any]]:
    """Rows already answered in an earlier (interrupted) run; a torn last line is ignored."""
    # Later lines win: a question asked again after a reply with no answer.
    done: dict[str, dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if not row.get("error"):  # a reply with no answer is asked again
                done[row["id"]] = row
    return done


def run_eval(
    assistant: Assistant,
    items: Iterable[EvalItem],
    judge: Judge,
    run_dir: Path,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """Answer and score every item, resuming from ``run_dir/answers.jsonl``."""
    run_dir.mkdir(parents=True, exist_ok=True)
    journal = run_dir / "answers.jsonl"
    items = list(items)
    done = read_done(journal)
    todo = [item for item in items if item.id not in done]
    lock = threading.Lock()
    finished = len(items) - len(todo)
    if progress:
        progress(finished, len(items))

    def record(row: dict[str, Any]) -> None:
        nonlocal finished
        with lock, journal.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
            done[row["id"]] = row
            finished += 1
            if progress:
                progress(finished, len(items))

    if workers <= 1:
        for item in todo:
            record(score_item(assistant, item, judge))
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(score_item, assistant, item, judge) for item in todo]
            for future in as_completed(futures):
                record(future.result())
    return [done[item.id] for item in items]
