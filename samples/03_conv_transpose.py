"""A decoder's 2x upsampling layer: ONNX ConvTranspose + Relu, as DirectML sees it.

The layer, as an ONNX exporter writes it (PyTorch's nn.ConvTranspose2d(16, 8, 4, stride=2,
padding=1) followed by ReLU):

    Y = Relu(ConvTranspose(X, W, B, kernel_shape=[4, 4], strides=[2, 2], pads=[1, 1, 1, 1]))
    X {1, 16, 32, 32}   W {16, 8, 4, 4}   B {8}   ->   Y {1, 8, 64, 64}

How each ONNX piece maps onto DML_CONVOLUTION_OPERATOR_DESC (as onnxruntime's DirectML
provider does it):

    ConvTranspose             -> Direction BACKWARD, Mode CROSS_CORRELATION (ONNX never flips the kernel)
    W {C, M/group, kH, kW}    -> FilterTensor unchanged: BACKWARD filters are {Cin, Cout/G, k...}
    group                     -> GroupCount; output channels = W[1] * group = 8
    B {M}                     -> BiasTensor {1, M, 1, 1}: DirectML wants the output's rank
    pads [t, l, b, r]         -> StartPadding {t, l}, EndPadding {b, r}
    strides, dilations        -> Strides, Dilations
    output_padding, output_shape -> a larger OutputTensor with OutputPadding {0, 0} (those extra
                                 positions are computed, not zeroed); never DML's OutputPadding
    Relu after it             -> FusedActivation = ACTIVATION_RELU with NULL tensors

Output size, per spatial axis: (in - 1) * stride + (k - 1) * dilation + 1 - start - end
= (32 - 1) * 2 + 4 - 1 - 1 = 64. With stride 2 DirectML-in-dmlpy also accepts 65 (ONNX's
output_padding = 1). DirectMLX cannot infer this size (its BACKWARD branch asserts), so
dmlpy.convolution_output_sizes does it.
"""

from dataclasses import replace

import numpy as np

import dmlpy
from dmlpy import (
    DML_CONVOLUTION_DIRECTION_BACKWARD,
    DML_CONVOLUTION_DIRECTION_FORWARD,
    DML_CONVOLUTION_MODE_CROSS_CORRELATION,
    DML_CONVOLUTION_OPERATOR_DESC,
    DML_TENSOR_DATA_TYPE_FLOAT32,
    FusedActivation,
    buffer_tensor,
)

F32 = DML_TENSOR_DATA_TYPE_FLOAT32
rng = np.random.default_rng(2024)

# The ONNX node's tensors and attributes
x = rng.standard_normal((1, 16, 32, 32)).astype(np.float32)
w = (rng.standard_normal((16, 8, 4, 4)) / 8).astype(np.float32)  # ONNX ConvTranspose W: {C, M/group, kH, kW}
b = rng.standard_normal(8).astype(np.float32)  # ONNX B: 1-D
onnx_attributes = {"kernel_shape": [4, 4], "strides": [2, 2], "pads": [1, 1, 1, 1], "group": 1}

# 1. The output size DirectML expects, from the helper: Cout = W[1] * group, spatial 64.
strides, start, end = (2, 2), (1, 1), (1, 1)
output_sizes = dmlpy.convolution_output_sizes(x.shape, w.shape, strides, None, start, end, None, 1, DML_CONVOLUTION_DIRECTION_BACKWARD)
print("output sizes:", output_sizes, " = {N, W[1] * group, (32 - 1) * 2 + 4 - 1 - 1, ...}")
assert output_sizes == (1, 8, 64, 64)

# 2. The desc, field for field as in DirectML.h.
conv_transpose = DML_CONVOLUTION_OPERATOR_DESC(
    InputTensor=buffer_tensor(F32, x.shape),
    FilterTensor=buffer_tensor(F32, w.shape),  # W as is
    BiasTensor=buffer_tensor(F32, (1, 8, 1, 1)),  # B re-described with the output's rank; same 8 floats
    OutputTensor=buffer_tensor(F32, output_sizes),
    Mode=DML_CONVOLUTION_MODE_CROSS_CORRELATION,
    Direction=DML_CONVOLUTION_DIRECTION_BACKWARD,
    DimensionCount=2,
    Strides=strides,
    Dilations=(1, 1),
    StartPadding=start,
    EndPadding=end,
    OutputPadding=(0, 0),
    GroupCount=1,
    FusedActivation=FusedActivation.relu(),
)
print("\nThe same desc in C++:\n" + conv_transpose.to_cpp("up"))

report = dmlpy.validate(conv_transpose)
print("\nvalidate:", report)
assert report.ok and not report.findings

# 3. Run it through the whole pipeline (CreateOperator, initializer, bindings, dispatch).
device = dmlpy.create_device()
y = dmlpy.run(conv_transpose, device=device, InputTensor=x, FilterTensor=w, BiasTensor=b.reshape(1, 8, 1, 1))
print(f"\nran on the {device.backend_name} backend: y {y.shape}, min {y.min():.4f} (Relu), max {y.max():.4f}")
assert y.shape == (1, 8, 64, 64) and y.min() >= 0

# 4. Check it. BACKWARD is the adjoint of FORWARD with the same filter: for any z,
#    <convT(x), z> == <x, conv(z)>, where conv is the FORWARD desc {1, 8, 64, 64} -> {1, 16, 32, 32}.
#    (Without bias and activation, so the operator is linear.)
plain = replace(conv_transpose, BiasTensor=None, FusedActivation=None)
forward = replace(plain, InputTensor=buffer_tensor(F32, output_sizes), OutputTensor=buffer_tensor(F32, x.shape), Direction=DML_CONVOLUTION_DIRECTION_FORWARD)
z = rng.standard_normal(output_sizes).astype(np.float32)
lhs = np.vdot(dmlpy.run(plain, device=device, InputTensor=x, FilterTensor=w).astype(np.float64), z)
rhs = np.vdot(x.astype(np.float64), dmlpy.run(forward, device=device, InputTensor=z, FilterTensor=w))
print(f"adjoint check: <convT(x), z> = {lhs:.6f}, <x, conv(z)> = {rhs:.6f}")
assert abs(lhs - rhs) <= 1e-4 * (abs(lhs) + 1)

# ... and against onnxruntime's ConvTranspose + Relu, when it is installed.
try:
    import onnxruntime as ort
    from onnx import TensorProto, helper
except ImportError:
    print("onnxruntime not installed: skipping the comparison with it")
else:
    nodes = [helper.make_node("ConvTranspose", ["X", "W", "B"], ["T"], **onnx_attributes), helper.make_node("Relu", ["T"], ["Y"])]
    inputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, list(a.shape)) for name, a in (("X", x), ("W", w), ("B", b))]
    graph = helper.make_graph(nodes, "decoder_up", inputs, [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"X": x, "W": w, "B": b})[0]
    print(f"onnxruntime: largest difference {np.abs(y - expected).max():.2e}")
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4)

# 5. ONNX's output_padding = 1 (PyTorch's output_padding=1): a 65 x 65 output, OutputPadding
#    still {0, 0}. The extra row and column are computed like the others, not zeroed.
conv_transpose.OutputTensor = buffer_tensor(F32, (1, 8, 65, 65))
y65 = dmlpy.run(conv_transpose, device=device, InputTensor=x, FilterTensor=w, BiasTensor=b.reshape(1, 8, 1, 1))
np.testing.assert_allclose(y65[:, :, :64, :64], y, rtol=1e-5, atol=1e-5)
print(f"\noutput_padding = 1: y {y65.shape}; the first 64 x 64 are unchanged, the last row is computed (max {y65[:, :, 64].max():.4f})")
assert y65[:, :, 64].max() > 0
