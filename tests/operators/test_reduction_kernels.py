"""REDUCE (every DML_REDUCE_FUNCTION), ARGMIN and ARGMAX through dmlpy.run and graphs, on both backends.

Oracles: onnxruntime on the one-node models onnxruntime's DirectML provider lowers to these
operators (ReduceSum -> SUM, ReduceMean -> AVERAGE, ReduceProd -> MULTIPLY, ReduceLogSum,
ReduceLogSumExp, ReduceSumSquare, ReduceL1, ReduceL2, ReduceMax, ReduceMin, with axes and
keepdims=1 at opset 18; ArgMax/ArgMin -> ARGMAX/ARGMIN with AxisDirection = select_last_index),
and values worked by hand from the pages: the DML_REDUCE_OPERATOR_DESC and DML_ARGMAX_OPERATOR_DESC
examples, DML_REDUCE_FUNCTION's formulas, and AxisDirection's argmax({3,2,1,2,3}) = 0 or 4. FLOAT16
accumulates in float32 (its oracle is onnxruntime on the float32 values, rounded once); integers
wrap in their own type. What the pages leave open (NaN, the order of several axes' index,
LOG_SUM_EXP's overflow) is in docs/deviations.md and tested here. The native backend runs
dmlpy/native/reduction.c (test_reduction_native.py compares it with the NumPy kernel).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import dmlpy
from dmlpy import DML_FEATURE_LEVEL as FL
from dmlpy import buffer_tensor
from dmlpy.enums import DML_AXIS_DIRECTION as DIRECTION
from dmlpy.enums import DML_REDUCE_FUNCTION as FN
from dmlpy.operators.reduction import DML_ARGMAX_OPERATOR_DESC, DML_ARGMIN_OPERATOR_DESC, DML_REDUCE_OPERATOR_DESC

NAN, INF = float("nan"), float("inf")
INCREASING, DECREASING = DIRECTION.INCREASING, DIRECTION.DECREASING


def reduced_shape(shape: tuple[int, ...], axes: list[int]) -> tuple[int, ...]:
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def reduce(device: dmlpy.Device, function: FN, x: np.ndarray, axes: list[int], out_type: Any = None) -> np.ndarray:
    desc = DML_REDUCE_OPERATOR_DESC(function, buffer_tensor(x.dtype, x.shape), buffer_tensor(out_type or x.dtype, reduced_shape(x.shape, axes)), len(axes), axes)
    return dmlpy.run(desc, device=device, InputTensor=x)


def arg(device: dmlpy.Device, cls: type, x: np.ndarray, axes: list[int], direction: DIRECTION = INCREASING, out_type: Any = np.uint32) -> np.ndarray:
    desc = cls(buffer_tensor(x.dtype, x.shape), buffer_tensor(out_type, reduced_shape(x.shape, axes)), len(axes), axes, direction)
    return dmlpy.run(desc, device=device, InputTensor=x)


def onnx_node(op: str, x: np.ndarray, attrs: dict[str, Any], axes: list[int] | None = None) -> np.ndarray:
    import onnxruntime as ort
    from onnx import TensorProto, helper

    inputs, initializers = ["x"], []
    if axes is not None:
        inputs.append("axes")
        initializers.append(helper.make_tensor("axes", TensorProto.INT64, [len(axes)], axes))
    graph = helper.make_graph(
        [helper.make_node(op, inputs, ["y"], **attrs)], "oracle",
        [helper.make_tensor_value_info("x", helper.np_dtype_to_tensor_dtype(x.dtype), list(x.shape))],
        [helper.make_empty_tensor_value_info("y")], initializer=initializers,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 10
    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------------
# Every function against onnxruntime


def _positive(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    return rng.uniform(0.5, 1.5, size=shape).astype(dtype)  # LOG_SUM needs a positive sum; products stay near 1


def _signed(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    return rng.uniform(-3, 3, size=shape).astype(dtype)


def _ints(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    return rng.integers(-3, 4, size=shape).astype(dtype)


# (function, ONNX op, values, the data types: FLOAT32 and FLOAT16 for every function, the integers the tables list and onnxruntime runs)
FUNCTIONS = [
    (FN.SUM, "ReduceSum", _signed, [np.int32, np.int64]),
    (FN.AVERAGE, "ReduceMean", _signed, []),
    (FN.MULTIPLY, "ReduceProd", _positive, [np.int32, np.int64]),
    (FN.L1, "ReduceL1", _signed, [np.int32, np.int64]),
    (FN.L2, "ReduceL2", _signed, []),
    (FN.LOG_SUM, "ReduceLogSum", _positive, []),
    (FN.LOG_SUM_EXP, "ReduceLogSumExp", _signed, []),
    (FN.SUM_SQUARE, "ReduceSumSquare", _signed, [np.int32, np.int64]),
    (FN.MAX, "ReduceMax", _signed, [np.int8, np.uint8, np.int32, np.int64]),
    (FN.MIN, "ReduceMin", _signed, [np.int8, np.uint8, np.int32, np.int64]),
]
AXES = [[1], [0, 2], [3], [0, 1, 2, 3], [2, 1]]
ONNX_ROWS = [(fn, op, make, dtype) for fn, op, make, ints in FUNCTIONS for dtype in (np.float32, np.float16, *ints)]


@pytest.mark.parametrize("row", ONNX_ROWS, ids=[f"{fn.name} is ONNX {op} on {np.dtype(dt).name}" for fn, op, _, dt in ONNX_ROWS])
@pytest.mark.parametrize("axes", AXES, ids=[f"axes {a}" for a in AXES])
def test_reduce_agrees_with_onnxruntime(device: dmlpy.Device, row: Any, axes: list[int]) -> None:
    pytest.importorskip("onnxruntime")
    function, onnx_op, make, dtype = row
    rng = np.random.default_rng(function.value * 7 + len(axes))
    shape = (2, 3, 4, 5)
    x = (_ints if np.dtype(dtype).kind in "iu" else make)(rng, shape, dtype)
    if np.dtype(dtype).kind == "u":
        x = np.abs(x.astype(np.int64)).astype(dtype)
    got = reduce(device, function, x, axes)
    assert got.dtype == np.dtype(dtype) and got.shape == reduced_shape(shape, axes)
    if dtype == np.float16:  # accumulated in float32: onnxruntime on the same values in float32, rounded once
        expected = onnx_node(onnx_op, x.astype(np.float32), {"keepdims": 1}, axes).astype(np.float16)
        np.testing.assert_allclose(got.astype(np.float32), expected.astype(np.float32), rtol=1e-3, atol=1e-3)
    elif dtype == np.float32:
        np.testing.assert_allclose(got, onnx_node(onnx_op, x, {"keepdims": 1}, axes), rtol=2e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, onnx_node(onnx_op, x, {"keepdims": 1}, axes))


ARG_ROWS = [(cls, op, dtype, last) for cls, op in ((DML_ARGMAX_OPERATOR_DESC, "ArgMax"), (DML_ARGMIN_OPERATOR_DESC, "ArgMin"))
            for dtype in (np.float32, np.float16, np.int8, np.uint8, np.int32, np.int64) for last in (0, 1)]  # fmt: skip


@pytest.mark.parametrize("row", ARG_ROWS, ids=[f"{op} select_last_index={last} on {np.dtype(dt).name}" for _, op, dt, last in ARG_ROWS])
@pytest.mark.parametrize("axis", [0, 1, 3])
def test_argmin_and_argmax_agree_with_onnxruntime_ties_included(device: dmlpy.Device, row: Any, axis: int) -> None:
    pytest.importorskip("onnxruntime")
    cls, onnx_op, dtype, last = row
    x = np.random.default_rng(axis + 10 * last).integers(0, 3, size=(3, 4, 2, 5)).astype(dtype)  # three values: ties everywhere
    expected = onnx_node(onnx_op, x, {"axis": axis, "keepdims": 1, "select_last_index": last})
    for out_type in (np.int64, np.uint32, np.int32, np.uint64):
        got = arg(device, cls, x, [axis], DIRECTION(last), out_type)
        assert got.dtype == np.dtype(out_type)
        np.testing.assert_array_equal(got.astype(np.int64), expected)


@pytest.mark.parametrize(("function", "onnx_op"), [(FN.ARGMAX, "ArgMax"), (FN.ARGMIN, "ArgMin")])
def test_reduce_argmax_and_argmin_take_the_first_of_equal_extremes_as_onnxruntime(device: dmlpy.Device, function: FN, onnx_op: str) -> None:
    pytest.importorskip("onnxruntime")
    x = np.random.default_rng(3).integers(0, 3, size=(2, 3, 4, 5)).astype(np.float32)
    got = reduce(device, function, x, [2], np.uint32)
    np.testing.assert_array_equal(got.astype(np.int64), onnx_node(onnx_op, x, {"axis": 2, "keepdims": 1}))


# ---------------------------------------------------------------------------------------
# The pages' examples

REDUCE_EXAMPLE = np.array([[1, 2, 3], [3, 0, 4], [2, 4, 2]], np.float32)
ARGMAX_EXAMPLE = np.array([[1, 2, 3], [3, 0, 4], [2, 5, 2]], np.float32)


@pytest.mark.parametrize(
    ("axes", "expected"),
    [([0], [[6, 6, 9]]), ([1], [[6], [7], [8]]), ([0, 1], [[21]])],
    ids=["example 1: sum of columns", "example 2: sum of rows", "example 3: sum of the entire tensor"],
)
def test_reduce_page_examples(device: dmlpy.Device, axes: list[int], expected: list[list[float]]) -> None:
    np.testing.assert_array_equal(reduce(device, FN.SUM, REDUCE_EXAMPLE, axes), expected)


@pytest.mark.parametrize(
    ("axes", "expected"),
    [([0], [[1, 2, 1]]), ([1], [[2], [2], [1]]), ([0, 1], [[7]])],
    ids=["example 1: argmax of columns", "example 2: argmax of rows", "example 3: argmax of the entire tensor counts row-major over both axes"],
)
def test_argmax_page_examples(device: dmlpy.Device, axes: list[int], expected: list[list[int]]) -> None:
    np.testing.assert_array_equal(arg(device, DML_ARGMAX_OPERATOR_DESC, ARGMAX_EXAMPLE, axes), expected)


@pytest.mark.parametrize(
    ("axes", "expected"),
    [([0], [[0, 1, 2]]), ([1], [[0], [1], [0]]), ([0, 1], [[4]])],
    ids=["example 1: argmin of columns", "example 2: argmin of rows, the first of two 2s", "example 3: argmin of the entire tensor"],
)
def test_argmin_page_examples(device: dmlpy.Device, axes: list[int], expected: list[list[int]]) -> None:
    np.testing.assert_array_equal(arg(device, DML_ARGMIN_OPERATOR_DESC, ARGMAX_EXAMPLE, axes), expected)


@pytest.mark.parametrize(
    ("function", "axes", "expected"),
    [(FN.ARGMAX, [0], [[1, 2, 1]]), (FN.ARGMAX, [0, 1], [[7]]), (FN.ARGMIN, [1], [[0], [1], [0]]), (FN.ARGMIN, [0, 1], [[4]])],
    ids=["ARGMAX of columns", "ARGMAX of the entire tensor", "ARGMIN of rows", "ARGMIN of the entire tensor"],
)
def test_reduce_arg_functions_equal_the_increasing_arg_operators_on_the_pages_examples(device: dmlpy.Device, function: FN, axes: list[int], expected: list[list[int]]) -> None:
    # the ARGMIN and ARGMAX pages' remarks: with INCREASING they equal REDUCE with DML_REDUCE_FUNCTION_ARGMIN / ARGMAX
    np.testing.assert_array_equal(reduce(device, function, ARGMAX_EXAMPLE, axes, np.uint32), expected)


@pytest.mark.parametrize(
    ("cls", "values", "direction", "expected"),
    [
        (DML_ARGMAX_OPERATOR_DESC, [3, 2, 1, 2, 3], INCREASING, 0),
        (DML_ARGMAX_OPERATOR_DESC, [3, 2, 1, 2, 3], DECREASING, 4),
        (DML_ARGMIN_OPERATOR_DESC, [1, 2, 3, 2, 1], INCREASING, 0),
        (DML_ARGMIN_OPERATOR_DESC, [1, 2, 3, 2, 1], DECREASING, 4),
    ],
    ids=["argmax({3,2,1,2,3}) INCREASING is 0", "argmax({3,2,1,2,3}) DECREASING is 4", "argmin({1,2,3,2,1}) INCREASING is 0", "argmin({1,2,3,2,1}) DECREASING is 4"],
)
def test_axis_direction_picks_the_first_or_last_of_equal_values(device: dmlpy.Device, cls: type, values: list[int], direction: DIRECTION, expected: int) -> None:
    assert arg(device, cls, np.array(values, np.float32), [0], direction).item() == expected


def test_an_index_over_several_axes_counts_row_major_in_dimension_order_whatever_the_axes_order(device: dmlpy.Device) -> None:
    # {2, 3, 2}: reducing axes 0 and 2 leaves 3 rows of 2 x 2 elements, indexed i0 * 2 + i2
    x = np.zeros((2, 3, 2), np.float32)
    x[1, 0, 0] = 5  # row 0: at (1, 0) -> 2
    x[0, 1, 1] = 5  # row 1: at (0, 1) -> 1
    x[1, 2, 1] = 5  # row 2: at (1, 1) -> 3
    for axes in ([0, 2], [2, 0]):
        np.testing.assert_array_equal(arg(device, DML_ARGMAX_OPERATOR_DESC, x, axes).ravel(), [2, 1, 3])


def test_a_repeated_axis_reduces_once(device: dmlpy.Device) -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    with pytest.warns(dmlpy.DmlWarning):
        got = reduce(device, FN.SUM, x, [1, 1])
    np.testing.assert_array_equal(got, [[3], [12]])


# ---------------------------------------------------------------------------------------
# DML_REDUCE_FUNCTION's formulas by hand, and the edges the pages leave open

ROW = np.array([[1, -2, 4]], np.float32)


@pytest.mark.parametrize(
    ("function", "expected"),
    [
        (FN.SUM, 3), (FN.AVERAGE, 1), (FN.MULTIPLY, -8), (FN.L1, 7), (FN.L2, math.sqrt(21)), (FN.SUM_SQUARE, 21),
        (FN.LOG_SUM, math.log(3)), (FN.LOG_SUM_EXP, math.log(math.exp(1) + math.exp(-2) + math.exp(4))), (FN.MAX, 4), (FN.MIN, -2),
    ],
    ids=lambda v: v.name if isinstance(v, FN) else str(v),
)
def test_each_function_follows_its_formula_on_1_minus_2_4(device: dmlpy.Device, function: FN, expected: float) -> None:
    assert reduce(device, function, ROW, [1]).item() == pytest.approx(expected, rel=1e-6)


def test_log_sum_exp_of_large_values_is_finite(device: dmlpy.Device) -> None:
    # log(exp(1000) + exp(1000)) = 1000 + log 2; the intermediate sum would overflow even float64
    assert reduce(device, FN.LOG_SUM_EXP, np.array([[1000, 1000]], np.float32), [1]).item() == pytest.approx(1000 + math.log(2), rel=1e-7)


@pytest.mark.parametrize(
    ("values", "expected"),
    [([-INF, -INF], -INF), ([INF, 1], INF), ([-INF, 0], 0.0), ([NAN, 1], NAN)],
    ids=["all -inf gives -inf", "+inf gives +inf", "-inf adds nothing", "NaN propagates"],
)
def test_log_sum_exp_at_the_infinities(device: dmlpy.Device, values: list[float], expected: float) -> None:
    np.testing.assert_array_equal(reduce(device, FN.LOG_SUM_EXP, np.array([values], np.float32), [1]).ravel(), [expected])


def test_log_sum_of_a_negative_sum_is_nan_without_a_warning(device: dmlpy.Device) -> None:
    np.testing.assert_array_equal(reduce(device, FN.LOG_SUM, np.array([[1, -3]], np.float32), [1]).ravel(), [NAN])


@pytest.mark.parametrize(
    ("function", "values", "expected"),
    [(FN.MAX, [NAN, 1, -5], 1), (FN.MIN, [NAN, 1, -5], -5), (FN.MAX, [NAN, NAN], NAN), (FN.SUM, [NAN, 1], NAN), (FN.MAX, [-INF, -INF], -INF)],
    ids=["MAX: a number beats a NaN", "MIN: a number beats a NaN", "MAX of NaNs only is NaN", "SUM propagates NaN", "MAX of -inf is -inf"],
)
def test_nan_and_infinities(device: dmlpy.Device, function: FN, values: list[float], expected: float) -> None:
    np.testing.assert_array_equal(reduce(device, function, np.array([values], np.float32), [1]).ravel(), [expected])


@pytest.mark.parametrize(
    ("cls", "values", "direction", "expected"),
    [
        (DML_ARGMAX_OPERATOR_DESC, [NAN, 1, 3, NAN], INCREASING, 2),
        (DML_ARGMIN_OPERATOR_DESC, [NAN, 1, 3, NAN], INCREASING, 1),
        (DML_ARGMAX_OPERATOR_DESC, [NAN, NAN, NAN], INCREASING, 0),
        (DML_ARGMAX_OPERATOR_DESC, [NAN, NAN, NAN], DECREASING, 2),
    ],
    ids=["ARGMAX: a number beats a NaN", "ARGMIN: a number beats a NaN", "NaNs only: the first", "NaNs only, DECREASING: the last"],
)
def test_arg_functions_with_nan(device: dmlpy.Device, cls: type, values: list[float], direction: DIRECTION, expected: int) -> None:
    assert arg(device, cls, np.array(values, np.float32), [0], direction).item() == expected


@pytest.mark.parametrize(
    ("function", "dtype", "values", "expected"),
    [
        (FN.SUM, np.int32, [2**31 - 1, 1], -(2**31)),
        (FN.SUM, np.uint32, [2**32 - 1, 2], 1),
        (FN.MULTIPLY, np.int32, [2**16, 2**16], 0),
        (FN.MULTIPLY, np.uint64, [2**32, 2**32 + 1], 2**32),
        (FN.SUM_SQUARE, np.int32, [2**16, 1], 1),
        (FN.L1, np.int32, [-(2**31), 0], -(2**31)),
        (FN.L1, np.int64, [-5, 7], 12),
        (FN.SUM, np.int64, [2**62, 2**62 - 1, 1], -(2**63)),
        (FN.MAX, np.uint64, [2**64 - 1, 2**64 - 2], 2**64 - 1),
        (FN.MIN, np.int64, [-(2**63) + 1, -(2**63)], -(2**63)),
    ],
    ids=["INT32 SUM wraps to -2^31", "UINT32 SUM wraps to 1", "INT32 MULTIPLY 2^16 * 2^16 wraps to 0", "UINT64 MULTIPLY wraps modulo 2^64",
         "INT32 SUM_SQUARE 2^32 + 1 wraps to 1", "INT32 L1 of -2^31 is -2^31, as C's abs", "INT64 L1", "INT64 SUM wraps to -2^63",
         "UINT64 MAX exact past float64", "INT64 MIN exact past float64"],
)
def test_integers_compute_in_their_own_type_and_wrap(device: dmlpy.Device, function: FN, dtype: Any, values: list[int], expected: int) -> None:
    got = reduce(device, function, np.array([values], dtype), [1])
    assert got.dtype == np.dtype(dtype) and int(got.item()) == expected


@pytest.mark.parametrize(
    ("function", "values", "expected"),
    [(FN.SUM, [2048, 1, 1, 1, 1], 2052), (FN.SUM, [60000, 60000, -60000], 60000), (FN.AVERAGE, [60000, 60000], 60000), (FN.L2, [300, 400], 500)],
    ids=["2048 + four 1s is 2052 (in FLOAT16 steps it would stay 2048)", "60000 + 60000 - 60000 does not overflow",
         "AVERAGE of 60000s does not overflow", "L2 of 300 and 400 is 500, though 300^2 is beyond FLOAT16"],
)
def test_float16_accumulates_in_float32(device: dmlpy.Device, function: FN, values: list[float], expected: float) -> None:
    got = reduce(device, function, np.array([values], np.float16), [1])
    assert got.dtype == np.float16 and got.item() == expected


@pytest.mark.parametrize(
    ("function", "expected"),
    [(FN.SUM, [-1, 2]), (FN.AVERAGE, [-1, 2]), (FN.MULTIPLY, [-1, 2]), (FN.L1, [1, 2]), (FN.L2, [1, 2]), (FN.SUM_SQUARE, [1, 4]), (FN.MAX, [-1, 2]), (FN.ARGMAX, [0, 0])],
    ids=lambda v: v.name if isinstance(v, FN) else str(v),
)
def test_axis_count_0_reduces_each_element_alone(device: dmlpy.Device, function: FN, expected: list[float]) -> None:
    # the page's N, "the product of the sizes of the reduced axes", is the empty product 1
    out_type = np.uint32 if function == FN.ARGMAX else np.float32
    desc = DML_REDUCE_OPERATOR_DESC(function, buffer_tensor("float32", (1, 2)), buffer_tensor(out_type, (1, 2)), 0, [])
    np.testing.assert_array_equal(dmlpy.run(desc, device=device, InputTensor=np.array([[-1, 2]], np.float32)), [expected])


def test_a_broadcast_input_reduces_its_logical_elements(device: dmlpy.Device) -> None:
    # one row {1, 2, 3} read 4 times through a 0 stride: the column sums are 4, 8, 12
    desc = DML_REDUCE_OPERATOR_DESC(FN.SUM, buffer_tensor("float32", (4, 3), (0, 1)), buffer_tensor("float32", (1, 3)), 1, [0])
    got = dmlpy.run(desc, device=device, InputTensor=np.broadcast_to(np.array([1, 2, 3], np.float32), (4, 3)))
    np.testing.assert_array_equal(got, [[4, 8, 12]])


def test_reduce_at_feature_level_1_0_on_4d_tensors(device: dmlpy.Device) -> None:
    x = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)
    desc = DML_REDUCE_OPERATOR_DESC(FN.MAX, buffer_tensor("float32", x.shape), buffer_tensor("float32", (1, 2, 1, 1)), 2, [2, 3])
    got = dmlpy.run(desc, backend=device.backend_name, feature_level=FL.LEVEL_1_0, InputTensor=x)
    np.testing.assert_array_equal(got.ravel(), [11, 23])


# ---------------------------------------------------------------------------------------
# GraphBuilder.reduce, argmax, argmin


def test_graph_reduce_and_argmax_agree_with_onnxruntime(device: dmlpy.Device) -> None:
    pytest.importorskip("onnxruntime")
    x = np.random.default_rng(9).integers(0, 4, size=(2, 3, 4)).astype(np.float32)
    g = dmlpy.GraphBuilder(device)
    t = g.input("x", "float32", x.shape)
    outputs = {
        "mean": g.reduce(t, FN.AVERAGE, [0, 2]),
        "lse": g.reduce(t, "log_sum_exp", 1),
        "argmax_last": g.argmax(t, 2, DECREASING, index_type="int64"),
        "argmin": g.argmin(t, [1]),
        "all": g.reduce(t, "sum"),
    }
    assert outputs["mean"].sizes == (1, 3, 1) and outputs["all"].sizes == (1, 1, 1)
    got = g.compile(outputs)(x=x)
    np.testing.assert_allclose(got["mean"], onnx_node("ReduceMean", x, {"keepdims": 1}, [0, 2]), rtol=1e-6)
    np.testing.assert_allclose(got["lse"], onnx_node("ReduceLogSumExp", x, {"keepdims": 1}, [1]), rtol=1e-6)
    np.testing.assert_array_equal(got["argmax_last"], onnx_node("ArgMax", x, {"axis": 2, "keepdims": 1, "select_last_index": 1}))
    np.testing.assert_array_equal(got["argmin"].astype(np.int64), onnx_node("ArgMin", x, {"axis": 1, "keepdims": 1}))
    np.testing.assert_allclose(got["all"], onnx_node("ReduceSum", x, {"keepdims": 1}, [0, 1, 2]), rtol=1e-6)
    assert got["argmax_last"].dtype == np.int64 and got["argmin"].dtype == np.uint32


def test_graph_reduce_argmax_writes_the_index_type() -> None:
    g = dmlpy.GraphBuilder(backend="numpy")
    t = g.input("x", "float32", (1, 1, 3, 3))
    y = g.reduce(t, FN.ARGMAX, [3])
    assert (y.sizes, y.data_type) == ((1, 1, 3, 1), dmlpy.DML_TENSOR_DATA_TYPE.UINT32)
    out = g.compile({"y": y})(x=ARGMAX_EXAMPLE.reshape(1, 1, 3, 3))
    np.testing.assert_array_equal(out["y"].ravel(), [2, 2, 1])


def test_graph_reduce_with_an_axis_out_of_range_names_the_argument() -> None:
    from conftest import assert_rule

    g = dmlpy.GraphBuilder(backend="numpy")
    with pytest.raises(dmlpy.DmlError, match="argument 'axes'") as caught:
        g.reduce(g.input("x", "float32", (2, 3)), "sum", [2])
    assert_rule(caught.value, "REDUCE.AXIS_RANGE", "DML_REDUCE_OPERATOR_DESC.Axes[0]")


def test_graph_argmax_below_feature_level_3_0_names_the_call() -> None:
    g = dmlpy.GraphBuilder(feature_level=FL.LEVEL_2_1, backend="numpy")
    with pytest.raises(dmlpy.DmlError, match="argument 'argmax'"):
        g.argmax(g.input("x", "float32", (1, 1, 2, 3)), 3)


@pytest.mark.parametrize(
    ("function", "axes", "argument"),
    [("sum", "ab", "axes"), ("sum", [[1]], "axes"), ("sum", 3.5, "axes"), ("sum", [1.5], "axes"), ("nope", [1], "function"), (99, [1], "function")],
    ids=["axes of letters", "a nested axis", "a float for axes", "a float axis", "an unknown function name", "function 99"],
)
def test_graph_reduce_names_the_bad_argument_never_crashes(function: Any, axes: Any, argument: str) -> None:
    g = dmlpy.GraphBuilder(backend="numpy")
    with pytest.raises(dmlpy.DmlError, match=f"argument '{argument}'"):
        g.reduce(g.input("x", "float32", (2, 3)), function, axes)
