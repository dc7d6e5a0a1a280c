"""Mutating any public attribute between pipeline steps gives a dmlpy error or the right answer, never a crash.

Each batch runs ``mutate.py`` in its own interpreter with faulthandler on, so a segfault in a
kernel shows up as a nonzero exit (and a traceback on stderr) instead of killing pytest.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import dmlpy

HERE = Path(__file__).resolve().parent


def run_batch(backend: str, *args: str) -> dict:
    if backend == "native" and not dmlpy.native_available():
        if os.environ.get("DMLPY_REQUIRE_NATIVE") == "1":
            pytest.fail(f"DMLPY_REQUIRE_NATIVE=1 but the native backend did not load: {dmlpy.native_status()}")
        pytest.skip(dmlpy.native_status())
    result = subprocess.run([sys.executable, "-X", "faulthandler", str(HERE / "mutate.py"), "--backend", backend, *args],
                            capture_output=True, text=True, timeout=1800, check=False)  # fmt: skip
    assert result.returncode in (0, 1), f"the batch died (exit {result.returncode}):\n{result.stderr[-4000:]}"
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["failures"] == [], "\n".join(summary["failures"])
    assert result.returncode == 0
    return summary


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_mutating_any_public_attribute_between_steps_never_crashes(backend: str) -> None:
    summary = run_batch(backend, "--count", "1200")
    # the sample reaches all three outcomes: refused assignments, dmlpy errors, unchanged answers
    assert summary["refused"] > 0 and summary["error"] > 0 and summary["correct"] > 0, summary


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_mutating_every_public_attribute_three_ways_never_crashes(backend: str) -> None:
    summary = run_batch(backend, "--per-attribute", "3")
    assert summary["chosen"] == summary["attributes"]
