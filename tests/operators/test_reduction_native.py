"""dmlpy/native/reduction.c against the NumPy kernels: REDUCE (every DML_REDUCE_FUNCTION), ARGMIN, ARGMAX,
HARDMAX and HARDMAX1.

The NumPy kernels are the oracle here (test_reduction_kernels.py and test_activation.py check them against
onnxruntime and hand values). Integer results, MIN, MAX, ARGMIN, ARGMAX and HARDMAX are exact: the same bytes
(a NaN result NaN on both). The float sums compute in the NumPy kernel's working types (double for FLOAT32,
float for FLOAT16) in another order, so they agree within the bound docs/deviations.md states ("Reductions
and top-k"): with w the working type's unit roundoff (2^-53, 2^-24), n the row length and E = 2(n + 2)w,

* SUM, L1, SUM_SQUARE: ``E * sum|term|``; AVERAGE: ``E * sum|x| / n``;
* MULTIPLY, L2: ``E * |result|``; LOG_SUM: ``E * (sum|x| / |sum x| + |result|)``; LOG_SUM_EXP: ``E * (1 + |result|)``;

plus one spacing of the output type at the result (both round a working-type value once). The bound and
exactness are tested on randomized shapes, axes, layouts (NHWC, padded, transposed, broadcast inputs,
strided outputs), every listed data type and index type, ties, NaN and infinities, rows longer than a
chunk; thread counts 1 and 2 give identical bytes, and a fuzz (tests/test_fuzz.py's harness) checks the guard
bytes around every binding.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import test_fuzz as base  # the shared fuzz harness (tests/ is on sys.path, as for conftest)
from conftest import _skip_native_unless_required, native_device

import dmlpy
from dmlpy import buffer_tensor
from dmlpy.enums import DML_AXIS_DIRECTION as DIRECTION
from dmlpy.enums import DML_REDUCE_FUNCTION as FN
from dmlpy.operators import REGISTRY
from dmlpy.operators.activation import DML_ACTIVATION_HARDMAX1_OPERATOR_DESC, DML_ACTIVATION_HARDMAX_OPERATOR_DESC
from dmlpy.operators.reduction import DML_ARGMAX_OPERATOR_DESC, DML_ARGMIN_OPERATOR_DESC, DML_REDUCE_OPERATOR_DESC

F32, F16 = np.float32, np.float16
INTS = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]
INDEX_TYPES = [np.uint32, np.int32, np.uint64, np.int64]
NAN, INF = float("nan"), float("inf")

# The data types the support tables list per function (the latest feature level).
TYPES: dict[FN, list[Any]] = {
    FN.SUM: [F32, F16, np.int32, np.uint32, np.int64, np.uint64],
    FN.MULTIPLY: [F32, F16, np.int32, np.uint32, np.int64, np.uint64],
    FN.L1: [F32, F16, np.int32, np.uint32, np.int64, np.uint64],
    FN.SUM_SQUARE: [F32, F16, np.int32, np.uint32, np.int64, np.uint64],
    FN.AVERAGE: [F32, F16],
    FN.L2: [F32, F16],
    FN.LOG_SUM: [F32, F16],
    FN.LOG_SUM_EXP: [F32, F16],
    FN.MIN: [F32, F16, *INTS],
    FN.MAX: [F32, F16, *INTS],
    FN.ARGMIN: [F32, F16, *INTS],
    FN.ARGMAX: [F32, F16, *INTS],
}
EXACT = {FN.MIN, FN.MAX, FN.ARGMIN, FN.ARGMAX}


def layout(rng: np.random.Generator, sizes: tuple[int, ...], kind: str) -> tuple[int, ...] | None:
    """Strides of a layout kind: packed, NHWC, padded rows, the dimensions reversed, a broadcast dimension."""
    if kind == "nhwc" and len(sizes) >= 3:
        return dmlpy.nhwc_strides(sizes)
    if kind == "padded":
        return dmlpy.packed_strides([s + int(rng.integers(1, 4)) for s in sizes])
    if kind == "reversed":
        strides, step = [0] * len(sizes), 1
        for d in range(len(sizes)):
            strides[d] = step
            step *= sizes[d]
        return tuple(strides)
    if kind == "broadcast":
        strides = list(dmlpy.packed_strides(sizes))
        strides[int(rng.integers(0, len(sizes)))] = 0
        return tuple(strides)
    return None


def logical(x: np.ndarray, strides: tuple[int, ...] | None) -> np.ndarray:
    """x made constant along the dimensions a broadcast layout reads with stride 0 (the values both backends read)."""
    if strides is None:
        return x
    for d, s in enumerate(strides):
        if s == 0:
            x = np.repeat(x.take([0], axis=d), x.shape[d], axis=d)
    return x


def run_both(desc: Any, x: np.ndarray, threads: int = 0) -> tuple[np.ndarray, np.ndarray]:
    native = dmlpy.run(desc, device=native_device(threads), InputTensor=x)
    numpy = dmlpy.run(desc, backend="numpy", InputTensor=x)
    return np.asarray(native), np.asarray(numpy)


def assert_same(native: np.ndarray, numpy: np.ndarray) -> None:
    """The same bytes; for floats a NaN may differ in payload only."""
    assert native.dtype == numpy.dtype and native.shape == numpy.shape
    if native.dtype.kind == "f":
        nan = np.isnan(numpy)
        np.testing.assert_array_equal(np.isnan(native), nan)
        bits = native.dtype.str.replace("f", "u")
        np.testing.assert_array_equal(native[~nan].view(bits), numpy[~nan].view(bits))
    else:
        np.testing.assert_array_equal(native, numpy)


# FLOAT32 functions the native kernel adds in float32 blocks (docs/deviations.md)
FLOAT_BLOCKS = (FN.SUM, FN.AVERAGE, FN.L1, FN.SUM_SQUARE, FN.LOG_SUM)


def sum_bound(function: FN, x: np.ndarray, axes: tuple[int, ...], numpy: np.ndarray) -> np.ndarray:
    """docs/deviations.md's bound on |native - numpy| for a float sum, from float64 magnitudes."""
    w = 2.0**-53 if x.dtype == F32 else 2.0**-24
    n = math.prod(x.shape[a] for a in axes)
    e = 2 * (n + 2) * w
    if x.dtype == F32 and function in FLOAT_BLOCKS:  # float32 sums of at most 16 terms (18 roundings), added in double
        e += 2 * (16 + 2) * 2.0**-24
    xd = x.astype(np.float64)
    y = np.abs(numpy.astype(np.float64))
    keep = {"axis": axes, "keepdims": True}
    with np.errstate(all="ignore"):
        if function in (FN.SUM, FN.L1):
            bound = e * np.abs(xd).sum(**keep)
        elif function == FN.SUM_SQUARE:  # plus the float32 squares' underflow, half the least subnormal each
            bound = e * (xd * xd).sum(**keep) + (n * 2.0**-150 if x.dtype == F32 else 0.0)
        elif function == FN.AVERAGE:
            bound = e * np.abs(xd).sum(**keep) / n
        elif function in (FN.MULTIPLY, FN.L2):
            bound = e * y
        elif function == FN.LOG_SUM:
            bound = e * (np.abs(xd).sum(**keep) / np.abs(xd.sum(**keep)) + y)
        else:
            bound = e * (1 + y)
        spacing = np.spacing(y.astype(numpy.dtype)).astype(np.float64)
    return np.nan_to_num(bound + spacing, nan=0.0, posinf=np.inf)


def assert_within(native: np.ndarray, numpy: np.ndarray, bound: np.ndarray) -> None:
    """|native - numpy| <= bound; NaN where NumPy has NaN, infinities equal."""
    a, b = native.astype(np.float64), numpy.astype(np.float64)
    nan, inf = np.isnan(b), np.isinf(b)
    np.testing.assert_array_equal(np.isnan(a), nan)
    np.testing.assert_array_equal(a[inf], b[inf])
    finite = ~nan & ~inf
    with np.errstate(invalid="ignore"):
        excess = np.abs(a - b) - np.broadcast_to(bound, b.shape)
    worst = float(np.max(excess[finite], initial=-1.0))
    assert worst <= 0, f"beyond the bound by {worst:.3g}"


def draw_input(rng: np.random.Generator, function: FN | str, dtype: Any, shape: tuple[int, ...]) -> np.ndarray:
    """Values for a function: ties and NaN/inf/signed zeros for the exact ones, magnitudes that keep sums meaningful."""
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        if function in EXACT or rng.integers(0, 2):  # ties (small values) or wrap-arounds (the whole range)
            return rng.integers(max(info.min, -3), min(info.max, 3) + 1, shape, dtype=dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    if function in EXACT or function == "hardmax":
        x = rng.integers(-3, 4, shape).astype(np.float64)
        special = rng.random(shape)
        x[special < 0.08] = NAN
        x[(special >= 0.08) & (special < 0.1)] = -0.0
        x[(special >= 0.1) & (special < 0.11)] = INF
        x[(special >= 0.11) & (special < 0.12)] = -INF
        return x.astype(dtype)
    if function == FN.MULTIPLY:
        return rng.uniform(0.6, 1.5, shape).astype(dtype)
    if function == FN.LOG_SUM:
        return rng.uniform(0.01, 3.0, shape).astype(dtype)
    scale = float(rng.choice([1.0, 10.0, 100.0 if dtype == F32 else 4.0]))
    return (rng.standard_normal(shape) * scale).astype(dtype)


def random_case(seed: int, salt: int) -> tuple[np.random.Generator, tuple[int, ...], tuple[int, ...], str, str]:
    rng = np.random.default_rng([0x5ED, salt, seed])
    rank = int(rng.integers(1, 6))
    shape = tuple(int(rng.integers(1, 7 if rank > 3 else 30)) for _ in range(rank))
    axes = tuple(sorted({int(a) for a in rng.integers(0, rank, size=int(rng.integers(0, rank + 1)))}))
    in_kind = ["packed", "nhwc", "padded", "reversed", "broadcast"][int(rng.integers(0, 5))]
    out_kind = ["packed", "padded", "reversed"][int(rng.integers(0, 3))]
    return rng, shape, axes, in_kind, out_kind


# ---------------------------------------------------------------------------------------
# Randomized agreement


FUNCTIONS = list(FN)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("function", FUNCTIONS, ids=[f.name for f in FUNCTIONS])
def test_reduce_agrees_with_numpy_exactly_or_within_the_stated_bound(function: FN, seed: int) -> None:
    rng, shape, axes, in_kind, out_kind = random_case(seed, int(function))
    dtype = TYPES[function][int(rng.integers(0, len(TYPES[function])))]
    out_type = INDEX_TYPES[int(rng.integers(0, 4))] if function in (FN.ARGMIN, FN.ARGMAX) else dtype
    out_shape = tuple(1 if i in axes else s for i, s in enumerate(shape))
    strides = layout(rng, shape, in_kind)
    x = logical(draw_input(rng, function, dtype, shape), strides)
    desc = DML_REDUCE_OPERATOR_DESC(function, buffer_tensor(dtype, shape, strides), buffer_tensor(out_type, out_shape, layout(rng, out_shape, out_kind)), len(axes), list(axes))
    native, numpy = run_both(desc, x)
    if function in EXACT or np.dtype(dtype).kind in "iu":
        assert_same(native, numpy)
    else:
        assert_within(native, numpy, sum_bound(function, x, axes, numpy))


@pytest.mark.parametrize("seed", range(40))
def test_argmin_and_argmax_agree_with_numpy_exactly_in_both_directions(seed: int) -> None:
    rng, shape, axes, in_kind, out_kind = random_case(seed, 0xA1)
    dtype = TYPES[FN.ARGMAX][int(rng.integers(0, len(TYPES[FN.ARGMAX])))]
    cls = DML_ARGMAX_OPERATOR_DESC if rng.integers(0, 2) else DML_ARGMIN_OPERATOR_DESC
    direction = DIRECTION(int(rng.integers(0, 2)))
    out_shape = tuple(1 if i in axes else s for i, s in enumerate(shape))
    strides = layout(rng, shape, in_kind)
    x = logical(draw_input(rng, FN.ARGMAX, dtype, shape), strides)
    out_type = INDEX_TYPES[int(rng.integers(0, 4))]
    desc = cls(buffer_tensor(dtype, shape, strides), buffer_tensor(out_type, out_shape, layout(rng, out_shape, out_kind)), len(axes), list(axes), direction)
    assert_same(*run_both(desc, x))


@pytest.mark.parametrize("seed", range(30))
def test_hardmax1_and_hardmax_agree_with_numpy_exactly(seed: int) -> None:
    rng, shape, axes, in_kind, out_kind = random_case(seed, 0x4A)
    dtype = F16 if rng.integers(0, 3) == 0 else F32
    strides = layout(rng, shape, in_kind)
    x = logical(draw_input(rng, "hardmax", dtype, shape), strides)
    y = buffer_tensor(dtype, shape, layout(rng, shape, out_kind))
    if len(shape) <= 2 and rng.integers(0, 2):
        desc: Any = DML_ACTIVATION_HARDMAX_OPERATOR_DESC(buffer_tensor(dtype, shape, strides), y)
    else:
        desc = DML_ACTIVATION_HARDMAX1_OPERATOR_DESC(buffer_tensor(dtype, shape, strides), y, len(axes), list(axes))
    assert_same(*run_both(desc, x))


# ---------------------------------------------------------------------------------------
# The two shapes of work (rows, columns) on the workloads' layouts, long rows, special values


SHAPES = [
    ("the last axis of a packed tensor (rows, in place)", (3, 5, 700), (2,), None),
    ("H and W of NCHW (rows of 49)", (2, 64, 7, 7), (2, 3), None),
    ("a middle axis (columns)", (4, 97, 130), (1,), None),
    ("a middle axis of 197 columns (blocks of 64, 64 and 69: a group, then overlapping groups)", (2, 33, 197), (1,), None),
    ("H and W of NHWC (columns)", (2, 70, 5, 6), (2, 3), "nhwc"),
    ("the first and last axes (rows, gathered)", (9, 3, 11), (0, 2), None),
    ("every axis", (5, 6, 300), (0, 1, 2), None),
]


@pytest.mark.parametrize(("what", "shape", "axes", "kind"), SHAPES, ids=[s[0] for s in SHAPES])
@pytest.mark.parametrize("function", FUNCTIONS, ids=[f.name for f in FUNCTIONS])
@pytest.mark.parametrize("dtype", [F32, F16], ids=["float32", "float16"])
def test_each_function_agrees_on_the_row_and_column_paths(what: str, shape: tuple[int, ...], axes: tuple[int, ...], kind: str | None, function: FN, dtype: Any) -> None:
    rng = np.random.default_rng([0x5A, int(function), len(what)])
    x = draw_input(rng, function, dtype, shape)
    out_type = np.uint32 if function in (FN.ARGMIN, FN.ARGMAX) else dtype
    out_shape = tuple(1 if i in axes else s for i, s in enumerate(shape))
    desc = DML_REDUCE_OPERATOR_DESC(function, buffer_tensor(dtype, shape, layout(rng, shape, kind or "packed")), buffer_tensor(out_type, out_shape), len(axes), list(axes))
    native, numpy = run_both(desc, x)
    if function in EXACT:
        assert_same(native, numpy)
    else:
        assert_within(native, numpy, sum_bound(function, x, axes, numpy))


ROWS = [
    ("a NaN", [1.0, NAN, 2.0, 3.0]),
    ("a leading NaN", [NAN, 1.0, 3.0, 3.0]),
    ("only NaN", [NAN, NAN, NAN, NAN]),
    ("a +inf", [1.0, INF, 2.0, 3.0]),
    ("a -inf", [1.0, -INF, 2.0, 3.0]),
    ("only -inf", [-INF, -INF, -INF, -INF]),
    ("+inf and -inf", [INF, -INF, 0.0, 0.0]),
    ("-0 before +0", [-0.0, 0.0, -1.0, -2.0]),
    ("+0 before -0", [0.0, -0.0, 1.0, 2.0]),
    ("ties", [2.0, -1.0, 2.0, -1.0]),
]


@pytest.mark.parametrize(("what", "row"), ROWS, ids=[w for w, _ in ROWS])
@pytest.mark.parametrize("function", FUNCTIONS, ids=[f.name for f in FUNCTIONS])
@pytest.mark.parametrize("path", ["rows", "columns"])
def test_nan_infinities_signed_zeros_and_ties_give_numpys_answer(what: str, row: list[float], function: FN, path: str) -> None:
    """The special row sits among finite rows; on the columns path the row runs along axis 0."""
    x = np.array([[0.25, 1.0, -2.0, 0.5], row, [3.0, -1.0, 0.0, 1.0]], dtype=F32)
    if path == "columns":
        x = np.ascontiguousarray(x.T)
    axis = 1 if path == "rows" else 0
    out_type = np.uint32 if function in (FN.ARGMIN, FN.ARGMAX) else F32
    out_shape = (3, 1) if axis == 1 else (1, 3)
    desc = DML_REDUCE_OPERATOR_DESC(function, buffer_tensor(F32, x.shape), buffer_tensor(out_type, out_shape), 1, [axis])
    native, numpy = run_both(desc, x)
    if function in EXACT:
        assert_same(native, numpy)
    else:
        assert_within(native, numpy, sum_bound(function, x, (axis,), numpy))


@pytest.mark.parametrize(("what", "row"), ROWS, ids=[w for w, _ in ROWS])
@pytest.mark.parametrize("op", ["argmin_decreasing", "argmax_decreasing", "hardmax"])
@pytest.mark.parametrize("path", ["rows", "columns"])
def test_special_rows_of_the_arg_operators_and_hardmax(what: str, row: list[float], op: str, path: str) -> None:
    x = np.array([[0.25, 1.0, -2.0, 0.5], row, [3.0, -1.0, 0.0, 1.0]], dtype=F32)
    if path == "columns":
        x = np.ascontiguousarray(x.T)
    axis = 1 if path == "rows" else 0
    out_shape = (3, 1) if axis == 1 else (1, 3)
    if op == "hardmax":
        desc: Any = DML_ACTIVATION_HARDMAX1_OPERATOR_DESC(buffer_tensor(F32, x.shape), buffer_tensor(F32, x.shape), 1, [axis])
    else:
        cls = DML_ARGMIN_OPERATOR_DESC if op.startswith("argmin") else DML_ARGMAX_OPERATOR_DESC
        desc = cls(buffer_tensor(F32, x.shape), buffer_tensor(np.int64, out_shape), 1, [axis], DIRECTION.DECREASING)
    assert_same(*run_both(desc, x))


@pytest.mark.parametrize("direction", list(DIRECTION), ids=[d.name for d in DIRECTION])
@pytest.mark.parametrize("dtype", [F32, F16, np.int16, np.uint64], ids=["float32", "float16", "int16", "uint64"])
def test_ties_across_chunks_of_a_long_row_resolve_by_direction(direction: DIRECTION, dtype: Any) -> None:
    """Rows of 1337 (chunks of 256 and a tail) whose maximum appears in several chunks: the first or the last wins."""
    x = np.zeros((3, 1337), dtype=dtype)
    x[0, [5, 700, 1336]] = 7
    x[1, [255, 256, 1000]] = 7
    x[2, [1300]] = 7
    expected = [1336, 1000, 1300] if direction == DIRECTION.DECREASING else [5, 255, 1300]
    for strides in (None, (1, 3)):  # packed rows, and rows gathered through a transposing layout
        desc = DML_ARGMAX_OPERATOR_DESC(buffer_tensor(dtype, x.shape, strides), buffer_tensor(np.int64, (3, 1)), 1, [1], direction)
        native, numpy = run_both(desc, x)
        assert native.ravel().tolist() == expected
        assert_same(native, numpy)


@pytest.mark.parametrize("function", [FN.MAX, FN.MIN], ids=["MAX", "MIN"])
@pytest.mark.parametrize("dtype", [F32, F16], ids=["float32", "float16"])
@pytest.mark.parametrize("first", [-0.0, 0.0], ids=["-0 first", "+0 first"])
def test_a_zero_min_or_max_has_the_sign_of_the_rows_first_zero_on_both_backends(function: FN, dtype: Any, first: float) -> None:
    """Rows of 100 whose extreme is a zero, -0 and +0 at positions 1 and 2 (np.fmax.reduce alone returns the later one here)."""
    other = -1.0 if function == FN.MAX else 1.0
    x = np.full((2, 100), other, dtype=dtype)
    x[0, 1], x[0, 2] = first, -first
    x[1, 40], x[1, 97] = first, -first
    for data, axis in ((x, 1), (np.ascontiguousarray(x.T), 0)):  # the rows and the columns paths
        out_shape = (2, 1) if axis == 1 else (1, 2)
        desc = DML_REDUCE_OPERATOR_DESC(function, buffer_tensor(dtype, data.shape), buffer_tensor(dtype, out_shape), 1, [axis])
        for device in (native_device(), dmlpy.create_device(backend="numpy")):
            y = dmlpy.run(desc, device=device, InputTensor=data)
            assert (y == 0).all() and np.signbit(y).ravel().tolist() == [bool(np.signbit(first))] * 2, device.backend_name


def test_an_integer_sum_wraps_as_the_type_does() -> None:
    """INT32 2^31 - 1 + 1 is -2^31; UINT32 0 - 1 (as 2^32 - 1) + 2 is 1; INT32 L1 of -2^31 is -2^31."""
    x = np.array([[2**31 - 1, 1], [-(2**31), 0]], dtype=np.int32)
    desc = DML_REDUCE_OPERATOR_DESC(FN.SUM, buffer_tensor(np.int32, (2, 2)), buffer_tensor(np.int32, (2, 1)), 1, [1])
    assert dmlpy.run(desc, device=native_device(), InputTensor=x).ravel().tolist() == [-(2**31), -(2**31)]
    desc.Function = FN.L1
    assert dmlpy.run(desc, device=native_device(), InputTensor=x).ravel().tolist() == [-(2**31), -(2**31)]
    u = np.array([[2**32 - 1, 2]], dtype=np.uint32)
    desc = DML_REDUCE_OPERATOR_DESC(FN.SUM, buffer_tensor(np.uint32, (1, 2)), buffer_tensor(np.uint32, (1, 1)), 1, [1])
    assert dmlpy.run(desc, device=native_device(), InputTensor=u).ravel().tolist() == [1]


def test_float16_sums_in_float32() -> None:
    """60000 + 60000 - 60000 is 60000 in float32 (not inf, as float16 arithmetic would give); the column path too."""
    x = np.array([[60000, 60000, -60000]], dtype=F16)
    for data, axis in ((x, 1), (np.ascontiguousarray(x.T), 0)):
        out_shape = (1, 1)
        desc = DML_REDUCE_OPERATOR_DESC(FN.SUM, buffer_tensor(F16, data.shape), buffer_tensor(F16, out_shape), 1, [axis])
        assert dmlpy.run(desc, device=native_device(), InputTensor=data).ravel().tolist() == [60000.0]


@pytest.mark.parametrize("dtype", [F32, F16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("path", ["short rows", "long rows", "columns"])
@pytest.mark.parametrize("function", [FN.SUM, FN.AVERAGE, FN.L1, FN.SUM_SQUARE, FN.MULTIPLY], ids=lambda f: f.name)
def test_a_sum_of_negative_zeros_is_numpys_positive_zero_on_every_path(function: FN, path: str, dtype: Any) -> None:
    """np.sum of -0s is +0 (a sum starts at +0); a product of 49 or 300 -0s is -0 or +0 by their count."""
    rows, length = {"short rows": (20, 49), "long rows": (3, 300), "columns": (3, 49)}[path]
    x = np.full((rows, length), -0.0, dtype)
    if path == "columns":
        x = np.ascontiguousarray(x.T)
    axis = 0 if path == "columns" else 1
    out_shape = (1, rows) if axis == 0 else (rows, 1)
    desc = DML_REDUCE_OPERATOR_DESC(function, buffer_tensor(dtype, x.shape), buffer_tensor(dtype, out_shape), 1, [axis])
    native, numpy = run_both(desc, x)
    by_hand = np.prod(x.astype(np.float64), axis=axis) if function == FN.MULTIPLY else np.zeros(rows)  # +0
    np.testing.assert_array_equal(np.signbit(native).ravel(), np.signbit(by_hand))
    assert_same(native, numpy)


A = float(np.float32(3e38))  # a + a overflows float32; a + a - a is a
OVERFLOWING_PARTIAL_SUMS = [
    ("a SUM whose float32 lane overflows is computed again in double", FN.SUM, A),
    ("an AVERAGE likewise", FN.AVERAGE, A / 192),
    ("a LOG_SUM likewise", FN.LOG_SUM, math.log(A)),
]


@pytest.mark.parametrize(("what", "function", "expected"), OVERFLOWING_PARTIAL_SUMS, ids=[c[0] for c in OVERFLOWING_PARTIAL_SUMS])
@pytest.mark.parametrize("path", ["rows", "columns"])
def test_float32_sums_whose_partial_sums_overflow_float32_give_the_exact_sums_value(device: Any, what: str, function: FN, expected: float, path: str) -> None:
    """Elements 0, 64 and 128 of a row share a lane of 64; positions 0, 1 and 2 of a column share a 16-position span."""
    row = np.zeros(192, F32)
    if path == "rows":
        row[[0, 64, 128]] = [A, A, -A]
        x, axis = np.tile(row, (3, 1)), 1
    else:
        row[[0, 1, 2]] = [A, A, -A]
        x, axis = np.ascontiguousarray(np.tile(row, (40, 1)).T), 0
    out_shape = tuple(1 if i == axis else s for i, s in enumerate(x.shape))
    desc = DML_REDUCE_OPERATOR_DESC(function, buffer_tensor(F32, x.shape), buffer_tensor(F32, out_shape), 1, [axis])
    result = dmlpy.run(desc, device=device, InputTensor=x)
    np.testing.assert_array_equal(result, np.full(out_shape, expected, F32))


SPECIAL_SHORT_ROWS = {3: (0, NAN), 5: (7, INF), 6: (2, -INF), 17: (48, NAN)}


@pytest.mark.parametrize("function", [FN.SUM, FN.AVERAGE, FN.L1, FN.SUM_SQUARE, FN.LOG_SUM], ids=lambda f: f.name)
@pytest.mark.parametrize("output", ["packed", "transposed"])
def test_short_rows_reduced_sixteen_at_once_each_get_their_own_answer(function: FN, output: str) -> None:
    """Rows of 49 (a 7x7 global pool) in a 4x10 grid: 40 rows, two groups of 16 and 8 more. Special rows sit inside
    the groups: a NaN, an infinity, a float32-overflowing row (A at 0, 8 and -A at 16: lanes 0 and 8 meet first)
    and a row of -0 (3A, the L1, is past float32's range); the output's rows are packed or transposed (strides 1 and 4)."""
    x = np.random.default_rng(7).standard_normal((4, 10, 49)).astype(F32)
    if function == FN.LOG_SUM:
        x = np.abs(x)
    flat = x.reshape(40, 49)
    for row, (at, value) in SPECIAL_SHORT_ROWS.items():
        flat[row, at] = value
    flat[20, [0, 8, 16]] = [A, A, -A]
    flat[33] = -0.0
    strides = (1, 4, 1) if output == "transposed" else None
    y = buffer_tensor(F32, (4, 10, 1), strides=strides)
    desc = DML_REDUCE_OPERATOR_DESC(function, buffer_tensor(F32, x.shape), y, 1, [2])
    native, numpy = run_both(desc, x)
    assert_within(native, numpy, sum_bound(function, x, (2,), numpy))
    got = native.reshape(40)
    by_hand = {FN.SUM: A, FN.AVERAGE: A / 49, FN.L1: INF, FN.SUM_SQUARE: INF, FN.LOG_SUM: math.log(A)}[function]
    assert got[20] == np.float32(by_hand)
    assert np.isnan(got[3]) and np.isnan(got[17])
    if function == FN.SUM:
        assert got[5] == INF and got[6] == -INF
    assert got[33].tobytes() == numpy.reshape(40)[33].tobytes()  # exact, the zero's sign (or log's -inf) included


# ---------------------------------------------------------------------------------------
# Threads, registration


THREAD_CASES: list[tuple[str, Callable[[], tuple[Any, np.ndarray]]]] = []


def _thread_case(name: str) -> Callable[[Callable[[], tuple[Any, np.ndarray]]], Callable[[], tuple[Any, np.ndarray]]]:
    def add(make: Callable[[], tuple[Any, np.ndarray]]) -> Callable[[], tuple[Any, np.ndarray]]:
        THREAD_CASES.append((name, make))
        return make

    return add


@_thread_case("ReduceMean over H and W of 8x2048x7x7")
def _global_pool() -> tuple[Any, np.ndarray]:
    shape = (8, 2048, 7, 7)
    x = np.random.default_rng(1).standard_normal(shape).astype(F32)
    return DML_REDUCE_OPERATOR_DESC(FN.AVERAGE, buffer_tensor(F32, shape), buffer_tensor(F32, (8, 2048, 1, 1)), 2, [2, 3]), x


@_thread_case("ReduceSum over axis 1 of 12x197x197 (columns)")
def _middle_axis() -> tuple[Any, np.ndarray]:
    shape = (12, 197, 197)
    x = np.random.default_rng(2).standard_normal(shape).astype(F32)
    return DML_REDUCE_OPERATOR_DESC(FN.SUM, buffer_tensor(F32, shape), buffer_tensor(F32, (12, 1, 197)), 1, [1]), x


@_thread_case("LOG_SUM_EXP over the last axis of 12x197x197, float16")
def _log_sum_exp() -> tuple[Any, np.ndarray]:
    shape = (12, 197, 197)
    x = (np.random.default_rng(3).standard_normal(shape) * 4).astype(F16)
    return DML_REDUCE_OPERATOR_DESC(FN.LOG_SUM_EXP, buffer_tensor(F16, shape), buffer_tensor(F16, (12, 197, 1)), 1, [2]), x


@_thread_case("ArgMax over the last axis of 64x1000")
def _argmax() -> tuple[Any, np.ndarray]:
    x = np.random.default_rng(4).integers(-50, 50, (64, 1000)).astype(F32)
    return DML_ARGMAX_OPERATOR_DESC(buffer_tensor(F32, (64, 1000)), buffer_tensor(np.int64, (64, 1)), 1, [1], DIRECTION.DECREASING), x


@_thread_case("HardMax1 over axis 0 of 300x257")
def _hardmax() -> tuple[Any, np.ndarray]:
    x = np.random.default_rng(5).integers(-20, 20, (300, 257)).astype(F32)
    return DML_ACTIVATION_HARDMAX1_OPERATOR_DESC(buffer_tensor(F32, x.shape), buffer_tensor(F32, x.shape), 1, [0]), x


@pytest.mark.parametrize("make", [m for _, m in THREAD_CASES], ids=[n for n, _ in THREAD_CASES])
def test_one_and_two_threads_give_identical_bytes_and_numpys_answer(make: Callable[[], tuple[Any, np.ndarray]]) -> None:
    """Each output element is computed by one thread in a fixed order, so the split cannot change a bit."""
    desc, x = make()
    one = dmlpy.run(desc, device=native_device(threads=1), InputTensor=x)
    two = dmlpy.run(desc, device=native_device(threads=2), InputTensor=x)
    np.testing.assert_array_equal(one.view(f"u{one.itemsize}"), two.view(f"u{two.itemsize}"))
    numpy = dmlpy.run(desc, backend="numpy", InputTensor=x)
    if isinstance(desc, DML_REDUCE_OPERATOR_DESC) and desc.Function not in EXACT:
        assert_within(one, numpy, sum_bound(desc.Function, x, tuple(desc.Axes), numpy))
    else:
        assert_same(one, numpy)


def test_every_instruction_set_variant_gives_the_bytes_of_the_baseline_but_for_sums_of_squares() -> None:
    """The lanes do not depend on the vector width; only `acc + x * x` may be fused where the target has FMA."""
    from dmlpy.backends import native

    _skip_native_unless_required()

    ffi, lib = native.library()
    runnable = ffi.string(lib.dmlpy_native_isa_runnable()).decode().split()
    if len(runnable) < 2:
        pytest.skip("this CPU runs only the baseline variant")
    rng = np.random.default_rng(6)
    cases = []
    for function in (FN.SUM, FN.AVERAGE, FN.MULTIPLY, FN.L1, FN.LOG_SUM, FN.LOG_SUM_EXP, FN.MAX, FN.ARGMIN):
        for dtype in (F32, F16):
            for shape, axes in (((7, 333), (1,)), ((40, 37, 3), (1,)), ((5, 49, 70), (0, 1)), ((3, 1000), (1,)), ((3, 20, 197), (1,)),
                                ((40, 49), (1,)), ((3, 17, 5), (2,)), ((2, 20, 200), (2,))):  # short rows, 16 at a time on AVX-512
                x = draw_input(rng, function, dtype, shape)
                out_type = np.uint32 if function == FN.ARGMIN else dtype
                out_shape = tuple(1 if i in axes else s for i, s in enumerate(shape))
                cases.append((DML_REDUCE_OPERATOR_DESC(function, buffer_tensor(dtype, shape), buffer_tensor(out_type, out_shape), len(axes), list(axes)), x))
    try:
        results = {}
        for name in runnable:
            assert lib.dmlpy_native_select_isa(name.encode()) == 0
            results[name] = [np.asarray(dmlpy.run(d, device=native_device(), InputTensor=x)).tobytes() for d, x in cases]
    finally:
        lib.dmlpy_native_select_isa(ffi.NULL)
    for name in runnable[1:]:
        assert results[name] == results["baseline"], name


def test_every_operator_of_the_family_is_registered_native_for_every_valid_desc() -> None:
    for op in ("REDUCE", "ARGMIN", "ARGMAX", "ACTIVATION_HARDMAX", "ACTIVATION_HARDMAX1"):
        spec = REGISTRY[dmlpy.DML_OPERATOR_TYPE[op]]
        assert spec.native and spec.native_covers is None, op
    assert not REGISTRY[dmlpy.DML_OPERATOR_TYPE.TOP_K].native


# ---------------------------------------------------------------------------------------
# Fuzz: the shared harness on reduce, arg and hardmax descs

SEED = 0x5EDF
BATCHES = 4
CASES_PER_BATCH = 60


def valid_case(rng: np.random.Generator) -> base.Plan:
    kind = int(rng.integers(0, 3))
    sizes = tuple(int(rng.integers(1, 5)) for _ in range(4))
    axes = sorted({int(a) for a in rng.integers(0, 4, size=int(rng.integers(1, 4)))})
    reduced = tuple(1 if i in axes else s for i, s in enumerate(sizes))
    if kind == 0:
        function = FN(int(rng.integers(0, len(FN))))
        dtype = TYPES[function][int(rng.integers(0, len(TYPES[function])))]
        out_type = np.uint32 if function in (FN.ARGMIN, FN.ARGMAX) else dtype
        desc: Any = DML_REDUCE_OPERATOR_DESC(function, buffer_tensor(dtype, sizes, base._layout(rng, sizes, allow_broadcast=True)),
                                             buffer_tensor(out_type, reduced, base._layout(rng, reduced, allow_broadcast=False)), len(axes), axes)  # fmt: skip
    elif kind == 1:
        dtype = TYPES[FN.ARGMAX][int(rng.integers(0, len(TYPES[FN.ARGMAX])))]
        cls = DML_ARGMAX_OPERATOR_DESC if rng.integers(0, 2) else DML_ARGMIN_OPERATOR_DESC
        desc = cls(buffer_tensor(dtype, sizes, base._layout(rng, sizes, allow_broadcast=True)),
                   buffer_tensor(INDEX_TYPES[int(rng.integers(0, 4))], reduced, base._layout(rng, reduced, allow_broadcast=False)), len(axes), axes,
                   DIRECTION(int(rng.integers(0, 2))))  # fmt: skip
    else:
        dtype = F16 if rng.integers(0, 2) else F32
        desc = DML_ACTIVATION_HARDMAX1_OPERATOR_DESC(buffer_tensor(dtype, sizes, base._layout(rng, sizes, allow_broadcast=True)),
                                                     buffer_tensor(dtype, sizes, base._layout(rng, sizes, allow_broadcast=False)), len(axes), axes)  # fmt: skip
    if rng.integers(0, 4) == 0:
        desc = dmlpy.operator_desc(desc)
    plan = base.Plan(desc)
    plan.in_guard = int(rng.choice([0, 16, 32, 64]))
    plan.out_guard = int(rng.choice([16, 32, 64]))
    return plan


def m_function(plan: base.Plan, rng: np.random.Generator) -> str:
    desc = base.inner_desc(plan)
    field = "Function" if hasattr(desc, "Function") else "AxisDirection" if hasattr(desc, "AxisDirection") else None
    if field is None:
        return "no Function or AxisDirection"
    setattr(desc, field, base.pick(rng, [0, 1, 5, 6, 11, 12, 99, -1, 2**32 - 1]))
    return f"{field} = {getattr(desc, field)!r}"


MUTATIONS: list[tuple[Callable[[base.Plan, np.random.Generator], str], int]] = [
    (base.m_tensor_sizes, 3),
    (base.m_tensor_strides, 4),
    (base.m_tensor_scalar, 3),
    (base.m_axes, 3),
    (m_function, 2),
    (base.m_output_sizes, 2),
    (base.m_in_binding, 4),
    (base.m_out_binding, 5),
    (base.m_shared_buffer, 1),
    (base.m_steps, 2),
]


def make_case(batch: int, index: int) -> base.Plan:
    rng = np.random.default_rng([SEED, batch, index])
    plan = valid_case(rng)
    return base.mutate(plan, rng, MUTATIONS, counts=(0, 1, 1, 2, 3))


@pytest.mark.parametrize("batch", range(BATCHES))
def test_fuzz_reduction_batch_writes_nothing_outside_the_bound_output(batch: int) -> None:
    """Random reduce, arg and hardmax descs and bindings on the native backend: only DmlError/TypeError/ValueError, guard bytes intact."""
    native_device()
    base.run_batch(batch, CASES_PER_BATCH, make_case, lambda plan: base.run_case(plan, "native"))


def test_the_fuzz_reaches_execution_for_every_unmutated_case() -> None:
    native_device()
    executed = 0
    for index in range(20):
        outcome = base.run_case(valid_case(np.random.default_rng([SEED, 99, index])), "native")
        executed += bool(outcome and outcome.executed and not outcome.problems)
    assert executed == 20
