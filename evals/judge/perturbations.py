"""Claims made from abstracts, true and perturbed the ways hallucinations look.

Each abstract's own sentences are the originals (a judge should keep them); each perturbation
changes one thing and should be caught: a number (``1.83×`` -> ``5.49×``), the paper's name
(another paper's coined name in its place), a negation ("improves" -> "does not improve"), a
dropped qualifier ("up to", "in some settings"). Every case carries the abstract it is judged
against and the other papers "retrieved" with it (the one whose name was borrowed, for names).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from assistant.ingest.labels import coined_name, is_coined
from assistant.judge.conflicts import PaperText
from assistant.judge.names import occurs
from assistant.judge.numbers import claim_quantities
from assistant.text.normalise import split_sentences

KINDS = ("original", "number", "name", "negation", "qualifier")


@dataclass(frozen=True)
class Case:
    kind: str
    claim: str
    source: PaperText  # the cited abstract
    others: tuple[PaperText, ...] = ()  # other retrieved papers


# One negation per sentence, the first rule that applies; verbs before copulas.
_NEGATIONS = (
    (
        r"\b(improves|outperforms|achieves|enables|reduces|increases|surpasses|yields|provides|"
        r"preserves|matches|converges|generalizes|captures|guarantees|leads)\b",
        "does not {stem}",
    ),
    (
        r"\b(improve|outperform|achieve|enable|reduce|increase|surpass|yield|provide|preserve|"
        r"match|converge|generalize|capture|guarantee|lead)\b",
        "do not {word}",
    ),
    (r"\b(better|faster|higher|stronger|more efficient)\b", "{opposite}"),
    (r"\b(can)\b", "cannot"),
    (r"\b(is|are)\b", "{word} not"),
)
_OPPOSITE = {
    "better": "worse",
    "faster": "slower",
    "higher": "lower",
    "stronger": "weaker",
    "more efficient": "less efficient",
}
_QUALIFIERS = re.compile(
    r"\s*\b(?:up to|by up to|as much as|in some settings|in some cases|in certain cases|"
    r"in certain settings|under certain conditions|in many cases|in most cases|often)\b",
    re.IGNORECASE,
)


def negate(sentence: str) -> str | None:
    for pattern, template in _NEGATIONS:
        match = re.search(pattern, sentence)
        if match:
            word = match.group(1)
            stem = word[:-2] if word.endswith("es") and word[-3] in "sxz" else word[:-1]
            new = template.format(word=word, stem=stem, opposite=_OPPOSITE.get(word, word))
            return sentence[: match.start()] + new + sentence[match.end() :]
    return None


def _format(value: float, decimals: int, like: str) -> str:
    text = f"{value:,.{decimals}f}" if "," in like else f"{value:.{decimals}f}"
    return text


def change_number(sentence: str, abstract: str) -> str | None:
    """The sentence with its first number tripled (and moved off any value the abstract has)."""
    quantities = claim_quantities(sentence)
    if not quantities:
        return None
    q = quantities[0]
    digits = re.match(r"[\d.,]+", q.text)
    if digits is None or digits.group(0) not in sentence:
        return None
    for factor in (3, 4, 7, 11):
        new = _format((q.value or 1.0) * factor, q.decimals, digits.group(0))
        if not re.search(rf"(?<![\d.,]){re.escape(new)}(?![\d])", abstract):
            return sentence.replace(digits.group(0), new, 1)
    return None


def drop_qualifier(sentence: str) -> str | None:
    dropped = _QUALIFIERS.sub("", sentence, count=1)
    return dropped if dropped != sentence else None


def swap_name(sentence: str, name: str, other: str) -> str | None:
    if other.lower() in sentence.lower():
        return None
    swapped = re.sub(rf"(?<![\w-]){re.escape(name)}(?=s?\b|-)", other, sentence)
    return swapped if swapped != sentence else None


def _names(papers: Sequence[PaperText]) -> list[str | None]:
    names = []
    for paper in papers:
        name = paper.label if is_coined(paper.label) else coined_name(paper.text)
        names.append(name if name and " " not in name and is_coined(name) else None)
    return names


def cases(papers: Sequence[PaperText], per_kind: int, seed: int = 0) -> Iterator[Case]:
    """Up to ``per_kind`` cases of each kind, sentences drawn at random (``seed``)."""
    rng = random.Random(seed)
    names = _names(papers)
    named = [i for i, n in enumerate(names) if n]
    pool = [(i, s) for i, p in enumerate(papers) for s in split_sentences(p.text)]
    pool = [(i, s) for i, s in pool if len(s.split()) >= 6]
    rng.shuffle(pool)
    counts = dict.fromkeys(KINDS, 0)
    for i, sentence in pool:
        paper = papers[i]
        made: list[tuple[str, str | None, tuple[PaperText, ...]]] = [
            ("original", sentence, ()),
            ("number", change_number(sentence, paper.text), ()),
            ("negation", negate(sentence), ()),
            ("qualifier", drop_qualifier(sentence), ()),
        ]
        own = names[i]
        if own and named:
            j = rng.choice([k for k in named if k != i] or [i])
            other = names[j]
            if other and j != i and not occurs(other, paper.text):
                made.append(("name", swap_name(sentence, own, other), (papers[j],)))
        for kind, claim, others in made:
            if claim and counts[kind] < per_kind:
                counts[kind] += 1
                yield Case(kind, claim, paper, others)
        if all(c >= per_kind for c in counts.values()):
            return
