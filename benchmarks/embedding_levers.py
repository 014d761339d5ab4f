"""Ingest levers on SciFact: what each costs in embedding time and what it does to nDCG@10.

Issue #10 asks for an ingest at least as fast as Chroma's naive path (one 256-piece document per
abstract) without losing retrieval quality (test nDCG@10 >= 0.740, and within 0.005 of today for
int8). The cost of ingest is the transformer pass, so this measures the levers on that pass, all
on SciFact's 5,183 abstracts in one run:

* weights: the shipped MiniLM file (int8 storage, fp32 compute) or real int8 (onnxruntime's
  dynamic quantization, per channel, of that file: ``assistant.embedding.quantize``, as
  ``ingest --fast``);
* what is embedded: chunks and sentences (today), or sentences only, with each chunk's vector
  pooled from its sentences' vectors (weighted by length), which removes the chunk pass; or
  sentences and each paper's first chunk only, cut to 128 word pieces (the chunk that the
  fusion's "heads" signal reads), with the other chunks pooled.

Each arm's vectors are scored through the product's own fusion (``HybridRetriever.fuse``) with
today's weights and with the weights best on the *train* queries; test is reported. The lexical
candidates and chunk texts come from a SciFact store built by ``scifact_retrieval.py``: they do
not depend on the vectors. Vectors are cached in ``--cache``; ``--fresh`` embeds again.

    python benchmarks/scifact_retrieval.py            # builds the store once (~20 min)
    python benchmarks/embedding_levers.py             # ~30 min here, 2 cores
"""

from __future__ import annotations

import argparse
import itertools
import json
import sqlite3
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from ingest_vs_chroma import naive_embed, naive_session
from scifact_retrieval import (
    DEFAULT_DATA,
    HERE,
    fused,
    load_papers,
    load_qrels,
    score,
    zscore_weights,
)

from assistant import Assistant, load_settings
from assistant.embedding.embedders import MiniLMEmbedder
from assistant.embedding.quantize import int8_model
from assistant.ingest.chunking import sentences_of
from assistant.ingest.corpus import Paper
from assistant.retrieval.hybrid import Candidates, _best_per_paper, _heads
from assistant.settings import RetrievalSettings
from assistant.store import Filter
from assistant.store.base import Match

# Chunk vectors: "embedded" (a pass over every chunk), "pooled" (from the sentences' vectors), or
# "first" (the first chunk embedded, cut to FIRST_PIECES word pieces; the others pooled).
Arm = tuple[str, str, str]  # (name, weights, chunk vectors)
ARMS: list[Arm] = [
    ("shipped weights, chunks + sentences (today)", "shipped", "embedded"),
    ("shipped weights, sentences, pooled chunks", "shipped", "pooled"),
    ("int8 weights, chunks + sentences", "int8", "embedded"),
    ("int8 weights, sentences, pooled chunks", "int8", "pooled"),
    ("int8 weights, sentences + first chunk (128 pieces), others pooled", "int8", "first"),
]
FIRST_PIECES = 128


def timed_embed(embedder: MiniLMEmbedder, texts: Sequence[str]) -> tuple[np.ndarray, float]:
    embedder.embed(["warm up"])
    start = time.perf_counter()
    vectors = np.vstack([embedder.embed(texts[i : i + 4096]) for i in range(0, len(texts), 4096)])
    return vectors, time.perf_counter() - start


def pooled_chunks(
    papers: dict[str, Paper],
    split: dict[str, list[str]],
    chunks: list[tuple[str, str, str]],
    sentence_rows: dict[str, int],
    sentences: np.ndarray,
) -> np.ndarray:
    """Each chunk's vector: its sentences' vectors (those at least half inside it) averaged,
    weighted by length, and normalised."""
    out = np.zeros((len(chunks), sentences.shape[1]), dtype=np.float32)
    spans: dict[str, list[tuple[int, int]]] = {}
    for row, (_, pid, text) in enumerate(chunks):
        full = papers[pid].text_for_index
        if pid not in spans:
            spans[pid], pos = [], 0
            for sentence in split[pid]:
                at = full.find(sentence, pos)
                at = at if at >= 0 else pos
                spans[pid].append((at, at + len(sentence)))
                pos = at + 1
        at = full.find(text[:80])
        start, end = (at, at + len(text)) if at >= 0 else (0, len(full))
        rows, weights = [], []
        for i, (s, e) in enumerate(spans[pid]):
            if min(end, e) - max(start, s) >= 0.5 * (e - s):
                rows.append(sentence_rows[f"{pid}:s{i}"])
                weights.append(e - s)
        vector = (sentences[rows] * np.array(weights, np.float32)[:, None]).sum(axis=0)
        out[row] = vector / max(float(np.linalg.norm(vector)), 1e-12)
    return out


def nearest(
    matrix: np.ndarray, ids: list[str], owners: list[str], v: np.ndarray, n: int
) -> list[Match]:
    sims = matrix @ v
    top = np.argpartition(-sims, n)[:n]
    return [Match(ids[t], owners[t], float(sims[t])) for t in top[np.argsort(-sims[top])]]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--store", type=Path, default=HERE / ".cache" / "scifact-store")
    parser.add_argument("--cache", type=Path, default=HERE / ".cache" / "levers")
    parser.add_argument("--fresh", action="store_true", help="embed again, ignoring the cache")
    args = parser.parse_args()
    if not (args.store / "catalog.sqlite3").exists():
        print(f"no SciFact store at {args.store}: run scifact_retrieval.py first", file=sys.stderr)
        return 2
    args.cache.mkdir(parents=True, exist_ok=True)
    papers = {p.paper_id: p for p in load_papers(args.data)}
    with sqlite3.connect(args.store / "catalog.sqlite3") as db:
        chunks = list(db.execute("SELECT chunk_id, paper_id, text FROM chunks ORDER BY chunk_id"))
    split = {pid: sentences_of(p) for pid, p in papers.items()}  # each paper's, as indexed
    sentence_ids = [f"{pid}:s{i}" for pid, texts in split.items() for i in range(len(texts))]
    sentence_texts = [text for texts in split.values() for text in texts]
    sentence_rows = {sid: i for i, sid in enumerate(sentence_ids)}
    print(f"{len(papers)} abstracts: {len(chunks)} chunks, {len(sentence_texts)} sentences")

    timings = (
        json.loads((args.cache / "timings.json").read_text())
        if not args.fresh and (args.cache / "timings.json").exists()
        else {}
    )
    if "naive" not in timings:
        tokenizer, session = naive_session("256")
        naive_embed(tokenizer, session, ["warm up"])
        start = time.perf_counter()
        naive_embed(tokenizer, session, [p.text_for_index for p in papers.values()])
        timings["naive"] = time.perf_counter() - start
    shipped = MiniLMEmbedder.model_files()[0]
    models = {"shipped": shipped, "int8": int8_model(shipped, args.cache)}
    vectors: dict[str, np.ndarray] = {}
    first_rows = [row for row, c in enumerate(chunks) if c[0].endswith(":0")]
    passes = [*itertools.product(models, ("sentences", "chunks")), ("int8", "first")]
    for weights, kind in passes:
        key, path = f"{weights}-{kind}", args.cache / f"{weights}-{kind}.npy"
        if key in timings and path.exists():
            vectors[key] = np.load(path)
            continue
        texts = {
            "sentences": sentence_texts,
            "chunks": [c[2] for c in chunks],
            "first": [chunks[row][2] for row in first_rows],
        }[kind]
        pieces = FIRST_PIECES if kind == "first" else 256
        embedder = MiniLMEmbedder(model=models[weights], max_tokens=pieces)
        vectors[key], timings[key] = timed_embed(embedder, texts)
        np.save(path, vectors[key])
        (args.cache / "timings.json").write_text(json.dumps(timings))
        print(f"  embedded {key}: {timings[key]:.0f} s", flush=True)
    (args.cache / "timings.json").write_text(json.dumps(timings))

    settings = load_settings(store={"path": args.store})
    cfg = settings.retrieval
    n = cfg.candidates
    queries = {
        (r := json.loads(line))["_id"]: r["text"]
        for line in (args.data / "queries.jsonl").open(encoding="utf-8")
    }
    qrels = {split: load_qrels(args.data / "qrels" / f"{split}.tsv") for split in ("train", "test")}
    chunk_ids = [c[0] for c in chunks]
    chunk_owner = [c[1] for c in chunks]
    sentence_owner = [sid.rpartition(":")[0] for sid in sentence_ids]
    with Assistant(settings) as assistant:
        lexical = {
            q: assistant.store.lexical(queries[q], n, Filter())
            for split in qrels.values()
            for q in split
        }

    def candidates(weights: str, chunk_mode: str) -> dict[str, Candidates]:
        sentences = vectors[f"{weights}-sentences"]
        if chunk_mode == "embedded":
            chunk_vectors = vectors[f"{weights}-chunks"]
        else:
            chunk_vectors = pooled_chunks(papers, split, chunks, sentence_rows, sentences)
        if chunk_mode == "first":
            chunk_vectors[first_rows] = vectors[f"{weights}-first"]
        embedder = MiniLMEmbedder(model=models[weights])
        found = {}
        for q in lexical:  # one at a time, as a search does: int8 scales depend on the batch
            v = embedder.embed_query(queries[q])
            near_chunks = nearest(chunk_vectors, chunk_ids, chunk_owner, v, n * 3)
            near_sentences = nearest(sentences, sentence_ids, sentence_owner, v, n * 6)
            found[q] = Candidates(
                _heads(near_chunks, n),
                _best_per_paper(near_chunks, n),
                _best_per_paper(near_sentences, n),
                lexical[q],
            )
        return found

    def ndcg(found: dict[str, Candidates], split: str, trial: RetrievalSettings) -> float:
        return score(fused({q: found[q] for q in qrels[split]}, trial), qrels[split])[0]

    naive_rate = len(papers) / timings["naive"]
    agreement = np.einsum("ij,ij->i", vectors["shipped-sentences"], vectors["int8-sentences"])
    print(f"int8 against shipped weights, sentence vectors: mean cosine {agreement.mean():.3f}")
    print(f"\nnaive path (one 256-piece document per abstract): {naive_rate:.1f} abstracts/s")
    print(
        "| arm | embedding abstracts/s | against naive | test nDCG@10, today's weights |"
        " best weights on train (h/c/s) | test nDCG@10, those weights |"
    )
    print("|---|---|---|---|---|---|")
    grid = [0.0, 0.2, 0.4, 0.6, 0.8]
    for name, weights, chunk_mode in ARMS:
        chunk_pass = {"embedded": f"{weights}-chunks", "first": f"{weights}-first"}
        seconds = timings[f"{weights}-sentences"] + (
            timings[chunk_pass[chunk_mode]] if chunk_mode in chunk_pass else 0.0
        )
        rate = len(papers) / seconds
        found = candidates(weights, chunk_mode)
        tried = []
        for h, c, s in itertools.product(grid, grid, [0.4, 0.6, 0.8, 1.0, 1.2]):
            trial = zscore_weights(cfg, h, c, s)
            tried.append((ndcg(found, "train", trial), (h, c, s), trial))
        _, best, trial = max(tried, key=lambda t: t[0])
        print(
            f"| {name} | {rate:.1f} | {rate / naive_rate:.2f}x | {ndcg(found, 'test', cfg):.3f} |"
            f" {best[0]:g}/{best[1]:g}/{best[2]:g} | {ndcg(found, 'test', trial):.3f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
