"""Checking an answer's citations against the numbered sources it was given.

Markers are ``[n]``, ``[n, m]``, ``[n-m]`` or ``[n][m]``. Markers that point at no source are
removed and reported; sentences without any marker are flagged; only papers actually cited are
returned, each with its full abstract.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from assistant.answer import CANNOT_ANSWER, Citation
from assistant.retrieval import Hit
from assistant.text import split_sentences

_MARKER = re.compile(r"\[(\d+(?:\s*(?:,|;|-|–)\s*\d+)*)\]")
_MARKER_AFTER_STOP = re.compile(r"([.!?])((?:\s*\[\d[^\]]*\])+)")
_NOT_A_CLAIM = re.compile(r"^(?:#+\s|\*\*?[^*]+\*\*?:?$|sources?:|references?:)", re.I)


@dataclass
class CheckedText:
    text: str
    citations: list[Citation]
    warnings: list[str] = field(default_factory=list)
    uncited: list[str] = field(default_factory=list)


def _numbers(group: str) -> list[int]:
    out: list[int] = []
    for part in re.split(r"\s*[,;]\s*", group):
        if re.search(r"[-–]", part):
            lo, hi = (int(x) for x in re.split(r"\s*[-–]\s*", part))
            if lo <= hi and hi - lo <= 20:
                out.extend(range(lo, hi + 1))
                continue
            out.extend([lo, hi])
        else:
            out.append(int(part))
    return out


def cited_numbers(text: str) -> list[int]:
    """Every source number cited in text, in order of first appearance."""
    seen: list[int] = []
    for match in _MARKER.finditer(text):
        for n in _numbers(match.group(1)):
            if n not in seen:
                seen.append(n)
    return seen


def check_citations(text: str, sources: Sequence[Hit]) -> CheckedText:
    """Clean the markers of an answer whose sources are numbered 1..len(sources)."""
    valid = set(range(1, len(sources) + 1))
    warnings: list[str] = []
    # "… claim. [1]" -> "… claim [1]." so the marker stays with its sentence.
    text = _MARKER_AFTER_STOP.sub(lambda m: f"{m.group(2)}{m.group(1)}", text.strip())

    def repair(match: re.Match[str]) -> str:
        numbers = _numbers(match.group(1))
        bad = [n for n in numbers if n not in valid]
        for n in bad:
            warnings.append(f"removed citation [{n}]: there is no source {n}")
        good = [n for n in dict.fromkeys(numbers) if n in valid]
        return "".join(f"[{n}]" for n in good)

    text = _MARKER.sub(repair, text)
    text = re.sub(r"[ \t]+([.,;:!?])", r"\1", re.sub(r"[ \t]{2,}", " ", text)).strip()

    uncited: list[str] = []
    for line in text.splitlines():
        line = line.strip().lstrip("-*• ").strip()
        if not line or _NOT_A_CLAIM.match(line):
            continue
        for sentence in split_sentences(line):
            if _MARKER.search(sentence) or CANNOT_ANSWER in sentence:
                continue
            if len(sentence.split()) >= 4:
                uncited.append(sentence)
    for sentence in uncited:
        warnings.append(f"uncited sentence: {sentence[:120]}")

    citations = [
        Citation(
            n=n,
            paper_id=sources[n - 1].paper_id,
            label=sources[n - 1].label,
            source=sources[n - 1].source,
            text=sources[n - 1].text,
        )
        for n in sorted(cited_numbers(text))
    ]
    return CheckedText(text=text, citations=citations, warnings=warnings, uncited=uncited)
