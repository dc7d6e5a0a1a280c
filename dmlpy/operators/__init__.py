"""The operator registry: every DirectML operator type, with its desc, rules and kernels.

Every operator of DirectML.h is registered from the generated descs (``dmlpy.operators.descs``)
with the generic rules only; an operator family module (pooling, convolution, ...) re-registers
the operators it emulates with their own rules and NumPy kernel. The device knows operators only
through this registry. An operator without a kernel is validated like any other; CreateOperator
succeeds with an OPERATOR.NOT_EMULATED warning and CompileOperator answers E_NOTIMPL.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dmlpy.enums import DML_OPERATOR_TYPE, c_name
from dmlpy.errors import Finding, Severity
from dmlpy.operators import generic
from dmlpy.operators.descs import OPERATORS as DESCS
from dmlpy.rules import Checker, fmt, rule
from dmlpy.structs import CStruct, FieldError, Kind, OperatorFacts, c_field, is_struct, kind_of, normalized
from dmlpy.support import OPERATORS as SUPPORT
from dmlpy.support import OperatorSupport, SupportData, TensorSlot, load_support
from dmlpy.tensor import DML_BUFFER_TENSOR_DESC, check_tensor

OP = DML_OPERATOR_TYPE

# check(ctx, desc, path, buffers): the family's own rules, after every tensor passed its own
OperatorCheck = Callable[[Checker, Any, str, dict[str, DML_BUFFER_TENSOR_DESC | None]], None]
# reference(desc, inputs) -> outputs: the NumPy kernel, on arrays in the tensors' logical shape
ReferenceKernel = Callable[[Any, dict[str, np.ndarray | None]], dict[str, np.ndarray]]


def no_family_rules(ctx: Checker, desc: Any, path: str, buffers: dict[str, Any]) -> None:
    """The family check of an operator that only has the generic rules so far."""


@dataclass(frozen=True)
class OperatorSpec:
    operator_type: OP
    desc_class: type
    support: OperatorSupport
    check: OperatorCheck = no_family_rules
    reference: ReferenceKernel | None = None  # None: validated, but no kernel runs it yet
    in_place: bool = False  # DML_SCHEMA_OPERATOR_SUPPORT_FLAG_IN_PLACE_EXECUTION
    native: bool = False  # the C library runs it too
    # which descs the C kernel takes, when not all the valid ones (RELU on integers from FL 5.1: NumPy runs those)
    native_covers: Callable[[Any], bool] | None = None
    # run the generic field and constraint rules before ``check`` (every family module written from the
    # support data does; the first four families state those rules under their own ids)
    generic_rules: bool = False

    def runs_natively(self, desc: Any) -> bool:
        """Whether the native backend runs ``desc`` with its C kernel (otherwise it runs the NumPy kernel)."""
        return self.native and (self.native_covers is None or self.native_covers(desc))

    @property
    def c_struct(self) -> str:
        return self.desc_class.__name__

    @property
    def facts(self) -> OperatorFacts:
        return DESCS[self.operator_type]

    @property
    def emulated(self) -> bool:
        return self.reference is not None


REGISTRY: dict[OP, OperatorSpec] = {}
_BY_CLASS: dict[type, OperatorSpec] = {}


def register(spec: OperatorSpec) -> OperatorSpec:
    REGISTRY[spec.operator_type] = spec
    _BY_CLASS[spec.desc_class] = spec
    SUPPORT[spec.operator_type] = spec.support
    return spec


def spec_for_desc(desc: Any) -> OperatorSpec | None:
    return _BY_CLASS.get(type(desc))


def emulated_operators() -> list[OP]:
    """The operator types a kernel runs (NumPy, and native where ``spec.native``)."""
    return [t for t, spec in REGISTRY.items() if spec.emulated]


def slots_from_desc(desc_class: type) -> tuple[TensorSlot, ...]:
    """The tensor fields in field order, with the role and optionality DirectML's schema gives them."""
    return tuple(
        TensorSlot(f.name, f.metadata["role"], bool(f.metadata["optional"]), array=kind_of(f) is Kind.TENSOR_ARRAY)
        for f in dataclasses.fields(desc_class)
        if kind_of(f) in (Kind.TENSOR, Kind.TENSOR_ARRAY)
    )


def binding_slots(spec: OperatorSpec, desc: Any, role: str) -> list[tuple[str, Any, bool]]:
    """(name, DML_TENSOR_DESC or None, optional) per binding slot of ``role``, tensor arrays flattened.

    A tensor array (JOIN's InputTensors) takes one slot per element, named ``InputTensors[i]``.
    """
    out: list[tuple[str, Any, bool]] = []
    for slot in spec.support.slots:
        if slot.kind != role:
            continue
        value = getattr(desc, slot.name)
        if slot.array:
            out += [(f"{slot.name}[{i}]", tensor, False) for i, tensor in enumerate(value or ())]
        else:
            out.append((slot.name, value, slot.optional))
    return out


def tensor_at(desc: Any, slot_name: str) -> Any:
    """The DML_TENSOR_DESC a binding slot name (``OutputTensor``, ``InputTensors[2]``) stands for."""
    name, _, index = slot_name.partition("[")
    value = getattr(desc, name)
    return value[int(index.rstrip("]"))] if index else value


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


TYPE_UNKNOWN = rule("OPERATOR.TYPE", "DML_OPERATOR_DESC.Type is a DML_OPERATOR_TYPE of DirectML.h, and Desc is that type's struct.", source="ns-directml-dml_operator_desc")
FEATURE_LEVEL = rule("OPERATOR.FEATURE_LEVEL", "The operator exists at the device's feature level.", source="dml-feature-level-history")
NOT_EMULATED = rule(
    "OPERATOR.NOT_EMULATED",
    "dmlpy validates this operator but has no kernel for it yet: CreateOperator succeeds, CompileOperator and CompileGraph answer E_NOTIMPL.",
    source="docs/deviations.md",
    severity=Severity.WARNING,
)


def check_operator(ctx: Checker, value: Any) -> Any | None:
    """Validate an operator desc (bare or wrapped); returns the normalised copy, or None if unusable."""
    errors_before = sum(f.severity is Severity.ERROR for f in ctx.findings)
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
    function = getattr(desc, "Function", None)  # REDUCE's support tables depend on its Function
    found = spec.support.table_at(ctx.feature_level, function.name if spec.support.tables_by_function and hasattr(function, "name") else None)
    table = found[1] if found is not None else {}
    buffers: dict[str, Any] = {}
    for slot in spec.support.slots:
        value, where = getattr(desc, slot.name), f"{path}.{slot.name}"
        if slot.array:
            buffers[slot.name] = [check_tensor(ctx, t, f"{where}[{i}]", slot, table.get(slot.name)) for i, t in enumerate(value or ())]
        else:
            buffers[slot.name] = check_tensor(ctx, value, where, slot, table.get(slot.name))
    if spec.check is no_family_rules or spec.generic_rules:
        _check_generic(ctx, spec, desc, path, buffers)
    if spec.check is not no_family_rules:
        spec.check(ctx, desc, path, buffers)
    if not spec.emulated and errors_before == sum(f.severity is Severity.ERROR for f in ctx.findings):
        ctx.fail(NOT_EMULATED, path, actual="no kernel", expected="a NumPy or native kernel",
                 message=f"is valid, but dmlpy has no kernel for {c_name(spec.operator_type)} yet: it can be created and put in a graph, not compiled")  # fmt: skip
    return desc


def _check_generic(ctx: Checker, spec: OperatorSpec, desc: Any, path: str, buffers: dict[str, Any]) -> None:
    """The rules of an operator without a family module: DirectML.h's field facts and the support data."""
    from dmlpy.operators.activation import check_fused_activation  # noqa: PLC0415 - activation registers through this module

    generic.check_fields(ctx, desc, path)
    generic.check_constraints(ctx, spec.support, buffers, path)
    for f in dataclasses.fields(desc):
        if kind_of(f) is Kind.OPERATOR:
            check_fused_activation(ctx, getattr(desc, f.name), f"{path}.{f.name}", host=spec.operator_type, host_output=buffers.get("OutputTensor"))


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


def operator_support(facts: OperatorFacts, data: SupportData | None) -> OperatorSupport:
    """The support of one operator: slots from its desc, tables and constraints from its support data."""
    page = facts.page.rsplit("/", 1)[-1]
    if data is None:
        return OperatorSupport(facts.operator_type, facts.introduced, slots_from_desc(facts.desc_class), {}, page)
    return OperatorSupport(facts.operator_type, facts.introduced, slots_from_desc(facts.desc_class), data.tables, data.page, data.constraints, data.other, data.tables_by_function)


def support_data_problems(data: dict[str, SupportData]) -> list[str]:
    """Where support data disagrees with DirectML.h: unknown tensors, or a kind the desc contradicts."""
    problems = []
    for name, entry in data.items():
        facts = DESCS[DML_OPERATOR_TYPE[name.removeprefix("DML_OPERATOR_")]]
        slots = {slot.name: slot for slot in slots_from_desc(facts.desc_class)}
        for tensor, kind in entry.kinds.items():
            slot = slots.get(tensor)
            if slot is None:
                problems.append(f"{name}: {tensor} is not a tensor field of {facts.desc_class.__name__}")
            elif kind.split()[-1] != slot.kind or (kind.startswith("optional") and not slot.optional):
                problems.append(f"{name}: {tensor} is {kind!r} in the data, but {facts.desc_class.__name__} makes it {'optional ' * slot.optional}{slot.kind}")
        for constraint in entry.constraints:
            problems += [f"{name}: constraint names {t}, not a tensor field" for t in constraint.tensors if t not in slots]
    return problems


def _register_every_operator() -> None:
    """Every operator of DirectML.h, with the generic rules; family modules then add theirs."""
    # keyed by type, so the alias DML_OPERATOR_SCATTER finds DML_OPERATOR_SCATTER_ELEMENTS's entry
    data = {DML_OPERATOR_TYPE[name.removeprefix("DML_OPERATOR_")]: entry for name, entry in load_support().items()}
    for facts in DESCS.values():
        support = operator_support(facts, data.get(facts.operator_type))
        register(OperatorSpec(facts.operator_type, facts.desc_class, support, in_place=facts.in_place))


def _ensure_families_loaded() -> None:
    from dmlpy.operators import pooling  # noqa: F401, PLC0415 - registration side effect
    from dmlpy.operators import space_depth  # noqa: F401, PLC0415 - registration side effect
    from dmlpy.operators import activation  # noqa: F401, PLC0415 - registration side effect
    from dmlpy.operators import convolution  # noqa: F401, PLC0415 - registration side effect
    from dmlpy.operators import element_wise  # noqa: F401, PLC0415 - registration side effect
    from dmlpy.operators import reduction  # noqa: F401, PLC0415 - registration side effect
    from dmlpy.operators import data_movement  # noqa: F401, PLC0415 - registration side effect
    from dmlpy.operators import normalization  # noqa: F401, PLC0415 - registration side effect
    from dmlpy.operators import resampling  # noqa: F401, PLC0415 - registration side effect


_register_every_operator()
_ensure_families_loaded()

__all__ = [
    "DML_OPERATOR_DESC",
    "NOT_EMULATED",
    "REGISTRY",
    "OperatorSpec",
    "binding_slots",
    "check_operator",
    "support_data_problems",
    "emulated_operators",
    "is_struct",
    "operator_desc",
    "register",
    "spec_for_desc",
    "tensor_at",
    "tensor_fields",
]
