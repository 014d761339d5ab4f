"""A command that only reads an embedded store reads it through Chroma's Rust core instead of
its client (whose import is most of a cold `ask`). The core must answer exactly as the client
does, fall back to the client when it cannot, and never leave a reader stale after a write."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from assistant import Assistant, Paper, load_settings
from assistant.embeddings import HashingEmbedder
from assistant.store import Filter
from assistant.store.chroma import ChromaVectors, CoreReader

COLLECTION = "abstracts"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, corpus_papers: list[Paper]) -> Path:
    """30 shipped abstracts with hashing vectors; years alternate so filters have work."""
    from dataclasses import replace

    path = tmp_path_factory.mktemp("core") / "store"
    papers = [replace(p, year=2024 + i % 2) for i, p in enumerate(corpus_papers[:30])]
    with Assistant(load_settings(store={"path": path}), embedder=HashingEmbedder()) as a:
        a.ingest_papers(papers)
    return path


def _pair(store: Path, name: str = COLLECTION) -> tuple[ChromaVectors, ChromaVectors]:
    """The same collection opened through the core and through the client."""
    embedder = HashingEmbedder()
    opened = [
        ChromaVectors.open(
            path=store / "chroma",
            url=None,
            collection=name,
            embedder_name=embedder.name,
            dim=embedder.dim,
            read_only=read_only,
        )
        for read_only in (True, False)
    ]
    return opened[0], opened[1]


def test_read_only_opens_the_core(store: Path):
    core, client = _pair(store)
    assert isinstance(core._collection._collection, CoreReader)
    assert not isinstance(client._collection._collection, CoreReader)
    assert core.count() == client.count() > 30


@pytest.mark.parametrize("year", [None, 2025])
@pytest.mark.parametrize("some_papers", [False, True])
def test_nearest_are_the_clients(store: Path, year: int | None, some_papers: bool):
    core, client = _pair(store)
    papers = sorted({i.split(":")[0] for i in client.ids()})[::3] if some_papers else None
    where = Filter(year=year, paper_ids=frozenset(papers) if papers else None)
    rng = np.random.default_rng(7)
    for _ in range(5):
        vector = rng.normal(size=256).astype(np.float32)
        vector /= np.linalg.norm(vector)
        got, want = core.query(vector, 25, where), client.query(vector, 25, where)
        assert got and [m.item_id for m in got] == [m.item_id for m in want]
        assert np.allclose([m.similarity for m in got], [m.similarity for m in want], atol=1e-6)


def test_records_and_vectors_are_the_clients(store: Path):
    for name in (COLLECTION, f"{COLLECTION}-sentences"):
        core, client = _pair(store, name)
        assert sorted(core.ids()) == sorted(client.ids())
        some = sorted(client.ids())[::7]
        got, want = core.get_vectors(some), client.get_vectors(some)
        assert got.keys() == want.keys() == set(some)
        assert all(np.array_equal(got[i], want[i]) for i in some)
        paper = some[0].split(":")[0]
        assert list(core.records(where={"paper_id": paper})) == list(
            client.records(where={"paper_id": paper})
        )
        assert list(core.records(ids=some[:3])) == list(client.records(ids=some[:3]))


def test_the_core_says_none_where_the_client_must_answer(tmp_path: Path, store: Path):
    assert CoreReader.open(tmp_path / "nothing", COLLECTION) is None
    assert CoreReader.open(store / "chroma", "no-such-collection") is None
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "chroma.sqlite3").write_bytes(b"not a database")
    assert CoreReader.open(tmp_path / "bad", COLLECTION) is None


def test_a_reader_has_no_writes(store: Path):
    core, _ = _pair(store)
    with pytest.raises(AttributeError):
        core.delete_ids(["x:0"])
    assert core.count() > 30


def test_an_assistant_that_read_then_writes_reads_what_it_wrote(
    tmp_path: Path, corpus_papers: list[Paper]
):
    settings = load_settings(store={"path": tmp_path / "s"})
    with Assistant(settings, embedder=HashingEmbedder()) as a:
        a.ingest_papers(corpus_papers[:5])
    with Assistant(settings, embedder=HashingEmbedder()) as a:
        target = corpus_papers[40]
        query = target.abstract[:200]
        assert target.paper_id not in [h.paper_id for h in a.search(query, k=3)]
        assert isinstance(a.store.chunks._collection._collection, CoreReader)  # type: ignore[attr-defined]
        a.ingest_papers([target])
        assert a.search(query, k=3)[0].paper_id == target.paper_id


def test_a_reader_sees_what_another_writer_in_this_process_ingests(
    tmp_path: Path, corpus_papers: list[Paper]
):
    """Each core reader has its own copy of the vector index; a writer in the same process
    may not have written its index files yet. Once the catalog says the store changed, the
    reader switches to the client, which shares the writer's state. Found by a reviewer."""
    settings = load_settings(store={"path": tmp_path / "s"})
    with Assistant(settings, embedder=HashingEmbedder()) as first:
        first.ingest_papers(corpus_papers[:5])
    target = corpus_papers[40]
    query = target.abstract[:200]
    reader = Assistant(settings, embedder=HashingEmbedder())
    writer = Assistant(settings, embedder=HashingEmbedder())
    try:
        assert target.paper_id not in [h.paper_id for h in reader.search(query, k=3)]
        assert reader.store.chunks.via_core  # type: ignore[attr-defined]
        writer.ingest_papers([target])
        assert reader.search(query, k=3)[0].paper_id == target.paper_id
        assert not reader.store.chunks.via_core  # type: ignore[attr-defined]
    finally:
        reader.close()
        writer.close()
