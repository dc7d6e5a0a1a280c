"""Max pooling's NumPy kernel (MAX_POOLING, MAX_POOLING1, MAX_POOLING2) through dmlpy.run and graphs, on both backends.

Oracles: onnxruntime's MaxPool on the one-node model onnxruntime's DirectML provider lowers to
MAX_POOLING2 (kernel_shape, strides, pads, dilations, ceil_mode, the Indices output with
storage_order 0, which is the only order that provider accepts), and values worked by hand from
the DML_MAX_POOLING2_OPERATOR_DESC page: the maximum over the window's elements (padding never
wins), and OutputIndicesTensor's "zero-based" indices that "treat the input tensor as a contiguous
one-dimensional array", pointing at "the first value encountered" among equal maxima. The
decisions the page leaves open (NaN, a window wholly in padding, an input with Strides) are in
docs/deviations.md and tested here. The ``device`` fixture runs every test on both backends: the
native one runs FLOAT32 and FLOAT16 on the C kernel (max_pooling.c, compared bit for bit with this
NumPy kernel in test_max_pooling_native.py) and the integer types on the NumPy kernel.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from conftest import assert_rule

import dmlpy
from dmlpy import DML_FEATURE_LEVEL as FL
from dmlpy import buffer_tensor, nhwc_strides
from dmlpy.operators.descs import (
    DML_MAX_POOLING1_OPERATOR_DESC,
    DML_MAX_POOLING2_OPERATOR_DESC,
    DML_MAX_POOLING_OPERATOR_DESC,
)

NAN, INF = float("nan"), float("inf")
MAX2 = "DML_MAX_POOLING2_OPERATOR_DESC"


def max_pool(
    kind: type,
    x_sizes: Sequence[int],
    y_sizes: Sequence[int],
    window: Sequence[int],
    strides: Sequence[int] | None = None,
    start: Sequence[int] | None = None,
    end: Sequence[int] | None = None,
    dilations: Sequence[int] | None = None,
    *,
    dtype: Any = np.float32,
    index_type: Any = None,
    x_strides: Sequence[int] | None = None,
) -> Any:
    spatial = len(x_sizes) - 2
    fields: dict[str, Any] = {
        "DimensionCount": spatial,
        "Strides": list(strides or [1] * spatial),
        "WindowSize": list(window),
        "StartPadding": list(start or [0] * spatial),
        "EndPadding": list(end or [0] * spatial),
    }
    tensors: dict[str, Any] = {"InputTensor": buffer_tensor(dtype, x_sizes, x_strides), "OutputTensor": buffer_tensor(dtype, y_sizes)}
    if kind is not DML_MAX_POOLING_OPERATOR_DESC:
        tensors["OutputIndicesTensor"] = None if index_type is None else buffer_tensor(index_type, y_sizes)
    if kind is DML_MAX_POOLING2_OPERATOR_DESC:
        fields["Dilations"] = list(dilations or [1] * spatial)
    return kind(**tensors, **fields)


def run_quietly(desc: Any, device: dmlpy.Device, x: np.ndarray, expect_warnings: Sequence[str] = ()) -> Any:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", dmlpy.DmlWarning)
        result = dmlpy.run(desc, device=device, InputTensor=x)
    raised = sorted({w.message.finding.rule for w in caught if isinstance(w.message, dmlpy.DmlWarning)})
    assert raised == sorted(expect_warnings)
    return result


# ---------------------------------------------------------------------------------------
# onnxruntime's MaxPool


def onnx_max_pool(x: np.ndarray, attrs: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    import onnxruntime as ort
    from onnx import helper

    node = helper.make_node("MaxPool", ["x"], ["y", "indices"], storage_order=0, **attrs)
    graph = helper.make_graph([node], "oracle", [helper.make_tensor_value_info("x", helper.np_dtype_to_tensor_dtype(x.dtype), list(x.shape))],
                              [helper.make_empty_tensor_value_info("y"), helper.make_empty_tensor_value_info("indices")])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 10
    options = ort.SessionOptions()
    options.log_severity_level = 3  # ceil_mode: onnx's shape inference and onnxruntime's kernel differ; the kernel's shape is the output
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    y, indices = session.run(None, {"x": x})
    return y, indices


# (id, input sizes, kernel_shape, strides, pads begin + end, dilations, ceil_mode, dtype)
ONNX_CASES = [
    ("2x2 window, stride 2, no padding", (2, 3, 6, 6), [2, 2], [2, 2], [0, 0, 0, 0], [1, 1], 0, np.float32),
    ("3x3 window, stride 1, padding 1 on every side", (1, 2, 5, 7), [3, 3], [1, 1], [1, 1, 1, 1], [1, 1], 0, np.float32),
    ("uneven padding: begin 0 1, end 2 0", (1, 1, 6, 5), [3, 2], [1, 2], [0, 1, 2, 0], [1, 1], 0, np.float32),
    ("dilation 2 by 3", (1, 2, 9, 10), [2, 3], [1, 2], [0, 0, 0, 0], [2, 3], 0, np.float32),
    ("dilation 2 with padding 1", (2, 1, 7, 7), [3, 3], [2, 2], [1, 1, 1, 1], [2, 2], 0, np.float32),
    ("ceil_mode: 3x3 stride 2 on 6x6, a last window overhanging the input", (1, 2, 6, 6), [3, 3], [2, 2], [0, 0, 0, 0], [1, 1], 1, np.float32),
    ("ceil_mode with padding and dilation", (1, 1, 8, 7), [2, 3], [3, 2], [1, 0, 0, 1], [2, 1], 1, np.float32),
    ("3-D window over a 5-D input", (1, 2, 4, 5, 6), [2, 2, 3], [1, 2, 2], [0, 1, 1, 1, 0, 0], [1, 1, 1], 0, np.float32),
    ("3-D ceil_mode", (1, 1, 5, 5, 5), [2, 2, 2], [2, 2, 2], [0, 0, 0, 0, 0, 0], [1, 1, 1], 1, np.float32),
    ("FLOAT16 with padding", (1, 2, 6, 6), [3, 3], [2, 2], [1, 1, 1, 1], [1, 1], 0, np.float16),
    ("INT8 with ceil_mode", (2, 2, 5, 5), [2, 2], [2, 2], [0, 0, 0, 0], [1, 1], 1, np.int8),
    ("UINT8 with padding", (1, 3, 6, 6), [3, 3], [2, 2], [1, 1, 1, 1], [1, 1], 0, np.uint8),
]


def _small_ties(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """Values from a small range, so most windows hold equal maxima: the first one must be chosen."""
    low = 0 if np.dtype(dtype).kind == "u" else -4
    return rng.integers(low, low + 6, size=shape).astype(dtype)


@pytest.mark.parametrize("case", ONNX_CASES, ids=[c[0] for c in ONNX_CASES])
@pytest.mark.parametrize("index_type", ["uint64", "uint32"], ids=["UINT64 indices", "UINT32 indices"])
def test_max_pooling2_values_and_indices_equal_onnxruntime_max_pool(device: dmlpy.Device, case: Any, index_type: str) -> None:
    pytest.importorskip("onnxruntime")
    _, shape, kernel, strides, pads, dilations, ceil, dtype = case
    spatial = len(kernel)
    x = _small_ties(np.random.default_rng(sum(shape)), shape, dtype)
    y, indices = onnx_max_pool(x, {"kernel_shape": kernel, "strides": strides, "pads": pads, "dilations": dilations, "ceil_mode": ceil})
    desc = max_pool(DML_MAX_POOLING2_OPERATOR_DESC, shape, y.shape, kernel, strides, pads[:spatial], pads[spatial:], dilations, dtype=dtype, index_type=index_type)
    got_y, got_indices = dmlpy.run(desc, device=device, InputTensor=x)
    assert got_y.dtype == np.dtype(dtype) and got_indices.dtype == np.dtype(index_type)
    np.testing.assert_array_equal(got_y, y)
    np.testing.assert_array_equal(got_indices.astype(np.int64), indices)


@pytest.mark.parametrize("case", [c for c in ONNX_CASES if c[5] == [1] * len(c[2])], ids=[c[0] for c in ONNX_CASES if c[5] == [1] * len(c[2])])
def test_max_pooling_and_max_pooling1_equal_onnxruntime_without_dilations(device: dmlpy.Device, case: Any) -> None:
    pytest.importorskip("onnxruntime")
    _, shape, kernel, strides, pads, _, ceil, dtype = case
    spatial = len(kernel)
    x = _small_ties(np.random.default_rng(sum(shape) + 1), shape, dtype)
    y, indices = onnx_max_pool(x, {"kernel_shape": kernel, "strides": strides, "pads": pads, "ceil_mode": ceil})
    plain = max_pool(DML_MAX_POOLING_OPERATOR_DESC, shape, y.shape, kernel, strides, pads[:spatial], pads[spatial:], dtype=dtype)
    np.testing.assert_array_equal(dmlpy.run(plain, device=device, InputTensor=x), y)
    with_indices = max_pool(DML_MAX_POOLING1_OPERATOR_DESC, shape, y.shape, kernel, strides, pads[:spatial], pads[spatial:], dtype=dtype, index_type="uint32")
    got_y, got_indices = dmlpy.run(with_indices, device=device, InputTensor=x)
    np.testing.assert_array_equal(got_y, y)
    np.testing.assert_array_equal(got_indices.astype(np.int64), indices)


def _random_configuration(rng: np.random.Generator) -> tuple[tuple[int, ...], dict[str, Any]]:
    """A MaxPool onnxruntime accepts: pads shorter than the kernel, the dilated window inside the padded input."""
    while True:
        spatial = int(rng.integers(2, 4))
        shape = (int(rng.integers(1, 3)), int(rng.integers(1, 4)), *(int(v) for v in rng.integers(2, 9, spatial)))
        kernel = [int(v) for v in rng.integers(1, 4, spatial)]
        dilations = [int(v) for v in rng.integers(1, 3, spatial)]
        pads = [int(rng.integers(0, k)) for k in kernel] + [int(rng.integers(0, k)) for k in kernel]
        if all((k - 1) * d + 1 <= n + pads[i] + pads[i + spatial] for i, (k, d, n) in enumerate(zip(kernel, dilations, shape[2:], strict=True))):
            strides = [int(v) for v in rng.integers(1, 4, spatial)]
            return shape, {"kernel_shape": kernel, "strides": strides, "pads": pads, "dilations": dilations, "ceil_mode": int(rng.integers(0, 2))}


@pytest.mark.parametrize("seed", range(40))
def test_random_max_pooling2_configurations_equal_onnxruntime(device: dmlpy.Device, seed: int) -> None:
    pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(1000 + seed)
    shape, attrs = _random_configuration(rng)
    x = _small_ties(rng, shape, np.float32)
    y, indices = onnx_max_pool(x, attrs)
    spatial = len(attrs["kernel_shape"])
    desc = max_pool(DML_MAX_POOLING2_OPERATOR_DESC, shape, y.shape, attrs["kernel_shape"], attrs["strides"], attrs["pads"][:spatial], attrs["pads"][spatial:],
                    attrs["dilations"], index_type="uint64")  # fmt: skip
    got_y, got_indices = dmlpy.run(desc, device=device, InputTensor=x)
    np.testing.assert_array_equal(got_y, y)
    np.testing.assert_array_equal(got_indices.astype(np.int64), indices)


def test_max_pooling1_and_max_pooling2_without_indices_return_the_values_only(device: dmlpy.Device) -> None:
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    for kind in (DML_MAX_POOLING1_OPERATOR_DESC, DML_MAX_POOLING2_OPERATOR_DESC):
        got = dmlpy.run(max_pool(kind, (1, 1, 4, 4), (1, 1, 2, 2), [2, 2], [2, 2]), device=device, InputTensor=x)
        np.testing.assert_array_equal(got, [[[[5, 7], [13, 15]]]])


# ---------------------------------------------------------------------------------------
# The page's words, worked by hand


def test_padding_never_wins_the_maximum_of_negative_values(device: dmlpy.Device) -> None:
    # 2x2 input of negatives, 2x2 window, padding 1 everywhere: every window holds padding, none shows 0
    x = np.array([[[[-5, -3], [-4, -9]]]], np.float32)
    desc = max_pool(DML_MAX_POOLING2_OPERATOR_DESC, (1, 1, 2, 2), (1, 1, 3, 3), [2, 2], [1, 1], [1, 1], [1, 1], index_type="uint32")
    y, indices = dmlpy.run(desc, device=device, InputTensor=x)
    np.testing.assert_array_equal(y, [[[[-5, -3, -3], [-4, -3, -3], [-4, -4, -9]]]])
    np.testing.assert_array_equal(indices, [[[[0, 1, 1], [2, 1, 1], [2, 2, 3]]]])


def test_equal_maxima_give_the_index_of_the_first_in_window_order(device: dmlpy.Device) -> None:
    # one 3x3 window of 7s except the corner: row-major, the first 7 is at (0, 1) = flat 1
    x = np.full((1, 1, 3, 3), 7, np.float32)
    x[0, 0, 0, 0] = 6
    y, indices = dmlpy.run(max_pool(DML_MAX_POOLING2_OPERATOR_DESC, (1, 1, 3, 3), (1, 1, 1, 1), [3, 3], index_type="uint32"), device=device, InputTensor=x)
    assert (y.item(), indices.item()) == (7, 1)


def test_indices_count_every_element_of_the_input_batch_and_channels_included(device: dmlpy.Device) -> None:
    # {2, 3, 2, 2} with a 2x2 window: one output per (n, c), the maximum at (1, 1) of each block,
    # so the index is n * 12 + c * 4 + 3
    x = np.zeros((2, 3, 2, 2), np.float32)
    x[:, :, 1, 1] = 1
    _, indices = dmlpy.run(max_pool(DML_MAX_POOLING2_OPERATOR_DESC, (2, 3, 2, 2), (2, 3, 1, 1), [2, 2], index_type="uint64"), device=device, InputTensor=x)
    np.testing.assert_array_equal(indices[:, :, 0, 0], [[3, 7, 11], [15, 19, 23]])


def test_indices_are_logical_whatever_the_inputs_strides(device: dmlpy.Device) -> None:
    # the same {1, 2, 2, 2} values stored channels-last (NHWC strides {8, 1, 4, 2}): the maximum of
    # channel 1 sits at logical (1, 1, 0) = flat 4 + 2 = 6, though its memory offset is 5
    x = np.array([[[[1, 2], [3, 0]], [[4, 0], [9, 5]]]], np.float32)
    desc = max_pool(DML_MAX_POOLING2_OPERATOR_DESC, (1, 2, 2, 2), (1, 2, 1, 1), [2, 2], index_type="uint32", x_strides=nhwc_strides((1, 2, 2, 2)))
    y, indices = dmlpy.run(desc, device=device, InputTensor=x)
    np.testing.assert_array_equal(y.ravel(), [3, 9])
    np.testing.assert_array_equal(indices.ravel(), [2, 6])


def test_dilated_window_reads_every_dth_element_and_reports_its_index(device: dmlpy.Device) -> None:
    # 1x7 row, window 3 with dilation 3: taps 0, 3, 6; the largest of 5, 9, 2 is 9 at index 3, though 50 sits at 1
    x = np.array([[[[5, 50, 0, 9, 0, 0, 2]]]], np.float32)
    desc = max_pool(DML_MAX_POOLING2_OPERATOR_DESC, (1, 1, 1, 7), (1, 1, 1, 1), [1, 3], dilations=[1, 3], index_type="uint32")
    y, indices = dmlpy.run(desc, device=device, InputTensor=x)
    assert (y.item(), indices.item()) == (9, 3)


def test_ceil_shape_window_overhanging_the_input_takes_the_maximum_of_its_taps_inside(device: dmlpy.Device) -> None:
    # 1x6 row, window 3, stride 2: floor (6 - 3) / 2 + 1 = 2; the ceil shape 3 adds a window at 4..6 holding x[4] and x[5]
    x = np.array([[[[1, 8, 2, 3, -7, -9]]]], np.float32)
    desc = max_pool(DML_MAX_POOLING2_OPERATOR_DESC, (1, 1, 1, 6), (1, 1, 1, 3), [1, 3], [1, 2], index_type="uint32")
    y, indices = run_quietly(desc, device, x)
    np.testing.assert_array_equal(y.ravel(), [8, 3, -7])
    np.testing.assert_array_equal(indices.ravel(), [1, 3, 4])


# ---------------------------------------------------------------------------------------
# What the page leaves open (docs/deviations.md)


def test_a_number_beats_a_nan_in_its_window(device: dmlpy.Device) -> None:
    x = np.array([[[[NAN, 1, -2, NAN]]]], np.float32)
    desc = max_pool(DML_MAX_POOLING2_OPERATOR_DESC, (1, 1, 1, 4), (1, 1, 1, 3), [1, 2], index_type="uint32")
    y, indices = dmlpy.run(desc, device=device, InputTensor=x)
    np.testing.assert_array_equal(y.ravel(), [1, 1, -2])
    np.testing.assert_array_equal(indices.ravel(), [1, 1, 2])


def test_a_window_of_nans_only_gives_nan_at_its_first_nan(device: dmlpy.Device) -> None:
    x = np.array([[[[3, NAN, NAN, 4]]]], np.float32)
    desc = max_pool(DML_MAX_POOLING2_OPERATOR_DESC, (1, 1, 1, 4), (1, 1, 1, 3), [1, 2], index_type="uint32")
    y, indices = dmlpy.run(desc, device=device, InputTensor=x)
    np.testing.assert_array_equal(y.ravel(), [3, NAN, 4])
    np.testing.assert_array_equal(indices.ravel(), [0, 1, 3])


def test_minus_infinity_on_the_input_is_a_value_padding_is_not(device: dmlpy.Device) -> None:
    # window 2 with padding 1 on each side of [-inf, -inf]: each window has one real tap or two; the index is a real one
    x = np.array([[[[-INF, -INF]]]], np.float32)
    desc = max_pool(DML_MAX_POOLING2_OPERATOR_DESC, (1, 1, 1, 2), (1, 1, 1, 3), [1, 2], start=[0, 1], end=[0, 1], index_type="uint32")
    y, indices = dmlpy.run(desc, device=device, InputTensor=x)
    np.testing.assert_array_equal(y.ravel(), [-INF, -INF, -INF])
    np.testing.assert_array_equal(indices.ravel(), [0, 0, 1])


@pytest.mark.parametrize(
    ("dtype", "lowest"),
    [(np.float32, -INF), (np.float16, -INF), (np.int8, -128), (np.uint16, 0), (np.int64, -(2**63))],
    ids=["FLOAT32 -inf", "FLOAT16 -inf", "INT8 -128", "UINT16 0", "INT64 -2^63"],
)
def test_a_window_wholly_in_padding_warns_and_gives_the_lowest_value_and_an_all_ones_index(device: dmlpy.Device, dtype: Any, lowest: float) -> None:
    # start padding 2 with window 2: the first window covers padding positions -2 and -1 only
    x = np.array([[[[5, 6]]]], dtype)
    desc = max_pool(DML_MAX_POOLING2_OPERATOR_DESC, (1, 1, 1, 2), (1, 1, 1, 3), [1, 2], start=[0, 2], index_type="uint32", dtype=dtype)
    y, indices = run_quietly(desc, device, x, ["MAX_POOLING.EMPTY_WINDOW"])
    assert y.ravel()[0] == lowest and indices.ravel()[0] == 2**32 - 1
    np.testing.assert_array_equal(y.ravel()[1:], [5, 6])
    np.testing.assert_array_equal(indices.ravel()[1:], [0, 1])


def test_the_empty_window_warning_names_the_output_positions() -> None:
    desc = max_pool(DML_MAX_POOLING2_OPERATOR_DESC, (1, 1, 1, 2), (1, 1, 1, 3), [1, 2], start=[0, 2])
    finding = assert_rule(dmlpy.validate(desc), "MAX_POOLING.EMPTY_WINDOW", f"{MAX2}.OutputTensor.Sizes[3]")
    assert "1 output position {0}" in finding.message


def test_the_empty_window_warning_is_an_error_on_a_strict_device() -> None:
    desc = max_pool(DML_MAX_POOLING_OPERATOR_DESC, (1, 1, 1, 2), (1, 1, 1, 3), [1, 2], start=[0, 2])
    with pytest.raises(dmlpy.DmlError) as caught:
        dmlpy.create_device(strict=True, backend="numpy").create_operator(desc)
    assert_rule(caught.value, "MAX_POOLING.EMPTY_WINDOW")


# ---------------------------------------------------------------------------------------
# Every data type of the FL 5.0 table, at the ends of its range


@pytest.mark.parametrize("dtype", [np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64, np.int8, np.uint8, np.float16, np.float32])
def test_every_listed_data_type_keeps_its_extremes_exactly(device: dmlpy.Device, dtype: Any) -> None:
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else np.finfo(dtype)
    top, low = dtype(info.max), dtype(info.min)
    below = dtype(info.max - 1) if np.dtype(dtype).kind in "iu" else np.nextafter(top, dtype(0))
    # INT64 and UINT64 extremes are not distinct in float64: a kernel going through floats would tie them
    x = np.array([[[[below, top, low, low]]]], dtype)
    desc = max_pool(DML_MAX_POOLING2_OPERATOR_DESC, (1, 1, 1, 4), (1, 1, 1, 3), [1, 2], index_type="uint64", dtype=dtype)
    y, indices = dmlpy.run(desc, device=device, InputTensor=x)
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(y.ravel(), [top, top, low])
    np.testing.assert_array_equal(indices.ravel(), [1, 1, 2])


def test_huge_padding_window_and_dilation_run_on_a_tiny_input(device: dmlpy.Device) -> None:
    # window 2^31 with end padding 2^31 on a 1x3 row: (3 + 2^31 - 2^31) / 1 + 1 = 4 windows; window k
    # starts at k and reaches past the input, so it is max(x[k:]), and window 3 lies wholly in padding
    big = 2**31
    x = np.array([[[[4, 1, 3]]]], np.float32)
    desc = max_pool(DML_MAX_POOLING2_OPERATOR_DESC, (1, 1, 1, 3), (1, 1, 1, 4), [1, big], end=[0, big], index_type="uint32")
    y, indices = run_quietly(desc, device, x, ["MAX_POOLING.EMPTY_WINDOW"])
    np.testing.assert_array_equal(y.ravel(), [4, 3, 3, -INF])
    np.testing.assert_array_equal(indices.ravel(), [0, 2, 2, 2**32 - 1])


# ---------------------------------------------------------------------------------------
# GraphBuilder.max_pooling


def test_graph_max_pooling_with_indices_and_ceil_equals_onnxruntime(device: dmlpy.Device) -> None:
    pytest.importorskip("onnxruntime")
    x = _small_ties(np.random.default_rng(5), (2, 2, 7, 6), np.float32)
    y, indices = onnx_max_pool(x, {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 0, 0, 1], "dilations": [1, 2], "ceil_mode": 1})
    g = dmlpy.GraphBuilder(device)
    t = g.input("x", "float32", x.shape)
    values, where = g.max_pooling(t, (3, 2), (2, 2), (1, 0), (0, 1), (1, 2), output_indices=True, ceil=True, index_type="uint64")
    assert values.sizes == y.shape and where.sizes == y.shape
    out = g.compile({"y": values, "indices": where})(x=x)
    np.testing.assert_array_equal(out["y"], y)
    np.testing.assert_array_equal(out["indices"].astype(np.int64), indices)


def test_graph_max_pooling_with_channels_last_outputs_equals_onnxruntime(device: dmlpy.Device) -> None:
    # policy "nhwc" lays both outputs out channels-last through strides; the values and indices read back are NCHW's
    pytest.importorskip("onnxruntime")
    x = _small_ties(np.random.default_rng(6), (1, 3, 6, 5), np.float32)
    y, indices = onnx_max_pool(x, {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1})
    g = dmlpy.GraphBuilder(device, policy="nhwc")
    values, where = g.max_pooling(g.input("x", "float32", x.shape), 2, 2, output_indices=True, ceil=True)
    assert values.desc.Strides is not None and where.desc.Strides is not None
    out = g.compile({"y": values, "indices": where})(x=x)
    np.testing.assert_array_equal(out["y"], y)
    np.testing.assert_array_equal(out["indices"].astype(np.int64), indices)


def test_graph_max_pooling_feeds_another_operator(device: dmlpy.Device) -> None:
    # max pooling 2x2 stride 2 of 0..15, then the sum over H and W: 5 + 7 + 13 + 15 = 40
    g = dmlpy.GraphBuilder(device)
    t = g.input("x", "float32", (1, 1, 4, 4))
    pooled = g.max_pooling(t, 2, 2)
    out = g.compile({"s": g.reduce(pooled, "sum", [2, 3])})(x=np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4))
    np.testing.assert_array_equal(out["s"], [[[[40]]]])


@pytest.mark.parametrize(
    ("kwargs", "level", "struct"),
    [
        ({}, FL.LEVEL_6_4, "DML_MAX_POOLING_OPERATOR_DESC"),
        ({"output_indices": True}, FL.LEVEL_6_4, "DML_MAX_POOLING2_OPERATOR_DESC"),
        ({"dilations": 2}, FL.LEVEL_6_4, "DML_MAX_POOLING2_OPERATOR_DESC"),
        ({"output_indices": True}, FL.LEVEL_2_0, "DML_MAX_POOLING1_OPERATOR_DESC"),
    ],
    ids=["plain: MAX_POOLING", "indices: MAX_POOLING2", "dilations: MAX_POOLING2", "indices below FL 2.1: MAX_POOLING1"],
)
def test_graph_max_pooling_picks_the_struct_onnxruntimes_provider_would(kwargs: dict[str, Any], level: FL, struct: str) -> None:
    g = dmlpy.GraphBuilder(feature_level=level, backend="numpy")
    out = g.max_pooling(g.input("x", "float32", (1, 1, 6, 6)), 2, **kwargs)
    first = out[0] if isinstance(out, tuple) else out
    assert type(g._nodes[first.source[1]].desc).__name__ == struct  # noqa: SLF001


def test_graph_max_pooling_ceil_adds_a_window_only_where_the_ceil_shape_exists() -> None:
    g = dmlpy.GraphBuilder(backend="numpy")
    t = g.input("x", "float32", (1, 1, 6, 7))
    # height (6 - 3) / 3 + 1 = 2 exactly: no ceil window; width (7 - 3) / 3 + 1 = 2 remainder 1: 3
    assert g.max_pooling(t, 3, 3, ceil=True).sizes == (1, 1, 2, 3)
    assert g.max_pooling(t, 3, 3).sizes == (1, 1, 2, 2)


def test_graph_max_pooling_with_a_bad_window_names_the_argument() -> None:
    g = dmlpy.GraphBuilder(backend="numpy")
    with pytest.raises(dmlpy.DmlError, match="argument 'window'") as caught:
        g.max_pooling(g.input("x", "float32", (1, 1, 4, 4)), (5, 2))
    assert_rule(caught.value, "MAX_POOLING.WINDOW_LARGER_THAN_INPUT")


def test_graph_max_pooling_with_int32_indices_names_index_type() -> None:
    g = dmlpy.GraphBuilder(backend="numpy")
    with pytest.raises(dmlpy.DmlError, match="argument 'index_type'") as caught:
        g.max_pooling(g.input("x", "float32", (1, 1, 4, 4)), 2, output_indices=True, index_type="int32")
    assert_rule(caught.value, "TENSOR.DATA_TYPE_SUPPORT", f"{MAX2}.OutputIndicesTensor.DataType")


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"window": "ab"}, "window"),
        ({"window": [2]}, "window"),
        ({"window": 2, "strides": 0}, "strides"),
        ({"window": 2, "dilations": [0, 1]}, "dilations"),
        ({"window": 2, "start_padding": -1}, "start_padding"),
        ({"window": 2, "ceil": True, "strides": "x"}, "strides"),
        ({"window": 2, "output_indices": True, "index_type": "float32"}, "index_type"),
    ],
    ids=["a window of letters", "one window size for two spatial axes", "stride 0", "dilation 0", "negative padding",
         "ceil with strides of letters", "FLOAT32 indices"],
)
def test_graph_max_pooling_names_the_bad_argument_never_crashes(kwargs: dict[str, Any], argument: str) -> None:
    g = dmlpy.GraphBuilder(backend="numpy")
    with pytest.raises(dmlpy.DmlError, match=f"argument '{argument}'"):
        g.max_pooling(g.input("x", "float32", (1, 1, 4, 4)), **kwargs)
