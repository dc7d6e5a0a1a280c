"""DxDispatch JSON: every operator and graph is written in DxDispatch's format, reads back to equal
descs, and runs to the results dmlpy.run gives.

The format is checked by ``dxdispatch_format.format_errors``, written from DxDispatch's model format and
the C header, never from the writer. Expected values come from DxDispatch's own example model,
from ``dmlpy.run`` / the graph program (the pipeline the model must reproduce), and from
DxDispatch's parser rules for initializers (sequences accumulate in the element type).
"""

from __future__ import annotations

import copy
import json
import runpy
import shutil
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import assert_rule
from dxdispatch_format import format_errors
from export_cases import CASES, Case, case_ids, decoder

import dmlpy
from dmlpy import DML_OPERATOR_TYPE, buffer_tensor
from dmlpy.interop import dxdispatch as dx
from dmlpy.interop.dxdispatch import DxDispatchFormatError
from dmlpy.operators import REGISTRY
from dmlpy.structs import normalized

OP = DML_OPERATOR_TYPE


def same_desc(a: Any, b: Any) -> bool:
    """Equal as DirectML sees them: both normalized (DimensionCount derived, buffer descs wrapped)."""
    return normalized(a, "desc") == normalized(b, "desc")


def model_of(case: Case, **options: Any) -> tuple[Any, dict[str, np.ndarray], dict[str, Any]]:
    desc = case.build()
    inputs = case.inputs(np.random.default_rng(11))
    return desc, inputs, dx.operator_model(desc, inputs, **options)


def through_json(model: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(model, allow_nan=False))


def output_of(result: dx.RunResult, desc: Any, field: str = "OutputTensor") -> np.ndarray:
    """The printed (flat) resource read back through the output tensor's Sizes and Strides."""
    flat = result.shown[field]
    buffer = dmlpy.Buffer(flat.nbytes)
    buffer.data[:] = flat.view(np.uint8)
    return buffer.read(getattr(desc, field))


# ---------------------------------------------------------------------------------------
# Coverage of the registry


def test_every_registered_operator_has_an_export_case() -> None:
    """Every emulated operator whose fields DxDispatch's JSON can hold (ScaleBias, DML_SCALAR_UNION and FLOAT arrays it cannot yet)."""
    covered = {case.operator_type for case in CASES}
    missing = [t.name for t, spec in REGISTRY.items() if spec.emulated and t not in covered]
    assert not missing, f"add a case to tests/interop/export_cases.py for {missing}"


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_operator_model_follows_the_dxdispatch_format(case: Case) -> None:
    _, _, model = model_of(case)
    assert format_errors(through_json(model)) == []


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_operator_model_reads_back_to_an_equal_desc(case: Case) -> None:
    desc, _, model = model_of(case)
    parsed = dx.read_model(through_json(model))
    assert list(parsed.dispatchables) == ["op"]
    assert same_desc(parsed.dispatchables["op"], desc)


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_operator_model_runs_to_what_dmlpy_run_returns(case: Case) -> None:
    desc, inputs, model = model_of(case)
    expected = dmlpy.run(case.build(), backend="numpy", **inputs)
    result = dx.run_model(through_json(model), dmlpy.create_device(backend="numpy"))
    if isinstance(expected, tuple) and isinstance(getattr(desc, "OutputTensors", None), (list, tuple)):  # SPLIT: one resource per element of OutputTensors
        for i, part in enumerate(expected):
            np.testing.assert_array_equal(result.array(f"OutputTensors[{i}]"), part)
        return
    outputs = [s.name for s in REGISTRY[case.operator_type].support.slots if s.kind == "output" and getattr(desc, s.name) is not None]
    for field, want in zip(outputs, expected if isinstance(expected, tuple) else (expected,), strict=True):  # every output (max pooling's indices too)
        np.testing.assert_array_equal(output_of(result, desc, field), want)
        np.testing.assert_array_equal(result.array(field), want)


# ---------------------------------------------------------------------------------------
# What the writer says, field by field

CONV_BIAS_LEAKY = next(c for c in CASES if c.id == "grouped convolution with bias and a fused leaky relu")
CONV_NO_BIAS = next(c for c in CASES if c.id == "convolution without BiasTensor or FusedActivation")
CONV_OWNED = next(c for c in CASES if c.id == "convolution with an OWNED_BY_DML filter and a fused relu")
CONV_TRANSPOSE = next(c for c in CASES if c.id.startswith("transposed"))
POOL_FALSE = next(c for c in CASES if c.id == "average pooling with padding, IncludePadding FALSE")
POOL_TRUE = next(c for c in CASES if c.id == "average pooling with padding, IncludePadding TRUE")
POOL1 = next(c for c in CASES if c.id == "average pooling1 with Dilations")
S2D1_CRD = next(c for c in CASES if c.id == "space to depth1, Order COLUMN_ROW_DEPTH")
NHWC = next(c for c in CASES if c.id == "space to depth on NHWC strides")


def test_dispatchable_type_is_the_full_operator_type_name() -> None:
    _, _, model = model_of(CONV_BIAS_LEAKY)
    assert model["dispatchables"]["op"]["type"] == "DML_OPERATOR_CONVOLUTION"


def test_fused_activation_is_written_inline_with_its_parameters_and_no_tensors() -> None:
    _, _, model = model_of(CONV_BIAS_LEAKY)
    assert model["dispatchables"]["op"]["desc"]["FusedActivation"] == {"Type": "ACTIVATION_LEAKY_RELU", "Alpha": 0.1}


def test_fused_activation_without_parameters_is_only_its_type() -> None:
    _, _, model = model_of(CONV_OWNED)
    assert model["dispatchables"]["op"]["desc"]["FusedActivation"] == {"Type": "ACTIVATION_RELU"}


def test_missing_optional_bias_and_activation_are_left_out_of_desc_and_bindings() -> None:
    _, _, model = model_of(CONV_NO_BIAS)
    desc = model["dispatchables"]["op"]["desc"]
    assert "BiasTensor" not in desc and "FusedActivation" not in desc
    assert "BiasTensor" not in model["commands"][0]["bindings"] and "BiasTensor" not in model["resources"]


def test_owned_by_dml_input_is_bound_in_the_dispatchables_init_bindings_not_at_dispatch() -> None:
    _, _, model = model_of(CONV_OWNED)
    entry = model["dispatchables"]["op"]
    assert entry["bindings"] == {"FilterTensor": "FilterTensor"}
    assert entry["desc"]["FilterTensor"]["Flags"] == ["OWNED_BY_DML"]
    assert set(model["commands"][0]["bindings"]) == {"InputTensor", "BiasTensor", "OutputTensor"}


def test_bool_fields_are_json_booleans_both_ways() -> None:
    assert model_of(POOL_FALSE)[2]["dispatchables"]["op"]["desc"]["IncludePadding"] is False
    assert model_of(POOL_TRUE)[2]["dispatchables"]["op"]["desc"]["IncludePadding"] is True


@pytest.mark.parametrize(
    ("case", "field", "value"),
    [
        pytest.param(S2D1_CRD, "Order", "COLUMN_ROW_DEPTH", id="Order is written as its suffix"),
        pytest.param(CONV_TRANSPOSE, "Mode", "CONVOLUTION", id="Mode CONVOLUTION is written as its suffix"),
        pytest.param(CONV_TRANSPOSE, "Direction", "BACKWARD", id="Direction BACKWARD is written as its suffix"),
        pytest.param(POOL1, "Dilations", [2, 2], id="pooling1 Dilations are an array"),
        pytest.param(POOL1, "DimensionCount", 2, id="DimensionCount is written"),
    ],
)
def test_desc_field_is_written_as_dxdispatch_reads_it(case: Case, field: str, value: Any) -> None:
    assert model_of(case)[2]["dispatchables"]["op"]["desc"][field] == value


def test_strided_tensor_keeps_its_strides_and_its_resource_holds_the_strided_memory() -> None:
    _, inputs, model = model_of(NHWC)
    tensor = model["dispatchables"]["op"]["desc"]["InputTensor"]
    assert tensor["Strides"] == [48, 1, 12, 3]  # NHWC strides of {1, 3, 4, 4}
    memory = np.array(model["resources"]["InputTensor"]["initialValues"], dtype=np.float32)
    np.testing.assert_array_equal(memory, inputs["InputTensor"].transpose(0, 2, 3, 1).reshape(-1))


def test_nan_and_infinite_floats_are_written_as_dxdispatch_strings_and_read_back() -> None:
    desc = dmlpy.DML_ACTIVATION_LINEAR_OPERATOR_DESC(buffer_tensor("float32", (4,)), buffer_tensor("float32", (4,)), float("nan"), float("-inf"))
    fields = dx.desc_to_json(desc)
    assert (fields["Alpha"], fields["Beta"]) == ("nan", "-inf")
    back = dx.desc_from_json("ACTIVATION_LINEAR", fields, "op")
    assert np.isnan(back.Alpha) and back.Beta == float("-inf")


def test_write_model_writes_strict_json_that_reads_back(tmp_path: Path) -> None:
    desc, _, model = model_of(POOL1)
    path = dx.write_model(model, tmp_path / "pool1.json")
    assert json.loads(path.read_text(encoding="utf-8")) == model
    assert same_desc(dx.read_model(path).dispatchables["op"], desc)


def test_write_file_command_writes_the_output_as_npy(tmp_path: Path) -> None:
    _, _, model = model_of(POOL_TRUE, output_command="writeFile")
    assert model["commands"][1] == {"type": "writeFile", "resource": "OutputTensor", "targetPath": "OutputTensor.npy"}
    assert format_errors(model) == []
    result = dx.run_model(model, out_dir=tmp_path)
    np.testing.assert_array_equal(np.load(tmp_path / "OutputTensor.npy"), result.shown["OutputTensor"])


def test_execution_flags_and_compile_type_are_written_and_honoured() -> None:
    _, inputs, model = model_of(CONV_OWNED, execution_flags=dmlpy.DML_EXECUTION_FLAGS.DISABLE_META_COMMANDS, compile_type="DmlCompileGraph")
    entry = model["dispatchables"]["op"]
    assert entry["executionFlags"] == ["DISABLE_META_COMMANDS"] and entry["dmlCompileType"] == "DmlCompileGraph"
    assert format_errors(model) == []
    parsed = dx.read_model(model)
    assert parsed.compile_types["op"] == "DmlCompileGraph"
    np.testing.assert_array_equal(dx.run_model(parsed).array("OutputTensor"), dmlpy.run(CONV_OWNED.build(), **inputs))


def test_an_enum_value_with_no_name_cannot_be_written() -> None:
    desc = CONV_NO_BIAS.build()
    desc.Mode = 7
    with pytest.raises(ValueError, match="no DirectML name"):
        dx.desc_to_json(desc)


# ---------------------------------------------------------------------------------------
# DxDispatch's own example: a model written by hand

SPEC_EXAMPLE = {
    "$schema": "./_schema.json",
    "resources": {
        "x": {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 16, "valueStart": 0, "valueDelta": 1}},
        "y": {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 4, "value": 0}},
    },
    "dispatchables": {
        "avgpool": {
            "type": "DML_OPERATOR_AVERAGE_POOLING",
            "desc": {
                "InputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 4, 4]},
                "OutputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 2, 2]},
                "DimensionCount": 2,
                "Strides": [2, 2],
                "WindowSize": [2, 2],
                "StartPadding": [0, 0],
                "EndPadding": [0, 0],
                "IncludePadding": False,
            },
        }
    },
    "commands": [{"type": "dispatch", "dispatchable": "avgpool", "bindings": {"InputTensor": "x", "OutputTensor": "y"}}, {"type": "print", "resource": "y"}],
}


def test_reference_example_follows_the_format() -> None:
    assert format_errors(SPEC_EXAMPLE) == []


def test_reference_example_prints_its_documented_result() -> None:
    result = dx.run_model(SPEC_EXAMPLE)
    np.testing.assert_array_equal(result.shown["y"], [2.5, 4.5, 10.5, 12.5])


def test_reference_example_desc_has_the_sizes_dxdispatch_computes() -> None:
    desc = dx.read_model(SPEC_EXAMPLE).dispatchables["avgpool"]
    assert (desc.InputTensor.Desc.TotalTensorSizeInBytes, desc.OutputTensor.Desc.TotalTensorSizeInBytes) == (64, 16)
    assert desc.IncludePadding == 0 and desc.InputTensor.Desc.DimensionCount == 4


# ---------------------------------------------------------------------------------------
# Reading: as strict as DxDispatch, and the alternative spellings it accepts


def _set(path: str, value: Any) -> Any:
    def change(model: dict[str, Any]) -> None:
        *parents, last = path.split("/")
        target: Any = model
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        if value is _DELETE:
            del target[last]
        else:
            target[last] = value

    return change


_DELETE = object()
DESC = "dispatchables/avgpool/desc"

REJECTED = [
    pytest.param(_set(f"{DESC}/IncludePadding", 0), "BOOL fields are JSON true/false", id="a BOOL written as 0 is rejected"),
    pytest.param(_set(f"{DESC}/includePadding", False), "did you mean IncludePadding", id="a field name in the wrong case is rejected with a hint"),
    pytest.param(_set(f"{DESC}/WindowSize", _DELETE), "field 'WindowSize' is required", id="a missing required field is rejected"),
    pytest.param(_set(f"{DESC}/InputTensor/DataType", 1), "values are strings", id="an enum written as its integer is rejected"),
    pytest.param(_set(f"{DESC}/InputTensor/DataType", "float32"), "not a recognized value", id="enum spellings are case-sensitive"),
    pytest.param(_set(f"{DESC}/Strides", [2.0, 2]), "expected an unsigned integer", id="a float in a UINT array is rejected"),
    pytest.param(_set(f"{DESC}/DimensionCount", -2), "expected an unsigned integer", id="a negative UINT is rejected"),
    pytest.param(_set(f"{DESC}/InputTensor/sizes", [1]), "not a member of a tensor desc", id="an unknown tensor member is rejected"),
    pytest.param(_set("dispatchables/avgpool/type", "AVERAGE_POOL"), "not a recognized value for DML_OPERATOR_TYPE", id="an unknown operator type is rejected"),
    pytest.param(_set("dispatchables/avgpool/type", "DML_OPERATOR_ELEMENT_WISE_IDENTITY"), "are not fields of DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC", id="a desc with another operator's fields is rejected"),
    pytest.param(_set("dispatchables/avgpool/type", "hlsl"), "need DxDispatch itself", id="an hlsl dispatchable is refused"),
    pytest.param(_set("commands/0/bindings/Input", "x"), "has no bind point 'Input'", id="an unknown bind point is rejected"),
    pytest.param(_set("commands/0/bindings/InputTensor", "nothing"), "no resource is named 'nothing'", id="a binding to a missing resource is rejected"),
    pytest.param(_set("commands/0/dispatchable", "pool"), "no dispatchable is named 'pool'", id="a dispatch of a missing dispatchable is rejected"),
    pytest.param(_set("commands/1/type", "show"), "expected dispatch, print or writeFile", id="an unknown command type is rejected"),
    pytest.param(_set("commands/1/resource", "z"), "no resource is named 'z'", id="printing a missing resource is rejected"),
    pytest.param(_set("resources/x/initialValuesDataType", "FLOAT"), "not a recognized value", id="an unknown initialValuesDataType is rejected"),
    pytest.param(_set("resources/y/initialValues", []), "must be non-empty", id="empty initial values are rejected"),
    pytest.param(_set("resources/y/sizeInBytes", 8), "too small for the initialValues", id="a sizeInBytes below the data size is rejected"),
    pytest.param(_set("resources/y/initialValues", [1, "one"]), "expected a number or 'NaN'", id="a word in a float array is rejected"),
    pytest.param(_set("dispatchables/avgpool/dmlCompileType", "DmlCompileGraphs"), "not a recognized value", id="an unknown dmlCompileType is rejected"),
    pytest.param(_set("commands", {}), "an array named 'commands'", id="commands that are not an array are rejected"),
]


@pytest.mark.parametrize(("change", "message"), REJECTED)
def test_reader_rejects_what_dxdispatch_would_refuse(change: Any, message: str) -> None:
    model = copy.deepcopy(SPEC_EXAMPLE)
    change(model)
    with pytest.raises(DxDispatchFormatError, match=message):
        dx.read_model(model)


# An hlsl dispatchable is valid DxDispatch; dmlpy just cannot run it. Everything else is a format error.
NOT_FORMAT_ERRORS = {"an hlsl dispatchable is refused"}


@pytest.mark.parametrize(("change", "message"), [p for p in REJECTED if p.id not in NOT_FORMAT_ERRORS])
def test_format_checker_flags_the_same_mistakes(change: Any, message: str) -> None:
    model = copy.deepcopy(SPEC_EXAMPLE)
    change(model)
    assert format_errors(model), "the checker accepted a broken model"


ACCEPTED = [
    pytest.param(_set(f"{DESC}/InputTensor/DataType", "DML_TENSOR_DATA_TYPE_FLOAT32"), id="a full enum name is accepted"),
    pytest.param(_set("dispatchables/avgpool/type", "AVERAGE_POOLING"), id="an operator type without its prefix is accepted"),
    pytest.param(_set(f"{DESC}/InputTensor", {"Type": "BUFFER", "Desc": {"DataType": "FLOAT32", "Sizes": [1, 1, 4, 4]}}), id="the long tensor form is accepted"),
    pytest.param(_set(f"{DESC}/InputTensor/Flags", "NONE"), id="flags as one string are accepted"),
    pytest.param(_set(f"{DESC}/InputTensor/Strides", [16, 16, 4, 1]), id="explicit packed strides are accepted"),
    pytest.param(_set("resources/x/initialValues", list(range(16))), id="an array initializer is accepted"),
    pytest.param(_set("commands/0/bindings/InputTensor", {"name": "x", "elementOffset": 0, "elementSizeInBytes": 4}), id="a binding object is accepted"),
    pytest.param(_set("commands/0/bindings/OutputTensor", ["y"]), id="a one-element binding array is accepted"),
    pytest.param(_set("commands/1/type", "writeFile"), id="a writeFile without targetPath is rejected later, not here"),
]


@pytest.mark.parametrize("change", ACCEPTED[:-1])
def test_reader_accepts_dxdispatchs_alternative_spellings_with_the_same_result(change: Any) -> None:
    model = copy.deepcopy(SPEC_EXAMPLE)
    change(model)
    assert format_errors(model) == []
    np.testing.assert_array_equal(dx.run_model(model).shown["y"], [2.5, 4.5, 10.5, 12.5])


def test_write_file_without_target_path_is_rejected() -> None:
    model = copy.deepcopy(SPEC_EXAMPLE)
    ACCEPTED[-1].values[0](model)
    with pytest.raises(DxDispatchFormatError, match="'targetPath' is required"):
        dx.read_model(model)


def test_fused_activation_long_form_and_full_names_read_like_the_inline_form() -> None:
    desc, _, model = model_of(CONV_BIAS_LEAKY)
    fields = model["dispatchables"]["op"]["desc"]
    fields["FusedActivation"] = {"Type": "DML_OPERATOR_ACTIVATION_LEAKY_RELU", "Desc": {"Alpha": 0.1}}
    fields["Mode"] = "DML_CONVOLUTION_MODE_CROSS_CORRELATION"
    assert format_errors(model) == []
    assert same_desc(dx.read_model(model).dispatchables["op"], desc)


# ---------------------------------------------------------------------------------------
# Initializers, decoded as DxDispatch decodes them


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        pytest.param({"initialValuesDataType": "UINT16", "initialValues": {"valueCount": 3, "value": 7}}, np.array([7, 7, 7, 0], np.uint16), id="a constant fills valueCount elements, rounded up to 4 bytes"),
        pytest.param({"initialValuesDataType": "INT32", "initialValues": {"valueCount": 4, "valueStart": 10, "valueDelta": -3}}, np.array([10, 7, 4, 1], np.int32), id="a sequence adds valueDelta"),
        pytest.param(
            {"initialValuesDataType": "FLOAT16", "initialValues": {"valueCount": 4, "valueStart": 2048, "valueDelta": 1}},
            np.array([2048, 2048, 2048, 2048], np.float16),
            id="a FLOAT16 sequence accumulates in FLOAT16 (2048 + 1 rounds back to 2048)",
        ),
        pytest.param({"initialValuesDataType": "FLOAT32", "initialValues": ["nan", "inf", "-inf", 1.5]}, np.array([np.nan, np.inf, -np.inf, 1.5], np.float32), id="nan and inf strings are floats"),
        pytest.param({"initialValuesDataType": "UINT8", "initialValues": [1, 2], "initialValuesOffsetInBytes": 2, "sizeInBytes": 5}, np.array([0, 0, 1, 2, 0], np.uint8), id="an offset and an explicit size are not rounded"),
        pytest.param(
            {"initialValuesDataType": "UNKNOWN", "initialValues": [{"type": "UINT16", "value": 1}, {"type": "UINT16", "value": 2}]},
            np.array([1, 2], np.uint16),
            id="a typed list packs its elements",
        ),
    ],
)
def test_initializer_decodes_to_the_bytes_dxdispatch_writes(entry: dict[str, Any], expected: np.ndarray) -> None:
    _, memory = dx._initial_values(entry, "resources.r", None)
    np.testing.assert_array_equal(memory, expected.view(np.uint8))


def test_source_path_npy_is_read_relative_to_the_model(tmp_path: Path) -> None:
    np.save(tmp_path / "x.npy", np.arange(16, dtype=np.float32))
    model = copy.deepcopy(SPEC_EXAMPLE)
    model["resources"]["x"] = {"initialValues": {"sourcePath": "x.npy"}}
    (tmp_path / "model.json").write_text(json.dumps(model), encoding="utf-8")
    np.testing.assert_array_equal(dx.run_model(tmp_path / "model.json").shown["y"], [2.5, 4.5, 10.5, 12.5])


# ---------------------------------------------------------------------------------------
# Graphs


@pytest.fixture(scope="module")
def decoder_model() -> tuple[Any, dict[str, np.ndarray], dict[str, Any]]:
    program, inputs = decoder(backend="numpy")
    return program, inputs, dx.graph_model(program, inputs)


def test_graph_model_follows_the_dxdispatch_format(decoder_model: Any) -> None:
    assert format_errors(through_json(decoder_model[2])) == []


def test_graph_model_has_one_dispatchable_per_operator_node_dispatched_in_topological_order(decoder_model: Any) -> None:
    program, _, model = decoder_model
    types = [entry["type"] for entry in model["dispatchables"].values()]
    assert types == ["DML_OPERATOR_CONVOLUTION", "DML_OPERATOR_DEPTH_TO_SPACE1", "DML_OPERATOR_ACTIVATION_SIGMOID"]
    dispatched = [c["dispatchable"] for c in model["commands"] if c["type"] == "dispatch"]
    assert dispatched == list(model["dispatchables"])
    assert len(dispatched) == len(program.graph_desc.Nodes)


def test_graph_model_descs_equal_the_graphs_node_descs(decoder_model: Any) -> None:
    program, _, model = decoder_model
    parsed = dx.read_model(model)
    node_descs = [node.Desc.Operator.desc for node in program.graph_desc.Nodes]
    assert all(same_desc(a, b) for a, b in zip(parsed.dispatchables.values(), node_descs, strict=True))


def test_graph_model_routes_intermediates_through_their_own_resources(decoder_model: Any) -> None:
    _, _, model = decoder_model
    first, second, third = (c["bindings"] for c in model["commands"][:3])
    assert first["OutputTensor"] == "features" and second["InputTensor"] == "features"  # a graph output also feeds a node
    assert second["OutputTensor"] == third["InputTensor"] == "node1_depth_to_space1.OutputTensor"
    assert third["OutputTensor"] == "image"


def test_graph_model_binds_owned_weights_at_initialization(decoder_model: Any) -> None:
    _, _, model = decoder_model
    conv = next(iter(model["dispatchables"].values()))
    assert conv["bindings"] == {"FilterTensor": "w"}
    assert "FilterTensor" not in model["commands"][0]["bindings"]


def test_graph_model_prints_every_graph_output_and_runs_to_the_programs_results(decoder_model: Any) -> None:
    program, inputs, model = decoder_model
    assert [c["resource"] for c in model["commands"] if c["type"] == "print"] == ["image", "features"]
    expected = program(**inputs)
    result = dx.run_model(through_json(model), dmlpy.create_device(backend="numpy"))
    for name, value in expected.items():
        np.testing.assert_array_equal(result.array(name), value)


def test_node_output_feeding_two_graph_outputs_is_dispatched_once_per_extra_output() -> None:
    g = dmlpy.GraphBuilder(backend="numpy")
    x = g.input("x", "float32", (1, 1, 4, 4))
    y = g.average_pooling(x, window=(2, 2), strides=(2, 2))
    program = g.compile({"a": y, "b": y})
    inputs = {"x": np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)}
    model = dx.graph_model(program, inputs)
    assert format_errors(model) == []
    assert [c["bindings"]["OutputTensor"] for c in model["commands"] if c["type"] == "dispatch"] == ["a", "b"]
    result = dx.run_model(model)
    for name in ("a", "b"):
        np.testing.assert_array_equal(result.shown[name], [2.5, 4.5, 10.5, 12.5])  # DxDispatch's example model's values


def test_constant_node_becomes_a_resource_typed_like_its_consumer() -> None:
    g = dmlpy.GraphBuilder(backend="numpy")
    x = g.input("x", "float32", (1, 1, 3, 3))
    w = g.constant(np.full((1, 1, 2, 2), 0.25, np.float32), "w")
    conv = dmlpy.DML_CONVOLUTION_OPERATOR_DESC(None, None, None, buffer_tensor("float32", (1, 1, 2, 2)), dmlpy.DML_CONVOLUTION_MODE.CROSS_CORRELATION,
                                               dmlpy.DML_CONVOLUTION_DIRECTION.FORWARD, 2, (1, 1), (1, 1), (0, 0), (0, 0), (0, 0), 1, None)  # fmt: skip
    (y,) = g.add_operator(conv, {"InputTensor": x, "FilterTensor": w}, call="conv")
    program = g.compile({"y": y})
    inputs = {"x": np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)}
    model = dx.graph_model(program, inputs)
    assert format_errors(model) == []
    assert model["resources"]["w"] == {"initialValuesDataType": "FLOAT32", "initialValues": [0.25] * 4, "sizeInBytes": 16}
    # each 2x2 window of 0..8 averaged: (0+1+3+4)/4 = 2, 3, 5, 6
    np.testing.assert_array_equal(dx.run_model(model).shown["y"], [2, 3, 5, 6])


def test_operator_models_reproduce_each_node_with_its_real_inputs(decoder_model: Any) -> None:
    program, inputs, model = decoder_model
    per_node = dx.operator_models(model, device=dmlpy.create_device(backend="numpy"))
    assert list(per_node) == list(model["dispatchables"])
    expected = program(**inputs)
    for name, single in per_node.items():
        assert format_errors(single) == [], name
        assert len(single["dispatchables"]) == 1 and single["commands"][0]["dispatchable"] == name
    last = dx.run_model(per_node["node2_sigmoid2"], dmlpy.create_device(backend="numpy"))
    np.testing.assert_array_equal(last.array("image"), expected["image"])


def test_graph_desc_without_a_program_gets_names_from_its_edges(decoder_model: Any) -> None:
    program, inputs, _ = decoder_model
    model = dx.graph_model(program.graph_desc, inputs)
    assert {"z", "w", "b", "image", "features"} <= set(model["resources"])


def test_graph_model_names_missing_inputs(decoder_model: Any) -> None:
    program, inputs, _ = decoder_model
    with pytest.raises(TypeError, match="missing: w"):
        dx.graph_model(program, {k: v for k, v in inputs.items() if k != "w"})


# ---------------------------------------------------------------------------------------
# Checking without running


def test_check_model_reports_desc_findings_by_rule_and_dispatchable() -> None:
    model = copy.deepcopy(SPEC_EXAMPLE)
    model["dispatchables"]["avgpool"]["desc"]["OutputTensor"]["Sizes"] = [1, 1, 3, 3]
    found = dx.check_model(model)
    assert {f.where for f in found} == {"dispatchables.avgpool"}
    assert_rule([f.finding for f in found], "POOLING.OUTPUT_SIZE", "DML_AVERAGE_POOLING_OPERATOR_DESC.OutputTensor.Sizes[2]")


def test_check_model_reports_a_resource_too_small_for_its_tensor_as_a_binding_finding() -> None:
    model = copy.deepcopy(SPEC_EXAMPLE)
    model["resources"]["y"]["initialValues"]["valueCount"] = 2  # 8 bytes for a 16-byte tensor
    found = dx.check_model(model)
    assert found and all(f.where == "commands[0]" for f in found)
    assert all(f.finding.rule.startswith("BINDING.") for f in found), [f.finding.rule for f in found]


def test_check_model_of_a_valid_model_is_empty() -> None:
    assert dx.check_model(SPEC_EXAMPLE) == []


def test_run_model_raises_dml_error_for_a_desc_directml_rejects() -> None:
    model = copy.deepcopy(SPEC_EXAMPLE)
    model["dispatchables"]["avgpool"]["desc"]["WindowSize"] = [0, 2]
    with pytest.raises(dmlpy.DmlError):
        dx.run_model(model)


@pytest.mark.parametrize(("text", "level"), [("6.2", "LEVEL_6_2"), ("6_4", "LEVEL_6_4"), ("DML_FEATURE_LEVEL_5_1", "LEVEL_5_1"), ("0x4000", "LEVEL_4_0")])
def test_feature_level_spellings_parse(text: str, level: str) -> None:
    assert dx.parse_feature_level(text) == dmlpy.DML_FEATURE_LEVEL[level]


def test_every_case_is_valid_so_round_trips_test_real_descs() -> None:
    for case in CASES:
        assert dmlpy.validate(case.build()).errors == [], case.id
    assert {OP.CONVOLUTION, OP.AVERAGE_POOLING1, OP.SPACE_TO_DEPTH1} <= {c.operator_type for c in CASES}


# ---------------------------------------------------------------------------------------
# The samples

SAMPLES_DIR = Path(__file__).resolve().parents[2] / "samples"
SAMPLES = sorted(p for p in SAMPLES_DIR.glob("[0-9]*.py") if p.name != "07_export.py")


def _run_sample(path: Path, argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", [str(path), *argv])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the samples show warnings on purpose
        runpy.run_path(str(path), run_name="__main__")


@pytest.mark.parametrize("sample", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_every_operator_a_sample_creates_exports_to_dxdispatch_json_that_reads_back(sample: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    created: list[Any] = []
    original = dmlpy.Device.create_operator

    def recording(self: dmlpy.Device, desc: Any) -> Any:
        operator = original(self, desc)
        created.append(operator.desc)
        return operator

    monkeypatch.setattr(dmlpy.Device, "create_operator", recording)
    _run_sample(sample, [], monkeypatch)
    capsys.readouterr()
    assert created, f"{sample.name} creates no operator"
    for desc in created:
        spec = REGISTRY[dmlpy.operator_desc(desc).Type]
        inputs = {s.name: np.zeros(getattr(desc, s.name).Desc.Sizes, getattr(desc, s.name).Desc.dtype) for s in spec.support.inputs if getattr(desc, s.name) is not None}
        model = through_json(dx.operator_model(desc, inputs))
        assert format_errors(model) == [], type(desc).__name__
        assert same_desc(dx.read_model(model).dispatchables["op"], desc)


def test_export_sample_writes_files_that_follow_the_format_and_read_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _run_sample(SAMPLES_DIR / "07_export.py", [str(tmp_path)], monkeypatch)
    assert "compiles with g++" in capsys.readouterr().out or shutil.which("g++") is None
    files = sorted(tmp_path.glob("*.json"))
    assert [f.name for f in files] == ["graph.json", "node0_upsample0.json", "node1_pixel_shuffle1.json", "node2_sigmoid2.json"]
    for file in files:
        assert format_errors(json.loads(file.read_text(encoding="utf-8"))) == [], file.name
        assert dx.read_model(file).dispatchables


def test_operator_models_take_each_dispatchs_inputs_as_they_were_before_it_ran() -> None:
    model = copy.deepcopy(SPEC_EXAMPLE)
    tensor = {"DataType": "FLOAT32", "Sizes": [1, 1, 2, 2]}
    model["dispatchables"]["copy_back"] = {"type": "ACTIVATION_IDENTITY", "desc": {"InputTensor": tensor, "OutputTensor": tensor}}
    model["commands"].insert(1, {"type": "dispatch", "dispatchable": "copy_back", "bindings": {"InputTensor": "y", "OutputTensor": "x"}})  # overwrites x
    per_dispatch = dx.operator_models(model)
    assert per_dispatch["avgpool"]["resources"]["x"]["initialValues"] == list(range(16))  # not what copy_back left in x
    assert per_dispatch["copy_back"]["resources"]["y"]["initialValues"] == [2.5, 4.5, 10.5, 12.5]
    np.testing.assert_array_equal(dx.run_model(per_dispatch["avgpool"]).shown["y"], [2.5, 4.5, 10.5, 12.5])


def test_init_bindings_name_input_bind_points_only() -> None:
    model = copy.deepcopy(SPEC_EXAMPLE)
    model["dispatchables"]["avgpool"]["bindings"] = {"OutputTensor": "y"}
    with pytest.raises(DxDispatchFormatError, match="initialization binds inputs only"):
        dx.read_model(model)
    assert format_errors(model)


def test_init_binding_of_an_input_that_is_not_owned_by_dml_is_judged_by_directmls_rule() -> None:
    model = copy.deepcopy(SPEC_EXAMPLE)
    model["dispatchables"]["avgpool"]["bindings"] = {"InputTensor": "x"}  # DxDispatch passes it to the initializer
    assert_rule([f.finding for f in dx.check_model(model)], "BINDING.UNOWNED_INPUT_AT_INITIALIZE")


# ---------------------------------------------------------------------------------------
# Parsing as DxDispatch parses (rapidjson with comments, trailing commas, full-precision numbers)

UINT64_EDGES = [2**63, 2**64 - 1, 0, 2**63 - 1]  # past INT64's range and its neighbours


@pytest.mark.parametrize(
    ("initial_values", "expected"),
    [
        pytest.param(UINT64_EDGES, UINT64_EDGES, id="a UINT64 list past 2**63"),
        pytest.param({"valueCount": 2, "value": 2**64 - 1}, [2**64 - 1] * 2, id="a UINT64 constant of 2**64 - 1"),
        pytest.param({"valueCount": 3, "valueStart": 2**63, "valueDelta": 2**62}, [2**63, 2**63 + 2**62, 0], id="a UINT64 sequence wraps modulo 2**64"),
    ],
)
def test_uint64_initial_values_past_2_63_read_back_exactly(initial_values: Any, expected: list[int]) -> None:
    _, memory = dx._initial_values({"initialValuesDataType": "UINT64", "initialValues": initial_values}, "resources.r", None)
    assert memory.view(np.uint64).tolist() == expected


def test_typed_list_element_of_uint64_past_2_63_reads_back_exactly() -> None:
    entry = {"initialValues": [{"type": "UINT64", "value": 2**64 - 1}, {"type": "UINT8", "value": 7}]}
    _, memory = dx._initial_values(entry, "resources.r", None)
    assert memory[:8].view(np.uint64).tolist() == [2**64 - 1] and memory[8] == 7


def test_uint64_resource_dmlpy_writes_round_trips_through_a_file(tmp_path: Path) -> None:
    model = copy.deepcopy(SPEC_EXAMPLE)
    model["resources"]["big"] = dx.resource(dmlpy.DML_TENSOR_DATA_TYPE.UINT64, np.array(UINT64_EDGES, dtype=np.uint64))
    assert model["resources"]["big"]["initialValues"] == UINT64_EDGES
    parsed = dx.read_model(dx.write_model(model, tmp_path / "big.json"))
    assert parsed.resources["big"].view(np.uint64).tolist() == UINT64_EDGES


@pytest.mark.parametrize(
    ("data_type", "value"),
    [
        pytest.param("UINT64", 2**64, id="2**64 does not fit UINT64"),
        pytest.param("UINT64", -1, id="-1 does not fit UINT64"),
        pytest.param("INT64", 2**63, id="2**63 does not fit INT64"),
        pytest.param("INT64", -(2**63) - 1, id="-2**63 - 1 does not fit INT64"),
        pytest.param("UINT8", 256, id="256 does not fit UINT8"),
    ],
)
def test_integer_initial_value_beyond_its_type_is_a_format_error_naming_the_type(data_type: str, value: int) -> None:
    with pytest.raises(DxDispatchFormatError, match=f"fits {data_type}"):
        dx._initial_values({"initialValuesDataType": data_type, "initialValues": [0, value]}, "resources.r", None)


@pytest.mark.parametrize(
    ("data_type", "value"),
    [
        pytest.param("UINT64", 2**64, id="2**64 cannot be written as UINT64"),
        pytest.param("UINT64", -1, id="-1 cannot be written as UINT64"),
        pytest.param("UINT8", 300, id="300 cannot be written as UINT8"),
    ],
)
def test_resource_value_beyond_its_type_cannot_be_written(data_type: str, value: int) -> None:
    with pytest.raises(ValueError, match=f"does not fit {data_type}"):
        dx.resource(dmlpy.DML_TENSOR_DATA_TYPE[data_type], [0, value])


def test_float_initial_value_that_no_double_holds_exactly_is_refused_as_rapidjson_does() -> None:
    # rapidjson keeps 2**63 + 1 as an integer, and takes an integer as a float only when lossless
    with pytest.raises(DxDispatchFormatError, match="no double holds exactly"):
        dx._initial_values({"initialValuesDataType": "FLOAT32", "initialValues": [2**63 + 1]}, "resources.r", None)
    _, memory = dx._initial_values({"initialValuesDataType": "FLOAT64", "initialValues": [2**63, 2**64 + 1]}, "resources.r", None)
    assert memory.view(np.float64).tolist() == [2.0**63, 2.0**64]  # 2**64 + 1 is past UINT64: rapidjson reads a double


COMMENTED_MODEL = """// a DxDispatch model as people write them
{
    /* the input: 0..15 */
    "resources": {
        "x": { "initialValuesDataType": "FLOAT32", "initialValues": { "valueCount": 16, "valueStart": 0, "valueDelta": 1, }, },
        "y": { "initialValuesDataType": "FLOAT32", "initialValues": { "valueCount": 4, "value": 0 } }, // the output
    },
    "dispatchables": {
        "avgpool": {
            "type": "DML_OPERATOR_AVERAGE_POOLING",
            "desc": {
                "InputTensor": { "DataType": "FLOAT32", "Sizes": [1, 1, 4, 4,] },
                "OutputTensor": { "DataType": "FLOAT32", "Sizes": [1, 1, 2, 2] },
                "DimensionCount": 2, "Strides": [2, 2], "WindowSize": [2, 2],
                "StartPadding": [0, 0], "EndPadding": [0, 0], "IncludePadding": false,
            }
        }
    },
    "commands": [
        { "type": "dispatch", "dispatchable": "avgpool", "bindings": { "InputTensor": "x", "OutputTensor": "y" } },
        { "type": "print", "resource": "y" },
    ],
}
text after the model is never read
"""


def test_model_with_comments_and_trailing_commas_reads_as_dxdispatch_parses_it(tmp_path: Path) -> None:
    path = tmp_path / "commented.json"
    path.write_text(COMMENTED_MODEL, encoding="utf-8")
    np.testing.assert_array_equal(dx.run_model(path).shown["y"], [2.5, 4.5, 10.5, 12.5])


def test_comment_markers_inside_strings_are_text() -> None:
    assert dx.parse_json('{"a": "x // y /* z */,]", "b": [1, 2,],}') == {"a": "x // y /* z */,]", "b": [1, 2]}


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('{"a": NaN}', id="a NaN literal is refused"),
        pytest.param('{"a": [,]}', id="a lone comma is refused"),
        pytest.param('{"a": [1,,]}', id="two commas are refused"),
        pytest.param('{"a": 1 /* unterminated', id="an unterminated comment is refused"),
    ],
)
def test_text_rapidjson_refuses_is_a_format_error(text: str) -> None:
    with pytest.raises(DxDispatchFormatError, match="not JSON"):
        dx.parse_json(text)


@pytest.mark.parametrize("number", ["1e400", "-1e400", "1" + "0" * 400], ids=["1e400", "-1e400", "a 401-digit integer"])
def test_number_too_big_for_a_double_is_refused_as_rapidjson_does(number: str) -> None:
    values = dx.parse_json(f"[1.5, {number}]")
    with pytest.raises(DxDispatchFormatError, match="does not fit a double"):
        dx._initial_values({"initialValuesDataType": "FLOAT32", "initialValues": values}, "resources.r", None)


def test_dispatchable_kind_is_the_lowercase_type_member_only() -> None:
    model = copy.deepcopy(SPEC_EXAMPLE)
    entry = model["dispatchables"]["avgpool"]
    entry["Type"] = entry.pop("type")  # DxDispatch: "Field 'type' is required."
    with pytest.raises(DxDispatchFormatError, match="field 'type' is required"):
        dx.read_model(model)
    assert format_errors(model)


def test_fused_activation_type_may_be_lowercase_as_dxdispatchs_operator_parser_allows() -> None:
    desc, _, model = model_of(CONV_BIAS_LEAKY)
    fields = model["dispatchables"]["op"]["desc"]
    fields["FusedActivation"] = {"type": "ACTIVATION_LEAKY_RELU", "Alpha": 0.1}
    assert same_desc(dx.read_model(model).dispatchables["op"], desc)


# ---------------------------------------------------------------------------------------
# Large initial values live in .npy files; files are read as DxDispatch reads them


def big_pool_model() -> tuple[dict[str, Any], np.ndarray]:
    x = np.random.default_rng(5).standard_normal((1, 1, 64, 64)).astype(np.float32)  # 16 KiB, past the 4 KiB limit
    desc = dmlpy.DML_AVERAGE_POOLING_OPERATOR_DESC(buffer_tensor("float32", (1, 1, 64, 64)), buffer_tensor("float32", (1, 1, 32, 32)), 2, (2, 2), (2, 2), (0, 0), (0, 0), False)
    return dx.operator_model(desc, {"InputTensor": x}, name="pool"), x


def test_large_initial_values_are_written_as_an_npy_file_beside_the_model(tmp_path: Path) -> None:
    model, x = big_pool_model()
    path = dx.write_model(model, tmp_path / "big.json")
    written = json.loads(path.read_text(encoding="utf-8"))
    assert written["resources"]["InputTensor"]["initialValues"] == {"sourcePath": "big_InputTensor.npy"}
    assert written["resources"]["OutputTensor"] == model["resources"]["OutputTensor"]  # a {valueCount, value} stays inline
    with (tmp_path / "big_InputTensor.npy").open("rb") as f:  # the header DxDispatch's reader types the data by
        assert np.lib.format.read_magic(f) == (1, 0)
        header = np.lib.format.read_array_header_1_0(f)
    assert header == ((4096,), False, np.dtype("<f4"))  # descr '<f4' is FLOAT32 to DxDispatch
    np.testing.assert_array_equal(np.load(tmp_path / "big_InputTensor.npy"), x.reshape(-1))
    assert isinstance(model["resources"]["InputTensor"]["initialValues"], list), "write_model changed its argument"
    assert format_errors(written) == []


def test_model_with_its_weights_in_a_file_runs_to_the_mean_of_each_window(tmp_path: Path) -> None:
    model, x = big_pool_model()
    path = dx.write_model(model, tmp_path / "big.json")
    expected = x.astype(np.float64).reshape(32, 2, 32, 2).mean(axis=(1, 3))  # 2x2 windows, stride 2
    np.testing.assert_allclose(dx.run_model(path).array("OutputTensor").reshape(32, 32), expected, rtol=1e-5, atol=1e-6)
    assert np.array_equal(dx.read_model(path).resources["InputTensor"], dx.read_model(model).resources["InputTensor"])


def test_small_initial_values_stay_inline(tmp_path: Path) -> None:
    _, _, model = model_of(POOL1)
    written = json.loads(dx.write_model(model, tmp_path / "pool1.json").read_text(encoding="utf-8"))
    assert written == model and not list(tmp_path.glob("*.npy"))


def test_written_models_name_no_schema_file(decoder_model: Any) -> None:
    _, _, model = model_of(POOL1)
    assert "$schema" not in model and "$schema" not in decoder_model[2]
    assert all("$schema" not in m for m in dx.operator_models(decoder_model[2]).values())


def test_dat_source_is_raw_bytes_of_the_initial_values_data_type(tmp_path: Path) -> None:
    np.arange(16, dtype=np.float32).tofile(tmp_path / "x.dat")
    model = copy.deepcopy(SPEC_EXAMPLE)
    model["resources"]["x"] = {"initialValuesDataType": "FLOAT32", "initialValues": {"sourcePath": "x.dat"}}
    (tmp_path / "model.json").write_text(json.dumps(model), encoding="utf-8")
    np.testing.assert_array_equal(dx.run_model(tmp_path / "model.json").shown["y"], [2.5, 4.5, 10.5, 12.5])
    del model["resources"]["x"]["initialValuesDataType"]  # raw bytes carry no type
    with pytest.raises(DxDispatchFormatError, match="'initialValuesDataType' is required"):
        dx.read_model(model, base_dir=tmp_path)


def test_big_endian_npy_source_reads_as_its_values(tmp_path: Path) -> None:
    np.save(tmp_path / "x.npy", np.arange(16, dtype=">f4"))
    _, memory = dx._initial_values({"initialValues": {"sourcePath": "x.npy"}}, "resources.x", tmp_path)
    np.testing.assert_array_equal(memory.view(np.float32), np.arange(16, dtype=np.float32))


@pytest.mark.parametrize(
    ("array", "message"),
    [
        pytest.param(np.asfortranarray(np.ones((2, 3), np.float32)), "Fortran order", id="a Fortran-order array is refused"),
        pytest.param(np.ones(3, np.complex64), "no DML_TENSOR_DATA_TYPE", id="a complex array is refused"),
        pytest.param(np.array([1, "a"], dtype=object), "not a .npy file DxDispatch reads", id="an object array is refused"),
    ],
)
def test_npy_source_dxdispatch_cannot_read_is_a_format_error(tmp_path: Path, array: np.ndarray, message: str) -> None:
    np.save(tmp_path / "x.npy", array, allow_pickle=True)
    with pytest.raises(DxDispatchFormatError, match=message):
        dx._initial_values({"initialValues": {"sourcePath": "x.npy"}}, "resources.x", tmp_path)
