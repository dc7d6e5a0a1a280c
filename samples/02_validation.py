"""Descriptors DirectML would reject with a bare E_INVALIDARG, and what dmlpy says about each.

Each case builds a desc with one mistake people make, validates it, and prints the rule id,
the C field path, and the expected and actual values. `dmlpy.validate` collects every
finding; `device.create_operator` raises `dmlpy.DmlError` carrying the same findings.
"""

import warnings

import dmlpy
from dmlpy import (
    DML_AVERAGE_POOLING1_OPERATOR_DESC,
    DML_AVERAGE_POOLING_OPERATOR_DESC,
    DML_FEATURE_LEVEL_6_1,
    DML_TENSOR_DATA_TYPE_FLOAT16,
    DML_TENSOR_DATA_TYPE_FLOAT32,
    DML_TENSOR_DATA_TYPE_INT32,
    buffer_tensor,
)

F32 = DML_TENSOR_DATA_TYPE_FLOAT32


def pool(input_sizes=(1, 64, 112, 112), output_sizes=(1, 64, 56, 56), **fields):
    """A correct 3x3 / stride 2 / pad 1 pooling desc, with ``fields`` overriding any field."""
    desc = DML_AVERAGE_POOLING_OPERATOR_DESC(
        InputTensor=buffer_tensor(F32, input_sizes),
        OutputTensor=buffer_tensor(F32, output_sizes),
        DimensionCount=2,
        Strides=(2, 2),
        WindowSize=(3, 3),
        StartPadding=(1, 1),
        EndPadding=(1, 1),
        IncludePadding=True,
    )
    for name, value in fields.items():
        setattr(desc, name, value)
    return desc


def show(title, desc, **validate_args):
    print(f"\n--- {title}")
    report = dmlpy.validate(desc, **validate_args)
    print(report)


show("a correct desc has no findings", pool())
show("output height off by one (55 instead of 56)", pool(output_sizes=(1, 64, 55, 56)))
show("the output keeps a different channel count", pool(output_sizes=(1, 32, 56, 56)))
show("input and output data types differ", pool(OutputTensor=buffer_tensor(DML_TENSOR_DATA_TYPE_FLOAT16, (1, 64, 56, 56))))
show("average pooling takes floats only", pool(
    InputTensor=buffer_tensor(DML_TENSOR_DATA_TYPE_INT32, (1, 64, 112, 112)),
    OutputTensor=buffer_tensor(DML_TENSOR_DATA_TYPE_INT32, (1, 64, 56, 56)),
))  # fmt: skip
show("DimensionCount counts spatial dims (2 for a 4-D tensor), not the rank", pool(DimensionCount=4))
show("a zero stride", pool(Strides=(0, 2)))
show("a 3-D tensor: pooling needs 4 or 5 dimensions", pool(input_sizes=(64, 112, 112), output_sizes=(64, 56, 56), DimensionCount=1,
                                                           Strides=(2,), WindowSize=(3,), StartPadding=(1,), EndPadding=(1,)))  # fmt: skip

too_small = pool()
too_small.InputTensor.Desc.TotalTensorSizeInBytes = 64 * 112 * 112  # elements, not bytes
show("TotalTensorSizeInBytes counted in elements instead of bytes", too_small)

show("ceil mode: one more output than the floor formula is accepted, with a warning", pool(input_sizes=(1, 1, 7, 7), output_sizes=(1, 1, 4, 4), WindowSize=(2, 2), StartPadding=(0, 0), EndPadding=(0, 0)))

dilated = DML_AVERAGE_POOLING1_OPERATOR_DESC(
    InputTensor=buffer_tensor(F32, (1, 8, 10, 10)),
    OutputTensor=buffer_tensor(F32, (1, 8, 8, 8)),  # (10 - 3) / 1 + 1: the doc formula ignores Dilations
    DimensionCount=2,
    Strides=(1, 1),
    WindowSize=(3, 3),
    StartPadding=(0, 0),
    EndPadding=(0, 0),
    Dilations=(2, 2),
    IncludePadding=False,
)
show("AVERAGE_POOLING1: an output size from the doc formula, which forgets the dilation", dilated)
dilated.OutputTensor = buffer_tensor(F32, (1, 8, 6, 6))
show("AVERAGE_POOLING1 on a device below feature level 6.2", dilated, feature_level=DML_FEATURE_LEVEL_6_1)

print("\n--- create_operator raises one DmlError carrying every error finding")
device = dmlpy.create_device()
try:
    device.create_operator(pool(output_sizes=(2, 64, 55, 57)))
except dmlpy.DmlError as error:
    print(error)
    print("hresult:", hex(error.hresult), "rules:", error.rule_ids)

print("\n--- warnings go through Python's warnings module (create_device(strict=True) makes them errors)")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    device.create_operator(pool(input_sizes=(1, 1, 7, 7), output_sizes=(1, 1, 4, 4), WindowSize=(2, 2), StartPadding=(0, 0), EndPadding=(0, 0)))
for w in caught:
    print(f"{w.category.__name__}: {w.message}")

print("\n--- two dispatches in one command list where the second reads what the first wrote need a UAV barrier")
first_pool = device.compile_operator(device.create_operator(pool()))
second_pool = device.compile_operator(device.create_operator(pool(input_sizes=(1, 64, 56, 56), output_sizes=(1, 64, 28, 28))))
buffers = {name: device.create_buffer(size, name) for name, size in (("x", 4 * 64 * 112 * 112), ("t", 4 * 64 * 56 * 56), ("y", 4 * 64 * 28 * 28))}
recorder, command_list = device.create_command_recorder(), device.create_command_list()
for compiled, source, target in ((first_pool, "x", "t"), (second_pool, "t", "y")):
    initializer = device.create_operator_initializer([compiled])  # nothing to initialize: run it in a list of its own
    init_list = device.create_command_list()
    recorder.record_dispatch(init_list, initializer, device.create_binding_table(initializer))
    init_list.close()
    device.execute(init_list)
    table = device.create_binding_table(compiled)
    table.bind_inputs([dmlpy.buffer_binding(buffers[source])])
    table.bind_outputs([dmlpy.buffer_binding(buffers[target])])
    try:
        recorder.record_dispatch(command_list, compiled, table)
    except dmlpy.DmlError as error:
        print(error)
        command_list.resource_barrier([dmlpy.D3D12_RESOURCE_BARRIER.uav(buffers["t"])])
        recorder.record_dispatch(command_list, compiled, table)
        print("with command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav(t)]) between them it records")
command_list.close()
device.execute(command_list)
