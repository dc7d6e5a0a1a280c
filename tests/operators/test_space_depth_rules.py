"""Space/depth validation: every SPACE_DEPTH.* rule and the generic rules these descs trigger.

Each case names the C field path its finding must carry. Expected sizes are worked out by
hand in the case ids from the space-to-depth and depth-to-space pages ({N, C*B*B, H/B, W/B} and the inverse) and the
decisions of docs/deviations.md; the support tables are transcribed from the space-to-depth and depth-to-space pages.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import assert_rule, rule_ids

import dmlpy
from dmlpy import (
    DML_DEPTH_SPACE_ORDER,
    DML_DEPTH_TO_SPACE1_OPERATOR_DESC,
    DML_DEPTH_TO_SPACE_OPERATOR_DESC,
    DML_FEATURE_LEVEL,
    DML_OPERATOR_DESC,
    DML_OPERATOR_TYPE,
    DML_SPACE_TO_DEPTH1_OPERATOR_DESC,
    DML_SPACE_TO_DEPTH_OPERATOR_DESC,
    DML_TENSOR_DATA_TYPE,
    HRESULT,
    buffer_tensor,
)
from dmlpy.support import OPERATORS

DT = DML_TENSOR_DATA_TYPE
FL = DML_FEATURE_LEVEL
OP = DML_OPERATOR_TYPE
ORDER = DML_DEPTH_SPACE_ORDER
S2D = "DML_SPACE_TO_DEPTH_OPERATOR_DESC"
S2D1 = "DML_SPACE_TO_DEPTH1_OPERATOR_DESC"
D2S = "DML_DEPTH_TO_SPACE_OPERATOR_DESC"
D2S1 = "DML_DEPTH_TO_SPACE1_OPERATOR_DESC"

CLASSES = {
    S2D: DML_SPACE_TO_DEPTH_OPERATOR_DESC,
    S2D1: DML_SPACE_TO_DEPTH1_OPERATOR_DESC,
    D2S: DML_DEPTH_TO_SPACE_OPERATOR_DESC,
    D2S1: DML_DEPTH_TO_SPACE1_OPERATOR_DESC,
}


def desc(
    kind: str = S2D1,
    x: tuple[int, ...] | None = None,
    y: tuple[int, ...] | None = None,
    block: Any = 2,
    *,
    x_type: DT = DT.FLOAT32,
    y_type: DT | None = None,
    **fields: Any,
) -> Any:
    """Space-to-depth defaults: the doc example {1,2,4,6} -> {1,8,2,3} with B = 2; depth-to-space its inverse."""
    to_depth = kind in (S2D, S2D1)
    x = x or ((1, 2, 4, 6) if to_depth else (1, 8, 2, 3))
    y = y or ((1, 8, 2, 3) if to_depth else (1, 2, 4, 6))
    return CLASSES[kind](buffer_tensor(x_type, x), buffer_tensor(y_type or x_type, y), block, **fields)


# ---------------------------------------------------------------------------------------
# Valid descs


@pytest.mark.parametrize(
    ("value", "level"),
    [
        pytest.param(
            desc(S2D),
            FL.LEVEL_1_0,
            id="SPACE_TO_DEPTH {1,2,4,6} -> {1,8,2,3} with B = 2 (the doc example) is valid at FL 1.0",
        ),
        pytest.param(desc(D2S), FL.LEVEL_1_0, id="DEPTH_TO_SPACE {1,8,2,3} -> {1,2,4,6} with B = 2 is valid at FL 1.0"),
        pytest.param(
            desc(S2D1, Order=ORDER.COLUMN_ROW_DEPTH),
            FL.LEVEL_2_1,
            id="SPACE_TO_DEPTH1 with COLUMN_ROW_DEPTH is valid at FL 2.1",
        ),
        pytest.param(
            desc(D2S1, Order=ORDER.DEPTH_COLUMN_ROW),
            FL.LEVEL_2_1,
            id="DEPTH_TO_SPACE1 with DEPTH_COLUMN_ROW is valid at FL 2.1",
        ),
        pytest.param(desc(S2D, x_type=DT.FLOAT16), FL.LEVEL_1_0, id="FLOAT16 is supported from FL 1.0"),
        pytest.param(desc(S2D, x_type=DT.UINT8), FL.LEVEL_2_1, id="UINT8 is supported from FL 2.1"),
        pytest.param(desc(D2S1, x_type=DT.INT16), FL.LEVEL_2_1, id="INT16 is supported from FL 2.1"),
        pytest.param(
            desc(S2D1, x_type=DT.UINT32), FL.LEVEL_2_1, id="UINT32 (the doc example's type) is supported from FL 2.1"
        ),
        pytest.param(desc(S2D1, x_type=DT.FLOAT64), FL.LEVEL_5_0, id="FLOAT64 is supported from FL 5.0"),
        pytest.param(desc(D2S, x_type=DT.INT64), FL.LEVEL_5_0, id="INT64 is supported from FL 5.0"),
        pytest.param(
            desc(S2D, (1, 3, 5, 7), (1, 3, 5, 7), 1),
            FL.LEVEL_1_0,
            id="BlockSize 1 with output sizes equal to the input sizes is valid: the identity",
        ),
        pytest.param(
            desc(D2S1, (2, 3, 5, 7), (2, 3, 5, 7), 1, Order=ORDER.COLUMN_ROW_DEPTH),
            FL.LEVEL_2_1,
            id="DEPTH_TO_SPACE1 with BlockSize 1 is the identity too",
        ),
        pytest.param(
            desc(S2D, (2, 3, 9, 6), (2, 27, 3, 2), 3),
            FL.LEVEL_1_0,
            id="B = 3: {2,3,9,6} -> {2, 3*9 = 27, 9/3 = 3, 6/3 = 2}",
        ),
        pytest.param(
            desc(D2S, (1, 32, 2, 1), (1, 2, 8, 4), 4),
            FL.LEVEL_1_0,
            id="B = 4: {1,32,2,1} -> {1, 32/16 = 2, 2*4 = 8, 1*4 = 4}",
        ),
        pytest.param(
            DML_SPACE_TO_DEPTH_OPERATOR_DESC(
                buffer_tensor(DT.FLOAT32, (1, 2, 4, 6), dmlpy.nhwc_strides((1, 2, 4, 6))),
                buffer_tensor(DT.FLOAT32, (1, 8, 2, 3), dmlpy.nhwc_strides((1, 8, 2, 3))),
                2,
            ),
            FL.LEVEL_1_0,
            id="NHWC strides on both tensors are valid",
        ),
    ],
)
def test_valid_descs_have_no_findings(value: Any, level: FL) -> None:
    report = dmlpy.validate(value, feature_level=level)
    assert report.ok and not report.findings, str(report)


# ---------------------------------------------------------------------------------------
# Every rule, with its C field path

RULE_CASES = [
    # exactly 4-D: the support tables' dimension range
    pytest.param(
        desc(S2D, (1, 2, 4, 6, 1)),
        FL.LEVEL_6_4,
        "TENSOR.DIMENSION_COUNT_SUPPORT",
        f"{S2D}.InputTensor.DimensionCount",
        id="a 5-D input is rejected: these tensors are exactly 4-D",
    ),
    pytest.param(
        desc(D2S1, y=(2, 4, 6)),
        FL.LEVEL_6_4,
        "TENSOR.DIMENSION_COUNT_SUPPORT",
        f"{D2S1}.OutputTensor.DimensionCount",
        id="a 3-D output is rejected even at FL 6.4",
    ),
    # data types by feature level
    pytest.param(
        desc(S2D, x_type=DT.UINT8),
        FL.LEVEL_2_0,
        "TENSOR.DATA_TYPE_SUPPORT",
        f"{S2D}.InputTensor.DataType",
        id="UINT8 is rejected before FL 2.1",
    ),
    pytest.param(
        desc(D2S, x_type=DT.INT32),
        FL.LEVEL_1_0,
        "TENSOR.DATA_TYPE_SUPPORT",
        f"{D2S}.OutputTensor.DataType",
        id="INT32 is rejected at FL 1.0 (on the output too)",
    ),
    pytest.param(
        desc(S2D1, x_type=DT.FLOAT64),
        FL.LEVEL_4_1,
        "TENSOR.DATA_TYPE_SUPPORT",
        f"{S2D1}.InputTensor.DataType",
        id="FLOAT64 is rejected at FL 4.1: the 64-bit types arrive for space/depth at FL 5.0",
    ),
    pytest.param(
        desc(D2S1, x_type=DT.UINT64),
        FL.LEVEL_3_0,
        "TENSOR.DATA_TYPE_SUPPORT",
        f"{D2S1}.InputTensor.DataType",
        id="UINT64 is rejected at FL 3.0 although the device has 64-bit types there",
    ),
    # the "1" descs from FL 2.1
    pytest.param(desc(S2D1), FL.LEVEL_2_0, "OPERATOR.FEATURE_LEVEL", S2D1, id="SPACE_TO_DEPTH1 is rejected at FL 2.0"),
    pytest.param(desc(D2S1), FL.LEVEL_1_0, "OPERATOR.FEATURE_LEVEL", D2S1, id="DEPTH_TO_SPACE1 is rejected at FL 1.0"),
    # SPACE_DEPTH.SAME_DATA_TYPE
    pytest.param(
        desc(S2D, y_type=DT.FLOAT16),
        FL.LEVEL_6_4,
        "SPACE_DEPTH.SAME_DATA_TYPE",
        f"{S2D}.OutputTensor.DataType",
        id="a FLOAT16 output for a FLOAT32 input is rejected",
    ),
    pytest.param(
        desc(D2S1, x_type=DT.INT8, y_type=DT.UINT8),
        FL.LEVEL_6_4,
        "SPACE_DEPTH.SAME_DATA_TYPE",
        f"{D2S1}.OutputTensor.DataType",
        id="INT8 in and UINT8 out are rejected: the same size is not the same type",
    ),
    # SPACE_DEPTH.BLOCK_SIZE_ZERO
    pytest.param(
        desc(S2D, block=0),
        FL.LEVEL_6_4,
        "SPACE_DEPTH.BLOCK_SIZE_ZERO",
        f"{S2D}.BlockSize",
        id="SpaceToDepth BlockSize 0 is rejected",
    ),
    pytest.param(
        desc(D2S1, block=0),
        FL.LEVEL_6_4,
        "SPACE_DEPTH.BLOCK_SIZE_ZERO",
        f"{D2S1}.BlockSize",
        id="DepthToSpace1 BlockSize 0 is rejected",
    ),
    # SPACE_DEPTH.ORDER
    pytest.param(
        desc(S2D1, Order=2), FL.LEVEL_6_4, "SPACE_DEPTH.ORDER", f"{S2D1}.Order", id="SpaceToDepth1 Order 2 is rejected"
    ),
    pytest.param(
        desc(D2S1, Order=2**32 - 1),
        FL.LEVEL_6_4,
        "SPACE_DEPTH.ORDER",
        f"{D2S1}.Order",
        id="DepthToSpace1 Order 0xFFFFFFFF is rejected",
    ),
    # SPACE_DEPTH.SPATIAL_DIVISIBLE (docs/deviations.md)
    pytest.param(
        desc(S2D, (1, 2, 5, 6), (1, 8, 2, 3)),
        FL.LEVEL_6_4,
        "SPACE_DEPTH.SPATIAL_DIVISIBLE",
        f"{S2D}.InputTensor.Sizes[2]",
        id="input H 5 with B = 2 is rejected: 5 % 2 = 1",
    ),
    pytest.param(
        desc(S2D1, (1, 2, 4, 7), (1, 8, 2, 3)),
        FL.LEVEL_6_4,
        "SPACE_DEPTH.SPATIAL_DIVISIBLE",
        f"{S2D1}.InputTensor.Sizes[3]",
        id="input W 7 with B = 2 is rejected: 7 % 2 = 1",
    ),
    pytest.param(
        desc(S2D, (1, 1, 6, 4), (1, 9, 2, 1), 3),
        FL.LEVEL_6_4,
        "SPACE_DEPTH.SPATIAL_DIVISIBLE",
        f"{S2D}.InputTensor.Sizes[3]",
        id="input W 4 with B = 3 is rejected: 4 % 3 = 1, even with the floored output 4 / 3 = 1",
    ),
    # SPACE_DEPTH.CHANNELS_DIVISIBLE (docs/deviations.md)
    pytest.param(
        desc(D2S, (1, 6, 2, 3), (1, 1, 4, 6)),
        FL.LEVEL_6_4,
        "SPACE_DEPTH.CHANNELS_DIVISIBLE",
        f"{D2S}.InputTensor.Sizes[1]",
        id="input C 6 with B = 2 is rejected: 6 % 4 = 2",
    ),
    pytest.param(
        desc(D2S1, (1, 8, 1, 1), (1, 1, 3, 3), 3),
        FL.LEVEL_6_4,
        "SPACE_DEPTH.CHANNELS_DIVISIBLE",
        f"{D2S1}.InputTensor.Sizes[1]",
        id="input C 8 with B = 3 is rejected: 8 % 9 = 8",
    ),
    # SPACE_DEPTH.OUTPUT_BATCH
    pytest.param(
        desc(S2D, y=(2, 8, 2, 3)),
        FL.LEVEL_6_4,
        "SPACE_DEPTH.OUTPUT_BATCH",
        f"{S2D}.OutputTensor.Sizes[0]",
        id="SpaceToDepth output N 2 for input N 1 is rejected",
    ),
    pytest.param(
        desc(D2S, y=(3, 2, 4, 6)),
        FL.LEVEL_6_4,
        "SPACE_DEPTH.OUTPUT_BATCH",
        f"{D2S}.OutputTensor.Sizes[0]",
        id="DepthToSpace output N 3 for input N 1 is rejected",
    ),
    # SPACE_DEPTH.OUTPUT_CHANNELS
    pytest.param(
        desc(S2D, y=(1, 4, 2, 3)),
        FL.LEVEL_6_4,
        "SPACE_DEPTH.OUTPUT_CHANNELS",
        f"{S2D}.OutputTensor.Sizes[1]",
        id="SpaceToDepth output C 4 is rejected: 2 * 2 * 2 = 8",
    ),
    pytest.param(
        desc(D2S1, y=(1, 4, 4, 6)),
        FL.LEVEL_6_4,
        "SPACE_DEPTH.OUTPUT_CHANNELS",
        f"{D2S1}.OutputTensor.Sizes[1]",
        id="DepthToSpace output C 4 is rejected: 8 / (2 * 2) = 2",
    ),
    pytest.param(
        desc(S2D, (1, 8, 2, 2), (1, 2, 4, 4)),
        FL.LEVEL_6_4,
        "SPACE_DEPTH.OUTPUT_CHANNELS",
        f"{S2D}.OutputTensor.Sizes[1]",
        id="SpaceToDepth sized by the depth-to-space formula the doc's member text prints is rejected: 8 * 4 = 32, not 8 / 4",
    ),
    # SPACE_DEPTH.OUTPUT_SPATIAL
    pytest.param(
        desc(S2D1, y=(1, 8, 3, 3)),
        FL.LEVEL_6_4,
        "SPACE_DEPTH.OUTPUT_SPATIAL",
        f"{S2D1}.OutputTensor.Sizes[2]",
        id="SpaceToDepth output H 3 is rejected: 4 / 2 = 2",
    ),
    pytest.param(
        desc(S2D, y=(1, 8, 2, 6)),
        FL.LEVEL_6_4,
        "SPACE_DEPTH.OUTPUT_SPATIAL",
        f"{S2D}.OutputTensor.Sizes[3]",
        id="SpaceToDepth output W 6 (the input W) is rejected: 6 / 2 = 3",
    ),
    pytest.param(
        desc(D2S, y=(1, 2, 2, 6)),
        FL.LEVEL_6_4,
        "SPACE_DEPTH.OUTPUT_SPATIAL",
        f"{D2S}.OutputTensor.Sizes[2]",
        id="DepthToSpace output H 2 is rejected: 2 * 2 = 4",
    ),
    pytest.param(
        desc(D2S1, y=(1, 2, 4, 5)),
        FL.LEVEL_6_4,
        "SPACE_DEPTH.OUTPUT_SPATIAL",
        f"{D2S1}.OutputTensor.Sizes[3]",
        id="DepthToSpace output W 5 is rejected: 3 * 2 = 6",
    ),
    pytest.param(
        desc(S2D, (1, 3, 5, 7), (1, 3, 5, 6), 1),
        FL.LEVEL_6_4,
        "SPACE_DEPTH.OUTPUT_SPATIAL",
        f"{S2D}.OutputTensor.Sizes[3]",
        id="BlockSize 1 with an output W different from the input W is rejected: 7 / 1 = 7",
    ),
    # C field types
    pytest.param(
        desc(S2D, block="2"), FL.LEVEL_6_4, "FIELD.TYPE", f"{S2D}.BlockSize", id="a string BlockSize is rejected"
    ),
    pytest.param(
        desc(S2D, block=2**32), FL.LEVEL_6_4, "FIELD.RANGE", f"{S2D}.BlockSize", id="BlockSize 2^32 does not fit a UINT"
    ),
    pytest.param(
        desc(S2D1, Order="DCR"),
        FL.LEVEL_6_4,
        "FIELD.TYPE",
        f"{S2D1}.Order",
        id="Order 'DCR' is not a DML_DEPTH_SPACE_ORDER name",
    ),
    pytest.param(
        desc(D2S1, Order=-1), FL.LEVEL_6_4, "FIELD.RANGE", f"{D2S1}.Order", id="Order -1 does not fit the enum's UINT"
    ),
]


@pytest.mark.parametrize(("value", "level", "rule_id", "path"), RULE_CASES)
def test_each_rule_fires_at_its_field_path(value: Any, level: FL, rule_id: str, path: str) -> None:
    report = dmlpy.validate(value, feature_level=level)
    assert not report.ok
    assert_rule(report, rule_id, path)


@pytest.mark.parametrize(("value", "level", "rule_id", "path"), RULE_CASES)
def test_create_operator_rejects_each_case_with_e_invalidarg(value: Any, level: FL, rule_id: str, path: str) -> None:
    device = dmlpy.create_device(level, backend="numpy")
    with pytest.raises(dmlpy.DmlError) as caught:
        device.create_operator(value)
    assert caught.value.hresult == HRESULT.E_INVALIDARG
    assert_rule(caught.value, rule_id, path)


# ---------------------------------------------------------------------------------------
# Messages: expected and actual values, the formula filled in


@pytest.mark.parametrize(
    ("value", "rule_id", "message"),
    [
        pytest.param(
            desc(S2D1, y=(1, 8, 3, 3)),
            "SPACE_DEPTH.OUTPUT_SPATIAL",
            "is 3, expected 2 = InputTensor.Sizes[2] / BlockSize = 4 / 2",
            id="output H names the division",
        ),
        pytest.param(
            desc(D2S, y=(1, 2, 4, 5)),
            "SPACE_DEPTH.OUTPUT_SPATIAL",
            "is 5, expected 6 = InputTensor.Sizes[3] * BlockSize = 3 * 2",
            id="output W names the product",
        ),
        pytest.param(
            desc(S2D, y=(1, 4, 2, 3)),
            "SPACE_DEPTH.OUTPUT_CHANNELS",
            "is 4, expected 8 = InputTensor.Sizes[1] * BlockSize * BlockSize = 2 * 2 * 2",
            id="space-to-depth output C names C * B * B",
        ),
        pytest.param(
            desc(D2S1, y=(1, 4, 4, 6)),
            "SPACE_DEPTH.OUTPUT_CHANNELS",
            "is 4, expected 2 = InputTensor.Sizes[1] / (BlockSize * BlockSize) = 8 / (2 * 2)",
            id="depth-to-space output C names C / (B * B)",
        ),
        pytest.param(
            desc(S2D, (1, 2, 5, 6), (1, 8, 2, 3)),
            "SPACE_DEPTH.SPATIAL_DIVISIBLE",
            "is 5, not a multiple of BlockSize 2 (5 % 2 = 1)",
            id="divisibility names the remainder",
        ),
        pytest.param(
            desc(D2S, (1, 6, 2, 3), (1, 1, 4, 6)),
            "SPACE_DEPTH.CHANNELS_DIVISIBLE",
            "is 6, not a multiple of BlockSize * BlockSize = 2 * 2 = 4 (6 % 4 = 2)",
            id="channel divisibility names B * B",
        ),
        pytest.param(
            desc(S2D, block=0), "SPACE_DEPTH.BLOCK_SIZE_ZERO", "is 0, expected at least 1", id="block size zero"
        ),
        pytest.param(
            desc(S2D1, Order=2),
            "SPACE_DEPTH.ORDER",
            "is 2, expected DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW (0) or DML_DEPTH_SPACE_ORDER_COLUMN_ROW_DEPTH (1)",
            id="order names both values",
        ),
        pytest.param(
            desc(S2D, y_type=DT.FLOAT16),
            "SPACE_DEPTH.SAME_DATA_TYPE",
            "is FLOAT16, expected FLOAT32 = InputTensor.DataType",
            id="data type",
        ),
    ],
)
def test_messages_carry_expected_actual_and_the_formula(value: Any, rule_id: str, message: str) -> None:
    finding = assert_rule(dmlpy.validate(value), rule_id)
    assert message in finding.message, finding.message


def test_the_doc_formula_mistake_reports_channels_and_both_spatial_sizes() -> None:
    """{1,8,2,2} sized by the page's (wrong) inverse formula gives {1,2,4,4}; the right output is {1,32,1,1}."""
    report = dmlpy.validate(desc(S2D, (1, 8, 2, 2), (1, 2, 4, 4)))
    assert sorted(f.path for f in report.errors) == [
        f"{S2D}.OutputTensor.Sizes[1]",
        f"{S2D}.OutputTensor.Sizes[2]",
        f"{S2D}.OutputTensor.Sizes[3]",
    ]
    assert [f.expected for f in report.errors] == [32, 1, 1]


def test_non_divisible_spatial_size_is_not_also_reported_as_a_wrong_output_size() -> None:
    """H 5 with B = 2 has no right output H; only SPATIAL_DIVISIBLE speaks for it (W 6 / 2 = 3 is still checked)."""
    report = dmlpy.validate(desc(S2D, (1, 2, 5, 6), (1, 8, 2, 4)))
    assert rule_ids(report) == ["SPACE_DEPTH.SPATIAL_DIVISIBLE", "SPACE_DEPTH.OUTPUT_SPATIAL"]
    assert report.errors[1].path == f"{S2D}.OutputTensor.Sizes[3]"


def test_a_huge_block_size_is_reported_not_overflowed() -> None:
    """B = 2^32 - 1: B * B is far beyond any UINT size; the rules say so instead of wrapping."""
    big = 2**32 - 1
    report = dmlpy.validate(desc(D2S, (1, 4, 1, 1), (1, 1, 2, 2), big))
    assert "SPACE_DEPTH.CHANNELS_DIVISIBLE" in rule_ids(report)
    report = dmlpy.validate(desc(S2D, (1, 1, 2, 2), (1, 4, 1, 1), big))
    assert rule_ids(report).count("SPACE_DEPTH.SPATIAL_DIVISIBLE") == 2
    assert assert_rule(report, "SPACE_DEPTH.OUTPUT_CHANNELS").expected == big * big


def test_block_size_zero_skips_the_size_rules_that_would_divide_by_it() -> None:
    assert rule_ids(dmlpy.validate(desc(D2S, block=0))) == ["SPACE_DEPTH.BLOCK_SIZE_ZERO"]


def test_every_finding_of_a_desc_is_reported_at_once() -> None:
    value = desc(S2D1, (1, 2, 5, 6), (2, 8, 2, 4), Order=3, y_type=DT.FLOAT16)
    assert sorted(rule_ids(dmlpy.validate(value))) == ["SPACE_DEPTH.ORDER", "SPACE_DEPTH.SAME_DATA_TYPE"]
    value = desc(S2D1, (1, 2, 5, 6), (2, 8, 2, 4), y_type=DT.FLOAT16)
    assert sorted(rule_ids(dmlpy.validate(value))) == [
        "SPACE_DEPTH.OUTPUT_BATCH",
        "SPACE_DEPTH.OUTPUT_SPATIAL",
        "SPACE_DEPTH.SAME_DATA_TYPE",
        "SPACE_DEPTH.SPATIAL_DIVISIBLE",
    ]


# ---------------------------------------------------------------------------------------
# Order, wrapping and printing


def test_order_accepts_the_enum_its_value_and_its_name() -> None:
    for order in (ORDER.COLUMN_ROW_DEPTH, 1, "COLUMN_ROW_DEPTH"):
        operator = dmlpy.create_device(backend="numpy").create_operator(desc(S2D1, Order=order))
        assert operator.desc.Order is ORDER.COLUMN_ROW_DEPTH


def test_the_plain_descs_have_no_order_field() -> None:
    assert not hasattr(desc(S2D), "Order")
    assert not hasattr(desc(D2S), "Order")


def test_a_wrapped_desc_validates_like_the_bare_one() -> None:
    wrapped = DML_OPERATOR_DESC(OP.DEPTH_TO_SPACE1, desc(D2S1, y=(1, 2, 4, 5)))
    assert_rule(dmlpy.validate(wrapped), "SPACE_DEPTH.OUTPUT_SPATIAL", f"{D2S1}.OutputTensor.Sizes[3]")
    assert dmlpy.operator_desc(desc(S2D)).Type == OP.SPACE_TO_DEPTH


def test_a_desc_under_another_type_tag_is_rejected() -> None:
    assert_rule(dmlpy.validate(DML_OPERATOR_DESC(OP.SPACE_TO_DEPTH1, desc(S2D))), "OPERATOR.TYPE", "DML_OPERATOR_DESC")


def test_the_cpp_aggregate_names_the_order() -> None:
    text = desc(S2D1, Order=ORDER.COLUMN_ROW_DEPTH).to_cpp("s2d")
    assert text.endswith(
        "const DML_SPACE_TO_DEPTH1_OPERATOR_DESC s2d = {&s2d_InputTensor, &s2d_OutputTensor, 2, DML_DEPTH_SPACE_ORDER_COLUMN_ROW_DEPTH};"
    )


def test_create_operator_copies_the_desc() -> None:
    value = desc(S2D)
    operator = dmlpy.create_device(backend="numpy").create_operator(value)
    value.BlockSize = 0
    assert operator.desc.BlockSize == 2


# ---------------------------------------------------------------------------------------
# Support tables (transcribed from the space-to-depth and depth-to-space pages)

FL_1_0_TYPES = ["FLOAT32", "FLOAT16"]
FL_2_1_TYPES = ["FLOAT32", "FLOAT16", "INT32", "INT16", "INT8", "UINT32", "UINT16", "UINT8"]
FL_5_0_TYPES = [
    "FLOAT64",
    "FLOAT32",
    "FLOAT16",
    "INT64",
    "INT32",
    "INT16",
    "INT8",
    "UINT64",
    "UINT32",
    "UINT16",
    "UINT8",
]


@pytest.mark.parametrize(
    ("op", "introduced", "rows"),
    [
        pytest.param(
            OP.SPACE_TO_DEPTH,
            FL.LEVEL_1_0,
            {FL.LEVEL_1_0: FL_1_0_TYPES, FL.LEVEL_2_1: FL_2_1_TYPES, FL.LEVEL_5_0: FL_5_0_TYPES},
            id="SPACE_TO_DEPTH rows at FL 1.0, 2.1 and 5.0",
        ),
        pytest.param(
            OP.DEPTH_TO_SPACE,
            FL.LEVEL_1_0,
            {FL.LEVEL_1_0: FL_1_0_TYPES, FL.LEVEL_2_1: FL_2_1_TYPES, FL.LEVEL_5_0: FL_5_0_TYPES},
            id="DEPTH_TO_SPACE rows at FL 1.0, 2.1 and 5.0",
        ),
        pytest.param(
            OP.SPACE_TO_DEPTH1,
            FL.LEVEL_2_1,
            {FL.LEVEL_2_1: FL_2_1_TYPES, FL.LEVEL_5_0: FL_5_0_TYPES},
            id="SPACE_TO_DEPTH1 rows at FL 2.1 and 5.0",
        ),
        pytest.param(
            OP.DEPTH_TO_SPACE1,
            FL.LEVEL_2_1,
            {FL.LEVEL_2_1: FL_2_1_TYPES, FL.LEVEL_5_0: FL_5_0_TYPES},
            id="DEPTH_TO_SPACE1 rows at FL 2.1 and 5.0",
        ),
    ],
)
def test_support_tables_match_the_reference(op: OP, introduced: FL, rows: dict[FL, list[str]]) -> None:
    support = OPERATORS[op]
    assert support.introduced == introduced
    assert [(s.name, s.kind) for s in support.slots] == [("InputTensor", "input"), ("OutputTensor", "output")]
    assert {level: [t.name for t in table["InputTensor"].data_types] for level, table in support.tables.items()} == rows
    for table in support.tables.values():
        assert table["InputTensor"] == table["OutputTensor"]
        assert table["InputTensor"].dimension_counts == (4, 4)


@pytest.mark.parametrize("data_type", list(DT)[1:12], ids=lambda t: t.name)
def test_every_byte_sized_type_is_accepted_exactly_from_its_feature_level(data_type: DT) -> None:
    first = (
        FL.LEVEL_1_0
        if data_type.name in FL_1_0_TYPES
        else FL.LEVEL_2_1
        if data_type.name in FL_2_1_TYPES
        else FL.LEVEL_5_0
    )
    for level in FL:
        ok = dmlpy.validate(desc(S2D, x_type=data_type), feature_level=level).ok
        assert ok == (level >= first), (data_type, level)


def test_four_bit_types_are_never_supported() -> None:
    assert_rule(dmlpy.validate(desc(S2D1, x_type=DT.INT4)), "TENSOR.DATA_TYPE_SUPPORT", f"{S2D1}.InputTensor.DataType")


# ---------------------------------------------------------------------------------------
# Output-size helpers


@pytest.mark.parametrize(
    ("function", "sizes", "block", "expected"),
    [
        pytest.param(
            dmlpy.space_to_depth_output_sizes,
            (1, 2, 4, 6),
            2,
            (1, 8, 2, 3),
            id="space-to-depth of the doc example: {1,2,4,6} -> {1,8,2,3}",
        ),
        pytest.param(
            dmlpy.depth_to_space_output_sizes,
            (1, 8, 2, 3),
            2,
            (1, 2, 4, 6),
            id="depth-to-space of the doc example: {1,8,2,3} -> {1,2,4,6}",
        ),
        pytest.param(
            dmlpy.space_to_depth_output_sizes,
            (8, 64, 112, 112),
            2,
            (8, 256, 56, 56),
            id="8x64x112x112 with B = 2 -> 8x256x56x56",
        ),
        pytest.param(
            dmlpy.space_to_depth_output_sizes,
            (1, 16, 512, 512),
            4,
            (1, 256, 128, 128),
            id="1x16x512x512 with B = 4 -> 1x256x128x128",
        ),
        pytest.param(dmlpy.depth_to_space_output_sizes, (2, 3, 5, 7), 1, (2, 3, 5, 7), id="B = 1 is the identity"),
    ],
)
def test_output_size_helpers(function: Any, sizes: tuple[int, ...], block: int, expected: tuple[int, ...]) -> None:
    assert function(sizes, block) == expected


@pytest.mark.parametrize(
    ("function", "sizes", "block", "match"),
    [
        pytest.param(
            dmlpy.space_to_depth_output_sizes, (1, 2, 5, 6), 2, "multiples of BlockSize", id="H not divisible"
        ),
        pytest.param(
            dmlpy.depth_to_space_output_sizes, (1, 6, 2, 2), 2, "multiple of BlockSize", id="C not divisible by B * B"
        ),
        pytest.param(dmlpy.space_to_depth_output_sizes, (1, 2, 4), 2, "exactly 4-D", id="3-D"),
        pytest.param(dmlpy.depth_to_space_output_sizes, (1, 4, 2, 2), 0, "at least 1", id="B = 0"),
    ],
)
def test_output_size_helpers_refuse_what_the_rules_refuse(
    function: Any, sizes: tuple[int, ...], block: int, match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        function(sizes, block)


# ---------------------------------------------------------------------------------------
# TensorFlow helpers: what they build, and what they refuse


def test_tensorflow_nhwc_is_nchw_sizes_with_nhwc_strides_on_both_tensors() -> None:
    op = dmlpy.tensorflow_space_to_depth((1, 4, 4, 1), 2, "NHWC", np.float32)
    assert isinstance(op.desc, DML_SPACE_TO_DEPTH_OPERATOR_DESC)
    x, y = op.desc.InputTensor.Desc, op.desc.OutputTensor.Desc
    assert (tuple(x.Sizes), tuple(x.Strides)) == ((1, 1, 4, 4), (16, 1, 4, 1))  # [N, H, W, C] = [1, 4, 4, 1] in memory
    assert (tuple(y.Sizes), tuple(y.Strides)) == ((1, 4, 2, 2), (16, 1, 8, 4))  # [1, 2, 2, 4] in memory
    assert op.output_shape == (1, 2, 2, 4)
    assert dmlpy.validate(op.desc, feature_level=FL.LEVEL_1_0).ok


def test_tensorflow_nchw_vect_c_with_one_batch_puts_the_lanes_on_the_batch_axis() -> None:
    op = dmlpy.tensorflow_space_to_depth((1, 2, 4, 6, 4), 2, "NCHW_VECT_C", np.int8)
    x, y = op.desc.InputTensor.Desc, op.desc.OutputTensor.Desc
    assert (x.DataType, tuple(x.Sizes), tuple(x.Strides)) == (DT.INT8, (4, 2, 4, 6), (1, 96, 24, 4))
    assert (tuple(y.Sizes), tuple(y.Strides)) == ((4, 8, 2, 3), (1, 24, 12, 4))
    assert op.output_shape == (1, 8, 2, 3, 4) and op.lanes == "batch"
    assert dmlpy.validate(op.desc, feature_level=FL.LEVEL_2_1).ok


def test_tensorflow_nchw_vect_c_with_several_batches_is_a_clear_error_naming_the_limitation() -> None:
    with pytest.raises(ValueError, match="one stride per dimension") as caught:
        dmlpy.tensorflow_space_to_depth((2, 2, 4, 6, 4), 2, "NCHW_VECT_C", np.int8)
    assert "vect_c_as_int32=True" in str(caught.value)
    op = dmlpy.tensorflow_space_to_depth((2, 2, 4, 6, 4), 2, "NCHW_VECT_C", np.int8, vect_c_as_int32=True)
    assert op.desc.InputTensor.Desc.DataType == DT.INT32 and tuple(op.desc.InputTensor.Desc.Sizes) == (2, 2, 4, 6)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        pytest.param(
            lambda: dmlpy.tensorflow_space_to_depth((1, 2, 2, 1), 1),
            "block_size must be an integer >= 2",
            id="TensorFlow's block_size 1",
        ),
        pytest.param(
            lambda: dmlpy.tensorflow_space_to_depth((1, 2, 2, 1), 2, "NCWH"), "not one of", id="an unknown data_format"
        ),
        pytest.param(
            lambda: dmlpy.tensorflow_space_to_depth((1, 3, 2, 1), 2), "multiples of BlockSize", id="H 3 with block 2"
        ),
        pytest.param(
            lambda: dmlpy.tensorflow_depth_to_space((1, 2, 2, 3), 2), "multiple of BlockSize", id="depth 3 with block 2"
        ),
        pytest.param(
            lambda: dmlpy.tensorflow_space_to_depth((1, 2, 2, 2, 4), 2, "NCHW_VECT_C", np.float32),
            "qint8",
            id="VECT_C of float32",
        ),
        pytest.param(
            lambda: dmlpy.tensorflow_space_to_depth((1, 2, 2, 2, 3), 2, "NCHW_VECT_C", np.int8),
            r"\[N, C/4, H, W, 4\]",
            id="VECT_C lanes of 3",
        ),
        pytest.param(
            lambda: dmlpy.tensorflow_depth_to_space((1, 2, 2, 2, 4), 2, "NCHW_VECT_C", np.int8),
            "whole number of 4-lane vectors",
            id="VECT_C output depth 8 / 4 = 2 is not a vector of 4",
        ),
        pytest.param(lambda: dmlpy.tensorflow_space_to_depth((1, 2, 2), 2), "4-D", id="a 3-D NHWC shape"),
    ],
)
def test_tensorflow_helpers_refuse_what_tensorflow_or_directml_cannot_do(call: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()
