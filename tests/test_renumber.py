"""Citations are numbered 1..n in the order the answer first cites them: in the streamed text,
the checked Answer, the sources line and JSON alike."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from assistant import Answer, Assistant, load_settings
from assistant.answer.renumber import Renumberer
from assistant.cli.main import main
from tests.openai_server import FakeOpenAI, Reply

KVFLOW_Q = "What does KVFlow replace LRU eviction with?"


@pytest.fixture()
def llm(shipped_store: Path, server: FakeOpenAI, embedder):
    settings = load_settings(
        store={"path": shipped_store},
        llm={"provider": "openai", "model": "gpt-4o-mini", "max_retries": 0},
        openai_base_url=server.base_url,
    )
    with Assistant(settings, embedder=embedder) as assistant:
        yield assistant


def _feed(renumberer: Renumberer, pieces: list[str]) -> str:
    return "".join(renumberer.feed(p) for p in pieces) + renumberer.flush()


def test_markers_split_across_pieces_and_groups():
    r = Renumberer(sources=5)
    text = _feed(r, ["First [", "3]. Then [1", ", 3] and [2", "-4]; x[9] y[", "not a marker]."])
    assert text == "First [1]. Then [2][1] and [3][1][4]; x[9] y[not a marker]."
    assert r.numbering == {3: 1, 1: 2, 2: 3, 4: 4}


def test_held_text_is_released_at_the_end():
    r = Renumberer(sources=3)
    assert r.feed("cut short [") == "cut short "
    assert r.flush() == "["


# Claims in the words of the sources sent, so the check keeps every sentence.
REPLY = (
    "KVFlow uses a workflow-aware eviction policy based on steps-to-execution [{a}]. "
    "Another retrieved paper is cited second [{b}]. Both are cited together here [{a}, {b}]. "
    "And a range of sources appears last [{c}-{a}]."
)


def test_llm_answer_is_renumbered_in_order_of_appearance(llm: Assistant, server: FakeOpenAI):
    labels = [h.label for h in llm.search(KVFLOW_Q)]
    text = REPLY.format(a=3, b=1, c=2)
    server.enqueue(Reply(text=text, chunks=len(text)))  # one character per chunk
    pieces = list(llm.stream(KVFLOW_Q))
    answer = pieces[-1]
    assert isinstance(answer, Answer)
    streamed = "".join(p for p in pieces if isinstance(p, str))
    expected = REPLY.format(a=1, b=2, c=3).replace("[1, 2]", "[1][2]").replace("[3-1]", "[3][1]")
    assert streamed == expected  # the stream already carries the final numbers
    assert answer.text == expected and not answer.refused
    assert [(c.n, c.label) for c in answer.citations] == [
        (1, labels[2]),
        (2, labels[0]),
        (3, labels[1]),
    ]


def test_cli_text_and_json_use_the_same_numbers(shipped_store: Path, server: FakeOpenAI):
    text = REPLY.format(a=4, b=2, c=3).replace("[3-4]", "[4]")
    server.default = Reply(text=text)
    args = ["ask", KVFLOW_Q, "--store", str(shipped_store), "--base-url", server.base_url]
    payload = json.loads(CliRunner().invoke(main, [*args, "--json"]).stdout)
    assert [c["n"] for c in payload["citations"]] == [1, 2]
    assert re.findall(r"\[(\d)\]", payload["answer"]) == ["1", "2", "1", "2", "1"]
    labels = [h["label"] for h in payload["retrieved"]]
    assert [c["label"] for c in payload["citations"]] == [labels[3], labels[1]]
    out = CliRunner().invoke(main, args).stdout
    assert f"[1] {labels[3]} · " in out and f"[2] {labels[1]} · " in out
    assert "[4]" not in out and "[3]" not in out


def test_extractive_citations_have_no_gaps(shipped: Assistant):
    # It quotes papers ranked 1, 2 and 4 of 10: shown as [1] to [3], in that order.
    answer = shipped.ask("Which papers are about image segmentation?")
    numbers = [c.n for c in answer.citations]
    assert len(numbers) >= 2 and numbers == list(range(1, len(numbers) + 1))
    rank = {h.paper_id: i for i, h in enumerate(answer.retrieved, start=1)}
    assert max(rank[c.paper_id] for c in answer.citations) > len(numbers)  # ranks had a gap
    first_seen = list(dict.fromkeys(int(n) for n in re.findall(r"\[(\d+)\]", answer.text)))
    assert first_seen == numbers
