"""Support data files and the generic rules every operator gets from data.

Expected tables and constraints are DirectML's reference pages (ELEMENT_WISE_ADD, JOIN,
ELEMENT_WISE_IDENTITY, PADDING) and DirectML.h (enum values and the feature level that added them).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import assert_rule, rule_ids

import dmlpy
from dmlpy import DML_FEATURE_LEVEL as FL
from dmlpy import DML_TENSOR_DATA_TYPE as DT
from dmlpy import buffer_tensor
from dmlpy.operators import REGISTRY, spec_for_desc, support_data_problems
from dmlpy.operators.activation import FusedActivation
from dmlpy.operators.descs import (
    DML_AVERAGE_POOLING_OPERATOR_DESC,
    DML_ELEMENT_WISE_ADD_OPERATOR_DESC,
    DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC,
    DML_FILL_VALUE_CONSTANT_OPERATOR_DESC,
    DML_GEMM_OPERATOR_DESC,
    DML_JOIN_OPERATOR_DESC,
    DML_PADDING_OPERATOR_DESC,
    DML_SCALE_BIAS,
)
from dmlpy.structs import DML_SCALAR_UNION
from dmlpy.support import SUPPORT_DIR, SupportDataError, load_support, parse_support

F32, F16 = np.float32, np.float16
ADD = "DML_ELEMENT_WISE_ADD_OPERATOR_DESC"
JOIN = "DML_JOIN_OPERATOR_DESC"
PAD = "DML_PADDING_OPERATOR_DESC"


def add(a: Any = (F32, (1, 1, 2, 2)), b: Any = (F32, (1, 1, 2, 2)), out: Any = (F32, (1, 1, 2, 2))) -> DML_ELEMENT_WISE_ADD_OPERATOR_DESC:
    return DML_ELEMENT_WISE_ADD_OPERATOR_DESC(buffer_tensor(*a), buffer_tensor(*b), buffer_tensor(*out))


def join(*inputs: Any, out: Any = (F32, (1, 1, 5, 2)), axis: int = 2, count: int | None = None) -> DML_JOIN_OPERATOR_DESC:
    return DML_JOIN_OPERATOR_DESC(count, [buffer_tensor(*i) for i in inputs], buffer_tensor(*out), axis)


def pad(mode: Any = 0, start: Any = (0, 0, 1, 1), end: Any = (0, 0, 1, 1), count: int | None = None) -> DML_PADDING_OPERATOR_DESC:
    return DML_PADDING_OPERATOR_DESC(buffer_tensor(F32, (1, 1, 2, 2)), buffer_tensor(F32, (1, 1, 4, 4)), mode, 0.0, count, start, end)


# ---------------------------------------------------------------------------------------
# The data files


def test_every_support_data_file_parses_and_agrees_with_the_descs() -> None:
    data = load_support()
    assert {"DML_OPERATOR_ELEMENT_WISE_ADD", "DML_OPERATOR_JOIN", "DML_OPERATOR_AVERAGE_POOLING", "DML_OPERATOR_CONVOLUTION"} <= set(data)
    assert support_data_problems(data) == []


def test_the_converted_tables_say_what_the_pages_say() -> None:
    conv = REGISTRY[dmlpy.DML_OPERATOR_TYPE.CONVOLUTION].support
    assert conv.table_at(FL.LEVEL_3_1)[1]["FilterTensor"].dimension_counts == (4, 5)  # type: ignore[index]
    assert conv.table_at(FL.LEVEL_4_0)[1]["FilterTensor"].dimension_counts == (3, 5)  # type: ignore[index]
    s2d = REGISTRY[dmlpy.DML_OPERATOR_TYPE.SPACE_TO_DEPTH].support
    assert DT.INT8 not in s2d.table_at(FL.LEVEL_2_0)[1]["InputTensor"].data_types  # type: ignore[index]
    assert DT.INT8 in s2d.table_at(FL.LEVEL_2_1)[1]["InputTensor"].data_types  # type: ignore[index]
    assert DT.FLOAT64 in s2d.table_at(FL.LEVEL_5_0)[1]["OutputTensor"].data_types  # type: ignore[index]


def test_a_support_data_entry_names_a_tensor_the_desc_does_not_have() -> None:
    entry = {"DML_OPERATOR_ELEMENT_WISE_ADD": {"page": "p", "support": {"1.0": {"CTensor": {"kind": "input", "dims": [4, 4], "types": ["FLOAT32"]}}}}}
    assert support_data_problems(parse_support(entry, "x.json")) == ["DML_OPERATOR_ELEMENT_WISE_ADD: CTensor is not a tensor field of DML_ELEMENT_WISE_ADD_OPERATOR_DESC"]


_ROW = {"kind": "input", "dims": [4, 5], "types": ["FLOAT32"]}


@pytest.mark.parametrize(
    ("data", "where"),
    [
        pytest.param([], "x.json", id="a list instead of an object is refused"),
        pytest.param({"DML_OPERATOR_ADD": {"page": "p", "support": {}}}, "DML_OPERATOR_ADD", id="an unknown operator name is refused"),
        pytest.param({"DML_OPERATOR_CAST": {"page": "p", "support": {"1.5": {"InputTensor": _ROW}}}}, "support", id="a feature level that does not exist is refused"),
        pytest.param({"DML_OPERATOR_CAST": {"page": "p", "support": {"1.0": {"InputTensor": {**_ROW, "dims": [5, 4]}}}}}, "dims", id="dims low above high is refused"),
        pytest.param({"DML_OPERATOR_CAST": {"page": "p", "support": {"1.0": {"InputTensor": {**_ROW, "dims": [1, 9]}}}}}, "dims", id="more than 8 dims is refused"),
        pytest.param({"DML_OPERATOR_CAST": {"page": "p", "support": {"1.0": {"InputTensor": {**_ROW, "types": ["FLOAT"]}}}}}, "types", id="an unknown data type is refused"),
        pytest.param({"DML_OPERATOR_CAST": {"page": "p", "support": {"1.0": {"InputTensor": {**_ROW, "kind": "in"}}}}}, "kind", id="an unknown kind is refused"),
        pytest.param({"DML_OPERATOR_CAST": {"page": "p", "support": {}, "constraints": [{"tensors": ["InputTensor", "OutputTensor"], "same": ["Strides"]}]}}, "same",
                     id="a constraint on a property other than DataType, DimensionCount, Sizes is refused"),
        pytest.param({"DML_OPERATOR_CAST": {"page": "p", "support": {}, "extra": 1}}, "DML_OPERATOR_CAST", id="an unknown member is refused"),
    ],
)
def test_malformed_support_data_is_refused_with_its_location(data: Any, where: str) -> None:
    with pytest.raises(SupportDataError, match=where):
        parse_support(data, "x.json")


def test_an_operator_in_two_files_is_refused(tmp_path: Path) -> None:
    entry = {"DML_OPERATOR_CAST": {"page": "p", "support": {"1.0": {"InputTensor": _ROW}}}}
    for name in ("a.json", "b.json"):
        (tmp_path / name).write_text(json.dumps(entry), encoding="utf-8")
    with pytest.raises(SupportDataError, match="two support data files"):
        load_support(tmp_path)
    assert SUPPORT_DIR.is_dir()


# ---------------------------------------------------------------------------------------
# The generic rules

CASES = [
    pytest.param(add(b=(F16, (1, 1, 2, 2))), FL.LEVEL_6_4, "TENSOR.SAME_DATA_TYPE", f"{ADD}.BTensor.DataType", id="ADD: B of another data type than A is rejected"),
    pytest.param(add(out=(F32, (1, 1, 2, 3))), FL.LEVEL_6_4, "TENSOR.SAME_SIZES", f"{ADD}.OutputTensor.Sizes", id="ADD: an output of other sizes is rejected (no broadcasting)"),
    pytest.param(add(b=(F32, (1, 2, 2))), FL.LEVEL_6_4, "TENSOR.SAME_DIMENSION_COUNT", f"{ADD}.BTensor.DimensionCount", id="ADD: a 3-D B with 4-D A is rejected"),
    pytest.param(add((np.int8, (1, 1, 2, 2)), (np.int8, (1, 1, 2, 2)), (np.int8, (1, 1, 2, 2))), FL.LEVEL_2_1, "TENSOR.DATA_TYPE_SUPPORT", f"{ADD}.ATensor.DataType",
                 id="ADD: INT8 is refused at FL 2.1 (FLOAT32, FLOAT16, INT32, UINT32 only)"),
    pytest.param(add((F32, (4,)), (F32, (4,)), (F32, (4,))), FL.LEVEL_2_1, "TENSOR.DIMENSION_COUNT_SUPPORT", f"{ADD}.ATensor.DimensionCount", id="ADD: 1-D tensors are refused before FL 3.0"),
    pytest.param(join((F32, (1, 1, 2, 2)), (F16, (1, 1, 3, 2))), FL.LEVEL_6_4, "TENSOR.SAME_DATA_TYPE", f"{JOIN}.InputTensors[1].DataType", id="JOIN: every array element shares the data type"),
    pytest.param(join((F32, (1, 1, 1, 2, 2)), (F32, (1, 1, 1, 3, 2)), out=(F32, (1, 1, 1, 5, 2)), axis=3), FL.LEVEL_2_1, "TENSOR.DIMENSION_COUNT_SUPPORT", f"{JOIN}.InputTensors[0].DimensionCount",
                 id="JOIN: 5-D inputs are refused at FL 2.1"),
    pytest.param(join((F32, (1, 1, 2, 2)), (F32, (1, 1, 3, 2)), count=3), FL.LEVEL_6_4, "FIELD.ARRAY_LENGTH", f"{JOIN}.InputTensors", id="JOIN: InputCount 3 with 2 tensors is rejected"),
    pytest.param(pad(mode=3), FL.LEVEL_2_1, "ENUM.FEATURE_LEVEL", f"{PAD}.PaddingMode", id="PADDING: SYMMETRIC before FL 3.0 is rejected"),
    pytest.param(pad(mode=4), FL.LEVEL_6_3, "ENUM.FEATURE_LEVEL", f"{PAD}.PaddingMode", id="PADDING: WRAP before FL 6.4 is rejected"),
    pytest.param(pad(mode=9), FL.LEVEL_6_4, "ENUM.VALUE", f"{PAD}.PaddingMode", id="PADDING: a mode that does not exist is rejected"),
    pytest.param(pad(end=(0, 0, 1)), FL.LEVEL_6_4, "FIELD.ARRAY_LENGTH", f"{PAD}.EndPadding", id="PADDING: 3 end paddings for DimensionCount 4 are rejected"),
    pytest.param(pad(end=None), FL.LEVEL_6_4, "FIELD.REQUIRED", f"{PAD}.EndPadding", id="PADDING: a NULL EndPadding is rejected"),
    pytest.param(DML_FILL_VALUE_CONSTANT_OPERATOR_DESC(buffer_tensor(F32, (1, 1, 2, 2)), DT.INT4, DML_SCALAR_UNION()), FL.LEVEL_6_2, "ENUM.FEATURE_LEVEL",
                 "DML_FILL_VALUE_CONSTANT_OPERATOR_DESC.ValueDataType", id="FILL_VALUE_CONSTANT: an INT4 ValueDataType before FL 6.3 is rejected"),
    pytest.param(DML_GEMM_OPERATOR_DESC(buffer_tensor(F32, (1, 1, 2, 2)), buffer_tensor(F32, (1, 1, 2, 2)), None, buffer_tensor(F32, (1, 1, 2, 2)),
                                        FusedActivation=DML_AVERAGE_POOLING_OPERATOR_DESC(DimensionCount=2)), FL.LEVEL_6_4, "ACTIVATION.NOT_FUSABLE", "DML_GEMM_OPERATOR_DESC.FusedActivation.Type",
                 id="GEMM: a pooling desc cannot be fused"),
]


@pytest.mark.parametrize(("desc", "level", "rule_id", "path"), CASES)
def test_generic_rule_finds_the_mistake(desc: Any, level: FL, rule_id: str, path: str) -> None:
    report = dmlpy.validate(desc, feature_level=level)
    assert_rule(report, rule_id, path=path)
    assert "OPERATOR.NOT_EMULATED" not in rule_ids(report)


@pytest.mark.parametrize(
    ("desc", "level"),
    [
        pytest.param(add(), FL.LEVEL_1_0, id="ADD of three equal FLOAT32 4-D tensors at FL 1.0"),
        pytest.param(add((np.int8, (4,)), (np.int8, (4,)), (np.int8, (4,))), FL.LEVEL_5_1, id="ADD of 1-D INT8 tensors at FL 5.1"),
        pytest.param(join((F32, (1, 1, 2, 2)), (F32, (1, 1, 3, 2))), FL.LEVEL_1_0, id="JOIN of two 4-D inputs, InputCount derived"),
        pytest.param(join((F32, (1, 1, 1, 2, 2)), (F32, (1, 1, 1, 3, 2)), out=(F32, (1, 1, 1, 5, 2)), axis=3), FL.LEVEL_3_0, id="JOIN of 5-D inputs at FL 3.0"),
        pytest.param(pad(mode=3), FL.LEVEL_3_0, id="PADDING SYMMETRIC at FL 3.0"),
        pytest.param(pad(mode=4), FL.LEVEL_6_4, id="PADDING WRAP at FL 6.4"),
        pytest.param(DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC(buffer_tensor(F32, (1, 1, 2, 2)), buffer_tensor(F32, (1, 1, 2, 2)), DML_SCALE_BIAS(2.0, 1.0)), FL.LEVEL_1_0,
                     id="IDENTITY with a scale and bias"),
        pytest.param(DML_GEMM_OPERATOR_DESC(buffer_tensor(F32, (1, 1, 2, 2)), buffer_tensor(F32, (1, 1, 2, 2)), None, buffer_tensor(F32, (1, 1, 2, 2)), FusedActivation=FusedActivation.relu()),
                     FL.LEVEL_6_4, id="GEMM with a fused RELU and no C"),
    ],
)
def test_a_valid_desc_gets_no_error_and_the_not_emulated_warning_only_without_a_kernel(desc: Any, level: FL) -> None:
    expected = [] if spec_for_desc(desc).emulated else ["OPERATOR.NOT_EMULATED"]  # ELEMENT_WISE_* have NumPy kernels
    assert rule_ids(dmlpy.validate(desc, feature_level=level)) == expected


def test_a_family_operator_gets_its_own_rule_not_the_generic_duplicate() -> None:
    desc = DML_AVERAGE_POOLING_OPERATOR_DESC(buffer_tensor(F32, (1, 1, 4, 4)), buffer_tensor(F32, (1, 1, 3, 3)), 2, [1, 1], [2, 2], [0, 0], [0])
    ids = rule_ids(dmlpy.validate(desc))
    assert "POOLING.ARRAY_LENGTH" in ids and "FIELD.ARRAY_LENGTH" not in ids


def test_support_data_under_the_scatter_alias_reaches_scatter_elements(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dmlpy import operators  # noqa: PLC0415

    row = {"kind": "input", "dims": [1, 8], "types": ["FLOAT32"]}
    entry = {"DML_OPERATOR_SCATTER": {"page": "p", "support": {"3.0": {"InputTensor": row}}}}
    (tmp_path / "data_movement.json").write_text(json.dumps(entry), encoding="utf-8")
    monkeypatch.setattr(operators, "load_support", lambda: load_support(tmp_path))
    before = dict(REGISTRY)
    try:
        operators._register_every_operator()
        tables = REGISTRY[dmlpy.DML_OPERATOR_TYPE.SCATTER_ELEMENTS].support.tables
        assert tables[FL.LEVEL_3_0]["InputTensor"].dimension_counts == (1, 8)
    finally:
        for spec in before.values():
            operators.register(spec)
