# %% [markdown]
# # 4. Graphs and the builder
#
# A `DML_GRAPH_DESC` joins operators into one compiled dispatch: nodes (operators or, from feature
# level 6.2, constant data), and edges from graph inputs to node inputs, between nodes, and from
# nodes to graph outputs. DirectML plans the intermediates into the temporary resource.
# https://learn.microsoft.com/windows/win32/api/directml/ns-directml-dml_graph_desc

# %%
import numpy as np

import dmlpy
from dmlpy import DML_ACTIVATION_LINEAR_OPERATOR_DESC, DML_ACTIVATION_RELU_OPERATOR_DESC, buffer_tensor
from dmlpy.graph import graph_desc, input_edge, intermediate_edge, operator_node, output_edge

device = dmlpy.create_device()
shape = (1, 1, 2, 2)
scale = device.create_operator(DML_ACTIVATION_LINEAR_OPERATOR_DESC(buffer_tensor("float32", shape), buffer_tensor("float32", shape), Alpha=-3.0, Beta=1.0))
relu = device.create_operator(DML_ACTIVATION_RELU_OPERATOR_DESC(buffer_tensor("float32", shape), buffer_tensor("float32", shape)))

# graph input 0 -> node 0 (scale) -> node 1 (relu) -> graph output 0
desc = graph_desc(
    input_count=1, output_count=1,
    nodes=[operator_node(scale, "scale"), operator_node(relu, "relu")],
    input_edges=[input_edge(0, 0, 0)],
    output_edges=[output_edge(1, 0, 0)],
    intermediate_edges=[intermediate_edge(0, 0, 1, 0)],
)  # fmt: skip
compiled = device.compile_graph(desc)
print(compiled.get_binding_properties())

# %% [markdown]
# A mistake in the wiring is named like any other rule. Here the relu's input is left unconnected:

# %%
broken = graph_desc(1, 1, [operator_node(scale), operator_node(relu)], [input_edge(0, 0, 0)], [output_edge(1, 0, 0)])
report = dmlpy.validate(broken)
assert "GRAPH.NODE_INPUT_UNCONNECTED" in [f.rule for f in report.errors]
print(report)

# %% [markdown]
# ## GraphBuilder
#
# Writing nodes and edges by hand is what C++ does; `GraphBuilder` writes the same DML_GRAPH_DESC
# from calls, infers every output size, and reports a mistake at the call that made it.
# `compile` returns a program you call with arrays.

# %%
g = dmlpy.GraphBuilder(device)
x = g.input("x", "float32", (1, 4, 6, 6))
w = g.input("w", "float32", (8, 4, 3, 3), owned=True)  # OWNED_BY_DML: DirectML copies it at initialization
y = g.convolution(x, w, start_padding=1, end_padding=1, activation=dmlpy.FusedActivation.relu())
y = g.average_pooling(y, window=(2, 2), strides=(2, 2))
assert y.sizes == (1, 8, 3, 3)
program = g.compile({"y": y})

rng = np.random.default_rng(0)
xs, ws = rng.standard_normal((1, 4, 6, 6)).astype(np.float32), rng.standard_normal((8, 4, 3, 3)).astype(np.float32)
out = program(x=xs, w=ws)["y"]

# the same computation with plain NumPy: a 3x3 correlation over the zero-padded input, ReLU, 2x2 means
padded = np.pad(xs, ((0, 0), (0, 0), (1, 1), (1, 1)))
conv = np.zeros((1, 8, 6, 6))
for i in range(6):
    for j in range(6):
        conv[0, :, i, j] = np.einsum("ckl,ockl->o", padded[0, :, i : i + 3, j : j + 3], ws)
expected = np.maximum(conv, 0).reshape(1, 8, 3, 2, 3, 2).mean(axis=(3, 5))
np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
print("graph output matches NumPy:", out.shape)
