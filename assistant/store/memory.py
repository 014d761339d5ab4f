"""A store in memory: the reference implementation of ``Store``, for tests and small experiments.

Exact nearest neighbours (a dot product over every vector) and BM25 computed at query time from
term counts, so what it returns is what an index is approximating. Nothing is persisted.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from assistant.ingest.corpus import Paper
from assistant.store.base import (
    Entry,
    Filter,
    Kind,
    Match,
    PaperVectors,
    Store,
    paper_of,
    sentence_id,
)
from assistant.store.health import Health, VectorGaps
from assistant.text.terms import analyze


@dataclass
class _Record:
    paper: Paper
    fingerprint: str
    chunks: list[str]
    terms: Counter[str]


class MemoryStore(Store):
    def __init__(self, keeps_sentences: bool = True, k1: float = 1.2, b: float = 0.75):
        self.keeps_sentences = keeps_sentences
        self.k1, self.b = k1, b
        self._records: dict[str, _Record] = {}
        self._vectors: dict[Kind, dict[str, np.ndarray]] = {"chunks": {}, "sentences": {}}
        self._meta: dict[str, str] = {}
        self._stamp = 0
        self._lock = threading.Lock()

    # -- the journal ------------------------------------------------------------------------
    def entries(self, paper_ids: Sequence[str] | None = None) -> dict[str, Entry]:
        wanted = self._records if paper_ids is None else paper_ids
        return {
            pid: Entry(self._records[pid].fingerprint, "ready", len(self._records[pid].chunks))
            for pid in wanted
            if pid in self._records
        }

    def write(self, batch: Sequence[PaperVectors]) -> None:
        with self._lock:
            for item in batch:
                pid = item.paper.paper_id
                self._drop_vectors(pid)
                for chunk, vector in zip(item.chunks, item.chunk_vectors, strict=True):
                    self._vectors["chunks"][chunk.chunk_id] = vector
                if self.keeps_sentences and item.sentence_vectors is not None:
                    pairs = zip(item.sentences, item.sentence_vectors, strict=True)
                    for i, (_, vector) in enumerate(pairs):
                        self._vectors["sentences"][sentence_id(pid, i)] = vector
                self._records[pid] = _Record(
                    item.paper,
                    item.paper.fingerprint,
                    [c.text for c in item.chunks],
                    Counter(analyze([item.paper.text_for_index])[0]),
                )
            self._stamp += 1

    def update_records(self, papers: Sequence[Paper]) -> None:
        with self._lock:
            for paper in papers:
                record = self._records.get(paper.paper_id)
                if record is not None:
                    self._records[paper.paper_id] = replace(
                        record, paper=paper, fingerprint=paper.fingerprint
                    )

    def remove(self, paper_ids: Sequence[str]) -> None:
        with self._lock:
            for pid in paper_ids:
                self._records.pop(pid, None)
                self._drop_vectors(pid)
            self._stamp += 1

    def _drop_vectors(self, paper_id: str) -> None:
        for vectors in self._vectors.values():
            for key in [k for k in vectors if paper_of(k) == paper_id]:
                del vectors[key]

    def repair(self) -> set[str]:
        return set()  # nothing is written outside the journal, so nothing can go missing

    def get_meta(self, key: str) -> str | None:
        return self._meta.get(key)

    def set_meta(self, key: str, value: str) -> None:
        self._meta[key] = value

    def stamp(self) -> int:
        return self._stamp

    # -- reads ------------------------------------------------------------------------------
    def papers(self, paper_ids: Sequence[str]) -> dict[str, Paper]:
        return {pid: self._records[pid].paper for pid in paper_ids if pid in self._records}

    def chunk_texts(self, chunk_ids: Sequence[str]) -> dict[str, str]:
        found = {}
        for chunk_id in chunk_ids:
            pid, index = chunk_id.rsplit(":", 1)
            record = self._records.get(pid)
            if record is not None and index.isdigit() and int(index) < len(record.chunks):
                found[chunk_id] = record.chunks[int(index)]
        return found

    def chunks_of(self, paper_id: str) -> list[str]:
        record = self._records.get(paper_id)
        return list(record.chunks) if record else []

    def nearest(self, kind: Kind, vector: np.ndarray, n: int, where: Filter) -> list[Match]:
        rows = [
            (item_id, paper_of(item_id), v)
            for item_id, v in self._vectors[kind].items()
            if where.accepts(self._records[paper_of(item_id)].paper)
        ]
        if not rows:
            return []
        similarity = np.stack([v for *_, v in rows]) @ vector
        order = np.argsort(-similarity, kind="stable")[:n]
        return [Match(rows[i][0], rows[i][1], float(similarity[i])) for i in order]

    def lexical(self, query: str, n: int, where: Filter) -> list[tuple[str, float]]:
        terms = analyze([query])[0]
        records = self._records
        if not terms or not records:
            return []
        average = sum(sum(r.terms.values()) for r in records.values()) / len(records)
        df = Counter(t for r in records.values() for t in set(r.terms) & set(terms))
        scores = []
        for pid, record in records.items():
            if not where.accepts(record.paper):
                continue
            length = sum(record.terms.values())
            score = 0.0
            for term in terms:
                tf = record.terms.get(term, 0)
                if tf:
                    idf = math.log(1 + (len(records) - df[term] + 0.5) / (df[term] + 0.5))
                    norm = self.k1 * (1 - self.b + self.b * length / average)
                    score += idf * tf * (self.k1 + 1) / (tf + norm)
            if score > 0:
                scores.append((pid, score))
        return sorted(scores, key=lambda s: (-s[1], s[0]))[:n]

    def sentence_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        vectors = self._vectors["sentences"]
        return {i: vectors[i] for i in ids if i in vectors}

    def term_counts(self, terms: list[str]) -> tuple[dict[str, int], int]:
        counts = Counter(t for r in self._records.values() for t in set(r.terms) & set(terms))
        return dict(counts), len(self._records)

    def matching(self, where: Filter) -> set[str]:
        return {pid for pid, r in self._records.items() if where.accepts(r.paper)}

    def has_ready(self) -> bool:
        return bool(self._records)

    def counts(self) -> dict[str, int]:
        return {
            "papers": len(self._records),
            "chunks": sum(len(r.chunks) for r in self._records.values()),
            "unfinished": 0,
        }

    def sizes(self) -> dict[str, int]:
        return {
            "vectors": len(self._vectors["chunks"]),
            "sentence_vectors": len(self._vectors["sentences"]),
            "lexical": len(self._records),
        }

    def health(self) -> Health:
        return Health(len(self._records), 0, VectorGaps(), 0, 0)
