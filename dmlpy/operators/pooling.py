"""Pooling: DML_AVERAGE_POOLING(1)_OPERATOR_DESC, DML_MAX_POOLING(1, 2)_OPERATOR_DESC and DML_LP_POOLING(1)_OPERATOR_DESC (see their sections below).

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

import numpy as np

from dmlpy.enums import DML_OPERATOR_TYPE, DML_TENSOR_DATA_TYPE
from dmlpy.errors import Severity, ints_argument
from dmlpy.operators import OperatorSpec, register
from dmlpy.operators.descs.pooling import (
    DML_AVERAGE_POOLING1_OPERATOR_DESC,
    DML_AVERAGE_POOLING_OPERATOR_DESC,
    DML_LP_POOLING1_OPERATOR_DESC,
    DML_LP_POOLING_OPERATOR_DESC,
    DML_MAX_POOLING1_OPERATOR_DESC,
    DML_MAX_POOLING2_OPERATOR_DESC,
    DML_MAX_POOLING_OPERATOR_DESC,
)
from dmlpy.rules import Checker, fmt, rule
from dmlpy.support import OPERATORS
from dmlpy.tensor import DML_BUFFER_TENSOR_DESC, numpy_dtype

AnyAveragePooling = DML_AVERAGE_POOLING_OPERATOR_DESC | DML_AVERAGE_POOLING1_OPERATOR_DESC
AnyMaxPooling = DML_MAX_POOLING_OPERATOR_DESC | DML_MAX_POOLING1_OPERATOR_DESC | DML_MAX_POOLING2_OPERATOR_DESC
AnyLpPooling = DML_LP_POOLING_OPERATOR_DESC | DML_LP_POOLING1_OPERATOR_DESC


def dilations_of(desc: AnyAveragePooling | AnyMaxPooling | AnyLpPooling) -> tuple[int, ...]:
    """AVERAGE_POOLING, LP_POOLING, MAX_POOLING and MAX_POOLING1 have no Dilations field: they behave as all ones."""
    dilations = getattr(desc, "Dilations", None)
    return tuple(dilations) if dilations is not None else (1,) * (desc.DimensionCount or 0)


# ---------------------------------------------------------------------------------------
# Output sizes


def pooled_size(size: int, window: int, stride: int, start: int, end: int, dilation: int = 1) -> int:
    """The floor output size of one spatial dim: ``(in + start + end - keff) / stride + 1``.

    Below 1 when the dilated window is longer than the padded input (no output exists).
    """
    if stride < 1:
        msg = f"pooled_size: stride is {stride}, expected at least 1"
        raise ValueError(msg)
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
    has no rounding flag, the output size alone says it). None or an empty sequence means
    DirectML's default (strides and dilations 1, padding 0). Raises ``TypeError`` or
    ``ValueError`` naming the argument when no output size exists.
    """
    name = "average_pooling_output_sizes"
    input_sizes = ints_argument(name, "input_sizes", input_sizes, minimum=1)
    spatial = len(input_sizes) - 2
    if spatial < 1:
        msg = f"{name}: input_sizes {input_sizes} has {len(input_sizes)} entries, expected at least 3 ({{N, C, spatial...}})"
        raise ValueError(msg)

    def per_axis(argument: str, values: Sequence[int] | None, default: int, minimum: int) -> tuple[int, ...]:
        if values is None or (isinstance(values, (list, tuple)) and not values):
            return (default,) * spatial
        return ints_argument(name, argument, values, length=spatial, minimum=minimum)

    window_size = ints_argument(name, "window_size", window_size, length=spatial, minimum=1)
    strides, dilations = per_axis("strides", strides, 1, 1), per_axis("dilations", dilations, 1, 1)
    start_padding, end_padding = per_axis("start_padding", start_padding, 0, 0), per_axis("end_padding", end_padding, 0, 0)
    out = list(input_sizes[:2])
    for i in range(spatial):
        args = (input_sizes[i + 2], window_size[i], strides[i], start_padding[i], end_padding[i], dilations[i])
        size = pooled_size(*args)
        if size < 1:
            msg = (f"{name}: window_size[{i}] = {window_size[i]} with dilation {dilations[i]} spans {(window_size[i] - 1) * dilations[i] + 1} taps, "
                   f"more than the padded input {input_sizes[i + 2]} + {start_padding[i]} + {end_padding[i]}")  # fmt: skip
            raise ValueError(msg)
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
    names = _ARRAYS + (("Dilations",) if isinstance(desc, DML_AVERAGE_POOLING1_OPERATOR_DESC | DML_LP_POOLING1_OPERATOR_DESC) else ())
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
                     message=f"is {actual}, one more than the floor size {floor_size} = {formula}: ceil mode; the last window overhangs the padded input and "
                             + ("its divisor counts only the taps inside it" if hasattr(desc, "IncludePadding") else "its taps past it add nothing to the sum"))  # fmt: skip
            continue
        undilated = pooled_size(size, w, s, sp, ep, 1)
        if d != 1 and actual in (undilated, undilated + 1):
            ctx.fail(OUTPUT_SIZE_UNDILATED, field, actual=actual, expected=floor_size,
                     message=f"is {actual}, which matches the doc formula without dilation ({size} + {sp} + {ep} - {w}) / {s} + 1 = {undilated}; with Dilations[{i}] = {d} the output size is {floor_size} = {formula}")  # fmt: skip
            continue
        ceil_note = f" (or {floor_size + 1} in ceil mode)" if ceil_shape_allowed(size, w, s, sp, ep, d) else ""
        ctx.fail(OUTPUT_SIZE, field, actual=actual, expected=floor_size, message=f"is {actual}, expected {floor_size} = {formula}{ceil_note}")
    sizes_ok = errors_before == len([f for f in ctx.findings if f.severity is Severity.ERROR])
    if sizes_ok and not getattr(desc, "IncludePadding", True):  # LP_POOLING's empty window is a norm of nothing: 0
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


# Which outputs along one spatial dim have no tap on the input, in closed form.
#
# Output o's taps sit at first + k * d for k in [0, w), with first = o * s - start; the input
# is [0, size). Let reach = (w - 1) * d. The window is empty exactly when one of these holds:
#   (a) first >= size: every tap lies past the input (o >= ceil((size + start) / s));
#   (b) first + reach < 0: every tap lies before it (o < ceil((start - reach) / s));
#   (c) otherwise (first < size and first + reach >= 0): first mod d >= size, with Python's
#       non-negative remainder. If first < 0, the first tap at or after 0 is k0 = ceil(-first / d),
#       which is <= w - 1 because first + reach >= 0, and it sits at first + k0 * d = first mod d;
#       the window is empty iff that tap is past the input. If 0 <= first < size, tap 0 is on the
#       input, and first mod d <= first < size, so the condition rightly says "not empty".
# (a) is a suffix of the outputs and (b) a prefix. (c) needs d > size: with d <= size a
# window that starts before the input and ends after it cannot step over it. So only with a
# dilation larger than the input can empty windows sit between non-empty ones, and then they
# are the o in the middle range whose (o * s - start) mod d >= size. The count of those is
# len - #{(v mod d) < size}, and [v mod d < size] = floor(v / d) - floor((v - size) / d) for
# 0 < size <= d, a sum over an arithmetic progression that _floor_sum takes in O(log d) steps.
# So counting the empty windows among the first n outputs costs O(log), whatever the sizes,
# and the first few are found by bisection on that count.


def _floor_sum(n: int, m: int, a: int, b: int) -> int:
    """``sum(floor((a * i + b) / m) for i in range(n))`` for n >= 0, m >= 1, a >= 0, in O(log m) steps.

    Reduce a and b below m (their quotients contribute in closed form); then the sum counts the
    lattice points under the line, which, read with the axes swapped, is the same kind of sum
    with (n, m, a, b) = ((a n + b) // m, a, m, (a n + b) % m): Euclid's algorithm on (m, a).
    """
    total = 0
    while n > 0:
        if a >= m:
            total += (a // m) * (n * (n - 1) // 2)
            a %= m
        if not 0 <= b < m:
            total += (b // m) * n
            b %= m
        top = a * n + b
        if top < m:
            break
        n, b, m, a = top // m, top % m, a, m
    return total


def empty_window_count(n: int, size: int, window: int, stride: int, start: int, dilation: int) -> int:
    """How many of the outputs 0 .. n - 1 along one dim have no tap on the input [0, size) (see the proof above)."""
    reach = (window - 1) * dilation
    before_end = min(n, max(0, -((reach - start) // stride)))  # case (b): o < ceil((start - reach) / s)
    after_start = max(0, -(-(size + start) // stride))  # case (a): o >= ceil((size + start) / s)
    count = before_end + max(0, n - after_start)
    middle = min(n, after_start) - before_end
    if dilation > size and middle > 0:  # case (c)
        base = before_end * stride - start
        under = _floor_sum(middle, dilation, stride, base) - _floor_sum(middle, dilation, stride, base - size)
        count += middle - under
    return count


def empty_window_positions(out: int, size: int, window: int, stride: int, start: int, dilation: int, limit: int) -> list[int]:
    """The first ``limit`` outputs (of ``out``) with no tap on the input: bisection on ``empty_window_count``."""
    total = empty_window_count(out, size, window, stride, start, dilation)
    positions = []
    for k in range(1, min(total, limit) + 1):
        low, high = positions[-1] + 1 if positions else 0, out - 1  # the k-th empty output lies in [low, high]
        while low < high:
            mid = (low + high) // 2
            if empty_window_count(mid + 1, size, window, stride, start, dilation) >= k:
                high = mid
            else:
                low = mid + 1
        positions.append(low)
    return positions


def _check_empty_windows(ctx: Checker, desc: AnyAveragePooling, path: str, x_sizes: Sequence[int], y_sizes: Sequence[int]) -> None:
    """A window is empty iff along some dim its taps all miss the input: one closed-form count per dim."""
    assert desc.Strides is not None and desc.WindowSize is not None and desc.StartPadding is not None
    dilations = dilations_of(desc)
    for i in range(desc.DimensionCount or 0):
        args = (x_sizes[i + 2], desc.WindowSize[i], desc.Strides[i], desc.StartPadding[i], dilations[i])
        count = empty_window_count(y_sizes[i + 2], *args)
        if count:
            first = empty_window_positions(y_sizes[i + 2], *args, limit=8)
            ctx.fail(EMPTY_WINDOW, f"{path}.OutputTensor.Sizes[{i + 2}]", actual=first, expected="windows that touch the input",
                     message=f"{count} output position{'s' * (count != 1)} {fmt(first)}{' ...' if count > len(first) else ''} along spatial dim {i} "
                             f"{'has a window' if count == 1 else 'have windows'} wholly in padding; with IncludePadding FALSE their average is 0/0 = NaN")  # fmt: skip


# ---------------------------------------------------------------------------------------
# NumPy kernel: separable window sums, one spatial axis at a time.
#
# A window's taps are a Cartesian product over the spatial axes, so the N-D window sum is the
# 1-D window sums applied axis after axis, and the divisor is the product of per-axis tap
# counts. Along one axis, the taps of output o are o*s - start + k*d for k in [0, w); the
# ones on the input are k = kmin..kmax (closed form). Each window is summed from its own taps
# only (never as a difference of running sums, where one inf or NaN, or a huge value, would
# reach every later window): the j-th on-input tap of every window is gathered at once, for j
# up to the most taps any window has on the input (at most the input's length). Nothing the
# size of the padding or of the window is ever materialized: descs with 2^32 - 1 windows,
# paddings, strides or dilations run on tiny tensors in tiny memory (docs/deviations.md for
# the divisor).


def _tap_range(out: int, window: int, stride: int, start: int, dilation: int, low: int, high: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per output along one axis: the position of tap 0, and the first and last k whose tap lies in [low, high)."""
    first = np.arange(out, dtype=np.int64) * stride - start
    kmin = np.maximum(0, -((first - low) // dilation))  # ceil((low - first) / dilation)
    kmax = np.minimum(window - 1, (high - 1 - first) // dilation)
    return first, kmin, kmax


def _axis_window_sums(x: np.ndarray, axis: int, out: int, window: int, stride: int, start: int, dilation: int) -> np.ndarray:
    """Sums of the on-input taps of every output along ``axis`` (padding adds nothing)."""
    n = x.shape[axis]
    moved = np.moveaxis(x, axis, -1)
    first, kmin, kmax = _tap_range(out, window, stride, start, dilation, 0, n)
    count = np.maximum(0, kmax - kmin + 1)
    origin = first + kmin * dilation  # the first on-input tap (meaningless where count is 0)
    sums = np.zeros((*moved.shape[:-1], out))
    for j in range(int(count.max(initial=0))):
        taken = j < count
        position = np.where(taken, origin + j * dilation, 0)
        # where, not a product with the mask: a tap outside the window adds nothing, not 0 * inf
        sums += np.where(taken, moved[..., position], 0.0)
    return np.moveaxis(sums, -1, axis)


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
    register(OperatorSpec(_type, _class, OPERATORS[_type], _check_pooling, average_pooling_reference, native=True))

# ---------------------------------------------------------------------------------------
# Max pooling: the same windows as average pooling (MAX_POOLING2's page gives the formula without
# its Dilations, as AVERAGE_POOLING1's does; dmlpy uses the dilated window for both). The generic
# rules already report the array lengths (FIELD.ARRAY_LENGTH) and the page's DataType and
# DimensionCount constraints (TENSOR.SAME_*); the support tables the index types per level.

MAX_PAGE = "ns-directml-dml_max_pooling2_operator_desc"
MAX_DIMENSION_COUNT = rule("MAX_POOLING.DIMENSION_COUNT", "DimensionCount equals InputTensor's DimensionCount - 2 (2 for 4-D, 3 for 5-D).", source=MAX_PAGE)
MAX_ZERO = rule("MAX_POOLING.ZERO", "Every stride, window size and dilation is at least 1.", source="the output-size formula divides by Strides[i]; an empty window has no maximum")
MAX_BATCH_CHANNELS = rule("MAX_POOLING.BATCH_AND_CHANNELS", "OutputTensor keeps the input's N and C: Sizes[0] and Sizes[1] are equal.", source=MAX_PAGE)
MAX_WINDOW_TOO_LARGE = rule("MAX_POOLING.WINDOW_LARGER_THAN_INPUT", "The dilated window fits the padded input: (w - 1) * d + 1 <= in + start + end.", source="onnxruntime InitializeKernelOutputDimensions; docs/deviations.md")
MAX_OUTPUT_SIZE = rule("MAX_POOLING.OUTPUT_SIZE", "Each output spatial size is (in + start + end - ((w - 1) * d + 1)) / s + 1, or one more where the ceil shape is allowed.", source=f"{MAX_PAGE}; docs/deviations.md")
MAX_EMPTY_WINDOW = rule("MAX_POOLING.EMPTY_WINDOW", "No window lies wholly in padding (its maximum is over no element: the type's lowest value, index all ones).", source="docs/deviations.md", severity=Severity.WARNING)
MAX_INDICES_SIZES = rule("MAX_POOLING.INDICES_SIZES", "OutputIndicesTensor, when given, has OutputTensor's Sizes.", source=MAX_PAGE)


def _check_max_pooling(ctx: Checker, desc: AnyMaxPooling, path: str, buffers: dict[str, DML_BUFFER_TENSOR_DESC | None]) -> None:
    x, y, indices = buffers["InputTensor"], buffers["OutputTensor"], buffers.get("OutputIndicesTensor")
    if x is None or y is None or x.DimensionCount != y.DimensionCount:
        return
    assert x.Sizes is not None and y.Sizes is not None
    rank, count = x.DimensionCount, desc.DimensionCount
    if indices is not None and indices.DimensionCount == rank:
        ctx.check(tuple(indices.Sizes or ()) == tuple(y.Sizes), MAX_INDICES_SIZES, f"{path}.OutputIndicesTensor.Sizes", actual=tuple(indices.Sizes or ()), expected=tuple(y.Sizes), why="OutputTensor.Sizes")
    for axis, name in ((0, "N"), (1, "C")):
        ctx.check(y.Sizes[axis] == x.Sizes[axis], MAX_BATCH_CHANNELS, f"{path}.OutputTensor.Sizes[{axis}]", actual=y.Sizes[axis], expected=x.Sizes[axis], why=f"InputTensor.Sizes[{axis}] ({name})")
    if not ctx.check(count == rank - 2, MAX_DIMENSION_COUNT, f"{path}.DimensionCount", actual=count, expected=rank - 2, why=f"InputTensor.DimensionCount ({rank}) - 2"):
        return
    names = ("Strides", "WindowSize", "StartPadding", "EndPadding") + (("Dilations",) if isinstance(desc, DML_MAX_POOLING2_OPERATOR_DESC) else ())
    arrays = {name: getattr(desc, name) for name in names}
    if any(values is None or len(values) != count for values in arrays.values()):
        return  # FIELD.ARRAY_LENGTH / FIELD.REQUIRED
    positive = [ctx.check(v >= 1, MAX_ZERO, f"{path}.{name}[{i}]", actual=v, expected=">= 1", message="is 0, expected at least 1")
                for name in ("Strides", "WindowSize", "Dilations") if name in arrays for i, v in enumerate(arrays[name])]  # fmt: skip
    if not all(positive):
        return
    dilations = dilations_of(desc)
    errors_before = len([f for f in ctx.findings if f.severity is Severity.ERROR])
    for i in range(count):
        axis = i + 2
        size, w, s, sp, ep, d = x.Sizes[axis], desc.WindowSize[i], desc.Strides[i], desc.StartPadding[i], desc.EndPadding[i], dilations[i]
        effective, padded = (w - 1) * d + 1, size + sp + ep
        window_text = f"(({w} - 1) * {d} + 1)" if d != 1 else f"{w}"
        if not ctx.check(effective <= padded, MAX_WINDOW_TOO_LARGE, f"{path}.WindowSize[{i}]", actual=effective, expected=f"<= {padded}",
                         message=f"gives a window of {effective} taps, larger than the padded input {size} + {sp} + {ep} = {padded}"):  # fmt: skip
            continue
        floor_size = pooled_size(size, w, s, sp, ep, d)
        ceil_ok = ceil_shape_allowed(size, w, s, sp, ep, d)
        actual = y.Sizes[axis]
        if actual == floor_size or (actual == floor_size + 1 and ceil_ok):
            continue
        ceil_note = f" (or {floor_size + 1} in ceil mode)" if ceil_ok else ""
        dilation_note = f"; the page's snippet without Dilations would give {pooled_size(size, w, s, sp, ep)}, but Dilations[{i}] = {d} widens the window" if d != 1 else ""
        ctx.fail(MAX_OUTPUT_SIZE, f"{path}.OutputTensor.Sizes[{axis}]", actual=actual, expected=floor_size,
                 message=f"is {actual}, expected {floor_size} = ({size} + {sp} + {ep} - {window_text}) / {s} + 1{ceil_note}{dilation_note}")  # fmt: skip
    if errors_before == len([f for f in ctx.findings if f.severity is Severity.ERROR]):
        _check_max_empty_windows(ctx, desc, path, x.Sizes, y.Sizes)


def _check_max_empty_windows(ctx: Checker, desc: AnyMaxPooling, path: str, x_sizes: Sequence[int], y_sizes: Sequence[int]) -> None:
    """A window with no tap on the input (wholly in padding): the closed-form count of average pooling, per dim."""
    assert desc.Strides is not None and desc.WindowSize is not None and desc.StartPadding is not None
    dilations = dilations_of(desc)
    for i in range(desc.DimensionCount or 0):
        args = (x_sizes[i + 2], desc.WindowSize[i], desc.Strides[i], desc.StartPadding[i], dilations[i])
        count = empty_window_count(y_sizes[i + 2], *args)
        if count:
            first = empty_window_positions(y_sizes[i + 2], *args, limit=8)
            ctx.fail(MAX_EMPTY_WINDOW, f"{path}.OutputTensor.Sizes[{i + 2}]", actual=first, expected="windows that touch the input",
                     message=f"{count} output position{'s' * (count != 1)} {fmt(first)}{' ...' if count > len(first) else ''} along spatial dim {i} "
                             f"{'has a window' if count == 1 else 'have windows'} wholly in padding; their maximum is over no element: "
                             "the type's lowest value (-inf for floats), index all ones")  # fmt: skip


# ---------------------------------------------------------------------------------------
# Max pooling's NumPy kernel: gather every window's taps on the input, then take the first maximum.
#
# Along one spatial axis the taps of output o sit at o*s - start + k*d for k in [0, w); the ones on
# the input are k = kmin..kmax (closed form, _tap_range). Gathering the j-th on-input tap of every
# window (j below the most any window has, at most the input's length) gives, per axis, a
# (outputs, taps) table of positions and a validity mask; indexing the input with those tables on
# every spatial axis at once gives each window's taps in row-major window order (k increasing on
# each axis), so "the first value encountered" is the first hit along the flattened tap axis.
# Padding is never gathered, so it never wins; nothing the size of the padding, the window, the
# stride or the dilation is materialized. The indices gather np.arange over the input's logical
# shape the same way: "the input tensor as a contiguous one-dimensional array", whatever its
# Strides. NaN: a number beats a NaN (maxNum, as HLSL's max and dmlpy's ELEMENT_WISE_MAX); a
# window whose taps are all NaN gives NaN at its first tap (docs/deviations.md).

ALL_ONES_INDEX = -1  # an empty window's index, stored as the unsigned all-ones value (docs/deviations.md)


def _gather_windows(x: np.ndarray, out_spatial: Sequence[int], desc: AnyMaxPooling) -> tuple[np.ndarray, np.ndarray]:
    """Every window's on-input taps, ``(N, C, *out, taps)``, and which of them are real taps."""
    assert desc.WindowSize is not None and desc.Strides is not None and desc.StartPadding is not None
    spatial = len(out_spatial)
    positions, masks = [], []
    axes = zip(out_spatial, desc.WindowSize, desc.Strides, desc.StartPadding, dilations_of(desc), strict=True)
    for i, (out, w, s, sp, d) in enumerate(axes):
        first, kmin, kmax = _tap_range(out, w, s, sp, d, 0, x.shape[2 + i])
        count = np.maximum(0, kmax - kmin + 1)
        j = np.arange(max(1, int(count.max(initial=0))))
        taken = j[None, :] < count[:, None]
        shape = [1] * (2 * spatial)
        shape[2 * i : 2 * i + 2] = taken.shape
        positions.append(np.where(taken, (first + kmin * d)[:, None] + j[None, :] * d, 0).reshape(shape))
        masks.append(taken.reshape(shape))
    order = [0, 1, *range(2, 2 + 2 * spatial, 2), *range(3, 3 + 2 * spatial, 2)]  # N, C, outputs..., taps...
    gathered = x[(slice(None), slice(None), *positions)].transpose(order)
    valid = np.logical_and.reduce(np.broadcast_arrays(*masks)).transpose([o - 2 for o in order[2:]])
    return gathered.reshape(*gathered.shape[: 2 + spatial], -1), valid.reshape(*valid.shape[:spatial], -1)


def max_pooling_reference(desc: AnyMaxPooling, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    x = inputs["InputTensor"]
    assert x is not None and desc.OutputTensor is not None and desc.OutputTensor.Desc is not None
    out_spatial = tuple(desc.OutputTensor.Desc.Sizes or ())[2:]
    values, valid = _gather_windows(x, out_spatial, desc)
    valid = np.broadcast_to(valid, values.shape)
    floating = x.dtype.kind == "f"
    lowest = x.dtype.type(-np.inf) if floating else np.iinfo(x.dtype).min
    number = valid & ~np.isnan(values) if floating else valid
    best = np.where(number, values, lowest).max(axis=-1, keepdims=True)
    # the first hit; a window of NaNs only has none, and argmax gives its first tap (a NaN: the
    # gathered taps fill each axis from j = 0, so a window's first tap is always on the input)
    first = (number & (values == best)).argmax(axis=-1)[..., None]
    empty = ~valid.any(axis=-1)
    y = np.where(empty, lowest, np.take_along_axis(values, first, axis=-1)[..., 0])
    results = {"OutputTensor": y.astype(x.dtype)}
    indices_desc = getattr(desc, "OutputIndicesTensor", None)
    if indices_desc is not None:
        indices, _ = _gather_windows(np.arange(x.size, dtype=np.int64).reshape(x.shape), out_spatial, desc)
        index = np.where(empty, ALL_ONES_INDEX, np.take_along_axis(indices, first, axis=-1)[..., 0])
        results["OutputIndicesTensor"] = index.astype(numpy_dtype(indices_desc.Desc.DataType))
    return results


def _floating_max_pooling(desc: AnyMaxPooling) -> bool:
    """The C kernel (max_pooling.c) takes FLOAT32 and FLOAT16; the integer types run on the NumPy kernel."""
    return desc.InputTensor.Desc.DataType in (DML_TENSOR_DATA_TYPE.FLOAT32, DML_TENSOR_DATA_TYPE.FLOAT16)


for _type, _class in (
    (DML_OPERATOR_TYPE.MAX_POOLING, DML_MAX_POOLING_OPERATOR_DESC),
    (DML_OPERATOR_TYPE.MAX_POOLING1, DML_MAX_POOLING1_OPERATOR_DESC),
    (DML_OPERATOR_TYPE.MAX_POOLING2, DML_MAX_POOLING2_OPERATOR_DESC),
):
    register(OperatorSpec(_type, _class, OPERATORS[_type], _check_max_pooling, max_pooling_reference, native=True, native_covers=_floating_max_pooling,
                          generic_rules=True))  # fmt: skip


# ---------------------------------------------------------------------------------------
# Lp pooling (the DML_LP_POOLING_OPERATOR_DESC and DML_LP_POOLING1_OPERATOR_DESC pages): each
# output is ``(sum |x|^P over the window's taps) ^ (1 / P)``. The windows, paddings, output sizes
# (the ceil shape included) and rules are average pooling's (POOLING.*; LP_POOLING1's page gives the
# output size without its Dilations, as AVERAGE_POOLING1's does, so POOLING.OUTPUT_SIZE_UNDILATED
# names both). Padding and a ceil-mode overhang add nothing to the sum (|0|^P = 0), so a window
# wholly in padding gives 0 and needs no warning. P = 0 has no 1 / P: an error (LP_POOLING.P).

LP_P = rule("LP_POOLING.P", "P is at least 1: the output is the P-th root of the sum of |x|^P.", source="ns-directml-dml_lp_pooling_operator_desc")


def _check_lp_pooling(ctx: Checker, desc: AnyLpPooling, path: str, buffers: dict[str, DML_BUFFER_TENSOR_DESC | None]) -> None:
    ctx.check(desc.P >= 1, LP_P, f"{path}.P", actual=desc.P, expected=">= 1", message=f"is {desc.P}, expected at least 1 (the output is the P-th root of a sum)")
    _check_pooling(ctx, desc, path, buffers)  # type: ignore[arg-type]


def lp_pooling_reference(desc: AnyLpPooling, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    x = inputs["InputTensor"]
    assert x is not None and desc.OutputTensor is not None and desc.OutputTensor.Desc is not None
    assert desc.WindowSize is not None and desc.Strides is not None and desc.StartPadding is not None
    out_spatial = tuple(desc.OutputTensor.Desc.Sizes or ())[2:]
    p = float(desc.P)
    with np.errstate(over="ignore", invalid="ignore"):
        sums = np.abs(x.astype(np.float64)) ** p
        axes = zip(out_spatial, desc.WindowSize, desc.Strides, desc.StartPadding, dilations_of(desc), strict=True)
        for i, (out, w, s, sp, d) in enumerate(axes):
            sums = _axis_window_sums(sums, 2 + i, out, w, s, sp, d)
        return {"OutputTensor": sums ** (1.0 / p)}


for _type, _class in (
    (DML_OPERATOR_TYPE.LP_POOLING, DML_LP_POOLING_OPERATOR_DESC),
    (DML_OPERATOR_TYPE.LP_POOLING1, DML_LP_POOLING1_OPERATOR_DESC),
):
    register(OperatorSpec(_type, _class, OPERATORS[_type], _check_lp_pooling, lp_pooling_reference, native=False))

__all__ = [
    "DML_AVERAGE_POOLING1_OPERATOR_DESC",
    "DML_AVERAGE_POOLING_OPERATOR_DESC",
    "DML_LP_POOLING1_OPERATOR_DESC",
    "DML_LP_POOLING_OPERATOR_DESC",
    "DML_MAX_POOLING1_OPERATOR_DESC",
    "DML_MAX_POOLING2_OPERATOR_DESC",
    "DML_MAX_POOLING_OPERATOR_DESC",
    "average_pooling_output_sizes",
    "average_pooling_reference",
    "ceil_shape_allowed",
    "lp_pooling_reference",
    "max_pooling_reference",
    "pooled_size",
]
