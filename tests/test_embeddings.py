"""The MiniLM embedders: the default (int8, each text alone), the shipped file in fp32, and
another ONNX file of the same network (what benchmarks compare)."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import numpy as np
import pytest

from assistant.embedding.embedders import MiniLMEmbedder, TextAloneMiniLM
from assistant.errors import ConfigError
from assistant.ingest.chunking import sentences_of
from assistant.ingest.corpus import Paper


def test_another_model_file_is_named_apart_and_used(tmp_path: Path, embedder: MiniLMEmbedder):
    copy = tmp_path / "copy-of-minilm.onnx"
    shutil.copy(MiniLMEmbedder.model_files()[0], copy)
    other = MiniLMEmbedder(model=copy)
    # A store records the name and refuses vectors under another: the file is in it.
    assert other.name != embedder.name and "copy-of-minilm.onnx" in other.name
    texts = ["KV-cache eviction for long contexts.", "Diffusion sampling in fewer steps."]
    assert np.allclose(other.embed(texts), embedder.embed(texts), atol=1e-6)
    copy.unlink()  # the session holds the weights: a copy it no longer needs
    with pytest.raises(ConfigError, match="missing.onnx"):
        MiniLMEmbedder(model=tmp_path / "missing.onnx").embed(["anything"])


@pytest.fixture(scope="module")
def default() -> TextAloneMiniLM:
    return TextAloneMiniLM()


def test_a_text_gets_the_same_vector_alone_and_in_any_batch(
    default: TextAloneMiniLM, corpus_papers: list[Paper]
):
    texts = [s for p in corpus_papers[:6] for s in sentences_of(p)]
    short, long = "KV cache eviction.", max(texts, key=len)
    alone = default.embed([short])[0], default.embed([long])[0]
    for batch in ([short, long], texts + [short, long], [long] * 3 + texts[:5] + [short]):
        got = default.embed(batch)
        assert np.array_equal(got[batch.index(short)], alone[0])
        assert np.array_equal(got[batch.index(long)], alone[1])
    assert np.array_equal(default.embed_query(short), alone[0])  # a query is a text like any
    one_worker = TextAloneMiniLM(workers=1).embed(texts)
    assert np.array_equal(one_worker, default.embed(texts))  # threads change nothing either
    # Why alone: int8 run in batches scales activations by the batch's range.
    batched = MiniLMEmbedder(fast=True)
    mates = batched.embed([short, *texts])[0]
    assert not np.array_equal(mates, batched.embed([short])[0])


def test_the_default_is_close_to_the_shipped_file_and_names_itself_apart(
    default: TextAloneMiniLM, embedder: MiniLMEmbedder, corpus_papers: list[Paper]
):
    texts = [s for p in corpus_papers[8:16] for s in sentences_of(p)]
    agreement = np.einsum("ij,ij->i", default.embed(texts), embedder.embed(texts))
    assert agreement.mean() > 0.98 and agreement.min() > 0.9
    assert np.allclose(np.linalg.norm(default.embed(texts), axis=1), 1.0, atol=1e-5)
    names = {default.name, embedder.name, MiniLMEmbedder(fast=True).name}
    assert len(names) == 3 and default.pools_chunks  # a store never mixes their vectors


def test_the_default_cuts_texts_as_the_tokenizer_truncates(default: TextAloneMiniLM):
    long = " ".join(f"token{i} of a long abstract about caches" for i in range(60))
    texts = [long, "A short sentence.", long[: len(long) // 3]]
    cut = default.embed(texts, pieces=128)
    assert np.array_equal(cut, TextAloneMiniLM(max_tokens=128).embed(texts))
    assert not np.allclose(cut[0], default.embed([long])[0], atol=1e-3)  # it was cut
    assert np.array_equal(cut[1], default.embed([texts[1]])[0])  # a short one was not
    assert default.embed([]).shape == (0, 384)


def test_a_forked_child_embeds_with_threads_of_its_own(default: TextAloneMiniLM):
    parent = default.embed(["KV cache eviction.", "Diffusion sampling."])
    pid = os.fork()
    if pid == 0:  # the child inherits the pool object but none of its threads
        signal.alarm(60)  # a hang would otherwise hold the test run
        same = np.array_equal(default.embed(["KV cache eviction.", "Diffusion sampling."]), parent)
        os._exit(0 if same else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
