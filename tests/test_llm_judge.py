"""The LLM judge reaches its chat model through the same provider layer as answers (#13.7): the
same deadline, retries, one-line errors and usage accounting, on the loopback server. Before, it
built its own ChatOpenAI whose errors were a bare "the LLM judge failed: <exception>", whose
timeout bounded each read (not the call), and whose tokens were never counted."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from assistant import load_settings
from assistant.cli.main import main
from assistant.errors import ConfigError, ProviderError
from assistant.judge.judges import LLMJudge
from tests.openai_server import FakeOpenAI, Reply

EVIDENCE = ["KVFlow achieves up to 2.19x speedup for scenarios with many concurrent workflows."]


def _judge_model(body: dict[str, Any]) -> Reply:
    """Splits sentences on ' and ', and supports a claim when its number is in the evidence."""
    user = body["messages"][-1]["content"]
    sentence = re.search(r"<sentence>\n(.*?)\n</sentence>", user, re.S)
    if sentence:
        return Reply(text=json.dumps(sentence.group(1).split(" and ")), usage=(50, 10))
    claim = re.search(r"<claim>\n(.*?)\n</claim>", user, re.S)
    evidence = user.split("<evidence>", 1)[1]
    numbers = re.findall(r"\d+(?:\.\d+)?", claim.group(1) if claim else "")
    verdict = "SUPPORTED" if numbers and all(n in evidence for n in numbers) else "NOT_SUPPORTED"
    return Reply(text=verdict, usage=(80, 2))


def _judge(server: FakeOpenAI, **llm: Any) -> LLMJudge:
    settings = load_settings(llm={"model": "gpt-4o-mini", **llm}, openai_base_url=server.base_url)
    return LLMJudge(settings)


def test_verdicts_claims_and_usage_come_through_the_provider(server: FakeOpenAI):
    server.responder = _judge_model
    judge = _judge(server, temperature=0.7)
    assert judge.support("KVFlow is 2.19x faster [1].", EVIDENCE) == 1.0
    assert judge.support("KVFlow is 9.5x faster [1].", EVIDENCE) == 0.0
    assert judge.claims("KVFlow is fast and it caches prefixes [1].") == [
        "KVFlow is fast",
        "it caches prefixes.",
    ]
    assert judge.usage.prompt_tokens == 80 + 80 + 50 and judge.usage.completion_tokens == 14
    assert not judge.usage.estimated
    assert {r["temperature"] for r in server.requests} == {0.0}  # verdicts are not sampled


def test_errors_are_the_providers_one_line_errors(server: FakeOpenAI):
    server.default = Reply(status=401)
    with pytest.raises(ProviderError, match=r"rejected the key \(401\); check OPENAI_API_KEY"):
        _judge(server).support("KVFlow is 2.19x faster.", EVIDENCE)


def test_a_slow_judge_ends_at_the_answer_deadline_retries_included(server: FakeOpenAI):
    server.default = Reply(text="SUPPORTED", delay=3.0)
    judge = _judge(server, timeout=1.0, max_retries=2)
    started = time.monotonic()
    with pytest.raises(ProviderError, match=r"did not answer within 1 s .*retries included"):
        judge.support("KVFlow is 2.19x faster.", EVIDENCE)
    assert time.monotonic() - started < 2.5


def test_missing_key_names_the_judge_flag():
    with pytest.raises(ConfigError, match="--judge llm needs OPENAI_API_KEY.*--judge offline"):
        LLMJudge(load_settings(llm={"model": "gpt-4o-mini"}))


def test_eval_with_the_llm_judge_reports_its_tokens(
    shipped_store: Path, tmp_path: Path, server: FakeOpenAI, monkeypatch
):
    server.responder = _judge_model
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    out = tmp_path / "run"
    result = CliRunner().invoke(
        main,
        [
            "eval", "--judge", "llm", "--provider", "extractive", "--limit", "2",
            "--out", str(out), "--store", str(shipped_store),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    run = json.loads((out / "results.json").read_text())["run"]
    judged = run["judge_usage"]
    assert judged["prompt_tokens"] > 0 and judged["estimated"] is False
    assert judged["prompt_tokens"] % 10 == 0  # only the scripted 80 / 50 per call
