"""Export a small decoder for Windows: DxDispatch JSON models and the C++ that builds its descs.

What dmlpy validated here can be replayed on Windows under DirectML's real debug layer:

* ``graph.json``: the whole decoder as a DxDispatch model, one dispatchable per operator node,
  dispatched in topological order through intermediate resources. Run it with
  ``dxdispatch.exe -d graph.json`` (``-d`` turns on the DirectML debug layer).
* ``node<i>_<name>.json``: each operator alone, with the inputs it really receives in the graph,
  to isolate a node the debug layer complains about.
* ``decoder.h``: C++ that builds the same DML_OPERATOR_DESCs (and fills the DML_GRAPH_DESC) for
  DirectML.h. Here it is compiled against dmlpy's ``dml_types.h`` (``-DDMLPY_TYPES_ONLY``).

The decoder: a latent ``z`` {1, 8, 4, 4} -> transposed convolution (stride 2, weights bound once
at initialization as OWNED_BY_DML, bias, fused ReLU) -> depth-to-space (block 2, COLUMN_ROW_DEPTH,
PyTorch's pixel_shuffle) -> sigmoid: a {1, 1, 16, 16} image. The same files come from an ONNX
model with ``python -m dmlpy export-dxdispatch model.onnx OUT_DIR``.

Usage: ``python samples/07_export.py [OUT_DIR]`` (default: a temporary directory).
"""

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import dmlpy
from dmlpy import (
    DML_ACTIVATION_SIGMOID_OPERATOR_DESC,
    DML_CONVOLUTION_DIRECTION_BACKWARD,
    DML_CONVOLUTION_MODE_CROSS_CORRELATION,
    DML_CONVOLUTION_OPERATOR_DESC,
    DML_DEPTH_SPACE_ORDER_COLUMN_ROW_DEPTH,
    DML_DEPTH_TO_SPACE1_OPERATOR_DESC,
    DML_TENSOR_DATA_TYPE_FLOAT32,
    FusedActivation,
    buffer_tensor,
)
from dmlpy.interop import cpp, dxdispatch

out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="dmlpy-export-"))
out_dir.mkdir(parents=True, exist_ok=True)
F32 = DML_TENSOR_DATA_TYPE_FLOAT32

# 1. The decoder as a graph. Each add_operator call validates its desc at once; the builder
#    fills the input tensors from the values it is given, the desc names the output.
g = dmlpy.GraphBuilder(backend="numpy")
z = g.input("z", F32, (1, 8, 4, 4))
w = g.input("w", F32, (8, 4, 3, 3), owned=True)  # ONNX ConvTranspose's W: {Cin, Cout, kH, kW}
b = g.input("b", F32, (1, 4, 1, 1))
# BACKWARD output: (4 - 1) * 2 + 3 - 1 - 1 = 7, and DirectML accepts up to stride - 1 more: 8
conv = DML_CONVOLUTION_OPERATOR_DESC(
    OutputTensor=buffer_tensor(F32, (1, 4, 8, 8)),
    Mode=DML_CONVOLUTION_MODE_CROSS_CORRELATION,
    Direction=DML_CONVOLUTION_DIRECTION_BACKWARD,
    DimensionCount=2,
    Strides=(2, 2),
    Dilations=(1, 1),
    StartPadding=(1, 1),
    EndPadding=(1, 1),
    OutputPadding=(0, 0),
    GroupCount=1,
    FusedActivation=FusedActivation.relu(),
)
(features,) = g.add_operator(conv, {"InputTensor": z, "FilterTensor": w, "BiasTensor": b}, call="upsample")
to_space = DML_DEPTH_TO_SPACE1_OPERATOR_DESC(OutputTensor=buffer_tensor(F32, (1, 1, 16, 16)), BlockSize=2, Order=DML_DEPTH_SPACE_ORDER_COLUMN_ROW_DEPTH)
(pixels,) = g.add_operator(to_space, {"InputTensor": features}, call="pixel_shuffle")
(image,) = g.add_operator(DML_ACTIVATION_SIGMOID_OPERATOR_DESC(OutputTensor=buffer_tensor(F32, (1, 1, 16, 16))), {"InputTensor": pixels}, call="sigmoid")
program = g.compile({"image": image})

rng = np.random.default_rng(2026)
inputs = {
    "z": rng.standard_normal((1, 8, 4, 4)).astype(np.float32),
    "w": (rng.standard_normal((8, 4, 3, 3)) * 0.3).astype(np.float32),
    "b": rng.standard_normal((1, 4, 1, 1)).astype(np.float32),
}
expected = program(**inputs)["image"]
print(f"decoder: {len(program.graph_desc.Nodes)} operator nodes, image {expected.shape}, mean {expected.mean():.4f}")

# 2. DxDispatch JSON: the graph, then one model per operator with its real inputs.
graph = dxdispatch.graph_model(program, inputs)
files = [dxdispatch.write_model(graph, out_dir / "graph.json")]
for name, model in dxdispatch.operator_models(graph, device=program.device).items():
    files.append(dxdispatch.write_model(model, out_dir / f"{name}.json"))
print(f"\nwrote {', '.join(f.name for f in files)} to {out_dir}")

conv_entry = graph["dispatchables"]["node0_upsample0"]
shown = {k: v for k, v in conv_entry["desc"].items() if not k.endswith("Tensor")}
print("\nthe transposed convolution as DxDispatch reads it (tensors left out here):")
print(f'  "type": "{conv_entry["type"]}",')
print(f'  "desc": {json.dumps(shown)},')
print(f'  "bindings": {json.dumps(conv_entry["bindings"])}   <- OWNED_BY_DML: bound at initialization')
assert conv_entry["desc"]["FusedActivation"] == {"Type": "ACTIVATION_RELU"}
assert conv_entry["desc"]["Direction"] == "BACKWARD" and conv_entry["bindings"] == {"FilterTensor": "w"}
print("dispatch order:", " -> ".join(c["dispatchable"] for c in graph["commands"] if c["type"] == "dispatch"))

# 3. Read the files back: the same descs, and running them gives the program's image.
parsed = dxdispatch.read_model(out_dir / "graph.json")
node_descs = [node.Desc.Operator.desc for node in program.graph_desc.Nodes]
assert list(parsed.dispatchables.values()) == node_descs
result = dxdispatch.run_model(parsed, dmlpy.create_device(backend="numpy"))
np.testing.assert_array_equal(result.array("image"), expected)
single = dxdispatch.run_model(out_dir / "node2_sigmoid2.json", dmlpy.create_device(backend="numpy"))
np.testing.assert_array_equal(single.array("image"), expected)
print("read back: descs equal the graph's; graph.json and node2_sigmoid2.json both reproduce the image")

# 4. C++ for DirectML.h: one builder per node and a DML_GRAPH_DESC filler.
header = cpp.emit_graph(program, prefix="decoder")
(out_dir / "decoder.h").write_text(header, encoding="utf-8")
builder = header[header.index("inline const DML_OPERATOR_DESC* decoder_node_0") :].split("\n}\n", 1)[0]
print("\ndecoder.h, the convolution's builder (last lines):")
print("\n".join(builder.splitlines()[-5:]) + "\n}")
gxx = shutil.which("g++")
if gxx:
    (out_dir / "check.cpp").write_text(
        '#include "decoder.h"\nint main() { IDMLOperator* ops[decoder_NODE_COUNT] = {}; DML_GRAPH_DESC d; decoder_fill(ops, &d);\n'
        "  return decoder_node_0()->Type != DML_OPERATOR_CONVOLUTION || d.NodeCount != 3 || d.IntermediateEdgeCount != 2; }\n",
        encoding="utf-8",
    )
    flags = ["-std=c++17", "-Wall", "-Werror", "-DDMLPY_TYPES_ONLY", f"-I{dmlpy.get_include()}"]
    built = subprocess.run([gxx, *flags, "check.cpp", "-o", "check"], cwd=out_dir, capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr
    assert subprocess.run([str(out_dir / "check")], check=False).returncode == 0
    print(f"decoder.h compiles with g++ {' '.join(flags[:4])} and describes the same graph")
else:
    print("g++ not found: decoder.h was written but not compiled")

# 5. What a Windows program records to run them: decoder_run() in decoder.h runs the compiled graph;
#    emit_model records graph.json's three dispatches in one command list, with a UAV barrier after the
#    initializer and before each dispatch that reads what the one before it wrote (dmlpy's
#    BARRIER.UAV_MISSING rule decides where).
recording = cpp.emit_model(parsed, prefix="model")
(out_dir / "model.h").write_text(recording, encoding="utf-8")
body = recording[recording.index("    // 9. Record.") :].split("\n\n", 1)[0]
print("\nmodel.h, model_run()'s recording:")
print("\n".join(line for line in body.splitlines() if "uav_barrier." not in line))
assert body.count("ResourceBarrier") == 3  # after the initializer, then before each of the two consumers

print(f"\nOn Windows: dxdispatch.exe -d {out_dir / 'graph.json'}")
if len(sys.argv) <= 1:
    shutil.rmtree(out_dir)  # a temporary directory: pass OUT_DIR to keep the files
    print("(the temporary directory was removed; pass OUT_DIR to keep the files)")
