"""A store whose journal lives on a Chroma server: every client pointed at the server sees the
same papers, and the local folder holds only a cache of them.

On the server, beside the chunk and sentence collections, ``{collection}-papers`` holds one
record per paper (the abstract as its document; its fields, fingerprint, state and number of
chunks as metadata; its first chunk's vector, so nothing more is embedded) and three records of
its own: ``__stamp__`` (a random token replaced after every change to the papers), ``__meta__``
(``get_meta``/``set_meta``) and ``__lease__`` (which writer holds the store, until when).

Writes follow ``LocalStore``'s journal order, on the server: paper records ``pending`` ->
vectors -> ``ready``; removal ``deleting`` -> vectors deleted -> records deleted. Readers see
``ready`` papers only, so a writer that dies leaves nothing half written in sight.

Reads come from the cache, a ``LocalStore`` in ``FOLDER/server-cache/KEY`` whose SQLite catalog
mirrors the server's paper records (chunk texts read back from the chunk collection) and whose
BM25 index is built from it. The cache remembers the stamp it was filled from; when the
server's differs (looked at no more than once a ``recheck`` interval), every paper record is read
again, a page at a time, and the BM25 index rebuilt. An empty folder is a cache to fill.

Writers on one machine share the folder's file lock; across machines the lease record keeps a
second writer out while the first renews it (best effort: Chroma has no compare-and-set).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from assistant.errors import StoreBusyError, StoreError
from assistant.ingest.chunking import Chunk
from assistant.ingest.corpus import Paper
from assistant.store.base import Entry, Filter, Kind, Match, PaperVectors, Store
from assistant.store.catalog import Catalog
from assistant.store.chroma import ChromaVectors, Record
from assistant.store.chroma.indexes import ChromaIndexes, OpenCollection
from assistant.store.health import Health
from assistant.store.local import LocalStore, write_vectors

# Records beside the papers, their metadata ``record`` one of chroma.BOOKKEEPING's kinds.
STAMP, META, LEASE = "__stamp__", "__meta__", "__lease__"
LEASE_SECONDS = 300.0  # a writer that stops renewing (killed) holds the store this long
_OPTIONAL = ("year", "venue", "title", "url", "doi")  # set to None when a paper has none: removed
_HOST = socket.gethostname()


def cache_folder(store_dir: Path, url: str, collection: str) -> Path:
    """Where a folder caches one server's collection: each server and collection its own."""
    key = hashlib.sha256(f"{url.rstrip('/')}\0{collection}".encode()).hexdigest()[:16]
    return store_dir / "server-cache" / key


def _lapsed(lease: Mapping[str, Any]) -> bool:
    """The lease ran out, or its holder was a process on this machine that is gone (killed:
    no need to wait out the lease)."""
    if float(lease.get("expires", 0)) < time.time():
        return True
    if lease.get("host") != _HOST or not isinstance(lease.get("pid"), int):
        return False
    try:
        os.kill(int(lease["pid"]), 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, someone else's
        return False
    return False


def _paper_record(paper: Paper, fingerprint: str, state: str, n_chunks: int) -> dict[str, Any]:
    return {
        **dict.fromkeys(_OPTIONAL),
        **paper.metadata(),
        "source": paper.source,
        "record": "paper",
        "label": paper.label,
        "title": paper.title,
        "authors": json.dumps(list(paper.authors)),
        "url": paper.url,
        "doi": paper.doi,
        "fingerprint": fingerprint,
        "state": state,
        "n_chunks": n_chunks,
    }


def _parse(record: Record) -> tuple[Paper, Entry]:
    paper_id, document, meta = record
    try:
        paper = Paper(
            paper_id=paper_id,
            source=str(meta["source"]),
            label=str(meta["label"]),
            abstract=document or "",
            title=meta.get("title"),
            authors=tuple(json.loads(str(meta.get("authors") or "[]"))),
            year=meta.get("year"),
            venue=meta.get("venue"),
            url=meta.get("url"),
            doi=meta.get("doi"),
        )
        return paper, Entry(str(meta["fingerprint"]), str(meta["state"]), int(meta["n_chunks"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreError(
            f"the server's record {paper_id!r} is not a paper as this assistant writes them "
            f"({exc!r}); is another program using the same collection name?"
        ) from exc


class ServerStore(Store):
    def __init__(
        self,
        cache: Catalog,
        open_collection: OpenCollection,
        collection: str,
        keeps_sentences: bool,
        recheck: float = 1.0,
        settle: float = 0.5,
        peek: Callable[[str], str | None] | None = None,
    ):
        """``cache``: the catalog in the cache folder; ``recheck``: seconds a cache is trusted
        before the server's stamp is read again; ``settle``: seconds a writer waits before
        reading back the lease it wrote (another writer's write lands meanwhile); ``peek``:
        the embedder a collection on the server records, read without opening it for one
        (``ChromaVectors.recorded_embedder``)."""
        self._peek = peek
        self.keeps_sentences = keeps_sentences
        self.recheck = recheck
        self.settle = settle
        indexes = ChromaIndexes(None, open_collection)  # the server's: nothing here to probe
        self._view = LocalStore(cache, indexes, collection, keeps_sentences, journal=False)
        self._open = open_collection
        self._papers_name = f"{collection}-papers"
        self._papers: ChromaVectors | None = None
        self._checked = -float("inf")
        self._holder: str | None = None  # this writer's lease, while it holds one
        self._renewed = 0.0
        self._lock = threading.RLock()

    @property
    def folder(self) -> Path:
        return self._view.folder

    @property
    def records(self) -> ChromaVectors:
        """The collection of paper records (and the stamp, meta and lease records)."""
        with self._lock:
            if self._papers is None:
                self._papers = self._open(self._papers_name, True)
            return self._papers

    def _unit(self) -> np.ndarray:
        """The vector of a record that is not a paper (Chroma wants one; nobody queries it)."""
        vector = np.zeros((1, max(self.records.dim, 1)), dtype=np.float32)
        vector[0, 0] = 1.0
        return vector

    def _put(self, record_id: str, meta: Mapping[str, Any]) -> None:
        self.records.upsert([record_id], self._unit(), [""], [dict(meta)])

    def _get(self, record_id: str) -> dict[str, Any]:
        found = next(self.records.records(ids=[record_id], documents=False), None)
        return found[2] if found else {}

    # -- the cache ----------------------------------------------------------------------------
    def _touch(self) -> None:
        """Tell every client the papers changed (after the change: a reader that fills its
        cache between the change and the new stamp fills it again)."""
        self._put(STAMP, {"record": "stamp", "token": uuid.uuid4().hex})

    def _fresh(self, force: bool = False) -> LocalStore:
        """The cache, filled again first when the server's papers changed since."""
        with self._lock:
            now = time.monotonic()
            if force or now - self._checked >= self.recheck:
                token = str(self._get(STAMP).get("token", ""))
                if token != (self._view.catalog.get_meta("server_stamp") or ""):
                    self._fill(token)
                self._checked = now
            return self._view

    def _fill(self, token: str) -> None:
        """Copy every paper record and chunk text into the cache, stamped with the token read
        before: a change made while copying leaves it stamped older, so it is copied again."""
        papers = [_parse(r) for r in self.records.records(where={"record": "paper"})]
        n_chunks = {p.paper_id: e.n_chunks for p, e in papers}
        texts: dict[str, str] = {}
        for chunk_id, text, _ in self._on_server("chunks").records(metadatas=False):
            pid, _, index = chunk_id.rpartition(":")
            if index.isdigit() and int(index) < n_chunks.get(pid, 0):
                texts[chunk_id] = text or ""
        # A chunk whose vector is gone keeps its row (empty): the health check expects it.
        chunks = [
            Chunk(f"{pid}:{i}", pid, i, texts.get(f"{pid}:{i}", ""))
            for pid, n in n_chunks.items()
            for i in range(n)
        ]
        rows = [(p, e.fingerprint, e.state, e.n_chunks) for p, e in papers]
        self._view.catalog.replace_all(rows, chunks, {"server_stamp": token})
        self._view.lexical_index.rebuild()  # every paper is new to the cache: one base for all

    # -- the writer's lease -------------------------------------------------------------------
    @contextmanager
    def writer(
        self, wait: bool = True, on_wait: Callable[[str], None] | None = None
    ) -> Iterator[None]:
        me = f"{_HOST} pid {os.getpid()} ({uuid.uuid4().hex[:8]})"
        told = False
        while True:
            lease = self._get(LEASE)
            holder = str(lease.get("holder") or "")
            if not holder or _lapsed(lease):
                self._take_lease(me)
                time.sleep(self.settle)
                if self._get(LEASE).get("holder") == me:
                    break
                continue
            ends = time.strftime("%H:%M:%S", time.localtime(float(lease.get("expires", 0))))
            busy = (
                f"another ingest ({holder}) is writing to the Chroma server; its lease ends "
                f"{ends} unless it renews it"
            )
            if not wait:
                raise StoreBusyError(
                    f"{busy}; run again when it has finished, or without --no-wait to wait"
                )
            if on_wait is not None and not told:
                on_wait(f"{busy}; waiting…")
                told = True
            time.sleep(1.0)
        self._holder = me
        try:
            self._claim()
            yield
        finally:
            self._holder = None
            if self._get(LEASE).get("holder") == me:
                self._put(LEASE, {"record": "lease", "holder": "", "expires": 0.0})

    def _claim(self) -> None:
        """The collections record this writer's embedder (``ChromaVectors.claim``): one a
        reader created, stamped with another and still empty, is stamped anew."""
        self.records.claim()
        self._on_server("chunks").claim()
        if self._view.keeps_sentences:
            self._on_server("sentences").claim()

    def _on_server(self, kind: Kind) -> ChromaVectors:
        """The cache's handle on a collection of the server (its indexes are Chroma's)."""
        opened = self._view.collection(kind)
        assert isinstance(opened, ChromaVectors)
        return opened

    def _take_lease(self, me: str) -> None:
        expires = time.time() + LEASE_SECONDS
        lease = {"record": "lease", "holder": me, "host": _HOST, "pid": os.getpid()}
        self._put(LEASE, {**lease, "expires": expires})
        self._renewed = time.monotonic()

    def _renew(self) -> None:
        """Before each write: the lease is still this writer's, and lasts a while longer."""
        if self._holder is None or time.monotonic() - self._renewed < LEASE_SECONDS / 5:
            return
        holder = self._get(LEASE).get("holder")
        if holder != self._holder:
            raise StoreBusyError(
                f"this ingest's lease on the Chroma server ran out and {holder or 'nobody'} holds "
                "it now; run the ingest again (it finishes what this one left)"
            )
        self._take_lease(self._holder)

    # -- the journal, on the server -----------------------------------------------------------
    def _server_papers(
        self, paper_ids: Sequence[str] | None = None, abstracts: bool = True
    ) -> dict[str, tuple[Paper, Entry]]:
        """Paper records read from the server (``abstracts=False``: without their text)."""
        records = self.records.records(
            ids=paper_ids, where={"record": "paper"}, documents=abstracts
        )
        return {record[0]: _parse(record) for record in records}

    def entries(self, paper_ids: Sequence[str] | None = None) -> dict[str, Entry]:
        if paper_ids is not None and not paper_ids:
            return {}
        found = self._server_papers(paper_ids, abstracts=False)
        return {pid: e for pid, (_, e) in found.items()}

    def write(self, batch: Sequence[PaperVectors]) -> None:
        if not batch:
            return
        self._renew()
        ids = [item.paper.paper_id for item in batch]
        before = {pid: e for pid, (_, e) in self._server_papers(ids, abstracts=False).items()}
        heads = [
            item.chunk_vectors[:1] if len(item.chunk_vectors) else self._unit() for item in batch
        ]
        self.records.upsert(
            ids,
            np.vstack(heads),
            [item.paper.abstract for item in batch],
            [
                _paper_record(item.paper, item.paper.fingerprint, "pending", len(item.chunks))
                for item in batch
            ],
        )
        self._touch()
        view = self._view
        write_vectors(
            view.chunks,
            view.sentences,
            batch,
            {pid: e.n_chunks for pid, e in before.items()},
            chunk_texts=True,
        )
        self._set_state(ids, "ready")

    def _set_state(self, paper_ids: Sequence[str], state: str) -> None:
        self.records.update_metadata(paper_ids, [{"state": state}] * len(paper_ids))
        self._touch()

    def update_records(self, papers: Sequence[Paper]) -> None:
        """Vector metadata first, as ``LocalStore`` does: a crash before the records are written
        leaves the old ones, so the next run does this again."""
        if not papers:
            return
        self._renew()
        old = self._server_papers([p.paper_id for p in papers])
        metas = {
            p.paper_id: p.metadata()
            for p in papers
            if p.paper_id in old and old[p.paper_id][0].metadata() != p.metadata()
        }
        self._view.retag_vectors(metas)
        changed = [
            (p, old[p.paper_id][1])
            for p in papers
            if p.paper_id in old
            and (old[p.paper_id][0] != p or old[p.paper_id][1].fingerprint != p.fingerprint)
        ]
        if changed:
            self.records.update_metadata(
                [p.paper_id for p, _ in changed],
                [_paper_record(p, p.fingerprint, e.state, e.n_chunks) for p, e in changed],
            )
            self._touch()

    def remove(self, paper_ids: Sequence[str]) -> None:
        if not paper_ids:
            return
        self._renew()
        self._set_state(paper_ids, "deleting")
        self._view.drop_vectors(paper_ids)
        self.records.delete_ids(paper_ids)
        self._touch()

    def repair(self) -> set[str]:
        cache = self._fresh(force=True)
        missing = cache.repair()
        self.dropped = cache.dropped
        return missing

    def flush(self) -> None:
        self._fresh(force=True).flush()

    def get_meta(self, key: str) -> str | None:
        value = self._get(META).get(key)
        return None if value is None else str(value)

    def set_meta(self, key: str, value: str) -> None:
        self._put(META, {"record": "meta", key: value})

    def recorded_embedder(self) -> str | None:
        """From the paper records' collection, before it is opened with an embedder (opening
        it with another is refused, and its ``__meta__`` record is inside it)."""
        if self._peek is None:
            return super().recorded_embedder()
        return self._peek(self._papers_name)

    def stamp(self) -> int:
        return self._fresh().stamp()

    # -- reads: vectors from the server, the rest from the cache ------------------------------
    def papers(self, paper_ids: Sequence[str]) -> dict[str, Paper]:
        return self._fresh().papers(paper_ids)

    def chunk_texts(self, chunk_ids: Sequence[str]) -> dict[str, str]:
        return self._fresh().chunk_texts(chunk_ids)

    def chunks_of(self, paper_id: str) -> list[str]:
        return self._fresh().chunks_of(paper_id)

    def nearest(
        self, kind: Kind, vector: np.ndarray, n: int, where: Filter, papers: int | None = None
    ) -> list[Match]:
        return self._view.nearest(kind, vector, n, where, papers)

    def lexical(self, query: str, n: int, where: Filter) -> list[tuple[str, float]]:
        return self._fresh().lexical(query, n, where)

    def sentence_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        return self._view.sentence_vectors(ids)

    def term_counts(self, terms: list[str]) -> tuple[dict[str, int], int]:
        return self._fresh().term_counts(terms)

    def matching(self, where: Filter) -> set[str]:
        return self._fresh().matching(where)

    def has_ready(self) -> bool:
        return self._fresh().has_ready()

    def counts(self) -> dict[str, int]:
        return self._fresh().counts()

    def sizes(self) -> dict[str, int | None]:
        return self._fresh().sizes()

    def health(self) -> Health:
        return self._fresh(force=True).health()

    def close(self) -> None:
        self._view.close()
        self._papers = None
