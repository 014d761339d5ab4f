"""Choosing the provider from settings: explicit, or ``auto`` (a key or server means openai)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from assistant.embeddings import Embedder
from assistant.llm.base import Provider
from assistant.llm.extractive import ExtractiveProvider
from assistant.settings import Settings


def resolve_provider_name(settings: Settings) -> str:
    name = settings.llm.provider
    if name == "auto":
        return "openai" if (settings.openai_api_key or settings.openai_base_url) else "extractive"
    return name


def make_provider(
    settings: Settings,
    embedder: Embedder,
    lookup: Callable[[list[str]], dict[str, np.ndarray]] | None = None,
) -> Provider:
    cfg = settings.llm
    if resolve_provider_name(settings) == "openai":
        from assistant.llm.openai_chat import OpenAIProvider

        return OpenAIProvider(cfg, settings.openai_api_key, settings.openai_base_url)
    return ExtractiveProvider(
        embedder,
        sentences=cfg.extractive_sentences,
        lookup=lookup,
    )
