"""A real HTTP server on 127.0.0.1 that speaks OpenAI's /v1/chat/completions, plain and streamed
(SSE), with scripted replies. It records every request body, so tests can assert on the prompt
that was actually sent by the real ``openai`` client and LangChain code.

Replies can carry a reasoning model's thinking in its own field (``reasoning`` with
``reasoning_field`` "reasoning_content", as llama.cpp, vLLM and DeepSeek send it, or "reasoning",
as Ollama and gpt-oss servers do), streamed before the content; ``chunk_chars`` cuts the stream
into pieces of that many characters, as token-by-token servers send them.

Replies can also be hostile: SSE keep-alive comments that trickle for as long as the client
listens (``keepalive``), a connection closed mid-stream with no finish_reason (``cut_after``),
or any size of text. ``hangups`` records when a client stopped listening.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    text: str = ""
    status: int = 200
    delay: float = 0.0  # seconds before answering (longer than the client timeout = a timeout)
    raw: bytes | None = None  # send these bytes as the body instead of a well-formed reply
    usage: tuple[int, int] | None = (120, 30)  # (prompt, completion) tokens, or None to omit
    chunks: int = 4  # how many SSE pieces a streamed reply is cut into
    keepalive: float = 0.0  # send ": keep-alive" every this many seconds before any content...
    stall: float = 0.0  # ...for this long (the client's deadline should end it sooner)
    cut_after: int | None = None  # close the connection after this many pieces, unfinished
    finish: str = "stop"  # the finish_reason sent at the end ("length": max_tokens reached)
    headers: dict[str, str] | None = None  # extra response headers, e.g. a long retry-after-ms
    reasoning: str = ""  # thinking sent in its own field, before the content
    reasoning_field: str = "reasoning_content"  # or "reasoning"
    chunk_chars: int | None = None  # stream pieces of this many characters (instead of chunks)
    pace: float = 0.0  # seconds between pieces: a model that writes slowly (a CPU, a big model)
    stall_after: int | None = None  # the keep-alive stall comes after this many pieces instead


class FakeOpenAI:
    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.default: Reply | None = None  # used when the queue is empty
        self.received: list[float] = []  # time.monotonic() of each request
        self.hangups: list[float] = []  # time.monotonic() when a streaming client went away
        # Or compute each reply from the request (e.g. quote the sources it was sent).
        self.responder: Callable[[dict[str, Any]], Reply] | None = None
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def enqueue(self, *replies: Reply | str) -> None:
        for reply in replies:
            self.replies.append(Reply(text=reply) if isinstance(reply, str) else reply)

    def start(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def last_messages(self) -> list[dict[str, str]]:
        return self.requests[-1]["messages"]

    def _next(self, body: dict[str, Any]) -> Reply:
        if self.replies:
            return self.replies.popleft()
        if self.responder is not None:
            return self.responder(body)
        return self.default or Reply(status=500, text="no scripted reply left")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _send(
                self, status: int, body: bytes, content_type: str, reply: Reply | None = None
            ) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                headers = {"retry-after-ms": "10"}  # keep client backoff short in tests
                headers.update((reply.headers if reply else None) or {})
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append(body)
                fake.received.append(time.monotonic())
                reply = fake._next(body)
                if reply.delay:
                    time.sleep(reply.delay)
                if not self.path.endswith("/chat/completions"):
                    self._send(404, b'{"error": {"message": "not found"}}', "application/json")
                    return
                if reply.raw is not None:
                    self._send(reply.status, reply.raw, "application/json")
                    return
                if reply.status != 200:
                    error = {
                        "error": {
                            "message": reply.text or "scripted failure",
                            "type": "server_error",
                            "code": reply.status,
                        }
                    }
                    self._send(reply.status, json.dumps(error).encode(), "application/json", reply)
                    return
                model = body.get("model", "test-model")
                if body.get("stream"):
                    self._stream(reply, model, body)
                else:
                    self._send(
                        200, json.dumps(_completion(reply, model)).encode(), "application/json"
                    )

            def _stream(self, reply: Reply, model: str, body: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                try:
                    self._events(reply, model, body)
                except (BrokenPipeError, ConnectionResetError):
                    fake.hangups.append(time.monotonic())

            def _events(self, reply: Reply, model: str, body: dict[str, Any]) -> None:
                def send(data: bytes) -> None:
                    self.wfile.write(data)
                    self.wfile.flush()

                size = reply.chunk_chars or max(1, -(-len(reply.text) // max(1, reply.chunks)))
                pieces = [reply.text[i : i + size] for i in range(0, len(reply.text), size)]
                step = reply.chunk_chars or max(1, -(-len(reply.reasoning) // 4))
                thoughts = [
                    reply.reasoning[i : i + step] for i in range(0, len(reply.reasoning), step)
                ]
                first = _chunk(model, {"role": "assistant", "content": ""}, None)
                send(f"data: {json.dumps(first)}\n\n".encode())

                def stall() -> None:
                    until = time.monotonic() + reply.stall
                    while reply.keepalive and time.monotonic() < until:
                        time.sleep(reply.keepalive)
                        send(b": keep-alive\n\n")  # a comment: resets read timeouts, no content

                if reply.stall_after is None:
                    stall()
                if reply.cut_after is not None:
                    pieces = pieces[: reply.cut_after]
                events = [_chunk(model, {reply.reasoning_field: t}, None) for t in thoughts]
                events += [_chunk(model, {"content": p}, None) for p in pieces]
                if reply.cut_after is not None:  # close the connection here, unfinished
                    for event in events:
                        send(f"data: {json.dumps(event)}\n\n".encode())
                    self.close_connection = True
                    return
                events.append(_chunk(model, {}, reply.finish))
                wants_usage = (body.get("stream_options") or {}).get("include_usage")
                if wants_usage and reply.usage:
                    events.append(
                        {
                            "id": "chatcmpl-test",
                            "object": "chat.completion.chunk",
                            "created": 0,
                            "model": model,
                            "choices": [],
                            "usage": _usage(reply.usage),
                        }
                    )
                for number, event in enumerate(events):
                    if number == reply.stall_after:
                        stall()
                    if reply.pace and event["choices"]:
                        time.sleep(reply.pace)
                    send(f"data: {json.dumps(event)}\n\n".encode())
                send(b"data: [DONE]\n\n")

        return Handler


def _usage(usage: tuple[int, int]) -> dict[str, int]:
    return {
        "prompt_tokens": usage[0],
        "completion_tokens": usage[1],
        "total_tokens": usage[0] + usage[1],
    }


def _chunk(model: str, delta: dict[str, str], finish: str | None) -> dict[str, Any]:
    """One SSE event of a streamed completion."""
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _completion(reply: Reply, model: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {
                    "role": "assistant",
                    "content": reply.text,
                    **({reply.reasoning_field: reply.reasoning} if reply.reasoning else {}),
                },
            }
        ],
    }
    if reply.usage:
        out["usage"] = _usage(reply.usage)
    return out
