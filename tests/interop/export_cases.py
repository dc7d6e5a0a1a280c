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
from dmlpy.enums import DML_CONVOLUTION_DIRECTION, DML_FEATURE_LEVEL, DML_IS_INFINITY_MODE, DML_ROUNDING_MODE, DML_TENSOR_DATA_TYPE
from dmlpy.operators.descs import OPERATORS as DESCS
from dmlpy.operators.element_wise import KERNELS
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


X4 = _rand((1, 2, 5, 5))
CASES: list[Case] = [
    Case("average pooling with padding, IncludePadding FALSE", OP.AVERAGE_POOLING, lambda: _pool(False), _inputs(InputTensor=X4)),
    Case("average pooling with padding, IncludePadding TRUE", OP.AVERAGE_POOLING, lambda: _pool(True), _inputs(InputTensor=X4)),
    Case("average pooling on an NHWC-strided input", OP.AVERAGE_POOLING, lambda: _pool(False, nhwc_strides((1, 2, 5, 5))), _inputs(InputTensor=X4)),
    Case("3-D average pooling in FLOAT16", OP.AVERAGE_POOLING, _pool3d, _inputs(InputTensor=_rand((1, 1, 4, 4, 4), np.float16))),
    Case("average pooling1 with Dilations", OP.AVERAGE_POOLING1, _pool1, _inputs(InputTensor=_rand((1, 1, 7, 7)))),
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


ELEMENT_WISE_CASES = [_element_wise_case(t) for t in KERNELS]
CASES[-1:-1] = ELEMENT_WISE_CASES  # the last case stays the 1-D convolution test_cpp.py takes


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
