"""Filtered search against an exact one: how often its top 10 is that of every vector scored.

Searches a store that ``scaling.py --keep`` left (its synthetic abstracts, its queries, its year
and author filters) twice per query: as the product does, and with every allowed vector read and
scored exactly (``filtered.EXACT_VECTORS`` and ``SENTENCE_PAPERS`` raised past the store's size,
the over-fetch switched off), ~5 s per query at 100,000 abstracts. Prints, per filter, how many
queries have the same top 10 and the share of the exact top 10s found; ``--against CHECKOUT``
has that checkout's code search too (in a child process), for the same figures beside.

    python benchmarks/filtered_exact.py --size 100000 --queries 60 --against ../main
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from scaling import CACHE, FILTERS


def top10s(store: Path, queries: list[str], name: str, exact: bool) -> list[list[str]]:
    from assistant import Assistant, load_settings
    from assistant.store import filtered

    limits = ("EXACT_VECTORS", "SENTENCE_PAPERS", "OVERFETCH_MOST")
    saved = {limit: getattr(filtered, limit) for limit in limits if hasattr(filtered, limit)}
    if exact:
        for limit in saved:
            setattr(filtered, limit, 0 if limit == "OVERFETCH_MOST" else 10**9)
    try:
        with Assistant(load_settings(store={"path": store})) as assistant:
            return [
                [h.paper_id for h in assistant.search(q, k=10, filters=FILTERS[name](i))]
                for i, q in enumerate(queries)
            ]
    finally:
        for limit, value in saved.items():
            setattr(filtered, limit, value)


def theirs(checkout: Path, store: Path, queries: int, name: str) -> list[list[str]]:
    """Another checkout's product top 10s, searched in a child process importing its code."""
    env = {**os.environ, "PYTHONPATH": str(checkout.resolve())}
    argv = [sys.executable, __file__, "--child", name, "--store", str(store)]
    argv += ["--queries", str(queries)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"error: {checkout}'s search failed:\n{done.stderr}")
    return list(json.loads(done.stdout))


def same_as(product: list[list[str]], exact: list[list[str]]) -> str:
    same = sum(p == e for p, e in zip(product, exact, strict=True))
    found = sum(len(set(p) & set(e)) for p, e in zip(product, exact, strict=True))
    share = found / max(1, sum(len(e) for e in exact))
    return f"{same}/{len(exact)} the same top 10 as exact, {share:.1%} of its papers"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--work", type=Path, default=CACHE / "scaling")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--against", type=Path, help="another checkout, searched too")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--store", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    store = args.store or args.work / f"store-{args.size}"
    if not store.exists():
        sys.exit(f"error: no store at {store}; run scaling.py --keep first")
    queries = json.loads((store.parent / "queries.json").read_text())[: args.queries]
    if args.child:
        print(json.dumps(top10s(store, queries, args.child, exact=False)))
        return 0
    for name in FILTERS:
        exact = top10s(store, queries, name, exact=True)
        print(f"{name} filter, this code: {same_as(top10s(store, queries, name, False), exact)}")
        if args.against:
            them = theirs(args.against, store, args.queries, name)
            print(f"{name} filter, {args.against}: {same_as(them, exact)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
