"""Activations: the DML_ACTIVATION_*_OPERATOR_DESC structs, standalone and as a fused activation.

Facts: DirectML's fused-activation page (structs, fusion rules), the activation pages (standalone tensor support) and the
``ns-directml-dml_activation_*_operator_desc`` pages (formulas, in-place execution, the
SOFTPLUS Steepness bound). Ten activations are emulated; their formulas:

==============  ======================================  =========================
desc            f(x)                                    parameters
==============  ======================================  =========================
IDENTITY        x
LINEAR          Alpha * x + Beta                        Alpha, Beta
RELU            max(0, x)
LEAKY_RELU      x if x >= 0 else Alpha * x              Alpha
SIGMOID         1 / (1 + exp(-x))
TANH            tanh(x)
ELU             x if x > 0 else Alpha * (exp(x) - 1)    Alpha
HARD_SIGMOID    max(0, min(Alpha * x + Beta, 1))        Alpha, Beta
SOFTPLUS        ln(1 + exp(Steepness * x)) / Steepness  Steepness (>= 1)
GELU            0.5 * x * (1 + erf(x / sqrt(2)))        (FL 5.1)
==============  ======================================  =========================

As a ``FusedActivation`` (of a convolution, say) the desc sits in a DML_OPERATOR_DESC whose
InputTensor and OutputTensor are NULL: the host operator's output is the activation's input.
``check_fused_activation`` holds the fusion rules; the host calls it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dmlpy.enums import DML_OPERATOR_TYPE, DML_TENSOR_DATA_TYPE, c_name
from dmlpy.errors import Severity
from dmlpy.operators import DML_OPERATOR_DESC, FEATURE_LEVEL, NOT_EMULATED, REGISTRY, OperatorSpec, register
from dmlpy.operators.descs.activation import (
    DML_ACTIVATION_ELU_OPERATOR_DESC,
    DML_ACTIVATION_GELU_OPERATOR_DESC,
    DML_ACTIVATION_HARD_SIGMOID_OPERATOR_DESC,
    DML_ACTIVATION_HARDMAX1_OPERATOR_DESC,
    DML_ACTIVATION_IDENTITY_OPERATOR_DESC,
    DML_ACTIVATION_LEAKY_RELU_OPERATOR_DESC,
    DML_ACTIVATION_LINEAR_OPERATOR_DESC,
    DML_ACTIVATION_LOG_SOFTMAX1_OPERATOR_DESC,
    DML_ACTIVATION_RELU_OPERATOR_DESC,
    DML_ACTIVATION_SIGMOID_OPERATOR_DESC,
    DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC,
    DML_ACTIVATION_SOFTPLUS_OPERATOR_DESC,
    DML_ACTIVATION_TANH_OPERATOR_DESC,
)
from dmlpy.rules import Checker, fmt, rule
from dmlpy.support import OPERATORS
from dmlpy.tensor import DML_BUFFER_TENSOR_DESC

OP = DML_OPERATOR_TYPE


# ---------------------------------------------------------------------------------------
# The functions, on float64 arrays. Written so that no intermediate overflows or warns
# (the tests turn RuntimeWarnings into errors): exp only ever sees non-positive arguments.

_erf = np.frompyfunc(math.erf, 1, 1)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))  # 1 / (1 + exp(-x)), evaluated on the side where exp cannot overflow
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _softplus(x: np.ndarray, steepness: float) -> np.ndarray:
    return np.logaddexp(0.0, steepness * x) / steepness  # ln(exp(0) + exp(s * x)) / s


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)).astype(np.float64))


FUNCTIONS: dict[OP, Callable[[np.ndarray, Any], np.ndarray]] = {
    OP.ACTIVATION_IDENTITY: lambda x, a: x,
    OP.ACTIVATION_LINEAR: lambda x, a: a.Alpha * x + a.Beta,
    OP.ACTIVATION_RELU: lambda x, a: np.maximum(x, 0.0),
    OP.ACTIVATION_LEAKY_RELU: lambda x, a: np.where(x >= 0, x, a.Alpha * x),
    OP.ACTIVATION_SIGMOID: lambda x, a: _sigmoid(x),
    OP.ACTIVATION_TANH: lambda x, a: np.tanh(x),
    OP.ACTIVATION_ELU: lambda x, a: np.where(x > 0, x, a.Alpha * np.expm1(np.minimum(x, 0.0))),
    OP.ACTIVATION_HARD_SIGMOID: lambda x, a: np.maximum(0.0, np.minimum(a.Alpha * x + a.Beta, 1.0)),
    OP.ACTIVATION_SOFTPLUS: lambda x, a: _softplus(x, a.Steepness),
    OP.ACTIVATION_GELU: lambda x, a: _gelu(x),
}

DESC_CLASSES: dict[OP, type] = {
    OP.ACTIVATION_IDENTITY: DML_ACTIVATION_IDENTITY_OPERATOR_DESC,
    OP.ACTIVATION_LINEAR: DML_ACTIVATION_LINEAR_OPERATOR_DESC,
    OP.ACTIVATION_RELU: DML_ACTIVATION_RELU_OPERATOR_DESC,
    OP.ACTIVATION_LEAKY_RELU: DML_ACTIVATION_LEAKY_RELU_OPERATOR_DESC,
    OP.ACTIVATION_SIGMOID: DML_ACTIVATION_SIGMOID_OPERATOR_DESC,
    OP.ACTIVATION_TANH: DML_ACTIVATION_TANH_OPERATOR_DESC,
    OP.ACTIVATION_ELU: DML_ACTIVATION_ELU_OPERATOR_DESC,
    OP.ACTIVATION_HARD_SIGMOID: DML_ACTIVATION_HARD_SIGMOID_OPERATOR_DESC,
    OP.ACTIVATION_SOFTPLUS: DML_ACTIVATION_SOFTPLUS_OPERATOR_DESC,
    OP.ACTIVATION_GELU: DML_ACTIVATION_GELU_OPERATOR_DESC,
}

# the fused-activation page (https://learn.microsoft.com/windows/ai/directml/dml-fused-activations): every type DirectML accepts as a FusedActivation.
# ELEMENT_WISE_CLIP joins them for CONVOLUTION and GEMM from FL 6.0. dmlpy emulates the ten above.
FUSABLE_IN_DIRECTML: frozenset[OP] = frozenset({
    OP.ACTIVATION_LINEAR, OP.ACTIVATION_SIGMOID, OP.ACTIVATION_HARD_SIGMOID, OP.ACTIVATION_TANH,
    OP.ACTIVATION_SCALED_TANH, OP.ACTIVATION_RELU, OP.ACTIVATION_LEAKY_RELU, OP.ACTIVATION_THRESHOLDED_RELU,
    OP.ACTIVATION_ELU, OP.ACTIVATION_CELU, OP.ACTIVATION_SCALED_ELU, OP.ACTIVATION_SOFTPLUS,
    OP.ACTIVATION_PARAMETRIC_SOFTPLUS, OP.ACTIVATION_SOFTSIGN, OP.ACTIVATION_IDENTITY, OP.ACTIVATION_SHRINK,
    OP.ACTIVATION_GELU,
})  # fmt: skip

# The pages of all but GELU say the output may alias the input during binding.
IN_PLACE: frozenset[OP] = frozenset(DESC_CLASSES) - {OP.ACTIVATION_GELU}

ActivationDesc = Any  # one of the ten structs above


def activate(desc: ActivationDesc, x: np.ndarray, op_type: OP | None = None) -> np.ndarray:
    """``f(x)`` of the activation ``desc`` describes, computed in float64 without warnings."""
    if op_type is None:
        op_type = _type_of(desc)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        return np.asarray(FUNCTIONS[op_type](np.asarray(x, dtype=np.float64), desc), dtype=np.float64)


def apply_fused(fused: DML_OPERATOR_DESC | None, y: np.ndarray) -> np.ndarray:
    """The host operator's last step: ``y`` unchanged when ``fused`` is NULL, else ``f(y)``."""
    if fused is None:
        return y
    return activate(fused.Desc, y, OP(fused.Type))


# ---------------------------------------------------------------------------------------
# Builders with DirectMLX's defaults (the fused-activation page, DirectMLX.h's struct FusedActivation)


class FusedActivation:
    """DML_OPERATOR_DESCs ready for a ``FusedActivation`` field (tensors NULL), as DirectMLX builds them."""

    @staticmethod
    def identity() -> DML_OPERATOR_DESC:
        return DML_OPERATOR_DESC(OP.ACTIVATION_IDENTITY, DML_ACTIVATION_IDENTITY_OPERATOR_DESC())

    @staticmethod
    def linear(alpha: float, beta: float) -> DML_OPERATOR_DESC:
        return DML_OPERATOR_DESC(OP.ACTIVATION_LINEAR, DML_ACTIVATION_LINEAR_OPERATOR_DESC(None, None, alpha, beta))

    @staticmethod
    def relu() -> DML_OPERATOR_DESC:
        return DML_OPERATOR_DESC(OP.ACTIVATION_RELU, DML_ACTIVATION_RELU_OPERATOR_DESC())

    @staticmethod
    def leaky_relu(alpha: float = 0.01) -> DML_OPERATOR_DESC:
        return DML_OPERATOR_DESC(OP.ACTIVATION_LEAKY_RELU, DML_ACTIVATION_LEAKY_RELU_OPERATOR_DESC(None, None, alpha))

    @staticmethod
    def sigmoid() -> DML_OPERATOR_DESC:
        return DML_OPERATOR_DESC(OP.ACTIVATION_SIGMOID, DML_ACTIVATION_SIGMOID_OPERATOR_DESC())

    @staticmethod
    def tanh() -> DML_OPERATOR_DESC:
        return DML_OPERATOR_DESC(OP.ACTIVATION_TANH, DML_ACTIVATION_TANH_OPERATOR_DESC())

    @staticmethod
    def elu(alpha: float = 1.0) -> DML_OPERATOR_DESC:
        return DML_OPERATOR_DESC(OP.ACTIVATION_ELU, DML_ACTIVATION_ELU_OPERATOR_DESC(None, None, alpha))

    @staticmethod
    def hard_sigmoid(alpha: float = 0.2, beta: float = 0.5) -> DML_OPERATOR_DESC:
        return DML_OPERATOR_DESC(OP.ACTIVATION_HARD_SIGMOID, DML_ACTIVATION_HARD_SIGMOID_OPERATOR_DESC(None, None, alpha, beta))

    @staticmethod
    def softplus(steepness: float = 1.0) -> DML_OPERATOR_DESC:
        return DML_OPERATOR_DESC(OP.ACTIVATION_SOFTPLUS, DML_ACTIVATION_SOFTPLUS_OPERATOR_DESC(None, None, steepness))

    @staticmethod
    def gelu() -> DML_OPERATOR_DESC:
        return DML_OPERATOR_DESC(OP.ACTIVATION_GELU, DML_ACTIVATION_GELU_OPERATOR_DESC())


# ---------------------------------------------------------------------------------------
# Rules

SAME_DATA_TYPE = rule("ACTIVATION.SAME_DATA_TYPE", "A standalone activation's InputTensor and OutputTensor have the same DataType.", source="ns-directml-dml_activation_*_operator_desc")
SAME_DIMENSION_COUNT = rule("ACTIVATION.SAME_DIMENSION_COUNT", "A standalone activation's InputTensor and OutputTensor have the same DimensionCount.", source="ns-directml-dml_activation_*_operator_desc")
SAME_SIZES = rule("ACTIVATION.SAME_SIZES", "A standalone activation's InputTensor and OutputTensor have the same Sizes.", source="ns-directml-dml_activation_*_operator_desc")
SOFTPLUS_STEEPNESS = rule("ACTIVATION.SOFTPLUS_STEEPNESS", "ACTIVATION_SOFTPLUS's Steepness is at least 1.", source="ns-directml-dml_activation_softplus_operator_desc")
NOT_FUSABLE = rule("ACTIVATION.NOT_FUSABLE", "A FusedActivation's Type is an activation DirectML can fuse (the fused-activation page), and its Desc is that type's struct.", source="dml-fused-activations")
FUSED_TENSORS_NOT_NULL = rule("ACTIVATION.FUSED_TENSORS_NOT_NULL", "A fused activation's InputTensor and OutputTensor are NULL.", source="dml-fused-activations")


def _check_parameters(ctx: Checker, op_type: OP, desc: ActivationDesc, path: str) -> None:
    if op_type == OP.ACTIVATION_SOFTPLUS:
        steepness = desc.Steepness
        ctx.check(steepness >= 1.0, SOFTPLUS_STEEPNESS, f"{path}.Steepness", actual=steepness, expected=">= 1.0",
                  message=f"is {steepness!r}, expected at least 1.0 (the SOFTPLUS page: this value cannot be less than 1)")  # fmt: skip


def _check_standalone(ctx: Checker, desc: ActivationDesc, path: str, buffers: dict[str, DML_BUFFER_TENSOR_DESC | None]) -> None:
    x, y = buffers["InputTensor"], buffers["OutputTensor"]
    if x is not None and y is not None:
        ctx.check(y.DataType == x.DataType, SAME_DATA_TYPE, f"{path}.OutputTensor.DataType", actual=y.DataType, expected=x.DataType, why="InputTensor.DataType")
        same_rank = ctx.check(y.DimensionCount == x.DimensionCount, SAME_DIMENSION_COUNT, f"{path}.OutputTensor.DimensionCount", actual=y.DimensionCount,
                              expected=x.DimensionCount, why="InputTensor.DimensionCount")  # fmt: skip
        if same_rank:
            ctx.check(tuple(y.Sizes or ()) == tuple(x.Sizes or ()), SAME_SIZES, f"{path}.OutputTensor.Sizes", actual=tuple(y.Sizes or ()), expected=tuple(x.Sizes or ()),
                      why="InputTensor.Sizes (an activation is element-wise)")  # fmt: skip
    _check_parameters(ctx, _type_of(desc), desc, path)


def _type_of(desc: ActivationDesc) -> OP:
    return next(t for t, cls in DESC_CLASSES.items() if isinstance(desc, cls))


def check_fused_activation(ctx: Checker, fused: Any, path: str) -> bool:
    """The fusion rules for a host operator's (normalised) ``FusedActivation`` at ``path``.

    Returns whether the activation can be applied (so the host may compute with it).
    """
    if fused is None:
        return True
    op_type, inner = fused.Type, fused.Desc
    emulated = DESC_CLASSES.get(op_type) if isinstance(op_type, OP) else None
    fusable = isinstance(op_type, OP) and op_type in FUSABLE_IN_DIRECTML | {OP.ELEMENT_WISE_CLIP}
    if emulated is None and not fusable:
        names = ", ".join(c_name(t) for t in sorted(FUSABLE_IN_DIRECTML | {OP.ELEMENT_WISE_CLIP}))
        shown = c_name(op_type) if isinstance(op_type, OP) else fmt(op_type)
        ctx.fail(NOT_FUSABLE, f"{path}.Type", actual=op_type, expected="a fusable activation",
                 message=f"is {shown}, which cannot be fused; a FusedActivation is one of {names}")  # fmt: skip
        return False
    struct = emulated or REGISTRY[op_type].desc_class
    what = "NULL" if inner is None else f"a {type(inner).__name__}"
    if not ctx.check(isinstance(inner, struct), NOT_FUSABLE, f"{path}.Desc", actual=type(inner).__name__, expected=struct.__name__,
                     message=f"is {what}, but Type {c_name(op_type)} needs a {struct.__name__}"):  # fmt: skip
        return False
    introduced = REGISTRY[op_type].support.introduced
    if not ctx.check(ctx.feature_level >= introduced, FEATURE_LEVEL, f"{path}.Type", actual=ctx.feature_level, expected=introduced,
                     message=f"{c_name(op_type)} requires {c_name(introduced)}; the device targets {c_name(ctx.feature_level)}"):  # fmt: skip
        return False
    ok = True
    for name in ("InputTensor", "OutputTensor"):
        ok &= ctx.check(getattr(inner, name) is None, FUSED_TENSORS_NOT_NULL, f"{path}.{name}", actual="a DML_TENSOR_DESC", expected="NULL",
                        message="is set, but a fused activation's tensors must be NULL: it reads and writes the host operator's output")  # fmt: skip
    if emulated is None:
        if ok:  # valid, as DirectML would accept it; dmlpy just cannot compute it
            ctx.fail(NOT_EMULATED, f"{path}.Type", actual=op_type, expected="an activation dmlpy emulates",
                     message=f"is {c_name(op_type)}, which DirectML can fuse but dmlpy has no kernel for yet: the operator can be created, not compiled")  # fmt: skip
        return False
    errors_before = sum(f.severity is Severity.ERROR for f in ctx.findings)
    _check_parameters(ctx, op_type, inner, path)
    return ok and errors_before == sum(f.severity is Severity.ERROR for f in ctx.findings)


# ---------------------------------------------------------------------------------------
# NumPy kernel and registration


def activation_reference(desc: ActivationDesc, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    x = inputs["InputTensor"]
    assert x is not None
    with np.errstate(over="ignore", invalid="ignore"):  # float16 storage saturates to inf, as hardware does
        return {"OutputTensor": activate(desc, x).astype(x.dtype)}



def _floating(desc: Any) -> bool:
    """The C activation kernels compute FLOAT32 and FLOAT16; RELU's integer types (FL 5.1) run on NumPy."""
    return desc.InputTensor.Desc.DataType in (DML_TENSOR_DATA_TYPE.FLOAT32, DML_TENSOR_DATA_TYPE.FLOAT16)

for _type, _class in DESC_CLASSES.items():
    register(OperatorSpec(_type, _class, OPERATORS[_type], _check_standalone, activation_reference, in_place=_type in IN_PLACE, native=True, native_covers=_floating))

assert all(t in REGISTRY for t in DESC_CLASSES)


# ---------------------------------------------------------------------------------------
# SOFTMAX1, LOG_SOFTMAX1, HARDMAX1: the generic rules (same DataType, DimensionCount and Sizes)
# and their Axes, "in the range [0, InputTensor.DimensionCount - 1]" (each page). No kernel yet.

AXES_PAGE = "ns-directml-dml_activation_softmax1_operator_desc"
AXIS_RANGE = rule("ACTIVATION.AXIS_RANGE", "SOFTMAX1's, LOG_SOFTMAX1's and HARDMAX1's Axes are in [0, InputTensor.DimensionCount - 1].", source=AXES_PAGE)
AXIS_DUPLICATE = rule("ACTIVATION.AXIS_DUPLICATE", "No axis appears twice in Axes (the pages are silent; a repeated axis reduces once).", source="docs/deviations.md", severity=Severity.WARNING)


def _check_axes(ctx: Checker, desc: Any, path: str, buffers: dict[str, DML_BUFFER_TENSOR_DESC | None]) -> None:
    x = buffers["InputTensor"]
    if x is None or desc.Axes is None:
        return
    rank = x.DimensionCount
    for i, axis in enumerate(desc.Axes):
        ctx.check(axis < rank, AXIS_RANGE, f"{path}.Axes[{i}]", actual=axis, expected=f"0..{rank - 1}",
                  message=f"is {axis}, expected an axis in [0, InputTensor.DimensionCount - 1] = [0, {rank - 1}]")  # fmt: skip
        first = list(desc.Axes).index(axis)
        ctx.check(first == i, AXIS_DUPLICATE, f"{path}.Axes[{i}]", actual=axis, expected="an axis not listed before", message=f"is {axis}, already Axes[{first}]")


for _type, _class in (
    (OP.ACTIVATION_SOFTMAX1, DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC),
    (OP.ACTIVATION_LOG_SOFTMAX1, DML_ACTIVATION_LOG_SOFTMAX1_OPERATOR_DESC),
    (OP.ACTIVATION_HARDMAX1, DML_ACTIVATION_HARDMAX1_OPERATOR_DESC),
):
    register(OperatorSpec(_type, _class, OPERATORS[_type], _check_axes, generic_rules=True))

__all__ = [
    "DESC_CLASSES",
    "DML_ACTIVATION_ELU_OPERATOR_DESC",
    "DML_ACTIVATION_GELU_OPERATOR_DESC",
    "DML_ACTIVATION_HARD_SIGMOID_OPERATOR_DESC",
    "DML_ACTIVATION_IDENTITY_OPERATOR_DESC",
    "DML_ACTIVATION_LEAKY_RELU_OPERATOR_DESC",
    "DML_ACTIVATION_LINEAR_OPERATOR_DESC",
    "DML_ACTIVATION_RELU_OPERATOR_DESC",
    "DML_ACTIVATION_SIGMOID_OPERATOR_DESC",
    "DML_ACTIVATION_SOFTPLUS_OPERATOR_DESC",
    "DML_ACTIVATION_TANH_OPERATOR_DESC",
    "FUSABLE_IN_DIRECTML",
    "FusedActivation",
    "activate",
    "activation_reference",
    "apply_fused",
    "check_fused_activation",
]
