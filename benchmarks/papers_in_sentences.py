"""How many of a filter's best sentences it takes to hold 100 papers (``filtered.PER_PAPER``).

A search keeps each paper's best sentence for 100 papers; under a filter keeping a large share,
the store asks an unfiltered search for enough sentences that the kept papers' likely hold 100
papers. This prints, for SciFact test claims and a random share of the papers kept, how many of
the kept papers' best sentences come before the hundredth paper. It reads a store that
``scifact_retrieval.py`` built (real MiniLM vectors; ~13 min to build here).

    python benchmarks/scifact_retrieval.py          # once: builds benchmarks/.cache/scifact-store
    python benchmarks/papers_in_sentences.py --shares 0.1,0.3,1
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "scifact"


def sentences_for(found: list[str], kept: set[str], papers: int) -> int | None:
    """How many of the kept papers' sentences (paper ids, best first) hold ``papers`` papers."""
    seen: set[str] = set()
    count = 0
    for paper in found:
        if paper in kept:
            count += 1
            seen.add(paper)
            if len(seen) == papers:
                return count
    return None


def main() -> int:
    from assistant import Assistant, load_settings
    from assistant.store import Filter

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--store", type=Path, default=HERE / ".cache" / "scifact-store")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--shares", default="0.1,0.3,1")
    parser.add_argument("--papers", type=int, default=100)
    args = parser.parse_args()
    if not (args.store / "catalog.sqlite3").exists():
        print(f"no store at {args.store}: run benchmarks/scifact_retrieval.py", file=sys.stderr)
        return 2
    assistant = Assistant(load_settings(store={"path": args.store}))
    store = assistant.store
    lines = (args.data / "queries.jsonl").read_text().splitlines()
    queries = [json.loads(line)["text"] for line in lines][: args.queries]
    every = sorted(store.matching(Filter()))  # no condition: every ready paper
    rng = random.Random(0)
    print(f"{len(every)} papers; sentences of the kept papers that hold {args.papers} papers:")
    for share in (float(s) for s in args.shares.split(",")):
        counts = []
        for query in queries:
            kept = set(rng.sample(every, round(len(every) * share)))
            vector = assistant.embedder.embed_query(query)
            found = store.nearest("sentences", vector, 10_000, Filter())
            counts.append(sentences_for([m.paper_id for m in found], kept, args.papers))
        held = [c for c in counts if c is not None]
        over = sum(c > 3 * args.papers for c in held)
        print(
            f"  a share of {share:g}: median {np.median(held):.0f}, 90th percentile "
            f"{np.percentile(held, 90):.0f}, most {max(held)}; over {3 * args.papers}: "
            f"{over} of {len(counts)}; never: {counts.count(None)}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
