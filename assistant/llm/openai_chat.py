"""OpenAI chat models, and any OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio),
through LangChain: ``ChatPromptTemplate | ChatOpenAI``, streamed.

Retries on timeouts, 429 and 5xx are the openai client's own (``max_retries``, with backoff);
what still fails becomes one ``ProviderError`` that names the setting to change.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import openai
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate

from assistant.answer import CANNOT_ANSWER, Usage
from assistant.context import Context
from assistant.errors import ConfigError, ProviderError
from assistant.llm.base import Piece, Provider
from assistant.prompts import load_prompt
from assistant.settings import LLMSettings


def answer_prompt() -> ChatPromptTemplate:
    return ChatPromptTemplate.from_messages(
        [("system", load_prompt("answer_system")), ("human", load_prompt("answer_user"))]
    ).partial(cannot_answer=CANNOT_ANSWER)


class OpenAIProvider(Provider):
    name = "openai"

    def __init__(
        self,
        settings: LLMSettings,
        api_key: str | None,
        base_url: str | None,
        model: str | None = None,
    ):
        from langchain_openai import ChatOpenAI

        if not api_key and not base_url:
            raise ConfigError(
                "provider openai needs OPENAI_API_KEY (or OPENAI_BASE_URL for a compatible "
                "server such as Ollama); or use --provider extractive, which needs neither"
            )
        self.model = model or settings.model
        self.base_url = base_url
        self.timeout = settings.timeout
        self.max_retries = settings.max_retries
        llm = ChatOpenAI(
            model=self.model,
            api_key=api_key
            or "not-needed",  # local servers ignore the key but the client wants one
            base_url=base_url,
            temperature=settings.temperature,
            max_tokens=settings.max_tokens,
            timeout=settings.timeout,
            max_retries=settings.max_retries,
            stream_usage=True,
        )
        self.chain = answer_prompt() | llm
        self.condenser = (
            ChatPromptTemplate.from_messages([("human", load_prompt("condense_question"))])
            | llm
            | StrOutputParser()
        )

    def _where(self) -> str:
        return f"the model server at {self.base_url}" if self.base_url else "OpenAI"

    def condense(self, history: str, question: str) -> str | None:
        with self._errors():
            text = self.condenser.invoke({"history": history, "question": question})
        line = text.strip().splitlines()[0].strip().strip('"') if text.strip() else ""
        return line or None

    def stream(self, context: Context) -> Iterator[Piece]:
        usage: dict[str, Any] | None = None
        inputs = {"question": context.question, "sources": context.block}
        with self._errors():
            for chunk in self.chain.stream(inputs):
                text = chunk.content if isinstance(chunk.content, str) else ""
                if text:
                    yield text
                if getattr(chunk, "usage_metadata", None):
                    usage = dict(chunk.usage_metadata)  # type: ignore[arg-type]
        if usage:
            yield Usage(
                prompt_tokens=int(usage.get("input_tokens", 0)),
                completion_tokens=int(usage.get("output_tokens", 0)),
                estimated=False,
            )

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """The openai client's failures, after its own retries, as one actionable error."""
        try:
            yield
        except openai.AuthenticationError as exc:
            raise ProviderError(
                f"{self._where()} rejected the key (401); check OPENAI_API_KEY"
            ) from exc
        except openai.NotFoundError as exc:
            raise ProviderError(
                f"{self._where()} has no model {self.model!r} (404); pick another with --model"
            ) from exc
        except openai.RateLimitError as exc:
            raise ProviderError(
                f"{self._where()} is rate limiting (429) after "
                f"{self.max_retries} retries; wait and try again"
            ) from exc
        except openai.APITimeoutError as exc:
            raise ProviderError(
                f"{self._where()} did not answer within {self.timeout:g} s "
                f"({self.max_retries} retries); raise ASSISTANT_LLM__TIMEOUT "
                "or check the server"
            ) from exc
        except openai.APIConnectionError as exc:
            target = f"OPENAI_BASE_URL={self.base_url}" if self.base_url else "api.openai.com"
            raise ProviderError(
                f"cannot reach {target}; is the server running and the URL "
                "right (set OPENAI_BASE_URL or --base-url)?"
            ) from exc
        except openai.APIStatusError as exc:
            raise ProviderError(
                f"{self._where()} failed with HTTP {exc.status_code} after "
                f"{self.max_retries} retries; try again later"
            ) from exc
        except (openai.APIError, ValueError, KeyError, TypeError) as exc:
            raise ProviderError(
                f"{self._where()} returned a response that is not a valid "
                f"chat completion ({type(exc).__name__}); check that "
                "OPENAI_BASE_URL points at an OpenAI-compatible /v1 API"
            ) from exc
