"""Verified answers (#13): each sentence of a chat model's answer is judged against the abstracts
it cites, on the loopback server, with the offline judge the eval harness uses. Before, every
cited sentence was shown alike, and an answer without markers became a refusal."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from assistant import Assistant, load_settings
from assistant.cli.main import main
from assistant.eval.dataset import load_eval_set
from assistant.eval.harness import aggregate, run_eval
from assistant.judge.judges import OfflineJudge
from assistant.resources import default_eval_set
from assistant.text.normalise import split_sentences
from tests.openai_server import FakeOpenAI, Reply

KVFLOW_Q = "What does KVFlow replace LRU eviction with?"
TRUE = "KVFlow is a workflow-aware KV cache management framework tailored for agentic workloads"
FABRICATED = "KVFlow was trained on ten thousand GPUs in Antarctica"
NEGATED = "KVFlow does not achieve any speedup over SGLang"


def _llm(store: Path, server: FakeOpenAI, embedder, **llm) -> Assistant:
    settings = load_settings(
        store={"path": store},
        llm={"provider": "openai", "model": "gpt-4o-mini", "timeout": 5, **llm},
        openai_base_url=server.base_url,
    )
    return Assistant(settings, embedder=embedder)


def test_a_fabricated_cited_sentence_is_marked_unsupported(shipped_store, server, embedder):
    server.enqueue(f"{TRUE} [1]. {FABRICATED} [1]. {NEGATED} [1].")
    with _llm(shipped_store, server, embedder) as assistant:
        answer = assistant.ask(KVFLOW_Q)
    verdicts = [c.verdict for c in answer.checks]
    assert verdicts[0] == "supported" and verdicts[1] == "unsupported"
    assert verdicts[2] != "supported"  # says the opposite of "up to 2.19x speedup"
    assert answer.checks[0].evidence and "workflow-aware" in answer.checks[0].evidence
    assert not answer.refused and "Antarctica" in answer.text  # marked, not removed
    payload = answer.to_json()["checks"]
    assert [c["verdict"] for c in payload] == verdicts and payload[1]["attributed"] is False


def test_sentences_without_markers_are_attributed_by_the_checker(shipped_store, server, embedder):
    """A small local model often drops the markers: before, a correct answer was reported as
    'The abstracts I have do not answer this question.' with refused: true."""
    server.enqueue(f"{TRUE}. {FABRICATED}.")
    with _llm(shipped_store, server, embedder) as assistant:
        answer = assistant.ask(KVFLOW_Q)
    assert not answer.refused
    assert [c.label for c in answer.citations] == ["KVFlow"]
    first, second = answer.checks
    assert first.attributed and first.verdict == "supported" and "[1]" in answer.text
    assert not second.attributed and second.verdict == "unsupported"
    assert any("the checker attributed 1 sentence" in w for w in answer.warnings)


def test_the_extractive_default_is_not_rechecked(shipped):
    """It quotes, so it is supported by construction; verification would only cost time."""
    assert shipped.ask(KVFLOW_Q).checks == []


def test_cli_marks_each_sentence_and_explains(shipped_store, server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    server.enqueue(f"{TRUE} [1]. {FABRICATED} [1].")
    runner = CliRunner()
    result = runner.invoke(
        main, ["ask", KVFLOW_Q, "--store", str(shipped_store), "--model", "gpt-4o-mini"]
    )
    assert result.exit_code == 0, result.output
    assert "Checked: ✓ ✗ (1 of 2 not supported; a judgement, not a proof)" in result.stdout
    assert "✗ 0." in result.stdout and FABRICATED in result.stdout
    server.enqueue(f"{TRUE} [1]. {FABRICATED} [1].")
    explained = runner.invoke(
        main,
        ["ask", KVFLOW_Q, "--explain", "--store", str(shipped_store), "--model", "gpt-4o-mini"],
    )
    assert "closest: " in explained.stdout and "workflow-aware" in explained.stdout
    server.enqueue(f"{TRUE} [1].")
    as_json = runner.invoke(
        main, ["ask", KVFLOW_Q, "--json", "--store", str(shipped_store), "--model", "gpt-4o-mini"]
    )
    checks = json.loads(as_json.stdout)["checks"]
    assert [c["verdict"] for c in checks] == ["supported"] and checks[0]["score"] > 0.5
    server.enqueue(f"{TRUE} [1].")
    off = runner.invoke(
        main,
        ["ask", KVFLOW_Q, "--no-verify", "--store", str(shipped_store), "--model", "gpt-4o-mini"],
    )
    assert "Checked:" not in off.stdout


def test_strict_mode_asks_once_more_then_drops_what_is_still_unsupported(
    shipped_store, server, embedder
):
    server.enqueue(f"{TRUE} [1]. {FABRICATED} [1].", f"{TRUE} [1]. {FABRICATED} [1].")
    with _llm(shipped_store, server, embedder, strict=True) as assistant:
        answer = assistant.ask(KVFLOW_Q)
    retry = server.requests[-1]["messages"][-1]["content"]
    assert len(server.requests) == 2 and FABRICATED in retry and "not supported" in retry
    assert "Antarctica" not in answer.text and TRUE in answer.text and not answer.refused
    assert [c.verdict for c in answer.checks] == ["supported"]
    assert any(w.startswith("strict: removed 1 sentence(s)") for w in answer.warnings)
    assert answer.usage.prompt_tokens == 2 * 120  # both calls counted


def test_strict_mode_keeps_a_corrected_answer_and_never_asks_twice_for_a_good_one(
    shipped_store, server, embedder
):
    server.enqueue(f"{TRUE} [1]. {FABRICATED} [1].", f"{TRUE} [1].")
    with _llm(shipped_store, server, embedder, strict=True) as assistant:
        fixed = assistant.ask(KVFLOW_Q)
        assert len(server.requests) == 2 and fixed.text.startswith(TRUE)
        assert not any(w.startswith("strict: removed") for w in fixed.warnings)
        server.enqueue(f"{TRUE} [1].")
        assistant.ask(KVFLOW_Q)
    assert len(server.requests) == 3  # a supported answer is not regenerated


def _half_true(body: dict) -> Reply:
    """The first sentence of source 1, cited, then a fabricated sentence, cited too."""
    user = body["messages"][-1]["content"]
    match = re.search(r'<source n="1"[^>]*>\n(.*?)\n</source>', user, re.S)
    first = split_sentences(match.group(1))[0].rstrip(".") if match else "Nothing"
    return Reply(text=f"{first} [1]. {FABRICATED} [1].")


def test_eval_reports_faithfulness_with_and_without_verification(shipped_store, embedder, tmp_path):
    items = [i for i in load_eval_set(default_eval_set()) if i.type == "factual"][:4]
    judge = OfflineJudge(embedder)
    totals = {}
    for mode in ("off", "on"):
        server = FakeOpenAI().start()
        server.responder = _half_true
        try:
            with _llm(shipped_store, server, embedder, verify=mode) as assistant:
                rows = run_eval(assistant, items, judge, tmp_path / mode, workers=2)
        finally:
            server.stop()
        totals[mode] = aggregate(rows)
    off, on = totals["off"], totals["on"]
    assert off["marked_unsupported"] is None and off["faithfulness_unmarked"] is None
    assert on["marked_unsupported"] == pytest.approx(0.5)  # the fabricated half, marked
    assert on["faithfulness"] <= 0.6 < 0.9 <= on["faithfulness_unmarked"]
    assert on["strict_removed"] == 0.0


def test_strict_output_is_printed_once_and_flags_that_need_verification(
    shipped_store, server, monkeypatch
):
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    server.enqueue(f"{TRUE} [1]. {FABRICATED} [1].", f"{TRUE} [1]. {FABRICATED} [1].")
    args = ["ask", KVFLOW_Q, "--store", str(shipped_store), "--model", "gpt-4o-mini"]
    result = CliRunner().invoke(main, [*args, "--strict"])
    assert result.exit_code == 0 and result.stdout.count(TRUE) == 1
    answer_text = result.stdout.split("\n\n")[0]  # the warnings below name what was removed
    assert "checked answer:" not in result.stdout and "Antarctica" not in answer_text
    refused = CliRunner().invoke(main, [*args, "--strict", "--no-verify"])
    assert refused.exit_code == 1
    assert "--strict needs verification; leave out --no-verify" in refused.stderr


def test_attributed_sentences_are_marked_in_the_default_output(shipped_store, server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    server.enqueue(f"{TRUE}.")
    result = CliRunner().invoke(
        main, ["ask", KVFLOW_Q, "--store", str(shipped_store), "--model", "gpt-4o-mini"]
    )
    assert "(source chosen by the checker)" in result.stdout
