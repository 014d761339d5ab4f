"""``ChatOpenAI`` for OpenAI-compatible servers, keeping the reasoning they send beside the answer.

LangChain's ``ChatOpenAI`` reads only fields of OpenAI's own API; the servers people run locally
put a reasoning model's thinking in a field of their own: ``reasoning_content`` (llama.cpp's
server, vLLM, DeepSeek, LM Studio) or ``reasoning`` (Ollama, OpenRouter, newer vLLM and gpt-oss
servers). LangChain's documented remedy is a provider-specific subclass; this one copies either
field, streamed or whole, into the message's ``additional_kwargs["reasoning_content"]``, where
``chat_model.py`` reads it. Everything else is ``ChatOpenAI`` unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import openai
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_openai import ChatOpenAI

REASONING_FIELDS = ("reasoning_content", "reasoning")
REASONING_KEY = "reasoning_content"


def reasoning_of(message: Mapping[str, Any] | None) -> str:
    """The reasoning text of a delta or message dict, from whichever field holds it."""
    for name in REASONING_FIELDS:
        value = (message or {}).get(name)
        if isinstance(value, str) and value:
            return value
    return ""


class CompatibleChatOpenAI(ChatOpenAI):
    """``ChatOpenAI`` that also keeps ``reasoning_content`` / ``reasoning``."""

    def _convert_chunk_to_generation_chunk(
        self,
        chunk: dict[str, Any],
        default_chunk_class: type,
        base_generation_info: dict[str, Any] | None,
    ) -> ChatGenerationChunk | None:
        generation = super()._convert_chunk_to_generation_chunk(
            chunk, default_chunk_class, base_generation_info
        )
        choices = chunk.get("choices") or []
        if generation is not None and choices:
            reasoning = reasoning_of(choices[0].get("delta"))
            if reasoning:
                generation.message.additional_kwargs[REASONING_KEY] = reasoning
        return generation

    def _create_chat_result(
        self,
        response: dict[str, Any] | openai.BaseModel,
        generation_info: dict[str, Any] | None = None,
    ) -> ChatResult:
        result = super()._create_chat_result(response, generation_info)
        data = response if isinstance(response, dict) else response.model_dump()
        for generation, choice in zip(result.generations, data.get("choices") or [], strict=False):
            reasoning = reasoning_of(choice.get("message"))
            if reasoning:
                generation.message.additional_kwargs[REASONING_KEY] = reasoning
        return result
