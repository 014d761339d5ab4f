"""Cold start is a property, not a timing: what a command imports. `--help` loads none of the
heavy libraries, and an extractive `ask` loads neither LangChain nor a tiktoken encoding
(benchmarks/startup.py measures the seconds)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from assistant import Assistant, Paper, load_settings

HEAVY = ("chromadb", "langchain_core", "langchain_text_splitters", "onnxruntime", "tokenizers")
# Runs the CLI in a fresh interpreter, then reports what it imported (after the CLI's output).
PROBE = """
import json, sys
from assistant.cli.main import main
sys.argv = ["assistant", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit as exc:
    code = exc.code
from assistant.text import tokens
loaded = sorted({m.split(".")[0] for m in sys.modules})
print("\\nPROBE", json.dumps({"code": code, "modules": loaded,
      "encodings": tokens.encoding.cache_info().currsize}))
"""


def _probe(args: list[str], env: dict[str, str] | None = None) -> tuple[str, dict]:
    """The command's output, and {"code", "modules", "encodings"} from the same process."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=True,
    ).stdout
    text, _, report = out.rpartition("\nPROBE ")
    return text, json.loads(report)


def test_importing_the_cli_loads_no_heavy_library():
    code = "import sys, assistant.cli.main; print(sorted({m.split('.')[0] for m in sys.modules}))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = out.stdout
    assert "click" in loaded  # the probe sees what was imported
    assert [m for m in HEAVY if f"'{m}'" in loaded] == []


@pytest.mark.parametrize("command", [[], ["ingest"], ["search"], ["ask"], ["chat"], ["eval"]])
def test_help_loads_no_heavy_library(command: list[str]):
    text, report = _probe([*command, "--help"])
    assert report["code"] in (0, None) and "Usage: assistant" in text
    assert [m for m in HEAVY if m in report["modules"]] == []


def test_extractive_ask_loads_no_langchain_and_no_tokenizer_encoding(
    tmp_path: Path, corpus_papers: list[Paper]
):
    """Nothing is prompted, so nothing is counted in tokens; the answer is still cited."""
    store = tmp_path / "store"
    settings = load_settings(store={"path": store}, embedding={"provider": "hashing"})
    with Assistant(settings) as assistant:
        assistant.ingest_papers(corpus_papers[:5])
    question = corpus_papers[0].abstract.split(". ")[0]  # hashing vectors match spellings
    env = {**os.environ, "ASSISTANT_EMBEDDING__PROVIDER": "hashing"}
    env = {k: v for k, v in env.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    text, report = _probe(["ask", question, "--json", "--store", str(store)], env)
    answer = json.loads(text)
    assert report["code"] in (0, None) and answer["provider"] == "extractive"
    assert not answer["refused"] and answer["citations"][0]["paper_id"] == corpus_papers[0].paper_id
    # A small store is read from its read copy: chromadb, most of a cold `ask`, is not
    # imported; without the copy, Chroma's public client reads the store.
    assert "chromadb" not in report["modules"]
    assert "langchain_core" not in report["modules"] and report["encodings"] == 0
    text, report = _probe(
        ["ask", question, "--json", "--store", str(store)],
        {**env, "ASSISTANT_STORE__READ_COPY": "0"},
    )
    assert json.loads(text)["citations"] == answer["citations"]
    assert "chromadb" in report["modules"]
