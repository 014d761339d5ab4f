"""Would other signals choose a survey's papers better? Leave-one-question-out figures for the
survey bar's features (``assistant.answer.offline.survey_bar``) with each candidate signal added.

Rows, labels, model and thresholds are those of ``fit_survey_bar.py`` (the tune and dev survey
questions, never test); each variant adds signals to the five shipped features, is fitted
without the question it scores, and its ``include`` threshold is chosen on those held-out
probabilities. It prints, per variant, the cited papers' mean precision, recall and F1 over
answerable survey questions, and the share of unanswerable survey questions refused. Signals:

- ``fused``: the search's fused score (a weighted sum of z-scores; ``assistant.retrieval.hybrid``);
- ``similarity``: the dense cosine of the paper's best chunk;
- ``topic``: the best sentence's cosine to the question without its "which papers ..." frame;
- ``phrases``: the IDF share of the question's adjacent asked-term pairs the abstract contains;
- ``frequency``: how often the abstract repeats the asked terms (IDF-weighted log counts).

    assistant ingest --store /tmp/s && python evals/survey/signal_study.py --store /tmp/s
"""

from __future__ import annotations

import argparse
import math
import re
from collections import Counter
from pathlib import Path

import numpy as np
from fit_survey_bar import (
    EVAL_SET,
    FIT_SPLITS,
    REFUSAL_MARGIN,
    choose_include,
    cited_scores,
    held_out_probabilities,
)

from assistant.answer.chain import Request
from assistant.answer.offline.extractive import ExtractiveProvider, _best_per_paper
from assistant.answer.offline.question import asked_terms, idf_weights, is_survey
from assistant.core import Assistant
from assistant.eval.dataset import load_eval_set
from assistant.text.terms import analyze

SIGNALS = ("fused", "similarity", "topic", "phrases", "frequency")
VARIANTS: tuple[tuple[str, ...], ...] = (
    (),
    *((s,) for s in SIGNALS),
    ("fused", "topic"),
    ("fused", "phrases", "frequency"),
    SIGNALS,
)
_FRAME = re.compile(
    r"^\s*(?:which|what|are there|is there|any)\s+(?:papers|works|studies|methods|approaches)"
    r"\s+(?:that\s+|which\s+)?",
    re.IGNORECASE,
)
Row = tuple[str, dict[str, float], list[float], bool]  # question, signals, features, gold


def _phrases(asked: list[str], weights: dict[str, float], terms: list[str]) -> float:
    pairs = set(zip(asked, asked[1:], strict=False))
    present = set(zip(terms, terms[1:], strict=False))
    total = sum(weights[a] + weights[b] for a, b in pairs)
    return (
        sum(weights[a] + weights[b] for a, b in pairs if (a, b) in present) / total
        if total
        else 0.0
    )


def _frequency(weights: dict[str, float], terms: list[str]) -> float:
    counts, total = Counter(terms), sum(weights.values())
    return sum(w * math.log1p(counts[t]) for t, w in weights.items()) / total if total else 0.0


def collect(assistant: Assistant, items: list) -> list[Row]:
    provider = assistant.provider
    assert isinstance(provider, ExtractiveProvider), "the survey bar is the extractive path's"
    chain = assistant.chain()
    k = max(assistant.settings.retrieval.k, assistant.settings.retrieval.survey_k)
    rows: list[Row] = []
    for item in items:
        _, context = chain.retrieve(Request(item.question, k))
        context = context and context.as_asked()  # without the papers of its topics' searches
        if context is None:
            continue
        candidates, vectors = provider.rank(context)
        topic = provider.embedder.embed_query(_FRAME.sub("", item.question))
        to_topic: dict[int, float] = {}
        for cand, value in zip(candidates, vectors @ topic, strict=True):
            to_topic[cand.source] = max(to_topic.get(cand.source, -1.0), float(value))
        question_terms = analyze([item.question])[0]
        weights = idf_weights(asked_terms(item.question), provider.rarity)
        asked = [t for t in question_terms if t in weights]
        features = provider.survey_features(context, _best_per_paper(candidates))
        for source, values in features.items():
            hit = context.sources[source - 1]
            terms = analyze([hit.text])[0]
            signals = {
                "fused": hit.score,
                "similarity": hit.similarity or 0.0,
                "topic": to_topic.get(source, 0.0),
                "phrases": _phrases(asked, weights, terms),
                "frequency": _frequency(weights, terms),
            }
            rows.append((item.id, signals, values, hit.paper_id in item.gold_papers))
    return rows


def study(rows: list[Row], extra: tuple[str, ...], answerable: set[str]) -> tuple[float, ...]:
    """The fit script's held-out probabilities and threshold choice, on these features."""
    held = held_out_probabilities([(q, f + [sig[s] for s in extra], g) for q, sig, f, g in rows])
    kept = {q: s for q, s in held.items() if q in answerable}
    include = choose_include(kept)
    pr = np.array([cited_scores(s, include) for s in kept.values()])
    f1 = float(np.mean([2 * p * r / (p + r) if p + r else 0.0 for p, r in pr]))
    floor = min(max(p for p, _ in s) for s in kept.values()) - REFUSAL_MARGIN
    unanswerable = [max(p for p, _ in s) for q, s in held.items() if q not in answerable]
    refused = float(np.mean([p < floor for p in unanswerable])) if unanswerable else 0.0
    return include, pr[:, 0].mean(), pr[:, 1].mean(), f1, refused


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", required=True, help="a store holding the shipped corpus")
    parser.add_argument("--eval-set", type=Path, default=EVAL_SET)
    args = parser.parse_args()
    items = [
        i
        for i in load_eval_set(args.eval_set)
        if i.split in FIT_SPLITS and not i.history and is_survey(i.question)
    ]
    with Assistant(store=args.store) as assistant:
        rows = collect(assistant, items)
    asked = {r[0] for r in rows}  # a question the search finds nothing for has no rows
    answerable = {i.id for i in items if i.answerable} & asked
    print(f"{len(answerable)} answerable, {len(asked - answerable)} unanswerable questions")
    print(f"{'added to the shipped features':52} include precision recall   F1  refused")
    for extra in VARIANTS:
        include, p, r, f1, refused = study(rows, extra, answerable)
        name = " + ".join(extra) or "(none: the shipped bar)"
        print(f"{name:52} {include:7.2f} {p:9.3f} {r:6.3f} {f1:5.3f} {refused:7.2f}")


if __name__ == "__main__":
    main()
