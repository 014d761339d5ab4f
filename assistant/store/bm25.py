"""The base segment of the lexical index: bm25s over whole papers (title + abstract).

It is built from the catalog's ready papers and stamped with the catalog's generation; what
changed since is the delta segment's (``assistant.store.segments``). Each build goes to a fresh
folder and a small pointer file is replaced atomically, so a reader never sees half an index.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Collection, Iterable
from pathlib import Path

import bm25s
import numpy as np

_POINTER = "current.json"


def _documents(retriever: bm25s.BM25) -> int:
    """How many documents a loaded index holds, -1 when its arrays do not say."""
    try:
        return int(retriever.scores["num_docs"])
    except (AttributeError, KeyError, TypeError, ValueError):
        return -1


class LexicalIndex:
    def __init__(self, folder: Path, k1: float = 1.2, b: float = 0.75):
        self.folder = folder
        self.k1 = k1
        self.b = b
        self._retriever: bm25s.BM25 | None = None
        self._ids: list[str] = []
        self._position: dict[str, int] = {}
        self.generation: int | None = None
        self.average_length = 1.0  # terms per indexed paper

    def build(self, docs: Iterable[tuple[str, list[str]]], generation: int) -> None:
        """Index (paper_id, analysed terms) pairs and persist them as ``generation``."""
        ids: list[str] = []
        terms: list[list[str]] = []
        for paper_id, words in docs:
            ids.append(paper_id)
            terms.append(words)
        retriever = bm25s.BM25(k1=self.k1, b=self.b)
        if terms:
            retriever.index(terms, show_progress=False)
        average = sum(len(t) for t in terms) / len(terms) if terms else 1.0
        target = self.folder / f"g{generation}"
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        if terms:
            retriever.save(str(target))
        (target / "ids.json").write_text(json.dumps(ids))
        tmp = self.folder / f".{_POINTER}.{os.getpid()}"
        tmp.write_text(
            json.dumps(
                {
                    "generation": generation,
                    "dir": target.name,
                    "k1": self.k1,
                    "b": self.b,
                    "average_length": average,
                }
            )
        )
        os.replace(tmp, self.folder / _POINTER)
        for old in self.folder.glob("g*"):
            if old.is_dir() and old != target:
                shutil.rmtree(old, ignore_errors=True)
        self._install(retriever if terms else None, ids, generation, average)

    def _install(
        self, retriever: bm25s.BM25 | None, ids: list[str], generation: int, average: float
    ) -> None:
        self._retriever = retriever
        self._ids = ids
        self._position = {pid: i for i, pid in enumerate(ids)}
        self.generation = generation
        self.average_length = average

    def load(self) -> bool:
        """Load the persisted index; False when there is none, it was built differently, or its
        files are unreadable (emptied, truncated): it is derived, so the caller rebuilds it."""
        try:
            info = json.loads((self.folder / _POINTER).read_text())
            if (info.get("k1"), info.get("b")) != (self.k1, self.b):
                return False
            target = self.folder / str(info["dir"])
            ids = json.loads((target / "ids.json").read_text())
            retriever = bm25s.BM25.load(str(target)) if ids else None
            generation = int(info["generation"])
            average = float(info["average_length"])
        except Exception:  # missing, emptied, truncated: json, numpy, OS errors all mean rebuild
            return False
        if not isinstance(ids, list):
            return False
        if retriever is not None and _documents(retriever) != len(ids):
            return False
        self._install(retriever, [str(i) for i in ids], generation, average)
        return True

    def document_frequencies(self, terms: list[str]) -> tuple[dict[str, int], int]:
        """How many indexed papers contain each (analysed) term, and how many papers there are;
        what makes a term rare, read off the index's posting lists."""
        if self._retriever is None:
            return {}, 0
        postings = self._retriever.scores
        starts, vocab = postings["indptr"], self._retriever.vocab_dict
        counts = {}
        for term in terms:
            i = vocab.get(term)
            if i is not None:
                end = starts[i + 1] if i + 1 < len(starts) else len(postings["data"])
                counts[term] = int(end - starts[i])
        return counts, int(postings["num_docs"])

    def count_held(self, paper_ids: set[str]) -> int:
        """How many of these papers the index holds."""
        return sum(1 for pid in paper_ids if pid in self._position)

    @property
    def paper_ids(self) -> list[str]:
        """The papers the index holds."""
        return list(self._ids)

    def search(
        self,
        terms: list[str],
        n: int,
        allowed: Collection[str] | None = None,
        hidden: set[str] | frozenset[str] = frozenset(),
    ) -> list[tuple[str, float]]:
        """Best papers for the analysed query terms, (paper_id, score), score > 0 only; only
        ``allowed`` papers (all when None), never ``hidden`` ones."""
        if self._retriever is None or not self._ids or not terms:
            return []
        if allowed is not None:
            return self._search_among(terms, n, allowed, hidden)
        mask = None
        if hidden:
            mask = np.ones(len(self._ids), dtype=np.float32)
            mask[[self._position[p] for p in hidden if p in self._position]] = 0.0
        k = min(n, len(self._ids))
        docs, scores = self._retriever.retrieve(
            [terms], k=k, show_progress=False, n_threads=1, weight_mask=mask
        )
        return [
            (self._ids[int(d)], float(s)) for d, s in zip(docs[0], scores[0], strict=True) if s > 0
        ]

    def _search_among(
        self, terms: list[str], n: int, allowed: Collection[str], hidden: Collection[str]
    ) -> list[tuple[str, float]]:
        """``search`` under a filter: every paper's score from the query terms' posting lists
        (bm25s's own scoring, as ``retrieve`` computes it), read at the allowed papers' rows
        only, so the cost follows the posting lists and the allowed papers, never a mask of
        the whole index built per query. Ties at the n-th score are broken by paper id."""
        assert self._retriever is not None  # ``search`` returned early otherwise
        if not self._retriever.get_tokens_ids(terms):
            return []
        best = self._best_of_all(terms, n, allowed, hidden)
        if best is not None:
            return best
        position = self._position
        kept = [p for p in allowed if p in position]
        if hidden:
            kept = [p for p in kept if p not in hidden]
        rows = np.array([position[p] for p in kept], dtype=np.int64)
        if not len(rows):
            return []
        scores = self._retriever.get_scores(terms)[rows]
        keep = scores > 0
        rows, scores = rows[keep], scores[keep]
        if len(rows) > n:  # the n best, and any tied with the n-th
            nth = np.partition(scores, len(scores) - n)[len(scores) - n]
            keep = scores >= nth
            rows, scores = rows[keep], scores[keep]
        return self._ranked(rows, scores, n)

    def _best_of_all(
        self, terms: list[str], n: int, allowed: Collection[str], hidden: Collection[str]
    ) -> list[tuple[str, float]] | None:
        """For a filter that keeps a large share of the papers: the best-scored papers of all,
        enough of them that the allowed ones among them hold the n best (``filtered.overfetch``'s
        margin), then kept. None when the share is small, or the n-th allowed score is not
        above every score left out (then another allowed paper could tie or beat it)."""
        share = len(allowed) / len(self._ids)
        asked = math.ceil((n + 4 * math.sqrt(n)) / share) if share else len(self._ids)
        if n <= 0 or asked >= len(self._ids) // 2:
            return None
        scores = self._retriever.get_scores(terms)  # type: ignore[union-attr]
        top = np.argpartition(-scores, asked)[: asked + 1]
        top = top[np.argsort(-scores[top], kind="stable")]
        left_out = scores[top[-1]]  # the best score outside the ``asked`` best
        rows = [
            r
            for r in top[:-1].tolist()
            if scores[r] > 0 and self._ids[r] in allowed and self._ids[r] not in hidden
        ]
        if len(rows) < n or scores[rows[n - 1]] <= left_out:
            return None
        picked = np.array(rows, dtype=np.int64)
        nth = scores[rows[n - 1]]
        picked = picked[scores[picked] >= nth]  # the n best, and any tied with the n-th
        return self._ranked(picked, scores[picked], n)

    def _ranked(self, rows: np.ndarray, scores: np.ndarray, n: int) -> list[tuple[str, float]]:
        """The n best of these rows, ties broken by paper id."""
        found = sorted(
            ((self._ids[int(r)], float(s)) for r, s in zip(rows, scores, strict=True)),
            key=lambda pair: (-pair[1], pair[0]),
        )
        return found[:n]
