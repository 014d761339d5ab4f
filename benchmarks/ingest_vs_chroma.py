"""Ingest speed against Chroma's naive embedding path, on the same abstracts, in one process.

The naive path is what Chroma's default embedding function does, written out with the same
MiniLM files this project uses: one document per abstract (title + text), the tokenizer
truncating (and padding) to 256 word pieces, batches of 32 in input order, onnxruntime with
Chroma's session options, mean pooling and L2 normalisation, then an upsert into a throw-away
Chroma collection. The project's path is its whole ingest (chunks, sentence vectors, catalog,
BM25) into a throw-away store: the default (the shipped file in fp32), ``ingest --fast`` (int8
MiniLM, each text run alone, chunk vectors pooled from sentence vectors but each paper's first),
the default without sentence vectors, and the int8 file run in batches of 32 (``ingest --fast``
before each text ran alone; a store of it keeps it). The paths alternate ``--rounds`` times; the
best of each is kept, and each round's ratio to the naive path of the same round is printed.

    python benchmarks/ingest_vs_chroma.py --n 500        # while iterating
    python benchmarks/ingest_vs_chroma.py --n 0 --arms fast   # all 5,183 SciFact abstracts
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scifact_retrieval import DEFAULT_DATA, load_papers

from assistant import Assistant, load_settings
from assistant.embedding.embedders import MiniLMEmbedder
from assistant.ingest.corpus import Paper

CHROMA_BATCH = 32
CHROMA_MAX_TOKENS = 256


def naive_session(pad: str) -> tuple[Any, Any]:
    """Chroma's tokenizer and session settings, on the project's model files."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    model, tokenizer_file = MiniLMEmbedder.model_files()
    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    tokenizer.enable_truncation(max_length=CHROMA_MAX_TOKENS)
    length = CHROMA_MAX_TOKENS if pad == "256" else None
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]", length=length)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(
        str(model), sess_options=options, providers=["CPUExecutionProvider"]
    )
    return tokenizer, session


def naive_embed(tokenizer: Any, session: Any, documents: Sequence[str]) -> np.ndarray:
    """Chroma's ``ONNXMiniLM_L6_V2._forward``: batches of 32 in input order, mean pooling."""
    out = []
    for start in range(0, len(documents), CHROMA_BATCH):
        encoded = tokenizer.encode_batch(list(documents[start : start + CHROMA_BATCH]))
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        out.append((pooled / np.clip(norms, 1e-12, None)).astype(np.float32))
    return np.concatenate(out)


def run_naive(papers: Sequence[Paper], pad: str) -> float:
    import chromadb

    tokenizer, session = naive_session(pad)
    naive_embed(tokenizer, session, ["warm up"])
    with tempfile.TemporaryDirectory() as tmp:
        client = chromadb.PersistentClient(path=tmp)
        collection = client.create_collection("naive", configuration={"hnsw": {"space": "cosine"}})
        start = time.perf_counter()
        documents = [p.text_for_index for p in papers]
        vectors = naive_embed(tokenizer, session, documents)
        step = client.get_max_batch_size()
        for i in range(0, len(papers), step):
            collection.upsert(
                ids=[p.paper_id for p in papers[i : i + step]],
                embeddings=vectors[i : i + step],
                documents=documents[i : i + step],
            )
        elapsed = time.perf_counter() - start
        del collection, client
    return len(papers) / elapsed


def run_project(papers: Sequence[Paper], arm: str) -> tuple[float, int]:
    """The whole ingest of ``papers`` into a new store, by one of ``ARMS``."""
    _, provider, sentences, batched = ARMS[arm]
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(
            store={"path": Path(tmp)},
            embedding={"provider": provider},
            retrieval={"sentence_vectors": sentences},
        )
        embedder = MiniLMEmbedder(fast=True) if batched else None
        with Assistant(settings, embedder=embedder) as assistant:
            assistant.embedder.embed(["warm up"])  # loads the model (and makes the int8 file)
            start = time.perf_counter()
            report = assistant.ingest_papers(papers)
            elapsed = time.perf_counter() - start
    return len(papers) / elapsed, report.chunks_written


# name: (label, embedding provider, sentence vectors, int8 in batches as the old --fast)
ARMS = {
    "default": ("project, default (shipped file, fp32)", "minilm", True, False),
    "fast": ("project, --fast (int8, each text alone)", "minilm-fast", True, False),
    "chunks": ("project, default, no sentence vectors", "minilm", False, False),
    "batched": ("int8 in batches (--fast before)", "minilm-fast", True, True),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--n", type=int, default=500, help="abstracts (0: all)")
    parser.add_argument("--rounds", type=int, default=1, help="alternations; best of each")
    parser.add_argument(
        "--pad",
        choices=["256", "longest"],
        default="256",
        help="naive padding: Chroma pads every batch to 256; 'longest' is a stricter bar",
    )
    parser.add_argument(
        "--arms",
        default="fast,default,batched",
        help=f"the project's paths to run, comma-separated, of: {', '.join(ARMS)}",
    )
    args = parser.parse_args()
    arms = [name.strip() for name in args.arms.split(",")]
    unknown = [name for name in arms if name not in ARMS]
    if unknown:
        parser.error(f"unknown arm(s) {', '.join(unknown)}; choose from {', '.join(ARMS)}")
    papers = list(itertools.islice(load_papers(args.data), args.n or None))
    print(f"{len(papers)} SciFact abstracts, {args.rounds} round(s), naive padding {args.pad}")
    rates: dict[str, list[float]] = {"naive": [], **{name: [] for name in arms}}
    for _ in range(args.rounds):
        rates["naive"].append(run_naive(papers, args.pad))
        print(f"  {'naive (Chroma path)':<44} {rates['naive'][-1]:6.1f} abstracts/s", flush=True)
        for name in arms:
            rate, chunks = run_project(papers, name)
            rates[name].append(rate)
            label = ARMS[name][0]
            print(f"  {label:<44} {rate:6.1f} abstracts/s ({chunks} chunks)", flush=True)
    for name in ["naive", *arms]:
        label = ARMS[name][0] if name in ARMS else "naive (Chroma path)"
        ratios = [r / n for r, n in zip(rates[name], rates["naive"], strict=True)]
        print(
            f"{label:<46} {max(rates[name]):6.1f} abstracts/s  best/best "
            f"{max(rates[name]) / max(rates['naive']):.2f}x, per round "
            + " ".join(f"{r:.2f}x" for r in ratios)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
