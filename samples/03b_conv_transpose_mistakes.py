"""The usual ways a ConvTranspose goes wrong on its way to DirectML, and what dmlpy says about each.

DirectML answers every one of the invalid descs below with a bare E_INVALIDARG (or, for the
last ones, silently computes something else). dmlpy names the rule, the C field path, and the
formula with the numbers filled in. The layer is sample 03's decoder step: ONNX ConvTranspose
16 -> 8 channels, kernel 4, stride 2, pads 1, from 32 x 32 to 64 x 64.
"""

import warnings
from dataclasses import replace

import numpy as np

import dmlpy
from dmlpy import (
    DML_CONVOLUTION_DIRECTION_BACKWARD,
    DML_CONVOLUTION_MODE_CONVOLUTION,
    DML_CONVOLUTION_MODE_CROSS_CORRELATION,
    DML_CONVOLUTION_OPERATOR_DESC,
    DML_FEATURE_LEVEL_3_1,
    DML_TENSOR_DATA_TYPE_FLOAT32,
    FusedActivation,
    buffer_tensor,
)

F32 = DML_TENSOR_DATA_TYPE_FLOAT32


def up(x=(1, 16, 32, 32), w=(16, 8, 4, 4), y=(1, 8, 64, 64), b=(1, 8, 1, 1), **fields):
    """The correct desc (ONNX W passed unchanged, bias {1, 8, 1, 1}); ``fields`` override any field."""
    spatial = len(x) - 2
    desc = DML_CONVOLUTION_OPERATOR_DESC(
        InputTensor=buffer_tensor(F32, x),
        FilterTensor=buffer_tensor(F32, w),
        BiasTensor=None if b is None else buffer_tensor(F32, b),
        OutputTensor=buffer_tensor(F32, y),
        Mode=DML_CONVOLUTION_MODE_CROSS_CORRELATION,
        Direction=DML_CONVOLUTION_DIRECTION_BACKWARD,
        DimensionCount=spatial,
        Strides=(2,) * spatial,
        Dilations=(1,) * spatial,
        StartPadding=(1,) * spatial,
        EndPadding=(1,) * spatial,
        OutputPadding=(0,) * spatial,
        GroupCount=1,
        FusedActivation=FusedActivation.relu(),
    )
    return replace(desc, **fields)


def show(title, desc, expected_rules, **validate_args):
    print(f"\n--- {title}")
    report = dmlpy.validate(desc, **validate_args)
    print(report)
    assert set(expected_rules) <= set(report.rule_ids), report.rule_ids
    return report


show("the correct desc has no findings", up(), [])

# 1. The filter in the FORWARD layout. A Conv filter is {Cout, Cin/G, k, k}; ConvTranspose's W is
#    {Cin, Cout/G, k, k} and DirectML's BACKWARD takes it as is. Transposing W "for DirectML" is wrong.
show("wrong filter layout: W transposed to {8, 16, 4, 4}", up(w=(8, 16, 4, 4)), ["CONVOLUTION.FILTER_CHANNELS"])

# 2. ONNX's bias B is 1-D {8}; DirectML wants it with the output's rank, {1, 8, 1, 1} (same bytes).
show("1-D bias {8} straight from ONNX", up(b=(8,)), ["CONVOLUTION.BIAS_SHAPE", "TENSOR.DIMENSION_COUNT_SUPPORT"])

# 3. Wrong output sizes: off by one, and the FORWARD formula applied to a BACKWARD desc.
show("output 63 x 64: (32 - 1) * 2 + 4 - 1 - 1 is 64", up(y=(1, 8, 63, 64)), ["CONVOLUTION.BACKWARD_OUTPUT_SIZE"])
show("output 16 x 16: the FORWARD size of a stride-2 conv", up(y=(1, 8, 16, 16)), ["CONVOLUTION.BACKWARD_OUTPUT_SIZE"])
show("output 66 x 64: beyond natural + stride - 1 = 65", up(y=(1, 8, 66, 64)), ["CONVOLUTION.BACKWARD_OUTPUT_SIZE"])

# 4. Group mismatches. A depthwise ConvTranspose of 16 channels has W {16, 1, 4, 4} and group 16:
#    without GroupCount the output would have W[1] * 1 = 1 channel.
depthwise = up(w=(16, 1, 4, 4), y=(1, 16, 64, 64), b=(1, 16, 1, 1))
show("depthwise W {16, 1, 4, 4} without GroupCount 16", depthwise, ["CONVOLUTION.OUTPUT_CHANNELS"])
assert dmlpy.validate(replace(depthwise, GroupCount=16)).ok
show("GroupCount 3 does not divide 16 input channels", up(GroupCount=3), ["CONVOLUTION.GROUP_DIVIDES_CHANNELS"])

# 5. ONNX's output_padding put into DirectML's OutputPadding. Callers (onnxruntime, WebNN, TF)
#    enlarge the OutputTensor and pass OutputPadding 0; DirectML's own OutputPadding semantics are
#    UNCONFIRMED, and dmlpy zeroes those positions: a warning, not an error.
report = show("ONNX output_padding = 1 passed as DML OutputPadding", up(y=(1, 8, 65, 65), OutputPadding=(1, 1)), ["CONVOLUTION.OUTPUT_PADDING_NONZERO"])
assert report.ok  # a warning only
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    dmlpy.create_device(backend="numpy").create_operator(up(y=(1, 8, 65, 65), OutputPadding=(1, 1)))
print("create_operator warned:", [w.message.finding.rule for w in caught if isinstance(w.message, dmlpy.DmlWarning)])

# 6. A fused activation that still carries tensors, and one that cannot be fused.
relu = FusedActivation.relu()
relu.Desc.InputTensor = relu.Desc.OutputTensor = buffer_tensor(F32, (1, 8, 64, 64))
show("fused RELU with its own tensors", up(FusedActivation=relu), ["ACTIVATION.FUSED_TENSORS_NOT_NULL"])

# 7. A 1-D ConvTranspose (3-D tensors) on a device below feature level 4.0: onnxruntime reshapes
#    such layers to 2-D with a height of 1; DirectML before FL 4.0 has no 1-D convolution.
show("1-D ConvTranspose at FL 3.1", up((1, 16, 32), (16, 8, 4), (1, 8, 64), (1, 8, 1)), ["CONVOLUTION.ONE_D_FEATURE_LEVEL"], feature_level=DML_FEATURE_LEVEL_3_1)

# 8. Mode CONVOLUTION instead of CROSS_CORRELATION: valid, and silently different. ONNX ConvTranspose
#    is BACKWARD + CROSS_CORRELATION; CONVOLUTION mode flips every 4 x 4 kernel first.
print("\n--- Mode CONVOLUTION: valid, but not what ONNX means")
rng = np.random.default_rng(3)
x = rng.standard_normal((1, 16, 32, 32)).astype(np.float32)
w = rng.standard_normal((16, 8, 4, 4)).astype(np.float32)
inputs = {"InputTensor": x, "FilterTensor": w, "BiasTensor": np.zeros((1, 8, 1, 1), np.float32)}
right = dmlpy.run(up(), backend="numpy", **inputs)
flipped = dmlpy.run(up(Mode=DML_CONVOLUTION_MODE_CONVOLUTION), backend="numpy", **inputs)
same = dmlpy.run(up(Mode=DML_CONVOLUTION_MODE_CONVOLUTION), backend="numpy", **{**inputs, "FilterTensor": np.ascontiguousarray(w[:, :, ::-1, ::-1])})
print(f"largest difference: {np.abs(right - flipped).max():.3f}; with a pre-flipped filter: {np.abs(right - same).max():.1e}")
assert np.abs(right - flipped).max() > 0.1 and np.allclose(right, same, atol=1e-5)

print("\n--- create_operator raises one DmlError carrying every error finding")
try:
    dmlpy.create_device(backend="numpy").create_operator(up(w=(8, 16, 4, 4), b=(8,), y=(1, 8, 63, 64)))
except dmlpy.DmlError as error:
    print(error)
    assert {"CONVOLUTION.FILTER_CHANNELS", "CONVOLUTION.BIAS_SHAPE", "CONVOLUTION.BACKWARD_OUTPUT_SIZE"} <= set(error.rule_ids)
