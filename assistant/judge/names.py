"""The coined names a claim uses, and which paper each one belongs to.

"STARFlow achieves ..." cited to KVFlow's abstract reads almost exactly like "KVFlow achieves
...": one word differs, and it is the word that says which paper the finding is from. A name a
paper coined (KVFlow, MINJA, GaRA-SAM, GPT-4o; see ``labels.is_coined``) in the claim must occur
in what it cites, or be the cited paper's label; otherwise the claim is unsupported, and the
paper the name does belong to, when one was retrieved, is named in the explanation.

A name no retrieved paper uses is held to the same rule only when it is written in mixed case
(KVFlow, SGLang, GPT-4o): all-capital abbreviations and symbols (MRI, SSRI, YAP1, miRNA) are as
often general vocabulary an abstract spells out or takes for granted, and holding them cost the
judge 3 points of balanced accuracy on SciFact dev, where annotators accept them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from assistant.ingest.labels import is_coined

_TOKEN = re.compile(r"(?<![\w-])[A-Za-z][A-Za-z0-9]*(?:[-.][A-Za-z0-9]+)*")
_MARKERS = re.compile(r"\[\d+(?:\s*[,;\-–]\s*\d+)*\]")


class Source(Protocol):
    """A paper as the checks see it: what it is called and its abstract (``Hit``, ``Citation``
    and ``PaperText`` all qualify)."""

    @property
    def label(self) -> str: ...

    @property
    def text(self) -> str: ...


_DEFINED = re.compile(r"\w[\w\s'-]*\(([^()]{2,20})\)")  # "Neural Stem Cell (NSC)": its own


def _head(token: str) -> str:
    """The coined part of a compound: "iPSC-derived" -> "iPSC", "IP3R-mediated" -> "IP3R"."""
    parts = token.split("-")
    while len(parts) > 1 and parts[-1].islower() and len(parts[-1]) > 3:
        parts.pop()
    while len(parts) > 1 and parts[0].islower() and len(parts[0]) > 3:
        parts.pop(0)
    return "-".join(parts)


def _defines(name: str, before: str) -> bool:
    """The words before "(IgG)" are what its capitals abbreviate: "Immunoglobulin G"."""
    capitals = [c for c in name if c.isupper()]
    words = re.findall(r"[A-Za-z]+", before)[-len(capitals) :] if capitals else []
    return len(words) == len(capitals) and all(
        w[0].upper() == c for w, c in zip(words, capitals, strict=True)
    )


def claim_names(claim: str) -> list[str]:
    """Coined names in the claim, in order, each once; an abbreviation the claim spells out
    itself ("Neural Stem Cell (NSC)") is left out: it is the claim's shorthand, not a source's
    name ("Return-Aware Context (NautData)" spells out nothing, so NautData is kept)."""
    claim = _MARKERS.sub(" ", claim)
    defined = {
        m.group(1).strip()
        for m in _DEFINED.finditer(claim)
        if _defines(m.group(1).strip(), m.group(0)[: m.start(1) - m.start()])
    }
    names = []
    for token in _TOKEN.findall(claim):
        token = _head(token.rstrip("."))
        if token.endswith("s") and token[-2:-1].isupper():  # "LLMs", "equiEPNNs": the plural
            token = token[:-1]
        if is_coined(token) and token not in defined:
            names.append(token)
    return list(dict.fromkeys(names))


def _pattern(name: str) -> re.Pattern[str]:
    """The name as a whole word, case aside, a hyphen or a space optional where it has one
    ("KV-cache" is "KV cache"); a plural, a possessive or a version may follow ("STARFlow-V",
    "MEK1")."""
    parts = [re.escape(p) for p in re.split(r"[-\s]+", name) if p]
    body = r"[-\s]?".join(parts)
    digits = r"\d*" if name[-1:].isalpha() else ""  # "MEK" is in "MEK1/2"
    return re.compile(rf"(?<![A-Za-z0-9]){body}{digits}(?=s?(?:$|[^A-Za-z0-9]|-))", re.IGNORECASE)


def occurs(name: str, text: str) -> bool:
    return bool(_pattern(name).search(text))


def missing_names(claim: str, cited: Sequence[Source]) -> list[str]:
    """The claim's coined names that neither the cited abstracts nor their labels contain."""
    return [
        name
        for name in claim_names(claim)
        if not any(occurs(name, s.text) or occurs(name, s.label) for s in cited)
    ]


def mixed_case(name: str) -> bool:
    """KVFlow, SGLang, GPT-4o, FoxO3a: a capital first, another capital and a small letter."""
    return name[0].isupper() and any(c.islower() for c in name) and sum(map(str.isupper, name)) > 1


def owner(name: str, papers: Sequence[Source]) -> Source | None:
    """The paper the name belongs to: the one it labels, else the first whose abstract has it."""
    for paper in papers:
        if occurs(name, paper.label):
            return paper
    return next((p for p in papers if occurs(name, p.text)), None)
