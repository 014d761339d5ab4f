"""Files the package ships: prompts, the NeurIPS 2025 corpus, the eval set.

The repository keeps them in its top-level ``prompts/``, ``data/`` and ``evals/`` folders, where
people edit them; ``pyproject.toml`` maps those folders into the package (``assistant._prompts``,
``assistant._data``, ``assistant._evals``), so an installed wheel and an editable checkout find
them the same way, from any working directory.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def _folder(package: str) -> Path:
    # Installed packages live on disk (chromadb and onnxruntime could not run from a zip), so
    # the traversable is a real folder.
    return Path(str(files(package)))


def prompts_dir() -> Path:
    return _folder("assistant._prompts")


def shipped_corpus() -> Path:
    """The 95 NeurIPS 2025 abstracts that `assistant ingest` reads by default."""
    return _folder("assistant._data") / "neurips2025"


def default_eval_set() -> Path:
    return _folder("assistant._evals") / "neurips2025.jsonl"
