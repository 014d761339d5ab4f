"""A store's Chroma collections behind ``VectorIndexes``: embedded in ``FOLDER/chroma``, or on
a server (then the server keeps them, and there is nothing here to probe or move)."""

from __future__ import annotations

import hashlib
import itertools
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from assistant.errors import StoreError
from assistant.store.chroma.probe import probe
from assistant.store.chroma.vectors import ChromaVectors
from assistant.store.diskspace import first_unwritable
from assistant.store.locking import index_files
from assistant.store.vector_index import VectorIndexes

# (collection name, through a writing client even if the caller only reads) -> its handle
OpenCollection = Callable[[str, bool], ChromaVectors]


class ChromaIndexes(VectorIndexes):
    def __init__(self, home: Path | None, open_collection: OpenCollection):
        """``home``: the embedded store's ``chroma`` folder (None for a server's)."""
        self.home = home
        self._open = open_collection

    def open(self, name: str) -> ChromaVectors:
        return self._open(name, False)

    def present(self) -> bool:
        return self.home is not None and self.home.is_dir()

    def torn(self) -> str | None:
        if self.present() and self.home and not (self.home / "chroma.sqlite3").is_file():
            return "its database chroma.sqlite3 is missing"
        return None

    def fingerprint(self) -> str | None:
        """The name and size of every file under the subfolders of ``chroma``, whatever they
        are called: a file cut, grown or gone. Not their times or bytes: a reader opening a
        small collection rewrites its index files, same sizes, with bytes that differ where
        nothing is stored. The database beside them is left out: Chroma writes it on reads
        too, and reports its damage itself."""
        if self.home is None or not self.home.is_dir():
            return None
        digest = hashlib.blake2b(digest_size=12)
        for folder, subfolders, files in os.walk(self.home, followlinks=True):
            subfolders.sort()
            if Path(folder) == self.home:
                continue
            for name in sorted(files):
                path = Path(folder, name)
                try:
                    size = path.stat().st_size
                except FileNotFoundError:  # gone while listed: a change all the same
                    continue
                digest.update(f"{path.relative_to(self.home).as_posix()}\0{size}\n".encode())
        return digest.hexdigest()

    def probe(self, names: Sequence[str]) -> str | None:
        """What a child process met reading the collections whole. A folder this user cannot
        write is said as that, not as damage: Chroma writes its database even to read, so the
        probe would fail there, and a repair would set whole indexes aside."""
        if self.home is None:
            return None
        unwritable = _unwritable(self.home)
        if unwritable is not None:
            raise StoreError(
                f"cannot open the store at {self.home}: {unwritable} is not writable by this "
                "user, and Chroma writes there even to read; make it writable (chmod -R u+w) "
                "or copy the store to a folder you can write"
            )
        return probe(self.home, list(names))

    def move_aside(self) -> str | None:
        """``chroma`` becomes ``chroma.damaged-TIME`` (``~N`` added when that exists)."""
        if self.home is None:
            return None
        with index_files(self.home.parent, exclusive=True):  # not while a reader reads it
            if not self.home.exists():
                return None
            target = self.home.with_name(f"chroma.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
            n = 1
            while target.exists():
                n += 1
                target = target.with_name(f"{target.name.split('~')[0]}~{n}")
            os.replace(self.home, target)
            return str(target)


def _unwritable(home: Path) -> Path | None:
    """Its database, or the first folder under ``home``, that this user cannot write."""
    folders = (Path(folder) for folder, _, _ in os.walk(home, followlinks=True))
    return first_unwritable(itertools.chain([home / "chroma.sqlite3"], folders))
