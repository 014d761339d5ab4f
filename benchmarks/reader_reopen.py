"""What a long-lived reader (`chat`, the API) pays to see another process's ingest.

A read-only handle holds Chroma's copy of the vector index as it was when opened, so the
reader opens a fresh one whenever the catalog's generation has moved (``LocalStore.collection``).
This builds a store of N papers (the shipped abstracts with their words shuffled, hashing
embedder, so the build is minutes, not hours), keeps one reader open, and in each round lets
another process ingest 2 new papers, then times the reader's first filtered search (it opens
the index again) against a search with nothing changed, with the process's resident memory
(an old copy that were never freed would add the index's size each round).

``--race N`` instead counts false alarms: two threads run filtered searches, each with a new
``Assistant`` as a `search` command has, while another process ingests N papers one per write
into a store of the shipped abstracts; a search that meets vectors newer than its copy of the
index must not fail. Run it with ``PYTHONPATH`` set to an older checkout to compare.

    python benchmarks/reader_reopen.py --papers 20000 --rounds 8
    python benchmarks/reader_reopen.py --race 300
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from assistant import Assistant, load_settings
from assistant.embedding.embedders import HashingEmbedder
from assistant.ingest.corpus import load_corpus

ROOT = Path(__file__).resolve().parent.parent
QUERY = "diffusion sampling with fewer function evaluations"


def rss_mb() -> int:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") // 2**20


def command(store: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "assistant", *args, "--store", str(store)]


def hashing_env(papers_per_write: int = 64) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSISTANT_")}
    env["ASSISTANT_EMBEDDING__PROVIDER"] = "hashing"
    env["ASSISTANT_EMBEDDING__PAPERS_PER_WRITE"] = str(papers_per_write)
    return env


def ingest(store: Path, source: Path) -> None:
    subprocess.run(
        command(store, "ingest", str(source)), env=hashing_env(), check=True, capture_output=True
    )


def write_papers(path: Path, n: int, tag: str) -> Path:
    """n papers: shipped abstracts with their words shuffled, years 2021-2025."""
    papers = load_corpus([ROOT / "data" / "neurips2025"]).papers
    rng = random.Random(tag)
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            words = papers[i % len(papers)].abstract.split()
            rng.shuffle(words)
            row = {"title": f"{tag} {i}", "url": f"https://example.org/{tag}/{i}"}
            row |= {"year": 2021 + i % 5, "abstract": " ".join(words)}
            out.write(json.dumps(row) + "\n")
    return path


def timed_search(reader: Assistant) -> float:
    started = time.perf_counter()
    reader.search(QUERY, k=5, filters={"year": 2023})
    return time.perf_counter() - started


def race(papers: int) -> None:
    """Filtered searches beside an ingest in one-paper writes: how many fail."""
    with tempfile.TemporaryDirectory(prefix="reader-race-") as tmp:
        store = Path(tmp) / "store"
        ingest(store, ROOT / "data" / "neurips2025")
        source = write_papers(Path(tmp) / "new.jsonl", papers, "race")
        writer = subprocess.Popen(
            command(store, "ingest", str(source)),
            env=hashing_env(papers_per_write=1),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        settings = load_settings(store={"path": store}, embedding={"provider": "hashing"})
        failures: list[str] = []
        runs = [0]

        def search_while_it_writes() -> None:
            while writer.poll() is None:
                with Assistant(settings, embedder=HashingEmbedder()) as reader:
                    try:
                        timed_search(reader)
                    except Exception as exc:  # what a user would be shown
                        failures.append(f"{type(exc).__name__}: {str(exc)[:120]}")
                runs[0] += 1

        loops = [threading.Thread(target=search_while_it_writes) for _ in range(2)]
        for loop in loops:
            loop.start()
        for loop in loops:
            loop.join()
        print(f"ingest of {papers:,} papers, one per write: exit {writer.wait()}")
        print(f"{len(failures)} of {runs[0]} filtered searches failed")
        for said in failures[:3]:
            print("  ", said)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--race", type=int, default=0, metavar="N")
    args = parser.parse_args()
    if args.race:
        race(args.race)
        return
    with tempfile.TemporaryDirectory(prefix="reader-reopen-") as tmp:
        work = Path(tmp)
        store = work / "store"
        started = time.perf_counter()
        ingest(store, write_papers(work / "base.jsonl", args.papers, "base"))
        print(f"built {args.papers:,} papers in {time.perf_counter() - started:.0f} s")
        settings = load_settings(store={"path": store}, embedding={"provider": "hashing"})
        with Assistant(settings, embedder=HashingEmbedder()) as reader:
            timed_search(reader)
            vectors = reader.store.chunks.count()
            print(f"{vectors:,} chunk vectors; reader resident {rss_mb()} MB after a search")
            print("round | after another ingest | nothing changed | resident MB")
            after, unchanged = [], []
            for i in range(args.rounds):
                ingest(store, write_papers(work / f"new{i}.jsonl", 2, f"new{i}"))
                after.append(timed_search(reader))
                unchanged.append(timed_search(reader))
                print(f"{i:5d} | {after[-1]:18.2f} s | {unchanged[-1]:13.2f} s | {rss_mb()}")
            print(
                f"median: {statistics.median(after):.2f} s after an ingest, "
                f"{statistics.median(unchanged):.2f} s with nothing changed"
            )


if __name__ == "__main__":
    main()
