"""The store's journal and repair, on the exact in-memory vector index (no Chroma): a damaged
index is refused to readers in one line and rebuilt from the catalog by the next writer, and a
writer that died inside a vector write leaves a mark that the next command settles."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pytest

from assistant import Paper, load_settings
from assistant.embedding.embedders import HashingEmbedder
from assistant.errors import VectorIndexDamagedError
from assistant.ingest.chunking import Chunker
from assistant.ingest.corpus import LoadResult
from assistant.ingest.pipeline import Ingestor, IngestReport
from assistant.store.base import Filter
from assistant.store.catalog import CATALOG_FILE, Catalog
from assistant.store.exact import ExactIndex, ExactIndexes
from assistant.store.local import WRITING, LocalStore

EMBEDDER = HashingEmbedder()


def _store(folder: Path, indexes: ExactIndexes) -> LocalStore:
    return LocalStore(Catalog(folder / CATALOG_FILE), indexes, "abstracts", keeps_sentences=True)


def ingest_hashing(
    store: LocalStore, papers: Iterable[Paper] = (), batch: int = 64
) -> IngestReport:
    """The ingest `assistant ingest` runs, with the hashing embedder, into ``store``."""
    loaded = LoadResult()
    for paper in papers:
        loaded.add(paper)
    cfg = load_settings().chunking
    chunker = Chunker(cfg.size_for("hashing"), cfg.overlap_tokens)
    with store.writer():
        return Ingestor(store, EMBEDDER, chunker, batch_papers=batch).run(loaded)


def _nearest(store: LocalStore, paper: Paper) -> str:
    vector = EMBEDDER.embed_query(paper.abstract[:200])
    return store.nearest("chunks", vector, 1, Filter())[0].paper_id


def test_a_damaged_index_is_refused_then_rebuilt_from_the_catalog(
    tmp_path: Path, corpus_papers: list[Paper]
):
    indexes = ExactIndexes()
    store = _store(tmp_path, indexes)
    ingest_hashing(store, corpus_papers[:8])
    assert _nearest(store, corpus_papers[5]) == corpus_papers[5].paper_id
    indexes.damage("abstracts-sentences")
    with pytest.raises(VectorIndexDamagedError, match="assistant ingest --repair"):
        _store(tmp_path, indexes).sentence_vectors([f"{corpus_papers[0].paper_id}:s0"])
    report = ingest_hashing(store)  # what `ingest --repair` runs: no input
    assert report.repaired == 8 and store.set_aside() == ["memory (set 1 aside)"]
    assert indexes.aside[0]["abstracts-sentences"].damage  # kept, not deleted
    assert _nearest(store, corpus_papers[5]) == corpus_papers[5].paper_id
    assert store.sentence_vectors([f"{corpus_papers[0].paper_id}:s0"])
    assert store.health().problems() == []
    assert store.get_meta("vectors_rebuilding") is None


def test_a_writer_killed_inside_a_vector_write_leaves_a_mark_the_next_run_settles(
    tmp_path: Path, corpus_papers: list[Paper], monkeypatch: pytest.MonkeyPatch
):
    indexes = ExactIndexes()
    store = _store(tmp_path, indexes)
    ingest_hashing(store, corpus_papers[:4])
    upsert = ExactIndex.upsert

    def killed_halfway(self: ExactIndex, ids, vectors: np.ndarray, documents, metadatas) -> None:
        half = len(ids) // 2
        upsert(self, ids[:half], vectors[:half], None, metadatas[:half])
        raise KeyboardInterrupt  # as close to a SIGKILL as a test in one process gets

    monkeypatch.setattr(ExactIndex, "upsert", killed_halfway)
    with pytest.raises(KeyboardInterrupt):
        ingest_hashing(store, corpus_papers[4:10])
    monkeypatch.setattr(ExactIndex, "upsert", upsert)
    assert store.get_meta(WRITING)  # the mark of a writer that is gone
    assert store.counts()["papers"] == 4  # the batch never became ready

    reader = _store(tmp_path, indexes)  # another command: the probe reads the index whole
    assert _nearest(reader, corpus_papers[1]) == corpus_papers[1].paper_id
    assert not reader.get_meta(WRITING)
    report = ingest_hashing(reader, corpus_papers[4:10])
    assert report.added == 6 and reader.health().problems() == []
    assert _nearest(reader, corpus_papers[7]) == corpus_papers[7].paper_id


def test_a_mark_over_a_damaged_index_sends_readers_to_repair(
    tmp_path: Path, corpus_papers: list[Paper]
):
    indexes = ExactIndexes()
    store = _store(tmp_path, indexes)
    ingest_hashing(store, corpus_papers[:4])
    store.set_meta(WRITING, "12345")  # a writer died here
    indexes.damage("abstracts", "a torn page")
    reader = _store(tmp_path, indexes)
    with pytest.raises(VectorIndexDamagedError, match="a torn page.*ingest --repair"):
        reader.nearest("chunks", EMBEDDER.embed_query("x"), 3, Filter())
    report = ingest_hashing(reader)
    assert report.repaired == 4 and reader.health().problems() == []


def test_indexes_changed_from_outside_are_probed_once_before_they_are_read(
    tmp_path: Path, corpus_papers: list[Paper]
):
    """No mark says an index changed from outside (copied in, restored, damaged): its files'
    fingerprint does. A reader probes such indexes before reading them, once; damage is told
    even on a read of the index that is whole, and the next ingest rebuilds it."""
    indexes = ExactIndexes()
    ingest_hashing(_store(tmp_path, indexes), corpus_papers[:6])
    paper = corpus_papers[2]
    assert _nearest(_store(tmp_path, indexes), paper) == paper.paper_id
    assert indexes.probes == 0  # the writer's own changes are known
    indexes.touch()  # restored from a backup: whole
    for _ in range(3):
        assert _nearest(_store(tmp_path, indexes), paper) == paper.paper_id
    assert indexes.probes == 1
    indexes.damage("abstracts-sentences", "a page of zeros")
    indexes.touch()
    for _ in range(2):  # told each time, never recorded as whole
        with pytest.raises(VectorIndexDamagedError, match="a page of zeros.*ingest --repair"):
            _nearest(_store(tmp_path, indexes), paper)  # the chunk index, which reads
    report = ingest_hashing(_store(tmp_path, indexes), corpus_papers[6:7])  # the next ingest
    assert report.repaired == 6 and report.added == 1
    assert _nearest(_store(tmp_path, indexes), paper) == paper.paper_id


def test_indexes_restored_from_an_older_copy_are_told_until_repaired(
    tmp_path: Path, corpus_papers: list[Paper]
):
    """A backup of the indexes restored beside a newer catalog reads whole, but lacks the
    papers added since: a new user's trial had `ask` answer without them, exit 0, for good
    (the passing probe recorded the new fingerprint). The indexes are compared with the
    catalog too, and the reads refused until a repair embeds what is missing."""
    indexes = ExactIndexes()
    ingest_hashing(_store(tmp_path, indexes), corpus_papers[:6])
    older = corpus_papers[5].paper_id
    for name in ("abstracts", "abstracts-sentences"):
        indexes.open(name).delete_papers([older])
    indexes.touch()
    for _ in range(2):
        with pytest.raises(VectorIndexDamagedError, match="1 paper of the catalog missing"):
            _nearest(_store(tmp_path, indexes), corpus_papers[2])
    report = ingest_hashing(_store(tmp_path, indexes))
    assert report.repaired == 1 and report.dropped == 0
    assert _nearest(_store(tmp_path, indexes), corpus_papers[5]) == older
    # The other way round: indexes newer than the catalog hold vectors of unknown papers.
    stray = EMBEDDER.embed(["a paper this catalog never held"])
    indexes.open("abstracts").upsert(["stray:0"], stray, None, [{"paper_id": "stray"}])
    indexes.touch()
    with pytest.raises(VectorIndexDamagedError, match="1 paper not in the catalog present"):
        _nearest(_store(tmp_path, indexes), corpus_papers[2])
    report = ingest_hashing(_store(tmp_path, indexes))
    assert report.repaired == 0 and report.dropped == 1
    assert _nearest(_store(tmp_path, indexes), corpus_papers[2]) == corpus_papers[2].paper_id


@pytest.mark.parametrize("older", [False, True])
def test_a_repair_cut_inside_a_batch_loses_no_paper(
    tmp_path: Path, corpus_papers: list[Paper], monkeypatch: pytest.MonkeyPatch, older: bool
):
    """Before: the rebuild marked each batch pending, and the next run, given no papers, took
    the cut batch's papers back (a reviewer's kills: 285 papers -> 221). ``older``: a store an
    older version fingerprinted (file position and metadata included), whose papers are judged
    unchanged by their text all the same (before: 95 -> 87)."""
    from assistant.store import local
    from tests.conftest import rewrite_records
    from tests.test_positions import _positional_fingerprint

    indexes = ExactIndexes()
    store = _store(tmp_path, indexes)
    ingest_hashing(store, corpus_papers)
    if older:
        ready = list(store.catalog.iter_ready())
        rewrite_records(
            tmp_path, [(p.paper_id, _positional_fingerprint(p), p.label) for p in ready]
        )
    indexes.damage("abstracts")
    write_vectors, calls = local.write_vectors, []

    def cut_in_the_fourth_batch(*args, **kwargs) -> None:  # the catalog told, no vector written
        if len(calls) == 3:
            raise KeyboardInterrupt
        calls.append(1)
        write_vectors(*args, **kwargs)

    monkeypatch.setattr(local, "write_vectors", cut_in_the_fourth_batch)
    with pytest.raises(KeyboardInterrupt):
        ingest_hashing(store, batch=8)  # what `ingest --repair` runs: no input
    assert store.get_meta("vectors_rebuilding") and len(calls) == 3  # cut inside the rebuild
    monkeypatch.setattr(local, "write_vectors", write_vectors)
    ingest_hashing(store, batch=8)
    assert store.counts()["papers"] == len(corpus_papers) and store.counts()["unfinished"] == 0
    assert store.health().problems() == []
