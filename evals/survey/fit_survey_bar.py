"""Fit the survey bar (assistant/answer/offline/survey_bar.py) on the eval set's tune and dev
splits.

For every "which papers ..." question of those splits whose papers the bar chooses (not a
comparison of named papers, nor a literal condition), each of the survey_k papers it retrieves
becomes one row of features, labelled by whether it is in the question's gold_papers (an
answer considers more, ``core.SURVEY_POOL`` times as many: those past the first survey_k rank
lower and score lower); unanswerable survey questions contribute rows that are all
negative. Model: L2 logistic regression on standardised features (numpy). Both thresholds are
chosen on leave-one-question-out probabilities, so they are not fitted to the very rows they
score:

- ``include``: the value with the best mean F1 of the cited papers over answerable questions,
  averaged with its neighbours' (``choose_include``);
- ``refuse_below``: 0.05 under the lowest top probability of an answerable survey question, so
  no answerable one is refused and a new one a little less certain is not either.

The test split plays no part. Needs a store that holds the shipped corpus:

    assistant ingest --store /tmp/s && python evals/survey/fit_survey_bar.py --store /tmp/s
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from assistant.answer.chain import Request
from assistant.answer.offline.extractive import ExtractiveProvider, _best_per_paper
from assistant.answer.offline.logistic import fit_arguments, fit_logistic
from assistant.answer.offline.question import is_survey
from assistant.answer.offline.survey_bar import FEATURES, MODEL_FILE, SurveyBar
from assistant.answer.sources import Context
from assistant.core import Assistant
from assistant.eval.dataset import EvalItem, load_eval_set

EVAL_SET = Path(__file__).parents[1] / "neurips2025.jsonl"
FIT_SPLITS = ("tune", "dev")
L2 = 1.0
REFUSAL_MARGIN = 0.05
SMOOTH = 2  # neighbours on each side (0.01 apart) of a threshold averaged in its F1

Rows = list[tuple[str, list[float], bool]]  # (question id, features, is gold)


def collect(assistant: Assistant, items: list[EvalItem]) -> Rows:
    provider = assistant.provider
    assert isinstance(provider, ExtractiveProvider), "the survey bar is the extractive path's"
    chain = assistant.chain()
    k = max(assistant.settings.retrieval.k, assistant.settings.retrieval.survey_k)
    rows: Rows = []
    for item in items:
        _, context = chain.retrieve(Request(item.question, k))
        context = context and context.as_asked()  # without the papers of its topics' searches
        if context is None or decided_otherwise(provider, context):
            continue
        candidates, _ = provider.rank(context)
        found = provider.survey_features(context, _best_per_paper(candidates))
        for source, values in found.items():
            gold = context.sources[source - 1].paper_id in item.gold_papers
            rows.append((item.id, values, gold))
    return rows


def decided_otherwise(provider: ExtractiveProvider, context: Context) -> bool:
    """Questions whose papers the bar does not choose: a comparison of named papers, a
    literal condition ("on GitHub")."""
    named = [hit for hit in context.sources if hit.named_in(context.question)]
    return len(named) > 1 or bool(provider.holding_literal(context))


def fit(x: np.ndarray, y: np.ndarray) -> SurveyBar:
    model = fit_logistic(x, y, l2=L2)
    return SurveyBar(model.weights, model.bias, model.mean, model.scale)


def held_out_probabilities(rows: Rows) -> dict[str, list[tuple[float, bool]]]:
    """Each question's papers scored by a model fitted without that question."""
    out: dict[str, list[tuple[float, bool]]] = {}
    x = np.array([r[1] for r in rows])
    y = np.array([r[2] for r in rows], dtype=float)
    qid = np.array([r[0] for r in rows])
    for q in dict.fromkeys(qid):
        bar = fit(x[qid != q], y[qid != q])
        p = bar.probability(x[qid == q].tolist())
        out[str(q)] = list(zip(p.tolist(), (y[qid == q] > 0).tolist(), strict=True))
    return out


def cited_scores(scored: list[tuple[float, bool]], include: float) -> tuple[float, float]:
    """Precision and recall of the papers cited at ``include`` (the likeliest when none is)."""
    chosen = [s for s in scored if s[0] >= include] or [max(scored)]
    hits = sum(gold for _, gold in chosen)
    return hits / len(chosen), hits / max(1, sum(gold for _, gold in scored))


def choose_include(answerable: dict[str, list[tuple[float, bool]]]) -> float:
    """The threshold with the best mean F1 over it and its neighbours (±``SMOOTH``): with a
    few dozen questions the curve is jagged, and a spike one question makes is no bar to ship
    (q134 citing its gold paper one rank higher moved the best single threshold from 0.31,
    on a plateau to 0.34, to a spike at 0.23)."""

    def mean_f1(t: float) -> float:
        pr = [cited_scores(s, t) for s in answerable.values()]
        return float(np.mean([2 * p * r / (p + r) if p + r else 0.0 for p, r in pr]))

    grid = np.round(np.arange(0.05, 0.9, 0.01), 2).tolist()
    f1 = [mean_f1(t) for t in grid]
    smoothed = [np.mean(f1[max(0, i - SMOOTH) : i + SMOOTH + 1]) for i in range(len(grid))]
    return float(grid[int(np.argmax(smoothed))])


def main() -> None:
    args = fit_arguments(__doc__ or "", MODEL_FILE, EVAL_SET)
    items = [
        i
        for i in load_eval_set(args.eval_set)
        if i.split in FIT_SPLITS and not i.history and is_survey(i.question)
    ]
    with Assistant(store=args.store) as assistant:
        rows = collect(assistant, items)
    answerable_ids = {i.id for i in items if i.answerable}
    scored = held_out_probabilities(rows)
    answerable = {q: s for q, s in scored.items() if q in answerable_ids}
    include = choose_include(answerable)
    lowest_answerable_top = min(max(p for p, _ in s) for s in answerable.values())
    refuse_below = round(float(lowest_answerable_top) - REFUSAL_MARGIN, 3)
    pr = np.array([cited_scores(s, include) for s in answerable.values()])
    unanswerable = [max(p for p, _ in s) for q, s in scored.items() if q not in answerable_ids]
    refused = float(np.mean([p < refuse_below for p in unanswerable])) if unanswerable else 0.0
    x = np.array([r[1] for r in rows])
    y = np.array([r[2] for r in rows], dtype=float)
    bar = fit(x, y)
    bar = SurveyBar(bar.weights, bar.bias, bar.mean, bar.scale, include, refuse_below)
    args.out.write_text(json.dumps(bar.to_json(), indent=1) + "\n", encoding="utf-8")
    print(f"{len(answerable)} answerable and {len(unanswerable)} unanswerable survey questions")
    print(f"weights: {dict(zip(FEATURES, np.round(bar.weights, 2).tolist(), strict=True))}")
    print(f"include >= {include}: leave-one-question-out cited precision {pr[:, 0].mean():.3f}")
    print(f"  recall {pr[:, 1].mean():.3f}")
    print(f"refuse below {refuse_below}: {refused:.2f} of unanswerable survey questions refused")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
