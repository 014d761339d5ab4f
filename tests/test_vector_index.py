"""One contract, two vector indexes: Chroma's (embedded, through its public client) and the
exact one in memory. Each test writes real vectors and checks what comes back against exact
cosine similarity computed here."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from assistant.store.base import Filter
from assistant.store.chroma.indexes import ChromaIndexes
from assistant.store.chroma.vectors import ChromaVectors
from assistant.store.exact import ExactIndexes
from assistant.store.vector_index import VectorIndex, VectorIndexes

DIM = 16
PAPERS = [f"p{i}" for i in range(6)]


@pytest.fixture(params=["exact", "chroma"])
def indexes(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorIndexes]:
    if request.param == "exact":
        yield ExactIndexes()
        return
    home = tmp_path / "chroma"

    def open_collection(name: str, client: bool) -> ChromaVectors:
        return ChromaVectors.open(
            path=home, url=None, collection=name, embedder_name="test", dim=DIM
        )

    yield ChromaIndexes(home, open_collection)


def _vectors(n: int, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    matrix = rng.normal(size=(n, DIM)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def _filled(indexes: VectorIndexes) -> tuple[VectorIndex, list[str], np.ndarray]:
    """Three chunks per paper; even papers from 2024, odd ones from 2025."""
    index = indexes.open("abstracts")
    ids = [f"{p}:{i}" for p in PAPERS for i in range(3)]
    metas = [{"paper_id": i.split(":")[0], "year": 2024 + int(i[1]) % 2} for i in ids]
    vectors = _vectors(len(ids))
    index.upsert(ids, vectors, None, metas)
    return index, ids, vectors


def test_what_is_written_is_counted_listed_and_returned(indexes: VectorIndexes):
    index, ids, vectors = _filled(indexes)
    assert index.count() == len(ids) and sorted(index.ids()) == sorted(ids)
    got = index.get_vectors([ids[4], "nobody:0", ids[0]])
    assert got.keys() == {ids[0], ids[4]}
    assert np.allclose(got[ids[4]], vectors[4], atol=1e-6)


def test_nearest_are_the_exact_cosine_ranking(indexes: VectorIndexes):
    index, ids, vectors = _filled(indexes)
    query = _vectors(1, seed=9)[0]
    exact = vectors @ query
    want = [ids[k] for k in np.argsort(-exact)[:5]]
    got = index.query(query, 5, Filter())
    assert [m.item_id for m in got] == want
    assert np.allclose([m.similarity for m in got], np.sort(exact)[::-1][:5], atol=1e-4)
    assert got[0].paper_id == want[0].split(":")[0]


def test_a_filter_keeps_only_the_vectors_it_accepts(indexes: VectorIndexes):
    index, _, _ = _filled(indexes)
    query = _vectors(1, seed=9)[0]
    assert {m.paper_id for m in index.query(query, 50, Filter(year=2025))} == {"p1", "p3", "p5"}
    some = Filter(paper_ids=frozenset({"p0", "p3"}))
    assert {m.paper_id for m in index.query(query, 50, some)} == {"p0", "p3"}
    assert index.query(query, 50, Filter(year=2025, paper_ids=frozenset({"p0"}))) == []
    assert len(index.query(query, 50, Filter())) == 18  # fewer than asked: all there are


def test_deleting_by_id_and_by_paper(indexes: VectorIndexes):
    index, ids, _ = _filled(indexes)
    index.delete_ids([ids[0]])
    index.delete_papers(["p1", "p2"])
    assert sorted(index.ids()) == sorted(i for i in ids[1:] if i[:2] not in ("p1", "p2"))
    index.delete_ids([])
    index.delete_papers(["nobody"])
    assert index.count() == 11


def test_new_paper_metadata_is_what_filters_read(indexes: VectorIndexes):
    index, _, _ = _filled(indexes)
    index.set_paper_metadata({"p0": {"paper_id": "p0", "year": 2030}})
    query = _vectors(1, seed=9)[0]
    assert {m.item_id for m in index.query(query, 50, Filter(year=2030))} == {
        "p0:0",
        "p0:1",
        "p0:2",
    }
    assert "p0" not in {m.paper_id for m in index.query(query, 50, Filter(year=2024))}


def test_an_upsert_replaces_a_vector(indexes: VectorIndexes):
    index, ids, vectors = _filled(indexes)
    index.upsert([ids[0]], vectors[5:6], None, [{"paper_id": "p0", "year": 2024}])
    assert index.count() == len(ids)
    assert np.allclose(index.get_vectors([ids[0]])[ids[0]], vectors[5], atol=1e-6)


def test_indexes_reopen_probe_and_move_aside(indexes: VectorIndexes):
    assert not indexes.present() and indexes.move_aside() is None
    index, ids, _ = _filled(indexes)
    index.close()
    assert indexes.present() and indexes.torn() is None
    assert indexes.probe(["abstracts"]) is None
    again = indexes.open("abstracts")
    assert sorted(again.ids()) == sorted(ids)
    again.close()  # every handle, before the indexes move
    moved = indexes.move_aside()
    assert moved
    fresh = indexes.open("abstracts")
    assert fresh.count() == 0
    fresh.close()


@pytest.mark.parametrize(
    ("written", "said"),
    [
        (np.zeros(DIM, dtype=np.float32), "has length 0"),  # a zeroed page of the index file
        (np.full(DIM, 3.0, dtype=np.float32), "has length 12"),  # bytes overwritten
    ],
)
def test_the_probe_finds_a_stored_vector_no_embedder_wrote(
    indexes: VectorIndexes, written: np.ndarray, said: str
):
    """Searches leave such a vector's paper out without an error (a new user's trial: the
    paper gone from `search`, `ask` refused, `info --check` and `--repair` found nothing)."""
    from assistant.store.chroma.probe import check

    index, ids, _ = _filled(indexes)
    check(index, "abstracts")  # whole
    index.upsert([ids[7]], written[None, :], None, [{"paper_id": "p2", "year": 2024}])
    with pytest.raises(RuntimeError, match=f"stored vector of {ids[7]} {said}"):
        check(index, "abstracts")
