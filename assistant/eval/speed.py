"""Cost and speed over a run: tokens, estimated cost, latency percentiles."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def percentile(values: Sequence[float], q: float) -> float | None:
    return float(np.percentile(np.asarray(values, dtype=float), q)) if values else None


def cost_and_speed(
    latencies_ms: Sequence[float],
    prompt_tokens: Sequence[int],
    completion_tokens: Sequence[int],
    costs: Sequence[float | None],
    estimated: Sequence[bool] = (),
) -> dict[str, float | int | bool | None]:
    """``tokens_estimated`` is True when any count is a tiktoken estimate (the server sent no
    usage), so the totals are marked as such."""
    known = [c for c in costs if c is not None]
    return {
        "latency_p50_ms": percentile(latencies_ms, 50),
        "latency_p95_ms": percentile(latencies_ms, 95),
        "prompt_tokens": int(sum(prompt_tokens)),
        "completion_tokens": int(sum(completion_tokens)),
        "cost_usd": round(sum(known), 6) if known else None,
        "tokens_estimated": any(estimated),
    }
