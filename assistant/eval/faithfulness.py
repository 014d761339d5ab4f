"""Faithfulness: how many of the answer's sentences their sources support.

Each sentence gets the decision a reader sees at answer time (``verify.judgement`` through
``Verifier.check``: the judge's score and the exact checks, ✓ ? ✗), so the eval and the marks
never disagree about the same sentence and sources. ``score_cited`` is the share marked ✓;
``share_unsupported`` and ``share_weak`` the shares marked ✗ and ?. Reported separately, a
sentence not supported by what it cites may still be supported by the retrieved abstracts
together (``score_retrieved``): true, but mis-cited.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from assistant.judge.features import strip_markers
from assistant.judge.judges import Judge
from assistant.judge.names import Source
from assistant.judge.verify import SentenceCheck, Verifier, judgement


@dataclass
class Faithfulness:
    claims: int = 0  # sentences that make claims
    supported_by_cited: int = 0
    supported_by_retrieved: int = 0
    weak: int = 0
    unsupported: list[str] = field(default_factory=list)  # sentences not marked ✓, bare
    checks: list[SentenceCheck] = field(default_factory=list)

    @property
    def score_cited(self) -> float | None:
        return self.supported_by_cited / self.claims if self.claims else None

    @property
    def score_retrieved(self) -> float | None:
        return self.supported_by_retrieved / self.claims if self.claims else None

    @property
    def share_weak(self) -> float | None:
        return self.weak / self.claims if self.claims else None

    @property
    def share_unsupported(self) -> float | None:
        if not self.claims:
            return None
        return (self.claims - self.supported_by_cited - self.weak) / self.claims


def faithfulness(
    answer: str, cited: Mapping[int, str], retrieved: Sequence[Source], judge: Judge
) -> Faithfulness:
    """``cited`` maps citation number -> abstract; ``retrieved`` are the retrieved papers."""
    result = Faithfulness()
    result.checks = Verifier(judge).check(answer, cited, papers=retrieved)
    for check in result.checks:
        result.claims += 1
        by_cited = check.verdict == "supported"
        result.supported_by_cited += by_cited
        result.weak += check.verdict == "weak"
        if by_cited:
            result.supported_by_retrieved += 1
            continue
        result.unsupported.append(strip_markers(check.sentence))
        together = judgement(judge, check.sentence, retrieved, retrieved)
        result.supported_by_retrieved += together.verdict == "supported"
    return result
