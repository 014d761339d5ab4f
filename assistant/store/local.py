"""The product's store: a SQLite catalog (the journal), vector indexes for chunk and sentence
vectors behind ``VectorIndexes`` (Chroma collections, or exact ones in memory), and a lexical
index kept from the catalog's records (``segments``), all in one folder.
(``ServerStore`` keeps the journal on a Chroma server and uses a ``LocalStore`` over a copy of
it as its cache.)

Order of writes for each batch: catalog rows ``pending`` -> stale vectors deleted -> vectors
upserted (ids are ``paper:N`` and ``paper:sN``, so a retry overwrites rather than duplicates) ->
rows ``ready``. Removal: ``deleting`` -> vectors deleted -> rows removed. Readers see ``ready``
papers only, so an interrupted run shows nothing half written; the next ingest finishes or undoes
it. The lexical index follows the catalog's change records, written in the same transactions.

The vector indexes are caches of the catalog, and the catalog journals every call that changes
them: meta ``vectors_writing`` is set before it and cleared after. A command that finds it set
while no writer runs has the indexes probed (Chroma's in a child process); if that fails, or
an index cannot be opened or read at all, the next writer moves the indexes aside (Chroma's
folder to ``chroma.damaged-TIME``, nothing deleted) and embeds every paper again from the
catalog, with ``vectors_rebuilding`` set until the run ends. Readers meanwhile are told, in one
line. Each cleared mark records the index files' fingerprint (meta ``vectors_files``: their
names and sizes); files that no longer match it were changed from outside (copied, restored,
damaged), and are probed the same way before they are read, once.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from typing import TypeVar

import numpy as np

from assistant.errors import DiskFullError, StoreError, VectorIndexDamagedError
from assistant.ingest.chunking import sentences_of
from assistant.ingest.corpus import Paper
from assistant.store import read_copy
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
from assistant.store.catalog import Catalog
from assistant.store.diskspace import is_disk_full, said_when_full
from assistant.store.filtered import (
    Allowed,
    AllowedCache,
    Facets,
    allowed_from,
    exact,
    exact_nearest,
    held,
    overfetch,
    overfetch_again,
    sentences_named,
    short_by,
)
from assistant.store.health import Health, examine, vector_gaps
from assistant.store.locking import index_files, writer_lock, writer_running
from assistant.store.read_copy import COPY_FILE, COPY_VECTORS, ReadCopy
from assistant.store.segments import SegmentedLexical
from assistant.store.vector_index import (
    VectorIndex,
    VectorIndexes,
    best_at_its_distance,
    damaged_message,
)
from assistant.text.terms import analyze

T = TypeVar("T")

WRITING, REBUILDING = "vectors_writing", "vectors_rebuilding"  # catalog meta: the journal
FILES = "vectors_files"  # the indexes' fingerprint as the last writer (or probe) left them
COPY = "vectors_copy"  # the tag of the read copy that holds what the indexes hold (``read_copy``)


class LocalStore(Store):
    def __init__(
        self,
        catalog: Catalog,
        indexes: VectorIndexes,
        collection: str,
        keeps_sentences: bool,
        journal: bool = True,
        copy_vectors: int = COPY_VECTORS,
        query_embedder: Callable[[], str] | None = None,
    ):
        """``indexes`` opens vector indexes by name when first used, so reading the catalog
        alone never starts a vector engine. ``collection``: the chunk index's name (the
        sentences' adds ``-sentences``). ``journal``: the vectors' writes are journalled and
        damaged indexes rebuilt (not for a server's cache, whose indexes are the server's).
        ``copy_vectors``: the most vectors a read copy holds (``read_copy``; 0: none).
        ``query_embedder``: the name of the embedder reads embed their queries with; the
        copy is read only when it is the store's (else the index, whose opening says so)."""
        self.catalog = catalog
        self.folder = catalog.path.parent
        self.keeps_sentences = keeps_sentences
        self.indexes = indexes
        self._names = {"chunks": collection, "sentences": f"{collection}-sentences"}
        self._collections: dict[Kind, VectorIndex] = {}
        self._seen = -1  # the catalog's generation, read before the open handles were opened
        self.journal = journal
        self._writing = False  # inside ``writer``: this process holds the writer lock
        # ((generation, fingerprint), what a probe said of the indexes then)
        self._probed: tuple[tuple[int, str | None], str | None] | None = None
        self.moved_aside: list[str] = []  # where unreadable indexes this process moved went
        self._lexical: SegmentedLexical | None = None
        self._lock = threading.RLock()  # eval workers share one store: wiring happens once
        self._allowed = AllowedCache()  # filters resolved to papers (``filtered``)
        self._facets: tuple[int, Facets] | None = None  # (catalog generation, what filters read)
        self.copy_vectors = copy_vectors if journal else 0
        self.query_embedder = query_embedder
        # ((catalog generation, copy tag), read copy)
        self._copy: tuple[tuple[int, str | None], ReadCopy | None] | None = None

    # -- parts, opened when first used --------------------------------------------------------
    def collection(self, kind: Kind) -> VectorIndex:
        """An index, opened when first used, and opened again once the catalog says the store
        changed since (its generation moved). A handle that only reads may hold the index as
        it was when first read (Chroma loads a process's copy once), while the metadata a
        filter reads is always current, so a stale copy misses new papers and fails a filtered
        read ("Error finding id"); such handles are closed and opened anew. The generation is
        read before opening, so a write that lands during the open makes the next call open
        again."""
        with self._lock:
            generation = self.catalog.generation
            if generation != self._seen:
                self._drop_snapshots()
            self._seen = generation
            if kind not in self._collections:
                self._check_journal()
                self._collections[kind] = self.indexes.open(self._name(kind))
            return self._collections[kind]

    def _drop_snapshots(self) -> None:
        """Close every handle opened to read: Chroma shares one system among a process's
        clients of a folder, and reads the files afresh only once all of them are closed."""
        for stale in [k for k, opened in self._collections.items() if opened.read_only]:
            self._collections.pop(stale).close()

    def forget_vectors(self) -> None:
        """Close every index handle (a write has ended: reads open them anew, read-only)."""
        with self._lock:
            while self._collections:
                self._collections.popitem()[1].close()

    # -- the journal of vector writes ---------------------------------------------------------
    @contextmanager
    def _changing(self) -> Iterator[None]:
        """Around each call that changes a vector index: a kill inside leaves the mark."""
        if self.journal:
            self.catalog.set_meta(COPY, "")  # the read copy no longer holds what they hold
            self.catalog.set_meta(WRITING, str(os.getpid()))
        yield
        if self.journal:
            self._settle()

    def _settle(self) -> None:
        """The indexes are whole as they lie: record their files' fingerprint, then clear the
        write mark (in that order: a reader that sees no mark sees this fingerprint)."""
        self.catalog.set_meta(FILES, self.indexes.fingerprint() or "")
        self.catalog.set_meta(WRITING, "")

    def _check_journal(self) -> None:
        """Before a reader opens the vectors: a rebuild under way, or a write mark left by a
        writer that is gone and an index that a probe cannot read, is a damaged index."""
        if not self.journal or self._writing:
            return
        rebuilding, writing = self.catalog.get_meta(REBUILDING), self.catalog.get_meta(WRITING)
        if not rebuilding and not writing:
            self._check_files()
            return
        live = writer_running(self.folder)
        if rebuilding:
            said = (
                f"an ingest ({live}) is rebuilding it from the catalog; run this again when it "
                "has finished"
                if live
                else f"its rebuild was interrupted ({rebuilding})"
            )
            raise VectorIndexDamagedError(damaged_message(str(self.folder), said))
        if live:
            return  # the mark is that writer's own
        fault = self.probe()
        if fault:
            raise VectorIndexDamagedError(damaged_message(str(self.folder), fault))
        try:  # read whole: the mark goes, unless a writer has started meanwhile
            with writer_lock(self.folder, wait=False):
                self._settle()
        except StoreError:
            pass  # that writer looks at the mark itself

    def _check_files(self) -> None:
        """Index files that changed since the last writer left them (copied in, restored, or
        damaged from outside: no mark says so) are probed before a reader reads them, and
        compared with the catalog, once: a damaged index, or one that lacks the catalog's
        papers or holds others (a backup of one restored beside a newer copy of the other),
        is told; a whole one's fingerprint is recorded. Reading them unchecked could answer
        from what Chroma still reads, or crash inside it. A writer's own changes are never
        seen here (it records the fingerprint before it clears its mark), so a writer that
        runs does not excuse the check: it may have just started, not yet probed."""
        now = self._changed_outside()
        if now is None:
            return
        fault = self.probe()
        unmatched = None if fault else self._unmatched()
        live = writer_running(self.folder) if fault or unmatched else None
        if live:  # what was read may be that writer's work under way: not a diagnosis
            raise VectorIndexDamagedError(
                f"the vector indexes in {self.folder} are being rewritten by an ingest "
                f"({live}); run this again when it has finished"
            )
        if fault:
            raise VectorIndexDamagedError(damaged_message(str(self.folder), fault))
        if unmatched:
            raise VectorIndexDamagedError(
                f"the vector indexes in {self.folder} do not match its catalog ({unmatched}): "
                "were they restored from another copy of the store? `assistant ingest --repair "
                f"--store {self.folder}` embeds the missing papers again and removes the rest"
            )
        self._record_files(now)

    def _unmatched(self) -> str | None:
        """How the indexes (read whole by a probe) disagree with the catalog's ready papers,
        in a few words; None when they agree."""
        opened = {kind: self.indexes.open(self._name(kind)) for kind in self._kinds()}
        try:
            gaps = vector_gaps(self.catalog, opened["chunks"], opened.get("sentences"))
        finally:
            for index in opened.values():
                index.close()
        said = []
        if gaps.missing:
            said.append(f"{_count_of(len(gaps.missing), 'paper')} of the catalog missing")
        strays = {paper_of(v) for v in [*gaps.orphan_chunks, *gaps.orphan_sentences]}
        if strays:
            said.append(f"{_count_of(len(strays), 'paper')} not in the catalog present")
        return "; ".join(said) or None

    def _record_files(self, probed: str) -> None:
        """Record the fingerprint of indexes a probe read whole, unless a writer has started
        since (or the store cannot be written: then the next reader probes again)."""
        try:
            with writer_lock(self.folder, wait=False):
                if self.indexes.fingerprint() == probed:
                    self.catalog.set_meta(FILES, probed)
        except (StoreError, OSError, sqlite3.Error):
            pass

    @contextmanager
    def writer(
        self, wait: bool = True, on_wait: Callable[[str], None] | None = None
    ) -> Iterator[None]:
        """The caller holds the folder's writer lock: marks left in the journal are not a live
        writer's, and ``repair`` looks at them."""
        self._writing = True
        try:
            yield
        finally:
            self._writing = False

    def probe(self) -> str | None:
        """What reading the vector indexes whole met (None: they read whole), once per
        generation of the catalog and state of the index files."""
        state = (self.catalog.generation, self.indexes.fingerprint())
        if self._probed is None or self._probed[0] != state:
            names = [self._name(kind) for kind in self._kinds()]
            self._probed = (state, self.indexes.probe(names))
        return self._probed[1]

    @property
    def chunks(self) -> VectorIndex:
        return self.collection("chunks")

    @property
    def sentences(self) -> VectorIndex | None:
        return self.collection("sentences") if self.keeps_sentences else None

    @property
    def lexical_index(self) -> SegmentedLexical:
        """The lexical index: a base segment and the papers written since (see segments)."""
        with self._lock:
            if self._lexical is None:
                self._lexical = SegmentedLexical(self.folder / "bm25", self.catalog)
            return self._lexical

    # -- the journal ------------------------------------------------------------------------
    def entries(self, paper_ids: Sequence[str] | None = None) -> dict[str, Entry]:
        return {pid: Entry(*row) for pid, row in self.catalog.states(paper_ids).items()}

    def unfinished(self) -> dict[str, Entry]:
        return {pid: Entry(*row) for pid, row in self.catalog.unfinished().items()}

    def write(self, batch: Sequence[PaperVectors]) -> None:
        if not batch:
            return
        before = self.catalog.states([item.paper.paper_id for item in batch])
        same = self._unchanged(batch, before)
        if same:
            self._refresh(same, before)
        refreshed = {item.paper.paper_id for item in same}
        batch = [item for item in batch if item.paper.paper_id not in refreshed]
        if not batch:
            return
        ids = [item.paper.paper_id for item in batch]
        terms = analyze([item.paper.text_for_index for item in batch])
        try:
            self.catalog.mark_pending(
                [(item.paper, item.chunks) for item in batch],
                {pid: " ".join(words) for pid, words in zip(ids, terms, strict=True)},
            )
            old_chunks = {pid: row[2] for pid, row in before.items()}
            with self._changing():
                write_vectors(self.chunks, self.sentences, batch, old_chunks)
            self.catalog.set_state(ids, "ready")
        except Exception as exc:
            self._fail(exc, [pid for pid in ids if pid not in before])
            raise

    def _unchanged(
        self, batch: Sequence[PaperVectors], before: Mapping[str, tuple[str, str, int]]
    ) -> list[PaperVectors]:
        """The papers of a batch the catalog holds ready with these very chunks: their vectors
        are being written again (lost, or a damaged index rebuilt), not their text. Judged by
        the stored text and chunks, not the fingerprint, which an older version computed
        otherwise."""
        known = [
            item
            for item in batch
            if item.paper.paper_id in before
            and before[item.paper.paper_id][1:] == ("ready", len(item.chunks))
        ]
        stored = self.catalog.papers([item.paper.paper_id for item in known])
        texts = self.catalog.chunk_texts([c.chunk_id for item in known for c in item.chunks])
        return [
            item
            for item in known
            if (old := stored.get(item.paper.paper_id)) is not None
            and (old.title, old.abstract) == (item.paper.title, item.paper.abstract)
            and all(texts.get(c.chunk_id) == c.text for c in item.chunks)
        ]

    def _refresh(
        self, same: Sequence[PaperVectors], before: Mapping[str, tuple[str, str, int]]
    ) -> None:
        """Vectors again for papers whose text is unchanged. They stay ready throughout: a kill
        leaves some of their vectors missing, which the next run's repair finds and writes, where
        marking them pending would have had the next run take back papers it was not given.
        Their records are rewritten after the vectors, as ``update_records`` does: the vectors
        carry the papers' metadata as given now (a year, a venue, a source changed)."""
        old_chunks = {i.paper.paper_id: before[i.paper.paper_id][2] for i in same}
        with self._changing():
            write_vectors(self.chunks, self.sentences, same, old_chunks)
        self.catalog.update_in_place([item.paper for item in same])
        self.catalog.bump_generation()  # readers open the vectors again

    def _fail(self, exc: Exception, new: list[str]) -> None:
        """On a full disk, take back the batch's new papers (readers never saw them: they were
        pending) and say so in one line. Where even that cannot be written, the next ingest
        removes them, as after any interrupted run."""
        if not is_disk_full(exc, self.folder):
            return
        try:
            self.remove(new)
        except Exception as cleanup:  # still pending, so invisible; the next ingest removes them
            exc.add_note(f"taking the batch back failed too: {cleanup}")
        detail = exc.__cause__ if isinstance(exc, DiskFullError) and exc.__cause__ else exc
        raise DiskFullError(
            f"disk full writing {self.folder}: {detail}. Papers written before this batch are "
            "kept; free some space and run the same `assistant ingest` again to finish"
        ) from exc

    def update_records(self, papers: Sequence[Paper]) -> None:
        """Vector metadata first: a crash before the catalog is written leaves the old record
        there, so the next run does this again."""
        old = self.catalog.papers([p.paper_id for p in papers])
        metas = {
            p.paper_id: p.metadata()
            for p in papers
            if p.paper_id in old and old[p.paper_id].metadata() != p.metadata()
        }
        self.retag_vectors(metas)
        self.catalog.update_in_place(papers)

    def retag_vectors(self, metas: Mapping[str, Mapping[str, str | int]]) -> None:
        """New metadata (paper_id -> metadata) on these papers' chunk and sentence vectors."""
        if metas:
            with self._changing():
                self.chunks.set_paper_metadata(metas)
                if self.sentences is not None:
                    self.sentences.set_paper_metadata(metas)

    def drop_vectors(self, paper_ids: Sequence[str]) -> None:
        """Delete these papers' chunk and sentence vectors."""
        with self._changing():
            self.chunks.delete_papers(paper_ids)
            if self.sentences is not None:
                self.sentences.delete_papers(paper_ids)

    def remove(self, paper_ids: Sequence[str]) -> None:
        if not paper_ids:
            return
        self.catalog.set_state(paper_ids, "deleting")
        self.drop_vectors(paper_ids)
        self.catalog.remove(paper_ids)

    def repair(self) -> set[str]:
        """Under the writer lock: an index that a probe or its engine cannot read is moved aside
        and rebuilt (every ready paper is then missing, for the caller to embed again)."""
        self._recover()
        try:
            gaps = vector_gaps(self.catalog, self.chunks, self.sentences)
        except VectorIndexDamagedError as exc:
            self._move_aside(str(exc))
            gaps = vector_gaps(self.catalog, self.chunks, self.sentences)
        if gaps.orphan_chunks or gaps.orphan_sentences:  # else the read copy stays good
            with self._changing():
                self.chunks.delete_ids(gaps.orphan_chunks)
                if self.sentences is not None:
                    self.sentences.delete_ids(gaps.orphan_sentences)
        self.dropped = len(gaps.orphan_chunks) + len(gaps.orphan_sentences)
        return gaps.missing

    def verify_vectors(self) -> None:
        if self.journal and self.indexes.present():
            fault = self.probe()
            if fault:
                self._move_aside(fault)

    def _recover(self) -> None:
        """What a writer finds: a write mark (the last writer died inside a call that changed
        an index) whose index a probe cannot read, or indexes visibly torn (Chroma's folder
        without its database), means the indexes go aside to be rebuilt."""
        if not self.journal:
            return
        torn = self.indexes.torn()
        if torn:
            self._move_aside(torn)
        elif self.catalog.get_meta(WRITING) or self._changed_outside() is not None:
            fault = self.probe()
            if fault:
                self._move_aside(fault)
            else:
                self._settle()

    def _changed_outside(self) -> str | None:
        """The indexes' fingerprint when their files are not as the last writer left them
        (or, in a store made by an older version, nobody recorded how it left them)."""
        now = self.indexes.fingerprint()
        if now is None or now == self.catalog.get_meta(FILES) or not self.catalog.has_ready():
            return None
        return now

    def _move_aside(self, reason: str) -> None:
        """Move the indexes aside (Chroma's ``chroma`` to ``chroma.damaged-TIME``, nothing
        deleted) and start them anew; readers are told a rebuild is under way until the run
        ends (``flush``)."""
        if not self.journal:
            raise VectorIndexDamagedError(damaged_message(str(self.folder), reason))
        self.forget_vectors()
        self.catalog.set_meta(REBUILDING, " ".join(reason.split())[:300])
        moved = self.indexes.move_aside()
        if moved:
            self.moved_aside.append(moved)
        # New collections under the configured names; readers open them again.
        reset = {f"collection:{kind}": None for kind in ("chunks", "sentences")}
        self.catalog.switch_meta({**reset, WRITING: ""})
        self._probed = None

    def set_aside(self) -> list[str]:
        return list(self.moved_aside)

    def _kinds(self) -> list[Kind]:
        return ["chunks", "sentences"] if self.keeps_sentences else ["chunks"]

    def _name(self, kind: Kind) -> str:
        """The collection readers take vectors from: the configured name, or the one a rebuild
        by an older version of this code chose (meta ``collection:KIND``)."""
        return self.catalog.get_meta(f"collection:{kind}") or self._names[kind]

    def warm(self) -> None:
        if self._read_copy():
            return
        self.chunks  # noqa: B018 -- opening an index (importing chromadb) is the slow part
        if self.keeps_sentences:
            self.collection("sentences")

    def flush(self) -> None:
        """At the end of a whole run: a rebuilt vector index is whole, and the lexical delta
        is folded into a new base once it has grown (most ingests do not)."""
        if self.journal and self.catalog.get_meta(REBUILDING):
            self.catalog.switch_meta({REBUILDING: None})
        with said_when_full(self.folder):
            self.lexical_index.compact()
        self._keep_copy()

    # -- the read copy of a small store's vectors (``read_copy``) -----------------------------
    def _keep_copy(self) -> None:
        """At the end of a run: a copy of the vectors for readers, unless the one named in
        the catalog is still there (no write since) or the store is too big for one."""
        path = self.folder / COPY_FILE
        read_copy.discard(path, copy=False)  # scratch files of a writer killed writing one
        if not self.copy_vectors:
            read_copy.discard(path)
            return
        tag = self.catalog.get_meta(COPY)
        if not self.indexes.present() or (tag and read_copy.load(path, tag, self._kinds())):
            return  # read whole: a file damaged past its tag is written again
        opened = {kind: self.collection(kind) for kind in self._kinds()}
        if sum(index.count() for index in opened.values()) > self.copy_vectors:
            read_copy.discard(path)
            return
        tag = read_copy.new_tag()
        try:
            read_copy.write(path, tag, opened)
        except (OSError, ValueError):
            read_copy.discard(path)  # a cache: readers read the indexes themselves
            return
        self.catalog.set_meta(COPY, tag)

    def _read_copy(self) -> ReadCopy | None:
        """The read copy, if it holds what the indexes hold: no write since it was made, no
        write mark, index files as the last writer left them. Looked at again when the
        catalog's generation or the copy it names moves (a writer names its new copy after
        its last change of generation: a reader that looked in between would else read the
        indexes until the next write)."""
        if not self.copy_vectors or self.query_embedder is None or self._writing:
            return None
        with self._lock:
            state = (self.catalog.generation, self.catalog.get_meta(COPY))
            if self._copy is None or self._copy[0] != state:
                self._copy = (state, self._load_copy(self.query_embedder()))
            return self._copy[1]

    def read_copy_note(self) -> str:
        """Whether reads use the read copy, in a few words (for ``info``)."""
        if self._read_copy() is not None:
            size = (self.folder / COPY_FILE).stat().st_size
            return f"{COPY_FILE}, {size / 1e6:.1f} MB (reads search it, not Chroma)"
        if not self.copy_vectors:
            return "none (turned off: ASSISTANT_STORE__READ_COPY=0)"
        return (
            f"none (the store holds more than {self.copy_vectors:,} vectors, or the next "
            "ingest makes one)"
        )

    def _load_copy(self, embedder: str) -> ReadCopy | None:
        """The copy, for a reader whose queries ``embedder`` embeds."""
        tag = self.catalog.get_meta(COPY)
        if not tag or self.catalog.get_meta(WRITING) or self.catalog.get_meta(REBUILDING):
            return None
        if self.recorded_embedder() != embedder:
            return None  # another embedder's vectors: opening the index says so
        if self._changed_outside() is not None:
            return None
        return read_copy.load(self.folder / COPY_FILE, tag, self._kinds())

    def get_meta(self, key: str) -> str | None:
        return self.catalog.get_meta(key)

    def set_meta(self, key: str, value: str) -> None:
        self.catalog.set_meta(key, value)

    def stamp(self) -> int:
        return self.catalog.generation

    # -- reads ------------------------------------------------------------------------------
    def papers(self, paper_ids: Sequence[str]) -> dict[str, Paper]:
        return self.catalog.papers(paper_ids)

    def chunk_texts(self, chunk_ids: Sequence[str]) -> dict[str, str]:
        return self.catalog.chunk_texts(chunk_ids)

    def chunks_of(self, paper_id: str) -> list[str]:
        return self.catalog.chunks_of(paper_id)

    def nearest(
        self, kind: Kind, vector: np.ndarray, n: int, where: Filter, papers: int | None = None
    ) -> list[Match]:
        if kind == "sentences" and not self.keeps_sentences:
            return []
        copy = self._read_copy()
        if copy is not None:
            keep = self.allowed(where).papers if where else None
            return copy.nearest(kind, vector, n, keep) if keep is None or keep else []
        if not where:
            return self._read(kind, lambda vectors: self._query(vectors, vector, n, where))
        allowed = self.allowed(where)
        if not allowed.papers:
            return []
        few = self._few_ids(kind, allowed)
        if few is not None:  # read them, score them exactly (see ``filtered``)
            return exact_nearest(*self._vectors_of(kind, allowed, few), vector, n)
        kept = self._kept_of_unfiltered(kind, vector, n, allowed, papers)
        if kept is not None:
            return kept
        ids = allowed.chunk_ids if kind == "chunks" else self._sentence_ids(allowed)
        if ids is not None:
            try:
                return self._read(kind, lambda vectors: self._query(vectors, vector, n, where, ids))
            except VectorIndexDamagedError:
                pass  # a vector the catalog lists is not in the index: filter by metadata
        if where.catalog_only:  # fields the vectors' metadata does not hold
            where = Filter(paper_ids=allowed.papers)
        return self._read(kind, lambda vectors: self._query(vectors, vector, n, where))

    def prepare(self, where: Filter, kinds: Sequence[Kind]) -> None:
        if not where or self._read_copy() is not None:
            return
        allowed = self.allowed(where)
        for kind in kinds:
            few = self._few_ids(kind, allowed) if allowed.papers else None
            if few is not None and (kind == "chunks" or self.keeps_sentences):
                self._vectors_of(kind, allowed, few)

    def _vectors_of(
        self, kind: Kind, allowed: Allowed, ids: Sequence[str]
    ) -> tuple[list[str], np.ndarray]:
        """The allowed papers' vectors of this kind (``ids``) and their ids, read once per
        resolved filter (a chat's next question under the same filter reads none)."""
        if kind not in allowed.read:
            got = self._read(kind, lambda vectors: vectors.get_vectors(ids))
            found = list(got)
            matrix = np.stack([got[i] for i in found]) if found else np.zeros((0, 0))
            allowed.read[kind] = (found, matrix)
        return allowed.read[kind]

    def _few_ids(self, kind: Kind, allowed: Allowed) -> Sequence[str] | None:
        """The ids of the allowed papers' vectors when few enough to read and score exactly."""
        if kind == "chunks":
            return allowed.chunk_ids if exact(allowed.chunks) else None
        ids = self._sentence_ids(allowed)
        return ids if ids is not None and exact(len(ids)) else None

    def _kept_of_unfiltered(
        self, kind: Kind, vector: np.ndarray, n: int, allowed: Allowed, papers: int | None
    ) -> list[Match] | None:
        """The n nearest of the allowed papers' vectors (or the first of them that hold
        ``papers`` papers: ``filtered.held``), from an unfiltered search asked for more
        (``filtered.overfetch``), and asked again for more once if its answer held too few;
        None when the allowed share is too small for it, or the answers held too few and the
        index more vectors than they returned."""
        asked = overfetch(n, allowed, papers)
        for _ in range(2):
            if asked is None:
                return None
            found = self._read(kind, partial(self._query, vector=vector, n=asked, where=Filter()))
            kept = [m for m in found if m.paper_id in allowed.papers]
            enough = held(kept, n, papers)
            if enough is not None or len(found) < asked:
                return enough if enough is not None else kept
            asked = overfetch_again(asked, short_by(kept, n, papers))
        return None

    def _query(
        self,
        index: VectorIndex,
        vector: np.ndarray,
        n: int,
        where: Filter,
        ids: Sequence[str] | None = None,
    ) -> list[Match]:
        """The index's answer, checked: an index whose files were damaged can answer a
        filtered search without an error, with nothing (a zeroed ``data_level0.bin`` does) or
        with the wrong neighbours. Asked about papers the catalog holds ready, it must find
        some, and its best match must be at the distance its stored vector gives (one read by
        id per query)."""
        matches = index.query(vector, n, where, ids)
        if not matches and n > 0 and self.catalog.has_ready():
            said = "it found no vector of the papers asked about, which the catalog holds"
            raise VectorIndexDamagedError(damaged_message(str(self.folder), said))
        if matches and not best_at_its_distance(index, vector, matches):
            said = f"the stored vector of {matches[0].item_id} does not give the distance returned"
            raise VectorIndexDamagedError(damaged_message(str(self.folder), said))
        return matches

    def _sentence_ids(self, allowed: Allowed) -> tuple[str, ...] | None:
        """The ids of the allowed papers' sentence vectors, made from their texts as ingest
        made them; None for more than ``SENTENCE_PAPERS`` papers."""
        if allowed.sentence_ids is None and sentences_named(len(allowed.papers)):
            papers = self.catalog.papers(sorted(allowed.papers))
            allowed.sentence_ids = tuple(
                sentence_id(pid, i)
                for pid, paper in papers.items()
                for i in range(len(sentences_of(paper)))
            )
        return allowed.sentence_ids

    def allowed(self, where: Filter) -> Allowed:
        """The ready papers the filter accepts, and their chunk ids, from the catalog (the
        last few filters are kept while the catalog's generation stays)."""
        return self._allowed.get(self.catalog.generation, where, lambda: self._resolve(where))

    def _resolve(self, where: Filter) -> Allowed:
        with self._lock:
            generation = self.catalog.generation  # read first: a later write reads anew
            if self._facets is None or self._facets[0] != generation:
                self._facets = (generation, Facets(self.catalog.filter_rows()))
            facets = self._facets[1]
        if facets.answers(where):
            return facets.allowed(where)
        papers: Collection[str] | None = where.paper_ids
        if papers is None or replace(where, paper_ids=None):  # not just a list of papers
            papers = self._matching(where)
        states = self.catalog.states(sorted(papers))
        ready = {pid: row[2] for pid, row in states.items() if row[1] == "ready"}
        return allowed_from(ready, facets.all_chunks)

    def _read(self, kind: Kind, read: Callable[[VectorIndex], T]) -> T:
        """A read through a handle opened to read that another process's write has overtaken
        (vectors added after it loaded the index, which a filtered read meets as ids it lacks)
        is made again, once, on a fresh handle opened under the index-files lock, which no
        write can overtake. A damaged index fails the second read too."""
        opened = self.collection(kind)
        try:
            return read(opened)
        except VectorIndexDamagedError:
            if not opened.read_only:
                raise
        with index_files(self.folder, exclusive=False):
            with self._lock:
                self._drop_snapshots()
            return read(self.collection(kind))

    def lexical(self, query: str, n: int, where: Filter) -> list[tuple[str, float]]:
        index = self.lexical_index
        with said_when_full(self.folder):  # a missing or unreadable base is rebuilt first
            index.current()
        return index.search(query, n, self.allowed(where).papers if where else None)

    def sentence_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        if not self.keeps_sentences:
            return {}
        copy = self._read_copy()
        if copy is not None:
            return copy.get_vectors("sentences", ids)
        return self._read("sentences", lambda vectors: vectors.get_vectors(ids))

    def term_counts(self, terms: list[str]) -> tuple[dict[str, int], int]:
        return self.lexical_index.document_frequencies(terms)

    def matching(self, where: Filter) -> set[str]:
        return set(self.allowed(where).papers)

    def _matching(self, where: Filter) -> set[str]:
        fields = {
            key: tuple(sorted(value)) if isinstance(value, frozenset) else value
            for key, value in where.fields().items()
            if value is not None
        }
        return self.catalog.ids_matching(fields)

    def has_ready(self) -> bool:
        return self.catalog.has_ready()

    def counts(self) -> dict[str, int]:
        return self.catalog.counts()

    def sizes(self) -> dict[str, int | None]:
        """None for an index Chroma cannot read (not 0: nothing says its vectors are gone).
        The indexes are probed in a child process first: a torn one can crash a reader."""
        if self.journal and self.indexes.present() and self.probe():
            return {"vectors": None, "sentence_vectors": None, "lexical": self._lexical_size()}
        return {
            "vectors": _count(lambda: self.chunks),
            "sentence_vectors": _count(lambda: self.sentences),
            "lexical": self._lexical_size(),
        }

    def _lexical_size(self) -> int:
        return len(self.lexical_index.paper_ids())

    def health(self) -> Health:
        """The indexes read whole in a child process first (``probe``), then compared."""
        if self.journal:
            self._check_journal()
            fault = self.probe()
            if fault:
                raise VectorIndexDamagedError(damaged_message(str(self.folder), fault))
        return examine(self.catalog, self.chunks, self.sentences, self.lexical_index.paper_ids())

    def close(self) -> None:
        self.catalog.close()
        self.forget_vectors()
        self._lexical = None


def write_vectors(
    chunks: VectorIndex,
    sentences: VectorIndex | None,
    batch: Sequence[PaperVectors],
    old_chunks: Mapping[str, int],
    chunk_texts: bool = False,
) -> None:
    """Write a batch's chunk and sentence vectors, replacing those of its papers' old versions
    (``old_chunks``: how many chunks each stored paper had). Each vector carries its paper's
    filter fields only; its text stays in the catalog, unless ``chunk_texts`` (a server, where
    the chunk collection is where other clients read chunk texts from).

    Old vectors are deleted rather than overwritten: Chroma's upsert merges metadata, so a
    field the paper lost (a year, a venue) or a text an older version stored would stay."""
    chunks.delete_ids(
        [
            f"{item.paper.paper_id}:{i}"
            for item in batch
            for i in range(old_chunks.get(item.paper.paper_id, 0))
        ]
    )
    metas = {item.paper.paper_id: item.paper.metadata() for item in batch}
    rows = [c for item in batch for c in item.chunks]
    chunks.upsert(
        [c.chunk_id for c in rows],
        _stack([item.chunk_vectors for item in batch]),
        [c.text for c in rows] if chunk_texts else None,
        [metas[c.paper_id] for c in rows],
    )
    if sentences is None:
        return
    sentences.delete_papers(
        [item.paper.paper_id for item in batch if item.paper.paper_id in old_chunks]
    )
    vectors = [item.sentence_vectors for item in batch if item.sentence_vectors is not None]
    sentences.upsert(
        [sentence_id(item.paper.paper_id, i) for item in batch for i in range(len(item.sentences))],
        _stack(vectors),
        None,
        [metas[item.paper.paper_id] for item in batch for _ in item.sentences],
    )


def _count_of(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n:,} {noun}s"


def _count(vectors: Callable[[], VectorIndex | None]) -> int | None:
    try:
        opened = vectors()
        return opened.count() if opened is not None else 0
    except VectorIndexDamagedError:
        return None


def _stack(arrays: Sequence[np.ndarray]) -> np.ndarray:
    arrays = [a for a in arrays if len(a)]
    return np.vstack(arrays) if arrays else np.zeros((0, 0), dtype=np.float32)
