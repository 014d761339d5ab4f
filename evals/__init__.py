"""The eval set. The wheel carries this folder as ``assistant._evals`` (see pyproject.toml)."""
