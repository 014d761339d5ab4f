"""A deadline for a model's answer, retries included, that also interrupts a blocked read.

The deadline is for *progress*: the server must start answering within ``seconds`` and send
each next piece of the answer (text or reasoning) within ``seconds`` of the last one
(``Deadline.moved_on``), so a slow local model that keeps writing is never cut off, while a
stalled one is. A per-read timeout alone would not do: a server that sends an SSE keep-alive
comment every few seconds resets it forever, and a comment is not progress. The length of an
answer is bounded by its size cap, not by time.

``within`` puts the deadline in force for the calls made while it steps a generator;
``deadline_http_client`` gives the openai SDK an httpx client whose event hooks cut every
timeout of a request to the time left, check the deadline on every body chunk (keep-alive
comments included) and shut the socket down when the deadline passes while a read is blocked.
A request past its deadline fails as the SDK's own timeout error.
"""

from __future__ import annotations

import importlib
import socket
import threading
import time
from collections.abc import Generator, Iterator
from contextlib import closing
from contextvars import ContextVar
from types import ModuleType
from typing import Any, TypeVar

T = TypeVar("T")

_DEADLINE: ContextVar[Deadline | None] = ContextVar("assistant_llm_deadline", default=None)


class Deadline:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds

    def remaining(self) -> float:
        return self.at - time.monotonic()

    def expired(self) -> bool:
        return self.remaining() <= 0

    def moved_on(self) -> None:
        """A piece of the answer arrived: the next one has ``seconds`` from now."""
        self.at = time.monotonic() + self.seconds


def within(deadline: Deadline, steps: Generator[T]) -> Iterator[T]:
    """``steps``, each run with ``deadline`` in force for the HTTP calls it makes through
    ``deadline_http_client`` (set only while a step runs, never across the caller's code)."""
    with closing(steps):
        while True:
            token = _DEADLINE.set(deadline)
            try:
                item = next(steps)
            except StopIteration:
                return
            finally:
                _DEADLINE.reset(token)
            yield item


def _httpx() -> ModuleType:
    """httpx or httpx2: whichever the installed openai SDK is built on."""
    import openai

    client = next(c for c in openai.DefaultHttpxClient.__mro__ if c.__name__ == "Client")
    return importlib.import_module(client.__module__.partition(".")[0])


def deadline_http_client() -> Any:
    """An ``openai.DefaultHttpxClient`` (proxies from the environment kept) bounded by
    the deadline of the calling context, if any."""
    import openai

    httpx: Any = _httpx()

    class DeadlineStream(httpx.SyncByteStream):
        """The response body; past the deadline it fails as a read timeout."""

        def __init__(self, inner: Any, deadline: Deadline, request: Any, sock: Any) -> None:
            self.inner, self.deadline, self.request = inner, deadline, request
            self.closed = threading.Event()
            if sock is not None:
                watch = threading.Thread(target=_watch, args=(deadline, self.closed, sock))
                watch.daemon = True
                watch.start()

        @property
        def elapsed(self) -> Any:
            return getattr(self.inner, "elapsed", None)

        def _check(self) -> None:
            if self.deadline.expired():
                raise httpx.ReadTimeout("the answer's deadline passed", request=self.request)

        def __iter__(self) -> Iterator[bytes]:
            try:
                for chunk in self.inner:
                    self._check()
                    yield chunk
            except httpx.TransportError:
                self._check()  # the read we cut at the deadline: report the deadline
                raise
            self._check()  # a body that "ended" because we shut the socket down

        def close(self) -> None:
            self.closed.set()
            self.inner.close()

    def on_request(request: Any) -> None:
        deadline = _DEADLINE.get()
        if deadline is None:
            return
        left = deadline.remaining()
        if left <= 0:
            raise httpx.ConnectTimeout("the answer's deadline passed", request=request)
        timeouts = dict(request.extensions.get("timeout") or {})
        for name in ("connect", "read", "write", "pool"):
            value = timeouts.get(name)
            timeouts[name] = left if value is None else min(value, left)
        request.extensions["timeout"] = timeouts

    def on_response(response: Any) -> None:
        deadline = _DEADLINE.get()
        if deadline is None:
            return
        stream = response.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        response.stream = DeadlineStream(response.stream, deadline, response.request, sock)

    return openai.DefaultHttpxClient(
        event_hooks={"request": [on_request], "response": [on_response]}
    )


def _watch(deadline: Deadline, closed: threading.Event, sock: socket.socket) -> None:
    """Until the response is closed, shut ``sock`` down once the deadline passes (which
    progress keeps moving)."""
    while not closed.wait(max(0.0, deadline.remaining())):
        if deadline.expired():
            _shutdown(sock)
            return


def _shutdown(sock: socket.socket | None) -> None:
    """Wake a read blocked on ``sock``: shutdown (unlike close) interrupts it at once."""
    if sock is None:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        return  # already closed: the read it would interrupt has ended
