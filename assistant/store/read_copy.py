"""A small store's vectors in one file beside its catalog, so that a read needs no vector engine.

Opening Chroma costs a command more than the search itself (importing chromadb is ~0.45 s of a
cold ``ask`` of ~1.3 s here), and a store of a few thousand abstracts is searched exactly in a
few milliseconds with one matrix product. So at the end of a run a writer that changed the
vectors of a store holding at most ``COPY_VECTORS`` of them writes them to ``vectors.npz``
(ids and float32 rows per index, read back through the index's own ``get_vectors``) and names
it in the catalog (meta ``vectors_copy``: a random tag the file also holds). Every call that
changes an index clears that name first, so the copy is read only while no write has happened
since it was made; readers also check that no write mark is set and that the index files are
as the last writer left them, and otherwise read the indexes themselves with every check they
make. The copy is a cache: a missing, damaged or foreign file is never read, and the next
writer makes a new one.
"""

from __future__ import annotations

import os
import secrets
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from assistant.store.base import Kind, Match, paper_of
from assistant.store.filtered import exact_nearest
from assistant.store.vector_index import VectorIndex

COPY_FILE = "vectors.npz"
COPY_VECTORS = 40_000  # at most this many vectors (60 MB of float32 at 384 dimensions)


class ReadCopy:
    """The vectors of each index, searched exactly."""

    def __init__(self, tag: str, kinds: Mapping[str, tuple[list[str], np.ndarray]]):
        self.tag = tag
        self._ids: dict[str, list[str]] = {}
        self._vectors: dict[str, np.ndarray] = {}
        self._papers: dict[str, np.ndarray] = {}  # each row's paper
        self._rows: dict[str, dict[str, int]] = {}  # id -> row
        for kind, (ids, matrix) in kinds.items():
            self._ids[kind], self._vectors[kind] = ids, matrix
            self._papers[kind] = np.array([paper_of(i) for i in ids])
            self._rows[kind] = {i: row for row, i in enumerate(ids)}

    def nearest(
        self, kind: Kind, vector: np.ndarray, n: int, papers: frozenset[str] | None = None
    ) -> list[Match]:
        """The n vectors most similar to ``vector`` (of these papers only, when given)."""
        ids, matrix = self._ids[kind], self._vectors[kind]
        if papers is None:
            return exact_nearest(ids, matrix, vector, n)
        rows = np.flatnonzero(np.isin(self._papers[kind], np.array(sorted(papers))))
        return exact_nearest([ids[r] for r in rows], matrix[rows], vector, n)

    def ids(self, kind: Kind) -> list[str]:
        return list(self._ids[kind])

    def get_vectors(self, kind: Kind, ids: Sequence[str]) -> dict[str, np.ndarray]:
        rows, matrix = self._rows[kind], self._vectors[kind]
        return {i: matrix[rows[i]].copy() for i in ids if i in rows}


def new_tag() -> str:
    return secrets.token_hex(8)


def write(path: Path, tag: str, indexes: Mapping[Kind, VectorIndex]) -> None:
    """Write the vectors of these indexes (kind -> index) with this tag, replacing the file
    whole (a reader sees the old file or the new one, never half of one)."""
    arrays: dict[str, np.ndarray] = {"tag": np.array(tag)}
    for kind, index in indexes.items():
        ids = sorted(index.ids())
        got = index.get_vectors(ids)
        if len(got) != len(ids):
            raise ValueError(f"the {kind} index lists vectors it cannot return")
        arrays[f"{kind}_ids"] = np.array(ids, dtype=str)
        arrays[f"{kind}_vectors"] = (
            np.stack([got[i] for i in ids]).astype(np.float32) if ids else np.zeros((0, 0))
        )
    scratch = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(scratch, "wb") as handle:
            np.savez(handle, allow_pickle=False, **arrays)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(scratch, path)
    finally:
        scratch.unlink(missing_ok=True)


def discard(path: Path, copy: bool = True) -> None:
    """Remove the copy (unless ``copy`` is False) and any scratch file of one; what cannot be
    removed (a folder in its place) is left: it is never read. The caller holds the store's
    writer lock, so a scratch file is a killed writer's."""
    for left in [*path.parent.glob(f".{path.name}.*.tmp"), *([path] if copy else [])]:
        try:
            left.unlink(missing_ok=True)
        except OSError:
            pass


def load(path: Path, tag: str, kinds: Sequence[Kind]) -> ReadCopy | None:
    """The copy at ``path`` if it is whole and carries this tag; None otherwise."""
    try:
        with np.load(path, allow_pickle=False) as stored:
            if str(stored["tag"]) != tag:
                return None
            found: dict[str, tuple[list[str], np.ndarray]] = {}
            for kind in kinds:
                ids = [str(i) for i in stored[f"{kind}_ids"]]
                matrix = np.asarray(stored[f"{kind}_vectors"], dtype=np.float32)
                if ids and (matrix.ndim != 2 or matrix.shape[0] != len(ids)):
                    return None
                found[kind] = (ids, matrix)
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None
    return ReadCopy(tag, found)
