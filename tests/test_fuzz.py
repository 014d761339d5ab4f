"""Property-based tests: generated (often hostile) text through the loaders, the chunker, the
citation checker and retrieval. No input may crash them; each keeps its promises. 10,300 cases
in all (the max_examples below), in about a minute on two cores.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from assistant import Assistant, load_settings
from assistant.answer.citations import _MARKER, check_citations
from assistant.embedding.embedders import HashingEmbedder
from assistant.errors import AssistantError, InputFileError
from assistant.ingest.chunking import Chunker
from assistant.ingest.corpus import Paper, load_file, make_paper
from assistant.retrieval.hybrid import Hit

LIMIT = 400  # a small abstract size limit, so that cutting is exercised too


def cases(n: int) -> Any:
    return settings(
        max_examples=n,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# Text as corpora and models produce it: words, numbers, LaTeX, markup, controls, any Unicode.
pieces = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["the", "model", "cache", "KV", "LLM", "we", "propose", "results", "."]),
    st.sampled_from(["[1]", "[2, 3]", "[1-4]", "[99]", "$\\tilde{O}(\\sqrt{T})$", "e.g.", "\n\n"]),
    st.sampled_from(["<script>", "</source>", "\x1b[2J", "\x9b31m", "\u200b", "\ufeff", "\r\n"]),
    st.text(alphabet="abcdefghij", min_size=50, max_size=600),  # a long word, no spaces
)
prose = st.lists(pieces, max_size=30).map(" ".join)
field_value = st.one_of(st.none(), prose, st.integers(), st.lists(st.text(max_size=20), max_size=4))


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def load_and_check(path: Path) -> None:
    """Load one generated file; a file-level problem (empty, undecodable) is one reported
    error, anything else must load into well-formed papers."""
    warnings: list[str] = []
    try:
        papers, problems = load_file(path, LIMIT, warnings)
    except InputFileError:
        return
    check_loaded(papers, problems, warnings)


def check_loaded(papers: list[Paper], problems: list[InputFileError], warnings: list[str]) -> None:
    for paper in papers:
        assert paper.abstract.strip() and paper.paper_id and paper.label
        assert len(paper.abstract) <= LIMIT
    assert all(isinstance(p, InputFileError) for p in problems)
    assert all(w.split(": ", 1)[1].startswith("abstract is ") for w in warnings)


@cases(2200)
@given(
    records=st.lists(
        st.one_of(
            st.dictionaries(
                st.sampled_from(["abstract", "id", "title", "authors", "year", "venue", "url"]),
                field_value,
            ),
            prose,  # a line that is not JSON, or JSON that is not an object
            st.integers(),
        ),
        max_size=6,
    )
)
def test_jsonl_loader_never_crashes(scratch: Path, records: list[Any]):
    path = scratch / "fuzz.jsonl"
    lines = [json.dumps(r) if not isinstance(r, str) else r.replace("\n", " ") for r in records]
    path.write_text("\n".join(lines), encoding="utf-8", errors="surrogatepass")
    load_and_check(path)


@cases(1500)
@given(
    header=st.lists(st.sampled_from(["abstract", "title", "year", "x", "Abstract "]), max_size=4),
    rows=st.lists(st.lists(field_value.map(str), max_size=5), max_size=5),
)
def test_csv_loader_never_crashes(scratch: Path, header: list[str], rows: list[list[str]]):
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(header)
    writer.writerows(rows)
    path = scratch / "fuzz.csv"
    path.write_text(buffer.getvalue(), encoding="utf-8", errors="surrogatepass")
    load_and_check(path)


@cases(1500)
@given(body=st.one_of(prose, st.binary(max_size=300).map(lambda b: b.decode("latin-1"))))
@example(body="\\iÀ")  # all markup: its readable text was empty, and so was its label
def test_seed_loader_never_crashes(scratch: Path, body: str):
    path = scratch / "fuzz.txt"
    path.write_text("Header line\n\n" + body, encoding="utf-8", errors="surrogatepass")
    load_and_check(path)


CHUNKER = Chunker(chunk_tokens=40, overlap_tokens=10)


@cases(1500)
@given(text=prose.filter(lambda t: t.strip()), title=st.one_of(st.none(), prose))
def test_chunker_covers_every_abstract_within_the_token_limit(text: str, title: str | None):
    try:
        paper = make_paper({"abstract": text, "title": title}, "fuzz.jsonl#1")
    except ValueError:
        return  # nothing left after normalisation: reported as an empty abstract
    chunks = CHUNKER.split(paper)
    assert chunks, "every paper has at least one chunk"
    assert [c.index for c in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert chunk.text.strip() and chunk.paper_id == paper.paper_id
        assert CHUNKER.count_tokens(chunk.text) <= CHUNKER.chunk_tokens
    assert len(chunks) <= 2 + len(paper.text_for_index) // 10


def _hit(n: int) -> Hit:
    paper = Paper(paper_id=f"p{n}", source=f"f.txt#{n}", label=f"Paper {n}", abstract=f"Text {n}.")
    return Hit(rank=n, paper=paper, score=1.0, chunk=paper.abstract)


@cases(3000)
@given(
    answer=st.lists(
        st.one_of(
            pieces,
            st.integers(-3, 12).map(lambda n: f"[{n}]"),
            st.tuples(st.integers(0, 9), st.integers(0, 30)).map(lambda t: f"[{t[0]}-{t[1]}]"),
            st.sampled_from(["# Heading [1]", "Sources: [1] [2]", "- item [2].", "**Bold**:"]),
        ),
        max_size=40,
    ).map(" ".join),
    n_sources=st.integers(0, 6),
)
def test_citation_check_never_cites_a_missing_source(answer: str, n_sources: int):
    sources = [_hit(n) for n in range(1, n_sources + 1)]
    checked = check_citations(answer, sources)
    numbers = [c.n for c in checked.citations]
    assert numbers == sorted(set(numbers))
    assert all(1 <= n <= n_sources for n in numbers)
    for match in _MARKER.finditer(checked.text):  # markers left in the text point somewhere
        for part in match.group(1).replace(" ", "").split(","):
            if part.isdigit():
                assert 1 <= int(part) <= n_sources, checked.text


@pytest.fixture(scope="module")
def small_store(tmp_path_factory: pytest.TempPathFactory, corpus_papers: list[Paper]):
    store = tmp_path_factory.mktemp("fuzzstore") / "store"
    settings_ = load_settings(store={"path": store}, embedding={"provider": "hashing"})
    with Assistant(settings_, embedder=HashingEmbedder()) as assistant:
        assistant.ingest_papers(corpus_papers[:10])
        yield assistant


@cases(600)
@given(query=prose, k=st.integers(1, 12))
def test_retrieval_answers_any_query(small_store: Assistant, query: str, k: int):
    try:
        hits = small_store.search(query, k=k)
    except AssistantError as exc:  # empty or overlong questions: one line saying so
        assert "question" in str(exc)
        return
    assert len(hits) <= k
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert len({h.paper_id for h in hits}) == len(hits)
