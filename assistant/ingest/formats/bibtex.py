"""BibTeX (``.bib``) as Zotero, Mendeley and JabRef export it, read with bibtexparser 2.

Field values are LaTeX: ``{\\"o}`` accents, ``\\%`` escapes and protective braces (``{BERT}``)
become plain text through ``assistant.text.latex``; ``and``-separated authors ("Okafor, Chidi")
become "Chidi Okafor"; ``@string`` macros are resolved by the parser. The entry's key is its paper
id.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Iterator
from typing import Any, TextIO

from assistant.ingest.formats import Row, clean_doi, no_abstract_note, year_in
from assistant.text.latex import latex_to_text

_BRACE = re.compile(r"(?<!\\)[{}]")
# What reference managers write most: accents ({\"o}, \'{e}, \c{c}) and escaped specials
# (\%, \&, \_). They are resolved here, fast; what markup is left (math, \textbf, \i) goes
# through assistant.text.latex, which is thorough but slow (pylatexenc: ~5 ms per abstract).
_ACCENTS = {
    '"': "\u0308", "'": "\u0301", "`": "\u0300", "^": "\u0302", "~": "\u0303",
    "=": "\u0304", ".": "\u0307", "c": "\u0327", "v": "\u030c", "u": "\u0306",
    "H": "\u030b", "r": "\u030a", "k": "\u0328",
}  # fmt: skip
_ACCENT = re.compile(r"\{?\\(?:([\"'`^~=.])\s*\{?([A-Za-z])|([cvuHrk])\s*\{([A-Za-z]))\}?\}?")
_ESCAPED = re.compile(r"\\([%&_$#])")


def _accented(match: re.Match[str]) -> str:
    accent, letter = match.group(1) or match.group(3), match.group(2) or match.group(4)
    return unicodedata.normalize("NFC", letter + _ACCENTS[accent])


def text(value: object) -> str:
    """A field's LaTeX as plain text: accents and escapes resolved, braces gone."""
    if not isinstance(value, str):
        return ""
    plain = _ESCAPED.sub(r"\1", _ACCENT.sub(_accented, value))
    if "\\" in plain or "$" in plain:
        plain = latex_to_text(plain)
    return " ".join(_BRACE.sub("", plain).split())


def _record(entry: Any) -> dict[str, Any]:
    fields = {key.lower(): value for key, value in entry.fields_dict.items()}

    def get(*names: str) -> str:
        for name in names:
            found = text(fields[name].value) if name in fields else ""
            if found:
                return found
        return ""

    authors = fields["author"].value if "author" in fields else []
    names = authors if isinstance(authors, list) else [authors]
    return {
        "id": entry.key,
        "title": get("title"),
        "authors": [text(n) for n in names if text(n)],
        "year": year_in(get("year", "date")),
        "venue": get("journal", "journaltitle", "booktitle", "howpublished", "school") or None,
        "doi": clean_doi(get("doi")),
        "url": get("url") or None,
        "abstract": get("abstract"),
    }


def rows(handle: TextIO, name: str, notes: list[str]) -> Iterator[Row]:
    """One row per entry with an abstract (position: the entry's number in the file), one per
    block the parser could not read; entries without an abstract are counted in ``notes``."""
    import bibtexparser
    from bibtexparser.middlewares import MergeNameParts, SeparateCoAuthors, SplitNameParts

    # The parser also logs each block it cannot read; we report those blocks ourselves, once.
    logging.getLogger("bibtexparser").setLevel(logging.CRITICAL)

    library = bibtexparser.parse_string(
        handle.read(),
        append_middleware=[SeparateCoAuthors(), SplitNameParts(), MergeNameParts(style="first")],
    )
    for block in library.failed_blocks:
        line = (block.start_line or 0) + 1
        yield 0, f"the entry at line {line} is not valid BibTeX ({_reason(block)}); skipped"
    skipped: list[str] = []
    for position, entry in _numbered(library.blocks):
        record = _record(entry)
        if not record["abstract"]:
            skipped.append(entry.key)
            continue
        yield position, record
    note = no_abstract_note(name, skipped)
    if note:
        notes.append(note)


def _numbered(blocks: list[Any]) -> Iterator[tuple[int, Any]]:
    """Each entry with its number among the file's entries, those the parser could not read
    counted too (else "entry 3" would name the fourth entry after a broken one)."""
    from bibtexparser.model import Entry, ParsingFailedBlock

    number = 0
    for block in blocks:
        raw = (getattr(block, "raw", "") or "").lstrip().lower()
        macro = raw.startswith(("@string", "@comment", "@preamble"))
        if isinstance(block, Entry) or (isinstance(block, ParsingFailedBlock) and not macro):
            number += 1
            if isinstance(block, Entry):
                yield number, block


def _reason(block: Any) -> str:
    """The last line of the parser's message ("Unexpected block start: `@misc`. …")."""
    error = getattr(block, "error", None)
    if error is None:
        return "unreadable"
    said = str(getattr(error, "abort_reason", "") or error).strip()
    return " ".join(said.split("\n")[-1].split()) or type(error).__name__
