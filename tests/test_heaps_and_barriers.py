"""D3D12's rules around DirectML dispatches: descriptor heaps, UAV barriers, command list states.

The dispatches are ACTIVATION_LINEAR {1,1,2,2} (16 bytes in, 16 bytes out): y = 2 x + 1. A chain
x -> A -> t -> B -> y makes B read what A wrote, so B needs a UAV barrier after A; 1, 2, 3, 4 give
3, 5, 7, 9 after A and 7, 11, 15, 19 after B.
"""

from __future__ import annotations

import gc
import warnings
from typing import Any

import numpy as np
import pytest
from conftest import assert_rule, rule_ids

import dmlpy
from dmlpy import (
    D3D12_RESOURCE_BARRIER,
    DML_ACTIVATION_LINEAR_OPERATOR_DESC,
    DML_AVERAGE_POOLING_OPERATOR_DESC,
    DML_BINDING_DESC,
    DML_BINDING_TABLE_DESC,
    DML_TENSOR_FLAGS,
    HRESULT,
    Buffer,
    DmlError,
    DmlWarning,
    array_binding,
    buffer_binding,
    buffer_tensor,
)

SHAPE = (1, 1, 2, 2)
X = np.array([1, 2, 3, 4], np.float32).reshape(SHAPE)


def linear_op(device: dmlpy.Device) -> Any:
    desc = DML_ACTIVATION_LINEAR_OPERATOR_DESC(buffer_tensor("float32", SHAPE), buffer_tensor("float32", SHAPE), Alpha=2.0, Beta=1.0)
    compiled = device.compile_operator(device.create_operator(desc))
    initializer = device.create_operator_initializer([compiled])
    init_list = device.create_command_list()
    device.create_command_recorder().record_dispatch(init_list, initializer, device.create_binding_table(initializer))
    init_list.close()
    device.execute(init_list)
    return compiled


def table(device: dmlpy.Device, compiled: Any, source: Buffer, target: Buffer, desc: DML_BINDING_TABLE_DESC | None = None) -> dmlpy.BindingTable:
    t = device.create_binding_table(desc or compiled)
    t.bind_inputs([buffer_binding(source)])
    t.bind_outputs([buffer_binding(target)])
    return t


def chain(device: dmlpy.Device) -> tuple[Any, Any, Buffer, Buffer, Buffer]:
    a, b = linear_op(device), linear_op(device)
    x, t, y = (device.create_buffer(16, name) for name in "xty")
    x.upload(X)
    return a, b, x, t, y


def test_a_dispatch_reading_what_the_previous_one_wrote_without_a_barrier_is_an_error_on_a_debug_device(device: dmlpy.Device) -> None:
    a, b, x, t, y = chain(device)
    recorder, cl = device.create_command_recorder(), device.create_command_list()
    recorder.record_dispatch(cl, a, table(device, a, x, t))
    with pytest.raises(DmlError) as error:
        recorder.record_dispatch(cl, b, table(device, b, t, y))
    assert_rule(error.value, "BARRIER.UAV_MISSING", "DML_OPERATOR_ACTIVATION_LINEAR.RecordDispatch")
    assert device.get_device_removed_reason() == HRESULT.S_OK  # the debug layer reports it; the device lives on
    assert len(cl.dispatches) == 1


@pytest.mark.parametrize("barrier", [D3D12_RESOURCE_BARRIER.uav(), None], ids=["a UAV barrier on every resource", "a UAV barrier on the written buffer"])
def test_a_uav_barrier_between_dependent_dispatches_removes_the_hazard_and_both_run_in_order(device: dmlpy.Device, barrier: D3D12_RESOURCE_BARRIER | None) -> None:
    a, b, x, t, y = chain(device)
    recorder, cl = device.create_command_recorder(), device.create_command_list()
    recorder.record_dispatch(cl, a, table(device, a, x, t))
    cl.resource_barrier([barrier or D3D12_RESOURCE_BARRIER.uav(t)])
    with warnings.catch_warnings():
        warnings.simplefilter("error", DmlWarning)
        recorder.record_dispatch(cl, b, table(device, b, t, y))
    cl.close()
    device.execute(cl)
    np.testing.assert_array_equal(y.read(buffer_tensor("float32", SHAPE)).ravel(), [7, 11, 15, 19])


def test_a_barrier_on_another_buffer_does_not_order_the_dispatches(device: dmlpy.Device) -> None:
    a, b, x, t, y = chain(device)
    recorder, cl = device.create_command_recorder(), device.create_command_list()
    recorder.record_dispatch(cl, a, table(device, a, x, t))
    cl.resource_barrier([D3D12_RESOURCE_BARRIER.uav(x)])
    with pytest.raises(DmlError) as error:
        recorder.record_dispatch(cl, b, table(device, b, t, y))
    assert rule_ids(error.value) == ["BARRIER.UAV_MISSING"]


def test_without_debug_the_missing_barrier_is_a_warning_and_the_list_still_runs(backend: str) -> None:
    device = dmlpy.create_device(backend=backend, debug=False)
    a, b, x, t, y = chain(device)
    recorder, cl = device.create_command_recorder(), device.create_command_list()
    recorder.record_dispatch(cl, a, table(device, a, x, t))
    with pytest.warns(DmlWarning, match="UAV_MISSING"):
        recorder.record_dispatch(cl, b, table(device, b, t, y))
    cl.close()
    device.execute(cl)
    np.testing.assert_array_equal(y.read(buffer_tensor("float32", SHAPE)).ravel(), [7, 11, 15, 19])


def test_writing_what_an_earlier_dispatch_reads_needs_a_barrier_too(device: dmlpy.Device) -> None:
    a, b, x, t, y = chain(device)
    recorder, cl = device.create_command_recorder(), device.create_command_list()
    recorder.record_dispatch(cl, a, table(device, a, x, t))  # reads x
    with pytest.raises(DmlError) as error:
        recorder.record_dispatch(cl, b, table(device, b, y, x))  # writes x
    assert_rule(error.value, "BARRIER.UAV_MISSING")


def test_two_dispatches_writing_one_buffer_need_a_barrier(device: dmlpy.Device) -> None:
    a, b, x, t, y = chain(device)
    recorder, cl = device.create_command_recorder(), device.create_command_list()
    recorder.record_dispatch(cl, a, table(device, a, x, t))
    with pytest.raises(DmlError) as error:
        recorder.record_dispatch(cl, b, table(device, b, y, t))
    assert_rule(error.value, "BARRIER.UAV_MISSING")


def test_disjoint_ranges_of_one_buffer_and_shared_inputs_need_no_barrier(device: dmlpy.Device) -> None:
    a, b, x, _, _ = chain(device)
    out = device.create_buffer(32, "out")
    recorder, cl = device.create_command_recorder(), device.create_command_list()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DmlWarning)
        for op, offset in ((a, 0), (b, 16)):  # both read x; each writes its own 16 bytes of out
            t = device.create_binding_table(op)
            t.bind_inputs([buffer_binding(x)])
            t.bind_outputs([buffer_binding(out, offset, 16)])
            recorder.record_dispatch(cl, op, t)
    cl.close()
    device.execute(cl)
    np.testing.assert_array_equal(out.read(buffer_tensor("float32", (8,))), [3, 5, 7, 9, 3, 5, 7, 9])


def test_dispatches_in_separate_executions_need_no_barrier(device: dmlpy.Device) -> None:
    a, b, x, t, y = chain(device)
    recorder = device.create_command_recorder()
    for op, source, target in ((a, x, t), (b, t, y)):
        cl = device.create_command_list()
        recorder.record_dispatch(cl, op, table(device, op, source, target))
        cl.close()
        device.execute(cl)  # ExecuteCommandLists waits: the next list sees every write
    np.testing.assert_array_equal(y.read(buffer_tensor("float32", SHAPE)).ravel(), [7, 11, 15, 19])


def owned_pool(device: dmlpy.Device) -> tuple[Any, Buffer, Buffer, Buffer]:
    desc = DML_AVERAGE_POOLING_OPERATOR_DESC(buffer_tensor("float32", (1, 1, 2, 2), flags=DML_TENSOR_FLAGS.OWNED_BY_DML), buffer_tensor("float32", (1, 1, 1, 1)),
                                             2, (1, 1), (2, 2), (0, 0), (0, 0), False)  # fmt: skip
    compiled = device.compile_operator(device.create_operator(desc))
    x, y = device.create_buffer(16, "x"), device.create_buffer(4 * 4, "y")
    x.upload(X)
    persistent = device.create_buffer(compiled.get_binding_properties().PersistentResourceSize, "persistent")
    return compiled, x, y, persistent


@pytest.mark.parametrize("with_barrier", [False, True], ids=["without a barrier", "with a barrier"])
def test_the_first_execute_after_its_initializer_in_one_list_needs_a_barrier(device: dmlpy.Device, with_barrier: bool) -> None:
    compiled, x, y, persistent = owned_pool(device)
    initializer = device.create_operator_initializer([compiled])
    init_table = device.create_binding_table(initializer)
    init_table.bind_inputs([array_binding([buffer_binding(x)])])
    init_table.bind_outputs([buffer_binding(persistent)])
    run_table = device.create_binding_table(compiled)
    run_table.bind_inputs([DML_BINDING_DESC()])
    run_table.bind_outputs([buffer_binding(y)])
    run_table.bind_persistent_resource(buffer_binding(persistent))
    recorder, cl = device.create_command_recorder(), device.create_command_list()
    recorder.record_dispatch(cl, initializer, init_table)  # writes the persistent resource
    if not with_barrier:
        with pytest.raises(DmlError) as error:
            recorder.record_dispatch(cl, compiled, run_table)  # reads it
        assert_rule(error.value, "BARRIER.UAV_MISSING")
        return
    cl.resource_barrier([D3D12_RESOURCE_BARRIER.uav(persistent)])
    recorder.record_dispatch(cl, compiled, run_table)
    cl.close()
    device.execute(cl)
    assert y.read(buffer_tensor("float32", (1, 1, 1, 1))).item() == 2.5


# ---------------------------------------------------------------------------------------
# Descriptor heaps


def heap_table(device: dmlpy.Device, compiled: Any, heap: dmlpy.DescriptorHeap, first: int, size: int | None = None) -> DML_BINDING_TABLE_DESC:
    count = compiled.get_binding_properties().RequiredDescriptorCount if size is None else size
    return DML_BINDING_TABLE_DESC(compiled, heap.cpu_handle(first), heap.gpu_handle(first), count)


def test_a_table_in_a_heap_runs_once_the_heap_is_set_on_the_command_list(device: dmlpy.Device) -> None:
    a, _, x, t, _ = chain(device)
    heap = device.create_descriptor_heap(8, "heap")
    bound = table(device, a, x, t, heap_table(device, a, heap, 2))
    assert bound.heap is heap
    recorder, cl = device.create_command_recorder(), device.create_command_list()
    cl.set_descriptor_heaps([heap])
    recorder.record_dispatch(cl, a, bound)
    cl.close()
    device.execute(cl)
    np.testing.assert_array_equal(t.read(buffer_tensor("float32", SHAPE)).ravel(), [3, 5, 7, 9])


def test_record_dispatch_without_the_tables_heap_set_is_an_error_and_removes_the_device(device: dmlpy.Device) -> None:
    a, _, x, t, _ = chain(device)
    heap = device.create_descriptor_heap(8)
    bound = table(device, a, x, t, heap_table(device, a, heap, 0))
    with pytest.raises(DmlError) as error:
        device.create_command_recorder().record_dispatch(device.create_command_list(), a, bound)
    assert_rule(error.value, "HEAP.NOT_SET", "DML_OPERATOR_ACTIVATION_LINEAR.RecordDispatch")
    assert device.get_device_removed_reason() == HRESULT.E_INVALIDARG


def test_another_heap_set_on_the_list_does_not_count(device: dmlpy.Device) -> None:
    a, _, x, t, _ = chain(device)
    heap, other = device.create_descriptor_heap(8), device.create_descriptor_heap(8)
    cl = device.create_command_list()
    cl.set_descriptor_heaps([other])
    with pytest.raises(DmlError) as error:
        device.create_command_recorder().record_dispatch(cl, a, table(device, a, x, t, heap_table(device, a, heap, 0)))
    assert_rule(error.value, "HEAP.NOT_SET")


def test_reset_clears_the_heaps_set_on_a_command_list(device: dmlpy.Device) -> None:
    a, _, x, t, _ = chain(device)
    heap = device.create_descriptor_heap(8)
    cl = device.create_command_list()
    cl.set_descriptor_heaps([heap])
    cl.close()
    cl.reset()
    assert cl.descriptor_heaps == ()


HEAP_CASES = [
    pytest.param(lambda h, a: DML_BINDING_TABLE_DESC(a, h.cpu_handle(6), h.gpu_handle(6), 4), "HEAP.RANGE_IN_HEAP", "DML_BINDING_TABLE_DESC.SizeInDescriptors", id="slots 6..10 of an 8-slot heap"),
    pytest.param(lambda h, a: DML_BINDING_TABLE_DESC(a, h.cpu_handle(0), h.gpu_handle(1), 2), "HEAP.HANDLES_AGREE", "DML_BINDING_TABLE_DESC.GPUDescriptorHandle", id="CPU slot 0, GPU slot 1"),
    pytest.param(lambda h, a: DML_BINDING_TABLE_DESC(a, h.gpu_handle(0), h.gpu_handle(0), 2), "HEAP.HANDLE_TYPE", "DML_BINDING_TABLE_DESC.CPUDescriptorHandle", id="a GPU handle as the CPU handle"),
    pytest.param(lambda h, a: DML_BINDING_TABLE_DESC(a, 64, 64, 2), "HEAP.HANDLE_TYPE", "DML_BINDING_TABLE_DESC.CPUDescriptorHandle", id="plain integers that are not 0"),
    pytest.param(lambda h, a: DML_BINDING_TABLE_DESC(a, h.cpu_handle(0), h.gpu_handle(0), 0), "DEVICE.BINDING_TABLE_SIZE", "DML_BINDING_TABLE_DESC.SizeInDescriptors",
                 id="fewer slots than RequiredDescriptorCount"),
]  # fmt: skip


@pytest.mark.parametrize(("make", "rule_id", "path"), HEAP_CASES)
def test_a_binding_table_desc_that_does_not_fit_its_heap_is_refused(device: dmlpy.Device, make: Any, rule_id: str, path: str) -> None:
    a = linear_op(device)
    with pytest.raises(DmlError) as error:
        device.create_binding_table(make(device.create_descriptor_heap(8), a))
    assert_rule(error.value, rule_id, path)


def test_a_heap_of_another_device_is_refused(device: dmlpy.Device) -> None:
    a = linear_op(device)
    foreign = dmlpy.create_device(backend="numpy").create_descriptor_heap(8)
    with pytest.raises(DmlError) as error:
        device.create_binding_table(heap_table(device, a, foreign, 0))
    assert_rule(error.value, "HEAP.WRONG_DEVICE")


def test_two_live_tables_overlapping_in_one_heap_are_warned_and_disjoint_ones_are_not(device: dmlpy.Device) -> None:
    a, b = linear_op(device), linear_op(device)
    heap = device.create_descriptor_heap(8)
    required = a.get_binding_properties().RequiredDescriptorCount
    first = device.create_binding_table(heap_table(device, a, heap, 0))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DmlWarning)
        device.create_binding_table(heap_table(device, b, heap, required))  # right after the first range
    with pytest.warns(DmlWarning, match="TABLE_OVERLAP"):
        overlapping = device.create_binding_table(heap_table(device, b, heap, required - 1))
    assert "HEAP.TABLE_OVERLAP" in rule_ids(overlapping.warnings)
    del first, overlapping
    gc.collect()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DmlWarning)
        device.create_binding_table(heap_table(device, b, heap, 0))  # the earlier tables are gone


def test_reset_moves_a_table_to_its_new_range(device: dmlpy.Device) -> None:
    a = linear_op(device)
    heap = device.create_descriptor_heap(16)
    first = device.create_binding_table(heap_table(device, a, heap, 0))
    first.reset(heap_table(device, a, heap, 8))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DmlWarning)
        device.create_binding_table(heap_table(device, a, heap, 0))  # slot 0 is free again


def test_set_descriptor_heaps_takes_at_most_one_heap() -> None:
    device = dmlpy.create_device(backend="numpy")
    with pytest.raises(DmlError) as error:
        device.create_command_list().set_descriptor_heaps([device.create_descriptor_heap(4), device.create_descriptor_heap(4)])
    assert_rule(error.value, "HEAP.ONE_PER_TYPE")


def test_a_heap_needs_at_least_one_descriptor() -> None:
    with pytest.raises(ValueError, match="num_descriptors"):
        dmlpy.create_device(backend="numpy").create_descriptor_heap(0)


# ---------------------------------------------------------------------------------------
# Command list states


def test_closing_a_closed_command_list_fails_with_e_fail() -> None:
    cl = dmlpy.create_device(backend="numpy").create_command_list()
    cl.close()
    with pytest.raises(DmlError) as error:
        cl.close()
    assert error.value.hresult == HRESULT.E_FAIL
    assert_rule(error.value, "LIST.CLOSE_CLOSED")


def test_resetting_an_open_command_list_fails_with_e_fail() -> None:
    cl = dmlpy.create_device(backend="numpy").create_command_list()
    with pytest.raises(DmlError) as error:
        cl.reset()
    assert error.value.hresult == HRESULT.E_FAIL
    assert_rule(error.value, "LIST.RESET_OPEN")


def test_a_barrier_on_a_closed_list_is_refused() -> None:
    cl = dmlpy.create_device(backend="numpy").create_command_list()
    cl.close()
    with pytest.raises(DmlError) as error:
        cl.resource_barrier([D3D12_RESOURCE_BARRIER.uav()])
    assert_rule(error.value, "LIST.BARRIER_ON_CLOSED")


def test_a_reset_list_records_again_and_forgets_what_it_had_recorded(device: dmlpy.Device) -> None:
    a, b, x, t, y = chain(device)
    recorder, cl = device.create_command_recorder(), device.create_command_list()
    recorder.record_dispatch(cl, a, table(device, a, x, t))
    cl.close()
    device.execute(cl)
    cl.reset()
    recorder.record_dispatch(cl, b, table(device, b, t, y))  # no hazard: a is not in this recording
    cl.close()
    device.execute(cl)
    np.testing.assert_array_equal(y.read(buffer_tensor("float32", SHAPE)).ravel(), [7, 11, 15, 19])


def test_resource_barrier_takes_only_uav_barriers() -> None:
    cl = dmlpy.create_device(backend="numpy").create_command_list()
    with pytest.raises(TypeError, match="D3D12_RESOURCE_BARRIER"):
        cl.resource_barrier([object()])
