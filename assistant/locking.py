"""One writer per store: an OS file lock in the store folder.

``flock`` locks belong to the open file, so the kernel releases them when the process ends in
any way (exit, crash, SIGKILL); a lock is never left behind by a dead run. While a writer holds
it, any ``pending`` rows in the catalog are its own; once a new writer has it, any ``pending``
rows left over are provably from a run that is dead, and recovery may remove them.
Readers never take the lock: they see only ``ready`` papers.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from assistant.errors import StoreBusyError, StoreError

LOCK_FILE = "writer.lock"


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
