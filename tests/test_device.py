"""The device and dispatch: every DISPATCH.* and DEVICE.* rule, removal, CheckFeatureSupport, run().

The operator is AVERAGE_POOLING {1,1,4,4} -> {1,1,2,2}, 2x2 window, stride 2. For the input
0..15 the outputs are (0+1+4+5)/4 = 2.5, (2+3+6+7)/4 = 4.5, (8+9+12+13)/4 = 10.5 and
(10+11+14+15)/4 = 12.5.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from conftest import assert_rule

import dmlpy
from dmlpy import D3D12_RESOURCE_BARRIER
from dmlpy import (
    DML_AVERAGE_POOLING_OPERATOR_DESC,
    DML_BINDING_DESC,
    DML_BINDING_TABLE_DESC,
    DML_EXECUTION_FLAGS,
    DML_FEATURE,
    DML_FEATURE_LEVEL,
    DML_FEATURE_QUERY_FEATURE_LEVELS,
    DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT,
    DML_TENSOR_DATA_TYPE,
    DML_TENSOR_FLAGS,
    HRESULT,
    array_binding,
    buffer_binding,
    buffer_tensor,
    nhwc_strides,
)

DT = DML_TENSOR_DATA_TYPE
FL = DML_FEATURE_LEVEL
E_INVALIDARG = 0x80070057
DXGI_ERROR_DEVICE_REMOVED = 0x887A0005
DXGI_ERROR_UNSUPPORTED = 0x887A0004
OP_NAME = "DML_OPERATOR_AVERAGE_POOLING"
X = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
EXPECTED = np.array([[[[2.5, 4.5], [10.5, 12.5]]]], dtype=np.float32)


def pool_desc(*, owned: bool = False) -> DML_AVERAGE_POOLING_OPERATOR_DESC:
    flags = DML_TENSOR_FLAGS.OWNED_BY_DML if owned else DML_TENSOR_FLAGS.NONE
    return DML_AVERAGE_POOLING_OPERATOR_DESC(
        buffer_tensor(DT.FLOAT32, [1, 1, 4, 4], flags=flags),
        buffer_tensor(DT.FLOAT32, [1, 1, 2, 2]),
        2,
        [2, 2],
        [2, 2],
        [0, 0],
        [0, 0],
        True,
    )


class Pipeline:
    """A compiled pooling operator, its buffers, a recorder and an open command list."""

    def __init__(self, device: dmlpy.Device, *, owned: bool = False, flags: int = 0) -> None:
        self.device = device
        self.owned = owned
        self.compiled = device.compile_operator(device.create_operator(pool_desc(owned=owned)), flags)
        self.x = device.create_buffer(64, "x")
        self.x.upload(X)
        self.y = device.create_buffer(16, "y")
        self.persistent = device.create_buffer(max(256, self.compiled.get_binding_properties().PersistentResourceSize))
        self.recorder = device.create_command_recorder()
        self.command_list = device.create_command_list()

    def record_initializer(self) -> None:
        initializer = self.device.create_operator_initializer([self.compiled])
        table = self.device.create_binding_table(initializer)
        if self.owned:
            table.bind_inputs([array_binding([buffer_binding(self.x)])])
            table.bind_outputs([buffer_binding(self.persistent)])
        self.recorder.record_dispatch(self.command_list, initializer, table)
        self.command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav()])  # the dispatch after the initializer reads what it wrote

    def table(self, *, inputs: bool = True, outputs: bool = True, persistent: bool = True) -> dmlpy.BindingTable:
        table = self.device.create_binding_table(self.compiled)
        if inputs:
            table.bind_inputs([DML_BINDING_DESC() if self.owned else buffer_binding(self.x)])
        if outputs:
            table.bind_outputs([buffer_binding(self.y)])
        if persistent and self.owned:
            table.bind_persistent_resource(buffer_binding(self.persistent))
        return table

    def record(self, table: dmlpy.BindingTable | None = None) -> None:
        self.recorder.record_dispatch(self.command_list, self.compiled, table or self.table())

    def execute(self) -> np.ndarray:
        self.command_list.close()
        self.device.execute(self.command_list)
        return self.y.read(buffer_tensor(DT.FLOAT32, [1, 1, 2, 2]))


def numpy_pipeline(**kwargs: Any) -> Pipeline:
    return Pipeline(dmlpy.create_device(backend="numpy"), **kwargs)


# ---------------------------------------------------------------------------------------
# The whole pipeline, on both backends


def test_the_pipeline_computes_the_hand_computed_average(device: dmlpy.Device) -> None:
    p = Pipeline(device)
    p.record_initializer()
    p.record()
    np.testing.assert_array_equal(p.execute(), EXPECTED)


def test_run_computes_the_hand_computed_average(device: dmlpy.Device) -> None:
    np.testing.assert_array_equal(dmlpy.run(pool_desc(), device=device, InputTensor=X), EXPECTED)


def test_run_with_an_owned_input_computes_the_same_average(device: dmlpy.Device) -> None:
    np.testing.assert_array_equal(dmlpy.run(pool_desc(owned=True), device=device, InputTensor=X), EXPECTED)


def test_kernels_read_and_write_through_nhwc_strides(device: dmlpy.Device) -> None:
    # {1,2,4,4} NHWC in and {1,2,2,2} NHWC out; the 2x2/2 average of each channel is a reshape-mean
    x = np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4)
    expected = x.reshape(1, 2, 2, 2, 2, 2).mean(axis=(3, 5))
    desc = DML_AVERAGE_POOLING_OPERATOR_DESC(
        buffer_tensor(DT.FLOAT32, [1, 2, 4, 4], nhwc_strides([1, 2, 4, 4])),
        buffer_tensor(DT.FLOAT32, [1, 2, 2, 2], nhwc_strides([1, 2, 2, 2])),
        2, [2, 2], [2, 2], [0, 0], [0, 0], True,
    )  # fmt: skip
    np.testing.assert_array_equal(dmlpy.run(desc, device=device, InputTensor=x), expected)


def test_kernels_read_a_broadcast_input(device: dmlpy.Device) -> None:
    # {1,3,4,4} with strides {0,1,0,0}: each channel is constant, so its average is that constant
    desc = DML_AVERAGE_POOLING_OPERATOR_DESC(
        buffer_tensor(DT.FLOAT32, [1, 3, 4, 4], [0, 1, 0, 0]),
        buffer_tensor(DT.FLOAT32, [1, 3, 2, 2]),
        2,
        [2, 2],
        [2, 2],
        [0, 0],
        [0, 0],
        True,
    )
    x = np.broadcast_to(np.array([10.0, 20.0, 30.0], dtype=np.float32).reshape(1, 3, 1, 1), (1, 3, 4, 4))
    out = dmlpy.run(desc, device=device, InputTensor=x)
    for c, value in enumerate((10.0, 20.0, 30.0)):
        assert (out[0, c] == value).all()


# ---------------------------------------------------------------------------------------
# DISPATCH.* rules


def record_without_inputs(p: Pipeline) -> None:
    p.record_initializer()
    p.record(p.table(inputs=False))


def record_without_outputs(p: Pipeline) -> None:
    p.record_initializer()
    p.record(p.table(outputs=False))


def record_without_persistent(p: Pipeline) -> None:
    assert p.owned
    p.record_initializer()
    p.record(p.table(persistent=False))


def record_with_another_operators_table(p: Pipeline) -> None:
    other = p.device.compile_operator(p.device.create_operator(pool_desc()))
    p.record_initializer()
    p.recorder.record_dispatch(p.command_list, other, p.table())


def record_into_a_closed_list(p: Pipeline) -> None:
    p.command_list.close()
    p.record()


def execute_before_initializing(p: Pipeline) -> None:
    p.record()
    p.execute()


def record_another_devices_operator(p: Pipeline) -> None:
    other = Pipeline(dmlpy.create_device(backend="numpy"))
    p.recorder.record_dispatch(p.command_list, other.compiled, other.table())


def record_with_another_devices_command_list(p: Pipeline) -> None:
    other_list = dmlpy.create_device(backend="numpy").create_command_list()
    p.recorder.record_dispatch(other_list, p.compiled, p.table())


class NeedsScratch(dmlpy.CompiledOperator):
    """A compiled operator that asks for scratch memory (a compiled operator's methods cannot be replaced)."""

    __slots__ = ()

    def get_binding_properties(self) -> dmlpy.DML_BINDING_PROPERTIES:
        return replace(super().get_binding_properties(), TemporaryResourceSize=256)


def record_without_a_needed_temporary(p: Pipeline) -> None:
    p.compiled.__class__ = NeedsScratch
    p.record_initializer()
    p.record()


DISPATCH_CASES = [
    pytest.param(
        False,
        record_without_inputs,
        "DISPATCH.INPUTS_UNBOUND",
        f"{OP_NAME}.BindInputs",
        id="recording before BindInputs removes the device",
    ),
    pytest.param(
        False,
        record_without_outputs,
        "DISPATCH.OUTPUTS_UNBOUND",
        f"{OP_NAME}.BindOutputs",
        id="recording before BindOutputs removes the device",
    ),
    pytest.param(
        False,
        record_without_a_needed_temporary,
        "DISPATCH.TEMPORARY_UNBOUND",
        f"{OP_NAME}.BindTemporaryResource",
        id="recording without a temporary resource the dispatchable needs removes the device",
    ),
    pytest.param(
        True,
        record_without_persistent,
        "DISPATCH.PERSISTENT_UNBOUND",
        f"{OP_NAME}.BindPersistentResource",
        id="recording an owned-input operator without its persistent resource removes the device",
    ),
    pytest.param(
        False,
        record_with_another_operators_table,
        "DISPATCH.TABLE_MISMATCH",
        f"{OP_NAME}.RecordDispatch",
        id="recording with a table made for another operator removes the device",
    ),
    pytest.param(
        False,
        record_into_a_closed_list,
        "DISPATCH.COMMAND_LIST_CLOSED",
        f"{OP_NAME}.RecordDispatch",
        id="recording into a closed command list removes the device",
    ),
    pytest.param(
        False,
        execute_before_initializing,
        "DISPATCH.NOT_INITIALIZED",
        f"{OP_NAME}.Execute",
        id="executing before any initializer ran removes the device",
    ),
    pytest.param(
        False,
        record_another_devices_operator,
        "DISPATCH.WRONG_DEVICE",
        f"{OP_NAME}.RecordDispatch",
        id="recording another device's operator removes the recorder's device",
    ),
    pytest.param(
        False,
        record_with_another_devices_command_list,
        "DISPATCH.WRONG_DEVICE",
        f"{OP_NAME}.RecordDispatch",
        id="recording into another device's command list removes the recorder's device",
    ),
]


@pytest.mark.parametrize(("owned", "misuse", "rule_id", "path"), DISPATCH_CASES)
def test_dispatch_rule_is_reported_and_removes_the_device(
    owned: bool, misuse: Callable[[Pipeline], None], rule_id: str, path: str
) -> None:
    p = numpy_pipeline(owned=owned)
    with pytest.raises(dmlpy.DmlError) as caught:
        misuse(p)
    assert_rule(caught.value, rule_id, path)
    assert caught.value.hresult == E_INVALIDARG
    assert p.device.get_device_removed_reason() == HRESULT.E_INVALIDARG


def test_an_initializer_with_an_owned_target_must_have_its_bindings_before_recording() -> None:
    p = numpy_pipeline(owned=True)
    initializer = p.device.create_operator_initializer([p.compiled])
    with pytest.raises(dmlpy.DmlError) as caught:
        p.recorder.record_dispatch(p.command_list, initializer, p.device.create_binding_table(initializer))
        p.command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav()])  # the dispatch after the initializer reads what it wrote
    assert_rule(caught.value, "DISPATCH.INPUTS_UNBOUND", "IDMLOperatorInitializer.BindInputs")
    assert_rule(caught.value, "DISPATCH.OUTPUTS_UNBOUND", "IDMLOperatorInitializer.BindOutputs")


def test_executing_an_open_command_list_is_refused() -> None:
    p = numpy_pipeline()
    p.record_initializer()
    p.record()
    with pytest.raises(dmlpy.DmlError) as caught:
        p.device.execute(p.command_list)
    assert_rule(caught.value, "DISPATCH.COMMAND_LIST_OPEN", "ExecuteCommandLists")
    assert caught.value.hresult == E_INVALIDARG


def test_a_bound_temporary_resource_satisfies_a_dispatchable_that_needs_one() -> None:
    p = numpy_pipeline()
    p.compiled.__class__ = NeedsScratch
    table = p.table()
    table.bind_temporary_resource(buffer_binding(p.device.create_buffer(256)))
    p.record_initializer()
    p.record(table)
    np.testing.assert_array_equal(p.execute(), EXPECTED)


def test_a_temporary_resource_smaller_than_needed_is_rejected() -> None:
    p = numpy_pipeline()
    p.compiled.__class__ = NeedsScratch
    with pytest.raises(dmlpy.DmlError) as caught:
        p.table().bind_temporary_resource(buffer_binding(p.device.create_buffer(128)))
    assert_rule(caught.value, "BINDING.RESOURCE_TOO_SMALL", f"{OP_NAME}.BindTemporaryResource.SizeInBytes")


def test_unbinding_inputs_with_an_empty_list_leaves_them_unbound() -> None:
    # BindInputs(0, NULL) clears the inputs; recording then finds none
    p = numpy_pipeline()
    table = p.table()
    table.bind_inputs([])
    p.record_initializer()
    with pytest.raises(dmlpy.DmlError) as caught:
        p.record(table)
    assert_rule(caught.value, "DISPATCH.INPUTS_UNBOUND")


def test_a_reset_table_has_no_bindings() -> None:
    p = numpy_pipeline()
    table = p.table()
    table.reset()
    p.record_initializer()
    with pytest.raises(dmlpy.DmlError) as caught:
        p.record(table)
    assert {"DISPATCH.INPUTS_UNBOUND", "DISPATCH.OUTPUTS_UNBOUND"} <= set(caught.value.rule_ids)


def test_an_initializer_can_run_in_the_same_command_list_before_its_operator(device: dmlpy.Device) -> None:
    p = Pipeline(device)
    p.record_initializer()
    p.record()
    np.testing.assert_array_equal(p.execute(), EXPECTED)
    assert p.compiled.initialized


def test_an_empty_initializer_dispatch_does_nothing() -> None:
    p = numpy_pipeline()
    initializer = p.device.create_operator_initializer([])
    p.recorder.record_dispatch(p.command_list, initializer, p.device.create_binding_table(initializer))
    p.command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav()])  # the dispatch after the initializer reads what it wrote
    p.execute()
    assert not p.compiled.initialized


def test_an_initializer_reset_to_an_operator_initializes_it() -> None:
    p = numpy_pipeline()
    initializer = p.device.create_operator_initializer([])
    initializer.reset([p.compiled])
    p.recorder.record_dispatch(p.command_list, initializer, p.device.create_binding_table(initializer))
    p.command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav()])  # the dispatch after the initializer reads what it wrote
    p.record()
    np.testing.assert_array_equal(p.execute(), EXPECTED)


# ---------------------------------------------------------------------------------------
# DESCRIPTORS_VOLATILE moves the binding checks from RecordDispatch to execute


def test_descriptors_volatile_allows_binding_after_recording(device: dmlpy.Device) -> None:
    p = Pipeline(device, flags=DML_EXECUTION_FLAGS.DESCRIPTORS_VOLATILE)
    p.record_initializer()
    table = device.create_binding_table(p.compiled)
    p.record(table)  # nothing bound yet: fine with the flag
    table.bind_inputs([buffer_binding(p.x)])
    table.bind_outputs([buffer_binding(p.y)])
    np.testing.assert_array_equal(p.execute(), EXPECTED)


def test_descriptors_volatile_uses_the_bindings_in_place_at_execute(device: dmlpy.Device) -> None:
    p = Pipeline(device, flags=DML_EXECUTION_FLAGS.DESCRIPTORS_VOLATILE)
    p.record_initializer()
    table = p.table()
    p.record(table)
    other = device.create_buffer(64)
    other.upload(X * 2)
    table.bind_inputs([buffer_binding(other)])  # rebinding after recording takes effect
    np.testing.assert_array_equal(p.execute(), EXPECTED * 2)


def test_descriptors_volatile_reports_missing_bindings_at_execute() -> None:
    p = numpy_pipeline(flags=DML_EXECUTION_FLAGS.DESCRIPTORS_VOLATILE)
    p.record_initializer()
    p.record(p.device.create_binding_table(p.compiled))
    assert p.device.get_device_removed_reason() == HRESULT.S_OK
    with pytest.raises(dmlpy.DmlError) as caught:
        p.execute()
    assert_rule(caught.value, "DISPATCH.INPUTS_UNBOUND", f"{OP_NAME}.BindInputs")
    assert_rule(caught.value, "DISPATCH.OUTPUTS_UNBOUND", f"{OP_NAME}.BindOutputs")
    assert p.device.get_device_removed_reason() == HRESULT.E_INVALIDARG


def test_descriptors_volatile_checks_input_output_overlap_at_execute() -> None:
    p = numpy_pipeline(flags=DML_EXECUTION_FLAGS.DESCRIPTORS_VOLATILE)
    p.record_initializer()
    table = p.table()
    p.record(table)
    shared = p.device.create_buffer(128)
    table.bind_inputs([buffer_binding(shared, 0, 64)])
    table.bind_outputs([buffer_binding(shared, 48, 16)])  # inside the input's [0, 64)
    with pytest.raises(dmlpy.DmlError) as caught:
        p.execute()
    assert_rule(caught.value, "BINDING.INPUT_OUTPUT_OVERLAP", f"{OP_NAME}.BindOutputs[0] (OutputTensor)")


def test_descriptors_volatile_reports_the_same_resource_warning_on_the_table_at_execute() -> None:
    # The flag moves the checks to execute; their warnings must still reach table.warnings,
    # as they do when the checks run at RecordDispatch.
    p = numpy_pipeline(flags=DML_EXECUTION_FLAGS.DESCRIPTORS_VOLATILE)
    p.record_initializer()
    table = p.device.create_binding_table(p.compiled)
    p.record(table)
    shared = p.device.create_buffer(128)
    shared.upload(X)
    table.bind_inputs([buffer_binding(shared, 0, 64)])
    table.bind_outputs([buffer_binding(shared, 64, 16)])
    p.execute()
    np.testing.assert_array_equal(shared.read(buffer_tensor(DT.FLOAT32, [1, 1, 2, 2]), offset=64), EXPECTED)
    assert_rule(table.warnings, "BINDING.INPUT_OUTPUT_SAME_RESOURCE", f"{OP_NAME}.BindOutputs[0] (OutputTensor)")


def test_without_descriptors_volatile_missing_bindings_fail_at_record() -> None:
    p = numpy_pipeline()
    p.record_initializer()
    with pytest.raises(dmlpy.DmlError) as caught:
        p.record(p.device.create_binding_table(p.compiled))
    assert_rule(caught.value, "DISPATCH.INPUTS_UNBOUND")


def test_the_compile_flags_are_recorded() -> None:
    flags = DML_EXECUTION_FLAGS.DESCRIPTORS_VOLATILE | DML_EXECUTION_FLAGS.ALLOW_HALF_PRECISION_COMPUTATION
    assert numpy_pipeline(flags=flags).compiled.execution_flags == flags


# ---------------------------------------------------------------------------------------
# Device removal


def remove_by_bind_misuse(device: dmlpy.Device) -> Pipeline:
    p = Pipeline(device)
    with pytest.raises(dmlpy.DmlError) as caught:
        p.table(inputs=False).bind_inputs([DML_BINDING_DESC()])
    assert caught.value.hresult == E_INVALIDARG
    return p


LATER_CALLS = [
    pytest.param(lambda d, p: d.create_operator(pool_desc()), id="CreateOperator"),
    pytest.param(lambda d, p: d.compile_operator(p.compiled.operator), id="CompileOperator"),
    pytest.param(lambda d, p: d.create_operator_initializer([p.compiled]), id="CreateOperatorInitializer"),
    pytest.param(lambda d, p: d.create_binding_table(p.compiled), id="CreateBindingTable"),
    pytest.param(lambda d, p: d.create_command_recorder(), id="CreateCommandRecorder"),
    pytest.param(lambda d, p: d.create_command_list(), id="creating a command list"),
    pytest.param(lambda d, p: d.create_buffer(64), id="creating a buffer"),
    pytest.param(
        lambda d, p: d.check_feature_support(
            DML_FEATURE.TENSOR_DATA_TYPE_SUPPORT, DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT(DT.FLOAT32)
        ),
        id="CheckFeatureSupport",
    ),
    pytest.param(lambda d, p: d.create_binding_table(p.compiled).reset(), id="a binding table's Reset"),
    pytest.param(
        lambda d, p: p.recorder.record_dispatch(p.command_list, p.compiled, p.table()),
        id="RecordDispatch on an existing recorder",
    ),
    pytest.param(lambda d, p: d.execute(p.command_list), id="executing a command list"),
]


@pytest.mark.parametrize("later_call", LATER_CALLS)
def test_after_removal_every_call_raises_device_removed(later_call: Callable[[dmlpy.Device, Pipeline], Any]) -> None:
    device = dmlpy.create_device(backend="numpy")
    p = Pipeline(device)
    table = p.table()
    with pytest.raises(dmlpy.DmlError):
        table.bind_outputs([DML_BINDING_DESC()])  # a void Bind* misuse removes the device
    with pytest.raises(dmlpy.DmlError) as caught:
        later_call(device, p)
    assert caught.value.hresult == DXGI_ERROR_DEVICE_REMOVED
    assert caught.value.hresult is HRESULT.DXGI_ERROR_DEVICE_REMOVED
    assert_rule(caught.value, "DEVICE.REMOVED", "IDMLDevice")


def test_a_bound_table_of_a_removed_device_refuses_further_bindings() -> None:
    device = dmlpy.create_device(backend="numpy")
    p = Pipeline(device)
    table = p.table()
    with pytest.raises(dmlpy.DmlError):
        table.bind_inputs([buffer_binding(p.x), buffer_binding(p.x)])
    for call in (lambda: table.bind_inputs([buffer_binding(p.x)]), lambda: table.bind_outputs([buffer_binding(p.y)]),
                 lambda: table.bind_temporary_resource(None), lambda: table.bind_persistent_resource(None)):  # fmt: skip
        with pytest.raises(dmlpy.DmlError) as caught:
            call()
        assert caught.value.hresult == DXGI_ERROR_DEVICE_REMOVED


def test_get_device_removed_reason_is_s_ok_while_the_device_is_alive() -> None:
    assert dmlpy.create_device(backend="numpy").get_device_removed_reason() == HRESULT.S_OK == 0


def test_get_device_removed_reason_returns_e_invalidarg_after_a_bind_misuse() -> None:
    device = dmlpy.create_device(backend="numpy")
    remove_by_bind_misuse(device)
    assert device.get_device_removed_reason() == E_INVALIDARG


def test_the_removed_error_names_the_original_cause() -> None:
    device = dmlpy.create_device(backend="numpy")
    remove_by_bind_misuse(device)
    with pytest.raises(dmlpy.DmlError) as caught:
        device.create_buffer(64)
    assert "BINDING.TENSOR_UNBOUND" in caught.value.findings[0].message
    assert [f.rule for f in device.removal_findings] == ["BINDING.TENSOR_UNBOUND"]


def test_an_invalid_desc_does_not_remove_the_device() -> None:
    # CreateOperator returns an HRESULT; only void-method misuse removes the device
    device = dmlpy.create_device(backend="numpy")
    with pytest.raises(dmlpy.DmlError):
        device.create_operator(DML_AVERAGE_POOLING_OPERATOR_DESC(None, None, 2, [1, 1], [1, 1], [0, 0], [0, 0], True))
    assert device.get_device_removed_reason() == HRESULT.S_OK
    assert device.create_operator(pool_desc()).name == OP_NAME


def test_another_device_is_unaffected_by_a_removal() -> None:
    removed = dmlpy.create_device(backend="numpy")
    remove_by_bind_misuse(removed)
    healthy = dmlpy.create_device(backend="numpy")
    np.testing.assert_array_equal(dmlpy.run(pool_desc(), device=healthy, InputTensor=X), EXPECTED)


# ---------------------------------------------------------------------------------------
# DEVICE.* rules


def test_compiling_another_devices_operator_is_refused() -> None:
    a, b = dmlpy.create_device(backend="numpy"), dmlpy.create_device(backend="numpy")
    op = a.create_operator(pool_desc())
    with pytest.raises(dmlpy.DmlError) as caught:
        b.compile_operator(op)
    assert_rule(caught.value, "DEVICE.FOREIGN_OBJECT", "CompileOperator")
    assert caught.value.hresult == E_INVALIDARG


def test_initializing_another_devices_compiled_operator_is_refused() -> None:
    a, b = dmlpy.create_device(backend="numpy"), dmlpy.create_device(backend="numpy")
    compiled = a.compile_operator(a.create_operator(pool_desc()))
    with pytest.raises(dmlpy.DmlError) as caught:
        b.create_operator_initializer([compiled])
    assert_rule(caught.value, "DEVICE.FOREIGN_OBJECT", "CreateOperatorInitializer")


@pytest.mark.parametrize(
    "make_dispatchable",
    [
        pytest.param(lambda d: None, id="a NULL dispatchable"),
        pytest.param(lambda d: d.create_operator(pool_desc()), id="an uncompiled operator"),
        pytest.param(
            lambda d: (o := dmlpy.create_device(backend="numpy")).compile_operator(o.create_operator(pool_desc())),
            id="another device's compiled operator",
        ),
    ],
)
def test_create_binding_table_needs_a_dispatchable_of_this_device(
    make_dispatchable: Callable[[dmlpy.Device], Any],
) -> None:
    device = dmlpy.create_device(backend="numpy")
    with pytest.raises(dmlpy.DmlError) as caught:
        device.create_binding_table(DML_BINDING_TABLE_DESC(make_dispatchable(device), 0, 0, 16))
    assert_rule(caught.value, "DEVICE.BINDING_TABLE_DISPATCHABLE", "DML_BINDING_TABLE_DESC.Dispatchable")
    assert caught.value.hresult == E_INVALIDARG


def test_a_binding_table_smaller_than_the_required_descriptor_count_is_refused() -> None:
    p = numpy_pipeline()
    required = p.compiled.get_binding_properties().RequiredDescriptorCount
    with pytest.raises(dmlpy.DmlError) as caught:
        p.device.create_binding_table(DML_BINDING_TABLE_DESC(p.compiled, 0, 0, required - 1))
    finding = assert_rule(caught.value, "DEVICE.BINDING_TABLE_SIZE", "DML_BINDING_TABLE_DESC.SizeInDescriptors")
    assert f"is {required - 1}, expected at least RequiredDescriptorCount = {required}" in finding.message


def test_a_binding_table_of_exactly_the_required_descriptor_count_is_accepted() -> None:
    p = numpy_pipeline()
    required = p.compiled.get_binding_properties().RequiredDescriptorCount
    table = p.device.create_binding_table(DML_BINDING_TABLE_DESC(p.compiled, 0, 0, required))
    assert table.desc.SizeInDescriptors == required


def test_a_bare_dispatchable_gets_a_table_sized_to_its_required_descriptor_count() -> None:
    p = numpy_pipeline()
    table = p.device.create_binding_table(p.compiled)
    assert table.desc.Dispatchable is p.compiled
    assert table.desc.SizeInDescriptors == p.compiled.get_binding_properties().RequiredDescriptorCount


def test_reset_to_a_desc_smaller_than_the_required_descriptor_count_is_refused() -> None:
    # IDMLBindingTable::Reset takes the same DML_BINDING_TABLE_DESC as CreateBindingTable and
    # returns an HRESULT: the same SizeInDescriptors rule applies to it.
    p = numpy_pipeline()
    table = p.device.create_binding_table(p.compiled)
    with pytest.raises(dmlpy.DmlError) as caught:
        table.reset(DML_BINDING_TABLE_DESC(p.compiled, 0, 0, 0))
    assert_rule(caught.value, "DEVICE.BINDING_TABLE_SIZE", "DML_BINDING_TABLE_DESC.SizeInDescriptors")
    assert caught.value.hresult == E_INVALIDARG


def test_reset_to_another_devices_dispatchable_is_refused() -> None:
    p = numpy_pipeline()
    other = numpy_pipeline()
    table = p.device.create_binding_table(p.compiled)
    with pytest.raises(dmlpy.DmlError) as caught:
        table.reset(DML_BINDING_TABLE_DESC(other.compiled, 0, 0, 16))
    assert_rule(caught.value, "DEVICE.BINDING_TABLE_DISPATCHABLE", "DML_BINDING_TABLE_DESC.Dispatchable")


def test_reset_retargets_the_table_to_another_dispatchable() -> None:
    p = numpy_pipeline()
    initializer = p.device.create_operator_initializer([p.compiled])
    table = p.device.create_binding_table(initializer)
    p.recorder.record_dispatch(p.command_list, initializer, table)
    p.command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav()])  # the dispatch after the initializer reads what it wrote
    table.reset(DML_BINDING_TABLE_DESC(p.compiled, 0, 0, p.compiled.get_binding_properties().RequiredDescriptorCount))
    table.bind_inputs([buffer_binding(p.x)])
    table.bind_outputs([buffer_binding(p.y)])
    p.record(table)
    np.testing.assert_array_equal(p.execute(), EXPECTED)


def test_create_binding_table_with_no_desc_gives_an_empty_table() -> None:
    table = dmlpy.create_device(backend="numpy").create_binding_table(None)
    assert table.desc.Dispatchable is None


# ---------------------------------------------------------------------------------------
# Binding properties (DirectML's binding documentation: implementation-defined values, fixed invariants)


@pytest.mark.parametrize("owned", [False, True], ids=["targets without owned inputs", "targets with an owned input"])
def test_an_initializer_never_reports_a_persistent_resource(owned: bool) -> None:
    p = numpy_pipeline(owned=owned)
    props = p.device.create_operator_initializer([p.compiled]).get_binding_properties()
    assert props.PersistentResourceSize == 0


def test_an_empty_initializer_needs_no_resources() -> None:
    props = dmlpy.create_device(backend="numpy").create_operator_initializer().get_binding_properties()
    assert props.PersistentResourceSize == 0
    assert props.TemporaryResourceSize == 0


def test_a_single_operator_needs_no_temporary_resource() -> None:
    assert numpy_pipeline().compiled.get_binding_properties().TemporaryResourceSize == 0


def test_the_descriptor_count_covers_every_bound_tensor() -> None:
    # one input and one output are bound at execute: at least 2 descriptors
    assert numpy_pipeline().compiled.get_binding_properties().RequiredDescriptorCount >= 2


def test_an_initializer_with_an_owned_input_needs_descriptors_for_it() -> None:
    # the owned input and the persistent resource it fills are both bound at initialize
    p = numpy_pipeline(owned=True)
    assert p.device.create_operator_initializer([p.compiled]).get_binding_properties().RequiredDescriptorCount >= 2


def test_persistent_size_is_the_same_for_two_compilations_of_one_desc() -> None:
    device = dmlpy.create_device(backend="numpy")
    a = device.compile_operator(device.create_operator(pool_desc(owned=True)))
    b = device.compile_operator(device.create_operator(pool_desc(owned=True)))
    assert a.get_binding_properties() == b.get_binding_properties()


# ---------------------------------------------------------------------------------------
# CheckFeatureSupport


@pytest.mark.parametrize(
    ("level", "data_type", "supported"),
    [
        pytest.param(FL.LEVEL_1_0, DT.FLOAT32, True, id="FLOAT32 is supported at FL 1.0"),
        pytest.param(FL.LEVEL_1_0, DT.FLOAT16, True, id="FLOAT16 is supported at FL 1.0"),
        pytest.param(FL.LEVEL_2_1, DT.INT8, True, id="INT8 is supported at FL 2.1"),
        pytest.param(FL.LEVEL_2_1, DT.FLOAT64, False, id="FLOAT64 is unsupported at FL 2.1"),
        pytest.param(FL.LEVEL_3_0, DT.FLOAT64, True, id="FLOAT64 is supported from FL 3.0"),
        pytest.param(FL.LEVEL_2_1, DT.INT64, False, id="INT64 is unsupported at FL 2.1"),
        pytest.param(FL.LEVEL_3_0, DT.UINT64, True, id="UINT64 is supported from FL 3.0"),
        pytest.param(FL.LEVEL_6_2, DT.INT4, False, id="INT4 is unsupported at FL 6.2"),
        pytest.param(FL.LEVEL_6_3, DT.UINT4, True, id="UINT4 is supported from FL 6.3"),
        pytest.param(FL.LEVEL_6_4, DT.UNKNOWN, False, id="UNKNOWN is never supported"),
        pytest.param(FL.LEVEL_6_4, 99, False, id="an undefined data type value is unsupported"),
    ],
)
def test_tensor_data_type_support_follows_the_feature_level(level: FL, data_type: Any, supported: bool) -> None:
    device = dmlpy.create_device(level, backend="numpy")
    answer = device.check_feature_support(
        DML_FEATURE.TENSOR_DATA_TYPE_SUPPORT, DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT(data_type)
    )
    assert answer.IsSupported is supported


@pytest.mark.parametrize(
    ("level", "requested", "expected"),
    [
        pytest.param(
            FL.LEVEL_6_4,
            [FL.LEVEL_1_0, FL.LEVEL_5_0, FL.LEVEL_6_4],
            FL.LEVEL_6_4,
            id="a 6.4 device asked for 1.0, 5.0, 6.4 answers 6.4",
        ),
        pytest.param(
            FL.LEVEL_5_0,
            [FL.LEVEL_1_0, FL.LEVEL_4_1, FL.LEVEL_6_0],
            FL.LEVEL_4_1,
            id="a 5.0 device asked for 1.0, 4.1, 6.0 answers 4.1",
        ),
        pytest.param(
            FL.LEVEL_6_0,
            [FL.LEVEL_6_2, FL.LEVEL_2_0, FL.LEVEL_5_1],
            FL.LEVEL_5_1,
            id="the list need not be sorted: a 6.0 device asked for 6.2, 2.0, 5.1 answers 5.1",
        ),
        pytest.param(FL.LEVEL_2_0, [FL.LEVEL_2_0], FL.LEVEL_2_0, id="a 2.0 device asked for exactly 2.0 answers 2.0"),
        pytest.param(
            FL.LEVEL_3_1,
            [FL.LEVEL_1_0],
            FL.LEVEL_1_0,
            id="a 3.1 device asked only for 1.0 answers 1.0, not its own level",
        ),
    ],
)
def test_feature_levels_query_returns_the_highest_requested_level_the_device_supports(
    level: FL, requested: list[FL], expected: FL
) -> None:
    device = dmlpy.create_device(level, backend="numpy")
    answer = device.check_feature_support(
        DML_FEATURE.FEATURE_LEVELS, DML_FEATURE_QUERY_FEATURE_LEVELS(len(requested), requested)
    )
    assert answer.MaxSupportedFeatureLevel == expected


def test_feature_levels_query_is_unsupported_at_fl_1_0() -> None:
    device = dmlpy.create_device(FL.LEVEL_1_0, backend="numpy")
    with pytest.raises(dmlpy.DmlError) as caught:
        device.check_feature_support(DML_FEATURE.FEATURE_LEVELS, DML_FEATURE_QUERY_FEATURE_LEVELS(1, [FL.LEVEL_1_0]))
    assert caught.value.hresult == DXGI_ERROR_UNSUPPORTED
    assert_rule(caught.value, "DEVICE.FEATURE_UNSUPPORTED", "CheckFeatureSupport.feature")


def test_an_unknown_feature_is_unsupported() -> None:
    with pytest.raises(dmlpy.DmlError) as caught:
        dmlpy.create_device(backend="numpy").check_feature_support(7, None)
    assert caught.value.hresult == DXGI_ERROR_UNSUPPORTED
    assert_rule(caught.value, "DEVICE.FEATURE_UNSUPPORTED", "CheckFeatureSupport.feature")


def test_a_feature_levels_query_above_the_device_finds_no_level() -> None:
    device = dmlpy.create_device(FL.LEVEL_4_0, backend="numpy")
    with pytest.raises(dmlpy.DmlError) as caught:
        device.check_feature_support(
            DML_FEATURE.FEATURE_LEVELS, DML_FEATURE_QUERY_FEATURE_LEVELS(2, [FL.LEVEL_5_0, FL.LEVEL_6_0])
        )
    assert_rule(caught.value, "DEVICE.FEATURE_UNSUPPORTED", "CheckFeatureSupport.queryData.RequestedFeatureLevels")


@pytest.mark.parametrize(
    ("feature", "query"),
    [
        pytest.param(DML_FEATURE.TENSOR_DATA_TYPE_SUPPORT, None, id="a NULL data-type query"),
        pytest.param(
            DML_FEATURE.TENSOR_DATA_TYPE_SUPPORT,
            DML_FEATURE_QUERY_FEATURE_LEVELS(1, [FL.LEVEL_1_0]),
            id="a feature-levels query for the data-type feature",
        ),
        pytest.param(
            DML_FEATURE.FEATURE_LEVELS,
            DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT(DT.FLOAT32),
            id="a data-type query for the feature-levels feature",
        ),
        pytest.param(
            DML_FEATURE.FEATURE_LEVELS,
            DML_FEATURE_QUERY_FEATURE_LEVELS(2, [FL.LEVEL_1_0]),
            id="a count of 2 for a list of 1",
        ),
        pytest.param(DML_FEATURE.FEATURE_LEVELS, DML_FEATURE_QUERY_FEATURE_LEVELS(0, []), id="an empty list of levels"),
    ],
)
def test_a_malformed_feature_query_is_e_invalidarg(feature: DML_FEATURE, query: Any) -> None:
    with pytest.raises(dmlpy.DmlError) as caught:
        dmlpy.create_device(backend="numpy").check_feature_support(feature, query)
    assert caught.value.hresult == E_INVALIDARG
    assert_rule(caught.value, "DEVICE.FEATURE_QUERY", "CheckFeatureSupport.queryData")


def test_create_device_refuses_a_value_that_is_no_feature_level() -> None:
    with pytest.raises(ValueError):
        dmlpy.create_device(0x4200, backend="numpy")


def test_create_device_refuses_an_unknown_backend() -> None:
    with pytest.raises(ValueError):
        dmlpy.create_device(backend="cuda")


def test_create_device_defaults_to_fl_6_4() -> None:
    device = dmlpy.create_device(backend="numpy")
    assert device.feature_level == FL.LEVEL_6_4
    assert device.backend_name == "numpy"
    assert not device.strict


# ---------------------------------------------------------------------------------------
# dmlpy.run errors


def test_run_rejects_an_unknown_input_name_with_type_error() -> None:
    with pytest.raises(TypeError, match="BiasTensor"):
        dmlpy.run(pool_desc(), backend="numpy", InputTensor=X, BiasTensor=X)


def test_run_rejects_a_missing_input_with_type_error() -> None:
    with pytest.raises(TypeError, match="InputTensor"):
        dmlpy.run(pool_desc(), backend="numpy")


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(X.astype(np.complex64), id="complex data cannot go to a FLOAT32 tensor"),
        pytest.param(np.array([["a"] * 4] * 4).reshape(1, 1, 4, 4), id="string data cannot go to a FLOAT32 tensor"),
    ],
)
def test_run_rejects_a_lossy_cast_with_type_error(data: np.ndarray) -> None:
    with pytest.raises(TypeError):
        dmlpy.run(pool_desc(), backend="numpy", InputTensor=data)


@pytest.mark.parametrize(
    "shape",
    [
        pytest.param((1, 1, 3, 3), id="a 3x3 image for a 4x4 tensor"),
        pytest.param((1, 2, 4, 4), id="two channels for a one-channel tensor"),
        pytest.param((16,), id="a flat array of the right element count"),
    ],
)
def test_run_rejects_a_wrong_shape_with_value_error(shape: tuple[int, ...]) -> None:
    with pytest.raises(ValueError):
        dmlpy.run(pool_desc(), backend="numpy", InputTensor=np.zeros(shape, dtype=np.float32))


def test_run_accepts_integer_data_for_a_float_tensor() -> None:
    np.testing.assert_array_equal(dmlpy.run(pool_desc(), backend="numpy", InputTensor=X.astype(np.int32)), EXPECTED)


def test_run_raises_dml_error_for_an_invalid_desc() -> None:
    desc = pool_desc()
    desc.WindowSize = [4, 4]  # (4 - 4) / 2 + 1 = 1 exactly (no ceil shape), but the output says 2
    with pytest.raises(dmlpy.DmlError) as caught:
        dmlpy.run(desc, backend="numpy", InputTensor=X)
    assert_rule(caught.value, "POOLING.OUTPUT_SIZE")


def test_run_honours_the_feature_level() -> None:
    desc = dmlpy.DML_AVERAGE_POOLING1_OPERATOR_DESC(
        buffer_tensor(DT.FLOAT32, [1, 1, 4, 4]),
        buffer_tensor(DT.FLOAT32, [1, 1, 2, 2]),
        2,
        [2, 2],
        [2, 2],
        [0, 0],
        [0, 0],
        [1, 1],
        True,
    )
    np.testing.assert_array_equal(dmlpy.run(desc, backend="numpy", InputTensor=X), EXPECTED)
    with pytest.raises(dmlpy.DmlError) as caught:
        dmlpy.run(desc, backend="numpy", feature_level=FL.LEVEL_6_1, InputTensor=X)
    assert_rule(caught.value, "OPERATOR.FEATURE_LEVEL")
