"""The validation machinery: rules with stable ids, and the checker that collects findings.

A rule is one condition. It is declared once, at import of the module that owns it, with a
stable id (``POOLING.OUTPUT_SIZE``), a severity, a one-line statement and where the fact
comes from. Validators are short named steps that each test one condition and report the
rule by id; ``docs/rules.md`` is generated from this registry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dmlpy.enums import DML_FEATURE_LEVEL
from dmlpy.errors import Finding, Severity


@dataclass(frozen=True)
class Rule:
    id: str
    severity: Severity
    statement: str
    source: str = ""
    since: DML_FEATURE_LEVEL | None = None  # the rule applies from this feature level on

    @property
    def family(self) -> str:
        return self.id.split(".", 1)[0]


REGISTRY: dict[str, Rule] = {}


def rule(
    rule_id: str,
    statement: str,
    *,
    source: str = "",
    severity: Severity = Severity.ERROR,
    since: DML_FEATURE_LEVEL | None = None,
) -> Rule:
    """Declare a rule. Ids are stable: tests and users match on them, never on message text."""
    if rule_id in REGISTRY:
        msg = f"rule {rule_id} is declared twice"
        raise RuntimeError(msg)
    declared = Rule(rule_id, severity, statement, source, since)
    REGISTRY[rule_id] = declared
    return declared


def fmt(value: Any) -> str:
    """How a value appears in a message: enums by C suffix, sequences in braces as in C."""
    if hasattr(value, "name") and hasattr(value, "value") and not isinstance(value, bool):
        return str(value.name)
    if isinstance(value, (list, tuple)):
        return "{" + ", ".join(fmt(v) for v in value) + "}"
    return str(value)


class Checker:
    """Collects findings for one validation run at one device feature level."""

    def __init__(self, feature_level: DML_FEATURE_LEVEL = DML_FEATURE_LEVEL.LEVEL_6_4) -> None:
        self.feature_level = DML_FEATURE_LEVEL(feature_level)
        self.findings: list[Finding] = []

    def fail(
        self,
        rule_: Rule,
        path: str,
        *,
        actual: Any,
        expected: Any,
        why: str = "",
        message: str | None = None,
    ) -> None:
        """Record that ``rule_`` does not hold at ``path``.

        The default message reads ``is <actual>, expected <expected>[ = <why>]``; pass
        ``message`` when the relationship needs other words.
        """
        if message is None:
            message = f"is {fmt(actual)}, expected {fmt(expected)}"
            if why:
                message += f" = {why}"
        self.findings.append(Finding(rule_.id, rule_.severity, path, expected, actual, message))

    def check(
        self,
        condition: bool,
        rule_: Rule,
        path: str,
        *,
        actual: Any,
        expected: Any,
        why: str = "",
        message: str | None = None,
    ) -> bool:
        """``fail`` unless ``condition``; returns the condition so steps can stop early."""
        if not condition:
            self.fail(rule_, path, actual=actual, expected=expected, why=why, message=message)
        return condition

    @property
    def has_errors(self) -> bool:
        return any(f.severity is Severity.ERROR for f in self.findings)


__all__ = ["REGISTRY", "Checker", "Rule", "fmt", "rule"]
