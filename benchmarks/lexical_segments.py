"""Incremental lexical index on SciFact: quality and cost of a base segment plus a delta.

Writes SciFact's 5,183 abstracts into a throw-away catalog (no vectors: lexical only), a share of
them before the base is built and the rest after, so the rest is scored from the delta. Prints
nDCG@10 on the 300 test queries for each split beside one full bm25s index over everything, the
time a query takes, and what an ingest of the delta costs against rebuilding the index.

    python benchmarks/lexical_segments.py
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from scifact_retrieval import DEFAULT_DATA, load_papers, load_qrels

from assistant.eval.retrieval import ndcg_at_k
from assistant.ingest.corpus import Paper
from assistant.store import segments
from assistant.store.catalog import Catalog
from assistant.store.segments import SegmentedLexical
from assistant.text.terms import analyze


def write(catalog: Catalog, papers: list[Paper]) -> float:
    """Journal papers as ingest does (pending with their terms, then ready); seconds taken."""
    start = time.perf_counter()
    for at in range(0, len(papers), 64):
        batch = papers[at : at + 64]
        terms = analyze([p.text_for_index for p in batch])
        catalog.mark_pending(
            [(p, []) for p in batch],
            {p.paper_id: " ".join(t) for p, t in zip(batch, terms, strict=True)},
        )
        catalog.set_state([p.paper_id for p in batch], "ready")
    return time.perf_counter() - start


def evaluate(
    lexical: SegmentedLexical, queries: dict[str, str], qrels: dict[str, dict[str, float]]
) -> tuple[float, float, float]:
    """nDCG@10, p50 and p95 query milliseconds."""
    ndcg, times = [], []
    for qid, text in queries.items():
        start = time.perf_counter()
        ranked = [p for p, _ in lexical.search(text, 100, None)]
        times.append((time.perf_counter() - start) * 1000)
        ndcg.append(ndcg_at_k(ranked, qrels[qid], 10))
    times.sort()
    return statistics.mean(ndcg), times[len(times) // 2], times[int(len(times) * 0.95) - 1]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    papers = list(load_papers(args.data))
    qrels = load_qrels(args.data / "qrels" / "test.tsv")
    queries = {
        (r := json.loads(line))["_id"]: r["text"]
        for line in (args.data / "queries.jsonl").open(encoding="utf-8")
        if json.loads(line)["_id"] in qrels
    }
    segments.COMPACT_MIN = 10**9  # keep the delta as it is: that is what is measured
    print(f"SciFact test: {len(queries)} queries over {len(papers)} abstracts")
    print("| in the base | in the delta | nDCG@10 | query p50 | query p95 | ingest of the delta |")
    print("|---|---|---|---|---|---|")
    for share in (1.0, 0.9, 0.5):
        with tempfile.TemporaryDirectory() as tmp:
            catalog = Catalog(Path(tmp) / "catalog.sqlite3")
            cut = int(len(papers) * share)
            write(catalog, papers[:cut])
            lexical = SegmentedLexical(Path(tmp) / "bm25", catalog)
            lexical.rebuild()
            seconds = write(catalog, papers[cut:])
            start = time.perf_counter()
            lexical.current()  # what the next search pays to read the delta
            seconds += time.perf_counter() - start
            ndcg, p50, p95 = evaluate(lexical, queries, qrels)
            start = time.perf_counter()
            lexical.rebuild()
            rebuild = time.perf_counter() - start
            catalog.close()
        delta = len(papers) - cut
        cost = f"{seconds:.2f} s (a full rebuild: {rebuild:.2f} s)" if delta else "-"
        print(f"| {cut} | {delta} | {ndcg:.3f} | {p50:.1f} ms | {p95:.1f} ms | {cost} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
