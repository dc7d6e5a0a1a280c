"""The tutorial (docs/tutorial/) runs top to bottom: every step asserts its own results."""

import subprocess
import sys
from pathlib import Path

import pytest

TUTORIAL = Path(__file__).resolve().parent.parent / "docs" / "tutorial"
STEPS = sorted(TUTORIAL.glob("[0-9][0-9]_*.py"))


@pytest.mark.parametrize("step", STEPS, ids=[s.stem for s in STEPS])
def test_tutorial_step_runs_and_checks_its_own_result(step: Path) -> None:
    done = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", str(step)], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"{step.name} failed:\n{done.stdout}\n{done.stderr}"
    assert done.stdout.strip(), f"{step.name} printed nothing"


def test_the_tutorial_has_its_seven_steps_in_order_and_the_readme_links_each() -> None:
    assert [s.name[:2] for s in STEPS] == ["01", "02", "03", "04", "05", "06", "07"]
    readme = (TUTORIAL / "README.md").read_text(encoding="utf-8")
    assert all(f"({s.name})" in readme for s in STEPS)


def test_each_step_is_a_percent_format_notebook_with_a_markdown_title() -> None:
    for step in STEPS:
        lines = step.read_text(encoding="utf-8").splitlines()
        assert lines[0] == "# %% [markdown]" and lines[1].startswith(f"# # {int(step.name[:2])}. "), step.name
