"""Question answering over scientific paper abstracts, with citations, offline by default.

The names below are imported on first use (PEP 562), so ``import assistant.cli.main`` and
``assistant --help`` do not pay for Chroma, LangChain or the embedder until a command needs them.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assistant.answer.result import CANNOT_ANSWER, Answer, Citation
    from assistant.core import Assistant
    from assistant.errors import AssistantError
    from assistant.ingest.corpus import Paper
    from assistant.ingest.pipeline import IngestReport
    from assistant.retrieval.hybrid import Hit
    from assistant.settings import Settings, load_settings

_EXPORTS = {
    "CANNOT_ANSWER": "assistant.answer.result",
    "Answer": "assistant.answer.result",
    "Citation": "assistant.answer.result",
    "Assistant": "assistant.core",
    "AssistantError": "assistant.errors",
    "Hit": "assistant.retrieval.hybrid",
    "IngestReport": "assistant.ingest.pipeline",
    "Paper": "assistant.ingest.corpus",
    "Settings": "assistant.settings",
    "load_settings": "assistant.settings",
}
__all__ = [
    "CANNOT_ANSWER",
    "Answer",
    "Assistant",
    "AssistantError",
    "Citation",
    "Hit",
    "IngestReport",
    "Paper",
    "Settings",
    "load_settings",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'assistant' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
