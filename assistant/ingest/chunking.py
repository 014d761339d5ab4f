"""Token-aware chunking with LangChain's recursive splitter, measured in tiktoken tokens.

Most abstracts fit in one chunk. Longer ones are split at sentence boundaries first (then at
spaces), with overlap, so every chunk stays under the embedder's input length.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from assistant.ingest.corpus import Paper
from assistant.text.normalise import split_sentences
from assistant.text.tokens import DEFAULT_ENCODING, encoding

if TYPE_CHECKING:
    from langchain_text_splitters import RecursiveCharacterTextSplitter

_SENTENCE_END = r"(?<=[.!?])\s+(?=[A-Z0-9(\[$\\])"


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    paper_id: str
    index: int
    text: str


class Chunker:
    def __init__(
        self,
        chunk_tokens: int = 200,
        overlap_tokens: int = 60,
        encoding_name: str = DEFAULT_ENCODING,
    ):
        self.chunk_tokens = chunk_tokens
        self.overlap_tokens = overlap_tokens
        self.encoding_name = encoding_name
        self.name = f"{encoding_name}:{chunk_tokens}/{overlap_tokens}"

    def count_tokens(self, text: str) -> int:
        return len(encoding(self.encoding_name).encode(text, disallowed_special=()))

    @cached_property
    def _splitter(self) -> RecursiveCharacterTextSplitter:
        """Built when the first abstract too long for one chunk arrives (most fit in one)."""
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        return RecursiveCharacterTextSplitter(
            chunk_size=self.chunk_tokens,
            chunk_overlap=self.overlap_tokens,
            length_function=self.count_tokens,
            separators=[_SENTENCE_END, r"\s+", ""],
            is_separator_regex=True,
            keep_separator="end",
        )

    def split(self, paper: Paper) -> list[Chunk]:
        text = paper.text_for_index
        fits = self.count_tokens(text) <= self.chunk_tokens
        pieces = [text] if fits else self._splitter.split_text(text)
        return [
            Chunk(chunk_id=f"{paper.paper_id}:{i}", paper_id=paper.paper_id, index=i, text=piece)
            for i, piece in enumerate(p.strip() for p in pieces if p.strip())
        ]


def sentences_of(paper: Paper) -> list[str]:
    """The units of sentence-level retrieval: the title (if any), then each sentence."""
    sentences = split_sentences(paper.abstract)
    return [paper.title, *sentences] if paper.title else sentences


def sentence_weights(
    paper: Paper, chunks: list[Chunk], sentences: list[str]
) -> list[dict[int, int]]:
    """For each chunk, the sentences (index -> length in characters) at least half inside it:
    what a chunk vector pooled from sentence vectors averages. A chunk that holds none (a cut
    inside one long sentence) takes the sentences it overlaps."""
    text = paper.text_for_index
    spans, at = [], 0
    for sentence in sentences:
        found = text.find(sentence, at)
        start = found if found >= 0 else at
        spans.append((start, start + len(sentence)))
        at = start + 1
    out, at = [], 0
    for chunk in chunks:
        found = text.find(chunk.text, at)
        start = found if found >= 0 else at
        end, at = start + len(chunk.text), start + 1
        inside = {
            i: e - s for i, (s, e) in enumerate(spans) if min(end, e) - max(start, s) >= (e - s) / 2
        }
        touching = {i: e - s for i, (s, e) in enumerate(spans) if min(end, e) > max(start, s)}
        out.append(inside or touching or {i: e - s for i, (s, e) in enumerate(spans)})
    return out
