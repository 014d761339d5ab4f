"""Vector indexes in memory with exact search (numpy): the twin of ``chroma.ChromaIndexes``
behind ``VectorIndexes``, run by the same contract tests. ``damage`` makes an index unreadable,
as a torn file makes Chroma's, so the journal and repair can be tested without Chroma."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from assistant.errors import VectorIndexDamagedError
from assistant.store.base import Filter, Match, paper_of
from assistant.store.filtered import cosines
from assistant.store.vector_index import VectorIndex, VectorIndexes, damaged_message


class ExactIndex(VectorIndex):
    def __init__(self, name: str) -> None:
        self.name = name
        self.vectors: dict[str, np.ndarray] = {}
        self.metadatas: dict[str, dict[str, Any]] = {}
        self.damage: str | None = None  # why it cannot be read (``ExactIndexes.damage``)

    def _readable(self) -> None:
        if self.damage:
            raise VectorIndexDamagedError(damaged_message(f"memory:{self.name}", self.damage))

    def count(self) -> int:
        self._readable()
        return len(self.vectors)

    def ids(self) -> list[str]:
        self._readable()
        return list(self.vectors)

    def upsert(
        self,
        ids: Sequence[str],
        vectors: np.ndarray,
        documents: Sequence[str] | None,
        metadatas: Sequence[dict[str, Any]],
    ) -> None:
        self._readable()
        for item_id, vector, meta in zip(ids, vectors, metadatas, strict=True):
            self.vectors[item_id] = np.asarray(vector, dtype=np.float32)
            self.metadatas[item_id] = {**self.metadatas.get(item_id, {}), **meta}

    def delete_ids(self, ids: Sequence[str]) -> None:
        self._readable()
        for item_id in ids:
            self.vectors.pop(item_id, None)
            self.metadatas.pop(item_id, None)

    def delete_papers(self, paper_ids: Sequence[str]) -> None:
        wanted = set(paper_ids)
        self.delete_ids([i for i, m in self.metadatas.items() if m.get("paper_id") in wanted])

    def set_paper_metadata(self, metas: Mapping[str, Mapping[str, str | int]]) -> None:
        self._readable()
        for item_id, meta in self.metadatas.items():
            if meta.get("paper_id") in metas:
                self.metadatas[item_id] = dict(metas[str(meta["paper_id"])])

    def get_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        self._readable()
        return {i: self.vectors[i].copy() for i in ids if i in self.vectors}

    def query(
        self, vector: np.ndarray, n: int, where: Filter, ids: Sequence[str] | None = None
    ) -> list[Match]:
        self._readable()
        if ids is not None:
            missing = [i for i in ids if i not in self.vectors]
            if missing:
                said = f"Error finding id {missing[0]}"
                raise VectorIndexDamagedError(damaged_message(f"memory:{self.name}", said))
            ids = list(dict.fromkeys(ids))
        else:
            ids = [i for i in self.vectors if _accepts(where, self.metadatas[i])]
        if not ids or n <= 0:
            return []
        matrix = np.stack([self.vectors[i] for i in ids])
        similarity = cosines(matrix, np.asarray(vector, dtype=np.float32))
        best = np.argsort(-similarity, kind="stable")[:n]
        return [Match(ids[k], paper_of(ids[k]), float(similarity[k])) for k in best]


def _accepts(where: Filter, meta: Mapping[str, Any]) -> bool:
    """Every set field of the filter on the vector's metadata, as ``chroma_where`` asks it."""
    for key, value in where.fields().items():
        if value is not None and not (
            meta.get(key) in value if isinstance(value, frozenset) else meta.get(key) == value
        ):
            return False
    return True


class ExactIndexes(VectorIndexes):
    """Named ``ExactIndex``es of one store; moved-aside ones are kept in ``aside``."""

    def __init__(self) -> None:
        self.indexes: dict[str, ExactIndex] = {}
        self.aside: list[dict[str, ExactIndex]] = []
        self.probes = 0  # how many times they were probed
        self.touched = 0  # changes made from outside (``touch``), as a file's size tells

    def open(self, name: str) -> ExactIndex:
        return self.indexes.setdefault(name, ExactIndex(name))

    def present(self) -> bool:
        return bool(self.indexes)

    def torn(self) -> str | None:
        return None

    def fingerprint(self) -> str | None:
        return f"touched {self.touched}"

    def touch(self) -> None:
        """Change the indexes from outside, as a copy, a restore or a damaged file does."""
        self.touched += 1

    def probe(self, names: Sequence[str]) -> str | None:
        self.probes += 1
        for name in names:
            index = self.indexes.get(name)
            if index is not None and index.damage:
                return f"index {name!r}: {index.damage}"
        return None

    def move_aside(self) -> str | None:
        if not self.indexes:
            return None
        self.aside.append(self.indexes)
        self.indexes = {}
        return f"memory (set {len(self.aside)} aside)"

    def damage(self, name: str, why: str = "torn") -> None:
        """Make an index unreadable, as a torn file makes Chroma's (its size changes)."""
        self.open(name).damage = why
        self.touch()
