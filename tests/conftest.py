"""Shared fixtures. The real MiniLM embedder runs once per session over the shipped corpus."""

from __future__ import annotations

import fcntl
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from assistant import Assistant, load_settings
from assistant.embedding.embedders import MiniLMEmbedder
from assistant.ingest.corpus import Paper, load_corpus
from tests.openai_server import FakeOpenAI

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "data" / "neurips2025"
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"


# The modules that take longest (`make test` prints the slowest tests). Collected first, so that
# with one worker per core (`pytest -n`) none of them starts while the other worker sits idle
# at the end.
LONGEST_FIRST = tuple(
    f"test_{name}.py"
    for name in (
        "damage kill concurrency wheel_install fast_ingest model_families answer_model ingest "
        "eval_run fuzz"
    ).split()
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        name = item.path.name
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: the order within a module is kept


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's ``ASSISTANT_CACHE_DIR``: the int8 file of `ingest --fast` is made in it
    once, never in the developer's cache folder."""
    return tmp_path_factory.mktemp("assistant-cache")


@pytest.fixture(autouse=True)
def _no_ambient_config(monkeypatch: pytest.MonkeyPatch, session_cache: Path) -> None:
    """Tests never see the developer's keys or settings."""
    for name in list(os.environ):
        if name.startswith("ASSISTANT_") or name in {"OPENAI_API_KEY", "OPENAI_BASE_URL"}:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ASSISTANT_CACHE_DIR", str(session_cache))


@pytest.fixture()
def server() -> Iterator[FakeOpenAI]:
    """The loopback chat-completions server (tests/openai_server.py), one per test."""
    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Chroma server, `chroma run` from the installed package, on 127.0.0.1 with a
    temporary path, one per session; yields its URL and stops it at the end."""
    exe = Path(sys.executable).with_name("chroma")
    found = str(exe) if exe.exists() else shutil.which("chroma")
    if found is None:
        pytest.skip("the `chroma` command (from the chromadb package) is not installed")
    folder = tmp_path_factory.mktemp("chroma-server")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with open(folder / "server.log", "wb") as log:
        process = subprocess.Popen(
            [found, "run", "--path", str(folder / "data"), "--host", "127.0.0.1"]
            + ["--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                log_text = (folder / "server.log").read_text(errors="replace")[-2000:]
                pytest.fail(f"`chroma run` did not come up (exit {process.poll()}):\n{log_text}")
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.fixture(scope="session")
def corpus_papers() -> list[Paper]:
    return load_corpus([CORPUS]).papers


@contextmanager
def shared_folder(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[Path]:
    """A folder of this test run that every pytest worker (`pytest -n`) shares, held under a
    lock: what the first worker makes in it, the others find made."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's folder, above each worker's own
    folder = base / name
    folder.mkdir(exist_ok=True)
    with open(folder.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield folder


@pytest.fixture(scope="session")
def shipped_store(tmp_path_factory: pytest.TempPathFactory, embedder: MiniLMEmbedder) -> Path:
    """A store holding the 95 shipped abstracts, built once per test run and shared by the
    workers. Do not modify it."""
    with shared_folder(tmp_path_factory, "shipped") as folder:
        store, built = folder / "store", folder / "built"
        if not built.exists():
            shutil.rmtree(store, ignore_errors=True)
            with Assistant(load_settings(store={"path": store}), embedder=embedder) as assistant:
                report = assistant.ingest()
            assert report.added == 95 and report.ok
            built.touch()
    return store


@pytest.fixture()
def shipped(shipped_store: Path, embedder: MiniLMEmbedder):
    with Assistant(load_settings(store={"path": shipped_store}), embedder=embedder) as assistant:
        yield assistant


def write_seed(path: Path, abstracts: list[str]) -> Path:
    path.write_text("Test papers\n\n" + "\n\n".join(abstracts) + "\n", encoding="utf-8")
    return path


def rewrite_records(store: Path, rows: list[tuple[str, str, str]]) -> None:
    """Set (paper_id, fingerprint, label) in a store's catalog, as an older version wrote them."""
    with closing(sqlite3.connect(store / "catalog.sqlite3")) as db, db:
        db.executemany(
            "UPDATE papers SET fingerprint = ?, label = ? WHERE paper_id = ?",
            [(fp, label, pid) for pid, fp, label in rows],
        )


@pytest.fixture()
def small_dir(tmp_path: Path, corpus_papers: list[Paper]) -> Path:
    """Two seed files with 3 + 2 of the shipped abstracts."""
    folder = tmp_path / "papers"
    folder.mkdir()
    write_seed(folder / "a.txt", [p.abstract for p in corpus_papers[:3]])
    write_seed(folder / "b.txt", [p.abstract for p in corpus_papers[3:5]])
    return folder


@pytest.fixture()
def fresh(tmp_path: Path, embedder: MiniLMEmbedder):
    """An empty store of its own, for tests that write."""
    with Assistant(load_settings(store={"path": tmp_path / "store"}), embedder=embedder) as a:
        yield a


def refit(script: Path, store: Path, out: Path) -> tuple[dict[str, object], str]:
    """Run a fit script under ``evals/`` on a store of the shipped corpus: the model it wrote
    to ``out`` and what it printed."""
    import json

    run = subprocess.run(
        [sys.executable, str(script), "--store", str(store), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    return json.loads(out.read_text()), run.stdout
