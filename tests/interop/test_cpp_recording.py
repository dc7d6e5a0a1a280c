"""The emitted C++ records what a Windows program must: heap, SetDescriptorHeaps, tables, initializer, barriers,
Close, ExecuteCommandLists and the fence wait, in the order dmlpy's object model checks.

Where the recording puts UAV barriers is compared with dmlpy's own recorder: each program is recorded
through dmlpy's Device / CommandList / CommandRecorder on a debug device, once with a barrier exactly where
the emitted C++ has one (no BARRIER.UAV_MISSING, and the dispatches give the right numbers) and once with
each of those barriers left out (BARRIER.UAV_MISSING). The dispatches are ACTIVATION_LINEAR {1,1,2,2}
(y = 2 x + 1, 16 bytes in and out; x = 1, 2, 3, 4 gives 3, 5, 7, 9, and twice 7, 11, 15, 19).

Compilation: mingw-w64's g++ (x86_64-w64-mingw32-g++, Debian's g++-mingw-w64-x86-64) with its own
<d3d12.h> and a stand-in DirectML.h (tests/interop/directml_stub) that declares the DirectML interfaces
over dmlpy/dml_types.h; the tests skip without mingw unless DMLPY_REQUIRE_MINGW=1 (CI installs it).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import rule_ids
from export_cases import CASES, decoder

import dmlpy
from dmlpy import (
    D3D12_RESOURCE_BARRIER,
    DML_ACTIVATION_LINEAR_OPERATOR_DESC,
    DML_BINDING_DESC,
    DML_BINDING_TABLE_DESC,
    DML_TENSOR_FLAGS,
    DmlError,
    DmlWarning,
    array_binding,
    buffer_binding,
    buffer_tensor,
)
from dmlpy.interop import cpp
from dmlpy.interop.cpp import BufferUse, Step

SHAPE = (1, 1, 2, 2)
X = np.array([1, 2, 3, 4], np.float32).reshape(SHAPE)
STUB = Path(__file__).parent / "directml_stub"
MINGW = shutil.which("x86_64-w64-mingw32-g++")
needs_mingw = pytest.mark.skipif(MINGW is None and os.environ.get("DMLPY_REQUIRE_MINGW") != "1", reason="mingw-w64 g++ is not installed (apt-get install g++-mingw-w64-x86-64)")


def linear(flags: DML_TENSOR_FLAGS = DML_TENSOR_FLAGS.NONE) -> Any:
    return DML_ACTIVATION_LINEAR_OPERATOR_DESC(buffer_tensor("float32", SHAPE, flags=flags), buffer_tensor("float32", SHAPE), Alpha=2.0, Beta=1.0)


@dataclass
class Program:
    id: str
    steps: list[Step]
    barriers_between_executes: list[int]  # the executes (0-based) a barrier precedes, beside the one after the initializer
    expected: dict[str, list[float]]  # buffer -> its values after the program ran on x = 1, 2, 3, 4


ONCE, TWICE = [3, 5, 7, 9], [7, 11, 15, 19]  # 2 x + 1 once and twice


PROGRAMS = [
    Program("b reads what a wrote: a barrier between them", [Step("a", linear(), {"InputTensor": "x", "OutputTensor": "t"}), Step("b", linear(), {"InputTensor": "t", "OutputTensor": "y"})], [1], {"y": TWICE}),
    Program("a and b read one input and write their own outputs: no barrier",
            [Step("a", linear(), {"InputTensor": "x", "OutputTensor": "y"}), Step("b", linear(), {"InputTensor": "x", "OutputTensor": "z"})], [], {"y": ONCE, "z": ONCE}),
    Program("a and b write disjoint halves of one buffer: no barrier",
            [Step("a", linear(), {"InputTensor": "x", "OutputTensor": BufferUse("out", 0)}), Step("b", linear(), {"InputTensor": "x", "OutputTensor": BufferUse("out", 16)})], [], {"out": ONCE + ONCE}),
    Program("b overwrites the input a read: a barrier (write after read)",
            [Step("a", linear(), {"InputTensor": "x", "OutputTensor": "y"}), Step("b", linear(), {"InputTensor": "y", "OutputTensor": "x"})], [1], {"y": ONCE, "x": TWICE}),
    Program("a chain of three: a barrier before each consumer",
            [Step("a", linear(), {"InputTensor": "x", "OutputTensor": "t"}), Step("b", linear(), {"InputTensor": "t", "OutputTensor": "u"}),
             Step("c", linear(), {"InputTensor": "u", "OutputTensor": "y"})], [1, 2], {"y": [15, 23, 31, 39]}),
    Program("c reads what a wrote with an independent b between: one barrier before c",
            [Step("a", linear(), {"InputTensor": "x", "OutputTensor": "t"}), Step("b", linear(), {"InputTensor": "x", "OutputTensor": "u"}),
             Step("c", linear(), {"InputTensor": "t", "OutputTensor": "y"})], [2], {"y": TWICE, "u": ONCE}),
]


def run_body(text: str, function: str) -> list[str]:
    """The statements of ``function``'s body, one per line, comments dropped."""
    start = text.index(f"inline HRESULT {function}(")
    body = text[start : text.index("\n}\n", start)]
    return [line.split("//")[0].strip() for line in body.splitlines() if line.split("//")[0].strip()]


def recorded(lines: list[str]) -> list[str]:
    """The command list's commands in recording order: heaps, dispatch <table>, barrier, close, execute, wait."""
    out = []
    for line in lines:
        if "SetDescriptorHeaps" in line:
            out.append("heaps")
        elif m := re.search(r"RecordDispatch\(list, \w+(?:\[\d+\])?, tables\[(\d+)\]\)", line):
            out.append(f"dispatch {m.group(1)}")
        elif "ResourceBarrier" in line:
            out.append("barrier")
        elif "list->Close()" in line:
            out.append("close")
        elif "ExecuteCommandLists" in line:
            out.append("execute")
        elif "SetEventOnCompletion" in line:
            out.append("wait")
    return out


def expected_commands(executes: int, barriers: list[int]) -> list[str]:
    out = ["heaps", "dispatch 0", "barrier"]
    for i in range(executes):
        if i in barriers:
            out.append("barrier")
        out.append(f"dispatch {i + 1}")
    return [*out, "close", "execute", "wait"]


# ---------------------------------------------------------------------------------------
# The order of the recording


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.id for p in PROGRAMS])
def test_the_recording_sets_the_heap_first_and_puts_barriers_after_the_initializer_and_between_dependent_dispatches(program: Program) -> None:
    text = cpp.emit_program(program.steps, "prog")
    assert recorded(run_body(text, "prog_run")) == expected_commands(len(program.steps), program.barriers_between_executes)


def test_a_single_operator_header_records_heap_initializer_barrier_execute_close_execute_and_wait() -> None:
    text = cpp.emit_operator(CASES[0].build(), "pool")
    assert recorded(run_body(text, "pool_run")) == expected_commands(1, [])


def test_a_graph_header_compiles_the_graph_and_records_it_after_its_initializer_and_a_barrier() -> None:
    program, _ = decoder(backend="numpy")
    lines = run_body(cpp.emit_graph(program, "decoder"), "decoder_run")
    assert recorded(lines) == expected_commands(1, [])
    assert any("CompileGraph(&graph_desc" in line for line in lines)
    # the decoder's filter is OWNED_BY_DML: the initializer binds it, in a buffer array; the execute binds NONE there
    assert any("DML_BINDING_TYPE_BUFFER_ARRAY, &owned_0" in line for line in lines)


def test_the_heap_is_sized_for_every_table_and_the_tables_take_consecutive_ranges() -> None:
    lines = run_body(cpp.emit_program(PROGRAMS[0].steps, "prog"), "prog_run")
    joined = "\n".join(lines)
    # each table starts where the previous one's RequiredDescriptorCount ends, and the heap holds their sum
    assert "first_descriptor[t] = descriptor_count;" in joined and "descriptor_count += properties[t].RequiredDescriptorCount;" in joined
    assert "D3D12_DESCRIPTOR_HEAP_DESC heap_desc = {D3D12_DESCRIPTOR_HEAP_TYPE_CBV_SRV_UAV, descriptor_count > 0 ? descriptor_count : 1, D3D12_DESCRIPTOR_HEAP_FLAG_SHADER_VISIBLE, 0};" in joined
    assert "table_desc.SizeInDescriptors = properties[t].RequiredDescriptorCount;" in joined
    assert "barrier.Type = D3D12_RESOURCE_BARRIER_TYPE_UAV;" in joined.replace("uav_barrier", "barrier")


def test_shared_buffers_are_listed_once_with_the_largest_extent_any_step_binds() -> None:
    text = cpp.emit_program(PROGRAMS[2].steps, "prog")
    assert "enum { prog_BUFFER_COUNT = 2 };" in text
    assert "static const UINT64 prog_BUFFER_SIZES[2] = {16ull, 32ull};" in text  # x; out holds both halves


def test_a_binding_for_a_slot_the_desc_lacks_is_refused() -> None:
    with pytest.raises(ValueError, match="no slot Input"):
        cpp.emit_program([Step("a", linear(), {"Input": "x"})])


# ---------------------------------------------------------------------------------------
# The barriers agree with dmlpy's recorder


def record_with_dmlpy(device: dmlpy.Device, steps: list[Step], barriers: set[int]) -> tuple[dict[str, dmlpy.Buffer], dmlpy.CommandList]:
    """The program through dmlpy's object model as the emitted C++ records it: its heap layout, SetDescriptorHeaps
    first, a barrier after the initializer and before the executes in ``barriers``. Warnings are errors in the
    callers, so overlapping tables (HEAP.TABLE_OVERLAP) would fail them too."""
    program = cpp.plan_program(steps)  # the same buffer plan the emitter binds
    buffers = {name: device.create_buffer(size, name) for name, size in program.buffers.items()}

    def bound(slot: Any) -> Any:
        return buffer_binding(buffers[slot.use.buffer], slot.use.offset, slot.use.size) if slot.use and not slot.owned else DML_BINDING_DESC()

    recorder, command_list = device.create_command_recorder(), device.create_command_list()
    compiled = [device.compile_operator(device.create_operator(step.desc)) for step in steps]
    persistent = [device.create_buffer(size, "persistent") if (size := op.get_binding_properties().PersistentResourceSize) else None for op in compiled]
    initializer = device.create_operator_initializer(compiled)
    # the emitted heap: every table its own range, RequiredDescriptorCount long, the initializer's first
    counts = [d.get_binding_properties().RequiredDescriptorCount for d in (initializer, *compiled)]
    firsts = [sum(counts[:t]) for t in range(len(counts))]
    heap = device.create_descriptor_heap(max(1, sum(counts)), "heap")

    def table_desc(t: int) -> DML_BINDING_TABLE_DESC:
        return DML_BINDING_TABLE_DESC((initializer, *compiled)[t], heap.cpu_handle(firsts[t]), heap.gpu_handle(firsts[t]), counts[t])

    init_table = device.create_binding_table(table_desc(0))
    owned = [[buffer_binding(buffers[s.use.buffer], s.use.offset, s.use.size).Desc if s.owned and s.use else None for s in d.inputs] for d in program.dispatches]
    if any(any(o) for o in owned):
        init_table.bind_inputs([array_binding(o) if any(o) else DML_BINDING_DESC() for o in owned])
    init_table.bind_outputs([buffer_binding(p) if p else DML_BINDING_DESC() for p in persistent])
    command_list.set_descriptor_heaps([heap])
    recorder.record_dispatch(command_list, initializer, init_table)
    command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav()])
    for i, (op, dispatch) in enumerate(zip(compiled, program.dispatches, strict=True)):
        table = device.create_binding_table(table_desc(i + 1))
        table.bind_inputs([bound(s) for s in dispatch.inputs])
        table.bind_outputs([bound(s) for s in dispatch.outputs])
        table.bind_persistent_resource(buffer_binding(persistent[i]) if persistent[i] else None)
        if i in barriers:
            command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav()])
        recorder.record_dispatch(command_list, op, table)
    return buffers, command_list


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.id for p in PROGRAMS])
def test_dmlpy_records_the_emitted_barriers_without_a_hazard_and_the_program_computes_the_right_values(device: dmlpy.Device, program: Program) -> None:
    barriers = {b.before for b in cpp.plan_barriers(cpp.plan_program(program.steps)) if b.before > 0}
    assert sorted(barriers) == program.barriers_between_executes
    with warnings.catch_warnings():
        warnings.simplefilter("error", DmlWarning)
        buffers, command_list = record_with_dmlpy(device, program.steps, barriers)
    buffers["x"].upload(X)
    command_list.close()
    device.execute(command_list)
    for name, values in program.expected.items():
        np.testing.assert_array_equal(buffers[name].read(buffer_tensor("float32", (len(values),))), values)


@pytest.mark.parametrize("program", [p for p in PROGRAMS if p.barriers_between_executes], ids=[p.id for p in PROGRAMS if p.barriers_between_executes])
def test_leaving_out_any_emitted_barrier_is_a_hazard_dmlpy_reports(device: dmlpy.Device, program: Program) -> None:
    for left_out in program.barriers_between_executes:
        with pytest.raises(DmlError) as error:
            record_with_dmlpy(device, program.steps, set(program.barriers_between_executes) - {left_out})
        assert set(rule_ids(error.value)) == {"BARRIER.UAV_MISSING"}


def decoder_model() -> tuple[Any, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The decoder graph as a DxDispatch model (a command per node, resources between them), its inputs and the graph's outputs."""
    from dmlpy.interop.dxdispatch import graph_model, read_model  # noqa: PLC0415

    program, inputs = decoder(backend="numpy")
    return read_model(graph_model(program, inputs)), inputs, program(**inputs)


def test_a_dxdispatch_models_dispatches_share_its_resources_and_each_consumer_gets_a_barrier(device: dmlpy.Device) -> None:
    model, inputs, expected = decoder_model()
    steps = cpp.model_steps(model)
    assert [s.name for s in steps] == ["node0_conv_transpose0", "node1_depth_to_space1", "node2_sigmoid2"]
    barriers = {b.before for b in cpp.plan_barriers(cpp.plan_program(steps)) if b.before > 0}
    assert barriers == {1, 2}  # depth-to-space reads the convolution's output, sigmoid reads depth-to-space's
    assert recorded(run_body(cpp.emit_model(model, "model"), "model_run")) == expected_commands(3, [1, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("error", DmlWarning)
        buffers, command_list = record_with_dmlpy(device, steps, barriers)
    for name, value in inputs.items():
        buffers[name].upload(value)
    command_list.close()
    device.execute(command_list)
    for name, value in expected.items():  # the graph the model was written from gives the same numbers
        np.testing.assert_allclose(buffers[name].read(buffer_tensor("float32", value.shape)), value, rtol=1e-6, atol=1e-6)
    for left_out in barriers:
        with pytest.raises(DmlError) as error:
            record_with_dmlpy(device, steps, barriers - {left_out})
        assert set(rule_ids(error.value)) == {"BARRIER.UAV_MISSING"}


# ---------------------------------------------------------------------------------------
# Compiling with mingw-w64 against d3d12.h


def mingw(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert MINGW is not None, "DMLPY_REQUIRE_MINGW=1 but x86_64-w64-mingw32-g++ is not installed"
    flags = ["-std=c++17", "-Wall", "-Wextra", "-Werror", f"-I{STUB}", f"-I{dmlpy.get_include()}"]
    return subprocess.run([MINGW, *flags, *args], capture_output=True, text=True, cwd=cwd, timeout=300, check=False)


RUN_SIGNATURE = "HRESULT (*volatile run)(IDMLDevice*, ID3D12Device*, ID3D12CommandQueue*, ID3D12Resource* const*)"


@needs_mingw
def test_recordings_of_operators_a_program_and_a_graph_compile_and_link_for_windows(tmp_path: Path) -> None:
    from test_cpp_all_kinds import _descs  # noqa: PLC0415 - every field kind, tensor arrays (JOIN) included

    program, _ = decoder(backend="numpy")
    headers = {
        "ops.h": (cpp.emit_operators({c.id: c.build() for c in CASES[:4]}, "ops"), "ops_run"),
        "kinds.h": (cpp.emit_operators(_descs(), "kinds"), "kinds_run"),
        "chain.h": (cpp.emit_program(PROGRAMS[4].steps, "chain"), "chain_run"),
        "owned.h": (cpp.emit_program([Step("w", linear(DML_TENSOR_FLAGS.OWNED_BY_DML), {"OutputTensor": "y"})], "owned"), "owned_run"),
        "graph.h": (cpp.emit_graph(program, "decoder"), "decoder_run"),
        "model.h": (cpp.emit_model(decoder_model()[0], "model"), "model_run"),
    }
    checks = []
    for name, (text, function) in headers.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        checks.append(f"    {{ {RUN_SIGNATURE} = {function}; failures += run == nullptr; }}")
    source = [*(f'#include "{name}"' for name in headers), "int main() {", "    int failures = 0;", *checks, "    return failures;", "}", ""]
    (tmp_path / "main.cpp").write_text("\n".join(source), encoding="utf-8")
    done = mingw("-DDML_TARGET_VERSION_USE_LATEST", "main.cpp", "-o", "main.exe", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "main.exe").read_bytes()[:2] == b"MZ"  # a Windows executable


@needs_mingw
def test_a_single_operator_header_compiles_for_windows_at_the_target_version_it_chooses(tmp_path: Path) -> None:
    (tmp_path / "pool.h").write_text(cpp.emit_operator(CASES[0].build(), "pool"), encoding="utf-8")
    (tmp_path / "main.cpp").write_text(f'#include "pool.h"\nint main() {{ {RUN_SIGNATURE} = pool_run; return run == nullptr; }}\n', encoding="utf-8")
    done = mingw("-c", "main.cpp", "-o", "main.o", cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_dmlpy_emit_cpp_writes_the_models_recording(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dmlpy import cli  # noqa: PLC0415
    from dmlpy.interop.dxdispatch import graph_model  # noqa: PLC0415

    program, inputs = decoder(backend="numpy")
    path = tmp_path / "decoder.json"
    path.write_text(json.dumps(graph_model(program, inputs)), encoding="utf-8")
    assert cli.main(["emit-cpp", str(path), "--prefix", "decoder"]) == 0
    assert recorded(run_body(capsys.readouterr().out, "decoder_run")) == expected_commands(3, [1, 2])
