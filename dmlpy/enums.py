"""DirectML's enumerations, with the numeric values of DirectML.h.

Each enum is named like its C type and its members by the C suffix
(``DML_TENSOR_DATA_TYPE.FLOAT32``). Every C constant is also exported under its full
name (``DML_TENSOR_DATA_TYPE_FLOAT32``) so C code transliterates line by line.
The enums themselves are generated from DirectML.h's facts (``dmlpy/_dml_enums.py``), with the
feature level that introduced each value (``value_since``); HRESULT is DirectML's return codes.
"""

from __future__ import annotations

import enum

from dmlpy._dml_enums import *  # noqa: F403 - every DirectML enum
from dmlpy._dml_enums import C_PREFIXES, ENUM_SINCE, VALUE_SINCE, DML_FEATURE_LEVEL


class HRESULT(enum.IntEnum):
    """The HRESULTs DirectML returns (DirectML's error-code page), as unsigned 32-bit values."""

    S_OK = 0x00000000
    E_INVALIDARG = 0x80070057
    E_OUTOFMEMORY = 0x8007000E
    E_NOTIMPL = 0x80004001
    E_FAIL = 0x80004005
    E_UNEXPECTED = 0x8000FFFF
    E_NOINTERFACE = 0x80004002
    E_POINTER = 0x80004003
    DXGI_ERROR_INVALID_CALL = 0x887A0001
    DXGI_ERROR_UNSUPPORTED = 0x887A0004
    DXGI_ERROR_DEVICE_REMOVED = 0x887A0005
    DXGI_ERROR_DEVICE_HUNG = 0x887A0006
    DXGI_ERROR_DEVICE_RESET = 0x887A0007
    DXGI_ERROR_DRIVER_INTERNAL_ERROR = 0x887A0020
    DXGI_ERROR_SDK_COMPONENT_MISSING = 0x887A002D


DML_TENSOR_DIMENSION_COUNT_MAX = 5
DML_TENSOR_DIMENSION_COUNT_MAX1 = 8
DML_TEMPORARY_BUFFER_ALIGNMENT = 256
DML_PERSISTENT_BUFFER_ALIGNMENT = 256
DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT = 16

ENUMS: tuple[type[enum.Enum], ...] = (*C_PREFIXES, HRESULT)
_C_PREFIX: dict[type[enum.Enum], str] = {**C_PREFIXES, HRESULT: ""}


def value_since(member: enum.Enum | int, enum_type: type[enum.Enum]) -> DML_FEATURE_LEVEL | None:
    """The feature level that introduced ``member`` of ``enum_type`` (None: not a value DirectML.h has)."""
    return VALUE_SINCE.get(enum_type, {}).get(int(member.value if isinstance(member, enum.Enum) else member))


def c_name(member: enum.Enum) -> str:
    """The full C constant name of an enum member: ``DML_TENSOR_DATA_TYPE_FLOAT32``."""
    return _c_prefix(type(member)) + str(member.name)


def _c_prefix(enum_type: type[enum.Enum]) -> str:
    return _C_PREFIX.get(enum_type, enum_type.__name__ + "_")


def _export_c_constants() -> dict[str, enum.Enum]:
    # __members__ includes aliases (DML_OPERATOR_SCATTER), which C also spells out.
    return {
        _c_prefix(enum_type) + name: member
        for enum_type in ENUMS
        for name, member in enum_type.__members__.items()
    }


C_CONSTANTS = _export_c_constants()
globals().update(C_CONSTANTS)


def c_text(member: enum.Enum) -> str:
    """A value as C code spells it: ``DML_TENSOR_DATA_TYPE_FLOAT32``, ``E_INVALIDARG``, flags joined by ``|``."""
    if isinstance(member, enum.Flag):
        parts = [c_name(m) for m in type(member) if m.value and m.value & member.value == m.value]
        rest = member.value & ~sum(m.value for m in type(member) if m.value & member.value == m.value)
        if not parts and not rest:
            zero = type(member)._value2member_map_.get(0)
            return c_name(zero) if zero is not None else "0"
        return " | ".join(parts + ([hex(rest)] if rest else []))
    return c_name(member)


# print() and str() say the C name; format() and f-strings keep the number, as IntEnum's do
def _number_format(member: enum.Enum, spec: str) -> str:
    return format(int(member.value), spec)


for _enum_type in ENUMS:
    _enum_type.__str__ = c_text  # type: ignore[method-assign,assignment]
    _enum_type.__format__ = _number_format  # type: ignore[method-assign,assignment] - int's and Enum's would follow __str__

__all__ = [e.__name__ for e in ENUMS] + [
    "C_CONSTANTS",
    "ENUM_SINCE",
    "VALUE_SINCE",
    "value_since",
    "DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT",
    "DML_PERSISTENT_BUFFER_ALIGNMENT",
    "DML_TEMPORARY_BUFFER_ALIGNMENT",
    "DML_TENSOR_DIMENSION_COUNT_MAX",
    "DML_TENSOR_DIMENSION_COUNT_MAX1",
    "c_name",
    "c_text",
    *C_CONSTANTS,
]
