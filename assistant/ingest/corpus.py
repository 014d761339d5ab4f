"""Reading abstracts into typed ``Paper`` records.

Formats: the seed format (first line a header, then one abstract per blank-line-separated
paragraph), JSONL and CSV with an ``abstract`` field plus optional ``id``, ``title``, ``authors``,
``year``, ``url``, ``venue``, ``doi``; and what researchers export (``assistant.ingest.formats``):
BibTeX, RIS, OpenAlex and Semantic Scholar JSON/JSONL, arXiv's Atom feed. The reader is chosen
by extension, and by content for ``.txt`` (an RIS or BibTeX export saved as text). A folder is
read file by file. A bad file or row is reported in one line, never fatal to the rest.
"""

from __future__ import annotations

import csv
import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from assistant.errors import InputFileError
from assistant.ingest.formats import Row, clean_doi, first_last, names_of, no_abstract_note
from assistant.ingest.formats.textfile import encoding_of, not_a_file
from assistant.ingest.labels import derive_label
from assistant.text.normalise import content_key, fingerprint, normalize_text

_INDEX_PAGE = re.compile(
    r"^https?://(?:www\.)?(?:scopus\.com|webofscience\.com|[\w.]*webofknowledge\.com)/"
)

SUFFIXES = {
    ".txt": "seed",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".csv": "csv",
    ".tsv": "csv",  # the separator is read from the header line
    ".bib": "bibtex",
    ".ris": "ris",
    ".atom": "atom",
    ".xml": "atom",
}
KNOWN_TYPES = ".txt, .jsonl, .json, .csv, .tsv, .bib, .ris, .atom, .xml"
_POSITION = {  # what "#3" counts, per format
    "seed": "abstract",
    "jsonl": "line",
    "json": "record",
    "csv": "row",
    "bibtex": "entry",
    "ris": "record",
    "atom": "entry",
}
_FORMAT_NAME = {
    "seed": "seed",
    "jsonl": "JSONL",
    "json": "JSON",
    "csv": "CSV",
    "bibtex": "BibTeX",
    "ris": "RIS",
    "atom": "Atom",
}


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
    doi: str | None = None

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
        kind = _kind_of_name(name)
        if not sep or not position.isdigit() or kind not in _POSITION:
            return self.source
        return f"{name}, {_POSITION[kind]} {position}"

    @property
    def reference(self) -> str:
        """How a reader finds the paper: its URL, else its DOI's, else where its abstract is.
        The DOI's comes first over an index's record page, which needs a subscription (the
        'Link' of a Scopus export)."""
        doi = f"https://doi.org/{self.doi}" if self.doi else None
        if doi and self.url and _INDEX_PAGE.search(self.url):
            return doi
        return self.url or doi or self.location

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
        """Title, authors, year, venue, URL and DOI for JSON output; null or empty when
        unknown."""
        return {
            "title": self.title,
            "authors": list(self.authors),
            "year": self.year,
            "venue": self.venue,
            "url": self.url,
            "doi": self.doi,
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
    from assistant.text.latex import latex_to_text

    # Text that is all markup reads as nothing ("\\iÀ", found by the fuzz test): the label
    # then comes from the text as written.
    return latex_to_text(abstract).strip() or abstract


# The rich text a title may carry (Zotero's "<i>Escherichia coli</i>", "<sub>2</sub>").
_TAGS = re.compile(r"</?(?:i|b|em|strong|sub|sup|span)(?:\s[^<>]*)?>", re.IGNORECASE)


# The publisher's statement exports put at the end (or the start) of abstracts: "© 2020 Elsevier
# Ltd. All rights reserved.", "Copyright © 2018 John Wiley & Sons", "(C) 2003 Elsevier Science
# B.V.", "© The Author(s) 2020. Published by …", "This article is protected by copyright." It is
# not the paper's words, so it is not indexed, embedded or quoted. A run of sentences is one
# when it starts like one, every sentence of it reads like one, and it names a rights holder.
_STARTS = re.compile(
    r"(?:crown\s+)?(?:copyright\s*)?©|\(c\)\s*(?=\d{4})|copyright\s*(?:\(c\)|(?=\d{4}))"
    r"|this article is protected by copyright",
    re.IGNORECASE,
)
_HOLDER = (
    r"rights reserved|published by|licensee|the author\(s\)|the authors?\.|protected by "
    r"copyright|creative commons|\bcc[- ]by\b|elsevier|springer|wiley|ieee|mdpi|taylor|francis"
    r"|\bsage\b|oxford|cambridge|\bnature\b|american|association|society|\bpress\b|\bltd\b|"
    r"\binc\b|b\.\s?v\.|gmbh|\bag\b|\bacm\b|\bbmj\b|\bplos\b|frontiers|karger|thieme|"
    r"wolters|kluwer|informa|\baaas\b|\bacs\b|\biop\b|\brsc\b|emerald|hindawi|bentham"
)
_NAMES_HOLDER = re.compile(_HOLDER, re.IGNORECASE)
_STATEMENT_LIKE = re.compile(rf"©|\(c\)|copyright|{_HOLDER}", re.IGNORECASE)
_SENTENCE = re.compile(
    r"(?<=[.!?])\s+(?=[A-Z(©\"“])|(?<=[.!?])(?=©)|(?<![Cc]opyright)(?<!COPYRIGHT)\s+(?=©)"
)


def _reads_like_statement(piece: str) -> bool:
    """A sentence of a publisher's statement, or a fragment of one ('B.V.', 'Inc.')."""
    return bool(_STATEMENT_LIKE.search(piece)) or len(piece.split()) <= 3


def _without_copyright(abstract: str) -> str:
    cuts = [0, *(m.end() for m in _SENTENCE.finditer(abstract)), len(abstract)]
    pieces = [abstract[a:b] for a, b in zip(cuts, cuts[1:], strict=False)]

    def statement(run: list[str]) -> bool:
        return bool(
            run
            and _STARTS.match(run[0].strip())
            and all(map(_reads_like_statement, run))
            and _NAMES_HOLDER.search(" ".join(run))
        )

    end = len(pieces)
    while end and _reads_like_statement(pieces[end - 1]):
        end -= 1
    start = next((i for i in range(end, len(pieces)) if statement(pieces[i:])), len(pieces))
    lead = next((k for k in range(start - 1, 0, -1) if statement(pieces[:k])), 0)
    return "".join(pieces[lead:start]).strip()


def make_paper(record: dict[str, Any], source: str) -> Paper:
    """A Paper from one raw record; raises ValueError naming what is wrong."""
    raw = record.get("abstract")
    if raw is None:
        found = ", ".join(str(key) for key in list(record)[:8]) or "none"
        raise ValueError(
            f"no 'abstract' field (fields found: {found}; name the field that holds the "
            "abstract text 'abstract')"
        )
    if not isinstance(raw, str):
        raise ValueError(f"'abstract' is not text: {raw!r:.60}")
    said = normalize_text(raw)
    abstract = _without_copyright(said)
    if said and not abstract:
        raise ValueError("the 'abstract' is only the publisher's copyright line")
    if not abstract or _PLACEHOLDER.match(abstract):
        raise ValueError("empty 'abstract'")
    title = _TAGS.sub("", normalize_text(str(record.get("title") or ""))).strip() or None
    raw_id = record.get("id")
    given_id = str(raw_id).strip() if raw_id is not None else ""
    paper_id = given_id or content_key(abstract)  # a blank id ("\r") is no id
    authors = record.get("authors") or ()
    if isinstance(authors, str):
        authors = names_of(authors)
    elif not isinstance(authors, list | tuple):
        raise ValueError(f"'authors' is neither a list nor a ';'-separated string: {authors!r}")
    authors = [a for a in authors if not _PLACEHOLDER.match(str(a))]
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
        doi=clean_doi(str(record["doi"])) if record.get("doi") else None,
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


# Columns of the CSV exports researchers have, by the field they hold, used when the file has
# no column of the field's own name: Zotero ("Abstract Note", "Author", "Publication Year",
# "Publication Title", "Key") and Scopus ("Source title", "Link", "EID").
_CSV_ALIASES = {
    "abstract": ("abstract note",),
    "authors": ("author",),
    "year": ("publication year",),
    "venue": ("publication title", "source title", "journal"),
    "url": ("link",),
    "id": ("key", "eid"),
}


def _csv_columns(fieldnames: Sequence[str] | None) -> dict[str, str]:
    """Each field's column (lower-cased name -> the name as written), aliases included."""
    columns = {c.strip().lower(): c for c in (fieldnames or []) if c}
    for key, aliases in _CSV_ALIASES.items():
        alias = next((a for a in aliases if a in columns), None)
        if key not in columns and alias is not None:
            columns[key] = columns[alias]
    return columns


# What exports write where there is no abstract or no author ("[No abstract available]",
# Scopus's): not text to index, nor a name.
_PLACEHOLDER = re.compile(r"^\s*\[no (?:abstract|author name)(?: available)?\]\.?\s*$", re.I)


_SCOPUS_ID = re.compile(r"\s*\(\d+\)\s*$")  # the author id after a name in Scopus's export


def _said_abstract(value: object) -> bool:
    return bool(str(value or "").strip()) and not _PLACEHOLDER.match(str(value))


def _csv_records(
    lines: Iterable[str], path: Path, notes: list[str]
) -> Iterator[tuple[int, dict[str, Any]]]:
    """One record per row. In a reference manager's export (its abstract column has the
    manager's name for it), rows without an abstract are counted in one note, as the other
    exports' are, not each an error."""
    rows = iter(lines)
    header = next(rows, "")
    said = re.fullmatch(r'"?sep=(.)"?', header.strip("\ufeff\r\n"))  # Excel's own first line
    if said:
        header = next(rows, "")
    delimiter = said.group(1) if said else _delimiter(header)
    reader = csv.DictReader(itertools.chain([header], rows), delimiter=delimiter)
    columns = _csv_columns(reader.fieldnames)
    zotero = columns.get("authors", "").strip().lower() == "author"
    exported = "eid" in columns or (  # Scopus's, or one whose abstract column is renamed
        "abstract" in columns and columns["abstract"].strip().lower() != "abstract"
    )
    if "abstract" not in columns:
        found = ", ".join(c.strip().lower() for c in reader.fieldnames or [] if c) or "none"
        raise InputFileError(
            str(path),
            f"no 'abstract' column (columns found: {found}); "
            "name the column that holds the abstract text 'abstract'",
        )
    skipped: list[str] = []
    for row_no, row in enumerate(reader, start=1):
        record = {key: row.get(original) for key, original in columns.items()}
        if exported and not _said_abstract(record.get("abstract")):
            skipped.append(str(record.get("id") or f"row {row_no}"))
            continue
        names = record.get("authors")
        if zotero and isinstance(names, str):  # always "Last, First; …", one name or more
            record["authors"] = [first_last(a) for a in names.split(";") if a.strip()]
        full = record.get("author full names")
        if full and full.strip():  # Scopus's: "Kim, Soo-Jin (57201234567); Lee, Ji-Woo (…)"
            listed = (first_last(_SCOPUS_ID.sub("", a)) for a in full.split(";"))
            record["authors"] = [name for name in listed if name]  # not the '' after a last ';'
        yield row_no, record
    note = no_abstract_note(path.name, skipped, "rows")
    if note:
        notes.append(note)


def _delimiter(header: str) -> str:
    """The separator a CSV's header line uses most, outside quotes: ',' (and on a tie), or
    ';' as Excel writes CSV where the comma is the decimal mark, or a tab; none for a header
    of one column."""
    counts = {d: re.sub(r'"[^"]*"', "", header).count(d) for d in ",;\t"}
    best = max(counts, key=lambda d: (counts[d], d == ","))
    # One column ('abstract'): its rows are not split at all, for Excel, where ';' is the
    # separator, quotes none of the commas in them (a split kept the text up to the first).
    return best if counts[best] else "\x1f"


def _kind_of_name(name: str) -> str | None:
    return SUFFIXES.get(Path(name).suffix.lower())


def _kind(path: Path, encoding: str) -> str:
    """The format of a file: by extension, and for ``.txt`` by its first line (``TY  -`` is
    RIS, ``@article{`` BibTeX: what EndNote and some Zotero exports save as text)."""
    kind = _kind_of_name(path.name)
    if kind != "seed":
        return kind or "seed"
    with path.open(encoding=encoding) as handle:
        first = next((line for line in itertools.islice(handle, 50) if line.strip()), "")
    first = first.lstrip("\ufeff").strip()
    if re.match(r"TY  - ", first):
        return "ris"
    if re.match(r"@\w+\s*\{", first):
        return "bibtex"
    return "seed"


def _rows(
    kind: str, handle: TextIO, path: Path, headers: list[str], notes: list[str]
) -> Iterator[Row]:
    """The reader of one format over an open file."""
    from assistant.ingest.formats import arxiv, bibtex, json_works, ris

    readers: dict[str, Callable[[], Iterator[Row]]] = {
        "seed": lambda: _seed_records(handle, headers),
        "jsonl": lambda: json_works.jsonl_rows(handle, path.name, notes),
        "json": lambda: json_works.json_rows(handle, path.name, notes),
        "csv": lambda: _csv_records(handle, path, notes),
        "bibtex": lambda: bibtex.rows(handle, path.name, notes),
        "ris": lambda: ris.rows(handle, path.name, notes),
        "atom": lambda: arxiv.rows(handle, path.name, notes),
    }
    return readers[kind]()


def _holds_nul(record: dict[str, Any]) -> bool:
    return any(isinstance(v, str) and "\x00" in v for v in record.values())


def iter_file(
    path: Path,
    max_chars: int | None = None,
    warnings: list[str] | None = None,
    headers: list[str] | None = None,
) -> Iterator[Paper | InputFileError]:
    """Papers of one file, read as a stream, and the entries of it that could not be read, in
    file order. Abstracts longer than ``max_chars`` are cut, and a line saying so is added to
    ``warnings``, as is one for entries skipped for want of an abstract; a seed file's header
    line goes to ``headers``. A file that cannot be read at all raises InputFileError before
    anything is yielded."""
    what = not_a_file(path)
    if what is not None:  # opening a named pipe would wait for a writer: never open it
        raise InputFileError(str(path), f"is {what}, not a file; skipped (give a file of papers)")
    if _kind_of_name(path.name) is None and path.exists() and not path.is_dir():
        raise InputFileError(
            str(path), f"unknown file type {path.suffix or '(none)'}; use {KNOWN_TYPES}"
        )
    encoding = encoding_of(path)
    kind = _kind(path, encoding)
    notes = warnings if warnings is not None else []
    found = False
    skipped: dict[str, list[int]] = {}  # why -> the positions of the records skipped for it
    with path.open(encoding=encoding, newline="" if kind == "csv" else None) as handle:
        try:
            for position, record in _rows(
                kind, handle, path, [] if headers is None else headers, notes
            ):
                found = True
                if isinstance(record, str):
                    yield InputFileError(f"{path}", record)
                    continue
                if _holds_nul(record):
                    where = f"{_POSITION[kind]} {position}"
                    yield InputFileError(
                        f"{path}#{position}",
                        f"{where} holds a NUL byte (\\0), a sign of a damaged file; skipped",
                    )
                    continue
                note = _cut(record, max_chars, f"{path}:{position}")
                if note is not None:
                    notes.append(note)
                try:
                    yield make_paper(record, f"{path.name}#{position}")
                except ValueError as exc:
                    skipped.setdefault(str(exc), []).append(position)
        except (ValueError, SyntaxError) as exc:  # a whole-file parser's (JSON, XML, Atom)
            problem = InputFileError(
                str(path), f"not a readable {_FORMAT_NAME[kind]} file: {_said(exc)}"
            )
            if not found:
                raise problem from exc
            yield from _skipped(path, _POSITION[kind], skipped)
            yield problem
            return
    yield from _skipped(path, _POSITION[kind], skipped)
    if not found and not any(n.startswith(f"{path.name}:") for n in notes):
        raise InputFileError(
            str(path),
            f"no abstracts found (expected a {_FORMAT_NAME[kind]} file with abstracts: a seed "
            "file has a header line, then one abstract per paragraph; JSONL/CSV an 'abstract' "
            "field)",
        )


def _skipped(path: Path, what: str, skipped: dict[str, list[int]]) -> Iterator[InputFileError]:
    """One problem per reason records of a file were skipped for, not one per record: a file
    of 5,000 rows without an 'abstract' field is one line, not 5,000."""
    for why, positions in skipped.items():
        if len(positions) == 1:
            yield InputFileError(f"{path}#{positions[0]}", f"{why}; row skipped")
            continue
        shown = ", ".join(str(p) for p in positions[:3]) + (", …" if len(positions) > 3 else "")
        yield InputFileError(str(path), f"{len(positions)} {what}s skipped ({shown}): {why}")


def _said(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200] or type(exc).__name__


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


def expand_paths(paths: Iterable[Path]) -> Iterator[Path | InputFileError]:
    """Files named, and the files of a known type inside folders named, in a stable order; a
    folder that cannot be listed, or that holds no file of a known type, is a problem."""
    for path in paths:
        if not path.is_dir():
            yield path
            continue
        try:
            inside = sorted(path.iterdir())
        except OSError as exc:
            yield InputFileError(str(path), f"cannot list the folder ({exc.strerror or exc})")
            continue
        known = [p for p in inside if _kind_of_name(p.name) and not p.is_dir()]
        if not known:
            others = ", ".join(p.name for p in inside[:3]) + (", …" if len(inside) > 3 else "")
            found = f" (it holds {others})" if others else " (it is empty)"
            yield InputFileError(
                str(path), f"no files of papers in this folder{found}; give {KNOWN_TYPES} files"
            )
        yield from known


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
            if isinstance(path, InputFileError):
                result.problems.append(path)
                continue
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
