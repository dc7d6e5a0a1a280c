"""Data movement: JOIN, SPLIT, SLICE, SLICE1, PADDING, PADDING1, TILE, GATHER, GATHER_ELEMENTS, GATHER_ND,
ONE_HOT, SCATTER (SCATTER_ELEMENTS), SCATTER_ND.

Facts, each operator's page: JOIN's inputs and SPLIT's outputs have the other tensor's sizes
except along ``Axis``, where JOIN's output size is the sum of its inputs' and SPLIT's outputs
sum to its input's; SLICE's output sizes are its ``Sizes`` and every element it reads,
``Offsets + Strides * (Sizes - 1)``, lies inside the input; SLICE1's window
``[offset, offset + size)`` is non-empty and inside the input, and each output size is between 1
and ``1 + (size - 1) / |stride|``; PADDING's output size is ``in + start + end``; TILE's is
``in * repeats``; GATHER's output is the input's sizes with the last ``IndexDimensions`` of the
indices' in place of ``Axis``, right-aligned; GATHER_ELEMENTS's output has the indices' sizes;
GATHER_ND's is the indices' sizes before the tuple then the input's sizes the tuple does not
index, right-aligned (the page's examples; its formula keeps too many input sizes,
docs/deviations.md). ONE_HOT's indices have the output's sizes with 1 on ``Axis`` and its values
tensor at least two elements; SCATTER's indices have the input's sizes except along ``Axis``, its
updates the indices' sizes; SCATTER_ND's updates have the sizes GATHER_ND's output would have; both
scatters' outputs have the input's sizes. Every ``Axis`` is below the
tensors' DimensionCount, and every per-dimension array has DimensionCount entries.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dmlpy.enums import DML_OPERATOR_TYPE, DML_PADDING_MODE
from dmlpy.operators import OperatorSpec, no_family_rules, register
from dmlpy.operators.descs.data_movement import (
    DML_CAST_OPERATOR_DESC,
    DML_GATHER_ELEMENTS_OPERATOR_DESC,
    DML_GATHER_ND1_OPERATOR_DESC,
    DML_GATHER_ND_OPERATOR_DESC,
    DML_GATHER_OPERATOR_DESC,
    DML_JOIN_OPERATOR_DESC,
    DML_ONE_HOT_OPERATOR_DESC,
    DML_PADDING1_OPERATOR_DESC,
    DML_PADDING_OPERATOR_DESC,
    DML_SCATTER_ND_OPERATOR_DESC,
    DML_SCATTER_OPERATOR_DESC,
    DML_SLICE1_OPERATOR_DESC,
    DML_SLICE_OPERATOR_DESC,
    DML_SPLIT_OPERATOR_DESC,
    DML_TILE_OPERATOR_DESC,
)
from dmlpy.operators.element_wise import scalar_value, store
from dmlpy.rules import Checker, fmt, rule
from dmlpy.support import OPERATORS
from dmlpy.tensor import DML_BUFFER_TENSOR_DESC, numpy_dtype

OP = DML_OPERATOR_TYPE


def _page(name: str) -> str:
    return f"ns-directml-dml_{name}_operator_desc"


JOIN_AXIS = rule("JOIN.AXIS_RANGE", "Axis is below the tensors' DimensionCount.", source=_page("join"))
JOIN_SIZES = rule("JOIN.SAME_SIZES", "Every input has the output's Sizes except along Axis.", source=_page("join"))
JOIN_OUTPUT = rule("JOIN.OUTPUT_SIZE", "OutputTensor.Sizes[Axis] is the sum of the inputs' Sizes[Axis].", source=_page("join"))
SPLIT_AXIS = rule("SPLIT.AXIS_RANGE", "Axis is below the tensors' DimensionCount.", source=_page("split"))
SPLIT_SIZES = rule("SPLIT.SAME_SIZES", "Every output has the input's Sizes except along Axis.", source=_page("split"))
SPLIT_OUTPUT = rule("SPLIT.OUTPUT_SIZE", "The outputs' Sizes[Axis] sum to InputTensor.Sizes[Axis].", source=_page("split"))
SLICE_DIMENSION_COUNT = rule("SLICE.DIMENSION_COUNT", "DimensionCount equals the input's and output's DimensionCount.", source=_page("slice1"))
SLICE_OUTPUT = rule("SLICE.OUTPUT_SIZE", "SLICE: OutputTensor.Sizes equal Sizes. SLICE1: 1 <= OutputTensor.Sizes[i] <= 1 + (InputWindowSizes[i] - 1) / |InputWindowStrides[i]|.", source=f"{_page('slice')}; {_page('slice1')}")
SLICE_BOUNDS = rule("SLICE.WINDOW_BOUNDS", "Every element read lies inside the input: the window is non-empty and ends at or before InputTensor.Sizes[i].", source=f"{_page('slice')}; {_page('slice1')}")
SLICE_STRIDE = rule("SLICE.STRIDE_ZERO", "SLICE1's InputWindowStrides are not 0 (the element count divides by them).", source=_page("slice1"))
PADDING_DIMENSION_COUNT = rule("PADDING.DIMENSION_COUNT", "DimensionCount equals the tensors' DimensionCount.", source=_page("padding"))
PADDING_OUTPUT = rule("PADDING.OUTPUT_SIZE", "OutputTensor.Sizes[i] = InputTensor.Sizes[i] + StartPadding[i] + EndPadding[i].", source=_page("padding"))
TILE_COUNT = rule("TILE.REPEATS_COUNT", "RepeatsCount equals the tensors' DimensionCount.", source=_page("tile"))
TILE_OUTPUT = rule("TILE.OUTPUT_SIZE", "OutputTensor.Sizes[i] = InputTensor.Sizes[i] * Repeats[i].", source=_page("tile"))
TILE_RANK = rule("TILE.SAME_DIMENSION_COUNT", "OutputTensor has InputTensor's DimensionCount.", source=_page("tile"))
GATHER_AXIS_RANGE = rule("GATHER.AXIS_RANGE", "Axis is below InputTensor.DimensionCount.", source=_page("gather"))
GATHER_INDEX_DIMENSIONS = rule("GATHER.INDEX_DIMENSIONS", "IndexDimensions is at most IndicesTensor.DimensionCount.", source=f"{_page('gather')}; docs/deviations.md")
GATHER_OUTPUT_SIZE = rule("GATHER.OUTPUT_SIZE", "OutputTensor.Sizes are {Input.Sizes[..Axis], the last IndexDimensions Indices.Sizes, Input.Sizes[Axis+1..]}, right-aligned: leading 1s cropped or added.", source=_page("gather"))
ND_PAGE = _page("gather_nd")
ND_INPUT_COUNT = rule("GATHER_ND.INPUT_DIMENSION_COUNT", "InputDimensionCount is in [1, InputTensor.DimensionCount].", source=ND_PAGE)
ND_INDICES_COUNT = rule("GATHER_ND.INDICES_DIMENSION_COUNT", "IndicesDimensionCount is in [1, IndicesTensor.DimensionCount].", source=ND_PAGE)
ND_TUPLE = rule("GATHER_ND.TUPLE_SIZE", "The index tuple size, IndicesTensor's last size, is at most InputDimensionCount.", source=ND_PAGE)
ND_OUTPUT_SIZE = rule("GATHER_ND.OUTPUT_SIZE", "OutputTensor.Sizes are {the indices' IndicesDimensionCount - 1 sizes before the tuple, the input's sizes after the tuple's}, right-aligned.", source=f"{ND_PAGE}; docs/deviations.md")
ND_BATCH = rule("GATHER_ND.BATCH_DIMENSION_COUNT", "GATHER_ND1's BatchDimensionCount is below both tensors' DimensionCount (the page's range) and below IndicesDimensionCount, so the index tuples lie after the batches.", source=_page("gather_nd1"))
ND_BATCH_SIZES = rule("GATHER_ND.BATCH_SIZES", "GATHER_ND1's first BatchDimensionCount meaningful sizes are the same in InputTensor and IndicesTensor (output[batch, ...] = input[batch, indices[batch, ...], ...]).", source=f"{_page('gather_nd1')}; docs/deviations.md")
PADDING_VALUE_TYPE = rule("PADDING.VALUE_DATA_TYPE", "PADDING1's PaddingValueDataType matches OutputTensor.DataType.", source=_page("padding1"))
GATHER_INDICES_SIZES = rule("GATHER_ELEMENTS.INDICES_SIZES", "IndicesTensor.Sizes match InputTensor.Sizes in every dimension except Axis.", source=_page("gather_elements"))
GATHER_AXIS = rule("GATHER_ELEMENTS.AXIS_RANGE", "Axis is below the tensors' DimensionCount.", source=_page("gather_elements"))
GATHER_OUTPUT = rule("GATHER_ELEMENTS.OUTPUT_SIZE", "OutputTensor.Sizes equal IndicesTensor.Sizes.", source=_page("gather_elements"))
ONE_HOT_AXIS = rule("ONE_HOT.AXIS_RANGE", "Axis is below IndicesTensor.DimensionCount.", source=_page("one_hot"))
ONE_HOT_INDICES_SIZES = rule("ONE_HOT.INDICES_SIZES", "IndicesTensor.Sizes equal OutputTensor.Sizes except along Axis, where IndicesTensor's size is 1.", source=_page("one_hot"))
ONE_HOT_VALUES = rule("ONE_HOT.VALUES_COUNT", "ValuesTensor holds at least two elements: {OffValue, OnValue}.", source=_page("one_hot"))
SCATTER_AXIS = rule("SCATTER.AXIS_RANGE", "Axis is below the tensors' DimensionCount.", source=_page("scatter"))
SCATTER_INDICES_SIZES = rule("SCATTER.INDICES_SIZES", "IndicesTensor.Sizes match InputTensor.Sizes in every dimension except Axis.", source=_page("scatter"))
SCATTER_UPDATES_SIZES = rule("SCATTER.UPDATES_SIZES", "UpdatesTensor.Sizes equal IndicesTensor.Sizes.", source=_page("scatter"))
SCATTER_OUTPUT = rule("SCATTER.OUTPUT_SIZE", "OutputTensor.Sizes equal InputTensor.Sizes (SCATTER and SCATTER_ND).", source=f"{_page('scatter')}; {_page('scatter_nd')}")
SND_PAGE = _page("scatter_nd")
SND_INPUT_COUNT = rule("SCATTER_ND.INPUT_DIMENSION_COUNT", "InputDimensionCount is in [1, InputTensor.DimensionCount].", source=SND_PAGE)
SND_INDICES_COUNT = rule("SCATTER_ND.INDICES_DIMENSION_COUNT", "IndicesDimensionCount is in [1, IndicesTensor.DimensionCount].", source=SND_PAGE)
SND_TUPLE = rule("SCATTER_ND.TUPLE_SIZE", "The index tuple size, IndicesTensor's last size, is at most InputDimensionCount.", source=SND_PAGE)
SND_UPDATES_SIZES = rule("SCATTER_ND.UPDATES_SIZES", "UpdatesTensor.Sizes are {the indices' IndicesDimensionCount - 1 sizes before the tuple, the input's sizes after the tuple's}, right-aligned.", source=f"{SND_PAGE}; docs/deviations.md")


def _axis_ok(ctx: Checker, rule_: Any, axis: int, rank: int, path: str) -> bool:
    return ctx.check(0 <= axis < rank, rule_, f"{path}.Axis", actual=axis, expected=f"0..{rank - 1}",
                     message=f"is {axis}, expected an axis below the tensors' DimensionCount {rank}")  # fmt: skip


def _sizes_along_axis(ctx: Checker, desc: Any, path: str, whole_name: str, whole: DML_BUFFER_TENSOR_DESC | None,
                      parts_name: str, parts: list[DML_BUFFER_TENSOR_DESC | None], axis_rule: Any, sizes_rule: Any) -> list[int] | None:  # fmt: skip
    """JOIN's inputs and SPLIT's outputs ("parts") match the other tensor off the axis; returns their sizes along it."""
    if whole is None or whole.Sizes is None or parts is None or any(p is None for p in parts):
        return None
    rank = len(whole.Sizes)
    if not _axis_ok(ctx, axis_rule, desc.Axis, rank, path):
        return None
    axis, along = desc.Axis, []
    for i, part in enumerate(parts):
        assert part is not None and part.Sizes is not None
        if len(part.Sizes) != rank:
            return None  # TENSOR.SAME_DIMENSION_COUNT
        along.append(part.Sizes[axis])
        for d, (size, expected) in enumerate(zip(part.Sizes, whole.Sizes, strict=True)):
            if d != axis:
                ctx.check(size == expected, sizes_rule, f"{path}.{parts_name}[{i}].Sizes[{d}]", actual=size, expected=expected, why=f"{whole_name}.Sizes[{d}] (Axis is {axis})")
    return along


def _check_join(ctx: Checker, desc: DML_JOIN_OPERATOR_DESC, path: str, buffers: dict[str, Any]) -> None:
    y = buffers["OutputTensor"]
    along = _sizes_along_axis(ctx, desc, path, "OutputTensor", y, "InputTensors", buffers["InputTensors"], JOIN_AXIS, JOIN_SIZES)
    if along == []:  # no inputs: their sum along Axis is 0, and sizes are at least 1
        ctx.check(False, JOIN_OUTPUT, f"{path}.InputCount", actual=0, expected=">= 1", message=f"is 0: no inputs sum to OutputTensor.Sizes[{desc.Axis}] = {y.Sizes[desc.Axis]}")
    elif along is not None:
        actual, axis = y.Sizes[desc.Axis], desc.Axis
        ctx.check(actual == sum(along), JOIN_OUTPUT, f"{path}.OutputTensor.Sizes[{axis}]", actual=actual, expected=sum(along),
                  message=f"is {actual}, expected the inputs' sum {' + '.join(map(str, along))} = {sum(along)}")  # fmt: skip


def _check_split(ctx: Checker, desc: DML_SPLIT_OPERATOR_DESC, path: str, buffers: dict[str, Any]) -> None:
    x = buffers["InputTensor"]
    along = _sizes_along_axis(ctx, desc, path, "InputTensor", x, "OutputTensors", buffers["OutputTensors"], SPLIT_AXIS, SPLIT_SIZES)
    if along == []:  # no outputs: their sum along Axis is 0, and sizes are at least 1
        ctx.check(False, SPLIT_OUTPUT, f"{path}.OutputCount", actual=0, expected=">= 1", message=f"is 0: no outputs sum to InputTensor.Sizes[{desc.Axis}] = {x.Sizes[desc.Axis]}")
    elif along is not None:
        wanted, axis = x.Sizes[desc.Axis], desc.Axis
        ctx.check(sum(along) == wanted, SPLIT_OUTPUT, f"{path}.OutputTensors[{len(along) - 1}].Sizes[{axis}]", actual=along[-1], expected=wanted - sum(along[:-1]),
                  message=f"is {along[-1]}: the outputs' sizes along Axis {' + '.join(map(str, along))} = {sum(along)}, expected InputTensor.Sizes[{axis}] = {wanted}")  # fmt: skip


def _arrays(desc: Any, names: tuple[str, ...], count: int) -> list[Any] | None:
    """The per-dimension arrays, or None when one is missing or of the wrong length (FIELD.* say so)."""
    values = [getattr(desc, name) for name in names]
    return None if any(v is None or len(v) != count for v in values) else values


def _same_rank(ctx: Checker, rule_: Any, count_name: str, desc: Any, path: str, buffers: dict[str, Any]) -> tuple[Any, Any] | None:
    x, y = buffers["InputTensor"], buffers["OutputTensor"]
    if x is None or y is None or x.DimensionCount != y.DimensionCount:
        return None
    count = getattr(desc, count_name)
    if not ctx.check(count == x.DimensionCount, rule_, f"{path}.{count_name}", actual=count, expected=x.DimensionCount, why="InputTensor.DimensionCount"):
        return None
    return x, y


def _check_slice(ctx: Checker, desc: DML_SLICE_OPERATOR_DESC | DML_SLICE1_OPERATOR_DESC, path: str, buffers: dict[str, Any]) -> None:
    tensors = _same_rank(ctx, SLICE_DIMENSION_COUNT, "DimensionCount", desc, path, buffers)
    if tensors is None:
        return
    x, y = tensors
    first = isinstance(desc, DML_SLICE_OPERATOR_DESC)
    names = ("Offsets", "Sizes", "Strides") if first else ("InputWindowOffsets", "InputWindowSizes", "InputWindowStrides")
    arrays = _arrays(desc, names, desc.DimensionCount)
    if arrays is None:
        return
    for i, (offset, size, stride) in enumerate(zip(*arrays, strict=True)):
        if first:
            last = offset + stride * (size - 1)
            ctx.check(size >= 1 and last < x.Sizes[i], SLICE_BOUNDS, f"{path}.Sizes[{i}]", actual=size, expected=f"1..{x.Sizes[i]}",
                      message=f"is {size}: the last element read is Offsets + Strides * (Sizes - 1) = {offset} + {stride} * ({size} - 1) = {last}, expected 0..{x.Sizes[i] - 1} (InputTensor.Sizes[{i}] = {x.Sizes[i]})"
                      if size >= 1 else "is 0, expected at least 1 element")  # fmt: skip
            ctx.check(y.Sizes[i] == size, SLICE_OUTPUT, f"{path}.OutputTensor.Sizes[{i}]", actual=y.Sizes[i], expected=size, why=f"Sizes[{i}]")
            continue
        inside = ctx.check(size >= 1 and offset + size <= x.Sizes[i], SLICE_BOUNDS, f"{path}.InputWindowSizes[{i}]", actual=size, expected=f"1..{x.Sizes[i] - offset}",
                           message=f"is {size}: the window [{offset}, {offset} + {size}) must be non-empty and end at or before InputTensor.Sizes[{i}] = {x.Sizes[i]}")  # fmt: skip
        if not ctx.check(stride != 0, SLICE_STRIDE, f"{path}.InputWindowStrides[{i}]", actual=stride, expected="not 0", message="is 0, expected a nonzero stride") or not inside:
            continue
        most = 1 + (size - 1) // abs(stride)
        ctx.check(1 <= y.Sizes[i] <= most, SLICE_OUTPUT, f"{path}.OutputTensor.Sizes[{i}]", actual=y.Sizes[i], expected=f"1..{most}",
                  message=f"is {y.Sizes[i]}, expected 1 to 1 + ({size} - 1) / |{stride}| = {most}")  # fmt: skip


def _check_padding(ctx: Checker, desc: DML_PADDING_OPERATOR_DESC | DML_PADDING1_OPERATOR_DESC, path: str, buffers: dict[str, Any]) -> None:
    y = buffers["OutputTensor"]
    if isinstance(desc, DML_PADDING1_OPERATOR_DESC) and y is not None:
        value_type = desc.PaddingValueDataType
        ctx.check(value_type == y.DataType, PADDING_VALUE_TYPE, f"{path}.PaddingValueDataType", actual=value_type, expected=y.DataType,
                  message=f"is {fmt(value_type)}, expected OutputTensor.DataType {fmt(y.DataType)}")  # fmt: skip
    tensors = _same_rank(ctx, PADDING_DIMENSION_COUNT, "DimensionCount", desc, path, buffers)
    arrays = None if tensors is None else _arrays(desc, ("StartPadding", "EndPadding"), desc.DimensionCount)
    if tensors is None or arrays is None:
        return
    x, y = tensors
    for i, (start, end) in enumerate(zip(*arrays, strict=True)):
        expected = x.Sizes[i] + start + end
        ctx.check(y.Sizes[i] == expected, PADDING_OUTPUT, f"{path}.OutputTensor.Sizes[{i}]", actual=y.Sizes[i], expected=expected, why=f"{x.Sizes[i]} + {start} + {end} (input + start + end)")


def _check_tile(ctx: Checker, desc: DML_TILE_OPERATOR_DESC, path: str, buffers: dict[str, Any]) -> None:
    x, y = buffers["InputTensor"], buffers["OutputTensor"]
    if x is None or y is None:
        return
    if not ctx.check(y.DimensionCount == x.DimensionCount, TILE_RANK, f"{path}.OutputTensor.DimensionCount", actual=y.DimensionCount, expected=x.DimensionCount, why="InputTensor.DimensionCount"):
        return
    tensors = _same_rank(ctx, TILE_COUNT, "RepeatsCount", desc, path, buffers)
    if tensors is None or desc.Repeats is None or len(desc.Repeats) != desc.RepeatsCount:
        return
    for i, repeats in enumerate(desc.Repeats):
        expected = x.Sizes[i] * repeats
        ctx.check(y.Sizes[i] == expected, TILE_OUTPUT, f"{path}.OutputTensor.Sizes[{i}]", actual=y.Sizes[i], expected=expected, why=f"{x.Sizes[i]} * {repeats} (input * Repeats[{i}])")


def gather_output_sizes(input_sizes: tuple[int, ...], indices_sizes: tuple[int, ...], axis: int, index_dimensions: int, rank: int) -> tuple[int, ...] | None:
    """GATHER's OutputTensor.Sizes of DimensionCount ``rank``, or None when more than ``rank`` of them are not 1."""
    kept = tuple(indices_sizes[len(indices_sizes) - index_dimensions :]) if index_dimensions else ()
    full = tuple(input_sizes[:axis]) + kept + tuple(input_sizes[axis + 1 :])
    while len(full) > rank and full[0] == 1:
        full = full[1:]
    return None if len(full) > rank else (1,) * (rank - len(full)) + full


def _check_gather(ctx: Checker, desc: DML_GATHER_OPERATOR_DESC, path: str, buffers: dict[str, Any]) -> None:
    x, indices, y = buffers["InputTensor"], buffers["IndicesTensor"], buffers["OutputTensor"]
    if x is None or indices is None or y is None or not (x.DimensionCount == indices.DimensionCount == y.DimensionCount):
        return  # TENSOR.SAME_DIMENSION_COUNT
    rank = x.DimensionCount
    axis_ok = _axis_ok(ctx, GATHER_AXIS_RANGE, desc.Axis, rank, path)
    count_ok = ctx.check(desc.IndexDimensions <= rank, GATHER_INDEX_DIMENSIONS, f"{path}.IndexDimensions", actual=desc.IndexDimensions, expected=f"0..{rank}",
                         message=f"is {desc.IndexDimensions}, more than IndicesTensor.DimensionCount = {rank}")  # fmt: skip
    if not (axis_ok and count_ok):
        return
    expected = gather_output_sizes(tuple(x.Sizes), tuple(indices.Sizes), desc.Axis, desc.IndexDimensions, rank)
    kept = f"IndicesTensor.Sizes[{rank - desc.IndexDimensions}..{rank - 1}]" if desc.IndexDimensions else "no IndicesTensor sizes"
    formula = f"{{InputTensor.Sizes[0..{desc.Axis - 1}], {kept}, InputTensor.Sizes[{desc.Axis + 1}..{rank - 1}]}}"
    ctx.check(expected is not None and tuple(y.Sizes) == expected, GATHER_OUTPUT_SIZE, f"{path}.OutputTensor.Sizes", actual=tuple(y.Sizes), expected=expected,
              message=(f"is {fmt(list(y.Sizes))}, expected {fmt(list(expected))} = {formula} right-aligned to {rank} dimensions" if expected is not None
                       else f"has {rank} dimensions, fewer than the original rank + IndexDimensions - 1 the gather produces ({formula})"))  # fmt: skip


def gather_nd_output_sizes(input_sizes: tuple[int, ...], indices_sizes: tuple[int, ...], input_count: int, indices_count: int, rank: int, batch: int = 0) -> tuple[int, ...] | None:
    """GATHER_ND's (GATHER_ND1's, with ``batch``) OutputTensor.Sizes of DimensionCount ``rank`` (the pages' examples), or None when they do not fit."""
    tuple_size = indices_sizes[-1]
    full = tuple(indices_sizes[len(indices_sizes) - indices_count : -1]) + tuple(input_sizes[len(input_sizes) - input_count + batch + tuple_size :])
    while len(full) > rank and full[0] == 1:
        full = full[1:]
    return None if len(full) > rank else (1,) * (rank - len(full)) + full


def _check_gather_nd(ctx: Checker, desc: DML_GATHER_ND_OPERATOR_DESC | DML_GATHER_ND1_OPERATOR_DESC, path: str, buffers: dict[str, Any]) -> None:
    x, indices, y = buffers["InputTensor"], buffers["IndicesTensor"], buffers["OutputTensor"]
    if x is None or indices is None or y is None or not (x.DimensionCount == indices.DimensionCount == y.DimensionCount):
        return  # TENSOR.SAME_DIMENSION_COUNT
    rank, input_count, indices_count = x.DimensionCount, desc.InputDimensionCount, desc.IndicesDimensionCount
    ok = ctx.check(1 <= input_count <= rank, ND_INPUT_COUNT, f"{path}.InputDimensionCount", actual=input_count, expected=f"1..{rank}",
                   message=f"is {input_count}, expected 1 to InputTensor.DimensionCount = {rank}")  # fmt: skip
    ok &= ctx.check(1 <= indices_count <= rank, ND_INDICES_COUNT, f"{path}.IndicesDimensionCount", actual=indices_count, expected=f"1..{rank}",
                    message=f"is {indices_count}, expected 1 to IndicesTensor.DimensionCount = {rank}")  # fmt: skip
    batch = getattr(desc, "BatchDimensionCount", 0)
    if ok and batch:
        ok = ctx.check(batch < indices_count, ND_BATCH, f"{path}.BatchDimensionCount", actual=batch, expected=f"0..{indices_count - 1}",
                       message=f"is {batch}, expected below DimensionCount = {rank} and IndicesDimensionCount = {indices_count} (the index tuples follow the batches)")  # fmt: skip
        for i in range(batch) if ok else ():
            a, b = rank - input_count + i, rank - indices_count + i
            if a < rank:
                ok &= ctx.check(x.Sizes[a] == indices.Sizes[b], ND_BATCH_SIZES, f"{path}.IndicesTensor.Sizes[{b}]", actual=indices.Sizes[b], expected=x.Sizes[a],
                                why=f"InputTensor.Sizes[{a}] (batch dimension {i})")  # fmt: skip
    if not ok:
        return
    tuple_size, most = indices.Sizes[-1], input_count - batch
    if not ctx.check(tuple_size <= most, ND_TUPLE, f"{path}.IndicesTensor.Sizes[{rank - 1}]", actual=tuple_size, expected=f"<= {most}",
                     message=f"is {tuple_size}: index tuples of {tuple_size} coordinates, more than InputDimensionCount{' - BatchDimensionCount' if batch else ''} = {most}"):  # fmt: skip
        return
    expected = gather_nd_output_sizes(tuple(x.Sizes), tuple(indices.Sizes), input_count, indices_count, rank, batch)
    formula = (f"{{IndicesTensor.Sizes[{rank - indices_count}..{rank - 2}], InputTensor.Sizes[{rank - input_count + batch + tuple_size}..{rank - 1}]}}")
    ctx.check(expected is not None and tuple(y.Sizes) == expected, ND_OUTPUT_SIZE, f"{path}.OutputTensor.Sizes", actual=tuple(y.Sizes), expected=expected,
              message=(f"is {fmt(list(y.Sizes))}, expected {fmt(list(expected))} = {formula} right-aligned to {rank} dimensions" if expected is not None
                       else f"has {rank} dimensions, too few for {formula}"))  # fmt: skip


def _check_gather_elements(ctx: Checker, desc: DML_GATHER_ELEMENTS_OPERATOR_DESC, path: str, buffers: dict[str, Any]) -> None:
    x, indices, y = buffers["InputTensor"], buffers["IndicesTensor"], buffers["OutputTensor"]
    if x is None or indices is None or y is None or not (x.DimensionCount == indices.DimensionCount == y.DimensionCount):
        return
    if _axis_ok(ctx, GATHER_AXIS, desc.Axis, x.DimensionCount, path):
        for d, (size, expected) in enumerate(zip(indices.Sizes, x.Sizes, strict=True)):
            if d != desc.Axis:
                ctx.check(size == expected, GATHER_INDICES_SIZES, f"{path}.IndicesTensor.Sizes[{d}]", actual=size, expected=expected, why=f"InputTensor.Sizes[{d}] (Axis is {desc.Axis})")
        ctx.check(tuple(y.Sizes) == tuple(indices.Sizes), GATHER_OUTPUT, f"{path}.OutputTensor.Sizes", actual=tuple(y.Sizes), expected=tuple(indices.Sizes), why="IndicesTensor.Sizes")


def _check_one_hot(ctx: Checker, desc: DML_ONE_HOT_OPERATOR_DESC, path: str, buffers: dict[str, Any]) -> None:
    indices, values, y = buffers["IndicesTensor"], buffers["ValuesTensor"], buffers["OutputTensor"]
    if values is not None and values.Sizes is not None:
        count = int(np.prod(values.Sizes))
        ctx.check(count >= 2, ONE_HOT_VALUES, f"{path}.ValuesTensor.Sizes", actual=tuple(values.Sizes), expected="at least 2 elements",
                  message=f"is {fmt(list(values.Sizes))}: {count} element, expected at least two (OffValue, OnValue)")  # fmt: skip
    if indices is None or y is None or indices.DimensionCount != y.DimensionCount:
        return  # TENSOR.SAME_DIMENSION_COUNT
    rank = indices.DimensionCount
    if not ctx.check(0 <= desc.Axis < rank, ONE_HOT_AXIS, f"{path}.Axis", actual=desc.Axis, expected=f"0..{rank - 1}",
                     message=f"is {desc.Axis}, expected an axis below IndicesTensor.DimensionCount {rank}"):  # fmt: skip
        return
    for d, (size, out) in enumerate(zip(indices.Sizes, y.Sizes, strict=True)):
        expected = 1 if d == desc.Axis else out
        ctx.check(size == expected, ONE_HOT_INDICES_SIZES, f"{path}.IndicesTensor.Sizes[{d}]", actual=size, expected=expected,
                  why="1 (Axis)" if d == desc.Axis else f"OutputTensor.Sizes[{d}]")  # fmt: skip


def _check_output_is_input(ctx: Checker, path: str, x: Any, y: Any) -> None:
    ctx.check(tuple(y.Sizes) == tuple(x.Sizes), SCATTER_OUTPUT, f"{path}.OutputTensor.Sizes", actual=tuple(y.Sizes), expected=tuple(x.Sizes), why="InputTensor.Sizes")


def _check_scatter(ctx: Checker, desc: DML_SCATTER_OPERATOR_DESC, path: str, buffers: dict[str, Any]) -> None:
    x, indices, updates, y = buffers["InputTensor"], buffers["IndicesTensor"], buffers["UpdatesTensor"], buffers["OutputTensor"]
    if any(t is None for t in (x, indices, updates, y)) or len({t.DimensionCount for t in (x, indices, updates, y)}) != 1:
        return  # TENSOR.SAME_DIMENSION_COUNT
    _check_output_is_input(ctx, path, x, y)
    if _axis_ok(ctx, SCATTER_AXIS, desc.Axis, x.DimensionCount, path):
        for d, (size, expected) in enumerate(zip(indices.Sizes, x.Sizes, strict=True)):
            if d != desc.Axis:
                ctx.check(size == expected, SCATTER_INDICES_SIZES, f"{path}.IndicesTensor.Sizes[{d}]", actual=size, expected=expected, why=f"InputTensor.Sizes[{d}] (Axis is {desc.Axis})")
    ctx.check(tuple(updates.Sizes) == tuple(indices.Sizes), SCATTER_UPDATES_SIZES, f"{path}.UpdatesTensor.Sizes", actual=tuple(updates.Sizes), expected=tuple(indices.Sizes), why="IndicesTensor.Sizes")


def _check_scatter_nd(ctx: Checker, desc: DML_SCATTER_ND_OPERATOR_DESC, path: str, buffers: dict[str, Any]) -> None:
    x, indices, updates, y = buffers["InputTensor"], buffers["IndicesTensor"], buffers["UpdatesTensor"], buffers["OutputTensor"]
    if any(t is None for t in (x, indices, updates, y)) or len({t.DimensionCount for t in (x, indices, updates, y)}) != 1:
        return  # TENSOR.SAME_DIMENSION_COUNT
    _check_output_is_input(ctx, path, x, y)
    rank, input_count, indices_count = x.DimensionCount, desc.InputDimensionCount, desc.IndicesDimensionCount
    ok = ctx.check(1 <= input_count <= rank, SND_INPUT_COUNT, f"{path}.InputDimensionCount", actual=input_count, expected=f"1..{rank}",
                   message=f"is {input_count}, expected 1 to InputTensor.DimensionCount = {rank}")  # fmt: skip
    ok &= ctx.check(1 <= indices_count <= rank, SND_INDICES_COUNT, f"{path}.IndicesDimensionCount", actual=indices_count, expected=f"1..{rank}",
                    message=f"is {indices_count}, expected 1 to IndicesTensor.DimensionCount = {rank}")  # fmt: skip
    if not ok:
        return
    tuple_size = indices.Sizes[-1]
    if not ctx.check(tuple_size <= input_count, SND_TUPLE, f"{path}.IndicesTensor.Sizes[{rank - 1}]", actual=tuple_size, expected=f"<= {input_count}",
                     message=f"is {tuple_size}: index tuples of {tuple_size} coordinates, more than InputDimensionCount = {input_count}"):  # fmt: skip
        return
    expected = gather_nd_output_sizes(tuple(x.Sizes), tuple(indices.Sizes), input_count, indices_count, rank)
    formula = f"{{IndicesTensor.Sizes[{rank - indices_count}..{rank - 2}], InputTensor.Sizes[{rank - input_count + tuple_size}..{rank - 1}]}}"
    ctx.check(expected is not None and tuple(updates.Sizes) == expected, SND_UPDATES_SIZES, f"{path}.UpdatesTensor.Sizes", actual=tuple(updates.Sizes), expected=expected,
              message=(f"is {fmt(list(updates.Sizes))}, expected {fmt(list(expected))} = {formula} right-aligned to {rank} dimensions" if expected is not None
                       else f"has {rank} dimensions, too few for {formula}"))  # fmt: skip


# ---------------------------------------------------------------------------------------
# NumPy kernels. Each gets its inputs in their logical shapes (the backend reads strides) and
# returns its outputs by binding slot name; tensor arrays bind one slot per element
# ("InputTensors[0]", "OutputTensors[1]").


def _sizes(tensor: Any) -> tuple[int, ...]:
    return tuple(tensor.buffer.Sizes)


def _dtype(tensor: Any) -> np.dtype[Any]:
    return numpy_dtype(tensor.buffer.DataType)


def _join(desc: DML_JOIN_OPERATOR_DESC, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    parts = [inputs[f"InputTensors[{i}]"] for i in range(len(desc.InputTensors or ()))]
    return {"OutputTensor": np.concatenate(parts, axis=desc.Axis)}


def _split(desc: DML_SPLIT_OPERATOR_DESC, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    ends = np.cumsum([_sizes(t)[desc.Axis] for t in desc.OutputTensors or ()])
    parts = np.split(inputs["InputTensor"], ends[:-1], axis=desc.Axis)
    return {f"OutputTensors[{i}]": part for i, part in enumerate(parts)}


def _slice(desc: DML_SLICE_OPERATOR_DESC | DML_SLICE1_OPERATOR_DESC, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    """output[i] = input[start + stride * i] per dimension; SLICE1 starts a negative stride at the window's end."""
    x = inputs["InputTensor"]
    if isinstance(desc, DML_SLICE_OPERATOR_DESC):
        starts, strides = list(desc.Offsets), list(desc.Strides)
    else:
        strides = list(desc.InputWindowStrides)
        starts = [o + (n - 1 if st < 0 else 0) for o, n, st in zip(desc.InputWindowOffsets, desc.InputWindowSizes, strides, strict=True)]
    coordinates = [start + stride * np.arange(n) for start, stride, n in zip(starts, strides, _sizes(desc.OutputTensor), strict=True)]
    return {"OutputTensor": x[np.ix_(*coordinates)]}


def _pad_source(n: int, start: int, end: int, mode: DML_PADDING_MODE) -> np.ndarray:
    """For each output position along one axis, the input position it copies (CONSTANT: outside [0, n) is padding).

    REFLECTION mirrors without repeating the edge, SYMMETRIC repeats it, both periodically past the
    first fold (the PADDING1 page's examples 3 and 4); WRAP repeats the input.
    """
    i = np.arange(-start, n + end)
    if mode == DML_PADDING_MODE.EDGE:
        return np.clip(i, 0, n - 1)
    if mode == DML_PADDING_MODE.REFLECTION:
        if n == 1:
            return np.zeros_like(i)  # one element mirrors onto itself (docs/deviations.md)
        m = np.mod(i, 2 * (n - 1))
        return np.where(m < n, m, 2 * (n - 1) - m)
    if mode == DML_PADDING_MODE.SYMMETRIC:
        m = np.mod(i, 2 * n)
        return np.where(m < n, m, 2 * n - 1 - m)
    if mode == DML_PADDING_MODE.WRAP:
        return np.mod(i, n)
    return i


def _padding_value(desc: DML_PADDING_OPERATOR_DESC | DML_PADDING1_OPERATOR_DESC, dtype: np.dtype[Any]) -> Any:
    """PADDING1's value is read from the union as PaddingValueDataType; PADDING's FLOAT is rounded to a float
    tensor's type, truncated and saturated to an integer tensor's (docs/deviations.md)."""
    if isinstance(desc, DML_PADDING1_OPERATOR_DESC):
        return scalar_value(desc.PaddingValue, desc.PaddingValueDataType)
    with np.errstate(over="ignore"):
        value = np.float32(desc.PaddingValue)  # the C field is a FLOAT: its value is the float32 one
    return store(np.float64(value), dtype)


def _padding(desc: DML_PADDING_OPERATOR_DESC | DML_PADDING1_OPERATOR_DESC, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    x = inputs["InputTensor"]
    mode = DML_PADDING_MODE(desc.PaddingMode)
    if mode == DML_PADDING_MODE.CONSTANT:
        y = np.full(_sizes(desc.OutputTensor), _padding_value(desc, x.dtype), dtype=x.dtype)
        y[tuple(slice(start, start + n) for start, n in zip(desc.StartPadding, x.shape, strict=True))] = x
        return {"OutputTensor": y}
    sources = [_pad_source(n, start, end, mode) for n, start, end in zip(x.shape, desc.StartPadding, desc.EndPadding, strict=True)]
    return {"OutputTensor": x[np.ix_(*sources)]}


def _cast(desc: DML_CAST_OPERATOR_DESC, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    """Floats into integers truncate toward zero, saturate, and write 0 for NaN (store); floats round to
    nearest even (overflowing to infinity); integers into integers keep the low bits (docs/deviations.md)."""
    x, dtype = inputs["InputTensor"], _dtype(desc.OutputTensor)
    if x.dtype.kind == "f" and dtype.kind in "iu":
        with np.errstate(invalid="ignore"):  # a signaling NaN warns in trunc; store writes 0 for it
            return {"OutputTensor": store(x, dtype)}
    with np.errstate(over="ignore", invalid="ignore"):
        return {"OutputTensor": x.astype(dtype)}


def safe_indices(indices: np.ndarray, size: int) -> np.ndarray:
    """Positions along an axis of ``size`` as int64: a negative index of a signed type counts from the end
    (the pages, from FL 3.0); one still outside ``[0, size)`` is clamped to it, so no read leaves the axis
    (GATHER's page: invalid indices give wrong values, never a fault; docs/deviations.md)."""
    if indices.dtype.kind == "u":
        return np.minimum(indices, np.uint64(size - 1)).astype(np.int64)
    i = indices.astype(np.int64)
    return np.clip(np.where(i < 0, i + size, i), 0, size - 1)


def _meaningful(array: np.ndarray, count: int) -> np.ndarray:
    """The last ``count`` dimensions; the leading ones the desc ignores are read at index 0 (they are 1 in the pages)."""
    return array[(0,) * (array.ndim - count)]


def _gather(desc: DML_GATHER_OPERATOR_DESC, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    x, indices = inputs["InputTensor"], inputs["IndicesTensor"]
    picked = np.take(x, safe_indices(_meaningful(indices, desc.IndexDimensions), x.shape[desc.Axis]), axis=desc.Axis)
    return {"OutputTensor": picked.reshape(_sizes(desc.OutputTensor))}  # right-aligned: leading 1s cropped or added


def _gather_elements(desc: DML_GATHER_ELEMENTS_OPERATOR_DESC, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    x, indices = inputs["InputTensor"], inputs["IndicesTensor"]
    return {"OutputTensor": np.take_along_axis(x, safe_indices(indices, x.shape[desc.Axis]), axis=desc.Axis)}


def _gather_nd(desc: DML_GATHER_ND_OPERATOR_DESC | DML_GATHER_ND1_OPERATOR_DESC, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    """output[batch, p, ...] = input[batch, *indices[batch, p, :], ...] over the meaningful dimensions."""
    batch = getattr(desc, "BatchDimensionCount", 0)
    x = _meaningful(inputs["InputTensor"], desc.InputDimensionCount)
    indices = _meaningful(inputs["IndicesTensor"], desc.IndicesDimensionCount)
    tuple_size = indices.shape[-1]
    xb = x.reshape((-1, *x.shape[batch:]))  # the batches flattened into one leading axis
    tuples = indices.reshape(xb.shape[0], -1, tuple_size)
    coordinates = [safe_indices(tuples[..., j], xb.shape[1 + j]) for j in range(tuple_size)]
    picked = xb[(np.arange(xb.shape[0])[:, None], *coordinates)]
    return {"OutputTensor": picked.reshape(_sizes(desc.OutputTensor))}


def _positions(indices: np.ndarray, size: int) -> np.ndarray:
    """Positions along an axis of ``size`` as int64, a negative index of a signed type counted from the end;
    one still outside ``[0, size)`` becomes -1 (ONE_HOT: all OffValue; the scatters: no write)."""
    if indices.dtype.kind == "u":
        i = np.minimum(indices, np.uint64(size)).astype(np.int64)
    else:
        i = indices.astype(np.int64)
        i = np.where(i < 0, i + size, i)
    return np.where((i >= 0) & (i < size), i, -1)


def _one_hot(desc: DML_ONE_HOT_OPERATOR_DESC, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    """OnValue where the position along Axis is the sequence's index, OffValue elsewhere (an out-of-range index:
    OffValue everywhere). OffValue is ValuesTensor's element 0; OnValue its element 1 along the fastest-changing
    dimension of size > 1, which is element 1 in row-major order."""
    indices, values = inputs["IndicesTensor"], inputs["ValuesTensor"].reshape(-1)
    depth = _sizes(desc.OutputTensor)[desc.Axis]
    positions = np.arange(depth).reshape([depth if d == desc.Axis else 1 for d in range(indices.ndim)])
    return {"OutputTensor": np.where(_positions(indices, depth) == positions, values[1], values[0])}


def _scatter(desc: DML_SCATTER_OPERATOR_DESC, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    """A copy of the input, then ``output[..., indices[i], ...] = updates[i]`` along Axis. Duplicate targets: the
    last update in row-major order wins; an index outside the axis writes nothing (docs/deviations.md)."""
    x, indices, updates = inputs["InputTensor"], inputs["IndicesTensor"], inputs["UpdatesTensor"]
    y = x.copy()
    where = list(np.indices(indices.shape, sparse=True))
    where[desc.Axis] = _positions(indices, x.shape[desc.Axis])
    where = np.broadcast_arrays(*where)
    keep = where[desc.Axis] >= 0
    y[tuple(w[keep] for w in where)] = updates[keep]
    return {"OutputTensor": y}


def _scatter_nd(desc: DML_SCATTER_ND_OPERATOR_DESC, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    """A copy of the input, then ``output[*indices[p, :], ...] = updates[p, ...]`` over the meaningful dimensions;
    as SCATTER for duplicates and indices outside a dimension."""
    x = inputs["InputTensor"]
    y = x.copy()
    target = _meaningful(y, desc.InputDimensionCount)  # a view: writes land in y
    indices = _meaningful(inputs["IndicesTensor"], desc.IndicesDimensionCount)
    tuple_size = indices.shape[-1]
    tuples = indices.reshape(-1, tuple_size)
    updates = inputs["UpdatesTensor"].reshape(tuples.shape[0], *target.shape[tuple_size:])
    coordinates = [_positions(tuples[:, j], target.shape[j]) for j in range(tuple_size)]
    keep = np.all([c >= 0 for c in coordinates], axis=0) if tuple_size else np.ones(tuples.shape[0], bool)
    target[tuple(c[keep] for c in coordinates)] = updates[keep]
    return {"OutputTensor": y}


KERNELS = (OP.JOIN, OP.SPLIT, OP.SLICE, OP.SLICE1, OP.PADDING, OP.PADDING1, OP.CAST, OP.GATHER, OP.GATHER_ELEMENTS, OP.GATHER_ND, OP.GATHER_ND1)
# The operators dmlpy/native/data_movement.c runs, every valid desc of them (all their types are whole bytes).
NATIVE = frozenset(KERNELS)

for _type, _class, _check, _kernel in (
    (OP.JOIN, DML_JOIN_OPERATOR_DESC, _check_join, _join),
    (OP.SPLIT, DML_SPLIT_OPERATOR_DESC, _check_split, _split),
    (OP.SLICE, DML_SLICE_OPERATOR_DESC, _check_slice, _slice),
    (OP.SLICE1, DML_SLICE1_OPERATOR_DESC, _check_slice, _slice),
    (OP.PADDING, DML_PADDING_OPERATOR_DESC, _check_padding, _padding),
    (OP.PADDING1, DML_PADDING1_OPERATOR_DESC, _check_padding, _padding),
    (OP.CAST, DML_CAST_OPERATOR_DESC, no_family_rules, _cast),
    (OP.TILE, DML_TILE_OPERATOR_DESC, _check_tile, None),
    (OP.GATHER, DML_GATHER_OPERATOR_DESC, _check_gather, _gather),
    (OP.GATHER_ELEMENTS, DML_GATHER_ELEMENTS_OPERATOR_DESC, _check_gather_elements, _gather_elements),
    (OP.GATHER_ND, DML_GATHER_ND_OPERATOR_DESC, _check_gather_nd, _gather_nd),
    (OP.GATHER_ND1, DML_GATHER_ND1_OPERATOR_DESC, _check_gather_nd, _gather_nd),
    (OP.ONE_HOT, DML_ONE_HOT_OPERATOR_DESC, _check_one_hot, _one_hot),
    (OP.SCATTER_ELEMENTS, DML_SCATTER_OPERATOR_DESC, _check_scatter, _scatter),
    (OP.SCATTER_ND, DML_SCATTER_ND_OPERATOR_DESC, _check_scatter_nd, _scatter_nd),
):
    register(OperatorSpec(_type, _class, OPERATORS[_type], _check, _kernel, native=_type in NATIVE, generic_rules=True))


__all__ = [
    "DML_CAST_OPERATOR_DESC",
    "DML_GATHER_ELEMENTS_OPERATOR_DESC",
    "DML_GATHER_ND1_OPERATOR_DESC",
    "DML_GATHER_ND_OPERATOR_DESC",
    "DML_GATHER_OPERATOR_DESC",
    "DML_JOIN_OPERATOR_DESC",
    "DML_ONE_HOT_OPERATOR_DESC",
    "DML_PADDING1_OPERATOR_DESC",
    "DML_PADDING_OPERATOR_DESC",
    "DML_SCATTER_ND_OPERATOR_DESC",
    "DML_SCATTER_OPERATOR_DESC",
    "DML_SLICE1_OPERATOR_DESC",
    "DML_SLICE_OPERATOR_DESC",
    "DML_SPLIT_OPERATOR_DESC",
    "DML_TILE_OPERATOR_DESC",
    "KERNELS",
    "NATIVE",
    "gather_nd_output_sizes",
    "gather_output_sizes",
    "safe_indices",
]
