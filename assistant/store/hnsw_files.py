"""What the files of an HNSW index Chroma has saved must look like, checked before Chroma reads
them.

Chroma (an embedded store) saves a collection's vector index every ``sync_threshold`` vectors by
rewriting its files in place, one after another: a process killed meanwhile can leave a file
empty, cut short or left from the save before. Chroma's own reading of such files ranges from a
clear error to none at all: an index without its id map or folder reads as holding none of the
saved vectors, a cut vector file fails on some searches only, a cut header crashes the process,
a link-list file cut short makes the next save write without bound (78 GB once, in test_kill),
and links that point nowhere (a zeroed link-list file, a vector file overwritten) crash every
command that searches, ``ingest --repair`` included. So these checks read the header, compare
the other files' sizes with it, walk the link lists above level 0 (each element's level, and
every link to an element that exists at that level; the entry point at the top level), and
read the level-0 links and vectors of every element: when a reader opens an index of up to
250,000 elements (of a sample of a larger one), and (``thorough``) before a writer saves into
it and in ``info --check``. They also hold the header to what Chroma trusts when it loads:
room for the elements, an element laid out as links, a vector of the collection's dimension
and a label; and the index to as many elements as the database has records saved in it.

The layout (Chroma's hnswlib, ``header.bin``): a version, then offsetLevel0, max_elements,
cur_element_count, size_data_per_element, label_offset, offsetData, maxlevel, enterpoint,
maxM, maxM0, M, mult, ef_construction. ``data_level0.bin`` holds, per element,
size_data_per_element bytes: at offsetLevel0 a link count (its low 16 bits) and maxM0 links,
at offsetData the vector (unit length in a cosine index), at label_offset its label.
``length.bin`` has four bytes per element, and ``link_lists.bin``, per element, a 4-byte size
then that many bytes: a count and maxM links for each level above 0.
"""

from __future__ import annotations

import bisect
import json
import math
import sqlite3
import struct
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import numpy as np

FILES = ("header.bin", "data_level0.bin", "length.bin", "link_lists.bin", "index_metadata.pickle")
_HEADER = struct.Struct("<iQQQQQQiIQQQdQ")
_VERSION = 1  # the header's first field in the layout below
READ_ALL_UP_TO = 250_000  # a reader reads every level-0 element of an index this size or less
SAMPLE = 2048  # of a larger one, this many (and the entry point)
_BLOCK = 65_536  # elements read at once
_UNIT = 1e-2  # how far from 1 a cosine index's vector length may be


@dataclass(frozen=True)
class Header:
    count: int  # elements saved
    room: int  # max_elements: what Chroma allocates when it loads the index
    per_element: int  # bytes per element in data_level0.bin
    level0: int  # where an element's level-0 links start
    vector: int  # where its vector starts
    label: int  # where its label starts (the vector ends)
    max_level: int
    entry: int  # the entry point: an element at max_level
    max_links: int  # maxM, above level 0
    max_links0: int  # maxM0, at level 0
    m: int  # M: maxM is M and maxM0 2M
    mult: float  # 1 / ln M: how many levels a new element gets
    ef_construction: int

    @classmethod
    def parse(cls, data: bytes) -> Header:
        f = _HEADER.unpack(data)
        return cls(f[3], f[2], f[4], f[1], f[6], f[5], f[7], f[8], f[9], f[10], f[11], f[12], f[13])

    @property
    def links0_end(self) -> int:
        """Where an element's level-0 links end: a count, then maxM0 links."""
        return self.level0 + 4 * (1 + self.max_links0)

    def reads_every(self, thorough: bool) -> bool:
        """Whether a check reads every level-0 element (else a sample)."""
        return thorough or self.count <= READ_ALL_UP_TO

    @property
    def level_words(self) -> int:
        """4-byte words per level above 0 in link_lists.bin: a count, then maxM links."""
        return 1 + self.max_links


def saved_segments(path: Path, name: str) -> list[str]:
    """The vector segments of a collection Chroma has saved to files (its database records how
    far each saved index reaches: ``max_seq_id``). Empty when none is, and when the database is
    not laid out as this code expects (another chromadb version)."""
    return [saved.segment for saved in _saved(path, name)]


@dataclass(frozen=True)
class Saved:
    """A saved vector segment, as the collection's database describes it."""

    segment: str
    space: str | None  # the distance ("cosine", "l2", ...) when the database says it
    # The collection's records written up to the save (its ``max_seq_id``) and still there:
    # the saved index holds at least that many elements. None when not known.
    records: int | None
    dimension: int | None  # the collection's vectors' (None when the database does not say)
    # How far the save reaches in the write log (``max_seq_id``): Chroma numbers an index's
    # elements' labels from 1, one per record added, so none is higher. None when not known.
    saved_to: int | None


def _saved(path: Path, name: str) -> list[Saved]:
    try:
        with closing(sqlite3.connect(f"file:{path / 'chroma.sqlite3'}?mode=ro", uri=True)) as db:
            rows = db.execute(
                "SELECT s.id, c.schema_str, m.seq_id, c.id, c.dimension FROM segments s "
                "JOIN collections c "
                "ON s.collection = c.id JOIN max_seq_id m ON m.segment_id = s.id "
                "WHERE c.name = ? AND s.scope = 'VECTOR'",
                (name,),
            ).fetchall()
            found = []
            for segment, schema, seq_id, collection, dimension in rows:
                # Sequence numbers stored otherwise (another chromadb) are not compared.
                saved_to = seq_id if isinstance(seq_id, int) else None
                found.append(
                    Saved(
                        str(segment),
                        _space(schema),
                        _records(db, str(collection), saved_to),
                        dimension if isinstance(dimension, int) and dimension > 0 else None,
                        saved_to,
                    )
                )
            return found
    except sqlite3.Error:
        return []


def _records(db: sqlite3.Connection, collection: str, saved_to: int | None) -> int | None:
    """The collection's records whose last write is at or before ``saved_to`` (a deleted one
    is gone, an updated one counts at its newer write: both leave the bound a lower one)."""
    if saved_to is None:
        return None
    row = db.execute(
        "SELECT COUNT(*), SUM(typeof(e.seq_id) != 'integer') FROM embeddings e "
        "JOIN segments s ON e.segment_id = s.id "
        "WHERE s.collection = ? AND s.scope = 'METADATA' AND e.seq_id <= ?",
        (collection, saved_to),
    ).fetchone()
    return int(row[0]) if row and not row[1] else None


def _space(schema: str | None) -> str | None:
    try:
        vectors = json.loads(schema or "{}")["keys"]["#embedding"]["float_list"]
        return str(vectors["vector_index"]["config"]["space"])
    except (ValueError, KeyError, TypeError):
        return None


def collection_damage(path: Path, name: str, *, thorough: bool = False) -> str | None:
    """What is wrong with the files of a collection's saved index (its segment named), or
    None; ``path``: the store's Chroma folder."""
    for saved in _saved(path, name):
        wrong = damage(
            path / saved.segment,
            thorough=thorough,
            unit=saved.space == "cosine",
            records=saved.records,
            dimension=saved.dimension,
            labels_up_to=saved.saved_to,
        )
        if wrong:
            return f"its saved files in {saved.segment}: {wrong}"
    return None


def damage(
    folder: Path,
    *,
    thorough: bool = False,
    unit: bool = False,
    records: int | None = None,
    dimension: int | None = None,
    labels_up_to: int | None = None,
) -> str | None:
    """What is wrong with a saved index's files, or None. ``unit``: its vectors are of unit
    length (a cosine index normalises them); ``records``: it holds at least that many;
    ``dimension``: its vectors'; ``labels_up_to``: no label is higher."""
    missing = [file for file in FILES if not (folder / file).is_file()]
    if missing:
        return f"{', '.join(missing)} gone"
    data = (folder / "header.bin").read_bytes()
    if len(data) >= 4 and int.from_bytes(data[:4], "little") != _VERSION:
        return None  # a layout this code does not know (another chromadb): not judged
    if len(data) != _HEADER.size:
        if len(data) > _HEADER.size:
            return None
        return f"header.bin is {len(data)} bytes, not {_HEADER.size}"
    header = Header.parse(data)
    wrong = _header_damage(header, dimension)
    if wrong:
        return wrong
    sizes = {
        "data_level0.bin": header.count * header.per_element,
        "length.bin": header.count * 4,
        "link_lists.bin": header.count * 4,
    }
    for file, least in sizes.items():
        if (folder / file).stat().st_size < least:
            return f"{file} is shorter than its {header.count} vectors need"
    if records is not None and header.count < records:
        return (
            f"they hold {header.count} vectors where the database says {records} were saved "
            "(files older than the database)"
        )
    if header.count == 0:
        return None
    return _upper_damage(folder / "link_lists.bin", header) or _level0_damage(
        folder, header, thorough=thorough, unit=unit, labels_up_to=labels_up_to
    )


def _header_damage(header: Header, dimension: int | None) -> str | None:
    """Fields Chroma trusts when it loads the index: the room it allocates, where an element's
    links, vector and label lie, and an empty index's top level."""
    if header.room < header.count:
        return f"header.bin makes room for {header.room} elements but holds {header.count}"
    if not header.links0_end <= header.vector < header.label <= header.per_element - 8:
        return "header.bin does not lay out an element as links, a vector, then a label"
    if dimension is not None and header.label - header.vector != 4 * dimension:
        size = (header.label - header.vector) // 4
        return (
            f"header.bin lays out vectors of {size} numbers where the collection's have {dimension}"
        )
    if header.count == 0 and header.max_level != -1:
        return "header.bin holds no element but a top level to search from"
    # What Chroma derives from M, read back as saved (a new element's levels come from mult:
    # a wrong one crashed every command or made the load run for good).
    m = header.m
    if not (
        2 <= m <= 10_000
        and header.max_links == m
        and header.max_links0 == 2 * m
        and math.isclose(header.mult, 1 / math.log(m), rel_tol=1e-6)
        and header.ef_construction >= 1
    ):
        return "header.bin holds graph parameters (M, maxM, maxM0, mult) that do not agree"
    return None


def _levels(words: np.ndarray, header: Header) -> tuple[np.ndarray, np.ndarray] | str:
    """Each element's level and the word where its link lists start (-1: none), walking
    link_lists.bin: per element a size in bytes, then that many. Most elements have no level
    above 0 (a size of 0), so runs of zero words are stepped over at once."""
    size_words = [int(w) for w in np.flatnonzero(words)]
    levels = np.zeros(header.count, dtype=np.int64)
    starts = np.full(header.count, -1, dtype=np.int64)
    per_level = header.level_words
    element, at = 0, 0
    while True:
        k = bisect.bisect_left(size_words, at)
        nonzero = size_words[k] if k < len(size_words) else len(words)
        element += nonzero - at  # each zero word: an element without upper levels
        if element >= header.count:
            return levels, starts
        if nonzero >= len(words):
            return "link_lists.bin ends before its last vector"
        size = int(words[nonzero])
        if size % (4 * per_level) or size > 4 * per_level * header.max_level:
            return f"link_lists.bin holds a link list of {size} bytes"
        levels[element] = size // (4 * per_level)
        starts[element] = nonzero + 1
        element, at = element + 1, nonzero + 1 + size // 4
        if at > len(words):
            return "link_lists.bin ends inside a link list"


def _upper_damage(file: Path, header: Header) -> str | None:
    """Links above level 0: each to an element that exists at that level; the entry point at
    the top level (Chroma's search starts there and follows them without checking)."""
    words = np.fromfile(file, dtype="<u4")
    found = _levels(words, header)
    if isinstance(found, str):
        return found
    levels, starts = found
    if header.entry >= header.count or levels[header.entry] != header.max_level:
        return f"its entry point is not an element at the top level ({header.max_level})"
    upper = np.flatnonzero(levels)  # elements with lists above level 0
    if not len(upper):
        return None
    lists = levels[upper]
    owners = np.repeat(upper, lists)  # one row per (element, level above 0)
    before = np.repeat(np.cumsum(lists) - lists, lists)  # rows of the elements before it
    level = np.arange(len(owners)) - before + 1
    first = starts[owners] + (level - 1) * header.level_words
    counts = words[first] & 0xFFFF
    if counts.max() > header.max_links:
        return "link_lists.bin holds more links than an element may have"
    slots = np.arange(1, header.level_words)
    links = words[first[:, None] + slots].astype(np.int64)
    used = slots[None, :] <= counts[:, None]
    if (used & (links >= header.count)).any():
        return "link_lists.bin links to elements that do not exist"
    if (used & (levels[np.minimum(links, header.count - 1)] < level[:, None])).any():
        return "link_lists.bin links to elements below the level linked"
    return None


def _blocks(file: Path, header: Header, every: bool) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The elements read, and their bytes a row each: all of them in blocks (``every``), or a
    sample and the entry point."""
    rows = np.memmap(file, dtype=np.uint8, mode="r", shape=(header.count, header.per_element))
    if every:
        for start in range(0, header.count, _BLOCK):
            stop = min(start + _BLOCK, header.count)
            yield np.arange(start, stop), np.asarray(rows[start:stop])
    else:
        sample = np.linspace(0, header.count - 1, min(header.count, SAMPLE)).astype(np.int64)
        picked = np.union1d(sample, [header.entry])
        yield picked, np.asarray(rows[picked])


def _level0_damage(
    folder: Path, header: Header, *, thorough: bool, unit: bool, labels_up_to: int | None
) -> str | None:
    """Of every element when ``thorough`` or the index is small, else of a sample: level-0
    links (a count up to maxM0, each to an element that exists), labels (from 1, none above
    ``labels_up_to``, no two alike where every element is read) and, in a cosine index,
    unit-length vectors with their recorded lengths (Chroma scales a vector it returns by
    it): a zero vector stays zero with length 0, any other has a finite length above 0."""
    recorded = np.fromfile(folder / "length.bin", dtype="<f4", count=header.count)
    every = header.reads_every(thorough)
    seen: list[np.ndarray] = []
    for picked, block in _blocks(folder / "data_level0.bin", header, every):
        words = block[:, header.level0 : header.links0_end].copy().view("<u4")
        counts = words[:, 0] & 0xFFFF
        if counts.max() > header.max_links0:
            return "data_level0.bin holds more links than an element may have"
        used = np.arange(1, words.shape[1])[None, :] <= counts[:, None]
        if (used & (words[:, 1:] >= header.count)).any():
            return "data_level0.bin links to elements that do not exist"
        labels = block[:, header.label : header.label + 8].copy().view("<u8").ravel()
        if labels.min() < 1 or (labels_up_to is not None and labels.max() > labels_up_to):
            return "data_level0.bin holds labels Chroma never gave"
        seen.append(labels)
        if unit:
            wrong = _lengths_damage(block[:, header.vector : header.label], recorded[picked])
            if wrong:
                return wrong
    if every and seen and len(np.unique(np.concatenate(seen))) < header.count:
        return "data_level0.bin gives two elements one label"
    return None


def _lengths_damage(vectors: np.ndarray, recorded: np.ndarray) -> str | None:
    values = vectors.copy().view("<f4")
    lengths = np.sqrt(np.einsum("ij,ij->i", values, values, dtype=np.float64))
    zero = lengths == 0
    if not (zero | (np.abs(lengths - 1.0) <= _UNIT)).all():
        return "data_level0.bin holds vectors that are not of unit length"
    kept = np.where(zero, recorded == 0, np.isfinite(recorded) & (recorded > 0))
    if not kept.all():
        return "length.bin holds lengths that do not fit the vectors"
    return None
