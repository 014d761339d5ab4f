"""What ``LocalStore`` asks of a vector engine, so its journal, repair and rebuild do not depend
on which engine holds the vectors: ``chroma.ChromaIndexes`` (the product's) or
``exact.ExactIndexes`` (exact numpy search in memory, for tests and small stores).

A ``VectorIndex`` is one set of vectors keyed by id (``paper:N`` for chunks, ``paper:sN`` for
sentences), each with its paper's filter fields as metadata. ``VectorIndexes`` are the named
indexes of one store: opened by name, probed whole, moved aside when damaged. The catalog is the
truth; every index is a cache of it that a writer can rebuild.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from assistant.store.base import Filter, Match
from assistant.store.filtered import cosines


class VectorIndex(ABC):
    """One named index. Reads and writes raise ``VectorIndexDamagedError`` when it cannot be
    read, ``DiskFullError`` when a write meets a full disk."""

    read_only: bool = False  # opened to read: may be a snapshot, reopened when the store moves

    @abstractmethod
    def count(self) -> int: ...

    @abstractmethod
    def ids(self) -> list[str]:
        """Every vector id (for consistency checks)."""

    @abstractmethod
    def upsert(
        self,
        ids: Sequence[str],
        vectors: np.ndarray,
        documents: Sequence[str] | None,
        metadatas: Sequence[dict[str, Any]],
    ) -> None:
        """Add or replace vectors; ``documents``: texts kept beside them (None: none)."""

    @abstractmethod
    def delete_ids(self, ids: Sequence[str]) -> None: ...

    @abstractmethod
    def delete_papers(self, paper_ids: Sequence[str]) -> None:
        """Delete every vector whose metadata names one of these papers."""

    @abstractmethod
    def set_paper_metadata(self, metas: Mapping[str, Mapping[str, str | int]]) -> None:
        """Replace the metadata of these papers' vectors (paper_id -> metadata)."""

    @abstractmethod
    def get_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors by id (ids it does not hold are left out)."""

    @abstractmethod
    def query(
        self, vector: np.ndarray, n: int, where: Filter, ids: Sequence[str] | None = None
    ) -> list[Match]:
        """The n vectors most similar (cosine) to ``vector`` whose metadata the filter's
        ``year``, ``venue``, ``source_file`` and ``paper_ids`` accept, best first; or, given
        ``ids``, among those vectors only (the filter then unused; an id the index does not
        hold is an error, as Chroma makes it)."""

    def close(self) -> None:  # noqa: B027 -- nothing held open by default
        """Release what this handle holds."""


class VectorIndexes(ABC):
    """The vector indexes of one store."""

    @abstractmethod
    def open(self, name: str) -> VectorIndex:
        """The index of that name, made empty when missing (a handle that only reads, if its
        caller only reads: see ``VectorIndex.read_only``)."""

    @abstractmethod
    def present(self) -> bool:
        """Whether any index has been made (nothing to probe otherwise)."""

    @abstractmethod
    def torn(self) -> str | None:
        """What is visibly missing from the indexes' home, in a few words (None: nothing)."""

    def fingerprint(self) -> str | None:
        """What the indexes' files look like on disk (their names and sizes), to tell a change
        made from outside (a copy, a restore, damage) from the last writer's; None where there
        are no files to look at (a server's indexes, memory)."""
        return None

    @abstractmethod
    def probe(self, names: Sequence[str]) -> str | None:
        """Read these indexes whole, apart from the caller: None, or what failed."""

    @abstractmethod
    def move_aside(self) -> str | None:
        """Keep the current indexes somewhere else, unread (nothing deleted), so that ``open``
        starts new ones; where they went, or None when there was nothing to move. Every
        handle must have been closed first."""


def damaged_message(store: str, said: str) -> str:
    """One line: which index, what the engine said, and the command that rebuilds it."""
    said = " ".join(said.split())
    return (
        f"a vector index in {store} cannot be read ({said[:300]}). The catalog is intact: "
        f"`assistant ingest --repair --store {store}` rebuilds the index from it (its papers "
        "are embedded again), as does the next `assistant ingest PATHS` into this store"
    )


def best_at_its_distance(index: VectorIndex, query: np.ndarray, matches: Sequence[Match]) -> bool:
    """The first match's stored vector gives the similarity the index returned for it (one
    read by id): a damaged index file can answer a search without an error, with neighbours
    at distances its vectors do not give."""
    best = matches[0]
    stored = index.get_vectors([best.item_id]).get(best.item_id)
    return (
        stored is not None and not abs(cosines(stored[None, :], query)[0] - best.similarity) > 1e-3
    )
