"""A paper's fingerprint is its title and abstract, not where it sits in a file: inserting,
moving or deleting lines embeds nothing but new or edited text, and a store written when the
fingerprint included the position is recognised, not re-embedded. Embeddings are counted around
the real hashing embedder, with the real ingest, catalog and Chroma."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from assistant import Assistant, Paper, load_settings
from assistant.cli.render import ingest_summary
from assistant.embedding.embedders import Embedder, HashingEmbedder
from assistant.ingest.chunking import sentences_of
from assistant.retrieval.hybrid import check_filters
from assistant.text.normalise import fingerprint
from tests.conftest import rewrite_records, write_seed

NEW = "A brand new abstract about sparse attention for very long contexts. It is short."


class CountingEmbedder(Embedder):
    """The hashing embedder, recording every text it is asked to embed."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder()
        self.name, self.dim = self.inner.name, self.inner.dim
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        return self.inner.embed(texts)


@pytest.fixture()
def counting() -> CountingEmbedder:
    return CountingEmbedder()


@pytest.fixture()
def store(tmp_path: Path, counting: CountingEmbedder) -> Iterator[Assistant]:
    settings = load_settings(store={"path": tmp_path / "store"}, embedding={"provider": "hashing"})
    with Assistant(settings, embedder=counting) as assistant:
        yield assistant


@pytest.fixture()
def five(corpus_papers: list[Paper]) -> list[str]:
    return [p.abstract for p in corpus_papers[:5]]


def _texts_of(a: Assistant, abstract: str) -> list[str]:
    """Everything embedded for one paper: its chunks, then its title and sentences."""
    paper = next(p for p in a.store.catalog.iter_ready() if p.abstract == abstract)
    return [*a.store.catalog.chunks_of(paper.paper_id), *sentences_of(paper)]


def _sources(a: Assistant) -> dict[str, str]:
    """abstract -> source, from the catalog."""
    return {p.abstract: p.source for p in a.store.catalog.iter_ready()}


def _dense_ids(a: Assistant, query: str, **filters: str | int) -> set[str]:
    """Papers the dense side finds under a filter: Chroma's own metadata, not the catalog's."""
    found = a.retriever().candidates(query, 10, check_filters(filters))
    return {pid for pid, _, _ in found.chunks} | {pid for pid, _, _ in found.sentences}


def test_inserting_at_the_top_embeds_only_the_new_abstract(store, counting, tmp_path, five):
    seed = write_seed(tmp_path / "a.txt", five)
    assert store.ingest([seed]).added == 5
    counting.texts.clear()

    write_seed(seed, [NEW, *five])
    report = store.ingest([seed])

    assert (report.added, report.updated, report.unchanged) == (1, 0, 5)
    assert counting.texts == _texts_of(store, NEW)
    assert _sources(store) == {NEW: "a.txt#1"} | {a: f"a.txt#{i}" for i, a in enumerate(five, 2)}
    assert store.ingest([seed]).unchanged == 6  # the new positions are the stored ones


def test_moving_lines_embeds_nothing_and_moves_the_metadata(store, counting, tmp_path, five):
    first, second = (
        write_seed(tmp_path / "a.txt", five[:3]),
        write_seed(tmp_path / "b.txt", five[3:]),
    )
    store.ingest([first, second])
    moved = next(p for p in store.store.catalog.iter_ready() if p.abstract == five[0])
    counting.texts.clear()

    write_seed(first, [five[2], five[1]])  # reversed, and the first one moved to b.txt
    write_seed(second, [five[3], five[0], five[4]])
    report = store.ingest([first, second], prune=True)

    assert (report.added, report.updated, report.unchanged, report.removed) == (0, 0, 5, 0)
    assert counting.texts == []
    assert _sources(store)[five[0]] == "b.txt#2" and _sources(store)[five[2]] == "a.txt#1"
    assert moved.paper_id in _dense_ids(store, moved.abstract, source_file="b.txt")
    assert moved.paper_id not in _dense_ids(store, moved.abstract, source_file="a.txt")


def test_deleting_a_line_removes_one_and_embeds_nothing(store, counting, tmp_path, five):
    seed = write_seed(tmp_path / "a.txt", five)
    store.ingest([seed])
    counting.texts.clear()

    write_seed(seed, five[:2] + five[3:])
    report = store.ingest([seed], prune=True)

    assert (report.added, report.updated, report.unchanged, report.removed) == (0, 0, 4, 1)
    assert counting.texts == []
    assert set(_sources(store)) == set(five) - {five[2]}


def _jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_an_edited_abstract_is_the_only_one_embedded(store, counting, tmp_path, five):
    rows = [{"id": f"p{i}", "abstract": a, "year": 2024} for i, a in enumerate(five)]
    store.ingest([_jsonl(tmp_path / "p.jsonl", rows)])
    counting.texts.clear()

    edited = five[1].replace(".", ", as we show.", 1)
    rows[1] = {**rows[1], "abstract": edited}
    rows[3] = {**rows[3], "year": 2025, "venue": "ICLR"}  # metadata only: updated in place
    report = store.ingest([_jsonl(tmp_path / "p.jsonl", [rows[4], *rows[:4]])])

    assert (report.added, report.updated, report.unchanged, report.edited) == (0, 1, 4, 1)
    assert counting.texts == _texts_of(store, edited)
    console = Console(record=True, width=200)
    ingest_summary(console, report, "S")
    assert "0 added, 1 updated, 4 unchanged (1 with edited details), 0 removed" in (
        console.export_text()
    )
    assert store.store.catalog.papers(["p3"])["p3"].venue == "ICLR"
    assert "p3" in _dense_ids(store, five[3], year=2025, venue="ICLR")
    assert "p3" not in _dense_ids(store, five[3], year=2024)


def test_removed_metadata_is_removed_from_the_vectors(store, tmp_path, five):
    rows = [{"id": "p0", "abstract": five[0], "year": 2024, "venue": "ICLR"}]
    store.ingest([_jsonl(tmp_path / "p.jsonl", rows)])
    store.ingest([_jsonl(tmp_path / "p.jsonl", [{"id": "p0", "abstract": five[0]}])])
    assert _dense_ids(store, five[0], venue="ICLR") == set()
    assert _dense_ids(store, five[0], year=2024) == set()
    assert store.store.catalog.papers(["p0"])["p0"].year is None


def _positional_fingerprint(p: Paper) -> str:
    """How stores were fingerprinted before: file position and metadata included."""
    fields = ("; ".join(p.authors), str(p.year or ""), p.venue or "", p.url or "")
    return fingerprint(p.source, p.abstract, p.title or "", *fields)


def _labelled_fingerprint(p: Paper, label: str) -> str:
    """Older still: the label included too."""
    fields = ("; ".join(p.authors), str(p.year or ""), p.venue or "", p.url or "")
    return fingerprint(p.source, label, p.abstract, p.title or "", *fields)


def test_a_store_with_older_fingerprints_is_not_re_embedded(store, counting, tmp_path, five):
    seed = write_seed(tmp_path / "a.txt", five)
    store.ingest([seed])
    papers = list(store.store.catalog.iter_ready())
    rewrite_records(
        store.store_dir,
        [(papers[0].paper_id, _labelled_fingerprint(papers[0], "Old label…"), "Old label…")]
        + [(p.paper_id, _positional_fingerprint(p), p.label) for p in papers[1:]],
    )
    counting.texts.clear()

    write_seed(seed, [NEW, *five])
    report = store.ingest([seed])

    assert (report.added, report.updated, report.unchanged) == (1, 0, 5)
    assert counting.texts == _texts_of(store, NEW)
    states = store.store.catalog.states()
    assert all(states[p.paper_id][0] == p.fingerprint for p in papers)  # upgraded in place
    assert [p.label for p in store.store.catalog.iter_ready()][:5] == [p.label for p in papers]
