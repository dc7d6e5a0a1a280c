"""A graph builder in the spirit of DirectMLX: write the model as calls, get a DML_GRAPH_DESC.

    g = dmlpy.GraphBuilder(feature_level=DML_FEATURE_LEVEL_6_4)
    x = g.input("x", "float32", (1, 64, 32, 32))
    w = g.input("w", "float32", (64, 32, 4, 4), owned=True)      # weights: bound at initialize
    y = g.conv_transpose(x, w, strides=2, start_padding=1, end_padding=1, activation=FusedActivation.relu())
    y = g.space_to_depth(g.average_pooling(y, window=(2, 2), strides=(2, 2)), 2)
    program = g.compile({"y": y})
    outputs = program(x=array, w=weights)  # {"y": ndarray}

One function per operator family, with DirectML's (DirectMLX's) defaults: ``average_pooling``,
``max_pooling`` (optionally with indices), ``reduce``, ``argmax``, ``argmin``,
``convolution`` and ``conv_transpose`` (FORWARD and BACKWARD DML_CONVOLUTION), the standalone
activations (``relu``, ``leaky_relu``, ``sigmoid``, ``tanh``, ``elu``, ``hard_sigmoid``,
``softplus``, ``gelu``, ``linear``, ``identity``), ``space_to_depth`` and ``depth_to_space``,
``batch_normalization``, ``mean_variance_normalization``, ``layer_normalization`` and
``resample``; ``add_operator`` takes any other desc.

Every call builds the operator desc DirectML would see, infers its output sizes (including
the ones DirectMLX cannot, such as BACKWARD convolution), and validates it at once: a mistake
is reported at the builder call that made it, naming the argument, with the rule id and the
C field path. ``compile`` writes the DML_GRAPH_DESC, compiles it on the device, runs the
initializer (OWNED_BY_DML inputs, constants) and returns a callable program.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dmlpy.binding import DML_BINDING_DESC, DML_BINDING_TABLE_DESC, array_binding, buffer_binding
from dmlpy.device import Device, _call_ports, _Port, create_device, validate
from dmlpy.enums import (
    DML_AXIS_DIRECTION,
    DML_CONVOLUTION_DIRECTION,
    DML_CONVOLUTION_MODE,
    DML_DEPTH_SPACE_ORDER,
    DML_EXECUTION_FLAGS,
    DML_FEATURE_LEVEL,
    DML_INTERPOLATION_MODE,
    DML_MATRIX_TRANSFORM,
    DML_REDUCE_FUNCTION,
    DML_TENSOR_FLAGS,
    HRESULT,
)
from dmlpy.errors import DmlError, Severity, ints_argument
from dmlpy.graph import DML_GRAPH_DESC, CompiledGraph, constant_node, graph_desc, input_edge, intermediate_edge, operator_node, output_edge
from dmlpy.operators.activation import (
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
)
from dmlpy.operators import activation as _activation_family
from dmlpy.operators.convolution import DML_CONVOLUTION_OPERATOR_DESC, DML_GEMM_OPERATOR_DESC, backward_output_size, forward_output_size
from dmlpy.operators.normalization import DML_BATCH_NORMALIZATION_OPERATOR_DESC, DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC
from dmlpy.operators.normalization import DML_LOCAL_RESPONSE_NORMALIZATION_OPERATOR_DESC, DML_LP_NORMALIZATION_OPERATOR_DESC
from dmlpy.operators.pooling import (
    DML_AVERAGE_POOLING1_OPERATOR_DESC,
    DML_AVERAGE_POOLING_OPERATOR_DESC,
    DML_LP_POOLING1_OPERATOR_DESC,
    DML_LP_POOLING_OPERATOR_DESC,
    DML_MAX_POOLING1_OPERATOR_DESC,
    DML_MAX_POOLING2_OPERATOR_DESC,
    DML_MAX_POOLING_OPERATOR_DESC,
    ceil_shape_allowed,
    pooled_size,
)
from dmlpy.operators.resampling import (
    DML_RESAMPLE1_OPERATOR_DESC,
    DML_RESAMPLE2_OPERATOR_DESC,
    DML_RESAMPLE3_OPERATOR_DESC,
    resample_output_sizes,
)
from dmlpy.operators.reduction import DML_ARGMAX_OPERATOR_DESC, DML_ARGMIN_OPERATOR_DESC, DML_REDUCE_OPERATOR_DESC
from dmlpy.operators.space_depth import (
    DML_DEPTH_TO_SPACE1_OPERATOR_DESC,
    DML_DEPTH_TO_SPACE_OPERATOR_DESC,
    DML_SPACE_TO_DEPTH1_OPERATOR_DESC,
    DML_SPACE_TO_DEPTH_OPERATOR_DESC,
    depth_to_space_output_sizes,
    space_to_depth_output_sizes,
)
from dmlpy.tensor import DML_BUFFER_TENSOR_DESC, DML_TENSOR_DESC, as_data_type, calc_buffer_tensor_size, nhwc_strides

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


@dataclass(frozen=True)
class Tensor:
    """A value in the graph: a graph input, a constant, or one output of a node."""

    builder: GraphBuilder
    desc: DML_BUFFER_TENSOR_DESC
    source: tuple[str, int, int]  # ("input", graph input, 0) | ("node", node, output slot) | ("constant", node, 0)
    name: str = ""

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(self.desc.Sizes or ())

    @property
    def data_type(self) -> Any:
        return self.desc.DataType


@dataclass
class _Node:
    desc: Any  # the operator desc (None for a constant)
    inputs: dict[str, Tensor]  # tensor field name -> value
    name: str
    constant: np.ndarray | None = None


def _call_site() -> str:
    """file:line of the first caller outside dmlpy."""
    frame = sys._getframe(1)  # noqa: SLF001 - the cheapest way to name the user's line
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)).startswith(_PACKAGE_DIR):
        frame = frame.f_back  # type: ignore[assignment]
    return f"{frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else "<unknown>"


class GraphBuilder:
    """Builds a DML_GRAPH_DESC from operator calls, inferring every output size."""

    def __init__(
        self,
        device: Device | None = None,
        *,
        feature_level: DML_FEATURE_LEVEL | int = DML_FEATURE_LEVEL.LEVEL_6_4,
        backend: str = "auto",
        policy: str = "nchw",
    ) -> None:
        """``policy`` lays out every node output: ``"nchw"`` (packed) or ``"nhwc"`` (channels last, through strides)."""
        if policy not in ("nchw", "nhwc"):
            msg = f"policy must be 'nchw' or 'nhwc', not {policy!r}"
            raise ValueError(msg)
        if device is not None and not isinstance(device, Device):
            msg = f"GraphBuilder: device is a {type(device).__name__}, expected a dmlpy Device (or None for a new one)"
            raise TypeError(msg)
        self.device = device or create_device(feature_level, backend=backend)
        self.policy = policy
        self._inputs: list[tuple[str, DML_BUFFER_TENSOR_DESC]] = []
        self._nodes: list[_Node] = []

    @property
    def feature_level(self) -> DML_FEATURE_LEVEL:
        return self.device.feature_level

    # --- sources ----------------------------------------------------------------------

    def input(self, name: str, dtype: Any, sizes: Sequence[int], strides: Sequence[int] | None = None, *, owned: bool = False) -> Tensor:
        """A graph input. ``owned=True`` makes it OWNED_BY_DML: bound once, at initialization (weights)."""
        if any(name == existing for existing, _ in self._inputs):
            msg = f"GraphBuilder.input: a graph input is already named {name!r}"
            raise ValueError(msg)
        data_type = as_data_type(dtype)
        sizes = ints_argument("GraphBuilder.input", "sizes", sizes, minimum=None)  # a bad size is validation's to report, at the node
        strides = None if strides is None else ints_argument("GraphBuilder.input", "strides", strides, minimum=None)
        desc = DML_BUFFER_TENSOR_DESC(
            data_type, DML_TENSOR_FLAGS.OWNED_BY_DML if owned else DML_TENSOR_FLAGS.NONE, len(sizes), sizes,
            strides, calc_buffer_tensor_size(data_type, sizes, strides), 0,
        )  # fmt: skip
        self._inputs.append((name, desc))
        return Tensor(self, desc, ("input", len(self._inputs) - 1, 0), name)

    def constant(self, array: Any, name: str = "", *, dtype: Any = None) -> Tensor:
        """Constant data baked into the graph (a CONSTANT node, which needs feature level 6.2)."""
        array = np.ascontiguousarray(array if dtype is None else np.asarray(array).astype(dtype))
        data_type = as_data_type(array.dtype)
        sizes = tuple(array.shape)
        desc = DML_BUFFER_TENSOR_DESC(data_type, DML_TENSOR_FLAGS.NONE, len(sizes), sizes, None, calc_buffer_tensor_size(data_type, sizes), 0)
        padded = np.zeros(desc.TotalTensorSizeInBytes, dtype=np.uint8)
        padded[: array.nbytes] = array.reshape(-1).view(np.uint8)
        self._nodes.append(_Node(None, {}, name or f"constant{len(self._nodes)}", padded))
        return Tensor(self, desc, ("constant", len(self._nodes) - 1, 0), name)

    # --- operators --------------------------------------------------------------------

    def _output(self, like: Tensor, sizes: Sequence[int], dtype: Any = None) -> DML_TENSOR_DESC:
        data_type = like.data_type if dtype is None else as_data_type(dtype)
        sizes = tuple(int(s) for s in sizes)
        strides = nhwc_strides(sizes) if self.policy == "nhwc" and len(sizes) >= 3 else None
        return DML_TENSOR_DESC(Desc=DML_BUFFER_TENSOR_DESC(data_type, DML_TENSOR_FLAGS.NONE, len(sizes), sizes, strides, calc_buffer_tensor_size(data_type, sizes, strides), 0))

    def add_operator(self, desc: Any, inputs: Mapping[str, Tensor | None], *, call: str = "add_operator", arguments: Mapping[str, str] | None = None, name: str = "") -> list[Tensor]:
        """Add any operator desc whose input tensor fields come from ``inputs``; returns its outputs.

        The desc's input fields are set from the tensors; its output fields must already be set.
        Validation happens here: an error names ``call``, the user's line and the argument
        (``arguments`` maps C field names, or rule ids where a rule blames another argument
        than the field it reports, to the argument names of ``call``).
        """
        if not dataclasses.is_dataclass(desc) or isinstance(desc, type):
            msg = f"GraphBuilder.{call} at {_call_site()}: desc is a {type(desc).__name__}, expected an operator desc such as DML_ACTIVATION_RELU_OPERATOR_DESC(...)"
            raise TypeError(msg)
        if not isinstance(inputs, Mapping):
            msg = f"GraphBuilder.{call} at {_call_site()}: inputs is a {type(inputs).__name__}, expected a mapping of tensor field names to Tensors"
            raise TypeError(msg)
        fields = {f.name for f in dataclasses.fields(desc)}
        flat: dict[str, Tensor | None] = {}  # by binding slot: a tensor array (JOIN's InputTensors) takes InputTensors[0], [1], ...
        for field_name, tensor in inputs.items():
            if field_name not in fields:
                msg = f"GraphBuilder.{call} at {_call_site()}: {type(desc).__name__} has no field {field_name!r}"
                raise ValueError(msg)
            if isinstance(tensor, (list, tuple)):
                elements = [self._tensor_argument(call, f"{field_name}[{i}]", t) for i, t in enumerate(tensor)]
                setattr(desc, field_name, [DML_TENSOR_DESC(Desc=t.desc) for t in elements])
                flat.update({f"{field_name}[{i}]": t for i, t in enumerate(elements)})
                continue
            tensor = self._tensor_argument(call, field_name, tensor, optional=True)
            setattr(desc, field_name, None if tensor is None else DML_TENSOR_DESC(Desc=tensor.desc))
            flat[field_name] = tensor
        report = validate(desc, feature_level=self.feature_level)
        errors = [f for f in report.findings if f.severity is Severity.ERROR or self.device.strict]
        if errors:
            where = _call_site()
            described = []
            for finding in errors:
                field = finding.path.split(".")[1].split("[")[0] if "." in finding.path else ""
                argument = (arguments or {}).get(finding.rule) or (arguments or {}).get(field)
                described.append(f"argument '{argument}'" if argument else (f"field {field}" if field else f"the operator itself ({finding.path})"))
            summary = f"GraphBuilder.{call} at {where}: {'; '.join(dict.fromkeys(described))} rejected"
            raise DmlError(HRESULT.E_INVALIDARG, errors, summary)
        outputs: list[tuple[str, DML_TENSOR_DESC]] = []  # a tensor array (SPLIT's OutputTensors) gives one output per element
        for f in dataclasses.fields(desc):
            value = getattr(desc, f.name)
            if f.name.startswith("Output") and isinstance(value, DML_TENSOR_DESC):
                outputs.append((f.name, value))
            elif f.name.startswith("Output") and isinstance(value, (list, tuple)) and value and all(isinstance(t, DML_TENSOR_DESC) for t in value):
                outputs += [(f"{f.name}[{i}]", t) for i, t in enumerate(value)]
        self._nodes.append(_Node(desc, flat, name or f"{call}{len(self._nodes)}"))
        index = len(self._nodes) - 1
        return [Tensor(self, tensor.Desc, ("node", index, k), f"{call}.{field}") for k, (field, tensor) in enumerate(outputs)]

    def average_pooling(
        self,
        x: Tensor,
        window: Sequence[int],
        strides: Sequence[int] | None = None,
        start_padding: Sequence[int] | None = None,
        end_padding: Sequence[int] | None = None,
        dilations: Sequence[int] | None = None,
        *,
        include_padding: bool = False,
        output_sizes: Sequence[int] | None = None,
    ) -> Tensor:
        """Average pooling; DirectML's defaults: strides 1, no padding, no dilation. One int stands for every spatial axis.

        Dilations make it AVERAGE_POOLING1 (feature level 6.2). ``output_sizes`` accepts an
        explicit output (the ceil shape of ONNX's ceil_mode); otherwise the floor size is used.
        """
        x = self._tensor_argument("average_pooling", "x", x)
        if window is None:
            msg = f"GraphBuilder.average_pooling at {_call_site()}: argument 'window' is None, expected the window size along each spatial axis"
            raise TypeError(msg)
        spatial = len(x.sizes) - 2
        window = _per_axis(window, spatial, None)  # no default: a window must be given
        strides = _per_axis(strides, spatial, 1)
        start_padding = _per_axis(start_padding, spatial, 0)
        end_padding = _per_axis(end_padding, spatial, 0)
        dilations = None if dilations is None else _per_axis(dilations, spatial, 1)
        explicit = output_sizes is not None
        if explicit:
            output_sizes = ints_argument("GraphBuilder.average_pooling", "output_sizes", output_sizes, minimum=None)  # validation names a wrong size
        else:
            output_sizes = _pooling_sizes(x.sizes, window, strides, start_padding, end_padding, dilations)
        common = dict(OutputTensor=self._output(x, output_sizes), DimensionCount=len(window), Strides=strides, WindowSize=window,
                      StartPadding=start_padding, EndPadding=end_padding, IncludePadding=include_padding)  # fmt: skip
        if dilations is not None and any(d != 1 for d in dilations):
            desc: Any = DML_AVERAGE_POOLING1_OPERATOR_DESC(Dilations=tuple(dilations), **common)
        else:
            desc = DML_AVERAGE_POOLING_OPERATOR_DESC(**common)
        arguments = {"WindowSize": "window", "Strides": "strides", "StartPadding": "start_padding", "EndPadding": "end_padding",
                     "Dilations": "dilations", "OutputTensor": "output_sizes" if explicit else "x", "InputTensor": "x", "DimensionCount": "window", "IncludePadding": "include_padding"}  # fmt: skip
        return self.add_operator(desc, {"InputTensor": x}, call="average_pooling", arguments=arguments)[0]

    # --- convolution ------------------------------------------------------------------

    def convolution(
        self,
        x: Tensor,
        filter: Tensor,  # noqa: A002 - DirectMLX's name
        bias: Tensor | None = None,
        *,
        strides: Sequence[int] | int | None = None,
        dilations: Sequence[int] | int | None = None,
        start_padding: Sequence[int] | int | None = None,
        end_padding: Sequence[int] | int | None = None,
        groups: int = 1,
        mode: DML_CONVOLUTION_MODE | int = DML_CONVOLUTION_MODE.CROSS_CORRELATION,
        activation: Any = None,
        output_sizes: Sequence[int] | None = None,
    ) -> Tensor:
        """A FORWARD convolution (ONNX Conv), DirectMLX's defaults: strides and dilations 1, no padding.

        ``filter`` is ``{Cout, Cin/groups, k...}``; ``bias`` is ``{1, Cout, 1, 1}`` or a packed
        1-D ``{Cout}`` (ONNX's B: the edge reinterprets its bytes as ``{1, Cout, 1, 1}``).
        ``activation`` is a fused activation (``FusedActivation.relu()``, ...). The output is
        ``{N, Cout, (in + start + end - ((k - 1) * d + 1)) / s + 1, ...}`` unless ``output_sizes``
        says otherwise (validation then checks it).
        """
        return self._convolution("convolution", DML_CONVOLUTION_DIRECTION.FORWARD, x, filter, bias, strides, dilations, start_padding, end_padding, None, groups, mode, activation, output_sizes)

    def conv_transpose(
        self,
        x: Tensor,
        filter: Tensor,  # noqa: A002 - DirectMLX's name
        bias: Tensor | None = None,
        *,
        strides: Sequence[int] | int | None = None,
        dilations: Sequence[int] | int | None = None,
        start_padding: Sequence[int] | int | None = None,
        end_padding: Sequence[int] | int | None = None,
        output_padding: Sequence[int] | int | None = None,
        groups: int = 1,
        mode: DML_CONVOLUTION_MODE | int = DML_CONVOLUTION_MODE.CROSS_CORRELATION,
        activation: Any = None,
        output_sizes: Sequence[int] | None = None,
    ) -> Tensor:
        """A BACKWARD (transposed) convolution, as ONNX ConvTranspose; the size DirectMLX cannot infer.

        ``filter`` is ONNX's W as is, ``{Cin, Cout/groups, k...}``; the output has
        ``filter[1] * groups`` channels and spatial sizes
        ``(in - 1) * s + (k - 1) * d + 1 - start - end + output_padding``.
        ``output_padding`` has ONNX's meaning: it enlarges the output (those positions are
        computed), and the desc's OutputPadding stays 0, as onnxruntime maps it (onnxruntime's DirectML provider).
        An explicit ``output_sizes`` (ONNX's output_shape) wins over ``output_padding``.
        """
        return self._convolution("conv_transpose", DML_CONVOLUTION_DIRECTION.BACKWARD, x, filter, bias, strides, dilations, start_padding, end_padding,
                                 output_padding, groups, mode, activation, output_sizes)  # fmt: skip

    def _convolution(
        self, call: str, direction: DML_CONVOLUTION_DIRECTION, x: Any, filter: Any, bias: Any, strides: Any, dilations: Any,  # noqa: A002
        start_padding: Any, end_padding: Any, output_padding: Any, groups: Any, mode: Any, activation: Any, output_sizes: Any,
    ) -> Tensor:  # fmt: skip
        x = self._tensor_argument(call, "x", x)
        filter = self._tensor_argument(call, "filter", filter)  # noqa: A001
        bias = self._tensor_argument(call, "bias", bias, optional=True)
        spatial = len(x.sizes) - 2
        strides = _per_axis(strides, spatial, 1)
        dilations = _per_axis(dilations, spatial, 1)
        start_padding = _per_axis(start_padding, spatial, 0)
        end_padding = _per_axis(end_padding, spatial, 0)
        extra = _per_axis(output_padding, spatial, 0)
        if not isinstance(extra, tuple) or len(extra) != spatial or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 0 for v in extra):
            # not a desc field (OutputPadding stays 0): the builder checks it itself
            msg = f"GraphBuilder.{call} at {_call_site()}: argument 'output_padding' is {output_padding!r}, expected {spatial} non-negative integers (one per spatial axis)"
            raise ValueError(msg)
        backward = direction == DML_CONVOLUTION_DIRECTION.BACKWARD
        explicit = output_sizes is not None
        if explicit:
            output_sizes = ints_argument(f"GraphBuilder.{call}", "output_sizes", output_sizes, minimum=None)  # validation names a wrong size
        else:
            output_sizes = _convolution_sizes(x.sizes, filter.sizes, strides, dilations, start_padding, end_padding, extra, groups, backward=backward)
        if bias is not None:
            bias = _as_dml_bias(bias, len(x.sizes))
        desc = DML_CONVOLUTION_OPERATOR_DESC(
            OutputTensor=self._output(x, output_sizes), Mode=mode, Direction=direction, DimensionCount=spatial, Strides=strides, Dilations=dilations,
            StartPadding=start_padding, EndPadding=end_padding, OutputPadding=(0,) * spatial, GroupCount=groups, FusedActivation=activation,
        )  # fmt: skip
        blamed_for_output = "output_sizes" if explicit else ("output_padding" if backward and any(_is_positive(v) for v in extra) else "")
        arguments = {
            "InputTensor": "x", "FilterTensor": "filter", "BiasTensor": "bias", "Mode": "mode", "DimensionCount": "x", "Strides": "strides",
            "Dilations": "dilations", "StartPadding": "start_padding", "EndPadding": "end_padding", "GroupCount": "groups", "FusedActivation": "activation",
            "CONVOLUTION.GROUP_DIVIDES_CHANNELS": "groups", "ACTIVATION.NOT_FUSABLE": "activation", "ACTIVATION.FUSED_TENSORS_NOT_NULL": "activation",
            "OPERATOR.TYPE": "activation",
        }  # fmt: skip
        if blamed_for_output:
            arguments["OutputTensor"] = blamed_for_output
            arguments["CONVOLUTION.OUTPUT_SIZE"] = arguments["CONVOLUTION.BACKWARD_OUTPUT_SIZE"] = blamed_for_output
        return self.add_operator(desc, {"InputTensor": x, "FilterTensor": filter, "BiasTensor": bias}, call=call, arguments=arguments)[0]

    # --- standalone activations (DirectMLX's defaults) --------------------------------

    def relu(self, x: Tensor) -> Tensor:
        """ACTIVATION_RELU: ``max(x, 0)``."""
        return self._activation("relu", DML_ACTIVATION_RELU_OPERATOR_DESC, x)

    def leaky_relu(self, x: Tensor, alpha: float = 0.01) -> Tensor:
        """ACTIVATION_LEAKY_RELU: ``x`` for ``x >= 0``, else ``alpha * x``."""
        return self._activation("leaky_relu", DML_ACTIVATION_LEAKY_RELU_OPERATOR_DESC, x, Alpha=alpha)

    def sigmoid(self, x: Tensor) -> Tensor:
        """ACTIVATION_SIGMOID: ``1 / (1 + exp(-x))``."""
        return self._activation("sigmoid", DML_ACTIVATION_SIGMOID_OPERATOR_DESC, x)

    def tanh(self, x: Tensor) -> Tensor:
        """ACTIVATION_TANH."""
        return self._activation("tanh", DML_ACTIVATION_TANH_OPERATOR_DESC, x)

    def elu(self, x: Tensor, alpha: float = 1.0) -> Tensor:
        """ACTIVATION_ELU: ``x`` for ``x > 0``, else ``alpha * (exp(x) - 1)``."""
        return self._activation("elu", DML_ACTIVATION_ELU_OPERATOR_DESC, x, Alpha=alpha)

    def hard_sigmoid(self, x: Tensor, alpha: float = 0.2, beta: float = 0.5) -> Tensor:
        """ACTIVATION_HARD_SIGMOID: ``clamp(alpha * x + beta, 0, 1)``."""
        return self._activation("hard_sigmoid", DML_ACTIVATION_HARD_SIGMOID_OPERATOR_DESC, x, Alpha=alpha, Beta=beta)

    def softplus(self, x: Tensor, steepness: float = 1.0) -> Tensor:
        """ACTIVATION_SOFTPLUS: ``ln(1 + exp(steepness * x)) / steepness`` (steepness at least 1)."""
        return self._activation("softplus", DML_ACTIVATION_SOFTPLUS_OPERATOR_DESC, x, Steepness=steepness)

    def gelu(self, x: Tensor) -> Tensor:
        """ACTIVATION_GELU (feature level 5.1): ``0.5 * x * (1 + erf(x / sqrt(2)))``."""
        return self._activation("gelu", DML_ACTIVATION_GELU_OPERATOR_DESC, x)

    def linear(self, x: Tensor, alpha: float, beta: float) -> Tensor:
        """ACTIVATION_LINEAR: ``alpha * x + beta`` (DirectMLX has no defaults for it either)."""
        return self._activation("linear", DML_ACTIVATION_LINEAR_OPERATOR_DESC, x, Alpha=alpha, Beta=beta)

    def identity(self, x: Tensor) -> Tensor:
        """ACTIVATION_IDENTITY: a copy (into the builder's output layout)."""
        return self._activation("identity", DML_ACTIVATION_IDENTITY_OPERATOR_DESC, x)

    def _activation(self, call: str, desc_class: type, x: Any, **parameters: Any) -> Tensor:
        x = self._tensor_argument(call, "x", x)
        desc = desc_class(OutputTensor=self._output(x, x.sizes), **parameters)
        arguments = {"InputTensor": "x", "OutputTensor": "x", **{field: field.lower() for field in parameters}}
        return self.add_operator(desc, {"InputTensor": x}, call=call, arguments=arguments)[0]

    # --- space and depth --------------------------------------------------------------

    def space_to_depth(self, x: Tensor, block_size: int, order: DML_DEPTH_SPACE_ORDER | int = DML_DEPTH_SPACE_ORDER.DEPTH_COLUMN_ROW) -> Tensor:
        """``{N, C, H, W} -> {N, C * b * b, H / b, W / b}``; ``order`` DEPTH_COLUMN_ROW (ONNX DCR, TensorFlow) or COLUMN_ROW_DEPTH (CRD).

        Emits SPACE_TO_DEPTH1 from feature level 2.1 (as DirectMLX does) and the plain
        SPACE_TO_DEPTH below it, which means DEPTH_COLUMN_ROW (COLUMN_ROW_DEPTH there is an
        error that names ``order``). H and W must be multiples of ``block_size``.
        """
        return self._space_depth("space_to_depth", x, block_size, order, to_depth=True)

    def depth_to_space(self, x: Tensor, block_size: int, order: DML_DEPTH_SPACE_ORDER | int = DML_DEPTH_SPACE_ORDER.DEPTH_COLUMN_ROW) -> Tensor:
        """``{N, C, H, W} -> {N, C / (b * b), H * b, W * b}``; the inverse of ``space_to_depth`` with the same ``order``.

        Emits DEPTH_TO_SPACE1 from feature level 2.1 and DEPTH_TO_SPACE below it (as
        ``space_to_depth``). C must be a multiple of ``block_size * block_size``.
        """
        return self._space_depth("depth_to_space", x, block_size, order, to_depth=False)

    def _space_depth(self, call: str, x: Any, block_size: Any, order: Any, *, to_depth: bool) -> Tensor:
        x = self._tensor_argument(call, "x", x)
        try:
            sizes = (space_to_depth_output_sizes if to_depth else depth_to_space_output_sizes)(x.sizes, block_size)
        except (ValueError, TypeError):
            sizes = _space_depth_fallback(x.sizes, block_size, to_depth=to_depth)  # validation names the argument
        versioned = self.feature_level >= DML_FEATURE_LEVEL.LEVEL_2_1 or order != DML_DEPTH_SPACE_ORDER.DEPTH_COLUMN_ROW
        if versioned:
            cls: Any = DML_SPACE_TO_DEPTH1_OPERATOR_DESC if to_depth else DML_DEPTH_TO_SPACE1_OPERATOR_DESC
            desc = cls(OutputTensor=self._output(x, sizes), BlockSize=block_size, Order=order)
        else:
            cls = DML_SPACE_TO_DEPTH_OPERATOR_DESC if to_depth else DML_DEPTH_TO_SPACE_OPERATOR_DESC
            desc = cls(OutputTensor=self._output(x, sizes), BlockSize=block_size)
        arguments = {"InputTensor": "x", "OutputTensor": "x", "BlockSize": "block_size", "Order": "order", "OPERATOR.FEATURE_LEVEL": "order",
                     "SPACE_DEPTH.SPATIAL_DIVISIBLE": "block_size", "SPACE_DEPTH.CHANNELS_DIVISIBLE": "block_size"}  # fmt: skip
        return self.add_operator(desc, {"InputTensor": x}, call=call, arguments=arguments)[0]

    # --- data movement ----------------------------------------------------------------

    def join(self, inputs: Sequence[Tensor], axis: int) -> Tensor:
        """JOIN: the inputs concatenated along ``axis`` (ONNX Concat); their other sizes must agree."""
        from dmlpy.operators.data_movement import DML_JOIN_OPERATOR_DESC  # noqa: PLC0415 - kept inside this block

        if not isinstance(inputs, (list, tuple)) or not inputs:
            msg = f"GraphBuilder.join at {_call_site()}: argument 'inputs' is {inputs!r}, expected a non-empty list of Tensors"
            raise TypeError(msg)
        parts = [self._tensor_argument("join", f"inputs[{i}]", t) for i, t in enumerate(inputs)]
        sizes = list(parts[0].sizes)
        if isinstance(axis, int) and 0 <= axis < len(sizes):
            sizes[axis] = sum(p.sizes[axis] if axis < len(p.sizes) else 0 for p in parts)
        desc = DML_JOIN_OPERATOR_DESC(OutputTensor=self._output(parts[0], sizes), Axis=axis)
        arguments = {"InputTensors": "inputs", "OutputTensor": "inputs", "Axis": "axis", "JOIN.SAME_SIZES": "inputs", "JOIN.OUTPUT_SIZE": "inputs"}
        return self.add_operator(desc, {"InputTensors": parts}, call="join", arguments=arguments)[0]

    def concat(self, inputs: Sequence[Tensor], axis: int) -> Tensor:
        """The ONNX name of ``join``."""
        return self.join(inputs, axis)

    def split(self, x: Tensor, axis: int, sizes: Sequence[int]) -> list[Tensor]:
        """SPLIT: one output per entry of ``sizes``, each that long along ``axis`` (they sum to x's size there)."""
        from dmlpy.operators.data_movement import DML_SPLIT_OPERATOR_DESC  # noqa: PLC0415

        x = self._tensor_argument("split", "x", x)
        lengths = ints_argument("GraphBuilder.split", "sizes", sizes, minimum=None)
        outputs = []
        for length in lengths:
            shape = list(x.sizes)
            if isinstance(axis, int) and 0 <= axis < len(shape):
                shape[axis] = length
            outputs.append(self._output(x, shape))
        desc = DML_SPLIT_OPERATOR_DESC(OutputTensors=outputs, Axis=axis)
        arguments = {"InputTensor": "x", "OutputTensors": "sizes", "Axis": "axis", "SPLIT.OUTPUT_SIZE": "sizes"}
        return self.add_operator(desc, {"InputTensor": x}, call="split", arguments=arguments)

    def slice(self, x: Tensor, offsets: Sequence[int], sizes: Sequence[int], strides: Sequence[int] | None = None) -> Tensor:
        """The window ``[offsets, offsets + sizes)`` read every ``strides`` elements (default 1); a negative stride reads
        the window backwards (ONNX Slice with a negative step). SLICE1 from feature level 2.1, SLICE below it.
        The output has ``1 + (sizes - 1) / |strides|`` elements per dimension, every one the window reaches."""
        from dmlpy.operators.data_movement import DML_SLICE1_OPERATOR_DESC, DML_SLICE_OPERATOR_DESC  # noqa: PLC0415

        x = self._tensor_argument("slice", "x", x)
        offsets = ints_argument("GraphBuilder.slice", "offsets", offsets, minimum=None)
        sizes = ints_argument("GraphBuilder.slice", "sizes", sizes, minimum=None)
        strides = (1,) * len(sizes) if strides is None else ints_argument("GraphBuilder.slice", "strides", strides, minimum=None)
        counts = [1 + (n - 1) // abs(st) if st and n >= 1 else max(n, 1) for n, st in zip(sizes, strides, strict=False)]
        if self.feature_level >= DML_FEATURE_LEVEL.LEVEL_2_1:
            desc: Any = DML_SLICE1_OPERATOR_DESC(OutputTensor=self._output(x, counts), InputWindowOffsets=offsets, InputWindowSizes=sizes, InputWindowStrides=strides)
        else:
            desc = DML_SLICE_OPERATOR_DESC(OutputTensor=self._output(x, counts), Offsets=offsets, Sizes=counts, Strides=strides)
        arguments = {"InputTensor": "x", "OutputTensor": "sizes", "DimensionCount": "offsets", "InputWindowOffsets": "offsets", "Offsets": "offsets",
                     "InputWindowSizes": "sizes", "Sizes": "sizes", "InputWindowStrides": "strides", "Strides": "strides"}  # fmt: skip
        return self.add_operator(desc, {"InputTensor": x}, call="slice", arguments=arguments)[0]

    def pad(self, x: Tensor, start_padding: Sequence[int], end_padding: Sequence[int], mode: Any = 0, value: float = 0.0) -> Tensor:
        """PADDING1 from feature level 5.0 (``value`` in x's own data type), PADDING below it (``value`` a FLOAT).
        ``mode`` is a DML_PADDING_MODE: CONSTANT (default), EDGE, REFLECTION, SYMMETRIC (FL 3.0), WRAP (FL 6.4)."""
        from dmlpy.operators.data_movement import DML_PADDING1_OPERATOR_DESC, DML_PADDING_OPERATOR_DESC  # noqa: PLC0415
        from dmlpy.operators.element_wise import store  # noqa: PLC0415
        from dmlpy.structs import DML_SCALAR_UNION  # noqa: PLC0415
        from dmlpy.tensor import numpy_dtype  # noqa: PLC0415

        x = self._tensor_argument("pad", "x", x)
        start = ints_argument("GraphBuilder.pad", "start_padding", start_padding, minimum=None)
        end = ints_argument("GraphBuilder.pad", "end_padding", end_padding, minimum=None)
        sizes = [n + a + b for n, a, b in zip(x.sizes, start, end, strict=False)] if len(start) == len(end) == len(x.sizes) else x.sizes
        common: dict[str, Any] = {"OutputTensor": self._output(x, sizes), "PaddingMode": mode, "StartPadding": start, "EndPadding": end}
        if self.feature_level >= DML_FEATURE_LEVEL.LEVEL_5_0:
            dtype = numpy_dtype(x.data_type)
            stored = store(np.float64(value), dtype) if isinstance(value, float) else np.array(value).astype(dtype)
            union = DML_SCALAR_UNION(Bytes=np.asarray(stored, dtype).tobytes().ljust(8, b"\0"))
            desc: Any = DML_PADDING1_OPERATOR_DESC(PaddingValueDataType=x.data_type, PaddingValue=union, **common)
        else:
            desc = DML_PADDING_OPERATOR_DESC(PaddingValue=float(value), **common)
        arguments = {"InputTensor": "x", "OutputTensor": "start_padding", "DimensionCount": "start_padding", "StartPadding": "start_padding",
                     "EndPadding": "end_padding", "PaddingMode": "mode", "PaddingValue": "value"}  # fmt: skip
        return self.add_operator(desc, {"InputTensor": x}, call="pad", arguments=arguments)[0]

    def cast(self, x: Tensor, dtype: Any) -> Tensor:
        """CAST to ``dtype``: floats into integers truncate toward zero and saturate (NaN gives 0), integers into
        integers keep the low bits, anything into a float rounds to nearest even (docs/deviations.md)."""
        from dmlpy.operators.data_movement import DML_CAST_OPERATOR_DESC  # noqa: PLC0415

        x = self._tensor_argument("cast", "x", x)
        desc = DML_CAST_OPERATOR_DESC(OutputTensor=self._output(x, x.sizes, as_data_type(dtype)))
        return self.add_operator(desc, {"InputTensor": x}, call="cast", arguments={"InputTensor": "x", "OutputTensor": "dtype"})[0]

    def gather(self, x: Tensor, indices: Tensor, axis: int, index_dimensions: int | None = None) -> Tensor:
        """GATHER (ONNX Gather): ``output[..., j, ...] = x[..., indices[j], ...]`` along ``axis``; the last ``index_dimensions``
        of the indices (which have x's rank, as DirectML requires; default: their sizes after the leading 1s, at least one)
        replace x's ``axis``, the result right-aligned to x's rank. Negative indices of a signed type count from the end;
        one out of range is clamped (docs/deviations.md)."""
        from dmlpy.operators.data_movement import DML_GATHER_OPERATOR_DESC, gather_output_sizes  # noqa: PLC0415

        x = self._tensor_argument("gather", "x", x)
        indices = self._tensor_argument("gather", "indices", indices)
        leading_ones = next((i for i, n in enumerate(indices.sizes) if n != 1), len(indices.sizes))
        count = max(1, len(indices.sizes) - leading_ones) if index_dimensions is None else index_dimensions
        sizes = None
        if isinstance(axis, int) and 0 <= axis < len(x.sizes) and isinstance(count, int) and 0 <= count <= len(indices.sizes):
            sizes = gather_output_sizes(x.sizes, indices.sizes, axis, count, len(x.sizes))
        desc = DML_GATHER_OPERATOR_DESC(OutputTensor=self._output(x, sizes or x.sizes), Axis=axis, IndexDimensions=count)
        arguments = {"InputTensor": "x", "IndicesTensor": "indices", "OutputTensor": "indices", "Axis": "axis", "IndexDimensions": "index_dimensions"}
        return self.add_operator(desc, {"InputTensor": x, "IndicesTensor": indices}, call="gather", arguments=arguments)[0]

    def gather_elements(self, x: Tensor, indices: Tensor, axis: int) -> Tensor:
        """GATHER_ELEMENTS (ONNX GatherElements): ``output[i] = x[i with indices[i] along axis]``; the output has the indices' sizes."""
        from dmlpy.operators.data_movement import DML_GATHER_ELEMENTS_OPERATOR_DESC  # noqa: PLC0415

        x = self._tensor_argument("gather_elements", "x", x)
        indices = self._tensor_argument("gather_elements", "indices", indices)
        desc = DML_GATHER_ELEMENTS_OPERATOR_DESC(OutputTensor=self._output(x, indices.sizes), Axis=axis)
        arguments = {"InputTensor": "x", "IndicesTensor": "indices", "OutputTensor": "indices", "Axis": "axis"}
        return self.add_operator(desc, {"InputTensor": x, "IndicesTensor": indices}, call="gather_elements", arguments=arguments)[0]

    def gather_nd(self, x: Tensor, indices: Tensor, batch_dimensions: int = 0, *, input_dimensions: int | None = None, indices_dimensions: int | None = None) -> Tensor:
        """GATHER_ND (ONNX GatherND): each tuple along the indices' last dimension picks a slice of x; ``batch_dimensions``
        (ONNX batch_dims) makes it GATHER_ND1. The meaningful dimension counts default to every dimension."""
        from dmlpy.operators.data_movement import DML_GATHER_ND1_OPERATOR_DESC, DML_GATHER_ND_OPERATOR_DESC, gather_nd_output_sizes  # noqa: I001, PLC0415

        x = self._tensor_argument("gather_nd", "x", x)
        indices = self._tensor_argument("gather_nd", "indices", indices)
        rank = len(x.sizes)
        input_count = rank if input_dimensions is None else input_dimensions
        indices_count = len(indices.sizes) if indices_dimensions is None else indices_dimensions
        sizes = None
        if len(indices.sizes) == rank and all(isinstance(v, int) and 0 <= v <= rank for v in (input_count, indices_count, batch_dimensions)):
            sizes = gather_nd_output_sizes(x.sizes, indices.sizes, input_count, indices_count, rank, batch_dimensions)
        common: dict[str, Any] = {"OutputTensor": self._output(x, sizes or x.sizes), "InputDimensionCount": input_count, "IndicesDimensionCount": indices_count}
        desc: Any = DML_GATHER_ND1_OPERATOR_DESC(BatchDimensionCount=batch_dimensions, **common) if batch_dimensions else DML_GATHER_ND_OPERATOR_DESC(**common)
        arguments = {"InputTensor": "x", "IndicesTensor": "indices", "OutputTensor": "indices", "InputDimensionCount": "input_dimensions",
                     "IndicesDimensionCount": "indices_dimensions", "BatchDimensionCount": "batch_dimensions", "GATHER_ND.BATCH_SIZES": "indices"}  # fmt: skip
        return self.add_operator(desc, {"InputTensor": x, "IndicesTensor": indices}, call="gather_nd", arguments=arguments)[0]

    # --- more activations (DirectMLX's defaults; the pages' typical defaults where DirectMLX has none) ---

    def softmax(self, x: Tensor, axes: Sequence[int] | None = None) -> Tensor:
        """ACTIVATION_SOFTMAX1 over ``axes`` (default: the last dimension; a negative axis counts from the end).

        Below feature level 5.1, over the last dimension only, it emits ACTIVATION_SOFTMAX, whose
        input must have an effective rank of at most 2 (its page).
        """
        return self._softmax_family("softmax", x, axes)

    def log_softmax(self, x: Tensor, axes: Sequence[int] | None = None) -> Tensor:
        """ACTIVATION_LOG_SOFTMAX1 over ``axes`` (LOG_SOFTMAX below feature level 5.1), as ``softmax``."""
        return self._softmax_family("log_softmax", x, axes)

    def hardmax(self, x: Tensor, axes: Sequence[int] | None = None) -> Tensor:
        """ACTIVATION_HARDMAX1 over ``axes`` (HARDMAX below feature level 5.1): 1 at the first maximum, 0 elsewhere."""
        return self._softmax_family("hardmax", x, axes)

    def celu(self, x: Tensor, alpha: float = 1.0) -> Tensor:
        """ACTIVATION_CELU (feature level 3.0): ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
        return self._activation("celu", _activation_family.DML_ACTIVATION_CELU_OPERATOR_DESC, x, Alpha=alpha)

    def prelu(self, x: Tensor, slope: Tensor) -> Tensor:
        """ACTIVATION_PARAMETERIZED_RELU: ``x`` for ``x >= 0``, else ``slope * x``.

        ``slope`` broadcasts to ``x``'s sizes as NumPy does (aligned on the last dimension; a
        ``{1, C, 1, 1}`` slope is per channel): the node reads it with stride 0 along the broadcast
        dimensions, the same bytes.
        """
        x = self._tensor_argument("prelu", "x", x)
        slope = _broadcast_to(self._tensor_argument("prelu", "slope", slope), x.sizes)
        desc = _activation_family.DML_ACTIVATION_PARAMETERIZED_RELU_OPERATOR_DESC(OutputTensor=self._output(x, x.sizes))
        arguments = {"InputTensor": "x", "OutputTensor": "x", "SlopeTensor": "slope"}
        return self.add_operator(desc, {"InputTensor": x, "SlopeTensor": slope}, call="prelu", arguments=arguments)[0]

    def parametric_softplus(self, x: Tensor, alpha: float, beta: float) -> Tensor:
        """ACTIVATION_PARAMETRIC_SOFTPLUS: ``alpha * ln(1 + exp(beta * x))`` (DirectMLX has no defaults)."""
        return self._activation("parametric_softplus", _activation_family.DML_ACTIVATION_PARAMETRIC_SOFTPLUS_OPERATOR_DESC, x, Alpha=alpha, Beta=beta)

    def scaled_elu(self, x: Tensor, alpha: float = _activation_family.SCALED_ELU_ALPHA, gamma: float = _activation_family.SCALED_ELU_GAMMA) -> Tensor:
        """ACTIVATION_SCALED_ELU: ``gamma * x`` for ``x > 0``, else ``gamma * alpha * (exp(x) - 1)``; SELU's constants by default."""
        return self._activation("scaled_elu", _activation_family.DML_ACTIVATION_SCALED_ELU_OPERATOR_DESC, x, Alpha=alpha, Gamma=gamma)

    def scaled_tanh(self, x: Tensor, alpha: float = 1.0, beta: float = 0.5) -> Tensor:
        """ACTIVATION_SCALED_TANH: ``alpha * tanh(beta * x)``."""
        return self._activation("scaled_tanh", _activation_family.DML_ACTIVATION_SCALED_TANH_OPERATOR_DESC, x, Alpha=alpha, Beta=beta)

    def softsign(self, x: Tensor) -> Tensor:
        """ACTIVATION_SOFTSIGN: ``x / (1 + |x|)``."""
        return self._activation("softsign", _activation_family.DML_ACTIVATION_SOFTSIGN_OPERATOR_DESC, x)

    def thresholded_relu(self, x: Tensor, alpha: float = 1.0) -> Tensor:
        """ACTIVATION_THRESHOLDED_RELU: ``x`` for ``x > alpha``, else 0."""
        return self._activation("thresholded_relu", _activation_family.DML_ACTIVATION_THRESHOLDED_RELU_OPERATOR_DESC, x, Alpha=alpha)

    def shrink(self, x: Tensor, bias: float = 0.0, threshold: float = 0.5) -> Tensor:
        """ACTIVATION_SHRINK (feature level 2.0): ``x + bias`` below ``-threshold``, ``x - bias`` above ``threshold``, else 0."""
        return self._activation("shrink", _activation_family.DML_ACTIVATION_SHRINK_OPERATOR_DESC, x, Bias=bias, Threshold=threshold)

    def swish(self, x: Tensor, sigmoid_input_scale: float = 1.0) -> Tensor:
        """ACTIVATION_SWISH (feature level 6.2): ``x * sigmoid(sigmoid_input_scale * x)``."""
        x = self._tensor_argument("swish", "x", x)
        desc = _activation_family.DML_ACTIVATION_SWISH_OPERATOR_DESC(OutputTensor=self._output(x, x.sizes), SigmoidInputScale=sigmoid_input_scale)
        arguments = {"InputTensor": "x", "OutputTensor": "x", "SigmoidInputScale": "sigmoid_input_scale", "OPERATOR.FEATURE_LEVEL": "x"}
        return self.add_operator(desc, {"InputTensor": x}, call="swish", arguments=arguments)[0]

    def hard_swish(self, x: Tensor, alpha: float = 0.2, beta: float = 0.5) -> Tensor:
        """ACTIVATION_HARD_SWISH (feature level 6.2): ``x * max(0, min(alpha * x + beta, 1))``.

        Alpha 0.2 is the page's typical default; Beta, for which the page names none, is 0.5 as
        for HARD_SIGMOID (ONNX's HardSwish is ``alpha=1/6``).
        """
        return self._activation("hard_swish", _activation_family.DML_ACTIVATION_HARD_SWISH_OPERATOR_DESC, x, Alpha=alpha, Beta=beta)

    def _softmax_family(self, call: str, x: Any, axes: Sequence[int] | None) -> Tensor:
        x = self._tensor_argument(call, "x", x)
        rank = len(x.sizes)
        chosen = [rank - 1] if axes is None else [a + rank if a < 0 else a for a in ints_argument(f"GraphBuilder.{call}", "axes", axes, minimum=-rank)]
        name = {"softmax": "SOFTMAX", "log_softmax": "LOG_SOFTMAX", "hardmax": "HARDMAX"}[call]
        arguments = {"InputTensor": "x", "OutputTensor": "x", "Axes": "axes", "AxisCount": "axes", "OPERATOR.FEATURE_LEVEL": "axes", "ACTIVATION.EFFECTIVE_RANK": "x"}
        if self.feature_level < DML_FEATURE_LEVEL.LEVEL_5_1 and chosen == [rank - 1]:
            desc: Any = getattr(_activation_family, f"DML_ACTIVATION_{name}_OPERATOR_DESC")(OutputTensor=self._output(x, x.sizes))
        else:
            desc = getattr(_activation_family, f"DML_ACTIVATION_{name}1_OPERATOR_DESC")(OutputTensor=self._output(x, x.sizes), Axes=chosen)
        return self.add_operator(desc, {"InputTensor": x}, call=call, arguments=arguments)[0]

    # --- normalization and resampling ---------------------------------------------------

    def batch_normalization(
        self, x: Tensor, mean: Tensor, variance: Tensor, scale: Tensor, bias: Tensor, *, epsilon: float = 1e-5, spatial: bool = True, activation: Any = None,
    ) -> Tensor:  # fmt: skip
        """BATCH_NORMALIZATION: ``activation(scale * (x - mean) / sqrt(variance + epsilon) + bias)``.

        DirectMLX's BatchNormalization has no defaults; ``epsilon`` defaults to ONNX's 1e-5 and
        ``spatial`` to TRUE. ``mean``, ``variance``, ``scale`` and ``bias`` broadcast to ``x``
        (sizes 1 or x's); a packed 1-D ``{C}`` tensor (ONNX's) is read as ``{1, C, 1, ...}``
        (``{1, C}`` for a 2-D ``x``).
        """
        call = "batch_normalization"
        x = self._tensor_argument(call, "x", x)
        named = {"MeanTensor": ("mean", mean), "VarianceTensor": ("variance", variance), "ScaleTensor": ("scale", scale), "BiasTensor": ("bias", bias)}
        tensors = {field: _left_padded(_as_dml_bias(self._tensor_argument(call, argument, value), len(x.sizes)), len(x.sizes)) for field, (argument, value) in named.items()}
        desc = DML_BATCH_NORMALIZATION_OPERATOR_DESC(OutputTensor=self._output(x, x.sizes), Spatial=spatial, Epsilon=epsilon, FusedActivation=activation)
        arguments = {"InputTensor": "x", "OutputTensor": "x", "Spatial": "spatial", "Epsilon": "epsilon", "FusedActivation": "activation",
                     "ACTIVATION.NOT_FUSABLE": "activation", "OPERATOR.TYPE": "activation", **{field: argument for field, (argument, _) in named.items()}}  # fmt: skip
        return self.add_operator(desc, {"InputTensor": x, **tensors}, call=call, arguments=arguments)[0]

    def mean_variance_normalization(
        self, x: Tensor, scale: Tensor | None = None, bias: Tensor | None = None, *, axes: Sequence[int] | None = None, normalize_variance: bool = True,
        epsilon: float = 1e-5, activation: Any = None,
    ) -> Tensor:  # fmt: skip
        """MEAN_VARIANCE_NORMALIZATION1 over ``axes`` (default: every axis after the first two, instance normalization).

        ``activation(scale * (x - mean) / sqrt(variance + epsilon) + bias)``, the mean and the
        population variance taken over ``axes``; ``normalize_variance=False`` leaves out the
        division. ``scale`` and ``bias`` broadcast to ``x``; a packed 1-D ``{C}`` (ONNX
        InstanceNormalization's) is read as ``{1, C, 1, 1}``, another packed tensor of lower
        rank with leading 1s. (Graphs need feature level 2.1, which has MEAN_VARIANCE_NORMALIZATION1.)
        """
        call = "mean_variance_normalization"
        x = self._tensor_argument(call, "x", x)
        rank = len(x.sizes)
        axes = tuple(range(2, rank)) if axes is None else ints_argument(f"GraphBuilder.{call}", "axes", axes, minimum=None)
        scale, bias = (_as_dml_bias(t, rank) if isinstance(t, Tensor) and t.builder is self else t for t in (scale, bias))
        return self._mean_variance(call, x, scale, bias, axes, normalize_variance, epsilon, activation, {"Axes": "axes", "AxisCount": "axes"})

    def layer_normalization(
        self, x: Tensor, scale: Tensor | None = None, bias: Tensor | None = None, *, axis: int = -1, epsilon: float = 1e-5, activation: Any = None,
    ) -> Tensor:  # fmt: skip
        """ONNX LayerNormalization as MEAN_VARIANCE_NORMALIZATION1 over the axes ``axis .. rank - 1``.

        ``scale`` and ``bias`` have the normalized axes' sizes (ONNX's shapes); they are read
        with leading 1s to x's rank.
        """
        call = "layer_normalization"
        x = self._tensor_argument(call, "x", x)
        rank = len(x.sizes)
        if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool) or not -rank <= axis < rank:
            msg = f"GraphBuilder.{call} at {_call_site()}: argument 'axis' is {axis!r}, expected an integer in [{-rank}, {rank - 1}]"
            raise ValueError(msg)
        axes = tuple(range(int(axis) % rank, rank))
        return self._mean_variance(call, x, scale, bias, axes, True, epsilon, activation, {"Axes": "axis", "AxisCount": "axis"})

    def _mean_variance(self, call: str, x: Tensor, scale: Any, bias: Any, axes: tuple[int, ...], normalize_variance: bool, epsilon: float,
                       activation: Any, axis_arguments: dict[str, str]) -> Tensor:  # fmt: skip
        rank = len(x.sizes)
        scale = _left_padded(self._tensor_argument(call, "scale", scale, optional=True), rank)
        bias = _left_padded(self._tensor_argument(call, "bias", bias, optional=True), rank)
        desc = DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC(OutputTensor=self._output(x, x.sizes), AxisCount=len(axes), Axes=axes, NormalizeVariance=normalize_variance,
                                                              Epsilon=epsilon, FusedActivation=activation)  # fmt: skip
        arguments = {"InputTensor": "x", "OutputTensor": "x", "ScaleTensor": "scale", "BiasTensor": "bias", "NormalizeVariance": "normalize_variance",
                     "Epsilon": "epsilon", "FusedActivation": "activation", "ACTIVATION.NOT_FUSABLE": "activation", "OPERATOR.TYPE": "activation",
                     "NORMALIZATION.AXIS_RANGE": axis_arguments["Axes"], "NORMALIZATION.AXIS_DUPLICATE": axis_arguments["Axes"], **axis_arguments}  # fmt: skip
        return self.add_operator(desc, {"InputTensor": x, "ScaleTensor": scale, "BiasTensor": bias}, call=call, arguments=arguments)[0]

    def resample(
        self, x: Tensor, scales: Sequence[float] | None = None, sizes: Sequence[int] | None = None, mode: DML_INTERPOLATION_MODE | int = DML_INTERPOLATION_MODE.NEAREST_NEIGHBOR,
        *, rounding_direction: DML_AXIS_DIRECTION | int = DML_AXIS_DIRECTION.INCREASING, input_pixel_offsets: Sequence[float] | None = None,
        output_pixel_offsets: Sequence[float] | None = None, antialiased: bool = False,
    ) -> Tensor:  # fmt: skip
        """Resample ``x`` to ``sizes``, or by ``scales`` (one per dimension); DirectMLX's Resample defaults.

        With ``sizes`` only, the scales are ``sizes / x.sizes`` (DirectMLX); with ``scales``
        only, the output sizes are ``floor(x.sizes * scales)`` (ONNX Resize's; DirectML leaves
        them free); with both, both are used as given. The pixel offsets default to 0.5 (input)
        and -0.5 (output): pixel centres, as RESAMPLE. The builder emits RESAMPLE3 from feature
        level 6.4, RESAMPLE2 from 5.1 and RESAMPLE1 below; ``rounding_direction``
        (nearest neighbour: INCREASING ceil, DECREASING floor, DirectMLX's default INCREASING)
        needs RESAMPLE2, ``antialiased`` RESAMPLE3. ``onnx_resize_parameters`` (dmlpy.operators.resampling)
        gives the scales, offsets and direction of any ONNX Resize.
        """
        call = "resample"
        x = self._tensor_argument(call, "x", x)
        rank = len(x.sizes)
        if scales is None and sizes is None:
            msg = f"GraphBuilder.{call} at {_call_site()}: give 'scales' or 'sizes' (or both)"
            raise TypeError(msg)
        if sizes is not None:
            sizes = ints_argument(f"GraphBuilder.{call}", "sizes", sizes, length=rank, minimum=1)
        if scales is None:
            scales = tuple(float(np.float32(out) / np.float32(size)) for out, size in zip(sizes or (), x.sizes, strict=True))
        else:
            scales = tuple(float(s) for s in scales)
            if len(scales) != rank:
                msg = f"GraphBuilder.{call} at {_call_site()}: argument 'scales' has {len(scales)} entries, expected {rank} (one per dimension of x)"
                raise ValueError(msg)
        if sizes is None:
            try:
                sizes = resample_output_sizes(x.sizes, scales)
            except _INFERENCE_ERRORS:
                sizes = x.sizes  # validation names the scale (RESAMPLE.SCALE_VALUE)
            sizes = tuple(max(1, s) for s in sizes)
        input_offsets = (0.5,) * rank if input_pixel_offsets is None else tuple(float(v) for v in input_pixel_offsets)
        output_offsets = (-0.5,) * rank if output_pixel_offsets is None else tuple(float(v) for v in output_pixel_offsets)
        output = self._output(x, sizes)
        level = self.feature_level
        common = {"OutputTensor": output, "InterpolationMode": mode, "Scales": scales}
        if level >= DML_FEATURE_LEVEL.LEVEL_6_4:
            desc: Any = DML_RESAMPLE3_OPERATOR_DESC(RoundingDirection=rounding_direction, InputPixelOffsets=input_offsets, OutputPixelOffsets=output_offsets, Antialiased=antialiased, **common)
        elif level >= DML_FEATURE_LEVEL.LEVEL_5_1 and not antialiased:
            desc = DML_RESAMPLE2_OPERATOR_DESC(RoundingDirection=rounding_direction, InputPixelOffsets=input_offsets, OutputPixelOffsets=output_offsets, **common)
        elif antialiased or (rounding_direction != DML_AXIS_DIRECTION.INCREASING and mode == DML_INTERPOLATION_MODE.NEAREST_NEIGHBOR):
            needed = "RESAMPLE3 (DML_FEATURE_LEVEL_6_4)" if antialiased else "RESAMPLE2 (DML_FEATURE_LEVEL_5_1)"
            argument = "antialiased" if antialiased else "rounding_direction"
            msg = f"GraphBuilder.{call} at {_call_site()}: argument '{argument}' needs {needed}; the device targets {level.name}"
            raise ValueError(msg)
        else:  # graphs need feature level 2.1, which has RESAMPLE1
            desc = DML_RESAMPLE1_OPERATOR_DESC(InputPixelOffsets=input_offsets, OutputPixelOffsets=output_offsets, **common)
        arguments = {"InputTensor": "x", "OutputTensor": "sizes" if sizes is not None else "scales", "InterpolationMode": "mode", "Scales": "scales",
                     "RoundingDirection": "rounding_direction", "InputPixelOffsets": "input_pixel_offsets", "OutputPixelOffsets": "output_pixel_offsets",
                     "Antialiased": "antialiased", "DimensionCount": "x", "ScaleCount": "x", "RESAMPLE.SCALE_VALUE": "scales"}  # fmt: skip
        return self.add_operator(desc, {"InputTensor": x}, call=call, arguments=arguments)[0]

    # --- max pooling and reductions ---------------------------------------------------

    def max_pooling(
        self,
        x: Tensor,
        window: Sequence[int],
        strides: Sequence[int] | None = None,
        start_padding: Sequence[int] | None = None,
        end_padding: Sequence[int] | None = None,
        dilations: Sequence[int] | None = None,
        output_indices: bool = False,
        ceil: bool = False,
        *,
        index_type: Any = "uint32",
    ) -> Tensor | tuple[Tensor, Tensor]:
        """Max pooling; DirectML's defaults: strides 1, no padding, no dilation. One int stands for every spatial axis.

        ``ceil=True`` gives the ceil shape (ONNX's ceil_mode) on the axes where one more window
        starts inside input + start padding. ``output_indices=True`` also returns the index of
        each maximum in the input read as one flat array (``index_type`` UINT32 or UINT64), as
        ``(values, indices)``. Emits MAX_POOLING, or MAX_POOLING2 (MAX_POOLING1 below feature
        level 2.1) when indices or dilations are asked for, as onnxruntime's DirectML provider does.
        """
        x = self._tensor_argument("max_pooling", "x", x)
        sizes, common, dilations, dilated = self._pooling_window("max_pooling", x, window, strides, start_padding, end_padding, dilations, ceil)
        common["OutputTensor"] = self._output(x, sizes)
        desc: Any
        if output_indices or dilated:
            indices = self._output(x, sizes, index_type) if output_indices else None
            if dilated or self.feature_level >= DML_FEATURE_LEVEL.LEVEL_2_1:
                desc = DML_MAX_POOLING2_OPERATOR_DESC(OutputIndicesTensor=indices, Dilations=dilations, **common)
            else:
                desc = DML_MAX_POOLING1_OPERATOR_DESC(OutputIndicesTensor=indices, **common)
        else:
            desc = DML_MAX_POOLING_OPERATOR_DESC(**common)
        arguments = {"WindowSize": "window", "Strides": "strides", "StartPadding": "start_padding", "EndPadding": "end_padding", "Dilations": "dilations",
                     "OutputTensor": "x", "InputTensor": "x", "DimensionCount": "window", "OutputIndicesTensor": "index_type", "OPERATOR.FEATURE_LEVEL": "output_indices"}  # fmt: skip
        outputs = self.add_operator(desc, {"InputTensor": x}, call="max_pooling", arguments=arguments)
        return (outputs[0], outputs[1]) if output_indices else outputs[0]

    def _pooling_window(
        self, call: str, x: Tensor, window: Any, strides: Any, start_padding: Any, end_padding: Any, dilations: Any, ceil: bool,
    ) -> tuple[list[int], dict[str, Any], Any, bool]:  # fmt: skip
        """Max and Lp pooling's window arguments with DirectML's defaults: (output sizes, the window fields, dilations, dilated).

        ``ceil`` adds the ceil shape's window on the axes where it starts inside input + start padding."""
        if window is None:
            msg = f"GraphBuilder.{call} at {_call_site()}: argument 'window' is None, expected the window size along each spatial axis"
            raise TypeError(msg)
        spatial = len(x.sizes) - 2
        window = _per_axis(window, spatial, None)
        strides = _per_axis(strides, spatial, 1)
        start_padding = _per_axis(start_padding, spatial, 0)
        end_padding = _per_axis(end_padding, spatial, 0)
        dilations = _per_axis(dilations, spatial, 1)
        sizes = list(_pooling_sizes(x.sizes, window, strides, start_padding, end_padding, dilations))
        if ceil:
            for i in range(spatial):
                try:
                    sizes[i + 2] += ceil_shape_allowed(x.sizes[i + 2], window[i], strides[i], start_padding[i], end_padding[i], dilations[i])
                except _INFERENCE_ERRORS:
                    pass  # validation names the argument
        common = {"DimensionCount": spatial, "Strides": strides, "WindowSize": window, "StartPadding": start_padding, "EndPadding": end_padding}
        dilated = not isinstance(dilations, tuple) or any(d != 1 for d in dilations)
        return sizes, common, dilations, dilated

    def reduce(self, x: Tensor, function: DML_REDUCE_FUNCTION | str, axes: Sequence[int] | int | None = None, *, index_type: Any = "uint32") -> Tensor:
        """DML_REDUCE_OPERATOR_DESC: ``function`` a DML_REDUCE_FUNCTION or its name (``"sum"``, ``"log_sum_exp"``, ...).

        ``axes`` None means every axis (one output element). The output keeps the rank with size
        1 on the reduced axes; ARGMIN and ARGMAX write ``index_type`` (UINT32 at every level).
        """
        x = self._tensor_argument("reduce", "x", x)
        if isinstance(function, str) and function.upper() in DML_REDUCE_FUNCTION.__members__:
            function = DML_REDUCE_FUNCTION[function.upper()]
        index = function in (DML_REDUCE_FUNCTION.ARGMIN, DML_REDUCE_FUNCTION.ARGMAX)
        axes = self._reduce_axes(x, axes)
        desc = DML_REDUCE_OPERATOR_DESC(function, OutputTensor=self._output(x, _reduced_sizes(x.sizes, axes), index_type if index else None), AxisCount=_count(axes), Axes=axes)
        arguments = {"Function": "function", "Axes": "axes", "AxisCount": "axes", "InputTensor": "x", "OutputTensor": "index_type" if index else "x"}
        return self.add_operator(desc, {"InputTensor": x}, call="reduce", arguments=arguments)[0]

    def argmax(self, x: Tensor, axes: Sequence[int] | int | None = None, direction: DML_AXIS_DIRECTION | int = DML_AXIS_DIRECTION.INCREASING, *, index_type: Any = "uint32") -> Tensor:
        """DML_ARGMAX_OPERATOR_DESC (feature level 3.0): the position of each maximum, counted row-major over ``axes``
        (None: every axis); ``direction`` INCREASING takes the first of equal maxima, DECREASING the last."""
        return self._arg("argmax", DML_ARGMAX_OPERATOR_DESC, x, axes, direction, index_type)

    def argmin(self, x: Tensor, axes: Sequence[int] | int | None = None, direction: DML_AXIS_DIRECTION | int = DML_AXIS_DIRECTION.INCREASING, *, index_type: Any = "uint32") -> Tensor:
        """DML_ARGMIN_OPERATOR_DESC (feature level 3.0): as ``argmax``, for the minimum."""
        return self._arg("argmin", DML_ARGMIN_OPERATOR_DESC, x, axes, direction, index_type)

    def _arg(self, call: str, desc_class: type, x: Any, axes: Any, direction: Any, index_type: Any) -> Tensor:
        x = self._tensor_argument(call, "x", x)
        axes = self._reduce_axes(x, axes)
        desc = desc_class(OutputTensor=self._output(x, _reduced_sizes(x.sizes, axes), index_type), AxisCount=_count(axes), Axes=axes, AxisDirection=direction)
        arguments = {"Axes": "axes", "AxisCount": "axes", "AxisDirection": "direction", "InputTensor": "x", "OutputTensor": "index_type", "OPERATOR.FEATURE_LEVEL": call}
        return self.add_operator(desc, {"InputTensor": x}, call=call, arguments=arguments)[0]

    @staticmethod
    def _reduce_axes(x: Tensor, axes: Any) -> Any:
        """Every axis for None, one int as a one-axis list; anything else as given, for validation to judge."""
        if axes is None:
            return list(range(len(x.sizes)))
        if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
            return [int(axes)]
        return list(axes) if isinstance(axes, (list, tuple, np.ndarray)) else axes

    # --- gemm -------------------------------------------------------------------------

    def gemm(
        self,
        a: Tensor,
        b: Tensor,
        c: Tensor | None = None,
        trans_a: bool = False,
        trans_b: bool = False,
        alpha: float = 1.0,
        beta: float = 1.0,
        activation: Any = None,
    ) -> Tensor:
        """GEMM: ``activation(alpha * A' x B' + beta * C)``, A' = A or its last two dims swapped (``trans_a``), B' likewise.

        ``a`` and ``b`` have 2 to 4 dims (DirectML's support table; below 4 needs feature level 4.0);
        the leading ones are batch dims, broadcast as in ONNX MatMul: a size-1 batch dim (or a
        missing leading one) is read through stride 0, so one matrix serves every batch. ``c`` is
        optional and broadcast to the output ``{batch..., M, N}`` the same way (ONNX Gemm's C: a
        bias row ``{N}``, a column ``{M, 1}``, a scalar). ``activation`` is a fused activation
        (``FusedActivation.relu()``, ...). The DML_GEMM_OPERATOR_DESC page gives the formula.
        """
        call = "gemm"
        a = self._tensor_argument(call, "a", a)
        b = self._tensor_argument(call, "b", b)
        c = self._tensor_argument(call, "c", c, optional=True)
        for argument, value in (("a", a), ("b", b)):
            if len(value.sizes) < 2:
                msg = f"GraphBuilder.{call} at {_call_site()}: argument '{argument}' has sizes {value.sizes}, expected a matrix: 2 to 4 dims, the last two its rows and columns"
                raise ValueError(msg)
        rank = max(len(a.sizes), len(b.sizes))
        a_sizes, b_sizes = (1,) * (rank - len(a.sizes)) + a.sizes, (1,) * (rank - len(b.sizes)) + b.sizes
        batch = tuple(max(x, y) if 1 in (x, y) else x for x, y in zip(a_sizes[:-2], b_sizes[:-2], strict=True))
        m = a_sizes[-1] if trans_a else a_sizes[-2]
        n = b_sizes[-2] if trans_b else b_sizes[-1]
        out_sizes = (*batch, m, n)
        a = _broadcast_view(a, (*batch, *a_sizes[-2:]))
        b = _broadcast_view(b, (*batch, *b_sizes[-2:]))
        if c is not None:
            c = _broadcast_view(c, out_sizes)
        desc = DML_GEMM_OPERATOR_DESC(
            OutputTensor=self._output(a, out_sizes), TransA=DML_MATRIX_TRANSFORM(int(bool(trans_a))), TransB=DML_MATRIX_TRANSFORM(int(bool(trans_b))),
            Alpha=alpha, Beta=beta, FusedActivation=activation,
        )  # fmt: skip
        arguments = {
            "ATensor": "a", "BTensor": "b", "CTensor": "c", "OutputTensor": "a", "TransA": "trans_a", "TransB": "trans_b", "Alpha": "alpha",
            "Beta": "beta", "FusedActivation": "activation", "GEMM.INNER_SIZE": "b", "GEMM.BATCH_SIZES": "b", "TENSOR.SAME_SIZES": "c",
            "ACTIVATION.NOT_FUSABLE": "activation", "ACTIVATION.FUSED_TENSORS_NOT_NULL": "activation", "OPERATOR.TYPE": "activation",
        }  # fmt: skip
        return self.add_operator(desc, {"ATensor": a, "BTensor": b, "CTensor": c}, call=call, arguments=arguments)[0]

    def matmul(self, a: Tensor, b: Tensor, activation: Any = None) -> Tensor:
        """ONNX MatMul of matrices of 2 to 4 dims: ``gemm(a, b)`` with its batch broadcast (no C, alpha 1)."""
        return self.gemm(a, b, activation=activation)

    # --- element-wise, broadcasting and layout (ONNX importer) ----------------------------

    def element_wise(self, op_name: str, *inputs: Tensor, output_dtype: Any = None, **fields: Any) -> Tensor:
        """Any ELEMENT_WISE_* operator by name (``"ADD"``, ``"ELEMENT_WISE_LOGICAL_EQUALS"``, ``"IF"``, ...).

        ``inputs`` fill the desc's input tensor fields in order (IF: condition, A, B). They
        broadcast as ONNX does (multidirectionally, lower ranks aligned on the right): every input
        is read with the output's sizes through stride 0 along the dimensions it broadcasts over,
        the same bytes. The output has the inputs' data type (A's for IF), UINT8 for comparisons,
        logic and IS_NAN / IS_INFINITY, or ``output_dtype``. ``fields`` are the desc's other
        fields (``ScaleBias``, ``FusedActivation``, ``Min``, ...).
        """
        from dmlpy.enums import DML_OPERATOR_TYPE
        from dmlpy.operators import REGISTRY

        name = op_name.upper()
        name = name if name.startswith("ELEMENT_WISE_") else f"ELEMENT_WISE_{name}"
        try:
            op_type = DML_OPERATOR_TYPE[name]
        except KeyError:
            msg = f"GraphBuilder.element_wise at {_call_site()}: argument 'op_name' is {op_name!r}, which names no DML_OPERATOR_{name}"
            raise ValueError(msg) from None
        spec = REGISTRY[op_type]
        slots = [f.name for f in dataclasses.fields(spec.desc_class) if f.name.endswith("Tensor") and not f.name.startswith("Output")]
        required = [s for s in slots if s not in ("ScaleTensor", "ZeroPointTensor")]
        if not required[: len(inputs)] or len(inputs) < len(required) or len(inputs) > len(slots):
            msg = f"GraphBuilder.element_wise at {_call_site()}: {name} takes {len(required)} input tensors ({', '.join(slots)}), got {len(inputs)}"
            raise TypeError(msg)
        tensors = [self._tensor_argument("element_wise", f"inputs[{i}]", t) for i, t in enumerate(inputs)]
        sizes = broadcast_sizes(*(t.sizes for t in tensors))
        if sizes is None:
            msg = f"GraphBuilder.element_wise at {_call_site()}: the inputs' sizes {[t.sizes for t in tensors]} do not broadcast (ONNX's multidirectional broadcasting)"
            raise ValueError(msg)
        viewed = {slot: _broadcast_view(t, sizes) for slot, t in zip(slots, tensors, strict=False)}
        if output_dtype is None:
            boolean = name.startswith("ELEMENT_WISE_LOGICAL_") or name in ("ELEMENT_WISE_IS_NAN", "ELEMENT_WISE_IS_INFINITY")
            output_dtype = "uint8" if boolean else (tensors[1] if name == "ELEMENT_WISE_IF" else tensors[0]).data_type
        desc = spec.desc_class(OutputTensor=self._output(tensors[0], sizes, output_dtype), **fields)
        arguments = {slot: f"inputs[{i}]" for i, slot in enumerate(slots)} | {"OutputTensor": "output_dtype"} | {f: f for f in fields}
        return self.add_operator(desc, viewed, call=name.lower(), arguments=arguments)[0]

    def add(self, a: Tensor, b: Tensor, activation: Any = None) -> Tensor:
        """``a + b`` (ELEMENT_WISE_ADD1, with an optional fused activation such as ``FusedActivation.relu()``), broadcast."""
        return self.element_wise("ADD1", a, b, FusedActivation=activation) if activation is not None else self.element_wise("ADD", a, b)

    def subtract(self, a: Tensor, b: Tensor) -> Tensor:
        """``a - b``, broadcast."""
        return self.element_wise("SUBTRACT", a, b)

    def multiply(self, a: Tensor, b: Tensor) -> Tensor:
        """``a * b``, broadcast."""
        return self.element_wise("MULTIPLY", a, b)

    def divide(self, a: Tensor, b: Tensor) -> Tensor:
        """``a / b`` (integers: truncated toward zero), broadcast."""
        return self.element_wise("DIVIDE", a, b)

    def max(self, a: Tensor, b: Tensor) -> Tensor:
        """The larger of ``a`` and ``b``, broadcast."""
        return self.element_wise("MAX", a, b)

    def min(self, a: Tensor, b: Tensor) -> Tensor:
        """The smaller of ``a`` and ``b``, broadcast."""
        return self.element_wise("MIN", a, b)

    def pow(self, x: Tensor, exponent: Tensor) -> Tensor:
        """``x ** exponent`` (ELEMENT_WISE_POW), broadcast."""
        return self.element_wise("POW", x, exponent)

    def sqrt(self, x: Tensor) -> Tensor:
        """ELEMENT_WISE_SQRT."""
        return self.element_wise("SQRT", x)

    def reciprocal(self, x: Tensor) -> Tensor:
        """ELEMENT_WISE_RECIP: ``1 / x``."""
        return self.element_wise("RECIP", x)

    def exp(self, x: Tensor) -> Tensor:
        """ELEMENT_WISE_EXP."""
        return self.element_wise("EXP", x)

    def log(self, x: Tensor) -> Tensor:
        """ELEMENT_WISE_LOG (natural)."""
        return self.element_wise("LOG", x)

    def abs(self, x: Tensor) -> Tensor:
        """ELEMENT_WISE_ABS."""
        return self.element_wise("ABS", x)

    def neg(self, x: Tensor) -> Tensor:
        """``-x``: ELEMENT_WISE_NEGATE (feature level 2.0), or IDENTITY with ScaleBias {-1, 0} for floats below it."""
        if self.feature_level < DML_FEATURE_LEVEL.LEVEL_2_0:
            from dmlpy.operators.descs.helpers import DML_SCALE_BIAS

            return self.element_wise("IDENTITY", x, ScaleBias=DML_SCALE_BIAS(-1.0, 0.0))
        return self.element_wise("NEGATE", x)

    def erf(self, x: Tensor) -> Tensor:
        """ELEMENT_WISE_ERF."""
        return self.element_wise("ERF", x)

    def tanh_element_wise(self, x: Tensor) -> Tensor:
        """ELEMENT_WISE_TANH (``tanh`` above is ACTIVATION_TANH; both compute the same)."""
        return self.element_wise("TANH", x)

    def clip(self, x: Tensor, min: float | None = None, max: float | None = None) -> Tensor:
        """Clamp to ``[min, max]`` (None: the type's lowest or highest value). ELEMENT_WISE_CLIP1 from feature
        level 5.0 (the bounds in x's own type), ELEMENT_WISE_CLIP (FLOAT bounds) below it."""
        from dmlpy.operators.element_wise import store
        from dmlpy.structs import DML_SCALAR_UNION
        from dmlpy.tensor import numpy_dtype

        x = self._tensor_argument("clip", "x", x)
        dtype = numpy_dtype(x.data_type)
        info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
        low = -np.inf if dtype.kind == "f" and min is None else (info.min if min is None else min)
        high = np.inf if dtype.kind == "f" and max is None else (info.max if max is None else max)
        if self.feature_level >= DML_FEATURE_LEVEL.LEVEL_5_0:
            def union(v: Any) -> Any:
                stored = store(np.float64(v), dtype) if dtype.kind == "f" else np.array(v).astype(dtype)
                return DML_SCALAR_UNION(Bytes=np.asarray(stored, dtype).tobytes().ljust(8, b"\0"))
            return self.element_wise("CLIP1", x, MinMaxDataType=x.data_type, Min=union(low), Max=union(high))
        return self.element_wise("CLIP", x, Min=float(low), Max=float(high))

    def where(self, condition: Tensor, a: Tensor, b: Tensor) -> Tensor:
        """ELEMENT_WISE_IF (ONNX Where): ``a`` where ``condition`` (UINT8) is nonzero, else ``b``; all three broadcast."""
        return self.element_wise("IF", condition, a, b)

    def equal(self, a: Tensor, b: Tensor) -> Tensor:
        """ELEMENT_WISE_LOGICAL_EQUALS: 1 where ``a == b``, else 0 (UINT8)."""
        return self.element_wise("LOGICAL_EQUALS", a, b)

    def less(self, a: Tensor, b: Tensor) -> Tensor:
        """ELEMENT_WISE_LOGICAL_LESS_THAN (UINT8)."""
        return self.element_wise("LOGICAL_LESS_THAN", a, b)

    def greater(self, a: Tensor, b: Tensor) -> Tensor:
        """ELEMENT_WISE_LOGICAL_GREATER_THAN (UINT8)."""
        return self.element_wise("LOGICAL_GREATER_THAN", a, b)

    def logical_not(self, x: Tensor) -> Tensor:
        """ELEMENT_WISE_LOGICAL_NOT (UINT8)."""
        return self.element_wise("LOGICAL_NOT", x)

    def logical_and(self, a: Tensor, b: Tensor) -> Tensor:
        """ELEMENT_WISE_LOGICAL_AND (UINT8)."""
        return self.element_wise("LOGICAL_AND", a, b)

    def logical_or(self, a: Tensor, b: Tensor) -> Tensor:
        """ELEMENT_WISE_LOGICAL_OR (UINT8)."""
        return self.element_wise("LOGICAL_OR", a, b)

    def reinterpret(self, x: Tensor, sizes: Sequence[int]) -> Tensor:
        """``x``'s bytes read with new ``sizes`` (a reshape: no node, no copy), as a DML graph edge allows
        (GRAPH.EDGE_SIZE_MISMATCH: only TotalTensorSizeInBytes must agree). ``x`` must be packed (a
        strided view, such as ``transpose``'s, is copied first by an IDENTITY node) and have as many
        elements as ``sizes``."""
        x = self._tensor_argument("reinterpret", "x", x)
        sizes = ints_argument("GraphBuilder.reinterpret", "sizes", sizes, minimum=1)
        if math.prod(sizes) != math.prod(x.sizes):
            msg = f"GraphBuilder.reinterpret at {_call_site()}: argument 'sizes' {tuple(sizes)} has {math.prod(sizes)} elements, x {x.sizes} has {math.prod(x.sizes)}"
            raise ValueError(msg)
        if tuple(sizes) == x.sizes:
            return x
        if not _packed(x):
            x = self.element_wise("IDENTITY", x)
        shaped = dataclasses.replace(x.desc, DimensionCount=len(sizes), Sizes=tuple(sizes), Strides=None)
        return dataclasses.replace(x, desc=shaped)

    def transpose(self, x: Tensor, perm: Sequence[int] | None = None, *, copy: bool = True) -> Tensor:
        """ONNX Transpose: output dim ``i`` is x's dim ``perm[i]`` (default: reversed). ``copy=True``: an
        ELEMENT_WISE_IDENTITY reading x through the permuted strides, its output packed; ``copy=False``:
        only the view (sizes and strides permuted, the same bytes), for a consumer that reads strides."""
        x = self._tensor_argument("transpose", "x", x)
        rank = len(x.sizes)
        perm = tuple(reversed(range(rank))) if perm is None else tuple(int(p) for p in perm)
        if sorted(perm) != list(range(rank)):
            msg = f"GraphBuilder.transpose at {_call_site()}: argument 'perm' is {perm}, expected a permutation of 0..{rank - 1}"
            raise ValueError(msg)
        strides = _strides_of(x)
        shaped = dataclasses.replace(x.desc, Sizes=tuple(x.sizes[p] for p in perm), Strides=tuple(strides[p] for p in perm))
        view = dataclasses.replace(x, desc=shaped)
        return self.element_wise("IDENTITY", view) if copy else view

    def expand(self, x: Tensor, sizes: Sequence[int], *, copy: bool = True) -> Tensor:
        """ONNX Expand: ``x`` broadcast to ``broadcast(x.sizes, sizes)`` through stride 0; ``copy=True`` writes it
        out with an ELEMENT_WISE_IDENTITY, ``copy=False`` gives the view only."""
        x = self._tensor_argument("expand", "x", x)
        target = broadcast_sizes(x.sizes, tuple(int(s) for s in sizes))
        if target is None:
            msg = f"GraphBuilder.expand at {_call_site()}: x {x.sizes} does not broadcast to {tuple(sizes)}"
            raise ValueError(msg)
        view = _broadcast_view(x, target)
        return self.element_wise("IDENTITY", view) if copy else view

    def broadcast(self, x: Tensor, sizes: Sequence[int]) -> Tensor:
        """``x`` read as ``sizes`` through stride 0 (no node): ``expand(x, sizes, copy=False)``."""
        return self.expand(x, sizes, copy=False)

    # --- LRN, Lp pooling and normalization ---

    def local_response_normalization(self, x: Tensor, local_size: int, *, alpha: float = 0.0001, beta: float = 0.75, bias: float = 1.0, cross_channel: bool = True) -> Tensor:
        """LOCAL_RESPONSE_NORMALIZATION of a 4-D ``x``: ``x / (bias + alpha / local_size * sum(x^2 over the local region))^beta``.

        The region is ``local_size`` channels (``cross_channel=True``, ONNX LRN's) or ``local_size``
        x ``local_size`` positions of H and W, clipped to the tensor. Defaults: the values the
        DML_LOCAL_RESPONSE_NORMALIZATION_OPERATOR_DESC page recommends (ONNX LRN's alpha means the same).
        """
        call = "local_response_normalization"
        x = self._tensor_argument(call, "x", x)
        desc = DML_LOCAL_RESPONSE_NORMALIZATION_OPERATOR_DESC(OutputTensor=self._output(x, x.sizes), CrossChannel=cross_channel, LocalSize=local_size, Alpha=alpha, Beta=beta, Bias=bias)
        arguments = {"InputTensor": "x", "OutputTensor": "x", "LocalSize": "local_size", "Alpha": "alpha", "Beta": "beta", "Bias": "bias", "CrossChannel": "cross_channel"}
        return self.add_operator(desc, {"InputTensor": x}, call=call, arguments=arguments)[0]

    def lp_pooling(
        self,
        x: Tensor,
        window: Sequence[int],
        strides: Sequence[int] | None = None,
        start_padding: Sequence[int] | None = None,
        end_padding: Sequence[int] | None = None,
        dilations: Sequence[int] | None = None,
        *,
        p: int = 2,
        ceil: bool = False,
    ) -> Tensor:
        """Lp pooling, ``(sum |x|^p over the window)^(1/p)``; DirectML's defaults: strides 1, no padding, no dilation.

        One int stands for every spatial axis. Dilations make it LP_POOLING1 (feature level 6.2).
        ``ceil=True`` gives the ceil shape (ONNX's ceil_mode) where one more window starts inside
        input + start padding; taps past the padded input add nothing.
        """
        call = "lp_pooling"
        x = self._tensor_argument(call, "x", x)
        sizes, common, dilations, dilated = self._pooling_window(call, x, window, strides, start_padding, end_padding, dilations, ceil)
        common.update(OutputTensor=self._output(x, sizes), P=p)
        desc: Any = DML_LP_POOLING1_OPERATOR_DESC(Dilations=dilations, **common) if dilated else DML_LP_POOLING_OPERATOR_DESC(**common)
        arguments = {"WindowSize": "window", "Strides": "strides", "StartPadding": "start_padding", "EndPadding": "end_padding", "Dilations": "dilations",
                     "OutputTensor": "x", "InputTensor": "x", "DimensionCount": "window", "P": "p", "OPERATOR.FEATURE_LEVEL": "dilations"}  # fmt: skip
        return self.add_operator(desc, {"InputTensor": x}, call=call, arguments=arguments)[0]

    def lp_normalization(self, x: Tensor, axis: int = -1, *, p: int = 2, epsilon: float = 1e-5) -> Tensor:
        """LP_NORMALIZATION: ``x / max(||x||_p along axis, epsilon)``, ``p`` 1 or 2 (a negative ``axis`` counts from the end).

        Defaults: ONNX LpNormalization's axis and p, and the epsilon the
        DML_LP_NORMALIZATION_OPERATOR_DESC page recommends.
        """
        call = "lp_normalization"
        x = self._tensor_argument(call, "x", x)
        rank = len(x.sizes)
        if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool) or not -rank <= axis < rank:
            msg = f"GraphBuilder.{call} at {_call_site()}: argument 'axis' is {axis!r}, expected an integer in [{-rank}, {rank - 1}]"
            raise ValueError(msg)
        desc = DML_LP_NORMALIZATION_OPERATOR_DESC(OutputTensor=self._output(x, x.sizes), Axis=int(axis) % rank, Epsilon=epsilon, P=p)
        arguments = {"InputTensor": "x", "OutputTensor": "x", "Axis": "axis", "Epsilon": "epsilon", "P": "p"}
        return self.add_operator(desc, {"InputTensor": x}, call=call, arguments=arguments)[0]

    # --- top-k, cumulative, one-hot, scatter ---

    def top_k(self, x: Tensor, axis: int, k: int, direction: DML_AXIS_DIRECTION | int = DML_AXIS_DIRECTION.DECREASING, *, index_type: Any = "uint32") -> tuple[Tensor, Tensor]:
        """TOP_K1 (TOP_K below feature level 2.1): the ``k`` largest (DECREASING) or smallest (INCREASING) elements along
        ``axis`` and their positions (``index_type``), sorted that way, equal values in increasing index order."""
        from dmlpy.operators.reduction import DML_TOP_K1_OPERATOR_DESC, DML_TOP_K_OPERATOR_DESC  # noqa: PLC0415

        x = self._tensor_argument("top_k", "x", x)
        sizes = tuple(k if i == axis else n for i, n in enumerate(x.sizes))
        common: dict[str, Any] = {"OutputValueTensor": self._output(x, sizes), "OutputIndexTensor": self._output(x, sizes, index_type), "Axis": axis, "K": k}
        old = self.feature_level < DML_FEATURE_LEVEL.LEVEL_2_1 and direction == DML_AXIS_DIRECTION.DECREASING
        desc: Any = DML_TOP_K_OPERATOR_DESC(**common) if old else DML_TOP_K1_OPERATOR_DESC(AxisDirection=direction, **common)
        arguments = {"InputTensor": "x", "OutputValueTensor": "x", "OutputIndexTensor": "index_type", "Axis": "axis", "K": "k", "AxisDirection": "direction", "OPERATOR.FEATURE_LEVEL": "direction"}
        values, indices = self.add_operator(desc, {"InputTensor": x}, call="top_k", arguments=arguments)
        return values, indices

    def cumulative_summation(self, x: Tensor, axis: int, direction: DML_AXIS_DIRECTION | int = DML_AXIS_DIRECTION.INCREASING, *, exclusive: bool = False) -> Tensor:
        """CUMULATIVE_SUMMATION (ONNX CumSum): the running sum along ``axis``, from its end for DECREASING (ONNX reverse);
        ``exclusive`` leaves each element out of its own sum."""
        return self._cumulative("cumulative_summation", x, axis, direction, exclusive)

    def cumulative_product(self, x: Tensor, axis: int, direction: DML_AXIS_DIRECTION | int = DML_AXIS_DIRECTION.INCREASING, *, exclusive: bool = False) -> Tensor:
        """CUMULATIVE_PRODUCT (feature level 3.1): as ``cumulative_summation``, multiplying."""
        return self._cumulative("cumulative_product", x, axis, direction, exclusive)

    def _cumulative(self, call: str, x: Any, axis: int, direction: Any, exclusive: bool) -> Tensor:
        from dmlpy.operators.reduction import DML_CUMULATIVE_PRODUCT_OPERATOR_DESC, DML_CUMULATIVE_SUMMATION_OPERATOR_DESC  # noqa: I001, PLC0415

        x = self._tensor_argument(call, "x", x)
        common: dict[str, Any] = {"OutputTensor": self._output(x, x.sizes), "Axis": axis, "AxisDirection": direction}
        if call == "cumulative_product":
            desc: Any = DML_CUMULATIVE_PRODUCT_OPERATOR_DESC(HasExclusiveProduct=bool(exclusive), **common)
        else:
            desc = DML_CUMULATIVE_SUMMATION_OPERATOR_DESC(HasExclusiveSum=bool(exclusive), **common)
        arguments = {"InputTensor": "x", "OutputTensor": "x", "Axis": "axis", "AxisDirection": "direction", "HasExclusiveSum": "exclusive", "HasExclusiveProduct": "exclusive", "OPERATOR.FEATURE_LEVEL": call}
        return self.add_operator(desc, {"InputTensor": x}, call=call, arguments=arguments)[0]

    def one_hot(self, indices: Tensor, values: Tensor, axis: int, depth: int) -> Tensor:
        """ONE_HOT (ONNX OneHot): ``indices`` has size 1 on ``axis``; the output has ``depth`` there, values' element 1
        (OnValue) at each index and element 0 (OffValue) elsewhere; an index outside ``[-depth, depth)`` gives OffValue only."""
        from dmlpy.operators.data_movement import DML_ONE_HOT_OPERATOR_DESC  # noqa: PLC0415

        indices = self._tensor_argument("one_hot", "indices", indices)
        values = self._tensor_argument("one_hot", "values", values)
        sizes = tuple(depth if i == axis else n for i, n in enumerate(indices.sizes))
        desc = DML_ONE_HOT_OPERATOR_DESC(OutputTensor=self._output(values, sizes), Axis=axis)
        arguments = {"IndicesTensor": "indices", "ValuesTensor": "values", "OutputTensor": "depth", "Axis": "axis"}
        return self.add_operator(desc, {"IndicesTensor": indices, "ValuesTensor": values}, call="one_hot", arguments=arguments)[0]

    def scatter_elements(self, x: Tensor, indices: Tensor, updates: Tensor, axis: int) -> Tensor:
        """SCATTER_ELEMENTS (ONNX ScatterElements, reduction none): a copy of ``x`` with ``updates[i]`` written at
        ``indices[i]`` along ``axis``."""
        from dmlpy.operators.data_movement import DML_SCATTER_OPERATOR_DESC  # noqa: PLC0415

        x = self._tensor_argument("scatter_elements", "x", x)
        indices = self._tensor_argument("scatter_elements", "indices", indices)
        updates = self._tensor_argument("scatter_elements", "updates", updates)
        desc = DML_SCATTER_OPERATOR_DESC(OutputTensor=self._output(x, x.sizes), Axis=axis)
        arguments = {"InputTensor": "x", "IndicesTensor": "indices", "UpdatesTensor": "updates", "OutputTensor": "x", "Axis": "axis"}
        return self.add_operator(desc, {"InputTensor": x, "IndicesTensor": indices, "UpdatesTensor": updates}, call="scatter_elements", arguments=arguments)[0]

    def scatter_nd(self, x: Tensor, indices: Tensor, updates: Tensor, *, input_dimensions: int | None = None, indices_dimensions: int | None = None) -> Tensor:
        """SCATTER_ND (ONNX ScatterND, reduction none): a copy of ``x`` with each tuple along the indices' last dimension
        naming where a slice of ``updates`` goes. The meaningful dimension counts default to every dimension."""
        from dmlpy.operators.data_movement import DML_SCATTER_ND_OPERATOR_DESC  # noqa: PLC0415

        x = self._tensor_argument("scatter_nd", "x", x)
        indices = self._tensor_argument("scatter_nd", "indices", indices)
        updates = self._tensor_argument("scatter_nd", "updates", updates)
        input_count = len(x.sizes) if input_dimensions is None else input_dimensions
        indices_count = len(indices.sizes) if indices_dimensions is None else indices_dimensions
        desc = DML_SCATTER_ND_OPERATOR_DESC(OutputTensor=self._output(x, x.sizes), InputDimensionCount=input_count, IndicesDimensionCount=indices_count)
        arguments = {"InputTensor": "x", "IndicesTensor": "indices", "UpdatesTensor": "updates", "OutputTensor": "x",
                     "InputDimensionCount": "input_dimensions", "IndicesDimensionCount": "indices_dimensions"}  # fmt: skip
        return self.add_operator(desc, {"InputTensor": x, "IndicesTensor": indices, "UpdatesTensor": updates}, call="scatter_nd", arguments=arguments)[0]

    def _tensor_argument(self, call: str, argument: str, value: Any, *, optional: bool = False) -> Any:
        """``value`` when it is a Tensor of this builder; a TypeError naming the call and argument otherwise."""
        if value is None and optional:
            return None
        if not isinstance(value, Tensor):
            hint = " (make it a graph value with g.constant(array) or g.input(...))" if isinstance(value, np.ndarray) else ""
            msg = f"GraphBuilder.{call} at {_call_site()}: argument '{argument}' is a {type(value).__name__}, expected a Tensor of this GraphBuilder{hint}"
            raise TypeError(msg)
        if value.builder is not self:
            msg = f"GraphBuilder.{call} at {_call_site()}: argument '{argument}' comes from another GraphBuilder"
            raise ValueError(msg)
        return value

    # --- compile ----------------------------------------------------------------------

    def compile(self, outputs: Mapping[str, Tensor] | Sequence[Tensor], flags: DML_EXECUTION_FLAGS | int = DML_EXECUTION_FLAGS.NONE) -> GraphProgram:
        """Write the DML_GRAPH_DESC, compile it and initialize it; returns a callable program."""
        if isinstance(outputs, Tensor) or not isinstance(outputs, (Mapping, Sequence)) or isinstance(outputs, str):
            msg = f"GraphBuilder.compile at {_call_site()}: outputs is a {type(outputs).__name__}, expected a mapping of names to Tensors or a list of Tensors"
            raise TypeError(msg)
        named = dict(outputs) if isinstance(outputs, Mapping) else {f"output{i}": t for i, t in enumerate(outputs)}
        if not named:
            msg = "GraphBuilder.compile needs at least one output"
            raise ValueError(msg)
        device = self.device
        operators = [device.create_operator(node.desc) if node.desc is not None else None for node in self._nodes]
        nodes = [
            operator_node(op, node.name) if op is not None else constant_node(node.constant, node.name)  # type: ignore[arg-type]
            for op, node in zip(operators, self._nodes, strict=True)
        ]
        in_edges, mid_edges, out_edges = [], [], []
        for index, node in enumerate(self._nodes):
            if node.desc is None:
                continue
            slots = [s.name for s in operators[index].slots("input")]  # type: ignore[union-attr] - tensor arrays flattened
            for field_name, tensor in node.inputs.items():
                if tensor is None:
                    continue
                slot = slots.index(field_name)
                kind, source, out = tensor.source
                if kind == "input":
                    in_edges.append(input_edge(source, index, slot, tensor.name))
                else:
                    mid_edges.append(intermediate_edge(source, out, index, slot, tensor.name))
        for g, (name, tensor) in enumerate(named.items()):
            kind, source, out = self._tensor_argument("compile", f"outputs[{name!r}]", tensor).source
            if kind != "node":
                msg = f"GraphBuilder.compile: output {name!r} is a graph input or constant, not a node output"
                raise ValueError(msg)
            out_edges.append(output_edge(source, out, g, name))
        desc = graph_desc(len(self._inputs), len(named), nodes, in_edges, out_edges, mid_edges)
        compiled = device.compile_graph(desc, flags)
        return GraphProgram(device, desc, compiled, list(self._inputs), named)


class GraphProgram:
    """A compiled graph with its buffers: call it with NumPy arrays by input name."""

    def __init__(self, device: Device, desc: DML_GRAPH_DESC, compiled: CompiledGraph, inputs: list[tuple[str, DML_BUFFER_TENSOR_DESC]], outputs: dict[str, Tensor]) -> None:
        self.device = device
        self.graph_desc = desc
        self.compiled = compiled
        self.input_names = [name for name, _ in inputs]
        self.output_names = list(outputs)
        self._inputs = inputs
        self._outputs = outputs
        self._session: _ProgramSession | None = None

    def __repr__(self) -> str:
        return f"<dmlpy.GraphProgram inputs {self.input_names} -> outputs {self.output_names}, {self.graph_desc.NodeCount} nodes>"

    def _repr_html_(self) -> str:
        from dmlpy.pictures import graph_picture  # noqa: PLC0415 - pictures sit above the builder

        return f"<div>{graph_picture(self)}</div>"

    def __call__(self, **arrays: Any) -> dict[str, np.ndarray]:
        """Copy the arrays into the graph's input buffers, execute, and return the outputs by name as new arrays.

        The buffers, the initializer, the binding tables and the command lists are made at the first call
        and kept: later calls only copy in, execute (the device's checks at execute still run) and copy out.
        From 256 KiB a packed tensor skips its copy: the buffer reads a C-contiguous input array in place for
        the call, and an output is written into a new array that becomes the result.
        OWNED_BY_DML inputs are taken by the initializer, which runs again at every call, so new weights
        always reach the graph.
        """
        session = self._session
        if session is None:
            session = self._session = _ProgramSession(self)
        if arrays.keys() != session.names:
            self._check_names(arrays)
        _call_ports(self.device, session.lists, [(port, arrays[name]) for name, port in session.inputs], session.output_ports)
        return {name: port.read() for name, port in session.outputs}

    def _check_names(self, arrays: Mapping[str, Any]) -> None:
        unknown = set(arrays) - set(self.input_names)
        missing = [n for n in self.input_names if n not in arrays]
        msg = f"the graph takes {', '.join(self.input_names) or 'no inputs'}" + (f"; unknown: {', '.join(sorted(unknown))}" if unknown else "") + (f"; missing: {', '.join(missing)}" if missing else "")
        raise TypeError(msg)


class _ProgramSession:
    """A GraphProgram's pipeline, made at its first call: DirectML's steps, done once."""

    def __init__(self, program: GraphProgram) -> None:
        device, compiled = program.device, program.compiled
        props = compiled.get_binding_properties()
        slots = compiled.input_slots()
        buffers = [device.create_buffer(desc.TotalTensorSizeInBytes, name) for name, desc in program._inputs]  # noqa: SLF001
        recorder = device.create_command_recorder()
        persistent = device.create_buffer(props.PersistentResourceSize, "persistent") if props.PersistentResourceSize else None
        temporary = device.create_buffer(props.TemporaryResourceSize, "temporary") if props.TemporaryResourceSize else None
        initializer = device.create_operator_initializer([compiled])
        init_table = device.create_binding_table(initializer)
        init_table.bind_inputs([array_binding([buffer_binding(b).Desc if s.owned else None for s, b in zip(slots, buffers, strict=True)])])
        init_table.bind_outputs([buffer_binding(persistent)])
        init_list = device.create_command_list()
        recorder.record_dispatch(init_list, initializer, init_table)
        init_list.close()
        device.execute(init_list)  # initializes the graph; run again per call only when it owns inputs
        out_buffers = [device.create_buffer(s.tensor.TotalTensorSizeInBytes if s.tensor else 4, name) for s, name in zip(compiled.output_slots(), program.output_names, strict=True)]
        table = device.create_binding_table(DML_BINDING_TABLE_DESC(compiled, 0, 0, props.RequiredDescriptorCount))
        table.bind_inputs([DML_BINDING_DESC() if s.owned or s.ignored else buffer_binding(b) for s, b in zip(slots, buffers, strict=True)])
        table.bind_outputs([buffer_binding(b) for b in out_buffers])
        table.bind_temporary_resource(buffer_binding(temporary) if temporary is not None else None)
        table.bind_persistent_resource(buffer_binding(persistent) if persistent is not None else None)
        command_list = device.create_command_list()
        recorder.record_dispatch(command_list, compiled, table)
        command_list.close()
        self.lists = (init_list, command_list) if any(s.owned for s in slots) else (command_list,)
        self.names = frozenset(program.input_names)
        self.inputs = [(name, _Port(b, desc, name)) for (name, desc), b in zip(program._inputs, buffers, strict=True)]  # noqa: SLF001
        self.outputs = [(name, _Port(b, s.tensor, name)) for name, b, s in zip(program.output_names, out_buffers, compiled.output_slots(), strict=True) if s.tensor is not None]
        self.output_ports = [port for _, port in self.outputs]


# ---------------------------------------------------------------------------------------
# Size inference that never raises: a size no formula gives is left for validation to name


_INFERENCE_ERRORS = (ValueError, TypeError, LookupError, ZeroDivisionError, OverflowError)


def _per_axis(value: Any, spatial: int, default: int | None) -> Any:
    """``default`` for every spatial axis when ``value`` is None or empty (as DirectMLX reads an empty array); one int for every axis; else as given."""
    if default is not None and (value is None or (isinstance(value, (list, tuple)) and not value)):
        return (default,) * spatial
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),) * spatial
    return tuple(value) if isinstance(value, (list, tuple, np.ndarray)) else value


def _is_positive(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value > 0


def _convolution_sizes(x: Sequence[int], w: Sequence[int], strides: Any, dilations: Any, start: Any, end: Any, extra: Any, groups: Any, *, backward: bool) -> tuple[int, ...]:
    """``{N, Cout, spatial...}`` by the DML_CONVOLUTION_OPERATOR_DESC page's formulas, axis by axis; an axis no formula fits gets 1."""
    try:
        channels = int(w[1]) * int(groups) if backward else int(w[0])
    except _INFERENCE_ERRORS:
        channels = x[1]
    sizes = [x[0], channels if channels >= 1 else x[1]]
    for i in range(len(x) - 2):
        try:
            args = (x[i + 2], w[i + 2], strides[i], start[i], end[i], dilations[i])
            size = backward_output_size(*args) + extra[i] if backward else forward_output_size(*args)
        except _INFERENCE_ERRORS:
            size = 1
        sizes.append(size if isinstance(size, int) and size >= 1 else 1)
    return tuple(sizes)


def _pooling_sizes(x: Sequence[int], window: Any, strides: Any, start: Any, end: Any, dilations: Any) -> tuple[int, ...]:
    """``{N, C, spatial...}`` by the floor formula; an axis no window fits gets 1, so validation reports the rule
    that fails (POOLING.WINDOW_LARGER_THAN_INPUT, POOLING.STRIDE_ZERO, ...) rather than a size the user never gave.
    """
    sizes = list(x[:2])
    for i in range(len(x) - 2):
        try:
            size = pooled_size(x[i + 2], window[i], strides[i], start[i], end[i], 1 if dilations is None else dilations[i])
        except _INFERENCE_ERRORS:
            size = 1
        sizes.append(size if isinstance(size, int) and size >= 1 else 1)
    return tuple(sizes)


def _count(axes: Any) -> int | None:
    """AxisCount: the number of axes given, or None (derived) for a value validation will name."""
    return len(axes) if isinstance(axes, list) else None


def _reduced_sizes(sizes: Sequence[int], axes: Any) -> tuple[int, ...]:
    """The input's sizes with 1 on every reduced axis (an axis out of range or not an int is left for validation)."""
    reduced = {a for a in axes if isinstance(a, (int, np.integer))} if isinstance(axes, list) else set()
    return tuple(1 if i in reduced else size for i, size in enumerate(sizes))


def _as_dml_bias(bias: Tensor, rank: int) -> Tensor:
    """A packed 1-D ``{Cout}`` bias (ONNX's B) read as DirectML's ``{1, Cout, 1, ...}``: same bytes, so the edge joins them."""
    desc = bias.desc
    sizes = tuple(desc.Sizes or ())
    if len(sizes) != 1 or rank < 3 or (desc.Strides is not None and tuple(desc.Strides) != (1,)):
        return bias
    shaped = dataclasses.replace(desc, DimensionCount=rank, Sizes=(1, sizes[0]) + (1,) * (rank - 2), Strides=None)
    return dataclasses.replace(bias, desc=shaped)


def _broadcast_to(value: Tensor, sizes: Sequence[int]) -> Tensor:
    """``value`` read as ``sizes`` (NumPy broadcasting, stride 0 along the broadcast dimensions); unchanged when it does not broadcast."""
    desc = value.desc
    own = tuple(desc.Sizes or ())
    target = tuple(sizes)
    if own == target or len(own) > len(target) or any(s not in (1, t) for s, t in zip(reversed(own), reversed(target))):
        return value
    strides = tuple(desc.Strides) if desc.Strides is not None else tuple(int(np.prod(own[i + 1 :])) for i in range(len(own)))
    pad = len(target) - len(own)
    new = tuple(0 if i < pad or own[i - pad] != target[i] else strides[i - pad] for i in range(len(target)))
    return dataclasses.replace(value, desc=dataclasses.replace(desc, DimensionCount=len(target), Sizes=target, Strides=new))

def _left_padded(tensor: Tensor | None, rank: int) -> Tensor | None:
    """A packed tensor of lower rank read with leading 1s, sizes aligned to the right as ONNX broadcasts (LayerNormalization's ``{W}`` as ``{1, 1, 1, W}``)."""
    if tensor is None:
        return None
    desc = tensor.desc
    sizes = tuple(desc.Sizes or ())
    if len(sizes) >= rank or (desc.Strides is not None and tuple(desc.Strides) != tuple(int(np.prod(sizes[i + 1:])) for i in range(len(sizes)))):
        return tensor
    shaped = dataclasses.replace(desc, DimensionCount=rank, Sizes=(1,) * (rank - len(sizes)) + sizes, Strides=None)
    return dataclasses.replace(tensor, desc=shaped)


def _broadcast_view(value: Tensor, sizes: tuple[int, ...]) -> Tensor:
    """``value``'s bytes read as ``sizes`` (aligned at the last dim): stride 0 along the dims it broadcasts over
    (size 1, or missing in front). Unchanged when it does not broadcast to ``sizes`` (validation then says why)."""
    desc = value.desc
    own = tuple(desc.Sizes or ())
    if own == sizes or len(own) > len(sizes) or not all(isinstance(s, int) for s in own):
        return value
    strides = tuple(desc.Strides) if desc.Strides is not None else None
    if strides is None:
        strides = tuple(int(np.prod(own[i + 1 :], dtype=np.int64)) for i in range(len(own)))
    lead = len(sizes) - len(own)
    new_strides = []
    for i, size in enumerate(sizes):
        j = i - lead
        if j < 0 or (own[j] == 1 and size != 1):
            new_strides.append(0)
        elif own[j] == size:
            new_strides.append(strides[j])
        else:
            return value  # not broadcastable: validation names the mismatch
    shaped = dataclasses.replace(desc, DimensionCount=len(sizes), Sizes=tuple(sizes), Strides=tuple(new_strides))
    return dataclasses.replace(value, desc=shaped)


def broadcast_sizes(*shapes: Sequence[int]) -> tuple[int, ...] | None:
    """ONNX's multidirectional broadcast of ``shapes`` (aligned on the right; a 1 stretches), or None when they do not broadcast."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(rank):
        sizes = {s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0} - {1}
        if len(sizes) > 1:
            return None
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def _strides_of(x: Tensor) -> tuple[int, ...]:
    """x's element strides (packed ones when it has none)."""
    sizes = x.sizes
    if x.desc.Strides is not None:
        return tuple(int(s) for s in x.desc.Strides)
    return tuple(int(np.prod(sizes[i + 1 :], dtype=np.int64)) for i in range(len(sizes)))


def _packed(x: Tensor) -> bool:
    """Whether x reads its bytes row-major with no gaps (size-1 dimensions may have any stride)."""
    if x.desc.Strides is None:
        return True
    expected = 1
    for size, stride in reversed(list(zip(x.sizes, x.desc.Strides, strict=True))):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def _space_depth_fallback(sizes: Sequence[int], block_size: Any, *, to_depth: bool) -> tuple[int, ...]:
    if len(sizes) != 4 or not _is_positive(block_size):
        return tuple(sizes)
    n, c, h, w = sizes
    b = int(block_size)
    if to_depth:
        return n, c * b * b, max(1, h // b), max(1, w // b)
    return n, max(1, c // (b * b)), h * b, w * b


__all__ = ["GraphBuilder", "GraphProgram", "Tensor", "broadcast_sizes"]
