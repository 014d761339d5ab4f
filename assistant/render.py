"""Human-readable terminal output (rich). JSON output is built by the commands themselves."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from assistant.ingest import IngestReport
from assistant.retrieval import Hit


def short_source(source: str) -> str:
    """'004_cebd1b31328fe8e6.txt#2' -> '004_cebd….txt#2' for narrow terminals."""
    name, _, pos = source.rpartition("#")
    stem, dot, ext = name.rpartition(".")
    if len(stem) > 12:
        stem = stem[:8] + "…"
    return f"{stem}{dot}{ext}#{pos}" if pos else source


def ingest_summary(console: Console, report: IngestReport, store: str) -> None:
    console.print(
        f"[bold green]Ingested[/] {report.files} file(s) into [cyan]{escape(store)}[/]: "
        f"{report.added} added, {report.updated} updated, {report.unchanged} unchanged, "
        f"{report.removed} removed ({report.chunks_written} chunks written"
        + (f", {report.duplicates} duplicate(s) skipped" if report.duplicates else "")
        + (
            f", {report.recovered} unfinished from an interrupted run repaired"
            if report.recovered
            else ""
        )
        + ")"
    )


def hits_table(console: Console, query: str, hits: list[Hit], width: int = 320) -> None:
    if not hits:
        console.print(
            f"No papers found for [bold]{escape(query)}[/]. Is the store empty? "
            "Run `assistant ingest`."
        )
        return
    console.print(f"[bold]{len(hits)} papers for[/] {escape(query)}\n")
    for hit in hits:
        head = Text.assemble(
            (f"[{hit.rank}] ", "bold cyan"),
            (hit.label, "bold"),
            ("  " + short_source(hit.source), "dim"),
            (f"  score {hit.score:.4f}", "dim"),
        )
        console.print(head)
        passage = hit.chunk if len(hit.chunk) <= width else hit.chunk[: width - 1] + "…"
        console.print(Text(passage), style="default", soft_wrap=False)
        console.print()


def info_table(console: Console, info: dict[str, Any]) -> None:
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    for key, value in info.items():
        table.add_row(key, str(value))
    console.print(table)
