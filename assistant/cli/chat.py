"""``assistant chat``: a multi-turn REPL around ``Assistant.stream``.

One loop reads a line and hands it to ``ChatSession.handle``; commands start with ``/``.
Nothing a user types or a provider does ends the session with a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from assistant.answer.conversation import Conversation, Resolution, Turn
from assistant.answer.result import Answer, Citation
from assistant.cli import render
from assistant.cli.terminal import Waiting
from assistant.core import Assistant
from assistant.errors import AssistantError
from assistant.retrieval.hybrid import check_filters
from assistant.store.filters import add_filter, shown, split_filter
from assistant.text.latex import latex_to_text

HELP = """Commands:
  /help               this list
  /sources            sources of the last answer
  /show N             full abstract of citation [N]
  /explain            each sentence of the last answer: support score, closest cited sentence
  /reasoning          show a reasoning model's thinking before its answers (again: hide it)
  /k N                papers retrieved per question (now {k})
  /filter KEY=VALUE   only papers that match: author=NAME, title=WORDS, year=2024,
                      year>=2023, year<2023 (>, <=), year=2021..2023, venue=NAME,
                      doi=DOI, source_file=FILE;
                      /filter clear
  /provider NAME      extractive | openai | auto;  /model NAME  the chat model
  /new, /reset        forget the conversation: the next question searches every paper
                      (/save and /bib still write every answer)
  /save FILE          write the transcript as Markdown, with a reference list
                      (an existing FILE is kept unless you add --force)
  /bib FILE           write the papers cited so far as BibTeX (--force replaces FILE)
  /quit               leave (or Ctrl-D); Ctrl-C cancels an answer in progress
Anything else is a question. Follow-ups like "how does the second one work?" or "compare
them" search only the papers of the last answer (a line says so); a question that names its
own subject ("Which papers study Mamba, and what do they find?") searches them all."""


class ChatSession:
    def __init__(
        self,
        assistant: Assistant,
        console: Console,
        k: int | None = None,
        filters: dict[str, str] | None = None,
        status_console: Console | None = None,
    ):
        self.assistant = assistant
        self.console = console
        self.status_console = status_console  # where "waiting for the model…" goes, if anywhere
        self.k = k or assistant.settings.retrieval.k
        try:
            check_filters(filters)
        except ValueError as exc:
            raise AssistantError(str(exc)) from exc
        self.filters: dict[str, str] = dict(filters or {})
        self.conversation = Conversation()  # what follow-ups read; /new forgets it
        self.said: list[Turn] = []  # every answered turn: what /save and /bib write
        self.fresh_at: set[int] = set()  # turns (by index in ``said``) after a /new
        self.show_reasoning = False

    # -- output -----------------------------------------------------------------------------
    def header(self) -> str:
        info = self.assistant.store.counts()
        title = self.assistant.store.get_meta("title") or f"Abstracts in {self.assistant.store_dir}"
        return f"{title} · {info['papers']} papers · {self.provider_line()}"

    def provider_line(self) -> str:
        provider = self.assistant.provider
        if provider.name == "extractive":
            return "extractive (no LLM configured; set OPENAI_API_KEY or OPENAI_BASE_URL)"
        where = self.assistant.settings.openai_base_url
        return f"{provider.name}/{provider.model}" + (f" at {where}" if where else "")

    def say(self, message: str, style: str = "") -> None:
        self.console.print(Text(message, style=style))

    def waiting(self) -> Waiting:
        status = self.status_console
        live = status is not None and status.is_terminal and self.console.is_terminal
        return Waiting(status or self.console, live)

    # -- input ------------------------------------------------------------------------------
    def handle(self, line: str) -> bool:
        """Act on one line; False means the user asked to leave."""
        line = line.strip()
        if not line:
            return True
        if line.startswith("/"):
            return self.command(line)
        self.ask(line)
        return True

    def command(self, line: str) -> bool:
        name, _, arg = line.partition(" ")
        name, arg = name.lower(), arg.strip()
        if name in {"/quit", "/exit", "/q"}:
            return False
        actions: dict[str, Callable[[str], None]] = {
            "/help": lambda _: self.say(HELP.format(k=self.k)),
            "/sources": lambda _: self.show_sources(),
            "/show": self.show,
            "/k": self.set_k,
            "/filter": self.set_filter,
            "/provider": lambda a: self.switch(provider=a),
            "/model": lambda a: self.switch(model=a),
            "/reset": lambda _: self.reset(),
            "/new": lambda _: self.reset(),
            "/save": self.save,
            "/bib": self.save_bib,
            "/explain": self.explain,
            "/reasoning": lambda _: self.toggle_reasoning(),
        }
        action = actions.get(name)
        if action is None:
            self.say(f"unknown command {name}; type /help for the list", "yellow")
        else:
            action(arg)
        return True

    # -- questions --------------------------------------------------------------------------
    def ask(self, question: str) -> None:
        provider = self.assistant.provider
        with self.waiting() as waiting:
            if self.conversation.turns:
                waiting.stage("condensing")
            resolution = self._within_filters(
                question, self.conversation.resolve(question, provider.condense)
            )
            waiting.stop()
            filters: dict[str, object] = dict(self.filters)
            if resolution.note:
                self.say(f"({resolution.note}; /new searches every paper)", "dim")
            if resolution.papers:  # a follow-up: said in one line, with how to ask afresh
                filters["paper_id"] = [p.paper_id for p in resolution.papers]
                self.say(pinned_line(resolution.papers), "dim")
            elif resolution.query != question:
                self.say(f"(searching: {resolution.query})", "dim")
            pieces = self.assistant.stream(
                question,
                k=self.k,
                filters=filters,
                search_query=resolution.query,
                on_status=waiting.stage,
            )
            answer, streamed = render.stream_answer(
                self.console, pieces, waiting=waiting, show_reasoning=self.show_reasoning
            )
        render.checked_text(self.console, answer, streamed)
        render.support_lines(self.console, answer)
        line = render.sources_line(answer)
        if line:
            self.console.print(line)
        for warning in answer.warnings:
            self.say(f"warning: {warning}", "yellow")
        self.conversation.add(question, resolution.query, answer, resolution.papers)
        self.said.append(self.conversation.turns[-1])

    def _within_filters(self, question: str, resolution: Resolution) -> Resolution:
        """A follow-up pinned to earlier papers keeps those the chat's filters keep: a filter
        set since the answer may exclude them ("/filter year=2024", then "what do these
        find?"), and then the question is searched afresh under the filter, as asked."""
        if not self.filters or not resolution.papers:
            return resolution
        keep = self.assistant.store.matching(check_filters(self.filters))
        papers = [p for p in resolution.papers if p.paper_id in keep]
        if papers:
            return replace(resolution, papers=papers)
        self.say(
            f"(the earlier answer's papers do not match {_shown(self.filters)}: searching the "
            "papers that do)",
            "dim",
        )
        return Resolution(question)

    # -- commands ---------------------------------------------------------------------------
    def toggle_reasoning(self) -> None:
        self.show_reasoning = not self.show_reasoning
        if self.show_reasoning:
            self.say("a reasoning model's thinking is shown, dimmed, before its answers")
        else:
            self.say("reasoning hidden (the status line says while the model thinks)")

    def explain(self, arg: str = "") -> None:
        """Each sentence of the last answer: its support score and the closest cited sentence,
        as `ask --explain` prints them. An answer checked at answer time shows those checks;
        any other (an extractive one, or verification off) is checked now."""
        answer = self._last()
        if answer is None or answer.refused or not answer.citations:
            self.say("nothing to explain: /explain follows an answer that cites abstracts")
            return
        if not answer.checks:
            answer.checks = self.assistant.check(answer)
        render.support_lines(self.console, answer, explain=True)

    def _last(self) -> Answer | None:
        return self.conversation.turns[-1].answer if self.conversation.turns else None

    def show_sources(self) -> None:
        answer = self._last()
        if answer is None:
            self.say("no sources yet: ask a question first")
            return
        if not answer.citations:
            self.say("the last answer cites no abstract")
            return
        for c in answer.citations:
            paper = answer.paper_of(c)
            details = render.describe(paper) if paper else c.source
            self.say(f"[{c.n}] {latex_to_text(c.label)} · {details} (id {c.paper_id})")

    def show(self, arg: str) -> None:
        answer = self._last()
        citations = {c.n: c for c in answer.citations} if answer else {}
        number = arg.strip().strip("[]")
        if not number.isdigit() or int(number) not in citations:
            choices = ", ".join(f"[{n}]" for n in citations)
            if number.isdigit() and citations:
                self.say(
                    f"[{number}] is not cited by the last answer; it cites {choices}", "yellow"
                )
                return
            cited = choices or ("it cites none" if answer else "none yet")
            self.say(
                f"usage: /show N, where N is a citation of the last answer ({cited})", "yellow"
            )
            return
        c = citations[int(number)]
        paper = answer.paper_of(c) if answer else None
        self.console.print(Text(f"[{c.n}] {latex_to_text(c.label)}", style="bold cyan"))
        self.say(f"{render.describe(paper) if paper else c.source} · id {c.paper_id}", "dim")
        self.say(latex_to_text(c.text))

    def set_k(self, arg: str) -> None:
        if not arg.isdigit() or not 1 <= int(arg) <= 50:
            self.say("usage: /k N, with N from 1 to 50", "yellow")
            return
        self.k = int(arg)
        self.say(f"retrieving {self.k} papers per question")

    def set_filter(self, arg: str) -> None:
        if arg in {"clear", "off", "none"}:
            self.filters.clear()
            self.say("filters cleared")
            return
        if not arg:
            self.say(f"filters: {_shown(self.filters)}")
            return
        try:
            candidate = add_filter(self.filters, *split_filter(arg))
            check_filters(candidate)
        except ValueError as exc:
            self.say(str(exc), "yellow")
            return
        self.filters = candidate
        self.say(f"filters: {_shown(self.filters)}")

    def switch(self, provider: str | None = None, model: str | None = None) -> None:
        if provider is not None and provider not in {"auto", "extractive", "openai"}:
            self.say("usage: /provider extractive|openai|auto", "yellow")
            return
        if model is not None and not model:
            self.say(f"model: {self.assistant.provider.model}; usage: /model NAME", "yellow")
            return
        self.assistant.use_provider(provider=provider, model=model)
        self.say(f"now answering with {self.provider_line()}")

    def reset(self) -> None:
        """Follow-ups forget the answers so far; /save and /bib still write them."""
        self.conversation.reset()
        if self.said:
            self.fresh_at.add(len(self.said))
        self.say("conversation forgotten; the next question starts afresh")

    def save(self, arg: str) -> None:
        words = arg.split()
        force = "--force" in words
        name = " ".join(w for w in words if w != "--force")
        if not name:
            self.say("usage: /save FILE.md [--force]", "yellow")
            return
        path = Path(name).expanduser()
        try:
            # "x" mode: an existing file is never replaced unless asked to.
            with path.open("w" if force else "x", encoding="utf-8") as out:
                out.write(self.transcript())
        except FileExistsError:
            self.say(
                f"{path} exists; /save {name} --force replaces it, or pick a new name", "yellow"
            )
            return
        except OSError as exc:
            self.say(f"cannot write {path}: {exc.strerror or exc}", "yellow")
            return
        self.say(f"transcript saved to {path}")

    def save_bib(self, arg: str) -> None:
        """The papers cited in this conversation, as BibTeX."""
        from assistant.ingest.formats.bibtex_write import cited_papers, to_bibtex

        papers = cited_papers(turn.answer for turn in self.said)
        if not papers:
            self.say("no papers cited yet: ask a question first")
            return
        written = self._write_file(arg, "/bib FILE.bib [--force]", lambda: to_bibtex(papers))
        if written is not None:
            self.say(f"{len(papers)} cited paper(s) written to {written} as BibTeX")

    def _write_file(self, arg: str, usage: str, content: Callable[[], str]) -> Path | None:
        """Write ``content()`` to the file ``arg`` names; an existing one only with --force."""
        words = arg.split()
        force = "--force" in words
        name = " ".join(w for w in words if w != "--force")
        if not name:
            self.say(f"usage: {usage}", "yellow")
            return None
        path = Path(name).expanduser()
        command = usage.split()[0]
        try:
            with path.open("w" if force else "x", encoding="utf-8") as out:
                out.write(content())
        except FileExistsError:
            self.say(
                f"{path} exists; {command} {name} --force replaces it, or pick a new name", "yellow"
            )
            return None
        except OSError as exc:
            self.say(f"cannot write {path}: {exc.strerror or exc}", "yellow")
            return None
        return path

    def transcript(self) -> str:
        when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        lines = ["# Chat transcript", "", f"_{self.header()} · {when}_", ""]
        references: dict[str, str] = {}
        for i, turn in enumerate(self.said, start=1):
            if i - 1 in self.fresh_at:
                lines += ["_(/new: the questions below started afresh)_", ""]
            lines += [f"## {i}. {turn.question}", ""]
            if turn.search_query != turn.question:
                lines += [f"_Searched: {turn.search_query}_", ""]
            lines += [latex_to_text(turn.answer.text), ""]  # read as the terminal showed it
            if turn.answer.checks:  # what the checker found travels with the answer
                marks = " ".join(c.mark() for c in turn.answer.checks)
                lines += [f"_Checked: {marks} (a judgement, not a proof)_", ""]
                lines += [
                    f"- {c.mark()} {c.score:.2f} {c.sentence}"
                    + (" (source chosen by the checker)" if c.attributed else "")
                    for c in turn.answer.checks
                    if c.verdict != "supported" or c.attributed
                ]
                lines.append("")
            if turn.answer.citations:
                lines.append(
                    "Sources: " + "; ".join(_cited(turn.answer, c) for c in turn.answer.citations)
                )
                lines.append("")
            for c in turn.answer.citations:
                text = latex_to_text(c.text)
                about = render.described(turn.answer, c)
                references.setdefault(
                    c.paper_id,
                    f"- **{latex_to_text(c.label)}** — {about} — id `{c.paper_id}`  \n"
                    f"  {text[:300]}{'…' if len(text) > 300 else ''}",
                )
        if references:
            lines += ["## References", "", *references.values(), ""]
        return "\n".join(lines)


def pinned_line(papers: list[Citation]) -> str:
    """The one line that says a question was taken as a follow-up, and how to ask afresh."""
    names = ", ".join(latex_to_text(p.label) for p in papers)
    return (
        f"(a follow-up, searched in the last answer's {names} only; /new, or a question "
        "that names its subject, searches every paper)"
    )


def _cited(answer: Answer, citation: Citation) -> str:
    """'[1] KVFlow (004_cebd1b31328fe8e6.txt, abstract 2)': where a reader finds the paper."""
    paper = answer.paper_of(citation)
    where = paper.location if paper is not None else citation.source
    return f"[{citation.n}] {latex_to_text(citation.label)} ({where})"


def _shown(filters: dict[str, Any] | None) -> str:
    """year=2024, author=Okafor (or none)."""
    return shown(filters)


def line_reader(history_file: Path | None) -> Callable[[str], str]:
    """prompt_toolkit with a persistent history on a terminal; plain stdin otherwise."""
    if sys.stdin.isatty() and sys.stdout.isatty():
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory, InMemoryHistory

        history: FileHistory | InMemoryHistory = InMemoryHistory()
        if history_file is not None:
            history_file.parent.mkdir(parents=True, exist_ok=True)
            history = FileHistory(str(history_file))
        session: PromptSession[str] = PromptSession(history=history)
        return lambda prompt: session.prompt(prompt)

    def read(prompt: str) -> str:
        sys.stdout.write(prompt)
        sys.stdout.flush()
        raw = sys.stdin.buffer.readline()
        if not raw:
            raise EOFError
        return raw.decode("utf-8")

    return read


def run_chat(session: ChatSession, read_line: Callable[[str], str]) -> None:
    console = session.console
    console.print(Text(session.header(), style="bold"))
    console.print(Text("Ask a question, or /help. Ctrl-D to leave.", style="dim"))
    while True:
        try:
            line = read_line("> ")
        except EOFError:
            break
        except KeyboardInterrupt:
            continue
        except UnicodeDecodeError:
            session.say("that input is not valid UTF-8; please retype it", "yellow")
            continue
        try:
            if not session.handle(line):
                break
        except KeyboardInterrupt:
            console.print()
            session.say("(cancelled)", "dim")
        except AssistantError as exc:
            console.print()
            console.print(f"[bold red]error:[/] {escape(str(exc))}")
    session.say("bye", "dim")
