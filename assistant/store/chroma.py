"""Vectors in Chroma, embedded (``PersistentClient``) or a server (``HttpClient``).

Only this module imports chromadb (when a collection is opened). Vectors are computed by our
``Embedder`` and passed in, so Chroma never loads (or downloads) an embedding model of its own.
The collection records the embedder's name; opening it with another embedder is an
``EmbedderMismatchError``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np

from assistant.diskspace import is_disk_full
from assistant.errors import DiskFullError, EmbedderMismatchError, StoreError
from assistant.store.base import Filter, Match

# Metadata of one vector rather than of its paper: kept when a paper's metadata is replaced.
VECTOR_KEYS = ("chunk", "sentence")


class _Guarded:
    """A Chroma collection whose calls fail with one-line store errors: chromadb raises many
    types, and on a full disk even a read fails ("Error in compaction")."""

    def __init__(self, collection: Any, where: str, path: Path | None):
        self._collection = collection
        self._where = where
        self._path = path

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._collection, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return method(*args, **kwargs)
            except Exception as exc:
                if is_disk_full(exc, self._path):
                    raise DiskFullError(
                        f"disk full writing {self._where}: {exc}. Free some space and run the "
                        "command again (what was written before is kept)"
                    ) from exc
                raise StoreError(f"Chroma failed ({name}) in {self._where}: {exc}") from exc

        return call


class ChromaVectors:
    """Chunk vectors in one Chroma collection, keyed by chunk id, with paper metadata."""

    def __init__(self, collection: Any, embedder_name: str):
        self._collection = collection
        self.embedder_name = embedder_name

    @classmethod
    def open(
        cls, *, path: Path, url: str | None, collection: str, embedder_name: str, dim: int
    ) -> ChromaVectors:
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        chroma_settings = ChromaSettings(anonymized_telemetry=False)
        try:
            if url:
                parsed = urlparse(url if "//" in url else f"http://{url}")
                client: Any = chromadb.HttpClient(
                    host=parsed.hostname or "localhost",
                    port=parsed.port or (443 if parsed.scheme == "https" else 8000),
                    ssl=parsed.scheme == "https",
                    settings=chroma_settings,
                )
            else:
                path.mkdir(parents=True, exist_ok=True)
                client = chromadb.PersistentClient(path=str(path), settings=chroma_settings)
            coll = client.get_or_create_collection(
                collection,
                metadata={"embedder": embedder_name, "dim": dim},
                embedding_function=None,
                configuration={"hnsw": {"space": "cosine", "ef_search": 200}},
            )
        except Exception as exc:  # chromadb raises many types; all mean the same to the user
            where = f"Chroma server at {url}" if url else f"store at {path}"
            if is_disk_full(exc, None if url else path):
                raise DiskFullError(
                    f"disk full opening the {where}: {exc}. Free some space and run the "
                    "command again"
                ) from exc
            hint = (
                "is `chroma run` up and is ASSISTANT_STORE__CHROMA_URL right?"
                if url
                else "is the folder writable and not in use by another version of Chroma?"
            )
            raise StoreError(f"cannot open the {where}: {exc} ({hint})") from exc
        recorded = (coll.metadata or {}).get("embedder")
        if recorded and recorded != embedder_name:
            raise EmbedderMismatchError(
                f"the store's collection {collection!r} holds vectors from {recorded!r}, but the "
                f"configured embedder is {embedder_name!r}. Use the embedder the store was built "
                "with, or ingest into a new store with --store DIR."
            )
        where = f"the Chroma server at {url}" if url else str(path.parent)
        return cls(_Guarded(coll, where, None if url else path), embedder_name)

    def count(self) -> int:
        return int(self._collection.count())

    def upsert(
        self,
        ids: Sequence[str],
        vectors: np.ndarray,
        documents: Sequence[str],
        metadatas: Sequence[dict[str, Any]],
    ) -> None:
        if len(ids):
            self._collection.upsert(
                ids=list(ids),
                embeddings=vectors,
                documents=list(documents),
                metadatas=list(metadatas),
            )

    def set_paper_metadata(self, metas: Mapping[str, Mapping[str, str | int]]) -> None:
        """Replace the metadata of these papers' vectors (paper_id -> metadata) in place: no
        vector is recomputed. Keys a paper no longer has are removed (Chroma merges on update,
        and removes a key set to None); each vector keeps its ``VECTOR_KEYS``."""
        paper_ids = list(metas)
        for start in range(0, len(paper_ids), 500):
            batch = paper_ids[start : start + 500]
            got = self._collection.get(where={"paper_id": {"$in": batch}}, include=["metadatas"])
            if not got["ids"]:
                continue
            updated = [
                {
                    **dict.fromkeys(old),
                    **{k: old[k] for k in VECTOR_KEYS if k in old},
                    **metas[str(old["paper_id"])],
                }
                for old in got["metadatas"]
            ]
            self._collection.update(ids=got["ids"], metadatas=updated)

    def delete_ids(self, ids: Sequence[str]) -> None:
        if len(ids):
            self._collection.delete(ids=list(ids))

    def delete_papers(self, paper_ids: Sequence[str]) -> None:
        for start in range(0, len(paper_ids), 500):
            batch = list(paper_ids[start : start + 500])
            self._collection.delete(where={"paper_id": {"$in": batch}})

    def get_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors by id (ids not in the collection are left out)."""
        if not ids:
            return {}
        got = self._collection.get(ids=list(ids), include=["embeddings"])
        pairs = zip(got["ids"], got["embeddings"], strict=True)
        return {i: np.asarray(v, dtype=np.float32) for i, v in pairs}

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

    def query(self, vector: np.ndarray, n: int, where: Filter) -> list[Match]:
        """The n nearest vectors under the filter. No count first: Chroma returns fewer than n
        when it holds fewer."""
        result = self._collection.query(
            query_embeddings=[vector],
            n_results=n,
            where=chroma_where(where),
            include=["distances", "metadatas"],
        )
        ids = result["ids"][0]
        distances = result["distances"][0]
        metas = result["metadatas"][0]
        return [
            Match(item_id=i, paper_id=str(m["paper_id"]), similarity=1.0 - float(d))
            for i, d, m in zip(ids, distances, metas, strict=True)
        ]


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
