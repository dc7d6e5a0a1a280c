"""Tensor descriptions: DMLCalcBufferTensorSize, the tensor helpers, and every TENSOR.* and FIELD.* rule.

Expected numbers come from the DirectML documentation's worked examples (the DML_BUFFER_TENSOR_DESC page and DMLCalcBufferTensorSize of DirectML's helper functions)
or are computed by hand in the case ids; none is produced by the code under test.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import assert_rule, rule_ids

import dmlpy
from dmlpy import (
    DML_AVERAGE_POOLING_OPERATOR_DESC,
    DML_BUFFER_TENSOR_DESC,
    DML_FEATURE_LEVEL,
    DML_TENSOR_DATA_TYPE,
    DML_TENSOR_DESC,
    DML_TENSOR_FLAGS,
    DML_TENSOR_TYPE,
    buffer_tensor,
    calc_buffer_tensor_size,
    nhwc_strides,
    numpy_dtype,
    packed_strides,
)
from dmlpy.tensor import as_data_type

DT = DML_TENSOR_DATA_TYPE
FL = DML_FEATURE_LEVEL
POOL = "DML_AVERAGE_POOLING_OPERATOR_DESC"
UINT_MAX = 2**32 - 1


# ---------------------------------------------------------------------------------------
# calc_buffer_tensor_size (DirectMLX variant, DMLCalcBufferTensorSize of DirectML's helper functions)


@pytest.mark.doc_example
def test_packed_float16_1x1x1x3_needs_8_bytes_as_the_docs_say() -> None:
    # DMLCalcBufferTensorSize of DirectML's helper functions: 3 elements * 2 bytes = 6, rounded up to 8
    assert calc_buffer_tensor_size(DT.FLOAT16, [1, 1, 1, 3]) == 8


@pytest.mark.doc_example
def test_broadcast_float32_1x3x4x4_with_strides_0_1_0_0_needs_12_bytes_as_the_docs_say() -> None:
    # DMLCalcBufferTensorSize of DirectML's helper functions: (2 * 1 + 1) * 4 = 12
    assert calc_buffer_tensor_size(DT.FLOAT32, [1, 3, 4, 4], [0, 1, 0, 0]) == 12


@pytest.mark.parametrize(
    ("data_type", "sizes", "strides", "expected"),
    [
        pytest.param(DT.FLOAT32, [2, 3, 4, 5], None, 480, id="packed FLOAT32 2x3x4x5 is 120 elements * 4 = 480 bytes"),
        pytest.param(DT.FLOAT64, [1, 1, 1, 3], None, 24, id="packed FLOAT64 of 3 elements is 3 * 8 = 24 bytes"),
        pytest.param(DT.INT64, [2], None, 16, id="packed INT64 of 2 elements is 16 bytes"),
        pytest.param(DT.UINT8, [1, 1, 1, 5], None, 8, id="5 UINT8 bytes round up to 8"),
        pytest.param(DT.UINT8, [1, 1, 1, 4], None, 4, id="4 UINT8 bytes are already a multiple of 4"),
        pytest.param(DT.INT8, [1], None, 4, id="a single INT8 rounds up to 4 bytes"),
        pytest.param(DT.INT16, [3], None, 8, id="3 INT16 are 6 bytes, rounded up to 8"),
        pytest.param(DT.UINT16, [1, 1, 2, 2], None, 8, id="4 UINT16 are exactly 8 bytes"),
        pytest.param(DT.INT4, [5], None, 4, id="5 INT4 are 20 bits = 3 bytes, rounded up to 4"),
        pytest.param(DT.UINT4, [1, 1, 1, 9], None, 8, id="9 UINT4 are 36 bits = 5 bytes, rounded up to 8"),
        pytest.param(DT.UINT4, [1, 1, 2, 8], None, 8, id="16 UINT4 are 64 bits = exactly 8 bytes"),
        pytest.param(DT.INT4, [1], None, 4, id="a single INT4 is 4 bits = 1 byte, rounded up to 4"),
        pytest.param(DT.INT4, [3], [2], 4, id="strided INT4 sizes 3 strides 2 reach index 4: 5 nibbles = 3 bytes -> 4"),
        pytest.param(
            DT.FLOAT32, [1, 1, 3, 5], [15, 1, 5, 1], 60, id="NHWC strides of 1x1x3x5 reach index 14: 15 * 4 = 60 bytes"
        ),
        pytest.param(
            DT.FLOAT32, [1, 1, 2, 3], [8, 8, 4, 1], 28, id="row-padded strides reach index 4 + 2 = 6: 7 * 4 = 28 bytes"
        ),
        pytest.param(DT.FLOAT16, [2, 3], [0, 0], 4, id="all-broadcast strides reach only element 0: 2 bytes -> 4"),
        pytest.param(DT.FLOAT32, [1, 0, 2, 2], [0, 4, 2, 1], 0, id="a zero size with strides gives 0"),
        pytest.param(DT.FLOAT32, [], None, 0, id="no dimensions gives 0"),
        pytest.param(DT.FLOAT32, None, None, 0, id="NULL sizes gives 0"),
        pytest.param(DT.UNKNOWN, [1, 1, 2, 2], None, 0, id="UNKNOWN data type gives 0"),
        pytest.param(DT.UNKNOWN, [1, 1, 2, 2], [4, 4, 2, 1], 0, id="UNKNOWN data type gives 0 with strides too"),
    ],
)
def test_calc_buffer_tensor_size_matches_hand_computed_bytes(
    data_type: DT, sizes: Any, strides: Any, expected: int
) -> None:
    assert calc_buffer_tensor_size(data_type, sizes, strides) == expected


def test_calc_buffer_tensor_size_returns_0_for_a_type_value_directml_does_not_define() -> None:
    # DirectMLX's switch falls to `default: return 0` for any value it does not list; 14 is past INT4 (13).
    assert calc_buffer_tensor_size(14, [1, 1, 2, 2]) == 0


def test_calc_buffer_tensor_size_accepts_a_numpy_dtype() -> None:
    assert calc_buffer_tensor_size(np.float16, [1, 1, 1, 3]) == 8


@pytest.mark.parametrize(
    ("data_type", "sizes", "strides"),
    [
        pytest.param(DT.FLOAT64, [UINT_MAX] * 3, None, id="packed element count (2^32-1)^3 overflows UINT64"),
        pytest.param(
            DT.FLOAT32,
            [UINT_MAX, UINT_MAX, UINT_MAX],
            [UINT_MAX] * 3,
            id="strided last index 3 * (2^32-2) * (2^32-1) overflows UINT64",
        ),
        pytest.param(
            DT.FLOAT32,
            [1, 1, 1, UINT_MAX],
            [1, 1, 1, UINT_MAX],
            id="last index fits UINT64 but times 32 bits overflows",
        ),
        pytest.param(
            DT.UINT8, [UINT_MAX, UINT_MAX, 2], None, id="packed (2^32-1)^2 * 2 elements times 8 bits overflows"
        ),
    ],
)
def test_calc_buffer_tensor_size_raises_value_error_on_overflow(
    data_type: DT, sizes: list[int], strides: list[int] | None
) -> None:
    with pytest.raises(ValueError, match="overflow"):
        calc_buffer_tensor_size(data_type, sizes, strides)


def test_calc_buffer_tensor_size_accumulates_the_last_index_in_64_bits() -> None:
    # The documented helper's 32-bit UINT index would wrap; DirectMLX's 64-bit one does not:
    # sizes {1,1,2,2} strides {0,0,2^31,2^31}: last index 2^32, so (2^32 + 1) * 1 byte, rounded up to 4.
    assert calc_buffer_tensor_size(DT.UINT8, [1, 1, 2, 2], [0, 0, 2**31, 2**31]) == 2**32 + 4


# ---------------------------------------------------------------------------------------
# Strides helpers


@pytest.mark.doc_example
def test_nhwc_strides_of_1x1x3x5_are_15_1_5_1_as_the_docs_say() -> None:
    assert nhwc_strides([1, 1, 3, 5]) == (15, 1, 5, 1)


@pytest.mark.parametrize(
    ("sizes", "expected"),
    [
        pytest.param(
            [2, 3, 4, 5], (60, 1, 15, 3), id="NCHW 2x3x4x5 as NHWC: C innermost, W by C, H by W*C, N by H*W*C"
        ),
        pytest.param([1, 2, 3, 4, 5], (120, 1, 40, 10, 2), id="NCDHW 1x2x3x4x5 as NDHWC: W=2, H=10, D=40, N=120"),
        pytest.param([2, 3, 4], (12, 1, 3), id="NCW 2x3x4 as NWC"),
    ],
)
def test_nhwc_strides_put_channels_innermost(sizes: list[int], expected: tuple[int, ...]) -> None:
    assert nhwc_strides(sizes) == expected


@pytest.mark.parametrize(
    ("sizes", "expected"),
    [
        pytest.param([2, 3, 4, 5], (60, 20, 5, 1), id="2x3x4x5 is row-major 60, 20, 5, 1"),
        pytest.param([7], (1,), id="a single dimension has stride 1"),
        pytest.param([1, 1, 3, 5], (15, 15, 5, 1), id="1x1x3x5 is 15, 15, 5, 1"),
        pytest.param([], (), id="no dimensions give no strides"),
    ],
)
def test_packed_strides_are_row_major(sizes: list[int], expected: tuple[int, ...]) -> None:
    assert packed_strides(sizes) == expected


# ---------------------------------------------------------------------------------------
# dtype mapping


@pytest.mark.parametrize(
    ("data_type", "dtype"),
    [
        pytest.param(DT.FLOAT32, np.float32, id="FLOAT32 is float32"),
        pytest.param(DT.FLOAT16, np.float16, id="FLOAT16 is binary16"),
        pytest.param(DT.FLOAT64, np.float64, id="FLOAT64 is float64"),
        pytest.param(DT.UINT32, np.uint32, id="UINT32 is uint32"),
        pytest.param(DT.UINT16, np.uint16, id="UINT16 is uint16"),
        pytest.param(DT.UINT8, np.uint8, id="UINT8 is uint8"),
        pytest.param(DT.UINT64, np.uint64, id="UINT64 is uint64"),
        pytest.param(DT.INT32, np.int32, id="INT32 is int32"),
        pytest.param(DT.INT16, np.int16, id="INT16 is int16"),
        pytest.param(DT.INT8, np.int8, id="INT8 is int8"),
        pytest.param(DT.INT64, np.int64, id="INT64 is int64"),
    ],
)
def test_numpy_dtype_and_as_data_type_are_inverse(data_type: DT, dtype: Any) -> None:
    assert numpy_dtype(data_type) == np.dtype(dtype)
    assert numpy_dtype(int(data_type)) == np.dtype(dtype)
    assert as_data_type(dtype) is data_type
    assert as_data_type(np.dtype(dtype)) is data_type


@pytest.mark.parametrize(
    "data_type",
    [
        pytest.param(DT.UNKNOWN, id="UNKNOWN has no NumPy dtype"),
        pytest.param(DT.UINT4, id="UINT4 has no NumPy dtype"),
        pytest.param(DT.INT4, id="INT4 has no NumPy dtype"),
        pytest.param(99, id="an undefined value has no NumPy dtype"),
    ],
)
def test_numpy_dtype_raises_value_error_for_types_numpy_cannot_hold(data_type: Any) -> None:
    with pytest.raises(ValueError):
        numpy_dtype(data_type)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(DT.INT8, DT.INT8, id="an enum member passes through"),
        pytest.param("FLOAT16", DT.FLOAT16, id="the C suffix names a type"),
        pytest.param("float16", DT.FLOAT16, id="a NumPy dtype name names a type"),
        pytest.param(1, DT.FLOAT32, id="the C value 1 is FLOAT32"),
        pytest.param(np.dtype("<f4"), DT.FLOAT32, id="an explicit little-endian float32 is FLOAT32"),
    ],
)
def test_as_data_type_accepts_enums_names_values_and_dtypes(value: Any, expected: DT) -> None:
    assert as_data_type(value) is expected


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(np.complex64, id="complex64 has no DirectML type"),
        pytest.param(np.bool_, id="bool has no DirectML type"),
        pytest.param("not-a-type", id="a made-up name is no type"),
    ],
)
def test_as_data_type_raises_type_error_for_what_directml_does_not_have(value: Any) -> None:
    with pytest.raises(TypeError):
        as_data_type(value)


# ---------------------------------------------------------------------------------------
# buffer_tensor


def test_buffer_tensor_fills_every_field_of_a_packed_tensor() -> None:
    tensor = buffer_tensor(DT.FLOAT16, [1, 1, 1, 3])
    assert tensor.Type == DML_TENSOR_TYPE.BUFFER
    buf = tensor.Desc
    assert isinstance(buf, DML_BUFFER_TENSOR_DESC)
    assert buf.DataType is DT.FLOAT16
    assert buf.Flags == DML_TENSOR_FLAGS.NONE
    assert buf.DimensionCount == 4
    assert tuple(buf.Sizes) == (1, 1, 1, 3)
    assert buf.Strides is None
    assert buf.TotalTensorSizeInBytes == 8  # doc example: 6 bytes rounded up to 8
    assert buf.GuaranteedBaseOffsetAlignment == 0


def test_buffer_tensor_accepts_a_numpy_dtype_and_strides() -> None:
    tensor = buffer_tensor(np.float32, [1, 3, 4, 4], [0, 1, 0, 0])
    assert tensor.buffer.DataType is DT.FLOAT32
    assert tuple(tensor.buffer.Strides) == (0, 1, 0, 0)
    assert tensor.buffer.TotalTensorSizeInBytes == 12  # doc example


def test_buffer_tensor_keeps_flags_total_size_and_alignment_given_explicitly() -> None:
    tensor = buffer_tensor("float32", [1, 1, 2, 2], flags=DML_TENSOR_FLAGS.OWNED_BY_DML, total_size=64, alignment=32)
    assert tensor.buffer.Flags == DML_TENSOR_FLAGS.OWNED_BY_DML
    assert tensor.buffer.TotalTensorSizeInBytes == 64
    assert tensor.buffer.GuaranteedBaseOffsetAlignment == 32


def test_element_strides_of_a_null_strides_tensor_are_the_packed_ones() -> None:
    assert buffer_tensor(DT.FLOAT32, [2, 3, 4, 5]).buffer.element_strides == (60, 20, 5, 1)


def test_a_buffer_tensor_desc_prints_as_the_cpp_that_builds_it() -> None:
    text = str(buffer_tensor(DT.FLOAT16, [1, 1, 1, 3]))
    assert "DML_TENSOR_DATA_TYPE_FLOAT16" in text
    assert "{1, 1, 1, 3}" in text
    assert "8ull" in text


# ---------------------------------------------------------------------------------------
# TENSOR.* rules, through an AVERAGE_POOLING desc: input {1,1,4,4}, 2x2 window, stride 2 -> {1,1,2,2}


def pool(
    input_tensor: Any = "default", output_tensor: Any = "default", **fields: Any
) -> DML_AVERAGE_POOLING_OPERATOR_DESC:
    x = buffer_tensor(DT.FLOAT32, [1, 1, 4, 4]) if input_tensor == "default" else input_tensor
    y = buffer_tensor(DT.FLOAT32, [1, 1, 2, 2]) if output_tensor == "default" else output_tensor
    values: dict[str, Any] = {
        "DimensionCount": 2,
        "Strides": [2, 2],
        "WindowSize": [2, 2],
        "StartPadding": [0, 0],
        "EndPadding": [0, 0],
        "IncludePadding": True,
    }
    values.update(fields)
    return DML_AVERAGE_POOLING_OPERATOR_DESC(x, y, **values)


def raw(data_type: Any = DT.FLOAT32, sizes: Any = (1, 1, 4, 4), **fields: Any) -> DML_TENSOR_DESC:
    """A DML_TENSOR_DESC with fields set exactly as given (no helper fills them in)."""
    values: dict[str, Any] = {
        "DataType": data_type,
        "Flags": DML_TENSOR_FLAGS.NONE,
        "DimensionCount": None if sizes is None else len(sizes),
        "Sizes": sizes,
        "Strides": None,
        "TotalTensorSizeInBytes": 64,
        "GuaranteedBaseOffsetAlignment": 0,
    }
    values.update(fields)
    return DML_TENSOR_DESC(DML_TENSOR_TYPE.BUFFER, DML_BUFFER_TENSOR_DESC(**values))


def test_the_base_desc_of_these_tests_is_valid() -> None:
    report = dmlpy.validate(pool())
    assert report.ok and not report.findings, str(report)


TENSOR_CASES = [
    pytest.param(
        pool(input_tensor=DML_TENSOR_DESC(DML_TENSOR_TYPE.INVALID, buffer_tensor(DT.FLOAT32, [1, 1, 4, 4]).Desc)),
        FL.LEVEL_6_4,
        "TENSOR.TYPE",
        f"{POOL}.InputTensor.Type",
        id="a tensor of type INVALID is rejected",
    ),
    pytest.param(
        pool(input_tensor=DML_TENSOR_DESC(DML_TENSOR_TYPE.BUFFER, None)),
        FL.LEVEL_6_4,
        "TENSOR.DESC_NULL",
        f"{POOL}.InputTensor.Desc",
        id="a BUFFER tensor with a NULL Desc is rejected",
    ),
    pytest.param(
        pool(input_tensor=None),
        FL.LEVEL_6_4,
        "TENSOR.REQUIRED",
        f"{POOL}.InputTensor",
        id="a NULL required input is rejected",
    ),
    pytest.param(
        pool(output_tensor=None),
        FL.LEVEL_6_4,
        "TENSOR.REQUIRED",
        f"{POOL}.OutputTensor",
        id="a NULL required output is rejected",
    ),
    pytest.param(
        pool(input_tensor=raw(DT.UNKNOWN)),
        FL.LEVEL_6_4,
        "TENSOR.DATA_TYPE_UNKNOWN",
        f"{POOL}.InputTensor.DataType",
        id="DataType UNKNOWN is rejected",
    ),
    pytest.param(
        pool(input_tensor=raw(99)),
        FL.LEVEL_6_4,
        "TENSOR.DATA_TYPE_UNKNOWN",
        f"{POOL}.InputTensor.DataType",
        id="a DataType value DirectML does not define is rejected",
    ),
    pytest.param(
        pool(buffer_tensor(DT.INT32, [1, 1, 4, 4]), buffer_tensor(DT.INT32, [1, 1, 2, 2])),
        FL.LEVEL_6_4,
        "TENSOR.DATA_TYPE_SUPPORT",
        f"{POOL}.InputTensor.DataType",
        id="INT32 is not in average pooling's support table",
    ),
    pytest.param(
        pool(buffer_tensor(DT.FLOAT64, [1, 1, 4, 4]), buffer_tensor(DT.FLOAT64, [1, 1, 2, 2])),
        FL.LEVEL_6_4,
        "TENSOR.DATA_TYPE_SUPPORT",
        f"{POOL}.OutputTensor.DataType",
        id="FLOAT64 is not in average pooling's support table",
    ),
    pytest.param(
        pool(
            buffer_tensor(DT.FLOAT32, [1, 4, 4]),
            buffer_tensor(DT.FLOAT32, [1, 2, 2]),
            DimensionCount=1,
            Strides=[2],
            WindowSize=[2],
            StartPadding=[0],
            EndPadding=[0],
        ),
        FL.LEVEL_6_4,
        "TENSOR.DIMENSION_COUNT_SUPPORT",
        f"{POOL}.InputTensor.DimensionCount",
        id="3-D tensors are below average pooling's 4 to 5",
    ),
    pytest.param(
        pool(buffer_tensor(DT.FLOAT32, [1, 1, 1, 1, 4, 4]), buffer_tensor(DT.FLOAT32, [1, 1, 1, 1, 2, 2])),
        FL.LEVEL_6_4,
        "TENSOR.DIMENSION_COUNT_SUPPORT",
        f"{POOL}.OutputTensor.DimensionCount",
        id="6-D tensors are above average pooling's 4 to 5",
    ),
    pytest.param(
        pool(buffer_tensor(DT.FLOAT32, [1, 1, 1, 1, 4, 4]), buffer_tensor(DT.FLOAT32, [1, 1, 1, 1, 2, 2])),
        FL.LEVEL_2_1,
        "TENSOR.DIMENSION_COUNT_MAX",
        f"{POOL}.InputTensor.DimensionCount",
        id="6 dimensions exceed the maximum of 5 before FL 3.0",
    ),
    pytest.param(
        pool(buffer_tensor(DT.FLOAT32, [1] * 7 + [4, 4]), buffer_tensor(DT.FLOAT32, [1, 1, 2, 2])),
        FL.LEVEL_6_4,
        "TENSOR.DIMENSION_COUNT_MAX",
        f"{POOL}.InputTensor.DimensionCount",
        id="9 dimensions exceed the maximum of 8 from FL 3.0",
    ),
    pytest.param(
        pool(input_tensor=raw(sizes=(1, 1, 4), DimensionCount=4)),
        FL.LEVEL_6_4,
        "TENSOR.SIZES_LENGTH",
        f"{POOL}.InputTensor.Sizes",
        id="3 sizes for DimensionCount 4 are rejected",
    ),
    pytest.param(
        pool(input_tensor=raw(sizes=None, DimensionCount=4)),
        FL.LEVEL_6_4,
        "TENSOR.SIZES_LENGTH",
        f"{POOL}.InputTensor.Sizes",
        id="NULL Sizes with DimensionCount 4 are rejected",
    ),
    pytest.param(
        pool(input_tensor=raw(Strides=(16, 4, 1), DimensionCount=4)),
        FL.LEVEL_6_4,
        "TENSOR.STRIDES_LENGTH",
        f"{POOL}.InputTensor.Strides",
        id="3 strides for 4 sizes are rejected",
    ),
    pytest.param(
        pool(input_tensor=raw(sizes=(1, 1, 4, 0))),
        FL.LEVEL_6_4,
        "TENSOR.SIZE_ZERO",
        f"{POOL}.InputTensor.Sizes[3]",
        id="a size of 0 is rejected at its index",
    ),
    pytest.param(
        pool(input_tensor=raw(sizes=(1, 1, 65536, 65536), TotalTensorSizeInBytes=2**34)),
        FL.LEVEL_6_4,
        "TENSOR.ELEMENT_COUNT",
        f"{POOL}.InputTensor.Sizes",
        id="65536 * 65536 = 2^32 elements exceed 2^32 - 1",
    ),
    pytest.param(
        pool(
            input_tensor=raw(sizes=(1, 1, 1, UINT_MAX), Strides=(1, 1, 1, UINT_MAX), TotalTensorSizeInBytes=2**64 - 4)
        ),
        FL.LEVEL_6_4,
        "TENSOR.SIZE_OVERFLOW",
        f"{POOL}.InputTensor",
        id="a size whose bit count overflows UINT64 is rejected",
    ),
    pytest.param(
        pool(input_tensor=raw(TotalTensorSizeInBytes=60)),
        FL.LEVEL_6_4,
        "TENSOR.TOTAL_SIZE_TOO_SMALL",
        f"{POOL}.InputTensor.TotalTensorSizeInBytes",
        id="60 bytes for 16 FLOAT32 (64 bytes) are too few",
    ),
    pytest.param(
        pool(input_tensor=raw(Strides=(0, 0, 8, 1), TotalTensorSizeInBytes=108)),
        FL.LEVEL_6_4,
        "TENSOR.TOTAL_SIZE_TOO_SMALL",
        f"{POOL}.InputTensor.TotalTensorSizeInBytes",
        id="strides 0,0,8,1 reach index 27: 28 * 4 = 112 bytes, so 108 are too few",
    ),
    pytest.param(
        pool(input_tensor=raw(TotalTensorSizeInBytes=66)),
        FL.LEVEL_6_4,
        "TENSOR.TOTAL_SIZE_ALIGNMENT",
        f"{POOL}.InputTensor.TotalTensorSizeInBytes",
        id="a total size of 66 is not a multiple of 4 (warning)",
    ),
    pytest.param(
        pool(input_tensor=raw(GuaranteedBaseOffsetAlignment=24)),
        FL.LEVEL_6_4,
        "TENSOR.BASE_OFFSET_ALIGNMENT",
        f"{POOL}.InputTensor.GuaranteedBaseOffsetAlignment",
        id="an alignment of 24 is not a power of two",
    ),
    pytest.param(
        pool(input_tensor=raw(GuaranteedBaseOffsetAlignment=2)),
        FL.LEVEL_6_4,
        "TENSOR.BASE_OFFSET_ALIGNMENT",
        f"{POOL}.InputTensor.GuaranteedBaseOffsetAlignment",
        id="an alignment of 2 is below FLOAT32's 4-byte elements",
    ),
    pytest.param(
        pool(input_tensor=raw(Flags=0x2)),
        FL.LEVEL_6_4,
        "TENSOR.FLAGS",
        f"{POOL}.InputTensor.Flags",
        id="flag bit 0x2 is not a DML_TENSOR_FLAGS value",
    ),
    pytest.param(
        pool(output_tensor=raw(sizes=(1, 1, 2, 2), TotalTensorSizeInBytes=16, Flags=DML_TENSOR_FLAGS.OWNED_BY_DML)),
        FL.LEVEL_6_4,
        "TENSOR.OWNED_BY_DML_OUTPUT",
        f"{POOL}.OutputTensor.Flags",
        id="OWNED_BY_DML on an output is rejected",
    ),
]


@pytest.mark.parametrize(("desc", "level", "rule_id", "path"), TENSOR_CASES)
def test_tensor_rule_is_reported_at_its_field(desc: Any, level: FL, rule_id: str, path: str) -> None:
    report = dmlpy.validate(desc, feature_level=level)
    assert_rule(report, rule_id, path)


def test_a_total_size_that_is_not_a_multiple_of_4_is_only_a_warning() -> None:
    report = dmlpy.validate(pool(input_tensor=raw(TotalTensorSizeInBytes=66)))
    assert report.ok
    assert rule_ids(report.warnings) == ["TENSOR.TOTAL_SIZE_ALIGNMENT"]


def test_six_dimensions_pass_the_global_maximum_from_fl_3_0() -> None:
    # From FL 3.0 the global maximum is 8; only the operator's own 4-to-5 range rejects 6-D.
    report = dmlpy.validate(
        pool(buffer_tensor(DT.FLOAT32, [1, 1, 1, 1, 4, 4]), buffer_tensor(DT.FLOAT32, [1, 1, 1, 1, 2, 2])),
        feature_level=FL.LEVEL_3_0,
    )
    assert "TENSOR.DIMENSION_COUNT_MAX" not in rule_ids(report)
    assert "TENSOR.DIMENSION_COUNT_SUPPORT" in rule_ids(report)


def test_owned_by_dml_on_an_input_is_accepted() -> None:
    report = dmlpy.validate(
        pool(input_tensor=buffer_tensor(DT.FLOAT32, [1, 1, 4, 4], flags=DML_TENSOR_FLAGS.OWNED_BY_DML))
    )
    assert report.ok and not report.findings, str(report)


def test_a_total_size_larger_than_the_minimum_is_accepted() -> None:
    report = dmlpy.validate(pool(input_tensor=raw(TotalTensorSizeInBytes=1024)))
    assert report.ok and not report.findings, str(report)


def test_a_power_of_two_alignment_at_least_the_element_size_is_accepted() -> None:
    report = dmlpy.validate(pool(input_tensor=raw(GuaranteedBaseOffsetAlignment=4)))
    assert report.ok and not report.findings, str(report)


def test_the_total_size_message_shows_the_minimum_and_how_it_was_computed() -> None:
    finding = assert_rule(
        dmlpy.validate(pool(input_tensor=raw(TotalTensorSizeInBytes=60))), "TENSOR.TOTAL_SIZE_TOO_SMALL"
    )
    assert finding.actual == 60
    assert finding.expected == 64
    assert "is 60, expected at least 64" in finding.message
    assert "DMLCalcBufferTensorSize(FLOAT32, {1, 1, 4, 4}, NULL)" in finding.message


def test_a_tensor_with_a_zero_size_reports_every_zero() -> None:
    report = dmlpy.validate(pool(input_tensor=raw(sizes=(1, 0, 4, 0))))
    assert_rule(report, "TENSOR.SIZE_ZERO", f"{POOL}.InputTensor.Sizes[1]")
    assert_rule(report, "TENSOR.SIZE_ZERO", f"{POOL}.InputTensor.Sizes[3]")


def test_a_buffer_tensor_desc_in_place_of_a_tensor_desc_is_wrapped() -> None:
    # dmlpy convenience: a bare DML_BUFFER_TENSOR_DESC stands for DML_TENSOR_DESC(BUFFER, it)
    desc = pool(buffer_tensor(DT.FLOAT32, [1, 1, 4, 4]).Desc, buffer_tensor(DT.FLOAT32, [1, 1, 2, 2]).Desc)
    report = dmlpy.validate(desc)
    assert report.ok and not report.findings, str(report)


def test_a_tensor_dimension_count_left_as_none_is_derived_from_sizes() -> None:
    device = dmlpy.create_device(backend="numpy")
    op = device.create_operator(pool(input_tensor=raw(DimensionCount=None)))
    assert op.desc.InputTensor.Desc.DimensionCount == 4


def test_a_tensor_dimension_count_that_disagrees_with_sizes_is_checked() -> None:
    report = dmlpy.validate(pool(input_tensor=raw(sizes=(1, 1, 4, 4), DimensionCount=5)))
    assert_rule(report, "TENSOR.SIZES_LENGTH", f"{POOL}.InputTensor.Sizes")


# ---------------------------------------------------------------------------------------
# FIELD.* rules: values C's type system would refuse


FIELD_CASES = [
    pytest.param(
        pool(Strides=[2, 1.5]), "FIELD.TYPE", f"{POOL}.Strides[1]", id="a float in a UINT array is the wrong type"
    ),
    pytest.param(
        pool(Strides=2), "FIELD.TYPE", f"{POOL}.Strides", id="a bare int where a UINT array goes is the wrong type"
    ),
    pytest.param(
        pool(WindowSize="22"),
        "FIELD.TYPE",
        f"{POOL}.WindowSize",
        id="a string where a UINT array goes is the wrong type",
    ),
    pytest.param(
        pool(DimensionCount="2"), "FIELD.TYPE", f"{POOL}.DimensionCount", id="a string DimensionCount is the wrong type"
    ),
    pytest.param(
        pool(IncludePadding="yes"), "FIELD.TYPE", f"{POOL}.IncludePadding", id="a string BOOL is the wrong type"
    ),
    pytest.param(
        pool(StartPadding=[True, 0]),
        "FIELD.TYPE",
        f"{POOL}.StartPadding[0]",
        id="a Python bool in a UINT array is the wrong type",
    ),
    pytest.param(
        pool(input_tensor=42),
        "FIELD.TYPE",
        f"{POOL}.InputTensor",
        id="an int where a tensor desc goes is the wrong type",
    ),
    pytest.param(
        pool(StartPadding=[-1, 0]), "FIELD.RANGE", f"{POOL}.StartPadding[0]", id="a negative UINT is out of range"
    ),
    pytest.param(pool(Strides=[2, 2**32]), "FIELD.RANGE", f"{POOL}.Strides[1]", id="2^32 does not fit a UINT"),
    pytest.param(
        pool(DimensionCount=-2), "FIELD.RANGE", f"{POOL}.DimensionCount", id="a negative DimensionCount is out of range"
    ),
    pytest.param(
        pool(IncludePadding=2**31), "FIELD.RANGE", f"{POOL}.IncludePadding", id="2^31 does not fit a 32-bit BOOL"
    ),
    pytest.param(
        pool(DimensionCount=None, Strides=None, WindowSize=None, StartPadding=None, EndPadding=None),
        "FIELD.DIMENSION_COUNT_UNDERIVABLE",
        f"{POOL}.DimensionCount",
        id="DimensionCount None with every array NULL cannot be derived",
    ),
]


@pytest.mark.parametrize(("desc", "rule_id", "path"), FIELD_CASES)
def test_field_rule_is_reported_at_its_field(desc: Any, rule_id: str, path: str) -> None:
    assert_rule(dmlpy.validate(desc), rule_id, path)


@pytest.mark.parametrize(("desc", "rule_id", "path"), FIELD_CASES[:3])
def test_create_operator_rejects_field_type_errors_with_e_invalidarg(desc: Any, rule_id: str, path: str) -> None:
    device = dmlpy.create_device(backend="numpy")
    with pytest.raises(dmlpy.DmlError) as caught:
        device.create_operator(desc)
    assert caught.value.hresult == 0x80070057
    assert_rule(caught.value, rule_id, path)


@pytest.mark.parametrize(
    ("tensor_fields", "rule_id"),
    [
        pytest.param({"Sizes": (1, 1, 4.0, 4)}, "FIELD.TYPE", id="a float size is the wrong type"),
        pytest.param({"DataType": "FLOAT99"}, "FIELD.TYPE", id="an unknown data type name is the wrong type"),
        pytest.param({"TotalTensorSizeInBytes": -4}, "FIELD.RANGE", id="a negative UINT64 total size is out of range"),
        pytest.param({"TotalTensorSizeInBytes": 2**64}, "FIELD.RANGE", id="2^64 does not fit a UINT64 total size"),
        pytest.param(
            {"DimensionCount": None, "Sizes": None},
            "FIELD.DIMENSION_COUNT_UNDERIVABLE",
            id="a tensor without Sizes or Strides has no derivable DimensionCount",
        ),
    ],
)
def test_field_rules_hold_inside_tensor_descs(tensor_fields: dict[str, Any], rule_id: str) -> None:
    report = dmlpy.validate(pool(input_tensor=raw(**tensor_fields)))
    assert_rule(report, rule_id)
    finding = assert_rule(report, rule_id)
    assert finding.path.startswith(f"{POOL}.InputTensor")


def test_field_paths_inside_a_tensor_use_the_same_form_as_tensor_rule_paths() -> None:
    # The README: the C field path reads `<desc>.InputTensor.Sizes[2]` (the type-tagged
    # Desc pointer is elided), which is the form TENSOR.* rules use. A FIELD.* finding about
    # the very same element must use the same path.
    tensor_rule = assert_rule(dmlpy.validate(pool(input_tensor=raw(sizes=(1, 1, 0, 4)))), "TENSOR.SIZE_ZERO")
    field_rule = assert_rule(dmlpy.validate(pool(input_tensor=raw(sizes=(1, 1, 4.0, 4)))), "FIELD.TYPE")
    assert tensor_rule.path == f"{POOL}.InputTensor.Sizes[2]"
    assert field_rule.path == tensor_rule.path


def test_an_unknown_enum_value_stays_an_int_for_the_rules_to_report() -> None:
    # FIELD rules only refuse what C's types refuse; 99 fits the enum's int, so TENSOR.* decides.
    report = dmlpy.validate(pool(input_tensor=raw(99)))
    assert "FIELD.TYPE" not in rule_ids(report)
    assert_rule(report, "TENSOR.DATA_TYPE_UNKNOWN", f"{POOL}.InputTensor.DataType")


def test_numpy_integers_are_accepted_in_uint_arrays() -> None:
    report = dmlpy.validate(pool(Strides=np.array([2, 2], dtype=np.uint32), WindowSize=[np.int64(2), np.int64(2)]))
    assert report.ok and not report.findings, str(report)
