"""Answers from LangChain chat models: ``ChatPromptTemplate | init_chat_model(...)``, streamed.

``--model provider:name`` reaches any chat model whose LangChain integration is installed
(``openai:gpt-4o-mini``, ``anthropic:claude-3-5-haiku-latest``, ``ollama:qwen2.5``); a bare name
is an OpenAI model, or a model of the OpenAI-compatible server at OPENAI_BASE_URL (Ollama, vLLM,
llama.cpp, LM Studio), so Ollama tags such as ``llama3.1:8b`` stay model names.

A hostile or broken server is bounded. ASSISTANT_LLM__TIMEOUT bounds the wait for the answer
to start, retries included, and then each wait for its next piece, so a slow model that keeps
writing finishes and a stalled one does not hang: over the OpenAI protocol it also interrupts a
blocked read (``deadline.py``), other integrations are checked between chunks. A stream that
ends without a ``finish_reason`` is an error, not an empty answer, and so is a reply with no
answer text (empty, or reasoning only). The text is capped at ``CHARS_PER_TOKEN`` x max_tokens
characters, and control characters never reach the caller.

Replies are read as model families write them (``reply.py``): reasoning, inline or in its own
field (``openai_compat.py``), comes out as ``Reasoning`` pieces, never as answer text; fences and
citation styles are normalised. Every input is neutralised first (``untrusted.py``): no
chat-template control token in a question, an abstract or the history reaches the server.

Retries (timeouts, 408, 409, 429, 5xx, before any text arrived) back off within the deadline;
what still fails becomes one ``ProviderError`` that names the setting to change.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import Any

import openai
from langchain_core.language_models import BaseChatModel
from langchain_core.prompts import ChatPromptTemplate

from assistant.answer.llm.deadline import Deadline, deadline_http_client, within
from assistant.answer.llm.openai_compat import REASONING_KEY, CompatibleChatOpenAI
from assistant.answer.llm.reply import Reasoning, ReplyReader, opens_think_in_template, read_reply
from assistant.answer.prompts import load_prompt
from assistant.answer.provider import Piece, Provider, StreamWarning
from assistant.answer.result import CANNOT_ANSWER, Usage
from assistant.answer.sources import Context
from assistant.errors import ConfigError, NoAnswerError, ProviderError
from assistant.settings import LLMSettings
from assistant.text.normalise import printable
from assistant.text.untrusted import neutralise

CHARS_PER_TOKEN = 8  # English runs ~4 characters a token; twice that is never a real answer
_RETRY_STATUS = {408, 409, 429}


def known_providers() -> frozenset[str]:
    """The provider prefixes ``init_chat_model`` understands ("openai", "anthropic", ...)."""
    try:  # LangChain's registry has no public name; fall back to the common ones
        from langchain.chat_models.base import _BUILTIN_PROVIDERS

        return frozenset(_BUILTIN_PROVIDERS)
    except ImportError:
        return frozenset({"anthropic", "google_genai", "groq", "mistralai", "ollama", "openai"})


def split_model(spec: str) -> tuple[str, str]:
    """``"anthropic:claude-x"`` -> ``("anthropic", "claude-x")``; a bare name, or one whose prefix
    is not a LangChain provider (``"llama3.1:8b"``), is ``("openai", spec)``."""
    prefix, sep, name = spec.partition(":")
    key = prefix.strip().lower().replace("-", "_")
    if sep and name and key in known_providers():
        return key, name
    return "openai", spec


def answer_prompt() -> ChatPromptTemplate:
    return ChatPromptTemplate.from_messages(
        [("system", load_prompt("answer_system")), ("human", load_prompt("answer_user"))]
    ).partial(cannot_answer=CANNOT_ANSWER)


class ChatModelProvider(Provider):
    def __init__(
        self,
        settings: LLMSettings,
        api_key: str | None,
        base_url: str | None,
        model: str | None = None,
    ):
        self.spec = model or settings.model
        self.name, self.model = split_model(self.spec)
        self.base_url = base_url if self.name == "openai" else None
        self.timeout = settings.timeout
        self.max_retries = settings.max_retries
        self.max_tokens = settings.max_tokens
        self.max_chars = settings.max_tokens * CHARS_PER_TOKEN
        self.llm = self._chat_model(settings, api_key)
        # Replies that start inside <think>: known by name, or learnt from a first reply.
        self.hold_start = opens_think_in_template(self.model)
        self.chain = answer_prompt() | self.llm

    def _chat_model(self, settings: LLMSettings, api_key: str | None) -> BaseChatModel:
        from langchain.chat_models import init_chat_model

        kwargs: dict[str, Any] = {
            "temperature": settings.temperature,
            "max_tokens": settings.max_tokens,
            "timeout": settings.timeout,
        }
        if self.name == "openai":
            if not api_key and not self.base_url:
                raise ConfigError(
                    "provider openai needs OPENAI_API_KEY (or OPENAI_BASE_URL for a compatible "
                    "server such as Ollama); or use --provider extractive, which needs neither"
                )
            kwargs.update(
                api_key=api_key or "not-needed",  # local servers ignore the key; the client not
                base_url=self.base_url,
                max_retries=0,  # ours, within the deadline (see stream)
                stream_usage=True,
                http_client=deadline_http_client(),
            )
            return CompatibleChatOpenAI(model=self.model, **kwargs)
        kwargs["max_retries"] = settings.max_retries
        try:
            return init_chat_model(self.model, model_provider=self.name, **kwargs)
        except ImportError as exc:
            found = re.search(r"pip install [\"']?([\w.\[\]-]+)", str(exc))
            package = found.group(1) if found else "langchain-" + self.name.replace("_", "-")
            raise ConfigError(
                f"--model {self.spec} needs LangChain's {self.name} integration, which is not "
                f"installed: pip install {package}"
            ) from exc
        except Exception as exc:  # the integration rejected its settings (e.g. a missing key)
            raise ConfigError(
                f"cannot set up chat model {self.spec!r}: {_first_line(exc)}"
            ) from exc

    def _where(self) -> str:
        if self.name != "openai":
            return f"{self.name} model {self.model!r}"
        return f"the model server at {self.base_url}" if self.base_url else "OpenAI"

    # -- calls --------------------------------------------------------------------------------
    def condense(self, history: str, question: str) -> str | None:
        try:
            text, _ = self.complete("condense_question", history=history, question=question)
        except NoAnswerError:  # nothing to rewrite with: the plain method follows
            return None
        line = text.strip().splitlines()[0].strip().strip('"') if text.strip() else ""
        return line or None

    def complete(self, prompt: str, **inputs: str) -> tuple[str, Usage | None]:
        """One reply to ``prompts/<prompt>.md`` filled with ``inputs``, returned whole, under
        the same deadline, retries, size cap and one-line errors as an answer; with its usage
        when the server reports it. It is read as a stream, so a slow model that keeps writing
        is not cut off (see ``_bounded``). The LLM judge and follow-up condensing use this."""
        chain = ChatPromptTemplate.from_messages([("human", load_prompt(prompt))]) | self.llm
        inputs = {key: neutralise(value) for key, value in inputs.items()}

        def call(deadline: Deadline) -> Generator[Piece]:
            message: Any = None
            for chunk in chain.stream(inputs):
                message = chunk if message is None else message + chunk
                if chunk.content or chunk.additional_kwargs.get(REASONING_KEY):
                    deadline.moved_on()
                if deadline.expired():
                    raise TimeoutError("the reply's deadline passed between chunks")
            if message is None:
                raise _NoAnswer(False, {})
            content, reasoning = content_parts(message.content)
            answer, inline = read_reply(printable(content))
            if not answer.strip():
                raise _NoAnswer(bool(reasoning or inline), message.response_metadata)
            yield answer[: self.max_chars]
            if usage := _usage(getattr(message, "usage_metadata", None)):
                yield usage

        text, usage = "", None
        for piece in self._bounded(call):
            if isinstance(piece, Usage):
                usage = piece
            elif isinstance(piece, str):
                text += piece
        return text, usage

    def stream(self, context: Context) -> Iterator[Piece]:
        inputs = {"question": neutralise(context.question), "sources": neutralise(context.block)}
        yield from self._bounded(lambda deadline: self._read(inputs, deadline))

    def _read(self, inputs: dict[str, str], deadline: Deadline) -> Generator[Piece]:
        """One attempt: answer text and reasoning (printable, capped), a warning if cut, then
        usage. No answer text at all is an error (``_NoAnswer``)."""
        usage: dict[str, Any] | None = None
        finish: str | None = None
        reader = ReplyReader(self.hold_start)
        size = 0
        answered = False
        chunks = self.chain.stream(inputs)
        try:
            for chunk in chunks:
                if deadline.expired():
                    raise TimeoutError("the answer's deadline passed between chunks")
                finish = chunk.response_metadata.get("finish_reason") or finish
                usage = dict(chunk.usage_metadata) if chunk.usage_metadata else usage
                text, reasoning = content_parts(chunk.content)
                reasoning += str(chunk.additional_kwargs.get(REASONING_KEY) or "")
                parts: list[str | Reasoning] = []
                if reasoning:
                    parts += reader.release()  # reasoning apart: the content is all answer
                    parts.append(Reasoning(printable(reasoning)))
                if text:
                    parts += reader.feed(printable(text))
                for part in parts:
                    if isinstance(part, Reasoning) and part.retracts:
                        answered = False  # what was taken for the answer was reasoning
                        if not self.hold_start:
                            self.hold_start = True  # from now on, held until the tag
                            yield StreamWarning(_UNOPENED_THINK)
                    length = len(part.text if isinstance(part, Reasoning) else part)
                    if size + length > self.max_chars:
                        yield StreamWarning(self._truncated_warning())
                        return
                    size += length
                    answered = answered or (isinstance(part, str) and bool(part.strip()))
                    yield part
        finally:
            getattr(chunks, "close", lambda: None)()  # stop reading: closes the HTTP response
        if self.name == "openai" and finish is None:
            raise _Incomplete(f"{self._where()} ended the stream before the answer was finished")
        for part in reader.flush(truncated=finish == "length"):
            answered = answered or (isinstance(part, str) and bool(part.strip()))
            size += len(part.text if isinstance(part, Reasoning) else part)
            yield part
        if not answered:
            raise _NoAnswer(size > 0, {"finish_reason": finish})
        if finish == "length":
            yield StreamWarning(
                f"the answer was truncated: it reached ASSISTANT_LLM__MAX_TOKENS={self.max_tokens}"
            )
        if found := _usage(usage):
            yield found

    def _truncated_warning(self) -> str:
        return (
            f"the answer was truncated at {self.max_chars} characters "
            f"({CHARS_PER_TOKEN} per token of ASSISTANT_LLM__MAX_TOKENS="
            f"{self.max_tokens}); the model server sent more"
        )

    def _bounded(self, attempt: Callable[[Deadline], Generator[Piece]]) -> Iterator[Piece]:
        """Run ``attempt`` under one deadline, retrying transient failures that happen before
        any text arrived, with backoff that never sleeps past the deadline."""
        deadline = Deadline(self.timeout)
        retries = 0
        while True:
            started = False
            try:
                for piece in within(deadline, attempt(deadline)):
                    started = True
                    if isinstance(piece, str | Reasoning):
                        deadline.moved_on()  # progress: the next piece has its own time
                    yield piece
                return
            except Exception as exc:
                if deadline.expired():
                    raise self._deadline_error(retries, started) from exc
                wait = self._retry_wait(exc, retries) if not started else None
                if wait is None or retries >= self.max_retries or wait >= deadline.remaining():
                    raise self._error(exc, retries, started) from exc
                time.sleep(wait)
                retries += 1

    def _retry_wait(self, exc: Exception, retries: int) -> float | None:
        """Seconds to wait before retrying ``exc``, or None when it is not worth a retry.
        Other integrations retry inside their own clients (``max_retries``)."""
        if self.name != "openai":
            return None
        if isinstance(exc, openai.APIStatusError):
            if exc.status_code not in _RETRY_STATUS and exc.status_code < 500:
                return None
            headers = exc.response.headers
            for header, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
                try:
                    return max(0.0, float(headers.get(header, "")) / scale)
                except ValueError:
                    continue
        elif not isinstance(exc, openai.APIConnectionError | _Incomplete):  # timeouts included
            return None
        return min(0.5 * 2**retries, 8.0) * (1 - 0.25 * random.random())

    # -- errors -------------------------------------------------------------------------------
    def _deadline_error(self, retries: int, started: bool = False) -> ProviderError:
        if started:
            return ProviderError(
                f"{self._where()} stopped answering: nothing more for {self.timeout:g} s "
                "(ASSISTANT_LLM__TIMEOUT bounds each wait for the next piece); raise "
                "ASSISTANT_LLM__TIMEOUT or check the server"
            )
        tried = (
            f"retries included; {retries} of {self.max_retries} retries made"
            if self.max_retries
            else "no retries: ASSISTANT_LLM__MAX_RETRIES=0"
        )
        return ProviderError(
            f"{self._where()} did not answer within {self.timeout:g} s "
            f"(ASSISTANT_LLM__TIMEOUT bounds the wait for the answer to start, {tried}); "
            "raise ASSISTANT_LLM__TIMEOUT or check the server"
        )

    def _error(self, exc: Exception, retries: int, started: bool = False) -> ProviderError:
        """A failure the retries did not fix, as one actionable line."""
        where = self._where()
        if isinstance(exc, _NoAnswer):
            return self._no_answer_error(exc)
        if isinstance(exc, _Incomplete):
            return ProviderError(
                f"{exc} (no finish_reason; {retries} retries); try again or check the server"
            )
        if isinstance(exc, openai.AuthenticationError):
            return ProviderError(f"{where} rejected the key (401); check OPENAI_API_KEY")
        if isinstance(exc, openai.NotFoundError):
            hint = ""
            prefix, sep, _ = self.spec.partition(":")
            if sep and not any(c.isdigit() or c == "." for c in prefix):
                hint = f" ({prefix!r} is not a LangChain provider, so it was sent as a name)"
            return ProviderError(
                f"{where} has no model {self.model!r} (404){hint}; pick another with --model"
            )
        if isinstance(exc, openai.RateLimitError):
            return ProviderError(
                f"{where} is rate limiting (429) after {retries} retries; wait and try again"
            )
        if isinstance(exc, openai.APITimeoutError):
            return self._deadline_error(retries, started)
        if isinstance(exc, openai.APIConnectionError):
            target = f"OPENAI_BASE_URL={self.base_url}" if self.base_url else "api.openai.com"
            return ProviderError(
                f"cannot reach {target}; is the server running and the URL "
                "right (set OPENAI_BASE_URL or --base-url)?"
            )
        if isinstance(exc, openai.APIStatusError):
            return ProviderError(
                f"{where} failed with HTTP {exc.status_code} after {retries} retries; "
                "try again later"
            )
        if self.name == "openai" and isinstance(
            exc, openai.APIError | ValueError | KeyError | TypeError
        ):
            return ProviderError(
                f"{where} returned a response that is not a valid chat completion "
                f"({type(exc).__name__}); check that OPENAI_BASE_URL points at an "
                "OpenAI-compatible /v1 API"
            )
        if self.name != "openai":  # another integration's own errors: one line all the same
            return ProviderError(f"{where} failed: {type(exc).__name__}: {_first_line(exc)}")
        raise exc

    def _no_answer_error(self, exc: _NoAnswer) -> NoAnswerError:
        who = f"{self._where()} (model {self.model!r})"
        if not exc.reasoned:
            return NoAnswerError(
                f"{who} returned an empty answer; check the server's log, or try another "
                "model with --model"
            )
        if exc.finish == "length":
            return NoAnswerError(
                f"{who} spent all ASSISTANT_LLM__MAX_TOKENS={self.max_tokens} tokens reasoning "
                "and wrote no answer; raise ASSISTANT_LLM__MAX_TOKENS (e.g. to 4000) or lower "
                "the model's reasoning effort"
            )
        return NoAnswerError(
            f"{who} returned only reasoning and no answer; try again, raise "
            "ASSISTANT_LLM__MAX_TOKENS, or turn the model's thinking mode off"
        )


_UNOPENED_THINK = (
    "the model's reasoning arrived without its opening <think> tag, so it was taken for the "
    "answer until the closing tag came (it is not part of the answer); start the server with "
    "a reasoning parser "
    "(vLLM: --reasoning-parser deepseek_r1; llama.cpp: --reasoning-format deepseek; Ollama: "
    "think) so that reasoning arrives apart"
)


class _Incomplete(Exception):
    """The stream ended without a finish_reason: the server closed it mid-answer."""


class _NoAnswer(Exception):
    """The reply held no answer text: empty, or reasoning only."""

    def __init__(self, reasoned: bool, metadata: Mapping[str, Any] | None):
        super().__init__("no answer text in the reply")
        self.reasoned = reasoned
        self.finish = (metadata or {}).get("finish_reason")


def content_parts(content: Any) -> tuple[str, str]:
    """(text, reasoning) of a message's content: a string, or a list of content blocks (text,
    and Anthropic's ``thinking`` or LangChain's ``reasoning`` blocks)."""
    if isinstance(content, str):
        return content, ""
    text: list[str] = []
    reasoning: list[str] = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, str):
            text.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            text.append(str(block.get("text") or ""))
        elif isinstance(block, dict) and block.get("type") in {"thinking", "reasoning"}:
            reasoning.append(str(block.get("thinking") or block.get("reasoning") or ""))
    return "".join(text), "".join(reasoning)


def _usage(metadata: Mapping[str, Any] | None) -> Usage | None:
    """The server's token counts, reasoning included (and also counted apart)."""
    if not metadata:
        return None
    details = metadata.get("output_token_details") or {}
    return Usage(
        prompt_tokens=int(metadata.get("input_tokens", 0)),
        completion_tokens=int(metadata.get("output_tokens", 0)),
        reasoning_tokens=int(details.get("reasoning", 0) or 0),
        estimated=False,
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
