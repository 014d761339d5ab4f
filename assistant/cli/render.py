"""Human-readable terminal output (rich). JSON output is built by the commands themselves."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from assistant.answer.llm.reply import Reasoning
from assistant.answer.result import CANNOT_ANSWER, Answer, Citation, Usage
from assistant.cli.terminal import Waiting, WordWrapper
from assistant.ingest.corpus import Paper
from assistant.ingest.pipeline import IngestReport
from assistant.retrieval.hybrid import Hit
from assistant.store.filters import shown
from assistant.text.latex import LatexStream, latex_to_text
from assistant.text.markdown import MarkdownStream, markdown_to_text


def describe(paper: Paper) -> str:
    """What a reader needs to recognise and find a paper besides its label: the title (when the
    label is not already it), authors, year, venue, then the URL or file and position."""
    title = paper.title if paper.title and paper.title != paper.label else ""
    return latex_to_text(" · ".join(p for p in (title, paper.byline, paper.reference) if p))


def repair_summary(console: Console, report: IngestReport, store: str) -> None:
    """What ``ingest --repair`` did, in its own words (it reads no file)."""
    done = [
        f"{report.repaired} {'paper' if report.repaired == 1 else 'papers'} whose vectors "
        "were gone embedded again from the store's copy"
        if report.repaired
        else "",
        f"{report.recovered} unfinished from an interrupted run settled"
        if report.recovered
        else "",
        f"{report.dropped} {'vector' if report.dropped == 1 else 'vectors'} of papers not in "
        "the catalog removed"
        if report.dropped
        else "",
    ]
    if not any(done):
        console.print(f"Nothing to repair in [cyan]{escape(store)}[/]: every paper is whole.")
        return
    console.print(
        f"[bold green]Repaired[/] [cyan]{escape(store)}[/]: "
        + ", ".join(d for d in done if d)
        + f" ({report.chunks_written} {'chunk' if report.chunks_written == 1 else 'chunks'}"
        " written)"
    )


def ingest_summary(console: Console, report: IngestReport, store: str) -> None:
    if not report.created:
        console.print(f"Nothing to ingest: no store was created in [cyan]{escape(store)}[/].")
        return
    console.print(
        f"[bold green]Ingested[/] {report.files} file(s) into [cyan]{escape(store)}[/]: "
        f"{report.added} added, {report.updated} updated, {report.unchanged} unchanged"
        + (f" ({report.edited} with edited details)" if report.edited else "")
        + f", {report.removed} removed ({report.chunks_written} "
        f"{'chunk' if report.chunks_written == 1 else 'chunks'} written"
        + (f", {report.duplicates} duplicate(s) skipped" if report.duplicates else "")
        + (
            f", {report.recovered} unfinished from an interrupted run repaired"
            if report.recovered
            else ""
        )
        + (f", {report.repaired} repaired whose vectors were gone" if report.repaired else "")
        + ")"
    )


def hits_table(
    console: Console,
    query: str,
    hits: list[Hit],
    width: int = 320,
    filters: Mapping[str, Any] | None = None,
    close: bool = True,
) -> None:
    """The hits; ``close``: whether any is close enough to the query to answer from (when
    none is, a line says they are only the nearest, as ``ask`` would refuse)."""
    if not hits:  # a search returns every paper a filter keeps, up to k: none was kept
        console.print(
            f"No paper in the store matches {escape(shown(filters))}."
            if filters
            else f"No papers found for [bold]{escape(query)}[/]."
        )
        return
    papers = "1 paper" if len(hits) == 1 else f"{len(hits)} papers"
    console.print(f"[bold]{papers} for[/] {escape(query)}\n")
    if not close:
        console.print(
            "[yellow]None of these is close to the query: they are only the nearest papers"
            + (" the filter keeps.[/]\n" if filters else " in the store.[/]\n")
        )
    for hit in hits:
        head = Text.assemble(
            (f"[{hit.rank}] ", "bold cyan"),
            (latex_to_text(hit.label), "bold"),
        )  # no score: fused z-scores mean nothing to a reader (--json keeps them)
        console.print(head)
        console.print(Padding(Text(describe(hit.paper), style="dim"), (0, 0, 0, 4), expand=False))
        passage = snippet(hit, width)
        console.print(Padding(Text(passage), (0, 0, 0, 4), expand=False), style="default")
        console.print()


def snippet(hit: Hit, width: int) -> str:
    """The matching passage as readable text, without the title the line above already shows
    (a paper's first chunk starts with it), cut at ``width`` characters."""
    chunk = latex_to_text(hit.chunk)
    title = latex_to_text(hit.paper.title or "")
    if title and chunk.startswith(title):
        chunk = chunk[len(title) :].lstrip(" .:\n")
    return chunk if len(chunk) <= width else chunk[: width - 1] + "…"


def info_table(console: Console, info: dict[str, Any]) -> None:
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    for key, value in info.items():
        if key != "problems":  # printed as warnings, one a line
            table.add_row(key, "unreadable" if value is None else str(value))
    console.print(table)


_MARK = re.compile(r"\[\d+\]")


def highlight_citations(text: str) -> Text:
    out = Text(text)
    out.highlight_regex(_MARK, "bold cyan")
    return out


def described(answer: Answer, citation: Citation) -> str:
    """The cited paper as ``describe`` gives it, or its source when the answer lacks it."""
    paper = answer.paper_of(citation)
    return describe(paper) if paper is not None else citation.source


def sources_line(answer: Answer) -> Text:
    if not answer.citations:
        return Text("")
    parts = [f"[{c.n}] {latex_to_text(c.label)} · {described(answer, c)}" for c in answer.citations]
    line = Text("Sources: ", style="bold")
    line.append(("\n" + " " * len("Sources: ")).join(parts))  # one source per line
    line.highlight_regex(_MARK, "bold cyan")
    return line


def stream_answer(
    console: Console,
    pieces: Iterable[str | Reasoning | Answer],
    show: bool = True,
    waiting: Waiting | None = None,
    show_reasoning: bool = False,
) -> tuple[Answer, bool]:
    """Print text pieces as they arrive (LaTeX as text, markdown made plain, wrapped between
    words on a terminal, citations highlighted); return the checked Answer and whether anything
    was streamed. ``waiting``'s status line is taken down before the first text is printed.
    A reasoning model's thinking is printed dimmed and apart with ``show_reasoning``; without
    it, the status line says the model is thinking."""
    answer: Answer | None = None
    streamed = False
    latex, markdown = LatexStream(), MarkdownStream()
    wrapper = WordWrapper(None if console.soft_wrap else console.width)
    thinking = ReasoningPrinter(console) if show_reasoning else None

    def write(text: str) -> None:
        if text:
            console.print(highlight_citations(text), end="", soft_wrap=True)

    finished = False
    try:
        for piece in pieces:
            if isinstance(piece, Answer):
                answer = piece
            elif isinstance(piece, Reasoning):
                if piece.retracts and streamed:
                    console.print(Text("\n(the text above was the model's reasoning)", "dim"))
                    latex, markdown = LatexStream(), MarkdownStream()
                    wrapper = WordWrapper(None if console.soft_wrap else console.width)
                    streamed = False
                if thinking is not None and show:
                    if waiting is not None:
                        waiting.stop()
                    thinking.feed(piece.text)
            elif show:
                if waiting is not None:
                    waiting.stop()
                if thinking is not None:
                    thinking.close()
                write(wrapper.feed(markdown.feed(latex.feed(piece))))
                streamed = True
        finished = True
    finally:  # also when the stream fails or is cancelled: show what did arrive
        if waiting is not None:
            waiting.stop()
        if thinking is not None:
            thinking.close()
        write(wrapper.feed(markdown.feed(latex.flush()) + markdown.flush()) + wrapper.flush())
        if streamed and not finished:  # the error line that follows starts a line of its own
            console.print()
    if answer is None:
        raise RuntimeError("the answer stream ended without an Answer")
    return answer, streamed


class ReasoningPrinter:
    """The model's reasoning, dimmed, under a "thinking:" heading, ended by a blank line."""

    def __init__(self, console: Console):
        self.console = console
        self.open = False
        self.done = False

    def feed(self, text: str) -> None:
        if self.done or not text:
            return
        if not self.open:
            self.console.print(Text("thinking:", style="dim italic"))
            self.open = True
            text = text.lstrip()
        self.console.print(Text(text, style="dim"), end="", soft_wrap=True)

    def close(self) -> None:
        if self.open and not self.done:
            self.console.print("\n")
        self.done = True


def checked_text(console: Console, answer: Answer, streamed: bool) -> None:
    """After streaming: reprint the answer only when the checked text differs from what was
    streamed (a refusal, or markers removed); print it when nothing was streamed."""
    rewritten = any(
        w.startswith("removed citation") or "the checker attributed" in w or "cited no source" in w
        for w in answer.warnings
    )
    if streamed:
        console.print()
        if answer.refused and not rewritten and answer.text.startswith(CANNOT_ANSWER):
            # The refusal itself was streamed: add only the nearest papers, once.
            rest = answer.text[len(CANNOT_ANSWER) :].strip()
            if rest:
                console.print(Text(latex_to_text(rest)))
            return
        if not (answer.refused or rewritten):
            return
        console.print(Text("checked answer:", style="bold"))
    console.print(highlight_citations(markdown_to_text(latex_to_text(answer.text))))


def support_lines(console: Console, answer: Answer, explain: bool = False) -> None:
    """The judge's mark for each sentence (✓ supported, ? weak, ✗ unsupported; + ? x where the
    terminal is not UTF-8), then the sentences that are not supported, or, with ``explain``,
    every sentence with its score and the closest sentence of what it cites. When an exact
    check decided (a number no source gives, another paper's name, a negation), it is said."""
    if not answer.checks:
        return
    unicode = (console.encoding or "").lower().replace("-", "") == "utf8"
    marks = " ".join(c.mark(unicode) for c in answer.checks)
    weak = [c for c in answer.checks if c.verdict != "supported"]
    summary = f"{len(weak)} of {len(answer.checks)} not supported" if weak else "all supported"
    console.print(Text(f"Checked: {marks} ({summary}; a judgement, not a proof)", style="dim"))
    attributed = [c for c in answer.checks if c.attributed and c not in weak]
    for check in answer.checks if explain else [*weak, *attributed]:
        by = " (source chosen by the checker)" if check.attributed else ""
        sentence = markdown_to_text(check.sentence)
        console.print(
            Text(f"  {check.mark(unicode)} {check.score:.2f} {sentence}{by}", style="dim")
        )
        if check.reason:
            console.print(Text(f"      why: {latex_to_text(check.reason)}", style="dim"))
        if explain and check.evidence:
            console.print(Text(f"      closest: {latex_to_text(check.evidence)}", style="dim"))


def answer_footer(console: Console, answer: Answer) -> None:
    """Everything after the answer text: sources, warnings, the provider's notice, usage."""
    line = sources_line(answer)
    if line:
        console.print(line)
    for warning in answer.warnings:
        console.print(Text(f"warning: {markdown_to_text(latex_to_text(warning))}", style="yellow"))
    if answer.notice and not answer.refused:
        console.print(Text(answer.notice, style="dim"))
    usage = answer.usage
    cost = f", ~${usage.cost_usd:.5f}" if usage.cost_usd else ""
    tokens = f", {token_counts(usage)} tokens" if usage.prompt_tokens else ""
    console.print(
        Text(
            f"{answer.provider}/{answer.model}, {answer.latency_ms / 1000:.1f} s{tokens}{cost}",
            style="dim",
        )
    )


def token_counts(usage: Usage) -> str:
    """'1234+56', or '≈1234+56' when the counts are tiktoken estimates (no usage from the
    server)."""
    return f"{'≈' if usage.estimated else ''}{usage.prompt_tokens}+{usage.completion_tokens}"
