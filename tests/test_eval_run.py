"""`assistant eval` end to end: offline default, resumable runs, reports, and a deliberately
unfaithful model (scripted on the loopback server) scoring visibly worse than a faithful one."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from assistant import Assistant, load_settings
from assistant.cli.main import main
from assistant.eval.dataset import load_eval_set
from assistant.eval.harness import METRICS, aggregate, run_eval
from assistant.judge.judges import OfflineJudge
from assistant.text.normalise import split_sentences
from tests.openai_server import FakeOpenAI, Reply

EVAL_SET = Path(__file__).parents[1] / "evals" / "neurips2025.jsonl"


def _subset(tmp_path: Path, ids: list[str]) -> Path:
    rows = [line for line in EVAL_SET.read_text().splitlines() if json.loads(line)["id"] in ids]
    path = tmp_path / "subset.jsonl"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_a_users_own_set_is_told_which_gold_ids_are_missing(shipped_store: Path, tmp_path):
    """A mistyped gold id was counted ("1 of 2 gold papers are not in this store") but not
    named; a question written as not answerable, without a type, was reported as factual."""
    kvflow = "ace8d9c9b9c279d1"  # KVFlow's id: a hash of its abstract
    own = tmp_path / "mine.jsonl"
    own.write_text(
        json.dumps({"id": "m1", "question": "What does KVFlow do?", "gold_papers": [kvflow]})
        + "\n"
        + json.dumps({"id": "m2", "question": "What does KVFlow cost?", "gold_papers": ["kvfl0w"],
                      "answerable": False})
        + "\n"
    )  # fmt: skip
    out = tmp_path / "run"
    args = ["eval", "--set", str(own), "--out", str(out), "--store", str(shipped_store)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "1 of the eval set's 2 gold papers are not in this store (kvfl0w)" in result.stderr
    rows = {r["id"]: r for r in json.loads((out / "results.json").read_text())["questions"]}
    assert rows["m2"]["type"] == "unanswerable" and rows["m1"]["type"] == "factual"


def test_offline_judge_separates_support_from_noise(embedder):
    judge = OfflineJudge(embedder)
    evidence = [
        "KVFlow achieves up to 1.83x speedup for single workflows with large prompts, "
        "and up to 2.19x speedup for scenarios with many concurrent workflows."
    ]
    yes = judge.support("KVFlow is up to 2.19x faster with many concurrent workflows.", evidence)
    no = judge.support("Sourdough bread needs a long cold fermentation.", evidence)
    assert yes > judge.threshold > no


def test_eval_cli_offline_run_and_resume(shipped_store: Path, tmp_path: Path):
    subset = _subset(tmp_path, ["q01", "q02", "q41", "q52", "q56", "q62"])
    out = tmp_path / "run"
    first = CliRunner().invoke(
        main,
        [
            "eval",
            "--set",
            str(subset),
            "--limit",
            "3",
            "--out",
            str(out),
            "--store",
            str(shipped_store),
        ],
    )
    assert first.exit_code == 0, first.output
    assert len((out / "answers.jsonl").read_text().splitlines()) == 3
    # Resume: the three answered questions are kept, only the rest is answered.
    second = CliRunner().invoke(
        main,
        [
            "eval",
            "--set",
            str(subset),
            "--resume",
            str(out),
            "--store",
            str(shipped_store),
            "--json",
            "--fail-under",
            "questions=7",
        ],
    )
    lines = (out / "answers.jsonl").read_text().splitlines()
    assert len(lines) == 6 and len({json.loads(x)["id"] for x in lines}) == 6
    results = json.loads((out / "results.json").read_text())
    totals = results["aggregate"]
    assert set(METRICS) <= set(totals) and totals["questions"] == 6
    assert totals["faithfulness"] == pytest.approx(1.0)  # extractive quotes are faithful
    # q56 refused (off-topic), and q62 too: KVFlow's abstract never mentions a learning rate.
    assert totals["refusal_recall"] == 1.0 and totals["false_refusal_rate"] == 0.0
    by_id = {json.loads(x)["id"]: json.loads(x) for x in lines}
    # q01 no longer quotes an unrelated MNL sentence: THG alone, with its 30% figure.
    assert by_id["q01"]["cited"] == ["THG"] and "30%" in by_id["q01"]["answer"]
    assert totals["cited_precision"] >= 0.8
    assert second.exit_code == 1 and "questions = 6.000 < 7.0" in second.stderr
    html = (out / "report.html").read_text()
    assert html.count("<svg") == 2 and 'data-split="tune" data-type="followup"' in html
    assert '<td class="label">q52</td>' in html  # report.html: tests/test_eval_report.py
    assert "| faithfulness | 1.000 |" in (out / "report.md").read_text()
    compared = CliRunner().invoke(main, ["eval", "--compare", str(out), str(out)])
    assert compared.exit_code == 0 and "no question changed its outcome" in compared.stdout
    # --out into that folder again would score its old answers as new: refused, nothing lost.
    again = CliRunner().invoke(main, ["eval", "--out", str(out), "--store", str(shipped_store)])
    assert again.exit_code == 2 and f"--resume {out} finishes that run" in again.stderr
    assert (out / "answers.jsonl").read_text().splitlines() == lines
    both = ["eval", "--out", str(tmp_path / "new"), "--resume", str(out)]
    assert CliRunner().invoke(main, both).exit_code == 2 and not (tmp_path / "new").exists()
    # A resume with another model than the run began with is refused, nothing answered.
    other = ["eval", "--set", str(subset), "--resume", str(out), "--store", str(shipped_store)]
    other += ["--provider", "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"]
    refused = CliRunner().invoke(main, other)
    assert refused.exit_code == 1 and "was begun with other settings (provider" in refused.stderr
    assert (out / "answers.jsonl").read_text().splitlines() == lines


def _first_sentences(body: dict[str, Any]) -> Reply:
    """A faithful model: quotes the first two sentences of source 1, cited."""
    user = body["messages"][-1]["content"]
    match = re.search(r'<source n="1"[^>]*>\n(.*?)\n</source>', user, re.S)
    if match is None:
        return Reply(text="The abstracts I have do not answer this question.")
    quoted = split_sentences(match.group(1))[:2]
    return Reply(text=" ".join(s.rstrip(".") + " [1]." for s in quoted))


def _fabricate(body: dict[str, Any]) -> Reply:
    """An unfaithful model: confident claims the sources never make, cited anyway."""
    return Reply(
        text="This paper proves that quantum computers solve every NP-complete "
        "problem in constant time [1]. It was trained on five trillion photos of "
        "cats using a single laptop [1]."
    )


def _eval_scripted_models(
    models: dict[str, Callable[[dict[str, Any]], Reply]],
    items: list,
    store: Path,
    embedder,
    tmp_path: Path,
) -> dict[str, dict[str, Any]]:
    """The aggregate of an eval run per scripted model, each on its own loopback server."""
    judge = OfflineJudge(embedder)
    totals = {}
    for name, responder in models.items():
        server = FakeOpenAI().start()
        server.responder = responder
        settings = load_settings(
            store={"path": store},
            llm={"provider": "openai", "model": "gpt-4o-mini"},
            openai_base_url=server.base_url,
        )
        try:
            with Assistant(settings, embedder=embedder) as assistant:
                rows = run_eval(assistant, items, judge, tmp_path / name, workers=2)
        finally:
            server.stop()
        totals[name] = aggregate(rows)
    return totals


@pytest.mark.parametrize("unused", [None])
def test_unfaithful_model_scores_worse(shipped_store, embedder, tmp_path, unused):
    items = [i for i in load_eval_set(EVAL_SET) if i.answerable][:6]
    models = {"faithful": _first_sentences, "unfaithful": _fabricate}
    totals = _eval_scripted_models(models, items, shipped_store, embedder, tmp_path)
    good, bad = totals["faithful"], totals["unfaithful"]
    assert good["faithfulness"] >= 0.8 and bad["faithfulness"] <= 0.2
    assert good["citation_recall"] - bad["citation_recall"] >= 0.5
    assert good["answer_relevance"] > bad["answer_relevance"]
    assert good["prompt_tokens"] == bad["prompt_tokens"] == 120 * 6  # provider-reported usage


def _source_sentence(user: str, n: int) -> str | None:
    match = re.search(rf'<source n="{n}"[^>]*>\n(.*?)\n</source>', user, re.S)
    return split_sentences(match.group(1))[0].rstrip(".") + f" [{n}]." if match else None


def _focused(body: dict[str, Any]) -> Reply:
    """Quotes the best source only."""
    return Reply(text=_source_sentence(body["messages"][-1]["content"], 1) or "")


def _padded(body: dict[str, Any]) -> Reply:
    """Quotes the best source, then pads with a faithful quote from each of two more."""
    user = body["messages"][-1]["content"]
    quotes = [_source_sentence(user, n) for n in (1, 2, 3)]
    return Reply(text=" ".join(q for q in quotes if q))


def test_a_model_that_pads_with_other_papers_loses_cited_paper_precision(
    shipped_store, embedder, tmp_path
):
    """The LLM path is held to the reader's bar too: every quote is faithful, so faithfulness
    cannot tell these two models apart; cited-paper precision does."""
    items = [i for i in load_eval_set(EVAL_SET) if i.type == "factual"][:6]
    models = {"focused": _focused, "padded": _padded}
    totals = _eval_scripted_models(models, items, shipped_store, embedder, tmp_path)
    focused, padded = totals["focused"], totals["padded"]
    assert focused["faithfulness"] >= 0.8 and padded["faithfulness"] >= 0.8
    assert focused["cited_precision"] >= 0.8 and padded["cited_precision"] <= 0.5
    assert padded["answer_sentences"] > focused["answer_sentences"]


def test_calibrate_cli_json_contract(tmp_path: Path):
    evidence = ["KVFlow achieves up to 2.19x speedup with many concurrent workflows."]
    rows = [
        {
            "claim": "KVFlow is up to 2.19x faster with many concurrent workflows.",
            "evidence": evidence,
            "label": "supported",
        },
        {
            "claim": "KVFlow gets its speedup from concurrent workflows.",
            "evidence": evidence,
            "label": "supported",
        },
        {
            "claim": "Sourdough needs a cold fermentation.",
            "evidence": evidence,
            "label": "not_supported",
        },
        {
            "claim": "Protein folding is solved by KVFlow.",
            "evidence": evidence,
            "label": "not_supported",
        },
    ]
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = CliRunner().invoke(main, ["eval", "calibrate", "--pairs", str(pairs), "--json"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert set(figures) == {"judge", "n", "balanced_accuracy", "auc", "confusion", "scores"}
    assert figures["judge"] == "offline" and figures["n"] == 4 and len(figures["scores"]) == 4
    assert figures["auc"] == 1.0 and figures["balanced_accuracy"] == 1.0
    assert figures["confusion"]["supported"] == {"supported": 2, "not_supported": 0}
    human = CliRunner().invoke(main, ["eval", "calibrate", "--pairs", str(pairs)])
    assert "balanced accuracy 1.000" in human.stdout
    assert "bootstrap interval of the balanced accuracy: 1.000-1.000" in human.stdout
    bad = CliRunner().invoke(main, ["eval", "calibrate", "--pairs", str(tmp_path / "nope.jsonl")])
    assert bad.exit_code == 1 and "cannot read pairs" in bad.stderr


def test_threaded_eval_on_a_stale_index(tmp_path: Path, corpus_papers, embedder, server):
    """Four workers share one Assistant and one judge while the lexical index is stale: it is
    rebuilt once, every question is answered and judged, none fails."""
    store = tmp_path / "store"
    settings = load_settings(
        store={"path": store},
        llm={"provider": "openai", "model": "gpt-4o-mini"},
        openai_base_url=server.base_url,
    )
    server.responder = _first_sentences
    items = [i for i in load_eval_set(EVAL_SET) if i.answerable][:12]
    gold = {p for i in items for p in i.gold_papers}
    with Assistant(settings, embedder=embedder) as assistant:
        assistant.ingest_papers([p for p in corpus_papers if p.paper_id in gold])
        assistant.store.catalog.bump_generation()  # as if another process had changed the store
        lexical = assistant.store.lexical_index
        assert lexical._delta is None or lexical._delta.stamp != assistant.store.stamp()
        rows = run_eval(assistant, items, OfflineJudge(embedder), tmp_path / "run", workers=4)
        assert lexical.current().stamp == assistant.store.stamp()
    assert [r["id"] for r in rows] == [i.id for i in items]
    assert all(not r["refused"] and r["cited"] for r in rows)  # a worker's failure raises
    assert aggregate(rows)["faithfulness"] >= 0.8


def test_an_old_heldout_split_is_dev_and_an_empty_split_is_an_error(
    shipped_store: Path, tmp_path: Path
):
    path = tmp_path / "old.jsonl"
    rows = [
        {"id": "a", "question": "What does KVFlow replace LRU with?", "split": "heldout"},
        {"id": "b", "question": "What is THG?"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert [i.split for i in load_eval_set(path)] == ["dev", "tune"]
    run = CliRunner().invoke(
        main, ["eval", "--set", str(path), "--split", "test", "--store", str(shipped_store)]
    )
    assert run.exit_code != 0 and "no questions in split 'test'" in run.output
