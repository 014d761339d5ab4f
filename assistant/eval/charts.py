"""Histograms as inline SVG with both axes, ticks at round numbers, and titles (no plotting
dependency, so ``report.html`` stays one file that opens offline)."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

WIDTH, HEIGHT = 440, 220
_LEFT, _RIGHT, _TOP, _BOTTOM = 48, 20, 12, 48  # margins around the plot area
_CHAR_W = 7.0  # a generous width of one tick-label character at 11px, to space the labels


def nice_step(span: float, count: int) -> float:
    """A round step (1, 2, 2.5 or 5 times a power of ten) cutting ``span`` in about ``count``."""
    raw = span / max(count, 1)
    if raw <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if raw <= m * power * (1 + 1e-9))


def number(value: float) -> str:
    """A tick label: 1,200 or 0.25."""
    if abs(value - round(value)) < 1e-9:
        return f"{round(value):,}"
    return f"{value:,.2f}".rstrip("0").rstrip(".")


def bins(values: Sequence[float], count: int = 10) -> tuple[list[float], list[int]]:
    """Edges at round numbers around the values, and how many values fall in each bin."""
    lo, hi = min(values), max(values)
    step = nice_step(hi - lo, count)
    start = math.floor(lo / step) * step
    n = max(1, math.ceil((hi - start) / step - 1e-9))
    edges = [start + i * step for i in range(n + 1)]
    counts = [0] * n
    for v in values:
        counts[min(n - 1, int((v - start) / step))] += 1
    return edges, counts


def _x_ticks(edges: list[float], width: float) -> list[float]:
    """Every k-th edge, k as small as keeps the labels from touching."""
    widest = max(len(number(e)) for e in edges) * _CHAR_W + 8
    gap = width / max(len(edges) - 1, 1)
    k = max(1, math.ceil(widest / gap))
    return edges[::k]


def _frame(x_title: str, y_max: int) -> list[str]:
    """Axes, y ticks and gridlines, and both axis titles."""
    plot_h, bottom = HEIGHT - _TOP - _BOTTOM, HEIGHT - _BOTTOM
    step = max(1, round(nice_step(y_max, 4)))
    parts = []
    for count in range(0, y_max + 1, step):
        y = bottom - count / y_max * plot_h
        parts.append(
            f'<line x1="{_LEFT}" x2="{WIDTH - _RIGHT}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
            f'<text x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{count}</text>'
        )
    parts.append(
        f'<line x1="{_LEFT}" x2="{_LEFT}" y1="{_TOP}" y2="{bottom}" class="axis"/>'
        f'<line x1="{_LEFT}" x2="{WIDTH - _RIGHT}" y1="{bottom}" y2="{bottom}" class="axis"/>'
        f'<text x="{(_LEFT + WIDTH - _RIGHT) / 2}" y="{HEIGHT - 8}" text-anchor="middle" '
        f'class="title">{html.escape(x_title)}</text>'
        f'<text transform="translate(14 {_TOP + plot_h / 2}) rotate(-90)" text-anchor="middle" '
        f'class="title">questions</text>'
    )
    return parts


def _x_tick(x: float, label: str) -> str:
    bottom = HEIGHT - _BOTTOM
    return (
        f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{bottom}" y2="{bottom + 5}" class="axis"/>'
        f'<text x="{x:.1f}" y="{bottom + 18}" text-anchor="middle">{label}</text>'
    )


def histogram(values: Sequence[float], x_title: str, unit: str) -> str:
    """An SVG histogram of ``values``; one labelled bar when they are all equal."""
    if not values:
        return f'<p class="note">No {html.escape(x_title)} recorded.</p>'
    plot_w, plot_h = WIDTH - _LEFT - _RIGHT, HEIGHT - _TOP - _BOTTOM
    bottom = HEIGHT - _BOTTOM
    lo, hi = min(values), max(values)
    parts = [
        f'<svg class="chart" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'role="img" aria-label="histogram of {html.escape(x_title)}">'
    ]
    if lo == hi:  # one value: a single bar over its tick, not a range "0 … 0"
        parts += _frame(x_title, len(values))
        x = _LEFT + plot_w / 2
        parts.append(
            f'<rect x="{x - 20:.1f}" y="{_TOP}" width="40" height="{plot_h}">'
            f"<title>{len(values)} questions: {number(lo)} {html.escape(unit)}</title></rect>"
        )
        parts.append(_x_tick(x, number(lo)))
        return "".join(parts) + "</svg>"
    edges, counts = bins(values)
    top = max(counts)
    parts += _frame(x_title, top)
    span = edges[-1] - edges[0]

    def x_of(v: float) -> float:
        return _LEFT + (v - edges[0]) / span * plot_w

    for left, right, count in zip(edges, edges[1:], counts, strict=False):
        h = count / top * plot_h
        parts.append(
            f'<rect x="{x_of(left) + 1:.1f}" y="{bottom - h:.1f}" '
            f'width="{x_of(right) - x_of(left) - 2:.1f}" height="{h:.1f}">'
            f"<title>{number(left)}–{number(right)} {html.escape(unit)}: {count} "
            f"question{'s' if count != 1 else ''}</title></rect>"
        )
    parts += [_x_tick(x_of(e), number(e)) for e in _x_ticks(edges, plot_w)]
    return "".join(parts) + "</svg>"
