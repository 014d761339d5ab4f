"""Ingest throughput on this machine: abstracts/s with and without sentence vectors, side by side.

Embeds the first N SciFact abstracts into throw-away stores, one run per setting, in one
process, so the ratio holds even when the machine is noisy.

    python benchmarks/ingest_throughput.py --n 300
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
import time
from pathlib import Path

from scifact_retrieval import DEFAULT_DATA, load_papers

from assistant import Assistant, load_settings


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--n", type=int, default=300)
    args = parser.parse_args()
    papers = list(itertools.islice(load_papers(args.data), args.n))
    print(f"{len(papers)} SciFact abstracts")
    for sentences in (False, True):
        with tempfile.TemporaryDirectory() as tmp:
            settings = load_settings(
                store={"path": Path(tmp)}, retrieval={"sentence_vectors": sentences}
            )
            with Assistant(settings) as assistant:
                assistant.embedder.embed(["warm up"])
                start = time.perf_counter()
                report = assistant.ingest_papers(papers)
                elapsed = time.perf_counter() - start
            print(
                f"  sentence_vectors={str(sentences):<5}  {report.chunks_written} chunks  "
                f"{elapsed:6.1f} s  {len(papers) / elapsed:5.1f} abstracts/s"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
