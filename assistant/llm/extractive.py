"""The offline default: no LLM. It answers by quoting the abstract sentences that best answer
the question, each cited, so every claim is faithful by construction.

Sentence score = cosine(question, sentence) with MiniLM + 0.25 x the share of the question's
terms the sentence contains + 0.05 when it states a contribution ("we propose", "we show")
+ 0.08 when the question asks for a quantity and the sentence has a number + a small bonus for
better-ranked papers. Sentences are picked
greedily with a redundancy penalty (maximal marginal relevance), at most three per paper, then
printed paper by paper in source order and, within a paper, in the abstract's own order.
Questions about a paper's authors, link, year or venue are answered from its stored metadata
instead (``assistant.metadata_questions``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from assistant.answer import CANNOT_ANSWER, Usage
from assistant.chunking import sentences_of
from assistant.context import Context
from assistant.embeddings import Embedder
from assistant.lexical import analyze
from assistant.llm.base import Piece, Provider
from assistant.metadata_questions import answer as answer_from_metadata
from assistant.metadata_questions import parse as metadata_question

NOTICE = (
    "Extractive answer (no LLM configured): sentences quoted from the abstracts. "
    "For a written answer set OPENAI_API_KEY, or OPENAI_BASE_URL for a local server."
)


# Sentences that state what a paper does or finds, rather than background.
_CONTRIBUTION = re.compile(
    r"\b(?:we|our|this paper|this work)\b.{0,40}?\b(?:propose|introduce|present|show|find|"
    r"demonstrate|achiev|outperform|reduc|improv|develop|prove|design)",
    re.IGNORECASE,
)


# Questions that ask for a quantity are answered by sentences with numbers in them.
_QUANTITY_QUESTION = re.compile(
    r"\b(?:how (?:many|much|fast|large|big|long|often)|by how much|what (?:percentage|"
    r"fraction|accuracy|speed-?up|score|number|size)|to what extent)\b",
    re.IGNORECASE,
)
_HAS_NUMBER = re.compile(r"\d")

# "Code is available at https://..." answers nothing.
_BOILERPLATE = re.compile(
    r"https?://|github\.com|\b(?:code|data|dataset|models?)\b[^.]{0,40}\b(?:is|are) "
    r"(?:publicly |freely |now )?(?:available|released)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Candidate:
    source: int  # 1-based source number
    position: int  # sentence index within the abstract
    text: str
    score: float
    similarity: float


def _cite(sentence: str, n: int) -> str:
    """'We find X.' -> 'We find X [n].'"""
    body = sentence.rstrip()
    end = body[-1] if body and body[-1] in ".!?" else "."
    return f"{body.rstrip('.!?').rstrip()} [{n}]{end}"


class ExtractiveProvider(Provider):
    name = "extractive"
    model = "extractive"
    notice = NOTICE
    prompts_model = False  # it quotes the sources: no token budget to fit them into

    def __init__(
        self,
        embedder: Embedder,
        sentences: int = 5,
        per_paper: int = 3,
        min_similarity: float = 0.15,
        redundancy: float = 0.6,
        lookup: Callable[[list[str]], dict[str, np.ndarray]] | None = None,
    ):
        self.embedder = embedder
        self.sentences = sentences
        self.per_paper = per_paper
        self.min_similarity = min_similarity
        self.redundancy = redundancy
        self.lookup = lookup  # stored sentence vectors by id, to skip re-embedding

    def _vectors(self, ids: list[str], texts: list[str]) -> np.ndarray:
        """Sentence vectors from the store when it has them; the rest embedded now."""
        stored = self.lookup(ids) if self.lookup else {}
        missing = [i for i, sid in enumerate(ids) if sid not in stored]
        fresh = self.embedder.embed([texts[i] for i in missing]) if missing else None
        out = np.empty((len(ids), self.embedder.dim), dtype=np.float32)
        for i, sid in enumerate(ids):
            if sid in stored:
                out[i] = stored[sid]
        if fresh is not None:
            out[missing] = fresh
        return out

    def rank(self, context: Context) -> tuple[list[Candidate], np.ndarray]:
        rows = []
        for n, hit in enumerate(context.sources, start=1):
            first = 1 if hit.paper.title else 0  # the title is indexed, never quoted
            for i, sentence in enumerate(sentences_of(hit.paper)[first:], start=first):
                if len(sentence.split()) >= 4:
                    rows.append((n, i, sentence, f"{hit.paper_id}:s{i}"))
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        vectors = self._vectors([r[3] for r in rows], [r[2] for r in rows])
        similarity = vectors @ self.embedder.embed_query(context.question)
        query_terms = set(analyze([context.question])[0])
        wants_quantity = bool(_QUANTITY_QUESTION.search(context.question))
        sentence_terms = analyze([r[2] for r in rows])
        candidates = []
        for (n, i, s, _), sim, terms in zip(rows, similarity, sentence_terms, strict=True):
            overlap = len(query_terms & set(terms)) / len(query_terms) if query_terms else 0.0
            cue = 0.05 if _CONTRIBUTION.search(s) else 0.0
            if _BOILERPLATE.search(s):
                cue -= 0.3
            if wants_quantity and _HAS_NUMBER.search(s):
                cue += 0.08
            score = float(sim) + 0.25 * overlap + cue + 0.03 / n
            candidates.append(Candidate(n, i, s, score, float(sim)))
        return candidates, vectors

    def select(self, context: Context) -> list[Candidate]:
        candidates, vectors = self.rank(context)
        if not candidates:
            return []
        best = max(c.score for c in candidates)
        # Stay on topic: far weaker than the best sentence is not worth quoting.
        floor = -1.0 if context.pinned else self.min_similarity
        eligible = [
            idx
            for idx, cand in enumerate(candidates)
            if cand.similarity >= floor and cand.score >= 0.65 * best
        ]
        chosen: list[int] = []
        per_paper: dict[int, int] = {}
        if context.pinned:
            # The user named these papers ("compare them"): each one gets its best sentence.
            for source in sorted({c.source for c in candidates}):
                idx = max(
                    (i for i, c in enumerate(candidates) if c.source == source),
                    key=lambda i: candidates[i].score,
                    default=None,
                )
                if idx is not None:
                    chosen.append(idx)
                    per_paper[source] = 1
        while len(chosen) < self.sentences:
            pick, pick_value = -1, -np.inf
            for idx in eligible:
                cand = candidates[idx]
                if idx in chosen or per_paper.get(cand.source, 0) >= self.per_paper:
                    continue
                overlap = max((float(vectors[idx] @ vectors[j]) for j in chosen), default=0.0)
                value = cand.score - self.redundancy * max(0.0, overlap - 0.5)
                if value > pick_value:
                    pick, pick_value = idx, value
            if pick < 0:
                break
            chosen.append(pick)
            per_paper[candidates[pick].source] = per_paper.get(candidates[pick].source, 0) + 1
        return sorted((candidates[i] for i in chosen), key=lambda c: (c.source, c.position))

    def stream(self, context: Context) -> Iterator[Piece]:
        about = metadata_question(context.question)
        if about is not None:  # "who wrote ...": the stored metadata answers, not quotes
            yield answer_from_metadata(about, context)
            yield Usage(estimated=False, cost_usd=0.0)
            return
        picked = self.select(context)
        if not picked:
            yield CANNOT_ANSWER
            yield Usage(estimated=False, cost_usd=0.0)
            return
        lines: list[str] = []
        for source in dict.fromkeys(c.source for c in picked):
            label = context.sources[source - 1].label
            quoted = " ".join(_cite(c.text, source) for c in picked if c.source == source)
            lines.append(f"- {label}: {quoted}")
        for k, line in enumerate(lines):
            yield line + ("\n" if k < len(lines) - 1 else "")
        yield Usage(estimated=False, cost_usd=0.0)
