"""What a user does to dmlpy's objects after handing them over never reaches the C kernels unchecked.

DirectML copies a desc at IDMLDevice::CreateOperator; dmlpy's operators own a private
snapshot too. Outputs, temporary and persistent resources must be writable memory, and a
thread count is a UINT. The operator is AVERAGE_POOLING {1,1,4,4} -> {1,1,2,2}, 2x2 window,
stride 2: for the input 0..15 the outputs are 2.5, 4.5, 10.5 and 12.5 (hand-computed).
"""

from __future__ import annotations

import mmap
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_rule

import dmlpy
from dmlpy import D3D12_RESOURCE_BARRIER
from dmlpy import (
    DML_ACTIVATION_RELU_OPERATOR_DESC,
    DML_AVERAGE_POOLING_OPERATOR_DESC,
    DML_BINDING_DESC,
    DML_CONVOLUTION_OPERATOR_DESC,
    DML_OPERATOR_DESC,
    DML_OPERATOR_TYPE,
    DML_TENSOR_DATA_TYPE,
    DML_TENSOR_FLAGS,
    DmlError,
    FusedActivation,
    array_binding,
    buffer_binding,
    buffer_tensor,
    graph_desc,
    input_edge,
    intermediate_edge,
    operator_node,
    output_edge,
)

DT = DML_TENSOR_DATA_TYPE
ROOT = Path(__file__).resolve().parent.parent
X = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
EXPECTED = np.array([[[[2.5, 4.5], [10.5, 12.5]]]], dtype=np.float32)
OUT = buffer_tensor(DT.FLOAT32, [1, 1, 2, 2])
OP_NAME = "DML_OPERATOR_AVERAGE_POOLING"


def pool_desc(*, owned: bool = False) -> DML_AVERAGE_POOLING_OPERATOR_DESC:
    flags = DML_TENSOR_FLAGS.OWNED_BY_DML if owned else DML_TENSOR_FLAGS.NONE
    return DML_AVERAGE_POOLING_OPERATOR_DESC(
        buffer_tensor(DT.FLOAT32, [1, 1, 4, 4], flags=flags), buffer_tensor(DT.FLOAT32, [1, 1, 2, 2]),
        2, [2, 2], [2, 2], [0, 0], [0, 0], True,
    )  # fmt: skip


def dispatch(device: dmlpy.Device, operator: object, *, owned: bool = False, y: dmlpy.Buffer | None = None,
             persistent: dmlpy.Buffer | None = None, before_execute: Callable[[], None] = lambda: None) -> np.ndarray:  # fmt: skip
    """Compile, initialize, bind, record and execute a pool operator; returns the output."""
    compiled = device.compile_operator(operator)
    x = dmlpy.Buffer.from_array(X)
    y = y or dmlpy.Buffer(16)
    size = compiled.get_binding_properties().PersistentResourceSize
    persistent = persistent or (dmlpy.Buffer(size) if size else None)
    recorder, command_list = device.create_command_recorder(), device.create_command_list()
    initializer = device.create_operator_initializer([compiled])
    init_table = device.create_binding_table(initializer)
    if owned:
        init_table.bind_inputs([array_binding([buffer_binding(x)])])
        init_table.bind_outputs([buffer_binding(persistent)])
    recorder.record_dispatch(command_list, initializer, init_table)
    command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav()])  # the dispatch after the initializer reads what it wrote
    table = device.create_binding_table(compiled)
    table.bind_inputs([DML_BINDING_DESC() if owned else buffer_binding(x)])
    table.bind_outputs([buffer_binding(y)])
    if owned:
        table.bind_persistent_resource(buffer_binding(persistent))
    recorder.record_dispatch(command_list, compiled, table)
    command_list.close()
    before_execute()
    device.execute(command_list)
    return y.read(OUT)


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter on this worktree's dmlpy, so a segfault fails the test instead of killing pytest."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-X", "faulthandler", "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, timeout=120, check=False)


# ---------------------------------------------------------------------------------------
# 1. The operator owns an immutable snapshot of its desc


def test_changing_operator_desc_strides_after_create_operator_changes_nothing(device: dmlpy.Device) -> None:
    operator = device.create_operator(pool_desc())
    operator.desc.Strides = (2,)  # one stride for DimensionCount 2: C would read past the array
    operator.desc.OutputTensor.Desc.Sizes = (1, 1, 1, 1)
    assert list(operator.desc.Strides) == [2, 2]
    np.testing.assert_array_equal(dispatch(device, operator), EXPECTED)


def test_a_fused_activation_swapped_after_create_operator_never_reaches_the_kernel(device: dmlpy.Device) -> None:
    # 1x1 convolution with filter 1: y = relu(x); a LINEAR Type over a RELU Desc would make C
    # read a LINEAR struct's Alpha and Beta from the smaller RELU allocation
    x = np.array([-2.0, -1.0, 1.0, 2.0], dtype=np.float32).reshape(1, 1, 2, 2)
    desc = DML_CONVOLUTION_OPERATOR_DESC(
        buffer_tensor(DT.FLOAT32, [1, 1, 2, 2]), buffer_tensor(DT.FLOAT32, [1, 1, 1, 1]), None, buffer_tensor(DT.FLOAT32, [1, 1, 2, 2]),
        dmlpy.DML_CONVOLUTION_MODE.CROSS_CORRELATION, dmlpy.DML_CONVOLUTION_DIRECTION.FORWARD, 2,
        (1, 1), (1, 1), (0, 0), (0, 0), (0, 0), 1, FusedActivation.relu(),
    )  # fmt: skip
    operator = device.create_operator(desc)
    operator.desc.FusedActivation = DML_OPERATOR_DESC(DML_OPERATOR_TYPE.ACTIVATION_LINEAR, DML_ACTIVATION_RELU_OPERATOR_DESC())
    operator.desc.FusedActivation.Type = DML_OPERATOR_TYPE.ACTIVATION_LINEAR
    compiled = device.compile_operator(operator)
    buffers = [dmlpy.Buffer.from_array(x), dmlpy.Buffer.from_array(np.ones((1, 1, 1, 1), np.float32)), dmlpy.Buffer(16)]
    recorder, command_list = device.create_command_recorder(), device.create_command_list()
    initializer = device.create_operator_initializer([compiled])
    recorder.record_dispatch(command_list, initializer, device.create_binding_table(initializer))
    command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav()])  # the dispatch after the initializer reads what it wrote
    table = device.create_binding_table(compiled)
    table.bind_inputs([buffer_binding(buffers[0]), buffer_binding(buffers[1]), DML_BINDING_DESC()])
    table.bind_outputs([buffer_binding(buffers[2])])
    recorder.record_dispatch(command_list, compiled, table)
    command_list.close()
    device.execute(command_list)
    np.testing.assert_array_equal(buffers[2].read(buffer_tensor(DT.FLOAT32, [1, 1, 2, 2])).reshape(-1), [0.0, 0.0, 1.0, 2.0])


def test_operator_desc_cannot_be_replaced(device: dmlpy.Device) -> None:
    operator = device.create_operator(pool_desc())
    with pytest.raises(AttributeError):
        operator.desc = DML_AVERAGE_POOLING_OPERATOR_DESC()  # type: ignore[misc]
    np.testing.assert_array_equal(dispatch(device, operator), EXPECTED)


def test_a_slot_tensor_changed_through_input_slots_changes_no_binding_check(device: dmlpy.Device) -> None:
    compiled = device.compile_operator(device.create_operator(pool_desc()))
    compiled.input_slots()[0].tensor.TotalTensorSizeInBytes = 4
    table = device.create_binding_table(compiled)
    with pytest.raises(DmlError) as caught:
        table.bind_inputs([buffer_binding(dmlpy.Buffer(4))])
    assert_rule(caught.value, "BINDING.SIZE_TOO_SMALL", f"{OP_NAME}.BindInputs[0] (InputTensor).SizeInBytes")


def test_compile_operator_refuses_an_object_that_only_claims_to_be_the_devices_operator(device: dmlpy.Device) -> None:
    real = device.create_operator(pool_desc())

    class Impostor:
        def __init__(self) -> None:
            self.device, self.spec, self.desc, self.name = device, real.spec, DML_AVERAGE_POOLING_OPERATOR_DESC(), real.name

        def tensor(self, name: str) -> object:
            return real.tensor(name)

    with pytest.raises(DmlError) as caught:
        device.compile_operator(Impostor())  # type: ignore[arg-type]
    assert_rule(caught.value, "DEVICE.FOREIGN_OBJECT", "CompileOperator")


def test_a_graph_node_that_only_claims_to_be_the_devices_operator_is_refused(device: dmlpy.Device) -> None:
    real = device.create_operator(pool_desc())

    class Impostor:
        device, spec, name = real.device, real.spec, real.name
        desc = DML_AVERAGE_POOLING_OPERATOR_DESC()

        def tensor(self, name: str) -> object:
            return real.tensor(name)

    with pytest.raises(DmlError) as caught:
        device.compile_graph(graph_desc(1, 1, [operator_node(Impostor())], [input_edge(0, 0)], [output_edge(0, 0, 0)]))
    assert_rule(caught.value, "GRAPH.NODE_OPERATOR", "DML_GRAPH_DESC.Nodes[0].Operator")


def test_an_operators_spec_cannot_change_how_later_descs_are_validated(device: dmlpy.Device) -> None:
    operator = device.create_operator(pool_desc())
    table = next(iter(operator.spec.support.tables.values()))
    with pytest.raises((TypeError, AttributeError)):
        table["InputTensor"] = 0  # type: ignore[index]
    with pytest.raises((TypeError, AttributeError)):
        operator.spec.support.tables.clear()  # type: ignore[attr-defined]
    np.testing.assert_array_equal(dispatch(device, device.create_operator(pool_desc())), EXPECTED)


def test_binding_table_bindings_cannot_be_replaced_after_checking(device: dmlpy.Device) -> None:
    compiled = device.compile_operator(device.create_operator(pool_desc()))
    table = device.create_binding_table(compiled)
    table.bind_outputs([buffer_binding(dmlpy.Buffer(16))])
    with pytest.raises(AttributeError):
        table.outputs = [dmlpy.binding.BoundRange(dmlpy.Buffer(4), 0, 4)]  # type: ignore[misc]


def test_an_initializer_reset_to_more_targets_needs_its_table_bound_again(device: dmlpy.Device) -> None:
    a = device.compile_operator(device.create_operator(pool_desc(owned=True)))
    b = device.compile_operator(device.create_operator(pool_desc(owned=True)))
    x, persistent = dmlpy.Buffer.from_array(X), dmlpy.Buffer(256)
    initializer = device.create_operator_initializer([a])
    table = device.create_binding_table(DML_BINDING_TABLE_DESC_for(initializer, 8))
    table.bind_inputs([array_binding([buffer_binding(x)])])
    table.bind_outputs([buffer_binding(persistent)])
    initializer.reset([a, b])
    with pytest.raises(DmlError) as caught:
        device.create_command_recorder().record_dispatch(device.create_command_list(), initializer, table)
    assert_rule(caught.value, "DISPATCH.BINDINGS_STALE", "IDMLOperatorInitializer.RecordDispatch")


def DML_BINDING_TABLE_DESC_for(dispatchable: object, descriptors: int) -> dmlpy.DML_BINDING_TABLE_DESC:  # noqa: N802
    return dmlpy.DML_BINDING_TABLE_DESC(dispatchable, 0, 0, descriptors)


# ---------------------------------------------------------------------------------------
# 2. Outputs, temporary and persistent resources are writable memory


def read_only_bytes(size: int) -> object:
    return bytes(size)


def read_only_array(size: int) -> object:
    array = np.zeros(size, np.uint8)
    array.setflags(write=False)
    return array


def read_only_mmap(size: int) -> object:
    return mmap.mmap(-1, size, prot=mmap.PROT_READ)


READ_ONLY = [
    pytest.param(read_only_bytes, id="bytes"),
    pytest.param(read_only_array, id="a read-only NumPy array"),
    pytest.param(read_only_mmap, id="a PROT_READ mmap"),
]


@pytest.mark.parametrize("memory", READ_ONLY)
def test_a_read_only_output_buffer_is_refused_at_bind_outputs(device: dmlpy.Device, memory: Callable[[int], object]) -> None:
    y = dmlpy.Buffer(16)
    y.data = memory(16)
    with pytest.raises(DmlError) as caught:
        dispatch(device, device.create_operator(pool_desc()), y=y)
    assert_rule(caught.value, "BINDING.READ_ONLY_BUFFER", f"{OP_NAME}.BindOutputs[0] (OutputTensor)")


@pytest.mark.parametrize("memory", READ_ONLY)
def test_an_output_made_read_only_after_recording_is_refused_before_the_kernel_runs(device: dmlpy.Device, memory: Callable[[int], object]) -> None:
    y = dmlpy.Buffer(16)

    def make_read_only() -> None:
        y.data = memory(16)

    with pytest.raises(DmlError) as caught:
        dispatch(device, device.create_operator(pool_desc()), y=y, before_execute=make_read_only)
    assert_rule(caught.value, "BINDING.READ_ONLY_BUFFER", f"{OP_NAME}.BindOutputs[0] (OutputTensor)")
    assert bytes(y.data) == bytes(16)


def recorded_pool(device: dmlpy.Device) -> tuple[dmlpy.CommandList, dmlpy.Buffer]:
    """A closed command list that initializes and runs the pool into the returned output buffer."""
    compiled = device.compile_operator(device.create_operator(pool_desc()))
    x, y = dmlpy.Buffer.from_array(X), dmlpy.Buffer(16)
    recorder, command_list = device.create_command_recorder(), device.create_command_list()
    initializer = device.create_operator_initializer([compiled])
    recorder.record_dispatch(command_list, initializer, device.create_binding_table(initializer))
    command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav()])  # the dispatch after the initializer reads what it wrote
    table = device.create_binding_table(compiled)
    table.bind_inputs([buffer_binding(x)])
    table.bind_outputs([buffer_binding(y)])
    recorder.record_dispatch(command_list, compiled, table)
    command_list.close()
    return command_list, y


def test_an_output_made_read_only_between_two_executions_is_refused_the_second_time(device: dmlpy.Device) -> None:
    command_list, y = recorded_pool(device)
    device.execute(command_list)
    np.testing.assert_array_equal(y.read(OUT), EXPECTED)
    y.data = read_only_array(16)
    with pytest.raises(DmlError) as caught:
        device.execute(command_list)
    assert_rule(caught.value, "BINDING.READ_ONLY_BUFFER", f"{OP_NAME}.BindOutputs[0] (OutputTensor)")


def test_an_execution_writes_into_the_memory_the_buffer_holds_now(device: dmlpy.Device) -> None:
    command_list, y = recorded_pool(device)
    device.execute(command_list)
    replacement = np.zeros(4, np.float32)
    y.data = replacement
    device.execute(command_list)
    np.testing.assert_array_equal(replacement, EXPECTED.reshape(-1))


def test_an_output_in_a_prot_read_mmap_is_an_error_not_a_segfault() -> None:
    result = run_python("""
        import mmap, numpy as np, dmlpy
        desc = dmlpy.DML_AVERAGE_POOLING_OPERATOR_DESC(dmlpy.buffer_tensor("float32", [1, 1, 4, 4]), dmlpy.buffer_tensor("float32", [1, 1, 2, 2]),
                                                       2, [2, 2], [2, 2], [0, 0], [0, 0], True)
        for backend in ["native", "numpy"] if dmlpy.native_available() else ["numpy"]:
            device = dmlpy.create_device(backend=backend)
            compiled = device.compile_operator(device.create_operator(desc))
            x, y = dmlpy.Buffer.from_array(np.arange(16, dtype=np.float32)), dmlpy.Buffer(16)
            recorder, command_list = device.create_command_recorder(), device.create_command_list()
            initializer = device.create_operator_initializer([compiled])
            recorder.record_dispatch(command_list, initializer, device.create_binding_table(initializer))
            command_list.resource_barrier([dmlpy.D3D12_RESOURCE_BARRIER.uav()])  # the dispatch after the initializer reads what it wrote
            table = device.create_binding_table(compiled)
            table.bind_inputs([dmlpy.buffer_binding(x)])
            table.bind_outputs([dmlpy.buffer_binding(y)])
            recorder.record_dispatch(command_list, compiled, table)
            command_list.close()
            y.data = np.frombuffer(mmap.mmap(-1, 16, prot=mmap.PROT_READ), np.uint8)  # on the unfixed code the kernel stores through it
            try:
                device.execute(command_list)
            except dmlpy.DmlError as error:
                print(backend, [f.rule for f in error.findings])
    """)
    assert result.returncode == 0, result.stderr[-2000:]
    expected = ["native ['BINDING.READ_ONLY_BUFFER']"] * dmlpy.native_available() + ["numpy ['BINDING.READ_ONLY_BUFFER']"]
    assert result.stdout.split("\n")[: len(expected)] == expected


@pytest.mark.parametrize("memory", READ_ONLY)
def test_a_read_only_persistent_resource_is_refused_for_the_initializer(device: dmlpy.Device, memory: Callable[[int], object]) -> None:
    persistent = dmlpy.Buffer(256)
    persistent.data = memory(256)
    with pytest.raises(DmlError) as caught:
        dispatch(device, device.create_operator(pool_desc(owned=True)), owned=True, persistent=persistent)
    assert_rule(caught.value, "BINDING.READ_ONLY_BUFFER", "IDMLOperatorInitializer.BindOutputs[0] (DML_OPERATOR_AVERAGE_POOLING[0] persistent resource)")


def test_a_read_only_temporary_resource_is_refused(device: dmlpy.Device) -> None:
    small = DML_AVERAGE_POOLING_OPERATOR_DESC(
        buffer_tensor(DT.FLOAT32, [1, 1, 2, 2]), buffer_tensor(DT.FLOAT32, [1, 1, 1, 1]), 2, [2, 2], [2, 2], [0, 0], [0, 0], True
    )
    a, b = device.create_operator(pool_desc()), device.create_operator(small)
    compiled = device.compile_graph(graph_desc(1, 1, [operator_node(a), operator_node(b)], [input_edge(0, 0)], [output_edge(1, 0, 0)], [intermediate_edge(0, 0, 1)]))
    size = compiled.get_binding_properties().TemporaryResourceSize
    assert size > 0
    temporary = dmlpy.Buffer(size)
    temporary.data = bytes(size)
    table = device.create_binding_table(compiled)
    with pytest.raises(DmlError) as caught:
        table.bind_temporary_resource(buffer_binding(temporary))
    assert_rule(caught.value, "BINDING.READ_ONLY_BUFFER", "IDMLCompiledOperator (graph).BindTemporaryResource")


def test_a_read_only_input_buffer_is_read(device: dmlpy.Device) -> None:
    operator = device.create_operator(pool_desc())
    compiled = device.compile_operator(operator)
    x, y = dmlpy.Buffer(64), dmlpy.Buffer(16)
    x.data = X.tobytes()
    recorder, command_list = device.create_command_recorder(), device.create_command_list()
    initializer = device.create_operator_initializer([compiled])
    recorder.record_dispatch(command_list, initializer, device.create_binding_table(initializer))
    command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav()])  # the dispatch after the initializer reads what it wrote
    table = device.create_binding_table(compiled)
    table.bind_inputs([buffer_binding(x)])
    table.bind_outputs([buffer_binding(y)])
    recorder.record_dispatch(command_list, compiled, table)
    command_list.close()
    device.execute(command_list)
    np.testing.assert_array_equal(y.read(OUT), EXPECTED)


@pytest.mark.parametrize(
    ("memory", "error"),
    [
        pytest.param(lambda: np.zeros(8, np.uint8), ValueError, id="a smaller array is refused"),
        pytest.param(lambda: np.zeros(32, np.uint8)[::2], ValueError, id="a non-contiguous array is refused"),
        pytest.param(lambda: [0] * 16, TypeError, id="a list is refused"),
        pytest.param(lambda: None, TypeError, id="None is refused"),
        pytest.param(lambda: np.zeros(20, np.uint8)[1:17], ValueError, id="memory not 16-byte aligned is refused"),
    ],
)
def test_buffer_data_accepts_only_memory_of_the_buffers_size(memory: Callable[[], object], error: type[Exception]) -> None:
    buffer = dmlpy.Buffer(16)
    with pytest.raises(error):
        buffer.data = memory()
    assert buffer.size == 16


def test_buffer_data_takes_a_float_array_as_its_bytes(device: dmlpy.Device) -> None:
    x = dmlpy.Buffer(64)
    x.data = X.copy()
    np.testing.assert_array_equal(x.read(buffer_tensor(DT.FLOAT32, [1, 1, 4, 4])), X)


def test_reshaping_buffer_data_in_place_leaves_the_buffer_as_it_is() -> None:
    buffer = dmlpy.Buffer(16)
    view = buffer.data
    view.shape = (4, 4)
    view.dtype = np.float32
    assert (buffer.data.shape, buffer.data.dtype) == ((16,), np.uint8)


# ---------------------------------------------------------------------------------------
# 3. The thread count is a UINT


@pytest.mark.parametrize("threads", [pytest.param(-1, id="minus one"), pytest.param(2**32, id="2**32"), pytest.param(99999999999, id="99999999999")])
@pytest.mark.parametrize("backend_name", ["native", "numpy"])
def test_create_device_refuses_a_thread_count_outside_uint(backend_name: str, threads: int) -> None:
    if backend_name == "native" and not dmlpy.native_available():
        pytest.skip(dmlpy.native_status())
    with pytest.raises(ValueError, match="0 .. 4294967295"):
        dmlpy.create_device(backend=backend_name, threads=threads)


@pytest.mark.parametrize("threads", [pytest.param(2.5, id="a float"), pytest.param("4", id="a string"), pytest.param(True, id="a bool")])
def test_create_device_refuses_a_thread_count_that_is_not_an_int(threads: object) -> None:
    with pytest.raises(TypeError):
        dmlpy.create_device(backend="numpy", threads=threads)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [pytest.param("99999999999", id="too large"), pytest.param("-1", id="negative"), pytest.param("four", id="not a number")])
def test_create_device_refuses_a_bad_dmlpy_num_threads(monkeypatch: pytest.MonkeyPatch, backend: str, value: str) -> None:
    monkeypatch.setenv("DMLPY_NUM_THREADS", value)
    with pytest.raises(ValueError, match="DMLPY_NUM_THREADS"):
        dmlpy.create_device(backend=backend)


def test_the_largest_thread_count_is_accepted_and_runs(backend: str) -> None:
    device = dmlpy.create_device(backend=backend, threads=2**32 - 1)
    np.testing.assert_array_equal(dispatch(device, device.create_operator(pool_desc())), EXPECTED)
