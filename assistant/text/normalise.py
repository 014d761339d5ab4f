"""Normalisation of abstract text as real abstracts arrive: PDF hyphenation, odd Unicode, spacing.

LaTeX, numbers and mathematical symbols are kept exactly; only typography is changed.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

_TYPOGRAPHY = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u00a0": " ",
        "\u2002": " ",
        "\u2003": " ",
        "\u2009": " ",
        "\u202f": " ",
        "\u3000": " ",
        "\ufb00": "ff",
        "\ufb01": "fi",
        "\ufb02": "fl",
        "\ufb03": "ffi",
        "\ufb04": "ffl",
        "\u00ad": None,
        "\u200b": None,
        "\u200c": None,
        "\u200d": None,
        "\ufeff": None,
    }
)
# Words that legitimately follow a suspended hyphen: "model- and data-parallel".
_SUSPENDED = {"and", "or", "to", "nor", "versus", "vs", "as", "than", "but"}
_BROKEN_WORD = re.compile(r"\b([A-Za-z]{2,})-\s+([a-z]{2,})\b")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # C0 and C1, not \t \n \r
_SPACES = re.compile(r"\s+")


def _join_broken(match: re.Match[str]) -> str:
    head, tail = match.group(1), match.group(2)
    if tail in _SUSPENDED:
        return match.group(0)
    return head + tail


def normalize_text(text: str) -> str:
    """Canonical form of an abstract or title; idempotent."""
    text = unicodedata.normalize("NFC", text).translate(_TYPOGRAPHY)
    # Escape sequences go whole, so no "[31m" is left behind; then the bare controls.
    text = _CONTROL.sub(" ", _ESCAPE_SEQUENCE.sub("", text))
    text = _BROKEN_WORD.sub(_join_broken, text)
    return _SPACES.sub(" ", text).strip()


def content_key(text: str) -> str:
    """A stable id from content: the same abstract, however spaced or cased, gives the same key."""
    canonical = _SPACES.sub(" ", normalize_text(text).casefold())
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def fingerprint(*parts: str) -> str:
    """Hash of everything stored for a paper, to skip unchanged papers on re-ingest."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8"))
        digest.update(b"\x1f")
    return digest.hexdigest()[:20]


_SENTENCE_BREAK = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+(?=[\"'(\[]?[A-Z0-9$\\])")
_ABBREVIATIONS = (
    "e.g.",
    "i.e.",
    "et al.",
    "etc.",
    "vs.",
    "cf.",
    "Fig.",
    "Eq.",
    "Sec.",
    "approx.",
    "resp.",
    "w.r.t.",
    "No.",
)


def split_sentences(text: str) -> list[str]:
    """Sentences of an abstract or an answer; abbreviations such as 'e.g.' do not end one."""
    pieces = [p.strip() for p in _SENTENCE_BREAK.split(text.strip()) if p.strip()]
    sentences: list[str] = []
    for piece in pieces:
        if sentences and sentences[-1].endswith(_ABBREVIATIONS):
            sentences[-1] = f"{sentences[-1]} {piece}"
        else:
            sentences.append(piece)
    return sentences


_ENDS_WITH_INITIAL = re.compile(r"(?:^|[\s(.])[A-Z]\.$")


def split_answer(text: str) -> list[str]:
    """Sentences of an answer: ``split_sentences``, and a name's initial does not end one
    ("written by Sarah Jones and J. R. Smith [1]."). Abstracts keep ``split_sentences``: their
    sentence vectors are stored by position."""
    sentences: list[str] = []
    for piece in split_sentences(text):
        if sentences and _ENDS_WITH_INITIAL.search(sentences[-1]):
            sentences[-1] = f"{sentences[-1]} {piece}"
        else:
            sentences.append(piece)
    return sentences


# Terminal escape sequences (CSI "ESC [ ... m", OSC "ESC ] ... BEL", two-byte "ESC x") whole, then
# any C0/C1 control character left but newline and tab. "\r" goes too: it rewrites the line.
_ESCAPE_SEQUENCE = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])|\x9b[0-?]*[ -/]*[@-~]"
)
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` safe to write to a terminal: escape sequences and control characters removed,
    newlines and tabs kept ("\\r\\n" becomes "\\n")."""
    text = _ESCAPE_SEQUENCE.sub("", text.replace("\r\n", "\n"))
    return _UNPRINTABLE.sub("", text)
