"""The MiniLM embedder on another ONNX file of the same network (what benchmarks compare)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from assistant.embedding.embedders import MiniLMEmbedder
from assistant.errors import ConfigError


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
