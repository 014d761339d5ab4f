"""The chat REPL, driven like a user would: scripted lines through the real loop and CLI."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from pathlib import Path

from click.testing import CliRunner
from rich.console import Console

from assistant import Assistant, load_settings
from assistant.chat import ChatSession, run_chat
from assistant.cli import main
from assistant.context import Context
from assistant.llm.base import Piece, Provider
from tests.openai_server import Reply

FIRST = "which papers make diffusion sampling faster without retraining?"


def reader(lines: list[str | BaseException]) -> Callable[[str], str]:
    items: Iterator[str | BaseException] = iter(lines)

    def read(prompt: str) -> str:
        item = next(items, None)
        if item is None:
            raise EOFError
        if isinstance(item, BaseException):
            raise item
        return item

    return read


def session_for(assistant: Assistant) -> tuple[ChatSession, io.StringIO]:
    out = io.StringIO()
    return ChatSession(assistant, Console(file=out, width=200, highlight=False)), out


def test_multi_turn_follow_up_resolves_to_the_cited_paper(shipped, tmp_path: Path):
    session, out = session_for(shipped)
    transcript = tmp_path / "chat.md"
    run_chat(
        session,
        reader(
            [
                FIRST,
                "how does the second one work?",
                "/show 1",
                "/sources",
                f"/save {transcript}",
                "/quit",
                "never read",
            ]
        ),
    )
    first, second = session.conversation.turns
    assert len(first.answer.citations) >= 2
    target = first.answer.citations[1]
    # The follow-up was searched as a standalone query about that paper, and answered from it.
    assert second.search_query.startswith(target.label)
    assert {c.paper_id for c in second.answer.citations} == {target.paper_id}
    assert not second.answer.refused
    text = out.getvalue()
    assert f"(searching: {target.label}" in text
    assert "Sources: [1]" in text
    assert target.text[:80] in text  # /show 1 printed the full abstract
    saved = transcript.read_text()
    assert saved.startswith("# Chat transcript") and "## References" in saved
    assert "## 2. how does the second one work?" in saved and target.label in saved
    assert text.rstrip().endswith("bye") and "never read" not in text


def test_header_and_commands(shipped):
    session, out = session_for(shipped)
    run_chat(
        session,
        reader(
            [
                "/help",
                "/k 3",
                "/k 99",
                "/filter year=2025",
                "/filter colour=red",
                "/filter",
                "/filter clear",
                "/frobnicate",
                "/show 4",
                "/reset",
                "/provider bogus",
                "/provider extractive",
                "/model",
            ]
        ),
    )
    text = out.getvalue()
    assert text.startswith("Abstracts in") or text.startswith("NeurIPS 2025 Papers")
    assert "95 papers · extractive (no LLM configured; set OPENAI_API_KEY" in text
    assert "/save FILE" in text and session.k == 3
    assert "usage: /k N, with N from 1 to 50" in text
    assert "unknown filter 'colour'" in text and "filters cleared" in text
    assert "unknown command /frobnicate; type /help" in text
    assert "usage: /show N" in text and "conversation forgotten" in text
    assert "usage: /provider" in text and "now answering with extractive" in text
    assert "Traceback" not in text


def test_bad_input_never_ends_the_session(shipped):
    session, out = session_for(shipped)
    bad_bytes = UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")
    run_chat(
        session,
        reader(
            [
                "",
                "   ",
                "x" * 20_001,
                bad_bytes,
                KeyboardInterrupt(),
                "What does KVFlow replace LRU eviction with?",
            ]
        ),
    )
    text = out.getvalue()
    assert "error: the question is 20,001 characters" in text
    assert "not valid UTF-8" in text
    assert "KVFlow" in text and "Sources: [1] KVFlow" in text
    assert len(session.conversation.turns) == 1


class _Interrupted(Provider):
    """Streams a little, then the user presses Ctrl-C."""

    name, model = "extractive", "extractive"

    def stream(self, context: Context) -> Iterator[Piece]:
        yield "Half an answer"
        raise KeyboardInterrupt


def test_ctrl_c_cancels_the_answer_not_the_session(shipped_store, embedder):
    settings = load_settings(store={"path": shipped_store})
    with Assistant(settings, embedder=embedder, provider=_Interrupted()) as assistant:
        session, out = session_for(assistant)
        run_chat(session, reader(["What does KVFlow replace LRU eviction with?", "/quit"]))
    text = out.getvalue()
    assert "Half an answer" in text and "(cancelled)" in text and "bye" in text
    assert session.conversation.turns == []


def test_chat_cli_with_piped_stdin(shipped_store):
    script = f"{FIRST}\n".encode() + b"caf\xe9 au lait?\n" + b"/sources\n/quit\n"
    result = CliRunner().invoke(main, ["chat", "--store", str(shipped_store)], input=script)
    assert result.exit_code == 0, result.output
    assert "95 papers" in result.stdout and "THG" in result.stdout
    assert "not valid UTF-8" in result.stdout and "bye" in result.stdout


def test_llm_follow_up_uses_the_condense_prompt(shipped_store, embedder, server):
    settings = load_settings(
        store={"path": shipped_store},
        llm={"provider": "openai", "model": "gpt-4o-mini", "max_retries": 0},
        openai_base_url=server.base_url,
    )
    with Assistant(settings, embedder=embedder) as assistant:
        hits = assistant.search(FIRST)
        labels = [h.label for h in hits]
        lemica = labels.index("LeMiCa") + 1 if "LeMiCa" in labels else 2
        server.enqueue(
            f"THG accelerates sampling without training [1]. A caching method speeds up video "
            f"diffusion [{lemica}].",
            "How does the second paper's caching accelerate diffusion video generation?",
            "It caches computation across timesteps, with global error control [1].",
            Reply(status=500),  # a provider failure in the middle of a session
        )
        session, out = session_for(assistant)
        run_chat(session, reader([FIRST, "how does the second one work?", "and why?"]))
    text = out.getvalue()
    assert "openai/gpt-4o-mini at http://127.0.0.1" in text
    condense = server.requests[1]["messages"][0]["content"]
    assert FIRST in condense and "how does the second one work?" in condense
    cited = session.conversation.turns[0].answer.citations
    second = cited[1]
    followup = server.requests[2]["messages"][1]["content"]
    # The answer prompt got the rewritten question and only the referenced paper.
    assert followup.count("<source n=") == 1 and f'label="{second.label}"' in followup
    assert "caching accelerate diffusion video generation" in followup
    assert "error: the model server at" in text and "HTTP 500" in text
    assert len(session.conversation.turns) == 2 and text.rstrip().endswith("bye")


def test_compare_them_covers_every_paper_the_last_answer_cited(shipped):
    session, _ = session_for(shipped)
    session.handle("Which papers speed up diffusion model sampling?")
    cited = [c.paper_id for c in session.conversation.turns[-1].answer.citations]
    assert len(cited) >= 3
    session.handle("compare them")
    compared = session.conversation.turns[-1].answer
    assert not compared.refused
    assert sorted(c.paper_id for c in compared.citations) == sorted(cited)


def test_saved_transcript_reads_as_the_terminal_showed_it(shipped, tmp_path: Path):
    """Before: /save wrote `\\textbf{\\textit{Prior Guidance}}` and `13\\%` into the Markdown."""
    session, _ = session_for(shipped)
    transcript = tmp_path / "pg.md"
    run_chat(
        session,
        reader(["What does Prior Guidance replace in diffusion sampling?", f"/save {transcript}"]),
    )
    (turn,) = session.conversation.turns
    assert any("\\textbf" in c.text for c in turn.answer.citations)  # the abstract has LaTeX
    saved = transcript.read_text()
    assert "Prior Guidance (PG)" in saved and "\\textbf" not in saved and "\\textit" not in saved


def test_a_question_naming_a_paper_is_not_taken_as_a_follow_up(shipped):
    """Before: "What is KVFlow?" after a video-generation question searched "What is KVFlow?
    Which papers study video generation?" and cited AAPT only; after a refusal, the refused
    question's words were carried into the next one."""
    session, out = session_for(shipped)
    run_chat(
        session,
        reader(
            [
                "Which papers study video generation?",
                "What is KVFlow?",
                "What is the capital of France?",
                "What does LeMiCa do?",
            ]
        ),
    )
    _, kvflow, refused, lemica = session.conversation.turns
    assert kvflow.search_query == "What is KVFlow?"
    assert [c.label for c in kvflow.answer.citations] == ["KVFlow"]
    assert refused.answer.refused and lemica.search_query == "What does LeMiCa do?"
    assert [c.label for c in lemica.answer.citations] == ["LeMiCa"]
