"""Buffers and binding tables: every BINDING.* rule through the object model, OWNED_BY_DML, overlaps.

The operator is AVERAGE_POOLING {1,1,4,4} -> {1,1,2,2}, 2x2 window, stride 2: the input is
16 FLOAT32 = 64 bytes, the output 4 FLOAT32 = 16 bytes. For the input 0..15 the outputs are
(0+1+4+5)/4 = 2.5, (2+3+6+7)/4 = 4.5, (8+9+12+13)/4 = 10.5, (10+11+14+15)/4 = 12.5.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from conftest import assert_rule, rule_ids

import dmlpy
from dmlpy import D3D12_RESOURCE_BARRIER
from dmlpy import (
    DML_AVERAGE_POOLING_OPERATOR_DESC,
    DML_BINDING_DESC,
    DML_BINDING_PROPERTIES,
    DML_BINDING_TABLE_DESC,
    DML_BINDING_TYPE,
    DML_BUFFER_ARRAY_BINDING,
    DML_BUFFER_BINDING,
    DML_TENSOR_DATA_TYPE,
    DML_TENSOR_FLAGS,
    HRESULT,
    Buffer,
    array_binding,
    buffer_binding,
    buffer_tensor,
    nhwc_strides,
)
from dmlpy.binding import BindingTable, Slot

DT = DML_TENSOR_DATA_TYPE
E_INVALIDARG = 0x80070057
OP_NAME = "DML_OPERATOR_AVERAGE_POOLING"
INIT = "IDMLOperatorInitializer"
X = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
EXPECTED = np.array([[[[2.5, 4.5], [10.5, 12.5]]]], dtype=np.float32)


def pool_desc(*, owned: bool = False, x_alignment: int = 0) -> DML_AVERAGE_POOLING_OPERATOR_DESC:
    flags = DML_TENSOR_FLAGS.OWNED_BY_DML if owned else DML_TENSOR_FLAGS.NONE
    return DML_AVERAGE_POOLING_OPERATOR_DESC(
        buffer_tensor(DT.FLOAT32, [1, 1, 4, 4], flags=flags, alignment=x_alignment),
        buffer_tensor(DT.FLOAT32, [1, 1, 2, 2]),
        2, [2, 2], [2, 2], [0, 0], [0, 0], True,
    )  # fmt: skip


def bind(buffer: Buffer, offset: int = 0, size: int | None = None) -> DML_BINDING_DESC:
    return buffer_binding(buffer, offset, size)


@dataclass
class Pipeline:
    """One compiled pooling operator with its buffers, recorder and command list."""

    device: dmlpy.Device
    owned: bool = False
    x_alignment: int = 0
    flags: int = 0
    compiled: Any = None
    x: Buffer = field(init=False)
    y: Buffer = field(init=False)

    def __post_init__(self) -> None:
        op = self.device.create_operator(pool_desc(owned=self.owned, x_alignment=self.x_alignment))
        self.compiled = self.device.compile_operator(op, self.flags)
        self.x = self.device.create_buffer(64, "x")
        self.x.upload(X)
        self.y = self.device.create_buffer(16, "y")
        self.persistent = self.device.create_buffer(max(256, self.props.PersistentResourceSize), "persistent")
        self.recorder = self.device.create_command_recorder()
        self.command_list = self.device.create_command_list()

    @property
    def props(self) -> DML_BINDING_PROPERTIES:
        return self.compiled.get_binding_properties()

    def initializer_table(self) -> tuple[Any, BindingTable]:
        initializer = self.device.create_operator_initializer([self.compiled])
        return initializer, self.device.create_binding_table(initializer)

    def record_initializer(self) -> None:
        initializer, table = self.initializer_table()
        if self.owned:
            table.bind_inputs([array_binding([bind(self.x)])])
            table.bind_outputs([bind(self.persistent)])
        self.recorder.record_dispatch(self.command_list, initializer, table)
        self.command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav()])  # the dispatch after the initializer reads what it wrote

    def execute_table(self) -> BindingTable:
        return self.device.create_binding_table(self.compiled)

    def bound_execute_table(self) -> BindingTable:
        table = self.execute_table()
        table.bind_inputs([DML_BINDING_DESC() if self.owned else bind(self.x)])
        table.bind_outputs([bind(self.y)])
        if self.owned:
            table.bind_persistent_resource(bind(self.persistent))
        return table

    def run(self, table: BindingTable | None = None) -> np.ndarray:
        self.record_initializer()
        self.recorder.record_dispatch(self.command_list, self.compiled, table or self.bound_execute_table())
        self.command_list.close()
        self.device.execute(self.command_list)
        return self.y.read(self.compiled.operator.desc.OutputTensor)


def numpy_pipeline(**kwargs: Any) -> Pipeline:
    return Pipeline(dmlpy.create_device(backend="numpy"), **kwargs)


# ---------------------------------------------------------------------------------------
# Buffer: upload and read honour sizes and strides


def test_a_buffer_base_is_64_byte_aligned_and_zeroed() -> None:
    buffer = Buffer(100)
    assert buffer.data.ctypes.data % 64 == 0
    assert buffer.size == 100
    assert not buffer.data.any()


def test_buffer_read_of_a_packed_tensor_returns_the_uploaded_array() -> None:
    buffer = Buffer(64)
    buffer.upload(X)
    np.testing.assert_array_equal(buffer.read(buffer_tensor(DT.FLOAT32, [1, 1, 4, 4])), X)


def test_buffer_read_honours_nhwc_strides() -> None:
    # sizes {1,2,2,3} (N,C,H,W) laid out NHWC: strides {12,1,6,2}; element (0,c,h,w) sits at h*6 + w*2 + c
    tensor = buffer_tensor(DT.FLOAT32, [1, 2, 2, 3], nhwc_strides([1, 2, 2, 3]))
    assert tuple(tensor.buffer.Strides) == (12, 1, 6, 2)
    buffer = Buffer(48)
    buffer.upload(np.arange(12, dtype=np.float32))
    logical = buffer.read(tensor)
    assert logical.shape == (1, 2, 2, 3)
    for c in range(2):
        for h in range(2):
            for w in range(3):
                assert logical[0, c, h, w] == h * 6 + w * 2 + c


def test_buffer_read_honours_broadcast_strides() -> None:
    # sizes {1,3,4,4}, strides {0,1,0,0}: three floats in memory, every H and W repeats channel c
    tensor = buffer_tensor(DT.FLOAT32, [1, 3, 4, 4], [0, 1, 0, 0])
    buffer = Buffer(12)
    buffer.upload(np.array([10.0, 20.0, 30.0], dtype=np.float32))
    logical = buffer.read(tensor)
    assert logical.shape == (1, 3, 4, 4)
    for c, value in enumerate((10.0, 20.0, 30.0)):
        assert (logical[0, c] == value).all()


def test_buffer_read_returns_a_copy_not_a_view() -> None:
    buffer = Buffer(64)
    buffer.upload(X)
    logical = buffer.read(buffer_tensor(DT.FLOAT32, [1, 1, 4, 4]))
    logical[...] = -1
    assert buffer.read(buffer_tensor(DT.FLOAT32, [1, 1, 4, 4]))[0, 0, 0, 0] == 0


def test_buffer_upload_and_read_at_an_offset() -> None:
    buffer = Buffer(96)
    buffer.upload(X, offset=32)
    assert not buffer.data[:32].any()
    np.testing.assert_array_equal(buffer.read(buffer_tensor(DT.FLOAT32, [1, 1, 4, 4]), offset=32), X)


def test_buffer_from_array_pads_to_a_multiple_of_4_bytes() -> None:
    buffer = Buffer.from_array(np.array([1, 2, 3], dtype=np.uint8))
    assert buffer.size == 4
    assert list(buffer.data) == [1, 2, 3, 0]


def test_buffer_upload_past_the_end_raises_value_error() -> None:
    with pytest.raises(ValueError):
        Buffer(60).upload(X)


def test_buffer_read_past_the_end_raises_value_error() -> None:
    with pytest.raises(ValueError):
        Buffer(64).read(buffer_tensor(DT.FLOAT32, [1, 1, 4, 4]), offset=16)


def test_a_buffer_of_negative_size_is_refused() -> None:
    with pytest.raises(ValueError):
        Buffer(-4)


# ---------------------------------------------------------------------------------------
# Every BINDING.* rule


def two_owned_initializer_outputs(p: Pipeline, first: int, second: int) -> None:
    other = p.device.compile_operator(p.device.create_operator(pool_desc(owned=True)))
    initializer = p.device.create_operator_initializer([p.compiled, other])
    table = p.device.create_binding_table(initializer)
    big = p.device.create_buffer(1024)
    size = p.props.PersistentResourceSize
    table.bind_outputs([bind(big, first, size), bind(big, second, size)])


def input_output_overlap(p: Pipeline) -> None:
    shared = p.device.create_buffer(128)
    shared.upload(X)
    table = p.execute_table()
    table.bind_inputs([bind(shared, 0, 64)])
    table.bind_outputs([bind(shared, 48, 16)])  # writes [48, 64) inside the input's [0, 64)
    p.record_initializer()
    p.recorder.record_dispatch(p.command_list, p.compiled, table)


BINDING_CASES: list[Any] = [
    # counts
    pytest.param(
        False,
        lambda p: p.execute_table().bind_inputs([bind(p.x), bind(p.x)]),
        "BINDING.INPUT_COUNT",
        f"{OP_NAME}.BindInputs",
        id="two input bindings for one input slot remove the device",
    ),
    pytest.param(
        False,
        lambda p: p.execute_table().bind_outputs([bind(p.y), bind(p.y)]),
        "BINDING.OUTPUT_COUNT",
        f"{OP_NAME}.BindOutputs",
        id="two output bindings for one output slot remove the device",
    ),
    pytest.param(
        True,
        lambda p: p.initializer_table()[1].bind_inputs([array_binding([bind(p.x)]), array_binding([bind(p.x)])]),
        "BINDING.INPUT_COUNT",
        f"{INIT}.BindInputs",
        id="an initializer takes one BUFFER_ARRAY per target operator, not two",
    ),
    # type
    pytest.param(
        False,
        lambda p: p.execute_table().bind_inputs([array_binding([bind(p.x)])]),
        "BINDING.TYPE",
        f"{OP_NAME}.BindInputs[0] (InputTensor).Type",
        id="BUFFER_ARRAY at execute is the wrong binding type",
    ),
    pytest.param(
        False,
        lambda p: p.execute_table().bind_outputs([DML_BINDING_DESC(7, DML_BUFFER_BINDING(p.y, 0, 16))]),
        "BINDING.TYPE",
        f"{OP_NAME}.BindOutputs[0] (OutputTensor).Type",
        id="binding type 7 does not exist",
    ),
    pytest.param(
        True,
        lambda p: p.initializer_table()[1].bind_inputs([bind(p.x)]),
        "BINDING.TYPE",
        f"{INIT}.BindInputs[0] ({OP_NAME}[0]).Type",
        id="a plain BUFFER where an initializer needs a BUFFER_ARRAY is the wrong type",
    ),
    # unbound
    pytest.param(
        False,
        lambda p: p.execute_table().bind_inputs([DML_BINDING_DESC()]),
        "BINDING.TENSOR_UNBOUND",
        f"{OP_NAME}.BindInputs[0] (InputTensor)",
        id="NONE for the required input removes the device",
    ),
    pytest.param(
        False,
        lambda p: p.execute_table().bind_outputs([DML_BINDING_DESC()]),
        "BINDING.TENSOR_UNBOUND",
        f"{OP_NAME}.BindOutputs[0] (OutputTensor)",
        id="NONE for the required output removes the device",
    ),
    pytest.param(
        False,
        lambda p: p.execute_table().bind_inputs(
            [DML_BINDING_DESC(DML_BINDING_TYPE.BUFFER, DML_BUFFER_BINDING(None, 0, 64))]
        ),
        "BINDING.TENSOR_UNBOUND",
        f"{OP_NAME}.BindInputs[0] (InputTensor)",
        id="a BUFFER binding with a NULL buffer means no binding, and the input is required",
    ),
    pytest.param(
        True,
        lambda p: p.initializer_table()[1].bind_inputs([DML_BINDING_DESC()]),
        "BINDING.TENSOR_UNBOUND",
        f"{INIT}.BindInputs[0] ({OP_NAME}[0])",
        id="NONE at initialize for an operator with an owned input is rejected",
    ),
    pytest.param(
        True,
        lambda p: p.initializer_table()[1].bind_outputs([DML_BINDING_DESC()]),
        "BINDING.TENSOR_UNBOUND",
        f"{INIT}.BindOutputs[0] ({OP_NAME}[0] persistent resource)",
        id="NONE for a persistent resource the initializer must fill is rejected",
    ),
    # ownership
    pytest.param(
        True,
        lambda p: p.execute_table().bind_inputs([bind(p.x)]),
        "BINDING.OWNED_INPUT_AT_EXECUTE",
        f"{OP_NAME}.BindInputs[0] (InputTensor)",
        id="an OWNED_BY_DML input bound at execute is rejected",
    ),
    pytest.param(
        False,
        lambda p: p.initializer_table()[1].bind_inputs([array_binding([bind(p.x)])]),
        "BINDING.UNOWNED_INPUT_AT_INITIALIZE",
        f"{INIT}.BindInputs[0] ({OP_NAME}[0]).Bindings[0] (InputTensor)",
        id="an input that is not OWNED_BY_DML bound at initialize is rejected",
    ),
    # sizes and ranges
    pytest.param(
        False,
        lambda p: p.execute_table().bind_inputs([bind(p.x, 0, 32)]),
        "BINDING.SIZE_TOO_SMALL",
        f"{OP_NAME}.BindInputs[0] (InputTensor).SizeInBytes",
        id="32 bound bytes for a 64-byte input are too few",
    ),
    pytest.param(
        False,
        lambda p: p.execute_table().bind_outputs([bind(p.y, 0, 12)]),
        "BINDING.SIZE_TOO_SMALL",
        f"{OP_NAME}.BindOutputs[0] (OutputTensor).SizeInBytes",
        id="12 bound bytes for a 16-byte output are too few",
    ),
    pytest.param(
        True,
        lambda p: p.initializer_table()[1].bind_inputs([array_binding([bind(p.x, 0, 60)])]),
        "BINDING.SIZE_TOO_SMALL",
        f"{INIT}.BindInputs[0] ({OP_NAME}[0]).Bindings[0] (InputTensor).SizeInBytes",
        id="60 bytes for an owned 64-byte input at initialize are too few",
    ),
    pytest.param(
        False,
        lambda p: p.execute_table().bind_inputs([bind(p.x, 16, 64)]),
        "BINDING.RANGE_OUTSIDE_BUFFER",
        f"{OP_NAME}.BindInputs[0] (InputTensor)",
        id="[16, 80) does not fit a 64-byte buffer",
    ),
    pytest.param(
        False,
        lambda p: p.execute_table().bind_inputs([bind(p.x, -16, 64)]),
        "BINDING.RANGE_OUTSIDE_BUFFER",
        f"{OP_NAME}.BindInputs[0] (InputTensor)",
        id="a negative offset is no UINT64",
    ),
    pytest.param(
        False,
        lambda p: p.execute_table().bind_outputs([bind(Buffer(18), 0, 16)]),
        "BINDING.BUFFER_SIZE_ALIGNMENT",
        f"{OP_NAME}.BindOutputs[0] (OutputTensor).Buffer",
        id="an 18-byte buffer is not DWORD-sized",
    ),
    pytest.param(
        False,
        lambda p: p.execute_table().bind_inputs([DML_BINDING_DESC(DML_BINDING_TYPE.BUFFER, None)]),
        "BINDING.DESC_NULL",
        f"{OP_NAME}.BindInputs[0] (InputTensor).Desc",
        id="a BUFFER binding with a NULL Desc is rejected",
    ),
    pytest.param(
        False,
        lambda p: p.execute_table().bind_inputs(
            [DML_BINDING_DESC(DML_BINDING_TYPE.BUFFER, DML_BUFFER_BINDING(np.zeros(64, np.uint8), 0, 64))]
        ),
        "BINDING.DESC_NULL",
        f"{OP_NAME}.BindInputs[0] (InputTensor).Desc",
        id="a NumPy array is not a buffer resource",
    ),
    # offsets
    pytest.param(
        False,
        lambda p: p.execute_table().bind_inputs([bind(Buffer(128), 4, 64)]),
        "BINDING.OFFSET_ALIGNMENT",
        f"{OP_NAME}.BindInputs[0] (InputTensor).Offset",
        id="offset 4 is not a multiple of 16",
    ),
    pytest.param(
        False,
        lambda p: p.execute_table().bind_outputs([bind(Buffer(64), 8, 16)]),
        "BINDING.OFFSET_ALIGNMENT",
        f"{OP_NAME}.BindOutputs[0] (OutputTensor).Offset",
        id="output offset 8 is not a multiple of 16",
    ),
    pytest.param(
        ("x_alignment", 64),
        lambda p: p.execute_table().bind_inputs([bind(Buffer(128), 32, 64)]),
        "BINDING.OFFSET_ALIGNMENT",
        f"{OP_NAME}.BindInputs[0] (InputTensor).Offset",
        id="offset 32 is a multiple of 16 but not of GuaranteedBaseOffsetAlignment 64",
    ),
    # array bindings
    pytest.param(
        True,
        lambda p: p.initializer_table()[1].bind_inputs([array_binding([bind(p.x), bind(p.x)])]),
        "BINDING.ARRAY_COUNT",
        f"{INIT}.BindInputs[0] ({OP_NAME}[0]).BindingCount",
        id="a BUFFER_ARRAY of 2 for an operator with 1 input is rejected",
    ),
    pytest.param(
        True,
        lambda p: p.initializer_table()[1].bind_inputs(
            [
                DML_BINDING_DESC(
                    DML_BINDING_TYPE.BUFFER_ARRAY, DML_BUFFER_ARRAY_BINDING(2, [DML_BUFFER_BINDING(p.x, 0, 64)])
                )
            ]
        ),
        "BINDING.ARRAY_COUNT",
        f"{INIT}.BindInputs[0] ({OP_NAME}[0]).BindingCount",
        id="BindingCount 2 with one binding in the array is rejected",
    ),
    # resources
    pytest.param(
        True,
        lambda p: p.execute_table().bind_persistent_resource(bind(Buffer(512), 16, 256)),
        "BINDING.RESOURCE_OFFSET_ALIGNMENT",
        f"{OP_NAME}.BindPersistentResource.Offset",
        id="a persistent resource at offset 16 is not 256-byte aligned",
    ),
    pytest.param(
        False,
        lambda p: p.execute_table().bind_temporary_resource(bind(Buffer(512), 128, 256)),
        "BINDING.RESOURCE_OFFSET_ALIGNMENT",
        f"{OP_NAME}.BindTemporaryResource.Offset",
        id="a temporary resource at offset 128 is not 256-byte aligned",
    ),
    pytest.param(
        True,
        lambda p: p.initializer_table()[1].bind_outputs([bind(Buffer(512), 128, 256)]),
        "BINDING.RESOURCE_OFFSET_ALIGNMENT",
        f"{INIT}.BindOutputs[0] ({OP_NAME}[0] persistent resource).Offset",
        id="an initializer output at offset 128 is not 256-byte aligned",
    ),
    pytest.param(
        True,
        lambda p: p.execute_table().bind_persistent_resource(bind(Buffer(128), 0, 128)),
        "BINDING.RESOURCE_TOO_SMALL",
        f"{OP_NAME}.BindPersistentResource.SizeInBytes",
        id="128 bytes are less than the 64-byte owned input's persistent size of 256",
    ),
    pytest.param(
        True,
        lambda p: p.initializer_table()[1].bind_outputs([bind(Buffer(64), 0, 64)]),
        "BINDING.RESOURCE_TOO_SMALL",
        f"{INIT}.BindOutputs[0] ({OP_NAME}[0] persistent resource).SizeInBytes",
        id="a 64-byte initializer output is smaller than the persistent size",
    ),
    # overlaps
    pytest.param(
        True,
        lambda p: two_owned_initializer_outputs(p, 256, 256),
        "BINDING.OUTPUT_OVERLAP",
        f"{INIT}.BindOutputs[1] ({OP_NAME}[1] persistent resource)",
        id="two persistent resources both written at [256, 512) of one buffer overlap",
    ),
    pytest.param(
        False,
        input_output_overlap,
        "BINDING.INPUT_OUTPUT_OVERLAP",
        f"{OP_NAME}.BindOutputs[0] (OutputTensor)",
        id="an output written inside the input's range is rejected at RecordDispatch",
    ),
]


def _pipeline_for(setup: Any) -> Pipeline:
    if isinstance(setup, tuple):
        return numpy_pipeline(**{setup[0]: setup[1]})
    return numpy_pipeline(owned=setup)


@pytest.mark.parametrize(("setup", "misuse", "rule_id", "path"), BINDING_CASES)
def test_binding_rule_is_reported_at_its_path_and_removes_the_device(
    setup: Any, misuse: Callable[[Pipeline], None], rule_id: str, path: str
) -> None:
    p = _pipeline_for(setup)
    with pytest.raises(dmlpy.DmlError) as caught:
        misuse(p)
    assert_rule(caught.value, rule_id, path)
    assert caught.value.hresult == E_INVALIDARG
    assert p.device.get_device_removed_reason() == HRESULT.E_INVALIDARG


def test_two_persistent_resources_may_share_a_buffer_in_disjoint_ranges() -> None:
    p = numpy_pipeline(owned=True)
    size = p.props.PersistentResourceSize
    two_owned_initializer_outputs(p, 0, size)  # [0, size) and [size, 2 * size): no error
    assert p.device.get_device_removed_reason() == HRESULT.S_OK


def test_offset_16_is_enough_without_a_guaranteed_alignment() -> None:
    p = numpy_pipeline()
    shifted = p.device.create_buffer(80)
    shifted.upload(X, offset=16)
    table = p.execute_table()
    table.bind_inputs([bind(shifted, 16, 64)])
    table.bind_outputs([bind(p.y)])
    np.testing.assert_array_equal(p.run(table), EXPECTED)


def test_an_offset_that_is_a_multiple_of_the_guaranteed_alignment_is_accepted() -> None:
    p = numpy_pipeline(x_alignment=64)
    shifted = p.device.create_buffer(128)
    shifted.upload(X, offset=64)
    table = p.execute_table()
    table.bind_inputs([bind(shifted, 64, 64)])
    table.bind_outputs([bind(p.y)])
    np.testing.assert_array_equal(p.run(table), EXPECTED)


def test_a_persistent_resource_at_a_256_byte_offset_is_accepted() -> None:
    p = numpy_pipeline(owned=True)
    size = p.props.PersistentResourceSize
    persistent = p.device.create_buffer(256 + size)
    initializer, init_table = p.initializer_table()
    init_table.bind_inputs([array_binding([bind(p.x)])])
    init_table.bind_outputs([bind(persistent, 256, size)])
    p.recorder.record_dispatch(p.command_list, initializer, init_table)
    p.command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav()])  # the dispatch after the initializer reads what it wrote
    table = p.execute_table()
    table.bind_inputs([DML_BINDING_DESC()])
    table.bind_outputs([bind(p.y)])
    table.bind_persistent_resource(bind(persistent, 256, size))
    p.recorder.record_dispatch(p.command_list, p.compiled, table)
    p.command_list.close()
    p.device.execute(p.command_list)
    np.testing.assert_array_equal(p.y.read(buffer_tensor(DT.FLOAT32, [1, 1, 2, 2])), EXPECTED)


def test_a_temporary_resource_may_be_bound_when_none_is_needed() -> None:
    p = numpy_pipeline()
    table = p.bound_execute_table()
    table.bind_temporary_resource(bind(p.device.create_buffer(256)))
    table.bind_temporary_resource(None)
    np.testing.assert_array_equal(p.run(table), EXPECTED)


def test_the_offset_alignment_message_names_the_alignment() -> None:
    p = numpy_pipeline(x_alignment=64)
    with pytest.raises(dmlpy.DmlError) as caught:
        p.execute_table().bind_inputs([bind(Buffer(128), 32, 64)])
    finding = assert_rule(caught.value, "BINDING.OFFSET_ALIGNMENT")
    assert "is 32, expected a multiple of 64" in finding.message


def test_the_size_message_shows_both_sizes() -> None:
    p = numpy_pipeline()
    with pytest.raises(dmlpy.DmlError) as caught:
        p.execute_table().bind_inputs([bind(p.x, 0, 32)])
    finding = assert_rule(caught.value, "BINDING.SIZE_TOO_SMALL")
    assert "is 32, expected at least TotalTensorSizeInBytes = 64" in finding.message


def test_one_bind_call_reports_every_broken_binding_rule() -> None:
    # offset 4 is unaligned AND 32 bytes are too few: both in one DmlError
    p = numpy_pipeline()
    with pytest.raises(dmlpy.DmlError) as caught:
        p.execute_table().bind_inputs([bind(Buffer(128), 4, 32)])
    assert {"BINDING.SIZE_TOO_SMALL", "BINDING.OFFSET_ALIGNMENT"} <= set(rule_ids(caught.value))


# ---------------------------------------------------------------------------------------
# Input/output sharing


def test_input_and_output_in_disjoint_ranges_of_one_buffer_is_a_warning_on_the_table(device: dmlpy.Device) -> None:
    p = Pipeline(device)
    shared = device.create_buffer(128)
    shared.upload(X)
    table = p.execute_table()
    table.bind_inputs([bind(shared, 0, 64)])
    table.bind_outputs([bind(shared, 64, 16)])
    p.record_initializer()
    p.recorder.record_dispatch(p.command_list, p.compiled, table)
    finding = assert_rule(
        table.warnings, "BINDING.INPUT_OUTPUT_SAME_RESOURCE", f"{OP_NAME}.BindOutputs[0] (OutputTensor)"
    )
    assert finding.severity is dmlpy.Severity.WARNING
    p.command_list.close()
    device.execute(p.command_list)
    np.testing.assert_array_equal(shared.read(buffer_tensor(DT.FLOAT32, [1, 1, 2, 2]), offset=64), EXPECTED)
    assert device.get_device_removed_reason() == HRESULT.S_OK


def test_inputs_may_share_and_overlap_one_buffer_without_findings() -> None:
    # Only outputs' writable ranges are constrained; separate input and output buffers give no findings.
    p = numpy_pipeline()
    table = p.bound_execute_table()
    np.testing.assert_array_equal(p.run(table), EXPECTED)
    assert table.warnings == []


def test_the_input_output_overlap_message_shows_both_ranges() -> None:
    p = numpy_pipeline()
    with pytest.raises(dmlpy.DmlError) as caught:
        input_output_overlap(p)
    finding = assert_rule(caught.value, "BINDING.INPUT_OUTPUT_OVERLAP")
    assert "[48, 64)" in finding.message
    assert "[0, 64)" in finding.message


# ---------------------------------------------------------------------------------------
# OWNED_BY_DML inputs: bound at initialize, NONE at execute


def test_an_owned_input_gives_the_compiled_operator_a_persistent_resource() -> None:
    p = numpy_pipeline(owned=True)
    assert p.props.PersistentResourceSize >= 64  # at least the owned input's 64 bytes
    assert p.props.TemporaryResourceSize == 0


def test_an_operator_without_owned_inputs_needs_no_persistent_resource() -> None:
    p = numpy_pipeline()
    assert p.props.PersistentResourceSize == 0
    assert p.props.TemporaryResourceSize == 0


def test_an_owned_input_runs_correctly_after_its_initializer(device: dmlpy.Device) -> None:
    p = Pipeline(device, owned=True)
    np.testing.assert_array_equal(p.run(), EXPECTED)


def test_an_owned_input_is_copied_at_initialize_so_later_changes_to_its_buffer_do_not_matter(
    device: dmlpy.Device,
) -> None:
    p = Pipeline(device, owned=True)
    p.record_initializer()
    p.command_list.close()
    device.execute(p.command_list)  # the initializer has copied x into the persistent resource
    p.x.upload(np.full(16, 1000.0, dtype=np.float32))
    p.command_list.reset()
    p.recorder.record_dispatch(p.command_list, p.compiled, p.bound_execute_table())
    p.command_list.close()
    device.execute(p.command_list)
    np.testing.assert_array_equal(p.y.read(buffer_tensor(DT.FLOAT32, [1, 1, 2, 2])), EXPECTED)


def test_an_initializer_array_entry_may_be_empty_for_an_operator_with_nothing_to_initialize() -> None:
    p = numpy_pipeline()
    initializer, table = p.initializer_table()
    table.bind_inputs([array_binding([None])])
    table.bind_inputs([DML_BINDING_DESC()])
    table.bind_outputs([DML_BINDING_DESC()])
    p.recorder.record_dispatch(p.command_list, initializer, table)
    p.command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav()])  # the dispatch after the initializer reads what it wrote
    assert p.device.get_device_removed_reason() == HRESULT.S_OK


# ---------------------------------------------------------------------------------------
# Optional tensors: no operator in dmlpy has one yet (convolution's BiasTensor will), so a
# minimal dispatchable with an optional slot drives the real BindingTable.


@dataclass
class OptionalSlotDispatchable:
    device: Any
    bias: Any  # the optional tensor's desc, or None when the operator desc leaves it out
    name: str = "TEST_OPERATOR_WITH_OPTIONAL_BIAS"

    def input_slots(self) -> list[Slot]:
        return [
            Slot("InputTensor", buffer_tensor(DT.FLOAT32, [1, 1, 4, 4]).buffer),
            Slot("BiasTensor", self.bias, optional=True),
        ]

    def output_slots(self) -> list[Slot]:
        return [Slot("OutputTensor", buffer_tensor(DT.FLOAT32, [1, 1, 2, 2]).buffer)]

    def get_binding_properties(self) -> DML_BINDING_PROPERTIES:
        return DML_BINDING_PROPERTIES(3, 0, 0)


def optional_table(bias: Any) -> tuple[dmlpy.Device, BindingTable]:
    device = dmlpy.create_device(backend="numpy")
    return device, BindingTable(device, DML_BINDING_TABLE_DESC(OptionalSlotDispatchable(device, bias), 0, 0, 3))


def test_binding_a_buffer_to_an_optional_tensor_the_desc_leaves_out_removes_the_device() -> None:
    device, table = optional_table(None)
    with pytest.raises(dmlpy.DmlError) as caught:
        table.bind_inputs([bind(Buffer(64)), bind(Buffer(16))])
    assert_rule(
        caught.value, "BINDING.ABSENT_TENSOR_BOUND", "TEST_OPERATOR_WITH_OPTIONAL_BIAS.BindInputs[1] (BiasTensor)"
    )
    assert device.get_device_removed_reason() == HRESULT.E_INVALIDARG


def test_an_optional_tensor_the_desc_leaves_out_takes_none() -> None:
    device, table = optional_table(None)
    table.bind_inputs([bind(Buffer(64)), DML_BINDING_DESC()])
    assert device.get_device_removed_reason() == HRESULT.S_OK


def test_an_optional_tensor_the_desc_describes_must_be_bound() -> None:
    _, table = optional_table(buffer_tensor(DT.FLOAT32, [1, 1, 1, 1]).buffer)
    with pytest.raises(dmlpy.DmlError) as caught:
        table.bind_inputs([bind(Buffer(64)), DML_BINDING_DESC()])
    assert_rule(caught.value, "BINDING.TENSOR_UNBOUND", "TEST_OPERATOR_WITH_OPTIONAL_BIAS.BindInputs[1] (BiasTensor)")


# ---------------------------------------------------------------------------------------
# The native kernel re-checks what it is given


def test_the_native_kernel_rejects_a_bound_buffer_smaller_than_its_tensor() -> None:
    pytest.importorskip("dmlpy._native")
    if not dmlpy.native_available():
        pytest.skip(dmlpy.native_status())
    from dmlpy.backends import BoundTensor
    from dmlpy.backends.native import NativeBackend

    op = dmlpy.create_device(backend="numpy").create_operator(pool_desc())
    backend = NativeBackend()
    prepared = backend.prepare(op.spec, op.desc)
    too_short = np.zeros(32, dtype=np.uint8)  # the input needs 64 bytes
    runner = backend.bind(
        prepared,
        [BoundTensor("InputTensor", too_short, op.tensor("InputTensor"))],
        [BoundTensor("OutputTensor", np.zeros(16, dtype=np.uint8), op.tensor("OutputTensor"))],
    )
    with pytest.raises(dmlpy.DmlError) as caught:
        runner()
    assert_rule(caught.value, "NATIVE.REJECTED", "DML_AVERAGE_POOLING_OPERATOR_DESC")
    assert caught.value.hresult == E_INVALIDARG
