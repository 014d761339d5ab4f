from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
import tiktoken

from assistant.ingest.chunking import Chunker
from assistant.ingest.corpus import Paper
from assistant.text import tokens


def _paper(text: str, title: str | None = None) -> Paper:
    return Paper(paper_id="p1", source="x.txt#1", label="X", abstract=text, title=title)


def test_every_chunk_is_within_budget_and_from_the_paper(corpus_papers):
    chunker = Chunker(200, 60)
    for paper in corpus_papers:
        chunks = chunker.split(paper)
        assert chunks, paper.source
        assert [c.index for c in chunks] == list(range(len(chunks)))
        assert all(c.chunk_id == f"{paper.paper_id}:{c.index}" for c in chunks)
        for chunk in chunks:
            assert chunker.count_tokens(chunk.text) <= 200
            assert chunk.text in paper.text_for_index
        # Nothing is lost: the first and last words are in some chunk.
        assert chunks[0].text.startswith(paper.abstract[:40])
        assert chunks[-1].text.endswith(paper.abstract[-40:])


def test_short_abstract_is_one_chunk():
    (chunk,) = Chunker(200, 60).split(_paper("A short abstract. It has two sentences."))
    assert chunk.text == "A short abstract. It has two sentences."


def test_long_abstract_splits_at_sentences_with_overlap():
    sentences = [f"Sentence number {i} reports a finding about topic {i}." for i in range(60)]
    chunks = Chunker(120, 40).split(_paper(" ".join(sentences)))
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.text.startswith("Sentence number") and chunk.text.endswith(".")
    for first, second in zip(chunks, chunks[1:], strict=False):
        assert second.text.split(". ")[0] in first.text  # consecutive chunks overlap


def test_title_is_indexed_with_the_abstract():
    (chunk,) = Chunker().split(_paper("Body text.", title="My Title"))
    assert chunk.text == "My Title. Body text."


def test_offline_encodings_land_where_tiktoken_looks(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    tokens.install_offline_encodings()
    url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    cached = tmp_path / hashlib.sha1(url.encode()).hexdigest()
    # The file tiktoken would have downloaded, byte for byte (it checks this hash itself).
    assert hashlib.sha256(cached.read_bytes()).hexdigest() == (
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
    )
    enc = tiktoken.get_encoding("cl100k_base")
    assert enc.encode("hello world") == [15339, 1917]
    assert os.environ["TIKTOKEN_CACHE_DIR"] == str(tmp_path)


def test_unknown_encoding_is_refused():
    with pytest.raises(ValueError, match="not shipped"):
        tokens.encoding("p50k_base")
