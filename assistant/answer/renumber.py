"""Citation numbers for the reader: 1..n in the order the answer first cites them.

The model cites sources by their retrieval rank ([3], then [1]); the reader sees [1], then [2],
with no gaps. ``Renumberer`` does it on the stream, so the text printed as it arrives already
carries the final numbers; ``in_order_of_citation`` does it on the checked answer and its
citations. Both read markers with the same grammar as the citation check
(``[n]``, ``[n, m]``, ``[n-m]``), and both give the same numbers for the same text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from assistant.answer.citations import _MARKER, _numbers
from assistant.answer.result import Citation

# A "[" that more text could still turn into a marker: "[", "[3", "[1, ".
_OPEN_MARKER = re.compile(r"\[[\d\s,;\-–]*\Z")
_MAX_HELD = 40  # characters held back waiting for a "]"


def _marker_numbers(group: str) -> list[int] | None:
    try:
        return list(dict.fromkeys(_numbers(group)))
    except ValueError:  # "[1-2-3]": not a marker the check can read either
        return None


class Renumberer:
    """Rewrites source numbers to display numbers on a stream of text pieces.

    Numbers 1..``sources`` are renumbered in order of first appearance; others (markers to no
    source, which the check removes afterwards) are left as they are. A marker split across
    pieces ("[" then "3]") is held back until it is complete.
    """

    def __init__(self, sources: int):
        self.sources = sources
        self.numbering: dict[int, int] = {}  # source number -> display number
        self.pending = ""

    def feed(self, piece: str) -> str:
        text, self.pending = self.pending + piece, ""
        start = text.rfind("[")
        if start >= 0 and len(text) - start <= _MAX_HELD and _OPEN_MARKER.match(text, start):
            text, self.pending = text[:start], text[start:]
        return _MARKER.sub(self._replace, text)

    def flush(self) -> str:
        text, self.pending = self.pending, ""
        return text

    def _replace(self, match: re.Match[str]) -> str:
        numbers = _marker_numbers(match.group(1))
        if numbers is None:
            return match.group(0)
        out = []
        for n in numbers:
            if 1 <= n <= self.sources:
                n = self.numbering.setdefault(n, len(self.numbering) + 1)
            out.append(f"[{n}]")
        return "".join(out)


def in_order_of_citation(text: str, citations: Sequence[Citation]) -> tuple[str, list[Citation]]:
    """A checked answer (every marker points at one of ``citations``) with its citations
    renumbered 1..n in order of first appearance in the text, sorted by their new number."""
    renumberer = Renumberer(max((c.n for c in citations), default=0))
    text = renumberer.feed(text) + renumberer.flush()
    numbering = renumberer.numbering
    for c in citations:  # cited, yet not in the text: keep it, after the others
        numbering.setdefault(c.n, len(numbering) + 1)
    renumbered = [replace(c, n=numbering[c.n]) for c in citations]
    return text, sorted(renumbered, key=lambda c: c.n)
