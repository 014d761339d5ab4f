"""What verification adds to an answer: the offline judge over every sentence of 5-sentence
answers, each citing one or two abstracts of the shipped corpus, with the judge's cache emptied
before each answer (as for a question about papers not asked about before).

    python benchmarks/verify_latency.py [--answers 40]

Prints p50 and p95 in milliseconds. The answers are built from the corpus: three sentences
quoted from a paper (cited), one reworded with a wrong number, one fabricated.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from assistant.embedding.embedders import MiniLMEmbedder
from assistant.ingest.corpus import load_corpus
from assistant.judge.judges import OfflineJudge
from assistant.judge.verify import Verifier
from assistant.resources import shipped_corpus
from assistant.text.normalise import split_sentences


def answers(count: int, seed: int = 0) -> list[tuple[str, dict[int, str]]]:
    rng = random.Random(seed)
    papers = [p for p in load_corpus([shipped_corpus()]).papers if len(p.abstract) > 600]
    out = []
    for _ in range(count):
        first, second = rng.sample(papers, 2)
        quoted = split_sentences(first.abstract)[:3]
        other = split_sentences(second.abstract)[0]
        text = " ".join(s.rstrip(".") + " [1]." for s in quoted)
        text += " " + other.rstrip(".") + " by 37% [2]."
        text += " It was trained on ten thousand GPUs in Antarctica [1]."
        out.append((text, {1: first.abstract, 2: second.abstract}))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=40)
    args = parser.parse_args()
    judge = OfflineJudge(MiniLMEmbedder())
    verifier = Verifier(judge)
    verifier.check(*answers(1, seed=99)[0])  # load the model once, as a running chat has
    times, sentences = [], []
    for text, sources in answers(args.answers):
        judge.extractor._states.clear()  # cold: nothing of these abstracts cached
        started = time.perf_counter()
        checks = verifier.check(text, sources)
        times.append((time.perf_counter() - started) * 1000)
        sentences.append(len(checks))
    times.sort()
    p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
    print(
        f"verification of {len(times)} answers, {statistics.mean(sentences):.1f} sentences each "
        "(offline judge, cold cache)"
    )
    print(f"p50 {statistics.median(times):.0f} ms   p95 {p95:.0f} ms   max {times[-1]:.0f} ms")


if __name__ == "__main__":
    main()
