"""Telling a full disk, or files this user cannot write, from other write failures, so each is
reported as one line naming the store.

SQLite says "database or disk is full", the OS says ENOSPC, but Chroma may only say "Error in
compaction": when nothing in the error names the cause, the free space beside the store does.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from assistant.errors import AssistantError, DiskFullError

_MARKERS = ("disk is full", "no space left", "disk full", "quota exceeded")
_LOW_SPACE = 1 << 20  # bytes free below which a failed write is taken for a full disk


def is_disk_full(exc: BaseException, where: Path | None) -> bool:
    """Whether ``exc`` (or an error it came from) means the disk holding ``where`` is full."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if any(marker in str(seen).lower() for marker in _MARKERS):
            return True
        seen = seen.__cause__ or seen.__context__
    if where is None:
        return False
    folder = where
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        return shutil.disk_usage(folder).free < _LOW_SPACE
    except OSError:
        return False


@contextmanager
def said_when_full(folder: Path, doing: str = "writing") -> Iterator[None]:
    """A failure for want of space in ``folder`` becomes one DiskFullError line naming it; an
    error already said in our words (a DiskFullError from deeper down included) passes as is."""
    try:
        yield
    except AssistantError:
        raise
    except Exception as exc:
        if not is_disk_full(exc, folder):
            raise
        raise DiskFullError(
            f"disk full {doing} {folder}: {exc}. Free some space and run the command again "
            "(what was written before is kept)"
        ) from exc


def first_unwritable(paths: Iterable[Path]) -> Path | None:
    """The first of these paths that exists and this user cannot write (SQLite and Chroma
    write beside their files even to read, and fail there in words of their own)."""
    return next((p for p in paths if p.exists() and not os.access(p, os.W_OK)), None)
