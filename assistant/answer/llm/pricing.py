"""Estimated cost of OpenAI chat models, in USD per million tokens (input, output).

List prices as published by OpenAI; an estimate only. Unknown models (local servers, new
models) have no cost rather than a wrong one.
"""

from __future__ import annotations

PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "o4-mini": (1.10, 4.40),
    "o3-mini": (1.10, 4.40),
}


def estimate_cost(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    key = (
        model
        if model in PRICES
        else next(
            (
                name
                for name in sorted(PRICES, key=len, reverse=True)
                if model.startswith(name + "-")
            ),
            None,
        )
    )
    if key is None:
        return None
    price_in, price_out = PRICES[key]
    return round((prompt_tokens * price_in + completion_tokens * price_out) / 1_000_000, 8)
