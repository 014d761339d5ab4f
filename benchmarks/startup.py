"""Cold start: whole-process wall time and peak RSS of the commands people type most.

Each command runs as its own process, N times; the table shows the median wall time and the
largest peak RSS (``wait4``'s ``ru_maxrss`` for that one child). ``search`` and ``ask`` run
against a store of the shipped corpus (built first with ``ingest`` unless ``--store`` names
one), with the extractive provider: no key, no network.

    python benchmarks/startup.py                  # this checkout's `assistant`
    python benchmarks/startup.py --store /tmp/store \
        --assistant /old/.venv/bin/assistant --assistant .venv/bin/assistant   # before/after
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUESTION = "Which papers study KV-cache eviction, and what do they find?"


def measure(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one run of ``argv``, which must succeed."""
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=errors)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage, unlike getrusage
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            errors.seek(0)
            message = errors.read().decode(errors="replace").strip()
            raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {message}")
    return wall, usage.ru_maxrss / 1024  # Linux reports kilobytes


def clean_env() -> dict[str, str]:
    """This environment without settings that would change what runs (keys, stores)."""
    drop = {"OPENAI_API_KEY", "OPENAI_BASE_URL"}
    return {k: v for k, v in os.environ.items() if not k.startswith("ASSISTANT_") and k not in drop}


def commands(assistant: str, store: Path) -> dict[str, list[str]]:
    python = Path(assistant).parent / "python"  # the interpreter of that install
    where = ["--store", str(store)]
    return {
        "python -c pass": [str(python if python.exists() else sys.executable), "-c", "pass"],
        "assistant --help": [assistant, "--help"],
        "assistant ask --help": [assistant, "ask", "--help"],
        "assistant search": [assistant, "search", "KV cache eviction", *where],
        "assistant ask": [assistant, "ask", QUESTION, "--no-stream", *where],
        "assistant ask --json": [assistant, "ask", QUESTION, "--json", *where],
    }


def build_store(assistant: str, store: Path, env: dict[str, str]) -> None:
    print(f"building a store of the shipped corpus in {store} …", file=sys.stderr)
    subprocess.run([assistant, "ingest", "--store", str(store)], env=env, check=True)


def compare(assistants: list[str], store: Path, runs: int, env: dict[str, str]) -> None:
    """One row per command, one column pair per executable. Runs alternate between the
    executables, so a shared machine's changing load falls on each alike."""
    for i, exe in enumerate(assistants, start=1):
        print(f"[{i}] {exe}")
    print(f"median wall time of {runs} runs, largest peak RSS")
    heads = "".join(
        f" {f'[{i}] wall s':>11} {f'[{i}] RSS MB':>10}" for i in range(1, len(assistants) + 1)
    )
    print(f"{'command':<22}{heads}")
    table = [commands(exe, store) for exe in assistants]
    for name in table[0]:
        results: list[list[tuple[float, float]]] = [[] for _ in assistants]
        for _ in range(runs):
            for column, argvs in zip(results, table, strict=True):
                column.append(measure(argvs[name], env))
        cells = "".join(
            f" {statistics.median(w for w, _ in col):11.2f} {max(r for _, r in col):10.0f}"
            for col in results
        )
        print(f"{name:<22}{cells}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    default = shutil.which("assistant", path=str(Path(sys.executable).parent)) or "assistant"
    parser.add_argument(
        "--assistant",
        action="append",
        help="an `assistant` executable; repeat to compare installs side by side "
        "[default: the one beside this Python]",
    )
    parser.add_argument("--store", type=Path, default=None, help="a store of the shipped corpus")
    parser.add_argument("--runs", type=int, default=5, help="runs per command (median shown)")
    args = parser.parse_args()
    assistants = args.assistant or [default]
    env = clean_env()
    with tempfile.TemporaryDirectory() as tmp:
        store = args.store or Path(tmp) / "store"
        if args.store is None:
            build_store(assistants[0], store, env)
        compare(assistants, store, args.runs, env)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
