"""Which sentences of a paper answer the question, as opposed to restating it.

Cosine similarity to the question ranks best the sentence that repeats the question's words,
and that sentence is often the setup, not the answer: "how are the synthetic functions
constructed?" is closest to "... sampled from synthetic functions that resemble the target
function", while the answer is the next sentence, "These synthetic functions are constructed as
the mean posterior of multiple Gaussian processes ...". Within one paper, a logistic model
scores each sentence on:

- ``score_gap``: its extractive score (similarity, term overlap, cues) minus the paper's best;
- ``overlap``: the share of the question's terms it contains;
- ``echo``: the share of its own terms that are the question's (a restatement answers nothing);
- ``previous_gap``: the similarity of the sentence before it, minus the paper's best (the
  answer follows the sentence that sets up what was asked);
- ``names_for_which``: for a "which/what ..." question, the names, acronyms and figures it has
  that the question lacks ("CIFAR-10", "GPT-2 XL"), 0-1;
- ``value_for_quantity``: for a "how many/much ..." question, whether it has a number;
- ``opening``: the abstract's opening sentence, stating no contribution;
- ``position``: its place in the abstract, 0 to 1.

Its weights are fitted by ``evals/answering/fit_answer_model.py`` on the eval set's tune and dev
questions (a sentence is positive when it states a reference fact) and shipped as
``answer_model.json``. The extractive path quotes a paper's sentences in the order of this
score (``ExtractiveProvider.select``); which papers to quote is decided before, and apart.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Protocol

from assistant.answer.offline.logistic import Logistic, read_coefficients
from assistant.answer.offline.quantities import asks_quantity
from assistant.text.terms import analyze

MODEL_FILE = Path(__file__).with_name("answer_model.json")

FEATURES = (
    "score_gap",
    "overlap",
    "echo",
    "previous_gap",
    "names_for_which",
    "value_for_quantity",
    "opening",
    "position",
)
NO_PREVIOUS = -0.5  # the first sentence has none: as if it were far from the question

# A name, acronym or figure: "CIFAR-10", "GPT-2", "TARFlow", "LRU", "625K", "30%".
_NAME = re.compile(
    r"\b(?:[A-Z][A-Za-z]*[A-Z0-9][A-Za-z0-9-]*|[A-Za-z]+-\d[\w.]*|\d[\d,.]*\s?[%xK×MB]?)"
)
_WHICH = re.compile(r"\b(?:which|what)\b", re.IGNORECASE)
_NUMBER = re.compile(r"\d")


class Sentence(Protocol):
    """What the model reads of a candidate sentence (``extractive.Candidate``)."""

    @property
    def text(self) -> str: ...
    @property
    def score(self) -> float: ...  # the extractive score
    @property
    def similarity(self) -> float: ...  # cosine to the question
    @property
    def opening(self) -> bool: ...


def features(question: str, paper: Sequence[Sentence]) -> list[list[float]]:
    """One row per sentence of one paper, the sentences in the abstract's order."""
    if not paper:
        return []
    asked = set(analyze([question])[0])
    terms = [set(t) for t in analyze([s.text for s in paper])]
    best_score = max(s.score for s in paper)
    best_similarity = max(s.similarity for s in paper)
    which, quantity = bool(_WHICH.search(question)), asks_quantity(question)
    names = {m.group(0) for m in _NAME.finditer(question)}
    rows = []
    for i, (sentence, own) in enumerate(zip(paper, terms, strict=True)):
        shared = len(asked & own)
        previous = paper[i - 1].similarity - best_similarity if i else NO_PREVIOUS
        new_names = sum(1 for m in _NAME.finditer(sentence.text) if m.group(0) not in names)
        rows.append(
            [
                sentence.score - best_score,
                shared / max(1, len(asked)),
                shared / max(1, len(own)),
                previous,
                min(new_names, 4) / 4 if which else 0.0,
                float(quantity and bool(_NUMBER.search(sentence.text))),
                float(sentence.opening),
                i / len(paper),
            ]
        )
    return rows


def log_odds(model: Logistic, question: str, paper: Sequence[Sentence]) -> list[float]:
    """How likely each sentence states the answer, as log-odds (0 = even)."""
    rows = features(question, paper)
    return [float(v) for v in model.logit(rows)] if rows else []


@dataclass(frozen=True)
class AnswerModel(Logistic):
    def to_json(self) -> dict[str, object]:
        return {"features": list(FEATURES), **self.coefficients()}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> AnswerModel:
        model = read_coefficients(data, FEATURES, MODEL_FILE.name)
        return cls(model.weights, model.bias, model.mean, model.scale)


@cache
def shipped_model() -> AnswerModel:
    return AnswerModel.from_json(json.loads(MODEL_FILE.read_text(encoding="utf-8")))
