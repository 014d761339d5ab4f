"""Incremental, idempotent, crash-safe ingestion: papers -> chunks -> vectors + catalog + BM25.

Order of writes for each batch: catalog rows as ``pending`` -> stale vectors deleted -> vectors
upserted (ids are ``paper_id:chunk``, so a retry overwrites rather than duplicates) -> rows
``ready``. Removal: ``deleting`` -> vectors deleted -> rows removed. Whatever an interrupted run
left unfinished is completed (or undone) at the start of the next one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from assistant import health
from assistant.catalog import Catalog
from assistant.chunking import Chunk, Chunker, sentences_of
from assistant.corpus import LoadResult, Paper
from assistant.diskspace import is_disk_full
from assistant.embeddings import Embedder
from assistant.errors import DiskFullError, InputFileError
from assistant.lexical import LexicalIndex
from assistant.vectors import ChromaVectors

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
    def __init__(
        self,
        catalog: Catalog,
        vectors: ChromaVectors,
        lexical: LexicalIndex,
        embedder: Embedder,
        chunker: Chunker,
        batch_papers: int = 64,
        sentences: ChromaVectors | None = None,
    ):
        self.catalog = catalog
        self.vectors = vectors
        self.lexical = lexical
        self.embedder = embedder
        self.chunker = chunker
        self.batch_papers = batch_papers
        self.sentences = sentences

    def _config_key(self) -> str:
        return f"{self.embedder.name}|{self.chunker.name}|sentences={self.sentences is not None}"

    def run(
        self, loaded: LoadResult, prune: bool = False, progress: Progress | None = None
    ) -> IngestReport:
        report = IngestReport(
            duplicates=loaded.duplicates,
            files=len(loaded.files),
            problems=list(loaded.problems),
            warnings=list(loaded.warnings),
        )
        states = self.catalog.states()
        incoming = {p.paper_id for p in loaded.papers}
        # A different chunker means every paper's chunks change: rewrite all of them.
        config_changed = self.catalog.get_meta("config") not in (None, self._config_key())

        # 1. Finish what an interrupted run left: pending papers not in this input, and
        #    papers being deleted, are removed; pending papers in this input are rewritten below.
        report.recovered = sum(1 for _, state, _ in states.values() if state != "ready")
        leftovers = [
            pid
            for pid, (_, state, _) in states.items()
            if state == "deleting" or (state == "pending" and pid not in incoming)
        ]
        self._remove(leftovers, states)
        # ...and what is gone from under the catalog: vectors of ready papers (re-embedded from
        # the catalog's own copy, given or not), vectors of papers it does not hold (dropped).
        gaps = health.vector_gaps(self.catalog, self.vectors, self.sentences)
        self.vectors.delete_ids(gaps.orphan_chunks)
        if self.sentences is not None:
            self.sentences.delete_ids(gaps.orphan_sentences)
        broken = self.catalog.papers(sorted(gaps.missing))

        # 2. Work out what changed: only new papers and papers whose text changed are embedded;
        #    papers whose vectors are gone are embedded again (repaired), given or not.
        intact = {
            p.paper_id
            for p in loaded.papers
            if p.paper_id in broken and broken[p.paper_id].fingerprint == p.fingerprint
        }
        plan = self._plan(
            [p for p in loaded.papers if p.paper_id not in intact], states, config_changed
        )
        report.added, report.updated, report.unchanged = plan.added, plan.updated, plan.unchanged
        to_write = plan.to_write
        given = {p.paper_id for p in to_write}
        repairs = [p for p in loaded.papers if p.paper_id in intact]
        repairs += [p for pid, p in broken.items() if pid not in given and pid not in intact]
        report.repaired = len(repairs)
        to_write.extend(repairs)

        # 3. Write in batches, journalled; unchanged texts with a new record are updated in place.
        self._update_in_place(plan.in_place)
        self.catalog.set_meta("config", self._config_key())
        if loaded.headers and self.catalog.get_meta("title") is None:
            self.catalog.set_meta("title", max(set(loaded.headers), key=loaded.headers.count))
        done = 0
        if progress:
            progress(0, len(to_write))
        for start in range(0, len(to_write), self.batch_papers):
            batch = to_write[start : start + self.batch_papers]
            try:
                report.chunks_written += self._write_batch(batch, states)
            except Exception as exc:
                self._fail_batch(exc, batch, states)
                raise
            done += len(batch)
            if progress:
                progress(done, len(to_write))

        # 4. Prune papers whose source is no longer given; never on input that failed to load,
        #    where a mistyped or unreadable file would otherwise empty the store.
        report.prune_skipped = prune and bool(report.problems)
        if prune and not report.prune_skipped:
            gone = [
                pid
                for pid, (_, state, _) in states.items()
                if state == "ready" and pid not in incoming
            ]
            self._remove(gone, states)
            report.removed = len(gone)

        if self.lexical.generation != self.catalog.generation:
            self.refresh_lexical()
        return report

    def _plan(
        self, papers: Sequence[Paper], states: dict[str, tuple[str, str, int]], rewrite_all: bool
    ) -> Plan:
        """Sort papers into new, changed (to embed) and unchanged. A paper is unchanged when its
        title and abstract are: its position, metadata and label do not count. A fingerprint of
        an older kind (they included the position, or the label) is judged by the stored text."""
        plan = Plan()
        ready = [p.paper_id for p in papers if states.get(p.paper_id, ("", ""))[1] == "ready"]
        stored = {} if rewrite_all else self.catalog.papers(ready)
        for paper in papers:
            known = stored.get(paper.paper_id)
            if known is not None and known.fingerprint == paper.fingerprint:
                plan.unchanged += 1
                if known != paper or states[paper.paper_id][0] != paper.fingerprint:
                    plan.in_place.append((known, paper))
                continue
            plan.to_write.append(paper)
            if paper.paper_id in states and states[paper.paper_id][1] == "ready":
                plan.updated += 1
            else:
                plan.added += 1
        return plan

    def _update_in_place(self, changes: Sequence[tuple[Paper, Paper]]) -> None:
        """New records for unchanged texts: vector metadata first (a crash before the catalog
        is written leaves the old record there, so the next run does this again), no embedding."""
        metas = {
            new.paper_id: new.metadata() for old, new in changes if old.metadata() != new.metadata()
        }
        if metas:
            self.vectors.set_paper_metadata(metas)
            if self.sentences is not None:
                self.sentences.set_paper_metadata(metas)
        self.catalog.update_in_place([new for _, new in changes])

    def _write_batch(self, batch: Sequence[Paper], states: dict[str, tuple[str, str, int]]) -> int:
        items: list[tuple[Paper, list[Chunk]]] = [(p, self.chunker.split(p)) for p in batch]
        self.catalog.mark_pending(items)
        stale: list[str] = []
        for paper, chunks in items:
            old_n = states.get(paper.paper_id, ("", "", 0))[2]
            stale.extend(f"{paper.paper_id}:{i}" for i in range(len(chunks), old_n))
        self.vectors.delete_ids(stale)
        chunks = [c for _, cs in items for c in cs]
        metas = {p.paper_id: p.metadata() for p, _ in items}
        vectors = self.embedder.embed([c.text for c in chunks])
        self.vectors.upsert(
            [c.chunk_id for c in chunks],
            vectors,
            [c.text for c in chunks],
            [{**metas[c.paper_id], "chunk": c.index} for c in chunks],
        )
        if self.sentences is not None:
            self._write_sentences(items, states, metas)
        self.catalog.set_state([p.paper_id for p in batch], "ready")
        return len(chunks)

    def _fail_batch(
        self, exc: Exception, batch: Sequence[Paper], states: dict[str, tuple[str, str, int]]
    ) -> None:
        """On a full disk, take back the batch's new papers (readers never saw them: they were
        pending) and say so in one line. Where even that cannot be written, the next ingest
        removes them, as after any interrupted run."""
        store = self.catalog.path.parent
        if not is_disk_full(exc, store):
            return
        new = [p.paper_id for p in batch if p.paper_id not in states]
        try:
            self._remove(new, states)
        except Exception as cleanup:  # still pending, so invisible; the next ingest removes them
            exc.add_note(f"taking the batch back failed too: {cleanup}")
        detail = exc.__cause__ if isinstance(exc, DiskFullError) and exc.__cause__ else exc
        raise DiskFullError(
            f"disk full writing {store}: {detail}. Papers written before this batch are kept; free "
            "some space and run the same `assistant ingest` again to finish"
        ) from exc

    def _write_sentences(
        self,
        items: Sequence[tuple[Paper, list[Chunk]]],
        states: dict[str, tuple[str, str, int]],
        metas: dict[str, dict[str, str | int]],
    ) -> None:
        assert self.sentences is not None
        self.sentences.delete_papers([p.paper_id for p, _ in items if p.paper_id in states])
        ids, texts, metadatas = [], [], []
        for paper, _ in items:
            for i, sentence in enumerate(sentences_of(paper)):
                ids.append(f"{paper.paper_id}:s{i}")
                texts.append(sentence)
                metadatas.append({**metas[paper.paper_id], "sentence": i})
        self.sentences.upsert(ids, self.embedder.embed(texts), texts, metadatas)

    def _remove(self, paper_ids: Sequence[str], states: dict[str, tuple[str, str, int]]) -> None:
        if not paper_ids:
            return
        self.catalog.set_state(paper_ids, "deleting")
        self.vectors.delete_papers(paper_ids)
        if self.sentences is not None:
            self.sentences.delete_papers(paper_ids)
        self.catalog.remove(paper_ids)
        for pid in paper_ids:
            states.pop(pid, None)

    def refresh_lexical(self) -> None:
        # The generation is read first: a change committed while the index is built leaves
        # it stamped older than the catalog, so it is rebuilt again, never trusted.
        generation = self.catalog.generation
        self.lexical.build(
            ((p.paper_id, p.text_for_index) for p in self.catalog.iter_ready()), generation
        )
