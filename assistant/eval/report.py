"""Writing a run: ``results.json`` (per question and aggregate), ``report.md`` and the
self-contained ``report.html`` (``report_html.py``)."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

from assistant.eval.formats import metric_label, metric_value, share, summary_rows
from assistant.eval.outcomes import tags_of
from assistant.eval.report_html import html_report
from assistant.text.normalise import printable

__all__ = ["markdown", "metric_label", "metric_value", "summary_rows", "write_results"]


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


def _refused(row: dict[str, Any]) -> str:
    """The refused column: yes, no, or "no answer" (an empty or reasoning-only reply)."""
    if row.get("error"):
        return "no answer"
    return "yes" if row["refused"] else "no"


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
        "| id | split | type | refused | failures | faithfulness | citation F1 | correctness | "
        "nDCG@10 | cited precision | sentences | cited |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        m = r["metrics"]
        cited = _md(", ".join(r["cited"]))
        failed = _md(", ".join(tag.text for tag in tags_of(r))) or "–"
        lines.append(
            f"| {_md(r['id'])} | {_md(r.get('split', '–'))} | {_md(r['type'])} | {_refused(r)} | "
            f"{failed} | {share(m.get('faithfulness'))} | {share(m.get('citation_f1'))} | "
            f"{share(m.get('correctness'))} | {share(m.get('ndcg@10'))} | "
            f"{share(m.get('cited_precision'))} | {_count(m.get('answer_sentences'))} | {cited} |"
        )
    return "\n".join(lines) + "\n"
