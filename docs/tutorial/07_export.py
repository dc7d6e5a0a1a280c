# %% [markdown]
# # 7. Exporting for Windows
#
# What was validated here runs on Windows in two ways:
#
# * **DxDispatch**, DirectML's own test tool, reads a JSON model (resources, dispatchables with
#   their descs, commands) and runs it on a real GPU, under the D3D12 debug layer with `-d`.
# * **C++**: `dmlpy.interop.cpp` writes functions that build the same descs against DirectML.h,
#   with the lowest `DML_TARGET_VERSION` the code needs.
#
# https://github.com/microsoft/DirectML/tree/master/DxDispatch

# %%
import json
import tempfile
from pathlib import Path

import numpy as np

import dmlpy
from dmlpy import DML_AVERAGE_POOLING_OPERATOR_DESC, buffer_tensor
from dmlpy.interop import cpp, dxdispatch

pool = DML_AVERAGE_POOLING_OPERATOR_DESC(
    InputTensor=buffer_tensor("float32", (1, 1, 4, 4)), OutputTensor=buffer_tensor("float32", (1, 1, 2, 2)),
    DimensionCount=2, Strides=(2, 2), WindowSize=(2, 2), StartPadding=(0, 0), EndPadding=(0, 0), IncludePadding=False,
)  # fmt: skip
x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)

model = dxdispatch.operator_model(pool, {"InputTensor": x})
out_dir = Path(tempfile.mkdtemp(prefix="dmlpy-tutorial-"))
path = dxdispatch.write_model(model, out_dir / "pool.json")
written = json.loads(path.read_text(encoding="utf-8"))
print(json.dumps({key: value for key, value in written.items() if key != "resources"}, indent=2))
assert list(written["dispatchables"]) and [c["type"] for c in written["commands"]][0] == "dispatch"

# %% [markdown]
# Reading the file back gives the same desc, and running it gives what `dmlpy.run` gives: the
# model is the operator, not a description of it.

# %%
parsed = dxdispatch.read_model(path)
assert list(parsed.dispatchables.values()) == [pool]
result = dxdispatch.run_model(parsed, dmlpy.create_device())
output_name = next(name for name in parsed.resources if name != "InputTensor")
np.testing.assert_array_equal(result.array(output_name).reshape(1, 1, 2, 2), dmlpy.run(pool, InputTensor=x))

# %% [markdown]
# ## C++
#
# `emit_operator` writes a self-contained header: the desc's arrays and structs in static storage
# and a function returning the `DML_OPERATOR_DESC*` to pass to IDMLDevice::CreateOperator.

# %%
header = cpp.emit_operator(pool, "make_pool")
print(header[-700:])
assert "DML_OPERATOR_AVERAGE_POOLING" in header and "make_pool" in header
