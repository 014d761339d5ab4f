"""Scaling: stores of 1k, 10k and 100k abstracts built through the product's ingest, measured.

For each size, one process builds a fresh store (``Assistant.ingest_papers``: the journal,
Chroma chunk and sentence collections, BM25) and another searches it with ~100 SciFact claims,
as a user's process would. Printed: ingest seconds and abstracts/s (store side: embedding
excluded), search p50/p95 warm, with a year filter (~10% of the papers) and with an author
filter (0.1%), each query with another year or author; the first (cold) search, peak RSS of
each process, disk; plus where ingest and query time go. A PNG plots how each grows.
``--against CHECKOUT`` has that checkout's code search the same stores too, alternating with
this code's (two runs each), and prints the two side by side; ``--keep`` then ``--reuse``
searches stores already built.

By default 1k and 10k are built with the default settings and 1k, 10k and 100k with chunk
vectors only (``ASSISTANT_RETRIEVAL__SENTENCE_VECTORS=false``): 100k with sentence vectors is
1.24M vectors in Chroma, about an hour on a 2-core machine (``--sizes 1000,10000,100000`` if
you have it); the default set takes about 25 minutes there.

The abstracts are SYNTHETIC (see ``synthetic_corpus``): SciFact sentences recombined, with the
real MiniLM vectors of those sentences, because embedding 10^5 abstracts here takes hours. The
pool of real vectors is embedded once (~10 minutes on a busy 2-core machine) and cached in
benchmarks/.cache/; the MiniLM rate measured then is printed beside the table. Queries are
embedded by MiniLM for real.

    python benchmarks/scaling.py                          # writes docs/scaling.png
    python benchmarks/scaling.py --sizes 1000,10000 --chunks-only-sizes '' --plot /tmp/s.png
    python benchmarks/scaling.py --saved                  # the last measurements, again
    python benchmarks/scaling.py --keep --reuse --against ../main   # old code vs this code

The plot needs matplotlib: pip install -e '.[bench]'.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scifact_retrieval import DEFAULT_DATA, load_papers, load_qrels
from synthetic_corpus import RARE_AUTHORS, YEARS, Pool, PoolEmbedder, build_pool, synthetic_papers

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
POOL = CACHE / "scaling-pool.npz"
# Filtered searches: the i-th query asks for papers of one year (~10% of them) or by one rare
# author (0.1%), a different one in turn, so that nothing a store keeps of one filter serves
# the next query.
FILTERS = {
    "year": lambda i: {"year": YEARS[i % len(YEARS)]},
    "author": lambda i: {"author": RARE_AUTHORS[i % len(RARE_AUTHORS)]},
}


# -- measuring inside a child process ---------------------------------------------------------
def clock(owner: Any, name: str, times: dict[str, float], bucket: Callable[..., str]) -> None:
    """Wrap ``owner.name`` so the seconds spent in it add to ``times[bucket(*args)]``."""
    original = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            times[bucket(*args, **kwargs)] += time.perf_counter() - start

    setattr(owner, name, timed)


def peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def build(n: int, store: Path) -> dict[str, Any]:
    from assistant import Assistant, load_settings
    from assistant.embedding.embedders import MiniLMEmbedder
    from assistant.ingest.chunking import Chunker
    from assistant.store import local
    from assistant.store.catalog import Catalog
    from assistant.store.chroma import ChromaVectors
    from assistant.store.segments import SegmentedLexical

    pool = Pool.load(POOL)
    papers = list(synthetic_papers(pool, n))
    before = peak_rss_mb()
    times: dict[str, float] = defaultdict(float)

    def vector_kind(_self: Any, ids: list[str], *_: Any) -> str:
        return "Chroma: sentence upserts" if ids and ":s" in ids[0] else "Chroma: chunk upserts"

    clock(Chunker, "split", times, lambda *_: "chunking")
    clock(local, "analyze", times, lambda *_: "analysing terms")
    clock(Catalog, "mark_pending", times, lambda *_: "catalog")
    clock(Catalog, "set_state", times, lambda *_: "catalog")
    clock(ChromaVectors, "upsert", times, vector_kind)
    clock(SegmentedLexical, "compact", times, lambda *_: "BM25 base")

    settings = load_settings(store={"path": store})
    embedder = PoolEmbedder(pool, MiniLMEmbedder(max_tokens=settings.embedding.max_tokens))

    step = max(n // 10, settings.embedding.papers_per_write)
    started = time.perf_counter()

    def progress(done: int, total: int) -> None:
        if done % step < settings.embedding.papers_per_write:
            seconds = time.perf_counter() - started
            print(f"  {done}/{total} papers, {seconds:.0f} s", file=sys.stderr, flush=True)

    with Assistant(settings, embedder=embedder) as assistant:
        start = time.perf_counter()
        report = assistant.ingest_papers(papers, progress=progress)
        wall = time.perf_counter() - start
        sizes = assistant.store.sizes()
    return {
        "papers": report.added,
        "chunks": sizes["vectors"],
        "sentences": sizes["sentence_vectors"],
        "wall": wall,
        "embedding": embedder.seconds,
        "computed": embedder.computed,
        "parts": dict(times),
        "rss_before_ingest": before,
    }


def search(store: Path, queries: list[str]) -> dict[str, Any]:
    from assistant import Assistant, load_settings
    from assistant.embedding.embedders import Embedder
    from assistant.store.local import LocalStore

    times: dict[str, float] = defaultdict(float)
    clock(Embedder, "embed_query", times, lambda *_: "query embedding")
    clock(LocalStore, "nearest", times, lambda _self, kind, *_, **__: f"Chroma: {kind}")
    clock(LocalStore, "lexical", times, lambda *_: "BM25")
    clock(LocalStore, "papers", times, lambda *_: "catalog")
    clock(LocalStore, "chunk_texts", times, lambda *_: "catalog")

    found: dict[str, Any] = defaultdict(list)

    def timed(query: str, name: str = "warm", filters: dict[str, Any] | None = None) -> float:
        start = time.perf_counter()
        hits = assistant.search(query, k=10, filters=filters)
        seconds = time.perf_counter() - start
        found[f"{name}_top"].append([h.paper_id for h in hits])
        return seconds * 1000

    with Assistant(load_settings(store={"path": store})) as assistant:
        found["cold"] = timed(queries[0], "cold")
        times.clear()
        found["warm"] = [timed(q) for q in queries]
        found["parts"] = {k: v * 1000 / len(queries) for k, v in times.items()}
        for name, filters in FILTERS.items():
            times.clear()
            found[name] = [timed(q, name, filters(i)) for i, q in enumerate(queries)]
            found[f"{name}_parts"] = {k: v * 1000 / len(queries) for k, v in times.items()}
    return found


# -- the parent: one child per step, its own peak RSS -----------------------------------------
def run_child(
    args: list[str], sentences: bool, code: Path | None = None
) -> tuple[dict[str, Any], float]:
    """The child's JSON result and its peak RSS in MB (``wait4``: that child alone). ``code``:
    a checkout whose ``assistant`` package the child imports instead of this one's."""
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", *args]
    env = {**os.environ, "ASSISTANT_RETRIEVAL__SENTENCE_VECTORS": str(sentences).lower()}
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(code), env.get("PYTHONPATH")]))
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode})")
    return json.loads(out.splitlines()[-1]), usage.ru_maxrss / 1024


def disk_mb(folder: Path) -> dict[str, float]:
    parts: dict[str, float] = defaultdict(float)
    for path in folder.rglob("*"):
        if path.is_file():
            parts[path.relative_to(folder).parts[0]] += path.stat().st_size / 2**20
    return dict(parts)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def measure(
    n: int, sentences: bool, store: Path, query_file: Path, against: Path | None, reuse: bool
) -> dict[str, Any]:
    """One size, in one setting: the product's default (chunk and sentence vectors) or
    ``ASSISTANT_RETRIEVAL__SENTENCE_VECTORS=false`` (chunk vectors only). ``against``: another
    checkout's code searches the same store too, alternating with this one's. ``reuse``: a
    store this script built and kept (``--keep``) is searched again, not built anew."""
    built_file = store.with_name(f"build-{store.name.removeprefix('store-')}.json")
    if reuse and store.exists() and built_file.exists():
        built, build_rss = json.loads(built_file.read_text())
    else:
        if store.exists():
            shutil.rmtree(store)
        print(f"{label(n, sentences)}: building {store}", file=sys.stderr, flush=True)
        built, build_rss = run_child(["build", str(n), str(store)], sentences)
        built_file.write_text(json.dumps([built, build_rss]))
    print(f"{label(n, sentences)}: searching", file=sys.stderr, flush=True)
    codes: list[tuple[str, Path | None]] = [("", None)]
    if against is not None:
        codes = [("", None), ("old_", against), ("old_", against), ("", None)]
    runs: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for prefix, code in codes:
        found, search_rss = run_child(["search", "0", str(store), str(query_file)], sentences, code)
        runs[prefix].append({**found, "rss": search_rss})
    store_seconds = built["wall"] - built["embedding"]
    row = {
        "n": n,
        "sentence_vectors": sentences,
        **built,
        "store_seconds": store_seconds,
        "rate": n / store_seconds,
        "ingest_rss": build_rss,
        "disk": disk_mb(store),
    }
    for prefix, found in runs.items():
        row.update(searched(found, prefix))
    if against is not None:  # the same top 10, in the same order, from both codes' first runs
        for name in ("warm", *FILTERS):
            pairs = zip(runs[""][0][f"{name}_top"], runs["old_"][0][f"{name}_top"], strict=True)
            row[f"{name}_same_top"] = sum(a == b for a, b in pairs) / len(queries_of(query_file))
    return row


def queries_of(query_file: Path) -> list[str]:
    return list(json.loads(query_file.read_text()))


def searched(runs: list[dict[str, Any]], prefix: str) -> dict[str, Any]:
    """Percentiles over every run of one code's searches (their latencies pooled)."""
    row: dict[str, Any] = {
        f"{prefix}search_rss": max(r["rss"] for r in runs),
        f"{prefix}cold": min(r["cold"] for r in runs),
        f"{prefix}query_parts": runs[0]["parts"],
    }
    for key, name in [("warm", ""), *((f, f"{f}_") for f in FILTERS)]:
        values = [v for r in runs for v in r[key]]
        row[f"{prefix}{name}p50"] = percentile(values, 0.5)
        row[f"{prefix}{name}p95"] = percentile(values, 0.95)
    for f in FILTERS:
        row[f"{prefix}{f}_query_parts"] = runs[0][f"{f}_parts"]
    return row


def label(n: int, sentences: bool) -> str:
    return f"{n:,}" if sentences else f"{n:,} chunks only"


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| abstracts | vectors (chunks + sentences) | ingest s | abstracts/s | search p50 / p95"
        " | year filter p50 / p95 | author filter p50 / p95 | first search | peak RSS ingest"
        " | peak RSS search | disk |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {label(r['n'], r['sentence_vectors'])} | {r['chunks']:,} + {r['sentences']:,}"
            f" | {r['store_seconds']:.0f}"
            f" | {r['rate']:.0f} | {r['p50']:.0f} / {r['p95']:.0f} ms"
            f" | {r['year_p50']:.0f} / {r['year_p95']:.0f} ms"
            f" | {r['author_p50']:.0f} / {r['author_p95']:.0f} ms | {r['cold'] / 1000:.1f} s"
            f" | {r['ingest_rss']:,.0f} MB | {r['search_rss']:,.0f} MB"
            f" | {sum(r['disk'].values()):,.0f} MB |"
        )
    return "\n".join(lines)


FIRST = "warm_"  # the unfiltered searches' key


def against_table(rows: list[dict[str, Any]], against: str) -> str:
    """This code's searches beside another checkout's, on the same stores in the same run."""
    lines = [
        f"| abstracts | search | {against}: p50 / p95 | this code: p50 / p95 | p95 ratio"
        " | same top 10 |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "old_p50" not in r:
            continue
        for name in ("", *(f"{f}_" for f in FILTERS)):
            what = f"{name[:-1]} filter" if name else "no filter"
            old, new = (
                (r[f"old_{name}p50"], r[f"old_{name}p95"]),
                (r[f"{name}p50"], r[f"{name}p95"]),
            )
            lines.append(
                f"| {label(r['n'], r['sentence_vectors'])} | {what}"
                f" | {old[0]:.0f} / {old[1]:.0f} ms | {new[0]:.0f} / {new[1]:.0f} ms"
                f" | {old[1] / new[1]:.1f}× | {r.get(f'{name or FIRST}same_top', 0):.0%} |"
            )
    return "\n".join(lines)


def breakdown(rows: list[dict[str, Any]]) -> str:
    """Where ingest seconds and query milliseconds go, per size."""
    sizes = " | ".join(label(r["n"], r["sentence_vectors"]) for r in rows)
    lines = [f"| part | {sizes} |", "|---" * (len(rows) + 1) + "|"]
    ingest = sorted({k for r in rows for k in r["parts"]})
    for key in ingest:
        cells = " | ".join(f"{r['parts'].get(key, 0):.1f} s" for r in rows)
        lines.append(f"| ingest: {key} | {cells} |")
    cells = " | ".join(f"{r['store_seconds'] - sum(r['parts'].values()):.1f} s" for r in rows)
    lines.append(f"| ingest: the rest (planning, journal reads, Python) | {cells} |")
    cells = " | ".join(f"({r['embedding']:.1f} s)" for r in rows)
    lines.append(f"| ingest: vector look-up, excluded above | {cells} |")
    queries = [("query_parts", "query"), *((f"{f}_query_parts", f"{f} query") for f in FILTERS)]
    for parts, name in queries:
        for key in sorted({k for r in rows for k in r.get(parts, {})}):
            cells = " | ".join(
                f"{r[parts][key]:.1f} ms" if key in r.get(parts, {}) else "-" for r in rows
            )
            lines.append(f"| {name} (mean): {key} | {cells} |")
    for part in sorted({k for r in rows for k, mb in r["disk"].items() if mb >= 0.5}):
        cells = " | ".join(f"{r['disk'].get(part, 0):,.0f} MB" for r in rows)
        lines.append(f"| disk: {part} | {cells} |")
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    try:
        import matplotlib
    except ImportError:
        print("no plot: matplotlib is missing (pip install -e '.[bench]')", file=sys.stderr)
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    panels: dict[str, list[tuple[str, str]]] = {
        "ingest, store side (s)": [("store_seconds", "")],
        "search (ms)": [
            ("p50", "p50"),
            ("p95", "p95"),
            ("year_p50", "p50, a year"),
            ("author_p50", "p50, an author"),
        ],
        "peak RSS (MB)": [("ingest_rss", "ingest"), ("search_rss", "search")],
        "disk (MB)": [("disk_total", "")],
    }
    fig, axes = plt.subplots(1, len(panels), figsize=(14, 3.6))
    sizes = sorted({r["n"] for r in rows})
    any_default = any(r["sentence_vectors"] for r in rows)  # dashed lines go unlabelled
    for ax, (title, series) in zip(axes, panels.items(), strict=True):
        for (key, name), colour in zip(series, ["C0", "C1", "C2", "C3"], strict=False):
            for sentences, style in ((True, "-"), (False, "--")):
                picked = [r for r in rows if r["sentence_vectors"] == sentences]
                values = [
                    sum(r["disk"].values()) if key == "disk_total" else r[key] for r in picked
                ]
                ax.plot(
                    [r["n"] for r in picked],
                    values,
                    style,
                    color=colour,
                    marker="o",
                    label=name if sentences or not any_default else None,
                )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(sizes, [f"{x:,}" for x in sizes])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("abstracts (synthetic)")
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        if len(series) > 1:
            ax.legend(fontsize=7)
    fig.suptitle(
        "The local store as it grows: default (solid) and chunk vectors only (dashed); "
        "embedding time excluded",
        fontsize=10,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)
    print(f"plot: {path}", file=sys.stderr)


def child(args: list[str]) -> int:
    kind, n, store = args[0], int(args[1]), Path(args[2])
    if kind == "build":
        result = build(n, store)
    else:
        result = search(store, json.loads(Path(args[3]).read_text()))
    print(json.dumps(result))
    return 0


def main() -> int:
    if sys.argv[1:2] == ["--child"]:
        return child(sys.argv[2:])
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument(
        "--sizes", default="1000,10000", help="comma-separated; the default setting"
    )
    parser.add_argument(
        "--chunks-only-sizes",
        default="1000,10000,100000",
        help="comma-separated; with ASSISTANT_RETRIEVAL__SENTENCE_VECTORS=false ('' for none)",
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--pool", type=int, default=1500, help="SciFact abstracts in the pool")
    parser.add_argument("--queries", type=int, default=100, help="SciFact test claims")
    parser.add_argument("--work", type=Path, default=CACHE / "scaling")
    parser.add_argument("--plot", type=Path, default=HERE.parent / "docs" / "scaling.png")
    parser.add_argument("--keep", action="store_true", help="keep the stores after measuring")
    parser.add_argument(
        "--saved", action="store_true", help="report the last measurements of these sizes again"
    )
    parser.add_argument(
        "--reuse", action="store_true", help="search the stores --keep kept instead of building"
    )
    parser.add_argument(
        "--against",
        type=Path,
        help="a checkout of older code: it searches the same stores too, alternating with this",
    )
    args = parser.parse_args()
    if not (args.data / "corpus.jsonl").exists():
        print(f"SciFact not found at {args.data}; pass --data", file=sys.stderr)
        return 2

    if not POOL.exists():
        print(f"embedding the pool: sentences of {args.pool} SciFact abstracts", file=sys.stderr)
        started = time.perf_counter()
        build_pool(list(itertools.islice(load_papers(args.data), args.pool)), POOL)
        print(f"  {time.perf_counter() - started:.0f} s", file=sys.stderr)
    stats = Pool.load(POOL).stats
    queries = [
        json.loads(line)["text"]
        for line in (args.data / "queries.jsonl").open(encoding="utf-8")
        if json.loads(line)["_id"] in load_qrels(args.data / "qrels" / "test.tsv")
    ][: args.queries]
    args.work.mkdir(parents=True, exist_ok=True)
    query_file = args.work / "queries.json"
    query_file.write_text(json.dumps(queries))

    started = time.perf_counter()
    rows = []
    runs = [(int(n), True) for n in args.sizes.split(",") if n]
    runs += [(int(n), False) for n in args.chunks_only_sizes.split(",") if n]
    for n, sentences in runs:
        name = f"{n}" if sentences else f"{n}-chunks-only"
        saved = args.work / f"results-{name}.json"
        if args.saved:
            rows.append(json.loads(saved.read_text()))
            continue
        store = args.work / f"store-{name}"
        rows.append(measure(n, sentences, store, query_file, args.against, args.reuse))
        saved.write_text(json.dumps(rows[-1], indent=1))
        if not args.keep:
            shutil.rmtree(store)

    print(
        "\nSynthetic abstracts (SciFact sentences recombined, real MiniLM vectors); "
        f"{len(queries)} SciFact claims as queries (k=10, end to end, MiniLM query embedding "
        "included)\n"
    )
    print(table(rows))
    print()
    if any("old_p50" in r for r in rows):
        print(against_table(rows, str(args.against or "the other code")))
        print()
    print(breakdown(rows))
    texts_per_abstract = stats["texts"] / stats["abstracts"]  # the title and each sentence
    per_abstract = (
        stats["chunks_per_abstract"] / stats["chunks_per_second"]
        + texts_per_abstract / stats["sentences_per_second"]
    )
    print(
        f"\nMiniLM here (when the pool was embedded): {stats['sentences_per_second']:.0f} "
        f"titles and sentences/s, {stats['chunks_per_second']:.0f} chunks/s; a SciFact abstract"
        f" has {stats['chunks_per_abstract']:.2f} chunks and "
        f"{stats['sentences_per_abstract']:.1f} sentences + a title: {1 / per_abstract:.1f} "
        f"abstracts/s embedded. Chunk vector vs mean of its sentences' vectors: cosine "
        f"{stats['chunk_mean_cosine']:.3f}. Texts MiniLM embedded for real during ingest "
        f"(not in the pool): {', '.join(str(r['computed']) for r in rows)}."
    )
    if not args.saved:
        print(f"benchmark wall time: {time.perf_counter() - started:.0f} s (pool excluded)")
    plot(rows, args.plot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
