"""The generated types: current with the facts, one desc per operator, and one layout on all three sides.

The layout test computes every struct's size and field offsets three independent ways: ctypes
structures built from the Python dataclasses' field metadata, gcc compiling
``include/dmlpy/dml_types.h``, and cffi's compiled module (``dml_types.cdef``). All three must agree
for every struct.
"""

from __future__ import annotations

import ctypes
import dataclasses
import json
import shutil
import subprocess
import tempfile
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from conftest import _skip_native_unless_required

import dmlpy
from dmlpy import codegen
from dmlpy.enums import DML_FEATURE_LEVEL, DML_OPERATOR_TYPE, DML_PADDING_MODE, c_name, value_since
from dmlpy.operators import DML_OPERATOR_DESC
from dmlpy.operators.descs import HELPER_STRUCTS, OPERATORS
from dmlpy.structs import DML_SCALAR_UNION, POINTER_KINDS, Kind, kind_of
from dmlpy.tensor import DML_BUFFER_TENSOR_DESC, DML_TENSOR_DESC

ROOT = Path(__file__).resolve().parents[1]
FACTS = json.loads((ROOT / "dmlpy" / "data" / "dml_api.json").read_text(encoding="utf-8"))
PYTHON_STRUCTS = [DML_BUFFER_TENSOR_DESC, DML_TENSOR_DESC, DML_OPERATOR_DESC, *HELPER_STRUCTS, *(facts.desc_class for facts in OPERATORS.values())]


# The generated sources are checked in this source tree; a dmlpy installed from a wheel or sdist (the
# suite run against an installed copy) has no include/ beside its package to check.
FROM_THIS_TREE = pytest.mark.skipif(codegen.ROOT != Path(__file__).resolve().parents[1], reason="dmlpy is imported from an installed copy, not this source tree")


@FROM_THIS_TREE
def test_generated_files_match_the_facts() -> None:
    assert [str(p.relative_to(ROOT)) for p in codegen.stale()] == []


def test_a_changed_fact_makes_the_generated_files_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    changed = json.loads(json.dumps(FACTS))
    changed["enums"]["DML_PADDING_MODE"]["values"][-1]["since"] = "6.3"
    monkeypatch.setattr(codegen, "facts", lambda: changed)
    stale = {p.name for p in codegen.stale()}
    assert stale == {"_dml_enums.py", "dml_types.h"}


@FROM_THIS_TREE
def test_every_generated_file_says_it_is_generated() -> None:
    for path in codegen.sources():
        assert codegen.MARK in path.read_text(encoding="utf-8").splitlines()[0], path


def test_every_operator_type_of_the_facts_has_a_desc_with_the_c_fields_in_order() -> None:
    for op in FACTS["operators"]:
        operator_type = DML_OPERATOR_TYPE[op["operator"].removeprefix("DML_OPERATOR_")]
        facts = OPERATORS[operator_type]
        struct = op["desc_struct"] or "DML_SCATTER_OPERATOR_DESC"  # SCATTER_ELEMENTS is SCATTER's alias
        assert facts.desc_class.__name__ == struct
        assert [f.name for f in dataclasses.fields(facts.desc_class)] == [f["name"] for f in FACTS["structs"][struct]["fields"]]
        assert c_name(facts.introduced) == "DML_FEATURE_LEVEL_" + op["since"].replace(".", "_")
    assert len({f.desc_class for f in OPERATORS.values()}) == 177


@pytest.mark.parametrize(
    ("member", "level"),
    [
        pytest.param(DML_PADDING_MODE.SYMMETRIC, DML_FEATURE_LEVEL.LEVEL_3_0, id="symmetric padding arrived at FL 3.0"),
        pytest.param(DML_PADDING_MODE.WRAP, DML_FEATURE_LEVEL.LEVEL_6_4, id="wrap padding arrived at FL 6.4"),
        pytest.param(DML_OPERATOR_TYPE.ACTIVATION_GELU, DML_FEATURE_LEVEL.LEVEL_5_1, id="GELU arrived at FL 5.1"),
    ],
)
def test_every_enum_value_knows_the_feature_level_that_added_it(member: Any, level: DML_FEATURE_LEVEL) -> None:
    assert value_since(member, type(member)) == level


def test_the_4_bit_data_types_of_fl_6_3_are_enum_values() -> None:
    assert dmlpy.DML_TENSOR_DATA_TYPE_UINT4 == 12 and dmlpy.DML_TENSOR_DATA_TYPE_INT4 == 13


def test_every_desc_has_a_docstring_with_its_feature_level_and_page() -> None:
    for facts in OPERATORS.values():
        doc = facts.desc_class.__doc__ or ""
        assert facts.page in doc and c_name(facts.introduced) in doc and facts.summary in doc


# ---------------------------------------------------------------------------------------
# Layout, three ways

_CTYPES_SCALARS = {
    Kind.UINT: ctypes.c_uint32, Kind.DIMENSION_COUNT: ctypes.c_uint32, Kind.INT: ctypes.c_int32, Kind.BOOL: ctypes.c_int32,
    Kind.FLOAT: ctypes.c_float, Kind.UINT64: ctypes.c_uint64, Kind.ENUM: ctypes.c_int, Kind.FLAGS: ctypes.c_int,
}  # fmt: skip
_UNION_MEMBERS = {
    "Bytes": ctypes.c_ubyte * 8, "Int8": ctypes.c_int8, "UInt8": ctypes.c_uint8, "Int16": ctypes.c_int16, "UInt16": ctypes.c_uint16,
    "Int32": ctypes.c_int32, "UInt32": ctypes.c_uint32, "Int64": ctypes.c_int64, "UInt64": ctypes.c_uint64,
    "Float32": ctypes.c_float, "Float64": ctypes.c_double,
}  # fmt: skip


@cache
def _ctypes_struct(cls: type) -> Any:
    """A ctypes structure laid out from the dataclass's field kinds alone."""
    if cls is DML_SCALAR_UNION:
        return type("DML_SCALAR_UNION", (ctypes.Union,), {"_fields_": [(f.name, _UNION_MEMBERS[f.name]) for f in dataclasses.fields(cls)]})
    fields = []
    for f in dataclasses.fields(cls):
        kind = kind_of(f)
        if kind in POINTER_KINDS:
            c_type: Any = ctypes.c_void_p
        elif kind is Kind.STRUCT:
            c_type = _ctypes_struct(f.metadata["struct"])
        elif kind is Kind.SCALAR_UNION:
            c_type = _ctypes_struct(DML_SCALAR_UNION)
        else:
            c_type = _CTYPES_SCALARS[kind]
        fields.append((f.name, c_type))
    return type(cls.__name__, (ctypes.Structure,), {"_fields_": fields})


def _python_layout(cls: type) -> tuple[int, dict[str, int]]:
    structure = _ctypes_struct(cls)
    return ctypes.sizeof(structure), {f.name: getattr(structure, f.name).offset for f in dataclasses.fields(cls)}


def _c_struct_fields() -> dict[str, list[str]]:
    structs = {name: [f["name"] for f in body["fields"]] for name, body in FACTS["structs"].items()}
    structs["DML_SCALAR_UNION"] = list(_UNION_MEMBERS)
    return structs


@cache
def _header_layouts() -> dict[str, tuple[int, dict[str, int]]]:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc is not installed")
    structs = _c_struct_fields()
    lines = ["#include <stdio.h>", "#include <stddef.h>", '#include "dmlpy/dml_types.h"', "int main(void) {"]
    for name, fields in structs.items():
        lines.append(f'    printf("%s %zu\\n", "{name}", sizeof({name}));')
        lines += [f'    printf("%s.%s %zu\\n", "{name}", "{f}", offsetof({name}, {f}));' for f in fields]
    lines += ["    return 0;", "}"]
    build = Path(tempfile.mkdtemp(prefix="dmlpy-layout-"))
    try:
        (build / "layout.c").write_text("\n".join(lines), encoding="utf-8")
        subprocess.run([gcc, "-std=c11", "-Wall", "-Werror", f"-I{ROOT / 'include'}", "layout.c", "-o", "layout"], cwd=build, check=True, capture_output=True)
        output = subprocess.run([str(build / "layout")], check=True, capture_output=True, text=True).stdout
    finally:
        shutil.rmtree(build, ignore_errors=True)
    out: dict[str, tuple[int, dict[str, int]]] = {}
    for line in output.splitlines():
        key, value = line.split()
        if "." in key:
            struct, field = key.split(".")
            out[struct][1][field] = int(value)
        else:
            out[key] = (int(value), {})
    return out


def _cdef_layout(name: str, fields: list[str]) -> tuple[int, dict[str, int]]:
    from dmlpy._native import ffi  # noqa: PLC0415 - only when the module is built

    return ffi.sizeof(name), {f: ffi.offsetof(name, f) for f in fields}


def test_python_descs_and_the_header_have_one_layout() -> None:
    header = _header_layouts()
    mismatched = [cls.__name__ for cls in PYTHON_STRUCTS if _python_layout(cls) != header[cls.__name__]]
    assert mismatched == []
    assert len(PYTHON_STRUCTS) >= 177 + 3 + 3


def test_the_header_and_the_cdef_have_one_layout_for_every_struct() -> None:
    _skip_native_unless_required()
    header = _header_layouts()
    structs = _c_struct_fields()
    mismatched = [name for name, fields in structs.items() if _cdef_layout(name, fields) != header[name]]
    assert mismatched == []
    assert len(structs) == len(FACTS["structs"]) + 1


def test_the_layout_test_sees_a_field_out_of_order() -> None:
    @dataclasses.dataclass
    class Swapped:
        Alpha: float = dataclasses.field(default=0.0, metadata={"kind": Kind.FLOAT})
        InputTensor: Any = dataclasses.field(default=None, metadata={"kind": Kind.TENSOR})

    size, offsets = _python_layout(Swapped)
    assert (size, offsets) == (16, {"Alpha": 0, "InputTensor": 8})


@pytest.mark.parametrize("level", list(DML_FEATURE_LEVEL), ids=lambda level: level.dotted)
def test_the_header_compiles_at_every_target_version_and_declares_only_what_it_had(level: DML_FEATURE_LEVEL, tmp_path: Path) -> None:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc is not installed")
    # an operator desc of the level compiles; one of the next level is undeclared
    present = [f.desc_class.__name__ for f in OPERATORS.values() if f.introduced == level][:1]
    absent = [f.desc_class.__name__ for f in OPERATORS.values() if f.introduced > level][:1]
    source = '#include "dmlpy/dml_types.h"\n' + "".join(f"{name} present_{i};\n" for i, name in enumerate(present))
    (tmp_path / "ok.c").write_text(source, encoding="utf-8")
    flags = ["-std=c11", "-Wall", "-Werror", "-fsyntax-only", f"-DDML_TARGET_VERSION=0x{int(level):x}", f"-I{ROOT / 'include'}"]
    done = subprocess.run([gcc, *flags, "ok.c"], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    if absent:
        (tmp_path / "absent.c").write_text(f'#include "dmlpy/dml_types.h"\n{absent[0]} absent;\n', encoding="utf-8")
        assert subprocess.run([gcc, *flags, "absent.c"], cwd=tmp_path, capture_output=True, check=False).returncode != 0


# ---------------------------------------------------------------------------------------
# Per-field docstrings (dmlpy/data/field_docs.json)

# The operators issue #13 asks to run: their fields must all be described, none generated from the schema.
_ISSUE_13 = {"GEMM", "MAX_POOLING", "MAX_POOLING1", "MAX_POOLING2", "REDUCE", "ARGMIN", "ARGMAX", "BATCH_NORMALIZATION", "MEAN_VARIANCE_NORMALIZATION",
             "MEAN_VARIANCE_NORMALIZATION1", "JOIN", "SPLIT", "SLICE", "SLICE1", "PADDING", "PADDING1", "CAST", "GATHER", "GATHER_ELEMENTS", "GATHER_ND",
             "GATHER_ND1", "RESAMPLE", "RESAMPLE1"}  # fmt: skip


def _all_fields() -> list[tuple[str, str, codegen.Field]]:
    return [(op["operator"].removeprefix("DML_OPERATOR_"), op["desc_struct"], f) for op in codegen.operators() for f in codegen.fields_of(op["desc_struct"])]


def _in_issue_13(short: str) -> bool:
    return short in _ISSUE_13 or short.startswith(("ELEMENT_WISE_", "ACTIVATION_"))


def test_fields_without_a_description_are_few_and_none_belongs_to_issue_13s_operators_or_a_name_three_structs_share() -> None:
    fields = _all_fields()
    uses = Counter(f.name for _, _, f in fields)
    fallback = [(struct, f.name) for _, struct, f in fields if codegen.field_doc(struct, f)[1]]
    print(f"{len(fallback)} of {len(fields)} desc fields fall back to a line generated from the schema: {fallback}")
    assert [(s, n) for short, s, f in fields for n in [f.name] if (s, n) in fallback and (_in_issue_13(short) or uses[n] >= 3)] == []
    assert len(fallback) <= len(fields) // 20


def test_every_field_of_every_desc_has_a_line_in_its_class_docstring_with_its_c_type_and_what_counts_it() -> None:
    for _, struct, f in _all_fields():
        doc = " ".join((getattr(dmlpy, struct).__doc__ or "").split())  # the wrapped lines joined again
        notes = ", ".join([f.c_type, *([f"{f.length} entries"] if f.length else []), *(["optional"] if f.optional else [])])
        assert f"{f.name} ({notes}): {' '.join(codegen.field_doc(struct, f)[0].split())}" in doc, (struct, f.name)


def test_the_overrides_name_real_structs_and_fields() -> None:
    structs = {op["desc_struct"] for op in codegen.operators()}
    for struct, fields in codegen.field_docs()["overrides"].items():
        assert struct in structs
        assert set(fields) <= {f.name for f in codegen.fields_of(struct)}, struct


@pytest.mark.parametrize(
    ("struct", "field", "line"),
    [
        pytest.param("DML_GEMM_OPERATOR_DESC", "Alpha", "The factor of the product", id="a per-struct override wins over the name's meaning"),
        pytest.param("DML_ACTIVATION_LEAKY_RELU_OPERATOR_DESC", "Alpha", "The slope of the negative part", id="the same name reads differently in another struct"),
        pytest.param("DML_AVERAGE_POOLING_OPERATOR_DESC", "WindowSize", "The window's extent", id="a name without an override takes the shared meaning"),
    ],
)
def test_a_fields_line_comes_from_the_override_else_the_shared_table(struct: str, field: str, line: str) -> None:
    f = next(f for f in codegen.fields_of(struct) if f.name == field)
    text, generated = codegen.field_doc(struct, f)
    assert text.startswith(line) and not generated


def test_a_name_the_table_lacks_gets_a_line_from_the_schema_and_a_changed_line_makes_the_descs_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    docs = json.loads(json.dumps(codegen.field_docs()))
    del docs["fields"]["CTensor"], docs["overrides"]["DML_GEMM_OPERATOR_DESC"]["CTensor"]
    monkeypatch.setattr(codegen, "field_docs", lambda: docs)
    f = next(f for f in codegen.fields_of("DML_GEMM_OPERATOR_DESC") if f.name == "CTensor")
    assert codegen.field_doc("DML_GEMM_OPERATOR_DESC", f) == ("An input tensor (described on the struct's page).", True)
    assert codegen.field_line("DML_GEMM_OPERATOR_DESC", f) == "CTensor (const DML_TENSOR_DESC*, optional): An input tensor (described on the struct's page)."
    if codegen.ROOT == Path(__file__).resolve().parents[1]:
        assert {p.name for p in codegen.stale()} == {"convolution.py"}
