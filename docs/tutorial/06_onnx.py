# %% [markdown]
# # 6. Importing ONNX
#
# `dmlpy.interop.onnx` maps each ONNX node onto the DirectML operator desc onnxruntime's DirectML
# execution provider would use, wires them into one DML_GRAPH_DESC with GraphBuilder and compiles
# it. `validate` reports every finding of a model at once, ONNX's (`ONNX.*`) and DirectML's.
# This step needs the `onnx` package (`pip install dmlpy[onnx]`); onnxruntime, if installed, is
# the reference the result is compared with.

# %%
import sys
import warnings

import numpy as np

import dmlpy

try:
    from onnx import TensorProto, helper, numpy_helper
except ImportError:
    print("this step needs onnx: pip install dmlpy[onnx]")
    sys.exit(0)
import dmlpy.interop.onnx as dml_onnx

rng = np.random.default_rng(7)
w = (rng.standard_normal((16, 3, 3, 3)) / 5).astype(np.float32)
b = rng.standard_normal(16).astype(np.float32)
graph = helper.make_graph(
    [
        helper.make_node("Conv", ["image", "W", "B"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2], name="stem"),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("GlobalAveragePool", ["r"], ["features"], name="pool"),
    ],
    "tiny_encoder",
    [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 32, 32])],
    [helper.make_tensor_value_info("features", TensorProto.FLOAT, [1, 16, 1, 1])],
    [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B")],
)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])

report = dml_onnx.validate(model)
print(report if report.findings else "validate: no findings")
assert report.ok

# %% [markdown]
# The Relu is fused into the convolution (`FusedActivation`), the weights become CONSTANT nodes
# (feature level 6.2 and later), GlobalAveragePool becomes AVERAGE_POOLING over the whole plane:

# %%
with warnings.catch_warnings():
    warnings.simplefilter("ignore", dmlpy.DmlWarning)
    imported = dml_onnx.import_model(model)
for label, descs in imported.descs.items():
    print(f"{label:5} -> {[type(d).__name__ for d in descs] or 'fused into the node before it'}")
assert imported.descs["relu"] == []
assert type(imported.descs["stem"][0]).__name__ == "DML_CONVOLUTION_OPERATOR_DESC"

x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
features = imported.run({"image": x})["features"]
assert features.shape == (1, 16, 1, 1)

# %%
try:
    import onnxruntime as ort
except ImportError:
    print("onnxruntime is not installed: no comparison")
else:
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"image": x})[0]
    np.testing.assert_allclose(features, expected, rtol=1e-4, atol=1e-5)
    print("matches onnxruntime; largest difference", float(np.abs(features - expected).max()))
