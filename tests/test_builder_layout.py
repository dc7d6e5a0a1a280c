"""GraphBuilder's element-wise, broadcasting and layout methods against onnxruntime one-node models.

Every expected value is onnxruntime's (CPU) output for the equivalent ONNX node; the builder's
graphs run on both backends (the ``device`` fixture).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import assert_rule

import dmlpy
from dmlpy.builder import GraphBuilder

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import helper, numpy_helper

TOLERANCE = {"rtol": 1e-3, "atol": 1e-4}


def ort_node(op: str, arrays: list[np.ndarray], attributes: dict[str, Any] | None = None, *, constants: dict[int, np.ndarray] | None = None) -> np.ndarray:
    """onnxruntime's output of one ``op`` node on ``arrays`` (``constants``: inputs given as initializers, by position)."""
    constants = constants or {}
    names = [f"i{k}" for k in range(len(arrays) + len(constants))]
    feeds, inputs, inits = {}, [], []
    arrays_iter = iter(arrays)
    for k, name in enumerate(names):
        if k in constants:
            inits.append(numpy_helper.from_array(constants[k], name))
            continue
        a = next(arrays_iter)
        feeds[name] = a
        inputs.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape))
    node = helper.make_node(op, names, ["y"], **(attributes or {}))
    graph = helper.make_graph([node], "g", inputs, [helper.make_empty_tensor_value_info("y")], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


RNG = np.random.default_rng(14)
A = RNG.standard_normal((2, 3, 4)).astype(np.float32)
B = RNG.standard_normal((3, 1)).astype(np.float32)
P = RNG.uniform(0.5, 2.0, (2, 3, 4)).astype(np.float32)
S = RNG.standard_normal((4,)).astype(np.float32)

# (id, builder call, ONNX op, inputs, attributes)
BINARY = [
    ("add broadcasts a {3, 1} over {2, 3, 4} as ONNX Add", lambda g, a, b: g.add(a, b), "Add", [A, B]),
    ("subtract broadcasts a lower-rank right operand", lambda g, a, b: g.subtract(a, b), "Sub", [A, S]),
    ("multiply broadcasts both ways", lambda g, a, b: g.multiply(a, b), "Mul", [B, S]),
    ("divide is ONNX Div", lambda g, a, b: g.divide(a, b), "Div", [A, P]),
    ("max is ONNX Max", lambda g, a, b: g.max(a, b), "Max", [A, B]),
    ("min is ONNX Min", lambda g, a, b: g.min(a, b), "Min", [A, S]),
    ("pow is ONNX Pow", lambda g, a, b: g.pow(a, b), "Pow", [P, A]),
    ("equal gives 1 where equal", lambda g, a, b: g.equal(a, b), "Equal", [np.round(A), np.round(B)]),
    ("less gives 1 where a < b", lambda g, a, b: g.less(a, b), "Less", [A, B]),
    ("greater gives 1 where a > b", lambda g, a, b: g.greater(a, b), "Greater", [A, S]),
]
UNARY = [
    ("sqrt is ONNX Sqrt", lambda g, x: g.sqrt(x), "Sqrt", P),
    ("reciprocal is ONNX Reciprocal", lambda g, x: g.reciprocal(x), "Reciprocal", P),
    ("exp is ONNX Exp", lambda g, x: g.exp(x), "Exp", A),
    ("log is ONNX Log", lambda g, x: g.log(x), "Log", P),
    ("abs is ONNX Abs", lambda g, x: g.abs(x), "Abs", A),
    ("neg is ONNX Neg", lambda g, x: g.neg(x), "Neg", A),
    ("erf is ONNX Erf", lambda g, x: g.erf(x), "Erf", A),
    ("tanh_element_wise is ONNX Tanh", lambda g, x: g.tanh_element_wise(x), "Tanh", A),
]


def _compile_run(device: dmlpy.Device, build: Any, arrays: list[np.ndarray]) -> np.ndarray:
    g = GraphBuilder(device)
    tensors = [g.input(f"x{k}", a.dtype, a.shape) for k, a in enumerate(arrays)]
    program = g.compile({"y": build(g, *tensors)})
    return program(**{f"x{k}": a for k, a in enumerate(arrays)})["y"]


@pytest.mark.parametrize(("build", "op", "arrays"), [r[1:] for r in BINARY], ids=[r[0] for r in BINARY])
def test_binary_element_wise_methods_broadcast_as_onnx(device: dmlpy.Device, build: Any, op: str, arrays: list[np.ndarray]) -> None:
    got = _compile_run(device, build, arrays)
    expected = ort_node(op, arrays)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected.astype(got.dtype), **TOLERANCE)


@pytest.mark.parametrize(("build", "op", "x"), [r[1:] for r in UNARY], ids=[r[0] for r in UNARY])
def test_unary_element_wise_methods_agree_with_onnxruntime(device: dmlpy.Device, build: Any, op: str, x: np.ndarray) -> None:
    np.testing.assert_allclose(_compile_run(device, build, [x]), ort_node(op, [x]), **TOLERANCE)


def test_where_broadcasts_its_three_inputs_as_onnx_where(device: dmlpy.Device) -> None:
    cond = (RNG.random((3, 1)) > 0.5)
    got = _compile_run(device, lambda g, c, a, b: g.where(c, a, b), [cond.astype(np.uint8), A, S])
    np.testing.assert_allclose(got, ort_node("Where", [cond, A, S]), **TOLERANCE)


@pytest.mark.parametrize(("low", "high"), [(-0.5, 0.5), (None, 0.25), (-0.25, None)], ids=["both bounds", "only a max", "only a min"])
def test_clip_agrees_with_onnx_clip(device: dmlpy.Device, low: float | None, high: float | None) -> None:
    constants = {k + 1: np.array(v, np.float32) for k, v in enumerate((low, high)) if v is not None}
    if low is None:  # ONNX Clip's optional inputs are positional: an empty min comes first
        expected = np.minimum(ort_node("Max", [A], constants={1: np.array(-np.inf, np.float32)}), high)
    else:
        expected = ort_node("Clip", [A], constants=constants)
    np.testing.assert_allclose(_compile_run(device, lambda g, x: g.clip(x, low, high), [A]), expected, **TOLERANCE)


@pytest.mark.parametrize("perm", [(0, 2, 1), (2, 0, 1), (1, 0, 2)], ids=str)
def test_transpose_reads_through_permuted_strides_and_writes_packed(device: dmlpy.Device, perm: tuple[int, ...]) -> None:
    got = _compile_run(device, lambda g, x: g.transpose(x, perm), [A])
    np.testing.assert_array_equal(got, ort_node("Transpose", [A], {"perm": list(perm)}))


def test_reinterpret_is_a_reshape_without_a_node_and_after_a_transpose_copies_once(device: dmlpy.Device) -> None:
    g = GraphBuilder(device)
    x = g.input("x", "float32", A.shape)
    y = g.exp(x)
    same_bytes = g.reinterpret(y, (6, 4))
    assert same_bytes.source == y.source  # no node: the edge reads the bytes with new sizes
    transposed = g.reinterpret(g.transpose(y, (2, 1, 0), copy=False), (4, 6))
    out = g.compile({"r": g.sqrt(g.abs(same_bytes)), "t": g.relu(transposed)})(x=A)
    np.testing.assert_allclose(out["r"], np.sqrt(np.abs(ort_node("Reshape", [ort_node("Exp", [A])], constants={1: np.array([6, 4])}))), **TOLERANCE)
    np.testing.assert_allclose(out["t"], ort_node("Reshape", [ort_node("Transpose", [np.exp(A)], {"perm": [2, 1, 0]})], constants={1: np.array([4, 6])}), **TOLERANCE)


def test_expand_broadcasts_as_onnx_expand(device: dmlpy.Device) -> None:
    got = _compile_run(device, lambda g, x: g.expand(x, (2, 1, 3, 5)), [B])
    np.testing.assert_array_equal(got, ort_node("Expand", [B], constants={1: np.array([2, 1, 3, 5])}))


def test_element_wise_refuses_inputs_that_do_not_broadcast() -> None:
    g = GraphBuilder(backend="numpy")
    with pytest.raises(ValueError, match="do not broadcast"):
        g.add(g.input("a", "float32", (2, 3)), g.input("b", "float32", (4,)))


def test_add_with_a_fused_activation_is_add1() -> None:
    g = GraphBuilder(backend="numpy")
    y = g.add(g.input("a", "float32", (2, 3)), g.input("b", "float32", (3,)), activation=dmlpy.FusedActivation.relu())
    out = g.compile({"y": y})(a=A[0, :2, :3], b=S[:3])
    np.testing.assert_allclose(out["y"], np.maximum(A[0, :2, :3] + S[:3], 0), **TOLERANCE)


def test_element_wise_names_a_bad_data_type_by_rule() -> None:
    g = GraphBuilder(backend="numpy")
    with pytest.raises(dmlpy.DmlError) as error:
        g.sqrt(g.input("a", "int32", (2, 3)))
    assert_rule(error.value, "TENSOR.DATA_TYPE_SUPPORT", "DML_ELEMENT_WISE_SQRT_OPERATOR_DESC.InputTensor.DataType")
