"""What a newcomer reads and types first: the README's opening lines, the Makefile targets it
names, and the error an unknown setting gives. (The steps themselves run from an installed
wheel in tests/test_wheel_install.py.)"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from click.testing import CliRunner

from assistant.cli.main import main
from tests.test_wheel_install import makefile_recipe

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_opens_with_setup_how_to_run_and_the_python_version():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    opening = readme.split("\n## ", 1)[0]
    first_block = re.search(r"```bash\n(.*?)```", opening, re.DOTALL)
    assert first_block and first_block.group(1).startswith("make demo")
    assert "source .venv/bin/activate" in opening and ".venv/bin/assistant" in opening
    wanted = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert wanted == ">=3.11" and "Python 3.11 or newer" in opening


def test_an_unknown_setting_names_the_right_one(tmp_path: Path):
    """Before: `retrieval.kk: Extra inputs are not permitted (set it with
    ASSISTANT_RETRIEVAL__KK …)`, the very variable that does not exist."""
    env = {"ASSISTANT_RETRIEVAL__KK": "3"}
    result = CliRunner().invoke(main, ["info", "--store", str(tmp_path / "s")], env=env)
    assert result.exit_code == 1
    error = result.stderr.strip()
    assert error.startswith("error: invalid settings: retrieval.kk: there is no setting")
    assert "did you mean ASSISTANT_RETRIEVAL__K?" in error and "\n" not in error
    assert "ASSISTANT_RETRIEVAL__SURVEY_K" in error  # the valid ones are listed
    assert "set it with ASSISTANT_RETRIEVAL__KK" not in error


def test_a_wrong_value_still_names_its_variable(tmp_path: Path):
    env = {"ASSISTANT_RETRIEVAL__K": "0"}
    result = CliRunner().invoke(main, ["info", "--store", str(tmp_path / "s")], env=env)
    assert result.exit_code == 1 and "set it with ASSISTANT_RETRIEVAL__K " in result.stderr


def test_make_check_keeps_the_eval_report_it_prints():
    """Before: eval-smoke printed `report: evals/runs/ci/report.html`, then deleted it."""
    recipe = makefile_recipe("eval-smoke")
    (evaluate,) = [line for line in recipe if " eval " in line]
    out = re.search(r"--out (\S+)", evaluate)
    assert out
    after = recipe[recipe.index(evaluate) + 1 :]
    assert not [line for line in after if out.group(1) in line], after
