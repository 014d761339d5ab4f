"""Hostile and broken model servers are bounded: one deadline per answer, retries included; a
stream cut short is an error; marker-only replies are no cited answer; replies are capped and
never write control characters to the terminal. All on the loopback server, each in seconds."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from importlib.util import find_spec
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from assistant import CANNOT_ANSWER, Assistant, load_settings
from assistant.cli.main import main
from assistant.errors import NoAnswerError, ProviderError
from assistant.eval.report import write_results
from assistant.text.normalise import printable
from tests.conftest import write_seed
from tests.openai_server import FakeOpenAI, Reply

KVFLOW_Q = "What does KVFlow replace LRU eviction with?"
KVFLOW_CLAIM = "KVFlow replaces LRU with a workflow-aware eviction policy [1]. "


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, corpus_papers, embedder) -> Path:
    """KVFlow and two other shipped abstracts: enough for an answer, quick to index."""
    folder = tmp_path_factory.mktemp("hostile")
    kvflow = next(p for p in corpus_papers if p.label == "KVFlow")
    others = [p for p in corpus_papers if p.label in {"THG", "STARFlow"}]
    write_seed(folder / "papers.txt", [kvflow.abstract] + [p.abstract for p in others])
    path = folder / "store"
    with Assistant(load_settings(store={"path": path}), embedder=embedder) as assistant:
        assert assistant.ingest([folder / "papers.txt"]).added == 3
    return path


def _assistant(store: Path, server: FakeOpenAI, embedder, **llm) -> Assistant:
    settings = load_settings(
        store={"path": store},
        llm={"provider": "openai", "model": "gpt-4o-mini", "timeout": 3, "max_retries": 1, **llm},
        openai_base_url=server.base_url,
    )
    return Assistant(settings, embedder=embedder)


def _ask(store: Path, server: FakeOpenAI, *args: str) -> Result:
    return CliRunner().invoke(
        main, ["ask", KVFLOW_Q, "--store", str(store), "--base-url", server.base_url, *args]
    )


# -- one deadline per answer --------------------------------------------------------------------


@pytest.mark.parametrize("interval", [0.2, 1.5])
def test_trickling_server_ends_at_the_deadline(store, server, monkeypatch, interval):
    # Keep-alive comments reset any per-read timeout; only a deadline for the whole answer
    # ends this. At 1.5 s apart, the read blocked at the deadline must be interrupted.
    server.default = Reply(text=KVFLOW_CLAIM, keepalive=interval, stall=30)
    monkeypatch.setenv("ASSISTANT_LLM__TIMEOUT", "2")
    monkeypatch.setenv("ASSISTANT_LLM__MAX_RETRIES", "2")
    result = _ask(store, server)
    waited = time.monotonic() - server.received[0]
    assert result.exit_code == 1, result.output
    # Both bounds leave room for a loaded machine (the tests run beside others): the deadline
    # starts when the client sends, which the server may see 0.2 s later (1.80 s was measured
    # once). What they catch is far off: half the deadline, the 30 s stall, a timeout per retry.
    assert 1.5 < waited < 4, waited
    assert len(server.requests) == 1  # no retry once the deadline has passed
    error = result.stderr.strip()
    assert len(error.splitlines()) == 1 and "Traceback" not in result.output
    assert error.startswith(f"error: the model server at {server.base_url} did not answer")
    assert "within 2 s" in error and "ASSISTANT_LLM__TIMEOUT" in error
    assert "the wait for the answer to start" in error
    assert "retries included; 0 of 2 retries made" in error


def test_a_slow_model_that_keeps_writing_is_not_cut_off(store, server, monkeypatch):
    # A CPU-bound local model: each piece comes 0.6 s after the last, 3 s in all, well past
    # the 2 s timeout; the timeout bounds each wait, so the whole answer arrives.
    server.default = Reply(text=KVFLOW_CLAIM, chunks=5, pace=0.6)
    monkeypatch.setenv("ASSISTANT_LLM__TIMEOUT", "2")
    result = _ask(store, server)
    waited = time.monotonic() - server.received[0]
    assert result.exit_code == 0, result.output
    assert waited > 2.5 and "KVFlow" in result.stdout and "did not answer" not in result.output


def test_a_model_that_stalls_mid_answer_is_cut_off(store, server, monkeypatch):
    # It writes two pieces, then sends only keep-alives: they are not progress, so the wait for
    # the next piece ends at the timeout, with the error saying the answer stopped.
    server.default = Reply(text=KVFLOW_CLAIM, chunks=4, keepalive=0.2, stall=30, stall_after=2)
    monkeypatch.setenv("ASSISTANT_LLM__TIMEOUT", "2")
    result = _ask(store, server)
    waited = time.monotonic() - server.received[0]
    assert result.exit_code == 1, result.output
    assert 1.5 < waited < 4, waited  # as above
    error = result.stderr.strip().splitlines()[-1]
    assert "stopped answering: nothing more for 2 s" in error and "ASSISTANT_LLM__TIMEOUT" in error


def test_the_deadline_covers_retries(store, server, embedder):
    server.enqueue(Reply(status=503), Reply(status=503))
    server.default = Reply(text=KVFLOW_CLAIM, keepalive=0.2, stall=30)
    started = time.monotonic()
    with _assistant(store, server, embedder, timeout=2, max_retries=3) as slow:
        with pytest.raises(ProviderError, match="2 of 3 retries made"):
            slow.ask(KVFLOW_Q)
    assert time.monotonic() - started < 3.5  # a timeout per retry: 2 s more at least
    assert len(server.requests) == 3


def test_retry_after_is_honoured_only_within_the_deadline(store, server, embedder):
    server.enqueue(Reply(status=429, text="slow down"))  # retry-after-ms: 10
    server.default = Reply(text=KVFLOW_CLAIM)
    with _assistant(store, server, embedder, timeout=2, max_retries=1) as assistant:
        assert not assistant.ask(KVFLOW_Q).refused
        assert len(server.requests) == 2
        server.enqueue(Reply(status=429, headers={"retry-after-ms": "60000"}))
        started = time.monotonic()
        with pytest.raises(ProviderError, match=r"rate limiting \(429\) after 0 retries"):
            assistant.ask(KVFLOW_Q)
    assert time.monotonic() - started < 5 and len(server.requests) == 3  # not the 60 s asked


# -- streams cut short, marker-only and oversized replies -----------------------------------------


def test_stream_closed_mid_answer_is_an_error_not_a_refusal(store, server, embedder):
    server.default = Reply(text=KVFLOW_CLAIM + "It also prefetches", chunks=6, cut_after=3)
    with _assistant(store, server, embedder) as assistant:
        with pytest.raises(ProviderError, match="ended the stream before the answer was finished"):
            assistant.ask(KVFLOW_Q)
    result = _ask(store, server)
    assert result.exit_code == 1
    assert result.stderr.startswith("error: the model server at")
    assert "no finish_reason" in result.stderr and CANNOT_ANSWER not in result.output
    assert "\nerror: the model server" in result.output  # the error starts its own line


def test_a_stream_that_closes_before_any_text_is_retried(store, server, embedder):
    server.enqueue(Reply(text=KVFLOW_CLAIM, cut_after=0))
    server.default = Reply(text=KVFLOW_CLAIM)
    with _assistant(store, server, embedder) as assistant:
        answer = assistant.ask(KVFLOW_Q)
    assert not answer.refused and len(server.requests) == 2


def test_markers_alone_are_no_answer_not_a_refusal(store, server, embedder):
    # A small model may list "1. [1] 2. [2] …": nothing is claimed, and saying "the abstracts do
    # not answer this" would blame the abstracts for the model's failure.
    server.enqueue("[1][2][3][4][5]", "KVFlow.\n[1][2][3]", "1. [1]\n2. [2]\n3. [3]")
    with _assistant(store, server, embedder) as assistant:
        for _ in range(3):
            with pytest.raises(NoAnswerError, match="citation markers and no answer"):
                assistant.ask(KVFLOW_Q)
    server.enqueue("1. [1]\n2. [2]")
    result = _ask(store, server)
    assert result.exit_code == 1 and CANNOT_ANSWER not in result.output
    error = result.stderr.strip()
    assert len(error.splitlines()) == 1 and "try another model with --model" in error


def test_a_huge_reply_is_truncated_with_a_warning(store, server):
    huge = KVFLOW_CLAIM * (1_000_000 // len(KVFLOW_CLAIM))
    server.default = Reply(text=huge, chunks=2000)
    result = _ask(store, server)
    assert result.exit_code == 0, result.output
    assert len(result.stdout) < 2 * 700 * 8  # default max_tokens 700: ~5,600 characters
    assert "warning: the answer was truncated at 5600 characters" in result.stdout
    assert "Sources: [1] KVFlow" in result.stdout


def test_max_tokens_reaches_the_request_body(store, server, embedder):
    server.default = Reply(text=KVFLOW_CLAIM)
    with _assistant(store, server, embedder, max_tokens=123) as assistant:
        assistant.ask(KVFLOW_Q)
    body = server.requests[-1]
    assert body["max_completion_tokens"] == 123 and body["stream"] is True


def test_finish_reason_length_warns(store, server, embedder):
    server.default = Reply(text=KVFLOW_CLAIM + "It also", finish="length")
    with _assistant(store, server, embedder, max_tokens=16) as assistant:
        answer = assistant.ask(KVFLOW_Q)
    assert "the answer was truncated: it reached ASSISTANT_LLM__MAX_TOKENS=16" in answer.warnings
    assert [c.label for c in answer.citations] == ["KVFlow"]  # the cut text keeps its claim


# -- terminal safety ---------------------------------------------------------------------------


def test_escape_sequences_from_the_model_never_reach_the_terminal(store, server):
    server.default = Reply(
        text="KVFlow \x1b[2J\x1b]0;pwned\x07replaces LRU\r with a workflow-aware\x9b31m "
        "policy [1].",
        chunks=7,
    )
    for args in ([], ["--json"]):
        result = _ask(store, server, *args)
        assert result.exit_code == 0, result.output
        out = result.stdout
        assert "\x1b" not in out and "\x9b" not in out and "\r" not in out and "pwned" not in out
    assert "replaces LRU with a workflow-aware policy [1]" in json.loads(out)["answer"]


def test_printable_keeps_text_and_drops_controls():
    assert printable("a\tb\nc é 中 [1]") == "a\tb\nc é 中 [1]"
    assert printable("x\x1b[31mred\x1b[0m\x07\x00\x7f\x85y") == "xredy"
    assert printable("line\r\nnext\roverwrite") == "line\nnextoverwrite"


def test_report_md_escapes_corpus_text(tmp_path):
    label = "<script>alert(1)</script> | [click](http://x)"
    row = {
        "id": "q1",
        "type": "factual",
        "question": "<script>q</script>",
        "answer": "<script>a</script>",
        "refused": False,
        "cited": [label],
        "metrics": {},
        "latency_ms": 10.0,
        "prompt_tokens": 1,
        "completion_tokens": 1,
    }
    write_results(tmp_path, {"provider": "openai", "model": "m"}, {"questions": 1}, [row])
    for name in ("report.md", "report.html"):
        assert "<script>" not in (tmp_path / name).read_text()
    md = (tmp_path / "report.md").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt; \\| \\[click\\](http://x)" in md


# -- --model provider:name through init_chat_model ---------------------------------------------


def test_provider_prefix_reaches_the_server(store, server):
    server.default = Reply(text=KVFLOW_CLAIM)
    result = _ask(store, server, "--json", "--model", "openai:llama3.1")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["provider"] == "openai" and payload["model"] == "llama3.1"
    assert server.requests[-1]["model"] == "llama3.1"
    # An Ollama tag is a model name, not a provider prefix.
    assert _ask(store, server, "--json", "--model", "llama3.1:8b").exit_code == 0
    assert server.requests[-1]["model"] == "llama3.1:8b"


@pytest.mark.parametrize(
    ("model", "package"),
    [("ollama:qwen2.5", "langchain-ollama"), ("anthropic:claude-3-5-haiku", "langchain-anthropic")],
)
def test_uninstalled_integration_is_one_line(store, model, package):
    if find_spec(package.replace("-", "_")) is not None:
        pytest.skip(f"{package} is installed")
    # No key, no server: a provider prefix alone is enough for auto to choose an LLM.
    result = CliRunner().invoke(main, ["ask", KVFLOW_Q, "--store", str(store), "--model", model])
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        f"error: --model {model} needs LangChain's {model.split(':')[0]} integration, "
        f"which is not installed: pip install {package}"
    ]


def test_importing_the_cli_does_not_import_langchain_or_openai():
    code = (
        "import sys, assistant.cli.main; "
        "print(sorted(m for m in ('langchain', 'langchain_openai', 'openai') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"
