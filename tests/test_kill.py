"""SIGKILL a real `assistant ingest` at hundreds of points, then check that what readers see is
whole (every ready paper in the chunk vectors, the sentence vectors and the lexical index) and
that the next ingest finishes with exactly the papers given, nothing orphaned. A kill while
Chroma saves an HNSW index can leave it unreadable (Chroma writes the files in place): a reader
must then be told so, with the remedy, and the next ingest must rebuild it. The forker has
Chroma save every 50 vectors rather than 1,000, so the kills meet saves.

The ingests are forked from tests/ingest_forker.py, which imports everything once, in two lanes
(one store each) side by side; the hashing embedder keeps each run about a second long.
ASSISTANT_TEST_KILLS sets how many kills (default 200).
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from assistant.ingest.corpus import Paper, load_corpus
from assistant.store.catalog import CATALOG_FILE
from tests.conftest import ROOT, write_seed

KILLS = int(os.environ.get("ASSISTANT_TEST_KILLS", "200"))
LANES = 2


class Forker:
    def __init__(self, env: dict[str, str]):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.ingest_forker"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def corpora(folder: Path, papers: list[Paper]) -> list[tuple[list[str], set[str]]]:
    """Small corpora that overlap, grow, shrink and change: (ingest paths, their paper ids)."""
    changed = [p.abstract for p in papers[10:18]]
    changed[3] = changed[3] + " We also release the code."
    texts = [
        [p.abstract for p in papers[0:10]],
        [p.abstract for p in papers[5:16]],
        changed,
        [p.abstract for p in papers[0:4]] + changed[:3],
    ]
    out = []
    for i, abstracts in enumerate(texts):
        half = len(abstracts) // 2
        a = write_seed(folder / f"c{i}a.txt", abstracts[:half])
        b = write_seed(folder / f"c{i}b.txt", abstracts[half:])
        ids = {p.paper_id for p in load_corpus([a, b]).papers}
        assert len(ids) == len(abstracts)
        out.append(([str(a), str(b)], ids))
    return out


def whole_for_readers(view: dict[str, Any]) -> None:
    """Every ready paper is complete in every index (pending ones may be half written), and
    in the read copy when reads would search it."""
    searched = [(view["chunks"], view["sentences"])]
    if view["copy"]:
        searched.append((view["copy"]["chunks"], view["copy"]["sentences"]))
    for chunks, sentences in searched:
        assert set(view["expected_chunks"]) <= set(chunks)
        for pid, n in view["expected_sentences"].items():
            assert {f"{pid}:s{i}" for i in range(n)} <= set(sentences), pid
    assert sorted(view["lexical"]) == sorted(view["ready"])


def exactly(view: dict[str, Any], expected_ids: set[str]) -> None:
    """After a finished ingest: the papers given, each index exactly, nothing else."""
    assert view["unfinished"] == 0
    assert set(view["ready"]) == expected_ids
    assert sorted(view["chunks"]) == sorted(view["expected_chunks"])
    want = {f"{pid}:s{i}" for pid, n in view["expected_sentences"].items() for i in range(n)}
    assert sorted(view["sentences"]) == sorted(want)
    assert sorted(view["lexical"]) == sorted(view["ready"])
    assert view["copy"] is not None  # a finished run leaves one, holding what the index holds
    assert sorted(view["copy"]["chunks"]) == sorted(view["chunks"])
    assert sorted(view["copy"]["sentences"]) == sorted(view["sentences"])


def ready_ids(store: Path) -> set[str]:
    with sqlite3.connect(store / CATALOG_FILE) as db:
        return {r[0] for r in db.execute("SELECT paper_id FROM papers WHERE state = 'ready'")}


def lane(
    forker: Forker,
    store: Path,
    sets: list[tuple[list[str], set[str]]],
    kills: int,
    seed: int,
    states: Counter,
) -> None:
    """Kill ingests of random corpora into one store; after each finished one, check it."""
    rng = random.Random(seed)
    out = store.parent / f"{store.name}-view.json"

    def view() -> dict[str, Any] | None:
        """What a reader sees; None when it is told a vector index cannot be read (a kill while
        Chroma saved it: Chroma writes its index files in place), which the next run rebuilds."""
        reply = forker.ask({"check": str(store), "out": str(out)})
        if reply["code"] != 0 and "VectorIndexDamagedError" in reply["stderr"]:
            assert "assistant ingest --repair" in reply["stderr"], reply["stderr"]
            return None
        assert reply["code"] == 0, reply["stderr"]
        return json.loads(out.read_text())

    def whole() -> dict[str, Any]:
        seen = view()
        assert seen is not None, "a finished ingest left a vector index Chroma cannot read"
        return seen

    # How long a whole ingest of a corpus into an empty store takes here, and how much of it
    # is starting up and reading (the same ingest again, with nothing to write): the kills fall
    # in the first, most of them after the second, where the store changes.
    paths, expected = sets[1]
    calibrate = forker.ask({"args": ["ingest", *paths, "--store", str(store)], "delay": None})
    longest = calibrate["seconds"]
    idle = forker.ask({"args": ["ingest", *paths, "--store", str(store)], "delay": None})
    writing_from = min(idle["seconds"], 0.7 * longest)
    exactly(whole(), expected)
    # The machine's load changes during the test (other tests run beside it): the delays are
    # scaled down when a run finishes before its kill and up a little when it is killed, so
    # about one run in ten finishes, whatever the load was when the two runs above were timed.
    scale = [1.0]

    def delay() -> float:
        if rng.random() < 0.3:  # anywhere: starting up, reading, writing
            return scale[0] * rng.uniform(0.05, 0.85 * longest)
        return scale[0] * rng.uniform(0.9 * writing_from, longest)

    def paced(reply: dict[str, Any]) -> dict[str, Any]:
        scale[0] = min(3.0, scale[0] * 1.02) if reply["killed"] else max(0.2, scale[0] * 0.85)
        return reply

    def repair() -> None:
        """`ingest --repair` (no papers given), half the time of an index damaged as a kill
        leaves one, killed up to 3 times, then run whole: every paper ready before is ready
        after, and whole (before: a killed rebuild marked papers pending, and the next --repair
        took them back)."""
        before = ready_ids(store)
        if rng.random() < 0.5:  # the damage a kill leaves 1 time in ~40: a rebuild under kills
            for pickle in (store / "chroma").glob("*/index_metadata.pickle"):
                pickle.write_bytes(b"")
        args = ["ingest", "--repair", "--store", str(store)]
        for _ in range(rng.randint(0, 3)):
            reply = forker.ask({"args": args, "delay": scale[0] * rng.uniform(0.05, longest)})
            states["repair killed"] += reply["killed"]
        finished = forker.ask({"args": args, "delay": None})
        assert finished["code"] == 0, finished
        seen = whole()
        assert seen["unfinished"] == 0 and before <= set(seen["ready"])
        whole_for_readers(seen)
        states["repaired"] += 1

    done, current = 0, 1
    while done < kills:
        current = rng.choice([i for i in range(len(sets)) if i != current])  # always work to do
        paths, expected = sets[current]
        args = ["ingest", *paths, "--prune", "--store", str(store)]
        for _ in range(rng.randint(5, 12)):  # each run also recovers what the last one left
            reply = paced(forker.ask({"args": args, "delay": delay()}))
            if not reply["killed"] and reply["code"] != 0:
                # Seen once in ~800 post-kill runs, cause not yet found: the run exits 1 at
                # once. Counted and shown; the next run must still finish the store.
                states["exit 1 after a kill"] += 1
                states[f"said: {reply['stderr'].strip()[-300:]}"] += 1
                continue
            if not reply["killed"]:  # it finished first: the store is complete, check it
                break
            done += 1
            states["killed"] += 1
            if rng.random() < 0.8:  # a reader's view between kills (at every kill: slower)
                seen = view()
                if seen is None:
                    states["index damaged"] += 1
                    if rng.random() < 0.5:  # healed by --repair, else by the next ingest
                        repair()
                    continue
                whole_for_readers(seen)
                states[(len(seen["ready"]), seen["unfinished"])] += 1
            if rng.random() < 0.1:
                repair()
        finished = forker.ask({"args": args, "delay": None})
        assert finished["code"] == 0, finished
        exactly(whole(), expected)


def test_ingest_survives_sigkill_at_hundreds_of_points(tmp_path: Path, corpus_papers):
    started = time.monotonic()
    sets = corpora(tmp_path, corpus_papers)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSISTANT_")}
    env.update({"ASSISTANT_EMBEDDING__PROVIDER": "hashing"})
    env["ASSISTANT_EMBEDDING__PAPERS_PER_WRITE"] = "3"  # many journalled batches per run
    states: Counter = Counter()
    errors: list[BaseException] = []
    forkers = [Forker(env) for _ in range(LANES)]
    share = [KILLS // LANES + (1 if i < KILLS % LANES else 0) for i in range(LANES)]

    def go(i: int) -> None:
        try:
            lane(forkers[i], tmp_path / f"store{i}", sets, share[i], 11 + i, states)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(LANES)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for f in forkers:
        f.close()
    if errors:
        raise errors[0]
    killed = states.pop("killed")
    failed = states.pop("exit 1 after a kill", 0)
    damaged = states.pop("index damaged", 0)  # a kill while Chroma saved an index
    repairs, repairs_killed = states.pop("repaired", 0), states.pop("repair killed", 0)
    said = [states.pop(k) and k for k in [k for k in states if isinstance(k, str)]]
    assert failed <= 2, said  # rare, and the next run finished the store every time
    assert killed >= KILLS
    # The kills landed at many different points: partial ready sets, unfinished batches.
    assert sum(n for (_, unfinished), n in states.items() if unfinished) >= KILLS // 30
    assert len(states) >= min(10, KILLS // 20)
    took = time.monotonic() - started
    print(
        f"\n{killed} kills, {len(states)} distinct store states, {damaged} views met an index "
        f"to rebuild, {repairs} --repair runs ({repairs_killed} kills), {took:.0f} s; "
        f"{said or ''}"
    )
