"""Two writers on one store, as two users (or two terminals) would run them: real `assistant
ingest` processes, with the fast hashing embedder so the race is about the store, not the model."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from assistant import Assistant, load_settings
from assistant.chunking import sentences_of
from assistant.corpus import Paper, load_corpus
from assistant.embeddings import HashingEmbedder
from assistant.locking import writer_lock
from tests.conftest import write_seed

FAST = {
    "ASSISTANT_EMBEDDING__PROVIDER": "hashing",
    "ASSISTANT_EMBEDDING__PAPERS_PER_WRITE": "4",  # many small journalled batches
}


def ingest_process(store: Path, *paths: Path, flags: tuple[str, ...] = ()) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSISTANT_")}
    env.update(FAST)
    return subprocess.Popen(
        [sys.executable, "-m", "assistant", "ingest", *map(str, paths), "--store", str(store)]
        + list(flags),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def assert_consistent(store: Path, papers: list[Paper]) -> None:
    """Catalog, chunk vectors, sentence vectors and the lexical index hold exactly `papers`."""
    settings = load_settings(store={"path": store}, embedding={"provider": "hashing"})
    with Assistant(settings, embedder=HashingEmbedder()) as a:
        counts = a.store.catalog.counts()
        assert counts["unfinished"] == 0
        assert {p.paper_id for p in a.store.catalog.iter_ready()} == {p.paper_id for p in papers}
        assert a.store.chunks.count() == counts["chunks"]
        assert a.store.sentences is not None
        assert a.store.sentences.count() == sum(len(sentences_of(p)) for p in papers)
        a.retriever()  # brings the lexical index up to date if it is stale
        assert sorted(a.store.lexical_index.paper_ids()) == sorted(p.paper_id for p in papers)


@pytest.fixture()
def two_files(tmp_path: Path, corpus_papers: list[Paper]) -> tuple[Path, Path]:
    a = write_seed(tmp_path / "a.txt", [p.abstract for p in corpus_papers[:45]])
    b = write_seed(tmp_path / "b.txt", [p.abstract for p in corpus_papers[45:]])
    return a, b


def test_two_ingests_of_different_files_keep_both(tmp_path: Path, two_files):
    store = tmp_path / "store"
    first, second = (ingest_process(store, f) for f in two_files)
    outs = [p.communicate(timeout=300) for p in (first, second)]
    assert [p.returncode for p in (first, second)] == [0, 0], outs
    assert "45 added" in " ".join(outs[0][0].split()) and "50 added" in " ".join(outs[1][0].split())
    assert_consistent(store, load_corpus(list(two_files)).papers)


def test_two_ingests_of_the_same_file_index_it_once(tmp_path: Path, two_files):
    store = tmp_path / "store"
    runs = [ingest_process(store, two_files[0]) for _ in range(2)]
    outs = [" ".join(p.communicate(timeout=300)[0].split()) for p in runs]
    assert [p.returncode for p in runs] == [0, 0]
    # One wrote, the other waited and then found everything there.
    assert sorted("45 added" in out for out in outs) == [False, True]
    assert any("45 unchanged" in out for out in outs)
    assert_consistent(store, load_corpus([two_files[0]]).papers)


def test_a_second_writer_waits_or_fails_at_once_with_no_wait(tmp_path: Path, two_files):
    store = tmp_path / "store"
    with writer_lock(store):  # this test process is "the other ingest"
        started = time.monotonic()
        refused = ingest_process(store, two_files[0], flags=("--no-wait",))
        _, err = refused.communicate(timeout=60)
        assert refused.returncode == 1
        assert f"another ingest is writing to {store} (pid {os.getpid()})" in err
        assert "--no-wait" in err and "Traceback" not in err

        waiting = ingest_process(store, two_files[0])
        deadline = time.monotonic() + 60
        line = ""
        while "waiting" not in line and time.monotonic() < deadline:
            line = waiting.stderr.readline() if waiting.stderr else ""
        assert f"(pid {os.getpid()}); waiting" in line
        assert waiting.poll() is None  # still waiting while the lock is held
    assert waiting.wait(timeout=300) == 0
    assert time.monotonic() - started < 300
    assert_consistent(store, load_corpus([two_files[0]]).papers)
