"""The ONNX importer's mappings through GraphBuilder, each against onnxruntime on a one-node (or small) model.

Every expected value is onnxruntime's (CPU) output for the same model; dmlpy imports the model
and runs it on both backends (the ``device`` fixture). Parameters that DirectML takes as desc
fields (Reshape's shape, Slice's starts, Resize's scales, ...) are initializers, as exporters
write them; a small model checks that they may also be computed from shapes (constant folding).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import assert_rule

import dmlpy

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper
from onnx_cases import ort_run

import dmlpy.interop.onnx as dx

pytestmark = pytest.mark.filterwarnings("ignore::dmlpy.DmlWarning")
TOLERANCE = {"rtol": 1e-3, "atol": 1e-4}
RNG = np.random.default_rng(1414)


def f32(*shape: int, low: float = -3.0, high: float = 3.0) -> np.ndarray:
    return RNG.uniform(low, high, shape).astype(np.float32)


def i64(*values: int) -> np.ndarray:
    return np.array(values, np.int64)


X = "x"  # an input kind: a graph input (fed at run time)
C = "c"  # an initializer


def model_of(op: str, inputs: list[tuple[str, np.ndarray] | None], attributes: dict[str, Any], opset: int, outputs: int = 1) -> tuple[Any, dict[str, np.ndarray]]:
    """One ``op`` node: graph inputs and initializers in node-input order (None: an absent optional input)."""
    names, feeds, graph_inputs, inits = [], {}, [], []
    for k, entry in enumerate(inputs):
        if entry is None:
            names.append("")
            continue
        kind, array = entry
        name = f"in{k}"
        names.append(name)
        if kind == X:
            feeds[name] = array
            graph_inputs.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(array.dtype), array.shape))
        else:
            inits.append(numpy_helper.from_array(array, name))
    out_names = [f"y{j}" for j in range(outputs)]
    node = helper.make_node(op, names, out_names, **attributes)
    graph = helper.make_graph([node], "g", graph_inputs, [helper.make_empty_tensor_value_info(n) for n in out_names], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8), feeds


def b(*shape: int) -> np.ndarray:
    return RNG.random(shape) > 0.5


A4 = f32(2, 3, 4, 5)
POS = f32(2, 3, 4, 5, low=0.2, high=3.0)
IMG = f32(1, 2, 7, 8)
SEQ = f32(2, 3, 9)

# (id, op, opset, inputs, attributes[, outputs])
CASES: list[tuple[Any, ...]] = [
    # element-wise, broadcast as ONNX does
    ("Add broadcasts a per-channel {3, 1, 1} over NCHW", "Add", 17, [(X, A4), (C, f32(3, 1, 1))], {}),
    ("Add of two graph inputs of different ranks", "Add", 14, [(X, f32(4, 5)), (X, A4)], {}),
    ("Sub with a scalar initializer", "Sub", 14, [(X, A4), (C, np.array(0.5, np.float32))], {}),
    ("Mul broadcasts both operands", "Mul", 14, [(X, f32(2, 1, 4, 1)), (X, f32(3, 1, 5))], {}),
    ("Div by positive values", "Div", 14, [(X, A4), (X, POS)], {}),
    ("Div of int32 truncates toward zero", "Div", 14, [(X, np.array([7, -7, 9, -9], np.int32)), (C, np.array([2, 2, -4, 4], np.int32))], {}),
    ("Pow with a scalar exponent", "Pow", 15, [(X, POS), (C, np.array(2.5, np.float32))], {}),
    ("Max of three inputs", "Max", 13, [(X, A4), (X, f32(5)), (C, f32(3, 1, 1))], {}),
    ("Min of two inputs", "Min", 13, [(X, A4), (X, f32(4, 1))], {}),
    ("Sum of three inputs", "Sum", 13, [(X, A4), (X, A4[:1]), (C, f32(5))], {}),
    ("Mean of three inputs", "Mean", 13, [(X, A4), (X, f32(5)), (X, f32(4, 5))], {}),
    ("Sum of one input is a copy", "Sum", 13, [(X, A4)], {}),
    ("Equal on int64 gives bool", "Equal", 13, [(X, RNG.integers(0, 3, (3, 4)).astype(np.int64)), (C, RNG.integers(0, 3, (4,)).astype(np.int64))], {}),
    ("Less broadcasts and gives bool", "Less", 13, [(X, A4), (X, f32(5))], {}),
    ("Greater broadcasts and gives bool", "Greater", 13, [(X, A4), (C, np.array(0.0, np.float32))], {}),
    ("LessOrEqual gives bool", "LessOrEqual", 16, [(X, np.round(A4)), (X, np.round(f32(5)))], {}),
    ("GreaterOrEqual gives bool", "GreaterOrEqual", 16, [(X, np.round(A4)), (X, np.round(f32(5)))], {}),
    ("And of bool inputs", "And", 7, [(X, b(3, 4)), (X, b(4))], {}),
    ("Or of bool inputs", "Or", 7, [(X, b(3, 4)), (X, b(3, 1))], {}),
    ("Xor of bool inputs", "Xor", 7, [(X, b(3, 4)), (X, b(3, 4))], {}),
    ("Not of a bool input", "Not", 1, [(X, b(3, 4))], {}),
    ("Where broadcasts condition and values", "Where", 16, [(X, b(4, 1)), (X, f32(3, 4, 5)), (C, np.array(-1.0, np.float32))], {}),
    ("Mod fmod=1 on floats is C's fmod", "Mod", 13, [(X, A4), (C, np.array(0.7, np.float32))], {"fmod": 1}),
    ("Mod fmod=0 on int32 takes the divisor's sign", "Mod", 13, [(X, np.arange(-6, 6, dtype=np.int32)), (C, np.array(-4, np.int32))], {}),
    ("Sqrt", "Sqrt", 13, [(X, POS)], {}),
    ("Reciprocal", "Reciprocal", 13, [(X, POS)], {}),
    ("Exp", "Exp", 13, [(X, A4)], {}),
    ("Log", "Log", 13, [(X, POS)], {}),
    ("Abs", "Abs", 13, [(X, A4)], {}),
    ("Neg", "Neg", 13, [(X, A4)], {}),
    ("Erf", "Erf", 13, [(X, A4)], {}),
    ("Tanh", "Tanh", 13, [(X, A4)], {}),
    ("Floor", "Floor", 13, [(X, A4)], {}),
    ("Ceil", "Ceil", 13, [(X, A4)], {}),
    ("Sin", "Sin", 7, [(X, A4)], {}),
    ("Cos", "Cos", 7, [(X, A4)], {}),
    ("Sign", "Sign", 13, [(X, np.round(A4))], {}),
    ("Round rounds halves to even", "Round", 11, [(X, np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.4, -0.6], np.float32))], {}),
    ("IsInf detects both infinities", "IsInf", 10, [(X, np.array([np.inf, -np.inf, 0.0, np.nan, 3.0], np.float32))], {}),
    ("IsInf detect_negative=0 sees only +inf", "IsInf", 10, [(X, np.array([np.inf, -np.inf, 0.0, np.nan], np.float32))], {"detect_negative": 0}),
    ("BitShift LEFT on uint32", "BitShift", 11, [(X, np.array([1, 3, 255, 2**31], np.uint32)), (C, np.array([1, 4, 8, 1], np.uint32))], {"direction": "LEFT"}),
    ("BitShift RIGHT on uint8 broadcasts", "BitShift", 11, [(X, np.array([[255, 16], [7, 128]], np.uint8)), (C, np.array([2], np.uint8))], {"direction": "RIGHT"}),
    ("Clip-6 takes min and max attributes", "Clip", 6, [(X, A4)], {"min": -0.5, "max": 1.0}),
    ("Clip-13 takes min and max inputs", "Clip", 13, [(X, A4), (C, np.array(-1.0, np.float32)), (C, np.array(0.25, np.float32))], {}),
    ("Clip-13 with only max (min absent)", "Clip", 13, [(X, A4), None, (C, np.array(0.25, np.float32))], {}),
    ("Clip-13 on int32", "Clip", 13, [(X, np.arange(-5, 5, dtype=np.int32)), (C, np.array(-2, np.int32)), (C, np.array(3, np.int32))], {}),
    # activations
    ("Relu on a rank-2 value", "Relu", 14, [(X, f32(3, 4))], {}),
    ("Relu on a scalar", "Relu", 14, [(X, np.array(-1.5, np.float32))], {}),
    ("Add of two scalars", "Add", 14, [(X, np.array(1.5, np.float32)), (X, np.array(-4.0, np.float32))], {}),
    ("LeakyRelu alpha 0.1", "LeakyRelu", 16, [(X, A4)], {"alpha": 0.1}),
    ("Sigmoid", "Sigmoid", 13, [(X, A4)], {}),
    ("HardSigmoid alpha 0.25 beta 0.4", "HardSigmoid", 6, [(X, A4)], {"alpha": 0.25, "beta": 0.4}),
    ("HardSwish", "HardSwish", 14, [(X, A4)], {}),
    ("Elu alpha 0.5", "Elu", 6, [(X, A4)], {"alpha": 0.5}),
    ("Selu with its default constants", "Selu", 6, [(X, A4)], {}),
    ("Celu alpha 2", "Celu", 12, [(X, A4)], {"alpha": 2.0}),
    ("Softplus", "Softplus", 1, [(X, A4)], {}),
    ("Softsign", "Softsign", 1, [(X, A4)], {}),
    ("PRelu with a per-channel slope", "PRelu", 16, [(X, A4), (C, f32(3, 1, 1))], {}),
    ("Gelu-20 (erf form)", "Gelu", 20, [(X, A4)], {}),
    ("ThresholdedRelu alpha 0.5", "ThresholdedRelu", 10, [(X, A4)], {"alpha": 0.5}),
    ("Shrink bias 0.2 lambd 0.7", "Shrink", 9, [(X, A4)], {"bias": 0.2, "lambd": 0.7}),
    # matrix products
    ("Gemm with a bias row", "Gemm", 13, [(X, f32(3, 4)), (C, f32(4, 5)), (C, f32(5))], {}),
    ("Gemm transA transB alpha beta with a column bias", "Gemm", 13, [(X, f32(4, 3)), (C, f32(5, 4)), (C, f32(3, 1))], {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0}),
    ("Gemm with a scalar C", "Gemm", 13, [(X, f32(3, 4)), (X, f32(4, 2)), (C, np.array(1.5, np.float32))], {}),
    ("Gemm without C", "Gemm", 13, [(X, f32(3, 4)), (C, f32(4, 2))], {}),
    ("MatMul of matrices", "MatMul", 13, [(X, f32(3, 4)), (C, f32(4, 5))], {}),
    ("MatMul batched by a shared matrix", "MatMul", 13, [(X, f32(2, 3, 4)), (C, f32(4, 5))], {}),
    ("MatMul broadcasts batch dims", "MatMul", 13, [(X, f32(2, 1, 3, 4)), (X, f32(3, 4, 2))], {}),
    ("MatMul of a vector by a matrix", "MatMul", 13, [(X, f32(4)), (C, f32(4, 5))], {}),
    ("MatMul of a matrix by a vector", "MatMul", 13, [(X, f32(3, 4)), (C, f32(4))], {}),
    # pooling
    ("MaxPool 2x2 stride 2", "MaxPool", 12, [(X, IMG)], {"kernel_shape": [2, 2], "strides": [2, 2]}),
    ("MaxPool 3x3 with pads", "MaxPool", 12, [(X, IMG)], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]}),
    ("MaxPool ceil_mode", "MaxPool", 12, [(X, IMG)], {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    ("MaxPool with dilations", "MaxPool", 12, [(X, IMG)], {"kernel_shape": [2, 2], "dilations": [2, 2]}),
    ("MaxPool SAME_UPPER", "MaxPool", 12, [(X, IMG)], {"kernel_shape": [3, 2], "strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    ("MaxPool 1-D", "MaxPool", 12, [(X, SEQ)], {"kernel_shape": [3], "strides": [2]}),
    ("MaxPool with Indices", "MaxPool", 12, [(X, IMG)], {"kernel_shape": [2, 2], "strides": [2, 2]}, 2),
    ("GlobalMaxPool", "GlobalMaxPool", 1, [(X, IMG)], {}),
    ("LpPool p=2 2x2 stride 2", "LpPool", 18, [(X, IMG)], {"kernel_shape": [2, 2], "strides": [2, 2]}),
    ("LpPool p=1 with pads", "LpPool", 18, [(X, IMG)], {"kernel_shape": [3, 2], "pads": [1, 0, 1, 1], "strides": [2, 2], "p": 1}),
    ("LpPool p=3 ceil_mode", "LpPool", 18, [(X, IMG)], {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1, "p": 3}),
    ("LpPool with dilations is LP_POOLING1", "LpPool", 18, [(X, IMG)], {"kernel_shape": [2, 2], "dilations": [2, 3]}),
    ("LpPool SAME_LOWER", "LpPool", 18, [(X, IMG)], {"kernel_shape": [3, 2], "strides": [2, 2], "auto_pad": "SAME_LOWER"}),
    ("LpPool 1-D", "LpPool", 11, [(X, SEQ)], {"kernel_shape": [3], "strides": [2], "p": 1}),
    ("LpPool 3-D", "LpPool", 11, [(X, A4[:, :, None])], {"kernel_shape": [1, 2, 3], "pads": [0, 1, 1, 0, 0, 1]}),
    ("GlobalLpPool p=2", "GlobalLpPool", 2, [(X, IMG)], {}),
    ("GlobalLpPool p=3 of {N, C, L}", "GlobalLpPool", 2, [(X, SEQ)], {"p": 3}),
    # normalization
    ("BatchNormalization NCHW", "BatchNormalization", 15, [(X, A4), (C, f32(3)), (C, f32(3)), (C, f32(3)), (C, f32(3, low=0.5, high=2))], {"epsilon": 1e-3}),
    ("BatchNormalization of {N, C, L}", "BatchNormalization", 15, [(X, SEQ), (C, f32(3)), (C, f32(3)), (C, f32(3)), (C, f32(3, low=0.5, high=2))], {}),
    ("BatchNormalization of {N, C}", "BatchNormalization", 15, [(X, f32(4, 3)), (C, f32(3)), (C, f32(3)), (C, f32(3)), (C, f32(3, low=0.5, high=2))], {}),
    ("InstanceNormalization NCHW", "InstanceNormalization", 6, [(X, A4), (C, f32(3)), (C, f32(3))], {"epsilon": 1e-4}),
    ("InstanceNormalization of {N, C, L}", "InstanceNormalization", 6, [(X, SEQ), (C, f32(3)), (C, f32(3))], {}),
    ("LayerNormalization over the last axis", "LayerNormalization", 17, [(X, A4), (C, f32(5)), (C, f32(5))], {}),
    ("LayerNormalization from axis 1 without bias", "LayerNormalization", 17, [(X, A4), (C, f32(3, 4, 5))], {"axis": 1, "epsilon": 1e-3}),
    ("MeanVarianceNormalization", "MeanVarianceNormalization", 13, [(X, A4)], {}),
    ("GroupNormalization-21 with per-channel scale", "GroupNormalization", 21, [(X, f32(2, 6, 3, 4)), (C, f32(6)), (C, f32(6))], {"num_groups": 3}),
    ("GroupNormalization-21 of {N, C, L}", "GroupNormalization", 21, [(X, f32(2, 4, 5)), (C, f32(4)), (C, f32(4))], {"num_groups": 2, "epsilon": 1e-3}),
    ("LRN size 3 with every attribute", "LRN", 13, [(X, A4)], {"size": 3, "alpha": 0.5, "beta": 0.6, "bias": 1.5}),
    ("LRN size 5 with the defaults spans more than C", "LRN", 13, [(X, A4)], {"size": 5}),
    ("LRN-1 size 1", "LRN", 1, [(X, IMG)], {"size": 1, "alpha": 2.0}),
    ("LpNormalization p=2 over the last axis", "LpNormalization", 1, [(X, A4)], {}),
    ("LpNormalization p=1 over axis 1", "LpNormalization", 1, [(X, A4)], {"axis": 1, "p": 1}),
    ("LpNormalization of a 1-D input", "LpNormalization", 22, [(X, POS[0, 0, 0])], {"axis": 0}),
    ("LpNormalization of {N, C, L} at axis -2", "LpNormalization", 22, [(X, SEQ)], {"axis": -2, "p": 1}),
    ("Softmax-11 flattens at axis 1", "Softmax", 11, [(X, A4)], {}),
    ("Softmax-13 over axis 1 only", "Softmax", 13, [(X, A4)], {"axis": 1}),
    ("LogSoftmax-13 over the last axis", "LogSoftmax", 13, [(X, A4)], {}),
    ("LogSoftmax-11 flattens at axis 2", "LogSoftmax", 11, [(X, A4)], {"axis": 2}),
    ("Hardmax-13 over axis -2", "Hardmax", 13, [(X, A4)], {"axis": -2}),
    # reductions
    *[(f"{op} over axes 1 and 3, keepdims 0", op, 13, [(X, POS)], {"axes": [1, 3], "keepdims": 0})
      for op in ("ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")],
    ("ReduceSum-13 takes axes as an input", "ReduceSum", 13, [(X, A4), (C, i64(-1))], {}),
    ("ReduceSum-13 without axes reduces everything", "ReduceSum", 13, [(X, A4)], {"keepdims": 0}),
    ("ReduceSum-13 noop_with_empty_axes copies", "ReduceSum", 13, [(X, A4)], {"noop_with_empty_axes": 1}),
    ("ReduceMean-18 takes axes as an input", "ReduceMean", 18, [(X, A4), (C, i64(2, 3))], {}),
    ("ReduceMax-11 over a negative axis", "ReduceMax", 11, [(X, A4)], {"axes": [-3]}),
    ("ArgMax keepdims 0", "ArgMax", 13, [(X, A4)], {"axis": 2, "keepdims": 0}),
    ("ArgMin select_last_index on ties", "ArgMin", 13, [(X, np.round(A4))], {"axis": -1, "select_last_index": 1}),
    ("ArgMax first of ties", "ArgMax", 13, [(X, np.round(A4))], {"axis": 1}),
    # data movement
    ("Concat along axis 1", "Concat", 13, [(X, A4), (C, f32(2, 2, 4, 5)), (X, A4)], {"axis": 1}),
    ("Concat along a negative axis", "Concat", 13, [(X, f32(3, 2)), (X, f32(3, 4))], {"axis": -1}),
    ("Split-13 into equal parts", "Split", 13, [(X, A4)], {"axis": 1}, 3),
    ("Split-13 with a split input", "Split", 13, [(X, A4), (C, i64(1, 3))], {"axis": 2}, 2),
    ("Split-11 with a split attribute", "Split", 11, [(X, A4)], {"axis": -1, "split": [2, 3]}, 2),
    ("Split-18 num_outputs uneven", "Split", 18, [(X, A4)], {"axis": 3, "num_outputs": 2}, 2),
    ("Slice with steps", "Slice", 13, [(X, A4), (C, i64(0, 1)), (C, i64(3, 5)), (C, i64(2, 3)), (C, i64(2, 2))], {}),
    ("Slice with a negative step", "Slice", 13, [(X, A4), (C, i64(-1)), (C, i64(-100)), (C, i64(3)), (C, i64(-2))], {}),
    ("Slice with negative starts and ends", "Slice", 13, [(X, A4), (C, i64(-3, -2)), (C, i64(-1, 100)), (C, i64(2, 1))], {}),
    ("Slice-1 with attributes", "Slice", 1, [(X, A4)], {"starts": [1], "ends": [3], "axes": [2]}),
    ("Pad constant with a value", "Pad", 13, [(X, IMG), (C, i64(0, 0, 1, 2, 0, 0, 2, 1)), (C, np.array(1.5, np.float32))], {}),
    ("Pad reflect", "Pad", 13, [(X, IMG), (C, i64(0, 0, 2, 1, 0, 0, 1, 2))], {"mode": "reflect"}),
    ("Pad edge", "Pad", 13, [(X, IMG), (C, i64(0, 1, 2, 0, 0, 0, 1, 3))], {"mode": "edge"}),
    ("Pad-2 with attributes", "Pad", 2, [(X, IMG)], {"pads": [0, 0, 1, 1, 0, 0, 1, 1], "value": -2.0}),
    ("Pad-18 with axes", "Pad", 18, [(X, IMG), (C, i64(1, 2, 3, 0)), None, (C, i64(-1, 2))], {}),
    ("Cast float to int32 truncates", "Cast", 13, [(X, A4)], {"to": TensorProto.INT32}),
    ("Cast int64 to float", "Cast", 13, [(X, RNG.integers(-50, 50, (3, 4)).astype(np.int64))], {"to": TensorProto.FLOAT}),
    ("CastLike takes the second input's type", "CastLike", 15, [(X, A4), (C, np.array([1], np.int32))], {}),
    ("Cast float to bool is nonzero", "Cast", 13, [(X, np.array([0.0, 0.3, -2.0, 0.0], np.float32))], {"to": TensorProto.BOOL}),
    ("Gather axis 0 with 2-D indices", "Gather", 13, [(X, f32(5, 4)), (C, np.array([[0, 4], [2, 2]], np.int64))], {}),
    ("Gather axis 1 with a scalar index", "Gather", 13, [(X, A4), (C, np.array(2, np.int64))], {"axis": 1}),
    ("Gather with negative indices", "Gather", 13, [(X, A4), (C, np.array([-1, 0], np.int64))], {"axis": -1}),
    ("GatherElements along axis 1", "GatherElements", 13, [(X, f32(3, 4)), (C, np.array([[0, 3], [1, 1], [2, 0]], np.int64))], {"axis": 1}),
    ("GatherND of pairs", "GatherND", 13, [(X, f32(3, 4, 2)), (C, np.array([[0, 1], [2, 3]], np.int64))], {}),
    ("GatherND with batch_dims 1", "GatherND", 13, [(X, f32(2, 3, 4)), (C, np.array([[1], [2]], np.int64))], {"batch_dims": 1}),
    # TopK, CumSum, OneHot, Scatter
    ("TopK largest along axis 1 with ties, indices INT64", "TopK", 11, [(X, np.round(A4)), (C, i64(2))], {"axis": 1}, 2),
    ("TopK smallest along the last axis", "TopK", 11, [(X, np.round(A4)), (C, i64(3))], {"largest": 0}, 2),
    ("TopK-1 takes k as an attribute", "TopK", 1, [(X, A4)], {"k": 2, "axis": 2}, 2),
    ("TopK of int32 with K the whole axis", "TopK", 11, [(X, RNG.integers(-3, 3, (4, 6)).astype(np.int32)), (C, i64(6))], {"axis": -1}, 2),
    ("CumSum exclusive reverse", "CumSum", 14, [(X, A4), (C, np.array(1, np.int64))], {"exclusive": 1, "reverse": 1}, 1),
    ("CumSum of int32 along a negative int32 axis", "CumSum", 14, [(X, np.arange(12, dtype=np.int32).reshape(3, 4)), (C, np.array(-1, np.int32))], {}, 1),
    ("CumProd reverse is CUMULATIVE_PRODUCT", "CumProd", 26, [(X, A4), (C, np.array(2, np.int64))], {"reverse": 1}, 1),
    ("OneHot with negative and out-of-range indices along axis 1", "OneHot", 11, [(X, np.array([[0, -1, 3], [-4, 5, 2]], np.int64)), (C, np.array(4, np.int64)),
                                                                                  (X, np.array([2.0, 7.0], np.float32))], {"axis": 1}, 1),
    ("OneHot default axis -1 with int32 indices", "OneHot", 11, [(X, np.array([1, -2, 0], np.int32)), (C, np.array(3.0, np.float32)), (C, np.array([0.0, 1.0], np.float32))], {}, 1),
    ("OneHot with float indices cast toward zero first", "OneHot", 11, [(X, np.array([1.7, -0.5, 2.2, -1.2], np.float32)), (C, np.array(3.0, np.float32)),
                                                                        (C, np.array([0.0, 1.0], np.float32))], {}, 1),
    ("ScatterElements with a negative index", "ScatterElements", 16, [(X, f32(3, 4)), (C, np.array([[1, -1, 0, 2]], np.int64)), (X, f32(1, 4))], {"axis": 0}, 1),
    ("Scatter-9 is ScatterElements", "Scatter", 9, [(X, f32(3, 4)), (X, np.array([[1, 3], [0, 2], [3, 1]], np.int64)), (X, f32(3, 2))], {"axis": 1}, 1),
    ("ScatterND of rows with a negative coordinate", "ScatterND", 16, [(X, f32(4, 4, 4)), (C, np.array([[0, 1], [2, -1]], np.int64)), (X, f32(2, 4))], {}, 1),
    ("Tile repeats every axis", "Tile", 13, [(X, f32(2, 3)), (C, i64(2, 3))], {}),
    # resampling
    ("Resize nearest asymmetric floor by 2", "Resize", 13, [(X, IMG), None, (C, np.array([1, 1, 2, 2], np.float32))], {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}),
    ("Resize nearest half_pixel to sizes", "Resize", 13, [(X, IMG), None, None, (C, i64(1, 2, 10, 5))], {"mode": "nearest"}),
    ("Resize linear half_pixel by 2", "Resize", 13, [(X, IMG), None, (C, np.array([1, 1, 2, 2], np.float32))], {"mode": "linear"}),
    ("Resize linear align_corners to sizes", "Resize", 13, [(X, IMG), None, None, (C, i64(1, 2, 13, 11))], {"mode": "linear", "coordinate_transformation_mode": "align_corners"}),
    ("Resize linear pytorch_half_pixel to one row reads row 0 (the output length decides)", "Resize", 13, [(X, IMG), None, None, (C, i64(1, 2, 1, 5))], {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"}),
    ("Resize linear pytorch_half_pixel by 0.5", "Resize", 13, [(X, IMG), None, (C, np.array([1, 1, 0.5, 0.5], np.float32))], {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"}),
    ("Resize-11 nearest round_prefer_ceil", "Resize", 11, [(X, IMG), (C, np.zeros(0, np.float32)), (C, np.array([1, 1, 1.5, 2.5], np.float32))], {"mode": "nearest", "nearest_mode": "round_prefer_ceil"}),
    ("Upsample-9 nearest", "Upsample", 9, [(X, IMG), (C, np.array([1, 1, 2, 3], np.float32))], {"mode": "nearest"}),
    ("Resize-10 nearest by 1.5", "Resize", 10, [(X, IMG), (C, np.array([1, 1, 1.5, 1.5], np.float32))], {"mode": "nearest"}),
    ("Upsample-7 with a scales attribute", "Upsample", 7, [(X, IMG)], {"mode": "nearest", "scales": [1.0, 1.0, 2.0, 2.0]}),
    # quantization
    ("QuantizeLinear per tensor to uint8", "QuantizeLinear", 13, [(X, A4), (C, np.array(0.02, np.float32)), (C, np.array(128, np.uint8))], {}),
    ("QuantizeLinear per axis to int8 saturates", "QuantizeLinear", 13, [(X, A4), (C, np.array([0.01, 0.02, 0.05], np.float32)), (C, np.array([0, -3, 5], np.int8))], {"axis": 1}),
    ("QuantizeLinear without a zero point is uint8", "QuantizeLinear", 13, [(X, POS), (C, np.array(0.05, np.float32))], {}),
    ("DequantizeLinear per axis", "DequantizeLinear", 13, [(X, RNG.integers(0, 255, (2, 3, 4)).astype(np.uint8)), (C, np.array([0.1, 0.2, 0.3], np.float32)),
                                                            (C, np.array([120, 128, 3], np.uint8))], {"axis": 1}),
    # layout-only (a graph output that is a view gets an IDENTITY node)
    ("Reshape with 0 and -1", "Reshape", 14, [(X, A4), (C, i64(0, -1, 5))], {}),
    ("Flatten at axis 2", "Flatten", 13, [(X, A4)], {"axis": 2}),
    ("Squeeze-13 with axes", "Squeeze", 13, [(X, f32(2, 1, 3, 1)), (C, i64(1, -1))], {}),
    ("Squeeze-11 without axes drops every 1", "Squeeze", 11, [(X, f32(2, 1, 3, 1))], {}),
    ("Unsqueeze-13 with negative axes", "Unsqueeze", 13, [(X, f32(2, 3)), (C, i64(0, -1))], {}),
    ("Unsqueeze-11 with attributes", "Unsqueeze", 11, [(X, f32(2, 3))], {"axes": [1]}),
    ("Transpose with perm", "Transpose", 13, [(X, A4)], {"perm": [0, 2, 3, 1]}),
    ("Transpose without perm reverses", "Transpose", 13, [(X, f32(2, 3, 4))], {}),
    ("Expand broadcasts to a higher rank", "Expand", 13, [(X, f32(3, 1)), (C, i64(2, 1, 4))], {}),
    ("Identity", "Identity", 16, [(X, A4)], {}),
    ("Dropout in inference is the identity", "Dropout", 13, [(X, A4)], {}),
]


def _case_params() -> list[Any]:
    return [pytest.param(c[1], c[2], c[3], c[4], c[5] if len(c) > 5 else 1, id=c[0]) for c in CASES]


@pytest.mark.parametrize(("op", "opset", "inputs", "attributes", "outputs"), _case_params())
def test_a_mapped_node_agrees_with_onnxruntime(device: dmlpy.Device, op: str, opset: int, inputs: list[Any], attributes: dict[str, Any], outputs: int) -> None:
    model, feeds = model_of(op, inputs, attributes, opset, outputs)
    expected = ort_run(model, feeds)
    got = dx.import_model(model, device=device).run(feeds)
    for j, want in enumerate(expected):
        have = got[f"y{j}"]
        assert have.shape == want.shape, f"output {j}"
        assert have.dtype == want.dtype, f"output {j}"
        if want.dtype.kind == "f":
            np.testing.assert_allclose(have, want, **TOLERANCE)
        else:
            np.testing.assert_array_equal(have, want)


def _graph(nodes: list[Any], inputs: dict[str, tuple[int, ...]], outputs: list[str], initializers: dict[str, np.ndarray] | None = None, opset: int = 17) -> Any:
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
                              [helper.make_empty_tensor_value_info(n) for n in outputs], [numpy_helper.from_array(a, n) for n, a in (initializers or {}).items()])  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def test_reshape_parameters_computed_from_shapes_are_folded_at_import(device: dmlpy.Device) -> None:
    nodes = [  # the torch.jit exporter's x.view(x.size(0), -1): Shape, Gather, Unsqueeze, Concat, Reshape
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
        helper.make_node("Concat", ["n1", "minus_one"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["r"]),
        helper.make_node("Relu", ["r"], ["y"]),
    ]
    model = _graph(nodes, {"x": (2, 3, 4)}, ["y"], {"zero": np.array(0, np.int64), "axes": i64(0), "minus_one": i64(-1)})
    x = f32(2, 3, 4)
    imported = dx.import_model(model, device=device)
    np.testing.assert_array_equal(imported.run({"x": x})["y"], ort_run(model, {"x": x})[0])
    assert len(imported.folded) == 4  # every node before the Reshape
    assert [n.op_type for n in imported.nodes] == ["Reshape", "Relu"]
    assert imported.graph_desc.NodeCount == 1  # the reshape is a view: only RELU runs


def test_a_transpose_feeding_a_node_is_read_through_strides_without_a_copy(device: dmlpy.Device) -> None:
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1]), helper.make_node("Exp", ["t"], ["y"])]
    model = _graph(nodes, {"x": (2, 3, 4)}, ["y"])
    x = f32(2, 3, 4)
    imported = dx.import_model(model, device=device)
    np.testing.assert_allclose(imported.run({"x": x})["y"], ort_run(model, {"x": x})[0], **TOLERANCE)
    assert imported.graph_desc.NodeCount == 1


def test_a_reshape_of_a_transpose_copies_once(device: dmlpy.Device) -> None:
    nodes = [  # no space/depth pattern: the transpose view is copied by one IDENTITY, which the second reshape reinterprets
        helper.make_node("Reshape", ["x", "s1"], ["a"]),
        helper.make_node("Transpose", ["a"], ["b"], perm=[0, 1, 4, 3, 5, 2]),
        helper.make_node("Reshape", ["b", "s2"], ["y"]),
    ]
    model = _graph(nodes, {"x": (1, 8, 3, 5)}, ["y"], {"s1": i64(1, 2, 2, 2, 3, 5), "s2": i64(1, 2, 6, 10)})
    x = f32(1, 8, 3, 5)
    imported = dx.import_model(model, device=device)
    np.testing.assert_array_equal(imported.run({"x": x})["y"], ort_run(model, {"x": x})[0])
    assert [type(n.Desc.Operator.desc).__name__ for n in imported.graph_desc.Nodes] == ["DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC"]


def test_a_graph_output_that_is_a_view_or_an_input_is_written_by_identity(device: dmlpy.Device) -> None:
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]), helper.make_node("Identity", ["x"], ["i"])]
    model = _graph(nodes, {"x": (2, 3)}, ["t", "i"])
    x = f32(2, 3)
    out = dx.import_model(model, device=device).run({"x": x})
    np.testing.assert_array_equal(out["t"], x.T)
    np.testing.assert_array_equal(out["i"], x)


def test_a_run_time_reshape_shape_is_not_mapped_and_says_why() -> None:
    model = _graph([helper.make_node("Reshape", ["x", "s"], ["y"])], {"x": (2, 3)}, ["y"])
    model.graph.input.append(helper.make_tensor_value_info("s", TensorProto.INT64, (2,)))
    with pytest.raises(dx.OnnxImportError) as error:
        dx.import_model(model)
    assert error.value.rule == "ONNX.UNSUPPORTED_ATTRIBUTE" and error.value.hresult == dmlpy.HRESULT.E_NOTIMPL


UNMAPPED = [
    ("MaxPool storage_order 1 with Indices", "MaxPool", 12, [(X, IMG)], {"kernel_shape": [2, 2], "storage_order": 1}, 2, "ONNX.UNSUPPORTED_ATTRIBUTE"),
    ("Gelu tanh approximation", "Gelu", 20, [(X, A4)], {"approximate": "tanh"}, 1, "ONNX.UNSUPPORTED_ATTRIBUTE"),
    ("Resize cubic", "Resize", 13, [(X, IMG), None, (C, np.array([1, 1, 2, 2], np.float32))], {"mode": "cubic"}, 1, "ONNX.UNSUPPORTED_ATTRIBUTE"),
    ("ScatterElements reduction add: DirectML's SCATTER only overwrites", "ScatterElements", 16, [(X, f32(3, 4)), (C, np.array([[1, 0, 0, 2]], np.int64)), (X, f32(1, 4))],
     {"axis": 0, "reduction": "add"}, 1, "ONNX.UNSUPPORTED_ATTRIBUTE"),
    ("ScatterND reduction mul", "ScatterND", 16, [(X, f32(4, 4)), (C, np.array([[1]], np.int64)), (X, f32(1, 4))], {"reduction": "mul"}, 1, "ONNX.UNSUPPORTED_ATTRIBUTE"),
    ("ScatterElements with indices narrower than the data off the axis", "ScatterElements", 13, [(X, f32(3, 4)), (C, np.array([[1, 0]], np.int64)), (X, f32(1, 2))], {"axis": 0}, 1, "ONNX.SHAPE"),
    ("TopK with K computed at run time", "TopK", 11, [(X, A4), (X, i64(2))], {}, 2, "ONNX.UNSUPPORTED_ATTRIBUTE"),
    ("Unique has no DirectML operator", "Unique", 11, [(X, A4)], {}, 1, "ONNX.UNSUPPORTED_OP"),
    ("Max of float64: DirectML's MAX has no FLOAT64", "Max", 13, [(X, A4.astype(np.float64)), (X, A4.astype(np.float64))], {}, 1, "ONNX.UNSUPPORTED_TYPE"),
    ("Relu of int8 is lowered node by node, and DirectML's RELU has no INT8 below FL 5.1", "Relu", 14, [(X, np.arange(-3, 3, dtype=np.int8))], {}, 1, "ONNX.UNSUPPORTED_TYPE"),
    ("Dropout with training_mode true", "Dropout", 13, [(X, A4), (C, np.array(0.5, np.float32)), (C, np.array(True))], {}, 1, "ONNX.UNSUPPORTED_ATTRIBUTE"),
]


@pytest.mark.parametrize(("op", "opset", "inputs", "attributes", "outputs", "rule_id"), [pytest.param(*c[1:], id=c[0]) for c in UNMAPPED])
def test_what_is_not_mapped_is_refused_as_not_implemented_by_rule(op: str, opset: int, inputs: list[Any], attributes: dict[str, Any], outputs: int, rule_id: str) -> None:
    model, _ = model_of(op, inputs, attributes, opset, outputs)
    level = dmlpy.DML_FEATURE_LEVEL.LEVEL_5_0 if op == "Relu" else dmlpy.DML_FEATURE_LEVEL.LEVEL_6_4
    with pytest.raises(dx.OnnxImportError) as error:
        dx.import_model(model, feature_level=level)
    assert error.value.rule == rule_id and error.value.hresult == dmlpy.HRESULT.E_NOTIMPL
    assert_rule(dx.validate(model, feature_level=level), rule_id)


def test_a_topk_whose_indices_nobody_reads_still_runs(device: dmlpy.Device) -> None:
    """TOP_K1 writes both outputs and a DML graph connects every node output: the unread one is a graph output run() leaves out."""
    node = helper.make_node("TopK", ["x", "k"], ["values", "indices"], axis=1)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (2, 5))], [helper.make_empty_tensor_value_info("values")],
                              [numpy_helper.from_array(i64(2), "k")])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)], ir_version=8)
    x = np.array([[1, 5, 2, 5, 0], [3, 3, 3, 1, 9]], np.float32)
    got = dx.import_model(model, device=device).run({"x": x})
    assert list(got) == ["values"]
    np.testing.assert_array_equal(got["values"], [[5, 5], [9, 3]])


SPACE_DEPTH_PATTERNS = [  # (id, input shape, first reshape, perm, second reshape, the DML operator, its order)
    ("PixelUnshuffle as torch exports it is SPACE_TO_DEPTH1 CRD", (1, 3, 4, 6), (1, 3, 2, 2, 3, 2), (0, 1, 3, 5, 2, 4), (1, 12, 2, 3), "SPACE_TO_DEPTH1", "COLUMN_ROW_DEPTH"),
    ("ONNX SpaceToDepth's expansion is SPACE_TO_DEPTH1 DCR", (2, 2, 6, 3), (2, 2, 2, 3, 1, 3), (0, 3, 5, 1, 2, 4), (2, 18, 2, 1), "SPACE_TO_DEPTH1", "DEPTH_COLUMN_ROW"),
    ("PixelShuffle as torch exports it is DEPTH_TO_SPACE1 CRD", (1, 8, 3, 5), (1, 2, 2, 2, 3, 5), (0, 1, 4, 2, 5, 3), (1, 2, 6, 10), "DEPTH_TO_SPACE1", "COLUMN_ROW_DEPTH"),
    ("ONNX DepthToSpace DCR's expansion is DEPTH_TO_SPACE1 DCR", (1, 18, 2, 2), (1, 3, 3, 2, 2, 2), (0, 3, 4, 1, 5, 2), (1, 2, 6, 6), "DEPTH_TO_SPACE1", "DEPTH_COLUMN_ROW"),
]


@pytest.mark.parametrize(("shape", "first", "perm", "second", "operator", "order"), [pytest.param(*c[1:], id=c[0]) for c in SPACE_DEPTH_PATTERNS])
def test_reshape_transpose_reshape_patterns_become_one_space_depth_node(device: dmlpy.Device, shape: tuple[int, ...], first: tuple[int, ...], perm: tuple[int, ...],
                                                                       second: tuple[int, ...], operator: str, order: str) -> None:  # fmt: skip
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Reshape", ["r", "s1"], ["a"]),
        helper.make_node("Transpose", ["a"], ["b"], perm=list(perm)),
        helper.make_node("Reshape", ["b", "s2"], ["y"]),
    ]
    model = _graph(nodes, {"x": shape}, ["y"], {"s1": i64(*first), "s2": i64(*second)})
    x = f32(*shape)
    imported = dx.import_model(model, device=device)
    np.testing.assert_array_equal(imported.run({"x": x})["y"], ort_run(model, {"x": x})[0])
    types = [node.Desc.Operator.desc for node in imported.graph_desc.Nodes]
    kinds = [type(d).__name__ for d in types]
    assert kinds == ["DML_ACTIVATION_RELU_OPERATOR_DESC", f"DML_{operator}_OPERATOR_DESC"]
    assert types[1].Order.name == order


def test_import_node_lowers_the_one_desc_ops_and_sends_the_others_to_import_model() -> None:
    assert type(dx.import_node(helper.make_node("Relu", ["x"], ["y"]), [(1, 2, 3, 4)]).desc).__name__ == "DML_ACTIVATION_RELU_OPERATOR_DESC"
    with pytest.raises(dx.OnnxImportError) as error:
        dx.import_node(helper.make_node("Add", ["a", "b"], ["y"]), [(2, 3), (3,)])
    assert error.value.rule == "ONNX.UNSUPPORTED_OP" and "import_model" in str(error.value)


def test_graph_nodes_are_named_after_their_onnx_nodes() -> None:
    nodes = [helper.make_node("Exp", ["x"], ["e"], name="exp_node"), helper.make_node("Transpose", ["e"], ["y"], name="flip", perm=[1, 0])]
    imported = dx.import_model(_graph(nodes, {"x": (2, 3)}, ["y"]))
    assert [n.Desc.Name for n in imported.graph_desc.Nodes] == ["exp_node", "element_wise_identity1"]  # the output copy is the importer's own


FUSIONS = [  # (id, producer op, its inputs, attributes, activation, its attributes, the producer's DML desc)
    ("Gemm then Relu is one GEMM", "Gemm", [(X, f32(3, 4)), (C, f32(4, 5)), (C, f32(5))], {}, "Relu", {}, "DML_GEMM_OPERATOR_DESC"),
    ("MatMul then LeakyRelu is one GEMM", "MatMul", [(X, f32(2, 3, 4)), (C, f32(4, 5))], {}, "LeakyRelu", {"alpha": 0.2}, "DML_GEMM_OPERATOR_DESC"),
    ("Add then Relu is one ADD1", "Add", [(X, A4), (X, f32(5))], {}, "Relu", {}, "DML_ELEMENT_WISE_ADD1_OPERATOR_DESC"),
    ("BatchNormalization then Sigmoid is one BATCH_NORMALIZATION", "BatchNormalization", [(X, A4), (C, f32(3)), (C, f32(3)), (C, f32(3)), (C, f32(3, low=0.5, high=2))], {},
     "Sigmoid", {}, "DML_BATCH_NORMALIZATION_OPERATOR_DESC"),
    ("InstanceNormalization then Relu is one MEAN_VARIANCE_NORMALIZATION1", "InstanceNormalization", [(X, A4), (C, f32(3)), (C, f32(3))], {}, "Relu", {},
     "DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC"),
]


@pytest.mark.parametrize(("op", "inputs", "attributes", "activation", "act_attributes", "desc"), [pytest.param(*c[1:], id=c[0]) for c in FUSIONS])
def test_an_activation_that_alone_reads_a_fusable_node_is_its_fused_activation(device: dmlpy.Device, op: str, inputs: list[Any], attributes: dict[str, Any], activation: str,
                                                                                  act_attributes: dict[str, Any], desc: str) -> None:  # fmt: skip
    model, feeds = model_of(op, inputs, attributes, 17)
    model.graph.node[0].output[0] = "p"
    model.graph.node.append(helper.make_node(activation, ["p"], ["y0"], **act_attributes))
    imported = dx.import_model(model, device=device)
    np.testing.assert_allclose(imported.run(feeds)["y0"], ort_run(model, feeds)[0], **TOLERANCE)
    descs = [n.Desc.Operator.desc for n in imported.graph_desc.Nodes if hasattr(n.Desc, "Operator")]
    assert [type(d).__name__ for d in descs] == [desc]
    assert descs[0].FusedActivation is not None
    assert [n.fused_into for n in imported.nodes] == [None, imported.nodes[0].label]


def test_an_activation_is_not_fused_into_a_node_whose_output_is_also_read_elsewhere() -> None:
    model, feeds = model_of("Add", [(X, A4), (X, f32(5))], {}, 17)
    model.graph.node[0].output[0] = "p"
    model.graph.node.append(helper.make_node("Relu", ["p"], ["y0"]))
    model.graph.output.append(helper.make_empty_tensor_value_info("p"))
    imported = dx.import_model(model)
    got = imported.run(feeds)
    expected = ort_run(model, feeds)
    np.testing.assert_allclose(got["y0"], expected[0], **TOLERANCE)
    np.testing.assert_allclose(got["p"], expected[1], **TOLERANCE)
    assert "DML_ELEMENT_WISE_ADD1_OPERATOR_DESC" not in [type(n.Desc.Operator.desc).__name__ for n in imported.graph_desc.Nodes]


H = np.random.default_rng(16).uniform(-2, 2, (2, 3, 4, 5)).astype(np.float16)
FLOAT16 = [
    ("Add of float16 broadcasts", "Add", [(X, H), (C, H[0, 0, 0])], {}),
    ("MatMul of float16", "MatMul", [(X, H[0]), (C, H[0, 0].T.copy())], {}),
    ("Softmax of float16", "Softmax", [(X, H)], {}),
    ("Conv of float16", "Conv", [(X, H), (C, H[:, :, :3, :3].copy())], {}),
    ("ReduceMean of float16", "ReduceMean", [(X, H)], {"axes": [1]}),
    ("Resize linear of float16", "Resize", [(X, H), None, (C, np.array([1, 1, 2, 2], np.float32))], {"mode": "linear"}),
    ("LayerNormalization of float16", "LayerNormalization", [(X, H), (C, H[0, 0, 0]), (C, H[1, 1, 1])], {}),
]


@pytest.mark.parametrize(("op", "inputs", "attributes"), [pytest.param(*c[1:], id=c[0]) for c in FLOAT16])
def test_float16_models_agree_with_onnxruntime_to_float16_precision(device: dmlpy.Device, op: str, inputs: list[Any], attributes: dict[str, Any]) -> None:
    model, feeds = model_of(op, inputs, attributes, 17)
    got = dx.import_model(model, device=device).run(feeds)["y0"]
    expected = ort_run(model, feeds)[0]
    assert got.dtype == expected.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), expected.astype(np.float32), rtol=1e-2, atol=1e-2)  # binary16 keeps 11 bits


LEGACY_A = f32(2, 3, 4, 5)
LEGACY_B3, LEGACY_B45 = f32(3), f32(4, 5)
LEGACY_BROADCAST = [  # onnxruntime and onnx.reference no longer run opset-6 axis broadcasting: the Add-6 page's example, by hand
    ("Add-6 broadcast=1 axis=1 adds B of shape (3,) along A's axis 1", "Add", LEGACY_B3, {"broadcast": 1, "axis": 1}, LEGACY_A + LEGACY_B3.reshape(1, 3, 1, 1)),
    ("Mul-6 broadcast=1 aligns B of shape (4, 5) with the trailing axes", "Mul", LEGACY_B45, {"broadcast": 1}, LEGACY_A * LEGACY_B45),
]


@pytest.mark.parametrize(("op", "b", "attributes", "expected"), [pytest.param(*c[1:], id=c[0]) for c in LEGACY_BROADCAST])
def test_opset6_broadcast_attribute_aligns_b_from_axis(device: dmlpy.Device, op: str, b: np.ndarray, attributes: dict[str, Any], expected: np.ndarray) -> None:
    model, feeds = model_of(op, [(X, LEGACY_A), (C, b)], attributes, 6)
    np.testing.assert_allclose(dx.import_model(model, device=device).run(feeds)["y0"], expected, **TOLERANCE)


LOW_LEVELS = [  # (id, feature level, op, opset, inputs, attributes): 4-D padding and decompositions below the levels the *1 operators need
    ("Gemm at FL 3.0 reads its matrices as 4-D", "LEVEL_3_0", "Gemm", 13, [(X, f32(3, 4)), (C, f32(4, 5)), (C, f32(5))], {}),
    ("MatMul at FL 2.1 reads batches as 4-D", "LEVEL_2_1", "MatMul", 13, [(X, f32(2, 3, 4)), (C, f32(4, 5))], {}),
    ("Add of 2-D values at FL 2.1", "LEVEL_2_1", "Add", 14, [(X, f32(3, 4)), (X, f32(4))], {}),
    ("Concat of 2-D values at FL 2.1", "LEVEL_2_1", "Concat", 13, [(X, f32(3, 2)), (X, f32(3, 4))], {"axis": -1}),
    ("Softmax-13 over the last axis at FL 4.1 is SOFTMAX on a 2-D reading", "LEVEL_4_1", "Softmax", 13, [(X, A4)], {}),
    ("LayerNormalization of a 3-D value at FL 3.0", "LEVEL_3_0", "LayerNormalization", 17, [(X, f32(2, 3, 5)), (C, f32(5)), (C, f32(5))], {}),
    ("ReduceMean of a 3-D value at FL 2.1", "LEVEL_2_1", "ReduceMean", 13, [(X, f32(2, 3, 5))], {"axes": [1]}),
    ("Gather with negative indices at FL 2.1 (UINT32 indices)", "LEVEL_2_1", "Gather", 13, [(X, f32(5, 4)), (C, np.array([-1, 0, 2], np.int64))], {}),
    ("HardSwish below FL 6.2 is x * HARD_SIGMOID", "LEVEL_6_1", "HardSwish", 14, [(X, A4)], {}),
    ("Swish below FL 6.2 is x * SIGMOID(alpha * x)", "LEVEL_6_1", "Swish", 24, [(X, A4)], {"alpha": 0.7}),
    ("Swish at FL 6.4 is ACTIVATION_SWISH", "LEVEL_6_4", "Swish", 24, [(X, A4)], {"alpha": 0.7}),
    ("Gelu below FL 5.1 is x * (0.5 + 0.5 * erf(x / sqrt 2))", "LEVEL_5_0", "Gelu", 20, [(X, A4)], {}),
    ("ArgMax at FL 3.0, where ARGMAX arrived", "LEVEL_3_0", "ArgMax", 13, [(X, A4)], {"axis": 1}),
    ("Resize nearest floor at FL 5.0 is RESAMPLE1 with InputPixelOffsets + 0.5", "LEVEL_5_0", "Resize", 13, [(X, IMG), None, (C, np.array([1, 1, 1.5, 2.5], np.float32))],
     {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}),
]


@pytest.mark.parametrize(("level", "op", "opset", "inputs", "attributes"), [pytest.param(*c[1:], id=c[0]) for c in LOW_LEVELS])
def test_lower_feature_levels_agree_with_onnxruntime(backend: str, level: str, op: str, opset: int, inputs: list[Any], attributes: dict[str, Any]) -> None:
    model, feeds = model_of(op, inputs, attributes, opset)
    device = dmlpy.create_device(dmlpy.DML_FEATURE_LEVEL[level], backend=backend)
    got = dx.import_model(model, device=device).run(feeds)["y0"]
    expected = ort_run(model, feeds)[0]
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, **TOLERANCE)


def test_nearest_modes_that_round_up_need_resample2() -> None:
    model, _ = model_of("Resize", [(X, IMG), None, (C, np.array([1, 1, 2, 2], np.float32))], {"mode": "nearest"}, 13)  # round_prefer_floor
    with pytest.raises(dx.OnnxImportError) as error:
        dx.import_model(model, feature_level=dmlpy.DML_FEATURE_LEVEL.LEVEL_5_0)
    assert error.value.rule == "ONNX.FEATURE_LEVEL" and error.value.attribute == "nearest_mode"


def test_run_fixes_inputs_that_only_parameter_slots_read_as_constants(device: dmlpy.Device) -> None:
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["r"]), helper.make_node("Slice", ["r", "starts", "ends"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (2, 6)), helper.make_tensor_value_info("shape", TensorProto.INT64, (2,)),
                                           helper.make_tensor_value_info("starts", TensorProto.INT64, (1,)), helper.make_tensor_value_info("ends", TensorProto.INT64, (1,))],
                              [helper.make_empty_tensor_value_info("y")])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    feeds = {"x": f32(2, 6), "shape": i64(3, 4), "starts": i64(1), "ends": i64(3)}
    np.testing.assert_array_equal(dx.run(model, feeds, device=device)["y"], ort_run(model, feeds)[0])
    assert dx.validate(model, input_shapes={"x": (2, 6)}, constant_inputs={"shape": i64(3, 4), "starts": i64(1), "ends": i64(3)}).ok
    with pytest.raises(dx.OnnxImportError) as error:  # without the values, the shape is a run-time parameter
        dx.import_model(model, input_shapes={"shape": (2,), "starts": (1,), "ends": (1,)})
    assert error.value.rule == "ONNX.UNSUPPORTED_ATTRIBUTE"
