"""Convolution validation: every CONVOLUTION.* rule and the fusion rules, messages, warnings, sizes, bindings.

Two base descs, each valid, with their sizes worked out by hand:

* FORWARD {1,4,6,6} * {8,4,3,3} -> {1,8,4,4}: (6 + 0 + 0 - 3) / 1 + 1 = 4.
* BACKWARD {1,4,5,5} * {4,2,4,4}, stride 2, padding 1 + 1 -> {1,2,10,10}:
  (5 - 1) * 2 + 4 - 1 - 1 = 10, and 11 is accepted too (stride 2 leaves one extra position).

Each rule case names the C field path its finding must carry.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from conftest import assert_rule, rule_ids

import dmlpy
from dmlpy import D3D12_RESOURCE_BARRIER
from dmlpy import (
    DML_ACTIVATION_LINEAR_OPERATOR_DESC,
    DML_ACTIVATION_RELU_OPERATOR_DESC,
    DML_AVERAGE_POOLING_OPERATOR_DESC,
    DML_BINDING_DESC,
    DML_BINDING_TABLE_DESC,
    DML_CONVOLUTION_DIRECTION,
    DML_CONVOLUTION_MODE,
    DML_CONVOLUTION_OPERATOR_DESC,
    DML_FEATURE_LEVEL,
    DML_OPERATOR_DESC,
    DML_OPERATOR_TYPE,
    DML_TENSOR_DATA_TYPE,
    DML_TENSOR_FLAGS,
    HRESULT,
    FusedActivation,
    array_binding,
    backward_output_size,
    buffer_binding,
    buffer_tensor,
    convolution_output_sizes,
    forward_output_size,
)

DT = DML_TENSOR_DATA_TYPE
FL = DML_FEATURE_LEVEL
OP = DML_OPERATOR_TYPE
FORWARD, BACKWARD = DML_CONVOLUTION_DIRECTION.FORWARD, DML_CONVOLUTION_DIRECTION.BACKWARD
CONV_MODE, CROSS = DML_CONVOLUTION_MODE.CONVOLUTION, DML_CONVOLUTION_MODE.CROSS_CORRELATION
CONV = "DML_CONVOLUTION_OPERATOR_DESC"
FUSED = f"{CONV}.FusedActivation"
E_INVALIDARG = 0x80070057


def conv(
    x: tuple[int, ...] | None = None,
    w: tuple[int, ...] | None = None,
    y: tuple[int, ...] | None = None,
    *,
    b: tuple[int, ...] | None = None,
    direction: DML_CONVOLUTION_DIRECTION = FORWARD,
    types: tuple[DT, DT, DT, DT] = (DT.FLOAT32,) * 4,
    **fields: Any,
) -> DML_CONVOLUTION_OPERATOR_DESC:
    """The FORWARD or BACKWARD base desc of the module docstring, with any part replaced."""
    backward = direction == BACKWARD
    x = x or ((1, 4, 5, 5) if backward else (1, 4, 6, 6))
    w = w or ((4, 2, 4, 4) if backward else (8, 4, 3, 3))
    y = y or ((1, 2, 10, 10) if backward else (1, 8, 4, 4))
    spatial = len(x) - 2
    values: dict[str, Any] = {
        "Mode": CROSS,
        "Direction": direction,
        "DimensionCount": spatial,
        "Strides": [2 if backward else 1] * spatial,
        "Dilations": [1] * spatial,
        "StartPadding": [1 if backward else 0] * spatial,
        "EndPadding": [1 if backward else 0] * spatial,
        "OutputPadding": [0] * spatial,
        "GroupCount": 1,
        "FusedActivation": None,
    }
    values.update(fields)
    bias = None if b is None else buffer_tensor(types[2], b)
    return DML_CONVOLUTION_OPERATOR_DESC(buffer_tensor(types[0], x), buffer_tensor(types[1], w), bias, buffer_tensor(types[3], y), **values)


def bwd(x: tuple[int, ...] | None = None, w: tuple[int, ...] | None = None, y: tuple[int, ...] | None = None, **kwargs: Any) -> DML_CONVOLUTION_OPERATOR_DESC:
    return conv(x, w, y, direction=BACKWARD, **kwargs)


def numpy_device(**kwargs: Any) -> dmlpy.Device:
    return dmlpy.create_device(backend="numpy", **kwargs)


def relu_with_tensors() -> DML_OPERATOR_DESC:
    tensor = buffer_tensor(DT.FLOAT32, (1, 8, 4, 4))
    return DML_OPERATOR_DESC(OP.ACTIVATION_RELU, DML_ACTIVATION_RELU_OPERATOR_DESC(tensor, tensor))


@pytest.mark.parametrize(
    ("desc", "level"),
    [
        pytest.param(conv(), FL.LEVEL_6_4, id="the FORWARD base desc is valid"),
        pytest.param(bwd(), FL.LEVEL_6_4, id="the BACKWARD base desc is valid"),
        pytest.param(bwd(y=(1, 2, 11, 10)), FL.LEVEL_6_4, id="BACKWARD accepts natural + 1 = 11 with stride 2"),
        pytest.param(conv(b=(1, 8, 1, 1)), FL.LEVEL_6_4, id="a {1, 8, 1, 1} bias is valid"),
        pytest.param(bwd(b=(1, 2, 1, 1)), FL.LEVEL_6_4, id="a BACKWARD bias has Filter[1] * G = 2 channels"),
        pytest.param(conv(types=(DT.FLOAT16,) * 4, b=(1, 8, 1, 1)), FL.LEVEL_6_4, id="FLOAT16 everywhere is valid"),
        pytest.param(conv((1, 4, 6), (8, 4, 3), (1, 8, 4)), FL.LEVEL_4_0, id="a 1-D convolution (3-D tensors) is valid at FL 4.0"),
        pytest.param(conv((1, 4, 6, 6, 6), (8, 4, 3, 3, 3), (1, 8, 4, 4, 4)), FL.LEVEL_1_0, id="a 3-D convolution (5-D tensors) is valid at FL 1.0"),
        pytest.param(conv(), FL.LEVEL_1_0, id="a 2-D convolution is valid at FL 1.0"),
        pytest.param(conv((1, 4, 6, 6), (4, 1, 3, 3), (1, 4, 4, 4), GroupCount=4), FL.LEVEL_6_4, id="depthwise: GroupCount = Cin = 4 with {4, 1, 3, 3}"),
        pytest.param(bwd((1, 4, 5, 5), (4, 1, 4, 4), (1, 4, 10, 10), GroupCount=4), FL.LEVEL_6_4, id="depthwise BACKWARD: {4, 1, 4, 4}, Cout = 1 * 4"),
        pytest.param(conv(Mode=CONV_MODE), FL.LEVEL_6_4, id="Mode CONVOLUTION is valid"),
        pytest.param(conv(FusedActivation=FusedActivation.relu()), FL.LEVEL_6_4, id="a fused RELU is valid"),
        pytest.param(conv(FusedActivation=FusedActivation.gelu()), FL.LEVEL_5_1, id="a fused GELU is valid at FL 5.1"),
        pytest.param(conv(FusedActivation=DML_ACTIVATION_LINEAR_OPERATOR_DESC(None, None, 2.0, 1.0)), FL.LEVEL_6_4, id="a bare activation desc is wrapped for FusedActivation"),
    ],
)
def test_the_base_descs_of_these_tests_have_no_findings(desc: Any, level: FL) -> None:
    report = dmlpy.validate(desc, feature_level=level)
    assert report.ok and not report.findings, str(report)


# ---------------------------------------------------------------------------------------
# Every rule, at its C field path

RULE_CASES = [
    pytest.param(conv(Mode=7), FL.LEVEL_6_4, "CONVOLUTION.MODE", f"{CONV}.Mode", id="Mode 7 is no DML_CONVOLUTION_MODE"),
    pytest.param(conv(Direction=2), FL.LEVEL_6_4, "CONVOLUTION.DIRECTION", f"{CONV}.Direction", id="Direction 2 is no DML_CONVOLUTION_DIRECTION"),
    pytest.param(
        conv(DimensionCount=3, Strides=[1] * 3, Dilations=[1] * 3, StartPadding=[0] * 3, EndPadding=[0] * 3, OutputPadding=[0] * 3),
        FL.LEVEL_6_4, "CONVOLUTION.DIMENSION_COUNT", f"{CONV}.DimensionCount",
        id="DimensionCount 3 with 4-D tensors is rejected: it counts spatial dims, 4 - 2 = 2",
    ),
    pytest.param(conv((1, 4, 6), (8, 4, 3), (1, 8, 4)), FL.LEVEL_3_1, "CONVOLUTION.ONE_D_FEATURE_LEVEL", f"{CONV}.DimensionCount", id="a 1-D convolution is rejected at FL 3.1"),
    pytest.param(conv((1, 4, 6), (8, 4, 3), (1, 8, 4)), FL.LEVEL_3_1, "TENSOR.DIMENSION_COUNT_SUPPORT", f"{CONV}.InputTensor.DimensionCount", id="a 3-D input is outside FL 3.1's 4 to 5"),
    pytest.param(conv(w=(8, 4, 3, 3, 1)), FL.LEVEL_6_4, "CONVOLUTION.SAME_DIMENSION_COUNT", f"{CONV}.FilterTensor.DimensionCount", id="a 5-D filter for a 4-D input is rejected"),
    pytest.param(conv(y=(1, 8, 4, 4, 1)), FL.LEVEL_6_4, "CONVOLUTION.SAME_DIMENSION_COUNT", f"{CONV}.OutputTensor.DimensionCount", id="a 5-D output for a 4-D input is rejected"),
    pytest.param(conv(types=(DT.FLOAT32, DT.FLOAT16, DT.FLOAT32, DT.FLOAT32)), FL.LEVEL_6_4, "CONVOLUTION.SAME_DATA_TYPE", f"{CONV}.FilterTensor.DataType", id="a FLOAT16 filter with a FLOAT32 input is rejected"),
    pytest.param(conv(b=(1, 8, 1, 1), types=(DT.FLOAT32, DT.FLOAT32, DT.FLOAT16, DT.FLOAT32)), FL.LEVEL_6_4, "CONVOLUTION.SAME_DATA_TYPE", f"{CONV}.BiasTensor.DataType", id="a FLOAT16 bias with FLOAT32 tensors is rejected"),
    pytest.param(conv(types=(DT.FLOAT16, DT.FLOAT16, DT.FLOAT16, DT.FLOAT32)), FL.LEVEL_6_4, "CONVOLUTION.SAME_DATA_TYPE", f"{CONV}.OutputTensor.DataType", id="a FLOAT32 output for FLOAT16 inputs is rejected"),
    pytest.param(conv(types=(DT.INT32,) * 4), FL.LEVEL_6_4, "TENSOR.DATA_TYPE_SUPPORT", f"{CONV}.InputTensor.DataType", id="INT32 tensors are outside FLOAT32/FLOAT16"),
    pytest.param(conv(Strides=[1]), FL.LEVEL_6_4, "CONVOLUTION.ARRAY_LENGTH", f"{CONV}.Strides", id="1 stride for 2 spatial dims is rejected"),
    pytest.param(conv(Dilations=[1, 1, 1]), FL.LEVEL_6_4, "CONVOLUTION.ARRAY_LENGTH", f"{CONV}.Dilations", id="3 dilations for 2 spatial dims are rejected"),
    pytest.param(conv(StartPadding=None), FL.LEVEL_6_4, "CONVOLUTION.ARRAY_LENGTH", f"{CONV}.StartPadding", id="a NULL StartPadding is rejected"),
    pytest.param(conv(EndPadding=[0]), FL.LEVEL_6_4, "CONVOLUTION.ARRAY_LENGTH", f"{CONV}.EndPadding", id="1 end padding for 2 spatial dims is rejected"),
    pytest.param(conv(OutputPadding=None), FL.LEVEL_6_4, "CONVOLUTION.ARRAY_LENGTH", f"{CONV}.OutputPadding", id="a NULL OutputPadding is rejected"),
    pytest.param(conv(Strides=[1, 0]), FL.LEVEL_6_4, "CONVOLUTION.STRIDE_ZERO", f"{CONV}.Strides[1]", id="a stride of 0 is rejected at its index"),
    pytest.param(conv(Dilations=[0, 1]), FL.LEVEL_6_4, "CONVOLUTION.DILATION_ZERO", f"{CONV}.Dilations[0]", id="a dilation of 0 is rejected at its index"),
    pytest.param(conv(GroupCount=0), FL.LEVEL_6_4, "CONVOLUTION.GROUP_COUNT_ZERO", f"{CONV}.GroupCount", id="GroupCount 0 is rejected (C's zero value)"),
    pytest.param(conv(y=(2, 8, 4, 4)), FL.LEVEL_6_4, "CONVOLUTION.BATCH", f"{CONV}.OutputTensor.Sizes[0]", id="an output batch of 2 for an input batch of 1 is rejected"),
    pytest.param(conv(w=(8, 1, 3, 3), GroupCount=3), FL.LEVEL_6_4, "CONVOLUTION.GROUP_DIVIDES_CHANNELS", f"{CONV}.InputTensor.Sizes[1]", id="GroupCount 3 does not divide 4 input channels"),
    pytest.param(conv(w=(9, 2, 3, 3), y=(1, 9, 4, 4), GroupCount=2), FL.LEVEL_6_4, "CONVOLUTION.GROUP_DIVIDES_CHANNELS", f"{CONV}.OutputTensor.Sizes[1]", id="GroupCount 2 does not divide 9 output channels"),
    pytest.param(bwd(w=(4, 3, 4, 4), y=(1, 6, 10, 10), GroupCount=4), FL.LEVEL_6_4, "CONVOLUTION.GROUP_DIVIDES_CHANNELS", f"{CONV}.OutputTensor.Sizes[1]", id="BACKWARD: GroupCount 4 does not divide 6 output channels"),
    pytest.param(conv(w=(8, 2, 3, 3)), FL.LEVEL_6_4, "CONVOLUTION.FILTER_CHANNELS", f"{CONV}.FilterTensor.Sizes[1]", id="FORWARD: Filter[1] 2 is not Cin / G = 4 / 1"),
    pytest.param(bwd(w=(2, 4, 4, 4)), FL.LEVEL_6_4, "CONVOLUTION.FILTER_CHANNELS", f"{CONV}.FilterTensor.Sizes[0]", id="BACKWARD: Filter[0] 2 is not Cin = 4 (a FORWARD-layout filter)"),
    pytest.param(conv(y=(1, 6, 4, 4)), FL.LEVEL_6_4, "CONVOLUTION.OUTPUT_CHANNELS", f"{CONV}.OutputTensor.Sizes[1]", id="FORWARD: 6 output channels for Filter[0] = 8 are rejected"),
    pytest.param(bwd(y=(1, 4, 10, 10)), FL.LEVEL_6_4, "CONVOLUTION.OUTPUT_CHANNELS", f"{CONV}.OutputTensor.Sizes[1]", id="BACKWARD: 4 output channels for Filter[1] * G = 2 * 1 are rejected"),
    pytest.param(conv(b=(8,)), FL.LEVEL_6_4, "CONVOLUTION.BIAS_SHAPE", f"{CONV}.BiasTensor.Sizes", id="a 1-D bias {8} is rejected with the fix"),
    pytest.param(conv(b=(8,)), FL.LEVEL_6_4, "TENSOR.DIMENSION_COUNT_SUPPORT", f"{CONV}.BiasTensor.DimensionCount", id="a 1-D bias is outside the support table too"),
    pytest.param(conv(b=(1, 8, 1)), FL.LEVEL_6_4, "CONVOLUTION.BIAS_SHAPE", f"{CONV}.BiasTensor.Sizes", id="a 3-D bias for 4-D tensors is rejected"),
    pytest.param(conv(b=(1, 6, 1, 1)), FL.LEVEL_6_4, "CONVOLUTION.BIAS_SHAPE", f"{CONV}.BiasTensor.Sizes", id="a bias of 6 channels for 8 outputs is rejected"),
    pytest.param(conv(b=(8, 1, 1, 1)), FL.LEVEL_6_4, "CONVOLUTION.BIAS_SHAPE", f"{CONV}.BiasTensor.Sizes", id="a bias {8, 1, 1, 1} (channels on N) is rejected"),
    pytest.param(bwd(b=(1, 4, 1, 1)), FL.LEVEL_6_4, "CONVOLUTION.BIAS_SHAPE", f"{CONV}.BiasTensor.Sizes", id="a BACKWARD bias sized by Cin instead of Cout is rejected"),
    pytest.param(conv(w=(8, 4, 7, 3)), FL.LEVEL_6_4, "CONVOLUTION.KERNEL_LARGER_THAN_INPUT", f"{CONV}.FilterTensor.Sizes[2]", id="a 7-tap kernel on 6 unpadded inputs is rejected"),
    pytest.param(conv(y=(1, 8, 4, 1), Dilations=[1, 3]), FL.LEVEL_6_4, "CONVOLUTION.KERNEL_LARGER_THAN_INPUT", f"{CONV}.FilterTensor.Sizes[3]", id="3 taps dilated by 3 span 7 > 6"),
    pytest.param(bwd((1, 4, 1, 1), (4, 2, 3, 3), (1, 2, 1, 1), Strides=[1, 1], StartPadding=[2, 0], EndPadding=[2, 0]), FL.LEVEL_6_4,
                 "CONVOLUTION.PADDING_TOO_LARGE", f"{CONV}.StartPadding[0]", id="BACKWARD: padding 2 + 2 leaves (1 - 1) * 1 + 3 - 4 = -1 outputs"),
    pytest.param(conv(y=(1, 8, 5, 4)), FL.LEVEL_6_4, "CONVOLUTION.OUTPUT_SIZE", f"{CONV}.OutputTensor.Sizes[2]", id="H 5 is rejected: (6 + 0 + 0 - 3) / 1 + 1 = 4"),
    pytest.param(conv(y=(1, 8, 4, 4), OutputPadding=[0, 1]), FL.LEVEL_6_4, "CONVOLUTION.OUTPUT_SIZE", f"{CONV}.OutputTensor.Sizes[3]", id="FORWARD W 4 with OutputPadding 1 is rejected: 4 + 1 = 5"),
    pytest.param(bwd(y=(1, 2, 9, 10)), FL.LEVEL_6_4, "CONVOLUTION.BACKWARD_OUTPUT_SIZE", f"{CONV}.OutputTensor.Sizes[2]", id="BACKWARD H 9 is below (5 - 1) * 2 + 4 - 1 - 1 = 10"),
    pytest.param(bwd(y=(1, 2, 10, 12)), FL.LEVEL_6_4, "CONVOLUTION.BACKWARD_OUTPUT_SIZE", f"{CONV}.OutputTensor.Sizes[3]", id="BACKWARD W 12 is above 10 + (2 - 1) = 11"),
    pytest.param(conv(y=(1, 8, 5, 4), OutputPadding=[1, 0]), FL.LEVEL_6_4, "CONVOLUTION.OUTPUT_PADDING_NONZERO", f"{CONV}.OutputPadding[0]", id="a nonzero OutputPadding warns"),
    pytest.param(conv(FusedActivation=DML_OPERATOR_DESC(OP.AVERAGE_POOLING, DML_AVERAGE_POOLING_OPERATOR_DESC(DimensionCount=2))), FL.LEVEL_6_4,
                 "ACTIVATION.NOT_FUSABLE", f"{FUSED}.Type", id="average pooling cannot be fused"),
    pytest.param(conv(FusedActivation=DML_AVERAGE_POOLING_OPERATOR_DESC(DimensionCount=2)), FL.LEVEL_6_4, "ACTIVATION.NOT_FUSABLE", f"{FUSED}.Type", id="a bare pooling desc cannot be fused either"),
    pytest.param(conv(FusedActivation=DML_OPERATOR_DESC(9999, DML_ACTIVATION_RELU_OPERATOR_DESC())), FL.LEVEL_6_4, "ACTIVATION.NOT_FUSABLE", f"{FUSED}.Type", id="Type 9999 cannot be fused"),
    pytest.param(conv(FusedActivation=DML_OPERATOR_DESC(OP.ACTIVATION_RELU, DML_ACTIVATION_LINEAR_OPERATOR_DESC())), FL.LEVEL_6_4,
                 "ACTIVATION.NOT_FUSABLE", f"{FUSED}.Desc", id="Type RELU with a LINEAR struct is rejected"),
    pytest.param(conv(FusedActivation=DML_OPERATOR_DESC(OP.ACTIVATION_RELU, None)), FL.LEVEL_6_4, "ACTIVATION.NOT_FUSABLE", f"{FUSED}.Desc", id="Type RELU with a NULL Desc is rejected"),
    pytest.param(conv(FusedActivation=relu_with_tensors()), FL.LEVEL_6_4, "ACTIVATION.FUSED_TENSORS_NOT_NULL", f"{FUSED}.InputTensor", id="a fused RELU with an InputTensor is rejected"),
    pytest.param(conv(FusedActivation=relu_with_tensors()), FL.LEVEL_6_4, "ACTIVATION.FUSED_TENSORS_NOT_NULL", f"{FUSED}.OutputTensor", id="a fused RELU with an OutputTensor is rejected"),
    pytest.param(conv(FusedActivation=FusedActivation.softplus(0.5)), FL.LEVEL_6_4, "ACTIVATION.SOFTPLUS_STEEPNESS", f"{FUSED}.Steepness", id="a fused SOFTPLUS with Steepness 0.5 is rejected"),
    pytest.param(conv(FusedActivation=FusedActivation.gelu()), FL.LEVEL_5_0, "OPERATOR.FEATURE_LEVEL", f"{FUSED}.Type", id="a fused GELU is rejected at FL 5.0"),
    pytest.param(conv(FusedActivation=DML_OPERATOR_DESC(OP.ACTIVATION_SOFTSIGN, DML_ACTIVATION_RELU_OPERATOR_DESC())), FL.LEVEL_6_4,
                 "ACTIVATION.NOT_FUSABLE", f"{FUSED}.Desc", id="Type SOFTSIGN with a RELU struct is rejected"),
    pytest.param(conv(FusedActivation="RELU"), FL.LEVEL_6_4, "FIELD.TYPE", FUSED, id="a string FusedActivation is refused like C would"),
]


def _without(desc: DML_CONVOLUTION_OPERATOR_DESC, **fields: Any) -> DML_CONVOLUTION_OPERATOR_DESC:
    for name, value in fields.items():
        setattr(desc, name, value)
    return desc


RULE_CASES.append(
    pytest.param(_without(conv(), FilterTensor=None), FL.LEVEL_6_4, "TENSOR.REQUIRED", f"{CONV}.FilterTensor", id="a NULL FilterTensor is rejected")
)


@pytest.mark.parametrize(("desc", "level", "rule_id", "path"), RULE_CASES)
def test_convolution_rule_is_reported_at_its_field(desc: Any, level: FL, rule_id: str, path: str) -> None:
    assert_rule(dmlpy.validate(desc, feature_level=level), rule_id, path)


@pytest.mark.parametrize(
    ("desc", "level", "rule_id", "path"), [c for c in RULE_CASES if c.values[2] != "CONVOLUTION.OUTPUT_PADDING_NONZERO"]
)
def test_create_operator_rejects_every_error_rule_with_e_invalidarg(desc: Any, level: FL, rule_id: str, path: str) -> None:
    with pytest.raises(dmlpy.DmlError) as caught, warnings.catch_warnings():
        warnings.simplefilter("ignore", dmlpy.DmlWarning)
        numpy_device(feature_level=level).create_operator(desc)
    assert caught.value.hresult == HRESULT.E_INVALIDARG == E_INVALIDARG
    assert_rule(caught.value, rule_id, path)


def test_a_null_bias_is_valid_in_either_direction() -> None:
    for desc in (conv(), bwd()):
        assert desc.BiasTensor is None
        assert dmlpy.validate(desc).ok


# ---------------------------------------------------------------------------------------
# Messages carry the formula with the numbers filled in


@pytest.mark.doc_example
def test_forward_output_size_message_shows_the_formula() -> None:
    # (112 + 1 + 1 - 3) / 2 + 1 = 111 / 2 + 1 = 56 (the README's example)
    desc = conv((1, 3, 112, 112), (8, 3, 3, 3), (1, 8, 55, 56), Strides=[2, 2], StartPadding=[1, 1], EndPadding=[1, 1])
    finding = assert_rule(dmlpy.validate(desc), "CONVOLUTION.OUTPUT_SIZE", f"{CONV}.OutputTensor.Sizes[2]")
    assert finding.message == "is 55, expected 56 = (112 + 1 + 1 - 3) / 2 + 1"
    assert (finding.actual, finding.expected) == (55, 56)


def test_backward_output_size_message_shows_the_formula_and_the_stride_slack() -> None:
    # the decoder layer of the brief: (32 - 1) * 2 + 4 - 1 - 1 = 64; 64 and 65 are accepted
    desc = bwd((1, 16, 32, 32), (16, 8, 4, 4), (1, 8, 63, 64))
    finding = assert_rule(dmlpy.validate(desc), "CONVOLUTION.BACKWARD_OUTPUT_SIZE", f"{CONV}.OutputTensor.Sizes[2]")
    assert finding.message == "is 63, expected 64 = (32 - 1) * 2 + 4 - 1 - 1 (+ 0 .. 1 for stride 2)"
    assert finding.actual == 63
    assert finding.expected == "64 .. 65"


def test_backward_output_size_message_with_stride_1_has_no_slack() -> None:
    desc = bwd((1, 4, 5, 5), (4, 2, 3, 3), (1, 2, 6, 5), Strides=[1, 1], StartPadding=[0, 0], EndPadding=[0, 0])
    # (5 - 1) * 1 + 3 - 0 - 0 = 7
    finding = assert_rule(dmlpy.validate(desc), "CONVOLUTION.BACKWARD_OUTPUT_SIZE", f"{CONV}.OutputTensor.Sizes[2]")
    assert finding.message == "is 6, expected 7 = (5 - 1) * 1 + 3 - 0 - 0"
    assert finding.expected == 7


def test_dilated_output_size_messages_show_the_dilated_kernel() -> None:
    # FORWARD: (10 + 0 + 0 - ((3 - 1) * 2 + 1)) / 1 + 1 = 6
    forward = conv((1, 4, 10, 10), (8, 4, 3, 3), (1, 8, 7, 6), Dilations=[2, 2])
    finding = assert_rule(dmlpy.validate(forward), "CONVOLUTION.OUTPUT_SIZE")
    assert finding.message == "is 7, expected 6 = (10 + 0 + 0 - ((3 - 1) * 2 + 1)) / 1 + 1"
    # BACKWARD: (5 - 1) * 2 + ((4 - 1) * 2 + 1) - 1 - 1 = 13, 14 with the stride's slack
    backward = bwd(y=(1, 2, 12, 13), Dilations=[2, 2])
    finding = assert_rule(dmlpy.validate(backward), "CONVOLUTION.BACKWARD_OUTPUT_SIZE")
    assert finding.message == "is 12, expected 13 = (5 - 1) * 2 + ((4 - 1) * 2 + 1) - 1 - 1 (+ 0 .. 1 for stride 2)"


def test_output_padding_appears_in_the_size_formulas() -> None:
    # FORWARD: (6 - 3) / 1 + 1 + 1 = 5; BACKWARD: (5 - 1) * 2 + 4 - 1 - 1 + 1 = 11 (or 12)
    forward = conv(y=(1, 8, 4, 4), OutputPadding=[1, 0])
    finding = assert_rule(dmlpy.validate(forward), "CONVOLUTION.OUTPUT_SIZE", f"{CONV}.OutputTensor.Sizes[2]")
    assert finding.message == "is 4, expected 5 = (6 + 0 + 0 - 3) / 1 + 1 + 1"
    backward = bwd(y=(1, 2, 10, 10), OutputPadding=[1, 0])
    finding = assert_rule(dmlpy.validate(backward), "CONVOLUTION.BACKWARD_OUTPUT_SIZE", f"{CONV}.OutputTensor.Sizes[2]")
    assert finding.message == "is 10, expected 11 = (5 - 1) * 2 + 4 - 1 - 1 + 1 (+ 0 .. 1 for stride 2)"


def test_a_forward_size_in_a_backward_desc_points_at_the_direction() -> None:
    # FORWARD from 32: (32 + 1 + 1 - 4) / 2 + 1 = 16
    finding = assert_rule(dmlpy.validate(bwd((1, 16, 32, 32), (16, 8, 4, 4), (1, 8, 16, 64))), "CONVOLUTION.BACKWARD_OUTPUT_SIZE")
    assert "16 is the FORWARD size (32 + 1 + 1 - 4) / 2 + 1" in finding.message
    assert "Direction" in finding.message


def test_a_backward_size_in_a_forward_desc_points_at_the_direction() -> None:
    # BACKWARD from 6: (6 - 1) * 1 + 3 - 0 - 0 = 8
    finding = assert_rule(dmlpy.validate(conv(y=(1, 8, 8, 4))), "CONVOLUTION.OUTPUT_SIZE")
    assert "8 is the BACKWARD size (6 - 1) * 1 + 3 - 0 - 0" in finding.message


def test_a_one_d_bias_message_gives_the_four_d_shape() -> None:
    finding = assert_rule(dmlpy.validate(conv(b=(8,))), "CONVOLUTION.BIAS_SHAPE")
    assert "{8}" in finding.message and "{1, 8, 1, 1}" in finding.message and "ONNX" in finding.message
    assert finding.expected == (1, 8, 1, 1)


def test_a_bias_of_the_wrong_channel_count_names_cout() -> None:
    finding = assert_rule(dmlpy.validate(conv(b=(1, 6, 1, 1))), "CONVOLUTION.BIAS_SHAPE")
    assert finding.message.startswith("is {1, 6, 1, 1}, expected {1, 8, 1, 1} (Cout = OutputTensor.Sizes[1] = 8")


def test_a_forward_layout_filter_in_a_backward_desc_is_named_as_such() -> None:
    # ConvTranspose 16 -> 8 channels: W is {16, 8, 4, 4}; the FORWARD layout {8, 16, 4, 4} is the mistake
    finding = assert_rule(dmlpy.validate(bwd((1, 16, 32, 32), (8, 16, 4, 4), (1, 8, 64, 64))), "CONVOLUTION.FILTER_CHANNELS", f"{CONV}.FilterTensor.Sizes[0]")
    assert finding.message.startswith("is 8, expected 16 = InputTensor.Sizes[1]")
    assert "FORWARD layout" in finding.message and "{16, 8, 4, 4}" in finding.message


def test_a_backward_layout_filter_in_a_forward_desc_is_named_as_such() -> None:
    # Conv 4 -> 8 channels takes {8, 4, 3, 3}; {4, 8, 3, 3} is ConvTranspose's layout
    finding = assert_rule(dmlpy.validate(conv(w=(4, 8, 3, 3))), "CONVOLUTION.FILTER_CHANNELS", f"{CONV}.FilterTensor.Sizes[1]")
    assert finding.message.startswith("is 8, expected 4 = InputTensor.Sizes[1] / GroupCount = 4 / 1")
    assert "BACKWARD (ConvTranspose) layout" in finding.message


def test_a_missing_group_count_is_suggested_for_a_depthwise_transpose() -> None:
    # depthwise ConvTranspose of 4 channels: W {4, 1, 4, 4}, group 4; with GroupCount 1 only 1 * 1 = 1 channel comes out
    finding = assert_rule(dmlpy.validate(bwd((1, 4, 5, 5), (4, 1, 4, 4), (1, 4, 10, 10))), "CONVOLUTION.OUTPUT_CHANNELS")
    assert finding.message == "is 4, expected 1 = FilterTensor.Sizes[1] * GroupCount = 1 * 1; GroupCount 4 would give 4, or with GroupCount 1 the filter {Cin, Cout/G, k...} is {4, 4, 4, 4}"


@pytest.mark.parametrize(
    ("x", "w", "y", "groups", "fitting"),
    [
        pytest.param((1, 4, 5, 5), (4, 8, 3, 3), (1, 8, 7, 7), 2, "{4, 4, 3, 3}", id="Cout 8 in 2 groups: {4, 4, 3, 3}, not {4, 8, 3, 3}"),
        pytest.param((1, 6, 5, 5), (6, 9, 2, 2), (1, 9, 6, 6), 3, "{6, 3, 2, 2}", id="Cout 9 in 3 groups: {6, 3, 2, 2}, not {6, 9, 2, 2}"),
        pytest.param((1, 8, 3, 3, 3), (8, 4, 1, 1, 1), (1, 4, 3, 3, 3), 4, "{8, 1, 1, 1, 1}", id="5-D depthwise Cout 4 in 4 groups: {8, 1, 1, 1, 1}"),
    ],
)
def test_a_grouped_transpose_filter_holding_all_output_channels_gets_the_filter_shape_that_fits(
    x: tuple[int, ...], w: tuple[int, ...], y: tuple[int, ...], groups: int, fitting: str
) -> None:
    spatial = len(x) - 2
    desc = bwd(x, w, y, GroupCount=groups, DimensionCount=spatial, Strides=[1] * spatial, Dilations=[1] * spatial, StartPadding=[0] * spatial, EndPadding=[0] * spatial,
               OutputPadding=[0] * spatial)  # fmt: skip
    finding = assert_rule(dmlpy.validate(desc), "CONVOLUTION.OUTPUT_CHANNELS", f"{CONV}.OutputTensor.Sizes[1]")
    assert fitting in finding.message
    assert "GroupCount 1 would give" not in finding.message  # the grouping is meant; the filter is the mistake


def test_group_divides_channels_message_shows_the_remainder() -> None:
    finding = assert_rule(dmlpy.validate(conv(w=(8, 1, 3, 3), GroupCount=3)), "CONVOLUTION.GROUP_DIVIDES_CHANNELS")
    assert finding.message == "is 4 channels, not a multiple of GroupCount 3 (4 % 3 = 1)"


def test_padding_too_large_message_shows_the_empty_size() -> None:
    desc = bwd((1, 4, 1, 1), (4, 2, 3, 3), (1, 2, 1, 1), Strides=[1, 1], StartPadding=[2, 0], EndPadding=[2, 0])
    finding = assert_rule(dmlpy.validate(desc), "CONVOLUTION.PADDING_TOO_LARGE")
    assert "2 + 2 = 4" in finding.message and "(1 - 1) * 1 + 3 - 2 - 2 = -1" in finding.message


def test_kernel_too_large_message_shows_the_taps_and_the_padded_input() -> None:
    finding = assert_rule(dmlpy.validate(conv(y=(1, 8, 4, 1), Dilations=[1, 3])), "CONVOLUTION.KERNEL_LARGER_THAN_INPUT")
    assert finding.message == "spans ((3 - 1) * 3 + 1) = 7 taps, more than the padded input 6 + 0 + 0 = 6"


def test_the_one_d_gate_names_both_feature_levels() -> None:
    finding = assert_rule(dmlpy.validate(conv((1, 4, 6), (8, 4, 3), (1, 8, 4)), feature_level=FL.LEVEL_3_1), "CONVOLUTION.ONE_D_FEATURE_LEVEL")
    assert "DML_FEATURE_LEVEL_4_0" in finding.message and "DML_FEATURE_LEVEL_3_1" in finding.message


def test_a_fused_gelu_below_fl_5_1_names_both_levels() -> None:
    finding = assert_rule(dmlpy.validate(conv(FusedActivation=FusedActivation.gelu()), feature_level=FL.LEVEL_5_0), "OPERATOR.FEATURE_LEVEL", f"{FUSED}.Type")
    assert "DML_FEATURE_LEVEL_5_1" in finding.message and "DML_FEATURE_LEVEL_5_0" in finding.message


def test_not_fusable_message_lists_what_can_be_fused() -> None:
    finding = assert_rule(dmlpy.validate(conv(FusedActivation=DML_AVERAGE_POOLING_OPERATOR_DESC(DimensionCount=2))), "ACTIVATION.NOT_FUSABLE")
    assert "DML_OPERATOR_AVERAGE_POOLING" in finding.message and "DML_OPERATOR_ACTIVATION_RELU" in finding.message


def test_a_finding_inside_the_fused_activation_has_its_field_path() -> None:
    desc = conv(FusedActivation=DML_OPERATOR_DESC(OP.ACTIVATION_LINEAR, DML_ACTIVATION_LINEAR_OPERATOR_DESC(None, None, "two", 1.0)))
    assert_rule(dmlpy.validate(desc), "FIELD.TYPE", f"{FUSED}.Alpha")


# ---------------------------------------------------------------------------------------
# Accepted sizes, independent of the helper: every accepted size is listed by hand


@pytest.mark.parametrize(
    ("y_size", "ok"),
    [(9, False), (10, True), (11, True), (12, False)],
    ids=["9 < natural 10", "natural 10", "10 + 1 (stride 2)", "12 > 10 + 2 - 1"],
)
def test_backward_accepts_natural_up_to_natural_plus_stride_minus_one(y_size: int, ok: bool) -> None:
    report = dmlpy.validate(bwd(y=(1, 2, y_size, 10)))
    assert report.ok is ok
    assert ("CONVOLUTION.BACKWARD_OUTPUT_SIZE" in rule_ids(report)) is not ok


def test_backward_with_stride_3_accepts_three_sizes() -> None:
    # (5 - 1) * 3 + 4 - 1 - 1 = 14: 14, 15 and 16 are accepted, 13 and 17 are not
    accepted = [s for s in range(12, 19) if dmlpy.validate(bwd(y=(1, 2, s, 14), Strides=[3, 3])).ok]
    assert accepted == [14, 15, 16]


def test_forward_accepts_exactly_one_size() -> None:
    # (7 + 1 + 1 - 3) / 2 + 1 = 4
    accepted = [s for s in range(1, 9) if dmlpy.validate(conv((1, 4, 7, 7), y=(1, 8, s, 4), Strides=[2, 2], StartPadding=[1, 1], EndPadding=[1, 1])).ok]
    assert accepted == [4]


# ---------------------------------------------------------------------------------------
# Warnings


def test_output_padding_warns_through_warnings_warn() -> None:
    with pytest.warns(dmlpy.DmlWarning) as record:
        op = numpy_device().create_operator(conv(y=(1, 8, 5, 4), OutputPadding=[1, 0]))
    warned = [w.message.finding.rule for w in record if isinstance(w.message, dmlpy.DmlWarning)]
    assert warned == ["CONVOLUTION.OUTPUT_PADDING_NONZERO"]
    assert rule_ids(op.warnings) == ["CONVOLUTION.OUTPUT_PADDING_NONZERO"]


def test_output_padding_is_an_error_on_a_strict_device() -> None:
    with pytest.raises(dmlpy.DmlError) as caught, warnings.catch_warnings():
        warnings.simplefilter("error")
        numpy_device(strict=True).create_operator(bwd(y=(1, 2, 11, 10), OutputPadding=[1, 0]))
    assert_rule(caught.value, "CONVOLUTION.OUTPUT_PADDING_NONZERO", f"{CONV}.OutputPadding[0]")


def test_output_padding_warning_says_where_onnx_output_padding_belongs() -> None:
    finding = assert_rule(dmlpy.validate(bwd(y=(1, 2, 11, 10), OutputPadding=[1, 0])), "CONVOLUTION.OUTPUT_PADDING_NONZERO")
    assert finding.severity is dmlpy.Severity.WARNING
    assert "UNCONFIRMED" in finding.message and "output_padding" in finding.message


def test_a_valid_convolution_creates_without_warnings() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for desc in (conv(b=(1, 8, 1, 1), FusedActivation=FusedActivation.leaky_relu()), bwd(y=(1, 2, 11, 11))):
            assert numpy_device(strict=True).create_operator(desc).warnings == []


# ---------------------------------------------------------------------------------------
# Feature levels


@pytest.mark.parametrize("level", [FL.LEVEL_4_0, FL.LEVEL_5_0, FL.LEVEL_6_4], ids=lambda level: f"1-D convolution exists at FL {level.dotted}")
def test_one_d_convolution_is_accepted_from_fl_4_0(level: FL) -> None:
    assert numpy_device(feature_level=level).create_operator(conv((1, 4, 6), (8, 4, 3), (1, 8, 4))).name == "DML_OPERATOR_CONVOLUTION"


@pytest.mark.parametrize("level", [FL.LEVEL_1_0, FL.LEVEL_2_1, FL.LEVEL_3_1], ids=lambda level: f"1-D convolution is rejected at FL {level.dotted}")
def test_one_d_convolution_is_rejected_before_fl_4_0(level: FL) -> None:
    with pytest.raises(dmlpy.DmlError) as caught:
        numpy_device(feature_level=level).create_operator(conv((1, 4, 6), (8, 4, 3), (1, 8, 4)))
    assert_rule(caught.value, "CONVOLUTION.ONE_D_FEATURE_LEVEL", f"{CONV}.DimensionCount")


def test_six_d_tensors_are_rejected_at_every_level() -> None:
    desc = conv((1, 4, 3, 3, 3, 3), (8, 4, 1, 1, 1, 1), (1, 8, 3, 3, 3, 3))
    assert_rule(dmlpy.validate(desc), "TENSOR.DIMENSION_COUNT_SUPPORT", f"{CONV}.InputTensor.DimensionCount")


# ---------------------------------------------------------------------------------------
# Output-size helpers against hand-computed sizes


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param((112, 3, 2, 1, 1), 56, id="112, k 3, s 2, pad 1+1: (112 + 2 - 3) / 2 + 1 = 56"),
        pytest.param((6, 3), 4, id="6, k 3: 6 - 3 + 1 = 4"),
        pytest.param((10, 3, 1, 0, 0, 2), 6, id="10, k 3, d 2: 10 - 5 + 1 = 6"),
        pytest.param((7, 2, 3, 0, 1), 3, id="7, k 2, s 3, end 1: (7 + 1 - 2) / 3 + 1 = 3"),
        pytest.param((6, 3, 1, 0, 0, 1, 1), 5, id="OutputPadding 1 adds one: 4 + 1 = 5"),
        pytest.param((1, 1, 2**31, 2**31 - 1, 0), 1, id="huge stride and padding: (1 + 2^31 - 1 - 1) / 2^31 + 1 = 1"),
    ],
)
def test_forward_output_size_matches_hand_computed_sizes(args: tuple[int, ...], expected: int) -> None:
    assert forward_output_size(*args) == expected


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param((32, 4, 2, 1, 1), 64, id="32, k 4, s 2, pad 1+1: 31 * 2 + 4 - 2 = 64 (2x upsampling)"),
        pytest.param((3, 3), 5, id="ONNX convtranspose_1d: (3 - 1) + 3 = 5"),
        pytest.param((3, 3, 3, 0, 0, 1), 9, id="ONNX convtranspose_pads-free stride 3: 2 * 3 + 3 = 9"),
        pytest.param((5, 4, 2, 1, 1, 2), 13, id="dilation 2: 4 * 2 + 7 - 2 = 13"),
        pytest.param((5, 4, 2, 1, 1, 1, 1), 11, id="OutputPadding 1: 10 + 1 = 11"),
        pytest.param((2, 1, 2**31, 2**31 - 1, 0), 2, id="huge stride and padding: 2^31 + 1 - (2^31 - 1) = 2"),
    ],
)
def test_backward_output_size_matches_hand_computed_sizes(args: tuple[int, ...], expected: int) -> None:
    assert backward_output_size(*args) == expected


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        pytest.param({"input_sizes": (1, 4, 6, 6), "filter_sizes": (8, 4, 3, 3)}, (1, 8, 4, 4), id="FORWARD: Cout = Filter[0] = 8"),
        pytest.param(
            {"input_sizes": (1, 16, 32, 32), "filter_sizes": (16, 8, 4, 4), "strides": (2, 2), "start_padding": (1, 1), "end_padding": (1, 1), "direction": BACKWARD},
            (1, 8, 64, 64), id="BACKWARD 2x: Cout = Filter[1] * 1 = 8, 64 x 64",
        ),
        pytest.param(
            {"input_sizes": (2, 6, 5, 5), "filter_sizes": (6, 2, 3, 3), "group_count": 3, "direction": BACKWARD},
            (2, 6, 7, 7), id="BACKWARD grouped: Cout = 2 * 3 = 6, (5 - 1) + 3 = 7",
        ),
        pytest.param({"input_sizes": (1, 2, 9), "filter_sizes": (3, 2, 4), "strides": (2,), "dilations": (2,)}, (1, 3, 2), id="1-D: (9 - 7) / 2 + 1 = 2"),
        pytest.param({"input_sizes": (1, 1, 4, 5, 6), "filter_sizes": (2, 1, 1, 2, 3)}, (1, 2, 4, 4, 4), id="3-D: 4, 5 - 1, 6 - 2"),
    ],
)  # fmt: skip
def test_convolution_output_sizes_match_hand_computed_sizes(kwargs: dict[str, Any], expected: tuple[int, ...]) -> None:
    assert convolution_output_sizes(**kwargs) == expected


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"input_sizes": (1, 4, 6, 6), "filter_sizes": (8, 4, 7, 3)}, id="a kernel larger than the input"),
        pytest.param({"input_sizes": (1, 4, 6, 6), "filter_sizes": (8, 4, 3, 3), "strides": (0, 1)}, id="a zero stride"),
        pytest.param({"input_sizes": (1, 4, 6, 6), "filter_sizes": (8, 4, 3, 3), "dilations": (1, 0)}, id="a zero dilation"),
        pytest.param({"input_sizes": (1, 4, 6, 6), "filter_sizes": (8, 1, 3, 3), "group_count": 3}, id="a group count that does not divide Cin"),
        pytest.param({"input_sizes": (1, 4, 1, 1), "filter_sizes": (4, 2, 3, 3), "start_padding": (2, 2), "end_padding": (2, 2), "direction": BACKWARD}, id="padding that empties a transposed output"),
        pytest.param({"input_sizes": (1, 4, 6, 6), "filter_sizes": (8, 4, 3)}, id="a filter of another rank"),
    ],
)  # fmt: skip
def test_convolution_output_sizes_refuses_impossible_shapes_with_value_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        convolution_output_sizes(**kwargs)


def test_the_helpers_sizes_are_what_the_validator_accepts() -> None:
    x, w = (2, 6, 9, 7), (6, 2, 3, 2)
    args = {"strides": (2, 3), "dilations": (2, 1), "start_padding": (1, 0), "end_padding": (0, 2), "group_count": 3}
    for direction in (FORWARD, BACKWARD):
        y = convolution_output_sizes(x, w, **args, direction=direction)
        desc = conv(x, w, y, direction=direction, Strides=args["strides"], Dilations=args["dilations"], StartPadding=args["start_padding"],
                    EndPadding=args["end_padding"], GroupCount=3)  # fmt: skip
        assert dmlpy.validate(desc).ok, str(dmlpy.validate(desc))


# ---------------------------------------------------------------------------------------
# The desc as a C struct: deep copies, DimensionCount, C++ printing, wrapping


def test_create_operator_deep_copies_the_fused_activation() -> None:
    fused = FusedActivation.linear(2.0, 1.0)
    desc = conv(FusedActivation=fused)
    op = numpy_device().create_operator(desc)
    fused.Desc.Alpha = 5.0
    desc.GroupCount = 3
    assert op.desc.FusedActivation.Desc.Alpha == 2.0
    assert op.desc.FusedActivation is not fused
    assert op.desc.GroupCount == 1


def test_dimension_count_none_is_derived_from_the_arrays() -> None:
    desc = bwd(DimensionCount=None)
    assert numpy_device().create_operator(desc).desc.DimensionCount == 2
    assert desc.DimensionCount is None


def test_the_desc_prints_as_cpp_with_its_fused_activation() -> None:
    text = conv(b=(1, 8, 1, 1), FusedActivation=FusedActivation.leaky_relu(0.25)).to_cpp("conv")
    assert "const DML_ACTIVATION_LEAKY_RELU_OPERATOR_DESC conv_FusedActivation_Desc = {nullptr, nullptr, 0.25f};" in text
    assert "DML_OPERATOR_ACTIVATION_LEAKY_RELU" in text
    assert "DML_CONVOLUTION_MODE_CROSS_CORRELATION, DML_CONVOLUTION_DIRECTION_FORWARD, 2," in text
    assert text.rstrip().endswith(", 1, &conv_FusedActivation};")


def test_bare_and_wrapped_descs_validate_the_same() -> None:
    desc = bwd(y=(1, 4, 9, 10), b=(2,))
    bare = dmlpy.validate(desc)
    wrapped = dmlpy.validate(DML_OPERATOR_DESC(OP.CONVOLUTION, desc))
    assert [(f.rule, f.path, f.message) for f in bare.findings] == [(f.rule, f.path, f.message) for f in wrapped.findings]
    assert dmlpy.operator_desc(desc).Type == OP.CONVOLUTION == 53


def test_the_c_zero_values_make_an_invalid_desc() -> None:
    """C's `DML_CONVOLUTION_OPERATOR_DESC desc = {}` has Mode CONVOLUTION (0) and GroupCount 0, as dmlpy's defaults."""
    desc = DML_CONVOLUTION_OPERATOR_DESC(buffer_tensor(DT.FLOAT32, (1, 4, 6, 6)), buffer_tensor(DT.FLOAT32, (8, 4, 3, 3)), None,
                                         buffer_tensor(DT.FLOAT32, (1, 8, 4, 4)), Strides=[1, 1], Dilations=[1, 1], StartPadding=[0, 0],
                                         EndPadding=[0, 0], OutputPadding=[0, 0])  # fmt: skip
    assert desc.Mode == CONV_MODE == 0 and desc.Direction == FORWARD == 0 and desc.GroupCount == 0
    assert rule_ids(dmlpy.validate(desc)) == ["CONVOLUTION.GROUP_COUNT_ZERO"]


def test_validate_collects_independent_errors_at_once() -> None:
    desc = bwd(w=(4, 2, 4, 4), y=(2, 4, 9, 10), b=(2,), Strides=[2, 0], GroupCount=1, FusedActivation=relu_with_tensors())
    found = {(f.rule, f.path) for f in dmlpy.validate(desc).errors}
    assert {
        ("CONVOLUTION.STRIDE_ZERO", f"{CONV}.Strides[1]"),
        ("CONVOLUTION.BATCH", f"{CONV}.OutputTensor.Sizes[0]"),
        ("CONVOLUTION.OUTPUT_CHANNELS", f"{CONV}.OutputTensor.Sizes[1]"),
        ("CONVOLUTION.BIAS_SHAPE", f"{CONV}.BiasTensor.Sizes"),
        ("ACTIVATION.FUSED_TENSORS_NOT_NULL", f"{FUSED}.InputTensor"),
    } <= found


# ---------------------------------------------------------------------------------------
# Binding the optional BiasTensor slot of a real convolution (DirectML's operator schema and DirectML's binding documentation)

X4 = np.arange(1 * 4 * 6 * 6, dtype=np.float32).reshape(1, 4, 6, 6) / 100
W4 = np.ones((8, 4, 3, 3), dtype=np.float32)


def compiled_conv(bias: bool, *, owned: str = "") -> tuple[dmlpy.Device, Any]:
    device = numpy_device()
    desc = conv(b=(1, 8, 1, 1) if bias else None)
    for name in owned.split(",") if owned else ():
        getattr(desc, name).Desc.Flags = DML_TENSOR_FLAGS.OWNED_BY_DML
    return device, device.compile_operator(device.create_operator(desc))


def uploaded(device: dmlpy.Device, array: np.ndarray) -> dmlpy.Buffer:
    buffer = device.create_buffer((array.nbytes + 3) & ~3)
    buffer.upload(array)
    return buffer


def test_convolution_has_three_input_slots_with_bias_optional() -> None:
    _, compiled = compiled_conv(False)
    assert [(s.name, s.optional, s.tensor is None) for s in compiled.input_slots()] == [
        ("InputTensor", False, False),
        ("FilterTensor", False, False),
        ("BiasTensor", True, True),
    ]
    assert compiled.get_binding_properties().RequiredDescriptorCount == 3  # input, filter, output


def test_binding_a_buffer_to_the_bias_the_desc_leaves_out_removes_the_device() -> None:
    device, compiled = compiled_conv(False)
    table = device.create_binding_table(compiled)
    with pytest.raises(dmlpy.DmlError) as caught:
        table.bind_inputs([buffer_binding(uploaded(device, X4)), buffer_binding(uploaded(device, W4)), buffer_binding(device.create_buffer(32))])
    assert_rule(caught.value, "BINDING.ABSENT_TENSOR_BOUND", "DML_OPERATOR_CONVOLUTION.BindInputs[2] (BiasTensor)")
    assert device.get_device_removed_reason() == HRESULT.E_INVALIDARG


def test_a_described_bias_bound_none_removes_the_device() -> None:
    device, compiled = compiled_conv(True)
    table = device.create_binding_table(compiled)
    with pytest.raises(dmlpy.DmlError) as caught:
        table.bind_inputs([buffer_binding(uploaded(device, X4)), buffer_binding(uploaded(device, W4)), DML_BINDING_DESC()])
    finding = assert_rule(caught.value, "BINDING.TENSOR_UNBOUND", "DML_OPERATOR_CONVOLUTION.BindInputs[2] (BiasTensor)")
    assert "optional" in finding.message


def test_binding_two_inputs_when_the_bias_is_absent_is_still_one_short() -> None:
    device, compiled = compiled_conv(False)
    table = device.create_binding_table(compiled)
    with pytest.raises(dmlpy.DmlError) as caught:
        table.bind_inputs([buffer_binding(uploaded(device, X4)), buffer_binding(uploaded(device, W4))])
    finding = assert_rule(caught.value, "BINDING.INPUT_COUNT", "DML_OPERATOR_CONVOLUTION.BindInputs")
    assert "InputTensor, FilterTensor, BiasTensor" in finding.message


def test_an_absent_bias_bound_none_runs(device: dmlpy.Device) -> None:
    # all-ones 3x3x4 filter over x / 100: each output sums 36 inputs
    y = dmlpy.run(conv(), device=device, InputTensor=X4, FilterTensor=W4, BiasTensor=None)
    expected = sum(X4[0, :, i : i + 4, j : j + 4].astype(np.float64) for i in range(3) for j in range(3)).sum(axis=0)
    np.testing.assert_allclose(y[0, 3], expected, rtol=1e-5)


def test_a_bias_given_to_run_for_a_desc_without_one_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="BiasTensor"):
        dmlpy.run(conv(), backend="numpy", InputTensor=X4, FilterTensor=W4, BiasTensor=np.zeros((1, 8, 1, 1), np.float32))


def test_owned_filter_and_bias_are_bound_at_initialize_and_none_at_execute() -> None:
    device, compiled = compiled_conv(True, owned="FilterTensor,BiasTensor")
    props = compiled.get_binding_properties()
    # 8 * 4 * 3 * 3 * 4 = 1152 bytes -> 1280 (256-aligned), then the bias 32 bytes -> 256
    assert props.PersistentResourceSize == 1280 + 256
    bias = np.arange(8, dtype=np.float32).reshape(1, 8, 1, 1)
    x, w, b = uploaded(device, X4), uploaded(device, W4), uploaded(device, bias)
    y = device.create_buffer(8 * 16 * 4)
    persistent = device.create_buffer(props.PersistentResourceSize)
    recorder, command_list = device.create_command_recorder(), device.create_command_list()
    initializer = device.create_operator_initializer([compiled])
    table = device.create_binding_table(initializer)
    table.bind_inputs([array_binding([None, buffer_binding(w).Desc, buffer_binding(b).Desc])])
    table.bind_outputs([buffer_binding(persistent)])
    recorder.record_dispatch(command_list, initializer, table)
    command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav()])  # the dispatch after the initializer reads what it wrote
    table.reset(DML_BINDING_TABLE_DESC(compiled, 0, 0, props.RequiredDescriptorCount))
    table.bind_inputs([buffer_binding(x), DML_BINDING_DESC(), DML_BINDING_DESC()])
    table.bind_outputs([buffer_binding(y)])
    table.bind_persistent_resource(buffer_binding(persistent))
    recorder.record_dispatch(command_list, compiled, table)
    command_list.close()
    device.execute(command_list)
    result = y.read(buffer_tensor(DT.FLOAT32, (1, 8, 4, 4)))
    window_sums = sum(X4[0, :, i : i + 4, j : j + 4].astype(np.float64) for i in range(3) for j in range(3)).sum(axis=0)
    np.testing.assert_allclose(result[0], window_sums[None] + np.arange(8)[:, None, None], rtol=1e-5)


def test_an_owned_bias_bound_again_at_execute_removes_the_device() -> None:
    device, compiled = compiled_conv(True, owned="BiasTensor")
    table = device.create_binding_table(compiled)
    with pytest.raises(dmlpy.DmlError) as caught:
        table.bind_inputs([buffer_binding(uploaded(device, X4)), buffer_binding(uploaded(device, W4)), buffer_binding(device.create_buffer(32))])
    assert_rule(caught.value, "BINDING.OWNED_INPUT_AT_EXECUTE", "DML_OPERATOR_CONVOLUTION.BindInputs[2] (BiasTensor)")


# ---------------------------------------------------------------------------------------
# A transposed output whose natural size is 0 or less: the gradient of a FORWARD convolution
# whose last window overhangs the input must still be expressible as BACKWARD


def test_the_gradient_of_an_overhanging_forward_window_is_a_valid_backward_desc() -> None:
    # FORWARD: 1 input, kernel 1, stride 2, end padding 1: (1 + 0 + 1 - 1) / 2 + 1 = 1 output.
    # BACKWARD back to 1: natural (1 - 1) * 2 + 1 - 0 - 1 = 0, and stride 2 allows one more: 1.
    forward = conv((1, 4, 1, 1), (8, 4, 1, 1), (1, 8, 1, 1), Strides=[2, 2], EndPadding=[1, 1])
    backward = bwd((1, 8, 1, 1), (8, 4, 1, 1), (1, 4, 1, 1), Strides=[2, 2], StartPadding=[0, 0], EndPadding=[1, 1])
    assert dmlpy.validate(forward).ok and dmlpy.validate(backward).ok
    assert dmlpy.backward_output_size_range(1, 1, 2, 0, 1) == (1, 1)
    assert backward_output_size(1, 1, 2, 0, 1) == 1


def test_a_non_positive_natural_size_names_the_accepted_range() -> None:
    desc = bwd((1, 8, 1, 1), (8, 4, 1, 1), (1, 4, 2, 1), Strides=[3, 3], StartPadding=[0, 0], EndPadding=[1, 1])
    # natural (1 - 1) * 3 + 1 - 0 - 1 = 0; with stride 3 the sizes 1 .. 2 are accepted, so H 2 passes, W 1 too
    assert dmlpy.validate(desc).ok
    desc = bwd((1, 8, 1, 1), (8, 4, 1, 1), (1, 4, 3, 1), Strides=[3, 3], StartPadding=[0, 0], EndPadding=[1, 1])
    finding = assert_rule(dmlpy.validate(desc), "CONVOLUTION.BACKWARD_OUTPUT_SIZE", f"{CONV}.OutputTensor.Sizes[2]")
    assert finding.message == "is 3, expected 1 .. 2: (1 - 1) * 3 + 1 - 0 - 1 = 0, + 0 .. 2 for stride 3, and at least 1"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param((32, 4, 2, 1, 1), (64, 65), id="2x decoder: 64 .. 65"),
        pytest.param((5, 3, 1), (7, 7), id="stride 1 accepts one size"),
        pytest.param((1, 1, 3, 0, 2), (1, 1), id="natural -1, + 2 for stride 3: only 1"),
        pytest.param((4, 2, 3, 0, 0, 1, 1), (12, 14), id="OutputPadding 1 shifts both ends: 3 * 3 + 2 + 1 = 12 .. 14"),
    ],
)
def test_backward_output_size_range_matches_hand_computed_ranges(args: tuple[int, ...], expected: tuple[int, int]) -> None:
    assert dmlpy.backward_output_size_range(*args) == expected


# ---------------------------------------------------------------------------------------
# GEMM: the DML_GEMM_OPERATOR_DESC page's sizes, A {.., M, K} x B {.., K, N} = Output {.., M, N}

GEMM = "DML_GEMM_OPERATOR_DESC"


def gemm(
    a: tuple[int, ...] = (1, 1, 2, 3),
    b: tuple[int, ...] = (1, 1, 3, 4),
    y: tuple[int, ...] = (1, 1, 2, 4),
    c: tuple[int, ...] | None = None,
    *,
    dtype: Any = DT.FLOAT32,
    a_type: Any = None,
    trans_a: Any = 0,
    trans_b: Any = 0,
) -> Any:
    """Default: M = 2, K = 3, N = 4, no transforms."""
    from dmlpy.operators.descs import DML_GEMM_OPERATOR_DESC  # noqa: PLC0415

    return DML_GEMM_OPERATOR_DESC(
        buffer_tensor(a_type or dtype, a), buffer_tensor(dtype, b), None if c is None else buffer_tensor(dtype, c), buffer_tensor(dtype, y),
        trans_a, trans_b, 1.0, 1.0, None,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("value", "level"),
    [
        pytest.param(gemm(), FL.LEVEL_1_0, id="GEMM {1,1,2,3} x {1,1,3,4} = {1,1,2,4} is valid at FL 1.0"),
        pytest.param(gemm((1, 1, 3, 2), (1, 1, 4, 3), trans_a=1, trans_b=1), FL.LEVEL_1_0, id="GEMM with both transposes: A {K=3, M=2}, B {N=4, K=3} gives {M=2, N=4}"),
        pytest.param(gemm((2, 3), (3, 4), (2, 4), (2, 4)), FL.LEVEL_4_0, id="2-D GEMM with C {2,4} is valid from FL 4.0"),
        pytest.param(gemm((5, 2, 3), (5, 3, 4), (5, 2, 4)), FL.LEVEL_4_0, id="3-D GEMM with batch 5 is valid from FL 4.0"),
    ],
)
def test_a_valid_gemm_gets_no_finding(value: Any, level: FL) -> None:
    assert rule_ids(dmlpy.validate(value, feature_level=level)) == []


@pytest.mark.parametrize(
    ("value", "level", "rule_id", "path"),
    [
        pytest.param(gemm(b=(1, 1, 5, 4)), FL.LEVEL_1_0, "GEMM.INNER_SIZE", f"{GEMM}.BTensor.Sizes[2]", id="B's K 5 differs from A's K 3"),
        pytest.param(gemm(b=(1, 1, 3, 4), trans_b=1), FL.LEVEL_1_0, "GEMM.INNER_SIZE", f"{GEMM}.BTensor.Sizes[3]", id="with TransB, B {1,1,3,4} means N = 3, K = Sizes[3] = 4, not A's 3"),
        pytest.param(gemm(trans_a=1), FL.LEVEL_1_0, "GEMM.INNER_SIZE", f"{GEMM}.BTensor.Sizes[2]", id="TransA makes A {1,1,2,3} mean K = 2, M = 3; B's K is 3"),
        pytest.param(gemm(y=(1, 1, 3, 4)), FL.LEVEL_1_0, "GEMM.OUTPUT_SIZE", f"{GEMM}.OutputTensor.Sizes[2]", id="output rows 3, expected M = 2"),
        pytest.param(gemm(y=(1, 1, 2, 3)), FL.LEVEL_1_0, "GEMM.OUTPUT_SIZE", f"{GEMM}.OutputTensor.Sizes[3]", id="output columns 3, expected N = 4"),
        pytest.param(gemm((1, 1, 3, 2), y=(1, 1, 3, 4), trans_a=1), FL.LEVEL_1_0, "GEMM.OUTPUT_SIZE", f"{GEMM}.OutputTensor.Sizes[2]", id="TransA: A {K=3, M=2} gives M = 2, not the untransposed 3"),
        pytest.param(gemm((2, 1, 2, 3)), FL.LEVEL_1_0, "GEMM.BATCH_SIZES", f"{GEMM}.ATensor.Sizes[0]", id="A's batch 2 differs from the output's 1"),
        pytest.param(gemm(b=(1, 2, 3, 4)), FL.LEVEL_1_0, "GEMM.BATCH_SIZES", f"{GEMM}.BTensor.Sizes[1]", id="B's channels 2 differ from the output's 1"),
        pytest.param(gemm(c=(1, 1, 1, 4)), FL.LEVEL_1_0, "TENSOR.SAME_SIZES", f"{GEMM}.OutputTensor.Sizes", id="C {1,1,1,4} is not the output's {1,1,2,4}: broadcast is by strides, the page wants equal Sizes"),
        pytest.param(gemm((1, 2, 3), (1, 3, 4), (1, 2, 4)), FL.LEVEL_3_1, "TENSOR.DIMENSION_COUNT_SUPPORT", f"{GEMM}.ATensor.DimensionCount", id="3-D GEMM below FL 4.0: the FL 1.0 table says 4 dims only"),
        pytest.param(gemm(b=(1, 3, 4)), FL.LEVEL_4_0, "TENSOR.SAME_DIMENSION_COUNT", f"{GEMM}.BTensor.DimensionCount", id="B 3-D with A 4-D"),
        pytest.param(gemm(dtype=DT.INT32), FL.LEVEL_6_4, "TENSOR.DATA_TYPE_SUPPORT", f"{GEMM}.ATensor.DataType", id="INT32 GEMM: FLOAT32 and FLOAT16 only at every level"),
        pytest.param(gemm(a_type=DT.FLOAT16), FL.LEVEL_1_0, "TENSOR.SAME_DATA_TYPE", f"{GEMM}.BTensor.DataType", id="A FLOAT16 with B FLOAT32"),
        pytest.param(gemm(trans_a=2), FL.LEVEL_1_0, "ENUM.VALUE", f"{GEMM}.TransA", id="TransA 2 is no DML_MATRIX_TRANSFORM"),
    ],
)
def test_gemm_rule_is_reported_at_its_field(value: Any, level: FL, rule_id: str, path: str) -> None:
    assert_rule(dmlpy.validate(value, feature_level=level), rule_id, path)


def test_gemm_output_size_message_names_m_and_where_it_comes_from() -> None:
    finding = assert_rule(dmlpy.validate(gemm(y=(1, 1, 3, 4))), "GEMM.OUTPUT_SIZE")
    assert "ATensor.Sizes[2] = 2" in finding.message
