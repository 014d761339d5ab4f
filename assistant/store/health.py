"""A store checks itself: the catalog's ready papers against the chunk vectors, the sentence
vectors and the lexical index. ``assistant info`` prints what disagrees (``--check`` exits 1),
``ingest`` re-embeds papers whose vectors are gone and drops vectors of papers it does not hold.

Also here: moving a damaged store aside for ``ingest --rebuild`` (renamed, nothing deleted).
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from assistant.ingest.chunking import sentences_of
from assistant.store.base import paper_of
from assistant.store.catalog import CATALOG_FILE, Catalog
from assistant.store.read_copy import COPY_FILE

if TYPE_CHECKING:
    from assistant.store.vector_index import VectorIndex

# What a store folder holds besides the writer lock, which stays where it is.
STORE_PARTS = (
    CATALOG_FILE,
    f"{CATALOG_FILE}-wal",
    f"{CATALOG_FILE}-shm",
    "chroma",
    "bm25",
    COPY_FILE,
)


@dataclass
class VectorGaps:
    """Where the vectors disagree with the catalog."""

    missing: set[str] = field(default_factory=set)  # ready papers some of whose vectors are gone
    orphan_chunks: list[str] = field(default_factory=list)  # vectors of papers not in the catalog
    orphan_sentences: list[str] = field(default_factory=list)


def vector_gaps(catalog: Catalog, chunks: VectorIndex, sentences: VectorIndex | None) -> VectorGaps:
    """Compare every ready paper's expected vector ids with those the collections hold."""
    expected = catalog.ready_chunk_ids()
    known = set(catalog.states())  # pending papers' vectors belong to a run, not to nobody
    gaps = VectorGaps()
    held = set(chunks.ids())
    gaps.missing = {pid for pid, ids in expected.items() if not ids <= held}
    gaps.orphan_chunks = sorted(v for v in held if paper_of(v) not in known)
    if sentences is None:
        return gaps
    by_paper: dict[str, set[str]] = defaultdict(set)
    for vector_id in sentences.ids():
        by_paper[paper_of(vector_id)].add(vector_id)
    bare: list[str] = []
    for pid in expected:
        held_sentences = by_paper.get(pid, set())
        if not held_sentences:
            bare.append(pid)
        elif held_sentences != {f"{pid}:s{i}" for i in range(len(held_sentences))}:
            gaps.missing.add(pid)
    # A paper with no sentence vectors is missing them, unless it has no sentences at all.
    gaps.missing.update(p.paper_id for p in catalog.papers(bare).values() if sentences_of(p))
    gaps.orphan_sentences = sorted(
        v for pid, ids in by_paper.items() if pid not in known for v in ids
    )
    return gaps


@dataclass
class Health:
    """What ``assistant info`` reports about a store's consistency."""

    papers: int
    unfinished: int
    gaps: VectorGaps
    lexical_missing: int  # ready papers the lexical index lacks
    lexical_extra: int  # papers in the lexical index that are not ready

    def problems(self, flags: str = "") -> list[str]:
        """One line per disagreement, each saying what fixes it (``flags``: what points a
        command at this store); empty when consistent."""
        repair = f"`assistant ingest --repair{flags}`"
        out: list[str] = []
        if self.gaps.missing:
            out.append(
                f"{len(self.gaps.missing)} of {self.papers} papers have lost vectors; "
                f"{repair} re-embeds them"
            )
        orphans = len(self.gaps.orphan_chunks) + len(self.gaps.orphan_sentences)
        if orphans:
            out.append(
                f"{orphans} vectors belong to no paper in the catalog; {repair} removes them"
            )
        if self.unfinished:
            out.append(
                f"{self.unfinished} papers are unfinished (an ingest is running or was "
                f"interrupted); running that ingest again (`assistant ingest PATHS{flags}`) "
                f"finishes them, {repair} takes them out"
            )
        if self.lexical_missing or self.lexical_extra:
            out.append(
                f"the lexical index lacks {self.lexical_missing} ready papers and holds "
                f"{self.lexical_extra} others; it is rebuilt on the next search"
            )
        return out


def examine(
    catalog: Catalog,
    chunks: VectorIndex,
    sentences: VectorIndex | None,
    lexical_ids: Iterable[str],
) -> Health:
    counts = catalog.counts()
    ready = set(catalog.ready_chunk_ids())
    lexical = set(lexical_ids)
    return Health(
        papers=counts["papers"],
        unfinished=counts["unfinished"],
        gaps=vector_gaps(catalog, chunks, sentences),
        lexical_missing=len(ready - lexical),
        lexical_extra=len(lexical - ready),
    )


def move_aside(store_dir: Path) -> Path | None:
    """Move the store's files to a new sibling folder ``NAME.damaged-TIME``, nothing deleted;
    the writer lock stays. Returns the folder, or None when there was nothing to move."""
    parts = [store_dir / name for name in STORE_PARTS if (store_dir / name).exists()]
    if not parts:
        return None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = store_dir.with_name(f"{store_dir.name}.damaged-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = store_dir.with_name(f"{store_dir.name}.damaged-{stamp}-{n}")
    target.mkdir(parents=True)
    for part in parts:
        os.replace(part, target / part.name)
    return target
