"""Checking an answer's citations against the numbered sources it was given.

Markers are ``[n]``, ``[n, m]``, ``[n-m]`` or ``[n][m]``. Markers that point at no source, or
that mark no claim (a sentence of markers only, with no words), are removed and reported;
sentences without any marker are flagged; only papers cited by a claim are returned, each with
its full abstract. Markers in headings and "Sources:" lines cite no claim and are not counted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from assistant.answer.result import CANNOT_ANSWER, Citation
from assistant.retrieval.hybrid import Hit
from assistant.text.normalise import split_answer

_MARKER = re.compile(r"\[(\d+(?:\s*(?:,|;|-|–)\s*\d+)*)\]")
_MARKER_AFTER_STOP = re.compile(r"([.!?])((?:\s*\[\d[^\]]*\])+)")
_WORD = re.compile(r"[^\W\d_]{2,}")  # a cited claim needs two: "[1][2][3]" alone is none
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


def _tidy(text: str) -> str:
    """Spacing left by removed markers: "a  b" -> "a b", "claim ." -> "claim."."""
    return re.sub(r"[ \t]+([.,;:!?])", r"\1", re.sub(r"(?<=\S)[ \t]{2,}", " ", text))


def makes_claims(text: str) -> bool:
    """Holds words, not only markers: "[1][2][3]" claims nothing."""
    return len(_WORD.findall(_MARKER.sub(" ", text))) >= 2


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
    # "… claim. [1]" (or the marker on the next line) -> "… claim [1]." so the marker stays
    # with its sentence.
    text = _MARKER_AFTER_STOP.sub(
        lambda m: re.sub(r"\s+", " ", m.group(2)) + m.group(1), text.strip()
    )

    def repair(match: re.Match[str]) -> str:
        numbers = _numbers(match.group(1))
        bad = [n for n in numbers if n not in valid]
        for n in bad:
            warnings.append(f"removed citation [{n}]: there is no source {n}")
        good = [n for n in dict.fromkeys(numbers) if n in valid]
        return "".join(f"[{n}]" for n in good)

    text = _tidy(_MARKER.sub(repair, text)).strip()

    uncited: list[str] = []
    cited: set[int] = set()
    lines: list[str] = []
    for raw in text.splitlines():
        line = raw.strip().lstrip("-*• ").strip()
        if not line or _NOT_A_CLAIM.match(line):
            lines.append(raw)  # headings, "Sources:" lists: their markers cite no claim
            continue
        emptied = False  # the line held only markers, now removed
        for sentence in split_answer(line):
            if _MARKER.search(sentence):
                if len(_WORD.findall(_MARKER.sub(" ", sentence))) >= 2:
                    cited.update(cited_numbers(sentence))
                else:  # "[1][2][3]", "Yes [1]": markers without words make no claim
                    markers = "".join(m.group(0) for m in _MARKER.finditer(sentence))
                    warnings.append(f"removed citation {markers}: it marks no claim")
                    bare = _MARKER.sub("", sentence)
                    raw = _tidy(raw.replace(sentence, bare, 1)).rstrip()
                    emptied = emptied or not _WORD.search(raw)
                continue
            if CANNOT_ANSWER in sentence:
                continue
            if len(sentence.split()) >= 4:
                uncited.append(sentence)
        if not emptied:
            lines.append(raw)
    text = "\n".join(lines).strip()
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
        for n in sorted(cited)
    ]
    return CheckedText(text=text, citations=citations, warnings=warnings, uncited=uncited)
