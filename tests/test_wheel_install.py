"""Installed as users install it: build the wheel, install it into a fresh venv in a temporary
folder outside the checkout, and run the commands from there. Nothing is read from the checkout
at run time: the corpus, prompts, eval set and judge weights must travel inside the wheel.

First contact is checked here too: `make demo`'s steps (read from the Makefile), then the
README's first example and its Python API snippet, each run as written there, so the test
breaks when the Makefile or the README drifts from the tool."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import zipfile
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
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """(the wheel, what building it printed)."""
    dist = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT)],
        check=True,
        capture_output=True,
        text=True,
    )
    (wheel,) = dist.glob("*.whl")
    return wheel, done.stdout + done.stderr


@pytest.fixture(scope="module")
def installed(
    tmp_path_factory: pytest.TempPathFactory, built: tuple[Path, str]
) -> tuple[Path, dict[str, str], Path]:
    """(the venv's `assistant`, its environment, a working folder outside the checkout)."""
    base = tmp_path_factory.mktemp("wheel")
    wheel, _ = built
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


def test_the_wheel_builds_without_a_packaging_warning_and_carries_its_data(built):
    """Before: a 30-line setuptools warning that `assistant._data.neurips2025` was absent from
    `packages`, shown by every `make demo` on a fresh machine."""
    wheel, output = built
    assert "absent from the `packages` configuration" not in output
    assert "SetuptoolsDeprecationWarning" not in output and "BuildBackendWarning" not in output
    names = zipfile.ZipFile(wheel).namelist()
    corpus = [n for n in names if n.startswith("assistant/_data/neurips2025/")]
    shipped = sorted(p.name for p in (ROOT / "data" / "neurips2025").glob("*.txt"))
    assert sorted(Path(n).name for n in corpus) == shipped
    assert "assistant/_evals/neurips2025.jsonl" in names
    assert "assistant/_prompts/condense_question.md" in names


def makefile_recipe(target: str) -> list[str]:
    """The commands of a Makefile target, its `VAR ?= value` variables filled in."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    variables = dict(re.findall(r"^(\w+) \??[:]?= ?(.*)$", text, re.MULTILINE))
    recipe = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", text, re.MULTILINE)
    assert recipe, f"no {target} target in the Makefile"
    lines = [line.strip() for line in recipe.group(1).splitlines()]
    return [re.sub(r"\$\((\w+)\)", lambda m: variables[m.group(1)], line) for line in lines]


def readme_first_example() -> list[str]:
    """The first `$ assistant ...` command the README shows, as a shell would split it."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for block in re.findall(r"^```[a-z]*\n(.*?)^```", readme, re.MULTILINE | re.DOTALL):
        for line in block.splitlines():
            if line.startswith("$ assistant "):
                return shlex.split(line[2:])
    raise AssertionError("the README shows no `$ assistant ...` example")


def readme_python_snippet() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"^## Python API\n.*?^```python\n(.*?)^```", readme, re.M | re.S)
    assert found, "the README has no Python API snippet"
    return found.group(1)


def test_make_demo_then_the_readme_example_and_api_snippet_from_the_wheel(installed):
    """A newcomer's first minutes, on the installed wheel: `make demo`'s steps as the Makefile
    writes them (the setup step is the wheel install above), the README's first example
    verbatim, and its Python API snippet, from a folder outside the checkout."""
    exe, env, work = installed
    demo = [shlex.split(line) for line in makefile_recipe("demo")]
    assert [cmd[0] for cmd in demo] == [".venv/bin/assistant"] * len(demo)
    assert ["ingest"] in [cmd[1:] for cmd in demo] and any(c[1] == "ask" for c in demo)
    for command in demo:
        done = run(installed, *command[1:])
        assert done.returncode == 0, (command, done.stderr)
        assert "Traceback" not in done.stderr and "warning" not in done.stderr.lower()
    assert "[1]" in done.stdout  # the demo's question was answered, with a citation

    example = readme_first_example()
    assert example[0] == "assistant"
    done = run(installed, *example[1:])
    assert done.returncode == 0, (example, done.stderr)
    assert "Traceback" not in done.stderr and "Sources: [1]" in done.stdout

    done = subprocess.run(
        [str(exe.parent / "python"), "-c", readme_python_snippet()],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "[1] KVFlow" in done.stdout and len(lines) >= 6
    # Before: one 5,600-character line (a list of citations with their whole abstracts).
    assert max(len(line) for line in lines) < 1_000
