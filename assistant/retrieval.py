"""Hybrid retrieval: dense chunks (Chroma) + BM25 papers, fused by weighted reciprocal rank fusion.

Dense results are chunks; they are grouped to papers (a paper ranks by its best chunk) before
fusion, so each paper appears once, carrying the chunk that matched best.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assistant.catalog import Catalog
from assistant.corpus import Paper
from assistant.embeddings import Embedder
from assistant.lexical import LexicalIndex, analyze
from assistant.settings import RetrievalSettings
from assistant.vectors import ChromaVectors

FILTER_KEYS = ("source_file", "year", "venue", "paper_id")
FilterValue = str | int | tuple[str, ...]


@dataclass(frozen=True)
class Hit:
    """One paper found for a query."""

    rank: int
    paper: Paper
    score: float  # fused score; higher is better
    chunk: str  # the passage that matched best
    dense_rank: int | None = None
    lexical_rank: int | None = None
    similarity: float | None = None  # cosine of the best chunk, when the dense side found it

    @property
    def paper_id(self) -> str:
        return self.paper.paper_id

    @property
    def label(self) -> str:
        return self.paper.label

    @property
    def source(self) -> str:
        return self.paper.source

    @property
    def text(self) -> str:
        return self.paper.abstract

    def to_json(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "paper_id": self.paper_id,
            "label": self.label,
            "source": self.source,
            "score": round(self.score, 6),
            "text": self.text,
        }


def fuse(
    rankings: Sequence[Sequence[str]], weights: Sequence[float], k: float = 60.0
) -> list[tuple[str, float]]:
    """Weighted reciprocal rank fusion: sum of weight / (k + rank), ranks starting at 1."""
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def check_filters(filters: Mapping[str, Any] | None) -> dict[str, FilterValue]:
    """Validated filters; ``paper_id`` may be one id or a list of ids."""
    clean: dict[str, FilterValue] = {}
    for key, value in (filters or {}).items():
        if key not in FILTER_KEYS:
            raise ValueError(f"unknown filter {key!r}; filter on one of {', '.join(FILTER_KEYS)}")
        if key == "year":
            try:
                clean[key] = int(value)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"filter year={value!r} is not a year") from exc
        elif key == "paper_id" and isinstance(value, list | tuple | set):
            clean[key] = tuple(str(v) for v in value)
        else:
            clean[key] = str(value)
    return clean


def _chroma_where(filters: dict[str, FilterValue]) -> dict[str, Any] | None:
    clauses = [
        {key: {"$in": list(value)} if isinstance(value, tuple) else value}
        for key, value in filters.items()
    ]
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


class HybridRetriever:
    def __init__(
        self,
        embedder: Embedder,
        vectors: ChromaVectors,
        lexical: LexicalIndex,
        catalog: Catalog,
        settings: RetrievalSettings,
    ):
        self.embedder = embedder
        self.vectors = vectors
        self.lexical = lexical
        self.catalog = catalog
        self.settings = settings

    def dense_papers(
        self, query: str, n: int, filters: dict[str, FilterValue]
    ) -> list[tuple[str, str, float]]:
        """(paper_id, best chunk id, similarity), best first, one row per paper."""
        if self.settings.dense_weight == 0:
            return []
        # Papers have a few chunks each; ask for enough chunks to cover n papers.
        matches = self.vectors.query(
            self.embedder.embed_query(query), n * 3, _chroma_where(filters)
        )
        seen: dict[str, tuple[str, str, float]] = {}
        for m in matches:
            if m.paper_id not in seen:
                seen[m.paper_id] = (m.paper_id, m.chunk_id, m.similarity)
        return list(seen.values())[:n]

    def lexical_papers(
        self, query: str, n: int, filters: dict[str, FilterValue]
    ) -> list[tuple[str, float]]:
        if self.settings.lexical_weight == 0:
            return []
        allowed = self.catalog.ids_matching(filters) if filters else None
        return self.lexical.search(query, n, allowed)

    def search(
        self, query: str, k: int | None = None, filters: Mapping[str, Any] | None = None
    ) -> list[Hit]:
        k = k or self.settings.k
        clean = check_filters(filters)
        n = max(self.settings.candidates, k)
        dense = self.dense_papers(query, n, clean)
        lexical = self.lexical_papers(query, n, clean)
        fused = fuse(
            [[d[0] for d in dense], [p for p, _ in lexical]],
            [self.settings.dense_weight, self.settings.lexical_weight],
            self.settings.rrf_k,
        )
        # Only ready papers: a paper half-written by an interrupted ingest is not shown.
        top_ids = [pid for pid, _ in fused[: k * 2]]
        papers = self.catalog.papers(top_ids)
        best_chunk = {pid: chunk_id for pid, chunk_id, _ in dense}
        similarity = {pid: sim for pid, _, sim in dense}
        chunk_text = self.catalog.chunk_texts([best_chunk[p] for p in top_ids if p in best_chunk])
        dense_rank = {d[0]: i for i, d in enumerate(dense, start=1)}
        lexical_rank = {p: i for i, (p, _) in enumerate(lexical, start=1)}
        hits: list[Hit] = []
        for pid, score in fused:
            if pid not in papers:
                continue
            chunk = chunk_text.get(best_chunk.get(pid, "")) or self._best_chunk_lexically(
                pid, query
            )
            hits.append(
                Hit(
                    rank=len(hits) + 1,
                    paper=papers[pid],
                    score=score,
                    chunk=chunk,
                    dense_rank=dense_rank.get(pid),
                    lexical_rank=lexical_rank.get(pid),
                    similarity=similarity.get(pid),
                )
            )
            if len(hits) == k:
                break
        return hits

    def _best_chunk_lexically(self, paper_id: str, query: str) -> str:
        chunks = self.catalog.chunks_of(paper_id)
        if len(chunks) <= 1:
            return chunks[0] if chunks else ""
        terms = set(analyze([query])[0])
        overlaps = [len(terms & set(analyze([c])[0])) for c in chunks]
        return chunks[overlaps.index(max(overlaps))]
