"""The lexical index updates with the papers that changed: an ingest adds to a delta segment read
from the catalog's change records, and the base is rebuilt only when the delta has grown. What the
two segments return together is what a full rebuild returns. Fast: the hashing embedder."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from assistant import Assistant, Paper, load_settings
from assistant.embedding.embedders import HashingEmbedder
from assistant.store import Filter, segments
from assistant.store.bm25 import LexicalIndex
from assistant.store.segments import analysed
from assistant.text.terms import analyze


def _pointer(store: Path) -> dict:
    return json.loads((store / "bm25" / "current.json").read_text())


def _terms(query: str) -> list[str]:
    return analyze([query])[0]


def test_ingest_updates_the_delta_not_the_base(tmp_path: Path, corpus_papers: list[Paper]):
    store = tmp_path / "s"
    settings = load_settings(store={"path": store})
    papers = corpus_papers[:40]
    with Assistant(settings, embedder=HashingEmbedder()) as a:
        a.ingest_papers(papers[:30])
        base = _pointer(store)  # the first ingest into an empty base builds one
        edited = replace(papers[3], abstract="Zeolite membranes sieve krypton from xenon.")
        report = a.ingest_papers([*papers[:3], edited, *papers[4:29], *papers[30:]], prune=True)
        assert (report.added, report.updated, report.removed) == (10, 1, 1)
        assert _pointer(store) == base  # nothing rebuilt
        lexical = a.store.lexical_index
        ready = {p.paper_id for p in a.store.catalog.iter_ready()}
        assert sorted(lexical.paper_ids()) == sorted(ready) and papers[29].paper_id not in ready
        # New text is found, old text is not, the removed paper is gone.
        assert lexical.search("zeolite krypton xenon", 3, None)[0][0] == edited.paper_id
        old_words = " ".join(papers[3].abstract.split()[:15])
        assert edited.paper_id not in [p for p, _ in lexical.search(old_words, 3, None)]
        gone_words = " ".join(papers[29].abstract.split()[:15])
        assert papers[29].paper_id not in [p for p, _ in lexical.search(gone_words, 10, None)]
        assert lexical.search(" ".join(papers[35].abstract.split()[:15]), 1, None)[0][0] == (
            papers[35].paper_id
        )
        # ... and rankings agree with a full rebuild over the same papers.
        for paper in papers[30:36]:
            query = " ".join(paper.abstract.split()[5:25])
            reference = LexicalIndex(tmp_path / f"ref-{paper.paper_id}")
            reference.build(analysed(a.store.catalog), 0)
            want = reference.search(_terms(query), 5)
            got = lexical.search(query, 5, None)
            assert got[0][0] == want[0][0] == paper.paper_id
            assert len({p for p, _ in got} & {p for p, _ in want}) >= 4
            assert got[0][1] == pytest.approx(want[0][1], rel=0.1)
        # A filter applies to both segments.
        only = {papers[31].paper_id, papers[2].paper_id}
        assert {p for p, _ in lexical.search(query, 10, only)} <= only


def test_a_grown_delta_is_folded_into_the_base(
    tmp_path: Path, corpus_papers: list[Paper], monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(segments, "COMPACT_MIN", 5)
    store = tmp_path / "s"
    with Assistant(load_settings(store={"path": store}), embedder=HashingEmbedder()) as a:
        a.ingest_papers(corpus_papers[:20])
        first = _pointer(store)["generation"]
        a.ingest_papers(corpus_papers[:23])  # 3 new: below the bar
        assert _pointer(store)["generation"] == first
        a.ingest_papers(corpus_papers[:30], prune=True)  # 7 more: folded in
        rebuilt = _pointer(store)["generation"]
        assert rebuilt > first
        lexical = a.store.lexical_index
        assert lexical.current().ids == [] and len(lexical.base.paper_ids) == 30
        # Removal records stay while the base holds those papers (hidden), and go with the
        # base that no longer does.
        removed = "SELECT COUNT(*) FROM removed"
        a.ingest_papers(corpus_papers[:26], prune=True)
        assert a.store.catalog._db.execute(removed).fetchone()[0] == 4
        assert sorted(a.store.lexical_index.paper_ids()) == sorted(
            p.paper_id for p in corpus_papers[:26]
        )
        a.ingest_papers(corpus_papers[:22], prune=True)
        assert a.store.catalog._db.execute(removed).fetchone()[0] == 0
        base = a.store.lexical_index.base.paper_ids
        assert sorted(base) == sorted(p.paper_id for p in corpus_papers[:22])


def test_a_catalog_from_before_change_records_gets_its_index_rebuilt(
    tmp_path: Path, corpus_papers: list[Paper]
):
    """A store written before the catalog kept change records (no terms, no changed_at) has
    a base rebuilt once from its papers, analysed from their text."""
    store = tmp_path / "s"
    with Assistant(load_settings(store={"path": store}), embedder=HashingEmbedder()) as a:
        a.ingest_papers(corpus_papers[:10])
        db = a.store.catalog._db
        db.execute("UPDATE papers SET terms = NULL")
        db.execute("DELETE FROM meta WHERE key = 'changes_from'")
        db.execute("UPDATE meta SET value = '1000' WHERE key = 'generation'")
    (store / "bm25" / "current.json").unlink()
    with Assistant(load_settings(store={"path": store}), embedder=HashingEmbedder()) as a:
        words = " ".join(corpus_papers[4].abstract.split()[:15])
        assert a.store.lexical(words, 1, Filter())[0][0] == corpus_papers[4].paper_id
        assert _pointer(store)["generation"] == 1000


def test_a_filter_keeping_many_papers_ranks_as_every_allowed_paper_scored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A filter that keeps a large share is answered from the best papers of all, kept (no set
    of allowed rows built per query): the same papers, scores and order (ties at the n-th score
    broken by id) as scoring every allowed paper."""
    words = "protein membrane kinase glacier radar soil tumour neuron cell drought".split()
    docs = [  # 2,000 short documents, many with equal scores
        (f"p{i:04d}", analyze([f"{words[i % 10]} {words[i % 7]} {words[i % 3]} x{i % 50}"])[0])
        for i in range(2000)
    ]
    index = LexicalIndex(tmp_path / "bm25")
    index.build(docs, generation=1)
    terms = _terms("kinase radar tumour")
    cases = [({p for p, _ in docs[::every]}, n) for every in (10, 4, 3) for n in (5, 20, 60)]
    taken = []
    best_of_all = LexicalIndex._best_of_all

    def spied(self, *args):  # type: ignore[no-untyped-def]
        found = best_of_all(self, *args)
        taken.append(found is not None)
        return found

    monkeypatch.setattr(LexicalIndex, "_best_of_all", spied)
    got = [index.search(terms, n, allowed) for allowed, n in cases]
    monkeypatch.setattr(LexicalIndex, "_best_of_all", lambda self, *args: None)
    assert got == [index.search(terms, n, allowed) for allowed, n in cases]
    assert all(len(found) == n for found, (_, n) in zip(got, cases, strict=True))
    assert 0 < sum(taken) < len(cases)  # taken, and given up where ties cross the cut
