"""Readers for the files researchers keep papers in, one module per format.

Each reader turns a file into rows: ``(position, record)``, where the record holds the keys
``assistant.ingest.corpus.make_paper`` knows (``id``, ``title``, ``authors``, ``year``, ``venue``,
``doi``, ``url``, ``abstract``), or a string that says what is wrong with that entry. Entries
with no abstract are counted, not rows: the reader adds one line about them to ``notes``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
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
_INITIALS = re.compile(r"(?:[A-Z]\.?-?)+")
_ET_AL = re.compile(r",?\s+et\s+al\.?\s*$", re.IGNORECASE)


def _initials(words: Sequence[str]) -> bool:
    return bool(words) and all(_INITIALS.fullmatch(w) for w in words)


def _last_first(name: str) -> bool:
    """'Smith, John', 'Smith, J. R.', 'van der Berg, Anna', 'García Márquez, Gabriel',
    'King, Martin, Jr.': a family name, a comma, then at most four given names or initials. A
    family name of several words (not particles) is taken only before one given name or
    initials: 'Ada Lovelace, Alan Turing' is two people."""
    pieces = [p.strip() for p in name.split(",")]
    if len(pieces) == 3 and (is_suffix(pieces[1]) or is_suffix(pieces[2])):
        pieces = [pieces[0], pieces[2] if is_suffix(pieces[1]) else pieces[1]]
    if len(pieces) != 2:
        return False
    family, given = pieces[0].split(), pieces[1].split()
    one_family = all(w.casefold() in _PARTICLES for w in family[:-1])
    return (
        bool(family)
        and 1 <= len(given) <= 4
        and (one_family or len(given) == 1 or _initials(given))
    )


def _pairs(text: str) -> list[str] | None:
    """'Smith, J., Doe, J. R.': family names each followed by initials, as 'Last, First'."""
    pieces = [p.strip() for p in text.split(",")]
    if len(pieces) < 4 or len(pieces) % 2:
        return None
    if not all(_initials(given.split()) for given in pieces[1::2]):
        return None
    return [f"{pieces[i]}, {pieces[i + 1]}" for i in range(0, len(pieces), 2)]


def names_of(text: str) -> list[str]:
    """The authors a string lists, each as 'First Last': 'Vaswani, Ashish; Shazeer, Noam'
    (Zotero, Scopus), 'Smith, John' (one author, not two), 'Smith, John and Doe, Jane' or
    '... & ...' (BibTeX's way), 'Smith, J., Doe, J.', 'Ada Lovelace, Alan Turing and Grace
    Hopper'. A closing 'et al.' is dropped."""
    text = _ET_AL.sub("", text)
    if ";" in text:
        return [first_last(a) for a in text.split(";") if a.strip()]
    parts = [p.strip() for p in re.split(r"\s+(?:and|&)\s+", text) if p.strip()]
    if parts and all(_last_first(p) for p in parts):
        return [first_last(p) for p in parts]
    pairs = _pairs(text) if len(parts) == 1 else None
    if pairs is not None:
        return [first_last(p) for p in pairs]
    return [a.strip() for a in re.split(r", (?=[A-Z])|\s+(?:and|&)\s+", text) if a.strip()]


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
