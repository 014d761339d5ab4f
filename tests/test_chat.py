"""The chat REPL, driven like a user would: scripted lines through the real loop and CLI."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from pathlib import Path

from click.testing import CliRunner
from rich.console import Console

from assistant import Assistant, load_settings
from assistant.answer.provider import Piece, Provider
from assistant.answer.sources import Context
from assistant.cli.chat import ChatSession, run_chat
from assistant.cli.main import main
from assistant.retrieval.hybrid import check_filters
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
                "/show 9",
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
    assert f"(a follow-up, searched in the last answer's {target.label} only;" in text
    assert "Sources: [1]" in text
    assert target.text[:80] in text  # /show 1 printed the full abstract
    assert "[9] is not cited by the last answer; it cites [1]" in text
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
                "/filter year>=2024",
                "/filter year<2026",
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
    assert "filters: year>=2024" in text and "filters: year=2024..2025" in text
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


def test_sources_after_a_refusal_say_it_cited_nothing(shipped):
    """After a refused question, /sources said "no sources yet: ask a question first"."""
    session, out = session_for(shipped)
    run_chat(session, reader(["/sources", "What is the capital of France?", "/sources", "/show 1"]))
    text = out.getvalue()
    assert text.count("no sources yet: ask a question first") == 1  # before any question
    assert "the last answer cites no abstract" in text
    assert "citation of the last answer (it cites none)" in text


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


def test_new_forgets_follow_ups_but_save_and_bib_keep_every_answer(shipped, tmp_path: Path):
    """Before: /new emptied what /save and /bib write ("no papers cited yet" after three
    answers); /help says it forgets what the next question searches. The transcript marks the
    fresh start, and its references say who wrote a paper, when, and where, not its file."""
    session, out = session_for(shipped)
    transcript, bib = tmp_path / "chat.md", tmp_path / "cited.bib"
    lines = ["What does KVFlow do?", "/new", "What does LeMiCa do?", f"/save {transcript}"]
    run_chat(session, reader([*lines, f"/bib {bib}"]))
    assert len(session.conversation.turns) == 1 and len(session.said) == 2
    saved = transcript.read_text()
    assert saved.index("## 1. What does KVFlow do?") < saved.index("_(/new: the questions")
    assert saved.index("_(/new: the questions") < saved.index("## 2. What does LeMiCa do?")
    assert "Sources: [1] KVFlow (004_cebd1b31328fe8e6.txt, abstract 2)" in saved  # not file#2
    (reference,) = [line for line in saved.splitlines() if line.startswith("- **KVFlow**")]
    assert "2025 · NeurIPS" in reference, reference
    assert "2 cited paper(s) written to" in out.getvalue()
    assert "KVFlow" in bib.read_text() and "LeMiCa" in bib.read_text()


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


HALLUCINATION = "Which papers try to reduce hallucinations in language models?"
MAMBA = "Which papers study state space models like Mamba, and what do they find?"
MAMBA_PAPER = "Quadratic complexity of the attention mechanism"  # its label: the abstract's subject


def test_a_question_with_its_own_subject_is_new_whatever_its_pronouns(shipped):
    """Before: MAMBA was taken for a follow-up because it says "they", searched as
    `REVERSE MCD Which papers study state space…` and answered with the hallucination papers.
    A follow-up that cannot be searched alone is pinned to the last answer's papers, and a line
    says so, with how to search afresh."""
    session, out = session_for(shipped)
    long_question = (
        "I am writing a survey of memory-efficient optimizers and keep reading that they trade "
        "accuracy for memory. " * 20
    ).strip() + " Which papers analyse the convergence of Adafactor, and what do they prove?"
    assert len(long_question) > 2_000
    follow_up = "How does it handle longer contexts?"
    run_chat(session, reader([HALLUCINATION, MAMBA, follow_up, long_question]))
    first, mamba, again, long_turn = session.conversation.turns
    assert {c.label for c in first.answer.citations} >= {"REVERSE", "MCD"}
    assert mamba.search_query == MAMBA and mamba.pinned == []
    assert [c.label for c in mamba.answer.citations] == [MAMBA_PAPER]
    # The follow-up cannot be searched alone ("it"): pinned to the paper just cited.
    assert [p.label for p in again.pinned] == [MAMBA_PAPER]
    assert {c.label for c in again.answer.citations} == {MAMBA_PAPER}
    assert long_turn.search_query == long_question and long_turn.pinned == []
    assert "Adafactor" in [h.label for h in long_turn.answer.retrieved[:3]]  # every paper searched
    run_chat(session, reader(["/new", "what else does it find?"]))
    (fresh,) = session.conversation.turns  # nothing to follow up on: searched as asked
    assert fresh.search_query == "what else does it find?" and fresh.pinned == []
    text = out.getvalue()
    pinned_lines = [line for line in text.splitlines() if line.startswith("(a follow-up")]
    assert pinned_lines == [
        f"(a follow-up, searched in the last answer's {MAMBA_PAPER} only; /new, or a question "
        "that names its subject, searches every paper)"
    ]
    assert "conversation forgotten" in text and "REVERSE MCD Which papers" not in text


def _model_session(assistant: Assistant, server, replies: list[str | Reply]):
    server.enqueue(*replies)
    return session_for(assistant)


def test_the_chat_model_decides_follow_up_or_new(shipped_store, embedder, server):
    """With a chat model the condense step decides: NEW is searched as asked (and not pinned,
    whatever the pronouns), FOLLOW-UP is searched as rewritten and pinned to the papers the
    rewrite names; a reply that says neither falls back to reading the question's shape."""
    settings = load_settings(
        store={"path": shipped_store},
        llm={"provider": "openai", "model": "gpt-4o-mini", "max_retries": 0},
        openai_base_url=server.base_url,
    )
    with Assistant(settings, embedder=embedder) as assistant:
        hits = {h.label: n for n, h in enumerate(assistant.search(HALLUCINATION), start=1)}
        session, out = _model_session(
            assistant,
            server,
            [
                f"MCD contrasts an evil and a truthful model [{hits['MCD']}]. REVERSE verifies "
                f"itself while generating [{hits['REVERSE']}].",
                f"**NEW:** {MAMBA}",  # condense: a new question, in markdown emphasis
                "Spectrum scaling lets Mamba extend to longer contexts [1].",
                "FOLLOW-UP: How does the spectrum scaling of the Mamba paper work?",
                "It rescales the spectrum of the transition matrix [1].",
                f"{MAMBA} What do REVERSE and MCD find?",  # says neither: the shape decides
                "Spectrum scaling lets Mamba extend to longer contexts [1].",
            ],
        )
        run_chat(session, reader([HALLUCINATION, MAMBA, "how does it work?", MAMBA]))
    first, new, follow_up, unlabelled = session.conversation.turns
    condense = server.requests[1]["messages"][0]["content"]
    assert "NEW:" in condense and "FOLLOW-UP:" in condense and MAMBA in condense
    assert new.search_query == MAMBA and new.pinned == []
    assert [c.label for c in new.answer.citations] == [MAMBA_PAPER]
    answer_prompt = server.requests[2]["messages"][1]["content"]
    assert 'label="REVERSE"' not in answer_prompt and 'label="MCD"' not in answer_prompt
    assert [p.label for p in follow_up.pinned] == [MAMBA_PAPER]
    assert follow_up.search_query.endswith("How does the spectrum scaling of the Mamba paper work?")
    assert server.requests[4]["messages"][1]["content"].count("<source n=") == 1
    assert unlabelled.search_query == MAMBA and unlabelled.pinned == []
    text = out.getvalue()
    assert text.count("(a follow-up, searched in the last answer's") == 1


def _explained(text: str, start: str) -> str:
    """The support block of an output, from its "Checked:" line, whitespace made single."""
    block = text[text.rindex("Checked:") :]
    return (
        " ".join(block.split("Sources:")[0].split()) if start == "ask" else " ".join(block.split())
    )


def test_explain_in_chat_agrees_with_ask_explain_offline(shipped_store, shipped):
    """Before: /explain after an extractive answer said "nothing checked yet", while
    `ask --explain` printed each sentence's score and closest cited sentence."""
    question = "What does KVFlow replace LRU eviction with?"
    result = CliRunner().invoke(
        main, ["ask", question, "--explain", "--store", str(shipped_store)], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    session, out = session_for(shipped)
    run_chat(session, reader(["/explain", question, "/explain"]))
    text = out.getvalue()
    assert (
        "nothing to explain: /explain follows an answer" in text
        and "nothing checked yet" not in text
    )
    (turn,) = session.conversation.turns
    assert turn.answer.checks and all(c.evidence for c in turn.answer.checks)
    chat_block = _explained(text.rsplit("bye", 1)[0], "chat")
    assert "closest:" in chat_block
    assert chat_block == _explained(result.stdout, "ask")


def test_explain_in_chat_agrees_with_ask_explain_with_a_chat_model(
    shipped_store, embedder, server, monkeypatch
):
    """With a chat model and verification off, `ask --explain` checks anyway; so does /explain."""
    monkeypatch.setenv("ASSISTANT_LLM__VERIFY", "off")
    question = "What does KVFlow replace LRU eviction with?"
    reply = "KVFlow replaces LRU with a workflow-aware eviction policy [1]."
    server.enqueue(reply, reply)
    args = ["--provider", "openai", "--model", "gpt-4o-mini", "--base-url", server.base_url]
    result = CliRunner().invoke(
        main,
        ["ask", question, "--explain", "--store", str(shipped_store), *args],
        env={"COLUMNS": "200", "ASSISTANT_LLM__VERIFY": "off"},
    )
    assert result.exit_code == 0, result.output
    settings = load_settings(
        store={"path": shipped_store},
        llm={"provider": "openai", "model": "gpt-4o-mini", "max_retries": 0},
        openai_base_url=server.base_url,
    )
    assert settings.llm.verify == "off"
    with Assistant(settings, embedder=embedder) as assistant:
        session, out = session_for(assistant)
        run_chat(session, reader([question, "/explain"]))
    (turn,) = session.conversation.turns
    assert not turn.answer.refused and turn.answer.checks
    text = out.getvalue().rsplit("bye", 1)[0]
    assert _explained(text, "chat") == _explained(result.stdout, "ask")


def test_a_filter_set_after_an_answer_keeps_only_the_pinned_papers_it_matches(
    tmp_path: Path, embedder
):
    """A user's trial: after an answer about one paper, `/filter year=2024` and "What do these
    papers find?" was asked of that paper and the filter at once: "No paper matches year=2024,
    paper_id=['p08']", an id the user never typed, while two papers matched 2024."""
    with Assistant(load_settings(store={"path": tmp_path / "s"}), embedder=embedder) as assistant:
        assistant.ingest([Path(__file__).parent / "data" / "library.csv"])
        session, out = session_for(assistant)
        lines = ["What did the coral study find?", "/filter year=2024", "What else do they find?"]
        lines += ["/filter year=2022", "What do they find?", "/quit"]
        run_chat(session, reader(lines))
        of_2022 = assistant.store.matching(check_filters({"year": 2022}))
    first, second, third = session.conversation.turns
    coral = first.answer.citations[0]
    assert coral.label.startswith("Coral reef bleaching")
    # a filter that keeps the earlier paper keeps the follow-up on it
    assert [p.paper_id for p in second.pinned] == [coral.paper_id]
    assert {c.paper_id for c in second.answer.citations} == {coral.paper_id}
    # one that does not: the question is asked of the papers the filter keeps, and said so
    text = out.getvalue()
    said = "(the earlier answer's papers do not match year=2022: searching the papers that do)"
    assert said in text and third.pinned == []
    assert "paper_id" not in text and "No paper matches" not in text
    assert not third.answer.refused
    assert {c.paper_id for c in third.answer.citations} == of_2022
