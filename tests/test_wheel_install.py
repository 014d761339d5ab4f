"""Installed as users install it: build the wheel, install it into a fresh venv in a temporary
folder outside the checkout, and run the commands from there. Nothing is read from the checkout
at run time: the corpus, prompts, eval set and judge weights must travel inside the wheel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = [
    [],
    ["ingest"],
    ["search"],
    ["ask"],
    ["chat"],
    ["info"],
    ["eval"],
    ["eval", "calibrate"],
]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], Path]:
    """(the venv's `assistant`, its environment, a working folder outside the checkout)."""
    base = tmp_path_factory.mktemp("wheel")
    dist = base / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = dist.glob("*.whl")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)],
        check=True,
        capture_output=True,
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ASSISTANT_", "OPENAI_", "PYTHON", "VIRTUAL_ENV"))
    }
    env.update(XDG_DATA_HOME=str(base / "home"), TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1")
    work = base / "work"
    work.mkdir()
    return venv / "bin" / "assistant", env, work


def run(installed: tuple[Path, dict[str, str], Path], *args: str) -> subprocess.CompletedProcess:
    exe, env, work = installed
    return subprocess.run(
        [str(exe), *args], cwd=work, env=env, capture_output=True, text=True, timeout=600
    )


def test_help_works_with_only_the_declared_dependencies(installed):
    for command in COMMANDS:
        done = run(installed, *command, "--help")
        assert done.returncode == 0, (command, done.stderr)
        assert "Usage:" in done.stdout


def test_read_commands_before_ingest_say_where_they_looked(installed):
    _, env, work = installed
    done = run(installed, "info")
    assert done.returncode == 1
    expected = Path(env["XDG_DATA_HOME"]) / "abstracts-assistant" / "vectorstore"
    assert f"no store in {expected}" in done.stderr
    assert "assistant ingest" in done.stderr and "Traceback" not in done.stderr
    assert not expected.exists() and list(work.iterdir()) == []


def test_ingest_search_ask_eval_and_chat_from_the_installed_wheel(installed):
    exe, env, work = installed
    done = run(installed, "ingest")
    assert done.returncode == 0, done.stderr
    assert "95 added" in " ".join(done.stdout.split())

    info = json.loads(run(installed, "info", "--json").stdout)
    assert info["papers"] == 95
    assert info["store"] == str(Path(env["XDG_DATA_HOME"]) / "abstracts-assistant" / "vectorstore")

    done = run(installed, "search", "--json", "KV cache eviction for agent workflows")
    assert done.returncode == 0, done.stderr
    hits = json.loads(done.stdout)["hits"]
    assert hits and "KVFlow" in hits[0]["text"]

    done = run(installed, "ask", "Which papers study KV-cache eviction, and what do they find?")
    assert done.returncode == 0, done.stderr
    assert "KVFlow" in done.stdout and "[1]" in done.stdout

    done = run(installed, "eval", "--limit", "2")
    assert done.returncode == 0, done.stderr
    (results,) = (work / "evals" / "runs").glob("*/results.json")  # under the user's folder
    assert len(json.loads(results.read_text())["questions"]) == 2

    pexpect = pytest.importorskip("pexpect")
    child = pexpect.spawn(str(exe), ["chat"], cwd=str(work), env=env, encoding="utf-8", timeout=120)
    child.expect_exact("\x1b[?2004h")  # prompt_toolkit's editor is reading a line
    child.send("Which papers study KV cache eviction?\r")
    child.expect("KVFlow")
    child.expect_exact("\x1b[?2004h")
    child.send("/quit\r")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
