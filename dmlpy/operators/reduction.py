"""Reductions: DML_REDUCE_OPERATOR_DESC, DML_ARGMIN_OPERATOR_DESC, DML_ARGMAX_OPERATOR_DESC, and top-k.

Facts: the DML_REDUCE_OPERATOR_DESC page (Axes in ``[0, InputTensor.DimensionCount - 1]``; the
output keeps the rank, with size 1 on the reduced axes; the same DataType except for ARGMIN and
ARGMAX, whose output types the per-function support tables give), the ARGMIN and ARGMAX pages
(the same sizes rule, stated in their remarks), and the TOP_K and TOP_K1 pages (both outputs
have the input's sizes with ``K`` on ``Axis``; ties in index order), and the CUMULATIVE_SUMMATION and
CUMULATIVE_PRODUCT pages (``Axis`` below the DimensionCount; the output has the input's sizes and
type). Decisions (docs/deviations.md): a repeated axis is a warning, the pages being silent about
it; top-k's ``K`` may equal the axis size; top-k orders NaN above every number.

REDUCE (every DML_REDUCE_FUNCTION), ARGMIN and ARGMAX have a NumPy kernel and a C kernel
(dmlpy/native/reduction.c: exact for integers, MIN, MAX, ARGMIN and ARGMAX, its float sums within
the bound docs/deviations.md states); TOP_K, TOP_K1, CUMULATIVE_SUMMATION and CUMULATIVE_PRODUCT
have a NumPy kernel (the native backend runs it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dmlpy.enums import DML_AXIS_DIRECTION, DML_OPERATOR_TYPE, DML_REDUCE_FUNCTION
from dmlpy.errors import Severity
from dmlpy.operators import OperatorSpec, register
from dmlpy.operators.descs import OPERATORS as DESCS
from dmlpy.operators.descs.reduction import (
    DML_ARGMAX_OPERATOR_DESC,
    DML_ARGMIN_OPERATOR_DESC,
    DML_CUMULATIVE_PRODUCT_OPERATOR_DESC,
    DML_CUMULATIVE_SUMMATION_OPERATOR_DESC,
    DML_REDUCE_OPERATOR_DESC,
    DML_TOP_K1_OPERATOR_DESC,
    DML_TOP_K_OPERATOR_DESC,
)
from dmlpy.rules import Checker, fmt, rule
from dmlpy.support import OPERATORS
from dmlpy.tensor import DML_BUFFER_TENSOR_DESC, numpy_dtype

REDUCE_PAGE = "ns-directml-dml_reduce_operator_desc"
AXIS_RANGE = rule("REDUCE.AXIS_RANGE", "Every entry of Axes is in [0, InputTensor.DimensionCount - 1].", source=REDUCE_PAGE)
AXIS_DUPLICATE = rule("REDUCE.AXIS_DUPLICATE", "No axis appears twice in Axes (the pages are silent; a repeated axis reduces once).", source="docs/deviations.md", severity=Severity.WARNING)
SAME_DIMENSION_COUNT = rule("REDUCE.SAME_DIMENSION_COUNT", "OutputTensor.DimensionCount equals InputTensor.DimensionCount: the rank is preserved.", source=REDUCE_PAGE)
OUTPUT_SIZE = rule("REDUCE.OUTPUT_SIZE", "OutputTensor.Sizes equal InputTensor.Sizes, except 1 on every reduced axis.", source=REDUCE_PAGE)
SAME_DATA_TYPE = rule("REDUCE.SAME_DATA_TYPE", "OutputTensor.DataType equals InputTensor.DataType, except for the ARGMIN and ARGMAX functions.", source=REDUCE_PAGE)

TOP_K_PAGE = "ns-directml-dml_top_k1_operator_desc"
TOP_K_AXIS_RANGE = rule("TOP_K.AXIS_RANGE", "Axis is in [0, InputTensor.DimensionCount - 1].", source=TOP_K_PAGE)
TOP_K_K_RANGE = rule("TOP_K.K_RANGE", "K is in [1, InputTensor.Sizes[Axis]] (the page says below the size; K equal to it is accepted, docs/deviations.md).", source=TOP_K_PAGE)
CUMULATIVE_AXIS_RANGE = rule("CUMULATIVE.AXIS_RANGE", "Axis is in [0, InputTensor.DimensionCount - 1].", source="ns-directml-dml_cumulative_summation_operator_desc; ns-directml-dml_cumulative_product_operator_desc")
TOP_K_OUTPUT_SIZE = rule("TOP_K.OUTPUT_SIZE", "OutputValueTensor and OutputIndexTensor have InputTensor's Sizes with K on Axis.", source=TOP_K_PAGE)

AnyReduce = DML_REDUCE_OPERATOR_DESC | DML_ARGMIN_OPERATOR_DESC | DML_ARGMAX_OPERATOR_DESC
ARG_FUNCTIONS = (DML_REDUCE_FUNCTION.ARGMIN, DML_REDUCE_FUNCTION.ARGMAX)


def _check_axes(ctx: Checker, axes: Sequence[int], rank: int, path: str) -> bool:
    in_range = [ctx.check(0 <= a < rank, AXIS_RANGE, f"{path}.Axes[{i}]", actual=a, expected=f"0..{rank - 1}",
                          message=f"is {a}, expected an axis in [0, InputTensor.DimensionCount - 1] = [0, {rank - 1}]")  # fmt: skip
                for i, a in enumerate(axes)]  # fmt: skip
    for i, a in enumerate(axes):
        first = list(axes).index(a)
        ctx.check(first == i, AXIS_DUPLICATE, f"{path}.Axes[{i}]", actual=a, expected="an axis not listed before",
                  message=f"is {a}, already Axes[{first}]")  # fmt: skip
    return all(in_range)


def _check_reduce(ctx: Checker, desc: AnyReduce, path: str, buffers: dict[str, DML_BUFFER_TENSOR_DESC | None]) -> None:
    x, y = buffers["InputTensor"], buffers["OutputTensor"]
    if x is None or y is None:
        return
    function = getattr(desc, "Function", None)
    if isinstance(desc, DML_REDUCE_OPERATOR_DESC):
        if isinstance(function, DML_REDUCE_FUNCTION) and function not in ARG_FUNCTIONS:
            ctx.check(y.DataType == x.DataType, SAME_DATA_TYPE, f"{path}.OutputTensor.DataType", actual=y.DataType, expected=x.DataType,
                      why=f"InputTensor.DataType (Function {fmt(function)})")  # fmt: skip
        if not ctx.check(y.DimensionCount == x.DimensionCount, SAME_DIMENSION_COUNT, f"{path}.OutputTensor.DimensionCount", actual=y.DimensionCount, expected=x.DimensionCount, why="InputTensor.DimensionCount"):
            return
    axes = desc.Axes
    rank = x.DimensionCount
    if axes is None or len(axes) != desc.AxisCount or rank is None or y.DimensionCount != rank:
        return  # FIELD.ARRAY_LENGTH, FIELD.REQUIRED or TENSOR.SAME_DIMENSION_COUNT already say it
    if not _check_axes(ctx, axes, rank, path):
        return
    assert x.Sizes is not None and y.Sizes is not None
    for axis, (size, actual) in enumerate(zip(x.Sizes, y.Sizes, strict=True)):
        reduced = axis in axes
        expected = 1 if reduced else size
        ctx.check(actual == expected, OUTPUT_SIZE, f"{path}.OutputTensor.Sizes[{axis}]", actual=actual, expected=expected,
                  why="1 (a reduced axis)" if reduced else f"InputTensor.Sizes[{axis}] (not in Axes {fmt(list(axes))})")  # fmt: skip


def _check_top_k(ctx: Checker, desc: DML_TOP_K_OPERATOR_DESC | DML_TOP_K1_OPERATOR_DESC, path: str, buffers: dict[str, DML_BUFFER_TENSOR_DESC | None]) -> None:
    x = buffers["InputTensor"]
    if x is None or x.Sizes is None:
        return
    rank, axis, k = len(x.Sizes), desc.Axis, desc.K
    if not ctx.check(0 <= axis < rank, TOP_K_AXIS_RANGE, f"{path}.Axis", actual=axis, expected=f"0..{rank - 1}",
                     message=f"is {axis}, expected an axis in [0, InputTensor.DimensionCount - 1] = [0, {rank - 1}]"):  # fmt: skip
        return
    ctx.check(1 <= k <= x.Sizes[axis], TOP_K_K_RANGE, f"{path}.K", actual=k, expected=f"1..{x.Sizes[axis]}",
              message=f"is {k}, expected 1 to InputTensor.Sizes[{axis}] = {x.Sizes[axis]} elements to select")  # fmt: skip
    expected = tuple(k if i == axis else size for i, size in enumerate(x.Sizes))
    for name in ("OutputValueTensor", "OutputIndexTensor"):
        y: Any = buffers[name]
        if y is None or y.DimensionCount != rank:
            continue  # TENSOR.SAME_DIMENSION_COUNT
        for i, (actual, wanted) in enumerate(zip(y.Sizes, expected, strict=True)):
            ctx.check(actual == wanted, TOP_K_OUTPUT_SIZE, f"{path}.{name}.Sizes[{i}]", actual=actual, expected=wanted,
                      why=f"K (Axis = {axis})" if i == axis else f"InputTensor.Sizes[{i}]")  # fmt: skip


def _check_cumulative(ctx: Checker, desc: DML_CUMULATIVE_SUMMATION_OPERATOR_DESC | DML_CUMULATIVE_PRODUCT_OPERATOR_DESC, path: str, buffers: dict[str, DML_BUFFER_TENSOR_DESC | None]) -> None:
    x = buffers["InputTensor"]
    if x is None or x.Sizes is None:
        return
    rank, axis = len(x.Sizes), desc.Axis
    ctx.check(0 <= axis < rank, CUMULATIVE_AXIS_RANGE, f"{path}.Axis", actual=axis, expected=f"0..{rank - 1}",
              message=f"is {axis}, expected an axis in [0, InputTensor.DimensionCount - 1] = [0, {rank - 1}]")  # fmt: skip


# ---------------------------------------------------------------------------------------
# NumPy kernels. The reduced axes (in the input's dimension order, a repeated one once) move to the
# end and flatten into one: each output element reduces one row of that table, and a position in
# the row is the index ARGMIN and ARGMAX report ("with respect to the provided input axes": row-major
# over the reduced axes, the ARGMAX page's example 3 gives 7 for the element at {2, 1} of a {3, 3}
# input). The result is reshaped to OutputTensor's Sizes (1 on every reduced axis).
#
# Working types: FLOAT32 computes in float64 and FLOAT16 in float32, each result rounded once to
# the output type; integers (SUM, MULTIPLY, L1, SUM_SQUARE, MIN, MAX) compute in their own type and
# wrap as two's complement does. MIN and MAX (and ARGMIN and ARGMAX) let a number beat a NaN
# (IEEE 754 minNum/maxNum, as HLSL's min/max and dmlpy's ELEMENT_WISE_MIN/MAX); a row of NaNs gives
# NaN (at its first, or with DECREASING its last, position). MIN and MAX are the element at ARGMIN's
# and ARGMAX's first position, so a zero result has the sign of the row's first zero (np.fmax.reduce's
# choice between -0 and +0 depends on its SIMD order). LOG_SUM_EXP is max + log(sum(exp(x - max))),
# the documented log(exp(x1) + ... + exp(xn)) without the overflow of its intermediate sum
# (docs/deviations.md).


def _rows(x: np.ndarray, axes: Sequence[int]) -> np.ndarray:
    """``x`` with the reduced axes moved last, in dimension order, and flattened into one."""
    reduced = sorted(set(axes))
    kept = [a for a in range(x.ndim) if a not in reduced]
    moved = x.transpose(kept + reduced)
    return moved.reshape(*moved.shape[: len(kept)], -1)


def _work(x: np.ndarray) -> np.ndarray:
    """Floats in their working type (float64 for FLOAT32, float32 for FLOAT16); integers as they are."""
    if x.dtype.kind != "f":
        return x
    return x.astype(np.float32 if x.dtype == np.float16 else np.float64)


def _log_sum_exp(rows: np.ndarray) -> np.ndarray:
    top = rows.max(axis=-1, keepdims=True)
    shift = np.where(np.isfinite(top), top, 0)  # a row holding +inf or only -inf: the plain formula is exact
    return (np.log(np.exp(rows - shift).sum(axis=-1, keepdims=True)) + shift)[..., 0]


def _extreme(rows: np.ndarray, largest: bool) -> np.ndarray:
    return (np.fmax if largest else np.fmin).reduce(rows, axis=-1)


def _extreme_element(rows: np.ndarray, largest: bool) -> np.ndarray:
    """The row's first largest (smallest) element: its value, and for a zero its sign."""
    return np.take_along_axis(rows, arg_extreme(rows, largest, last=False)[..., None], axis=-1)[..., 0]


REDUCTIONS: dict[DML_REDUCE_FUNCTION, Any] = {
    DML_REDUCE_FUNCTION.SUM: lambda r: r.sum(axis=-1, dtype=r.dtype),
    DML_REDUCE_FUNCTION.MULTIPLY: lambda r: r.prod(axis=-1, dtype=r.dtype),
    DML_REDUCE_FUNCTION.AVERAGE: lambda r: r.sum(axis=-1) / r.shape[-1],
    DML_REDUCE_FUNCTION.L1: lambda r: np.abs(r).sum(axis=-1, dtype=r.dtype),
    DML_REDUCE_FUNCTION.L2: lambda r: np.sqrt(np.square(r).sum(axis=-1)),
    DML_REDUCE_FUNCTION.SUM_SQUARE: lambda r: np.square(r).sum(axis=-1, dtype=r.dtype),
    DML_REDUCE_FUNCTION.LOG_SUM: lambda r: np.log(r.sum(axis=-1)),
    DML_REDUCE_FUNCTION.LOG_SUM_EXP: _log_sum_exp,
    DML_REDUCE_FUNCTION.MAX: lambda r: _extreme_element(r, largest=True),
    DML_REDUCE_FUNCTION.MIN: lambda r: _extreme_element(r, largest=False),
}


def arg_extreme(rows: np.ndarray, largest: bool, last: bool) -> np.ndarray:
    """Per row, the position of its first (``last``: last) largest or smallest element; a number beats a NaN."""
    if rows.dtype.kind == "f":
        best = _extreme(rows, largest)[..., None]
        hit = (rows == best) | (np.isnan(rows) & np.isnan(best))  # a row of NaNs only: its NaNs
    else:
        hit = rows == (rows.max if largest else rows.min)(axis=-1, keepdims=True)
    if last:
        return rows.shape[-1] - 1 - hit[..., ::-1].argmax(axis=-1)
    return hit.argmax(axis=-1)


def reduce_reference(desc: AnyReduce, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    """REDUCE (every DML_REDUCE_FUNCTION), ARGMIN and ARGMAX."""
    x = inputs["InputTensor"]
    assert x is not None and desc.OutputTensor is not None and desc.OutputTensor.Desc is not None
    out = desc.OutputTensor.Desc
    rows = _rows(_work(x), desc.Axes or ())
    if isinstance(desc, DML_REDUCE_OPERATOR_DESC) and desc.Function not in ARG_FUNCTIONS:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
            y = REDUCTIONS[DML_REDUCE_FUNCTION(desc.Function)](rows)
    else:
        if isinstance(desc, DML_REDUCE_OPERATOR_DESC):  # the ARGMAX page: REDUCE's ARGMAX is INCREASING
            largest, last = desc.Function == DML_REDUCE_FUNCTION.ARGMAX, False
        else:
            largest, last = isinstance(desc, DML_ARGMAX_OPERATOR_DESC), desc.AxisDirection == DML_AXIS_DIRECTION.DECREASING
        y = arg_extreme(rows, largest, last)
    with np.errstate(over="ignore", invalid="ignore"):
        return {"OutputTensor": np.asarray(y).astype(numpy_dtype(out.DataType)).reshape(tuple(out.Sizes or ()))}


def top_k_reference(desc: DML_TOP_K_OPERATOR_DESC | DML_TOP_K1_OPERATOR_DESC, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    """The K largest (TOP_K, TOP_K1 DECREASING) or smallest (TOP_K1 INCREASING) elements along Axis, sorted
    that way, equal values in increasing index order (the pages). NaN sorts above every number
    (docs/deviations.md); -0 and +0 are equal, so they keep their index order."""
    x = inputs["InputTensor"]
    assert x is not None and desc.OutputIndexTensor is not None and desc.OutputIndexTensor.Desc is not None
    rows = np.moveaxis(x, desc.Axis, -1)
    largest = isinstance(desc, DML_TOP_K_OPERATOR_DESC) or desc.AxisDirection == DML_AXIS_DIRECTION.DECREASING
    if largest:  # a stable ascending sort of the reversed row, read backwards: descending, ties by increasing index
        order = rows.shape[-1] - 1 - np.argsort(rows[..., ::-1], axis=-1, kind="stable")[..., ::-1]
    else:
        order = np.argsort(rows, axis=-1, kind="stable")
    order = order[..., : desc.K]
    values = np.take_along_axis(rows, order, axis=-1)
    index_type = numpy_dtype(desc.OutputIndexTensor.Desc.DataType)
    return {"OutputValueTensor": np.moveaxis(values, -1, desc.Axis), "OutputIndexTensor": np.moveaxis(order, -1, desc.Axis).astype(index_type)}


def cumulative_reference(desc: DML_CUMULATIVE_SUMMATION_OPERATOR_DESC | DML_CUMULATIVE_PRODUCT_OPERATOR_DESC, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    """Running sum or product along Axis, from its start (INCREASING) or end (DECREASING); exclusive: each
    output leaves out its own element (the first is 0, or 1 for a product). Floats in their working type,
    rounded once; integers wrap in their own type."""
    x = inputs["InputTensor"]
    assert x is not None
    product = isinstance(desc, DML_CUMULATIVE_PRODUCT_OPERATOR_DESC)
    exclusive = desc.HasExclusiveProduct if product else desc.HasExclusiveSum
    axis, decreasing = desc.Axis, desc.AxisDirection == DML_AXIS_DIRECTION.DECREASING
    w = _work(x)
    if decreasing:
        w = np.flip(w, axis)
    if exclusive:  # shift by one along the axis, the identity entering first
        first = np.full_like(w.take([0], axis=axis), 1 if product else 0)
        w = np.concatenate([first, w.take(range(w.shape[axis] - 1), axis=axis)], axis=axis)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        y = (np.cumprod if product else np.cumsum)(w, axis=axis, dtype=w.dtype)
        if decreasing:
            y = np.flip(y, axis)
        return {"OutputTensor": y.astype(x.dtype)}


for _type, _class, _check, _kernel in (
    (DML_OPERATOR_TYPE.REDUCE, DML_REDUCE_OPERATOR_DESC, _check_reduce, reduce_reference),
    (DML_OPERATOR_TYPE.ARGMIN, DML_ARGMIN_OPERATOR_DESC, _check_reduce, reduce_reference),
    (DML_OPERATOR_TYPE.ARGMAX, DML_ARGMAX_OPERATOR_DESC, _check_reduce, reduce_reference),
    (DML_OPERATOR_TYPE.TOP_K, DML_TOP_K_OPERATOR_DESC, _check_top_k, top_k_reference),
    (DML_OPERATOR_TYPE.TOP_K1, DML_TOP_K1_OPERATOR_DESC, _check_top_k, top_k_reference),
    (DML_OPERATOR_TYPE.CUMULATIVE_SUMMATION, DML_CUMULATIVE_SUMMATION_OPERATOR_DESC, _check_cumulative, cumulative_reference),
    (DML_OPERATOR_TYPE.CUMULATIVE_PRODUCT, DML_CUMULATIVE_PRODUCT_OPERATOR_DESC, _check_cumulative, cumulative_reference),
):
    # REDUCE, ARGMIN and ARGMAX: dmlpy/native/reduction.c takes every valid desc; the others run their NumPy kernel.
    native = _type in (DML_OPERATOR_TYPE.REDUCE, DML_OPERATOR_TYPE.ARGMIN, DML_OPERATOR_TYPE.ARGMAX)
    register(OperatorSpec(_type, _class, OPERATORS[_type], _check, _kernel, in_place=DESCS[_type].in_place, native=native, generic_rules=True))

__all__ = [
    "DML_ARGMAX_OPERATOR_DESC",
    "DML_ARGMIN_OPERATOR_DESC",
    "DML_CUMULATIVE_PRODUCT_OPERATOR_DESC",
    "DML_CUMULATIVE_SUMMATION_OPERATOR_DESC",
    "DML_REDUCE_OPERATOR_DESC",
    "DML_TOP_K1_OPERATOR_DESC",
    "DML_TOP_K_OPERATOR_DESC",
    "REDUCTIONS",
    "arg_extreme",
    "cumulative_reference",
    "reduce_reference",
    "top_k_reference",
]
