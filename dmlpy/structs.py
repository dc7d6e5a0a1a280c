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
import math
import numbers
from struct import error as StructError  # noqa: N812 - struct's name for it
from struct import pack as _pack
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dmlpy.enums import DML_FEATURE_LEVEL, c_name
from dmlpy.errors import Finding
from dmlpy.rules import Rule, rule

UINT_MAX = 2**32 - 1
UINT64_MAX = 2**64 - 1
INT_MIN = -(2**31)
INT_MAX = 2**31 - 1

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
    TENSOR_ARRAY = "const DML_TENSOR_DESC* (array)"
    OPERATOR = "const DML_OPERATOR_DESC*"
    OPERATOR_ARRAY = "const DML_OPERATOR_DESC* (array)"
    UINT = "UINT"
    INT = "INT"
    UINT64 = "UINT64"
    UINT_ARRAY = "const UINT*"
    INT_ARRAY = "const INT*"
    FLOAT_ARRAY = "const FLOAT*"
    BOOL = "BOOL"
    FLOAT = "FLOAT"
    ENUM = "enum"
    FLAGS = "flags"
    STRUCT = "struct"  # a helper struct held by value (DML_SIZE_2D)
    STRUCT_POINTER = "const struct*"  # an optional helper struct (const DML_SCALE_BIAS*)
    SCALAR_UNION = "DML_SCALAR_UNION"
    DESC_POINTER = "const void*"  # the struct a Type tag selects
    # a UINT that gives the length of arrays (DimensionCount, AxisCount, InputCount, ...); None = derive it
    DIMENSION_COUNT = "UINT (array length)"


ARRAY_KINDS = frozenset({Kind.UINT_ARRAY, Kind.INT_ARRAY, Kind.FLOAT_ARRAY, Kind.TENSOR_ARRAY, Kind.OPERATOR_ARRAY})
POINTER_KINDS = ARRAY_KINDS | {Kind.TENSOR, Kind.OPERATOR, Kind.STRUCT_POINTER, Kind.DESC_POINTER}


def c_field(
    kind: Kind,
    default: Any = None,
    *,
    enum_type: type[enum.Enum] | None = None,
    struct: type | None = None,
    length: str | None = None,
    optional: bool = False,
    role: str | None = None,
) -> Any:
    """A dataclass field that knows its C kind. Defaults are C's zero values.

    ``struct`` is the helper struct a STRUCT or STRUCT_POINTER field holds, ``length`` the count
    field that sizes an array (``_Field_size_``), ``optional`` whether a pointer may be NULL, and
    ``role`` "input" or "output" for a tensor field.
    """
    metadata = {"kind": kind, "enum": enum_type, "struct": struct, "length": length, "optional": optional, "role": role}
    if default is None and kind in (Kind.UINT, Kind.INT, Kind.UINT64, Kind.BOOL):
        default = 0
    if default is None and kind is Kind.FLOAT:
        default = 0.0
    if default is None and kind in (Kind.STRUCT, Kind.SCALAR_UNION):
        factory = struct if struct is not None else DML_SCALAR_UNION
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


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


def to_int(value: Any, path: str, low: int = INT_MIN, high: int = INT_MAX) -> int:
    if isinstance(value, enum.Enum) and not isinstance(value, int):
        raise _field_error(FIELD_TYPE, path, "an integer", value)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise _field_error(FIELD_TYPE, path, "an integer", value)
    as_int = int(value)
    if not low <= as_int <= high:
        raise _field_error(FIELD_RANGE, path, f"{low} <= value <= {high}", as_int)
    return as_int


def _sequence(value: Any, path: str, what: str) -> Sequence[Any]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, _ndarray_type())):
        raise _field_error(FIELD_TYPE, path, f"a sequence of {what} or None", value)
    return value  # type: ignore[no-any-return]


def to_uint_array(value: Any, path: str) -> tuple[int, ...] | None:
    if value is None:
        return None
    return tuple(to_uint(v, f"{path}[{i}]") for i, v in enumerate(_sequence(value, path, "unsigned integers")))


def to_int_array(value: Any, path: str) -> tuple[int, ...] | None:
    if value is None:
        return None
    return tuple(to_int(v, f"{path}[{i}]") for i, v in enumerate(_sequence(value, path, "integers")))


def to_float_array(value: Any, path: str) -> tuple[float, ...] | None:
    if value is None:
        return None
    return tuple(to_float(v, f"{path}[{i}]") for i, v in enumerate(_sequence(value, path, "FLOATs")))


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


def _normalize_field(f: dataclasses.Field[Any], value: Any, path: str) -> Any:  # noqa: C901, PLR0911
    kind = kind_of(f)
    if kind is Kind.UINT:
        return to_uint(value, path)
    if kind is Kind.INT:
        return to_int(value, path)
    if kind is Kind.INT_ARRAY:
        return to_int_array(value, path)
    if kind is Kind.FLOAT_ARRAY:
        return to_float_array(value, path)
    if kind is Kind.TENSOR_ARRAY:
        # a C array of DML_TENSOR_DESC structs: no element can be NULL
        return None if value is None else tuple(_normalize_array_tensor(v, f"{path}[{i}]") for i, v in enumerate(_sequence(value, path, "DML_TENSOR_DESCs")))
    if kind is Kind.OPERATOR_ARRAY:
        return None if value is None else tuple(_normalize_array_operator(v, f"{path}[{i}]") for i, v in enumerate(_sequence(value, path, "DML_OPERATOR_DESCs")))
    if kind in (Kind.STRUCT, Kind.STRUCT_POINTER):
        if value is None and kind is Kind.STRUCT_POINTER:
            return None
        struct = f.metadata["struct"]
        if not isinstance(value, struct):
            raise _field_error(FIELD_TYPE, path, f"a {struct.__name__}" + (" or None" if kind is Kind.STRUCT_POINTER else ""), value)
        return normalized(value, path)
    if kind is Kind.SCALAR_UNION:
        if not isinstance(value, DML_SCALAR_UNION):
            raise _field_error(FIELD_TYPE, path, "a DML_SCALAR_UNION (set one member, e.g. DML_SCALAR_UNION(Float32=1.0))", value)
        return value.checked(path)
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


def _normalize_array_tensor(value: Any, path: str) -> Any:
    if value is None:
        raise _field_error(FIELD_TYPE, path, "a DML_TENSOR_DESC (an array element cannot be NULL)", value)
    return _normalize_tensor(value, path)


def _normalize_array_operator(value: Any, path: str) -> Any:
    if value is None:
        raise _field_error(FIELD_TYPE, path, "a DML_OPERATOR_DESC (an array element cannot be NULL)", value)
    return _normalize_operator(value, path)


def _normalize_operator(value: Any, path: str) -> Any:
    from dmlpy.operators import wrap_operator_desc  # noqa: PLC0415 - operators build on this module

    if value is None:
        return None
    return normalized(wrap_operator_desc(value, path), path)


def counted_arrays(desc_type: type, count: str) -> list[str]:
    """The array fields whose length the count field ``count`` gives."""
    return [f.name for f in dataclasses.fields(desc_type) if kind_of(f) in ARRAY_KINDS and f.metadata.get("length") == count]


def _derive_dimension_count(desc: Any, path: str) -> None:
    """Fill a count left as ``None`` from the arrays it counts (the first one present)."""
    for count in (f for f in dataclasses.fields(desc) if kind_of(f) is Kind.DIMENSION_COUNT):
        if getattr(desc, count.name) is not None:
            continue
        lengths = [len(getattr(desc, name)) for name in counted_arrays(type(desc), count.name) if getattr(desc, name) is not None]
        if not lengths:
            finding = Finding(
                FIELD_DIMENSION_COUNT.id,
                FIELD_DIMENSION_COUNT.severity,
                f"{path}.{count.name}",
                "an explicit count, or arrays to derive it from",
                None,
                "is None and every array it counts is NULL, so it cannot be derived",
            )
            raise FieldError(finding)
        setattr(desc, count.name, lengths[0])


# ---------------------------------------------------------------------------------------
# DML_SCALAR_UNION

# member -> (struct format, low, high); Bytes is the raw 8 bytes
_SCALAR_MEMBERS: dict[str, tuple[str, float, float]] = {
    "Int8": ("<b", -(2**7), 2**7 - 1), "UInt8": ("<B", 0, 2**8 - 1),
    "Int16": ("<h", -(2**15), 2**15 - 1), "UInt16": ("<H", 0, 2**16 - 1),
    "Int32": ("<i", -(2**31), 2**31 - 1), "UInt32": ("<I", 0, 2**32 - 1),
    "Int64": ("<q", -(2**63), 2**63 - 1), "UInt64": ("<Q", 0, 2**64 - 1),
    "Float32": ("<f", -math.inf, math.inf), "Float64": ("<d", -math.inf, math.inf),
}  # fmt: skip


@dataclass
class DML_SCALAR_UNION:  # noqa: N801 - the C name
    """DirectML's 8-byte scalar: set the one member the paired DataType field names.

    No member set is C's zero (all eight bytes 0). ``to_bytes()`` is the union's memory.
    """

    Bytes: bytes | None = None
    Int8: int | None = None
    UInt8: int | None = None
    Int16: int | None = None
    UInt16: int | None = None
    Int32: int | None = None
    UInt32: int | None = None
    Int64: int | None = None
    UInt64: int | None = None
    Float32: float | None = None
    Float64: float | None = None

    def members(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if getattr(self, f.name) is not None}

    def checked(self, path: str) -> DML_SCALAR_UNION:
        """A copy whose one member fits its C type; raises FieldError otherwise."""
        members = self.members()
        if len(members) > 1:
            raise _field_error(FIELD_TYPE, path, "one member set (a union holds one value)", f"{len(members)} members: {', '.join(members)}")
        if not members:
            return DML_SCALAR_UNION()
        (name, value), = members.items()
        member_path = f"{path}.{name}"
        if name == "Bytes":
            if not isinstance(value, (bytes, bytearray)) or len(value) != 8:
                raise _field_error(FIELD_TYPE, member_path, "8 bytes", value)
            return DML_SCALAR_UNION(Bytes=bytes(value))
        _, low, high = _SCALAR_MEMBERS[name]
        if name.startswith("Float"):
            return DML_SCALAR_UNION(**{name: to_float(value, member_path)})
        return DML_SCALAR_UNION(**{name: to_int(value, member_path, int(low), int(high))})

    def to_bytes(self) -> bytes:
        members = self.members()
        if not members:
            return bytes(8)
        (name, value), = members.items()
        if name == "Bytes":
            return bytes(value)
        packed = _pack(_SCALAR_MEMBERS[name][0], value)
        return packed + bytes(8 - len(packed))


# ---------------------------------------------------------------------------------------
# C++ printing


def to_cpp(desc: Any, name: str = "desc", storage: str = "const") -> str:
    """C++ statements that build ``desc`` against DirectML.h, ending with ``<struct> <name>``.

    ``storage`` prefixes every declaration (``"static const"`` inside a function whose
    result must outlive the call).
    """
    lines: list[str] = []
    refused: FieldError | None = None
    try:  # print what DirectML would receive: DimensionCount derived, bare buffer descs wrapped
        desc = normalized(desc, type(desc).__name__)
    except FieldError as error:
        refused = error  # a desc C could not hold still prints as far as it goes
    try:
        _emit_struct(desc, name, lines, storage)
    except (TypeError, ValueError, OverflowError, AttributeError, StructError):
        if refused is None:
            raise
        return f"// {type(desc).__name__} has no C++ form: {refused.finding}"
    return "\n".join(lines)


def _cpp_value(f: dataclasses.Field[Any], value: Any, var: str, lines: list[str], storage: str) -> str:  # noqa: PLR0911
    kind = kind_of(f)
    if value is None:
        return "nullptr"
    if kind in (Kind.UINT_ARRAY, Kind.INT_ARRAY):
        lines.append(f"{storage} {'UINT' if kind is Kind.UINT_ARRAY else 'INT'} {var}[] = {{{', '.join(str(v) for v in value)}}};")
        return var
    if kind is Kind.FLOAT_ARRAY:
        lines.append(f"{storage} FLOAT {var}[] = {{{', '.join(_cpp_float(v) for v in value)}}};")
        return var
    if kind in (Kind.TENSOR_ARRAY, Kind.OPERATOR_ARRAY):
        for i, element in enumerate(value):
            _emit_struct(element, f"{var}_{i}", lines, storage)
        element_type = "DML_TENSOR_DESC" if kind is Kind.TENSOR_ARRAY else "DML_OPERATOR_DESC"
        lines.append(f"{storage} {element_type} {var}[] = {{{', '.join(f'{var}_{i}' for i in range(len(value)))}}};")
        return var
    if kind in (Kind.TENSOR, Kind.OPERATOR, Kind.DESC_POINTER, Kind.STRUCT_POINTER):
        _emit_struct(value, var, lines, storage)
        return f"&{var}"
    if kind is Kind.STRUCT:
        return "{" + ", ".join(_cpp_value(g, getattr(value, g.name), f"{var}_{g.name}", lines, storage) for g in dataclasses.fields(value)) + "}"
    if kind is Kind.SCALAR_UNION:  # through the first member, Bytes: exact for every member
        return "{{" + ", ".join(f"0x{b:02x}" for b in value.to_bytes()) + "}}"
    if kind is Kind.BOOL:
        return "TRUE" if value else "FALSE"
    if kind is Kind.FLOAT:
        return _cpp_float(value)
    if kind is Kind.UINT64:
        return f"{value}ull"
    if kind is Kind.FLAGS and isinstance(value, enum.Flag) and value.value != 0:
        return " | ".join(c_name(m) for m in type(value) if m in value)
    if kind in (Kind.ENUM, Kind.FLAGS) and isinstance(value, enum.Enum):
        return c_name(value)
    return str(int(value))


def _cpp_float(value: float) -> str:
    if value != value or value in (float("inf"), float("-inf")):  # NaN and infinities have no literal
        return "NAN" if value != value else ("INFINITY" if value > 0 else "-INFINITY")
    return f"{float(value)!r}f"


def _emit_struct(desc: Any, var: str, lines: list[str], storage: str) -> None:
    struct_name = type(desc).__name__
    values = [_cpp_value(f, getattr(desc, f.name), f"{var}_{f.name}", lines, storage) for f in dataclasses.fields(desc)]
    lines.append(f"{storage} {struct_name} {var} = {{{', '.join(values)}}};")


@dataclass(frozen=True)
class OperatorFacts:
    """What DirectML.h and DirectML's operator schema say about one operator type."""

    operator_type: Any  # DML_OPERATOR_TYPE
    desc_class: type
    family: str  # the module of dmlpy.operators that holds its rules
    introduced: DML_FEATURE_LEVEL
    in_place: bool  # DML_SCHEMA_OPERATOR_SUPPORT_FLAG_IN_PLACE_EXECUTION
    in_schema: bool  # False: newer than the schema the facts came from (roles inferred from names)
    summary: str

    @property
    def page(self) -> str:
        return f"https://learn.microsoft.com/windows/win32/api/directml/ns-directml-{self.desc_class.__name__.lower()}"


class CStruct:
    """Base of every desc dataclass: ``str()`` prints the C++ that builds it, ``repr()`` one field a line."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # @dataclass writes its own __repr__ unless the class body has one; this runs before
        # the decorator, so every desc keeps the short multi-line form
        if "__repr__" not in cls.__dict__:
            cls.__repr__ = CStruct.__repr__  # type: ignore[method-assign]

    def __repr__(self) -> str:
        from dmlpy.display import desc_repr  # noqa: PLC0415 - display sits above every desc module

        return desc_repr(self)

    def _repr_html_(self) -> str:
        from dmlpy.display import desc_html  # noqa: PLC0415

        return desc_html(self)

    def __str__(self) -> str:
        return to_cpp(self)

    def to_cpp(self, name: str = "desc") -> str:
        return to_cpp(self, name)


__all__ = [
    "ARRAY_KINDS",
    "DML_SCALAR_UNION",
    "POINTER_KINDS",
    "CStruct",
    "OperatorFacts",
    "FieldError",
    "Kind",
    "c_field",
    "is_struct",
    "kind_of",
    "normalized",
    "to_cpp",
]
