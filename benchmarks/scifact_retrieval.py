"""SciFact retrieval benchmark: each retriever alone and fused, measured in one run.

Indexes SciFact's 5,183 abstracts (title + abstract) through the product's own ingest pipeline
into a throw-away store, then prints nDCG@10 and recall@100 on the 300 test queries, ingest
throughput and end-to-end search latency (p50/p95). ``--tune`` grid-searches the fusion weights
on the *train* queries (never on test) and prints the best settings.

    python benchmarks/scifact_retrieval.py            # build (or --reuse) the store, report test
    python benchmarks/scifact_retrieval.py --reuse --tune

SciFact is CC BY-NC: it is read from ../shared/data/scifact and never copied into the project.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

from assistant import Assistant, load_settings
from assistant.eval.retrieval import ndcg_at_k, recall_at_k
from assistant.ingest.corpus import Paper, make_paper
from assistant.retrieval.hybrid import Candidates, HybridRetriever
from assistant.settings import RetrievalSettings
from assistant.store import Filter

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "scifact"
Runs = dict[str, list[str]]


def load_qrels(path: Path) -> dict[str, dict[str, float]]:
    qrels: dict[str, dict[str, float]] = defaultdict(dict)
    for line in path.read_text().splitlines()[1:]:
        qid, doc, grade = line.split("\t")
        qrels[qid][doc] = float(grade)
    return qrels


def load_papers(data: Path) -> Iterator[Paper]:
    for line in (data / "corpus.jsonl").open(encoding="utf-8"):
        row = json.loads(line)
        yield make_paper(
            {"id": row["_id"], "title": row["title"], "abstract": row["text"]},
            f"scifact#{row['_id']}",
        )


def build_store(assistant: Assistant, data: Path) -> float:
    papers = list(load_papers(data))
    start = time.perf_counter()
    report = assistant.ingest_papers(papers)
    elapsed = time.perf_counter() - start
    rate = len(papers) / elapsed
    print(
        f"ingested {report.added} abstracts ({report.chunks_written} chunks) in {elapsed:.0f} s"
        f" = {rate:.1f} abstracts/s",
        flush=True,
    )
    return rate


def candidates(assistant: Assistant, queries: dict[str, str], n: int) -> dict[str, Candidates]:
    retriever = assistant.retriever()
    return {qid: retriever.candidates(text, n, Filter()) for qid, text in queries.items()}


def score(runs: Runs, qrels: dict[str, dict[str, float]]) -> tuple[float, float]:
    ndcg = statistics.mean(ndcg_at_k(runs[q], qrels[q], 10) for q in runs)
    recall = statistics.mean(recall_at_k(runs[q], qrels[q], 100) for q in runs)
    return ndcg, recall


def fused(found: dict[str, Candidates], settings: RetrievalSettings) -> Runs:
    """Fusion only needs the candidate lists, so settings can be varied without re-querying."""
    retriever = HybridRetriever(None, None, settings)  # type: ignore[arg-type]
    return {q: [pid for pid, _ in retriever.fuse(c)] for q, c in found.items()}


def alone(found: dict[str, Candidates], which: str) -> Runs:
    return {q: [row[0] for row in getattr(c, which)] for q, c in found.items()}


def zscore_weights(
    cfg: RetrievalSettings, heads: float, chunks: float, sentences: float
) -> RetrievalSettings:
    """``cfg`` with z-score fusion under these dense weights (BM25 at 1)."""
    update = {"head_weight": heads, "chunk_weight": chunks, "sentence_weight": sentences}
    return cfg.model_copy(update={"fusion": "zscore", "lexical_weight": 1.0, **update})


def tune(
    found: dict[str, Candidates], qrels: dict[str, dict[str, float]], cfg: RetrievalSettings
) -> None:
    results = []
    grid = [0.0, 0.4, 0.8, 1.2]
    for wh, wc, ws in itertools.product(grid, grid, grid):
        trial = zscore_weights(cfg, wh, wc, ws)
        results.append((score(fused(found, trial), qrels), wh, wc, ws))
    print(f"train queries: {len(qrels)}")
    for k in (10, 30, 60):
        trial = cfg.model_copy(
            update={
                "fusion": "rrf",
                "rrf_k": k,
                "head_weight": 1.0,
                "chunk_weight": 1.0,
                "sentence_weight": 1.0,
                "lexical_weight": 1.0,
            }
        )
        print(f"  rrf k={k} (1:1:1:1)  nDCG@10={score(fused(found, trial), qrels)[0]:.4f}")
    for (ndcg, recall), wh, wc, ws in sorted(results, reverse=True)[:10]:
        print(
            f"  zscore head={wh:<4} chunk={wc:<4} sentence={ws:<4} lexical=1.0  "
            f"nDCG@10={ndcg:.4f} R@100={recall:.4f}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--store", type=Path, default=HERE / ".cache" / "scifact-store")
    parser.add_argument("--reuse", action="store_true", help="keep an existing store")
    parser.add_argument("--tune", action="store_true", help="grid-search fusion on train")
    args = parser.parse_args()
    if not (args.data / "corpus.jsonl").exists():
        print(f"SciFact not found at {args.data}; pass --data", file=sys.stderr)
        return 2

    if args.store.exists() and not args.reuse:
        shutil.rmtree(args.store)
    settings = load_settings(store={"path": args.store})
    assistant = Assistant(settings)
    rate = None
    if not (args.store / "catalog.sqlite3").exists() or not assistant.store.has_ready():
        rate = build_store(assistant, args.data)

    queries = {
        (r := json.loads(line))["_id"]: r["text"]
        for line in (args.data / "queries.jsonl").open(encoding="utf-8")
    }
    cfg = settings.retrieval
    split = "train" if args.tune else "test"
    qrels = load_qrels(args.data / "qrels" / f"{split}.tsv")
    found = candidates(assistant, {q: queries[q] for q in qrels}, cfg.candidates)
    if args.tune:
        tune(found, qrels, cfg)
        return 0

    def variant(fusion: str, head: float, chunk: float, sentence: float) -> RetrievalSettings:
        return cfg.model_copy(
            update={
                "fusion": fusion,
                "rrf_k": 60,
                "head_weight": head,
                "chunk_weight": chunk,
                "sentence_weight": sentence,
                "lexical_weight": 1.0,
            }
        )

    table = [
        ("dense: MiniLM heads (first chunk of each paper)", alone(found, "heads")),
        ("dense: MiniLM chunks (best chunk per paper)", alone(found, "chunks")),
        ("dense: MiniLM sentences (best sentence per paper)", alone(found, "sentences")),
        ("BM25 (bm25s, Snowball stemmer)", alone(found, "lexical")),
        ("hybrid: RRF k=60, chunks + BM25", fused(found, variant("rrf", 0, 1, 0))),
        ("hybrid: RRF k=60, all four, equal weights", fused(found, variant("rrf", 1, 1, 1))),
        (
            "hybrid: z-score, chunks 0.4 + sentences 0.8 + BM25 1",
            fused(found, variant("zscore", 0, 0.4, 0.8)),
        ),
        (
            f"**hybrid, default**: z-score, heads {cfg.head_weight:g} + chunks "
            f"{cfg.chunk_weight:g} + sentences {cfg.sentence_weight:g} + BM25 "
            f"{cfg.lexical_weight:g}",
            fused(found, cfg),
        ),
    ]

    latencies = []
    for text in list(queries[q] for q in qrels):
        start = time.perf_counter()
        assistant.search(text, k=10)
        latencies.append((time.perf_counter() - start) * 1000)
    latencies.sort()
    p50 = latencies[len(latencies) // 2]
    p95 = latencies[int(len(latencies) * 0.95) - 1]

    info = assistant.info()
    print(
        f"\nSciFact test: {len(qrels)} queries, {info['papers']} abstracts, "
        f"{info['vectors']} chunk and {info['sentence_vectors']} sentence vectors, "
        f"embedder {info['embedder']}, chunker {info['chunker']}"
    )
    print("| retriever | nDCG@10 | recall@100 |")
    print("|---|---|---|")
    for name, runs in table:
        ndcg, recall = score(runs, qrels)
        print(f"| {name} | {ndcg:.3f} | {recall:.3f} |")
    if rate:
        print(f"\ningest throughput: {rate:.1f} abstracts/s (chunks + sentences + BM25)")
    print(f"search latency (k=10, end to end, warm): p50 {p50:.0f} ms, p95 {p95:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
