"""Normalization: BATCH_NORMALIZATION, MEAN_VARIANCE_NORMALIZATION(1), LOCAL_RESPONSE_NORMALIZATION and LP_NORMALIZATION (see their section below).

Facts: the DML_BATCH_NORMALIZATION_OPERATOR_DESC page (any dimension of Mean, Variance, Scale
and Bias is 1, broadcast, or the input's; ``Spatial`` FALSE forbids broadcasting Mean's and
Variance's height and width, and has no effect from DML_FEATURE_LEVEL_4_0) and the two
mean-variance pages (Scale and Bias broadcast the same way, except that below
DML_FEATURE_LEVEL_4_0 MEAN_VARIANCE_NORMALIZATION1's channels do not broadcast; below
DML_FEATURE_LEVEL_5_2 Scale and Bias come together or not at all; Axes name the input's
dimensions). Decisions (docs/deviations.md): a negative or non-finite Epsilon and a repeated
axis are warnings, the pages being silent.

Kernels, from the pages' formulas:

* BATCH_NORMALIZATION: ``FusedActivation(Scale * (Input - Mean) / sqrt(Variance + Epsilon) + Bias)``,
  Mean, Variance, Scale and Bias broadcast to the input (Spatial only constrains their sizes).
* MEAN_VARIANCE_NORMALIZATION1: Mean and Variance over ``Axes`` (population variance, the mean
  of the squared deviations), then ``FusedActivation(Scale * (Input - Mean) / sqrt(Variance +
  Epsilon) + Bias)``; without NormalizeVariance ``FusedActivation(Scale * (Input - Mean) + Bias)``.
  A NULL Scale is 1 and a NULL Bias 0.
* MEAN_VARIANCE_NORMALIZATION: the same over ``{C, H, W}`` (CrossChannel TRUE) or ``{H, W}``
  (CrossChannel FALSE): every batch item, and without CrossChannel every channel, on its own.

FLOAT16 computes in float32, FLOAT32 in float64 rounded once to the output. The native backend runs
dmlpy/native/normalization.c (float32 throughout; docs/deviations.md states how closely it agrees).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dmlpy.enums import DML_FEATURE_LEVEL, DML_OPERATOR_TYPE
from dmlpy.errors import Severity
from dmlpy.operators import OperatorSpec, register
from dmlpy.operators.activation import apply_fused, native_fused
from dmlpy.operators.descs.normalization import (
    DML_BATCH_NORMALIZATION_OPERATOR_DESC,
    DML_LOCAL_RESPONSE_NORMALIZATION_OPERATOR_DESC,
    DML_LP_NORMALIZATION_OPERATOR_DESC,
    DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC,
    DML_MEAN_VARIANCE_NORMALIZATION_OPERATOR_DESC,
)
from dmlpy.rules import Checker, fmt, rule
from dmlpy.support import OPERATORS

FL = DML_FEATURE_LEVEL
BN_PAGE = "ns-directml-dml_batch_normalization_operator_desc"
MVN_PAGE = "ns-directml-dml_mean_variance_normalization1_operator_desc"

BROADCAST = rule("NORMALIZATION.BROADCAST", "Each dimension of Mean, Variance, Scale and Bias is 1 (broadcast) or the input's; MEAN_VARIANCE_NORMALIZATION1's channels below FL 4.0 are the input's.", source=f"{BN_PAGE}; {MVN_PAGE}")
SPATIAL = rule("NORMALIZATION.SPATIAL", "Below FL 4.0, BATCH_NORMALIZATION with Spatial FALSE does not broadcast Mean's and Variance's spatial dimensions.", source=BN_PAGE)
SCALE_BIAS_TOGETHER = rule("NORMALIZATION.SCALE_BIAS_TOGETHER", "Below FL 5.2, a mean-variance normalization has both ScaleTensor and BiasTensor or neither.", source=MVN_PAGE)
AXIS_RANGE = rule("NORMALIZATION.AXIS_RANGE", "Every entry of MEAN_VARIANCE_NORMALIZATION1's Axes is below InputTensor.DimensionCount.", source=MVN_PAGE)
AXIS_DUPLICATE = rule("NORMALIZATION.AXIS_DUPLICATE", "No axis appears twice in Axes (the page is silent; a repeated axis normalizes once).", source="docs/deviations.md", severity=Severity.WARNING)
EPSILON = rule("NORMALIZATION.EPSILON", "Epsilon is finite and not negative (the pages say only that it avoids division by zero).", source="docs/deviations.md", severity=Severity.WARNING)

AnyMvn = DML_MEAN_VARIANCE_NORMALIZATION_OPERATOR_DESC | DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC


def _check_epsilon(ctx: Checker, epsilon: float, path: str) -> None:
    ctx.check(math.isfinite(epsilon) and epsilon >= 0, EPSILON, f"{path}.Epsilon", actual=epsilon, expected=">= 0 and finite",
              message=f"is {fmt(epsilon)}: Variance + Epsilon can then be 0 or negative, and its square root NaN")  # fmt: skip


def _check_broadcast(ctx: Checker, x: Any, name: str, tensor: Any, path: str, fixed: tuple[int, ...] = ()) -> None:
    """``tensor``'s sizes are 1 or the input's; the axes in ``fixed`` must be the input's."""
    if tensor is None or x is None or tensor.DimensionCount != x.DimensionCount:
        return  # TENSOR.SAME_DIMENSION_COUNT
    for i, (size, wanted) in enumerate(zip(tensor.Sizes, x.Sizes, strict=True)):
        if i in fixed:
            ctx.check(size == wanted, BROADCAST, f"{path}.{name}.Sizes[{i}]", actual=size, expected=wanted, why=f"InputTensor.Sizes[{i}] (this dimension does not broadcast here)")
        else:
            ctx.check(size in (1, wanted), BROADCAST, f"{path}.{name}.Sizes[{i}]", actual=size, expected=f"1 or {wanted}",
                      message=f"is {size}, expected 1 (broadcast) or InputTensor.Sizes[{i}] = {wanted}")  # fmt: skip


def _check_batch_normalization(ctx: Checker, desc: DML_BATCH_NORMALIZATION_OPERATOR_DESC, path: str, buffers: dict[str, Any]) -> None:
    x = buffers["InputTensor"]
    _check_epsilon(ctx, desc.Epsilon, path)
    for name in ("MeanTensor", "VarianceTensor", "ScaleTensor", "BiasTensor"):
        _check_broadcast(ctx, x, name, buffers[name], path)
    if desc.Spatial or ctx.feature_level >= FL.LEVEL_4_0 or x is None:
        return
    for name in ("MeanTensor", "VarianceTensor"):
        tensor = buffers[name]
        if tensor is None or tensor.DimensionCount != x.DimensionCount:
            continue
        for i in range(2, x.DimensionCount):
            if tensor.Sizes[i] in (1, x.Sizes[i]):  # a size other than these is NORMALIZATION.BROADCAST
                ctx.check(tensor.Sizes[i] == x.Sizes[i], SPATIAL, f"{path}.{name}.Sizes[{i}]", actual=tensor.Sizes[i], expected=x.Sizes[i],
                          why=f"InputTensor.Sizes[{i}]: Spatial is FALSE, so below DML_FEATURE_LEVEL_4_0 the spatial dimensions do not broadcast")  # fmt: skip


def _check_mean_variance(ctx: Checker, desc: AnyMvn, path: str, buffers: dict[str, Any]) -> None:
    x, scale, bias = buffers["InputTensor"], buffers["ScaleTensor"], buffers["BiasTensor"]
    _check_epsilon(ctx, desc.Epsilon, path)
    if ctx.feature_level < FL.LEVEL_5_2 and (desc.ScaleTensor is None) != (desc.BiasTensor is None):
        missing = "ScaleTensor" if desc.ScaleTensor is None else "BiasTensor"
        ctx.fail(SCALE_BIAS_TOGETHER, f"{path}.{missing}", actual=None, expected="given with the other",
                 message=f"is NULL while {'BiasTensor' if missing == 'ScaleTensor' else 'ScaleTensor'} is given: below DML_FEATURE_LEVEL_5_2 both or neither")  # fmt: skip
    first = isinstance(desc, DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC) and ctx.feature_level < FL.LEVEL_4_0
    for name, tensor in (("ScaleTensor", scale), ("BiasTensor", bias)):
        _check_broadcast(ctx, x, name, tensor, path, fixed=(1,) if first else ())
    if not isinstance(desc, DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC) or x is None or desc.Axes is None:
        return
    for i, axis in enumerate(desc.Axes):
        ctx.check(axis < x.DimensionCount, AXIS_RANGE, f"{path}.Axes[{i}]", actual=axis, expected=f"0..{x.DimensionCount - 1}",
                  message=f"is {axis}, expected an axis in [0, InputTensor.DimensionCount - 1] = [0, {x.DimensionCount - 1}]")  # fmt: skip
        first_index = list(desc.Axes).index(axis)
        ctx.check(first_index == i, AXIS_DUPLICATE, f"{path}.Axes[{i}]", actual=axis, expected="an axis not listed before", message=f"is {axis}, already Axes[{first_index}]")


# ---------------------------------------------------------------------------------------
# NumPy kernels


def _work(dtype: np.dtype[Any]) -> type:
    """FLOAT16 computes in float32; FLOAT32 in float64 (rounded once, to the output)."""
    return np.float32 if dtype == np.float16 else np.float64


def _affine(y: np.ndarray, scale: np.ndarray | None, bias: np.ndarray | None, fused: Any, work: type) -> np.ndarray:
    """``FusedActivation(Scale * y + Bias)``, Scale and Bias broadcast (a NULL Scale is 1, a NULL Bias 0)."""
    if scale is not None:
        y = y * scale.astype(work)
    if bias is not None:
        y = y + bias.astype(work)
    return np.asarray(apply_fused(fused, y)).astype(work)


def batch_normalization_reference(desc: DML_BATCH_NORMALIZATION_OPERATOR_DESC, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    x, mean, variance = inputs["InputTensor"], inputs["MeanTensor"], inputs["VarianceTensor"]
    assert x is not None and mean is not None and variance is not None
    work = _work(x.dtype)
    epsilon = work(np.float32(desc.Epsilon))  # a FLOAT field
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        y = (x.astype(work) - mean.astype(work)) / np.sqrt(variance.astype(work) + epsilon)
        return {"OutputTensor": _affine(y, inputs["ScaleTensor"], inputs["BiasTensor"], desc.FusedActivation, work)}


def normalized_axes(desc: AnyMvn, rank: int) -> tuple[int, ...]:
    """The axes Mean and Variance are taken over: MEAN_VARIANCE_NORMALIZATION1's Axes, or {C, H, W} / {H, W} from CrossChannel."""
    if isinstance(desc, DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC):
        return tuple(sorted(set(desc.Axes or ())))
    return tuple(range(1 if desc.CrossChannel else 2, rank))


def mean_variance_normalization_reference(desc: AnyMvn, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    x = inputs["InputTensor"]
    assert x is not None
    work = _work(x.dtype)
    axes = normalized_axes(desc, x.ndim)
    v = x.astype(work)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        y = v - v.mean(axis=axes, keepdims=True)
        if desc.NormalizeVariance:
            variance = np.mean(y * y, axis=axes, keepdims=True)  # population variance
            y = y / np.sqrt(variance + work(np.float32(desc.Epsilon)))
        return {"OutputTensor": _affine(y, inputs["ScaleTensor"], inputs["BiasTensor"], desc.FusedActivation, work)}


for _type, _class, _check, _kernel in (
    (DML_OPERATOR_TYPE.BATCH_NORMALIZATION, DML_BATCH_NORMALIZATION_OPERATOR_DESC, _check_batch_normalization, batch_normalization_reference),
    (DML_OPERATOR_TYPE.MEAN_VARIANCE_NORMALIZATION, DML_MEAN_VARIANCE_NORMALIZATION_OPERATOR_DESC, _check_mean_variance, mean_variance_normalization_reference),
    (DML_OPERATOR_TYPE.MEAN_VARIANCE_NORMALIZATION1, DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC, _check_mean_variance, mean_variance_normalization_reference),
):
    # dmlpy/native/normalization.c computes them, with the FusedActivations activation.c applies; a desc with
    # another FusedActivation runs on the NumPy kernel (docs/deviations.md states the tolerance between the two).
    register(OperatorSpec(_type, _class, OPERATORS[_type], _check, _kernel, generic_rules=True, native=True,
                          native_covers=lambda desc: native_fused(desc.FusedActivation)))


# ---------------------------------------------------------------------------------------
# LOCAL_RESPONSE_NORMALIZATION and LP_NORMALIZATION
#
# LRN (the DML_LOCAL_RESPONSE_NORMALIZATION_OPERATOR_DESC page):
# ``Output = Input / (Bias + (Alpha / LocalSize) * sum(Input^2 over the local region))^Beta``. The
# region is LocalSize elements along C (CrossChannel TRUE) or LocalSize x LocalSize along H and W
# (CrossChannel FALSE), clipped to the tensor (the _GRAD page: "the local region is clipped so that
# all elements are within bounds"), from ``i - floor((LocalSize - 1) / 2)`` to ``i + ceil((LocalSize
# - 1) / 2)`` (ONNX LRN's placement, which onnxruntime's DirectML provider maps as CrossChannel TRUE
# with Alpha unchanged: ONNX also divides alpha by size). The divisor is LocalSize in both modes, as
# the page's formula writes it (docs/deviations.md).
#
# LP_NORMALIZATION: ``Output = Input / max(||Input||_P along Axis, Epsilon)``, P 1 or 2
# (docs/deviations.md: the page says only that Epsilon avoids dividing by zero).

LRN_PAGE = "ns-directml-dml_local_response_normalization_operator_desc"
LPN_PAGE = "ns-directml-dml_lp_normalization_operator_desc"
LRN_LOCAL_SIZE = rule("LRN.LOCAL_SIZE", "LocalSize is at least 1.", source=LRN_PAGE)
LRN_PARAMETERS = rule("LRN.PARAMETERS", "Alpha, Beta and Bias are finite (the page recommends 0.0001, 0.75 and 1).", source="docs/deviations.md", severity=Severity.WARNING)
LPN_P = rule("LP_NORMALIZATION.P", "P is 1 or 2.", source=LPN_PAGE)
LPN_AXIS = rule("LP_NORMALIZATION.AXIS_RANGE", "Axis is below InputTensor.DimensionCount.", source=LPN_PAGE)


def _check_lrn(ctx: Checker, desc: DML_LOCAL_RESPONSE_NORMALIZATION_OPERATOR_DESC, path: str, buffers: dict[str, Any]) -> None:
    ctx.check(desc.LocalSize >= 1, LRN_LOCAL_SIZE, f"{path}.LocalSize", actual=desc.LocalSize, expected=">= 1", message=f"is {desc.LocalSize}, expected at least 1 (the page: this value must be at least 1)")
    for name in ("Alpha", "Beta", "Bias"):
        value = getattr(desc, name)
        ctx.check(math.isfinite(value), LRN_PARAMETERS, f"{path}.{name}", actual=value, expected="finite", message=f"is {fmt(value)}: every output is then NaN or 0")


def _check_lp_normalization(ctx: Checker, desc: DML_LP_NORMALIZATION_OPERATOR_DESC, path: str, buffers: dict[str, Any]) -> None:
    x = buffers["InputTensor"]
    ctx.check(desc.P in (1, 2), LPN_P, f"{path}.P", actual=desc.P, expected="1 or 2", message=f"is {desc.P}, expected 1 or 2 (the order of the normalization)")
    if x is not None:
        ctx.check(desc.Axis < x.DimensionCount, LPN_AXIS, f"{path}.Axis", actual=desc.Axis, expected=f"0..{x.DimensionCount - 1}",
                  message=f"is {desc.Axis}, expected an axis in [0, InputTensor.DimensionCount - 1] = [0, {x.DimensionCount - 1}]")  # fmt: skip
    _check_epsilon(ctx, desc.Epsilon, path)


def _window_sum(v: np.ndarray, axis: int, size: int) -> np.ndarray:
    """Per element, the sum of ``v`` over ``[i - floor((size - 1) / 2), i + ceil((size - 1) / 2)]`` along ``axis``, clipped to the tensor."""
    n = v.shape[axis]
    before, after = min((size - 1) // 2, n - 1), min(size // 2, n - 1)  # offsets past the tensor add nothing
    moved = np.moveaxis(v, axis, -1)
    total = np.zeros_like(moved)
    for offset in range(-before, after + 1):  # out[i] += v[i + offset] where 0 <= i + offset < n
        lo, hi = max(0, -offset), min(n, n - offset)
        total[..., lo:hi] += moved[..., lo + offset : hi + offset]
    return np.moveaxis(total, -1, axis)


def local_response_normalization_reference(desc: DML_LOCAL_RESPONSE_NORMALIZATION_OPERATOR_DESC, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    x = inputs["InputTensor"]
    assert x is not None
    work = _work(x.dtype)
    v = x.astype(work)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        squares = v * v
        for axis in ((1,) if desc.CrossChannel else (2, 3)):
            squares = _window_sum(squares, axis, desc.LocalSize)
        alpha, beta, bias = (work(np.float32(value)) for value in (desc.Alpha, desc.Beta, desc.Bias))
        return {"OutputTensor": v / (bias + alpha / work(desc.LocalSize) * squares) ** beta}


def lp_normalization_reference(desc: DML_LP_NORMALIZATION_OPERATOR_DESC, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    x = inputs["InputTensor"]
    assert x is not None
    work = _work(x.dtype)
    v = x.astype(work)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        magnitude = np.abs(v)
        norm = magnitude.sum(axis=desc.Axis, keepdims=True) if desc.P == 1 else np.sqrt((magnitude * magnitude).sum(axis=desc.Axis, keepdims=True))
        return {"OutputTensor": v / np.maximum(norm, work(np.float32(desc.Epsilon)))}


for _type, _class, _check, _kernel in (
    (DML_OPERATOR_TYPE.LOCAL_RESPONSE_NORMALIZATION, DML_LOCAL_RESPONSE_NORMALIZATION_OPERATOR_DESC, _check_lrn, local_response_normalization_reference),
    (DML_OPERATOR_TYPE.LP_NORMALIZATION, DML_LP_NORMALIZATION_OPERATOR_DESC, _check_lp_normalization, lp_normalization_reference),
):
    register(OperatorSpec(_type, _class, OPERATORS[_type], _check, _kernel, generic_rules=True, native=False))

__all__ = [
    "DML_BATCH_NORMALIZATION_OPERATOR_DESC",
    "DML_LOCAL_RESPONSE_NORMALIZATION_OPERATOR_DESC",
    "DML_LP_NORMALIZATION_OPERATOR_DESC",
    "DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC",
    "DML_MEAN_VARIANCE_NORMALIZATION_OPERATOR_DESC",
    "batch_normalization_reference",
    "local_response_normalization_reference",
    "lp_normalization_reference",
    "mean_variance_normalization_reference",
    "normalized_axes",
]
