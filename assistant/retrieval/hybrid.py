"""Hybrid retrieval: dense heads, chunks and sentences + BM25 papers, fused.

Dense results are chunks and sentences; they are grouped to papers (a paper ranks by its best
chunk, and by its best sentence) before fusion, so each paper appears once, carrying the chunk
that matched best. Fusion is a weighted sum of z-scored scores by default (tuned on SciFact
train), or weighted reciprocal rank fusion.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any

import numpy as np

from assistant.embedding.embedders import Embedder
from assistant.ingest.corpus import Paper
from assistant.ingest.labels import coined_name, introduces
from assistant.settings import RetrievalSettings
from assistant.store.base import Filter, Kind, Match, Store
from assistant.store.filters import filter_fields
from assistant.text.acronyms import (
    acronyms,
    common_definition,
    defined_in,
    is_acronym,
    says,
    singular,
    spell,
)
from assistant.text.terms import analyze

# Where a name ends: not inside a longer word or hyphenated compound ("Flow" is not named by
# "Flow-based", "BASE" not by "base-2"), except before a model size or version ("-32B",
# "-1.5b", "-v2", "-32B-Instruct").
_NAME_END = r"(?!\w)(?!-(?!(?:v\d+(?:\.\d+)?|\d+(?:\.\d+)?[bmk])(?:-[a-z]+)?(?![\w-])))"


DEFINERS = 5  # papers read for the definition of a query's acronym
KEPT_DEFINITIONS = 1024


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

    def names(self) -> list[str]:
        """What a reader may call the paper: its label, its title, the title's head before a
        colon ("Stop Summation"), the name its abstract coins ("PURE"), and each of two names
        its label pairs ("MultALMC and MultCDiff")."""
        title = self.paper.title or ""
        found = [self.label, title, _title_head(title)]
        found.append(_coined(self.text))
        pair = re.fullmatch(r"(\S+) and (\S+)", self.label)  # "MAIL-BRO and MURMAIL": either
        found.extend(pair.groups() if pair else ())
        return [n.strip() for n in dict.fromkeys(found) if len(n.strip()) >= 3 and "…" not in n]

    def named_in(self, question: str) -> bool:
        """The question names this paper, as a whole word or phrase, case aside; a model's size
        or version may follow the name ("PurpCode-32B", "STARFlow-v2" name the paper)."""
        return any(
            re.search(rf"(?<![\w-]){re.escape(name)}{_NAME_END}", question, re.IGNORECASE)
            for name in self.names()
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "paper_id": self.paper_id,
            "label": self.label,
            "source": self.source,
            "score": round(self.score, 6),
            "text": self.text,
            **self.paper.bibliographic(),
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


def check_filters(filters: Mapping[str, Any] | None) -> Filter:
    """The store's filter for ``{key: value}`` (keys and values: ``assistant.store.filters``)."""
    return Filter(**filter_fields(filters))


def zscore_fuse(
    scored: Sequence[Mapping[str, float]], weights: Sequence[float]
) -> list[tuple[str, float]]:
    """Weighted sum of standardised scores. Each retriever's scores are z-scored over its own
    candidates; a paper a retriever did not return gets that retriever's lowest score."""
    stats = []
    for scores, weight in zip(scored, weights, strict=True):
        if weight == 0 or not scores:
            continue
        values = np.fromiter(scores.values(), dtype=float)
        stats.append((scores, weight, values.mean(), values.std() or 1.0, values.min()))
    ids = {pid for scores, *_ in stats for pid in scores}
    fused = {
        pid: sum(w * (s.get(pid, low) - mean) / std for s, w, mean, std, low in stats)
        for pid in ids
    }
    return sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))


@dataclass
class Candidates:
    """What each retriever found for a query, one row per paper, best first."""

    heads: list[tuple[str, str, float]]  # (paper_id, first chunk id, cosine)
    chunks: list[tuple[str, str, float]]  # (paper_id, best chunk id, cosine)
    sentences: list[tuple[str, str, float]]  # (paper_id, best sentence id, cosine)
    lexical: list[tuple[str, float]]  # (paper_id, BM25 score)


def _title_head(title: str) -> str:
    """The title before a colon or dash: "Stop Summation" of "Stop Summation: ..."."""
    return re.split(r":| - | — ", title, maxsplit=1)[0]


@lru_cache(maxsize=2048)  # asked of each hit, several times per question, as ``coined_name``
def _coined(abstract: str) -> str:
    """The name the abstract coins, but not an acronym it defines without introducing it as
    its contribution ("we combine LoRA with reinforcement learning from human feedback
    (RLHF)": the paper is not called RLHF)."""
    name = coined_name(abstract) or ""
    if is_acronym(name) and defined_in(name, abstract) and not introduces(name, abstract):
        return ""
    return name


def _halfway(written: np.ndarray, spelled: np.ndarray) -> np.ndarray:
    """The query's vector with acronyms spelled out: halfway between the question as written
    and as spelled (the embedder knows some acronyms: "TCR" alone finds SciFact's T cell
    receptor papers as well as spelled out; "MoE" and "RLHF" alone find nothing)."""
    both = written + spelled
    return both / np.linalg.norm(both)


def _named_by(acronym: str, paper: Paper) -> bool:
    """The acronym is the paper's name: its label, its title's head ("THG: ..."), or the name
    its abstract introduces ("we propose Tortoise and Hare Guidance (THG)"), not an acronym
    it defines and uses ("magnetic resonance imaging (MRI)")."""
    head = _title_head(paper.title or "").strip()
    return acronym in (paper.label, head) or introduces(acronym, paper.abstract)


def _best_per_paper(matches: Sequence[Match], n: int) -> list[tuple[str, str, float]]:
    seen: dict[str, tuple[str, str, float]] = {}
    for m in matches:
        if m.paper_id not in seen:
            seen[m.paper_id] = (m.paper_id, m.item_id, m.similarity)
    return list(seen.values())[:n]


def _heads(matches: Sequence[Match], n: int) -> list[tuple[str, str, float]]:
    """Papers whose first chunk (``paper:0``: title and opening, how the whole abstract reads)
    is among the matches, by its similarity."""
    return _best_per_paper([m for m in matches if m.item_id == f"{m.paper_id}:0"], n)


def _kinds(cfg: RetrievalSettings) -> list[Kind]:
    """The kinds of vectors a search with these settings reads."""
    chunks: list[Kind] = ["chunks"] if cfg.head_weight or cfg.chunk_weight else []
    return chunks + (["sentences"] if cfg.sentence_weight else [])


class HybridRetriever:
    def __init__(self, embedder: Embedder, store: Store, settings: RetrievalSettings):
        self.embedder = embedder
        self.store = store
        self.settings = settings
        self._definitions: dict[tuple[int, str], str | None] = {}

    def candidates(self, query: str, n: int, where: Filter) -> Candidates:
        cfg = self.settings
        if where.catalog_only:  # author, title, DOI, year range: the catalog names the papers
            ids = self.store.matching(where)
            if not ids:
                return Candidates([], [], [], [])
            where = Filter(paper_ids=frozenset(ids))
        dense = cfg.head_weight or cfg.chunk_weight or cfg.sentence_weight
        # What can run beside another does (the model and the vector index work outside the
        # GIL): while the query is embedded, the store opens what it needs (on a cold start,
        # chromadb's import), resolves the filter and runs BM25; then the sentence search
        # runs beside the chunk search.
        with ThreadPoolExecutor(max_workers=1) as pool:
            embedding = pool.submit(self.embedder.embed_query, query) if dense else None
            # The embedder also reads the acronyms spelled out (looked up while the query is
            # embedded); BM25 matches them as written (their words, common ones, spread its
            # scores over every paper on the topic: SciFact test nDCG@10 0.739 with them,
            # 0.745 without).
            spelled = spell(query, self.definitions(query)) if dense else query
            spelled_embedding = (
                pool.submit(self.embedder.embed_query, spelled) if spelled != query else None
            )
            self.store.warm()
            if where:  # resolved once here, not by both dense searches at the same moment
                self.store.matching(where)
                self.store.prepare(where, _kinds(cfg) if dense else [])
            lexical = self.store.lexical(query, n, where) if cfg.lexical_weight else []
            vector = embedding.result() if embedding is not None else None
            if vector is not None and spelled_embedding is not None:
                vector = _halfway(vector, spelled_embedding.result())
            sentence_search = None
            if vector is not None and cfg.sentence_weight and self.store.keeps_sentences:
                # Papers have a few chunks and many sentences: enough to cover n papers (each
                # kept by its best sentence, so the store may stop at the n-th paper).
                search = partial(self.store.nearest, papers=n)
                sentence_search = pool.submit(search, "sentences", vector, n * 6, where)
            chunk_matches: list[Match] = []
            if vector is not None and (cfg.head_weight or cfg.chunk_weight):
                chunk_matches = self.store.nearest("chunks", vector, n * 3, where)
            found = sentence_search.result() if sentence_search is not None else []
        heads = _heads(chunk_matches, n) if cfg.head_weight else []
        chunks = _best_per_paper(chunk_matches, n) if cfg.chunk_weight else []
        sentences = _best_per_paper(found, n) if sentence_search is not None else []
        return Candidates(heads, chunks, sentences, lexical)

    def fuse(self, found: Candidates) -> list[tuple[str, float]]:
        cfg = self.settings
        weights = [cfg.head_weight, cfg.chunk_weight, cfg.sentence_weight, cfg.lexical_weight]
        dense = [found.heads, found.chunks, found.sentences]
        if cfg.fusion == "rrf":
            rankings = [[c[0] for c in rows] for rows in dense]
            return fuse([*rankings, [p for p, _ in found.lexical]], weights, cfg.rrf_k)
        scores = [{c[0]: c[2] for c in rows} for rows in dense]
        return zscore_fuse([*scores, dict(found.lexical)], weights)

    def definitions(self, query: str) -> dict[str, str]:
        """The words each acronym of the query stands for, as most of the ``DEFINERS`` papers
        the lexical index finds for it (or its plural) define it ("mixture-of-experts" for
        MoE): the embedder knows the words far better than the acronym, and an abstract may
        write only the words. Not for an acronym whose words the query says, that no abstract
        defines, or that names a paper ("THG"): its words are that paper's title, not what the
        question asks."""
        found: dict[str, str] = {}
        for acronym in acronyms(query):
            words = self._definition(acronym)
            if words and not says(words, query):
                found[acronym] = words
        return found

    def _definition(self, acronym: str) -> str | None:
        """What the store defines the acronym as (None: nothing, or a paper's name), kept
        while the store's ready papers stay as they are: a question asks it of each of its
        parts and topics, and the answer once more."""
        key = (self.store.stamp(), acronym)
        try:  # one read: another thread may clear the dict between a check and a read
            return self._definitions[key]
        except KeyError:
            pass
        one = singular(acronym)
        hits = self.store.lexical(f"{one} {one}s", DEFINERS, Filter())
        papers = list(self.store.papers([pid for pid, _ in hits]).values())
        words = None
        if not any(_named_by(acronym, paper) for paper in papers):
            words = common_definition(acronym, (p.text_for_index for p in papers))
        if len(self._definitions) >= KEPT_DEFINITIONS:
            self._definitions.clear()  # a new generation or many acronyms: start again
        self._definitions[key] = words
        return words

    def search(
        self, query: str, k: int | None = None, filters: Mapping[str, Any] | None = None
    ) -> list[Hit]:
        k = k or self.settings.k
        found = self.candidates(query, max(self.settings.candidates, k), check_filters(filters))
        fused = self.fuse(found)
        # Only ready papers: a paper half-written by an interrupted ingest is not shown.
        top_ids = [pid for pid, _ in fused[: k * 2]]
        papers = self.store.papers(top_ids)
        best_chunk = {pid: chunk_id for pid, chunk_id, _ in found.chunks}
        similarity = {pid: sim for pid, _, sim in found.chunks}
        chunk_text = self.store.chunk_texts([best_chunk[p] for p in top_ids if p in best_chunk])
        dense_rank = {c[0]: i for i, c in enumerate(found.chunks, start=1)}
        lexical_rank = {p: i for i, (p, _) in enumerate(found.lexical, start=1)}
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

    def holding(
        self, terms: Sequence[str], n: int, filters: Mapping[str, Any] | None = None
    ) -> list[Hit]:
        """Up to n papers whose text contains every analysed term, by BM25 score: a literal
        condition ("on GitHub") is met word for word, whatever the embeddings say."""
        found = self.store.lexical(" ".join(terms), n, check_filters(filters))
        papers = self.store.papers([pid for pid, _ in found])
        hits: list[Hit] = []
        for rank, (pid, score) in enumerate(found, start=1):
            paper = papers.get(pid)
            if paper is None or not set(terms) <= set(analyze([paper.text_for_index])[0]):
                continue
            chunk = self._best_chunk_lexically(pid, " ".join(terms))
            hits.append(Hit(len(hits) + 1, paper, score, chunk, lexical_rank=rank))
        return hits

    def _best_chunk_lexically(self, paper_id: str, query: str) -> str:
        chunks = self.store.chunks_of(paper_id)
        if len(chunks) <= 1:
            return chunks[0] if chunks else ""
        terms = set(analyze([query])[0])
        overlaps = [len(terms & set(analyze([c])[0])) for c in chunks]
        return chunks[overlaps.index(max(overlaps))]
