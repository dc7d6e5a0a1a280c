"""Tensor descriptions: DML_TENSOR_DESC, DML_BUFFER_TENSOR_DESC, their size rule and checks.

Facts: the DML_BUFFER_TENSOR_DESC page and DirectML's helper functions. ``calc_buffer_tensor_size`` is the DirectMLX variant of
``DMLCalcBufferTensorSize``: it counts bits (so 4-bit types work), accumulates in 64 bits,
treats overflow as an error and rounds the result up to a multiple of 4 bytes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dmlpy.enums import DML_TENSOR_DATA_TYPE, DML_TENSOR_FLAGS, DML_TENSOR_TYPE
from dmlpy.errors import Severity, ints_argument
from dmlpy.rules import Checker, fmt, rule
from dmlpy.structs import UINT64_MAX, CStruct, Kind, c_field
from dmlpy.support import TensorSlot, TensorSupport, max_dimension_count

DT = DML_TENSOR_DATA_TYPE

ELEMENT_BITS: dict[DT, int] = {
    DT.FLOAT32: 32, DT.UINT32: 32, DT.INT32: 32,
    DT.FLOAT16: 16, DT.UINT16: 16, DT.INT16: 16,
    DT.UINT8: 8, DT.INT8: 8,
    DT.FLOAT64: 64, DT.UINT64: 64, DT.INT64: 64,
    DT.UINT4: 4, DT.INT4: 4,
}  # fmt: skip

_NUMPY_TYPES: dict[DT, np.dtype[Any]] = {
    DT.FLOAT32: np.dtype(np.float32), DT.FLOAT16: np.dtype(np.float16), DT.FLOAT64: np.dtype(np.float64),
    DT.UINT32: np.dtype(np.uint32), DT.UINT16: np.dtype(np.uint16), DT.UINT8: np.dtype(np.uint8),
    DT.UINT64: np.dtype(np.uint64), DT.INT32: np.dtype(np.int32), DT.INT16: np.dtype(np.int16),
    DT.INT8: np.dtype(np.int8), DT.INT64: np.dtype(np.int64),
}  # fmt: skip
_FROM_NUMPY = {dtype: data_type for data_type, dtype in _NUMPY_TYPES.items()}


def numpy_dtype(data_type: DT | int) -> np.dtype[Any]:
    """The NumPy dtype that stores ``data_type`` (little-endian; FLOAT16 is binary16)."""
    try:
        return _NUMPY_TYPES[DT(data_type)]
    except (KeyError, ValueError):
        msg = f"DML_TENSOR_DATA_TYPE {fmt(data_type)} has no NumPy dtype"
        raise ValueError(msg) from None


def as_data_type(dtype: Any, argument: str = "dtype") -> DT:
    """Accepts a DML_TENSOR_DATA_TYPE, its name (``'FLOAT32'``), or anything ``np.dtype`` takes; ``argument`` names it in the TypeError."""
    if isinstance(dtype, DT):
        return dtype
    if isinstance(dtype, str) and dtype.upper() in DT.__members__:
        return DT[dtype.upper()]
    if isinstance(dtype, int) and not isinstance(dtype, bool):
        try:
            return DT(dtype)
        except ValueError:
            msg = f"{argument} {dtype!r} is not a DML_TENSOR_DATA_TYPE value"
            raise ValueError(msg) from None
    try:
        return _FROM_NUMPY[np.dtype(dtype)]
    except (KeyError, TypeError):
        msg = f"{argument} {dtype!r} is not a data type DirectML has (give a DML_TENSOR_DATA_TYPE, its name such as 'FLOAT32', or a NumPy dtype)"
        raise TypeError(msg) from None


def cast_to_data_type(value: Any, data_type: DT | int, name: str) -> np.ndarray:
    """``value`` as an array of ``data_type``'s dtype, refusing every cast that changes a value.

    What survives: integers (and booleans) into an integer type when every value lies in its
    range, whatever the signedness; integers into a float type when every value is exactly
    representable; floats into a float type when no finite value overflows to infinity
    (rounding to the nearer representable float is accepted, as any float64-to-FLOAT32 copy
    rounds). Floats into an integer type, complex numbers, strings and objects are refused:
    ``TypeError`` for the kind, ``ValueError`` naming ``name`` and the first value that does
    not survive. Call ``astype`` first where wrapping or truncation is meant.
    """
    array = np.asarray(value)
    target = numpy_dtype(data_type)
    source = array.dtype
    if source == target and source.kind in "biuf":
        return array  # nothing to change, nothing to check
    type_name = DT(data_type).name
    integral = source.kind in "biu"
    if not (integral or (source.kind == "f" and target.kind == "f")):
        msg = f"{name}: cannot pass {source} data to a {type_name} tensor without an explicit astype"
        raise TypeError(msg)
    if array.size == 0 or source.kind == "b":
        return array.astype(target)
    if integral and target.kind in "iu":
        info = np.iinfo(target)
        low, high = int(array.min()), int(array.max())  # Python ints: no wrap-around in the comparison
        if low < info.min or high > info.max:
            bad = low if low < info.min else high
            msg = f"{name}: the value {bad} does not fit the tensor's {type_name} ({info.min} .. {info.max}); convert it explicitly with astype if wrapping is meant"
            raise ValueError(msg)
        return array.astype(target)
    with np.errstate(over="ignore", invalid="ignore"):
        cast = array.astype(target)
        if integral:
            # exact iff the float lies in the source type's range (where converting back is defined,
            # rather than wrapping or saturating by platform) and converts back to the same integer
            info = np.iinfo(source)
            inside = np.isfinite(cast) & (cast >= float(info.min)) & (cast < float(info.max) + 1)
            lost = ~inside | (np.where(inside, cast, 0).astype(source) != array)
        else:
            lost = np.isinf(cast) & np.isfinite(array)
    if lost.any():
        bad = array[lost].flat[0]
        reason = "is not exactly representable in" if integral else "overflows to infinity in"
        msg = f"{name}: the value {bad} {reason} the tensor's {type_name}; convert it explicitly with astype if that is meant"
        raise ValueError(msg)
    return cast


def element_size(data_type: DT | int) -> int:
    """Bytes per element, as DMLCalcBufferTensorSize's table has it (0 for unknown or 4-bit)."""
    bits = ELEMENT_BITS.get(DT(data_type), 0) if data_type in DT._value2member_map_ else 0
    return bits // 8 if bits % 8 == 0 else 0


def packed_strides(sizes: Sequence[int]) -> tuple[int, ...]:
    """Row-major element strides: what a NULL ``Strides`` means."""
    sizes = ints_argument("packed_strides", "sizes", sizes)
    strides = []
    running = 1
    for size in reversed(sizes):
        strides.append(running)
        running *= size
    return tuple(reversed(strides))


def nhwc_strides(sizes: Sequence[int]) -> tuple[int, ...]:
    """Element strides that lay out NCHW/NCDHW ``sizes`` as NHWC/NDHWC (channels innermost).

    DirectML keeps ``Sizes`` in NCHW order and expresses other layouts through strides
    (the DML_BUFFER_TENSOR_DESC page: sizes {1,1,3,5} -> strides {15,1,5,1}).
    """
    sizes = ints_argument("nhwc_strides", "sizes", sizes)
    if len(sizes) < 3:
        return packed_strides(sizes)
    order = [0, *range(2, len(sizes)), 1]  # memory order, outermost first
    strides = [0] * len(sizes)
    running = 1
    for axis in reversed(order):
        strides[axis] = running
        running *= sizes[axis]
    return tuple(strides)


# Exact enumeration of a layout's offsets is the last resort of layout_overlap; beyond this many index
# combinations (8 MB of offsets, well under a second to sort) the layout counts as overlapping.
OVERLAP_ENUMERATION_LIMIT = 1 << 20


def layout_overlap(sizes: Sequence[int], strides: Sequence[int]) -> str | None:
    """None when every logical index of the layout has its own element (one-to-one); otherwise why not, in words.

    Exact, whatever the strides: a zero or repeated stride, or more indices than the elements the
    layout spans, overlap; nested strides (each, in increasing order, beyond the farthest offset the
    smaller ones reach) do not. Dims that cannot collide with the others are set aside (a largest
    stride beyond the reach of all the others; a smallest dim whose span every other stride is a
    multiple of), and what remains is decided by enumerating its offsets, at most
    OVERLAP_ENUMERATION_LIMIT of them; a larger remainder (only for strides that are neither nested
    nor overlapping by the tests above) is reported as possibly overlapping.
    """
    dims = sorted((int(stride), int(size), axis) for axis, (size, stride) in enumerate(zip(sizes, strides, strict=True)) if size > 1)
    for stride, size, axis in dims:
        if stride == 0:
            return f"Strides[{axis}] is 0 over {size} indices"
    for (a, _, i), (b, _, j) in zip(dims, dims[1:], strict=False):
        if a == b:
            return f"Strides[{min(i, j)}] and Strides[{max(i, j)}] are both {a}"
    changed = True
    while changed and dims:
        changed = False
        below = sum((size - 1) * stride for stride, size, _ in dims[:-1])
        if dims[-1][0] > below:  # the largest stride passes everything the others reach
            dims.pop()
            changed = True
        elif len(dims) > 1 and all(stride % (dims[0][0] * dims[0][1]) == 0 for stride, _, _ in dims[1:]):
            dims.pop(0)  # offset mod (its stride * size) tells its index apart
            changed = True
    if not dims:
        return None
    count = math.prod(size for _, size, _ in dims)
    span = sum((size - 1) * stride for stride, size, _ in dims) + 1
    if count > span:
        return f"{count} indices of axes {sorted(axis for _, _, axis in dims)} reach only {span} elements"
    if count > OVERLAP_ENUMERATION_LIMIT:
        return f"axes {sorted(axis for _, _, axis in dims)} ({count} indices) are not proven one-to-one within {OVERLAP_ENUMERATION_LIMIT} offsets"
    grid = np.zeros((), dtype=np.int64)
    for stride, size, _ in dims:
        grid = np.add.outer(grid, np.arange(size, dtype=np.int64) * stride)
    flat = grid.ravel()
    order = np.argsort(flat, kind="stable")
    same = np.flatnonzero(flat[order][1:] == flat[order][:-1])
    if same.size == 0:
        return None
    first, second = (np.unravel_index(int(order[k]), grid.shape) for k in (same[0], same[0] + 1))
    index_a, index_b = [0] * len(sizes), [0] * len(sizes)
    for (_, _, axis), a, b in zip(dims, first, second, strict=True):
        index_a[axis], index_b[axis] = int(a), int(b)
    return f"indices {fmt(index_a)} and {fmt(index_b)} share element {int(flat[order[same[0]]])}"


def _checked(value: int, what: str) -> int:
    if value > UINT64_MAX:
        msg = f"buffer tensor size overflows UINT64 while computing {what}"
        raise ValueError(msg)
    return value


def calc_buffer_tensor_size(
    data_type: DT | int | Any,
    sizes: Sequence[int] | None,
    strides: Sequence[int] | None = None,
) -> int:
    """DMLCalcBufferTensorSize (DirectMLX variant): the minimum bytes a tensor's buffer range needs.

    Packed: product(sizes) elements. Strided: the last reachable element index
    ``sum((size - 1) * stride) + 1``. Then bits -> whole bytes -> round up to 4 (DMLCalcBufferTensorSize of DirectML's helper functions).
    Returns 0 for no dimensions, an unknown type, or (strided) a zero size; raises
    ``ValueError`` where DirectMLX would throw on overflow.
    """
    if isinstance(data_type, int) and not isinstance(data_type, DT):
        # DirectMLX's switch answers 0 for any value DirectML.h does not define
        data_type = DT._value2member_map_.get(int(data_type), DT.UNKNOWN)
    bits = ELEMENT_BITS.get(as_data_type(data_type, "data_type"), 0)
    # Python ints: NumPy integers would wrap at 32 or 64 bits
    sizes = () if sizes is None else ints_argument("calc_buffer_tensor_size", "sizes", sizes)
    strides = None if strides is None else ints_argument("calc_buffer_tensor_size", "strides", strides)
    if not sizes or bits == 0:
        return 0
    if strides is None:
        elements = 1
        for size in sizes:
            elements = _checked(elements * size, "the element count")
    else:
        if len(strides) != len(sizes):
            msg = f"calc_buffer_tensor_size: {len(strides)} strides for {len(sizes)} sizes"
            raise ValueError(msg)
        if any(size == 0 for size in sizes):
            return 0
        last_index = 0
        for size, stride in zip(sizes, strides, strict=True):
            last_index = _checked(last_index + _checked((size - 1) * stride, "an index"), "the last index")
        elements = _checked(last_index + 1, "the element count")
    total_bits = _checked(elements * bits, "the bit count")
    total_bytes = (total_bits + 7) // 8
    return _checked((total_bytes + 3) & ~3, "the 4-byte round-up")


@dataclass
class DML_BUFFER_TENSOR_DESC(CStruct):  # noqa: N801 - the C name
    DataType: DT | int = c_field(Kind.ENUM, DT.UNKNOWN, enum_type=DT)
    Flags: DML_TENSOR_FLAGS | int = c_field(Kind.FLAGS, DML_TENSOR_FLAGS.NONE, enum_type=DML_TENSOR_FLAGS)
    DimensionCount: int | None = c_field(Kind.DIMENSION_COUNT)
    Sizes: Sequence[int] | None = c_field(Kind.UINT_ARRAY, length="DimensionCount")
    Strides: Sequence[int] | None = c_field(Kind.UINT_ARRAY, length="DimensionCount", optional=True)
    TotalTensorSizeInBytes: int = c_field(Kind.UINT64)
    GuaranteedBaseOffsetAlignment: int = c_field(Kind.UINT)

    @property
    def element_strides(self) -> tuple[int, ...]:
        """``Strides``, or the packed strides a NULL means."""
        return tuple(self.Strides) if self.Strides is not None else packed_strides(self.Sizes or ())

    @property
    def dtype(self) -> np.dtype[Any]:
        return numpy_dtype(self.DataType)


@dataclass
class DML_TENSOR_DESC(CStruct):  # noqa: N801 - the C name
    Type: DML_TENSOR_TYPE | int = c_field(Kind.ENUM, DML_TENSOR_TYPE.BUFFER, enum_type=DML_TENSOR_TYPE)
    Desc: DML_BUFFER_TENSOR_DESC | None = c_field(Kind.DESC_POINTER)

    @property
    def buffer(self) -> DML_BUFFER_TENSOR_DESC:
        """The buffer desc behind this tensor desc (the only tensor type DirectML has)."""
        if not isinstance(self.Desc, DML_BUFFER_TENSOR_DESC):
            msg = "DML_TENSOR_DESC.Desc is not a DML_BUFFER_TENSOR_DESC"
            raise TypeError(msg)
        return self.Desc


def buffer_tensor(
    dtype: Any,
    sizes: Sequence[int],
    strides: Sequence[int] | None = None,
    flags: DML_TENSOR_FLAGS | int = DML_TENSOR_FLAGS.NONE,
    *,
    total_size: int | None = None,
    alignment: int = 0,
) -> DML_TENSOR_DESC:
    """A DML_TENSOR_DESC of type BUFFER with ``TotalTensorSizeInBytes`` from calc_buffer_tensor_size.

    ``dtype`` is a DML_TENSOR_DATA_TYPE or anything NumPy calls a dtype.
    """
    data_type = as_data_type(dtype)
    sizes = ints_argument("buffer_tensor", "sizes", sizes, minimum=None)  # a bad size is validation's to report
    strides = None if strides is None else ints_argument("buffer_tensor", "strides", strides, minimum=None)
    if total_size is None:
        total_size = calc_buffer_tensor_size(data_type, sizes, strides)
    return DML_TENSOR_DESC(
        DML_TENSOR_TYPE.BUFFER,
        DML_BUFFER_TENSOR_DESC(data_type, DML_TENSOR_FLAGS(flags), len(sizes), sizes, strides, total_size, alignment),
    )


# ---------------------------------------------------------------------------------------
# Tensor rules (docs/rules.md lists them)

TYPE = rule("TENSOR.TYPE", "A present tensor has Type DML_TENSOR_TYPE_BUFFER.", source="ns-directml-dml_tensor_desc")
DESC_NULL = rule("TENSOR.DESC_NULL", "A present DML_TENSOR_DESC points at a DML_BUFFER_TENSOR_DESC.", source="ns-directml-dml_tensor_desc")
REQUIRED = rule("TENSOR.REQUIRED", "A tensor that is not optional is present (not NULL).", source="each operator's desc page")
DATA_TYPE_UNKNOWN = rule("TENSOR.DATA_TYPE_UNKNOWN", "DataType is a known type other than UNKNOWN.", source="ne-directml-dml_tensor_data_type")
DATA_TYPE_SUPPORT = rule("TENSOR.DATA_TYPE_SUPPORT", "DataType is in the operator's tensor-support table at the device's feature level.", source="each operator's Tensor support table")
DIMENSION_COUNT_SUPPORT = rule("TENSOR.DIMENSION_COUNT_SUPPORT", "DimensionCount is in the operator's tensor-support range at the device's feature level.", source="each operator's Tensor support table")
DIMENSION_COUNT_MAX = rule("TENSOR.DIMENSION_COUNT_MAX", "DimensionCount is at most 5 before FL 3.0 and at most 8 from FL 3.0.", source="DML_TENSOR_DIMENSION_COUNT_MAX(1)")
SIZES_LENGTH = rule("TENSOR.SIZES_LENGTH", "Sizes is present and has DimensionCount entries.", source="ns-directml-dml_buffer_tensor_desc")
STRIDES_LENGTH = rule("TENSOR.STRIDES_LENGTH", "Strides is NULL or has DimensionCount entries.", source="ns-directml-dml_buffer_tensor_desc")
SIZE_ZERO = rule("TENSOR.SIZE_ZERO", "No Sizes entry is 0.", source="ns-directml-dml_buffer_tensor_desc")
ELEMENT_COUNT = rule("TENSOR.ELEMENT_COUNT", "A buffer tensor has at most 2^32 - 1 elements.", source="ns-directml-dml_buffer_tensor_desc")
SIZE_OVERFLOW = rule("TENSOR.SIZE_OVERFLOW", "The implied buffer size fits in UINT64 (DMLCalcBufferTensorSize would throw).", source="DirectMLX DMLCalcBufferTensorSize")
TOTAL_SIZE = rule("TENSOR.TOTAL_SIZE_TOO_SMALL", "TotalTensorSizeInBytes >= DMLCalcBufferTensorSize(DataType, DimensionCount, Sizes, Strides).", source="ns-directml-dml_buffer_tensor_desc")
TOTAL_SIZE_ALIGNMENT = rule(
    "TENSOR.TOTAL_SIZE_ALIGNMENT",
    "TotalTensorSizeInBytes is a multiple of 4 (bound buffers must be DWORD-sized; rejection of the desc itself is UNCONFIRMED).",
    source="dml-helper-functions; docs/deviations.md",
    severity=Severity.WARNING,
)
BASE_OFFSET_ALIGNMENT = rule("TENSOR.BASE_OFFSET_ALIGNMENT", "GuaranteedBaseOffsetAlignment is 0, or a power of two at least the element size.", source="ns-directml-dml_buffer_tensor_desc")
FLAGS = rule("TENSOR.FLAGS", "Flags has no bits other than DML_TENSOR_FLAG_OWNED_BY_DML (0x1).", source="ne-directml-dml_tensor_flags")
OUTPUT_OVERLAP = rule(
    "TENSOR.OUTPUT_OVERLAP",
    "An output's Strides give every logical index its own element; where two share one, dmlpy writes them in row-major logical order (the last index wins) on both backends.",
    source="ns-directml-dml_buffer_tensor_desc (strides express broadcasting and padding; overlapping outputs are not addressed); docs/deviations.md",
    severity=Severity.WARNING,
)
OWNED_OUTPUT = rule("TENSOR.OWNED_BY_DML_OUTPUT", "DML_TENSOR_FLAG_OWNED_BY_DML is set on input tensors only.", source="ne-directml-dml_tensor_flags")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def check_tensor(  # noqa: C901, PLR0912 - one short step per rule of docs/rules.md
    ctx: Checker,
    tensor: DML_TENSOR_DESC | None,
    path: str,
    slot: TensorSlot,
    support: TensorSupport | None,
) -> DML_BUFFER_TENSOR_DESC | None:
    """Check one tensor field; returns its buffer desc when it is usable by later steps."""
    if tensor is None:
        ctx.check(slot.optional, REQUIRED, path, actual=None, expected="a DML_TENSOR_DESC", message="is NULL, but this tensor is required")
        return None
    if not ctx.check(tensor.Type == DML_TENSOR_TYPE.BUFFER, TYPE, f"{path}.Type", actual=tensor.Type, expected=DML_TENSOR_TYPE.BUFFER):
        return None
    buf = tensor.Desc
    if not ctx.check(isinstance(buf, DML_BUFFER_TENSOR_DESC), DESC_NULL, f"{path}.Desc", actual=buf, expected="a DML_BUFFER_TENSOR_DESC"):
        return None
    assert isinstance(buf, DML_BUFFER_TENSOR_DESC)
    usable = True

    known_type = isinstance(buf.DataType, DT) and buf.DataType != DT.UNKNOWN
    ctx.check(known_type, DATA_TYPE_UNKNOWN, f"{path}.DataType", actual=buf.DataType, expected="a known DML_TENSOR_DATA_TYPE")
    usable &= known_type
    if known_type and support is not None and support.data_types is not None and buf.DataType not in support.data_types:
        ctx.fail(
            DATA_TYPE_SUPPORT, f"{path}.DataType", actual=buf.DataType, expected=list(support.data_types),
            message=f"is {fmt(buf.DataType)}, expected one of {fmt(list(support.data_types))} at DML_FEATURE_LEVEL_{ctx.feature_level.dotted.replace('.', '_')}",
        )  # fmt: skip

    count = buf.DimensionCount or 0
    limit = max_dimension_count(ctx.feature_level)
    ctx.check(count <= limit, DIMENSION_COUNT_MAX, f"{path}.DimensionCount", actual=count, expected=f"<= {limit}", why=f"the maximum at FL {ctx.feature_level.dotted}")
    if support is not None:
        low, high = support.dimension_counts
        if not ctx.check(
            low <= count <= high, DIMENSION_COUNT_SUPPORT, f"{path}.DimensionCount", actual=count, expected=f"{low} to {high}" if low != high else low,
            message=f"is {count}, expected {low}" + (f" to {high}" if low != high else "") + f" for this operator at FL {ctx.feature_level.dotted}",
        ):  # fmt: skip
            usable = False

    sizes = buf.Sizes
    if not ctx.check(sizes is not None and len(sizes) == count, SIZES_LENGTH, f"{path}.Sizes", actual=None if sizes is None else len(sizes), expected=count,
                     message=f"has {'no array' if sizes is None else _plural(len(sizes), 'entry')}, expected DimensionCount = {count} entries"):  # fmt: skip
        return None
    assert sizes is not None
    if buf.Strides is not None:
        usable &= ctx.check(len(buf.Strides) == count, STRIDES_LENGTH, f"{path}.Strides", actual=len(buf.Strides), expected=count,
                            message=f"has {_plural(len(buf.Strides), 'entry')}, expected NULL or DimensionCount = {count} entries")  # fmt: skip
    for i, size in enumerate(sizes):
        usable &= ctx.check(size != 0, SIZE_ZERO, f"{path}.Sizes[{i}]", actual=0, expected=">= 1", message="is 0; every size must be at least 1")
    elements = math.prod(sizes)
    ctx.check(elements <= 2**32 - 1, ELEMENT_COUNT, f"{path}.Sizes", actual=elements, expected="<= 4294967295", why="", message=f"give {elements} elements, more than the 2^32 - 1 a buffer tensor may have")

    if usable and known_type:
        try:
            minimum = calc_buffer_tensor_size(buf.DataType, sizes, buf.Strides)
        except ValueError as overflow:
            ctx.fail(SIZE_OVERFLOW, path, actual="overflow", expected="a size that fits UINT64", message=str(overflow))
            usable = False
        else:
            ctx.check(
                buf.TotalTensorSizeInBytes >= minimum, TOTAL_SIZE, f"{path}.TotalTensorSizeInBytes", actual=buf.TotalTensorSizeInBytes, expected=minimum,
                message=f"is {buf.TotalTensorSizeInBytes}, expected at least {minimum} = DMLCalcBufferTensorSize({fmt(buf.DataType)}, {fmt(sizes)}, {fmt(buf.Strides) if buf.Strides is not None else 'NULL'}) (rounded up to 4 bytes)",
            )  # fmt: skip
    ctx.check(buf.TotalTensorSizeInBytes % 4 == 0, TOTAL_SIZE_ALIGNMENT, f"{path}.TotalTensorSizeInBytes", actual=buf.TotalTensorSizeInBytes,
              expected=(buf.TotalTensorSizeInBytes + 3) & ~3, message=f"is {buf.TotalTensorSizeInBytes}, not a multiple of 4; bound buffer ranges must be DWORD-sized")  # fmt: skip

    alignment = buf.GuaranteedBaseOffsetAlignment
    if alignment:
        size = element_size(buf.DataType) if known_type else 0
        ok = alignment & (alignment - 1) == 0 and alignment >= size
        ctx.check(ok, BASE_OFFSET_ALIGNMENT, f"{path}.GuaranteedBaseOffsetAlignment", actual=alignment, expected=f"0 or a power of two >= {size}",
                  message=f"is {alignment}, expected 0 or a power of two at least the element size ({size} bytes)")  # fmt: skip

    flags = int(buf.Flags)
    ctx.check(flags & ~int(DML_TENSOR_FLAGS.OWNED_BY_DML) == 0, FLAGS, f"{path}.Flags", actual=hex(flags), expected="DML_TENSOR_FLAG_NONE or DML_TENSOR_FLAG_OWNED_BY_DML")
    if slot.kind == "output" and usable and buf.Strides is not None:
        overlap = layout_overlap(sizes, buf.Strides)
        ctx.check(overlap is None, OUTPUT_OVERLAP, f"{path}.Strides", actual=list(buf.Strides), expected="strides that give every index its own element",
                  message=f"{fmt(buf.Strides)} for Sizes {fmt(sizes)}: {overlap}; the outputs sharing an element are written in row-major order, the last one wins")  # fmt: skip
    if slot.kind == "output":
        ctx.check(not flags & DML_TENSOR_FLAGS.OWNED_BY_DML, OWNED_OUTPUT, f"{path}.Flags", actual="DML_TENSOR_FLAG_OWNED_BY_DML", expected="DML_TENSOR_FLAG_NONE",
                  message="sets DML_TENSOR_FLAG_OWNED_BY_DML on an output tensor; only inputs may be owned by DirectML")  # fmt: skip
    return buf if usable else None


def is_owned_by_dml(tensor: DML_TENSOR_DESC | None) -> bool:
    return tensor is not None and isinstance(tensor.Desc, DML_BUFFER_TENSOR_DESC) and bool(int(tensor.Desc.Flags) & DML_TENSOR_FLAGS.OWNED_BY_DML)


__all__ = [
    "DML_BUFFER_TENSOR_DESC",
    "DML_TENSOR_DESC",
    "ELEMENT_BITS",
    "as_data_type",
    "buffer_tensor",
    "calc_buffer_tensor_size",
    "cast_to_data_type",
    "check_tensor",
    "element_size",
    "is_owned_by_dml",
    "layout_overlap",
    "nhwc_strides",
    "numpy_dtype",
    "packed_strides",
]
