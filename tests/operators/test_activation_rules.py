"""SOFTMAX1, LOG_SOFTMAX1 and HARDMAX1 validation: ACTIVATION.AXIS_* and the pages' constraints.

Each page: Axes in [0, InputTensor.DimensionCount - 1]; InputTensor and OutputTensor have the
same DataType, DimensionCount and Sizes; FLOAT32 and FLOAT16, 1 to 8 dimensions, from FL 5.1.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import assert_rule, rule_ids

import dmlpy
from dmlpy import DML_FEATURE_LEVEL as FL
from dmlpy import DML_TENSOR_DATA_TYPE as DT
from dmlpy import buffer_tensor
from dmlpy.operators.activation import (
    DML_ACTIVATION_HARDMAX1_OPERATOR_DESC,
    DML_ACTIVATION_LOG_SOFTMAX1_OPERATOR_DESC,
    DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC,
)

SOFTMAX1 = "DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC"
LOG_SOFTMAX1 = "DML_ACTIVATION_LOG_SOFTMAX1_OPERATOR_DESC"
HARDMAX1 = "DML_ACTIVATION_HARDMAX1_OPERATOR_DESC"


def softmax(cls: Any = DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC, axes: Any = (1,), x: Any = (2, 2, 2), y: Any = None, dtype: Any = DT.FLOAT32) -> Any:
    """Default: the pages' {2,2,2} example input over axis 1."""
    return cls(buffer_tensor(dtype, x), buffer_tensor(dtype, y or x), None, list(axes))


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(softmax(), id="SOFTMAX1 over axis 1 of {2,2,2}"),
        pytest.param(softmax(DML_ACTIVATION_LOG_SOFTMAX1_OPERATOR_DESC, (0, 2)), id="LOG_SOFTMAX1 over axes 0 and 2"),
        pytest.param(softmax(DML_ACTIVATION_HARDMAX1_OPERATOR_DESC, (0,)), id="HARDMAX1 over axis 0 (the page's example 2)"),
    ],
)
def test_a_valid_softmax1_has_no_finding(value: Any) -> None:
    assert rule_ids(dmlpy.validate(value, feature_level=FL.LEVEL_5_1)) == []


@pytest.mark.parametrize(
    ("value", "level", "rule_id", "path"),
    [
        pytest.param(softmax(axes=(3,)), FL.LEVEL_5_1, "ACTIVATION.AXIS_RANGE", f"{SOFTMAX1}.Axes[0]", id="SOFTMAX1 axis 3 of a 3-D input: the range is [0, 2]"),
        pytest.param(softmax(DML_ACTIVATION_LOG_SOFTMAX1_OPERATOR_DESC, (0, 5)), FL.LEVEL_5_1, "ACTIVATION.AXIS_RANGE", f"{LOG_SOFTMAX1}.Axes[1]", id="LOG_SOFTMAX1 axis 5"),
        pytest.param(softmax(DML_ACTIVATION_HARDMAX1_OPERATOR_DESC, (1, 1)), FL.LEVEL_5_1, "ACTIVATION.AXIS_DUPLICATE", f"{HARDMAX1}.Axes[1]", id="HARDMAX1 axis 1 twice"),
        pytest.param(softmax(y=(2, 2, 3)), FL.LEVEL_5_1, "TENSOR.SAME_SIZES", f"{SOFTMAX1}.OutputTensor.Sizes", id="SOFTMAX1 output {2,2,3} for an input {2,2,2}"),
        pytest.param(softmax(dtype=DT.INT32), FL.LEVEL_6_4, "TENSOR.DATA_TYPE_SUPPORT", f"{SOFTMAX1}.InputTensor.DataType", id="INT32 SOFTMAX1: floats only"),
        pytest.param(softmax(), FL.LEVEL_5_0, "OPERATOR.FEATURE_LEVEL", SOFTMAX1, id="SOFTMAX1 arrived at FL 5.1"),
    ],
)
def test_softmax1_rule_is_reported_at_its_field(value: Any, level: FL, rule_id: str, path: str) -> None:
    assert_rule(dmlpy.validate(value, feature_level=level), rule_id, path)


def test_a_duplicate_softmax_axis_is_only_a_warning() -> None:
    assert dmlpy.validate(softmax(axes=(1, 1))).ok
