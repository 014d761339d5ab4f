from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from assistant import Assistant, load_settings
from assistant.embedding.embedders import Embedder
from assistant.errors import EmbedderMismatchError
from assistant.store.chroma import ChromaVectors
from tests.conftest import rewrite_records, write_seed


def _consistent(a: Assistant) -> None:
    """Catalog and vectors agree exactly: every ready chunk has one vector, and no extras."""
    counts = a.store.catalog.counts()
    ids = a.store.chunks.ids()
    assert len(ids) == len(set(ids)) == counts["chunks"]
    assert counts["unfinished"] == 0
    assert {i.split(":")[0] for i in ids} == {p.paper_id for p in a.store.catalog.iter_ready()}


def test_reingest_is_idempotent(fresh: Assistant, small_dir: Path):
    first = fresh.ingest([small_dir])
    assert (first.added, first.unchanged, first.files) == (5, 0, 2)
    again = fresh.ingest([small_dir])
    assert (again.added, again.updated, again.unchanged, again.chunks_written) == (0, 0, 5, 0)
    _consistent(fresh)
    assert fresh.info()["papers"] == 5


def test_changed_paper_is_rewritten_without_stale_chunks(
    fresh: Assistant, small_dir: Path, corpus_papers
):
    fresh.ingest([small_dir])
    # Replace a.txt: the first paper's text changes (new id), the 3rd moves up to position 2.
    write_seed(
        small_dir / "a.txt",
        ["A brand new and short abstract about sparse attention.", corpus_papers[2].abstract],
    )
    report = fresh.ingest([small_dir], prune=True)
    # The moved paper is not re-embedded (tests/test_positions.py counts embeddings).
    assert (report.added, report.updated, report.unchanged, report.removed) == (1, 0, 3, 2)
    _consistent(fresh)
    assert fresh.search("sparse attention brand new", k=1)[0].source == "a.txt#1"
    second = corpus_papers[2].paper_id
    assert fresh.store.papers([second])[second].source == "a.txt#2"


def test_relabelling_never_re_embeds(fresh: Assistant, small_dir: Path):
    """Labels are derived from title and abstract, so they are not in the fingerprint: a store
    written with older labels is relabelled in place (older fingerprints: test_positions.py)."""
    fresh.ingest([small_dir])
    papers = list(fresh.store.catalog.iter_ready())
    rewrite_records(
        fresh.store_dir, [(p.paper_id, p.fingerprint, "Stale label") for p in papers[:3]]
    )
    report = fresh.ingest([small_dir])
    assert (report.unchanged, report.updated, report.chunks_written) == (5, 0, 0)
    assert [p.label for p in fresh.store.catalog.iter_ready()] == [p.label for p in papers]
    _consistent(fresh)


def test_prune_only_when_asked(fresh: Assistant, small_dir: Path):
    fresh.ingest([small_dir])
    kept = fresh.ingest([small_dir / "a.txt"])
    assert kept.removed == 0 and fresh.info()["papers"] == 5
    pruned = fresh.ingest([small_dir / "a.txt"], prune=True)
    assert pruned.removed == 2 and fresh.info()["papers"] == 3
    _consistent(fresh)
    assert all(h.source.startswith("a.txt") for h in fresh.search("learning", k=5))


def test_bad_input_does_not_stop_the_batch(fresh: Assistant, small_dir: Path, tmp_path: Path):
    (tmp_path / "bad.txt").write_bytes(b"\x00\x01binary")
    report = fresh.ingest([small_dir, tmp_path / "bad.txt", tmp_path / "nope.csv"])
    assert report.added == 5 and not report.ok and len(report.problems) == 2
    _consistent(fresh)


def test_interrupted_ingest_is_completed_by_the_next_run(
    tmp_path: Path, small_dir: Path, embedder, monkeypatch: pytest.MonkeyPatch
):
    settings = load_settings(store={"path": tmp_path / "s"}, embedding={"papers_per_write": 2})
    # Each batch upserts twice (chunks, then sentences): the process 'dies' in the second
    # batch's sentences, its chunk vectors written and its catalog rows pending.
    calls = []
    upsert = ChromaVectors.upsert

    def dying_upsert(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return upsert(self, *args, **kwargs)

    with Assistant(settings, embedder=embedder) as crashing:
        monkeypatch.setattr(ChromaVectors, "upsert", dying_upsert)
        with pytest.raises(KeyboardInterrupt):
            crashing.ingest([small_dir])
        monkeypatch.undo()
        counts = crashing.store.catalog.counts()
        assert counts["papers"] == 2 and counts["unfinished"] == 2  # batch 2 half-written
        # Search never shows half-written papers.
        assert len(crashing.search("learning", k=10)) == 2
    with Assistant(settings, embedder=embedder) as resumed:
        report = resumed.ingest([small_dir])
        assert report.recovered == 2 and report.unchanged == 2 and report.added == 3
        _consistent(resumed)
        assert resumed.info()["papers"] == 5


def test_a_chunker_change_cut_short_is_finished_by_the_next_run(
    tmp_path: Path, small_dir: Path, embedder, monkeypatch: pytest.MonkeyPatch
):
    """Before: the new chunker was recorded before the papers were rewritten, so after a run
    cut short the next saw no change, and the papers not reached kept the old chunks for good
    (a reviewer's kill: 356 or 615 chunks where a fresh store has 739)."""
    from assistant.store.local import LocalStore

    def settings(tokens: int):
        return load_settings(
            store={"path": tmp_path / "s"},
            embedding={"papers_per_write": 2},
            chunking={"chunk_tokens": tokens, "overlap_tokens": 10},
        )

    with Assistant(settings(200), embedder=embedder) as first:
        first.ingest([small_dir])
    write, calls = LocalStore.write, []

    def cut_after_one_batch(self: LocalStore, batch) -> None:
        if calls:
            raise KeyboardInterrupt
        calls.append(1)
        write(self, batch)

    with Assistant(settings(40), embedder=embedder) as cut:
        monkeypatch.setattr(LocalStore, "write", cut_after_one_batch)
        with pytest.raises(KeyboardInterrupt):
            cut.ingest([small_dir])
        monkeypatch.undo()
    with Assistant(settings(40), embedder=embedder) as resumed:
        resumed.ingest([small_dir])
        _consistent(resumed)
        chunker = resumed._chunker()
        want = sum(len(chunker.split(p)) for p in resumed.store.catalog.iter_ready())
        assert resumed.store.catalog.counts()["chunks"] == want


def test_store_refuses_a_different_embedder(fresh: Assistant, small_dir: Path, tmp_path: Path):
    fresh.ingest([small_dir / "b.txt"])

    class Other(Embedder):
        name, dim = "other-model", 384

        def embed(self, texts):
            return np.zeros((len(texts), 384), dtype=np.float32)

    with Assistant(fresh.settings, embedder=Other()) as other:
        with pytest.raises(EmbedderMismatchError, match="minilm-l6-v2-int8@256"):
            other.search("anything")


def test_lexical_index_follows_another_writer(fresh: Assistant, small_dir: Path):
    fresh.ingest([small_dir])
    assert fresh.search("learning", k=3)
    # Another process changes the catalog: this one's lexical view catches up on its next search.
    fresh.store.catalog.bump_generation()
    hits = fresh.search("learning", k=3)
    assert hits and fresh.store.lexical_index.current().stamp == fresh.store.stamp()


def test_sigkill_mid_ingest_is_repaired_by_the_next_run(tmp_path: Path, corpus_papers, embedder):
    """A real crash: the ingest process is SIGKILLed between journalled batches."""
    import os
    import signal
    import sqlite3
    import subprocess
    import sys
    import time

    folder = tmp_path / "papers"
    folder.mkdir()
    write_seed(folder / "all.txt", [p.abstract for p in corpus_papers[:30]])
    store = tmp_path / "store"
    env = {**os.environ, "ASSISTANT_EMBEDDING__PAPERS_PER_WRITE": "3"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "assistant", "ingest", str(folder), "--store", str(store)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    catalog = store / "catalog.sqlite3"
    deadline = time.time() + 120
    ready = 0
    while time.time() < deadline and proc.poll() is None:
        if catalog.exists():
            try:
                with sqlite3.connect(catalog) as db:
                    ready = db.execute(
                        "SELECT COUNT(*) FROM papers WHERE state='ready'"
                    ).fetchone()[0]
            except sqlite3.Error:
                ready = 0
            if ready >= 6:
                break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert 6 <= ready < 30, "the kill should land in the middle of the ingest"

    settings = load_settings(store={"path": store})
    with Assistant(settings, embedder=embedder) as resumed:
        report = resumed.ingest([folder])
        assert report.unchanged >= 6 and report.added + report.unchanged == 30
        _consistent(resumed)
        assert resumed.info()["papers"] == 30


def test_an_edit_without_id_is_said_to_leave_the_old_version(tmp_path: Path):
    """Without an id an edited abstract is a new paper: the run says the old one is still
    there, and --prune with every path takes it out."""
    from assistant.embedding.embedders import HashingEmbedder

    source = tmp_path / "m.jsonl"
    lines = ['{"abstract": "Svalbard glaciers thin 4.2 metres a year."}', '{"abstract": "Bees."}']
    source.write_text("\n".join(lines) + "\n")
    settings = load_settings(store={"path": tmp_path / "s"})
    with Assistant(settings, embedder=HashingEmbedder()) as a:
        assert a.ingest([source]).warnings == []
        source.write_text(source.read_text().replace("4.2", "6.8"))
        report = a.ingest([source])
        assert (report.added, report.unchanged) == (1, 1)
        assert report.warnings == [
            "1 paper(s) ingested earlier from m.jsonl are no longer in it (edited or deleted); "
            "they stay searchable until `assistant ingest` is run with --prune and every path "
            "the store should keep"
        ]
        pruned = a.ingest([source], prune=True)
        assert pruned.removed == 1 and pruned.warnings == []
        assert "6.8" in a.search("Svalbard glaciers", k=1)[0].text


def test_a_write_larger_than_chroma_takes_at_once_is_sent_in_parts(tmp_path: Path, corpus_papers):
    """A reviewer's 4,000 papers in one write (``papers_per_write`` allows 5,000): Chroma
    refused the upsert ("Batch size of 11535 is greater than max batch size of 5461") and left
    every paper unfinished. 95 papers of two abstracts each make ~1,600 sentence vectors, more
    than two calls of this test's limit."""
    from assistant.embedding.embedders import HashingEmbedder
    from assistant.store.chroma import vectors as chroma

    shifted = corpus_papers[30:] + corpus_papers[:30]
    pairs = zip(corpus_papers, shifted, strict=True)
    source = write_seed(tmp_path / "long.txt", [a.abstract + " " + b.abstract for a, b in pairs])
    settings = load_settings(store={"path": tmp_path / "store"}, embedding={"papers_per_write": 95})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(chroma, "UPSERT_BATCH", 500)
        with Assistant(settings, embedder=HashingEmbedder()) as a:
            result = a.ingest([source])
            assert result.added == 95
            _consistent(a)
            sentences = a.store.sentences
            assert sentences is not None and len(sentences.ids()) > 2 * 500
            assert a.info()["problems"] == []
