"""Filtered search returns what an exact filtered search returns: the product's store
(SQLite, Chroma, bm25s) against the same store over the exact in-memory vector index, on both
dense paths (vectors read and scored exactly for a few papers, Chroma's search restricted to ids
for many) and BM25 under a filter."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import chromadb
import numpy as np
import pytest
from chromadb.config import Settings

from assistant import Assistant, Paper, load_settings
from assistant.embedding.embedders import HashingEmbedder
from assistant.store import Filter, filtered
from assistant.store import local as local_module
from assistant.store.base import Match, Store
from assistant.store.catalog import CATALOG_FILE, Catalog
from assistant.store.chroma.vectors import ChromaVectors
from assistant.store.exact import ExactIndexes
from assistant.store.local import LocalStore

RARE = "Zora Quispe"  # an author on three papers


def _papers(corpus_papers: list[Paper]) -> list[Paper]:
    return [
        replace(
            p,
            year=2020 + i % 5,
            venue=f"Venue {i % 3}",
            authors=(*p.authors, RARE) if i % 30 == 7 else p.authors,
        )
        for i, p in enumerate(corpus_papers)
    ]


@pytest.fixture(scope="module")
def stores(
    tmp_path_factory: pytest.TempPathFactory, corpus_papers: list[Paper]
) -> Iterator[tuple[Assistant, Assistant, list[Paper]]]:
    papers = _papers(corpus_papers)
    folder = tmp_path_factory.mktemp("filtered")
    local = Assistant(load_settings(store={"path": folder / "s"}), embedder=HashingEmbedder())
    (folder / "m").mkdir()
    exact_store = LocalStore(
        Catalog(folder / "m" / CATALOG_FILE),
        ExactIndexes(),
        "abstracts",
        keeps_sentences=True,
        copy_vectors=0,  # the reference: every vector scored by the index itself
    )
    memory = Assistant(
        load_settings(store={"path": folder / "m"}),
        embedder=HashingEmbedder(),
        backend=exact_store,
    )
    local.ingest_papers(papers)
    memory.ingest_papers(papers)
    yield local, memory, papers
    local.close()
    memory.close()
    exact_store.close()


FILTERS = [
    Filter(year=2022),  # a fifth of the papers
    Filter(author="quispe"),  # three papers
    Filter(venue="Venue 1", year=2021),
    Filter(year_min=2023),
    Filter(author="quispe", year=2022),
    Filter(year=1999),  # none
]


@pytest.fixture(params=["copy", "exact", "overfetch", "index", "metadata"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, stores) -> str:
    """Which dense path the local store takes: its read copy (``read_copy``), or Chroma,
    whose vectors are read and scored exactly when few. Every filter here keeps few vectors,
    so Chroma's other paths are taken by lowering the bounds to nothing: the unfiltered
    search asked for more and filtered, its search among ids, and for sentences of many
    papers its metadata filter."""
    if request.param == "copy":
        assert stores[0].store._read_copy() is not None
        return "copy"
    monkeypatch.setattr(stores[0].store, "copy_vectors", 0)
    if request.param != "exact":
        monkeypatch.setattr(filtered, "EXACT_VECTORS", 0)
    if request.param in ("index", "metadata"):
        monkeypatch.setattr(filtered, "OVERFETCH_MOST", 0)
    if request.param == "metadata":
        monkeypatch.setattr(filtered, "SENTENCE_PAPERS", 0)
    return str(request.param)


def _truth_nearest(store: Store, kind: str, vector: np.ndarray, n: int, where: Filter):
    """Every vector, unfiltered, then the filter applied: the ground truth."""
    everything = store.nearest(kind, vector, 10_000, Filter())  # type: ignore[arg-type]
    accepted = store.matching(where)
    return [m for m in everything if m.paper_id in accepted][:n]


@pytest.mark.parametrize("where", FILTERS, ids=str)
@pytest.mark.parametrize("kind", ["chunks", "sentences"])
def test_nearest_under_a_filter_is_the_exact_filtered_search(stores, path, where, kind):
    local, memory, papers = stores
    queries = (papers[12].abstract[:150], papers[37].abstract[-100:], "protein folding in cells")
    for query in queries:
        vector = local.embedder.embed_query(query)
        got = local.store.nearest(kind, vector, 8, where)
        want = memory.store.nearest(kind, vector, 8, where)
        assert [m.item_id for m in got] == [m.item_id for m in want], (path, query)
        assert np.allclose([m.similarity for m in got], [m.similarity for m in want], atol=1e-4)
        assert [m.item_id for m in got] == [
            m.item_id for m in _truth_nearest(local.store, kind, vector, 8, where)
        ]
        assert {m.paper_id for m in got} <= memory.store.matching(where)


@pytest.mark.parametrize("where", FILTERS[:4], ids=str)
def test_a_search_for_papers_may_stop_at_the_last_one_and_keeps_their_best_vectors(
    stores, path, where
):
    """Asked for n vectors of at most ``papers`` papers (each kept by its best), a search may
    answer with fewer: the first of the n that hold that many papers. Each paper's best
    vector, and which papers, are those of the whole answer."""
    local, memory, papers = stores
    shorter = []
    for query in (papers[12].abstract[:150], papers[37].abstract[-100:], "protein folding"):
        vector = local.embedder.embed_query(query)
        want = memory.store.nearest("sentences", vector, 40, where)
        got = local.store.nearest("sentences", vector, 40, where, papers=3)
        assert [m.item_id for m in got] == [m.item_id for m in want[: len(got)]], path
        assert _best_of_papers(got, 3) == _best_of_papers(want, 3)
        shorter.append(len(got) < len(want))
    # Only the unfiltered search asked for more stops sooner (it asks for fewer).
    assert any(shorter) == (path == "overfetch")


def _best_of_papers(matches, papers: int) -> list[str]:
    best: dict[str, str] = {}
    for m in matches:
        best.setdefault(m.paper_id, m.item_id)
    return list(best.values())[:papers]


def test_papers_asked_for_make_the_unfiltered_search_ask_for_fewer():
    """A year keeping a tenth: 600 sentences need ~7,000 asked for, 100 papers (3 sentences
    each at most) ~3,700; what was held decides how many more are asked for."""
    allowed = filtered.Allowed(frozenset({"a"}), {"a": 1}, share=0.1)
    assert filtered.overfetch(600, allowed) == 6980
    assert filtered.overfetch(600, allowed, papers=100) == 3693
    assert filtered.overfetch(600, allowed, papers=500) == 6980
    match = [Match(f"p{i % 40}:s{i}", f"p{i % 40}", 0.5) for i in range(200)]
    assert filtered.held(match, 600, None) is None
    assert filtered.held(match, 600, 40) == match[:40]
    assert filtered.held(match, 100, 40) == match[:40]
    assert filtered.held(match, 30, 40) == match[:30]
    assert filtered.short_by(match, 600, None) == 3.0
    assert filtered.short_by(match, 600, 100) == 2.5  # 40 papers of 100
    assert filtered.short_by([], 600, 100) == math.inf
    assert filtered.overfetch_again(3693, 2.5) == 11541
    assert filtered.overfetch_again(3693, 5.0) is None  # over twice OVERFETCH_MOST
    assert filtered.overfetch_again(3693, 1.5) == 6925
    assert filtered.overfetch_again(3693, math.inf) is None


@pytest.mark.parametrize("kind", ["chunks", "sentences"])
def test_an_unfiltered_search_that_keeps_too_few_asks_again_then_filters(
    stores, monkeypatch: pytest.MonkeyPatch, kind: str
):
    """The unfiltered search is asked for n plus a margin over the share a filter keeps. When
    its answer holds fewer than n of the kept papers' vectors (here: asked for n only), it is
    asked again for more, in proportion to what it kept; when that is not done either, the
    search is made among the kept papers. The answer is the same each way."""
    local, memory, papers = stores
    monkeypatch.setattr(local.store, "copy_vectors", 0)
    monkeypatch.setattr(filtered, "EXACT_VECTORS", 0)
    asked: list[int] = []
    query = LocalStore._query

    def counted(self, index, vector, n, where, ids=None):  # type: ignore[no-untyped-def]
        if self is local.store and ids is None and not where:
            asked.append(n)  # an unfiltered search
        return query(self, index, vector, n, where, ids)

    monkeypatch.setattr(LocalStore, "_query", counted)
    where = Filter(year=2022)  # a fifth of the papers
    queries = (papers[12].abstract[:150], papers[37].abstract[-100:], "protein folding")
    unfiltered = []
    for case in ("margin", "again", "filtered"):
        if case != "margin":  # asked for 8: fewer than 8 of theirs among them
            monkeypatch.setattr(local_module, "overfetch", lambda n, allowed, papers=None: n)
        if case == "filtered":
            monkeypatch.setattr(local_module, "overfetch_again", lambda *args: None)
        for text in queries:
            asked.clear()
            vector = local.embedder.embed_query(text)
            got = local.store.nearest(kind, vector, 8, where)
            want = memory.store.nearest(kind, vector, 8, where)
            assert [m.item_id for m in got] == [m.item_id for m in want], (text, case)
            unfiltered.append((case, len(asked), asked[0] > 8 if asked else None))
    assert unfiltered == [
        *[("margin", 1, True)] * 3,  # 8 of theirs among the ~90 asked for
        *[("again", 2, False)] * 3,  # then asked again for more
        *[("filtered", 1, False)] * 3,  # or searched among theirs
    ]


@pytest.mark.parametrize("where", FILTERS, ids=str)
def test_lexical_under_a_filter_is_the_unfiltered_ranking_filtered(stores, where):
    local, memory, papers = stores
    accepted = memory.store.matching(where)
    assert local.store.matching(where) == accepted
    for query in (papers[12].abstract[:150], "cells protein expression", "tumour"):
        got = local.store.lexical(query, 5, where)
        everything = local.store.lexical(query, 10_000, Filter())
        assert got == [pair for pair in everything if pair[0] in accepted][:5]
        assert [pid for pid, _ in got] == [pid for pid, _ in memory.store.lexical(query, 5, where)]


def test_search_with_filters_matches_the_reference(stores, path):
    local, memory, papers = stores
    for filters in ({"year": 2022}, {"author": "Quispe"}, {"year": "2021..2022"}):
        for query in (papers[40].abstract[:120], "gene expression"):
            got = [h.paper_id for h in local.search(query, k=5, filters=filters)]
            want = [h.paper_id for h in memory.search(query, k=5, filters=filters)]
            assert got == want, (path, filters, query)
            assert got, filters


@pytest.mark.parametrize("path", ["exact", "ids"])
def test_a_missing_chunk_vector_falls_back_to_the_metadata_filter(
    tmp_path: Path, corpus_papers: list[Paper], monkeypatch: pytest.MonkeyPatch, path: str
):
    """Chroma refuses a search among ids it lacks; a vector lost from the index (repaired by
    the next ingest) must not make a filtered search fail, on either path: among ids (then
    made with the metadata filter) or read and scored exactly (the vectors that came back)."""
    if path == "ids":
        monkeypatch.setattr(filtered, "EXACT_VECTORS", 0)
    papers = _papers(corpus_papers[:20])
    with Assistant(
        load_settings(store={"path": tmp_path / "s", "read_copy": 0}), embedder=HashingEmbedder()
    ) as local:
        local.ingest_papers(papers)
        lost = f"{papers[2].paper_id}:0"  # 2022
        name = local.store._name("chunks")  # type: ignore[attr-defined]
        client = chromadb.PersistentClient(  # the settings the store's own client has
            path=str(tmp_path / "s" / "chroma"), settings=Settings(anonymized_telemetry=False)
        )
        client.get_collection(name).delete(ids=[lost])
        local.store.forget_vectors()
        vector = local.embedder.embed_query(papers[2].abstract[:150])
        found = local.store.nearest("chunks", vector, 5, Filter(year=2022))
        assert found and lost not in {m.item_id for m in found}
        assert {m.paper_id for m in found} <= local.store.matching(Filter(year=2022))


def test_a_new_paper_is_found_by_the_same_filter(tmp_path: Path, corpus_papers: list[Paper]):
    """Resolved filters are kept per catalog generation: an ingest between two searches shows."""
    papers = _papers(corpus_papers[:20])
    with Assistant(
        load_settings(store={"path": tmp_path / "s"}), embedder=HashingEmbedder()
    ) as local:
        local.ingest_papers(papers[:10])
        query = papers[15].abstract[:150]
        before = {h.paper_id for h in local.search(query, k=5, filters={"author": "quispe"})}
        assert before == {papers[7].paper_id}
        local.ingest_papers([replace(papers[15], authors=(RARE,))])
        after = {h.paper_id for h in local.search(query, k=5, filters={"author": "quispe"})}
        assert after == {papers[7].paper_id, papers[15].paper_id}


def test_an_edited_year_is_found_by_a_reader_kept_open(tmp_path: Path, corpus_papers: list[Paper]):
    """A record edited but not its text (a year corrected) is written in place, not embedded
    again; a reader kept open (chat, the API) still resolved filters from the old years, as
    the catalog's generation stayed: a trial's `year=2031` found nothing."""
    papers = _papers(corpus_papers[:10])
    settings = load_settings(store={"path": tmp_path / "s"})
    with Assistant(settings, embedder=HashingEmbedder()) as writer:
        writer.ingest_papers(papers)
        with Assistant(settings, embedder=HashingEmbedder()) as reader:
            query = papers[3].abstract[:150]
            assert reader.search(query, k=3, filters={"year": 2031}) == []
            report = writer.ingest_papers([*papers[:3], replace(papers[3], year=2031)])
            assert report.chunks_written == 0 and report.edited == 1  # nothing embedded again
            found = reader.search(query, k=3, filters={"year": 2031})
            assert [h.paper_id for h in found] == [papers[3].paper_id]


def test_a_filters_vectors_are_read_once_and_read_anew_after_an_ingest(
    tmp_path: Path, corpus_papers: list[Paper], monkeypatch: pytest.MonkeyPatch
):
    """The exact path's vectors do not depend on the query: they are read while it is
    embedded, once per filter (a chat's next question under the same filter reads none), and
    again once an ingest has changed the catalog."""
    papers = _papers(corpus_papers[:20])
    reads: list[int] = []
    real = ChromaVectors.get_vectors

    def counted(self: ChromaVectors, ids):
        reads.append(len(ids))
        return real(self, ids)

    monkeypatch.setattr(ChromaVectors, "get_vectors", counted)
    with Assistant(
        load_settings(store={"path": tmp_path / "s", "read_copy": 0}), embedder=HashingEmbedder()
    ) as local:
        local.ingest_papers(papers)
        reads.clear()
        first = local.search(papers[7].abstract[:150], k=3, filters={"author": "quispe"})
        assert first and len(reads) == 2  # the chunks, the sentences
        again = local.search(papers[7].abstract[:150], k=3, filters={"author": "quispe"})
        assert again == first and len(reads) == 2
        local.search("another question", k=3, filters={"author": "quispe"})
        assert len(reads) == 2
        edited = replace(papers[7], abstract="Coral reefs bleach in marine heatwaves. " * 3)
        local.ingest_papers([*papers[:7], edited, *papers[8:]])
        reads.clear()
        hits = local.search("coral reefs bleach", k=3, filters={"author": "quispe"})
        assert len(reads) == 2 and hits[0].paper_id == papers[7].paper_id
