"""Normalization validation: NORMALIZATION.* rules and the generic rules these descs trigger.

Facts from the DML_BATCH_NORMALIZATION_OPERATOR_DESC page (Mean, Variance, Scale and Bias
dimensions are 1 or the input's; Spatial FALSE keeps Mean's and Variance's height and width
below FL 4.0) and the mean-variance pages (Scale and Bias broadcast alike, channels not below FL
4.0 for MEAN_VARIANCE_NORMALIZATION1; both or neither below FL 5.2; Axes below the input's rank).
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
from dmlpy.operators.normalization import (
    DML_BATCH_NORMALIZATION_OPERATOR_DESC,
    DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC,
    DML_MEAN_VARIANCE_NORMALIZATION_OPERATOR_DESC,
)

BN = "DML_BATCH_NORMALIZATION_OPERATOR_DESC"
MVN = "DML_MEAN_VARIANCE_NORMALIZATION_OPERATOR_DESC"
MVN1 = "DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC"
X = (2, 3, 4, 5)
PER_CHANNEL = (1, 3, 1, 1)


def t(sizes: Any, dtype: Any = DT.FLOAT32) -> Any:
    return None if sizes is None else buffer_tensor(dtype, sizes)


def bn(mean: Any = PER_CHANNEL, variance: Any = PER_CHANNEL, scale: Any = PER_CHANNEL, bias: Any = PER_CHANNEL, *, x: Any = X, spatial: bool = True, epsilon: float = 1e-5, dtype: Any = DT.FLOAT32) -> Any:
    """Default: per-channel statistics {1,3,1,1} of a {2,3,4,5} input."""
    return DML_BATCH_NORMALIZATION_OPERATOR_DESC(t(x, dtype), t(mean, dtype), t(variance, dtype), t(scale, dtype), t(bias, dtype), t(x, dtype), spatial, epsilon, None)


def mvn(scale: Any = PER_CHANNEL, bias: Any = PER_CHANNEL, *, x: Any = X, epsilon: float = 1e-5) -> Any:
    return DML_MEAN_VARIANCE_NORMALIZATION_OPERATOR_DESC(t(x), t(scale), t(bias), t(x), False, True, epsilon, None)


def mvn1(scale: Any = PER_CHANNEL, bias: Any = PER_CHANNEL, axes: Any = (2, 3), *, x: Any = X) -> Any:
    """Default: instance normalization, axes {2, 3}."""
    return DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC(t(x), t(scale), t(bias), t(x), None, list(axes), True, 1e-5, None)


@pytest.mark.parametrize(
    ("value", "level"),
    [
        pytest.param(bn(), FL.LEVEL_1_0, id="BATCH_NORMALIZATION with per-channel {1,3,1,1} statistics"),
        pytest.param(bn(mean=X, variance=X), FL.LEVEL_1_0, id="BATCH_NORMALIZATION with full-size {2,3,4,5} Mean and Variance"),
        pytest.param(bn(mean=X, variance=X, spatial=False), FL.LEVEL_1_0, id="Spatial FALSE with unbroadcast {2,3,4,5} Mean and Variance"),
        pytest.param(bn(spatial=False), FL.LEVEL_4_0, id="Spatial FALSE has no effect from FL 4.0: {1,3,1,1} broadcasts"),
        pytest.param(bn(x=(2, 3), mean=(1, 3), variance=(1, 3), scale=(1, 3), bias=(1, 3)), FL.LEVEL_3_1, id="2-D BATCH_NORMALIZATION from FL 3.1"),
        pytest.param(mvn(), FL.LEVEL_1_0, id="MEAN_VARIANCE_NORMALIZATION with per-channel Scale and Bias"),
        pytest.param(mvn(None, None), FL.LEVEL_1_0, id="MEAN_VARIANCE_NORMALIZATION without Scale and Bias"),
        pytest.param(mvn1(), FL.LEVEL_2_1, id="MEAN_VARIANCE_NORMALIZATION1 over axes {2, 3}"),
        pytest.param(mvn1((1, 1, 1, 1), (1, 1, 1, 1), (1, 2, 3)), FL.LEVEL_4_0, id="from FL 4.0 a {1,1,1,1} Scale broadcasts channels too"),
        pytest.param(mvn1(bias=None), FL.LEVEL_5_2, id="Scale without Bias from FL 5.2"),
    ],
)
def test_a_valid_normalization_has_no_finding(value: Any, level: FL) -> None:
    assert rule_ids(dmlpy.validate(value, feature_level=level)) == []


@pytest.mark.parametrize(
    ("value", "level", "rule_id", "path"),
    [
        pytest.param(bn(mean=(1, 2, 1, 1)), FL.LEVEL_1_0, "NORMALIZATION.BROADCAST", f"{BN}.MeanTensor.Sizes[1]", id="Mean with 2 channels for an input of 3: neither 1 nor 3"),
        pytest.param(bn(bias=(1, 3, 1, 4)), FL.LEVEL_1_0, "NORMALIZATION.BROADCAST", f"{BN}.BiasTensor.Sizes[3]", id="Bias width 4 for an input of width 5"),
        pytest.param(bn(spatial=False), FL.LEVEL_3_1, "NORMALIZATION.SPATIAL", f"{BN}.MeanTensor.Sizes[2]", id="Spatial FALSE below FL 4.0 with a broadcast height in Mean"),
        pytest.param(bn(mean=(1, 3, 1)), FL.LEVEL_3_1, "TENSOR.SAME_DIMENSION_COUNT", f"{BN}.MeanTensor.DimensionCount", id="3-D Mean for a 4-D input"),
        pytest.param(bn(dtype=DT.INT32), FL.LEVEL_6_4, "TENSOR.DATA_TYPE_SUPPORT", f"{BN}.InputTensor.DataType", id="INT32 batch normalization: floats only"),
        pytest.param(bn(x=(2, 3), mean=(1, 3), variance=(1, 3), scale=(1, 3), bias=(1, 3)), FL.LEVEL_3_0, "TENSOR.DIMENSION_COUNT_SUPPORT", f"{BN}.InputTensor.DimensionCount", id="2-D batch normalization before FL 3.1"),
        pytest.param(bn(epsilon=-1.0), FL.LEVEL_1_0, "NORMALIZATION.EPSILON", f"{BN}.Epsilon", id="a negative Epsilon"),
        pytest.param(bn(epsilon=math.nan), FL.LEVEL_1_0, "NORMALIZATION.EPSILON", f"{BN}.Epsilon", id="a NaN Epsilon"),
        pytest.param(mvn(bias=None), FL.LEVEL_5_1, "NORMALIZATION.SCALE_BIAS_TOGETHER", f"{MVN}.BiasTensor", id="MEAN_VARIANCE_NORMALIZATION Scale without Bias below FL 5.2"),
        pytest.param(mvn(scale=(3, 3, 1, 1)), FL.LEVEL_1_0, "NORMALIZATION.BROADCAST", f"{MVN}.ScaleTensor.Sizes[0]", id="MEAN_VARIANCE_NORMALIZATION Scale batch 3 for an input batch of 2"),
        pytest.param(mvn1(scale=None), FL.LEVEL_4_0, "NORMALIZATION.SCALE_BIAS_TOGETHER", f"{MVN1}.ScaleTensor", id="MEAN_VARIANCE_NORMALIZATION1 Bias without Scale below FL 5.2"),
        pytest.param(mvn1((1, 1, 1, 1), (1, 1, 1, 1)), FL.LEVEL_3_1, "NORMALIZATION.BROADCAST", f"{MVN1}.ScaleTensor.Sizes[1]", id="below FL 4.0 MEAN_VARIANCE_NORMALIZATION1's Scale channels are the input's 3, not 1"),
        pytest.param(mvn1(axes=(2, 4)), FL.LEVEL_2_1, "NORMALIZATION.AXIS_RANGE", f"{MVN1}.Axes[1]", id="axis 4 of a 4-D input"),
        pytest.param(mvn1(axes=(2, 3, 3)), FL.LEVEL_2_1, "NORMALIZATION.AXIS_DUPLICATE", f"{MVN1}.Axes[2]", id="axis 3 twice"),
        pytest.param(mvn1(), FL.LEVEL_2_0, "OPERATOR.FEATURE_LEVEL", MVN1, id="MEAN_VARIANCE_NORMALIZATION1 arrived at FL 2.1"),
    ],
)
def test_normalization_rule_is_reported_at_its_field(value: Any, level: FL, rule_id: str, path: str) -> None:
    assert_rule(dmlpy.validate(value, feature_level=level), rule_id, path)


def test_epsilon_and_duplicate_axes_are_only_warnings() -> None:
    assert dmlpy.validate(bn(epsilon=-1.0)).ok
    assert dmlpy.validate(mvn1(axes=(2, 3, 3))).ok
