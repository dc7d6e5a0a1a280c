"""The C element-wise kernel (dmlpy/native/element_wise.c) against the NumPy kernel and hand-worked values.

The C kernel takes ADD, ADD1, SUBTRACT, MULTIPLY, DIVIDE, MAX, MIN, POW, IDENTITY, ABS, NEGATE, CLIP, CLIP1,
SQRT, RECIP, EXP, LOG, TANH, ERF and CONSTANT_POW on FLOAT32 and FLOAT16 tensors; the NumPy kernel the
rest (element_wise.native_covers). Claims:

* on random shapes (rank 1 to 8), layouts (packed, broadcast, NHWC, transposed, padded) and values
  (NaN, infinities, zeros, subnormals) the native result has the NumPy kernel's bits for every
  operator but the transcendental ones, which are within 1 ulp of it (docs/deviations.md);
* ScaleBias rounds as the NumPy kernel does: FLOAT32 in double, rounded once (hand-worked values
  that float32 arithmetic and a fused multiply-add would both get wrong);
* MAX / MIN are fmax / fmin, CLIP propagates NaN and gives Max when Min > Max (hand values);
* 1 and 2 threads, and every instruction-set variant, give the same bytes;
* in place and overlapping outputs give the NumPy backend's answer;
* the C entry point re-checks what it is given (types, counts, extents, overlaps) and writes nothing
  when it refuses, nor anything outside the output's extent when it runs.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from conftest import _skip_native_unless_required

import dmlpy
from dmlpy import DML_OPERATOR_TYPE as OP
from dmlpy import DML_TENSOR_DATA_TYPE as DT
from dmlpy import FusedActivation, buffer_binding, buffer_tensor, nhwc_strides
from dmlpy.operators import REGISTRY, operator_desc
from dmlpy.operators.descs.helpers import DML_SCALE_BIAS
from dmlpy.operators.element_wise import NATIVE, native_covers
from dmlpy.structs import DML_SCALAR_UNION

BINARY = [OP.ELEMENT_WISE_ADD, OP.ELEMENT_WISE_ADD1, OP.ELEMENT_WISE_SUBTRACT, OP.ELEMENT_WISE_MULTIPLY, OP.ELEMENT_WISE_DIVIDE,
          OP.ELEMENT_WISE_MAX, OP.ELEMENT_WISE_MIN, OP.ELEMENT_WISE_POW]  # fmt: skip
UNARY = [OP.ELEMENT_WISE_IDENTITY, OP.ELEMENT_WISE_ABS, OP.ELEMENT_WISE_NEGATE, OP.ELEMENT_WISE_CLIP, OP.ELEMENT_WISE_CLIP1, OP.ELEMENT_WISE_SQRT,
         OP.ELEMENT_WISE_RECIP, OP.ELEMENT_WISE_EXP, OP.ELEMENT_WISE_LOG, OP.ELEMENT_WISE_TANH, OP.ELEMENT_WISE_ERF,
         OP.ELEMENT_WISE_CONSTANT_POW]  # fmt: skip
TRANSCENDENTAL = {OP.ELEMENT_WISE_EXP, OP.ELEMENT_WISE_LOG, OP.ELEMENT_WISE_TANH, OP.ELEMENT_WISE_ERF, OP.ELEMENT_WISE_POW, OP.ELEMENT_WISE_CONSTANT_POW}
WITH_SCALE_BIAS = set(UNARY) - {OP.ELEMENT_WISE_NEGATE} | {OP.ELEMENT_WISE_POW}
FLOATS = [np.float32, np.float16]


@pytest.fixture(autouse=True)
def _native() -> None:
    _skip_native_unless_required()


def spec_of(desc: Any) -> Any:
    return REGISTRY[OP(operator_desc(desc).Type)]


def desc_of(op: OP, tensors: list[Any], *, scale_bias: tuple[float, float] | None = None, fused: Any = None, **params: Any) -> Any:
    """The desc of ``op`` on ``tensors`` (inputs in slot order, then the output)."""
    cls = REGISTRY[op].desc_class
    names = [s.name for s in REGISTRY[op].support.slots]
    fields = dict(zip(names, tensors, strict=True))
    if op in WITH_SCALE_BIAS:
        fields["ScaleBias"] = None if scale_bias is None else DML_SCALE_BIAS(*scale_bias)
    if op == OP.ELEMENT_WISE_ADD1:
        fields["FusedActivation"] = fused
    return cls(**fields, **params)


def ordered(x: np.ndarray) -> np.ndarray:
    """Floats as integers in the order of their values (adjacent floats differ by 1)."""
    bits = x.view(np.int32 if x.dtype == np.float32 else np.int16).astype(np.int64)
    top = (1 << (8 * x.dtype.itemsize - 1)) - 1
    return np.where(bits < 0, -(bits & top), bits)


def ulp_distance(a: np.ndarray, b: np.ndarray) -> int:
    """Largest ulp distance between a and b; NaN must meet NaN, and ±0 count as one value."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    assert np.array_equal(nan_a, nan_b), f"NaN at different places: {np.argwhere(nan_a != nan_b)[:5].tolist()}"
    keep = ~nan_a
    if not keep.any():
        return 0
    return int(np.max(np.abs(ordered(a[keep]) - ordered(b[keep]))))


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """Same bits, except that any NaN matches any NaN and -0 matches +0."""
    return ulp_distance(a, b) == 0


# ---------------------------------------------------------------------------------------
# Random layouts


def layout(rng: np.random.Generator, sizes: tuple[int, ...], kind: str) -> tuple[int, ...] | None:
    """Element strides of one of the layout kinds (None: packed)."""
    rank = len(sizes)
    if kind == "packed":
        return None
    if kind == "nhwc" and rank == 4:
        return tuple(nhwc_strides(sizes))
    if kind in ("transposed", "nhwc"):
        order = [int(i) for i in rng.permutation(rank)]  # order[0] outermost in memory
        strides = [0] * rank
        step = 1
        for dim in reversed(order):
            strides[dim] = step
            step *= sizes[dim]
        return tuple(strides)
    if kind == "padded":
        strides = [0] * rank
        step = 1
        for dim in reversed(range(rank)):
            strides[dim] = step
            step *= sizes[dim] + int(rng.integers(0, 3))
        return tuple(strides)
    if kind == "broadcast":
        packed = [1] * rank
        for dim in reversed(range(rank - 1)):
            packed[dim] = packed[dim + 1] * sizes[dim + 1]
        zero = rng.random(rank) < 0.5
        return tuple(0 if z else s for z, s in zip(zero, packed, strict=True))
    raise AssertionError(kind)


def values(rng: np.random.Generator, sizes: tuple[int, ...], strides: tuple[int, ...] | None, dtype: Any, op: OP, slot: int) -> np.ndarray:
    """Logical input array for a layout: broadcast dims repeat one slice, as the memory does."""
    x = rng.standard_normal(sizes) * (3.0 if op not in (OP.ELEMENT_WISE_EXP, OP.ELEMENT_WISE_POW, OP.ELEMENT_WISE_CONSTANT_POW) else 1.5)
    if op == OP.ELEMENT_WISE_POW and slot == 1:
        x = np.round(x * 2) / 2  # exponents: halves and integers, negative bases then give numbers and NaNs
    special = rng.random(sizes)
    x = np.where(special < 0.03, np.nan, x)
    sign = np.where(rng.random(sizes) < 0.5, -1.0, 1.0)
    x = np.where((special >= 0.03) & (special < 0.05), np.inf * sign, x)
    x = np.where((special >= 0.05) & (special < 0.07), 0.0 * sign, x)
    x = np.where((special >= 0.07) & (special < 0.08), x * (1e-42 if dtype == np.float32 else 1e-6), x)
    x = x.astype(dtype)
    if strides is not None:
        for dim, stride in enumerate(strides):
            if stride == 0 and sizes[dim] > 1:
                x = np.repeat(np.take(x, [0], axis=dim), sizes[dim], axis=dim)
    return x


def clip1_bounds(dtype: Any, low: float, high: float) -> dict[str, Any]:
    """CLIP1's MinMaxDataType, Min and Max: DML_SCALAR_UNIONs holding the bounds in the tensor's own type."""
    data_type = DT.FLOAT16 if np.dtype(dtype) == np.float16 else DT.FLOAT32
    def union(v: float) -> DML_SCALAR_UNION:
        return DML_SCALAR_UNION(Bytes=np.array(v, dtype).tobytes().ljust(8, b"\0"))
    return {"MinMaxDataType": data_type, "Min": union(low), "Max": union(high)}


def random_case(rng: np.random.Generator, op: OP, dtype: Any) -> tuple[Any, dict[str, np.ndarray]]:
    rank = int(rng.integers(1, 9))
    max_size = 7 if rank <= 3 else (4 if rank <= 5 else 2)
    sizes = tuple(int(s) for s in rng.integers(1, max_size + 1, rank))
    n_in = 2 if op in BINARY else 1
    in_layouts = [layout(rng, sizes, str(rng.choice(["packed", "broadcast", "nhwc", "transposed", "padded"]))) for _ in range(n_in)]
    out_layout = layout(rng, sizes, str(rng.choice(["packed", "nhwc", "transposed", "padded"])))
    tensors = [buffer_tensor(dtype, sizes, s) for s in in_layouts] + [buffer_tensor(dtype, sizes, out_layout)]
    params: dict[str, Any] = {}
    if op == OP.ELEMENT_WISE_CLIP:
        low, high = sorted(float(v) for v in rng.uniform(-2, 2, 2))
        params = {"Min": low, "Max": high}
    if op == OP.ELEMENT_WISE_CLIP1:
        low, high = sorted(float(v) for v in rng.uniform(-2, 2, 2))
        params = clip1_bounds(dtype, low, high)
    if op == OP.ELEMENT_WISE_CONSTANT_POW:
        params = {"Exponent": float(rng.choice([2.0, 0.5, -1.0, 3.0, 1.5]))}
    scale_bias = None
    if op in WITH_SCALE_BIAS and rng.random() < 0.5:
        scale_bias = (float(np.float32(rng.uniform(-2, 2))), float(np.float32(rng.uniform(-1, 1))))
    fused = None
    if op == OP.ELEMENT_WISE_ADD1:
        fused = [None, FusedActivation.relu(), FusedActivation.identity()][int(rng.integers(0, 3))]
    desc = desc_of(op, tensors, scale_bias=scale_bias, fused=fused, **params)
    names = [s.name for s in REGISTRY[op].support.slots if s.kind == "input"]
    inputs = {name: values(rng, sizes, strides, dtype, op, i) for i, (name, strides) in enumerate(zip(names, in_layouts, strict=True))}
    return desc, inputs


def run_both(desc: Any, inputs: dict[str, np.ndarray], threads: int = 0) -> tuple[np.ndarray, np.ndarray]:
    assert spec_of(desc).runs_natively(desc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dmlpy.DmlWarning)
        native = dmlpy.run(desc, device=dmlpy.create_device(backend="native", threads=threads), **inputs)
        reference = dmlpy.run(desc, backend="numpy", **inputs)
    return np.asarray(native), np.asarray(reference)


# ---------------------------------------------------------------------------------------
# Native against NumPy on random cases


@pytest.mark.parametrize("dtype", FLOATS, ids=["FLOAT32", "FLOAT16"])
@pytest.mark.parametrize("op", BINARY + UNARY, ids=lambda op: op.name)
def test_native_matches_the_numpy_kernel_on_random_shapes_layouts_and_values(op: OP, dtype: Any) -> None:
    """Bits equal for the exact operators, within 1 ulp for the transcendental ones (docs/deviations.md)."""
    rng = np.random.default_rng([int(op), np.dtype(dtype).itemsize])
    for trial in range(12):
        desc, inputs = random_case(rng, op, dtype)
        native, reference = run_both(desc, inputs)
        bound = 1 if op in TRANSCENDENTAL else 0
        assert ulp_distance(native, reference) <= bound, (trial, desc)


@pytest.mark.parametrize(
    ("sizes", "a_strides", "b_strides", "y_strides"),
    [
        pytest.param((1, 256, 14, 14), None, None, None, id="packed NCHW: one contiguous row"),
        pytest.param((1, 256, 14, 14), (0, 1, 0, 0), None, None, id="a per-channel bias broadcast over NCHW"),
        pytest.param((1, 256, 56, 56), None, (0, 1, 0, 0), None, id="a per-channel bias as B: one value along rows of several chunks"),
        pytest.param((1, 256, 56, 56), (0, 1, 0, 0), None, tuple(nhwc_strides((1, 256, 56, 56))), id="a per-channel bias as A into an NHWC output"),
        pytest.param((2, 16, 9, 11), tuple(nhwc_strides((2, 16, 9, 11))), tuple(nhwc_strides((2, 16, 9, 11))), tuple(nhwc_strides((2, 16, 9, 11))), id="all NHWC"),
        pytest.param((2, 16, 9, 11), tuple(nhwc_strides((2, 16, 9, 11))), None, None, id="NHWC plus NCHW into NCHW: a transposing read"),
        pytest.param((3, 1030), (1, 3), (0, 0), (1030, 1), id="a transposed matrix plus a scalar, rows longer than a chunk"),
        pytest.param((1, 100, 70, 33), tuple(nhwc_strides((1, 100, 70, 33))), None, tuple(nhwc_strides((1, 100, 70, 33))), id="NHWC plus NCHW into NHWC: tiles of 64 with remainders"),
        pytest.param((5, 7, 3), (0, 0, 0), (21, 3, 1), (1, 5, 35), id="a scalar into a fully reversed output layout"),
        pytest.param((2, 1, 2, 1, 2, 1, 2, 3), None, (0, 0, 12, 0, 6, 0, 3, 1), None, id="eight dims with size-1 and broadcast dims"),
    ],
)
@pytest.mark.parametrize("dtype", FLOATS, ids=["FLOAT32", "FLOAT16"])
def test_add1_with_fused_relu_matches_numpy_on_named_layouts(sizes: tuple[int, ...], a_strides: Any, b_strides: Any, y_strides: Any, dtype: Any) -> None:
    rng = np.random.default_rng(7)
    desc = desc_of(OP.ELEMENT_WISE_ADD1, [buffer_tensor(dtype, sizes, a_strides), buffer_tensor(dtype, sizes, b_strides), buffer_tensor(dtype, sizes, y_strides)],
                   fused=FusedActivation.relu())  # fmt: skip
    a, b = values(rng, sizes, a_strides, dtype, OP.ELEMENT_WISE_ADD, 0), values(rng, sizes, b_strides, dtype, OP.ELEMENT_WISE_ADD, 1)
    native, reference = run_both(desc, {"ATensor": a, "BTensor": b})
    assert same(native, reference)
    with np.errstate(invalid="ignore"):
        expected = np.maximum(a.astype(np.float64) + b.astype(np.float64), 0.0).astype(dtype)  # relu(a + b), rounded once
    assert same(native, expected)


@pytest.mark.parametrize("fused", [FusedActivation.leaky_relu(0.1), FusedActivation.sigmoid(), FusedActivation.gelu()], ids=["leaky relu", "sigmoid", "gelu"])
def test_add1_with_other_fused_activations_is_within_an_ulp_of_numpy(fused: Any) -> None:
    """The C activations compute in float32 (as the standalone ACTIVATION_* kernels do), NumPy in float64."""
    rng = np.random.default_rng(3)
    sizes = (2, 8, 5, 7)
    desc = desc_of(OP.ELEMENT_WISE_ADD1, [buffer_tensor(np.float32, sizes)] * 3, fused=fused)
    a, b = (rng.standard_normal(sizes).astype(np.float32) for _ in range(2))
    native, reference = run_both(desc, {"ATensor": a, "BTensor": b})
    np.testing.assert_allclose(native, reference, rtol=4e-6, atol=1e-7)


# ---------------------------------------------------------------------------------------
# Hand-worked values


F32 = np.float32


@pytest.mark.parametrize(
    ("dtype", "x", "scale", "bias", "expected"),
    [
        # x = s = 1 + 2^-12, b = -1: x*s + b = 2^-11 + 2^-24 exactly, a float32. float32 arithmetic rounds
        # x*s = 1 + 2^-11 + 2^-24 (a tie) to 1 + 2^-11 and gives 2^-11.
        pytest.param(np.float32, 1 + 2**-12, 1 + 2**-12, -1.0, 2**-11 + 2**-24, id="FLOAT32 x*s+b in double: 2^-11 + 2^-24, where float32 steps give 2^-11"),
        # x = 2^-16 (1 + 2^-23), s = 1 - 2^-23, b = 256 + 2^-15: x*s + b = 256 + 2^-15 + 2^-16 - 2^-62, just below
        # the midpoint of 256 + 2^-15 and 256 + 2^-14. A fused multiply-add rounds once, down; double rounds to
        # the midpoint, then to the even neighbour 256 + 2^-14, which is what NumPy's float64 working type gives.
        pytest.param(np.float32, 2**-16 * (1 + 2**-23), 1 - 2**-23, 256 + 2**-15, 256 + 2**-14, id="FLOAT32 x*s+b double-rounded: 256 + 2^-14, where an fma gives 256 + 2^-15"),
        # FLOAT16 computes in float32, x*s then +b: x = 1 + 2^-10, s = 1 + 2^-23, b = -1: x*s = 1 + 2^-10 + 2^-23 + 2^-33
        # rounds to 1 + 2^-10 + 2^-23 in float32; minus 1: 2^-10 + 2^-23, which binary16 rounds to 2^-10.
        pytest.param(np.float16, 1 + 2**-10, 1 + 2**-23, -1.0, 2**-10, id="FLOAT16 x*s then +b in float32, rounded to binary16: 2^-10"),
    ],
)
@pytest.mark.parametrize("op", [OP.ELEMENT_WISE_IDENTITY, OP.ELEMENT_WISE_ABS, OP.ELEMENT_WISE_CLIP], ids=lambda op: op.name)
def test_scale_bias_rounds_as_the_numpy_kernel_documents(device: dmlpy.Device, op: OP, dtype: Any, x: float, scale: float, bias: float, expected: float) -> None:
    assert float(F32(scale)) == scale and float(F32(bias)) == bias and float(dtype(x)) == x
    params = {"Min": -1e30, "Max": 1e30} if op == OP.ELEMENT_WISE_CLIP else {}
    desc = desc_of(op, [buffer_tensor(dtype, (1, 3))] * 2, scale_bias=(scale, bias), **params)
    y = dmlpy.run(desc, device=device, InputTensor=np.full((1, 3), x, dtype))
    assert y.tolist() == [[expected] * 3]


NAN = math.nan


@pytest.mark.parametrize(
    ("op", "a", "b", "expected"),
    [
        pytest.param(OP.ELEMENT_WISE_MAX, [NAN, 1.0, NAN, -2.0], [1.0, NAN, NAN, 3.0], [1.0, 1.0, NAN, 3.0], id="MAX: a NaN loses to a number, two NaNs give NaN"),
        pytest.param(OP.ELEMENT_WISE_MIN, [NAN, 1.0, NAN, -2.0], [1.0, NAN, NAN, 3.0], [1.0, 1.0, NAN, -2.0], id="MIN: a NaN loses to a number, two NaNs give NaN"),
        pytest.param(OP.ELEMENT_WISE_MAX, [-math.inf, 5.0, 0.5, 7.0], [math.inf, -math.inf, 0.25, 7.0], [math.inf, 5.0, 0.5, 7.0], id="MAX of infinities and ties"),
        pytest.param(OP.ELEMENT_WISE_DIVIDE, [1.0, -1.0, 0.0, 6.0], [0.0, 0.0, 0.0, 4.0], [math.inf, -math.inf, NAN, 1.5], id="DIVIDE by zero: signed infinity, 0/0 NaN"),
        pytest.param(OP.ELEMENT_WISE_SUBTRACT, [math.inf, 1.0, 3e38, 0.5], [math.inf, 1.0, -3e38, 0.25], [NAN, 0.0, math.inf, 0.25], id="SUBTRACT: inf - inf NaN, overflow to inf"),
    ],
)
@pytest.mark.parametrize("dtype", FLOATS, ids=["FLOAT32", "FLOAT16"])
def test_binary_operators_give_hand_values_at_the_edges(device: dmlpy.Device, op: OP, a: list[float], b: list[float], expected: list[float], dtype: Any) -> None:
    desc = desc_of(op, [buffer_tensor(dtype, (4,))] * 3)
    with np.errstate(over="ignore"):
        a_arr, b_arr, want = (np.array(v).astype(dtype) for v in (a, b, expected))
    y = dmlpy.run(desc, device=device, ATensor=a_arr, BTensor=b_arr)
    assert same(y, want), y


@pytest.mark.parametrize(
    ("low", "high", "x", "expected"),
    [
        pytest.param(-1.0, 2.0, [NAN, -5.0, 0.5, 9.0, -math.inf, math.inf], [NAN, -1.0, 0.5, 2.0, -1.0, 2.0], id="CLIP -1..2: NaN stays NaN, infinities clip"),
        pytest.param(3.0, 1.0, [0.0, 2.0, 5.0, NAN, 1.0, 3.0], [1.0, 1.0, 1.0, NAN, 1.0, 1.0], id="CLIP with Min > Max gives Max: min(max(x, 3), 1)"),
        pytest.param(NAN, 1.0, [0.0, 2.0, -5.0, NAN, 1.0, 3.0], [NAN] * 6, id="CLIP with a NaN Min gives NaN everywhere: max(x, NaN) is NaN"),
        pytest.param(-1.0, NAN, [0.0, 2.0, -5.0, NAN, 1.0, 3.0], [NAN] * 6, id="CLIP with a NaN Max gives NaN everywhere"),
    ],
)
@pytest.mark.parametrize("dtype", FLOATS, ids=["FLOAT32", "FLOAT16"])
@pytest.mark.parametrize("op", [OP.ELEMENT_WISE_CLIP, OP.ELEMENT_WISE_CLIP1], ids=["CLIP", "CLIP1"])
def test_clip_gives_hand_values(device: dmlpy.Device, op: OP, low: float, high: float, x: list[float], expected: list[float], dtype: Any) -> None:
    bounds = {"Min": low, "Max": high} if op == OP.ELEMENT_WISE_CLIP else clip1_bounds(dtype, low, high)
    desc = desc_of(op, [buffer_tensor(dtype, (6,))] * 2, **bounds)
    y = dmlpy.run(desc, device=device, InputTensor=np.array(x, dtype))
    assert same(y, np.array(expected, dtype)), y


# ---------------------------------------------------------------------------------------
# Transcendental functions: within 1 ulp of the correctly rounded value


ORACLES: dict[OP, Callable[[float], float]] = {
    OP.ELEMENT_WISE_EXP: math.exp,
    OP.ELEMENT_WISE_LOG: lambda v: math.log(v) if v > 0 else (-math.inf if v == 0 else math.nan),
    OP.ELEMENT_WISE_TANH: math.tanh,
    OP.ELEMENT_WISE_ERF: math.erf,
    OP.ELEMENT_WISE_CONSTANT_POW: lambda v: math.pow(v, 1.5) if v >= 0 else math.nan,
}


@pytest.mark.parametrize("dtype", FLOATS, ids=["FLOAT32", "FLOAT16"])
@pytest.mark.parametrize("op", list(ORACLES), ids=lambda op: op.name)
def test_transcendental_results_are_within_one_ulp_of_the_correctly_rounded_value(device: dmlpy.Device, op: OP, dtype: Any) -> None:
    """Oracle: Python's math in double, rounded once to the stored type (a FLOAT16 g(x) is a float32, as its working type)."""
    rng = np.random.default_rng(int(op))
    x = np.concatenate([rng.uniform(-12, 12, 3000), rng.uniform(-1, 1, 1000), rng.uniform(0, 80, 500)]).astype(dtype)
    params = {"Exponent": 1.5} if op == OP.ELEMENT_WISE_CONSTANT_POW else {}
    desc = desc_of(op, [buffer_tensor(dtype, x.shape)] * 2, **params)
    y = dmlpy.run(desc, device=device, InputTensor=x)
    with np.errstate(over="ignore"):
        expected = np.array([_safe(ORACLES[op], float(v)) for v in x]).astype(dtype)
    assert ulp_distance(y, expected) <= 1


def test_erf_by_its_series_rounds_as_the_c_library_on_a_dense_sweep(device: dmlpy.Device) -> None:
    """ERF's C kernel sums the Maclaurin series in double for |x| <= 2.5 (17, 25 or 41 terms by a chunk's largest |x|),
    the C library beyond: every float32 of the sweep rounds as math.erf does (its bound allows 1 ulp; none was seen)."""
    x = np.concatenate([np.linspace(-2.75, 2.75, 200_001), [1.0, -1.0, 1.5, 2.5, -2.5, np.nextafter(2.5, 3), 1e-40, -0.0]]).astype(np.float32)
    narrow = np.linspace(-0.99, 0.99, 3001).astype(np.float32)  # chunks whose largest |x| is below 1 (17 terms)
    for values in (x, narrow):
        y = dmlpy.run(desc_of(OP.ELEMENT_WISE_ERF, [buffer_tensor(np.float32, values.shape)] * 2), device=device, InputTensor=values)
        expected = np.array([math.erf(float(v)) for v in values]).astype(np.float32)
        assert np.asarray(y).tobytes() == expected.tobytes()


CUBE_VALUES = [0.0, -0.0, 1.0, -1.0, 3.0, -2.5, 1e-20, -1e-30, 7e12, -7e12, 1e-45, np.inf, -np.inf, np.nan, 1.1754944e-38]


@pytest.mark.parametrize("dtype", FLOATS, ids=["FLOAT32", "FLOAT16"])
@pytest.mark.parametrize("scale_bias", [None, (0.7, -0.3)], ids=["no ScaleBias", "ScaleBias 0.7 -0.3"])
@pytest.mark.parametrize("op", [OP.ELEMENT_WISE_CONSTANT_POW, OP.ELEMENT_WISE_POW], ids=["CONSTANT_POW 3", "POW by a tensor of 3s"])
def test_cubes_round_as_pow_does(device: dmlpy.Device, op: OP, scale_bias: Any, dtype: Any) -> None:
    """x^3 (GELU's tanh form) is (t * t) * t in double, no pow call: within 1 ulp of math.pow(g(x), 3) rounded, and
    without ScaleBias on FLOAT32 the same bits (t * t is exact, so one rounding to double, then one to float)."""
    with np.errstate(over="ignore"):
        x = np.concatenate([np.array(CUBE_VALUES), np.random.default_rng(3).standard_normal(3000) * 4]).astype(dtype)
    tensor = buffer_tensor(dtype, x.shape)
    if op == OP.ELEMENT_WISE_POW:
        desc = desc_of(op, [tensor] * 3, scale_bias=scale_bias)
        y = dmlpy.run(desc, device=device, InputTensor=x, ExponentTensor=np.full_like(x, 3))
    else:
        desc = desc_of(op, [tensor] * 2, scale_bias=scale_bias, Exponent=3.0)
        y = dmlpy.run(desc, device=device, InputTensor=x)
    scale, bias = (float(np.float32(v)) for v in scale_bias) if scale_bias else (1.0, 0.0)  # FLOAT fields
    if scale_bias is None:
        g = [float(v) for v in x]
    elif dtype == np.float16:  # a FLOAT16 g(x) is a float32, as its working type
        g = [float(np.float32(np.float32(v) * np.float32(scale)) + np.float32(bias)) for v in x.astype(np.float32)]
    else:
        g = [float(v) * scale + bias for v in x]
    with np.errstate(over="ignore", invalid="ignore"):
        expected = np.array([_safe(lambda t: math.pow(t, 3), v) for v in g]).astype(dtype)
    assert ulp_distance(np.asarray(y), expected) <= 1
    if scale_bias is None and dtype == np.float32:
        assert np.asarray(y).tobytes() == expected.tobytes()


def _safe(fn: Callable[[float], float], v: float) -> float:
    try:
        return fn(v)
    except OverflowError:
        return math.inf


# ---------------------------------------------------------------------------------------
# Threads, variants, in place, overlapping outputs


THREAD_CASES = [
    pytest.param(OP.ELEMENT_WISE_ADD1, np.float32, (1, 64, 128, 128), None, id="ADD1+RELU fp32 1x64x128x128 packed"),
    pytest.param(OP.ELEMENT_WISE_IDENTITY, np.float16, (1, 64, 160, 160), (1, 1, 64 * 160, 64), id="IDENTITY fp16 into an NHWC output: a transpose"),
    pytest.param(OP.ELEMENT_WISE_EXP, np.float32, (8, 128, 96), (1, 8, 1024), id="EXP fp32 into a reversed output layout"),
    pytest.param(OP.ELEMENT_WISE_MULTIPLY, np.float32, (1, 4, 1024, 1100), None, id="MULTIPLY fp32 with an 18 MB output: non-temporal stores"),
]


@pytest.mark.parametrize(("op", "dtype", "sizes", "y_strides"), THREAD_CASES)
def test_one_and_two_threads_give_the_same_bytes(op: OP, dtype: Any, sizes: tuple[int, ...], y_strides: Any) -> None:
    rng = np.random.default_rng(11)
    n_in = 2 if op in BINARY else 1
    tensors = [buffer_tensor(dtype, sizes) for _ in range(n_in)] + [buffer_tensor(dtype, sizes, y_strides)]
    desc = desc_of(op, tensors, fused=FusedActivation.relu() if op == OP.ELEMENT_WISE_ADD1 else None,
                   scale_bias=(0.5, 0.25) if op in WITH_SCALE_BIAS else None)  # fmt: skip
    names = [s.name for s in REGISTRY[op].support.slots if s.kind == "input"]
    inputs = {n: rng.standard_normal(sizes).astype(dtype) for n in names}
    one = dmlpy.run(desc, device=dmlpy.create_device(backend="native", threads=1), **inputs)
    two = dmlpy.run(desc, device=dmlpy.create_device(backend="native", threads=2), **inputs)
    assert one.tobytes() == two.tobytes()
    reference = dmlpy.run(desc, backend="numpy", **inputs)
    assert ulp_distance(one, reference) <= (1 if op in TRANSCENDENTAL else 0)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("sizes", [
    pytest.param((2, 100, 70, 133), id="tiles with remainders of 8 x 8 blocks in both dims"),
    pytest.param((1, 8, 8, 8), id="whole 8 x 8 blocks only"),
    pytest.param((1, 3, 5, 7), id="fewer channels than one block"),
    pytest.param((1, 200, 1, 9), id="one row"),
])  # fmt: skip
def test_identity_into_an_nhwc_output_is_a_transpose_of_the_very_bits(threads: int, sizes: tuple[int, ...]) -> None:
    """FLOAT32 IDENTITY without ScaleBias copies (NaN payloads included): the NHWC memory is x.transpose(0, 2, 3, 1)."""
    x = np.random.default_rng(4).integers(0, 2**32, sizes, dtype=np.uint32).view(np.float32)
    desc = desc_of(OP.ELEMENT_WISE_IDENTITY, [buffer_tensor(np.float32, sizes), buffer_tensor(np.float32, sizes, nhwc_strides(sizes))])
    y = dmlpy.run(desc, device=dmlpy.create_device(backend="native", threads=threads), InputTensor=x)
    assert np.ascontiguousarray(y.transpose(0, 2, 3, 1)).tobytes() == np.ascontiguousarray(x.transpose(0, 2, 3, 1)).tobytes()


@pytest.mark.parametrize("threads", [1, 2])
def test_a_channel_shuffle_with_an_output_of_4_mb_is_a_copy_of_the_very_bits(threads: int) -> None:
    """{1, 2, 60, 97, 91} read as {1, 60, 2, 97, 91} (4.2 MB): rows of 8827 floats copied with non-temporal stores
    where the variant has AVX, from every alignment of a row's start; NaN payloads included."""
    grouped = (1, 2, 60, 97, 91)
    shuffled = (1, 60, 2, 97, 91)
    x = np.random.default_rng(6).integers(0, 2**32, grouped, dtype=np.uint32).view(np.float32)
    packed = (2 * 60 * 97 * 91, 60 * 97 * 91, 97 * 91, 91, 1)
    read = (packed[0], packed[2], packed[1], packed[3], packed[4])
    desc = desc_of(OP.ELEMENT_WISE_IDENTITY, [buffer_tensor(np.float32, shuffled, read), buffer_tensor(np.float32, shuffled)])
    y = dmlpy.run(desc, device=dmlpy.create_device(backend="native", threads=threads), InputTensor=x.transpose(0, 2, 1, 3, 4))
    assert np.ascontiguousarray(y).tobytes() == np.ascontiguousarray(x.transpose(0, 2, 1, 3, 4)).tobytes()


def test_every_instruction_set_variant_gives_the_bytes_of_the_baseline() -> None:
    from dmlpy.backends import native

    ffi, lib = native.library()
    runnable = ffi.string(lib.dmlpy_native_isa_runnable()).decode().split()
    if len(runnable) < 2:
        pytest.skip("this CPU runs only the baseline variant")
    rng = np.random.default_rng(5)
    cases = []
    for op, dtype in itertools.product([OP.ELEMENT_WISE_ADD1, OP.ELEMENT_WISE_MAX, OP.ELEMENT_WISE_CLIP, OP.ELEMENT_WISE_CLIP1, OP.ELEMENT_WISE_EXP, OP.ELEMENT_WISE_SQRT], FLOATS):
        cases += [random_case(rng, op, dtype) for _ in range(3)]
    try:
        results = {}
        for name in runnable:
            assert lib.dmlpy_native_select_isa(name.encode()) == 0
            results[name] = [np.asarray(dmlpy.run(d, backend="native", **i)).tobytes() for d, i in cases]
    finally:
        lib.dmlpy_native_select_isa(ffi.NULL)
    for name in runnable[1:]:
        assert results[name] == results["baseline"], name


def run_bound(device: dmlpy.Device, desc: Any, buffers: list[dmlpy.Buffer], outputs: list[dmlpy.Buffer]) -> None:
    compiled = device.compile_operator(device.create_operator(desc))
    recorder, command_list = device.create_command_recorder(), device.create_command_list()
    initializer = device.create_operator_initializer([compiled])
    recorder.record_dispatch(command_list, initializer, device.create_binding_table(initializer))
    table = device.create_binding_table(compiled)
    table.bind_inputs([buffer_binding(b) for b in buffers])
    table.bind_outputs([buffer_binding(b) for b in outputs])
    recorder.record_dispatch(command_list, compiled, table)
    command_list.close()
    device.execute(command_list)


@pytest.mark.parametrize("slot", [0, 1], ids=["output is ATensor", "output is BTensor"])
@pytest.mark.parametrize("strides", [None, (1, 3)], ids=["packed", "transposed"])
def test_in_place_add_writes_a_plus_b_over_its_input(device: dmlpy.Device, slot: int, strides: Any) -> None:
    sizes = (3, 1100)
    tensor = buffer_tensor(np.float32, sizes, strides)
    desc = desc_of(OP.ELEMENT_WISE_SUBTRACT, [tensor] * 3)
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal(3300).astype(np.float32) for _ in range(2))
    buffers = [device.create_buffer(a.nbytes), device.create_buffer(b.nbytes)]
    buffers[0].upload(a)
    buffers[1].upload(b)
    run_bound(device, desc, buffers, [buffers[slot]])
    got = np.frombuffer(bytes(buffers[slot].data), np.float32)
    np.testing.assert_array_equal(got, (a.astype(np.float64) - b.astype(np.float64)).astype(np.float32))  # element for element: layout-free


def test_an_overlapping_output_keeps_the_last_row_major_index(device: dmlpy.Device) -> None:
    """Output strides {0, 1} over 3 x 4: the last row wins; hand-computed from the inputs' last row."""
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.full((3, 4), 0.5, np.float32)
    desc = desc_of(OP.ELEMENT_WISE_ADD, [buffer_tensor(np.float32, (3, 4)), buffer_tensor(np.float32, (3, 4)), buffer_tensor(np.float32, (3, 4), (0, 1))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dmlpy.DmlWarning)
        y = dmlpy.run(desc, device=device, ATensor=a, BTensor=b)
    assert y.tolist() == [[8.5, 9.5, 10.5, 11.5]] * 3


# ---------------------------------------------------------------------------------------
# Which descs C takes


@pytest.mark.parametrize(
    ("desc", "native"),
    [
        pytest.param(desc_of(OP.ELEMENT_WISE_ADD, [buffer_tensor(np.float32, (2, 2))] * 3), True, id="ADD FLOAT32 runs in C"),
        pytest.param(desc_of(OP.ELEMENT_WISE_ADD, [buffer_tensor(np.int32, (2, 2))] * 3), False, id="ADD INT32 runs on NumPy"),
        pytest.param(desc_of(OP.ELEMENT_WISE_POW, [buffer_tensor(np.float32, (2, 2)), buffer_tensor(np.int32, (2, 2)), buffer_tensor(np.float32, (2, 2))]), False,
                     id="POW with an INT32 exponent runs on NumPy"),
        pytest.param(desc_of(OP.ELEMENT_WISE_ADD1, [buffer_tensor(np.float16, (2, 2))] * 3, fused=FusedActivation.gelu()), True, id="ADD1 with a fused GELU runs in C"),
        pytest.param(desc_of(OP.ELEMENT_WISE_ROUND, [buffer_tensor(np.float32, (2, 2))] * 2, RoundingMode=0), False, id="ROUND has no C kernel"),
    ],
)
def test_native_covers_says_which_descs_c_takes(desc: Any, native: bool) -> None:
    assert spec_of(desc).runs_natively(desc) == native


def test_the_numpy_fallback_gives_the_same_answer_on_both_backends() -> None:
    desc = desc_of(OP.ELEMENT_WISE_MAX, [buffer_tensor(np.int32, (2, 3))] * 3)
    a = np.array([[1, -5, 7], [2**31 - 1, 0, -(2**31)]], np.int32)
    b = np.array([[3, -6, 7], [0, -1, 5]], np.int32)
    for backend in ("native", "numpy"):
        assert dmlpy.run(desc, backend=backend, ATensor=a, BTensor=b).tolist() == [[3, -5, 7], [2**31 - 1, 0, 5]]


def test_native_covers_every_registered_c_operator() -> None:
    assert {t for t in NATIVE if REGISTRY[t].native} == NATIVE
    assert not native_covers(desc_of(OP.ELEMENT_WISE_ADD, [buffer_tensor(np.float64, (2,))] * 3))


# ---------------------------------------------------------------------------------------
# The C entry point checks what it is given


def c_call(desc: Any, in_buffers: list[np.ndarray | None], out_buffer: np.ndarray, *, input_count: int | None = None) -> str:
    """dmlpy_execute on raw byte arrays; returns the status name."""
    from dmlpy.backends import native

    ffi, lib = native.library()
    lowered = native.Lowered(desc)
    keep = []
    ins = ffi.new("DMLPY_BOUND_BUFFER[]", max(1, len(in_buffers)))
    for i, arr in enumerate(in_buffers):
        if arr is not None:
            data = ffi.from_buffer("uint8_t[]", arr)
            keep.append(data)
            ins[i].Data, ins[i].SizeInBytes = data, arr.nbytes
    out = ffi.new("DMLPY_BOUND_BUFFER[]", 1)
    data = ffi.from_buffer("uint8_t[]", out_buffer, require_writable=True)
    out[0].Data, out[0].SizeInBytes = data, out_buffer.nbytes
    count = len(in_buffers) if input_count is None else input_count
    return ffi.string(lib.dmlpy_status_name(lib.dmlpy_execute(lowered.pointer, count, ins, 1, out, 1))).decode()


GUARD = 0xA5


def guarded(nbytes: int, guard: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """A sentinel-filled block and the view of nbytes inside it, 16-byte aligned, guard bytes either side."""
    block = np.full(nbytes + 2 * guard, GUARD, np.uint8)
    return block, block[guard : guard + nbytes]


def test_a_binary_desc_with_strided_tensors_writes_only_its_output_extent() -> None:
    sizes, y_strides = (3, 5), (12, 2)  # reaches elements 0 .. 32: bytes [0, 132); the gaps stay untouched
    desc = desc_of(OP.ELEMENT_WISE_ADD, [buffer_tensor(np.float32, sizes), buffer_tensor(np.float32, sizes, (0, 1)), buffer_tensor(np.float32, sizes, y_strides)])
    a = np.arange(15, dtype=np.float32)
    b = np.array([10, 20, 30, 40, 50], np.float32)
    block, y = guarded(33 * 4)
    assert c_call(desc, [a.view(np.uint8), b.view(np.uint8)], y) == "DMLPY_OK"
    got = y.view(np.float32)
    offsets = [r * 12 + c * 2 for r in range(3) for c in range(5)]
    assert got[offsets].tolist() == [a[r * 5 + c] + b[c] for r in range(3) for c in range(5)]
    untouched = np.ones(33, bool)
    untouched[offsets] = False
    assert (y.view(np.uint32)[untouched] == 0xA5A5A5A5).all()
    assert (block[:64] == GUARD).all() and (block[64 + 132 :] == GUARD).all()


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        pytest.param("b one element short", "DMLPY_E_BUFFER_TOO_SMALL", id="an input buffer one element short of its extent is refused"),
        pytest.param("output one byte short", "DMLPY_E_BUFFER_TOO_SMALL", id="an output one byte short is refused"),
        pytest.param("broadcast b past its buffer", "DMLPY_E_BUFFER_TOO_SMALL", id="strides reaching past the bound input are refused"),
        pytest.param("mixed types", "DMLPY_E_INVALID_DESC", id="a FLOAT16 input with FLOAT32 tensors is refused"),
        pytest.param("integer tensors", "DMLPY_E_INVALID_DESC", id="INT32 tensors are refused by C (NumPy runs them)"),
        pytest.param("different sizes", "DMLPY_E_INVALID_DESC", id="an input whose sizes differ from the output's is refused"),
        pytest.param("one input bound", "DMLPY_E_BINDING_COUNT", id="one binding for two input slots is refused"),
        pytest.param("input overlaps output", "DMLPY_E_INVALID_ARGUMENT", id="an input overlapping the output off by one element is refused"),
        pytest.param("no B tensor", "DMLPY_E_NULL_ARGUMENT", id="a NULL BTensor is refused"),
        pytest.param("unknown fused activation", "DMLPY_E_INVALID_DESC", id="a FusedActivation of a non-activation type is refused"),
    ],
)
def test_the_c_kernel_refuses_bad_calls_and_writes_nothing(case: str, expected: str) -> None:
    sizes = (4, 6)
    t32 = buffer_tensor(np.float32, sizes)
    a = np.ones(24, np.float32).view(np.uint8)
    b = np.ones(24, np.float32).view(np.uint8)
    block, y = guarded(96)
    tensors: list[Any] = [t32, t32, t32]
    inputs: list[Any] = [a, b]
    fused = None
    count = None
    if case == "b one element short":
        inputs[1] = b[:-4]
    elif case == "output one byte short":
        block, y = guarded(95)
    elif case == "broadcast b past its buffer":
        tensors[1] = buffer_tensor(np.float32, sizes, (0, 5))
    elif case == "mixed types":
        tensors[1] = buffer_tensor(np.float16, sizes)
    elif case == "integer tensors":
        tensors = [buffer_tensor(np.int32, sizes)] * 3
    elif case == "different sizes":
        tensors[0] = buffer_tensor(np.float32, (4, 5))
    elif case == "one input bound":
        count = 1
    elif case == "input overlaps output":
        shared = np.ones(100, np.uint8)
        inputs[0] = shared[4:100]
        block, y = shared, shared[0:96]
    elif case == "no B tensor":
        tensors[1] = None
    elif case == "unknown fused activation":
        fused = dmlpy.DML_OPERATOR_DESC(OP.ELEMENT_WISE_ADD, REGISTRY[OP.ELEMENT_WISE_ADD].desc_class(None, None, None))
    if fused is not None:
        desc = desc_of(OP.ELEMENT_WISE_ADD1, tensors, fused=fused)
    else:
        desc = desc_of(OP.ELEMENT_WISE_ADD, tensors)
    before = block.copy()
    assert c_call(desc, inputs, y, input_count=count) == expected
    assert block.tobytes() == before.tobytes()


def test_the_c_kernel_fuzzed_with_random_layouts_and_buffer_sizes_writes_only_inside_the_output_extent() -> None:
    """Random ranks, sizes, strides (broadcast, gaps, overlapping outputs) and bound sizes, straight into
    dmlpy_execute: it runs exactly when every tensor's extent fits its buffer, the output's bytes outside
    its reachable elements and the guard bytes stay as they were, and inputs are never written."""
    rng = np.random.default_rng(99)
    ran = refused = 0
    for trial in range(400):
        op = [OP.ELEMENT_WISE_ADD, OP.ELEMENT_WISE_MAX, OP.ELEMENT_WISE_POW, OP.ELEMENT_WISE_CLIP, OP.ELEMENT_WISE_EXP, OP.ELEMENT_WISE_IDENTITY][trial % 6]
        dtype = FLOATS[int(rng.integers(0, 2))]
        rank = int(rng.integers(1, 6))
        sizes = tuple(int(s) for s in rng.integers(1, 5, rank))
        n_in = 2 if op in BINARY else 1
        strides = [tuple(int(s) for s in rng.integers(0, 20, rank)) for _ in range(n_in + 1)]
        extents = [(sum((n - 1) * s for n, s in zip(sizes, st, strict=True)) + 1) * np.dtype(dtype).itemsize for st in strides]
        bound = [max(0, e + int(rng.choice([0, 0, 0, 8, -2, -np.dtype(dtype).itemsize]))) for e in extents]
        tensors = [buffer_tensor(dtype, sizes, st) for st in strides[1:]] + [buffer_tensor(dtype, sizes, strides[0])]
        params = {"Min": -0.5, "Max": 0.5} if op == OP.ELEMENT_WISE_CLIP else {}
        desc = desc_of(op, tensors, scale_bias=(1.5, 0.25) if op in WITH_SCALE_BIAS else None, **params)
        inputs = [rng.integers(0, 256, max(bound[k + 1], 1), dtype=np.uint8)[: bound[k + 1]] for k in range(n_in)]
        frozen = [x.copy() for x in inputs]
        block, y = guarded(bound[0])
        before = block.copy()
        status = c_call(desc, [np.ascontiguousarray(x) if x.size else np.zeros(0, np.uint8) for x in inputs], y)
        fits = all(b >= e for b, e in zip(bound, extents, strict=True))
        if not fits:
            assert status == "DMLPY_E_BUFFER_TOO_SMALL", trial
            assert block.tobytes() == before.tobytes()
            refused += 1
            continue
        assert status == "DMLPY_OK", (trial, status)
        ran += 1
        reach = np.zeros(bound[0] // np.dtype(dtype).itemsize, bool)
        for index in itertools.product(*(range(n) for n in sizes)):
            reach[sum(i * s for i, s in zip(index, strides[0], strict=True))] = True
        changed = (block[64 : 64 + bound[0]] != before[64 : 64 + bound[0]]).reshape(-1, np.dtype(dtype).itemsize).any(axis=1)
        assert not (changed & ~reach).any(), trial
        assert (block[:64] == GUARD).all() and (block[64 + bound[0] :] == GUARD).all(), trial
        assert all(x.tobytes() == f.tobytes() for x, f in zip(inputs, frozen, strict=True)), trial
    assert ran >= 100 and refused >= 100
