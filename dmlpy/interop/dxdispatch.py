"""DxDispatch JSON models: write what dmlpy validated so Windows can run it unchanged, and read them back.

A model (reference section 6) has ``resources`` (buffers with initial values),
``dispatchables`` (DML operators with their desc in C field names) and ``commands``
(dispatch, print, writeFile). ``dxdispatch -d model.json`` on Windows runs it under the
real DirectML debug layer. Operators are written one dispatchable each; a graph becomes its
operators dispatched in topological order through intermediate resources, so a failing node
can be isolated.

Spellings follow DxDispatch's parser: enums by their suffix (``"FLOAT32"``,
``"CROSS_CORRELATION"``), BOOL fields as JSON ``true``/``false``, flags as a list of
suffixes, optional tensors left out, a fused activation written inline
(``{"Type": "ACTIVATION_LEAKY_RELU", "Alpha": 0.1}``).
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dmlpy.enums import DML_OPERATOR_TYPE, DML_TENSOR_DATA_TYPE, DML_TENSOR_FLAGS, DML_TENSOR_TYPE, c_name
from dmlpy.operators import REGISTRY, DML_OPERATOR_DESC, operator_desc
from dmlpy.structs import Kind, kind_of
from dmlpy.tensor import DML_BUFFER_TENSOR_DESC, DML_TENSOR_DESC, calc_buffer_tensor_size, numpy_dtype

SCHEMA = "./_schema.json"


class DxDispatchFormatError(ValueError):
    """A DxDispatch model that does not follow the documented format."""


# ---------------------------------------------------------------------------------------
# Writing


def _enum_name(value: Any) -> Any:
    return value.name if isinstance(value, enum.Enum) else int(value)


def tensor_to_json(tensor: DML_TENSOR_DESC) -> dict[str, Any]:
    """The flattened tensor form: DataType, Sizes and whatever differs from DxDispatch's defaults."""
    buf = tensor.buffer
    out: dict[str, Any] = {"DataType": _enum_name(DML_TENSOR_DATA_TYPE(buf.DataType)), "Sizes": list(buf.Sizes or ())}
    if buf.Strides is not None:
        out["Strides"] = list(buf.Strides)
    flags = int(buf.Flags)
    if flags:
        out["Flags"] = [m.name for m in DML_TENSOR_FLAGS if m.value and flags & m.value]
    out["TotalTensorSizeInBytes"] = int(buf.TotalTensorSizeInBytes)
    if buf.GuaranteedBaseOffsetAlignment:
        out["GuaranteedBaseOffsetAlignment"] = int(buf.GuaranteedBaseOffsetAlignment)
    return out


def desc_to_json(desc: Any) -> dict[str, Any]:
    """An operator desc's fields, by C name, as DxDispatch's generated parsers read them."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(desc):
        value = getattr(desc, f.name)
        kind = kind_of(f)
        if value is None:
            continue  # _Maybenull_ fields left out are NULL
        if kind is Kind.TENSOR:
            if isinstance(value, DML_BUFFER_TENSOR_DESC):
                value = DML_TENSOR_DESC(Desc=value)
            out[f.name] = tensor_to_json(value)
        elif kind is Kind.OPERATOR:
            fused = operator_desc(value)
            inline = {"Type": DML_OPERATOR_TYPE(fused.Type).name}
            inline.update(desc_to_json(fused.Desc))
            out[f.name] = inline
        elif kind is Kind.UINT_ARRAY:
            out[f.name] = [int(v) for v in value]
        elif kind is Kind.BOOL:
            out[f.name] = bool(value)
        elif kind is Kind.FLOAT:
            out[f.name] = float(value)
        elif kind in (Kind.ENUM, Kind.FLAGS):
            out[f.name] = _enum_name(value)
        else:
            out[f.name] = int(value)
    return out


def operator_dispatchable(desc: Any) -> dict[str, Any]:
    wrapped = operator_desc(desc)
    return {"type": c_name(DML_OPERATOR_TYPE(wrapped.Type)), "desc": desc_to_json(wrapped.Desc)}


def _json_number(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def resource(data_type: DML_TENSOR_DATA_TYPE, values: Any = None, *, size_in_bytes: int | None = None, count: int | None = None) -> dict[str, Any]:
    """A buffer resource: explicit values, or ``count`` zeros."""
    entry: dict[str, Any] = {"initialValuesDataType": data_type.name}
    if values is not None:
        flat = np.asarray(values).reshape(-1).tolist()
        entry["initialValues"] = [_json_number(v) for v in flat]
    else:
        entry["initialValues"] = {"valueCount": int(count or 1), "value": 0}
    if size_in_bytes is not None:
        entry["sizeInBytes"] = int(size_in_bytes)
    return entry


def _tensor_slots(desc: Any) -> tuple[list[str], list[str]]:
    spec = REGISTRY[operator_desc(desc).Type]
    return [s.name for s in spec.support.inputs], [s.name for s in spec.support.outputs]


def operator_model(desc: Any, inputs: Mapping[str, Any], *, name: str = "op", output_command: str = "print") -> dict[str, Any]:
    """A model that runs one operator on ``inputs`` (arrays by tensor field name) and prints its outputs.

    Input resources hold the tensors' memory (strides honoured: the values are laid out as
    the desc's Strides say); OWNED_BY_DML inputs are bound at initialization, as DxDispatch
    expects in the dispatchable's own ``bindings``.
    """
    inner = operator_desc(desc).Desc
    in_names, out_names = _tensor_slots(desc)
    resources: dict[str, Any] = {}
    init_bindings: dict[str, str] = {}
    dispatch_bindings: dict[str, str] = {}
    for slot in in_names:
        tensor = getattr(inner, slot)
        if tensor is None:
            continue
        buf = tensor.buffer if isinstance(tensor, DML_TENSOR_DESC) else tensor
        resources[slot] = resource(DML_TENSOR_DATA_TYPE(buf.DataType), _memory_image(buf, inputs[slot]), size_in_bytes=int(buf.TotalTensorSizeInBytes))
        (init_bindings if int(buf.Flags) & DML_TENSOR_FLAGS.OWNED_BY_DML else dispatch_bindings)[slot] = slot
    for slot in out_names:
        tensor = getattr(inner, slot)
        if tensor is None:
            continue
        buf = tensor.buffer if isinstance(tensor, DML_TENSOR_DESC) else tensor
        elements = int(buf.TotalTensorSizeInBytes) // numpy_dtype(buf.DataType).itemsize
        resources[slot] = resource(DML_TENSOR_DATA_TYPE(buf.DataType), count=max(1, elements), size_in_bytes=int(buf.TotalTensorSizeInBytes))
        dispatch_bindings[slot] = slot
    dispatchable = operator_dispatchable(desc)
    if init_bindings:
        dispatchable["bindings"] = init_bindings
    commands: list[dict[str, Any]] = [{"type": "dispatch", "dispatchable": name, "bindings": dispatch_bindings}]
    for slot in out_names:
        if slot in resources:
            commands.append(_output_command(output_command, slot))
    return {"$schema": SCHEMA, "resources": resources, "dispatchables": {name: dispatchable}, "commands": commands}


def _output_command(kind: str, resource_name: str) -> dict[str, Any]:
    if kind == "writeFile":
        return {"type": "writeFile", "resource": resource_name, "targetPath": f"{resource_name}.npy"}
    return {"type": "print", "resource": resource_name}


def _memory_image(buf: DML_BUFFER_TENSOR_DESC, value: Any) -> np.ndarray:
    """The elements of the tensor's buffer range, laid out by its strides (unused elements 0)."""
    from dmlpy.binding import Buffer  # noqa: PLC0415 - binding sits above tensor in the import order

    buffer = Buffer(int(buf.TotalTensorSizeInBytes))
    buffer.view(buf, writeable=True)[...] = np.broadcast_to(np.asarray(value), tuple(buf.Sizes or ()))
    dtype = numpy_dtype(buf.DataType)
    usable = buffer.size // dtype.itemsize * dtype.itemsize
    return buffer.data[:usable].view(dtype)


def graph_model(program: Any, inputs: Mapping[str, Any], *, output_command: str = "print") -> dict[str, Any]:
    """A model that runs a compiled builder program node by node through intermediate resources."""
    compiled = program.compiled
    plan = compiled.plan
    resources: dict[str, Any] = {}
    dispatchables: dict[str, Any] = {}
    commands: list[dict[str, Any]] = []
    graph_inputs = dict(zip(program.input_names, compiled.input_slots(), strict=True))
    for name, slot in graph_inputs.items():
        if slot.tensor is not None:
            resources[name] = resource(DML_TENSOR_DATA_TYPE(slot.tensor.DataType), _memory_image(slot.tensor, inputs[name]), size_in_bytes=int(slot.tensor.TotalTensorSizeInBytes))
    by_index = {n.index: n for n in plan.nodes}
    input_names = program.input_names
    output_names = program.output_names

    def resource_for(source: Any, tensor: DML_BUFFER_TENSOR_DESC, node_index: int, slot_name: str) -> str:
        if source.kind in ("input", "owned"):
            return input_names[source.index]
        if source.kind == "output":
            name = output_names[source.index]
        elif source.kind == "constant":
            name = f"constant{source.index}"
            if name not in resources:
                data = by_index[source.index].constant
                resources[name] = resource(DML_TENSOR_DATA_TYPE.UINT8, np.asarray(data), size_in_bytes=int(data.size))
            return name
        else:
            name = f"temp{source.offset}_{node_index}_{slot_name}"
        if name not in resources:
            elements = int(tensor.TotalTensorSizeInBytes) // numpy_dtype(tensor.DataType).itemsize
            resources[name] = resource(DML_TENSOR_DATA_TYPE(tensor.DataType), count=max(1, elements), size_in_bytes=int(tensor.TotalTensorSizeInBytes))
        return name

    produced: dict[tuple[int, int], str] = {}
    for i in plan.order:
        node = by_index[i]
        if node.operator is None:
            continue
        name = f"node{i}_{DML_OPERATOR_TYPE(node.operator.spec.operator_type).name.lower()}"
        dispatchable = operator_dispatchable(node.operator.desc)
        bindings: dict[str, str] = {}
        init: dict[str, str] = {}
        for k, slot in enumerate(node.outputs):
            target = plan.writes.get((i, k))
            if target is not None and slot.tensor is not None:
                produced[(i, k)] = bindings[slot.name] = resource_for(target, slot.tensor, i, slot.name)
        for k, slot in enumerate(node.inputs):
            source = plan.reads.get((i, k))
            if source is None or slot.tensor is None:
                continue
            if source.kind == "temp":
                producer = next(key for key, dest in plan.writes.items() if dest is source)
                resource_name = produced[producer]
            else:
                resource_name = resource_for(source, slot.tensor, i, slot.name)
            (init if slot.owned else bindings)[slot.name] = resource_name
        if init:
            dispatchable["bindings"] = init
        dispatchables[name] = dispatchable
        commands.append({"type": "dispatch", "dispatchable": name, "bindings": bindings})
    for name in output_names:
        commands.append(_output_command(output_command, name))
    return {"$schema": SCHEMA, "resources": resources, "dispatchables": dispatchables, "commands": commands}


def write_model(model: Mapping[str, Any], path: str | Path) -> Path:
    path = Path(path)
    path.write_text(json.dumps(model, indent=2) + "\n", encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------
# Reading


def _suffix(value: Any, enum_type: type[enum.Enum], prefix: str, where: str) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return enum_type(value)
    if not isinstance(value, str):
        msg = f"{where}: expected a {enum_type.__name__} name, got {value!r}"
        raise DxDispatchFormatError(msg)
    name = value.removeprefix(prefix)
    try:
        return enum_type[name]
    except KeyError:
        msg = f"{where}: {value!r} is not a {enum_type.__name__}"
        raise DxDispatchFormatError(msg) from None


def tensor_from_json(obj: Any, where: str) -> DML_TENSOR_DESC:
    if not isinstance(obj, dict):
        msg = f"{where}: a tensor is an object, got {type(obj).__name__}"
        raise DxDispatchFormatError(msg)
    if "Desc" in obj:
        _suffix(obj.get("Type", "BUFFER"), DML_TENSOR_TYPE, "DML_TENSOR_TYPE_", f"{where}.Type")
        obj = obj["Desc"]
    for required in ("DataType", "Sizes"):
        if required not in obj:
            msg = f"{where}: {required} is required"
            raise DxDispatchFormatError(msg)
    data_type = _suffix(obj["DataType"], DML_TENSOR_DATA_TYPE, "DML_TENSOR_DATA_TYPE_", f"{where}.DataType")
    sizes = tuple(int(s) for s in obj["Sizes"])
    strides = tuple(int(s) for s in obj["Strides"]) if obj.get("Strides") is not None else None
    flags_value = obj.get("Flags", [])
    flags = DML_TENSOR_FLAGS.NONE
    for name in [flags_value] if isinstance(flags_value, str) else flags_value:
        flags |= _suffix(name, DML_TENSOR_FLAGS, "DML_TENSOR_FLAG_", f"{where}.Flags")
    total = int(obj.get("TotalTensorSizeInBytes", 0)) or calc_buffer_tensor_size(data_type, sizes, strides)
    return DML_TENSOR_DESC(
        Desc=DML_BUFFER_TENSOR_DESC(data_type, flags, int(obj.get("DimensionCount", len(sizes))), sizes, strides, total, int(obj.get("GuaranteedBaseOffsetAlignment", 0)))
    )


def desc_from_json(op_type: Any, obj: Any, where: str) -> Any:
    """The operator desc for ``op_type`` from its JSON fields (the reverse of ``desc_to_json``)."""
    operator = _suffix(op_type, DML_OPERATOR_TYPE, "DML_OPERATOR_", f"{where}.type")
    spec = REGISTRY.get(operator)
    if spec is None:
        msg = f"{where}: dmlpy does not emulate {c_name(operator)}"
        raise DxDispatchFormatError(msg)
    if not isinstance(obj, dict):
        msg = f"{where}.desc: expected an object"
        raise DxDispatchFormatError(msg)
    values: dict[str, Any] = {}
    known = {f.name for f in dataclasses.fields(spec.desc_class)}
    unknown = set(obj) - known - {"Type"}
    if unknown:
        msg = f"{where}.desc: {', '.join(sorted(unknown))} {'is not a field' if len(unknown) == 1 else 'are not fields'} of {spec.c_struct} (field names are case-sensitive)"
        raise DxDispatchFormatError(msg)
    for f in dataclasses.fields(spec.desc_class):
        if f.name not in obj:
            continue
        value = obj[f.name]
        path = f"{where}.desc.{f.name}"
        kind = kind_of(f)
        if kind is Kind.TENSOR:
            values[f.name] = tensor_from_json(value, path)
        elif kind is Kind.OPERATOR:
            inner = dict(value.get("Desc", value))
            inner_type = value["Type"]
            inner.pop("Type", None) if "Desc" not in value else None
            values[f.name] = DML_OPERATOR_DESC(_suffix(inner_type, DML_OPERATOR_TYPE, "DML_OPERATOR_", f"{path}.Type"), desc_from_json(inner_type, inner, path))
        elif kind is Kind.BOOL:
            if not isinstance(value, bool):
                msg = f"{path}: BOOL fields are JSON true/false, got {value!r}"
                raise DxDispatchFormatError(msg)
            values[f.name] = int(value)
        elif kind in (Kind.ENUM, Kind.FLAGS):
            enum_type = f.metadata["enum"]
            prefix = "DML_" + enum_type.__name__.removeprefix("DML_") + "_"
            values[f.name] = _suffix(value, enum_type, prefix, path)
        elif kind is Kind.UINT_ARRAY:
            values[f.name] = tuple(int(v) for v in value)
        elif kind is Kind.FLOAT:
            values[f.name] = float(value)
        else:
            values[f.name] = int(value)
    return spec.desc_class(**values)


@dataclass
class Model:
    resources: dict[str, np.ndarray]  # name -> the buffer's bytes, as uint8
    resource_types: dict[str, DML_TENSOR_DATA_TYPE]
    dispatchables: dict[str, Any]  # name -> operator desc
    init_bindings: dict[str, dict[str, str]]
    commands: list[dict[str, Any]]
    printed: dict[str, np.ndarray] = field(default_factory=dict)


def _initial_values(entry: dict[str, Any], where: str) -> tuple[DML_TENSOR_DATA_TYPE, np.ndarray]:
    data_type = _suffix(entry.get("initialValuesDataType"), DML_TENSOR_DATA_TYPE, "DML_TENSOR_DATA_TYPE_", f"{where}.initialValuesDataType")
    dtype = numpy_dtype(data_type)
    values = entry.get("initialValues")
    if isinstance(values, list):
        data = np.array([float(v) if isinstance(v, str) else v for v in values], dtype=dtype)
    elif isinstance(values, dict) and "valueStart" in values:
        count = int(values["valueCount"])
        data = (values["valueStart"] + values["valueDelta"] * np.arange(count)).astype(dtype)
    elif isinstance(values, dict) and "value" in values:
        data = np.full(int(values["valueCount"]), values["value"], dtype=dtype)
    else:
        msg = f"{where}.initialValues: expected an array, a constant or a sequence"
        raise DxDispatchFormatError(msg)
    raw = data.view(np.uint8)
    offset = int(entry.get("initialValuesOffsetInBytes", 0))
    size = int(entry["sizeInBytes"]) if "sizeInBytes" in entry else (raw.size + offset + 3) & ~3
    if size < raw.size + offset:
        msg = f"{where}.sizeInBytes is {size}, smaller than the initial values ({raw.size} bytes at offset {offset})"
        raise DxDispatchFormatError(msg)
    memory = np.zeros(size, dtype=np.uint8)
    memory[offset : offset + raw.size] = raw
    return data_type, memory


def read_model(source: str | Path | Mapping[str, Any]) -> Model:
    """Parse a DxDispatch model (a path or the loaded JSON) into descs and buffers."""
    model = json.loads(Path(source).read_text(encoding="utf-8")) if isinstance(source, (str, Path)) else dict(source)
    for required in ("resources", "dispatchables", "commands"):
        if required not in model:
            msg = f"a DxDispatch model needs '{required}'"
            raise DxDispatchFormatError(msg)
    resources, types = {}, {}
    for name, entry in model["resources"].items():
        types[name], resources[name] = _initial_values(entry, f"resources.{name}")
    dispatchables, init_bindings = {}, {}
    for name, entry in model["dispatchables"].items():
        desc = entry.get("desc", entry.get("Desc"))
        dispatchables[name] = desc_from_json(entry.get("type"), desc, f"dispatchables.{name}")
        init_bindings[name] = dict(entry.get("bindings", {}))
    for i, command in enumerate(model["commands"]):
        if command.get("type") not in ("dispatch", "print", "writeFile"):
            msg = f"commands[{i}].type is {command.get('type')!r}; expected dispatch, print or writeFile"
            raise DxDispatchFormatError(msg)
    return Model(resources, types, dispatchables, init_bindings, list(model["commands"]))


def run_model(model: Model, device: Any = None, *, out_dir: str | Path | None = None) -> dict[str, np.ndarray]:
    """Execute a model's commands on a dmlpy device; returns what ``print``/``writeFile`` would show."""
    from dmlpy.binding import Buffer, array_binding, buffer_binding  # noqa: PLC0415
    from dmlpy.device import create_device  # noqa: PLC0415

    device = device or create_device()
    buffers = {}
    for name, memory in model.resources.items():
        buffer = Buffer(memory.size, name)
        buffer.data[:] = memory
        buffers[name] = buffer
    shown: dict[str, np.ndarray] = {}
    for command in model.commands:
        if command["type"] == "dispatch":
            desc = model.dispatchables[command["dispatchable"]]
            _dispatch(device, desc, buffers, command.get("bindings", {}), model.init_bindings.get(command["dispatchable"], {}), buffer_binding, array_binding)
        else:
            name = command["resource"]
            dtype = numpy_dtype(model.resource_types[name])
            values = buffers[name].data[: buffers[name].size // dtype.itemsize * dtype.itemsize].view(dtype).copy()
            shown[name] = values
            if command["type"] == "writeFile" and out_dir is not None:
                np.save(Path(out_dir) / Path(command["targetPath"]).name, values)
    return shown


def _dispatch(device: Any, desc: Any, buffers: dict[str, Any], bindings: Mapping[str, Any], init: Mapping[str, Any], buffer_binding: Any, array_binding: Any) -> None:
    compiled = device.compile_operator(device.create_operator(desc))
    slots_in, slots_out = compiled.input_slots(), compiled.output_slots()

    def source(value: Any) -> Any:
        if isinstance(value, str):
            return buffer_binding(buffers[value])
        if isinstance(value, dict):
            buffer = buffers[value["name"]]
            offset = int(value.get("elementOffset", 0)) * int(value.get("elementSizeInBytes", 0))
            return buffer_binding(buffer, offset)
        msg = f"a binding source is a resource name or an object, got {value!r}"
        raise DxDispatchFormatError(msg)

    recorder, command_list = device.create_command_recorder(), device.create_command_list()
    props = compiled.get_binding_properties()
    persistent = Buffer_(props.PersistentResourceSize) if props.PersistentResourceSize else None
    initializer = device.create_operator_initializer([compiled])
    init_table = device.create_binding_table(initializer)
    init_table.bind_inputs([array_binding([source(init[s.name]).Desc if s.owned and s.name in init else None for s in slots_in])])
    init_table.bind_outputs([buffer_binding(persistent)])
    recorder.record_dispatch(command_list, initializer, init_table)
    table = device.create_binding_table(compiled)
    from dmlpy.binding import DML_BINDING_DESC  # noqa: PLC0415

    table.bind_inputs([source(bindings[s.name]) if s.name in bindings and not s.owned else DML_BINDING_DESC() for s in slots_in])
    table.bind_outputs([source(bindings[s.name]) if s.name in bindings else DML_BINDING_DESC() for s in slots_out])
    table.bind_persistent_resource(buffer_binding(persistent) if persistent is not None else None)
    recorder.record_dispatch(command_list, compiled, table)
    command_list.close()
    device.execute(command_list)


def Buffer_(size: int) -> Any:  # noqa: N802 - a local alias keeps the import order (binding above tensor)
    from dmlpy.binding import Buffer  # noqa: PLC0415

    return Buffer(size)


__all__ = [
    "DxDispatchFormatError",
    "Model",
    "desc_from_json",
    "desc_to_json",
    "graph_model",
    "operator_dispatchable",
    "operator_model",
    "read_model",
    "run_model",
    "tensor_from_json",
    "write_model",
]
