"""`assistant chat` in a real pseudo-terminal, as a user runs it: prompt_toolkit's line editor
(not the piped-stdin branch), history across sessions, Ctrl-C during an answer, Ctrl-D, /save."""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.openai_server import FakeOpenAI, Reply

pexpect = pytest.importorskip("pexpect")

# prompt_toolkit switches bracketed paste on each time it starts reading a line: the prompt is up.
PROMPT_READY = "\x1b[?2004h"
CTRL_A, CTRL_E, CTRL_C, CTRL_D, UP = "\x01", "\x05", "\x03", "\x04", "\x1b[A"


def chat_env(home: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("ASSISTANT_") and k not in {"OPENAI_API_KEY", "OPENAI_BASE_URL"}
    }
    # History goes to the user data dir; PROMPT_TOOLKIT_NO_CPR: pexpect answers no cursor queries.
    env.update(XDG_DATA_HOME=str(home), TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1", **extra)
    return env


def spawn_chat(store: Path, env: dict[str, str], *args: str) -> pexpect.spawn:
    child = pexpect.spawn(
        sys.executable,
        ["-m", "assistant", "chat", "--store", str(store), *args],
        env=env,
        encoding="utf-8",
        timeout=90,
        dimensions=(40, 120),
        # A terminal's Ctrl-C, whatever launched the suite: a job put in the background by a
        # shell without job control inherits SIGINT ignored, and so would this chat.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    child.expect_exact(PROMPT_READY)
    return child


def finish(child: pexpect.spawn) -> int:
    child.expect_exact(PROMPT_READY)
    child.send(CTRL_D)
    child.expect("bye")
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus


def test_line_editing_history_save_and_ctrl_d(shipped_store: Path, tmp_path: Path):
    env = chat_env(tmp_path / "home")
    child = spawn_chat(shipped_store, env)
    # Typed out of order and fixed with the line editor: Ctrl-A to the start, Ctrl-E to the end.
    child.send("KV cache evic")
    child.send(CTRL_A + "Which papers study " + CTRL_E + "tion?\r")
    child.expect("KVFlow")
    child.expect_exact(PROMPT_READY)
    saved = tmp_path / "notes.md"
    child.send(f"/save {saved}\r")
    child.expect("transcript saved")
    child.expect_exact(PROMPT_READY)
    child.send(f"/save {saved}\r")  # a second save must not replace the first silently
    child.expect("exists")
    assert finish(child) == 0
    text = saved.read_text(encoding="utf-8")
    assert "## 1. Which papers study KV cache eviction?" in text
    assert "KVFlow" in text and "## References" in text

    # A new session: the up arrow walks back through the last one (two /saves, then the question).
    child = spawn_chat(shipped_store, env)
    child.send(UP * 3 + "\r")
    child.expect("KVFlow")
    child.expect_exact(PROMPT_READY)
    child.send(f"/save {saved} --force\r")
    child.expect("transcript saved")
    assert finish(child) == 0
    assert "## 1. Which papers study KV cache eviction?" in saved.read_text(encoding="utf-8")


def test_ctrl_c_cancels_a_slow_answer_and_the_session_goes_on(
    shipped_store: Path, tmp_path: Path, server: FakeOpenAI
):
    server.enqueue(
        Reply(text="KVFlow replaces LRU eviction with a workflow-aware policy [1].", delay=30),
        Reply(text="KVFlow prefetches KV caches for agents that run next [1]."),
    )
    env = chat_env(tmp_path / "home", OPENAI_BASE_URL=server.base_url)
    child = spawn_chat(shipped_store, env, "--model", "test-model")
    child.send("What does KVFlow do about KV cache eviction?\r")
    deadline = time.monotonic() + 60
    while not server.requests and time.monotonic() < deadline:
        time.sleep(0.1)
    assert server.requests, "the question never reached the model"
    child.send(CTRL_C)  # while the model is still thinking
    child.expect("cancelled", timeout=20)
    child.expect_exact(PROMPT_READY)
    child.send("How does KVFlow prefetch caches?\r")
    child.expect("prefetches KV caches")
    assert finish(child) == 0


def test_chat_takes_the_same_filter_and_k_flags_as_ask(shipped_store: Path, tmp_path: Path):
    env = chat_env(tmp_path / "home")
    child = spawn_chat(shipped_store, env, "-k", "2", "--filter", "source_file=nope.txt")
    child.send("Which papers study KV cache eviction?\r")
    child.expect("do not answer|No abstracts")
    assert finish(child) == 0


HALLUCINATION = "Which papers try to reduce hallucinations in language models?"
MAMBA = "Which papers study state space models like Mamba, and what do they find?"
PINNED = "(a follow-up, searched in the last answer's"


def ask_and_read(child: pexpect.spawn, question: str) -> str:
    """What the terminal showed between sending the question and the next prompt, as text
    (no escape sequences, lines wrapped by the terminal joined again)."""
    child.send(question + "\r")
    child.expect_exact(PROMPT_READY)
    return " ".join(re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", child.before).split())


def leave(child: pexpect.spawn) -> int:
    """Ctrl-D at a prompt already shown; the exit status."""
    child.send(CTRL_D)
    child.expect("bye")
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus


def test_a_new_question_with_a_pronoun_is_not_pinned_in_a_terminal(
    shipped_store: Path, tmp_path: Path
):
    """Offline: MAMBA says "they" but names its subject, so it searches every paper; the
    follow-up after it is pinned to the paper it cited, and one line says so."""
    child = spawn_chat(shipped_store, chat_env(tmp_path / "home"))
    assert "MCD" in ask_and_read(child, HALLUCINATION)
    shown = ask_and_read(child, MAMBA)
    assert "Mamba" in shown and PINNED not in shown and "MCD" not in shown
    shown = ask_and_read(child, "How does it handle longer contexts?")
    assert PINNED in shown and "/new" in shown
    assert leave(child) == 0


def test_the_chat_models_decision_is_followed_in_a_terminal(
    shipped_store: Path, tmp_path: Path, server: FakeOpenAI
):
    server.enqueue(
        "MCD contrasts an evil model with a truthful one [1].",
        f"NEW: {MAMBA}",
        "Spectrum scaling lets Mamba generalise to longer contexts [1].",
        "FOLLOW-UP: How does the Mamba spectrum scaling handle longer contexts?",
        "It rescales the spectrum of the transition matrix [1].",
    )
    env = chat_env(tmp_path / "home", OPENAI_BASE_URL=server.base_url)
    child = spawn_chat(shipped_store, env, "--model", "test-model")
    ask_and_read(child, HALLUCINATION)
    shown = ask_and_read(child, MAMBA)
    assert "Spectrum scaling" in shown and PINNED not in shown
    shown = ask_and_read(child, "How does it handle longer contexts?")
    assert "rescales the spectrum" in shown and PINNED in shown
    assert leave(child) == 0
    condense = server.requests[1]["messages"][0]["content"]
    assert "NEW:" in condense and MAMBA in condense
