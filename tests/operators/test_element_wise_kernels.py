"""The element-wise operators' NumPy kernels, through the whole pipeline (dmlpy.run) on both backends.

Oracles: onnxruntime on the one-node ONNX model DirectML's ONNX mapping pairs with each operator
(Add -> ELEMENT_WISE_ADD, Mod fmod=1 -> MODULUS_TRUNCATE, Where -> IF, ...); for the operators
without an ONNX twin (ATAN_YX, DIFFERENCE_SQUARE, THRESHOLD, CONSTANT_POW, ROUND's other modes,
BIT_COUNT, VALUE_SCALE_2D, ScaleBias, ADD1's fused activation) values computed by hand from the
formula line of the operator's DirectML page. The native backend has no C kernel for these
operators and runs the NumPy kernel: the ``device`` fixture checks it does, with the same values.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import assert_rule, rule_ids

import dmlpy
from dmlpy import (
    DML_ELEMENT_WISE_ADD1_OPERATOR_DESC,
    DML_ELEMENT_WISE_ADD_OPERATOR_DESC,
    DML_ELEMENT_WISE_CLIP1_OPERATOR_DESC,
    DML_ELEMENT_WISE_DEQUANTIZE_LINEAR_OPERATOR_DESC,
    DML_ELEMENT_WISE_POW_OPERATOR_DESC,
    DML_ELEMENT_WISE_QUANTIZE_LINEAR_OPERATOR_DESC,
    DML_ELEMENT_WISE_ROUND_OPERATOR_DESC,
    DML_FEATURE_LEVEL,
    DML_OPERATOR_TYPE,
    DML_SCALE_BIAS,
    DML_TENSOR_DATA_TYPE,
    DML_VALUE_SCALE_2D_OPERATOR_DESC,
    FusedActivation,
    buffer_tensor,
    nhwc_strides,
)
from dmlpy.enums import DML_IS_INFINITY_MODE, DML_ROUNDING_MODE
from dmlpy.operators import REGISTRY
from dmlpy.operators.element_wise import KERNELS, NATIVE
from dmlpy.structs import DML_SCALAR_UNION

OP = DML_OPERATOR_TYPE
DT = DML_TENSOR_DATA_TYPE
FL = DML_FEATURE_LEVEL
NAN, INF = float("nan"), float("inf")


def desc_of(op_type: OP, dtypes: dict[str, Any], shape: tuple[int, ...], **fields: Any) -> Any:
    """A desc with one tensor per slot (``dtypes`` by slot name), all of ``shape``."""
    cls = REGISTRY[op_type].desc_class
    return cls(**{name: buffer_tensor(dtype, shape) for name, dtype in dtypes.items()}, **fields)


def run(device: dmlpy.Device, op_type: OP, dtypes: dict[str, Any], inputs: dict[str, np.ndarray], **fields: Any) -> np.ndarray:
    shape = next(iter(inputs.values())).shape
    return dmlpy.run(desc_of(op_type, dtypes, shape, **fields), device=device, **inputs)


def unary(dtype: Any, out: Any = None) -> dict[str, Any]:
    return {"InputTensor": dtype, "OutputTensor": out or dtype}


def binary(dtype: Any, out: Any = None) -> dict[str, Any]:
    return {"ATensor": dtype, "BTensor": dtype, "OutputTensor": out or dtype}


# ---------------------------------------------------------------------------------------
# onnxruntime oracles


def run_onnx_node(op: str, inputs: list[np.ndarray], attrs: dict[str, Any] | None = None, opset: int = 20) -> np.ndarray:
    import onnxruntime as ort
    from onnx import helper

    names = [f"x{i}" for i in range(len(inputs))]
    graph = helper.make_graph(
        [helper.make_node(op, names, ["y"], **(attrs or {}))],
        "oracle",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape)) for n, v in zip(names, inputs)],
        [helper.make_empty_tensor_value_info("y")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, dict(zip(names, inputs)))[0]  # type: ignore[no-any-return]


def _floats(low: float, high: float) -> Any:
    return lambda rng, shape, dtype: rng.uniform(low, high, size=shape).astype(dtype)


def _ints(low: int, high: int) -> Any:
    return lambda rng, shape, dtype: rng.integers(low, high, size=shape).astype(dtype)


def _bools() -> Any:
    return lambda rng, shape, dtype: rng.integers(0, 2, size=shape).astype(dtype)


# (DML operator, ONNX op, attributes, the tensors' dtype, a maker per input, the output dtype or None)
ONNX_TABLE = [
    (OP.ELEMENT_WISE_IDENTITY, "Identity", {}, np.int16, [_ints(-300, 300)], None),
    (OP.ELEMENT_WISE_ABS, "Abs", {}, np.float32, [_floats(-3, 3)], None),
    (OP.ELEMENT_WISE_ABS, "Abs", {}, np.int64, [_ints(-(2**40), 2**40)], None),
    (OP.ELEMENT_WISE_ACOS, "Acos", {}, np.float32, [_floats(-1, 1)], None),
    (OP.ELEMENT_WISE_ASIN, "Asin", {}, np.float32, [_floats(-1, 1)], None),
    (OP.ELEMENT_WISE_ATAN, "Atan", {}, np.float32, [_floats(-5, 5)], None),
    (OP.ELEMENT_WISE_CEIL, "Ceil", {}, np.float32, [_floats(-5, 5)], None),
    (OP.ELEMENT_WISE_COS, "Cos", {}, np.float32, [_floats(-5, 5)], None),
    (OP.ELEMENT_WISE_EXP, "Exp", {}, np.float32, [_floats(-5, 5)], None),
    (OP.ELEMENT_WISE_FLOOR, "Floor", {}, np.float32, [_floats(-5, 5)], None),
    (OP.ELEMENT_WISE_LOG, "Log", {}, np.float32, [_floats(0.01, 10)], None),
    (OP.ELEMENT_WISE_RECIP, "Reciprocal", {}, np.float32, [_floats(0.1, 10)], None),
    (OP.ELEMENT_WISE_SIN, "Sin", {}, np.float32, [_floats(-5, 5)], None),
    (OP.ELEMENT_WISE_SQRT, "Sqrt", {}, np.float32, [_floats(0, 10)], None),
    (OP.ELEMENT_WISE_TAN, "Tan", {}, np.float32, [_floats(-1.5, 1.5)], None),
    (OP.ELEMENT_WISE_ERF, "Erf", {}, np.float32, [_floats(-3, 3)], None),
    (OP.ELEMENT_WISE_SINH, "Sinh", {}, np.float32, [_floats(-3, 3)], None),
    (OP.ELEMENT_WISE_COSH, "Cosh", {}, np.float32, [_floats(-3, 3)], None),
    (OP.ELEMENT_WISE_TANH, "Tanh", {}, np.float32, [_floats(-3, 3)], None),
    (OP.ELEMENT_WISE_ASINH, "Asinh", {}, np.float32, [_floats(-3, 3)], None),
    (OP.ELEMENT_WISE_ACOSH, "Acosh", {}, np.float32, [_floats(1, 5)], None),
    (OP.ELEMENT_WISE_ATANH, "Atanh", {}, np.float32, [_floats(-0.99, 0.99)], None),
    (OP.ELEMENT_WISE_SIGN, "Sign", {}, np.float32, [_floats(-2, 2)], None),
    (OP.ELEMENT_WISE_SIGN, "Sign", {}, np.int8, [_ints(-5, 5)], None),
    (OP.ELEMENT_WISE_NEGATE, "Neg", {}, np.int32, [_ints(-1000, 1000)], None),
    (OP.ELEMENT_WISE_NEGATE, "Neg", {}, np.float32, [_floats(-3, 3)], None),
    (OP.ELEMENT_WISE_ADD, "Add", {}, np.float32, [_floats(-3, 3)] * 2, None),
    (OP.ELEMENT_WISE_ADD, "Add", {}, np.int64, [_ints(-(2**40), 2**40)] * 2, None),
    (OP.ELEMENT_WISE_SUBTRACT, "Sub", {}, np.int32, [_ints(-1000, 1000)] * 2, None),
    (OP.ELEMENT_WISE_MULTIPLY, "Mul", {}, np.float32, [_floats(-3, 3)] * 2, None),
    (OP.ELEMENT_WISE_DIVIDE, "Div", {}, np.float32, [_floats(-3, 3), _floats(0.5, 3)], None),
    (OP.ELEMENT_WISE_DIVIDE, "Div", {}, np.int32, [_ints(-100, 100), _ints(1, 7)], None),
    (OP.ELEMENT_WISE_MAX, "Max", {}, np.float32, [_floats(-3, 3)] * 2, None),
    (OP.ELEMENT_WISE_MIN, "Min", {}, np.int64, [_ints(-100, 100)] * 2, None),
    (OP.ELEMENT_WISE_MEAN, "Mean", {}, np.float32, [_floats(-3, 3)] * 2, None),
    (OP.ELEMENT_WISE_POW, "Pow", {}, np.float32, [_floats(0.1, 3), _floats(-2, 2)], None),
    (OP.ELEMENT_WISE_MODULUS_TRUNCATE, "Mod", {"fmod": 1}, np.float32, [_floats(-10, 10), _floats(0.5, 3)], None),
    (OP.ELEMENT_WISE_MODULUS_TRUNCATE, "Mod", {"fmod": 1}, np.int32, [_ints(-50, 50), _ints(1, 7)], None),
    (OP.ELEMENT_WISE_MODULUS_FLOOR, "Mod", {"fmod": 0}, np.int32, [_ints(-50, 50), _ints(-7, -1)], None),
    (OP.ELEMENT_WISE_LOGICAL_EQUALS, "Equal", {}, np.int32, [_ints(0, 3)] * 2, np.uint8),
    (OP.ELEMENT_WISE_LOGICAL_GREATER_THAN, "Greater", {}, np.float32, [_floats(-1, 1)] * 2, np.uint8),
    (OP.ELEMENT_WISE_LOGICAL_LESS_THAN, "Less", {}, np.float32, [_floats(-1, 1)] * 2, np.uint8),
    (OP.ELEMENT_WISE_LOGICAL_GREATER_THAN_OR_EQUAL, "GreaterOrEqual", {}, np.int32, [_ints(0, 3)] * 2, np.uint8),
    (OP.ELEMENT_WISE_LOGICAL_LESS_THAN_OR_EQUAL, "LessOrEqual", {}, np.int32, [_ints(0, 3)] * 2, np.uint8),
    (OP.ELEMENT_WISE_BIT_AND, "BitwiseAnd", {}, np.int32, [_ints(-(2**31), 2**31 - 1)] * 2, None),
    (OP.ELEMENT_WISE_BIT_OR, "BitwiseOr", {}, np.uint8, [_ints(0, 256)] * 2, None),
    (OP.ELEMENT_WISE_BIT_XOR, "BitwiseXor", {}, np.int64, [_ints(-(2**62), 2**62)] * 2, None),
    (OP.ELEMENT_WISE_BIT_NOT, "BitwiseNot", {}, np.uint16, [_ints(0, 2**16)], None),
    (OP.ELEMENT_WISE_BIT_SHIFT_LEFT, "BitShift", {"direction": "LEFT"}, np.uint32, [_ints(0, 2**32), _ints(0, 32)], None),
    (OP.ELEMENT_WISE_BIT_SHIFT_RIGHT, "BitShift", {"direction": "RIGHT"}, np.uint8, [_ints(0, 256), _ints(0, 8)], None),
    (OP.ELEMENT_WISE_IS_NAN, "IsNaN", {}, np.float32, [_floats(-1, 1)], np.uint8),
    (OP.ELEMENT_WISE_ROUND, "Round", {}, np.float32, [lambda rng, shape, dtype: (rng.integers(-20, 20, size=shape) / 4).astype(dtype)], None),
]


def _onnx_id(row: Any) -> str:
    op_type, onnx_op, attrs, dtype, _, out = row
    extra = "".join(f" {k}={v}" for k, v in attrs.items())
    return f"{op_type.name} is ONNX {onnx_op}{extra} on {np.dtype(dtype).name}"


@pytest.mark.parametrize("row", ONNX_TABLE, ids=[_onnx_id(r) for r in ONNX_TABLE])
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (7,), (2, 1, 2, 1, 2, 1, 2, 3)], ids=["4-D", "1-D", "8-D"])
def test_element_wise_agrees_with_onnxruntime(device: dmlpy.Device, row: Any, shape: tuple[int, ...]) -> None:
    pytest.importorskip("onnxruntime")
    op_type, onnx_op, attrs, dtype, makers, out_dtype = row
    rng = np.random.default_rng(len(shape) * 31 + op_type.value)
    arrays = [make(rng, shape, dtype) for make in makers]
    slots = [s.name for s in REGISTRY[op_type].support.slots if s.kind == "input"]
    got = run(device, op_type, {**dict.fromkeys(slots, dtype), "OutputTensor": out_dtype or dtype}, dict(zip(slots, arrays)),
              **({"RoundingMode": DML_ROUNDING_MODE.HALVES_TO_NEAREST_EVEN} if op_type == OP.ELEMENT_WISE_ROUND else {}))  # fmt: skip
    expected = run_onnx_node(onnx_op, arrays, attrs)
    assert got.dtype == np.dtype(out_dtype or dtype)
    if np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(got, expected.astype(got.dtype), rtol=2e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, expected.astype(got.dtype))


@pytest.mark.parametrize(
    ("op_type", "onnx_op"),
    [(OP.ELEMENT_WISE_LOGICAL_AND, "And"), (OP.ELEMENT_WISE_LOGICAL_OR, "Or"), (OP.ELEMENT_WISE_LOGICAL_XOR, "Xor")],
    ids=["LOGICAL_AND is ONNX And", "LOGICAL_OR is ONNX Or", "LOGICAL_XOR is ONNX Xor"],
)
def test_logical_operators_agree_with_onnxruntime_and_treat_any_nonzero_as_true(device: dmlpy.Device, op_type: OP, onnx_op: str) -> None:
    pytest.importorskip("onnxruntime")
    a = np.array([0, 0, 1, 1, 7, 200, 0, 255], np.uint8)
    b = np.array([0, 1, 0, 1, 3, 0, 9, 255], np.uint8)
    got = run(device, op_type, binary(np.uint8), {"ATensor": a, "BTensor": b})
    expected = run_onnx_node(onnx_op, [a != 0, b != 0])
    np.testing.assert_array_equal(got, expected.astype(np.uint8))


def test_logical_not_agrees_with_onnxruntime_not(device: dmlpy.Device) -> None:
    pytest.importorskip("onnxruntime")
    x = np.array([0, 1, 2, 0, 4294967295], np.uint32)
    got = run(device, OP.ELEMENT_WISE_LOGICAL_NOT, unary(np.uint32), {"InputTensor": x})
    np.testing.assert_array_equal(got, run_onnx_node("Not", [x != 0]).astype(np.uint32))


def test_if_agrees_with_onnxruntime_where(device: dmlpy.Device) -> None:
    pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(3)
    cond = rng.integers(0, 3, size=(2, 3, 4)).astype(np.uint8)  # 2 is true as well as 1
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 4))
    got = run(device, OP.ELEMENT_WISE_IF, {"ConditionTensor": np.uint8, "ATensor": np.float64, "BTensor": np.float64, "OutputTensor": np.float64},
              {"ConditionTensor": cond, "ATensor": a, "BTensor": b})  # fmt: skip
    np.testing.assert_array_equal(got, run_onnx_node("Where", [cond != 0, a, b]))


def test_clip_agrees_with_onnxruntime_clip(device: dmlpy.Device) -> None:
    pytest.importorskip("onnxruntime")
    x = np.random.default_rng(4).uniform(-3, 3, size=(3, 4, 5)).astype(np.float32)
    got = run(device, OP.ELEMENT_WISE_CLIP, unary(np.float32), {"InputTensor": x}, Min=-1.0, Max=0.5)
    expected = run_onnx_node("Clip", [x, np.array(-1.0, np.float32), np.array(0.5, np.float32)])
    np.testing.assert_array_equal(got, expected)


def test_is_infinity_modes_agree_with_onnxruntime_isinf(device: dmlpy.Device) -> None:
    pytest.importorskip("onnxruntime")
    x = np.array([INF, -INF, 0.0, NAN, 1e30, -1e-30], np.float32)
    for mode, attrs in [(DML_IS_INFINITY_MODE.EITHER, {}), (DML_IS_INFINITY_MODE.POSITIVE, {"detect_negative": 0}), (DML_IS_INFINITY_MODE.NEGATIVE, {"detect_positive": 0})]:
        got = run(device, OP.ELEMENT_WISE_IS_INFINITY, unary(np.float32, np.uint8), {"InputTensor": x}, InfinityMode=mode)
        np.testing.assert_array_equal(got, run_onnx_node("IsInf", [x], attrs).astype(np.uint8), err_msg=mode.name)


@pytest.mark.parametrize(("x_dtype", "scale_dtype", "out_dtype"), [(np.float32, np.float32, np.uint8), (np.float32, np.float32, np.int8), (np.int32, np.float32, np.int8)],
                         ids=["FLOAT32 to UINT8", "FLOAT32 to INT8", "INT32 to INT8 with a FLOAT32 scale"])  # fmt: skip
def test_quantize_linear_agrees_with_onnxruntime_and_saturates(device: dmlpy.Device, x_dtype: Any, scale_dtype: Any, out_dtype: Any) -> None:
    pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(5)
    shape = (2, 3, 4)
    x = (rng.uniform(-400, 400, size=shape) if x_dtype == np.float32 else rng.integers(-400, 400, size=shape)).astype(x_dtype)
    x.flat[:4] = [2.5, 3.5, -2.5, 1000]  # ties at scale 1 round to even; 1000 saturates
    scale = np.full(shape, 1.0, scale_dtype)
    scale.flat[4:] = rng.uniform(0.5, 4, size=x.size - 4)
    zp = rng.integers(-5, 5, size=shape).astype(out_dtype) if out_dtype == np.int8 else rng.integers(0, 10, size=shape).astype(out_dtype)
    desc = DML_ELEMENT_WISE_QUANTIZE_LINEAR_OPERATOR_DESC(buffer_tensor(x_dtype, shape), buffer_tensor(scale_dtype, shape), buffer_tensor(out_dtype, shape), buffer_tensor(out_dtype, shape))
    got = dmlpy.run(desc, device=device, InputTensor=x, ScaleTensor=scale, ZeroPointTensor=zp)
    # ONNX QuantizeLinear takes one scale per tensor (or axis): one node run per element. Its x and scale share a type, so
    # INT32 inputs go in as FLOAT32, exact for these magnitudes, as DirectML divides INT32 by a FLOAT32 scale.
    xs = x.astype(np.float32).ravel()
    expected = np.concatenate([run_onnx_node("QuantizeLinear", [xs[i : i + 1], np.array(scale.ravel()[i]), np.array(zp.ravel()[i])]) for i in range(x.size)])
    expected = expected.reshape(shape)
    np.testing.assert_array_equal(got, expected)


def test_dequantize_linear_agrees_with_onnxruntime(device: dmlpy.Device) -> None:
    pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(6)
    x = rng.integers(0, 256, size=12).astype(np.uint8)
    zp = rng.integers(0, 256, size=12).astype(np.uint8)
    scale = rng.uniform(0.01, 2, size=12).astype(np.float32)
    desc = DML_ELEMENT_WISE_DEQUANTIZE_LINEAR_OPERATOR_DESC(buffer_tensor(np.uint8, (12,)), buffer_tensor(np.float32, (12,)), buffer_tensor(np.uint8, (12,)), buffer_tensor(np.float32, (12,)))
    got = dmlpy.run(desc, device=device, InputTensor=x, ScaleTensor=scale, ZeroPointTensor=zp)
    expected = np.concatenate([run_onnx_node("DequantizeLinear", [x[i : i + 1], np.array(scale[i]), np.array(zp[i])]) for i in range(12)])
    np.testing.assert_allclose(got, expected, rtol=1e-7)


# ---------------------------------------------------------------------------------------
# Hand-computed values from the pages' formulas


def _case(op_type: OP, dtypes: dict[str, Any], inputs: dict[str, list[Any]], expected: list[Any], id: str, **fields: Any) -> Any:  # noqa: A002
    return pytest.param(op_type, dtypes, inputs, expected, fields, id=id)


HAND = [
    _case(OP.ELEMENT_WISE_IDENTITY, unary(np.float32), {"InputTensor": [-1.0, 0.0, 2.5]}, [-1.0, 1.0, 6.0],
          "IDENTITY with ScaleBias(2, 1) is 2x + 1", ScaleBias=DML_SCALE_BIAS(2.0, 1.0)),
    _case(OP.ELEMENT_WISE_SQRT, unary(np.float32), {"InputTensor": [0.0, 4.0, 12.0]}, [1.0, 3.0, 5.0],
          "SQRT applies the ScaleBias before the function: sqrt(2x + 1)", ScaleBias=DML_SCALE_BIAS(2.0, 1.0)),
    _case(OP.ELEMENT_WISE_ABS, unary(np.int8), {"InputTensor": [-128, -5, 7]}, [-128, 5, 7], "ABS of INT8 -128 wraps to -128 as two's complement"),
    _case(OP.ELEMENT_WISE_NEGATE, unary(np.int8), {"InputTensor": [-128, -5, 0]}, [-128, 5, 0], "NEGATE of INT8 -128 wraps to -128"),
    _case(OP.ELEMENT_WISE_ADD, binary(np.int8), {"ATensor": [127, -128, 100], "BTensor": [1, -1, 27]}, [-128, 127, 127], "ADD of INT8 wraps on overflow"),
    _case(OP.ELEMENT_WISE_ADD, binary(np.uint8), {"ATensor": [255, 0], "BTensor": [1, 0]}, [0, 0], "ADD of UINT8 255 + 1 wraps to 0"),
    _case(OP.ELEMENT_WISE_DIVIDE, binary(np.int32), {"ATensor": [-7, 7, -7, 7, 5], "BTensor": [2, -2, -2, 2, 0]}, [-3, -3, 3, 3, 0],
          "integer DIVIDE truncates toward zero; by 0 gives 0"),
    _case(OP.ELEMENT_WISE_DIVIDE, binary(np.float32), {"ATensor": [1.0, -1.0, 0.0], "BTensor": [0.0, 0.0, 0.0]}, [INF, -INF, NAN], "float DIVIDE by 0 is inf or NaN"),
    _case(OP.ELEMENT_WISE_MODULUS_TRUNCATE, binary(np.int32), {"ATensor": [-7, 7, -7, 7], "BTensor": [3, -3, -3, 3]}, [-1, 1, -1, 1],
          "MODULUS_TRUNCATE has the dividend's sign"),
    _case(OP.ELEMENT_WISE_MODULUS_FLOOR, binary(np.int32), {"ATensor": [-7, 7, -7, 7], "BTensor": [3, -3, -3, 3]}, [2, -2, -1, 1],
          "MODULUS_FLOOR has the divisor's sign"),
    _case(OP.ELEMENT_WISE_MODULUS_FLOOR, binary(np.float32), {"ATensor": [-7.5, 7.5], "BTensor": [2.0, -2.0]}, [0.5, -0.5], "float MODULUS_FLOOR is a - b * floor(a / b)"),
    _case(OP.ELEMENT_WISE_MEAN, binary(np.int32), {"ATensor": [2**31 - 1, -3, 3], "BTensor": [2**31 - 1, 0, 0]}, [2**31 - 1, -1, 1],
          "integer MEAN does not overflow and truncates toward zero"),
    _case(OP.ELEMENT_WISE_MEAN, binary(np.float32), {"ATensor": [1.0, -3.0], "BTensor": [2.0, 0.0]}, [1.5, -1.5], "MEAN is (a + b) / 2"),
    _case(OP.ELEMENT_WISE_DIFFERENCE_SQUARE, binary(np.float32), {"ATensor": [3.0, -1.0, 0.5], "BTensor": [1.0, 2.0, 0.5]}, [4.0, 9.0, 0.0], "DIFFERENCE_SQUARE is (a - b)^2"),
    _case(OP.ELEMENT_WISE_DIFFERENCE_SQUARE, binary(np.uint32), {"ATensor": [1, 5], "BTensor": [3, 2]}, [4, 9], "UINT32 DIFFERENCE_SQUARE wraps the difference: (1 - 3)^2 = 4"),
    _case(OP.ELEMENT_WISE_ATAN_YX, binary(np.float32), {"ATensor": [1.0, 1.0, -1.0, 0.0], "BTensor": [1.0, -1.0, -1.0, -1.0]},
          [math.pi / 4, 3 * math.pi / 4, -3 * math.pi / 4, math.pi], "ATAN_YX takes ATensor as y and BTensor as x, in every quadrant"),
    _case(OP.ELEMENT_WISE_THRESHOLD, unary(np.float32), {"InputTensor": [-2.0, 0.0, 0.5, 3.0]}, [0.25, 0.25, 0.5, 3.0], "THRESHOLD is max(x, Min)", Min=0.25),
    _case(OP.ELEMENT_WISE_THRESHOLD, unary(np.float32), {"InputTensor": [-2.0, 0.0, 1.0]}, [-1.0, 1.0, 3.0],
          "THRESHOLD is max(x * scale + bias, Min)", Min=-1.0, ScaleBias=DML_SCALE_BIAS(2.0, 1.0)),
    _case(OP.ELEMENT_WISE_THRESHOLD, unary(np.int32), {"InputTensor": [-5, 1, 2]}, [1, 1, 2], "INT32 THRESHOLD with Min 1.5 keeps values from 1 (truncated bound)", Min=1.5),
    _case(OP.ELEMENT_WISE_CLIP, unary(np.uint8), {"InputTensor": [0, 7, 255]}, [5, 7, 255], "UINT8 CLIP with a Max beyond the type's range clips only at Min", Min=5.0, Max=1e9),
    _case(OP.ELEMENT_WISE_CLIP, unary(np.int8), {"InputTensor": [-128, 0, 127]}, [-128, 0, 100], "INT8 CLIP with a Min below the type's range", Min=-1e9, Max=100.0),
    _case(OP.ELEMENT_WISE_CLIP, unary(np.float32), {"InputTensor": [-3.0, 0.0, NAN]}, [-1.0, 1.0, NAN],
          "CLIP applies the ScaleBias first and keeps NaN", Min=-1.0, Max=2.0, ScaleBias=DML_SCALE_BIAS(1.0, 1.0)),
    _case(OP.ELEMENT_WISE_CLIP1, unary(np.int64), {"InputTensor": [-(2**62), 0, 2**62]}, [-(2**40), 0, 2**40 + 1], "INT64 CLIP1 clamps exactly with INT64 bounds",
          MinMaxDataType=DT.INT64, Min=DML_SCALAR_UNION(Int64=-(2**40)), Max=DML_SCALAR_UNION(Int64=2**40 + 1)),
    _case(OP.ELEMENT_WISE_CLIP1, unary(np.float16), {"InputTensor": [-70000.0 / 2, 0.1, 2.0]}, [-1.5, 0.1, 1.5], "FLOAT16 CLIP1 with FLOAT16 bounds",
          MinMaxDataType=DT.FLOAT16, Min=DML_SCALAR_UNION(Bytes=np.float16(-1.5).tobytes() + bytes(6)), Max=DML_SCALAR_UNION(Bytes=np.float16(1.5).tobytes() + bytes(6))),
    _case(OP.ELEMENT_WISE_CONSTANT_POW, unary(np.float32), {"InputTensor": [-2.0, 3.0, 0.0]}, [4.0, 9.0, 0.0], "CONSTANT_POW(2) squares", Exponent=2.0),
    _case(OP.ELEMENT_WISE_CONSTANT_POW, unary(np.float32), {"InputTensor": [0.0, 2.0, -2.0]}, [1.0, 3.0, NAN],
          "CONSTANT_POW(0.5) of 2x + 1; a negative base is NaN", Exponent=0.5, ScaleBias=DML_SCALE_BIAS(4.0, 1.0)),
    _case(OP.ELEMENT_WISE_POW, {"InputTensor": np.float32, "ExponentTensor": np.int32, "OutputTensor": np.float32}, {"InputTensor": [2.0, -2.0, 0.0], "ExponentTensor": [-1, 3, 0]},
          [0.5, -8.0, 1.0], "POW with an INT32 exponent (FL 3.0): 2^-1, (-2)^3, 0^0"),
    _case(OP.ELEMENT_WISE_POW, {"InputTensor": np.int32, "ExponentTensor": np.int32, "OutputTensor": np.int32}, {"InputTensor": [2, 3, -2, 10], "ExponentTensor": [3, -1, 2, 10]},
          [8, 0, 4, 2**31 - 1], "INT32 POW truncates 3^-1 to 0 and saturates 10^10"),
    _case(OP.ELEMENT_WISE_IDENTITY, unary(np.int32), {"InputTensor": [3, -3, 4]}, [1, -1, 2], "INT32 IDENTITY with ScaleBias(0.5, 0) truncates toward zero",
          ScaleBias=DML_SCALE_BIAS(0.5, 0.0)),
    _case(OP.ELEMENT_WISE_IDENTITY, unary(np.int8), {"InputTensor": [2, -2, 0]}, [127, -128, 1], "INT8 IDENTITY with ScaleBias(100, 1) saturates",
          ScaleBias=DML_SCALE_BIAS(100.0, 1.0)),
    _case(OP.ELEMENT_WISE_BIT_SHIFT_LEFT, binary(np.uint64), {"ATensor": [1, 1, 3], "BTensor": [63, 64, 65]}, [2**63, 1, 6], "UINT64 SHIFT_LEFT keeps all 64 bits; counts modulo 64"),
    _case(OP.ELEMENT_WISE_ROUND, unary(np.float32), {"InputTensor": [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.6]}, [-2.0, -2.0, -0.0, 0.0, 2.0, 2.0, 3.0],
          "ROUND HALVES_TO_NEAREST_EVEN sends ties to even", RoundingMode=DML_ROUNDING_MODE.HALVES_TO_NEAREST_EVEN),
    _case(OP.ELEMENT_WISE_ROUND, unary(np.float32), {"InputTensor": [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.4]}, [-3.0, -2.0, -1.0, 1.0, 2.0, 3.0, 2.0],
          "ROUND TOWARD_INFINITY sends ties away from zero", RoundingMode=DML_ROUNDING_MODE.TOWARD_INFINITY),
    _case(OP.ELEMENT_WISE_ROUND, unary(np.float16), {"InputTensor": [-2.75, -0.5, 0.5, 2.75, INF, NAN]}, [-2.0, -0.0, 0.0, 2.0, INF, NAN],
          "ROUND TOWARD_ZERO truncates; inf and NaN stay", RoundingMode=DML_ROUNDING_MODE.TOWARD_ZERO),
    _case(OP.ELEMENT_WISE_IS_NAN, unary(np.float16, np.uint32), {"InputTensor": [NAN, INF, 0.0, -NAN]}, [1, 0, 0, 1], "IS_NAN writes 1 or 0 in a UINT32 output"),
    _case(OP.ELEMENT_WISE_LOGICAL_EQUALS, binary(np.float32, np.uint8), {"ATensor": [NAN, 1.0, 0.0], "BTensor": [NAN, 1.0, -0.0]}, [0, 1, 1],
          "LOGICAL_EQUALS: NaN equals nothing, 0 equals -0"),
    _case(OP.ELEMENT_WISE_LOGICAL_GREATER_THAN, binary(np.float32, np.uint8), {"ATensor": [NAN, INF], "BTensor": [0.0, 1e38]}, [0, 1], "GREATER_THAN with NaN is false"),
    _case(OP.ELEMENT_WISE_MAX, binary(np.float32), {"ATensor": [NAN, 1.0, -0.5], "BTensor": [2.0, NAN, -1.0]}, [2.0, 1.0, -0.5], "MAX of a NaN and a number is the number"),
    _case(OP.ELEMENT_WISE_MIN, binary(np.uint64), {"ATensor": [2**64 - 1, 3], "BTensor": [2**63, 4]}, [2**63, 3], "UINT64 MIN compares the full 64 bits"),
    _case(OP.ELEMENT_WISE_BIT_COUNT, unary(np.int8, np.uint8), {"InputTensor": [0, 1, -1, 7, -128]}, [0, 1, 8, 3, 1], "BIT_COUNT counts the set bits of INT8's two's complement"),
    _case(OP.ELEMENT_WISE_BIT_COUNT, unary(np.float32, np.uint32), {"InputTensor": [1.0, -0.0, 0.0]}, [7, 1, 0], "BIT_COUNT of FLOAT32 counts the stored bits (1.0 is 0x3F800000)"),
    _case(OP.ELEMENT_WISE_BIT_AND, binary(np.float32), {"ATensor": [-2.0, 3.0, 3.0], "BTensor": [2.0, -3.0, -1.5]}, [2.0, 3.0, 2.0**-127],
          "BIT_AND of FLOAT32 acts on the bit patterns: 0x40400000 & 0xBFC00000 is the denormal 0x00400000"),
    _case(OP.ELEMENT_WISE_BIT_NOT, unary(np.int8), {"InputTensor": [0, -1, 5]}, [-1, 0, -6], "BIT_NOT of INT8 is -x - 1"),
    _case(OP.ELEMENT_WISE_BIT_SHIFT_LEFT, binary(np.uint8), {"ATensor": [1, 255, 3, 3], "BTensor": [7, 1, 8, 9]}, [128, 254, 3, 6],
          "SHIFT_LEFT drops high bits; the count is taken modulo 8 for UINT8"),
    _case(OP.ELEMENT_WISE_BIT_SHIFT_RIGHT, binary(np.uint32), {"ATensor": [0x80000000, 12, 12], "BTensor": [31, 2, 34]}, [1, 3, 3],
          "SHIFT_RIGHT is logical; the count is taken modulo 32 for UINT32"),
    _case(OP.ELEMENT_WISE_SIGN, unary(np.float32), {"InputTensor": [-3.0, -0.0, 0.0, 2.0]}, [-1.0, 0.0, 0.0, 1.0], "SIGN is -1, 0 or 1"),
    _case(OP.ELEMENT_WISE_SIGN, unary(np.uint16), {"InputTensor": [0, 1, 65535]}, [0, 1, 1], "SIGN of unsigned values is 0 or 1"),
    _case(OP.ELEMENT_WISE_EXP, unary(np.float16), {"InputTensor": [12.0, -20.0, 0.0]}, [INF, 0.0, 1.0], "FLOAT16 EXP overflows to inf and underflows to 0"),
    _case(OP.ELEMENT_WISE_LOG, unary(np.float32), {"InputTensor": [0.0, -1.0, INF]}, [-INF, NAN, INF], "LOG of 0 is -inf, of a negative NaN"),
    _case(OP.ELEMENT_WISE_ERF, unary(np.float32), {"InputTensor": [0.0, 1.0, -INF]}, [0.0, 0.8427007929497149, -1.0], "ERF(1) = 0.8427007929..., ERF(-inf) = -1"),
    _case(OP.ELEMENT_WISE_RECIP, unary(np.float32), {"InputTensor": [0.0, -0.0, 4.0]}, [INF, -INF, 0.25], "RECIP of signed zeros is signed inf"),
    _case(OP.ELEMENT_WISE_ADD1, binary(np.float32), {"ATensor": [-3.0, 1.0], "BTensor": [1.0, 1.0]}, [0.0, 2.0], "ADD1 applies its fused RELU to a + b",
          FusedActivation=FusedActivation.relu()),
    _case(OP.ELEMENT_WISE_ADD1, binary(np.float16), {"ATensor": [-3.0, 1.0], "BTensor": [1.0, 1.0]}, [-4.0, 4.0], "FLOAT16 ADD1 with a fused LINEAR(2, 0)",
          FusedActivation=FusedActivation.linear(2.0, 0.0)),
    _case(OP.ELEMENT_WISE_IF, {"ConditionTensor": np.uint8, "ATensor": np.int64, "BTensor": np.int64, "OutputTensor": np.int64},
          {"ConditionTensor": [0, 1, 255], "ATensor": [1, 2, 3], "BTensor": [-1, -2, -3]}, [-1, 2, 3], "IF takes A where the condition is nonzero"),
]


@pytest.mark.doc_example
@pytest.mark.parametrize(("op_type", "dtypes", "inputs", "expected", "fields"), HAND)
def test_element_wise_matches_hand_computed_values(device: dmlpy.Device, op_type: OP, dtypes: dict[str, Any], inputs: dict[str, list[Any]], expected: list[Any],
                                                   fields: dict[str, Any]) -> None:  # fmt: skip
    arrays = {name: np.array(values, dtype=dmlpy.numpy_dtype(dmlpy.tensor.as_data_type(dtypes[name]))) for name, values in inputs.items()}
    got = run(device, op_type, dtypes, arrays, **fields)
    want = np.array(expected, dtype=got.dtype)
    assert got.dtype == np.dtype(dtypes["OutputTensor"])
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-6 if got.dtype == np.float32 else 1e-3, atol=0)
        np.testing.assert_array_equal(np.signbit(got[got == 0]), np.signbit(want[want == 0]))  # signed zeros
    else:
        np.testing.assert_array_equal(got, want)


def test_quantize_linear_rounds_ties_to_even_and_saturates_without_a_zero_point(device: dmlpy.Device) -> None:
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 300.0, -300.0], np.float32)
    desc = DML_ELEMENT_WISE_QUANTIZE_LINEAR_OPERATOR_DESC(buffer_tensor(np.float32, (7,)), buffer_tensor(np.float32, (7,)), None, buffer_tensor(np.int8, (7,)))
    got = dmlpy.run(desc, device=device, InputTensor=x, ScaleTensor=np.ones(7, np.float32))
    np.testing.assert_array_equal(got, np.array([0, 2, 2, 0, -2, 127, -128], np.int8))  # clamp(round(x / 1) + 0, -128, 127)


def test_dequantize_linear_of_int32_is_exact_in_the_difference(device: dmlpy.Device) -> None:
    x = np.array([2**31 - 1, -(2**31)], np.int32)
    zp = np.array([-(2**31), 2**31 - 1], np.int32)
    desc = DML_ELEMENT_WISE_DEQUANTIZE_LINEAR_OPERATOR_DESC(buffer_tensor(np.int32, (2,)), buffer_tensor(np.float32, (2,)), buffer_tensor(np.int32, (2,)), buffer_tensor(np.float32, (2,)))
    got = dmlpy.run(desc, device=device, InputTensor=x, ScaleTensor=np.array([0.5, 0.5], np.float32), ZeroPointTensor=zp)
    np.testing.assert_array_equal(got, np.array([(2**32 - 1) / 2, -(2**32 - 1) / 2], np.float32))  # (x - zp) * scale


def test_value_scale_2d_adds_one_bias_per_channel(device: dmlpy.Device) -> None:
    x = np.arange(12, dtype=np.float32).reshape(1, 3, 2, 2)
    desc = DML_VALUE_SCALE_2D_OPERATOR_DESC(buffer_tensor(np.float32, (1, 3, 2, 2)), buffer_tensor(np.float32, (1, 3, 2, 2)), 0.5, 3, [10.0, 20.0, 30.0])
    got = dmlpy.run(desc, device=device, InputTensor=x)
    expected = [[[10.0, 10.5], [11.0, 11.5]], [[22.0, 22.5], [23.0, 23.5]], [[34.0, 34.5], [35.0, 35.5]]]  # 0.5 * x + Bias[c]
    np.testing.assert_array_equal(got[0], expected)


# ---------------------------------------------------------------------------------------
# Strides, FLOAT16, empty tensors, every operator on both backends


def test_add_broadcasts_through_zero_strides_and_reads_nhwc(device: dmlpy.Device) -> None:
    sizes = (2, 3, 2, 2)
    a = np.arange(24, dtype=np.float32).reshape(sizes)
    a_nhwc = np.ascontiguousarray(a.transpose(0, 2, 3, 1))  # the memory an NHWC tensor holds
    bias = np.array([100.0, 200.0, 300.0], np.float32)  # one value per channel, broadcast with strides {0, 1, 0, 0}
    desc = DML_ELEMENT_WISE_ADD_OPERATOR_DESC(buffer_tensor(np.float32, sizes, nhwc_strides(sizes)), buffer_tensor(np.float32, sizes, (0, 1, 0, 0)),
                                              buffer_tensor(np.float32, sizes))  # fmt: skip
    got = dmlpy.run(desc, device=device, ATensor=a, BTensor=np.broadcast_to(bias.reshape(1, 3, 1, 1), sizes))
    assert got[1, 2, 1, 0] == a[1, 2, 1, 0] + 300.0 == 22.0 + 300.0
    assert got[0, 0, 0, 1] == 1.0 + 100.0
    assert a_nhwc.ravel()[3] == a[0, 0, 0, 1]  # the NHWC layout puts channels innermost


def test_a_transposed_input_through_strides_gives_the_transpose(device: dmlpy.Device) -> None:
    x = np.arange(6, dtype=np.float32)  # memory of a {2, 3} row-major tensor, read as its {3, 2} transpose
    desc = REGISTRY[OP.ELEMENT_WISE_NEGATE].desc_class(buffer_tensor(np.float32, (3, 2), (1, 3)), buffer_tensor(np.float32, (3, 2)))
    got = dmlpy.run(desc, device=device, InputTensor=x.reshape(2, 3).T)
    np.testing.assert_array_equal(got, [[-0.0, -3.0], [-1.0, -4.0], [-2.0, -5.0]])


@pytest.mark.parametrize("op_type", [OP.ELEMENT_WISE_EXP, OP.ELEMENT_WISE_SQRT, OP.ELEMENT_WISE_TANH, OP.ELEMENT_WISE_ERF, OP.ELEMENT_WISE_ADD, OP.ELEMENT_WISE_DIVIDE],
                         ids=lambda t: f"{t.name} on FLOAT16")  # fmt: skip
def test_float16_is_computed_in_float32_and_rounded_once(device: dmlpy.Device, op_type: OP) -> None:
    pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(op_type.value)
    slots = [s.name for s in REGISTRY[op_type].support.slots if s.kind == "input"]
    arrays = [rng.uniform(0.1, 4, size=(3, 5)).astype(np.float16) for _ in slots]
    got = run(device, op_type, {**dict.fromkeys(slots, np.float16), "OutputTensor": np.float16}, dict(zip(slots, arrays)))
    onnx_op = {OP.ELEMENT_WISE_EXP: "Exp", OP.ELEMENT_WISE_SQRT: "Sqrt", OP.ELEMENT_WISE_TANH: "Tanh", OP.ELEMENT_WISE_ERF: "Erf", OP.ELEMENT_WISE_ADD: "Add",
               OP.ELEMENT_WISE_DIVIDE: "Div"}[op_type]  # fmt: skip
    expected = run_onnx_node(onnx_op, [a.astype(np.float32) for a in arrays]).astype(np.float16)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("op_type", list(KERNELS), ids=lambda t: t.name)
def test_every_element_wise_operator_runs_on_the_native_backend_through_its_c_or_numpy_kernel(backend: str, op_type: OP) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
    try:
        from export_cases import _element_wise_case  # noqa: PLC0415 - one valid desc per operator, shared with the exporters' tests
    finally:
        sys.path.pop(0)

    case = _element_wise_case(op_type)
    inputs = case.inputs(np.random.default_rng(1))
    numpy_result = dmlpy.run(case.build(), backend="numpy", **inputs)
    got = dmlpy.run(case.build(), device=dmlpy.create_device(backend=backend), **inputs)
    np.testing.assert_array_equal(got, numpy_result)
    desc = case.build()
    c_types = {getattr(desc, n).Desc.DataType for n in ("ATensor", "BTensor", "InputTensor", "ExponentTensor", "OutputTensor") if getattr(desc, n, None) is not None}
    # the C kernel takes the operators of element_wise.NATIVE on FLOAT32 / FLOAT16 tensors; NumPy the rest
    assert REGISTRY[op_type].runs_natively(desc) == (op_type in NATIVE and len(c_types) == 1 and c_types <= {DT.FLOAT32, DT.FLOAT16})


def test_the_generic_rules_still_apply_to_an_element_wise_operator() -> None:
    bad = DML_ELEMENT_WISE_ADD_OPERATOR_DESC(buffer_tensor(np.float32, (2, 2)), buffer_tensor(np.float16, (2, 2)), buffer_tensor(np.float32, (2, 2)))
    assert_rule(dmlpy.validate(bad), "TENSOR.SAME_DATA_TYPE")


# ---------------------------------------------------------------------------------------
# A graph of element-wise nodes


def test_a_graph_of_two_element_wise_nodes_computes_sqrt_of_a_sum(device: dmlpy.Device) -> None:
    g = dmlpy.GraphBuilder(device)
    a = g.input("a", "float32", (2, 3))
    b = g.input("b", "float32", (2, 3))
    (s,) = g.add_operator(DML_ELEMENT_WISE_ADD_OPERATOR_DESC(None, None, buffer_tensor(np.float32, (2, 3))), {"ATensor": a, "BTensor": b}, call="add")
    root = REGISTRY[OP.ELEMENT_WISE_SQRT].desc_class(None, buffer_tensor(np.float32, (2, 3)), DML_SCALE_BIAS(1.0, 1.0))
    (y,) = g.add_operator(root, {"InputTensor": s}, call="sqrt")
    got = g.compile({"y": y})(a=np.array([[0, 1, 2], [3, 4, 5]], np.float32), b=np.array([[0, 2, 5], [4, 10, 18]], np.float32))["y"]
    expected = np.array([[1.0, 2.0, math.sqrt(8)], [math.sqrt(8), math.sqrt(15), math.sqrt(24)]], np.float32)  # sqrt(a + b + 1), rounded once to FLOAT32
    np.testing.assert_array_equal(got, expected)


# ---------------------------------------------------------------------------------------
# The rules the pages state


def _clip1(min_max_type: DT) -> Any:
    return DML_ELEMENT_WISE_CLIP1_OPERATOR_DESC(buffer_tensor(np.int32, (4,)), buffer_tensor(np.int32, (4,)), None, min_max_type, DML_SCALAR_UNION(Int32=0), DML_SCALAR_UNION(Int32=1))


def test_clip1_min_max_data_type_must_equal_the_output_data_type() -> None:
    assert rule_ids(dmlpy.validate(_clip1(DT.INT32))) == []
    assert_rule(dmlpy.validate(_clip1(DT.FLOAT32)), "ELEMENT_WISE.CLIP1_MIN_MAX_DATA_TYPE", path="DML_ELEMENT_WISE_CLIP1_OPERATOR_DESC.MinMaxDataType")


def test_add1_fused_activation_needs_a_float_output() -> None:
    ints = DML_ELEMENT_WISE_ADD1_OPERATOR_DESC(buffer_tensor(np.int32, (4,)), buffer_tensor(np.int32, (4,)), buffer_tensor(np.int32, (4,)), FusedActivation.relu())
    assert_rule(dmlpy.validate(ints), "ELEMENT_WISE.ADD1_FUSED_ACTIVATION_FLOAT", path="DML_ELEMENT_WISE_ADD1_OPERATOR_DESC.FusedActivation")
    floats = DML_ELEMENT_WISE_ADD1_OPERATOR_DESC(buffer_tensor(np.float32, (4,)), buffer_tensor(np.float32, (4,)), buffer_tensor(np.float32, (4,)), FusedActivation.relu())
    assert rule_ids(dmlpy.validate(floats)) == []


def test_pow_exponent_type_must_match_the_input_below_fl_3_0() -> None:
    shape = (1, 1, 2, 2)
    desc = DML_ELEMENT_WISE_POW_OPERATOR_DESC(buffer_tensor(np.float32, shape), buffer_tensor(np.float16, shape), buffer_tensor(np.float32, shape))
    assert_rule(dmlpy.validate(desc, feature_level=FL.LEVEL_2_1), "ELEMENT_WISE.POW_EXPONENT_DATA_TYPE", path="DML_ELEMENT_WISE_POW_OPERATOR_DESC.ExponentTensor.DataType")
    assert rule_ids(dmlpy.validate(desc, feature_level=FL.LEVEL_3_0)) == []


def test_quantize_scale_type_follows_the_input_type() -> None:
    def quantize(x: Any, scale: Any) -> Any:
        return DML_ELEMENT_WISE_QUANTIZE_LINEAR_OPERATOR_DESC(buffer_tensor(x, (4,)), buffer_tensor(scale, (4,)), buffer_tensor(np.uint8, (4,)), buffer_tensor(np.uint8, (4,)))

    path = "DML_ELEMENT_WISE_QUANTIZE_LINEAR_OPERATOR_DESC.ScaleTensor.DataType"
    assert_rule(dmlpy.validate(quantize(np.int32, np.float16)), "ELEMENT_WISE.QUANTIZE_SCALE_DATA_TYPE", path=path)
    assert_rule(dmlpy.validate(quantize(np.float16, np.float32)), "ELEMENT_WISE.QUANTIZE_SCALE_DATA_TYPE", path=path)
    assert rule_ids(dmlpy.validate(quantize(np.int32, np.float32))) == []


def test_a_null_zero_point_needs_fl_6_2() -> None:
    desc = DML_ELEMENT_WISE_DEQUANTIZE_LINEAR_OPERATOR_DESC(buffer_tensor(np.uint8, (4,)), buffer_tensor(np.float32, (4,)), None, buffer_tensor(np.float32, (4,)))
    assert_rule(dmlpy.validate(desc, feature_level=FL.LEVEL_6_1), "ELEMENT_WISE.ZERO_POINT_OPTIONAL", path="DML_ELEMENT_WISE_DEQUANTIZE_LINEAR_OPERATOR_DESC.ZeroPointTensor")
    assert rule_ids(dmlpy.validate(desc, feature_level=FL.LEVEL_6_2)) == []


@pytest.mark.parametrize(("channels", "sizes"), [(2, (1, 2, 2, 2)), (3, (1, 1, 2, 2))], ids=["ChannelCount 2 is neither 1 nor 3", "ChannelCount 3 on a 1-channel input"])
def test_value_scale_2d_channel_count(channels: int, sizes: tuple[int, ...]) -> None:
    desc = DML_VALUE_SCALE_2D_OPERATOR_DESC(buffer_tensor(np.float32, sizes), buffer_tensor(np.float32, sizes), 1.0, channels, [0.0] * channels)
    assert_rule(dmlpy.validate(desc), "ELEMENT_WISE.VALUE_SCALE_2D_CHANNEL_COUNT", path="DML_VALUE_SCALE_2D_OPERATOR_DESC.ChannelCount")


def test_a_rounding_or_infinity_mode_outside_its_enum_is_refused() -> None:
    desc = DML_ELEMENT_WISE_ROUND_OPERATOR_DESC(buffer_tensor(np.float32, (4,)), buffer_tensor(np.float32, (4,)), 3)
    assert_rule(dmlpy.validate(desc), "ENUM.VALUE", path="DML_ELEMENT_WISE_ROUND_OPERATOR_DESC.RoundingMode")
    is_inf = desc_of(OP.ELEMENT_WISE_IS_INFINITY, unary(np.float32, np.uint8), (4,), InfinityMode=3)
    assert_rule(dmlpy.validate(is_inf), "ENUM.VALUE", path="DML_ELEMENT_WISE_IS_INFINITY_OPERATOR_DESC.InfinityMode")


def test_an_element_wise_tensor_with_an_empty_axis_is_refused_by_name() -> None:
    empty = DML_ELEMENT_WISE_ADD_OPERATOR_DESC(buffer_tensor(np.float32, (2, 0)), buffer_tensor(np.float32, (2, 0)), buffer_tensor(np.float32, (2, 0)))
    assert_rule(dmlpy.validate(empty), "TENSOR.SIZE_ZERO", path="DML_ELEMENT_WISE_ADD_OPERATOR_DESC.ATensor.Sizes[1]")  # DirectML has no empty tensors
