"""A reader's handle on an embedded store holds the vector index as Chroma loaded it: a reader
must never stay stale after a write, in this process or another."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from assistant import Assistant, Paper, load_settings
from assistant.embedding.embedders import HashingEmbedder
from assistant.errors import VectorIndexDamagedError
from assistant.store import Filter

COLLECTION = "abstracts"


# Another process's writer: upserts vectors (read from a .npy file) with their papers' metadata.
UPSERT = """
import json, sys
import numpy as np
from pathlib import Path
from assistant.store.chroma import ChromaVectors
path, name, embedder, ids, metas = json.loads(sys.argv[1])
vectors = np.load(sys.argv[2])
opened = ChromaVectors.open(path=Path(path), url=None, collection=name, embedder_name=embedder,
                            dim=vectors.shape[1])
opened.upsert(ids, vectors, None, metas)
"""


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
        assert a.store.chunks.read_only  # type: ignore[attr-defined]
        a.ingest_papers([target])
        assert a.search(query, k=3)[0].paper_id == target.paper_id


def test_a_reader_sees_what_another_writer_in_this_process_ingests(
    tmp_path: Path, corpus_papers: list[Paper]
):
    """Once the catalog says the store changed, the reader closes its handles and opens new
    ones. Rounds of 20 papers (over a thousand vectors in all, past the count at which Chroma
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
            assert reader.store.chunks.read_only  # type: ignore[attr-defined]
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
    a fresh handle. The writer is another process: this one's clients share one index."""
    from dataclasses import replace

    path = tmp_path / "s"
    settings = load_settings(store={"path": path, "read_copy": 0})  # Chroma's handles
    papers = [replace(p, year=2023) for p in corpus_papers[:10]]
    with Assistant(settings, embedder=HashingEmbedder()) as a:
        a.ingest_papers(papers[:5])
    with Assistant(settings, embedder=HashingEmbedder()) as reader:
        assert reader.search(papers[7].abstract[:200], k=3)  # opens both indexes
        vector = reader.embedder.embed_query(papers[7].abstract[:200])
        before = reader.store.nearest("chunks", vector, 3, Filter(year=2023))
        stale = reader.store.chunks
        assert stale.read_only  # type: ignore[attr-defined]
        assert papers[7].paper_id not in [m.paper_id for m in before]
        embedded = reader.embedder.embed([p.abstract for p in papers[5:]])
        np.save(tmp_path / "v.npy", embedded)
        ids = [f"{p.paper_id}:0" for p in papers[5:]]
        job = [str(path / "chroma"), COLLECTION, reader.embedder.name, ids]
        job.append([p.metadata() for p in papers[5:]])
        subprocess.run(  # the writer's upsert, in its own process; the catalog not told yet
            [sys.executable, "-c", UPSERT, json.dumps(job), str(tmp_path / "v.npy")],
            check=True,
            timeout=120,
        )
        with pytest.raises(VectorIndexDamagedError, match="Error finding id"):
            stale.query(vector, 3, Filter(year=2023))
        # A filtered search reads the catalog's ready papers (``assistant.store.filtered``): the
        # vectors of papers not yet ready are not returned; once ready, they are found.
        during = reader.store.nearest("chunks", vector, 3, Filter(year=2023))
        assert papers[7].paper_id not in [m.paper_id for m in during]
        with Assistant(settings, embedder=HashingEmbedder()) as writer:
            writer.ingest_papers(papers)
        after = reader.store.nearest("chunks", vector, 3, Filter(year=2023))
        assert after[0].paper_id == papers[7].paper_id
        assert reader.store.chunks is not stale
