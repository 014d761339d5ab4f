"""Incremental, idempotent ingestion: papers -> chunks and sentences -> vectors -> the store.

What changed is worked out against the store's journal: only new papers and papers whose title or
abstract changed are embedded. The store writes each batch as a journal (see
``assistant.store.local``); whatever an interrupted run left unfinished is completed (or undone)
at the start of the next one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from assistant.chunking import Chunker, sentences_of
from assistant.corpus import LoadResult, Paper
from assistant.embeddings import Embedder
from assistant.errors import InputFileError
from assistant.store.base import Entry, PaperVectors, Store

Progress = Callable[[int, int], None]  # (papers done, papers to do)


@dataclass
class IngestReport:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    recovered: int = 0  # unfinished papers from an interrupted run, finished or undone
    repaired: int = 0  # ready papers whose vectors were gone, re-embedded
    duplicates: int = 0
    chunks_written: int = 0
    files: int = 0
    problems: list[InputFileError] = field(default_factory=list)
    created: bool = True  # False when nothing was loaded and no store existed: none was made
    prune_skipped: bool = False  # --prune was asked for, but some input failed to load
    warnings: list[str] = field(default_factory=list)  # e.g. abstracts cut to the size limit
    moved_aside: str | None = None  # where `--rebuild` moved the old store

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, object]:
        return {
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "removed": self.removed,
            "recovered": self.recovered,
            "repaired": self.repaired,
            "duplicates": self.duplicates,
            "chunks_written": self.chunks_written,
            "files": self.files,
            "store_written": self.created,
            "prune_skipped": self.prune_skipped,
            "problems": [str(p) for p in self.problems],
            "warnings": self.warnings,
            "moved_aside": self.moved_aside,
        }


@dataclass
class Plan:
    """What an ingest run will do with each incoming paper."""

    to_write: list[Paper] = field(default_factory=list)  # new or changed text: embedded
    in_place: list[tuple[Paper, Paper]] = field(default_factory=list)  # (stored, new) records
    added: int = 0
    updated: int = 0
    unchanged: int = 0


class Ingestor:
    def __init__(self, store: Store, embedder: Embedder, chunker: Chunker, batch_papers: int = 64):
        self.store = store
        self.embedder = embedder
        self.chunker = chunker
        self.batch_papers = batch_papers

    def _config_key(self) -> str:
        return f"{self.embedder.name}|{self.chunker.name}|sentences={self.store.keeps_sentences}"

    def run(
        self, loaded: LoadResult, prune: bool = False, progress: Progress | None = None
    ) -> IngestReport:
        report = IngestReport(
            duplicates=loaded.duplicates,
            files=len(loaded.files),
            problems=list(loaded.problems),
            warnings=list(loaded.warnings),
        )
        entries = self.store.entries()
        incoming = {p.paper_id for p in loaded.papers}
        # A different chunker means every paper's chunks change: rewrite all of them.
        config_changed = self.store.get_meta("config") not in (None, self._config_key())

        # 1. Finish what an interrupted run left: pending papers not in this input, and
        #    papers being deleted, are removed; pending papers in this input are rewritten below.
        report.recovered = sum(1 for e in entries.values() if e.state != "ready")
        leftovers = [
            pid
            for pid, e in entries.items()
            if e.state == "deleting" or (e.state == "pending" and pid not in incoming)
        ]
        self._remove(leftovers, entries)
        # ...and what is gone from under the journal: vectors of ready papers (re-embedded from
        # the store's own copy, given or not); vectors of papers it does not hold are dropped.
        broken = self.store.papers(sorted(self.store.repair()))

        # 2. Work out what changed: only new papers and papers whose text changed are embedded;
        #    papers whose vectors are gone are embedded again (repaired), given or not.
        intact = {
            p.paper_id
            for p in loaded.papers
            if p.paper_id in broken and broken[p.paper_id].fingerprint == p.fingerprint
        }
        plan = self._plan(
            [p for p in loaded.papers if p.paper_id not in intact], entries, config_changed
        )
        report.added, report.updated, report.unchanged = plan.added, plan.updated, plan.unchanged
        to_write = plan.to_write
        given = {p.paper_id for p in to_write}
        repairs = [p for p in loaded.papers if p.paper_id in intact]
        repairs += [p for pid, p in broken.items() if pid not in given and pid not in intact]
        report.repaired = len(repairs)
        to_write.extend(repairs)

        # 3. Write in batches; unchanged texts with a new record are updated in place.
        self.store.update_records([new for _, new in plan.in_place])
        self.store.set_meta("config", self._config_key())
        if loaded.headers and self.store.get_meta("title") is None:
            self.store.set_meta("title", max(set(loaded.headers), key=loaded.headers.count))
        done = 0
        if progress:
            progress(0, len(to_write))
        for start in range(0, len(to_write), self.batch_papers):
            batch = to_write[start : start + self.batch_papers]
            report.chunks_written += self._write_batch(batch)
            done += len(batch)
            if progress:
                progress(done, len(to_write))

        # 4. Prune papers whose source is no longer given; never on input that failed to load,
        #    where a mistyped or unreadable file would otherwise empty the store.
        report.prune_skipped = prune and bool(report.problems)
        if prune and not report.prune_skipped:
            gone = [pid for pid, e in entries.items() if e.state == "ready" and pid not in incoming]
            self._remove(gone, entries)
            report.removed = len(gone)
        self.store.flush()
        return report

    def _plan(self, papers: Sequence[Paper], entries: dict[str, Entry], rewrite_all: bool) -> Plan:
        """Sort papers into new, changed (to embed) and unchanged. A paper is unchanged when its
        title and abstract are: its position, metadata and label do not count. A fingerprint of
        an older kind (they included the position, or the label) is judged by the stored text."""
        plan = Plan()
        ready = [p.paper_id for p in papers if _state(entries, p.paper_id) == "ready"]
        stored = {} if rewrite_all else self.store.papers(ready)
        for paper in papers:
            known = stored.get(paper.paper_id)
            if known is not None and known.fingerprint == paper.fingerprint:
                plan.unchanged += 1
                if known != paper or entries[paper.paper_id].fingerprint != paper.fingerprint:
                    plan.in_place.append((known, paper))
                continue
            plan.to_write.append(paper)
            if _state(entries, paper.paper_id) == "ready":
                plan.updated += 1
            else:
                plan.added += 1
        return plan

    def _write_batch(self, batch: Sequence[Paper]) -> int:
        """Chunk, split into sentences and embed a batch of papers, then hand it to the store."""
        items = [PaperVectors(p, self.chunker.split(p), _NO_VECTORS) for p in batch]
        texts = [c.text for item in items for c in item.chunks]
        vectors = self.embedder.embed(texts)
        at = 0
        for item in items:
            item.chunk_vectors = vectors[at : at + len(item.chunks)]
            at += len(item.chunks)
        if self.store.keeps_sentences:
            self._embed_sentences(items)
        self.store.write(items)
        return len(texts)

    def _embed_sentences(self, items: Sequence[PaperVectors]) -> None:
        for item in items:
            item.sentences = sentences_of(item.paper)
        vectors = self.embedder.embed([s for item in items for s in item.sentences])
        at = 0
        for item in items:
            item.sentence_vectors = vectors[at : at + len(item.sentences)]
            at += len(item.sentences)

    def _remove(self, paper_ids: Sequence[str], entries: dict[str, Entry]) -> None:
        if not paper_ids:
            return
        self.store.remove(paper_ids)
        for pid in paper_ids:
            entries.pop(pid, None)


_NO_VECTORS = np.zeros((0, 0), dtype=np.float32)


def _state(entries: dict[str, Entry], paper_id: str) -> str | None:
    entry = entries.get(paper_id)
    return entry.state if entry else None
