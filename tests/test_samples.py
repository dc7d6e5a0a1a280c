"""Every sample runs to completion (each asserts its own results)."""

import subprocess
import sys
from pathlib import Path

import pytest

SAMPLES = sorted((Path(__file__).resolve().parent.parent / "samples").glob("*.py"))


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.stem for s in SAMPLES])
def test_sample_runs_and_checks_its_own_result(sample: Path) -> None:
    done = subprocess.run([sys.executable, str(sample)], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"{sample.name} failed:\n{done.stdout}\n{done.stderr}"
    assert done.stdout.strip(), f"{sample.name} printed nothing"


def test_there_are_samples_to_run() -> None:
    assert len(SAMPLES) >= 2
