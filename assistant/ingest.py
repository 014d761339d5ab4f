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
            "problems": [str(p) for p in self.problems],
            "warnings": self.warnings,
            "moved_aside": self.moved_aside,
        }


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

        # 2. Work out what changed. A paper whose only change is its derived label (or whose
        #    fingerprint is the older kind that included the label) is relabelled in place.
        to_write: list[Paper] = []
        relabel: list[tuple[str, str, str]] = []
        labels = self.catalog.labels() if states else {}
        for paper in loaded.papers:
            known = states.get(paper.paper_id)
            if paper.paper_id in broken and known and known[0] == paper.fingerprint:
                continue  # unchanged but re-embedded, counted as repaired
            if known and known[1] == "ready" and not config_changed:
                label = labels.get(paper.paper_id, "")
                if known[0] in (paper.fingerprint, paper.legacy_fingerprint(label)):
                    report.unchanged += 1
                    if (known[0], label) != (paper.fingerprint, paper.label):
                        relabel.append((paper.paper_id, paper.fingerprint, paper.label))
                    continue
            to_write.append(paper)
            if known and known[1] == "ready":
                report.updated += 1
            else:
                report.added += 1

        given = {p.paper_id for p in to_write}
        repairs = [p for pid, p in broken.items() if pid not in given]
        report.repaired = len(repairs)
        to_write.extend(repairs)

        # 3. Write in batches, journalled.
        self.catalog.relabel(relabel)
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

        # 4. Prune papers whose source is no longer given.
        if prune:
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
