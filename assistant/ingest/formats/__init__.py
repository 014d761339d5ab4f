"""Readers for the files researchers keep papers in, one module per format.

Each reader turns a file into rows: ``(position, record)``, where the record holds the keys
``assistant.ingest.corpus.make_paper`` knows (``id``, ``title``, ``authors``, ``year``, ``venue``,
``doi``, ``url``, ``abstract``), or a string that says what is wrong with that entry. Entries
with no abstract are counted, not rows: the reader adds one line about them to ``notes``.
"""

from __future__ import annotations

import re
from typing import Any

Row = tuple[int, dict[str, Any] | str]

_DOI_PREFIX = re.compile(r"^\s*(?:https?://(?:dx\.)?doi\.org/|doi:\s*)", re.IGNORECASE)
_YEAR = re.compile(r"\b(1[5-9]\d\d|20\d\d|21\d\d)\b")


def clean_doi(value: object) -> str | None:
    """'https://doi.org/10.1/x' or 'doi:10.1/x' -> '10.1/x'; None for nothing."""
    if not isinstance(value, str):
        return None
    doi = _DOI_PREFIX.sub("", value).strip()
    return doi or None


# Suffixes only: not every run of i, v and x ('Xi', 'Vi' are given names) nor 'V' (an initial).
_SUFFIX = re.compile(r"(?:jr|sr|ii|iii|iv)\.?", re.IGNORECASE)


def is_suffix(word: str) -> bool:
    """'Jr.', 'Sr', 'III': what follows a name, not part of it."""
    return bool(_SUFFIX.fullmatch(word))


def first_last(name: str) -> str:
    """'Okafor, Chidi' -> 'Chidi Okafor'; 'Chidi Okafor' as it is. With a suffix, written
    after the first name ('King, Martin, Jr.', RIS's and Zotero's way), as BibTeX writes it
    ('King, Jr., Martin') or after the whole name ('Martin King, Jr.'): 'Martin King Jr.'."""
    parts = [p.strip() for p in name.split(",")]
    if len(parts) == 3 and all(parts):
        last, middle, first = parts
        if is_suffix(first):  # the suffix last: it is the suffix, whatever the middle
            middle, first = first, middle
        return f"{first} {last} {middle}"
    if len(parts) == 2 and " " in parts[0] and is_suffix(parts[1]):
        return f"{parts[0]} {parts[1]}"
    last, sep, first = name.partition(",")
    return f"{first.strip()} {last.strip()}".strip() if sep and first.strip() else name.strip()


# Lower-case words that start a family name ('van der Berg', 'de la Cruz', 'bin Salman').
_PARTICLES = frozenset(
    "van von der den de da del della di du la le ten ter bin ibn al el dos das".split()
)


def _last_first(name: str) -> bool:
    """'Smith, John', 'Smith, J. R.', 'van der Berg, Anna', 'King, Martin, Jr.': a family name
    (one word, after any particles), a comma, then at most four given names or initials."""
    pieces = [p.strip() for p in name.split(",")]
    if len(pieces) == 3 and (is_suffix(pieces[1]) or is_suffix(pieces[2])):
        pieces = [pieces[0], pieces[2] if is_suffix(pieces[1]) else pieces[1]]
    if len(pieces) != 2:
        return False
    family, given = pieces[0].split(), pieces[1].split()
    return bool(family) and 1 <= len(given) <= 4 and all(w in _PARTICLES for w in family[:-1])


def names_of(text: str) -> list[str]:
    """The authors a string lists, each as 'First Last': 'Vaswani, Ashish; Shazeer, Noam'
    (Zotero, Scopus), 'Smith, John' (one author, not two), 'Smith, John and Doe, Jane'
    (BibTeX's way), 'Ada Lovelace, Alan Turing and Grace Hopper'."""
    if ";" in text:
        return [first_last(a) for a in text.split(";") if a.strip()]
    parts = [p.strip() for p in re.split(r"\s+and\s+", text) if p.strip()]
    if parts and all(_last_first(p) for p in parts):
        return [first_last(p) for p in parts]
    return [a.strip() for a in re.split(r", (?=[A-Z])| and ", text) if a.strip()]


def year_in(value: object) -> int | None:
    """The year of '2023', '2023-05-01', '2023/05//' or 2023; None when there is none."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    match = _YEAR.search(str(value or ""))
    return int(match.group(1)) if match else None


def no_abstract_note(name: str, skipped: list[str], what: str = "entries") -> str | None:
    """One line for the entries of a file that were skipped for want of an abstract."""
    if not skipped:
        return None
    shown = ", ".join(skipped[:3]) + (", …" if len(skipped) > 3 else "")
    if len(skipped) == 1:
        what = what.removesuffix("s").replace("entrie", "entry")
    return (
        f"{name}: {len(skipped)} {what} without an abstract skipped ({shown}); "
        "export them with their abstracts to index them"
    )
