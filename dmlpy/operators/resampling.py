"""Resampling: DML_RESAMPLE_OPERATOR_DESC, RESAMPLE1, RESAMPLE2 and RESAMPLE3.

Facts: the four DML_RESAMPLE*_OPERATOR_DESC pages. Scales (and the pixel offsets) have one entry
per tensor dimension; the output sizes are free: "the scales don't need to be exactly
OutputSize / InputSize", a larger scaled input is cropped and a smaller one clamped at the edges.
Decision (docs/deviations.md): a scale that is not a positive finite number is a warning, the
pages being silent about it.

The kernel, axis by axis (the pages' relation ``OutputX = (InputX + InputPixelOffset) * Scale +
OutputPixelOffset`` solved for the input; RESAMPLE is RESAMPLE1 with offsets 0.5 and -0.5)::

    x = (o - OutputPixelOffset) / Scale - InputPixelOffset        (in float32, as the GPU does)

* NEAREST_NEIGHBOR: RESAMPLE and RESAMPLE1 take the nearest input element, ``floor(x + 0.5)``
  (halves up); RESAMPLE2 and RESAMPLE3 round by RoundingDirection: INCREASING ``ceil(x)``,
  DECREASING ``floor(x)``. The index is clamped to ``[0, in - 1]``.
* LINEAR: ``(1 - f) * in[clamp(i)] + f * in[clamp(i + 1)]`` with ``i = floor(x)``, ``f = x - i``;
  the axes compose (bilinear, ..., quadrilinear).
* RESAMPLE3 with Antialiased, LINEAR, and ``1 / Scale > 2`` on an axis: the triangle filter is
  stretched by ``1 / Scale`` there: ``w_j = max(0, 1 - |j - x| * Scale)`` for every integer j,
  divided by the sum of the weights; a j off the input reads the clamped edge element.

FLOAT32 and FLOAT16 compute in float32, as the GPU does; INT8 and UINT8 (FL 6.2) compute in
float64, then truncate toward zero (docs/deviations.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dmlpy.enums import DML_AXIS_DIRECTION, DML_INTERPOLATION_MODE, DML_OPERATOR_TYPE
from dmlpy.errors import Severity
from dmlpy.operators import OperatorSpec, register
from dmlpy.operators.descs.resampling import (
    DML_RESAMPLE1_OPERATOR_DESC,
    DML_RESAMPLE2_OPERATOR_DESC,
    DML_RESAMPLE3_OPERATOR_DESC,
    DML_RESAMPLE_OPERATOR_DESC,
)
from dmlpy.operators.element_wise import store
from dmlpy.rules import Checker, fmt, rule
from dmlpy.support import OPERATORS

PAGE = "ns-directml-dml_resample1_operator_desc"
SCALE_COUNT = rule("RESAMPLE.SCALE_COUNT", "ScaleCount (RESAMPLE) or DimensionCount (RESAMPLE1) equals the tensors' DimensionCount: one scale per dimension.", source=PAGE)
SCALE_VALUE = rule("RESAMPLE.SCALE_VALUE", "Every scale is a positive finite number (the pages are silent; 0, a negative or NaN scale maps no output to the input).", source="docs/deviations.md", severity=Severity.WARNING)


AnyResample = DML_RESAMPLE_OPERATOR_DESC | DML_RESAMPLE1_OPERATOR_DESC | DML_RESAMPLE2_OPERATOR_DESC | DML_RESAMPLE3_OPERATOR_DESC


def _check_resample(ctx: Checker, desc: AnyResample, path: str, buffers: dict[str, Any]) -> None:
    x, y = buffers["InputTensor"], buffers["OutputTensor"]
    count_name = "ScaleCount" if isinstance(desc, DML_RESAMPLE_OPERATOR_DESC) else "DimensionCount"
    count = getattr(desc, count_name)
    if x is not None and y is not None and x.DimensionCount == y.DimensionCount:
        ctx.check(count == x.DimensionCount, SCALE_COUNT, f"{path}.{count_name}", actual=count, expected=x.DimensionCount, why="InputTensor.DimensionCount (one scale per dimension)")
    for i, scale in enumerate(desc.Scales or ()):
        ctx.check(math.isfinite(scale) and scale > 0, SCALE_VALUE, f"{path}.Scales[{i}]", actual=scale, expected="> 0 and finite",
                  message=f"is {fmt(scale)}, expected a positive finite scale")  # fmt: skip


# ---------------------------------------------------------------------------------------
# NumPy kernel: one axis at a time (nearest neighbour and linear filters are separable)


def input_coordinates(out_size: int, scale: float, input_offset: float, output_offset: float) -> np.ndarray:
    """``(o - OutputPixelOffset) / Scale - InputPixelOffset`` for o in [0, out_size), in float32 as DirectML's FLOAT fields."""
    f32 = np.float32
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return (np.arange(out_size, dtype=f32) - f32(output_offset)) / f32(scale) - f32(input_offset)


def _offsets(desc: AnyResample, rank: int) -> tuple[Sequence[float], Sequence[float]]:
    if isinstance(desc, DML_RESAMPLE_OPERATOR_DESC):
        return (0.5,) * rank, (-0.5,) * rank  # the RESAMPLE1 page: RESAMPLE is RESAMPLE1 with these
    return tuple(desc.InputPixelOffsets or ()), tuple(desc.OutputPixelOffsets or ())


def _nearest_index(desc: AnyResample, x: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        if isinstance(desc, DML_RESAMPLE_OPERATOR_DESC | DML_RESAMPLE1_OPERATOR_DESC):
            return np.floor(x + np.float32(0.5))  # the nearest element, halves up
        return np.ceil(x) if desc.RoundingDirection == DML_AXIS_DIRECTION.INCREASING else np.floor(x)


def _clamped(index: np.ndarray, size: int) -> np.ndarray:
    return np.clip(np.nan_to_num(index, nan=0.0, posinf=size - 1, neginf=0), 0, size - 1).astype(np.int64)


def _antialiasing(scale: float) -> bool:
    """The page's condition ``1 / Scale > 2``; a scale that is not positive and finite (RESAMPLE.SCALE_VALUE) is plain linear."""
    scale = float(np.float32(scale))
    return math.isfinite(scale) and 0 < scale < 0.5


def _triangle_sum(low: np.ndarray, high: np.ndarray, x: np.ndarray, stretch: float) -> np.ndarray:
    """``sum(1 - |j - x| / stretch for j in [low, high])`` in closed form, for j strictly inside the filter (every term positive)."""

    def arithmetic(a: np.ndarray, b: np.ndarray, sign: float) -> np.ndarray:  # sum of 1 + sign * (j - x) / stretch over j in [a, b]
        n = np.maximum(0.0, b - a + 1)
        return np.where(n > 0, n + sign * ((a + b) * n / 2 - n * x) / stretch, 0.0)

    below = np.minimum(high, np.floor(x))  # j <= x: 1 + (j - x) / stretch; j > x: 1 - (j - x) / stretch
    return arithmetic(low, below, 1.0) + arithmetic(np.maximum(low, below + 1), high, -1.0)


def _antialiased_weights(x: np.ndarray, size: int, stretch: float) -> tuple[np.ndarray, np.ndarray]:
    """The linear filter stretched to half-width ``stretch``: taps on the input, and the weight of the taps off
    either edge (which read the clamped edge element) in closed form, so a filter far wider than the input costs nothing."""
    low, high = np.floor(x - stretch) + 1, np.ceil(x + stretch) - 1  # the taps strictly inside (x - stretch, x + stretch)
    total = _triangle_sum(low, high, x, stretch)
    before = _triangle_sum(low, np.minimum(high, -1.0), x, stretch)
    after = _triangle_sum(np.maximum(low, float(size)), high, x, stretch)
    width = int(min(size, math.ceil(2 * stretch) + 1))
    taps = np.clip(low, 0, size - 1)[:, None] + np.arange(width)
    inside = (taps <= np.minimum(high, size - 1)[:, None]) & (taps >= low[:, None])
    weights = np.where(inside, np.maximum(0.0, 1 - np.abs(taps - x[:, None]) / stretch), 0.0)
    indices = np.concatenate([np.zeros((x.size, 1)), taps, np.full((x.size, 1), size - 1)], axis=1)
    weights = np.concatenate([before[:, None], weights, after[:, None]], axis=1)
    return _clamped(indices, size), weights / total[:, None]


def _axis_weights(desc: AnyResample, x: np.ndarray, size: int, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """(indices, weights), each {out, taps}: the output along one axis is sum(weights * input[indices])."""
    mode = DML_INTERPOLATION_MODE(desc.InterpolationMode)
    if mode == DML_INTERPOLATION_MODE.NEAREST_NEIGHBOR:
        return _clamped(_nearest_index(desc, x), size)[:, None], np.ones((x.size, 1))
    x = x.astype(np.float64)
    if getattr(desc, "Antialiased", False) and _antialiasing(scale):
        return _antialiased_weights(np.nan_to_num(x), size, 1 / float(np.float32(scale)))
    low = np.floor(x)
    fraction = x - low
    return _clamped(np.stack([low, low + 1], axis=1), size), np.stack([1 - fraction, fraction], axis=1)


def _resample_axis(v: np.ndarray, axis: int, indices: np.ndarray, weights: np.ndarray) -> np.ndarray:
    moved = np.moveaxis(v, axis, -1)
    out = np.zeros((*moved.shape[:-1], indices.shape[0]), dtype=v.dtype)
    for k in range(indices.shape[1]):
        tap = weights[:, k]
        # where, not a product: a tap of weight 0 adds nothing, not 0 * inf
        out = out + np.where(tap != 0, moved[..., indices[:, k]] * tap.astype(v.dtype), 0)
    return np.moveaxis(out, -1, axis)


def resample_reference(desc: AnyResample, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    x = inputs["InputTensor"]
    assert x is not None and desc.OutputTensor is not None and desc.OutputTensor.Desc is not None
    out_sizes = tuple(desc.OutputTensor.Desc.Sizes or ())
    input_offsets, output_offsets = _offsets(desc, x.ndim)
    floating = x.dtype.kind == "f"
    v = x.astype(np.float32 if floating else np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        for axis, (out, scale) in enumerate(zip(out_sizes, desc.Scales or (), strict=True)):
            coordinates = input_coordinates(out, scale, input_offsets[axis], output_offsets[axis])
            v = _resample_axis(v, axis, *_axis_weights(desc, coordinates, x.shape[axis], scale))
    # INT8 / UINT8: truncated toward zero and saturated, as every float-to-integer store in dmlpy
    return {"OutputTensor": v if floating else store(v, x.dtype)}


# ---------------------------------------------------------------------------------------
# The ONNX Resize mapping (onnxruntime's DirectML provider, DmlOperatorResize.cpp)

ONNX_COORDINATE_MODES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn")
ONNX_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def onnx_resize_parameters(
    input_sizes: Sequence[int], output_sizes: Sequence[int], scales: Sequence[float], coordinate_transformation_mode: str = "half_pixel",
    mode: str = "nearest", nearest_mode: str = "round_prefer_floor",
) -> tuple[list[float], list[float], list[float], DML_AXIS_DIRECTION]:
    """(Scales, InputPixelOffsets, OutputPixelOffsets, RoundingDirection) of the RESAMPLE2/3 desc for an ONNX Resize.

    ONNX maps output to input as ``x = (o + a) / scale - b``; DirectML's relation gives
    OutputPixelOffset ``-a`` and InputPixelOffset ``b``. align_corners replaces the scale by
    ``(out - 1) / (in - 1)``. Nearest rounding: floor and ceil are DECREASING and INCREASING;
    round_prefer_ceil is ``floor(x + 0.5)`` (DECREASING, InputPixelOffset - 0.5) and
    round_prefer_floor ``ceil(x - 0.5)`` (INCREASING, InputPixelOffset + 0.5).
    """
    if coordinate_transformation_mode not in ONNX_COORDINATE_MODES:
        msg = f"onnx_resize_parameters: coordinate_transformation_mode {coordinate_transformation_mode!r} is not one of {ONNX_COORDINATE_MODES}"
        raise ValueError(msg)
    if mode == "nearest" and nearest_mode not in ONNX_NEAREST_MODES:
        msg = f"onnx_resize_parameters: nearest_mode {nearest_mode!r} is not one of {ONNX_NEAREST_MODES}"
        raise ValueError(msg)
    out_scales, input_offsets, output_offsets = [], [], []
    for size, out, scale in zip(input_sizes, output_sizes, scales, strict=True):
        b, a = {"half_pixel": (0.5, 0.5), "pytorch_half_pixel": (0.5, 0.5), "tf_half_pixel_for_nn": (0.0, 0.5)}.get(coordinate_transformation_mode, (0.0, 0.0))
        if coordinate_transformation_mode == "align_corners":
            scale = (out - 1) / (size - 1) if out > 1 and size > 1 else float(np.finfo(np.float32).max)
        elif coordinate_transformation_mode == "pytorch_half_pixel" and out <= 1:  # ONNX: length_resized > 1 ? ... : 0
            b, a, scale = 0.0, 0.0, float(np.finfo(np.float32).max)
        out_scales.append(float(scale))
        input_offsets.append(b)
        output_offsets.append(-a)
    direction = DML_AXIS_DIRECTION.DECREASING
    if mode == "nearest":
        adjustment = {"round_prefer_floor": 0.5, "round_prefer_ceil": -0.5, "floor": 0.0, "ceil": 0.0}[nearest_mode]
        if nearest_mode in ("round_prefer_floor", "ceil"):
            direction = DML_AXIS_DIRECTION.INCREASING
        input_offsets = [b + adjustment for b in input_offsets]
    return out_scales, input_offsets, output_offsets, direction


def resample_output_sizes(input_sizes: Sequence[int], scales: Sequence[float]) -> tuple[int, ...]:
    """``floor(in * scale)`` per axis (ONNX Resize's output shape; DirectML leaves the output sizes free)."""
    return tuple(math.floor(size * float(np.float32(scale))) for size, scale in zip(input_sizes, scales, strict=True))


def native_covers(desc: AnyResample) -> bool:
    """The C kernel (dmlpy/native/resampling.c) takes every valid desc whose scales are finite as the C FLOAT
    fields hold them; a scale that is not (``RESAMPLE.SCALE_VALUE``, a warning) runs on the NumPy kernel."""
    with np.errstate(over="ignore"):
        return all(math.isfinite(float(np.float32(scale))) for scale in desc.Scales or ())


for _type, _class in (
    (DML_OPERATOR_TYPE.RESAMPLE, DML_RESAMPLE_OPERATOR_DESC),
    (DML_OPERATOR_TYPE.RESAMPLE1, DML_RESAMPLE1_OPERATOR_DESC),
    (DML_OPERATOR_TYPE.RESAMPLE2, DML_RESAMPLE2_OPERATOR_DESC),
    (DML_OPERATOR_TYPE.RESAMPLE3, DML_RESAMPLE3_OPERATOR_DESC),
):
    register(OperatorSpec(_type, _class, OPERATORS[_type], _check_resample, resample_reference, native=True, native_covers=native_covers, generic_rules=True))

__all__ = [
    "DML_RESAMPLE1_OPERATOR_DESC",
    "DML_RESAMPLE2_OPERATOR_DESC",
    "DML_RESAMPLE3_OPERATOR_DESC",
    "DML_RESAMPLE_OPERATOR_DESC",
    "input_coordinates",
    "onnx_resize_parameters",
    "resample_output_sizes",
    "resample_reference",
]
