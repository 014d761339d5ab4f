"""Does the judge catch what hallucinations look like? Sentences of abstracts, kept and perturbed
(a number changed, another paper's name swapped in, a negation, a dropped "up to" or "in some
settings"; see evals/judge/perturbations.py), each judged against its own abstract, from the
shipped corpus and from SciFact's (read in place: CC BY-NC, never copied into the project).

    python benchmarks/judge_perturbations.py [--per-kind 200] [--scifact-abstracts 150]

Prints, per corpus and kind, how many cases there are and the share the judge alone (its score
against its threshold) and the decision the marks use (``verify.judgement``: the judge and the
exact checks) catch, i.e. do not mark ✓; for the originals, the share kept (marked ✓). The
"judge alone" column is the marks before the checks (the weights are unchanged). 150 SciFact
abstracts keep their sentences within the judge's cache (4,000 texts); more are slower, not
different.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Iterable
from pathlib import Path

from assistant.embedding.embedders import MiniLMEmbedder
from assistant.ingest.corpus import load_corpus
from assistant.judge.conflicts import PaperText
from assistant.judge.judges import OfflineJudge
from assistant.judge.verify import judgement
from assistant.resources import shipped_corpus

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "evals" / "judge"))
from perturbations import KINDS, Case, cases  # noqa: E402
from scifact_pairs import DEFAULT_DATA  # noqa: E402


def scifact_papers(data: Path, count: int, seed: int = 0) -> list[PaperText]:
    lines = (data / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    picked = random.Random(seed).sample(lines, min(count, len(lines)))
    return [PaperText(" ".join(json.loads(line)["abstract"])) for line in picked]


def shipped_papers() -> list[PaperText]:
    return [PaperText(p.abstract, p.label) for p in load_corpus([shipped_corpus()]).papers]


def score(judge: OfflineJudge, batch: Iterable[Case]) -> dict[str, list[tuple[bool, str]]]:
    """Per kind: (judge alone supports it, the decision's verdict) for each case."""
    out: dict[str, list[tuple[bool, str]]] = {kind: [] for kind in KINDS}
    for case in batch:
        alone = judge.support(case.claim, [case.source.text]) >= judge.threshold
        found = judgement(judge, case.claim, [case.source], (case.source, *case.others))
        out[case.kind].append((alone, found.verdict))
    return out


def table(corpus: str, results: dict[str, list[tuple[bool, str]]]) -> None:
    for kind in KINDS:
        rows = results[kind]
        if not rows:
            continue
        n = len(rows)
        if kind == "original":
            alone = sum(a for a, _ in rows) / n
            decided = sum(v == "supported" for _, v in rows) / n
            what = "kept"
        else:
            alone = sum(not a for a, _ in rows) / n
            decided = sum(v != "supported" for _, v in rows) / n
            what = "caught"
        unsupported = sum(v == "unsupported" for _, v in rows) / n
        cells = (corpus, kind, n, what, f"{alone:.2f}", f"{decided:.2f}", f"{unsupported:.2f}")
        print("| " + " | ".join(map(str, cells)) + " |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-kind", type=int, default=200)
    parser.add_argument("--scifact-abstracts", type=int, default=150)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    judge = OfflineJudge(MiniLMEmbedder())
    corpora = {"NeurIPS 2025 (shipped)": shipped_papers()}
    if (args.data / "corpus.jsonl").exists():
        corpora["SciFact"] = scifact_papers(args.data, args.scifact_abstracts)
    else:
        print(f"(no SciFact at {args.data}: its rows are left out)")
    started = time.perf_counter()
    print("| corpus | kind | cases | share | judge alone | decision (✓ vs ? ✗) | of which ✗ |")
    print("|---|---|---|---|---|---|---|")
    for name, papers in corpora.items():
        table(name, score(judge, cases(papers, args.per_kind)))
    print(f"({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
