"""Hybrid runs: the nodes dmlpy maps run as DML graphs, the others on onnxruntime.

    import dmlpy.interop.onnx as dml_onnx

    model = dml_onnx.import_model("net.onnx", fallback="onnxruntime")
    outputs = model.run({"x": x})          # {"y": ndarray}, as ImportedModel.run
    print(model.report())                  # which nodes ran where, and why

This is what onnxruntime's DirectML execution provider does with a node it cannot take: the
node goes to the CPU provider and the graph is cut around it. Here the importer decides per
node (``validate``'s findings: an operator dmlpy does not map, one it describes but does not
emulate, an attribute or type it cannot express), the model's nodes, in their topological
order, are cut into consecutive segments of one placement, and each segment becomes an ONNX
model of its own: a DML graph (``import_model``) or an onnxruntime session. A value one
segment writes and a later one reads is passed between them as an array.

Decisions:

* A segment keeps the values the whole-model import folded (Shape, Constant, their
  arithmetic): a DML segment whose Reshape shape came from a Shape node in another segment
  still imports, because the folded value goes in as an initializer.
* A DML segment that still does not import on its own (a value only the whole model could
  fold) runs on onnxruntime; ``report()`` says so.
* onnxruntime is optional: ``fallback="onnxruntime"`` without it raises ``ImportError``
  naming the package. Nothing here runs at dmlpy's import.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dmlpy.device import Device
from dmlpy.errors import DmlError, DmlWarning
from dmlpy.interop.onnx import OnnxImportError, _ModelImporter, _require_onnx, import_model

PLACES = ("dmlpy", "onnxruntime")


@dataclass
class Segment:
    """Consecutive nodes of one placement, run as one ONNX model."""

    place: str  # "dmlpy" or "onnxruntime"
    nodes: list[int]  # indices into the model's graph.node
    inputs: list[str]  # values read from the graph inputs or earlier segments
    outputs: list[str]  # values later segments or the graph outputs read
    reason: str = ""  # why an onnxruntime segment is there
    runner: Any = field(default=None, repr=False)  # ImportedModel or onnxruntime.InferenceSession


class HybridModel:
    """An ONNX model run in segments: DML graphs for what dmlpy maps, onnxruntime for the rest."""

    def __init__(self, model: Any, segments: list[Segment], placement: list[tuple[int, str, str, str]], input_names: list[str], output_names: list[str]) -> None:
        self.model = model
        self.segments = segments
        self.placement = placement  # (node index, node name, op type, "dmlpy" | "onnxruntime") per node
        self.input_names = input_names
        self.output_names = output_names

    def run(self, inputs: dict[str, Any]) -> dict[str, np.ndarray]:
        """Run every segment in order on ONNX-shaped arrays by input name; returns the graph outputs by name."""
        missing = [n for n in self.input_names if n not in inputs]
        if missing:
            msg = f"the model takes {', '.join(self.input_names)}; missing: {', '.join(missing)}"
            raise TypeError(msg)
        values: dict[str, Any] = {n: np.asarray(inputs[n]) for n in self.input_names}
        for segment in self.segments:
            feeds = {n: values[n] for n in segment.inputs}
            if segment.place == "dmlpy":
                values.update(segment.runner.run(feeds))
            else:
                values.update(zip(segment.outputs, segment.runner.run(segment.outputs, feeds), strict=True))
        return {n: np.asarray(values[n]) for n in self.output_names}

    def __call__(self, **inputs: Any) -> dict[str, np.ndarray]:
        return self.run(inputs)

    def report(self) -> str:
        """One line per segment: where it runs, its nodes' op types, and why an onnxruntime one is there."""
        graph = self.model.graph
        lines = []
        for k, segment in enumerate(self.segments):
            ops = ", ".join(f"{graph.node[i].op_type}" for i in segment.nodes[:12]) + (f" and {len(segment.nodes) - 12} more" if len(segment.nodes) > 12 else "")
            why = f" - {segment.reason}" if segment.reason else ""
            lines.append(f"segment {k}: {segment.place}, {len(segment.nodes)} node{'s' * (len(segment.nodes) != 1)} ({ops}){why}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        on = sum(1 for p in self.placement if p[3] == "onnxruntime")
        return f"<dmlpy HybridModel: {len(self.placement) - on} nodes on dmlpy, {on} on onnxruntime, {len(self.segments)} segments>"


def _onnxruntime() -> Any:
    try:
        import onnxruntime  # noqa: PLC0415 - optional
    except ImportError as error:
        msg = f"fallback='onnxruntime' needs the onnxruntime package (pip install onnxruntime): {error}"
        raise ImportError(msg) from error
    return onnxruntime


def _segments(nodes: list[Any], failed: set[int]) -> list[tuple[str, list[int]]]:
    """Consecutive runs of one placement, in the graph's (topological) node order."""
    runs: list[tuple[str, list[int]]] = []
    for i in range(len(nodes)):
        place = "onnxruntime" if i in failed else "dmlpy"
        if runs and runs[-1][0] == place:
            runs[-1][1].append(i)
        else:
            runs.append((place, [i]))
    return runs


def import_hybrid(proto: Any, fallback: str, *, device: Device, weights: str, input_shapes: Any, fuse_activations: bool, ceil_mode_divisor: str) -> HybridModel:
    """``import_model(..., fallback="onnxruntime")``: see the module docstring."""
    if fallback not in ("onnxruntime",):
        msg = f"fallback must be 'onnxruntime' (or None for a model dmlpy takes whole), not {fallback!r}"
        raise ValueError(msg)
    onnx = _require_onnx()
    ort = _onnxruntime()
    graph = proto.graph
    nodes = list(graph.node)
    importer = _ModelImporter(proto, device=device, weights=weights, input_shapes=input_shapes, fuse_activations=fuse_activations,
                              ceil_mode_divisor=ceil_mode_divisor, collect=True)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DmlWarning)
        try:
            whole = importer.run()
        except (OnnxImportError, DmlError):  # the model as a whole (feature level, graph structure): every node on onnxruntime
            whole, importer.failed_nodes = None, dict.fromkeys(range(len(nodes)), "the model as a whole")
    reasons = importer.failed_nodes
    initializers = {t.name: t for t in graph.initializer}
    input_names = [vi.name for vi in graph.input if vi.name not in initializers]
    output_names = [o.name for o in graph.output]
    placement = [(i, n.name, n.op_type, "onnxruntime" if i in importer.failed_nodes else "dmlpy") for i, n in enumerate(nodes)]
    if whole is not None and not importer.errors and not importer.missing:
        return HybridModel(proto, [Segment("dmlpy", list(range(len(nodes))), input_names, output_names, runner=whole)], placement, input_names, output_names)

    runs = _segments(nodes, importer.failed_nodes)
    produced_by = {name: k for k, (_, members) in enumerate(runs) for i in members for name in nodes[i].output if name}
    read_by: dict[str, set[int]] = {}
    for k, (_, members) in enumerate(runs):
        for i in members:
            for name in nodes[i].input:
                if name:
                    read_by.setdefault(name, set()).add(k)
    options = ort.SessionOptions()
    options.intra_op_num_threads = device.threads if hasattr(device, "threads") and device.threads else 0
    segments = []
    for k, (place, members) in enumerate(runs):
        consumed = list(dict.fromkeys(name for i in members for name in nodes[i].input if name and produced_by.get(name) != k))
        outputs = list(dict.fromkeys(name for i in members for name in nodes[i].output
                                     if name and (name in output_names or any(r > k for r in read_by.get(name, ())))))  # fmt: skip
        segment = Segment(place, members, [n for n in consumed if n not in initializers], outputs)
        failed_rules = sorted({reasons[i] for i in members if i in reasons})
        segment.reason = ", ".join(failed_rules) if place == "onnxruntime" else ""
        sub = _sub_model(onnx, proto, importer, segment, [initializers[n] for n in consumed if n in initializers], place == "dmlpy")
        if place == "dmlpy":
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DmlWarning)
                    segment.runner = import_model(sub, device=device, weights=weights, fuse_activations=fuse_activations, ceil_mode_divisor=ceil_mode_divisor)
                segment.inputs = [n for n in segment.inputs if n in segment.runner.input_names]  # folded ones went in as initializers
            except (OnnxImportError, DmlError) as error:
                segment.place, segment.reason = "onnxruntime", f"does not import on its own: {error.findings[0].rule if error.findings else error}"
                sub = _sub_model(onnx, proto, importer, segment, [initializers[n] for n in consumed if n in initializers], False)
                placement = [(i, nm, op, "onnxruntime" if i in members else p) for i, nm, op, p in placement]
        if segment.place == "onnxruntime":
            segment.runner = ort.InferenceSession(sub.SerializeToString(), options, providers=["CPUExecutionProvider"])
        segments.append(segment)
    return HybridModel(proto, segments, placement, input_names, output_names)


def _value_info(onnx: Any, importer: _ModelImporter, name: str) -> Any:
    """The value's type and shape as the whole-model import knew them (shape inference), else an unknown shape."""
    value = importer.values.get(name)
    shape, dtype = (value.shape, value.dtype) if value is not None else importer.inferred.get(name, (None, None))
    elem = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype)) if dtype is not None else onnx.TensorProto.FLOAT
    return onnx.helper.make_tensor_value_info(name, elem, list(shape) if shape is not None else None)


def _sub_model(onnx: Any, proto: Any, importer: _ModelImporter, segment: Segment, initializers: list[Any], fold: bool) -> Any:
    """The segment as an ONNX model; for a DML segment, inputs the whole-model import folded become initializers."""
    inits = list(initializers)
    inputs = []
    for name in segment.inputs:
        value = importer.values.get(name)
        if fold and value is not None and value.kind == "constant" and value.array is not None:
            inits.append(onnx.numpy_helper.from_array(np.asarray(value.array), name))
        else:
            inputs.append(_value_info(onnx, importer, name))
    outputs = [_value_info(onnx, importer, name) for name in segment.outputs]
    graph = onnx.helper.make_graph([proto.graph.node[i] for i in segment.nodes], f"{proto.graph.name or 'model'}_segment", inputs, outputs, inits)
    model = onnx.helper.make_model(graph, opset_imports=list(proto.opset_import), ir_version=proto.ir_version)
    for entry in proto.metadata_props:
        model.metadata_props.append(entry)
    return model


__all__ = ["PLACES", "HybridModel", "Segment", "import_hybrid"]
