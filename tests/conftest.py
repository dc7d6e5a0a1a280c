"""Shared fixtures: both backends for every kernel test, devices, and rule-id assertions."""

from __future__ import annotations

import os
from collections.abc import Iterable

import numpy as np
import pytest

import dmlpy
from dmlpy.errors import DmlError, Finding, Report

NATIVE_REQUIRED = os.environ.get("DMLPY_REQUIRE_NATIVE") == "1"
BACKENDS = ["native", "numpy"]


def _skip_native_unless_required() -> None:
    if not dmlpy.native_available():
        if NATIVE_REQUIRED:
            pytest.fail(f"DMLPY_REQUIRE_NATIVE=1 but the native backend did not load: {dmlpy.native_status()}")
        pytest.skip(f"native backend unavailable: {dmlpy.native_status()}")


def native_device(threads: int = 0) -> dmlpy.Device:
    """A native device; skips the test when the C module is not built, fails it when DMLPY_REQUIRE_NATIVE=1."""
    _skip_native_unless_required()
    return dmlpy.create_device(backend="native", threads=threads)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Every kernel test runs once per backend."""
    if request.param == "native":
        _skip_native_unless_required()
    return str(request.param)


@pytest.fixture
def device(backend: str) -> dmlpy.Device:
    return dmlpy.create_device(backend=backend)


@pytest.fixture
def numpy_device() -> dmlpy.Device:
    return dmlpy.create_device(backend="numpy")


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261121)


def rule_ids(source: DmlError | Report | Iterable[Finding]) -> list[str]:
    if isinstance(source, (DmlError, Report)):
        return [f.rule for f in source.findings]
    return [f.rule for f in source]


def assert_rule(source: DmlError | Report | Iterable[Finding], rule_id: str, path: str | None = None) -> Finding:
    """Assert that ``rule_id`` was reported (at ``path``, if given) and return that finding."""
    findings = list(source.findings if isinstance(source, (DmlError, Report)) else source)
    matching = [f for f in findings if f.rule == rule_id and (path is None or f.path == path)]
    assert matching, f"expected {rule_id}" + (f" at {path}" if path else "") + f"; got {[(f.rule, f.path) for f in findings]}"
    return matching[0]
