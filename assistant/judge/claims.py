"""An answer's sentences with the citation numbers each one carries."""

from __future__ import annotations

import re
from dataclasses import dataclass

from assistant.answer.citations import cited_numbers
from assistant.answer.result import CANNOT_ANSWER
from assistant.text.normalise import split_answer

_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")


@dataclass(frozen=True)
class CitedSentence:
    text: str
    citations: tuple[int, ...]


def cited_sentences(answer: str) -> list[CitedSentence]:
    """Sentences that make claims: headings, refusals and empty lines are skipped."""
    out: list[CitedSentence] = []
    for line in answer.splitlines():
        line = _BULLET.sub("", line).strip()
        if not line or line.startswith("#"):
            continue
        for sentence in split_answer(line):
            if CANNOT_ANSWER.rstrip(".") in sentence or len(sentence.split()) < 3:
                continue
            out.append(CitedSentence(sentence, tuple(cited_numbers(sentence))))
    return out
