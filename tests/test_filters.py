"""The filter keys: parsed into one-line errors, and matched the same way by the catalog's SQL
(``Catalog.ids_matching``) and in memory (``Filter.accepts``)."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from assistant.cli.main import parse_filters
from assistant.errors import AssistantError
from assistant.ingest.corpus import Paper
from assistant.retrieval.hybrid import check_filters
from assistant.store.base import Filter
from assistant.store.catalog import Catalog
from assistant.store.filtered import Facets
from assistant.store.filters import (
    add_filter,
    filter_fields,
    fold,
    names_match,
    shown,
    split_filter,
)

PAPERS = [
    Paper("a", "x.bib#1", "A", "Abstract a.", "Soil moisture from radar", ("Hans Müller",), 2021,
          "RSE", None, "10.1016/J.RSE.1"),
    Paper("b", "x.bib#2", "B", "Abstract b.", "Radar glaciers", ("Søren Okafor", "Li Wei"), 2023),
    Paper("d", "y.ris#2", "D", "Abstract d.", None, ("O. Nakamura", "Siobhán O'Neill"), 2020),
    Paper("c", "y.ris#1", "C", "Abstract c.", None, ("J. R. Smith",), None, "Nature"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ("author=Okafor", {"author": "Okafor"}),
        ("year>=2023", {"year_min": 2023}),
        ("year<=2022", {"year_max": 2022}),
        ("year>2023", {"year_min": 2024}),  # as people type it
        ("year < 2020", {"year_max": 2019}),
        ("year=2021..2023", {"year_min": 2021, "year_max": 2023}),
        ("year=2021..", {"year_min": 2021}),
        ("year = 2024", {"year": 2024}),
        ("doi=https://doi.org/10.1/X", {"doi": "https://doi.org/10.1/X"}),
    ],
)
def test_filters_parse(item: str, expected: dict[str, object]):
    key, value = split_filter(item)
    assert filter_fields({key: value}) == expected
    assert shown({key: value}).replace(" ", "") == item.replace(" ", "")


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("year=99999999999999999999999", "is not a year from 1 to 9999"),
        ("year=9223372036854775808", "is not a year from 1 to 9999"),
        ("year>=-5", "is not a year from 1 to 9999"),
        ("year=2023..2021", "is an empty range"),
        ("colour=red", "unknown filter 'colour'; filter on author=NAME, title=WORDS"),
        ("author=--", "has no words to look for"),
        ("year>twenty", "is not a year from 1 to 9999"),
    ],
)
def test_bad_filters_are_one_line(item: str, message: str):
    with pytest.raises(ValueError, match=message) as err:
        check_filters(dict([split_filter(item)]))
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="is not KEY=VALUE"):
        split_filter("author")
    with pytest.raises(ValueError, match="only year is compared with >=; use author=VALUE"):
        split_filter("author>=Okafor")
    with pytest.raises(ValueError, match="unknown filter 'yaer'; filter on author=NAME"):
        split_filter("yaer>2020")  # a mistyped key, not a comparison of another key


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        (["year>=2023", "year<2025"], {"year_min": 2023, "year_max": 2024}),  # a range
        (["year<2025", "year>2022"], {"year_min": 2023, "year_max": 2024}),
        (["year>=2023", "year>=2024"], {"year_min": 2024}),  # the same side: the last
        (["year=2021..2023", "year<=2022"], {"year_min": 2021, "year_max": 2022}),
        (["year>=2023", "year=2020"], {"year": 2020}),
        (["year=>2023"], {"year_min": 2023}),  # "=>" as people type ">="
        (["author=Okafor", "author=Wei"], {"author": "Wei"}),
    ],
)
def test_filters_given_one_after_another(items: list[str], expected: dict[str, object]):
    """chat's /filter typed again (or --filter repeated, below): two bounds of a year make a
    range (the second replaced the first, and a 2021 paper came back under year>=2023 and
    year<2025); otherwise the new value replaces the old, as chat then shows."""
    filters: dict[str, str] = {}
    for item in items:
        filters = add_filter(filters, *split_filter(item))
    assert filter_fields(filters) == expected


def test_a_key_given_twice_on_the_command_line_is_refused_not_half_used():
    """--filter author=J. Smith --filter author=Gomez searched Gomez's papers only, without a
    word (a user meant the papers of both)."""
    with pytest.raises(AssistantError, match=r"filter author is given twice \(author=J\. Smith"):
        parse_filters(("author=J. Smith", "author=Gomez"))
    with pytest.raises(AssistantError, match=r"given twice \(year>=2023, year>=2024\)"):
        parse_filters(("year>=2023", "year>=2024"))
    assert parse_filters(("year>=2023", "year<2025")) == {"year": "2023..2024"}
    assert add_filter({"year": ">=2019"}, "year", "<2020") == {"year": "2019"}  # not 2019..2019
    with pytest.raises(ValueError, match=r"a range of years is written year=2023\.\.2024"):
        check_filters({"year": "2023-2024"})


def test_only_a_year_is_shown_compared():
    assert shown({"author": ">Smith", "year": ">2023"}) == "author=>Smith, year>2023"


def test_a_source_file_given_as_a_path_is_its_name_and_filters_not_a_mapping_are_told():
    assert filter_fields({"source_file": "/tmp/lib/extra.ris"}) == {"source_file": "extra.ris"}
    assert filter_fields({"source_file": "C:\\lib\\extra.ris"}) == {"source_file": "extra.ris"}
    assert filter_fields({"source_file": "extra.ris"}) == {"source_file": "extra.ris"}
    for wrong in ("year=2024", ["year=2024"]):
        with pytest.raises(ValueError, match=r"filters are a mapping of key to value, e\.g\."):
            filter_fields(wrong)  # type: ignore[arg-type]


def test_fold_ignores_case_and_accents():
    assert fold("Müller Søreide ÉCOLE Łódź") == "muller soreide ecole lodz"


def _catalog(path: Path) -> Catalog:
    catalog = Catalog(path)
    catalog.mark_pending([(p, []) for p in PAPERS])
    catalog.set_state([p.paper_id for p in PAPERS], "ready")
    return catalog


@pytest.mark.parametrize(
    ("fields", "ids"),
    [
        ({"author": "muller"}, {"a"}),
        ({"author": "SOREN okafor"}, {"b"}),
        ({"author": "okafor wei"}, set()),  # every word in one author's name
        ({"author": "H. Müller"}, {"a"}),  # an initial stands for the word it begins
        ({"author": "S Okafor"}, {"b"}),
        ({"author": "L. Okafor"}, set()),
        ({"author": "John Smith"}, {"c"}),  # and a name for the initial it begins with
        ({"author": "John Ronald Smith"}, {"c"}),
        ({"author": "Jane Doe Smith"}, set()),
        ({"author": "Okafor"}, {"b"}),  # a name in full is not an initial's word
        ({"author": "Smith"}, {"c"}),
        ({"author": "S. Smith"}, set()),  # each word its own: S is not Smith's initial too
        ({"author": "R. J. Smith"}, {"c"}),
        ({"author": "L. W."}, {"b"}),  # initials alone: Li Wei
        ({"author": "O'Neill"}, {"d"}),
        ({"author": "oneill"}, {"d"}),  # as typed without the apostrophe (a user's trial)
        ({"author": "ONeill"}, {"d"}),
        ({"author": "Siobhan O'Neill"}, {"d"}),
        ({"author": "O. Neill"}, {"d"}),
        ({"title": "radar"}, {"a", "b"}),
        ({"title": "glacier"}, {"b"}),  # the title says "glaciers" (a user's trial)
        ({"title": "radars"}, {"a", "b"}),
        ({"title": "radar soil"}, {"a"}),
        ({"doi": "doi:10.1016/j.rse.1"}, {"a"}),
        ({"year_min": 2022}, {"b"}),
        ({"year_max": 2022}, {"a", "d"}),
        ({"year_min": 2021, "year_max": 2023, "author": "wei"}, {"b"}),
        ({"venue": "Nature"}, {"c"}),
        ({"venue": " nature "}, {"c"}),  # whatever its case and spacing
    ],
)
def test_catalog_and_memory_agree(tmp_path: Path, fields: dict[str, object], ids: set[str]):
    where = Filter(**fields)  # type: ignore[arg-type]
    by_catalog = {"author", "title", "doi", "year_min", "year_max", "venue"}
    assert where.catalog_only == bool(set(fields) & by_catalog)
    assert {p.paper_id for p in PAPERS if where.accepts(p)} == ids
    catalog = _catalog(tmp_path / "catalog.sqlite3")
    try:
        query = {k: v for k, v in where.fields().items() if v is not None}
        assert catalog.ids_matching(query) == ids  # type: ignore[arg-type]
        facets = Facets(catalog.filter_rows())  # what a filtered search resolves filters with
        if facets.answers(where):
            assert facets.allowed(where).papers == ids
    finally:
        catalog.close()


def test_a_catalog_from_before_dois_gains_the_column_in_place(tmp_path: Path):
    path = tmp_path / "catalog.sqlite3"
    _catalog(path).close()
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("ALTER TABLE papers DROP COLUMN doi")
    catalog = Catalog(path)
    try:
        assert catalog.papers(["a"])["a"].doi is None  # read, not rewritten
        catalog.update_in_place([PAPERS[0]])  # the next ingest records it
        assert catalog.papers(["a"])["a"].doi == "10.1016/J.RSE.1"
        assert catalog.ids_matching({"doi": "10.1016/j.rse.1"}) == {"a"}
    finally:
        catalog.close()


@pytest.mark.parametrize(
    ("name", "wanted", "found"),
    [
        ("John Smith", "J. R. Smith", True),  # a middle initial the name leaves out (a trial)
        ("J. Smith", "J. R. Smith", True),  # as "JR Smith" already found it
        ("J. Smith", "JR Smith", True),
        ("Rachel Smith", "J. R. Smith", False),  # the first initial must be there
        ("John Smith", "S. Smith", False),
    ],
)
def test_a_middle_initial_the_name_leaves_out(name: str, wanted: str, found: bool):
    assert names_match(name, wanted) is found


def test_a_middle_initial_is_not_asked_of_the_author_index():
    """The index of name words shortlisted only names with an "r": "J. R. Smith" did not find
    the papers of "John Smith" that ``names_match`` accepts."""
    facets = Facets([("e", '["John Smith"]', 2020, None, "z.csv", 1)])
    assert facets.allowed(Filter(author="J. R. Smith")).papers == {"e"}
    assert facets.allowed(Filter(author="R. J. Smith")).papers == set()
