"""One contract, three stores: the product's LocalStore (SQLite, Chroma, bm25s), the
ServerStore (everything on a real `chroma run` server, a cache in the folder) and LocalStore
over the exact in-memory vector index answer the same questions the same way, through the same
ingest and search code."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from assistant import Assistant, Paper, load_settings
from assistant.embedding.embedders import HashingEmbedder
from assistant.store import Filter
from assistant.store.catalog import CATALOG_FILE, Catalog
from assistant.store.exact import ExactIndexes
from assistant.store.local import LocalStore


@pytest.fixture(params=["local", "server", "exact"])
def assistant(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Assistant]:
    store: dict[str, object] = {"path": tmp_path / "s"}
    if request.param == "server":  # a collection of its own on the session's server
        store.update(
            chroma_url=request.getfixturevalue("chroma_server"),
            collection=f"contract-{uuid.uuid4().hex[:12]}",
        )
    settings = load_settings(store=store, embedding={"papers_per_write": 3})
    backend = None
    if request.param == "exact":
        (tmp_path / "s").mkdir()
        catalog = Catalog(tmp_path / "s" / CATALOG_FILE)
        backend = LocalStore(catalog, ExactIndexes(), "abstracts", keeps_sentences=True)
    with Assistant(settings, embedder=HashingEmbedder(), backend=backend) as a:
        yield a
    if backend is not None:
        backend.close()


def _papers(corpus_papers: list[Paper], n: int = 8) -> list[Paper]:
    """Papers with metadata to filter on: even ones from 2024 at ICML, odd ones from 2025."""
    return [
        replace(p, year=2024 + i % 2, venue="ICML" if i % 2 == 0 else "NeurIPS")
        for i, p in enumerate(corpus_papers[:n])
    ]


def test_write_then_read(assistant: Assistant, corpus_papers: list[Paper]):
    papers = _papers(corpus_papers)
    report = assistant.ingest_papers(papers)
    store = assistant.store
    assert report.added == 8 and store.has_ready()
    assert store.counts()["papers"] == 8 and store.counts()["unfinished"] == 0
    assert set(store.entries()) == {p.paper_id for p in papers}
    assert all(e.state == "ready" for e in store.entries().values())
    got = store.papers([papers[0].paper_id, "no-such-paper"])
    assert list(got) == [papers[0].paper_id] and got[papers[0].paper_id].year == 2024
    sizes = store.sizes()
    assert sizes["vectors"] == store.counts()["chunks"] and sizes["lexical"] == 8
    first = store.chunks_of(papers[0].paper_id)
    assert first and store.chunk_texts([f"{papers[0].paper_id}:0"]) == {
        f"{papers[0].paper_id}:0": first[0]
    }
    assert not store.health().problems()


def test_nearest_and_lexical_honour_the_filter(assistant: Assistant, corpus_papers: list[Paper]):
    papers = _papers(corpus_papers)
    assistant.ingest_papers(papers)
    store = assistant.store
    query = papers[1].abstract[:200]
    vector = assistant.embedder.embed_query(query)
    best = store.nearest("chunks", vector, 5, Filter())
    assert best[0].paper_id == papers[1].paper_id and best[0].similarity > 0.5
    assert [m.similarity for m in best] == sorted((m.similarity for m in best), reverse=True)
    in_2024 = {p.paper_id for p in papers if p.year == 2024}
    assert {m.paper_id for m in store.nearest("chunks", vector, 50, Filter(year=2024))} <= in_2024
    assert {m.paper_id for m in store.nearest("sentences", vector, 50, Filter(year=2024))} <= (
        in_2024
    )
    assert store.lexical(query, 3, Filter())[0][0] == papers[1].paper_id
    only = frozenset({papers[2].paper_id, papers[4].paper_id})
    assert {p for p, _ in store.lexical(query, 10, Filter(paper_ids=only))} <= only
    assert store.matching(Filter(venue="NeurIPS")) == {p.paper_id for p in papers if p.year == 2025}
    # whatever its case and spacing: a user types "neurips" (found nothing, exit 0, before)
    assert store.matching(Filter(venue=" neurips ")) == store.matching(Filter(venue="NeurIPS"))
    assert store.matching(Filter(venue="NeurIPS", year=2024)) == set()


def test_update_and_remove(assistant: Assistant, corpus_papers: list[Paper]):
    papers = _papers(corpus_papers)
    assistant.ingest_papers(papers)
    moved = [replace(p, venue="ICLR") for p in papers[:2]]
    report = assistant.ingest_papers([*moved, *papers[2:6]], prune=True)
    assert (report.unchanged, report.removed, report.added) == (6, 2, 0)
    store = assistant.store
    assert set(store.entries()) == {p.paper_id for p in papers[:6]}
    assert store.matching(Filter(venue="ICLR")) == {p.paper_id for p in moved}
    vector = assistant.embedder.embed_query(papers[0].abstract[:200])
    near = store.nearest("chunks", vector, 3, Filter(venue="ICLR"))
    assert near and near[0].paper_id == papers[0].paper_id  # the vectors carry the new venue
    gone = papers[7].paper_id
    assert not store.papers([gone]) and all(
        m.paper_id != gone for m in store.nearest("sentences", vector, 100, Filter())
    )
    assert store.term_counts(["learn"])[1] == 6


def test_search_and_ask_end_to_end(assistant: Assistant, corpus_papers: list[Paper]):
    papers = _papers(corpus_papers)
    assistant.ingest_papers(papers)
    title_words = papers[3].abstract.split(".")[0]
    hits = assistant.search(title_words, k=3)
    assert hits[0].paper_id == papers[3].paper_id
    assert all(h.paper.year == 2025 for h in assistant.search(title_words, filters={"year": 2025}))
    answer = assistant.ask(title_words)  # the paper's opening sentence, asked back
    assert not answer.refused and answer.retrieved[0].paper_id == papers[3].paper_id
    assert papers[3].paper_id in {answer.paper_of(c).paper_id for c in answer.citations}


def test_a_rewritten_paper_keeps_no_field_it_lost(assistant: Assistant, corpus_papers: list[Paper]):
    papers = _papers(corpus_papers, 4)
    assistant.ingest_papers(papers)
    changed = replace(papers[0], year=None, abstract=papers[0].abstract + " A closing remark.")
    report = assistant.ingest_papers([changed, *papers[1:]])
    assert (report.updated, report.unchanged) == (1, 3)
    store = assistant.store
    vector = assistant.embedder.embed_query(changed.abstract[:200])
    for kind in ("chunks", "sentences"):
        found = {m.paper_id for m in store.nearest(kind, vector, 50, Filter(year=2024))}
        assert papers[2].paper_id in found and papers[0].paper_id not in found, kind
    assert store.papers([changed.paper_id])[changed.paper_id].year is None


def test_chromadb_is_the_series_the_store_was_tested_with():
    """A canary: the store reaches Chroma through its public client only, but how a kill or a
    damaged file shows (tests/test_damage.py, test_kill.py) is Chroma's behaviour. Another
    version is run through those tests before the pin in pyproject.toml moves."""
    import tomllib
    from importlib.metadata import version

    from packaging.specifiers import SpecifierSet

    from tests.conftest import ROOT

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (pin,) = [d for d in project["dependencies"] if d.startswith("chromadb")]
    installed = version("chromadb")
    assert installed in SpecifierSet(pin.removeprefix("chromadb")), (
        f"chromadb {installed} is installed, but the store was tested with {pin} (pyproject.toml):"
        " run tests/test_damage.py, test_kill.py and test_concurrency.py on it, then move the pin"
    )
