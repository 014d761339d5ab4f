# One place for the project's commands; CI runs `make check`.
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
QUESTION ?= Which NeurIPS 2025 papers study KV-cache eviction, and what do they find?

.PHONY: setup demo check lint test eval-smoke bench judge survey-bar survey-study answer-model answer-study clean-store

# PYTHON=python3.12 make setup picks another interpreter; it must be 3.11 or newer.
# The filter hides setuptools' notice that an editable install uses an import hook (the
# package maps prompts/, data/ and evals/ into itself); it is information, not a problem.
$(VENV)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { \
	  echo "error: $$($(PYTHON) --version 2>&1) is too old: Python 3.11 or newer is needed;" \
	    "run e.g. make setup PYTHON=python3.12"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	PYTHONWARNINGS="ignore:Editable installation" $(PY) -m pip install --quiet -e '.[dev]'
	touch $@

setup: $(VENV)/.installed

demo: setup            ## index the shipped corpus and answer a question, offline, no key
	$(VENV)/bin/assistant ingest
	$(VENV)/bin/assistant ask "$(QUESTION)"

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# --durations: the slowest tests, printed at the end, so what makes the suite slow is visible.
# -n: one pytest worker per core (TEST_WORKERS=0 runs them in this process); --dist loadscope
# keeps a module's tests on one worker, so a module's fixtures (a built wheel, a store) are made
# once; tests/conftest.py starts the longest modules first.
TEST_WORKERS ?= auto
test: setup
	$(VENV)/bin/pytest -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder --durations=15

check: lint eval-smoke test   ## what CI runs: lint, types, a small offline eval, tests

# The run folder stays (replaced by the next run), so the report path it prints can be opened.
eval-smoke: setup      ## 8 questions, extractive provider, offline judge, into a scratch store
	rm -rf .ci-store evals/runs/ci
	$(VENV)/bin/assistant ingest --store .ci-store --json > /dev/null
	$(VENV)/bin/assistant eval --store .ci-store --limit 8 --out evals/runs/ci \
	  --fail-under faithfulness=0.9 --fail-under recall@5=0.8
	rm -rf .ci-store

bench: setup           ## SciFact retrieval benchmark (needs ../shared/data/scifact)
	$(PY) benchmarks/scifact_retrieval.py

judge: setup           ## refit the offline judge on SciFact train, report dev
	$(PY) evals/judge/fit_offline_judge.py

survey-bar: setup      ## refit the survey bar on the eval set's tune and dev splits
	rm -rf .survey-store
	$(VENV)/bin/assistant ingest --store .survey-store --json > /dev/null
	$(PY) evals/survey/fit_survey_bar.py --store .survey-store
	rm -rf .survey-store

survey-study: setup    ## would other signals choose a survey's papers better? (held-out figures)
	rm -rf .survey-store
	$(VENV)/bin/assistant ingest --store .survey-store --json > /dev/null
	$(PY) evals/survey/signal_study.py --store .survey-store
	rm -rf .survey-store

answer-model: setup    ## refit the answer model (which sentences answer) on the tune and dev splits
	rm -rf .survey-store
	$(VENV)/bin/assistant ingest --store .survey-store --json > /dev/null
	$(PY) evals/answering/fit_answer_model.py --store .survey-store
	rm -rf .survey-store

answer-study: setup    ## would word-piece alignment find the answering sentence better? (held-out)
	rm -rf .survey-store
	$(VENV)/bin/assistant ingest --store .survey-store --json > /dev/null
	$(PY) evals/answering/signal_study.py --store .survey-store
	rm -rf .survey-store

clean-store:
	rm -rf vectorstore/chroma vectorstore/catalog.sqlite3 vectorstore/bm25
