"""Incremental, idempotent ingestion: papers -> chunks and sentences -> vectors -> the store.

What changed is worked out against the store's journal: only new papers and papers whose title or
abstract changed are embedded. The store writes each batch as a journal (see
``assistant.store.local``); whatever an interrupted run left unfinished is completed (or undone)
at the start of the next one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from assistant.embedding.embedders import Embedder
from assistant.errors import InputFileError
from assistant.ingest.chunking import Chunker, sentence_weights, sentences_of
from assistant.ingest.corpus import LoadResult, Paper
from assistant.store.base import Entry, Filter, PaperVectors, Store
from assistant.store.filters import words

Progress = Callable[[int, int], None]  # (papers done, papers to do)


@dataclass
class IngestReport:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    edited: int = 0  # of the unchanged: details (year, venue, authors …) rewritten in place
    removed: int = 0
    recovered: int = 0  # unfinished papers from an interrupted run, finished or undone
    repaired: int = 0  # ready papers whose vectors were gone, re-embedded
    dropped: int = 0  # vectors of papers not in the catalog, removed
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
            "details_edited": self.edited,
            "removed": self.removed,
            "recovered": self.recovered,
            "repaired": self.repaired,
            "dropped_vectors": self.dropped,
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
    """What an ingest run will do with the incoming papers: ids only, so it stays small."""

    incoming: set[str] = field(default_factory=set)
    to_write: set[str] = field(default_factory=set)  # new or changed text, or vectors lost
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    edited: int = 0
    repaired: int = 0
    clashes: list[str] = field(default_factory=list)  # another paper's id: skipped, told
    files: set[str] = field(default_factory=set)  # names of the files that gave papers


def another_paper(known: Paper, paper: Paper) -> bool:
    """A paper with a stored paper's id that is not that paper edited: it comes from another
    file and shares under half the words of its title (without titles: of its abstract). Two
    libraries' exports can give different papers one key ("smith2019")."""
    if known.source_file == paper.source_file:
        return False
    titled = bool(known.title and paper.title)
    old = set(words((known.title if titled else known.abstract) or ""))
    new = set(words((paper.title if titled else paper.abstract) or ""))
    return len(old & new) < 0.5 * min(len(old), len(new))


def clash(known: Paper, paper: Paper) -> str:
    return (
        f"skipped {paper.paper_id} from {paper.source_file} ({paper.label!r}): the store holds "
        f"another paper with that id, from {known.source_file} ({known.label!r}); give one of "
        "them another id (its key or 'id' field) to keep both"
    )


WINDOW = 1000  # incoming papers compared with the store at a time
MAX_FILES_CHECKED = 50  # files looked at for papers left behind (each check reads the catalog)


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
        """Two passes over the input, each a stream: the first works out what changed (ids
        only), the second embeds and writes it. Memory holds a window of papers, not the
        corpus."""
        # Vectors gone from under the journal: those of ready papers are embedded again (from
        # the store's own copy, given or not); those of papers it does not hold are dropped.
        broken = self.store.repair()
        # A different chunker means every paper's chunks change: rewrite all of them.
        config_changed = self.store.get_meta("config") not in (None, self._config_key())
        plan = self._plan(loaded, broken, config_changed)
        report = IngestReport(
            added=plan.added,
            updated=plan.updated,
            unchanged=plan.unchanged,
            edited=plan.edited,
            duplicates=loaded.duplicates,
            files=len(loaded.files),
            problems=list(loaded.problems),
            warnings=list(loaded.warnings) + plan.clashes,
            dropped=self.store.dropped,
        )
        # Finish what an interrupted run left: pending papers not in this input, and papers
        # being deleted, are removed; pending papers in this input are rewritten.
        unfinished = self.store.unfinished()
        report.recovered = len(unfinished)
        self.store.remove(
            [
                pid
                for pid, e in unfinished.items()
                if e.state == "deleting" or (e.state == "pending" and pid not in plan.incoming)
            ]
        )
        if loaded.headers and self.store.get_meta("title") is None:
            self.store.set_meta("title", max(set(loaded.headers), key=loaded.headers.count))

        orphans = sorted(broken - plan.incoming)  # lost vectors of papers not given: stored copy
        report.repaired = plan.repaired + len(orphans)
        total = len(plan.to_write) + len(orphans)
        done = 0
        if progress:
            progress(0, total)
        for batch in self._to_write(loaded, plan.to_write, orphans):
            report.chunks_written += self._write_batch(batch)
            done += len(batch)
            if progress:
                progress(done, total)
        # Only now: a run cut short while a new chunker rewrote the papers leaves the old
        # config recorded, so the next run rewrites every paper again rather than keeping a
        # store that is chunked two ways.
        self.store.set_meta("config", self._config_key())

        # Prune papers whose source is no longer given; never on input that failed to load,
        # where a mistyped or unreadable file would otherwise empty the store, nor when a file
        # gave no paper (an export without abstracts: every entry skipped).
        barren = [f.name for f in loaded.files if f.name not in plan.files]
        if prune and barren and not report.problems:
            report.problems.append(
                InputFileError(barren[0], "no paper could be read from it (see the warnings)")
            )
        report.prune_skipped = prune and bool(report.problems)
        if prune and not report.prune_skipped:
            entries = self.store.entries()
            gone = [pid for pid, e in entries.items() if e.state == "ready"]
            gone = [pid for pid in gone if pid not in plan.incoming]
            self.store.remove(gone)
            report.removed = len(gone)
        else:
            report.warnings += self._left_behind(loaded, plan.incoming)
        self.store.flush()
        return report

    def _left_behind(self, loaded: LoadResult, incoming: set[str]) -> list[str]:
        """A line for each file given that the store holds papers from which are no longer in
        it: an abstract edited (without an ``id``, an edit is a new paper) or a line deleted.
        Files are told apart by name, as ``--filter source_file=`` does."""
        if len(loaded.files) > MAX_FILES_CHECKED:
            return []
        notes = []
        for name in dict.fromkeys(path.name for path in loaded.files):
            stale = self.store.matching(Filter(source_file=name)) - incoming
            if stale:
                notes.append(
                    f"{len(stale)} paper(s) ingested earlier from {name} are no longer in it "
                    "(edited or deleted); they stay searchable until `assistant ingest` is run "
                    "with --prune and every path the store should keep"
                )
        return notes

    def _plan(self, loaded: LoadResult, broken: set[str], rewrite_all: bool) -> Plan:
        """First pass: sort papers into new, changed (to embed) and unchanged, a window at a
        time. A paper is unchanged when its title and abstract are: its position, metadata and
        label do not count, and a new record for it is written in place at once. A fingerprint
        of an older kind (they included the position, or the label) is judged by the stored
        text. A given paper whose vectors are gone is embedded again (repaired)."""
        plan = Plan()
        for window in _windows(loaded.stream(), WINDOW):
            ids = [p.paper_id for p in window]
            plan.incoming.update(ids)
            plan.files.update(p.source_file for p in window)
            entries = self.store.entries(ids)
            ready = [pid for pid in ids if _state(entries, pid) == "ready"]
            stored = {} if rewrite_all else self.store.papers(ready)
            in_place = []
            for paper in window:
                known = stored.get(paper.paper_id)
                if known is not None and known.fingerprint == paper.fingerprint:
                    if paper.paper_id in broken:
                        plan.repaired += 1
                        plan.to_write.add(paper.paper_id)
                        continue
                    plan.unchanged += 1
                    plan.edited += _details(known) != _details(paper)
                    if known != paper or entries[paper.paper_id].fingerprint != paper.fingerprint:
                        in_place.append(paper)
                    continue
                if known is not None and another_paper(known, paper):
                    plan.clashes.append(clash(known, paper))
                    continue
                plan.to_write.add(paper.paper_id)
                if _state(entries, paper.paper_id) == "ready":
                    plan.updated += 1
                else:
                    plan.added += 1
            self.store.update_records(in_place)
        return plan

    def _to_write(
        self, loaded: LoadResult, wanted: set[str], orphans: list[str]
    ) -> Iterator[list[Paper]]:
        """Second pass: the planned papers in batches, read again from the input, then the
        papers whose vectors were lost and that were not given, from the store's copy."""
        planned = (p for p in loaded.stream() if p.paper_id in wanted)  # the stream dedupes
        yield from _windows(planned, self.batch_papers)
        for start in range(0, len(orphans), self.batch_papers):
            found = self.store.papers(orphans[start : start + self.batch_papers])
            if found:
                yield list(found.values())

    def _write_batch(self, batch: Sequence[Paper]) -> int:
        """Chunk, split into sentences and embed a batch of papers, then hand it to the store."""
        items = [PaperVectors(p, self.chunker.split(p), _NO_VECTORS) for p in batch]
        pooled = self.store.keeps_sentences and self.embedder.pools_chunks
        if not pooled:
            chunk_texts = [[c.text for c in item.chunks] for item in items]
            for item, vectors in zip(items, self._embed_each(chunk_texts), strict=True):
                item.chunk_vectors = vectors
        if self.store.keeps_sentences:
            for item in items:
                item.sentences = sentences_of(item.paper)
            embedded = self._embed_each([item.sentences for item in items])
            for item, vectors in zip(items, embedded, strict=True):
                item.sentence_vectors = vectors
        if pooled:
            chunked = [item for item in items if item.chunks]
            heads = self.embedder.embed_heads([item.chunks[0].text for item in chunked])
            for item, head in zip(chunked, heads, strict=True):
                item.chunk_vectors = _pooled(item, head)
        self.store.write(items)
        return sum(len(item.chunks) for item in items)

    def _embed_each(self, groups: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """The vectors of each group of texts, embedded in one call."""
        vectors = self.embedder.embed([text for group in groups for text in group])
        ends = np.cumsum([len(group) for group in groups])
        return np.split(vectors, ends[:-1]) if len(groups) else []


_NO_VECTORS = np.zeros((0, 0), dtype=np.float32)


def _pooled(item: PaperVectors, head: np.ndarray) -> np.ndarray:
    """A paper's chunk vectors: its first chunk's own (``head``), then each later chunk's
    sentence vectors averaged, weighted by length, and normalised."""
    assert item.sentence_vectors is not None
    out = np.empty((len(item.chunks), len(head)), dtype=np.float32)
    out[0] = head
    weights = sentence_weights(item.paper, item.chunks, item.sentences)
    for row, held in enumerate(weights[1:], start=1):
        if not held:  # no sentences at all
            out[row] = head
            continue
        w = np.array(list(held.values()), dtype=np.float32)
        vector = w @ item.sentence_vectors[list(held)]
        out[row] = vector / max(float(np.linalg.norm(vector)), 1e-12)
    return out


def _state(entries: dict[str, Entry], paper_id: str) -> str | None:
    entry = entries.get(paper_id)
    return entry.state if entry else None


def _windows(papers: Iterable[Paper], size: int) -> Iterator[list[Paper]]:
    window: list[Paper] = []
    for paper in papers:
        window.append(paper)
        if len(window) == size:
            yield window
            window = []
    if window:
        yield window


def _details(paper: Paper) -> tuple[object, ...]:
    """What a user edits in a record besides its text (not its place in the file)."""
    return (paper.authors, paper.year, paper.venue, paper.url, paper.doi)
