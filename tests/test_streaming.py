"""Ingest reads its input as a stream: memory holds a window of papers, not the corpus."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from assistant import Assistant, Paper, load_settings
from assistant.embedding.embedders import HashingEmbedder
from assistant.ingest.corpus import load_corpus, stream_corpus
from assistant.ingest.pipeline import Ingestor


@pytest.fixture(scope="module")
def big_file(tmp_path_factory: pytest.TempPathFactory, corpus_papers: list[Paper]) -> Path:
    """6,000 distinct abstracts (~8 MB of JSONL) made from the shipped ones."""
    path = tmp_path_factory.mktemp("big") / "many.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for i in range(6000):
            paper = corpus_papers[i % len(corpus_papers)]
            record = {"id": f"p{i}", "title": f"{paper.title} ({i})", "abstract": paper.abstract}
            out.write(json.dumps(record) + "\n")
    return path


def _peak(action) -> int:
    tracemalloc.start()
    try:
        action()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_reading_holds_one_paper_at_a_time(big_file: Path):
    held = _peak(lambda: load_corpus([big_file]))
    streamed = _peak(lambda: sum(1 for _ in stream_corpus([big_file]).stream()))
    assert held > 8_000_000  # the whole corpus in memory
    assert streamed < held / 8, (streamed, held)


def _plan_peak(store: Path, source: Path) -> tuple[int, int]:
    """Peak memory of an ingest's first pass (what changed) over ``source``, and papers planned."""
    with Assistant(load_settings(store={"path": store}), embedder=HashingEmbedder()) as a:
        a._may_create = True
        ingestor: Ingestor = a._ingestor()
        planned = []
        peak = _peak(lambda: planned.append(ingestor._plan(stream_corpus([source]), set(), False)))
    return peak, len(planned[0].to_write)


def test_planning_holds_ids_not_papers(tmp_path: Path, big_file: Path):
    """Three times the papers, not three times the memory: a window of papers and the ids."""
    small = tmp_path / "few.jsonl"
    small.write_text("".join(big_file.read_text().splitlines(keepends=True)[:2000]))
    few, planned_few = _plan_peak(tmp_path / "a", small)
    many, planned_many = _plan_peak(tmp_path / "b", big_file)
    assert (planned_few, planned_many) == (2000, 6000)
    assert many < 1.5 * few, (few, many)
