"""What the rest of the assistant may ask of a store, in its own types.

A store holds papers (the journal of what is written), their chunk and sentence vectors, and a
lexical index over their text. Ingest writes through ``write``/``remove``/``update_records``;
search asks for ``nearest`` vectors and ``lexical`` matches under a ``Filter``; answers read
``papers`` and ``sentence_vectors``. Which engine holds what (SQLite, Chroma, bm25s) is the
implementation's business: ``LocalStore`` (over Chroma, or over the exact in-memory vector
index) and ``ServerStore``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import numpy as np

from assistant.ingest.chunking import Chunk
from assistant.ingest.corpus import Paper

if TYPE_CHECKING:
    from assistant.store.health import Health

Kind = Literal["chunks", "sentences"]


@dataclass(frozen=True)
class Filter:
    """Which papers a search may return: every field that is set must match (None: any).
    ``author``, ``title``, ``doi``, ``venue`` (whatever its case: "neurips" is NeurIPS) and the
    year bounds are matched as ``assistant.store.filters`` says; stores answer them from their
    catalog (``matching``), and a search narrows them to ``paper_ids`` before it asks for
    vectors (``catalog_only``)."""

    year: int | None = None
    venue: str | None = None
    source_file: str | None = None
    paper_ids: frozenset[str] | None = None
    author: str | None = None
    title: str | None = None
    doi: str | None = None
    year_min: int | None = None
    year_max: int | None = None

    def __bool__(self) -> bool:
        return any(v is not None for v in self.fields().values())

    @property
    def catalog_only(self) -> bool:
        """Set fields that vector metadata does not hold: resolve them to ``paper_ids``."""
        return any(
            v is not None
            for v in (self.author, self.title, self.doi, self.year_min, self.year_max, self.venue)
        )

    def fields(self) -> dict[str, Any]:
        return {
            "year": self.year,
            "venue": self.venue,
            "source_file": self.source_file,
            "paper_id": self.paper_ids,
            "author": self.author,
            "title": self.title,
            "doi": self.doi,
            "year_min": self.year_min,
            "year_max": self.year_max,
        }

    def accepts(self, paper: Paper) -> bool:
        from assistant.store.filters import any_author, has_words, same_doi, same_venue

        if self.paper_ids is not None and paper.paper_id not in self.paper_ids:
            return False
        wanted = {"year": self.year, "source_file": self.source_file}
        have = {"year": paper.year, "source_file": paper.source_file}
        if not all(v is None or have[k] == v for k, v in wanted.items()):
            return False
        if self.venue is not None and not same_venue(paper.venue, self.venue):
            return False
        year = paper.year if paper.year is not None else None
        return (
            (self.author is None or any_author(paper.authors, self.author))
            and (self.title is None or has_words(paper.title, self.title))
            and (self.doi is None or same_doi(paper.doi, self.doi))
            and (self.year_min is None or (year is not None and year >= self.year_min))
            and (self.year_max is None or (year is not None and year <= self.year_max))
        )


@dataclass(frozen=True)
class Entry:
    """The journal's record of one paper."""

    fingerprint: str
    state: str  # pending, ready or deleting
    n_chunks: int


class Match(NamedTuple):
    """One vector near a query: a chunk (``paper:N``) or a sentence (``paper:sN``). A tuple:
    a search makes thousands (a filtered one asks for more and keeps some)."""

    item_id: str
    paper_id: str
    similarity: float  # cosine similarity, 1 is identical


@dataclass
class PaperVectors:
    """One paper ready to be written: its chunks and sentences, each with its vector."""

    paper: Paper
    chunks: list[Chunk]
    chunk_vectors: np.ndarray
    sentences: list[str] = field(default_factory=list)
    sentence_vectors: np.ndarray | None = None  # None when the store keeps no sentence vectors


def sentence_id(paper_id: str, index: int) -> str:
    return f"{paper_id}:s{index}"


def paper_of(vector_id: str) -> str:
    """The paper a vector belongs to: ids are ``paper_id:N`` (chunks) or ``paper_id:sN``."""
    return vector_id.rsplit(":", 1)[0]


class Store(ABC):
    """Papers, their vectors and a lexical index, written as one journal."""

    keeps_sentences: bool

    # -- the journal ------------------------------------------------------------------------
    @abstractmethod
    def entries(self, paper_ids: Sequence[str] | None = None) -> dict[str, Entry]:
        """Every paper the store knows, ready or not; or those of ``paper_ids`` it knows."""

    def unfinished(self) -> dict[str, Entry]:
        """Papers an interrupted run left pending or deleting."""
        return {pid: e for pid, e in self.entries().items() if e.state != "ready"}

    @abstractmethod
    def write(self, batch: Sequence[PaperVectors]) -> None:
        """Add or replace these papers with their vectors. Readers see each paper whole or not
        at all: before (its old version) or after, never without its vectors."""

    @abstractmethod
    def update_records(self, papers: Sequence[Paper]) -> None:
        """New records (position, label, authors, year, venue, URL) for stored papers whose
        title and abstract are unchanged: nothing is embedded."""

    @abstractmethod
    def remove(self, paper_ids: Sequence[str]) -> None:
        """Remove papers and everything derived from them."""

    dropped = 0  # vectors of papers the store does not hold, dropped by the last ``repair``

    @abstractmethod
    def repair(self) -> set[str]:
        """Drop vectors of papers the store does not hold (counted in ``dropped``); return the
        ready papers whose vectors are (partly) gone, for the caller to embed again."""

    @contextmanager
    def writer(
        self, wait: bool = True, on_wait: Callable[[str], None] | None = None
    ) -> Iterator[None]:
        """Hold the right to write for the block where the store is shared beyond this machine
        (wait for it, or raise ``StoreBusyError``). A store in a folder has nothing to add to
        the folder's file lock, which the caller holds."""
        yield

    def warm(self) -> None:  # noqa: B027 -- nothing to open by default
        """Open what a search reads (a search calls it while the query is being embedded)."""

    def prepare(self, where: Filter, kinds: Sequence[Kind]) -> None:  # noqa: B027
        """Read what a search under this filter reads whatever the query is (a search calls
        it while the query is being embedded); by default nothing."""

    def flush(self) -> None:  # noqa: B027 -- a store without derived indexes has nothing to do
        """Bring derived indexes up to date (the end of an ingest)."""

    def read_copy_note(self) -> str | None:
        """Whether reads search a copy of the vectors rather than the index, in a few words
        (None: this kind of store keeps none)."""
        return None

    @abstractmethod
    def get_meta(self, key: str) -> str | None: ...

    @abstractmethod
    def set_meta(self, key: str, value: str) -> None: ...

    def recorded_embedder(self) -> str | None:
        """The name of the embedder this store's vectors were made with (None for a new
        store), read without opening the vectors for one: the ingest records it first in its
        ``config`` meta (``Ingestor._config_key``)."""
        return (self.get_meta("config") or "").split("|")[0] or None

    @abstractmethod
    def stamp(self) -> int:
        """Moves whenever the set of ready papers or their text changes."""

    # -- reads ------------------------------------------------------------------------------
    @abstractmethod
    def papers(self, paper_ids: Sequence[str]) -> dict[str, Paper]:
        """Ready papers by id (ids that are not ready are left out)."""

    @abstractmethod
    def chunk_texts(self, chunk_ids: Sequence[str]) -> dict[str, str]: ...

    @abstractmethod
    def chunks_of(self, paper_id: str) -> list[str]: ...

    @abstractmethod
    def nearest(
        self, kind: Kind, vector: np.ndarray, n: int, where: Filter, papers: int | None = None
    ) -> list[Match]:
        """The n vectors of this kind most similar to ``vector``, best first. With ``papers``
        (a caller that keeps each paper's best vector, for that many papers at most), the answer
        may stop sooner: at the vector where that many papers have appeared."""

    @abstractmethod
    def lexical(self, query: str, n: int, where: Filter) -> list[tuple[str, float]]:
        """The best n ready papers for the query's words, (paper_id, score > 0), best first."""

    @abstractmethod
    def sentence_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored sentence vectors by id (``paper:sN``; unknown ids left out)."""

    @abstractmethod
    def term_counts(self, terms: list[str]) -> tuple[dict[str, int], int]:
        """How many ready papers contain each analysed term, and how many there are."""

    @abstractmethod
    def matching(self, where: Filter) -> set[str]:
        """Ready paper ids the filter accepts."""

    @abstractmethod
    def has_ready(self) -> bool: ...

    @abstractmethod
    def counts(self) -> Mapping[str, int]:
        """From the journal: ``papers`` and ``chunks`` ready, ``unfinished`` papers."""

    @abstractmethod
    def sizes(self) -> Mapping[str, int | None]:
        """What the indexes hold: ``vectors``, ``sentence_vectors``, ``lexical`` (papers);
        None for one that cannot be read."""

    @abstractmethod
    def health(self) -> Health:
        """Where papers, vectors and the lexical index disagree."""

    def forget_vectors(self) -> None:  # noqa: B027 -- nothing held open by default
        """Open the vector indexes anew at the next read (another process may have written)."""

    def verify_vectors(self) -> None:  # noqa: B027 -- nothing to verify by default
        """For a writer: read the vector indexes whole, and rebuild one that cannot be read."""

    def set_aside(self) -> list[str]:
        """Folders of unreadable vector indexes this store moved aside to rebuild them."""
        return []

    def close(self) -> None:  # noqa: B027 -- nothing to release by default
        """Release files and connections."""
