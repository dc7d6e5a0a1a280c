"""Backends run a validated operator on bound memory: the native C library or NumPy.

A backend knows nothing about bindings: it receives, per slot, the raw bytes of the bound
range and the tensor desc that describes them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from dmlpy.operators import OperatorSpec
from dmlpy.rules import rule
from dmlpy.tensor import DML_BUFFER_TENSOR_DESC

# Declared here, not in native.py, so the registry is the same whether or not native loaded.
NATIVE_REJECTED = rule(
    "NATIVE.REJECTED",
    "The native kernel's own re-check of the desc and buffers passed (it never trusts its caller).",
    source="docs/deviations.md",
)


@dataclass(frozen=True)
class BoundTensor:
    """One slot at dispatch: its name, the bound bytes (None when unbound) and its desc."""

    name: str
    memory: np.ndarray | None  # uint8, exactly the bound range
    tensor: DML_BUFFER_TENSOR_DESC | None


Runner = Callable[[], None]


class Backend(Protocol):
    name: str

    def prepare(self, spec: OperatorSpec, desc: Any) -> Any:
        """Per compiled operator: whatever the backend wants to keep (a lowered C struct)."""

    def bind(self, prepared: Any, inputs: list[BoundTensor], outputs: list[BoundTensor]) -> Runner:
        """Per recorded dispatch: a call that runs the operator on exactly these bytes."""

    def sequence(self, runners: list[Runner]) -> list[Runner]:
        """A graph's bound runners as the steps it executes, in order (the native backend joins its own)."""


def native_available() -> bool:
    """Whether the compiled C library loaded (``native_status()`` says why not)."""
    from dmlpy.backends import native  # noqa: PLC0415 - loading is lazy on purpose

    return native.available()


def native_status() -> str:
    from dmlpy.backends import native  # noqa: PLC0415

    return native.status()


MAX_THREADS = 2**32 - 1  # dmlpy_execute takes the count as a UINT


def thread_count(threads: int = 0) -> int:
    """The native kernels' thread cap: ``DMLPY_NUM_THREADS`` when set, else ``threads``; 0 means every core."""
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)):
        msg = f"threads must be an int in 0 .. {MAX_THREADS} (0: every core), not {type(threads).__name__}"
        raise TypeError(msg)
    source, value = "threads", int(threads)
    setting = os.environ.get("DMLPY_NUM_THREADS", "").strip()
    if setting:
        source = "DMLPY_NUM_THREADS"
        try:
            value = int(setting)
        except ValueError:
            msg = f"DMLPY_NUM_THREADS is {setting!r}; set it to an integer in 0 .. {MAX_THREADS} (0: every core)"
            raise ValueError(msg) from None
    if not 0 <= value <= MAX_THREADS:
        msg = f"{source} is {value}; a thread count is a UINT, in 0 .. {MAX_THREADS} (0: every core)"
        raise ValueError(msg)
    return value


def native_kernels() -> str:
    """Which instruction-set variant of the native kernels runs, and why (RuntimeError when not loaded)."""
    from dmlpy.backends import native  # noqa: PLC0415

    return native.kernels()


def get_backend(name: str = "auto", threads: int = 0) -> Backend:
    """``'native'``, ``'numpy'`` or ``'auto'`` (native when built); ``DMLPY_BACKEND`` overrides 'auto'."""
    threads = thread_count(threads)
    if name == "auto":
        name = os.environ.get("DMLPY_BACKEND", "auto")
    if name == "auto":
        name = "native" if native_available() else "numpy"
    if name == "native":
        from dmlpy.backends.native import NativeBackend  # noqa: PLC0415

        return NativeBackend(threads)
    if name == "numpy":
        from dmlpy.backends.numpy_backend import NumpyBackend  # noqa: PLC0415

        return NumpyBackend()
    msg = f"unknown backend {name!r}; expected 'native', 'numpy' or 'auto'"
    raise ValueError(msg)


__all__ = ["Backend", "BoundTensor", "Runner", "get_backend", "native_available", "native_status", "thread_count"]
