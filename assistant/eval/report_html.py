"""``report.html``: one self-contained page (inline CSS, SVG and a few lines of JS; nothing
fetched) that shows each metric once and points at the questions that failed.

The questions table has a row per question with its split, type, gold and cited papers and the
answer as the terminal prints it; failing rows are coloured (``outcomes.py``) and a filter by
split, type and failure hides the rest.
"""

from __future__ import annotations

from html import escape
from typing import Any

from assistant.eval.charts import histogram
from assistant.eval.formats import (
    COUNTS,
    metric_value,
    share,
    speed_rows,
)
from assistant.eval.harness import METRICS
from assistant.eval.outcomes import TAGS, severity, tags_of
from assistant.eval.whole_answer import LOWER_IS_BETTER
from assistant.text.latex import latex_to_text
from assistant.text.markdown import markdown_to_text
from assistant.text.normalise import printable

GROUPS = (
    ("Retrieval", ("recall@5", "recall@10", "mrr", "ndcg@10")),
    (
        "Faithfulness and citations",
        (
            "faithfulness",
            "faithfulness_retrieved",
            "sentences_unsupported",
            "sentences_weak",
            "citation_recall",
            "citation_precision",
            "citation_f1",
        ),
    ),
    (
        "Answers",
        (
            "correctness",
            "correctness_original",
            "correctness_paraphrase",
            "answer_relevance",
            "accuracy",
            "precision",
            "answer_sentences",
            "answer_tokens",
        ),
    ),
    (
        "Question shapes (items of each shape; – when the run has none)",
        (
            "cited_recall_compare",
            "correctness_compound",
            "correctness_definition",
            "correctness_acronym",
            "cited_recall_literal",
            "pinned_decision",
        ),
    ),
    ("Refusals", ("refusal_precision", "refusal_recall", "false_refusal_rate")),
    (
        "Cited papers against the gold ones",
        ("cited_precision", "cited_recall", "cited_precision_multi", "cited_recall_multi"),
    ),
    (
        "Verification at answer time (ASSISTANT_LLM__VERIFY)",
        ("marked_unsupported", "faithfulness_unmarked", "strict_removed"),
    ),
)
# The per-question columns of figures: (metric, header).
COLUMNS = (
    ("faithfulness", "faithful"),
    ("citation_f1", "citation F1"),
    ("correctness", "correct"),
    ("ndcg@10", "nDCG@10"),
)

CSS = """
body{font:14px/1.45 system-ui,sans-serif;color:#222;margin:0 auto;
padding:16px 24px;max-width:1500px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px}
.meta,.note{color:#555}code{font-size:13px}
table{border-collapse:collapse}
th,td{padding:3px 8px;text-align:left;vertical-align:top;border-bottom:1px solid #e4e4e4}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.label{white-space:nowrap}
.metrics tr.group th{background:#f3f3f3;padding-top:8px}
.bar{width:220px;height:12px;margin-top:4px;background:#e8eef9}
.bar>span{display:block;height:100%;background:#4878d0}
tr.lower .bar,.bar.lower{background:#fbece2}
tr.lower .bar>span,.bar.lower>span{
background:repeating-linear-gradient(135deg,#d9652b 0 4px,#f0a070 4px 7px)}
.dir{color:#b0501a;font-size:12px}.machine{color:#777;font-size:12px}
.legend{font-size:13px;color:#444;margin:4px 0 8px}
.legend .bar{display:inline-block;width:28px;vertical-align:middle;margin:0 4px 2px 0}
.overview{display:flex;flex-wrap:wrap;gap:16px 48px;align-items:flex-start}
.charts{display:flex;flex-direction:column;gap:24px}figure{margin:0}
figcaption{font-size:13px;color:#444;max-width:440px}
svg.chart text{font-size:11px;fill:#333}svg.chart text.title{font-size:12px}
svg.chart rect{fill:#e07b39}svg.chart .axis{stroke:#333}svg.chart .grid{stroke:#eee}
form#filter{display:flex;flex-wrap:wrap;gap:14px;align-items:center;position:sticky;top:0;
background:#fff;padding:8px 0;border-bottom:1px solid #ddd;z-index:1}
.counts button{font:inherit;font-size:12px;border:0;border-radius:3px;padding:1px 6px;
margin:2px 4px 2px 0;cursor:pointer}
table.questions{width:100%}table.questions td{font-size:13px}
table.questions th{position:sticky;top:46px;background:#f3f3f3}
.question{width:40%;min-width:20em}
tr.fail{background:#fdeded}tr.fail>td:first-child{box-shadow:inset 4px 0 #d62728}
tr.warn{background:#fff7e3}tr.warn>td:first-child{box-shadow:inset 4px 0 #e8a33d}
.tag{display:inline-block;white-space:nowrap;border-radius:3px;padding:0 5px;margin:1px 0;
font-size:12px}
.tag.fail{background:#d62728;color:#fff}.tag.warn{background:#f2c46d;color:#222}
.tag.ok{background:#d9eed9;color:#1d5e1d}
.paper{display:block;min-width:7em;max-width:16em}.paper.gold{color:#1d6b1d;font-weight:600}
.paper.other{color:#a52a2a}.paper.missed{color:#777}
.answer{white-space:pre-wrap;font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace;
margin:4px 0 0}
details summary{cursor:pointer;color:#2859a8;white-space:nowrap}
"""

JS = """
(function () {
  var form = document.getElementById('filter');
  var rows = Array.prototype.slice.call(document.querySelectorAll('table.questions tbody tr'));
  var shown = document.getElementById('shown');
  function keep(row) {
    var tags = row.getAttribute('data-tags').split(' ').filter(Boolean);
    var want = form.failure.value;
    if (form.split.value && row.getAttribute('data-split') !== form.split.value) return false;
    if (form.type.value && row.getAttribute('data-type') !== form.type.value) return false;
    if (want === 'any') return row.className === 'fail';
    if (want === 'any-tag') return tags.length > 0;
    if (want === 'none') return tags.length === 0;
    return !want || tags.indexOf(want) >= 0;
  }
  function apply() {
    var n = 0;
    rows.forEach(function (row) { row.hidden = !keep(row); if (!row.hidden) n++; });
    shown.textContent = n + ' of ' + rows.length + ' questions shown';
  }
  // A link can carry the filter: report.html#split=test&failure=any
  location.hash.slice(1).split('&').forEach(function (pair) {
    var kv = pair.split('=');
    if (['split', 'type', 'failure'].indexOf(kv[0]) >= 0 && kv.length === 2) {
      form[kv[0]].value = decodeURIComponent(kv[1]);
    }
  });
  form.addEventListener('change', apply);
  document.querySelectorAll('button[data-failure]').forEach(function (button) {
    button.addEventListener('click', function (event) {
      event.preventDefault();
      form.failure.value = button.getAttribute('data-failure');
      apply();
    });
  });
  apply();
})();
"""


def _text(value: Any) -> str:
    return escape(printable(str(value)))


def as_terminal(answer: str) -> str:
    """An answer as ``assistant ask`` prints it: LaTeX and markdown made plain, lines kept."""
    return printable(markdown_to_text(latex_to_text(answer)))


def _metric_row(name: str, value: Any) -> str:
    lower = name in LOWER_IS_BETTER
    mark = ' <span class="dir">↓ lower is better</span>' if lower else ""
    bar = ""
    if value is not None and name not in COUNTS:
        width = max(0.0, min(1.0, float(value))) * 100
        bar = f'<div class="bar"><span style="width:{width:.1f}%"></span></div>'
    return (
        f'<tr class="{"lower" if lower else "higher"}"><td class="label">{escape(name)}{mark}</td>'
        f'<td class="num">{metric_value(name, value)}</td><td>{bar}</td></tr>'
    )


def metrics_table(aggregate: dict[str, Any]) -> str:
    """Every metric once, grouped, each with its bar; lower-is-better ones marked and hatched."""
    listed = {name for _, names in GROUPS for name in names}
    groups = [*GROUPS, ("Other", tuple(n for n in METRICS if n not in listed))]
    parts = ['<table class="metrics">']
    if aggregate.get("no_answer"):
        parts.append(
            '<tr class="lower"><td class="label">replies with no answer (in no metric)</td>'
            f'<td class="num">{aggregate["no_answer"]}</td><td></td></tr>'
        )
    for title, names in groups:
        if not names:
            continue
        parts.append(f'<tr class="group"><th colspan="3" class="label">{escape(title)}</th></tr>')
        parts += [_metric_row(name, aggregate.get(name)) for name in names]
    parts.append('<tr class="group"><th colspan="3" class="label">Speed and cost</th></tr>')
    for label, value in speed_rows(aggregate):
        note = (
            ' <span class="machine">machine-dependent</span>' if label.startswith("latency") else ""
        )
        parts.append(
            f'<tr class="lower"><td class="label">{escape(label)}{note}</td>'
            f'<td class="num">{escape(value)}</td><td></td></tr>'
        )
    return "".join(parts) + "</table>"


def _papers(labels: list[str], ids: list[str], cls: str) -> str:
    return "".join(
        f'<span class="paper {cls}"{f" title={_attr(i)}" if i else ""}>'
        f"{'✓ ' if cls == 'gold' else ''}{_text(label)}</span>"
        for label, i in zip(labels, ids, strict=False)
    )


def _attr(value: str) -> str:
    return '"' + escape(value, quote=True) + '"'


def paper_cells(row: dict[str, Any]) -> tuple[str, str]:
    """The gold-papers cell (✓ when cited) and the cited-papers cell (✓ gold, red otherwise)."""
    gold_labels: list[str] = row.get("gold") or []
    gold_ids: list[str] = row.get("gold_papers") or []
    labels: list[str] = row.get("cited") or []
    ids: list[str] = row.get("cited_papers") or []
    if len(ids) != len(labels):  # a run from before ids were recorded
        ids = [""] * len(labels)
    cited_pairs = list(dict.fromkeys(zip(labels, ids, strict=True)))  # each paper once
    cited_labels, cited_ids = [p[0] for p in cited_pairs], [p[1] for p in cited_pairs]
    answerable = row.get("answerable", True)
    if len(gold_ids) == len(gold_labels) and gold_ids:
        gold_cited = [i in cited_ids for i in gold_ids]
        is_gold = [i in gold_ids for i in cited_ids]
    else:  # matched by label
        gold_ids = [""] * len(gold_labels)
        gold_cited = [label in cited_labels for label in gold_labels]
        is_gold = [answerable and label in gold_labels for label in cited_labels]
    if answerable:
        gold = "".join(
            _papers([label], [i], "gold" if hit else "missed")
            for label, i, hit in zip(gold_labels, gold_ids, gold_cited, strict=True)
        )
    else:  # the papers an unanswerable question is about: citing them is no success
        about = _papers(gold_labels, gold_ids, "missed")
        gold = '<span class="paper">unanswerable</span>' + (
            f'<span class="note">about:</span>{about}' if about else ""
        )
    cited = "".join(
        _papers([label], [i], "gold" if hit else "other")
        for label, i, hit in zip(cited_labels, cited_ids, is_gold, strict=True)
    )
    return gold or "–", cited or "–"


def _tags_cell(row: dict[str, Any]) -> str:
    tags = tags_of(row)
    if not tags:
        return '<span class="tag ok">ok</span>'
    return " ".join(
        f'<span class="tag {"fail" if t.failure else "warn"}">{escape(t.text)}</span>' for t in tags
    )


def _answer_cell(row: dict[str, Any], failed: bool) -> str:
    """The answer, open when the question failed: the reason is usually in it."""
    if row.get("error"):
        return f'<span class="note">{_text(row["error"])}</span>'
    shown = as_terminal(row.get("answer", ""))
    extra = ""
    if row.get("reference"):
        facts = "; ".join(str(f) for f in row["reference"])
        extra += f'<div class="note">reference facts: {_text(facts)}</div>'
    for claim in row.get("unsupported_claims") or []:
        extra += f'<div class="note">unsupported: {_text(as_terminal(str(claim)))}</div>'
    summary = "refusal" if row.get("refused") else "answer"
    return (
        f"<details{' open' if failed else ''}><summary>{summary}</summary>"
        f'<div class="answer">{escape(shown)}</div>{extra}</details>'
    )


def question_row(row: dict[str, Any]) -> str:
    tags = tags_of(row)
    gold, cited = paper_cells(row)
    metrics = row.get("metrics") or {}
    figures = "".join(f'<td class="num">{share(metrics.get(name))}</td>' for name, _ in COLUMNS)
    return (
        f'<tr class="{severity(tags)}" data-split={_attr(str(row.get("split", "")))} '
        f"data-type={_attr(str(row.get('type', '')))} "
        f"data-tags={_attr(' '.join(t.slug for t in tags))}>"
        f'<td class="label">{_text(row["id"])}</td><td>{_text(row.get("split", "–"))}</td>'
        f"<td>{_text(row.get('type', '–'))}</td>"
        f'<td class="question">{_text(row.get("question", ""))}'
        f"{_answer_cell(row, severity(tags) == 'fail')}</td>"
        f"<td>{_tags_cell(row)}</td><td>{gold}</td><td>{cited}</td>{figures}</tr>"
    )


def _options(name: str, label: str, values: list[tuple[str, str]]) -> str:
    options = "".join(f"<option value={_attr(v)}>{escape(text)}</option>" for v, text in values)
    return f'<label class="label">{label} <select name="{name}">{options}</select></label>'


def filter_form(rows: list[dict[str, Any]]) -> str:
    """Selects for split, type and failure, and a button per failure with its count."""
    splits = sorted({str(r.get("split")) for r in rows if r.get("split")})
    types = sorted({str(r.get("type")) for r in rows if r.get("type")})
    counts = {tag.slug: 0 for tag in TAGS}
    for row in rows:
        for tag in tags_of(row):
            counts[tag.slug] += 1
    present = [t for t in TAGS if counts[t.slug]]
    failure = [
        ("", "all"),
        ("any", "any failure"),
        ("any-tag", "any failure or warning"),
        ("none", "no failure or warning"),
        *((t.slug, t.text) for t in present),
    ]
    buttons = "".join(
        f'<button class="tag {"fail" if t.failure else "warn"}" data-failure="{t.slug}">'
        f"{escape(t.text)}: {counts[t.slug]}</button>"
        for t in present
    )
    return (
        '<form id="filter">'
        + _options("split", "split", [("", "all"), *((s, s) for s in splits)])
        + _options("type", "type", [("", "all"), *((t, t) for t in types)])
        + _options("failure", "failure", failure)
        + f'<span id="shown" class="note">{len(rows)} questions</span>'
        + f'<span class="counts">{buttons}</span></form>'
    )


def questions_table(rows: list[dict[str, Any]]) -> str:
    heads = ["id", "split", "type", "question and answer", "outcome", "gold papers"]
    heads += ["cited papers"] + [header for _, header in COLUMNS]
    head = "".join(f'<th class="label">{escape(h)}</th>' for h in heads)
    body = "".join(question_row(r) for r in rows)
    return f'<table class="questions"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def charts(rows: list[dict[str, Any]]) -> str:
    answered = [r for r in rows if not r.get("error")]
    latency = histogram([r["latency_ms"] for r in answered], "latency per question (ms)", "ms")
    used = [r.get("prompt_tokens", 0) + r.get("completion_tokens", 0) for r in answered]
    tokens = histogram(used, "model tokens per question", "tokens")
    note = ""
    if used and not any(used):
        note = " No model was called: the offline answerer uses no tokens."
    return (
        f'<div class="charts"><figure>{latency}<figcaption>Latency depends on the machine and '
        "its load: compare runs made side by side on one machine.</figcaption></figure>"
        f"<figure>{tokens}<figcaption>Prompt and completion tokens.{note}</figcaption>"
        "</figure></div>"
    )


def html_report(meta: dict[str, Any], aggregate: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    started = _text(meta.get("started", ""))
    failing = sum(severity(tags_of(r)) == "fail" for r in rows)
    warned = sum(severity(tags_of(r)) == "warn" for r in rows)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Eval run {started}</title><style>{CSS}</style></head><body>
<h1>Eval run {started}</h1>
<p class="meta">Eval set <code>{_text(meta.get("eval_set", "–"))}</code> · split
{_text(meta.get("split", "all"))} · {aggregate.get("questions", len(rows))} questions · provider
{_text(meta.get("provider", "–"))}/{_text(meta.get("model", "–"))} · judge
{_text(meta.get("judge", "–"))}</p>
<p><a href="#questions">{failing} questions failed</a>, {warned} more with a warning.</p>
<div class="overview"><section><h2>Metrics</h2>
<p class="legend"><span class="bar"><span style="width:100%"></span></span>higher is better
&nbsp; <span class="bar lower"><span style="width:100%"></span></span>↓ lower is better
&nbsp; (bars from 0 to 1; means of counts have none)</p>
{metrics_table(aggregate)}</section>
<section><h2>Latency and tokens</h2>
{charts(rows)}</section></div>
<h2 id="questions">Questions</h2>
<p class="note">Red: a failure (no answer, a wrong refusal or answer, a sentence its sources do
not support); amber: a warning (a non-gold paper cited, a gold paper not cited or not retrieved).
✓ marks gold papers that were cited.</p>
{filter_form(rows)}
{questions_table(rows)}
<script id="filter-script">{JS}</script>
</body></html>
"""
