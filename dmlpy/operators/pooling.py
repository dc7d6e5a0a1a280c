"""Average pooling: DML_AVERAGE_POOLING_OPERATOR_DESC and DML_AVERAGE_POOLING1_OPERATOR_DESC.

Facts: the DML_AVERAGE_POOLING_OPERATOR_DESC page and the DML_AVERAGE_POOLING1_OPERATOR_DESC page. Decisions (docs/deviations.md):

* Output size: each spatial size is the floor formula with the dilated window,
  ``(in + start + end - ((w - 1) * d + 1)) / s + 1``, or exactly one more (the "ceil shape")
  when that last window still starts inside input + start padding; the ceil shape also
  warns ``POOLING.CEIL_OUTPUT``.
* Divisor: taps outside the padded extent ``[-start, in + end)`` never count. With
  IncludePadding the divisor counts taps inside the padded extent, without it taps on real
  input. A window wholly in padding without IncludePadding gives NaN (0/0) and warns
  ``POOLING.EMPTY_WINDOW``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dmlpy.enums import DML_OPERATOR_TYPE
from dmlpy.errors import Severity
from dmlpy.operators import OperatorSpec, register
from dmlpy.rules import Checker, fmt, rule
from dmlpy.structs import CStruct, Kind, c_field
from dmlpy.support import OPERATORS
from dmlpy.tensor import DML_BUFFER_TENSOR_DESC, DML_TENSOR_DESC


@dataclass
class DML_AVERAGE_POOLING_OPERATOR_DESC(CStruct):  # noqa: N801 - the C name
    InputTensor: DML_TENSOR_DESC | None = c_field(Kind.TENSOR)
    OutputTensor: DML_TENSOR_DESC | None = c_field(Kind.TENSOR)
    DimensionCount: int | None = c_field(Kind.DIMENSION_COUNT)
    Strides: Sequence[int] | None = c_field(Kind.UINT_ARRAY)
    WindowSize: Sequence[int] | None = c_field(Kind.UINT_ARRAY)
    StartPadding: Sequence[int] | None = c_field(Kind.UINT_ARRAY)
    EndPadding: Sequence[int] | None = c_field(Kind.UINT_ARRAY)
    IncludePadding: bool | int = c_field(Kind.BOOL)


@dataclass
class DML_AVERAGE_POOLING1_OPERATOR_DESC(CStruct):  # noqa: N801 - the C name
    InputTensor: DML_TENSOR_DESC | None = c_field(Kind.TENSOR)
    OutputTensor: DML_TENSOR_DESC | None = c_field(Kind.TENSOR)
    DimensionCount: int | None = c_field(Kind.DIMENSION_COUNT)
    Strides: Sequence[int] | None = c_field(Kind.UINT_ARRAY)
    WindowSize: Sequence[int] | None = c_field(Kind.UINT_ARRAY)
    StartPadding: Sequence[int] | None = c_field(Kind.UINT_ARRAY)
    EndPadding: Sequence[int] | None = c_field(Kind.UINT_ARRAY)
    Dilations: Sequence[int] | None = c_field(Kind.UINT_ARRAY)
    IncludePadding: bool | int = c_field(Kind.BOOL)


AnyAveragePooling = DML_AVERAGE_POOLING_OPERATOR_DESC | DML_AVERAGE_POOLING1_OPERATOR_DESC


def dilations_of(desc: AnyAveragePooling) -> tuple[int, ...]:
    """AVERAGE_POOLING has no Dilations field: it behaves as all ones."""
    dilations = getattr(desc, "Dilations", None)
    return tuple(dilations) if dilations is not None else (1,) * (desc.DimensionCount or 0)


# ---------------------------------------------------------------------------------------
# Output sizes


def pooled_size(size: int, window: int, stride: int, start: int, end: int, dilation: int = 1) -> int:
    """The floor output size of one spatial dim: ``(in + start + end - keff) / stride + 1``."""
    effective_window = (window - 1) * dilation + 1
    return (size + start + end - effective_window) // stride + 1


def ceil_shape_allowed(size: int, window: int, stride: int, start: int, end: int, dilation: int = 1) -> bool:
    """Whether one more output than the floor size is acceptable along one dim.

    The extra window must start inside input + start padding (PyTorch's and ONNX's rule),
    and the floor division must have had a remainder.
    """
    effective_window = (window - 1) * dilation + 1
    floor_size = pooled_size(size, window, stride, start, end, dilation)
    return (size + start + end - effective_window) % stride != 0 and floor_size * stride < size + start


def average_pooling_output_sizes(
    input_sizes: Sequence[int],
    window_size: Sequence[int],
    strides: Sequence[int] | None = None,
    start_padding: Sequence[int] | None = None,
    end_padding: Sequence[int] | None = None,
    dilations: Sequence[int] | None = None,
    *,
    ceil_mode: bool = False,
) -> tuple[int, ...]:
    """The OutputTensor.Sizes DirectML expects: N and C copied, spatial sizes by the floor formula.

    ``ceil_mode`` gives the ceil shape where it is allowed (ONNX/PyTorch ceil_mode; DirectML
    has no rounding flag, the output size alone says it).
    """
    spatial = len(input_sizes) - 2
    strides = strides or (1,) * spatial
    start_padding = start_padding or (0,) * spatial
    end_padding = end_padding or (0,) * spatial
    dilations = dilations or (1,) * spatial
    for name, values in (("window_size", window_size), ("strides", strides), ("dilations", dilations)):
        if any(v < 1 for v in values[:spatial]):
            msg = f"{name} {tuple(values)} has an entry below 1; no output size exists"
            raise ValueError(msg)
    out = list(input_sizes[:2])
    for i in range(spatial):
        args = (input_sizes[i + 2], window_size[i], strides[i], start_padding[i], end_padding[i], dilations[i])
        size = pooled_size(*args)
        if ceil_mode and ceil_shape_allowed(*args):
            size += 1
        out.append(size)
    return tuple(out)


# ---------------------------------------------------------------------------------------
# Rules

DIMENSION_COUNT = rule("POOLING.DIMENSION_COUNT", "DimensionCount equals the tensors' DimensionCount - 2 (2 for 4-D, 3 for 5-D).", source="ns-directml-dml_average_pooling_operator_desc")
SAME_RANK = rule("POOLING.SAME_DIMENSION_COUNT", "InputTensor and OutputTensor have the same DimensionCount.", source="ns-directml-dml_average_pooling_operator_desc")
SAME_DATA_TYPE = rule("POOLING.SAME_DATA_TYPE", "InputTensor and OutputTensor have the same DataType.", source="ns-directml-dml_average_pooling_operator_desc")
ARRAY_LENGTH = rule("POOLING.ARRAY_LENGTH", "Strides, WindowSize, StartPadding, EndPadding (and Dilations) are present with DimensionCount entries.", source="ns-directml-dml_average_pooling_operator_desc")
STRIDE_ZERO = rule("POOLING.STRIDE_ZERO", "Every stride is at least 1.", source="output-size formula divides by Strides[i]")
WINDOW_ZERO = rule("POOLING.WINDOW_ZERO", "Every window size is at least 1.", source="an empty window has no average")
DILATION_ZERO = rule("POOLING.DILATION_ZERO", "Every dilation is at least 1.", source="ns-directml-dml_average_pooling1_operator_desc")
BATCH_CHANNELS = rule("POOLING.BATCH_AND_CHANNELS", "OutputTensor keeps the input's N and C: Sizes[0] and Sizes[1] are equal.", source="ns-directml-dml_average_pooling_operator_desc")
WINDOW_TOO_LARGE = rule("POOLING.WINDOW_LARGER_THAN_INPUT", "The dilated window fits the padded input: (w - 1) * d + 1 <= in + start + end.", source="onnxruntime InitializeKernelOutputDimensions; docs/deviations.md")
OUTPUT_SIZE = rule("POOLING.OUTPUT_SIZE", "Each output spatial size is (in + start + end - ((w - 1) * d + 1)) / s + 1, or one more where the ceil shape is allowed.", source="ns-directml-dml_average_pooling_operator_desc; docs/deviations.md")
OUTPUT_SIZE_UNDILATED = rule("POOLING.OUTPUT_SIZE_UNDILATED", "AVERAGE_POOLING1's output follows the dilated formula, not the doc snippet that ignores Dilations.", source="the DML_AVERAGE_POOLING1_OPERATOR_DESC page; docs/deviations.md")
CEIL_OUTPUT = rule("POOLING.CEIL_OUTPUT", "An output one larger than the floor size (ceil mode) is accepted; the last window overhangs the padded input and its divisor counts only taps inside it.", source="docs/deviations.md", severity=Severity.WARNING)
EMPTY_WINDOW = rule("POOLING.EMPTY_WINDOW", "With IncludePadding FALSE, no window lies wholly in padding (its average is 0/0 = NaN).", source="nGraph AvgPool; docs/deviations.md", severity=Severity.WARNING)

_ARRAYS = ("Strides", "WindowSize", "StartPadding", "EndPadding")


def _check_pooling(ctx: Checker, desc: AnyAveragePooling, path: str, buffers: dict[str, DML_BUFFER_TENSOR_DESC | None]) -> None:
    x, y = buffers["InputTensor"], buffers["OutputTensor"]
    if x is not None and y is not None:
        ctx.check(y.DataType == x.DataType, SAME_DATA_TYPE, f"{path}.OutputTensor.DataType", actual=y.DataType, expected=x.DataType, why="InputTensor.DataType")
        ctx.check(y.DimensionCount == x.DimensionCount, SAME_RANK, f"{path}.OutputTensor.DimensionCount", actual=y.DimensionCount, expected=x.DimensionCount, why="InputTensor.DimensionCount")
    rank = x.DimensionCount if x is not None else (y.DimensionCount if y is not None else None)
    count = desc.DimensionCount
    if rank is not None:
        ctx.check(count == rank - 2, DIMENSION_COUNT, f"{path}.DimensionCount", actual=count, expected=rank - 2, why=f"InputTensor.DimensionCount ({rank}) - 2")
    arrays_ok = _check_arrays(ctx, desc, path)
    if x is None or y is None or not arrays_ok or count != rank - 2 or y.DimensionCount != x.DimensionCount:
        return
    assert x.Sizes is not None and y.Sizes is not None
    for axis, name in ((0, "N"), (1, "C")):
        ctx.check(y.Sizes[axis] == x.Sizes[axis], BATCH_CHANNELS, f"{path}.OutputTensor.Sizes[{axis}]", actual=y.Sizes[axis], expected=x.Sizes[axis], why=f"InputTensor.Sizes[{axis}] ({name})")
    _check_output_sizes(ctx, desc, path, x.Sizes, y.Sizes)


def _check_arrays(ctx: Checker, desc: AnyAveragePooling, path: str) -> bool:
    count = desc.DimensionCount
    names = _ARRAYS + (("Dilations",) if isinstance(desc, DML_AVERAGE_POOLING1_OPERATOR_DESC) else ())
    ok = True
    for name in names:
        values = getattr(desc, name)
        if not ctx.check(values is not None and len(values) == count, ARRAY_LENGTH, f"{path}.{name}", actual=None if values is None else len(values), expected=count,
                         message=f"has {'no array (NULL)' if values is None else f'{len(values)} entr' + ('y' if len(values) == 1 else 'ies')}, expected DimensionCount = {count} entries"):  # fmt: skip
            ok = False
            continue
        zero_rule = {"Strides": STRIDE_ZERO, "WindowSize": WINDOW_ZERO, "Dilations": DILATION_ZERO}.get(name)
        for i, value in enumerate(values):
            if zero_rule is not None and not ctx.check(value >= 1, zero_rule, f"{path}.{name}[{i}]", actual=value, expected=">= 1", message="is 0, expected at least 1"):
                ok = False
    return ok


def _check_output_sizes(ctx: Checker, desc: AnyAveragePooling, path: str, x_sizes: Sequence[int], y_sizes: Sequence[int]) -> None:
    assert desc.Strides is not None and desc.WindowSize is not None and desc.StartPadding is not None and desc.EndPadding is not None
    dilations = dilations_of(desc)
    errors_before = len([f for f in ctx.findings if f.severity is Severity.ERROR])
    for i in range(desc.DimensionCount or 0):
        axis = i + 2
        size, w, s, sp, ep, d = x_sizes[axis], desc.WindowSize[i], desc.Strides[i], desc.StartPadding[i], desc.EndPadding[i], dilations[i]
        effective = (w - 1) * d + 1
        padded = size + sp + ep
        window_text = f"(({w} - 1) * {d} + 1)" if d != 1 else f"{w}"
        if not ctx.check(effective <= padded, WINDOW_TOO_LARGE, f"{path}.WindowSize[{i}]", actual=effective, expected=f"<= {padded}",
                         message=f"gives a window of {window_text + ' = ' if d != 1 else ''}{effective} taps, larger than the padded input {size} + {sp} + {ep} = {padded}"):  # fmt: skip
            continue
        floor_size = pooled_size(size, w, s, sp, ep, d)
        actual = y_sizes[axis]
        formula = f"({size} + {sp} + {ep} - {window_text}) / {s} + 1"
        field = f"{path}.OutputTensor.Sizes[{axis}]"
        if actual == floor_size:
            continue
        if actual == floor_size + 1 and ceil_shape_allowed(size, w, s, sp, ep, d):
            ctx.fail(CEIL_OUTPUT, field, actual=actual, expected=floor_size,
                     message=f"is {actual}, one more than the floor size {floor_size} = {formula}: ceil mode; the last window overhangs the padded input and its divisor counts only the taps inside it")  # fmt: skip
            continue
        undilated = pooled_size(size, w, s, sp, ep, 1)
        if d != 1 and actual in (undilated, undilated + 1):
            ctx.fail(OUTPUT_SIZE_UNDILATED, field, actual=actual, expected=floor_size,
                     message=f"is {actual}, which matches the doc formula without dilation ({size} + {sp} + {ep} - {w}) / {s} + 1 = {undilated}; with Dilations[{i}] = {d} the output size is {floor_size} = {formula}")  # fmt: skip
            continue
        ceil_note = f" (or {floor_size + 1} in ceil mode)" if ceil_shape_allowed(size, w, s, sp, ep, d) else ""
        ctx.fail(OUTPUT_SIZE, field, actual=actual, expected=floor_size, message=f"is {actual}, expected {floor_size} = {formula}{ceil_note}")
    sizes_ok = errors_before == len([f for f in ctx.findings if f.severity is Severity.ERROR])
    if sizes_ok and not desc.IncludePadding:
        _check_empty_windows(ctx, desc, path, x_sizes, y_sizes)


def taps_inside(out_index: int, size: int, window: int, stride: int, start: int, dilation: int, low: int, high: int) -> int:
    """How many taps of one output's window land in [low, high) along one dim.

    Tap k sits at ``first + k * dilation``; the taps inside are k = kmin..kmax, computed in
    closed form (a loop over k would take hours for a window of 2^32 - 1).
    """
    first = out_index * stride - start
    kmin = max(0, -((first - low) // dilation))  # ceil((low - first) / dilation)
    kmax = min(window - 1, (high - 1 - first) // dilation)
    return max(0, kmax - kmin + 1)


def _check_empty_windows(ctx: Checker, desc: AnyAveragePooling, path: str, x_sizes: Sequence[int], y_sizes: Sequence[int]) -> None:
    assert desc.Strides is not None and desc.WindowSize is not None and desc.StartPadding is not None
    dilations = dilations_of(desc)
    for i in range(desc.DimensionCount or 0):
        size, w, s, sp, d = x_sizes[i + 2], desc.WindowSize[i], desc.Strides[i], desc.StartPadding[i], dilations[i]
        empty = [o for o in range(y_sizes[i + 2]) if taps_inside(o, size, w, s, sp, d, 0, size) == 0]
        if empty:
            ctx.fail(EMPTY_WINDOW, f"{path}.OutputTensor.Sizes[{i + 2}]", actual=empty, expected="windows that touch the input",
                     message=f"output positions {fmt(empty[:8])}{' ...' if len(empty) > 8 else ''} along spatial dim {i} have windows wholly in padding; with IncludePadding FALSE their average is 0/0 = NaN")  # fmt: skip


# ---------------------------------------------------------------------------------------
# NumPy kernel: separable window sums, one spatial axis at a time, from prefix sums.
#
# A window's taps are a Cartesian product over the spatial axes, so the N-D window sum is the
# 1-D window sums applied axis after axis, and the divisor is the product of per-axis tap
# counts. Along one axis, the taps of output o are o*s - start + k*d for k in [0, w); the
# ones on the input are k = kmin..kmax (closed form), and their sum is a difference of
# prefix sums taken over the input's residue class mod d. Nothing the size of the padding or
# of the window is ever materialized: descs with 2^32 - 1 windows, paddings, strides or
# dilations run on tiny tensors in tiny memory (docs/deviations.md for the divisor).


def _tap_range(out: int, window: int, stride: int, start: int, dilation: int, low: int, high: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per output along one axis: the position of tap 0, and the first and last k whose tap lies in [low, high)."""
    first = np.arange(out, dtype=np.int64) * stride - start
    kmin = np.maximum(0, -((first - low) // dilation))  # ceil((low - first) / dilation)
    kmax = np.minimum(window - 1, (high - 1 - first) // dilation)
    return first, kmin, kmax


def _axis_window_sums(x: np.ndarray, axis: int, out: int, window: int, stride: int, start: int, dilation: int) -> np.ndarray:
    """Sums of the on-input taps of every output along ``axis`` (padding adds 0)."""
    n = x.shape[axis]
    moved = np.moveaxis(x, axis, -1)
    lead = moved.shape[:-1]
    step = min(dilation, n)  # with dilation >= n every residue class holds one element
    rows = -(-n // step)
    grid = np.zeros((*lead, rows * step))
    grid[..., :n] = moved
    # prefix[p] = x[p] + x[p - d] + x[p - 2d] + ...: running sums down each residue class
    prefix = np.cumsum(grid.reshape(*lead, rows, step), axis=-2).reshape(*lead, rows * step)
    first, kmin, kmax = _tap_range(out, window, stride, start, dilation, 0, n)
    empty = kmax < kmin
    last = np.where(empty, 0, first + kmax * dilation)
    before = first + (kmin - 1) * dilation  # the class element before the first tap on the input, if any
    subtract = before >= 0 if dilation < n else np.zeros(out, dtype=bool)
    sums = prefix[..., last] - np.where(subtract, prefix[..., np.clip(before, 0, n - 1)], 0.0)
    return np.moveaxis(np.where(empty, 0.0, sums), -1, axis)


def average_pooling_reference(desc: AnyAveragePooling, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    x = inputs["InputTensor"]
    assert x is not None and desc.OutputTensor is not None and desc.OutputTensor.Desc is not None
    assert desc.WindowSize is not None and desc.Strides is not None and desc.StartPadding is not None and desc.EndPadding is not None
    out_spatial = tuple(desc.OutputTensor.Desc.Sizes or ())[2:]
    sums = x.astype(np.float64)
    divisor = np.ones(out_spatial)
    axes = zip(out_spatial, desc.WindowSize, desc.Strides, desc.StartPadding, desc.EndPadding, dilations_of(desc), strict=True)
    for i, (out, w, s, sp, ep, d) in enumerate(axes):
        n = x.shape[2 + i]
        sums = _axis_window_sums(sums, 2 + i, out, w, s, sp, d)
        # divisor: taps inside the padded extent [-start, n + end) with IncludePadding, else taps on the input
        low, high = (-sp, n + ep) if desc.IncludePadding else (0, n)
        _, kmin, kmax = _tap_range(out, w, s, sp, d, low, high)
        shape = [1] * len(out_spatial)
        shape[i] = out
        divisor = divisor * np.maximum(0, kmax - kmin + 1).reshape(shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        return {"OutputTensor": sums / divisor}


for _type, _class in (
    (DML_OPERATOR_TYPE.AVERAGE_POOLING, DML_AVERAGE_POOLING_OPERATOR_DESC),
    (DML_OPERATOR_TYPE.AVERAGE_POOLING1, DML_AVERAGE_POOLING1_OPERATOR_DESC),
):
    register(OperatorSpec(_type, _class, OPERATORS[_type], _check_pooling, average_pooling_reference))

__all__ = [
    "DML_AVERAGE_POOLING1_OPERATOR_DESC",
    "DML_AVERAGE_POOLING_OPERATOR_DESC",
    "average_pooling_output_sizes",
    "average_pooling_reference",
    "ceil_shape_allowed",
    "pooled_size",
]
