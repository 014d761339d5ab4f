"""Each import format on a small export written for the test (tests/data/formats/), and the
BibTeX written out for cited papers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from assistant.errors import InputFileError
from assistant.ingest.corpus import Paper, load_corpus, load_file
from assistant.ingest.formats.bibtex_write import to_bibtex
from tests.conftest import ROOT

FORMATS = ROOT / "tests" / "data" / "formats"


def _by_id(path: Path) -> tuple[dict[str, Paper], list[str]]:
    warnings: list[str] = []
    papers, problems = load_file(path, warnings=warnings)
    assert problems == []
    return {p.paper_id: p for p in papers}, warnings


def test_zotero_bibtex():
    papers, warnings = _by_id(FORMATS / "zotero.bib")
    soil = papers["okafor_soil_2023"]  # the entry's key is the paper id
    assert soil.title == (
        "Soil moisture retrieval from Sentinel-1 radar with physics-guided neural networks"
    )
    assert soil.authors == ("Chidi Okafor", "Hans Müller", "Ana Gómez")  # {\"u}, {\'o}
    assert soil.venue == "Remote Sensing of Environment"  # an @string macro
    assert (soil.year, soil.doi) == (2023, "10.1016/j.rse.2022.113406")
    assert soil.url == "https://www.sciencedirect.com/science/article/pii/S0034425722005119"
    assert "falls by 18% against" in soil.abstract and "{" not in soil.abstract
    assert soil.location == "zotero.bib, entry 1"
    glacier = papers["lindqvist_glacier_2021"]
    assert (
        glacier.venue == "IGARSS 2021 - IEEE International Geoscience and Remote Sensing Symposium"
    )
    assert glacier.authors == ("Sara Lindqvist", "Chidi Okafor")
    assert warnings == [
        "zotero.bib: 1 entry without an abstract skipped (zhou_survey_2022); "
        "export them with their abstracts to index them"
    ]


def test_broken_bibtex_entry_is_named_and_the_rest_read(tmp_path: Path):
    path = tmp_path / "mendeley.bib"
    path.write_text(
        '@string{j = "Journal"}\n'
        "@article{broken,\n  title = {Never closed,\n  abstract = {Lost.}\n\n"
        "@article{good, title={Fine}, author={Doe, Jane}, year=2020,\n"
        "  abstract={A complete entry about river ice.}}\n",
        encoding="utf-8",
    )
    papers, problems = load_file(path)
    assert [p.paper_id for p in papers] == ["good"]
    assert len(problems) == 1 and "line 2 is not valid BibTeX" in str(problems[0])
    # The second entry in the file, the broken one counted (a user looking for "entry 1"
    # found the broken one), the @string macro not.
    assert papers[0].reference == "mendeley.bib, entry 2"


def test_zotero_ris():
    papers, warnings = _by_id(FORMATS / "zotero.ris")
    (drought,) = papers.values()
    assert drought.title == "Drought stress detection in maize from thermal drone imagery"
    assert drought.authors == ("Leila Haddad", "Chidi Okafor")
    assert (drought.year, drought.venue) == (2024, "Agricultural and Forest Meteorology")
    assert drought.doi == "10.1016/j.agrformet.2024.109876"
    assert drought.url and drought.url.startswith("https://www.sciencedirect.com/")
    assert drought.abstract.startswith("Drought stress in maize shows in canopy temperature")
    assert "1 record without an abstract skipped (Counting wheat heads" in warnings[0]


def test_endnote_ris_saved_as_txt_is_read_as_ris(tmp_path: Path):
    path = tmp_path / "endnote.txt"
    path.write_text((FORMATS / "zotero.ris").read_text(encoding="utf-8"), encoding="utf-8")
    papers, _ = load_file(path)
    assert [p.title for p in papers] == [
        "Drought stress detection in maize from thermal drone imagery"
    ]


def test_openalex_api_page_and_snapshot_line():
    papers, warnings = _by_id(FORMATS / "openalex_page.json")
    rice = papers["W4386000001"]
    assert rice.abstract == (
        "Flooded rice fields recharge aquifers by about 1.2 mm a day, twice rice dryland dryland"
    )  # rebuilt word by word from abstract_inverted_index
    assert rice.authors == ("Nguyễn Thị Lan", "Chidi Okafor")
    assert (rice.venue, rice.year, rice.doi) == (
        "Hydrology and Earth System Sciences",
        2023,
        "10.5194/hess-27-1-2023",
    )
    assert rice.url == "https://hess.copernicus.org/articles/27/1/2023/"
    assert "1 work without an abstract skipped (W4386000002)" in warnings[0]
    snapshot, _ = _by_id(FORMATS / "openalex_snapshot.jsonl")
    lstm = snapshot["W3100000003"]
    assert lstm.authors == ("Björn Åkesson",) and lstm.venue == "Water Resources Research"
    assert lstm.location == "openalex_snapshot.jsonl, line 1"


def test_arxiv_atom_feed():
    papers, _ = _by_id(FORMATS / "arxiv.atom")
    et = papers["2403.01234"]  # the version is dropped: v3 replaces v2
    assert et.title == "Evapotranspiration from Sparse Flux Towers with Graph Neural Networks"
    assert et.authors == ("Tomás Ferreira", "Ingrid Dahl")
    assert (et.year, et.doi) == (2024, "10.48550/arXiv.2403.01234")
    assert et.venue == "Hydrology and Earth System Sciences 28 (2024)"  # its journal_ref
    assert et.url == "http://arxiv.org/abs/2403.01234v2"
    assert et.abstract.startswith("Flux towers measure evapotranspiration at a few hundred")
    assert papers["2310.05555"].venue == "arXiv"


def test_xml_that_is_not_an_atom_feed_or_holds_entities_is_one_line(tmp_path: Path):
    other = tmp_path / "pubmed.xml"
    other.write_text("<PubmedArticleSet><PubmedArticle/></PubmedArticleSet>", encoding="utf-8")
    with pytest.raises(InputFileError, match="not an Atom <feed>"):
        load_file(other)
    bomb = tmp_path / "bomb.atom"
    bomb.write_text(
        '<?xml version="1.0"?><!DOCTYPE f [<!ENTITY a "aaaaaaaaaa">'
        '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]><feed xmlns="http://www.w3.org/2005/Atom">'
        "<entry><summary>&b;</summary></entry></feed>",
        encoding="utf-8",
    )
    with pytest.raises(InputFileError, match="not a readable Atom file"):
        load_file(bomb)


def test_semantic_scholar_search_result():
    papers, _ = _by_id(FORMATS / "semantic_scholar.json")
    frost = papers["649def34f8be52c8b66281af98ae884c09aef38b"]
    assert frost.authors == ("Élodie Martin", "Chidi Okafor")
    assert (frost.year, frost.venue, frost.doi) == (2021, "Nature", "10.1038/s41586-021-03819-2")
    assert frost.abstract.startswith("Spring frost damages vineyards")


def _generated_bib(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        out.write('@string{jh = "Journal of Hydrology"}\n\n')
        for i in range(n):
            out.write(
                f"@article{{gen{i:05d},\n\ttitle = {{Paper {i} on {{Sentinel}}-1 soil moisture}},\n"
                f'\tauthor = {{M{{\\"u}}ller, Hans and Okafor, Chidi and Author{i}, Some}},\n'
                f"\tjournal = jh,\n\tyear = {{{2000 + i % 25}}},\n\tdoi = {{10.1000/gen.{i}}},\n"
                f"\tabstract = {{Abstract {i}: we measure soil moisture from radar at station "
                f"{i} and report an error of {i % 97}\\% against probes. "
                + "More words of the abstract follow here. " * 20
                + "}},\n}}\n\n"
            )


_MEASURE = """
import sys, time
from pathlib import Path
from assistant.ingest.corpus import load_corpus
started = time.perf_counter()
result = load_corpus([Path(sys.argv[1])])
seconds = time.perf_counter() - started
last = result.papers[-1]
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the parent across fork and exec, so a
# child of a large pytest process would report the parent's peak.
status = Path("/proc/self/status").read_text()
peak = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM"))) / 1024
print(len(result.papers), len(result.problems), last.paper_id, last.authors[0], last.venue,
      last.doi, f"{seconds:.1f}", f"{peak:.0f}", sep="|")
"""


def test_ten_thousand_entry_bib(tmp_path: Path):
    """Read in a process of its own, whose peak resident memory is the figure in
    docs/formats.md (the interpreter and imports alone take ~70 MB of it)."""
    path = tmp_path / "big.bib"
    _generated_bib(path, 10_000)
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(path)], capture_output=True, text=True, check=True
    )
    count, problems, last_id, author, venue, doi, seconds, peak_mb = done.stdout.strip().split("|")
    print(
        f"\n10,000-entry .bib ({path.stat().st_size / 1e6:.1f} MB): {seconds} s, peak {peak_mb} MB"
    )
    assert (count, problems, last_id) == ("10000", "0", "gen09999")
    assert (author, venue, doi) == ("Hans Müller", "Journal of Hydrology", "10.1000/gen.9999")
    assert float(peak_mb) < 400


def test_bibtex_out_keys_are_stable_and_carry_doi_and_url():
    papers = load_corpus([FORMATS]).papers
    first, again = to_bibtex(papers), to_bibtex(papers)
    assert first == again
    assert "@article{okafor_soil_2023," in first  # a .bib paper keeps its key
    assert "@article{martin2021frost," in first  # others: author, year, title word
    assert "@inproceedings{lindqvist_glacier_2021," in first
    assert "doi = {10.1038/s41586-021-03819-2}" in first
    assert "url = {https://hess.copernicus.org/articles/27/1/2023/}" in first
    import bibtexparser

    reread = bibtexparser.parse_string(first)  # what is written reads back
    assert len(reread.entries) == len(papers) and not reread.failed_blocks


def test_bibtex_out_writes_a_suffix_where_bibtex_reads_it():
    """'Martin Luther King Jr.' written as it is reads in BibTeX as the last name 'Jr.'
    (cited 'Jr., M. L. K.'), and the key was 'jr1963…'."""
    import bibtexparser
    from bibtexparser.middlewares import SeparateCoAuthors, SplitNameParts

    names = ("Martin Luther King Jr.", "William Gates III", "Chidi Okafor")
    paper = Paper("x1", "a.jsonl#1", "Soil", "A.", title="Soil ethics", authors=names, year=1963)
    out = to_bibtex([paper])
    assert "@misc{king1963soil," in out
    middleware = [SeparateCoAuthors(), SplitNameParts()]
    (entry,) = bibtexparser.parse_string(out, append_middleware=middleware).entries
    read = [(" ".join(n.first), " ".join(n.last), " ".join(n.jr)) for n in entry["author"]]
    assert read == [
        ("Martin Luther", "King", "Jr."),
        ("William", "Gates", "III"),
        ("Chidi", "Okafor", ""),
    ]


def test_bibtex_out_tells_colliding_keys_apart():
    one = Paper("x1", "a.jsonl#1", "Soil", "A.", title="Soil radar", authors=("Jo Li",), year=2020)
    two = Paper(
        "x2", "a.jsonl#2", "Soil", "B.", title="Soil & water", authors=("Al Li",), year=2020
    )
    out = to_bibtex([one, two, one])
    assert "@misc{li2020soil," in out and "@misc{li2020soila," in out
    assert out.count("@misc") == 2 and "Soil \\& water" in out


@pytest.mark.parametrize("export", ["zotero.csv", "zotero_csl.json"])
def test_zotero_csv_and_csl_json_exports_give_what_its_bibtex_gives(export: str):
    """Zotero's CSV export names its columns "Abstract Note", "Author" ("Last, First; …"),
    "Publication Year", "Publication Title", "Key"; its CSL JSON has "author" [{family,
    given}], "issued" {date-parts}, "container-title". Both were refused ("no 'abstract'
    column") or read without authors, year, venue or DOI."""
    papers, warnings = _by_id(FORMATS / export)
    soil = papers["7QK2XW9E"]  # Zotero's item key, whichever export
    assert soil.authors == ("Chidi Okafor", "Hans Müller", "Ana Gómez")
    assert (soil.year, soil.venue) == (2023, "Remote Sensing of Environment")
    assert (soil.doi, soil.url) == (
        "10.1016/j.rse.2022.113406",
        "https://www.sciencedirect.com/science/article/pii/S0034425722005119",
    )
    assert soil.abstract.startswith("Soil moisture controls how rainfall splits")
    glacier = papers["R8M3PLQ2"]
    assert glacier.authors == ("Sara Lindqvist", "Chidi Okafor") and glacier.year == 2021
    assert (
        glacier.venue == "IGARSS 2021 - IEEE International Geoscience and Remote Sensing Symposium"
    )
    assert set(papers) == {"7QK2XW9E", "R8M3PLQ2"}
    assert len(warnings) == 1 and "without an abstract skipped (ZH0U2022)" in warnings[0]


def test_a_csl_item_keeps_the_bibtex_key_better_bibtex_gives_it(tmp_path: Path):
    path = tmp_path / "library.json"
    path.write_text(
        '[{"id": "http://zotero.org/users/1/items/AB12CD34", "citation-key": "okafor_soil_2023",'
        ' "type": "article-journal", "abstract": "Radar soil moisture.",'
        ' "author": [{"literal": "ESA Climate Office"}], "issued": {"raw": "Feb 2023"}}]',
        encoding="utf-8",
    )
    papers, _ = _by_id(path)
    paper = papers["okafor_soil_2023"]
    assert paper.authors == ("ESA Climate Office",) and paper.year == 2023


def test_a_csl_name_keeps_its_suffix_and_particles(tmp_path: Path):
    """Zotero and Mendeley write 'Jr.' in ``suffix`` and 'van' in ``dropping-particle``:
    both were dropped ('Martin Luther King', 'Ludwig Beethoven')."""
    path = tmp_path / "library.json"
    path.write_text(
        '[{"id": "k", "type": "article-journal", "abstract": "Forest trust.", "author": ['
        '{"family": "King", "given": "Martin Luther", "suffix": "Jr."},'
        '{"family": "Beethoven", "given": "Ludwig", "dropping-particle": "van"},'
        '{"family": "Berg", "given": "Anna", "non-dropping-particle": "van der"}]}]',
        encoding="utf-8",
    )
    papers, _ = _by_id(path)
    assert papers["k"].authors == (
        "Martin Luther King Jr.",
        "Ludwig van Beethoven",
        "Anna van der Berg",
    )


def test_a_beir_corpus_is_read_with_its_ids_titles_and_texts(tmp_path: Path):
    """BEIR's corpus.jsonl (SciFact's, TREC-COVID's) keeps each abstract in 'text': every line
    was refused for want of an 'abstract' field."""
    path = tmp_path / "corpus.jsonl"
    path.write_text(
        '{"_id": "4983", "title": "White matter in newborns", "text": "Diffusion tensor MRI '
        'shows how white matter develops.", "metadata": {}}\n'
        '{"_id": "5836", "title": "", "text": ""}\n',
        encoding="utf-8",
    )
    papers, warnings = _by_id(path)
    assert list(papers) == ["4983"] and papers["4983"].title == "White matter in newborns"
    assert papers["4983"].abstract.startswith("Diffusion tensor MRI")
    assert "1 work without an abstract skipped (5836)" in warnings[0]


def test_what_a_new_users_exports_held_is_read_as_meant(tmp_path: Path):
    """Found by a new user's Zotero, Scopus and Mendeley exports: a Zotero item of one author
    ("Schäfer, Björn") became two authors; its rich-text title kept "<i>"; Scopus's
    "[No abstract available]" was indexed as an abstract and "[No author name available]"
    kept as an author; Mendeley's CSL ids ("ITEM-1") number the file's items, so a second
    export replaced the first one's papers."""
    zotero = tmp_path / "zotero.csv"
    zotero.write_text(
        '"Key","Item Type","Publication Year","Author","Title","Abstract Note"\n'
        '"AB12","journalArticle","2020","Schäfer, Björn","Growth of <i>E. coli</i> in '
        'CO<sub>2</sub>","We grow bacteria in two ways and compare the yields."\n',
        encoding="utf-8",
    )
    paper = _by_id(zotero)[0]["AB12"]
    assert paper.authors == ("Björn Schäfer",) and paper.title == "Growth of E. coli in CO2"
    scopus = tmp_path / "scopus.csv"
    scopus.write_text(
        "Authors,Author full names,Title,Year,Source title,Abstract,DOI,Link,EID\n"
        '"[No author name available]",,Splicing,2018,Cell,"We map splicing.",10.1/x,l,2-s2.0-1\n'
        '"Kim S., Lee J.",,Cells,2019,Cell,"[No abstract available]",10.1/y,l,2-s2.0-2\n'
        '"Kim S., Lee J.","Kim, Soo-Jin (57201234567); Lee, Ji-Woo (57209876543)",Maps,2020,'
        'Cell,"We map cells.",10.1/z,l,2-s2.0-3\n'
        '"Chen X.","Chen, Xi (57000000005); ",Heat,2021,PNAS,"Urban heat.",10.1/w,l,2-s2.0-4\n',
        encoding="utf-8",
    )
    papers, warnings = _by_id(scopus)
    assert list(papers) == ["2-s2.0-1", "2-s2.0-3", "2-s2.0-4"]
    assert papers["2-s2.0-1"].authors == ()
    assert papers["2-s2.0-3"].authors == ("Soo-Jin Kim", "Ji-Woo Lee")  # not "Kim S."
    assert papers["2-s2.0-4"].authors == ("Xi Chen",)  # no '' after the last ';'
    assert "1 row without an abstract skipped (2-s2.0-2)" in warnings[0]
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    for path, text in ((first, "Tumours grow."), (second, "Rivers freeze.")):
        path.write_text(
            f'[{{"id": "ITEM-1", "type": "article-journal", "abstract": "{text}", '
            '"issued": {"date-parts": [["2013", "", ""]]}}]',
            encoding="utf-8",
        )
    ids = {next(iter(_by_id(path)[0])) for path in (first, second)}
    assert len(ids) == 2 and "ITEM-1" not in ids


@pytest.mark.parametrize(
    ("written", "name"),
    [
        ("Okafor, Chidi", "Chidi Okafor"),
        ("van der Berg, Jan", "Jan van der Berg"),
        ("King, Jr., Martin Luther", "Martin Luther King Jr."),  # BibTeX's "Last, Jr, First"
        ("King, Martin Luther, Jr.", "Martin Luther King Jr."),  # the suffix written last
        ("Gates, William, III", "William Gates III"),
        ("Chidi Okafor", "Chidi Okafor"),
        ("Li, Xi, Jr", "Xi Li Jr"),  # 'Xi' is a given name, not the numeral XI
        ("Li, Xi", "Xi Li"),
        ("Smith, V., Jr.", "V. Smith Jr."),  # 'V.' an initial
        ("Martin Luther King, Jr.", "Martin Luther King Jr."),  # the suffix after the name
    ],
)
def test_a_name_written_last_first_is_turned_round_with_its_suffix(written: str, name: str):
    """Before: "King, Martin Luther, Jr." became "Martin Luther, Jr. King"."""
    from assistant.ingest.formats import first_last

    assert first_last(written) == name
