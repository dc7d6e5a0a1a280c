"""A graph builder in the spirit of DirectMLX: write the model as calls, get a DML_GRAPH_DESC.

    g = dmlpy.GraphBuilder(feature_level=DML_FEATURE_LEVEL_6_4)
    x = g.input("x", "float32", (1, 64, 32, 32))
    y = g.average_pooling(x, window=(2, 2), strides=(2, 2))
    program = g.compile({"y": y})
    outputs = program(x=array)            # {"y": ndarray}

Every call builds the operator desc DirectML would see, infers its output sizes (including
the ones DirectMLX cannot, such as BACKWARD convolution), and validates it at once: a mistake
is reported at the builder call that made it, naming the argument, with the rule id and the
C field path. ``compile`` writes the DML_GRAPH_DESC, compiles it on the device, runs the
initializer (OWNED_BY_DML inputs, constants) and returns a callable program.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dmlpy.binding import DML_BINDING_DESC, DML_BINDING_TABLE_DESC, Buffer, array_binding, buffer_binding
from dmlpy.device import Device, create_device, validate
from dmlpy.enums import DML_EXECUTION_FLAGS, DML_FEATURE_LEVEL, DML_TENSOR_FLAGS, HRESULT
from dmlpy.errors import DmlError, Severity
from dmlpy.graph import DML_GRAPH_DESC, CompiledGraph, constant_node, graph_desc, input_edge, intermediate_edge, operator_node, output_edge
from dmlpy.operators.pooling import DML_AVERAGE_POOLING1_OPERATOR_DESC, DML_AVERAGE_POOLING_OPERATOR_DESC, average_pooling_output_sizes
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
        sizes = tuple(int(s) for s in sizes)
        desc = DML_BUFFER_TENSOR_DESC(
            data_type, DML_TENSOR_FLAGS.OWNED_BY_DML if owned else DML_TENSOR_FLAGS.NONE, len(sizes), sizes,
            None if strides is None else tuple(strides), calc_buffer_tensor_size(data_type, sizes, strides), 0,
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
        (``arguments`` maps C field names to the argument names of ``call``).
        """
        for field_name, tensor in inputs.items():
            if tensor is not None and tensor.builder is not self:
                msg = f"GraphBuilder.{call}: {field_name} comes from another GraphBuilder"
                raise ValueError(msg)
            setattr(desc, field_name, None if tensor is None else DML_TENSOR_DESC(Desc=tensor.desc))
        report = validate(desc, feature_level=self.feature_level)
        errors = [f for f in report.findings if f.severity is Severity.ERROR or self.device.strict]
        if errors:
            where = _call_site()
            described = []
            for finding in errors:
                field = finding.path.split(".")[1].split("[")[0] if "." in finding.path else ""
                argument = (arguments or {}).get(field)
                described.append(f"argument '{argument}'" if argument else f"field {field or finding.path}")
            summary = f"GraphBuilder.{call} at {where}: {'; '.join(dict.fromkeys(described))} rejected"
            raise DmlError(HRESULT.E_INVALIDARG, errors, summary)
        spec_outputs = [f.name for f in dataclasses.fields(desc) if f.name.startswith("Output") and isinstance(getattr(desc, f.name), DML_TENSOR_DESC)]
        self._nodes.append(_Node(desc, dict(inputs), name or f"{call}{len(self._nodes)}"))
        index = len(self._nodes) - 1
        return [Tensor(self, getattr(desc, field).Desc, ("node", index, k), f"{call}.{field}") for k, field in enumerate(spec_outputs)]

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
        """Average pooling; DirectML's defaults: strides 1, no padding, no dilation.

        Dilations make it AVERAGE_POOLING1 (feature level 6.2). ``output_sizes`` accepts an
        explicit output (the ceil shape of ONNX's ceil_mode); otherwise the floor size is used.
        """
        spatial = len(x.sizes) - 2
        strides = tuple(strides or (1,) * spatial)
        start_padding = tuple(start_padding or (0,) * spatial)
        end_padding = tuple(end_padding or (0,) * spatial)
        if output_sizes is None:
            try:
                output_sizes = average_pooling_output_sizes(x.sizes, window, strides, start_padding, end_padding, dilations)
            except (ValueError, IndexError, ZeroDivisionError):
                output_sizes = x.sizes  # let validation name the offending argument
        common = dict(OutputTensor=self._output(x, output_sizes), DimensionCount=len(window), Strides=strides, WindowSize=tuple(window),
                      StartPadding=start_padding, EndPadding=end_padding, IncludePadding=include_padding)  # fmt: skip
        if dilations is not None and any(d != 1 for d in dilations):
            desc: Any = DML_AVERAGE_POOLING1_OPERATOR_DESC(Dilations=tuple(dilations), **common)
        else:
            desc = DML_AVERAGE_POOLING_OPERATOR_DESC(**common)
        arguments = {"WindowSize": "window", "Strides": "strides", "StartPadding": "start_padding", "EndPadding": "end_padding",
                     "Dilations": "dilations", "OutputTensor": "output_sizes", "InputTensor": "x", "DimensionCount": "window"}  # fmt: skip
        return self.add_operator(desc, {"InputTensor": x}, call="average_pooling", arguments=arguments)[0]

    # --- compile ----------------------------------------------------------------------

    def compile(self, outputs: Mapping[str, Tensor] | Sequence[Tensor], flags: DML_EXECUTION_FLAGS | int = DML_EXECUTION_FLAGS.NONE) -> GraphProgram:
        """Write the DML_GRAPH_DESC, compile it and initialize it; returns a callable program."""
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
            slots = [s.name for s in operators[index].spec.support.inputs]  # type: ignore[union-attr]
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
            kind, source, out = tensor.source
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

    def __call__(self, **arrays: Any) -> dict[str, np.ndarray]:
        unknown = set(arrays) - set(self.input_names)
        missing = [n for n in self.input_names if n not in arrays]
        if unknown or missing:
            msg = f"the graph takes {', '.join(self.input_names) or 'no inputs'}" + (f"; unknown: {', '.join(sorted(unknown))}" if unknown else "") + (f"; missing: {', '.join(missing)}" if missing else "")
            raise TypeError(msg)
        device, compiled = self.device, self.compiled
        props = compiled.get_binding_properties()
        buffers: list[Buffer] = []
        for (name, desc), slot in zip(self._inputs, compiled.input_slots(), strict=True):
            buffer = device.create_buffer(desc.TotalTensorSizeInBytes, name)
            _write(buffer, desc, arrays[name], name)
            buffers.append(buffer)
        recorder = device.create_command_recorder()
        command_list = device.create_command_list()
        persistent = device.create_buffer(props.PersistentResourceSize, "persistent") if props.PersistentResourceSize else None
        temporary = device.create_buffer(props.TemporaryResourceSize, "temporary") if props.TemporaryResourceSize else None
        # owned inputs go to the initializer (every call re-initializes: weights may change between calls)
        initializer = device.create_operator_initializer([compiled])
        init_table = device.create_binding_table(initializer)
        slots = compiled.input_slots()
        init_table.bind_inputs([array_binding([buffer_binding(b).Desc if s.owned else None for s, b in zip(slots, buffers, strict=True)])])
        init_table.bind_outputs([buffer_binding(persistent)])
        recorder.record_dispatch(command_list, initializer, init_table)
        out_buffers = [device.create_buffer(s.tensor.TotalTensorSizeInBytes if s.tensor else 4, name) for s, name in zip(compiled.output_slots(), self.output_names, strict=True)]
        table = device.create_binding_table(DML_BINDING_TABLE_DESC(compiled, 0, 0, props.RequiredDescriptorCount))
        table.bind_inputs([DML_BINDING_DESC() if s.owned or s.ignored else buffer_binding(b) for s, b in zip(slots, buffers, strict=True)])
        table.bind_outputs([buffer_binding(b) for b in out_buffers])
        table.bind_temporary_resource(buffer_binding(temporary) if temporary is not None else None)
        table.bind_persistent_resource(buffer_binding(persistent) if persistent is not None else None)
        recorder.record_dispatch(command_list, compiled, table)
        command_list.close()
        device.execute(command_list)
        return {name: b.read(s.tensor) for name, b, s in zip(self.output_names, out_buffers, compiled.output_slots(), strict=True) if s.tensor is not None}


def _write(buffer: Buffer, desc: DML_BUFFER_TENSOR_DESC, value: Any, name: str) -> None:
    from dmlpy.device import _write_tensor  # noqa: PLC0415 - one implementation of the cast and shape rules

    _write_tensor(buffer, desc, value, name)


__all__ = ["GraphBuilder", "GraphProgram", "Tensor"]
