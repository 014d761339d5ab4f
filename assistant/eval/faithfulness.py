"""Faithfulness (RAGAS-style): the answer's atomic claims, and how many its sources support.

Each claim is judged against the passages its sentence cites (``score_cited``) and, reported
separately, against every retrieved passage (``score_retrieved``): a claim true of the
retrieved abstracts but cited to the wrong one is faithful yet mis-cited.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from assistant.eval.claims import cited_sentences
from assistant.eval.judges import Judge


@dataclass
class Faithfulness:
    claims: int = 0
    supported_by_cited: int = 0
    supported_by_retrieved: int = 0
    unsupported: list[str] = field(default_factory=list)

    @property
    def score_cited(self) -> float | None:
        return self.supported_by_cited / self.claims if self.claims else None

    @property
    def score_retrieved(self) -> float | None:
        return self.supported_by_retrieved / self.claims if self.claims else None


def faithfulness(
    answer: str, cited: Mapping[int, str], retrieved: Sequence[str], judge: Judge
) -> Faithfulness:
    """``cited`` maps citation number -> abstract; ``retrieved`` are all retrieved abstracts."""
    result = Faithfulness()
    for sentence in cited_sentences(answer):
        evidence = [cited[n] for n in sentence.citations if n in cited]
        for claim in judge.claims(sentence.text):
            result.claims += 1
            by_cited = judge.supported(claim, evidence)
            by_retrieved = by_cited or judge.supported(claim, list(retrieved))
            result.supported_by_cited += by_cited
            result.supported_by_retrieved += by_retrieved
            if not by_cited:
                result.unsupported.append(claim)
    return result
