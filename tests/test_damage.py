"""Stores damaged as users' stores get damaged (issue #11's table), each reproduced and handled:
warned about, healed, or reported in one line with the remedy. Fast: the hashing embedder.

Each case works on its own copy of one store, at a path this process has not opened before
(Chroma keeps one client per path for the life of a process, as a user's process would not).
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from assistant.cli.main import main
from assistant.ingest.corpus import Paper
from tests.conftest import write_seed


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def run_process(*args: str, timeout: float = 120) -> tuple[int, str, str]:
    """The command in a process of its own, as a user runs it: after a write failed for want
    of space, Chroma's client in that process is not to be used again."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSISTANT_")}
    env["ASSISTANT_EMBEDDING__PROVIDER"] = "hashing"
    env["ASSISTANT_EMBEDDING__PAPERS_PER_WRITE"] = "8"
    done = subprocess.run(
        [sys.executable, "-m", "assistant", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return done.returncode, done.stdout, done.stderr


@pytest.fixture(autouse=True)
def _hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSISTANT_EMBEDDING__PROVIDER", "hashing")
    monkeypatch.setenv("ASSISTANT_EMBEDDING__PAPERS_PER_WRITE", "8")


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory, corpus_papers: list[Paper]) -> Path:
    folder = tmp_path_factory.mktemp("sources")
    write_seed(folder / "a.txt", [p.abstract for p in corpus_papers[:12]])
    write_seed(folder / "b.txt", [p.abstract for p in corpus_papers[12:20]])
    return folder


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory, sources: Path) -> Path:
    store = tmp_path_factory.mktemp("healthy") / "store"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ASSISTANT_EMBEDDING__PROVIDER", "hashing")
        code, out, err = run("ingest", str(sources), "--store", str(store))
        assert code == 0, err
        assert run("search", "learning", "--store", str(store))[0] == 0  # writes the BM25 index
    return store


@pytest.fixture()
def store(healthy: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "store"
    shutil.copytree(healthy, copy)
    return copy


def info(store: Path, runner=run) -> tuple[int, dict, str]:
    code, out, err = runner("info", "--json", "--check", "--store", str(store))
    return code, json.loads(out) if out.strip() else {}, err


def _repaired(out: str, n: int) -> bool:
    """The summary says n papers had their vectors made again (by ``--repair`` or an ingest)."""
    text = " ".join(out.split())
    return f"{n} repaired whose" in text or f"{n} papers whose vectors were gone" in text


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_a_healthy_store_passes_the_check(store: Path):
    code, details, err = info(store)
    assert code == 0 and details["problems"] == [] and err == ""
    assert details["papers"] == details["lexical"] == 20


READS = (["search", "learning"], ["ask", "what is federated learning?"])


def _answered_from_the_copy(store: Path, healthy: Path, runner=run) -> None:
    """The store's read copy (``read_copy``) holds every vector: reads answer as the healthy
    store does, exit 0, without a word of the indexes, which `info --check` still tells."""
    assert (store / "vectors.npz").is_file()
    for command in READS:
        code, out, err = runner(*command, "--store", str(store))
        expected = runner(*command, "--store", str(healthy))[1]
        assert code == 0 and _untimed(out) == _untimed(expected), (command, err)
    assert info(store, runner)[0] == 1


def _untimed(out: str) -> str:
    """The output without the answer's time ("extractive/extractive, 0.1 s"), which a quick
    refusal rounds either way."""
    return re.sub(r", \d+(?:\.\d+)? s$", ", … s", out, flags=re.MULTILINE)


@pytest.mark.parametrize("copy", [False, True], ids=["indexes", "copy"])
def test_deleted_vectors_are_reported_then_re_embedded(
    store: Path, sources: Path, healthy: Path, copy: bool
):
    """Before: `search` and `ask` answered from the lexical index alone, exit 0, and a read
    made an empty chroma.sqlite3; now every read says so, and none creates anything. With
    the read copy, reads answer whole from it."""
    shutil.rmtree(store / "chroma")
    if copy:
        _answered_from_the_copy(store, healthy)
    else:
        (store / "vectors.npz").unlink()
    for command in () if copy else READS:
        code, out, err = run(*command, "--store", str(store))
        assert code == 1 and out == "", command
        assert "chroma.sqlite3 is missing" in one_line(err)
        assert f"`assistant ingest --repair --store {store}` rebuilds the index" in err
    code, details, err = info(store)
    assert code == 1 and details["vectors"] is None and "chroma.sqlite3 is missing" in err
    assert not (store / "chroma").exists()
    # The remedy reads no input: the shipped corpus is not added to the store.
    code, out, err = run("ingest", "--repair", "--store", str(store))
    assert code == 0, err
    text = " ".join(out.split())
    assert "Repaired" in text and "20 papers whose vectors were gone embedded again" in text
    code, details, err = info(store)
    assert code == 0 and details["papers"] == 20 and details["problems"] == []
    code, details, err = info(store)
    assert (code, details["problems"], details["vectors"]) == (0, [], details["chunks"])
    hit = run("search", "--json", "learning", "-k", "3", "--store", str(store))[1]
    assert all(h["score"] != 0 for h in json.loads(hit)["hits"])


def test_papers_not_given_again_are_repaired_from_the_catalog(store: Path, sources: Path):
    shutil.rmtree(store / "chroma")
    code, out, _ = run("ingest", str(sources / "b.txt"), "--store", str(store))
    assert code == 0 and _repaired(out, 20)
    assert info(store)[0] == 0


@pytest.mark.parametrize("size", [0, 8192])
def test_truncated_catalog_is_one_line_with_the_remedy(store: Path, sources: Path, size: int):
    with (store / "catalog.sqlite3").open("r+b") as handle:
        handle.truncate(size)
    for command in (["info"], ["search", "cache"], ["ask", "what is new?"], ["ingest"]):
        code, _, err = run(*command, "--store", str(store))
        line = one_line(err)
        assert code == 1, command
        assert f"the store's catalog {store / 'catalog.sqlite3'} is damaged" in line
        assert f"`assistant ingest --rebuild [PATHS] --store {store}`" in line

    code, out, err = run("ingest", "--rebuild", str(sources), "--store", str(store))
    assert code == 0, err
    aside = Path(err.split("moved the old store's files to ", 1)[1].split(" (nothing")[0])
    assert aside.parent == store.parent and aside.name.startswith("store.damaged-")
    assert (aside / "catalog.sqlite3").stat().st_size == size  # kept as it was, not deleted
    assert (aside / "chroma").is_dir()
    assert "20 added" in " ".join(out.split())
    assert info(store)[0] == 0


def test_a_rebuild_moves_no_index_file_while_a_reader_reads_it(store: Path, sources: Path):
    """--rebuild moves the store's files aside; a reader inside a Chroma call holds the index
    files' lock (locking.index_files), and the move waits for it."""
    import time

    from assistant.store.locking import index_files

    (store / "catalog.sqlite3").write_bytes(b"")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSISTANT_")}
    env["ASSISTANT_EMBEDDING__PROVIDER"] = "hashing"
    command = [sys.executable, "-m", "assistant", "ingest", "--rebuild", str(sources)]
    with index_files(store, exclusive=False):
        rebuild = subprocess.Popen(
            [*command, "--store", str(store)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(3)
        assert rebuild.poll() is None
        assert not list(store.parent.glob("store.damaged-*")) and (store / "chroma").is_dir()
    out, err = rebuild.communicate(timeout=120)
    assert rebuild.returncode == 0, err
    assert len(list(store.parent.glob("store.damaged-*"))) == 1
    assert "20 added" in " ".join(out.split())


def test_garbage_catalog_is_one_line(store: Path):
    (store / "catalog.sqlite3").write_bytes(b"not a database at all\n" * 500)
    code, _, err = run("search", "cache", "--store", str(store))
    assert code == 1 and "is damaged (file is not a database)" in one_line(err)


def _truncate_lexical_data(store: Path) -> None:
    for part in (store / "bm25").glob("g*/*"):
        with part.open("r+b") as handle:
            handle.truncate(part.stat().st_size // 3)


def _empty_pointer(store: Path) -> None:
    (store / "bm25" / "current.json").write_text("")


@pytest.mark.parametrize("damage", [_empty_pointer, _truncate_lexical_data])
@pytest.mark.parametrize("first", ["search", "ingest"])
def test_unreadable_lexical_index_is_rebuilt(store: Path, sources: Path, damage, first: str):
    damage(store)
    if first == "search":
        code, out, err = run("search", "--json", "federated learning", "--store", str(store))
        assert code == 0 and err == "" and json.loads(out)["hits"]
    else:
        code, out, err = run("ingest", str(sources), "--store", str(store))
        assert code == 0 and "Traceback" not in err and "20 unchanged" in " ".join(out.split())
    pointer = json.loads((store / "bm25" / "current.json").read_text())
    assert pointer["generation"] >= 1
    code, details, _ = info(store)
    assert code == 0 and details["lexical"] == 20


@pytest.fixture()
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MB tmpfs, as the issue's report used; needs root (CI is root on this machine)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_full_disk_is_one_line_and_keeps_the_store_as_it_was(
    small_disk: Path, tmp_path: Path, corpus_papers: list[Paper]
):
    first = write_seed(tmp_path / "first.txt", [p.abstract for p in corpus_papers[:4]])
    rest = write_seed(tmp_path / "rest.txt", [p.abstract for p in corpus_papers[4:]])
    filler = small_disk / "filler"
    # Chroma itself sometimes blocks for good once a write fails for want of space (about one
    # run in nine here, inside chromadb): a known limit, said in the README. Such a run is
    # retried once on a fresh store; the assertions below hold for every run that ends.
    for attempt in range(2):
        store = small_disk / f"store-{attempt}"
        assert run_process("ingest", str(first), "--store", str(store))[0] == 0
        free = shutil.disk_usage(small_disk).free
        filler.write_bytes(b"\0" * (free - 1_200_000))
        try:
            code, _, err = run_process("ingest", str(rest), "--store", str(store), timeout=60)
            break
        except subprocess.TimeoutExpired:
            filler.unlink()
            shutil.rmtree(store)
    assert code == 1
    line = one_line(err)
    assert line.startswith(f"error: disk full writing {store}: ")
    assert "free some space and run the same `assistant ingest` again" in line
    code, _, err = run_process("info", "--store", str(store))  # Chroma may not even read now
    assert code in (0, 1) and "Traceback" not in err and len(err.strip().splitlines()) <= 1

    filler.unlink()
    with sqlite3.connect(store / "catalog.sqlite3") as db:
        ready = {r[0] for r in db.execute("SELECT source FROM papers WHERE state = 'ready'")}
    # As before the failed batch: the first file, and whole batches (8 papers) of the second.
    assert {f"first.txt#{i}" for i in range(1, 5)} <= ready
    written = sorted(int(s.split("#")[1]) for s in ready if s.startswith("rest.txt"))
    assert written == list(range(1, len(written) + 1)) and len(written) % 8 == 0
    assert len(written) < len(corpus_papers) - 4
    code, details, _ = info(store, run_process)  # what Chroma kept of the batch is no paper's
    assert details["papers"] == len(ready)
    assert not any("lost vectors" in p or "lexical" in p for p in details["problems"])
    query = " ".join(corpus_papers[1].abstract.split()[:10])
    code, out, _ = run_process("search", "--json", query, "-k", "1", "--store", str(store))
    assert json.loads(out)["hits"][0]["source"] == "first.txt#2"

    code, out, err = run_process("ingest", str(first), str(rest), "--store", str(store))
    assert code == 0, err
    code, details, err = info(store, run_process)
    assert code == 0, err
    assert details["papers"] == len(corpus_papers) and details["problems"] == []


def test_rebuild_refuses_a_readable_store(store: Path, sources: Path):
    """Before: --rebuild without PATHS on a healthy store moved it aside and rebuilt the shipped
    corpus only, silently leaving the user's papers out."""
    code, _, err = run("ingest", "--rebuild", "--store", str(store))
    assert code == 1 and "is readable, so there is nothing to rebuild" in err
    assert not list(store.parent.glob(f"{store.name}.damaged-*"))


@pytest.fixture(scope="module")
def saved_index(tmp_path_factory: pytest.TempPathFactory, corpus_papers: list[Paper]) -> Path:
    """A store whose sentence index Chroma has saved to its files (it does so every 1,000
    vectors; below that the vectors live in its log): 95 papers of two abstracts each."""
    folder = tmp_path_factory.mktemp("saved")
    shifted = corpus_papers[30:] + corpus_papers[:30]
    pairs = zip(corpus_papers, shifted, strict=True)
    write_seed(folder / "long.txt", [a.abstract + " " + b.abstract for a, b in pairs])
    store = folder / "store"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ASSISTANT_EMBEDDING__PROVIDER", "hashing")
        code, _, err = run("ingest", str(folder / "long.txt"), "--store", str(store))
    assert code == 0, err
    assert list((store / "chroma").glob("*/index_metadata.pickle"))
    return store


def _empty_id_map(store: Path) -> None:
    """What test_kill met (1 run in ~5): a writer killed while Chroma saved an index left its id
    map empty (Chroma truncates the file, then writes it), and every read of it failed after."""
    for pickle in (store / "chroma").glob("*/index_metadata.pickle"):
        pickle.write_bytes(b"")


def _no_id_map(store: Path) -> None:
    """Chroma reads the index as holding none of the vectors it had saved, and answers come
    from the rest without a word (a reviewer's damage): the probe's searches find it."""
    for pickle in (store / "chroma").glob("*/index_metadata.pickle"):
        pickle.unlink()


def _no_index_folder(store: Path) -> None:
    for pickle in (store / "chroma").glob("*/index_metadata.pickle"):
        shutil.rmtree(pickle.parent)


@pytest.mark.parametrize(
    ("damage", "heal"),
    [
        (_empty_id_map, ["ingest", "--repair"]),
        (_no_id_map, ["ingest", "--repair"]),
        (_no_index_folder, ["ingest", "--repair"]),
        # Chroma fails on it, so the next ingest rebuilds it too. Damage Chroma reads without
        # a word (the other two) is found by the probes of `info --check` and `--repair` only.
        (_empty_id_map, ["ingest", "SOURCE"]),
    ],
)
def test_an_index_chroma_cannot_load_is_rebuilt_from_the_catalog(
    saved_index: Path, tmp_path: Path, heal: list[str], damage: Callable[[Path], None]
):
    store = tmp_path / "store"
    shutil.copytree(saved_index, store)
    damage(store)
    for command in (["search", "diffusion"], ["ask", "what is new?"], ["info", "--check"]):
        if damage is not _empty_id_map and command[0] != "info":
            continue  # Chroma reads the rest without a word: the probe of `info` tells
        code, _, err = run(*command, "--store", str(store))
        line = one_line(err)
        assert code == 1, command
        # `info` lists it among the store's problems, with what the catalog holds.
        assert command[0] != "info" or line.startswith("warning: a vector index")
        assert f"a vector index in {store} cannot be read" in line
        assert f"`assistant ingest --repair --store {store}` rebuilds the index" in line
    # The catalog's figures show; the vectors are not shown as empty (before: every figure 0,
    # the lexical index's too).
    details = info(store)[1]
    assert details["lexical"] == details["papers"] == 95
    assert details["sentence_vectors"] is None
    code, out, _ = run("info", "--store", str(store))
    assert code == 0 and "sentence_vectors  unreadable" in out

    source = str(saved_index.parent / "long.txt")
    code, out, err = run(*[source if a == "SOURCE" else a for a in heal], "--store", str(store))
    assert code == 0, err
    assert re.search(r"95 (repaired|papers) whose vectors were gone", " ".join(out.split()))
    code, details, err = info(store)
    assert code == 0 and details["problems"] == [] and details["papers"] == 95, err
    (aside,) = store.glob("chroma.damaged-*")  # moved aside whole, nothing deleted
    assert (aside / "chroma.sqlite3").is_file() and (store / "chroma" / "chroma.sqlite3").is_file()
    code, out, _ = run("search", "--json", "diffusion", "--store", str(store))
    assert code == 0 and json.loads(out)["hits"]


def _cut(file: str, keep: float) -> Callable[[Path], None]:
    def cut(store: Path) -> None:
        for pickle in (store / "chroma").glob("*/index_metadata.pickle"):
            target = pickle.parent / file
            with target.open("r+b") as f:
                f.truncate(int(target.stat().st_size * keep))

    cut.__name__ = f"{file}_cut"
    return cut


def _overwrite(file: str, make: Callable[[int], bytes], at: float = 0.0) -> Callable[[Path], None]:
    """Bytes of the file from ``at`` (a share of its length) on replaced by ``make(n)``."""

    def overwrite(store: Path) -> None:
        for pickle in (store / "chroma").glob("*/index_metadata.pickle"):
            target = pickle.parent / file
            size = target.stat().st_size
            with target.open("r+b") as f:
                f.seek(int(size * at))
                f.write(make(size - int(size * at)))

    overwrite.__name__ = f"{file}_{make.__name__}_from_{at}"
    return overwrite


def zeros(n: int) -> bytes:
    return bytes(n)


def noise(n: int) -> bytes:
    return random.Random(n).randbytes(n)


@pytest.mark.parametrize(
    "damage",
    [
        _cut("data_level0.bin", 0.5),
        _cut("header.bin", 0.5),  # crashes a reader (SIGSEGV): the probe's child, not `info`
        _overwrite("link_lists.bin", zeros),
        _overwrite("data_level0.bin", noise),
        _overwrite("data_level0.bin", zeros, at=0.5),
    ],
)
def test_damaged_index_files_are_told_and_rebuilt(
    saved_index: Path, tmp_path: Path, damage: Callable[[Path], None]
):
    """Index files damaged from outside (no write of ours was cut: the journal holds no mark):
    `info --check` and `ingest --repair` read the indexes in a child process (``probe``), so
    a crash inside Chroma is told, and the repair moves the folder aside and rebuilds it. Not
    caught (Chroma reads them and answers): a cut or noisy link-list file, `length.bin`
    zeroed or noise."""
    store = tmp_path / "store"
    shutil.copytree(saved_index, store)
    damage(store)
    code, _, err = run_process("info", "--check", "--store", str(store))
    assert code == 1, err
    assert f"a vector index in {store} cannot be read" in one_line(err)
    code, out, err = run_process("ingest", "--repair", "--store", str(store))
    assert code == 0, err
    assert re.search(r"95 (repaired|papers) whose vectors were gone", " ".join(out.split()))
    code, details, err = info(store, run_process)
    assert code == 0 and details["problems"] == [] and details["papers"] == 95, err
    code, out, _ = run_process("search", "--json", "diffusion", "--store", str(store))
    assert code == 0 and json.loads(out)["hits"]


def test_a_search_over_index_files_changed_from_outside_is_probed_first(
    saved_index: Path, tmp_path: Path
):
    """Index files whose sizes are not as the last writer left them (no mark: damage from
    outside) are read in a child process before a search reads them: a cut `header.bin`
    crashed `search` (SIGSEGV, exit -11, no word of the store); now told in one line, every
    time. A store made before fingerprints were recorded is probed once, then recorded."""
    store = tmp_path / "store"
    shutil.copytree(saved_index, store)
    with sqlite3.connect(store / "catalog.sqlite3") as db:
        db.execute("DELETE FROM meta WHERE key = 'vectors_files'")
    db.close()
    code, out, err = run_process("search", "--json", "diffusion", "--store", str(store))
    assert code == 0 and json.loads(out)["hits"], err
    with sqlite3.connect(store / "catalog.sqlite3") as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'vectors_files'").fetchone()[0]
    db.close()
    _cut("header.bin", 0.5)(store)
    for _ in range(2):
        code, _, err = run_process("search", "diffusion", "--store", str(store))
        assert code == 1, err
        assert "cannot be read" in one_line(err) and "ingest --repair" in err


@pytest.mark.parametrize("read_only", ["chroma", "."])
def test_a_store_this_user_cannot_write_is_said_so_and_never_set_aside(
    saved_index: Path, tmp_path: Path, read_only: str
):
    """Chroma and SQLite write even to read. A read-only `chroma/` was probed, failed, and was
    told as a damaged index with `--repair` advice, which then set the whole index aside and
    embedded every paper again; a read-only store was told as a damaged catalog, with
    `--rebuild` advice (a new user's trial)."""
    as_user: list[str] = []
    if os.geteuid() == 0:  # root writes anywhere: drop the capabilities that let it
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv to drop its capabilities")
        caps = "-dac_override,-dac_read_search,-fowner"
        as_user = ["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}"]
    store = tmp_path / "store"
    shutil.copytree(saved_index, store)
    with sqlite3.connect(store / "catalog.sqlite3") as db:  # made before fingerprints: probed
        db.execute("DELETE FROM meta WHERE key = 'vectors_files'")
    db.close()
    top = store / read_only
    folders = [top, *(p for p in top.rglob("*") if p.is_dir())]
    for path in [*folders, *(p for p in top.rglob("*.sqlite3"))]:
        path.chmod(path.stat().st_mode & ~0o222)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSISTANT_")}
    env["ASSISTANT_EMBEDDING__PROVIDER"] = "hashing"
    try:
        for command in (["search", "diffusion"], ["ingest", "--repair"]):
            done = subprocess.run(
                [*as_user, sys.executable, "-m", "assistant", *command, "--store", str(store)],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 1, done.stderr
            assert "is not writable by this user" in one_line(done.stderr)
    finally:
        for path in folders:
            path.chmod(path.stat().st_mode | 0o200)
    assert not list(store.glob("chroma.damaged-*"))


@pytest.mark.parametrize("path", ["ids", "metadata"])
def test_a_filtered_search_over_a_zeroed_index_file_is_told_not_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
):
    """A zeroed ``data_level0.bin`` makes Chroma answer a filtered search with nothing, or
    with wrong neighbours, and no error (a new user's trial: 1 to 9 of the top 10 right, exit
    0). A search is checked: it must find vectors of papers the catalog holds, its best at the
    distance its stored vector gives. Both ways Chroma is asked: among ids, and by metadata."""
    from assistant import Assistant, load_settings
    from assistant.embedding.embedders import HashingEmbedder
    from assistant.errors import VectorIndexDamagedError
    from assistant.store import filtered

    monkeypatch.setattr(filtered, "EXACT_VECTORS", 0)  # never read and scored here
    if path == "metadata":
        monkeypatch.setattr(filtered, "SENTENCE_PAPERS", 0)
    store = tmp_path / "store"
    env = os.environ | {
        "ASSISTANT_EMBEDDING__PROVIDER": "hashing",
        "ASSISTANT_STORE__SAVE_EVERY": "50",  # nearly every vector in the index files
    }
    made = subprocess.run(
        [sys.executable, "-m", "assistant", "ingest", "--store", str(store)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert made.returncode == 0, made.stderr
    _overwrite("data_level0.bin", zeros)(store)
    settings = load_settings(store={"path": store, "read_copy": 0})  # Chroma's own answer
    with Assistant(settings, embedder=HashingEmbedder()) as reader:
        with pytest.raises(VectorIndexDamagedError, match=f"ingest --repair --store {store}"):
            reader.search("diffusion", k=5, filters={"year": 2025})


def test_a_rebuild_cut_short_leaves_readers_told_and_the_next_run_finishes_it(
    saved_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from assistant import Assistant, load_settings
    from assistant.store.local import LocalStore

    store = tmp_path / "store"
    shutil.copytree(saved_index, store)
    for pickle in (store / "chroma").glob("*/index_metadata.pickle"):
        pickle.write_bytes(b"")
    write, batches = LocalStore.write, []

    def killed_after_one_batch(self: LocalStore, batch: Any) -> None:
        if batches:
            raise KeyboardInterrupt
        batches.append(len(batch))
        write(self, batch)

    monkeypatch.setattr(LocalStore, "write", killed_after_one_batch)
    settings = load_settings(store={"path": store}, embedding={"provider": "hashing"})
    with pytest.raises(KeyboardInterrupt), Assistant(settings) as assistant:
        assistant.repair()
    assert batches == [8]
    monkeypatch.setattr(LocalStore, "write", write)
    # Readers still read the damaged index, not the half-built one: told, not misled.
    code, _, err = run("search", "diffusion", "--store", str(store))
    assert code == 1 and f"a vector index in {store} cannot be read" in one_line(err)
    assert "its rebuild was interrupted" in err
    code, out, err = run_process("ingest", "--repair", "--store", str(store))
    assert code == 0, err
    assert "whose vectors were gone embedded again" in " ".join(out.split())
    code, details, err = info(store, run_process)
    assert code == 0 and details["problems"] == [] and details["papers"] == 95, err


def _cut_repair(store: Path, after: int) -> None:
    """An ``ingest --repair`` of ``store`` stopped in its batch number ``after`` + 1, before it
    writes anything (cut once the catalog has been told: tests/test_store_journal.py). It
    runs in this process; what follows runs in processes of its own (Chroma keeps a path's
    index in memory for the life of a process, so this one would not read the damage)."""
    from assistant import Assistant, load_settings
    from assistant.store import local

    target = local.LocalStore.write
    calls: list[int] = []

    def stopped(*args: Any, **kwargs: Any) -> None:
        if len(calls) == after:
            raise KeyboardInterrupt
        calls.append(1)
        target(*args, **kwargs)

    settings = load_settings(store={"path": store}, embedding={"provider": "hashing"})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(local.LocalStore, "write", stopped)
        with pytest.raises(KeyboardInterrupt), Assistant(settings) as assistant:
            assistant.repair()


def test_a_rebuild_keeps_the_metadata_given_with_the_papers(saved_index: Path, tmp_path: Path):
    """The papers given again from a renamed file while their index is rebuilt: the catalog
    names the new file, as the vectors do. Before: the vectors had it, the catalog the old."""
    store = tmp_path / "store"
    shutil.copytree(saved_index, store)
    _empty_id_map(store)
    renamed = tmp_path / "renamed.txt"
    shutil.copy(saved_index.parent / "long.txt", renamed)
    code, out, err = run_process("ingest", str(renamed), "--store", str(store))
    assert code == 0, err
    with sqlite3.connect(store / "catalog.sqlite3") as db:
        files = {r[0] for r in db.execute("SELECT source_file FROM papers")}
    assert files == {"renamed.txt"}
    code, out, err = run_process(
        "search",
        "--json",
        "diffusion",
        "--filter",
        "source_file=renamed.txt",
        "--store",
        str(store),
    )
    assert code == 0 and json.loads(out)["hits"], err


def test_a_rebuild_whose_new_index_is_damaged_too_starts_again(saved_index: Path, tmp_path: Path):
    """Before: the next run took up the half-built collection unchecked, and when a kill had
    damaged it too, every ingest failed with the same message (1 killed repair in ~40)."""
    store = tmp_path / "store"
    shutil.copytree(saved_index, store)
    damaged = list((store / "chroma").glob("*/index_metadata.pickle"))
    _empty_id_map(store)
    # 9 batches of 8 papers: over 1,000 sentence vectors, so Chroma saved the new index once.
    _cut_repair(store, after=9)
    rebuilt = set((store / "chroma").glob("*/index_metadata.pickle")) - set(damaged)
    assert rebuilt
    for pickle in rebuilt:
        pickle.write_bytes(b"")
    code, out, err = run_process("ingest", "--repair", "--store", str(store))
    assert code == 0, err
    code, details, err = info(store, run_process)
    assert code == 0 and details["problems"] == [] and details["papers"] == 95, err
    assert len(list(store.glob("chroma.damaged-*"))) == 2  # both set aside, neither deleted
    code, out, _ = run_process("search", "--json", "diffusion", "--store", str(store))
    assert code == 0 and json.loads(out)["hits"]


@pytest.mark.parametrize(
    "said",
    [
        "Error executing plan: Error sending backfill request to compactor: Error constructing "
        "hnsw segment reader: Error creating hnsw segment reader: Error deserializing pickle file",
        "Error executing plan: Internal error: Error finding id",
        "Error executing plan: Internal error: Error getting embedding",
        "words no version of Chroma has used yet",
    ],
)
def test_what_chroma_says_of_an_index_it_cannot_read_is_told_with_the_remedy(
    said: str, tmp_path: Path
):
    """Whatever Chroma says of an embedded index, in any wording, is damage with the remedy:
    no message text is matched."""
    from assistant.errors import VectorIndexDamagedError
    from assistant.store.chroma.vectors import _Guarded

    class Failing:
        def query(self) -> None:
            raise RuntimeError(said)

    with pytest.raises(VectorIndexDamagedError, match="ingest --repair --store S"):
        _Guarded(Failing(), "S", tmp_path / "S" / "chroma").query()


def test_a_reader_kept_open_reads_through_rebuilds_in_another_process(
    saved_index: Path, tmp_path: Path
):
    """`chat`, eval workers and the Python API keep one store open. Before: after a second
    rebuild in another process, every search failed for good ("Collection [...] does not
    exist": the handle still named a collection the rebuild had dropped)."""
    from assistant import Assistant, load_settings

    store = tmp_path / "store"
    shutil.copytree(saved_index, store)
    settings = load_settings(store={"path": store}, embedding={"provider": "hashing"})
    with Assistant(settings) as reader:
        first = [h.paper_id for h in reader.search("diffusion models", k=3)]
        for _ in range(3):
            _empty_id_map(store)
            code, out, err = run_process("ingest", "--repair", "--store", str(store))
            assert code == 0 and _repaired(out, 95), err
            assert [h.paper_id for h in reader.search("diffusion models", k=3)] == first


# -- issue #31's table: the vector index is a cache of the catalog ------------------------------


@pytest.mark.parametrize("keep", [8192, 0.5])
@pytest.mark.parametrize("copy", [False, True], ids=["indexes", "copy"])
def test_a_cut_chroma_database_is_told_then_rebuilt_from_the_catalog(
    store: Path, sources: Path, healthy: Path, keep: float, copy: bool
):
    """Before: every command exited 1, `--repair` and `--rebuild` included, and the only way
    out was `rm -rf STORE/chroma` by hand. With the read copy, reads answer whole from it."""
    database = store / "chroma" / "chroma.sqlite3"
    size = int(keep) if keep > 1 else int(database.stat().st_size * keep)
    with database.open("r+b") as handle:
        handle.truncate(size)
    if copy:
        _answered_from_the_copy(store, healthy, run_process)
    else:
        (store / "vectors.npz").unlink()
    for command in () if copy else READS:
        code, _, err = run_process(*command, "--store", str(store))
        assert code == 1, command
        assert f"`assistant ingest --repair --store {store}`" in one_line(err)
    code, out, err = run_process("ingest", "--repair", "--store", str(store))
    assert code == 0, err
    assert _repaired(out, 20)
    (aside,) = store.glob("chroma.damaged-*")
    assert (aside / "chroma.sqlite3").stat().st_size == size  # moved as it was
    assert f"moved to {aside}" in " ".join(err.split())
    code, details, err = info(store, run_process)
    assert code == 0 and details["problems"] == [] and details["vectors"] == details["chunks"]
    code, out, _ = run_process("search", "--json", "learning", "--store", str(store))
    assert code == 0 and json.loads(out)["hits"]


def test_the_next_ingest_rebuilds_a_cut_chroma_database(store: Path, sources: Path):
    (store / "chroma" / "chroma.sqlite3").write_bytes(b"\0" * 8192)
    code, out, err = run_process("ingest", str(sources / "a.txt"), "--store", str(store))
    assert code == 0, err
    assert _repaired(out, 20) and len(list(store.glob("chroma.damaged-*")))
    assert info(store, run_process)[0] == 0


def _set_format(store: Path, value: str) -> None:
    with sqlite3.connect(store / "catalog.sqlite3") as db:
        db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('format', ?)", (value,))


def test_a_store_of_a_newer_format_is_refused_and_never_written(store: Path, sources: Path):
    _set_format(store, "99")

    def contents() -> tuple[list[str], dict[str, bytes]]:
        with sqlite3.connect(store / "catalog.sqlite3") as db:
            rows = list(db.iterdump())
        chroma = {str(p): p.read_bytes() for p in (store / "chroma").rglob("*") if p.is_file()}
        return rows, chroma

    before = contents()
    for command in (
        ["info"],
        ["search", "cache"],
        ["ingest", str(sources)],
        ["ingest", "--repair"],
    ):
        code, _, err = run(*command, "--store", str(store))
        assert code == 1, command
        assert "has format 99, written by a newer version of the assistant" in one_line(err)
    assert contents() == before


def test_a_store_of_an_older_format_is_upgraded_in_place(store: Path):
    from assistant.store.catalog import FORMAT

    with sqlite3.connect(store / "catalog.sqlite3") as db:
        db.execute("DELETE FROM meta WHERE key = 'format'")
    code, out, err = run("search", "--json", "learning", "--store", str(store))
    assert code == 0 and json.loads(out)["hits"], err
    with sqlite3.connect(store / "catalog.sqlite3") as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone() == (
            str(FORMAT),
        )


def _left_by_a_killed_writer(store: Path) -> None:
    """The mark a writer killed inside a call that changed an index leaves in the journal."""
    with sqlite3.connect(store / "catalog.sqlite3") as db:
        db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('vectors_writing', '1')")


def _mark(store: Path) -> str | None:
    with sqlite3.connect(store / "catalog.sqlite3") as db:
        row = db.execute("SELECT value FROM meta WHERE key = 'vectors_writing'").fetchone()
    return row[0] if row else None


def test_a_write_mark_over_a_whole_index_is_probed_and_cleared(store: Path):
    _left_by_a_killed_writer(store)
    code, out, err = run_process("search", "--json", "learning", "--store", str(store))
    assert code == 0 and json.loads(out)["hits"], err
    assert _mark(store) == ""  # the probe read it whole: nothing to rebuild
    assert not list(store.glob("chroma.damaged-*"))


def test_a_write_mark_over_a_torn_index_is_told_then_rebuilt(saved_index: Path, tmp_path: Path):
    """A kill inside a save: the mark is what says so, not Chroma's bytes. The probe runs in a
    child process, so an index whose reading crashes Chroma (a cut header) is an exit status;
    the reader is told, the next ingest moves the folder aside and rebuilds it."""
    store = tmp_path / "store"
    shutil.copytree(saved_index, store)
    _cut("header.bin", 0.5)(store)
    _left_by_a_killed_writer(store)
    for command in (["search", "diffusion"], ["ask", "what is new?"]):
        code, _, err = run_process(*command, "--store", str(store))
        assert code == 1, (command, err)
        line = one_line(err)
        assert "crashed the process (signal 11)" in line
        assert f"`assistant ingest --repair --store {store}`" in line
    code, out, err = run_process(
        "ingest", str(saved_index.parent / "long.txt"), "--store", str(store)
    )
    assert code == 0, err
    assert _repaired(out, 95) and _mark(store) == ""
    assert info(store, run_process)[0] == 0


def _zero_vectors_of(folder: Path, paper: str) -> int:
    """Zeroes the stored vector (only its floats: the label and links stay) of every element
    of ``paper`` in one of Chroma's saved index folders; the number zeroed."""
    import pickle
    import struct

    head = (folder / "header.bin").read_bytes()
    _, _, _, count, per, label_at, data_at = struct.unpack("<iQQQQQQ", head[:52])
    labels = pickle.loads((folder / "index_metadata.pickle").read_bytes())["id_to_label"]
    targets = {label for item, label in labels.items() if item.rsplit(":", 1)[0] == paper}
    raw = bytearray((folder / "data_level0.bin").read_bytes())
    zeroed = 0
    for element in range(count):
        start = element * per
        if struct.unpack("<Q", raw[start + label_at : start + label_at + 8])[0] in targets:
            raw[start + data_at : start + label_at] = bytes(label_at - data_at)
            zeroed += 1
    (folder / "data_level0.bin").write_bytes(bytes(raw))
    return zeroed


def test_the_zeroed_vectors_of_one_paper_are_found_by_the_check(saved_index: Path, tmp_path: Path):
    """A new user's trial: a few vectors zeroed in ``data_level0.bin`` (a lost 4 KB page of a
    crash) made the paper drop out of `search` and `ask` with exit 0, while `info --check`
    said the store was whole and `ingest --repair` found nothing to repair."""
    store = tmp_path / "store"
    shutil.copytree(saved_index, store)
    code, out, err = run_process("search", "--json", "diffusion", "--store", str(store))
    assert code == 0, err
    paper = json.loads(out)["hits"][0]["paper_id"]
    pickles = list((store / "chroma").glob("*/index_metadata.pickle"))
    assert sum(_zero_vectors_of(p.parent, paper) for p in pickles) > 0
    code, _, err = run_process("info", "--check", "--store", str(store))
    assert code == 1, "info --check said a store with zeroed vectors was whole"
    assert f"a vector index in {store} cannot be read" in one_line(err)
