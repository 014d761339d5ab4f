"""A command that only reads an embedded store reads it through Chroma's Rust core instead of
its client (whose import is most of a cold `ask`). The core must answer exactly as the client
does, fall back to the client when it cannot, and never leave a reader stale after a write."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from assistant import Assistant, Paper, load_settings
from assistant.embedding.embedders import HashingEmbedder
from assistant.errors import VectorIndexDamagedError
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
    """Each core handle holds the vector index as it was when opened; once the catalog says
    the store changed, the reader opens a fresh one, which reads the files and the write log
    again. Rounds of 20 papers (over a thousand vectors in all, past the count at which Chroma
    saves its index) from a writer whose client holds the unsaved rest in memory."""
    settings = load_settings(store={"path": tmp_path / "s"})
    with Assistant(settings, embedder=HashingEmbedder()) as first:
        first.ingest_papers(corpus_papers[:5])
    reader = Assistant(settings, embedder=HashingEmbedder())
    writer = Assistant(settings, embedder=HashingEmbedder())
    try:
        for start in range(5, 95, 20):
            batch = corpus_papers[start : start + 20]
            query = batch[-1].abstract[:200]
            assert batch[-1].paper_id not in [h.paper_id for h in reader.search(query, k=3)]
            writer.ingest_papers(batch)
            vector = reader.embedder.embed_query(query)
            nearest = reader.store.nearest("chunks", vector, 3, Filter(year=batch[-1].year))
            assert nearest[0].paper_id == batch[-1].paper_id
            assert reader.search(query, k=3)[0].paper_id == batch[-1].paper_id
            assert reader.store.chunks.via_core  # type: ignore[attr-defined]
    finally:
        reader.close()
        writer.close()


def test_a_filtered_read_meeting_vectors_newer_than_its_handle_is_made_again(
    tmp_path: Path, corpus_papers: list[Paper]
):
    """A writer upserts a batch's vectors before the catalog marks its papers ready. A reader
    whose core handle predates them meets their ids in the metadata a filter reads but not in
    its copy of the index ("Error finding id"), which once read as a damaged index: 5 of 364
    `search --filter` runs beside an ingest said to run `--repair`. The read is made again on
    a fresh handle."""
    from dataclasses import replace

    path = tmp_path / "s"
    settings = load_settings(store={"path": path})
    papers = [replace(p, year=2023) for p in corpus_papers[:10]]
    with Assistant(settings, embedder=HashingEmbedder()) as a:
        a.ingest_papers(papers[:5])
    with Assistant(settings, embedder=HashingEmbedder()) as reader:
        vector = reader.embedder.embed_query(papers[7].abstract[:200])
        before = reader.store.nearest("chunks", vector, 3, Filter(year=2023))
        stale = reader.store.chunks
        assert stale.via_core  # type: ignore[attr-defined]
        assert papers[7].paper_id not in [m.paper_id for m in before]
        _, client = _pair(path)  # the writer's upsert, the catalog not told yet
        embedded = reader.embedder.embed([p.abstract for p in papers[5:]])
        client.upsert(
            [f"{p.paper_id}:0" for p in papers[5:]],
            embedded,
            None,
            [p.metadata() for p in papers[5:]],
        )
        with pytest.raises(VectorIndexDamagedError, match="Error finding id"):
            stale.query(vector, 3, Filter(year=2023))
        after = reader.store.nearest("chunks", vector, 3, Filter(year=2023))
        assert after[0].paper_id == papers[7].paper_id
        assert reader.store.chunks is not stale
