"""The native library: loaded when required, stamped with this version, and honest about why not."""

import os
import subprocess
import sys

import pytest

import dmlpy
from dmlpy.backends import native


def test_native_backend_loaded_when_required() -> None:
    if os.environ.get("DMLPY_REQUIRE_NATIVE") != "1":
        pytest.skip("DMLPY_REQUIRE_NATIVE is not set")
    assert dmlpy.native_available(), dmlpy.native_status()
    assert dmlpy.create_device().backend_name == "native"


def test_native_status_names_the_loaded_version_or_the_reason() -> None:
    status = dmlpy.native_status()
    if dmlpy.native_available():
        assert dmlpy.__version__ in status
    else:
        assert "dmlpy._native" in status or "stale" in status


def test_native_module_carries_this_package_version() -> None:
    if not dmlpy.native_available():
        pytest.skip(dmlpy.native_status())
    ffi, lib = native.library()
    assert ffi.string(lib.dmlpy_native_version()).decode() == dmlpy.__version__


def test_info_command_reports_the_backend() -> None:
    done = subprocess.run([sys.executable, "-m", "dmlpy", "info"], capture_output=True, text=True, check=True)
    expected = "backend: native" if dmlpy.native_available() else "backend: numpy"
    assert expected in done.stdout
    assert "DML_OPERATOR_AVERAGE_POOLING" in done.stdout


def test_backend_env_variable_overrides_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DMLPY_BACKEND", "numpy")
    assert dmlpy.create_device().backend_name == "numpy"


def test_unknown_backend_name_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown backend"):
        dmlpy.create_device(backend="cuda")
