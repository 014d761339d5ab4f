"""The relevance bar for "which papers ..." questions: how likely a retrieved paper is one of
the papers the question asks for.

A fixed number of papers, or a margin under the best sentence, either pads an answer or cuts it
short: the eval set's survey questions have two to five gold papers, and the best sentence of
a gold paper can sit far below the best one ("Which papers study Nash equilibria?" finds the
multi-agent RL paper first by embedding, fourth by its best sentence). What separates the gold
papers is agreement between signals: both retrievers rank them high, and the abstract contains
what the question asks about. A logistic model over those signals gives each paper a
probability; papers above ``include`` are cited, and when no paper reaches ``refuse_below`` the
question is about something the abstracts do not cover.

The weights are fitted by ``evals/survey/fit_survey_bar.py`` on the eval set's ``tune`` and ``dev``
survey questions (never ``test``) and shipped as ``survey_bar.json``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from assistant.answer.offline.logistic import Logistic, read_coefficients
from assistant.retrieval.hybrid import Hit

MODEL_FILE = Path(__file__).with_name("survey_bar.json")

FEATURES = ("log_dense_rank", "log_lexical_rank", "log_position", "coverage", "gap")
UNRANKED = 200  # a retriever that did not return the paper: ranked past its candidates


def ranks(hits: Sequence[Hit]) -> list[tuple[int, int]]:
    """Each hit's dense and lexical rank. A retriever switched off (its weight 0) ranks no
    paper; the other's rank stands in for it, so the bar is not read as "both disagree"."""
    dense_on = any(h.dense_rank is not None for h in hits)
    lexical_on = any(h.lexical_rank is not None for h in hits)
    out = []
    for hit in hits:
        dense = hit.dense_rank if dense_on else hit.lexical_rank
        lexical = hit.lexical_rank if lexical_on else hit.dense_rank
        out.append((dense or UNRANKED, lexical or UNRANKED))
    return out


def features(rank: tuple[int, int], position: int, coverage: float, gap: float) -> list[float]:
    """``rank``: dense and lexical (``ranks``); ``position``: 1-based place in the fused
    ranking; ``coverage``: the IDF share of the asked-for terms the abstract contains; ``gap``:
    the best sentence score minus this paper's."""
    return [math.log(rank[0]), math.log(rank[1]), math.log(position), coverage, gap]


@dataclass(frozen=True)
class SurveyBar(Logistic):
    include: float = 0.5  # cite a paper at least this likely
    refuse_below: float = 0.0  # no paper this likely: the abstracts do not cover the topic

    def to_json(self) -> dict[str, object]:
        return {
            "features": list(FEATURES),
            **self.coefficients(),
            "include": self.include,
            "refuse_below": self.refuse_below,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SurveyBar:
        model = read_coefficients(data, FEATURES, MODEL_FILE.name)
        return cls(
            model.weights,
            model.bias,
            model.mean,
            model.scale,
            include=float(data["include"]),
            refuse_below=float(data["refuse_below"]),
        )


@cache
def shipped_bar() -> SurveyBar:
    return SurveyBar.from_json(json.loads(MODEL_FILE.read_text(encoding="utf-8")))
