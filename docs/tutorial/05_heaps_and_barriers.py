# %% [markdown]
# # 5. Descriptor heaps and barriers
#
# Once the descs are right, DirectML programs break on the D3D12 side. Two things every program does:
#
# * **Descriptor heaps.** A binding table writes its descriptors into a range of a shader-visible
#   descriptor heap: `SizeInDescriptors` slots (at least the binding properties'
#   `RequiredDescriptorCount`) from a CPU and a GPU handle. The command list must have that heap set
#   (`SetDescriptorHeaps`) before RecordDispatch, and two tables in use at once must not share slots.
# * **UAV barriers.** A GPU runs the dispatches of one command list as it likes unless a UAV barrier
#   separates them. When a dispatch reads memory an earlier one wrote (an operator after its
#   initializer, the second layer after the first), a missing barrier is a race: wrong numbers now
#   and then. dmlpy runs dispatches in order, so it would hide the race; instead it reports it as
#   `BARRIER.UAV_MISSING`.
#
# https://learn.microsoft.com/windows/ai/directml/dml-binding

# %%
import numpy as np

import dmlpy
from dmlpy import D3D12_RESOURCE_BARRIER, DML_ACTIVATION_LINEAR_OPERATOR_DESC, DML_BINDING_TABLE_DESC, buffer_tensor

device = dmlpy.create_device()  # debug=True: hazards are errors, as the D3D12 debug layer reports them
shape = (1, 1, 1, 4)


def linear(alpha: float, beta: float) -> dmlpy.CompiledOperator:
    desc = DML_ACTIVATION_LINEAR_OPERATOR_DESC(buffer_tensor("float32", shape), buffer_tensor("float32", shape), Alpha=alpha, Beta=beta)
    return device.compile_operator(device.create_operator(desc))


first, second = linear(2.0, 0.0), linear(1.0, 1.0)  # y = 2x, then z = y + 1
x, y, z = (device.create_buffer(16, name) for name in "xyz")
x.upload(np.array([1, 2, 3, 4], np.float32))

# One heap for everything: both initializers and both operators, each table in its own slots.
heap = device.create_descriptor_heap(16, "tutorial heap")
recorder = device.create_command_recorder()
command_list = device.create_command_list()
command_list.set_descriptor_heaps([heap])
slot = 0


def table_for(dispatchable: object) -> dmlpy.BindingTable:
    global slot
    count = max(1, dispatchable.get_binding_properties().RequiredDescriptorCount)
    table = device.create_binding_table(DML_BINDING_TABLE_DESC(dispatchable, heap.cpu_handle(slot), heap.gpu_handle(slot), count))
    slot += count
    return table


for op in (first, second):
    initializer = device.create_operator_initializer([op])
    recorder.record_dispatch(command_list, initializer, table_for(initializer))
command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav()])  # the operators start after their initializers

t1 = table_for(first)
t1.bind_inputs([dmlpy.buffer_binding(x)])
t1.bind_outputs([dmlpy.buffer_binding(y)])
recorder.record_dispatch(command_list, first, t1)

t2 = table_for(second)
t2.bind_inputs([dmlpy.buffer_binding(y)])  # reads what the first dispatch writes
t2.bind_outputs([dmlpy.buffer_binding(z)])

# %% [markdown]
# Recording the second dispatch now, with no barrier after the first, is the race:

# %%
try:
    recorder.record_dispatch(command_list, second, t2)
    raise AssertionError("the missing barrier was not reported")
except dmlpy.DmlError as error:
    assert error.rule_ids == ["BARRIER.UAV_MISSING"]
    print(error.findings[0].message)

# %% [markdown]
# A UAV barrier on `y` (or on every resource, `uav()`) orders them:

# %%
command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav(y)])
recorder.record_dispatch(command_list, second, t2)
command_list.close()
device.execute(command_list)
np.testing.assert_array_equal(z.read(buffer_tensor("float32", shape)).ravel(), [3, 5, 7, 9])
print("z =", z.read(buffer_tensor("float32", shape)).ravel())

# %% [markdown]
# ## The heap rules
#
# A table whose range runs past the heap, or whose handles name different slots, is refused when the
# table is created; a table in a heap the command list has not set is refused at RecordDispatch.

# %%
small = device.create_descriptor_heap(1)
required = first.get_binding_properties().RequiredDescriptorCount
try:
    device.create_binding_table(DML_BINDING_TABLE_DESC(first, small.cpu_handle(0), small.gpu_handle(0), max(2, required)))
except dmlpy.DmlError as error:
    assert error.rule_ids == ["HEAP.RANGE_IN_HEAP"]
    print(error.findings[0])
