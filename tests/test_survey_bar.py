"""The shipped survey bar is what evals/survey/fit_survey_bar.py fits on the eval set's tune and dev
splits: rerunning the script on the shipped corpus reproduces its weights and thresholds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assistant.answer.offline.survey_bar import MODEL_FILE
from tests.conftest import refit

SCRIPT = Path(__file__).parents[1] / "evals" / "survey" / "fit_survey_bar.py"


def test_the_shipped_survey_bar_is_reproducible(shipped_store: Path, tmp_path: Path):
    fitted, printed = refit(SCRIPT, shipped_store, tmp_path / "bar.json")
    shipped = json.loads(MODEL_FILE.read_text())
    assert fitted["features"] == shipped["features"]
    assert fitted["include"] == pytest.approx(shipped["include"], abs=0.02)
    assert fitted["refuse_below"] == pytest.approx(shipped["refuse_below"], abs=0.02)
    for key in ("weights", "mean", "scale"):
        assert fitted[key] == pytest.approx(shipped[key], abs=0.05), key
    assert fitted["bias"] == pytest.approx(shipped["bias"], abs=0.05)
