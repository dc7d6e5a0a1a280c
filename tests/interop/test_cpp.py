"""Emitted C++: it compiles against dml_types.h for every operator and a graph, and the descs it
builds run on dmlpy's native library to the same outputs as dmlpy.run.

Compilation: ``g++ -std=c++17 -Wall -Wextra -Werror -DDMLPY_TYPES_ONLY -I include`` (``-Wextra``
adds -Wmissing-field-initializers, so a struct initializer with a field too few fails too).
Execution: a small C++ main includes the emitted headers, loads the built extension module
(``dmlpy/_native*.so``, which exports ``dmlpy_execute``) with dlopen, runs a desc on input bytes
the test wrote, and prints the output buffer; the test compares it with ``dmlpy.run`` on the
native backend and, independently, on the NumPy backend. Everything skips when g++ is missing.
"""

from __future__ import annotations

import importlib
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from export_cases import CASES, Case, decoder

import dmlpy
from dmlpy.interop import cpp
from dmlpy.interop.dxdispatch import memory_image, operator_model

GXX = shutil.which("g++")
pytestmark = pytest.mark.skipif(GXX is None, reason="g++ is not installed")
FLAGS = ["-std=c++17", "-Wall", "-Wextra", "-Werror", "-DDMLPY_TYPES_ONLY", f"-I{dmlpy.get_include()}"]


def gxx(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert GXX is not None
    return subprocess.run([GXX, *args], capture_output=True, text=True, cwd=cwd, timeout=300, check=False)


def _slug(case: Case) -> str:
    return re.sub(r"\W+", "_", case.id).strip("_")


# ---------------------------------------------------------------------------------------
# Compilation


def test_every_emitted_operator_header_and_a_graph_compile_with_warnings_as_errors(tmp_path: Path) -> None:
    # one translation unit including every header (each named after its case, so an error names it)
    includes, checks = [], []
    for i, case in enumerate(CASES):
        header = f"op{i}_{_slug(case)}.h"
        (tmp_path / header).write_text(cpp.emit_operator(case.build(), f"build_{i}"), encoding="utf-8")
        includes += [f'#include "{header}"', f'#include "{header}"']  # twice: #pragma once must hold
        checks.append(f"    failures += build_{i}()->Type != {case.operator_type.value} || build_{i}()->Desc == nullptr;")
    program, _ = decoder(backend="numpy")
    (tmp_path / "graph.h").write_text(cpp.emit_graph(program, "decoder"), encoding="utf-8")
    includes.append('#include "graph.h"')
    checks += [
        "    IDMLOperator* ops[decoder_NODE_COUNT] = {};",
        "    DML_GRAPH_DESC g;",
        "    decoder_fill(ops, &g);",
        "    failures += decoder_node_0()->Type != DML_OPERATOR_CONVOLUTION || g.NodeCount != decoder_NODE_COUNT;",
    ]
    source = "\n".join([*includes, "int main() {", "    int failures = 0;", *checks, "    return failures;", "}", ""])
    (tmp_path / "all.cpp").write_text(source, encoding="utf-8")
    # headers needing different DML_TARGET_VERSIONs in one translation unit: the includer chooses one
    done = gxx(*FLAGS, "-DDML_TARGET_VERSION_USE_LATEST", "all.cpp", "-o", "all", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert subprocess.run([str(tmp_path / "all")], check=False).returncode == 0, "a builder returned the wrong operator type"


def test_dxdispatch_model_emits_one_builder_per_dispatchable_that_compiles(tmp_path: Path) -> None:
    program, inputs = decoder(backend="numpy")
    from dmlpy.interop.dxdispatch import graph_model  # noqa: PLC0415

    text = cpp.emit_model(graph_model(program, inputs), prefix="model")
    assert re.findall(r"inline const DML_OPERATOR_DESC\* (\w+)\(\)", text) == ["model_node0_conv_transpose0", "model_node1_depth_to_space1", "model_node2_sigmoid2"]
    (tmp_path / "model.h").write_text(text, encoding="utf-8")
    (tmp_path / "main.cpp").write_text('#include "model.h"\nint main() { return model_node2_sigmoid2()->Type != DML_OPERATOR_ACTIVATION_SIGMOID; }\n', encoding="utf-8")
    done = gxx(*FLAGS, "-fsyntax-only", "main.cpp", cwd=tmp_path)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("value", "literal"),
    [
        pytest.param(0.1, "0.1f", id="0.1 is written with the digits that round-trip"),
        pytest.param(2.0, "2.0f", id="an integral float keeps its decimal point"),
        pytest.param(1e-20, "1e-20f", id="a tiny float uses an exponent"),
        pytest.param(float("nan"), "NAN", id="NaN is the math.h macro"),
        pytest.param(float("-inf"), "-INFINITY", id="minus infinity is the math.h macro"),
    ],
)
def test_float_fields_become_exact_float_literals(value: float, literal: str) -> None:
    desc = dmlpy.DML_ACTIVATION_LEAKY_RELU_OPERATOR_DESC(None, None, value)
    assert f"{{nullptr, nullptr, {literal}}}" in cpp.emit_operator(desc)


def test_enum_value_without_a_name_is_cast_not_dropped() -> None:
    desc = CASES[-1].build()
    desc.Mode = 7
    assert "static_cast<DML_CONVOLUTION_MODE>(7)" in cpp.emit_operator(desc)


def test_names_are_c_identifiers_and_strings_are_escaped() -> None:
    assert cpp.identifier("3x3 conv/relu") == "_3x3_conv_relu"
    assert cpp.c_string('a"b\\c\n?') == '"a\\"b\\\\c\\012\\077"'


def test_get_include_holds_both_headers() -> None:
    root = Path(dmlpy.get_include())
    assert (root / "dmlpy" / "dml_types.h").is_file() and (root / "dmlpy" / "dmlpy.h").is_file()


# ---------------------------------------------------------------------------------------
# Execution on the native library

MAIN = r"""
#include <dlfcn.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "dmlpy/dmlpy.h"
#include "builders.h"

typedef int32_t (*execute_fn)(const DML_OPERATOR_DESC*, UINT, const DMLPY_BOUND_BUFFER*, UINT, const DMLPY_BOUND_BUFFER*, UINT);
typedef const char* (*status_name_fn)(int32_t);

static std::vector<float> read_floats(const char* path) {
    std::vector<float> data;
    FILE* f = std::fopen(path, "rb");
    if (!f) { std::perror(path); std::exit(3); }
    float value;
    while (std::fread(&value, sizeof value, 1, f) == 1) data.push_back(value);
    std::fclose(f);
    return data;
}

// argv: library, builder index, output bytes, then one input file per input slot ("-" = not bound)
int main(int argc, char** argv) {
    if (argc < 4) return 2;
    void* library = dlopen(argv[1], RTLD_LAZY | RTLD_LOCAL  /* the module's Python imports are never called */);
    if (!library) { std::fprintf(stderr, "%s\n", dlerror()); return 4; }
    execute_fn execute = reinterpret_cast<execute_fn>(dlsym(library, "dmlpy_execute"));
    status_name_fn status_name = reinterpret_cast<status_name_fn>(dlsym(library, "dmlpy_status_name"));
    if (!execute || !status_name) return 5;
    const DML_OPERATOR_DESC* desc = builders[std::atoi(argv[2])]();
    std::vector<std::vector<float>> inputs;
    std::vector<DMLPY_BOUND_BUFFER> bound;
    for (int i = 4; i < argc; ++i) inputs.push_back(argv[i][0] == '-' ? std::vector<float>() : read_floats(argv[i]));
    for (auto& input : inputs) bound.push_back(DMLPY_BOUND_BUFFER{input.empty() ? nullptr : input.data(), input.size() * sizeof(float)});
    std::vector<float> output(std::strtoull(argv[3], nullptr, 10) / sizeof(float), 0.0f);
    DMLPY_BOUND_BUFFER out{output.data(), output.size() * sizeof(float)};
    int32_t status = execute(desc, static_cast<UINT>(bound.size()), bound.data(), 1, &out, 1);
    std::printf("%s\n", status_name(status));
    for (float value : output) std::printf("%.9g\n", value);
    return status;
}
"""

NATIVE_CASES = [
    "average pooling with padding, IncludePadding TRUE",
    "average pooling on an NHWC-strided input",
    "average pooling1 with Dilations",
    "grouped convolution with bias and a fused leaky relu",
    "convolution without BiasTensor or FusedActivation",
    "transposed (BACKWARD) convolution, Mode CONVOLUTION, fused linear",
    "space to depth1, Order COLUMN_ROW_DEPTH",
    "space to depth on NHWC strides",
    "depth to space1, Order COLUMN_ROW_DEPTH",
]
BY_ID = {case.id: case for case in CASES}


def _native_library() -> Path:
    if not dmlpy.native_available():
        pytest.skip(f"the native library is not built: {dmlpy.native_status()}")
    module = importlib.import_module("dmlpy._native")
    return Path(module.__file__)


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(executable, library): one C++ program holding a builder per native case."""
    library = _native_library()
    work = tmp_path_factory.mktemp("native")
    parts = [cpp.operator_function(BY_ID[case_id].build(), f"build_{i}") for i, case_id in enumerate(NATIVE_CASES)]
    parts.append("typedef const DML_OPERATOR_DESC* (*builder_fn)();")
    parts.append(f"static const builder_fn builders[] = {{{', '.join(f'build_{i}' for i in range(len(NATIVE_CASES)))}}};")
    (work / "builders.h").write_text(cpp.header("\n".join(parts)) + "\n", encoding="utf-8")
    (work / "main.cpp").write_text(MAIN, encoding="utf-8")
    done = gxx(*FLAGS, "-O1", "main.cpp", "-o", "run_desc", "-ldl", cwd=work)
    assert done.returncode == 0, done.stderr
    return work / "run_desc", library


def _run_native(runner: tuple[Path, Path], index: int, desc: Any, inputs: dict[str, np.ndarray], tmp_path: Path) -> np.ndarray:
    executable, library = runner
    spec = dmlpy.operators.REGISTRY[dmlpy.operator_desc(desc).Type]
    args = []
    for slot in spec.support.inputs:
        tensor = getattr(desc, slot.name)
        if tensor is None:
            args.append("-")
            continue
        path = tmp_path / f"{slot.name}.bin"
        memory_image(tensor.Desc, inputs[slot.name]).astype(np.float32).tofile(path)
        args.append(str(path))
    output = desc.OutputTensor.Desc
    done = subprocess.run([str(executable), str(library), str(index), str(output.TotalTensorSizeInBytes), *args], capture_output=True, text=True, timeout=60, check=False)
    lines = done.stdout.split()
    assert done.returncode == 0 and lines[0] == "DMLPY_OK", f"status {done.returncode}: {done.stdout[:200]} {done.stderr}"
    printed = np.array([float(v) for v in lines[1:]], dtype=np.float32)
    buffer = dmlpy.Buffer(printed.nbytes)
    buffer.data[:] = printed.view(np.uint8)
    return buffer.read(output)


@pytest.mark.parametrize("case_id", NATIVE_CASES)
def test_emitted_desc_runs_on_the_native_library_to_dmlpy_runs_result(case_id: str, runner: tuple[Path, Path], tmp_path: Path) -> None:
    case = BY_ID[case_id]
    desc = case.build()
    inputs = case.inputs(np.random.default_rng(5))
    got = _run_native(runner, NATIVE_CASES.index(case_id), desc, inputs, tmp_path)
    np.testing.assert_array_equal(got, dmlpy.run(case.build(), backend="native", **inputs))  # the same kernel, through C++
    np.testing.assert_allclose(got, dmlpy.run(case.build(), backend="numpy", **inputs), rtol=1e-5, atol=1e-6)  # an independent kernel


def test_every_native_case_exists_and_covers_pooling_convolution_and_space_to_depth() -> None:
    assert all(case_id in BY_ID for case_id in NATIVE_CASES)
    kinds = {BY_ID[c].operator_type.name for c in NATIVE_CASES}
    assert {"AVERAGE_POOLING", "AVERAGE_POOLING1", "CONVOLUTION", "SPACE_TO_DEPTH", "SPACE_TO_DEPTH1"} <= kinds


def test_emitted_graph_fill_describes_the_same_graph(tmp_path: Path) -> None:
    program, _ = decoder(backend="numpy")
    desc = program.graph_desc
    (tmp_path / "graph.h").write_text(cpp.emit_graph(program, "g"), encoding="utf-8")
    (tmp_path / "main.cpp").write_text(
        r"""#include <cstdio>
#include "graph.h"
int main() {
    IDMLOperator* ops[g_NODE_COUNT] = {};
    DML_GRAPH_DESC d;
    g_fill(ops, &d);
    std::printf("%u %u %u %u %u %u\n", d.InputCount, d.OutputCount, d.NodeCount, d.InputEdgeCount, d.OutputEdgeCount, d.IntermediateEdgeCount);
    for (UINT i = 0; i < d.InputEdgeCount; ++i) { auto e = static_cast<const DML_INPUT_GRAPH_EDGE_DESC*>(d.InputEdges[i].Desc); std::printf("in %u %u %u %s\n", e->GraphInputIndex, e->ToNodeIndex, e->ToNodeInputIndex, e->Name); }
    for (UINT i = 0; i < d.OutputEdgeCount; ++i) { auto e = static_cast<const DML_OUTPUT_GRAPH_EDGE_DESC*>(d.OutputEdges[i].Desc); std::printf("out %u %u %u %s\n", e->FromNodeIndex, e->FromNodeOutputIndex, e->GraphOutputIndex, e->Name); }
    for (UINT i = 0; i < d.IntermediateEdgeCount; ++i) { auto e = static_cast<const DML_INTERMEDIATE_GRAPH_EDGE_DESC*>(d.IntermediateEdges[i].Desc); std::printf("mid %u %u %u %u\n", e->FromNodeIndex, e->FromNodeOutputIndex, e->ToNodeIndex, e->ToNodeInputIndex); }
    return 0;
}
""",
        encoding="utf-8",
    )
    done = gxx(*FLAGS, "main.cpp", "-o", "graph", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    printed = subprocess.run([str(tmp_path / "graph")], capture_output=True, text=True, check=True).stdout.splitlines()
    expected = [f"{desc.InputCount} {desc.OutputCount} {len(desc.Nodes)} {len(desc.InputEdges)} {len(desc.OutputEdges)} {len(desc.IntermediateEdges)}"]
    expected += [f"in {e.Desc.GraphInputIndex} {e.Desc.ToNodeIndex} {e.Desc.ToNodeInputIndex} {e.Desc.Name}" for e in desc.InputEdges]
    expected += [f"out {e.Desc.FromNodeIndex} {e.Desc.FromNodeOutputIndex} {e.Desc.GraphOutputIndex} {e.Desc.Name}" for e in desc.OutputEdges]
    expected += [f"mid {e.Desc.FromNodeIndex} {e.Desc.FromNodeOutputIndex} {e.Desc.ToNodeIndex} {e.Desc.ToNodeInputIndex}" for e in desc.IntermediateEdges]
    assert printed == expected


def test_operator_model_and_emitted_cpp_describe_the_same_desc() -> None:
    # the two exporters agree on every field value (one desc, two spellings)
    case = BY_ID["grouped convolution with bias and a fused leaky relu"]
    fields = operator_model(case.build(), case.inputs(np.random.default_rng(0)))["dispatchables"]["op"]["desc"]
    text = cpp.emit_operator(case.build())
    top = re.search(r"DML_CONVOLUTION_OPERATOR_DESC op_Desc = \{(.*)\};", text)
    assert top is not None
    values = [v.strip() for v in top.group(1).split(",")]
    assert values[4:7] == [f"DML_CONVOLUTION_MODE_{fields['Mode']}", f"DML_CONVOLUTION_DIRECTION_{fields['Direction']}", f"{fields['DimensionCount']}u"]
    assert values[12] == f"{fields['GroupCount']}u"
    assert "{nullptr, nullptr, 0.1f}" in text and fields["FusedActivation"]["Alpha"] == 0.1


# ---------------------------------------------------------------------------------------
# DML_TARGET_VERSION: the emitted headers compile against a DirectML.h that hides later declarations
#
# dml_types.h declares everything; DirectML.h declares a name only from the DML_TARGET_VERSION that
# introduced it and otherwise picks 0x1000 (DML_TARGET_VERSION_USE_LATEST: the latest). The tests
# build that behaviour into a copy of dml_types.h from the guards below and compile against it.

# DirectML.h declares these from the DML_TARGET_VERSION given (the feature level that introduced
# them); the rest of dml_types.h is DirectML 1.0. Facts of DirectML.h (DirectX-Headers), one per name.
DIRECTML_H_GUARDS = {
    0x2000: """
        DML_FEATURE_LEVEL DML_MAX_POOLING1_OPERATOR_DESC DML_OPERATOR_ELEMENT_WISE_SIGN
        DML_OPERATOR_ELEMENT_WISE_IS_NAN DML_OPERATOR_ELEMENT_WISE_ERF DML_OPERATOR_ELEMENT_WISE_SINH
        DML_OPERATOR_ELEMENT_WISE_COSH DML_OPERATOR_ELEMENT_WISE_TANH DML_OPERATOR_ELEMENT_WISE_ASINH
        DML_OPERATOR_ELEMENT_WISE_ACOSH DML_OPERATOR_ELEMENT_WISE_ATANH DML_OPERATOR_ELEMENT_WISE_IF
        DML_OPERATOR_ELEMENT_WISE_ADD1 DML_OPERATOR_ACTIVATION_SHRINK DML_OPERATOR_MAX_POOLING1
        DML_OPERATOR_MAX_UNPOOLING DML_OPERATOR_DIAGONAL_MATRIX DML_OPERATOR_SCATTER_ELEMENTS DML_OPERATOR_SCATTER
        DML_OPERATOR_ONE_HOT DML_OPERATOR_RESAMPLE DML_FEATURE_LEVEL_1_0 DML_FEATURE_LEVEL_2_0 DML_FEATURE_LEVEL_2_1
        DML_FEATURE_LEVEL_3_0 DML_FEATURE_LEVEL_3_1 DML_FEATURE_LEVEL_4_0 DML_FEATURE_LEVEL_4_1 DML_FEATURE_LEVEL_5_0
        DML_FEATURE_LEVEL_5_1 DML_FEATURE_LEVEL_5_2 DML_FEATURE_LEVEL_6_0 DML_FEATURE_LEVEL_6_1 DML_FEATURE_LEVEL_6_2
        DML_FEATURE_LEVEL_6_3 DML_FEATURE_LEVEL_6_4 DML_FEATURE_FEATURE_LEVELS
    """,
    0x2100: """
        DML_DEPTH_SPACE_ORDER DML_GRAPH_EDGE_TYPE DML_GRAPH_NODE_TYPE DML_MAX_POOLING2_OPERATOR_DESC
        DML_SPACE_TO_DEPTH1_OPERATOR_DESC DML_DEPTH_TO_SPACE1_OPERATOR_DESC DML_GRAPH_EDGE_DESC
        DML_INPUT_GRAPH_EDGE_DESC DML_OUTPUT_GRAPH_EDGE_DESC DML_INTERMEDIATE_GRAPH_EDGE_DESC DML_GRAPH_NODE_DESC
        DML_OPERATOR_GRAPH_NODE_DESC DML_GRAPH_DESC DML_OPERATOR_ELEMENT_WISE_BIT_SHIFT_LEFT
        DML_OPERATOR_ELEMENT_WISE_BIT_SHIFT_RIGHT DML_OPERATOR_ELEMENT_WISE_ROUND
        DML_OPERATOR_ELEMENT_WISE_IS_INFINITY DML_OPERATOR_ELEMENT_WISE_MODULUS_TRUNCATE
        DML_OPERATOR_ELEMENT_WISE_MODULUS_FLOOR DML_OPERATOR_FILL_VALUE_CONSTANT DML_OPERATOR_FILL_VALUE_SEQUENCE
        DML_OPERATOR_CUMULATIVE_SUMMATION DML_OPERATOR_REVERSE_SUBSEQUENCES DML_OPERATOR_GATHER_ELEMENTS
        DML_OPERATOR_GATHER_ND DML_OPERATOR_SCATTER_ND DML_OPERATOR_MAX_POOLING2 DML_OPERATOR_SLICE1
        DML_OPERATOR_TOP_K1 DML_OPERATOR_DEPTH_TO_SPACE1 DML_OPERATOR_SPACE_TO_DEPTH1
        DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1 DML_OPERATOR_RESAMPLE1 DML_OPERATOR_MATRIX_MULTIPLY_INTEGER
        DML_OPERATOR_QUANTIZED_LINEAR_MATRIX_MULTIPLY DML_OPERATOR_CONVOLUTION_INTEGER
        DML_OPERATOR_QUANTIZED_LINEAR_CONVOLUTION DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW
        DML_DEPTH_SPACE_ORDER_COLUMN_ROW_DEPTH DML_GRAPH_EDGE_TYPE_INVALID DML_GRAPH_EDGE_TYPE_INPUT
        DML_GRAPH_EDGE_TYPE_OUTPUT DML_GRAPH_EDGE_TYPE_INTERMEDIATE DML_GRAPH_NODE_TYPE_INVALID
        DML_GRAPH_NODE_TYPE_OPERATOR
    """,
    0x3000: """
        DML_AVERAGE_POOLING_GRAD_OPERATOR_DESC DML_OPERATOR_ELEMENT_WISE_BIT_AND DML_OPERATOR_ELEMENT_WISE_BIT_OR
        DML_OPERATOR_ELEMENT_WISE_BIT_XOR DML_OPERATOR_ELEMENT_WISE_BIT_NOT DML_OPERATOR_ELEMENT_WISE_BIT_COUNT
        DML_OPERATOR_ELEMENT_WISE_LOGICAL_GREATER_THAN_OR_EQUAL DML_OPERATOR_ELEMENT_WISE_LOGICAL_LESS_THAN_OR_EQUAL
        DML_OPERATOR_ACTIVATION_CELU DML_OPERATOR_ACTIVATION_RELU_GRAD DML_OPERATOR_AVERAGE_POOLING_GRAD
        DML_OPERATOR_MAX_POOLING_GRAD DML_OPERATOR_RANDOM_GENERATOR DML_OPERATOR_NONZERO_COORDINATES
        DML_OPERATOR_RESAMPLE_GRAD DML_OPERATOR_SLICE_GRAD DML_OPERATOR_ADAM_OPTIMIZER DML_OPERATOR_ARGMIN
        DML_OPERATOR_ARGMAX DML_OPERATOR_ROI_ALIGN DML_OPERATOR_GATHER_ND1 DML_PADDING_MODE_SYMMETRIC
    """,
    0x3100: """
        DML_OPERATOR_ELEMENT_WISE_ATAN_YX DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD
        DML_OPERATOR_ELEMENT_WISE_DIFFERENCE_SQUARE DML_OPERATOR_LOCAL_RESPONSE_NORMALIZATION_GRAD
        DML_OPERATOR_CUMULATIVE_PRODUCT DML_OPERATOR_BATCH_NORMALIZATION_GRAD
    """,
    0x4000: """
        DML_OPERATOR_ELEMENT_WISE_QUANTIZED_LINEAR_ADD DML_OPERATOR_DYNAMIC_QUANTIZE_LINEAR DML_OPERATOR_ROI_ALIGN1
    """,
    0x4100: """
        DML_OPERATOR_ROI_ALIGN_GRAD DML_OPERATOR_BATCH_NORMALIZATION_TRAINING
        DML_OPERATOR_BATCH_NORMALIZATION_TRAINING_GRAD
    """,
    0x5000: """
        DML_OPERATOR_ELEMENT_WISE_CLIP1 DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD1 DML_OPERATOR_PADDING1
        DML_OPERATOR_ELEMENT_WISE_NEGATE
    """,
    0x5100: """
        DML_ACTIVATION_GELU_OPERATOR_DESC DML_OPERATOR_ACTIVATION_GELU DML_OPERATOR_ACTIVATION_SOFTMAX1
        DML_OPERATOR_ACTIVATION_LOG_SOFTMAX1 DML_OPERATOR_ACTIVATION_HARDMAX1 DML_OPERATOR_RESAMPLE2
        DML_OPERATOR_RESAMPLE_GRAD1 DML_OPERATOR_DIAGONAL_MATRIX1
    """,
    0x6100: """
        DML_OPERATOR_MULTIHEAD_ATTENTION
    """,
    0x6200: """
        DML_AVERAGE_POOLING1_OPERATOR_DESC DML_LP_POOLING1_OPERATOR_DESC DML_CONSTANT_DATA_GRAPH_NODE_DESC
        DML_OPERATOR_LP_POOLING1 DML_OPERATOR_AVERAGE_POOLING1 DML_OPERATOR_ACTIVATION_SWISH
        DML_OPERATOR_ACTIVATION_HARD_SWISH DML_OPERATOR_QUANTIZED_LINEAR_AVERAGE_POOLING
        DML_OPERATOR_MATRIX_MULTIPLY_INTEGER_TO_FLOAT DML_GRAPH_NODE_TYPE_CONSTANT
    """,
    0x6300: """
        DML_TENSOR_DATA_TYPE_UINT4 DML_TENSOR_DATA_TYPE_INT4 DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION2
        DML_OPERATOR_MULTIHEAD_ATTENTION1 DML_OPERATOR_QUANTIZE DML_OPERATOR_DEQUANTIZE
    """,
    0x6400: """
        DML_OPERATOR_RESAMPLE3 DML_OPERATOR_FOLD DML_OPERATOR_UNFOLD DML_PADDING_MODE_WRAP
    """,
}
LEVELS = sorted({0x1000, *DIRECTML_H_GUARDS})


def _guarded_types_header() -> str:
    since = {name: version for version, names in DIRECTML_H_GUARDS.items() for name in names.split()}
    lines = (Path(dmlpy.get_include()) / "dmlpy" / "dml_types.h").read_text(encoding="utf-8").splitlines()
    out = ["#ifndef DML_TARGET_VERSION", "#if defined(DML_TARGET_VERSION_USE_LATEST)", "#define DML_TARGET_VERSION 0x6400", "#else", "#define DML_TARGET_VERSION 0x1000", "#endif", "#endif"]
    i = 0
    while i < len(lines):
        block = re.match(r"typedef (?:struct|enum) (\w+) \{", lines[i])
        if block and block.group(1) in since:
            end = next(j for j in range(i, len(lines)) if lines[j].startswith(f"}} {block.group(1)};"))
            out += [f"#if DML_TARGET_VERSION >= {since[block.group(1)]:#06x}", *lines[i : end + 1], "#endif"]
            i = end + 1
            continue
        named = re.match(r"\s*(DML_\w+)\s*=", lines[i]) or re.match(r"DMLPY_CHECK_\w+\((\w+)", lines[i])
        if named and named.group(1) in since:
            out += [f"#if DML_TARGET_VERSION >= {since[named.group(1)]:#06x}", lines[i], "#endif"]
        else:
            out.append(lines[i])
        i += 1
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def guarded_include(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding dmlpy/dml_types.h with DirectML.h's DML_TARGET_VERSION guards."""
    root = tmp_path_factory.mktemp("guarded")
    (root / "dmlpy").mkdir()
    (root / "dmlpy" / "dml_types.h").write_text(_guarded_types_header(), encoding="utf-8")
    return root


def _check(header: str, tmp_path: Path, include: Path, *defines: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "emitted.h").write_text(header, encoding="utf-8")
    (tmp_path / "main.cpp").write_text('#include "emitted.h"\nint main() { return 0; }\n', encoding="utf-8")
    flags = [f for f in FLAGS if not f.startswith("-I")]
    return gxx(*flags, *defines, f"-I{include}", "-fsyntax-only", "main.cpp", cwd=tmp_path)


def test_the_guarded_header_hides_later_declarations_as_directml_h_does(guarded_include: Path, tmp_path: Path) -> None:
    # the stand-in must bite, or the tests below prove nothing
    use = "#include \"dmlpy/dml_types.h\"\nstatic DML_GRAPH_DESC g;\nint main() { (void)g; return 0; }\n"
    (tmp_path / "main.cpp").write_text(use, encoding="utf-8")
    flags = [f for f in FLAGS if not f.startswith("-I")]
    assert gxx(*flags, f"-I{guarded_include}", "-fsyntax-only", "main.cpp", cwd=tmp_path).returncode != 0
    assert gxx(*flags, "-DDML_TARGET_VERSION=0x2100", f"-I{guarded_include}", "-fsyntax-only", "main.cpp", cwd=tmp_path).returncode == 0
    assert gxx(*flags, "-DDML_TARGET_VERSION_USE_LATEST", f"-I{guarded_include}", "-fsyntax-only", "main.cpp", cwd=tmp_path).returncode == 0


def _emitted_headers() -> list[Any]:
    program, _ = decoder(backend="numpy")
    headers = [pytest.param(cpp.emit_operator(case.build()), id=case.id) for case in CASES]
    return [*headers, pytest.param(cpp.emit_graph(program, "decoder"), id="a graph of convolution, depth to space1 and sigmoid")]


@pytest.mark.parametrize("header", _emitted_headers())
def test_emitted_header_compiles_as_emitted_against_directml_hs_default_target(header: str, guarded_include: Path, tmp_path: Path) -> None:
    done = _check(header, tmp_path, guarded_include)
    assert done.returncode == 0, done.stderr


def _constant_graph() -> Any:
    """A convolution whose filter is a constant node (DML_GRAPH_NODE_TYPE_CONSTANT)."""
    g = dmlpy.GraphBuilder(backend="numpy")
    x = g.input("x", "float32", (1, 1, 3, 3))
    w = g.constant(np.full((1, 1, 2, 2), 0.25, np.float32), "w")
    conv = dmlpy.DML_CONVOLUTION_OPERATOR_DESC(None, None, None, dmlpy.buffer_tensor("float32", (1, 1, 2, 2)), dmlpy.DML_CONVOLUTION_MODE.CROSS_CORRELATION,
                                               dmlpy.DML_CONVOLUTION_DIRECTION.FORWARD, 2, (1, 1), (1, 1), (0, 0), (0, 0), (0, 0), 1, None)  # fmt: skip
    (y,) = g.add_operator(conv, {"InputTensor": x, "FilterTensor": w}, call="conv")
    return g.compile({"y": y})


@pytest.mark.parametrize(
    ("header", "needed"),
    [
        pytest.param(lambda: cpp.emit_operator(BY_ID["average pooling1 with Dilations"].build()), 0x6200, id="AVERAGE_POOLING1 needs 0x6200"),
        pytest.param(lambda: cpp.emit_operator(BY_ID["space to depth1, Order COLUMN_ROW_DEPTH"].build()), 0x2100, id="SPACE_TO_DEPTH1 needs 0x2100"),
        pytest.param(lambda: cpp.emit_operator(BY_ID["gelu"].build()), 0x5100, id="GELU needs 0x5100"),
        pytest.param(lambda: cpp.emit_graph(decoder(backend="numpy")[0], "g"), 0x2100, id="a graph needs 0x2100"),
        pytest.param(lambda: cpp.emit_graph(_constant_graph(), "g"), 0x6200, id="a graph with a constant node needs 0x6200"),
        pytest.param(lambda: cpp.emit_operator(BY_ID["relu"].build()), 0x1000, id="RELU needs 0x1000"),
    ],
)
def test_emitted_target_version_is_the_lowest_that_compiles(header: Any, needed: int, guarded_include: Path, tmp_path: Path) -> None:
    text = header()
    assert f"#define DML_TARGET_VERSION {needed:#06x}" in text.replace("0X", "0x")
    assert _check(text, tmp_path, guarded_include, "-DDML_TARGET_VERSION_USE_LATEST").returncode == 0
    lower = [level for level in LEVELS if level < needed]
    if lower:
        # one level lower, with the guard taken out, a declaration is missing: the version is not too high
        unguarded = re.sub(r"#error [^\n]*", "", text)
        assert _check(unguarded, tmp_path, guarded_include, f"-DDML_TARGET_VERSION={lower[-1]:#06x}").returncode != 0


def test_a_lower_target_version_chosen_by_the_includer_stops_at_the_guard(guarded_include: Path, tmp_path: Path) -> None:
    text = cpp.emit_operator(BY_ID["gelu"].build())
    done = _check(text, tmp_path, guarded_include, "-DDML_TARGET_VERSION=0x5000")
    assert done.returncode != 0 and "#error" in done.stderr
