"""Writing a run: ``results.json`` (per question and aggregate), ``report.md`` and a
self-contained ``report.html`` with plots drawn as inline SVG (no plotting dependency)."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

from assistant.eval.harness import METRICS
from assistant.eval.reader import LOWER_IS_BETTER
from assistant.text import printable

_BAR_W, _ROW_H = 360, 22
COUNTS = frozenset({"answer_sentences", "answer_tokens"})  # means of counts, not shares


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _count(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f}"


def _md(value: Any) -> str:
    """Text for a Markdown table cell: HTML escaped (Markdown renders raw HTML), Markdown
    punctuation backslash-escaped, one line, no control characters."""
    text = " ".join(printable(str(value)).split())
    text = html.escape(text, quote=False)
    return re.sub(r"([\\`*_\[\]|~])", r"\\\1", text)


def write_results(
    run_dir: Path, meta: dict[str, Any], aggregate: dict[str, Any], rows: list[dict[str, Any]]
) -> Path:
    path = run_dir / "results.json"
    payload = {"run": meta, "aggregate": aggregate, "questions": rows}
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (run_dir / "report.md").write_text(markdown(meta, aggregate, rows), encoding="utf-8")
    (run_dir / "report.html").write_text(html_report(meta, aggregate, rows), encoding="utf-8")
    return path


def milliseconds(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f} ms"


def dollars(value: float | None) -> str:
    if value is None:
        return "–"
    if value == 0:
        return "$0"
    return f"${value:,.2f}" if abs(value) >= 1 else f"${value:.2g}"


def tokens(prompt: int, completion: int, estimated: bool) -> str:
    """'12,345 + 678', with '≈' when some counts are tiktoken estimates."""
    return f"{'≈' if estimated else ''}{prompt:,} + {completion:,}"


def metric_label(name: str) -> str:
    """A metric's name, marked when a smaller value is the better one."""
    return f"{name} (lower is better)" if name in LOWER_IS_BETTER else name


def _refused(row: dict[str, Any]) -> str:
    """The refused column: yes, no, or "no answer" (an empty or reasoning-only reply)."""
    if row.get("error"):
        return "no answer"
    return "yes" if row["refused"] else "no"


def summary_rows(aggregate: dict[str, Any]) -> list[tuple[str, str]]:
    rows = [(metric_label(name), metric_value(name, aggregate.get(name))) for name in METRICS]
    if aggregate.get("no_answer"):  # counted apart: in no metric above
        rows.insert(0, ("replies with no answer (not in the metrics)", str(aggregate["no_answer"])))
    p50, p95 = aggregate.get("latency_p50_ms"), aggregate.get("latency_p95_ms")
    rows += [
        ("latency p50 / p95", f"{milliseconds(p50)} / {milliseconds(p95)}"),
        (
            "tokens (prompt + completion)",
            tokens(
                aggregate.get("prompt_tokens", 0),
                aggregate.get("completion_tokens", 0),
                bool(aggregate.get("tokens_estimated")),
            ),
        ),
        ("estimated cost", dollars(aggregate.get("cost_usd"))),
    ]
    return rows


def metric_value(name: str, value: Any, signed: bool = False) -> str:
    """One aggregate figure as a reader wants it: 0.804, 178 ms, $0.0012 (+12 ms as a delta)."""
    if value is None:
        return "–"
    if name.endswith("_ms"):
        text = milliseconds(abs(value))
    elif name == "cost_usd":
        text = dollars(abs(value))
    elif name in COUNTS:
        text = f"{abs(value):.1f}"
    else:
        text = f"{abs(value):.3f}"
    return ("-" if value < 0 else "+" if signed and value > 0 else "") + text


def markdown(meta: dict[str, Any], aggregate: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    lines = [
        f"# Eval run {_md(meta.get('started', ''))}",
        "",
        f"Eval set {_md(meta.get('eval_set'))} · {aggregate['questions']} questions · "
        f"provider {_md(meta.get('provider'))}/{_md(meta.get('model'))} · "
        f"judge {_md(meta.get('judge'))}",
        "",
        "| metric | value |",
        "|---|---|",
    ]
    lines += [f"| {name} | {value} |" for name, value in summary_rows(aggregate)]
    lines += [
        "",
        "## Questions",
        "",
        "| id | type | refused | faithfulness | citation F1 | correctness | nDCG@10 | "
        "cited precision | sentences | cited |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        m = r["metrics"]
        cited = _md(", ".join(r["cited"]))
        lines.append(
            f"| {_md(r['id'])} | {_md(r['type'])} | {_refused(r)} | "
            f"{_fmt(m.get('faithfulness'))} | {_fmt(m.get('citation_f1'))} | "
            f"{_fmt(m.get('correctness'))} | {_fmt(m.get('ndcg@10'))} | "
            f"{_fmt(m.get('cited_precision'))} | {_count(m.get('answer_sentences'))} | {cited} |"
        )
    return "\n".join(lines) + "\n"


def _bars(values: list[tuple[str, float | None]]) -> str:
    height = _ROW_H * len(values) + 10
    parts = [f'<svg width="{_BAR_W + 260}" height="{height}" role="img">']
    for i, (name, value) in enumerate(values):
        y = i * _ROW_H + 5
        width = int((value or 0) * _BAR_W)
        parts.append(
            f'<text x="0" y="{y + 15}" font-size="13">{html.escape(name)}</text>'
            f'<rect x="180" y="{y + 3}" width="{_BAR_W}" height="15" fill="#eee"/>'
            f'<rect x="180" y="{y + 3}" width="{width}" height="15" fill="#4878d0"/>'
            f'<text x="{190 + _BAR_W}" y="{y + 15}" font-size="13">{_fmt(value)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _histogram(values: list[float], label: str, bins: int = 12) -> str:
    if not values:
        return f"<p>No {html.escape(label)} recorded.</p>"
    lo, hi = min(values), max(values)
    span = (hi - lo) or 1.0
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, int((v - lo) / span * bins))] += 1
    top = max(counts)
    w, h = 30, 120
    parts = [f'<svg width="{bins * w + 20}" height="{h + 40}" role="img">']
    for i, c in enumerate(counts):
        bar = int(c / top * h)
        parts.append(
            f'<rect x="{i * w + 10}" y="{h - bar + 5}" width="{w - 4}" height="{bar}" '
            f'fill="#ee854a"><title>{c}</title></rect>'
        )
    parts.append(
        f'<text x="10" y="{h + 25}" font-size="12">{html.escape(label)}: '
        f"{lo:.0f} … {hi:.0f}</text></svg>"
    )
    return "".join(parts)


def html_report(meta: dict[str, Any], aggregate: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    esc = html.escape
    table = "".join(
        f"<tr><td>{esc(n)}</td><td>{esc(v)}</td></tr>" for n, v in summary_rows(aggregate)
    )
    questions = []
    for r in rows:
        m = r["metrics"]
        questions.append(
            f"<tr><td>{esc(r['id'])}</td><td>{esc(r['type'])}</td><td>{esc(r['question'])}</td>"
            f"<td>{_refused(r)}</td><td>{_fmt(m.get('faithfulness'))}</td>"
            f"<td>{_fmt(m.get('citation_f1'))}</td><td>{_fmt(m.get('correctness'))}</td>"
            f"<td>{_fmt(m.get('ndcg@10'))}</td><td>{esc(', '.join(r['cited']))}</td>"
            f"<td><details><summary>answer</summary>{esc(r['answer'])}</details></td></tr>"
        )
    shares = [name for name in METRICS if name not in COUNTS]
    bars = _bars([(metric_label(name), aggregate.get(name)) for name in shares])
    latency = _histogram([r["latency_ms"] for r in rows], "latency (ms)")
    tokens = _histogram(
        [r["prompt_tokens"] + r["completion_tokens"] for r in rows], "tokens per question"
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Eval {esc(str(meta.get("started")))}</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em;max-width:1200px}}
table{{border-collapse:collapse}}td,th{{border:1px solid #ddd;padding:4px 8px;font-size:13px;
vertical-align:top}}th{{background:#f4f4f4}}</style></head><body>
<h1>Eval run {esc(str(meta.get("started")))}</h1>
<p>Eval set <code>{esc(str(meta.get("eval_set")))}</code> · {aggregate["questions"]} questions ·
provider {esc(str(meta.get("provider")))}/{esc(str(meta.get("model")))} ·
judge {esc(str(meta.get("judge")))}</p>
<h2>Metrics</h2>{bars}
<table>{table}</table>
<h2>Latency and tokens</h2>{latency} {tokens}
<h2>Questions</h2>
<table><tr><th>id</th><th>type</th><th>question</th><th>refused</th><th>faithfulness</th>
<th>citation F1</th><th>correctness</th><th>nDCG@10</th><th>cited</th><th>answer</th></tr>
{"".join(questions)}</table></body></html>
"""
