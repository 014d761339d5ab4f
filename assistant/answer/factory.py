"""Choosing the provider from settings: explicit, or ``auto``.

``auto`` means an LLM when one is configured: OPENAI_API_KEY or OPENAI_BASE_URL is set, or the
model names another LangChain provider (``--model anthropic:claude-...``); otherwise extractive.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from assistant.answer.offline.extractive import ExtractiveProvider
from assistant.answer.offline.question import Rarity
from assistant.answer.provider import Provider
from assistant.embedding.embedders import Embedder
from assistant.settings import Settings


def names_other_provider(model: str) -> bool:
    """``model`` is ``provider:name`` for a LangChain provider other than OpenAI."""
    if ":" not in model:
        return False  # the common case decides without importing LangChain
    from assistant.answer.llm.chat_model import split_model

    return split_model(model)[0] != "openai"


def resolve_provider_name(settings: Settings) -> str:
    name = settings.llm.provider
    if name == "auto":
        configured = settings.openai_api_key or settings.openai_base_url
        return "openai" if configured or names_other_provider(settings.llm.model) else "extractive"
    return name


def make_provider(
    settings: Settings,
    embedder: Embedder,
    lookup: Callable[[list[str]], dict[str, np.ndarray]] | None = None,
    rarity: Rarity | None = None,
) -> Provider:
    cfg = settings.llm
    if resolve_provider_name(settings) == "openai":
        from assistant.answer.llm.chat_model import ChatModelProvider

        return ChatModelProvider(cfg, settings.openai_api_key, settings.openai_base_url)
    return ExtractiveProvider(
        embedder,
        sentences=cfg.extractive_sentences,
        lookup=lookup,
        rarity=rarity,
    )
