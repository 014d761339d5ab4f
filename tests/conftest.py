"""Shared fixtures. The real MiniLM embedder runs once per session over the shipped corpus."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from assistant import Assistant, load_settings
from assistant.corpus import Paper, load_corpus
from assistant.embeddings import MiniLMEmbedder
from tests.openai_server import FakeOpenAI

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "data" / "neurips2025"
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"


@pytest.fixture(autouse=True)
def _no_ambient_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never see the developer's keys or settings."""
    import os

    for name in list(os.environ):
        if name.startswith("ASSISTANT_") or name in {"OPENAI_API_KEY", "OPENAI_BASE_URL"}:
            monkeypatch.delenv(name, raising=False)


@pytest.fixture()
def server() -> Iterator[FakeOpenAI]:
    """The loopback chat-completions server (tests/openai_server.py), one per test."""
    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


@pytest.fixture(scope="session")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.fixture(scope="session")
def corpus_papers() -> list[Paper]:
    return load_corpus([CORPUS]).papers


@pytest.fixture(scope="session")
def shipped_store(tmp_path_factory: pytest.TempPathFactory, embedder: MiniLMEmbedder) -> Path:
    """A store holding the 95 shipped abstracts, built once per session. Do not modify it."""
    store = tmp_path_factory.mktemp("shipped") / "store"
    with Assistant(load_settings(store={"path": store}), embedder=embedder) as assistant:
        report = assistant.ingest()
    assert report.added == 95 and report.ok
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
