"""Reduction validation: REDUCE.* and TOP_K.* rules, and the generic rules these descs trigger.

Expected sizes come from the DML_REDUCE_OPERATOR_DESC page (the input's sizes with 1 on each
reduced axis, its examples {3,3} -> {1,3}, {3,1}, {1,1}), the ARGMIN and ARGMAX pages, and the
TOP_K and TOP_K1 pages (the input's sizes with K on Axis, their example {1,1,3,4} -> {1,1,3,2}),
worked out in the case ids. Data types per level are the pages' support tables.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import assert_rule, rule_ids

import dmlpy
from dmlpy import DML_FEATURE_LEVEL as FL
from dmlpy import DML_TENSOR_DATA_TYPE as DT
from dmlpy import buffer_tensor
from dmlpy.enums import DML_REDUCE_FUNCTION as FN
from dmlpy.operators.reduction import (
    DML_ARGMAX_OPERATOR_DESC,
    DML_ARGMIN_OPERATOR_DESC,
    DML_REDUCE_OPERATOR_DESC,
    DML_TOP_K1_OPERATOR_DESC,
    DML_TOP_K_OPERATOR_DESC,
)

REDUCE = "DML_REDUCE_OPERATOR_DESC"
ARGMIN = "DML_ARGMIN_OPERATOR_DESC"
ARGMAX = "DML_ARGMAX_OPERATOR_DESC"
TOP_K = "DML_TOP_K_OPERATOR_DESC"
TOP_K1 = "DML_TOP_K1_OPERATOR_DESC"


def reduce(
    function: Any = FN.SUM,
    x: tuple[int, ...] = (1, 1, 3, 3),
    y: tuple[int, ...] = (1, 1, 1, 3),
    axes: Any = (2,),
    *,
    x_type: Any = DT.FLOAT32,
    y_type: Any = None,
    count: int | None = None,
) -> DML_REDUCE_OPERATOR_DESC:
    """Default: the page's example 1 in 4-D, SUM over rows: {1,1,3,3} -> {1,1,1,3}."""
    return DML_REDUCE_OPERATOR_DESC(function, buffer_tensor(x_type, x), buffer_tensor(y_type or x_type, y), count, list(axes))


def arg(
    cls: Any = DML_ARGMAX_OPERATOR_DESC,
    x: tuple[int, ...] = (3, 3),
    y: tuple[int, ...] = (3, 1),
    axes: Any = (1,),
    *,
    x_type: Any = DT.FLOAT32,
    y_type: Any = DT.UINT32,
) -> Any:
    """Default: the position of each row's maximum, {3,3} -> {3,1}."""
    return cls(buffer_tensor(x_type, x), buffer_tensor(y_type, y), None, list(axes), 0)


def top_k(
    cls: Any = DML_TOP_K1_OPERATOR_DESC,
    x: tuple[int, ...] = (1, 1, 3, 4),
    values: tuple[int, ...] = (1, 1, 3, 2),
    indices: tuple[int, ...] | None = None,
    axis: int = 3,
    k: int = 2,
) -> Any:
    """Default: the pages' example 1, {1,1,3,4} with Axis 3, K 2 -> {1,1,3,2}."""
    tensors = (buffer_tensor(DT.FLOAT32, x), buffer_tensor(DT.FLOAT32, values), buffer_tensor(DT.UINT32, indices or values))
    return cls(*tensors, axis, k) if cls is DML_TOP_K_OPERATOR_DESC else cls(*tensors, axis, k, 1)


@pytest.mark.parametrize(
    ("value", "level"),
    [
        pytest.param(reduce(), FL.LEVEL_1_0, id="SUM {1,1,3,3} over axis 2 -> {1,1,1,3} at FL 1.0"),
        pytest.param(reduce(x=(3, 3), y=(3, 1), axes=(1,)), FL.LEVEL_3_0, id="the page's example 2: {3,3} over axis 1 -> {3,1} from FL 3.0"),
        pytest.param(reduce(x=(3, 3), y=(1, 1), axes=(0, 1)), FL.LEVEL_3_0, id="the page's example 3: every axis -> {1,1}"),
        pytest.param(reduce(FN.ARGMAX, y_type=DT.UINT32), FL.LEVEL_1_0, id="REDUCE ARGMAX with a UINT32 output at FL 1.0"),
        pytest.param(reduce(FN.ARGMIN, y_type=DT.INT64), FL.LEVEL_3_0, id="REDUCE ARGMIN with an INT64 output from FL 3.0"),
        pytest.param(arg(), FL.LEVEL_3_0, id="ARGMAX {3,3} over axis 1 -> {3,1}"),
        pytest.param(arg(DML_ARGMIN_OPERATOR_DESC, (2, 3, 4), (1, 3, 1), (0, 2), y_type=DT.INT64), FL.LEVEL_3_0, id="ARGMIN {2,3,4} over axes 0 and 2 -> {1,3,1}"),
        pytest.param(top_k(DML_TOP_K_OPERATOR_DESC), FL.LEVEL_2_0, id="TOP_K: the page's example 1 at FL 2.0"),
        pytest.param(top_k(values=(1, 1, 2, 4), axis=2), FL.LEVEL_2_1, id="TOP_K1: example 2, Axis 2, K 2 -> {1,1,2,4}"),
        pytest.param(top_k(values=(1, 1, 3, 4), k=4), FL.LEVEL_2_1, id="TOP_K1 with K = Sizes[3] = 4, every element"),
    ],
)
def test_a_valid_reduction_or_top_k_has_no_finding(value: Any, level: FL) -> None:
    assert rule_ids(dmlpy.validate(value, feature_level=level)) == []


@pytest.mark.parametrize(
    ("value", "level", "rule_id", "path"),
    [
        pytest.param(reduce(axes=(4,)), FL.LEVEL_1_0, "REDUCE.AXIS_RANGE", f"{REDUCE}.Axes[0]", id="axis 4 of a 4-D input: the range is [0, 3]"),
        pytest.param(reduce(y=(1, 1, 1, 1), axes=(2, 2)), FL.LEVEL_1_0, "REDUCE.AXIS_DUPLICATE", f"{REDUCE}.Axes[1]", id="axis 2 twice"),
        pytest.param(reduce(y=(1, 1, 3, 3)), FL.LEVEL_1_0, "REDUCE.OUTPUT_SIZE", f"{REDUCE}.OutputTensor.Sizes[2]", id="reduced axis 2 kept at 3, expected 1"),
        pytest.param(reduce(y=(1, 1, 1, 1)), FL.LEVEL_1_0, "REDUCE.OUTPUT_SIZE", f"{REDUCE}.OutputTensor.Sizes[3]", id="axis 3 not reduced but 1, expected the input's 3"),
        pytest.param(reduce(y=(1, 1, 3)), FL.LEVEL_3_0, "REDUCE.SAME_DIMENSION_COUNT", f"{REDUCE}.OutputTensor.DimensionCount", id="a reduced axis dropped: rank 3 for a rank-4 input"),
        pytest.param(reduce(y_type=DT.FLOAT16), FL.LEVEL_1_0, "REDUCE.SAME_DATA_TYPE", f"{REDUCE}.OutputTensor.DataType", id="SUM of FLOAT32 into FLOAT16"),
        pytest.param(reduce(FN.ARGMAX, y_type=DT.INT32), FL.LEVEL_2_1, "TENSOR.DATA_TYPE_SUPPORT", f"{REDUCE}.OutputTensor.DataType", id="REDUCE ARGMAX into INT32 below FL 3.0: UINT32 only"),
        pytest.param(reduce(FN.ARGMAX, x_type=DT.INT64, y_type=DT.UINT32), FL.LEVEL_4_0, "TENSOR.DATA_TYPE_SUPPORT", f"{REDUCE}.InputTensor.DataType", id="ARGMAX of INT64 before FL 4.1"),
        pytest.param(reduce(FN.L1, x_type=DT.INT32), FL.LEVEL_4_1, "TENSOR.DATA_TYPE_SUPPORT", f"{REDUCE}.InputTensor.DataType", id="L1 of INT32 before FL 5.0"),
        pytest.param(reduce(x=(3, 3), y=(1, 3), axes=(0,)), FL.LEVEL_2_1, "TENSOR.DIMENSION_COUNT_SUPPORT", f"{REDUCE}.InputTensor.DimensionCount", id="2-D REDUCE below FL 3.0: 4 dims only"),
        pytest.param(reduce(function=12), FL.LEVEL_6_4, "ENUM.VALUE", f"{REDUCE}.Function", id="Function 12 is no DML_REDUCE_FUNCTION"),
        pytest.param(reduce(axes=(2,), count=2), FL.LEVEL_6_4, "FIELD.ARRAY_LENGTH", f"{REDUCE}.Axes", id="AxisCount 2 with one axis"),
        pytest.param(arg(axes=(2,)), FL.LEVEL_3_0, "REDUCE.AXIS_RANGE", f"{ARGMAX}.Axes[0]", id="ARGMAX axis 2 of a 2-D input"),
        pytest.param(arg(y=(1, 3)), FL.LEVEL_3_0, "REDUCE.OUTPUT_SIZE", f"{ARGMAX}.OutputTensor.Sizes[0]", id="ARGMAX over axis 1 gives {3,1}, not {1,3}"),
        pytest.param(arg(DML_ARGMIN_OPERATOR_DESC, y_type=DT.FLOAT32), FL.LEVEL_3_0, "TENSOR.DATA_TYPE_SUPPORT", f"{ARGMIN}.OutputTensor.DataType", id="ARGMIN into FLOAT32: integer outputs only"),
        pytest.param(arg(DML_ARGMIN_OPERATOR_DESC, y=(3,)), FL.LEVEL_3_0, "TENSOR.SAME_DIMENSION_COUNT", f"{ARGMIN}.OutputTensor.DimensionCount", id="ARGMIN output rank 1 for a rank-2 input"),
        pytest.param(arg(), FL.LEVEL_2_1, "OPERATOR.FEATURE_LEVEL", ARGMAX, id="ARGMAX arrived at FL 3.0"),
        pytest.param(top_k(values=(1, 1, 3, 3)), FL.LEVEL_2_1, "TOP_K.OUTPUT_SIZE", f"{TOP_K1}.OutputValueTensor.Sizes[3]", id="values 3 wide on Axis 3, expected K = 2"),
        pytest.param(top_k(indices=(1, 1, 2, 2)), FL.LEVEL_2_1, "TOP_K.OUTPUT_SIZE", f"{TOP_K1}.OutputIndexTensor.Sizes[2]", id="indices 2 on axis 2, expected the input's 3"),
        pytest.param(top_k(axis=4), FL.LEVEL_2_1, "TOP_K.AXIS_RANGE", f"{TOP_K1}.Axis", id="Axis 4 of a 4-D input"),
        pytest.param(top_k(values=(1, 1, 3, 5), k=5), FL.LEVEL_2_1, "TOP_K.K_RANGE", f"{TOP_K1}.K", id="K 5 of an axis of 4"),
        pytest.param(top_k(DML_TOP_K_OPERATOR_DESC, values=(1, 1, 3, 0), k=0), FL.LEVEL_2_0, "TOP_K.K_RANGE", f"{TOP_K}.K", id="K 0: the page says greater than 0"),
    ],
)
def test_reduction_rule_is_reported_at_its_field(value: Any, level: FL, rule_id: str, path: str) -> None:
    assert_rule(dmlpy.validate(value, feature_level=level), rule_id, path)


def test_a_duplicate_axis_is_only_a_warning() -> None:
    report = dmlpy.validate(reduce(y=(1, 1, 1, 1), axes=(2, 3, 3)))
    assert report.ok
    assert rule_ids(report) == ["REDUCE.AXIS_DUPLICATE"]


def test_reduce_output_size_message_says_the_reduced_axis_is_1() -> None:
    finding = assert_rule(dmlpy.validate(reduce(y=(1, 1, 3, 3))), "REDUCE.OUTPUT_SIZE")
    assert "1 (a reduced axis)" in finding.message
