"""dmlpy as an ONNX backend: the Backend API, and ONNX's shipped node cases for the ops main maps.

Oracles: the outputs ONNX's node test cases carry (computed by ONNX's reference
implementation when the onnx wheel was built), compared as onnx's runner compares them; and
the Relu / Sigmoid / LeakyRelu formulas of the ONNX operator pages, written out here.
``python -m tests.interop.onnx_node_report`` runs the same cases for every mapped op type
and prints the counts.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import dmlpy

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper
from onnx_node_report import folded, node_cases, run_case

from dmlpy.interop.onnx_backend import DmlpyBackend, Rejected, is_rejection

# The ops main's importer mapped when this sample was fixed, and how many non-expanded node
# cases onnx 1.23 ships for each (a newer onnx may add cases: at least these many must run).
SAMPLE_OPS = {
    "AveragePool": 20,
    "Conv": 6,
    "ConvTranspose": 11,
    "DepthToSpace": 2,
    "SpaceToDepth": 4,
    "Relu": 1,
    "LeakyRelu": 3,
    "Sigmoid": 2,
    "GlobalAveragePool": 2,
}

# Cases that do not pass, each with its expected outcome and why (none today on either backend).
KNOWN: dict[str, tuple[str, str]] = {}


@functools.cache
def cases_of(op: str) -> list[object]:
    return [case for name, case in node_cases(SAMPLE_OPS) if name == op]


@pytest.mark.parametrize("op", SAMPLE_OPS)
def test_onnx_node_cases_of_the_ops_main_maps_pass_or_fail_as_the_known_table_says(op: str, backend: str) -> None:
    cases = cases_of(op)
    assert len(cases) >= SAMPLE_OPS[op], f"onnx ships {len(cases)} node cases for {op}, expected at least {SAMPLE_OPS[op]}"
    unexplained = []
    for case in cases:
        outcome = run_case(op, case, backend)
        expected = KNOWN.get(case.name, ("pass", ""))[0]  # type: ignore[attr-defined]
        if outcome.status != expected:
            unexplained.append(f"{case.name}: {outcome.status} (expected {expected}) {outcome.detail}")  # type: ignore[attr-defined]
    assert not unexplained, "\n".join(unexplained)


def test_the_known_table_names_only_cases_of_the_sample() -> None:
    names = {case.name for op in SAMPLE_OPS for case in cases_of(op)}  # type: ignore[attr-defined]
    assert set(KNOWN) <= names
    assert all(status in ("rejected", "fail") and reason for status, reason in KNOWN.values())


# ---------------------------------------------------------------------------------------
# The Backend API


def two_outputs_model() -> onnx.ModelProto:
    """Sigmoid then Relu of x, with the graph outputs listed the other way round."""
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Relu", ["x"], ["r"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in ("r", "s")]
    return helper.make_model(helper.make_graph(nodes, "two", [x], outputs), opset_imports=[helper.make_opsetid("", 17)])


X = np.array([[-2.0, -0.5, 0.0], [0.25, 1.0, 3.0]], np.float32)


def test_dmlpy_supports_the_cpu_device_only() -> None:
    assert DmlpyBackend.supports_device("CPU")
    assert not DmlpyBackend.supports_device("CUDA")
    assert not DmlpyBackend.supports_device("TPU")
    with pytest.raises(ValueError, match="CPU"):
        DmlpyBackend.prepare(two_outputs_model(), "CUDA")


def test_run_returns_the_outputs_in_the_graph_output_order(backend: str) -> None:
    rep = DmlpyBackend.prepare(two_outputs_model(), "CPU", backend=backend)
    for inputs in ([X], {"x": X}):
        r, s = rep.run(inputs)
        np.testing.assert_array_equal(r, np.maximum(X, 0))
        np.testing.assert_allclose(s, 1 / (1 + np.exp(-X.astype(np.float64))), rtol=1e-6)
    outputs = DmlpyBackend.run_model(two_outputs_model(), [X], backend=backend)
    np.testing.assert_array_equal(outputs["r"], np.maximum(X, 0))  # the onnx namedtupledict: by name too


def test_run_node_types_and_shapes_the_node_from_its_inputs(backend: str) -> None:
    node = helper.make_node("LeakyRelu", ["x"], ["y"], alpha=0.25)
    (y,) = DmlpyBackend.run_node(node, [X], backend=backend)
    np.testing.assert_array_equal(y, np.where(X < 0, 0.25 * X, X))
    (y,) = DmlpyBackend.run_node(helper.make_node("Relu", ["x"], ["y"]), [X], opset_version=6, backend=backend)
    np.testing.assert_array_equal(y, np.maximum(X, 0))


def test_a_model_with_symbolic_dimensions_is_imported_for_the_shapes_it_is_run_with() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])
    model = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "sym", [x], [y]), opset_imports=[helper.make_opsetid("", 17)])
    rep = DmlpyBackend.prepare(model, backend="numpy")
    for batch in (2, 5):
        value = np.linspace(-1, 1, batch * 3, dtype=np.float32).reshape(batch, 3)
        (got,) = rep.run([value])
        np.testing.assert_array_equal(got, np.maximum(value, 0))
    assert len(rep._imported) == 2


def test_a_node_the_importer_does_not_map_is_rejected_not_failed() -> None:
    node = helper.make_node("Frobnicate", ["x"], ["y"], domain="com.example")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    model = helper.make_model(helper.make_graph([node], "custom", [x], [y]), opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    with pytest.raises(Rejected) as error:
        DmlpyBackend.prepare(model)
    assert isinstance(error.value, NotImplementedError) and is_rejection(error.value)
    assert "ONNX.UNSUPPORTED_OP" in error.value.rules
    assert not DmlpyBackend.is_compatible(model)


def test_a_node_that_is_invalid_fails_with_its_rule_and_is_not_a_rejection() -> None:
    node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[5, 5])  # a window larger than the 3x3 input
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 3, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = helper.make_model(helper.make_graph([node], "bad", [x], [y]), opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(dmlpy.DmlError) as error:
        DmlpyBackend.prepare(model)
    assert not isinstance(error.value, Rejected) and not is_rejection(error.value)
    assert error.value.rule == "ONNX.INVALID_ATTRIBUTE"
    outcome = run_case("AveragePool", type("Case", (), {"name": "bad", "model": model, "data_sets": [([np.zeros((1, 1, 3, 3), np.float32)], [np.zeros((1, 1, 1, 1), np.float32)])], "rtol": 1e-3, "atol": 1e-7})(), "numpy")
    assert (outcome.status, outcome.crash) == ("fail", False) and outcome.detail.startswith("ONNX.INVALID_ATTRIBUTE")


def test_the_runner_classifies_a_wrong_answer_as_a_failure_and_a_crash_as_one_too() -> None:
    model = two_outputs_model()
    wrong = type("Case", (), {"name": "wrong", "model": model, "data_sets": [([X], [np.maximum(X, 0) + 1, 1 / (1 + np.exp(-X))])], "rtol": 1e-3, "atol": 1e-7})()
    outcome = run_case("Relu", wrong, "numpy")
    assert (outcome.status, outcome.crash) == ("fail", False) and outcome.detail.startswith("mismatch")
    broken = type("Case", (), {"name": "broken", "model": model, "data_sets": [([X, X], [X])], "rtol": 1e-3, "atol": 1e-7})()
    outcome = run_case("Relu", broken, "numpy")
    assert (outcome.status, outcome.crash) == ("fail", True) and "ValueError" in outcome.detail


def test_a_model_of_another_domain_only_or_with_a_sequence_input_is_rejected_not_failed() -> None:
    ml_node = helper.make_node("Binarizer", ["x"], ["y"], domain="ai.onnx.ml", threshold=0.5)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    ml_only = helper.make_model(helper.make_graph([ml_node], "ml", [x], [y]), opset_imports=[helper.make_opsetid("ai.onnx.ml", 1)])
    with pytest.raises(Rejected):
        DmlpyBackend.prepare(ml_only)
    sequence = helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, ["N"])
    length = helper.make_tensor_value_info("n", TensorProto.INT64, [])
    model = helper.make_model(helper.make_graph([helper.make_node("SequenceLength", ["s"], ["n"])], "seq", [sequence], [length]), opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(Rejected) as error:
        DmlpyBackend.prepare(model)  # at prepare, not at run: a sequence is not a tensor whatever its shapes
    assert "ONNX.UNSUPPORTED_TYPE" in error.value.rules


def test_folding_makes_every_graph_input_but_the_nodes_first_an_initializer_with_the_cases_values() -> None:
    x = np.arange(2 * 1 * 4 * 4, dtype=np.float32).reshape(2, 1, 4, 4) / 8
    w = np.array([[[[1, -1], [2, 0.5]]]], np.float32)
    inputs = [helper.make_tensor_value_info("w", TensorProto.FLOAT, [1, 1, 2, 2]), helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 1, 4, 4])]
    model = helper.make_model(helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"])], "conv", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]),
                              opset_imports=[helper.make_opsetid("", 17)])  # fmt: skip
    result = folded(model, [w, x])
    assert [v.name for v in result.graph.input] == ["x"] and [t.name for t in result.graph.initializer] == ["w"]
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(result.graph.initializer[0]), w)
    (y,) = DmlpyBackend.run_model(result, [x], backend="numpy")
    expected = sum(w[0, 0, i, j] * x[:, :, i : i + 3, j : j + 3] for i in range(2) for j in range(2))  # the cross-correlation, written out
    np.testing.assert_allclose(y, expected, rtol=1e-6)
