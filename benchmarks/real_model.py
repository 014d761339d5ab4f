"""Answer quality of real chat models on the eval set, through the product's own `assistant eval`.

Runs ``assistant eval --split SPLIT`` once per model (and per prompt folder, when given), against
any OpenAI-compatible server, one question at a time, and prints one table: correctness, false
refusals, refusal recall, cited-paper precision and recall, faithfulness, the share of answer
sentences marked unsupported, replies with no answer, and seconds per answer. Not part of CI:
a 1.5B model on two CPU cores takes about half a minute an answer.

    python benchmarks/real_model.py --base-url http://127.0.0.1:8089/v1 --model qwen2.5-1.5b
    python benchmarks/real_model.py --base-url URL --model M --prompts benchmarks/prompts/old

``--prompts DIR`` (repeatable) runs the model once per folder of prompt files
(``ASSISTANT_PROMPTS_DIR``: each file there replaces the shipped one); ``shipped`` is the
shipped prompts. ``--sample N`` takes N questions spread evenly over the split (for tuning on
dev). Each run's folder (answers, report) is kept under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

COLUMNS = [
    ("correctness", "correctness"),
    ("false refusals", "false_refusal_rate"),
    ("refusal recall", "refusal_recall"),
    ("cited precision", "cited_precision"),
    ("cited recall", "cited_recall"),
    ("faithfulness", "faithfulness"),
    ("marked unsupported", "marked_unsupported"),
]


def run_one(args: argparse.Namespace, model: str, prompts: str, out: Path) -> dict[str, object]:
    """One `assistant eval` run; its aggregate plus seconds per answer and the no-answer count."""
    env = {**os.environ, "ASSISTANT_LLM__TIMEOUT": str(args.timeout)}
    env.pop("ASSISTANT_PROMPTS_DIR", None)
    if prompts != "shipped":
        env["ASSISTANT_PROMPTS_DIR"] = str(Path(prompts).resolve())
    command = [
        sys.executable,
        "-m",
        "assistant",
        "eval",
        "--split",
        args.split,
        "--workers",
        "1",
        "--json",
        "--base-url",
        args.base_url,
        "--model",
        model,
        "--out" if not (out / "answers.jsonl").exists() else "--resume",
        str(out),
    ]
    if args.store:
        command += ["--store", str(args.store)]
    if args.limit:
        command += ["--limit", str(args.limit)]
    if args.sample:
        command += ["--set", str(sample_set(args.split, args.sample, out))]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        sys.exit(f"assistant eval failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    rows = [r for r in results["questions"] if not r.get("error")]
    seconds = [r["latency_ms"] / 1000 for r in rows]
    return {
        **results["aggregate"],
        "seconds": statistics.mean(seconds) if seconds else None,
        "answered": len(rows),
    }


def sample_set(split: str, size: int, out: Path) -> Path:
    """``size`` questions spread evenly over the split (its types come in blocks), as a set."""
    from assistant.resources import default_eval_set

    lines = default_eval_set().read_text(encoding="utf-8").splitlines()
    chosen = [line for line in lines if line.strip() and json.loads(line).get("split") == split]
    step = max(1, len(chosen) // size)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "set.jsonl"
    path.write_text("\n".join(chosen[::step][:size]) + "\n", encoding="utf-8")
    return path


def table(results: list[tuple[str, str, dict[str, object]]]) -> str:
    head = ["model", "prompts", *(name for name, _ in COLUMNS), "no answer", "s/answer"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for model, prompts, figures in results:
        cells = [model, prompts]
        for _, key in COLUMNS:
            value = figures.get(key)
            cells.append("–" if value is None else f"{float(value):.2f}")  # type: ignore[arg-type]
        cells.append(str(figures.get("no_answer", 0)))
        seconds = figures.get("seconds")
        cells.append("–" if seconds is None else f"{float(seconds):.1f}")  # type: ignore[arg-type]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True, help="OpenAI-compatible /v1 URL")
    parser.add_argument("--model", action="append", required=True, help="repeatable")
    parser.add_argument("--prompts", action="append", default=None, help="'shipped' or a folder")
    parser.add_argument("--split", default="test", choices=["tune", "dev", "test"])
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions")
    parser.add_argument("--sample", type=int, default=None, help="N questions spread over it")
    parser.add_argument("--store", type=Path, default=None, help="store of the shipped corpus")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per answer")
    parser.add_argument("--out", type=Path, default=Path("evals/runs/real-model"))
    args = parser.parse_args()
    results = []
    for model in args.model:
        for prompts in args.prompts or ["shipped"]:
            name = f"{model}-{Path(prompts).name}-{args.split}".replace("/", "_").replace(":", "_")
            figures = run_one(args, model, prompts, args.out / name)
            results.append((model, Path(prompts).name, figures))
            print(table(results[-1:]), flush=True)
    print(f"\n{args.split} split, one question at a time\n")
    print(table(results))


if __name__ == "__main__":
    main()
