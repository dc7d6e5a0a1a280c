# %% [markdown]
# # 1. Tensors and strides
#
# Every DirectML tensor is a `DML_TENSOR_DESC` whose `Desc` is a `DML_BUFFER_TENSOR_DESC`:
# a data type, `Sizes` (always in the operator's logical order, NCHW for images), optional
# `Strides` (in elements, not bytes) and `TotalTensorSizeInBytes`, the bytes the bound buffer
# range must hold. https://learn.microsoft.com/windows/win32/api/directml/ns-directml-dml_buffer_tensor_desc

# %%
import numpy as np

import dmlpy
from dmlpy import buffer_tensor, calc_buffer_tensor_size, nhwc_strides

packed = buffer_tensor("float32", (1, 3, 2, 4))  # NCHW, no Strides: packed row-major
print(packed)
assert packed.Desc.Strides is None
assert packed.Desc.TotalTensorSizeInBytes == 1 * 3 * 2 * 4 * 4  # 96 bytes

# %% [markdown]
# ## Strides describe the memory layout; Sizes stay NCHW
#
# An NHWC image keeps `Sizes = {N, C, H, W}` and says where each element lives with strides:
# moving one channel moves 1 element, one column moves C elements, one row W*C.

# %%
nhwc = buffer_tensor("float32", (1, 3, 2, 4), nhwc_strides((1, 3, 2, 4)))
print("NHWC strides:", nhwc.Desc.Strides)
assert tuple(nhwc.Desc.Strides) == (24, 1, 12, 3)

# The element at logical index (n, c, h, w) sits at sum(index * stride) elements from the start.
device = dmlpy.create_device()
buffer = device.create_buffer(nhwc.Desc.TotalTensorSizeInBytes)
image = np.arange(24, dtype=np.float32).reshape(1, 3, 2, 4)  # logical NCHW values
buffer.view(nhwc, writeable=True)[...] = image
raw = buffer.data.view(np.float32)
assert raw[1] == image[0, 1, 0, 0]  # channel 1 of the first pixel is the second float in memory
np.testing.assert_array_equal(buffer.read(nhwc), image)  # read() gives the logical NCHW array back

# %% [markdown]
# ## Broadcast is a 0 stride; padded rows are a larger row stride
#
# A per-channel bias `{1, C, 1, 1}` can be read as a full `{N, C, H, W}` tensor with strides
# `{0, 1, 0, 0}`: every (n, h, w) reads the same C values. Rows padded to 8 elements use a row
# stride of 8 with W = 5; `calc_buffer_tensor_size` (DMLCalcBufferTensorSize) counts the bytes up
# to the last element, rounded up to 4.

# %%
bias = buffer_tensor("float32", (2, 3, 4, 4), strides=(0, 1, 0, 0))
assert bias.Desc.TotalTensorSizeInBytes == 3 * 4  # three floats serve all 96 logical elements
padded_rows = buffer_tensor("float16", (1, 1, 3, 5), strides=(24, 24, 8, 1))
assert calc_buffer_tensor_size("float16", (1, 1, 3, 5), (24, 24, 8, 1)) == ((2 * 8 + 4) + 1) * 2 + 2  # 21 halves, rounded up to 44 bytes
print("bias bytes:", bias.Desc.TotalTensorSizeInBytes, "padded rows bytes:", padded_rows.Desc.TotalTensorSizeInBytes)

# %% [markdown]
# `dmlpy.pictures.tensor_layout(desc)` draws the same mapping (in a notebook it displays itself):
# grey slots are padding, numbered slots shared by several elements are broadcast.

# %%
from dmlpy.pictures import tensor_layout

picture = tensor_layout(padded_rows)
assert "<svg" in str(picture)
