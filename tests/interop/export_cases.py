"""Valid descs for every operator dmlpy emulates, with inputs: the cases the exporters are tested on.

Each case builds a fresh desc and its input arrays. ``CASES`` covers every DML_OPERATOR_TYPE
in ``dmlpy.operators.REGISTRY`` at least once, and the features that change what an exporter
writes: BOOL fields both ways, enums with more than one value (Mode, Direction, Order), a
missing optional tensor (no BiasTensor), an inline FusedActivation with and without
parameters, strided (NHWC, broadcast) tensors, OWNED_BY_DML inputs, dilations, FLOAT16, UINT32
and 1-D/3-D convolutions. ``test_every_registered_operator_has_an_export_case`` fails when an
operator is added without a case here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import dmlpy
from dmlpy import (
    DML_ACTIVATION_ELU_OPERATOR_DESC,
    DML_ACTIVATION_GELU_OPERATOR_DESC,
    DML_ACTIVATION_HARD_SIGMOID_OPERATOR_DESC,
    DML_ACTIVATION_IDENTITY_OPERATOR_DESC,
    DML_ACTIVATION_LEAKY_RELU_OPERATOR_DESC,
    DML_ACTIVATION_LINEAR_OPERATOR_DESC,
    DML_ACTIVATION_RELU_OPERATOR_DESC,
    DML_ACTIVATION_SIGMOID_OPERATOR_DESC,
    DML_ACTIVATION_SOFTPLUS_OPERATOR_DESC,
    DML_ACTIVATION_TANH_OPERATOR_DESC,
    DML_ACTIVATION_CELU_OPERATOR_DESC,
    DML_ACTIVATION_HARD_SWISH_OPERATOR_DESC,
    DML_ACTIVATION_HARDMAX1_OPERATOR_DESC,
    DML_ACTIVATION_HARDMAX_OPERATOR_DESC,
    DML_ACTIVATION_LOG_SOFTMAX1_OPERATOR_DESC,
    DML_ACTIVATION_LOG_SOFTMAX_OPERATOR_DESC,
    DML_ACTIVATION_PARAMETERIZED_RELU_OPERATOR_DESC,
    DML_ACTIVATION_PARAMETRIC_SOFTPLUS_OPERATOR_DESC,
    DML_ACTIVATION_SCALED_ELU_OPERATOR_DESC,
    DML_ACTIVATION_SCALED_TANH_OPERATOR_DESC,
    DML_ACTIVATION_SHRINK_OPERATOR_DESC,
    DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC,
    DML_ACTIVATION_SOFTMAX_OPERATOR_DESC,
    DML_ACTIVATION_SOFTSIGN_OPERATOR_DESC,
    DML_ACTIVATION_SWISH_OPERATOR_DESC,
    DML_ACTIVATION_THRESHOLDED_RELU_OPERATOR_DESC,
    DML_AVERAGE_POOLING1_OPERATOR_DESC,
    DML_AVERAGE_POOLING_OPERATOR_DESC,
    DML_CONVOLUTION_MODE,
    DML_CONVOLUTION_OPERATOR_DESC,
    DML_DEPTH_SPACE_ORDER,
    DML_DEPTH_TO_SPACE1_OPERATOR_DESC,
    DML_DEPTH_TO_SPACE_OPERATOR_DESC,
    DML_GEMM_OPERATOR_DESC,
    DML_MATRIX_TRANSFORM,
    DML_OPERATOR_TYPE,
    DML_SPACE_TO_DEPTH1_OPERATOR_DESC,
    DML_SPACE_TO_DEPTH_OPERATOR_DESC,
    DML_TENSOR_FLAGS,
    FusedActivation,
    buffer_tensor,
    nhwc_strides,
)
from dmlpy.enums import DML_AXIS_DIRECTION, DML_CONVOLUTION_DIRECTION, DML_FEATURE_LEVEL, DML_INTERPOLATION_MODE, DML_IS_INFINITY_MODE, DML_PADDING_MODE, DML_REDUCE_FUNCTION, DML_ROUNDING_MODE, DML_TENSOR_DATA_TYPE
from dmlpy.operators import data_movement as dm
from dmlpy.operators import reduction as red
from dmlpy.operators.descs import OPERATORS as DESCS
from dmlpy.operators.descs import DML_MAX_POOLING1_OPERATOR_DESC, DML_MAX_POOLING2_OPERATOR_DESC, DML_MAX_POOLING_OPERATOR_DESC
from dmlpy.operators.reduction import DML_ARGMAX_OPERATOR_DESC, DML_ARGMIN_OPERATOR_DESC, DML_REDUCE_OPERATOR_DESC
from dmlpy.operators.element_wise import KERNELS
from dmlpy.operators.normalization import (
    DML_BATCH_NORMALIZATION_OPERATOR_DESC,
    DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC,
    DML_MEAN_VARIANCE_NORMALIZATION_OPERATOR_DESC,
)
from dmlpy.operators.resampling import DML_RESAMPLE1_OPERATOR_DESC, DML_RESAMPLE2_OPERATOR_DESC, DML_RESAMPLE3_OPERATOR_DESC, DML_RESAMPLE_OPERATOR_DESC
from dmlpy.structs import DML_SCALAR_UNION

OP = DML_OPERATOR_TYPE
F32 = "float32"
CC = DML_CONVOLUTION_MODE.CROSS_CORRELATION
CONV = DML_CONVOLUTION_MODE.CONVOLUTION
FORWARD = DML_CONVOLUTION_DIRECTION.FORWARD
BACKWARD = DML_CONVOLUTION_DIRECTION.BACKWARD
OWNED = DML_TENSOR_FLAGS.OWNED_BY_DML


@dataclass(frozen=True)
class Case:
    id: str
    operator_type: OP
    build: Callable[[], Any]  # -> a fresh desc
    inputs: Callable[[np.random.Generator], dict[str, np.ndarray]]


def _rand(shape: tuple[int, ...], dtype: Any = np.float32) -> Callable[[np.random.Generator], np.ndarray]:
    def make(rng: np.random.Generator) -> np.ndarray:
        if np.dtype(dtype).kind == "u":
            return rng.integers(0, 1000, size=shape).astype(dtype)
        return rng.uniform(-2.0, 2.0, size=shape).astype(dtype)

    return make


def _inputs(**makers: Callable[[np.random.Generator], np.ndarray]) -> Callable[[np.random.Generator], dict[str, np.ndarray]]:
    return lambda rng: {name: make(rng) for name, make in makers.items()}


def _pool(include_padding: bool, strides: tuple[int, ...] | None = None) -> Any:
    return DML_AVERAGE_POOLING_OPERATOR_DESC(
        buffer_tensor(F32, (1, 2, 5, 5), strides), buffer_tensor(F32, (1, 2, 3, 3)), 2, (2, 2), (3, 3), (1, 1), (1, 1), include_padding
    )


def _pool1() -> Any:
    return DML_AVERAGE_POOLING1_OPERATOR_DESC(buffer_tensor(F32, (1, 1, 7, 7)), buffer_tensor(F32, (1, 1, 3, 3)), 2, (1, 1), (3, 3), (0, 0), (0, 0), (2, 2), True)


def _pool3d() -> Any:
    return DML_AVERAGE_POOLING_OPERATOR_DESC(buffer_tensor("float16", (1, 1, 4, 4, 4)), buffer_tensor("float16", (1, 1, 2, 2, 2)), 3, (2, 2, 2), (2, 2, 2), (0, 0, 0), (0, 0, 0), False)


def _max_pool(cls: type, index_type: str | None = None, dtype: str = F32) -> Callable[[], Any]:
    def build() -> Any:
        tensors = [buffer_tensor(dtype, (1, 2, 5, 5)), buffer_tensor(dtype, (1, 2, 3, 3))]
        dilated = cls is DML_MAX_POOLING2_OPERATOR_DESC
        if cls is not DML_MAX_POOLING_OPERATOR_DESC:
            tensors.append(buffer_tensor(index_type, (1, 2, 2, 2) if dilated else (1, 2, 3, 3)) if index_type else None)
        if dilated:  # window 2 with dilation 2 and stride 2 on 5 + 1 + 0: (6 - 3) / 2 + 1 = 2
            tensors[1] = buffer_tensor(dtype, (1, 2, 2, 2))
            return cls(*tensors, 2, (2, 2), (2, 2), (1, 1), (0, 0), (2, 2))
        return cls(*tensors, 2, (2, 2), (3, 3), (1, 1), (1, 1))

    return build


def _reduce(function: Any, axes: list[int], out_type: str = F32) -> Callable[[], Any]:
    def build() -> Any:
        out = tuple(1 if i in axes else s for i, s in enumerate((2, 3, 4, 5)))
        return DML_REDUCE_OPERATOR_DESC(function, buffer_tensor(F32, (2, 3, 4, 5)), buffer_tensor(out_type, out), len(axes), axes)

    return build


def _arg(cls: type, direction: Any, out_type: str = "int64") -> Callable[[], Any]:
    return lambda: cls(buffer_tensor(F32, (2, 3, 4)), buffer_tensor(out_type, (2, 1, 1)), 2, [1, 2], direction)


def _conv(bias: bool, fused: Any, owned_filter: bool = False) -> Any:
    return DML_CONVOLUTION_OPERATOR_DESC(
        buffer_tensor(F32, (1, 4, 6, 6)),
        buffer_tensor(F32, (6, 2, 3, 3), flags=OWNED if owned_filter else DML_TENSOR_FLAGS.NONE),
        buffer_tensor(F32, (1, 6, 1, 1)) if bias else None,
        buffer_tensor(F32, (1, 6, 3, 3)),
        CC, FORWARD, 2, (2, 2), (1, 1), (1, 1), (0, 0), (0, 0), 2, fused,
    )  # fmt: skip


def _conv_transpose() -> Any:
    # ONNX ConvTranspose: W {Cin, Cout/G, k, k}; natural output (3-1)*2 + 3 - 1 - 1 = 5, one more accepted
    return DML_CONVOLUTION_OPERATOR_DESC(
        buffer_tensor(F32, (1, 4, 3, 3)), buffer_tensor(F32, (4, 3, 3, 3)), buffer_tensor(F32, (1, 3, 1, 1)), buffer_tensor(F32, (1, 3, 6, 6)),
        CONV, BACKWARD, 2, (2, 2), (1, 1), (1, 1), (1, 1), (0, 0), 1, FusedActivation.linear(0.5, -0.25),
    )  # fmt: skip


def _conv1d() -> Any:
    return DML_CONVOLUTION_OPERATOR_DESC(
        buffer_tensor(F32, (1, 2, 8)), buffer_tensor(F32, (3, 2, 3)), None, buffer_tensor(F32, (1, 3, 3)),
        CC, FORWARD, 1, (2,), (2,), (1,), (1,), (0,), 1, FusedActivation.sigmoid(),
    )  # fmt: skip


def _gemm_bias_row() -> Any:
    return DML_GEMM_OPERATOR_DESC(
        buffer_tensor(F32, (1, 2, 3, 5)), buffer_tensor(F32, (1, 2, 4, 5)), buffer_tensor(F32, (1, 2, 3, 4), (0, 0, 0, 1)),
        buffer_tensor(F32, (1, 2, 3, 4)), DML_MATRIX_TRANSFORM.NONE, DML_MATRIX_TRANSFORM.TRANSPOSE, 0.5, 2.0, FusedActivation.relu(),
    )  # fmt: skip


def _gemm_half() -> Any:
    return DML_GEMM_OPERATOR_DESC(
        buffer_tensor("float16", (2, 1, 5, 3)), buffer_tensor("float16", (2, 1, 5, 4)), None, buffer_tensor("float16", (2, 1, 3, 4)),
        DML_MATRIX_TRANSFORM.TRANSPOSE, DML_MATRIX_TRANSFORM.NONE, 1.0, 1.0, None,
    )  # fmt: skip


def _space_depth(cls: type, order: DML_DEPTH_SPACE_ORDER | None, to_depth: bool, dtype: str = F32) -> Callable[[], Any]:
    def build() -> Any:
        space, depth = (1, 2, 4, 6), (1, 8, 2, 3)
        x, y = (space, depth) if to_depth else (depth, space)
        args = [buffer_tensor(dtype, x), buffer_tensor(dtype, y), 2] + ([order] if order is not None else [])
        return cls(*args)

    return build


def _nhwc_space_to_depth() -> Any:
    # TensorFlow's NHWC layout through strides: Sizes stay NCHW
    return DML_SPACE_TO_DEPTH_OPERATOR_DESC(
        buffer_tensor(F32, (1, 3, 4, 4), nhwc_strides((1, 3, 4, 4))), buffer_tensor(F32, (1, 12, 2, 2), nhwc_strides((1, 12, 2, 2))), 2
    )


def _activation(cls: type, *params: float, dtype: str = F32, strides: tuple[int, ...] | None = None) -> Callable[[], Any]:
    def build() -> Any:
        return cls(buffer_tensor(dtype, (2, 3, 4), strides), buffer_tensor(dtype, (2, 3, 4)), *params)

    return build


def _rows(cls: type) -> Callable[[], Any]:
    """SOFTMAX, LOG_SOFTMAX, HARDMAX: an input of effective rank 2."""
    return lambda: cls(buffer_tensor(F32, (1, 3, 4)), buffer_tensor(F32, (1, 3, 4)))


def _prelu() -> Any:
    sizes = (2, 3, 4)
    return DML_ACTIVATION_PARAMETERIZED_RELU_OPERATOR_DESC(buffer_tensor(F32, sizes), buffer_tensor(F32, sizes), buffer_tensor(F32, sizes))


X4 = _rand((1, 2, 5, 5))
X234 = _inputs(InputTensor=_rand((2, 3, 4)))
CASES: list[Case] = [
    Case("average pooling with padding, IncludePadding FALSE", OP.AVERAGE_POOLING, lambda: _pool(False), _inputs(InputTensor=X4)),
    Case("average pooling with padding, IncludePadding TRUE", OP.AVERAGE_POOLING, lambda: _pool(True), _inputs(InputTensor=X4)),
    Case("average pooling on an NHWC-strided input", OP.AVERAGE_POOLING, lambda: _pool(False, nhwc_strides((1, 2, 5, 5))), _inputs(InputTensor=X4)),
    Case("3-D average pooling in FLOAT16", OP.AVERAGE_POOLING, _pool3d, _inputs(InputTensor=_rand((1, 1, 4, 4, 4), np.float16))),
    Case("average pooling1 with Dilations", OP.AVERAGE_POOLING1, _pool1, _inputs(InputTensor=_rand((1, 1, 7, 7)))),
    Case("max pooling with padding", OP.MAX_POOLING, _max_pool(DML_MAX_POOLING_OPERATOR_DESC), _inputs(InputTensor=X4)),
    Case("max pooling1 with UINT32 indices", OP.MAX_POOLING1, _max_pool(DML_MAX_POOLING1_OPERATOR_DESC, "uint32"), _inputs(InputTensor=X4)),
    Case("max pooling2 with Dilations and UINT64 indices", OP.MAX_POOLING2, _max_pool(DML_MAX_POOLING2_OPERATOR_DESC, "uint64"), _inputs(InputTensor=X4)),
    Case("max pooling2 in FLOAT16 without indices", OP.MAX_POOLING2, _max_pool(DML_MAX_POOLING2_OPERATOR_DESC, dtype="float16"), _inputs(InputTensor=_rand((1, 2, 5, 5), np.float16))),
    Case("reduce LOG_SUM_EXP over axes 1 and 3", OP.REDUCE, _reduce(DML_REDUCE_FUNCTION.LOG_SUM_EXP, [1, 3]), _inputs(InputTensor=_rand((2, 3, 4, 5)))),
    Case("reduce ARGMAX into UINT32", OP.REDUCE, _reduce(DML_REDUCE_FUNCTION.ARGMAX, [2], "uint32"), _inputs(InputTensor=_rand((2, 3, 4, 5)))),
    Case("argmin DECREASING into INT64", OP.ARGMIN, _arg(DML_ARGMIN_OPERATOR_DESC, DML_AXIS_DIRECTION.DECREASING), _inputs(InputTensor=_rand((2, 3, 4)))),
    Case("argmax INCREASING into UINT32", OP.ARGMAX, _arg(DML_ARGMAX_OPERATOR_DESC, DML_AXIS_DIRECTION.INCREASING, "uint32"), _inputs(InputTensor=_rand((2, 3, 4)))),
    Case("space to depth", OP.SPACE_TO_DEPTH, _space_depth(DML_SPACE_TO_DEPTH_OPERATOR_DESC, None, True), _inputs(InputTensor=_rand((1, 2, 4, 6)))),
    Case("space to depth on NHWC strides", OP.SPACE_TO_DEPTH, _nhwc_space_to_depth, _inputs(InputTensor=_rand((1, 3, 4, 4)))),
    Case("depth to space", OP.DEPTH_TO_SPACE, _space_depth(DML_DEPTH_TO_SPACE_OPERATOR_DESC, None, False), _inputs(InputTensor=_rand((1, 8, 2, 3)))),
    Case(
        "space to depth1, Order COLUMN_ROW_DEPTH",
        OP.SPACE_TO_DEPTH1,
        _space_depth(DML_SPACE_TO_DEPTH1_OPERATOR_DESC, DML_DEPTH_SPACE_ORDER.COLUMN_ROW_DEPTH, True),
        _inputs(InputTensor=_rand((1, 2, 4, 6))),
    ),
    Case(
        "space to depth1, Order DEPTH_COLUMN_ROW, UINT32",
        OP.SPACE_TO_DEPTH1,
        _space_depth(DML_SPACE_TO_DEPTH1_OPERATOR_DESC, DML_DEPTH_SPACE_ORDER.DEPTH_COLUMN_ROW, True, "uint32"),
        _inputs(InputTensor=_rand((1, 2, 4, 6), np.uint32)),
    ),
    Case(
        "depth to space1, Order COLUMN_ROW_DEPTH",
        OP.DEPTH_TO_SPACE1,
        _space_depth(DML_DEPTH_TO_SPACE1_OPERATOR_DESC, DML_DEPTH_SPACE_ORDER.COLUMN_ROW_DEPTH, False),
        _inputs(InputTensor=_rand((1, 8, 2, 3))),
    ),
    Case("identity", OP.ACTIVATION_IDENTITY, _activation(DML_ACTIVATION_IDENTITY_OPERATOR_DESC), _inputs(InputTensor=_rand((2, 3, 4)))),
    Case("linear with Alpha and Beta", OP.ACTIVATION_LINEAR, _activation(DML_ACTIVATION_LINEAR_OPERATOR_DESC, 2.0, -0.5), _inputs(InputTensor=_rand((2, 3, 4)))),
    Case("relu", OP.ACTIVATION_RELU, _activation(DML_ACTIVATION_RELU_OPERATOR_DESC), _inputs(InputTensor=_rand((2, 3, 4)))),
    Case("relu on a broadcast input (stride 0)", OP.ACTIVATION_RELU, _activation(DML_ACTIVATION_RELU_OPERATOR_DESC, strides=(0, 4, 1)), _inputs(InputTensor=_rand((1, 3, 4)))),
    Case("leaky relu with Alpha 0.1", OP.ACTIVATION_LEAKY_RELU, _activation(DML_ACTIVATION_LEAKY_RELU_OPERATOR_DESC, 0.1), _inputs(InputTensor=_rand((2, 3, 4)))),
    Case("sigmoid", OP.ACTIVATION_SIGMOID, _activation(DML_ACTIVATION_SIGMOID_OPERATOR_DESC), _inputs(InputTensor=_rand((2, 3, 4)))),
    Case("tanh in FLOAT16", OP.ACTIVATION_TANH, _activation(DML_ACTIVATION_TANH_OPERATOR_DESC, dtype="float16"), _inputs(InputTensor=_rand((2, 3, 4), np.float16))),
    Case("elu with Alpha 1.5", OP.ACTIVATION_ELU, _activation(DML_ACTIVATION_ELU_OPERATOR_DESC, 1.5), _inputs(InputTensor=_rand((2, 3, 4)))),
    Case("hard sigmoid with Alpha and Beta", OP.ACTIVATION_HARD_SIGMOID, _activation(DML_ACTIVATION_HARD_SIGMOID_OPERATOR_DESC, 0.2, 0.5), _inputs(InputTensor=_rand((2, 3, 4)))),
    Case("softplus with Steepness 2", OP.ACTIVATION_SOFTPLUS, _activation(DML_ACTIVATION_SOFTPLUS_OPERATOR_DESC, 2.0), _inputs(InputTensor=_rand((2, 3, 4)))),
    Case("gelu", OP.ACTIVATION_GELU, _activation(DML_ACTIVATION_GELU_OPERATOR_DESC), _inputs(InputTensor=_rand((2, 3, 4)))),
    Case("celu with Alpha 0.5", OP.ACTIVATION_CELU, _activation(DML_ACTIVATION_CELU_OPERATOR_DESC, 0.5), X234),
    Case("parametric softplus", OP.ACTIVATION_PARAMETRIC_SOFTPLUS, _activation(DML_ACTIVATION_PARAMETRIC_SOFTPLUS_OPERATOR_DESC, 1.5, 0.5), X234),
    Case("scaled elu", OP.ACTIVATION_SCALED_ELU, _activation(DML_ACTIVATION_SCALED_ELU_OPERATOR_DESC, 1.6732632, 1.050701), X234),
    Case("scaled tanh", OP.ACTIVATION_SCALED_TANH, _activation(DML_ACTIVATION_SCALED_TANH_OPERATOR_DESC, 1.0, 0.5), X234),
    Case("softsign", OP.ACTIVATION_SOFTSIGN, _activation(DML_ACTIVATION_SOFTSIGN_OPERATOR_DESC), X234),
    Case("thresholded relu", OP.ACTIVATION_THRESHOLDED_RELU, _activation(DML_ACTIVATION_THRESHOLDED_RELU_OPERATOR_DESC, 0.5), X234),
    Case("shrink", OP.ACTIVATION_SHRINK, _activation(DML_ACTIVATION_SHRINK_OPERATOR_DESC, 0.25, 0.5), X234),
    Case("swish", OP.ACTIVATION_SWISH, _activation(DML_ACTIVATION_SWISH_OPERATOR_DESC, 1.5), X234),
    Case("hard swish", OP.ACTIVATION_HARD_SWISH, _activation(DML_ACTIVATION_HARD_SWISH_OPERATOR_DESC, 0.2, 0.5), X234),
    Case("parameterized relu", OP.ACTIVATION_PARAMETERIZED_RELU, _prelu, _inputs(InputTensor=_rand((2, 3, 4)), SlopeTensor=_rand((2, 3, 4)))),
    Case("softmax over the last dimension", OP.ACTIVATION_SOFTMAX, _rows(DML_ACTIVATION_SOFTMAX_OPERATOR_DESC), _inputs(InputTensor=_rand((1, 3, 4)))),
    Case("log softmax over the last dimension", OP.ACTIVATION_LOG_SOFTMAX, _rows(DML_ACTIVATION_LOG_SOFTMAX_OPERATOR_DESC), _inputs(InputTensor=_rand((1, 3, 4)))),
    Case("hardmax over the last dimension", OP.ACTIVATION_HARDMAX, _rows(DML_ACTIVATION_HARDMAX_OPERATOR_DESC), _inputs(InputTensor=_rand((1, 3, 4)))),
    Case("softmax1 over axes 0 and 2", OP.ACTIVATION_SOFTMAX1, _activation(DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC, None, [0, 2]), X234),
    Case("log softmax1 over axis 1", OP.ACTIVATION_LOG_SOFTMAX1, _activation(DML_ACTIVATION_LOG_SOFTMAX1_OPERATOR_DESC, None, [1]), X234),
    Case("hardmax1 over axis 1", OP.ACTIVATION_HARDMAX1, _activation(DML_ACTIVATION_HARDMAX1_OPERATOR_DESC, None, [1]), X234),
    Case(
        "grouped convolution with bias and a fused leaky relu",
        OP.CONVOLUTION,
        lambda: _conv(True, FusedActivation.leaky_relu(0.1)),
        _inputs(InputTensor=_rand((1, 4, 6, 6)), FilterTensor=_rand((6, 2, 3, 3)), BiasTensor=_rand((1, 6, 1, 1))),
    ),
    Case(
        "convolution without BiasTensor or FusedActivation",
        OP.CONVOLUTION,
        lambda: _conv(False, None),
        _inputs(InputTensor=_rand((1, 4, 6, 6)), FilterTensor=_rand((6, 2, 3, 3))),
    ),
    Case(
        "convolution with an OWNED_BY_DML filter and a fused relu",
        OP.CONVOLUTION,
        lambda: _conv(True, FusedActivation.relu(), owned_filter=True),
        _inputs(InputTensor=_rand((1, 4, 6, 6)), FilterTensor=_rand((6, 2, 3, 3)), BiasTensor=_rand((1, 6, 1, 1))),
    ),
    Case(
        "transposed (BACKWARD) convolution, Mode CONVOLUTION, fused linear",
        OP.CONVOLUTION,
        _conv_transpose,
        _inputs(InputTensor=_rand((1, 4, 3, 3)), FilterTensor=_rand((4, 3, 3, 3)), BiasTensor=_rand((1, 3, 1, 1))),
    ),
    Case(
        "GEMM with TransB, Alpha, Beta, a C row broadcast by strides and a fused relu",
        OP.GEMM,
        _gemm_bias_row,
        _inputs(ATensor=_rand((1, 2, 3, 5)), BTensor=_rand((1, 2, 4, 5)), CTensor=_rand((1, 1, 1, 4))),
    ),
    Case("GEMM in FLOAT16 with TransA and no CTensor", OP.GEMM, _gemm_half, _inputs(ATensor=_rand((2, 1, 5, 3), np.float16), BTensor=_rand((2, 1, 5, 4), np.float16))),
    Case("1-D dilated convolution with a fused sigmoid", OP.CONVOLUTION, _conv1d, _inputs(InputTensor=_rand((1, 2, 8)), FilterTensor=_rand((3, 2, 3)))),
]


# ---------------------------------------------------------------------------------------
# One case per element-wise operator: FLOAT32 where the newest table lists it, else the first type
# it lists, on 4-D tensors; comparisons and IS_* write UINT8.

_EW_PARAMETERS: dict[OP, dict[str, Any]] = {
    OP.ELEMENT_WISE_CLIP: {"Min": -0.5, "Max": 0.75},
    OP.ELEMENT_WISE_THRESHOLD: {"Min": 0.25},
    OP.ELEMENT_WISE_CONSTANT_POW: {"Exponent": 2.0},
    OP.ELEMENT_WISE_ROUND: {"RoundingMode": DML_ROUNDING_MODE.TOWARD_ZERO},
    OP.ELEMENT_WISE_IS_INFINITY: {"InfinityMode": DML_IS_INFINITY_MODE.POSITIVE},
    OP.ELEMENT_WISE_CLIP1: {"MinMaxDataType": DML_TENSOR_DATA_TYPE.FLOAT32, "Min": DML_SCALAR_UNION(Float32=-1.0), "Max": DML_SCALAR_UNION(Float32=1.0)},
    OP.VALUE_SCALE_2D: {"Scale": 2.0, "ChannelCount": 1, "Bias": [0.5]},
}


def _ew_types(op_type: OP) -> dict[str, str]:
    support = dmlpy.operators.REGISTRY[op_type].support
    table = support.table_at(DML_FEATURE_LEVEL.LEVEL_6_4, None)[1]
    names = {name: [t.name for t in entry.data_types or ()] for name, entry in table.items()}
    return {name: ("FLOAT32" if "FLOAT32" in types else types[0]) for name, types in names.items()}


def _element_wise_case(op_type: OP) -> Case:
    shape = (1, 1, 2, 3)
    types = _ew_types(op_type)
    if op_type == OP.ELEMENT_WISE_QUANTIZE_LINEAR:
        types.update(ZeroPointTensor="UINT8", OutputTensor="UINT8")
    cls = dmlpy.operators.REGISTRY[op_type].desc_class

    def build() -> Any:
        tensors = {name: buffer_tensor(data_type, shape) for name, data_type in types.items()}
        return cls(**tensors, **_EW_PARAMETERS.get(op_type, {}))

    def inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
        arrays = {}
        for slot in dmlpy.operators.REGISTRY[op_type].support.slots:
            if slot.kind != "input":
                continue
            dtype = dmlpy.numpy_dtype(DML_TENSOR_DATA_TYPE[types[slot.name]])
            high = 3 if slot.name in ("BTensor", "ExponentTensor") and dtype.kind in "iu" else 100
            arrays[slot.name] = (rng.integers(1, high, size=shape) if dtype.kind in "iu" else rng.uniform(0.1, 0.9, size=shape)).astype(dtype)
        return arrays

    return Case(f"{op_type.name.lower()} on {', '.join(sorted(set(types.values())))}", op_type, build, inputs)


# ---------------------------------------------------------------------------------------
# Normalization and resampling


def _batch_normalization() -> Any:
    stats = (1, 3, 1, 1)
    return DML_BATCH_NORMALIZATION_OPERATOR_DESC(
        buffer_tensor(F32, (2, 3, 4, 5), nhwc_strides((2, 3, 4, 5))), *(buffer_tensor(F32, stats) for _ in range(4)), buffer_tensor(F32, (2, 3, 4, 5)),
        True, 1e-3, FusedActivation.relu(),
    )  # fmt: skip


def _mvn(cross_channel: bool) -> Any:
    return DML_MEAN_VARIANCE_NORMALIZATION_OPERATOR_DESC(buffer_tensor(F32, (2, 3, 4, 5)), None, None, buffer_tensor(F32, (2, 3, 4, 5)), cross_channel, True, 1e-5)


def _mvn1() -> Any:
    return DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC(
        buffer_tensor("float16", (2, 3, 8)), buffer_tensor("float16", (1, 1, 8)), buffer_tensor("float16", (1, 1, 8)), buffer_tensor("float16", (2, 3, 8)),
        1, (2,), True, 1e-5, FusedActivation.sigmoid(),
    )  # fmt: skip


def _resample(version: int, mode: DML_INTERPOLATION_MODE, dtype: str = F32) -> Callable[[], Any]:
    def build() -> Any:
        x, y = buffer_tensor(dtype, (1, 2, 3, 4)), buffer_tensor(dtype, (1, 2, 6, 3))
        scales, inputs, outputs = (1.0, 1.0, 2.0, 0.75), (0.5, 0.5, 0.5, 0.0), (-0.5, -0.5, -0.5, 0.0)
        if version == 0:
            return DML_RESAMPLE_OPERATOR_DESC(x, y, mode, 4, scales)
        if version == 1:
            return DML_RESAMPLE1_OPERATOR_DESC(x, y, mode, 4, scales, inputs, outputs)
        if version == 2:
            return DML_RESAMPLE2_OPERATOR_DESC(x, y, mode, DML_AXIS_DIRECTION.DECREASING, 4, scales, inputs, outputs)
        return DML_RESAMPLE3_OPERATOR_DESC(x, y, mode, DML_AXIS_DIRECTION.INCREASING, 4, scales, inputs, outputs, True)

    return build


X2345 = _rand((2, 3, 4, 5))
STATS = _rand((1, 3, 1, 1))
NORMALIZATION_RESAMPLING_CASES = [
    Case("batch normalization on NHWC strides with a fused relu", OP.BATCH_NORMALIZATION, _batch_normalization,
         _inputs(InputTensor=X2345, MeanTensor=STATS, VarianceTensor=lambda rng: rng.uniform(0.5, 2.0, (1, 3, 1, 1)).astype(np.float32), ScaleTensor=STATS, BiasTensor=STATS)),
    Case("mean variance normalization, CrossChannel TRUE, no Scale or Bias", OP.MEAN_VARIANCE_NORMALIZATION, lambda: _mvn(True), _inputs(InputTensor=X2345)),
    Case("mean variance normalization1 over the last axis in FLOAT16, fused sigmoid", OP.MEAN_VARIANCE_NORMALIZATION1, _mvn1,
         _inputs(InputTensor=_rand((2, 3, 8), np.float16), ScaleTensor=_rand((1, 1, 8), np.float16), BiasTensor=_rand((1, 1, 8), np.float16))),
    Case("resample linear", OP.RESAMPLE, _resample(0, DML_INTERPOLATION_MODE.LINEAR), _inputs(InputTensor=_rand((1, 2, 3, 4)))),
    Case("resample1 nearest with pixel offsets", OP.RESAMPLE1, _resample(1, DML_INTERPOLATION_MODE.NEAREST_NEIGHBOR), _inputs(InputTensor=_rand((1, 2, 3, 4)))),
    Case("resample2 nearest, RoundingDirection DECREASING", OP.RESAMPLE2, _resample(2, DML_INTERPOLATION_MODE.NEAREST_NEIGHBOR), _inputs(InputTensor=_rand((1, 2, 3, 4)))),
    Case("resample3 linear antialiased in FLOAT16", OP.RESAMPLE3, _resample(3, DML_INTERPOLATION_MODE.LINEAR, "float16"), _inputs(InputTensor=_rand((1, 2, 3, 4), np.float16))),
]  # fmt: skip
CASES[-1:-1] = NORMALIZATION_RESAMPLING_CASES


# ---------------------------------------------------------------------------------------
# LRN, Lp pooling and normalization


def _desc(op_type: OP, *args: Any, **fields: Any) -> Any:
    return dmlpy.operators.REGISTRY[op_type].desc_class(*args, **fields)


LRN_LP_CASES = [
    Case("local response normalization across channels, an even LocalSize", OP.LOCAL_RESPONSE_NORMALIZATION,
         lambda: _desc(OP.LOCAL_RESPONSE_NORMALIZATION, buffer_tensor(F32, (2, 3, 4, 5)), buffer_tensor(F32, (2, 3, 4, 5)), True, 2, 0.5, 0.75, 1.0), _inputs(InputTensor=X2345)),
    Case("local response normalization within channels in FLOAT16", OP.LOCAL_RESPONSE_NORMALIZATION,
         lambda: _desc(OP.LOCAL_RESPONSE_NORMALIZATION, buffer_tensor("float16", (1, 2, 4, 4)), buffer_tensor("float16", (1, 2, 4, 4)), False, 3, 1e-4, 0.75, 2.0),
         _inputs(InputTensor=_rand((1, 2, 4, 4), np.float16))),
    Case("lp normalization p=1 over axis 1", OP.LP_NORMALIZATION, lambda: _desc(OP.LP_NORMALIZATION, buffer_tensor(F32, (2, 3, 4)), buffer_tensor(F32, (2, 3, 4)), 1, 1e-5, 1),
         _inputs(InputTensor=_rand((2, 3, 4)))),
    Case("lp pooling p=3 with padding", OP.LP_POOLING,
         lambda: _desc(OP.LP_POOLING, buffer_tensor(F32, (1, 2, 5, 5)), buffer_tensor(F32, (1, 2, 3, 3)), 2, (2, 2), (3, 3), (1, 1), (1, 1), 3), _inputs(InputTensor=X4)),
    Case("lp pooling1 with Dilations", OP.LP_POOLING1,
         lambda: _desc(OP.LP_POOLING1, buffer_tensor(F32, (1, 1, 7, 7)), buffer_tensor(F32, (1, 1, 3, 3)), 2, (1, 1), (3, 3), (0, 0), (0, 0), (2, 2), 2), _inputs(InputTensor=_rand((1, 1, 7, 7)))),
]  # fmt: skip
CASES[-1:-1] = LRN_LP_CASES

ELEMENT_WISE_CASES = [_element_wise_case(t) for t in KERNELS]
CASES[-1:-1] = ELEMENT_WISE_CASES  # the last case stays the 1-D convolution test_cpp.py takes


# ---------------------------------------------------------------------------------------
# Data movement: tensor arrays (JOIN's inputs, SPLIT's outputs), a DML_SCALAR_UNION padding value, indices


def _ints(shape: tuple[int, ...], low: int, high: int, dtype: Any) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: rng.integers(low, high, size=shape).astype(dtype)


def _t(shape: tuple[int, ...], dtype: Any = F32, strides: Any = None) -> Any:
    return buffer_tensor(dtype, shape, strides)


DATA_MOVEMENT_CASES = [
    Case("join of two inputs, one NHWC-strided", OP.JOIN, lambda: dm.DML_JOIN_OPERATOR_DESC(None, [_t((1, 2, 2, 3)), _t((1, 1, 2, 3), strides=nhwc_strides((1, 1, 2, 3)))], _t((1, 3, 2, 3)), 1),
         lambda rng: {"InputTensors": [_rand((1, 2, 2, 3))(rng), _rand((1, 1, 2, 3))(rng)]}),
    Case("split into three outputs", OP.SPLIT, lambda: dm.DML_SPLIT_OPERATOR_DESC(_t((2, 6)), None, [_t((2, 1)), _t((2, 3)), _t((2, 2))], 1), _inputs(InputTensor=_rand((2, 6)))),
    Case("slice with strides", OP.SLICE, lambda: dm.DML_SLICE_OPERATOR_DESC(_t((1, 1, 5, 6)), _t((1, 1, 2, 3)), None, (0, 0, 1, 0), (1, 1, 2, 3), (1, 1, 2, 2)),
         _inputs(InputTensor=_rand((1, 1, 5, 6)))),
    Case("slice1 with a negative stride", OP.SLICE1, lambda: dm.DML_SLICE1_OPERATOR_DESC(_t((1, 1, 4, 4)), _t((1, 1, 2, 2)), None, (0, 0, 0, 1), (1, 1, 4, 3), (1, 1, -2, 2)),
         _inputs(InputTensor=_rand((1, 1, 4, 4)))),
    Case("padding REFLECTION", OP.PADDING, lambda: dm.DML_PADDING_OPERATOR_DESC(_t((1, 1, 3, 3)), _t((1, 1, 5, 6)), DML_PADDING_MODE.REFLECTION, 0.0, None, (0, 0, 1, 2), (0, 0, 1, 1)),
         _inputs(InputTensor=_rand((1, 1, 3, 3)))),
    Case("padding1 CONSTANT with an INT32 value", OP.PADDING1,
         lambda: dm.DML_PADDING1_OPERATOR_DESC(_t((2, 3), "int32"), _t((4, 4), "int32"), DML_PADDING_MODE.CONSTANT, DML_TENSOR_DATA_TYPE.INT32, DML_SCALAR_UNION(Int32=-7), None, (1, 0), (1, 1)),
         _inputs(InputTensor=_ints((2, 3), -50, 50, np.int32))),
    Case("cast FLOAT32 to INT8", OP.CAST, lambda: dm.DML_CAST_OPERATOR_DESC(_t((2, 3, 4)), _t((2, 3, 4), "int8")), lambda rng: {"InputTensor": (rng.uniform(-200, 200, (2, 3, 4))).astype(np.float32)}),
    Case("gather with INT64 indices", OP.GATHER, lambda: dm.DML_GATHER_OPERATOR_DESC(_t((1, 3, 3)), _t((1, 1, 2), "int64"), _t((3, 1, 2)), 2, 2),
         _inputs(InputTensor=_rand((1, 3, 3)), IndicesTensor=_ints((1, 1, 2), -3, 3, np.int64))),
    Case("gather elements", OP.GATHER_ELEMENTS, lambda: dm.DML_GATHER_ELEMENTS_OPERATOR_DESC(_t((3, 3)), _t((2, 3), "uint32"), _t((2, 3)), 0),
         _inputs(InputTensor=_rand((3, 3)), IndicesTensor=_ints((2, 3), 0, 3, np.uint32))),
    Case("gather nd", OP.GATHER_ND, lambda: dm.DML_GATHER_ND_OPERATOR_DESC(_t((1, 2, 2, 2)), _t((1, 1, 2, 2), "uint32"), _t((1, 1, 2, 2)), 3, 2),
         _inputs(InputTensor=_rand((1, 2, 2, 2)), IndicesTensor=_ints((1, 1, 2, 2), 0, 2, np.uint32))),
    Case("gather nd1 with a batch dimension", OP.GATHER_ND1, lambda: dm.DML_GATHER_ND1_OPERATOR_DESC(_t((1, 3, 2, 2)), _t((1, 3, 2, 2), "int32"), _t((1, 1, 3, 2)), 3, 3, 1),
         _inputs(InputTensor=_rand((1, 3, 2, 2)), IndicesTensor=_ints((1, 3, 2, 2), -2, 2, np.int32))),
]  # fmt: skip
CASES[-1:-1] = DATA_MOVEMENT_CASES

TOP_K_CUMULATIVE_SCATTER_CASES = [
    Case("top k", OP.TOP_K, lambda: red.DML_TOP_K_OPERATOR_DESC(_t((1, 1, 3, 4)), _t((1, 1, 3, 2)), _t((1, 1, 3, 2), "uint32"), 3, 2), _inputs(InputTensor=_rand((1, 1, 3, 4)))),
    Case("top k1 INCREASING into UINT64", OP.TOP_K1, lambda: red.DML_TOP_K1_OPERATOR_DESC(_t((2, 5)), _t((2, 3)), _t((2, 3), "uint64"), 1, 3, DML_AXIS_DIRECTION.INCREASING),
         _inputs(InputTensor=_rand((2, 5)))),
    Case("cumulative summation DECREASING exclusive", OP.CUMULATIVE_SUMMATION, lambda: red.DML_CUMULATIVE_SUMMATION_OPERATOR_DESC(_t((2, 3, 4)), _t((2, 3, 4)), 1, DML_AXIS_DIRECTION.DECREASING, True),
         _inputs(InputTensor=_rand((2, 3, 4)))),
    Case("cumulative product", OP.CUMULATIVE_PRODUCT, lambda: red.DML_CUMULATIVE_PRODUCT_OPERATOR_DESC(_t((1, 1, 1, 4)), _t((1, 1, 1, 4)), 3, DML_AXIS_DIRECTION.INCREASING, False),
         _inputs(InputTensor=_rand((1, 1, 1, 4)))),
    Case("one hot with INT32 indices", OP.ONE_HOT, lambda: dm.DML_ONE_HOT_OPERATOR_DESC(_t((1, 1, 3, 1), "int32"), _t((1, 1, 1, 2)), _t((1, 1, 3, 4)), 3),
         _inputs(IndicesTensor=_ints((1, 1, 3, 1), -4, 5, np.int32), ValuesTensor=_rand((1, 1, 1, 2)))),
    Case("scatter", OP.SCATTER_ELEMENTS, lambda: dm.DML_SCATTER_OPERATOR_DESC(_t((3, 3)), _t((1, 3), "uint32"), _t((1, 3)), _t((3, 3)), 0),
         _inputs(InputTensor=_rand((3, 3)), IndicesTensor=_ints((1, 3), 0, 3, np.uint32), UpdatesTensor=_rand((1, 3)))),
    Case("scatter nd", OP.SCATTER_ND, lambda: dm.DML_SCATTER_ND_OPERATOR_DESC(_t((4, 4)), _t((1, 1), "int32"), _t((1, 4)), _t((4, 4)), 2, 2),
         _inputs(InputTensor=_rand((4, 4)), IndicesTensor=_ints((1, 1), -4, 4, np.int32), UpdatesTensor=_rand((1, 4)))),
]  # fmt: skip
CASES[-1:-1] = TOP_K_CUMULATIVE_SCATTER_CASES


def case_ids(cases: list[Case]) -> list[str]:
    return [c.id for c in cases]


def decoder(backend: str = "auto") -> tuple[dmlpy.GraphProgram, dict[str, np.ndarray]]:
    """A small decoder graph: transposed convolution (owned weights, bias, fused ReLU) -> depth to
    space (COLUMN_ROW_DEPTH) -> sigmoid, with a second output taken from the convolution."""
    rng = np.random.default_rng(7)
    g = dmlpy.GraphBuilder(backend=backend)
    z = g.input("z", F32, (1, 8, 4, 4))
    w = g.input("w", F32, (8, 4, 3, 3), owned=True)
    b = g.input("b", F32, (1, 4, 1, 1))
    conv = DML_CONVOLUTION_OPERATOR_DESC(
        None, None, None, buffer_tensor(F32, (1, 4, 8, 8)), CC, BACKWARD, 2, (2, 2), (1, 1), (1, 1), (1, 1), (0, 0), 1, FusedActivation.relu()
    )
    (h,) = g.add_operator(conv, {"InputTensor": z, "FilterTensor": w, "BiasTensor": b}, call="conv_transpose")
    to_space = DML_DEPTH_TO_SPACE1_OPERATOR_DESC(None, buffer_tensor(F32, (1, 1, 16, 16)), 2, DML_DEPTH_SPACE_ORDER.COLUMN_ROW_DEPTH)
    (s,) = g.add_operator(to_space, {"InputTensor": h}, call="depth_to_space")
    (y,) = g.add_operator(DML_ACTIVATION_SIGMOID_OPERATOR_DESC(None, buffer_tensor(F32, (1, 1, 16, 16))), {"InputTensor": s}, call="sigmoid")
    program = g.compile({"image": y, "features": h})
    inputs = {
        "z": rng.standard_normal((1, 8, 4, 4)).astype(np.float32),
        "w": (rng.standard_normal((8, 4, 3, 3)) * 0.2).astype(np.float32),
        "b": rng.standard_normal((1, 4, 1, 1)).astype(np.float32),
    }
    return program, inputs
