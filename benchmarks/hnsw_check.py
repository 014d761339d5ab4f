"""What checking a saved HNSW index's files costs (``assistant.store.hnsw_files``), by size.

A reader checks the header, the file sizes, every link above level 0 and the level-0 links
and vectors of every element of an index of up to 250,000 elements (of a sample of a larger
one) before Chroma loads the index; a writer, and `info --check`, read every element
(``thorough``). This lays out files as Chroma's hnswlib saves them for N
elements (384 dimensions, M=16, levels drawn as hnswlib draws them, links random but valid,
unit vectors), so sizes up to 10^6 take seconds to write rather than hours to build, and times
both checks, best of 3 (the files are in the page cache after the first). For scale: Chroma
reads the whole of data_level0.bin into memory when it loads the index.

    python benchmarks/hnsw_check.py --sizes 10000 100000 1000000
"""

from __future__ import annotations

import argparse
import math
import struct
import tempfile
import time
from pathlib import Path

import numpy as np

from assistant.store import hnsw_files

DIM, M = 384, 16
M0 = 2 * M


def write_index(folder: Path, n: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    levels = np.floor(-np.log(rng.random(n)) / math.log(M)).astype(np.int64)
    top = int(levels.max())
    entry = int(np.flatnonzero(levels == top)[0])
    links0 = 4 * (1 + M0)
    per_element = links0 + 4 * DIM + 8
    header = struct.pack(
        "<iQQQQQQiIQQQdQ",
        1,
        0,
        n,
        n,
        per_element,
        links0 + 4 * DIM,
        links0,
        top,
        entry,
        M,
        M0,
        M,
        1 / math.log(M),
        100,
    )
    (folder / "header.bin").write_bytes(header)
    with (folder / "data_level0.bin").open("wb") as out:
        for start in range(0, n, 65_536):
            rows = min(65_536, n - start)
            block = np.zeros((rows, per_element), dtype=np.uint8)
            words = np.empty((rows, 1 + M0), dtype="<u4")
            words[:, 0] = M0
            words[:, 1:] = rng.integers(0, n, size=(rows, M0))
            block[:, :links0] = words.view(np.uint8)
            vectors = rng.standard_normal((rows, DIM)).astype("<f4")
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            block[:, links0 : links0 + 4 * DIM] = vectors.view(np.uint8)
            block[:, links0 + 4 * DIM :] = np.arange(start + 1, start + rows + 1, dtype="<u8")[
                :, None
            ].view(np.uint8)
            out.write(block.tobytes())
    by_level = [np.flatnonzero(levels >= lv) for lv in range(top + 1)]
    parts = []
    for element in range(n):
        level = int(levels[element])
        parts.append(np.array([4 * level * (1 + M)], dtype="<u4"))
        for lv in range(1, level + 1):
            pool = by_level[lv]
            parts.append(np.concatenate([[M], rng.choice(pool, size=M)]).astype("<u4"))
    np.concatenate(parts).tofile(folder / "link_lists.bin")
    np.ones(n, dtype="<f4").tofile(folder / "length.bin")  # each vector's length before normalising
    (folder / "index_metadata.pickle").write_bytes(b"\0")


def best_of(runs: int, folder: Path, thorough: bool) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        assert hnsw_files.damage(folder, thorough=thorough, unit=True) is None
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    args = parser.parse_args()
    print(f"{'elements':>10} {'data_level0':>12} {'reader check':>13} {'thorough':>10}")
    for n in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            write_index(folder, n)
            size = (folder / "data_level0.bin").stat().st_size / 2**20
            sampled = best_of(3, folder, thorough=False)
            full = best_of(3, folder, thorough=True)
            print(f"{n:>10,} {size:>9,.0f} MB {sampled:>11.3f} s {full:>8.2f} s")


if __name__ == "__main__":
    main()
