"""The rules every operator shares, read from data: DirectML.h's field facts and the support data.

Per-slot tensor support (TENSOR.DATA_TYPE_SUPPORT, TENSOR.DIMENSION_COUNT_SUPPORT) applies to
every operator. The rules here apply to the operators no family module checks with its own
rules: a family module (pooling, convolution, ...) states the same relationships under its own
stable ids (POOLING.ARRAY_LENGTH, CONVOLUTION.MODE, ...), and one finding per mistake is enough.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

from dmlpy.enums import c_name, value_since
from dmlpy.rules import Checker, fmt, rule
from dmlpy.structs import ARRAY_KINDS, Kind, counted_arrays, kind_of
from dmlpy.support import Constraint, OperatorSupport

REQUIRED = rule(
    "FIELD.REQUIRED",
    "An array DirectML.h does not mark optional is present (not NULL) when the count that sizes it is not 0.",
    source="DirectML.h _Field_size_ and _Maybenull_ annotations",
)
ARRAY_LENGTH = rule(
    "FIELD.ARRAY_LENGTH",
    "Every array has as many entries as the count field that sizes it (DimensionCount, AxisCount, InputCount, ...).",
    source="DirectML.h _Field_size_ annotations",
)
ENUM_VALUE = rule("ENUM.VALUE", "An enum field holds one of its enum's values.", source="DirectML.h enum definitions")
ENUM_FEATURE_LEVEL = rule(
    "ENUM.FEATURE_LEVEL",
    "An enum field's value exists at the device's feature level (DML_PADDING_MODE_SYMMETRIC arrived at FL 3.0).",
    source="DirectML.h DML_TARGET_VERSION guards",
)
SAME_DATA_TYPE = rule("TENSOR.SAME_DATA_TYPE", "Tensors the operator's page names together have the same DataType.", source="each operator's Tensor constraints")
SAME_DIMENSION_COUNT = rule("TENSOR.SAME_DIMENSION_COUNT", "Tensors the operator's page names together have the same DimensionCount.", source="each operator's Tensor constraints")
SAME_SIZES = rule("TENSOR.SAME_SIZES", "Tensors the operator's page names together have the same Sizes.", source="each operator's Tensor constraints")

_SAME_RULES = {"DataType": SAME_DATA_TYPE, "DimensionCount": SAME_DIMENSION_COUNT, "Sizes": SAME_SIZES}


def check_fields(ctx: Checker, desc: Any, path: str) -> None:
    """Arrays against their counts, and enum values against their enum and the device's feature level."""
    for f in dataclasses.fields(desc):
        kind = kind_of(f)
        if kind is Kind.DIMENSION_COUNT:
            _check_counted_arrays(ctx, desc, f.name, path)
        elif kind is Kind.ENUM:
            _check_enum(ctx, getattr(desc, f.name), f.metadata["enum"], f"{path}.{f.name}")


def _check_counted_arrays(ctx: Checker, desc: Any, count_name: str, path: str) -> None:
    count = getattr(desc, count_name)
    optional = {f.name: bool(f.metadata.get("optional")) for f in dataclasses.fields(desc) if kind_of(f) in ARRAY_KINDS}
    for name in counted_arrays(type(desc), count_name):
        values = getattr(desc, name)
        if values is None:
            ctx.check(optional[name] or count == 0, REQUIRED, f"{path}.{name}", actual=None, expected=f"{count} entries",
                      message=f"is NULL, but {count_name} = {count} says it has {count} entries")  # fmt: skip
            continue
        ctx.check(len(values) == count, ARRAY_LENGTH, f"{path}.{name}", actual=len(values), expected=count,
                  message=f"has {len(values)} entr{'y' if len(values) == 1 else 'ies'}, expected {count_name} = {count}")  # fmt: skip


def _check_enum(ctx: Checker, value: Any, enum_type: type[enum.Enum], path: str) -> None:
    if not ctx.check(isinstance(value, enum_type), ENUM_VALUE, path, actual=value, expected=f"a {enum_type.__name__} value",
                     message=f"is {fmt(value)}, which is not a {enum_type.__name__} value ({', '.join(str(m.value) for m in enum_type)})"):  # fmt: skip
        return
    since = value_since(value, enum_type)
    if since is not None:
        ctx.check(ctx.feature_level >= since, ENUM_FEATURE_LEVEL, path, actual=value, expected=f"a value of FL {ctx.feature_level.dotted}",
                  message=f"is {c_name(value)}, which arrived at FL {since.dotted}; the device targets FL {ctx.feature_level.dotted}")  # fmt: skip


def check_constraints(ctx: Checker, support: OperatorSupport, buffers: dict[str, Any], path: str) -> None:
    """The support data's tensor constraints, between the tensors that are present and usable."""
    for constraint in support.constraints:
        _check_constraint(ctx, constraint, buffers, path)


def _present(constraint: Constraint, buffers: dict[str, Any]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for name in constraint.tensors:
        value = buffers.get(name)
        if isinstance(value, list):  # a tensor array: every element
            out += [(f"{name}[{i}]", b) for i, b in enumerate(value) if b is not None]
        elif value is not None:
            out.append((name, value))
    return out


def _check_constraint(ctx: Checker, constraint: Constraint, buffers: dict[str, Any], path: str) -> None:
    present = _present(constraint, buffers)
    if len(present) < 2:
        return
    (first, reference), others = present[0], present[1:]
    for prop in constraint.same:
        for name, buffer in others:
            expected, actual = _property(reference, prop), _property(buffer, prop)
            if prop == "Sizes" and buffer.DimensionCount != reference.DimensionCount:
                continue  # a different rank is its own finding when DimensionCount is constrained too
            ctx.check(actual == expected, _SAME_RULES[prop], f"{path}.{name}.{prop}", actual=actual, expected=expected, why=f"{first}.{prop}")


def _property(buffer: Any, prop: str) -> Any:
    value = getattr(buffer, prop)
    return tuple(value) if prop == "Sizes" and value is not None else value


__all__ = ["check_constraints", "check_fields"]
