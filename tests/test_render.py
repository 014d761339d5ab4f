"""Readable terminal output: word wrapping on a terminal (also while streaming) and none when
piped, LaTeX shown as text, no meaningless scores, the no-LLM hint only where it helps, eval
figures for a reader, and a status line while waiting, on a terminal only."""

from __future__ import annotations

import io
import json
import random
import re
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from assistant import Answer, Assistant
from assistant.cli.chat import ChatSession, run_chat
from assistant.cli.main import main
from assistant.cli.render import answer_footer, stream_answer
from assistant.cli.terminal import Waiting, WordWrapper, make_console
from assistant.eval.formats import NOT_MEASURED
from assistant.eval.harness import aggregate
from assistant.eval.report import metric_value, summary_rows
from assistant.text.latex import LatexStream, latex_to_text
from tests.conftest import write_seed
from tests.openai_server import FakeOpenAI, Reply
from tests.test_chat import reader

KVFLOW_Q = "What does KVFlow replace LRU eviction with?"
LONG = (
    "- KVFlow: However, current systems typically evict KV caches using a Least Recently Used "
    "(LRU) policy, which fails to anticipate future agent usage and often discards KV caches "
    "shortly before their reuse [1]. We present KVFlow, a workflow-aware KV cache management "
    "framework tailored for agentic workloads [1].\n- THG: Our error-bound analysis shows that "
    "the additional guidance branch is more robust to approximation [2]."
)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _answer(text: str, refused: bool = False, **fields) -> Answer:
    return Answer(KVFLOW_Q, text, refused, [], [], "extractive", "extractive", **fields)


def _pieces(text: str, seed: int = 0) -> list[str]:
    """Text cut at random places, mid-word included, like a model's stream."""
    rng, out, i = random.Random(seed), [], 0
    while i < len(text):
        j = i + rng.randint(1, 9)
        out.append(text[i:j])
        i = j
    return out


# -- wrapping ------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_streamed_answer_wraps_between_words_on_a_terminal(seed: int):
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=40, color_system=None)
    answer, streamed = stream_answer(console, [*_pieces(LONG, seed), _answer(LONG)])
    lines = out.getvalue().splitlines()
    assert streamed and len(lines) > 8
    assert max(len(line) for line in lines) <= 40
    assert out.getvalue().split() == LONG.split()  # no word was cut, none lost


def test_word_wrapper_keeps_its_column_across_pieces():
    wrapper = WordWrapper(10)
    text = wrapper.feed("abc de") + wrapper.feed("f gh") + wrapper.feed("ijk lmno\n  p")
    assert text + wrapper.flush() == "abc def\nghijk lmno\n  p"
    assert WordWrapper(None).feed("as it is  ") == "as it is  "


def test_piped_console_inserts_no_line_breaks():
    out = io.StringIO()
    console = make_console(file=out)
    assert not console.is_terminal
    stream_answer(console, [*_pieces(LONG), _answer(LONG)])
    answer_footer(console, _answer(LONG, notice="x " * 100))
    assert out.getvalue().startswith(LONG + "x x x")  # the footer follows on one line


def test_piped_commands_keep_each_line_whole(shipped_store: Path, tmp_path: Path, corpus_papers):
    code, out, _ = run("ask", KVFLOW_Q, "--store", str(shipped_store))
    _, raw, _ = run("ask", KVFLOW_Q, "--json", "--store", str(shipped_store))
    answer = json.loads(raw)["answer"]
    assert code == 0 and len(answer) > 200
    assert out.startswith(answer + "\n\nSources: [1] KVFlow")
    assert any(len(line) > 120 for line in out.splitlines())  # the notice, on one line
    code, out, _ = run("search", "KV cache eviction", "-k", "2", "--store", str(shipped_store))
    passages = [line for line in out.splitlines() if len(line) > 100]
    assert code == 0 and len(passages) == 2 and "KVFlow" in passages[0]
    long_store = tmp_path / ("a-store-folder-with-a-rather-long-name-" * 3)
    one = write_seed(tmp_path / "one.txt", [corpus_papers[0].abstract])
    code, out, _ = run("ingest", str(one), "--store", str(long_store))
    summary = next(line for line in out.splitlines() if line.startswith("Ingested"))
    assert summary.endswith("0 removed (2 chunks written)") and str(long_store) in summary
    _, out, _ = run("info", "--store", str(long_store))
    assert any(str(long_store.resolve()) in line for line in out.splitlines())


# -- LaTeX -----------------------------------------------------------------------------------

# Real strings of the shipped corpus (data/neurips2025), and how they should read.
CORPUS_LATEX = [
    (r"AutoSEP in average improves 13\% over standard", "AutoSEP in average improves 13% over"),
    (r"we propose \textbf{\textit{Prior Guidance}} (PG), a", "we propose Prior Guidance (PG), a"),
    (
        r"scales as $\tilde{O}\left(\sqrt{\frac{d}{\kappa n_{S^\star}}}\right)$",
        "scales as Õ(√(d/κ n_S^⋆))",
    ),
    (r"and blink markers achieves $86.49$% accuracy, approach", "achieves 86.49% accuracy,"),
    (
        r"available at this \href{https://github.com/xuanliugit/FGBench}{link}.",
        "available at this link <https://github.com/xuanliugit/FGBench>.",
    ),
    (r"achieving $<3~BPM$ (beats", "achieving <3 BPM (beats"),
    (r"learns an $\varepsilon$-Nash equilibrium", "learns an ε-Nash equilibrium"),
    (r"strategy---or, \textit{policy}, in", "strategy—or, policy, in"),
    (r"regret of $O(\sqrt{T\log T})$ and", "regret of O(√(T log T)) and"),  # was "Tlog T"
    # A user's library: "100 ^∘C", "Li_6PS_5Cl", "km^2" before.
    (r"stable at 100~$^\circ$C for", "stable at 100°C for"),
    (r"a Li$_6$PS$_5$Cl electrolyte", "a Li₆PS₅Cl electrolyte"),
    (r"below 0.5 km$^2$ lost", "below 0.5 km² lost"),
    (r"a rate of $10^{-3}$ per", "a rate of 10⁻³ per"),
    (r"in $O(n^{1.5})$ time", "in O(n^1.5) time"),  # a decimal exponent stays as written
]


@pytest.mark.parametrize(("source", "shown"), CORPUS_LATEX)
def test_corpus_latex_reads_as_text(source: str, shown: str):
    assert shown in latex_to_text(source)


@pytest.mark.parametrize(
    "plain",
    [
        "It costs $5, and 50% of users pay $10 or more.",
        "Prices from $5-$10 per hour; 100% done; C# & F# #1; a_b ^ c ~ d {e}.",
        r"Files in C:\Users\me and \\server\share stay as they are.",
        "Ratios of 3:1 [1] and 12.5% [2, 3] are kept.",
    ],
)
def test_plain_text_passes_through_unchanged(plain: str):
    assert latex_to_text(plain) == plain


def test_latex_keeps_plain_percent_and_dollar_around_markup():
    mixed = r"It costs $5 and 50% more, while \emph{ours} cuts 13\% of $\mathcal{O}(n)$ work."
    assert latex_to_text(mixed) == "It costs $5 and 50% more, while ours cuts 13% of 𝒪(n) work."


def test_every_shipped_abstract_converts_cleanly(corpus_papers):
    converted = 0
    for paper in corpus_papers:
        shown = latex_to_text(paper.abstract)
        if "\\" not in paper.abstract and "$" not in paper.abstract:
            assert shown == paper.abstract
        elif shown != paper.abstract:
            converted += 1
            assert "\\" not in shown and not re.search(r"\$\S", shown), shown
    assert converted >= 20


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_streamed_latex_matches_the_whole_text(seed: int, corpus_papers):
    text = next(p.abstract for p in corpus_papers if "Prior Guidance" in p.abstract)
    stream = LatexStream()
    shown = "".join(stream.feed(p) for p in _pieces(text, seed)) + stream.flush()
    assert shown == latex_to_text(text) and "Prior Guidance (PG)" in shown


def test_terminal_shows_latex_as_text_json_keeps_it(shipped_store: Path):
    question = "What does Prior Guidance do?"
    _, out, _ = run("ask", question, "--store", str(shipped_store))
    _, raw, _ = run("ask", question, "--json", "--store", str(shipped_store))
    assert r"we propose \textbf{\textit{Prior Guidance}} (PG)" in json.loads(raw)["answer"]
    assert "we propose Prior Guidance (PG)" in out and "\\text" not in out


# -- what the footer and search show -------------------------------------------------------------


def test_search_text_shows_no_fused_scores(shipped_store: Path):
    args = ["search", "KV cache eviction", "-k", "3", "--store", str(shipped_store)]
    _, out, _ = run(*args)
    _, raw, _ = run(*args, "--json")
    assert "score" not in out and "KVFlow" in out
    assert all(isinstance(hit["score"], float) for hit in json.loads(raw)["hits"])


NOTICE = "Extractive answer (no LLM configured)"


def test_no_llm_hint_only_after_a_real_answer(shipped_store: Path):
    _, refused, _ = run("ask", "How do I bake sourdough bread?", "--store", str(shipped_store))
    assert refused.startswith("The abstracts I have do not answer") and NOTICE not in refused
    _, answered, _ = run("ask", KVFLOW_Q, "--store", str(shipped_store))
    assert answered.count(NOTICE) == 1


def test_chat_gives_the_no_llm_hint_once(shipped: Assistant):
    out = io.StringIO()
    session = ChatSession(shipped, Console(file=out, width=200, highlight=False))
    questions: list[str | BaseException] = [
        KVFLOW_Q,
        "and how fast is it?",
        "How do I bake sourdough bread?",
    ]
    run_chat(session, reader(questions))
    text = out.getvalue()
    assert len(session.conversation.turns) == 3
    assert text.count("no LLM configured") == 1 and NOTICE not in text


def test_estimated_tokens_are_marked(shipped_store: Path):
    server = FakeOpenAI().start()
    try:
        server.default = Reply(text="KVFlow uses steps-to-execution to evict [1].", usage=None)
        base = ["ask", KVFLOW_Q, "--store", str(shipped_store), "--base-url", server.base_url]
        _, out, _ = run(*base)
        _, raw, _ = run(*base, "--json")
        server.default = Reply(text="KVFlow uses steps-to-execution to evict [1].")
        _, reported, _ = run(*base)
    finally:
        server.stop()
    assert re.search(r", ≈\d{3,}\+\d+ tokens", out)
    assert json.loads(raw)["usage"]["estimated"] is True
    assert ", 120+30 tokens" in reported and "≈" not in reported


# -- eval figures ------------------------------------------------------------------------------


def test_eval_summary_reads_like_a_report():
    rows = [
        {"latency_ms": ms, "prompt_tokens": 1200, "completion_tokens": 34, "cost_usd": 0.0004}
        | {"metrics": {}, "answerable": True, "refused": False, "correct": True}
        | {"tokens_estimated": estimated}
        for ms, estimated in ((177.8, False), (333.96, True), (150.0, False))
    ]
    shown = dict(summary_rows(aggregate(rows)))
    assert re.fullmatch(r"\d{3} ms / \d{3} ms", shown["latency p50 / p95"])
    assert shown["tokens (prompt + completion)"] == "≈3,600 + 102"
    assert shown["estimated cost"] == "$0.0012"
    exact = dict(summary_rows(aggregate(rows[:1])))
    assert exact["latency p50 / p95"] == "178 ms / 178 ms"
    assert exact["tokens (prompt + completion)"] == "1,200 + 34"
    assert metric_value("latency_p95_ms", -12.4, signed=True) == "-12 ms"
    assert metric_value("faithfulness", 0.05, signed=True) == "+0.050"


def test_eval_summary_names_unmeasured_metrics_once():
    rows = [
        {"latency_ms": 100.0, "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0}
        | {"metrics": {"faithfulness": 1.0}, "answerable": True, "refused": False}
        | {"correct": True}
    ]
    shown = summary_rows(aggregate(rows))
    assert all(value != "–" for _, value in shown)
    labels = [label for label, _ in shown]
    assert "faithfulness" in labels and "refusal_recall" not in labels
    unmeasured = dict(shown)[NOT_MEASURED].split(", ")
    assert "refusal_recall" in unmeasured and "faithfulness" not in unmeasured
    assert labels[-1] == NOT_MEASURED


def test_eval_cli_summary_is_not_wrapped(shipped_store: Path, tmp_path: Path):
    code, out, _ = run(
        "eval", "--limit", "1", "--out", str(tmp_path / "run"), "--store", str(shipped_store)
    )
    assert code == 0
    assert re.search(r"latency p50 / p95\s.*\d ms / [\d,]+ ms", out)
    assert f"results: {tmp_path / 'run' / 'results.json'}  report: " in out
    assert "| latency p50 / p95 | " in (tmp_path / "run" / "report.md").read_text()


# -- the status line -------------------------------------------------------------------------


def test_status_line_counts_seconds_and_leaves_no_trace():
    err = io.StringIO()
    waiting = Waiting(Console(file=err, force_terminal=True, width=60), enabled=True)
    waiting.stage("searching")
    time.sleep(0.3)
    waiting.stage("answering")
    time.sleep(1.3)
    waiting.stop()
    shown = ANSI.sub("", err.getvalue())
    assert "searching…" in shown and "waiting for the model… 1 s" in shown
    assert err.getvalue().endswith("\r\x1b[1A\x1b[2K")  # the line is erased: transient
    quiet = io.StringIO()
    off = Waiting(Console(file=quiet, force_terminal=True), enabled=False)
    off.stage("answering")
    off.stop()
    assert quiet.getvalue() == ""


def test_stream_reports_its_stages(shipped: Assistant):
    stages: list[str] = []
    *_, answer = shipped.stream(KVFLOW_Q, on_status=stages.append)
    assert stages == ["searching", "quoting"] and not answer.refused  # no model to wait for
    stages.clear()
    *_, refused = shipped.stream("How do I bake sourdough bread?", on_status=stages.append)
    assert stages == ["searching"] and refused.refused  # no model was asked


def test_piped_ask_prints_no_status(shipped_store: Path):
    server = FakeOpenAI().start()
    try:
        server.default = Reply(text="KVFlow uses steps-to-execution [1].", delay=1.2)
        code, out, err = run(
            "ask", KVFLOW_Q, "--store", str(shipped_store), "--base-url", server.base_url
        )
    finally:
        server.stop()
    assert code == 0 and "KVFlow uses steps-to-execution [1]." in out
    assert "waiting" not in out + err and "searching" not in out + err


def _run_in_pty(args: list[str], columns: int, timeout: float = 180) -> str:
    """Run `assistant ARGS` on a pseudo-terminal of the given width; everything it printed."""
    import fcntl
    import os
    import pty
    import select
    import struct
    import subprocess
    import sys
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in {"COLUMNS", "LINES", "NO_COLOR"}}
    proc = subprocess.Popen(
        [sys.executable, "-m", "assistant", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env={**env, "TERM": "xterm-256color"},
    )
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if not ready:
            if proc.poll() is not None:
                break
            continue
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    os.close(master)
    return b"".join(chunks).decode("utf-8", "replace")


SLOW_REPLY = (
    "KVFlow replaces LRU with a workflow-aware eviction policy that abstracts the agent "
    "execution schedule as an Agent Step Graph and gives each agent a steps-to-execution "
    "value [1]. It also prefetches KV tensors from CPU to GPU for agents scheduled next [1]."
)


def test_terminal_ask_shows_a_status_then_a_wrapped_answer(shipped_store: Path):
    server = FakeOpenAI().start()
    try:
        server.default = Reply(text=SLOW_REPLY, delay=2.2, chunks=23, usage=None)
        raw = _run_in_pty(
            ["ask", KVFLOW_Q, "--store", str(shipped_store), "--base-url", server.base_url],
            columns=50,
        )
    finally:
        server.stop()
    erased = raw.rindex("\x1b[1A\x1b[2K")  # the status line, taken down before the answer
    before, after = ANSI.sub("", raw[:erased]), ANSI.sub("", raw[erased:])
    assert "searching…" in before and "waiting for the model… 1 s" in before
    assert "KVFlow" not in before and "waiting" not in after
    lines = after.replace("\r\n", "\n").strip().splitlines()
    body = lines[: lines.index("")]
    assert len(body) >= 6 and max(len(line) for line in body) <= 50
    assert " ".join(body).split() == SLOW_REPLY.split()
    assert re.search(r"≈\d+\+\d+ tokens", after)


def test_a_streamed_refusal_is_printed_once(shipped_store: Path):
    """Before: the refusal, then "checked answer:", then the refusal again with the nearest."""
    code, out, _ = run("ask", "How do I bake sourdough bread?", "--store", str(shipped_store))
    assert code == 0 and out.count("The abstracts I have do not answer") == 1
    assert "checked answer:" not in out and "Nearest abstracts found" in out


def test_latex_in_titles_is_shown_as_text(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("ASSISTANT_EMBEDDING__PROVIDER", "hashing")
    title = r"Surface Codes: $\mathcal{O}(d^2)$ Decoding"
    row = {"title": title, "abstract": "We decode surface codes in quadratic time. " * 3}
    (tmp_path / "q.jsonl").write_text(json.dumps(row) + "\n")
    store = str(tmp_path / "store")
    assert run("ingest", str(tmp_path / "q.jsonl"), "--store", store)[0] == 0
    _, out, _ = run("search", "surface codes decoding", "--store", store)
    assert "[1] Surface Codes: 𝒪(d²) Decoding" in out and "\\mathcal" not in out
    _, out, _ = run("ask", "How are surface codes decoded?", "--store", store)
    assert "Sources: [1] Surface Codes: 𝒪(d²) Decoding" in out
