"""A shared Chroma server is the source of truth: a real `chroma run` (the installed package's
CLI, started by the ``chroma_server`` fixture), one client ingesting into it and another, with an
empty folder of its own, searching and asking through the real CLI, as two users would."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from assistant import Assistant, Paper, load_settings
from assistant.embedding.embedders import HashingEmbedder
from assistant.errors import StoreBusyError
from assistant.store.server import ServerStore
from tests.conftest import write_seed

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args: str, collection: str, env: dict[str, str] | None = None) -> Any:
    """Run `python -m assistant ARGS` as a user would (hashing embedder, extractive answers)."""
    environment = {
        **os.environ,
        "ASSISTANT_EMBEDDING__PROVIDER": "hashing",
        "ASSISTANT_LLM__PROVIDER": "extractive",
        "ASSISTANT_STORE__COLLECTION": collection,
        **(env or {}),
    }
    return subprocess.run(
        [sys.executable, "-m", "assistant", *args],
        capture_output=True,
        text=True,
        env=environment,
        cwd=ROOT,
        timeout=120,
    )


def _json(result: Any) -> Any:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _client(folder: Path, url: str, collection: str) -> Assistant:
    settings = load_settings(
        store={"path": folder, "chroma_url": url, "collection": collection},
        llm={"provider": "extractive"},
    )
    return Assistant(settings, embedder=HashingEmbedder())


@pytest.fixture()
def collection() -> str:
    return f"shared-{uuid.uuid4().hex[:12]}"


def test_a_second_client_with_an_empty_folder_searches_and_asks(
    chroma_server: str, collection: str, tmp_path: Path, corpus_papers: list[Paper]
):
    papers = corpus_papers[:6]
    seeds = tmp_path / "papers"
    seeds.mkdir()
    first = write_seed(seeds / "first.txt", [p.abstract for p in papers[:4]])
    with _client(tmp_path / "a", chroma_server, collection) as a:
        report = a.ingest([first])
        assert report.added == 4 and report.ok
        assert a.search(papers[0].abstract[:200], k=4)[0].text in papers[0].abstract

    b_folder = tmp_path / "b"
    assert not b_folder.exists()
    where = ["--store", str(b_folder), "--chroma-url", chroma_server]
    hits = _json(_cli("search", papers[2].abstract[:200], "--json", *where, collection=collection))
    assert hits["hits"][0]["text"] in papers[2].abstract
    answer = _json(_cli("ask", papers[1].abstract[:160], "--json", *where, collection=collection))
    assert not answer["refused"] and answer["citations"]
    assert answer["retrieved"][0]["source"] == "first.txt#2"
    info = _cli("info", "--json", "--check", *where, collection=collection)
    details = _json(info)
    assert (details["papers"], details["chroma"], details["problems"]) == (4, chroma_server, [])

    # B, open in this process across A's next ingest, and B's CLI both see the change.
    with _client(b_folder, chroma_server, collection) as b:
        assert len(b.search(papers[3].abstract[:200], k=10)) == 4
        second = write_seed(seeds / "second.txt", [p.abstract for p in papers[4:6]])
        first.unlink()
        write_seed(seeds / "first.txt", [p.abstract for p in papers[1:4]])  # paper 0 is gone
        with _client(tmp_path / "a", chroma_server, collection) as a:
            report = a.ingest([seeds / "first.txt", second], prune=True)
        assert (report.added, report.removed, report.unchanged) == (2, 1, 3)
        assert isinstance(b.store, ServerStore)
        time.sleep(b.store.recheck)  # how long a client trusts its cache without asking
        hits_b = b.search(papers[5].abstract[:200], k=10)
        assert hits_b[0].text in papers[5].abstract
        assert len(hits_b) == 5 and papers[0].abstract[:80] not in {h.text[:80] for h in hits_b}
    found = _json(_cli("search", papers[4].abstract[:200], "--json", *where, collection=collection))
    assert found["hits"][0]["source"] == "second.txt#1"
    assert len(found["hits"]) == 5


class TokenProxy:
    """A loopback proxy in front of the Chroma server that lets through only requests bearing
    ``Authorization: Bearer TOKEN`` (401 otherwise, echoing the header it got, as careless
    servers do), and records what it was sent."""

    def __init__(self, upstream: str, token: str):
        self.upstream = urlparse(upstream)
        self.token = token
        self.seen: list[str | None] = []  # the Authorization header of every request
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                auth = self.headers.get("Authorization")
                proxy.seen.append(auth)
                if auth != f"Bearer {proxy.token}":  # refused, echoing what it was sent
                    said = json.dumps({"error": "Unauthorized", "got": auth}).encode()
                    self._send(401, {"Content-Type": "application/json"}, said)
                    return
                conn = http.client.HTTPConnection(
                    proxy.upstream.hostname or "", proxy.upstream.port, timeout=30
                )
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                conn.request(self.command, self.path, body=body, headers=headers)
                answer = conn.getresponse()
                data = answer.read()
                skip = {"transfer-encoding", "connection", "content-length"}
                kept = {k: v for k, v in answer.getheaders() if k.lower() not in skip}
                conn.close()
                self._send(answer.status, kept, data)

            def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _forward  # noqa: N815

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> TokenProxy:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture()
def guarded(chroma_server: str) -> Iterator[TokenProxy]:
    with TokenProxy(chroma_server, token=f"t0ken-{uuid.uuid4().hex}") as proxy:
        yield proxy


def test_the_token_is_sent_and_never_printed(
    guarded: TokenProxy, collection: str, tmp_path: Path, corpus_papers: list[Paper]
):
    seeds = write_seed(tmp_path / "seed.txt", [p.abstract for p in corpus_papers[:3]])
    where = ["--store", str(tmp_path / "s"), "--chroma-url", guarded.url]
    secret = {"ASSISTANT_STORE__CHROMA_TOKEN": guarded.token}
    ingest = _cli("ingest", str(seeds), "--json", *where, collection=collection, env=secret)
    assert _json(ingest)["added"] == 3
    info = _cli("info", "--json", *where, collection=collection, env=secret)
    assert _json(info)["papers"] == 3
    assert guarded.seen and set(guarded.seen) == {f"Bearer {guarded.token}"}
    assert guarded.token not in ingest.stdout + ingest.stderr + info.stdout + info.stderr
    again = _cli("ingest", str(seeds), *where, collection=collection, env=secret)
    said = " ".join(again.stdout.split())  # the summary names the server, not the cache folder
    assert f"into the Chroma server at {guarded.url} (collection {collection}): 0 added" in said
    assert guarded.token not in again.stdout + again.stderr

    wrong = {"ASSISTANT_STORE__CHROMA_TOKEN": "not-the-t0ken"}
    for env, hint in ((wrong, "refused ASSISTANT_STORE__CHROMA_TOKEN"), ({}, "wants a token")):
        refused = _cli("search", "learning", *where, collection=collection, env=env)
        assert refused.returncode == 1 and "Traceback" not in refused.stderr
        assert hint in refused.stderr and "not-the-t0ken" not in refused.stderr


def test_the_lease_keeps_a_second_writer_out_until_its_holder_ends(
    chroma_server: str, collection: str, tmp_path: Path, corpus_papers: list[Paper]
):
    seeds = write_seed(tmp_path / "seed.txt", [p.abstract for p in corpus_papers[:2]])
    # Two folders: two file locks that know nothing of each other, as on two machines.
    with (
        _client(tmp_path / "a", chroma_server, collection) as a,
        _client(tmp_path / "b", chroma_server, collection) as b,
    ):
        with a.store.writer():
            with pytest.raises(StoreBusyError, match="another ingest .* Chroma server"):
                b.ingest([seeds], wait=False)
        assert b.ingest([seeds], wait=False).added == 2
        assert a.ingest([seeds], wait=False).unchanged == 2

    # A writer killed while it holds the lease: on its own machine, nobody waits the lease out.
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LEASE, str(tmp_path / "c"), chroma_server, collection],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with _client(tmp_path / "b", chroma_server, collection) as b:
            with pytest.raises(StoreBusyError):
                b.ingest([seeds], wait=False)
            holder.kill()
            holder.wait()
            assert b.ingest([seeds], wait=False).unchanged == 2
    finally:
        holder.kill()
        holder.wait()


_HOLD_LEASE = """
import sys, time
from assistant import Assistant, load_settings
from assistant.embedding.embedders import HashingEmbedder
folder, url, collection = sys.argv[1:]
settings = load_settings(store={"path": folder, "chroma_url": url, "collection": collection})
with Assistant(settings, embedder=HashingEmbedder()) as a, a.store.writer():
    print("held", flush=True)
    time.sleep(120)
"""
