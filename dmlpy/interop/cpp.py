"""Emit C++ that builds the same descriptors against DirectML.h.

``emit_operator`` writes a self-contained header with one function returning a
``const DML_OPERATOR_DESC*`` whose every array and struct has static storage, so the pointer can
go straight to ``IDMLDevice::CreateOperator``. ``emit_graph`` writes one such builder per
operator node and a function that fills a ``DML_GRAPH_DESC`` from the ``IDMLOperator*`` the
caller created from them. ``emit_model`` does the same for every dispatchable of a DxDispatch
model.

Every header also has ``<prefix>_run(dml, d3d, queue, buffers)``, what a Windows program records to run
them, as dmlpy's object model checks it (samples/01_average_pooling.py walks through the same steps): it
compiles the operators (or the graph), creates one initializer, a shader-visible descriptor heap holding
every binding table in its own range (sized from the binding properties' RequiredDescriptorCount), the
temporary and persistent resources the binding properties ask for, calls SetDescriptorHeaps before the
first RecordDispatch, records the initializer, a UAV barrier, and the executes with a UAV barrier wherever
dmlpy's BARRIER.UAV_MISSING rule finds that one reads or writes memory an earlier one touched
(``plan_barriers``), then Close, ExecuteCommandLists and a fence wait. ``emit_program`` records operators
that share buffers; ``emit_model`` the dispatch commands of a DxDispatch model on its resources. The
recording is left out under ``DMLPY_TYPES_ONLY`` (it needs d3d12.h and DirectML.h's interfaces).

The headers include ``<DirectML.h>``; define ``DMLPY_TYPES_ONLY`` to compile them against dmlpy's
``dmlpy/dml_types.h`` instead (same names, values and layout; ``python -m dmlpy include`` prints
its directory). DirectML.h declares an operator, struct or enum value only from the
``DML_TARGET_VERSION`` that introduced it, and picks a low version unless told otherwise, so
each header defines ``DML_TARGET_VERSION`` as the highest version of anything its code names
(0x1000 for AVERAGE_POOLING, 0x2100 for graphs and SPACE_TO_DEPTH1, 0x5100 for GELU, 0x6200 for
AVERAGE_POOLING1 and constant graph nodes) unless the includer defined it or
``DML_TARGET_VERSION_USE_LATEST``, and stops with ``#error`` when the version in force is lower.
A translation unit including several headers chooses the version itself (the first include
fixes it for DirectML.h). Every literal is exact: enums by their C names (``static_cast`` for a value no
name has), ``TRUE``/``FALSE`` for BOOL, FLOAT values with enough digits to round-trip
(``NAN``/``INFINITY`` from ``<math.h>``), ``ull`` sizes, optional pointers as ``nullptr``.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dmlpy._version import __version__
from dmlpy.enums import DML_FEATURE_LEVEL, DML_GRAPH_EDGE_TYPE, c_name
from dmlpy.execution import Access
from dmlpy.graph import plan_graph
from dmlpy.operators import REGISTRY, binding_slots, operator_desc
from dmlpy.rules import Checker
from dmlpy.structs import FieldError, Kind, kind_of, normalized
from dmlpy.tensor import is_owned_by_dml

FL = DML_FEATURE_LEVEL

# The DML_TARGET_VERSION from which DirectML.h declares a name, for the names dmlpy can emit that
# DirectML 1.0 did not have (an enum type's entry covers its values). Operator types and their
# desc structs come from the support tables: the feature level that introduced the operator.
_INTRODUCED: dict[str, DML_FEATURE_LEVEL] = {
    "DML_DEPTH_SPACE_ORDER": FL.LEVEL_2_1,
    "DML_GRAPH_EDGE_TYPE": FL.LEVEL_2_1,
    "DML_GRAPH_NODE_TYPE": FL.LEVEL_2_1,
    "DML_GRAPH_NODE_TYPE_CONSTANT": FL.LEVEL_6_2,
    "DML_GRAPH_EDGE_DESC": FL.LEVEL_2_1,
    "DML_INPUT_GRAPH_EDGE_DESC": FL.LEVEL_2_1,
    "DML_OUTPUT_GRAPH_EDGE_DESC": FL.LEVEL_2_1,
    "DML_INTERMEDIATE_GRAPH_EDGE_DESC": FL.LEVEL_2_1,
    "DML_GRAPH_NODE_DESC": FL.LEVEL_2_1,
    "DML_OPERATOR_GRAPH_NODE_DESC": FL.LEVEL_2_1,
    "DML_CONSTANT_DATA_GRAPH_NODE_DESC": FL.LEVEL_6_2,
    "DML_GRAPH_DESC": FL.LEVEL_2_1,
    "DML_TENSOR_DATA_TYPE_UINT4": FL.LEVEL_6_3,
    "DML_TENSOR_DATA_TYPE_INT4": FL.LEVEL_6_3,
    "DML_PADDING_MODE_SYMMETRIC": FL.LEVEL_3_0,
    "DML_PADDING_MODE_WRAP": FL.LEVEL_6_4,
}
_ENUM_TYPES = ("DML_DEPTH_SPACE_ORDER", "DML_GRAPH_EDGE_TYPE", "DML_GRAPH_NODE_TYPE")
_STRING_LITERAL = re.compile(r'"(?:[^"\\]|\\.)*"')


def _introduced(name: str) -> DML_FEATURE_LEVEL:
    if name in _INTRODUCED:
        return _INTRODUCED[name]
    for operator_type, spec in REGISTRY.items():
        if name in (c_name(operator_type), spec.c_struct):
            return FL(spec.support.introduced)
    enum_type = next((t for t in _ENUM_TYPES if name.startswith(t + "_")), None)
    return _INTRODUCED[enum_type] if enum_type else FL.LEVEL_1_0


def target_version(code: str) -> DML_FEATURE_LEVEL:
    """The lowest DML_TARGET_VERSION under which DirectML.h declares every DML name ``code`` uses."""
    names = set(re.findall(r"\bDML_\w+", _STRING_LITERAL.sub('""', code)))
    return max((_introduced(name) for name in names), default=FL.LEVEL_1_0)


def prelude(version: DML_FEATURE_LEVEL) -> str:
    """The header's first lines: the target version guard and the includes."""
    hex_version = f"0x{int(version):04X}"
    return f"""// Generated by dmlpy {__version__} from descriptors it validated.
#pragma once
// DirectML.h hides what a later DirectML introduced unless DML_TARGET_VERSION allows it; this code
// needs {hex_version} (DML_FEATURE_LEVEL_{version.dotted.replace(".", "_")}). Define DML_TARGET_VERSION (or DML_TARGET_VERSION_USE_LATEST)
// before including this header to choose another.
#if !defined(DML_TARGET_VERSION) && !defined(DML_TARGET_VERSION_USE_LATEST)
#define DML_TARGET_VERSION {hex_version}
#endif
#if defined(DMLPY_TYPES_ONLY)
#include "dmlpy/dml_types.h"
typedef void IDMLOperator;
#else
#include <DirectML.h>
#endif
#if defined(DML_TARGET_VERSION) && DML_TARGET_VERSION < {hex_version}
#error "this code names DirectML declarations that need DML_TARGET_VERSION {hex_version} or later"
#endif
#include <math.h>
"""


def header(code: str) -> str:
    """``code`` with the prelude its names need in front."""
    return prelude(target_version(code)) + "\n" + code


def get_include() -> str:
    """The directory to give the compiler with ``-I``: it holds ``dmlpy/dml_types.h`` and ``dmlpy/dmlpy.h``.

    An installed wheel carries the headers as package data (``<site-packages>/dmlpy/include``);
    a source checkout or an editable install uses the repository's top-level ``include/``.
    Like ``numpy.get_include()``; ``python -m dmlpy include`` prints it.
    """
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "include", package.parent / "include"):
        if (candidate / "dmlpy" / "dml_types.h").is_file():
            return str(candidate)
    msg = f"dmlpy's C headers are missing: neither {package / 'include'} nor {package.parent / 'include'} holds dmlpy/dml_types.h; reinstall dmlpy"
    raise FileNotFoundError(msg)


def identifier(name: str) -> str:
    """``name`` as a C identifier: other characters become ``_``; a leading digit gets a ``_``."""
    cleaned = re.sub(r"\W", "_", name, flags=re.ASCII)
    return cleaned if cleaned and not cleaned[0].isdigit() else f"_{cleaned}"


def c_string(value: str | None) -> str:
    """A C string literal (``nullptr`` for None); anything outside printable ASCII is escaped."""
    if value is None:
        return "nullptr"
    out = []
    for byte in value.encode("utf-8"):
        char = chr(byte)
        if char in '"\\':
            out.append("\\" + char)
        elif 0x20 <= byte < 0x7F and char != "?":  # '?' escaped: no trigraphs
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def _float_literal(value: float) -> str:
    if math.isnan(value):  # NaN has no literal
        return "NAN"
    if value in (float("inf"), float("-inf")):
        return "INFINITY" if value > 0 else "-INFINITY"
    text = repr(float(value))  # shortest digits that round-trip the double (and so the float)
    return f"{text}f" if any(c in text for c in ".en") else f"{text}.0f"


def _enum_literal(f: dataclasses.Field[Any], value: Any) -> str:
    enum_type = f.metadata.get("enum")
    if kind_of(f) is Kind.FLAGS and isinstance(value, enum.Flag) and int(value) != 0:
        members = [m for m in type(value) if m.value and int(value) & m.value == m.value]
        if sum(m.value for m in members) == int(value):
            return " | ".join(c_name(m) for m in members)
    if isinstance(value, enum.Enum) and value.name is not None and "|" not in value.name:
        return c_name(value)
    if enum_type is not None:
        member = enum_type._value2member_map_.get(int(value))
        if member is not None and member.name is not None and "|" not in str(member.name):
            return c_name(member)
        return f"static_cast<{enum_type.__name__}>({int(value)})"
    return str(int(value))


def _value(f: dataclasses.Field[Any], value: Any, var: str, lines: list[str], storage: str) -> str:  # noqa: PLR0911
    kind = kind_of(f)
    if value is None:
        return "nullptr"
    if kind is Kind.UINT_ARRAY:
        if len(value) == 0:
            return "nullptr"  # C++ has no zero-length arrays; an empty array is only ever counted as 0
        lines.append(f"{storage} UINT {var}[] = {{{', '.join(f'{int(v)}u' for v in value)}}};")
        return var
    if kind in (Kind.INT_ARRAY, Kind.FLOAT_ARRAY):
        if len(value) == 0:
            return "nullptr"
        literals = [str(int(v)) for v in value] if kind is Kind.INT_ARRAY else [_float_literal(float(v)) for v in value]
        lines.append(f"{storage} {'INT' if kind is Kind.INT_ARRAY else 'FLOAT'} {var}[] = {{{', '.join(literals)}}};")
        return var
    if kind in (Kind.TENSOR_ARRAY, Kind.OPERATOR_ARRAY):
        if len(value) == 0:
            return "nullptr"
        elements = [operator_desc(v) if kind is Kind.OPERATOR_ARRAY else v for v in value]
        inits = [_initializer(element, f"{var}_{i}", lines, storage) for i, element in enumerate(elements)]
        lines.append(f"{storage} {type(elements[0]).__name__} {var}[] = {{{', '.join(inits)}}};")
        return var
    if kind in (Kind.TENSOR, Kind.OPERATOR, Kind.DESC_POINTER, Kind.STRUCT_POINTER):
        if kind is Kind.OPERATOR:
            value = operator_desc(value)
        _struct(value, var, lines, storage)
        return f"&{var}"
    if kind is Kind.STRUCT:
        return _initializer(value, var, lines, storage)
    if kind is Kind.SCALAR_UNION:  # through its first member, Bytes: exact whichever member was set
        return "{{" + ", ".join(f"0x{b:02x}" for b in value.to_bytes()) + "}}"
    if kind is Kind.INT:
        return str(int(value))
    if kind is Kind.BOOL:
        return "TRUE" if value else "FALSE"
    if kind is Kind.FLOAT:
        return _float_literal(float(value))
    if kind is Kind.UINT64:
        return f"{int(value)}ull"
    if kind in (Kind.ENUM, Kind.FLAGS):
        return _enum_literal(f, value)
    return f"{int(value)}u"


def _initializer(desc: Any, var: str, lines: list[str], storage: str) -> str:
    """``{...}`` for a struct held by value; what its pointers point at goes into ``lines``."""
    return "{" + ", ".join(_value(f, getattr(desc, f.name), f"{var}_{f.name}", lines, storage) for f in dataclasses.fields(desc)) + "}"


def _struct(desc: Any, var: str, lines: list[str], storage: str) -> None:
    initializer = _initializer(desc, var, lines, storage)
    lines.append(f"{storage} {type(desc).__name__} {var} = {initializer};")


def desc_statements(desc: Any, name: str = "desc", storage: str = "static const") -> list[str]:
    """C++ declarations that build ``desc`` (any dmlpy struct), the last one declaring ``name``."""
    lines: list[str] = []
    _struct(desc, identifier(name), lines, storage)
    return lines


def operator_function(desc: Any, function: str = "dmlpy_build_desc") -> str:
    """A C++ function returning a pointer to the DML_OPERATOR_DESC for ``desc`` (static storage)."""
    function = identifier(function)
    wrapped = operator_desc(desc)
    try:
        wrapped = normalized(wrapped, type(wrapped.Desc).__name__)  # fills DimensionCount, wraps buffer descs
    except FieldError as error:
        msg = f"cannot emit C++ for a desc C could not hold: {error}"
        raise ValueError(msg) from None
    comment = f"// {type(wrapped.Desc).__name__}"
    body = "\n".join("    " + line for line in desc_statements(wrapped, "op"))
    return f"{comment}\ninline const DML_OPERATOR_DESC* {function}()\n{{\n{body}\n    return &op;\n}}\n"


def emit_operator(desc: Any, function: str = "dmlpy_build_desc") -> str:
    """A self-contained header: the prelude, one builder function, and ``<function>_run``, which records
    and runs the operator on a DirectML device (see ``emit_program``)."""
    function = identifier(function)
    program = _Program()
    program.add(function, _tensor_slots(desc), {})
    return header("\n".join([operator_function(desc, function), _HELPERS, recording_function(program, function, _compile_operators([function]))]))


def emit_operators(descs: Mapping[str, Any] | Iterable[tuple[str, Any]], prefix: str = "dmlpy") -> str:
    """A header with one builder per named desc, ``<prefix>_<name>()``, and ``<prefix>_run``, which records
    and runs them all, each on buffers of its own (``emit_program`` shares buffers between operators)."""
    items = descs.items() if isinstance(descs, Mapping) else descs
    return emit_program([(name, desc) for name, desc in items], prefix)


def emit_model(model: Any, prefix: str = "dmlpy") -> str:
    """A header with one builder per dispatchable of a DxDispatch model (a path, JSON or ``Model``)."""
    from dmlpy.interop.dxdispatch import Model, read_model  # noqa: PLC0415 - dxdispatch is a sibling

    parsed = model if isinstance(model, Model) else read_model(model)
    steps = model_steps(parsed)
    if not steps:  # a model without dispatch commands: each dispatchable once, on buffers of its own
        return emit_operators(parsed.dispatchables, prefix)
    prefix = identifier(prefix)
    builders: dict[str, str] = {}
    parts: list[str] = []
    for name, desc in parsed.dispatchables.items():
        function = identifier(f"{prefix}_{name}")
        while function in builders.values():
            function += "_"
        builders[name] = function
        parts.append(operator_function(desc, function))
    program = plan_program(steps)
    for buffer in program.buffers:
        if buffer in parsed.resources:
            program.buffers[buffer] = max(program.buffers[buffer], int(parsed.resources[buffer].size))
    parts += [_HELPERS, recording_function(program, prefix, _compile_operators([builders[step.name.partition("#")[0]] for step in steps]))]
    return header("\n".join(parts))


def model_steps(model: Any) -> list[Step]:
    """The dispatch commands of a parsed DxDispatch model as steps on the model's resources, in command order.

    A step is named after its dispatchable (``name#2`` for its second dispatch); a binding with an
    ``elementOffset`` starts that many elements into the resource. Initialization-time bindings (the
    OWNED_BY_DML inputs) bind the same way. DxDispatch runs each dispatch in a command list of its own;
    the recording puts them in one and orders them with UAV barriers where they share memory.
    """
    from dmlpy.interop.dxdispatch import _bound  # noqa: PLC0415 - dxdispatch is a sibling

    steps: list[Step] = []
    count: dict[str, int] = {}
    for command in model.commands:
        if command.get("type") != "dispatch":
            continue
        name = command["dispatchable"]
        if name in model.onnx_dispatchables:
            msg = (f"dispatchable {name!r} is an ONNX model: its C++ form is the graph the importer makes "
                   f"(dmlpy emit-cpp {model.onnx_dispatchables[name].name}), not a DxDispatch recording")
            raise ValueError(msg)
        desc = model.dispatchables[name]
        count[name] = count.get(name, 0) + 1
        merged = {**command.get("bindings", {}), **model.init_bindings.get(name, {})}
        inputs, outputs = _tensor_slots(desc)
        bindings: dict[str, str | BufferUse] = {}
        for slot, tensor, _ in (*inputs, *outputs):
            source = _bound(merged, slot)
            item = source[0] if isinstance(source, list) and len(source) == 1 else source
            if tensor is None or item is None or isinstance(item, list):
                continue
            if isinstance(item, str):
                bindings[slot] = item
            else:
                offset = int(item.get("elementOffset", 0)) * int(item.get("elementSizeInBytes", 0))
                bindings[slot] = BufferUse(item["name"], offset)
        steps.append(Step(name if count[name] == 1 else f"{name}#{count[name]}", desc, bindings))
    return steps


def _graph_desc(graph: Any) -> Any:
    if hasattr(graph, "program"):
        graph = graph.program  # an imported ONNX model
    return getattr(graph, "graph_desc", graph)


def emit_graph(program: Any, prefix: str = "dmlpy_graph") -> str:
    """A header with one builder per node operator and a function that fills the DML_GRAPH_DESC.

    ``program`` is a ``GraphProgram``, an imported ONNX model or a ``DML_GRAPH_DESC``.
    ``<prefix>_node_<i>()`` returns node i's DML_OPERATOR_DESC (constant nodes have none);
    ``<prefix>_fill(operators, &desc)`` takes the IDMLOperator* created from them, in node
    order (NULL for constant nodes), and points ``desc`` at static node and edge arrays.
    ``<prefix>_NODE_COUNT`` is the number of entries ``operators`` must have.
    """
    prefix = identifier(prefix)
    program_or_desc = program.program if hasattr(program, "program") else program
    desc = _graph_desc(program)
    nodes = list(desc.Nodes or ())
    parts = [f"enum {{ {prefix}_NODE_COUNT = {len(nodes)} }};\n"]
    constants: list[str] = []
    for i, node in enumerate(nodes):
        inner = node.Desc
        if hasattr(inner, "Operator"):
            operator = inner.Operator
            parts.append(operator_function(getattr(operator, "desc", operator), f"{prefix}_node_{i}"))
        else:
            raw = inner.Data if isinstance(inner.Data, (bytes, bytearray)) else bytes(memoryview(inner.Data).cast("B"))
            data = bytes(raw)[: int(inner.DataSize)]
            constants.append(f"    static const unsigned char constant_{i}[] = {{{', '.join(str(b) for b in data) or '0'}}};")
            constants.append(f"    static const DML_CONSTANT_DATA_GRAPH_NODE_DESC constant_node_{i} = {{constant_{i}, {len(data)}, {c_string(inner.Name)}}};")
    count = max(1, len(nodes))
    lines = [f"inline void {prefix}_fill(IDMLOperator* const* operators, DML_GRAPH_DESC* desc)", "{", *constants]
    if any(hasattr(node.Desc, "Operator") for node in nodes):
        lines.append(f"    static DML_OPERATOR_GRAPH_NODE_DESC operator_nodes[{count}];")
    lines.append(f"    static DML_GRAPH_NODE_DESC nodes[{count}];")
    for i, node in enumerate(nodes):
        if hasattr(node.Desc, "Operator"):
            lines.append(f"    operator_nodes[{i}] = DML_OPERATOR_GRAPH_NODE_DESC{{operators[{i}], {c_string(node.Desc.Name)}}};")
            lines.append(f"    nodes[{i}] = DML_GRAPH_NODE_DESC{{DML_GRAPH_NODE_TYPE_OPERATOR, &operator_nodes[{i}]}};")
        else:
            lines.append(f"    nodes[{i}] = DML_GRAPH_NODE_DESC{{DML_GRAPH_NODE_TYPE_CONSTANT, &constant_node_{i}}};")
    uses_operators = any(hasattr(node.Desc, "Operator") for node in nodes)
    if not uses_operators:
        lines.append("    (void)operators;")
    arrays = {}
    structs = {"input": "DML_INPUT_GRAPH_EDGE_DESC", "output": "DML_OUTPUT_GRAPH_EDGE_DESC", "intermediate": "DML_INTERMEDIATE_GRAPH_EDGE_DESC"}
    for kind, edges in (("input", desc.InputEdges or []), ("output", desc.OutputEdges or []), ("intermediate", desc.IntermediateEdges or [])):
        edges = list(edges)
        if not edges:
            arrays[kind] = (0, "nullptr")
            continue
        struct = structs[kind]
        edge_type = c_name(DML_GRAPH_EDGE_TYPE[kind.upper()])
        lines.append(f"    static {struct} {kind}_edge_descs[{len(edges)}];")
        lines.append(f"    static DML_GRAPH_EDGE_DESC {kind}_edges[{len(edges)}];")
        for j, edge in enumerate(edges):
            e = edge.Desc
            fields = [f"{int(getattr(e, f.name))}u" for f in dataclasses.fields(e) if f.name != "Name"]
            lines.append(f"    {kind}_edge_descs[{j}] = {struct}{{{', '.join(fields)}, {c_string(e.Name)}}};")
            lines.append(f"    {kind}_edges[{j}] = DML_GRAPH_EDGE_DESC{{{edge_type}, &{kind}_edge_descs[{j}]}};")
        arrays[kind] = (len(edges), f"{kind}_edges")
    lines.append(
        f"    *desc = DML_GRAPH_DESC{{{int(desc.InputCount)}u, {int(desc.OutputCount)}u, {len(nodes)}u, nodes, "
        f"{arrays['input'][0]}u, {arrays['input'][1]}, {arrays['output'][0]}u, {arrays['output'][1]}, "
        f"{arrays['intermediate'][0]}u, {arrays['intermediate'][1]}}};"
    )
    lines.append("}")
    parts.append("\n".join(lines) + "\n")
    program = _Program()
    program.add("graph", _graph_slots(program_or_desc, desc), {})
    create = [f"    IDMLOperator* node_operators[{count}] = {{}};"]
    for i, node in enumerate(nodes):
        if hasattr(node.Desc, "Operator"):
            create += [f"    DMLPY_CHECK(dml->CreateOperator({prefix}_node_{i}(), IID_PPV_ARGS(&node_operators[{i}])));", f"    objects.keep(node_operators[{i}]);"]
    create += [
        "    DML_GRAPH_DESC graph_desc;",
        f"    {prefix}_fill(node_operators, &graph_desc);",
        "    IDMLDevice1* dml1 = nullptr;  // CompileGraph is IDMLDevice1's (DML_FEATURE_LEVEL_2_1)",
        "    DMLPY_CHECK(dml->QueryInterface(IID_PPV_ARGS(&dml1)));",
        "    objects.keep(dml1);",
        "    DMLPY_CHECK(dml1->CompileGraph(&graph_desc, DML_EXECUTION_FLAG_NONE, IID_PPV_ARGS(&compiled[0])));",
        "    objects.keep(compiled[0]);",
    ]
    parts += [_HELPERS, recording_function(program, prefix, create, graph=True)]
    return header("\n".join(parts))


# ---------------------------------------------------------------------------------------
# The recording: what a Windows program does with the descs, as dmlpy's object model does it
# (Device.create_descriptor_heap, CommandList.set_descriptor_heaps / resource_barrier,
# CommandRecorder.record_dispatch; samples/01_average_pooling.py walks through the same steps).

_HELPERS = """#if !defined(DMLPY_TYPES_ONLY) && !defined(DMLPY_RECORDING_HELPERS_DEFINED)
#define DMLPY_RECORDING_HELPERS_DEFINED
#include <vector>
// The COM objects a recording function creates, released in reverse order when it returns.
struct dmlpy_com_objects {
    std::vector<IUnknown*> items;
    dmlpy_com_objects() = default;
    dmlpy_com_objects(const dmlpy_com_objects&) = delete;
    dmlpy_com_objects& operator=(const dmlpy_com_objects&) = delete;
    ~dmlpy_com_objects() { for (size_t i = items.size(); i-- > 0;) items[i]->Release(); }
    void keep(IUnknown* object) { if (object) items.push_back(object); }
};
#define DMLPY_CHECK(call) do { HRESULT dmlpy_hr_ = (call); if (FAILED(dmlpy_hr_)) return dmlpy_hr_; } while (0)

// A buffer DirectML can bind: default heap, unordered access allowed, created in the UNORDERED_ACCESS state.
inline HRESULT dmlpy_create_buffer(ID3D12Device* d3d, UINT64 size_in_bytes, ID3D12Resource** buffer)
{
    D3D12_HEAP_PROPERTIES heap = {};
    heap.Type = D3D12_HEAP_TYPE_DEFAULT;
    D3D12_RESOURCE_DESC desc = {};
    desc.Dimension = D3D12_RESOURCE_DIMENSION_BUFFER;
    desc.Width = (size_in_bytes + 3) & ~UINT64(3);  // DirectML binds buffers in 4-byte units
    desc.Height = 1;
    desc.DepthOrArraySize = 1;
    desc.MipLevels = 1;
    desc.Format = DXGI_FORMAT_UNKNOWN;
    desc.SampleDesc.Count = 1;
    desc.Layout = D3D12_TEXTURE_LAYOUT_ROW_MAJOR;
    desc.Flags = D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS;
    return d3d->CreateCommittedResource(&heap, D3D12_HEAP_FLAG_NONE, &desc, D3D12_RESOURCE_STATE_UNORDERED_ACCESS, nullptr, IID_PPV_ARGS(buffer));
}
#endif
"""


@dataclass(frozen=True)
class BufferUse:
    """Bytes ``[offset, offset + size)`` of the program's buffer ``buffer`` bound to one slot."""

    buffer: str
    offset: int = 0
    size: int | None = None  # None: the tensor's TotalTensorSizeInBytes


@dataclass
class Step:
    """One execute dispatch of a program: an operator desc and the buffers its tensor slots bind.

    ``bindings`` maps a slot name (``InputTensor``, ``OutputTensor``, ``InputTensors[1]``) to a buffer
    name or a ``BufferUse``; a slot left out gets a buffer of its own named ``<name>.<slot>``. Two steps
    naming one buffer share it: that is how one operator reads what another wrote.
    """

    name: str
    desc: Any
    bindings: Mapping[str, str | BufferUse] = field(default_factory=dict)


@dataclass
class _Slot:
    name: str
    use: BufferUse | None  # None: bound as DML_BINDING_TYPE_NONE (absent optional tensor)
    owned: bool = False


@dataclass
class _Dispatch:
    label: str
    inputs: list[_Slot]
    outputs: list[_Slot]


@dataclass
class Barrier:
    """A UAV barrier recorded before execute dispatch ``before`` (0 = the first), and why it is needed."""

    before: int
    reason: str


def _tensor_slots(desc: Any) -> tuple[list[tuple[str, Any, bool]], list[tuple[str, Any, bool]]]:
    wrapped = operator_desc(desc)
    spec = REGISTRY[wrapped.Type]
    inputs = [(name, tensor, is_owned_by_dml(tensor)) for name, tensor, _ in binding_slots(spec, wrapped.Desc, "input")]
    outputs = [(name, tensor, False) for name, tensor, _ in binding_slots(spec, wrapped.Desc, "output")]
    return inputs, outputs


def _buffer_size(tensor: Any) -> int:
    buffer = getattr(tensor, "Desc", tensor)
    return int(buffer.TotalTensorSizeInBytes)


class _Program:
    """The buffers and dispatches a recording function binds, with the buffers' sizes."""

    def __init__(self) -> None:
        self.buffers: dict[str, int] = {}
        self.described: dict[str, list[str]] = {}
        self.dispatches: list[_Dispatch] = []

    def use(self, binding: str | BufferUse | None, default: str, tensor: Any, what: str) -> BufferUse | None:
        if tensor is None:
            return None
        use = BufferUse(default) if binding is None else BufferUse(binding) if isinstance(binding, str) else binding
        size = _buffer_size(tensor) if use.size is None else int(use.size)
        use = BufferUse(use.buffer, int(use.offset), size)
        self.buffers[use.buffer] = max(self.buffers.get(use.buffer, 0), use.offset + size)
        self.described.setdefault(use.buffer, []).append(what)
        return use

    def add(self, label: str, slots: tuple[list[tuple[str, Any, bool]], list[tuple[str, Any, bool]]], bindings: Mapping[str, str | BufferUse]) -> None:
        unknown = set(bindings) - {name for name, _, _ in (*slots[0], *slots[1])}
        if unknown:
            msg = f"{label} has no slot {', '.join(sorted(unknown))}; its slots are {', '.join(name for name, _, _ in (*slots[0], *slots[1]))}"
            raise ValueError(msg)
        inputs = [_Slot(name, self.use(bindings.get(name), f"{label}.{name}", tensor, f"{label}.{name}"), owned) for name, tensor, owned in slots[0]]
        outputs = [_Slot(name, self.use(bindings.get(name), f"{label}.{name}", tensor, f"{label}.{name}")) for name, tensor, _ in slots[1]]
        self.dispatches.append(_Dispatch(label, inputs, outputs))

    def index(self, buffer: str) -> int:
        return list(self.buffers).index(buffer)


def plan_barriers(program: _Program) -> list[Barrier]:
    """Where the recording needs UAV barriers, by dmlpy's BARRIER.UAV_MISSING rule (``dmlpy.execution``).

    After the initializer, always: it writes the persistent resources the executes read, and their sizes
    are known only from the binding properties at run time. Before an execute, when it reads bytes of a
    buffer that a dispatch recorded since the last barrier wrote, or writes bytes such a dispatch read or
    wrote (``Access.conflicts``); each dispatch has its own temporary and persistent resources, so only the
    program's buffers can conflict.
    """
    tokens = {name: object() for name in program.buffers}  # stand-ins for the buffers: Access compares identity
    barriers = [Barrier(0, "the initializer wrote the persistent resources (and read the OWNED_BY_DML inputs) that the executes use")]
    pending: list[Access] = []
    for i, dispatch in enumerate(program.dispatches):
        accesses = [Access(tokens[s.use.buffer], s.use.offset, s.use.offset + int(s.use.size or 0), write, dispatch.label)  # type: ignore[arg-type]
                    for slots, write in ((dispatch.inputs, False), (dispatch.outputs, True)) for s in slots if s.use is not None and not s.owned]  # fmt: skip
        conflicts = [(old, new) for new in accesses for old in pending if new.conflicts(old)]
        if i > 0 and conflicts:
            old, new = conflicts[0]
            buffer = next(name for name, token in tokens.items() if token is new.buffer)
            verb = "writes" if new.write else "reads"
            earlier = "wrote" if old.write else "read"
            barriers.append(Barrier(i, f"{new.dispatch} {verb} bytes [{new.start}, {new.end}) of {buffer}, which {old.dispatch} {earlier}"))
            pending = []
        pending.extend(accesses)
    return barriers


def _comment(text: str) -> str:
    return text.replace("*/", "* /").replace("\n", " ")


def _binding_lines(program: _Program, slots: list[_Slot], var: str, indent: str) -> list[str]:
    """DML_BUFFER_BINDING / DML_BINDING_DESC arrays for ``slots``: ``var``_buffers and ``var``."""
    buffers, descs = [], []
    for i, slot in enumerate(slots):
        if slot.use is None or slot.owned:
            buffers.append("{nullptr, 0, 0}")
            descs.append("{DML_BINDING_TYPE_NONE, nullptr}")
        else:
            buffers.append(f"{{buffers[{program.index(slot.use.buffer)}], {slot.use.offset}, {slot.use.size}}}")
            descs.append(f"{{DML_BINDING_TYPE_BUFFER, &{var}_buffers[{i}]}}")
    names = ", ".join(s.name for s in slots)
    lines = [f"{indent}// {_comment(names)}"]
    if any(s.use is not None and not s.owned for s in slots):
        lines.append(f"{indent}const DML_BUFFER_BINDING {var}_buffers[{len(slots)}] = {{{', '.join(buffers)}}};")
    return [*lines, f"{indent}const DML_BINDING_DESC {var}[{len(slots)}] = {{{', '.join(descs)}}};"]


def recording_function(program: _Program, prefix: str, create: list[str], *, graph: bool = False) -> str:
    """The C++ function ``<prefix>_run`` that records and runs ``program`` on a DirectML device, with
    ``<prefix>_BUFFER_COUNT`` and ``<prefix>_BUFFER_SIZES`` for the buffers it binds.

    ``create`` are statements that fill ``IDMLCompiledOperator* compiled[N]`` (and keep them in ``objects``).
    """
    count = len(program.dispatches)
    barriers = {b.before: b for b in plan_barriers(program)}
    buffer_list = list(program.buffers.items())
    name = f"{prefix}_run"
    lines = [f"enum {{ {prefix}_BUFFER_COUNT = {len(buffer_list)} }};"]
    if buffer_list:
        lines.append(f"// The buffers {name}() binds, in the order it takes them; each at least this many bytes:")
        lines += [f"//   buffers[{i}] {_comment(buffer)}: {size} bytes, bound to {_comment(', '.join(program.described[buffer]))}" for i, (buffer, size) in enumerate(buffer_list)]
        lines.append(f"static const UINT64 {prefix}_BUFFER_SIZES[{len(buffer_list)}] = {{{', '.join(f'{size}ull' for _, size in buffer_list)}}};")
    lines += [
        f"// Records everything DirectML needs to run {'the graph' if graph else 'the operators'} into one command list and runs it on ``queue``:",
        "// compile, one initializer, a descriptor heap holding every binding table in its own range, the",
        "// persistent and temporary resources the binding properties ask for, SetDescriptorHeaps before the",
        "// first RecordDispatch, the initializer, a UAV barrier between dispatches that share memory, then",
        "// Close, ExecuteCommandLists and a fence wait. ``buffers`` are UAV buffers (dmlpy_create_buffer) in the",
        "// UNORDERED_ACCESS state; upload the inputs before and read the outputs after. Returns the first",
        "// failing HRESULT, else the device's GetDeviceRemovedReason().",
        f"inline HRESULT {name}(IDMLDevice* dml, ID3D12Device* d3d, ID3D12CommandQueue* queue, ID3D12Resource* const* buffers)",
        "{",
        "    dmlpy_com_objects objects;",
    ]
    if not buffer_list:
        lines.append("    (void)buffers;")
    lines += [
        f"    const UINT N = {count};",
        "",
        f"    // 1. Create and compile the {'graph' if graph else 'operators'}.",
        f"    IDMLCompiledOperator* compiled[{count}] = {{}};",
        *create,
        "",
        "    // 2. One initializer for every compiled operator (CreateOperatorInitializer).",
        "    IDMLOperatorInitializer* initializer = nullptr;",
        "    DMLPY_CHECK(dml->CreateOperatorInitializer(N, compiled, IID_PPV_ARGS(&initializer)));",
        "    objects.keep(initializer);",
        "",
        "    // 3. The binding properties: descriptors each binding table needs, temporary and persistent bytes.",
        f"    IDMLDispatchable* dispatchables[{count + 1}] = {{initializer{''.join(f', compiled[{i}]' for i in range(count))}}};",
        f"    DML_BINDING_PROPERTIES properties[{count + 1}];",
        f"    UINT first_descriptor[{count + 1}];",
        "    UINT descriptor_count = 0;",
        "    for (UINT t = 0; t <= N; ++t) {",
        "        properties[t] = dispatchables[t]->GetBindingProperties();",
        "        first_descriptor[t] = descriptor_count;  // each table its own range: live tables must not overlap",
        "        descriptor_count += properties[t].RequiredDescriptorCount;",
        "    }",
        "",
        "    // 4. A shader-visible CBV_SRV_UAV descriptor heap with room for every table's RequiredDescriptorCount.",
        "    D3D12_DESCRIPTOR_HEAP_DESC heap_desc = {D3D12_DESCRIPTOR_HEAP_TYPE_CBV_SRV_UAV, descriptor_count > 0 ? descriptor_count : 1, D3D12_DESCRIPTOR_HEAP_FLAG_SHADER_VISIBLE, 0};",
        "    ID3D12DescriptorHeap* heap = nullptr;",
        "    DMLPY_CHECK(d3d->CreateDescriptorHeap(&heap_desc, IID_PPV_ARGS(&heap)));",
        "    objects.keep(heap);",
        "    const UINT increment = d3d->GetDescriptorHandleIncrementSize(D3D12_DESCRIPTOR_HEAP_TYPE_CBV_SRV_UAV);",
        "    const D3D12_CPU_DESCRIPTOR_HANDLE cpu_start = heap->GetCPUDescriptorHandleForHeapStart();",
        "    const D3D12_GPU_DESCRIPTOR_HANDLE gpu_start = heap->GetGPUDescriptorHandleForHeapStart();",
        "",
        "    // 5. A binding table per dispatchable at its range of the heap; temporary and persistent resources.",
        f"    IDMLBindingTable* tables[{count + 1}] = {{}};",
        f"    ID3D12Resource* temporary[{count + 1}] = {{}};",
        f"    ID3D12Resource* persistent[{count + 1}] = {{}};  // [t] for compiled[t - 1]",
        f"    DML_BUFFER_BINDING persistent_bindings[{count + 1}] = {{}};",
        "    for (UINT t = 0; t <= N; ++t) {",
        "        DML_BINDING_TABLE_DESC table_desc = {};",
        "        table_desc.Dispatchable = dispatchables[t];",
        "        table_desc.CPUDescriptorHandle.ptr = cpu_start.ptr + SIZE_T(first_descriptor[t]) * increment;",
        "        table_desc.GPUDescriptorHandle.ptr = gpu_start.ptr + UINT64(first_descriptor[t]) * increment;",
        "        table_desc.SizeInDescriptors = properties[t].RequiredDescriptorCount;",
        "        DMLPY_CHECK(dml->CreateBindingTable(&table_desc, IID_PPV_ARGS(&tables[t])));",
        "        objects.keep(tables[t]);",
        "        if (properties[t].TemporaryResourceSize > 0) {  // each dispatch its own: no barrier needed for it",
        "            DMLPY_CHECK(dmlpy_create_buffer(d3d, properties[t].TemporaryResourceSize, &temporary[t]));",
        "            objects.keep(temporary[t]);",
        "            const DML_BUFFER_BINDING binding = {temporary[t], 0, properties[t].TemporaryResourceSize};",
        "            const DML_BINDING_DESC desc = {DML_BINDING_TYPE_BUFFER, &binding};",
        "            tables[t]->BindTemporaryResource(&desc);",
        "        }",
        "        if (t > 0 && properties[t].PersistentResourceSize > 0) {",
        "            DMLPY_CHECK(dmlpy_create_buffer(d3d, properties[t].PersistentResourceSize, &persistent[t]));",
        "            objects.keep(persistent[t]);",
        "            persistent_bindings[t] = DML_BUFFER_BINDING{persistent[t], 0, properties[t].PersistentResourceSize};",
        "            const DML_BINDING_DESC desc = {DML_BINDING_TYPE_BUFFER, &persistent_bindings[t]};",
        "            tables[t]->BindPersistentResource(&desc);",
        "        }",
        "    }",
        "",
        "    // 6. The initializer's bindings: inputs are each operator's OWNED_BY_DML tensors (a buffer array),",
        "    //    outputs each operator's persistent resource (NONE when it needs none).",
    ]
    owned = [[s for s in d.inputs if s.owned and s.use is not None] for d in program.dispatches]
    if any(owned):
        arrays = []
        for i, dispatch in enumerate(program.dispatches):
            if owned[i]:
                slots = [_Slot(s.name, s.use) if s.owned else _Slot(s.name, None) for s in dispatch.inputs]
                lines += _binding_lines(program, slots, f"owned_{i}", "    ")[:2]
                lines.append(f"    const DML_BUFFER_ARRAY_BINDING owned_{i} = {{{len(slots)}, owned_{i}_buffers}};")
                arrays.append(f"{{DML_BINDING_TYPE_BUFFER_ARRAY, &owned_{i}}}")
            else:
                arrays.append("{DML_BINDING_TYPE_NONE, nullptr}")
        lines += [f"    const DML_BINDING_DESC initializer_inputs[{count}] = {{{', '.join(arrays)}}};", "    tables[0]->BindInputs(N, initializer_inputs);"]
    lines += [
        f"    DML_BINDING_DESC initializer_outputs[{count}];",
        "    for (UINT i = 0; i < N; ++i)",
        "        initializer_outputs[i] = persistent[i + 1] ? DML_BINDING_DESC{DML_BINDING_TYPE_BUFFER, &persistent_bindings[i + 1]} : DML_BINDING_DESC{DML_BINDING_TYPE_NONE, nullptr};",
        "    tables[0]->BindOutputs(N, initializer_outputs);",
        "",
        "    // 7. The executes' bindings: the tensors in desc field order (OWNED_BY_DML and absent tensors NONE).",
    ]
    for i, dispatch in enumerate(program.dispatches):
        lines.append(f"    {{  // {_comment(dispatch.label)}")
        for slots, method, var in ((dispatch.inputs, "BindInputs", "inputs"), (dispatch.outputs, "BindOutputs", "outputs")):
            if slots:
                lines += _binding_lines(program, slots, var, "        ")
                lines.append(f"        tables[{i + 1}]->{method}({len(slots)}, {var});")
        lines.append("    }")
    lines += [
        "",
        "    // 8. A command list, and the recorder that records DirectML dispatches into it.",
        "    const D3D12_COMMAND_LIST_TYPE list_type = queue->GetDesc().Type;",
        "    ID3D12CommandAllocator* allocator = nullptr;",
        "    DMLPY_CHECK(d3d->CreateCommandAllocator(list_type, IID_PPV_ARGS(&allocator)));",
        "    objects.keep(allocator);",
        "    ID3D12GraphicsCommandList* list = nullptr;",
        "    DMLPY_CHECK(d3d->CreateCommandList(0, list_type, allocator, nullptr, IID_PPV_ARGS(&list)));",
        "    objects.keep(list);",
        "    IDMLCommandRecorder* recorder = nullptr;",
        "    DMLPY_CHECK(dml->CreateCommandRecorder(IID_PPV_ARGS(&recorder)));",
        "    objects.keep(recorder);",
        "",
        "    // 9. Record. The heap is set before any RecordDispatch whose binding table lives in it.",
        "    ID3D12DescriptorHeap* heaps[] = {heap};",
        "    list->SetDescriptorHeaps(1, heaps);",
        "    D3D12_RESOURCE_BARRIER uav_barrier = {};",
        "    uav_barrier.Type = D3D12_RESOURCE_BARRIER_TYPE_UAV;",
        "    uav_barrier.Flags = D3D12_RESOURCE_BARRIER_FLAG_NONE;",
        "    uav_barrier.UAV.pResource = nullptr;  // every UAV resource: later dispatches see every earlier write",
        "    recorder->RecordDispatch(list, initializer, tables[0]);",
    ]
    for i, dispatch in enumerate(program.dispatches):
        if i in barriers:
            lines += [f"    // UAV barrier: {_comment(barriers[i].reason)}", "    list->ResourceBarrier(1, &uav_barrier);"]
        lines.append(f"    recorder->RecordDispatch(list, compiled[{i}], tables[{i + 1}]);  // {_comment(dispatch.label)}")
    lines += [
        "",
        "    // 10. Close, execute, and wait on a fence until the GPU has finished.",
        "    DMLPY_CHECK(list->Close());",
        "    ID3D12CommandList* lists[] = {list};",
        "    queue->ExecuteCommandLists(1, lists);",
        "    ID3D12Fence* fence = nullptr;",
        "    DMLPY_CHECK(d3d->CreateFence(0, D3D12_FENCE_FLAG_NONE, IID_PPV_ARGS(&fence)));",
        "    objects.keep(fence);",
        "    DMLPY_CHECK(queue->Signal(fence, 1));",
        "    if (fence->GetCompletedValue() < 1) {",
        "        HANDLE event = CreateEventW(nullptr, FALSE, FALSE, nullptr);",
        "        if (event == nullptr) return HRESULT_FROM_WIN32(GetLastError());",
        "        const HRESULT waited = fence->SetEventOnCompletion(1, event);",
        "        if (SUCCEEDED(waited)) WaitForSingleObject(event, INFINITE);",
        "        CloseHandle(event);",
        "        DMLPY_CHECK(waited);",
        "    }",
        "    return dml->GetDeviceRemovedReason();",
        "}",
    ]
    return "#if !defined(DMLPY_TYPES_ONLY)\n" + "\n".join(lines) + "\n#endif\n"


def _compile_operators(builders: list[str]) -> list[str]:
    lines = []
    for i, builder in enumerate(builders):
        lines += [
            "    {",
            "        IDMLOperator* op = nullptr;",
            f"        DMLPY_CHECK(dml->CreateOperator({builder}(), IID_PPV_ARGS(&op)));",
            "        objects.keep(op);",
            f"        DMLPY_CHECK(dml->CompileOperator(op, DML_EXECUTION_FLAG_NONE, IID_PPV_ARGS(&compiled[{i}])));",
            f"        objects.keep(compiled[{i}]);",
            "    }",
        ]
    return lines


def plan_program(steps: Iterable[Step]) -> _Program:
    """The buffers (name -> bytes) and dispatches (slots -> buffer ranges) a recording of ``steps`` binds."""
    program = _Program()
    for step in steps:
        program.add(step.name, _tensor_slots(step.desc), step.bindings)
    return program


def emit_program(steps: Iterable[Step | tuple[str, Any] | tuple[str, Any, Mapping[str, str | BufferUse]]], prefix: str = "dmlpy") -> str:
    """A header that builds each step's desc and records the whole program: ``<prefix>_run(...)``.

    Steps run in order in one command list; steps binding one buffer depend on each other, and the
    recording puts a UAV barrier between them exactly where dmlpy's BARRIER.UAV_MISSING rule asks for one
    (``plan_barriers``). ``<prefix>_<step>()`` returns each step's DML_OPERATOR_DESC.
    """
    prefix = identifier(prefix)
    steps = [item if isinstance(item, Step) else Step(*item) for item in steps]
    program = plan_program(steps)
    parts: list[str] = []
    builders: list[str] = []
    seen: set[str] = set()
    for step in steps:
        function = identifier(f"{prefix}_{step.name}")
        while function in seen:
            function += "_"
        seen.add(function)
        parts.append(operator_function(step.desc, function))
        builders.append(function)
    if not builders:
        msg = "emit_program: no steps"
        raise ValueError(msg)
    parts.append(_HELPERS)
    parts.append(recording_function(program, prefix, _compile_operators(builders)))
    return header("\n".join(parts))


def _graph_slots(program: Any, desc: Any) -> tuple[list[tuple[str, Any, bool]], list[tuple[str, Any, bool]]]:
    compiled = getattr(program, "compiled", None)
    if compiled is None:
        device = next((node.Desc.Operator.device for node in desc.Nodes or () if hasattr(node.Desc, "Operator") and hasattr(node.Desc.Operator, "device")), None)
        plan = plan_graph(Checker(), desc, device)
        if plan is None:
            msg = "emit_graph: the graph desc is not valid (dmlpy.validate or Device.compile_graph says why)"
            raise ValueError(msg)
        inputs, outputs = plan.input_slots, plan.output_slots
    else:
        inputs, outputs = compiled.input_slots(), compiled.output_slots()
    return [(s.name, s.tensor, s.owned) for s in inputs], [(s.name, s.tensor, False) for s in outputs]


__all__ = [
    "BufferUse",
    "Step",
    "c_string",
    "desc_statements",
    "emit_graph",
    "emit_model",
    "emit_operator",
    "emit_operators",
    "emit_program",
    "get_include",
    "header",
    "identifier",
    "model_steps",
    "operator_function",
    "plan_barriers",
    "plan_program",
    "prelude",
    "recording_function",
    "target_version",
]
