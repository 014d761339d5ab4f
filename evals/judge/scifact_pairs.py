"""SciFact claims as judge calibration pairs: (claim, cited abstract) -> supported or not.

A pair is ``supported`` when SciFact's annotators marked the cited abstract as SUPPORTing the
claim; CONTRADICT and no-evidence pairs are ``not_supported``. The evidence is the whole
abstract, as in our use (a cited abstract must contain the support somewhere).

    python evals/judge/scifact_pairs.py --split dev --out /tmp/scifact_dev_pairs.jsonl

SciFact is CC BY-NC: pairs are written outside the project, never committed.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "scifact" / "claims"


def pairs(data: Path, split: str) -> Iterator[dict[str, object]]:
    corpus = {}
    for line in (data / "corpus.jsonl").open(encoding="utf-8"):
        doc = json.loads(line)
        corpus[str(doc["doc_id"])] = doc["abstract"]
    for line in (data / f"claims_{split}.jsonl").open(encoding="utf-8"):
        claim = json.loads(line)
        for doc_id in claim.get("cited_doc_ids", []):
            doc_id = str(doc_id)
            if doc_id not in corpus:
                continue
            labels = {e["label"] for e in claim.get("evidence", {}).get(doc_id, [])}
            yield {
                "claim": claim["claim"],
                "doc_id": doc_id,
                "evidence": [" ".join(corpus[doc_id])],
                "label": "supported" if "SUPPORT" in labels else "not_supported",
                "kind": "SUPPORT"
                if "SUPPORT" in labels
                else ("CONTRADICT" if "CONTRADICT" in labels else "NO_EVIDENCE"),
            }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--split", choices=["train", "dev"], default="dev")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    rows = list(pairs(args.data, args.split))
    args.out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print(f"{len(rows)} pairs -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
