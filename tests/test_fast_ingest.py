"""`ingest --fast`: MiniLM quantised to real int8, each text alone, chunk vectors pooled from
sentence vectors; a store of another MiniLM keeps its own.

The int8 file is made once per session (2-3 s) in a folder of the session's own, which
``ASSISTANT_CACHE_DIR`` points every test (and every subprocess) at.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from assistant import Assistant, load_settings
from assistant.embedding.embedders import MiniLMEmbedder
from assistant.embedding.quantize import int8_model
from assistant.errors import ConfigError, EmbedderMismatchError, StoreEmptyError
from assistant.ingest.chunking import Chunker, sentence_weights, sentences_of
from assistant.ingest.corpus import Paper
from assistant.settings import Settings
from tests.conftest import CORPUS, write_seed


@pytest.fixture(scope="session")
def int8_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cache")
    int8_model(MiniLMEmbedder.model_files()[0], folder)
    return folder


@pytest.fixture()
def fast_env(int8_folder: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ASSISTANT_CACHE_DIR", str(int8_folder))
    return int8_folder


def test_cut_to_pieces_is_the_tokenizers_truncation(embedder: MiniLMEmbedder):
    long = " ".join(f"token{i} of a long abstract about caches" for i in range(60))
    texts = [long, "A short sentence.", long[: len(long) // 3]]
    cut = embedder.embed(texts, pieces=128)
    assert np.allclose(cut, MiniLMEmbedder(max_tokens=128).embed(texts), atol=1e-5)
    assert not np.allclose(cut[0], embedder.embed([long])[0], atol=1e-3)  # it was cut


def test_int8_model_is_made_once_and_close_to_the_shipped_one(
    fast_env: Path, embedder: MiniLMEmbedder, corpus_papers: list[Paper]
):
    made = int8_model(MiniLMEmbedder.model_files()[0])
    assert made.parent == fast_env and made.stat().st_size < 40_000_000  # int8 weights, not fp32
    stamp = made.stat().st_mtime_ns
    assert int8_model(MiniLMEmbedder.model_files()[0]) == made
    assert made.stat().st_mtime_ns == stamp  # reused, not made again
    assert [p.name for p in fast_env.iterdir()] == [made.name]  # no temporary file left
    texts = [s for p in corpus_papers[:8] for s in sentences_of(p)]
    fast = MiniLMEmbedder(fast=True)
    assert fast.name != embedder.name and fast.pools_chunks
    agreement = np.einsum("ij,ij->i", fast.embed(texts), embedder.embed(texts))
    assert agreement.mean() > 0.98 and agreement.min() > 0.9


def test_each_chunk_pools_the_sentences_it_holds(corpus_papers: list[Paper]):
    paper = max(corpus_papers, key=lambda p: len(p.abstract))
    chunks = Chunker(chunk_tokens=60, overlap_tokens=15).split(paper)
    sentences = sentences_of(paper)
    assert len(chunks) >= 4
    weights = sentence_weights(paper, chunks, sentences)
    assert 0 in weights[0]  # the title opens the first chunk
    for chunk, held in zip(chunks, weights, strict=True):
        assert held
        for i, length in held.items():
            sentence = sentences[i]
            assert length == len(sentence)
            # each pooled sentence starts, ends or sits in the chunk, or (a chunk cut inside
            # one long sentence) the chunk sits in it
            middle = sentence[len(sentence) // 2 - 10 : len(sentence) // 2 + 10]
            ends = (sentence[:20], sentence[-20:], middle)
            assert any(e in chunk.text for e in ends) or chunk.text[:30] in sentence
    assert set().union(*weights) == set(range(len(sentences)))  # every sentence somewhere


def _ingest(
    store: Path, provider: str, papers: list[Paper], embedder: MiniLMEmbedder | None = None
) -> Assistant:
    settings = load_settings(
        store={"path": store}, embedding={"provider": provider}, chunking={"chunk_tokens": 80}
    )
    assistant = Assistant(settings, embedder=embedder)
    assistant.ingest_papers(papers)
    return assistant


def test_fast_store_pools_chunks_stores_no_texts_and_is_read_by_the_same_embedder(
    fast_env: Path, tmp_path: Path, corpus_papers: list[Paper]
):
    papers = corpus_papers[:12]
    store = tmp_path / "store"
    with _ingest(store, "minilm-fast", papers) as fast:
        assert fast.embedder.name == "minilm-l6-v2-q8@256"
        embedder = fast.embedder
        local = fast.store
        chunker = fast._chunker()
        split = {p.paper_id: chunker.split(p) for p in papers}
        chunk_ids = [c.chunk_id for chunks in split.values() for c in chunks]
        assert len(chunk_ids) > len(papers)  # some abstracts span several chunks
        vectors = local.chunks.get_vectors(chunk_ids)
        assert set(vectors) == set(chunk_ids)
        # each text is embedded alone: its vector is the same in any call
        heads = embedder.embed_heads([split[p.paper_id][0].text for p in papers])
        sentences = {p.paper_id: sentences_of(p) for p in papers}
        flat = embedder.embed([t for p in papers for t in sentences[p.paper_id]])
        own = np.split(flat, np.cumsum([len(sentences[p.paper_id]) for p in papers])[:-1])
        for paper, head, mine in zip(papers, heads, own, strict=True):
            chunks = split[paper.paper_id]
            assert float(vectors[chunks[0].chunk_id] @ head) > 0.9999
            held_by = sentence_weights(paper, chunks, sentences[paper.paper_id])
            for chunk, held in zip(chunks[1:], held_by[1:], strict=True):
                pooled = np.array(list(held.values()), np.float32) @ mine[list(held)]
                assert float(vectors[chunk.chunk_id] @ pooled) / np.linalg.norm(pooled) > 0.9999
        # Texts stay in the catalog: Chroma's copy (and its full-text index) is not written.
        got = local.chunks._collection.get(ids=chunk_ids[:3], include=["documents", "metadatas"])
        assert got["documents"] == [None] * 3
        assert set(got["metadatas"][0]) == {"paper_id", "source_file", "year", "venue"}
    # A later command, `--fast` given or not, reads it with the embedder it was built with.
    settings = load_settings(store={"path": store})
    with Assistant(settings) as later:
        hits = later.search(papers[3].abstract.split(". ")[0], k=3)
        assert later.embedder.name == "minilm-l6-v2-q8@256"
        assert hits[0].paper_id == papers[3].paper_id
        report = later.ingest_papers(corpus_papers[12:14])  # extended with it too
        assert report.added == 2 and report.ok


@pytest.mark.parametrize("fast", [False, True], ids=["fp32-default", "batched-fast"])
def test_a_store_of_an_older_minilm_keeps_it(
    fast_env: Path, tmp_path: Path, corpus_papers: list[Paper], fast: bool
):
    old = MiniLMEmbedder(fast=fast)  # the default, or `--fast` before each text ran alone
    store = tmp_path / "store"
    _ingest(store, "minilm", corpus_papers[:3], embedder=old).close()
    for provider in ("minilm", "minilm-fast"):  # default settings, or `ingest --fast`
        with _ingest(store, provider, corpus_papers[3:5]) as later:
            assert later.embedder.name == old.name
            hits = later.search(corpus_papers[1].abstract.split(". ")[0], k=2)
            assert hits[0].paper_id == corpus_papers[1].paper_id
    with _ingest(store, "minilm", [], embedder=old) as check:  # every vector by the old one
        entries = check.store.entries()
        assert len(entries) == 5 and {e.state for e in entries.values()} == {"ready"}
        assert check.store.recorded_embedder() == old.name


def test_fast_into_a_store_of_the_default_says_it_keeps_the_default(
    fast_env: Path, tmp_path: Path, corpus_papers: list[Paper]
):
    from click.testing import CliRunner

    from assistant.cli.main import main

    store = tmp_path / "store"
    _ingest(store, "minilm", corpus_papers[:2]).close()
    seed = write_seed(tmp_path / "more.txt", [p.abstract for p in corpus_papers[2:4]])
    result = CliRunner().invoke(main, ["ingest", "--fast", str(seed), "--store", str(store)])
    assert result.exit_code == 0, result.output
    warning = " ".join(result.stderr.split())
    assert "--fast builds a new store; this one was built with minilm" in warning
    assert "assistant ingest --rebuild --fast" in warning


def test_cli_fast_ingest_then_search(fast_env: Path, tmp_path: Path):
    store = tmp_path / "store"
    env = {"ASSISTANT_CACHE_DIR": str(fast_env), "PATH": str(Path(sys.executable).parent)}
    cli = [sys.executable, "-m", "assistant"]
    made = subprocess.run(
        [*cli, "ingest", "--fast", "--json", str(CORPUS), "--store", str(store)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["added"] == 95
    found = subprocess.run(
        [*cli, "search", "KV cache eviction for agentic LLM workflows", "--json"]
        + ["--store", str(store)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["hits"][0]["label"] == "KVFlow"


def test_fast_store_on_a_server_is_read_by_a_client_with_default_settings(
    fast_env: Path, chroma_server: str, tmp_path: Path, corpus_papers: list[Paper]
):
    collection = f"fast-{uuid.uuid4().hex[:12]}"

    def settings(folder: Path, provider: str = "minilm") -> Settings:
        store = {"path": folder, "chroma_url": chroma_server, "collection": collection}
        return load_settings(store=store, embedding={"provider": provider})

    with Assistant(settings(tmp_path / "a"), embedder=MiniLMEmbedder(fast=True)) as writer:
        assert writer.ingest_papers(corpus_papers[:6]).added == 6  # the old `--fast`
    # Another client, an empty folder, no setting: it reads the server's record of the embedder
    # before opening anything with one.
    with Assistant(settings(tmp_path / "b")) as reader:
        hits = reader.search(corpus_papers[3].abstract.split(". ")[0], k=3)
        assert reader.embedder.name == "minilm-l6-v2-fast@256"
        assert hits[0].paper_id == corpus_papers[3].paper_id
        assert reader.ingest_papers(corpus_papers[6:8]).added == 2
        assert len(reader.store.entries()) == 8


def _server_settings(url: str, collection: str, folder: Path, provider: str = "minilm") -> Settings:
    store = {"path": folder, "chroma_url": url, "collection": collection}
    return load_settings(store=store, embedding={"provider": provider})


def test_a_search_on_a_new_server_collection_does_not_keep_fast_out(
    fast_env: Path, chroma_server: str, tmp_path: Path, corpus_papers: list[Paper]
):
    # A reviewer's run: a `search` first created the collections stamped with the default
    # embedder, and every `ingest --fast` after was refused ("holds vectors" of none).
    collection = f"first-{uuid.uuid4().hex[:12]}"
    with Assistant(_server_settings(chroma_server, collection, tmp_path / "r")) as reader:
        with pytest.raises(StoreEmptyError):
            reader.search("KV cache eviction", k=3)
    fast = _server_settings(chroma_server, collection, tmp_path / "w")
    with Assistant(fast, embedder=MiniLMEmbedder(fast=True)) as writer:
        assert writer.ingest_papers(corpus_papers[:4]).added == 4
    with Assistant(_server_settings(chroma_server, collection, tmp_path / "r2")) as reader:
        hits = reader.search(corpus_papers[2].abstract.split(". ")[0], k=3)
        assert reader.embedder.name == "minilm-l6-v2-fast@256"
        assert hits[0].paper_id == corpus_papers[2].paper_id


def test_an_ingest_that_writes_no_paper_does_not_keep_fast_out(
    fast_env: Path, chroma_server: str, tmp_path: Path, corpus_papers: list[Paper]
):
    # A reviewer's run: an empty input file (or --repair on a new collection) left the lease and
    # meta records in the journal collection, and the next `ingest --fast` was refused there.
    collection = f"nothing-{uuid.uuid4().hex[:12]}"
    with Assistant(_server_settings(chroma_server, collection, tmp_path / "a")) as first:
        assert first.ingest_papers([]).added == 0
        first.store.repair()
    fast = _server_settings(chroma_server, collection, tmp_path / "b")
    with Assistant(fast, embedder=MiniLMEmbedder(fast=True)) as writer:
        assert writer.ingest_papers(corpus_papers[:2]).added == 2
        assert writer.embedder.name == "minilm-l6-v2-fast@256"


def test_of_two_writers_with_other_embedders_on_an_empty_collection_the_second_is_refused(
    fast_env: Path, chroma_server: str, tmp_path: Path, corpus_papers: list[Paper]
):
    collection = f"race-{uuid.uuid4().hex[:12]}"
    default = Assistant(_server_settings(chroma_server, collection, tmp_path / "a"))
    fast = Assistant(
        _server_settings(chroma_server, collection, tmp_path / "b"),
        embedder=MiniLMEmbedder(fast=True),
    )
    with default, fast:
        for client in (default, fast):  # both open the empty collections: neither is refused
            with pytest.raises(StoreEmptyError):
                client.search("KV cache eviction", k=3)
        assert default.ingest_papers(corpus_papers[:3]).added == 3
        with pytest.raises(
            EmbedderMismatchError, match=r"'minilm-l6-v2-int8@256' \(the default MiniLM\)"
        ):
            fast.ingest_papers(corpus_papers[3:5])
        assert len(default.store.entries()) == 3
        assert default.ingest_papers(corpus_papers[3:5]).added == 2  # the lease was let go


def test_a_writer_claims_an_empty_collection_and_not_one_that_holds_vectors(
    chroma_server: str, tmp_path: Path
):
    # Two handles opened on one empty collection before either writes (two ingests starting
    # together): the writer that holds the lease claims it; after its first vector, the other
    # is refused by its claim, though its open let it through.
    from assistant.store.chroma import ChromaVectors

    name = f"claim-{uuid.uuid4().hex[:12]}"

    def handle(embedder: str) -> ChromaVectors:
        return ChromaVectors.open(
            path=tmp_path, url=chroma_server, collection=name, embedder_name=embedder, dim=4
        )

    default, fast = handle("minilm-l6-v2-int8@256"), handle("minilm-l6-v2-fast@256")
    fast.claim()  # empty: stamped anew
    assert ChromaVectors.recorded_embedder(path=tmp_path, url=chroma_server, collection=name) == (
        "minilm-l6-v2-fast@256"
    )
    default.claim()  # still empty: the stamp goes back
    default.upsert(["p:0"], np.eye(1, 4, dtype=np.float32), None, [{"paper_id": "p"}])
    with pytest.raises(EmbedderMismatchError, match=r"\(the default MiniLM\)"):
        fast.claim()
    default.claim()  # its own: nothing to do


def test_an_unusable_cache_folder_fails_before_a_store_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, corpus_papers: list[Paper]
):
    not_a_folder = tmp_path / "cache"
    not_a_folder.write_text("a file where the cache folder should be")
    monkeypatch.setenv("ASSISTANT_CACHE_DIR", str(not_a_folder))
    store = tmp_path / "store"
    with pytest.raises(ConfigError, match=r"int8 MiniLM model in .*ASSISTANT_CACHE_DIR"):
        _ingest(store, "minilm-fast", corpus_papers[:2])
    assert not (store / "catalog.sqlite3").exists()  # nothing records an embedder it lacks
    with _ingest(store, "minilm", corpus_papers[:2]) as fp32:
        assert fp32.embedder.name == "minilm-l6-v2-int8@256"  # the shipped file needs none


def test_a_damaged_int8_file_is_made_again_quietly_and_stale_scratch_removed(
    fast_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture
):
    folder = tmp_path / "cache"
    folder.mkdir()
    good = int8_model(MiniLMEmbedder.model_files()[0], fast_env)
    damaged = folder / good.name
    damaged.write_bytes(good.read_bytes()[: good.stat().st_size // 3])  # a truncated copy
    old, recent = folder / ".quantise-killed", folder / ".quantise-running"
    for scratch in (old, recent):
        scratch.mkdir()
    os.utime(old, (time.time() - 3600, time.time() - 3600))  # a writer killed an hour ago
    monkeypatch.setenv("ASSISTANT_CACHE_DIR", str(folder))
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    vector = MiniLMEmbedder(fast=True).embed(["KV cache eviction"])
    assert vector.shape == (1, 384) and damaged.stat().st_size == good.stat().st_size
    assert not old.exists() and recent.exists()  # another writer's may still be in use
    assert (list(root.handlers), root.level) == (handlers, level)  # logging left as it was
    assert "making the int8 MiniLM model" in capfd.readouterr().err
    shutil.rmtree(recent)


def test_a_write_cut_short_while_quantising_is_one_error_and_old_scratch_goes_anyway(
    fast_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    import onnxruntime.quantization as quantization

    def cut_short(*args: object, **kwargs: object) -> None:
        # What onnx raises reading back a model a full disk truncated (a reviewer's tmpfs run).
        raise RuntimeError("Error parsing message with type 'onnx.ModelProto'")

    folder = tmp_path / "cache"
    folder.mkdir()
    monkeypatch.setattr(quantization, "quantize_dynamic", cut_short)
    with pytest.raises(
        ConfigError, match=r"cannot make the int8 MiniLM model .*200 MB free \(\d+ MB"
    ):
        int8_model(MiniLMEmbedder.model_files()[0], folder)
    assert not list(folder.iterdir())  # its scratch folder is gone
    # A writer killed an hour ago left scratch beside a file that exists: removed on next use.
    made = int8_model(MiniLMEmbedder.model_files()[0], fast_env)
    old = fast_env / ".quantise-killed"
    old.mkdir()
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    assert int8_model(MiniLMEmbedder.model_files()[0], fast_env) == made and not old.exists()
