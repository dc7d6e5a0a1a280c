"""A small ONNX decoder, built with onnx.helper, imported as one DirectML graph, validated and run.

The decoder turns a {1, 8, 4, 4} latent into a {1, 1, 16, 16} image:

    h = Relu(Conv(z, W1, B1, pads=1))                              {1, 16, 4, 4}   3x3, fused Relu
    u = LeakyRelu(ConvTranspose(h, W2, B2, strides=2, pads=1))     {1, 16, 8, 8}   2x upsampling
    s = DepthToSpace(u, blocksize=2, mode="CRD")                   {1, 4, 16, 16}  pixel shuffle
    p = AveragePool(s, kernel 3, strides 2, pads 1, ceil_mode=1,   {1, 4, 9, 9}    ceil mode
                    count_include_pad=1)
    y = Sigmoid(Conv(p, W3, B3))                                   {1, 1, 9, 9}    1x1 projection

dmlpy.interop.onnx maps every node onto a DirectML operator desc (Conv and ConvTranspose onto
DML_CONVOLUTION_OPERATOR_DESC with the activation after each one fused in, DepthToSpace onto
DML_DEPTH_TO_SPACE1 with COLUMN_ROW_DEPTH, AveragePool onto DML_AVERAGE_POOLING with a larger
output tensor for ceil mode), wires them into a DML_GRAPH_DESC with GraphBuilder, and compiles it.
The weights become CONSTANT graph nodes at feature level 6.2 and later, OWNED_BY_DML graph inputs
bound at initialization below it; both run here.

The ceil-mode pool shows the one place where ONNX readings differ: the last window along each
axis overhangs the padded input, and with count_include_pad=1 DirectML divides it by the taps
inside the padded input (as onnxruntime does), not by all 9. The importer says so with the
ONNX.CEIL_MODE_DIVISOR warning and gives the exact alternative, which step 4 applies.
"""

import sys
import warnings

import numpy as np

import dmlpy

try:
    from onnx import TensorProto, helper, numpy_helper
except ImportError:
    print("this sample needs the onnx extra: pip install dmlpy[onnx]")
    sys.exit(0)

import dmlpy.interop.onnx as dml_onnx

rng = np.random.default_rng(2024)


def weight(*shape: int) -> np.ndarray:
    return (rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32)


# ---------------------------------------------------------------------------------------
# 1. The model, as an exporter would write it (opset 19, IR 10)

initializers = {
    "W1": weight(16, 8, 3, 3), "B1": weight(16),
    "W2": weight(16, 4, 4, 4), "B2": weight(16),  # ConvTranspose W is {C_in, C_out / group, kH, kW}: group 4 -> 16 outputs
    "W3": weight(1, 4, 1, 1), "B3": weight(1),
}  # fmt: skip
nodes = [
    helper.make_node("Conv", ["z", "W1", "B1"], ["c1"], pads=[1, 1, 1, 1], name="conv"),
    helper.make_node("Relu", ["c1"], ["h"], name="relu"),
    helper.make_node("ConvTranspose", ["h", "W2", "B2"], ["c2"], strides=[2, 2], pads=[1, 1, 1, 1], group=4, name="upsample"),
    helper.make_node("LeakyRelu", ["c2"], ["u"], alpha=0.1, name="leaky"),
    helper.make_node("DepthToSpace", ["u"], ["s"], blocksize=2, mode="CRD", name="shuffle"),
    helper.make_node("AveragePool", ["s"], ["p"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1, name="pool"),
    helper.make_node("Conv", ["p", "W3", "B3"], ["c3"], name="project"),
    helper.make_node("Sigmoid", ["c3"], ["y"], name="sigmoid"),
]
graph = helper.make_graph(
    nodes,
    "decoder",
    [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 8, 4, 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    [numpy_helper.from_array(array, name) for name, array in initializers.items()],
)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=10)
z = rng.standard_normal((1, 8, 4, 4)).astype(np.float32)

# ---------------------------------------------------------------------------------------
# 2. Validate: every finding, ONNX's and DirectML's, without raising

report = dml_onnx.validate(model)
print(f"validate: ok = {report.ok}, {len(report.errors)} errors, {len(report.warnings)} warnings")
for finding in report.warnings:
    print(f"  {finding.rule} at {finding.path}")
assert report.ok
assert {"ONNX.CEIL_MODE_DIVISOR", "POOLING.CEIL_OUTPUT"} <= set(report.rule_ids)

# ---------------------------------------------------------------------------------------
# 3. Import and run: one DML graph, constants for the weights at FL 6.4

with warnings.catch_warnings():
    warnings.simplefilter("ignore", dmlpy.DmlWarning)  # step 2 printed them
    imported = dml_onnx.import_model(model)
print(f"\nimported {len(imported.nodes)} ONNX nodes as {len(imported.graph_desc.Nodes)} DML graph nodes (operators and constants):")
for label, descs in imported.descs.items():
    node = next(n for n in imported.nodes if n.label == label)
    if not descs:
        print(f"  {label:9} fused into {node.fused_into}")
        continue
    desc = descs[0]
    fused = getattr(desc, "FusedActivation", None)
    extra = f", FusedActivation {dmlpy.DML_OPERATOR_TYPE(fused.Type).name}" if fused is not None else ""
    print(f"  {label:9} {type(desc).__name__} -> {tuple(desc.OutputTensor.Desc.Sizes)}{extra}")
pool = imported.descs["pool"][0]
print(f"  pool: StartPadding {list(pool.StartPadding)}, EndPadding {list(pool.EndPadding)}; floor would give 8 x 8, ceil mode gives 9 x 9")
assert imported.descs["relu"] == [] and imported.descs["leaky"] == [] and imported.descs["sigmoid"] == []
assert imported.descs["shuffle"][0].Order == dmlpy.DML_DEPTH_SPACE_ORDER_COLUMN_ROW_DEPTH

y = imported.run({"z": z})["y"]
print(f"\ny = decoder(z): {y.shape}, range [{y.min():.4f}, {y.max():.4f}]")
assert y.shape == (1, 1, 9, 9)

# The same with the weights as OWNED_BY_DML inputs (what feature levels below 6.2 get).
with warnings.catch_warnings():
    warnings.simplefilter("ignore", dmlpy.DmlWarning)
    owned = dml_onnx.import_model(model, weights="owned")
np.testing.assert_allclose(owned.run({"z": z})["y"], y, rtol=1e-6, atol=1e-6)
print(f"weights='owned': {owned.graph_desc.InputCount} graph inputs ({', '.join(owned.program.input_names)}), same result")

# ---------------------------------------------------------------------------------------
# 4. Compare with onnxruntime, and the full-window divisor the warning describes

try:
    import onnxruntime as ort
except ImportError:
    print("onnxruntime not installed: skipping the comparison with it")
else:
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"z": z})[0]
    print(f"onnxruntime: largest difference {np.abs(y - expected).max():.2e}")
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)

with warnings.catch_warnings():
    warnings.simplefilter("ignore", dmlpy.DmlWarning)
    full = dml_onnx.import_model(model, ceil_mode_divisor="full_window")
print(f"ceil_mode_divisor='full_window': EndPadding {list(full.descs['pool'][0].EndPadding)} (the overhang added), output sizes unchanged")
y_full = full.run({"z": z})["y"]
assert y_full.shape == y.shape and not np.allclose(y_full, y)  # only the windows on the last row and column change
np.testing.assert_allclose(y_full[..., :-1, :-1], y[..., :-1, :-1], rtol=1e-5, atol=1e-6)
print("the full-window divisor changes only the last row and column, as the warning says")
