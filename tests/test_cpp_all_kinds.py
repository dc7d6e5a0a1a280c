"""The C++ that str(desc) prints compiles against dml_types.h for every field kind the generated descs have.

Tensor arrays (JOIN), operator-desc arrays (RNN), helper structs by value (ROI_POOLING's DML_SIZE_2D)
and by pointer (IDENTITY's DML_SCALE_BIAS), DML_SCALAR_UNION (FILL_VALUE_CONSTANT), INT and FLOAT
arrays (SLICE1, RESAMPLE1). gcc's static asserts in the header and a runtime check of the union's
bytes make the compiled values the ones dmlpy holds.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import dmlpy
from dmlpy import DML_OPERATOR_TYPE as OP
from dmlpy import buffer_tensor
from dmlpy.operators import DML_OPERATOR_DESC
from dmlpy.operators.descs import (
    DML_ACTIVATION_SIGMOID_OPERATOR_DESC,
    DML_ACTIVATION_TANH_OPERATOR_DESC,
    DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC,
    DML_FILL_VALUE_CONSTANT_OPERATOR_DESC,
    DML_JOIN_OPERATOR_DESC,
    DML_RESAMPLE1_OPERATOR_DESC,
    DML_RNN_OPERATOR_DESC,
    DML_ROI_POOLING_OPERATOR_DESC,
    DML_SCALE_BIAS,
    DML_SIZE_2D,
    DML_SLICE1_OPERATOR_DESC,
)
from dmlpy.structs import DML_SCALAR_UNION

GXX = shutil.which("g++")
pytestmark = pytest.mark.skipif(GXX is None, reason="g++ is not installed")
F32 = np.float32


def _descs() -> dict[str, object]:
    t = buffer_tensor(F32, (1, 1, 2, 2))
    return {
        "join": DML_JOIN_OPERATOR_DESC(None, [t, buffer_tensor(F32, (1, 1, 3, 2))], buffer_tensor(F32, (1, 1, 5, 2)), 2),
        "rnn": DML_RNN_OPERATOR_DESC(t, t, t, None, None, None, t, None, None, [DML_OPERATOR_DESC(OP.ACTIVATION_TANH, DML_ACTIVATION_TANH_OPERATOR_DESC()),
                                                                          DML_OPERATOR_DESC(OP.ACTIVATION_SIGMOID, DML_ACTIVATION_SIGMOID_OPERATOR_DESC())]),
        "roi": DML_ROI_POOLING_OPERATOR_DESC(t, buffer_tensor(F32, (1, 1, 1, 5)), t, 0.5, DML_SIZE_2D(2, 2)),
        "identity": DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC(t, t, DML_SCALE_BIAS(2.0, -1.0)),
        "fill": DML_FILL_VALUE_CONSTANT_OPERATOR_DESC(t, dmlpy.DML_TENSOR_DATA_TYPE.FLOAT32, DML_SCALAR_UNION(Float32=1.5)),
        "slice": DML_SLICE1_OPERATOR_DESC(t, t, None, [0, 0, 0, 0], [1, 1, 2, 2], [1, 1, -1, 1]),
        "resample": DML_RESAMPLE1_OPERATOR_DESC(t, t, dmlpy.DML_INTERPOLATION_MODE.LINEAR, None, [1.0, 1.0, 1.0, 1.0], [0.5] * 4, [-0.5] * 4),
    }


def test_str_of_every_field_kind_compiles_against_dml_types_h(tmp_path: Path) -> None:
    body = []
    for name, desc in _descs().items():
        body.append(f"static int {name}() {{")
        body += ["    " + line for line in desc.to_cpp(name).splitlines()]  # type: ignore[attr-defined]
        body += [f"    return (int)sizeof({name});", "}"]
    union_check = [
        "    " + line for line in _descs()["fill"].to_cpp("value").splitlines()  # type: ignore[attr-defined]
    ] + ["    if (value.Value.Float32 != 1.5f) return 1;", "    if (rnn() == 0 || join() == 0) return 2;"]
    calls = " + ".join(f"{name}()" for name in _descs())
    source = ['#include "dmlpy/dml_types.h"', *body, "int main(void) {", *union_check, f"    return ({calls}) > 0 ? 0 : 3;", "}"]
    (tmp_path / "all_kinds.cpp").write_text("\n".join(source), encoding="utf-8")
    build = subprocess.run([GXX, "-std=c++17", "-Wall", "-Wextra", "-Werror", f"-I{dmlpy.get_include()}", "all_kinds.cpp", "-o", "all_kinds"],  # type: ignore[list-item]
                           cwd=tmp_path, capture_output=True, text=True, check=False)  # fmt: skip
    assert build.returncode == 0, build.stderr
    assert subprocess.run([str(tmp_path / "all_kinds")], check=False).returncode == 0


def test_emit_operators_writes_a_header_for_every_field_kind_that_compiles(tmp_path: Path) -> None:
    from dmlpy.interop.cpp import emit_operators  # noqa: PLC0415

    (tmp_path / "descs.h").write_text(emit_operators(_descs()), encoding="utf-8")
    calls = " && ".join(f"dmlpy_{name}()->Desc != nullptr" for name in _descs())
    (tmp_path / "main.cpp").write_text(f'#include "descs.h"\nint main() {{ return ({calls}) ? 0 : 1; }}\n', encoding="utf-8")
    build = subprocess.run([GXX, "-std=c++17", "-Wall", "-Wextra", "-Werror", "-DDMLPY_TYPES_ONLY", f"-I{dmlpy.get_include()}", "main.cpp", "-o", "main"],  # type: ignore[list-item]
                           cwd=tmp_path, capture_output=True, text=True, check=False)  # fmt: skip
    assert build.returncode == 0, build.stderr
    assert subprocess.run([str(tmp_path / "main")], check=False).returncode == 0
