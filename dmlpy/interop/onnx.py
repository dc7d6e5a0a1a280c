"""ONNX -> DirectML: an ONNX node becomes DML operator descs, an ONNX model becomes a DML graph.

    import dmlpy.interop.onnx as dml_onnx

    imported = dml_onnx.import_model("decoder.onnx")     # a compiled DML graph
    outputs = imported.run({"x": x})                       # {"y": ndarray}, ONNX shapes
    dml_onnx.run("decoder.onnx", {"x": x})                 # the same in one call
    dml_onnx.validate("decoder.onnx")                      # a dmlpy.Report, nothing raised
    node = dml_onnx.import_node(node_proto, [(1, 3, 8, 8)]) # node.desc: the DML operator desc

``onnx`` is an optional dependency (``pip install dmlpy[onnx]``): it is imported by the
functions that read ONNX protos, never at module import.

Operators (onnxruntime's DirectML provider's mapping; the ONNX operator pages, per opset). The
first block is lowered node by node (the versions listed); the rest goes through GraphBuilder
methods at every version the installed onnx defines:

=================================  =======================  =========================================
ONNX                               versions                 DirectML
=================================  =======================  =========================================
AveragePool                        1, 7, 10, 11, 19, 22     AVERAGE_POOLING; AVERAGE_POOLING1 (FL 6.2)
                                                            when a dilation is not 1
GlobalAveragePool                  1, 22                    AVERAGE_POOLING, window = the spatial sizes
Conv                               1, 11, 22                CONVOLUTION {CROSS_CORRELATION, FORWARD}
ConvTranspose                      1, 11, 22                CONVOLUTION {CROSS_CORRELATION, BACKWARD}
SpaceToDepth                       1, 13, 28 (``mode``)     SPACE_TO_DEPTH1 (SPACE_TO_DEPTH below 2.1)
DepthToSpace                       1, 11, 13, 28            DEPTH_TO_SPACE1 (DEPTH_TO_SPACE below 2.1)
Relu, LeakyRelu, Sigmoid           all                      the FusedActivation of the Conv, ConvTranspose,
                                                            Gemm, MatMul, Add (ADD1), BatchNormalization or
                                                            InstanceNormalization that alone feeds them;
                                                            else ACTIVATION_RELU/LEAKY_RELU/SIGMOID
Add Sub Mul Div Pow Mod            all                      ELEMENT_WISE_ADD/SUBTRACT/MULTIPLY/DIVIDE/
                                                            POW/MODULUS_TRUNCATE|FLOOR, broadcast by
                                                            zero strides
Max Min Sum Mean (variadic)        all                      ELEMENT_WISE_MAX/MIN/ADD pairwise; Mean
                                                            scales by 1/n (IDENTITY ScaleBias)
Equal Less Greater LessOrEqual     all                      ELEMENT_WISE_LOGICAL_* (UINT8 for bool)
GreaterOrEqual And Or Xor Not
Where                              all                      ELEMENT_WISE_IF
Sqrt Reciprocal Exp Log Abs Neg    all                      ELEMENT_WISE_SQRT/RECIP/EXP/LOG/ABS/NEGATE/
Erf Tanh Floor Ceil Sin Cos Tan                             ERF/TANH/...
Asin Acos Atan Sinh Cosh Asinh
Acosh Atanh Sign IsNaN BitwiseNot
BitwiseAnd BitwiseOr BitwiseXor
Clip                               6 (attrs), 11+ (inputs)  ELEMENT_WISE_CLIP1 (CLIP below FL 5.0)
Swish                              all                      ACTIVATION_SWISH (FL 6.2; x * SIGMOID below)
HardSigmoid HardSwish Elu Selu     all                      ACTIVATION_HARD_SIGMOID/HARD_SWISH/ELU/
Celu Softplus Softsign PRelu                                SCALED_ELU/CELU/SOFTPLUS/SOFTSIGN/
ThresholdedRelu Shrink Gelu                                 PARAMETERIZED_RELU/THRESHOLDED_RELU/SHRINK/
                                                            GELU (approximate="none" only)
Softmax LogSoftmax Hardmax         all (below 13: the axes  ACTIVATION_SOFTMAX1/LOG_SOFTMAX1/HARDMAX1
                                   from ``axis`` on)
Gemm, MatMul                       all                      GEMM (batch dims broadcast, at most 4-D)
MaxPool, GlobalMaxPool             all                      MAX_POOLING; MAX_POOLING2 for Indices or
                                                            dilations (storage_order 0)
BatchNormalization                 all (inference)          BATCH_NORMALIZATION
InstanceNormalization, LayerNorm-  all                      MEAN_VARIANCE_NORMALIZATION1 (GroupNormalization
alization, MeanVarianceNormaliza-                           over x read as {N, G, C/G, spatial})
tion, GroupNormalization
LRN                                all                      LOCAL_RESPONSE_NORMALIZATION (CrossChannel;
                                                            any rank read as {N, C, 1, rest})
LpPool, GlobalLpPool               all (integer p)          LP_POOLING; LP_POOLING1 when dilated
LpNormalization                    all                      LP_NORMALIZATION (Epsilon 1e-5)
ReduceMean/Sum/Max/Min/Prod/L1/L2  all (axes attribute or   REDUCE (keepdims 0: a reinterpretation)
LogSum/LogSumExp/SumSquare         input)
ArgMax, ArgMin                     all                      ARGMAX/ARGMIN (UINT64 read as INT64)
TopK                               all (k attribute or K    TOP_K1 (TOP_K below 2.1); UINT64 indices
                                   input, a constant)       read as INT64 (UINT32 and a CAST below 5.0)
CumSum, CumProd                    all (a constant axis)    CUMULATIVE_SUMMATION / CUMULATIVE_PRODUCT
OneHot                             all (a constant depth)   ONE_HOT (float indices: a CAST to INT32)
ScatterElements, Scatter,          all (reduction none)     SCATTER, SCATTER_ND
ScatterND
QuantizeLinear, DequantizeLinear   all (per tensor, axis)   ELEMENT_WISE_QUANTIZE_LINEAR/DEQUANTIZE_LINEAR
Concat, Split, Slice, Pad, Cast,   all                      JOIN, SPLIT (SLICE1 per used output when
CastLike                                                    some are unused), SLICE1, PADDING1, CAST
Gather, GatherElements, GatherND   all                      GATHER, GATHER_ELEMENTS, GATHER_ND(1)
Resize, Upsample                   all (nearest, linear)    RESAMPLE3 (RESAMPLE2 from 5.1, RESAMPLE1)
Tile                               all                      ELEMENT_WISE_IDENTITY over a zero-stride view
Reshape Flatten Squeeze Unsqueeze  all                      no node: the same bytes with new sizes
Identity Dropout (inference)
Transpose, Expand                  all                      no node: permuted / zero strides, read by
                                                            the consumer; a copy only where a reshape
                                                            or graph output needs packed bytes
Reshape-Transpose-Reshape (4-D)    -                        SPACE_TO_DEPTH1 / DEPTH_TO_SPACE1 (CRD for
                                                            torch's PixelUnshuffle/PixelShuffle)
Constant ConstantOfShape Shape     all                      folded at import (onnx.reference on a one-
Size, any node on known inputs                              node model); never a node
=================================  =======================  =========================================

Everything else raises ``ONNX.UNSUPPORTED_OP`` (``ONNX.NOT_EMULATED`` when the DirectML
operator onnxruntime's provider uses for it, ``NEEDS``, is one dmlpy describes but cannot run).

Decisions (each one is a test in tests/interop/test_onnx_import.py):

* **1-D operators are lifted to 4-D**, as onnxruntime's DirectML EP does: every rank-3 value
  ``{N, C, W}`` is described as ``{N, C, 1, W}`` (the same bytes), and the spatial arrays get a
  leading entry (window 1, stride 1, padding 0, dilation 1). DirectML accepts 3-D tensors only
  for CONVOLUTION and only from FL 4.0; pooling and space/depth never do. Lifting everything
  keeps every intermediate 4-D, works at every feature level and lets a 1-D convolution feed a
  1-D pool. ``ImportedModel.run`` reshapes at the boundary; ``ImportedModel.program`` (the raw
  GraphProgram) takes and returns the lifted shapes.
* **Padding and output sizes are ONNX's.** auto_pad SAME_UPPER/SAME_LOWER: output
  ``ceil(in / s)``, total padding ``max(0, (out - 1) * s + keff - in)``, the odd element at the
  end (UPPER) or the start (LOWER). VALID: no padding; ``ceil_mode`` then still applies (ONNX's
  shape inference and onnxruntime agree; the VALID line of the AveragePool page's formula
  list does not, and AveragePool-11's SAME line says ``floor(in / s)`` where its attribute text
  says ``ceil(in / s)``: the attribute text wins).
* **ceil_mode** enlarges the output tensor and keeps the padding, as DirectML's callers do
  (DirectML has no rounding field; onnxruntime's DirectML provider). The extra window must start inside input +
  start padding (PyTorch's rule, which ONNX adopted). Its divisor is DirectML's: with
  IncludePadding TRUE, the taps inside the padded input (docs/deviations.md). That is what
  onnxruntime's CPU kernel and PyTorch compute (onnx.reference too for a one-element overhang;
  it spreads a longer one over both ends, which shifts its windows); a full-window reading of
  ONNX's "divided by the number of elements" (and older onnxruntime releases, onnxruntime
  issue #16203) divides by the whole kernel. ``ONNX.CEIL_MODE_DIVISOR`` names each such
  window and the exact alternative: add the overhang to EndPadding (IncludePadding TRUE, the
  output sizes unchanged), which ``ceil_mode_divisor="full_window"`` does for you.
* **ConvTranspose** follows the ONNX definition, not onnxruntime's DirectML EP (docs/deviations.md):
  with ``output_shape``, ``total = s * (in - 1) + output_padding + keff - output_shape``;
  split ``start = total / 2`` for SAME_UPPER and ``start = total - total / 2`` otherwise
  (ConvTranspose-11 and -22). ConvTranspose-1's formula puts the odd element at the end for
  NOTSET, and dmlpy follows it for opset 1-10 models (onnxruntime applies the opset-11 split
  to every opset: ``ONNX.CONV_TRANSPOSE_PADS_SPLIT`` says so when the total is odd). For
  SAME_* without ``output_shape`` the output is ``in * s``; when the kernel is too short for
  that, the padding stays 0 and the output is the natural size (padding is never negative; ONNX's
  shape inference and onnxruntime give the same). ``output_padding`` only adds computed positions at the end: DirectML's
  OutputPadding stays 0 and the output tensor is enlarged (the DML_CONVOLUTION_OPERATOR_DESC page, as every DirectML
  caller does), so it must be below the stride. An ``output_shape`` past the full extent is
  read the same way (extra computed positions at the end, pads 0).
* **Initializers** become CONSTANT graph nodes (``weights="constant"``, FL 6.2) or
  OWNED_BY_DML graph inputs bound at initialization (``weights="owned"``); ``"auto"`` (the
  default) picks constants when the device's feature level has them. Filters keep ONNX's
  layout (FORWARD ``{M, C/g, k...}``, BACKWARD ``{C, M/g, k...}``); a bias ``{M}`` is
  described as ``{1, M, 1, 1}``.
* Where onnxruntime (1.31, CPU) departs from the ONNX pages, dmlpy follows ONNX; the tests
  compare with onnxruntime everywhere else: an AveragePool window wholly in padding without
  count_include_pad is NaN here (0/0, docs/deviations.md; onnxruntime gives 0); AveragePool SAME_*
  pads with the dilated kernel (onnxruntime and onnx.reference use the undilated one) and never
  negatively (onnxruntime raises or shifts the windows when the kernel is shorter than the
  stride); Conv SAME_* with dilations is mapped (onnxruntime refuses it); ConvTranspose-1..10's
  odd split (above).
* **Shapes come from ONNX's shape inference** (``onnx.shape_inference.infer_shapes`` with
  ``data_prop=True``) on the model with ``input_shapes`` fixed, so ``validate`` still checks the
  nodes after an unsupported one, and **constants are folded** before mapping: a parameter
  DirectML takes as a desc field (Reshape's shape, Slice's starts, Resize's scales, Pad's pads)
  must be an initializer or computable from constants and shapes (``ONNX.UNSUPPORTED_ATTRIBUTE``
  with E_NOTIMPL otherwise). ONNX bool values are UINT8 (0 or 1) in DirectML. Values of any rank
  1-8 (a scalar is ``{1}``); ops that want 4-D get leading or trailing 1s (the same bytes).
* **Layout-only ops are views**: a DML graph edge may join tensors of different sizes with equal
  TotalTensorSizeInBytes (the DML_GRAPH_DESC page), so Reshape and friends are a new Sizes array
  over the producer's bytes, a Transpose is permuted Strides read by its consumer, Expand is
  zero Strides. A strided view that must become packed (reshaped again, or a graph output) is
  copied once by ELEMENT_WISE_IDENTITY; a graph output that is a graph input or a constant too.
* Unsupported operators, versions, attributes, types and shapes raise ``OnnxImportError``
  (a ``DmlError``) whose findings carry ``ONNX.*`` rule ids and name the node (index and
  name), its op type and version, and the attribute. A mapped desc that DirectML would reject
  raises with DirectML's own findings, prefixed by the node. ``validate`` reports every
  unsupported (or not emulated) op type once, naming all its nodes.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dmlpy.builder import GraphBuilder, GraphProgram, Tensor
from dmlpy.device import Device, create_device
from dmlpy.device import run as run_desc
from dmlpy.device import validate as validate_desc
from dmlpy.enums import (
    DML_AXIS_DIRECTION,
    DML_CONVOLUTION_DIRECTION,
    DML_CONVOLUTION_MODE,
    DML_DEPTH_SPACE_ORDER,
    DML_FEATURE_LEVEL,
    DML_INTERPOLATION_MODE,
    DML_TENSOR_FLAGS,
    HRESULT,
    c_name,
)
from dmlpy.errors import DmlError, DmlWarning, Finding, Report, Severity
from dmlpy.operators.activation import (
    DML_ACTIVATION_LEAKY_RELU_OPERATOR_DESC,
    DML_ACTIVATION_RELU_OPERATOR_DESC,
    DML_ACTIVATION_SIGMOID_OPERATOR_DESC,
    FusedActivation,
)
from dmlpy.operators.convolution import DML_CONVOLUTION_OPERATOR_DESC
from dmlpy.operators.pooling import (
    DML_AVERAGE_POOLING1_OPERATOR_DESC,
    DML_AVERAGE_POOLING_OPERATOR_DESC,
    ceil_shape_allowed,
    taps_inside,
)
from dmlpy.operators.space_depth import (
    DML_DEPTH_TO_SPACE1_OPERATOR_DESC,
    DML_DEPTH_TO_SPACE_OPERATOR_DESC,
    DML_SPACE_TO_DEPTH1_OPERATOR_DESC,
    DML_SPACE_TO_DEPTH_OPERATOR_DESC,
)
from dmlpy.rules import rule
from dmlpy.tensor import DML_TENSOR_DESC, as_data_type, buffer_tensor, numpy_dtype

FL = DML_FEATURE_LEVEL

# ---------------------------------------------------------------------------------------
# Rules (docs/rules.md lists them with every other rule)

_SPEC = "onnx.ai/onnx/operators (per opset)"
UNSUPPORTED_OP = rule("ONNX.UNSUPPORTED_OP", "Every node is a default-domain operator the importer maps (the module docstring's table); validate reports one finding per op type, naming its nodes and the DirectML operator it would need.", source="docs/deviations.md", severity=Severity.ERROR)
NOT_EMULATED_RULE = rule("ONNX.NOT_EMULATED", "A node whose DirectML operator dmlpy describes and validates but cannot run yet (DirectML would accept it): its own finding, and its own CLI exit code, apart from what DirectML would reject.", source="docs/deviations.md", severity=Severity.ERROR)
UNSUPPORTED_ATTRIBUTE = rule("ONNX.UNSUPPORTED_ATTRIBUTE", "Every attribute value is one the DirectML mapping can express (for example ConvTranspose output_padding below the stride).", source="the DML_CONVOLUTION_OPERATOR_DESC page and onnxruntime's DirectML provider")
INVALID_ATTRIBUTE = rule("ONNX.INVALID_ATTRIBUTE", "Every attribute is one the operator's version defines, of its type, with a valid value (lengths, ranges, required attributes).", source=_SPEC)
UNSUPPORTED_TYPE = rule("ONNX.UNSUPPORTED_TYPE", "Every element type has a DirectML data type.", source="the DML_TENSOR_DATA_TYPE page")
UNSUPPORTED_EMPTY_TENSOR = rule(
    "ONNX.UNSUPPORTED_EMPTY_TENSOR",
    "Every value a mapped node reads or writes has at least one element: DML_BUFFER_TENSOR_DESC Sizes are all at least 1, so an empty "
    "tensor has no DirectML form (onnxruntime's DirectML provider leaves such a node to its CPU provider; fallback='onnxruntime' does too).",
    source="the DML_BUFFER_TENSOR_DESC page",
)
SHAPE = rule("ONNX.SHAPE", "Every value has a static shape that the operator accepts (rank, kernel, bias and output_shape lengths, declared sizes).", source=_SPEC)
UNSUPPORTED_GRAPH = rule("ONNX.UNSUPPORTED_GRAPH", "The graph is one a DML_GRAPH_DESC can say: a default-domain opset, nodes in topological order, outputs produced by nodes.", source="the DML_GRAPH_DESC page")
FEATURE_LEVEL_RULE = rule("ONNX.FEATURE_LEVEL", "What a mapping needs is in the device's feature level: graphs 2.1, CONSTANT nodes 6.2, AVERAGE_POOLING1 (dilations) 6.2, the CRD order 2.1.", source="the DML_FEATURE_LEVEL page")
CEIL_MODE_DIVISOR = rule(
    "ONNX.CEIL_MODE_DIVISOR",
    "AveragePool with ceil_mode=1 and count_include_pad=1: a window that overhangs the padded input is divided by its taps inside the padded input (DirectML, onnxruntime, PyTorch), not by the full kernel; add the overhang to EndPadding for the full-window divisor.",
    source="docs/deviations.md; onnxruntime's DirectML provider; onnxruntime issue #16203",
    severity=Severity.WARNING,
)
CONV_TRANSPOSE_PADS_SPLIT = rule(
    "ONNX.CONV_TRANSPOSE_PADS_SPLIT",
    "ConvTranspose before opset 11 with output_shape and an odd total padding: ConvTranspose-1's formula and ConvTranspose-11's (which onnxruntime applies to every opset) put the odd element at opposite ends.",
    source="ONNX ConvTranspose-1 and -11 pages",
    severity=Severity.WARNING,
)
DECLARED_SHAPE = rule("ONNX.DECLARED_SHAPE", "A shape the model declares (value_info, graph outputs) equals the shape ONNX's definition gives.", source=_SPEC, severity=Severity.WARNING)

# ---------------------------------------------------------------------------------------
# What is supported

SUPPORTED_VERSIONS: dict[str, tuple[int, ...]] = {
    "AveragePool": (1, 7, 10, 11, 19, 22),
    "GlobalAveragePool": (1, 22),
    "Conv": (1, 11, 22),
    "ConvTranspose": (1, 11, 22),
    "SpaceToDepth": (1, 13, 28),
    "DepthToSpace": (1, 11, 13, 28),
    "Relu": (1, 6, 13, 14),
    "LeakyRelu": (1, 6, 16),
    "Sigmoid": (1, 6, 13),
}
ACTIVATIONS = ("Relu", "LeakyRelu", "Sigmoid")
# DirectML fuses ELEMENT_WISE_CLIP into CONVOLUTION and GEMM from DML_FEATURE_LEVEL_6_0: a Clip (ReLU6) with constant
# bounds that alone reads one of these becomes its FusedActivation.
CLIP_HOSTS = frozenset({"Conv", "ConvTranspose", "Gemm", "MatMul"})
CONVOLUTIONS = ("Conv", "ConvTranspose")
IGNORED_ATTRIBUTES = frozenset({"consumed_inputs"})  # opset-1 activations: a legacy in-place hint
WEIGHTS_MODES = ("auto", "constant", "owned")
CEIL_MODE_DIVISORS = ("padded", "full_window")


def _require_onnx() -> Any:
    try:
        import onnx  # optional dependency: imported where it is needed
    except ImportError as error:  # pragma: no cover - exercised only without the extra
        msg = "dmlpy.interop.onnx needs the onnx package: pip install dmlpy[onnx]"
        raise ImportError(msg) from error
    return onnx


# ---------------------------------------------------------------------------------------
# Errors


class OnnxImportError(DmlError):
    """An ONNX node or model the importer cannot map, or whose DML desc DirectML would reject.

    ``findings`` carry the rule ids (``ONNX.*``, or DirectML's own such as
    ``POOLING.WINDOW_LARGER_THAN_INPUT``); ``node_index``, ``node_name``, ``op_type`` and
    ``attribute`` say where.
    """

    def __init__(self, hresult: HRESULT, findings: Sequence[Finding], summary: str, *, node: _NodeInfo | None = None, attribute: str | None = None) -> None:
        self.node_index = node.index if node is not None else None
        self.node_name = node.name if node is not None else None
        self.op_type = node.op_type if node is not None else None
        self.attribute = attribute
        super().__init__(hresult, list(findings), summary)


@dataclass
class _NodeInfo:
    """A node as the importer reads it: where it is, what it is, its attributes."""

    index: int
    name: str
    op_type: str
    version: int
    attributes: dict[str, Any]
    domain: str = ""

    @property
    def where(self) -> str:
        named = f" '{self.name}'" if self.name else ""
        version = f"-{self.version}" if self.version else ""
        return f"graph.node[{self.index}]{named} ({self.op_type}{version})"

    @property
    def label(self) -> str:
        return self.name or f"{self.op_type}_{self.index}"


def _finding(rule_: Any, node: _NodeInfo | None, attribute: str | None, message: str, expected: Any = None, actual: Any = None) -> Finding:
    path = node.where if node is not None else "graph"
    if attribute:
        path += f".{attribute}"
    return Finding(rule_.id, rule_.severity, path, expected, actual, message)


def _fail(rule_: Any, node: _NodeInfo | None, attribute: str | None, message: str, *, expected: Any = None, actual: Any = None, hresult: HRESULT = HRESULT.E_INVALIDARG) -> OnnxImportError:
    """The error to raise: one finding, and a summary that names node, op and attribute."""
    finding = _finding(rule_, node, attribute, message, expected, actual)
    where = node.where if node is not None else "the graph"
    what = f" attribute '{attribute}'" if attribute else ""
    return OnnxImportError(hresult, [finding], f"{where}{what}: {message}", node=node, attribute=attribute)


@dataclass
class _Options:
    feature_level: DML_FEATURE_LEVEL
    ceil_mode_divisor: str = "padded"
    strict: bool = False


class _Warnings:
    """Importer warnings: kept as findings and raised as DmlWarning (as errors on a strict device)."""

    def __init__(self, strict: bool = False) -> None:
        self.strict = strict
        self.findings: list[Finding] = []

    def report(self, rule_: Any, node: _NodeInfo | None, attribute: str | None, message: str, expected: Any = None, actual: Any = None) -> None:
        finding = _finding(rule_, node, attribute, message, expected, actual)
        if self.strict:
            raise OnnxImportError(HRESULT.E_INVALIDARG, [finding], f"{finding.path}: {message} (a warning, made an error by strict=True)", node=node, attribute=attribute)
        self.findings.append(finding)
        warnings.warn(DmlWarning(finding), stacklevel=_user_stacklevel())


def _user_stacklevel() -> int:
    """The stacklevel that makes a warning point at the first caller outside dmlpy."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(1), 1  # the cheapest way to find the user's line
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1  # type: ignore[assignment]
    return level


# ---------------------------------------------------------------------------------------
# Shapes: ONNX shapes, and the DML sizes that describe the same bytes


def lifted(shape: Sequence[int]) -> tuple[int, ...]:
    """The DML sizes of an ONNX value: rank 3 ``{N, C, W}`` becomes ``{N, C, 1, W}``; others unchanged."""
    shape = tuple(int(s) for s in shape)
    return (shape[0], shape[1], 1, shape[2]) if len(shape) == 3 else shape


def _bias_sizes(channels: int, rank: int) -> tuple[int, ...]:
    """A 1-D bias {M} as DML's {1, M, 1, ...} with the (lifted) output's rank."""
    return (1, channels) + (1,) * (max(rank, 4) - 2)


def _lift_spatial(values: Sequence[int], fill: int) -> tuple[int, ...]:
    """A spatial array of a 1-D op gets a leading entry for the unit H axis."""
    values = tuple(int(v) for v in values)
    return (fill, *values) if len(values) == 1 else values


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _same_padding(size: int, stride: int, keff: int, mode: str) -> tuple[int, int]:
    """ONNX auto_pad SAME_*: output ceil(in / s), total max(0, (out - 1) * s + keff - in); the odd element at the end (UPPER) or start (LOWER)."""
    out = _ceil_div(size, stride)
    total = max(0, (out - 1) * stride + keff - size)
    start = total // 2 if mode == "SAME_UPPER" else total - total // 2
    return start, total - start


# ---------------------------------------------------------------------------------------
# Attributes


def _attributes(onnx: Any, proto: Any, node: _NodeInfo, schema: Any) -> dict[str, Any]:
    """The node's attributes as Python values, checked against the operator version's schema."""
    values: dict[str, Any] = {}
    defined = dict(schema.attributes) if schema is not None else {}
    for attribute in proto.attribute:
        name = attribute.name
        if name not in defined:
            known = ", ".join(sorted(defined)) or "none"
            raise _fail(INVALID_ATTRIBUTE, node, name, f"{node.op_type}-{node.version} has no attribute '{name}' (its attributes: {known})", expected=sorted(defined), actual=name)
        expected_type = defined[name].type
        if attribute.type != expected_type:
            type_name = onnx.AttributeProto.AttributeType.Name
            raise _fail(INVALID_ATTRIBUTE, node, name, f"is of type {type_name(attribute.type)}, but {node.op_type}-{node.version} defines it as {type_name(expected_type)}",
                        expected=type_name(expected_type), actual=type_name(attribute.type))  # fmt: skip
        value = onnx.helper.get_attribute_value(attribute)
        if isinstance(value, bytes):
            value = value.decode("utf-8")
        elif isinstance(value, list):
            value = [v.decode("utf-8") if isinstance(v, bytes) else v for v in value]
        values[name] = value
    for name, definition in defined.items():
        if definition.required and name not in values:
            raise _fail(INVALID_ATTRIBUTE, node, name, f"is required by {node.op_type}-{node.version} and missing", expected="present", actual="missing")
    return values


def _ints(node: _NodeInfo, name: str, count: int, default: int, *, minimum: int) -> tuple[int, ...]:
    """An INTS attribute with ``count`` entries (the default repeated when absent), each >= ``minimum``."""
    value = node.attributes.get(name)
    if value is None:
        return (default,) * count
    value = tuple(int(v) for v in value)
    if len(value) != count:
        raise _fail(INVALID_ATTRIBUTE, node, name, f"has {len(value)} entries, expected {count} (one per spatial axis)" if name != "pads" else f"has {len(value)} entries, expected {count} (begin and end for each spatial axis)",
                    expected=count, actual=len(value))  # fmt: skip
    bad = [v for v in value if v < minimum]
    if bad:
        raise _fail(INVALID_ATTRIBUTE, node, name, f"is {list(value)}, but every entry must be at least {minimum}", expected=f">= {minimum}", actual=list(value))
    return value


def _choice(node: _NodeInfo, name: str, default: str, allowed: Sequence[str]) -> str:
    value = node.attributes.get(name, default)
    if value not in allowed:
        raise _fail(INVALID_ATTRIBUTE, node, name, f"is {value!r}, expected one of {', '.join(allowed)}", expected=list(allowed), actual=value)
    return str(value)


def _flag(node: _NodeInfo, name: str) -> bool:
    value = node.attributes.get(name, 0)
    if value not in (0, 1):
        raise _fail(INVALID_ATTRIBUTE, node, name, f"is {value}, expected 0 or 1", expected=[0, 1], actual=value)
    return bool(value)


def _forward_padding(mode: str, pads: Sequence[int], sizes: Sequence[int], strides: Sequence[int], keff: Sequence[int]) -> tuple[list[int], list[int]]:
    """Start and end padding of a forward window (AveragePool, Conv) under ONNX auto_pad ``mode``."""
    spatial = len(sizes)
    if mode in ("SAME_UPPER", "SAME_LOWER"):
        split = [_same_padding(n, s, e, mode) for n, s, e in zip(sizes, strides, keff, strict=True)]
        return [p[0] for p in split], [p[1] for p in split]
    if mode == "VALID":
        return [0] * spatial, [0] * spatial
    return list(pads[:spatial]), list(pads[spatial:])


def _auto_pad(node: _NodeInfo) -> str:
    mode = _choice(node, "auto_pad", "NOTSET", ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"))
    pads = node.attributes.get("pads")
    if mode != "NOTSET" and pads is not None and any(pads):
        raise _fail(INVALID_ATTRIBUTE, node, "pads", f"is {list(pads)}, but explicit pads cannot be used with auto_pad={mode} (ONNX: not both)", expected="absent or zeros", actual=list(pads))
    return mode


# ---------------------------------------------------------------------------------------
# Lowering: one ONNX node -> DML descs


@dataclass
class _Input:
    """What the lowering knows of one ONNX input: its shape, data type and DML flags."""

    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    flags: DML_TENSOR_FLAGS = DML_TENSOR_FLAGS.NONE


@dataclass
class _Lowered:
    desc: Any
    inputs: dict[str, int]  # desc input field -> ONNX input index
    output_shape: tuple[int, ...]
    dml_sizes: dict[str, tuple[int, ...]]  # desc input field -> the DML sizes that describe the ONNX input


def _tensor(inp: _Input, sizes: Sequence[int]) -> DML_TENSOR_DESC:
    return buffer_tensor(as_data_type(_dml_dtype(inp.dtype)), sizes, flags=inp.flags)


def _spatial_rank(node: _NodeInfo, shape: Sequence[int], allowed: Sequence[int], what: str) -> int:
    if len(shape) not in allowed:
        ranks = ", ".join(str(r) for r in allowed)
        raise _fail(SHAPE, node, None, f"input X has shape {tuple(shape)} (rank {len(shape)}); {what} maps ranks {ranks} onto DirectML", expected=list(allowed), actual=len(shape))
    return len(shape) - 2


def _lower_average_pool(node: _NodeInfo, inputs: list[_Input | None], options: _Options, log: _Warnings) -> _Lowered:
    x = _required(node, inputs, 0, "X")
    spatial = _spatial_rank(node, x.shape, (3, 4, 5), "AveragePool")
    kernel = _ints(node, "kernel_shape", spatial, 1, minimum=1)
    strides = _ints(node, "strides", spatial, 1, minimum=1)
    dilations = _ints(node, "dilations", spatial, 1, minimum=1)
    pads = _ints(node, "pads", 2 * spatial, 0, minimum=0)
    mode = _auto_pad(node)
    ceil_mode = _flag(node, "ceil_mode")
    include_padding = _flag(node, "count_include_pad")
    sizes = x.shape[2:]
    keff = [(k - 1) * d + 1 for k, d in zip(kernel, dilations, strict=True)]
    start, end = _forward_padding(mode, pads, sizes, strides, keff)
    out = []
    for i in range(spatial):
        padded = sizes[i] + start[i] + end[i]
        if keff[i] > padded:
            raise _fail(INVALID_ATTRIBUTE, node, "kernel_shape", f"spans {keff[i]} elements along spatial axis {i}, more than the padded input {sizes[i]} + {start[i]} + {end[i]} = {padded}", expected=f"<= {padded}", actual=keff[i])
        size = (padded - keff[i]) // strides[i] + 1
        if ceil_mode and ceil_shape_allowed(sizes[i], kernel[i], strides[i], start[i], end[i], dilations[i]):
            size += 1
        out.append(size)
    if ceil_mode and include_padding:
        end = _ceil_divisor(node, options, log, sizes, kernel, strides, dilations, start, end, out)
    dilated = any(d != 1 for d in dilations)
    if dilated and options.feature_level < FL.LEVEL_6_2:
        raise _fail(FEATURE_LEVEL_RULE, node, "dilations", f"is {list(dilations)}: a dilated average pool needs DML_AVERAGE_POOLING1_OPERATOR_DESC, which arrived in DML_FEATURE_LEVEL_6_2; the device targets {c_name(options.feature_level)}",
                    expected=FL.LEVEL_6_2, actual=options.feature_level, hresult=HRESULT.E_NOTIMPL)  # fmt: skip
    output_shape = (x.shape[0], x.shape[1], *out)
    common: dict[str, Any] = {
        "InputTensor": _tensor(x, lifted(x.shape)),
        "OutputTensor": _tensor(x, lifted(output_shape)),
        "DimensionCount": max(spatial, 2),
        "Strides": _lift_spatial(strides, 1),
        "WindowSize": _lift_spatial(kernel, 1),
        "StartPadding": _lift_spatial(start, 0),
        "EndPadding": _lift_spatial(end, 0),
        "IncludePadding": include_padding,
    }
    desc: Any = DML_AVERAGE_POOLING1_OPERATOR_DESC(Dilations=_lift_spatial(dilations, 1), **common) if dilated else DML_AVERAGE_POOLING_OPERATOR_DESC(**common)
    return _Lowered(desc, {"InputTensor": 0}, output_shape, {"InputTensor": lifted(x.shape)})


def _ceil_divisor(node: _NodeInfo, options: _Options, log: _Warnings, sizes: Sequence[int], kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int],
                  start: Sequence[int], end: Sequence[int], out: Sequence[int]) -> list[int]:  # fmt: skip
    """ceil_mode with count_include_pad: name the windows whose divisor the two readings disagree on, or extend EndPadding (``full_window``)."""
    end = list(end)
    notes = []
    for i, size in enumerate(sizes):
        keff = (kernel[i] - 1) * dilations[i] + 1
        overhang = (out[i] - 1) * strides[i] + keff - (size + start[i] + end[i])
        if overhang <= 0:
            continue
        if options.ceil_mode_divisor == "full_window":
            end[i] += overhang
            continue
        last = out[i] - 1
        covered = taps_inside(last, size, kernel[i], strides[i], start[i], dilations[i], -start[i], size + end[i])
        lifted_axis = i + (1 if len(sizes) == 1 else 0)
        notes.append((i, last, covered, kernel[i], overhang, lifted_axis, end[i]))
    if notes:
        parts = [
            f"along spatial axis {i} the last window (output {last}) overhangs the padded input by {over} element{'s' * (over != 1)}, leaving {covered} of its {w} taps inside it"
            for i, last, covered, w, over, _, _ in notes
        ]
        fixes = " and ".join(f"EndPadding[{axis}] = {e} + {over} = {e + over}" for _, _, _, _, over, axis, e in notes)
        message = (
            f"ceil_mode=1 with count_include_pad=1: {'; '.join(parts)}. DirectML (like onnxruntime's CPU kernel and PyTorch) divides such a window "
            f"by its taps inside the padded input; a full-window reading of ONNX's 'divided by the number of elements' (older onnxruntime releases, onnxruntime issue #16203) "
            f"divides every window by the whole kernel ({math.prod(kernel)} taps). For the full-window divisor set {fixes} with IncludePadding TRUE "
            f"(the output sizes stay {list(out)}), or import with ceil_mode_divisor='full_window'"
        )
        log.report(CEIL_MODE_DIVISOR, node, "ceil_mode", message, expected=[n[3] for n in notes], actual=[n[2] for n in notes])
    return end


def _lower_global_average_pool(node: _NodeInfo, inputs: list[_Input | None], options: _Options, log: _Warnings) -> _Lowered:
    x = _required(node, inputs, 0, "X")
    spatial = _spatial_rank(node, x.shape, (3, 4, 5), "GlobalAveragePool")
    window = x.shape[2:]
    output_shape = (x.shape[0], x.shape[1]) + (1,) * spatial
    desc = DML_AVERAGE_POOLING_OPERATOR_DESC(
        _tensor(x, lifted(x.shape)), _tensor(x, lifted(output_shape)), max(spatial, 2),
        _lift_spatial((1,) * spatial, 1), _lift_spatial(window, 1), _lift_spatial((0,) * spatial, 0), _lift_spatial((0,) * spatial, 0), False,
    )  # fmt: skip
    return _Lowered(desc, {"InputTensor": 0}, output_shape, {"InputTensor": lifted(x.shape)})


def _conv_common(node: _NodeInfo, inputs: list[_Input | None]) -> tuple[_Input, _Input, _Input | None, int, tuple[int, ...], tuple[int, ...], tuple[int, ...], int]:
    x = _required(node, inputs, 0, "X")
    w = _required(node, inputs, 1, "W")
    b = inputs[2] if len(inputs) > 2 else None
    spatial = _spatial_rank(node, x.shape, (3, 4, 5), node.op_type)
    if len(w.shape) != len(x.shape):
        raise _fail(SHAPE, node, None, f"input W has shape {w.shape}, expected rank {len(x.shape)} like X {x.shape}", expected=len(x.shape), actual=len(w.shape))
    kernel = w.shape[2:]
    if "kernel_shape" in node.attributes and tuple(node.attributes["kernel_shape"]) != tuple(kernel):
        raise _fail(INVALID_ATTRIBUTE, node, "kernel_shape", f"is {list(node.attributes['kernel_shape'])}, but W's spatial sizes are {list(kernel)}", expected=list(kernel), actual=list(node.attributes["kernel_shape"]))
    strides = _ints(node, "strides", spatial, 1, minimum=1)
    dilations = _ints(node, "dilations", spatial, 1, minimum=1)
    group = int(node.attributes.get("group", 1))
    if group < 1:
        raise _fail(INVALID_ATTRIBUTE, node, "group", f"is {group}, expected at least 1", expected=">= 1", actual=group)
    return x, w, b, spatial, tuple(kernel), strides, dilations, group


def _bias(node: _NodeInfo, b: _Input | None, channels: int) -> None:
    if b is not None and tuple(b.shape) != (channels,):
        raise _fail(SHAPE, node, None, f"input B has shape {b.shape}, expected ({channels},): one bias per output channel", expected=(channels,), actual=b.shape)


def _conv_desc(x: _Input, w: _Input, b: _Input | None, output_shape: tuple[int, ...], direction: DML_CONVOLUTION_DIRECTION, strides: Sequence[int], dilations: Sequence[int],
               start: Sequence[int], end: Sequence[int], group: int, channels: int) -> _Lowered:  # fmt: skip
    spatial = len(strides)
    rank = len(lifted(x.shape))
    sizes = {"InputTensor": lifted(x.shape), "FilterTensor": lifted(w.shape)}
    fields = {"InputTensor": 0, "FilterTensor": 1}
    bias = None
    if b is not None:
        sizes["BiasTensor"] = _bias_sizes(channels, rank)
        fields["BiasTensor"] = 2
        bias = _tensor(b, sizes["BiasTensor"])
    desc = DML_CONVOLUTION_OPERATOR_DESC(
        InputTensor=_tensor(x, sizes["InputTensor"]),
        FilterTensor=_tensor(w, sizes["FilterTensor"]),
        BiasTensor=bias,
        OutputTensor=_tensor(x, lifted(output_shape)),
        Mode=DML_CONVOLUTION_MODE.CROSS_CORRELATION,
        Direction=direction,
        DimensionCount=max(spatial, 2),
        Strides=_lift_spatial(strides, 1),
        Dilations=_lift_spatial(dilations, 1),
        StartPadding=_lift_spatial(start, 0),
        EndPadding=_lift_spatial(end, 0),
        OutputPadding=_lift_spatial((0,) * spatial, 0),
        GroupCount=group,
        FusedActivation=None,
    )
    return _Lowered(desc, fields, output_shape, sizes)


def _lower_conv(node: _NodeInfo, inputs: list[_Input | None], options: _Options, log: _Warnings) -> _Lowered:
    x, w, b, spatial, kernel, strides, dilations, group = _conv_common(node, inputs)
    pads = _ints(node, "pads", 2 * spatial, 0, minimum=0)
    mode = _auto_pad(node)
    channels = w.shape[0]
    _bias(node, b, channels)
    keff = [(k - 1) * d + 1 for k, d in zip(kernel, dilations, strict=True)]
    sizes = x.shape[2:]
    start, end = _forward_padding(mode, pads, sizes, strides, keff)
    out = []
    for i in range(spatial):
        padded = sizes[i] + start[i] + end[i]
        if keff[i] > padded:
            raise _fail(SHAPE, node, None, f"W's kernel spans {keff[i]} elements along spatial axis {i}, more than the padded input {sizes[i]} + {start[i]} + {end[i]} = {padded}", expected=f"<= {padded}", actual=keff[i])
        out.append((padded - keff[i]) // strides[i] + 1)
    output_shape = (x.shape[0], channels, *out)
    return _conv_desc(x, w, b, output_shape, DML_CONVOLUTION_DIRECTION.FORWARD, strides, dilations, start, end, group, channels)


def _lower_conv_transpose(node: _NodeInfo, inputs: list[_Input | None], options: _Options, log: _Warnings) -> _Lowered:
    x, w, b, spatial, kernel, strides, dilations, group = _conv_common(node, inputs)
    pads = _ints(node, "pads", 2 * spatial, 0, minimum=0)
    output_padding = _ints(node, "output_padding", spatial, 0, minimum=0)
    mode = _auto_pad(node)
    channels = w.shape[1] * group
    _bias(node, b, channels)
    sizes = x.shape[2:]
    keff = [(k - 1) * d + 1 for k, d in zip(kernel, dilations, strict=True)]
    full = [s * (n - 1) + op + e for n, s, op, e in zip(sizes, strides, output_padding, keff, strict=True)]  # the scatter extent + output_padding
    for i in range(spatial):
        if output_padding[i] >= strides[i]:
            raise _fail(UNSUPPORTED_ATTRIBUTE, node, "output_padding",
                        f"is {list(output_padding)}: entry {i} ({output_padding[i]}) is not below strides[{i}] = {strides[i]}. DirectML's BACKWARD convolution computes at most strides - 1 positions past its natural size "
                        f"(OutputPadding stays 0, as every DirectML caller sets it), and onnxruntime rejects such a model too",
                        expected=f"< {strides[i]}", actual=output_padding[i], hresult=HRESULT.E_NOTIMPL)  # fmt: skip
    requested = node.attributes.get("output_shape")
    if requested is not None:
        requested = [int(v) for v in requested]
        if len(requested) == spatial + 2:
            if requested[1] != channels:
                raise _fail(INVALID_ATTRIBUTE, node, "output_shape", f"is {requested}: its channel entry {requested[1]} is not W.shape[1] * group = {w.shape[1]} * {group} = {channels}", expected=channels, actual=requested[1])
            requested = requested[2:]
        if len(requested) != spatial:
            raise _fail(INVALID_ATTRIBUTE, node, "output_shape", f"has {len(requested)} entries, expected {spatial} (the spatial sizes; ONNX infers N and C)", expected=spatial, actual=len(requested))
        if any(v < 1 for v in requested):
            raise _fail(INVALID_ATTRIBUTE, node, "output_shape", f"is {requested}, but every size must be at least 1", expected=">= 1", actual=requested)
        start, end = [], []
        odd = []
        for i in range(spatial):
            total = full[i] - requested[i]
            if total < 0:
                # Past the full extent: ONNX's pads cannot be negative; the extra positions are computed at the end (zero + bias), as output_padding's are.
                if -total + output_padding[i] > strides[i] - 1:
                    raise _fail(UNSUPPORTED_ATTRIBUTE, node, "output_shape",
                                f"is {requested}: entry {i} ({requested[i]}) exceeds the full extent s * (in - 1) + output_padding + keff = {full[i]} by {-total}, and DirectML's BACKWARD convolution computes at most "
                                f"strides - 1 = {strides[i] - 1} positions past its natural size {full[i] - output_padding[i]}", expected=f"<= {full[i] - output_padding[i] + strides[i] - 1}", actual=requested[i], hresult=HRESULT.E_NOTIMPL)  # fmt: skip
                start.append(0)
                end.append(0)
                continue
            if node.version >= 11 or mode in ("SAME_UPPER", "SAME_LOWER"):
                begin = total // 2 if mode == "SAME_UPPER" else total - total // 2
            else:
                begin = total // 2  # ConvTranspose-1's formula: not SAME_UPPER puts the odd element at the end
            if node.version < 11 and total % 2:
                odd.append((i, total, begin))
            start.append(begin)
            end.append(total - begin)
        if odd:
            _warn_opset1_split(node, mode, odd, log)
        out = requested
    else:
        if mode in ("SAME_UPPER", "SAME_LOWER"):
            start, end = [], []
            for i in range(spatial):
                total = max(0, full[i] - sizes[i] * strides[i])  # ONNX: the output is in * s; pads cannot be negative (ONNX shape inference clamps too)
                begin = total // 2 if mode == "SAME_UPPER" else total - total // 2
                start.append(begin)
                end.append(total - begin)
        elif mode == "VALID":
            start, end = [0] * spatial, [0] * spatial
        else:
            start, end = list(pads[:spatial]), list(pads[spatial:])
        out = [full[i] - start[i] - end[i] for i in range(spatial)]
        for i in range(spatial):
            if out[i] < 1:
                raise _fail(INVALID_ATTRIBUTE, node, "pads", f"{start[i]} + {end[i]} along spatial axis {i} leave no output: s * (in - 1) + output_padding + keff - pads = {full[i]} - {start[i] + end[i]} = {out[i]}",
                            expected=f"<= {full[i] - 1} in total", actual=start[i] + end[i])  # fmt: skip
    output_shape = (x.shape[0], channels, *out)
    return _conv_desc(x, w, b, output_shape, DML_CONVOLUTION_DIRECTION.BACKWARD, strides, dilations, start, end, group, channels)


def _warn_opset1_split(node: _NodeInfo, mode: str, odd: list[tuple[int, int, int]], log: _Warnings) -> None:
    axes = "; ".join(f"spatial axis {i}: total {t}, pads begin {b}, end {t - b}" for i, t, b in odd)
    if mode in ("NOTSET", "VALID"):
        message = (f"ConvTranspose-{node.version} with output_shape and an odd total padding ({axes}): dmlpy follows ConvTranspose-1's formula (pads[start] = total / 2, the odd element at the end); "
                   f"ConvTranspose-11 and onnxruntime (for every opset) put it at the start, so onnxruntime's output is shifted by one element along these axes")  # fmt: skip
    else:
        message = (f"ConvTranspose-{node.version} with output_shape, auto_pad={mode} and an odd total padding ({axes}): dmlpy follows the auto_pad attribute text (the odd element at the "
                   f"{'end' if mode == 'SAME_UPPER' else 'start'}), as ConvTranspose-11 and onnxruntime do; ConvTranspose-1's pads formula says the opposite end")  # fmt: skip
    log.report(CONV_TRANSPOSE_PADS_SPLIT, node, "output_shape", message, expected="ConvTranspose-1 formula" if mode in ("NOTSET", "VALID") else "auto_pad text", actual=[b for _, _, b in odd])


def _space_depth(node: _NodeInfo, inputs: list[_Input | None], options: _Options, to_depth: bool) -> _Lowered:
    x = _required(node, inputs, 0, "input")
    if len(x.shape) != 4:
        raise _fail(SHAPE, node, None, f"input has shape {x.shape}; {node.op_type} takes a 4-D {{N, C, H, W}} tensor", expected=4, actual=len(x.shape))
    block = int(node.attributes["blocksize"])
    if block < 1:
        raise _fail(INVALID_ATTRIBUTE, node, "blocksize", f"is {block}, expected at least 1", expected=">= 1", actual=block)
    has_mode = (node.op_type == "DepthToSpace" and node.version >= 11) or node.version >= 28
    mode = _choice(node, "mode", "DCR", ("DCR", "CRD")) if has_mode else "DCR"
    n, c, h, w = x.shape
    if to_depth:
        for axis, size in (("H", h), ("W", w)):
            if size % block:
                raise _fail(SHAPE, node, "blocksize", f"is {block}, which does not divide the input's {axis} = {size} (input {x.shape})", expected=f"a divisor of {size}", actual=block)
        output_shape = (n, c * block * block, h // block, w // block)
    else:
        if c % (block * block):
            raise _fail(SHAPE, node, "blocksize", f"is {block}: blocksize^2 = {block * block} does not divide the input's C = {c} (input {x.shape})", expected=f"blocksize^2 dividing {c}", actual=block)
        output_shape = (n, c // (block * block), h * block, w * block)
    order = DML_DEPTH_SPACE_ORDER.DEPTH_COLUMN_ROW if mode == "DCR" else DML_DEPTH_SPACE_ORDER.COLUMN_ROW_DEPTH
    tensors = (_tensor(x, x.shape), _tensor(x, output_shape))
    if options.feature_level >= FL.LEVEL_2_1:
        cls1: Any = DML_SPACE_TO_DEPTH1_OPERATOR_DESC if to_depth else DML_DEPTH_TO_SPACE1_OPERATOR_DESC
        desc = cls1(*tensors, block, order)
    elif mode == "DCR":
        cls: Any = DML_SPACE_TO_DEPTH_OPERATOR_DESC if to_depth else DML_DEPTH_TO_SPACE_OPERATOR_DESC
        desc = cls(*tensors, block)
    else:
        raise _fail(FEATURE_LEVEL_RULE, node, "mode", f"is 'CRD', which needs the Order field of {'DML_SPACE_TO_DEPTH1' if to_depth else 'DML_DEPTH_TO_SPACE1'}_OPERATOR_DESC (DML_FEATURE_LEVEL_2_1); the device targets {c_name(options.feature_level)}",
                    expected=FL.LEVEL_2_1, actual=options.feature_level, hresult=HRESULT.E_NOTIMPL)  # fmt: skip
    return _Lowered(desc, {"InputTensor": 0}, output_shape, {"InputTensor": x.shape})


def _lower_space_to_depth(node: _NodeInfo, inputs: list[_Input | None], options: _Options, log: _Warnings) -> _Lowered:
    return _space_depth(node, inputs, options, to_depth=True)


def _lower_depth_to_space(node: _NodeInfo, inputs: list[_Input | None], options: _Options, log: _Warnings) -> _Lowered:
    return _space_depth(node, inputs, options, to_depth=False)


def _fused_activation(node: _NodeInfo, bounds: tuple[float, float] | None = None) -> Any:
    """The FusedActivation for an activation node (tensors NULL); a Clip's with its ``bounds``."""
    if node.op_type == "Clip":
        assert bounds is not None
        return FusedActivation.clip(*bounds)
    if node.op_type == "Relu":
        return FusedActivation.relu()
    if node.op_type == "LeakyRelu":
        return FusedActivation.leaky_relu(float(node.attributes.get("alpha", 0.01)))
    return FusedActivation.sigmoid()


def _lower_activation(node: _NodeInfo, inputs: list[_Input | None], options: _Options, log: _Warnings) -> _Lowered:
    x = _required(node, inputs, 0, "X")
    sizes = _dml_shape(lifted(x.shape))  # a scalar is {1}
    tensors = (_tensor(x, sizes), _tensor(x, sizes))
    if node.op_type == "Relu":
        desc: Any = DML_ACTIVATION_RELU_OPERATOR_DESC(*tensors)
    elif node.op_type == "LeakyRelu":
        desc = DML_ACTIVATION_LEAKY_RELU_OPERATOR_DESC(*tensors, float(node.attributes.get("alpha", 0.01)))
    else:
        desc = DML_ACTIVATION_SIGMOID_OPERATOR_DESC(*tensors)
    return _Lowered(desc, {"InputTensor": 0}, tuple(x.shape), {"InputTensor": sizes})


LOWERINGS = {
    "AveragePool": _lower_average_pool,
    "GlobalAveragePool": _lower_global_average_pool,
    "Conv": _lower_conv,
    "ConvTranspose": _lower_conv_transpose,
    "SpaceToDepth": _lower_space_to_depth,
    "DepthToSpace": _lower_depth_to_space,
    "Relu": _lower_activation,
    "LeakyRelu": _lower_activation,
    "Sigmoid": _lower_activation,
}


def _required(node: _NodeInfo, inputs: list[_Input | None], index: int, name: str) -> _Input:
    if index >= len(inputs) or inputs[index] is None:
        raise _fail(UNSUPPORTED_GRAPH, node, None, f"input {index} ({name}) is missing; {node.op_type} requires it", expected="present", actual="missing")
    value = inputs[index]
    assert value is not None
    return value


def _validated(node: _NodeInfo, lowered: _Lowered, options: _Options) -> list[Finding]:
    """DirectML's findings for the mapped desc: raise on errors (with the node named), return the warnings."""
    report = validate_desc(lowered.desc, feature_level=options.feature_level)
    errors = [f for f in report.findings if f.severity is Severity.ERROR or options.strict]
    if errors and all(f.rule == "TENSOR.DATA_TYPE_SUPPORT" for f in errors):
        raise _rejected(node, DmlError(HRESULT.E_INVALIDARG, errors, "data types"), "")
    if errors:
        name = type(lowered.desc).__name__
        summary = f"{node.where}: DirectML rejects the mapped {name} ({'; '.join(f.rule for f in errors)})"
        raise OnnxImportError(HRESULT.E_INVALIDARG, errors, summary, node=node)
    return report.warnings


def _rejected(node: _NodeInfo, error: DmlError, what: str) -> OnnxImportError:
    """DirectML's findings for a mapped desc: a data type its support table lacks (TENSOR.DATA_TYPE_SUPPORT alone) is ONNX.UNSUPPORTED_TYPE
    (E_NOTIMPL: the ONNX model is valid, DirectML has no such operator for that type: onnxruntime's provider leaves such a node to the CPU); else the findings as they are."""
    if error.findings and all(f.rule == "TENSOR.DATA_TYPE_SUPPORT" for f in error.findings):
        first = error.findings[0]
        finding = _finding(UNSUPPORTED_TYPE, node, None, f"maps to {first.path.split('.')[0]}, whose {first.path.split('.', 1)[-1]} {first.message}: DirectML has no such operator for this type", first.expected, first.actual)
        return OnnxImportError(HRESULT.E_NOTIMPL, [finding], f"{node.where}: {finding.message}", node=node)
    return OnnxImportError(error.hresult, error.findings, f"{node.where}: {what} ({'; '.join(f.rule for f in error.findings)}): {error}", node=node)


# ---------------------------------------------------------------------------------------
# Reading protos


def _np_dtype(onnx: Any, elem_type: int, node: _NodeInfo | None, what: str) -> np.dtype[Any]:
    try:
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type))
        as_data_type(_dml_dtype(dtype))  # bool is stored as UINT8
    except (KeyError, TypeError, ValueError):
        name = onnx.TensorProto.DataType.Name(elem_type) if elem_type in onnx.TensorProto.DataType.values() else str(elem_type)
        raise _fail(UNSUPPORTED_TYPE, node, None, f"{what} has element type {name}, which has no DirectML data type", expected="a DML_TENSOR_DATA_TYPE", actual=name, hresult=HRESULT.E_NOTIMPL) from None
    return dtype


def _value_shape(value_info: Any) -> tuple[int | str | None, ...] | None:
    """A ValueInfoProto's declared shape: ints, names of symbolic dims, None for unknown; None without a shape."""
    tensor_type = value_info.type.tensor_type
    if not tensor_type.HasField("shape"):
        return None
    dims: list[int | str | None] = []
    for dim in tensor_type.shape.dim:
        if dim.HasField("dim_value"):
            dims.append(int(dim.dim_value))
        elif dim.HasField("dim_param"):
            dims.append(dim.dim_param)
        else:
            dims.append(None)
    return tuple(dims)


def _default_opset(model: Any) -> int:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return int(entry.version)
    raise _fail(UNSUPPORTED_GRAPH, None, None, "the model imports no version of the default ONNX domain (opset_import)", expected="an ai.onnx opset", actual=[e.domain for e in model.opset_import])


def _node_info(onnx: Any, proto: Any, index: int, opset: int) -> _NodeInfo:
    node = _NodeInfo(index, proto.name, proto.op_type, 0, {}, proto.domain)
    if proto.domain not in ("", "ai.onnx"):
        raise _missing(node, f"is in domain '{proto.domain}'; the importer maps default-domain ONNX operators", "ai.onnx", proto.domain)
    try:
        schema = onnx.defs.get_schema(proto.op_type, opset, "")
    except onnx.defs.SchemaError:
        schema = None
    if proto.op_type not in SUPPORTED_VERSIONS and proto.op_type not in MAPPINGS:
        if schema is None:
            raise _fail(UNSUPPORTED_OP, node, None, f"{proto.op_type} is not an ONNX operator at opset {opset}", expected="an ONNX operator", actual=proto.op_type, hresult=HRESULT.E_NOTIMPL)
        node.version = int(schema.since_version)
        raise _missing(node, f"{proto.op_type} is an ONNX operator the importer does not map", "a mapped operator", proto.op_type)
    if schema is None:
        first = SUPPORTED_VERSIONS[proto.op_type][0] if proto.op_type in SUPPORTED_VERSIONS else "a later one"
        raise _fail(UNSUPPORTED_OP, node, None, f"{proto.op_type} does not exist at opset {opset}", expected=f"opset >= {first}", actual=opset, hresult=HRESULT.E_NOTIMPL)
    node.version = int(schema.since_version)
    if proto.op_type in SUPPORTED_VERSIONS and proto.op_type not in MAPPINGS and node.version not in SUPPORTED_VERSIONS[proto.op_type]:
        versions = ", ".join(str(v) for v in SUPPORTED_VERSIONS[proto.op_type])
        raise _fail(UNSUPPORTED_OP, node, None, f"{proto.op_type}-{node.version} (opset {opset}) is not a version the importer maps ({versions})", expected=list(SUPPORTED_VERSIONS[proto.op_type]), actual=node.version, hresult=HRESULT.E_NOTIMPL)
    node.attributes = {k: v for k, v in _attributes(onnx, proto, node, schema).items() if k not in IGNORED_ATTRIBUTES}
    return node


def _missing(node: _NodeInfo, what: str, expected: Any, actual: Any) -> OnnxImportError:
    """ONNX.NOT_EMULATED when the DirectML operator the node needs is one dmlpy describes but cannot run; ONNX.UNSUPPORTED_OP otherwise."""
    from dmlpy.operators import REGISTRY

    needed = NEEDS.get(node.op_type)
    spec = None
    if needed is not None:
        from dmlpy.enums import DML_OPERATOR_TYPE

        spec = REGISTRY.get(DML_OPERATOR_TYPE[needed]) if needed in DML_OPERATOR_TYPE.__members__ else None
    if needed is None:
        return _fail(UNSUPPORTED_OP, node, None, f"{what}; onnxruntime's DirectML provider maps it to no single DirectML operator dmlpy knows", expected=expected, actual=actual, hresult=HRESULT.E_NOTIMPL)
    if spec is not None and spec.reference is None:
        return _fail(NOT_EMULATED_RULE, node, None, f"{what}; it needs DML_OPERATOR_{needed}, which dmlpy describes and validates but cannot run yet (DirectML would accept it)", expected=f"DML_OPERATOR_{needed}", actual="not emulated", hresult=HRESULT.E_NOTIMPL)
    described = "which dmlpy runs: the importer does not map the node to it yet" if spec is not None else "which dmlpy does not describe"
    return _fail(UNSUPPORTED_OP, node, None, f"{what}; it needs DML_OPERATOR_{needed}, {described}", expected=f"DML_OPERATOR_{needed}", actual=actual, hresult=HRESULT.E_NOTIMPL)


def _lower(node: _NodeInfo, inputs: list[_Input | None], options: _Options, log: _Warnings) -> tuple[_Lowered, list[Finding]]:
    lowered = LOWERINGS[node.op_type](node, inputs, options, log)
    return lowered, _validated(node, lowered, options)


# ---------------------------------------------------------------------------------------
# Mappings through GraphBuilder: every other operator (one function per ONNX op family)


class _Ctx:
    """What a mapping sees of one node: its inputs as builder tensors or known arrays, its attributes, the builder."""

    def __init__(self, importer: _ModelImporter, node: _NodeInfo, proto: Any, opset: int) -> None:
        self.importer = importer
        self.node = node
        self.proto = proto
        self.opset = opset
        self.g: GraphBuilder = importer.builder  # type: ignore[assignment]
        self.activation: Any = None  # a FusedActivation the mapping may take (FUSES_ACTIVATION)
        self.activation_used = False

    def fused(self) -> Any:
        """The activation to fuse into the node's operator (marked as taken), or None."""
        self.activation_used = self.activation is not None
        return self.activation

    @property
    def attrs(self) -> dict[str, Any]:
        return self.node.attributes

    def attr(self, name: str, default: Any = None) -> Any:
        return self.node.attributes.get(name, default)

    def has(self, k: int) -> bool:
        return k < len(self.proto.input) and self.proto.input[k] != ""

    def count(self) -> int:
        return len(self.proto.input)

    def value(self, k: int) -> _Value:
        if not self.has(k):
            raise _fail(UNSUPPORTED_GRAPH, self.node, None, f"input {k} is missing; {self.node.op_type} requires it", expected="present", actual="missing")
        return self.importer.values[self.proto.input[k]]

    def shape(self, k: int) -> tuple[int, ...]:
        return self.value(k).shape

    def dtype(self, k: int) -> np.dtype[Any]:
        return self.value(k).dtype

    def const(self, k: int, what: str = "") -> np.ndarray | None:
        """The input's value when the importer knows it (an initializer or a folded value), else None."""
        if not self.has(k):
            return None
        return self.value(k).array

    def known(self, k: int, what: str) -> np.ndarray:
        """A parameter input that must be known at import (Reshape's shape, Slice's starts, ...)."""
        array = self.const(k)
        if array is None:
            raise _fail(UNSUPPORTED_ATTRIBUTE, self.node, what, f"input {k} ({what}) is computed at run time; DirectML takes it as a desc field, so it must be an initializer or foldable from constants and shapes",
                        expected="a constant", actual="a run-time value", hresult=HRESULT.E_NOTIMPL)  # fmt: skip
        return array

    def x(self, k: int, sizes: Sequence[int] | None = None) -> Tensor:
        """Input ``k`` as a builder tensor with ``sizes`` (default: its ONNX shape; a scalar is ``{1}``)."""
        shape = self.shape(k)
        return self.importer._view(self.node, self.proto.input[k], tuple(sizes) if sizes is not None else _dml_shape(shape))

    @property
    def min_rank(self) -> int:
        """4 below DML_FEATURE_LEVEL_4_0, where most operators take only 4-D tensors (their support tables); else 1."""
        return 4 if self.g.feature_level < FL.LEVEL_4_0 else 1

    def xr(self, k: int) -> Tensor:
        """Input ``k`` in its ONNX shape, with leading 1s up to ``min_rank``."""
        return self.padded(k, max(len(self.shape(k)), self.min_rank))

    def indices(self, k: int, sizes: Sequence[int], axis_size: int | None = None) -> Tensor:
        """Index input ``k`` with ``sizes``. Known INT64 indices that fit are stored as INT32, or below DML_FEATURE_LEVEL_3_0 (whose
        gathers take UINT32 only) as UINT32 with negative ones counted from ``axis_size``."""
        array = self.const(k)
        name = self.proto.input[k]
        if array is not None and array.dtype.kind == "i" and array.size:
            low = self.g.feature_level < FL.LEVEL_3_0
            if low and axis_size is not None:
                array = np.where(array < 0, array + axis_size, array)
            dtype = np.dtype(np.uint32 if low else np.int32)
            if array.min() >= (0 if low else -(2**31)) and array.max() < 2**31:
                narrow = f"{name}:{dtype.name}:{axis_size}"
                if narrow not in self.importer.values:
                    self.importer.values[narrow] = _Value(tuple(array.shape), dtype, "constant", array=array.astype(dtype))
                name = narrow
        return self.importer._view(self.node, name, tuple(sizes))

    def padded(self, k: int, rank: int) -> Tensor:
        """Input ``k`` with leading 1s up to ``rank`` dimensions."""
        shape = self.shape(k)
        return self.x(k, (1,) * (rank - len(shape)) + tuple(shape))

    def axis(self, axis: int, rank: int, name: str = "axis") -> int:
        if not -rank <= axis < max(rank, 1):
            raise _fail(INVALID_ATTRIBUTE, self.node, name, f"is {axis}, outside [{-rank}, {rank - 1}]", expected=f"[{-rank}, {rank - 1}]", actual=axis)
        return axis % rank if rank else 0

    def fail(self, rule_: Any, attribute: str | None, message: str, *, expected: Any = None, actual: Any = None, hresult: HRESULT = HRESULT.E_INVALIDARG) -> OnnxImportError:
        return _fail(rule_, self.node, attribute, message, expected=expected, actual=actual, hresult=hresult)


def _dml_shape(shape: Sequence[int]) -> tuple[int, ...]:
    """The DML sizes of an ONNX shape: a scalar is ``{1}``."""
    return tuple(int(s) for s in shape) or (1,)


def _out(tensor: Tensor, shape: Sequence[int]) -> tuple[Tensor, tuple[int, ...]]:
    return tensor, tuple(int(s) for s in shape)


_BINARY = {"Add": "ADD", "Sub": "SUBTRACT", "Mul": "MULTIPLY", "Div": "DIVIDE", "Pow": "POW", "Equal": "LOGICAL_EQUALS", "Less": "LOGICAL_LESS_THAN",
           "Greater": "LOGICAL_GREATER_THAN", "LessOrEqual": "LOGICAL_LESS_THAN_OR_EQUAL", "GreaterOrEqual": "LOGICAL_GREATER_THAN_OR_EQUAL",
           "And": "LOGICAL_AND", "Or": "LOGICAL_OR", "Xor": "LOGICAL_XOR", "BitwiseAnd": "BIT_AND", "BitwiseOr": "BIT_OR", "BitwiseXor": "BIT_XOR"}  # fmt: skip
_UNARY = {"Sqrt": "SQRT", "Reciprocal": "RECIP", "Exp": "EXP", "Log": "LOG", "Abs": "ABS", "Neg": "NEGATE", "Erf": "ERF", "Tanh": "TANH", "Floor": "FLOOR",
          "Ceil": "CEIL", "Sin": "SIN", "Cos": "COS", "Tan": "TAN", "Asin": "ASIN", "Acos": "ACOS", "Atan": "ATAN", "Sinh": "SINH", "Cosh": "COSH",
          "Asinh": "ASINH", "Acosh": "ACOSH", "Atanh": "ATANH", "Sign": "SIGN", "Not": "LOGICAL_NOT", "IsNaN": "IS_NAN", "BitwiseNot": "BIT_NOT"}  # fmt: skip
_VARIADIC = {"Max": "MAX", "Min": "MIN", "Sum": "ADD", "Mean": "ADD"}


def _out_shape(*shapes: Sequence[int]) -> tuple[int, ...]:
    from dmlpy.builder import broadcast_sizes

    result = broadcast_sizes(*shapes)
    return result if result is not None else tuple(shapes[0])


def _legacy_broadcast(c: _Ctx) -> tuple[Tensor, Tensor, tuple[int, ...]] | None:
    """Before opset 7, ``broadcast=1`` aligns B with A from ``axis`` on (default: the trailing axes); without it the shapes are equal."""
    if c.node.version >= 7 or not int(c.attr("broadcast", 0)):
        return None
    a, b = c.shape(0), c.shape(1)
    axis = int(c.attr("axis", len(a) - len(b)))
    axis = axis + len(a) if axis < 0 else axis
    sizes = (1,) * axis + tuple(b) + (1,) * (len(a) - axis - len(b))
    if len(sizes) != len(a) or any(s not in (1, t) for s, t in zip(sizes, a, strict=True)):
        raise c.fail(SHAPE, "axis", f"B {b} does not broadcast to A {a} from axis {axis}", expected=a, actual=b)
    return c.x(0, _dml_shape(a)), c.x(1, _dml_shape(sizes)), tuple(a)


def _map_binary(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    legacy = _legacy_broadcast(c)
    if legacy is not None:
        return [_out(c.g.element_wise(_BINARY[c.node.op_type], legacy[0], legacy[1]), legacy[2])]
    shape = _out_shape(c.shape(0), c.shape(1))
    rank = max(len(shape), c.min_rank)
    if c.node.op_type == "Add" and c.activation is not None:
        return [_out(c.g.add(c.padded(0, rank), c.padded(1, rank), activation=c.fused()), shape)]  # ELEMENT_WISE_ADD1
    return [_out(c.g.element_wise(_BINARY[c.node.op_type], c.padded(0, rank), c.padded(1, rank)), shape)]


def _map_mod(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    shape = _out_shape(c.shape(0), c.shape(1))
    rank = max(len(shape), c.min_rank)
    fmod = int(c.attr("fmod", 0))  # 0 on floats: the divisor's sign, as for integers (Mod-28 allows it; MODULUS_FLOOR takes floats)
    return [_out(c.g.element_wise("MODULUS_TRUNCATE" if fmod else "MODULUS_FLOOR", c.padded(0, rank), c.padded(1, rank)), shape)]


def _map_unary(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    return [_out(c.g.element_wise(_UNARY[c.node.op_type], c.xr(0)), c.shape(0))]


def _map_misc_element_wise(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    """Round (halves to even), IsInf (detect_positive / detect_negative), BitShift (direction)."""
    from dmlpy.enums import DML_IS_INFINITY_MODE, DML_ROUNDING_MODE

    op = c.node.op_type
    if op == "Round":
        return [_out(c.g.element_wise("ROUND", c.xr(0), RoundingMode=DML_ROUNDING_MODE.HALVES_TO_NEAREST_EVEN), c.shape(0))]
    if op == "IsInf":
        positive, negative = int(c.attr("detect_positive", 1)), int(c.attr("detect_negative", 1))
        if not positive and not negative:
            raise c.fail(UNSUPPORTED_ATTRIBUTE, "detect_positive", "and detect_negative are both 0 (every output false): not mapped", expected="one of them 1", actual=0, hresult=HRESULT.E_NOTIMPL)
        mode = DML_IS_INFINITY_MODE.EITHER if positive and negative else (DML_IS_INFINITY_MODE.POSITIVE if positive else DML_IS_INFINITY_MODE.NEGATIVE)
        return [_out(c.g.element_wise("IS_INFINITY", c.xr(0), InfinityMode=mode), c.shape(0))]
    shape = _out_shape(c.shape(0), c.shape(1))
    rank = max(len(shape), c.min_rank)
    direction = _choice(c.node, "direction", "", ("LEFT", "RIGHT"))
    return [_out(c.g.element_wise(f"BIT_SHIFT_{direction}", c.padded(0, rank), c.padded(1, rank)), shape)]


def _map_variadic(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    indices = [k for k in range(c.count()) if c.has(k)]
    shape = _out_shape(*(c.shape(k) for k in indices))
    rank = max(len(shape), c.min_rank)
    result = c.padded(indices[0], rank)
    for k in indices[1:]:
        result = c.g.element_wise(_VARIADIC[c.node.op_type], result, c.padded(k, rank))
    if c.node.op_type == "Mean" and len(indices) > 1:
        from dmlpy.operators.descs.helpers import DML_SCALE_BIAS

        result = c.g.element_wise("IDENTITY", result, ScaleBias=DML_SCALE_BIAS(1.0 / len(indices), 0.0))
    elif len(indices) == 1:
        result = c.g.element_wise("IDENTITY", result)
    return [_out(result, shape)]


def _map_where(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    shape = _out_shape(c.shape(0), c.shape(1), c.shape(2))
    rank = max(len(shape), c.min_rank)
    return [_out(c.g.where(c.padded(0, rank), c.padded(1, rank), c.padded(2, rank)), shape)]


def _map_clip(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    if c.node.version < 11:
        low, high = c.attr("min"), c.attr("max")
    else:
        low = None if not c.has(1) else c.known(1, "min").item()
        high = None if not c.has(2) else c.known(2, "max").item()
    return [_out(c.g.clip(c.xr(0), low, high), c.shape(0))]


_ACTIVATIONS: dict[str, Callable[[_Ctx, Tensor], Tensor]] = {
    "Tanh": lambda c, x: c.g.element_wise("TANH", x),
    "HardSigmoid": lambda c, x: c.g.hard_sigmoid(x, float(c.attr("alpha", 0.2)), float(c.attr("beta", 0.5))),
    "HardSwish": lambda c, x: c.g.hard_swish(x, 1.0 / 6.0, 0.5) if c.g.feature_level >= FL.LEVEL_6_2 else c.g.multiply(x, c.g.hard_sigmoid(x, 1.0 / 6.0, 0.5)),
    "Elu": lambda c, x: c.g.elu(x, float(c.attr("alpha", 1.0))),
    "Selu": lambda c, x: c.g.scaled_elu(x, float(c.attr("alpha", 1.67326319217681884765625)), float(c.attr("gamma", 1.05070102214813232421875))),
    "Celu": lambda c, x: c.g.celu(x, float(c.attr("alpha", 1.0))),
    "Softplus": lambda c, x: c.g.softplus(x, 1.0),
    "Softsign": lambda c, x: c.g.softsign(x),
    "ThresholdedRelu": lambda c, x: c.g.thresholded_relu(x, float(c.attr("alpha", 1.0))),
    "Shrink": lambda c, x: c.g.shrink(x, float(c.attr("bias", 0.0)), float(c.attr("lambd", 0.5))),
    "Swish": lambda c, x: c.g.swish(x, float(c.attr("alpha", 1.0))) if c.g.feature_level >= FL.LEVEL_6_2 else _swish_below_6_2(c.g, x, float(c.attr("alpha", 1.0))),
    "Gelu": lambda c, x: c.g.gelu(x) if c.g.feature_level >= FL.LEVEL_5_1 else _gelu_from_erf(c.g, x),
}


def _swish_below_6_2(g: GraphBuilder, x: Tensor, alpha: float) -> Tensor:
    """``x * sigmoid(alpha * x)`` below DML_FEATURE_LEVEL_6_2 (ACTIVATION_SWISH): IDENTITY scales, SIGMOID, MULTIPLY."""
    from dmlpy.operators.descs.helpers import DML_SCALE_BIAS

    return g.multiply(x, g.sigmoid(g.element_wise("IDENTITY", x, ScaleBias=DML_SCALE_BIAS(alpha, 0.0))))


def _gelu_from_erf(g: GraphBuilder, x: Tensor) -> Tensor:
    """``x * (0.5 + 0.5 * erf(x / sqrt(2)))`` below DML_FEATURE_LEVEL_5_1 (ACTIVATION_GELU): ERF reads ``x / sqrt(2)`` through its ScaleBias."""
    from dmlpy.operators.descs.helpers import DML_SCALE_BIAS

    erf = g.element_wise("ERF", x, ScaleBias=DML_SCALE_BIAS(float(1 / np.sqrt(2.0)), 0.0))
    return g.multiply(x, g.element_wise("IDENTITY", erf, ScaleBias=DML_SCALE_BIAS(0.5, 0.5)))


def _map_activation(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    if c.node.op_type == "Gelu" and c.attr("approximate", "none") != "none":
        raise c.fail(UNSUPPORTED_ATTRIBUTE, "approximate", f"is {c.attr('approximate')!r}: DirectML's ACTIVATION_GELU is the exact erf form", expected="none", actual=c.attr("approximate"), hresult=HRESULT.E_NOTIMPL)
    return [_out(_ACTIVATIONS[c.node.op_type](c, c.xr(0)), c.shape(0))]


def _map_prelu(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    shape = c.shape(0)
    return [_out(c.g.prelu(c.x(0), c.padded(1, len(shape))), shape)]


def _softmax_axes(c: _Ctx, rank: int) -> list[int]:
    if c.node.version < 13:  # flattened to 2-D at axis: every axis from it on
        return list(range(c.axis(int(c.attr("axis", 1)), rank), rank))
    return [c.axis(int(c.attr("axis", -1)), rank)]


def _map_softmax(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    shape = c.shape(0)
    method = {"Softmax": c.g.softmax, "LogSoftmax": c.g.log_softmax, "Hardmax": c.g.hardmax}[c.node.op_type]
    axes = _softmax_axes(c, len(shape))
    if c.g.feature_level < FL.LEVEL_5_1 and axes == list(range(axes[0], len(shape))):  # SOFTMAX (no axes): the value read as 2-D, the axes last
        flat = (1, 1, math.prod(shape[: axes[0]]), math.prod(shape[axes[0] :]))
        return [_out(method(c.x(0, flat)), shape)]
    return [_out(method(c.x(0), axes), shape)]


def _map_gemm(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    a_shape, b_shape = c.shape(0), c.shape(1)
    trans_a, trans_b = bool(c.attr("transA", 0)), bool(c.attr("transB", 0))
    m = a_shape[1] if trans_a else a_shape[0]
    n = b_shape[0] if trans_b else b_shape[1]
    rank = max(2, c.min_rank)
    bias = None
    if c.has(2):
        bias = c.padded(2, rank)
    y = c.g.gemm(c.padded(0, rank), c.padded(1, rank), bias, trans_a, trans_b, float(c.attr("alpha", 1.0)), float(c.attr("beta", 1.0)) if bias is not None else 0.0, activation=c.fused())
    return [_out(y, (m, n))]


def _map_matmul(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    a_shape, b_shape = c.shape(0), c.shape(1)
    a = a_shape if len(a_shape) > 1 else (1, *a_shape)
    b = b_shape if len(b_shape) > 1 else (*b_shape, 1)
    batch = _out_shape(a[:-2], b[:-2])
    shape = (*batch, a[-2], b[-1])
    if len(shape) > 4:
        raise c.fail(SHAPE, None, f"multiplies {a_shape} by {b_shape}: {len(shape)} dimensions, and DirectML's GEMM takes at most 4", expected="<= 4", actual=len(shape), hresult=HRESULT.E_NOTIMPL)
    lead_a, lead_b = (1,) * max(0, c.min_rank - len(a)), (1,) * max(0, c.min_rank - len(b))
    y = c.g.gemm(c.x(0, lead_a + tuple(a)), c.x(1, lead_b + tuple(b)), activation=c.fused())
    onnx_shape = (*batch, *((a[-2],) if len(a_shape) > 1 else ()), *((b[-1],) if len(b_shape) > 1 else ()))
    return [_out(y, onnx_shape)]


def _window_parameters(c: _Ctx, x_shape: Sequence[int]) -> tuple[int, list[int], list[int], list[int], list[int], list[int]]:
    spatial = len(x_shape) - 2
    kernel = list(_ints(c.node, "kernel_shape", spatial, 1, minimum=1))
    strides = list(_ints(c.node, "strides", spatial, 1, minimum=1))
    dilations = list(_ints(c.node, "dilations", spatial, 1, minimum=1))
    pads = _ints(c.node, "pads", 2 * spatial, 0, minimum=0)
    mode = _auto_pad(c.node)
    keff = [(k - 1) * d + 1 for k, d in zip(kernel, dilations, strict=True)]
    start, end = _forward_padding(mode, pads, x_shape[2:], strides, keff)
    return spatial, kernel, strides, dilations, start, end


def _map_max_pool(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    shape = c.shape(0)
    _spatial_rank(c.node, shape, (3, 4, 5), "MaxPool")
    spatial, kernel, strides, dilations, start, end = _window_parameters(c, shape)
    if int(c.attr("storage_order", 0)) and len(c.proto.output) > 1 and c.proto.output[1]:
        raise c.fail(UNSUPPORTED_ATTRIBUTE, "storage_order", "is 1 (column-major Indices): DirectML's MAX_POOLING2 indexes the input row-major", expected=0, actual=1, hresult=HRESULT.E_NOTIMPL)
    indices = len(c.proto.output) > 1 and bool(c.proto.output[1]) and c.importer.used(c.proto.output[1])
    lift = spatial == 1
    x = c.x(0, lifted(shape))
    result = c.g.max_pooling(x, _lift_spatial(kernel, 1), _lift_spatial(strides, 1), _lift_spatial(start, 0), _lift_spatial(end, 0), _lift_spatial(dilations, 1),
                             output_indices=indices, ceil=bool(c.attr("ceil_mode", 0)), index_type="uint64")  # fmt: skip
    values, index = (result if indices else (result, None))  # type: ignore[misc]
    out_shape = tuple(values.sizes) if not lift else (values.sizes[0], values.sizes[1], values.sizes[3])
    outputs = [_out(values, out_shape)]
    if index is not None:  # UINT64 indices read as ONNX's INT64: the same bytes (every index is below 2^63)
        outputs.append(_out(dataclasses.replace(index, desc=dataclasses.replace(index.desc, DataType=as_data_type(np.int64))), out_shape))
    return outputs


def _map_global_max_pool(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    shape = c.shape(0)
    _spatial_rank(c.node, shape, (3, 4, 5), "GlobalMaxPool")
    sizes = lifted(shape)
    y = c.g.max_pooling(c.x(0, sizes), sizes[2:])
    return [_out(y, (shape[0], shape[1]) + (1,) * (len(shape) - 2))]


def _lift_nc(shape: Sequence[int]) -> tuple[int, ...]:
    """``{N, C, ...}`` as 4-D at least: rank 2 gets two trailing 1s, rank 3 a unit H axis."""
    shape = tuple(shape)
    if len(shape) == 2:
        return (*shape, 1, 1)
    return lifted(shape)


def _map_batch_norm(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    if int(c.attr("training_mode", 0)):
        raise c.fail(UNSUPPORTED_ATTRIBUTE, "training_mode", "is 1: inference only (DirectML's BATCH_NORMALIZATION_TRAINING is not emulated)", expected=0, actual=1, hresult=HRESULT.E_NOTIMPL)
    if c.node.version < 7 and not int(c.attr("spatial", 1)):
        raise c.fail(UNSUPPORTED_ATTRIBUTE, "spatial", "is 0 (per-element statistics): not mapped", expected=1, actual=0, hresult=HRESULT.E_NOTIMPL)
    shape = c.shape(0)
    sizes = _lift_nc(shape)
    channel = (1, shape[1]) + (1,) * (len(sizes) - 2)
    y = c.g.batch_normalization(c.x(0, sizes), c.x(3, channel), c.x(4, channel), c.x(1, channel), c.x(2, channel), epsilon=float(c.attr("epsilon", 1e-5)), activation=c.fused())
    return [_out(y, shape)]


def _map_instance_norm(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    shape = c.shape(0)
    sizes = _lift_nc(shape)
    channel = (1, shape[1]) + (1,) * (len(sizes) - 2)
    axes = tuple(range(2, len(sizes)))
    y = c.g.mean_variance_normalization(c.x(0, sizes), c.x(1, channel), c.x(2, channel), axes=axes, epsilon=float(c.attr("epsilon", 1e-5)), activation=c.fused())
    return [_out(y, shape)]


def _map_mvn(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    shape = c.shape(0)
    axes = [c.axis(int(a), len(shape), "axes") for a in c.attr("axes", [0, 2, 3])]
    y = c.g.mean_variance_normalization(c.x(0), axes=axes, epsilon=1e-9)
    return [_out(y, shape)]


def _map_layer_norm(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    if any(c.importer.used(name) for name in c.proto.output[1:] if name):
        raise c.fail(UNSUPPORTED_ATTRIBUTE, None, "its Mean or InvStdDev output is used: DirectML's MEAN_VARIANCE_NORMALIZATION1 writes only Y", expected="only Y used", actual=list(c.proto.output), hresult=HRESULT.E_NOTIMPL)
    shape = c.shape(0)
    axis = c.axis(int(c.attr("axis", -1)), len(shape))
    lead = max(0, c.min_rank - len(shape))
    full = (1,) * lead + tuple(shape)
    rank, axis = len(full), axis + lead
    scale = c.padded(1, rank)
    bias = c.padded(2, rank) if c.has(2) else None
    from dmlpy.builder import _broadcast_view

    reads = full if c.g.feature_level < FL.LEVEL_4_0 else tuple(1 if i < axis else s for i, s in enumerate(full))  # below 4.0 scale and bias broadcast by zero strides only
    scale = _broadcast_view(scale, reads)
    bias = _broadcast_view(bias, reads) if bias is not None else None
    y = c.g.mean_variance_normalization(c.x(0, full), scale, bias, axes=tuple(range(axis, rank)), epsilon=float(c.attr("epsilon", 1e-5)))
    return [_out(y, shape)]


def _map_group_norm(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    """GroupNormalization: x read as {N, G, C / G, spatial} (the same bytes), MEAN_VARIANCE_NORMALIZATION1 over its last two axes with the
    scale and bias read as {1, G, C / G, 1} (opset 21: per channel) or {1, G, 1, 1} (opset 18: per group)."""
    shape = c.shape(0)
    groups = int(c.attr("num_groups"))
    n, channels = shape[0], shape[1]
    if groups < 1 or channels % groups:
        raise c.fail(INVALID_ATTRIBUTE, "num_groups", f"is {groups}, which does not divide the {channels} channels", expected=f"a divisor of {channels}", actual=groups)
    per_group = channels // groups
    sizes = (n, groups, per_group, math.prod(shape[2:]))
    per_channel = c.shape(1) == (channels,) and (c.node.version >= 21 or groups == channels)
    parameter = (1, groups, per_group, 1) if per_channel else (1, groups, 1, 1)
    if c.shape(1) not in ((channels,), (groups,)):
        raise c.fail(SHAPE, None, f"scale has shape {c.shape(1)}, expected ({channels},) or ({groups},)", expected=(channels,), actual=c.shape(1))
    from dmlpy.builder import _broadcast_view

    scale, bias = (_broadcast_view(c.x(k, parameter), (1, groups, per_group, 1)) for k in (1, 2))
    y = c.g.mean_variance_normalization(c.x(0, sizes), scale, bias, axes=(2, 3), epsilon=float(c.attr("epsilon", 1e-5)))
    return [_out(y, shape)]


_REDUCE = {"ReduceMean": "AVERAGE", "ReduceSum": "SUM", "ReduceMax": "MAX", "ReduceMin": "MIN", "ReduceProd": "MULTIPLY", "ReduceL1": "L1", "ReduceL2": "L2",
           "ReduceLogSum": "LOG_SUM", "ReduceLogSumExp": "LOG_SUM_EXP", "ReduceSumSquare": "SUM_SQUARE"}  # fmt: skip


def _map_reduce(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    shape = c.shape(0)
    rank = len(shape)
    axes_from_input = (c.node.op_type == "ReduceSum" and c.node.version >= 13) or c.node.version >= 18
    axes = ([int(a) for a in c.known(1, "axes").reshape(-1)] if c.has(1) else []) if axes_from_input else [int(a) for a in c.attr("axes", [])]
    if not axes:
        if axes_from_input and int(c.attr("noop_with_empty_axes", 0)):
            return [_out(c.g.element_wise("IDENTITY", c.x(0)), shape)]
        axes = list(range(rank))
    axes = sorted({c.axis(a, rank, "axes") for a in axes})
    keep = int(c.attr("keepdims", 1))
    out_shape = tuple(1 if i in axes else s for i, s in enumerate(shape)) if keep else tuple(s for i, s in enumerate(shape) if i not in axes)
    lead = max(0, c.min_rank - rank)
    y = c.g.reduce(c.padded(0, max(rank, 1) + lead), _REDUCE[c.node.op_type], [a + lead for a in axes] if rank else [lead])
    return [_out(y, out_shape)]


def _map_arg(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    shape = c.shape(0)
    rank = len(shape)
    axis = c.axis(int(c.attr("axis", 0)), rank)
    direction = DML_AXIS_DIRECTION.DECREASING if int(c.attr("select_last_index", 0)) else DML_AXIS_DIRECTION.INCREASING
    method = c.g.argmax if c.node.op_type == "ArgMax" else c.g.argmin  # ARGMAX/ARGMIN: FL 3.0 (REDUCE's write UINT32, never ONNX's INT64)
    y = method(c.x(0), [axis], direction, index_type="uint64")
    y = dataclasses.replace(y, desc=dataclasses.replace(y.desc, DataType=as_data_type(np.int64)))  # the same bytes: indices are below 2^63
    keep = int(c.attr("keepdims", 1))
    out_shape = tuple(1 if i == axis else s for i, s in enumerate(shape)) if keep else tuple(s for i, s in enumerate(shape) if i != axis)
    return [_out(y, out_shape)]


def _map_concat(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    shapes = [c.shape(k) for k in range(c.count()) if c.has(k)]
    rank = len(shapes[0])
    axis = c.axis(int(c.attr("axis")), rank)
    lead = max(0, c.min_rank - rank)
    parts = [c.padded(k, rank + lead) for k in range(c.count()) if c.has(k) and math.prod(c.shape(k)) > 0]
    out_shape = list(shapes[0])
    out_shape[axis] = sum(s[axis] for s in shapes)
    y = c.g.join(parts, axis + lead) if len(parts) > 1 else c.g.element_wise("IDENTITY", parts[0])
    return [_out(y, out_shape)]


def _map_split(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    shape = c.shape(0)
    rank = len(shape)
    axis = c.axis(int(c.attr("axis", 0)), rank)
    outputs = len(c.proto.output)
    if c.node.version >= 13 and c.has(1):
        sizes = [int(v) for v in c.known(1, "split")]
    elif c.node.version < 13 and c.attr("split") is not None:
        sizes = [int(v) for v in c.attr("split")]
    else:
        count = int(c.attr("num_outputs", outputs))
        chunk = _ceil_div(shape[axis], count)
        sizes = [min(chunk, max(0, shape[axis] - i * chunk)) for i in range(count)]
    if sum(sizes) != shape[axis] or len(sizes) != outputs:
        raise c.fail(INVALID_ATTRIBUTE, "split", f"is {sizes}: {len(sizes)} parts summing to {sum(sizes)}, expected {outputs} parts summing to {shape[axis]}", expected=shape[axis], actual=sum(sizes))
    shapes = [tuple(n if i == axis else s for i, s in enumerate(shape)) for n in sizes]
    used = [bool(name) and c.importer.used(name) for name in c.proto.output]
    if all(used):
        return [_out(t, s) for t, s in zip(c.g.split(c.x(0), axis, sizes), shapes, strict=True)]
    results: list[Any] = []  # a DML graph connects every node output: the used parts as slices
    offset = 0
    for n, s, u in zip(sizes, shapes, used, strict=True):
        if u:
            offsets = [offset if i == axis else 0 for i in range(rank)]
            results.append(_out(c.g.slice(c.x(0), offsets, list(s)), s))
        else:
            results.append(None)
        offset += n
    return results


def _map_slice(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    shape = c.shape(0)
    rank = len(shape)
    if c.node.version < 10:
        starts, ends = list(c.attr("starts")), list(c.attr("ends"))
        axes = list(c.attr("axes", range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts = [int(v) for v in c.known(1, "starts")]
        ends = [int(v) for v in c.known(2, "ends")]
        axes = [int(v) for v in c.known(3, "axes")] if c.has(3) else list(range(len(starts)))
        steps = [int(v) for v in c.known(4, "steps")] if c.has(4) else [1] * len(starts)
    offsets, windows, strides, out_shape = [0] * rank, list(shape), [1] * rank, list(shape)
    for start, end, axis, step in zip(starts, ends, axes, steps, strict=True):
        axis = c.axis(int(axis), rank, "axes")
        size = shape[axis]
        if step == 0:
            raise c.fail(INVALID_ATTRIBUTE, "steps", "has a 0 step", expected="nonzero", actual=0)
        start = start + size if start < 0 else start
        end = end + size if end < 0 else end
        if step > 0:
            start, end = min(max(start, 0), size), min(max(end, 0), size)
            count = max(0, _ceil_div(end - start, step))
            low = start
        else:
            start, end = min(max(start, 0), size - 1), min(max(end, -1), size - 1)
            count = max(0, _ceil_div(start - end, -step))
            low = start - (count - 1) * -step
        if count == 0:
            raise c.fail(SHAPE, None, f"selects nothing along axis {axis}: an empty tensor, which DirectML cannot describe", expected="at least one element", actual=0, hresult=HRESULT.E_NOTIMPL)
        offsets[axis], windows[axis], strides[axis], out_shape[axis] = low, (count - 1) * abs(step) + 1, step, count
    return [_out(c.g.slice(c.x(0), offsets, windows, strides), out_shape)]


_PAD_MODES = {"constant": "CONSTANT", "reflect": "REFLECTION", "edge": "EDGE", "wrap": "WRAP"}


def _map_pad(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    from dmlpy.enums import DML_PADDING_MODE

    shape = c.shape(0)
    rank = len(shape)
    mode = _choice(c.node, "mode", "constant", tuple(_PAD_MODES))
    if c.node.version < 11:
        pads = [int(v) for v in c.attr("pads" if c.node.version >= 2 else "paddings")]
        value = float(c.attr("value", 0.0))
    else:
        pads = [int(v) for v in c.known(1, "pads")]
        value = c.known(2, "constant_value").item() if c.has(2) else 0
    axes = list(range(rank))
    if c.node.version >= 18 and c.has(3):
        axes = [c.axis(int(a), rank, "axes") for a in c.known(3, "axes")]
    start, end = [0] * rank, [0] * rank
    half = len(pads) // 2
    for i, axis in enumerate(axes):
        start[axis], end[axis] = pads[i], pads[half + i]
    if any(p < 0 for p in start + end):
        raise c.fail(UNSUPPORTED_ATTRIBUTE, "pads", f"is {pads}: negative pads (cropping) are not mapped", expected=">= 0", actual=pads, hresult=HRESULT.E_NOTIMPL)
    out_shape = [s + a + b for s, a, b in zip(shape, start, end, strict=True)]
    y = c.g.pad(c.x(0), start, end, DML_PADDING_MODE[_PAD_MODES[mode]], value if c.dtype(0).kind != "f" else float(value))
    return [_out(y, out_shape)]


def _map_cast(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    target = c.dtype(1) if c.node.op_type == "CastLike" else _np_dtype(c.importer.onnx, int(c.attr("to")), c.node, "attribute 'to'")
    source = c.dtype(0)
    shape = c.shape(0)
    if target == source:
        return [_out(c.x(0), shape)]
    x = c.x(0)
    if target == np.bool_:  # nonzero is true: NOT(x == 0), 1 or 0 (a CAST would truncate 0.5 to 0)
        if c.importer.options.feature_level < FL.LEVEL_6_2:
            raise c.fail(FEATURE_LEVEL_RULE, "to", "is BOOL: the comparison with 0 reads a CONSTANT node, which needs DML_FEATURE_LEVEL_6_2", expected=FL.LEVEL_6_2, actual=c.importer.options.feature_level, hresult=HRESULT.E_NOTIMPL)
        zero = c.g.constant(np.zeros((1,) * len(x.sizes), _dml_dtype(source)))
        return [_out(c.g.element_wise("LOGICAL_NOT", c.g.element_wise("LOGICAL_EQUALS", x, zero)), shape)]
    return [_out(c.g.cast(x, _dml_dtype(target)), shape)]


def _map_gather(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    data, indices = c.shape(0), c.shape(1)
    axis = c.axis(int(c.attr("axis", 0)), len(data))
    out_shape = tuple(data[:axis]) + tuple(indices) + tuple(data[axis + 1 :])
    rank = max(len(data), len(out_shape), len(indices), c.min_rank)
    if rank > 8:
        raise c.fail(SHAPE, None, f"gives a rank-{rank} result; DirectML tensors have at most 8 dimensions", expected="<= 8", actual=rank, hresult=HRESULT.E_NOTIMPL)
    lead = rank - len(data)
    idx_shape = indices or (1,)
    y = c.g.gather(c.padded(0, rank), c.indices(1, (1,) * (rank - len(idx_shape)) + tuple(idx_shape), data[axis]), axis + lead, len(indices))
    return [_out(y, out_shape)]


def _map_gather_elements(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    axis = c.axis(int(c.attr("axis", 0)), len(c.shape(0)))
    return [_out(c.g.gather_elements(c.x(0), c.indices(1, _dml_shape(c.shape(1)), c.shape(0)[axis]), axis), c.shape(1))]


def _map_gather_nd(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    data, indices = c.shape(0), c.shape(1)
    batch = int(c.attr("batch_dims", 0))
    out_shape = tuple(indices[:-1]) + tuple(data[batch + indices[-1] :])
    rank = max(len(data), len(indices))
    y = c.g.gather_nd(c.padded(0, rank), c.indices(1, (1,) * (rank - len(indices)) + tuple(indices)), batch, input_dimensions=len(data), indices_dimensions=len(indices))
    return [_out(y, out_shape)]


def _map_resize(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    from dmlpy.operators.resampling import onnx_resize_parameters

    shape = c.shape(0)
    rank = len(shape)
    if c.node.op_type == "Upsample":
        scales = [float(v) for v in (c.attr("scales") if c.node.version < 9 else c.known(1, "scales"))]
        mode, ctm, nearest = c.attr("mode", "nearest"), "asymmetric", "floor"
        sizes = [math.floor(s * f) for s, f in zip(shape, scales, strict=True)]
        from_sizes = False
    else:
        mode = c.attr("mode", "nearest")
        ctm = c.attr("coordinate_transformation_mode", "half_pixel" if c.node.version >= 11 else "asymmetric")
        nearest = c.attr("nearest_mode", "round_prefer_floor") if c.node.version >= 11 else "floor"
        if c.node.version < 11 and c.attr("mode") == "linear" and "coordinate_transformation_mode" not in c.attrs:
            ctm = "asymmetric"
        scale_input = 1 if c.node.version < 11 else 2
        size_input = 3
        scales_array = c.known(scale_input, "scales") if c.has(scale_input) and (c.const(scale_input) is None or c.const(scale_input).size) else None
        if c.has(size_input) and c.known(size_input, "sizes").size:
            sizes_given = [int(v) for v in c.known(size_input, "sizes")]
            axes = [c.axis(int(a), rank, "axes") for a in c.attr("axes", range(rank))]
            sizes = list(shape)
            for a, s in zip(axes, sizes_given, strict=True):
                sizes[a] = s
            policy = c.attr("keep_aspect_ratio_policy", "stretch")
            if policy != "stretch":
                raise c.fail(UNSUPPORTED_ATTRIBUTE, "keep_aspect_ratio_policy", f"is {policy!r}: not mapped", expected="stretch", actual=policy, hresult=HRESULT.E_NOTIMPL)
            scales = [o / i for o, i in zip(sizes, shape, strict=True)]
            from_sizes = True
        elif scales_array is not None:
            from_sizes = False
            scales = [float(v) for v in scales_array]
            axes = [c.axis(int(a), rank, "axes") for a in c.attr("axes", range(rank))]
            full = [1.0] * rank
            for a, s in zip(axes, scales, strict=True):
                full[a] = s
            scales = full
            sizes = [math.floor(s * f) for s, f in zip(shape, scales, strict=True)]
        else:
            raise c.fail(INVALID_ATTRIBUTE, None, "gives neither scales nor sizes", expected="scales or sizes", actual="neither")
        if c.has(1) and c.node.version >= 11 and ctm == "tf_crop_and_resize":
            raise c.fail(UNSUPPORTED_ATTRIBUTE, "coordinate_transformation_mode", "is 'tf_crop_and_resize': not mapped", expected="not tf_crop_and_resize", actual=ctm, hresult=HRESULT.E_NOTIMPL)
        if int(c.attr("antialias", 0)):
            raise c.fail(UNSUPPORTED_ATTRIBUTE, "antialias", "is 1: not mapped", expected=0, actual=1, hresult=HRESULT.E_NOTIMPL)
        if mode == "cubic":
            raise c.fail(UNSUPPORTED_ATTRIBUTE, "mode", "is 'cubic': DirectML's RESAMPLE has nearest and linear", expected="nearest or linear", actual="cubic", hresult=HRESULT.E_NOTIMPL)
        if mode == "linear" and rank > 4 and any(s != 1.0 for s in scales[:-2]):
            raise c.fail(UNSUPPORTED_ATTRIBUTE, "mode", "is 'linear' over more than the last two axes: not mapped", expected="2-D linear", actual=scales, hresult=HRESULT.E_NOTIMPL)
    try:
        # align_corners with scales: ONNX's length_resized is in * scale, not its floor (the Resize page's formula and its tests)
        lengths = [n * f for n, f in zip(shape, scales, strict=True)] if ctm == "align_corners" and not from_sizes else sizes
        dml_scales, input_offsets, output_offsets, direction = onnx_resize_parameters(shape, lengths, scales, ctm, "nearest" if mode == "nearest" else "linear", nearest)
    except ValueError as error:
        raise c.fail(UNSUPPORTED_ATTRIBUTE, "coordinate_transformation_mode", str(error), hresult=HRESULT.E_NOTIMPL) from None
    interpolation = DML_INTERPOLATION_MODE.NEAREST_NEIGHBOR if mode == "nearest" else DML_INTERPOLATION_MODE.LINEAR
    if c.g.feature_level < FL.LEVEL_5_1:  # RESAMPLE1 rounds floor(x + 0.5): floor(x) is InputPixelOffsets + 0.5; ceil has no RESAMPLE1 form
        if mode == "nearest" and direction == DML_AXIS_DIRECTION.INCREASING:
            raise c.fail(FEATURE_LEVEL_RULE, "nearest_mode", f"is {nearest!r}, which rounds up: RESAMPLE2's RoundingDirection (DML_FEATURE_LEVEL_5_1); the device targets {c_name(c.g.feature_level)}",
                         expected=FL.LEVEL_5_1, actual=c.g.feature_level, hresult=HRESULT.E_NOTIMPL)  # fmt: skip
        if mode == "nearest":
            input_offsets = [v + 0.5 for v in input_offsets]
        direction = DML_AXIS_DIRECTION.INCREASING
    sizes4 = _lift_nc(shape) if rank < 4 else tuple(shape)
    pad = len(sizes4) - rank
    out4 = tuple(sizes) + (1,) * pad if rank == 2 else (lifted(sizes) if rank == 3 else tuple(sizes))
    def lift_vals(v: list[float], fill: float) -> list[float]:
        return list(v) + [fill] * pad if rank == 2 else ([v[0], v[1], fill, v[2]] if rank == 3 else list(v))
    y = c.g.resample(c.x(0, sizes4), lift_vals(dml_scales, 1.0), out4, interpolation, rounding_direction=direction,
                     input_pixel_offsets=lift_vals(input_offsets, 0.5), output_pixel_offsets=lift_vals(output_offsets, -0.5))  # fmt: skip
    return [_out(y, sizes)]


def _map_tile(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    shape = c.shape(0)
    repeats = [int(v) for v in c.known(1, "repeats")]
    if 2 * len(shape) > 8:
        raise c.fail(SHAPE, None, f"tiles a rank-{len(shape)} tensor; the importer reads it as a rank-{2 * len(shape)} view, and DirectML tensors have at most 8 dimensions", expected="rank <= 4", actual=len(shape), hresult=HRESULT.E_NOTIMPL)
    x = c.x(0)
    from dmlpy.builder import _strides_of

    strides = _strides_of(x)
    sizes: list[int] = []
    view_strides: list[int] = []
    for n, r, s in zip(shape, repeats, strides, strict=True):
        sizes += [r, n]
        view_strides += [0, s]
    view = dataclasses.replace(x, desc=dataclasses.replace(x.desc, DimensionCount=len(sizes), Sizes=tuple(sizes), Strides=tuple(view_strides)))
    out_shape = [n * r for n, r in zip(shape, repeats, strict=True)]
    return [_out(c.g.element_wise("IDENTITY", view), out_shape)]


def _map_quantize(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    """QuantizeLinear / DequantizeLinear: ELEMENT_WISE_(DE)QUANTIZE_LINEAR, a per-axis scale read along ``axis``."""
    shape = c.shape(0)
    rank = max(len(shape), 1)
    if int(c.attr("block_size", 0)):
        raise c.fail(UNSUPPORTED_ATTRIBUTE, "block_size", "is not 0: blocked quantization is not mapped", expected=0, actual=c.attr("block_size"), hresult=HRESULT.E_NOTIMPL)
    per_axis = len(c.shape(1)) == 1 and c.shape(1)[0] != 1
    axis = c.axis(int(c.attr("axis", 1)), len(shape)) if per_axis else 0  # ignored for a per-tensor scale

    def parameter(k: int) -> Tensor:
        p = c.shape(k)
        if len(p) == 1 and p[0] != 1 and len(shape) > 1:  # per-axis: {C} read along axis
            return c.x(k, tuple(p[0] if i == axis else 1 for i in range(rank)))
        return c.padded(k, rank)

    inputs = [c.x(0, _dml_shape(shape)), parameter(1)] + ([parameter(2)] if c.has(2) else [])
    if c.node.op_type == "QuantizeLinear":
        if c.has(2):
            out_dtype = _dml_dtype(c.dtype(2))
        else:
            out_dtype = _np_dtype(c.importer.onnx, int(c.attr("output_dtype", 0)) or 2, c.node, "attribute 'output_dtype'")  # 2: UINT8, ONNX's default
        y = c.g.element_wise("QUANTIZE_LINEAR", *inputs, output_dtype=out_dtype)
    else:
        y = c.g.element_wise("DEQUANTIZE_LINEAR", *inputs, output_dtype=_dml_dtype(c.dtype(1)))
    return [_out(y, shape)]


# Layout-only operators: a view of the same bytes (sizes and strides), never a node


def _reshape_shape(c: _Ctx, shape: Sequence[int], target: Sequence[int]) -> tuple[int, ...]:
    allowzero = int(c.attr("allowzero", 0))
    out = [shape[i] if (v == 0 and not allowzero and i < len(shape)) else int(v) for i, v in enumerate(target)]
    if -1 in out:
        known = math.prod(v for v in out if v != -1)
        out[out.index(-1)] = math.prod(shape) // known if known else 0
    if math.prod(out) != math.prod(shape):
        raise c.fail(SHAPE, "shape", f"is {list(target)}: {tuple(out)} does not hold the {math.prod(shape)} elements of {tuple(shape)}", expected=math.prod(shape), actual=math.prod(out))
    return tuple(out)


def _layout_shape(c: _Ctx) -> tuple[int, ...]:
    """The output shape of a layout-only node (the same elements in a new shape)."""
    op = c.node.op_type
    shape = c.shape(0)
    rank = len(shape)
    if op == "Reshape":
        target = c.attr("shape") if c.node.version < 5 else c.known(1, "shape")
        return _reshape_shape(c, shape, [int(v) for v in target])
    if op == "Flatten":
        axis = int(c.attr("axis", 1))
        axis = axis + rank if axis < 0 else axis
        return (math.prod(shape[:axis]), math.prod(shape[axis:]))
    if op == "Squeeze":
        axes = c.attr("axes") if c.node.version < 13 else (c.known(1, "axes") if c.has(1) else None)
        drop = {c.axis(int(a), rank, "axes") for a in axes} if axes is not None else {i for i, s in enumerate(shape) if s == 1}
        return tuple(s for i, s in enumerate(shape) if i not in drop)
    if op == "Unsqueeze":
        axes = c.attr("axes") if c.node.version < 13 else c.known(1, "axes")
        out_rank = rank + len(axes)
        added = {int(a) + out_rank if int(a) < 0 else int(a) for a in axes}
        rest = iter(shape)
        return tuple(1 if i in added else next(rest) for i in range(out_rank))
    return tuple(shape)  # Identity, Dropout


def _map_layout(c: _Ctx) -> list[Any]:
    if c.node.op_type == "Dropout":
        if len(c.proto.output) > 1 and c.proto.output[1] and c.importer.used(c.proto.output[1]):
            raise c.fail(UNSUPPORTED_ATTRIBUTE, None, "its mask output is used: only inference Dropout (Y = X) is mapped", expected="mask unused", actual="mask used", hresult=HRESULT.E_NOTIMPL)
        training = c.const(2) if c.has(2) else None
        if (c.has(2) and training is None) or (training is not None and bool(training.reshape(-1)[0])) or int(c.attr("is_test", 1)) == 0:
            raise c.fail(UNSUPPORTED_ATTRIBUTE, "training_mode", "may be true: training Dropout drops random elements; only inference Dropout (Y = X) is mapped", expected="false", actual="true or run-time",
                         hresult=HRESULT.E_NOTIMPL)  # fmt: skip
    return [("view", c.proto.input[0], _layout_shape(c))]


def _map_transpose(c: _Ctx) -> list[Any]:
    shape = c.shape(0)
    perm = [int(p) for p in c.attr("perm", list(reversed(range(len(shape)))))]
    if sorted(perm) != list(range(len(shape))):
        raise c.fail(INVALID_ATTRIBUTE, "perm", f"is {perm}, not a permutation of 0..{len(shape) - 1}", expected="a permutation", actual=perm)
    return [("transpose", c.proto.input[0], tuple(shape[p] for p in perm), tuple(perm))]


def _map_expand(c: _Ctx) -> list[Any]:
    shape = c.shape(0)
    target = [int(v) for v in c.known(1, "shape")]
    out_shape = _out_shape(shape, target)
    return [("broadcast", c.proto.input[0], out_shape)]


FUSES_ACTIVATION = frozenset({"Gemm", "MatMul", "Add", "BatchNormalization", "InstanceNormalization"})  # as onnxruntime's DirectML provider fuses

# --- LRN, LpPool, LpNormalization ---
# As onnxruntime's DirectML provider maps them: LRN to LOCAL_RESPONSE_NORMALIZATION with CrossChannel TRUE and
# alpha unchanged (both divide it by size); LpPool to LP_POOLING (LP_POOLING1 when dilated) with average
# pooling's windows; GlobalLpPool to one window over the spatial axes; LpNormalization to LP_NORMALIZATION
# with the Epsilon the page recommends (1e-5; ONNX has none: only an all-zero slice sees it).


def _lrn_sizes(shape: Sequence[int]) -> tuple[int, ...]:
    """ONNX LRN's ``{N, C, D1, ..., Dk}`` as the 4-D ``{N, C, H, W}`` DirectML takes: the spatial axes, which the sum never crosses, as one W."""
    shape = tuple(int(s) for s in shape)
    return (*shape[:2], 1, math.prod(shape[2:])) if len(shape) != 4 else shape


def _map_lrn(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    shape = c.shape(0)
    if len(shape) < 2:
        raise c.fail(SHAPE, None, f"input has shape {tuple(shape)}, expected at least {{N, C}}", expected="rank >= 2", actual=len(shape))
    size = c.attr("size")
    if size is None or int(size) < 1:
        raise c.fail(INVALID_ATTRIBUTE, "size", f"is {size!r}, expected a positive integer (required)", expected=">= 1", actual=size)
    y = c.g.local_response_normalization(c.x(0, _lrn_sizes(shape)), int(size), alpha=float(c.attr("alpha", 0.0001)), beta=float(c.attr("beta", 0.75)),
                                         bias=float(c.attr("bias", 1.0)))  # fmt: skip
    return [_out(y, shape)]


def _lp_exponent(c: _Ctx) -> int:
    """LpPool's and GlobalLpPool's ``p`` (a float before opset 2): a positive integer, DirectML's UINT P."""
    p = c.attr("p", 2)
    if isinstance(p, float) and not p.is_integer():
        raise c.fail(UNSUPPORTED_ATTRIBUTE, "p", f"is {p}: DirectML's P is an integer", expected="an integer", actual=p, hresult=HRESULT.E_NOTIMPL)
    if int(p) < 1:
        raise c.fail(INVALID_ATTRIBUTE, "p", f"is {p}, expected at least 1", expected=">= 1", actual=p)
    return int(p)


def _map_lp_pool(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    shape = c.shape(0)
    _spatial_rank(c.node, shape, (3, 4, 5), "LpPool")
    spatial, kernel, strides, dilations, start, end = _window_parameters(c, shape)
    y = c.g.lp_pooling(c.x(0, lifted(shape)), _lift_spatial(kernel, 1), _lift_spatial(strides, 1), _lift_spatial(start, 0), _lift_spatial(end, 0),
                       _lift_spatial(dilations, 1), p=_lp_exponent(c), ceil=bool(c.attr("ceil_mode", 0)))  # fmt: skip
    return [_out(y, tuple(y.sizes) if spatial != 1 else (y.sizes[0], y.sizes[1], y.sizes[3]))]


def _map_global_lp_pool(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    shape = c.shape(0)
    _spatial_rank(c.node, shape, (3, 4, 5), "GlobalLpPool")
    sizes = lifted(shape)
    y = c.g.lp_pooling(c.x(0, sizes), sizes[2:], p=_lp_exponent(c))
    return [_out(y, (shape[0], shape[1]) + (1,) * (len(shape) - 2))]


def _map_lp_normalization(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    shape = c.shape(0)
    axis = c.axis(int(c.attr("axis", -1)), len(shape))
    p = int(c.attr("p", 2))
    if p not in (1, 2):
        raise c.fail(INVALID_ATTRIBUTE, "p", f"is {p}, expected 1 or 2", expected=[1, 2], actual=p)
    lead = max(0, 4 - len(shape)) if c.g.feature_level < FL.LEVEL_3_1 else 0  # 4-D only below DML_FEATURE_LEVEL_3_1
    y = c.g.lp_normalization(c.x(0, (1,) * lead + _dml_shape(shape)), axis + lead, p=p, epsilon=1e-5)
    return [_out(y, shape)]

# --- TopK, CumSum, OneHot, Scatter ---


def _index_output(c: _Ctx, index: Tensor) -> Tensor:
    """DirectML's UINT64 indices read as ONNX's INT64 (the same bytes: every index is below 2^63); UINT32 ones (below
    DML_FEATURE_LEVEL_5_0, where TOP_K1 writes no UINT64) widened by a CAST."""
    if index.data_type == as_data_type(np.uint32):
        return c.g.cast(index, "int64")
    return dataclasses.replace(index, desc=dataclasses.replace(index.desc, DataType=as_data_type(np.int64)))


def _map_top_k(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]] | None]:
    shape = c.shape(0)
    rank = len(shape)
    axis = c.axis(int(c.attr("axis", -1)), rank)
    k = int(c.attr("k")) if c.node.version < 10 else int(np.asarray(c.known(1, "K")).reshape(-1)[0])
    if not 1 <= k <= shape[axis]:
        raise c.fail(INVALID_ATTRIBUTE, "K", f"is {k}, expected 1 to the axis size {shape[axis]}", expected=f"1..{shape[axis]}", actual=k)
    # sorted=0 leaves the order open: TOP_K1's sorted order is one of them
    direction = DML_AXIS_DIRECTION.DECREASING if int(c.attr("largest", 1)) else DML_AXIS_DIRECTION.INCREASING
    lead = max(0, c.min_rank - rank)
    index_type = "uint64" if c.g.feature_level >= FL.LEVEL_5_0 else "uint32"  # TOP_K1's UINT64 indices: FL 5.0
    values, index = c.g.top_k(c.padded(0, rank + lead), axis + lead, k, direction, index_type=index_type)
    out_shape = tuple(k if i == axis else n for i, n in enumerate(shape))
    results: list[tuple[Tensor, tuple[int, ...]] | None] = [_out(values, out_shape), _out(_index_output(c, index), out_shape)]
    for j, name in enumerate(c.proto.output[:2]):
        if not (name and c.importer.used(name)):  # TOP_K1 writes both; a DML graph connects every node output: an unread one
            unused = c.importer.__dict__.setdefault("unused_outputs", {})  # becomes a graph output ImportedModel.run does not return
            unused[f"~unused:{c.node.op_type}:{len(unused)}"] = (values, index)[j]
            results[j] = None
    return results


def _map_cumulative(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    shape = c.shape(0)
    rank = len(shape)
    axis = c.axis(int(np.asarray(c.known(1, "axis")).reshape(-1)[0]), rank)
    direction = DML_AXIS_DIRECTION.DECREASING if int(c.attr("reverse", 0)) else DML_AXIS_DIRECTION.INCREASING
    lead = max(0, c.min_rank - rank)
    method = c.g.cumulative_product if c.node.op_type == "CumProd" else c.g.cumulative_summation
    y = method(c.padded(0, max(rank, 1) + lead), axis + lead, direction, exclusive=bool(int(c.attr("exclusive", 0))))
    return [_out(y, shape)]


def _map_one_hot(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    shape = c.shape(0)
    out_rank = len(shape) + 1
    axis = c.axis(int(c.attr("axis", -1)), out_rank)
    depth = int(np.asarray(c.known(1, "depth")).reshape(-1)[0])
    if depth < 1:
        raise c.fail(INVALID_ATTRIBUTE, "depth", f"is {depth}, expected at least 1", expected=">= 1", actual=depth)
    if math.prod(c.shape(2)) != 2:
        raise c.fail(SHAPE, "values", f"has shape {c.shape(2)}, expected two elements {{off_value, on_value}}", expected=2, actual=math.prod(c.shape(2)))
    lead = max(0, c.min_rank - out_rank)
    rank = out_rank + lead
    out_shape = tuple(shape[:axis]) + (depth,) + tuple(shape[axis:])
    indices = c.indices(0, (1,) * lead + tuple(shape[:axis]) + (1,) + tuple(shape[axis:]), depth)  # the same bytes, 1 on the one-hot axis
    if c.dtype(0).kind == "f":  # ONNX casts non-integer indices to an integer (toward zero); ONE_HOT takes integers: a CAST first
        indices = c.g.cast(indices, "int32")
    y = c.g.one_hot(indices, c.x(2, (1,) * (rank - 1) + (2,)), axis + lead, depth)
    return [_out(y, out_shape)]


def _no_reduction(c: _Ctx) -> None:
    reduction = c.attr("reduction", "none")
    reduction = reduction.decode() if isinstance(reduction, bytes) else str(reduction)
    if reduction != "none":
        raise c.fail(UNSUPPORTED_ATTRIBUTE, "reduction", f"is {reduction!r}: DirectML's SCATTER and SCATTER_ND overwrite; they have no reduction", expected="none", actual=reduction, hresult=HRESULT.E_NOTIMPL)


def _map_scatter_elements(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    _no_reduction(c)
    data, indices = c.shape(0), c.shape(1)
    rank = len(data)
    axis = c.axis(int(c.attr("axis", 0)), rank)
    if any(n != m for i, (n, m) in enumerate(zip(indices, data, strict=True)) if i != axis):
        raise c.fail(SHAPE, None, f"indices have shape {indices}: DirectML's SCATTER takes indices with the data's sizes {data} except along axis {axis}",
                     expected="the data's sizes off the axis", actual=indices, hresult=HRESULT.E_NOTIMPL)  # fmt: skip
    lead = max(0, c.min_rank - rank)
    ones = (1,) * lead
    y = c.g.scatter_elements(c.padded(0, rank + lead), c.indices(1, ones + tuple(indices), data[axis]), c.padded(2, rank + lead), axis + lead)
    return [_out(y, data)]


def _map_scatter_nd(c: _Ctx) -> list[tuple[Tensor, tuple[int, ...]]]:
    _no_reduction(c)
    data, indices, updates = c.shape(0), c.shape(1), c.shape(2)
    rank = max(len(data), len(indices), len(updates), c.min_rank)
    y = c.g.scatter_nd(c.padded(0, rank), c.indices(1, (1,) * (rank - len(indices)) + tuple(indices)), c.padded(2, rank), input_dimensions=len(data), indices_dimensions=len(indices))
    return [_out(y, data)]


MAPPINGS: dict[str, Callable[[_Ctx], list[Any]]] = {
    **dict.fromkeys(_BINARY, _map_binary),
    "Mod": _map_mod,
    "Round": _map_misc_element_wise,
    "IsInf": _map_misc_element_wise,
    "BitShift": _map_misc_element_wise,
    **dict.fromkeys(_UNARY, _map_unary),
    **dict.fromkeys(_VARIADIC, _map_variadic),
    "Where": _map_where,
    "Clip": _map_clip,
    **dict.fromkeys(_ACTIVATIONS, _map_activation),
    "PRelu": _map_prelu,
    "Softmax": _map_softmax,
    "LogSoftmax": _map_softmax,
    "Hardmax": _map_softmax,
    "Gemm": _map_gemm,
    "MatMul": _map_matmul,
    "MaxPool": _map_max_pool,
    "GlobalMaxPool": _map_global_max_pool,
    "BatchNormalization": _map_batch_norm,
    "InstanceNormalization": _map_instance_norm,
    "MeanVarianceNormalization": _map_mvn,
    "LayerNormalization": _map_layer_norm,
    "GroupNormalization": _map_group_norm,
    **dict.fromkeys(_REDUCE, _map_reduce),
    "ArgMax": _map_arg,
    "ArgMin": _map_arg,
    "Concat": _map_concat,
    "Split": _map_split,
    "Slice": _map_slice,
    "Pad": _map_pad,
    "Cast": _map_cast,
    "CastLike": _map_cast,
    "Gather": _map_gather,
    "GatherElements": _map_gather_elements,
    "GatherND": _map_gather_nd,
    "Resize": _map_resize,
    "Upsample": _map_resize,
    "Tile": _map_tile,
    "QuantizeLinear": _map_quantize,
    "DequantizeLinear": _map_quantize,
    "Reshape": _map_layout,
    "Flatten": _map_layout,
    "Squeeze": _map_layout,
    "Unsqueeze": _map_layout,
    "Identity": _map_layout,
    "Dropout": _map_layout,
    "Transpose": _map_transpose,
    "Expand": _map_expand,
    "LRN": _map_lrn,
    "LpPool": _map_lp_pool,
    "GlobalLpPool": _map_global_lp_pool,
    "LpNormalization": _map_lp_normalization,

    "TopK": _map_top_k,
    "CumSum": _map_cumulative,
    "CumProd": _map_cumulative,
    "OneHot": _map_one_hot,
    "ScatterElements": _map_scatter_elements,
    "Scatter": _map_scatter_elements,
    "ScatterND": _map_scatter_nd,
}

# The DirectML operator onnxruntime's DirectML provider uses for ONNX operators the importer does not map
NEEDS: dict[str, str] = {
    "TopK": "TOP_K1",
    "CumSum": "CUMULATIVE_SUMMATION", "CumProd": "CUMULATIVE_PRODUCT", "Scatter": "SCATTER_ELEMENTS", "ScatterElements": "SCATTER_ELEMENTS", "ScatterND": "SCATTER_ND",
    "OneHot": "ONE_HOT", "NonZero": "NONZERO_COORDINATES", "LSTM": "LSTM", "GRU": "GRU", "RNN": "RNN", "RoiAlign": "ROI_ALIGN1", "MaxRoiPool": "ROI_POOLING",

    "LRN": "LOCAL_RESPONSE_NORMALIZATION", "LpPool": "LP_POOLING1", "GlobalLpPool": "LP_POOLING1", "LpNormalization": "LP_NORMALIZATION",
    "NonZero": "NONZERO_COORDINATES", "LSTM": "LSTM", "GRU": "GRU", "RNN": "RNN", "RoiAlign": "ROI_ALIGN1", "MaxRoiPool": "ROI_POOLING",
    "MaxUnpool": "MAX_UNPOOLING", "RandomNormal": "RANDOM_GENERATOR", "RandomUniform": "RANDOM_GENERATOR", "RandomNormalLike": "RANDOM_GENERATOR",
    "RandomUniformLike": "RANDOM_GENERATOR", "QLinearConv": "QUANTIZED_LINEAR_CONVOLUTION", "QLinearMatMul": "QUANTIZED_LINEAR_MATRIX_MULTIPLY",
    "ConvInteger": "CONVOLUTION_INTEGER", "MatMulInteger": "MATRIX_MULTIPLY_INTEGER", "DynamicQuantizeLinear": "DYNAMIC_QUANTIZE_LINEAR", "EyeLike": "DIAGONAL_MATRIX1",
    "Col2Im": "FOLD", "ReverseSequence": "REVERSE_SUBSEQUENCES", "Einsum": "GEMM", "Trilu": "DIAGONAL_MATRIX1",
    "SpaceToDepth": "SPACE_TO_DEPTH1", "Range": "FILL_VALUE_SEQUENCE", "ConstantOfShape": "FILL_VALUE_CONSTANT", "Attention": "MULTIHEAD_ATTENTION",
    "MultiHeadAttention": "MULTIHEAD_ATTENTION1", "Mish": "ACTIVATION_SOFTPLUS",
}  # fmt: skip


# ---------------------------------------------------------------------------------------
# Public API: nodes


@dataclass
class ImportedNode:
    """One ONNX node as DirectML descs.

    ``descs`` holds the operator descs (one for every supported op; empty for an activation
    fused into the convolution before it, which ``fused_into`` then names). Tensor descs are
    in DML sizes (rank-3 values lifted to ``{N, C, 1, W}``); ``output_shapes`` are ONNX's.
    """

    label: str
    op_type: str
    version: int
    index: int
    descs: list[Any]
    output_shapes: list[tuple[int, ...]]
    warnings: list[Finding] = field(default_factory=list)
    inputs: dict[str, int] = field(default_factory=dict)  # desc input field -> ONNX input index
    input_sizes: dict[str, tuple[int, ...]] = field(default_factory=dict)  # desc input field -> DML sizes
    fused_into: str | None = None
    fused_activation: str | None = None  # on a convolution: the activation node fused into it

    @property
    def desc(self) -> Any:
        """The operator desc (the first, and for every supported op the only one)."""
        if not self.descs:
            msg = f"{self.label} was fused into {self.fused_into}; its activation is that desc's FusedActivation"
            raise ValueError(msg)
        return self.descs[0]

    def run(self, inputs: Sequence[Any], *, device: Device | None = None, backend: str = "auto") -> np.ndarray:
        """Run the desc on ONNX-shaped arrays (in the node's input order); returns the ONNX-shaped output."""
        arrays = {field_name: np.asarray(inputs[index]).reshape(self.input_sizes[field_name]) for field_name, index in self.inputs.items()}
        result = run_desc(self.desc, device=device, backend=backend, **arrays)
        return np.asarray(result).reshape(self.output_shapes[0])


def import_node(
    node: Any,
    input_shapes: Sequence[Sequence[int] | None],
    *,
    input_dtypes: Sequence[Any] | Any = np.float32,
    opset: int | None = None,
    feature_level: DML_FEATURE_LEVEL | int = FL.LEVEL_6_4,
    ceil_mode_divisor: str = "padded",
    index: int = 0,
) -> ImportedNode:
    """An ONNX NodeProto as DML operator desc(s), validated at ``feature_level``.

    ``input_shapes`` lists the shape of each of the node's inputs (``None`` for an absent
    optional input); ``input_dtypes`` is one dtype for all, or one per input. ``opset`` is
    the model's default-domain opset (default: the newest the installed onnx knows), which
    picks the operator version. Raises ``OnnxImportError`` for anything unsupported or
    invalid; ``ONNX.*`` warnings are raised as ``DmlWarning`` and kept on the result.
    """
    onnx = _require_onnx()
    if ceil_mode_divisor not in CEIL_MODE_DIVISORS:
        msg = f"ceil_mode_divisor must be one of {', '.join(CEIL_MODE_DIVISORS)}, not {ceil_mode_divisor!r}"
        raise ValueError(msg)
    opset = int(opset) if opset is not None else int(onnx.defs.onnx_opset_version())
    info = _node_info(onnx, node, index, opset)
    dtypes = list(input_dtypes) if isinstance(input_dtypes, (list, tuple)) else [input_dtypes] * len(input_shapes)
    inputs: list[_Input | None] = []
    for k, shape in enumerate(input_shapes):
        present = shape is not None and k < len(node.input) and node.input[k] != ""
        inputs.append(_Input(tuple(int(s) for s in shape), np.dtype(dtypes[k])) if present and shape is not None else None)
    if info.op_type not in LOWERINGS:
        raise _fail(UNSUPPORTED_OP, info, None, f"{info.op_type} is mapped inside a model (GraphBuilder calls, views, folding): use import_model on a model around the node; "
                    f"import_node lowers {', '.join(LOWERINGS)} to one desc each", expected=list(LOWERINGS), actual=info.op_type, hresult=HRESULT.E_NOTIMPL)  # fmt: skip
    options = _Options(DML_FEATURE_LEVEL(feature_level), ceil_mode_divisor)
    log = _Warnings()
    lowered, dml_warnings = _lower(info, inputs, options, log)
    return ImportedNode(info.label, info.op_type, info.version, index, [lowered.desc], [lowered.output_shape], log.findings + dml_warnings, lowered.inputs, lowered.dml_sizes)


# ---------------------------------------------------------------------------------------
# Public API: models


def load(model_or_path: Any) -> Any:
    """An ``onnx.ModelProto`` from a ModelProto, a path, serialized bytes, or an ImportedModel."""
    onnx = _require_onnx()
    if isinstance(model_or_path, ImportedModel):
        return model_or_path.model
    if isinstance(model_or_path, onnx.ModelProto):
        return model_or_path
    if isinstance(model_or_path, (bytes, bytearray)):
        return onnx.load_from_string(bytes(model_or_path))
    if isinstance(model_or_path, (str, os.PathLike)):
        return onnx.load(os.fspath(model_or_path))
    msg = f"expected an onnx.ModelProto, a path or serialized bytes, not {type(model_or_path).__name__}"
    raise TypeError(msg)


@dataclass
class ImportedModel:
    """An ONNX model as a compiled DML graph.

    * ``program``: the ``GraphProgram`` (call it with DML-sized arrays by graph input name:
      the ONNX inputs, lifted for rank 3, and with ``weights="owned"`` the initializers too);
    * ``graph_desc``: the DML_GRAPH_DESC that was compiled;
    * ``descs``: node label -> that node's operator descs (``[]`` for a fused activation);
    * ``nodes``: every node's ``ImportedNode``; ``warnings``: ``ONNX.*`` and DirectML warnings;
    * ``input_names`` / ``output_names`` (ONNX's), ``input_shapes`` / ``output_shapes`` (ONNX);
    * ``run(inputs)`` / ``__call__(**inputs)``: ONNX-shaped arrays in and out.
    """

    model: Any
    program: GraphProgram
    descs: dict[str, list[Any]]
    nodes: list[ImportedNode]
    warnings: list[Finding]
    input_names: list[str]
    output_names: list[str]
    input_shapes: dict[str, tuple[int, ...]]
    output_shapes: dict[str, tuple[int, ...]]
    input_dtypes: dict[str, np.dtype[Any]]
    weights: str
    feature_level: DML_FEATURE_LEVEL
    owned_weights: dict[str, np.ndarray] = field(default_factory=dict)
    dml_input_sizes: dict[str, tuple[int, ...]] = field(default_factory=dict)  # graph input -> the DML sizes ``program`` takes
    output_dtypes: dict[str, np.dtype[Any]] = field(default_factory=dict)  # ONNX's (bool outputs are UINT8 in the graph)
    folded: list[str] = field(default_factory=list)  # the nodes evaluated at import (constants, shapes)

    @property
    def graph_desc(self) -> Any:
        return self.program.graph_desc

    @property
    def device(self) -> Device:
        return self.program.device

    def run(self, inputs: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """Run the graph on ONNX-shaped arrays by input name; returns ONNX-shaped outputs by name."""
        missing = [n for n in self.input_names if n not in inputs]
        unknown = sorted(set(inputs) - set(self.input_names))
        if missing or unknown:
            msg = f"the model takes {', '.join(self.input_names)}" + (f"; missing: {', '.join(missing)}" if missing else "") + (f"; unknown: {', '.join(unknown)}" if unknown else "")
            raise TypeError(msg)
        arrays: dict[str, Any] = dict(self.owned_weights)
        for name in self.input_names:
            if name not in self.dml_input_sizes:
                continue  # an input no live node reads
            value = np.asarray(inputs[name])
            if value.shape != self.input_shapes[name]:
                msg = f"input {name!r} has shape {value.shape}; the model was imported for {self.input_shapes[name]} (import again with input_shapes=... or use dmlpy.interop.onnx.run)"
                raise ValueError(msg)
            arrays[name] = (value.astype(np.uint8) if value.dtype == np.bool_ else value).reshape(self.dml_input_sizes[name])
        results = self.program(**arrays)
        outputs = {}
        for name in self.output_names:
            result = results[name].reshape(self.output_shapes[name])
            dtype = self.output_dtypes.get(name)
            outputs[name] = result.astype(dtype) if dtype is not None and result.dtype != dtype else result
        return outputs

    def __call__(self, **inputs: Any) -> dict[str, np.ndarray]:
        return self.run(inputs)


@dataclass
class _Value:
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    kind: str  # "input", "initializer", "constant" (folded at import), "node" (a builder tensor), "placeholder" (validate: a failed node's output)
    tensor: Tensor | None = None  # the builder tensor (node outputs and consumed inputs)
    array: np.ndarray | None = None  # initializers and folded constants
    origin: tuple[Any, ...] | None = None  # a view's layout op: ("view", input name) or ("transpose", input name, perm)


def _dml_dtype(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The NumPy dtype DirectML stores an ONNX element type as: bool is UINT8 (0 or 1)."""
    return np.dtype(np.uint8) if np.dtype(dtype) == np.bool_ else np.dtype(dtype)


class _ModelImporter:
    """One import: reads the graph, infers shapes, folds constants, maps every node, wires the live ones into a GraphBuilder."""

    def __init__(self, model: Any, *, device: Device, weights: str, input_shapes: Mapping[str, Sequence[int]] | None, fuse_activations: bool, ceil_mode_divisor: str, collect: bool,
                 constant_inputs: Mapping[str, Any] | None = None) -> None:  # fmt: skip
        self.onnx = _require_onnx()
        self.constant_inputs = {k: np.asarray(v) for k, v in (constant_inputs or {}).items()}
        self.model = model
        self.device = device
        self.options = _Options(device.feature_level, ceil_mode_divisor, device.strict)
        self.weights = weights
        self.input_shapes = {k: tuple(int(s) for s in v) for k, v in (input_shapes or {}).items()}
        self.fuse = fuse_activations
        self.collect = collect  # validate(): record errors and go on with the nodes that do not depend on them
        self.log = _Warnings(device.strict)
        self.errors: list[Finding] = []
        self.missing: dict[tuple[str, str], list[OnnxImportError]] = {}  # (rule, op type) -> the nodes (validate groups them)
        self.imported: list[ImportedNode] = []
        self.builder: GraphBuilder | None = None
        self.values: dict[str, _Value] = {}
        self.inferred: dict[str, tuple[tuple[int, ...] | None, np.dtype[Any] | None]] = {}
        self.consumers: dict[str, list[tuple[int, int]]] = {}
        self.graph_outputs: set[str] = set()
        self.weight_tensors: dict[tuple[str, tuple[int, ...], bool], Tensor] = {}
        self.owned: dict[str, np.ndarray] = {}
        self.dml_inputs: dict[str, tuple[int, ...]] = {}
        self.folded: list[str] = []
        self.failed_nodes: dict[int, str] = {}  # node index -> the first rule it broke (the hybrid runner places these on onnxruntime)

    def _record(self, error: OnnxImportError | DmlError) -> None:
        if not self.collect:
            raise error
        rules = {f.rule for f in error.findings}
        op_type = getattr(error, "op_type", None)
        if op_type and rules <= {UNSUPPORTED_OP.id, NOT_EMULATED_RULE.id}:
            self.missing.setdefault((next(iter(rules)), op_type), []).append(error)  # type: ignore[arg-type]
            return
        self.errors.extend(error.findings)

    def used(self, name: str) -> bool:
        """Whether a node or a graph output reads value ``name``."""
        return name in self.consumers or name in self.graph_outputs

    def run(self) -> ImportedModel | None:
        graph = self.model.graph
        opset = _default_opset(self.model)
        level = self.options.feature_level
        if level < FL.LEVEL_2_1:
            raise _fail(FEATURE_LEVEL_RULE, None, None, f"a model imports as a DML graph (IDMLDevice1::CompileGraph), which needs DML_FEATURE_LEVEL_2_1; the device targets {c_name(level)} (import_node maps single nodes at any level)",
                        expected=FL.LEVEL_2_1, actual=level, hresult=HRESULT.E_NOTIMPL)  # fmt: skip
        if self.weights == "constant" and level < FL.LEVEL_6_2:
            raise _fail(FEATURE_LEVEL_RULE, None, None, f"weights='constant' makes CONSTANT graph nodes, which need DML_FEATURE_LEVEL_6_2; the device targets {c_name(level)} (use weights='owned')",
                        expected=FL.LEVEL_6_2, actual=level, hresult=HRESULT.E_NOTIMPL)  # fmt: skip
        self.builder = GraphBuilder(self.device)
        self._read_initializers(graph)
        input_names = self._read_inputs(graph)
        self.inferred = self._infer_shapes()
        declared = {vi.name: _value_shape(vi) for vi in list(graph.value_info) + list(graph.output)}
        nodes = list(graph.node)
        outputs = [o.name for o in graph.output]
        self.graph_outputs = set(outputs)
        consumers = self.consumers
        for i, proto in enumerate(nodes):
            for k, name in enumerate(proto.input):
                if name:
                    consumers.setdefault(name, []).append((i, k))
        live = self._live_nodes(nodes, outputs)
        fused: dict[int, int] = {}  # activation node -> the convolution it is fused into
        failed: set[str] = set()  # values an error left undefined (and shape inference could not size)
        for i, proto in enumerate(nodes):
            if i in fused:
                continue
            if any(name in failed for name in proto.input if name):
                failed.update(proto.output)  # the error that left its input undefined covers it
                continue
            try:
                if not self._fold(proto, opset, i):
                    self._check_not_empty(proto, i, opset)
                    if proto.op_type in LOWERINGS and proto.domain in ("", "ai.onnx"):
                        self._node(nodes, i, opset, consumers, outputs, live, fused, declared)
                    else:
                        self._map(proto, i, opset, live, declared, nodes, fused)
            except (OnnxImportError, DmlError) as error:
                self._record(error)
                self.failed_nodes[i] = error.findings[0].rule if error.findings else type(error).__name__
                for name in proto.output:
                    shape, dtype = self.inferred.get(name, (None, None))
                    if shape is not None and dtype is not None and name not in self.values:
                        self.values[name] = _Value(shape, dtype, "placeholder")  # later nodes are still checked
                    elif name not in self.values:
                        failed.add(name)
        out_tensors: dict[str, Tensor] = {}
        for name in outputs:
            value = self.values.get(name)
            if name in failed or (value is not None and value.kind == "placeholder"):
                continue
            if value is None:
                self._record(_fail(UNSUPPORTED_GRAPH, None, None, f"graph output '{name}' is produced by no node", expected="a node output", actual=name))
                continue
            try:
                out_tensors[name] = self._output_tensor(name, value)
            except (OnnxImportError, DmlError) as error:
                self._record(error)
        self._emit_missing()
        if self.errors:
            return None
        self.imported.sort(key=lambda n: n.index)
        labels = _unique_labels(self.imported)
        program = self.builder.compile({**out_tensors, **getattr(self, "unused_outputs", {})})  # unused_outputs: TopK's unread output
        dml_warnings = [w for n in self.imported for w in n.warnings if not w.rule.startswith("ONNX.")]
        return ImportedModel(
            self.model, program, {labels[id(n)]: n.descs for n in self.imported}, list(self.imported), self.log.findings + dml_warnings, input_names, outputs,
            {n: self.values[n].shape for n in input_names}, {n: self.values[n].shape for n in outputs}, {n: self.values[n].dtype for n in input_names},
            self.weights, self.options.feature_level, dict(self.owned), dict(self.dml_inputs), {n: self.values[n].dtype for n in outputs}, list(self.folded),
        )  # fmt: skip

    def _check_not_empty(self, proto: Any, index: int, opset: int) -> None:
        """A node (not folded) whose input or output has a zero-sized dimension: ONNX.UNSUPPORTED_EMPTY_TENSOR (E_NOTIMPL)."""
        for name in filter(None, [*proto.input, *proto.output]):
            value = self.values.get(name)
            if value is not None and value.array is not None:
                continue  # a constant (a shape, scales, an empty roi): read at import, never a DirectML tensor
            shape = value.shape if value is not None else self.inferred.get(name, (None, None))[0]
            if shape is not None and 0 in shape:
                node = _node_info(self.onnx, proto, index, opset)
                raise _fail(UNSUPPORTED_EMPTY_TENSOR, node, None, f"value '{name}' has shape {list(shape)}, with no elements: a DirectML tensor has every size at least 1",
                            expected="every size >= 1", actual=list(shape), hresult=HRESULT.E_NOTIMPL)  # fmt: skip

    def _emit_missing(self) -> None:
        """validate: one finding per unsupported (or not emulated) op type, naming every node of it."""
        for (rule_id, op_type), errors in self.missing.items():
            first = errors[0].findings[0]
            nodes = [e.findings[0].path for e in errors]
            listed = ", ".join(nodes[:8]) + (f" and {len(nodes) - 8} more" if len(nodes) > 8 else "")
            message = f"{len(nodes)} node{'s' * (len(nodes) != 1)} ({listed}): {first.message}"
            self.errors.append(Finding(rule_id, first.severity, f"graph.node[op_type={op_type}]", first.expected, nodes, message))

    def _output_tensor(self, name: str, value: _Value) -> Tensor:
        """The tensor a graph output edge reads: a node's packed output; a view, graph input or constant goes through IDENTITY."""
        assert self.builder is not None
        from dmlpy.builder import _packed

        if value.kind in ("initializer", "constant"):
            if self.options.feature_level < FL.LEVEL_6_2:
                raise _fail(UNSUPPORTED_GRAPH, None, None, f"graph output '{name}' is a constant; a DML graph writes it through a CONSTANT node, which needs DML_FEATURE_LEVEL_6_2", expected=FL.LEVEL_6_2, actual=self.options.feature_level, hresult=HRESULT.E_NOTIMPL)
            tensor = self.builder.constant(np.ascontiguousarray(value.array).astype(_dml_dtype(value.dtype)).reshape(_dml_shape(value.shape)), name)
            return self.builder.element_wise("IDENTITY", tensor)
        tensor = self._view(None, name, _dml_shape(value.shape))
        if tensor.source[0] != "node" or not _packed(tensor):
            tensor = self.builder.element_wise("IDENTITY", tensor)
        return tensor

    def _infer_shapes(self) -> dict[str, tuple[tuple[int, ...] | None, np.dtype[Any] | None]]:
        """ONNX's shape inference (with data propagation) on the model with the input shapes fixed: every value's shape and type."""
        onnx = self.onnx
        model = onnx.ModelProto()
        model.CopyFrom(self.model)
        for name, array in self.constant_inputs.items():  # known values: shape inference propagates them
            model.graph.initializer.append(onnx.numpy_helper.from_array(np.asarray(self.values[name].array) if name in self.values else array, name))
        for vi in model.graph.input:
            value = self.values.get(vi.name)
            if value is None or value.kind != "input":
                continue
            shape = vi.type.tensor_type.shape
            del shape.dim[:]
            for size in value.shape:
                shape.dim.add().dim_value = size
        try:
            model = onnx.shape_inference.infer_shapes(model, data_prop=True)
        except Exception:  # noqa: BLE001 - a model onnx cannot infer is mapped from the importer's own shapes
            return {}
        found: dict[str, tuple[tuple[int, ...] | None, np.dtype[Any] | None]] = {}
        for vi in list(model.graph.value_info) + list(model.graph.output):
            dims = _value_shape(vi)
            shape = tuple(int(d) for d in dims) if dims is not None and all(isinstance(d, int) for d in dims) else None  # type: ignore[arg-type]
            try:
                dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type))
            except (KeyError, TypeError, ValueError):
                dtype = None
            found[vi.name] = (shape, dtype)
        return found

    def _fold(self, proto: Any, opset: int, index: int) -> bool:
        """Evaluate ``proto`` at import when its inputs are known (Constant, Shape, Size, and any node on constants)."""
        if proto.domain not in ("", "ai.onnx") or any(a.type in (5, 10) for a in proto.attribute):  # GRAPH, GRAPHS: control flow is not folded
            return False
        op = proto.op_type
        inputs = [name for name in proto.input if name]
        values = [self.values.get(name) for name in inputs]
        if any(v is None or v.kind == "placeholder" for v in values):
            return False
        if op in ("Shape", "Size"):
            shape = values[0].shape  # type: ignore[union-attr]
            if op == "Size":
                result = np.array(math.prod(shape), np.int64)
            else:
                start = int(next((a.i for a in proto.attribute if a.name == "start"), 0))
                end = next((a.i for a in proto.attribute if a.name == "end"), None)
                result = np.array(shape[start : (None if end is None else int(end))], np.int64)
            return self._store_folded(proto, [result])
        if op in ("RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"):
            return False
        if not inputs and op not in ("Constant",):
            return False
        if any(v.array is None for v in values):  # type: ignore[union-attr]
            return False
        if inputs and sum(v.array.size for v in values) > 1 << 22:  # type: ignore[union-attr]
            return False  # folding big weights would bake a second copy; map the node instead
        from onnx.reference import ReferenceEvaluator

        helper = self.onnx.helper
        names = [f"i{k}" for k in range(len(proto.input))]
        node = helper.make_node(op, [n if proto.input[k] else "" for k, n in enumerate(names)], [f"o{k}" for k in range(len(proto.output))])
        node.attribute.extend(proto.attribute)
        graph = helper.make_graph([node], "fold", [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.array.dtype), v.array.shape)  # type: ignore[union-attr]
                                                   for n, name, v in zip([n for k, n in enumerate(names) if proto.input[k]], inputs, values, strict=True)],
                                   [helper.make_empty_tensor_value_info(f"o{k}") for k in range(len(proto.output))])  # fmt: skip
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        try:
            results = ReferenceEvaluator(model).run(None, {n: v.array for n, v in zip([n for k, n in enumerate(names) if proto.input[k]], values, strict=True)})  # type: ignore[union-attr]
        except Exception:  # noqa: BLE001 - onnx's evaluator cannot fold it: map the node instead
            return False
        return self._store_folded(proto, [np.asarray(r) for r in results])

    def _store_folded(self, proto: Any, results: list[np.ndarray]) -> bool:
        for name, array in zip(proto.output, results, strict=False):
            if name:
                self.values[name] = _Value(tuple(int(s) for s in array.shape), array.dtype, "constant", array=array)
        self.folded.append(proto.name or proto.op_type)
        return True

    def _map(self, proto: Any, i: int, opset: int, live: set[int], declared: dict[str, Any], nodes: list[Any] | None = None, fused: dict[int, int] | None = None) -> None:
        """A node through MAPPINGS (GraphBuilder calls), or a layout-only view of its input; a Relu, LeakyRelu or Sigmoid
        that alone reads a Gemm, MatMul, Add, BatchNormalization or InstanceNormalization becomes its FusedActivation."""
        info = _node_info(self.onnx, proto, i, opset)
        if i not in live:  # no graph output depends on it: not placed in the graph
            for name in proto.output:
                shape, dtype = self.inferred.get(name, (None, None))
                if name and shape is not None and dtype is not None:
                    self.values[name] = _Value(shape, dtype, "placeholder")
            return
        assert self.builder is not None
        ctx = _Ctx(self, info, proto, opset)
        activation = None
        if self.fuse and nodes is not None and fused is not None and info.op_type in FUSES_ACTIVATION and len(proto.output) == 1:
            j = self._fusable(nodes, i, self.consumers, sorted(self.graph_outputs), opset, info.op_type)
            if j is not None and (info.op_type != "Add" or self.values[proto.input[0]].dtype.kind == "f"):
                activation = j
                ctx.activation = _fused_activation(_node_info(self.onnx, nodes[j], j, opset), self._clip_bounds(nodes[j], opset, nodes))
        first = len(self.builder._nodes)
        try:
            results = MAPPINGS[info.op_type](ctx)
        except OnnxImportError:
            raise
        except DmlError as error:
            raise _rejected(info, error, "DirectML rejects the mapping") from None
        except (ValueError, TypeError, IndexError, KeyError) as error:
            raise _fail(SHAPE, info, None, f"cannot be mapped: {error}", expected="a mappable node", actual=str(error)) from None
        made = [n for n in self.builder._nodes[first:] if n.desc is not None]
        for k, made_node in enumerate(made):  # the graph's node names say which ONNX node they come from
            made_node.name = info.label if len(made) == 1 else f"{info.label}:{k}"
        descs = [n.desc for n in made]
        from dmlpy.operators import spec_for_desc

        for desc in descs:
            spec = spec_for_desc(desc)
            if spec is not None and spec.reference is None:
                raise _fail(NOT_EMULATED_RULE, info, None, f"maps to {type(desc).__name__}, which DirectML accepts but dmlpy cannot run yet", expected=type(desc).__name__, actual="no kernel", hresult=HRESULT.E_NOTIMPL)
        shapes = []
        for j, result in enumerate(results):
            name = proto.output[j] if j < len(proto.output) else ""
            if result is None or not name:
                shapes.append(())
                continue
            if isinstance(result[0], str):
                if 0 in result[2]:
                    raise _fail(SHAPE, info, None, f"output {j} '{name}' has shape {tuple(result[2])}: an empty tensor, which DirectML cannot describe (every size is at least 1)",
                                expected="sizes >= 1", actual=tuple(result[2]), hresult=HRESULT.E_NOTIMPL)  # fmt: skip
                try:
                    value = self._layout(info, result)
                except DmlError as error:
                    raise OnnxImportError(error.hresult, error.findings, f"{info.where}: DirectML rejects the copy its view needs: {error}", node=info) from None
                except (ValueError, TypeError) as error:
                    raise _fail(SHAPE, info, None, f"cannot be mapped: {error}", expected="a mappable node", actual=str(error)) from None
            else:
                tensor, shape = result
                dtype = self.inferred.get(name, (None, None))[1] or numpy_dtype(tensor.data_type)
                value = _Value(shape, np.dtype(dtype), "node", tensor)
            self.values[name] = value
            shapes.append(value.shape)
            self._check_declared(info, name, value.shape, declared)
        act_info = None
        if activation is not None and ctx.activation_used:
            assert nodes is not None and fused is not None
            act_info = _node_info(self.onnx, nodes[activation], activation, opset)
            self.values[nodes[activation].output[0]] = self.values[proto.output[0]]
            fused[activation] = i
        self.imported.append(ImportedNode(info.label, info.op_type, info.version, i, descs, shapes, fused_activation=act_info.label if act_info is not None else None))
        if act_info is not None:
            self.imported.append(ImportedNode(act_info.label, act_info.op_type, act_info.version, act_info.index, [], [shapes[0]], fused_into=info.label))

    def _layout(self, info: _NodeInfo, result: tuple[Any, ...]) -> _Value:
        """A layout-only op's output: the same bytes as its input, through new sizes and strides."""
        kind, base_name, shape = result[0], result[1], tuple(result[2])
        base = self.values[base_name]
        if base.kind in ("initializer", "constant"):
            array = base.array
            assert array is not None
            if kind == "transpose":
                array = np.transpose(array, result[3])
            elif kind == "broadcast":
                array = np.broadcast_to(array, shape)
            return _Value(shape, base.dtype, "constant", array=np.ascontiguousarray(array).reshape(shape))
        if kind == "view":
            fused = self._space_depth_pattern(base_name, shape)
            if fused is not None:
                return fused
        tensor = self._view(info, base_name, _dml_shape(base.shape))
        if kind == "view":
            tensor = self._reshaped(tensor, _dml_shape(shape))
        elif kind == "transpose":
            assert self.builder is not None
            tensor = self.builder.transpose(tensor, result[3], copy=False) if base.shape else tensor
        else:
            from dmlpy.builder import _broadcast_view

            tensor = _broadcast_view(tensor, _dml_shape(shape))
        origin = (kind, base_name, tuple(result[3])) if kind == "transpose" else (kind, base_name)
        return _Value(shape, base.dtype, "node", tensor, origin=origin)

    def _space_depth_pattern(self, name: str, shape: tuple[int, ...]) -> _Value | None:
        """Reshape-Transpose-Reshape of a 4-D value that is SpaceToDepth or DepthToSpace (PixelUnshuffle and PixelShuffle as torch
        exports them: CRD; ONNX's own expansion: DCR) as one SPACE_TO_DEPTH1 / DEPTH_TO_SPACE1 node instead of a strided copy."""
        transposed = self.values[name]
        if transposed.origin is None or transposed.origin[0] != "transpose":
            return None
        middle = self.values[transposed.origin[1]]
        if middle.origin is None or middle.origin[0] != "view" or len(middle.shape) != 6 or len(shape) != 4:
            return None
        source_name = middle.origin[1]
        source = self.values[source_name]
        if source.kind not in ("node", "input") or len(source.shape) != 4:
            return None
        n, c, h, w = source.shape
        perm = transposed.origin[2]
        patterns = [  # (to_depth, order, block, the 6-D shape, the permutation, the output shape)
            (True, DML_DEPTH_SPACE_ORDER.COLUMN_ROW_DEPTH, middle.shape[3], lambda b: (n, c, h // b, b, w // b, b), (0, 1, 3, 5, 2, 4), lambda b: (n, c * b * b, h // b, w // b)),
            (True, DML_DEPTH_SPACE_ORDER.DEPTH_COLUMN_ROW, middle.shape[3], lambda b: (n, c, h // b, b, w // b, b), (0, 3, 5, 1, 2, 4), lambda b: (n, c * b * b, h // b, w // b)),
            (False, DML_DEPTH_SPACE_ORDER.COLUMN_ROW_DEPTH, middle.shape[2], lambda b: (n, c // (b * b), b, b, h, w), (0, 1, 4, 2, 5, 3), lambda b: (n, c // (b * b), h * b, w * b)),
            (False, DML_DEPTH_SPACE_ORDER.DEPTH_COLUMN_ROW, middle.shape[1], lambda b: (n, b, b, c // (b * b), h, w), (0, 3, 4, 1, 5, 2), lambda b: (n, c // (b * b), h * b, w * b)),
        ]  # fmt: skip
        for to_depth, order, block, middle_shape, permutation, output in patterns:
            if block < 1 or tuple(perm) != permutation or tuple(middle.shape) != middle_shape(block) or tuple(shape) != output(block):
                continue
            if (to_depth and (h % block or w % block)) or (not to_depth and c % (block * block)):
                continue
            assert self.builder is not None
            x = self._view(None, source_name, tuple(source.shape))
            tensor = self.builder.space_to_depth(x, block, order) if to_depth else self.builder.depth_to_space(x, block, order)
            return _Value(shape, source.dtype, "node", tensor)
        return None

    def _reshaped(self, tensor: Tensor, sizes: tuple[int, ...]) -> Tensor:
        """``tensor`` read with ``sizes``: the same bytes when it is packed, or leading 1s added or dropped; else copied once by IDENTITY."""
        if tensor.sizes == sizes:
            return tensor
        assert self.builder is not None
        core = tuple(s for s in sizes)
        own = tensor.sizes
        strip = lambda s: s[next((i for i, v in enumerate(s) if v != 1), len(s)) :]
        if strip(own) == strip(core) and tensor.desc.Strides is not None:
            kept = strip(own)
            strides = tuple(tensor.desc.Strides)[len(own) - len(kept) :]
            new = (0,) * (len(core) - len(kept)) + strides
            return dataclasses.replace(tensor, desc=dataclasses.replace(tensor.desc, DimensionCount=len(core), Sizes=core, Strides=new))
        return self.builder.reinterpret(tensor, core)

    def _read_initializers(self, graph: Any) -> None:
        numpy_helper = self.onnx.numpy_helper
        for tensor in graph.initializer:
            dtype = _np_dtype(self.onnx, tensor.data_type, None, f"initializer '{tensor.name}'")
            array = np.asarray(numpy_helper.to_array(tensor)).astype(dtype, copy=False)
            self.values[tensor.name] = _Value(tuple(array.shape), dtype, "initializer", array=array)

    def _read_inputs(self, graph: Any) -> list[str]:
        names = []
        for value_info in graph.input:
            if value_info.name in self.values:
                continue  # an initializer listed as an input (IR < 4): a weight
            if value_info.name in self.constant_inputs:  # fixed at import: a constant, as onnxruntime's DirectML provider reads such inputs on the CPU
                array = self.constant_inputs[value_info.name]
                dtype = _np_dtype(self.onnx, value_info.type.tensor_type.elem_type, None, f"graph input '{value_info.name}'")
                self.values[value_info.name] = _Value(tuple(array.shape), dtype, "constant", array=array.astype(dtype, copy=False))
                continue
            names.append(value_info.name)
            if value_info.type.WhichOneof("value") != "tensor_type":
                raise _fail(UNSUPPORTED_TYPE, None, None, f"graph input '{value_info.name}' is not a tensor", expected="tensor", actual=value_info.type.WhichOneof("value"), hresult=HRESULT.E_NOTIMPL)
            dtype = _np_dtype(self.onnx, value_info.type.tensor_type.elem_type, None, f"graph input '{value_info.name}'")
            declared = _value_shape(value_info)
            given = self.input_shapes.get(value_info.name)
            if given is not None:
                if declared is not None and (len(declared) != len(given) or any(isinstance(d, int) and d != g for d, g in zip(declared, given, strict=False))):
                    raise _fail(SHAPE, None, None, f"graph input '{value_info.name}' is given shape {given}, but the model declares {_shape_text(declared)}", expected=_shape_text(declared), actual=given)
                shape = given
            elif declared is not None and all(isinstance(d, int) for d in declared):
                shape = tuple(int(d) for d in declared)  # type: ignore[arg-type]
            else:
                raise _fail(SHAPE, None, None, f"graph input '{value_info.name}' has shape {_shape_text(declared)}, which is not static: pass input_shapes={{'{value_info.name}': (...)}} (the CLI: --input-shape {value_info.name}=...; dmlpy.interop.onnx.run takes them from the arrays)",
                            expected="static sizes", actual=_shape_text(declared))  # fmt: skip
            self.values[value_info.name] = _Value(shape, dtype, "input")
        unknown = sorted(set(self.input_shapes) - set(names) - set(self.constant_inputs))
        unknown += sorted(set(self.constant_inputs) - {vi.name for vi in graph.input})
        if unknown:
            raise _fail(SHAPE, None, None, f"input_shapes names {', '.join(unknown)}, which {'is' if len(unknown) == 1 else 'are'} not a graph input (inputs: {', '.join(names) or 'none'})", expected=names, actual=unknown)
        return names

    @staticmethod
    def _live_nodes(nodes: list[Any], outputs: list[str]) -> set[int]:
        """The nodes some graph output depends on (a DML graph connects every node output)."""
        producer = {name: i for i, proto in enumerate(nodes) for name in proto.output if name}
        live: set[int] = set()
        stack = [producer[name] for name in outputs if name in producer]
        while stack:
            i = stack.pop()
            if i in live:
                continue
            live.add(i)
            stack.extend(producer[name] for name in nodes[i].input if name in producer)
        return live

    def _node(self, nodes: list[Any], i: int, opset: int, consumers: dict[str, list[tuple[int, int]]], outputs: list[str], live: set[int], fused: dict[int, int],
              declared: dict[str, Any]) -> None:  # fmt: skip
        proto = nodes[i]
        info = _node_info(self.onnx, proto, i, opset)
        if len(proto.output) != 1 or not proto.output[0]:
            raise _fail(UNSUPPORTED_GRAPH, info, None, f"has outputs {list(proto.output)}; {info.op_type} has exactly one", expected=1, actual=len(proto.output))
        inputs: list[_Input | None] = []
        for k, name in enumerate(proto.input):
            if not name:
                inputs.append(None)
                continue
            value = self.values.get(name)
            if value is None:
                later = any(name in nodes[j].output for j in range(i + 1, len(nodes)))
                reason = "a later node produces it: the nodes are not in topological order, as ONNX requires" if later else "no graph input, initializer or earlier node produces it"
                raise _fail(UNSUPPORTED_GRAPH, info, None, f"input {k} '{name}': {reason}", expected="a known value", actual=name)
            flags = DML_TENSOR_FLAGS.OWNED_BY_DML if value.kind == "initializer" and self._owned() else DML_TENSOR_FLAGS.NONE
            inputs.append(_Input(value.shape, value.dtype, flags))
        first_warning = len(self.log.findings)
        lowered, dml_warnings = _lower(info, inputs, self.options, self.log)
        activation = self._fusable(nodes, i, consumers, outputs, opset, info.op_type) if info.op_type in CONVOLUTIONS and self.fuse else None
        names = [proto.output[0]]
        act_info = None
        if activation is not None:
            act_info = _node_info(self.onnx, nodes[activation], activation, opset)
            lowered.desc.FusedActivation = _fused_activation(act_info, self._clip_bounds(nodes[activation], opset, nodes))
            dml_warnings = _validated(info, lowered, self.options)
            names.append(nodes[activation].output[0])
        for name in names:
            self._check_declared(info, name, lowered.output_shape, declared)
        node_warnings = self.log.findings[first_warning:] + dml_warnings
        result = ImportedNode(info.label, info.op_type, info.version, i, [lowered.desc], [lowered.output_shape], node_warnings, lowered.inputs, lowered.dml_sizes,
                              fused_activation=act_info.label if act_info is not None else None)  # fmt: skip
        dtype = inputs[0].dtype if inputs and inputs[0] is not None else np.dtype(np.float32)
        tensor = None
        if i in live:  # a node no graph output depends on is mapped and validated, but not placed in the graph
            assert self.builder is not None
            tensors = {field_name: self._tensor(info, proto.input[k], lowered.dml_sizes[field_name]) for field_name, k in lowered.inputs.items()}
            arguments = {field_name: proto.input[k] for field_name, k in lowered.inputs.items()}
            tensor = self.builder.add_operator(lowered.desc, tensors, call=info.op_type, arguments=arguments, name=info.label)[0]
        for name in names:
            self.values[name] = _Value(lowered.output_shape, dtype, "node", tensor)
        self.imported.append(result)
        if act_info is not None:
            assert activation is not None
            fused[activation] = i
            self.imported.append(ImportedNode(act_info.label, act_info.op_type, act_info.version, activation, [], [lowered.output_shape], fused_into=info.label))

    def _owned(self) -> bool:
        return self.weights == "owned" or (self.weights == "auto" and self.options.feature_level < FL.LEVEL_6_2)

    def _fusable(self, nodes: list[Any], i: int, consumers: dict[str, list[tuple[int, int]]], outputs: list[str], opset: int, host: str) -> int | None:
        """The activation node that alone consumes node ``i``'s output (a ``host`` operator), if any."""
        name = nodes[i].output[0]
        users = consumers.get(name, [])
        if name in outputs or len(users) != 1:
            return None
        j, k = users[0]
        candidate = nodes[j]
        if k != 0 or candidate.domain not in ("", "ai.onnx") or len(candidate.output) != 1:
            return None
        if candidate.op_type == "Clip":
            if host not in CLIP_HOSTS or self.options.feature_level < FL.LEVEL_6_0 or self._clip_bounds(candidate, opset, nodes) is None:
                return None
        elif candidate.op_type not in ACTIVATIONS or len(candidate.input) != 1:
            return None
        try:
            _node_info(self.onnx, candidate, j, opset)
        except OnnxImportError:
            return None  # the activation raises its own error when its turn comes
        return j

    def _clip_bounds(self, proto: Any, opset: int, nodes: list[Any]) -> tuple[float, float] | None:
        """A Clip node's (min, max) when both are known at import (attributes before opset 11, constant inputs from it,
        also from a Constant node not folded yet: exporters put them just before the Clip, after its host; an absent
        bound is an infinity), else None (and None for any other node)."""
        if proto.op_type != "Clip":
            return None
        info = _node_info(self.onnx, proto, 0, opset)
        if info.version < 11:
            low, high = info.attributes.get("min"), info.attributes.get("max")
            return -np.inf if low is None else float(low), np.inf if high is None else float(high)
        bounds = [-np.inf, np.inf]
        for k, name in enumerate(proto.input[1:3]):
            if not name:
                continue
            value = self.values.get(name)
            array = value.array if value is not None else self._constant_node_output(nodes, name)
            if array is None or array.size != 1 or array.dtype.kind != "f":
                return None
            bounds[k] = float(array.reshape(()))
        return bounds[0], bounds[1]

    def _constant_node_output(self, nodes: list[Any], name: str) -> np.ndarray | None:
        """The tensor a Constant node (``value`` or ``value_float``) outputs as ``name``, or None."""
        for proto in nodes:
            if proto.op_type == "Constant" and proto.domain in ("", "ai.onnx") and list(proto.output) == [name]:
                for attribute in proto.attribute:
                    if attribute.name == "value":
                        return np.asarray(self.onnx.numpy_helper.to_array(attribute.t))
                    if attribute.name == "value_float":
                        return np.asarray(attribute.f, np.float32)
        return None

    def _tensor(self, node: _NodeInfo, name: str, sizes: tuple[int, ...]) -> Tensor:
        """The builder tensor for ONNX value ``name``, described with ``sizes`` (the DML sizes its consumer slot needs)."""
        value = self.values[name]
        return self._view(node, name, sizes, owned=value.kind == "initializer" and self._owned())

    def _view(self, node: _NodeInfo | None, name: str, sizes: tuple[int, ...], *, owned: bool = False) -> Tensor:
        """ONNX value ``name`` read with DML ``sizes``: the same bytes (a reinterpretation), a constant, or a graph input made at its first use."""
        value = self.values[name]
        assert self.builder is not None
        if value.kind in ("initializer", "constant"):
            return self._weight(name, value, sizes, owned)
        if value.tensor is None:  # a graph input (or, in validate, a failed node's output) gets the sizes of its first consumer
            graph_name = name if value.kind == "input" else f"unmapped:{name}"
            value.tensor = self.builder.input(graph_name, _dml_dtype(value.dtype), sizes)
            if value.kind == "input":
                self.dml_inputs[name] = sizes
            return value.tensor
        return self._reshaped(value.tensor, sizes)

    def _weight(self, name: str, value: _Value, sizes: tuple[int, ...], owned: bool) -> Tensor:
        """An initializer or folded constant as a CONSTANT node, or as a graph input bound from ``owned_weights``."""
        assert self.builder is not None and value.array is not None
        key = (name, sizes, owned)
        if key not in self.weight_tensors:
            array = np.ascontiguousarray(value.array.astype(_dml_dtype(value.dtype), copy=False).reshape(sizes))
            if owned or self._owned():
                graph_name = name
                taken = {n for n, _ in self.builder._inputs}
                k = 0
                while graph_name in taken:
                    k += 1
                    graph_name = f"{name}:{'x'.join(map(str, sizes))}" + (f":{k}" if k > 1 else "")
                self.weight_tensors[key] = self.builder.input(graph_name, array.dtype, sizes, owned=owned)
                self.owned[graph_name] = array
            else:
                self.weight_tensors[key] = self.builder.constant(array, name)
        return self.weight_tensors[key]

    def _check_declared(self, node: _NodeInfo, name: str, shape: tuple[int, ...], declared: dict[str, Any]) -> None:
        dims = declared.get(name)
        if dims is None:
            return
        if len(dims) != len(shape) or any(isinstance(d, int) and d != s for d, s in zip(dims, shape, strict=False)):
            self.log.report(DECLARED_SHAPE, node, None, f"output '{name}' is declared {_shape_text(dims)}, but ONNX's definition gives {shape}; dmlpy uses {shape}", expected=shape, actual=_shape_text(dims))


def _shape_text(dims: Sequence[Any] | None) -> str:
    if dims is None:
        return "unknown"
    return "(" + ", ".join("?" if d is None else str(d) for d in dims) + ")"


def _unique_labels(nodes: list[ImportedNode]) -> dict[int, str]:
    seen: dict[str, int] = {}
    for n in nodes:
        seen[n.label] = seen.get(n.label, 0) + 1
    return {id(n): n.label if seen[n.label] == 1 else f"{n.label}#{n.index}" for n in nodes}


def _resolve(feature_level: DML_FEATURE_LEVEL | int | None, device: Device | None, backend: str, strict: bool) -> Device:
    if device is not None:
        if feature_level is not None and DML_FEATURE_LEVEL(feature_level) != device.feature_level:
            msg = f"feature_level {c_name(DML_FEATURE_LEVEL(feature_level))} differs from the device's {c_name(device.feature_level)}"
            raise ValueError(msg)
        if strict and not device.strict:
            msg = "strict=True with a device created without strict: create the device with dmlpy.create_device(..., strict=True)"
            raise ValueError(msg)
        return device
    return create_device(FL.LEVEL_6_4 if feature_level is None else feature_level, backend=backend, strict=strict)


def _check_options(weights: str, ceil_mode_divisor: str) -> None:
    if weights not in WEIGHTS_MODES:
        msg = f"weights must be one of {', '.join(WEIGHTS_MODES)}, not {weights!r}"
        raise ValueError(msg)
    if ceil_mode_divisor not in CEIL_MODE_DIVISORS:
        msg = f"ceil_mode_divisor must be one of {', '.join(CEIL_MODE_DIVISORS)}, not {ceil_mode_divisor!r}"
        raise ValueError(msg)


def import_model(
    model: Any,
    *,
    feature_level: DML_FEATURE_LEVEL | int | None = None,
    weights: str = "auto",
    device: Device | None = None,
    backend: str = "auto",
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    fuse_activations: bool = True,
    ceil_mode_divisor: str = "padded",
    strict: bool = False,
    constant_inputs: Mapping[str, Any] | None = None,
    fallback: str | None = None,
) -> Any:
    """An ONNX model (ModelProto, path or bytes) as a compiled DML graph, built with ``GraphBuilder``.

    ``feature_level`` (default DML_FEATURE_LEVEL_6_4, or the device's) decides the descs
    and what the weights become: ``weights="constant"`` (CONSTANT nodes, FL 6.2),
    ``"owned"`` (OWNED_BY_DML graph inputs, bound at initialization), ``"auto"`` (constants
    when the level has them). ``input_shapes`` fixes symbolic input dims. Relu, LeakyRelu
    and Sigmoid fuse into the convolution before them when it feeds nothing else, and from
    feature level 6.0 a Clip with constant bounds (ReLU6) into a Conv, ConvTranspose, Gemm or
    MatMul (``fuse_activations``). ``ceil_mode_divisor="full_window"`` divides ceil-mode overhang
    windows by the whole kernel (see ``ONNX.CEIL_MODE_DIVISOR``). ``strict`` makes
    DirectML's warnings errors. ``constant_inputs`` fixes graph inputs' values at import (they
    are folded like initializers: a Reshape shape or Slice starts fed as an input; ``run`` does
    this for every input that only such parameter slots read). Raises ``OnnxImportError`` at
    the first problem; ``validate`` collects them all.

    ``fallback="onnxruntime"`` (onnxruntime installed) imports what dmlpy cannot take too: the
    nodes that do not map run on onnxruntime, the rest as DML graphs, in consecutive segments,
    as onnxruntime's own DirectML provider hands nodes it cannot take to its CPU provider. It
    returns a ``dmlpy.interop.onnx_hybrid.HybridModel``, whose ``placement`` says which node ran where.
    """
    _check_options(weights, ceil_mode_divisor)
    proto = load(model)
    if fallback is not None:
        from dmlpy.interop.onnx_hybrid import import_hybrid  # noqa: PLC0415 - the hybrid runner sits above this module

        return import_hybrid(proto, fallback, device=_resolve(feature_level, device, backend, strict), weights=weights, input_shapes=input_shapes,
                             fuse_activations=fuse_activations, ceil_mode_divisor=ceil_mode_divisor)  # fmt: skip
    importer = _ModelImporter(proto, device=_resolve(feature_level, device, backend, strict), weights=weights, input_shapes=input_shapes,
                              fuse_activations=fuse_activations, ceil_mode_divisor=ceil_mode_divisor, collect=False, constant_inputs=constant_inputs)  # fmt: skip
    imported = importer.run()
    assert imported is not None
    return imported


def run(model: Any, inputs: Mapping[str, Any], **options: Any) -> dict[str, np.ndarray]:
    """Import ``model`` (shapes taken from ``inputs``) and run it: ONNX-shaped arrays in and out, by name.

    ``options`` are ``import_model``'s. An ``ImportedModel`` runs as it is.
    """
    if isinstance(model, ImportedModel):
        if options:
            msg = "run(ImportedModel, ...) takes no import options; they were fixed at import"
            raise TypeError(msg)
        return model.run(inputs)
    proto = load(model)
    graph_inputs = {vi.name for vi in proto.graph.input} - {t.name for t in proto.graph.initializer}
    shapes = dict(options.pop("input_shapes", None) or {})
    constants = dict(options.pop("constant_inputs", None) or {})
    parameters = _parameter_inputs(proto)
    for name, value in inputs.items():
        if name in parameters and name in graph_inputs:
            constants.setdefault(name, np.asarray(value))
        elif name in graph_inputs:
            shapes.setdefault(name, np.shape(value))
    imported = import_model(proto, input_shapes=shapes, constant_inputs=constants, **options)
    return imported.run({k: v for k, v in inputs.items() if k not in constants})


# Node inputs DirectML takes as desc fields (onnxruntime's DirectML provider reads them on the CPU): (op type, input index)
PARAMETER_SLOTS = frozenset({
    ("Reshape", 1), ("Expand", 1), ("Tile", 1), ("Split", 1), ("Squeeze", 1), ("Unsqueeze", 1), ("Slice", 1), ("Slice", 2), ("Slice", 3), ("Slice", 4),
    ("Pad", 1), ("Pad", 2), ("Pad", 3), ("Resize", 1), ("Resize", 2), ("Resize", 3), ("Upsample", 1), ("Clip", 1), ("Clip", 2), ("TopK", 1),
    ("ReduceSum", 1), ("ReduceMean", 1), ("ReduceMax", 1), ("ReduceMin", 1), ("ReduceProd", 1), ("ReduceL1", 1), ("ReduceL2", 1), ("ReduceLogSum", 1),
    ("ReduceLogSumExp", 1), ("ReduceSumSquare", 1), ("ConstantOfShape", 0), ("Range", 0), ("Range", 1), ("Range", 2), ("OneHot", 1), ("Dropout", 1), ("Dropout", 2), ("CumSum", 1), ("CumProd", 1),
})  # fmt: skip


def _parameter_inputs(proto: Any) -> set[str]:
    """Graph inputs that only parameter slots (PARAMETER_SLOTS) read."""
    readers: dict[str, list[bool]] = {}
    for node in proto.graph.node:
        for k, name in enumerate(node.input):
            if name:
                readers.setdefault(name, []).append((node.op_type, k) in PARAMETER_SLOTS)
    outputs = {o.name for o in proto.graph.output}
    return {name for name, slots in readers.items() if all(slots) and name not in outputs}


def validate(model: Any, **options: Any) -> Report:
    """Every finding for importing ``model``: ``ONNX.*`` and DirectML's, errors and warnings, in a ``dmlpy.Report``.

    ``options`` are ``import_model``'s. Nothing about the model raises: errors of one node do
    not stop the others (a node that reads a failed node's output is skipped), and when every
    node maps, the graph is also compiled on the emulated device.
    """
    weights = options.pop("weights", "auto")
    ceil_mode_divisor = options.pop("ceil_mode_divisor", "padded")
    _check_options(weights, ceil_mode_divisor)
    device = _resolve(options.pop("feature_level", None), options.pop("device", None), options.pop("backend", "auto"), options.pop("strict", False))
    input_shapes = options.pop("input_shapes", None)
    fuse_activations = options.pop("fuse_activations", True)
    constant_inputs = options.pop("constant_inputs", None)
    if options:
        msg = f"unknown options: {', '.join(sorted(options))}"
        raise TypeError(msg)
    try:
        proto = load(model)
    except (OSError, TypeError):
        raise
    except Exception as error:  # noqa: BLE001 - protobuf's DecodeError and friends: the bytes are not a model
        return Report([Finding(UNSUPPORTED_GRAPH.id, Severity.ERROR, "model", "an ONNX ModelProto", type(error).__name__, f"cannot be parsed as an ONNX model: {error}")])
    importer = _ModelImporter(proto, device=device, weights=weights, input_shapes=input_shapes, fuse_activations=fuse_activations, ceil_mode_divisor=ceil_mode_divisor, collect=True,
                              constant_inputs=constant_inputs)  # fmt: skip
    findings: list[Finding] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DmlWarning)
        try:
            imported = importer.run()
        except (OnnxImportError, DmlError) as error:
            findings.extend(error.findings)
            imported = None
    findings.extend(importer.errors)
    findings.extend(importer.log.findings)
    if imported is not None:
        findings.extend(imported.warnings)
    else:
        findings.extend(w for n in importer.imported for w in n.warnings)
    return Report(_dedup(findings))


def _dedup(findings: list[Finding]) -> list[Finding]:
    seen: set[tuple[str, str, str]] = set()
    out = []
    for f in findings:
        key = (f.rule, f.path, f.message)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


__all__ = [
    "CEIL_MODE_DIVISORS",
    "MAPPINGS",
    "PARAMETER_SLOTS",
    "SUPPORTED_VERSIONS",
    "WEIGHTS_MODES",
    "ImportedModel",
    "ImportedNode",
    "OnnxImportError",
    "import_model",
    "import_node",
    "lifted",
    "load",
    "run",
    "validate",
]
