"""Figures of a run as text: 0.804, 178 ms, $0.0012, a metric's name marked when lower is
better. Shared by the terminal summary, ``report.md``, ``report.html`` and ``--compare``."""

from __future__ import annotations

from typing import Any

from assistant.eval.harness import METRICS
from assistant.eval.whole_answer import LOWER_IS_BETTER

COUNTS = frozenset({"answer_sentences", "answer_tokens"})  # means of counts, not shares
# Figures that depend on the machine and its load as much as on the code.
MACHINE_DEPENDENT = frozenset({"latency_p50_ms", "latency_p95_ms"})


def share(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


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


def lower_is_better(name: str) -> bool:
    return name in LOWER_IS_BETTER or name.endswith("_ms") or name == "cost_usd"


def metric_label(name: str) -> str:
    """A metric's name, marked when a smaller value is the better one."""
    return f"{name} (lower is better)" if name in LOWER_IS_BETTER else name


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


def speed_rows(aggregate: dict[str, Any]) -> list[tuple[str, str]]:
    """Latency, tokens and cost of a run, each as (label, value)."""
    p50, p95 = aggregate.get("latency_p50_ms"), aggregate.get("latency_p95_ms")
    return [
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


NOT_MEASURED = "not measured in this run"


def summary_rows(aggregate: dict[str, Any]) -> list[tuple[str, str]]:
    """Every figure the run measured once, as (label, value), in the order of ``METRICS``;
    the metrics it could not measure (a run without unanswerable questions has no refusal
    recall) are named together in one last row rather than shown one by one as blanks."""
    measured = [name for name in METRICS if aggregate.get(name) is not None]
    rows = [(metric_label(name), metric_value(name, aggregate[name])) for name in measured]
    if aggregate.get("no_answer"):  # counted apart: in no metric above
        rows.insert(0, ("replies with no answer (not in the metrics)", str(aggregate["no_answer"])))
    rows += speed_rows(aggregate)
    missing = [name for name in METRICS if aggregate.get(name) is None]
    if missing:
        rows.append((NOT_MEASURED, ", ".join(missing)))
    return rows
