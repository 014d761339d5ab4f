"""Two writers on one store, and readers beside a writer, as two users (or two terminals) would
run them: real `assistant` processes, with the fast hashing embedder so the race is about the
store, not the model."""

from __future__ import annotations

import hashlib
import json
import os
import random
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from assistant import Assistant, load_settings
from assistant.embedding.embedders import HashingEmbedder
from assistant.errors import StoreBusyError
from assistant.ingest.chunking import sentences_of
from assistant.ingest.corpus import Paper, load_corpus
from assistant.store.locking import INDEX_NOTICE_S, index_files, writer_lock
from tests.conftest import write_seed

FAST = {
    "ASSISTANT_EMBEDDING__PROVIDER": "hashing",
    "ASSISTANT_EMBEDDING__PAPERS_PER_WRITE": "4",  # many small journalled batches
}


def ingest_process(
    store: Path, *paths: Path, flags: tuple[str, ...] = (), papers_per_write: int = 4
) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSISTANT_")}
    env.update({**FAST, "ASSISTANT_EMBEDDING__PAPERS_PER_WRITE": str(papers_per_write)})
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


def reader_process(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSISTANT_")}
    env.update(FAST)
    return subprocess.run(
        [sys.executable, "-m", "assistant", *args, "--store", str(store)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def shuffled_copies(path: Path, papers: list[Paper], n: int) -> Path:
    """n new papers: the corpus's abstracts with their words shuffled, as JSONL."""
    rng = random.Random(3)
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            words = papers[i % len(papers)].abstract.split()
            rng.shuffle(words)
            row = {"title": f"Copy {i}", "url": f"https://example.org/{i}", "year": 2025}
            out.write(json.dumps({**row, "abstract": " ".join(words)}) + "\n")
    return path


def test_readers_during_a_big_ingest_neither_crash_nor_damage_the_store(
    tmp_path: Path, corpus_papers: list[Paper]
):
    """Before the index-files lock (locking.py): `search`/`ask` run while `ingest` added these
    2,000 papers crashed (SIGSEGV) in each of 3 runs, and after the ingest every command did;
    readers had saved their own copies of the index over the writer's (link_lists.bin grew
    without bound in a reviewer's run)."""
    store = tmp_path / "store"
    seed = write_seed(tmp_path / "seed.txt", [p.abstract for p in corpus_papers])
    assert ingest_process(store, seed, papers_per_write=64).wait(timeout=300) == 0
    big = shuffled_copies(tmp_path / "big.jsonl", corpus_papers, 2000)
    # Big writes: each adds more vectors than Chroma saves at (1,000), as they do with the
    # default 64 papers per write once papers have several chunks.
    writer = ingest_process(store, big, papers_per_write=500)
    reads: list[subprocess.CompletedProcess[str]] = []

    def read_while_it_writes(verb: str) -> None:
        while writer.poll() is None:
            reads.append(reader_process(store, verb, "KV cache eviction for long contexts"))

    readers = [threading.Thread(target=read_while_it_writes, args=(v,)) for v in ("search", "ask")]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join()
    out, err = writer.communicate()
    assert writer.returncode == 0, err
    assert len(reads) >= 4, "the ingest ended before readers could meet it"
    failed = [(r.args[3], r.returncode, r.stderr[-300:]) for r in reads if r.returncode != 0]
    assert failed == []
    check = reader_process(store, "info", "--check")
    assert check.returncode == 0, check.stdout + check.stderr
    assert_consistent(store, load_corpus([seed, big]).papers)


def test_a_reader_applies_the_write_log_in_memory_and_writes_no_index_file(
    tmp_path: Path, corpus_papers: list[Paper]
):
    """What the index-files lock relies on (see locking.py): between a writer's calls the log
    holds fewer entries than Chroma saves at, so a reader opening the store saves nothing.
    An ingest of 400 papers saves its first thousands of vectors and leaves the rest in the
    log."""
    store = tmp_path / "store"
    source = shuffled_copies(tmp_path / "p.jsonl", corpus_papers, 400)
    assert ingest_process(store, source).wait(timeout=300) == 0
    db = sqlite3.connect(store / "chroma" / "chroma.sqlite3")
    assert db.execute("SELECT count(*) FROM embeddings_queue").fetchone()[0] > 0
    db.close()
    before = index_file_digests(store)
    assert any(name.endswith("link_lists.bin") for name in before)
    assert reader_process(store, "search", "topic 3").returncode == 0
    assert reader_process(store, "info", "--check").returncode == 0
    assert index_file_digests(store) == before


def index_file_digests(store: Path) -> dict[str, str]:
    folder = store / "chroma"
    return {
        str(f.relative_to(folder)): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(folder.rglob("*"))
        if f.is_file() and not f.name.startswith("chroma.sqlite3")
    }


def read_briefly(store: Path, raised: list[Exception], exclusive: bool = False) -> None:
    try:
        with index_files(store, exclusive=exclusive, wait_s=0.2):
            pass
    except Exception as exc:
        raised.append(exc)


def test_a_reader_waits_for_a_writers_call_and_says_so_if_it_never_ends(
    tmp_path: Path, corpus_papers: list[Paper]
):
    store = tmp_path / "store"
    seed = write_seed(tmp_path / "seed.txt", [p.abstract for p in corpus_papers[:10]])
    assert ingest_process(store, seed).wait(timeout=300) == 0
    with index_files(store, exclusive=True):  # this test process is a writer inside a call
        waiting = subprocess.Popen(
            [sys.executable, "-m", "assistant", "search", "diffusion", "--store", str(store)],
            env={
                **{k: v for k, v in os.environ.items() if not k.startswith("ASSISTANT_")},
                **FAST,
                "ASSISTANT_STORE__READ_COPY": "0",  # it reads the index this test holds
            },
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(INDEX_NOTICE_S + 5.0)  # its cold start (chromadb's import) comes first
        assert waiting.poll() is None  # it waits rather than reading half-written files
        raised: list[Exception] = []
        other = threading.Thread(target=read_briefly, args=(store, raised))  # not the holder
        other.start()
        other.join()
        assert len(raised) == 1 and isinstance(raised[0], StoreBusyError)
        said = str(raised[0])
        assert said.startswith("an `ingest` has held the vector index of") and "Ctrl-Z" in said
    out, err = waiting.communicate(timeout=120)
    assert waiting.returncode == 0, err
    assert out.strip()
    assert f"waiting for an `ingest` to finish its call on the vector index of {store}" in err
    # A writer kept waiting names its holder too: a reader (before: the reader's advice).
    raised.clear()
    with index_files(store, exclusive=False):
        writer = threading.Thread(target=read_briefly, args=(store, raised, True))
        writer.start()
        writer.join()
    assert len(raised) == 1 and str(raised[0]).startswith("a reader (`search`, `ask`")


@pytest.mark.parametrize("wrote_first", [False, True])
def test_a_long_lived_reader_sees_each_later_ingest_by_another_process(
    tmp_path: Path, corpus_papers: list[Paper], wrote_first: bool
):
    """A reader kept open (`chat`, the API) beside ingests by other processes. It once saw
    the first later ingest (it switched to Chroma's client), then none: its copy of the index
    was loaded once, so later papers were missed and filtered questions about them were told
    the index was damaged. An API process that had ingested itself read through the client
    for good, with the same result. Found by reviewers."""
    from assistant.store import Filter

    store = tmp_path / "store"
    seed = write_seed(tmp_path / "seed.txt", [p.abstract for p in corpus_papers[:90]])
    assert ingest_process(store, seed).wait(timeout=300) == 0
    settings = load_settings(store={"path": store}, embedding={"provider": "hashing"})
    with Assistant(settings, embedder=HashingEmbedder()) as reader:
        if wrote_first:
            reader.ingest_papers(corpus_papers[90:])
        assert reader.search("diffusion sampling", k=3)
        for round_ in range(3):
            word = f"Quixwalrus{'abc'[round_]}zed"
            new = tmp_path / f"new{round_}.jsonl"
            rows = [
                {
                    "title": f"{word} estimation, part {j}",
                    "url": f"https://example.org/{round_}/{j}",
                    "year": 2023,
                    "abstract": f"We introduce {word}, a {word} estimator, case {j}. " * 3,
                }
                for j in range(2)
            ]
            new.write_text("".join(json.dumps(row) + "\n" for row in rows))
            assert ingest_process(store, new).wait(timeout=300) == 0
            query = f"{word} estimation"
            for year in (None, 2023):
                hits = reader.search(query, k=3, filters={"year": year} if year else None)
                assert word in (hits[0].paper.title or ""), (round_, year)
                vector = reader.embedder.embed_query(query)
                nearest = reader.store.nearest("chunks", vector, 2, Filter(year=year))
                titles = reader.store.papers([m.paper_id for m in nearest])
                assert all(word in (p.title or "") for p in titles.values()), (round_, year)
                assert len(titles) == 2


def test_info_says_when_its_disagreements_may_be_a_running_ingests(
    tmp_path: Path, corpus_papers: list[Paper]
):
    """`info --check` run during an ingest once listed that ingest's unfinished papers and
    not-yet-indexed vectors as if the store were broken."""
    store = tmp_path / "s"
    settings = load_settings(store={"path": store})
    with Assistant(settings, embedder=HashingEmbedder()) as a:
        a.ingest_papers(corpus_papers[:5])
        assert a.info()["problems"] == []
        a.store.catalog.set_state([corpus_papers[0].paper_id], "pending")  # as mid-write
        alone = a.info()["problems"]
        assert alone and not alone[0].startswith("an ingest")
        with writer_lock(store):
            running = a.info()["problems"]
        assert running[0].startswith(f"an ingest (pid {os.getpid()}) is writing to this store")
        assert "again when it has finished" in running[0]
        assert running[1:] == alone
