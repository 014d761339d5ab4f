"""Read a vector index in a child process: whether Chroma can open it, count it, list its ids,
return the vectors of a wide sample of them, each of unit length as embedders write them
(Chroma reads them from its index files: a cut or partly zeroed ``data_level0.bin`` fails
there, or returns zeros, but only for the vectors in the damaged part, so a sample of eight
missed it in one run of two) and search from a few of them, each search's
best match at the distance its stored vector gives. A crash inside Chroma (a torn index file
can take the process down) is then the child's exit status, not the end of the command that
asked.

Run as ``python -m assistant.store.chroma.probe CHROMA_DIR NAME...``: exit 0 when every named
collection reads; otherwise one line on stderr saying what failed, and exit 3.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from assistant.store.vector_index import VectorIndex, best_at_its_distance

PROBE_TIMEOUT_S = 300.0  # a probe reads every id: generous for 100,000 abstracts
READ = 1_000  # vectors read, spread over the index (one read of ~1.5 MB)
SEARCHES = 8  # of them searched from
UNIT = 1e-2  # how far from 1 a stored vector's length may be (embedders write unit vectors)


def probe(chroma_dir: Path, names: list[str]) -> str | None:
    """None when the collections read whole; else what went wrong, in a few words."""
    if not (chroma_dir / "chroma.sqlite3").is_file():
        return f"{chroma_dir / 'chroma.sqlite3'} is missing"
    command = [sys.executable, "-m", "assistant.store.chroma.probe", str(chroma_dir), *names]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"reading it took over {PROBE_TIMEOUT_S:.0f} s"
    if done.returncode == 0:
        return None
    said = (done.stderr.strip().splitlines() or [""])[-1][:300]
    if done.returncode < 0:
        return f"reading it crashed the process (signal {-done.returncode}) {said}".strip()
    return said or f"reading it failed (exit status {done.returncode})"


def _read(chroma_dir: Path, name: str) -> None:
    from assistant.store.chroma.vectors import open_for_probe

    check(open_for_probe(chroma_dir, name), name)


def check(index: VectorIndex, name: str) -> None:
    """Raise when the index does not read whole: its ids against its count, a wide sample of
    its vectors (each the unit vector an embedder writes: a zeroed or overwritten one in the
    index file is not, and makes its paper drop out of searches without an error), and a few
    searches from them, each best match at the distance its stored vector gives."""
    from assistant.store.base import Filter

    count = index.count()
    ids = index.ids()
    if len(ids) != count:
        raise RuntimeError(f"{name} counts {count} vectors but lists {len(ids)}")
    picks = _spread(ids, READ)
    vectors = index.get_vectors(picks)
    if len(vectors) != len(picks):
        raise RuntimeError(f"{name} lists vectors it cannot return")
    for item_id, vector in vectors.items():
        norm = float(np.linalg.norm(vector))
        if not abs(norm - 1.0) <= UNIT:  # NaN too
            raise RuntimeError(f"{name}: the stored vector of {item_id} has length {norm:.3g}")
    for item_id in _spread(sorted(vectors), SEARCHES):  # loads the index and walks its links
        query = vectors[item_id]
        matches = index.query(query, min(10, count), Filter())
        if not matches:
            raise RuntimeError(f"{name}: a search from {item_id} found nothing")
        if not best_at_its_distance(index, query, matches):
            raise RuntimeError(f"{name}: a search from {item_id} is not at its stored distance")


def _spread(ids: list[str], n: int) -> list[str]:
    """Up to n of the ids, evenly spread."""
    return sorted({ids[i * len(ids) // n] for i in range(n)}) if len(ids) > n else list(ids)


def main(argv: list[str]) -> int:
    chroma_dir, names = Path(argv[0]), argv[1:]
    for name in names:
        try:
            _read(chroma_dir, name)
        except Exception as exc:  # any failure to read is the answer, whatever its wording
            cause = exc.__cause__ or exc  # what Chroma said, not our wording of it
            said = " ".join(str(cause).split())[:300]
            print(f"collection {name!r}: {type(cause).__name__}: {said}", file=sys.stderr)
            return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
