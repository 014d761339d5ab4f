"""The numbered sources block given to the model, within a token budget.

Each retrieved paper becomes ``<source n="1" ...>abstract</source>``. Abstracts are untrusted
data: anything in them that looks like our own delimiters is defused, so an abstract cannot close
its block and speak as the system, and chat-template control tokens are neutralised
(``untrusted.py``), so it cannot open a turn of its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from assistant.retrieval.hybrid import Hit
from assistant.text.untrusted import neutralise

_DELIMITER = re.compile(r"<\s*/?\s*(source|question|system|user|assistant)\b", re.IGNORECASE)


def defuse(text: str) -> str:
    """Make tag-like text inert: '</source>' -> '‹/source>', '<|im_start|>' -> '‹im_start›'."""
    return _DELIMITER.sub(lambda m: "‹" + m.group(0)[1:], neutralise(text))


def _attr(value: str) -> str:
    return " ".join(defuse(value).replace('"', "'").split())


@dataclass(frozen=True)
class Context:
    question: str
    sources: list[Hit]  # sources[i] is [i + 1] in the prompt
    block: str
    tokens: int | None  # what the block costs; None when there was no budget to count for
    dropped: int = 0  # retrieved papers left out for the budget
    pinned: bool = False  # the user chose these papers; they are relevant by definition
    limit: int | None = None  # papers a "which papers ..." answer shows at most (the -k asked)
    # A half of a question in parts that does not point back at the first half's papers: the
    # sources' search scores are the whole question's, not this half's.
    part: bool = False
    # "Which papers study coral reefs or glaciers?": each topic asked as a question of its own,
    # with its own search (the sources hold their papers too); empty for any other question.
    alternatives: tuple[Context, ...] = ()
    own: int = 0  # then: the first ``own`` sources are the whole question's search (0: all)
    # The words the store's abstracts define the question's acronyms by (("MoE",
    # "mixture-of-experts"),), which the search embedded with it: the offline answer does too.
    definitions: tuple[tuple[str, str], ...] = ()

    def as_asked(self) -> Context:
        """The whole question with the papers its own search found, not its topics'."""
        if not self.own:
            return self
        return replace(self, sources=self.sources[: self.own], alternatives=(), own=0)


def render_source(n: int, hit: Hit, body: str) -> str:
    """The block header carries what is known about the paper (title, authors, year, venue,
    url, DOI), so a model can answer "who wrote ..." from it; unknown fields are left out."""
    paper = hit.paper
    known = {
        "title": paper.title,
        "authors": "; ".join(paper.authors),
        "year": str(paper.year) if paper.year is not None else None,
        "venue": paper.venue,
        "url": paper.url,
        "doi": paper.doi,
    }
    extra = "".join(f' {key}="{_attr(value)}"' for key, value in known.items() if value)
    return (
        f'<source n="{n}" label="{_attr(hit.label)}" ref="{_attr(hit.source)}"{extra}>\n'
        f"{defuse(body)}\n</source>"
    )


def build_context(
    question: str,
    hits: Sequence[Hit],
    budget_tokens: int | None,
    count: Callable[[str], int],
    pinned: bool = False,
) -> Context:
    """Number the hits in rank order; a full abstract that does not fit gives way to its best
    passage, and what does not fit at all is left out (counted in ``dropped``). With no budget
    (no model is prompted) every hit is a source, and nothing is counted."""
    if budget_tokens is None:
        block = "\n".join(render_source(n, hit, hit.text) for n, hit in enumerate(hits, start=1))
        return Context(question, list(hits), block, tokens=None, pinned=pinned)
    entries: list[str] = []
    sources: list[Hit] = []
    used = 0
    for hit in hits:
        n = len(sources) + 1
        for body in (hit.text, hit.chunk):
            entry = render_source(n, hit, body)
            cost = count(entry) + 1
            if used + cost <= budget_tokens:
                entries.append(entry)
                sources.append(hit)
                used += cost
                break
    return Context(
        question=question,
        sources=sources,
        block="\n".join(entries),
        tokens=used,
        dropped=len(hits) - len(sources),
        pinned=pinned,
    )
