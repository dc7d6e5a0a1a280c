"""ONNX -> DirectML: an ONNX node becomes DML operator descs, an ONNX model becomes a DML graph.

    import dmlpy.interop.onnx as dml_onnx

    imported = dml_onnx.import_model("decoder.onnx")     # a compiled DML graph
    outputs = imported.run({"x": x})                       # {"y": ndarray}, ONNX shapes
    dml_onnx.run("decoder.onnx", {"x": x})                 # the same in one call
    dml_onnx.validate("decoder.onnx")                      # a dmlpy.Report, nothing raised
    node = dml_onnx.import_node(node_proto, [(1, 3, 8, 8)]) # node.desc: the DML operator desc

``onnx`` is an optional dependency (``pip install dmlpy[onnx]``): it is imported by the
functions that read ONNX protos, never at module import.

Operators and versions (onnxruntime's DirectML provider; the ONNX operator pages, per opset):

=================  ===================  ==================================================
ONNX               versions             DirectML
=================  ===================  ==================================================
AveragePool        1, 7, 10, 11, 19, 22 AVERAGE_POOLING; AVERAGE_POOLING1 (FL 6.2) when a
                                        dilation is not 1
GlobalAveragePool  1, 22                AVERAGE_POOLING, window = the spatial sizes
Conv               1, 11, 22            CONVOLUTION {CROSS_CORRELATION, FORWARD}
ConvTranspose      1, 11, 22            CONVOLUTION {CROSS_CORRELATION, BACKWARD}, W unchanged
SpaceToDepth       1, 13, 28 (``mode``) SPACE_TO_DEPTH1 (FL 2.1; SPACE_TO_DEPTH below it)
DepthToSpace       1, 11, 13, 28        DEPTH_TO_SPACE1 (FL 2.1; DEPTH_TO_SPACE below it)
Relu, LeakyRelu,   all                  fused into the convolution that feeds them when it
Sigmoid                                 feeds nothing else; else ACTIVATION_RELU/LEAKY_RELU/
                                        SIGMOID
=================  ===================  ==================================================

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
* Unsupported operators, versions, attributes, types and shapes raise ``OnnxImportError``
  (a ``DmlError``) whose findings carry ``ONNX.*`` rule ids and name the node (index and
  name), its op type and version, and the attribute. A mapped desc that DirectML would reject
  raises with DirectML's own findings, prefixed by the node.
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dmlpy.builder import GraphBuilder, GraphProgram, Tensor
from dmlpy.device import Device, create_device
from dmlpy.device import run as run_desc
from dmlpy.device import validate as validate_desc
from dmlpy.enums import (
    DML_CONVOLUTION_DIRECTION,
    DML_CONVOLUTION_MODE,
    DML_DEPTH_SPACE_ORDER,
    DML_FEATURE_LEVEL,
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
from dmlpy.tensor import DML_TENSOR_DESC, as_data_type, buffer_tensor

FL = DML_FEATURE_LEVEL

# ---------------------------------------------------------------------------------------
# Rules (docs/rules.md lists them with every other rule)

_SPEC = "onnx.ai/onnx/operators (per opset)"
UNSUPPORTED_OP = rule("ONNX.UNSUPPORTED_OP", "Every node is an operator and version the importer maps: AveragePool, GlobalAveragePool, Conv, ConvTranspose, SpaceToDepth, DepthToSpace, Relu, LeakyRelu, Sigmoid of the default domain.", source="docs/deviations.md")
UNSUPPORTED_ATTRIBUTE = rule("ONNX.UNSUPPORTED_ATTRIBUTE", "Every attribute value is one the DirectML mapping can express (for example ConvTranspose output_padding below the stride).", source="the DML_CONVOLUTION_OPERATOR_DESC page and onnxruntime's DirectML provider")
INVALID_ATTRIBUTE = rule("ONNX.INVALID_ATTRIBUTE", "Every attribute is one the operator's version defines, of its type, with a valid value (lengths, ranges, required attributes).", source=_SPEC)
UNSUPPORTED_TYPE = rule("ONNX.UNSUPPORTED_TYPE", "Every element type has a DirectML data type.", source="the DML_TENSOR_DATA_TYPE page")
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
    return buffer_tensor(as_data_type(inp.dtype), sizes, flags=inp.flags)


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


def _fused_activation(node: _NodeInfo) -> Any:
    """The FusedActivation for an activation node (tensors NULL)."""
    if node.op_type == "Relu":
        return FusedActivation.relu()
    if node.op_type == "LeakyRelu":
        return FusedActivation.leaky_relu(float(node.attributes.get("alpha", 0.01)))
    return FusedActivation.sigmoid()


def _lower_activation(node: _NodeInfo, inputs: list[_Input | None], options: _Options, log: _Warnings) -> _Lowered:
    x = _required(node, inputs, 0, "X")
    sizes = lifted(x.shape)
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
    if errors:
        name = type(lowered.desc).__name__
        summary = f"{node.where}: DirectML rejects the mapped {name} ({'; '.join(f.rule for f in errors)})"
        raise OnnxImportError(HRESULT.E_INVALIDARG, errors, summary, node=node)
    return report.warnings


# ---------------------------------------------------------------------------------------
# Reading protos


def _np_dtype(onnx: Any, elem_type: int, node: _NodeInfo | None, what: str) -> np.dtype[Any]:
    try:
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type))
        as_data_type(dtype)
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
        raise _fail(UNSUPPORTED_OP, node, None, f"is in domain '{proto.domain}'; the importer maps default-domain ONNX operators ({', '.join(SUPPORTED_VERSIONS)})", expected="ai.onnx", actual=proto.domain, hresult=HRESULT.E_NOTIMPL)
    try:
        schema = onnx.defs.get_schema(proto.op_type, opset, "")
    except onnx.defs.SchemaError:
        schema = None
    if proto.op_type not in SUPPORTED_VERSIONS:
        exists = "an ONNX operator the importer does not map" if schema is not None else f"not an ONNX operator at opset {opset}"
        raise _fail(UNSUPPORTED_OP, node, None, f"{proto.op_type} is {exists}; supported: {', '.join(SUPPORTED_VERSIONS)}", expected=list(SUPPORTED_VERSIONS), actual=proto.op_type, hresult=HRESULT.E_NOTIMPL)
    if schema is None:
        raise _fail(UNSUPPORTED_OP, node, None, f"{proto.op_type} does not exist at opset {opset}", expected=f"opset >= {SUPPORTED_VERSIONS[proto.op_type][0]}", actual=opset, hresult=HRESULT.E_NOTIMPL)
    node.version = int(schema.since_version)
    if node.version not in SUPPORTED_VERSIONS[proto.op_type]:
        versions = ", ".join(str(v) for v in SUPPORTED_VERSIONS[proto.op_type])
        raise _fail(UNSUPPORTED_OP, node, None, f"{proto.op_type}-{node.version} (opset {opset}) is not a version the importer maps ({versions})", expected=list(SUPPORTED_VERSIONS[proto.op_type]), actual=node.version, hresult=HRESULT.E_NOTIMPL)
    node.attributes = {k: v for k, v in _attributes(onnx, proto, node, schema).items() if k not in IGNORED_ATTRIBUTES}
    return node


def _lower(node: _NodeInfo, inputs: list[_Input | None], options: _Options, log: _Warnings) -> tuple[_Lowered, list[Finding]]:
    lowered = LOWERINGS[node.op_type](node, inputs, options, log)
    return lowered, _validated(node, lowered, options)


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
            arrays[name] = value.reshape(self.dml_input_sizes[name])
        results = self.program(**arrays)
        return {name: results[name].reshape(self.output_shapes[name]) for name in self.output_names}

    def __call__(self, **inputs: Any) -> dict[str, np.ndarray]:
        return self.run(inputs)


@dataclass
class _Value:
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    kind: str  # "input", "initializer", "node"
    tensor: Tensor | None = None  # the builder tensor (node outputs and consumed inputs)
    array: np.ndarray | None = None  # initializers


class _ModelImporter:
    """One import: reads the graph, lowers every node, wires the live ones into a GraphBuilder."""

    def __init__(self, model: Any, *, device: Device, weights: str, input_shapes: Mapping[str, Sequence[int]] | None, fuse_activations: bool, ceil_mode_divisor: str, collect: bool) -> None:
        self.onnx = _require_onnx()
        self.model = model
        self.device = device
        self.options = _Options(device.feature_level, ceil_mode_divisor, device.strict)
        self.weights = weights
        self.input_shapes = {k: tuple(int(s) for s in v) for k, v in (input_shapes or {}).items()}
        self.fuse = fuse_activations
        self.collect = collect  # validate(): record errors and go on with the nodes that do not depend on them
        self.log = _Warnings(device.strict)
        self.errors: list[Finding] = []
        self.imported: list[ImportedNode] = []
        self.builder: GraphBuilder | None = None
        self.values: dict[str, _Value] = {}
        self.weight_tensors: dict[tuple[str, tuple[int, ...]], Tensor] = {}
        self.owned: dict[str, np.ndarray] = {}
        self.dml_inputs: dict[str, tuple[int, ...]] = {}

    def _record(self, error: OnnxImportError | DmlError) -> None:
        if not self.collect:
            raise error
        self.errors.extend(error.findings)

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
        declared = {vi.name: _value_shape(vi) for vi in list(graph.value_info) + list(graph.output)}
        nodes = list(graph.node)
        outputs = [o.name for o in graph.output]
        consumers: dict[str, list[tuple[int, int]]] = {}
        for i, proto in enumerate(nodes):
            for k, name in enumerate(proto.input):
                if name:
                    consumers.setdefault(name, []).append((i, k))
        live = self._live_nodes(nodes, outputs)
        fused: dict[int, int] = {}  # activation node -> the convolution it is fused into
        failed: set[str] = set()  # values an error left undefined
        for i, proto in enumerate(nodes):
            if i in fused:
                continue
            if any(name in failed for name in proto.input if name):
                failed.update(proto.output)  # the error that left its input undefined covers it
                continue
            try:
                self._node(nodes, i, opset, consumers, outputs, live, fused, declared)
            except (OnnxImportError, DmlError) as error:
                self._record(error)
                failed.update(proto.output)
        for name in outputs:
            value = self.values.get(name)
            if name in failed:
                continue
            if value is None:
                self._record(_fail(UNSUPPORTED_GRAPH, None, None, f"graph output '{name}' is produced by no node", expected="a node output", actual=name))
            elif value.kind != "node":
                self._record(_fail(UNSUPPORTED_GRAPH, None, None, f"graph output '{name}' is a graph {value.kind}, not a node output: every DML graph output is written by an operator node", expected="a node output", actual=value.kind))
        if self.errors:
            return None
        self.imported.sort(key=lambda n: n.index)
        labels = _unique_labels(self.imported)
        program = self.builder.compile({name: self.values[name].tensor for name in outputs})  # type: ignore[misc]
        dml_warnings = [w for n in self.imported for w in n.warnings if not w.rule.startswith("ONNX.")]
        return ImportedModel(
            self.model, program, {labels[id(n)]: n.descs for n in self.imported}, list(self.imported), self.log.findings + dml_warnings, input_names, outputs,
            {n: self.values[n].shape for n in input_names}, {n: self.values[n].shape for n in outputs}, {n: self.values[n].dtype for n in input_names},
            self.weights, self.options.feature_level, dict(self.owned), dict(self.dml_inputs),
        )  # fmt: skip

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
                raise _fail(SHAPE, None, None, f"graph input '{value_info.name}' has shape {_shape_text(declared)}, which is not static: pass input_shapes={{'{value_info.name}': (...)}} (dmlpy.interop.onnx.run takes them from the arrays)",
                            expected="static sizes", actual=_shape_text(declared))  # fmt: skip
            self.values[value_info.name] = _Value(shape, dtype, "input")
        unknown = sorted(set(self.input_shapes) - set(names))
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
        activation = self._fusable(nodes, i, consumers, outputs, opset) if info.op_type in CONVOLUTIONS and self.fuse else None
        names = [proto.output[0]]
        act_info = None
        if activation is not None:
            act_info = _node_info(self.onnx, nodes[activation], activation, opset)
            lowered.desc.FusedActivation = _fused_activation(act_info)
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

    def _fusable(self, nodes: list[Any], i: int, consumers: dict[str, list[tuple[int, int]]], outputs: list[str], opset: int) -> int | None:
        """The activation node that alone consumes convolution ``i``'s output, if any."""
        name = nodes[i].output[0]
        users = consumers.get(name, [])
        if name in outputs or len(users) != 1:
            return None
        j, k = users[0]
        candidate = nodes[j]
        if k != 0 or candidate.op_type not in ACTIVATIONS or candidate.domain not in ("", "ai.onnx") or len(candidate.input) != 1 or len(candidate.output) != 1:
            return None
        try:
            _node_info(self.onnx, candidate, j, opset)
        except OnnxImportError:
            return None  # the activation raises its own error when its turn comes
        return j

    def _tensor(self, node: _NodeInfo, name: str, sizes: tuple[int, ...]) -> Tensor:
        """The builder tensor for ONNX value ``name``, described with ``sizes`` (the DML sizes its consumer slot needs)."""
        value = self.values[name]
        assert self.builder is not None
        if value.kind in ("node", "input") and value.tensor is not None and value.tensor.sizes != sizes:
            raise _fail(UNSUPPORTED_GRAPH, node, None, f"reads '{name}' as DML sizes {sizes}, but it is already described as {value.tensor.sizes}: the importer gives each graph input and node output one DML description",
                        expected=value.tensor.sizes, actual=sizes)  # fmt: skip
        if value.kind == "node":
            assert value.tensor is not None
            return value.tensor
        if value.kind == "input":
            if value.tensor is None:
                value.tensor = self.builder.input(name, value.dtype, sizes)
                self.dml_inputs[name] = sizes
            return value.tensor
        key = (name, sizes)
        if key not in self.weight_tensors:
            assert value.array is not None
            array = np.ascontiguousarray(value.array.reshape(sizes))
            if self._owned():
                graph_name = name if not any(k[0] == name for k in self.weight_tensors) else f"{name}:{'x'.join(map(str, sizes))}"
                self.weight_tensors[key] = self.builder.input(graph_name, value.dtype, sizes, owned=True)
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
) -> ImportedModel:
    """An ONNX model (ModelProto, path or bytes) as a compiled DML graph, built with ``GraphBuilder``.

    ``feature_level`` (default DML_FEATURE_LEVEL_6_4, or the device's) decides the descs
    and what the weights become: ``weights="constant"`` (CONSTANT nodes, FL 6.2),
    ``"owned"`` (OWNED_BY_DML graph inputs, bound at initialization), ``"auto"`` (constants
    when the level has them). ``input_shapes`` fixes symbolic input dims. Relu, LeakyRelu
    and Sigmoid fuse into the convolution before them when it feeds nothing else
    (``fuse_activations``). ``ceil_mode_divisor="full_window"`` divides ceil-mode overhang
    windows by the whole kernel (see ``ONNX.CEIL_MODE_DIVISOR``). ``strict`` makes
    DirectML's warnings errors. Raises ``OnnxImportError`` at the first problem; ``validate``
    collects them all.
    """
    _check_options(weights, ceil_mode_divisor)
    proto = load(model)
    importer = _ModelImporter(proto, device=_resolve(feature_level, device, backend, strict), weights=weights, input_shapes=input_shapes,
                              fuse_activations=fuse_activations, ceil_mode_divisor=ceil_mode_divisor, collect=False)  # fmt: skip
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
    for name, value in inputs.items():
        if name in graph_inputs:
            shapes.setdefault(name, np.shape(value))
    return import_model(proto, input_shapes=shapes, **options).run(inputs)


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
    if options:
        msg = f"unknown options: {', '.join(sorted(options))}"
        raise TypeError(msg)
    try:
        proto = load(model)
    except (OSError, TypeError):
        raise
    except Exception as error:  # noqa: BLE001 - protobuf's DecodeError and friends: the bytes are not a model
        return Report([Finding(UNSUPPORTED_GRAPH.id, Severity.ERROR, "model", "an ONNX ModelProto", type(error).__name__, f"cannot be parsed as an ONNX model: {error}")])
    importer = _ModelImporter(proto, device=device, weights=weights, input_shapes=input_shapes, fuse_activations=fuse_activations, ceil_mode_divisor=ceil_mode_divisor, collect=True)
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
