"""SciFact retrieval benchmark: dense-only, BM25-only and hybrid, measured in one run.

Indexes SciFact's 5,183 abstracts (title + abstract) through the product's own ingest pipeline
into a throw-away store, then prints nDCG@10 and recall@100 on the 300 test queries, ingest
throughput and hybrid query latency (p50/p95). ``--tune`` grid-searches the fusion settings on
the *train* queries (never on test) and prints the best ones.

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
from pathlib import Path

from assistant import Assistant, load_settings
from assistant.corpus import make_paper
from assistant.eval.retrieval import ndcg_at_k, recall_at_k
from assistant.retrieval import fuse

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "scifact"


def load_qrels(path: Path) -> dict[str, dict[str, float]]:
    qrels: dict[str, dict[str, float]] = defaultdict(dict)
    for line in path.read_text().splitlines()[1:]:
        qid, doc, score = line.split("\t")
        qrels[qid][doc] = float(score)
    return qrels


def load_papers(data: Path):
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


def run_lists(assistant: Assistant, queries: dict[str, str], n: int):
    retriever = assistant.retriever()
    dense, lexical = {}, {}
    for qid, text in queries.items():
        dense[qid] = [d[0] for d in retriever.dense_papers(text, n, {})]
        lexical[qid] = [p for p, _ in retriever.lexical_papers(text, n, {})]
    return dense, lexical


def score(runs: dict[str, list[str]], qrels: dict[str, dict[str, float]]) -> tuple[float, float]:
    ndcg = statistics.mean(ndcg_at_k(runs[q], qrels[q], 10) for q in runs)
    recall = statistics.mean(recall_at_k(runs[q], qrels[q], 100) for q in runs)
    return ndcg, recall


def hybrid_runs(dense, lexical, k: float, wd: float, wl: float) -> dict[str, list[str]]:
    return {q: [d for d, _ in fuse([dense[q], lexical[q]], [wd, wl], k)] for q in dense}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
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
    if assistant.catalog.counts()["papers"] == 0:
        rate = build_store(assistant, args.data)

    queries = {
        (r := json.loads(line))["_id"]: r["text"]
        for line in (args.data / "queries.jsonl").open(encoding="utf-8")
    }
    n = settings.retrieval.candidates
    cfg = settings.retrieval
    if args.tune:
        qrels = load_qrels(args.data / "qrels" / "train.tsv")
        dense, lexical = run_lists(assistant, {q: queries[q] for q in qrels}, n)
        results = []
        for k, wd in itertools.product(
            [1, 2, 5, 10, 20, 40, 60, 100], [0.5, 0.7, 0.85, 1.0, 1.2, 1.5, 2.0]
        ):
            results.append((score(hybrid_runs(dense, lexical, k, wd, 1.0), qrels), k, wd))
        print(
            f"train queries: {len(qrels)}; dense {score(dense, qrels)[0]:.3f}, "
            f"bm25 {score(lexical, qrels)[0]:.3f}"
        )
        for (ndcg, recall), k, wd in sorted(results, reverse=True)[:8]:
            print(f"  rrf_k={k:<4} dense_weight={wd:<5} nDCG@10={ndcg:.4f} R@100={recall:.4f}")
        return 0

    qrels = load_qrels(args.data / "qrels" / "test.tsv")
    test_queries = {q: queries[q] for q in qrels}
    dense, lexical = run_lists(assistant, test_queries, n)
    hybrid = hybrid_runs(dense, lexical, cfg.rrf_k, cfg.dense_weight, cfg.lexical_weight)
    plain_rrf = hybrid_runs(dense, lexical, 60, 1.0, 1.0)

    latencies = []
    for text in test_queries.values():
        start = time.perf_counter()
        assistant.search(text, k=10)
        latencies.append((time.perf_counter() - start) * 1000)
    latencies.sort()
    p50 = latencies[len(latencies) // 2]
    p95 = latencies[int(len(latencies) * 0.95) - 1]

    print(
        f"\nSciFact test: {len(qrels)} queries, {assistant.catalog.counts()['papers']} abstracts,"
        f" embedder {assistant.embedder.name}, chunker {assistant.info()['chunker']}"
    )
    print("| retriever | nDCG@10 | recall@100 |")
    print("|---|---|---|")
    for name, runs in [
        ("dense (MiniLM, chunks, max-pooled)", dense),
        ("BM25 (bm25s, Snowball stemmer)", lexical),
        ("hybrid, plain RRF (k=60, 1:1)", plain_rrf),
        (f"hybrid, default (RRF k={cfg.rrf_k:g}, dense weight {cfg.dense_weight:g})", hybrid),
    ]:
        ndcg, recall = score(runs, qrels)
        print(f"| {name} | {ndcg:.3f} | {recall:.3f} |")
    if rate:
        print(f"\ningest throughput: {rate:.1f} abstracts/s")
    print(f"hybrid search latency (k=10, end to end): p50 {p50:.0f} ms, p95 {p95:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
