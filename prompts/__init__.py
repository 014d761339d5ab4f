"""Prompt templates; the wheel carries this folder as ``assistant._prompts`` (pyproject.toml)."""
