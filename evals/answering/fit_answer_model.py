"""Fit the answer model (assistant/answer/offline/answering.py) on the eval set's tune and dev
splits.

For every answerable one-paper question of those splits that has reference facts (factual and
paraphrase questions, no follow-ups, none of the ``SHAPES`` answered by their own rules), each
sentence of each gold paper the search retrieves
becomes one row of features, labelled by whether it states one of the question's reference
facts. Model: L2 logistic regression on standardised features
(``assistant.answer.offline.logistic``).

It prints, leaving one paper out (each question scored by a model fitted without any question
on its gold paper: a question's paraphrase twin would otherwise stay in the fit), the share
of reference facts found in the first 1, 2 and 3 sentences of the gold paper, in the order of
the answer model and in the order of the extractive score it replaces. The test split plays no
part. Needs a store that holds the shipped corpus:

    assistant ingest --store /tmp/s && python evals/answering/fit_answer_model.py --store /tmp/s
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from assistant.answer.chain import Request
from assistant.answer.offline.answering import FEATURES, MODEL_FILE, AnswerModel, features
from assistant.answer.offline.extractive import ExtractiveProvider, by_paper
from assistant.answer.offline.logistic import fit_arguments, fit_logistic
from assistant.answer.offline.question import is_survey
from assistant.core import Assistant
from assistant.eval.dataset import EvalItem, load_eval_set
from assistant.eval.relevance import fact_found

EVAL_SET = Path(__file__).parents[1] / "neurips2025.jsonl"
FIT_SPLITS = ("tune", "dev")
L2 = 1.0
FIRST = (1, 2, 3)


@dataclass(frozen=True)
class Paper:
    """One gold paper of one question: its sentences' features, texts and extractive scores."""

    question: str  # the eval item's id
    paper_id: str
    split: str
    reference: list[str]
    rows: list[list[float]]
    texts: list[str]
    scores: list[float]

    def labels(self) -> list[bool]:
        return [any(fact_found(f, t) for f in self.reference) for t in self.texts]

    def found(self, order: np.ndarray, k: int) -> float:
        """Share of reference facts stated by the first k sentences in this order."""
        quoted = " ".join(self.texts[i] for i in order[:k])
        return sum(fact_found(f, quoted) for f in self.reference) / len(self.reference)


# Shapes whose sentences other rules choose: the defining sentence, the expansion, each half
# and each named paper in turn (``assistant.answer.offline.parts``).
SHAPES = frozenset({"compare", "compound", "definition", "acronym", "literal_survey"})


def wanted(item: EvalItem) -> bool:
    return (
        item.split in FIT_SPLITS
        and item.type not in SHAPES
        and item.answerable
        and bool(item.reference)
        and not item.history
        and not is_survey(item.question)
    )


def collect(assistant: Assistant, items: list[EvalItem]) -> list[Paper]:
    provider = assistant.provider
    assert isinstance(provider, ExtractiveProvider), "the answer model is the extractive path's"
    chain = assistant.chain()
    papers = []
    for item in items:
        _, context = chain.retrieve(Request(item.question, assistant.settings.retrieval.k))
        context = context and context.as_asked()  # without the papers of its topics' searches
        if context is None:
            continue
        candidates, _ = provider.rank(context)
        for source, paper in by_paper(candidates).items():
            if context.sources[source - 1].paper_id not in item.gold_papers:
                continue
            papers.append(
                Paper(
                    item.id,
                    context.sources[source - 1].paper_id,
                    item.split,
                    list(item.reference),
                    features(item.question, paper),
                    [c.text for c in paper],
                    [c.score for c in paper],
                )
            )
    return papers


def stacked(papers: list[Paper]) -> tuple[np.ndarray, np.ndarray]:
    x = np.array([row for p in papers for row in p.rows])
    y = np.array([label for p in papers for label in p.labels()], dtype=float)
    return x, y


def held_out_found(papers: list[Paper]) -> dict[str, dict[int, list[float]]]:
    """Facts found in the first k sentences, by the extractive score and by the answer model
    fitted without the questions on the paper, per split."""
    out: dict[str, dict[int, list[float]]] = {}
    for paper in papers:
        model = fit_logistic(*stacked([p for p in papers if p.paper_id != paper.paper_id]), l2=L2)
        by_model = np.argsort(-model.logit(paper.rows), kind="stable")
        by_score = np.argsort(-np.asarray(paper.scores), kind="stable")
        for k in FIRST:
            out.setdefault(f"{paper.split} score", {}).setdefault(k, []).append(
                paper.found(by_score, k)
            )
            out.setdefault(f"{paper.split} model", {}).setdefault(k, []).append(
                paper.found(by_model, k)
            )
    return out


def main() -> None:
    args = fit_arguments(__doc__ or "", MODEL_FILE, EVAL_SET)
    items = [i for i in load_eval_set(args.eval_set) if wanted(i)]
    with Assistant(store=args.store) as assistant:
        papers = collect(assistant, items)
    sentences = sum(len(p.rows) for p in papers)
    distinct = len({p.paper_id for p in papers})
    print(
        f"{len(papers)} question-paper pairs ({distinct} papers) of {len(items)} questions, "
        f"{sentences} sentences"
    )
    print("reference facts in the first 1 / 2 / 3 sentences, leave one paper out:")
    for name, found in sorted(held_out_found(papers).items()):
        print(f"  {name:12} " + " / ".join(f"{np.mean(found[k]):.3f}" for k in FIRST))
    fitted = fit_logistic(*stacked(papers), l2=L2)
    model = AnswerModel(fitted.weights, fitted.bias, fitted.mean, fitted.scale)
    args.out.write_text(json.dumps(model.to_json(), indent=1) + "\n", encoding="utf-8")
    print(f"weights: {dict(zip(FEATURES, np.round(model.weights, 2).tolist(), strict=True))}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
