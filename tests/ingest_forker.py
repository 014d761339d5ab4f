"""Runs `assistant` commands in forked children of one process that has imported everything once,
so the kill test can SIGKILL hundreds of real ingests without paying Python's and Chroma's
start-up each time. Each child is a whole `assistant ingest` run: the CLI, the store, the lock.

One JSON request per stdin line, one JSON reply per stdout line:
  {"args": [...], "delay": 0.3}  -> run the command, SIGKILL it after `delay` seconds (null: let
                                    it finish): {"killed": bool, "code": int | null, "seconds": s}
  {"check": STORE, "out": FILE}  -> a reader's view of the store, written to FILE as JSON:
                                    {"ready", "unfinished", "chunks", "sentences", "lexical",
                                     "expected_chunks", "expected_sentences"}
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import bm25s  # noqa: F401 -- imported once here, before any fork
import chromadb  # noqa: F401

from assistant import Assistant, load_settings
from assistant.cli.main import main
from assistant.embedding.embedders import HashingEmbedder
from assistant.ingest.chunking import sentences_of
from assistant.text.tokens import DEFAULT_ENCODING, encoding


def _child(work: Any, stderr: str = os.devnull) -> None:
    """In the forked child: do the work, then leave without running the parent's cleanup."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(os.open(stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 2)
    code = 0
    try:
        work()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()  # to ``stderr``: what a failed check or run says
        code = 70
    os._exit(code)


def run(args: list[str], delay: float | None) -> dict[str, Any]:
    started = time.monotonic()
    with _stderr_file() as errors:
        pid = os.fork()
        if pid == 0:
            _child(lambda: main(args, prog_name="assistant"), errors)
        killed, reaped, status = False, 0, 0
        if delay is not None:
            # Watch the run until the kill is due: one that finishes first is reaped then, so
            # its "seconds" says how long a run takes now (the test adapts its delays to it).
            due = started + delay
            while reaped == 0 and time.monotonic() < due:
                time.sleep(min(0.01, max(0.0, due - time.monotonic())))
                reaped, status = os.waitpid(pid, os.WNOHANG)
            if reaped == 0:
                os.kill(pid, signal.SIGKILL)
                killed = True
        if reaped == 0:
            _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        said = Path(errors).read_text(errors="replace")[-600:] if code not in (0, -9) else ""
    return {"killed": killed, "code": code, "seconds": time.monotonic() - started, "stderr": said}


@contextmanager
def _stderr_file() -> Iterator[str]:
    """A file for a child's stderr, removed once the parent has read it."""
    fd, path = tempfile.mkstemp(prefix="ingest-forker-", suffix=".err")
    os.close(fd)
    try:
        yield path
    finally:
        os.unlink(path)


def _view(store: Path, out: Path) -> None:
    settings = load_settings(store={"path": store}, embedding={"provider": "hashing"})
    with Assistant(settings, embedder=HashingEmbedder()) as a:
        ready = list(a.store.catalog.iter_ready())
        sentences = a.store.sentences
        view = {
            "ready": [p.paper_id for p in ready],
            "unfinished": a.store.catalog.counts()["unfinished"],
            "chunks": a.store.chunks.ids(),
            "sentences": sentences.ids() if sentences is not None else [],
            "lexical": a.store.lexical_index.paper_ids(),  # what a reader sees, base and delta
            "expected_chunks": sorted(
                c for i in a.store.catalog.ready_chunk_ids().values() for c in i
            ),
            "expected_sentences": {p.paper_id: len(sentences_of(p)) for p in ready},
        }
        copy = a.store._read_copy()  # what reads search instead of the indexes, if any
        view["copy"] = {k: copy.ids(k) for k in ("chunks", "sentences")} if copy else None
    out.write_text(json.dumps(view))


def check(store: Path, out: Path) -> dict[str, Any]:
    with _stderr_file() as errors:
        pid = os.fork()
        if pid == 0:
            _child(lambda: _view(store, out), errors)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        said = Path(errors).read_text(errors="replace")[-1500:] if code != 0 else ""
    return {"code": code, "stderr": said}


def serve() -> None:
    encoding(DEFAULT_ENCODING)  # the tokenizer's tables, loaded once
    os.environ["ASSISTANT_EMBEDDING__PROVIDER"] = "hashing"
    # Chroma saves an index to its files every 1,000 vectors; a kill while it saves can leave
    # it torn, which the next ingest rebuilds. Every 50 here, so the kills meet saves.
    os.environ["ASSISTANT_STORE__SAVE_EVERY"] = "50"
    for line in sys.stdin:
        request = json.loads(line)
        if "check" in request:
            reply = check(Path(request["check"]), Path(request["out"]))
        else:
            reply = run(request["args"], request.get("delay"))
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    serve()
