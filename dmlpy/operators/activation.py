"""Activations: the DML_ACTIVATION_*_OPERATOR_DESC structs, standalone and as a fused activation.

Facts: DirectML's fused-activation page (structs, fusion rules), the activation pages (standalone tensor support) and the
``ns-directml-dml_activation_*_operator_desc`` pages (formulas, in-place execution, the
SOFTPLUS Steepness bound, the effective rank of SOFTMAX, LOG_SOFTMAX and HARDMAX). Every
activation is emulated. The element-wise ones, ``FUNCTIONS``:

===================  ==================================================  =========================
desc                 f(x)                                                parameters
===================  ==================================================  =========================
IDENTITY             x
LINEAR               Alpha * x + Beta                                    Alpha, Beta
RELU                 max(0, x)                                           (integers from FL 5.1)
LEAKY_RELU           x if x >= 0 else Alpha * x                          Alpha
SIGMOID              1 / (1 + exp(-x))
TANH                 tanh(x)
ELU                  x if x > 0 else Alpha * (exp(x) - 1)                Alpha
HARD_SIGMOID         max(0, min(Alpha * x + Beta, 1))                    Alpha, Beta
SOFTPLUS             ln(1 + exp(Steepness * x)) / Steepness              Steepness (>= 1)
GELU                 0.5 * x * (1 + erf(x / sqrt(2)))                    (FL 5.1)
CELU                 max(0, x) + min(0, Alpha * (exp(x / Alpha) - 1))    Alpha (FL 3.0)
PARAMETRIC_SOFTPLUS  Alpha * ln(1 + exp(Beta * x))                       Alpha, Beta
SCALED_ELU           Gamma * x if x > 0 else Gamma * Alpha * (exp(x) - 1)  Alpha, Gamma
SCALED_TANH          Alpha * tanh(Beta * x)                              Alpha, Beta
SOFTSIGN             x / (1 + |x|)
THRESHOLDED_RELU     x if x > Alpha else 0                               Alpha
SHRINK               x + Bias if x < -Threshold, x - Bias if             Bias, Threshold (FL 2.0;
                     x > Threshold, else 0                               integers from FL 5.1)
SWISH                x * sigmoid(SigmoidInputScale * x)                  SigmoidInputScale (FL 6.2)
HARD_SWISH           x * max(0, min(Alpha * x + Beta, 1))                Alpha, Beta (FL 6.2)
===================  ==================================================  =========================

and the ones with a kernel of their own:

* PARAMETERIZED_RELU: ``x if x >= 0 else slope * x`` with ``slope`` read element by element from
  SlopeTensor (same Sizes as InputTensor: a per-channel slope is broadcast with stride 0);
* SOFTMAX, LOG_SOFTMAX, HARDMAX over the last dimension (their input's effective rank is at most 2:
  ``ACTIVATION.EFFECTIVE_RANK``), and SOFTMAX1, LOG_SOFTMAX1, HARDMAX1 over ``Axes``: softmax is
  ``exp(x - max) / sum(exp(x - max))``, log-softmax ``(x - max) - ln(sum(exp(x - max)))``, hardmax 1
  at the first maximum (in row-major order over the reduced axes) and 0 elsewhere.

Floating tensors compute in float64 (FLOAT32) or float32 (FLOAT16, stored as binary16), then are
rounded once. As a ``FusedActivation`` (of a convolution, say) the desc sits in a DML_OPERATOR_DESC
whose InputTensor and OutputTensor are NULL: the host operator's output is the activation's input.
Beside the activations, CONVOLUTION and GEMM fuse DML_ELEMENT_WISE_CLIP_OPERATOR_DESC from feature
level 6.0 (``HOST_FUSABLE``): ``min(max(x * Scale + Bias, Min), Max)`` as the standalone CLIP computes
it (ScaleBias optional; a NaN stays NaN). ``check_fused_activation`` holds the fusion rules; the host
calls it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from dmlpy.enums import DML_FEATURE_LEVEL, DML_OPERATOR_TYPE, DML_TENSOR_DATA_TYPE, c_name
from dmlpy.errors import Severity
from dmlpy.operators import DML_OPERATOR_DESC, FEATURE_LEVEL, REGISTRY, OperatorSpec, register
from dmlpy.operators.descs.activation import (
    DML_ACTIVATION_CELU_OPERATOR_DESC,
    DML_ACTIVATION_ELU_OPERATOR_DESC,
    DML_ACTIVATION_GELU_OPERATOR_DESC,
    DML_ACTIVATION_HARD_SIGMOID_OPERATOR_DESC,
    DML_ACTIVATION_HARD_SWISH_OPERATOR_DESC,
    DML_ACTIVATION_HARDMAX1_OPERATOR_DESC,
    DML_ACTIVATION_HARDMAX_OPERATOR_DESC,
    DML_ACTIVATION_IDENTITY_OPERATOR_DESC,
    DML_ACTIVATION_LEAKY_RELU_OPERATOR_DESC,
    DML_ACTIVATION_LINEAR_OPERATOR_DESC,
    DML_ACTIVATION_LOG_SOFTMAX1_OPERATOR_DESC,
    DML_ACTIVATION_LOG_SOFTMAX_OPERATOR_DESC,
    DML_ACTIVATION_PARAMETERIZED_RELU_OPERATOR_DESC,
    DML_ACTIVATION_PARAMETRIC_SOFTPLUS_OPERATOR_DESC,
    DML_ACTIVATION_RELU_OPERATOR_DESC,
    DML_ACTIVATION_SCALED_ELU_OPERATOR_DESC,
    DML_ACTIVATION_SCALED_TANH_OPERATOR_DESC,
    DML_ACTIVATION_SHRINK_OPERATOR_DESC,
    DML_ACTIVATION_SIGMOID_OPERATOR_DESC,
    DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC,
    DML_ACTIVATION_SOFTMAX_OPERATOR_DESC,
    DML_ACTIVATION_SOFTPLUS_OPERATOR_DESC,
    DML_ACTIVATION_SOFTSIGN_OPERATOR_DESC,
    DML_ACTIVATION_SWISH_OPERATOR_DESC,
    DML_ACTIVATION_TANH_OPERATOR_DESC,
    DML_ACTIVATION_THRESHOLDED_RELU_OPERATOR_DESC,
)
from dmlpy.operators.descs.element_wise import DML_ELEMENT_WISE_CLIP_OPERATOR_DESC
from dmlpy.rules import Checker, fmt, rule
from dmlpy.support import OPERATORS
from dmlpy.tensor import DML_BUFFER_TENSOR_DESC

OP = DML_OPERATOR_TYPE


# ---------------------------------------------------------------------------------------
# The functions, on float arrays (float64, or float32 for FLOAT16). Written so that no intermediate
# overflows needlessly; what still overflows (exp of a large argument) is computed under np.errstate.

_erf = np.frompyfunc(math.erf, 1, 1)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))  # 1 / (1 + exp(-x)), evaluated on the side where exp cannot overflow
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _softplus(x: np.ndarray, steepness: float) -> np.ndarray:
    return np.logaddexp(0.0, steepness * x) / steepness  # ln(exp(0) + exp(s * x)) / s


def _gelu(x: np.ndarray) -> np.ndarray:
    return (0.5 * x * (1 + _erf(x / math.sqrt(2)).astype(np.float64))).astype(x.dtype)


def _hard_sigmoid(x: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    return np.maximum(0.0, np.minimum(alpha * x + beta, 1.0))


def _shrink(x: np.ndarray, bias: float, threshold: float) -> np.ndarray:
    return np.where(x < -threshold, x + bias, np.where(x > threshold, x - bias, 0.0))


FUNCTIONS: dict[OP, Callable[[np.ndarray, Any], np.ndarray]] = {
    OP.ACTIVATION_IDENTITY: lambda x, a: x,
    OP.ACTIVATION_LINEAR: lambda x, a: a.Alpha * x + a.Beta,
    OP.ACTIVATION_RELU: lambda x, a: np.maximum(x, 0.0),
    OP.ACTIVATION_LEAKY_RELU: lambda x, a: np.where(x >= 0, x, a.Alpha * x),
    OP.ACTIVATION_SIGMOID: lambda x, a: _sigmoid(x),
    OP.ACTIVATION_TANH: lambda x, a: np.tanh(x),
    OP.ACTIVATION_ELU: lambda x, a: np.where(x > 0, x, a.Alpha * np.expm1(np.minimum(x, 0.0))),
    OP.ACTIVATION_HARD_SIGMOID: lambda x, a: _hard_sigmoid(x, a.Alpha, a.Beta),
    OP.ACTIVATION_SOFTPLUS: lambda x, a: _softplus(x, a.Steepness),
    OP.ACTIVATION_GELU: lambda x, a: _gelu(x),
    OP.ACTIVATION_CELU: lambda x, a: np.maximum(0.0, x) + np.minimum(0.0, a.Alpha * np.expm1(x / a.Alpha)),
    OP.ACTIVATION_PARAMETRIC_SOFTPLUS: lambda x, a: a.Alpha * np.logaddexp(0.0, a.Beta * x),
    OP.ACTIVATION_SCALED_ELU: lambda x, a: a.Gamma * np.where(x > 0, x, a.Alpha * np.expm1(np.minimum(x, 0.0))),
    OP.ACTIVATION_SCALED_TANH: lambda x, a: a.Alpha * np.tanh(a.Beta * x),
    OP.ACTIVATION_SOFTSIGN: lambda x, a: x / (1 + np.abs(x)),
    OP.ACTIVATION_THRESHOLDED_RELU: lambda x, a: np.where(x > a.Alpha, x, 0.0),
    OP.ACTIVATION_SHRINK: lambda x, a: _shrink(x, a.Bias, a.Threshold),
    OP.ACTIVATION_SWISH: lambda x, a: x * _sigmoid(a.SigmoidInputScale * x),
    OP.ACTIVATION_HARD_SWISH: lambda x, a: x * _hard_sigmoid(x, a.Alpha, a.Beta),
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
    OP.ACTIVATION_CELU: DML_ACTIVATION_CELU_OPERATOR_DESC,
    OP.ACTIVATION_PARAMETRIC_SOFTPLUS: DML_ACTIVATION_PARAMETRIC_SOFTPLUS_OPERATOR_DESC,
    OP.ACTIVATION_SCALED_ELU: DML_ACTIVATION_SCALED_ELU_OPERATOR_DESC,
    OP.ACTIVATION_SCALED_TANH: DML_ACTIVATION_SCALED_TANH_OPERATOR_DESC,
    OP.ACTIVATION_SOFTSIGN: DML_ACTIVATION_SOFTSIGN_OPERATOR_DESC,
    OP.ACTIVATION_THRESHOLDED_RELU: DML_ACTIVATION_THRESHOLDED_RELU_OPERATOR_DESC,
    OP.ACTIVATION_SHRINK: DML_ACTIVATION_SHRINK_OPERATOR_DESC,
    OP.ACTIVATION_SWISH: DML_ACTIVATION_SWISH_OPERATOR_DESC,
    OP.ACTIVATION_HARD_SWISH: DML_ACTIVATION_HARD_SWISH_OPERATOR_DESC,
    # not element by element: kernels of their own below
    OP.ACTIVATION_PARAMETERIZED_RELU: DML_ACTIVATION_PARAMETERIZED_RELU_OPERATOR_DESC,
    OP.ACTIVATION_SOFTMAX: DML_ACTIVATION_SOFTMAX_OPERATOR_DESC,
    OP.ACTIVATION_LOG_SOFTMAX: DML_ACTIVATION_LOG_SOFTMAX_OPERATOR_DESC,
    OP.ACTIVATION_HARDMAX: DML_ACTIVATION_HARDMAX_OPERATOR_DESC,
    OP.ACTIVATION_SOFTMAX1: DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC,
    OP.ACTIVATION_LOG_SOFTMAX1: DML_ACTIVATION_LOG_SOFTMAX1_OPERATOR_DESC,
    OP.ACTIVATION_HARDMAX1: DML_ACTIVATION_HARDMAX1_OPERATOR_DESC,
}

def _fused_clip(x: np.ndarray, a: Any) -> np.ndarray:
    """ELEMENT_WISE_CLIP as a FusedActivation: the standalone operator's formula on a floating output."""
    if a.ScaleBias is not None:
        x = x * x.dtype.type(a.ScaleBias.Scale) + x.dtype.type(a.ScaleBias.Bias)
    return np.minimum(np.maximum(x, x.dtype.type(a.Min)), x.dtype.type(a.Max))


# Fused activations without an element-wise function above: CLIP (its standalone kernel lives with its family) and
# GEMM's SOFTMAX and SOFTMAX1 (over the output's last dimension, or Axes).
FUSED_FUNCTIONS: dict[OP, Callable[[np.ndarray, Any], np.ndarray]] = {
    OP.ELEMENT_WISE_CLIP: _fused_clip,
    OP.ACTIVATION_SOFTMAX: lambda x, a: _softmax(x, (x.ndim - 1,), log=False),
    OP.ACTIVATION_SOFTMAX1: lambda x, a: _softmax(x, reduced_axes(a, x.ndim), log=False),
}

# the fused-activation page (https://learn.microsoft.com/windows/ai/directml/dml-fused-activations): every type DirectML accepts as a FusedActivation.
FUSABLE_IN_DIRECTML: frozenset[OP] = frozenset({
    OP.ACTIVATION_LINEAR, OP.ACTIVATION_SIGMOID, OP.ACTIVATION_HARD_SIGMOID, OP.ACTIVATION_TANH,
    OP.ACTIVATION_SCALED_TANH, OP.ACTIVATION_RELU, OP.ACTIVATION_LEAKY_RELU, OP.ACTIVATION_THRESHOLDED_RELU,
    OP.ACTIVATION_ELU, OP.ACTIVATION_CELU, OP.ACTIVATION_SCALED_ELU, OP.ACTIVATION_SOFTPLUS,
    OP.ACTIVATION_PARAMETRIC_SOFTPLUS, OP.ACTIVATION_SOFTSIGN, OP.ACTIVATION_IDENTITY, OP.ACTIVATION_SHRINK,
    OP.ACTIVATION_GELU,
})  # fmt: skip

# What some hosts fuse beyond that list, from the feature level that added it (DirectML's feature-level history,
# https://learn.microsoft.com/windows/ai/directml/dml-feature-level-history: ELEMENT_WISE_CLIP into CONVOLUTION and
# GEMM from FL 6.0; GEMM's FusedActivation takes SOFTMAX and SOFTMAX1 from FL 6.1).
HOST_FUSABLE: dict[OP, dict[OP, DML_FEATURE_LEVEL]] = {
    OP.CONVOLUTION: {OP.ELEMENT_WISE_CLIP: DML_FEATURE_LEVEL.LEVEL_6_0},
    OP.GEMM: {
        OP.ELEMENT_WISE_CLIP: DML_FEATURE_LEVEL.LEVEL_6_0,
        OP.ACTIVATION_SOFTMAX: DML_FEATURE_LEVEL.LEVEL_6_1,
        OP.ACTIVATION_SOFTMAX1: DML_FEATURE_LEVEL.LEVEL_6_1,
    },
}

# Each page that says "the output tensor is permitted to alias InputTensor during binding". GELU's
# page does not say it; neither do the softmax and hardmax pages (every output depends on a whole row).
IN_PLACE: frozenset[OP] = frozenset(FUNCTIONS) - {OP.ACTIVATION_GELU} | {OP.ACTIVATION_PARAMETERIZED_RELU}

# The activations dmlpy/native/activation.c computes (standalone and as a FusedActivation of a convolution or
# normalization), the softmax family dmlpy/native/normalization.c computes and HARDMAX(1), which
# dmlpy/native/reduction.c computes (never fused: DirectML does not fuse them); the native backend runs the
# NumPy kernel for the others.
NATIVE_SOFTMAX: frozenset[OP] = frozenset({
    OP.ACTIVATION_SOFTMAX, OP.ACTIVATION_SOFTMAX1, OP.ACTIVATION_LOG_SOFTMAX, OP.ACTIVATION_LOG_SOFTMAX1,
    OP.ACTIVATION_HARDMAX, OP.ACTIVATION_HARDMAX1,
})  # fmt: skip
NATIVE_KERNELS: frozenset[OP] = frozenset({
    OP.ACTIVATION_IDENTITY, OP.ACTIVATION_LINEAR, OP.ACTIVATION_RELU, OP.ACTIVATION_LEAKY_RELU, OP.ACTIVATION_SIGMOID,
    OP.ACTIVATION_TANH, OP.ACTIVATION_ELU, OP.ACTIVATION_HARD_SIGMOID, OP.ACTIVATION_SOFTPLUS, OP.ACTIVATION_GELU,
}) | NATIVE_SOFTMAX  # fmt: skip

ActivationDesc = Any  # one of the structs above


def work_dtype(dtype: Any) -> type:
    """The type a floating activation computes in: float32 for FLOAT16, float64 otherwise (integers too)."""
    return np.float32 if np.dtype(dtype) == np.float16 else np.float64


def activate(desc: ActivationDesc, x: np.ndarray, op_type: OP | None = None) -> np.ndarray:
    """``f(x)`` of the element-wise activation ``desc`` describes, computed without warnings.

    In float32 when ``x`` is float16 (FLOAT16 computes in float32), else in float64.
    """
    if op_type is None:
        op_type = _type_of(desc)
    x = np.asarray(x)
    work = work_dtype(x.dtype)
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        function = FUNCTIONS.get(op_type) or FUSED_FUNCTIONS[op_type]
        return np.asarray(function(x.astype(work), desc), dtype=work)


def apply_fused(fused: DML_OPERATOR_DESC | None, y: np.ndarray) -> np.ndarray:
    """The host operator's last step: ``y`` unchanged when ``fused`` is NULL, else ``f(y)``."""
    if fused is None:
        return y
    return activate(fused.Desc, y, OP(fused.Type))


def native_fused(fused: DML_OPERATOR_DESC | None) -> bool:
    """Whether the C kernels apply this FusedActivation themselves (NULL, one of the element-wise ``NATIVE_KERNELS``,
    or a CLIP without ScaleBias, whose bounds are exact in float32 as the NumPy kernel's float64 clamp is; GEMM's
    fused SOFTMAX runs on NumPy)."""
    if fused is not None and fused.Type == OP.ELEMENT_WISE_CLIP:
        return isinstance(fused.Desc, DML_ELEMENT_WISE_CLIP_OPERATOR_DESC) and fused.Desc.ScaleBias is None
    return fused is None or fused.Type in NATIVE_KERNELS - NATIVE_SOFTMAX


# ---------------------------------------------------------------------------------------
# Builders with DirectMLX's defaults (the fused-activation page, DirectMLX.h's struct FusedActivation
# and its Activation* functions: SCALED_ELU's defaults are SELU's constants as float32)

SCALED_ELU_ALPHA = 1.67326319217681884765625
SCALED_ELU_GAMMA = 1.05070102214813232421875


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

    @staticmethod
    def celu(alpha: float = 1.0) -> DML_OPERATOR_DESC:
        return DML_OPERATOR_DESC(OP.ACTIVATION_CELU, DML_ACTIVATION_CELU_OPERATOR_DESC(None, None, alpha))

    @staticmethod
    def parametric_softplus(alpha: float, beta: float) -> DML_OPERATOR_DESC:
        return DML_OPERATOR_DESC(OP.ACTIVATION_PARAMETRIC_SOFTPLUS, DML_ACTIVATION_PARAMETRIC_SOFTPLUS_OPERATOR_DESC(None, None, alpha, beta))

    @staticmethod
    def scaled_elu(alpha: float = SCALED_ELU_ALPHA, gamma: float = SCALED_ELU_GAMMA) -> DML_OPERATOR_DESC:
        return DML_OPERATOR_DESC(OP.ACTIVATION_SCALED_ELU, DML_ACTIVATION_SCALED_ELU_OPERATOR_DESC(None, None, alpha, gamma))

    @staticmethod
    def scaled_tanh(alpha: float = 1.0, beta: float = 0.5) -> DML_OPERATOR_DESC:
        return DML_OPERATOR_DESC(OP.ACTIVATION_SCALED_TANH, DML_ACTIVATION_SCALED_TANH_OPERATOR_DESC(None, None, alpha, beta))

    @staticmethod
    def softsign() -> DML_OPERATOR_DESC:
        return DML_OPERATOR_DESC(OP.ACTIVATION_SOFTSIGN, DML_ACTIVATION_SOFTSIGN_OPERATOR_DESC())

    @staticmethod
    def thresholded_relu(alpha: float = 1.0) -> DML_OPERATOR_DESC:
        return DML_OPERATOR_DESC(OP.ACTIVATION_THRESHOLDED_RELU, DML_ACTIVATION_THRESHOLDED_RELU_OPERATOR_DESC(None, None, alpha))

    @staticmethod
    def shrink(bias: float = 0.0, threshold: float = 0.5) -> DML_OPERATOR_DESC:
        return DML_OPERATOR_DESC(OP.ACTIVATION_SHRINK, DML_ACTIVATION_SHRINK_OPERATOR_DESC(None, None, bias, threshold))

    @staticmethod
    def clip(min: float = -math.inf, max: float = math.inf) -> DML_OPERATOR_DESC:
        """ELEMENT_WISE_CLIP, fusable into CONVOLUTION and GEMM from DML_FEATURE_LEVEL_6_0 (ReLU6 is ``clip(0, 6)``)."""
        return DML_OPERATOR_DESC(OP.ELEMENT_WISE_CLIP, DML_ELEMENT_WISE_CLIP_OPERATOR_DESC(None, None, None, min, max))


# ---------------------------------------------------------------------------------------
# Rules

SAME_DATA_TYPE = rule("ACTIVATION.SAME_DATA_TYPE", "A standalone activation's InputTensor and OutputTensor have the same DataType.", source="ns-directml-dml_activation_*_operator_desc")
SAME_DIMENSION_COUNT = rule("ACTIVATION.SAME_DIMENSION_COUNT", "A standalone activation's InputTensor and OutputTensor have the same DimensionCount.", source="ns-directml-dml_activation_*_operator_desc")
SAME_SIZES = rule("ACTIVATION.SAME_SIZES", "A standalone activation's InputTensor and OutputTensor have the same Sizes.", source="ns-directml-dml_activation_*_operator_desc")
SOFTPLUS_STEEPNESS = rule("ACTIVATION.SOFTPLUS_STEEPNESS", "ACTIVATION_SOFTPLUS's Steepness is at least 1.", source="ns-directml-dml_activation_softplus_operator_desc")
NOT_FUSABLE = rule("ACTIVATION.NOT_FUSABLE", "A FusedActivation's Type is one DirectML fuses into its host operator (the fused-activation page; ELEMENT_WISE_CLIP into CONVOLUTION and GEMM, from FL 6.0), and its Desc is that type's struct.", source="dml-fused-activations")
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


def check_fused_activation(ctx: Checker, fused: Any, path: str, host: OP | None = None, host_output: DML_BUFFER_TENSOR_DESC | None = None) -> bool:
    """The fusion rules for a host operator's (normalised) ``FusedActivation`` at ``path``; ``host`` is the
    host's operator type (what it may fuse beyond the fused-activation page: ``HOST_FUSABLE``), ``host_output``
    its OutputTensor (what a fused SOFTMAX1's Axes index).

    Returns whether the activation can be applied (so the host may compute with it).
    """
    if fused is None:
        return True
    op_type, inner = fused.Type, fused.Desc
    extra = HOST_FUSABLE.get(host, {}) if host is not None else {}
    fusable = isinstance(op_type, OP) and (op_type in FUSABLE_IN_DIRECTML or op_type in extra)
    if not fusable:
        names = ", ".join(c_name(t) for t in sorted(FUSABLE_IN_DIRECTML | set(extra)))
        shown = c_name(op_type) if isinstance(op_type, OP) else fmt(op_type)
        ctx.fail(NOT_FUSABLE, f"{path}.Type", actual=op_type, expected="a fusable activation",
                 message=f"is {shown}, which cannot be fused here; a FusedActivation is one of {names}")  # fmt: skip
        return False
    struct = DESC_CLASSES.get(op_type) or REGISTRY[op_type].desc_class
    what = "NULL" if inner is None else f"a {type(inner).__name__}"
    if not ctx.check(isinstance(inner, struct), NOT_FUSABLE, f"{path}.Desc", actual=type(inner).__name__, expected=struct.__name__,
                     message=f"is {what}, but Type {c_name(op_type)} needs a {struct.__name__}"):  # fmt: skip
        return False
    introduced = max(REGISTRY[op_type].support.introduced, extra.get(op_type, DML_FEATURE_LEVEL.LEVEL_1_0))
    if not ctx.check(ctx.feature_level >= introduced, FEATURE_LEVEL, f"{path}.Type", actual=ctx.feature_level, expected=introduced,
                     message=f"{c_name(op_type)} as a FusedActivation requires {c_name(introduced)}; the device targets {c_name(ctx.feature_level)}"):  # fmt: skip
        return False
    ok = True
    for name in ("InputTensor", "OutputTensor"):
        ok &= ctx.check(getattr(inner, name) is None, FUSED_TENSORS_NOT_NULL, f"{path}.{name}", actual="a DML_TENSOR_DESC", expected="NULL",
                        message="is set, but a fused activation's tensors must be NULL: it reads and writes the host operator's output")  # fmt: skip
    errors_before = sum(f.severity is Severity.ERROR for f in ctx.findings)
    _check_parameters(ctx, op_type, inner, path)
    if op_type == OP.ACTIVATION_SOFTMAX1:
        _check_axes(ctx, inner, path, {"InputTensor": host_output}, tensor="the host's OutputTensor")
    return ok and errors_before == sum(f.severity is Severity.ERROR for f in ctx.findings)


# ---------------------------------------------------------------------------------------
# NumPy kernel and registration


def store(y: np.ndarray, dtype: Any) -> np.ndarray:
    """``y`` in the output's type: floats rounded once (overflow to inf, as hardware stores it); for an
    integer tensor (RELU, SHRINK from FL 5.1) truncated toward zero and saturated to the type's range."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        with np.errstate(over="ignore", invalid="ignore"):
            return np.asarray(y).astype(dtype)
    info = np.iinfo(dtype)
    t = np.nan_to_num(np.trunc(np.asarray(y, dtype=np.float64)), nan=0.0)
    return np.clip(t, float(info.min), float(info.max)).astype(dtype)


def activation_reference(desc: ActivationDesc, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    x = inputs["InputTensor"]
    assert x is not None
    return {"OutputTensor": store(activate(desc, x), x.dtype)}


def parameterized_relu_reference(desc: Any, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    """``x if x >= 0 else slope * x``; integers (FL 5.1) multiply in their own type, wrapping as two's complement does."""
    x, slope = inputs["InputTensor"], inputs["SlopeTensor"]
    assert x is not None and slope is not None
    if x.dtype.kind != "f":
        return {"OutputTensor": np.where(x >= 0, x, slope * x).astype(x.dtype)}
    work = work_dtype(x.dtype)
    xw, sw = x.astype(work), slope.astype(work)
    with np.errstate(over="ignore", invalid="ignore"):
        return {"OutputTensor": store(np.where(xw >= 0, xw, sw * xw), x.dtype)}


def reduced_axes(desc: Any, rank: int) -> tuple[int, ...]:
    """The axes a softmax, log-softmax or hardmax normalises over: ``Axes`` (each once, in increasing
    order) for the *1 operators; the last dimension for SOFTMAX, LOG_SOFTMAX and HARDMAX."""
    axes = getattr(desc, "Axes", None)
    if axes is None and not hasattr(desc, "Axes"):
        return (rank - 1,)
    return tuple(sorted({int(a) for a in axes or ()}))


def _softmax(x: np.ndarray, axes: tuple[int, ...], *, log: bool) -> np.ndarray:
    shifted = x - np.max(x, axis=axes, keepdims=True)  # a +inf maximum, or a NaN, makes the whole row NaN
    total = np.sum(np.exp(shifted), axis=axes, keepdims=True)
    return shifted - np.log(total) if log else np.exp(shifted) / total


def _hardmax(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """1 at the first maximum (row-major over ``axes``), 0 elsewhere.

    As a scan that keeps the first element and replaces it only by a greater one: a NaN never
    compares greater, so it is chosen only as a row's first element (docs/deviations.md).
    """
    k = len(axes)
    moved = np.moveaxis(x, axes, tuple(range(x.ndim - k, x.ndim)))
    rows = moved.reshape(moved.shape[: x.ndim - k] + (-1,))
    first = np.argmax(np.where(np.isnan(rows), -np.inf, rows), axis=-1)
    first = np.where(np.isnan(rows[..., 0]), 0, first)
    one_hot = np.arange(rows.shape[-1]) == first[..., None]
    return np.moveaxis(one_hot.reshape(moved.shape), tuple(range(x.ndim - k, x.ndim)), axes).astype(x.dtype)


SOFTMAX_KINDS: dict[OP, str] = {
    OP.ACTIVATION_SOFTMAX: "softmax", OP.ACTIVATION_SOFTMAX1: "softmax",
    OP.ACTIVATION_LOG_SOFTMAX: "log_softmax", OP.ACTIVATION_LOG_SOFTMAX1: "log_softmax",
    OP.ACTIVATION_HARDMAX: "hardmax", OP.ACTIVATION_HARDMAX1: "hardmax",
}  # fmt: skip


def softmax_reference(desc: Any, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    x = inputs["InputTensor"]
    assert x is not None
    kind = SOFTMAX_KINDS[_type_of(desc)]
    axes = reduced_axes(desc, x.ndim)
    if x.size == 0:
        return {"OutputTensor": x.copy()}
    xw = x.astype(work_dtype(x.dtype))
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        y = _hardmax(xw, axes) if kind == "hardmax" else _softmax(xw, axes, log=kind == "log_softmax")
    return {"OutputTensor": store(y, x.dtype)}


def _native_takes(desc: Any) -> bool:
    """The C activation kernels compute the ten NATIVE_KERNELS on FLOAT32 and FLOAT16; integer RELU (FL 5.1) runs on NumPy."""
    return desc.InputTensor.Desc.DataType in (DML_TENSOR_DATA_TYPE.FLOAT32, DML_TENSOR_DATA_TYPE.FLOAT16)


for _type in FUNCTIONS:
    register(OperatorSpec(_type, DESC_CLASSES[_type], OPERATORS[_type], _check_standalone, activation_reference, in_place=_type in IN_PLACE,
                          native=_type in NATIVE_KERNELS, native_covers=_native_takes if _type in NATIVE_KERNELS else None))  # fmt: skip

# PARAMETERIZED_RELU: the generic rules (InputTensor, OutputTensor and SlopeTensor have the same DataType,
# DimensionCount and Sizes) and its own kernel.
register(OperatorSpec(OP.ACTIVATION_PARAMETERIZED_RELU, DML_ACTIVATION_PARAMETERIZED_RELU_OPERATOR_DESC, OPERATORS[OP.ACTIVATION_PARAMETERIZED_RELU],
                      reference=parameterized_relu_reference, in_place=True, generic_rules=True))  # fmt: skip


# ---------------------------------------------------------------------------------------
# SOFTMAX, LOG_SOFTMAX, HARDMAX: the generic rules and "this tensor must have an effective rank no
# greater than 2" (each page's InputTensor). SOFTMAX1, LOG_SOFTMAX1, HARDMAX1: the generic rules
# and their Axes, "in the range [0, InputTensor.DimensionCount - 1]" (each page).

EFFECTIVE_RANK = rule("ACTIVATION.EFFECTIVE_RANK", "SOFTMAX's, LOG_SOFTMAX's and HARDMAX's InputTensor has an effective rank (DimensionCount without its leading sizes of 1) of at most 2.",
                      source="ns-directml-dml_activation_softmax_operator_desc")  # fmt: skip
AXES_PAGE = "ns-directml-dml_activation_softmax1_operator_desc"
AXIS_RANGE = rule("ACTIVATION.AXIS_RANGE", "SOFTMAX1's, LOG_SOFTMAX1's and HARDMAX1's Axes are in [0, InputTensor.DimensionCount - 1].", source=AXES_PAGE)
AXIS_DUPLICATE = rule("ACTIVATION.AXIS_DUPLICATE", "No axis appears twice in Axes (the pages are silent; a repeated axis reduces once).", source="docs/deviations.md", severity=Severity.WARNING)


def effective_rank(sizes: Any) -> int:
    """DimensionCount without the leftmost dimensions of size 1 ({1, 1, BatchCount, Width} has effective rank 2)."""
    sizes = tuple(sizes or ())
    leading = next((i for i, s in enumerate(sizes) if s != 1), len(sizes))
    return len(sizes) - leading


def _check_effective_rank(ctx: Checker, desc: Any, path: str, buffers: dict[str, DML_BUFFER_TENSOR_DESC | None]) -> None:
    x = buffers["InputTensor"]
    if x is None:
        return
    rank = effective_rank(x.Sizes)
    ctx.check(rank <= 2, EFFECTIVE_RANK, f"{path}.InputTensor.Sizes", actual=tuple(x.Sizes or ()), expected="an effective rank of at most 2",
              message=f"is {fmt(tuple(x.Sizes or ()))}, of effective rank {rank}; the page allows at most 2 (the operator normalises the last dimension of a {{BatchCount, Width}} tensor)")  # fmt: skip


def _check_axes(ctx: Checker, desc: Any, path: str, buffers: dict[str, DML_BUFFER_TENSOR_DESC | None], tensor: str = "InputTensor") -> None:
    x = buffers["InputTensor"]
    if x is None or desc.Axes is None:
        return
    rank = x.DimensionCount
    for i, axis in enumerate(desc.Axes):
        ctx.check(axis < rank, AXIS_RANGE, f"{path}.Axes[{i}]", actual=axis, expected=f"0..{rank - 1}",
                  message=f"is {axis}, expected an axis in [0, {tensor}'s DimensionCount - 1] = [0, {rank - 1}]")  # fmt: skip
        first = list(desc.Axes).index(axis)
        ctx.check(first == i, AXIS_DUPLICATE, f"{path}.Axes[{i}]", actual=axis, expected="an axis not listed before", message=f"is {axis}, already Axes[{first}]")


for _type in SOFTMAX_KINDS:
    _check = _check_axes if _type in (OP.ACTIVATION_SOFTMAX1, OP.ACTIVATION_LOG_SOFTMAX1, OP.ACTIVATION_HARDMAX1) else _check_effective_rank
    register(OperatorSpec(_type, DESC_CLASSES[_type], OPERATORS[_type], _check, softmax_reference, generic_rules=True,
                          native=_type in NATIVE_KERNELS))  # fmt: skip

assert all(REGISTRY[t].emulated for t in DESC_CLASSES)

__all__ = [
    "DESC_CLASSES",
    "DML_ACTIVATION_CELU_OPERATOR_DESC",
    "DML_ACTIVATION_ELU_OPERATOR_DESC",
    "DML_ACTIVATION_GELU_OPERATOR_DESC",
    "DML_ACTIVATION_HARDMAX1_OPERATOR_DESC",
    "DML_ACTIVATION_HARDMAX_OPERATOR_DESC",
    "DML_ACTIVATION_HARD_SIGMOID_OPERATOR_DESC",
    "DML_ACTIVATION_HARD_SWISH_OPERATOR_DESC",
    "DML_ACTIVATION_IDENTITY_OPERATOR_DESC",
    "DML_ACTIVATION_LEAKY_RELU_OPERATOR_DESC",
    "DML_ACTIVATION_LINEAR_OPERATOR_DESC",
    "DML_ACTIVATION_LOG_SOFTMAX1_OPERATOR_DESC",
    "DML_ACTIVATION_LOG_SOFTMAX_OPERATOR_DESC",
    "DML_ACTIVATION_PARAMETERIZED_RELU_OPERATOR_DESC",
    "DML_ACTIVATION_PARAMETRIC_SOFTPLUS_OPERATOR_DESC",
    "DML_ACTIVATION_RELU_OPERATOR_DESC",
    "DML_ACTIVATION_SCALED_ELU_OPERATOR_DESC",
    "DML_ACTIVATION_SCALED_TANH_OPERATOR_DESC",
    "DML_ACTIVATION_SHRINK_OPERATOR_DESC",
    "DML_ACTIVATION_SIGMOID_OPERATOR_DESC",
    "DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC",
    "DML_ACTIVATION_SOFTMAX_OPERATOR_DESC",
    "DML_ACTIVATION_SOFTPLUS_OPERATOR_DESC",
    "DML_ACTIVATION_SOFTSIGN_OPERATOR_DESC",
    "DML_ACTIVATION_SWISH_OPERATOR_DESC",
    "DML_ACTIVATION_TANH_OPERATOR_DESC",
    "DML_ACTIVATION_THRESHOLDED_RELU_OPERATOR_DESC",
    "FUNCTIONS",
    "FUSABLE_IN_DIRECTML",
    "IN_PLACE",
    "NATIVE_KERNELS",
    "NATIVE_SOFTMAX",
    "FusedActivation",
    "activate",
    "activation_reference",
    "apply_fused",
    "check_fused_activation",
    "effective_rank",
    "native_fused",
    "parameterized_relu_reference",
    "reduced_axes",
    "softmax_reference",
    "store",
    "work_dtype",
]
