"""A small store's read copy (``assistant.store.read_copy``), on the exact in-memory index: reads
answer from it without opening an index, exactly as the index answers, and never once a write,
a write mark or a change from outside has made it differ from the index; a damaged copy file
is never read, and the next writer makes a new one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from assistant import Paper, load_settings
from assistant.store.base import Filter
from assistant.store.catalog import CATALOG_FILE, Catalog
from assistant.store.exact import ExactIndex, ExactIndexes
from assistant.store.local import COPY, WRITING, LocalStore
from assistant.store.read_copy import COPY_FILE
from tests.test_store_journal import EMBEDDER, ingest_hashing


def _store(folder: Path, indexes: ExactIndexes, copy_vectors: int = 40_000) -> LocalStore:
    return LocalStore(
        Catalog(folder / CATALOG_FILE),
        indexes,
        "abstracts",
        keeps_sentences=True,
        copy_vectors=copy_vectors,
        query_embedder=lambda: EMBEDDER.name,
    )


def _unopenable(indexes: ExactIndexes, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make opening an index fail the test; the names asked for are listed."""
    asked: list[str] = []

    def refuse(name: str) -> ExactIndex:
        asked.append(name)
        raise AssertionError(f"index {name} opened")

    monkeypatch.setattr(indexes, "open", refuse)
    return asked


def _reads(store: LocalStore, papers: list[Paper]) -> list[object]:
    """What a search asks of the vectors: nearest chunks and sentences, unfiltered and
    filtered, and sentence vectors by id."""
    seen: list[object] = []
    for paper in papers[:3]:
        vector = EMBEDDER.embed_query(paper.abstract[:200])
        for kind in ("chunks", "sentences"):
            for where in (Filter(), Filter(paper_ids=frozenset(p.paper_id for p in papers[2:6]))):
                found = store.nearest(kind, vector, 5, where)  # type: ignore[arg-type]
                seen.append([(m.item_id, round(m.similarity, 5)) for m in found])
    got = store.sentence_vectors([f"{papers[0].paper_id}:s0", f"{papers[1].paper_id}:s1"])
    seen.append({i: np.round(v, 6).tolist() for i, v in got.items()})
    return seen


def test_a_reader_answers_from_the_copy_as_the_index_does_without_opening_it(
    tmp_path: Path, corpus_papers: list[Paper], monkeypatch: pytest.MonkeyPatch
):
    indexes = ExactIndexes()
    ingest_hashing(_store(tmp_path, indexes), corpus_papers[:12])
    assert (tmp_path / COPY_FILE).is_file()
    from_index = _reads(_store(tmp_path, indexes, copy_vectors=0), corpus_papers)
    asked = _unopenable(indexes, monkeypatch)
    assert _reads(_store(tmp_path, indexes), corpus_papers) == from_index
    assert asked == [] and indexes.probes == 0
    assert from_index[0] and from_index[-1]  # the reads found something


def test_after_a_write_readers_read_the_index_until_the_next_run_ends(
    tmp_path: Path, corpus_papers: list[Paper], monkeypatch: pytest.MonkeyPatch
):
    """A run killed in its second batch, after its first became ready: the mark it left is
    settled by the next reader's probe, and the copy, made before the run, lacks the first
    batch's papers; every reader reads the index until a run ends and names a new copy."""
    indexes = ExactIndexes()
    store = _store(tmp_path, indexes)
    ingest_hashing(store, corpus_papers[:4])
    tag = store.get_meta(COPY)
    upsert, calls = ExactIndex.upsert, []

    def killed_in_the_second_batch(self: ExactIndex, ids, vectors, documents, metadatas) -> None:
        calls.append(1)
        if len(calls) == 3:  # a batch upserts chunks, then sentences
            raise KeyboardInterrupt
        upsert(self, ids, vectors, documents, metadatas)

    monkeypatch.setattr(ExactIndex, "upsert", killed_in_the_second_batch)
    with pytest.raises(KeyboardInterrupt):
        ingest_hashing(store, corpus_papers[4:8], batch=2)
    monkeypatch.setattr(ExactIndex, "upsert", upsert)
    assert store.get_meta(WRITING) and store.get_meta(COPY) == ""
    assert store.counts()["papers"] == 6  # the first batch is ready
    ready = corpus_papers[5]
    vector = EMBEDDER.embed_query(ready.abstract[:200])
    for _ in range(2):  # the first reader probes and settles the mark; the next reads
        reader = _store(tmp_path, indexes)
        assert reader._read_copy() is None
        assert reader.nearest("chunks", vector, 1, Filter())[0].paper_id == ready.paper_id
    assert indexes.probes == 1 and not reader.get_meta(WRITING)
    report = ingest_hashing(reader, corpus_papers[4:8])
    assert report.added == 2 and reader.get_meta(COPY) not in (None, "", tag)
    after = _store(tmp_path, indexes)
    vector = EMBEDDER.embed_query(corpus_papers[7].abstract[:200])
    assert after._read_copy() is not None
    assert after.nearest("chunks", vector, 1, Filter())[0].paper_id == corpus_papers[7].paper_id


def test_index_files_changed_from_outside_are_read_themselves(
    tmp_path: Path, corpus_papers: list[Paper]
):
    indexes = ExactIndexes()
    ingest_hashing(_store(tmp_path, indexes), corpus_papers[:6])
    indexes.touch()  # restored from a backup, say: the copy may not be what they hold
    reader = _store(tmp_path, indexes)
    assert reader._read_copy() is None
    reader.nearest("chunks", EMBEDDER.embed_query("cells"), 3, Filter())
    assert indexes.probes == 1


@pytest.mark.parametrize("damage", ["cut", "zeros", "vectors", "foreign", "gone"])
def test_a_damaged_copy_is_never_read_and_the_next_ingest_makes_it_again(
    tmp_path: Path, corpus_papers: list[Paper], damage: str
):
    indexes = ExactIndexes()
    ingest_hashing(_store(tmp_path, indexes), corpus_papers[:6])
    copy = tmp_path / COPY_FILE
    data = copy.read_bytes()
    if damage == "cut":
        copy.write_bytes(data[: len(data) // 2])
    elif damage == "zeros":
        copy.write_bytes(data[:100] + bytes(len(data) - 100))
    elif damage == "vectors":  # past the tag: the file still names the catalog's copy
        middle = len(data) // 2
        copy.write_bytes(data[:middle] + bytes(4096) + data[middle + 4096 :])
    elif damage == "foreign":  # another store's copy put in its place
        other = tmp_path / "other"
        other.mkdir()
        ingest_hashing(_store(other, ExactIndexes()), corpus_papers[6:9])
        copy.write_bytes((other / COPY_FILE).read_bytes())
    else:
        copy.unlink()
    left = tmp_path / f".{COPY_FILE}.4242.tmp"  # a writer killed while it wrote one
    left.write_bytes(data[:1000])
    reader = _store(tmp_path, indexes)
    assert reader._read_copy() is None
    vector = EMBEDDER.embed_query(corpus_papers[3].abstract[:200])
    assert reader.nearest("chunks", vector, 1, Filter())[0].paper_id == corpus_papers[3].paper_id
    report = ingest_hashing(_store(tmp_path, indexes))  # a run with nothing new
    assert report.added == 0 and _store(tmp_path, indexes)._read_copy() is not None
    assert not left.exists()


def test_a_store_past_the_bound_keeps_no_copy(tmp_path: Path, corpus_papers: list[Paper]):
    indexes = ExactIndexes()
    store = _store(tmp_path, indexes, copy_vectors=60)
    ingest_hashing(store, corpus_papers[:2])
    assert (tmp_path / COPY_FILE).is_file()
    left = tmp_path / f".{COPY_FILE}.4242.tmp"  # a writer killed while it wrote a copy
    left.write_bytes(b"half a copy")
    ingest_hashing(store, corpus_papers[2:12])  # more than 60 chunk and sentence vectors
    assert not (tmp_path / COPY_FILE).exists() and store._read_copy() is None
    assert not left.exists()  # removed though no copy is written
    vector = EMBEDDER.embed_query(corpus_papers[9].abstract[:200])
    assert store.nearest("chunks", vector, 1, Filter())[0].paper_id == corpus_papers[9].paper_id


def test_a_reader_with_another_embedder_never_reads_the_copy(
    tmp_path: Path, corpus_papers: list[Paper]
):
    """Its queries would be compared with vectors of another model; the index it then opens
    refuses it by name (``test_ingest.py``: the store refuses a different embedder)."""
    indexes = ExactIndexes()
    ingest_hashing(_store(tmp_path, indexes), corpus_papers[:3])
    assert _store(tmp_path, indexes)._read_copy() is not None
    other = LocalStore(
        Catalog(tmp_path / CATALOG_FILE),
        indexes,
        "abstracts",
        keeps_sentences=True,
        query_embedder=lambda: "another-model@256",
    )
    assert other._read_copy() is None


def test_info_says_whether_reads_use_the_copy(tmp_path: Path, corpus_papers: list[Paper]):
    from assistant import Assistant

    settings = load_settings(store={"path": tmp_path / "s"}, embedding={"provider": "hashing"})
    with Assistant(settings) as assistant:
        assistant.ingest_papers(corpus_papers[:3])
        assert assistant.info()["read_copy"].startswith("vectors.npz, 0.")
    off = settings.model_copy(update={"store": settings.store.model_copy(update={"read_copy": 0})})
    with Assistant(off) as assistant:
        assert assistant.info()["read_copy"].startswith("none (turned off")


def test_a_run_that_changes_nothing_keeps_the_copy(tmp_path: Path, corpus_papers: list[Paper]):
    indexes = ExactIndexes()
    store = _store(tmp_path, indexes)
    ingest_hashing(store, corpus_papers[:6])
    tag, written = store.get_meta(COPY), (tmp_path / COPY_FILE).stat().st_mtime_ns
    report = ingest_hashing(store, corpus_papers[:6])
    assert report.unchanged == 6 and store.get_meta(COPY) == tag
    assert (tmp_path / COPY_FILE).stat().st_mtime_ns == written


def test_a_reader_that_looked_during_a_run_reads_the_new_copy_once_it_ends(
    tmp_path: Path, corpus_papers: list[Paper], monkeypatch: pytest.MonkeyPatch
):
    """The writer names its new copy after the catalog's generation last moved: a long-lived
    reader (``chat``) that looked in between must not read the indexes from then on."""
    indexes = ExactIndexes()
    ingest_hashing(_store(tmp_path, indexes), corpus_papers[:4])
    reader = _store(tmp_path, indexes)
    assert reader._read_copy() is not None
    keep = LocalStore._keep_copy

    def looked_at_first(self: LocalStore) -> None:
        assert reader._read_copy() is None  # the run has changed the vectors
        keep(self)

    monkeypatch.setattr(LocalStore, "_keep_copy", looked_at_first)
    ingest_hashing(_store(tmp_path, indexes), corpus_papers[4:6])
    copy = reader._read_copy()
    assert copy is not None and copy.tag == reader.get_meta(COPY)
    vector = EMBEDDER.embed_query(corpus_papers[5].abstract[:200])
    assert reader.nearest("chunks", vector, 1, Filter())[0].paper_id == corpus_papers[5].paper_id
