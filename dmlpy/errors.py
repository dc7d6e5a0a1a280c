"""What a failed check looks like: findings, reports, DmlError and DmlWarning.

DirectML itself answers a bad descriptor with a bare ``E_INVALIDARG``. dmlpy keeps the
HRESULT (so code ported to Windows sees the same outcome) and attaches every finding:
the rule id, the C field path, and the expected and actual values.
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dmlpy.enums import HRESULT


class Severity(enum.Enum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True)
class Finding:
    """One rule that did not hold, at one C field path."""

    rule: str
    severity: Severity
    path: str
    expected: Any
    actual: Any
    message: str

    def __str__(self) -> str:
        return f"[{self.rule}] {self.path}: {self.message}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "severity": self.severity.value,
            "path": self.path,
            "expected": _plain(self.expected),
            "actual": _plain(self.actual),
            "message": self.message,
        }


def _plain(value: Any) -> Any:
    """JSON-friendly form of an expected/actual value."""
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


@dataclass
class Report:
    """Everything ``dmlpy.validate`` found: errors make DirectML reject the desc, warnings are risks."""

    findings: list[Finding] = field(default_factory=list)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.WARNING]

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def rule_ids(self) -> list[str]:
        return [f.rule for f in self.findings]

    def __str__(self) -> str:
        if not self.findings:
            return "no findings"
        return "\n".join(f"{f.severity.value}: {f}" for f in self.findings)

    def __repr__(self) -> str:
        counts = f"{len(self.errors)} errors, {len(self.warnings)} warnings"
        return f"<dmlpy.Report {counts}>" if not self.findings else f"<dmlpy.Report {counts}\n{self}>"

    def _repr_html_(self) -> str:
        from dmlpy.display import report_html  # noqa: PLC0415 - display sits above everything it shows

        return report_html(self)


class DmlError(Exception):
    """A DirectML call failed. ``hresult`` is what DirectML returns; ``findings`` say why."""

    def __init__(
        self,
        hresult: HRESULT,
        findings: list[Finding] | tuple[Finding, ...] = (),
        summary: str = "",
    ) -> None:
        self.hresult = HRESULT(hresult)
        self.findings = list(findings)
        self.summary = summary
        super().__init__(self._text())

    @property
    def rule(self) -> str | None:
        """The id of the first finding (most errors carry exactly one)."""
        return self.findings[0].rule if self.findings else None

    @property
    def rule_ids(self) -> list[str]:
        return [f.rule for f in self.findings]

    def _text(self) -> str:
        head = f"{self.hresult.name} (0x{self.hresult.value:08X})"
        if self.summary:
            head += f": {self.summary}"
        lines = [head] + [f"  {f}" for f in self.findings]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        from dmlpy.display import error_html  # noqa: PLC0415 - display sits above everything it shows

        return error_html(self)


class DmlWarning(UserWarning):
    """A portability risk: DirectML may or may not reject this (reference: UNCONFIRMED)."""

    def __init__(self, finding: Finding) -> None:
        self.finding = finding
        super().__init__(str(finding))


# ---------------------------------------------------------------------------------------
# Python arguments of the helper functions: a TypeError or ValueError that names the argument


def int_argument(function: str, name: str, value: Any, *, minimum: int | None = 0) -> int:
    """``value`` as an int (NumPy integers too, never a bool or a float), at least ``minimum``."""
    if isinstance(value, bool):
        msg = f"{function}: {name} is {value!r}, expected an integer, not a bool"
        raise TypeError(msg)
    try:
        number = operator.index(value)
    except TypeError:
        msg = f"{function}: {name} is {value!r} ({type(value).__name__}), expected an integer"
        raise TypeError(msg) from None
    if minimum is not None and number < minimum:
        msg = f"{function}: {name} is {number}, below {minimum}: expected at least {minimum}"
        raise ValueError(msg)
    return number


def ints_argument(function: str, name: str, values: Any, *, length: int | None = None, minimum: int | None = 0) -> tuple[int, ...]:
    """``values`` as a tuple of ints, each at least ``minimum``, with ``length`` entries when given."""
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
        msg = f"{function}: {name} is {values!r} ({type(values).__name__}), expected a sequence of integers"
        raise TypeError(msg)
    items = tuple(values)
    if length is not None and len(items) != length:
        msg = f"{function}: {name} has {len(items)} entries {tuple(items)!r}, expected {length}"
        raise ValueError(msg)
    return tuple(int_argument(function, f"{name}[{i}]", v, minimum=minimum) for i, v in enumerate(items))


__all__ = ["DmlError", "DmlWarning", "Finding", "Report", "Severity", "int_argument", "ints_argument"]
