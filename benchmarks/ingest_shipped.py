"""The whole ingest of the shipped corpus (95 abstracts), cold: one process per run, into a new
store, the model load and every import included, old and new code alternating in one run.

Each arm is ``python -m assistant ingest --store NEW_FOLDER`` with a checkout's package first on
``PYTHONPATH``: this one's, and (``--old DIR``) another's, e.g. ``git archive`` of the commit
before, by default and with ``--fast``. The int8 file ``--fast`` needs is made once per cache
folder before the runs (``first use`` prints that run too: it pays the 2-3 s of making it).
Medians and ranges of wall time over ``--rounds``, and the load average at the end.

    git archive HEAD | tar -x -C /tmp/old    # the code before a change
    python benchmarks/ingest_shipped.py --old /tmp/old --rounds 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from startup import clean_env  # noqa: E402

HERE = Path(__file__).resolve().parent


def ingest_seconds(code: Path, cache: Path, flags: list[str]) -> float:
    """Wall time of one cold ``ingest`` of the shipped corpus by the package in ``code``."""
    env = {**clean_env(), "PYTHONPATH": str(code), "ASSISTANT_CACHE_DIR": str(cache)}
    with tempfile.TemporaryDirectory() as store:
        argv = [sys.executable, "-m", "assistant", "ingest", "--store", store, "--json", *flags]
        start = time.perf_counter()
        done = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=store)
        wall = time.perf_counter() - start
    if done.returncode != 0 or '"added": 95' not in done.stdout:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    return wall


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--old", type=Path, help="a checkout of the code to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    new = HERE.parent
    arms = {"new: default": (new, []), "new: --fast": (new, ["--fast"])}
    if args.old:
        arms |= {"old: default": (args.old, []), "old: --fast": (args.old, ["--fast"])}
    times: dict[str, list[float]] = {name: [] for name in arms}
    with tempfile.TemporaryDirectory() as caches:
        first = ingest_seconds(new, Path(caches) / "new", ["--fast"])
        print(f"  first use (new: --fast, int8 file made): {first:.1f} s", flush=True)
        for name, (code, flags) in arms.items():
            ingest_seconds(code, Path(caches) / name.split(":")[0], flags)  # warm the disk cache
        for _ in range(args.rounds):
            for name, (code, flags) in arms.items():
                times[name].append(ingest_seconds(code, Path(caches) / name.split(":")[0], flags))
                print(f"  {name:<14} {times[name][-1]:5.1f} s", flush=True)
    load = os.getloadavg()[0]
    print(f"the shipped corpus (95 abstracts), cold process each run; load average now {load:.1f}")
    base = statistics.median(times["new: default"])
    for name, walls in times.items():
        median = statistics.median(walls)
        print(
            f"{name:<14} median {median:5.1f} s  (range {min(walls):.1f}-{max(walls):.1f} s)"
            f"  {median / base:.2f}x the new default's time"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
