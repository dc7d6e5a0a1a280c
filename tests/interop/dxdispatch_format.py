"""A checker for DxDispatch's JSON model format, written from DxDispatch's sources, not from dmlpy's writer.

Sources: DxDispatch's ``models/_schema.json``, ``JsonParsers.cpp`` and the generated per-operator
parsers (https://github.com/microsoft/DirectML, DxTools/DxDispatch):

* top level: an object with ``resources`` (object), ``dispatchables`` (object) and ``commands``
  (array); ``$schema`` may point at the schema file;
* resources: ``initialValuesDataType`` is a DML_TENSOR_DATA_TYPE name, full or without its prefix;
  ``initialValues`` is a non-empty array (numbers; ``"nan"``/``"inf"``/``"-inf"`` for float types),
  a constant ``{valueCount, value}``, a sequence ``{valueCount, valueStart, valueDelta}`` or a
  file ``{sourcePath}``; ``sizeInBytes`` and ``initialValuesOffsetInBytes`` are unsigned integers;
* DML dispatchables: ``type`` is ``DML_OPERATOR_<X>`` or ``<X>``; ``desc`` holds the fields of
  ``DML_<X>_OPERATOR_DESC`` with the C field names (case-sensitive), every non-optional field
  present, enums as names (full or suffix), BOOL as JSON true/false, FLOAT as numbers or
  nan/inf strings, UINT and UINT arrays as unsigned integers; tensors flattened or
  ``{Type, Desc}``; a FusedActivation inline as ``{"Type": "ACTIVATION_X", <fields>}``;
  optional ``dmlCompileType`` (DmlCompileOp, DmlCompileGraph), ``executionFlags`` (an array of
  DML_EXECUTION_FLAGS names, as the schema says) and init-time ``bindings``;
* commands: ``dispatch`` (``dispatchable``, ``bindings`` naming the desc's tensor fields, sources
  naming resources), ``print`` (``resource``, ``verbose``), ``writeFile`` (``resource``,
  ``targetPath``, ``dimensions``).

The C struct layouts (field names, C types, which pointers are optional) and the enum constants
are read from ``include/dmlpy/dml_types.h``, whose layout is checked against DirectML.h by static
asserts; the enum spelling rule is DxDispatch's generator's (``GenerateParsers.ps1``): a value
``<ENUM>_<X>`` may be written ``<X>``, ``DML_OPERATOR_<X>`` may be ``<X>``, and a flag
``<ENUM minus S>_<X>`` may be ``<X>``. The checker never imports dmlpy's interop code.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

HEADER = Path(__file__).resolve().parents[2] / "include" / "dmlpy" / "dml_types.h"
TENSOR_MEMBERS = {"Type", "Desc", "DataType", "Flags", "DimensionCount", "Sizes", "Strides", "TotalTensorSizeInBytes", "GuaranteedBaseOffsetAlignment"}
RESOURCE_MEMBERS = {"initialValuesDataType", "initialValues", "sizeInBytes", "initialValuesOffsetInBytes", "type"}
DML_DISPATCHABLE_MEMBERS = {"type", "desc", "dmlCompileType", "executionFlags", "bindings"}
COMMAND_MEMBERS = {
    "dispatch": {"type", "dispatchable", "bindings", "threadGroupCount"},
    "print": {"type", "resource", "verbose"},
    "writeFile": {"type", "resource", "targetPath", "dimensions"},
}
BINDING_MEMBERS = {"name", "elementOffset", "elementSizeInBytes", "elementCount", "format", "counter", "counterOffsetBytes", "shape"}
SCALAR_UNION_MEMBER = {
    "FLOAT16": "UInt16", "FLOAT32": "Float32", "FLOAT64": "Float64", "UINT8": "UInt8", "UINT16": "UInt16", "UINT32": "UInt32",
    "UINT64": "UInt64", "INT8": "Int8", "INT16": "Int16", "INT32": "Int32", "INT64": "Int64",
}  # fmt: skip
FLOAT_DATA_TYPES = {"FLOAT16", "FLOAT32", "FLOAT64"}
INT_RANGES = {
    "UINT8": (0, 2**8 - 1), "UINT16": (0, 2**16 - 1), "UINT32": (0, 2**32 - 1), "UINT64": (0, 2**64 - 1),
    "INT8": (-(2**7), 2**7 - 1), "INT16": (-(2**15), 2**15 - 1), "INT32": (-(2**31), 2**31 - 1), "INT64": (-(2**63), 2**63 - 1),
}  # fmt: skip


@dataclass(frozen=True)
class CField:
    name: str
    c_type: str
    optional: bool
    array: bool = False  # a pointer to an array (the header's ``/* [Count] */``)


@dataclass(frozen=True)
class CHeader:
    enums: dict[str, list[str]]  # enum type -> its constants
    structs: dict[str, list[CField]]


@cache
def header() -> CHeader:
    text = HEADER.read_text(encoding="utf-8")
    enums = {}
    for name, body in re.findall(r"typedef enum (\w+) \{(.*?)\} \1;", text, re.DOTALL):
        enums[name] = re.findall(r"^\s*(\w+)\s*=", body, re.MULTILINE)
    structs = {}
    for name, body in re.findall(r"typedef struct (\w+) \{(.*?)\} \1;", text, re.DOTALL):
        fields = []
        for line in body.splitlines():
            match = re.match(r"\s*((?:const\s+)?[\w]+\s*\*?)\s*(\w+);(.*)", line)
            if match:
                fields.append(CField(match.group(2), re.sub(r"\s+", " ", match.group(1)).strip(), "optional" in match.group(3), "[" in match.group(3)))
        structs[name] = fields
    return CHeader(enums, structs)


def spellings(enum_type: str) -> dict[str, str]:
    """Every JSON spelling of the enum's constants -> the constant (DxDispatch's generator rule)."""
    out = {}
    singular = enum_type.replace("FLAGS", "FLAG")
    for constant in header().enums[enum_type]:
        out[constant] = constant
        if enum_type == "DML_OPERATOR_TYPE":
            out[constant.removeprefix("DML_OPERATOR_")] = constant
        elif constant.startswith(enum_type + "_"):
            out[constant.removeprefix(enum_type + "_")] = constant
        elif enum_type.endswith("FLAGS") and constant.startswith(singular + "_"):
            out[constant.removeprefix(singular + "_")] = constant
    return out


def _is_uint(value: Any, limit: int = 2**32 - 1) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= limit


def _is_float(value: Any) -> bool:
    if isinstance(value, str):
        return value.lower() in ("nan", "inf", "-inf")
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class Checker:
    def __init__(self, model: Any) -> None:
        self.model = model
        self.errors: list[str] = []

    def error(self, where: str, message: str) -> None:
        self.errors.append(f"{where}: {message}")

    # -- top level -------------------------------------------------------------------------

    def run(self) -> list[str]:
        model = self.model
        if not isinstance(model, dict):
            self.error("model", "is not a JSON object")
            return self.errors
        for member in sorted(set(model) - {"$schema", "resources", "dispatchables", "commands"}):
            self.error("model", f"unknown top-level member {member!r}")
        for member, kind in (("resources", dict), ("dispatchables", dict), ("commands", list)):
            if not isinstance(model.get(member), kind):
                self.error("model", f"'{member}' must be {'an object' if kind is dict else 'an array'}")
        if self.errors:
            return self.errors
        for name, entry in model["resources"].items():
            self.resource(f"resources.{name}", entry)
        for name, entry in model["dispatchables"].items():
            self.dispatchable(f"dispatchables.{name}", entry)
        for i, command in enumerate(model["commands"]):
            self.command(f"commands[{i}]", command)
        return self.errors

    # -- resources -------------------------------------------------------------------------

    def resource(self, where: str, entry: Any) -> None:
        if not isinstance(entry, dict):
            self.error(where, "is not an object")
            return
        for member in sorted(set(entry) - RESOURCE_MEMBERS):
            self.error(where, f"unknown member {member!r}")
        if entry.get("type", "buffer") != "buffer":
            self.error(where, "type must be 'buffer'")
        # JsonParsers.cpp: initialValuesDataType is optional and defaults to UNKNOWN
        data_type = spellings("DML_TENSOR_DATA_TYPE").get(entry.get("initialValuesDataType", "UNKNOWN"))
        short = data_type.removeprefix("DML_TENSOR_DATA_TYPE_") if data_type else None
        values = entry.get("initialValues")
        if data_type is None:
            self.error(where, f"initialValuesDataType {entry.get('initialValuesDataType')!r} is not a DML_TENSOR_DATA_TYPE spelling")
        elif short == "UNKNOWN" and not (isinstance(values, list) or (isinstance(values, dict) and "sourcePath" in values)):
            self.error(where, "initialValuesDataType UNKNOWN is only for typed lists and files")
        count = 0
        if isinstance(values, list):
            count = len(values)
            if short == "UNKNOWN":
                for i, item in enumerate(values):
                    if not (isinstance(item, dict) and item.get("type") in spellings("DML_TENSOR_DATA_TYPE") and "value" in item):
                        self.error(f"{where}.initialValues[{i}]", "a typed element is {type, value}")
            else:
                for i, v in enumerate(values):
                    if not self.scalar_ok(v, short):
                        self.error(f"{where}.initialValues[{i}]", f"{v!r} is not a {short} value")
        elif isinstance(values, dict):
            forms = [k for k in ("value", "valueStart", "sourcePath") if k in values]
            if len(forms) != 1:
                self.error(f"{where}.initialValues", "needs exactly one of value, valueStart, sourcePath")
            elif forms[0] == "sourcePath":
                if not isinstance(values["sourcePath"], str):
                    self.error(f"{where}.initialValues.sourcePath", "must be a string")
            else:
                count = values.get("valueCount") if _is_uint(values.get("valueCount")) else 0
                if not count:
                    self.error(f"{where}.initialValues.valueCount", "must be an integer > 0")
                members = {"valueCount", "value"} if forms[0] == "value" else {"valueCount", "valueStart", "valueDelta"}
                for member in sorted(members - set(values)):
                    self.error(f"{where}.initialValues", f"missing {member!r}")
                for member in sorted(set(values) - members):
                    self.error(f"{where}.initialValues", f"unknown member {member!r}")
                for member in sorted(members - {"valueCount"} & set(values)):
                    if short and not self.scalar_ok(values[member], short):
                        self.error(f"{where}.initialValues.{member}", f"{values[member]!r} is not a {short} value")
        elif values != "deferred":  # "deferred": the dispatch that writes it creates it (DxDispatch's ONNX outputs)
            self.error(f"{where}.initialValues", "must be an array, an object or \"deferred\"")
        if isinstance(values, list) and not values:
            self.error(f"{where}.initialValues", "must not be empty")
        for member in ("sizeInBytes", "initialValuesOffsetInBytes"):
            if member in entry and not _is_uint(entry[member], 2**64 - 1):
                self.error(f"{where}.{member}", "must be an unsigned integer")
        element = {"FLOAT16": 2, "FLOAT32": 4, "FLOAT64": 8, "UINT8": 1, "INT8": 1, "UINT16": 2, "INT16": 2, "UINT32": 4, "INT32": 4, "UINT64": 8, "INT64": 8}.get(short or "", 0)
        if count and element and _is_uint(entry.get("sizeInBytes", 0), 2**64 - 1):
            needed = count * element + int(entry.get("initialValuesOffsetInBytes", 0) or 0)
            if "sizeInBytes" in entry and entry["sizeInBytes"] < needed:
                self.error(f"{where}.sizeInBytes", f"{entry['sizeInBytes']} is smaller than the initial values ({needed} bytes)")

    @staticmethod
    def scalar_ok(value: Any, short: str | None) -> bool:
        if short in FLOAT_DATA_TYPES:
            return _is_float(value)
        if short in INT_RANGES:
            low, high = INT_RANGES[short]
            return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
        return False

    # -- dispatchables ---------------------------------------------------------------------

    def dispatchable(self, where: str, entry: Any) -> None:
        if not isinstance(entry, dict):
            self.error(where, "is not an object")
            return
        op_type = entry.get("type")
        if not isinstance(op_type, str):
            self.error(where, "'type' is required")
            return
        if op_type.lower() in ("hlsl", "onnx", "dmlserializedgraph"):
            return
        for member in sorted(set(entry) - DML_DISPATCHABLE_MEMBERS):
            self.error(where, f"unknown member {member!r}")
        struct = self.operator_struct(op_type, f"{where}.type")
        if "desc" not in entry:
            self.error(where, "'desc' is required")
        elif struct is not None:
            self.desc(f"{where}.desc", entry["desc"], struct, fused=False)
        if "dmlCompileType" in entry and entry["dmlCompileType"] not in ("DmlCompileOp", "DmlCompileGraph"):
            self.error(f"{where}.dmlCompileType", f"{entry['dmlCompileType']!r} is not DmlCompileOp or DmlCompileGraph")
        if "executionFlags" in entry:
            flags = entry["executionFlags"]
            # the schema says an array; DxDispatch's flag parser also takes one name as a string
            items = [flags] if isinstance(flags, str) else flags
            if not isinstance(items, list) or any(f not in spellings("DML_EXECUTION_FLAGS") for f in items):
                self.error(f"{where}.executionFlags", f"{flags!r} is not a DML_EXECUTION_FLAGS name or an array of them")
        if "bindings" in entry and struct is not None:
            self.bindings(f"{where}.bindings", entry["bindings"], struct, inputs_only=True)

    def operator_struct(self, op_type: Any, where: str) -> str | None:
        constant = spellings("DML_OPERATOR_TYPE").get(op_type) if isinstance(op_type, str) else None
        if constant is None:
            self.error(where, f"{op_type!r} is not a DML_OPERATOR_TYPE spelling (DML_OPERATOR_X or X)")
            return None
        struct = constant.replace("DML_OPERATOR_", "DML_", 1) + "_OPERATOR_DESC"
        struct = {"DML_SCATTER_ELEMENTS_OPERATOR_DESC": "DML_SCATTER_OPERATOR_DESC"}.get(struct, struct)  # DirectML.h: SCATTER_ELEMENTS, alias SCATTER, takes DML_SCATTER_OPERATOR_DESC
        if struct not in header().structs:
            self.error(where, f"{struct} is not declared in dml_types.h")
            return None
        return struct

    def desc(self, where: str, desc: Any, struct: str, *, fused: bool) -> None:
        if not isinstance(desc, dict):
            self.error(where, "is not an object")
            return
        fields = {f.name: f for f in header().structs[struct]}
        allowed = set(fields) | ({"Type"} if fused else set())
        for member in sorted(set(desc) - allowed):
            self.error(where, f"{member!r} is not a field of {struct} (C field names, case-sensitive)")
        data_type = None
        for name, f in fields.items():
            is_tensor = f.c_type == "const DML_TENSOR_DESC*"
            if fused and is_tensor:
                if name in desc:
                    self.error(f"{where}.{name}", "a fused activation's tensors are left out (DxDispatch forces them to NULL)")
                continue
            if name not in desc:
                if not f.optional:
                    self.error(where, f"required field {name!r} of {struct} is missing")
                continue
            self.field(f"{where}.{name}", desc[name], f, data_type)
            if f.c_type == "DML_TENSOR_DATA_TYPE" and isinstance(desc[name], str):  # a DML_SCALAR_UNION after it is read in this type
                data_type = spellings("DML_TENSOR_DATA_TYPE").get(desc[name], "").removeprefix("DML_TENSOR_DATA_TYPE_") or None

    def scalar_union(self, where: str, value: Any, data_type: str | None) -> None:
        """JsonParsers.cpp: a number read as the data type, or ``{<member>: value}`` naming the
        member that data type selects (FLOAT16 selects UInt16, the half's bits)."""
        if data_type not in SCALAR_UNION_MEMBER:
            self.error(where, f"a DML_SCALAR_UNION needs a preceding data type field DxDispatch reads, not {data_type!r}")
            return
        member = SCALAR_UNION_MEMBER[data_type]
        if isinstance(value, dict):
            if set(value) != {member}:
                self.error(where, f"as an object, a {data_type} scalar is {{{member!r}: value}}")
            elif not self.scalar_ok(value[member], "UINT16" if data_type == "FLOAT16" else data_type):
                self.error(f"{where}.{member}", f"{value[member]!r} is not a {member} value")
        elif not self.scalar_ok(value, data_type):
            self.error(where, f"{value!r} is not a {data_type} value")

    def field(self, where: str, value: Any, f: CField, data_type: str | None = None) -> None:  # noqa: C901, PLR0912
        c_type = f.c_type
        if f.array and c_type in ("const DML_TENSOR_DESC*", "const DML_OPERATOR_DESC*"):
            if not isinstance(value, list):
                self.error(where, f"{value!r} is not an array")
                return
            for i, item in enumerate(value):
                self.field(f"{where}[{i}]", item, CField(f.name, c_type, optional=False))
        elif c_type == "const INT*":
            if not isinstance(value, list) or not all(self.scalar_ok(v, "INT32") for v in value):
                self.error(where, f"{value!r} is not an array of 32-bit integers")
        elif c_type == "const FLOAT*":
            if not isinstance(value, list) or not all(_is_float(v) for v in value):
                self.error(where, f"{value!r} is not an array of numbers")
        elif c_type == "INT":
            if not self.scalar_ok(value, "INT32"):
                self.error(where, f"{value!r} is not a 32-bit integer")
        elif c_type in ("const DML_SCALE_BIAS*", "DML_SIZE_2D"):
            self.desc(where, value, c_type.removeprefix("const ").removesuffix("*"), fused=False)
        elif c_type == "DML_SCALAR_UNION":
            self.scalar_union(where, value, data_type)
        elif c_type == "const DML_TENSOR_DESC*":
            self.tensor(where, value)
        elif c_type == "const DML_OPERATOR_DESC*":
            if not isinstance(value, dict) or "Type" not in value:
                self.error(where, "a fused activation is an object with 'Type'")
                return
            struct = self.operator_struct(value["Type"], f"{where}.Type")
            if struct is not None:
                body = value["Desc"] if "Desc" in value else {k: v for k, v in value.items() if k != "Type"}
                self.desc(where, body, struct, fused=True)
        elif c_type == "const UINT*":
            if not isinstance(value, list) or not all(_is_uint(v) for v in value):
                self.error(where, f"{value!r} is not an array of unsigned integers")
        elif c_type == "UINT":
            if not _is_uint(value):
                self.error(where, f"{value!r} is not an unsigned integer")
        elif c_type == "UINT64":
            if not _is_uint(value, 2**64 - 1):
                self.error(where, f"{value!r} is not an unsigned 64-bit integer")
        elif c_type == "BOOL":
            if not isinstance(value, bool):
                self.error(where, f"{value!r}: BOOL fields are JSON true/false")
        elif c_type == "FLOAT":
            if not _is_float(value):
                self.error(where, f"{value!r} is not a number or 'nan'/'inf'/'-inf'")
        elif c_type in header().enums:
            allowed = spellings(c_type)
            items = value if c_type.endswith("FLAGS") and isinstance(value, list) else [value]
            for item in items:
                if not isinstance(item, str) or item not in allowed:
                    self.error(where, f"{item!r} is not a {c_type} name")
        else:
            self.error(where, f"the checker does not know C type {c_type!r}")

    def tensor(self, where: str, value: Any) -> None:
        if not isinstance(value, dict):
            self.error(where, "a tensor is an object")
            return
        for member in sorted(set(value) - TENSOR_MEMBERS):
            self.error(where, f"unknown tensor member {member!r}")
        if "Type" in value and value["Type"] not in spellings("DML_TENSOR_TYPE"):
            self.error(f"{where}.Type", f"{value['Type']!r} is not a DML_TENSOR_TYPE name")
        body = value.get("Desc", value)
        if not isinstance(body, dict):
            self.error(f"{where}.Desc", "is not an object")
            return
        fields = {f.name: f for f in header().structs["DML_BUFFER_TENSOR_DESC"]}
        for name in ("DataType", "Sizes"):
            if name not in body:
                self.error(where, f"tensor member {name!r} is required")
        for name, f in fields.items():
            if name in body:
                self.field(f"{where}.{name}", body[name], f)
        if isinstance(body.get("Strides"), list) and isinstance(body.get("Sizes"), list) and len(body["Strides"]) != len(body["Sizes"]):
            self.error(f"{where}.Strides", "has a different length than Sizes")

    # -- commands and bindings -------------------------------------------------------------

    def tensor_fields(self, struct: str) -> list[str]:
        return [f.name for f in header().structs[struct] if f.c_type == "const DML_TENSOR_DESC*"]

    def bindings(self, where: str, bindings: Any, struct: str, *, inputs_only: bool) -> None:
        if not isinstance(bindings, dict):
            self.error(where, "bindings are an object")
            return
        points = self.tensor_fields(struct)
        if inputs_only:
            points = [p for p in points if not p.startswith("Output")]
        for point, source in bindings.items():
            if point not in points:
                self.error(f"{where}.{point}", f"is not a bind point of {struct} ({', '.join(points)})")
            for i, item in enumerate(source if isinstance(source, list) else [source]):
                name = item.get("name") if isinstance(item, dict) else item
                if isinstance(item, dict):
                    for member in sorted(set(item) - BINDING_MEMBERS):
                        self.error(f"{where}.{point}[{i}]", f"unknown binding member {member!r}")
                if not isinstance(name, str) or name not in self.model["resources"]:
                    self.error(f"{where}.{point}", f"{name!r} is not a resource")

    def command(self, where: str, command: Any) -> None:
        if not isinstance(command, dict) or command.get("type") not in COMMAND_MEMBERS:
            self.error(where, f"a command is an object whose type is one of {', '.join(COMMAND_MEMBERS)}")
            return
        kind = command["type"]
        for member in sorted(set(command) - COMMAND_MEMBERS[kind]):
            self.error(where, f"unknown {kind} member {member!r}")
        if kind == "dispatch":
            target = command.get("dispatchable")
            entry = self.model["dispatchables"].get(target) if isinstance(target, str) else None
            if entry is None:
                self.error(where, f"dispatchable {target!r} does not exist")
                return
            if "bindings" not in command:
                self.error(where, "'bindings' is required")
                return
            if str(entry.get("type")).lower() in ("hlsl", "onnx", "dmlserializedgraph"):
                return  # bound by the shader's or the ONNX model's own names, which this checker does not read
            struct = self.operator_struct(entry.get("type"), f"{where}.dispatchable")
            if struct is not None:
                self.bindings(f"{where}.bindings", command["bindings"], struct, inputs_only=False)
        else:
            if command.get("resource") not in self.model["resources"]:
                self.error(where, f"resource {command.get('resource')!r} does not exist")
            if kind == "print" and "verbose" in command and not isinstance(command["verbose"], bool):
                self.error(where, "verbose is a JSON boolean")
            if kind == "writeFile" and not isinstance(command.get("targetPath"), str):
                self.error(where, "'targetPath' is required")


def format_errors(model: Any) -> list[str]:
    """Every way ``model`` breaks DxDispatch's documented format (empty when it follows it)."""
    return Checker(model).run()
