"""The C data-movement kernels (dmlpy/native/data_movement.c) give the NumPy kernels' bytes.

The NumPy kernels of dmlpy/operators/data_movement.py are the oracle here (they are tested against
onnxruntime and the pages' examples in test_data_movement_kernels.py): every case runs on the NumPy
backend and on the native backend with one and with two threads, and the three outputs must be the
same bits. Inputs are random bit patterns of all 11 numeric types (NaNs with payloads, infinities,
subnormals and negative zeros included), in random layouts: packed, NHWC, padded rows, reversed
(column-major) and, for inputs, broadcast (stride 0).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from conftest import native_device

import dmlpy
from dmlpy import buffer_tensor
from dmlpy.enums import DML_PADDING_MODE as MODE
from dmlpy.operators import REGISTRY
from dmlpy.operators.data_movement import (
    DML_CAST_OPERATOR_DESC,
    DML_GATHER_ELEMENTS_OPERATOR_DESC,
    DML_GATHER_ND1_OPERATOR_DESC,
    DML_GATHER_ND_OPERATOR_DESC,
    DML_GATHER_OPERATOR_DESC,
    DML_JOIN_OPERATOR_DESC,
    DML_PADDING1_OPERATOR_DESC,
    DML_PADDING_OPERATOR_DESC,
    DML_SLICE1_OPERATOR_DESC,
    DML_SLICE_OPERATOR_DESC,
    DML_SPLIT_OPERATOR_DESC,
    NATIVE,
    gather_nd_output_sizes,
    gather_output_sizes,
)
from dmlpy.structs import DML_SCALAR_UNION

TYPES = [np.float32, np.float16, np.float64, np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32, np.uint64, np.int64]
INDEX_TYPES = [np.uint32, np.int32, np.uint64, np.int64]
CASES = 40  # random cases per operator


def random_bits(rng: np.random.Generator, dtype: Any, sizes: tuple[int, ...]) -> np.ndarray:
    """Every bit pattern of the type: NaN payloads, infinities, subnormals, negative zeros."""
    dtype = np.dtype(dtype)
    raw = rng.integers(0, 256, size=math.prod(sizes) * dtype.itemsize, dtype=np.uint8)
    return raw.view(dtype).reshape(sizes)


def layout(rng: np.random.Generator, sizes: tuple[int, ...], *, broadcast: bool) -> tuple[tuple[int, ...] | None, tuple[int, ...]]:
    """(strides, broadcast dims): packed, NHWC, padded rows, column-major, or (inputs) stride 0 on some dims."""
    kinds = ["packed", "nhwc", "padded", "reversed"] + (["broadcast"] if broadcast else [])
    kind = kinds[int(rng.integers(0, len(kinds)))]
    if kind == "nhwc" and len(sizes) >= 3:
        return dmlpy.nhwc_strides(sizes), ()
    if kind == "padded":
        padded = list(sizes)
        padded[-1] += int(rng.integers(1, 4))
        if len(sizes) > 1:
            padded[-2] += int(rng.integers(0, 2))
        strides = dmlpy.packed_strides(padded)
        return tuple(strides), ()
    if kind == "reversed":
        strides, running = [0] * len(sizes), 1
        for d in range(len(sizes)):
            strides[d] = running
            running *= sizes[d]
        return tuple(strides), ()
    if kind == "broadcast":
        dims = tuple(d for d in range(len(sizes)) if rng.integers(0, 3) == 0) or (int(rng.integers(0, len(sizes))),)
        strides = list(dmlpy.packed_strides(sizes))
        for d in dims:
            strides[d] = 0
        return tuple(strides), dims
    return None, ()


def tensor_and_values(rng: np.random.Generator, dtype: Any, sizes: tuple[int, ...], *, broadcast: bool = True, values: np.ndarray | None = None) -> tuple[Any, np.ndarray]:
    """A tensor desc in a random layout and matching values (constant along broadcast dims)."""
    strides, dims = layout(rng, sizes, broadcast=broadcast)
    x = random_bits(rng, dtype, sizes) if values is None else values
    if dims:
        x = np.broadcast_to(x[tuple(slice(0, 1) if d in dims else slice(None) for d in range(len(sizes)))], sizes)
    return buffer_tensor(dtype, sizes, strides), x


def out_tensor(rng: np.random.Generator, dtype: Any, sizes: tuple[int, ...]) -> Any:
    return tensor_and_values(rng, dtype, sizes, broadcast=False)[0]


def same_bits(a: Any, b: Any) -> bool:
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(same_bits(x, y) for x, y in zip(a, b, strict=True))
    return a.shape == b.shape and a.dtype == b.dtype and np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def assert_native_is_numpy(desc: Any, **inputs: Any) -> None:
    """NumPy backend, native with one thread and with two: the same bits."""
    spec = next(s for s in REGISTRY.values() if s.desc_class is type(desc))
    assert spec.runs_natively(desc)
    expected = dmlpy.run(desc, backend="numpy", **inputs)
    for threads in (1, 2):
        got = dmlpy.run(desc, device=native_device(threads), **inputs)
        assert same_bits(got, expected), (threads, desc)


def flip(x: np.ndarray, bits: int) -> np.ndarray:
    """x with some bits of every FLOAT32 element flipped (arithmetic would warn on signaling NaNs)."""
    return (x.view(np.uint32) ^ np.uint32(bits)).view(np.float32)


def random_sizes(rng: np.random.Generator, *, most: int = 5, low: int = 1) -> tuple[int, ...]:
    rank = int(rng.integers(1, 6)) if rng.integers(0, 8) else int(rng.integers(6, 9))
    return tuple(int(rng.integers(low, most + 1)) for _ in range(rank)) if rank <= 5 else tuple(int(rng.integers(1, 3)) for _ in range(rank))


def pick(rng: np.random.Generator, values: list[Any]) -> Any:
    return values[int(rng.integers(0, len(values)))]


# ---------------------------------------------------------------------------------------
# Random cases per operator


def join_case(rng: np.random.Generator) -> tuple[Any, dict[str, Any]]:
    dtype, sizes = pick(rng, TYPES), random_sizes(rng)
    axis = int(rng.integers(0, len(sizes)))
    parts = [tuple(int(rng.integers(1, 5)) if d == axis else s for d, s in enumerate(sizes)) for _ in range(int(rng.integers(1, 5)))]
    tensors, values = zip(*(tensor_and_values(rng, dtype, p) for p in parts), strict=True)
    out = tuple(sum(p[axis] for p in parts) if d == axis else s for d, s in enumerate(sizes))
    return DML_JOIN_OPERATOR_DESC(None, list(tensors), out_tensor(rng, dtype, out), axis), {"InputTensors": list(values)}


def split_case(rng: np.random.Generator) -> tuple[Any, dict[str, Any]]:
    dtype, sizes = pick(rng, TYPES), random_sizes(rng)
    axis = int(rng.integers(0, len(sizes)))
    lengths = [int(rng.integers(1, 5)) for _ in range(int(rng.integers(1, 5)))]
    whole = tuple(sum(lengths) if d == axis else s for d, s in enumerate(sizes))
    x_tensor, x = tensor_and_values(rng, dtype, whole)
    outs = [out_tensor(rng, dtype, tuple(n if d == axis else s for d, s in enumerate(sizes))) for n in lengths]
    return DML_SPLIT_OPERATOR_DESC(x_tensor, None, outs, axis), {"InputTensor": x}


def slice_case(rng: np.random.Generator) -> tuple[Any, dict[str, Any]]:
    dtype, sizes = pick(rng, TYPES), random_sizes(rng, most=7)
    x_tensor, x = tensor_and_values(rng, dtype, sizes)
    offsets, counts, strides = [], [], []
    for n in sizes:
        stride = int(rng.integers(0, 4))
        offset = int(rng.integers(0, n))
        most = 1 + (n - 1 - offset) // stride if stride else 4
        counts.append(int(rng.integers(1, most + 1)))
        offsets.append(offset)
        strides.append(stride)
    return DML_SLICE_OPERATOR_DESC(x_tensor, out_tensor(rng, dtype, tuple(counts)), None, offsets, counts, strides), {"InputTensor": x}


def slice1_case(rng: np.random.Generator) -> tuple[Any, dict[str, Any]]:
    dtype, sizes = pick(rng, TYPES), random_sizes(rng, most=7)
    x_tensor, x = tensor_and_values(rng, dtype, sizes)
    offsets, windows, strides, counts = [], [], [], []
    for n in sizes:
        offset = int(rng.integers(0, n))
        window = int(rng.integers(1, n - offset + 1))
        stride = int(rng.integers(1, 4)) * (1 if rng.integers(0, 2) else -1)
        offsets.append(offset)
        windows.append(window)
        strides.append(stride)
        counts.append(int(rng.integers(1, 1 + (window - 1) // abs(stride) + 1)))
    return DML_SLICE1_OPERATOR_DESC(x_tensor, out_tensor(rng, dtype, tuple(counts)), None, offsets, windows, strides), {"InputTensor": x}


def padding_case(rng: np.random.Generator, *, first: bool) -> tuple[Any, dict[str, Any]]:
    dtype, sizes = pick(rng, TYPES), random_sizes(rng, most=4)
    x_tensor, x = tensor_and_values(rng, dtype, sizes)
    mode = MODE(int(rng.integers(0, 5)))
    start = [int(rng.integers(0, 4)) for _ in sizes]
    end = [int(rng.integers(0, 4)) for _ in sizes]
    y = out_tensor(rng, dtype, tuple(n + a + b for n, a, b in zip(sizes, start, end, strict=True)))
    if first:
        value = float(pick(rng, [np.float32(rng.normal() * 1e3), np.float32(-3.75), np.float32("nan"), np.float32(1e30), np.float32(-7e9), np.float32(65519.0)]))
        return DML_PADDING_OPERATOR_DESC(x_tensor, y, mode, value, None, start, end), {"InputTensor": x}
    union = DML_SCALAR_UNION(Bytes=random_bits(rng, np.uint8, (8,)).tobytes())
    dt = dmlpy.buffer_tensor(dtype, (1,)).Desc.DataType
    return DML_PADDING1_OPERATOR_DESC(x_tensor, y, mode, dt, union, None, start, end), {"InputTensor": x}


def cast_case(rng: np.random.Generator, src: Any = None, dst: Any = None) -> tuple[Any, dict[str, Any]]:
    src = pick(rng, TYPES) if src is None else src
    dst = pick(rng, TYPES) if dst is None else dst
    sizes = random_sizes(rng, most=6)
    x_tensor, x = tensor_and_values(rng, src, sizes)
    return DML_CAST_OPERATOR_DESC(x_tensor, out_tensor(rng, dst, sizes)), {"InputTensor": x}


def indices(rng: np.random.Generator, index_type: Any, sizes: tuple[int, ...], size: int) -> np.ndarray:
    """Indices inside the axis and outside it on both sides (negative ones only for signed types)."""
    low = -2 * size - 1 if np.dtype(index_type).kind == "i" else 0
    values = rng.integers(low, 2 * size + 2, size=sizes)
    big = np.iinfo(index_type)
    values = np.where(rng.integers(0, 10, size=sizes) == 0, big.max, values)
    if np.dtype(index_type).kind == "i":
        values = np.where(rng.integers(0, 10, size=sizes) == 0, big.min, values)
    return values.astype(index_type)


def gather_case(rng: np.random.Generator) -> tuple[Any, dict[str, Any]]:
    while True:
        dtype, sizes = pick(rng, TYPES), random_sizes(rng, most=4)
        rank = len(sizes)
        axis, count = int(rng.integers(0, rank)), int(rng.integers(0, rank + 1))
        index_sizes = tuple(int(rng.integers(1, 4)) if d >= rank - count or rng.integers(0, 4) == 0 else 1 for d in range(rank))
        out = gather_output_sizes(sizes, index_sizes, axis, count, rank)
        if out is not None:
            break
    index_type = pick(rng, INDEX_TYPES)
    x_tensor, x = tensor_and_values(rng, dtype, sizes)
    i_tensor, i = tensor_and_values(rng, index_type, index_sizes, values=indices(rng, index_type, index_sizes, sizes[axis]))
    desc = DML_GATHER_OPERATOR_DESC(x_tensor, i_tensor, out_tensor(rng, dtype, out), axis, count)
    return desc, {"InputTensor": x, "IndicesTensor": i}


def gather_elements_case(rng: np.random.Generator) -> tuple[Any, dict[str, Any]]:
    dtype, sizes = pick(rng, TYPES), random_sizes(rng, most=4)
    axis = int(rng.integers(0, len(sizes)))
    index_sizes = tuple(int(rng.integers(1, 5)) if d == axis else s for d, s in enumerate(sizes))
    index_type = pick(rng, INDEX_TYPES)
    x_tensor, x = tensor_and_values(rng, dtype, sizes)
    i_tensor, i = tensor_and_values(rng, index_type, index_sizes, values=indices(rng, index_type, index_sizes, sizes[axis]))
    desc = DML_GATHER_ELEMENTS_OPERATOR_DESC(x_tensor, i_tensor, out_tensor(rng, dtype, index_sizes), axis)
    return desc, {"InputTensor": x, "IndicesTensor": i}


def gather_nd_case(rng: np.random.Generator, *, first: bool) -> tuple[Any, dict[str, Any]]:
    """Meaningful dims after leading 1s (the pages' examples); ND1 with batch dims of equal sizes."""
    while True:
        rank = int(rng.integers(1, 6))
        ix, ic = int(rng.integers(1, rank + 1)), int(rng.integers(1, rank + 1))
        batch = 0 if first else int(rng.integers(0, min(ix, ic)))
        tuple_size = int(rng.integers(1, ix - batch + 1))
        x_sizes = [1] * (rank - ix) + [int(rng.integers(1, 4)) for _ in range(ix)]
        i_sizes = [1] * (rank - ic) + [int(rng.integers(1, 4)) for _ in range(ic - 1)] + [tuple_size]
        for b in range(batch):
            i_sizes[rank - ic + b] = x_sizes[rank - ix + b]
        out = gather_nd_output_sizes(tuple(x_sizes), tuple(i_sizes), ix, ic, rank, batch)
        if out is not None:
            break
    dtype, index_type = pick(rng, TYPES), pick(rng, INDEX_TYPES)
    x_tensor, x = tensor_and_values(rng, dtype, tuple(x_sizes))
    # each coordinate j indexes input dim rank - ix + batch + j: draw it inside and outside that axis
    values = np.stack([indices(rng, index_type, tuple(i_sizes[:-1]), x_sizes[rank - ix + batch + j]) for j in range(tuple_size)], axis=-1)
    i_tensor, i = tensor_and_values(rng, index_type, tuple(i_sizes), values=values)
    y = out_tensor(rng, dtype, out)
    desc = DML_GATHER_ND_OPERATOR_DESC(x_tensor, i_tensor, y, ix, ic) if first else DML_GATHER_ND1_OPERATOR_DESC(x_tensor, i_tensor, y, ix, ic, batch)
    return desc, {"InputTensor": x, "IndicesTensor": i}


MAKERS = {
    "JOIN": join_case,
    "SPLIT": split_case,
    "SLICE": slice_case,
    "SLICE1": slice1_case,
    "PADDING": lambda rng: padding_case(rng, first=True),
    "PADDING1": lambda rng: padding_case(rng, first=False),
    "CAST": cast_case,
    "GATHER": gather_case,
    "GATHER_ELEMENTS": gather_elements_case,
    "GATHER_ND": lambda rng: gather_nd_case(rng, first=True),
    "GATHER_ND1": lambda rng: gather_nd_case(rng, first=False),
}


def test_every_operator_with_a_c_kernel_has_random_cases_here() -> None:
    assert {t.name for t in NATIVE} == set(MAKERS)
    assert all(REGISTRY[t].native and REGISTRY[t].native_covers is None for t in NATIVE)


@pytest.mark.parametrize(
    ("dtype", "lengths"),
    [
        pytest.param(np.float32, (1_000_003, 1_000_001), id="FLOAT32 runs of 4 MB whose second starts off a 16-byte boundary"),
        pytest.param(np.uint8, (4_194_301, 7, 5), id="UINT8 runs with heads and tails of 1 to 15 bytes"),
        pytest.param(np.float16, (3, 2_097_155), id="FLOAT16: a short run, then a long one at a 6-byte offset"),
    ],
)
def test_native_join_streams_long_runs_to_any_alignment_with_the_numpy_kernels_bits(dtype: Any, lengths: tuple[int, ...]) -> None:
    """Outputs of 4 MB and more (that the last-level cache cannot hold either, with -DDM_STREAM_USE_LLC=1) are
    copied with non-temporal stores in runs of 4 KB and more: every head and tail byte of each run is still
    written, once."""
    rng = np.random.default_rng(len(lengths))
    parts = [random_bits(rng, dtype, (n,)) for n in lengths]
    desc = DML_JOIN_OPERATOR_DESC(len(parts), [buffer_tensor(dtype, (n,)) for n in lengths], buffer_tensor(dtype, (sum(lengths),)), 0)
    assert_native_is_numpy(desc, InputTensors=parts)
    split = DML_SPLIT_OPERATOR_DESC(buffer_tensor(dtype, (sum(lengths),)), len(parts), [buffer_tensor(dtype, (n,)) for n in lengths], 0)
    assert_native_is_numpy(split, InputTensor=np.concatenate(parts))


@pytest.mark.parametrize("mode", list(MODE), ids=lambda m: m.name)
@pytest.mark.parametrize(("dtype", "sizes", "start", "end"), [
    pytest.param(np.float64, (1, 3, 300, 301), (0, 1, 2, 3), (0, 2, 1, 0), id="FLOAT64 rows of 305: every row at another offset in its lines"),
    pytest.param(np.int32, (2, 5, 211, 499), (1, 0, 3, 1), (0, 1, 0, 2), id="INT32 rows of 502, padded batches and channels"),
    pytest.param(np.float32, (1, 5, 517, 507), (0, 0, 1, 2), (0, 1, 2, 2), id="FLOAT32 rows of 511: rows start at each 4-byte offset of a 16-byte unit"),
])  # fmt: skip
def test_native_padding_of_large_outputs_streams_every_row_with_the_numpy_kernels_bits(mode: MODE, dtype: Any, sizes: tuple[int, ...], start: tuple[int, ...], end: tuple[int, ...]) -> None:
    """Outputs of 4- or 8-byte elements of 4 MB and more (and that the last-level cache cannot hold, with
    -DDM_STREAM_USE_LLC=1) are written with non-temporal stores only."""
    x = random_bits(np.random.default_rng(3), dtype, sizes)
    out = tuple(n + a + b for n, a, b in zip(sizes, start, end, strict=True))
    union = DML_SCALAR_UNION(Bytes=bytes(range(1, 9)))
    desc = DML_PADDING1_OPERATOR_DESC(buffer_tensor(dtype, sizes), buffer_tensor(dtype, out), mode, buffer_tensor(dtype, (1,)).Desc.DataType, union, 4, list(start), list(end))
    assert_native_is_numpy(desc, InputTensor=x)


@pytest.mark.parametrize("seed", range(CASES))
@pytest.mark.parametrize("operator", list(MAKERS))
def test_native_gives_the_numpy_kernels_bits_on_random_shapes_layouts_and_types(operator: str, seed: int) -> None:
    desc, inputs = MAKERS[operator](np.random.default_rng([0xDA7A, len(operator), seed]))
    assert_native_is_numpy(desc, **inputs)


@pytest.mark.parametrize("dst", TYPES, ids=lambda t: f"to {np.dtype(t).name.upper()}")
@pytest.mark.parametrize("src", TYPES, ids=lambda t: f"CAST from {np.dtype(t).name.upper()}")
def test_native_cast_gives_the_numpy_kernels_bits_for_every_pair_of_types(src: Any, dst: Any) -> None:
    """Random bits (NaN payloads, infinities, out-of-range floats) of each of the 121 pairs, and the edges
    of rounding and saturation."""
    rng = np.random.default_rng([TYPES.index(src), TYPES.index(dst)])
    desc, inputs = cast_case(rng, src, dst)
    assert_native_is_numpy(desc, **inputs)
    if np.dtype(src).kind == "f":
        edges = [0.5, 1.5, 2.5, -0.5, -2.5, 65504, 65519.996, 65520, -65520, 2.0**-24, 2.0**-25, 3 * 2.0**-26, 127.9, 128, -128.5, -129,
                 255.5, 256, 2.0**31, -(2.0**31) - 1, 2.0**32, 2.0**63, -(2.0**63), 2.0**64, 1e300, -1e300, 0.0, -0.0, math.inf, -math.inf, math.nan]  # fmt: skip
        with np.errstate(over="ignore"):
            x = np.array(edges, np.float64).astype(src)
    else:
        info = np.iinfo(src)
        x = np.array([info.min, info.max, 0, 1, -1 if info.min else 2, 2049, 65519, 65520, 16777217, 2**53 + 1 if info.bits == 64 else 3], np.int64 if info.min else np.uint64)
        x = x.astype(src)
    desc = DML_CAST_OPERATOR_DESC(buffer_tensor(src, x.shape), buffer_tensor(dst, x.shape))
    assert_native_is_numpy(desc, InputTensor=x)


@pytest.mark.parametrize(
    ("name", "make"),
    [
        pytest.param("JOIN", lambda x: (DML_JOIN_OPERATOR_DESC(None, [buffer_tensor(np.float32, x.shape)] * 4, buffer_tensor(np.float32, (1, 4 * x.shape[1], *x.shape[2:])), 1),
                                        {"InputTensors": [x, x[:, ::-1], flip(x, 0x80000000), flip(x, 0x00400001)]}), id="JOIN of four 1x64x128x128 FLOAT32 along channels"),
        pytest.param("JOIN", lambda x: (DML_JOIN_OPERATOR_DESC(None, [buffer_tensor(np.float32, x.shape)] * 2, buffer_tensor(np.float32, (*x.shape[:3], 2 * x.shape[3])), 3),
                                        {"InputTensors": [x, flip(x, 0x80000000)]}), id="JOIN along the last axis: many short rows"),
        pytest.param("SPLIT", lambda x: (DML_SPLIT_OPERATOR_DESC(buffer_tensor(np.float32, x.shape), None, [buffer_tensor(np.float32, (1, 16, 128, 128)), buffer_tensor(np.float32, (1, 48, 128, 128), dmlpy.nhwc_strides((1, 48, 128, 128)))], 1),
                                         {"InputTensor": x}), id="SPLIT into a packed and an NHWC output"),
        pytest.param("SLICE1", lambda x: (DML_SLICE1_OPERATOR_DESC(buffer_tensor(np.float32, x.shape), buffer_tensor(np.float32, (1, 64, 126, 63)), None, [0, 0, 1, 0], [1, 64, 126, 127], [1, 1, 1, -2]),
                                          {"InputTensor": x}), id="SLICE1 with a negative stride"),
        pytest.param("PADDING", lambda x: (DML_PADDING_OPERATOR_DESC(buffer_tensor(np.float32, x.shape), buffer_tensor(np.float32, (1, 64, 130, 130)), MODE.REFLECTION, 0.0, None, [0, 0, 1, 1], [0, 0, 1, 1]),
                                           {"InputTensor": x}), id="PADDING by one, REFLECTION"),
        pytest.param("PADDING", lambda x: (DML_PADDING_OPERATOR_DESC(buffer_tensor(np.float32, x.shape), buffer_tensor(np.float32, (1, 66, 128, 128)), MODE.CONSTANT, 2.5, None, [0, 1, 0, 0], [0, 1, 0, 0]),
                                           {"InputTensor": x}), id="PADDING of channels: long merged rows split among threads"),
        pytest.param("CAST", lambda x: (DML_CAST_OPERATOR_DESC(buffer_tensor(np.float32, x.shape), buffer_tensor(np.float16, x.shape)), {"InputTensor": x}), id="CAST FLOAT32 to FLOAT16"),
        pytest.param("GATHER_ND1", lambda x: (DML_GATHER_ND1_OPERATOR_DESC(buffer_tensor(np.float32, x.shape), buffer_tensor(np.int32, (1, 64, 50, 1)), buffer_tensor(np.float32, (1, 64, 50, 128)), 3, 3, 1),
                                              {"InputTensor": x, "IndicesTensor": (np.arange(64 * 50, dtype=np.int32).reshape(1, 64, 50, 1) % 300) - 150}), id="GATHER_ND1 of rows per channel batch"),
        pytest.param("GATHER", lambda x: (DML_GATHER_OPERATOR_DESC(buffer_tensor(np.float32, x.shape), buffer_tensor(np.int64, (1, 1, 1, 100)), buffer_tensor(np.float32, (1, 64, 100, 128)), 2, 1),
                                          {"InputTensor": x, "IndicesTensor": np.arange(-50, 150, 2, dtype=np.int64).reshape(1, 1, 1, 100)}), id="GATHER of rows"),
    ],
)  # fmt: skip
def test_native_threads_give_the_same_bits_as_one_thread_on_large_tensors(name: str, make: Any) -> None:
    """Tensors large enough for the thread rule to use two threads (and to split long rows into pieces)."""
    x = random_bits(np.random.default_rng(7), np.float32, (1, 64, 128, 128))
    desc, inputs = make(x)
    assert_native_is_numpy(desc, **inputs)


def test_native_padding_reads_padding_value_as_float32_like_the_c_struct() -> None:
    """0.1 is not a float32: both backends pad with float32(0.1), widened for FLOAT64 and rounded once for FLOAT16."""
    for dtype in (np.float64, np.float16, np.float32):
        desc = DML_PADDING_OPERATOR_DESC(buffer_tensor(dtype, (2,)), buffer_tensor(dtype, (3,)), MODE.CONSTANT, 0.1, None, [1], [0])
        expected = np.array([np.float32(0.1), 1, 2], dtype)
        assert same_bits(dmlpy.run(desc, backend="numpy", InputTensor=np.array([1, 2], dtype)), expected)
        assert_native_is_numpy(desc, InputTensor=np.array([1, 2], dtype))


@pytest.mark.filterwarnings("ignore::dmlpy.errors.DmlWarning")  # TENSOR.OUTPUT_OVERLAP, the point of the case
def test_an_output_that_overlaps_itself_is_written_in_row_major_order_on_both_backends() -> None:
    """Output strides {0, 1}: both rows share memory; the last row wins, as the staged native output does."""
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    desc = DML_SLICE1_OPERATOR_DESC(buffer_tensor(np.int32, (2, 3)), buffer_tensor(np.int32, (2, 3), (0, 1)), None, [0, 0], [2, 3], [1, -1])
    assert_native_is_numpy(desc, InputTensor=x)


# ---------------------------------------------------------------------------------------
# The C kernel re-checks what it relies on (the desc lowered without validation)


def native_dispatch(value: Any, inputs: list[int | None], outputs: list[int], *, overlap: bool = False) -> tuple[Any, list[np.ndarray]]:
    """Lower ``value`` without validation; bind inputs and outputs of the given byte sizes (None: unbound)."""
    if not dmlpy.native_available():
        pytest.skip(dmlpy.native_status())
    from dmlpy.backends import BoundTensor
    from dmlpy.backends.native import NativeBackend
    from dmlpy.operators import spec_for_desc

    backend = NativeBackend()
    prepared = backend.prepare(spec_for_desc(value), value)
    x = [None if n is None else np.zeros(n, dtype=np.uint8) for n in inputs]
    y = [np.full(n, 0xAB, dtype=np.uint8) for n in outputs]
    if overlap:
        y[0] = x[0]  # type: ignore[assignment]
    runner = backend.bind(prepared, [BoundTensor(f"in{i}", m, None) for i, m in enumerate(x)], [BoundTensor(f"out{i}", m, None) for i, m in enumerate(y)])
    return runner, y


def f32(*sizes: int, strides: Any = None) -> Any:
    return buffer_tensor(np.float32, sizes, strides)


REFUSALS = [
    pytest.param(DML_JOIN_OPERATOR_DESC(2, [f32(2, 3), f32(2, 3)], f32(5, 3), 0), [24, 24], [60], "DMLPY_E_INVALID_DESC", id="JOIN whose inputs' rows 2 + 2 are not the output's 5"),
    pytest.param(DML_JOIN_OPERATOR_DESC(2, [f32(2, 3), f32(2, 3)], f32(4, 3), 0), [24], [48], "DMLPY_E_BINDING_COUNT", id="JOIN of two inputs with one bound slot"),
    pytest.param(DML_JOIN_OPERATOR_DESC(2, [f32(2, 3), f32(2, 3)], f32(4, 3), 0), [24, None], [48], "DMLPY_E_NULL_ARGUMENT", id="JOIN with an unbound input"),
    pytest.param(DML_JOIN_OPERATOR_DESC(2, [f32(2, 3), f32(2, 4)], f32(4, 3), 0), [24, 32], [48], "DMLPY_E_INVALID_DESC", id="JOIN input 1 with 4 columns, the output 3"),
    pytest.param(DML_JOIN_OPERATOR_DESC(2, [f32(2, 3), f32(2, 3)], f32(4, 3), 2), [24, 24], [48], "DMLPY_E_INVALID_DESC", id="JOIN Axis 2 of 2-D tensors"),
    pytest.param(DML_SPLIT_OPERATOR_DESC(f32(4, 3), 2, [f32(2, 3), f32(2, 3)], 0), [48], [24, 20], "DMLPY_E_BUFFER_TOO_SMALL", id="SPLIT output 1 bound 4 bytes short"),
    pytest.param(DML_SPLIT_OPERATOR_DESC(f32(4, 3), 2, [f32(2, 3), f32(2, 3)], 0), [44], [24, 24], "DMLPY_E_BUFFER_TOO_SMALL", id="SPLIT input bound 4 bytes short"),
    pytest.param(DML_SLICE_OPERATOR_DESC(f32(4, 3), f32(2, 3), 2, [3, 0], [2, 3], [1, 1]), [48], [24], "DMLPY_E_INVALID_DESC", id="SLICE reading row 4 of 4"),
    pytest.param(DML_SLICE_OPERATOR_DESC(f32(4, 3), f32(2, 3), 2, [0, 0], [2, 3], [2**31, 1]), [48], [24], "DMLPY_E_INVALID_DESC", id="SLICE with a stride far past the input"),
    pytest.param(DML_SLICE1_OPERATOR_DESC(f32(4, 3), f32(2, 3), 2, [0, 0], [4, 3], [0, 1]), [48], [24], "DMLPY_E_INVALID_DESC", id="SLICE1 with stride 0"),
    pytest.param(DML_SLICE1_OPERATOR_DESC(f32(4, 3), f32(3, 3), 2, [0, 0], [4, 3], [-2, 1]), [48], [36], "DMLPY_E_INVALID_DESC", id="SLICE1 reading 3 rows every 2 of a 4-row window"),
    pytest.param(DML_PADDING_OPERATOR_DESC(f32(2, 2), f32(4, 4), MODE.CONSTANT, 0.0, 2, [1, 1], [1, 0]), [16], [64], "DMLPY_E_INVALID_DESC", id="PADDING output 4 wide, 2 + 1 + 0 expected"),
    pytest.param(DML_PADDING_OPERATOR_DESC(f32(2, 2), f32(4, 4), 7, 0.0, 2, [1, 1], [1, 1]), [16], [64], "DMLPY_E_INVALID_DESC", id="PADDING mode 7"),
    pytest.param(DML_PADDING1_OPERATOR_DESC(f32(2, 2), f32(4, 4), MODE.CONSTANT, dmlpy.DML_TENSOR_DATA_TYPE.FLOAT64, DML_SCALAR_UNION(), 2, [1, 1], [1, 1]), [16], [64], "DMLPY_E_INVALID_DESC", id="PADDING1 value of another type"),
    pytest.param(DML_CAST_OPERATOR_DESC(f32(2, 2), buffer_tensor(np.int8, (2, 3))), [16], [6], "DMLPY_E_INVALID_DESC", id="CAST to other sizes"),
    pytest.param(DML_GATHER_OPERATOR_DESC(f32(1, 4), buffer_tensor(np.float32, (1, 2)), f32(1, 2), 1, 1), [16, 8], [8], "DMLPY_E_INVALID_DESC", id="GATHER with FLOAT32 indices"),
    pytest.param(DML_GATHER_OPERATOR_DESC(f32(1, 4), buffer_tensor(np.int32, (1, 2)), f32(1, 3), 1, 1), [16, 8], [12], "DMLPY_E_INVALID_DESC", id="GATHER output of 3, 2 indices"),
    pytest.param(DML_GATHER_OPERATOR_DESC(f32(1, 4), buffer_tensor(np.int32, (1, 2)), f32(1, 2), 1, 1), [16, 4], [8], "DMLPY_E_BUFFER_TOO_SMALL", id="GATHER indices bound 4 bytes short"),
    pytest.param(DML_GATHER_ELEMENTS_OPERATOR_DESC(f32(2, 4), buffer_tensor(np.int32, (3, 2)), f32(3, 2), 1), [32, 24], [24], "DMLPY_E_INVALID_DESC", id="GATHER_ELEMENTS indices of 3 rows, the input 2"),
    pytest.param(DML_GATHER_ND_OPERATOR_DESC(f32(2, 4), buffer_tensor(np.int32, (1, 3)), f32(1, 1), 2, 2), [32, 12], [4], "DMLPY_E_INVALID_DESC", id="GATHER_ND tuples of 3 into 2 dims"),
    pytest.param(DML_GATHER_ND1_OPERATOR_DESC(f32(2, 4), buffer_tensor(np.int32, (3, 1)), f32(1, 3), 2, 2, 1), [32, 12], [12], "DMLPY_E_INVALID_DESC", id="GATHER_ND1 batches of 3, the input 2"),
    pytest.param(DML_GATHER_ND1_OPERATOR_DESC(f32(2, 4), buffer_tensor(np.int32, (2, 1)), f32(1, 2), 2, 2, 2), [32, 8], [8], "DMLPY_E_INVALID_DESC", id="GATHER_ND1 BatchDimensionCount 2 of 2 indices dims"),
]


@pytest.mark.parametrize(("value", "inputs", "outputs", "status"), REFUSALS)
def test_native_kernel_refuses_what_it_cannot_trust_and_writes_nothing(value: Any, inputs: list[int | None], outputs: list[int], status: str) -> None:
    from conftest import assert_rule

    runner, written = native_dispatch(value, inputs, outputs)
    with pytest.raises(dmlpy.DmlError) as caught:
        runner()
    assert assert_rule(caught.value, "NATIVE.REJECTED").actual == status
    assert all((y == 0xAB).all() for y in written), "nothing is written on error"


def test_native_kernel_refuses_an_output_in_the_inputs_memory() -> None:
    runner, _ = native_dispatch(DML_SLICE1_OPERATOR_DESC(f32(4, 3), f32(4, 3), 2, [0, 0], [4, 3], [-1, 1]), [48], [48], overlap=True)
    with pytest.raises(dmlpy.DmlError) as caught:
        runner()
    from conftest import assert_rule

    assert assert_rule(caught.value, "NATIVE.REJECTED").actual == "DMLPY_E_INVALID_ARGUMENT"
