"""What `assistant eval` does around the harness: folders, progress, printing, thresholds."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn
from rich.table import Table

from assistant.core import Assistant
from assistant.errors import AssistantError, InputFileError
from assistant.eval.compare import compare, failures, load_results, parse_thresholds
from assistant.eval.dataset import load_eval_set
from assistant.eval.formats import NOT_MEASURED, metric_label, metric_value, summary_rows
from assistant.eval.harness import aggregate, run_eval
from assistant.eval.report import write_results
from assistant.judge.calibration import JSON_FIELDS, calibrate, load_pairs
from assistant.judge.judges import make_judge
from assistant.resources import default_eval_set
from assistant.settings import Settings

RUNS = Path("evals") / "runs"  # under the current directory, where the user looks


def run(
    assistant: Assistant,
    console: Console,
    err: Console,
    *,
    eval_set: Path | None,
    judge_name: str,
    limit: int | None,
    split: str | None,
    workers: int | None,
    out_dir: Path | None,
    resume: Path | None,
    fail_under: tuple[str, ...],
    as_json: bool,
) -> bool:
    """Run (or resume) an eval; print the summary; False when a --fail-under threshold fails."""
    thresholds = parse_thresholds(fail_under)
    assistant.require_papers()  # a missing or empty store is said before a run folder is made
    path = eval_set or default_eval_set()
    items = [i for i in load_eval_set(path) if split in (None, i.split)][:limit]
    if not items:
        raise InputFileError(str(path), f"no questions in split {split!r} (its 'split' fields)")
    _check_gold_papers(assistant, items, str(path), err)
    judge = make_judge(judge_name, assistant.settings, assistant.embedder)
    remote = assistant.provider.name != "extractive" or judge_name == "llm"
    started = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    run_dir = resume or out_dir or RUNS / started
    meta = {
        "started": started,
        "eval_set": str(path),
        "questions": len(items),
        "split": split or "all",
        "provider": assistant.provider.name,
        "model": assistant.provider.model,
        "judge": judge_name,
        "store": str(assistant.store_dir),
        "embedder": assistant.embedder.name,
    }
    _same_answerer(run_dir, meta, resumed=resume is not None)
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err,
        disable=as_json or not err.is_terminal,
        transient=True,
    ) as bar:
        task = bar.add_task("answering and judging", total=len(items))
        rows = run_eval(
            assistant,
            items,
            judge,
            run_dir,
            workers or (4 if remote else 1),
            progress=lambda done, total: bar.update(task, completed=done),
        )
    totals = aggregate(rows)
    judged = getattr(judge, "usage", None)  # an LLM judge's own tokens (this run's questions)
    if judged is not None:
        meta["judge_usage"] = judged.to_json()
    results = write_results(run_dir, meta, totals, rows)
    failed = failures(totals, thresholds)
    if as_json:
        console.print_json(
            json.dumps({"run_dir": str(run_dir), "aggregate": totals, "failed": failed})
        )
    else:
        table = Table(
            title=f"{len(rows)} questions · {meta['provider']}/{meta['model']} · "
            f"judge {judge_name}",
            show_header=True,
        )
        table.add_column("metric")
        table.add_column("value", justify="right")
        rows_shown = summary_rows(totals)
        missing = [value for name, value in rows_shown if name == NOT_MEASURED]
        for name, value in rows_shown:
            if name != NOT_MEASURED:
                table.add_row(name, value)
        console.print(table)
        if missing:
            console.print(f"{NOT_MEASURED}: {missing[0]}", style="dim", highlight=False)
        console.print(f"results: {results}  report: {run_dir / 'report.html'}")
    errors = [r["error"] for r in rows if r.get("error")]
    if errors:  # replies with no answer: in no metric, so say why
        err.print(
            f"[bold yellow]warning:[/] {len(errors)} of {len(rows)} replies had no answer "
            f"(not in the metrics; `--resume {run_dir}` asks them again); the first: {errors[0]}",
            highlight=False,
        )
    for failure in failed:
        err.print(f"[bold red]fail-under:[/] {failure}")
    return not failed


_MACHINE_NOTE = (
    "latency depends on the machine and its load when each run ran: compare it only between "
    "runs made side by side on one machine"
)


def print_comparison(console: Console, a: Path, b: Path, as_json: bool) -> None:
    diff = compare(load_results(a), load_results(b))
    if as_json:
        console.print_json(json.dumps(diff | {"note": _MACHINE_NOTE}))
        return
    table = Table(title=f"{a} → {b}")
    for column in ("metric", "A", "B", "Δ"):
        table.add_column(column, justify="left" if column == "metric" else "right")
    for row in diff["metrics"]:
        name, better = row["metric"], row["better"]
        shown = metric_value(name, row["delta"], signed=True)
        label = metric_label(name)
        if row["machine_dependent"]:  # not the code's doing alone: no colour
            label, style = f"{label} (machine-dependent)", "dim"
        else:
            style = "" if better is None else ("green" if better else "red")
        table.add_row(
            label,
            metric_value(name, row["a"]),
            metric_value(name, row["b"]),
            f"[{style}]{shown}[/]" if style else shown,
        )
    console.print(table)
    console.print(f"note: {_MACHINE_NOTE}", style="dim", highlight=False)
    _print_questions(console, diff)


def _print_questions(console: Console, diff: dict[str, Any]) -> None:
    """Questions that got better, then worse, then both, each group with its count."""
    for direction, title, style in (
        ("improved", "improved", "green"),
        ("regressed", "regressed", "red"),
        ("mixed", "changed both ways", "yellow"),
    ):
        group = [c for c in diff["questions"] if c["direction"] == direction]
        if group:
            console.print(f"[bold {style}]{title}: {len(group)}[/]", highlight=False)
        for change in group:
            console.print(
                f"  {change['id']}: {'; '.join(change['changes'])} — {change['question']}",
                soft_wrap=True,
                highlight=False,
                markup=False,
            )
    if not diff["questions"]:
        console.print("no question changed its outcome")
    for key, where in (("only_in_a", "A"), ("only_in_b", "B")):
        ids = diff[key]
        if ids:
            shown = ", ".join(ids[:10]) + (", …" if len(ids) > 10 else "")
            console.print(
                f"[yellow]{len(ids)} questions only in {where}[/] (the metrics above are over "
                f"different questions): {shown}",
                highlight=False,
            )


def print_calibration(
    console: Console, settings: Settings, pairs_file: Path, judge_name: str, as_json: bool
) -> None:
    from assistant.embedding.embedders import make_embedder

    rows = load_pairs(pairs_file)
    judge = make_judge(judge_name, settings, make_embedder(settings))
    figures = calibrate(judge, rows)
    if as_json:
        console.print_json(json.dumps({k: figures[k] for k in JSON_FIELDS}))
        return
    c = figures["confusion"]
    console.print(
        f"judge {figures['judge']} on {figures['n']} pairs (threshold "
        f"{judge.threshold}): balanced accuracy {figures['balanced_accuracy']:.3f}, "
        f"ROC AUC {figures['auc']:.3f}"
    )
    low, high = figures["balanced_accuracy_95ci"]
    console.print(f"95 % bootstrap interval of the balanced accuracy: {low:.3f}-{high:.3f}")
    for kind, (accepted, n) in figures["accepted_by_kind"].items():
        console.print(f"  {kind}: judge accepts {accepted} of {n} ({accepted / n:.0%})")
    table = Table(title="confusion (rows: human label, columns: judge)")
    table.add_column("")
    table.add_column("supported", justify="right")
    table.add_column("not_supported", justify="right")
    for label in ("supported", "not_supported"):
        table.add_row(label, str(c[label]["supported"]), str(c[label]["not_supported"]))
    console.print(table)


ANSWERER = ("provider", "model", "judge", "eval_set", "store", "embedder")


def _same_answerer(run_dir: Path, meta: dict[str, Any], resumed: bool) -> None:
    """A resumed run is answered as it began: its first part's settings are kept in
    ``run.json``, and a resume with another provider, model, judge, eval set or store is
    refused (its answers would be scored as one run's)."""
    recorded = run_dir / "run.json"
    if resumed and recorded.is_file():
        before = json.loads(recorded.read_text(encoding="utf-8"))
        changed = [k for k in ANSWERER if k in before and before[k] != meta[k]]
        if changed:
            said = "; ".join(f"{k} {before[k]!r}, now {meta[k]!r}" for k in changed)
            raise AssistantError(
                f"{run_dir} was begun with other settings ({said}): resume it with those, "
                "or start a new run with --out"
            )
        return
    run_dir.mkdir(parents=True, exist_ok=True)
    recorded.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


def _check_gold_papers(assistant: Assistant, items: list[Any], path: str, err: Console) -> None:
    """An eval whose gold papers are not in the store scores zeros that mean nothing: say so."""
    gold = sorted({p for item in items for p in item.gold_papers})
    if not gold:
        return
    found = assistant.store.papers(gold)
    if not found:
        raise InputFileError(
            path,
            f"none of its {len(gold)} gold papers is in the store {assistant.store_dir}; ingest "
            "the papers the eval set was written for (the shipped corpus: `assistant ingest`) "
            "or pass --set with questions about this store's papers",
        )
    if len(found) < len(gold):
        missing = [p for p in gold if p not in found]
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        named = escape(", ".join(missing[:5]) + more)
        err.print(
            f"[bold yellow]warning:[/] {len(missing)} of the eval set's {len(gold)} "
            f"gold papers are not in this store ({named}); questions about them will score low",
            highlight=False,
        )
