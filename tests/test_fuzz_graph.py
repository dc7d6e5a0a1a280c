"""Fuzzing CompileGraph and graph execution with broken DML_GRAPH_DESCs and binding misuse, on both backends.

Each case starts from a valid random graph of tests/test_graph_random.py (built as a raw
DML_GRAPH_DESC on the case's device) and applies zero to three mutations: wrong counts and
arrays (None, strings, tuples, oversized counts), edge fields set to nonsense (negative, huge,
float, None, str), edges of the wrong type or in the wrong array, dropped, duplicated and
dangling edges, cycles, nodes of the wrong type, foreign or missing operators, constant data
that disagrees with its DataSize, swapped nodes and resized tensors (byte sizes that no longer
match across an edge), OWNED_BY_DML on inputs that cannot be owned, and binding misuse (owned
inputs bound at execute or missing at initialize, missing or misplaced temporary and persistent
resources, wrong binding counts, skipped initialization, late re-binding). The case then goes
through ``dmlpy.validate``, ``Device.compile_graph``, an initializer, the Bind* calls,
RecordDispatch and execute, on a fresh device.

What must hold (the contract of tests/test_fuzz.py, whose helpers this file reuses):

* only ``DmlError``, ``TypeError`` or ``ValueError`` escape;
* nothing is written outside a bound output range, the temporary resource or (by the
  initializer) the persistent resource: every buffer is filled with a sentinel and checked;
  inputs and constant data are never written;
* every DmlError names registered rules, and one from a Bind* or RecordDispatch leaves the
  device removed; ``validate`` agrees with ``compile_graph`` (up to what only a device knows);
* an unmutated case compiles and runs.
"""

from __future__ import annotations

import copy
import dataclasses
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from test_fuzz import ALLOWED, UINT_NONSENSE, CaseTimeout, Guards, _filled, limits, pick, run_batch
from test_graph_random import build_raw, execute_graph, make_recipe

import dmlpy
from dmlpy import D3D12_RESOURCE_BARRIER
from dmlpy import (
    DML_BINDING_DESC,
    DML_BINDING_TABLE_DESC,
    DML_BINDING_TYPE,
    DML_BUFFER_BINDING,
    DML_CONSTANT_DATA_GRAPH_NODE_DESC,
    DML_EXECUTION_FLAGS,
    DML_GRAPH_EDGE_TYPE,
    DML_GRAPH_NODE_DESC,
    DML_GRAPH_NODE_TYPE,
    DML_INPUT_GRAPH_EDGE_DESC,
    DML_INTERMEDIATE_GRAPH_EDGE_DESC,
    DML_OPERATOR_GRAPH_NODE_DESC,
    DML_OUTPUT_GRAPH_EDGE_DESC,
    DML_TENSOR_FLAGS,
    HRESULT,
    Buffer,
    DmlError,
)

SEED = 0x6A_F022
BATCHES = 5
CASES_PER_BATCH = 110  # per backend: 550 graph descs
CASE_TIME_LIMIT = 10.0
GUARD = 32  # sentinel bytes before every bound tensor range (a multiple of 16, so offsets stay aligned)

COUNT_FIELDS = ("NodeCount", "InputEdgeCount", "OutputEdgeCount", "IntermediateEdgeCount", "InputCount", "OutputCount")
ARRAYS = {"Nodes": "NodeCount", "InputEdges": "InputEdgeCount", "OutputEdges": "OutputEdgeCount", "IntermediateEdges": "IntermediateEdgeCount"}
EDGE_ARRAYS = ("InputEdges", "OutputEdges", "IntermediateEdges")
BIND_STAGES = ("init.bind_inputs", "init.bind_outputs", "init.record", "bind_inputs", "bind_outputs", "bind_temporary", "bind_persistent", "record")


@dataclass
class Case:
    """A graph desc on a device, the bytes of its graph inputs, and how the case binds and runs it."""

    device: dmlpy.Device
    other: dmlpy.Device
    desc: Any
    inputs: list[np.ndarray]
    feature_level: Any
    log: list[str] = field(default_factory=list)
    flags: Any = DML_EXECUTION_FLAGS.NONE
    owned_at_execute: bool = False  # bind OWNED_BY_DML inputs at execute too
    owned_missing_at_init: bool = False
    unowned_at_init: bool = False
    input_count_delta: int = 0  # bindings given minus slots
    output_small: bool = False  # the first output bound with half its size
    temporary: str = "default"  # default, none, small, misaligned
    persistent: str = "default"  # default, none, small
    skip_init: bool = False
    rebind_after_record: bool = False
    input_offset: int = GUARD


# ---------------------------------------------------------------------------------------
# Mutations of the desc


def _edges(case: Case) -> list[tuple[str, int, Any]]:
    found = []
    for name in EDGE_ARRAYS:
        array = getattr(case.desc, name)
        if isinstance(array, list):
            found += [(name, i, edge) for i, edge in enumerate(array)]
    return found


def _sync_counts(case: Case) -> None:
    for name, count in ARRAYS.items():
        array = getattr(case.desc, name)
        if isinstance(array, list):
            setattr(case.desc, count, len(array))


def m_count(case: Case, rng: np.random.Generator) -> str:
    name = pick(rng, list(COUNT_FIELDS))
    value = getattr(case.desc, name)
    choice = pick(rng, [value + 1, value - 1, 0, 2**32 - 1, 2**32, 2**31, 2**24, -1, None, "1", 1.5, True, np.uint32(value), np.int64(value)])
    setattr(case.desc, name, choice)
    return f"{name} = {choice!r} (was {value})"


def m_array(case: Case, rng: np.random.Generator) -> str:
    name = pick(rng, list(ARRAYS))
    array = getattr(case.desc, name)
    choice = pick(rng, ["none", "str", "tuple", "dict", "empty", "ndarray", "iterator"])
    value = {"none": None, "str": "edges", "tuple": tuple(array or ()), "dict": dict(enumerate(array or ())), "empty": [],
             "ndarray": np.array(array or [], dtype=object), "iterator": iter(array or ())}[choice]  # fmt: skip
    setattr(case.desc, name, value)
    if rng.random() < 0.5:
        setattr(case.desc, ARRAYS[name], len(array or ()) if choice in ("tuple", "dict", "ndarray") else 0)
    return f"{name} = {choice}"


def m_edge_field(case: Case, rng: np.random.Generator) -> str:
    edges = _edges(case)
    if not edges:
        return "no edge to mutate"
    name, i, edge = pick(rng, edges)
    if not dataclasses.is_dataclass(edge.Desc):
        return "edge desc is not a struct"
    fields = [f.name for f in dataclasses.fields(edge.Desc)]
    target = pick(rng, fields)
    nodes = case.desc.NodeCount if isinstance(case.desc.NodeCount, int) else 4
    plausible = [nodes, nodes + 3, 3, 4, 7, case.desc.InputCount, case.desc.OutputCount]
    value = pick(rng, [5, b"x", None, "", "name\x00"]) if target == "Name" else pick(rng, UINT_NONSENSE + plausible)
    setattr(edge.Desc, target, value)
    return f"{name}[{i}].{target} = {value!r}"[:160]


def m_edge_type(case: Case, rng: np.random.Generator) -> str:
    edges = _edges(case)
    if not edges:
        return "no edge to mutate"
    name, i, edge = pick(rng, edges)
    how = pick(rng, ["type", "desc", "move", "replace"])
    if how == "type":
        edge.Type = pick(rng, [DML_GRAPH_EDGE_TYPE.INVALID, DML_GRAPH_EDGE_TYPE.INPUT, DML_GRAPH_EDGE_TYPE.OUTPUT, DML_GRAPH_EDGE_TYPE.INTERMEDIATE, 9, -1, None, "INPUT", 1.0])
        return f"{name}[{i}].Type = {edge.Type!r}"
    if how == "desc":
        edge.Desc = pick(rng, [None, "desc", {"GraphInputIndex": 0}, DML_INPUT_GRAPH_EDGE_DESC(), DML_OUTPUT_GRAPH_EDGE_DESC(), DML_INTERMEDIATE_GRAPH_EDGE_DESC(), 7])
        return f"{name}[{i}].Desc = {edge.Desc!r}"
    if how == "replace":
        getattr(case.desc, name)[i] = pick(rng, [None, "edge", 3, edge.Desc, DML_GRAPH_NODE_DESC()])
        return f"{name}[{i}] replaced by a non-edge"
    other = pick(rng, [a for a in EDGE_ARRAYS if a != name])
    getattr(case.desc, name).pop(i)
    target = getattr(case.desc, other)
    if target is None:
        target = []
        setattr(case.desc, other, target)
    target.append(edge)
    if rng.random() < 0.7:
        _sync_counts(case)
    return f"{name}[{i}] moved to {other}"


def m_edge_drop(case: Case, rng: np.random.Generator) -> str:
    edges = _edges(case)
    if not edges:
        return "no edge to drop"
    name, i, _ = pick(rng, edges)
    getattr(case.desc, name).pop(i)
    if rng.random() < 0.8:
        _sync_counts(case)
    return f"{name}[{i}] dropped (a node input or graph output left dangling)"


def m_edge_duplicate(case: Case, rng: np.random.Generator) -> str:
    edges = _edges(case)
    if not edges:
        return "no edge to duplicate"
    name, i, edge = pick(rng, edges)
    getattr(case.desc, name).append(copy.deepcopy(edge))
    _sync_counts(case)
    return f"{name}[{i}] duplicated"


def m_cycle(case: Case, rng: np.random.Generator) -> str:
    """Rewire a node input to come from the node itself or from a node it feeds."""
    mids = [e for e in case.desc.IntermediateEdges or [] if isinstance(getattr(e, "Desc", None), DML_INTERMEDIATE_GRAPH_EDGE_DESC)]
    if not mids:
        return "no intermediate edge for a cycle"
    edge = pick(rng, mids).Desc
    successors = [e.Desc.ToNodeIndex for e in mids if e.Desc.FromNodeIndex == edge.ToNodeIndex]
    edge.FromNodeIndex = pick(rng, [edge.ToNodeIndex, *successors])
    return f"intermediate edge now from node {edge.FromNodeIndex} into node {edge.ToNodeIndex}: a cycle"


def m_edge_random(case: Case, rng: np.random.Generator) -> str:
    nodes = len(case.desc.Nodes) if isinstance(case.desc.Nodes, list) else 3
    kind = pick(rng, EDGE_ARRAYS)
    r = lambda top: int(rng.integers(0, max(1, top) + 1))  # noqa: E731 - indices up to one past the end
    edge = {
        "InputEdges": lambda: dmlpy.input_edge(r(case.desc.InputCount if isinstance(case.desc.InputCount, int) else 2), r(nodes), r(2)),
        "OutputEdges": lambda: dmlpy.output_edge(r(nodes), r(1), r(case.desc.OutputCount if isinstance(case.desc.OutputCount, int) else 2)),
        "IntermediateEdges": lambda: dmlpy.intermediate_edge(r(nodes), r(1), r(nodes), r(2)),
    }[kind]()
    array = getattr(case.desc, kind)
    if array is None:
        array = []
        setattr(case.desc, kind, array)
    array.append(edge)
    _sync_counts(case)
    return f"{kind} += {edge.Desc}"


def m_node(case: Case, rng: np.random.Generator) -> str:
    nodes = case.desc.Nodes
    if not isinstance(nodes, list) or not nodes:
        return "no node to mutate"
    i = int(rng.integers(0, len(nodes)))
    node = nodes[i]
    how = pick(rng, ["type", "desc", "operator", "constant-data", "constant-size", "name", "replace"])
    inner = getattr(node, "Desc", None)
    if how == "type":
        node.Type = pick(rng, [DML_GRAPH_NODE_TYPE.INVALID, DML_GRAPH_NODE_TYPE.CONSTANT, DML_GRAPH_NODE_TYPE.OPERATOR, 7, None, "OPERATOR"])
        return f"Nodes[{i}].Type = {node.Type!r}"
    if how == "desc":
        node.Desc = pick(rng, [None, "desc", DML_CONSTANT_DATA_GRAPH_NODE_DESC(b"\0" * 16, 16), DML_OPERATOR_GRAPH_NODE_DESC(None), 5])
        return f"Nodes[{i}].Desc = {node.Desc!r}"[:160]
    if how == "operator" and isinstance(inner, DML_OPERATOR_GRAPH_NODE_DESC):
        op = inner.Operator
        choices: list[Any] = [None, "operator", 3, object()]
        if op is not None and hasattr(op, "desc"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                choices += [case.other.create_operator(op.desc), case.device.compile_operator(op)]
        inner.Operator = pick(rng, choices)
        return f"Nodes[{i}].Operator = {type(inner.Operator).__name__}"
    if how in ("constant-data", "constant-size") and isinstance(inner, DML_CONSTANT_DATA_GRAPH_NODE_DESC):
        if how == "constant-data":
            inner.Data = pick(rng, [None, "bytes", [1, 2, 3], 7, bytes(inner.DataSize + 4), bytes(max(0, inner.DataSize - 4)), np.zeros(2, np.float32), memoryview(b"abcd")])
            return f"Nodes[{i}].Data = {type(inner.Data).__name__} of {len(inner.Data) if hasattr(inner.Data, '__len__') else '-'}"
        inner.DataSize = pick(rng, [inner.DataSize + 4, inner.DataSize - 4, 0, -1, None, 2**40, 2**64, 4.0, "16", np.uint64(inner.DataSize)])
        return f"Nodes[{i}].DataSize = {inner.DataSize!r}"
    if how == "name" and inner is not None and hasattr(inner, "Name"):
        inner.Name = pick(rng, [5, b"name", None, "", "x" * 300, object()])
        return f"Nodes[{i}].Name = {type(inner.Name).__name__}"
    nodes[i] = pick(rng, [None, "node", DML_GRAPH_NODE_DESC(), copy.copy(node)])
    return f"Nodes[{i}] replaced"


def m_node_swap(case: Case, rng: np.random.Generator) -> str:
    nodes = case.desc.Nodes
    if not isinstance(nodes, list) or len(nodes) < 2:
        return "fewer than two nodes"
    i, j = (int(v) for v in rng.choice(len(nodes), 2, replace=False))
    nodes[i], nodes[j] = nodes[j], nodes[i]
    return f"Nodes[{i}] and Nodes[{j}] swapped (edges now join other tensors)"


def _operator_nodes(case: Case) -> list[tuple[int, Any]]:
    nodes = case.desc.Nodes if isinstance(case.desc.Nodes, list) else []
    return [(i, n.Desc) for i, n in enumerate(nodes) if isinstance(n, DML_GRAPH_NODE_DESC) and isinstance(n.Desc, DML_OPERATOR_GRAPH_NODE_DESC) and hasattr(n.Desc.Operator, "desc")]


def _recreate(case: Case, inner: Any, change: Callable[[Any], None]) -> bool:
    desc = copy.deepcopy(inner.Operator.desc)
    change(desc)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            inner.Operator = case.device.create_operator(desc)
    except DmlError:
        return False
    return True


def m_tensor_size(case: Case, rng: np.random.Generator) -> str:
    """Give one node tensor 4 (or 16) more TotalTensorSizeInBytes: the edges joining it no longer match."""
    ops = _operator_nodes(case)
    if not ops:
        return "no operator node"
    i, inner = pick(rng, ops)
    names = [s.name for s in inner.Operator.spec.support.slots if inner.Operator.tensor(s.name) is not None]
    name = pick(rng, names)
    extra = pick(rng, [4, 16])

    def grow(desc: Any) -> None:
        getattr(desc, name).Desc.TotalTensorSizeInBytes += extra

    done = _recreate(case, inner, grow)
    return f"Nodes[{i}].{name}.TotalTensorSizeInBytes += {extra}" + ("" if done else " (refused by CreateOperator)")


def m_owned(case: Case, rng: np.random.Generator) -> str:
    """OWNED_BY_DML on a node input (fed by a node: refused; by a shared graph input: maybe inconsistent), and binding misuse."""
    ops = _operator_nodes(case)
    what = pick(rng, ["flag", "flag", "at-execute", "missing-at-init", "unowned-at-init"])
    if what == "at-execute":
        case.owned_at_execute = True
    elif what == "missing-at-init":
        case.owned_missing_at_init = True
    elif what == "unowned-at-init":
        case.unowned_at_init = True
    if what != "flag" or not ops:
        return f"owned binding misuse: {what}"
    i, inner = pick(rng, ops)
    names = [s.name for s in inner.Operator.spec.support.inputs if inner.Operator.tensor(s.name) is not None]
    name = pick(rng, names)

    def own(desc: Any) -> None:
        getattr(desc, name).Desc.Flags = DML_TENSOR_FLAGS.OWNED_BY_DML

    done = _recreate(case, inner, own)
    return f"Nodes[{i}].{name} OWNED_BY_DML" + ("" if done else " (refused by CreateOperator)")


def m_binding(case: Case, rng: np.random.Generator) -> str:
    what = pick(rng, ["input-count", "output-small", "temporary", "persistent", "skip-init", "rebind", "flags", "offset"])
    if what == "input-count":
        case.input_count_delta = pick(rng, [-1, 1, 2])
    elif what == "output-small":
        case.output_small = True
    elif what == "temporary":
        case.temporary = pick(rng, ["none", "small", "misaligned"])
    elif what == "persistent":
        case.persistent = pick(rng, ["none", "small"])
    elif what == "skip-init":
        case.skip_init = True
    elif what == "rebind":
        case.rebind_after_record = True
        if rng.random() < 0.5:
            case.flags = DML_EXECUTION_FLAGS.DESCRIPTORS_VOLATILE
    elif what == "flags":
        case.flags = pick(rng, [1, 2, 4, 7, 8, 2**31, -1, "x", None, 1.5])
    else:
        case.input_offset = pick(rng, [GUARD + 4, GUARD + 8, 8])
    return f"binding: {what}"


def m_constant_output(case: Case, rng: np.random.Generator) -> str:
    """A valid oddity: a constant node (or another node's output) also written to a new graph output."""
    nodes = case.desc.Nodes if isinstance(case.desc.Nodes, list) else []
    constants = [i for i, n in enumerate(nodes) if isinstance(getattr(n, "Desc", None), DML_CONSTANT_DATA_GRAPH_NODE_DESC)]
    sources = constants or list(range(len(nodes)))
    if not sources or not isinstance(case.desc.OutputCount, int) or not isinstance(case.desc.OutputEdges, list):
        return "nothing to export"
    i = pick(rng, sources)
    case.desc.OutputEdges.append(dmlpy.output_edge(i, 0, case.desc.OutputCount, "extra"))
    case.desc.OutputCount += 1
    _sync_counts(case)
    return f"Nodes[{i}] also written to graph output {case.desc.OutputCount - 1}"


MUTATIONS: list[tuple[Callable[[Case, np.random.Generator], str], int]] = [
    (m_count, 3), (m_array, 2), (m_edge_field, 5), (m_edge_type, 3), (m_edge_drop, 3), (m_edge_duplicate, 2), (m_cycle, 3), (m_edge_random, 3),
    (m_node, 4), (m_node_swap, 2), (m_tensor_size, 3), (m_owned, 3), (m_binding, 5), (m_constant_output, 2),
]  # fmt: skip
_WEIGHTS = np.array([w for _, w in MUTATIONS], dtype=float) / sum(w for _, w in MUTATIONS)


def make_case(batch: int, index: int, backend: str) -> Case:
    """The valid graph of a random recipe, built raw on a fresh device, then mutated."""
    rng = np.random.default_rng([SEED, batch, index])
    recipe = make_recipe(int(rng.integers(0, 2**31)))
    device = dmlpy.create_device(recipe.feature_level, backend=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        desc, inputs = build_raw(device, recipe)
    case = Case(device, dmlpy.create_device(recipe.feature_level, backend=backend), desc, inputs, recipe.feature_level)
    binding_only = rng.random() < 0.3  # a valid graph bound and run the wrong way: these cases reach the Bind* calls
    for _ in range(int(rng.choice([0, 1, 1, 2, 2, 3]))):
        mutation = pick(rng, [m_binding, m_owned]) if binding_only else MUTATIONS[int(rng.choice(len(MUTATIONS), p=_WEIGHTS))][0]
        try:
            line = mutation(case, rng)
        except Exception as error:  # noqa: BLE001 - a mutation may choke on what an earlier one broke
            line = f"not applied to the already broken desc ({type(error).__name__}: {error})"
        case.log.append(f"{mutation.__name__}: {line}")
    return case


# ---------------------------------------------------------------------------------------
# Running a case


@dataclass
class Outcome:
    stage: str = "start"
    error: BaseException | None = None
    problems: list[str] = field(default_factory=list)
    executed: bool = False


def _constant_snapshots(desc: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    nodes = desc.Nodes if isinstance(desc.Nodes, list) else []
    return [(n.Desc.Data, n.Desc.Data.copy()) for n in nodes if isinstance(getattr(n, "Desc", None), DML_CONSTANT_DATA_GRAPH_NODE_DESC) and isinstance(n.Desc.Data, np.ndarray)]


def run_case(case: Case) -> Outcome:  # noqa: C901, PLR0912, PLR0915 - the pipeline, one step per line
    outcome = Outcome()
    guards = Guards()
    device = case.device
    constants = _constant_snapshots(case.desc)
    compile_error: BaseException | None = None
    try:
        outcome.stage = "validate"
        try:
            report: Any = dmlpy.validate(case.desc, feature_level=case.feature_level)
        except (TypeError, ValueError) as error:
            report = error
        outcome.stage = "compile_graph"
        try:
            compiled = device.compile_graph(case.desc, case.flags)
        except ALLOWED as error:
            compile_error = error
            raise
        finally:
            _check_agreement(outcome, report, compile_error)
        props = compiled.get_binding_properties()
        in_slots, out_slots = compiled.input_slots(), compiled.output_slots()

        def input_buffer(g: int, slot: Any) -> Buffer:
            data = case.inputs[g] if g < len(case.inputs) else np.zeros(0, np.uint8)
            total = slot.tensor.TotalTensorSizeInBytes if slot.tensor is not None else max(16, data.size)
            buffer = _filled(case.input_offset + total + GUARD, f"input {g}", guards)
            size = min(total, data.size)
            buffer.data[case.input_offset : case.input_offset + size] = data[:size]
            return buffer

        in_buffers = [input_buffer(g, s) for g, s in enumerate(in_slots)]
        guards.refresh()
        out_buffers = []
        for g, slot in enumerate(out_slots):
            total = slot.tensor.TotalTensorSizeInBytes if slot.tensor is not None else 16
            out_buffers.append(_filled(GUARD + total + GUARD, f"output {g}", guards))

        def tensor_binding(buffer: Buffer, offset: int, size: int) -> DML_BINDING_DESC:
            return DML_BINDING_DESC(DML_BINDING_TYPE.BUFFER, DML_BUFFER_BINDING(buffer, offset, size))

        def resource(size: int, how: str, name: str) -> DML_BINDING_DESC | None:
            if not size or how == "none":
                return None
            offset = 16 if how == "misaligned" else 256
            bound = size // 2 // 4 * 4 if how == "small" else size
            buffer = _filled(512 + size, name, guards)
            guards.allow(buffer, offset, bound)
            return tensor_binding(buffer, offset, bound)

        recorder, command_list = device.create_command_recorder(), device.create_command_list()
        outcome.stage = "create_initializer"
        initializer = device.create_operator_initializer([compiled])
        table = device.create_binding_table(initializer)
        persistent = resource(props.PersistentResourceSize, case.persistent, "persistent")
        entries = []
        for g, (slot, buffer) in enumerate(zip(in_slots, in_buffers, strict=True)):
            bind = (slot.owned and not case.owned_missing_at_init) or (case.unowned_at_init and g == 0 and not slot.owned)
            size = slot.tensor.TotalTensorSizeInBytes if slot.tensor is not None else 16
            entries.append(DML_BUFFER_BINDING(buffer, case.input_offset, size) if bind else None)
        outcome.stage = "init.bind_inputs"
        table.bind_inputs([dmlpy.array_binding(entries)])
        outcome.stage = "init.bind_outputs"
        table.bind_outputs([persistent or DML_BINDING_DESC()])
        if not case.skip_init:
            outcome.stage = "init.record"
            recorder.record_dispatch(command_list, initializer, table)
            command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav()])  # the dispatch after the initializer reads what it wrote
        outcome.stage = "reset"
        table.reset(DML_BINDING_TABLE_DESC(compiled, 0, 0, props.RequiredDescriptorCount))
        bindings = []
        for slot, buffer in zip(in_slots, in_buffers, strict=True):
            size = slot.tensor.TotalTensorSizeInBytes if slot.tensor is not None else 16
            bindings.append(DML_BINDING_DESC() if slot.owned and not case.owned_at_execute else tensor_binding(buffer, case.input_offset, size))
        if case.input_count_delta < 0:
            bindings = bindings[: case.input_count_delta]
        elif case.input_count_delta > 0:
            bindings += [DML_BINDING_DESC()] * case.input_count_delta
        outcome.stage = "bind_inputs"
        table.bind_inputs(bindings)
        out_bindings = []
        for g, (slot, buffer) in enumerate(zip(out_slots, out_buffers, strict=True)):
            total = slot.tensor.TotalTensorSizeInBytes if slot.tensor is not None else 16
            size = total // 2 // 4 * 4 if case.output_small and g == 0 else total
            guards.allow(buffer, GUARD, size)
            out_bindings.append(tensor_binding(buffer, GUARD, size))
        outcome.stage = "bind_outputs"
        table.bind_outputs(out_bindings)
        outcome.stage = "bind_temporary"
        table.bind_temporary_resource(resource(props.TemporaryResourceSize, case.temporary, "temporary"))
        outcome.stage = "bind_persistent"
        table.bind_persistent_resource(persistent)
        outcome.stage = "record"
        recorder.record_dispatch(command_list, compiled, table)
        if case.rebind_after_record:
            outcome.stage = "rebind"
            table.bind_outputs(None)
        command_list.close()
        outcome.stage = "execute"
        device.execute(command_list)
        outcome.executed = True
    except ALLOWED as error:
        outcome.error = error
        if isinstance(error, DmlError):
            if not error.findings and error.hresult != HRESULT.E_OUTOFMEMORY:
                outcome.problems.append(f"DmlError at {outcome.stage} carries no findings: {error}")
            unknown = [f.rule for f in error.findings if f.rule not in dmlpy.RULES]
            if unknown:
                outcome.problems.append(f"DmlError at {outcome.stage} names unregistered rules {unknown}")
            if outcome.stage in BIND_STAGES and error.hresult != HRESULT.DXGI_ERROR_DEVICE_REMOVED and device.get_device_removed_reason() == HRESULT.S_OK:
                outcome.problems.append(f"DmlError at {outcome.stage} did not remove the device")
    except CaseTimeout as error:
        outcome.error = error
        outcome.problems.append(f"hang at {outcome.stage}: {error}\n{''.join(traceback.format_exception(error))[-3000:]}")
    except Exception as error:  # noqa: BLE001 - the point of the fuzz: anything else is a bug
        outcome.error = error
        outcome.problems.append(f"{type(error).__name__} at {outcome.stage}: {error}\n{''.join(traceback.format_exception(error))[-3000:]}")
    outcome.problems.extend(f"guard bytes changed in {v}" for v in guards.violations())
    outcome.problems.extend("constant node data was written" for data, before in constants if not np.array_equal(data, before))
    if not case.log and not outcome.executed:
        outcome.problems.append(f"an unmutated case failed at {outcome.stage}: {outcome.error!r}")
    return outcome


def _check_agreement(outcome: Outcome, report: Any, compile_error: BaseException | None) -> None:
    """validate() and compile_graph agree, except on what only the device knows (whose operators the nodes hold)."""
    if isinstance(report, BaseException):
        if compile_error is None:
            outcome.problems.append(f"validate raised {report!r} but compile_graph accepted the graph")
        return
    if compile_error is None and not report.ok:
        outcome.problems.append(f"validate found {report.rule_ids} but compile_graph accepted the graph")
    if isinstance(compile_error, DmlError) and compile_error.findings and report.ok:
        device_only = {"GRAPH.NODE_OPERATOR"}
        if not set(compile_error.rule_ids) <= device_only:
            outcome.problems.append(f"compile_graph found {compile_error.rule_ids} but validate found nothing")


def describe(case: Case, batch: int, index: int, outcome: Outcome) -> str:
    lines = [f"case (batch {batch}, index {index}) failed at stage {outcome.stage}:"]
    lines += [f"  mutation {line}" for line in case.log] or ["  (no mutation)"]
    lines += [f"  problem: {p}" for p in outcome.problems]
    return "\n".join(lines)


@pytest.mark.parametrize("batch", range(BATCHES))
def test_fuzz_graph_batch(backend: str, batch: int) -> None:
    """Broken graph descs and bindings: only DmlError/TypeError/ValueError, no write outside what was bound for writing."""
    run_batch(batch, CASES_PER_BATCH, lambda b, index: make_case(b, index, backend), run_case, describe)


def test_the_graph_fuzz_runs_at_least_500_descs_per_backend() -> None:
    assert BATCHES * CASES_PER_BATCH >= 500


def test_the_mutations_reach_every_kind_of_damage() -> None:
    """Every mutation is drawn in the first batch, and most cases are broken in some way."""
    drawn: set[str] = set()
    broken = 0
    for index in range(CASES_PER_BATCH):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            case = make_case(0, index, "numpy")
        drawn.update(line.split(":")[0] for line in case.log)
        broken += bool(case.log)
    assert drawn == {m.__name__ for m, _ in MUTATIONS}
    assert broken >= CASES_PER_BATCH * 0.7


# ---------------------------------------------------------------------------------------
# Minimal repros of what the fuzz (and reading graph.py for it) found


def _pool_operator(device: dmlpy.Device) -> Any:
    return device.create_operator(dmlpy.DML_AVERAGE_POOLING_OPERATOR_DESC(
        dmlpy.buffer_tensor(np.float32, (1, 1, 4, 4)), dmlpy.buffer_tensor(np.float32, (1, 1, 2, 2)), 2, (2, 2), (2, 2), (0, 0), (0, 0), False))  # fmt: skip


@pytest.mark.parametrize("count", [2**24, 2**32 - 1])
def test_a_huge_output_count_is_one_finding_not_one_per_index(numpy_device: dmlpy.Device, count: int) -> None:
    """OutputCount is a UINT; graph.py once reported each unwritten index, so 2**32 - 1 never finished."""
    desc = dmlpy.graph_desc(1, count, [dmlpy.operator_node(_pool_operator(numpy_device))], [dmlpy.input_edge(0, 0)], [dmlpy.output_edge(0, 0, 0)])
    with limits(CASE_TIME_LIMIT), pytest.raises(DmlError) as caught:
        numpy_device.compile_graph(desc)
    assert caught.value.rule_ids == ["GRAPH.OUTPUT_UNWRITTEN"]
    assert f"{count - 1} in all" in caught.value.findings[0].message


@pytest.mark.parametrize("count", [2**24, 2**32 - 1])
def test_a_huge_input_count_fails_as_an_allocation_not_a_hang(numpy_device: dmlpy.Device, count: int) -> None:
    """Unused graph inputs are legal, but each takes a binding slot: billions of them are E_OUTOFMEMORY (graph.MAX_GRAPH_INPUTS)."""
    desc = dmlpy.graph_desc(count, 1, [dmlpy.operator_node(_pool_operator(numpy_device))], [dmlpy.input_edge(0, 0)], [dmlpy.output_edge(0, 0, 0)])
    with limits(CASE_TIME_LIMIT), pytest.raises(DmlError) as caught:
        numpy_device.compile_graph(desc)
    assert caught.value.hresult == HRESULT.E_OUTOFMEMORY
    assert "InputCount" in str(caught.value)


def test_many_unused_graph_inputs_up_to_the_capacity_still_compile(numpy_device: dmlpy.Device) -> None:
    from dmlpy.graph import MAX_GRAPH_INPUTS  # noqa: PLC0415

    desc = dmlpy.graph_desc(MAX_GRAPH_INPUTS, 1, [dmlpy.operator_node(_pool_operator(numpy_device))], [dmlpy.input_edge(7, 0)], [dmlpy.output_edge(0, 0, 0)])
    compiled = numpy_device.compile_graph(desc)
    assert len(compiled.input_slots()) == MAX_GRAPH_INPUTS
    assert compiled.get_binding_properties().RequiredDescriptorCount == 2  # unused inputs need no descriptor


def test_a_constant_wired_to_graph_outputs_is_copied_to_each(backend: str) -> None:
    """graph.py once skipped constant nodes at execute, so a graph output fed by one was never written."""
    device = dmlpy.create_device(backend=backend)
    data = np.arange(16, dtype=np.float32)
    desc = dmlpy.graph_desc(0, 3, [dmlpy.constant_node(data, "c"), dmlpy.operator_node(_pool_operator(device))], [],
                            [dmlpy.output_edge(1, 0, 0), dmlpy.output_edge(0, 0, 1), dmlpy.output_edge(0, 0, 2)], [dmlpy.intermediate_edge(0, 0, 1)])  # fmt: skip
    compiled = device.compile_graph(desc)
    pooled, first, second = (np.frombuffer(raw, np.float32) for raw in execute_graph(device, compiled, [], np.random.default_rng(0)))
    np.testing.assert_array_equal(pooled, [2.5, 4.5, 10.5, 12.5])
    np.testing.assert_array_equal(first, data)
    np.testing.assert_array_equal(second, data)


def test_a_constant_read_by_a_node_needs_no_temporary_memory(numpy_device: dmlpy.Device) -> None:
    """Consumers read a constant's own bytes; graph.py once also reserved temporary memory for it."""
    desc = dmlpy.graph_desc(0, 1, [dmlpy.constant_node(np.zeros(16, np.float32)), dmlpy.operator_node(_pool_operator(numpy_device))], [],
                            [dmlpy.output_edge(1, 0, 0)], [dmlpy.intermediate_edge(0, 0, 1)])  # fmt: skip
    assert numpy_device.compile_graph(desc).get_binding_properties().TemporaryResourceSize == 0
