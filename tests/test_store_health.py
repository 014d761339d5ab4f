"""Derived indexes are never trusted past the catalog: after any interruption, every ready paper
is findable by the lexical side too. Fast: the hashing embedder, no model."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from assistant import Assistant, load_settings
from assistant.embedding.embedders import Embedder, HashingEmbedder
from assistant.ingest.corpus import Paper
from tests.conftest import write_seed


class _DiesAfter(Embedder):
    """The hashing embedder, interrupted on its n-th call (as Ctrl-C or a crash would)."""

    def __init__(self, calls: int):
        self.inner = HashingEmbedder()
        self.name, self.dim = self.inner.name, self.inner.dim
        self.left = calls

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.left -= 1
        if self.left < 0:
            raise KeyboardInterrupt
        return self.inner.embed(texts)


def test_lexical_index_catches_up_after_a_run_dies_between_batches(
    tmp_path: Path, corpus_papers: list[Paper]
):
    seeds = write_seed(tmp_path / "p.txt", [p.abstract for p in corpus_papers[:12]])
    settings = load_settings(
        store={"path": tmp_path / "s"},
        embedding={"provider": "hashing", "papers_per_write": 4},
    )
    with Assistant(settings, embedder=HashingEmbedder()) as first:
        first.ingest([write_seed(tmp_path / "one.txt", [corpus_papers[20].abstract])])
        assert first.search("cache", k=3) is not None  # a search builds the lexical index
    # Two calls per batch (chunks, sentences): the run dies in the third batch, two batches ready.
    with Assistant(settings, embedder=_DiesAfter(calls=5)) as dying:
        with pytest.raises(KeyboardInterrupt):
            dying.ingest([seeds])
    with Assistant(settings, embedder=HashingEmbedder()) as reader:
        ready = {p.paper_id for p in reader.store.catalog.iter_ready()}
        assert len(ready) == 1 + 8
        reader.search("anything at all", k=1)
        assert (
            set(reader.store.lexical_index.paper_ids()) == ready
        )  # nothing ready is missing from BM25
        for paper in corpus_papers[:8]:
            words = " ".join(paper.abstract.split()[:12])
            hits = reader.store.lexical_index.search(words, 3, None)
            assert hits and hits[0][0] in ready
