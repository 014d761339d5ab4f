"""Shipped corpus. The wheel carries this folder as ``assistant._data`` (see pyproject.toml)."""
