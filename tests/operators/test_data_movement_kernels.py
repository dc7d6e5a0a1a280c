"""The data-movement kernels (JOIN, SPLIT, SLICE, SLICE1, PADDING, PADDING1, CAST, GATHER, GATHER_ELEMENTS,
GATHER_ND, GATHER_ND1) through the whole pipeline on both backends.

Oracles: onnxruntime on the one-node ONNX model DirectML's ONNX mapping pairs with each operator
(Concat -> JOIN, Split -> SPLIT, Slice -> SLICE1, Pad -> PADDING1, Cast -> CAST, Gather, GatherElements,
GatherND with batch_dims -> GATHER_ND1); the examples of each operator's DirectML page, copied as hand
values; and values worked out by hand where ONNX leaves a case undefined or has no twin (SYMMETRIC
padding, REFLECTION past the first fold, CAST of NaN, infinities and out-of-range floats, out-of-range
gather indices: docs/deviations.md). The native backend runs dmlpy/native/data_movement.c; the
``device`` fixture runs every test on both.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import assert_rule
from onnx_oracle import onnx_node

import dmlpy
from dmlpy import DML_TENSOR_DATA_TYPE as DT
from dmlpy import buffer_tensor, nhwc_strides
from dmlpy.enums import DML_PADDING_MODE as MODE
from dmlpy.errors import DmlError
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
    KERNELS,
)
from dmlpy.structs import DML_SCALAR_UNION

NAN, INF = float("nan"), float("inf")


def i64(*values: int) -> np.ndarray:
    return np.array(values, np.int64)


def assert_same(got: np.ndarray, expected: np.ndarray) -> None:
    """Bit-exact: data movement copies values; CAST rounds once, as onnxruntime does."""
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got.dtype, got.shape, expected.dtype, expected.shape)
    np.testing.assert_array_equal(got, expected)


# ---------------------------------------------------------------------------------------
# JOIN and SPLIT


@pytest.mark.parametrize(
    ("shapes", "axis", "dtype"),
    [
        pytest.param([(1, 2, 3, 4), (1, 3, 3, 4), (1, 1, 3, 4)], 1, np.float32, id="JOIN of three FLOAT32 inputs along channels is Concat axis 1"),
        pytest.param([(5,), (2,)], 0, np.int64, id="JOIN of two 1-D INT64 inputs is Concat axis 0"),
        pytest.param([(2, 1, 3), (2, 4, 3)], 1, np.float16, id="JOIN of FLOAT16 along the middle axis"),
        pytest.param([(2, 2, 1, 2, 1, 2, 1, 3)] * 2, 7, np.uint8, id="JOIN of 8-D UINT8 along the last axis"),
    ],
)
def test_join_agrees_with_onnxruntime_concat(device: dmlpy.Device, shapes: list[tuple[int, ...]], axis: int, dtype: Any) -> None:
    pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(len(shapes) + axis)
    parts = [rng.integers(0, 200, size=s).astype(dtype) for s in shapes]
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    desc = DML_JOIN_OPERATOR_DESC(None, [buffer_tensor(dtype, s) for s in shapes], buffer_tensor(dtype, out), axis)
    assert_same(dmlpy.run(desc, device=device, InputTensors=parts), onnx_node("Concat", parts, {"axis": axis})[0])


@pytest.mark.parametrize(
    ("shape", "axis", "lengths", "dtype"),
    [
        pytest.param((2, 6, 3), 1, (1, 3, 2), np.float32, id="SPLIT of FLOAT32 into 1 + 3 + 2 is Split axis 1"),
        pytest.param((7,), 0, (4, 3), np.int8, id="SPLIT of 1-D INT8 into 4 + 3"),
        pytest.param((1, 1, 2, 4), 3, (1, 1, 1, 1), np.float64, id="SPLIT of FLOAT64 into four columns"),
    ],
)
def test_split_agrees_with_onnxruntime_split(device: dmlpy.Device, shape: tuple[int, ...], axis: int, lengths: tuple[int, ...], dtype: Any) -> None:
    pytest.importorskip("onnxruntime")
    x = np.random.default_rng(axis).integers(-100, 100, size=shape).astype(dtype)
    outs = [tuple(n if d == axis else s for d, s in enumerate(shape)) for n in lengths]
    desc = DML_SPLIT_OPERATOR_DESC(buffer_tensor(dtype, shape), None, [buffer_tensor(dtype, s) for s in outs], axis)
    got = dmlpy.run(desc, device=device, InputTensor=x)
    expected = onnx_node("Split", [x, i64(*lengths)], {"axis": axis}, outputs=len(lengths))
    assert len(got) == len(lengths)
    for g, e in zip(got, expected, strict=True):
        assert_same(g, e)


def test_join_reads_each_input_through_its_own_strides(device: dmlpy.Device) -> None:
    sizes = (1, 2, 2, 2)
    a = np.arange(8, dtype=np.float32).reshape(sizes)
    b = 100 + np.arange(8, dtype=np.float32).reshape(sizes)
    desc = DML_JOIN_OPERATOR_DESC(None, [buffer_tensor(np.float32, sizes, nhwc_strides(sizes)), buffer_tensor(np.float32, sizes, (0, 0, 2, 1))],
                                  buffer_tensor(np.float32, (1, 4, 2, 2)), 1)  # fmt: skip
    b_broadcast = np.broadcast_to(b[:, :1], sizes)  # stride 0 over channels: both channels read channel 0's memory
    got = dmlpy.run(desc, device=device, InputTensors=[a, b_broadcast])
    np.testing.assert_array_equal(got[0, :2], a[0])
    np.testing.assert_array_equal(got[0, 2:], [[[100, 101], [102, 103]]] * 2)


def test_split_writes_each_output_through_its_own_strides(device: dmlpy.Device) -> None:
    x = np.arange(24, dtype=np.int32).reshape(1, 4, 2, 3)
    first, second = (1, 1, 2, 3), (1, 3, 2, 3)
    desc = DML_SPLIT_OPERATOR_DESC(buffer_tensor(np.int32, x.shape), None, [buffer_tensor(np.int32, first), buffer_tensor(np.int32, second, nhwc_strides(second))], 1)
    a, b = dmlpy.run(desc, device=device, InputTensor=x)
    np.testing.assert_array_equal(a, x[:, :1])
    np.testing.assert_array_equal(b, x[:, 1:])  # read back through the NHWC strides it was written with


def test_run_takes_a_tensor_array_element_by_slot_name_too(device: dmlpy.Device) -> None:
    desc = DML_JOIN_OPERATOR_DESC(None, [buffer_tensor(np.float32, (2,)), buffer_tensor(np.float32, (1,))], buffer_tensor(np.float32, (3,)), 0)
    got = dmlpy.run(desc, device=device, **{"InputTensors[0]": np.array([1, 2], np.float32), "InputTensors[1]": np.array([3], np.float32)})
    np.testing.assert_array_equal(got, [1, 2, 3])
    with pytest.raises(TypeError, match=r"InputTensors\[1\]"):
        dmlpy.run(desc, device=device, InputTensors=[np.array([1, 2], np.float32)])


# ---------------------------------------------------------------------------------------
# SLICE and SLICE1


@pytest.mark.parametrize(
    ("shape", "offsets", "sizes", "strides", "dtype"),
    [
        pytest.param((1, 1, 5, 6), (0, 0, 1, 0), (1, 1, 4, 6), (1, 1, 2, -2), np.float32, id="SLICE1 rows 1..4 step 2, columns reversed step 2"),
        pytest.param((7,), (0,), (7,), (-1,), np.int16, id="SLICE1 with stride -1 reverses a 1-D tensor"),
        pytest.param((3, 4, 5), (1, 0, 2), (2, 4, 3), (-1, 3, -2), np.uint32, id="SLICE1 with two negative strides and a stride past the window"),
        pytest.param((2, 3, 4), (0, 1, 1), (2, 2, 3), (1, 1, 1), np.float16, id="SLICE1 of FLOAT16 with unit strides"),
    ],
)
def test_slice1_agrees_with_onnxruntime_slice(device: dmlpy.Device, shape: tuple[int, ...], offsets: tuple[int, ...], sizes: tuple[int, ...],
                                              strides: tuple[int, ...], dtype: Any) -> None:  # fmt: skip
    pytest.importorskip("onnxruntime")
    x = np.random.default_rng(len(shape)).integers(0, 1000, size=shape).astype(dtype)
    counts = [1 + (n - 1) // abs(st) for n, st in zip(sizes, strides, strict=True)]
    desc = DML_SLICE1_OPERATOR_DESC(buffer_tensor(dtype, shape), buffer_tensor(dtype, counts), None, list(offsets), list(sizes), list(strides))
    # ONNX: a positive step runs [offset, offset + size); a negative one from the window's end down past its start
    starts = [o if st > 0 else o + n - 1 for o, n, st in zip(offsets, sizes, strides, strict=True)]
    ends = [o + n if st > 0 else (o - 1 if o > 0 else -(2**62)) for o, n, st in zip(offsets, sizes, strides, strict=True)]
    expected = onnx_node("Slice", [x, i64(*starts), i64(*ends), i64(*range(len(shape))), i64(*strides)])[0]
    assert_same(dmlpy.run(desc, device=device, InputTensor=x), expected)


def test_slice_agrees_with_onnxruntime_slice(device: dmlpy.Device) -> None:
    pytest.importorskip("onnxruntime")
    x = np.arange(5 * 6, dtype=np.float32).reshape(1, 1, 5, 6)
    offsets, sizes, strides = (0, 0, 1, 0), (1, 1, 2, 3), (1, 1, 2, 2)  # rows 1, 3; columns 0, 2, 4
    desc = DML_SLICE_OPERATOR_DESC(buffer_tensor(np.float32, x.shape), buffer_tensor(np.float32, sizes), None, list(offsets), list(sizes), list(strides))
    ends = [o + st * (n - 1) + 1 for o, n, st in zip(offsets, sizes, strides, strict=True)]
    expected = onnx_node("Slice", [x, i64(*offsets), i64(*ends), i64(0, 1, 2, 3), i64(*strides)])[0]
    assert_same(dmlpy.run(desc, device=device, InputTensor=x), expected)


PAGE_SLICE_INPUT = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)


@pytest.mark.doc_example
@pytest.mark.parametrize(
    ("strides", "expected"),
    [
        pytest.param((1, 1, 2, 2), [[2, 4], [10, 12]], id="SLICE1 page example 1: positive strides"),
        pytest.param((1, 1, -2, 2), [[14, 16], [6, 8]], id="SLICE1 page example 2: a negative stride starts at the window's end"),
    ],
)
def test_slice1_reproduces_its_page_examples(device: dmlpy.Device, strides: tuple[int, ...], expected: list[list[float]]) -> None:
    desc = DML_SLICE1_OPERATOR_DESC(buffer_tensor(np.float32, (1, 1, 4, 4)), buffer_tensor(np.float32, (1, 1, 2, 2)), None, [0, 0, 0, 1], [1, 1, 4, 3], list(strides))
    np.testing.assert_array_equal(dmlpy.run(desc, device=device, InputTensor=PAGE_SLICE_INPUT)[0, 0], expected)


def test_slice_with_stride_zero_repeats_one_element(device: dmlpy.Device) -> None:
    desc = DML_SLICE_OPERATOR_DESC(buffer_tensor(np.int32, (4,)), buffer_tensor(np.int32, (3,)), None, [2], [3], [0])  # reads 2 + 0 * i
    np.testing.assert_array_equal(dmlpy.run(desc, device=device, InputTensor=np.array([5, 6, 7, 8], np.int32)), [7, 7, 7])


# ---------------------------------------------------------------------------------------
# PADDING and PADDING1

PAGE_PAD_INPUT = np.array([[1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 4], [5, 6, 7, 8]], np.float32).reshape(1, 1, 4, 4)
PAGE_PAD_OUTPUTS = {  # the PADDING1 page's examples 1-4: StartPadding {0,0,1,2}, EndPadding {0,0,3,4}
    MODE.CONSTANT: [[9] * 10, [9, 9, 1, 2, 3, 4, 9, 9, 9, 9], [9, 9, 5, 6, 7, 8, 9, 9, 9, 9], [9, 9, 1, 2, 3, 4, 9, 9, 9, 9], [9, 9, 5, 6, 7, 8, 9, 9, 9, 9],
                    [9] * 10, [9] * 10, [9] * 10],
    MODE.EDGE: [[1, 1, 1, 2, 3, 4, 4, 4, 4, 4], [1, 1, 1, 2, 3, 4, 4, 4, 4, 4], [5, 5, 5, 6, 7, 8, 8, 8, 8, 8], [1, 1, 1, 2, 3, 4, 4, 4, 4, 4],
                [5, 5, 5, 6, 7, 8, 8, 8, 8, 8], [5, 5, 5, 6, 7, 8, 8, 8, 8, 8], [5, 5, 5, 6, 7, 8, 8, 8, 8, 8], [5, 5, 5, 6, 7, 8, 8, 8, 8, 8]],
    MODE.REFLECTION: [[7, 6, 5, 6, 7, 8, 7, 6, 5, 6], [3, 2, 1, 2, 3, 4, 3, 2, 1, 2]] * 4,
    MODE.SYMMETRIC: [[2, 1, 1, 2, 3, 4, 4, 3, 2, 1], [2, 1, 1, 2, 3, 4, 4, 3, 2, 1], [6, 5, 5, 6, 7, 8, 8, 7, 6, 5], [2, 1, 1, 2, 3, 4, 4, 3, 2, 1],
                     [6, 5, 5, 6, 7, 8, 8, 7, 6, 5], [6, 5, 5, 6, 7, 8, 8, 7, 6, 5], [2, 1, 1, 2, 3, 4, 4, 3, 2, 1], [6, 5, 5, 6, 7, 8, 8, 7, 6, 5]],
}  # fmt: skip


@pytest.mark.doc_example
@pytest.mark.parametrize("mode", list(PAGE_PAD_OUTPUTS), ids=lambda m: f"PADDING1 page example, {m.name} (REFLECTION folds past the first mirror)")
def test_padding1_reproduces_its_page_examples(device: dmlpy.Device, mode: MODE) -> None:
    desc = DML_PADDING1_OPERATOR_DESC(buffer_tensor(np.float32, (1, 1, 4, 4)), buffer_tensor(np.float32, (1, 1, 8, 10)), mode, DT.FLOAT32, DML_SCALAR_UNION(Float32=9.0),
                                      None, [0, 0, 1, 2], [0, 0, 3, 4])  # fmt: skip
    np.testing.assert_array_equal(dmlpy.run(desc, device=device, InputTensor=PAGE_PAD_INPUT)[0, 0], PAGE_PAD_OUTPUTS[mode])


@pytest.mark.parametrize(
    ("mode", "onnx_mode", "opset", "dtype", "start", "end"),
    [
        pytest.param(MODE.CONSTANT, "constant", 18, np.float32, (0, 2, 1), (1, 0, 3), id="PADDING1 CONSTANT is Pad constant"),
        pytest.param(MODE.CONSTANT, "constant", 18, np.int64, (1, 0, 0), (0, 0, 2), id="PADDING1 CONSTANT on INT64 with an INT64 value"),
        pytest.param(MODE.EDGE, "edge", 18, np.float16, (2, 1, 0), (0, 3, 4), id="PADDING1 EDGE is Pad edge, FLOAT16"),
        pytest.param(MODE.REFLECTION, "reflect", 18, np.float32, (1, 2, 3), (1, 1, 2), id="PADDING1 REFLECTION is Pad reflect (pads up to size - 1)"),
        pytest.param(MODE.WRAP, "wrap", 19, np.int32, (2, 3, 5), (3, 0, 9), id="PADDING1 WRAP (FL 6.4) is Pad wrap, several periods"),
    ],
)
def test_padding1_agrees_with_onnxruntime_pad(device: dmlpy.Device, mode: MODE, onnx_mode: str, opset: int, dtype: Any, start: tuple[int, ...], end: tuple[int, ...]) -> None:
    pytest.importorskip("onnxruntime")
    shape = (2, 3, 4)
    x = np.random.default_rng(mode.value).integers(-50, 50, size=shape).astype(dtype)
    value = np.array(-7, dtype)
    out = [n + a + b for n, a, b in zip(shape, start, end, strict=True)]
    data_type = dmlpy.tensor.as_data_type(dtype)
    desc = DML_PADDING1_OPERATOR_DESC(buffer_tensor(dtype, shape), buffer_tensor(dtype, out), mode, data_type, DML_SCALAR_UNION(Bytes=value.tobytes().ljust(8, b"\0")),
                                      None, list(start), list(end))  # fmt: skip
    expected = onnx_node("Pad", [x, i64(*start, *end), value], {"mode": onnx_mode}, opset=opset)[0]
    assert_same(dmlpy.run(desc, device=device, InputTensor=x), expected)


@pytest.mark.parametrize(
    ("dtype", "value", "expected"),
    [
        pytest.param(np.float32, 2.5, 2.5, id="PADDING's FLOAT value on a FLOAT32 tensor"),
        pytest.param(np.float16, 1e6, INF, id="PADDING's FLOAT value rounds to FLOAT16, overflowing to inf"),
        pytest.param(np.int8, -2.9, -2, id="PADDING's FLOAT value on INT8 truncates toward zero"),
        pytest.param(np.uint8, 300.0, 255, id="PADDING's FLOAT value on UINT8 saturates"),
        pytest.param(np.int32, NAN, 0, id="PADDING's NaN value on INT32 is 0"),
    ],
)
def test_padding_constant_converts_its_float_value_to_the_tensor_type(device: dmlpy.Device, dtype: Any, value: float, expected: float) -> None:
    desc = DML_PADDING_OPERATOR_DESC(buffer_tensor(dtype, (1, 1, 1, 2)), buffer_tensor(dtype, (1, 1, 1, 4)), MODE.CONSTANT, value, None, [0, 0, 0, 1], [0, 0, 0, 1])
    got = dmlpy.run(desc, device=device, InputTensor=np.array([3, 4], dtype).reshape(1, 1, 1, 2))
    np.testing.assert_array_equal(got.ravel(), np.array([expected, 3, 4, expected], dtype))


def test_padding_symmetric_and_reflection_fold_periodically_past_the_input(device: dmlpy.Device) -> None:
    x = np.array([1, 2, 3], np.float32)

    def pad(mode: MODE, start: int, end: int) -> list[float]:
        desc = DML_PADDING1_OPERATOR_DESC(buffer_tensor(np.float32, (3,)), buffer_tensor(np.float32, (3 + start + end,)), mode, DT.FLOAT32, DML_SCALAR_UNION(Float32=0.0),
                                          None, [start], [end])  # fmt: skip
        return list(dmlpy.run(desc, device=device, InputTensor=x))

    # SYMMETRIC mirrors with the edge, period 6: 1 | 1 2 3 3 2 1 | [1 2 3] | 3 2 1 1 2 3 | 3
    assert pad(MODE.SYMMETRIC, 7, 7) == [1, 1, 2, 3, 3, 2, 1, 1, 2, 3, 3, 2, 1, 1, 2, 3, 3]
    # REFLECTION mirrors without the edge, period 4: 2 | 1 2 3 2 | [1 2 3] | 2 1 2 3 | 2
    assert pad(MODE.REFLECTION, 5, 5) == [2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2]
    # WRAP repeats the input
    assert pad(MODE.WRAP, 4, 2) == [3, 1, 2, 3, 1, 2, 3, 1, 2]


def test_padding_reflection_of_a_single_element_repeats_it(device: dmlpy.Device) -> None:
    desc = DML_PADDING1_OPERATOR_DESC(buffer_tensor(np.int32, (1, 2)), buffer_tensor(np.int32, (4, 2)), MODE.REFLECTION, DT.INT32, DML_SCALAR_UNION(Int32=0), None, [1, 0], [2, 0])
    np.testing.assert_array_equal(dmlpy.run(desc, device=device, InputTensor=np.array([[5, 6]], np.int32)), [[5, 6]] * 4)


def test_padding1_reads_its_value_as_padding_value_data_type(device: dmlpy.Device) -> None:
    big = 2**62 + 1  # not a FLOAT: PADDING1 keeps every bit of an INT64 value
    desc = DML_PADDING1_OPERATOR_DESC(buffer_tensor(np.int64, (2,)), buffer_tensor(np.int64, (3,)), MODE.CONSTANT, DT.INT64, DML_SCALAR_UNION(Int64=big), None, [1], [0])
    np.testing.assert_array_equal(dmlpy.run(desc, device=device, InputTensor=np.array([1, 2], np.int64)), [big, 1, 2])


# ---------------------------------------------------------------------------------------
# CAST

CAST_TYPES = [np.float64, np.float32, np.float16, np.int64, np.int32, np.int16, np.int8, np.uint64, np.uint32, np.uint16, np.uint8]


def _cast_source(src: Any, dst: Any) -> np.ndarray:
    """Values whose cast ONNX defines: floats into integers only inside the target's range; integers over their whole range."""
    rng = np.random.default_rng(np.dtype(src).num * 31 + np.dtype(dst).num)
    s, d = np.dtype(src), np.dtype(dst)
    if s.kind == "f":
        if d.kind == "f":
            values = np.concatenate([rng.normal(0, 1e3, 20), [0.0, -0.0, 1.5, -2.5, NAN, INF, -INF, 7e4, 1e-8, 1e39 if s.itemsize == 8 else 3e38]])
        else:
            info = np.iinfo(d)
            low, high = 0.99 * max(float(info.min), -6e4), 0.99 * min(float(info.max), 6e4)  # inside FLOAT16's range too, after rounding
            values = np.concatenate([rng.uniform(low, high, 20), [0.0, -0.0, 0.99, high - 1]] + ([[-0.99, low + 1]] if d.kind == "i" else []))
        with np.errstate(over="ignore"):
            return values.astype(s)
    info = np.iinfo(s)
    return np.concatenate([rng.integers(info.min, info.max, 20, dtype=s, endpoint=True), np.array([info.min, info.max, 0, 1], s)])


@pytest.mark.parametrize("dst", CAST_TYPES, ids=lambda t: f"to {np.dtype(t).name.upper()}")
@pytest.mark.parametrize("src", CAST_TYPES, ids=lambda t: f"CAST from {np.dtype(t).name.upper()}")
def test_cast_agrees_with_onnxruntime_cast_for_every_pair_of_the_support_table(device: dmlpy.Device, src: Any, dst: Any) -> None:
    pytest.importorskip("onnxruntime")
    from onnx import helper

    x = _cast_source(src, dst)
    desc = DML_CAST_OPERATOR_DESC(buffer_tensor(src, x.shape), buffer_tensor(dst, x.shape))
    expected = onnx_node("Cast", [x], {"to": helper.np_dtype_to_tensor_dtype(np.dtype(dst))})[0]
    assert_same(dmlpy.run(desc, device=device, InputTensor=x), expected)


@pytest.mark.parametrize(
    ("src", "dst", "values", "expected"),
    [
        pytest.param(np.float32, np.int32, [NAN, INF, -INF, 3e9, -3e9], [0, 2**31 - 1, -(2**31), 2**31 - 1, -(2**31)],
                     id="FLOAT32 to INT32: NaN is 0, infinities and out-of-range values saturate"),
        pytest.param(np.float32, np.int8, [300.0, -300.0, 127.9, -128.9, 2.7, -2.7], [127, -128, 127, -128, 2, -2], id="FLOAT32 to INT8 truncates toward zero and saturates"),
        pytest.param(np.float32, np.uint8, [-1.5, -0.5, 255.9, 256.0, NAN], [0, 0, 255, 255, 0], id="FLOAT32 to UINT8: negatives saturate to 0"),
        pytest.param(np.float64, np.int64, [2.0**63, -(2.0**64), 9.2e18], [2**63 - 1, -(2**63), 9200000000000000000], id="FLOAT64 to INT64 saturates at 2^63"),
        pytest.param(np.float64, np.uint64, [2.0**64, 2.0**63, -1.0, NAN], [2**64 - 1, 2**63, 0, 0], id="FLOAT64 to UINT64 saturates at 2^64 and at 0"),
        pytest.param(np.float16, np.int16, [65504.0, -65504.0, INF, -1.5], [32767, -32768, 32767, -1], id="FLOAT16 to INT16 saturates"),
        pytest.param(np.float32, np.float16, [65520.0, -1e5, 2049.0, 2051.0, 1e-8], [INF, -INF, 2048.0, 2052.0, 0.0],
                     id="FLOAT32 to FLOAT16 rounds to nearest even and overflows to inf"),
        pytest.param(np.float64, np.float32, [1e300, 16777217.0, NAN], [INF, 16777216.0, NAN], id="FLOAT64 to FLOAT32 overflows to inf, rounds ties to even, keeps NaN"),
        pytest.param(np.int32, np.float32, [16777217, -16777219, 2**31 - 1], [16777216.0, -16777220.0, 2147483648.0], id="INT32 to FLOAT32 rounds ties to even"),
        pytest.param(np.int64, np.float16, [65519, 65520, 2**62], [65504.0, INF, INF], id="INT64 to FLOAT16 rounds once, overflowing to inf"),
        pytest.param(np.int32, np.int8, [300, -129, 128], [44, 127, -128], id="INT32 to INT8 keeps the low 8 bits"),
        pytest.param(np.int8, np.uint32, [-1, -128], [2**32 - 1, 2**32 - 128], id="INT8 to UINT32 sign-extends"),
        pytest.param(np.uint64, np.int64, [2**64 - 1, 2**63], [-1, -(2**63)], id="UINT64 to INT64 reinterprets the bits"),
    ],
)
def test_cast_matches_hand_values_where_onnx_leaves_the_result_open(device: dmlpy.Device, src: Any, dst: Any, values: list[Any], expected: list[Any]) -> None:
    with np.errstate(over="ignore"):
        x = np.array(values, dtype=np.float64 if np.dtype(src).kind == "f" else object).astype(src)
    desc = DML_CAST_OPERATOR_DESC(buffer_tensor(src, x.shape), buffer_tensor(dst, x.shape))
    got = dmlpy.run(desc, device=device, InputTensor=x)
    assert got.dtype == np.dtype(dst)
    np.testing.assert_array_equal(got, np.array(expected, dtype=np.float64 if np.dtype(dst).kind == "f" else object).astype(dst))


def test_cast_keeps_the_sign_of_zero_and_writes_a_strided_output(device: dmlpy.Device) -> None:
    x = np.array([[-0.0, 0.0], [1.0, -2.0]], np.float32)
    desc = DML_CAST_OPERATOR_DESC(buffer_tensor(np.float32, (2, 2)), buffer_tensor(np.float16, (2, 2), (1, 2)))  # column-major output
    got = dmlpy.run(desc, device=device, InputTensor=x)
    np.testing.assert_array_equal(got, x.astype(np.float16))
    assert np.signbit(got[0, 0]) and not np.signbit(got[0, 1])


# ---------------------------------------------------------------------------------------
# GATHER, GATHER_ELEMENTS, GATHER_ND, GATHER_ND1


@pytest.mark.parametrize(
    ("shape", "axis", "indices", "out", "dtype", "index_type"),
    [
        pytest.param((3, 4, 5), 1, [0, -1, 2], (3, 3, 5), np.float32, np.int64, id="GATHER of FLOAT32 along axis 1 with a negative INT64 index"),
        pytest.param((1, 4, 3), 1, [[3, 0], [1, 1]], (2, 2, 3), np.float16, np.int32, id="GATHER of FLOAT16 rows with 2-D INT32 indices: {1} + {2,2} + {3} cropped to 3-D"),
        pytest.param((1, 4, 5), 2, [4, 0, 1], (1, 4, 3), np.int32, np.uint32, id="GATHER along the last axis with UINT32 indices"),
        pytest.param((2, 3), 1, [2, 1], (2, 2), np.uint64, np.uint64, id="GATHER of UINT64 with UINT64 indices"),
    ],
)
def test_gather_agrees_with_onnxruntime_gather(device: dmlpy.Device, shape: tuple[int, ...], axis: int, indices: Any, out: tuple[int, ...], dtype: Any, index_type: Any) -> None:
    pytest.importorskip("onnxruntime")
    x = np.random.default_rng(axis).integers(0, 100, size=shape).astype(dtype)
    idx = np.array(indices, index_type)  # IndexDimensions = its rank; DirectML's tensor has x's rank, leading 1s ignored
    padded = idx.reshape((1,) * (len(shape) - idx.ndim) + idx.shape)
    desc = DML_GATHER_OPERATOR_DESC(buffer_tensor(dtype, shape), buffer_tensor(index_type, padded.shape), buffer_tensor(dtype, out), axis, idx.ndim)
    expected = onnx_node("Gather", [x, idx.astype(np.int64)], {"axis": axis})[0].reshape(out)  # ONNX Gather takes int32 or int64 indices
    assert_same(dmlpy.run(desc, device=device, InputTensor=x, IndicesTensor=padded), expected)


PAGE_GATHER = [  # (input, indices, axis, IndexDimensions, output) from the GATHER page's examples
    pytest.param([11, 12, 13, 14], [3, 1, 3, 0, 2], 0, 1, [14, 12, 14, 11, 13], id="GATHER page example 1: 1-D remapping"),
    pytest.param([[1, 2], [3, 4], [5, 6]], [[0, 1, 1, 2]], 0, 1, [[1, 2], [3, 4], [3, 4], [5, 6]], id="GATHER page example 2: rows concatenated"),
    pytest.param([[1, 2], [3, 4], [5, 6]], [[1, 0]], 1, 1, [[2, 1], [4, 3], [6, 5]],
                 id="GATHER page example 3: columns swapped (IndexDimensions 1: the page's 2 contradicts its size formula, docs/deviations.md)"),
    pytest.param([[[1, 2, 3], [4, 5, 6], [7, 8, 9]]], [[[0, 2]]], 2, 2, [[[1, 3]], [[4, 6]], [[7, 9]]], id="GATHER page example 4: nested indices on axis 2"),
    pytest.param([[[1, 2], [3, 4], [5, 6]]], [[[0, 1], [1, 2]]], 1, 2, [[[1, 2], [3, 4]], [[3, 4], [5, 6]]], id="GATHER page example 5: nested indices on axis 1"),
]


@pytest.mark.doc_example
@pytest.mark.parametrize(("x", "indices", "axis", "count", "expected"), PAGE_GATHER)
def test_gather_reproduces_its_page_examples(device: dmlpy.Device, x: Any, indices: Any, axis: int, count: int, expected: Any) -> None:
    x, idx, want = np.array(x, np.float32), np.array(indices, np.uint32), np.array(expected, np.float32)
    desc = DML_GATHER_OPERATOR_DESC(buffer_tensor(np.float32, x.shape), buffer_tensor(np.uint32, idx.shape), buffer_tensor(np.float32, want.shape), axis, count)
    np.testing.assert_array_equal(dmlpy.run(desc, device=device, InputTensor=x, IndicesTensor=idx), want)


def test_gather_with_index_dimensions_0_picks_one_slice_and_drops_the_axis(device: dmlpy.Device) -> None:
    x = np.arange(6, dtype=np.int16).reshape(2, 3)
    # {Input.Sizes[0..0]} + {} + {Input.Sizes[2..]} = {2}, right-aligned to {1, 2}: column 2 of each row
    desc = DML_GATHER_OPERATOR_DESC(buffer_tensor(np.int16, (2, 3)), buffer_tensor(np.int32, (1, 1)), buffer_tensor(np.int16, (1, 2)), 1, 0)
    np.testing.assert_array_equal(dmlpy.run(desc, device=device, InputTensor=x, IndicesTensor=np.array([[2]], np.int32)), [[2, 5]])


@pytest.mark.parametrize(
    ("op", "index_type", "indices", "expected"),
    [
        pytest.param("GATHER", np.int32, [-1, -4, 4, 100, -5, -1000], [13, 10, 13, 13, 10, 10], id="GATHER: negatives wrap; out of range clamps to the first or last element"),
        pytest.param("GATHER", np.uint32, [2**32 - 1, 3, 4], [13, 13, 13], id="GATHER: a UINT32 index past the end reads the last element"),
        pytest.param("GATHER", np.uint64, [2**64 - 1, 0], [13, 10], id="GATHER: a UINT64 index beyond INT64 reads the last element"),
        pytest.param("GATHER_ELEMENTS", np.int64, [-1, 7, -9, 1, 2, 0], [13, 13, 10, 11, 12, 10], id="GATHER_ELEMENTS clamps the same way"),
    ],
)
def test_an_out_of_range_index_is_clamped_never_read_out_of_bounds(device: dmlpy.Device, op: str, index_type: Any, indices: list[int], expected: list[int]) -> None:
    x = np.array([10, 11, 12, 13], np.float32)
    idx = np.array(indices, dtype=object).astype(index_type)
    tensors = (buffer_tensor(np.float32, (4,)), buffer_tensor(index_type, idx.shape), buffer_tensor(np.float32, idx.shape))
    desc = DML_GATHER_OPERATOR_DESC(*tensors, 0, 1) if op == "GATHER" else DML_GATHER_ELEMENTS_OPERATOR_DESC(*tensors, 0)
    np.testing.assert_array_equal(dmlpy.run(desc, device=device, InputTensor=x, IndicesTensor=idx), expected)


@pytest.mark.parametrize(
    ("shape", "indices_shape", "axis", "index_type"),
    [
        pytest.param((3, 3), (2, 3), 0, np.uint32, id="GATHER_ELEMENTS along rows is GatherElements axis 0"),
        pytest.param((2, 3, 4), (2, 3, 6), 2, np.int64, id="GATHER_ELEMENTS along the last axis with more indices than elements, negatives included"),
        pytest.param((4, 2, 1), (1, 2, 1), 0, np.int32, id="GATHER_ELEMENTS with fewer indices than elements along the axis"),
    ],
)
def test_gather_elements_agrees_with_onnxruntime(device: dmlpy.Device, shape: tuple[int, ...], indices_shape: tuple[int, ...], axis: int, index_type: Any) -> None:
    pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(axis)
    x = rng.standard_normal(shape).astype(np.float32)
    low = -shape[axis] if np.dtype(index_type).kind == "i" else 0
    idx = rng.integers(low, shape[axis], size=indices_shape).astype(index_type)
    desc = DML_GATHER_ELEMENTS_OPERATOR_DESC(buffer_tensor(np.float32, shape), buffer_tensor(index_type, indices_shape), buffer_tensor(np.float32, indices_shape), axis)
    expected = onnx_node("GatherElements", [x, idx.astype(np.int64)], {"axis": axis})[0]
    assert_same(dmlpy.run(desc, device=device, InputTensor=x, IndicesTensor=idx), expected)


@pytest.mark.doc_example
def test_gather_elements_reproduces_its_page_example(device: dmlpy.Device) -> None:
    x = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]], np.float32)
    idx = np.array([[1, 2, 0], [2, 0, 0]], np.uint32)
    desc = DML_GATHER_ELEMENTS_OPERATOR_DESC(buffer_tensor(np.float32, (3, 3)), buffer_tensor(np.uint32, (2, 3)), buffer_tensor(np.float32, (2, 3)), 0)
    np.testing.assert_array_equal(dmlpy.run(desc, device=device, InputTensor=x, IndicesTensor=idx), [[4, 8, 3], [7, 2, 3]])


@pytest.mark.parametrize(
    ("shape", "indices_shape", "batch", "index_type"),
    [
        pytest.param((3, 4, 5), (2, 2), 0, np.int64, id="GATHER_ND with tuples of 2 is GatherND batch_dims 0"),
        pytest.param((3, 4, 5), (2, 4, 3), 0, np.int32, id="GATHER_ND with full tuples picks single elements"),
        pytest.param((3, 4, 5), (3, 2, 1), 1, np.int64, id="GATHER_ND1 with one batch dimension is GatherND batch_dims 1"),
        pytest.param((2, 3, 4, 5), (2, 3, 2, 2), 2, np.int64, id="GATHER_ND1 with two batch dimensions is GatherND batch_dims 2"),
    ],
)
def test_gather_nd_agrees_with_onnxruntime_gather_nd(device: dmlpy.Device, shape: tuple[int, ...], indices_shape: tuple[int, ...], batch: int, index_type: Any) -> None:
    pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(batch + len(indices_shape))
    x = rng.standard_normal(shape).astype(np.float32)
    t = indices_shape[-1]
    idx = np.stack([rng.integers(-shape[batch + j], shape[batch + j], size=indices_shape[:-1]) for j in range(t)], axis=-1).astype(index_type)
    expected = onnx_node("GatherND", [x, idx.astype(np.int64)], {"batch_dims": batch})[0]
    rank = max(len(shape), len(indices_shape), expected.ndim)
    pad = lambda s: (1,) * (rank - len(s)) + tuple(s)  # noqa: E731 - DirectML's tensors share one DimensionCount; leading 1s are ignored
    common = (buffer_tensor(np.float32, pad(shape)), buffer_tensor(index_type, pad(indices_shape)), buffer_tensor(np.float32, pad(expected.shape)), len(shape), len(indices_shape))
    desc = DML_GATHER_ND1_OPERATOR_DESC(*common, batch) if batch else DML_GATHER_ND_OPERATOR_DESC(*common)
    got = dmlpy.run(desc, device=device, InputTensor=x.reshape(pad(shape)), IndicesTensor=idx.reshape(pad(indices_shape)))
    assert_same(got, expected.reshape(pad(expected.shape)))


@pytest.mark.doc_example
@pytest.mark.parametrize("first", [True, False], ids=["GATHER_ND page example 1", "GATHER_ND1 page example 1 (BatchDimensionCount 0)"])
def test_gather_nd_reproduces_example_1_of_both_pages(device: dmlpy.Device, first: bool) -> None:
    common = (buffer_tensor(np.float32, (2, 2)), buffer_tensor(np.uint32, (2, 1)), buffer_tensor(np.float32, (2, 2)), 2, 2)
    desc = DML_GATHER_ND_OPERATOR_DESC(*common) if first else DML_GATHER_ND1_OPERATOR_DESC(*common, 0)
    got = dmlpy.run(desc, device=device, InputTensor=np.array([[0, 1], [2, 3]], np.float32), IndicesTensor=np.array([[1], [0]], np.uint32))
    np.testing.assert_array_equal(got, [[2, 3], [0, 1]])


@pytest.mark.doc_example
def test_gather_nd_reproduces_its_page_example_2(device: dmlpy.Device) -> None:
    desc = DML_GATHER_ND_OPERATOR_DESC(buffer_tensor(np.float32, (1, 2, 2, 2)), buffer_tensor(np.uint32, (1, 1, 2, 2)), buffer_tensor(np.float32, (1, 1, 2, 2)), 3, 2)
    got = dmlpy.run(desc, device=device, InputTensor=np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2), IndicesTensor=np.array([[0, 1], [1, 0]], np.uint32).reshape(1, 1, 2, 2))
    np.testing.assert_array_equal(got.ravel(), [2, 3, 4, 5])


@pytest.mark.doc_example
def test_gather_nd1_reproduces_its_page_example_2_with_batches(device: dmlpy.Device) -> None:
    desc = DML_GATHER_ND1_OPERATOR_DESC(buffer_tensor(np.float32, (1, 3, 2, 2)), buffer_tensor(np.uint32, (1, 3, 2, 2)), buffer_tensor(np.float32, (1, 1, 3, 2)), 3, 3, 1)
    indices = np.array([[[0, 0], [1, 1]], [[1, 1], [0, 0]], [[0, 1], [1, 0]]], np.uint32).reshape(1, 3, 2, 2)
    got = dmlpy.run(desc, device=device, InputTensor=np.arange(12, dtype=np.float32).reshape(1, 3, 2, 2), IndicesTensor=indices)
    np.testing.assert_array_equal(got[0, 0], [[0, 3], [7, 4], [9, 10]])


def test_every_data_movement_kernel_has_a_c_kernel_on_the_native_backend() -> None:
    assert len(KERNELS) == 11
    assert all(REGISTRY[t].emulated and REGISTRY[t].native and REGISTRY[t].native_covers is None for t in KERNELS)


# ---------------------------------------------------------------------------------------
# GraphBuilder and graphs


def test_a_graph_joins_slices_pads_and_casts(device: dmlpy.Device) -> None:
    g = dmlpy.GraphBuilder(device)
    a = g.input("a", "float32", (2, 2))
    b = g.input("b", "float32", (2, 1))
    joined = g.join([a, b], 1)  # [[1, 2, 10], [3, 4, 20]]
    reversed_columns = g.slice(joined, [0, 0], [2, 3], [1, -1])  # [[10, 2, 1], [20, 4, 3]]
    padded = g.pad(reversed_columns, [1, 0], [0, 1], mode=MODE.EDGE)  # the first row repeated above, the last column to the right
    as_int = g.cast(padded, "int8")
    first, rest = g.split(as_int, 0, [1, 2])
    out = g.compile({"padded": padded, "first": first, "rest": rest})(a=np.array([[1.5, 2], [3, 4]], np.float32), b=np.array([[10], [-200]], np.float32))
    np.testing.assert_array_equal(out["padded"], [[10, 2, 1.5, 1.5], [10, 2, 1.5, 1.5], [-200, 4, 3, 3]])
    np.testing.assert_array_equal(out["first"], [[10, 2, 1, 1]])  # 1.5 truncates to 1
    np.testing.assert_array_equal(out["rest"], [[10, 2, 1, 1], [-128, 4, 3, 3]])  # -200 saturates to INT8's -128
    assert out["rest"].dtype == np.int8


def test_a_graph_gathers_with_each_gather_operator(device: dmlpy.Device) -> None:
    g = dmlpy.GraphBuilder(device)
    x = g.input("x", "float32", (3, 4))
    rows = g.input("rows", "int64", (1, 2))
    elements = g.input("elements", "int32", (3, 4))
    tuples = g.input("tuples", "int32", (3, 1))
    program = g.compile({
        "gather": g.gather(x, rows, 0),  # IndexDimensions 1: the indices' sizes after their leading 1
        "elements": g.gather_elements(x, elements, 1),
        "nd": g.gather_nd(x, tuples, 1),
        "concat": g.concat([x, x], 0),
    })  # fmt: skip
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = program(x=data, rows=np.array([[2, -3]]), elements=np.array([[3, 2, 1, 0]] * 3, np.int32), tuples=np.array([[0], [-1], [9]], np.int32))
    np.testing.assert_array_equal(out["gather"], data[[2, 0]])
    np.testing.assert_array_equal(out["elements"], data[:, ::-1])
    np.testing.assert_array_equal(out["nd"], [[0, 7, 11]])  # one element per batch row; 9 clamps to the last column
    np.testing.assert_array_equal(out["concat"], np.concatenate([data, data]))


def test_builder_data_movement_uses_the_versioned_operator_the_feature_level_has() -> None:
    old = dmlpy.GraphBuilder(feature_level=dmlpy.DML_FEATURE_LEVEL.LEVEL_4_1, backend="numpy")
    x = old.input("x", "float32", (1, 1, 2, 3))
    padded, sliced = old.pad(x, [0, 0, 1, 1], [0, 0, 1, 1], value=5.0), old.slice(x, [0, 0, 0, 0], [1, 1, 2, 3], [1, 1, 1, 2])
    descs = [node.desc for node in old._nodes]  # noqa: SLF001 - which desc each call emitted
    assert isinstance(descs[0], DML_PADDING_OPERATOR_DESC)  # PADDING1 arrived at FL 5.0
    assert isinstance(descs[1], DML_SLICE1_OPERATOR_DESC)
    out = old.compile({"p": padded, "s": sliced})(x=np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3))
    assert out["p"].shape == (1, 1, 4, 5) and out["p"][0, 0, 0, 0] == 5.0
    np.testing.assert_array_equal(out["s"][0, 0], [[0, 2], [3, 5]])


@pytest.mark.parametrize(
    ("build", "rule_id", "argument"),
    [
        pytest.param(lambda g, x: g.join([x, g.input("y", "float32", (3, 3))], 1), "JOIN.SAME_SIZES", "inputs", id="join of {2,3} and {3,3} along axis 1"),
        pytest.param(lambda g, x: g.split(x, 1, [1, 1]), "SPLIT.OUTPUT_SIZE", "sizes", id="split of 3 columns into 1 + 1"),
        pytest.param(lambda g, x: g.slice(x, [1, 0], [2, 3]), "SLICE.WINDOW_BOUNDS", "sizes", id="slice window rows [1, 3) of 2"),
        pytest.param(lambda g, x: g.gather_nd(x, g.input("i", "int32", (3, 1)), 1), "GATHER_ND.BATCH_SIZES", "indices", id="gather_nd with 3 batches of indices for 2"),
        pytest.param(lambda g, x: g.pad(x, [0, 0], [0, 0], mode=7), "ENUM.VALUE", "mode", id="pad with mode 7"),
    ],
)
def test_a_builder_data_movement_mistake_names_its_argument(build: Any, rule_id: str, argument: str) -> None:
    g = dmlpy.GraphBuilder(backend="numpy")
    x = g.input("x", "float32", (2, 3))
    with pytest.raises(DmlError) as raised:
        build(g, x)
    assert_rule(raised.value, rule_id)
    assert f"argument '{argument}'" in str(raised.value)
