"""Prompt files: placeholders checked on load, and a user's own prompt folder
(ASSISTANT_PROMPTS_DIR) replacing the shipped files it holds, for the answers really sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant import Assistant, load_settings
from assistant.answer.prompts import PROMPTS_DIR_VARIABLE, load_prompt
from assistant.errors import ConfigError
from assistant.resources import prompts_dir
from tests.model_families import KVFLOW_Q
from tests.openai_server import FakeOpenAI


def test_every_shipped_prompt_loads():
    for path in sorted(prompts_dir().glob("*.md")):
        assert load_prompt(path.stem)


def test_a_wrong_placeholder_is_an_error_on_load(tmp_path: Path):
    (tmp_path / "answer_user.md").write_text("{sources} {query}", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"expected \['question', 'sources'\]"):
        load_prompt("answer_user", tmp_path)
    (tmp_path / "answer_system.md").write_text("Refuse in your own words.", encoding="utf-8")
    assert load_prompt("answer_system", tmp_path)  # {cannot_answer} may be left out


def test_a_users_prompt_folder_replaces_the_shipped_files_it_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shipped_store, embedder, server: FakeOpenAI
):
    (tmp_path / "answer_system.md").write_text(
        "Answer as a pirate. If nothing answers, say: {cannot_answer}", encoding="utf-8"
    )
    monkeypatch.setenv(PROMPTS_DIR_VARIABLE, str(tmp_path))
    server.enqueue("KVFlow uses steps-to-execution values [1].")
    settings = load_settings(
        store={"path": shipped_store},
        llm={"provider": "openai", "model": "m", "timeout": 5},
        openai_base_url=server.base_url,
    )
    with Assistant(settings, embedder=embedder) as assistant:
        assistant.ask(KVFLOW_Q)
    system, user = (m["content"] for m in server.last_messages())
    assert system.startswith("Answer as a pirate.") and "do not answer this question" in system
    assert user.startswith("<question>")  # the shipped user prompt: not in the folder
