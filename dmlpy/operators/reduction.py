"""Reductions: DML_REDUCE_OPERATOR_DESC, DML_ARGMIN_OPERATOR_DESC, DML_ARGMAX_OPERATOR_DESC, and top-k.

Facts: the DML_REDUCE_OPERATOR_DESC page (Axes in ``[0, InputTensor.DimensionCount - 1]``; the
output keeps the rank, with size 1 on the reduced axes; the same DataType except for ARGMIN and
ARGMAX, whose output types the per-function support tables give), the ARGMIN and ARGMAX pages
(the same sizes rule, stated in their remarks), and the TOP_K and TOP_K1 pages (both outputs
have the input's sizes with ``K`` on ``Axis``). Decisions (docs/deviations.md): a repeated axis
is a warning, the pages being silent about it; top-k's ``K`` may equal the axis size.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dmlpy.enums import DML_OPERATOR_TYPE, DML_REDUCE_FUNCTION
from dmlpy.errors import Severity
from dmlpy.operators import OperatorSpec, register
from dmlpy.operators.descs.reduction import (
    DML_ARGMAX_OPERATOR_DESC,
    DML_ARGMIN_OPERATOR_DESC,
    DML_REDUCE_OPERATOR_DESC,
    DML_TOP_K1_OPERATOR_DESC,
    DML_TOP_K_OPERATOR_DESC,
)
from dmlpy.rules import Checker, fmt, rule
from dmlpy.support import OPERATORS
from dmlpy.tensor import DML_BUFFER_TENSOR_DESC

REDUCE_PAGE = "ns-directml-dml_reduce_operator_desc"
AXIS_RANGE = rule("REDUCE.AXIS_RANGE", "Every entry of Axes is in [0, InputTensor.DimensionCount - 1].", source=REDUCE_PAGE)
AXIS_DUPLICATE = rule("REDUCE.AXIS_DUPLICATE", "No axis appears twice in Axes (the pages are silent; a repeated axis reduces once).", source="docs/deviations.md", severity=Severity.WARNING)
SAME_DIMENSION_COUNT = rule("REDUCE.SAME_DIMENSION_COUNT", "OutputTensor.DimensionCount equals InputTensor.DimensionCount: the rank is preserved.", source=REDUCE_PAGE)
OUTPUT_SIZE = rule("REDUCE.OUTPUT_SIZE", "OutputTensor.Sizes equal InputTensor.Sizes, except 1 on every reduced axis.", source=REDUCE_PAGE)
SAME_DATA_TYPE = rule("REDUCE.SAME_DATA_TYPE", "OutputTensor.DataType equals InputTensor.DataType, except for the ARGMIN and ARGMAX functions.", source=REDUCE_PAGE)

TOP_K_PAGE = "ns-directml-dml_top_k1_operator_desc"
TOP_K_AXIS_RANGE = rule("TOP_K.AXIS_RANGE", "Axis is in [0, InputTensor.DimensionCount - 1].", source=TOP_K_PAGE)
TOP_K_K_RANGE = rule("TOP_K.K_RANGE", "K is in [1, InputTensor.Sizes[Axis]] (the page says below the size; K equal to it is accepted, docs/deviations.md).", source=TOP_K_PAGE)
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


for _type, _class, _check in (
    (DML_OPERATOR_TYPE.REDUCE, DML_REDUCE_OPERATOR_DESC, _check_reduce),
    (DML_OPERATOR_TYPE.ARGMIN, DML_ARGMIN_OPERATOR_DESC, _check_reduce),
    (DML_OPERATOR_TYPE.ARGMAX, DML_ARGMAX_OPERATOR_DESC, _check_reduce),
    (DML_OPERATOR_TYPE.TOP_K, DML_TOP_K_OPERATOR_DESC, _check_top_k),
    (DML_OPERATOR_TYPE.TOP_K1, DML_TOP_K1_OPERATOR_DESC, _check_top_k),
):
    register(OperatorSpec(_type, _class, OPERATORS[_type], _check, generic_rules=True))

__all__ = [
    "DML_ARGMAX_OPERATOR_DESC",
    "DML_ARGMIN_OPERATOR_DESC",
    "DML_REDUCE_OPERATOR_DESC",
    "DML_TOP_K1_OPERATOR_DESC",
    "DML_TOP_K_OPERATOR_DESC",
]
