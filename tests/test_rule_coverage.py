"""Every declared rule is exercised: its id appears as a string literal in some test file."""

from __future__ import annotations

import ast
from pathlib import Path

import dmlpy  # noqa: F401 - importing dmlpy registers every operator module's rules
import dmlpy.interop.dxdispatch  # noqa: F401 - DXDISPATCH.* rules
import dmlpy.interop.onnx  # noqa: F401 - ONNX.* rules
from dmlpy.rules import REGISTRY

TESTS = Path(__file__).resolve().parent


def string_literals_in_other_tests() -> set[str]:
    """Every string constant (f-string pieces included) in tests/**/*.py except this file."""
    found: set[str] = set()
    for path in sorted(TESTS.rglob("*.py")):
        if path.resolve() == Path(__file__).resolve():
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        found.update(
            node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
        )
    return found


def test_the_registry_declares_rules() -> None:
    assert len(REGISTRY) > 0
    assert all(rule_id == rule.id for rule_id, rule in REGISTRY.items())


def test_every_rule_id_appears_as_a_string_literal_in_some_test() -> None:
    literals = string_literals_in_other_tests()
    missing = sorted(rule_id for rule_id in REGISTRY if rule_id not in literals)
    assert not missing, f"{len(missing)} rule id(s) no test names: {', '.join(missing)}"


def test_every_rule_id_is_family_dot_name_in_capitals() -> None:
    bad = [rule_id for rule_id in REGISTRY if rule_id.count(".") != 1 or rule_id != rule_id.upper()]
    assert not bad, bad
