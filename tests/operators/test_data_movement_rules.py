"""Data-movement validation: JOIN.*, SPLIT.*, SLICE.*, PADDING.*, TILE.*, GATHER*.* and CAST's constraints.

Expected sizes come from each operator's page, worked out in the case ids: JOIN's output size
along Axis is the sum of its inputs', SPLIT's outputs sum to its input; SLICE reads
Offsets + Strides * i for i < Sizes and its output has Sizes; SLICE1's output is between 1 and
1 + (size - 1) / |stride| along each axis of a window inside the input; PADDING adds start and
end; TILE multiplies by Repeats; GATHER_ELEMENTS's output has the indices' sizes.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import assert_rule, rule_ids

import dmlpy
from dmlpy import DML_FEATURE_LEVEL as FL
from dmlpy import DML_TENSOR_DATA_TYPE as DT
from dmlpy import buffer_tensor
from dmlpy.operators.data_movement import (
    DML_GATHER_ELEMENTS_OPERATOR_DESC,
    DML_GATHER_ND1_OPERATOR_DESC,
    DML_GATHER_ND_OPERATOR_DESC,
    DML_GATHER_OPERATOR_DESC,
    DML_JOIN_OPERATOR_DESC,
    DML_PADDING1_OPERATOR_DESC,
    DML_PADDING_OPERATOR_DESC,
    DML_SLICE1_OPERATOR_DESC,
    DML_SLICE_OPERATOR_DESC,
    DML_SPLIT_OPERATOR_DESC,
    DML_TILE_OPERATOR_DESC,
)
from dmlpy.operators.descs import DML_CAST_OPERATOR_DESC
from dmlpy.structs import DML_SCALAR_UNION

F32 = DT.FLOAT32
JOIN = "DML_JOIN_OPERATOR_DESC"
SPLIT = "DML_SPLIT_OPERATOR_DESC"
SLICE = "DML_SLICE_OPERATOR_DESC"
SLICE1 = "DML_SLICE1_OPERATOR_DESC"
PAD = "DML_PADDING_OPERATOR_DESC"
PAD1 = "DML_PADDING1_OPERATOR_DESC"
TILE = "DML_TILE_OPERATOR_DESC"
GATHER_ELEMENTS = "DML_GATHER_ELEMENTS_OPERATOR_DESC"
GATHER = "DML_GATHER_OPERATOR_DESC"
GATHER_ND = "DML_GATHER_ND_OPERATOR_DESC"
GATHER_ND1 = "DML_GATHER_ND1_OPERATOR_DESC"
CAST = "DML_CAST_OPERATOR_DESC"


def t(*sizes: int, dtype: Any = F32) -> Any:
    return buffer_tensor(dtype, sizes)


def join(inputs: Any = ((1, 1, 2, 3), (1, 1, 4, 3)), out: Any = (1, 1, 6, 3), axis: int = 2) -> DML_JOIN_OPERATOR_DESC:
    """Default: rows 2 + 4 = 6."""
    return DML_JOIN_OPERATOR_DESC(None, [t(*s) for s in inputs], t(*out), axis)


def split(x: Any = (1, 1, 6, 3), outputs: Any = ((1, 1, 2, 3), (1, 1, 4, 3)), axis: int = 2) -> DML_SPLIT_OPERATOR_DESC:
    """Default: JOIN's inverse, rows 6 = 2 + 4."""
    return DML_SPLIT_OPERATOR_DESC(t(*x), None, [t(*s) for s in outputs], axis)


def slice0(x: Any = (1, 1, 5, 6), y: Any = (1, 1, 2, 3), offsets: Any = (0, 0, 1, 0), sizes: Any = (1, 1, 2, 3), strides: Any = (1, 1, 2, 2)) -> DML_SLICE_OPERATOR_DESC:
    """Default: rows 1 and 3, columns 0, 2, 4 of a 5x6 input (last reads 1 + 2 * 1 = 3 < 5, 0 + 2 * 2 = 4 < 6)."""
    return DML_SLICE_OPERATOR_DESC(t(*x), t(*y), None, list(offsets), list(sizes), list(strides))


def slice1(x: Any = (1, 1, 5, 6), y: Any = (1, 1, 2, 3), offsets: Any = (0, 0, 1, 0), sizes: Any = (1, 1, 4, 6), strides: Any = (1, 1, 2, -2)) -> DML_SLICE1_OPERATOR_DESC:
    """Default: window rows [1, 5) stride 2 -> at most 1 + 3 / 2 = 2; columns [0, 6) stride -2 -> 1 + 5 / 2 = 3."""
    return DML_SLICE1_OPERATOR_DESC(t(*x), t(*y), None, list(offsets), list(sizes), list(strides))


def pad(x: Any = (1, 1, 2, 3), y: Any = (1, 1, 5, 4), start: Any = (0, 0, 1, 0), end: Any = (0, 0, 2, 1), mode: Any = 0) -> DML_PADDING_OPERATOR_DESC:
    """Default: 2 + 1 + 2 = 5 rows, 3 + 0 + 1 = 4 columns."""
    return DML_PADDING_OPERATOR_DESC(t(*x), t(*y), mode, 0.0, None, list(start), list(end))


def pad1(x: Any = (2, 3), y: Any = (5, 4), start: Any = (1, 0), end: Any = (2, 1), mode: Any = 0, value_type: Any = F32, dtype: Any = F32) -> DML_PADDING1_OPERATOR_DESC:
    return DML_PADDING1_OPERATOR_DESC(t(*x, dtype=dtype), t(*y, dtype=dtype), mode, value_type, DML_SCALAR_UNION(Int32=0), None, list(start), list(end))


def tile(x: Any = (1, 1, 2, 3), y: Any = (1, 2, 2, 6), repeats: Any = (1, 2, 1, 2)) -> DML_TILE_OPERATOR_DESC:
    """Default: channels 1 * 2 = 2, columns 3 * 2 = 6."""
    return DML_TILE_OPERATOR_DESC(t(*x), t(*y), None, list(repeats))


def gather(x: Any = (1, 3, 3), indices: Any = (1, 1, 2), y: Any = (3, 1, 2), axis: int = 2, index_dimensions: int = 2, index_type: Any = DT.UINT32) -> DML_GATHER_OPERATOR_DESC:
    """Default: the page's example 4, {1,3,3} on Axis 2 with indices {1,1,2} -> {3,1,2}."""
    return DML_GATHER_OPERATOR_DESC(t(*x), t(*indices, dtype=index_type), t(*y), axis, index_dimensions)


def gather_nd(x: Any = (1, 2, 2, 2), indices: Any = (1, 1, 2, 2), y: Any = (1, 1, 2, 2), input_count: int = 3, indices_count: int = 2) -> DML_GATHER_ND_OPERATOR_DESC:
    """Default: the page's example 2, tuples of 2 into {2,2,2} leave {2}; indices {2} before the tuple -> {1,1,2,2}."""
    return DML_GATHER_ND_OPERATOR_DESC(t(*x), t(*indices, dtype=DT.UINT32), t(*y), input_count, indices_count)


def gather_nd1(x: Any = (1, 3, 2, 2), indices: Any = (1, 3, 2, 2), y: Any = (1, 1, 3, 2), input_count: int = 3, indices_count: int = 3, batch: int = 1) -> DML_GATHER_ND1_OPERATOR_DESC:
    """Default: the GATHER_ND1 page's example 2, three batches of two 2-coordinate tuples into {2,2}."""
    return DML_GATHER_ND1_OPERATOR_DESC(t(*x), t(*indices, dtype=DT.UINT32), t(*y), input_count, indices_count, batch)


def gather_elements(x: Any = (1, 1, 3, 3), indices: Any = (1, 1, 2, 3), y: Any = (1, 1, 2, 3), axis: int = 2) -> DML_GATHER_ELEMENTS_OPERATOR_DESC:
    return DML_GATHER_ELEMENTS_OPERATOR_DESC(t(*x), t(*indices, dtype=DT.UINT32), t(*y), axis)


@pytest.mark.parametrize(
    ("value", "level"),
    [
        pytest.param(join(), FL.LEVEL_1_0, id="JOIN rows 2 + 4 = 6"),
        pytest.param(join(((2, 1), (2, 3), (2, 4)), (2, 8), 1), FL.LEVEL_4_1, id="2-D JOIN of three, columns 1 + 3 + 4 = 8, from FL 4.1"),
        pytest.param(split(), FL.LEVEL_1_0, id="SPLIT rows 6 = 2 + 4"),
        pytest.param(slice0(), FL.LEVEL_1_0, id="SLICE rows 1, 3 and columns 0, 2, 4 of 5x6"),
        pytest.param(slice1(), FL.LEVEL_2_1, id="SLICE1 with a negative stride: at most 2 rows and 3 columns"),
        pytest.param(slice1(y=(1, 1, 1, 1)), FL.LEVEL_2_1, id="SLICE1 need not copy every reachable element: 1x1 is fine"),
        pytest.param(pad(), FL.LEVEL_1_0, id="PADDING 2 + 1 + 2 = 5 rows, 3 + 0 + 1 = 4 columns"),
        pytest.param(pad1(), FL.LEVEL_5_0, id="2-D PADDING1 from FL 5.0"),
        pytest.param(pad(mode=3), FL.LEVEL_3_0, id="SYMMETRIC padding from FL 3.0"),
        pytest.param(tile(), FL.LEVEL_1_0, id="TILE channels 1 * 2, columns 3 * 2"),
        pytest.param(gather_elements(), FL.LEVEL_2_1, id="GATHER_ELEMENTS output has the indices' {1,1,2,3}"),
        pytest.param(gather(), FL.LEVEL_3_0, id="GATHER example 4: {1,3} + {1,2} + {} = {1,3,1,2}, leading 1 cropped to {3,1,2}"),
        pytest.param(gather((4,), (5,), (5,), 0, 1), FL.LEVEL_3_0, id="GATHER example 1: {} + {5} + {} = {5}"),
        pytest.param(gather((3, 2), (1, 4), (4, 2), 0, 1), FL.LEVEL_3_0, id="GATHER example 2: {} + {4} + {2} = {4,2}"),
        pytest.param(gather((1, 3, 2), (1, 2, 2), (2, 2, 2), 1, 2), FL.LEVEL_3_0, id="GATHER example 5: {1} + {2,2} + {2} = {1,2,2,2} -> {2,2,2}"),
        pytest.param(gather((1, 1, 3, 2), (1, 1, 1, 4), (1, 1, 4, 2), 2, 1), FL.LEVEL_1_0, id="4-D GATHER padded with leading 1s: {1,1} + {4} + {2}"),
        pytest.param(gather(index_type=DT.INT64), FL.LEVEL_3_0, id="INT64 indices from FL 3.0"),
        pytest.param(gather_nd(), FL.LEVEL_2_1, id="GATHER_ND example 2: {2} + {2} right-aligned to {1,1,2,2}"),
        pytest.param(gather_nd((2, 2), (2, 1), (2, 2), 2, 2), FL.LEVEL_3_0, id="GATHER_ND example 1: tuples of 1, {2} + {2} = {2,2}"),
        pytest.param(gather_nd((3, 4, 5, 6, 7), (1, 1, 1, 2, 3), (1, 1, 2, 6, 7), 5, 3), FL.LEVEL_3_0, id="GATHER_ND field example: {1,2} + {6,7} -> {1,1,2,6,7}"),
        pytest.param(DML_CAST_OPERATOR_DESC(t(1, 1, 2, 3), t(1, 1, 2, 3, dtype=DT.FLOAT16)), FL.LEVEL_1_0, id="CAST FLOAT32 to FLOAT16, same sizes"),
        pytest.param(gather_nd1(), FL.LEVEL_3_0, id="GATHER_ND1 example 2: batch {3} + indices {2} + {} right-aligned to {1,1,3,2}"),
        pytest.param(gather_nd1((2, 2), (2, 1), (2, 2), 2, 2, 0), FL.LEVEL_3_0, id="GATHER_ND1 example 1: BatchDimensionCount 0 is GATHER_ND"),
        pytest.param(gather_nd1((1, 2, 3, 4), (1, 2, 5, 1), (1, 2, 5, 4), 3, 3, 1), FL.LEVEL_3_0, id="GATHER_ND1 batch {2}, 5 tuples of 1 into {3,4}: {2} + {5} + {4}"),
        pytest.param(pad1(value_type=DT.INT32, dtype=DT.INT32), FL.LEVEL_5_0, id="INT32 PADDING1 with an INT32 value"),
    ],
)
def test_a_valid_data_movement_desc_has_no_finding(value: Any, level: FL) -> None:
    expected = ["OPERATOR.NOT_EMULATED"] if isinstance(value, DML_TILE_OPERATOR_DESC) else []  # TILE has no kernel yet
    assert rule_ids(dmlpy.validate(value, feature_level=level)) == expected


@pytest.mark.parametrize(
    ("value", "level", "rule_id", "path"),
    [
        pytest.param(join(out=(1, 1, 5, 3)), FL.LEVEL_1_0, "JOIN.OUTPUT_SIZE", f"{JOIN}.OutputTensor.Sizes[2]", id="JOIN output rows 5, expected 2 + 4 = 6"),
        pytest.param(join(((1, 1, 2, 3), (1, 1, 4, 2)), (1, 1, 6, 3)), FL.LEVEL_1_0, "JOIN.SAME_SIZES", f"{JOIN}.InputTensors[1].Sizes[3]", id="JOIN input 1 has 2 columns off the axis, the output 3"),
        pytest.param(join(axis=4), FL.LEVEL_1_0, "JOIN.AXIS_RANGE", f"{JOIN}.Axis", id="JOIN Axis 4 of 4-D tensors"),
        pytest.param(join(((1, 1, 2, 3), (1, 1, 4, 3)), (1, 1, 6, 3, 1)), FL.LEVEL_3_0, "TENSOR.SAME_DIMENSION_COUNT", f"{JOIN}.OutputTensor.DimensionCount", id="JOIN output 5-D, inputs 4-D"),
        pytest.param(join(((2, 1), (2, 3)), (2, 4), 1), FL.LEVEL_4_0, "TENSOR.DIMENSION_COUNT_SUPPORT", f"{JOIN}.InputTensors[0].DimensionCount", id="2-D JOIN before FL 4.1"),
        pytest.param(join(inputs=()), FL.LEVEL_1_0, "JOIN.OUTPUT_SIZE", f"{JOIN}.InputCount", id="JOIN of no inputs: their sum 0 is no size"),
        pytest.param(split(outputs=()), FL.LEVEL_1_0, "SPLIT.OUTPUT_SIZE", f"{SPLIT}.OutputCount", id="SPLIT into no outputs: their sum 0 is no size"),
        pytest.param(split(outputs=((1, 1, 2, 3), (1, 1, 3, 3))), FL.LEVEL_1_0, "SPLIT.OUTPUT_SIZE", f"{SPLIT}.OutputTensors[1].Sizes[2]", id="SPLIT outputs 2 + 3 = 5 rows of an input of 6"),
        pytest.param(split(outputs=((1, 1, 2, 3), (1, 2, 4, 3))), FL.LEVEL_1_0, "SPLIT.SAME_SIZES", f"{SPLIT}.OutputTensors[1].Sizes[1]", id="SPLIT output 1 has 2 channels, the input 1"),
        pytest.param(split(axis=7), FL.LEVEL_1_0, "SPLIT.AXIS_RANGE", f"{SPLIT}.Axis", id="SPLIT Axis 7 of 4-D tensors"),
        pytest.param(slice0(y=(1, 1, 2, 2)), FL.LEVEL_1_0, "SLICE.OUTPUT_SIZE", f"{SLICE}.OutputTensor.Sizes[3]", id="SLICE output 2 columns, Sizes[3] is 3"),
        pytest.param(slice0(offsets=(0, 0, 4, 0)), FL.LEVEL_1_0, "SLICE.WINDOW_BOUNDS", f"{SLICE}.Sizes[2]", id="SLICE last row read 4 + 2 * (2 - 1) = 6, past the input's 5 rows"),
        pytest.param(slice0(offsets=(0, 0, 1, 2)), FL.LEVEL_1_0, "SLICE.WINDOW_BOUNDS", f"{SLICE}.Sizes[3]", id="SLICE last column read 2 + 2 * (3 - 1) = 6, past the input's 6 columns"),
        pytest.param(slice0(offsets=(0, 0, 0, 1, 0), sizes=(1, 1, 1, 2, 3), strides=(1, 1, 1, 2, 2)), FL.LEVEL_3_0, "SLICE.DIMENSION_COUNT", f"{SLICE}.DimensionCount", id="SLICE arrays of 5 for 4-D tensors"),
        pytest.param(slice1(sizes=(1, 1, 5, 6)), FL.LEVEL_2_1, "SLICE.WINDOW_BOUNDS", f"{SLICE1}.InputWindowSizes[2]", id="SLICE1 window rows [1, 1 + 5) past the input's 5"),
        pytest.param(slice1(sizes=(1, 0, 4, 6)), FL.LEVEL_2_1, "SLICE.WINDOW_BOUNDS", f"{SLICE1}.InputWindowSizes[1]", id="SLICE1 empty window"),
        pytest.param(slice1(strides=(1, 1, 0, 2)), FL.LEVEL_2_1, "SLICE.STRIDE_ZERO", f"{SLICE1}.InputWindowStrides[2]", id="SLICE1 stride 0"),
        pytest.param(slice1(y=(1, 1, 3, 3)), FL.LEVEL_2_1, "SLICE.OUTPUT_SIZE", f"{SLICE1}.OutputTensor.Sizes[2]", id="SLICE1 3 rows, at most 1 + (4 - 1) / 2 = 2"),
        pytest.param(slice1(y=(1, 1, 2, 4)), FL.LEVEL_2_1, "SLICE.OUTPUT_SIZE", f"{SLICE1}.OutputTensor.Sizes[3]", id="SLICE1 4 columns, at most 1 + (6 - 1) / |-2| = 3"),
        pytest.param(slice1(), FL.LEVEL_2_0, "OPERATOR.FEATURE_LEVEL", SLICE1, id="SLICE1 arrived at FL 2.1"),
        pytest.param(pad(y=(1, 1, 4, 4)), FL.LEVEL_1_0, "PADDING.OUTPUT_SIZE", f"{PAD}.OutputTensor.Sizes[2]", id="PADDING 4 rows, expected 2 + 1 + 2 = 5"),
        pytest.param(pad1(y=(5, 3)), FL.LEVEL_5_0, "PADDING.OUTPUT_SIZE", f"{PAD1}.OutputTensor.Sizes[1]", id="PADDING1 3 columns, expected 3 + 0 + 1 = 4"),
        pytest.param(pad(start=(0, 0, 1), end=(0, 0, 2)), FL.LEVEL_1_0, "PADDING.DIMENSION_COUNT", f"{PAD}.DimensionCount", id="PADDING arrays of 3 for 4-D tensors"),
        pytest.param(pad(mode=3), FL.LEVEL_2_1, "ENUM.FEATURE_LEVEL", f"{PAD}.PaddingMode", id="SYMMETRIC padding before FL 3.0"),
        pytest.param(pad(mode=5), FL.LEVEL_6_4, "ENUM.VALUE", f"{PAD}.PaddingMode", id="PaddingMode 5 is no DML_PADDING_MODE (WRAP = 4 is the last)"),
        pytest.param(pad(mode=4), FL.LEVEL_6_1, "ENUM.FEATURE_LEVEL", f"{PAD}.PaddingMode", id="WRAP padding (from FL 6.4) at FL 6.1"),
        pytest.param(pad1(), FL.LEVEL_4_1, "OPERATOR.FEATURE_LEVEL", PAD1, id="PADDING1 arrived at FL 5.0"),
        pytest.param(tile(y=(1, 2, 2, 5)), FL.LEVEL_1_0, "TILE.OUTPUT_SIZE", f"{TILE}.OutputTensor.Sizes[3]", id="TILE 5 columns, expected 3 * 2 = 6"),
        pytest.param(tile(repeats=(2, 1, 2)), FL.LEVEL_1_0, "TILE.REPEATS_COUNT", f"{TILE}.RepeatsCount", id="TILE 3 repeats for 4-D tensors"),
        pytest.param(tile(y=(1, 2, 2, 6, 1)), FL.LEVEL_6_4, "TILE.SAME_DIMENSION_COUNT", f"{TILE}.OutputTensor.DimensionCount", id="TILE output 5-D for a 4-D input"),
        pytest.param(gather(y=(3, 2, 1)), FL.LEVEL_3_0, "GATHER.OUTPUT_SIZE", f"{GATHER}.OutputTensor.Sizes", id="GATHER output {3,2,1}, expected {3,1,2}"),
        pytest.param(gather((3, 2), (1, 4), (2, 4), 0, 1), FL.LEVEL_3_0, "GATHER.OUTPUT_SIZE", f"{GATHER}.OutputTensor.Sizes", id="GATHER example 2 with the output transposed: {2,4}, expected {4,2}"),
        pytest.param(gather((2, 3), (2, 4), (2, 4), 1, 2), FL.LEVEL_3_0, "GATHER.OUTPUT_SIZE", f"{GATHER}.OutputTensor.Sizes", id="GATHER {2} + {2,4} + {} = {2,2,4}: three sizes above 1 do not fit a 2-D output"),
        pytest.param(gather(axis=3), FL.LEVEL_3_0, "GATHER.AXIS_RANGE", f"{GATHER}.Axis", id="GATHER Axis 3 of 3-D tensors"),
        pytest.param(gather(index_dimensions=4), FL.LEVEL_3_0, "GATHER.INDEX_DIMENSIONS", f"{GATHER}.IndexDimensions", id="GATHER IndexDimensions 4 of 3-D indices"),
        pytest.param(gather(index_type=DT.INT32), FL.LEVEL_2_1, "TENSOR.DATA_TYPE_SUPPORT", f"{GATHER}.IndicesTensor.DataType", id="GATHER INT32 indices below FL 3.0: UINT32 only"),
        pytest.param(gather(y=(3, 1, 2, 1)), FL.LEVEL_3_0, "TENSOR.SAME_DIMENSION_COUNT", f"{GATHER}.OutputTensor.DimensionCount", id="GATHER output 4-D for 3-D input and indices"),
        pytest.param(gather_nd(y=(1, 2, 2, 2)), FL.LEVEL_2_1, "GATHER_ND.OUTPUT_SIZE", f"{GATHER_ND}.OutputTensor.Sizes", id="GATHER_ND output {1,2,2,2}, expected {1,1,2,2}"),
        pytest.param(gather_nd((3, 4, 5, 6, 7), (1, 1, 1, 2, 3), (1, 2, 5, 6, 7), 5, 3), FL.LEVEL_3_0, "GATHER_ND.OUTPUT_SIZE", f"{GATHER_ND}.OutputTensor.Sizes", id="GATHER_ND output keeping the tupled {5}: {1,2,5,6,7}, expected {1,1,2,6,7}"),
        pytest.param(gather_nd(indices=(1, 1, 2, 4)), FL.LEVEL_2_1, "GATHER_ND.TUPLE_SIZE", f"{GATHER_ND}.IndicesTensor.Sizes[3]", id="GATHER_ND tuples of 4 into InputDimensionCount 3"),
        pytest.param(gather_nd(input_count=5), FL.LEVEL_2_1, "GATHER_ND.INPUT_DIMENSION_COUNT", f"{GATHER_ND}.InputDimensionCount", id="GATHER_ND InputDimensionCount 5 of a 4-D input"),
        pytest.param(gather_nd(indices_count=0), FL.LEVEL_2_1, "GATHER_ND.INDICES_DIMENSION_COUNT", f"{GATHER_ND}.IndicesDimensionCount", id="GATHER_ND IndicesDimensionCount 0: the range starts at 1"),
        pytest.param(gather_nd(), FL.LEVEL_2_0, "OPERATOR.FEATURE_LEVEL", GATHER_ND, id="GATHER_ND arrived at FL 2.1"),
        pytest.param(gather_elements(y=(1, 1, 3, 3)), FL.LEVEL_2_1, "GATHER_ELEMENTS.OUTPUT_SIZE", f"{GATHER_ELEMENTS}.OutputTensor.Sizes", id="GATHER_ELEMENTS output {1,1,3,3}, indices {1,1,2,3}"),
        pytest.param(gather_elements(axis=4), FL.LEVEL_2_1, "GATHER_ELEMENTS.AXIS_RANGE", f"{GATHER_ELEMENTS}.Axis", id="GATHER_ELEMENTS Axis 4 of 4-D tensors"),
        pytest.param(gather_nd1(batch=4), FL.LEVEL_3_0, "GATHER_ND.BATCH_DIMENSION_COUNT", f"{GATHER_ND1}.BatchDimensionCount", id="GATHER_ND1 BatchDimensionCount 4 of 4-D tensors"),
        pytest.param(gather_nd1(batch=3), FL.LEVEL_3_0, "GATHER_ND.BATCH_DIMENSION_COUNT", f"{GATHER_ND1}.BatchDimensionCount",
                     id="GATHER_ND1 BatchDimensionCount 3 = IndicesDimensionCount leaves no tuple dimension"),
        pytest.param(gather_nd1(indices=(1, 2, 2, 2)), FL.LEVEL_3_0, "GATHER_ND.BATCH_SIZES", f"{GATHER_ND1}.IndicesTensor.Sizes[1]", id="GATHER_ND1 indices batch 2, input batch 3"),
        pytest.param(gather_nd1((1, 3, 2, 2), (1, 3, 2, 3), (1, 1, 3, 2)), FL.LEVEL_3_0, "GATHER_ND.TUPLE_SIZE", f"{GATHER_ND1}.IndicesTensor.Sizes[3]",
                     id="GATHER_ND1 tuples of 3 into InputDimensionCount 3 - BatchDimensionCount 1 = 2"),
        pytest.param(gather_nd1(y=(1, 3, 2, 2)), FL.LEVEL_3_0, "GATHER_ND.OUTPUT_SIZE", f"{GATHER_ND1}.OutputTensor.Sizes", id="GATHER_ND1 output {1,3,2,2}, expected {1,1,3,2}"),
        pytest.param(gather_nd1(), FL.LEVEL_2_1, "OPERATOR.FEATURE_LEVEL", GATHER_ND1, id="GATHER_ND1 arrived at FL 3.0"),
        pytest.param(gather_elements(indices=(1, 2, 2, 3)), FL.LEVEL_2_1, "GATHER_ELEMENTS.INDICES_SIZES", f"{GATHER_ELEMENTS}.IndicesTensor.Sizes[1]",
                     id="GATHER_ELEMENTS indices 2 channels off the axis, the input 1"),
        pytest.param(pad1(value_type=DT.FLOAT16), FL.LEVEL_5_0, "PADDING.VALUE_DATA_TYPE", f"{PAD1}.PaddingValueDataType", id="PADDING1 FLOAT16 value for a FLOAT32 output"),
        pytest.param(DML_CAST_OPERATOR_DESC(t(1, 1, 2, 3), t(1, 1, 3, 2)), FL.LEVEL_1_0, "TENSOR.SAME_SIZES", f"{CAST}.OutputTensor.Sizes", id="CAST {1,1,2,3} to {1,1,3,2}: same sizes only"),
        pytest.param(DML_CAST_OPERATOR_DESC(t(1, 1, 2, 3, dtype=DT.INT64), t(1, 1, 2, 3)), FL.LEVEL_2_1, "TENSOR.DATA_TYPE_SUPPORT", f"{CAST}.InputTensor.DataType", id="CAST from INT64 before FL 3.0"),
        pytest.param(DML_CAST_OPERATOR_DESC(t(1, 1, 2, 3, dtype=DT.FLOAT64), t(1, 1, 2, 3)), FL.LEVEL_4_0, "TENSOR.DATA_TYPE_SUPPORT", f"{CAST}.InputTensor.DataType", id="CAST from FLOAT64 before FL 4.1"),
    ],
)
def test_data_movement_rule_is_reported_at_its_field(value: Any, level: FL, rule_id: str, path: str) -> None:
    assert_rule(dmlpy.validate(value, feature_level=level), rule_id, path)


def test_join_output_size_message_shows_the_sum() -> None:
    finding = assert_rule(dmlpy.validate(join(out=(1, 1, 5, 3))), "JOIN.OUTPUT_SIZE")
    assert "2 + 4 = 6" in finding.message
