"""import_model(..., fallback="onnxruntime"): what dmlpy maps runs as DML graphs, the rest on onnxruntime.

Every expected value is onnxruntime's output for the whole model (CPU provider); the placement
and segment claims are read off the model by hand (which node dmlpy cannot take, which values
cross a cut).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import dmlpy

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper

import dmlpy.interop.onnx as dx
from dmlpy.interop.onnx_hybrid import HybridModel

pytestmark = pytest.mark.filterwarnings("ignore::dmlpy.DmlWarning")

RNG = np.random.default_rng(14)
W = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
X = RNG.standard_normal((1, 3, 5, 5)).astype(np.float32)


def model(nodes: list[Any], initializers: dict[str, np.ndarray], outputs: list[str]) -> Any:
    graph = helper.make_graph(nodes, "hybrid", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(X.shape))],
                              [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in outputs],
                              [numpy_helper.from_array(v, k) for k, v in initializers.items()])  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def onnxruntime_outputs(proto: Any) -> dict[str, np.ndarray]:
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, {"x": X}), strict=True))


# Conv (dmlpy) -> Trilu (DIAGONAL_MATRIX1, described, not emulated: onnxruntime) -> Relu, Shape, Reshape (dmlpy; the
# Reshape's shape is folded from the Shape node in the same segment).
NOT_EMULATED_BETWEEN = model(
    [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Trilu", ["c"], ["s"]),
     helper.make_node("Relu", ["s"], ["r"]), helper.make_node("Shape", ["r"], ["shape"]), helper.make_node("Reshape", ["r", "flat"], ["y"])],
    {"w": W, "flat": np.array([1, -1], np.int64)}, ["y"],
)  # fmt: skip

# Det has no DirectML operator at all; its output is a graph output and feeds a dmlpy node after it.
UNMAPPED_TWO_OUTPUTS = model(
    [helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Reshape", ["c", "square"], ["m"]), helper.make_node("Det", ["m"], ["det"]),
     helper.make_node("Sigmoid", ["det"], ["y"])],
    {"w": W, "square": np.array([4, 3, 3], np.int64)}, ["det", "y"],
)  # fmt: skip


def test_a_node_dmlpy_does_not_emulate_runs_on_onnxruntime_and_the_model_matches(device: dmlpy.Device) -> None:
    hybrid = dx.import_model(NOT_EMULATED_BETWEEN, fallback="onnxruntime", device=device)
    assert isinstance(hybrid, HybridModel)
    assert [(s.place, [NOT_EMULATED_BETWEEN.graph.node[i].op_type for i in s.nodes]) for s in hybrid.segments] == [
        ("dmlpy", ["Conv"]), ("onnxruntime", ["Trilu"]), ("dmlpy", ["Relu", "Shape", "Reshape"])]  # fmt: skip
    assert hybrid.segments[1].reason == "ONNX.NOT_EMULATED"
    assert [p[3] for p in hybrid.placement] == ["dmlpy", "onnxruntime", "dmlpy", "dmlpy", "dmlpy"]
    assert hybrid.segments[0].outputs == ["c"] and hybrid.segments[1].inputs == ["c"] and hybrid.segments[2].inputs == ["s"]
    np.testing.assert_allclose(hybrid.run({"x": X})["y"], onnxruntime_outputs(NOT_EMULATED_BETWEEN)["y"], rtol=1e-5, atol=1e-5)


def test_an_operator_without_a_directml_equivalent_is_cut_out_and_its_output_still_reaches_the_graph(device: dmlpy.Device) -> None:
    hybrid = dx.import_model(UNMAPPED_TWO_OUTPUTS, fallback="onnxruntime", device=device)
    assert [s.place for s in hybrid.segments] == ["dmlpy", "onnxruntime", "dmlpy"]
    assert hybrid.segments[1].reason == "ONNX.UNSUPPORTED_OP" and hybrid.segments[1].outputs == ["det"]
    expected, got = onnxruntime_outputs(UNMAPPED_TWO_OUTPUTS), hybrid(x=X)
    assert sorted(got) == ["det", "y"]
    for name in ("det", "y"):
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-4, atol=1e-5)


def test_a_model_dmlpy_maps_whole_is_one_dml_segment(device: dmlpy.Device) -> None:
    whole = model([helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Relu", ["c"], ["y"])], {"w": W}, ["y"])
    hybrid = dx.import_model(whole, fallback="onnxruntime", device=device)
    assert [s.place for s in hybrid.segments] == ["dmlpy"] and isinstance(hybrid.segments[0].runner, dx.ImportedModel)
    np.testing.assert_allclose(hybrid.run({"x": X})["y"], onnxruntime_outputs(whole)["y"], rtol=1e-5, atol=1e-5)


def test_without_a_fallback_the_same_model_is_refused_with_the_rule() -> None:
    with pytest.raises(dx.OnnxImportError) as caught:
        dx.import_model(NOT_EMULATED_BETWEEN)
    assert {f.rule for f in caught.value.findings} == {"ONNX.NOT_EMULATED"}


def test_the_report_names_each_segment_its_place_and_why() -> None:
    report = dx.import_model(NOT_EMULATED_BETWEEN, fallback="onnxruntime").report().splitlines()
    assert report == ["segment 0: dmlpy, 1 node (Conv)", "segment 1: onnxruntime, 1 node (Trilu) - ONNX.NOT_EMULATED",
                      "segment 2: dmlpy, 3 nodes (Relu, Shape, Reshape)"]  # fmt: skip


def test_an_unknown_fallback_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="fallback"):
        dx.import_model(NOT_EMULATED_BETWEEN, fallback="tensorflow")


def test_a_missing_input_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="missing: x"):
        dx.import_model(NOT_EMULATED_BETWEEN, fallback="onnxruntime").run({})


# Slice to an empty tensor, then ReduceSum over the empty axis: the values have no DirectML form
EMPTY_THEN_RELU = model(
    [helper.make_node("Slice", ["x", "five", "five", "three"], ["e"]), helper.make_node("ReduceSum", ["e", "three"], ["s"], keepdims=1),
     helper.make_node("Relu", ["s"], ["y"])],
    {"five": np.array([5], np.int64), "three": np.array([3], np.int64)}, ["y"],
)  # fmt: skip


def test_an_empty_tensor_is_unsupported_not_invalid_and_the_hybrid_leaves_it_to_onnxruntime(device: dmlpy.Device) -> None:
    with pytest.raises(dx.OnnxImportError) as caught:
        dx.import_model(EMPTY_THEN_RELU, device=device)
    assert caught.value.hresult == dmlpy.HRESULT.E_NOTIMPL and {f.rule for f in caught.value.findings} == {"ONNX.UNSUPPORTED_EMPTY_TENSOR"}
    hybrid = dx.import_model(EMPTY_THEN_RELU, fallback="onnxruntime", device=device)
    assert [(s.place, s.reason) for s in hybrid.segments] == [("onnxruntime", "ONNX.UNSUPPORTED_EMPTY_TENSOR"), ("dmlpy", "")]
    y = hybrid.run({"x": X})["y"]
    assert y.shape == (1, 3, 5, 1) and np.array_equal(y, onnxruntime_outputs(EMPTY_THEN_RELU)["y"])
