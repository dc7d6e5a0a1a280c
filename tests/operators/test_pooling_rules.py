"""Average pooling validation: every POOLING.* and OPERATOR.* rule, messages, warnings and CreateOperator.

Each case names the C field path the finding must carry. Output sizes are computed by hand
from the formula of the DML_AVERAGE_POOLING_OPERATOR_DESC page and the DML_AVERAGE_POOLING1_OPERATOR_DESC page and docs/deviations.md, written out in the case id.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from conftest import assert_rule, rule_ids

import dmlpy
from dmlpy import (
    DML_AVERAGE_POOLING1_OPERATOR_DESC,
    DML_AVERAGE_POOLING_OPERATOR_DESC,
    DML_FEATURE_LEVEL,
    DML_OPERATOR_DESC,
    DML_OPERATOR_TYPE,
    DML_TENSOR_DATA_TYPE,
    HRESULT,
    average_pooling_output_sizes,
    buffer_tensor,
)

DT = DML_TENSOR_DATA_TYPE
FL = DML_FEATURE_LEVEL
OP = DML_OPERATOR_TYPE
POOL = "DML_AVERAGE_POOLING_OPERATOR_DESC"
POOL1 = "DML_AVERAGE_POOLING1_OPERATOR_DESC"
E_INVALIDARG = 0x80070057


def pool(
    x: tuple[int, ...] = (1, 2, 6, 6),
    y: tuple[int, ...] = (1, 2, 4, 4),
    *,
    dilated: bool = False,
    x_type: DT = DT.FLOAT32,
    y_type: DT = DT.FLOAT32,
    **fields: Any,
) -> Any:
    """AVERAGE_POOLING (or AVERAGE_POOLING1 when ``dilated``): by default {1,2,6,6} -> {1,2,4,4},
    3x3 window, stride 1, no padding: (6 + 0 + 0 - 3) / 1 + 1 = 4."""
    spatial = len(x) - 2
    values: dict[str, Any] = {
        "DimensionCount": spatial,
        "Strides": [1] * spatial,
        "WindowSize": [3] * spatial,
        "StartPadding": [0] * spatial,
        "EndPadding": [0] * spatial,
        "IncludePadding": True,
    }
    if dilated:
        values["Dilations"] = [1] * spatial
    values.update(fields)
    cls = DML_AVERAGE_POOLING1_OPERATOR_DESC if dilated else DML_AVERAGE_POOLING_OPERATOR_DESC
    return cls(buffer_tensor(x_type, x), buffer_tensor(y_type, y), **values)


def numpy_device(**kwargs: Any) -> dmlpy.Device:
    return dmlpy.create_device(backend="numpy", **kwargs)


@pytest.mark.parametrize(
    "desc",
    [
        pytest.param(pool(), id="the 4-D base desc is valid"),
        pytest.param(pool(dilated=True), id="the AVERAGE_POOLING1 base desc is valid"),
        pytest.param(pool((1, 2, 6, 6, 6), (1, 2, 4, 4, 4)), id="a 5-D desc with 3 spatial dims is valid"),
        pytest.param(pool(x_type=DT.FLOAT16, y_type=DT.FLOAT16), id="FLOAT16 is supported"),
    ],
)
def test_the_base_descs_of_these_tests_have_no_findings(desc: Any) -> None:
    report = dmlpy.validate(desc)
    assert report.ok and not report.findings, str(report)


# ---------------------------------------------------------------------------------------
# Every POOLING.* and OPERATOR.* rule, with its C field path

RULE_CASES = [
    # POOLING.DIMENSION_COUNT
    pytest.param(
        pool(DimensionCount=3, Strides=[1] * 3, WindowSize=[3] * 3, StartPadding=[0] * 3, EndPadding=[0] * 3),
        FL.LEVEL_6_4,
        "POOLING.DIMENSION_COUNT",
        f"{POOL}.DimensionCount",
        id="DimensionCount 3 with 4-D tensors is rejected: it must be 4 - 2 = 2",
    ),
    pytest.param(
        pool(
            (1, 2, 6, 6, 6),
            (1, 2, 4, 4, 4),
            DimensionCount=2,
            Strides=[1] * 2,
            WindowSize=[3] * 2,
            StartPadding=[0] * 2,
            EndPadding=[0] * 2,
        ),
        FL.LEVEL_6_4,
        "POOLING.DIMENSION_COUNT",
        f"{POOL}.DimensionCount",
        id="DimensionCount 2 with 5-D tensors is rejected: it must be 5 - 2 = 3",
    ),
    # POOLING.SAME_DIMENSION_COUNT
    pytest.param(
        pool((1, 2, 6, 6), (1, 2, 1, 4, 4)),
        FL.LEVEL_6_4,
        "POOLING.SAME_DIMENSION_COUNT",
        f"{POOL}.OutputTensor.DimensionCount",
        id="a 5-D output for a 4-D input is rejected",
    ),
    # POOLING.SAME_DATA_TYPE
    pytest.param(
        pool(y_type=DT.FLOAT16),
        FL.LEVEL_6_4,
        "POOLING.SAME_DATA_TYPE",
        f"{POOL}.OutputTensor.DataType",
        id="a FLOAT16 output for a FLOAT32 input is rejected",
    ),
    pytest.param(
        pool(x_type=DT.FLOAT16, dilated=True),
        FL.LEVEL_6_4,
        "POOLING.SAME_DATA_TYPE",
        f"{POOL1}.OutputTensor.DataType",
        id="AVERAGE_POOLING1 also needs one data type for input and output",
    ),
    # POOLING.ARRAY_LENGTH
    pytest.param(
        pool(Strides=[1]),
        FL.LEVEL_6_4,
        "POOLING.ARRAY_LENGTH",
        f"{POOL}.Strides",
        id="1 stride for 2 spatial dims is rejected",
    ),
    pytest.param(
        pool(WindowSize=[3, 3, 3]),
        FL.LEVEL_6_4,
        "POOLING.ARRAY_LENGTH",
        f"{POOL}.WindowSize",
        id="3 window sizes for 2 spatial dims are rejected",
    ),
    pytest.param(
        pool(StartPadding=None),
        FL.LEVEL_6_4,
        "POOLING.ARRAY_LENGTH",
        f"{POOL}.StartPadding",
        id="a NULL StartPadding is rejected",
    ),
    pytest.param(
        pool(EndPadding=[0]),
        FL.LEVEL_6_4,
        "POOLING.ARRAY_LENGTH",
        f"{POOL}.EndPadding",
        id="1 end padding for 2 spatial dims is rejected",
    ),
    pytest.param(
        pool(dilated=True, Dilations=None),
        FL.LEVEL_6_4,
        "POOLING.ARRAY_LENGTH",
        f"{POOL1}.Dilations",
        id="a NULL Dilations on AVERAGE_POOLING1 is rejected",
    ),
    # POOLING.STRIDE_ZERO / WINDOW_ZERO / DILATION_ZERO
    pytest.param(
        pool(Strides=[1, 0]),
        FL.LEVEL_6_4,
        "POOLING.STRIDE_ZERO",
        f"{POOL}.Strides[1]",
        id="a stride of 0 is rejected at its index",
    ),
    pytest.param(
        pool(WindowSize=[0, 3]),
        FL.LEVEL_6_4,
        "POOLING.WINDOW_ZERO",
        f"{POOL}.WindowSize[0]",
        id="a window size of 0 is rejected at its index",
    ),
    pytest.param(
        pool(dilated=True, Dilations=[1, 0]),
        FL.LEVEL_6_4,
        "POOLING.DILATION_ZERO",
        f"{POOL1}.Dilations[1]",
        id="a dilation of 0 is rejected at its index",
    ),
    # POOLING.BATCH_AND_CHANNELS
    pytest.param(
        pool(y=(2, 2, 4, 4)),
        FL.LEVEL_6_4,
        "POOLING.BATCH_AND_CHANNELS",
        f"{POOL}.OutputTensor.Sizes[0]",
        id="an output batch of 2 for an input batch of 1 is rejected",
    ),
    pytest.param(
        pool(y=(1, 3, 4, 4)),
        FL.LEVEL_6_4,
        "POOLING.BATCH_AND_CHANNELS",
        f"{POOL}.OutputTensor.Sizes[1]",
        id="3 output channels for 2 input channels are rejected",
    ),
    # POOLING.WINDOW_LARGER_THAN_INPUT
    pytest.param(
        pool(WindowSize=[7, 3]),
        FL.LEVEL_6_4,
        "POOLING.WINDOW_LARGER_THAN_INPUT",
        f"{POOL}.WindowSize[0]",
        id="a 7-tap window on 6 unpadded inputs is rejected",
    ),
    pytest.param(
        pool(dilated=True, Dilations=[1, 3]),
        FL.LEVEL_6_4,
        "POOLING.WINDOW_LARGER_THAN_INPUT",
        f"{POOL1}.WindowSize[1]",
        id="a 3-tap window dilated by 3 spans (3 - 1) * 3 + 1 = 7 > 6 and is rejected",
    ),
    # POOLING.OUTPUT_SIZE
    pytest.param(
        pool(y=(1, 2, 5, 4)),
        FL.LEVEL_6_4,
        "POOLING.OUTPUT_SIZE",
        f"{POOL}.OutputTensor.Sizes[2]",
        id="H 5 is rejected: (6 + 0 + 0 - 3) / 1 + 1 = 4 and stride 1 leaves no ceil shape",
    ),
    pytest.param(
        pool(y=(1, 2, 4, 3)),
        FL.LEVEL_6_4,
        "POOLING.OUTPUT_SIZE",
        f"{POOL}.OutputTensor.Sizes[3]",
        id="W 3 is rejected: (6 + 0 + 0 - 3) / 1 + 1 = 4",
    ),
    pytest.param(
        pool((1, 2, 6, 6, 6), (1, 2, 4, 4, 5)),
        FL.LEVEL_6_4,
        "POOLING.OUTPUT_SIZE",
        f"{POOL}.OutputTensor.Sizes[4]",
        id="the third spatial dim of a 5-D output is checked at Sizes[4]",
    ),
    pytest.param(
        pool((1, 1, 5, 5), (1, 1, 3, 2), WindowSize=[2, 2], Strides=[3, 3], EndPadding=[2, 2]),
        FL.LEVEL_6_4,
        "POOLING.OUTPUT_SIZE",
        f"{POOL}.OutputTensor.Sizes[2]",
        id="H 3 is rejected: floor (5 + 0 + 2 - 2) / 3 + 1 = 2, and a third window would start at 6, past input + start padding 5",
    ),
    pytest.param(
        pool(dilated=True, y=(1, 2, 3, 2), Dilations=[2, 2]),
        FL.LEVEL_6_4,
        "POOLING.OUTPUT_SIZE",
        f"{POOL1}.OutputTensor.Sizes[2]",
        id="dilated H 3 matches neither the dilated 2 nor the undilated 4",
    ),
    # POOLING.OUTPUT_SIZE_UNDILATED
    pytest.param(
        pool(dilated=True, Dilations=[2, 2]),
        FL.LEVEL_6_4,
        "POOLING.OUTPUT_SIZE_UNDILATED",
        f"{POOL1}.OutputTensor.Sizes[2]",
        id="H 4 with dilation 2 follows the undilated doc formula, not (6 - ((3 - 1) * 2 + 1)) / 1 + 1 = 2",
    ),
    # POOLING.CEIL_OUTPUT (warning)
    pytest.param(
        pool(y=(1, 2, 3, 2), Strides=[2, 2]),
        FL.LEVEL_6_4,
        "POOLING.CEIL_OUTPUT",
        f"{POOL}.OutputTensor.Sizes[2]",
        id="H 3 with stride 2 is the ceil shape of floor (6 - 3) / 2 + 1 = 2 and only warns",
    ),
    # POOLING.EMPTY_WINDOW (warning)
    pytest.param(
        pool((1, 1, 4, 4), (1, 1, 5, 3), WindowSize=[2, 2], StartPadding=[2, 0], IncludePadding=False),
        FL.LEVEL_6_4,
        "POOLING.EMPTY_WINDOW",
        f"{POOL}.OutputTensor.Sizes[2]",
        id="start padding 2 with a 2-tap window puts output 0 wholly in padding",
    ),
    # OPERATOR.TYPE
    pytest.param(
        DML_OPERATOR_DESC(OP.AVERAGE_POOLING, pool(dilated=True)),
        FL.LEVEL_6_4,
        "OPERATOR.TYPE",
        "DML_OPERATOR_DESC",
        id="Type AVERAGE_POOLING with an AVERAGE_POOLING1 struct is rejected",
    ),
    pytest.param(
        DML_OPERATOR_DESC(OP.ELEMENT_WISE_IDENTITY, pool()),
        FL.LEVEL_6_4,
        "OPERATOR.TYPE",
        "DML_OPERATOR_DESC",
        id="a Type whose struct is another operator's is rejected",
    ),
    pytest.param(
        DML_OPERATOR_DESC(OP.INVALID, pool()),
        FL.LEVEL_6_4,
        "OPERATOR.TYPE",
        "DML_OPERATOR_DESC",
        id="Type INVALID is rejected",
    ),
    pytest.param(
        DML_OPERATOR_DESC(OP.AVERAGE_POOLING, None),
        FL.LEVEL_6_4,
        "OPERATOR.TYPE",
        "DML_OPERATOR_DESC",
        id="a NULL Desc is rejected",
    ),
    pytest.param(
        buffer_tensor(DT.FLOAT32, [1, 1, 2, 2]).Desc,
        FL.LEVEL_6_4,
        "OPERATOR.TYPE",
        "DML_BUFFER_TENSOR_DESC",
        id="a struct that is no operator desc is rejected",
    ),
    # OPERATOR.FEATURE_LEVEL
    pytest.param(
        pool(dilated=True),
        FL.LEVEL_6_1,
        "OPERATOR.FEATURE_LEVEL",
        POOL1,
        id="AVERAGE_POOLING1 does not exist at FL 6.1",
    ),
    pytest.param(
        DML_OPERATOR_DESC(OP.AVERAGE_POOLING1, pool(dilated=True)),
        FL.LEVEL_1_0,
        "OPERATOR.FEATURE_LEVEL",
        POOL1,
        id="wrapped AVERAGE_POOLING1 does not exist at FL 1.0",
    ),
]


@pytest.mark.parametrize(("desc", "level", "rule_id", "path"), RULE_CASES)
def test_pooling_rule_is_reported_at_its_field(desc: Any, level: FL, rule_id: str, path: str) -> None:
    assert_rule(dmlpy.validate(desc, feature_level=level), rule_id, path)


@pytest.mark.parametrize(
    ("desc", "level", "rule_id", "path"),
    [c for c in RULE_CASES if c.values[2] not in ("POOLING.CEIL_OUTPUT", "POOLING.EMPTY_WINDOW")],
)
def test_create_operator_rejects_every_error_rule_with_e_invalidarg(
    desc: Any, level: FL, rule_id: str, path: str
) -> None:
    with pytest.raises(dmlpy.DmlError) as caught:
        numpy_device(feature_level=level).create_operator(desc)
    assert caught.value.hresult == HRESULT.E_INVALIDARG == E_INVALIDARG
    assert_rule(caught.value, rule_id, path)


def test_a_valid_output_size_in_either_spatial_dim_gives_no_output_size_finding() -> None:
    # (1, 2, 4, 5): only W is wrong, so only Sizes[3] is reported
    report = dmlpy.validate(pool(y=(1, 2, 4, 5)))
    assert [(f.rule, f.path) for f in report.findings] == [("POOLING.OUTPUT_SIZE", f"{POOL}.OutputTensor.Sizes[3]")]


def test_the_extra_ceil_output_is_an_error_when_the_floor_division_is_exact() -> None:
    # (7 + 0 + 0 - 3) / 2 + 1 = 3 exactly: a 4th output is no ceil shape
    report = dmlpy.validate(pool((1, 1, 7, 7), (1, 1, 4, 3), Strides=[2, 2]))
    assert_rule(report, "POOLING.OUTPUT_SIZE", f"{POOL}.OutputTensor.Sizes[2]")
    assert "POOLING.CEIL_OUTPUT" not in rule_ids(report)


def test_empty_windows_are_no_concern_when_padding_counts() -> None:
    report = dmlpy.validate(
        pool((1, 1, 4, 4), (1, 1, 5, 3), WindowSize=[2, 2], StartPadding=[2, 0], IncludePadding=True)
    )
    assert report.ok and not report.findings, str(report)


def test_pooling_rules_hold_for_every_spatial_dim_of_a_5d_desc() -> None:
    desc = pool((1, 2, 6, 6, 6), (1, 2, 4, 4, 4), Strides=[1, 1, 0], WindowSize=[3, 0, 3])
    report = dmlpy.validate(desc)
    assert_rule(report, "POOLING.STRIDE_ZERO", f"{POOL}.Strides[2]")
    assert_rule(report, "POOLING.WINDOW_ZERO", f"{POOL}.WindowSize[1]")


# ---------------------------------------------------------------------------------------
# Messages carry the expected and actual values


@pytest.mark.doc_example
def test_output_size_message_shows_the_formula_with_the_numbers_filled_in() -> None:
    # (112 + 1 + 1 - 3) / 2 + 1 = 111 / 2 + 1 = 55 + 1 = 56 (the README's example)
    desc = pool((1, 3, 112, 112), (1, 3, 55, 56), Strides=[2, 2], StartPadding=[1, 1], EndPadding=[1, 1])
    finding = assert_rule(dmlpy.validate(desc), "POOLING.OUTPUT_SIZE", f"{POOL}.OutputTensor.Sizes[2]")
    assert "is 55, expected 56 = (112 + 1 + 1 - 3) / 2 + 1" in finding.message
    assert finding.actual == 55
    assert finding.expected == 56


def test_output_size_message_mentions_the_ceil_alternative_where_it_exists() -> None:
    # 111 % 2 = 1 and the 57th window starts at 56 * 2 = 112 < 112 + 1: 57 is the ceil shape
    desc = pool((1, 3, 112, 112), (1, 3, 55, 56), Strides=[2, 2], StartPadding=[1, 1], EndPadding=[1, 1])
    finding = assert_rule(dmlpy.validate(desc), "POOLING.OUTPUT_SIZE")
    assert "57" in finding.message


def test_dilated_output_size_message_shows_the_dilated_window() -> None:
    # {1,1,10,10}, window 3, dilation 2: (10 + 0 + 0 - ((3 - 1) * 2 + 1)) / 1 + 1 = 6; 7 is wrong
    desc = pool((1, 1, 10, 10), (1, 1, 7, 6), dilated=True, Dilations=[2, 2])
    finding = assert_rule(dmlpy.validate(desc), "POOLING.OUTPUT_SIZE", f"{POOL1}.OutputTensor.Sizes[2]")
    assert "is 7, expected 6 = (10 + 0 + 0 - ((3 - 1) * 2 + 1)) / 1 + 1" in finding.message


def test_undilated_output_size_message_names_both_formulas() -> None:
    # undilated: (6 - 3) / 1 + 1 = 4; dilated: (6 - ((3 - 1) * 2 + 1)) / 1 + 1 = 2
    finding = assert_rule(dmlpy.validate(pool(dilated=True, Dilations=[2, 2])), "POOLING.OUTPUT_SIZE_UNDILATED")
    assert "(6 + 0 + 0 - 3) / 1 + 1 = 4" in finding.message
    assert "2 = (6 + 0 + 0 - ((3 - 1) * 2 + 1)) / 1 + 1" in finding.message
    assert finding.actual == 4
    assert finding.expected == 2


def test_ceil_output_message_shows_the_floor_size_and_its_formula() -> None:
    finding = assert_rule(dmlpy.validate(pool(y=(1, 2, 3, 2), Strides=[2, 2])), "POOLING.CEIL_OUTPUT")
    assert "is 3, one more than the floor size 2 = (6 + 0 + 0 - 3) / 2 + 1" in finding.message


def test_window_too_large_message_shows_the_taps_and_the_padded_input() -> None:
    finding = assert_rule(dmlpy.validate(pool(dilated=True, Dilations=[1, 3])), "POOLING.WINDOW_LARGER_THAN_INPUT")
    assert "7 taps" in finding.message
    assert "6 + 0 + 0 = 6" in finding.message


def test_empty_window_message_lists_the_empty_output_positions() -> None:
    # taps of output o: 2o - 2 + {0, 1} with stride 1 -> o - 2, o - 1: outputs 0 (taps -2, -1) only
    desc = pool((1, 1, 4, 4), (1, 1, 5, 3), WindowSize=[2, 2], StartPadding=[2, 0], IncludePadding=False)
    finding = assert_rule(dmlpy.validate(desc), "POOLING.EMPTY_WINDOW")
    assert finding.actual == [0]
    assert "{0}" in finding.message


def test_same_data_type_message_shows_both_types() -> None:
    finding = assert_rule(dmlpy.validate(pool(y_type=DT.FLOAT16)), "POOLING.SAME_DATA_TYPE")
    assert "FLOAT16" in finding.message and "FLOAT32" in finding.message


def test_dimension_count_message_shows_the_tensor_rank() -> None:
    desc = pool(DimensionCount=3, Strides=[1] * 3, WindowSize=[3] * 3, StartPadding=[0] * 3, EndPadding=[0] * 3)
    finding = assert_rule(dmlpy.validate(desc), "POOLING.DIMENSION_COUNT")
    assert finding.actual == 3
    assert finding.expected == 2
    assert "is 3, expected 2" in finding.message


def test_a_finding_prints_its_rule_path_and_message() -> None:
    finding = assert_rule(dmlpy.validate(pool(y=(1, 2, 5, 4))), "POOLING.OUTPUT_SIZE")
    assert str(finding).startswith(f"[POOLING.OUTPUT_SIZE] {POOL}.OutputTensor.Sizes[2]: is 5, expected 4")


# ---------------------------------------------------------------------------------------
# Warnings: warnings.warn with DmlWarning on create_operator; errors on a strict device

WARNING_CASES = [
    pytest.param(
        pool(y=(1, 2, 3, 2), Strides=[2, 2]), "POOLING.CEIL_OUTPUT", id="the ceil shape warns POOLING.CEIL_OUTPUT"
    ),
    pytest.param(
        pool((1, 1, 4, 4), (1, 1, 5, 3), WindowSize=[2, 2], StartPadding=[2, 0], IncludePadding=False),
        "POOLING.EMPTY_WINDOW",
        id="a window wholly in padding warns POOLING.EMPTY_WINDOW",
    ),
    pytest.param(
        DML_AVERAGE_POOLING_OPERATOR_DESC(
            buffer_tensor(DT.FLOAT32, [1, 2, 6, 6], total_size=290),
            buffer_tensor(DT.FLOAT32, [1, 2, 4, 4]),
            2,
            [1, 1],
            [3, 3],
            [0, 0],
            [0, 0],
            True,
        ),
        "TENSOR.TOTAL_SIZE_ALIGNMENT",
        id="a total size of 290 (not a multiple of 4) warns TENSOR.TOTAL_SIZE_ALIGNMENT",
    ),
]


@pytest.mark.parametrize(("desc", "rule_id"), WARNING_CASES)
def test_warning_goes_to_warnings_warn_as_dml_warning(desc: Any, rule_id: str) -> None:
    with pytest.warns(dmlpy.DmlWarning) as record:
        op = numpy_device().create_operator(desc)
    warned = [w.message for w in record if isinstance(w.message, dmlpy.DmlWarning)]
    assert [w.finding.rule for w in warned] == [rule_id]
    assert rule_ids(op.warnings) == [rule_id]


@pytest.mark.parametrize(("desc", "rule_id"), WARNING_CASES)
def test_warning_becomes_an_error_on_a_strict_device(desc: Any, rule_id: str) -> None:
    with pytest.raises(dmlpy.DmlError) as caught, warnings.catch_warnings():
        warnings.simplefilter("error")  # a strict device must not warn and then succeed
        numpy_device(strict=True).create_operator(desc)
    assert caught.value.hresult == E_INVALIDARG
    assert_rule(caught.value, rule_id)


@pytest.mark.parametrize(("desc", "rule_id"), WARNING_CASES)
def test_warnings_leave_the_report_ok(desc: Any, rule_id: str) -> None:
    report = dmlpy.validate(desc)
    assert report.ok
    assert rule_ids(report.warnings) == [rule_id]
    assert report.errors == []


def test_a_dml_warning_carries_its_finding() -> None:
    with pytest.warns(dmlpy.DmlWarning) as record:
        numpy_device().create_operator(pool(y=(1, 2, 3, 2), Strides=[2, 2]))
    finding = record[0].message.finding
    assert finding.severity is dmlpy.Severity.WARNING
    assert finding.path == f"{POOL}.OutputTensor.Sizes[2]"


def test_a_valid_desc_creates_an_operator_without_warnings() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        op = numpy_device(strict=True).create_operator(pool())
    assert op.warnings == []


# ---------------------------------------------------------------------------------------
# DmlError, validate() and CreateOperator


def test_dml_error_hresult_is_e_invalidarg() -> None:
    with pytest.raises(dmlpy.DmlError) as caught:
        numpy_device().create_operator(pool(y=(1, 2, 5, 4)))
    assert caught.value.hresult == 0x80070057
    assert caught.value.hresult is HRESULT.E_INVALIDARG
    assert caught.value.rule == "POOLING.OUTPUT_SIZE"


def several_errors() -> Any:
    """Four independent errors: total size 60 < 6*6*2*4 = 288, FLOAT16 output, stride 0, window 0."""
    return DML_AVERAGE_POOLING_OPERATOR_DESC(
        buffer_tensor(DT.FLOAT32, [1, 2, 6, 6], total_size=60),
        buffer_tensor(DT.FLOAT16, [1, 2, 4, 4]),
        2, [1, 0], [0, 3], [0, 0], [0, 0], True,
    )  # fmt: skip


EXPECTED_SEVERAL = {
    ("TENSOR.TOTAL_SIZE_TOO_SMALL", f"{POOL}.InputTensor.TotalTensorSizeInBytes"),
    ("POOLING.SAME_DATA_TYPE", f"{POOL}.OutputTensor.DataType"),
    ("POOLING.STRIDE_ZERO", f"{POOL}.Strides[1]"),
    ("POOLING.WINDOW_ZERO", f"{POOL}.WindowSize[0]"),
}


def test_validate_collects_every_finding_at_once() -> None:
    report = dmlpy.validate(several_errors())
    assert not report.ok
    assert {(f.rule, f.path) for f in report.errors} == EXPECTED_SEVERAL


def test_create_operator_raises_one_error_carrying_every_finding() -> None:
    with pytest.raises(dmlpy.DmlError) as caught:
        numpy_device().create_operator(several_errors())
    assert {(f.rule, f.path) for f in caught.value.findings} == EXPECTED_SEVERAL
    text = str(caught.value)
    assert "E_INVALIDARG (0x80070057)" in text
    for rule_id, _ in EXPECTED_SEVERAL:
        assert rule_id in text


def test_both_spatial_output_sizes_are_reported_together() -> None:
    report = dmlpy.validate(pool(y=(1, 2, 5, 5)))
    assert_rule(report, "POOLING.OUTPUT_SIZE", f"{POOL}.OutputTensor.Sizes[2]")
    assert_rule(report, "POOLING.OUTPUT_SIZE", f"{POOL}.OutputTensor.Sizes[3]")


def test_device_validate_uses_the_device_feature_level() -> None:
    report = numpy_device(feature_level=FL.LEVEL_6_1).validate(pool(dilated=True))
    assert_rule(report, "OPERATOR.FEATURE_LEVEL", POOL1)


def test_create_operator_deep_copies_the_desc() -> None:
    desc = DML_AVERAGE_POOLING_OPERATOR_DESC(
        buffer_tensor(DT.FLOAT32, [1, 2, 6, 6]),
        buffer_tensor(DT.FLOAT32, [1, 2, 4, 4]),
        2,
        [1, 1],
        [3, 3],
        [0, 0],
        [0, 0],
        True,
    )
    desc.InputTensor.Desc.Sizes = [1, 2, 6, 6]  # mutable lists, as a caller would have
    desc.WindowSize = [3, 3]
    op = numpy_device().create_operator(desc)

    desc.WindowSize[0] = 1
    desc.Strides = [2, 2]
    desc.IncludePadding = False
    desc.InputTensor.Desc.Sizes[2] = 100
    desc.InputTensor.Desc.DataType = DT.FLOAT16
    desc.OutputTensor = None

    assert tuple(op.desc.WindowSize) == (3, 3)
    assert tuple(op.desc.Strides) == (1, 1)
    assert op.desc.IncludePadding
    assert tuple(op.desc.InputTensor.Desc.Sizes) == (1, 2, 6, 6)
    assert op.desc.InputTensor.Desc.DataType is DT.FLOAT32
    assert tuple(op.desc.OutputTensor.Desc.Sizes) == (1, 2, 4, 4)


def test_create_operator_shares_no_object_with_the_callers_desc() -> None:
    desc = pool()
    op = numpy_device().create_operator(desc)
    assert op.desc is not desc
    assert op.desc.InputTensor is not desc.InputTensor
    assert op.desc.InputTensor.Desc is not desc.InputTensor.Desc


@pytest.mark.parametrize(
    ("x", "y", "expected"),
    [
        pytest.param((1, 2, 6, 6), (1, 2, 4, 4), 2, id="4-D tensors derive DimensionCount 2"),
        pytest.param((1, 2, 6, 6, 6), (1, 2, 4, 4, 4), 3, id="5-D tensors derive DimensionCount 3"),
    ],
)
def test_dimension_count_none_is_derived_from_the_arrays(x: tuple[int, ...], y: tuple[int, ...], expected: int) -> None:
    desc = pool(x, y, DimensionCount=None)
    assert desc.DimensionCount is None
    op = numpy_device().create_operator(desc)
    assert op.desc.DimensionCount == expected
    assert desc.DimensionCount is None  # the caller's desc is untouched


def test_a_given_dimension_count_is_checked_against_the_arrays() -> None:
    report = dmlpy.validate(pool(DimensionCount=2, Strides=[1, 1, 1]))
    assert_rule(report, "POOLING.ARRAY_LENGTH", f"{POOL}.Strides")


@pytest.mark.parametrize(
    "desc",
    [
        pytest.param(pool(), id="a valid desc"),
        pytest.param(pool(y=(1, 3, 5, 4), y_type=DT.FLOAT16), id="a desc with several errors"),
        pytest.param(pool(dilated=True, Dilations=[2, 2]), id="an AVERAGE_POOLING1 desc"),
    ],
)
def test_bare_and_wrapped_descs_validate_the_same(desc: Any) -> None:
    op_type = OP.AVERAGE_POOLING1 if isinstance(desc, DML_AVERAGE_POOLING1_OPERATOR_DESC) else OP.AVERAGE_POOLING
    bare = dmlpy.validate(desc)
    wrapped = dmlpy.validate(DML_OPERATOR_DESC(op_type, desc))
    assert [(f.rule, f.path, f.message) for f in bare.findings] == [
        (f.rule, f.path, f.message) for f in wrapped.findings
    ]


def test_bare_and_wrapped_descs_create_the_same_operator() -> None:
    device = numpy_device()
    bare = device.create_operator(pool())
    wrapped = device.create_operator(DML_OPERATOR_DESC(OP.AVERAGE_POOLING, pool()))
    assert bare.desc == wrapped.desc
    assert bare.spec is wrapped.spec
    assert bare.name == wrapped.name == "DML_OPERATOR_AVERAGE_POOLING"


def test_operator_desc_infers_the_type_from_the_struct() -> None:
    assert dmlpy.operator_desc(pool()).Type == OP.AVERAGE_POOLING == 56
    assert dmlpy.operator_desc(pool(dilated=True)).Type == OP.AVERAGE_POOLING1 == 166


# ---------------------------------------------------------------------------------------
# Feature-level gate (the DML_AVERAGE_POOLING1_OPERATOR_DESC page: AVERAGE_POOLING1 is FL 6.2)


def test_average_pooling1_is_rejected_below_fl_6_2_with_both_levels_named() -> None:
    with pytest.raises(dmlpy.DmlError) as caught:
        numpy_device(feature_level=FL.LEVEL_6_1).create_operator(pool(dilated=True))
    finding = assert_rule(caught.value, "OPERATOR.FEATURE_LEVEL", POOL1)
    assert "DML_FEATURE_LEVEL_6_2" in finding.message
    assert "DML_FEATURE_LEVEL_6_1" in finding.message
    assert caught.value.hresult == E_INVALIDARG


@pytest.mark.parametrize(
    "level",
    [FL.LEVEL_6_2, FL.LEVEL_6_3, FL.LEVEL_6_4],
    ids=lambda level: f"AVERAGE_POOLING1 exists at FL {level.dotted}",
)
def test_average_pooling1_is_accepted_from_fl_6_2(level: FL) -> None:
    assert numpy_device(feature_level=level).create_operator(pool(dilated=True)).name == "DML_OPERATOR_AVERAGE_POOLING1"


def test_average_pooling_exists_from_fl_1_0() -> None:
    assert numpy_device(feature_level=FL.LEVEL_1_0).create_operator(pool()).name == "DML_OPERATOR_AVERAGE_POOLING"


def test_the_feature_level_gate_stops_before_the_tensor_rules() -> None:
    # One clear reason is better than a cascade: at FL 6.1 the struct itself does not exist.
    report = dmlpy.validate(pool(dilated=True, y=(1, 2, 9, 9)), feature_level=FL.LEVEL_6_1)
    assert rule_ids(report) == ["OPERATOR.FEATURE_LEVEL"]


# ---------------------------------------------------------------------------------------
# average_pooling_output_sizes against hand-computed numbers


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        pytest.param(
            {
                "input_sizes": (1, 3, 112, 112),
                "window_size": (3, 3),
                "strides": (2, 2),
                "start_padding": (1, 1),
                "end_padding": (1, 1),
            },
            (1, 3, 56, 56),
            id="112 padded 1+1, window 3, stride 2: 111 / 2 + 1 = 56",
        ),
        pytest.param(
            {"input_sizes": (1, 1, 6, 6), "window_size": (3, 3), "strides": (2, 2)},
            (1, 1, 2, 2),
            id="floor: (6 - 3) / 2 + 1 = 2",
        ),
        pytest.param(
            {"input_sizes": (1, 1, 6, 6), "window_size": (3, 3), "strides": (2, 2), "ceil_mode": True},
            (1, 1, 3, 3),
            id="ceil: 3 / 2 rounds up to 2, + 1 = 3",
        ),
        pytest.param(
            {"input_sizes": (1, 1, 7, 7), "window_size": (3, 3), "strides": (2, 2), "ceil_mode": True},
            (1, 1, 3, 3),
            id="ceil with an exact division adds nothing: 4 / 2 + 1 = 3",
        ),
        pytest.param(
            {
                "input_sizes": (1, 1, 5, 5),
                "window_size": (2, 2),
                "strides": (3, 3),
                "end_padding": (2, 2),
                "ceil_mode": True,
            },
            (1, 1, 2, 2),
            id="ceil drops a window that would start in end padding: 3rd start 6 >= 5",
        ),
        pytest.param(
            {"input_sizes": (1, 1, 10, 10), "window_size": (3, 3), "dilations": (2, 2)},
            (1, 1, 6, 6),
            id="dilation 2 spans 5 taps: 10 - 5 + 1 = 6",
        ),
        pytest.param(
            {
                "input_sizes": (1, 1, 10, 10),
                "window_size": (3, 3),
                "strides": (2, 2),
                "start_padding": (1, 1),
                "end_padding": (1, 1),
                "dilations": (2, 2),
            },
            (1, 1, 4, 4),
            id="dilated floor: (10 + 2 - 5) / 2 + 1 = 4",
        ),
        pytest.param(
            {
                "input_sizes": (1, 1, 10, 10),
                "window_size": (3, 3),
                "strides": (2, 2),
                "start_padding": (1, 1),
                "end_padding": (1, 1),
                "dilations": (2, 2),
                "ceil_mode": True,
            },
            (1, 1, 5, 5),
            id="dilated ceil: 7 / 2 rounds up to 4, + 1 = 5; 5th start 8 < 11",
        ),
        pytest.param(
            {"input_sizes": (2, 3, 8, 9, 10), "window_size": (2, 3, 4), "strides": (2, 3, 4)},
            (2, 3, 4, 3, 2),
            id="5-D: (8-2)/2+1 = 4, (9-3)/3+1 = 3, (10-4)/4+1 = 2",
        ),
        pytest.param(
            {"input_sizes": (4, 5, 7, 9), "window_size": (1, 1)},
            (4, 5, 7, 9),
            id="a 1x1 window with stride 1 keeps the size",
        ),
        pytest.param(
            {
                "input_sizes": (1, 1, 6, 9),
                "window_size": (2, 3),
                "strides": (1, 3),
                "start_padding": (0, 1),
                "end_padding": (1, 2),
            },
            (1, 1, 6, 4),
            id="per-axis values: (6+0+1-2)/1+1 = 6, (9+1+2-3)/3+1 = 4",
        ),
    ],
)
def test_average_pooling_output_sizes_match_hand_computed_sizes(
    kwargs: dict[str, Any], expected: tuple[int, ...]
) -> None:
    assert average_pooling_output_sizes(**kwargs) == expected


def test_average_pooling_output_sizes_are_accepted_by_the_validator() -> None:
    # The helper's ceil shape is what the validator accepts (with the CEIL_OUTPUT warning).
    desc = pool(
        (1, 1, 10, 10),
        (1, 1, 5, 5),
        dilated=True,
        Strides=[2, 2],
        StartPadding=[1, 1],
        EndPadding=[1, 1],
        Dilations=[2, 2],
    )
    assert rule_ids(dmlpy.validate(desc)) == ["POOLING.CEIL_OUTPUT", "POOLING.CEIL_OUTPUT"]


# ---------------------------------------------------------------------------------------
# Max pooling: output sizes by the page's formula, ((in + start + end - ((w - 1) * d + 1)) / s + 1)

MAX = "DML_MAX_POOLING_OPERATOR_DESC"
MAX1 = "DML_MAX_POOLING1_OPERATOR_DESC"
MAX2 = "DML_MAX_POOLING2_OPERATOR_DESC"


def max_pool(
    kind: str = MAX2,
    x: tuple[int, ...] = (1, 2, 6, 6),
    y: tuple[int, ...] = (1, 2, 4, 4),
    indices: tuple[int, ...] | None = None,
    *,
    dtype: Any = DT.FLOAT32,
    index_type: Any = DT.UINT32,
    **fields: Any,
) -> Any:
    """Default: 6x6 input, 3x3 window, stride 1, no padding: (6 - 3) / 1 + 1 = 4."""
    from dmlpy.operators.descs import DML_MAX_POOLING1_OPERATOR_DESC, DML_MAX_POOLING2_OPERATOR_DESC, DML_MAX_POOLING_OPERATOR_DESC  # noqa: PLC0415

    spatial = len(x) - 2
    arrays = {"Strides": [1] * spatial, "WindowSize": [3] * spatial, "StartPadding": [0] * spatial, "EndPadding": [0] * spatial}
    if kind == MAX2:
        arrays["Dilations"] = [1] * spatial
    arrays.update(fields)
    tensors = [buffer_tensor(dtype, x), buffer_tensor(dtype, y)]
    if kind != MAX:
        tensors.append(None if indices is None else buffer_tensor(index_type, indices))
    cls = {MAX: DML_MAX_POOLING_OPERATOR_DESC, MAX1: DML_MAX_POOLING1_OPERATOR_DESC, MAX2: DML_MAX_POOLING2_OPERATOR_DESC}[kind]
    return cls(*tensors, **arrays)


@pytest.mark.parametrize(
    ("value", "level"),
    [
        pytest.param(max_pool(MAX), FL.LEVEL_1_0, id="MAX_POOLING 6x6, 3x3 window -> (6 - 3) / 1 + 1 = 4 is valid at FL 1.0"),
        pytest.param(max_pool(MAX1, indices=(1, 2, 4, 4)), FL.LEVEL_2_0, id="MAX_POOLING1 with UINT32 indices of the output's sizes is valid at FL 2.0"),
        pytest.param(max_pool(MAX2, y=(1, 2, 2, 2), Dilations=[2, 2]), FL.LEVEL_2_1, id="MAX_POOLING2 dilation 2: (6 - ((3 - 1) * 2 + 1)) / 1 + 1 = 2"),
        pytest.param(max_pool(MAX2, y=(1, 2, 3, 3), Strides=[2, 2], StartPadding=[1, 1], EndPadding=[1, 1]), FL.LEVEL_2_1, id="stride 2, pads 1: (6 + 1 + 1 - 3) / 2 + 1 = 3"),
        pytest.param(max_pool(MAX2, y=(1, 2, 3, 3), Strides=[2, 2]), FL.LEVEL_2_1, id="ceil shape: floor (6 - 3) / 2 + 1 = 2, one more window starts at 4 < 6"),
        pytest.param(max_pool(MAX2, indices=(1, 2, 4, 4), index_type=DT.UINT64), FL.LEVEL_5_0, id="UINT64 indices from FL 5.0"),
        pytest.param(max_pool(MAX2, (1, 1, 4, 6, 6), (1, 1, 2, 4, 4)), FL.LEVEL_2_1, id="5-D: depth (4 - 3) / 1 + 1 = 2"),
    ],
)
def test_a_valid_max_pooling_has_no_finding(value: Any, level: FL) -> None:
    assert rule_ids(dmlpy.validate(value, feature_level=level)) == []


@pytest.mark.parametrize(
    ("value", "level", "rule_id", "path"),
    [
        pytest.param(max_pool(MAX, y=(1, 2, 5, 4)), FL.LEVEL_1_0, "MAX_POOLING.OUTPUT_SIZE", f"{MAX}.OutputTensor.Sizes[2]", id="MAX_POOLING height 5, expected (6 - 3) / 1 + 1 = 4"),
        pytest.param(max_pool(MAX1, y=(1, 2, 4, 4), Strides=[1, 2]), FL.LEVEL_2_0, "MAX_POOLING.OUTPUT_SIZE", f"{MAX1}.OutputTensor.Sizes[3]", id="width 4 with stride 2: floor (6 - 3) / 2 + 1 = 2, ceil shape 3; 4 is neither"),
        pytest.param(max_pool(MAX2, Dilations=[2, 2]), FL.LEVEL_2_1, "MAX_POOLING.OUTPUT_SIZE", f"{MAX2}.OutputTensor.Sizes[2]", id="dilation 2 gives (6 - 5) / 1 + 1 = 2, not the undilated 4"),
        pytest.param(max_pool(MAX2, y=(1, 2, 4, 4), Strides=[3, 3]), FL.LEVEL_2_1, "MAX_POOLING.OUTPUT_SIZE", f"{MAX2}.OutputTensor.Sizes[2]", id="stride 3: (6 - 3) / 3 + 1 = 2 exactly, so no ceil shape: 4 is wrong"),
        pytest.param(max_pool(MAX2, y=(1, 3, 4, 4)), FL.LEVEL_2_1, "MAX_POOLING.BATCH_AND_CHANNELS", f"{MAX2}.OutputTensor.Sizes[1]", id="output channels 3, input channels 2"),
        pytest.param(max_pool(MAX2, WindowSize=[7, 3]), FL.LEVEL_2_1, "MAX_POOLING.WINDOW_LARGER_THAN_INPUT", f"{MAX2}.WindowSize[0]", id="window 7 on a 6-row unpadded input"),
        pytest.param(max_pool(MAX2, Strides=[0, 1]), FL.LEVEL_2_1, "MAX_POOLING.ZERO", f"{MAX2}.Strides[0]", id="a stride of 0"),
        pytest.param(max_pool(MAX2, Dilations=[1, 0]), FL.LEVEL_2_1, "MAX_POOLING.ZERO", f"{MAX2}.Dilations[1]", id="a dilation of 0"),
        pytest.param(max_pool(MAX1, indices=(1, 2, 4, 3)), FL.LEVEL_2_0, "MAX_POOLING.INDICES_SIZES", f"{MAX1}.OutputIndicesTensor.Sizes", id="indices {1,2,4,3} differ from the output's {1,2,4,4}"),
        pytest.param(max_pool(MAX2, indices=(1, 2, 4, 4), index_type=DT.UINT64), FL.LEVEL_4_1, "TENSOR.DATA_TYPE_SUPPORT", f"{MAX2}.OutputIndicesTensor.DataType", id="UINT64 indices below FL 5.0"),
        pytest.param(max_pool(MAX2, indices=(1, 2, 4, 4), index_type=DT.INT32), FL.LEVEL_6_4, "TENSOR.DATA_TYPE_SUPPORT", f"{MAX2}.OutputIndicesTensor.DataType", id="INT32 indices: UINT32 or UINT64 only"),
        pytest.param(max_pool(MAX, dtype=DT.INT8), FL.LEVEL_2_1, "TENSOR.DATA_TYPE_SUPPORT", f"{MAX}.InputTensor.DataType", id="INT8 max pooling below FL 3.0"),
        pytest.param(max_pool(MAX2, (1, 2, 6), (1, 2, 4), Strides=[1], WindowSize=[3], StartPadding=[0], EndPadding=[0], Dilations=[1]), FL.LEVEL_6_4, "TENSOR.DIMENSION_COUNT_SUPPORT", f"{MAX2}.InputTensor.DimensionCount", id="3-D input: 4 to 5 dims only"),
        pytest.param(max_pool(MAX2, (1, 2, 6, 6), (1, 2, 4, 4), Strides=[1, 1, 1], WindowSize=[3, 3, 3], StartPadding=[0, 0, 0], EndPadding=[0, 0, 0], Dilations=[1, 1, 1]), FL.LEVEL_6_4, "MAX_POOLING.DIMENSION_COUNT", f"{MAX2}.DimensionCount", id="DimensionCount 3 on 4-D tensors, expected 4 - 2 = 2"),
        pytest.param(max_pool(MAX2, StartPadding=[0]), FL.LEVEL_6_4, "FIELD.ARRAY_LENGTH", f"{MAX2}.StartPadding", id="StartPadding with 1 entry, DimensionCount 2"),
        pytest.param(max_pool(MAX2), FL.LEVEL_2_0, "OPERATOR.FEATURE_LEVEL", MAX2, id="MAX_POOLING2 arrived at FL 2.1"),
    ],
)
def test_max_pooling_rule_is_reported_at_its_field(value: Any, level: FL, rule_id: str, path: str) -> None:
    assert_rule(dmlpy.validate(value, feature_level=level), rule_id, path)


def test_max_pooling_output_size_message_shows_the_dilated_formula() -> None:
    finding = assert_rule(dmlpy.validate(max_pool(MAX2, Dilations=[2, 2])), "MAX_POOLING.OUTPUT_SIZE", f"{MAX2}.OutputTensor.Sizes[2]")
    assert "(6 + 0 + 0 - ((3 - 1) * 2 + 1)) / 1 + 1" in finding.message
