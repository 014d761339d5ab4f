"""Would word-piece alignment find the answering sentence better? Held-out figures for the
answer model (``assistant.answer.offline.answering``) with alignment signals added.

Rows, labels and the leave-one-paper-out fit are those of ``fit_answer_model.py`` (tune and
dev, never test). The signals are the offline judge's (``assistant.judge.features``): for each
sentence, the mean over the question's word pieces of their best MiniLM match in it
(BERTScore-style recall, which sees "bigger step sizes" near "larger learning rates" where the
pooled cosine may not), and that minus the paper's best. It prints the share of reference
facts in the first 1 / 2 / 3 sentences the model would quote, per split and variant.

    assistant ingest --store /tmp/s && python evals/answering/signal_study.py --store /tmp/s
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import numpy as np
from fit_answer_model import EVAL_SET, FIRST, Paper, collect, held_out_found, wanted

from assistant.core import Assistant
from assistant.embedding.embedders import MiniLMEmbedder
from assistant.eval.dataset import load_eval_set
from assistant.judge.features import FeatureExtractor

VARIANTS = {
    "(none: the shipped model)": lambda own, best: [],
    "alignment": lambda own, best: [own],
    "alignment - paper's best": lambda own, best: [own - best],
    "both": lambda own, best: [own, own - best],
}


def alignments(assistant: Assistant, papers: list[Paper], questions: dict[str, str]) -> list:
    embedder = assistant.provider.embedder  # type: ignore[attr-defined]
    assert isinstance(embedder, MiniLMEmbedder), "alignment reads MiniLM's word pieces"
    extractor = FeatureExtractor(embedder)
    return [extractor.token_recalls(questions[p.question], p.texts)[:-1] for p in papers]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", required=True, help="a store holding the shipped corpus")
    parser.add_argument("--eval-set", type=Path, default=EVAL_SET)
    args = parser.parse_args()
    items = [i for i in load_eval_set(args.eval_set) if wanted(i)]
    with Assistant(store=args.store) as assistant:
        papers = collect(assistant, items)
        found = alignments(assistant, papers, {i.id: i.question for i in items})
    print(f"{len(papers)} question-paper pairs; facts in the first {' / '.join(map(str, FIRST))}")
    for name, extra in VARIANTS.items():
        added = [
            replace(
                p,
                rows=[
                    row + extra(float(own), float(a.max()))
                    for row, own in zip(p.rows, a, strict=True)
                ],
            )
            for p, a in zip(papers, found, strict=True)
        ]
        result = held_out_found(added)
        shown = "   ".join(
            f"{split}: " + " / ".join(f"{np.mean(result[f'{split} model'][k]):.3f}" for k in FIRST)
            for split in ("tune", "dev")
        )
        print(f"{name:28} {shown}")


if __name__ == "__main__":
    main()
