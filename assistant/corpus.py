"""Reading abstracts into typed ``Paper`` records.

Formats: the seed format (first line a header, then one abstract per blank-line-separated
paragraph), JSONL and CSV with an ``abstract`` field plus optional ``id``, ``title``, ``authors``,
``year``, ``url``, ``venue``. A folder is read file by file. A bad file or row is reported, never
fatal to the rest of the batch.
"""

from __future__ import annotations

import codecs
import csv
import itertools
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assistant.errors import InputFileError
from assistant.labels import derive_label
from assistant.text import content_key, fingerprint, normalize_text

SUFFIXES = {".txt": "seed", ".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}
_OPTIONAL = ("title", "authors", "year", "url", "venue")
_POSITION = {"seed": "abstract", "jsonl": "line", "csv": "row"}  # what "#3" counts, per format


@dataclass(frozen=True)
class Paper:
    """One abstract and what we know about it."""

    paper_id: str
    source: str  # "file.txt#3": file name and 1-based position within it
    label: str  # the title, or a short name derived from the abstract
    abstract: str
    title: str | None = None
    authors: tuple[str, ...] = ()
    year: int | None = None
    venue: str | None = None
    url: str | None = None

    @property
    def source_file(self) -> str:
        return self.source.rsplit("#", 1)[0]

    @property
    def text_for_index(self) -> str:
        """What retrieval sees: the title (when there is one) and the abstract."""
        return f"{self.title}. {self.abstract}" if self.title else self.abstract

    @property
    def fingerprint(self) -> str:
        """What was embedded: the title and abstract, nothing else. Not the position in a file
        (inserting a line above must not re-embed it), not the metadata, not the label (derived
        from title and abstract): a change in any of those is written in place, unembedded."""
        return fingerprint(self.title or "", self.abstract)

    @property
    def location(self) -> str:
        """Where the abstract came from, readably: '004_cebd1b31328fe8e6.txt, abstract 2'."""
        name, sep, position = self.source.rpartition("#")
        kind = SUFFIXES.get(Path(name).suffix.lower(), "")
        if not sep or not position.isdigit() or kind not in _POSITION:
            return self.source
        return f"{name}, {_POSITION[kind]} {position}"

    @property
    def reference(self) -> str:
        """How a reader finds the paper: its URL when known, else where its abstract is."""
        return self.url or self.location

    def author_names(self, limit: int | None = None) -> str:
        """'A, B and C'; past ``limit`` names, 'A, B et al.'; '' when none are recorded."""
        names = list(self.authors)
        if not names:
            return ""
        if limit is not None and len(names) > limit:
            return ", ".join(names[:limit]) + " et al."
        return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]

    @property
    def byline(self) -> str:
        """'A, B and C · 2024 · NeurIPS': what is known besides the title ('' if nothing)."""
        parts = [self.author_names(limit=6), str(self.year or ""), self.venue or ""]
        return " · ".join(p for p in parts if p)

    def bibliographic(self) -> dict[str, Any]:
        """Title, authors, year, venue and URL for JSON output; null or empty when unknown."""
        return {
            "title": self.title,
            "authors": list(self.authors),
            "year": self.year,
            "venue": self.venue,
            "url": self.url,
        }

    def metadata(self) -> dict[str, str | int]:
        """Flat metadata for the vector store (no None values: Chroma rejects them): the fields
        a search filters on. What is shown comes from the catalog."""
        meta: dict[str, str | int] = {"paper_id": self.paper_id, "source_file": self.source_file}
        if self.year is not None:
            meta["year"] = self.year
        if self.venue:
            meta["venue"] = self.venue
        return meta


@dataclass
class LoadResult:
    """Papers to ingest and what reading them found. Built in memory (``papers``), or read from
    files as a stream (``source``, see ``stream_corpus``), as often as it is iterated."""

    papers: list[Paper] = field(default_factory=list)
    problems: list[InputFileError] = field(default_factory=list)
    duplicates: int = 0
    files: list[Path] = field(default_factory=list)
    headers: list[str] = field(default_factory=list)  # first lines of seed files
    warnings: list[str] = field(default_factory=list)  # abstracts cut to the size limit
    source: Callable[[], Iterator[Paper]] | None = field(default=None, repr=False)
    _seen: set[str] = field(default_factory=set, repr=False)

    def add(self, paper: Paper) -> None:
        """Keep the paper unless one with the same id is already here (then count it)."""
        if self.keep(paper):
            self.papers.append(paper)

    def keep(self, paper: Paper) -> bool:
        """False (and counted) when a paper with the same id came before."""
        if paper.paper_id in self._seen:
            self.duplicates += 1
            return False
        self._seen.add(paper.paper_id)
        return True

    def reset(self) -> None:
        """Forget what the last pass over the files found (a new pass finds it again)."""
        self.problems, self.files, self.headers, self.warnings = [], [], [], []
        self.duplicates = 0
        self._seen = set()

    def stream(self) -> Iterator[Paper]:
        """The papers, from the files when there are files, else from memory."""
        return self.source() if self.source is not None else iter(self.papers)


def _readable(abstract: str) -> str:
    """The abstract without LaTeX markup, where names hide (``\\textbf{\\textit{Prior
    Guidance}}``); pylatexenc is imported only for abstracts that may hold markup."""
    if "\\" not in abstract and "$" not in abstract:
        return abstract
    from assistant.latex import latex_to_text

    # Text that is all markup reads as nothing ("\\iÀ", found by the fuzz test): the label
    # then comes from the text as written.
    return latex_to_text(abstract).strip() or abstract


def make_paper(record: dict[str, Any], source: str) -> Paper:
    """A Paper from one raw record; raises ValueError naming what is wrong."""
    raw = record.get("abstract")
    if raw is None:
        raise ValueError("no 'abstract' field")
    if not isinstance(raw, str):
        raise ValueError(f"'abstract' is not text: {raw!r:.60}")
    abstract = normalize_text(raw)
    if not abstract:
        raise ValueError("empty 'abstract'")
    title = normalize_text(str(record.get("title") or "")) or None
    raw_id = record.get("id")
    given_id = str(raw_id).strip() if raw_id is not None else ""
    paper_id = given_id or content_key(abstract)  # a blank id ("\r") is no id
    authors = record.get("authors") or ()
    if isinstance(authors, str):
        authors = [a.strip() for a in re.split(r";|, (?=[A-Z])| and ", authors) if a.strip()]
    elif not isinstance(authors, list | tuple):
        raise ValueError(f"'authors' is neither a list nor a ';'-separated string: {authors!r}")
    year = record.get("year")
    try:
        year_int = int(str(year).strip()) if year not in (None, "") else None
    except ValueError as exc:
        raise ValueError(f"'year' is not a number: {year!r}") from exc
    return Paper(
        paper_id=paper_id,
        source=source,
        label=title or derive_label(_readable(abstract)),
        abstract=abstract,
        title=title,
        authors=tuple(str(a) for a in authors),
        year=year_int,
        venue=(str(record["venue"]).strip() or None) if record.get("venue") else None,
        url=(str(record["url"]).strip() or None) if record.get("url") else None,
    )


def _cut(record: dict[str, Any], max_chars: int | None, where: str) -> str | None:
    """Cut the record's abstract to ``max_chars`` (at the last space within it, when there is
    one) before any other work on it; the warning to show, or None when it fits."""
    raw = record.get("abstract")
    if max_chars is None or not isinstance(raw, str) or len(raw) <= max_chars:
        return None
    cut = raw[:max_chars]
    space = cut.rfind(" ", max_chars // 2)
    record["abstract"] = cut[:space] if space > 0 else cut
    return (
        f"{where}: abstract is {len(raw):,} characters, over the limit of {max_chars:,}; "
        f"only its first {len(record['abstract']):,} are indexed "
        "(ASSISTANT_CORPUS__MAX_ABSTRACT_CHARS sets the limit)"
    )


def _encoding(path: Path) -> str:
    """The encoding to read the file with, after checking all of it decodes (a pass over the
    bytes, a block at a time: nothing is held), or an InputFileError that says how to fix it."""
    if not path.exists():
        raise InputFileError(str(path), "no such file or folder; check the path")
    with path.open("rb") as handle:
        head = handle.read(8192)
        utf16 = head.startswith((b"\xff\xfe", b"\xfe\xff"))
        if b"\x00" in head and not utf16:
            raise InputFileError(
                str(path), "looks binary, not text; give a .txt, .jsonl or .csv file of abstracts"
            )
        encoding = "utf-16" if utf16 else "utf-8-sig"
        decoder = codecs.getincrementaldecoder(encoding)()
        offset, blank, block = 0, True, head
        while True:
            try:
                text = decoder.decode(block, final=not block)  # the last call: nothing left over
            except UnicodeDecodeError as exc:
                where = offset - len(decoder.getstate()[0]) + exc.start
                raise InputFileError(
                    str(path),
                    f"not valid UTF-8 (byte {where}); re-save it as UTF-8, "
                    f"e.g. iconv -f latin1 -t utf-8 {path.name} > fixed{path.suffix}",
                ) from exc
            blank = blank and not text.strip()
            if not block:
                break
            offset += len(block)
            block = handle.read(1 << 16)
    if blank:
        raise InputFileError(str(path), "file is empty; nothing to ingest")
    return encoding


# A seed file's header that names a venue and year: "NeurIPS 2025 Papers", "ICML 2024".
_VENUE_YEAR = re.compile(r"^\s*([A-Z][\w&-]*(?:\s+[A-Z][\w&-]*){0,3}?)\s+((?:19|20)\d{2})\b")


def seed_header_metadata(header: str) -> dict[str, Any]:
    """Venue and year that a seed file's header gives all its abstracts, when it gives them."""
    match = _VENUE_YEAR.match(header)
    return {"venue": match.group(1), "year": int(match.group(2))} if match else {}


def _seed_records(lines: Iterable[str], headers: list[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """One record per paragraph after the header line (paragraphs end at a line of nothing but
    spaces and tabs); the header goes to ``headers``."""
    shared: dict[str, Any] = {}
    paragraph: list[str] = []
    position = 0
    for number, line in enumerate(lines):
        line = line.rstrip("\n")
        if number == 0:
            headers.append(normalize_text(line.lstrip("\ufeff")))
            shared = seed_header_metadata(line)
        elif line.strip(" \t") or not paragraph:
            paragraph.append(line)
        else:
            if "".join(paragraph).strip():
                position += 1
                yield position, {"abstract": "\n".join(paragraph), **shared}
            paragraph = []
    if "".join(paragraph).strip():
        yield position + 1, {"abstract": "\n".join(paragraph), **shared}


def _jsonl_records(lines: Iterable[str]) -> Iterator[tuple[int, dict[str, Any] | str]]:
    for line_no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            yield line_no, f"line {line_no} is not valid JSON ({exc.msg})"
            continue
        if not isinstance(record, dict):
            yield line_no, f"line {line_no} is not a JSON object"
            continue
        yield line_no, record


def _csv_records(lines: Iterable[str], path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    reader = csv.DictReader(lines)
    columns = {c.strip().lower(): c for c in (reader.fieldnames or []) if c}
    if "abstract" not in columns:
        found = ", ".join(columns) or "none"
        raise InputFileError(
            str(path),
            f"no 'abstract' column (columns found: {found}); "
            "name the column that holds the abstract text 'abstract'",
        )
    for row_no, row in enumerate(reader, start=1):
        yield row_no, {key: row.get(original) for key, original in columns.items()}


def iter_file(
    path: Path,
    max_chars: int | None = None,
    warnings: list[str] | None = None,
    headers: list[str] | None = None,
) -> Iterator[Paper | InputFileError]:
    """Papers of one file, read as a stream, and the rows of it that could not be read, in file
    order. Abstracts longer than ``max_chars`` are cut, and a line saying so is added to
    ``warnings``; a seed file's header line goes to ``headers``. A file that cannot be read at
    all raises InputFileError before anything is yielded."""
    kind = SUFFIXES.get(path.suffix.lower())
    if kind is None and path.exists():
        raise InputFileError(
            str(path), f"unknown file type {path.suffix or '(none)'}; use .txt, .jsonl or .csv"
        )
    encoding = _encoding(path)
    with path.open(encoding=encoding, newline="" if kind == "csv" else None) as handle:
        rows: Iterable[tuple[int, dict[str, Any] | str]]
        if kind == "seed":
            rows = _seed_records(handle, headers if headers is not None else [])
        elif kind == "jsonl":
            rows = _jsonl_records(handle)
        else:
            rows = _csv_records(handle, path)
        found = False
        for position, record in rows:
            found = True
            if isinstance(record, str):
                yield InputFileError(f"{path}", record)
                continue
            note = _cut(record, max_chars, f"{path}:{position}")
            if note is not None and warnings is not None:
                warnings.append(note)
            try:
                yield make_paper(record, f"{path.name}#{position}")
            except ValueError as exc:
                yield InputFileError(f"{path}#{position}", f"{exc}; row skipped")
    if not found:
        raise InputFileError(
            str(path),
            "no abstracts found (expected a header line, then "
            "one abstract per paragraph, or JSONL/CSV with an 'abstract' field)",
        )


def load_file(
    path: Path, max_chars: int | None = None, warnings: list[str] | None = None
) -> tuple[list[Paper], list[InputFileError]]:
    """Papers of one file, and the rows of it that could not be read (see ``iter_file``)."""
    papers: list[Paper] = []
    problems: list[InputFileError] = []
    for item in iter_file(path, max_chars, warnings):
        if isinstance(item, InputFileError):
            problems.append(item)
        else:
            papers.append(item)
    return papers, problems


def expand_paths(paths: Iterable[Path]) -> Iterator[Path]:
    """Files named, and the readable files inside folders named, in a stable order."""
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.iterdir() if p.suffix.lower() in SUFFIXES)
        else:
            yield path


def load_corpus(paths: Iterable[Path], max_chars: int | None = None) -> LoadResult:
    """Every paper from every path, in memory (see ``stream_corpus``)."""
    result = stream_corpus(paths, max_chars)
    result.papers = list(result.stream())
    return result


def stream_corpus(paths: Iterable[Path], max_chars: int | None = None) -> LoadResult:
    """Every paper from every path, deduplicated by ``paper_id`` (the first one wins), read as
    a stream each time ``stream()`` is iterated: problems, files, headers and warnings fill in
    as it goes. Abstracts over ``max_chars`` are cut to it, each with a warning."""
    chosen = list(paths)
    result = LoadResult()

    def read() -> Iterator[Paper]:
        result.reset()
        for path in expand_paths(chosen):
            try:
                items = iter_file(path, max_chars, result.warnings, result.headers)
                first = next(items, None)  # a file that cannot be read fails here, whole
            except InputFileError as exc:
                result.problems.append(exc)
                continue
            result.files.append(path)
            for item in itertools.chain([first] if first is not None else [], items):
                if isinstance(item, InputFileError):
                    result.problems.append(item)
                elif result.keep(item):
                    yield item

    result.source = read
    return result
