"""Filtered search that costs what the filter keeps, not what the store holds.

A filter is resolved to the ready papers it accepts and their chunk counts (``Allowed``) from
``Facets``: the fields filters read, for every ready paper, read from the catalog once per
catalog generation (without the texts) and kept as arrays, with an index of the words of
authors' names. A year, venue, source file, paper id or author filter is then a vectorised mask
or a few set operations, not a scan of the catalog per query (a title or DOI filter is still
asked of the catalog). The dense and lexical searches then look only at those papers (BM25:
``LexicalIndex.search``, which for a large share also keeps the best of all). How the dense
side looks depends on how many papers are left (measured in docs/benchmarks.md, "Filtered
search"):

- few vectors (``EXACT_VECTORS`` or fewer): they are read by id and scored exactly, one
  matrix product. Chroma's graph search under a short allow-list wanders far to fill its
  candidate list (0.3 s for 250 chunks among 250,000), and a metadata filter makes Chroma scan
  its SQLite tables first. They are read while the query is embedded (``Store.prepare``) and
  kept with the resolved filter (``Allowed.read``);
- a large share of the store (``overfetch``: a tenth of it, for the 600 sentences a search
  asks for): the unfiltered search, asked for enough more vectors that the kept papers' fill
  the n wanted (7,000 for 600 at a tenth), then filtered. Its n best are a filtered search's
  (as exact as the graph search), at the cost of one unfiltered search of a larger n (~5 ms
  per 1,000 asked for, at 1M vectors here), whatever the store holds; when they do not fill n
  (the kept papers are far from the query), the search is made as below. A search that keeps
  each paper's best vector for so many papers (the sentence search: 100 papers from 600
  sentences) says so, and its answer stops at the last of those papers (``held``): 3,700
  asked for at a tenth instead of 7,000;
- more: Chroma's HNSW search restricted to their ids (``Collection.query(ids=...)``), which
  skips Chroma's metadata scan.

Chunk ids come from the catalog (``paper:0`` .. ``paper:N-1``). Sentence ids are not recorded:
they are made from the papers' texts as ingest made them (``sentences_of``) for at most
``SENTENCE_PAPERS`` papers; more are searched in the sentence collection with Chroma's metadata
filter, as before, whose cost grows with the papers the filter matches. A vector the catalog
lists but the index lacks (a gap the next ingest repairs) makes Chroma refuse a search by ids:
the search is then made with the metadata filter.

The resolved sets of the last few filters are kept per catalog generation: one search asks for
chunks, sentences and BM25 under the same filter, and a chat session keeps its filter.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from assistant.store.base import Filter, Match, paper_of
from assistant.store.filters import name_words, names_match, needed_words, venue_key

# (paper_id, authors JSON, year, venue, source_file, n_chunks): ``Catalog.filter_rows``
Row = tuple[str, str, int | None, str | None, str, int]

EXACT_VECTORS = 1500  # at most this many vectors: read them and score them exactly
SENTENCE_PAPERS = 300  # at most this many papers: their sentence ids are made from their texts
KEPT = 4  # resolved filters kept per store
OVERFETCH_MOST = 10_000  # the most vectors asked of an unfiltered search to fill a filtered one
# Sentences a paper brings to a search's best ones before the papers asked for are in: 100
# papers were held by a median 236 and at most 370 of a random tenth of SciFact's papers'
# best sentences (100 test claims: benchmarks/papers_in_sentences.py), by 103-266 at 100,000
# synthetic abstracts; the margin of ``overfetch`` covers most of the rest, and a search
# that still falls short asks again.
PER_PAPER = 3


@dataclass
class Allowed:
    """The ready papers a filter accepts, the number of their chunk vectors (and their ids,
    made when first asked for), and (once asked for, for at most ``SENTENCE_PAPERS`` papers)
    the ids of their sentence vectors."""

    papers: frozenset[str]
    chunk_counts: Mapping[str, int] = field(compare=False, repr=False)
    share: float = 0.0  # of the ready papers' chunk vectors (0: not known)
    sentence_ids: tuple[str, ...] | None = field(default=None, compare=False)
    # Per kind, the vectors of the exact path (``exact``) and their ids, once read: they do not
    # depend on the query, so they are read while it is embedded, and once per filter.
    read: dict[str, tuple[list[str], np.ndarray]] = field(
        default_factory=dict, compare=False, repr=False
    )

    @property
    def chunks(self) -> int:
        return sum(self.chunk_counts.values())

    @cached_property
    def chunk_ids(self) -> tuple[str, ...]:
        counts = self.chunk_counts.items()
        return tuple(f"{pid}:{i}" for pid, count in counts for i in range(count))


def exact(vectors: int) -> bool:
    """Few enough vectors to read and score exactly."""
    return vectors <= EXACT_VECTORS


def sentences_named(papers: int) -> bool:
    """Few enough papers to make their sentence ids from their texts."""
    return papers <= SENTENCE_PAPERS


def overfetch(n: int, allowed: Allowed, papers: int | None = None) -> int | None:
    """How many vectors to ask of the unfiltered search so that the allowed papers' hold the n
    wanted (or, with ``papers``, likely that many papers: ``PER_PAPER`` vectors each at most):
    that many plus four standard deviations of how many of them a random draw of that size
    holds, over the allowed share; None when that is more than ``OVERFETCH_MOST`` (or the
    share is not known). Sentences are asked for with the chunks' share: a paper's
    sentences follow its length as its chunks do."""
    wanted = min(n, PER_PAPER * papers) if papers else n
    if wanted <= 0 or not allowed.share:
        return None
    asked = math.ceil((wanted + 4 * math.sqrt(wanted)) / allowed.share)
    return asked if asked <= OVERFETCH_MOST else None


def overfetch_again(asked: int, short_by: float) -> int | None:
    """How many to ask for a second time, when ``asked`` held ``short_by`` times too few of
    what was wanted: in proportion, with a quarter more (a paper's sentences come together,
    so fewer papers than vectors are drawn, and their share varies more than a draw of
    vectors would). None when none was held, or past twice ``OVERFETCH_MOST``."""
    if short_by == math.inf:
        return None
    again = math.ceil(asked * short_by * 1.25)
    return again if again <= 2 * OVERFETCH_MOST else None


def held(matches: Sequence[Match], n: int, papers: int | None) -> list[Match] | None:
    """The first n matches, or the shortest first ones that hold ``papers`` papers; None when
    there are neither."""
    if papers:
        seen: set[str] = set()
        for i, m in enumerate(matches[:n]):
            seen.add(m.paper_id)
            if len(seen) == papers:
                return list(matches[: i + 1])
    return list(matches[:n]) if len(matches) >= n else None


def short_by(matches: Sequence[Match], n: int, papers: int | None) -> float:
    """How many times more matches were needed (the smaller of: for n of them, for
    ``papers`` papers); infinite for none."""
    if not matches:
        return math.inf
    factor = n / len(matches)
    if papers:
        factor = min(factor, papers / len({m.paper_id for m in matches}))
    return factor


def allowed_from(chunk_counts: dict[str, int], all_chunks: int = 0) -> Allowed:
    """``Allowed`` from ready paper id -> number of chunks, and the chunks of every ready paper
    (0: not known)."""
    share = sum(chunk_counts.values()) / all_chunks if all_chunks else 0.0
    return Allowed(frozenset(chunk_counts), chunk_counts, share)


class Facets:
    """What filters read of every ready paper, as arrays (see the module's docstring)."""

    def __init__(self, rows: Sequence[Row]):
        self.ids = [r[0] for r in rows]
        self._position = {pid: i for i, pid in enumerate(self.ids)}
        self._has_year = np.array([r[2] is not None for r in rows], dtype=bool)
        self._year = np.array([r[2] or 0 for r in rows], dtype=np.int64)
        self._venue, self._venues = _codes([venue_key(r[3]) if r[3] else None for r in rows])
        self._source, self._sources = _codes([r[4] for r in rows])
        self._chunks = [r[5] for r in rows]
        self.all_chunks = sum(self._chunks)
        self._authors: dict[str, list[int]] | None = None  # name -> rows, when first asked
        self._author_rows = [r[1] for r in rows]
        self._words: dict[str, set[str]] = {}  # word of a name -> names
        self._initials: dict[str, set[str]] = {}  # first letter of a word of a name -> names
        self._lock = threading.Lock()

    def answers(self, where: Filter) -> bool:
        return where.title is None and where.doi is None

    def allowed(self, where: Filter) -> Allowed:
        """The papers a filter accepts (``answers(where)`` must hold)."""
        keep = np.ones(len(self.ids), dtype=bool)
        if where.year is not None:
            keep &= self._has_year & (self._year == where.year)
        if where.year_min is not None:
            keep &= self._has_year & (self._year >= where.year_min)
        if where.year_max is not None:
            keep &= self._has_year & (self._year <= where.year_max)
        if where.venue is not None:
            keep &= self._venue == self._venues.get(venue_key(where.venue), -2)
        if where.source_file is not None:
            keep &= self._source == self._sources.get(where.source_file, -2)
        if where.paper_ids is not None:
            keep &= self._rows_mask(self._position.get(p) for p in where.paper_ids)
        if where.author is not None:
            keep &= self._rows_mask(self._by_author(where.author))
        chunks = {self.ids[i]: self._chunks[i] for i in np.flatnonzero(keep)}
        return allowed_from(chunks, self.all_chunks)

    def _rows_mask(self, rows: Iterable[int | None]) -> np.ndarray:
        mask = np.zeros(len(self.ids), dtype=bool)
        found = [i for i in rows if i is not None]
        mask[np.array(found, dtype=np.int64)] = True
        return mask

    def _by_author(self, wanted: str) -> list[int]:
        """Rows with an author whose name holds every word of ``wanted``, an initial for any
        word it begins (``filters.names_match``), from an index of the words of every name."""
        self._index_authors()
        assert self._authors is not None
        names: set[str] | None = None
        for word in needed_words(wanted):
            if len(word) == 1:  # an initial: names with a word it begins
                having = self._initials.get(word, set())
            else:  # the word, or its initial
                having = self._words.get(word, set()) | self._words.get(word[0], set())
            names = having if names is None else names & having
        # The index finds the names with the words; whether each word is its own is asked
        # of each of them.
        found = [name for name in names or () if names_match(name, wanted)]
        return [row for name in found for row in self._authors[name]]

    def _index_authors(self) -> None:
        with self._lock:
            if self._authors is not None:
                return
            authors: dict[str, list[int]] = defaultdict(list)
            for row, listed in enumerate(self._author_rows):
                for name in json.loads(listed or "[]"):
                    authors[str(name)].append(row)
            index: dict[str, set[str]] = defaultdict(set)
            initials: dict[str, set[str]] = defaultdict(set)
            for name in authors:
                for word in set(_name_words(name)):
                    index[word].add(name)
                    initials[word[0]].add(name)
            self._words, self._initials = dict(index), dict(initials)
            self._authors = dict(authors)


def _name_words(name: str) -> list[str]:
    """``filters.name_words``, with its answer for plain ASCII names computed the quick way."""
    if name.isascii() and "'" not in name and "`" not in name:
        return re.findall(r"\w+", name.casefold())
    return name_words(name)


def _codes(values: Sequence[str | None]) -> tuple[np.ndarray, dict[str, int]]:
    """Each value as a number (None: -1), and the numbers of the values."""
    numbers: dict[str, int] = {}
    codes = [-1 if v is None else numbers.setdefault(v, len(numbers)) for v in values]
    return np.array(codes, dtype=np.int64), numbers


class AllowedCache:
    """The last few filters resolved, valid while the catalog's generation stays."""

    def __init__(self, kept: int = KEPT):
        self._kept = kept
        self._sets: OrderedDict[tuple[int, Filter], Allowed] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, generation: int, where: Filter, resolve: Callable[[], Allowed]) -> Allowed:
        key = (generation, where)
        with self._lock:
            found = self._sets.get(key) or self._same_papers(generation, where)
            if found is not None:
                self._sets[key] = found
                self._sets.move_to_end(key)
                return found
        found = resolve()
        with self._lock:
            self._sets[key] = found
            while len(self._sets) > self._kept:
                self._sets.popitem(last=False)
        return found

    def _same_papers(self, generation: int, where: Filter) -> Allowed | None:
        """A filter that lists the papers another filter resolved to (a search narrows an
        author filter to its papers before it asks for vectors): that one's answer."""
        if where.paper_ids is None or replace(where, paper_ids=None):
            return None
        for (made, _), found in self._sets.items():
            if made == generation and found.papers == where.paper_ids:
                return found
        return None


def cosines(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    """The cosine of each row to the query (0 for a row of zeros)."""
    unit = query / (np.linalg.norm(query) or 1.0)
    norms = np.linalg.norm(vectors, axis=1)
    return (vectors @ unit.astype(vectors.dtype)) / np.where(norms > 0, norms, 1.0)


def exact_nearest(
    ids: Sequence[str], vectors: np.ndarray, query: np.ndarray, n: int
) -> list[Match]:
    """The n rows most similar to the query by cosine, best first (ties by id)."""
    if not len(ids) or n <= 0:
        return []
    similarity = cosines(vectors, query)
    top = np.argpartition(-similarity, n - 1)[:n] if len(ids) > n else np.arange(len(ids))
    order = sorted(top, key=lambda i: (-float(similarity[i]), ids[i]))
    return [Match(ids[i], paper_of(ids[i]), float(similarity[i])) for i in order]
