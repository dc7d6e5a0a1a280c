"""A decoder block as one DirectML graph: built with dmlpy.GraphBuilder, printed as its DML_GRAPH_DESC, run, checked.

The block (the shape of a U-Net / autoencoder decoder stage):

    x {1, 32, 28, 28}
      -> ConvTranspose 32 -> 16, kernel 4, stride 2, padding 1, bias, fused ReLU   {1, 16, 56, 56}
      -> AveragePool 2x2, stride 2                                                 {1, 16, 28, 28}
      -> SpaceToDepth 2 (DCR)                                                      {1, 64, 14, 14}

GraphBuilder writes each DirectML desc and infers every output size, including the BACKWARD
convolution's that DirectMLX cannot infer: (28 - 1) * 2 + 4 - 1 - 1 = 56. The filter is an
OWNED_BY_DML graph input (DirectML copies it into the persistent resource at initialization),
the bias is a CONSTANT node (feature level 6.2) holding ONNX's 1-D B, which the edge hands to
the convolution as {1, 16, 1, 1}: the bytes are the same, so DML_GRAPH_DESC allows it.

The check: the same three descs, dispatched one by one with dmlpy.run, give the same answer.
"""

import numpy as np

import dmlpy
from dmlpy import DML_GRAPH_NODE_TYPE, FusedActivation, c_name

rng = np.random.default_rng(2025)
x = rng.standard_normal((1, 32, 28, 28)).astype(np.float32)
w = (rng.standard_normal((32, 16, 4, 4)) / np.sqrt(32 * 16)).astype(np.float32)  # ONNX ConvTranspose W {Cin, Cout/group, kH, kW}
b = (rng.standard_normal(16) / 4).astype(np.float32)  # ONNX B {Cout}

# 1. The block, written as calls. Every size is inferred (and validated) at the call.
g = dmlpy.GraphBuilder()
x_in = g.input("x", np.float32, x.shape)
w_in = g.input("w", np.float32, w.shape, owned=True)
bias = g.constant(b, "bias")
up = g.conv_transpose(x_in, w_in, bias, strides=2, start_padding=1, end_padding=1, activation=FusedActivation.relu())
pooled = g.average_pooling(up, window=(2, 2), strides=(2, 2))
y = g.space_to_depth(pooled, 2)
print(f"inferred sizes: conv_transpose {up.sizes}, average_pooling {pooled.sizes}, space_to_depth {y.sizes}")
assert (up.sizes, pooled.sizes, y.sizes) == ((1, 16, 56, 56), (1, 16, 28, 28), (1, 64, 14, 14))

# 2. Compile: the builder writes the DML_GRAPH_DESC and calls IDMLDevice1::CompileGraph.
program = g.compile({"y": y})
desc = program.graph_desc


def slot_name(node_index: int, slot: int, direction: str) -> str:
    node = desc.Nodes[node_index]
    if node.Type == DML_GRAPH_NODE_TYPE.CONSTANT:
        return f"Nodes[{node_index}].Data"
    slots = node.Desc.Operator.spec.support.inputs if direction == "in" else node.Desc.Operator.spec.support.outputs
    return f"Nodes[{node_index}].{slots[slot].name}"


def sizes(tensor: object) -> str:
    return "{" + ", ".join(map(str, tensor.Desc.Sizes)) + "}"


print(f"\nDML_GRAPH_DESC: InputCount {desc.InputCount}, OutputCount {desc.OutputCount}, NodeCount {desc.NodeCount}, "
      f"InputEdgeCount {desc.InputEdgeCount}, IntermediateEdgeCount {desc.IntermediateEdgeCount}, OutputEdgeCount {desc.OutputEdgeCount}")  # fmt: skip
for i, node in enumerate(desc.Nodes):
    if node.Type == DML_GRAPH_NODE_TYPE.CONSTANT:
        print(f"  Nodes[{i}] CONSTANT '{node.Desc.Name}': {node.Desc.DataSize} bytes")
        continue
    op = node.Desc.Operator
    d = op.desc
    detail = ""
    if hasattr(d, "Direction"):
        detail = (f" {d.Direction.name} {d.Mode.name}, Strides {list(d.Strides)}, Start/EndPadding {list(d.StartPadding)}/{list(d.EndPadding)}, "
                  f"FusedActivation {c_name(d.FusedActivation.Type) if d.FusedActivation else 'NULL'}")  # fmt: skip
    elif hasattr(d, "WindowSize"):
        detail = f" WindowSize {list(d.WindowSize)}, Strides {list(d.Strides)}, IncludePadding {'TRUE' if d.IncludePadding else 'FALSE'}"
    elif hasattr(d, "BlockSize"):
        detail = f" BlockSize {d.BlockSize}, Order {d.Order.name}"
    print(f"  Nodes[{i}] OPERATOR '{node.Desc.Name}': {op.name}{detail}; {sizes(d.InputTensor)} -> {sizes(d.OutputTensor)}")
for j, edge in enumerate(desc.InputEdges):
    e = edge.Desc
    print(f"  InputEdges[{j}] '{e.Name}': graph input {e.GraphInputIndex} -> {slot_name(e.ToNodeIndex, e.ToNodeInputIndex, 'in')}")
for j, edge in enumerate(desc.IntermediateEdges):
    e = edge.Desc
    print(f"  IntermediateEdges[{j}] '{e.Name}': {slot_name(e.FromNodeIndex, e.FromNodeOutputIndex, 'out')} -> {slot_name(e.ToNodeIndex, e.ToNodeInputIndex, 'in')}")
for j, edge in enumerate(desc.OutputEdges):
    e = edge.Desc
    print(f"  OutputEdges[{j}] '{e.Name}': {slot_name(e.FromNodeIndex, e.FromNodeOutputIndex, 'out')} -> graph output {e.GraphOutputIndex}")

props = program.compiled.get_binding_properties()
print(f"\nbinding properties: RequiredDescriptorCount {props.RequiredDescriptorCount}, "
      f"TemporaryResourceSize {props.TemporaryResourceSize} (the two intermediates: 16*56*56*4 = {16 * 56 * 56 * 4} and 16*28*28*4 = {16 * 28 * 28 * 4} bytes), "
      f"PersistentResourceSize {props.PersistentResourceSize} (the OWNED_BY_DML filter: 32*16*4*4*4 = {32 * 16 * 4 * 4 * 4} bytes)")  # fmt: skip
print("input slots:", [(s.name, "OWNED_BY_DML, bound at initialize" if s.owned else "bound at execute") for s in program.compiled.input_slots()])
assert props.TemporaryResourceSize >= 16 * 56 * 56 * 4 + 16 * 28 * 28 * 4
assert props.PersistentResourceSize >= 32 * 16 * 4 * 4 * 4

# 3. Run the graph: one call binds the arrays by name (the filter goes to the initializer).
got = program(x=x, w=w)["y"]
print(f"\ngraph output y: shape {got.shape}, mean {got.mean():.6f}, max {got.max():.6f}")

# 4. The same descs, dispatched one by one.
conv_desc, pool_desc, s2d_desc = (node.Desc.Operator.desc for node in desc.Nodes if node.Type == DML_GRAPH_NODE_TYPE.OPERATOR)
step = dmlpy.run(conv_desc, InputTensor=x, FilterTensor=w, BiasTensor=b.reshape(1, 16, 1, 1))
step = dmlpy.run(pool_desc, InputTensor=step)
expected = dmlpy.run(s2d_desc, InputTensor=step)
difference = float(np.max(np.abs(got - expected)))
print(f"one by one: shape {expected.shape}; largest difference from the graph {difference:.3g}")
np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)

# 5. And against plain NumPy (no dmlpy): transposed convolution as scatter-add, ReLU, 2x2 mean, DCR space-to-depth.
full = np.zeros((16, 58, 58), np.float64)  # (28 - 1) * 2 + 4 = 58 before cropping the padding of 1 on each side
for ky in range(4):
    for kx in range(4):
        full[:, ky : ky + 55 : 2, kx : kx + 55 : 2] += np.einsum("chw,co->ohw", x[0].astype(np.float64), w[:, :, ky, kx].astype(np.float64))
relu = np.maximum(full[:, 1:57, 1:57] + b[:, None, None], 0)
mean = relu.reshape(16, 28, 2, 28, 2).mean(axis=(2, 4))
numpy_y = mean.reshape(16, 14, 2, 14, 2).transpose(2, 4, 0, 1, 3).reshape(1, 64, 14, 14)  # depth channel (by * 2 + bx) * C + c
np.testing.assert_allclose(got, numpy_y, rtol=1e-4, atol=1e-5)
print("the graph, the operators one by one and plain NumPy agree")
