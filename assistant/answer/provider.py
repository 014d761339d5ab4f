"""The provider seam: given a question and numbered sources, stream the answer's text."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass

from assistant.answer.llm.reply import Reasoning
from assistant.answer.result import Usage
from assistant.answer.sources import Context


@dataclass(frozen=True)
class StreamWarning:
    """Something the reader of the answer should know, e.g. that it was cut short."""

    text: str
    papers: tuple[int, ...] = ()  # the sources (1-based) it names, e.g. a refusal's closest


# Answer text deltas, the model's reasoning (never answer text), warnings, then maybe one Usage.
Piece = str | Reasoning | StreamWarning | Usage


class Provider(ABC):
    name: str
    model: str
    notice: str | None = None  # a one-line note shown with every answer
    # Whether the sources are sent to a model, and so must fit ASSISTANT_LLM__CONTEXT_TOKENS.
    prompts_model: bool = True

    @abstractmethod
    def stream(self, context: Context) -> Iterator[Piece]:
        """Yield the answer text as it is produced; a final ``Usage`` when known."""

    def condense(self, history: str, question: str) -> str | None:
        """A standalone rewrite of a follow-up question, or None to use the plain method."""
        return None
