"""Ingest speed against Chroma's naive embedding path, on the same abstracts, in one process.

The naive path is what Chroma's default embedding function does, written out with the same
MiniLM files this project uses: one document per abstract (title + text), the tokenizer
truncating (and padding) to 256 word pieces, batches of 32 in input order, onnxruntime with
Chroma's session options, mean pooling and L2 normalisation, then an upsert into a throw-away
Chroma collection. The project's path is its whole ingest (chunks, sentence vectors, catalog,
BM25) into a throw-away store: the default, ``ingest --fast`` (int8 MiniLM, chunk vectors pooled
from sentence vectors but each paper's first), and the default without sentence vectors. The
paths alternate ``--rounds`` times; the best of each is kept.

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


def run_project(papers: Sequence[Paper], provider: str, sentences: bool) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(
            store={"path": Path(tmp)},
            embedding={"provider": provider},
            retrieval={"sentence_vectors": sentences},
        )
        with Assistant(settings) as assistant:
            assistant.embedder.embed(["warm up"])  # loads the model (and makes the int8 file)
            start = time.perf_counter()
            report = assistant.ingest_papers(papers)
            elapsed = time.perf_counter() - start
    return len(papers) / elapsed, report.chunks_written


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
        default="default,fast,chunks",
        help="which of the project's paths to run, comma-separated: default (chunks + "
        "sentences), fast (`ingest --fast`), chunks (no sentence vectors)",
    )
    args = parser.parse_args()
    papers = list(itertools.islice(load_papers(args.data), args.n or None))
    every = {
        "default": ("project (default: chunks + sentences)", "minilm", True),
        "fast": ("project, ingest --fast", "minilm-fast", True),
        "chunks": ("project, no sentence vectors", "minilm", False),
    }
    arms = [every[name.strip()] for name in args.arms.split(",")]
    print(f"{len(papers)} SciFact abstracts, {args.rounds} round(s), naive padding {args.pad}")
    rates: dict[str, list[float]] = {"naive": [], **{name: [] for name, _, _ in arms}}
    for _ in range(args.rounds):
        rates["naive"].append(run_naive(papers, args.pad))
        print(f"  {'naive (Chroma path)':<40} {rates['naive'][-1]:6.1f} abstracts/s", flush=True)
        for name, provider, sentences in arms:
            rate, chunks = run_project(papers, provider, sentences)
            rates[name].append(rate)
            print(f"  {name:<40} {rate:6.1f} abstracts/s ({chunks} chunks)", flush=True)
    naive = max(rates["naive"])
    for name, _, _ in arms:
        print(f"{name:<42} {max(rates[name]):6.1f} abstracts/s  {max(rates[name]) / naive:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
