"""The ten emulated activations standalone: values, onnxruntime, rules, feature levels, in-place binding.

Fused use (inside a convolution) is tested in test_convolution_rules.py (the fusion rules) and
test_convolution_kernels.py (the values). Expected values below were computed by hand (or with a
calculator) from each DirectML page's formula at x = -2, -0.5, 0, 0.5, 2.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest
from activation_oracles import ALL, MORE, Activation, onnx_activation_nodes, oracle_activation, run_onnx
from conftest import assert_rule, rule_ids
from test_activation_kernels_more import HAND_COMPUTED as MORE_HAND_COMPUTED

import dmlpy
from dmlpy import D3D12_RESOURCE_BARRIER
from dmlpy import (
    DML_ACTIVATION_GELU_OPERATOR_DESC,
    DML_ACTIVATION_RELU_OPERATOR_DESC,
    DML_ACTIVATION_SOFTPLUS_OPERATOR_DESC,
    DML_FEATURE_LEVEL,
    DML_OPERATOR_TYPE,
    DML_TENSOR_DATA_TYPE,
    FusedActivation,
    buffer_binding,
    buffer_tensor,
)

DT = DML_TENSOR_DATA_TYPE
FL = DML_FEATURE_LEVEL
OP = DML_OPERATOR_TYPE
X = np.array([-2.0, -0.5, 0.0, 0.5, 2.0], dtype=np.float32).reshape(1, 1, 1, 5)

HAND_COMPUTED = [
    pytest.param(Activation("IDENTITY"), [-2.0, -0.5, 0.0, 0.5, 2.0], id="IDENTITY keeps x"),
    pytest.param(Activation("LINEAR", (2.0, 1.0)), [-3.0, 0.0, 1.0, 2.0, 5.0], id="LINEAR(2, 1) is 2x + 1"),
    pytest.param(Activation("RELU"), [0.0, 0.0, 0.0, 0.5, 2.0], id="RELU clamps negatives to 0"),
    pytest.param(Activation("LEAKY_RELU", (0.1,)), [-0.2, -0.05, 0.0, 0.5, 2.0], id="LEAKY_RELU(0.1) scales negatives by 0.1"),
    pytest.param(Activation("SIGMOID"), [0.11920292202211755, 0.3775406687981454, 0.5, 0.6224593312018546, 0.8807970779778823], id="SIGMOID(0) is 0.5"),
    pytest.param(Activation("TANH"), [-0.9640275800758169, -0.46211715726000974, 0.0, 0.46211715726000974, 0.9640275800758169], id="TANH is odd"),
    pytest.param(Activation("ELU", (1.0,)), [-0.8646647167633873, -0.3934693402873666, 0.0, 0.5, 2.0], id="ELU(1) is e^x - 1 below 0"),
    pytest.param(Activation("HARD_SIGMOID", (0.2, 0.5)), [0.1, 0.4, 0.5, 0.6, 0.9], id="HARD_SIGMOID(0.2, 0.5) is 0.2x + 0.5 inside [0, 1]"),
    pytest.param(Activation("HARD_SIGMOID", (1.0, 0.5)), [0.0, 0.0, 0.5, 1.0, 1.0], id="HARD_SIGMOID(1, 0.5) clips at 0 and 1"),
    pytest.param(Activation("SOFTPLUS", (1.0,)), [0.1269280110429725, 0.4740769841801067, 0.6931471805599453, 0.9740769841801067, 2.1269280110429727], id="SOFTPLUS(1)(0) is ln 2"),
    pytest.param(Activation("SOFTPLUS", (2.0,)), [0.009074963958904869, 0.15663084375911143, 0.34657359027997264, 0.6566308437591114, 2.0090749639589047], id="SOFTPLUS(2)(0) is ln 2 / 2"),
    pytest.param(Activation("GELU"), [-0.04550026389635842, -0.15426876936299344, 0.0, 0.34573123063700656, 1.9544997361036416], id="GELU(2) is 2 * Phi(2)"),
]

# with the activations test_activation_kernels_more.py adds, values worked from their pages
EVERY_HAND_COMPUTED = HAND_COMPUTED + MORE_HAND_COMPUTED


def standalone(activation: Activation, sizes: tuple[int, ...] = (1, 1, 1, 5), dtype: Any = np.float32, out_sizes: tuple[int, ...] | None = None,
               out_dtype: Any = None) -> Any:  # fmt: skip
    return activation.standalone(buffer_tensor(dtype, sizes), buffer_tensor(out_dtype or dtype, out_sizes or sizes))


@pytest.mark.doc_example
@pytest.mark.parametrize(("activation", "expected"), EVERY_HAND_COMPUTED)
def test_activation_matches_hand_computed_values(device: dmlpy.Device, activation: Activation, expected: list[float]) -> None:
    y = dmlpy.run(standalone(activation), device=device, InputTensor=X)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.ravel(), np.array(expected, dtype=np.float32), rtol=2e-7, atol=1e-7)


@pytest.mark.parametrize(("activation", "expected"), EVERY_HAND_COMPUTED)
def test_the_test_oracle_matches_the_hand_computed_values(activation: Activation, expected: list[float]) -> None:
    """The element-wise oracle the convolution tests use must itself be right."""
    np.testing.assert_allclose(oracle_activation(activation, X).ravel(), expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("activation", ALL + MORE, ids=str)
@pytest.mark.parametrize(
    ("sizes", "dtype"),
    [((2, 3, 4, 5), np.float32), ((7,), np.float32), ((2, 1, 2, 1, 2, 1, 2, 3), np.float32), ((3, 2, 4, 5, 2), np.float16)],
    ids=["4-D fp32", "1-D fp32", "8-D fp32", "5-D fp16"],
)
def test_activation_agrees_with_onnxruntime(device: dmlpy.Device, activation: Activation, sizes: tuple[int, ...], dtype: Any) -> None:
    pytest.importorskip("onnxruntime")
    x = np.random.default_rng(len(sizes)).uniform(-4, 4, size=sizes).astype(dtype)
    y = dmlpy.run(standalone(activation, sizes, dtype), device=device, InputTensor=x)
    nodes, initializers = onnx_activation_nodes(activation, "X", "Y")
    expected = run_onnx(nodes, initializers, {"X": x.astype(np.float32)})
    tolerance = {"rtol": 1e-5, "atol": 1e-6} if dtype == np.float32 else {"rtol": 1e-3, "atol": 1e-3}
    assert y.dtype == dtype
    np.testing.assert_allclose(y.astype(np.float64), expected, **tolerance, err_msg=str(activation))


@pytest.mark.parametrize("activation", ALL, ids=str)
def test_activation_agrees_with_the_element_wise_oracle_through_strides(device: dmlpy.Device, activation: Activation) -> None:
    """NHWC input and a padded output layout give the same logical values."""
    sizes = (2, 3, 4, 5)
    x = np.random.default_rng(7).uniform(-3, 3, size=sizes).astype(np.float32)
    desc = activation.standalone(buffer_tensor(np.float32, sizes, dmlpy.nhwc_strides(sizes)),
                                 buffer_tensor(np.float32, sizes, dmlpy.packed_strides((2, 3, 4, 7))))  # fmt: skip
    y = dmlpy.run(desc, device=device, InputTensor=x)
    np.testing.assert_allclose(y, oracle_activation(activation, x), rtol=1e-6, atol=1e-6)


def test_large_magnitudes_give_the_limits_without_warnings(device: dmlpy.Device) -> None:
    """exp must never overflow inside the kernels: sigmoid(-1000) = 0, softplus(1000) = 1000, elu(1000) = 1000."""
    x = np.array([-1000.0, 1000.0], dtype=np.float32).reshape(1, 1, 1, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert dmlpy.run(standalone(Activation("SIGMOID"), (1, 1, 1, 2)), device=device, InputTensor=x).ravel().tolist() == [0.0, 1.0]
        assert dmlpy.run(standalone(Activation("SOFTPLUS", (1.0,)), (1, 1, 1, 2)), device=device, InputTensor=x).ravel().tolist() == [0.0, 1000.0]
        elu = dmlpy.run(standalone(Activation("ELU", (1.0,)), (1, 1, 1, 2)), device=device, InputTensor=x).ravel()
        assert elu.tolist() == [-1.0, 1000.0]


def test_float16_overflow_saturates_to_infinity(device: dmlpy.Device) -> None:
    """LINEAR(1000, 0) of 100 is 1e5, beyond binary16's 65504: +inf, as hardware stores it."""
    x = np.array([100.0, -100.0, 1.0, 0.0], dtype=np.float16).reshape(1, 1, 2, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = dmlpy.run(standalone(Activation("LINEAR", (1000.0, 0.0)), (1, 1, 2, 2), np.float16), device=device, InputTensor=x)
    assert y.ravel().tolist() == [math.inf, -math.inf, 1000.0, 0.0]


# ---------------------------------------------------------------------------------------
# Rules of the standalone operators

ACT = "DML_ACTIVATION_RELU_OPERATOR_DESC"
SIG = "DML_ACTIVATION_SIGMOID_OPERATOR_DESC"

RULE_CASES = [
    pytest.param(standalone(Activation("RELU"), out_dtype=np.float16), FL.LEVEL_6_4, "ACTIVATION.SAME_DATA_TYPE", f"{ACT}.OutputTensor.DataType", id="a FLOAT16 output for a FLOAT32 input is rejected"),
    pytest.param(standalone(Activation("RELU"), out_sizes=(1, 1, 5)), FL.LEVEL_6_4, "ACTIVATION.SAME_DIMENSION_COUNT", f"{ACT}.OutputTensor.DimensionCount", id="a 3-D output for a 4-D input is rejected"),
    pytest.param(standalone(Activation("RELU"), out_sizes=(1, 1, 5, 1)), FL.LEVEL_6_4, "ACTIVATION.SAME_SIZES", f"{ACT}.OutputTensor.Sizes", id="{1, 1, 5, 1} for {1, 1, 1, 5} is rejected: no reshape"),
    pytest.param(standalone(Activation("SOFTPLUS", (0.5,))), FL.LEVEL_6_4, "ACTIVATION.SOFTPLUS_STEEPNESS", "DML_ACTIVATION_SOFTPLUS_OPERATOR_DESC.Steepness", id="Steepness 0.5 is below 1"),
    pytest.param(DML_ACTIVATION_SOFTPLUS_OPERATOR_DESC(buffer_tensor(np.float32, (1, 1, 1, 5)), buffer_tensor(np.float32, (1, 1, 1, 5))), FL.LEVEL_6_4,
                 "ACTIVATION.SOFTPLUS_STEEPNESS", "DML_ACTIVATION_SOFTPLUS_OPERATOR_DESC.Steepness", id="C's zero Steepness is rejected"),
    pytest.param(standalone(Activation("SOFTPLUS", (math.nan,))), FL.LEVEL_6_4, "ACTIVATION.SOFTPLUS_STEEPNESS", "DML_ACTIVATION_SOFTPLUS_OPERATOR_DESC.Steepness", id="a NaN Steepness is rejected"),
    pytest.param(standalone(Activation("GELU")), FL.LEVEL_5_0, "OPERATOR.FEATURE_LEVEL", "DML_ACTIVATION_GELU_OPERATOR_DESC", id="GELU does not exist at FL 5.0"),
    pytest.param(standalone(Activation("RELU"), (1, 1, 1, 1, 5)), FL.LEVEL_1_0, "TENSOR.DIMENSION_COUNT_SUPPORT", f"{ACT}.InputTensor.DimensionCount", id="5-D is rejected at FL 1.0 (exactly 4)"),
    pytest.param(standalone(Activation("RELU"), (1, 5)), FL.LEVEL_2_1, "TENSOR.DIMENSION_COUNT_SUPPORT", f"{ACT}.InputTensor.DimensionCount", id="2-D is rejected at FL 2.1 (4 to 5)"),
    pytest.param(standalone(Activation("RELU"), (1,) * 9), FL.LEVEL_6_4, "TENSOR.DIMENSION_COUNT_SUPPORT", f"{ACT}.InputTensor.DimensionCount", id="9-D is rejected at FL 6.4 (1 to 8)"),
    pytest.param(standalone(Activation("RELU"), dtype=np.int32), FL.LEVEL_5_0, "TENSOR.DATA_TYPE_SUPPORT", f"{ACT}.InputTensor.DataType", id="INT32 is outside FLOAT32/FLOAT16 before FL 5.1"),
    pytest.param(standalone(Activation("SIGMOID"), dtype=np.int32), FL.LEVEL_6_4, "TENSOR.DATA_TYPE_SUPPORT", f"{SIG}.InputTensor.DataType", id="SIGMOID takes no integers at any level"),
]


@pytest.mark.parametrize(("desc", "level", "rule_id", "path"), RULE_CASES)
def test_activation_rule_is_reported_at_its_field(desc: Any, level: FL, rule_id: str, path: str) -> None:
    assert_rule(dmlpy.validate(desc, feature_level=level), rule_id, path)
    with pytest.raises(dmlpy.DmlError) as caught:
        dmlpy.create_device(level, backend="numpy").create_operator(desc)
    assert caught.value.hresult == dmlpy.HRESULT.E_INVALIDARG
    assert_rule(caught.value, rule_id, path)


@pytest.mark.parametrize(
    ("sizes", "level"),
    [((1, 1, 2, 2), FL.LEVEL_1_0), ((1, 1, 1, 2, 2), FL.LEVEL_2_0), ((4,), FL.LEVEL_3_0), ((1,) * 7 + (3,), FL.LEVEL_3_0)],
    ids=["4-D at FL 1.0", "5-D at FL 2.0", "1-D at FL 3.0", "8-D at FL 3.0"],
)
def test_activation_ranks_follow_the_support_table(sizes: tuple[int, ...], level: FL) -> None:
    report = dmlpy.validate(standalone(Activation("TANH"), sizes), feature_level=level)
    assert report.ok and not report.findings, str(report)


def test_gelu_exists_from_fl_5_1() -> None:
    assert dmlpy.create_device(FL.LEVEL_5_1, backend="numpy").create_operator(standalone(Activation("GELU"))).name == "DML_OPERATOR_ACTIVATION_GELU"


def test_steepness_message_quotes_the_bound() -> None:
    finding = assert_rule(dmlpy.validate(standalone(Activation("SOFTPLUS", (0.5,)))), "ACTIVATION.SOFTPLUS_STEEPNESS")
    assert finding.message.startswith("is 0.5, expected at least 1.0")


def test_same_sizes_message_shows_both_shapes() -> None:
    finding = assert_rule(dmlpy.validate(standalone(Activation("RELU"), out_sizes=(1, 1, 5, 1))), "ACTIVATION.SAME_SIZES")
    assert finding.message.startswith("is {1, 1, 5, 1}, expected {1, 1, 1, 5}")


def test_operator_types_of_the_ten_descs() -> None:
    expected = {"IDENTITY": 38, "LINEAR": 40, "RELU": 44, "LEAKY_RELU": 39, "SIGMOID": 47, "TANH": 51, "ELU": 35, "HARD_SIGMOID": 37, "SOFTPLUS": 49, "GELU": 157}
    assert {a.name: int(dmlpy.operator_desc(standalone(a)).Type) for a in ALL} == expected


# ---------------------------------------------------------------------------------------
# FusedActivation builders: DirectMLX's defaults, tensors NULL


@pytest.mark.parametrize(
    ("built", "op_type", "params"),
    [
        (FusedActivation.leaky_relu(), OP.ACTIVATION_LEAKY_RELU, {"Alpha": 0.01}),
        (FusedActivation.elu(), OP.ACTIVATION_ELU, {"Alpha": 1.0}),
        (FusedActivation.hard_sigmoid(), OP.ACTIVATION_HARD_SIGMOID, {"Alpha": 0.2, "Beta": 0.5}),
        (FusedActivation.softplus(), OP.ACTIVATION_SOFTPLUS, {"Steepness": 1.0}),
        (FusedActivation.linear(3.0, -1.0), OP.ACTIVATION_LINEAR, {"Alpha": 3.0, "Beta": -1.0}),
        (FusedActivation.gelu(), OP.ACTIVATION_GELU, {}),
    ],
    ids=["leaky_relu alpha 0.01", "elu alpha 1", "hard_sigmoid 0.2, 0.5", "softplus steepness 1", "linear as given", "gelu"],
)
def test_fused_activation_builders_use_directmlx_defaults(built: Any, op_type: OP, params: dict[str, float]) -> None:
    assert built.Type == op_type
    assert built.Desc.InputTensor is None and built.Desc.OutputTensor is None
    for name, value in params.items():
        assert getattr(built.Desc, name) == value


# ---------------------------------------------------------------------------------------
# In-place execution: the pages of all but GELU allow the output to alias the input


def _in_place(desc: Any, device: dmlpy.Device, x: np.ndarray) -> np.ndarray:
    compiled = device.compile_operator(device.create_operator(desc))
    buffer = device.create_buffer(x.nbytes)
    buffer.upload(x)
    recorder, command_list = device.create_command_recorder(), device.create_command_list()
    initializer = device.create_operator_initializer([compiled])
    recorder.record_dispatch(command_list, initializer, device.create_binding_table(initializer))
    command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav()])  # the dispatch after the initializer reads what it wrote
    table = device.create_binding_table(compiled)
    table.bind_inputs([buffer_binding(buffer)])
    table.bind_outputs([buffer_binding(buffer)])
    recorder.record_dispatch(command_list, compiled, table)
    command_list.close()
    device.execute(command_list)
    return buffer.read(desc.OutputTensor)


def test_relu_runs_in_place(device: dmlpy.Device) -> None:
    y = _in_place(standalone(Activation("RELU")), device, X)
    assert y.ravel().tolist() == [0.0, 0.0, 0.0, 0.5, 2.0]


def test_gelu_may_not_run_in_place() -> None:
    device = dmlpy.create_device(backend="numpy")
    with pytest.raises(dmlpy.DmlError) as caught:
        _in_place(standalone(Activation("GELU")), device, X)
    assert_rule(caught.value, "BINDING.INPUT_OUTPUT_OVERLAP")


def test_in_place_needs_the_same_layout() -> None:
    """Aliasing is allowed for identical tensors only: an NHWC output over an NCHW input overlaps."""
    sizes = (1, 2, 2, 2)
    desc = DML_ACTIVATION_RELU_OPERATOR_DESC(buffer_tensor(np.float32, sizes), buffer_tensor(np.float32, sizes, dmlpy.nhwc_strides(sizes)))
    with pytest.raises(dmlpy.DmlError) as caught:
        _in_place(desc, dmlpy.create_device(backend="numpy"), np.zeros(sizes, np.float32))
    assert "BINDING.INPUT_OUTPUT_OVERLAP" in rule_ids(caught.value)


def test_gelu_desc_class_prints_as_cpp() -> None:
    text = DML_ACTIVATION_GELU_OPERATOR_DESC(buffer_tensor(np.float32, (4,)), buffer_tensor(np.float32, (4,))).to_cpp("gelu")
    assert text.rstrip().endswith("const DML_ACTIVATION_GELU_OPERATOR_DESC gelu = {&gelu_InputTensor, &gelu_OutputTensor};")


@pytest.mark.parametrize("dtype", [np.int32, np.int16, np.int8], ids=["INT32", "INT16", "INT8"])
def test_relu_on_integers_from_fl_5_1_runs_on_both_backends(backend: str, dtype: type) -> None:
    """The RELU page lists INT32, INT16 and INT8 from FL 5.1: valid there, and it runs (not refused as invalid)."""
    desc = standalone(Activation("RELU"), (1, 5), dtype=dtype)
    x = np.array([[-128 if dtype is np.int8 else -300, -1, 0, 1, 127]], dtype)
    np.testing.assert_array_equal(dmlpy.run(desc, backend=backend, InputTensor=x), [[0, 0, 0, 1, 127]])
