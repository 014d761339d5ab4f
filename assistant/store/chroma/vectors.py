"""Vectors in Chroma, embedded (``PersistentClient``) or a server (``HttpClient``), through
chromadb's public client only.

Only this package imports chromadb (when a collection is opened). Vectors are computed by our
``Embedder`` and passed in, so Chroma never loads (or downloads) an embedding model of its own.
The collection records the embedder's name; opening it with another embedder is an
``EmbedderMismatchError``.

Chroma shares one system per folder among a process's clients, and that system loads an index
once: a handle opened only to read (``read_only``) is a snapshot of the index as it was when
first read. ``close`` releases its client; once every client of the folder is closed, the next
handle opens a new system that reads the files afresh (``LocalStore.collection``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np

from assistant.errors import (
    DiskFullError,
    EmbedderMismatchError,
    StoreBusyError,
    StoreError,
    VectorIndexDamagedError,
)
from assistant.store.base import Filter, Match, paper_of
from assistant.store.diskspace import is_disk_full
from assistant.store.locking import index_files
from assistant.store.vector_index import VectorIndex, damaged_message

PAGE = 1000  # records read per request

Record = tuple[str, str | None, dict[str, Any]]  # id, document, metadata
# The ``record`` kinds of a server journal's records that hold no paper (ServerStore): a
# collection holding only these holds no vector of its embedder.
BOOKKEEPING = ("stamp", "meta", "lease")


class _Guarded:
    """A Chroma collection whose calls fail with one-line store errors: chromadb raises many
    types, and on a full disk even a read fails ("Error in compaction")."""

    def __init__(self, collection: Any, where: str, path: Path | None, secret: str | None = None):
        self._collection = collection
        self._where = where
        self._path = path
        self._secret = secret  # the server's token: never in a message, even if a reply echoes it

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._collection, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                with _files_held(self._path, exclusive=name in _CHANGES_FILES):
                    return method(*args, **kwargs)
            except StoreBusyError:
                raise
            except Exception as exc:
                said = _redact(exc, self._secret)
                if is_disk_full(exc, self._path):
                    raise DiskFullError(
                        f"disk full writing {self._where}: {said}. Free some space and run the "
                        "command again (what was written before is kept)"
                    ) from exc
                if self._path is not None:  # an embedded index: whatever Chroma says of it
                    raise VectorIndexDamagedError(damaged_message(self._where, said)) from exc
                hint = ""
                if self._path is None:  # a server: the usual cause is that it went away
                    hint = (
                        " (is `chroma run` still up? Once it is, run the same command again: "
                        "what was written before is kept)"
                    )
                raise StoreError(f"Chroma failed ({name}) in {self._where}: {said}{hint}") from exc

        return call


# The calls of a collection that change its index files (all others only read them).
_CHANGES_FILES = frozenset({"add", "upsert", "update", "delete", "modify"})


@contextmanager
def _files_held(path: Path | None, *, exclusive: bool) -> Iterator[None]:
    """An embedded store's index-files lock (``locking.index_files``) for the block; a
    server's files are the server's own business."""
    if path is None:
        yield
        return
    with index_files(path.parent, exclusive=exclusive):
        yield


UPSERT_BATCH = 4096  # vectors per upsert call: under the smallest limit Chroma sets


class ChromaVectors(VectorIndex):
    """One Chroma collection as a ``VectorIndex``: vectors keyed by id, with paper metadata;
    a server's also holds the records ``ServerStore`` keeps (``records``, ``claim``)."""

    def __init__(
        self,
        collection: Any,
        embedder_name: str,
        dim: int = 0,
        *,
        client: Any = None,
        read_only: bool = False,
    ):
        self._collection = collection
        self.embedder_name = embedder_name
        self.dim = dim
        self._client = client  # closed with this handle
        self.read_only = read_only  # opened to read: a snapshot of the index (see the module)
        self._server: tuple[str, str | None, str] | None = None  # url, token, collection name

    @classmethod
    def open(
        cls,
        *,
        path: Path,
        url: str | None,
        collection: str,
        embedder_name: str,
        dim: int,
        token: str | None = None,
        read_only: bool = False,
        save_every: int = 1000,
    ) -> ChromaVectors:
        """``token``: sent to the server as ``Authorization: Bearer TOKEN`` (Chroma's token
        auth), for servers behind token authentication. ``read_only``: the caller will only
        read, so an embedded store that has no database is an error, not a new one.
        ``save_every``: vectors a new collection takes before Chroma saves its index files."""
        if read_only and not url and not (path / "chroma.sqlite3").is_file():
            raise VectorIndexDamagedError(
                damaged_message(str(path.parent), f"{path / 'chroma.sqlite3'} is missing")
            )
        with _opening(path, url, token):
            client = _client(path, url, token)
            try:
                coll = client.get_or_create_collection(
                    collection,
                    metadata={"embedder": embedder_name, "dim": dim},
                    embedding_function=None,
                    configuration={"hnsw": _hnsw(save_every)},
                )
            except Exception:
                client.close()  # a folder's system stops with its last client
                raise
        where = f"the Chroma server at {url}" if url else str(path.parent)
        guarded = _Guarded(coll, where, None if url else path, token if url else None)
        vectors = cls(guarded, embedder_name, dim, client=client, read_only=read_only)
        if url:
            vectors._server = (url, token, collection)
        if not url or _holds_vectors(coll):  # a server's empty one is claimed by its writer
            try:
                _check_embedder(coll.metadata, collection, embedder_name, url)
            except EmbedderMismatchError:
                vectors.close()
                raise
        return vectors

    def claim(self) -> None:
        """For a writer holding the server's lease: the collection records this embedder. Any
        client opening a collection creates it, stamped with its own embedder, so a `search`
        on a new server stamps the default; while the collection holds no vector (bookkeeping
        records aside) the writer stamps it anew, and once it holds one a writer with another
        embedder is refused. Under the lease, two writers cannot both claim it."""
        if self._server is None:
            return
        url, token, name = self._server
        with _opening(Path(), url, token), _client(Path(), url, token) as client:
            found = client.get_collection(name)
        recorded = _embedder_of(found.metadata)
        if recorded in (None, self.embedder_name):
            return
        on_server = _Guarded(found, f"the Chroma server at {url}", None, token)
        if _holds_vectors(on_server):
            _check_embedder(found.metadata, name, self.embedder_name, url)
        stamp = {**(found.metadata or {}), "embedder": self.embedder_name, "dim": self.dim}
        on_server.modify(metadata=stamp)

    @staticmethod
    def recorded_embedder(
        *, path: Path, url: str | None, collection: str, token: str | None = None
    ) -> str | None:
        """The embedder a collection's vectors were made with (None if it has no such record
        or does not exist), read without opening it for an embedder and without creating it:
        a caller picks its embedder from this before ``open`` checks it."""
        if not url and not (path / "chroma.sqlite3").is_file():
            return None  # not made by a read
        from chromadb.errors import NotFoundError

        with _opening(path, url, token), _client(path, url, token) as client:
            try:
                found = client.get_collection(collection)
            except NotFoundError:
                return None
            return _embedder_of(found.metadata)

    def count(self) -> int:
        return int(self._collection.count())

    def close(self) -> None:
        """Release this handle's client (Chroma stops a folder's system with its last one)."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def upsert(
        self,
        ids: Sequence[str],
        vectors: np.ndarray,
        documents: Sequence[str] | None,
        metadatas: Sequence[dict[str, Any]],
    ) -> None:
        """``documents``: None stores none (Chroma indexes each document's text for its own
        full-text search, which this project never uses: it halves the rate of upserts). Sent
        in calls of at most UPSERT_BATCH vectors: Chroma refuses a larger one (5,461 for an
        embedded store here), which a large ``papers_per_write`` reaches."""
        for start in range(0, len(ids), UPSERT_BATCH):
            stop = start + UPSERT_BATCH
            self._collection.upsert(
                ids=list(ids[start:stop]),
                embeddings=vectors[start:stop],
                documents=None if documents is None else list(documents[start:stop]),
                metadatas=list(metadatas[start:stop]),
            )

    def set_paper_metadata(self, metas: Mapping[str, Mapping[str, str | int]]) -> None:
        """Replace the metadata of these papers' vectors (paper_id -> metadata) in place: no
        vector is recomputed. Keys a paper no longer has are removed (Chroma merges on update,
        and removes a key set to None)."""
        paper_ids = list(metas)
        for start in range(0, len(paper_ids), 500):
            batch = paper_ids[start : start + 500]
            got = self._collection.get(where={"paper_id": {"$in": batch}}, include=["metadatas"])
            if not got["ids"]:
                continue
            updated = [
                {**dict.fromkeys(old), **metas[str(old["paper_id"])]} for old in got["metadatas"]
            ]
            self._collection.update(ids=got["ids"], metadatas=updated)

    def update_metadata(self, ids: Sequence[str], metadatas: Sequence[Mapping[str, Any]]) -> None:
        """Merge these keys into the records' metadata (a key set to None is removed)."""
        if len(ids):
            self._collection.update(ids=list(ids), metadatas=[dict(m) for m in metadatas])

    def records(
        self,
        ids: Sequence[str] | None = None,
        where: Mapping[str, str] | None = None,
        documents: bool = True,
        metadatas: bool = True,
    ) -> Iterator[Record]:
        """Records by id, or every record whose metadata has these values (all records when
        neither is given), read a page at a time."""
        include = [k for k, on in (("documents", documents), ("metadatas", metadatas)) if on]
        clause = chroma_where_equal(where or {})
        if ids is not None:
            pages: Iterator[dict[str, Any]] = (
                self._collection.get(ids=list(ids[i : i + PAGE]), where=clause, include=include)
                for i in range(0, len(ids), PAGE)
            )
        else:
            pages = self._pages(clause, include)
        for got in pages:
            docs = got.get("documents") or [None] * len(got["ids"])
            metas = got.get("metadatas") or [{}] * len(got["ids"])
            for record in zip(got["ids"], docs, metas, strict=True):
                yield record[0], record[1], dict(record[2] or {})

    def _pages(self, where: dict[str, Any] | None, include: list[str]) -> Iterator[dict[str, Any]]:
        offset = 0
        while True:
            got = self._collection.get(where=where, include=include, limit=PAGE, offset=offset)
            yield got
            if len(got["ids"]) < PAGE:
                return
            offset += len(got["ids"])

    def delete_ids(self, ids: Sequence[str]) -> None:
        if len(ids):
            self._collection.delete(ids=list(ids))

    def delete_papers(self, paper_ids: Sequence[str]) -> None:
        for start in range(0, len(paper_ids), 500):
            batch = list(paper_ids[start : start + 500])
            self._collection.delete(where={"paper_id": {"$in": batch}})

    def get_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors by id (ids not in the collection are left out)."""
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(ids), PAGE):
            got = self._collection.get(ids=list(ids[start : start + PAGE]), include=["embeddings"])
            pairs = zip(got["ids"], got["embeddings"], strict=True)
            found.update((i, np.asarray(v, dtype=np.float32)) for i, v in pairs)
        return found

    def ids(self) -> list[str]:
        """Every chunk id in the collection (for consistency checks)."""
        out: list[str] = []
        offset = 0
        while True:
            got = self._collection.get(include=[], limit=5000, offset=offset)["ids"]
            out.extend(got)
            if len(got) < 5000:
                return out
            offset += len(got)

    def query(
        self, vector: np.ndarray, n: int, where: Filter, ids: Sequence[str] | None = None
    ) -> list[Match]:
        """The n nearest vectors under the filter, or among ``ids`` (every one must be in the
        collection: Chroma fails on an unknown id). No count first: Chroma returns fewer than n
        when it holds fewer. Distances only: a vector's id names its paper (``paper:N``,
        ``paper:sN``), and reading the metadata of every match costs ten times the search."""
        if ids is not None and not ids:
            return []
        result = self._collection.query(
            query_embeddings=[vector],
            n_results=n,
            where=None if ids is not None else chroma_where(where),
            ids=None if ids is None else list(ids),
            include=["distances"],
        )
        pairs = zip(result["ids"][0], result["distances"][0], strict=True)
        return [Match(i, paper_of(i), 1.0 - float(d)) for i, d in pairs]


def _hnsw(save_every: int) -> dict[str, Any]:
    """The index's configuration: cosine space, and how often Chroma saves it."""
    return {
        "space": "cosine",
        "ef_search": 200,
        "sync_threshold": save_every,
        "batch_size": min(100, save_every),
    }


def _client(path: Path, url: str | None, token: str | None) -> Any:
    """chromadb's client for a server (``HttpClient``) or an embedded store in ``path``."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    auth: dict[str, Any] = {}
    if url and token:
        auth = {
            "chroma_client_auth_provider": "chromadb.auth.token_authn.TokenAuthClientProvider",
            "chroma_client_auth_credentials": token,
        }
    chroma_settings = ChromaSettings(anonymized_telemetry=False, **auth)
    if url:
        parsed = urlparse(url if "//" in url else f"http://{url}")
        return chromadb.HttpClient(
            host=parsed.hostname or "localhost",
            port=parsed.port or (443 if parsed.scheme == "https" else 8000),
            ssl=parsed.scheme == "https",
            settings=chroma_settings,
        )
    path.mkdir(parents=True, exist_ok=True)
    try:
        return chromadb.PersistentClient(path=str(path), settings=chroma_settings)
    except Exception:
        # chromadb 1.5 caches a folder's system before starting it, so one that failed to
        # start (a damaged database) would be handed to every later client of the folder in
        # this process, the rebuild's included. Its public reset drops every cached system.
        from chromadb.api.client import SharedSystemClient

        SharedSystemClient.clear_system_cache()
        raise


@contextmanager
def _opening(path: Path, url: str | None, token: str | None) -> Iterator[None]:
    """Whatever chromadb raises while connecting, as one store error saying what to check."""
    try:
        yield
    except Exception as exc:  # chromadb raises many types; all mean the same to the user
        where = f"Chroma server at {url}" if url else f"store at {path}"
        said = _redact(exc, token)
        if is_disk_full(exc, None if url else path):
            raise DiskFullError(
                f"disk full opening the {where}: {said}. Free some space and run the command again"
            ) from exc
        if not url and not isinstance(exc, PermissionError) and os.access(path, os.W_OK):
            raise VectorIndexDamagedError(damaged_message(str(path.parent), said)) from exc
        if not url:
            hint = "is the folder writable?"
        elif _refused(exc):
            hint = (
                "the server wants a token: set ASSISTANT_STORE__CHROMA_TOKEN to it"
                if not token
                else "the server refused ASSISTANT_STORE__CHROMA_TOKEN; check it"
            )
        else:
            hint = "is `chroma run` up and is ASSISTANT_STORE__CHROMA_URL right?"
        cause = exc if said == str(exc) else None  # a cause that shows the token is dropped
        raise StoreError(f"cannot open the {where}: {said} ({hint})") from cause


def open_for_probe(path: Path, name: str) -> ChromaVectors:
    """An existing collection of an embedded store, through the client (never created)."""
    with _opening(path, None, None):
        client = _client(path, None, None)
        try:
            found = client.get_collection(name)
        except Exception:
            client.close()
            raise
    guarded = _Guarded(found, str(path.parent), path)
    return ChromaVectors(guarded, _embedder_of(found.metadata) or "", client=client)


def _holds_vectors(collection: Any) -> bool:
    """The collection holds a record made by its embedder: anything but the bookkeeping
    records a server's journal keeps beside its papers (metadata ``record`` in BOOKKEEPING)."""
    where = {"record": {"$nin": list(BOOKKEEPING)}}
    return bool(collection.get(where=where, limit=1, include=[])["ids"])


def _embedder_of(metadata: Mapping[str, Any] | None) -> str | None:
    recorded = (metadata or {}).get("embedder")
    return str(recorded) if recorded else None


def _check_embedder(
    metadata: Mapping[str, Any] | None, collection: str, embedder_name: str, url: str | None
) -> None:
    recorded = _embedder_of(metadata)
    if recorded and recorded != embedder_name:
        raise EmbedderMismatchError(
            f"the store's collection {collection!r} holds vectors from {_described(recorded)}, "
            f"but the configured embedder is {_described(embedder_name)}. Use the embedder the "
            f"store was built with ({_provider_hint(recorded)}), or ingest into "
            + (
                "a new collection (ASSISTANT_STORE__COLLECTION) on the server."
                if url
                else "a new store with --store DIR."
            )
        )


# What each embedder's name means to a user (the default's name says int8 for its file's
# weights, though it computes in fp32), and the setting that makes it (or, for a MiniLM store
# of older code, that reads it: ``recorded_minilm``).
_EMBEDDERS = (
    ("minilm-l6-v2-q8@", "MiniLM int8, each text alone (`ingest --fast`)", "minilm-fast"),
    ("minilm-l6-v2-fast@", "MiniLM int8 in batches (the old `ingest --fast`)", "minilm"),
    ("minilm-l6-v2-int8@", "the default MiniLM", "minilm"),
    ("openai:", "OpenAI's embeddings", "openai"),
    ("hashing-ngrams@", "the hashing test embedder", "hashing"),
)


def _described(embedder_name: str) -> str:
    for prefix, meaning, _ in _EMBEDDERS:
        if embedder_name.startswith(prefix):
            return f"{embedder_name!r} ({meaning})"
    return repr(embedder_name)


def _provider_hint(embedder_name: str) -> str:
    """The setting that makes this embedder, as far as its name tells."""
    for prefix, _, provider in _EMBEDDERS:
        if embedder_name.startswith(prefix):
            return f"ASSISTANT_EMBEDDING__PROVIDER={provider}"
    return "ASSISTANT_EMBEDDING__PROVIDER"


def _redact(exc: Exception, secret: str | None) -> str:
    """The error's text without the secret (a server's refusal may echo what it was sent)."""
    text = str(exc)
    return text.replace(secret, "[ASSISTANT_STORE__CHROMA_TOKEN]") if secret else text


def _refused(exc: Exception) -> bool:
    """The server turned the client away for want of (valid) credentials."""
    text = f"{type(exc).__name__} {exc}".lower()
    return any(word in text for word in ("401", "403", "unauthorized", "forbidden", "autherror"))


def chroma_where_equal(fields: Mapping[str, str | int]) -> dict[str, Any] | None:
    """Metadata equal to every one of these values, in Chroma's ``where`` syntax."""
    clauses = [{key: value} for key, value in fields.items()]
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def chroma_where(where: Filter) -> dict[str, Any] | None:
    """Our filter in Chroma's ``where`` syntax (None when it accepts everything)."""
    clauses: list[dict[str, Any]] = []
    for key, value in where.fields().items():
        if value is None:
            continue
        clauses.append(
            {key: {"$in": sorted(value)}} if isinstance(value, frozenset) else {key: value}
        )
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}
