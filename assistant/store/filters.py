"""What ``--filter``, chat's ``/filter`` and the Python API accept, and how a value matches.

Keys: ``author=`` (any author; every word of the value is a word of that author's name, case
and accents aside, an initial for any word it begins: ``author=muller`` and ``author=H. Müller``
find "Hans Müller"; ``author=oneill`` finds "O'Neill"), ``title=`` (every word in the
title, singular or plural aside), ``year=2024``, ``year>=2023``, ``year>2023``,
``year<=2023``, ``year<2023``,
``year=2021..2023``, ``venue=``, ``doi=`` (``https://doi.org/…`` or bare, any case),
``source_file=`` (a file's name; a path is cut to it), ``paper_id=``. The same functions
decide a match in SQL (the catalog registers them) and in memory (``Filter.accepts``).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

from assistant.ingest.formats import clean_doi

FILTER_KEYS = ("author", "title", "year", "venue", "doi", "source_file", "paper_id")
FILTER_USAGE = (
    "author=NAME, title=WORDS, year=2024, year>=2023, year<2023 (>, <=), year=2021..2023, "
    "venue=NAME, doi=DOI, source_file=FILE"
)
YEARS = (1, 9999)
_UNFOLDED = str.maketrans({"ø": "o", "Ø": "o", "ł": "l", "Ł": "l", "æ": "ae", "Æ": "ae", "đ": "d"})


def fold(text: str) -> str:
    """Lower case without accents: 'Müller' -> 'muller', 'Søreide' -> 'soreide'."""
    decomposed = unicodedata.normalize("NFKD", text.translate(_UNFOLDED))
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def words(text: str) -> list[str]:
    return re.findall(r"\w+", fold(text))


def name_words(name: str) -> list[str]:
    """A name's words, with each written with an apostrophe also joined up: "O'Neill" is "o",
    "neill" and "oneill", so ``author=oneill`` and ``author=ONeill`` find it."""
    found = words(name)
    joined = words(re.sub(r"['’`]", "", name)) if re.search(r"['’`]", name) else []
    return found + [w for w in joined if w not in found]


def _singular(word: str) -> str:
    """ "glaciers" -> "glacier": a title word asked for in the singular or the plural."""
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def has_words(text: str | None, wanted: str) -> bool:
    """Every word of ``wanted`` is a word of ``text``, singular or plural aside."""
    if not text:
        return False
    return {_singular(w) for w in words(wanted)} <= {_singular(w) for w in words(text)}


def names_match(name: str, wanted: str) -> bool:
    """Every word of ``wanted`` is a word of the author's ``name``, case and accents aside,
    where an initial stands for a word it begins: "J. Smith" finds "John Smith", and "John
    Smith" finds "J Smith". Each word asked for is a different word of the name, and at least
    one word asked for in full is there in full: "Okafor" does not find "O. Nakamura", nor
    "S. Smith" "John Smith"."""
    have = list(dict.fromkeys(name_words(name)))
    asked = list(dict.fromkeys(words(wanted)))
    whole = [w for w in asked if len(w) > 1]
    if not have or not asked or (whole and not set(whole) & set(have)):
        return False
    if _each_its_own(asked, have, frozenset()):
        return True
    required = needed_words(wanted)
    return required != asked and _each_its_own(required, have, frozenset())


def needed_words(wanted: str) -> list[str]:
    """The words of an author asked for that the name must have: all but a middle initial,
    which it may leave out ("J. R. Smith" finds "John Smith" and "J. Smith", as "JR Smith"
    does). The first initial must be there: "R. J. Smith" is not "J. Smith"."""
    asked = list(dict.fromkeys(words(wanted)))
    initials = [w for w in asked if len(w) == 1]
    return [w for w in asked if w not in initials[1:]]


def _each_its_own(asked: list[str], have: list[str], used: frozenset[int]) -> bool:
    """Each word asked for matched to a different word of the name (a name has a few words)."""
    if not asked:
        return True
    word = asked[0]
    return any(
        at not in used
        and (word == h or (len(word) == 1 and h.startswith(word)) or (len(h) == 1 and word[0] == h))
        and _each_its_own(asked[1:], have, used | {at})
        for at, h in enumerate(have)
    )


def any_author(authors: Iterable[str], wanted: str) -> bool:
    return any(names_match(name, wanted) for name in authors)


def authors_json_match(authors: str | None, wanted: str) -> bool:
    """``any_author`` over the catalog's JSON list of names."""
    return any_author(json.loads(authors or "[]"), wanted)


def same_doi(doi: str | None, wanted: str) -> bool:
    return bool(doi) and (clean_doi(doi) or "").casefold() == (clean_doi(wanted) or "").casefold()


def venue_key(venue: str) -> str:
    """A venue's name whatever its case and spacing ("neurips" is NeurIPS)."""
    return " ".join(venue.split()).casefold()


def same_venue(venue: str | None, wanted: str) -> bool:
    return bool(venue) and venue_key(str(venue)) == venue_key(wanted)


def split_filter(item: str) -> tuple[str, str]:
    """'year>=2023' -> ('year', '>=2023'); 'author=Okafor' -> ('author', 'Okafor')."""
    match = re.match(r"^\s*(\w+)\s*(>=|<=|>|<|=)\s*(.*?)\s*$", item, re.S)
    if match is None or not match.group(3):
        raise ValueError(
            f"filter {item!r} is not KEY=VALUE; e.g. author=Okafor, year>=2023 ({FILTER_USAGE})"
        )
    key, op, value = match.groups()
    if op == "=" and value[:1] in "<>" and key == "year":  # "year=>2023" means year>=2023
        op, value = value[0] + "=", value[1:].strip()
    if op != "=" and key not in FILTER_KEYS:  # "yaer>2020": a mistyped key, not a comparison
        raise ValueError(f"unknown filter {key!r}; filter on {FILTER_USAGE}")
    if op != "=" and key != "year":
        raise ValueError(f"filter {item!r}: only year is compared with {op}; use {key}=VALUE")
    return key, value if op == "=" else op + value


def _year(text: str, item: str) -> int:
    two = re.fullmatch(r"\s*(\d{4})\s*(?:-|–|,|to)\s*(\d{4})\s*", text)
    if two:  # "year=2023-2024": a range, written otherwise
        raise ValueError(f"filter {item}: a range of years is written year={two[1]}..{two[2]}")
    if not re.fullmatch(r"\s*\d{1,4}\s*", text):
        raise ValueError(
            f"filter {item} is not a year from {YEARS[0]} to {YEARS[1]}; "
            "e.g. year=2024, year>=2023 or year=2021..2023"
        )
    return int(text)


def year_fields(value: object) -> dict[str, int]:
    """``year``, or ``year_min``/``year_max``, for 2024, '>=2023', '<=2023', '2021..2023'."""
    text = str(value).strip()
    item = f"year={text}" if text[:1] not in "<>" else f"year{text}"
    if text.startswith(">="):
        return {"year_min": _year(text[2:], item)}
    if text.startswith("<="):
        return {"year_max": _year(text[2:], item)}
    if text.startswith(">"):  # after 2023: 2024 on
        return {"year_min": _year(text[1:], item) + 1}
    if text.startswith("<"):
        return {"year_max": _year(text[1:], item) - 1}
    if ".." in text:
        low, _, high = text.partition("..")
        bounds = {}
        if low.strip():
            bounds["year_min"] = _year(low, item)
        if high.strip():
            bounds["year_max"] = _year(high, item)
        if not bounds or bounds.get("year_min", 0) > bounds.get("year_max", YEARS[1]):
            raise ValueError(f"filter {item} is an empty range; e.g. year=2021..2023")
        return bounds
    return {"year": _year(text, item)}


def add_filter(filters: Mapping[str, str], key: str, value: str) -> dict[str, str]:
    """The filters with ``key=value`` added. A year bound beside one of the other side makes
    a range (year>=2023, then year<2025: 2023..2024); otherwise the value replaces the key's."""
    added = {**filters, key: value}
    if key != "year" or key not in filters:
        return added
    old, new = year_fields(filters[key]), year_fields(value)
    if "year" in old or "year" in new or set(new) >= set(old):
        return added
    low, high = {**old, **new}["year_min"], {**old, **new}["year_max"]
    return {**added, key: str(low) if low == high else f"{low}..{high}"}


def filter_fields(filters: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``Filter`` fields for ``{key: value}``; ``paper_id`` may be one id or a list of
    ids. Raises ValueError with one line that names the key or value to fix."""
    if filters is not None and not isinstance(filters, Mapping):
        raise ValueError(
            f"filters are a mapping of key to value, e.g. {{'year': '>=2023', 'author': "
            f"'Smith'}}, not a {type(filters).__name__}; keys: {FILTER_USAGE}"
        )
    clean: dict[str, Any] = {}
    for key, value in (filters or {}).items():
        if key not in FILTER_KEYS:
            raise ValueError(f"unknown filter {key!r}; filter on {FILTER_USAGE}")
        if key == "year":
            clean.update(year_fields(value))
        elif key == "paper_id":
            many = isinstance(value, list | tuple | set | frozenset)
            clean["paper_ids"] = frozenset(str(v) for v in (value if many else [value]))
        elif key in ("author", "title") and not words(str(value)):
            raise ValueError(f"filter {key}={value!r} has no words to look for")
        elif key == "source_file":  # a path as the shell completes it: its file's name
            clean[key] = re.split(r"[\\/]", str(value).strip().rstrip("/\\"))[-1]
        else:
            clean[key] = str(value).strip()
    return clean


def shown(filters: Mapping[str, Any] | None) -> str:
    """'year>=2023, author=Okafor' (or 'none')."""
    parts = []
    for key, value in (filters or {}).items():
        many = isinstance(value, list | tuple | set | frozenset)
        text = ",".join(str(v) for v in value) if many else str(value)
        compares = key == "year" and text[:1] in ("<", ">")
        parts.append(f"{key}{text}" if compares else f"{key}={text}")
    return ", ".join(parts) or "none"
