"""Issue #33's table, row by row, through the real CLI: exports from reference managers go in,
the filters people ask for work, cited papers come out as BibTeX, and every input problem is
one line while the good files are still indexed (exit 1 when anything was rejected)."""

from __future__ import annotations

import codecs
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from assistant import Assistant, load_settings
from assistant.cli.chat import ChatSession, run_chat
from assistant.cli.main import main
from assistant.embedding.embedders import HashingEmbedder
from tests.conftest import ROOT
from tests.test_chat import reader

FORMATS = ROOT / "tests" / "data" / "formats"
HASHING = {"ASSISTANT_EMBEDDING__PROVIDER": "hashing"}
GOOD = "Test papers\n\nRiver ice breaks up earlier each spring as winters warm across the north.\n"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), env=HASHING, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def one_line(err: str) -> None:
    assert "Traceback" not in err
    for line in err.splitlines():
        assert line.startswith(("error:", "warning:", "Ingested", "Nothing")) or not line.strip()


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of the six exports in tests/data/formats (8 papers with abstracts)."""
    store = tmp_path_factory.mktemp("exports") / "store"
    six = ["zotero.bib", "zotero.ris", "openalex_page.json", "openalex_snapshot.jsonl"]
    six += ["semantic_scholar.json", "arxiv.atom"]  # the Zotero CSV and CSL JSON repeat .bib
    code, out, err = run("ingest", *(str(FORMATS / name) for name in six), "--store", str(store))
    assert code == 0, err
    assert "8 added" in out
    return store


def titles(store: Path, *filters: str) -> set[str]:
    args = [f"--filter={f}" for f in filters]
    code, out, err = run("search", "water soil", "-k", "20", "--json", "--store", str(store), *args)
    assert code == 0, err
    return {hit["title"].split()[0] for hit in json.loads(out)["hits"]}


# -- row 1: a Zotero .bib and an .ris export --------------------------------------------------
def test_zotero_bib_and_ris_exports_are_ingested(tmp_path: Path):
    store = tmp_path / "store"
    code, out, err = run(
        "ingest", str(FORMATS / "zotero.bib"), str(FORMATS / "zotero.ris"), "--store", str(store)
    )
    assert code == 0 and "3 added" in out
    assert "1 entry without an abstract skipped (zhou_survey_2022)" in err
    assert "1 record without an abstract skipped" in err
    code, out, _ = run("search", "soil moisture", "-k", "1", "--json", "--store", str(store))
    hit = json.loads(out)["hits"][0]
    assert (hit["paper_id"], hit["doi"]) == ("okafor_soil_2023", "10.1016/j.rse.2022.113406")
    assert hit["authors"] == ["Chidi Okafor", "Hans Müller", "Ana Gómez"]


# -- row 2: author, title, year ranges, DOI ---------------------------------------------------
def test_filters_people_ask_for(exports: Path):
    assert titles(exports, "author=Okafor") == {
        "Soil", "Glacier", "Drought", "Groundwater", "Frost"
    }  # fmt: skip
    assert titles(exports, "author=MULLER") == {"Soil"}  # case and accents aside
    assert titles(exports, "author=hans müller") == {"Soil"}
    assert titles(exports, "author=Dahl", "year>=2024") == {"Evapotranspiration"}
    assert titles(exports, "year=2021..2022") == {"Glacier", "Frost"}
    assert titles(exports, "year<=2020") == {"Streamflow"}
    assert titles(exports, "title=soil radar") == {"Soil"}
    assert titles(exports, "doi=https://doi.org/10.1038/S41586-021-03819-2") == {"Frost"}
    assert titles(exports, "author=Nobody") == set()


def test_filter_keys_are_the_same_in_help_error_readme_and_chat():
    keys = ["author=", "title=", "year>=2023", "year=2021..2023", "doi=", "venue=", "source_file="]
    _, help_text, _ = run("search", "--help")
    code, _, err = run("search", "x", "--filter", "colour=red", "--store", "/nonexistent")
    from assistant.cli.chat import HELP

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    flat_help = " ".join(help_text.split())
    assert code == 1
    for key in keys:
        assert key in flat_help and key in err and key in readme and key in HELP, key


@pytest.mark.parametrize("value", ["99999999999999999999999", "9223372036854775808", "20x4"])
def test_out_of_range_year_is_one_line_in_search_and_ask(exports: Path, value: str):
    for command in ("search", "ask"):
        code, out, err = run(command, "soil", "--filter", f"year={value}", "--store", str(exports))
        assert code == 1 and out == ""
        assert err.strip() == (
            f"error: filter year={value} is not a year from 1 to 9999; "
            "e.g. year=2024, year>=2023 or year=2021..2023"
        )


def test_chat_filter_mistakes_never_end_the_session(exports: Path, tmp_path: Path):
    settings = load_settings(store={"path": exports})
    with Assistant(settings, embedder=HashingEmbedder()) as assistant:
        out = io.StringIO()
        session = ChatSession(assistant, Console(file=out, width=200, highlight=False))
        run_chat(
            session,
            reader(
                [
                    "/filter year=99999999999999999999999",
                    "/filter year=9223372036854775808",
                    "/filter colour=red",
                    "/filter author=okafor",
                    "/filter year>=2023",
                    "/filter",
                    "who wrote the drought stress paper?",
                    f"/bib {tmp_path / 'cited.bib'}",
                    f"/bib {tmp_path / 'cited.bib'}",
                ]
            ),
        )
    text = out.getvalue()
    assert text.count("is not a year from 1 to 9999") == 2
    assert "unknown filter 'colour'; filter on author=NAME" in text
    assert "filters: author=okafor, year>=2023" in text
    assert "«Drought stress detection in maize from thermal drone imagery» was written by" in text
    assert "1 cited paper(s) written to" in text and "exists; /bib" in text
    assert "@article{haddad2024drought," in (tmp_path / "cited.bib").read_text(encoding="utf-8")
    assert text.rstrip().endswith("bye")


# -- row 4: cited papers out ------------------------------------------------------------------
def test_ask_bib_writes_the_cited_papers(exports: Path, tmp_path: Path):
    out_file = tmp_path / "refs.bib"
    question = "what is the DOI of the frost risk paper?"
    code, out, err = run("ask", question, "--bib", str(out_file), "--store", str(exports))
    assert code == 0, err
    assert "The DOI of «Frost risk mapping" in out and "10.1038/s41586-021-03819-2 [1]" in out
    first = out_file.read_text(encoding="utf-8")
    code, out, _ = run("ask", question, "--bib", str(out_file), "--json", "--store", str(exports))
    assert out_file.read_text(encoding="utf-8") == first  # same keys, run after run
    assert "@article{martin2021frost," in first and "doi = {10.1038/s41586-021-03819-2}" in first
    assert json.loads(out)["citations"][0]["doi"] == "10.1038/s41586-021-03819-2"


# -- row 5: unreadable files ------------------------------------------------------------------
def _without_read_rights() -> list[str] | None:
    """A command prefix under which mode 000 files cannot be read (root reads them anyway:
    setpriv drops its right to override file permissions), or None when none is available."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    caps = "-dac_override,-dac_read_search"
    return [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}"] if setpriv else None


def _cli(prefix: list[str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **HASHING}
    command = [*prefix, sys.executable, "-m", "assistant", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)


def test_unreadable_file_in_a_folder_or_given_is_skipped_and_said(tmp_path: Path):
    prefix = _without_read_rights()
    if prefix is None:
        pytest.skip("running as root without setpriv: mode 000 files are readable")
    folder = tmp_path / "papers"
    folder.mkdir()
    (folder / "good.txt").write_text(GOOD, encoding="utf-8")
    locked = folder / "locked.jsonl"
    locked.write_text('{"abstract": "Never read."}\n', encoding="utf-8")
    locked.chmod(0)
    for paths in ([folder], [folder / "good.txt", locked]):
        store = tmp_path / f"store{len(paths)}"
        done = _cli(prefix, "ingest", *map(str, paths), "--store", str(store))
        assert done.returncode == 1, done.stderr
        assert f"error: {locked}: cannot be read (permission denied); skipped" in done.stderr
        assert "Traceback" not in done.stderr and "1 added" in done.stdout


# -- row 6: named pipes and devices -----------------------------------------------------------
def test_named_pipe_and_device_are_skipped_not_waited_on(tmp_path: Path):
    folder = tmp_path / "papers"
    folder.mkdir()
    (folder / "good.txt").write_text(GOOD, encoding="utf-8")
    os.mkfifo(folder / "pipe.txt")
    done = _cli([], "ingest", str(folder), "/dev/null", "--store", str(tmp_path / "s"), timeout=60)
    assert done.returncode == 1
    assert f"{folder / 'pipe.txt'}: is a named pipe, not a file; skipped" in done.stderr
    assert "/dev/null: is a character device, not a file; skipped" in done.stderr
    assert "1 added" in done.stdout and "Traceback" not in done.stderr


# -- row 7: folders with nothing to read ------------------------------------------------------
def test_folders_with_no_known_file_type_are_said_and_exit_1(tmp_path: Path):
    empty, notes = tmp_path / "empty", tmp_path / "notes"
    empty.mkdir()
    notes.mkdir()
    (notes / "notes.md").write_text("# my notes\n", encoding="utf-8")
    store = tmp_path / "store"
    code, _, err = run("ingest", str(empty), str(notes), "--store", str(store))
    assert code == 1
    one_line(err)
    assert f"{empty}: no files of papers in this folder (it is empty); give .txt," in err
    assert f"{notes}: no files of papers in this folder (it holds notes.md)" in err
    assert not store.exists()  # an ingest that indexed nothing leaves no store behind


# -- row 8: NUL bytes and UTF-16/32 -----------------------------------------------------------
def test_nul_bytes_name_the_abstract_and_the_rest_is_indexed(tmp_path: Path):
    seed = tmp_path / "seed.txt"
    later = "Later papers\n\n" + "\n\n".join(
        f"Abstract number {i} on glaciers." for i in range(300)
    )
    seed.write_text("Head\n\nFirst abstract holds a \x00 byte.\n\nSecond is fine.\n", "utf-8")
    late = tmp_path / "late.txt"
    late.write_text(later + "\n\nThe last one has a \x00 in it.\n", encoding="utf-8")
    code, out, err = run("ingest", str(seed), str(late), "--store", str(tmp_path / "store"))
    assert code == 1 and "301 added" in out
    assert f"error: {seed}#1: abstract 1 holds a NUL byte" in err
    assert f"error: {late}#301: abstract 301 holds a NUL byte" in err
    one_line(err)


@pytest.mark.parametrize(
    "encoding,bom",
    [
        ("utf-16-le", b""),
        ("utf-16-be", b""),
        ("utf-16-le", codecs.BOM_UTF16_LE),
        ("utf-16-be", codecs.BOM_UTF16_BE),
        ("utf-32-le", b""),
        ("utf-32-le", codecs.BOM_UTF32_LE),
        ("utf-32-be", codecs.BOM_UTF32_BE),
    ],
)
def test_utf16_and_utf32_with_or_without_bom_are_read(tmp_path: Path, encoding: str, bom: bytes):
    path = tmp_path / "papers.jsonl"
    record = {"abstract": "Gletscher in Österreich schmelzen schneller.", "title": "Gletscher"}
    path.write_bytes(bom + (json.dumps(record, ensure_ascii=False) + "\n").encode(encoding))
    code, out, err = run("ingest", str(path), "--store", str(tmp_path / "store"))
    assert code == 0 and "1 added" in out, err
    code, out, _ = run("search", "Gletscher", "--json", "--store", str(tmp_path / "store"))
    assert json.loads(out)["hits"][0]["text"] == record["abstract"]


def test_broken_utf16_is_told_with_its_encoding(tmp_path: Path):
    path = tmp_path / "papers.txt"
    path.write_bytes(
        codecs.BOM_UTF16_LE + "Header\n\nAn abstract.\n".encode("utf-16-le") + b"\x00\xd8"
    )
    code, _, err = run("ingest", str(path), "--store", str(tmp_path / "store"))
    assert code == 1 and f"error: {path}: not valid UTF-16 (byte" in err
    assert "iconv -f utf-16 -t utf-8" in err


# -- metadata in answers, for papers from any format ------------------------------------------
def test_chat_model_reads_authors_year_venue_and_doi_in_each_header(exports: Path, server):
    server.enqueue("Spring frost risk is mapped at 250 m [1].")
    settings = load_settings(
        store={"path": exports},
        llm={"provider": "openai", "model": "gpt-4o-mini", "timeout": 5, "max_retries": 1},
        openai_base_url=server.base_url,
    )
    with Assistant(settings, embedder=HashingEmbedder()) as assistant:
        answer = assistant.ask("how is frost risk for vineyards mapped?", k=1)
    user = server.last_messages()[1]["content"]
    assert answer.citations[0].paper_id == "649def34f8be52c8b66281af98ae884c09aef38b"
    assert (
        'authors="Élodie Martin; Chidi Okafor" year="2021" venue="Nature" '
        'url="https://www.semanticscholar.org/paper/649def34f8be52c8b66281af98ae884c09aef38b" '
        'doi="10.1038/s41586-021-03819-2">'
    ) in user


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (
            "who wrote the evapotranspiration flux towers paper?",
            "was written by Tomás Ferreira and Ingrid Dahl [1].",
        ),
        (
            "where was the groundwater recharge rice paper published?",
            "appeared at Hydrology and Earth System Sciences in 2023 [1].",
        ),
        (
            "what is the DOI of the drought stress maize paper?",
            "The DOI of «Drought stress detection in maize from thermal drone imagery» is "
            "10.1016/j.agrformet.2024.109876 [1].",
        ),
        (
            "what is the DOI of the snow water equivalent paper?",
            "The abstracts I have do not record a DOI for «Snow water equivalent",
        ),
    ],
)
def test_offline_metadata_questions_on_exported_papers(exports: Path, question: str, expected):
    code, out, err = run("ask", question, "--store", str(exports))
    assert code == 0, err
    assert expected in " ".join(out.split())


# -- found by a new user's trial ---------------------------------------------------------------
def test_a_malformed_bibtex_key_is_told_once_in_the_parsers_words(tmp_path: Path):
    path = tmp_path / "mine.bib"
    path.write_text(
        "@article{good2021,\n  title = {A good paper},\n  author = {Ann Smith},\n"
        "  abstract = {We study good things and find they hold across 12 datasets.}\n}\n\n"
        '@article{m{\\"u}ller2021,\n  title = {Bad key},\n'
        "  abstract = {An abstract that is long enough to be indexed by the tool.}\n}\n"
    )
    code, out, err = run("ingest", str(path), "--store", str(tmp_path / "store"))
    assert code == 1 and "1 added" in out
    one_line(err)
    told = [line for line in err.splitlines() if "not valid BibTeX" in line]
    assert len(told) == 1 and "line 7" in told[0] and "Expected comma after entry key" in told[0]
    assert "Parsing of" not in err  # the parser's own log lines stay quiet


def test_eval_on_a_store_without_its_gold_papers_says_so(tmp_path: Path):
    seed = tmp_path / "papers.txt"
    seed.write_text(GOOD)
    store = str(tmp_path / "store")
    assert run("ingest", str(seed), "--store", store)[0] == 0
    code, out, err = run("eval", "--limit", "3", "--store", store, "--out", str(tmp_path / "run"))
    assert code == 1
    assert "gold papers is in the store" in err and "assistant ingest" in err
    assert not (tmp_path / "run").exists()  # no run folder of zeros left behind


def test_an_export_whose_entries_all_lack_an_abstract_says_so(tmp_path: Path):
    """Into a new store, nothing is indexed, and the line that says why was dropped (exit 0,
    "Nothing to ingest" only)."""
    export = tmp_path / "library.csv"
    export.write_text(
        '"Key","Item Type","Publication Year","Author","Title","Abstract Note"\n'
        '"AB12","journalArticle","2020","Okafor, Chidi","Soil moisture",""\n',
        encoding="utf-8",
    )
    code, out, err = run("ingest", str(export), "--store", str(tmp_path / "store"))
    assert "Nothing to ingest" in out
    assert "library.csv: 1 row without an abstract skipped (AB12)" in err
