"""Markdown in a model's answer, made plain for the terminal: ``**bold**`` -> ``bold``,
``## Heading`` -> ``Heading``, ``* item`` / ``+ item`` -> ``- item`` (the bullet the offline
answers use too). Numbered lists, italics and code spans stay as written. The stored answer and
``--json`` keep the model's markdown; this is for display only, like ``latex.py``.
"""

from __future__ import annotations

import re

_HEADING = re.compile(r"^([ \t]{0,3})#{1,6}[ \t]+", re.MULTILINE)
_BULLET = re.compile(r"^([ \t]*)[*+][ \t]+", re.MULTILINE)
_STRONG = re.compile(r"\*\*")
_LINE_OPENING = re.compile(r"[ \t]*[#*+-]*[ \t]*")  # what may still become a heading or bullet
_HELD = 8


def markdown_to_text(text: str, line_start: bool = True) -> str:
    """``text`` with headings, bullets and bold made plain; ``line_start``: whether ``text``
    begins at the start of a line."""
    if not line_start:
        return markdown_to_text("x" + text)[1:]  # "^" must not match at the cut
    text = _HEADING.sub(r"\1", text)
    text = _BULLET.sub(r"\1- ", text)
    return _STRONG.sub("", text)


class MarkdownStream:
    """``markdown_to_text`` on pieces: the start of a line is held until it is known whether it
    opens a heading or a bullet, and trailing ``*`` until it is known whether they make ``**``."""

    def __init__(self) -> None:
        self.pending = ""
        self.line_start = True

    def feed(self, piece: str) -> str:
        text = self.pending + piece
        begins = text.rfind("\n") + 1
        tail = text[begins:]
        opening = (begins > 0 or self.line_start) and len(tail) <= _HELD
        if tail and opening and _LINE_OPENING.fullmatch(tail):
            cut = begins
        elif text.endswith("*"):
            cut = len(text.rstrip("*"))
        else:
            cut = len(text)
        return self._emit(text[:cut], text[cut:])

    def flush(self) -> str:
        return self._emit(self.pending, "")

    def _emit(self, head: str, rest: str) -> str:
        self.pending = rest
        if not head:
            return ""
        out = markdown_to_text(head, self.line_start)
        self.line_start = head.endswith("\n")
        return out
