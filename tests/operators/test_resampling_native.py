"""The C kernel of RESAMPLE, RESAMPLE1, RESAMPLE2 and RESAMPLE3 (dmlpy/native/resampling.c).

The NumPy kernel is the oracle here (it is tested against onnxruntime's Resize and hand values in
test_resampling_kernels.py, on both backends): the C kernel computes its tap tables with the NumPy
kernel's operations and sums in its order and precision, so the two must agree bit for bit (NaN
positions aside, whose payloads are not compared) on randomized shapes, scales, offsets, modes,
rounding directions, antialiasing, data types and strides, and on the extreme values a valid desc
can hold. Then: onnxruntime on a model-sized 2x upsampling (the row fast path across chunk ends),
thread counts, the descs the C kernel leaves to NumPy, the refusals of a desc or buffers it cannot
trust, and the guard-byte fuzz of tests/test_fuzz.py's harness.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import test_fuzz as base  # the shared fuzz harness (tests/ is on sys.path, as for conftest)
from conftest import assert_rule, native_device

import dmlpy
from dmlpy import DML_AXIS_DIRECTION as AXIS
from dmlpy import DML_INTERPOLATION_MODE as MODE
from dmlpy import DML_OPERATOR_DESC, DML_OPERATOR_TYPE, buffer_tensor, nhwc_strides, packed_strides
from dmlpy.operators import spec_for_desc
from dmlpy.operators.resampling import (
    DML_RESAMPLE1_OPERATOR_DESC,
    DML_RESAMPLE2_OPERATOR_DESC,
    DML_RESAMPLE3_OPERATOR_DESC,
    DML_RESAMPLE_OPERATOR_DESC,
    native_covers,
)

F32, F16 = np.float32, np.float16
NAN, INF = float("nan"), float("inf")
NEAREST, LINEAR = MODE.NEAREST_NEIGHBOR, MODE.LINEAR
KINDS = ("RESAMPLE", "RESAMPLE1", "RESAMPLE2", "RESAMPLE3")
TYPES = (F32, F16, np.uint8, np.int8)


def make_desc(kind: str, dtype: Any, in_sizes: Any, out_sizes: Any, mode: MODE, scales: Any, input_offsets: Any = None, output_offsets: Any = None,
              direction: AXIS = AXIS.INCREASING, antialiased: bool = False, in_strides: Any = None, out_strides: Any = None) -> Any:  # fmt: skip
    x, y, n = buffer_tensor(dtype, in_sizes, in_strides), buffer_tensor(dtype, out_sizes, out_strides), len(in_sizes)
    input_offsets = [0.5] * n if input_offsets is None else list(input_offsets)
    output_offsets = [-0.5] * n if output_offsets is None else list(output_offsets)
    if kind == "RESAMPLE":
        return DML_RESAMPLE_OPERATOR_DESC(x, y, mode, n, list(scales))
    if kind == "RESAMPLE1":
        return DML_RESAMPLE1_OPERATOR_DESC(x, y, mode, n, list(scales), input_offsets, output_offsets)
    if kind == "RESAMPLE2":
        return DML_RESAMPLE2_OPERATOR_DESC(x, y, mode, direction, n, list(scales), input_offsets, output_offsets)
    return DML_RESAMPLE3_OPERATOR_DESC(x, y, mode, direction, n, list(scales), input_offsets, output_offsets, antialiased)


def values(rng: np.random.Generator, dtype: Any, sizes: Any, *, specials: bool = False) -> np.ndarray:
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, int(info.max) + 1, sizes).astype(dtype)
    x = (rng.standard_normal(sizes) * 4).astype(dtype)
    if specials and x.size > 3:
        flat = x.reshape(-1)
        where = rng.choice(flat.size, size=min(flat.size, 3), replace=False)
        flat[where] = np.array([NAN, INF, -0.0])[: where.size].astype(dtype)
    return x


def assert_same_values(got: np.ndarray, expected: np.ndarray) -> None:
    """Bit for bit, NaN payloads aside: the same NaN positions, the same bits (so the same signed zeros) elsewhere."""
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if got.dtype.kind == "f":
        nan = np.isnan(expected)
        np.testing.assert_array_equal(np.isnan(got), nan, err_msg="NaN positions")
        bits = np.uint16 if got.dtype == F16 else np.uint32
        np.testing.assert_array_equal(got[~nan].view(bits), expected[~nan].view(bits))
    else:
        np.testing.assert_array_equal(got, expected)


def native_matches_numpy(desc: Any, x: np.ndarray, threads: int = 1) -> np.ndarray:
    assert spec_for_desc(desc).runs_natively(desc), "the C kernel takes this desc"
    for axis, stride in enumerate(desc.InputTensor.Desc.Strides or ()):
        if stride == 0:  # a broadcast input holds one value along the axis
            x = np.ascontiguousarray(np.broadcast_to(np.take(x, [0], axis=axis), x.shape))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dmlpy.DmlWarning)  # RESAMPLE.SCALE_VALUE, TENSOR.OUTPUT_OVERLAP: valid descs
        got = dmlpy.run(desc, device=native_device(threads=threads), InputTensor=x)
        expected = dmlpy.run(desc, backend="numpy", InputTensor=x)
    assert_same_values(got, expected)
    return got  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------------
# Randomized descs against the NumPy kernel


SCALES = [1.0, 2.0, 0.5, 1.5, 0.6, 1 / 3, 0.25, 3.0, 2.5, 0.3, 0.2, 0.1, 4.0, 0.45, 1.25]
OFFSETS = [0.0, 0.5, -0.5, 0.25, 1.0, -1.3, 0.1]


def _strides(rng: np.random.Generator, sizes: tuple[int, ...], *, allow_broadcast: bool) -> tuple[int, ...] | None:
    """Packed, a random axis order (NHWC among them), padded rows, or (inputs) a broadcast axis."""
    kind = int(rng.integers(0, 5 if allow_broadcast else 4))
    if kind == 0:
        return None
    if kind == 1:  # the axes laid out in a random order
        order = rng.permutation(len(sizes))
        strides, running = [0] * len(sizes), 1
        for axis in order[::-1]:
            strides[axis] = running
            running *= sizes[axis]
        return tuple(strides)
    if kind == 2:
        return nhwc_strides(sizes)
    if kind == 3:  # padded rows and planes
        return packed_strides([s + int(rng.integers(0, 3)) for s in sizes])
    strides = list(packed_strides(sizes))
    strides[int(rng.integers(0, len(sizes)))] = 0
    return tuple(strides)


def random_case(seed: int) -> tuple[Any, np.ndarray]:
    rng = np.random.default_rng([0x5EA3, seed])
    rank = int(rng.integers(1, 5))
    in_sizes = tuple(int(v) for v in rng.integers(1, 10, rank))
    scales = [float(rng.choice(SCALES)) if rng.integers(0, 4) else float(rng.uniform(0.05, 4.0)) for _ in range(rank)]
    out_sizes = tuple(max(1, math.floor(i * s) + int(rng.integers(-1, 2))) for i, s in zip(in_sizes, scales, strict=True))  # free sizes: crop or clamp
    kind = str(rng.choice(KINDS))
    dtype = TYPES[int(rng.integers(0, len(TYPES)))]
    desc = make_desc(
        kind, dtype, in_sizes, out_sizes, MODE(int(rng.integers(0, 2))), scales,
        [float(rng.choice(OFFSETS)) for _ in range(rank)], [-float(rng.choice(OFFSETS)) for _ in range(rank)],
        AXIS(int(rng.integers(0, 2))), bool(rng.integers(0, 2)),
        _strides(rng, in_sizes, allow_broadcast=True), _strides(rng, out_sizes, allow_broadcast=False),
    )  # fmt: skip
    return desc, values(rng, dtype, in_sizes, specials=bool(rng.integers(0, 4) == 0))


@pytest.mark.parametrize("batch", range(6))
def test_random_descs_give_the_numpy_kernels_bits(batch: int) -> None:
    for seed in range(batch * 60, batch * 60 + 60):
        desc, x = random_case(seed)
        try:
            native_matches_numpy(desc, x)
        except AssertionError as error:
            raise AssertionError(f"random_case({seed}): {desc!r}") from error


def test_the_random_cases_span_every_struct_type_mode_and_vector_axis_kind() -> None:
    cases = [random_case(seed) for seed in range(360)]
    assert {type(d).__name__ for d, _ in cases} == {f"DML_{k}_OPERATOR_DESC" for k in KINDS}
    assert {d.InputTensor.Desc.DataType for d, _ in cases} == {dmlpy.DML_TENSOR_DATA_TYPE(t) for t in (1, 2, 5, 8)}
    assert {int(d.InterpolationMode) for d, _ in cases} == {0, 1}
    assert any(getattr(d, "Antialiased", False) and d.InterpolationMode == LINEAR and min(d.Scales) < 0.5 for d, _ in cases)


# ---------------------------------------------------------------------------------------
# Chosen cases: layouts, the fast paths, and the extremes a valid desc can hold


def _nhwc(kind: str, dtype: Any, shape: Any, out: Any, mode: MODE, scales: Any, **kw: Any) -> Any:
    return make_desc(kind, dtype, shape, out, mode, scales, in_strides=nhwc_strides(shape), out_strides=nhwc_strides(out), **kw)


CASES: list[Any] = [
    pytest.param(lambda: make_desc("RESAMPLE3", F32, (1, 3, 9, 700), (1, 3, 18, 1400), LINEAR, (1, 1, 2, 2)), F32,
                 id="2x bilinear at pixel centres, rows of 1400 outputs crossing a chunk end (the row fast path)"),
    pytest.param(lambda: make_desc("RESAMPLE2", F16, (2, 4, 7, 33), (2, 4, 14, 66), LINEAR, (1, 1, 2, 2)), F16, id="2x bilinear FLOAT16"),
    pytest.param(lambda: make_desc("RESAMPLE", F32, (1, 2, 5, 9), (1, 2, 10, 18), LINEAR, (1, 1, 2, 2)), F32, id="RESAMPLE 2x linear: the same pattern"),
    pytest.param(lambda: _nhwc("RESAMPLE3", F32, (1, 16, 7, 9), (1, 16, 14, 18), LINEAR, (1, 1, 2, 2)), F32,
                 id="NHWC strides: the channels are the vector axis, H and W nest"),
    pytest.param(lambda: _nhwc("RESAMPLE2", F16, (2, 5, 6, 7), (2, 5, 4, 12), NEAREST, (1, 1, 0.7, 1.7), direction=AXIS.DECREASING), F16,
                 id="NHWC nearest DECREASING FLOAT16: only gathers"),
    pytest.param(lambda: _nhwc("RESAMPLE3", F16, (2, 24, 9, 11), (2, 24, 13, 25), LINEAR, (1, 1, 1.5, 2.3)), F16,
                 id="NHWC FLOAT16 linear: blocks of pixels x channels"),
    pytest.param(lambda: _nhwc("RESAMPLE3", F32, (2, 24, 9, 11), (2, 24, 13, 25), LINEAR, (1, 1, 1.5, 2.3)), F32,
                 id="NHWC FLOAT32 linear: outputs of one and two taps straight to the output"),
    pytest.param(lambda: _nhwc("RESAMPLE3", F32, (1, 8, 30, 40), (1, 8, 7, 9), LINEAR, (1, 1, 0.23, 0.22), antialiased=True), F32,
                 id="NHWC FLOAT32 antialiased: outputs of many taps straight to the output"),
    pytest.param(lambda: make_desc("RESAMPLE3", F32, (1, 5, 6, 7), (1, 5, 12, 14), LINEAR, (1, 1, 2, 2), in_strides=(6 * 7 * 8, 1, 7 * 8, 8),
                                   out_strides=(12 * 14 * 9, 1, 14 * 9, 9)), F32, id="NHWC with padded pixels: the channel blocks are not one run"),
    pytest.param(lambda: make_desc("RESAMPLE2", F32, (1, 2, 5, 6), (1, 2, 5, 9), LINEAR, (1, 1, 1, 1.5), in_strides=(60, 30, 1, 5),
                                   out_strides=(90, 45, 1, 5)), F32, id="W resampled in an HW-transposed layout: H is the lane axis"),
    pytest.param(lambda: _nhwc("RESAMPLE3", F32, (1, 2000, 1, 600), (1, 2000, 1, 1), LINEAR, (1, 1, 1, 1e-3), antialiased=True), F32,
                 id="a filter over 600 pixels of 2000 channels: blocks too large, rows instead"),
    pytest.param(lambda: make_desc("RESAMPLE3", F32, (1, 2, 6, 10), (1, 2, 9, 15), LINEAR, (1, 1, 1.5, 1.5), in_strides=(200, 100, 12, 1),
                                   out_strides=(400, 200, 20, 1)), F32, id="padded input and output rows"),
    pytest.param(lambda: make_desc("RESAMPLE1", F32, (2, 3, 4, 5), (2, 3, 7, 3), LINEAR, (1, 1, 1.75, 0.6), in_strides=(0, 20, 5, 1)), F32,
                 id="a broadcast input (stride 0 over N)"),
    pytest.param(lambda: make_desc("RESAMPLE3", F32, (1, 1, 4, 6), (1, 1, 8, 12), LINEAR, (1, 1, 2, 2), out_strides=(0, 0, 0, 1)), F32,
                 id="an output whose strides overlap (staged: the last row written wins)"),
    pytest.param(lambda: make_desc("RESAMPLE3", F32, (1, 2, 50, 60), (1, 2, 7, 6), LINEAR, (1, 1, 1 / 7, 0.1), antialiased=True), F32,
                 id="antialiased 1/7x and 1/10x"),
    pytest.param(lambda: make_desc("RESAMPLE3", F16, (1, 3, 40, 40), (1, 3, 13, 9), LINEAR, (1, 1, 1 / 3, 0.22), antialiased=True), F16,
                 id="antialiased FLOAT16"),
    pytest.param(lambda: make_desc("RESAMPLE3", np.uint8, (1, 3, 20, 20), (1, 3, 6, 5), LINEAR, (1, 1, 0.3, 0.25), antialiased=True), np.uint8,
                 id="antialiased UINT8, truncated"),
    pytest.param(lambda: make_desc("RESAMPLE3", F32, (6,), (4,), LINEAR, (1e-3,), antialiased=True), F32, id="a filter 2000 taps wide over 6 elements"),
    pytest.param(lambda: make_desc("RESAMPLE3", F32, (6,), (3,), LINEAR, (1e-30,), antialiased=True), F32, id="Scale 1e-30: the edges in closed form"),
    pytest.param(lambda: make_desc("RESAMPLE3", F32, (5, 6), (3, 4), LINEAR, (1.0, 1e-44), antialiased=True), F32,
                 id="a subnormal scale: coordinates overflow to infinity"),
    pytest.param(lambda: make_desc("RESAMPLE2", F32, (3, 5), (4, 6), LINEAR, (0.0, -1.5)), F32, id="scales 0 and -1.5: NaN and infinite coordinates"),
    pytest.param(lambda: make_desc("RESAMPLE2", F32, (3, 5), (4, 6), NEAREST, (0.0, -1.5)), F32, id="scales 0 and -1.5, nearest"),
    pytest.param(lambda: make_desc("RESAMPLE1", F32, (3, 5), (4, 6), LINEAR, (1e30, 3e38)), F32, id="scales 1e30 and 3e38: every output at the start"),
    pytest.param(lambda: make_desc("RESAMPLE3", F32, (4, 5), (4, 6), LINEAR, (1.0, 1.5), (INF, NAN), (-0.5, -INF)), F32,
                 id="infinite and NaN pixel offsets"),
    pytest.param(lambda: make_desc("RESAMPLE3", F32, (4, 5), (4, 6), NEAREST, (1.0, 1.5), (INF, NAN), (-0.5, -INF)), F32,
                 id="infinite and NaN pixel offsets, nearest"),
    pytest.param(lambda: make_desc("RESAMPLE2", F32, (5000,), (8500,), LINEAR, (1.7,)), F32, id="rank 1, 8500 outputs in chunks"),
    pytest.param(lambda: make_desc("RESAMPLE2", np.int8, (1, 2, 5, 5), (1, 2, 9, 9), LINEAR, (1, 1, 1.8, 1.8), (0.0,) * 4, (0.0,) * 4), np.int8,
                 id="INT8 linear, truncated toward zero"),
    pytest.param(lambda: make_desc("RESAMPLE1", F32, (2, 3, 4, 5), (3, 2, 5, 4), NEAREST, (1.5, 0.7, 1.2, 0.8)), F32,
                 id="every axis resampled, nearest"),
    pytest.param(lambda: make_desc("RESAMPLE3", F32, (3, 4, 5, 6), (5, 6, 4, 9), LINEAR, (1.6, 1.4, 0.9, 1.5)), F32,
                 id="every axis linear: four nested sums"),
    pytest.param(lambda: make_desc("RESAMPLE3", F32, (1, 4, 6, 6), (1, 4, 6, 6), LINEAR, (1, 1, 1, 1)), F32,
                 id="identity: only 0 + x (no -0 comes out)"),
]


@pytest.mark.parametrize(("make", "dtype"), CASES)
@pytest.mark.parametrize("specials", [False, True], ids=["finite values", "with NaN, inf and -0 inputs"])
def test_chosen_descs_give_the_numpy_kernels_bits(make: Callable[[], Any], dtype: Any, specials: bool, rng: np.random.Generator) -> None:
    desc = make()
    native_matches_numpy(desc, values(rng, dtype, tuple(desc.InputTensor.Desc.Sizes), specials=specials))


def test_no_negative_zero_comes_out_of_a_zero_times_negative_input() -> None:
    # -0 * 1 = -0, but every sum starts at +0 and +0 + -0 = +0, in NumPy and in C.
    x = np.full((1, 1, 2, 3), -0.0, F32)
    got = native_matches_numpy(make_desc("RESAMPLE3", F32, x.shape, (1, 1, 4, 6), LINEAR, (1, 1, 2, 2)), x)
    assert not np.signbit(got).any()


def test_a_2x_upsampling_of_a_models_size_matches_onnxruntime(rng: np.random.Generator) -> None:
    from test_resampling_kernels import onnx_resize

    x = rng.normal(0, 1, (1, 8, 40, 600)).astype(F32)
    expected = onnx_resize(x, scales=(1, 1, 2, 2), mode="linear")  # half_pixel
    desc = make_desc("RESAMPLE3", F32, x.shape, expected.shape, LINEAR, (1, 1, 2, 2))
    got = dmlpy.run(desc, device=native_device(threads=2), InputTensor=x)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------------------------------
# Threads


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: make_desc("RESAMPLE3", F32, (1, 64, 56, 56), (1, 64, 112, 112), LINEAR, (1, 1, 2, 2)), id="2x bilinear 1x64x56x56"),
        pytest.param(lambda: _nhwc("RESAMPLE3", F32, (1, 64, 56, 56), (1, 64, 112, 112), LINEAR, (1, 1, 2, 2)), id="2x bilinear NHWC"),
        pytest.param(lambda: make_desc("RESAMPLE3", F16, (1, 32, 200, 200), (1, 32, 45, 60), LINEAR, (1, 1, 0.23, 0.3), antialiased=True),
                     id="antialiased FLOAT16 downsampling"),
    ],
)
def test_one_and_two_threads_give_the_same_bytes(make: Callable[[], Any], rng: np.random.Generator) -> None:
    desc = make()
    x = values(rng, desc.InputTensor.Desc.dtype, tuple(desc.InputTensor.Desc.Sizes))
    one = dmlpy.run(desc, device=native_device(threads=1), InputTensor=x)
    two = native_matches_numpy(desc, x, threads=2)
    assert one.tobytes() == two.tobytes()


# ---------------------------------------------------------------------------------------
# What the C kernel takes, and what it refuses


@pytest.mark.parametrize(
    ("scales", "covered"),
    [
        ((1.0, 2.0), True),
        ((0.0, -3.0), True),
        ((1e-44, 3.4e38), True),
        ((1.0, 1e39), False),
        ((1.0, INF), False),
        ((NAN, 1.0), False),
    ],
    ids=["finite", "0 and negative (finite)", "a subnormal and the largest float", "1e39 is inf as a C FLOAT", "inf", "NaN"],
)
def test_the_c_kernel_takes_every_desc_whose_scales_are_finite_floats(scales: Any, covered: bool) -> None:
    desc = make_desc("RESAMPLE2", F32, (3, 4), (5, 6), LINEAR, scales)
    assert native_covers(desc) is covered
    assert spec_for_desc(desc).runs_natively(desc) is covered


def test_a_desc_with_an_infinite_scale_runs_on_the_numpy_kernel_on_the_native_backend() -> None:
    desc = make_desc("RESAMPLE3", F32, (1, 3, 4), (1, 3, 6), LINEAR, (1.0, 1.0, INF))  # RESAMPLE.SCALE_VALUE: a warning, still valid
    x = np.arange(12, dtype=F32).reshape(1, 3, 4)
    with pytest.warns(dmlpy.DmlWarning):
        got = dmlpy.run(desc, device=native_device(), InputTensor=x)
    with pytest.warns(dmlpy.DmlWarning):
        assert_same_values(got, dmlpy.run(desc, backend="numpy", InputTensor=x))


def lowered_dispatch(value: Any, in_bytes: int | None = None, out_bytes: int | None = None, *, same_memory: bool = False,
                     misalign: bool = False, inputs: int = 1) -> tuple[Any, np.ndarray]:  # fmt: skip
    """``value`` lowered as it is (no validation, no native_covers) and run by dmlpy_execute on buffers of the given sizes."""
    native_device()
    from dmlpy.backends import BoundTensor
    from dmlpy.backends.native import Lowered, NativeBackend

    backend = NativeBackend()
    x_memory = np.zeros((in_bytes or value.InputTensor.Desc.TotalTensorSizeInBytes) + 64, dtype=np.uint8)
    x_memory = x_memory[1:] if misalign else x_memory[:-64]
    y_memory = x_memory if same_memory else np.full(out_bytes or value.OutputTensor.Desc.TotalTensorSizeInBytes, 0xAB, dtype=np.uint8)
    bound_in = [BoundTensor("InputTensor", x_memory, getattr(value.InputTensor, "Desc", None))] * inputs
    runner = backend.bind((spec_for_desc(value), Lowered(value)), bound_in, [BoundTensor("OutputTensor", y_memory, value.OutputTensor.Desc)])
    return runner, y_memory


def _with(desc: Any, **fields: Any) -> Any:
    for name, value in fields.items():
        setattr(desc, name, value)
    return desc


def _r2(**fields: Any) -> Any:
    return _with(make_desc("RESAMPLE2", F32, (1, 2, 3, 4), (1, 2, 6, 8), LINEAR, (1, 1, 2, 2)), **fields)


@pytest.mark.parametrize(
    ("make", "status"),
    [
        pytest.param(lambda: _r2(Scales=[1.0, 1.0, 2.0, INF]), "DMLPY_E_INVALID_DESC", id="an infinite scale"),
        pytest.param(lambda: _r2(Scales=[1.0, NAN, 2.0, 2.0]), "DMLPY_E_INVALID_DESC", id="a NaN scale"),
        pytest.param(lambda: _r2(Scales=[1.0, 1.0, 2.0, 1e39]), "DMLPY_E_INVALID_DESC", id="a scale beyond FLOAT (inf as a C float)"),
        pytest.param(lambda: _r2(DimensionCount=3, Scales=[1.0, 2.0, 2.0], InputPixelOffsets=[0.5] * 3, OutputPixelOffsets=[-0.5] * 3),
                     "DMLPY_E_INVALID_DESC", id="DimensionCount 3 for 4-D tensors"),
        pytest.param(lambda: _r2(Scales=None), "DMLPY_E_NULL_ARGUMENT", id="NULL Scales"),
        pytest.param(lambda: _r2(InputPixelOffsets=None), "DMLPY_E_NULL_ARGUMENT", id="NULL InputPixelOffsets"),
        pytest.param(lambda: _r2(InterpolationMode=2), "DMLPY_E_INVALID_DESC", id="InterpolationMode 2"),
        pytest.param(lambda: _r2(RoundingDirection=2), "DMLPY_E_INVALID_DESC", id="RoundingDirection 2"),
        pytest.param(lambda: _r2(OutputTensor=buffer_tensor(F16, (1, 2, 6, 8))), "DMLPY_E_INVALID_DESC", id="FLOAT32 in, FLOAT16 out"),
        pytest.param(lambda: _r2(InputTensor=buffer_tensor(np.int32, (1, 2, 3, 4)), OutputTensor=buffer_tensor(np.int32, (1, 2, 6, 8))),
                     "DMLPY_E_INVALID_DESC", id="INT32"),
        pytest.param(lambda: _r2(OutputTensor=buffer_tensor(F32, (2, 6, 8))), "DMLPY_E_INVALID_DESC", id="a 3-D output for a 4-D input"),
        pytest.param(lambda: _r2(InputTensor=None), "DMLPY_E_NULL_ARGUMENT", id="a NULL input tensor"),
    ],
)
def test_the_c_kernel_refuses_a_desc_it_cannot_trust(make: Callable[[], Any], status: str) -> None:
    value = make()
    runner, y_memory = lowered_dispatch(value, in_bytes=256, out_bytes=512)
    with pytest.raises(dmlpy.DmlError) as caught:
        runner()
    assert assert_rule(caught.value, "NATIVE.REJECTED").actual == status
    assert (y_memory == 0xAB).all(), "nothing is written on error"


@pytest.mark.parametrize(
    ("kwargs", "status"),
    [
        pytest.param({"out_bytes": 380}, "DMLPY_E_BUFFER_TOO_SMALL", id="an output buffer 4 bytes short"),
        pytest.param({"in_bytes": 92}, "DMLPY_E_BUFFER_TOO_SMALL", id="an input buffer of 92 of 96 bytes"),
        pytest.param({"same_memory": True, "in_bytes": 512}, "DMLPY_E_INVALID_ARGUMENT", id="output and input in the same memory"),
        pytest.param({"misalign": True}, "DMLPY_E_INVALID_ARGUMENT", id="input data not aligned to its 4-byte elements"),
        pytest.param({"inputs": 2}, "DMLPY_E_BINDING_COUNT", id="two inputs bound"),
    ],
)
def test_the_c_kernel_refuses_buffers_it_cannot_use(kwargs: dict[str, Any], status: str) -> None:
    runner, _ = lowered_dispatch(_r2(), **kwargs)
    with pytest.raises(dmlpy.DmlError) as caught:
        runner()
    assert assert_rule(caught.value, "NATIVE.REJECTED").actual == status


# ---------------------------------------------------------------------------------------
# Guard-byte fuzz through tests/test_fuzz.py's harness: random valid resample descs, zero to three
# mutations, the whole pipeline on both backends; only DmlError/TypeError/ValueError, no write outside
# a bound output, inputs never written, unmutated cases run.

FUZZ_SEED = 0x5E_A3F0
Plan = base.Plan


def fuzz_valid_case(rng: np.random.Generator) -> Any:
    desc, _ = random_case(int(rng.integers(0, 2**31)))
    if rng.integers(0, 4) == 0:
        desc = dmlpy.operator_desc(desc)
    plan = Plan(desc)
    plan.in_guard = int(rng.choice([0, 16, 32, 64]))
    plan.out_guard = int(rng.choice([16, 32, 64]))
    return plan


FLOAT_NONSENSE: list[Any] = [0.0, -1.0, 1e-45, 1e39, -1e39, NAN, INF, -INF, 2**40, "2", None, [], object(), 3j, True, np.float64(0.5)]


def m_scales(plan: Any, rng: np.random.Generator) -> str:
    desc = base.inner_desc(plan)
    field = str(rng.choice(["Scales", "InputPixelOffsets", "OutputPixelOffsets"]))
    current = list(getattr(desc, field, None) or [1.0])
    if rng.integers(0, 3) == 0:
        new: Any = base.pick(rng, [None, [], current + [1.0], current[:-1], "abc", 5, np.array([2.0, 2.0])])
    else:
        current[int(rng.integers(0, len(current)))] = base.pick(rng, FLOAT_NONSENSE)
        new = current
    setattr(desc, field, new)
    return f"{field} = {new!r}"[:200]


def m_enums(plan: Any, rng: np.random.Generator) -> str:
    desc = base.inner_desc(plan)
    field = str(rng.choice(["InterpolationMode", "RoundingDirection", "Antialiased", "DimensionCount", "ScaleCount"]))
    value = base.pick(rng, [0, 1, 2, 3, -1, 2**31, 2**32, None, "LINEAR", 1.5, *base.UINT_NONSENSE[:8]])
    setattr(desc, field, value)
    return f"{field} = {value!r}"


def m_wrapper(plan: Any, rng: np.random.Generator) -> str:
    desc = base.inner_desc(plan)
    op_type = base.pick(rng, [DML_OPERATOR_TYPE.RESAMPLE, DML_OPERATOR_TYPE.RESAMPLE1, DML_OPERATOR_TYPE.RESAMPLE2, DML_OPERATOR_TYPE.RESAMPLE3,
                              DML_OPERATOR_TYPE.AVERAGE_POOLING, 9999, None])  # fmt: skip
    plan.desc = DML_OPERATOR_DESC(op_type, desc)
    return f"wrapped as {op_type!r}"


def m_extreme_valid(plan: Any, rng: np.random.Generator) -> str:
    """A valid desc at an edge: a vanishing or huge scale, a 1-element axis, or an output far larger than in * scale."""
    desc = base.inner_desc(plan)
    x = base.tensor_buffer(getattr(desc, "InputTensor", None))
    y = base.tensor_buffer(getattr(desc, "OutputTensor", None))
    if x is None or y is None or not desc.Scales:
        return "extreme: no tensors"
    axis = int(rng.integers(0, len(desc.Scales)))
    scales = list(desc.Scales)
    scales[axis] = base.pick(rng, [1e-30, 1e-3, 3e38, 1e-44, 1024.0])
    desc.Scales = scales
    return f"extreme: Scales[{axis}] = {scales[axis]!r}"


MUTATIONS: list[tuple[Callable[[Any, np.random.Generator], str], int]] = [
    (base.m_tensor_sizes, 3),
    (base.m_tensor_strides, 3),
    (base.m_tensor_scalar, 4),
    (base.m_tensor_object, 1),
    (m_scales, 5),
    (m_enums, 4),
    (m_wrapper, 1),
    (m_extreme_valid, 3),
    (base.m_output_sizes, 2),
    (base.m_in_binding, 4),
    (base.m_out_binding, 5),
    (base.m_shared_buffer, 1),
    (base.m_owned, 2),
    (base.m_steps, 4),
]


def make_fuzz_case(batch: int, index: int) -> Any:
    rng = np.random.default_rng([FUZZ_SEED, batch, index])
    plan = fuzz_valid_case(rng)
    return base.mutate(plan, rng, MUTATIONS)


@pytest.mark.parametrize("batch", range(2))
def test_fuzz_resample_quick_batch(backend: str, batch: int) -> None:
    """Random resample descs and bindings: only DmlError/TypeError/ValueError, and no write outside a bound output."""
    base.run_batch(batch, 40, make_fuzz_case, lambda plan: base.run_case(plan, backend))


@pytest.mark.slow
@pytest.mark.parametrize("batch", range(2, 8))
def test_fuzz_resample_batch(backend: str, batch: int) -> None:
    base.run_batch(batch, 100, make_fuzz_case, lambda plan: base.run_case(plan, backend))
