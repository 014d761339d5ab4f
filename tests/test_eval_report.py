"""``report.html`` and ``eval --compare`` on real offline runs: each metric once, failing
questions marked and filterable, answers as the terminal prints them, histograms with axes, and
(in headless Chromium) no label clipped or overlapped."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from assistant.cli.main import main
from assistant.eval.charts import bins, histogram, nice_step
from assistant.eval.harness import METRICS
from assistant.eval.outcomes import severity, tags_of
from assistant.eval.whole_answer import LOWER_IS_BETTER
from assistant.text.latex import has_latex

EVAL_SET = Path(__file__).parents[1] / "evals" / "neurips2025.jsonl"
# Of every split and type: factual, multi-paper (answers of several lines), follow-up, LaTeX in
# the answer (q141), a paraphrase the extractive answerer refuses, unanswerable ones.
IDS = ("q01", "q46", "q53", "q56", "q141", "q149", "q164", "q179")
ROW = re.compile(
    r'<tr class="(\w+)" data-split="([^"]*)" data-type="([^"]*)" data-tags="([^"]*)">'
    r'<td class="label">([^<]+)</td>(.*?)</tr>',
    re.S,
)


def _write_set(path: Path, changes: dict[str, dict[str, Any]] | None = None) -> Path:
    rows = [json.loads(line) for line in EVAL_SET.read_text().splitlines() if line.strip()]
    chosen = [r | (changes or {}).get(r["id"], {}) for r in rows if r["id"] in IDS]
    path.write_text("".join(json.dumps(r) + "\n" for r in chosen))
    return path


def _eval(store: Path, eval_set: Path, out: Path) -> dict[str, Any]:
    args = ["eval", "--set", str(eval_set), "--out", str(out), "--store", str(store)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return json.loads((out / "results.json").read_text())


@pytest.fixture(scope="module")
def run(shipped_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One offline eval run (extractive answers, offline judge) of the questions in IDS."""
    tmp = tmp_path_factory.mktemp("report")
    _eval(shipped_store, _write_set(tmp / "set.jsonl"), tmp / "run")
    return tmp / "run"


def _rows(page: str) -> dict[str, tuple[str, ...]]:
    return {m.group(5): m.groups() for m in ROW.finditer(page)}


def test_each_metric_once_and_lower_is_better_marked(run: Path):
    page = (run / "report.html").read_text()
    for name in METRICS:
        cells = re.findall(rf'<tr class="(\w+)"><td class="label">{re.escape(name)}[ <]', page)
        assert len(cells) == 1, name
        assert cells[0] == ("lower" if name in LOWER_IS_BETTER else "higher"), name
    assert page.count("↓ lower is better") == len(LOWER_IS_BETTER) + 1  # and the legend
    assert "machine-dependent" in page


def test_rows_show_split_papers_and_failures(run: Path):
    results = json.loads((run / "results.json").read_text())["questions"]
    page = (run / "report.html").read_text()
    rows = _rows(page)
    assert sorted(rows) == sorted(IDS)
    for result in results:
        shown, split, kind, tags, _, cells = rows[result["id"]]
        assert (split, kind) == (result["split"], result["type"])
        assert tags.split() == [t.slug for t in tags_of(result)]
        assert shown == severity(tags_of(result))
        for paper in set(result["cited"]) & set(result["gold"]) if result["answerable"] else ():
            assert f"✓ {paper}</span>" in cells  # a cited gold paper is marked
    severities = {row[0] for row in rows.values()}
    assert {"fail", "ok"} <= severities, "the chosen questions should include a failure"
    # Each failure found has a button of the filter, with its count.
    for slug in {slug for row in rows.values() for slug in row[3].split()}:
        count = sum(slug in row[3].split() for row in rows.values())
        assert re.search(rf'data-failure="{slug}">[^<]+: {count}</button>', page)


def test_answers_read_as_in_the_terminal(run: Path):
    results = {r["id"]: r for r in json.loads((run / "results.json").read_text())["questions"]}
    rows = _rows((run / "report.html").read_text())
    latex = [r for r in results.values() if has_latex(r["answer"])]
    assert latex, "q141's answer quotes LaTeX"
    for row in latex:
        answer = re.search(r'<div class="answer">(.*?)</div>', rows[row["id"]][5], re.S)
        assert answer and not has_latex(unescape(answer.group(1)))
        assert "\\" not in answer.group(1) and "$" not in answer.group(1)
    assert "ℓ" in rows["q141"][5]  # its $\\ell_p$-norm
    multiline = [r for r in results.values() if "\n" in r["answer"]]
    assert multiline, "a multi-paper answer has one line per paper"
    for row in multiline:
        answer = re.search(r'<div class="answer">(.*?)</div>', rows[row["id"]][5], re.S)
        assert answer and answer.group(1).count("\n") == row["answer"].count("\n")


def test_report_is_one_self_contained_file(run: Path):
    page = (run / "report.html").read_text()
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", page)
    assert "http://" not in page and "https://" not in page
    assert page.count("<svg") == 2 and page.count("<script") == 1 and "<script>" not in page


def test_histogram_has_axes_round_ticks_and_handles_one_value():
    values = [120.0, 180.5, 240.0, 250.0, 610.0, 1301.0]
    edges, counts = bins(values)
    assert edges[0] <= min(values) and edges[-1] >= max(values) and sum(counts) == len(values)
    step = edges[1] - edges[0]
    assert step == nice_step(max(values) - min(values), 10) == 200
    svg = histogram(values, "latency per question (ms)", "ms")
    ticks = re.findall(r'text-anchor="middle">([\d,.]+)</text>', svg)
    assert ticks[:3] == ["0", "200", "400"]
    assert "latency per question (ms)</text>" in svg and ">questions</text>" in svg
    flat = histogram([0, 0, 0], "model tokens per question", "tokens")
    assert flat.count("<rect") == 1 and "3 questions: 0 tokens" in flat
    assert re.findall(r'text-anchor="middle">([\d,.]+)</text>', flat) == ["0"]
    assert nice_step(0.9, 4) == 0.25 and nice_step(7, 4) == 2


def test_compare_lists_improvements_and_regressions(run: Path, shipped_store: Path, tmp_path: Path):
    """A second real run whose reference facts changed: q01 now expects a fact its answer
    lacks (a regression); an incorrect answer's reference becomes a word it states (a fix)."""
    before = {r["id"]: r for r in json.loads((run / "results.json").read_text())["questions"]}
    wrong = next(r for r in before.values() if "incorrect" in [t.slug for t in tags_of(r)])
    stated = max(re.findall(r"[A-Za-z]{6,}", wrong["answer"]), key=len)
    changes = {
        "q01": {"reference": ["a figure no abstract gives"]},
        wrong["id"]: {"reference": [stated]},
    }
    after = tmp_path / "after"
    _eval(shipped_store, _write_set(tmp_path / "set.jsonl", changes), after)
    result = CliRunner().invoke(main, ["eval", "--compare", str(run), str(after), "--json"])
    diff = json.loads(result.stdout)
    by_id = {q["id"]: q for q in diff["questions"]}
    assert (
        by_id["q01"]["direction"] == "regressed" and "no longer correct" in by_id["q01"]["changes"]
    )
    assert by_id[wrong["id"]]["direction"] == "improved"
    assert "now correct" in by_id[wrong["id"]]["changes"]
    latency = {m["metric"]: m for m in diff["metrics"]}["latency_p50_ms"]
    assert latency["machine_dependent"] and "machine" in diff["note"]
    shown = CliRunner().invoke(main, ["eval", "--compare", str(run), str(after)]).stdout
    assert "improved: 1" in shown and "regressed: 1" in shown
    assert "latency_p50_ms (machine-dependent)" in shown


# -- in a browser ------------------------------------------------------------------------------

# Run in the page after load: every label that is wider than its box, every SVG text outside
# its chart or over a bar or another text, and the filter at work; written into the DOM.
CHECK = """<script>
window.addEventListener('load', function () {
  var bad = [];
  function over(a, b) {
    return a.left < b.right - 0.5 && b.left < a.right - 0.5 &&
           a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
  }
  document.querySelectorAll('.label, th, td.num, .tag, summary, button').forEach(function (el) {
    if (el.offsetParent !== null && el.scrollWidth > el.clientWidth + 1) {
      bad.push('clipped: ' + el.textContent.trim());
    }
  });
  if (document.documentElement.scrollWidth > window.innerWidth) {
    bad.push('page wider than the window: ' + document.documentElement.scrollWidth);
  }
  document.querySelectorAll('svg').forEach(function (svg) {
    var frame = svg.getBoundingClientRect();
    var texts = Array.prototype.slice.call(svg.querySelectorAll('text'));
    var bars = Array.prototype.slice.call(svg.querySelectorAll('rect'));
    texts.forEach(function (text, i) {
      var box = text.getBoundingClientRect();
      if (box.left < frame.left || box.right > frame.right ||
          box.top < frame.top || box.bottom > frame.bottom) {
        bad.push('outside its chart: ' + text.textContent);
      }
      bars.forEach(function (bar) {
        if (over(box, bar.getBoundingClientRect())) bad.push('over a bar: ' + text.textContent);
      });
      texts.slice(0, i).forEach(function (other) {
        if (over(box, other.getBoundingClientRect())) {
          bad.push('overlaps: ' + text.textContent + ' / ' + other.textContent);
        }
      });
    });
  });
  var shown = {};
  var form = document.getElementById('filter');
  if (form) {
    ['any', 'none', ''].forEach(function (value) {
      form.failure.value = value;
      form.dispatchEvent(new Event('change'));
      shown[value || 'all'] = document.querySelectorAll('table.questions tbody tr:not([hidden])')
        .length;
    });
  }
  var out = document.createElement('pre');
  out.id = 'layout-check';
  out.textContent = JSON.stringify({bad: bad, shown: shown});
  document.body.appendChild(out);
});
</script>"""
# Read at import: the autouse fixture of conftest.py hides ASSISTANT_* variables from tests.
REQUIRE_BROWSER = os.environ.get("ASSISTANT_REQUIRE_BROWSER") == "1"  # set by .ci/run
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
    "--window-size=1280,1800",
)


def _chromium() -> str:
    found = next(
        (shutil.which(n) for n in ("chromium", "chromium-browser") if shutil.which(n)), None
    )
    if found is None:
        if REQUIRE_BROWSER:
            pytest.fail("ASSISTANT_REQUIRE_BROWSER=1 but no chromium on the PATH")
        pytest.skip("no chromium on the PATH (apt-get install chromium)")
    return found


def _browse(page: Path, tmp_path: Path, *args: str) -> str:
    command = [_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args]
    done = subprocess.run(
        [*command, page.as_uri()], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _layout(page: Path, tmp_path: Path) -> dict[str, Any]:
    checked = tmp_path / f"checked-{page.name}"
    checked.write_text(page.read_text().replace("</body>", CHECK + "</body>"))
    dom = _browse(checked, tmp_path, "--dump-dom", "--virtual-time-budget=5000")
    found = re.search(r'<pre id="layout-check">(.*?)</pre>', dom, re.S)
    assert found, "the check did not run in the page"
    return json.loads(found.group(1).replace("&amp;", "&").replace("&lt;", "<"))


def test_report_in_a_browser_has_no_clipped_label(run: Path, tmp_path: Path):
    results = json.loads((run / "results.json").read_text())["questions"]
    layout = _layout(run / "report.html", tmp_path)
    assert layout["bad"] == []
    failing = sum(severity(tags_of(r)) == "fail" for r in results)
    assert layout["shown"] == {
        "any": failing,
        "none": sum(not tags_of(r) for r in results),
        "all": len(results),
    }
    shot = tmp_path / "report.png"
    _browse(run / "report.html", tmp_path, f"--screenshot={shot}")
    head = shot.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", head[16:24]) == (1280, 1800)


def test_the_browser_check_sees_a_clipped_label(tmp_path: Path):
    """The check itself: a label cut by its cell and a tick label drawn over a bar are found."""
    page = tmp_path / "clipped.html"
    page.write_text(
        '<!doctype html><html><body><table><tr><td class="label" style="max-width:60px;'
        'overflow:hidden;white-space:nowrap">strict_removed (lower is better)</td></tr></table>'
        '<svg width="200" height="40"><rect x="0" y="0" width="200" height="40"/>'
        '<text x="10" y="20">sentences_unsupported (lower is better)</text></svg></body></html>'
    )
    bad = _layout(page, tmp_path)["bad"]
    assert "clipped: strict_removed (lower is better)" in bad
    assert any(b.startswith("over a bar: sentences_unsupported") for b in bad)
    assert any(b.startswith("outside its chart: sentences_unsupported") for b in bad)
