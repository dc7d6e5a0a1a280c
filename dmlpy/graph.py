"""DirectML graphs: DML_GRAPH_DESC and its nodes and edges, validation, planning and execution.

``IDMLDevice1::CompileGraph`` takes operators (already created, so already validated) wired
by edges. This module checks every graph rule of the DML_GRAPH_DESC page, orders the nodes, places
every intermediate tensor in the temporary resource (reusing the memory of tensors that are
dead) and every OWNED_BY_DML graph input in the persistent resource, and gives back a
dispatchable that binds like one operator: inputs by GraphInputIndex, outputs by
GraphOutputIndex. ``Device.compile_graph`` calls it; this module never imports the device.
"""

from __future__ import annotations

import copy
import dataclasses
import heapq
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dmlpy.backends import BoundTensor, Runner
from dmlpy.binding import DML_BINDING_PROPERTIES, BindingTable, BoundRange, Buffer, Slot, current_memory, same_memory
from dmlpy.enums import (
    DML_EXECUTION_FLAGS,
    DML_FEATURE_LEVEL,
    DML_GRAPH_EDGE_TYPE,
    DML_GRAPH_NODE_TYPE,
    DML_PERSISTENT_BUFFER_ALIGNMENT,
    DML_TEMPORARY_BUFFER_ALIGNMENT,
    HRESULT,
)
from dmlpy.errors import DmlError
from dmlpy.execution import NOT_INITIALIZED
from dmlpy.rules import Checker, fmt, rule
from dmlpy.tensor import DML_BUFFER_TENSOR_DESC

# ---------------------------------------------------------------------------------------
# The structs (the DML_GRAPH_DESC page)


@dataclass
class DML_INPUT_GRAPH_EDGE_DESC:  # noqa: N801 - the C name
    GraphInputIndex: int = 0
    ToNodeIndex: int = 0
    ToNodeInputIndex: int = 0
    Name: str | None = None


@dataclass
class DML_OUTPUT_GRAPH_EDGE_DESC:  # noqa: N801 - the C name
    FromNodeIndex: int = 0
    FromNodeOutputIndex: int = 0
    GraphOutputIndex: int = 0
    Name: str | None = None


@dataclass
class DML_INTERMEDIATE_GRAPH_EDGE_DESC:  # noqa: N801 - the C name
    FromNodeIndex: int = 0
    FromNodeOutputIndex: int = 0
    ToNodeIndex: int = 0
    ToNodeInputIndex: int = 0
    Name: str | None = None


@dataclass
class DML_GRAPH_EDGE_DESC:  # noqa: N801 - the C name
    Type: DML_GRAPH_EDGE_TYPE | int = DML_GRAPH_EDGE_TYPE.INVALID
    Desc: Any = None


@dataclass
class DML_OPERATOR_GRAPH_NODE_DESC:  # noqa: N801 - the C name
    Operator: Any = None  # an IDMLOperator: what Device.create_operator returned
    Name: str | None = None


@dataclass
class DML_CONSTANT_DATA_GRAPH_NODE_DESC:  # noqa: N801 - the C name (FL 6.2)
    Data: Any = None  # bytes, bytearray or a NumPy array (its bytes in C order)
    DataSize: int = 0
    Name: str | None = None


@dataclass
class DML_GRAPH_NODE_DESC:  # noqa: N801 - the C name
    Type: DML_GRAPH_NODE_TYPE | int = DML_GRAPH_NODE_TYPE.INVALID
    Desc: Any = None


@dataclass
class DML_GRAPH_DESC:  # noqa: N801 - the C name
    InputCount: int = 0
    OutputCount: int = 0
    NodeCount: int = 0
    Nodes: Sequence[DML_GRAPH_NODE_DESC] = ()
    InputEdgeCount: int = 0
    InputEdges: Sequence[DML_GRAPH_EDGE_DESC] | None = None
    OutputEdgeCount: int = 0
    OutputEdges: Sequence[DML_GRAPH_EDGE_DESC] = ()
    IntermediateEdgeCount: int = 0
    IntermediateEdges: Sequence[DML_GRAPH_EDGE_DESC] | None = None

    def __repr__(self) -> str:
        from dmlpy.display import graph_repr  # noqa: PLC0415 - display sits above graph

        return graph_repr(self)

    def _repr_html_(self) -> str:
        from dmlpy.display import graph_html  # noqa: PLC0415

        return graph_html(self)


def input_edge(graph_input: int, to_node: int, to_input: int = 0, name: str | None = None) -> DML_GRAPH_EDGE_DESC:
    return DML_GRAPH_EDGE_DESC(DML_GRAPH_EDGE_TYPE.INPUT, DML_INPUT_GRAPH_EDGE_DESC(graph_input, to_node, to_input, name))


def output_edge(from_node: int, from_output: int, graph_output: int, name: str | None = None) -> DML_GRAPH_EDGE_DESC:
    return DML_GRAPH_EDGE_DESC(DML_GRAPH_EDGE_TYPE.OUTPUT, DML_OUTPUT_GRAPH_EDGE_DESC(from_node, from_output, graph_output, name))


def intermediate_edge(from_node: int, from_output: int, to_node: int, to_input: int = 0, name: str | None = None) -> DML_GRAPH_EDGE_DESC:
    return DML_GRAPH_EDGE_DESC(DML_GRAPH_EDGE_TYPE.INTERMEDIATE, DML_INTERMEDIATE_GRAPH_EDGE_DESC(from_node, from_output, to_node, to_input, name))


def operator_node(operator: Any, name: str | None = None) -> DML_GRAPH_NODE_DESC:
    return DML_GRAPH_NODE_DESC(DML_GRAPH_NODE_TYPE.OPERATOR, DML_OPERATOR_GRAPH_NODE_DESC(operator, name))


def constant_node(data: Any, name: str | None = None) -> DML_GRAPH_NODE_DESC:
    msg = f"constant_node: data is a {type(data).__name__}{f' of {data.dtype}' if isinstance(data, np.ndarray) else ''}, expected bytes or a NumPy array of numbers"
    if isinstance(data, np.ndarray):
        if data.dtype.hasobject:  # its bytes would be pointers
            raise TypeError(msg)
        raw = bytes(np.ascontiguousarray(data).reshape(-1).view(np.uint8))
    else:
        try:
            raw = bytes(data)
        except (TypeError, ValueError):
            raise TypeError(msg) from None
    return DML_GRAPH_NODE_DESC(DML_GRAPH_NODE_TYPE.CONSTANT, DML_CONSTANT_DATA_GRAPH_NODE_DESC(raw, len(raw), name))


def graph_desc(
    input_count: int,
    output_count: int,
    nodes: Sequence[DML_GRAPH_NODE_DESC],
    input_edges: Sequence[DML_GRAPH_EDGE_DESC],
    output_edges: Sequence[DML_GRAPH_EDGE_DESC],
    intermediate_edges: Sequence[DML_GRAPH_EDGE_DESC] = (),
) -> DML_GRAPH_DESC:
    """A DML_GRAPH_DESC with every count filled from its array."""
    for argument, value in (("nodes", nodes), ("input_edges", input_edges), ("output_edges", output_edges), ("intermediate_edges", intermediate_edges)):
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            msg = f"graph_desc: {argument} is a {type(value).__name__}, expected a list (empty for none)"
            raise TypeError(msg)
    return DML_GRAPH_DESC(
        input_count, output_count, len(nodes), list(nodes), len(input_edges), list(input_edges),
        len(output_edges), list(output_edges), len(intermediate_edges), list(intermediate_edges),
    )  # fmt: skip


# ---------------------------------------------------------------------------------------
# Rules (the DML_GRAPH_DESC page)

FEATURE_LEVEL = rule("GRAPH.FEATURE_LEVEL", "IDMLDevice1::CompileGraph exists from DML_FEATURE_LEVEL_2_1.", source="the DML_GRAPH_DESC page: the header gates the graph API at 0x2100")
COUNTS = rule("GRAPH.COUNTS", "NodeCount and every edge count equal the length of their arrays.", source="ns-directml-dml_graph_desc")
NODE_TYPE = rule("GRAPH.NODE_TYPE", "Each node is OPERATOR with a DML_OPERATOR_GRAPH_NODE_DESC, or CONSTANT (from FL 6.2) with a DML_CONSTANT_DATA_GRAPH_NODE_DESC.", source="ne-directml-dml_graph_node_type")
NODE_OPERATOR = rule("GRAPH.NODE_OPERATOR", "An operator node holds an IDMLOperator created by the compiling device.", source="ns-directml-dml_operator_graph_node_desc")
CONSTANT_DATA = rule("GRAPH.CONSTANT_DATA", "A constant node's Data holds DataSize bytes.", source="ns-directml-dml_constant_data_graph_node_desc")
EDGE_TYPE = rule("GRAPH.EDGE_TYPE", "Each edge's Type matches the array it sits in (INPUT in InputEdges, ...) and Desc is that type's struct.", source="ns-directml-dml_graph_desc")
EDGE_NODE = rule("GRAPH.EDGE_NODE_INDEX", "Edge node indices are below NodeCount.", source="ns-directml-dml_graph_desc")
EDGE_SLOT = rule("GRAPH.EDGE_SLOT_INDEX", "Edge input/output indices name a slot the node has.", source="ns-directml-dml_graph_desc")
GRAPH_INPUT_INDEX = rule("GRAPH.INPUT_INDEX", "GraphInputIndex is below InputCount.", source="ns-directml-dml_input_graph_edge_desc")
GRAPH_OUTPUT_INDEX = rule("GRAPH.OUTPUT_INDEX", "GraphOutputIndex is below OutputCount.", source="ns-directml-dml_output_graph_edge_desc")
INPUT_ONCE = rule("GRAPH.NODE_INPUT_CONNECTED_TWICE", "No node input is connected by more than one edge.", source="ns-directml-dml_graph_desc")
INPUT_UNCONNECTED = rule("GRAPH.NODE_INPUT_UNCONNECTED", "Every required node input is connected (optional ones may be left out).", source="ns-directml-dml_graph_desc")
OUTPUT_UNCONNECTED = rule("GRAPH.NODE_OUTPUT_UNCONNECTED", "Every required node output is connected to a graph output or an intermediate edge.", source="ns-directml-dml_graph_desc")
ABSENT_TENSOR = rule("GRAPH.ABSENT_TENSOR_CONNECTED", "No edge connects a node slot whose tensor desc is NULL.", source="ns-directml-dml_graph_desc")
GRAPH_OUTPUT_ONCE = rule("GRAPH.OUTPUT_WRITTEN_TWICE", "Each graph output is written by exactly one edge.", source="ns-directml-dml_graph_desc")
GRAPH_OUTPUT_UNWRITTEN = rule("GRAPH.OUTPUT_UNWRITTEN", "Every graph output index below OutputCount is written by an edge.", source="ns-directml-dml_graph_desc")
CYCLE = rule("GRAPH.CYCLE", "The graph is a DAG.", source="ns-directml-dml_graph_desc")
EDGE_SIZE = rule("GRAPH.EDGE_SIZE_MISMATCH", "Tensors joined by an edge have identical TotalTensorSizeInBytes (shape and type may differ: the bytes are reinterpreted).", source="ns-directml-dml_graph_desc")
INPUT_SIZE = rule("GRAPH.INPUT_SIZE_MISMATCH", "Node inputs fed by the same graph input have identical TotalTensorSizeInBytes.", source="ns-directml-dml_graph_desc")
OWNED_SOURCE = rule("GRAPH.OWNED_INPUT_SOURCE", "An OWNED_BY_DML node input is connected to a graph input.", source="ns-directml-dml_graph_desc")
OWNED_CONSISTENT = rule("GRAPH.OWNED_INPUT_INCONSISTENT", "All node inputs connected to one graph input agree on DML_TENSOR_FLAG_OWNED_BY_DML.", source="ns-directml-dml_graph_desc")


# ---------------------------------------------------------------------------------------
# Planning

# Unused graph inputs are legal (the DML_GRAPH_DESC page) but each still takes a binding slot; InputCount is
# a UINT. Beyond this many, CompileGraph fails with E_OUTOFMEMORY instead of allocating billions
# of slots (an emulator capacity, not a documented DirectML limit).
MAX_GRAPH_INPUTS = 1 << 16


@dataclass
class NodeInfo:
    index: int
    label: str
    operator: Any | None  # the device's Operator, for OPERATOR nodes
    constant: np.ndarray | None  # the bytes of a CONSTANT node
    inputs: list[Slot]
    outputs: list[Slot]


@dataclass
class Source:
    """Where a node input reads, or a node output writes."""

    kind: str  # "input", "owned", "output", "temp", "constant"
    index: int = 0  # graph input/output index or constant node index
    offset: int = 0  # temp/persistent offset
    size: int = 0


@dataclass
class GraphPlan:
    order: list[int]
    nodes: list[NodeInfo]
    input_slots: list[Slot]
    output_slots: list[Slot]
    reads: dict[tuple[int, int], Source]  # (node, input slot) -> source
    writes: dict[tuple[int, int], Source]  # (node, output slot) -> destination
    copies: dict[tuple[int, int], list[int]] = field(default_factory=dict)  # extra graph outputs per node output
    temporary_size: int = 0
    persistent_offsets: dict[str, int] = field(default_factory=dict)
    persistent_size: int = 0


def _label(kind: str, index: int, name: str | None) -> str:
    return f"{kind}[{index}]" + (f" ('{name}')" if name else "")


def _uint(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and 0 <= int(value) < 2**32 else None


def plan_graph(ctx: Checker, desc: DML_GRAPH_DESC, device: Any = None) -> GraphPlan | None:  # noqa: C901, PLR0912, PLR0915 - one short step per rule
    """Check every graph rule; returns the plan, or None when an error was found."""
    root = "DML_GRAPH_DESC"
    if not ctx.check(ctx.feature_level >= DML_FEATURE_LEVEL.LEVEL_2_1, FEATURE_LEVEL, root, actual=ctx.feature_level, expected=DML_FEATURE_LEVEL.LEVEL_2_1,
                     message=f"CompileGraph needs DML_FEATURE_LEVEL_2_1; the device targets {ctx.feature_level.dotted}"):  # fmt: skip
        return None
    if not isinstance(desc, DML_GRAPH_DESC):
        msg = f"CompileGraph takes a DML_GRAPH_DESC, not {type(desc).__name__}"
        raise TypeError(msg)
    arrays = {
        "Nodes": ("NodeCount", desc.Nodes),
        "InputEdges": ("InputEdgeCount", desc.InputEdges),
        "OutputEdges": ("OutputEdgeCount", desc.OutputEdges),
        "IntermediateEdges": ("IntermediateEdgeCount", desc.IntermediateEdges),
    }
    for name, (count_field, array) in arrays.items():
        count = getattr(desc, count_field)
        length = len(array) if isinstance(array, (list, tuple)) else (0 if array is None else None)
        if length is None:
            msg = f"DML_GRAPH_DESC.{name} must be a list, not {type(array).__name__}"
            raise TypeError(msg)
        ctx.check(_uint(count) == length, COUNTS, f"{root}.{count_field}", actual=count, expected=length, why=f"len({name})")
    input_count, output_count = _uint(desc.InputCount), _uint(desc.OutputCount)
    if input_count is None or output_count is None:
        msg = "DML_GRAPH_DESC.InputCount and OutputCount are UINTs"
        raise TypeError(msg)
    if input_count > MAX_GRAPH_INPUTS:
        msg = (f"DML_GRAPH_DESC.InputCount is {input_count}: every graph input takes a binding slot, even an unused one, and dmlpy "
               f"allocates at most {MAX_GRAPH_INPUTS}; more is reported as an allocation failure")  # fmt: skip
        raise DmlError(HRESULT.E_OUTOFMEMORY, [], msg)
    if ctx.has_errors:
        return None

    nodes = _check_nodes(ctx, desc, device)
    if nodes is None:
        return None

    reads: dict[tuple[int, int], tuple[str, Any, str]] = {}  # (node, in) -> ("input", graph index, path) | ("node", (node, out), path)
    writes: dict[tuple[int, int], list[tuple[str, int, str]]] = {}  # (node, out) -> [("output", g, path) | ("node", consumer, path)]
    graph_outputs: dict[int, list[str]] = {}

    def check_node_slot(path: str, node_index: Any, slot_index: Any, direction: str) -> tuple[int, int] | None:
        n, k = _uint(node_index), _uint(slot_index)
        node_field = "ToNodeIndex" if direction == "input" else "FromNodeIndex"
        slot_field = "ToNodeInputIndex" if direction == "input" else "FromNodeOutputIndex"
        if not ctx.check(n is not None and n < len(nodes), EDGE_NODE, f"{path}.{node_field}", actual=node_index, expected=f"< NodeCount = {len(nodes)}"):
            return None
        assert n is not None
        slots = nodes[n].inputs if direction == "input" else nodes[n].outputs
        if not ctx.check(k is not None and k < len(slots), EDGE_SLOT, f"{path}.{slot_field}", actual=slot_index, expected=f"< {len(slots)}",
                         message=f"is {slot_index}, but {nodes[n].label} has {len(slots)} {direction}s ({', '.join(s.name for s in slots) or 'none'})"):  # fmt: skip
            return None
        assert k is not None
        if not ctx.check(slots[k].tensor is not None, ABSENT_TENSOR, path, actual=f"{nodes[n].label}.{slots[k].name}", expected="a slot with a tensor desc",
                         message=f"connects {nodes[n].label} {direction} {k} ({slots[k].name}), whose tensor desc is NULL"):  # fmt: skip
            return None
        return n, k

    def connect_input(key: tuple[int, int], source: tuple[str, Any, str]) -> None:
        if key in reads:
            ctx.fail(INPUT_ONCE, source[2], actual="a second edge", expected="one edge per node input",
                     message=f"connects {nodes[key[0]].label} input {key[1]} ({nodes[key[0]].inputs[key[1]].name}), which {reads[key][2]} already connects")  # fmt: skip
            return
        reads[key] = source

    for j, edge in enumerate(desc.InputEdges or ()):
        path = _label(f"{root}.InputEdges", j, getattr(getattr(edge, "Desc", None), "Name", None))
        if not _edge_ok(ctx, edge, DML_GRAPH_EDGE_TYPE.INPUT, DML_INPUT_GRAPH_EDGE_DESC, path):
            continue
        e = edge.Desc
        g = _uint(e.GraphInputIndex)
        if not ctx.check(g is not None and g < input_count, GRAPH_INPUT_INDEX, f"{path}.GraphInputIndex", actual=e.GraphInputIndex, expected=f"< InputCount = {input_count}"):
            continue
        key = check_node_slot(path, e.ToNodeIndex, e.ToNodeInputIndex, "input")
        if key is not None:
            connect_input(key, ("input", g, path))
    for j, edge in enumerate(desc.IntermediateEdges or ()):
        path = _label(f"{root}.IntermediateEdges", j, getattr(getattr(edge, "Desc", None), "Name", None))
        if not _edge_ok(ctx, edge, DML_GRAPH_EDGE_TYPE.INTERMEDIATE, DML_INTERMEDIATE_GRAPH_EDGE_DESC, path):
            continue
        e = edge.Desc
        src = check_node_slot(path, e.FromNodeIndex, e.FromNodeOutputIndex, "output")
        dst = check_node_slot(path, e.ToNodeIndex, e.ToNodeInputIndex, "input")
        if src is None or dst is None:
            continue
        connect_input(dst, ("node", src, path))
        writes.setdefault(src, []).append(("node", dst[0], path))
    for j, edge in enumerate(desc.OutputEdges or ()):
        path = _label(f"{root}.OutputEdges", j, getattr(getattr(edge, "Desc", None), "Name", None))
        if not _edge_ok(ctx, edge, DML_GRAPH_EDGE_TYPE.OUTPUT, DML_OUTPUT_GRAPH_EDGE_DESC, path):
            continue
        e = edge.Desc
        g = _uint(e.GraphOutputIndex)
        if not ctx.check(g is not None and g < output_count, GRAPH_OUTPUT_INDEX, f"{path}.GraphOutputIndex", actual=e.GraphOutputIndex, expected=f"< OutputCount = {output_count}"):
            continue
        src = check_node_slot(path, e.FromNodeIndex, e.FromNodeOutputIndex, "output")
        if src is None:
            continue
        assert g is not None
        if g in graph_outputs:
            ctx.fail(GRAPH_OUTPUT_ONCE, f"{path}.GraphOutputIndex", actual=g, expected="an output no other edge writes",
                     message=f"writes graph output {g}, which {graph_outputs[g][0]} already writes")  # fmt: skip
            continue
        graph_outputs[g] = [path]
        writes.setdefault(src, []).append(("output", g, path))
    unwritten = output_count - len(graph_outputs)  # every written index is below OutputCount
    if unwritten:  # one finding, however large OutputCount is (it is a UINT: up to 2**32 - 1)
        missing = list(itertools.islice((g for g in range(output_count) if g not in graph_outputs), 8))
        shown = ", ".join(map(str, missing)) + (f" ... ({unwritten} in all)" if unwritten > len(missing) else "")
        ctx.fail(GRAPH_OUTPUT_UNWRITTEN, f"{root}.OutputCount", actual=f"{unwritten} graph output{'s' * (unwritten != 1)} unwritten", expected="an output edge for every graph output",
                 message=f"declares {output_count} outputs, but no output edge writes graph output{'s' * (unwritten != 1)} {shown}")  # fmt: skip

    # every required slot connected
    for node in nodes:
        for k, slot in enumerate(node.inputs):
            if slot.tensor is not None and (node.index, k) not in reads:
                ctx.fail(INPUT_UNCONNECTED, f"{root}.Nodes[{node.index}]", actual=f"{slot.name} unconnected", expected="an input or intermediate edge",
                         message=f"{node.label} input {k} ({slot.name}) is not connected" + (" (its desc is given, so it is required)" if slot.optional else ""))  # fmt: skip
        for k, slot in enumerate(node.outputs):
            if slot.tensor is not None and (node.index, k) not in writes:
                ctx.fail(OUTPUT_UNCONNECTED, f"{root}.Nodes[{node.index}]", actual=f"{slot.name} unconnected", expected="an output or intermediate edge",
                         message=f"{node.label} output {k} ({slot.name}) is not connected to a graph output or another node")  # fmt: skip

    order = _topological_order(ctx, nodes, reads)
    _check_sizes_and_ownership(ctx, nodes, reads)
    if ctx.has_errors or order is None:
        return None
    return _place(nodes, order, reads, writes, input_count, output_count)


def _edge_ok(ctx: Checker, edge: Any, kind: DML_GRAPH_EDGE_TYPE, struct: type, path: str) -> bool:
    ok = isinstance(edge, DML_GRAPH_EDGE_DESC) and edge.Type == kind and isinstance(edge.Desc, struct)
    return ctx.check(ok, EDGE_TYPE, path, actual=f"Type={fmt(getattr(edge, 'Type', None))}, Desc={type(getattr(edge, 'Desc', None)).__name__}",
                     expected=f"DML_GRAPH_EDGE_TYPE_{kind.name} with a {struct.__name__}")  # fmt: skip


def _check_nodes(ctx: Checker, desc: DML_GRAPH_DESC, device: Any) -> list[NodeInfo] | None:
    nodes: list[NodeInfo] = []
    for i, node in enumerate(desc.Nodes):
        inner = getattr(node, "Desc", None)
        label = _label("Nodes", i, getattr(inner, "Name", None))
        path = f"DML_GRAPH_DESC.{label}"
        node_type = getattr(node, "Type", None)
        if node_type == DML_GRAPH_NODE_TYPE.OPERATOR and isinstance(inner, DML_OPERATOR_GRAPH_NODE_DESC):
            op = inner.Operator
            ok = device.owns_operator(op) if device is not None else hasattr(op, "spec") and hasattr(op, "desc") and hasattr(op, "tensor")
            if not ctx.check(ok, NODE_OPERATOR, f"{path}.Operator", actual=type(op).__name__, expected="an IDMLOperator from this device's CreateOperator"):
                continue
            label = f"{label} {op.name}"
            nodes.append(NodeInfo(i, label, op, None, op.slots("input"), op.slots("output")))
        elif node_type == DML_GRAPH_NODE_TYPE.CONSTANT and isinstance(inner, DML_CONSTANT_DATA_GRAPH_NODE_DESC):
            if not ctx.check(ctx.feature_level >= DML_FEATURE_LEVEL.LEVEL_6_2, NODE_TYPE, f"{path}.Type", actual="DML_GRAPH_NODE_TYPE_CONSTANT", expected="DML_GRAPH_NODE_TYPE_OPERATOR",
                             message=f"is CONSTANT, which needs DML_FEATURE_LEVEL_6_2; the device targets {ctx.feature_level.dotted}"):  # fmt: skip
                continue
            data = _constant_bytes(ctx, inner, path)
            if data is None:
                continue
            tensor = DML_BUFFER_TENSOR_DESC(TotalTensorSizeInBytes=data.size)  # stands for "DataSize bytes"
            nodes.append(NodeInfo(i, f"{label} constant", None, data, [], [Slot("Data", tensor)]))
        else:
            ctx.fail(NODE_TYPE, f"{path}.Type", actual=f"Type={fmt(node_type)}, Desc={type(inner).__name__}",
                     expected="OPERATOR with DML_OPERATOR_GRAPH_NODE_DESC or CONSTANT with DML_CONSTANT_DATA_GRAPH_NODE_DESC")  # fmt: skip
    return None if ctx.has_errors else nodes


def _constant_bytes(ctx: Checker, node: DML_CONSTANT_DATA_GRAPH_NODE_DESC, path: str) -> np.ndarray | None:
    data = node.Data
    if isinstance(data, np.ndarray):
        data = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    elif isinstance(data, (bytes, bytearray, memoryview)):
        data = np.frombuffer(bytes(data), dtype=np.uint8)
    else:
        ctx.fail(CONSTANT_DATA, f"{path}.Data", actual=type(data).__name__, expected="bytes or a NumPy array")
        return None
    size = _uint(node.DataSize) if not isinstance(node.DataSize, np.integer) else int(node.DataSize)
    if not ctx.check(size is not None and 0 < size <= data.size, CONSTANT_DATA, f"{path}.DataSize", actual=node.DataSize, expected=f"1 .. {data.size} (the bytes in Data)"):
        return None
    assert size is not None
    aligned = Buffer(size)
    aligned.data[:] = data[:size]
    return aligned.data


def _topological_order(ctx: Checker, nodes: list[NodeInfo], reads: dict[tuple[int, int], tuple[str, Any, str]]) -> list[int] | None:
    """Kahn's algorithm, lowest index first, so the order is deterministic."""
    successors: dict[int, set[int]] = {n.index: set() for n in nodes}
    indegree = {n.index: 0 for n in nodes}
    for (consumer, _), (kind, value, _) in reads.items():
        if kind == "node" and consumer not in successors[value[0]]:
            successors[value[0]].add(consumer)
            indegree[consumer] += 1
    ready = [i for i, d in indegree.items() if d == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for j in sorted(successors[i]):
            indegree[j] -= 1
            if indegree[j] == 0:
                heapq.heappush(ready, j)
    if len(order) < len(nodes):
        stuck = sorted(i for i, d in indegree.items() if d > 0)
        labels = {n.index: n.label for n in nodes}
        ctx.fail(CYCLE, "DML_GRAPH_DESC.IntermediateEdges", actual=[labels[i] for i in stuck], expected="no cycle",
                 message=f"form a cycle through {', '.join(labels[i] for i in stuck)}")  # fmt: skip
        return None
    return order


def _check_sizes_and_ownership(ctx: Checker, nodes: list[NodeInfo], reads: dict[tuple[int, int], tuple[str, Any, str]]) -> None:
    by_index = {n.index: n for n in nodes}
    first_consumer: dict[int, tuple[int, int, str]] = {}
    for (consumer, k), (kind, value, path) in sorted(reads.items()):
        slot = by_index[consumer].inputs[k]
        assert slot.tensor is not None
        size = slot.tensor.TotalTensorSizeInBytes
        if kind == "node":
            producer, out = value
            source = by_index[producer].outputs[out]
            assert source.tensor is not None
            ctx.check(source.tensor.TotalTensorSizeInBytes == size, EDGE_SIZE, path, actual=size, expected=source.tensor.TotalTensorSizeInBytes,
                      message=f"joins {by_index[producer].label} output {out} ({source.tensor.TotalTensorSizeInBytes} bytes) to {by_index[consumer].label} input {k} ({slot.name}, {size} bytes); TotalTensorSizeInBytes must be identical")  # fmt: skip
            ctx.check(not slot.owned, OWNED_SOURCE, path, actual=f"{by_index[producer].label} output", expected="a graph input",
                      message=f"feeds {by_index[consumer].label} input {k} ({slot.name}), which is OWNED_BY_DML and so must come from a graph input")  # fmt: skip
            continue
        if value in first_consumer:
            other_node, other_k, other_path = first_consumer[value]
            other = by_index[other_node].inputs[other_k]
            assert other.tensor is not None
            ctx.check(other.tensor.TotalTensorSizeInBytes == size, INPUT_SIZE, path, actual=size, expected=other.tensor.TotalTensorSizeInBytes,
                      message=f"feeds graph input {value} to {by_index[consumer].label} input {k} as {size} bytes, but {other_path} feeds it as {other.tensor.TotalTensorSizeInBytes}")  # fmt: skip
            ctx.check(other.owned == slot.owned, OWNED_CONSISTENT, path, actual=slot.owned, expected=other.owned,
                      message=f"connects graph input {value} to an input that is {'' if slot.owned else 'not '}OWNED_BY_DML, but {other_path} connects it to one that is {'' if other.owned else 'not '}")  # fmt: skip
        else:
            first_consumer[value] = (consumer, k, path)


def _place(nodes: list[NodeInfo], order: list[int], reads: dict[tuple[int, int], tuple[str, Any, str]], writes: dict[tuple[int, int], list[tuple[str, int, str]]],
           input_count: int, output_count: int) -> GraphPlan:  # fmt: skip
    by_index = {n.index: n for n in nodes}
    position = {node: p for p, node in enumerate(order)}
    plan_writes: dict[tuple[int, int], Source] = {}
    copies: dict[tuple[int, int], list[int]] = {}
    output_tensor: dict[int, DML_BUFFER_TENSOR_DESC | None] = {}

    # graph inputs: the first consumer's desc describes the slot; owned ones go to the persistent resource
    consumers: dict[int, list[tuple[int, int]]] = {}
    for key, (kind, value, _) in sorted(reads.items()):
        if kind == "input":
            consumers.setdefault(value, []).append(key)
    input_slots: list[Slot] = []
    persistent_offsets: dict[str, int] = {}
    persistent = 0
    for g in range(input_count):
        users = consumers.get(g)
        if not users:
            input_slots.append(Slot(f"GraphInput[{g}]", None, optional=True, ignored=True))
            continue
        node, k = users[0]
        slot = by_index[node].inputs[k]
        name = f"GraphInput[{g}]"
        input_slots.append(Slot(name, slot.tensor, owned=slot.owned))
        if slot.owned:
            assert slot.tensor is not None
            persistent_offsets[name] = persistent
            persistent = _align(persistent + slot.tensor.TotalTensorSizeInBytes, DML_PERSISTENT_BUFFER_ALIGNMENT)

    # node outputs: graph outputs write in place (extra graph outputs are copies); the rest go to temp
    lifetimes: list[tuple[int, int, int, tuple[int, int]]] = []  # (start, end, size, key)
    for key, targets in writes.items():
        graph_targets = [g for kind, g, _ in targets if kind == "output"]
        node_targets = [n for kind, n, _ in targets if kind == "node"]
        tensor = by_index[key[0]].outputs[key[1]].tensor
        assert tensor is not None
        if graph_targets:
            plan_writes[key] = Source("output", graph_targets[0], size=tensor.TotalTensorSizeInBytes)
            copies[key] = graph_targets[1:]
            for g in graph_targets:
                output_tensor[g] = tensor
        elif by_index[key[0]].constant is not None:
            continue  # consumers read a constant's own bytes: it needs no temporary memory
        else:
            last_use = max(position[n] for n in node_targets)
            lifetimes.append((position[key[0]], last_use, tensor.TotalTensorSizeInBytes, key))
    temporary, offsets = _allocate(lifetimes)
    for key, offset in offsets.items():
        plan_writes[key] = Source("temp", offset=offset, size=by_index[key[0]].outputs[key[1]].tensor.TotalTensorSizeInBytes)  # type: ignore[union-attr]

    plan_reads: dict[tuple[int, int], Source] = {}
    for key, (kind, value, _) in reads.items():
        if kind == "input":
            owned = by_index[key[0]].inputs[key[1]].owned
            plan_reads[key] = Source("owned", value, persistent_offsets.get(f"GraphInput[{value}]", 0)) if owned else Source("input", value)
        elif by_index[value[0]].constant is not None:
            plan_reads[key] = Source("constant", value[0])
        else:
            plan_reads[key] = plan_writes[value]
    output_slots = [Slot(f"GraphOutput[{g}]", output_tensor.get(g)) for g in range(output_count)]
    return GraphPlan(order, nodes, input_slots, output_slots, plan_reads, plan_writes, copies, temporary, persistent_offsets, persistent)


def _align(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


def _allocate(lifetimes: list[tuple[int, int, int, tuple[int, int]]]) -> tuple[int, dict[tuple[int, int], int]]:
    """First-fit placement of intermediates by lifetime: a dead tensor's bytes are reused."""
    placed: list[tuple[int, int, int, int]] = []  # (start, end, offset, size)
    offsets: dict[tuple[int, int], int] = {}
    peak = 0
    for start, end, size, key in sorted(lifetimes, key=lambda t: (t[0], -t[2])):
        size = _align(size, DML_TEMPORARY_BUFFER_ALIGNMENT)
        live = sorted((o, o + s) for (a, b, o, s) in placed if not (b < start or end < a))
        offset = 0
        for low, high in live:
            if offset + size <= low:
                break
            offset = max(offset, high)
        placed.append((start, end, offset, size))
        offsets[key] = offset
        peak = max(peak, offset + size)
    return peak, offsets


# ---------------------------------------------------------------------------------------
# The compiled graph


class CompiledGraph:
    """What CompileGraph returns: an IDMLCompiledOperator that runs the whole graph.

    The plan (slots, offsets, sizes) and the operators' lowered descs are private; the
    public accessors return copies.
    """

    __slots__ = ("__weakref__", "_device", "_execution_flags", "_initialized", "_plan", "_prepared", "_properties")

    def __init__(self, device: Any, plan: GraphPlan, flags: DML_EXECUTION_FLAGS) -> None:
        self._device = device
        self._plan = plan
        self._execution_flags = DML_EXECUTION_FLAGS(flags)
        self._initialized = False
        # CompileGraph keeps nothing of the operators but what they lowered at CreateOperator
        self._prepared = {n.index: n.operator._prepared for n in plan.nodes if n.operator is not None}  # noqa: SLF001
        descriptors = sum(s.tensor is not None for s in plan.input_slots + plan.output_slots)
        self._properties = DML_BINDING_PROPERTIES(
            RequiredDescriptorCount=descriptors + (plan.temporary_size > 0) + (plan.persistent_size > 0),
            TemporaryResourceSize=plan.temporary_size,
            PersistentResourceSize=plan.persistent_size,
        )

    name = "IDMLCompiledOperator (graph)"

    @property
    def device(self) -> Any:
        return self._device

    @property
    def execution_flags(self) -> DML_EXECUTION_FLAGS:
        return self._execution_flags

    @property
    def in_place(self) -> bool:
        return False

    @property
    def initialized(self) -> bool:
        return self._initialized

    @property
    def persistent_offsets(self) -> dict[str, int]:
        return dict(self._plan.persistent_offsets)

    def __repr__(self) -> str:
        from dmlpy.display import compiled_repr  # noqa: PLC0415 - display sits above graph

        return compiled_repr(self)

    def _repr_html_(self) -> str:
        from dmlpy.display import compiled_html  # noqa: PLC0415

        return compiled_html(self)

    def input_slots(self) -> list[Slot]:
        return copy.deepcopy(self._plan.input_slots)

    def output_slots(self) -> list[Slot]:
        return copy.deepcopy(self._plan.output_slots)

    def get_binding_properties(self) -> DML_BINDING_PROPERTIES:
        return self._properties

    def _mark_initialized(self) -> None:
        self._initialized = True

    def record(self, table: BindingTable) -> Runner:
        """The bindings as recorded; their memory is taken, and checked, when the dispatch executes."""
        plan, name = self._plan, self.name
        inputs, outputs, temporary, persistent = table.inputs, table.outputs, table.temporary, table.persistent
        by_index = {n.index: n for n in plan.nodes}
        backend = self._device.backend
        ranges = [*(inputs or ()), *(outputs or ()), temporary, persistent]
        bound_to: list[Any] = [None, None]  # the memory the runners were built on, and the runners

        def range_of(source: Source) -> BoundRange | None:
            if source.kind == "input":
                return inputs[source.index] if inputs else None
            if source.kind == "output":
                return outputs[source.index] if outputs else None
            return persistent if source.kind == "owned" else temporary if source.kind == "temp" else None

        def memory(ctx: Checker, source: Source, size: int, *, writable: bool) -> np.ndarray | None:
            if source.kind == "constant":
                constant = by_index[source.index].constant
                assert constant is not None
                return constant
            bound = range_of(source)
            assert bound is not None  # the table was checked complete
            if source.kind == "input":
                return bound.take(ctx, f"{name}.BindInputs[{source.index}] ({plan.input_slots[source.index].name})", 0, size or None, writable=False)
            if source.kind == "output":
                return bound.take(ctx, f"{name}.BindOutputs[{source.index}] ({plan.output_slots[source.index].name})", 0, size or None, writable=True)
            if source.kind == "owned":
                return bound.take(ctx, f"{name}.BindPersistentResource", source.offset, size, writable=False)
            return bound.take(ctx, f"{name}.BindTemporaryResource", source.offset, size, writable=writable)

        # A node's runners are built again only when a buffer it reads or writes holds other memory: a call
        # that lends an input array (GraphProgram) binds again the nodes at the graph's edges, not all of them.
        node_ranges: dict[int, list[BoundRange]] = {}
        for node in plan.nodes:
            i = node.index
            sources = [plan.reads.get((i, k)) for k in range(len(node.inputs))]
            sources += [plan.writes.get((i, k)) for k in range(len(node.outputs))]
            sources += [Source("output", g) for k in range(len(node.outputs)) for g in plan.copies.get((i, k), [])]
            node_ranges[i] = [r for r in (range_of(s) for s in sources if s is not None) if r is not None]
        built: dict[int, tuple[tuple[np.ndarray, ...], list[Runner]]] = {}

        def steps(ctx: Checker) -> list[Runner]:
            runners: list[Runner] = []
            for i in plan.order:
                node = by_index[i]
                held = tuple([r.buffer._data for r in node_ranges[i]])  # noqa: SLF001 - the memory the node's buffers hold now
                before = built.get(i)
                if before is not None and same_memory(before[0], held):
                    runners.extend(before[1])
                    continue
                first, findings = len(runners), len(ctx.findings)
                node_steps(ctx, i, node, runners)
                if len(ctx.findings) == findings:
                    built[i] = (held, runners[first:])
            return runners

        def node_steps(ctx: Checker, i: int, node: Any, runners: list[Runner]) -> None:
            if node.operator is None:  # constants are read where they are used; one wired to graph outputs is copied there
                constant = memory(ctx, Source("constant", i), 0, writable=False)
                target = plan.writes.get((i, 0))
                for g in ([target.index] if target is not None and target.kind == "output" else []) + plan.copies.get((i, 0), []):
                    runners.append(_copier(constant, memory(ctx, Source("output", g), 0, writable=True), node.outputs[0].tensor))
                return
            ins = []
            for k, slot in enumerate(node.inputs):
                source = plan.reads.get((i, k))
                size = slot.tensor.TotalTensorSizeInBytes if slot.tensor is not None else 0
                ins.append(BoundTensor(slot.name, memory(ctx, source, size, writable=False) if source is not None else None, slot.tensor))
            outs = []
            for k, slot in enumerate(node.outputs):
                target = plan.writes.get((i, k))
                size = slot.tensor.TotalTensorSizeInBytes if slot.tensor is not None else 0
                outs.append(BoundTensor(slot.name, memory(ctx, target, size, writable=True) if target is not None else None, slot.tensor))
            runners.append(backend.bind(self._prepared[i], ins, outs))
            for k, slot in enumerate(node.outputs):
                for extra in plan.copies.get((i, k), []):  # one node output written to several graph outputs
                    size = slot.tensor.TotalTensorSizeInBytes if slot.tensor is not None else 0
                    runners.append(_copier(memory(ctx, plan.writes[(i, k)], size, writable=False), memory(ctx, Source("output", extra), size, writable=True), slot.tensor))

        def run() -> None:
            if not self._initialized:
                ctx = Checker()
                ctx.fail(NOT_INITIALIZED, f"{name}.Execute", actual="not initialized", expected="initialized",
                         message="executes before any operator initializer targeting it was dispatched")  # fmt: skip
                self._device.remove(ctx.findings, "a compiled graph ran before its initializer")
            memory = current_memory(ranges)
            if not same_memory(bound_to[0], memory):
                ctx = Checker()
                runners = steps(ctx)
                if ctx.has_errors:
                    self._device.remove(ctx.findings, f"{name} was executed on memory it cannot use")
                bound_to[:] = [memory, backend.sequence(runners)]
            for step in bound_to[1]:
                step()

        return run


def _copier(source: np.ndarray | None, target: np.ndarray | None, tensor: DML_BUFFER_TENSOR_DESC | None) -> Runner:
    size = tensor.TotalTensorSizeInBytes if tensor is not None else 0

    def copy_bytes() -> None:
        assert source is not None and target is not None  # None only with a finding, and then nothing runs
        target[:size] = source[:size]

    return copy_bytes


def compile_graph(device: Any, ctx: Checker, desc: DML_GRAPH_DESC, flags: DML_EXECUTION_FLAGS) -> CompiledGraph | None:
    """The compiled graph, None when a graph rule fails; E_NOTIMPL when a valid graph has a node no kernel runs."""
    plan = plan_graph(ctx, desc, device)
    if plan is None:
        return None
    not_emulated = [
        dataclasses.replace(finding, path=f"DML_GRAPH_DESC.{node.label}")
        for node in plan.nodes if node.operator is not None
        for finding in node.operator.not_emulated
    ]  # fmt: skip
    if not_emulated:
        raise DmlError(HRESULT.E_NOTIMPL, not_emulated, "CompileGraph: the graph is valid, but dmlpy cannot run every node yet")
    return CompiledGraph(device, plan, flags)


__all__ = [
    "DML_CONSTANT_DATA_GRAPH_NODE_DESC",
    "DML_GRAPH_DESC",
    "DML_GRAPH_EDGE_DESC",
    "DML_GRAPH_NODE_DESC",
    "DML_INPUT_GRAPH_EDGE_DESC",
    "DML_INTERMEDIATE_GRAPH_EDGE_DESC",
    "DML_OPERATOR_GRAPH_NODE_DESC",
    "DML_OUTPUT_GRAPH_EDGE_DESC",
    "CompiledGraph",
    "GraphPlan",
    "compile_graph",
    "constant_node",
    "graph_desc",
    "input_edge",
    "intermediate_edge",
    "operator_node",
    "output_edge",
    "plan_graph",
]
