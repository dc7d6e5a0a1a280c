"""Support tables as data, printed the way DirectML's reference pages print them.

Each operator page has a "Tensor support" table per feature level: for every tensor its
kind (input or output), the dimension counts and the data types it accepts, and "Tensor
constraints" between tensors (same DataType, DimensionCount, Sizes). They live in
``dmlpy/data/support/<family>.json``; the validator and the generated docs both read them, so
they cannot drift apart.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from dmlpy.enums import DML_FEATURE_LEVEL as FL
from dmlpy.enums import DML_OPERATOR_TYPE as OP
from dmlpy.enums import DML_REDUCE_FUNCTION
from dmlpy.enums import DML_TENSOR_DATA_TYPE as DT

SUPPORT_DIR = Path(__file__).resolve().parent / "data" / "support"
SIXTY_FOUR_BIT = (DT.FLOAT64, DT.UINT64, DT.INT64)


@dataclass(frozen=True)
class TensorSupport:
    """One row of a tensor-support table: what one tensor accepts at one feature level."""

    dimension_counts: tuple[int, int]  # inclusive range
    data_types: tuple[DT, ...] | None  # None: the page leaves the column blank (FOLD, UNFOLD), so no type is refused

    @property
    def ranks(self) -> str:
        """The dimension counts as one rank ("4D") or an inclusive range ("4-5D")."""
        low, high = self.dimension_counts
        return f"{low}D" if low == high else f"{low}-{high}D"


@dataclass(frozen=True)
class TensorSlot:
    """A tensor field of an operator desc; slot order is field order (DirectML's operator schema)."""

    name: str
    kind: str  # "input" or "output"
    optional: bool = False
    array: bool = False  # an array of tensors with a count field (JOIN's InputTensors)


@dataclass(frozen=True)
class OperatorSupport:
    operator_type: OP
    introduced: FL
    slots: tuple[TensorSlot, ...]
    # feature level -> tensor name -> support; the row in force is the highest level <= the device's
    tables: Mapping[FL, Mapping[str, TensorSupport]]
    source: str = ""
    constraints: tuple[Constraint, ...] = ()
    other: tuple[str, ...] = ()
    # REDUCE's page has one set of tables per group of DML_REDUCE_FUNCTION values: names -> tables
    tables_by_function: Mapping[tuple[str, ...], Mapping[FL, Mapping[str, TensorSupport]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Every operator of this type is validated against these tables: read-only, like the rest of the spec.
        object.__setattr__(self, "tables", _frozen_tables(self.tables))
        object.__setattr__(self, "tables_by_function", MappingProxyType({names: _frozen_tables(tables) for names, tables in self.tables_by_function.items()}))

    @property
    def inputs(self) -> tuple[TensorSlot, ...]:
        return tuple(s for s in self.slots if s.kind == "input")

    @property
    def outputs(self) -> tuple[TensorSlot, ...]:
        return tuple(s for s in self.slots if s.kind == "output")

    def table_at(self, feature_level: FL, function: str | None = None) -> tuple[FL, Mapping[str, TensorSupport]] | None:
        """The table in force at ``feature_level`` (for REDUCE, the tables of ``function``) and the level it is from.

        Below a page's lowest table, but at or above the operator's introduction (TOP_K and
        MAX_UNPOOLING print their first table at a later level than DirectML.h introduces them),
        the lowest table is the best statement there is, and it is used.
        """
        tables = self.tables
        if function is not None:
            tables = next((t for names, t in self.tables_by_function.items() if function in names), tables)
        if not tables:
            return None
        levels = [level for level in tables if level <= feature_level]
        level = max(levels) if levels else min(tables)
        return level, tables[level]


def _frozen_tables(tables: Mapping[FL, Mapping[str, TensorSupport]]) -> Mapping[FL, Mapping[str, TensorSupport]]:
    return MappingProxyType({level: MappingProxyType(dict(table)) for level, table in tables.items()})


@dataclass(frozen=True)
class Constraint:
    """A documented tensor constraint: the named tensors agree on each property of ``same``."""

    tensors: tuple[str, ...]  # tensor fields; an array field stands for every element
    same: tuple[str, ...]  # a subset of SAME_PROPERTIES


SAME_PROPERTIES = ("DataType", "DimensionCount", "Sizes")
KINDS = ("input", "optional input", "output", "optional output")


@dataclass(frozen=True)
class SupportData:
    """One operator's entry of ``dmlpy/data/support/<family>.json``."""

    page: str
    tables: dict[FL, dict[str, TensorSupport]]
    kinds: dict[str, str]  # tensor -> one of KINDS, as the tables print it
    constraints: tuple[Constraint, ...]
    other: tuple[str, ...]  # constraints stated in words, for operator-specific rules
    tables_by_function: dict[tuple[str, ...], dict[FL, dict[str, TensorSupport]]]


class SupportDataError(ValueError):
    """A support data file that does not follow the format (names the file and the entry)."""


def _level(text: Any, where: str) -> FL:
    try:
        major, minor = (int(part) for part in str(text).split("."))
        return FL(major << 12 | minor << 8)
    except ValueError:
        msg = f"{where}: {text!r} is not a feature level such as \"5.1\""
        raise SupportDataError(msg) from None


def _expect(condition: bool, where: str, what: str) -> None:
    if not condition:
        raise SupportDataError(f"{where}: {what}")


def _tensor_row(row: Any, where: str) -> tuple[str, TensorSupport]:
    _expect(isinstance(row, dict) and set(row) == {"kind", "dims", "types"}, where, "expected an object with kind, dims and types")
    _expect(row["kind"] in KINDS, f"{where}.kind", f"{row['kind']!r} is not one of {', '.join(KINDS)}")
    dims = row["dims"]
    _expect(isinstance(dims, list) and len(dims) == 2 and all(isinstance(d, int) and not isinstance(d, bool) for d in dims) and 1 <= dims[0] <= dims[1] <= 8,
            f"{where}.dims", f"{dims!r} is not an inclusive [low, high] within 1 to 8")  # fmt: skip
    types = row["types"]
    if types is None:  # the page leaves the data type column blank
        return row["kind"], TensorSupport((dims[0], dims[1]), None)
    _expect(isinstance(types, list) and bool(types) and all(t in DT.__members__ and t != "UNKNOWN" for t in types), f"{where}.types",
            f"{types!r} is not a non-empty list of DML_TENSOR_DATA_TYPE names (or null where the page gives none)")  # fmt: skip
    return row["kind"], TensorSupport((dims[0], dims[1]), tuple(DT[t] for t in types))


def _tables(support: Any, where: str, kinds: dict[str, str]) -> dict[FL, dict[str, TensorSupport]]:
    _expect(isinstance(support, dict), where, "expected an object keyed by feature level")
    tables: dict[FL, dict[str, TensorSupport]] = {}
    for level_text, table in support.items():
        level = _level(level_text, where)
        _expect(isinstance(table, dict) and bool(table), f"{where}.{level_text}", "expected an object keyed by tensor field")
        tables[level] = {}
        for tensor, row in table.items():
            kind, tables[level][tensor] = _tensor_row(row, f"{where}.{level_text}.{tensor}")
            _expect(kinds.setdefault(tensor, kind) == kind, f"{where}.{level_text}.{tensor}.kind", f"is {kind!r}, but another level says {kinds[tensor]!r}")
    return dict(sorted(tables.items()))


def parse_support(data: Any, source: str) -> dict[str, SupportData]:
    """The entries of one support data file, keyed by ``DML_OPERATOR_<NAME>``; raises SupportDataError."""
    _expect(isinstance(data, dict), source, "expected an object keyed by DML_OPERATOR_<NAME>")
    out: dict[str, SupportData] = {}
    for name, entry in data.items():
        where = f"{source}: {name}"
        _expect(name.removeprefix("DML_OPERATOR_") in OP.__members__, where, "is not a DML_OPERATOR_TYPE name")
        _expect(isinstance(entry, dict) and {"page", "support"} <= set(entry) <= {"page", "constraints", "support", "other", "since_page", "support_by_function"}, where,
                "expected an object with page, support and optionally constraints, other, since_page and support_by_function")  # fmt: skip
        kinds: dict[str, str] = {}
        tables = _tables(entry["support"], f"{where}.support", kinds)
        by_function: dict[tuple[str, ...], dict[FL, dict[str, TensorSupport]]] = {}
        for names, support in entry.get("support_by_function", {}).items():
            functions = tuple(names.split(","))
            _expect(all(f in DML_REDUCE_FUNCTION.__members__ for f in functions), f"{where}.support_by_function", f"{names!r} is not a list of DML_REDUCE_FUNCTION names")
            by_function[functions] = _tables(support, f"{where}.support_by_function.{names}", kinds)
        constraints = []
        for i, constraint in enumerate(entry.get("constraints", [])):
            at = f"{where}.constraints[{i}]"
            _expect(isinstance(constraint, dict) and set(constraint) == {"tensors", "same"}, at, "expected an object with tensors and same")
            tensors, same = constraint["tensors"], constraint["same"]
            _expect(isinstance(tensors, list) and len(tensors) >= 2 and all(isinstance(t, str) for t in tensors), f"{at}.tensors", "expected two or more tensor field names")
            _expect(isinstance(same, list) and bool(same) and all(p in SAME_PROPERTIES for p in same), f"{at}.same", f"expected a non-empty subset of {', '.join(SAME_PROPERTIES)}")
            constraints.append(Constraint(tuple(tensors), tuple(same)))
        other = entry.get("other", [])
        _expect(isinstance(other, list) and all(isinstance(o, str) for o in other), f"{where}.other", "expected a list of strings")
        out[name] = SupportData(str(entry["page"]), tables, kinds, tuple(constraints), tuple(other), by_function)
    return out


def load_support(directory: Path = SUPPORT_DIR) -> dict[str, SupportData]:
    """Every operator's support data from the JSON files of ``directory``."""
    out: dict[str, SupportData] = {}
    for path in sorted(directory.glob("*.json")):
        for name, entry in parse_support(json.loads(path.read_text(encoding="utf-8")), path.name).items():
            _expect(name not in out, f"{path.name}: {name}", "appears in two support data files")
            out[name] = entry
    return out


# Every operator's support, filled by dmlpy.operators when it registers the operators.
OPERATORS: dict[OP, OperatorSupport] = {}


def data_type_supported(data_type: DT, feature_level: FL) -> bool:
    """What the emulated device answers to DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT.

    The 64-bit types arrive with FL 3.0 and the 4-bit ones with FL 6.3 (the DML_TENSOR_DATA_TYPE page and the DML_FEATURE_LEVEL page).
    """
    if data_type == DT.UNKNOWN:
        return False
    if data_type in SIXTY_FOUR_BIT:
        return feature_level >= FL.LEVEL_3_0
    if data_type in (DT.UINT4, DT.INT4):
        return feature_level >= FL.LEVEL_6_3
    return True


def max_dimension_count(feature_level: FL) -> int:
    """DML_TENSOR_DIMENSION_COUNT_MAX (5) before FL 3.0, DML_TENSOR_DIMENSION_COUNT_MAX1 (8) from it."""
    return 8 if feature_level >= FL.LEVEL_3_0 else 5


__all__ = [
    "OPERATORS",
    "SIXTY_FOUR_BIT",
    "Constraint",
    "OperatorSupport",
    "SupportData",
    "SupportDataError",
    "load_support",
    "parse_support",
    "TensorSlot",
    "TensorSupport",
    "data_type_supported",
    "max_dimension_count",
]
