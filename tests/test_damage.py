"""Stores damaged as users' stores get damaged (issue #11's table), each reproduced and handled:
warned about, healed, or reported in one line with the remedy. Fast: the hashing embedder.

Each case works on its own copy of one store, at a path this process has not opened before
(Chroma keeps one client per path for the life of a process, as a user's process would not).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import struct
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from assistant.cli import main
from assistant.corpus import Paper
from tests.conftest import rewrite_records, write_seed


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


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_a_healthy_store_passes_the_check(store: Path):
    code, details, err = info(store)
    assert code == 0 and details["problems"] == [] and err == ""
    assert details["papers"] == details["lexical"] == 20


def test_deleted_vectors_are_reported_then_re_embedded(store: Path, sources: Path):
    shutil.rmtree(store / "chroma")
    code, details, err = info(store)
    assert code == 1 and details["vectors"] == 0
    remedy = f"`assistant ingest --repair --store {store}` re-embeds them"  # this store's flags
    assert f"warning: 20 of 20 papers have lost vectors; {remedy}" in err
    # The remedy reads no input: the shipped corpus is not added to the store.
    code, out, err = run("ingest", "--repair", "--store", str(store))
    assert code == 0, err
    text = " ".join(out.split())
    assert "0 added" in text and "0 unchanged" in text and "20 repaired" in text
    code, details, err = info(store)
    assert code == 0 and details["papers"] == 20 and details["problems"] == []
    code, details, err = info(store)
    assert (code, details["problems"], details["vectors"]) == (0, [], details["chunks"])
    hit = run("search", "--json", "learning", "-k", "3", "--store", str(store))[1]
    assert all(h["score"] != 0 for h in json.loads(hit)["hits"])


def test_papers_not_given_again_are_repaired_from_the_catalog(store: Path, sources: Path):
    shutil.rmtree(store / "chroma")
    code, out, _ = run("ingest", str(sources / "b.txt"), "--store", str(store))
    assert code == 0 and "20 repaired" in " ".join(out.split())
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

    from assistant.locking import index_files

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


def _index_folders(store: Path) -> list[Path]:
    return [p for p in (store / "chroma").iterdir() if p.is_dir()]


def _empty_id_map(store: Path) -> None:
    """What test_kill met (1 run in ~5): a writer killed while Chroma saved an index left its id
    map empty (Chroma truncates the file, then writes it), and every read of it failed after."""
    for pickle in (store / "chroma").glob("*/index_metadata.pickle"):
        pickle.write_bytes(b"")


def _no_id_map(store: Path) -> None:
    """Before: Chroma read the index as holding none of the vectors it had saved, and answers
    came from the rest without a word (a reviewer's damage); `info --check` found nothing."""
    for pickle in (store / "chroma").glob("*/index_metadata.pickle"):
        pickle.unlink()


def _no_index_folder(store: Path) -> None:
    for pickle in (store / "chroma").glob("*/index_metadata.pickle"):
        shutil.rmtree(pickle.parent)


@pytest.mark.parametrize("damage", [_empty_id_map, _no_id_map, _no_index_folder])
@pytest.mark.parametrize("heal", [["ingest", "--repair"], ["ingest", "SOURCE"]])
def test_an_index_chroma_cannot_load_is_rebuilt_from_the_catalog(
    saved_index: Path, tmp_path: Path, heal: list[str], damage: Callable[[Path], None]
):
    store = tmp_path / "store"
    shutil.copytree(saved_index, store)
    damage(store)
    for command in (["search", "diffusion"], ["ask", "what is new?"], ["info", "--check"]):
        code, _, err = run(*command, "--store", str(store))
        line = one_line(err)
        assert code == 1, command
        # `info` lists it among the store's problems, with what the catalog holds.
        assert command[0] != "info" or line.startswith("warning: a vector index")
        assert f"a vector index in {store} cannot be read" in line
        assert f"`assistant ingest --repair --store {store}` rebuilds the index" in line
    # What can be read is counted; the index that cannot is not shown as empty (before: every
    # figure 0, the lexical index's too).
    details = info(store)[1]
    assert details["lexical"] == details["papers"] == 95
    assert details["sentence_vectors"] is None and details["vectors"] == details["chunks"]
    code, out, _ = run("info", "--store", str(store))
    assert code == 0 and "sentence_vectors  unreadable" in out

    source = str(saved_index.parent / "long.txt")
    code, out, err = run(*[source if a == "SOURCE" else a for a in heal], "--store", str(store))
    assert code == 0, err
    assert "95 repaired whose vectors were gone" in " ".join(out.split())
    code, details, err = info(store)
    assert code == 0 and details["problems"] == [] and details["papers"] == 95, err
    assert len(_index_folders(store)) == 2  # the damaged index's files are gone
    # The rebuilt index's collection, not the configured one.
    assert details["collection"].startswith("abstracts, sentences: abstracts-sentences")
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


def _header(place: int, change: Callable[[Any], Any], name: str) -> Callable[[Path], None]:
    """One header field changed (by its place in hnswlib's header: 2 max_elements, 3 the
    element count, 5 the label offset), the rest of the files as they were."""
    layout = struct.Struct("<iQQQQQQiIQQQdQ")

    def edit(store: Path) -> None:
        for pickle in (store / "chroma").glob("*/index_metadata.pickle"):
            target = pickle.parent / "header.bin"
            values = list(layout.unpack(target.read_bytes()))
            values[place] = change(values[place])
            target.write_bytes(layout.pack(*values))

    edit.__name__ = f"header_{name}"
    return edit


def _label(element: int, label: int) -> Callable[[Path], None]:
    def relabel(store: Path) -> None:
        from assistant.store import hnsw_files

        for pickle in (store / "chroma").glob("*/index_metadata.pickle"):
            header = hnsw_files.Header.parse((pickle.parent / "header.bin").read_bytes())
            with (pickle.parent / "data_level0.bin").open("r+b") as f:
                f.seek(element * header.per_element + header.label)
                f.write(label.to_bytes(8, "little"))

    relabel.__name__ = f"label_{label}_for_element_{element}"
    return relabel


def _one_vector_zeroed(store: Path) -> None:
    """The middle element's vector zeroed, its links kept: searched as it was, Chroma says
    nothing (cosine distance to a zero vector)."""
    from assistant.store import hnsw_files

    for pickle in (store / "chroma").glob("*/index_metadata.pickle"):
        header = hnsw_files.Header.parse((pickle.parent / "header.bin").read_bytes())
        with (pickle.parent / "data_level0.bin").open("r+b") as f:
            f.seek(header.count // 2 * header.per_element + header.vector)
            f.write(bytes(header.label - header.vector))


@pytest.mark.parametrize(
    "damage",
    [
        _cut("data_level0.bin", 0.5),
        _cut("header.bin", 0.5),
        _cut("link_lists.bin", 0.5),
        _overwrite("link_lists.bin", zeros),
        _overwrite("link_lists.bin", noise),
        _overwrite("data_level0.bin", noise),
        _overwrite("data_level0.bin", zeros, at=0.5),
        _one_vector_zeroed,
        # Before: every command crashed (SIGSEGV), --repair included; the last, `info`.
        _header(3, lambda count: 0, "no_elements"),
        _header(2, lambda room: 1, "room_for_one"),
        _header(5, lambda label: label + 8, "label_past_the_element"),
        # A second review: M 0 and mult -1 crashed every command, mult 100000 made every load
        # run for good; a label Chroma never gave failed some searches, and --repair found
        # nothing; lengths Chroma scales returned vectors by changed answers, nothing said.
        _header(11, lambda m: 0, "M_0"),
        _header(12, lambda mult: -1.0, "mult_negative"),
        _header(12, lambda mult: 100_000.0, "mult_huge"),
        _label(10, 2**40),
        _overwrite("length.bin", zeros),
        _overwrite("length.bin", noise),
    ],
)
def test_damaged_index_files_are_told_and_rebuilt(
    saved_index: Path, tmp_path: Path, damage: Callable[[Path], None]
):
    """Chroma saves an index's files one after another, in place; a reviewer cut each short,
    zeroed them and overwrote them with noise. Before: a cut vector file failed some searches
    with no remedy that worked (--repair found nothing), a cut header crashed every command
    once an ingest had loaded it, a cut link-list file went unnoticed until the next save wrote
    it without bound, and zeroed link lists or a vector file of noise crashed every command,
    `ingest --repair` included (SIGSEGV, nothing said); zeroed vectors were searched as they
    were, the answers wrong and nothing said."""
    store = tmp_path / "store"
    shutil.copytree(saved_index, store)
    damage(store)
    for command in (["search", "diffusion"], ["info", "--check"]):
        code, _, err = run_process(*command, "--store", str(store))
        assert code == 1, (command, err)
        assert f"a vector index in {store} cannot be read" in one_line(err)
    code, out, err = run_process("ingest", "--repair", "--store", str(store))
    assert code == 0, err
    assert "95 repaired whose vectors were gone" in " ".join(out.split())
    code, details, err = info(store, run_process)
    assert code == 0 and details["problems"] == [] and details["papers"] == 95, err
    code, out, _ = run_process("search", "--json", "diffusion", "--store", str(store))
    assert code == 0 and json.loads(out)["hits"]


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
    code, out, err = run("ingest", "--repair", "--store", str(store))
    assert code == 0, err
    assert "repaired whose vectors were gone" in out
    code, details, err = info(store)
    assert code == 0 and details["problems"] == [] and details["papers"] == 95, err
    assert len(_index_folders(store)) == 2


def _cut_repair(store: Path, after: int, inside: bool) -> None:
    """An ``ingest --repair`` of ``store`` stopped in its batch number ``after`` + 1: before it
    writes anything, or (``inside``) once the catalog has been told and no vector written. It
    runs in this process; what follows runs in processes of its own (Chroma keeps a path's
    index in memory for the life of a process, so this one would not read the damage)."""
    from assistant import Assistant, load_settings
    from assistant.store import local

    target = local.write_vectors if inside else local.LocalStore.write
    calls: list[int] = []

    def stopped(*args: Any, **kwargs: Any) -> None:
        if len(calls) == after:
            raise KeyboardInterrupt
        calls.append(1)
        target(*args, **kwargs)

    settings = load_settings(store={"path": store}, embedding={"provider": "hashing"})
    with pytest.MonkeyPatch.context() as mp:
        if inside:
            mp.setattr(local, "write_vectors", stopped)
        else:
            mp.setattr(local.LocalStore, "write", stopped)
        with pytest.raises(KeyboardInterrupt), Assistant(settings) as assistant:
            assistant.repair()


@pytest.mark.parametrize("older", [False, True])
def test_a_repair_cut_inside_a_batch_loses_no_paper(saved_index: Path, tmp_path: Path, older: bool):
    """Before: the rebuild marked each batch pending, and the next run, given no papers, took
    the cut batch's 8 papers back (a reviewer's kills: 285 papers -> 221). ``older``: a store
    an older version fingerprinted (file position and metadata included), whose papers are
    judged unchanged by their text all the same (before: 95 -> 87; a reviewer's kill, 31)."""
    from assistant.store.catalog import Catalog
    from tests.test_positions import _positional_fingerprint

    store = tmp_path / "store"
    shutil.copytree(saved_index, store)
    if older:
        catalog = Catalog(store / "catalog.sqlite3")
        papers = list(catalog.iter_ready())
        catalog.close()
        rewrite_records(store, [(p.paper_id, _positional_fingerprint(p), p.label) for p in papers])
    _empty_id_map(store)
    _cut_repair(store, after=3, inside=True)
    code, out, err = run_process("ingest", "--repair", "--store", str(store))
    assert code == 0, err
    code, details, err = info(store, run_process)
    assert code == 0 and details["problems"] == [] and details["papers"] == 95, err
    assert details["unfinished"] == 0


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
    _cut_repair(store, after=9, inside=False)
    rebuilt = set((store / "chroma").glob("*/index_metadata.pickle")) - set(damaged)
    assert rebuilt
    for pickle in rebuilt:
        pickle.write_bytes(b"")
    code, out, err = run_process("ingest", "--repair", "--store", str(store))
    assert code == 0, err
    code, details, err = info(store, run_process)
    assert code == 0 and details["problems"] == [] and details["papers"] == 95, err
    assert len(_index_folders(store)) == 2  # neither damaged index's files are left
    code, out, _ = run_process("search", "--json", "diffusion", "--store", str(store))
    assert code == 0 and json.loads(out)["hits"]


@pytest.mark.parametrize(
    "said",
    [
        "Error executing plan: Error sending backfill request to compactor: Error constructing "
        "hnsw segment reader: Error creating hnsw segment reader: Error deserializing pickle file",
        "Error executing plan: Internal error: Error finding id",
        "Error executing plan: Internal error: Error getting embedding",
    ],
)
def test_what_chroma_says_of_an_index_it_cannot_read_is_told_with_the_remedy(
    said: str, tmp_path: Path
):
    """The first, an empty id map (above); the others, a vector file cut short (a reviewer's
    damage: before, no remedy was named and --repair found nothing to do). A cut file is not a
    case above: where a search lands in the missing part, Chroma's reader can crash the
    process, which nothing here can catch."""
    from assistant.errors import VectorIndexDamagedError
    from assistant.store.chroma import _Guarded

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
            assert code == 0 and "95 repaired" in " ".join(out.split()), err
            assert [h.paper_id for h in reader.search("diffusion models", k=3)] == first


def test_a_read_overtaken_by_a_rebuild_is_made_again_on_the_new_collection(
    saved_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A rebuild in another process points readers at the new collection, then drops the old
    one; a read begun in between met "Collection [...] does not exist" (3 of a reviewer's ~700
    reads). Here the reader does not look for the switch first, so every read meets it."""
    from assistant import Assistant, load_settings
    from assistant.store.local import LocalStore

    store = tmp_path / "store"
    shutil.copytree(saved_index, store)
    monkeypatch.setattr(LocalStore, "_forget_stale", lambda self: None)
    settings = load_settings(store={"path": store}, embedding={"provider": "hashing"})
    with Assistant(settings) as reader:
        first = [h.paper_id for h in reader.search("diffusion models", k=3)]
        for _ in range(2):
            _empty_id_map(store)
            code, out, err = run_process("ingest", "--repair", "--store", str(store))
            assert code == 0, err
            assert [h.paper_id for h in reader.search("diffusion models", k=3)] == first


def test_index_files_older_than_the_database_are_told_and_rebuilt(
    saved_index: Path, tmp_path: Path, corpus_papers: list[Paper]
):
    """A reviewer put back an index folder from before the last save (as a restored backup or
    a copy of the folder does): Chroma searched it as it was, the papers saved since were never
    found, and `info --check` and `--repair` found nothing wrong."""
    from assistant.store import hnsw_files

    store = tmp_path / "store"
    shutil.copytree(saved_index, store)
    chroma = store / "chroma"
    (segment,) = hnsw_files.saved_segments(chroma, "abstracts-sentences")
    shutil.copytree(chroma / segment, tmp_path / "before")
    # Enough new sentences for Chroma to save the index again (every 1,000 vectors).
    rng = random.Random(7)
    more = []
    for n in range(2):
        for paper in corpus_papers:
            sentences = paper.abstract.split(". ")
            rng.shuffle(sentences)
            more.append(f"Version {n}. " + ". ".join(sentences))
    code, _, err = run_process(
        "ingest", str(write_seed(tmp_path / "more.txt", more)), "--store", str(store)
    )
    assert code == 0, err
    saved = hnsw_files.Header.parse((chroma / segment / "header.bin").read_bytes()).count
    before = hnsw_files.Header.parse((tmp_path / "before" / "header.bin").read_bytes()).count
    assert saved > before  # the index was saved again
    shutil.rmtree(chroma / segment)
    shutil.copytree(tmp_path / "before", chroma / segment)
    for command in (["search", "diffusion"], ["info", "--check"]):
        code, _, err = run_process(*command, "--store", str(store))
        assert code == 1, (command, err)
        line = one_line(err)
        assert f"a vector index in {store} cannot be read" in line
        assert "files older than the database" in line
    code, out, err = run_process("ingest", "--repair", "--store", str(store))
    assert code == 0, err
    code, details, err = info(store, run_process)
    assert code == 0 and details["problems"] == [] and details["papers"] == 95 + len(more), err


def test_a_large_index_is_sampled_by_readers_and_read_whole_before_a_write(
    saved_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Past READ_ALL_UP_TO elements a reader reads a sample of the level-0 elements (and the
    entry point); noise over the file is found by it, one element's damage between the
    samples only by the full check a writer makes before it loads the index."""
    from assistant.store import hnsw_files

    (segment,) = hnsw_files.saved_segments(saved_index / "chroma", "abstracts-sentences")
    folder = tmp_path / "index"
    shutil.copytree(saved_index / "chroma" / segment, folder)
    header = hnsw_files.Header.parse((folder / "header.bin").read_bytes())
    monkeypatch.setattr(hnsw_files, "READ_ALL_UP_TO", 100)
    monkeypatch.setattr(hnsw_files, "SAMPLE", 50)
    assert hnsw_files.damage(folder, unit=True) is None
    sampled = set(np.linspace(0, header.count - 1, 50).astype(int)) | {header.entry}
    between = next(e for e in range(header.count) if e not in sampled)
    with (folder / "data_level0.bin").open("r+b") as f:
        f.seek(between * header.per_element + header.level0)
        f.write((1).to_bytes(4, "little") + (header.count + 5).to_bytes(4, "little"))
    assert hnsw_files.damage(folder, unit=True) is None
    wrong = "data_level0.bin links to elements that do not exist"
    assert hnsw_files.damage(folder, unit=True, thorough=True) == wrong
    monkeypatch.setattr(hnsw_files, "READ_ALL_UP_TO", header.count)
    assert hnsw_files.damage(folder, unit=True) == wrong
    monkeypatch.setattr(hnsw_files, "READ_ALL_UP_TO", 100)
    data = (folder / "data_level0.bin").read_bytes()
    (folder / "data_level0.bin").write_bytes(noise(len(data)))
    assert hnsw_files.damage(folder, unit=True) is not None


def test_a_zero_vector_chroma_saved_is_not_damage(saved_index: Path, tmp_path: Path):
    """A reviewer's false alarm: the hashing embedder makes a zero vector of the title "ₚ",
    which a cosine index keeps as zero (its recorded length 0); the unit-length check called
    the healthy store damaged, and --repair could not clear it."""
    from assistant.store import hnsw_files

    first = tmp_path / "first.jsonl"
    record = {"title": "ₚ", "authors": ["A B"], "url": "https://x/z", "year": 2025}
    record["abstract"] = "We study subscript p notation in diffusion models and find it useful."
    first.write_text(json.dumps(record) + "\n", encoding="utf-8")
    store = tmp_path / "store"
    long = str(saved_index.parent / "long.txt")
    for source in (str(first), long):
        code, _, err = run_process("ingest", source, "--store", str(store))
        assert code == 0, err
    chroma = store / "chroma"
    (segment,) = hnsw_files.saved_segments(chroma, "abstracts-sentences")
    header = hnsw_files.Header.parse((chroma / segment / "header.bin").read_bytes())
    rows = np.fromfile(chroma / segment / "data_level0.bin", dtype=np.uint8)
    vectors = rows[: header.count * header.per_element].reshape(header.count, -1)
    lengths = np.linalg.norm(vectors[:, header.vector : header.label].copy().view("<f4"), axis=1)
    assert (lengths == 0).sum() == 1  # the title's, saved in the index
    code, details, err = info(store, run_process)
    assert code == 0 and details["problems"] == [], err
    code, out, err = run_process("search", "--json", "subscript p notation", "--store", str(store))
    assert code == 0 and json.loads(out)["hits"], err


def test_index_files_of_a_layout_this_code_does_not_know_are_not_judged(saved_index: Path):
    """Another chromadb (the pin allows 1.x) may save its header otherwise: not knowing it is
    not a reason to call a store damaged and rebuild it on every run."""
    from assistant.store import hnsw_files

    segments = hnsw_files.saved_segments(saved_index / "chroma", "abstracts-sentences")
    assert len(segments) == 1
    folder = saved_index / "chroma" / segments[0]
    assert hnsw_files.damage(folder, thorough=True) is None
    header = (folder / "header.bin").read_bytes()
    for other in (b"\x02\x00\x00\x00" + header[4:], header + b"\x00" * 8):
        copy = saved_index.parent / "other-layout"
        shutil.copytree(folder, copy, dirs_exist_ok=True)
        (copy / "header.bin").write_bytes(other)
        assert hnsw_files.damage(copy, thorough=True) is None
    (copy / "header.bin").write_bytes(header[:50])
    assert hnsw_files.damage(copy) == "header.bin is 50 bytes, not 100"
