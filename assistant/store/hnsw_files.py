"""What the files of an HNSW index Chroma has saved must look like, checked before Chroma reads
them.

Chroma (an embedded store) saves a collection's vector index every ``sync_threshold`` vectors by
rewriting its files in place, one after another: a process killed meanwhile can leave a file
empty, cut short or left from the save before. Chroma's own reading of such files ranges from a
clear error to none at all: an index without its id map or folder reads as holding none of the
saved vectors, a cut vector file fails on some searches only, a cut header crashes the process,
and a link-list file cut short makes the next save write without bound (78 GB once, in
test_kill). These checks read the header and compare the other files' sizes with it, and, when
``thorough`` (before a writer saves into the index), walk the link lists.

The layout (Chroma's hnswlib, ``header.bin``): a version, then offsetLevel0, max_elements,
cur_element_count, size_data_per_element, label_offset, offsetData, maxlevel, enterpoint,
maxM, maxM0, M, mult, ef_construction. ``data_level0.bin`` holds at least
cur_element_count x size_data_per_element bytes, ``length.bin`` four per element, and
``link_lists.bin``, per element, a 4-byte size then that many bytes of links above level 0.
"""

from __future__ import annotations

import sqlite3
import struct
from contextlib import closing
from pathlib import Path

FILES = ("header.bin", "data_level0.bin", "length.bin", "link_lists.bin", "index_metadata.pickle")
_HEADER = struct.Struct("<iQQQQQQiIQQQdQ")
_SIZE = struct.Struct("<I")
_VERSION = 1  # the header's first field in the layout below


def saved_segments(path: Path, name: str) -> list[str]:
    """The vector segments of a collection Chroma has saved to files (its database records how
    far each saved index reaches: ``max_seq_id``). Empty when none is, and when the database is
    not laid out as this code expects (another chromadb version)."""
    try:
        with closing(sqlite3.connect(f"file:{path / 'chroma.sqlite3'}?mode=ro", uri=True)) as db:
            rows = db.execute(
                "SELECT s.id FROM segments s JOIN collections c ON s.collection = c.id "
                "JOIN max_seq_id m ON m.segment_id = s.id "
                "WHERE c.name = ? AND s.scope = 'VECTOR'",
                (name,),
            )
            return [str(row[0]) for row in rows]
    except sqlite3.Error:
        return []


def collection_damage(path: Path, name: str, *, thorough: bool = False) -> str | None:
    """What is wrong with the files of a collection's saved index (its segment named), or
    None; ``path``: the store's Chroma folder."""
    for segment in saved_segments(path, name):
        wrong = damage(path / segment, thorough=thorough)
        if wrong:
            return f"its saved files in {segment}: {wrong}"
    return None


def damage(folder: Path, *, thorough: bool = False) -> str | None:
    """What is wrong with a saved index's files, or None."""
    missing = [file for file in FILES if not (folder / file).is_file()]
    if missing:
        return f"{', '.join(missing)} gone"
    header = (folder / "header.bin").read_bytes()
    if len(header) >= 4 and int.from_bytes(header[:4], "little") != _VERSION:
        return None  # a layout this code does not know (another chromadb): not judged
    if len(header) != _HEADER.size:
        if len(header) > _HEADER.size:
            return None
        return f"header.bin is {len(header)} bytes, not {_HEADER.size}"
    fields = _HEADER.unpack(header)
    count, per_element, max_level = fields[3], fields[4], fields[7]
    links_per_level = fields[9] * 4 + 4  # maxM links and their count, above level 0
    sizes = {
        "data_level0.bin": count * per_element,
        "length.bin": count * 4,
        "link_lists.bin": count * 4,
    }
    for file, least in sizes.items():
        if (folder / file).stat().st_size < least:
            return f"{file} is shorter than its {count} vectors need"
    if thorough:
        return _link_lists_damage(
            folder / "link_lists.bin", count, max(0, max_level), links_per_level
        )
    return None


def _link_lists_damage(file: Path, count: int, max_level: int, per_level: int) -> str | None:
    data = file.read_bytes()
    at = 0
    for _ in range(count):
        if at + 4 > len(data):
            return "link_lists.bin ends before its last vector"
        (size,) = _SIZE.unpack_from(data, at)
        if size % per_level or size > max_level * per_level:
            return f"link_lists.bin holds a link list of {size} bytes"
        at += 4 + size
    return None  # bytes after the last list are not read
