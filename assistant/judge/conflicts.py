"""Exact checks of a claim against what it cites: numbers, names, negations, bounds.

Each is a rule a reader can verify by looking, so where one fires it decides, whatever the
judge's score: a number no source gives, a coined name of another retrieved paper (or a
mixed-case one no retrieved paper uses) in place of the cited paper's, or a
negation or reversal of the cited sentence makes the claim unsupported; a number repeated
without the source's "up to", or a sentence restated without its "in some settings" or
"often", makes it weak (it overstates). ``Conflict.reason`` is what
``--explain`` prints.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from assistant.judge.names import Source, missing_names, mixed_case, owner
from assistant.judge.numbers import dropped_bounds, unstated
from assistant.judge.reversal import dropped_qualifier, reversal
from assistant.text.acronyms import spelled_out
from assistant.text.normalise import split_sentences

Severity = Literal["unsupported", "weak"]


@dataclass(frozen=True)
class PaperText:
    """A source as the checks need it; ``label`` may be empty (e.g. a SciFact abstract)."""

    text: str
    label: str = ""


@dataclass(frozen=True)
class Conflict:
    kind: Literal["number", "name", "negation", "bound"]
    severity: Severity
    reason: str


def _name_conflict(claim: str, cited: Sequence[Source], papers: Sequence[Source]) -> str | None:
    """A name of the claim that belongs to another retrieved paper, or, written in mixed case,
    to none of them (see ``names``)."""
    others = [p for p in papers if all(p.text != c.text for c in cited)]
    for name in missing_names(claim, cited):
        paper = owner(name, others)
        if paper is not None:
            whose = "another retrieved paper" if paper.label == name else f"from {paper.label}"
            cited_label = next((c.label for c in cited if c.label), "")
            return f"{name} is {whose}, not {cited_label or 'the paper cited'}"
        if any(spelled_out(name, c.text) for c in cited):
            continue  # "MRI" for "magnetic resonance imaging"
        if mixed_case(name):
            return f"{name} does not occur in the cited abstract(s)"
    return None


def find_conflict(
    claim: str, cited: Sequence[Source], papers: Sequence[Source] = ()
) -> Conflict | None:
    """The first exact conflict between the claim and its cited sources, or None. ``papers``:
    every retrieved paper, to say whose name a claim borrowed."""
    if not cited:
        return None
    texts = [s.text for s in cited]
    numbers = unstated(claim, texts)
    if numbers:
        return Conflict("number", "unsupported", f"no cited source gives {', '.join(numbers)}")
    name = _name_conflict(claim, cited, papers)
    if name:
        return Conflict("name", "unsupported", name)
    sentences = [s for t in texts for s in split_sentences(t)]
    reversed_ = reversal(claim, sentences)
    if reversed_:
        return Conflict("negation", "unsupported", reversed_)
    bounds = dropped_bounds(claim, texts)
    if bounds:
        return Conflict("bound", "weak", f"the source says {bounds[0]}")
    qualifier = dropped_qualifier(claim, sentences)
    if qualifier:
        return Conflict("bound", "weak", qualifier)
    return None
