"""Ten model families' reply shapes, served by the loopback server, through `ask`, `chat` and
`eval`: what the user must see is the answer, cited [n], with its sources, and never the
model's reasoning, a fence or a citation glyph; refusals in a family's own words are refusals.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from assistant import Assistant, load_settings
from assistant.cli.chat import ChatSession
from assistant.cli.main import main
from assistant.eval.dataset import load_eval_set
from assistant.eval.harness import aggregate, run_eval
from assistant.judge.judges import OfflineJudge
from tests.model_families import (
    FACT,
    FAMILIES,
    KVFLOW_Q,
    THOUGHT,
    UNANSWERABLE_Q,
    Family,
    responder,
)
from tests.openai_server import FakeOpenAI

LEAKS = ("<think", "</think", "THOUGHT", "STARFlow", "【", "[Source", "(Source", "[^", "```")
IDS = [f.name.split(" ")[0] for f in FAMILIES]


def _cli(store: Path, server: FakeOpenAI, model: str, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        main,
        [*args, "--store", str(store), "--base-url", server.base_url, "--model", model],
    )
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(params=FAMILIES, ids=IDS)
def family(request: pytest.FixtureRequest, server: FakeOpenAI) -> Family:
    server.responder = responder(request.param)
    return request.param


def test_ask_shows_the_answer_cited_and_nothing_else(family, server, shipped_store):
    code, out, _ = _cli(shipped_store, server, family.model, "ask", KVFLOW_Q)
    assert code == 0
    assert FACT in out and "Sources: [1] KVFlow" in out
    assert not [leak for leak in LEAKS if leak in out], out
    assert "warning: uncited" not in out


def test_ask_json_keeps_reasoning_apart(family, server, shipped_store):
    code, out, _ = _cli(shipped_store, server, family.model, "ask", KVFLOW_Q, "--json")
    payload = json.loads(out)
    assert code == 0 and not payload["refused"]
    labels = [c["label"] for c in payload["citations"]]
    assert labels[0] == "KVFlow" and "STARFlow" not in labels  # cited only in the reasoning
    assert not [leak for leak in LEAKS if leak in payload["answer"]]
    assert all("[1]" in s["sentence"] for s in payload["checks"])
    if family.reasons:
        assert THOUGHT in payload["reasoning"] and payload["usage"]["completion_tokens"] > 0
    else:
        assert payload["reasoning"] is None


def test_refusal_in_the_familys_own_words_is_a_refusal(family, server, shipped_store):
    code, out, _ = _cli(shipped_store, server, family.model, "ask", UNANSWERABLE_Q, "--json")
    payload = json.loads(out)
    assert code == 0 and payload["refused"] and payload["citations"] == []
    assert "THOUGHT" not in payload["answer"]


def test_chat_history_and_follow_up_carry_no_reasoning(family, server, shipped_store, embedder):
    settings = load_settings(
        store={"path": shipped_store},
        llm={"provider": "openai", "model": family.model, "timeout": 5},
        openai_base_url=server.base_url,
    )
    out = io.StringIO()
    with Assistant(settings, embedder=embedder) as assistant:
        session = ChatSession(assistant, Console(file=out, width=200))
        session.handle(KVFLOW_Q)
        session.handle("How much faster is it?")
        turns = session.conversation.turns
    shown = out.getvalue()
    assert FACT in shown and not [leak for leak in LEAKS if leak in shown], shown
    assert turns[0].answer.citations[0].label == "KVFlow"
    assert turns[1].search_query.startswith(("How much faster is KVFlow", "KVFlow"))
    assert "THOUGHT" not in turns[1].search_query and "<think" not in turns[1].search_query
    prompts = [r["messages"][-1]["content"] for r in server.requests]
    condense = next(p for p in prompts if p.startswith("Rewrite the user's"))
    assert "THOUGHT" not in condense and "THOUGHT" not in prompts[-1]


def test_eval_scores_the_answer_and_the_refusal(family, server, shipped_store, embedder, tmp_path):
    items = tmp_path / "set.jsonl"
    rows = [
        {"id": "kv", "type": "factual", "question": KVFLOW_Q, "gold_labels": ["KVFlow"]},
        {"id": "lr", "type": "unanswerable", "question": UNANSWERABLE_Q, "answerable": False},
    ]
    items.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    settings = load_settings(
        store={"path": shipped_store},
        llm={"provider": "openai", "model": family.model, "timeout": 5},
        openai_base_url=server.base_url,
    )
    with Assistant(settings, embedder=embedder) as assistant:
        eval_items = load_eval_set(items)
        done = run_eval(assistant, eval_items, OfflineJudge(embedder), tmp_path / "run")
    by_id = {row["id"]: row for row in done}
    assert by_id["kv"]["cited"][0] == "KVFlow" and not by_id["kv"]["refused"]
    assert by_id["lr"]["refused"]
    totals = aggregate(done)
    assert totals["no_answer"] == 0 and totals["refusal_recall"] == 1.0
