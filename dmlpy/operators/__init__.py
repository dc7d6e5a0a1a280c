"""The operator registry: every operator family registers its desc, rules and NumPy kernel here.

The device knows operators only through this registry, so adding an
operator family is one module that calls ``register``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dmlpy.enums import DML_OPERATOR_TYPE, c_name
from dmlpy.errors import Finding
from dmlpy.rules import Checker, fmt, rule
from dmlpy.structs import CStruct, FieldError, Kind, c_field, is_struct, normalized
from dmlpy.support import OperatorSupport
from dmlpy.tensor import DML_BUFFER_TENSOR_DESC, check_tensor

OP = DML_OPERATOR_TYPE

# check(ctx, desc, path, buffers): the family's own rules, after every tensor passed its own
OperatorCheck = Callable[[Checker, Any, str, dict[str, DML_BUFFER_TENSOR_DESC | None]], None]
# reference(desc, inputs) -> outputs: the NumPy kernel, on arrays in the tensors' logical shape
ReferenceKernel = Callable[[Any, dict[str, np.ndarray | None]], dict[str, np.ndarray]]


@dataclass(frozen=True)
class OperatorSpec:
    operator_type: OP
    desc_class: type
    support: OperatorSupport
    check: OperatorCheck
    reference: ReferenceKernel
    in_place: bool = False  # DML_SCHEMA_OPERATOR_SUPPORT_FLAG_IN_PLACE_EXECUTION

    @property
    def c_struct(self) -> str:
        return self.desc_class.__name__


REGISTRY: dict[OP, OperatorSpec] = {}
_BY_CLASS: dict[type, OperatorSpec] = {}


def register(spec: OperatorSpec) -> OperatorSpec:
    REGISTRY[spec.operator_type] = spec
    _BY_CLASS[spec.desc_class] = spec
    return spec


def spec_for_desc(desc: Any) -> OperatorSpec | None:
    return _BY_CLASS.get(type(desc))


@dataclass
class DML_OPERATOR_DESC(CStruct):  # noqa: N801 - the C name
    Type: OP | int = c_field(Kind.ENUM, OP.INVALID, enum_type=OP)
    Desc: Any = c_field(Kind.DESC_POINTER)


def operator_desc(desc: Any) -> DML_OPERATOR_DESC:
    """Wrap a bare operator desc in DML_OPERATOR_DESC, inferring ``Type`` from its class."""
    if isinstance(desc, DML_OPERATOR_DESC):
        return desc
    spec = spec_for_desc(desc)
    if spec is None:
        msg = f"{type(desc).__name__} is not an operator desc dmlpy knows"
        raise TypeError(msg)
    return DML_OPERATOR_DESC(spec.operator_type, desc)


def wrap_operator_desc(value: Any, path: str) -> DML_OPERATOR_DESC:
    """``operator_desc`` for a field value, reporting a wrong type as FIELD.TYPE."""
    if isinstance(value, DML_OPERATOR_DESC) or spec_for_desc(value) is not None:
        return operator_desc(value)
    from dmlpy.structs import FIELD_TYPE  # noqa: PLC0415

    raise FieldError(
        Finding(FIELD_TYPE.id, FIELD_TYPE.severity, path, "a DML_OPERATOR_DESC or an operator desc", repr(value),
                f"is {value!r} ({type(value).__name__}), expected a DML_OPERATOR_DESC or an operator desc")  # fmt: skip
    )


TYPE_UNKNOWN = rule("OPERATOR.TYPE", "DML_OPERATOR_DESC.Type is a DML_OPERATOR_TYPE dmlpy emulates, and Desc is that type's struct.", source="ns-directml-dml_operator_desc")
FEATURE_LEVEL = rule("OPERATOR.FEATURE_LEVEL", "The operator exists at the device's feature level.", source="dml-feature-level-history")


def check_operator(ctx: Checker, value: Any) -> Any | None:
    """Validate an operator desc (bare or wrapped); returns the normalised copy, or None if unusable."""
    op_desc = _unwrap(ctx, value)
    if op_desc is None:
        return None
    spec = REGISTRY[op_desc.Type]
    path = spec.c_struct
    try:
        desc = normalized(op_desc.Desc, path)
    except FieldError as error:
        ctx.findings.append(error.finding)
        return None
    introduced = spec.support.introduced
    if not ctx.check(
        ctx.feature_level >= introduced, FEATURE_LEVEL, path, actual=ctx.feature_level, expected=introduced,
        message=f"{c_name(spec.operator_type)} requires {c_name(introduced)}; the device targets {c_name(ctx.feature_level)}",
    ):  # fmt: skip
        return None
    found = spec.support.table_at(ctx.feature_level)
    assert found is not None
    _, table = found
    buffers = {
        slot.name: check_tensor(ctx, getattr(desc, slot.name), f"{path}.{slot.name}", slot, table.get(slot.name))
        for slot in spec.support.slots
    }
    spec.check(ctx, desc, path, buffers)
    return desc


def _unwrap(ctx: Checker, value: Any) -> DML_OPERATOR_DESC | None:
    if isinstance(value, DML_OPERATOR_DESC):
        op_type, inner = value.Type, value.Desc
        spec = REGISTRY.get(op_type) if isinstance(op_type, int) else None
        if spec is None or not isinstance(inner, spec.desc_class):
            wanted = spec.c_struct if spec else "a DML_OPERATOR_TYPE dmlpy emulates"
            ctx.fail(TYPE_UNKNOWN, "DML_OPERATOR_DESC", actual=f"Type={fmt(op_type)}, Desc={type(inner).__name__}", expected=wanted,
                     message=f"has Type {fmt(op_type)} and Desc {type(inner).__name__}; expected {wanted}"
                     + ("" if spec else f" (one of {', '.join(s.c_struct for s in REGISTRY.values())})"))  # fmt: skip
            return None
        return DML_OPERATOR_DESC(op_type, inner)
    spec = spec_for_desc(value)
    if spec is None:
        ctx.fail(TYPE_UNKNOWN, type(value).__name__, actual=type(value).__name__, expected="an operator desc",
                 message=f"{type(value).__name__} is not an operator desc dmlpy emulates")  # fmt: skip
        return None
    return DML_OPERATOR_DESC(spec.operator_type, value)


def tensor_fields(desc: Any) -> list[str]:
    return [f.name for f in dataclasses.fields(desc) if f.metadata.get("kind") is Kind.TENSOR]


def _ensure_families_loaded() -> None:
    from dmlpy.operators import pooling  # noqa: F401, PLC0415 - registration side effect
    from dmlpy.operators import space_depth  # noqa: F401, PLC0415 - registration side effect
    from dmlpy.operators import activation  # noqa: F401, PLC0415 - registration side effect
    from dmlpy.operators import convolution  # noqa: F401, PLC0415 - registration side effect


_ensure_families_loaded()

__all__ = [
    "DML_OPERATOR_DESC",
    "REGISTRY",
    "OperatorSpec",
    "check_operator",
    "is_struct",
    "operator_desc",
    "register",
    "spec_for_desc",
    "tensor_fields",
]
