# %% [markdown]
# # 2. One operator through the object model
#
# A DirectML program never "calls" an operator. It describes it (a desc), creates it
# (IDMLDevice::CreateOperator, which validates and copies the desc), compiles it for the device,
# initializes it once, binds buffers in a binding table, records a dispatch into a command list
# and executes the list. dmlpy has the same objects with the same names.
# https://learn.microsoft.com/windows/ai/directml/dml-binding

# %%
import numpy as np

import dmlpy
from dmlpy import DML_ACTIVATION_LINEAR_OPERATOR_DESC, buffer_tensor

device = dmlpy.create_device()  # DMLCreateDevice1 at DML_FEATURE_LEVEL_6_4; the backend is C or NumPy
x_tensor, y_tensor = buffer_tensor("float32", (1, 1, 2, 3)), buffer_tensor("float32", (1, 1, 2, 3))
desc = DML_ACTIVATION_LINEAR_OPERATOR_DESC(InputTensor=x_tensor, OutputTensor=y_tensor, Alpha=2.0, Beta=-1.0)
print(desc.to_cpp("linear"))  # the same struct in C++

operator = device.create_operator(desc)  # validates; a wrong desc raises DmlError(E_INVALIDARG)
compiled = device.compile_operator(operator)
properties = compiled.get_binding_properties()
print(properties)

# %% [markdown]
# ## Initialize, bind, record, execute
#
# The initializer fills the persistent resource (weights marked OWNED_BY_DML end up there); this
# operator has none, but it must still be initialized before its first execution. The binding
# table takes one binding per input slot and per output slot, in the desc's field order.

# %%
x = np.array([[[[0, 1, 2], [3, 4, 5]]]], np.float32)
input_buffer = dmlpy.Buffer.from_array(x, name="x")
output_buffer = device.create_buffer(y_tensor.Desc.TotalTensorSizeInBytes, "y")

recorder = device.create_command_recorder()
initializer = device.create_operator_initializer([compiled])
init_list = device.create_command_list()
recorder.record_dispatch(init_list, initializer, device.create_binding_table(initializer))
init_list.close()
device.execute(init_list)  # ExecuteCommandLists, then wait for the GPU

table = device.create_binding_table(compiled)
table.bind_inputs([dmlpy.buffer_binding(input_buffer)])
table.bind_outputs([dmlpy.buffer_binding(output_buffer)])
command_list = device.create_command_list()
recorder.record_dispatch(command_list, compiled, table)
command_list.close()
device.execute(command_list)
y = output_buffer.read(y_tensor)
print(y)
np.testing.assert_array_equal(y, 2 * x - 1)

# %% [markdown]
# A recorded command list runs again on whatever the bound buffers hold now, as on a GPU:

# %%
input_buffer.upload(np.full(6, 10, np.float32))
device.execute(command_list)
np.testing.assert_array_equal(output_buffer.read(y_tensor), np.full((1, 1, 2, 3), 19, np.float32))

# %% [markdown]
# `dmlpy.run(desc, InputTensor=x)` does all of the above in one call (and keeps the prepared
# pipeline for the next call with an equal desc):

# %%
np.testing.assert_array_equal(dmlpy.run(desc, device=device, InputTensor=x), 2 * x - 1)
