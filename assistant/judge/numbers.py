"""The numbers a claim states, and whether its sources state them.

A model that turns "1.83×" into "5.49×" or "412 stations" into "1,238 stations" keeps every other
word, so neither similarity nor word overlap sees the change. Numbers are read in the forms
abstracts and answers write them (``1.83×``, ``1.83x``, ``$1.83\\times$``, ``83%``, ``83\\%``,
``83 percent``, ``1,238``, ``10–20%``, ``two-fold``, ``$\\sim$2×``) and compared as values of a
kind (a share, a multiple, a plain number). A claim may round its source ("1.8×" for "1.83×")
and may add a bound ("up to 2×" for "2×"), but may not drop the source's upper bound: "2×" where
the source says "up to 2×" overstates it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_LATEX = (
    (re.compile(r"\\times|\\cdot(?=\s*10)"), "×"),
    (re.compile(r"\\%"), "%"),
    (re.compile(r"\\(?:sim|approx)|~"), " about "),
    (re.compile(r"\\[,;:! ]|[${}]|\\(?:text|mathrm|textbf|mathbf)\b"), ""),
    (re.compile(r"[\u2212\u2013\u2014]"), "-"),  # minus, en and em dashes
)
_VALUE = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+"
_UNIT = r"%|\s?percent\b|\s?per cent\b|\s?×|x\b|-?fold\b|\s(?:times)\b"
_QUANTITY = re.compile(rf"(?<![\w.^_/])({_VALUE})(?:(?P<unit>{_UNIT}))?(?![\w])")
_WORDS = {
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "hundred": 100,
}
_WORD_NUMBER = re.compile(
    rf"\b({'|'.join(_WORDS)})(?P<unit>-?fold\b|\s+times\b)?(?![\w-])", re.IGNORECASE
)
_UPPER_BOUND = re.compile(
    r"(?:up to|as (?:much|many|high|large|fast) as|at most|a maximum of|maximum of|"
    r"by up to|reaching up to)\s*$",
    re.IGNORECASE,
)
_BOUND_LOOKBACK = 24
_MARKERS = re.compile(r"\[\d+(?:\s*[,;\-–]\s*\d+)*\]")  # citation markers, not numbers


@dataclass(frozen=True)
class Quantity:
    value: float
    kind: str  # "%" a share, "×" a multiple, "" a plain number
    decimals: int
    text: str  # as written
    upper_bound: bool  # "up to", "at most", "as much as" before it

    def matches(self, other: Quantity) -> bool:
        """``other`` (a source's) states this value: equal, or equal once rounded to as many
        decimals as this one has; kinds agree unless one of them is plain."""
        if self.kind and other.kind and self.kind != other.kind:
            return False
        return self.value == other.value or round(other.value, self.decimals) == self.value


def clean(text: str) -> str:
    """LaTeX and typographic forms of numbers written plainly (× % - and "about")."""
    for pattern, replacement in _LATEX:
        text = pattern.sub(replacement, text)
    return text


def _kind(unit: str | None) -> str:
    unit = (unit or "").strip().lower()
    if unit in {"%", "percent", "per cent"}:
        return "%"
    return "×" if unit else ""


def _named(text: str, start: int, end: int) -> bool:
    """A number that is part of a name, a symbol or a compound: "Llama-3", "CIFAR-10", "top-1",
    "d=3", "3-kinase", "MEK 1/2", and list items "(2)"."""
    before, after = text[max(0, start - 2) : start], text[end : end + 2]
    if before.endswith("(") and after.startswith(")"):  # "(2)": an item of a list
        return True
    return bool(re.search(r"[A-Za-z]-$|[A-Za-z=/]$", before) or re.match(r"-[A-Za-z]|/\d", after))


def quantities(text: str, words: bool = True) -> list[Quantity]:
    """Numbers in ``text``; with ``words``, also "three" and "two-fold". Years (1900-2099 with
    no unit) are left out: an answer may date a paper from its metadata."""
    text = clean(text)
    found = []
    for match in _QUANTITY.finditer(text):
        if _named(text, match.start(), match.end()):
            continue
        raw = match.group(1)
        value = float(raw.replace(",", ""))
        kind = _kind(match.group("unit"))
        if not kind and "." not in raw and 1900 <= value <= 2099:
            continue
        decimals = len(raw.split(".")[1]) if "." in raw else 0
        found.append(Quantity(value, kind, decimals, match.group(0).strip(), _bounded(text, match)))
    pattern = _WORD_NUMBER if words else None
    for match in pattern.finditer(text) if pattern else ():
        value = float(_WORDS[match.group(1).lower()])
        kind = _kind(match.group("unit"))
        found.append(Quantity(value, kind, 0, match.group(0), _bounded(text, match)))
    return found


def _bounded(text: str, match: re.Match[str]) -> bool:
    return bool(_UPPER_BOUND.search(text[max(0, match.start() - _BOUND_LOOKBACK) : match.start()]))


def claim_quantities(claim: str) -> list[Quantity]:
    """What a claim states: digits in any form, and written multiples ("two-fold"); a written
    count ("three benchmarks") is often the model's own counting, so it is not held to."""
    stated = quantities(_MARKERS.sub(" ", claim))
    return [q for q in stated if q.text[:1].isdigit() or q.text[:1] == "." or q.kind]


def unstated(claim: str, sources: Sequence[str]) -> list[str]:
    """The claim's numbers (as written) that no source states."""
    stated = [q for source in sources for q in quantities(source)]
    return [q.text for q in claim_quantities(claim) if not any(q.matches(s) for s in stated)]


def dropped_bounds(claim: str, sources: Sequence[str]) -> list[str]:
    """Source quantities the claim repeats without the source's upper bound: "2×" where every
    source that gives 2× says "up to 2×". Returned as the source writes them."""
    stated = [q for source in sources for q in quantities(source)]
    dropped = []
    for q in claim_quantities(claim):
        same = [s for s in stated if q.matches(s)]
        if same and not q.upper_bound and all(s.upper_bound for s in same):
            dropped.append(f"up to {same[0].text}")
    return dropped
