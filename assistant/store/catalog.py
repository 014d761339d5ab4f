"""The catalog: a small SQLite file beside the vectors that records which papers the store holds.

It is the ingest journal. A paper is written as ``pending`` before its vectors go to Chroma and
turns ``ready`` only after they are there; removal goes through ``deleting``. Search shows only
``ready`` papers, and the next ingest finishes or undoes whatever a crash left half done, so the
store never shows a paper twice or a paper without its vectors. It also holds the full abstracts
(the BM25 index is rebuilt from it) and a generation counter that tells when that index is stale.
The counter moves in the same transaction as every change to the papers, so whatever point a
crash stops a run at, an index stamped with the current generation was built from exactly the
papers the catalog now calls ready.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from pathlib import Path

from assistant.errors import StoreError
from assistant.ingest.chunking import Chunk
from assistant.ingest.corpus import Paper
from assistant.store.diskspace import first_unwritable

_SCHEMA = """
CREATE TABLE IF NOT EXISTS papers (
    paper_id TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    source TEXT NOT NULL,
    source_file TEXT NOT NULL,
    label TEXT NOT NULL,
    title TEXT,
    authors TEXT NOT NULL DEFAULT '[]',
    year INTEGER,
    venue TEXT,
    url TEXT,
    doi TEXT,
    abstract TEXT NOT NULL,
    n_chunks INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'ready', 'deleting')),
    changed_at INTEGER NOT NULL DEFAULT 0,
    terms TEXT
);
CREATE INDEX IF NOT EXISTS papers_state ON papers(state);
CREATE TABLE IF NOT EXISTS chunks (
    chunk_id TEXT PRIMARY KEY,
    paper_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_paper ON chunks(paper_id);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS removed (paper_id TEXT NOT NULL, changed_at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS removed_changed ON removed(changed_at);
"""
# Each paper row records the generation that last wrote its text or state (``changed_at``), and
# removals leave a row in ``removed``: what changed since an index was built is read off these.
_CHANGES = "CREATE INDEX IF NOT EXISTS papers_changed ON papers(changed_at)"
_GENERATION = "COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'generation'), 0)"
CATALOG_FILE = "catalog.sqlite3"
_PAPER_COLUMNS = "paper_id, source, label, abstract, title, authors, year, venue, url, doi"
_MAX_VARS = 900  # stay under SQLite's bound on query parameters
# The store's format, in meta ``format``: 2 journals vector writes (``vectors_writing``) and
# rebuilds an unreadable vector index in a new folder. A store without the row is older and is
# upgraded in place when opened; one with a larger number is refused, never written.
FORMAT = 2


def _batches(items: Sequence[str], size: int = _MAX_VARS) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _row_to_paper(row: sqlite3.Row) -> Paper:
    return Paper(
        paper_id=row["paper_id"],
        source=row["source"],
        label=row["label"],
        abstract=row["abstract"],
        title=row["title"],
        authors=tuple(json.loads(row["authors"])),
        year=row["year"],
        venue=row["venue"],
        url=row["url"],
        doi=row["doi"],
    )


class CatalogDamaged(Exception):
    """The catalog file is not a readable SQLite database; ``reason`` says what is wrong."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class StoreFormatError(StoreError):
    """The store was written by a newer version of the assistant."""


class Catalog:
    def __init__(self, path: Path, *, empty_is_new: bool = True):
        """Open (or create) the catalog. A 0-byte file is a new catalog only when
        ``empty_is_new``; the caller says False when the store holds vectors or an index, so a
        catalog truncated to nothing is reported, not silently taken for an empty store."""
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()  # one connection per thread (SQLite's rule)
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        if not empty_is_new and path.exists() and path.stat().st_size == 0:
            raise CatalogDamaged(path, "the file is empty (0 bytes)")
        try:
            self._refuse_newer()
            self._db.executescript(_SCHEMA)
            self._track_changes()
            if self.get_meta("format") != str(FORMAT):
                self.set_meta("format", str(FORMAT))
            verdict = self._db.execute("PRAGMA quick_check(1)").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            self.close()
            unwritable = first_unwritable((path.parent, path))
            if unwritable is not None:  # not damage: SQLite writes beside it even to read
                raise StoreError(
                    f"cannot open the store in {path.parent}: {unwritable} is not writable by "
                    "this user, and SQLite writes beside the catalog even to read; make it "
                    "writable (chmod -R u+w) or copy the store to a folder you can write"
                ) from exc
            raise CatalogDamaged(path, str(exc)) from exc
        if verdict != "ok":
            self.close()
            raise CatalogDamaged(path, f"integrity check failed: {verdict}")

    def _refuse_newer(self) -> None:
        """Before anything is written: a store of a newer format is refused in one line."""
        known = self._db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
        ).fetchone()
        found = self.get_meta("format") if known else None
        if found is not None and (not found.isdigit() or int(found) > FORMAT):
            self.close()
            raise StoreFormatError(
                f"the store in {self.path.parent} has format {found}, written by a newer version "
                f"of the assistant (this one reads format {FORMAT} and older); upgrade the "
                "assistant (`pip install -U abstracts-assistant`) to use it"
            )

    def _track_changes(self) -> None:
        """Give a catalog from before change tracking its ``changed_at`` column, and record
        from which generation on changes are known (an index older than that is rebuilt)."""
        columns = {r[1] for r in self._db.execute("PRAGMA table_info(papers)")}
        if "doi" not in columns:  # a catalog from before DOIs were kept: none are known
            self._db.execute("ALTER TABLE papers ADD COLUMN doi TEXT")
        if {"changed_at", "terms"} <= columns and self.get_meta("changes_from") is not None:
            return
        with self._transaction() as cur:
            if "changed_at" not in columns:
                cur.execute("ALTER TABLE papers ADD COLUMN changed_at INTEGER NOT NULL DEFAULT 0")
            if "terms" not in columns:
                cur.execute("ALTER TABLE papers ADD COLUMN terms TEXT")
            cur.execute(_CHANGES)
            cur.execute(
                f"INSERT OR IGNORE INTO meta(key, value) SELECT 'changes_from', {_GENERATION}"
            )

    @property
    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(
                self.path, isolation_level=None, timeout=30, check_same_thread=False
            )
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            self._local.db = db
            with self._lock:
                self._all.append(db)
        return db

    def close(self) -> None:
        with self._lock:
            for db in self._all:
                db.close()
            self._all.clear()
        self._local = threading.local()

    # -- meta -------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    def switch_meta(self, values: Mapping[str, str | None]) -> None:
        """Set these meta keys (None: remove) in one transaction that also bumps the
        generation: readers open what the keys name again."""
        with self._transaction() as cur:
            for key, value in values.items():
                if value is None:
                    cur.execute("DELETE FROM meta WHERE key = ?", (key,))
                else:
                    cur.execute(
                        "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value)
                    )
            self.bump_generation(cur)

    @property
    def generation(self) -> int:
        return int(self.get_meta("generation") or 0)

    def bump_generation(self, cur: sqlite3.Cursor | None = None) -> None:
        """Mark every derived index stale; inside the caller's transaction when given one."""
        (cur or self._db).execute(
            "INSERT INTO meta(key, value) VALUES ('generation', '1') ON CONFLICT(key) "
            "DO UPDATE SET value = CAST(value AS INTEGER) + 1"
        )

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Cursor]:
        """One write transaction: committed whole, or rolled back whole (a full disk included),
        never left open on the connection."""
        with closing(self._db.cursor()) as cur:
            cur.execute("BEGIN IMMEDIATE")
            try:
                yield cur
                cur.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    cur.execute("ROLLBACK")
                raise

    # -- journal ----------------------------------------------------------------------------
    def states(self, paper_ids: Sequence[str] | None = None) -> dict[str, tuple[str, str, int]]:
        """paper_id -> (fingerprint, state, n_chunks) for every paper the catalog knows, or for
        those of ``paper_ids`` it knows."""
        sql = "SELECT paper_id, fingerprint, state, n_chunks FROM papers"
        if paper_ids is None:
            return {r[0]: (r[1], r[2], r[3]) for r in self._db.execute(sql)}
        found: dict[str, tuple[str, str, int]] = {}
        for batch in _batches(list(paper_ids)):
            marks = ",".join("?" * len(batch))
            rows = self._db.execute(f"{sql} WHERE paper_id IN ({marks})", tuple(batch))
            found.update({r[0]: (r[1], r[2], r[3]) for r in rows})
        return found

    def unfinished(self) -> dict[str, tuple[str, str, int]]:
        """states() of the papers that are not ready (by the state index)."""
        rows = self._db.execute(
            "SELECT paper_id, fingerprint, state, n_chunks FROM papers WHERE state != 'ready'"
        )
        return {r[0]: (r[1], r[2], r[3]) for r in rows}

    def update_in_place(self, papers: Sequence[Paper]) -> None:
        """Rewrite the record of papers whose title and abstract (so chunks and vectors) are
        unchanged: position, label, authors, year, venue, URL, and the fingerprint, which may be
        of an older kind. Nothing derived from the text goes stale, but what readers resolve
        filters from does (a year edited), so the generation moves."""
        if not papers:
            return
        rows = [
            (
                p.fingerprint,
                p.source,
                p.source_file,
                p.label,
                json.dumps(list(p.authors)),
                p.year,
                p.venue,
                p.url,
                p.doi,
                p.paper_id,
            )
            for p in papers
        ]
        with self._transaction() as cur:
            cur.executemany(
                "UPDATE papers SET fingerprint = ?, source = ?, source_file = ?, label = ?, "
                "authors = ?, year = ?, venue = ?, url = ?, doi = ? WHERE paper_id = ?",
                rows,
            )
            self.bump_generation(cur)

    def mark_pending(
        self, items: Iterable[tuple[Paper, list[Chunk]]], terms: Mapping[str, str] | None = None
    ) -> None:
        """Record papers and their chunks as about to be written (one transaction), with each
        paper's analysed terms (space-separated) when given: what lexical indexes are built of."""
        with self._transaction() as cur:
            for paper, chunks in items:
                cur.execute("DELETE FROM chunks WHERE paper_id = ?", (paper.paper_id,))
                cur.execute(
                    "INSERT OR REPLACE INTO papers(paper_id, fingerprint, source, source_file, "
                    "label, title, authors, year, venue, url, doi, abstract, n_chunks, terms, "
                    "state, changed_at) "
                    f"VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?, 'pending', {_GENERATION} + 1)",
                    (
                        paper.paper_id,
                        paper.fingerprint,
                        paper.source,
                        paper.source_file,
                        paper.label,
                        paper.title,
                        json.dumps(list(paper.authors)),
                        paper.year,
                        paper.venue,
                        paper.url,
                        paper.doi,
                        paper.abstract,
                        len(chunks),
                        (terms or {}).get(paper.paper_id),
                    ),
                )
                cur.executemany(
                    "INSERT INTO chunks(chunk_id, paper_id, idx, text) VALUES (?,?,?,?)",
                    [(c.chunk_id, c.paper_id, c.index, c.text) for c in chunks],
                )
            self.bump_generation(cur)

    def replace_all(
        self,
        papers: Iterable[tuple[Paper, str, str, int]],
        chunks: Iterable[Chunk],
        meta: Mapping[str, str],
    ) -> None:
        """Make the catalog a copy of another journal (a Chroma server's): every paper, given as
        (paper, fingerprint, state, n_chunks), every chunk and these meta values, replaced in
        one transaction that moves the generation."""
        with self._transaction() as cur:
            cur.execute("DELETE FROM chunks")
            cur.execute("DELETE FROM papers")
            cur.execute("DELETE FROM removed")
            self.bump_generation(cur)
            cur.executemany(
                "INSERT INTO papers(paper_id, fingerprint, source, source_file, label, title, "
                "authors, year, venue, url, doi, abstract, n_chunks, state, changed_at) "
                f"VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?, {_GENERATION})",
                [
                    (
                        p.paper_id,
                        fingerprint,
                        p.source,
                        p.source_file,
                        p.label,
                        p.title,
                        json.dumps(list(p.authors)),
                        p.year,
                        p.venue,
                        p.url,
                        p.doi,
                        p.abstract,
                        n_chunks,
                        state,
                    )
                    for p, fingerprint, state, n_chunks in papers
                ],
            )
            cur.executemany(
                "INSERT INTO chunks(chunk_id, paper_id, idx, text) VALUES (?,?,?,?)",
                [(c.chunk_id, c.paper_id, c.index, c.text) for c in chunks],
            )
            cur.executemany(
                "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", list(meta.items())
            )

    def set_state(self, paper_ids: Sequence[str], state: str) -> None:
        with self._transaction() as cur:
            self.bump_generation(cur)
            for batch in _batches(paper_ids):
                marks = ",".join("?" * len(batch))
                cur.execute(
                    f"UPDATE papers SET state = ?, changed_at = {_GENERATION} "
                    f"WHERE paper_id IN ({marks})",
                    (state, *batch),
                )

    def remove(self, paper_ids: Sequence[str]) -> None:
        with self._transaction() as cur:
            self.bump_generation(cur)
            for batch in _batches(paper_ids):
                marks = ",".join("?" * len(batch))
                cur.execute(
                    f"INSERT INTO removed(paper_id, changed_at) SELECT paper_id, {_GENERATION} "
                    f"FROM papers WHERE paper_id IN ({marks})",
                    tuple(batch),
                )
                cur.execute(f"DELETE FROM chunks WHERE paper_id IN ({marks})", tuple(batch))
                cur.execute(f"DELETE FROM papers WHERE paper_id IN ({marks})", tuple(batch))

    # -- changes since an index was built ----------------------------------------------------
    def hidden_since(self, generation: int) -> set[str]:
        """Ids an index built at ``generation`` may hold that are no longer ready as they were
        then: rewritten, unfinished or removed since."""
        hidden = {
            r[0]
            for r in self._db.execute(
                "SELECT paper_id FROM papers WHERE changed_at > ?", (generation,)
            )
        }
        hidden.update(
            r[0] for r in self._db.execute("SELECT paper_id FROM papers WHERE state != 'ready'")
        )
        hidden.update(
            r[0]
            for r in self._db.execute(
                "SELECT paper_id FROM removed WHERE changed_at > ?", (generation,)
            )
        )
        return hidden

    def forget_removals(self, upto: int) -> None:
        """Drop removal records an index built at generation ``upto`` already reflects."""
        self._db.execute("DELETE FROM removed WHERE changed_at <= ?", (upto,))

    # -- reads ------------------------------------------------------------------------------
    def papers(self, paper_ids: Sequence[str]) -> dict[str, Paper]:
        """Ready papers by id (ids that are not ready are left out)."""
        found: dict[str, Paper] = {}
        for batch in _batches(list(paper_ids)):
            marks = ",".join("?" * len(batch))
            # "+state": look the ids up by primary key; on the state index SQLite would scan
            # every ready paper.
            rows = self._db.execute(
                f"SELECT {_PAPER_COLUMNS} FROM papers WHERE paper_id IN ({marks}) "
                "AND +state = 'ready'",
                tuple(batch),
            )
            found.update({r["paper_id"]: _row_to_paper(r) for r in rows})
        return found

    def chunk_texts(self, chunk_ids: Sequence[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for batch in _batches(list(chunk_ids)):
            marks = ",".join("?" * len(batch))
            rows = self._db.execute(
                f"SELECT chunk_id, text FROM chunks WHERE chunk_id IN ({marks})", tuple(batch)
            )
            found.update({r[0]: r[1] for r in rows})
        return found

    def ready_chunk_ids(self) -> dict[str, set[str]]:
        """paper_id -> the ids its chunk vectors must have, for every ready paper."""
        rows = self._db.execute(
            "SELECT p.paper_id, c.chunk_id FROM papers p LEFT JOIN chunks c "
            "ON c.paper_id = p.paper_id WHERE p.state = 'ready'"
        )
        expected: dict[str, set[str]] = {}
        for paper_id, chunk_id in rows:
            ids = expected.setdefault(paper_id, set())
            if chunk_id is not None:
                ids.add(chunk_id)
        return expected

    def chunks_of(self, paper_id: str) -> list[str]:
        rows = self._db.execute(
            "SELECT text FROM chunks WHERE paper_id = ? ORDER BY idx", (paper_id,)
        )
        return [r[0] for r in rows]

    def iter_ready(self) -> Iterator[Paper]:
        rows = self._db.execute(
            f"SELECT {_PAPER_COLUMNS} FROM papers WHERE state = 'ready' ORDER BY rowid"
        )
        for row in rows:
            yield _row_to_paper(row)

    def iter_terms(self, since: int | None = None) -> Iterator[tuple[str, str | None, Paper]]:
        """(paper_id, analysed terms or None when not recorded, paper) for every ready paper,
        or for those written after generation ``since``."""
        sql = f"SELECT {_PAPER_COLUMNS}, terms FROM papers WHERE state = 'ready'"
        rows = (
            self._db.execute(sql + " ORDER BY rowid")
            if since is None
            else self._db.execute(sql + " AND changed_at > ?", (since,))
        )
        for row in rows:
            yield row["paper_id"], row["terms"], _row_to_paper(row)

    def filter_rows(self) -> list[tuple[str, str, int | None, str | None, str, int]]:
        """(paper_id, authors JSON, year, venue, source_file, n_chunks) of every ready paper:
        what filters read, without the texts (``assistant.store.filtered`` keeps them)."""
        rows = self._db.execute(
            "SELECT paper_id, authors, year, venue, source_file, n_chunks FROM papers "
            "WHERE state = 'ready'"
        )
        return [tuple(r) for r in rows]

    def ids_matching(self, filters: Mapping[str, str | int | tuple[str, ...]]) -> set[str]:
        """Ready paper ids whose metadata equals every filter; a tuple value means any of.
        ``author``, ``title`` and ``doi`` match as ``assistant.store.filters`` says (functions
        registered with SQLite), ``year_min`` and ``year_max`` are bounds."""
        from assistant.store import filters as match

        allowed = {"source_file", "year", "source", "label", "paper_id"}
        functions = {
            "venue": ("venue_is", "venue", 2, match.same_venue),
            "author": ("author_has", "authors", 2, match.authors_json_match),
            "title": ("title_has", "title", 2, match.has_words),
            "doi": ("doi_is", "doi", 2, match.same_doi),
        }
        bounds = {"year_min": "year >= ?", "year_max": "year <= ?"}
        unknown = set(filters) - allowed - set(functions) - set(bounds)
        if unknown:
            known = sorted(allowed | set(functions) | set(bounds))
            raise ValueError(f"cannot filter on {sorted(unknown)}; use one of {known}")
        clauses: list[str] = ["state = 'ready'"]
        params: list[str | int] = []
        for key, value in filters.items():
            if key in functions:
                name, column, arity, test = functions[key]
                self._db.create_function(name, arity, test, deterministic=True)
                clauses.append(f"{name}({column}, ?)")
                params.append(str(value))
            elif key in bounds:
                clauses.append(bounds[key])
                params.append(value)  # type: ignore[arg-type]
            elif isinstance(value, tuple):
                clauses.append(f"{key} IN ({','.join('?' * len(value))})")
                params.extend(value)
            else:
                clauses.append(f"{key} = ?")
                params.append(value)
        sql = "SELECT paper_id FROM papers WHERE " + " AND ".join(clauses)
        return {r[0] for r in self._db.execute(sql, params)}

    def has_ready(self) -> bool:
        """At least one paper is searchable (one indexed row, not a count of the table)."""
        return (
            self._db.execute("SELECT 1 FROM papers WHERE state = 'ready' LIMIT 1").fetchone()
            is not None
        )

    def counts(self) -> dict[str, int]:
        papers = self._db.execute(
            "SELECT COUNT(*), COALESCE(SUM(n_chunks), 0) FROM papers WHERE state = 'ready'"
        ).fetchone()
        unfinished = self._db.execute(
            "SELECT COUNT(*) FROM papers WHERE state != 'ready'"
        ).fetchone()[0]
        return {"papers": papers[0], "chunks": papers[1], "unfinished": unfinished}
