"""Prompts live as files in ``prompts/``; one templating style (``{name}``), checked on load.

A prompt file's placeholders must be exactly the ones its caller fills: a missing or unexpected
placeholder is an error when the file is loaded, not a silently wrong prompt later.

``ASSISTANT_PROMPTS_DIR`` names a folder of your own prompt files: each file there replaces the
shipped one of the same name (``answer_system.md``, ...), under the same placeholder check.
``benchmarks/real_model.py`` measures prompt variants this way.
"""

from __future__ import annotations

import os
import string
from functools import lru_cache
from pathlib import Path

from assistant.errors import ConfigError
from assistant.resources import prompts_dir

# name -> the placeholders its template must use
EXPECTED: dict[str, frozenset[str]] = {
    "answer_system": frozenset({"cannot_answer"}),
    "answer_user": frozenset({"question", "sources"}),
    "condense_question": frozenset({"history", "question"}),
    "judge_support": frozenset({"claim", "evidence"}),
    "judge_claims": frozenset({"sentence"}),
}


# Placeholders a prompt may leave out: a system prompt may let the model refuse in its own words
# (``llm/refusals.py`` reads those) instead of quoting CANNOT_ANSWER.
OPTIONAL: dict[str, frozenset[str]] = {"answer_system": frozenset({"cannot_answer"})}


def placeholders(template: str) -> set[str]:
    return {field for _, field, _, _ in string.Formatter().parse(template) if field}


PROMPTS_DIR_VARIABLE = "ASSISTANT_PROMPTS_DIR"


def _chosen_folder(name: str) -> Path:
    """The user's folder when it holds this prompt, else the shipped prompts."""
    own = os.environ.get(PROMPTS_DIR_VARIABLE)
    if own and (Path(own) / f"{name}.md").is_file():
        return Path(own)
    return prompts_dir()


def load_prompt(name: str, folder: Path | None = None) -> str:
    return _load_prompt(name, folder or _chosen_folder(name))


@lru_cache(maxsize=32)
def _load_prompt(name: str, folder: Path) -> str:
    path = folder / f"{name}.md"
    try:
        template = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"prompt file {path} cannot be read: {exc}") from exc
    expected = EXPECTED.get(name)
    try:
        found = placeholders(template)
    except ValueError as exc:
        raise ConfigError(
            f"prompt {path}: bad braces ({exc}); write literal braces as {{{{ }}}}"
        ) from exc
    required = (expected or frozenset()) - OPTIONAL.get(name, frozenset())
    if expected is not None and not required <= found <= expected:
        raise ConfigError(
            f"prompt {path} has placeholders {sorted(found)}, expected {sorted(expected)}"
        )
    return template


def render(name: str, folder: Path | None = None, **values: str) -> str:
    return load_prompt(name, folder).format(**values)
