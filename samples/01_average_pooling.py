"""Average pooling through DirectML's whole object model, step by step.

This is the C++ flow of a DirectML application, written in Python with the same struct
and field names:

    CreateOperator -> CompileOperator -> CreateOperatorInitializer -> CreateDescriptorHeap
    -> CreateBindingTable -> Bind* -> SetDescriptorHeaps -> RecordDispatch (initializer)
    -> ResourceBarrier (UAV) -> RecordDispatch (operator) -> execute -> read back

The input is the example of DirectML's pooling documentation: a 1x1x4x4 tensor holding
0..15, pooled with a 2x2 window and stride 2. The expected result is {2.5, 4.5, 10.5, 12.5}.
"""

import numpy as np

import dmlpy
from dmlpy import (
    DML_AVERAGE_POOLING_OPERATOR_DESC,
    DML_BINDING_DESC,
    DML_BINDING_TABLE_DESC,
    DML_EXECUTION_FLAG_NONE,
    DML_FEATURE_LEVEL_6_4,
    DML_TENSOR_DATA_TYPE_FLOAT32,
    buffer_tensor,
)

# 1. A device. On Windows this wraps an ID3D12Device; here the backend is dmlpy's C kernels
#    (or NumPy when no compiler was found at install time: `python -m dmlpy info` says which).
device = dmlpy.create_device(DML_FEATURE_LEVEL_6_4)
print(f"device: feature level {DML_FEATURE_LEVEL_6_4.dotted}, backend {device.backend_name}")

# 2. Tensor descs. Sizes are always in NCHW order; with no Strides the tensor is packed.
#    buffer_tensor fills TotalTensorSizeInBytes with DMLCalcBufferTensorSize (64 bytes here).
input_tensor = buffer_tensor(DML_TENSOR_DATA_TYPE_FLOAT32, (1, 1, 4, 4))
output_tensor = buffer_tensor(DML_TENSOR_DATA_TYPE_FLOAT32, (1, 1, 2, 2))

# 3. The operator desc, field for field as in DirectML.h. DimensionCount counts the
#    spatial dimensions (2 for a 4-D tensor); every spatial array has that many entries.
pooling = DML_AVERAGE_POOLING_OPERATOR_DESC(
    InputTensor=input_tensor,
    OutputTensor=output_tensor,
    DimensionCount=2,
    Strides=(2, 2),
    WindowSize=(2, 2),
    StartPadding=(0, 0),
    EndPadding=(0, 0),
    IncludePadding=False,
)
print("\nThe same desc in C++:\n" + pooling.to_cpp("pooling"))

# 4. CreateOperator validates the desc (a bad one raises dmlpy.DmlError with E_INVALIDARG
#    and the rule that failed); CompileOperator makes it dispatchable.
operator = device.create_operator(pooling)
compiled = device.compile_operator(operator, DML_EXECUTION_FLAG_NONE)
properties = compiled.get_binding_properties()
print(
    f"\nbinding properties: {properties.RequiredDescriptorCount} descriptors, "
    f"temporary {properties.TemporaryResourceSize} bytes, persistent {properties.PersistentResourceSize} bytes"
)

# 5. GPU buffers. Bind offsets must be multiples of 16 bytes and the bound sizes at least
#    each tensor's TotalTensorSizeInBytes.
x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
input_buffer = dmlpy.Buffer.from_array(x, name="input")
output_buffer = device.create_buffer(output_tensor.Desc.TotalTensorSizeInBytes, name="output")

# 6. A descriptor heap holds the binding tables' descriptors: each table takes its own range of
#    slots, at least RequiredDescriptorCount long, given by a CPU and a GPU handle to its first slot.
initializer = device.create_operator_initializer([compiled])
init_count = initializer.get_binding_properties().RequiredDescriptorCount
heap = device.create_descriptor_heap(max(1, init_count) + properties.RequiredDescriptorCount, "descriptors")

# 7. Every compiled operator is initialized once before it runs. The initializer's inputs
#    are the OWNED_BY_DML tensors (none here), its outputs the persistent resources. The command
#    list must have the heap set before it records a dispatch whose table lives there.
recorder = device.create_command_recorder()
command_list = device.create_command_list()
command_list.set_descriptor_heaps([heap])
init_table = device.create_binding_table(DML_BINDING_TABLE_DESC(initializer, heap.cpu_handle(0), heap.gpu_handle(0), init_count))
recorder.record_dispatch(command_list, initializer, init_table)

# 8. A UAV barrier: dispatches after it see everything written before it. Without it a GPU may run
#    the operator while the initializer still fills the persistent resource (dmlpy reports the
#    missing barrier as BARRIER.UAV_MISSING whenever two dispatches of one list share memory).
command_list.resource_barrier([dmlpy.D3D12_RESOURCE_BARRIER.uav()])

# 9. A table for the compiled operator, in the slots after the initializer's; bind its slots in desc
#    field order: inputs (InputTensor), then outputs (OutputTensor). Nothing persistent to bind here.
first = max(1, init_count)
table = device.create_binding_table(DML_BINDING_TABLE_DESC(compiled, heap.cpu_handle(first), heap.gpu_handle(first), properties.RequiredDescriptorCount))
table.bind_inputs([dmlpy.buffer_binding(input_buffer, offset=0, size_in_bytes=64)])
table.bind_outputs([dmlpy.buffer_binding(output_buffer)])
table.bind_persistent_resource(DML_BINDING_DESC())  # NONE: PersistentResourceSize is 0
recorder.record_dispatch(command_list, compiled, table)

# 10. Close the command list and execute it; then read the output back through its desc.
command_list.close()
device.execute(command_list)
result = output_buffer.read(output_tensor)
print("\ninput:\n", x[0, 0])
print("average pooling, window 2x2, stride 2:\n", result[0, 0])
assert np.array_equal(result[0, 0], [[2.5, 4.5], [10.5, 12.5]]), result

# 11. The same in one call, through the same pipeline (handy in notebooks).
again = dmlpy.run(pooling, device=device, InputTensor=x)
assert np.array_equal(again, result)
print("\ndmlpy.run gives the same answer.")
