"""Resampling validation: RESAMPLE.* rules and the pages' constraints.

The DML_RESAMPLE_OPERATOR_DESC and DML_RESAMPLE1_OPERATOR_DESC pages: one scale (and pixel
offset) per tensor dimension, output sizes free (cropped or clamped), same DataType and
DimensionCount, 4-D only before FL 5.1.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from conftest import assert_rule, rule_ids

import dmlpy
from dmlpy import DML_FEATURE_LEVEL as FL
from dmlpy import DML_TENSOR_DATA_TYPE as DT
from dmlpy import buffer_tensor
from dmlpy.operators.resampling import DML_RESAMPLE1_OPERATOR_DESC, DML_RESAMPLE_OPERATOR_DESC

RESAMPLE = "DML_RESAMPLE_OPERATOR_DESC"
RESAMPLE1 = "DML_RESAMPLE1_OPERATOR_DESC"


def resample(scales: Any = (1.0, 1.0, 2.0, 2.0), x: Any = (1, 1, 2, 3), y: Any = (1, 1, 4, 6), mode: Any = 0, dtype: Any = DT.FLOAT32) -> Any:
    """Default: 2x upsampling of a 2x3 image."""
    return DML_RESAMPLE_OPERATOR_DESC(buffer_tensor(dtype, x), buffer_tensor(dtype, y), mode, None, list(scales))


def resample1(scales: Any = (1.0, 1.0, 2.0, 2.0), x: Any = (1, 1, 2, 3), y: Any = (1, 1, 4, 6), offsets: Any = None) -> Any:
    n = len(scales)
    return DML_RESAMPLE1_OPERATOR_DESC(buffer_tensor(DT.FLOAT32, x), buffer_tensor(DT.FLOAT32, y), 1, None, list(scales), list(offsets or [0.5] * n), [-0.5] * n)


@pytest.mark.parametrize(
    ("value", "level"),
    [
        pytest.param(resample(), FL.LEVEL_2_0, id="RESAMPLE 2x of {1,1,2,3} -> {1,1,4,6}"),
        pytest.param(resample(y=(1, 1, 5, 5)), FL.LEVEL_2_0, id="RESAMPLE with an output not 2x the input: the page crops and clamps"),
        pytest.param(resample1(), FL.LEVEL_2_1, id="RESAMPLE1 linear with the RESAMPLE-equivalent offsets 0.5 and -0.5"),
        pytest.param(resample1((2.0, 0.5), (3, 4), (6, 2)), FL.LEVEL_5_1, id="2-D RESAMPLE1 from FL 5.1"),
    ],
)
def test_a_valid_resample_has_no_finding(value: Any, level: FL) -> None:
    assert rule_ids(dmlpy.validate(value, feature_level=level)) == []


@pytest.mark.parametrize(
    ("value", "level", "rule_id", "path"),
    [
        pytest.param(resample((2.0, 2.0)), FL.LEVEL_2_0, "RESAMPLE.SCALE_COUNT", f"{RESAMPLE}.ScaleCount", id="RESAMPLE with 2 scales for 4-D tensors"),
        pytest.param(resample1((1.0, 2.0, 2.0)), FL.LEVEL_2_1, "RESAMPLE.SCALE_COUNT", f"{RESAMPLE1}.DimensionCount", id="RESAMPLE1 with 3 scales for 4-D tensors"),
        pytest.param(resample((1.0, 1.0, 0.0, 2.0)), FL.LEVEL_2_0, "RESAMPLE.SCALE_VALUE", f"{RESAMPLE}.Scales[2]", id="a scale of 0"),
        pytest.param(resample1((1.0, 1.0, 2.0, math.nan)), FL.LEVEL_2_1, "RESAMPLE.SCALE_VALUE", f"{RESAMPLE1}.Scales[3]", id="a NaN scale"),
        pytest.param(resample(mode=2), FL.LEVEL_2_0, "ENUM.VALUE", f"{RESAMPLE}.InterpolationMode", id="InterpolationMode 2 is no DML_INTERPOLATION_MODE"),
        pytest.param(resample(dtype=DT.INT8), FL.LEVEL_6_1, "TENSOR.DATA_TYPE_SUPPORT", f"{RESAMPLE}.InputTensor.DataType", id="INT8 RESAMPLE before FL 6.2"),
        pytest.param(resample1((2.0, 0.5), (3, 4), (6, 2)), FL.LEVEL_5_0, "TENSOR.DIMENSION_COUNT_SUPPORT", f"{RESAMPLE1}.InputTensor.DimensionCount", id="2-D RESAMPLE1 before FL 5.1"),
        pytest.param(resample(x=(1, 1, 2, 3, 1), y=(1, 1, 4, 6, 1), scales=(1.0,) * 5), FL.LEVEL_6_4, "TENSOR.DIMENSION_COUNT_SUPPORT", f"{RESAMPLE}.InputTensor.DimensionCount", id="5-D RESAMPLE: 1 to 4 dims only"),
        pytest.param(resample(), FL.LEVEL_1_0, "OPERATOR.FEATURE_LEVEL", RESAMPLE, id="RESAMPLE arrived at FL 2.0"),
    ],
)
def test_resample_rule_is_reported_at_its_field(value: Any, level: FL, rule_id: str, path: str) -> None:
    assert_rule(dmlpy.validate(value, feature_level=level), rule_id, path)


def test_a_zero_scale_is_only_a_warning() -> None:
    assert dmlpy.validate(resample((1.0, 1.0, 0.0, 2.0))).ok
