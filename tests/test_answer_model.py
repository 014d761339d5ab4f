"""The answer model (assistant/answer/offline/answering.py): which sentences of a paper answer
a question.
The shipped weights are what evals/answering/fit_answer_model.py fits on the tune and dev
splits, and the extractive answer quotes the sentence that answers, not the one that restates
the question."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from assistant.answer.offline.answering import (
    FEATURES,
    MODEL_FILE,
    AnswerModel,
    features,
    shipped_model,
)
from tests.conftest import refit

SCRIPT = Path(__file__).parents[1] / "evals" / "answering" / "fit_answer_model.py"


@dataclass(frozen=True)
class Said:
    text: str
    score: float
    similarity: float
    opening: bool = False


def test_the_shipped_answer_model_is_reproducible_and_beats_the_score_held_out(
    shipped_store: Path, tmp_path: Path
):
    fitted, printed = refit(SCRIPT, shipped_store, tmp_path / "model.json")
    shipped = json.loads(MODEL_FILE.read_text())
    assert fitted["features"] == shipped["features"] == list(FEATURES)
    for key in ("weights", "mean", "scale"):
        assert fitted[key] == pytest.approx(shipped[key], abs=0.05), key
    # Held out paper by paper, the model finds more reference facts in a paper's first
    # three sentences than the extractive score does, on both splits.
    found = {
        m.group(1): float(m.group(2))
        for m in re.finditer(r"^\s+(\w+ \w+)\s+[\d.]+ / [\d.]+ / ([\d.]+)$", printed, re.M)
    }
    for split in ("tune", "dev"):
        assert found[f"{split} model"] > found[f"{split} score"], printed


def test_a_sentence_is_read_against_its_paper_and_the_sentence_before_it():
    paper = [
        Said("Offline optimization learns from a fixed dataset of designs.", 0.40, 0.30, True),
        Said("Such a bridge is learned from synthetic functions.", 0.86, 0.75),
        Said("These functions are Gaussian process posteriors.", 0.52, 0.43),
    ]
    rows = features("How are the synthetic functions built?", paper)
    column = {name: [row[i] for row in rows] for i, name in enumerate(FEATURES)}
    assert column["score_gap"] == pytest.approx([-0.46, 0.0, -0.34])
    assert column["previous_gap"] == pytest.approx([-0.5, -0.45, 0.0])
    assert column["opening"] == [1.0, 0.0, 0.0]
    assert column["position"] == pytest.approx([0.0, 1 / 3, 2 / 3])
    assert column["overlap"][1] > column["overlap"][0]


def test_names_count_for_which_questions_only_when_the_question_lacks_them():
    paper = [Said("We evaluate on CIFAR-10 and CIFAR-100 with GPT-2.", 0.5, 0.4)]
    names = FEATURES.index("names_for_which")
    assert features("Which benchmarks were used?", paper)[0][names] == 0.75
    assert features("Which benchmarks besides CIFAR-10 were used?", paper)[0][names] == 0.5
    assert features("How is it trained?", paper)[0][names] == 0.0


def test_the_answer_model_refuses_weights_fitted_on_other_features():
    data = shipped_model().to_json()
    data["features"] = ["something", "else"]
    with pytest.raises(ValueError, match="refit"):
        AnswerModel.from_json(data)


@pytest.mark.parametrize(
    ("question", "fact"),
    [
        # dev q208: the best-matching sentence restates the question; the next one answers.
        (
            "In the paper that casts offline black-box optimization as a distributional "
            "translation task, how are the synthetic functions used to learn the probabilistic "
            "bridge constructed?",
            "Gaussian processes",
        ),
        # dev q92: the benchmarks sit in a sentence far below the paper's best by similarity.
        (
            "Which image benchmarks were used to test the Bayesian-inspired test-time defence "
            "that removes attack perturbations using a score-based generative prior?",
            "CIFAR-10",
        ),
    ],
)
def test_the_extractive_answer_quotes_the_sentence_that_answers(shipped, question, fact):
    answer = shipped.ask(question)
    assert not answer.refused and fact in answer.text
    assert len({c.paper_id for c in answer.citations}) == 1
