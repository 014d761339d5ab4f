"""The lexical index in two segments: a persisted bm25s base and a delta read from the catalog.

The base is built from the ready papers at some catalog generation. Papers written since (new
or changed text) form the delta, scored with the same BM25 formula (bm25s's Lucene variant) and
the base's statistics; papers rewritten, unfinished or removed since are hidden in the base. The
delta comes from the catalog's own change records, which move in the same transaction as the
journal, so after any crash the two segments together hold exactly the ready papers. An ingest
folds the delta into a new base only when it has grown past a share of the base, so most
ingests rebuild nothing.
"""

from __future__ import annotations

import math
import threading
from collections import Counter, defaultdict
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from assistant.store.bm25 import LexicalIndex
from assistant.store.catalog import Catalog
from assistant.text.terms import analyze

# The delta is folded into the base when it holds more than this share of the base's papers
# (or COMPACT_MIN papers, whichever is more).
COMPACT_SHARE = 0.1
COMPACT_MIN = 200


@dataclass
class Delta:
    """Papers written since the base was built, as term counts, and what the base must hide."""

    stamp: int  # the catalog generation it was read at
    ids: list[str] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    postings: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # term -> (doc, tf)
    hidden: set[str] = field(default_factory=set)

    @classmethod
    def read(cls, catalog: Catalog, since: int, stamp: int) -> Delta:
        delta = cls(stamp, hidden=catalog.hidden_since(since))
        postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for doc, (paper_id, terms) in enumerate(analysed(catalog, since)):
            delta.ids.append(paper_id)
            delta.lengths.append(len(terms))
            for term, tf in Counter(terms).items():
                postings[term].append((doc, tf))
        delta.postings = dict(postings)
        return delta


def analysed(catalog: Catalog, since: int | None = None) -> Iterator[tuple[str, list[str]]]:
    """(paper_id, terms) of the ready papers (written after ``since``), from the terms the
    catalog recorded, or analysed now for papers written before it recorded them."""
    for paper_id, recorded, paper in catalog.iter_terms(since):
        yield (
            paper_id,
            recorded.split() if recorded is not None else analyze([paper.text_for_index])[0],
        )


class SegmentedLexical:
    def __init__(self, folder: Path, catalog: Catalog, k1: float = 1.2, b: float = 0.75):
        self.catalog = catalog
        self.base = LexicalIndex(folder, k1=k1, b=b)
        self._delta: Delta | None = None
        self._loaded = False
        self._lock = threading.RLock()

    # -- keeping up with the catalog ----------------------------------------------------------
    def current(self) -> Delta:
        """The delta for the catalog as it is now; the base is (re)built first when it is
        missing, unreadable, built differently, or older than the catalog's change records."""
        with self._lock:
            if not self._loaded:
                self._loaded = self.base.load()
            stamp = self.catalog.generation
            if self._delta is not None and self._delta.stamp == stamp:
                return self._delta
            if not self._base_usable() and not (self.base.load() and self._base_usable()):
                self.rebuild()
            assert self.base.generation is not None
            self._delta = Delta.read(self.catalog, self.base.generation, stamp)
            return self._delta

    def _base_usable(self) -> bool:
        built = self.base.generation
        changes_from = int(self.catalog.get_meta("changes_from") or 0)
        return built is not None and changes_from <= built <= self.catalog.generation

    def rebuild(self) -> None:
        """A new base from every ready paper (the delta empties)."""
        with self._lock:
            # The generation is read first: a change committed while the base is built is in
            # the catalog's change records after it, so the delta picks it up.
            generation = self.catalog.generation
            self.base.build(analysed(self.catalog), generation)
            self._loaded = True
            self._delta = None

    def compact(self) -> bool:
        """Fold the delta into a new base when it has grown too big; True when it did."""
        with self._lock:
            delta = self.current()
            size = max(COMPACT_MIN, COMPACT_SHARE * len(self.base.paper_ids))
            changed = len(delta.hidden | set(delta.ids))
            if changed <= size and (self.base.paper_ids or not delta.ids):
                return False
            self.rebuild()
            assert self.base.generation is not None
            self.catalog.forget_removals(self.base.generation)
            return True

    # -- reads --------------------------------------------------------------------------------
    def paper_ids(self) -> list[str]:
        delta = self.current()
        kept = [p for p in self.base.paper_ids if p not in delta.hidden]
        return kept + delta.ids

    def search(
        self, query: str, n: int, allowed: Collection[str] | None
    ) -> list[tuple[str, float]]:
        terms = analyze([query])[0]
        delta = self.current()
        found = self.base.search(terms, n, allowed, delta.hidden)
        found += self._delta_scores(delta, terms, allowed)
        return sorted(found, key=lambda s: (-s[1], s[0]))[:n]

    def document_frequencies(self, terms: list[str]) -> tuple[dict[str, int], int]:
        """Papers containing each term, and papers in all. The count of papers is exact; a
        term's count still includes hidden base papers (their terms may be gone): near enough
        for what rarity is used for."""
        delta = self.current()
        counts, total = self.base.document_frequencies(terms)
        for term in terms:
            extra = len(delta.postings.get(term, ()))
            if extra:
                counts[term] = counts.get(term, 0) + extra
        return counts, total - self.base.count_held(delta.hidden) + len(delta.ids)

    def _delta_scores(
        self, delta: Delta, terms: list[str], allowed: Collection[str] | None
    ) -> list[tuple[str, float]]:
        if not delta.ids:
            return []
        k1, b = self.base.k1, self.base.b
        frequencies, total = self.document_frequencies(terms)
        average = self.base.average_length if self.base.paper_ids else _mean(delta.lengths)
        scores: dict[int, float] = defaultdict(float)
        for term in terms:
            df = frequencies.get(term, 0)
            idf = math.log(1 + (total - df + 0.5) / (df + 0.5))
            for doc, tf in delta.postings.get(term, ()):
                norm = k1 * (1 - b + b * delta.lengths[doc] / average)
                scores[doc] += idf * tf / (tf + norm)
        return [
            (delta.ids[doc], score)
            for doc, score in scores.items()
            if score > 0 and (allowed is None or delta.ids[doc] in allowed)
        ]


def _mean(values: list[int]) -> float:
    return sum(values) / len(values) if values else 1.0
