"""The README's commands are the ones CI runs, and its quickstart output is what dmlpy prints."""

import re
from pathlib import Path

import dmlpy
from dmlpy import DML_AVERAGE_POOLING_OPERATOR_DESC, buffer_tensor

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _setup_commands() -> list[str]:
    section = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```\n(.+?)\n```", section)


def test_readme_has_exactly_two_setup_commands() -> None:
    commands = _setup_commands()
    assert len(commands) == 2, commands
    assert "samples/01_average_pooling.py" in commands[0]
    assert "[test]" in commands[1] and "pytest" in commands[1]


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert _setup_commands()[1] in ci.splitlines()
    assert "venv" in ci and "DMLPY_REQUIRE_NATIVE=1" in ci


def test_quickstart_prints_what_the_readme_shows() -> None:
    desc = DML_AVERAGE_POOLING_OPERATOR_DESC(
        InputTensor=buffer_tensor("float32", (1, 1, 4, 4)),
        OutputTensor=buffer_tensor("float32", (1, 1, 3, 3)),
        DimensionCount=2, Strides=(2, 2), WindowSize=(2, 2),
        StartPadding=(0, 0), EndPadding=(0, 0), IncludePadding=False,
    )  # fmt: skip
    printed = str(dmlpy.validate(desc))
    for line in printed.splitlines():
        assert line in README
