"""Question answering over scientific paper abstracts, with citations, offline by default."""

from assistant.answer import CANNOT_ANSWER, Answer, Citation
from assistant.core import Assistant
from assistant.corpus import Paper
from assistant.errors import AssistantError
from assistant.ingest import IngestReport
from assistant.retrieval import Hit
from assistant.settings import Settings, load_settings

__all__ = [
    "CANNOT_ANSWER",
    "Answer",
    "Citation",
    "Assistant",
    "AssistantError",
    "Hit",
    "IngestReport",
    "Paper",
    "Settings",
    "load_settings",
]
