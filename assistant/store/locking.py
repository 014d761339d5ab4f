"""One writer per store: an OS file lock in the store folder.

``flock`` locks belong to the open file, so the kernel releases them when the process ends in
any way (exit, crash, SIGKILL); a lock is never left behind by a dead run. While a writer holds
it, any ``pending`` rows in the catalog are its own; once a new writer has it, any ``pending``
rows left over are provably from a run that is dead, and recovery may remove them.
Readers never take the lock: they see only ``ready`` papers.

A second lock, ``index_files``, guards the files of an embedded Chroma store's vector indexes:
a writer holds it exclusively for each Chroma call that changes them, a reader shares it for
each call that reads them. Chroma saves an index by rewriting its files in place, and a
process's first read of a collection applies any write log its index files do not hold yet;
read while another process saves, the files are half old and half new (a reader crashed, and
its own save of what it had applied grew ``link_lists.bin`` without bound). Between a
writer's calls the files are whole, and what is left in the log is less than the count at
which Chroma saves, so a reader applies it in memory and writes nothing.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from assistant.errors import StoreBusyError, StoreError

LOCK_FILE = "writer.lock"
INDEX_LOCK_FILE = "vectors.lock"
INDEX_WAIT_S = 300.0  # longer than any one Chroma call of a writer takes
INDEX_NOTICE_S = 5.0  # a wait this long is said (on stderr, through logging's last resort)

_log = logging.getLogger(__name__)

_held = threading.local()  # the index-files lock folders this thread holds, with their modes


def _holder(handle: int) -> str:
    """The pid the current writer wrote into the lock file, for the message."""
    try:
        text = os.pread(handle, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        text = ""
    return f"pid {text}" if text.isdigit() else "another process"


@contextmanager
def writer_lock(
    store_dir: Path, *, wait: bool = True, on_wait: Callable[[str], None] | None = None
) -> Iterator[None]:
    """Hold the store's writer lock for the block; wait for it, or fail at once (wait=False)."""
    try:
        store_dir.mkdir(parents=True, exist_ok=True)
        handle = os.open(store_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    except FileExistsError:
        raise StoreError(
            f"{store_dir} is a file, not a store folder; give --store a folder"
        ) from None
    except OSError as exc:
        raise StoreError(
            f"cannot create the store folder {store_dir}: {exc.strerror or exc}; "
            "give --store a folder you can write to"
        ) from None
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            busy = f"another ingest is writing to {store_dir} ({_holder(handle)})"
            if not wait:
                raise StoreBusyError(
                    f"{busy}; run again when it has finished, or without --no-wait to wait"
                ) from None
            if on_wait is not None:
                on_wait(f"{busy}; waiting…")
            fcntl.flock(handle, fcntl.LOCK_EX)
        os.ftruncate(handle, 0)
        os.pwrite(handle, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(handle)  # closing the file releases the lock


def writer_running(store_dir: Path) -> str | None:
    """Who holds the store's writer lock now ("pid N"), or None when no writer does. The lock
    is tried, not held: a writer starting in that instant waits for it as for any other (an
    `ingest --no-wait` is told the store is busy)."""
    try:
        handle = os.open(store_dir / LOCK_FILE, os.O_RDONLY)
    except OSError:  # no writer has ever run here
        return None
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _holder(handle)
        return None
    finally:
        os.close(handle)


@contextmanager
def index_files(store_dir: Path, *, exclusive: bool, wait_s: float | None = None) -> Iterator[None]:
    """Hold the lock on the store's vector-index files for the block: ``exclusive`` to change
    them, shared to read them. Each holding opens the lock file anew (``flock`` locks belong to
    the open file), so threads of one process exclude each other as processes do; a block
    inside one this thread already holds (a read inside a write) takes nothing more."""
    held: dict[Path, bool] = _held.__dict__.setdefault("folders", {})
    if store_dir in held:
        if exclusive and not held[store_dir]:
            raise RuntimeError("a write to the vector index inside a read of it")
        yield
        return
    handle = _open_lock(store_dir / INDEX_LOCK_FILE)
    if handle is None:
        yield
        return
    try:
        _take(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH, store_dir, wait_s)
        held[store_dir] = exclusive
        try:
            yield
        finally:
            del held[store_dir]
    finally:
        os.close(handle)


def _open_lock(path: Path) -> int | None:
    """The lock file, opened; None when it cannot be created or opened (a store folder this
    user cannot write to, as a shared read-only copy is: no writer of ours can change it)."""
    for flags in (os.O_RDWR | os.O_CREAT, os.O_RDONLY):
        try:
            return os.open(path, flags, 0o644)
        except OSError:
            continue
    return None


def _take(handle: int, mode: int, store_dir: Path, wait_s: float | None) -> None:
    """Take the lock, polling so that a holder stopped in the middle of a call (SIGSTOP, a
    hung disk) ends in an error that says who holds it instead of a wait without end."""
    limit = INDEX_WAIT_S if wait_s is None else wait_s
    started = time.monotonic()
    pause, told = 0.002, False
    # Writers exclude one another with the writer lock: a writer waits for readers.
    holder = (
        "a reader (`search`, `ask`, `chat`, the API)" if mode == fcntl.LOCK_EX else "an `ingest`"
    )
    while True:
        try:
            fcntl.flock(handle, mode | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            waited = time.monotonic() - started
            if waited >= INDEX_NOTICE_S and not told:
                told = True
                _log.warning(
                    "waiting for %s to finish its call on the vector index of %s (up to %.0f s)",
                    holder,
                    store_dir,
                    limit,
                )
            if waited >= limit:
                raise StoreBusyError(
                    f"{holder} has held the vector index of {store_dir} for {limit:.0f} s "
                    "without finishing; if it is stopped (Ctrl-Z), resume or end it, then run "
                    "this again"
                ) from None
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
