"""What `ask` returns: a checked, cited answer with its sources, usage and timing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from assistant.ingest.corpus import Paper
from assistant.retrieval.hybrid import Hit

if TYPE_CHECKING:
    from assistant.judge.verify import SentenceCheck

# The one phrase for "the abstracts do not answer this". Prompts and tests use this constant.
CANNOT_ANSWER = "The abstracts I have do not answer this question."


@dataclass(frozen=True)
class Citation:
    n: int  # the [n] used in the answer text
    paper_id: str
    label: str
    source: str
    text: str  # the full abstract that supports the sentence

    def to_json(self, paper: Paper | None = None) -> dict[str, Any]:
        """With the cited paper's title, authors, year, venue, URL and DOI when it is given."""
        known = paper.bibliographic() if paper is not None else {}
        return {
            "n": self.n,
            "paper_id": self.paper_id,
            "label": self.label,
            "source": self.source,
            "text": self.text,
            "title": known.get("title"),
            "authors": known.get("authors", []),
            "year": known.get("year"),
            "venue": known.get("venue"),
            "url": known.get("url"),
            "doi": known.get("doi"),
        }


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0  # reasoning included, as servers count it
    cost_usd: float | None = None
    estimated: bool = True  # True when counted with tiktoken, False when the provider reported
    reasoning_tokens: int = 0  # of completion_tokens, those the model spent reasoning

    def to_json(self) -> dict[str, Any]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "cost_usd": self.cost_usd,
            "estimated": self.estimated,
        }


@dataclass
class Answer:
    question: str
    text: str
    refused: bool
    citations: list[Citation]
    retrieved: list[Hit]
    provider: str
    model: str
    warnings: list[str] = field(default_factory=list)
    uncited_sentences: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    latency_ms: float = 0.0
    notice: str | None = None  # e.g. how to switch on an LLM; shown, not part of the answer
    search_query: str | None = None  # the standalone query searched, when it differs
    checks: list[SentenceCheck] = field(default_factory=list)  # per-sentence support, if verified
    reasoning: str = ""  # what a reasoning model thought before answering; never the answer

    def paper_of(self, citation: Citation) -> Paper | None:
        """The cited paper with all its metadata (cited papers are among those retrieved)."""
        return next((h.paper for h in self.retrieved if h.paper_id == citation.paper_id), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "answer": self.text,
            "refused": self.refused,
            "citations": [c.to_json(self.paper_of(c)) for c in self.citations],
            "retrieved": [
                {
                    "paper_id": h.paper_id,
                    "label": h.label,
                    "source": h.source,
                    "score": round(h.score, 6),
                    **h.paper.bibliographic(),
                }
                for h in self.retrieved
            ],
            "warnings": list(self.warnings),
            "reasoning": self.reasoning or None,
            "checks": [c.to_json() for c in self.checks],
            "usage": self.usage.to_json(),
            "latency_ms": round(self.latency_ms, 1),
            "provider": self.provider,
            "model": self.model,
        }
