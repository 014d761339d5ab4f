from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from assistant import Assistant, load_settings
from assistant.cli.main import main


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_search_json_contract(shipped_store: Path):
    code, out, _ = run(
        "search",
        "KV cache eviction for agentic LLM workflows",
        "-k",
        "5",
        "--json",
        "--store",
        str(shipped_store),
    )
    assert code == 0
    payload = json.loads(out)
    assert payload["query"] == "KV cache eviction for agentic LLM workflows"
    assert len(payload["hits"]) == 5
    first = payload["hits"][0]
    assert set(first) == {"rank", "paper_id", "label", "source", "score", "text"} | {
        "title",
        "authors",
        "year",
        "venue",
        "url",
        "doi",
    }
    assert first["rank"] == 1 and first["label"] == "KVFlow"
    assert payload["close"] is True
    assert first["source"] == "004_cebd1b31328fe8e6.txt#2"
    assert first["title"] is None and first["authors"] == [] and first["url"] is None
    assert first["text"].startswith("Large language model (LLM) based agentic workflows")


def test_search_human_output(shipped_store: Path):
    code, out, _ = run(
        "search", "segment anything robustness", "-k", "2", "--store", str(shipped_store)
    )
    assert code == 0 and "[1] GaRA-SAM" in out and "001_ef5bc1b701034fae.txt, abstract 2" in out


@pytest.mark.parametrize("filters", [(), ("--filter", "year=2025")])
def test_a_search_far_from_every_paper_says_its_papers_are_only_the_nearest(
    shipped_store: Path, filters: tuple[str, ...]
):
    """The papers are listed (a search lists what is nearest), with a line saying none is
    close to the query, as ask would refuse; a search close to a paper has no such line."""
    args = ("-k", "2", "--store", str(shipped_store), *filters)
    code, out, _ = run("search", "protein folding in yeast", *args)
    assert code == 0 and "[2] " in out
    where = "the filter keeps" if filters else "in the store"
    assert f"None of these is close to the query: they are only the nearest papers {where}." in (
        " ".join(out.split())
    )
    code, out, _ = run("search", "protein folding in yeast", "--json", *args)
    assert json.loads(out)["close"] is False
    code, out, _ = run("search", "segment anything robustness", *args)
    assert "[1] GaRA-SAM" in out and "None of these" not in out


def test_info_json(shipped_store: Path):
    code, out, _ = run("info", "--json", "--store", str(shipped_store))
    info = json.loads(out)
    assert code == 0
    assert info["papers"] == 95 and info["chunks"] == info["vectors"] > 95
    assert info["embedder"] == "minilm-l6-v2-int8@256"


def test_ingest_reports_bad_files_and_exits_nonzero(tmp_path: Path, small_dir: Path):
    (tmp_path / "latin.txt").write_bytes("Header\n\nCaf\xe9".encode("latin-1"))
    store = tmp_path / "store"
    code, out, err = run(
        "ingest", str(small_dir), str(tmp_path / "latin.txt"), "--store", str(store), "--json"
    )
    assert code == 1
    report = json.loads(out)
    assert report["added"] == 5 and len(report["problems"]) == 1
    assert "latin.txt: not valid UTF-8" in err and "iconv" in err
    assert len(err.strip().splitlines()) == 1  # one line per problem, no traceback
    code, out, _ = run("ingest", str(small_dir), "--store", str(store))
    assert code == 0 and "5 unchanged" in out


def test_user_errors_are_one_line(tmp_path: Path):
    code, _, err = run("search", "  ", "--store", str(tmp_path / "s"))
    assert code == 1 and err.startswith("error: the question is empty")
    code, _, err = run("search", "x", "--filter", "year", "--store", str(tmp_path / "s"))
    assert code == 1 and "KEY=VALUE" in err


def test_bad_setting_names_the_variable(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("ASSISTANT_RETRIEVAL__K", "0")
    code, _, err = run("info", "--store", str(tmp_path / "s"))
    assert code == 1 and "ASSISTANT_RETRIEVAL__K" in err


@pytest.mark.parametrize(
    "command",
    [
        ["ask", "what is KVFlow?"],
        ["search", "KV cache"],
        ["chat"],
        ["info"],
        ["eval", "--limit", "1"],
    ],
)
def test_read_commands_never_create_a_store(tmp_path: Path, monkeypatch, command: list[str]):
    monkeypatch.chdir(tmp_path)
    mistyped = tmp_path / "vectorstor"
    code, out, err = run(*command, "--store", str(mistyped))
    assert code == 1
    assert err.strip() == (
        f"error: no store in {mistyped} (no catalog.sqlite3 there); "
        f"create it with `assistant ingest --store {mistyped}`"
    )
    assert list(tmp_path.iterdir()) == []  # no store, no run folder, nothing


def test_the_default_store_is_in_the_user_data_dir(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    code, _, err = run("info")
    assert code == 1
    assert f"no store in {tmp_path / 'data' / 'abstracts-assistant' / 'vectorstore'}" in err
    assert "create it with `assistant ingest`" in err


def test_escape_sequences_in_abstracts_never_reach_the_terminal(tmp_path: Path, corpus_papers):
    hostile = corpus_papers[3].abstract.replace(
        ". ", ". \x1b[2J\x1b]0;pwned\x07\x9b31m Clear screen. ", 1
    )
    (tmp_path / "evil.jsonl").write_text(
        json.dumps({"title": "Evil \x1b[5mblink", "abstract": hostile}) + "\n", encoding="utf-8"
    )
    store = str(tmp_path / "store")
    assert run("ingest", str(tmp_path / "evil.jsonl"), "--store", store)[0] == 0
    query = " ".join(corpus_papers[3].abstract.split()[:12])
    for command in (["search", query], ["ask", query], ["search", "--json", query]):
        code, out, err = run(*command, "--store", store)
        assert code == 0
        assert not any(c in out + err for c in "\x1b\x9b\x07"), command
    assert "Evil blink" in run("search", "--json", query, "--store", store)[1]


def test_an_ingest_that_loads_nothing_creates_no_store(tmp_path: Path, monkeypatch):
    """Before: an empty file left an empty store behind, which later looked valid and answered
    every question with a refusal."""
    monkeypatch.setenv("ASSISTANT_EMBEDDING__PROVIDER", "hashing")
    (tmp_path / "empty.jsonl").write_text("", encoding="utf-8")
    store = tmp_path / "store"
    code, out, err = run("ingest", str(tmp_path / "empty.jsonl"), "--store", str(store))
    assert code == 1 and "empty.jsonl: file is empty" in err
    assert out.startswith("Nothing to ingest: no store was created") and not store.exists()
    code, _, err = run("ask", "what is KVFlow?", "--store", str(store))
    assert code == 1 and f"create it with `assistant ingest --store {store}`" in err


def test_read_commands_on_a_store_without_papers_say_how_to_fill_it(
    tmp_path: Path, monkeypatch, small_dir: Path
):
    monkeypatch.setenv("ASSISTANT_EMBEDDING__PROVIDER", "hashing")
    store = tmp_path / "store"
    assert run("ingest", str(small_dir), "--store", str(store))[0] == 0
    with Assistant(load_settings(store={"path": store})) as assistant:
        assert assistant.ingest_papers([], prune=True).removed == 5
    for command in (["ask", "what is KVFlow?"], ["search", "KV cache"], ["chat"]):
        code, _, err = run(*command, "--store", str(store))
        assert code == 1, command
        assert err.strip() == (
            f"error: the store in {store} holds no papers yet; add abstracts with "
            f"`assistant ingest FILE_OR_FOLDER --store {store}`"
        )


def test_prune_never_runs_on_input_that_failed_to_load(
    tmp_path: Path, monkeypatch, small_dir: Path
):
    """A mistyped path with --prune would otherwise remove every paper of the store."""
    monkeypatch.setenv("ASSISTANT_EMBEDDING__PROVIDER", "hashing")
    store = str(tmp_path / "store")
    assert run("ingest", str(small_dir), "--store", store)[0] == 0
    code, out, err = run(
        "ingest", str(tmp_path / "mistyped"), "--prune", "--store", store, "--json"
    )
    assert code == 1 and json.loads(out)["removed"] == 0 and json.loads(out)["prune_skipped"]
    assert "--prune skipped" in err
    assert json.loads(run("info", "--json", "--store", store)[1])["papers"] == 5


def test_prune_never_runs_when_a_file_gives_no_paper(tmp_path: Path, monkeypatch, small_dir):
    """An export without abstracts loads (each entry skipped with a warning) but gives no
    paper: with --prune it emptied the store (a user's trial: 15 papers removed)."""
    monkeypatch.setenv("ASSISTANT_EMBEDDING__PROVIDER", "hashing")
    store = str(tmp_path / "store")
    assert run("ingest", str(small_dir), "--store", store)[0] == 0
    export = tmp_path / "noabs.bib"
    export.write_text(
        "@article{a2020, title={Only a Title}, year={2020}}\n"
        "@article{b2021, title={Another Title}, author={Doe, Jane}}\n"
    )
    code, out, err = run("ingest", str(export), "--prune", "--store", store, "--json")
    assert code == 1 and json.loads(out)["removed"] == 0 and json.loads(out)["prune_skipped"]
    assert "noabs.bib: no paper could be read from it" in err and "--prune skipped" in err
    assert json.loads(run("info", "--json", "--store", store)[1])["papers"] == 5


def test_another_files_paper_with_a_stored_id_is_skipped_and_told(tmp_path: Path, monkeypatch):
    """Two libraries' exports gave different papers one key: the second replaced the first
    without a word ("0 added, 1 updated"). It is skipped and told; an edit of the same paper
    (its title kept) from another file still updates it."""
    monkeypatch.setenv("ASSISTANT_EMBEDDING__PROVIDER", "hashing")
    store = str(tmp_path / "store")
    first, second, moved = tmp_path / "mylib.bib", tmp_path / "other.ris", tmp_path / "moved.bib"
    glacier = "title={Glacier Thinning in the Alps}, abstract={Glaciers thinned by 1.1 m a year.}"
    first.write_text(f"@article{{smith2019, {glacier}}}\n")
    second.write_text(
        "TY  - JOUR\nID  - smith2019\nTI  - Ocean Warming and Coral Bleaching\n"
        "AB  - Reefs bleached in warm years.\nER  - \n"
    )
    assert run("ingest", str(first), "--store", store)[0] == 0
    code, out, err = run("ingest", str(second), "--store", store, "--json")
    report = json.loads(out)
    assert code == 0 and report["updated"] == 0 and report["added"] == 0
    said = " ".join(err.split())
    assert "skipped smith2019 from other.ris ('Ocean Warming and Coral Bleaching')" in said
    assert "another paper with that id, from mylib.bib ('Glacier Thinning in the Alps')" in said
    code, out, _ = run("search", "glacier thinning", "--json", "--store", store)
    assert json.loads(out)["hits"][0]["title"] == "Glacier Thinning in the Alps"
    moved.write_text(f"@article{{smith2019, {glacier.replace('1.1 m', '1.2 m')}}}\n")
    code, out, err = run("ingest", str(moved), "--store", store, "--json")
    assert code == 0 and json.loads(out)["updated"] == 1 and "skipped" not in err


def test_a_store_path_that_cannot_be_a_folder_is_one_line(tmp_path: Path, monkeypatch):
    """Before: FileExistsError / FileNotFoundError tracebacks from the writer lock."""
    monkeypatch.setenv("ASSISTANT_EMBEDDING__PROVIDER", "hashing")
    data = tmp_path / "mine.jsonl"
    data.write_text(json.dumps({"abstract": "Soil moisture from radar, four words."}) + "\n")
    code, _, err = run("ingest", str(data), "--store", str(data))
    assert (
        code == 1
        and err.strip() == f"error: {data} is a file, not a store folder; give --store a folder"
    )
    code, _, err = run("info", "--store", str(data))
    assert code == 1 and "is a file, not a store folder" in err and "create it" not in err
    code, _, err = run("ingest", str(data), "--store", "/proc/no-such-store")
    assert code == 1 and err.startswith("error: cannot create the store folder /proc/no-such-store")


def test_ask_with_a_filter_that_matches_nothing_says_so(shipped_store: Path):
    code, out, err = run("ask", "Which papers study KV-cache eviction?", "--filter", "year=1999",
                         "--store", str(shipped_store))  # fmt: skip
    assert code == 0 and "No paper matches year=1999." in out
    assert "try `assistant ingest`" not in out + err and "close enough" not in out + err


@pytest.mark.parametrize("command", [["search", "attention"], ["ask", "what is attention?"]])
def test_a_filter_written_as_an_option_is_told_how_to_write_it(tmp_path: Path, command):
    """A new user typed `search attention --author Smith` and was asked "Did you mean
    '--store'?"."""
    result = CliRunner().invoke(main, [*command, "--author", "Smith", "--store", str(tmp_path)])
    assert result.exit_code == 2 and "--store'?" not in result.output
    assert "No such option: --author. A filter is given as --filter author=VALUE" in result.output
    other = CliRunner().invoke(main, [*command, "--colour", "--store", str(tmp_path)])
    assert other.exit_code == 2 and "No such option" in other.output  # click's own, as before
