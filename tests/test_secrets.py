"""A key in the environment never shows: not in answers, JSON, info, errors (a 401 whose body
echoes the key back, as some servers do), logs, eval reports or chat transcripts. Against the
loopback server, with the hashing embedder so no model is loaded for the store."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from click.testing import CliRunner

from assistant.cli.main import main
from assistant.ingest.corpus import Paper
from tests.conftest import write_seed
from tests.openai_server import FakeOpenAI, Reply

KEY = "sk-test-4f9Q2x7LmZ0pR8vW3yT6uB1nK5hJ"


@pytest.fixture()
def env(monkeypatch: pytest.MonkeyPatch, server: FakeOpenAI) -> FakeOpenAI:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("ASSISTANT_EMBEDDING__PROVIDER", "hashing")
    monkeypatch.setenv("ASSISTANT_LLM__MIN_SIMILARITY", "-1")  # always ask the model
    monkeypatch.setenv("ASSISTANT_LLM__MAX_RETRIES", "0")
    return server


@pytest.fixture()
def store(tmp_path: Path, corpus_papers: list[Paper], env: FakeOpenAI) -> Path:
    seeds = write_seed(tmp_path / "papers.txt", [p.abstract for p in corpus_papers[:5]])
    path = tmp_path / "store"
    result = CliRunner().invoke(main, ["ingest", str(seeds), "--store", str(path)])
    assert result.exit_code == 0, result.stderr
    return path


def run(*args: str, stdin: str | None = None) -> str:
    result = CliRunner().invoke(main, list(args), input=stdin)
    return result.stdout + result.stderr + (repr(result.exception) if result.exception else "")


def no_key(text: str) -> None:
    assert KEY not in text
    assert KEY[8:20] not in text  # nor a good part of it


def test_the_key_never_shows(store: Path, env: FakeOpenAI, tmp_path: Path, caplog):
    caplog.set_level(logging.DEBUG)
    claim = "The first paper proposes a method and reports its results [1]."
    env.default = Reply(text=claim)
    s = ("--store", str(store))
    outputs = {
        "ask": run("ask", "What does the first paper propose?", *s),
        "ask --json": run("ask", "What does the first paper propose?", "--json", *s),
        "search": run("search", "--json", "method", *s),
        "info": run("info", *s) + run("info", "--json", *s),
    }
    assert "[1]" in outputs["ask"] and env.requests  # the model was really asked
    transcript = tmp_path / "chat.md"
    outputs["chat"] = run("chat", *s, stdin=f"what is proposed?\n/save {transcript}\n/quit\n")
    assert transcript.exists()
    runs = tmp_path / "runs"
    eval_set = tmp_path / "set.jsonl"
    eval_set.write_text(json.dumps({"id": "q1", "question": "What is proposed?"}) + "\n")
    outputs["eval"] = run("eval", "--set", str(eval_set), "--out", str(runs), *s)
    reports = {p.name: p.read_text() for p in runs.iterdir() if p.is_file()}
    assert {"answers.jsonl", "results.json", "report.md", "report.html"} <= set(reports)

    # The 401 path, with a body that echoes the key back.
    echo = json.dumps({"error": {"message": f"Incorrect API key provided: {KEY}.", "code": 401}})
    env.default = Reply(status=401, raw=echo.encode())
    outputs["401 ask"] = run("ask", "What does the first paper propose?", *s)
    outputs["401 json"] = run("ask", "What does the first paper propose?", "--json", *s)
    assert "rejected the key (401)" in outputs["401 ask"]

    for name, text in {**outputs, **reports, "transcript": transcript.read_text()}.items():
        assert KEY not in text, name
        no_key(text)
    no_key(caplog.text)
    sent = [r for r in env.requests if r.get("messages")]
    assert sent and all(KEY not in json.dumps(r) for r in sent)  # nor in what the model sees
