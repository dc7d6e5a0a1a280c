"""TOP_K, TOP_K1, CUMULATIVE_SUMMATION, CUMULATIVE_PRODUCT, ONE_HOT, SCATTER (SCATTER_ELEMENTS) and SCATTER_ND
through the whole pipeline on both backends (the native backend runs their NumPy kernels), and their family rules.

Oracles: onnxruntime on the one-node ONNX model DirectML's ONNX mapping pairs with each operator (TopK ->
TOP_K1, CumSum -> CUMULATIVE_SUMMATION, OneHot -> ONE_HOT, ScatterElements -> SCATTER, ScatterND ->
SCATTER_ND); the examples of each operator's DirectML page, copied as hand values; and values worked out
by hand from the pages' text (ties in index order, exclusive and reversed running products, integer
wrap-around, out-of-range indices: docs/deviations.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import assert_rule, rule_ids
from onnx_oracle import onnx_node

import dmlpy
from dmlpy import DML_FEATURE_LEVEL as FL
from dmlpy import DML_TENSOR_DATA_TYPE as DT
from dmlpy import buffer_tensor
from dmlpy.enums import DML_AXIS_DIRECTION as DIR
from dmlpy.errors import DmlError
from dmlpy.operators.data_movement import (
    DML_ONE_HOT_OPERATOR_DESC,
    DML_SCATTER_ND_OPERATOR_DESC,
    DML_SCATTER_OPERATOR_DESC,
)
from dmlpy.operators.reduction import (
    DML_CUMULATIVE_PRODUCT_OPERATOR_DESC,
    DML_CUMULATIVE_SUMMATION_OPERATOR_DESC,
    DML_TOP_K1_OPERATOR_DESC,
    DML_TOP_K_OPERATOR_DESC,
)

NAN = float("nan")


def dt(array: np.ndarray) -> DT:
    return dmlpy.tensor.as_data_type(array.dtype)


# ---------------------------------------------------------------------------------------
# TOP_K, TOP_K1

PAGE_X = np.array([[[[0, 1, 10, 11], [3, 2, 9, 8], [4, 5, 6, 7]]]], np.float32)


def top_k(device: dmlpy.Device, x: np.ndarray, axis: int, k: int, direction: DIR | None = DIR.DECREASING, index: DT = DT.UINT32) -> tuple[np.ndarray, np.ndarray]:
    sizes = tuple(k if i == axis else n for i, n in enumerate(x.shape))
    tensors = (buffer_tensor(dt(x), x.shape), buffer_tensor(dt(x), sizes), buffer_tensor(index, sizes))
    desc: Any = DML_TOP_K_OPERATOR_DESC(*tensors, axis, k) if direction is None else DML_TOP_K1_OPERATOR_DESC(*tensors, axis, k, direction)
    values, indices = dmlpy.run(desc, device=device, InputTensor=x)
    return values, indices


@pytest.mark.parametrize(
    ("x", "axis", "k", "direction", "values", "indices"),
    [
        pytest.param(PAGE_X, 3, 2, None, [[[[11, 10], [9, 8], [7, 6]]]], [[[[3, 2], [2, 3], [3, 2]]]], id="TOP_K page example 1: the two largest of each row"),
        pytest.param(PAGE_X, 2, 2, None, [[[[4, 5, 10, 11], [3, 2, 9, 8]]]], [[[[2, 2, 0, 0], [1, 1, 1, 1]]]], id="TOP_K page example 2: along the columns"),
        pytest.param(PAGE_X, 3, 2, DIR.DECREASING, [[[[11, 10], [9, 8], [7, 6]]]], [[[[3, 2], [2, 3], [3, 2]]]], id="TOP_K1 DECREASING is TOP_K"),
        pytest.param(PAGE_X, 3, 2, DIR.INCREASING, [[[[0, 1], [2, 3], [4, 5]]]], [[[[0, 1], [1, 0], [0, 1]]]], id="TOP_K1 INCREASING: the two smallest ascending"),
        pytest.param(np.array([1, 3, 3, 1], np.float32), 0, 3, DIR.DECREASING, [3, 3, 1], [1, 2, 0], id="ties among the largest come in increasing index order"),
        pytest.param(np.array([1, 3, 3, 1], np.float32), 0, 3, DIR.INCREASING, [1, 1, 3], [0, 3, 1], id="ties among the smallest come in increasing index order too"),
        pytest.param(np.array([0.0, -0.0, 2.0], np.float32), 0, 3, DIR.INCREASING, [0.0, -0.0, 2.0], [0, 1, 2], id="-0 and +0 tie: index order"),
        pytest.param(np.array([1, NAN, 3], np.float32), 0, 2, DIR.DECREASING, [NAN, 3], [1, 2], id="NaN sorts above every number (docs/deviations.md)"),
        pytest.param(np.array([200, 7, 255, 0], np.uint8), 0, 4, DIR.DECREASING, [255, 200, 7, 0], [2, 0, 1, 3], id="UINT8 keeps its type, K equal to the axis size"),
        pytest.param(np.array([-5, 7, -128, 0], np.int8), 0, 2, DIR.INCREASING, [-128, -5], [2, 0], id="INT8 smallest"),
    ],
)
def test_top_k_selects_sorted_values_and_their_positions(device: dmlpy.Device, x: np.ndarray, axis: int, k: int, direction: DIR | None, values: Any, indices: Any) -> None:
    got_values, got_indices = top_k(device, x, axis, k, direction)
    np.testing.assert_array_equal(got_values, np.array(values, x.dtype))
    assert np.signbit(got_values).tolist() == np.signbit(np.array(values, x.dtype)).tolist()
    np.testing.assert_array_equal(got_indices, indices)
    assert got_indices.dtype == np.uint32


@pytest.mark.parametrize("largest", [1, 0])
@pytest.mark.parametrize(("shape", "axis", "k", "dtype"), [((2, 3, 5), 2, 3, np.float32), ((4, 6), 0, 4, np.float16), ((3, 7), 1, 7, np.int32), ((2, 2, 9), 2, 1, np.float32)])
def test_top_k_matches_onnxruntime_topk_with_ties(device: dmlpy.Device, shape: tuple[int, ...], axis: int, k: int, dtype: Any, largest: int) -> None:
    x = np.random.default_rng(7).integers(-4, 5, size=shape).astype(dtype)  # few distinct values: many ties
    values, indices = onnx_node("TopK", [x, np.array([k], np.int64)], {"axis": axis, "largest": largest, "sorted": 1}, outputs=2)
    got_values, got_indices = top_k(device, x, axis, k, DIR.DECREASING if largest else DIR.INCREASING, DT.UINT64)
    np.testing.assert_array_equal(got_values, values)
    np.testing.assert_array_equal(got_indices.astype(np.int64), indices)
    assert got_indices.dtype == np.uint64


@pytest.mark.parametrize("largest", [1, 0])
def test_top_k_orders_nan_above_every_number_as_onnxruntime_does(device: dmlpy.Device, largest: int) -> None:
    x = np.array([[1, NAN, 3, 2, NAN], [NAN, -np.inf, 0, np.inf, 5]], np.float32)
    values, indices = onnx_node("TopK", [x, np.array([3], np.int64)], {"axis": 1, "largest": largest}, outputs=2)
    got_values, got_indices = top_k(device, x, 1, 3, DIR.DECREASING if largest else DIR.INCREASING)
    np.testing.assert_array_equal(got_values, values)
    np.testing.assert_array_equal(got_indices, indices)


# ---------------------------------------------------------------------------------------
# CUMULATIVE_SUMMATION, CUMULATIVE_PRODUCT


def cumulative(device: dmlpy.Device, product: bool, x: np.ndarray, axis: int, direction: DIR, exclusive: bool) -> np.ndarray:
    cls = DML_CUMULATIVE_PRODUCT_OPERATOR_DESC if product else DML_CUMULATIVE_SUMMATION_OPERATOR_DESC
    desc = cls(buffer_tensor(dt(x), x.shape), buffer_tensor(dt(x), x.shape), axis, direction, exclusive)
    return dmlpy.run(desc, device=device, InputTensor=x)  # type: ignore[no-any-return]


@pytest.mark.parametrize(("exclusive", "reverse"), [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize(("shape", "axis", "dtype"), [((2, 3, 4), 2, np.float32), ((2, 3, 4), 0, np.int32), ((5, 3), 0, np.float32), ((1, 1, 3, 4), 3, np.int64)])
def test_cumulative_summation_matches_onnxruntime_cumsum(device: dmlpy.Device, shape: tuple[int, ...], axis: int, dtype: Any, exclusive: int, reverse: int) -> None:
    x = np.random.default_rng(3).integers(-50, 50, size=shape).astype(dtype)
    (expected,) = onnx_node("CumSum", [x, np.array(axis, np.int64)], {"exclusive": exclusive, "reverse": reverse})
    got = cumulative(device, False, x, axis, DIR.DECREASING if reverse else DIR.INCREASING, bool(exclusive))
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == dtype


@pytest.mark.parametrize(
    ("product", "x", "direction", "exclusive", "expected"),
    [
        pytest.param(True, [1, 2, 3, 4], DIR.INCREASING, False, [1, 2, 6, 24], id="product: 1, 1*2, 1*2*3, 1*2*3*4"),
        pytest.param(True, [1, 2, 3, 4], DIR.INCREASING, True, [1, 1, 2, 6], id="exclusive product: the first is 1"),
        pytest.param(True, [1, 2, 3, 4], DIR.DECREASING, False, [24, 24, 12, 4], id="DECREASING product runs from the end"),
        pytest.param(True, [1, 2, 3, 4], DIR.DECREASING, True, [24, 12, 4, 1], id="DECREASING exclusive product: the last is 1"),
        pytest.param(False, [1, 2, 3, 4], DIR.DECREASING, True, [9, 7, 4, 0], id="DECREASING exclusive sum: the last is 0"),
        pytest.param(False, np.array([2**30, 2**30, 2**30], np.int32), DIR.INCREASING, False, [2**30, -(2**31), -(2**30)], id="INT32 sums wrap as two's complement"),
        pytest.param(True, np.array([2**16, 2**16, 3], np.uint32), DIR.INCREASING, False, [2**16, 0, 0], id="UINT32 products wrap modulo 2^32"),
        pytest.param(False, np.array([1, np.inf, -np.inf, 2], np.float32), DIR.INCREASING, False, [1, np.inf, NAN, NAN], id="inf - inf is NaN from there on"),
        pytest.param(False, np.array([60000, 10000, -20000], np.float16), DIR.INCREASING, False, [60000, np.inf, 50000],
                     id="FLOAT16 sums run in float32: 70000 is stored as inf, the running sum goes on to 50000 (docs/deviations.md)"),
    ],
)
def test_cumulative_values_from_the_pages_formulas(device: dmlpy.Device, product: bool, x: Any, direction: DIR, exclusive: bool, expected: Any) -> None:
    x = np.asarray(x, np.float32) if isinstance(x, list) else x
    got = cumulative(device, product, x, 0, direction, exclusive)
    np.testing.assert_array_equal(got, np.array(expected).astype(x.dtype) if x.dtype.kind != "f" else np.array(expected, x.dtype))


def test_cumulative_product_runs_along_any_axis_of_a_4d_tensor(device: dmlpy.Device) -> None:
    x = np.arange(1, 13, dtype=np.float32).reshape(1, 3, 2, 2)
    np.testing.assert_array_equal(cumulative(device, True, x, 1, DIR.INCREASING, False), np.cumprod(x, axis=1))  # e.g. [1, 5, 45] down the first column
    assert cumulative(device, True, x, 1, DIR.INCREASING, False)[0, :, 0, 0].tolist() == [1, 5, 45]


# ---------------------------------------------------------------------------------------
# ONE_HOT


def one_hot(device: dmlpy.Device, indices: np.ndarray, values: np.ndarray, axis: int, depth: int) -> np.ndarray:
    sizes = tuple(depth if i == axis else n for i, n in enumerate(indices.shape))
    desc = DML_ONE_HOT_OPERATOR_DESC(buffer_tensor(dt(indices), indices.shape), buffer_tensor(dt(values), values.shape), buffer_tensor(dt(values), sizes), axis)
    return dmlpy.run(desc, device=device, IndicesTensor=indices, ValuesTensor=values)  # type: ignore[no-any-return]


OFF_ON = np.array([0, 1], np.float32).reshape(1, 1, 1, 2)


@pytest.mark.parametrize(
    ("indices", "values", "axis", "expected"),
    [
        pytest.param(np.array([0, 3, 2], np.uint32).reshape(1, 1, 3, 1), OFF_ON, 3, [[1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]], id="page example 1: along the rows"),
        pytest.param(np.array([0, 2, 1, 0], np.uint32).reshape(1, 1, 1, 4), OFF_ON, 2, [[1, 0, 0, 1], [0, 0, 1, 0], [0, 1, 0, 0]], id="page example 2: along the columns"),
        pytest.param(np.array([0, 3, 2], np.uint32).reshape(1, 1, 3, 1), np.array([4, 2, 9], np.float32).reshape(1, 1, 3, 1), 3, [[2, 4, 4, 4], [4, 4, 4, 2], [4, 4, 2, 4]],
                     id="page example 3: off and on from a {1,1,3,1} values tensor, its third element unused"),
        pytest.param(np.array([-3, 100, 3], np.int32).reshape(1, 1, 3, 1), OFF_ON, 3, [[0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 1]], id="page example 4: negative counts from the end, out of range is all off"),
        pytest.param(np.array([-5, 4], np.int64).reshape(1, 1, 2, 1), OFF_ON, 3, [[0, 0, 0, 0], [0, 0, 0, 0]], id="below -depth and at depth: all off"),
        pytest.param(np.array([2**63 + 1, 1], np.uint64).reshape(1, 1, 2, 1), OFF_ON, 3, [[0, 0, 0, 0], [0, 1, 0, 0]], id="a huge UINT64 index is out of range, not negative"),
    ],
)
def test_one_hot_page_examples(device: dmlpy.Device, indices: np.ndarray, values: np.ndarray, axis: int, expected: Any) -> None:
    got = one_hot(device, indices, values, axis, 4 if axis == 3 else 3)
    np.testing.assert_array_equal(got.reshape(np.shape(expected)), expected)
    assert got.dtype == values.dtype


@pytest.mark.parametrize(("onnx_axis", "dtype", "index_type"), [(-1, np.float32, np.int64), (0, np.int64, np.int64), (1, np.float16, np.int32), (2, np.float32, np.int32)])
def test_one_hot_matches_onnxruntime_onehot_with_negative_indices(device: dmlpy.Device, onnx_axis: int, dtype: Any, index_type: Any) -> None:
    indices = np.array([[0, -1, 3], [-4, 5, 2]], index_type)  # depth 4: -1 is 3, -4 is 0, 5 is out of range
    values = np.array([3, 7], dtype)
    depth = np.array(4, np.int64 if index_type == np.int64 else np.float32)  # the type combinations onnxruntime's CPU kernel has
    (expected,) = onnx_node("OneHot", [indices, depth, values], {"axis": onnx_axis})
    axis = onnx_axis % 3
    got = one_hot(device, np.expand_dims(indices, axis), values.reshape(1, 1, 2), axis, 4)
    np.testing.assert_array_equal(got, expected)


# ---------------------------------------------------------------------------------------
# SCATTER (SCATTER_ELEMENTS), SCATTER_ND


def scatter(device: dmlpy.Device, x: np.ndarray, indices: np.ndarray, updates: np.ndarray, axis: int) -> np.ndarray:
    desc = DML_SCATTER_OPERATOR_DESC(buffer_tensor(dt(x), x.shape), buffer_tensor(dt(indices), indices.shape), buffer_tensor(dt(x), updates.shape), buffer_tensor(dt(x), x.shape), axis)
    return dmlpy.run(desc, device=device, InputTensor=x, IndicesTensor=indices, UpdatesTensor=updates)  # type: ignore[no-any-return]


def scatter_nd(device: dmlpy.Device, x: np.ndarray, indices: np.ndarray, updates: np.ndarray, input_count: int | None = None, indices_count: int | None = None) -> np.ndarray:
    desc = DML_SCATTER_ND_OPERATOR_DESC(buffer_tensor(dt(x), x.shape), buffer_tensor(dt(indices), indices.shape), buffer_tensor(dt(x), updates.shape), buffer_tensor(dt(x), x.shape),
                                        input_count or x.ndim, indices_count or indices.ndim)  # fmt: skip
    return dmlpy.run(desc, device=device, InputTensor=x, IndicesTensor=indices, UpdatesTensor=updates)  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("x", "indices", "updates", "axis", "expected"),
    [
        pytest.param([0, 1, 2, 3, 4], np.array([3, 1, 0, 2, 4], np.uint32), [10, 11, 12, 13, 14], 0, [12, 11, 13, 10, 14], id="1-D: output[indices[i]] = updates[i]"),
        pytest.param([[0, 1, 2], [3, 4, 5]], np.array([[2, 0, 1], [1, 2, 0]], np.int32), [[10, 11, 12], [13, 14, 15]], 1, [[11, 12, 10], [15, 13, 14]], id="axis 1: a permutation of each row"),
        pytest.param([[0, 1, 2], [3, 4, 5]], np.array([[-1], [-3]], np.int64), [[7], [8]], 1, [[0, 1, 7], [8, 4, 5]], id="negative indices count from the end of the axis"),
        pytest.param([[0, 1, 2], [3, 4, 5]], np.array([[1, 1, 1]], np.uint32), [[7, 8, 9]], 0, [[0, 1, 2], [7, 8, 9]], id="indices smaller than the input along Axis: one row written"),
        pytest.param([0, 1, 2, 3], np.array([5, -9, 1], np.int32), [10, 11, 12], 0, [0, 12, 2, 3], id="an index outside the axis writes nothing (docs/deviations.md)"),
    ],
)
def test_scatter_writes_updates_along_the_axis(device: dmlpy.Device, x: Any, indices: np.ndarray, updates: Any, axis: int, expected: Any) -> None:
    got = scatter(device, np.array(x, np.float32), indices, np.array(updates, np.float32), axis)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(("shape", "indices_shape", "axis", "dtype"), [((4, 5), (2, 5), 0, np.float32), ((3, 6), (3, 2), 1, np.int32), ((2, 3, 4), (2, 3, 1), 2, np.float16), ((2, 3, 4), (2, 3, 4), 2, np.int8)])
def test_scatter_matches_onnxruntime_scatterelements(device: dmlpy.Device, shape: tuple[int, ...], indices_shape: tuple[int, ...], axis: int, dtype: Any) -> None:
    rng = np.random.default_rng(11)
    x = rng.integers(-50, 50, size=shape).astype(dtype)
    n = shape[axis]  # distinct targets along the axis in every line (duplicates are invalid), negative for half of them
    indices = np.moveaxis(np.argsort(rng.random(np.moveaxis(np.zeros(indices_shape[:axis] + (n,) + indices_shape[axis + 1 :]), axis, -1).shape), axis=-1)[..., : indices_shape[axis]], -1, axis)
    indices = np.where(rng.random(indices.shape) < 0.5, indices - n, indices).astype(np.int64)
    updates = rng.integers(-50, 50, size=indices_shape).astype(dtype)
    (expected,) = onnx_node("ScatterElements", [x, indices, updates], {"axis": axis})
    np.testing.assert_array_equal(scatter(device, x, indices, updates, axis), expected)


def test_scatter_nd_onnx_example_and_onnxruntime(device: dmlpy.Device) -> None:
    x = np.arange(1, 9, dtype=np.float32)
    indices, updates = np.array([[4], [3], [1], [7]], np.int64), np.array([9, 10, 11, 12], np.float32)
    # ScatterND's first example: {1, 11, 3, 10, 9, 6, 7, 12}, as a 2-D {1, 8} input so every tensor has rank 2
    got = scatter_nd(device, x.reshape(1, 8), indices.reshape(4, 1), updates.reshape(1, 4), input_count=1, indices_count=2)
    np.testing.assert_array_equal(got, [[1, 11, 3, 10, 9, 6, 7, 12]])
    data = np.arange(64, dtype=np.float32).reshape(4, 4, 4)
    idx = np.array([[[0, -1]], [[2, 1]]], np.int64)  # {2, 1, 2}: two rows {a, b, :}, one counted from the end
    upd = np.arange(100, 108, dtype=np.float32).reshape(2, 1, 4)
    (expected,) = onnx_node("ScatterND", [data, idx, upd])
    np.testing.assert_array_equal(scatter_nd(device, data, idx, upd), expected)


def test_scatter_nd_writes_whole_slices_and_skips_tuples_outside(device: dmlpy.Device) -> None:
    x = np.zeros((3, 2), np.int32)
    indices = np.array([[2], [5]], np.uint32)  # row 2, and row 5 outside: nothing written for it
    got = scatter_nd(device, x, indices, np.array([[7, 8], [9, 9]], np.int32))
    np.testing.assert_array_equal(got, [[0, 0], [0, 0], [7, 8]])


# ---------------------------------------------------------------------------------------
# Family rules, by id


def _t(dtype: DT, sizes: tuple[int, ...]) -> Any:
    return buffer_tensor(dtype, sizes)


F, U = DT.FLOAT32, DT.UINT32
RULE_CASES = [
    pytest.param(DML_TOP_K1_OPERATOR_DESC(_t(F, (1, 1, 3, 4)), _t(F, (1, 1, 3, 2)), _t(U, (1, 1, 3, 2)), 4, 2, DIR.DECREASING), "TOP_K.AXIS_RANGE", "Axis", id="TOP_K1 Axis 4 of a 4-D input"),
    pytest.param(DML_TOP_K1_OPERATOR_DESC(_t(F, (1, 1, 3, 4)), _t(F, (1, 1, 3, 5)), _t(U, (1, 1, 3, 5)), 3, 5, DIR.DECREASING), "TOP_K.K_RANGE", "K", id="TOP_K1 K 5 above the axis size 4"),
    pytest.param(DML_TOP_K_OPERATOR_DESC(_t(F, (1, 1, 3, 4)), _t(F, (1, 1, 3, 2)), _t(U, (1, 1, 3, 3)), 3, 2), "TOP_K.OUTPUT_SIZE", "OutputIndexTensor.Sizes[3]", id="TOP_K index output 3 wide for K 2"),
    pytest.param(DML_CUMULATIVE_SUMMATION_OPERATOR_DESC(_t(F, (2, 3)), _t(F, (2, 3)), 2, DIR.INCREASING, False), "CUMULATIVE.AXIS_RANGE", "Axis", id="CUMULATIVE_SUMMATION Axis 2 of a 2-D input"),
    pytest.param(DML_CUMULATIVE_PRODUCT_OPERATOR_DESC(_t(F, (2, 3)), _t(F, (2, 3)), 5, DIR.INCREASING, False), "CUMULATIVE.AXIS_RANGE", "Axis", id="CUMULATIVE_PRODUCT Axis 5 of a 2-D input"),
    pytest.param(DML_ONE_HOT_OPERATOR_DESC(_t(U, (1, 3)), _t(F, (1, 2)), _t(F, (1, 3)), 2), "ONE_HOT.AXIS_RANGE", "Axis", id="ONE_HOT Axis 2 of 2-D indices"),
    pytest.param(DML_ONE_HOT_OPERATOR_DESC(_t(U, (3, 2)), _t(F, (1, 2)), _t(F, (3, 4)), 1), "ONE_HOT.INDICES_SIZES", "IndicesTensor.Sizes[1]", id="ONE_HOT indices 2 wide on Axis, expected 1"),
    pytest.param(DML_ONE_HOT_OPERATOR_DESC(_t(U, (2, 1)), _t(F, (2, 4)), _t(F, (3, 4)), 1), "ONE_HOT.INDICES_SIZES", "IndicesTensor.Sizes[0]", id="ONE_HOT indices 2 rows for an output of 3"),
    pytest.param(DML_ONE_HOT_OPERATOR_DESC(_t(U, (3, 1)), _t(F, (1, 1)), _t(F, (3, 4)), 1), "ONE_HOT.VALUES_COUNT", "ValuesTensor.Sizes", id="ONE_HOT values of one element"),
    pytest.param(DML_SCATTER_OPERATOR_DESC(_t(F, (2, 3)), _t(U, (2, 3)), _t(F, (2, 3)), _t(F, (2, 3)), 2), "SCATTER.AXIS_RANGE", "Axis", id="SCATTER Axis 2 of 2-D tensors"),
    pytest.param(DML_SCATTER_OPERATOR_DESC(_t(F, (2, 3)), _t(U, (1, 2)), _t(F, (1, 2)), _t(F, (2, 3)), 0), "SCATTER.INDICES_SIZES", "IndicesTensor.Sizes[1]", id="SCATTER indices 2 wide off Axis, input 3"),
    pytest.param(DML_SCATTER_OPERATOR_DESC(_t(F, (2, 3)), _t(U, (1, 3)), _t(F, (2, 3)), _t(F, (2, 3)), 0), "SCATTER.UPDATES_SIZES", "UpdatesTensor.Sizes", id="SCATTER updates {2,3} for indices {1,3}"),
    pytest.param(DML_SCATTER_OPERATOR_DESC(_t(F, (2, 3)), _t(U, (1, 3)), _t(F, (1, 3)), _t(F, (2, 4)), 0), "SCATTER.OUTPUT_SIZE", "OutputTensor.Sizes", id="SCATTER output {2,4} for input {2,3}"),
    pytest.param(DML_SCATTER_ND_OPERATOR_DESC(_t(F, (4, 4)), _t(U, (2, 1)), _t(F, (2, 4)), _t(F, (4, 4)), 3, 2), "SCATTER_ND.INPUT_DIMENSION_COUNT", "InputDimensionCount", id="SCATTER_ND InputDimensionCount 3 of 2"),
    pytest.param(DML_SCATTER_ND_OPERATOR_DESC(_t(F, (4, 4)), _t(U, (2, 1)), _t(F, (2, 4)), _t(F, (4, 4)), 2, 0), "SCATTER_ND.INDICES_DIMENSION_COUNT", "IndicesDimensionCount", id="SCATTER_ND IndicesDimensionCount 0"),
    pytest.param(DML_SCATTER_ND_OPERATOR_DESC(_t(F, (1, 4)), _t(U, (1, 2)), _t(F, (1, 1)), _t(F, (1, 4)), 1, 2), "SCATTER_ND.TUPLE_SIZE", "IndicesTensor.Sizes[1]", id="SCATTER_ND tuples of 2 into 1 meaningful dimension"),
    pytest.param(DML_SCATTER_ND_OPERATOR_DESC(_t(F, (4, 4)), _t(U, (2, 1)), _t(F, (2, 3)), _t(F, (4, 4)), 2, 2), "SCATTER_ND.UPDATES_SIZES", "UpdatesTensor.Sizes", id="SCATTER_ND updates {2,3}, expected {2,4}"),
]


@pytest.mark.parametrize(("desc", "rule", "field"), RULE_CASES)
def test_an_invalid_desc_names_its_rule_and_field(desc: Any, rule: str, field: str) -> None:
    report = dmlpy.validate(desc, feature_level=FL.LEVEL_6_4)
    assert_rule(report, rule, f"{type(desc).__name__}.{field}")


VALID = [
    pytest.param(DML_TOP_K1_OPERATOR_DESC(_t(F, (1, 1, 3, 4)), _t(F, (1, 1, 3, 4)), _t(U, (1, 1, 3, 4)), 3, 4, DIR.INCREASING), id="TOP_K1 with K equal to the axis size"),
    pytest.param(DML_CUMULATIVE_PRODUCT_OPERATOR_DESC(_t(F, (2, 3)), _t(F, (2, 3)), 1, DIR.DECREASING, True), id="CUMULATIVE_PRODUCT along the last axis"),
    pytest.param(DML_ONE_HOT_OPERATOR_DESC(_t(DT.INT32, (2, 1, 4, 5)), _t(F, (1, 1, 1, 2)), _t(F, (2, 3, 4, 5)), 1), id="ONE_HOT: the page's {2,3,4,5} output with Axis 1"),
    pytest.param(DML_SCATTER_OPERATOR_DESC(_t(F, (2, 3)), _t(U, (1, 3)), _t(F, (1, 3)), _t(F, (2, 3)), 0), id="SCATTER with fewer indices than the input along Axis"),
    pytest.param(DML_SCATTER_ND_OPERATOR_DESC(_t(F, (1, 4, 5, 6, 7)), _t(U, (1, 1, 4, 5, 2)), _t(F, (1, 4, 5, 6, 7)), _t(F, (1, 4, 5, 6, 7)), 4, 3),
                 id="SCATTER_ND: 4x5 tuples of 2 into {4,5,6,7}: updates {1, 4,5, 6,7}"),
]


@pytest.mark.parametrize("desc", VALID)
def test_a_valid_desc_has_no_finding(desc: Any) -> None:
    assert rule_ids(dmlpy.validate(desc, feature_level=FL.LEVEL_6_4)) == []


def test_an_invalid_desc_does_not_run(device: dmlpy.Device) -> None:
    desc = DML_SCATTER_OPERATOR_DESC(_t(F, (2, 3)), _t(U, (1, 2)), _t(F, (1, 2)), _t(F, (2, 3)), 0)
    with pytest.raises(DmlError) as error:
        dmlpy.run(desc, device=device, InputTensor=np.zeros((2, 3), np.float32), IndicesTensor=np.zeros((1, 2), np.uint32), UpdatesTensor=np.zeros((1, 2), np.float32))
    assert_rule(error.value, "SCATTER.INDICES_SIZES")


# ---------------------------------------------------------------------------------------
# GraphBuilder


def test_a_graph_runs_top_k_cumulative_one_hot_and_the_scatters(device: dmlpy.Device) -> None:
    g = dmlpy.GraphBuilder(device)
    x = g.input("x", "float32", (2, 4))
    hot = g.input("hot", "int32", (2, 1))
    values, indices = g.top_k(x, 1, 2)
    smallest, where = g.top_k(x, 1, 1, DIR.INCREASING, index_type="uint64")
    summed = g.cumulative_summation(x, 1, exclusive=True)
    multiplied = g.cumulative_product(x, 0, DIR.DECREASING)
    encoded = g.one_hot(hot, g.constant(np.array([[0, 5]], np.float32)), 1, 3)
    scattered = g.scatter_elements(x, hot, g.constant(np.array([[100], [200]], np.float32)), 1)
    nd = g.scatter_nd(x, g.constant(np.array([[1, 3]], np.int32)), g.constant(np.array([[-1]], np.float32)), indices_dimensions=2)
    program = g.compile({"v": values, "i": indices, "s": smallest, "where": where, "sum": summed, "prod": multiplied, "hot": encoded, "scatter": scattered, "nd": nd})
    data = np.array([[1, 4, 2, 4], [3, 0, 5, 1]], np.float32)
    out = program(x=data, hot=np.array([[2], [-1]], np.int32))
    np.testing.assert_array_equal(out["v"], [[4, 4], [5, 3]])
    np.testing.assert_array_equal(out["i"], [[1, 3], [2, 0]])
    np.testing.assert_array_equal(out["s"], [[1], [0]])
    np.testing.assert_array_equal(out["where"], [[0], [1]])
    assert out["where"].dtype == np.uint64
    np.testing.assert_array_equal(out["sum"], [[0, 1, 5, 7], [0, 3, 3, 8]])
    np.testing.assert_array_equal(out["prod"], [[3, 0, 10, 4], [3, 0, 5, 1]])
    np.testing.assert_array_equal(out["hot"], [[0, 0, 5], [0, 0, 5]])  # -1 is the last of depth 3
    np.testing.assert_array_equal(out["scatter"], [[1, 4, 100, 4], [3, 0, 5, 200]])
    np.testing.assert_array_equal(out["nd"], [[1, 4, 2, 4], [3, 0, 5, -1]])
