from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from assistant import Assistant
from assistant.errors import InputFileError
from assistant.ingest.chunking import Chunker
from assistant.ingest.corpus import load_corpus, load_file, make_paper
from assistant.ingest.labels import derive_label
from assistant.text.normalise import content_key, normalize_text
from tests.conftest import CORPUS, write_seed


def test_shipped_corpus_is_95_papers_with_positions(corpus_papers):
    assert len(corpus_papers) == 95
    sources = {p.source for p in corpus_papers}
    assert "001_ef5bc1b701034fae.txt#3" in sources
    assert all(p.abstract and p.label and len(p.paper_id) == 16 for p in corpus_papers)
    # The header line is not an abstract.
    assert not any(p.abstract.startswith("NeurIPS 2025 Papers") for p in corpus_papers)


@pytest.mark.parametrize("name", ["KVFlow", "GaRA-SAM", "CleverBirds", "LeMiCa", "THG", "STARFlow"])
def test_labels_name_the_contribution(corpus_papers, name):
    assert name in {p.label for p in corpus_papers}


def test_label_falls_back_to_a_noun_phrase():
    label = derive_label(
        "we study the convergence of gradient descent on two layer networks "
        "with small initialisation and show it is slow"
    )
    assert label == "Convergence of gradient descent on two layer networks"


def test_normalisation_fixes_typography_and_keeps_math():
    raw = (
        "KVFlow avoids swap- ping and handles model- and data-parallel \u201cagents\u201d "
        "with $O(n^2)$ cost\u00a0and 3.5\u00d7 speed-up,\n  in 12.1% time."
    )
    assert normalize_text(raw) == (
        'KVFlow avoids swapping and handles model- and data-parallel "agents" '
        "with $O(n^2)$ cost and 3.5\u00d7 speed-up, in 12.1% time."
    )
    assert normalize_text(normalize_text(raw)) == normalize_text(raw)


def test_ids_are_stable_across_spacing_and_case():
    assert content_key("A  study of\nthings.") == content_key("a study of things.")
    assert content_key("A study of things.") != content_key("A study of other things.")


def test_jsonl_with_ids_titles_and_metadata(tmp_path: Path):
    path = tmp_path / "mine.jsonl"
    rows = [
        {
            "id": "arXiv:2501.00001",
            "title": "Fast Things",
            "authors": ["A. B", "C. D"],
            "year": 2025,
            "url": "https://x",
            "venue": "NeurIPS",
            "abstract": "We make things fast.",
        },
        {"title": "Slow Things", "authors": "E. F; G. H", "abstract": "We make things slow."},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    papers, problems = load_file(path)
    assert not problems
    assert papers[0].paper_id == "arXiv:2501.00001"
    assert papers[0].label == "Fast Things" and papers[0].year == 2025
    assert papers[0].source == "mine.jsonl#1" and papers[0].authors == ("A. B", "C. D")
    assert papers[1].paper_id == content_key("We make things slow.")
    assert papers[1].authors == ("E. F", "G. H")
    assert papers[1].text_for_index.startswith("Slow Things. ")


def test_csv_columns_are_case_insensitive(tmp_path: Path):
    path = tmp_path / "mine.csv"
    path.write_text(
        'Title,Abstract,Year\n"T1","An abstract, with a comma.",2024\n', encoding="utf-8"
    )
    (paper,), problems = load_file(path)
    assert paper.abstract == "An abstract, with a comma." and paper.year == 2024 and not problems
    assert paper.location == "mine.csv, row 1" and paper.reference == paper.location


SEMI = 'Title;Abstract;Year\n"T1";"An abstract, with a comma; and more.";2024\n'  # Excel, de/fr
TABS = "Title\tAbstract\tYear\nT1\tAn abstract, with a comma; and more.\t2024\n"


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("excel.csv", SEMI),
        ("excel.csv", "sep=;\n" + SEMI),
        ("excel.csv", '"sep=;"\n' + SEMI),
        ("excel.csv", TABS),
        ("excel.tsv", TABS),
    ],
    ids=["semicolons", "excel-sep-line", "quoted-sep-line", "tabs", "tsv"],
)
def test_csv_separated_by_semicolons_or_tabs_is_read(tmp_path: Path, name: str, content: str):
    """Excel saves "CSV" with semicolons where the comma is the decimal mark (most of
    Europe), and with a `sep=;` first line when asked to; such a file was refused for want
    of an 'abstract' column (its one column was "title;abstract;year"). A `.tsv` was refused
    as an unknown file type."""
    path = tmp_path / name
    path.write_text("\ufeff" + content, encoding="utf-8")
    (paper,), problems = load_file(path)
    assert not problems and paper.label == "T1" and paper.year == 2024
    assert paper.abstract == "An abstract, with a comma; and more."


def test_a_one_column_csv_keeps_the_commas_of_its_rows(tmp_path: Path):
    """Excel where ';' is the separator quotes no comma: a one-column file's rows were split
    at their first comma and the abstract cut there ('We study X')."""
    path = tmp_path / "one.csv"
    path.write_bytes("\ufeffabstract\r\nWe study X, Y and Z.\r\n".encode())
    (paper,), problems = load_file(path)
    assert paper.abstract == "We study X, Y and Z." and not problems


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("empty.txt", b"", "empty"),
        ("blank.jsonl", b"\n  \n", "empty"),
        ("binary.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00IHDR", "binary"),
        ("latin1.txt", "Header\n\nCaf\u00e9 abstract.".encode("latin-1"), "UTF-8"),
        ("cols.csv", b"title,summary\nA,B\n", "no 'abstract' column"),
        ("x.pdf", b"%PDF-1.4", "unknown file type"),
        ("header_only.txt", b"Just a header\n", "no abstracts found"),
    ],
)
def test_bad_files_give_actionable_errors(tmp_path: Path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(InputFileError) as err:
        load_file(path)
    assert message in str(err.value) and name in str(err.value)


def test_rows_skipped_for_one_reason_are_one_line_naming_the_fields_found(tmp_path: Path):
    """Rows whose abstract is under another name ('summary', as arXiv's API calls it): 5,000
    rows were 5,000 error lines that never said which fields the rows had."""
    path = tmp_path / "corpus.jsonl"
    rows = [{"id": str(i), "title": f"T{i}", "summary": "Words."} for i in range(40)]
    path.write_text(
        "\n".join(json.dumps(row) for row in [*rows, {"abstract": "Kept."}]), encoding="utf-8"
    )
    papers, problems = load_file(path)
    assert [p.abstract for p in papers] == ["Kept."]
    assert [str(p) for p in problems] == [
        f"{path}: 40 lines skipped (1, 2, 3, …): no 'abstract' field (fields found: id, title, "
        "summary; name the field that holds the abstract text 'abstract')"
    ]


def test_bad_rows_are_skipped_and_reported(tmp_path: Path):
    path = tmp_path / "rows.jsonl"
    path.write_text(
        '{"abstract": "Good one."}\nnot json\n{"title": "no abstract"}\n[1]\n'
        '{"abstract": "Bad year.", "year": "soon"}\n{"abstract": 42}\n{"abstract": " "}\n',
        encoding="utf-8",
    )
    papers, problems = load_file(path)
    assert [p.abstract for p in papers] == ["Good one."]
    text = " | ".join(str(p) for p in problems)
    assert "line 2 is not valid JSON" in text and "rows.jsonl#3: no 'abstract' field" in text
    assert "rows.jsonl#6: 'abstract' is not text: 42" in text
    assert "rows.jsonl#7: empty 'abstract'" in text
    assert "line 4 is not a JSON object" in text and "'year' is not a number" in text


def test_utf16_and_bom_are_read(tmp_path: Path):
    (tmp_path / "u16.txt").write_bytes("Header\n\nAn abstract.".encode("utf-16"))
    (tmp_path / "bom.txt").write_bytes("\ufeffHeader\n\nAnother abstract.".encode())
    result = load_corpus([tmp_path])
    assert sorted(p.abstract for p in result.papers) == ["An abstract.", "Another abstract."]


def test_load_corpus_dedupes_and_keeps_going(tmp_path: Path):
    write_seed(tmp_path / "a.txt", ["Same abstract.", "Other abstract."])
    write_seed(tmp_path / "b.txt", ["same   abstract."])
    (tmp_path / "c.csv").write_text("x\n1\n", encoding="utf-8")
    result = load_corpus([tmp_path, tmp_path / "missing.jsonl"])
    assert len(result.papers) == 2 and result.duplicates == 1
    assert {Path(p.path).name for p in result.problems} == {"c.csv", "missing.jsonl"}


def test_shipped_corpus_is_an_unchanged_copy():
    shared = CORPUS.parents[2] / "shared" / "seeds"
    if not shared.exists():
        pytest.skip("../shared/seeds not present")
    for seed in shared.glob("*.txt"):
        assert (CORPUS / seed.name).read_bytes() == seed.read_bytes()


def test_overlong_abstracts_are_cut_with_one_warning_each(tmp_path: Path):
    """Two 200,000-character abstracts without a space (issue #11): cut to the limit, each with a
    warning naming file and line, so chunking stays bounded (it made 2,858 chunks before)."""
    rows = [{"id": f"huge{i}", "abstract": (c * 200_000)} for i, c in enumerate("xy")]
    short = "A short abstract about sparse attention."
    rows.insert(1, {"abstract": short})
    path = tmp_path / "huge.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    loaded = load_corpus([path], max_chars=20_000)
    assert [len(p.abstract) for p in loaded.papers] == [20_000, len(short), 20_000]
    assert loaded.warnings == [
        f"{path}:{line}: abstract is 200,000 characters, over the limit of 20,000; only its "
        "first 20,000 are indexed (ASSISTANT_CORPUS__MAX_ABSTRACT_CHARS sets the limit)"
        for line in (1, 3)
    ]
    chunks = [c for p in loaded.papers for c in Chunker().split(p)]
    assert len(chunks) < 400


def test_the_size_limit_is_a_setting(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("ASSISTANT_CORPUS__MAX_ABSTRACT_CHARS", "300")
    monkeypatch.setenv("ASSISTANT_EMBEDDING__PROVIDER", "hashing")
    long = " ".join(["word"] * 200)  # 999 characters
    (tmp_path / "a.jsonl").write_text(json.dumps({"abstract": long}) + "\n")
    with Assistant(store=tmp_path / "store") as assistant:
        report = assistant.ingest([tmp_path / "a.jsonl"])
        (paper,) = assistant.store.catalog.iter_ready()
    assert report.ok and report.added == 1 and len(report.warnings) == 1
    assert len(paper.abstract) <= 300 and paper.abstract.endswith("word")


def test_a_seed_header_with_venue_and_year_gives_them_to_its_abstracts(tmp_path):
    """The shipped corpus's header is "NeurIPS 2025 Papers": before, every paper had year and
    venue null, so --filter year=2025 found nothing."""
    path = tmp_path / "icml.txt"
    path.write_text(
        "ICML 2024 accepted papers\n\nFirst abstract with enough words.\n\nSecond one.\n"
    )
    papers = load_corpus([path]).papers
    assert [(p.venue, p.year) for p in papers] == [("ICML", 2024)] * 2
    plain = tmp_path / "plain.txt"
    plain.write_text("Test papers\n\nAn abstract without a venue.\n")
    assert [(p.venue, p.year) for p in load_corpus([plain]).papers] == [(None, None)]
    shipped = load_corpus([CORPUS]).papers
    assert {(p.venue, p.year) for p in shipped} == {("NeurIPS", 2025)}


@pytest.mark.parametrize(
    ("saved", "named"),
    [
        ("Caf\u00e9 \u201cquoted\u201d \u2013 cells.".encode("cp1252"), "cp1252"),  # Excel, Word
        (b"Caf\xe9 \x81 cells.", "latin1"),  # 0x81 means nothing in cp1252
    ],
)
def test_a_file_not_in_utf8_is_told_with_the_encoding_it_was_likely_saved_in(
    tmp_path: Path, saved: bytes, named: str
):
    """Windows saves text as cp1252, whose curly quotes and dashes are control codes in
    latin1: the hint said latin1, whose conversion turned them into invisible characters."""
    path = tmp_path / "win.csv"
    path.write_bytes(b"title,abstract\nA," + saved + b"\n")
    with pytest.raises(InputFileError) as told:
        load_file(path)
    assert f"iconv -f {named} -t utf-8 win.csv > fixed.csv" in str(told.value)
    assert saved.decode(named).startswith("Caf\u00e9 ")  # what following the hint gives back


def test_the_iconv_hint_holds_for_the_whole_file_and_a_name_with_spaces(tmp_path: Path):
    """A byte cp1252 leaves undefined past the first 8 KB made iconv stop there, and the
    name 'savedrecs (1).csv' unquoted was a shell syntax error."""
    path = tmp_path / "savedrecs (1).csv"
    rows = b"".join(b"T%d,Abstract %d.\n" % (i, i) for i in range(1000))
    path.write_bytes(b"title,abstract\n" + rows + b"L,Control \x81 caf\xe9.\n")
    with pytest.raises(InputFileError) as told:
        load_file(path)
    assert "iconv -f latin1 -t utf-8 'savedrecs (1).csv' > fixed.csv" in str(told.value)


@pytest.mark.parametrize(
    ("tail", "kept"),
    [
        (" © 2020 Elsevier Ltd. All rights reserved.", False),  # Scopus
        (" Copyright © 2018 John Wiley & Sons, Ltd.", False),
        (" (C) 2003 Elsevier Science B.V. All rights reserved.", False),  # Web of Science
        ("© The Author(s) 2020. Published by Oxford University Press.", False),
        (" Crown Copyright © 2020 Published by Elsevier Ltd. All rights reserved.", False),
        (" This article is protected by copyright. All rights reserved.", False),  # PubMed
        (" Copyright law shapes what such systems may be trained on in 2020.", True),
        (" We compare (a) pruning, (b) distillation and (c) quantisation.", True),
        (" Copyright 2019 reform shifted liability and weakened authors' bargaining.", True),
        (" Copyright © symbols on figures were counted; authors rarely held rights.", True),
        (" (c) 2010 births were followed up by the authors for five years.", True),
        (" © 2020 Elsevier Ltd. All rights reserved. Night respiration rose too.", True),
    ],
)
def test_a_publishers_copyright_line_is_not_part_of_the_abstract(
    tmp_path: Path, tail: str, kept: bool
):
    """Exports end abstracts with the publisher's line; it was indexed, embedded and could
    be quoted as the paper's words. A sentence that merely mentions copyright stays."""
    body = "We measure how cells divide under stress."
    path = tmp_path / "scopus.jsonl"
    path.write_text(json.dumps({"abstract": body + tail}) + "\n", encoding="utf-8")
    (paper,), _ = load_file(path)
    assert paper.abstract == (body + tail if kept else body)


def test_an_abstract_that_is_only_a_copyright_line_is_skipped_and_said_so(tmp_path: Path):
    path = tmp_path / "scopus.jsonl"
    rows = [{"abstract": "© 2020 Elsevier Ltd. All rights reserved."}, {"abstract": "Cells."}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    papers, problems = load_file(path)
    assert [p.abstract for p in papers] == ["Cells."]
    assert "only the publisher's copyright line" in str(problems[0])


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://www.scopus.com/inward/record.uri?eid=2-s2.0-1", "https://doi.org/10.1/x"),
        ("https://www.webofscience.com/wos/woscc/full-record/WOS:1", "https://doi.org/10.1/x"),
        ("https://arxiv.org/abs/2501.00001", "https://arxiv.org/abs/2501.00001"),
    ],
)
def test_a_paper_is_shown_by_its_doi_rather_than_an_index_record_page(url: str, shown: str):
    """A Scopus export's 'Link' is Scopus's own record page, which needs a subscription; the
    DOI's link is the one a reader can open."""
    paper = make_paper({"abstract": "Cells.", "url": url, "doi": "10.1/x"}, "s.csv#1")
    assert paper.reference == shown


@pytest.mark.parametrize(
    ("listed", "authors"),
    [
        ("Smith, John", ("John Smith",)),  # one author, last name first: not "Smith" and "John"
        ("Smith, J. R.", ("J. R. Smith",)),
        ("van der Berg, Anna", ("Anna van der Berg",)),
        ("King, Martin Luther, Jr.", ("Martin Luther King Jr.",)),
        ("Smith, John and Doe, Jane", ("John Smith", "Jane Doe")),  # BibTeX's way
        (
            "Ada Lovelace, Alan Turing and Grace Hopper",
            ("Ada Lovelace", "Alan Turing", "Grace Hopper"),
        ),
        ("A. Smith, B. Jones", ("A. Smith", "B. Jones")),
        ("Hinton, LeCun, Bengio", ("Hinton", "LeCun", "Bengio")),
        ("Vaswani, Ashish; Shazeer, Noam", ("Ashish Vaswani", "Noam Shazeer")),
        ("Van Der Berg, Anna", ("Anna Van Der Berg",)),
        ("García Márquez, Gabriel", ("Gabriel García Márquez",)),
        ("Smith, John & Doe, Jane", ("John Smith", "Jane Doe")),
        ("Smith, J., Doe, J. R.", ("J. Smith", "J. R. Doe")),
        ("Smith, John, et al.", ("John Smith",)),
        ("Smith J, Doe J", ("Smith J", "Doe J")),  # PubMed's way, kept as written
    ],
)
def test_an_authors_column_is_read_as_people_write_it(tmp_path: Path, listed: str, authors):
    path = tmp_path / "papers.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([["title", "authors", "abstract"], ["T", listed, "We study it."]])
    papers, problems = load_file(path)
    assert not problems and papers[0].authors == authors
