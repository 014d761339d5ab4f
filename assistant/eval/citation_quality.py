"""Citation recall and precision, per sentence, as in ALCE (Gao et al., 2023).

Recall: a sentence counts when the concatenation of its cited passages supports it (a sentence
without citations does not). Precision: a citation is irrelevant when it neither supports the
sentence alone nor is needed: the sentence's other citations support it without this one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from assistant.judge.claims import cited_sentences
from assistant.judge.judges import Judge


@dataclass
class CitationQuality:
    sentences: int = 0
    supported_sentences: int = 0
    citations: int = 0
    relevant_citations: int = 0

    @property
    def recall(self) -> float | None:
        return self.supported_sentences / self.sentences if self.sentences else None

    @property
    def precision(self) -> float | None:
        return self.relevant_citations / self.citations if self.citations else None

    @property
    def f1(self) -> float | None:
        r, p = self.recall, self.precision
        if r is None or p is None or r + p == 0:
            return None if r is None or p is None else 0.0
        return 2 * r * p / (r + p)


def citation_quality(answer: str, cited: Mapping[int, str], judge: Judge) -> CitationQuality:
    result = CitationQuality()
    for sentence in cited_sentences(answer):
        result.sentences += 1
        numbers = [n for n in sentence.citations if n in cited]
        result.citations += len(sentence.citations)  # markers to nothing count as irrelevant
        if not numbers:
            continue
        together = judge.supported(sentence.text, [cited[n] for n in numbers])
        result.supported_sentences += together
        for n in numbers:
            alone = judge.supported(sentence.text, [cited[n]])
            others = [cited[m] for m in numbers if m != n]
            needed = together and not (others and judge.supported(sentence.text, others))
            result.relevant_citations += alone or needed
    return result
