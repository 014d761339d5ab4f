"""Query embedding on the shipped MiniLM: session load time and per-query latency at each of
onnxruntime's graph optimization levels, side by side in one process, with the largest
difference of the vectors from the unrewritten graph's.

    python benchmarks/query_embedding.py --queries ../shared/data/scifact/queries.jsonl

Levels are interleaved per query (each query runs once on every session, in rotating order),
so machine noise falls on all of them alike.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from assistant.embedding.embedders import MiniLMEmbedder

FALLBACK = [
    "KV cache eviction for long-context inference",
    "Do mixture-of-experts models route tokens sparsely?",
    "diffusion sampling speed",
    "protein structure prediction",
]


def session(level: str, threads: int) -> tuple[MiniLMEmbedder, float]:
    """An embedder whose session runs at ``level``, and the seconds its session took to load."""
    import onnxruntime as ort

    embedder = MiniLMEmbedder(threads=threads or None)
    embedder._load()  # the tokenizer; the session is replaced below
    options = ort.SessionOptions()
    options.log_severity_level = 3
    if threads:
        options.intra_op_num_threads = threads
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    model, _ = embedder.model_files()
    start = time.perf_counter()
    embedder._session = ort.InferenceSession(
        str(model), options, providers=["CPUExecutionProvider"]
    )
    return embedder, time.perf_counter() - start


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--queries", type=Path, help="JSONL with a 'text' field (BEIR queries)")
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--threads", type=int, default=0, help="0: onnxruntime's default")
    args = parser.parse_args()
    queries = FALLBACK * 25
    if args.queries:
        with args.queries.open(encoding="utf-8") as lines:
            queries = [json.loads(line)["text"] for line in lines]
    queries = queries[: args.limit]
    levels = ["ORT_DISABLE_ALL", "ORT_ENABLE_BASIC", "ORT_ENABLE_EXTENDED", "ORT_ENABLE_ALL"]
    embedders = {level: session(level, args.threads) for level in levels}
    for embedder, _ in embedders.values():  # warm
        for query in queries[:5]:
            embedder.embed_query(query)
    spent: dict[str, list[float]] = {level: [] for level in levels}
    vectors: dict[str, list[np.ndarray]] = {level: [] for level in levels}
    for i, query in enumerate(queries):
        for level in levels[i % len(levels) :] + levels[: i % len(levels)]:
            start = time.perf_counter()
            vector = embedders[level][0].embed_query(query)
            spent[level].append((time.perf_counter() - start) * 1000)
            vectors[level].append(vector)
    reference = np.stack(vectors[levels[0]])
    print(f"{len(queries)} queries, one at a time, threads={args.threads or 'default'}")
    print("| graph optimization | load s | p50 ms | p95 ms | max diff to unrewritten |")
    print("|---|---|---|---|---|")
    for level in levels:
        diff = float(np.abs(np.stack(vectors[level]) - reference).max())
        times = spent[level]
        load = embedders[level][1]
        print(
            f"| {level} | {load:.2f} | {percentile(times, 0.5):.1f} | "
            f"{percentile(times, 0.95):.1f} | {diff:.1e} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
