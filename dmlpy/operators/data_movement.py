"""Data movement: JOIN, SPLIT, SLICE, SLICE1, PADDING, PADDING1, TILE, GATHER, GATHER_ELEMENTS, GATHER_ND.

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
docs/deviations.md). Every ``Axis`` is below the
tensors' DimensionCount, and every per-dimension array has DimensionCount entries.
"""

from __future__ import annotations

from typing import Any

from dmlpy.enums import DML_OPERATOR_TYPE
from dmlpy.operators import OperatorSpec, register
from dmlpy.operators.descs.data_movement import (
    DML_GATHER_ELEMENTS_OPERATOR_DESC,
    DML_GATHER_ND_OPERATOR_DESC,
    DML_GATHER_OPERATOR_DESC,
    DML_JOIN_OPERATOR_DESC,
    DML_PADDING1_OPERATOR_DESC,
    DML_PADDING_OPERATOR_DESC,
    DML_SLICE1_OPERATOR_DESC,
    DML_SLICE_OPERATOR_DESC,
    DML_SPLIT_OPERATOR_DESC,
    DML_TILE_OPERATOR_DESC,
)
from dmlpy.rules import Checker, fmt, rule
from dmlpy.support import OPERATORS
from dmlpy.tensor import DML_BUFFER_TENSOR_DESC

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
GATHER_AXIS = rule("GATHER_ELEMENTS.AXIS_RANGE", "Axis is below the tensors' DimensionCount.", source=_page("gather_elements"))
GATHER_OUTPUT = rule("GATHER_ELEMENTS.OUTPUT_SIZE", "OutputTensor.Sizes equal IndicesTensor.Sizes.", source=_page("gather_elements"))


def _axis_ok(ctx: Checker, rule_: Any, axis: int, rank: int, path: str) -> bool:
    return ctx.check(0 <= axis < rank, rule_, f"{path}.Axis", actual=axis, expected=f"0..{rank - 1}",
                     message=f"is {axis}, expected an axis below the tensors' DimensionCount {rank}")  # fmt: skip


def _sizes_along_axis(ctx: Checker, desc: Any, path: str, whole_name: str, whole: DML_BUFFER_TENSOR_DESC | None,
                      parts_name: str, parts: list[DML_BUFFER_TENSOR_DESC | None], axis_rule: Any, sizes_rule: Any) -> list[int] | None:  # fmt: skip
    """JOIN's inputs and SPLIT's outputs ("parts") match the other tensor off the axis; returns their sizes along it."""
    if whole is None or whole.Sizes is None or not parts or any(p is None for p in parts):
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
    if along is not None:
        actual, axis = y.Sizes[desc.Axis], desc.Axis
        ctx.check(actual == sum(along), JOIN_OUTPUT, f"{path}.OutputTensor.Sizes[{axis}]", actual=actual, expected=sum(along),
                  message=f"is {actual}, expected the inputs' sum {' + '.join(map(str, along))} = {sum(along)}")  # fmt: skip


def _check_split(ctx: Checker, desc: DML_SPLIT_OPERATOR_DESC, path: str, buffers: dict[str, Any]) -> None:
    x = buffers["InputTensor"]
    along = _sizes_along_axis(ctx, desc, path, "InputTensor", x, "OutputTensors", buffers["OutputTensors"], SPLIT_AXIS, SPLIT_SIZES)
    if along is not None:
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


def gather_nd_output_sizes(input_sizes: tuple[int, ...], indices_sizes: tuple[int, ...], input_count: int, indices_count: int, rank: int) -> tuple[int, ...] | None:
    """GATHER_ND's OutputTensor.Sizes of DimensionCount ``rank`` (the page's examples), or None when they do not fit."""
    tuple_size = indices_sizes[-1]
    full = tuple(indices_sizes[len(indices_sizes) - indices_count : -1]) + tuple(input_sizes[len(input_sizes) - input_count + tuple_size :])
    while len(full) > rank and full[0] == 1:
        full = full[1:]
    return None if len(full) > rank else (1,) * (rank - len(full)) + full


def _check_gather_nd(ctx: Checker, desc: DML_GATHER_ND_OPERATOR_DESC, path: str, buffers: dict[str, Any]) -> None:
    x, indices, y = buffers["InputTensor"], buffers["IndicesTensor"], buffers["OutputTensor"]
    if x is None or indices is None or y is None or not (x.DimensionCount == indices.DimensionCount == y.DimensionCount):
        return  # TENSOR.SAME_DIMENSION_COUNT
    rank, input_count, indices_count = x.DimensionCount, desc.InputDimensionCount, desc.IndicesDimensionCount
    ok = ctx.check(1 <= input_count <= rank, ND_INPUT_COUNT, f"{path}.InputDimensionCount", actual=input_count, expected=f"1..{rank}",
                   message=f"is {input_count}, expected 1 to InputTensor.DimensionCount = {rank}")  # fmt: skip
    ok &= ctx.check(1 <= indices_count <= rank, ND_INDICES_COUNT, f"{path}.IndicesDimensionCount", actual=indices_count, expected=f"1..{rank}",
                    message=f"is {indices_count}, expected 1 to IndicesTensor.DimensionCount = {rank}")  # fmt: skip
    if not ok:
        return
    tuple_size = indices.Sizes[-1]
    if not ctx.check(tuple_size <= input_count, ND_TUPLE, f"{path}.IndicesTensor.Sizes[{rank - 1}]", actual=tuple_size, expected=f"<= {input_count}",
                     message=f"is {tuple_size}: index tuples of {tuple_size} coordinates, more than InputDimensionCount = {input_count}"):  # fmt: skip
        return
    expected = gather_nd_output_sizes(tuple(x.Sizes), tuple(indices.Sizes), input_count, indices_count, rank)
    formula = (f"{{IndicesTensor.Sizes[{rank - indices_count}..{rank - 2}], InputTensor.Sizes[{rank - input_count + tuple_size}..{rank - 1}]}}")
    ctx.check(expected is not None and tuple(y.Sizes) == expected, ND_OUTPUT_SIZE, f"{path}.OutputTensor.Sizes", actual=tuple(y.Sizes), expected=expected,
              message=(f"is {fmt(list(y.Sizes))}, expected {fmt(list(expected))} = {formula} right-aligned to {rank} dimensions" if expected is not None
                       else f"has {rank} dimensions, too few for {formula}"))  # fmt: skip


def _check_gather_elements(ctx: Checker, desc: DML_GATHER_ELEMENTS_OPERATOR_DESC, path: str, buffers: dict[str, Any]) -> None:
    x, indices, y = buffers["InputTensor"], buffers["IndicesTensor"], buffers["OutputTensor"]
    if x is None or indices is None or y is None or not (x.DimensionCount == indices.DimensionCount == y.DimensionCount):
        return
    if _axis_ok(ctx, GATHER_AXIS, desc.Axis, x.DimensionCount, path):
        ctx.check(tuple(y.Sizes) == tuple(indices.Sizes), GATHER_OUTPUT, f"{path}.OutputTensor.Sizes", actual=tuple(y.Sizes), expected=tuple(indices.Sizes), why="IndicesTensor.Sizes")


for _type, _class, _check in (
    (OP.JOIN, DML_JOIN_OPERATOR_DESC, _check_join),
    (OP.SPLIT, DML_SPLIT_OPERATOR_DESC, _check_split),
    (OP.SLICE, DML_SLICE_OPERATOR_DESC, _check_slice),
    (OP.SLICE1, DML_SLICE1_OPERATOR_DESC, _check_slice),
    (OP.PADDING, DML_PADDING_OPERATOR_DESC, _check_padding),
    (OP.PADDING1, DML_PADDING1_OPERATOR_DESC, _check_padding),
    (OP.TILE, DML_TILE_OPERATOR_DESC, _check_tile),
    (OP.GATHER, DML_GATHER_OPERATOR_DESC, _check_gather),
    (OP.GATHER_ELEMENTS, DML_GATHER_ELEMENTS_OPERATOR_DESC, _check_gather_elements),
    (OP.GATHER_ND, DML_GATHER_ND_OPERATOR_DESC, _check_gather_nd),
):
    register(OperatorSpec(_type, _class, OPERATORS[_type], _check, generic_rules=True))

__all__ = [
    "DML_GATHER_ELEMENTS_OPERATOR_DESC",
    "DML_GATHER_ND_OPERATOR_DESC",
    "DML_GATHER_OPERATOR_DESC",
    "DML_JOIN_OPERATOR_DESC",
    "DML_PADDING1_OPERATOR_DESC",
    "DML_PADDING_OPERATOR_DESC",
    "DML_SLICE1_OPERATOR_DESC",
    "DML_SLICE_OPERATOR_DESC",
    "DML_SPLIT_OPERATOR_DESC",
    "DML_TILE_OPERATOR_DESC",
]
