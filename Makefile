# One place for the project's commands; CI runs `make check`.
VENV ?= .venv
PY := $(VENV)/bin/python
QUESTION ?= Which papers study KV-cache eviction, and what do they find?

.PHONY: setup demo check lint test bench clean-store

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

setup: $(VENV)/.installed

demo: setup            ## index the shipped corpus and search it, offline
	$(VENV)/bin/assistant ingest
	$(VENV)/bin/assistant search "$(QUESTION)" -k 5

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

test: setup
	$(VENV)/bin/pytest

check: lint test       ## what CI runs: lint, types, tests

bench: setup           ## SciFact retrieval benchmark (needs ../shared/data/scifact)
	$(PY) benchmarks/scifact_retrieval.py

clean-store:
	rm -rf vectorstore/chroma vectorstore/catalog.sqlite3 vectorstore/bm25
