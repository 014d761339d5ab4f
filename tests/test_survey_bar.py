"""The shipped survey bar is what evals/survey/fit_survey_bar.py fits on the eval set's tune and dev
splits: rerunning the script on the shipped corpus reproduces its weights and thresholds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from assistant.llm.survey import MODEL_FILE

SCRIPT = Path(__file__).parents[1] / "evals" / "survey" / "fit_survey_bar.py"


def test_the_shipped_survey_bar_is_reproducible(shipped_store: Path, tmp_path: Path):
    out = tmp_path / "bar.json"
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--store", str(shipped_store), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    assert "leave-one-question-out cited precision" in run.stdout
    fitted, shipped = json.loads(out.read_text()), json.loads(MODEL_FILE.read_text())
    assert fitted["features"] == shipped["features"]
    assert fitted["include"] == pytest.approx(shipped["include"], abs=0.02)
    assert fitted["refuse_below"] == pytest.approx(shipped["refuse_below"], abs=0.02)
    for key in ("weights", "mean", "scale"):
        assert fitted[key] == pytest.approx(shipped[key], abs=0.05), key
    assert fitted["bias"] == pytest.approx(shipped["bias"], abs=0.05)
