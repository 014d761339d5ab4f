"""Warm search latency, end to end and by stage, on an existing store.

Runs each query through ``Assistant.search`` (k=10) after a warm-up, and times the stages by
wrapping the store's and the embedder's methods: query embedding, the chunk and sentence vector
queries, the lexical query, and the catalog reads. Prints p50/p95 of each.

    python benchmarks/search_latency.py --store benchmarks/.cache/scifact-store \
        --queries ../shared/data/scifact/queries.jsonl
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from assistant import Assistant, load_settings

SHIPPED_QUERIES = [
    "KV cache eviction",
    "diffusion sampling speed",
    "multi-agent reinforcement learning",
    "protein structure prediction",
    "graph neural networks for molecules",
]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, int(len(ordered) * share + 0.5) - 1))]


def timed(stage: str, spent: dict[str, float], method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            spent[stage] += (time.perf_counter() - start) * 1000

    return wrapper


def instrument(assistant: Assistant, spent: dict[str, float]) -> None:
    """Time the stages of a search by wrapping the instances' methods (the code is unchanged)."""
    store, embedder = assistant.store, assistant.embedder
    embedder.embed_query = timed("embed query", spent, embedder.embed_query)  # type: ignore[method-assign]
    original = store.nearest

    def nearest(kind: str, *args: Any, **kwargs: Any) -> Any:
        return timed(f"{kind} query", spent, original)(kind, *args, **kwargs)

    store.nearest = nearest  # type: ignore[method-assign]
    store.lexical = timed("lexical", spent, store.lexical)  # type: ignore[method-assign]
    store.papers = timed("catalog", spent, store.papers)  # type: ignore[method-assign]
    store.chunk_texts = timed("catalog", spent, store.chunk_texts)  # type: ignore[method-assign]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--queries", type=Path, help="JSONL with a 'text' field (BEIR queries)")
    parser.add_argument("--limit", type=int, default=300)
    args = parser.parse_args()
    queries = SHIPPED_QUERIES
    if args.queries:
        lines = args.queries.open(encoding="utf-8")
        queries = [json.loads(line)["text"] for line in lines][: args.limit]
    with Assistant(load_settings(store={"path": args.store})) as assistant:
        for query in queries[:5]:  # warm: model loaded, collections open, caches filled
            assistant.search(query, k=10)
        spent: dict[str, float] = defaultdict(float)
        instrument(assistant, spent)
        stages: dict[str, list[float]] = defaultdict(list)
        for query in queries:
            spent.clear()
            start = time.perf_counter()
            assistant.search(query, k=10)
            stages["end to end"].append((time.perf_counter() - start) * 1000)
            for stage, ms in spent.items():
                stages[stage].append(ms)
        papers = assistant.store.counts()["papers"]
    print(f"{len(queries)} queries, k=10, warm, over {papers} papers")
    print("| stage | p50 ms | p95 ms |")
    print("|---|---|---|")
    for stage, values in sorted(stages.items(), key=lambda kv: -percentile(kv[1], 0.5)):
        print(f"| {stage} | {percentile(values, 0.5):.1f} | {percentile(values, 0.95):.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
