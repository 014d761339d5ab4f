"""The ``assistant`` command. Thin: it parses flags, calls ``Assistant``, prints.

Every domain error becomes one line on stderr and a non-zero exit, here and nowhere else.
Only click is imported up front: each command imports what it uses, so ``--help`` starts in a
fraction of the time that Chroma, the embedder and rich would take
(``tests/test_startup.py``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from assistant.errors import AssistantError

if TYPE_CHECKING:
    from rich.console import Console

    from assistant.answer.result import Answer
    from assistant.core import Assistant

F = TypeVar("F", bound=Callable[..., Any])


@cache
def err_console() -> Console:
    """Where errors, progress and status lines go (stderr), made on first use."""
    from rich.console import Console

    return Console(stderr=True, soft_wrap=True)


class _Group(click.Group):
    """Turns user-facing errors into one line and an exit status, never a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.NoSuchOption as exc:
            _filter_hint(exc)
            raise
        except AssistantError as exc:
            err_console().print(f"[bold red]error:[/] {exc}", highlight=False)
            sys.exit(1)
        except KeyboardInterrupt:
            err_console().print(
                "interrupted; run the same command again to finish (nothing is lost)"
            )
            sys.exit(130)


def _filter_hint(exc: click.NoSuchOption) -> None:
    """`search x --author Smith`: say how a filter is given, not click's nearest option name
    ("Did you mean '--store'?")."""
    from assistant.store.filters import FILTER_KEYS

    key = exc.option_name.lstrip("-").replace("-", "_")
    command = exc.ctx.command if exc.ctx is not None else None
    if key in FILTER_KEYS and command and any(p.name == "filters" for p in command.params):
        raise click.UsageError(
            f"No such option: {exc.option_name}. A filter is given as --filter {key}=VALUE "
            "(e.g. --filter author=Smith --filter year=2024; see --help)",
            exc.ctx,
        ) from None


def store_options(func: F) -> F:
    func = click.option(
        "--chroma-url",
        default=None,
        metavar="URL",
        help="Use a Chroma server (`chroma run`) instead of the embedded store.",
    )(func)
    func = click.option(
        "--store",
        type=click.Path(path_type=Path),
        default=None,
        help="Store folder [default: ASSISTANT_STORE__PATH, else the user data directory; "
        "`assistant info` prints it].",
    )(func)
    return func


def make_assistant(
    store: Path | None, chroma_url: str | None, **sections: dict[str, Any]
) -> Assistant:
    from assistant.core import Assistant
    from assistant.settings import load_settings

    overrides: dict[str, Any] = {k: v for k, v in sections.items() if v}
    store_cfg = {k: v for k, v in {"path": store, "chroma_url": chroma_url}.items() if v}
    if store_cfg:
        overrides["store"] = store_cfg
    return Assistant(load_settings(**overrides))


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="abstracts-assistant")
def main() -> None:
    """Ask questions about scientific paper abstracts; every claim cites its abstract."""
    for stream in (sys.stdout, sys.stderr):  # a non-UTF-8 terminal gets "?", not a traceback
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")


@main.command()
# readable=False: an unreadable file is reported by the ingest, beside the good files it
# still indexes, not refused here with a usage error that indexes nothing.
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path, readable=False))
@click.option(
    "--prune",
    is_flag=True,
    help="Remove papers that are not in PATHS (the store then mirrors exactly PATHS).",
)
@click.option(
    "--no-wait",
    is_flag=True,
    help="Fail at once (exit 1) when another ingest is writing to the store, instead of waiting.",
)
@click.option(
    "--rebuild",
    is_flag=True,
    help="Move the store's files aside (renamed, nothing deleted) and build it anew from PATHS: "
    "the remedy for a damaged catalog.",
)
@click.option(
    "--repair",
    is_flag=True,
    help="Read no input (not even the shipped corpus): re-embed lost vectors from the store's "
    "own copy, drop vectors of no paper, take out what an interrupted ingest left unfinished.",
)
@click.option(
    "--fast",
    is_flag=True,
    help="Build a new store ~4x faster (MiniLM in int8, each text alone, chunk vectors pooled "
    "from sentence vectors; SciFact nDCG@10 0.745, as the default). Later commands "
    "use it by themselves.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@store_options
def ingest(
    paths: tuple[Path, ...],
    prune: bool,
    no_wait: bool,
    rebuild: bool,
    repair: bool,
    fast: bool,
    as_json: bool,
    store: Path | None,
    chroma_url: str | None,
) -> None:
    """Index abstracts (.txt, .jsonl, .json, .csv/.tsv, .bib, .ris, .atom/.xml, folders);
    default: the shipped corpus.

    Re-running is cheap: only new or edited abstracts are embedded (moved lines are not),
    and an interrupted run is completed.
    """
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    from assistant.cli import render
    from assistant.cli.terminal import make_console

    if repair and (paths or prune or rebuild):
        raise click.UsageError("--repair reads no input: give it no PATHS, --prune or --rebuild")
    fast_embedder = {"provider": "minilm-fast"} if fast else {}
    with make_assistant(store, chroma_url, embedding=fast_embedder) as assistant:
        quiet = as_json or not err_console().is_terminal
        with Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=err_console(),
            disable=quiet,
            transient=True,
        ) as bar:
            task = bar.add_task("embedding papers", total=None)
            progress = lambda done, total: bar.update(task, completed=done, total=total)  # noqa: E731
            said = lambda message: err_console().print(message, highlight=False)  # noqa: E731
            if repair:
                report = assistant.repair(progress=progress, wait=not no_wait, on_wait=said)
            else:
                report = assistant.ingest(
                    list(paths) or None,
                    prune=prune,
                    progress=progress,
                    wait=not no_wait,
                    on_wait=said,
                    rebuild=rebuild,
                )
        if report.moved_aside:
            err_console().print(
                f"moved the old store's files to {report.moved_aside} (nothing deleted)",
                highlight=False,
                markup=False,
            )
        if fast and assistant.followed_embedder:
            report.warnings.append(
                f"--fast builds a new store; this one was built with {assistant.followed_embedder}"
                ", so its papers were embedded with that, as before (`assistant ingest --rebuild "
                "--fast` makes it anew in int8, the old files moved aside)"
            )
        for warning in report.warnings:
            err_console().print(f"[bold yellow]warning:[/] {escape(warning)}", highlight=False)
        for problem in report.problems:
            err_console().print(f"[bold red]error:[/] {problem}", highlight=False)
        if report.prune_skipped:
            err_console().print(
                "--prune skipped: some input could not be read, so nothing was removed; "
                "fix the errors above and run the command again",
                highlight=False,
            )
        if as_json:
            click.echo(json.dumps({**report.to_json(), "store": str(assistant.store_dir)}))
        elif repair:
            render.repair_summary(make_console(), report, _place(assistant))
        else:
            render.ingest_summary(make_console(), report, _place(assistant))
    if not report.ok:
        sys.exit(1)


def filter_option(func: F) -> F:
    return click.option(
        "--filter",
        "filters",
        multiple=True,
        metavar="KEY=VALUE",
        help="Only papers that match (repeatable): author=NAME (any author; case and accents "
        "ignored), title=WORDS, year=2024, year>=2023, year<2023 (>, <=), year=2021..2023, "
        "venue=NAME, doi=DOI, source_file=FILE.",
    )(func)


def parse_filters(values: tuple[str, ...]) -> dict[str, str]:
    """``--filter`` values as ``{key: value}`` (``year>=2023`` -> ``{"year": ">=2023"}``),
    checked: a bad key or value is one line, before anything is opened."""
    from assistant.store.filters import add_filter, filter_fields, shown, split_filter

    filters: dict[str, str] = {}
    try:
        for item in values:
            key, value = split_filter(item)
            added = add_filter(filters, key, value)
            if key in filters and added[key] == value:  # not two bounds making a range
                raise ValueError(
                    f"filter {key} is given twice ({shown({key: filters[key]})}, {item}): a search "
                    "takes one value per key (year>= and year< together make a range)"
                )
            filters = added
        filter_fields(filters)
    except ValueError as exc:
        raise AssistantError(str(exc)) from exc
    return filters


@main.command()
@click.argument("query")
@click.option("-k", "k", type=click.IntRange(1, 200), default=None, help="Papers to return.")
@filter_option
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object instead of text.")
@store_options
def search(
    query: str,
    k: int | None,
    filters: tuple[str, ...],
    as_json: bool,
    store: Path | None,
    chroma_url: str | None,
) -> None:
    """Find the papers most relevant to QUERY (hybrid dense + BM25)."""
    from assistant.cli import render
    from assistant.cli.terminal import make_console

    with make_assistant(store, chroma_url) as assistant:
        wanted = parse_filters(filters)
        hits = assistant.search(query, k=k, filters=wanted)
        close = assistant.close_to(query, hits)
        if as_json:
            found = {"query": query, "close": close, "hits": [h.to_json() for h in hits]}
            click.echo(json.dumps(found, ensure_ascii=False))
        else:
            render.hits_table(make_console(), query, hits, filters=wanted, close=close)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object instead of text.")
@click.option(
    "--check",
    is_flag=True,
    help="Exit 1 when papers, vectors and the lexical index disagree (0 when consistent).",
)
@store_options
def info(as_json: bool, check: bool, store: Path | None, chroma_url: str | None) -> None:
    """Where the store is, what it holds, and whether its indexes agree."""
    from rich.markup import escape

    from assistant.cli import render
    from assistant.cli.terminal import make_console

    with make_assistant(store, chroma_url) as assistant:
        details = assistant.info()
        if as_json:
            click.echo(json.dumps(details))
        else:
            render.info_table(make_console(), details)
        for problem in details["problems"]:
            err_console().print(f"[bold yellow]warning:[/] {escape(problem)}", highlight=False)
    if check and details["problems"]:
        sys.exit(1)


def llm_options(func: F) -> F:
    func = click.option(
        "--base-url",
        default=None,
        metavar="URL",
        help="An OpenAI-compatible server, e.g. http://127.0.0.1:11434/v1 (sets OPENAI_BASE_URL).",
    )(func)
    func = click.option(
        "--model",
        default=None,
        help="Chat model: NAME, or PROVIDER:NAME for any installed LangChain integration "
        "(e.g. anthropic:claude-3-5-haiku-latest, ollama:qwen2.5).",
    )(func)
    func = click.option(
        "--provider",
        type=click.Choice(["auto", "extractive", "openai"]),
        default=None,
        help="Who writes the answer [default: auto].",
    )(func)
    return func


def llm_overrides(
    provider: str | None,
    model: str | None,
    base_url: str | None,
    verify: bool | None = None,
    strict: bool = False,
    explain: bool = False,
) -> dict[str, Any]:
    """Settings the flags override; --strict and --explain switch verification on."""
    if verify is False and (strict or explain):
        flag = "--strict" if strict else "--explain"
        raise AssistantError(f"{flag} needs verification; leave out --no-verify")
    llm: dict[str, Any] = {k: v for k, v in {"provider": provider, "model": model}.items() if v}
    if verify is not None or strict or explain:
        llm["verify"] = "off" if verify is False else "on"
    if strict:
        llm["strict"] = True
    overrides: dict[str, Any] = {"llm": llm} if llm else {}
    if base_url:
        overrides["openai_base_url"] = base_url
    return overrides


@main.command()
@click.argument("question")
@click.option("-k", "k", type=click.IntRange(1, 50), default=None, help="Papers to retrieve.")
@filter_option
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object instead of text.")
@click.option("--no-stream", is_flag=True, help="Print the answer only when it is complete.")
@click.option(
    "--explain",
    is_flag=True,
    help="Print each sentence's support score and the closest sentence of what it cites.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="With a chat model: ask once more without the unsupported sentences, then drop what "
    "is still unsupported.",
)
@click.option(
    "--verify/--no-verify",
    default=None,
    help="Judge every sentence against its cited abstracts [default: with a chat model].",
)
@click.option(
    "--show-reasoning",
    is_flag=True,
    help="Print a reasoning model's thinking, dimmed, before its answer (--json always has it).",
)
@click.option(
    "--bib",
    "bib_file",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    metavar="FILE",
    help="Write the cited papers to FILE as BibTeX (replacing it), with DOI and URL when known.",
)
@llm_options
@store_options
def ask(
    question: str,
    k: int | None,
    filters: tuple[str, ...],
    as_json: bool,
    no_stream: bool,
    explain: bool,
    strict: bool,
    verify: bool | None,
    show_reasoning: bool,
    bib_file: Path | None,
    provider: str | None,
    model: str | None,
    base_url: str | None,
    store: Path | None,
    chroma_url: str | None,
) -> None:
    """Answer QUESTION from the abstracts, citing each claim like [1]."""
    from assistant.cli import render
    from assistant.cli.terminal import Waiting, make_console

    overrides = llm_overrides(provider, model, base_url, verify, strict, explain)
    with make_assistant(store, chroma_url, **overrides) as assistant:
        if as_json:
            result = assistant.ask(question, k=k, filters=parse_filters(filters))
            click.echo(json.dumps(result.to_json(), ensure_ascii=False))
            write_bib(bib_file, result)
            return
        console = make_console()
        with Waiting(err_console(), console.is_terminal and err_console().is_terminal) as waiting:
            pieces = assistant.stream(
                question, k=k, filters=parse_filters(filters), on_status=waiting.stage
            )
            answer, streamed = render.stream_answer(
                console, pieces, show=not no_stream, waiting=waiting, show_reasoning=show_reasoning
            )
        print_answer(console, answer, streamed, explain)
        write_bib(bib_file, answer)


def write_bib(path: Path | None, answer: Answer) -> None:
    """The answer's cited papers as BibTeX in ``path`` (nothing when no path was given)."""
    if path is None:
        return
    from assistant.ingest.formats.bibtex_write import cited_papers, to_bibtex

    papers = cited_papers([answer])
    try:
        path.write_text(to_bibtex(papers), encoding="utf-8")
    except OSError as exc:
        raise AssistantError(f"cannot write {path}: {exc.strerror or exc}") from exc
    err_console().print(
        f"{len(papers)} cited paper(s) written to {path} as BibTeX", highlight=False, markup=False
    )


def print_answer(console: Console, answer: Answer, streamed: bool, explain: bool = False) -> None:
    from assistant.cli import render

    render.checked_text(console, answer, streamed)
    console.print()
    render.support_lines(console, answer, explain)
    render.answer_footer(console, answer)


@main.command()
@click.option("-k", "k", type=click.IntRange(1, 50), default=None, help="Papers per question.")
@filter_option
@llm_options
@store_options
def chat(
    k: int | None,
    filters: tuple[str, ...],
    provider: str | None,
    model: str | None,
    base_url: str | None,
    store: Path | None,
    chroma_url: str | None,
) -> None:
    """Talk with the abstracts: follow-ups, /show N, /save FILE; /help lists commands."""
    import platformdirs

    from assistant.cli.chat import ChatSession, line_reader, run_chat
    from assistant.cli.terminal import make_console
    from assistant.settings import APP_NAME

    overrides = llm_overrides(provider, model, base_url)
    with make_assistant(store, chroma_url, **overrides) as assistant:
        assistant.require_papers()
        session = ChatSession(
            assistant,
            make_console(),
            k=k,
            filters=parse_filters(filters),
            status_console=err_console(),
        )
        history = Path(platformdirs.user_data_dir(APP_NAME)) / "chat_history"
        run_chat(session, line_reader(history))


@main.group(name="eval", invoke_without_command=True)
@click.option(
    "--set",
    "eval_set",
    type=click.Path(path_type=Path),
    default=None,
    help="Eval set (JSONL) [default: the shipped NeurIPS 2025 set, evals/neurips2025.jsonl].",
)
@click.option(
    "--judge",
    type=click.Choice(["offline", "llm"]),
    default="offline",
    help="Who decides whether a claim is supported [default: offline].",
)
@click.option("--limit", type=click.IntRange(1), default=None, help="Only the first N questions.")
@click.option(
    "--verify/--no-verify",
    default=None,
    help="Judge each answer sentence at answer time [default: with a chat model]; run both and "
    "--compare to see what verification changes.",
)
@click.option("--strict", is_flag=True, help="Answer in strict mode (see `assistant ask --help`).")
@click.option(
    "--split",
    type=click.Choice(["tune", "dev", "test"]),
    default=None,
    help="Only one split: tune and dev were fitted on, test is reported [default: all].",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 32),
    default=None,
    help="Questions in flight at once [default: 1 offline, 4 with an LLM].",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Run folder [default: evals/runs/<timestamp>].",
)
@click.option(
    "--resume",
    type=click.Path(path_type=Path, exists=True, file_okay=False),
    default=None,
    help="Finish an interrupted run in this folder.",
)
@click.option(
    "--compare",
    "compare_runs",
    nargs=2,
    type=click.Path(path_type=Path),
    default=None,
    metavar="A B",
    help="Compare two runs (results.json or folders).",
)
@click.option(
    "--fail-under",
    "fail_under",
    multiple=True,
    metavar="METRIC=VALUE",
    help="Exit 1 when METRIC is below VALUE (repeatable), e.g. faithfulness=0.9.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the aggregate as JSON.")
@llm_options
@store_options
@click.pass_context
def eval_command(
    ctx: click.Context,
    eval_set: Path | None,
    judge: str,
    limit: int | None,
    verify: bool | None,
    strict: bool,
    split: str | None,
    workers: int | None,
    out_dir: Path | None,
    resume: Path | None,
    compare_runs: tuple[Path, Path] | None,
    fail_under: tuple[str, ...],
    as_json: bool,
    provider: str | None,
    model: str | None,
    base_url: str | None,
    store: Path | None,
    chroma_url: str | None,
) -> None:
    """Score answers: retrieval, faithfulness, citations, relevance, refusals, cost.

    Writes evals/runs/<timestamp>/ with results.json, report.md and report.html.
    """
    if ctx.invoked_subcommand is not None:
        return
    from assistant.cli.terminal import make_console
    from assistant.eval import runner

    if compare_runs:
        runner.print_comparison(make_console(), *compare_runs, as_json=as_json)
        return
    _check_run_folder(out_dir, resume)
    overrides = llm_overrides(provider, model, base_url, verify, strict)
    with make_assistant(store, chroma_url, **overrides) as assistant:
        ok = runner.run(
            assistant,
            make_console(),
            err_console(),
            eval_set=eval_set,
            judge_name=judge,
            limit=limit,
            split=split,
            workers=workers,
            out_dir=out_dir,
            resume=resume,
            fail_under=fail_under,
            as_json=as_json,
        )
    if not ok:
        sys.exit(1)


def _check_run_folder(out_dir: Path | None, resume: Path | None) -> None:
    """A run folder is new, or resumed on purpose: answers already in a folder given to --out
    would be kept as this run's (a run resumes from them), answered by other code or another
    model without a word."""
    if out_dir is not None and resume is not None:
        raise click.UsageError("give --out (a new run) or --resume (an interrupted one), not both")
    if out_dir is not None and (out_dir / "answers.jsonl").is_file():
        raise click.UsageError(
            f"{out_dir} already holds a run's answers: --resume {out_dir} finishes that run; "
            "give --out a new folder to answer afresh"
        )


@eval_command.command()
@click.option(
    "--pairs",
    "pairs_file",
    type=click.Path(path_type=Path),
    required=True,
    help='JSONL rows {"claim", "evidence": [...], "label": "supported"|"not_supported"}.',
)
@click.option("--judge", type=click.Choice(["offline", "llm"]), default="offline")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@llm_options
def calibrate(
    pairs_file: Path,
    judge: str,
    as_json: bool,
    provider: str | None,
    model: str | None,
    base_url: str | None,
) -> None:
    """How well a judge agrees with human labels (balanced accuracy, AUC, confusion)."""
    from assistant.cli.terminal import make_console
    from assistant.eval import runner
    from assistant.settings import load_settings

    settings = load_settings(**llm_overrides(provider, model, base_url))
    runner.print_calibration(make_console(), settings, pairs_file, judge, as_json)


def _place(assistant: Assistant) -> str:
    """Where an ingest wrote: the store folder, or the Chroma server (the folder is its cache)."""
    cfg = assistant.settings.store
    if cfg.chroma_url:
        return f"the Chroma server at {cfg.chroma_url} (collection {cfg.collection})"
    return str(assistant.store_dir)
