"""RESAMPLE, RESAMPLE1, RESAMPLE2 and RESAMPLE3 through the whole pipeline, on both backends.

Oracles: onnxruntime's Resize (opset 19 with scales, opset 13 with sizes) on the equivalent
one-node model, through the mapping onnxruntime's DirectML provider uses (DmlOperatorResize.cpp:
ONNX's ``x = (o + a) / scale - b`` is OutputPixelOffset ``-a`` and InputPixelOffset ``b``;
align_corners recomputes the scale; round_prefer_floor is RoundingDirection INCREASING with
InputPixelOffset + 0.5, round_prefer_ceil DECREASING with - 0.5, floor DECREASING, ceil
INCREASING), and values worked by hand from the pages' relation ``OutputX = (InputX +
InputPixelOffset) * Scale + OutputPixelOffset``: pixel centres, the RoundingDirection, edge
clamping, cropping, RESAMPLE3's antialiasing filter and its ``1 / Scale > 2`` condition, integer
truncation, NaN. On the native backend the C kernel runs them (test_resampling_native.py compares it
with the NumPy kernel bit for bit).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import assert_rule

import dmlpy
from dmlpy import DML_AXIS_DIRECTION as AXIS
from dmlpy import DML_FEATURE_LEVEL as FL
from dmlpy import DML_INTERPOLATION_MODE as MODE
from dmlpy import buffer_tensor, nhwc_strides
from dmlpy.operators.resampling import (
    DML_RESAMPLE1_OPERATOR_DESC,
    DML_RESAMPLE2_OPERATOR_DESC,
    DML_RESAMPLE3_OPERATOR_DESC,
    DML_RESAMPLE_OPERATOR_DESC,
    onnx_resize_parameters,
)

F32, F16 = np.float32, np.float16
NAN, INF = float("nan"), float("inf")
NEAREST, LINEAR = MODE.NEAREST_NEIGHBOR, MODE.LINEAR


# ---------------------------------------------------------------------------------------
# onnxruntime's Resize


def onnx_resize(x: np.ndarray, *, scales: Any = None, sizes: Any = None, **attrs: Any) -> np.ndarray:
    import onnxruntime as ort
    from onnx import helper, numpy_helper

    if scales is not None:
        inputs, initializers, opset = ["x", "", "scales"], [numpy_helper.from_array(np.array(scales, F32), "scales")], 19
    else:
        inputs, initializers, opset = ["x", "", "", "sizes"], [numpy_helper.from_array(np.array(sizes, np.int64), "sizes")], 13
    graph = helper.make_graph(
        [helper.make_node("Resize", inputs, ["y"], **attrs)],
        "oracle",
        [helper.make_tensor_value_info("x", helper.np_dtype_to_tensor_dtype(x.dtype), list(x.shape))],
        [helper.make_empty_tensor_value_info("y")],
        initializer=initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]  # type: ignore[no-any-return]


def resample2(x: np.ndarray, out: tuple[int, ...], mode: MODE, scales: Any, input_offsets: Any, output_offsets: Any, direction: AXIS = AXIS.INCREASING,
              *, version: int = 2, antialiased: bool = False, x_strides: Any = None, y_strides: Any = None) -> Any:  # fmt: skip
    t = x.dtype
    fields = {"InterpolationMode": mode, "RoundingDirection": direction, "DimensionCount": len(out), "Scales": list(scales), "InputPixelOffsets": list(input_offsets), "OutputPixelOffsets": list(output_offsets)}
    if version == 3:
        return DML_RESAMPLE3_OPERATOR_DESC(buffer_tensor(t, x.shape, x_strides), buffer_tensor(t, out, y_strides), Antialiased=antialiased, **fields)
    return DML_RESAMPLE2_OPERATOR_DESC(buffer_tensor(t, x.shape, x_strides), buffer_tensor(t, out, y_strides), **fields)


def through_onnx_mapping(device: dmlpy.Device, x: np.ndarray, expected_shape: tuple[int, ...], scales: Any, ctm: str, mode: str, nearest: str, version: int) -> np.ndarray:
    dml_scales, input_offsets, output_offsets, direction = onnx_resize_parameters(x.shape, expected_shape, scales, ctm, mode, nearest)
    desc = resample2(x, expected_shape, NEAREST if mode == "nearest" else LINEAR, dml_scales, input_offsets, output_offsets, direction, version=version)
    return dmlpy.run(desc, device=device, InputTensor=x)  # type: ignore[no-any-return]


def tolerance(dtype: Any) -> dict[str, float]:
    return {"rtol": 1e-3, "atol": 1e-3} if dtype == F16 else {"rtol": 1e-5, "atol": 1e-6}


# ---------------------------------------------------------------------------------------
# RESAMPLE2 and RESAMPLE3 against onnxruntime, every coordinate mode and rounding


SHAPES = [
    pytest.param((1, 2, 4, 5), (1.0, 1.0, 2.0, 2.0), id="2x up {1,2,4,5}"),
    pytest.param((1, 1, 5, 7), (1.0, 1.0, 1.5, 0.6), id="1.5x up H, 0.6x down W"),
    pytest.param((2, 1, 6, 9), (1.0, 1.0, 0.5, 1 / 3), id="0.5x and 1/3x down"),
    pytest.param((1, 3, 3, 4), (1.0, 1.0, 2.5, 1.75), id="2.5x and 1.75x up"),
    pytest.param((2, 7, 8), (1.0, 0.75, 1.25), id="3-D: 0.75x and 1.25x"),
]
COORDINATES = ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"]
MODES = [("linear", "round_prefer_floor")] + [("nearest", n) for n in ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")]


@pytest.mark.parametrize("version", [2, 3], ids=["RESAMPLE2", "RESAMPLE3"])
@pytest.mark.parametrize(("mode", "nearest"), MODES, ids=["linear"] + [f"nearest {n}" for _, n in MODES[1:]])
@pytest.mark.parametrize("ctm", COORDINATES)
@pytest.mark.parametrize(("shape", "scales"), SHAPES)
def test_resample2_and_3_match_onnxruntime_resize(device: dmlpy.Device, rng: np.random.Generator, shape: Any, scales: Any, ctm: str, mode: str, nearest: str, version: int) -> None:
    x = rng.normal(0, 3, shape).astype(F32)
    expected = onnx_resize(x, scales=scales, mode=mode, coordinate_transformation_mode=ctm, nearest_mode=nearest)
    got = through_onnx_mapping(device, x, expected.shape, scales, ctm, mode, nearest, version)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("dtype", "mode"),
    [(F16, "linear"), (F16, "nearest"), (np.uint8, "linear"), (np.uint8, "nearest"), (np.int8, "linear"), (np.int8, "nearest")],
    ids=["FLOAT16 linear", "FLOAT16 nearest", "UINT8 linear (truncated)", "UINT8 nearest", "INT8 linear (truncated toward 0)", "INT8 nearest"],
)
def test_resample3_data_types_match_onnxruntime(device: dmlpy.Device, rng: np.random.Generator, dtype: Any, mode: str) -> None:
    shape, scales = (1, 2, 5, 6), (1.0, 1.0, 1.5, 1.7)
    if dtype == F16:
        x = rng.normal(0, 3, shape).astype(dtype)
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, int(info.max) + 1, shape).astype(dtype)
    expected = onnx_resize(x, scales=scales, mode=mode)  # half_pixel, round_prefer_floor
    got = through_onnx_mapping(device, x, expected.shape, scales, "half_pixel", mode, "round_prefer_floor", 3)
    assert got.dtype == dtype
    np.testing.assert_allclose(got.astype(F32), expected.astype(F32), **tolerance(dtype))


@pytest.mark.parametrize(
    ("shape", "sizes"),
    [pytest.param((1, 3, 16, 16), (1, 3, 32, 32), id="2x bilinear upsampling {1,3,16,16} -> {1,3,32,32} (a decoder's)"),
     pytest.param((1, 2, 7, 5), (1, 2, 3, 9), id="sizes {3, 9} from {7, 5}: scales out / in")],  # fmt: skip
)
def test_resample3_with_sizes_matches_onnxruntime(device: dmlpy.Device, rng: np.random.Generator, shape: Any, sizes: Any) -> None:
    x = rng.normal(0, 1, shape).astype(F32)
    expected = onnx_resize(x, sizes=sizes, mode="linear")
    scales = [float(np.float32(o) / np.float32(i)) for o, i in zip(sizes, shape, strict=True)]
    got = through_onnx_mapping(device, x, tuple(sizes), scales, "half_pixel", "linear", "", 3)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_an_nhwc_input_through_strides_resamples_the_same(device: dmlpy.Device, rng: np.random.Generator) -> None:
    x = rng.normal(0, 1, (1, 3, 4, 5)).astype(F32)
    expected = onnx_resize(x, scales=(1, 1, 2, 2), mode="linear")
    desc = resample2(x, expected.shape, LINEAR, (1, 1, 2, 2), (0.5,) * 4, (-0.5,) * 4, x_strides=nhwc_strides(x.shape))
    np.testing.assert_allclose(dmlpy.run(desc, device=device, InputTensor=x), expected, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------
# RESAMPLE and RESAMPLE1 against onnxruntime: RESAMPLE is half_pixel; RESAMPLE1's nearest rounds halves up


@pytest.mark.parametrize(("mode", "onnx_mode", "nearest"), [(LINEAR, "linear", "round_prefer_floor"), (NEAREST, "nearest", "round_prefer_ceil")],
                         ids=["linear", "nearest: the nearest input, halves up (round_prefer_ceil)"])  # fmt: skip
@pytest.mark.parametrize(("shape", "scales"), SHAPES[:4])
def test_resample_is_half_pixel_resize(device: dmlpy.Device, rng: np.random.Generator, shape: Any, scales: Any, mode: MODE, onnx_mode: str, nearest: str) -> None:
    x = rng.normal(0, 3, shape).astype(F32)
    expected = onnx_resize(x, scales=scales, mode=onnx_mode, nearest_mode=nearest)
    desc = DML_RESAMPLE_OPERATOR_DESC(buffer_tensor(F32, shape), buffer_tensor(F32, expected.shape), mode, 4, list(scales))
    np.testing.assert_allclose(dmlpy.run(desc, device=device, InputTensor=x), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("ctm", "mode", "nearest", "input_offset"),
    [
        ("asymmetric", "linear", "round_prefer_floor", 0.0),
        ("align_corners", "linear", "round_prefer_floor", 0.0),
        ("half_pixel", "nearest", "round_prefer_ceil", 0.5),
        ("asymmetric", "nearest", "round_prefer_ceil", 0.0),
        ("half_pixel", "nearest", "floor", 1.0),  # floor(x) = floor((x - 0.5) + 0.5): InputPixelOffset + 0.5
        ("asymmetric", "nearest", "floor", 0.5),
    ],
    ids=lambda v: str(v),
)
@pytest.mark.parametrize(("shape", "scales"), SHAPES[:4])
def test_resample1_offsets_give_onnx_coordinate_modes(device: dmlpy.Device, rng: np.random.Generator, shape: Any, scales: Any, ctm: str, mode: str, nearest: str, input_offset: float) -> None:
    x = rng.normal(0, 3, shape).astype(F32)
    expected = onnx_resize(x, scales=scales, mode=mode, coordinate_transformation_mode=ctm, nearest_mode=nearest)
    dml_scales = [(o - 1) / (i - 1) if i > 1 and o > 1 else 1e30 for i, o in zip(shape, expected.shape)] if ctm == "align_corners" else list(scales)
    output_offset = -0.5 if ctm == "half_pixel" else 0.0
    desc = DML_RESAMPLE1_OPERATOR_DESC(buffer_tensor(F32, shape), buffer_tensor(F32, expected.shape), NEAREST if mode == "nearest" else LINEAR, 4, dml_scales, [input_offset] * 4, [output_offset] * 4)
    np.testing.assert_allclose(dmlpy.run(desc, device=device, InputTensor=x), expected, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------------
# RESAMPLE3's antialiasing: the linear filter stretched by 1 / Scale where 1 / Scale > 2


@pytest.mark.parametrize(("shape", "scales"), [((1, 1, 12, 13), (1.0, 1.0, 1 / 3, 0.25)), ((1, 2, 9, 16), (1.0, 1.0, 0.3, 0.2)), ((1, 1, 10, 10), (1.0, 1.0, 0.4, 0.45))],
                         ids=["1/3x and 1/4x", "0.3x and 0.2x", "0.4x and 0.45x"])  # fmt: skip
def test_antialiased_downsampling_matches_onnxruntime(device: dmlpy.Device, rng: np.random.Generator, shape: Any, scales: Any) -> None:
    x = rng.normal(0, 3, shape).astype(F32)
    expected = onnx_resize(x, scales=scales, mode="linear", antialias=1)
    dml_scales, input_offsets, output_offsets, direction = onnx_resize_parameters(shape, expected.shape, scales, "half_pixel", "linear")
    desc = resample2(x, expected.shape, LINEAR, dml_scales, input_offsets, output_offsets, direction, version=3, antialiased=True)
    np.testing.assert_allclose(dmlpy.run(desc, device=device, InputTensor=x), expected, rtol=1e-5, atol=1e-5)


ROW6 = [0.0, 3.0, 6.0, 9.0, 12.0, 15.0]


@pytest.mark.parametrize(
    ("row", "scale", "mode", "out", "expected"),
    [
        pytest.param(ROW6, 1 / 3, LINEAR, 2, [10 / 3, 35 / 3],
                     id="1/3x: taps at x = 1 weigh 1/3, 2/3, 1, 2/3, 1/3 over j = -1..3 (j = -1 reads x[0]), divided by 3"),  # fmt: skip
        pytest.param(ROW6, 0.5, LINEAR, 3, [1.5, 7.5, 13.5],
                     id="0.5x: 1 / Scale = 2 is not above 2, so plain linear at x = 0.5, 2.5, 4.5"),  # fmt: skip
        pytest.param(ROW6, 1 / 3, NEAREST, 2, [3.0, 12.0],
                     id="nearest: Antialiased has no effect (x = 1 and 4, already integers)"),  # fmt: skip
    ],
)
def test_antialiasing_hand_values(device: dmlpy.Device, row: list[float], scale: float, mode: MODE, out: int, expected: list[float]) -> None:
    x = np.array(row, F32)
    desc = resample2(x, (out,), mode, [scale], [0.5], [-0.5], version=3, antialiased=True)
    np.testing.assert_allclose(dmlpy.run(desc, device=device, InputTensor=x), np.array(expected, F32), rtol=1e-6)


def _filter_by_loop(row: list[float], x: float, scale: float) -> float:
    """The page's stretched filter summed tap by tap: w_j = 1 - |j - x| * scale inside the filter, j off the row reading its edge."""
    stretch = 1 / scale
    total = weighted = 0.0
    j = int(np.floor(x - stretch)) + 1
    while j < x + stretch:
        w = 1 - abs(j - x) / stretch
        total += w
        weighted += w * row[min(max(j, 0), len(row) - 1)]
        j += 1
    return weighted / total


@pytest.mark.parametrize("scale", [1e-3, 0.05], ids=["1/1000x: a filter 2000 taps wide over 6 elements", "1/20x"])
def test_a_filter_much_wider_than_the_input_weighs_the_edges(device: dmlpy.Device, scale: float) -> None:
    x = np.array(ROW6, F32)
    desc = resample2(x, (1,), LINEAR, [scale], [0.5], [-0.5], version=3, antialiased=True)
    centre = 0.5 / float(np.float32(scale)) - 0.5  # x = (0 + 0.5) / Scale - 0.5
    np.testing.assert_allclose(dmlpy.run(desc, device=device, InputTensor=x), [_filter_by_loop(ROW6, centre, float(np.float32(scale)))], rtol=1e-6)


def test_a_vanishing_scale_runs_in_closed_form(device: dmlpy.Device) -> None:
    # Scale 1e-30: x = 5e29, half-width 1e30; the triangle's area left of the row is 1/8 of it (it reads 0),
    # the rest reads the clamped last element 15: 15 * 7/8.
    x = np.array(ROW6, F32)
    desc = resample2(x, (1,), LINEAR, [1e-30], [0.5], [-0.5], version=3, antialiased=True)
    np.testing.assert_allclose(dmlpy.run(desc, device=device, InputTensor=x), [15 * 7 / 8], rtol=1e-6)


# ---------------------------------------------------------------------------------------
# Hand values from the pages' relation


def hand_desc(kind: str, x: np.ndarray, out: tuple[int, ...], mode: MODE, scales: Any, offsets: tuple[float, float] = (0.5, -0.5), direction: AXIS = AXIS.INCREASING) -> Any:
    n, t = len(out), x.dtype
    if kind == "RESAMPLE":
        return DML_RESAMPLE_OPERATOR_DESC(buffer_tensor(t, x.shape), buffer_tensor(t, out), mode, n, list(scales))
    if kind == "RESAMPLE1":
        return DML_RESAMPLE1_OPERATOR_DESC(buffer_tensor(t, x.shape), buffer_tensor(t, out), mode, n, list(scales), [offsets[0]] * n, [offsets[1]] * n)
    return resample2(x, out, mode, scales, [offsets[0]] * n, [offsets[1]] * n, direction, version=3 if kind == "RESAMPLE3" else 2)


X22 = [[1.0, 2.0], [3.0, 4.0]]
HAND = [
    pytest.param("RESAMPLE", X22, (4, 4), NEAREST, (2.0, 2.0), (0.5, -0.5), AXIS.INCREASING,
                 [[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4], [3, 3, 4, 4]], id="RESAMPLE nearest 2x repeats each element twice"),  # fmt: skip
    pytest.param("RESAMPLE", [[0.0, 4.0]], (1, 4), LINEAR, (1.0, 2.0), (0.5, -0.5), AXIS.INCREASING,
                 [[0, 1, 3, 4]], id="RESAMPLE linear 2x of [0, 4]: x = -0.25 (clamped), 0.25, 0.75, 1.25 (clamped)"),  # fmt: skip
    pytest.param("RESAMPLE1", [[0.0, 2.0, 4.0, 6.0]], (1, 2), LINEAR, (1.0, 0.5), (0.5, -0.5), AXIS.INCREASING,
                 [[1, 5]], id="RESAMPLE1 linear 0.5x at pixel centres: x = 0.5, 2.5"),  # fmt: skip
    pytest.param("RESAMPLE1", [[0.0, 4.0]], (1, 4), LINEAR, (1.0, 2.0), (0.0, 0.0), AXIS.INCREASING,
                 [[0, 2, 4, 4]], id="RESAMPLE1 linear 2x with offsets 0 (corners): x = 0, 0.5, 1, 1.5 (clamped)"),  # fmt: skip
    pytest.param("RESAMPLE1", [[1.0, 2.0]], (1, 4), NEAREST, (1.0, 1.0), (0.5, -0.5), AXIS.INCREASING,
                 [[1, 2, 2, 2]], id="an output larger than in * scale clamps to the last element"),  # fmt: skip
    pytest.param("RESAMPLE1", [[1.0, 2.0, 3.0, 4.0]], (1, 2), NEAREST, (1.0, 1.0), (0.5, -0.5), AXIS.INCREASING,
                 [[1, 2]], id="an output smaller than in * scale crops"),  # fmt: skip
    pytest.param("RESAMPLE1", [[1.0, 2.0, 3.0]], (1, 3), NEAREST, (1.0, 1.0), (-1.0, 0.0), AXIS.INCREASING,
                 [[2, 3, 3]], id="InputPixelOffset -1 shifts the input left: x = o + 1"),  # fmt: skip
    pytest.param("RESAMPLE2", [[10.0, 20.0, 30.0]], (1, 4), NEAREST, (1.0, 1.5), (0.0, 0.0), AXIS.INCREASING,
                 [[10, 20, 30, 30]], id="RoundingDirection INCREASING: ceil of x = 0, 2/3, 4/3, 2"),  # fmt: skip
    pytest.param("RESAMPLE2", [[10.0, 20.0, 30.0]], (1, 4), NEAREST, (1.0, 1.5), (0.0, 0.0), AXIS.DECREASING,
                 [[10, 10, 20, 30]], id="RoundingDirection DECREASING: floor of x = 0, 2/3, 4/3, 2"),  # fmt: skip
    pytest.param("RESAMPLE3", [[10.0, 20.0, 30.0]], (1, 4), LINEAR, (1.0, 1.5), (0.0, 0.0), AXIS.DECREASING,
                 [[10, 50 / 3, 70 / 3, 30]], id="RoundingDirection does not touch linear: x = 0, 2/3, 4/3, 2"),  # fmt: skip
    pytest.param("RESAMPLE2", [[NAN, 1.0, 2.0]], (1, 3), LINEAR, (1.0, 1.0), (0.5, -0.5), AXIS.INCREASING,
                 [[NAN, 1, 2]], id="a NaN stays where it is: a tap of weight 0 adds nothing, not 0 * NaN"),  # fmt: skip
    pytest.param("RESAMPLE2", [[INF, 0.0]], (1, 4), LINEAR, (1.0, 2.0), (0.5, -0.5), AXIS.INCREASING,
                 [[INF, INF, INF, 0]], id="an infinity spreads to the outputs it weighs into"),  # fmt: skip
]


@pytest.mark.parametrize(("kind", "x", "out", "mode", "scales", "offsets", "direction", "expected"), HAND)
def test_resample_hand_values(device: dmlpy.Device, kind: str, x: Any, out: Any, mode: MODE, scales: Any, offsets: Any, direction: AXIS, expected: Any) -> None:
    x = np.array(x, F32).reshape(1, 1, *np.shape(x))
    desc = hand_desc(kind, x, (1, 1, *out), mode, (1.0, 1.0, *scales), offsets, direction)
    np.testing.assert_allclose(dmlpy.run(desc, device=device, InputTensor=x).reshape(out), np.array(expected, F32), rtol=1e-6)


@pytest.mark.parametrize(("dtype", "row", "expected"), [(np.uint8, [0, 5], [0, 1, 3, 5]), (np.int8, [0, -5], [0, -1, -3, -5]), (np.uint8, [250, 255], [250, 251, 253, 255])],
                         ids=["UINT8 1.25 and 3.75 truncate to 1 and 3", "INT8 -1.25 and -3.75 truncate toward 0", "UINT8 near the top"])  # fmt: skip
def test_integer_linear_truncates(device: dmlpy.Device, dtype: Any, row: list[int], expected: list[int]) -> None:
    x = np.array(row, dtype).reshape(1, 2)
    desc = resample2(x, (1, 4), LINEAR, (1.0, 2.0), (0.5, 0.5), (-0.5, -0.5))
    np.testing.assert_array_equal(dmlpy.run(desc, device=device, InputTensor=x).reshape(-1), np.array(expected, dtype))


def _bilinear_2x_by_loops(x: np.ndarray, t: Any) -> np.ndarray:
    """2x bilinear at pixel centres of x {H, W}, the coordinates in float32 and every product and sum a scalar one of
    type t: per output the W taps of the H sums, each sum from +0 in tap order (the innermost over the lower axis), a
    clamped tap of weight 0 skipped; stored as float32."""

    def taps(o: int, size: int) -> list[tuple[int, np.float32]]:
        coordinate = (np.float32(o) + np.float32(0.5)) / np.float32(2) - np.float32(0.5)
        low = int(np.floor(coordinate))
        fraction = np.float32(coordinate - np.float32(low))
        pairs = [(min(max(low, 0), size - 1), t(np.float32(1) - fraction)), (min(max(low + 1, 0), size - 1), t(fraction))]
        return [(i, w) for i, w in pairs if w != 0]

    h, w = x.shape
    out = np.empty((2 * h, 2 * w), F32)
    for i in range(2 * h):
        for j in range(2 * w):
            total = t(0)
            for b, wb in taps(j, w):
                column = t(0)
                for a, wa in taps(i, h):
                    column = column + wa * t(x[a, b])
                total = total + wb * column
            out[i, j] = total
    return out


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_float32_interpolates_in_float32(device: dmlpy.Device, rng: np.random.Generator, layout: str) -> None:
    # As a GPU, onnxruntime and PyTorch do: products and sums rounded to float32 one by one, not computed in float64
    # and rounded once (which differs in two in five of these outputs)
    x = rng.normal(0, 1, (1, 3, 5, 6)).astype(F32)
    out = (1, 3, 10, 12)
    strides = {"x_strides": nhwc_strides(x.shape), "y_strides": nhwc_strides(out)} if layout == "NHWC" else {}
    desc = resample2(x, out, LINEAR, (1, 1, 2, 2), (0.5,) * 4, (-0.5,) * 4, **strides)
    got = dmlpy.run(desc, device=device, InputTensor=x)
    expected = np.stack([_bilinear_2x_by_loops(plane, np.float32) for plane in x[0]])[None]
    np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32))
    in_float64 = np.stack([_bilinear_2x_by_loops(plane, np.float64) for plane in x[0]])[None]
    assert np.count_nonzero(in_float64 != expected) > 10
    np.testing.assert_allclose(got, onnx_resize(x, scales=(1, 1, 2, 2), mode="linear"), rtol=1e-6, atol=1e-6)


def test_the_grad_page_example_runs_with_ties_rounded_down(device: dmlpy.Device) -> None:
    # DML_RESAMPLE_GRAD_OPERATOR_DESC's page: [[1, 2], [3, 4]] at 0.5x height and 1.5x width gives [1, 1, 2]. At pixel
    # centres its two decisive coordinates are ties (x = 0.5): RESAMPLE2 INCREASING with InputPixelOffsets 1.0 is
    # ceil(x - 0.5), which rounds them down (round_prefer_floor).
    x = np.array(X22, F32).reshape(1, 1, 2, 2)
    desc = resample2(x, (1, 1, 1, 3), NEAREST, (1.0, 1.0, 0.5, 1.5), (1.0,) * 4, (-0.5,) * 4, AXIS.INCREASING)
    np.testing.assert_array_equal(dmlpy.run(desc, device=device, InputTensor=x).reshape(-1), [1, 1, 2])


# ---------------------------------------------------------------------------------------
# GraphBuilder.resample


def test_a_graph_of_resamples_matches_onnxruntime(device: dmlpy.Device, rng: np.random.Generator) -> None:
    x = rng.normal(0, 1, (1, 2, 5, 6)).astype(F32)
    g = dmlpy.GraphBuilder(device)
    xi = g.input("x", "float32", x.shape)
    up = g.resample(xi, scales=(1, 1, 2, 2), mode=LINEAR)  # DirectMLX's defaults: pixel centres
    _, input_offsets, output_offsets, direction = onnx_resize_parameters(x.shape, (1, 2, 5, 6), (1, 1, 0.5, 0.5), "half_pixel", "nearest", "round_prefer_floor")
    down = g.resample(up, sizes=(1, 2, 5, 6), rounding_direction=direction, input_pixel_offsets=input_offsets, output_pixel_offsets=output_offsets)
    odd = g.resample(xi, scales=(1, 1, 1.5, 0.7), mode=LINEAR)  # sizes floor(5 * 1.5) = 7, floor(6 * 0.7) = 4
    got = g.compile({"up": up, "down": down, "odd": odd})(x=x)

    expected_up = onnx_resize(x, scales=(1, 1, 2, 2), mode="linear")
    np.testing.assert_allclose(got["up"], expected_up, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["down"], onnx_resize(expected_up, sizes=(1, 2, 5, 6), mode="nearest"), rtol=1e-5, atol=1e-6)
    assert got["odd"].shape == (1, 2, 7, 4)
    np.testing.assert_allclose(got["odd"], onnx_resize(x, scales=(1, 1, 1.5, 0.7), mode="linear"), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("level", "expected"), [(FL.LEVEL_6_4, "RESAMPLE3"), (FL.LEVEL_5_1, "RESAMPLE2"), (FL.LEVEL_3_0, "RESAMPLE1")])
def test_the_builder_emits_the_newest_resample_of_the_feature_level(level: FL, expected: str) -> None:
    g = dmlpy.GraphBuilder(feature_level=level, backend="numpy")
    y = g.resample(g.input("x", "float32", (1, 1, 2, 2)), scales=(1, 1, 2, 2), mode=NEAREST)
    assert type(g._nodes[-1].desc).__name__ == f"DML_{expected}_OPERATOR_DESC"
    got = g.compile({"y": y})(x=np.array(X22, F32).reshape(1, 1, 2, 2))["y"]
    # DirectMLX's defaults: centres, INCREASING (ceil) where there is a RoundingDirection, halves up in RESAMPLE1:
    # x = (o + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25 -> ceil 0, 1, 1, 2 (clamped 1); round 0, 0, 1, 1
    row = [1, 2, 2, 2] if expected != "RESAMPLE1" else [1, 1, 2, 2]
    np.testing.assert_array_equal(got[0, 0, 0], row)


def test_the_builder_names_its_arguments() -> None:
    g = dmlpy.GraphBuilder(feature_level=FL.LEVEL_5_1, backend="numpy")
    x = g.input("x", "float32", (1, 1, 2, 2))
    with pytest.raises(ValueError, match="argument 'antialiased' needs RESAMPLE3"):
        g.resample(x, scales=(1, 1, 0.25, 0.25), mode=LINEAR, antialiased=True)
    with pytest.raises(ValueError, match="argument 'scales' has 2 entries"):
        g.resample(x, scales=(2, 2))
    with pytest.raises(TypeError, match="'scales' or 'sizes'"):
        g.resample(x)
    strict = dmlpy.GraphBuilder(dmlpy.create_device(FL.LEVEL_5_1, strict=True, backend="numpy"))
    with pytest.raises(dmlpy.DmlError, match="argument 'scales'") as error:  # a warning rule, an error on a strict device
        strict.resample(strict.input("x", "float32", (1, 1, 2, 2)), scales=(1, 1, 2, 0), sizes=(1, 1, 4, 4))
    assert_rule(error.value, "RESAMPLE.SCALE_VALUE", "DML_RESAMPLE2_OPERATOR_DESC.Scales[3]")
