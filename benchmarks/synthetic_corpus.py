"""Synthetic abstracts with real MiniLM vectors, for building stores larger than we can embed.

Embedding 10^5 abstracts with MiniLM on this machine takes hours, so the scaling benchmark does
it once for a *pool*: the title and sentences of SciFact abstracts, embedded with the product's
own MiniLM and cached in ``benchmarks/.cache/`` (git-ignored; SciFact is CC BY-NC and is never
copied into the project). Papers are then made by recombining sentences:

- text: a SciFact title, then 6-12 sentences, about 70% in order from that title's abstract and
  the rest from one of its 10 nearest abstracts, so each abstract reads as real text on one
  topic and the lexical statistics are those of real scientific prose;
- sentence vectors: the real vector of each sentence plus a little noise (cosine ~0.98 to the
  original), so a sentence used in many papers is not many identical points;
- chunk vectors: the normalised mean of the real vectors of the sentences in the chunk (the
  cache records how close that mean is to MiniLM's own vector of the chunk);
- year, venue and authors made up, so that filters select a share of the store (a year ~10%,
  each of ``RARE_AUTHORS`` 0.1%).

``PoolEmbedder`` hands these vectors to the product's ingest, which then writes the journal,
Chroma collections and BM25 as it always does. Any text not made from the pool (a query, or a
sentence the splitter cut differently) is embedded by MiniLM for real.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from assistant.embedding.embedders import Embedder, MiniLMEmbedder
from assistant.ingest.chunking import Chunker, sentences_of
from assistant.ingest.corpus import Paper, make_paper
from assistant.text.normalise import split_sentences

VENUES = [f"Venue {chr(ord('A') + i)}" for i in range(20)]  # one venue holds ~5% of papers
YEARS = list(range(2015, 2025))  # one year holds ~10%
SURNAMES = ["Ito", "Okafor", "Novak", "Silva", "Chen", "Haddad", "Larsen", "Mehta", "Kowalski"]
# Every 100th paper also has one of these authors, in turn: each is on 0.1% of the papers.
RARE_AUTHORS = [
    "R. Quispe", "T. Mwangi", "S. Aydin", "L. Nakamura", "P. Oyelaran",
    "M. Vargas", "E. Lindqvist", "K. Banerjee", "J. Dubois", "N. Petrova",
]  # fmt: skip
NOISE = 0.2  # norm of the noise added to a unit sentence vector: cosine ~0.98 to the original


@dataclass
class Pool:
    """Real texts of SciFact abstracts and their MiniLM vectors."""

    titles: list[str]  # one per source abstract
    sentences: list[list[str]]  # each source abstract's sentences (title excluded)
    vectors: dict[str, np.ndarray]  # title or sentence -> its MiniLM vector
    neighbours: np.ndarray  # (abstracts, 10): the nearest other abstracts, by mean vector
    stats: dict[str, float]  # embedding rates measured when the pool was made, and checks

    @classmethod
    def load(cls, path: Path) -> Pool:
        data = np.load(path, allow_pickle=False)
        texts = [str(t) for t in data["texts"]]
        owner, is_title = data["owner"], data["is_title"]
        n = int(owner.max()) + 1
        titles = [""] * n
        sentences: list[list[str]] = [[] for _ in range(n)]
        for text, who, title in zip(texts, owner, is_title, strict=True):
            if title:
                titles[who] = text
            else:
                sentences[who].append(text)
        vectors = dict(zip(texts, data["vectors"], strict=True))
        stats = json.loads(str(data["stats"]))
        return cls(titles, sentences, vectors, data["neighbours"], stats)


def build_pool(papers: Sequence[Paper], path: Path, check: int = 100) -> Pool:
    """Embed the titles and sentences of ``papers`` with MiniLM (and, for the first ``check``,
    their chunks too: the measured chunk rate, and how near a chunk's vector is to the mean of
    its sentences' vectors); save them to ``path``."""
    embedder = MiniLMEmbedder()
    embedder.embed(["warm up"])
    texts, owner, is_title = [], [], []
    for i, paper in enumerate(papers):
        for j, text in enumerate(sentences_of(paper)):
            texts.append(text)
            owner.append(i)
            is_title.append(j == 0 and paper.title is not None)
    start = time.perf_counter()
    vectors = embedder.embed(texts)
    sentence_seconds = time.perf_counter() - start

    chunker = Chunker()
    checked = papers[:check]
    chunk_texts = [c.text for p in checked for c in chunker.split(p)]
    start = time.perf_counter()
    chunk_vectors = embedder.embed(chunk_texts)
    chunk_seconds = time.perf_counter() - start
    lookup = dict(zip(texts, vectors, strict=True))
    pairs = [
        (m, v)
        for t, v in zip(chunk_texts, chunk_vectors, strict=True)
        if (m := _mean_of(t, lookup)) is not None
    ]
    agreement = float(np.mean([float(m @ v) for m, v in pairs]))

    owners = np.array(owner)
    centroids = np.vstack([vectors[owners == i].mean(axis=0) for i in range(len(papers))])
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
    similarity = centroids @ centroids.T
    np.fill_diagonal(similarity, -1)
    neighbours = np.argsort(-similarity, axis=1)[:, :10]

    n_sentences = len(texts) - sum(is_title)
    stats = {
        "abstracts": len(papers),
        "texts": len(texts),
        "sentences_per_second": len(texts) / sentence_seconds,
        "chunks_per_second": len(chunk_texts) / chunk_seconds,
        "chunks_per_abstract": len(chunk_texts) / len(checked),
        "sentences_per_abstract": n_sentences / len(papers),
        "chunk_mean_cosine": agreement,
        "load_average": os.getloadavg()[0],  # the rates are this machine's, at this load
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(
        path,
        texts=np.array(texts),
        owner=owners,
        is_title=np.array(is_title),
        vectors=vectors,
        neighbours=neighbours,
        stats=np.array(json.dumps(stats)),
    )
    return Pool.load(path)


def _pieces(text: str) -> Iterator[str]:
    """The sentences a chunk is made of, as the pool has them ("Title." is the title)."""
    for piece in split_sentences(text):
        yield piece
        if piece.endswith("."):
            yield piece[:-1]


def _mean_of(text: str, lookup: dict[str, np.ndarray]) -> np.ndarray | None:
    found = [lookup[p] for p in _pieces(text) if p in lookup]
    if not found:
        return None
    mean = np.mean(found, axis=0)
    return (mean / np.linalg.norm(mean)).astype(np.float32)


def synthetic_papers(pool: Pool, n: int, seed: int = 0) -> Iterator[Paper]:
    """``n`` synthetic papers (the first n of any larger set made with the same seed)."""
    rng = np.random.default_rng(seed)
    sources = len(pool.titles)
    for i in range(n):
        main = int(rng.integers(sources))
        other = int(pool.neighbours[main, rng.integers(pool.neighbours.shape[1])])
        length = int(rng.integers(6, 13))
        own = pool.sentences[main]
        keep = min(len(own), max(1, round(length * 0.7)))
        picked = [own[j] for j in sorted(rng.choice(len(own), keep, replace=False))]
        borrowed = pool.sentences[other]
        extra = min(len(borrowed), length - keep)
        picked += [borrowed[j] for j in sorted(rng.choice(len(borrowed), extra, replace=False))]
        initials = rng.integers(0, 26 * len(SURNAMES), 3)
        authors = [f"{chr(65 + int(k) % 26)}. {SURNAMES[int(k) // 26]}" for k in initials]
        if i % 100 == 0:  # drawn from no random stream: the other fields stay as they were
            authors.append(RARE_AUTHORS[i // 100 % len(RARE_AUTHORS)])
        yield make_paper(
            {
                "id": f"syn{i:07d}",
                "title": pool.titles[main],
                "abstract": " ".join(picked),
                "authors": authors,
                "year": YEARS[int(rng.integers(len(YEARS)))],
                "venue": VENUES[int(rng.integers(len(VENUES)))],
            },
            f"synthetic.jsonl#{i + 1}",
        )


class PoolEmbedder(Embedder):
    """MiniLM's vectors looked up in the pool instead of computed (see the module's docstring).

    ``seconds`` is the time spent in ``embed``, for the benchmark to subtract from ingest time;
    ``computed`` counts texts that were not in the pool and went to MiniLM.
    """

    def __init__(self, pool: Pool, real: MiniLMEmbedder, seed: int = 0):
        self.pool = pool
        self.real = real
        self.name = real.name  # the store must open with the real embedder for search
        self.dim = real.dim
        self.seconds = 0.0
        self.computed = 0
        self._rng = np.random.default_rng(seed)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        start = time.perf_counter()
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        unknown: list[int] = []
        for row, text in enumerate(texts):
            vector = self.pool.vectors.get(text)
            if vector is None:
                vector = _mean_of(text, self.pool.vectors)
            if vector is None:
                unknown.append(row)
            else:
                out[row] = vector
        if unknown:
            out[unknown] = self.real.embed([texts[row] for row in unknown])
            self.computed += len(unknown)
        out += self._rng.normal(0, NOISE / np.sqrt(self.dim), out.shape).astype(np.float32)
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        self.seconds += time.perf_counter() - start
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.real.embed_query(text)
