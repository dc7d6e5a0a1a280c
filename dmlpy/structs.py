"""How dmlpy's dataclasses mirror C structs: field kinds, normalisation and C++ printing.

Every desc field carries its C kind in the dataclass metadata. One generic walk then does
what C's type system would: refuse values that do not fit the field (a string where a
``UINT`` goes), copy the desc as DirectML copies it at CreateOperator, fill a
``DimensionCount`` left as ``None``, and print the desc as the C++ that builds it.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import numbers
from collections.abc import Sequence
from typing import Any

from dmlpy.enums import c_name
from dmlpy.errors import Finding
from dmlpy.rules import Rule, rule

UINT_MAX = 2**32 - 1
UINT64_MAX = 2**64 - 1

FIELD_TYPE = rule(
    "FIELD.TYPE",
    "Every field holds a value of its C type (UINT, UINT array, BOOL, FLOAT, enum, tensor or operator desc).",
    source="DirectML.h struct definitions",
)
FIELD_RANGE = rule(
    "FIELD.RANGE",
    "Integer fields fit their C type: 0 <= UINT < 2^32, 0 <= UINT64 < 2^64.",
    source="DirectML.h struct definitions",
)
FIELD_DIMENSION_COUNT = rule(
    "FIELD.DIMENSION_COUNT_UNDERIVABLE",
    "A DimensionCount left as None can be derived: the arrays it sizes are present.",
    source="docs/deviations.md",
)


class Kind(enum.Enum):
    TENSOR = "const DML_TENSOR_DESC*"
    OPERATOR = "const DML_OPERATOR_DESC*"
    UINT = "UINT"
    UINT64 = "UINT64"
    UINT_ARRAY = "const UINT*"
    BOOL = "BOOL"
    FLOAT = "FLOAT"
    ENUM = "enum"
    FLAGS = "flags"
    DESC_POINTER = "const void*"  # the struct a Type tag selects
    DIMENSION_COUNT = "UINT (DimensionCount)"


def c_field(kind: Kind, default: Any = None, *, enum_type: type[enum.Enum] | None = None) -> Any:
    """A dataclass field that knows its C kind. Defaults are C's zero values."""
    if default is None and kind in (Kind.UINT, Kind.UINT64, Kind.BOOL):
        default = 0
    if default is None and kind is Kind.FLOAT:
        default = 0.0
    return dataclasses.field(default=default, metadata={"kind": kind, "enum": enum_type})


def kind_of(field: dataclasses.Field[Any]) -> Kind:
    return field.metadata["kind"]  # type: ignore[no-any-return]


class FieldError(Exception):
    """A value that C's type system would not accept; carries the finding to report."""

    def __init__(self, finding: Finding) -> None:
        self.finding = finding
        super().__init__(str(finding))


def _field_error(rule_: Rule, path: str, expected: str, actual: Any) -> FieldError:
    message = f"is {actual!r} ({type(actual).__name__}), expected {expected}"
    return FieldError(Finding(rule_.id, rule_.severity, path, expected, repr(actual), message))


def to_uint(value: Any, path: str, limit: int = UINT_MAX) -> int:
    if isinstance(value, enum.Enum) and not isinstance(value, int):
        raise _field_error(FIELD_TYPE, path, "an unsigned integer", value)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise _field_error(FIELD_TYPE, path, "an unsigned integer", value)
    as_int = int(value)
    if not 0 <= as_int <= limit:
        raise _field_error(FIELD_RANGE, path, f"0 <= value <= {limit}", as_int)
    return as_int


def to_uint_array(value: Any, path: str) -> tuple[int, ...] | None:
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, _ndarray_type())):
        raise _field_error(FIELD_TYPE, path, "a sequence of unsigned integers or None", value)
    return tuple(to_uint(v, f"{path}[{i}]") for i, v in enumerate(value))


def _ndarray_type() -> type:
    import numpy as np  # noqa: PLC0415 - numpy is a hard dependency; kept local to keep this module light

    return np.ndarray


def to_bool(value: Any, path: str) -> int:
    """C BOOL is a 32-bit int: 0 is FALSE, anything else TRUE. Python bools are welcome."""
    if isinstance(value, bool):
        return int(value)
    if not isinstance(value, numbers.Integral):
        raise _field_error(FIELD_TYPE, path, "a BOOL (True/False or an int)", value)
    as_int = int(value)
    if not -(2**31) <= as_int < 2**31:
        raise _field_error(FIELD_RANGE, path, "a 32-bit BOOL", as_int)
    return as_int


def to_float(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _field_error(FIELD_TYPE, path, "a FLOAT", value)
    return float(value)


def to_enum(value: Any, enum_type: type[enum.Enum], path: str) -> Any:
    """An enum field: known values become the enum member, unknown ones stay ints for the rules."""
    if isinstance(value, str):
        try:
            return enum_type[value]
        except KeyError:
            raise _field_error(FIELD_TYPE, path, f"a {enum_type.__name__} value", value) from None
    as_int = to_uint(value, path) if not isinstance(value, enum.Enum) else int(value.value)
    try:
        return enum_type(as_int)
    except ValueError:
        return as_int


def is_struct(value: Any) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def normalized(desc: Any, path: str) -> Any:
    """A deep copy of ``desc`` with every field coerced to its C kind.

    Raises ``FieldError`` for a value that C's type system would refuse. Rules about
    values (sizes, ranges, relationships) are not checked here.
    """
    if not is_struct(desc):
        raise _field_error(FIELD_TYPE, path, "a DirectML desc dataclass", desc)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(desc):
        values[f.name] = _normalize_field(f, getattr(desc, f.name), f"{path}.{f.name}")
    result = copy.copy(desc)
    for name, value in values.items():
        setattr(result, name, value)
    post = getattr(result, "_after_normalize", None)
    if post is not None:
        post(path)
    _derive_dimension_count(result, path)
    return result


def _normalize_field(f: dataclasses.Field[Any], value: Any, path: str) -> Any:  # noqa: PLR0911
    kind = kind_of(f)
    if kind is Kind.UINT:
        return to_uint(value, path)
    if kind is Kind.UINT64:
        return to_uint(value, path, UINT64_MAX)
    if kind is Kind.DIMENSION_COUNT:
        return None if value is None else to_uint(value, path)
    if kind is Kind.UINT_ARRAY:
        return to_uint_array(value, path)
    if kind is Kind.BOOL:
        return to_bool(value, path)
    if kind is Kind.FLOAT:
        return to_float(value, path)
    if kind in (Kind.ENUM, Kind.FLAGS):
        return to_enum(value, f.metadata["enum"], path)
    if kind is Kind.TENSOR:
        return _normalize_tensor(value, path)
    if kind is Kind.OPERATOR:
        return _normalize_operator(value, path)
    if kind is Kind.DESC_POINTER:
        # paths name fields through the pointer as C programmers say them: InputTensor.Sizes
        return None if value is None else normalized(value, path.removesuffix(".Desc"))
    raise AssertionError(kind)


def _normalize_tensor(value: Any, path: str) -> Any:
    from dmlpy.tensor import DML_BUFFER_TENSOR_DESC, DML_TENSOR_DESC  # noqa: PLC0415 - tensor builds on this module

    if value is None:
        return None
    if isinstance(value, DML_BUFFER_TENSOR_DESC):
        value = DML_TENSOR_DESC(Desc=value)
    if not isinstance(value, DML_TENSOR_DESC):
        raise _field_error(FIELD_TYPE, path, "a DML_TENSOR_DESC, a DML_BUFFER_TENSOR_DESC or None", value)
    return normalized(value, path)


def _normalize_operator(value: Any, path: str) -> Any:
    from dmlpy.operators import wrap_operator_desc  # noqa: PLC0415 - operators build on this module

    if value is None:
        return None
    return normalized(wrap_operator_desc(value, path), path)


def _derive_dimension_count(desc: Any, path: str) -> None:
    """Fill ``DimensionCount=None`` from the arrays it counts."""
    fields = dataclasses.fields(desc)
    counted = [f for f in fields if kind_of(f) is Kind.DIMENSION_COUNT]
    if not counted or getattr(desc, counted[0].name) is not None:
        return
    lengths = [len(getattr(desc, f.name)) for f in fields if kind_of(f) is Kind.UINT_ARRAY and getattr(desc, f.name) is not None]
    if not lengths:
        finding = Finding(
            FIELD_DIMENSION_COUNT.id,
            FIELD_DIMENSION_COUNT.severity,
            f"{path}.{counted[0].name}",
            "an explicit count, or arrays to derive it from",
            None,
            "is None and every array it counts is NULL, so it cannot be derived",
        )
        raise FieldError(finding)
    setattr(desc, counted[0].name, lengths[0])


# ---------------------------------------------------------------------------------------
# C++ printing


def to_cpp(desc: Any, name: str = "desc", storage: str = "const") -> str:
    """C++ statements that build ``desc`` against DirectML.h, ending with ``<struct> <name>``.

    ``storage`` prefixes every declaration (``"static const"`` inside a function whose
    result must outlive the call).
    """
    lines: list[str] = []
    try:  # print what DirectML would receive: DimensionCount derived, bare buffer descs wrapped
        desc = normalized(desc, type(desc).__name__)
    except FieldError:
        pass  # a desc C could not hold still prints as far as it goes
    _emit_struct(desc, name, lines, storage)
    return "\n".join(lines)


def _cpp_value(f: dataclasses.Field[Any], value: Any, var: str, lines: list[str], storage: str) -> str:  # noqa: PLR0911
    kind = kind_of(f)
    if value is None:
        return "nullptr"
    if kind is Kind.UINT_ARRAY:
        lines.append(f"{storage} UINT {var}[] = {{{', '.join(str(v) for v in value)}}};")
        return var
    if kind in (Kind.TENSOR, Kind.OPERATOR, Kind.DESC_POINTER):
        _emit_struct(value, var, lines, storage)
        return f"&{var}"
    if kind is Kind.BOOL:
        return "TRUE" if value else "FALSE"
    if kind is Kind.FLOAT:
        if value != value or value in (float("inf"), float("-inf")):  # NaN and infinities have no literal
            return "NAN" if value != value else ("INFINITY" if value > 0 else "-INFINITY")
        return f"{float(value)!r}f"
    if kind is Kind.UINT64:
        return f"{value}ull"
    if kind is Kind.FLAGS and isinstance(value, enum.Flag) and value.value != 0:
        return " | ".join(c_name(m) for m in type(value) if m in value)
    if kind in (Kind.ENUM, Kind.FLAGS) and isinstance(value, enum.Enum):
        return c_name(value)
    return str(int(value))


def _emit_struct(desc: Any, var: str, lines: list[str], storage: str) -> None:
    struct_name = type(desc).__name__
    values = [_cpp_value(f, getattr(desc, f.name), f"{var}_{f.name}", lines, storage) for f in dataclasses.fields(desc)]
    lines.append(f"{storage} {struct_name} {var} = {{{', '.join(values)}}};")


class CStruct:
    """Base of every desc dataclass: ``str()`` prints the C++ that builds it."""

    def __str__(self) -> str:
        return to_cpp(self)

    def to_cpp(self, name: str = "desc") -> str:
        return to_cpp(self, name)


__all__ = [
    "CStruct",
    "FieldError",
    "Kind",
    "c_field",
    "is_struct",
    "kind_of",
    "normalized",
    "to_cpp",
]
