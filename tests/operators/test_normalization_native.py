"""dmlpy/native/normalization.c against the NumPy kernels: BATCH_NORMALIZATION, MEAN_VARIANCE_NORMALIZATION(1),
SOFTMAX(1) and LOG_SOFTMAX(1).

The NumPy kernels are the oracle here (test_normalization_kernels.py and test_activation_kernels_more.py
check them against onnxruntime and hand values). The C kernel computes FLOAT32 in float32, the NumPy
kernel in float64, so the two agree within the tolerance docs/deviations.md states ("Normalization"):
with u = 2^-24 (float32's unit roundoff) and the magnitudes taken from float64 values,

* BATCH_NORMALIZATION, MVN: ``|native - numpy| <= 8u * (|Scale| * (|x| + |mean|) / sqrt(var + eps) + |Bias|)``;
* SOFTMAX: ``<= 8u * (1 + |x - max|) * |y| + 2^-126`` (exp's condition number is its argument; results
  below the smallest normal float are flushed to zero);
* LOG_SOFTMAX: ``<= 8u * (1 + |y|)``;

a FusedActivation multiplies the first by the activation's slope bound and adds 8u * |output|; FLOAT16
adds one float16 spacing of the output (both round a float32 value once). Rows holding NaN or inf give
the same NaN/inf pattern. The bound is tested on randomized shapes, axes, layouts (NHWC, padded rows,
broadcast parameters), both float types and every natively fused activation; the measured worst case is
about 5u. Thread counts 1 and 2 give identical bytes, and a fuzz (tests/test_fuzz.py's harness) checks
the guard bytes around every binding.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import test_fuzz as base  # the shared fuzz harness (tests/ is on sys.path, as for conftest)
from conftest import native_device

import dmlpy
from dmlpy import DML_BINDING_DESC, FusedActivation, buffer_tensor
from dmlpy.operators import REGISTRY
from dmlpy.operators.activation import (
    DML_ACTIVATION_LOG_SOFTMAX1_OPERATOR_DESC,
    DML_ACTIVATION_LOG_SOFTMAX_OPERATOR_DESC,
    DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC,
    DML_ACTIVATION_SOFTMAX_OPERATOR_DESC,
)
from dmlpy.operators.normalization import (
    DML_BATCH_NORMALIZATION_OPERATOR_DESC,
    DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC,
    DML_MEAN_VARIANCE_NORMALIZATION_OPERATOR_DESC,
)

F32, F16 = np.float32, np.float16
U = 2.0**-24
K = 8.0  # the tolerance's multiple of u (docs/deviations.md)
TINY = 2.0**-126

# The natively fused activations, each with a bound on its slope (how much it can grow an error).
FUSED: list[tuple[str, Any, float]] = [
    ("none", None, 1.0),
    ("identity", FusedActivation.identity(), 1.0),
    ("relu", FusedActivation.relu(), 1.0),
    ("leaky_relu", FusedActivation.leaky_relu(0.1), 1.0),
    ("linear", FusedActivation.linear(1.5, -0.25), 1.5),
    ("sigmoid", FusedActivation.sigmoid(), 1.0),
    ("tanh", FusedActivation.tanh(), 1.0),
    ("elu", FusedActivation.elu(0.7), 1.0),
    ("hard_sigmoid", FusedActivation.hard_sigmoid(), 1.0),
    ("softplus", FusedActivation.softplus(2.0), 1.0),
    ("gelu", FusedActivation.gelu(), 1.2),
]


def layout(rng: np.random.Generator, sizes: tuple[int, ...], kind: str) -> tuple[int, ...] | None:
    if kind == "packed":
        return None
    if kind == "nhwc" and len(sizes) >= 3:
        return dmlpy.nhwc_strides(sizes)
    if kind == "padded":
        return dmlpy.packed_strides([s + int(rng.integers(1, 4)) for s in sizes])
    if kind == "reversed":  # the last dimension outermost
        order = list(range(len(sizes)))[::-1]
        strides, step = [0] * len(sizes), 1
        for d in reversed(order):
            strides[d] = step
            step *= sizes[d]
        return tuple(strides)
    return None


def run_both(desc: Any, **inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    native = dmlpy.run(desc, device=native_device(), **inputs)
    numpy = dmlpy.run(desc, backend="numpy", **inputs)
    return np.asarray(native, np.float64), np.asarray(numpy, np.float64)


def assert_within(native: np.ndarray, numpy: np.ndarray, bound: np.ndarray, dtype: Any) -> None:
    """|native - numpy| <= bound (+ one float16 spacing for FLOAT16); NaN where NumPy has NaN, infinities equal."""
    nan = np.isnan(numpy)
    np.testing.assert_array_equal(np.isnan(native), nan)
    inf = np.isinf(numpy)
    np.testing.assert_array_equal(native[inf], numpy[inf])
    finite = ~nan & ~inf
    bound = np.nan_to_num(bound, nan=0.0)  # 0 * inf where an input is -inf and the output exactly 0
    if dtype == F16:
        with np.errstate(invalid="ignore"):  # the spacing of inf and NaN (not compared)
            bound = bound + np.spacing(np.abs(numpy).astype(F16)).astype(np.float64)
    with np.errstate(invalid="ignore"):
        excess = np.abs(native - numpy) - bound
    worst = float(np.max(excess[finite], initial=-1.0))
    assert worst <= 0, f"beyond the tolerance by {worst:.3g}: native {native[finite][np.argmax(excess[finite])]!r}, numpy {numpy[finite][np.argmax(excess[finite])]!r}"


def fused_bound(pre: np.ndarray, out: np.ndarray, slope: float) -> np.ndarray:
    return K * U * (slope * pre + np.abs(out))


# ---------------------------------------------------------------------------------------
# Randomized agreement


def random_case(seed: int) -> tuple[np.random.Generator, tuple[int, ...], Any, str]:
    rng = np.random.default_rng([0x4E02, seed])
    rank = int(rng.integers(1, 6))
    shape = tuple(int(rng.integers(1, 9 if rank > 3 else 40)) for _ in range(rank))
    dtype = F16 if rng.integers(0, 3) == 0 else F32
    kind = ["packed", "nhwc", "padded", "reversed"][int(rng.integers(0, 4))]
    return rng, shape, dtype, kind


@pytest.mark.parametrize("seed", range(40))
def test_mean_variance_normalization1_agrees_with_numpy_within_the_stated_tolerance(seed: int) -> None:
    rng, shape, dtype, kind = random_case(seed)
    rank = len(shape)
    axes = sorted({int(a) for a in rng.integers(0, rank, size=int(rng.integers(0, rank + 1)))})
    pshape = tuple(s if rng.integers(0, 2) else 1 for s in shape)  # broadcast parameters
    x = (rng.standard_normal(shape) * 3 + rng.uniform(-20, 20)).astype(dtype)
    scale = rng.standard_normal(pshape).astype(dtype) if rng.integers(0, 4) else None
    bias = rng.standard_normal(pshape).astype(dtype) if rng.integers(0, 4) else None
    normalize = bool(rng.integers(0, 4))
    _, fused, slope = FUSED[int(rng.integers(0, len(FUSED)))]
    desc = DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC(
        buffer_tensor(dtype, shape, layout(rng, shape, kind)),
        None if scale is None else buffer_tensor(dtype, pshape), None if bias is None else buffer_tensor(dtype, pshape),
        buffer_tensor(dtype, shape, layout(rng, shape, kind)), Axes=axes, NormalizeVariance=normalize, Epsilon=1e-3, FusedActivation=fused,
    )  # fmt: skip
    inputs = {"InputTensor": x} | ({"ScaleTensor": scale} if scale is not None else {}) | ({"BiasTensor": bias} if bias is not None else {})
    native, numpy = run_both(desc, **inputs)
    xd = x.astype(np.float64)
    mean = xd.mean(axis=tuple(axes), keepdims=True)
    sd = np.sqrt(((xd - mean) ** 2).mean(axis=tuple(axes), keepdims=True) + 1e-3) if normalize else 1.0
    s = np.abs(scale.astype(np.float64)) if scale is not None else 1.0
    b = np.abs(bias.astype(np.float64)) if bias is not None else 0.0
    assert_within(native, numpy, fused_bound(s * (np.abs(xd) + np.abs(mean)) / sd + b, numpy, slope), dtype)


@pytest.mark.parametrize("seed", range(30))
def test_batch_normalization_agrees_with_numpy_within_the_stated_tolerance(seed: int) -> None:
    rng, shape, dtype, kind = random_case(seed)
    if len(shape) < 2:
        shape = (2, *shape)
    params = [tuple(s if (i == 1 or rng.integers(0, 3) == 0) else 1 for i, s in enumerate(shape)) for _ in range(4)]
    x = (rng.standard_normal(shape) * 2).astype(dtype)
    mean, scale, bias = (rng.standard_normal(p).astype(dtype) for p in (params[0], params[2], params[3]))
    variance = rng.uniform(0.05, 4.0, params[1]).astype(dtype)
    _, fused, slope = FUSED[int(rng.integers(0, len(FUSED)))]
    desc = DML_BATCH_NORMALIZATION_OPERATOR_DESC(
        buffer_tensor(dtype, shape, layout(rng, shape, kind)), *(buffer_tensor(dtype, p) for p in params),
        buffer_tensor(dtype, shape, layout(rng, shape, kind)), Spatial=True, Epsilon=1e-5, FusedActivation=fused,
    )  # fmt: skip
    native, numpy = run_both(desc, InputTensor=x, MeanTensor=mean, VarianceTensor=variance, ScaleTensor=scale, BiasTensor=bias)
    v = variance.astype(np.float64) + float(np.float32(1e-5))
    pre = np.abs(scale.astype(np.float64)) * (np.abs(x.astype(np.float64)) + np.abs(mean.astype(np.float64))) / np.sqrt(v) + np.abs(bias.astype(np.float64))
    assert_within(native, numpy, fused_bound(pre, numpy, slope), dtype)


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("cross_channel", [True, False])
def test_mean_variance_normalization_agrees_with_numpy_within_the_stated_tolerance(seed: int, cross_channel: bool) -> None:
    rng, _, dtype, kind = random_case(seed)
    shape = tuple(int(rng.integers(1, 12)) for _ in range(4))
    x = (rng.standard_normal(shape) + 5).astype(dtype)
    pshape = (1, shape[1], 1, 1)
    scale, bias = rng.standard_normal(pshape).astype(dtype), rng.standard_normal(pshape).astype(dtype)
    desc = DML_MEAN_VARIANCE_NORMALIZATION_OPERATOR_DESC(
        buffer_tensor(dtype, shape, layout(rng, shape, kind)), buffer_tensor(dtype, pshape), buffer_tensor(dtype, pshape), buffer_tensor(dtype, shape),
        CrossChannel=cross_channel, NormalizeVariance=True, Epsilon=1e-4,
    )  # fmt: skip
    native, numpy = run_both(desc, InputTensor=x, ScaleTensor=scale, BiasTensor=bias)
    axes = (1, 2, 3) if cross_channel else (2, 3)
    xd = x.astype(np.float64)
    mean = xd.mean(axis=axes, keepdims=True)
    sd = np.sqrt(((xd - mean) ** 2).mean(axis=axes, keepdims=True) + float(np.float32(1e-4)))
    pre = np.abs(scale.astype(np.float64)) * (np.abs(xd) + np.abs(mean)) / sd + np.abs(bias.astype(np.float64))
    assert_within(native, numpy, K * U * pre, dtype)


def softmax_bound(x: np.ndarray, axes: tuple[int, ...], numpy: np.ndarray, log: bool) -> np.ndarray:
    xd = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        shifted = np.abs(xd - xd.max(axis=axes, keepdims=True))
        return K * U * (1 + np.abs(numpy)) if log else K * U * (1 + shifted) * np.abs(numpy) + TINY  # inf * 0 (a -inf input): NaN, skipped


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_softmax1_and_log_softmax1_agree_with_numpy_within_the_stated_tolerance(seed: int, log: bool) -> None:
    rng, shape, dtype, kind = random_case(seed)
    rank = len(shape)
    axes = tuple(sorted({int(a) for a in rng.integers(0, rank, size=int(rng.integers(0, rank + 1)))}))
    x = (rng.standard_normal(shape) * float(rng.choice([1, 10, 40]))).astype(dtype)
    cls = DML_ACTIVATION_LOG_SOFTMAX1_OPERATOR_DESC if log else DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC
    desc = cls(buffer_tensor(dtype, shape, layout(rng, shape, kind)), buffer_tensor(dtype, shape, layout(rng, shape, kind)), Axes=list(axes))
    native, numpy = run_both(desc, InputTensor=x)
    assert_within(native, numpy, softmax_bound(x, axes, numpy, log), dtype)


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", [F32, F16])
def test_softmax_over_the_last_dimension_agrees_on_long_rows_and_a_strided_view(log: bool, dtype: Any) -> None:
    """Rows longer than a chunk (512 elements) with a tail, read through a transposing layout."""
    rng = np.random.default_rng(7)
    shape = (1, 1, 3, 1337)
    x = (rng.standard_normal(shape) * 8).astype(dtype)
    cls = DML_ACTIVATION_LOG_SOFTMAX_OPERATOR_DESC if log else DML_ACTIVATION_SOFTMAX_OPERATOR_DESC
    for strides in (None, (4011, 4011, 1, 3)):
        desc = cls(buffer_tensor(dtype, shape, strides), buffer_tensor(dtype, shape))
        native, numpy = run_both(desc, InputTensor=x)
        assert_within(native, numpy, softmax_bound(x, (3,), numpy, log), dtype)


SHORT_ROW_LENGTHS = [1, 5, 16, 31, 197, 512]


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("length", SHORT_ROW_LENGTHS, ids=[f"rows of {n}" for n in SHORT_ROW_LENGTHS])
def test_softmax_over_packed_rows_of_one_chunk_agrees_with_numpy(log: bool, length: int) -> None:
    """Packed float32 rows of at most 512 elements take their own loop (masked tails, no staging): every
    tail length against NumPy, rows one after another in a batch and behind padding between rows."""
    rng = np.random.default_rng(length)
    shape = (3, 7, length)
    x = (rng.standard_normal(shape) * 10).astype(F32)
    cls = DML_ACTIVATION_LOG_SOFTMAX1_OPERATOR_DESC if log else DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC
    for strides in (None, (8 * (length + 3), length + 3, 1)):
        desc = cls(buffer_tensor(F32, shape, strides), buffer_tensor(F32, shape, strides), Axes=[2])
        native, numpy = run_both(desc, InputTensor=x)
        assert_within(native, numpy, softmax_bound(x, (2,), numpy, log), F32)


# ---------------------------------------------------------------------------------------
# NaN and infinity rows


NAN, INF = float("nan"), float("inf")
SPECIAL_ROWS = [
    ("a NaN", [1.0, NAN, 2.0, 3.0]),
    ("a +inf", [1.0, INF, 2.0, 3.0]),
    ("a -inf among finite values", [1.0, -INF, 2.0, 3.0]),
    ("only -inf", [-INF, -INF, -INF, -INF]),
    ("+inf and -inf", [INF, -INF, 0.0, 0.0]),
    ("finite", [0.5, -1.0, 2.0, 3.0]),
]


@pytest.mark.parametrize(("what", "row"), SPECIAL_ROWS, ids=[w for w, _ in SPECIAL_ROWS])
@pytest.mark.parametrize("op", ["softmax", "log_softmax", "mvn", "batch_norm"])
@pytest.mark.parametrize("dtype", [F32, F16])
def test_a_row_holding_nan_or_inf_gives_numpys_nan_and_inf_pattern(what: str, row: list[float], op: str, dtype: Any) -> None:
    """The special row sits between two finite rows, which must stay finite and agree."""
    x = np.array([[0.25, 1.0, -2.0, 0.5], row, [3.0, -1.0, 0.0, 1.0]], dtype=dtype).reshape(1, 1, 3, 4)
    t = lambda s=x.shape: buffer_tensor(dtype, s)
    if op in ("softmax", "log_softmax"):
        cls = DML_ACTIVATION_SOFTMAX_OPERATOR_DESC if op == "softmax" else DML_ACTIVATION_LOG_SOFTMAX_OPERATOR_DESC
        native, numpy = run_both(cls(t(), t()), InputTensor=x)
        bound = softmax_bound(x, (3,), numpy, op == "log_softmax")
    elif op == "mvn":
        desc = DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC(t(), None, None, t(), Axes=[3], NormalizeVariance=True, Epsilon=1e-5)
        native, numpy = run_both(desc, InputTensor=x)
        bound = K * U * 64 * np.ones_like(numpy)  # |x| + |mean| <= 6, sd >= ~0.5 for the finite rows
    else:
        p = (1, 1, 3, 1)
        desc = DML_BATCH_NORMALIZATION_OPERATOR_DESC(t(), t(p), t(p), t(p), t(p), t(), Spatial=True, Epsilon=0.0)
        ones = np.ones(p, dtype)
        native, numpy = run_both(desc, InputTensor=x, MeanTensor=ones * 0.5, VarianceTensor=ones * 4, ScaleTensor=ones * 2, BiasTensor=ones)
        bound = K * U * 8 * np.ones_like(numpy)
    assert np.isfinite(numpy[..., 0, :]).all() and np.isfinite(numpy[..., 2, :]).all()
    assert_within(native, numpy, bound, dtype)


def test_a_row_of_huge_or_tiny_values_normalizes_without_overflow_or_underflow() -> None:
    """The variance of 1e30-sized deviations overflows float32 and that of 1e-30-sized ones underflows; the kernel scales them."""
    x = np.array([[3e37, -2e37, 1e37, 3e37], [3e-30, -1e-30, 2e-30, 0.0]], dtype=F32).reshape(1, 1, 2, 4)
    desc = DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC(buffer_tensor(F32, x.shape), None, None, buffer_tensor(F32, x.shape), Axes=[3], NormalizeVariance=True, Epsilon=0.0)
    native, numpy = run_both(desc, InputTensor=x)
    assert np.isfinite(numpy).all()
    assert_within(native, numpy, K * U * 8 * np.ones_like(numpy), F32)


@pytest.mark.parametrize("strides", [None, (64, 16, 5, 1)], ids=["packed rows", "rows padded apart"])
def test_a_row_whose_float32_sum_overflows_normalizes_like_numpy(strides: Any) -> None:
    """3e38 * 4 is beyond float32's range, each value is not: the kernel sums the row again, scaled."""
    x = np.array([[3e38, 3.2e38, 2.9e38, 3.1e38], [1.0, 2.0, -3.0, 0.5], [-3e38, -3.3e38, 1e38, -3.1e38]], dtype=F32).reshape(1, 1, 3, 4)
    p = (1, 1, 1, 4)
    rng = np.random.default_rng(8)
    desc = DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC(
        buffer_tensor(F32, x.shape, strides), buffer_tensor(F32, p), buffer_tensor(F32, p), buffer_tensor(F32, x.shape), Axes=[3], NormalizeVariance=True, Epsilon=0.0,
    )  # fmt: skip
    scale, bias = rng.uniform(0.5, 2, p).astype(F32), rng.uniform(-1, 1, p).astype(F32)
    native, numpy = run_both(desc, InputTensor=x, ScaleTensor=scale, BiasTensor=bias)
    assert np.isfinite(numpy).all()
    assert_within(native, numpy, K * U * 16 * np.ones_like(numpy), F32)


# ---------------------------------------------------------------------------------------
# Threads, coverage, registration


THREAD_CASES: list[tuple[str, Callable[[], tuple[Any, dict[str, np.ndarray]]]]] = []


def _thread_case(name: str) -> Callable[[Callable[[], tuple[Any, dict[str, np.ndarray]]]], Callable[[], tuple[Any, dict[str, np.ndarray]]]]:
    def add(make: Callable[[], tuple[Any, dict[str, np.ndarray]]]) -> Callable[[], tuple[Any, dict[str, np.ndarray]]]:
        THREAD_CASES.append((name, make))
        return make

    return add


@_thread_case("softmax over 96 rows of 4096")
def _softmax_rows() -> tuple[Any, dict[str, np.ndarray]]:
    shape = (96, 4096)
    x = np.random.default_rng(1).standard_normal(shape).astype(F32) * 5
    return DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC(buffer_tensor(F32, shape), buffer_tensor(F32, shape), Axes=[1]), {"InputTensor": x}


@_thread_case("softmax over 12x197 attention rows of 197 (packed rows of one chunk, a tail of 5)")
def _softmax_attention_rows() -> tuple[Any, dict[str, np.ndarray]]:
    shape = (12, 197, 197)
    x = np.random.default_rng(4).standard_normal(shape).astype(F32) * 4
    return DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC(buffer_tensor(F32, shape), buffer_tensor(F32, shape), Axes=[2]), {"InputTensor": x}


@_thread_case("layer norm over 160 rows of 4096, fused GELU")
def _layer_norm_rows() -> tuple[Any, dict[str, np.ndarray]]:
    shape, p = (160, 4096), (1, 4096)
    rng = np.random.default_rng(2)
    desc = DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC(
        buffer_tensor(F32, shape), buffer_tensor(F32, p), buffer_tensor(F32, p), buffer_tensor(F32, shape), Axes=[1], NormalizeVariance=True,
        Epsilon=1e-5, FusedActivation=FusedActivation.gelu(),
    )  # fmt: skip
    return desc, {"InputTensor": rng.standard_normal(shape).astype(F32), "ScaleTensor": rng.standard_normal(p).astype(F32), "BiasTensor": rng.standard_normal(p).astype(F32)}


@_thread_case("batch norm 2x64x64x64 NHWC")
def _batch_norm_nhwc() -> tuple[Any, dict[str, np.ndarray]]:
    shape, p = (2, 64, 64, 64), (1, 64, 1, 1)
    rng = np.random.default_rng(3)
    desc = DML_BATCH_NORMALIZATION_OPERATOR_DESC(
        buffer_tensor(F32, shape, dmlpy.nhwc_strides(shape)), *(buffer_tensor(F32, p) for _ in range(4)), buffer_tensor(F32, shape), Spatial=True, Epsilon=1e-5,
    )  # fmt: skip
    params = {k: rng.uniform(0.5, 2, p).astype(F32) for k in ("MeanTensor", "VarianceTensor", "ScaleTensor", "BiasTensor")}
    return desc, {"InputTensor": rng.standard_normal(shape).astype(F32), **params}


@pytest.mark.parametrize("make", [m for _, m in THREAD_CASES], ids=[n for n, _ in THREAD_CASES])
def test_one_and_two_threads_give_identical_bytes(make: Callable[[], tuple[Any, dict[str, np.ndarray]]]) -> None:
    """Each row (or chunk) is computed by one thread in a fixed order, so the split cannot change a bit."""
    desc, inputs = make()
    one = dmlpy.run(desc, device=native_device(threads=1), **inputs)
    two = dmlpy.run(desc, device=native_device(threads=2), **inputs)
    np.testing.assert_array_equal(one.view(np.uint32), two.view(np.uint32))


STREAMED_CASES = [("no activation", None, 1), ("fused ReLU", FusedActivation.relu(), 1), ("fused sigmoid, two threads", FusedActivation.sigmoid(), 2)]


@pytest.mark.parametrize(("fused", "threads"), [(f, t) for _, f, t in STREAMED_CASES], ids=[n for n, _, _ in STREAMED_CASES])
def test_a_batch_norm_too_large_for_the_core_cache_gives_the_bits_of_its_channels_run_one_by_one(fused: Any, threads: int) -> None:
    """1x8x383x385 per-channel (9.4 MB in and out: its output is written with non-temporal stores, rows of
    147455 floats starting off the vector boundary) against each channel run alone (1.2 MB, cached stores)."""
    shape, p = (1, 8, 383, 385), (1, 8, 1, 1)
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape).astype(F32) * 3
    params = {"MeanTensor": rng.standard_normal(p).astype(F32), "VarianceTensor": rng.uniform(0.05, 4.0, p).astype(F32),
              "ScaleTensor": rng.standard_normal(p).astype(F32), "BiasTensor": rng.standard_normal(p).astype(F32)}  # fmt: skip

    def desc(sizes: tuple[int, ...], param_sizes: tuple[int, ...]) -> Any:
        return DML_BATCH_NORMALIZATION_OPERATOR_DESC(
            buffer_tensor(F32, sizes), *(buffer_tensor(F32, param_sizes) for _ in range(4)), buffer_tensor(F32, sizes), Spatial=True,
            Epsilon=1e-5, FusedActivation=fused,
        )  # fmt: skip

    whole = dmlpy.run(desc(shape, p), device=native_device(threads=threads), **{"InputTensor": x, **params})
    one = (1, 1, *shape[2:])
    for c in range(shape[1]):
        alone = dmlpy.run(desc(one, (1, 1, 1, 1)), device=native_device(threads=1), InputTensor=x[:, c : c + 1], **{k: v[:, c : c + 1] for k, v in params.items()})
        np.testing.assert_array_equal(whole[:, c : c + 1].view(np.uint32), alone.view(np.uint32))


def test_the_native_backend_runs_a_fused_activation_c_lacks_on_numpy_and_does_not_refuse_it() -> None:
    shape = (2, 3, 4)
    x = np.random.default_rng(4).standard_normal(shape).astype(F32)
    desc = DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC(
        buffer_tensor(F32, shape), None, None, buffer_tensor(F32, shape), Axes=[2], NormalizeVariance=True, Epsilon=1e-5, FusedActivation=FusedActivation.celu(0.5),
    )  # fmt: skip
    spec = REGISTRY[dmlpy.DML_OPERATOR_TYPE.MEAN_VARIANCE_NORMALIZATION1]
    assert not spec.runs_natively(desc)
    desc.FusedActivation = FusedActivation.relu()
    assert spec.runs_natively(desc)
    desc.FusedActivation = FusedActivation.celu(0.5)
    np.testing.assert_array_equal(dmlpy.run(desc, device=native_device(), InputTensor=x), dmlpy.run(desc, backend="numpy", InputTensor=x))


def test_every_operator_of_the_family_is_registered_native() -> None:
    for op in ("BATCH_NORMALIZATION", "MEAN_VARIANCE_NORMALIZATION", "MEAN_VARIANCE_NORMALIZATION1", "ACTIVATION_SOFTMAX", "ACTIVATION_SOFTMAX1",
               "ACTIVATION_LOG_SOFTMAX", "ACTIVATION_LOG_SOFTMAX1"):  # fmt: skip
        assert REGISTRY[dmlpy.DML_OPERATOR_TYPE[op]].native, op


# ---------------------------------------------------------------------------------------
# Fuzz: the shared harness on softmax-family and mean-variance descs (NULL Scale and Bias)

SEED = 0x4E0F
BATCHES = 4
CASES_PER_BATCH = 60


def valid_case(rng: np.random.Generator) -> base.Plan:
    kind = int(rng.integers(0, 4))
    dtype = F16 if rng.integers(0, 2) else F32
    sizes = tuple(int(rng.integers(1, 5)) for _ in range(4))
    x = buffer_tensor(dtype, sizes, base._layout(rng, sizes, allow_broadcast=True))
    y = buffer_tensor(dtype, sizes, base._layout(rng, sizes, allow_broadcast=False))
    axes = sorted({int(a) for a in rng.integers(0, 4, size=int(rng.integers(1, 4)))})
    in_list = None
    if kind == 0:
        desc: Any = (DML_ACTIVATION_SOFTMAX_OPERATOR_DESC if rng.integers(0, 2) else DML_ACTIVATION_LOG_SOFTMAX_OPERATOR_DESC)(
            buffer_tensor(dtype, (1, 1, sizes[2], sizes[3]), base._layout(rng, (1, 1, sizes[2], sizes[3]), allow_broadcast=True)),
            buffer_tensor(dtype, (1, 1, sizes[2], sizes[3])),
        )  # fmt: skip
    elif kind == 1:
        desc = (DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC if rng.integers(0, 2) else DML_ACTIVATION_LOG_SOFTMAX1_OPERATOR_DESC)(x, y, Axes=axes)
    elif kind == 2:
        desc = DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC(x, None, None, y, Axes=axes, NormalizeVariance=bool(rng.integers(0, 2)), Epsilon=1e-5,
                                                              FusedActivation=FusedActivation.relu() if rng.integers(0, 2) else None)  # fmt: skip
        in_list = lambda b: [b, DML_BINDING_DESC(), DML_BINDING_DESC()]
    else:
        desc = DML_MEAN_VARIANCE_NORMALIZATION_OPERATOR_DESC(x, None, None, y, CrossChannel=bool(rng.integers(0, 2)), NormalizeVariance=True, Epsilon=1e-5)
        in_list = lambda b: [b, DML_BINDING_DESC(), DML_BINDING_DESC()]
    if rng.integers(0, 4) == 0:
        desc = dmlpy.operator_desc(desc)
    plan = base.Plan(desc)
    if in_list is not None:  # three input slots, Scale and Bias unbound; the harness's initializer binding assumes one
        plan.in_list = in_list
        plan.init_inputs = "none"
    plan.in_guard = int(rng.choice([0, 16, 32, 64]))
    plan.out_guard = int(rng.choice([16, 32, 64]))
    return plan


MUTATIONS: list[tuple[Callable[[base.Plan, np.random.Generator], str], int]] = [
    (base.m_tensor_sizes, 3),
    (base.m_tensor_strides, 4),
    (base.m_tensor_scalar, 3),
    (base.m_axes, 3),
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
def test_fuzz_normalization_batch_writes_nothing_outside_the_bound_output(batch: int) -> None:
    """Random softmax and mean-variance descs and bindings on the native backend: only DmlError/TypeError/ValueError, guard bytes intact."""
    native_device()
    base.run_batch(batch, CASES_PER_BATCH, make_case, lambda plan: base.run_case(plan, "native"))


def test_the_fuzz_reaches_execution_for_most_unmutated_cases() -> None:
    executed = 0
    for index in range(20):
        outcome = base.run_case(valid_case(np.random.default_rng([SEED, 99, index])), "native") if dmlpy.native_available() else None
        executed += bool(outcome and outcome.executed and not outcome.problems)
    if dmlpy.native_available():
        assert executed == 20
    assert math.isfinite(K)
