"""How quoted sentences are laid out: one line per paper, each sentence cited.

A sentence quoted without the one before it in its abstract may open with a connective that
now points at nothing ("Moreover, KVFlow introduces …", "To this end, we introduce iFinder …",
"As a result, GPLQ is 100x faster …"). Such an opening is dropped, as a writer quoting the
sentence would drop it; the claim itself is quoted word for word. A sentence that follows its
abstract neighbour in the answer keeps its connective, since there it still connects.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

# Sentence-opening connectives, each followed by a comma in the abstract.
_CONNECTIVE = re.compile(
    r"^(?:moreover|furthermore|in addition|additionally|also|besides|as a result|"
    r"consequently|hence|thus|therefore|accordingly|however|nevertheless|nonetheless|yet|"
    r"instead|in contrast|by contrast|conversely|on the other hand|similarly|likewise|"
    r"meanwhile|specifically|in particular|notably|importantly|crucially|interestingly|"
    r"finally|lastly|first(?:ly)?|second(?:ly)?|third(?:ly)?|then|next|subsequently|"
    r"to this end|to that end|for this purpose|with this in mind|in this light|"
    r"to (?:address|tackle|overcome|solve|fill|bridge|close|mitigate|resolve) "
    r"(?:this|these|that|those)(?: \w+){0,2}|"
    r"building (?:on|upon) (?:this|these|that)(?: \w+){0,2}|"
    r"based on (?:this|these|that)(?: \w+){0,2}|"
    r"motivated by (?:this|these|that)(?: \w+){0,2}|"
    r"inspired by (?:this|these|that)(?: \w+){0,2}|"
    r"in light of (?:this|these|that)(?: \w+){0,2})\s*,\s+",
    re.IGNORECASE,
)


class Quoted(Protocol):
    @property
    def source(self) -> int: ...  # 1-based source number

    @property
    def position(self) -> int: ...  # sentence index within the abstract

    @property
    def text(self) -> str: ...


def without_dangling_opening(sentence: str) -> str:
    """'Moreover, KVFlow introduces X.' -> 'KVFlow introduces X.'; other sentences unchanged.
    The rest must still read as a sentence (at least three words)."""
    found = _CONNECTIVE.match(sentence)
    if not found:
        return sentence
    rest = sentence[found.end() :]
    if len(rest.split()) < 3 or not rest[0].isalpha():
        return sentence
    return rest[0].upper() + rest[1:]


def cite(sentence: str, n: int) -> str:
    """'We find X.' -> 'We find X [n].'"""
    body = sentence.rstrip()
    end = body[-1] if body and body[-1] in ".!?" else "."
    return f"{body.rstrip('.!?').rstrip()} [{n}]{end}"


def paper_quotes(picked: Sequence[Quoted], source: int) -> str:
    """One paper's sentences in the given order, cited; a sentence that does not follow its
    abstract neighbour loses a connective opening that would point at nothing."""
    shown: list[str] = []
    before: int | None = None
    for cand in (c for c in picked if c.source == source):
        text = cand.text if before == cand.position - 1 else without_dangling_opening(cand.text)
        shown.append(cite(text, source))
        before = cand.position
    return " ".join(shown)


def quotes(labels: Sequence[str], picked: Sequence[Quoted]) -> str:
    """One line per paper, "- Label: sentence [n]. sentence [n].", in the order given;
    ``labels[n - 1]`` is source n's label."""
    return "\n".join(
        f"- {labels[source - 1]}: {paper_quotes(picked, source)}"
        for source in dict.fromkeys(c.source for c in picked)
    )
