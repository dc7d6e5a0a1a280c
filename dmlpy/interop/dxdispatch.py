"""DxDispatch JSON models: write what dmlpy validated so Windows can run it unchanged, and read them back.

A model (https://github.com/microsoft/DirectML/blob/master/DxDispatch/doc/Guide.md) has ``resources`` (buffers with initial values),
``dispatchables`` (DML operators with their desc in C field names) and ``commands``
(``dispatch``, ``print``, ``writeFile``). ``dxdispatch -d model.json`` on Windows runs it under
the real DirectML debug layer.

Writing:

* ``operator_model(desc, inputs)``: one operator, its inputs as resources, a dispatch and a
  ``print`` (or ``writeFile``) per output. OWNED_BY_DML inputs are bound in the dispatchable's own
  ``bindings`` (initialization-time bindings), all others in the dispatch command.
* ``graph_model(program, inputs)``: a compiled graph (a ``GraphProgram``, an imported ONNX model
  or a ``DML_GRAPH_DESC``) as one dispatchable per operator node, dispatched in topological order
  through intermediate resources, so a failing node can be isolated. DxDispatch cannot describe a
  multi-node DML graph in JSON; the nodes' descs, the data flow and the results are the same.
* ``operator_models(graph_model)``: the graph model split into one self-contained model per
  dispatch, each holding the node's real inputs (computed by running the graph in dmlpy).

Reading and running: ``read_model`` / ``run_model`` / ``check_model`` take DML operator
dispatchables and ONNX ones (``"type": "onnx"``, ``sourcePath`` a ``.onnx`` file, which DxDispatch
runs with onnxruntime's DirectML provider and dmlpy with ``dmlpy.interop.onnx``): each binding names
a graph input or output, optionally with the ``shape`` it is read or written as (a model with
symbolic dims is imported once per set of bound shapes), and an output may fill a ``"deferred"``
resource, created the output's size. HLSL and serialized-graph dispatchables need DxDispatch itself.

Spellings follow DxDispatch's parser (``JsonParsers.cpp`` and the generated per-operator parsers):
enums by their suffix (``"FLOAT32"``, ``"CROSS_CORRELATION"``), BOOL fields as JSON
``true``/``false``, flags as a list of suffixes, FLOAT fields as numbers or ``"nan"``/``"inf"``/
``"-inf"``, optional tensors left out, a fused activation written inline
(``{"Type": "ACTIVATION_LEAKY_RELU", "Alpha": 0.1}``) with its tensors left out (DxDispatch forces
them to NULL). Arrays of tensors and of fused activations (JOIN's ``InputTensors``, RNN's
``ActivationDescs``) are JSON arrays of those forms, and a tensor-array bind point takes one resource
per tensor; INT and FLOAT arrays are arrays of numbers; ``DML_SCALE_BIAS`` is ``{"Scale", "Bias"}``
(left out: NULL) and ``DML_SIZE_2D`` ``{"Width", "Height"}``; a ``DML_SCALAR_UNION`` is a number read
in the type of the ``DML_TENSOR_DATA_TYPE`` field before it (``MinMaxDataType``, ``ValueDataType``),
or an object naming the member that type selects (FLOAT16 selects ``UInt16``, the half's bits;
dmlpy writes that form only for a FLOAT16 NaN, whose payload a number cannot carry).

Files: ``write_model`` writes initial values larger than ``INLINE_LIMIT`` bytes (4 KiB) as
``<model stem>_<resource>.npy`` next to the JSON, referenced by ``{"sourcePath": ...}``, which
DxDispatch resolves against the model's directory; smaller values stay inline (a 2.6 MB ONNX
model's weights would otherwise become tens of MB of JSON). No ``$schema`` member is written:
DxDispatch ignores it, and the schema it would name (``_schema.json``) is not dmlpy's to ship.

Reading (``read_model``) parses the text as DxDispatch does (rapidjson with comments, trailing
commas and full-precision numbers; text after the top-level value is ignored; NaN literals and
numbers beyond a double are refused) and is as strict as DxDispatch: every field that is not
optional is required, member names are case-sensitive (``"type"``, never ``"Type"``, names a
dispatchable's kind), BOOL fields must be JSON booleans and integer fields JSON integers within
their C type (UINT64 up to 2**64 - 1). It is stricter in one way: members that are not fields of
the struct are errors (DxDispatch ignores them, so ``"inputTensor"`` would surface there as a
missing ``InputTensor``). ``sourcePath`` files are read as DxDispatch reads them: ``.npy`` typed
by its header (Fortran order refused), anything else as raw bytes of ``initialValuesDataType``.
``run_model`` executes the commands on a dmlpy device; ``check_model`` returns every finding
without executing anything.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import json
import math
import re
import shutil
import struct
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dmlpy.enums import (
    DML_EXECUTION_FLAGS,
    DML_FEATURE_LEVEL,
    DML_OPERATOR_TYPE,
    DML_TENSOR_DATA_TYPE,
    DML_TENSOR_FLAGS,
    DML_TENSOR_TYPE,
    HRESULT,
    c_name,
)
from dmlpy.errors import DmlError, DmlWarning, Finding
from dmlpy.execution import D3D12_RESOURCE_BARRIER
from dmlpy.rules import rule
from dmlpy.operators import DML_OPERATOR_DESC, REGISTRY, OperatorSpec, binding_slots, operator_desc, spec_for_desc, tensor_at
from dmlpy.structs import DML_SCALAR_UNION, FieldError, Kind, kind_of, normalized
from dmlpy.tensor import DML_BUFFER_TENSOR_DESC, DML_TENSOR_DESC, calc_buffer_tensor_size, numpy_dtype

INLINE_LIMIT = 4096  # bytes of initial values write_model keeps inline; larger ones go to .npy files

FORMAT = rule(
    "DXDISPATCH.FORMAT",
    "A DxDispatch model follows DxDispatch's documented format (members, C field names, enum spellings, BOOL as true/false).",
    source="DxDispatch doc/Guide.md, models/_schema.json, src/model/JsonParsers.cpp",
)
COMMAND_TYPES = ("dispatch", "print", "writeFile")
COMPILE_TYPES = ("DmlCompileOp", "DmlCompileGraph")
TENSOR_MEMBERS = ("Type", "Desc", "DataType", "Flags", "DimensionCount", "Sizes", "Strides", "TotalTensorSizeInBytes", "GuaranteedBaseOffsetAlignment")
FLOAT_TYPES = (DML_TENSOR_DATA_TYPE.FLOAT16, DML_TENSOR_DATA_TYPE.FLOAT32, DML_TENSOR_DATA_TYPE.FLOAT64)


class DxDispatchFormatError(ValueError):
    """A DxDispatch model that does not follow the documented format (DxDispatch would refuse it too)."""


# ---------------------------------------------------------------------------------------
# Enum spellings


def enum_json(value: Any, where: str = "value") -> str:
    """An enum member as DxDispatch spells it: the C name without its prefix (``"FLOAT32"``)."""
    if isinstance(value, enum.Enum) and value.name is not None and "|" not in value.name:
        return str(value.name)
    msg = f"{where} is {value!r}, which has no DirectML name, so a DxDispatch model cannot say it"
    raise ValueError(msg)


def flags_json(value: Any, flag_type: type[enum.Flag], where: str = "value") -> list[str]:
    """A flags value as a list of member suffixes (``["OWNED_BY_DML"]``; ``[]`` for none)."""
    as_int = int(value)
    members = [m for m in flag_type if m.value and as_int & m.value == m.value]
    if sum(m.value for m in members) != as_int:
        msg = f"{where} is {as_int:#x}, which has bits no {flag_type.__name__} member names"
        raise ValueError(msg)
    return [str(m.name) for m in members]


def _enum_table(enum_type: type[enum.Enum]) -> dict[str, enum.Enum]:
    table: dict[str, enum.Enum] = {}
    for name, member in enum_type.__members__.items():
        table[name] = member
        table[c_name(member).removesuffix(str(member.name)) + name] = member
    return table


def parse_enum(value: Any, enum_type: type[enum.Enum], where: str) -> Any:
    """A DxDispatch enum string (full C name or suffix, case-sensitive) -> the member."""
    if not isinstance(value, str):
        msg = f"{where}: {enum_type.__name__} values are strings such as {next(iter(enum_type.__members__))!r}, got {value!r}"
        raise DxDispatchFormatError(msg)
    member = _enum_table(enum_type).get(value)
    if member is None:
        msg = f"{where}: {value!r} is not a recognized value for {enum_type.__name__}"
        raise DxDispatchFormatError(msg)
    return member


def parse_flags(value: Any, flag_type: type[enum.Flag], where: str) -> Any:
    """A flags field: one string or an array of strings, ORed together ("NONE" is 0)."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list):
        msg = f"{where}: {flag_type.__name__} is a string or an array of strings, got {value!r}"
        raise DxDispatchFormatError(msg)
    result = flag_type(0)
    for item in items:
        result |= parse_enum(item, flag_type, where)
    return result


def parse_feature_level(text: str | int | DML_FEATURE_LEVEL) -> DML_FEATURE_LEVEL:
    """``"6.4"``, ``"6_4"``, ``"LEVEL_6_4"``, ``"DML_FEATURE_LEVEL_6_4"`` or ``0x6400`` -> the level."""
    if isinstance(text, int):
        return DML_FEATURE_LEVEL(text)
    cleaned = text.strip().upper().removeprefix("DML_FEATURE_LEVEL_").removeprefix("LEVEL_")
    match = re.fullmatch(r"(\d+)[._](\d+)", cleaned)
    if match:
        name = f"LEVEL_{int(match.group(1))}_{int(match.group(2))}"
        if name in DML_FEATURE_LEVEL.__members__:
            return DML_FEATURE_LEVEL[name]
    try:
        return DML_FEATURE_LEVEL(int(cleaned, 0))
    except ValueError:
        pass
    levels = ", ".join(level.dotted for level in DML_FEATURE_LEVEL)
    msg = f"{text!r} is not a DML_FEATURE_LEVEL; one of {levels}"
    raise ValueError(msg)


# ---------------------------------------------------------------------------------------
# Writing descs


def _float_json(value: float) -> float | str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return float(value)


def tensor_to_json(tensor: DML_TENSOR_DESC | DML_BUFFER_TENSOR_DESC, where: str = "tensor") -> dict[str, Any]:
    """The flattened tensor form: DataType, Sizes and whatever differs from DxDispatch's defaults.

    ``TotalTensorSizeInBytes`` is always written (DxDispatch would otherwise compute it, and the
    desc may deliberately say more); ``DimensionCount`` only when it is not ``len(Sizes)``.
    """
    tensor_type = DML_TENSOR_TYPE.BUFFER
    if isinstance(tensor, DML_TENSOR_DESC):
        tensor_type = tensor.Type
        tensor = tensor.buffer
    buf = tensor
    sizes = [int(s) for s in buf.Sizes or ()]
    out: dict[str, Any] = {}
    if tensor_type != DML_TENSOR_TYPE.BUFFER:
        out["Type"] = enum_json(tensor_type, f"{where}.Type")
    out["DataType"] = enum_json(buf.DataType, f"{where}.DataType")
    out["Sizes"] = sizes
    if buf.DimensionCount is not None and int(buf.DimensionCount) != len(sizes):
        out["DimensionCount"] = int(buf.DimensionCount)
    if buf.Strides is not None:
        out["Strides"] = [int(s) for s in buf.Strides]
    if int(buf.Flags):
        out["Flags"] = flags_json(buf.Flags, DML_TENSOR_FLAGS, f"{where}.Flags")
    total = buf.TotalTensorSizeInBytes
    out["TotalTensorSizeInBytes"] = int(total) if total else calc_buffer_tensor_size(buf.DataType, sizes, buf.Strides)
    if buf.GuaranteedBaseOffsetAlignment:
        out["GuaranteedBaseOffsetAlignment"] = int(buf.GuaranteedBaseOffsetAlignment)
    return out


def _normalized_or_raw(desc: Any, path: str) -> Any:
    try:
        return normalized(desc, path)
    except FieldError:
        return desc  # a value C could not hold either; write what is there and let the reader refuse it


def desc_to_json(desc: Any, *, fused: bool = False) -> dict[str, Any]:
    """An operator desc's fields, by C name, as DxDispatch's generated parsers read them.

    ``fused=True`` writes a FusedActivation's fields: its tensors are left out, because
    DxDispatch sets them to NULL whatever the JSON says.
    """
    name = type(desc).__name__
    desc = _normalized_or_raw(desc, name)
    return _struct_to_json(desc, name, fused=fused)


def _struct_to_json(desc: Any, name: str, *, fused: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {}
    data_type: Any = None  # the DML_TENSOR_DATA_TYPE field a following DML_SCALAR_UNION is read by
    for f in dataclasses.fields(desc):
        value = getattr(desc, f.name)
        kind = kind_of(f)
        if kind is Kind.ENUM and f.metadata["enum"] is DML_TENSOR_DATA_TYPE:
            data_type = value
        if value is None or (fused and kind is Kind.TENSOR):
            continue  # a _Maybenull_ field left out is NULL
        out[f.name] = _field_to_json(f, value, f"{name}.{f.name}", data_type)
    return out


def _field_to_json(f: dataclasses.Field[Any], value: Any, where: str, data_type: Any) -> Any:  # noqa: PLR0911
    kind = kind_of(f)
    if kind is Kind.TENSOR:
        return tensor_to_json(value, where)
    if kind is Kind.TENSOR_ARRAY:
        return [tensor_to_json(t, f"{where}[{i}]") for i, t in enumerate(value)]
    if kind is Kind.OPERATOR:
        return fused_to_json(value, where)
    if kind is Kind.OPERATOR_ARRAY:
        return [fused_to_json(o, f"{where}[{i}]") for i, o in enumerate(value)]
    if kind in (Kind.UINT_ARRAY, Kind.INT_ARRAY):
        return [int(v) for v in value]
    if kind is Kind.FLOAT_ARRAY:
        return [_float_json(float(v)) for v in value]
    if kind in (Kind.STRUCT, Kind.STRUCT_POINTER):
        return _struct_to_json(value, where)
    if kind is Kind.SCALAR_UNION:
        return scalar_to_json(value, data_type, where)
    if kind is Kind.BOOL:
        return bool(value)
    if kind is Kind.FLOAT:
        return _float_json(float(value))
    if kind is Kind.ENUM:
        return enum_json(value, where)
    if kind is Kind.FLAGS:
        return flags_json(value, f.metadata["enum"], where)
    return int(value)


# DxDispatch reads a DML_SCALAR_UNION through the member its DataType field names; FLOAT16 is
# the half's bits in UInt16 (written as a number, or as {"UInt16": bits} to give the bits).
SCALAR_MEMBER = {
    DML_TENSOR_DATA_TYPE.FLOAT16: ("UInt16", "<e"), DML_TENSOR_DATA_TYPE.FLOAT32: ("Float32", "<f"),
    DML_TENSOR_DATA_TYPE.FLOAT64: ("Float64", "<d"), DML_TENSOR_DATA_TYPE.UINT8: ("UInt8", "<B"),
    DML_TENSOR_DATA_TYPE.UINT16: ("UInt16", "<H"), DML_TENSOR_DATA_TYPE.UINT32: ("UInt32", "<I"),
    DML_TENSOR_DATA_TYPE.UINT64: ("UInt64", "<Q"), DML_TENSOR_DATA_TYPE.INT8: ("Int8", "<b"),
    DML_TENSOR_DATA_TYPE.INT16: ("Int16", "<h"), DML_TENSOR_DATA_TYPE.INT32: ("Int32", "<i"),
    DML_TENSOR_DATA_TYPE.INT64: ("Int64", "<q"),
}  # fmt: skip


def _scalar_member(data_type: Any, where: str, error: type[Exception]) -> tuple[str, str]:
    try:
        return SCALAR_MEMBER[data_type]
    except (KeyError, TypeError):
        supported = ", ".join(str(t.name) for t in SCALAR_MEMBER)
        msg = f"{where}: a DML_SCALAR_UNION is read by its data type field, which is {data_type!r}; DxDispatch reads {supported}"
        raise error(msg) from None


def scalar_to_json(value: DML_SCALAR_UNION, data_type: Any, where: str = "value") -> Any:
    """The union's memory read as ``data_type``: a number, as DxDispatch parses it."""
    member, fmt = _scalar_member(data_type, where, ValueError)
    if fmt in ("<f", "<d") and isinstance(getattr(value, member), float):
        return _float_json(getattr(value, member))  # the number as given, as a FLOAT field keeps it
    raw = value.to_bytes()[: struct.calcsize(fmt)]
    (number,) = struct.unpack(fmt, raw)
    if fmt == "<e":
        if math.isnan(number):  # a NaN's payload has no decimal spelling: give the bits
            return {"UInt16": struct.unpack("<H", raw)[0]}
        return _float_json(float(number))
    if fmt in ("<f", "<d"):
        return _float_json(float(number))
    return int(number)


def fused_to_json(value: Any, where: str = "FusedActivation") -> dict[str, Any]:
    """A FusedActivation: ``{"Type": "ACTIVATION_X", <fields>}``, or the long form with ``Desc``
    when the activation's struct itself has a field named ``Type``."""
    wrapped = operator_desc(value)
    fields = desc_to_json(wrapped.Desc, fused=True)
    type_name = enum_json(wrapped.Type, f"{where}.Type")
    if "Type" in fields:
        return {"Type": type_name, "Desc": fields}
    return {"Type": type_name, **fields}


def operator_dispatchable(
    desc: Any,
    *,
    init_bindings: Mapping[str, Any] | None = None,
    execution_flags: DML_EXECUTION_FLAGS | int = DML_EXECUTION_FLAGS.NONE,
    compile_type: str = "DmlCompileOp",
) -> dict[str, Any]:
    """The ``dispatchables`` entry for one operator: ``type``, ``desc`` and the optional members."""
    wrapped = operator_desc(desc)
    if compile_type not in COMPILE_TYPES:
        msg = f"compile_type is {compile_type!r}; DxDispatch accepts {' or '.join(COMPILE_TYPES)}"
        raise ValueError(msg)
    entry: dict[str, Any] = {"type": c_name(DML_OPERATOR_TYPE(wrapped.Type)), "desc": desc_to_json(wrapped.Desc)}
    if compile_type != "DmlCompileOp":
        entry["dmlCompileType"] = compile_type
    if int(execution_flags):
        entry["executionFlags"] = flags_json(execution_flags, DML_EXECUTION_FLAGS, "executionFlags")
    if init_bindings:
        entry["bindings"] = dict(init_bindings)
    return entry


# ---------------------------------------------------------------------------------------
# Writing resources and models


def resource(data_type: DML_TENSOR_DATA_TYPE | int, values: Any = None, *, size_in_bytes: int | None = None, count: int | None = None) -> dict[str, Any]:
    """A buffer resource: explicit ``values`` (floats may be NaN or infinite), or ``count`` zeros."""
    data_type = DML_TENSOR_DATA_TYPE(data_type)
    entry: dict[str, Any] = {"initialValuesDataType": enum_json(data_type, "initialValuesDataType")}
    if values is not None:
        try:
            flat = np.asarray(values, dtype=numpy_dtype(data_type)).reshape(-1)
        except OverflowError:
            msg = f"a value does not fit {data_type.name} ({np.iinfo(numpy_dtype(data_type)).min} to {np.iinfo(numpy_dtype(data_type)).max}), so no DxDispatch resource can hold it"
            raise ValueError(msg) from None
        if flat.size == 0:
            msg = "a resource's initialValues must not be empty"
            raise ValueError(msg)
        entry["initialValues"] = [_float_json(v) for v in flat.tolist()] if data_type in FLOAT_TYPES else [int(v) for v in flat.tolist()]
    else:
        entry["initialValues"] = {"valueCount": max(1, int(count or 1)), "value": 0}
    if size_in_bytes is not None:
        entry["sizeInBytes"] = int(size_in_bytes)
    return entry


def _buffer_of(tensor: Any) -> DML_BUFFER_TENSOR_DESC:
    return tensor.buffer if isinstance(tensor, DML_TENSOR_DESC) else tensor


def _buffer_size(buf: DML_BUFFER_TENSOR_DESC) -> int:
    total = int(buf.TotalTensorSizeInBytes or 0)
    return total or calc_buffer_tensor_size(buf.DataType, buf.Sizes, buf.Strides)


def memory_image(buf: DML_BUFFER_TENSOR_DESC, value: Any) -> np.ndarray:
    """The elements of the tensor's whole buffer range, with ``value`` laid out by its Strides.

    Elements the tensor never reaches are 0. The result is typed by the tensor's DataType and
    covers ``TotalTensorSizeInBytes`` rounded down to whole elements.
    """
    from dmlpy.binding import Buffer  # noqa: PLC0415 - binding sits above tensor in the import order

    dtype = numpy_dtype(buf.DataType)
    buffer = Buffer(max(_buffer_size(buf), dtype.itemsize))
    sizes = tuple(int(s) for s in buf.Sizes or ())
    array = np.asarray(value)
    if array.shape != sizes and array.size == math.prod(sizes) and array.ndim != len(sizes):
        array = array.reshape(sizes)  # the same elements in DML's rank (an ONNX 1-D input lifted to 4-D)
    try:
        logical = np.broadcast_to(array, sizes)
    except ValueError:
        msg = f"an array of shape {array.shape} does not fit Sizes {sizes}"
        raise ValueError(msg) from None
    buffer.view(buf, writeable=True)[...] = logical
    usable = buffer.size // dtype.itemsize * dtype.itemsize
    return buffer.data[:usable].view(dtype)


def _output_command(kind: str, resource_name: str) -> dict[str, Any]:
    if kind == "writeFile":
        return {"type": "writeFile", "resource": resource_name, "targetPath": f"{_file_stem(resource_name)}.npy"}
    if kind == "print":
        return {"type": "print", "resource": resource_name}
    msg = f"output_command is {kind!r}; expected 'print' or 'writeFile'"
    raise ValueError(msg)


def _file_stem(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "resource"


def _tensor_slots(spec: OperatorSpec) -> tuple[list[str], list[str]]:
    return [s.name for s in spec.support.inputs], [s.name for s in spec.support.outputs]


def _flatten_arrays(inputs: Mapping[str, Any], arrays: set[str]) -> dict[str, Any]:
    """Inputs by binding slot: a sequence given for a tensor-array field becomes ``Field[0]``, ``Field[1]``, ..."""
    flat: dict[str, Any] = {}
    for key, value in inputs.items():
        if key in arrays and isinstance(value, (list, tuple)):
            flat.update({f"{key}[{i}]": v for i, v in enumerate(value)})
        else:
            flat[key] = value
    return flat


def operator_model(
    desc: Any,
    inputs: Mapping[str, Any],
    *,
    name: str = "op",
    output_command: str = "print",
    execution_flags: DML_EXECUTION_FLAGS | int = DML_EXECUTION_FLAGS.NONE,
    compile_type: str = "DmlCompileOp",
) -> dict[str, Any]:
    """A model that runs one operator on ``inputs`` (arrays by tensor field name) and shows its outputs.

    Input resources hold the tensors' whole buffer range with the values laid out as the desc's
    Strides say. OWNED_BY_DML inputs are bound in the dispatchable's ``bindings`` (at
    initialization); the others and the outputs in the dispatch command. Each output gets a
    ``print`` command, or a ``writeFile`` to ``<output>.npy`` with ``output_command="writeFile"``.
    """
    wrapped = operator_desc(desc)
    spec = REGISTRY[DML_OPERATOR_TYPE(wrapped.Type)]
    inner = _normalized_or_raw(wrapped.Desc, spec.c_struct)
    # a tensor array (JOIN's InputTensors, SPLIT's OutputTensors) binds one resource per element, named by its
    # binding slot ("InputTensors[1]"); its inputs come as one sequence or element by element under those names
    arrays = {s.name for s in spec.support.slots if s.array}
    inputs = _flatten_arrays(inputs, arrays)
    present_inputs = [slot for slot, tensor, _ in binding_slots(spec, inner, "input") if tensor is not None]
    missing = [slot for slot in present_inputs if slot not in inputs]
    unknown = sorted(set(inputs) - set(present_inputs))
    if missing or unknown:
        msg = f"{spec.c_struct} takes {', '.join(present_inputs)}" + (f"; missing: {', '.join(missing)}" if missing else "") + (f"; not inputs of this desc: {', '.join(unknown)}" if unknown else "")
        raise TypeError(msg)
    resources: dict[str, Any] = {}
    init_bindings: dict[str, Any] = {}
    dispatch_bindings: dict[str, Any] = {}

    def bind(bindings: dict[str, Any], slot: str) -> None:
        point, _, index = slot.partition("[")
        if index:
            bindings.setdefault(point, []).append(slot)
        else:
            bindings[point] = slot

    for slot in present_inputs:
        buf = _buffer_of(tensor_at(inner, slot))
        resources[slot] = resource(buf.DataType, memory_image(buf, inputs[slot]), size_in_bytes=_buffer_size(buf))
        bind(init_bindings if int(buf.Flags) & DML_TENSOR_FLAGS.OWNED_BY_DML else dispatch_bindings, slot)
    outputs = []
    for slot, tensor, _ in binding_slots(spec, inner, "output"):
        if tensor is None:
            continue
        buf = _buffer_of(tensor)
        size = _buffer_size(buf)
        resources[slot] = resource(buf.DataType, count=max(1, size // numpy_dtype(buf.DataType).itemsize), size_in_bytes=size)
        bind(dispatch_bindings, slot)
        outputs.append(slot)
    dispatchable = operator_dispatchable(wrapped, init_bindings=init_bindings, execution_flags=execution_flags, compile_type=compile_type)
    commands: list[dict[str, Any]] = [{"type": "dispatch", "dispatchable": name, "bindings": dispatch_bindings}]
    commands += [_output_command(output_command, slot) for slot in outputs]
    return {"resources": resources, "dispatchables": {name: dispatchable}, "commands": commands}


# ---------------------------------------------------------------------------------------
# Graphs


@dataclass
class _GraphNode:
    index: int
    name: str
    desc: Any | None  # operator desc (normalized), None for a constant node
    spec: OperatorSpec | None
    constant: bytes | None = None


def _graph_parts(graph: Any, input_names: Sequence[str] | None, output_names: Sequence[str] | None) -> tuple[Any, list[str], list[str]]:
    from dmlpy.graph import DML_GRAPH_DESC  # noqa: PLC0415 - graph sits above interop's own imports

    if hasattr(graph, "program"):
        graph = graph.program  # an imported ONNX model: its program's inputs include OWNED_BY_DML weights
    if hasattr(graph, "graph_desc"):
        desc = graph.graph_desc
        input_names = list(input_names or getattr(graph, "input_names", None) or [])
        output_names = list(output_names or getattr(graph, "output_names", None) or [])
    elif isinstance(graph, DML_GRAPH_DESC):
        desc = graph
    else:
        msg = f"graph_model takes a GraphProgram, an imported model or a DML_GRAPH_DESC, not {type(graph).__name__}"
        raise TypeError(msg)
    in_count, out_count = int(desc.InputCount), int(desc.OutputCount)
    if not input_names:
        named = {int(e.Desc.GraphInputIndex): e.Desc.Name for e in desc.InputEdges or () if e.Desc.Name}
        input_names = [named.get(g) or f"input{g}" for g in range(in_count)]
    if not output_names:
        named = {int(e.Desc.GraphOutputIndex): e.Desc.Name for e in desc.OutputEdges or () if e.Desc.Name}
        output_names = [named.get(g) or f"output{g}" for g in range(out_count)]
    if len(input_names) != in_count or len(output_names) != out_count:
        msg = f"the graph has {in_count} inputs and {out_count} outputs; got {len(input_names)} input names and {len(output_names)} output names"
        raise ValueError(msg)
    return desc, list(input_names), list(output_names)


def _graph_nodes(desc: Any) -> list[_GraphNode]:
    nodes = []
    for i, node in enumerate(desc.Nodes or ()):
        inner = node.Desc
        if hasattr(inner, "Operator"):
            op = inner.Operator
            op_desc = getattr(op, "desc", op)
            spec = getattr(op, "spec", None) or spec_for_desc(op_desc)
            if spec is None:
                msg = f"graph node {i} holds {type(op_desc).__name__}, not an operator desc dmlpy knows"
                raise TypeError(msg)
            label = inner.Name or DML_OPERATOR_TYPE(spec.operator_type).name.lower()
            nodes.append(_GraphNode(i, f"node{i}_{label}", op_desc, spec))
        else:
            raw = inner.Data if isinstance(inner.Data, (bytes, bytearray)) else np.ascontiguousarray(inner.Data).reshape(-1).view(np.uint8).tobytes()
            data = bytes(raw[: int(inner.DataSize)])
            nodes.append(_GraphNode(i, inner.Name or f"constant{i}", None, None, data))
    return nodes


def _topological(nodes: list[_GraphNode], reads: Mapping[tuple[int, int], tuple[str, Any]]) -> list[int]:
    """Kahn's order of the operator nodes, lowest index first among the ready ones."""
    deps: dict[int, set[int]] = {n.index: set() for n in nodes if n.desc is not None}
    for (node, _), (kind, value) in reads.items():
        if kind == "node" and value[0] in deps:
            deps[node].add(value[0])
    order: list[int] = []
    done: set[int] = set()
    while len(order) < len(deps):
        ready = [i for i in sorted(deps) if i not in done and deps[i] <= done]
        if not ready:
            msg = "the graph has a cycle"
            raise ValueError(msg)
        order.append(ready[0])
        done.add(ready[0])
    return order


class _Names:
    """Unique resource and dispatchable names."""

    def __init__(self) -> None:
        self.taken: set[str] = set()

    def __call__(self, wanted: str) -> str:
        name, k = wanted, 1
        while name in self.taken:
            k += 1
            name = f"{wanted}_{k}"
        self.taken.add(name)
        return name


def graph_model(
    graph: Any,
    inputs: Mapping[str, Any],
    *,
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    output_command: str = "print",
    execution_flags: DML_EXECUTION_FLAGS | int = DML_EXECUTION_FLAGS.NONE,
) -> dict[str, Any]:
    """A model that runs a graph node by node: one dispatchable per operator node.

    ``graph`` is a ``GraphProgram`` (``GraphBuilder.compile``), an imported ONNX model (its
    ``.program``) or a ``DML_GRAPH_DESC`` whose operator nodes hold operators created by a
    device. ``inputs`` maps graph input names to arrays (OWNED_BY_DML inputs included: they
    become init-time bindings of every node that reads them). Graph outputs are resources named
    like the outputs; every other node output gets its own intermediate resource
    (``"<node>.<field>"``); constant nodes become resources. Dispatches follow a topological
    order; a node output that feeds several graph outputs is dispatched once per extra output.
    """
    desc, in_names, out_names = _graph_parts(graph, input_names, output_names)
    nodes = _graph_nodes(desc)
    by_index = {n.index: n for n in nodes}
    missing = [name for name in in_names if name not in inputs]
    if missing:
        msg = f"the graph takes {', '.join(in_names)}; missing: {', '.join(missing)}"
        raise TypeError(msg)

    def slots(node: _GraphNode) -> tuple[list[str], list[str]]:
        assert node.spec is not None
        return _tensor_slots(node.spec)

    reads: dict[tuple[int, int], tuple[str, Any]] = {}
    writes: dict[tuple[int, int], list[int]] = {}  # (node, out) -> graph outputs it writes
    for edge in desc.InputEdges or ():
        e = edge.Desc
        reads[(int(e.ToNodeIndex), int(e.ToNodeInputIndex))] = ("input", int(e.GraphInputIndex))
    for edge in desc.IntermediateEdges or ():
        e = edge.Desc
        reads[(int(e.ToNodeIndex), int(e.ToNodeInputIndex))] = ("node", (int(e.FromNodeIndex), int(e.FromNodeOutputIndex)))
    for edge in desc.OutputEdges or ():
        e = edge.Desc
        writes.setdefault((int(e.FromNodeIndex), int(e.FromNodeOutputIndex)), []).append(int(e.GraphOutputIndex))

    names = _Names()
    resources: dict[str, Any] = {}
    input_resource: dict[int, str] = {}
    output_resource: dict[int, str] = {}
    node_resource: dict[tuple[int, int], str] = {}
    for g, name in enumerate(in_names):
        consumers = sorted(key for key, (kind, value) in reads.items() if kind == "input" and value == g)
        if not consumers:
            continue  # an unused graph input: nothing to bind
        node = by_index[consumers[0][0]]
        buf = _buffer_of(getattr(node.desc, slots(node)[0][consumers[0][1]]))
        input_resource[g] = names(name)
        resources[input_resource[g]] = resource(buf.DataType, memory_image(buf, inputs[name]), size_in_bytes=_buffer_size(buf))
    for g, name in enumerate(out_names):
        output_resource[g] = names(name)
    dispatch_names = {n.index: names(n.name) for n in nodes if n.desc is not None}
    for n in nodes:
        if n.desc is None:
            continue
        for k, field_name in enumerate(slots(n)[1]):
            tensor = getattr(n.desc, field_name)
            if tensor is None:
                continue
            buf = _buffer_of(tensor)
            targets = sorted(writes.get((n.index, k), []))
            if targets:
                node_resource[(n.index, k)] = output_resource[targets[0]]
            else:
                node_resource[(n.index, k)] = names(f"{dispatch_names[n.index]}.{field_name}")
            size = _buffer_size(buf)
            for target in [node_resource[(n.index, k)]] + [output_resource[g] for g in targets[1:]]:
                resources[target] = resource(buf.DataType, count=max(1, size // numpy_dtype(buf.DataType).itemsize), size_in_bytes=size)

    constant_resource: dict[int, str] = {}

    def constant(index: int, consumer: DML_BUFFER_TENSOR_DESC) -> str:
        if index not in constant_resource:
            data = by_index[index].constant or b"\0"
            dtype = numpy_dtype(consumer.DataType)
            data_type = DML_TENSOR_DATA_TYPE(consumer.DataType) if len(data) % dtype.itemsize == 0 else DML_TENSOR_DATA_TYPE.UINT8
            values = np.frombuffer(data, dtype=numpy_dtype(data_type))
            constant_resource[index] = names(by_index[index].name)
            resources[constant_resource[index]] = resource(data_type, values, size_in_bytes=max(len(data), _buffer_size(consumer)))
        return constant_resource[index]

    dispatchables: dict[str, Any] = {}
    commands: list[dict[str, Any]] = []
    for i in _topological(nodes, reads):
        n = by_index[i]
        in_slots, out_slots = slots(n)
        bindings: dict[str, str] = {}
        init: dict[str, str] = {}
        for k, field_name in enumerate(in_slots):
            tensor = getattr(n.desc, field_name)
            source = reads.get((i, k))
            if tensor is None or source is None:
                continue
            buf = _buffer_of(tensor)
            kind, value = source
            if kind == "input":
                target = input_resource[value]
            elif by_index[value[0]].desc is None:
                target = constant(value[0], buf)
            else:
                target = node_resource[value]
            (init if int(buf.Flags) & DML_TENSOR_FLAGS.OWNED_BY_DML else bindings)[field_name] = target
        for k, field_name in enumerate(out_slots):
            if (i, k) in node_resource:
                bindings[field_name] = node_resource[(i, k)]
        dispatchables[dispatch_names[i]] = operator_dispatchable(n.desc, init_bindings=init, execution_flags=execution_flags)
        commands.append({"type": "dispatch", "dispatchable": dispatch_names[i], "bindings": bindings})
        for k, field_name in enumerate(out_slots):
            for g in sorted(writes.get((i, k), []))[1:]:  # the same node output as another graph output
                commands.append({"type": "dispatch", "dispatchable": dispatch_names[i], "bindings": {**bindings, field_name: output_resource[g]}})
    for g in range(len(out_names)):
        if output_resource[g] in resources:
            commands.append(_output_command(output_command, output_resource[g]))
    return {"resources": resources, "dispatchables": dispatchables, "commands": commands}


def operator_models(
    model: Mapping[str, Any], *, device: Any = None, output_command: str = "print", base_dir: str | Path | None = None
) -> dict[str, dict[str, Any]]:
    """Split a model into one self-contained model per dispatch command, keyed by dispatchable name.

    The model is run once in dmlpy, so each operator's model starts from the values its input
    resources held right before that dispatch (the node's real inputs in a graph); its outputs
    start at zero. A dispatchable dispatched several times keeps its first dispatch. ``base_dir``
    is where the model's relative ``sourcePath`` files are (the directory it was read from).
    """
    parsed = read_model(model, base_dir=base_dir)
    snapshots: dict[str, dict[str, np.ndarray]] = {}
    first: dict[str, dict[str, Any]] = {}

    def snapshot(_: int, command: dict[str, Any], buffers: Mapping[str, Any]) -> None:
        name = command["dispatchable"]
        if name in first:
            return
        first[name] = command
        bound = [*command.get("bindings", {}).values(), *parsed.init_bindings.get(name, {}).values()]
        snapshots[name] = {r: buffers[r].data.copy() for source in bound for r in _source_names(source)}

    run_model(parsed, device, before_dispatch=snapshot)
    out: dict[str, dict[str, Any]] = {}
    for name, command in first.items():
        spec = REGISTRY[operator_desc(parsed.dispatchables[name]).Type]
        in_names, out_names = _tensor_slots(spec)
        bound = {**command.get("bindings", {}), **parsed.init_bindings.get(name, {})}
        resources: dict[str, Any] = {}
        for slot, source in bound.items():
            for resource_name in _source_names(source):
                data_type = parsed.resource_types[resource_name]
                memory = snapshots[name][resource_name]
                if data_type == DML_TENSOR_DATA_TYPE.UNKNOWN:
                    data_type = DML_TENSOR_DATA_TYPE.UINT8
                dtype = numpy_dtype(data_type)
                if slot in in_names:
                    values = memory[: memory.size // dtype.itemsize * dtype.itemsize].view(dtype)
                    resources[resource_name] = resource(data_type, values, size_in_bytes=memory.size)
                elif resource_name not in resources:
                    resources[resource_name] = resource(data_type, count=max(1, memory.size // dtype.itemsize), size_in_bytes=memory.size)
        commands = [copy.deepcopy(command)]
        outputs = [source for slot, source in command.get("bindings", {}).items() if slot in out_names]
        commands += [_output_command(output_command, r) for source in outputs for r in _source_names(source)]
        out[name] = {"resources": resources, "dispatchables": {name: copy.deepcopy(model["dispatchables"][name])}, "commands": commands}
    return out


def _source_names(source: Any) -> list[str]:
    items = source if isinstance(source, list) else [source]
    return [item if isinstance(item, str) else item["name"] for item in items]


def write_model(model: Mapping[str, Any], path: str | Path, *, inline_limit: int = INLINE_LIMIT, base_dir: str | Path | None = None) -> Path:
    """Write ``model`` as indented JSON (strict JSON: no NaN literals) and return the path.

    A resource whose inline ``initialValues`` hold more than ``inline_limit`` bytes is written
    as ``<path stem>_<resource>.npy`` beside the JSON and referenced by ``sourcePath`` (relative,
    as DxDispatch resolves it against the model's directory). With ``base_dir`` (the directory
    a model read from a file came from), relative ``sourcePath`` files found there are copied
    beside the JSON the same way, so the written model is whole. ``model`` itself is not changed.
    """
    path = Path(path)
    resources = model.get("resources")
    if isinstance(resources, Mapping):
        taken: set[str] = set()
        external = {name: _external(entry, name, path, inline_limit, taken, base_dir) for name, entry in resources.items()}
        model = {**model, "resources": external}
    path.write_text(json.dumps(model, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return path


def _file_name(path: Path, name: str, suffix: str, taken: set[str]) -> str:
    stem = f"{path.stem}_{_file_stem(name)}"
    file_name, k = f"{stem}{suffix}", 1
    while file_name in taken:
        k += 1
        file_name = f"{stem}_{k}{suffix}"
    taken.add(file_name)
    return file_name


def _external(entry: Any, name: str, path: Path, inline_limit: int, taken: set[str], base_dir: str | Path | None) -> Any:
    """The resource entry to write: unchanged, or with its values in a file beside ``path``."""
    if not isinstance(entry, Mapping):
        return entry
    values = entry.get("initialValues")
    if isinstance(values, Mapping) and isinstance(values.get("sourcePath"), str) and base_dir is not None:
        source = _resolve(Path(base_dir), values["sourcePath"])
        if not source.is_file() or source.resolve() == _resolve(path.parent, values["sourcePath"]).resolve():
            return entry  # missing (the reader will say so) or already where the new model finds it
        file_name = _file_name(path, name, source.suffix, taken)
        shutil.copyfile(source, path.parent / file_name)
        return {**entry, "initialValues": {**values, "sourcePath": file_name}}
    if not isinstance(values, list):
        return entry
    data_type = parse_enum(entry.get("initialValuesDataType", "UNKNOWN"), DML_TENSOR_DATA_TYPE, f"resources.{name}.initialValuesDataType")
    if data_type == DML_TENSOR_DATA_TYPE.UNKNOWN:
        return entry  # a typed list mixes element types; no .npy can hold it
    array = _typed_list(values, data_type, f"resources.{name}.initialValues")
    if array.nbytes <= inline_limit:
        return entry
    file_name = _file_name(path, name, ".npy", taken)
    np.save(path.parent / file_name, array, allow_pickle=False)
    return {**entry, "initialValues": {"sourcePath": file_name}}


# ---------------------------------------------------------------------------------------
# Reading JSON as DxDispatch's rapidjson settings do

# A string or a comment (so comment markers inside strings stay text).
_STRING_OR_COMMENT = re.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/', re.DOTALL)
# A string, or a comma whose next significant character closes its container.
_STRING_OR_TRAILING_COMMA = re.compile(r'"(?:[^"\\]|\\.)*"|,(?=\s*[\]}])')


def _blank_comment(match: re.Match[str]) -> str:
    text = match.group(0)
    if text.startswith('"'):
        return text
    return re.sub(r"[^\n]", " ", text)  # same length and lines, so error positions stay true


def _drop_trailing_comma(match: re.Match[str]) -> str:
    if match.group(0) != ",":
        return match.group(0)
    text, i = match.string, match.start() - 1
    while i >= 0 and text[i] in " \t\r\n":
        i -= 1
    # after "[", "{" or another comma there is no value to trail: leave it for json to refuse, as rapidjson does
    return match.group(0) if i < 0 or text[i] in "[{," else " "


def _first_member_wins(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    members: dict[str, Any] = {}
    for key, value in pairs:
        members.setdefault(key, value)  # rapidjson's FindMember finds the first of duplicate names
    return members


def _no_constant(name: str) -> Any:
    msg = f"{name} is not JSON (write \"nan\", \"inf\" or \"-inf\" as strings)"
    raise ValueError(msg)


def parse_json(text: str, where: str = "the model") -> Any:
    """The JSON value DxDispatch's parser reads from ``text``.

    As its rapidjson flags say: ``//`` and ``/* */`` comments and trailing commas are allowed,
    and parsing stops after the top-level value. NaN/Infinity literals are refused (numbers too
    large for a double become inf, which every number field refuses); of duplicate member names
    the first counts.
    """
    if "//" in text or "/*" in text:
        text = _STRING_OR_COMMENT.sub(_blank_comment, text)
    if re.search(r",\s*[\]}]", text):  # rare in written models; the pass below is slow on large ones
        text = _STRING_OR_TRAILING_COMMA.sub(_drop_trailing_comma, text)
    # a number too big for a double parses as inf here; _expect_float refuses it where a number is read
    decoder = json.JSONDecoder(object_pairs_hook=_first_member_wins, parse_constant=_no_constant)
    start = len(text) - len(text.lstrip(" \t\r\n"))
    try:
        value, _ = decoder.raw_decode(text, start)
    except json.JSONDecodeError as error:
        msg = f"{where}: not JSON: {error}"
        raise DxDispatchFormatError(msg) from None
    except ValueError as error:
        msg = f"{where}: not JSON DxDispatch parses: {error}"
        raise DxDispatchFormatError(msg) from None
    return value


# ---------------------------------------------------------------------------------------
# Reading descs


def _expect_uint(value: Any, where: str, limit: int = 2**32 - 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= limit:
        msg = f"{where}: expected an unsigned integer, got {value!r}"
        raise DxDispatchFormatError(msg)
    return value


def _expect_float(value: Any, where: str) -> float:
    if isinstance(value, str) and value.lower() in ("nan", "inf", "-inf"):
        return float(value.lower())
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        msg = f"{where}: expected a number or 'NaN', 'Inf', '-Inf', got {value!r}"
        raise DxDispatchFormatError(msg)
    try:
        as_double = float(value)
    except OverflowError:
        as_double = math.inf
    if math.isinf(as_double):  # JSON has no infinity: a number this large, which rapidjson refuses
        msg = f"{where}: {value} does not fit a double; write infinity as 'inf' or '-inf'"
        raise DxDispatchFormatError(msg)
    if isinstance(value, int) and -(2**63) <= value < 2**64 and as_double != value:
        # rapidjson holds this as a 64-bit integer and takes it as a float only if a double holds it exactly
        msg = f"{where}: {value} is an integer no double holds exactly; write it as a decimal number"
        raise DxDispatchFormatError(msg)
    return as_double


def _expect_object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        msg = f"{where}: expected a JSON object, got {type(value).__name__}"
        raise DxDispatchFormatError(msg)
    return value


def _uint_array(value: Any, where: str) -> tuple[int, ...]:
    if not isinstance(value, list):
        msg = f"{where}: expected an array, got {value!r}"
        raise DxDispatchFormatError(msg)
    return tuple(_expect_uint(v, f"{where}[{i}]") for i, v in enumerate(value))


def tensor_from_json(obj: Any, where: str) -> DML_TENSOR_DESC:
    """A DML_TENSOR_DESC from its flattened or long (``{"Type", "Desc"}``) JSON form."""
    obj = _expect_object(obj, where)
    unknown = sorted(set(obj) - set(TENSOR_MEMBERS))
    if unknown:
        msg = f"{where}: {', '.join(unknown)} {'is not a member' if len(unknown) == 1 else 'are not members'} of a tensor desc ({', '.join(TENSOR_MEMBERS)}; case-sensitive)"
        raise DxDispatchFormatError(msg)
    tensor_type = parse_enum(obj["Type"], DML_TENSOR_TYPE, f"{where}.Type") if "Type" in obj else DML_TENSOR_TYPE.BUFFER
    body = _expect_object(obj["Desc"], f"{where}.Desc") if "Desc" in obj else obj
    path = f"{where}.Desc" if "Desc" in obj else where
    for required in ("DataType", "Sizes"):
        if required not in body:
            msg = f"{path}: field '{required}' is required"
            raise DxDispatchFormatError(msg)
    data_type = parse_enum(body["DataType"], DML_TENSOR_DATA_TYPE, f"{path}.DataType")
    sizes = _uint_array(body["Sizes"], f"{path}.Sizes")
    strides = _uint_array(body["Strides"], f"{path}.Strides") if "Strides" in body else None
    strides = strides or None  # an empty array is NULL, as in DxDispatch
    flags = parse_flags(body["Flags"], DML_TENSOR_FLAGS, f"{path}.Flags") if "Flags" in body else DML_TENSOR_FLAGS.NONE
    dimension_count = _expect_uint(body["DimensionCount"], f"{path}.DimensionCount") if "DimensionCount" in body else len(sizes)
    total = _expect_uint(body.get("TotalTensorSizeInBytes", 0), f"{path}.TotalTensorSizeInBytes", 2**64 - 1)
    if not total:
        try:
            total = calc_buffer_tensor_size(data_type, sizes, strides)
        except ValueError as error:
            msg = f"{path}: TotalTensorSizeInBytes is absent and DMLCalcBufferTensorSize fails: {error}"
            raise DxDispatchFormatError(msg) from None
    alignment = _expect_uint(body.get("GuaranteedBaseOffsetAlignment", 0), f"{path}.GuaranteedBaseOffsetAlignment")
    return DML_TENSOR_DESC(tensor_type, DML_BUFFER_TENSOR_DESC(data_type, flags, dimension_count, sizes, strides, total, alignment))


def _optional_fields(spec: OperatorSpec) -> set[str]:
    optional = {slot.name for slot in spec.support.slots if slot.optional}
    optional |= {f.name for f in dataclasses.fields(spec.desc_class) if kind_of(f) is Kind.OPERATOR or f.metadata.get("optional")}
    return optional


def _unknown_members(obj: Mapping[str, Any], fields: Iterable[str], struct_name: str, where: str, allowed: Iterable[str] = ()) -> None:
    fields = list(fields)
    unknown = sorted(set(obj) - set(fields) - set(allowed))
    if unknown:
        hints = [f"{u} (did you mean {next(n for n in fields if n.lower() == u.lower())}?)" if any(n.lower() == u.lower() for n in fields) else u for u in unknown]
        msg = f"{where}: {', '.join(hints)} {'is not a field' if len(unknown) == 1 else 'are not fields'} of {struct_name} (field names are case-sensitive)"
        raise DxDispatchFormatError(msg)


def desc_from_json(op_type: Any, obj: Any, where: str, *, fused: bool = False) -> Any:
    """The operator desc for ``op_type`` from its JSON fields (the reverse of ``desc_to_json``).

    ``fused=True`` reads a FusedActivation: tensor fields are NULL whatever the JSON says, as in
    DxDispatch.
    """
    operator = parse_enum(op_type, DML_OPERATOR_TYPE, f"{where}.type")
    spec = REGISTRY.get(operator)
    if spec is None:
        msg = f"{where}: {c_name(operator)} has no desc struct"
        raise DxDispatchFormatError(msg)
    obj = _expect_object(obj, f"{where}.desc")
    return _struct_from_json(spec.desc_class, obj, f"{where}.desc", _optional_fields(spec), struct_name=spec.c_struct, fused=fused)


def _struct_from_json(struct_class: type, obj: Mapping[str, Any], where: str, optional: set[str], *, struct_name: str | None = None, fused: bool = False) -> Any:
    fields = {f.name: f for f in dataclasses.fields(struct_class)}
    _unknown_members(obj, fields, struct_name or struct_class.__name__, where, {"Type"} if fused else ())
    values: dict[str, Any] = {}
    data_type: Any = None
    for name, f in fields.items():
        kind = kind_of(f)
        if fused and kind is Kind.TENSOR:
            continue
        path = f"{where}.{name}"
        if name not in obj:
            if name in optional:
                continue
            msg = f"{path}: field '{name}' is required"
            raise DxDispatchFormatError(msg)
        values[name] = _field_from_json(f, obj[name], path, data_type)
        if kind is Kind.ENUM and f.metadata["enum"] is DML_TENSOR_DATA_TYPE:
            data_type = values[name]
    return struct_class(**values)


def _json_array(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        msg = f"{where}: expected an array, got {value!r}"
        raise DxDispatchFormatError(msg)
    return value


def _field_from_json(f: dataclasses.Field[Any], value: Any, path: str, data_type: Any) -> Any:  # noqa: PLR0911
    kind = kind_of(f)
    if kind is Kind.TENSOR:
        return tensor_from_json(value, path)
    if kind is Kind.TENSOR_ARRAY:
        return tuple(tensor_from_json(t, f"{path}[{i}]") for i, t in enumerate(_json_array(value, path)))
    if kind is Kind.OPERATOR:
        return fused_from_json(value, path)
    if kind is Kind.OPERATOR_ARRAY:
        return tuple(fused_from_json(o, f"{path}[{i}]") for i, o in enumerate(_json_array(value, path)))
    if kind is Kind.BOOL:
        if not isinstance(value, bool):
            msg = f"{path}: BOOL fields are JSON true/false, got {value!r}"
            raise DxDispatchFormatError(msg)
        return int(value)
    if kind is Kind.ENUM:
        return parse_enum(value, f.metadata["enum"], path)
    if kind is Kind.FLAGS:
        return parse_flags(value, f.metadata["enum"], path)
    if kind is Kind.UINT_ARRAY:
        return _uint_array(value, path)
    if kind is Kind.INT_ARRAY:
        return tuple(_expect_int(v, f"{path}[{i}]") for i, v in enumerate(_json_array(value, path)))
    if kind is Kind.FLOAT_ARRAY:
        return tuple(_expect_float(v, f"{path}[{i}]") for i, v in enumerate(_json_array(value, path)))
    if kind in (Kind.STRUCT, Kind.STRUCT_POINTER):
        return _struct_from_json(f.metadata["struct"], _expect_object(value, path), path, set())
    if kind is Kind.SCALAR_UNION:
        return scalar_from_json(value, data_type, path)
    if kind is Kind.FLOAT:
        return _expect_float(value, path)
    if kind is Kind.UINT64:
        return _expect_uint(value, path, 2**64 - 1)
    if kind is Kind.INT:
        return _expect_int(value, path)
    return _expect_uint(value, path)


def _expect_int(value: Any, where: str, low: int = -(2**31), high: int = 2**31 - 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        msg = f"{where}: expected an integer in [{low}, {high}], got {value!r}"
        raise DxDispatchFormatError(msg)
    return value


def scalar_from_json(value: Any, data_type: Any, where: str) -> DML_SCALAR_UNION:
    """A DML_SCALAR_UNION as DxDispatch reads it: a number in ``data_type``, or an object naming the
    member (``{"UInt16": 15360}``: for FLOAT16, the half's bits)."""
    member, fmt = _scalar_member(data_type, where, DxDispatchFormatError)
    if isinstance(value, dict):
        _unknown_members(value, [member], f"a {data_type.name} DML_SCALAR_UNION", where)
        if member not in value:
            msg = f"{where}: a {data_type.name} DML_SCALAR_UNION given as an object needs the member '{member}'"
            raise DxDispatchFormatError(msg)
        value = value[member]
        where = f"{where}.{member}"
        fmt = "<H" if fmt == "<e" else fmt
    if fmt == "<e":
        number = _expect_float(value, where)
        half = np.float16(np.float32(number))  # as DxDispatch: the double to a float, then to a half
        if math.isinf(half) and not math.isinf(number):
            msg = f"{where}: {number} does not fit a FLOAT16"
            raise DxDispatchFormatError(msg)
        return DML_SCALAR_UNION(UInt16=int(half.view(np.uint16)))
    if fmt in ("<f", "<d"):
        return DML_SCALAR_UNION(**{member: _expect_float(value, where)})
    bits = 8 * struct.calcsize(fmt)
    low, high = (0, 2**bits - 1) if member.startswith("U") else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    return DML_SCALAR_UNION(**{member: _expect_int(value, where, low, high)})


def fused_from_json(value: Any, where: str) -> DML_OPERATOR_DESC:
    """A FusedActivation in the inline (``{"Type": ..., <fields>}``) or long (``Desc``) form."""
    value = _expect_object(value, where)
    key = "Type" if "Type" in value else "type"  # DxDispatch's order
    if key not in value:
        msg = f"{where}: a fused activation needs a member 'Type' with the operator type"
        raise DxDispatchFormatError(msg)
    operator = parse_enum(value[key], DML_OPERATOR_TYPE, f"{where}.{key}")
    body = value["Desc"] if "Desc" in value else value.get("desc", {k: v for k, v in value.items() if k not in ("Type", "type")})
    return DML_OPERATOR_DESC(operator, desc_from_json(value[key], body, where, fused=True))


# ---------------------------------------------------------------------------------------
# Reading models


@dataclass
class Model:
    """A parsed DxDispatch model: buffers, operator descs and the commands to run."""

    resources: dict[str, np.ndarray]  # name -> the buffer's initial bytes (uint8)
    resource_types: dict[str, DML_TENSOR_DATA_TYPE]  # name -> initialValuesDataType (how print reads it)
    dispatchables: dict[str, Any]  # name -> operator desc
    init_bindings: dict[str, dict[str, Any]]  # name -> initialization-time bindings
    commands: list[dict[str, Any]]
    execution_flags: dict[str, DML_EXECUTION_FLAGS] = field(default_factory=dict)
    compile_types: dict[str, str] = field(default_factory=dict)
    base_dir: Path | None = None  # relative sourcePath/targetPath resolve here
    onnx_dispatchables: dict[str, Path] = field(default_factory=dict)  # name -> the .onnx file ("type": "onnx"), run by the importer
    deferred: set[str] = field(default_factory=set)  # resources ("initialValues": "deferred") an ONNX dispatch creates from its output


def _resolve(base: Path | None, relative: str) -> Path:
    candidate = Path(relative)
    if not candidate.is_absolute() and base is not None and (base / candidate).exists():
        return base / candidate
    return candidate


def _element_dtype(data_type: DML_TENSOR_DATA_TYPE, where: str) -> np.dtype[Any]:
    try:
        return numpy_dtype(data_type)
    except ValueError:
        msg = f"{where}: {data_type.name} values cannot be written by DxDispatch (it writes 8- to 64-bit elements)"
        raise DxDispatchFormatError(msg) from None


def _typed_list(values: list[Any], data_type: DML_TENSOR_DATA_TYPE, where: str, *, indexed: bool = True) -> np.ndarray:
    dtype = _element_dtype(data_type, where)

    def at(i: int) -> str:
        return f"{where}[{i}]" if indexed else where

    if data_type in FLOAT_TYPES:
        parsed: list[Any] = [_expect_float(v, at(i)) for i, v in enumerate(values)]
    else:
        parsed = []
        info = np.iinfo(dtype)
        for i, v in enumerate(values):
            if isinstance(v, bool) or not isinstance(v, int) or not info.min <= v <= info.max:
                msg = f"{at(i)}: expected an integer that fits {data_type.name}, got {v!r}"
                raise DxDispatchFormatError(msg)
            parsed.append(v)
    if data_type not in FLOAT_TYPES:
        return np.array(parsed, dtype=dtype)  # in range, so exact (UINT64 past 2**63 included)
    with np.errstate(over="ignore"):
        return np.array(parsed, dtype=np.float64).astype(dtype)  # a double past FLOAT32's range is inf, as C's cast


def _scalar(value: Any, data_type: DML_TENSOR_DATA_TYPE, where: str) -> Any:
    return _typed_list([value], data_type, where, indexed=False)[0]


def _read_npy(source: Path, where: str) -> tuple[DML_TENSOR_DATA_TYPE, np.ndarray]:
    """A .npy file's element type and bytes, as DxDispatch's NumPy reader takes them."""
    from dmlpy.tensor import as_data_type  # noqa: PLC0415

    try:
        array = np.load(source, allow_pickle=False)
    except ValueError as error:  # a pickled (object) array, or not a .npy file at all
        msg = f"{where}: {source} is not a .npy file DxDispatch reads: {error}"
        raise DxDispatchFormatError(msg) from None
    if array.ndim > 1 and array.flags.f_contiguous and not array.flags.c_contiguous:
        msg = f"{where}: {source} is in Fortran order, which DxDispatch refuses; save it with np.ascontiguousarray"
        raise DxDispatchFormatError(msg)
    if array.dtype == np.bool_:
        array = array.view(np.int8)  # NumPy's bool descr '|b1' reads as INT8 there
    native = array.astype(array.dtype.newbyteorder("="), copy=False)  # DxDispatch swaps big-endian data
    try:
        data_type = as_data_type(native.dtype)
    except TypeError:
        msg = f"{where}: {source} holds {array.dtype} elements, which no DML_TENSOR_DATA_TYPE is"
        raise DxDispatchFormatError(msg) from None
    return data_type, np.ascontiguousarray(native).reshape(-1).view(np.uint8)


def _initial_values(entry: Any, where: str, base: Path | None) -> tuple[DML_TENSOR_DATA_TYPE, np.ndarray]:
    entry = _expect_object(entry, where)
    data_type = parse_enum(entry["initialValuesDataType"], DML_TENSOR_DATA_TYPE, f"{where}.initialValuesDataType") if "initialValuesDataType" in entry else DML_TENSOR_DATA_TYPE.UNKNOWN

    def need_type() -> None:
        if data_type == DML_TENSOR_DATA_TYPE.UNKNOWN:
            msg = f"{where}: field 'initialValuesDataType' is required"
            raise DxDispatchFormatError(msg)

    if "initialValues" not in entry:
        msg = f"{where}: field 'initialValues' is required"
        raise DxDispatchFormatError(msg)
    values = entry["initialValues"]
    path = f"{where}.initialValues"
    if isinstance(values, list) and data_type == DML_TENSOR_DATA_TYPE.UNKNOWN:
        parts = []  # typed elements: [{"type": "UINT32", "value": 6}, ...]
        for i, item in enumerate(values):
            item = _expect_object(item, f"{path}[{i}]")
            item_type = parse_enum(item.get("type"), DML_TENSOR_DATA_TYPE, f"{path}[{i}].type")
            parts.append(np.atleast_1d(_scalar(item.get("value"), item_type, f"{path}[{i}].value")).view(np.uint8))
        raw = np.concatenate(parts) if parts else np.zeros(0, np.uint8)
    elif isinstance(values, list):
        raw = _typed_list(values, data_type, path).view(np.uint8)
    elif isinstance(values, dict) and "value" in values:
        if "valueStart" in values or "sourcePath" in values:
            msg = f"{path}: value, valueStart and sourcePath are mutually exclusive"
            raise DxDispatchFormatError(msg)
        need_type()
        count = _expect_uint(values.get("valueCount"), f"{path}.valueCount")
        raw = np.full(count, _scalar(values["value"], data_type, f"{path}.value"), dtype=_element_dtype(data_type, where)).view(np.uint8)
    elif isinstance(values, dict) and "valueStart" in values:
        need_type()
        count = _expect_uint(values.get("valueCount"), f"{path}.valueCount")
        dtype = _element_dtype(data_type, where)
        steps = np.full(count, _scalar(values.get("valueDelta"), data_type, f"{path}.valueDelta"), dtype=dtype)
        if count:
            steps[0] = _scalar(values["valueStart"], data_type, f"{path}.valueStart")
        with np.errstate(over="ignore"):
            raw = np.add.accumulate(steps, dtype=dtype).view(np.uint8)  # value += delta in the element type, as DxDispatch
    elif isinstance(values, dict) and "sourcePath" in values:
        source = _resolve(base, str(values["sourcePath"]))
        try:
            if source.suffix.lower() == ".npy":
                file_type, raw = _read_npy(source, path)
                if data_type not in (DML_TENSOR_DATA_TYPE.UNKNOWN, file_type):
                    msg = f"{path}: {source} holds {file_type.name}, but initialValuesDataType is {data_type.name}"
                    raise DxDispatchFormatError(msg)
                data_type = file_type
            elif source.suffix.lower() in (".png", ".jpg", ".jpeg"):
                msg = f"{path}: image sources are not supported by dmlpy"
                raise DxDispatchFormatError(msg)
            else:
                need_type()
                raw = np.fromfile(source, dtype=np.uint8)
        except OSError as error:
            msg = f"{path}: cannot read {source}: {error}"
            raise DxDispatchFormatError(msg) from None
    elif values == "deferred":
        msg = f"{path}: deferred resources are not supported by dmlpy"
        raise DxDispatchFormatError(msg)
    else:
        msg = f"{path}: must be an array of numbers, an object (value, valueStart or sourcePath), or deferred"
        raise DxDispatchFormatError(msg)
    if raw.size == 0:
        msg = f"{path}: must be non-empty"
        raise DxDispatchFormatError(msg)
    offset = _expect_uint(entry.get("initialValuesOffsetInBytes", 0), f"{where}.initialValuesOffsetInBytes", 2**64 - 1)
    if "sizeInBytes" in entry:
        size = _expect_uint(entry["sizeInBytes"], f"{where}.sizeInBytes", 2**64 - 1)
    else:
        size = (raw.size + 3) & ~3  # rounded up to 4 bytes unless given explicitly
    if raw.size + offset > size:
        msg = f"{where}: the buffer size ({size} bytes) is too small for the initialValues ({raw.size} bytes) at offset {offset} bytes"
        raise DxDispatchFormatError(msg)
    memory = np.zeros(size, dtype=np.uint8)
    memory[offset : offset + raw.size] = raw
    return data_type, memory


def _check_binding_source(value: Any, resources: Mapping[str, Any], where: str) -> None:
    items = value if isinstance(value, list) else [value]
    for i, item in enumerate(items):
        path = f"{where}[{i}]" if isinstance(value, list) else where
        if isinstance(item, dict):
            name = item.get("name")
            for member in ("elementOffset", "elementSizeInBytes", "elementCount"):
                if member in item:
                    _expect_uint(item[member], f"{path}.{member}", 2**64 - 1)
        else:
            name = item
        if not isinstance(name, str):
            msg = f"{path}: a binding source is a resource name, an object with 'name', or an array of them; got {item!r}"
            raise DxDispatchFormatError(msg)
        if name not in resources:
            msg = f"{path}: no resource is named {name!r}"
            raise DxDispatchFormatError(msg)


def _check_bind_points(bindings: Any, desc: Any, resources: Mapping[str, Any], where: str, *, inputs_only: bool = False) -> dict[str, Any]:
    bindings = _expect_object(bindings, where)
    spec = REGISTRY[operator_desc(desc).Type]
    in_names, out_names = _tensor_slots(spec)
    points = in_names if inputs_only else in_names + out_names
    for point, source in bindings.items():
        if point not in points:
            what = "input bind point (initialization binds inputs only)" if inputs_only and point in out_names else "bind point"
            msg = f"{where}.{point}: {spec.c_struct} has no {what} {point!r} (its {'input ' if inputs_only else ''}bind points are {', '.join(points)})"
            raise DxDispatchFormatError(msg)
        count = _bind_point_count(desc, point)
        if isinstance(source, list) and len(source) != count:
            msg = f"{where}.{point}: the bind point takes {count} resource{'s' if count != 1 else ''}, got {len(source)}"
            raise DxDispatchFormatError(msg)
        _check_binding_source(source, resources, f"{where}.{point}")
    return dict(bindings)


def _bind_point_count(desc: Any, point: str) -> int:
    """How many resources a bind point takes: one per tensor of an array field (JOIN's InputTensors),
    as DxDispatch sizes it from the array's count field; one otherwise."""
    inner = operator_desc(desc).Desc
    kinds = {f.name: kind_of(f) for f in dataclasses.fields(inner)}
    if kinds.get(point) is Kind.TENSOR_ARRAY:
        return len(getattr(inner, point) or ())
    return 1


def read_model(source: str | Path | Mapping[str, Any], *, base_dir: str | Path | None = None) -> Model:
    """Parse a DxDispatch model (a path or the loaded JSON) into descs and buffers.

    Raises ``DxDispatchFormatError`` for anything DxDispatch would refuse to parse, and for
    dispatchables other than DML operators dmlpy emulates.
    """
    if isinstance(source, (str, Path)):
        path = Path(source)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as error:
            msg = f"cannot read {path}: {error.strerror or error}"
            raise DxDispatchFormatError(msg) from None
        model = parse_json(text, str(path))
        base = Path(base_dir) if base_dir is not None else path.parent
    else:
        model = source
        base = Path(base_dir) if base_dir is not None else None
    model = _expect_object(model, "the model")
    for required, kind in (("resources", dict), ("dispatchables", dict), ("commands", list)):
        if not isinstance(model.get(required), kind):
            msg = f"a DxDispatch model needs {'an object' if kind is dict else 'an array'} named '{required}'"
            raise DxDispatchFormatError(msg)
    resources, types, deferred = {}, {}, set()
    for name, entry in model["resources"].items():
        if isinstance(entry, dict) and entry.get("initialValues") == "deferred":  # made by the dispatch that writes it (ONNX outputs)
            where = f"resources.{name}"
            types[name] = parse_enum(entry["initialValuesDataType"], DML_TENSOR_DATA_TYPE, f"{where}.initialValuesDataType") if "initialValuesDataType" in entry else DML_TENSOR_DATA_TYPE.UNKNOWN
            deferred.add(name)
            continue
        types[name], resources[name] = _initial_values(entry, f"resources.{name}", base)
    onnx_dispatchables: dict[str, Path] = {}
    dispatchables: dict[str, Any] = {}
    init_bindings: dict[str, dict[str, Any]] = {}
    flags: dict[str, DML_EXECUTION_FLAGS] = {}
    compile_types: dict[str, str] = {}
    for name, entry in model["dispatchables"].items():
        where = f"dispatchables.{name}"
        entry = _expect_object(entry, where)
        kind = entry.get("type")
        if not isinstance(kind, str):
            hint = " ('Type' does not count: member names are case-sensitive)" if "Type" in entry else ""
            msg = f"{where}: field 'type' is required, a string (a DML_OPERATOR_TYPE name){hint}"
            raise DxDispatchFormatError(msg)
        if kind.lower() == "onnx":  # DxDispatch runs it with onnxruntime's DirectML provider; dmlpy with its ONNX importer
            if not isinstance(entry.get("sourcePath"), str):
                msg = f"{where}: field 'sourcePath' is required for an onnx dispatchable"
                raise DxDispatchFormatError(msg)
            onnx_dispatchables[name] = _resolve(base, entry["sourcePath"])
            continue
        if kind.lower() in ("hlsl", "dmlserializedgraph"):
            msg = f"{where}: {kind!r} dispatchables need DxDispatch itself; dmlpy runs DML operator and ONNX dispatchables"
            raise DxDispatchFormatError(msg)
        operator = entry["Type"] if "Type" in entry else kind  # DxDispatch's operator parser looks for "Type" first
        desc = entry["Desc"] if "Desc" in entry else entry.get("desc", entry)
        dispatchables[name] = desc_from_json(operator, desc, where)
        init_bindings[name] = _check_bind_points(entry.get("bindings", {}), dispatchables[name], resources, f"{where}.bindings", inputs_only=True)
        flags[name] = parse_flags(entry["executionFlags"], DML_EXECUTION_FLAGS, f"{where}.executionFlags") if "executionFlags" in entry else DML_EXECUTION_FLAGS.NONE
        compile_types[name] = entry.get("dmlCompileType", "DmlCompileOp")
        if compile_types[name] not in COMPILE_TYPES:
            msg = f"{where}.dmlCompileType: {compile_types[name]!r} is not a recognized value (DmlCompileOp or DmlCompileGraph)"
            raise DxDispatchFormatError(msg)
    commands = []
    for i, command in enumerate(model["commands"]):
        where = f"commands[{i}]"
        command = _expect_object(command, where)
        kind = command.get("type")
        if not isinstance(kind, str) or kind.lower() not in [c.lower() for c in COMMAND_TYPES]:
            msg = f"{where}.type is {kind!r}; expected dispatch, print or writeFile"
            raise DxDispatchFormatError(msg)
        kind = next(c for c in COMMAND_TYPES if c.lower() == kind.lower())
        if kind == "dispatch":
            target = command.get("dispatchable")
            if target not in dispatchables and target not in onnx_dispatchables:
                msg = f"{where}.dispatchable: no dispatchable is named {target!r}"
                raise DxDispatchFormatError(msg)
            if "bindings" not in command:
                msg = f"{where}: expected an object field named 'bindings'"
                raise DxDispatchFormatError(msg)
            if target in onnx_dispatchables:  # ONNX input and output names, checked against the model when it runs
                for point, bound in _expect_object(command["bindings"], f"{where}.bindings").items():
                    unknown = [n for n in _source_names(bound) if n not in resources and n not in deferred]
                    if unknown:
                        msg = f"{where}.bindings.{point}: no resource is named {unknown[0]!r}"
                        raise DxDispatchFormatError(msg)
            else:
                _check_bind_points(command["bindings"], dispatchables[target], resources, f"{where}.bindings")
        else:
            if "resource" not in command:
                msg = f"{where}: field 'resource' is required"
                raise DxDispatchFormatError(msg)
            if command["resource"] not in resources and command["resource"] not in deferred:
                msg = f"{where}.resource: no resource is named {command.get('resource')!r}"
                raise DxDispatchFormatError(msg)
            if kind == "writeFile" and not isinstance(command.get("targetPath"), str):
                msg = f"{where}: field 'targetPath' is required"
                raise DxDispatchFormatError(msg)
        commands.append({**command, "type": kind})
    return Model(resources, types, dispatchables, init_bindings, commands, flags, compile_types, base, onnx_dispatchables, deferred)


# ---------------------------------------------------------------------------------------
# Running and checking


@dataclass
class RunResult:
    """What ``run_model`` shows: printed and written resources by name, and where files went."""

    shown: dict[str, np.ndarray]  # resource name -> its elements, read with its initialValuesDataType
    written: dict[str, Path]  # resource name -> the file a writeFile command wrote
    resources: dict[str, np.ndarray] = field(default_factory=dict)  # every buffer's final bytes (keep_resources=True)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)  # shown resources read through the tensor desc that last wrote them

    def array(self, name: str) -> np.ndarray:
        """A shown resource in its tensor's logical shape when a dispatch wrote it, else flat."""
        return self.arrays.get(name, self.shown[name])


def _element_view(memory: np.ndarray, data_type: DML_TENSOR_DATA_TYPE) -> np.ndarray:
    if data_type == DML_TENSOR_DATA_TYPE.UNKNOWN:
        return memory.copy()
    dtype = numpy_dtype(data_type)
    return memory[: memory.size // dtype.itemsize * dtype.itemsize].view(dtype).copy()


def _binding(buffers: Mapping[str, Any], value: Any) -> Any:
    from dmlpy.binding import buffer_binding  # noqa: PLC0415

    item = value[0] if isinstance(value, list) else value
    if isinstance(item, str):
        return buffer_binding(buffers[item])
    buffer = buffers[item["name"]]
    offset = int(item.get("elementOffset", 0)) * int(item.get("elementSizeInBytes", 0))  # DxDispatch's DML binding
    return buffer_binding(buffer, offset, max(0, buffer.size - offset))


def _bound(bindings: Mapping[str, Any], slot: str) -> Any:
    """The binding source of a binding slot: ``InputTensors[1]`` is the second entry of the bind point
    ``InputTensors`` (a tensor array takes one resource per element); None when the model binds none."""
    point, _, index = slot.partition("[")
    value = bindings.get(point)
    if not index or value is None:
        return value
    i = int(index.rstrip("]"))
    items = value if isinstance(value, list) else [value]
    return items[i] if i < len(items) else None


def _prepare(device: Any, desc: Any, flags: DML_EXECUTION_FLAGS, compile_type: str) -> tuple[Any, list[str], list[str]]:
    """(compiled dispatchable, its input binding slots, its output binding slots) in binding order, tensor arrays flattened."""
    operator = device.create_operator(desc)
    in_names, out_names = [s.name for s in operator.slots("input")], [s.name for s in operator.slots("output")]
    if compile_type == "DmlCompileOp":
        return device.compile_operator(operator, flags), in_names, out_names
    from dmlpy.graph import graph_desc, input_edge, operator_node, output_edge  # noqa: PLC0415

    present_in = [k for k, s in enumerate(operator.slots("input")) if s.tensor is not None]
    present_out = [k for k, s in enumerate(operator.slots("output")) if s.tensor is not None]
    graph = graph_desc(
        len(present_in), len(present_out), [operator_node(operator)],
        [input_edge(g, 0, k) for g, k in enumerate(present_in)], [output_edge(0, k, g) for g, k in enumerate(present_out)], [],
    )  # fmt: skip
    compiled = device.compile_graph(graph, flags)
    return compiled, [in_names[k] for k in present_in], [out_names[k] for k in present_out]


def _written_tensors(model: Model, name: str, bindings: Mapping[str, Any]) -> dict[str, DML_BUFFER_TENSOR_DESC]:
    """Resource name -> the output tensor desc a dispatch writes it through (whole-resource bindings only)."""
    desc = model.dispatchables[name]
    wrapped = operator_desc(desc)
    found = {}
    for point, tensor, _ in binding_slots(REGISTRY[wrapped.Type], wrapped.Desc, "output"):
        source = _bound(bindings, point)
        item = source[0] if isinstance(source, list) and len(source) == 1 else source
        if isinstance(item, str) and tensor is not None:
            found[item] = _buffer_of(tensor)
    return found


def _dispatch(device: Any, model: Model, name: str, bindings: Mapping[str, Any], buffers: Mapping[str, Any], *, execute: bool = True) -> None:
    from dmlpy.binding import DML_BINDING_DESC, DML_BINDING_TABLE_DESC, array_binding, buffer_binding  # noqa: PLC0415

    init = model.init_bindings.get(name, {})
    compiled, in_points, out_points = _prepare(device, model.dispatchables[name], model.execution_flags.get(name, DML_EXECUTION_FLAGS.NONE), model.compile_types.get(name, "DmlCompileOp"))
    slots_in, slots_out = compiled.input_slots(), compiled.output_slots()
    props = compiled.get_binding_properties()
    persistent = device.create_buffer(props.PersistentResourceSize, "persistent") if props.PersistentResourceSize else None
    temporary = device.create_buffer(props.TemporaryResourceSize, "temporary") if props.TemporaryResourceSize else None
    recorder, command_list = device.create_command_recorder(), device.create_command_list()
    initializer = device.create_operator_initializer([compiled])
    init_table = device.create_binding_table(initializer)
    # as DxDispatch: every input named in the dispatchable's bindings is bound at initialization
    # (DirectML's rules then judge it); the others are NONE
    owned = [_binding(buffers, _bound(init, p)).Desc if _bound(init, p) is not None else None for p in in_points]
    init_table.bind_inputs([array_binding(owned)])
    init_table.bind_outputs([buffer_binding(persistent)])
    recorder.record_dispatch(command_list, initializer, init_table)
    command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav()])  # the dispatch after the initializer reads what it wrote
    table = device.create_binding_table(DML_BINDING_TABLE_DESC(compiled, 0, 0, props.RequiredDescriptorCount))
    table.bind_inputs([_binding(buffers, _bound(bindings, p)) if _bound(bindings, p) is not None and not s.owned else DML_BINDING_DESC() for s, p in zip(slots_in, in_points, strict=True)])
    table.bind_outputs([_binding(buffers, _bound(bindings, p)) if _bound(bindings, p) is not None else DML_BINDING_DESC() for p in out_points[: len(slots_out)]])
    table.bind_temporary_resource(buffer_binding(temporary) if temporary is not None else None)
    table.bind_persistent_resource(buffer_binding(persistent) if persistent is not None else None)
    recorder.record_dispatch(command_list, compiled, table)
    command_list.close()
    if execute:
        device.execute(command_list)


def _onnx_binding(source: Any, where: str) -> tuple[str, tuple[int, ...] | None]:
    """(resource name, shape or None) of an ONNX dispatch binding: "name" or {"name": ..., "shape": [...]}."""
    if isinstance(source, str):
        return source, None
    item = _expect_object(source, where)
    shape = item.get("shape")
    if shape is not None and (not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)):
        msg = f"{where}.shape: must be an array of non-negative integers"
        raise DxDispatchFormatError(msg)
    return item["name"], None if shape is None else tuple(shape)


def _dispatch_onnx(device: Any, model: Model, name: str, bindings: Mapping[str, Any], buffers: dict[str, Any], imported: dict[Any, Any], where: str) -> dict[str, np.ndarray]:
    """An ONNX dispatchable, as DxDispatch binds it: each graph input read from its resource (with the binding's
    shape, else the model's static one), the model run through dmlpy's importer, each bound output written to
    the start of its resource (a deferred one is made its size). Returns resource name -> the output array."""
    from dmlpy.binding import Buffer  # noqa: PLC0415
    from dmlpy.interop import onnx as dml_onnx  # noqa: PLC0415 - optional extra, sits beside this module

    onnx = dml_onnx._require_onnx()  # noqa: SLF001 - the one check that the onnx package is there
    proto = imported.get(name)
    if proto is None:
        proto = imported[name] = dml_onnx.load(str(model.onnx_dispatchables[name]))
    initializers = {t.name for t in proto.graph.initializer}
    feeds, shapes = {}, {}
    for value in proto.graph.input:
        if value.name in initializers:
            continue
        if value.name not in bindings:
            msg = f"{where}.bindings: the ONNX model's input {value.name!r} is not bound"
            raise DxDispatchFormatError(msg)
        resource_name, shape = _onnx_binding(bindings[value.name], f"{where}.bindings.{value.name}")
        if resource_name not in buffers:
            msg = f"{where}.bindings.{value.name}: deferred resource {resource_name!r} is read before a dispatch wrote it"
            raise DxDispatchFormatError(msg)
        tensor_type = value.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor_type.shape.dim]
        if shape is None:
            if any(d is None for d in dims):
                msg = f"{where}.bindings.{value.name}: the model's input has symbolic dims {dims}: the binding needs a 'shape'"
                raise DxDispatchFormatError(msg)
            shape = tuple(int(d) for d in dims)
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor_type.elem_type))
        count = int(np.prod(shape, dtype=np.int64))
        data = buffers[resource_name].data
        if count * dtype.itemsize > data.size:
            msg = f"{where}.bindings.{value.name}: shape {list(shape)} of {dtype.name} needs {count * dtype.itemsize} bytes; resource {resource_name!r} holds {data.size}"
            raise DxDispatchFormatError(msg)
        feeds[value.name] = data[: count * dtype.itemsize].view(dtype).reshape(shape).copy()
        shapes[value.name] = shape
    key = (name, tuple(sorted(shapes.items())))
    runner = imported.get(key)
    if runner is None:
        runner = imported[key] = dml_onnx.import_model(proto, device=device, input_shapes=shapes)
    outputs = runner.run(feeds)
    written = {}
    for output in proto.graph.output:
        if output.name not in bindings:
            continue
        resource_name, shape = _onnx_binding(bindings[output.name], f"{where}.bindings.{output.name}")
        array = np.ascontiguousarray(outputs[output.name])
        if shape is not None and tuple(shape) != array.shape:
            msg = f"{where}.bindings.{output.name}: the binding's shape is {list(shape)}; the model's output is {list(array.shape)}"
            raise DxDispatchFormatError(msg)
        raw = array.reshape(-1).view(np.uint8)
        if resource_name in model.deferred:
            buffers[resource_name] = Buffer(max(1, raw.size), resource_name)
        target = buffers[resource_name].data
        if raw.size > target.size:
            msg = f"{where}.bindings.{output.name}: the output needs {raw.size} bytes; resource {resource_name!r} holds {target.size}"
            raise DxDispatchFormatError(msg)
        target[: raw.size] = raw
        written[resource_name] = array
    return written


def _buffers(model: Model) -> dict[str, Any]:
    from dmlpy.binding import Buffer  # noqa: PLC0415

    buffers = {}
    for name, memory in model.resources.items():
        buffer = Buffer(memory.size, name)
        buffer.data[:] = memory
        buffers[name] = buffer
    return buffers


def run_model(
    model: Model | str | Path | Mapping[str, Any],
    device: Any = None,
    *,
    out_dir: str | Path | None = None,
    keep_resources: bool = False,
    progress: Callable[[int, int, str], None] | None = None,
    before_dispatch: Callable[[int, dict[str, Any], Mapping[str, Any]], None] | None = None,
) -> RunResult:
    """Execute a model's commands in order on a dmlpy device (a fresh default one if None).

    ``print`` commands show a resource's elements (read with its ``initialValuesDataType``);
    ``writeFile`` commands also write them to ``targetPath`` (``.npy``: a NumPy file with the
    ``dimensions`` shape if given; anything else: raw bytes), resolved against ``out_dir``.
    Without ``out_dir`` nothing is written. ``progress(step, total, label)`` is called before
    each command; ``before_dispatch(index, command, buffers)`` before each dispatch (buffers by
    resource name). Raises ``DmlError`` when DirectML would reject a desc or a binding.
    """
    from dmlpy.device import create_device  # noqa: PLC0415

    if not isinstance(model, Model):
        model = read_model(model)
    device = device or create_device()
    buffers = _buffers(model)
    shown: dict[str, np.ndarray] = {}
    arrays: dict[str, np.ndarray] = {}
    written: dict[str, Path] = {}
    writers: dict[str, DML_BUFFER_TENSOR_DESC] = {}
    onnx_arrays: dict[str, np.ndarray] = {}  # resource -> the ONNX output array a dispatch last wrote into it
    imported: dict[Any, Any] = {}  # (dispatchable, input shapes) -> the ImportedModel
    total = len(model.commands)
    for step, command in enumerate(model.commands, 1):
        label = f"{command['type']} {command.get('dispatchable', command.get('resource', ''))}"
        if progress is not None:
            progress(step, total, label)
        if command["type"] == "dispatch":
            if before_dispatch is not None:
                before_dispatch(step - 1, command, buffers)
            if command["dispatchable"] in model.onnx_dispatchables:
                for resource_name, array in _dispatch_onnx(device, model, command["dispatchable"], command["bindings"], buffers, imported, f"commands[{step - 1}]").items():
                    writers.pop(resource_name, None)
                    onnx_arrays[resource_name] = array
                continue
            _dispatch(device, model, command["dispatchable"], command["bindings"], buffers)
            for resource_name in _written_tensors(model, command["dispatchable"], command["bindings"]):
                onnx_arrays.pop(resource_name, None)
            writers.update(_written_tensors(model, command["dispatchable"], command["bindings"]))
            continue
        name = command["resource"]
        if name not in buffers:
            msg = f"commands[{step - 1}]: deferred resource {name!r} is printed before a dispatch wrote it"
            raise DxDispatchFormatError(msg)
        values = _element_view(buffers[name].data, model.resource_types[name])
        shown[name] = values
        if name in writers:
            arrays[name] = buffers[name].read(writers[name])
        elif name in onnx_arrays:
            arrays[name] = onnx_arrays[name]
        if command["type"] == "writeFile" and out_dir is not None:
            target = Path(out_dir) / command["targetPath"]
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.suffix.lower() == ".npy":
                dims = command.get("dimensions")
                array = values.reshape(dims) if dims and int(np.prod(dims)) == values.size else values
                np.save(target, array)
            else:
                buffers[name].data.tofile(target)
            written[name] = target
    resources = {name: buffer.data.copy() for name, buffer in buffers.items()} if keep_resources else {}
    return RunResult(shown, written, resources, arrays)


@dataclass(frozen=True)
class LocatedFinding:
    """A finding and the part of the model it belongs to (``dispatchables.<name>`` or ``commands[i]``)."""

    where: str
    finding: Finding

    def as_dict(self) -> dict[str, Any]:
        return {**self.finding.as_dict(), "where": self.where}


def check_model(model: Model | str | Path | Mapping[str, Any], *, feature_level: DML_FEATURE_LEVEL | int = DML_FEATURE_LEVEL.LEVEL_6_4, bindings: bool = True) -> list[LocatedFinding]:
    """Every finding for a model, without executing it.

    Each dispatchable's desc is validated at ``feature_level`` (all findings). With
    ``bindings=True`` each dispatch command whose desc has no errors is then recorded on a
    fresh device (create, compile, initialize, bind, record; never executed), so binding
    mistakes such as a resource smaller than its tensor are reported by rule as well.
    """
    from dmlpy.device import create_device, validate  # noqa: PLC0415

    if not isinstance(model, Model):
        model = read_model(model)
    found: list[LocatedFinding] = []
    failed: set[str] = set()
    for name, desc in model.dispatchables.items():
        report = validate(desc, feature_level=feature_level)
        found += [LocatedFinding(f"dispatchables.{name}", f) for f in report.findings]
        if report.errors:
            failed.add(name)
    for i, command in enumerate(model.commands):  # ONNX dispatchables: the importer's findings at each dispatch's shapes
        if command["type"] == "dispatch" and command["dispatchable"] in model.onnx_dispatchables:
            from dmlpy.interop import onnx as dml_onnx  # noqa: PLC0415 - optional extra

            proto = dml_onnx.load(str(model.onnx_dispatchables[command["dispatchable"]]))
            graph_inputs = {value.name for value in proto.graph.input}
            shapes = {point: shape for point, source in command["bindings"].items() if point in graph_inputs
                      for _, shape in [_onnx_binding(source, f"commands[{i}].bindings.{point}")] if shape is not None}  # fmt: skip
            report = dml_onnx.validate(proto, feature_level=feature_level, input_shapes=shapes)
            found += [LocatedFinding(f"commands[{i}]", f) for f in report.findings]
    failed.update(model.onnx_dispatchables)  # the recording check below is for operator dispatchables
    if not bindings:
        return found
    buffers = _buffers(model)
    for i, command in enumerate(model.commands):
        if command["type"] != "dispatch" or command["dispatchable"] in failed:
            continue
        try:
            with warnings.catch_warnings():  # the desc's warnings are already findings above
                warnings.simplefilter("ignore", DmlWarning)
                _dispatch(create_device(feature_level, backend="numpy"), model, command["dispatchable"], command["bindings"], buffers, execute=False)
        except DmlError as error:
            if error.hresult == HRESULT.E_NOTIMPL:  # valid, and already a NOT_EMULATED warning of the dispatchable
                continue
            found += [LocatedFinding(f"commands[{i}]", f) for f in error.findings]
    return found


def model_descs(model: Model) -> Iterable[tuple[str, Any]]:
    """(dispatchable name, operator desc) pairs in model order."""
    return model.dispatchables.items()


__all__ = [
    "COMMAND_TYPES",
    "DxDispatchFormatError",
    "LocatedFinding",
    "Model",
    "RunResult",
    "check_model",
    "desc_from_json",
    "desc_to_json",
    "enum_json",
    "flags_json",
    "fused_from_json",
    "fused_to_json",
    "graph_model",
    "memory_image",
    "model_descs",
    "operator_dispatchable",
    "operator_model",
    "operator_models",
    "parse_enum",
    "parse_feature_level",
    "parse_flags",
    "read_model",
    "resource",
    "run_model",
    "scalar_from_json",
    "scalar_to_json",
    "tensor_from_json",
    "tensor_to_json",
    "write_model",
]
