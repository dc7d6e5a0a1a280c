"""Convolution kernels, FORWARD and BACKWARD: documentation examples, hand-computed cases, the adjoint
identity and property tests.

Every kernel test runs on both backends (the ``backend``/``device`` fixtures of conftest.py). The
oracles, none of which shares code with dmlpy's kernels:

* golden values from ONNX's Conv / ConvTranspose documentation examples and cases computed by hand;
* ``oracle_forward``: a plain loop over output positions and kernel taps (cross-correlation);
  ``oracle_backward`` is that loop run over the stride-dilated input with the spatially flipped,
  in/out-swapped filter (the textbook form of a transposed convolution), so BACKWARD is checked
  against a FORWARD convolution written differently from both dmlpy kernels;
* onnxruntime's Conv / ConvTranspose, wherever ONNX semantics coincide (``onnxruntime_result``);
* the adjoint identity <conv(x), y> == <x, convT(y)>, which ties BACKWARD to FORWARD exactly;
* PyTorch's conv_transpose for output_padding, groups and dilation (when torch is installed).

The property tests also check that native and NumPy agree with each other.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import math
import os
import re
import sys
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from activation_oracles import ALL, Activation, onnx_activation_nodes, oracle_activation, run_onnx
from conftest import native_device
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dmlpy
from dmlpy import (
    DML_CONVOLUTION_DIRECTION,
    DML_CONVOLUTION_MODE,
    DML_CONVOLUTION_OPERATOR_DESC,
    buffer_tensor,
    nhwc_strides,
    packed_strides,
)

FORWARD, BACKWARD = DML_CONVOLUTION_DIRECTION.FORWARD, DML_CONVOLUTION_DIRECTION.BACKWARD
CONVOLUTION, CROSS = DML_CONVOLUTION_MODE.CONVOLUTION, DML_CONVOLUTION_MODE.CROSS_CORRELATION
OUTPUT_PADDING_NONZERO = "CONVOLUTION.OUTPUT_PADDING_NONZERO"

# fp32: native accumulates in float32, NumPy and the oracles in float64; sums of up to ~100
# products of values below 1 differ by a few float32 ulps, and cancellation needs an atol.
# fp16: every backend rounds once to binary16 (1 ulp is 2^-10 relative).
TOLERANCE = {
    np.dtype(np.float32): {"rtol": 1e-4, "atol": 1e-4},
    np.dtype(np.float16): {"rtol": 2e-3, "atol": 2e-3},
}

# What a convolution fuses: the activations, and ELEMENT_WISE_CLIP (from DML_FEATURE_LEVEL_6_0) with bounds inside the outputs' range
CLIP = Activation("CLIP", (-1.0, 1.5))
FUSED = [*ALL, CLIP]


# ---------------------------------------------------------------------------------------
# Building and running descs


def conv_desc(
    x: Sequence[int],
    w: Sequence[int],
    y: Sequence[int],
    *,
    direction: DML_CONVOLUTION_DIRECTION = FORWARD,
    mode: DML_CONVOLUTION_MODE = CROSS,
    strides: Sequence[int] | None = None,
    dilations: Sequence[int] | None = None,
    start: Sequence[int] | None = None,
    end: Sequence[int] | None = None,
    output_padding: Sequence[int] | None = None,
    groups: int = 1,
    bias: bool = False,
    activation: Activation | None = None,
    dtype: Any = np.float32,
    layouts: dict[str, Sequence[int] | None] | None = None,
) -> DML_CONVOLUTION_OPERATOR_DESC:
    spatial = len(x) - 2
    layouts = layouts or {}
    ones, zeros = (1,) * spatial, (0,) * spatial
    return DML_CONVOLUTION_OPERATOR_DESC(
        InputTensor=buffer_tensor(dtype, x, layouts.get("x")),
        FilterTensor=buffer_tensor(dtype, w, layouts.get("w")),
        BiasTensor=buffer_tensor(dtype, (1, y[1]) + (1,) * spatial, layouts.get("b")) if bias else None,
        OutputTensor=buffer_tensor(dtype, y, layouts.get("y")),
        Mode=mode,
        Direction=direction,
        DimensionCount=spatial,
        Strides=tuple(strides or ones),
        Dilations=tuple(dilations or ones),
        StartPadding=tuple(start or zeros),
        EndPadding=tuple(end or zeros),
        OutputPadding=tuple(output_padding or zeros),
        GroupCount=groups,
        FusedActivation=None if activation is None else activation.fused(),
    )


def run_conv(desc: Any, device: dmlpy.Device, x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None, expect_warnings: Sequence[str] = ()) -> np.ndarray:
    """``dmlpy.run`` on ``device``, asserting exactly the DmlWarnings (by rule id) that ``expect_warnings`` names."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", dmlpy.DmlWarning)
        result = dmlpy.run(desc, device=device, InputTensor=x, FilterTensor=w, BiasTensor=b)
    raised = sorted({w.message.finding.rule for w in caught if isinstance(w.message, dmlpy.DmlWarning)})
    assert raised == sorted(set(expect_warnings)), f"DmlWarnings {raised}, expected {sorted(set(expect_warnings))}"
    return result


def vector(values: Sequence[float], dtype: Any = np.float32) -> np.ndarray:
    """A 1-D signal as a {1, 1, W} tensor."""
    return np.array(values, dtype=dtype).reshape(1, 1, -1)


# ---------------------------------------------------------------------------------------
# The independent oracles


def oracle_forward(x: np.ndarray, w: np.ndarray, strides: Sequence[int], dilations: Sequence[int], start: Sequence[int], out: Sequence[int], groups: int) -> np.ndarray:
    """Cross-correlation by loops: y[n, oc, o] += x[n, ic, o * s + k * d - start] * w[oc, ic - g * Cin/G, k] over taps inside the input."""
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    n, cin = x.shape[:2]
    cout = w.shape[0]
    cin_g, cout_g = cin // groups, cout // groups
    y = np.zeros((n, cout, *out))
    for o in itertools.product(*(range(size) for size in out)):
        for k in itertools.product(*(range(size) for size in w.shape[2:])):
            p = tuple(o[i] * strides[i] + k[i] * dilations[i] - start[i] for i in range(len(out)))
            if not all(0 <= p[i] < x.shape[2 + i] for i in range(len(p))):
                continue
            for g in range(groups):
                taps = x[(slice(None), slice(g * cin_g, (g + 1) * cin_g), *p)]  # {N, Cin/G}
                weights = w[(slice(g * cout_g, (g + 1) * cout_g), slice(None), *k)]  # {Cout/G, Cin/G}
                y[(slice(None), slice(g * cout_g, (g + 1) * cout_g), *o)] += taps @ weights.T
    return y


def oracle_backward(x: np.ndarray, w: np.ndarray, strides: Sequence[int], dilations: Sequence[int], start: Sequence[int], out: Sequence[int], groups: int) -> np.ndarray:
    """A transposed convolution as a FORWARD one: stride-dilate the input (s - 1 zeros between elements),
    flip the kernel, swap its in/out channels per group, pad with keff - 1 - start in front, stride 1."""
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    n, cin = x.shape[:2]
    cout_g, kernel = w.shape[1], w.shape[2:]
    dilated = np.zeros((n, cin, *((size - 1) * s + 1 for size, s in zip(x.shape[2:], strides, strict=True))))
    dilated[(slice(None), slice(None), *(slice(None, None, s) for s in strides))] = x
    cin_g = cin // groups
    flipped = np.flip(w, axis=tuple(range(2, w.ndim)))
    swapped = np.concatenate([np.swapaxes(flipped[g * cin_g : (g + 1) * cin_g], 0, 1) for g in range(groups)], axis=0)  # {Cout, Cin/G, k...}
    assert swapped.shape[:2] == (cout_g * groups, cin_g)
    front = [(k - 1) * d - sp for k, d, sp in zip(kernel, dilations, start, strict=True)]  # may be negative: a crop
    return oracle_forward(dilated, swapped, (1,) * len(out), dilations, front, out, groups)


def oracle_backward_scatter(x: np.ndarray, w: np.ndarray, strides: Sequence[int], start: Sequence[int], out: Sequence[int]) -> np.ndarray:
    """A transposed convolution (one group, dilation 1) as the scatter it is: every input element adds x * w to the
    outputs i * s + k - start its taps reach. Unlike the dilated-input form it never multiplies an inserted zero,
    so an infinite weight reaches exactly the outputs a direct sum gives it."""
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    y = np.zeros((x.shape[0], w.shape[1], *out))
    for i in itertools.product(*(range(size) for size in x.shape[2:])):
        for k in itertools.product(*(range(size) for size in w.shape[2:])):
            o = tuple(i[d] * strides[d] + k[d] - start[d] for d in range(len(out)))
            if all(0 <= o[d] < out[d] for d in range(len(out))):
                y[(slice(None), slice(None), *o)] += x[(slice(None), slice(None), *i)] @ w[(slice(None), slice(None), *k)]
    return y


def oracle(case: ConvCase, x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    """The contract (docs/convolution-semantics.md): flip for CONVOLUTION, zero the OutputPadding tail, add bias, activate."""
    if case.mode == CONVOLUTION:
        w = np.flip(w, axis=tuple(range(2, w.ndim)))
    kernel = oracle_backward if case.direction == BACKWARD else oracle_forward
    y = kernel(x, w, case.strides, case.dilations, case.start, case.out_sizes[2:], case.groups)
    for i, op in enumerate(case.output_padding):
        if op:
            index = [slice(None)] * y.ndim
            index[2 + i] = slice(y.shape[2 + i] - op, None)
            y[tuple(index)] = 0.0
    if b is not None:
        y = y + b.astype(np.float64)
    return oracle_activation(case.activation, y)


def test_the_backward_oracle_reproduces_the_onnx_convtranspose_example() -> None:
    """The oracles must be right to judge anything: ONNX's ConvTranspose example and a 1-D stride-2 scatter by hand."""
    x = np.arange(9, dtype=np.float64).reshape(1, 1, 3, 3)
    y = oracle_backward(x, np.ones((1, 2, 3, 3)), (1, 1), (1, 1), (0, 0), (5, 5), 1)
    np.testing.assert_array_equal(y[0, 1], ONNX_CONVTRANSPOSE_2D)
    # [1, 2, 3], kernel [1, 1, 1], stride 2, start 1: i lands at 2i + k - 1 -> [1, 1+2, 2, 2+3, 3, 3]
    y = oracle_backward(vector([1, 2, 3], np.float64), np.ones((1, 1, 3)), (2,), (1,), (1,), (6,), 1)
    np.testing.assert_array_equal(y.ravel(), [1, 3, 2, 5, 3, 3])


# ---------------------------------------------------------------------------------------
# Documentation examples (ONNX operator docs) and hand-computed cases

ONNX_CONV_PADDED = [[12, 21, 27, 33, 24], [33, 54, 63, 72, 51], [63, 99, 108, 117, 81], [93, 144, 153, 162, 111], [72, 111, 117, 123, 84]]
ONNX_CONV_UNPADDED = [[54, 63, 72], [99, 108, 117], [144, 153, 162]]
ONNX_CONVTRANSPOSE_2D = [[0, 1, 3, 3, 2], [3, 8, 15, 12, 7], [9, 21, 36, 27, 15], [9, 20, 33, 24, 13], [6, 13, 21, 15, 8]]


@pytest.mark.doc_example
@pytest.mark.parametrize(("padding", "expected"), [(1, ONNX_CONV_PADDED), (0, ONNX_CONV_UNPADDED)], ids=["conv_with_padding", "conv_without_padding"])
def test_onnx_conv_example(device: dmlpy.Device, padding: int, expected: list[list[int]]) -> None:
    """ONNX Conv: 0..24 as 5x5, a 3x3 kernel of ones, pads 1 (5x5 out) or 0 (3x3 out)."""
    x = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    size = 5 if padding else 3
    desc = conv_desc(x.shape, (1, 1, 3, 3), (1, 1, size, size), start=(padding,) * 2, end=(padding,) * 2)
    y = run_conv(desc, device, x, np.ones((1, 1, 3, 3), np.float32))
    np.testing.assert_array_equal(y[0, 0], np.array(expected, dtype=np.float32))


@pytest.mark.doc_example
def test_onnx_convtranspose_1d_example(device: dmlpy.Device) -> None:
    """ONNX ConvTranspose 1-D: x [0, 1, 2], W ones {1, 2, 3} -> two channels of [0, 1, 3, 3, 2]."""
    y = run_conv(conv_desc((1, 1, 3), (1, 2, 3), (1, 2, 5), direction=BACKWARD), device, vector([0, 1, 2]), np.ones((1, 2, 3), np.float32))
    np.testing.assert_array_equal(y[0], [[0, 1, 3, 3, 2], [0, 1, 3, 3, 2]])


@pytest.mark.doc_example
def test_onnx_convtranspose_2d_example(device: dmlpy.Device) -> None:
    """ONNX ConvTranspose: 0..8 as 3x3, W ones {1, 2, 3, 3} -> 5x5 per channel."""
    x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
    y = run_conv(conv_desc(x.shape, (1, 2, 3, 3), (1, 2, 5, 5), direction=BACKWARD), device, x, np.ones((1, 2, 3, 3), np.float32))
    np.testing.assert_array_equal(y[0, 0], ONNX_CONVTRANSPOSE_2D)
    np.testing.assert_array_equal(y[0, 1], ONNX_CONVTRANSPOSE_2D)


@pytest.mark.parametrize(
    ("mode", "expected"),
    [(CROSS, [-2.0, -2.0]), (CONVOLUTION, [2.0, 2.0])],
    ids=["cross-correlation x[o] - x[o+2]", "convolution flips to -x[o] + x[o+2]"],
)
def test_forward_mode_decides_the_kernel_orientation(device: dmlpy.Device, mode: DML_CONVOLUTION_MODE, expected: list[float]) -> None:
    y = run_conv(conv_desc((1, 1, 4), (1, 1, 3), (1, 1, 2), mode=mode), device, vector([1, 2, 3, 4]), vector([1, 0, -1]))
    np.testing.assert_array_equal(y.ravel(), expected)


@pytest.mark.parametrize(
    ("mode", "expected"),
    [(CROSS, [1.0, 12.0, 20.0]), (CONVOLUTION, [10.0, 21.0, 2.0])],
    ids=["cross-correlation scatters [1, 10]", "convolution scatters the flipped [10, 1]"],
)
def test_backward_mode_decides_the_kernel_orientation(device: dmlpy.Device, mode: DML_CONVOLUTION_MODE, expected: list[float]) -> None:
    """x [1, 2], W [1, 10]: y[i + k] += x[i] * W[k] -> [1, 2 + 10, 20]; flipped W [10, 1] -> [10, 20 + 1, 2]."""
    y = run_conv(conv_desc((1, 1, 2), (1, 1, 2), (1, 1, 3), direction=BACKWARD, mode=mode), device, vector([1, 2]), vector([1, 10]))
    np.testing.assert_array_equal(y.ravel(), expected)


@pytest.mark.parametrize(("size", "expected"), [(5, [1, 3, 2, 5, 3]), (6, [1, 3, 2, 5, 3, 3])], ids=["natural 5", "natural + 1: the extra position is computed"])
def test_backward_stride_2_computes_the_extra_position(device: dmlpy.Device, size: int, expected: list[float]) -> None:
    """[1, 2, 3], kernel ones(3), stride 2, padding 1 + 1: (3 - 1) * 2 + 3 - 2 = 5; input i lands at 2i + k - 1."""
    desc = conv_desc((1, 1, 3), (1, 1, 3), (1, 1, size), direction=BACKWARD, strides=(2,), start=(1,), end=(1,))
    y = run_conv(desc, device, vector([1, 2, 3]), np.ones((1, 1, 3), np.float32))
    np.testing.assert_array_equal(y.ravel(), expected)


def test_backward_output_padding_zeroes_the_tail_before_bias_and_activation(device: dmlpy.Device) -> None:
    """As above with OutputPadding 1: size 5 + 1 = 6, position 5 is zeroed (not 3), then + bias 10, then LINEAR(2, 0)."""
    desc = conv_desc((1, 1, 3), (1, 1, 3), (1, 1, 6), direction=BACKWARD, strides=(2,), start=(1,), end=(1,), output_padding=(1,),
                     bias=True, activation=Activation("LINEAR", (2.0, 0.0)))  # fmt: skip
    y = run_conv(desc, device, vector([1, 2, 3]), np.ones((1, 1, 3), np.float32), vector([10]), [OUTPUT_PADDING_NONZERO])
    np.testing.assert_array_equal(y.ravel(), [22, 26, 24, 30, 26, 20])


def test_forward_output_padding_adds_a_zeroed_position(device: dmlpy.Device) -> None:
    """[1, 2, 3, 4] with kernel [1, 1]: [3, 5, 7]; OutputPadding 1 makes 4 outputs, the last 0, then + bias 1."""
    desc = conv_desc((1, 1, 4), (1, 1, 2), (1, 1, 4), output_padding=(1,), bias=True)
    y = run_conv(desc, device, vector([1, 2, 3, 4]), vector([1, 1]), vector([1]), [OUTPUT_PADDING_NONZERO])
    np.testing.assert_array_equal(y.ravel(), [4, 6, 8, 1])


def test_the_bias_is_added_before_the_activation(device: dmlpy.Device) -> None:
    """conv = [-3, 3], bias 2: relu(conv + bias) = [0, 5]; relu first would give [2, 5]."""
    desc = conv_desc((1, 1, 2), (1, 1, 1), (1, 1, 2), bias=True, activation=Activation("RELU"))
    y = run_conv(desc, device, vector([-1, 1]), vector([3]), vector([2]))
    np.testing.assert_array_equal(y.ravel(), [0, 5])


def test_bias_broadcasts_over_batch_and_space(device: dmlpy.Device) -> None:
    """A 1x1 kernel of zeros leaves only the bias {1, 3, 1, 1} = [1, 2, 3] at every position."""
    desc = conv_desc((2, 2, 3, 3), (3, 2, 1, 1), (2, 3, 3, 3), bias=True)
    b = np.array([1, 2, 3], np.float32).reshape(1, 3, 1, 1)
    y = run_conv(desc, device, np.ones((2, 2, 3, 3), np.float32), np.zeros((3, 2, 1, 1), np.float32), b)
    np.testing.assert_array_equal(y, np.broadcast_to(b, (2, 3, 3, 3)))


def test_groups_keep_channels_apart(device: dmlpy.Device) -> None:
    """1x1, Cin 4, GroupCount 2: y0 = 1 * x0 + 2 * x1, y1 = 3 * x2 + 4 * x3 (x = 1, 10, 100, 1000)."""
    x = np.array([1, 10, 100, 1000], np.float32).reshape(1, 4, 1, 1)
    w = np.array([[1, 2], [3, 4]], np.float32).reshape(2, 2, 1, 1)
    y = run_conv(conv_desc(x.shape, w.shape, (1, 2, 1, 1), groups=2), device, x, w)
    np.testing.assert_array_equal(y.ravel(), [21, 4300])


def test_backward_groups_keep_channels_apart(device: dmlpy.Device) -> None:
    """1x1 transpose, Cin 2, GroupCount 2, W {2, 2, 1, 1}: channel 0 feeds outputs 0-1, channel 1 outputs 2-3."""
    x = np.array([1, 10], np.float32).reshape(1, 2, 1, 1)
    w = np.array([[1, 2], [3, 4]], np.float32).reshape(2, 2, 1, 1)
    y = run_conv(conv_desc(x.shape, w.shape, (1, 4, 1, 1), direction=BACKWARD, groups=2), device, x, w)
    np.testing.assert_array_equal(y.ravel(), [1, 2, 30, 40])


def test_depthwise_convolution_filters_each_channel_alone(device: dmlpy.Device, rng: np.random.Generator) -> None:
    x = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    w = rng.standard_normal((3, 1, 3, 2)).astype(np.float32)
    y = run_conv(conv_desc(x.shape, w.shape, (2, 3, 3, 5), groups=3), device, x, w)
    for c in range(3):
        alone = run_conv(conv_desc((2, 1, 5, 6), (1, 1, 3, 2), (2, 1, 3, 5)), device, x[:, c : c + 1], w[c : c + 1])
        np.testing.assert_allclose(y[:, c : c + 1], alone, rtol=1e-6, atol=1e-6)


# Depthwise planes whose packed grid rows take masked vector loads natively: up to 64 grid columns, stride 1
# (float32 and float16) or stride 2 (every second input column); MobileNet's 2x2 to 32x32 planes among them.
DEPTHWISE_PLANES = [(size, stride, pad) for size in (2, 13, 33, 40) for stride in (1, 2) for pad in (1, 2)]


@pytest.mark.parametrize(("size", "stride", "pad"), DEPTHWISE_PLANES, ids=[f"{s}x{s} stride {st} pad {p}" for s, st, p in DEPTHWISE_PLANES])
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["fp32", "fp16"])
def test_depthwise_3x3_over_small_and_padded_planes_matches_the_loop_oracle(device: dmlpy.Device, rng: np.random.Generator, size: int, stride: int, pad: int, dtype: Any) -> None:
    x = rng.standard_normal((1, 3, size, size + 1)).astype(dtype)
    w = rng.standard_normal((3, 1, 3, 3)).astype(dtype)
    out = dmlpy.convolution_output_sizes(x.shape, w.shape, (stride, stride), (1, 1), (pad, pad), (pad, pad), None, 3, FORWARD)
    desc = conv_desc(x.shape, w.shape, out, strides=(stride, stride), start=(pad, pad), end=(pad, pad), groups=3, dtype=dtype)
    expected = oracle_forward(x, w, (stride, stride), (1, 1), (pad, pad), out[2:], 3)
    tolerance = 1e-5 if dtype == np.float32 else 4e-3
    np.testing.assert_allclose(run_conv(desc, device, x, w).astype(np.float64), expected, rtol=tolerance, atol=tolerance * 10)


def test_3d_convolution_sums_a_2x2x2_block(device: dmlpy.Device) -> None:
    """5-D ones, kernel ones(2, 2, 2), one padding in front of depth: the first depth slice sees 4 taps, the rest 8."""
    desc = conv_desc((1, 1, 3, 3, 3), (1, 1, 2, 2, 2), (1, 1, 3, 2, 2), start=(1, 0, 0))
    y = run_conv(desc, device, np.ones((1, 1, 3, 3, 3), np.float32), np.ones((1, 1, 2, 2, 2), np.float32))
    np.testing.assert_array_equal(y[0, 0, :, 0, 0], [4, 8, 8])


def test_fp16_accumulates_in_fp32(device: dmlpy.Device) -> None:
    """1x1 over channels [2048, 1, 1] with weights 1: 2050 (representable in binary16).

    Summing in binary16 would lose both ones (2048 + 1 rounds to 2048) and give 2048.
    """
    x = np.array([2048, 1, 1], np.float16).reshape(1, 3, 1, 1)
    y = run_conv(conv_desc(x.shape, (1, 3, 1, 1), (1, 1, 1, 1), dtype=np.float16), device, x, np.ones((1, 3, 1, 1), np.float16))
    assert y.dtype == np.float16 and y.ravel()[0] == 2050


def test_fp16_output_saturates_to_infinity_without_warnings(device: dmlpy.Device) -> None:
    x = np.full((1, 2, 1, 1), 60000, np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = run_conv(conv_desc(x.shape, (1, 2, 1, 1), (1, 1, 1, 1), dtype=np.float16), device, x, np.ones((1, 2, 1, 1), np.float16))
    assert y.ravel()[0] == np.inf


def test_strided_layouts_give_the_packed_answer(device: dmlpy.Device, rng: np.random.Generator) -> None:
    """NHWC input, a channels-last filter, a bias read through zero strides, a padded output: logical values unchanged."""
    x = rng.standard_normal((2, 4, 5, 5)).astype(np.float32)
    w = rng.standard_normal((6, 2, 3, 3)).astype(np.float32)
    b = rng.standard_normal((1, 6, 1, 1)).astype(np.float32)
    common = {"strides": (2, 1), "start": (1, 0), "end": (1, 1), "groups": 2, "bias": True}
    packed = run_conv(conv_desc(x.shape, w.shape, (2, 6, 3, 4), **common), device, x, w, b)
    layouts = {"x": nhwc_strides(x.shape), "w": nhwc_strides(w.shape), "b": (0, 1, 0, 0), "y": packed_strides((2, 7, 4, 6))}
    strided = run_conv(conv_desc(x.shape, w.shape, (2, 6, 3, 4), **common, layouts=layouts), device, x, w, b)
    np.testing.assert_array_equal(strided, packed)
    expected = oracle_forward(x, w, (2, 1), (1, 1), (1, 0), (3, 4), 2) + b
    np.testing.assert_allclose(packed, expected, **TOLERANCE[np.dtype(np.float32)])


def test_a_broadcast_input_reads_one_image_for_every_batch_item(device: dmlpy.Device) -> None:
    one = np.arange(18, dtype=np.float32).reshape(1, 2, 3, 3)
    x = np.broadcast_to(one, (3, 2, 3, 3))
    desc = conv_desc(x.shape, (1, 2, 2, 2), (3, 1, 2, 2), direction=FORWARD, layouts={"x": (0, 9, 3, 1)})
    assert desc.InputTensor.Desc.TotalTensorSizeInBytes == 18 * 4
    y = run_conv(desc, device, x, np.ones((1, 2, 2, 2), np.float32))
    assert (y == y[0]).all()
    np.testing.assert_array_equal(y[0, 0], oracle_forward(one, np.ones((1, 2, 2, 2)), (1, 1), (1, 1), (0, 0), (2, 2), 1)[0, 0])


# ---------------------------------------------------------------------------------------
# Each fused activation, in both directions


@pytest.mark.parametrize("direction", [FORWARD, BACKWARD], ids=["forward", "backward"])
@pytest.mark.parametrize("activation", FUSED, ids=str)
def test_each_fused_activation_applies_after_the_bias(device: dmlpy.Device, activation: Activation, direction: DML_CONVOLUTION_DIRECTION) -> None:
    case = ConvCase(
        direction=int(direction), mode=int(CROSS), in_sizes=(2, 4, 5, 4), filter_sizes=(4, 3, 3, 2) if direction == BACKWARD else (6, 2, 3, 2),
        strides=(2, 1), dilations=(1, 2), start=(1, 0), end=(0, 1), output_padding=(0, 0), extra=(1, 0) if direction == BACKWARD else (0, 0),
        groups=2, bias=True, activation=activation, dtype="float32", layouts=("packed",) * 4, seed=11,
    )  # fmt: skip
    check_case(device.backend_name, case)


# ---------------------------------------------------------------------------------------
# BACKWARD against dmlpy's own FORWARD over the stride-dilated input with the flipped filter


@pytest.mark.parametrize(
    ("x", "w", "strides", "dilations", "start", "end", "groups", "extra"),
    [
        ((1, 2, 4, 3), (2, 3, 3, 2), (2, 3), (1, 1), (1, 0), (1, 1), 1, (1, 2)),
        ((2, 4, 3, 3), (4, 1, 2, 3), (3, 1), (2, 1), (0, 2), (2, 0), 2, (0, 0)),
        ((1, 3, 5), (3, 2, 4), (2,), (2,), (3,), (1,), 3, (1,)),
        ((1, 2, 2, 2, 3), (2, 2, 2, 2, 2), (2, 1, 2), (1, 2, 1), (0, 1, 1), (1, 0, 0), 1, (1, 0, 0)),
    ],
    ids=["2-D stride 2x3 with extra outputs", "grouped, dilated, asymmetric padding", "1-D depthwise-like, dilation 2", "3-D"],
)
def test_backward_equals_forward_over_the_dilated_input_with_the_flipped_filter(
    device: dmlpy.Device, rng: np.random.Generator, x: tuple[int, ...], w: tuple[int, ...], strides: tuple[int, ...], dilations: tuple[int, ...],
    start: tuple[int, ...], end: tuple[int, ...], groups: int, extra: tuple[int, ...],
) -> None:  # fmt: skip
    spatial = len(x) - 2
    out = dmlpy.convolution_output_sizes(x, w, strides, dilations, start, end, None, groups, BACKWARD)
    out = (*out[:2], *(size + e for size, e in zip(out[2:], extra, strict=True)))
    xs = rng.standard_normal(x).astype(np.float32)
    ws = rng.standard_normal(w).astype(np.float32)
    y = run_conv(conv_desc(x, w, out, direction=BACKWARD, strides=strides, dilations=dilations, start=start, end=end, groups=groups), device, xs, ws)
    # the same through a FORWARD desc: zeros between inputs, flipped and swapped filter, padding keff - 1 - start in front
    dilated = np.zeros((x[0], x[1], *((n - 1) * s + 1 for n, s in zip(x[2:], strides, strict=True))), np.float32)
    dilated[(slice(None), slice(None), *(slice(None, None, s) for s in strides))] = xs
    cin_g = x[1] // groups
    flipped = np.flip(ws, axis=tuple(range(2, ws.ndim)))
    forward_w = np.ascontiguousarray(np.concatenate([np.swapaxes(flipped[g * cin_g : (g + 1) * cin_g], 0, 1) for g in range(groups)]))
    front = [(k - 1) * d - sp for k, d, sp in zip(w[2:], dilations, start, strict=True)]
    back = [o - 1 + (k - 1) * d + 1 - n - f for o, k, d, n, f in zip(out[2:], w[2:], dilations, dilated.shape[2:], front, strict=True)]
    assert min(front + back) >= 0, "these cases need no cropping"
    forward = conv_desc(dilated.shape, forward_w.shape, out, dilations=dilations, start=front, end=back, groups=groups)
    assert forward.DimensionCount == spatial
    np.testing.assert_allclose(y, run_conv(forward, device, dilated, forward_w), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------------
# PyTorch as a second oracle for the transposed convolution


@pytest.mark.parametrize(
    ("x", "w", "stride", "padding", "output_padding", "groups", "dilation"),
    [
        ((2, 4, 5, 6), (4, 3, 3, 3), (2, 2), (1, 1), (1, 0), 1, (1, 1)),
        ((1, 6, 4, 4), (6, 2, 3, 2), (3, 2), (0, 1), (2, 1), 3, (1, 2)),
        ((1, 4, 3, 3, 3), (4, 1, 2, 2, 2), (2, 2, 2), (0, 0, 1), (1, 0, 1), 4, (1, 2, 1)),
        ((2, 2, 7), (2, 3, 4), (3,), (2,), (1,), 1, (3,)),
    ],
    ids=["output_padding 1", "groups 3, dilation 2, output_padding (2, 1)", "3-D depthwise", "1-D dilation 3"],
)
def test_backward_agrees_with_torch_conv_transpose(
    device: dmlpy.Device, rng: np.random.Generator, x: tuple[int, ...], w: tuple[int, ...], stride: tuple[int, ...], padding: tuple[int, ...],
    output_padding: tuple[int, ...], groups: int, dilation: tuple[int, ...],
) -> None:  # fmt: skip
    """torch's output_padding is dmlpy's 'natural + extra' output with DML OutputPadding 0 (as onnxruntime maps it)."""
    torch = pytest.importorskip("torch")
    xs, ws = rng.standard_normal(x).astype(np.float32), rng.standard_normal(w).astype(np.float32)
    function = {3: torch.nn.functional.conv_transpose1d, 4: torch.nn.functional.conv_transpose2d, 5: torch.nn.functional.conv_transpose3d}[len(x)]
    expected = function(torch.from_numpy(xs), torch.from_numpy(ws), stride=stride, padding=padding, output_padding=output_padding, groups=groups, dilation=dilation).numpy()
    desc = conv_desc(x, w, expected.shape, direction=BACKWARD, strides=stride, dilations=dilation, start=padding, end=padding, groups=groups)
    np.testing.assert_allclose(run_conv(desc, device, xs, ws), expected, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------------------
# Extreme but valid descs: UINT-sized strides, paddings and dilations on tiny tensors. The kernels
# must never materialize the padding; the address space is capped while they run.


@contextlib.contextmanager
def address_space_cap(headroom: int = 2 * 2**30) -> Iterator[None]:
    if not sys.platform.startswith("linux"):
        pytest.skip("the address-space cap that keeps this test safe needs Linux")
    import resource

    with open("/proc/self/status", encoding="ascii") as status:
        vm = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
    old = resource.getrlimit(resource.RLIMIT_AS)
    cap = vm + headroom
    if old[1] != resource.RLIM_INFINITY and cap > old[1]:
        cap = old[1]
    resource.setrlimit(resource.RLIMIT_AS, (cap, old[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, old)


BIG = 2**32 - 1


def test_forward_with_a_huge_stride_and_start_padding(device: dmlpy.Device) -> None:
    """[1, 2, 3], kernel [5], stride 2^31, start 2^31 - 1: (3 + 2^31 - 1 - 1) / 2^31 + 1 = 2; taps at -(2^31 - 1) and 1."""
    desc = conv_desc((1, 1, 3), (1, 1, 1), (1, 1, 2), strides=(2**31,), start=(2**31 - 1,))
    with address_space_cap():
        y = run_conv(desc, device, vector([1, 2, 3]), vector([5]))
    np.testing.assert_array_equal(y.ravel(), [0, 10])


def test_forward_with_a_huge_dilation(device: dmlpy.Device) -> None:
    """[1, 2, 3], kernel [1, 10] dilated by 2^32 - 1, start 2^32 - 3: one output; taps at -(2^32 - 3) and 2 -> 10 * 3."""
    desc = conv_desc((1, 1, 3), (1, 1, 2), (1, 1, 1), dilations=(BIG,), start=(BIG - 2,))
    with address_space_cap():
        y = run_conv(desc, device, vector([1, 2, 3]), vector([1, 10]))
    np.testing.assert_array_equal(y.ravel(), [30])


def test_backward_with_a_huge_stride_and_padding(device: dmlpy.Device) -> None:
    """[1, 2], kernel [1], stride 2^31, start 2^31 - 1: natural 2^31 + 1 - (2^31 - 1) = 2; input 0 lands at -(2^31 - 1), input 1 at 1."""
    desc = conv_desc((1, 1, 2), (1, 1, 1), (1, 1, 3), direction=BACKWARD, strides=(2**31,), start=(2**31 - 1,))
    with address_space_cap():
        y = run_conv(desc, device, vector([1, 2]), vector([7]))
    np.testing.assert_array_equal(y.ravel(), [0, 14, 0])


def test_backward_with_a_huge_dilation_and_end_padding(device: dmlpy.Device) -> None:
    """[1, 2], kernel [1, 10] dilated by 2^32 - 1, end padding 2^32 - 1: natural 1 + 2^32 - 2^32 + 1 = 2 -> [1, 2]."""
    desc = conv_desc((1, 1, 2), (1, 1, 2), (1, 1, 2), direction=BACKWARD, dilations=(BIG,), end=(BIG,))
    with address_space_cap():
        y = run_conv(desc, device, vector([1, 2]), vector([1, 10]))
    np.testing.assert_array_equal(y.ravel(), [1, 2])


# ---------------------------------------------------------------------------------------
# onnxruntime as an oracle


def onnxruntime_result(case: ConvCase, x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> tuple[np.ndarray, tuple[slice, ...]]:
    """onnxruntime's Conv / ConvTranspose (+ the activation as ONNX nodes), and the part of dmlpy's output it judges.

    Where ONNX semantics coincide: CONVOLUTION mode is ONNX's cross-correlation with the filter
    pre-flipped; FLOAT16 data is given to onnxruntime as float32 (ONNX then accumulates in float32,
    as DirectML does). DirectML's OutputPadding has no ONNX counterpart, so the zeroed tail is left
    out: ONNX's Conv computes the first out - OutputPadding positions, and ConvTranspose with
    ONNX output_padding = extra (always < stride, as ONNX requires) computes the natural + extra
    positions in front of the tail. ``output_shape`` is never used, which sidesteps onnxruntime's
    output_shape pad computation (docs/deviations.md: it uses the undilated kernel).
    """
    from onnx import helper

    if case.mode == CONVOLUTION:
        w = np.flip(w, axis=tuple(range(2, w.ndim)))
    spatial = len(case.strides)
    attrs: dict[str, Any] = {
        "strides": list(case.strides),
        "dilations": list(case.dilations),
        "pads": [*case.start, *case.end],
        "group": case.groups,
        "kernel_shape": list(case.filter_sizes[2:]),
    }
    if case.direction == BACKWARD:
        attrs["output_padding"] = list(case.extra)
    op = "ConvTranspose" if case.direction == BACKWARD else "Conv"
    inputs = {"X": x, "W": w} | ({"B": b.reshape(-1)} if b is not None else {})
    nodes = [helper.make_node(op, list(inputs), ["conv"], **attrs)]
    more, initializers = onnx_activation_nodes(case.activation, "conv", "Y")
    y = run_onnx(nodes + more, initializers, inputs)
    region = (slice(None), slice(None), *(slice(0, case.out_sizes[2 + i] - case.output_padding[i]) for i in range(spatial)))
    return y, region


# ---------------------------------------------------------------------------------------
# Property tests


LAYOUTS = {"x": ["packed", "nhwc", "broadcast-n", "padded"], "w": ["packed", "channels-last", "padded"], "b": ["packed", "zero-strides"], "y": ["packed", "nhwc", "padded"]}


@dataclass(frozen=True)
class ConvCase:
    direction: int
    mode: int
    in_sizes: tuple[int, ...]
    filter_sizes: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    start: tuple[int, ...]
    end: tuple[int, ...]
    output_padding: tuple[int, ...]
    extra: tuple[int, ...]  # BACKWARD: outputs beyond the natural size (0 .. stride - 1)
    groups: int
    bias: bool
    activation: Activation | None
    dtype: str
    layouts: tuple[str, str, str, str]  # x, w, b, y
    seed: int

    @property
    def out_sizes(self) -> tuple[int, ...]:
        """Written from the formulas of docs/deviations.md, not with dmlpy's helper."""
        n, spatial = self.in_sizes[0], []
        for i, size in enumerate(self.in_sizes[2:]):
            k, s, d, sp, ep, op = self.filter_sizes[2 + i], self.strides[i], self.dilations[i], self.start[i], self.end[i], self.output_padding[i]
            keff = (k - 1) * d + 1
            if self.direction == BACKWARD:
                spatial.append((size - 1) * s + keff - sp - ep + op + self.extra[i])
            else:
                spatial.append((size + sp + ep - keff) // s + 1 + op)
        channels = self.filter_sizes[1] * self.groups if self.direction == BACKWARD else self.filter_sizes[0]
        return (n, channels, *spatial)

    def _strides(self, kind: str, sizes: tuple[int, ...]) -> tuple[int, ...] | None:
        layout = self.layouts["xwby".index(kind)]
        if layout == "packed":
            return None
        if layout in ("nhwc", "channels-last"):
            return nhwc_strides(sizes)
        if layout == "broadcast-n":
            return (0, *packed_strides(sizes)[1:])
        if layout == "zero-strides":
            return (0, 1) + (0,) * (len(sizes) - 2)
        return packed_strides([s + (1 if i == len(sizes) - 1 else (self.seed >> i) % 2) for i, s in enumerate(sizes)])  # padded

    def desc(self) -> DML_CONVOLUTION_OPERATOR_DESC:
        y = self.out_sizes
        layouts = {kind: self._strides(kind, sizes) for kind, sizes in (("x", self.in_sizes), ("w", self.filter_sizes), ("b", (1, y[1]) + (1,) * (len(y) - 2)), ("y", y))}
        return conv_desc(
            self.in_sizes, self.filter_sizes, y, direction=DML_CONVOLUTION_DIRECTION(self.direction), mode=DML_CONVOLUTION_MODE(self.mode),
            strides=self.strides, dilations=self.dilations, start=self.start, end=self.end, output_padding=self.output_padding,
            groups=self.groups, bias=self.bias, activation=self.activation, dtype=np.dtype(self.dtype).type, layouts=layouts,
        )  # fmt: skip

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        rng = np.random.default_rng(self.seed)
        one = rng.uniform(-1, 1, size=(1 if self.layouts[0] == "broadcast-n" else self.in_sizes[0], *self.in_sizes[1:]))
        x = np.ascontiguousarray(np.broadcast_to(one, self.in_sizes)).astype(self.dtype)
        w = rng.uniform(-1, 1, size=self.filter_sizes).astype(self.dtype)
        b = rng.uniform(-1, 1, size=(1, self.out_sizes[1]) + (1,) * (len(self.in_sizes) - 2)).astype(self.dtype) if self.bias else None
        return x, w, b


@st.composite
def conv_cases(
    draw: st.DrawFn,
    spatial: int,
    dtype: str = "float32",
    *,
    direction: int | None = None,
    mode: int | None = None,
    max_size: int = 5,
    grouped: bool | None = None,
) -> ConvCase:
    direction = draw(st.sampled_from([int(FORWARD), int(BACKWARD)])) if direction is None else direction
    backward = direction == BACKWARD
    use_groups = draw(st.booleans()) if grouped is None else grouped
    groups = draw(st.integers(2, 3)) if use_groups else 1
    depthwise = use_groups and draw(st.booleans())
    cin_g = 1 if depthwise else draw(st.integers(1, 2))
    cout_g = 1 if depthwise else draw(st.integers(1, 2))
    kernel, strides, dilations, start, end, output_padding, extra, in_spatial = [], [], [], [], [], [], [], []
    with_output_padding = draw(st.integers(0, 5)) == 0
    for _ in range(spatial):
        k, s, d = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 2))
        sp, ep = draw(st.integers(0, 2)), draw(st.integers(0, 2))
        keff = (k - 1) * d + 1
        if backward:
            low = max(1, 1 + -(-(sp + ep + 1 - keff) // s))  # the smallest input with (in - 1) * s + keff - sp - ep >= 1
            extra.append(draw(st.integers(0, s - 1)))
        else:
            low = max(1, keff - sp - ep)
            extra.append(0)
        in_spatial.append(draw(st.integers(low, max(low, max_size if not backward else 3))))
        output_padding.append(draw(st.integers(0, 1)) if with_output_padding else 0)
        kernel.append(k)
        strides.append(s)
        dilations.append(d)
        start.append(sp)
        end.append(ep)
    cin, cout = cin_g * groups, cout_g * groups
    filter_sizes = (cin, cout_g, *kernel) if backward else (cout, cin_g, *kernel)
    activation = draw(st.sampled_from([None, None, *FUSED]))
    return ConvCase(
        direction=direction,
        mode=draw(st.sampled_from([int(CROSS), int(CROSS), int(CONVOLUTION)])) if mode is None else mode,
        in_sizes=(draw(st.integers(1, 2)), cin, *in_spatial),
        filter_sizes=filter_sizes,
        strides=tuple(strides), dilations=tuple(dilations), start=tuple(start), end=tuple(end),
        output_padding=tuple(output_padding), extra=tuple(extra), groups=groups,
        bias=draw(st.booleans()), activation=activation, dtype=dtype,
        layouts=tuple(draw(st.sampled_from(LAYOUTS[kind])) for kind in "xwby"),  # type: ignore[arg-type]
        seed=draw(st.integers(0, 2**32 - 1)),
    )  # fmt: skip


@functools.lru_cache(maxsize=2048)
def _expected(case: ConvCase) -> tuple[np.ndarray, np.ndarray, tuple[slice, ...]]:
    """The oracle's and onnxruntime's answers, cached: the native and numpy runs draw the same cases."""
    x, w, b = case.arrays()
    y_ort, region = onnxruntime_result(case, x.astype(np.float32), w.astype(np.float32), None if b is None else b.astype(np.float32))
    return oracle(case, x, w, b), y_ort, region


def check_case(backend: str, case: ConvCase) -> None:
    """The backend against the oracle and onnxruntime; native also against NumPy."""
    x, w, b = case.arrays()
    expected, y_ort, region = _expected(case)
    tolerance = TOLERANCE[np.dtype(case.dtype)]
    warns = [OUTPUT_PADDING_NONZERO] if any(case.output_padding) else []
    y = run_conv(case.desc(), dmlpy.create_device(backend=backend), x, w, b, warns)
    assert y.shape == case.out_sizes and y.dtype == np.dtype(case.dtype), f"{y.shape} {y.dtype}: {case}"
    np.testing.assert_allclose(y.astype(np.float64), expected, err_msg=f"{backend} vs the oracle: {case}", **tolerance)
    if backend == "native":
        y_numpy = run_conv(case.desc(), dmlpy.create_device(backend="numpy"), x, w, b, warns)
        np.testing.assert_allclose(y.astype(np.float64), y_numpy.astype(np.float64), err_msg=f"native vs numpy: {case}", **tolerance)
    assert y_ort.shape == y[region].shape, f"onnxruntime's shape {y_ort.shape} differs from {y[region].shape}: {case}"
    np.testing.assert_allclose(y[region].astype(np.float64), y_ort, err_msg=f"{backend} vs onnxruntime: {case}", **tolerance)


# Generated cases per property test (per backend): 320 in all.
EXAMPLES = {"2d-fp32": 100, "1d-fp32": 40, "3d-fp32": 35, "2d-fp16": 50, "1d-3d-fp16": 25, "grouped": 40, "convolution-mode": 30}

PROPERTY = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)


@settings(PROPERTY, max_examples=EXAMPLES["2d-fp32"])
@given(case=conv_cases(spatial=2))
def test_property_2d_fp32(backend: str, case: ConvCase) -> None:
    check_case(backend, case)


@settings(PROPERTY, max_examples=EXAMPLES["1d-fp32"])
@given(case=conv_cases(spatial=1, max_size=7))
def test_property_1d_fp32(backend: str, case: ConvCase) -> None:
    check_case(backend, case)


@settings(PROPERTY, max_examples=EXAMPLES["3d-fp32"])
@given(case=conv_cases(spatial=3, max_size=4))
def test_property_3d_fp32(backend: str, case: ConvCase) -> None:
    check_case(backend, case)


@settings(PROPERTY, max_examples=EXAMPLES["2d-fp16"])
@given(case=conv_cases(spatial=2, dtype="float16"))
def test_property_2d_fp16(backend: str, case: ConvCase) -> None:
    check_case(backend, case)


@settings(PROPERTY, max_examples=EXAMPLES["1d-3d-fp16"])
@given(case=st.one_of(conv_cases(spatial=1, dtype="float16"), conv_cases(spatial=3, dtype="float16", max_size=3)))
def test_property_1d_and_3d_fp16(backend: str, case: ConvCase) -> None:
    check_case(backend, case)


@settings(PROPERTY, max_examples=EXAMPLES["grouped"])
@given(case=conv_cases(spatial=2, grouped=True))
def test_property_grouped_and_depthwise(backend: str, case: ConvCase) -> None:
    check_case(backend, case)


@settings(PROPERTY, max_examples=EXAMPLES["convolution-mode"])
@given(case=st.one_of(conv_cases(spatial=1, mode=int(CONVOLUTION)), conv_cases(spatial=2, mode=int(CONVOLUTION))))
def test_property_convolution_mode_flips_the_kernel(backend: str, case: ConvCase) -> None:
    check_case(backend, case)


def test_property_tests_generate_at_least_300_cases() -> None:
    """The floor on generated cases (per backend) that the test plan promises."""
    assert sum(EXAMPLES.values()) >= 300


# ---------------------------------------------------------------------------------------
# The adjoint identity: BACKWARD is the transpose of FORWARD with the same filter


@settings(PROPERTY, max_examples=40)
@given(case=conv_cases(spatial=2, direction=int(FORWARD)) | conv_cases(spatial=1, direction=int(FORWARD)) | conv_cases(spatial=3, direction=int(FORWARD), max_size=4))
def test_adjoint_identity_holds_to_float32_precision(backend: str, case: ConvCase) -> None:
    """<conv(x), y> == <x, convT(y)>: the FORWARD desc maps {N, Cin, in} to {N, Cout, out}; the BACKWARD desc with the
    same filter maps {N, Cout, out} back to {N, Cin, in} (in is an accepted BACKWARD size: natural <= in < natural + s)."""
    device = dmlpy.create_device(backend=backend)
    spatial = len(case.strides)
    zeros = (0,) * spatial
    common = {"mode": DML_CONVOLUTION_MODE(case.mode), "strides": case.strides, "dilations": case.dilations, "start": case.start, "end": case.end, "groups": case.groups}
    x_sizes, w_sizes = case.in_sizes, case.filter_sizes
    y_sizes = (x_sizes[0], w_sizes[0], *((n + sp + ep - ((k - 1) * d + 1)) // s + 1 for n, k, s, d, sp, ep in
                                          zip(x_sizes[2:], w_sizes[2:], case.strides, case.dilations, case.start, case.end, strict=True)))  # fmt: skip
    rng = np.random.default_rng(case.seed)
    x = rng.uniform(-1, 1, x_sizes).astype(np.float32)
    w = rng.uniform(-1, 1, w_sizes).astype(np.float32)
    y = rng.uniform(-1, 1, y_sizes).astype(np.float32)
    forward = run_conv(conv_desc(x_sizes, w_sizes, y_sizes, output_padding=zeros, **common), device, x, w)
    backward = run_conv(conv_desc(y_sizes, w_sizes, x_sizes, direction=BACKWARD, output_padding=zeros, **common), device, y, w)
    lhs = float(np.dot(forward.ravel().astype(np.float64), y.ravel()))
    rhs = float(np.dot(x.ravel().astype(np.float64), backward.ravel()))
    scale = float(np.abs(forward).ravel() @ np.abs(y).ravel() + np.abs(x).ravel() @ np.abs(backward).ravel()) + 1e-30
    assert abs(lhs - rhs) <= 4e-7 * scale, f"<conv(x), y> = {lhs}, <x, convT(y)> = {rhs}: {case}"


# ---------------------------------------------------------------------------------------
# Native and NumPy on a case larger than the property tests draw (the native kernel's threads)


@pytest.mark.parametrize("direction", [FORWARD, BACKWARD], ids=["forward", "backward"])
def test_native_and_numpy_agree_on_a_large_case(direction: DML_CONVOLUTION_DIRECTION, rng: np.random.Generator) -> None:
    native = native_device()
    x = (2, 16, 23, 19) if direction == FORWARD else (2, 16, 12, 10)
    w = (24, 8, 3, 3) if direction == FORWARD else (16, 12, 3, 3)
    args = {"strides": (2, 1), "dilations": (1, 2), "start": (1, 2), "end": (2, 1), "groups": 2}
    out = dmlpy.convolution_output_sizes(x, w, args["strides"], args["dilations"], args["start"], args["end"], None, 2, direction)
    xs, ws = rng.uniform(-1, 1, x).astype(np.float32), rng.uniform(-1, 1, w).astype(np.float32)
    b = rng.uniform(-1, 1, (1, out[1], 1, 1)).astype(np.float32)
    for layout in (None, {"x": nhwc_strides(x), "y": nhwc_strides(out)}):
        desc = conv_desc(x, w, out, direction=direction, bias=True, activation=Activation("LEAKY_RELU", (0.1,)), layouts=layout, **args)
        y_native = run_conv(desc, native, xs, ws, b)
        y_numpy = run_conv(desc, dmlpy.create_device(backend="numpy"), xs, ws, b)
        np.testing.assert_allclose(y_native, y_numpy, rtol=1e-4, atol=1e-4)
        assert math.isfinite(float(np.abs(y_native).max()))


# ---------------------------------------------------------------------------------------
# The native Winograd path (dmlpy/native/winograd.c): 2-D, stride 1, dilation 1, 3x3, at least 16 input and
# 16 output channels per group and 64 outputs per image and group (WINO_MIN_* there). These shapes take it;
# the NumPy backend runs them as the reference does, and both are held to the oracles of check_case.


def winograd_case(in_sizes: tuple[int, ...], filter_sizes: tuple[int, ...], *, direction: DML_CONVOLUTION_DIRECTION = FORWARD, **fields: Any) -> ConvCase:
    zeros = (0, 0)
    defaults: dict[str, Any] = {
        "mode": int(CROSS), "strides": (1, 1), "dilations": (1, 1), "start": (1, 1), "end": (1, 1), "output_padding": zeros, "extra": zeros,
        "groups": 1, "bias": False, "activation": None, "dtype": "float32", "layouts": ("packed",) * 4, "seed": 7,
    }  # fmt: skip
    defaults.update(fields)
    return ConvCase(direction=int(direction), in_sizes=in_sizes, filter_sizes=filter_sizes, **defaults)


WINOGRAD_CASES = {
    "forward with bias, partial tiles in both dims": winograd_case((2, 16, 9, 11), (16, 16, 3, 3), bias=True),
    "forward CONVOLUTION mode, 2 groups of 16 -> 24, asymmetric padding, OutputPadding, leaky relu": winograd_case(
        (1, 32, 13, 10), (48, 16, 3, 3), mode=int(CONVOLUTION), groups=2, start=(0, 2), end=(2, 1), output_padding=(1, 0),
        activation=Activation("LEAKY_RELU", (0.2,)), seed=8,
    ),
    "forward 64 -> 64 channels over several work items, broadcast batch input, padded output": winograd_case(
        (2, 64, 30, 37), (64, 64, 3, 3), bias=True, layouts=("broadcast-n", "packed", "packed", "padded"), seed=9,
    ),
    "backward with bias and relu, asymmetric padding": winograd_case(
        (2, 24, 9, 9), (24, 16, 3, 3), direction=BACKWARD, start=(1, 0), end=(2, 1), bias=True, activation=Activation("RELU"), seed=10,
    ),
    "backward CONVOLUTION mode, 2 groups of 16 -> 20, OutputPadding": winograd_case(
        (1, 32, 8, 9), (32, 20, 3, 3), direction=BACKWARD, mode=int(CONVOLUTION), groups=2, start=(0, 1), end=(1, 0),
        output_padding=(1, 1), bias=True, seed=11,
    ),
    "backward padding beyond the kernel crops the input": winograd_case((1, 16, 12, 12), (16, 16, 3, 3), direction=BACKWARD, start=(3, 2), end=(0, 3), seed=12),
    "forward fp16, NHWC input and output, channels-last filter, zero-stride bias, sigmoid": winograd_case(
        (1, 16, 10, 12), (16, 16, 3, 3), dtype="float16", bias=True, activation=Activation("SIGMOID"),
        layouts=("nhwc", "channels-last", "zero-strides", "nhwc"), seed=13,
    ),
    "backward fp16, padded layouts, linear": winograd_case(
        (1, 16, 9, 10), (16, 24, 3, 3), direction=BACKWARD, dtype="float16", activation=Activation("LINEAR", (1.5, -0.25)),
        layouts=("padded", "padded", "packed", "padded"), seed=14,
    ),
}


def winograd_thresholds() -> dict[str, int]:
    """WINO_MIN_CIN, WINO_MIN_COUT and WINO_MIN_OUT as winograd.c defines them (skips without the sources)."""
    path = os.path.join(os.path.dirname(dmlpy.__file__), "native", "winograd.c")
    if not os.path.exists(path):
        pytest.skip("the native sources are not installed with this dmlpy")
    with open(path, encoding="utf-8") as f:
        source = f.read()
    return {name: int(re.search(rf"#define WINO_{name} (\d+)", source).group(1)) for name in ("MIN_CIN", "MIN_COUT", "MIN_OUT")}  # type: ignore[union-attr]


@pytest.mark.parametrize("case", list(WINOGRAD_CASES.values()), ids=list(WINOGRAD_CASES))
def test_winograd_sized_convolutions_match_the_oracles(backend: str, case: ConvCase) -> None:
    check_case(backend, case)


def test_the_winograd_cases_meet_the_native_selection_thresholds() -> None:
    """The cases above only test the Winograd path while they are inside what winograd.c selects."""
    limit = winograd_thresholds()
    for name, case in WINOGRAD_CASES.items():
        groups, out = case.groups, case.out_sizes
        cin_g = case.in_sizes[1] // groups
        cout_g = out[1] // groups
        computed = [size - op for size, op in zip(out[2:], case.output_padding, strict=True)]
        assert case.filter_sizes[2:] == (3, 3) and case.strides == (1, 1) and case.dilations == (1, 1), name
        assert cin_g >= limit["MIN_CIN"] and cout_g >= limit["MIN_COUT"] and computed[0] * computed[1] >= limit["MIN_OUT"], name


# BACKWARD with filter size 2 x stride and dilation 1 per dim (ConvTranspose k4 s2, k2 s1, k6 s3): every output
# phase is a 2x2 stride-1 correlation, which winograd.c runs as F(3x3, 2x2), one phase after another, storing at
# the stride. Same thresholds per phase.
PHASE_WINOGRAD_CASES = {
    "k4 s2 p1 with bias and relu, two images": winograd_case(
        (2, 16, 9, 9), (16, 16, 4, 4), direction=BACKWARD, strides=(2, 2), bias=True, activation=Activation("RELU"), seed=21,
    ),
    "k4 s2 CONVOLUTION mode, 2 groups of 16 -> 24, asymmetric padding, OutputPadding": winograd_case(
        (1, 32, 8, 8), (32, 24, 4, 4), direction=BACKWARD, strides=(2, 2), mode=int(CONVOLUTION), groups=2, start=(2, 0), end=(1, 3),
        output_padding=(1, 1), bias=True, seed=22,
    ),
    "k2 s1 backward, padding 0 and 1": winograd_case((1, 16, 9, 11), (16, 20, 2, 2), direction=BACKWARD, start=(0, 1), end=(0, 0), seed=23),
    "k6 s3 backward, three phases per dim": winograd_case(
        (1, 16, 8, 8), (16, 16, 6, 6), direction=BACKWARD, strides=(3, 3), start=(2, 1), end=(3, 2), bias=True, seed=24,
    ),
    "k4 s2 by k2 s1: two phases in H, one in W": winograd_case(
        (1, 16, 6, 12), (16, 16, 4, 2), direction=BACKWARD, strides=(2, 1), start=(1, 0), end=(1, 1), seed=25,
    ),
    "k4 s2 64 -> 32 over several work items, broadcast batch, padded output": winograd_case(
        (2, 64, 13, 14), (64, 32, 4, 4), direction=BACKWARD, strides=(2, 2), layouts=("broadcast-n", "packed", "packed", "padded"), seed=26,
    ),
    "k4 s2 fp16, NHWC input and output, channels-last filter, zero-stride bias, sigmoid": winograd_case(
        (1, 16, 8, 9), (16, 16, 4, 4), direction=BACKWARD, strides=(2, 2), dtype="float16", bias=True, activation=Activation("SIGMOID"),
        layouts=("nhwc", "channels-last", "zero-strides", "nhwc"), seed=27,
    ),
    "k4 s2 fp32, padded layouts, leaky relu": winograd_case(
        (1, 24, 9, 8), (24, 16, 4, 4), direction=BACKWARD, strides=(2, 2), activation=Activation("LEAKY_RELU", (0.1,)),
        layouts=("padded", "padded", "packed", "padded"), seed=28,
    ),
}


@pytest.mark.parametrize("case", list(PHASE_WINOGRAD_CASES.values()), ids=list(PHASE_WINOGRAD_CASES))
def test_strided_backward_winograd_sized_convolutions_match_the_oracles(backend: str, case: ConvCase) -> None:
    check_case(backend, case)


def test_the_phase_winograd_cases_meet_the_native_selection_thresholds() -> None:
    """Filter = 2 x stride with dilation 1 gives every output phase exactly two taps at consecutive inputs."""
    limit = winograd_thresholds()
    for name, case in PHASE_WINOGRAD_CASES.items():
        assert case.direction == int(BACKWARD) and case.dilations == (1, 1), name
        assert all(k == 2 * s for k, s in zip(case.filter_sizes[2:], case.strides, strict=True)), name
        computed = [size - op for size, op in zip(case.out_sizes[2:], case.output_padding, strict=True)]
        per_phase = [-(-size // stride) for size, stride in zip(computed, case.strides, strict=True)]
        assert case.in_sizes[1] // case.groups >= limit["MIN_CIN"] and case.out_sizes[1] // case.groups >= limit["MIN_COUT"], name
        assert per_phase[0] * per_phase[1] >= limit["MIN_OUT"], name


@pytest.mark.parametrize(("x_sizes", "cout"), [((2, 32, 17, 15), 24), ((1, 256, 12, 12), 128)], ids=["all-phases-at-once", "phase-by-phase-on-1-thread"])
def test_phase_winograd_results_do_not_depend_on_the_thread_count(rng: np.random.Generator, x_sizes: tuple[int, ...], cout: int) -> None:
    """On one thread, a U of every phase larger than L2 (256 -> 128 channels: 8 MB) is made and used phase by
    phase; on two, all at once: the same sums either way."""
    x = rng.uniform(-1, 1, x_sizes).astype(np.float32)
    w = rng.uniform(-1, 1, (x_sizes[1], cout, 4, 4)).astype(np.float32)
    b = rng.uniform(-1, 1, (1, cout, 1, 1)).astype(np.float32)
    out = dmlpy.convolution_output_sizes(x.shape, w.shape, (2, 2), (1, 1), (1, 1), (1, 1), None, 1, BACKWARD)
    desc = conv_desc(x.shape, w.shape, out, direction=BACKWARD, strides=(2, 2), start=(1, 1), end=(1, 1), bias=True)
    np.testing.assert_array_equal(run_conv(desc, native_device(threads=1), x, w, b), run_conv(desc, native_device(threads=2), x, w, b))


def test_phase_winograd_error_on_256_channels_stays_inside_the_float32_tolerance(rng: np.random.Generator) -> None:
    """The benchmark's ConvTranspose (256 -> 128, k4 s2 p1) on a smaller image, inputs and weights in [-1, 1]
    (|y| up to ~46): |error| / (1 + |y|) against float64 measured 2.1e-5 with two seeds (the GEMM path 7.5e-6);
    the bound is half the 1e-4 the fp32 tests allow."""
    x = rng.uniform(-1, 1, (1, 256, 12, 12))
    w = rng.uniform(-1, 1, (256, 128, 4, 4))
    out = (1, 128, 24, 24)
    y = run_conv(conv_desc(x.shape, w.shape, out, direction=BACKWARD, strides=(2, 2), start=(1, 1), end=(1, 1)), native_device(), x.astype(np.float32), w.astype(np.float32))
    expected = oracle_backward(x, w, (2, 2), (1, 1), (1, 1), out[2:], 1)
    error = np.abs(y - expected) / (1.0 + np.abs(expected))
    assert error.max() < 5e-5, f"max |error| / (1 + |y|) = {error.max():.3g}"


@pytest.mark.parametrize("mode", [CROSS, CONVOLUTION], ids=["cross-correlation", "convolution"])
def test_winograd_backward_at_stride_1_equals_forward_with_the_flipped_swapped_filter(device: dmlpy.Device, rng: np.random.Generator, mode: DML_CONVOLUTION_MODE) -> None:
    x = rng.uniform(-1, 1, (2, 32, 11, 14)).astype(np.float32)
    w = rng.uniform(-1, 1, (32, 24, 3, 3)).astype(np.float32)  # {Cin, Cout/G, 3, 3}, 2 groups
    start, end = (1, 0), (2, 1)
    out = dmlpy.convolution_output_sizes(x.shape, w.shape, (1, 1), (1, 1), start, end, None, 2, BACKWARD)
    y = run_conv(conv_desc(x.shape, w.shape, out, direction=BACKWARD, mode=mode, start=start, end=end, groups=2), device, x, w)
    swapped = np.concatenate([np.swapaxes(w[g * 16 : (g + 1) * 16], 0, 1) for g in range(2)])  # {Cout, Cin/G, 3, 3}
    forward_w = np.ascontiguousarray(np.flip(swapped, axis=(2, 3)))
    front = tuple(2 - s for s in start)
    back = tuple(o - 1 + 2 - (n - 1) - f for o, n, f in zip(out[2:], x.shape[2:], front, strict=True))
    forward = conv_desc(x.shape, forward_w.shape, out, mode=mode, start=front, end=back, groups=2)
    np.testing.assert_allclose(y, run_conv(forward, device, x, forward_w), rtol=1e-5, atol=1e-5)


def test_winograd_results_do_not_depend_on_the_thread_count(rng: np.random.Generator) -> None:
    """Each output is computed once by one worker, in the same order whatever the split."""
    x = rng.uniform(-1, 1, (3, 32, 21, 26)).astype(np.float32)
    w = rng.uniform(-1, 1, (40, 32, 3, 3)).astype(np.float32)
    b = rng.uniform(-1, 1, (1, 40, 1, 1)).astype(np.float32)
    desc = conv_desc(x.shape, w.shape, (3, 40, 21, 26), start=(1, 1), end=(1, 1), bias=True)
    one = run_conv(desc, native_device(threads=1), x, w, b)
    two = run_conv(desc, native_device(threads=2), x, w, b)
    np.testing.assert_array_equal(one, two)


@pytest.mark.parametrize(
    ("x_sizes", "w_sizes", "groups"),
    [((1, 64, 16, 16), (64, 64, 3, 3), 1), ((1, 74, 17, 15), (82, 37, 3, 3), 2)],
    ids=["one-item-four-channel-runs", "two-groups-uneven-runs-partial-tiles-and-panel"],
)
def test_winograd_small_planes_split_by_channels_give_the_one_thread_bits(rng: np.random.Generator, x_sizes: tuple[int, ...], w_sizes: tuple[int, ...], groups: int) -> None:
    """Fewer Winograd items than twice the threads (a 16x16 plane is one item) share each item's V and M: two threads
    split its input channels, then its output panels (37 input channels in runs of 18 and 19, 41 output channels in
    6 panels of 8, the last partial). Each output is still summed once, in the same order: the one-thread bits."""
    x = rng.uniform(-1, 1, x_sizes).astype(np.float32)
    w = rng.uniform(-1, 1, w_sizes).astype(np.float32)
    b = rng.uniform(-1, 1, (1, w_sizes[0], 1, 1)).astype(np.float32)
    out = (1, w_sizes[0], *x_sizes[2:])
    desc = conv_desc(x.shape, w.shape, out, start=(1, 1), end=(1, 1), groups=groups, bias=True)
    two = run_conv(desc, native_device(threads=2), x, w, b)
    np.testing.assert_array_equal(two, run_conv(desc, native_device(threads=1), x, w, b))
    expected = oracle_forward(x, w, (1, 1), (1, 1), (1, 1), out[2:], groups) + b.astype(np.float64)
    np.testing.assert_allclose(two, expected, rtol=1e-4, atol=1e-4)


def test_winograd_error_on_64_channels_stays_far_inside_the_float32_tolerance(rng: np.random.Generator) -> None:
    """64 input channels, inputs and weights in [-1, 1] (|y| up to ~34): |error| / (1 + |y|) against float64 measured
    7e-6, as the GEMM path's; the bound is a fifth of the 1e-4 the fp32 tests allow. (F(4x4, 3x3) measured 1.2e-4
    here, which is why winograd.c uses F(2x2, 3x3).)"""
    native = native_device()
    x = rng.uniform(-1, 1, (1, 64, 28, 28))
    w = rng.uniform(-1, 1, (64, 64, 3, 3))
    y = run_conv(conv_desc(x.shape, w.shape, (1, 64, 28, 28), start=(1, 1), end=(1, 1)), native, x.astype(np.float32), w.astype(np.float32))
    expected = oracle_forward(x.astype(np.float32), w.astype(np.float32), (1, 1), (1, 1), (1, 1), (28, 28), 1)
    error = np.abs(y - expected) / (1.0 + np.abs(expected))
    assert error.max() < 2e-5, f"max |error| / (1 + |y|) = {error.max():.3g}"


@pytest.mark.parametrize(("direction", "kernel", "stride"), [(FORWARD, 3, 1), (BACKWARD, 3, 1), (BACKWARD, 4, 2)], ids=["forward", "backward", "backward-k4-s2"])
@pytest.mark.parametrize("poisoned", ["input", "filter", "float16 input"])
def test_winograd_sized_convolutions_propagate_inf_and_nan_exactly_like_a_direct_sum(device: dmlpy.Device, rng: np.random.Generator, direction: DML_CONVOLUTION_DIRECTION, kernel: int, stride: int, poisoned: str) -> None:
    """A Winograd transform would smear an infinity or NaN over its whole 4x4 patch (inf - inf = NaN); the native
    kernel notices and recomputes such calls by its direct-sum paths, so exactly the outputs whose window holds a
    non-finite value are non-finite, with the direct sum's signs. Both variants: F(2x2, 3x3) and the phases of k4 s2."""
    x = rng.uniform(-1, 1, (1, 16, 10, 10)).astype(np.float32)
    w_sizes = (16, 16, kernel, kernel)
    w = rng.uniform(0.1, 1, w_sizes).astype(np.float32) * rng.choice([-1, 1], w_sizes).astype(np.float32)
    if poisoned == "filter":
        w[2, 5, 1, 1] = -np.inf
    else:
        x[0, 3, 4, 5], x[0, 7, 1, 1] = np.inf, np.nan
    if poisoned == "float16 input":  # packed through the converting (non-vector) row copy
        x, w = x.astype(np.float16), w.astype(np.float16)
    out = dmlpy.convolution_output_sizes(x.shape, w.shape, (stride, stride), (1, 1), (1, 1), (1, 1), None, 1, direction)
    desc = conv_desc(x.shape, w.shape, out, direction=direction, strides=(stride, stride), start=(1, 1), end=(1, 1), dtype=x.dtype)
    with np.errstate(invalid="ignore"):  # the direct sum itself meets inf - inf where taps of both signs overlap
        if direction == FORWARD:
            expected = oracle_forward(x, w, (1, 1), (1, 1), (1, 1), out[2:], 1)
        else:
            expected = oracle_backward_scatter(x, w, (stride, stride), (1, 1), out[2:])
    y = run_conv(desc, device, x, w)
    assert np.isnan(expected).any() or np.isinf(expected).any()
    np.testing.assert_array_equal(np.isnan(y), np.isnan(expected))
    np.testing.assert_array_equal(np.isposinf(y), np.isposinf(expected))
    np.testing.assert_array_equal(np.isneginf(y), np.isneginf(expected))
    finite = np.isfinite(expected)
    tolerance = 2e-2 if x.dtype == np.float16 else 1e-4
    np.testing.assert_allclose(y[finite], expected[finite], rtol=tolerance, atol=tolerance)


# ---------------------------------------------------------------------------------------
# Padding taps are skipped (docs/convolution-semantics.md): an infinite or NaN weight reaches only the outputs
# whose taps read real input through it, on every native path (direct, GEMM, depthwise, Winograd) and in NumPy.


def oracle_backward_gather(x: np.ndarray, w: np.ndarray, strides: Sequence[int], start: Sequence[int], out: Sequence[int], groups: int) -> np.ndarray:
    """Transposed convolution (dilation 1) as a gather over real input only: output o of group g takes
    x[n, ci, i] * w[ci, oc, k] for every ci of the group and tap k with o + start - k = i * s, 0 <= i < in."""
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    n, cin = x.shape[:2]
    cin_g, cout_g = cin // groups, w.shape[1]
    y = np.zeros((n, cout_g * groups, *out))
    for o in itertools.product(*(range(size) for size in out)):
        for k in itertools.product(*(range(size) for size in w.shape[2:])):
            reach = [o[a] + start[a] - k[a] for a in range(len(out))]
            if any(r < 0 or r % strides[a] or r // strides[a] >= x.shape[2 + a] for a, r in enumerate(reach)):
                continue
            i = tuple(r // strides[a] for a, r in enumerate(reach))
            for g in range(groups):
                taps = x[(slice(None), slice(g * cin_g, (g + 1) * cin_g), *i)]  # {N, Cin/G}
                weights = w[(slice(g * cin_g, (g + 1) * cin_g), slice(None), *k)]  # {Cin/G, Cout/G}
                y[(slice(None), slice(g * cout_g, (g + 1) * cout_g), *o)] += taps @ weights
    return y


@pytest.mark.parametrize(("size", "cout"), [(20, 16), (28, 24)], ids=["20x20", "28x28"])
def test_a_plain_stride_2_convtranspose_interleaves_its_w_phases_at_every_lane_offset(device: dmlpy.Device, rng: np.random.Generator, size: int, cout: int) -> None:
    """ConvTranspose k3 s2 p1 with output_padding 1 (the benchmark's decoder layer with fewer channels): each output
    row interleaves two W phases of `size` columns, computed 16 positions of a flattened phase grid (rows of
    size + 1) at a time, so stored segments start at every lane offset and span up to 32 outputs; float32 without
    bias or activation takes the epilogue's one-permute stores. Against the gather oracle in float64."""
    x = rng.uniform(-1, 1, (1, 32, size, size)).astype(np.float32)
    w = rng.uniform(-1, 1, (32, cout, 3, 3)).astype(np.float32)
    out = (2 * size, 2 * size)
    desc = conv_desc(x.shape, w.shape, (1, cout, *out), direction=BACKWARD, strides=(2, 2), start=(1, 1), end=(1, 1))
    y = run_conv(desc, device, x, w)
    expected = oracle_backward_gather(x, w, (2, 2), (1, 1), out, 1)
    error = np.abs(y - expected) / (1.0 + np.abs(expected))
    assert error.max() < 1e-4, f"max |error| / (1 + |y|) = {error.max():.3g}"


def backward_with_zeros_multiplied(x: np.ndarray, w: np.ndarray, stride: int, pad: int, out: Sequence[int], groups: int) -> np.ndarray:
    """What a kernel that stores padding and inserted zeros computes: a stride-1 correlation over the zero-inserted
    input explicitly padded with kernel - 1 - pad zeros in front, every tap multiplied (0 * inf = NaN)."""
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    n, cin, size, kernel = *x.shape[:3], w.shape[2]
    front = kernel - 1 - pad
    assert front >= 0
    dilated = np.zeros((n, cin, front + (size - 1) * stride + 1 + kernel + stride, front + (size - 1) * stride + 1 + kernel + stride))
    dilated[:, :, front : front + (size - 1) * stride + 1 : stride, front : front + (size - 1) * stride + 1 : stride] = x
    cin_g = cin // groups
    flipped = np.flip(w, axis=(2, 3))
    swapped = np.concatenate([np.swapaxes(flipped[g * cin_g : (g + 1) * cin_g], 0, 1) for g in range(groups)], axis=0)
    return oracle_forward(dilated, swapped, (1, 1), (1, 1), (0, 0), out, groups)


# (direction, channels in, channels out, groups, spatial size, kernel, stride, start and end padding)
PADDING_TAP_CASES = [
    pytest.param(FORWARD, 2, 3, 1, 7, 3, 1, 1, id="forward stride 1"),
    pytest.param(FORWARD, 2, 3, 1, 7, 3, 2, 2, id="forward stride 2"),
    pytest.param(FORWARD, 2, 3, 1, 7, 3, 3, 2, id="forward stride 3"),
    pytest.param(FORWARD, 2, 3, 1, 70, 3, 65, 2, id="forward stride 65 (direct path)"),
    pytest.param(FORWARD, 4, 4, 4, 7, 3, 1, 1, id="forward depthwise stride 1"),
    pytest.param(FORWARD, 4, 8, 4, 7, 3, 2, 1, id="forward depthwise stride 2, two outputs per group"),
    pytest.param(FORWARD, 16, 16, 1, 10, 3, 1, 1, id="forward 3x3 stride 1 with 16 channels (Winograd-sized)"),
    pytest.param(BACKWARD, 2, 3, 1, 5, 3, 1, 1, id="backward stride 1"),
    pytest.param(BACKWARD, 2, 3, 1, 5, 3, 2, 2, id="backward stride 2"),
    pytest.param(BACKWARD, 2, 3, 1, 5, 4, 3, 2, id="backward stride 3"),
    pytest.param(BACKWARD, 2, 3, 1, 2, 3, 65, 1, id="backward stride 65 (direct path)"),
    pytest.param(BACKWARD, 4, 4, 4, 5, 3, 2, 1, id="backward depthwise stride 2"),
    pytest.param(BACKWARD, 16, 16, 1, 10, 3, 1, 1, id="backward 3x3 stride 1 with 16 channels (Winograd-sized)"),
    pytest.param(BACKWARD, 16, 16, 1, 10, 4, 2, 1, id="backward k4 stride 2 with 16 channels (Winograd-sized)"),
]


@pytest.mark.parametrize("poison", [math.inf, -math.inf, math.nan], ids=["inf", "-inf", "nan"])
@pytest.mark.parametrize(("direction", "cin", "cout", "groups", "size", "kernel", "stride", "pad"), PADDING_TAP_CASES)
def test_a_non_finite_weight_over_padding_reaches_only_outputs_whose_taps_read_real_input(
    device: dmlpy.Device, rng: np.random.Generator, poison: float, direction: DML_CONVOLUTION_DIRECTION,
    cin: int, cout: int, groups: int, size: int, kernel: int, stride: int, pad: int,
) -> None:  # fmt: skip
    x = rng.uniform(0.5, 1, (1, cin, size, size)).astype(np.float32)
    w_sizes = (cout, cin // groups, kernel, kernel) if direction == FORWARD else (cin, cout // groups, kernel, kernel)
    w = rng.uniform(0.5, 1, w_sizes).astype(np.float32)
    w[0, 0, 0, 0] = poison  # the first tap: it lies in the start padding for the first outputs
    strides, pads = (stride, stride), (pad, pad)
    out = dmlpy.convolution_output_sizes(x.shape, w.shape, strides, (1, 1), pads, pads, None, groups, direction)
    desc = conv_desc(x.shape, w.shape, out, direction=direction, strides=strides, start=pads, end=pads, groups=groups)
    with np.errstate(invalid="ignore"):
        if direction == FORWARD:
            expected = oracle_forward(x, w, strides, (1, 1), pads, out[2:], groups)
            padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad + stride), (pad, pad + stride)))
            zeros_multiplied = oracle_forward(padded, w, strides, (1, 1), (0, 0), out[2:], groups)
        else:
            expected = oracle_backward_gather(x, w, strides, pads, out[2:], groups)
            zeros_multiplied = backward_with_zeros_multiplied(x, w, stride, pad, out[2:], groups)
    # the case matters: multiplying padding zeros by the weight would poison outputs the direct sum keeps finite
    assert (np.isfinite(expected) & ~np.isfinite(zeros_multiplied)).any()
    assert not np.isfinite(expected).all()
    y = run_conv(desc, device, x, w)
    np.testing.assert_array_equal(np.isnan(y), np.isnan(expected))
    np.testing.assert_array_equal(np.isposinf(y), np.isposinf(expected))
    np.testing.assert_array_equal(np.isneginf(y), np.isneginf(expected))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(y[finite], expected[finite], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("direction", [FORWARD, BACKWARD], ids=["forward", "backward"])
def test_an_infinite_float16_weight_over_padding_is_skipped(device: dmlpy.Device, direction: DML_CONVOLUTION_DIRECTION) -> None:
    """1-D, x = [1, 2], filter [inf, 1], stride 1. FORWARD with padding 1 + 1: output o takes x[o - 1 + k] * w[k] over
    real taps: o = 0 only 1 * 1 (tap 0 is padding), so [1, inf, inf]. BACKWARD without padding: output o takes
    x[o - k] * w[k]: o = 2 only x[1] * 1 = 2 (tap 0 would need x[2], past the input), so [inf, inf, 2]."""
    x = np.array([1.0, 2.0], np.float16).reshape(1, 1, 2)
    w = np.array([np.inf, 1.0], np.float16).reshape(1, 1, 2)
    pads = (1,) if direction == FORWARD else (0,)
    out = dmlpy.convolution_output_sizes(x.shape, w.shape, (1,), (1,), pads, pads, None, 1, direction)
    desc = conv_desc(x.shape, w.shape, out, direction=direction, start=pads, end=pads, dtype=np.float16)
    y = run_conv(desc, device, x, w)
    expected = [1.0, np.inf, np.inf] if direction == FORWARD else [np.inf, np.inf, 2.0]
    np.testing.assert_array_equal(y.ravel(), expected)


def test_a_non_finite_weight_is_found_through_a_channels_last_filter_layout(device: dmlpy.Device, rng: np.random.Generator) -> None:
    """The same padding-tap rule when the filter is stored channels-last (its strides are not packed), so the
    native check for non-finite weights must read through the strides: one NaN at the last tap of the last filter."""
    x = rng.uniform(0.5, 1, (1, 4, 7, 7)).astype(np.float32)
    w = rng.uniform(0.5, 1, (6, 4, 3, 3)).astype(np.float32)
    w[5, 3, 2, 2] = np.nan  # the last tap: in the end padding for the last outputs
    desc = conv_desc(x.shape, w.shape, (1, 6, 7, 7), start=(1, 1), end=(1, 1), layouts={"w": dmlpy.nhwc_strides(w.shape)})
    expected = oracle_forward(x, w, (1, 1), (1, 1), (1, 1), (7, 7), 1)
    y = run_conv(desc, device, x, w)
    assert np.isfinite(expected[0, 5, 6, :]).all() and np.isfinite(expected[0, 5, :, 6]).all()
    np.testing.assert_array_equal(np.isnan(y), np.isnan(expected))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(y[finite], expected[finite], rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------------
# Few output positions, many channels (dmlpy/native/conv_small.h): FORWARD with at most CONV_SMALL_MAX_P
# computed outputs per image and group, at least 64 (input channel, tap) pairs and 16 output channels per
# group. The input is copied im2col-style once and the filter is read in its stored layout; up to
# CONV_SMALL_DOT_P positions the sums are dot products along the channels. These cases take it (the NumPy
# backend runs them as the reference does) and are held to the oracles of check_case.


def small_path_limits() -> dict[str, int]:
    """CONV_SMALL_MAX_P, CONV_SMALL_DOT_P and CONV_SMALL_WINO_P as conv_small.h defines them (skips without the sources)."""
    path = os.path.join(os.path.dirname(dmlpy.__file__), "native", "conv_small.h")
    if not os.path.exists(path):
        pytest.skip("the native sources are not installed with this dmlpy")
    with open(path, encoding="utf-8") as f:
        source = f.read()
    return {name: int(re.search(rf"#define CONV_SMALL_{name} (\d+)", source).group(1)) for name in ("MAX_P", "DOT_P", "WINO_P")}  # type: ignore[union-attr]


@st.composite
def small_output_cases(draw: st.DrawFn, spatial: int, dtype: str = "float32") -> ConvCase:
    """FORWARD, few outputs per dim, enough channels that the filter is the large operand: groups, strides,
    dilations, asymmetric padding, OutputPadding, both modes, bias, fused activations and every layout."""
    groups = draw(st.integers(1, 2))
    kernel, strides, dilations, start, end, output_padding, in_spatial = [], [], [], [], [], [], []
    with_output_padding = draw(st.integers(0, 4)) == 0
    longest = {1: 40, 2: 9, 3: 4}[spatial]
    for _ in range(spatial):
        k, s, d = draw(st.integers(1, 3)), draw(st.integers(1, 2)), draw(st.integers(1, 2))
        sp, ep = draw(st.integers(0, 2)), draw(st.integers(0, 2))
        keff = (k - 1) * d + 1
        low = max(1, keff - sp - ep)
        in_spatial.append(draw(st.integers(low, max(low, longest))))
        output_padding.append(draw(st.integers(0, 1)) if with_output_padding else 0)
        kernel.extend([k])
        strides.append(s)
        dilations.append(d)
        start.append(sp)
        end.append(ep)
    kvol = math.prod(kernel)
    cin_g = draw(st.integers(-(-64 // kvol), -(-64 // kvol) + 24))
    cout_g = draw(st.integers(16, 40))
    return ConvCase(
        direction=int(FORWARD), mode=draw(st.sampled_from([int(CROSS), int(CONVOLUTION)])),
        in_sizes=(draw(st.integers(1, 2)), cin_g * groups, *in_spatial), filter_sizes=(cout_g * groups, cin_g, *kernel),
        strides=tuple(strides), dilations=tuple(dilations), start=tuple(start), end=tuple(end),
        output_padding=tuple(output_padding), extra=(0,) * spatial, groups=groups,
        bias=draw(st.booleans()), activation=draw(st.sampled_from([None, None, *FUSED])), dtype=dtype,
        layouts=tuple(draw(st.sampled_from(LAYOUTS[kind])) for kind in "xwby"),  # type: ignore[arg-type]
        seed=draw(st.integers(0, 2**32 - 1)),
    )  # fmt: skip


@settings(PROPERTY, max_examples=60)
@given(case=small_output_cases(spatial=2))
def test_property_few_outputs_many_channels_2d_fp32(backend: str, case: ConvCase) -> None:
    check_case(backend, case)


@settings(PROPERTY, max_examples=30)
@given(case=st.one_of(small_output_cases(spatial=1), small_output_cases(spatial=3)))
def test_property_few_outputs_many_channels_1d_and_3d_fp32(backend: str, case: ConvCase) -> None:
    check_case(backend, case)


@settings(PROPERTY, max_examples=30)
@given(case=st.one_of(small_output_cases(spatial=2, dtype="float16"), small_output_cases(spatial=1, dtype="float16")))
def test_property_few_outputs_many_channels_fp16(backend: str, case: ConvCase) -> None:
    check_case(backend, case)


def small_case(in_sizes: tuple[int, ...], filter_sizes: tuple[int, ...], **fields: Any) -> ConvCase:
    spatial = len(in_sizes) - 2
    zeros, ones = (0,) * spatial, (1,) * spatial
    defaults: dict[str, Any] = {
        "mode": int(CROSS), "strides": ones, "dilations": ones, "start": ones, "end": ones, "output_padding": zeros, "extra": zeros,
        "groups": 1, "bias": False, "activation": None, "dtype": "float32", "layouts": ("packed",) * 4, "seed": 31,
    }  # fmt: skip
    defaults.update(fields)
    return ConvCase(direction=int(FORWARD), in_sizes=in_sizes, filter_sizes=filter_sizes, **defaults)


SMALL_OUTPUT_CASES = {
    "ResNet's last stage shape, 7x7, bias and relu": small_case((1, 128, 7, 7), (64, 128, 3, 3), bias=True, activation=Activation("RELU")),
    "2x2 outputs (dot products), 2 groups, CONVOLUTION mode": small_case((2, 96, 2, 2), (48, 48, 3, 3), groups=2, mode=int(CONVOLUTION), seed=32),
    "1x1 output from a 3x3 input, no padding (one position)": small_case((1, 80, 3, 3), (24, 80, 3, 3), start=(0, 0), end=(0, 0), seed=33),
    "1x1 filter, 14x14, NHWC input and output, channels-last filter": small_case(
        (1, 64, 14, 14), (40, 64, 1, 1), start=(0, 0), end=(0, 0), layouts=("nhwc", "channels-last", "packed", "nhwc"), seed=34,
    ),
    "1x1 filter, 14x14, packed, bias: the input planes are copied as B's rows, 8-row tiles store the outputs": small_case(
        (1, 64, 14, 14), (40, 64, 1, 1), start=(0, 0), end=(0, 0), bias=True, seed=40,
    ),
    "1x1 filter, 13x15, packed, two images, bias and relu": small_case(
        (2, 72, 13, 15), (48, 72, 1, 1), start=(0, 0), end=(0, 0), bias=True, activation=Activation("RELU"), seed=41,
    ),
    "stride 2 dilation 2, asymmetric padding, OutputPadding, zero-stride bias, leaky relu": small_case(
        (1, 48, 9, 8), (32, 48, 3, 3), strides=(2, 2), dilations=(2, 2), start=(2, 0), end=(1, 2), output_padding=(1, 0),
        bias=True, activation=Activation("LEAKY_RELU", (0.1,)), layouts=("packed", "packed", "zero-strides", "packed"), seed=35,
    ),
    "fp16, padded layouts, sigmoid, 4x4": small_case(
        (1, 64, 4, 4), (32, 64, 3, 3), dtype="float16", bias=True, activation=Activation("SIGMOID"), layouts=("padded", "padded", "packed", "padded"), seed=36,
    ),
    "fp16 dot products, NHWC, 3x3 outputs": small_case(
        (1, 72, 3, 3), (20, 72, 3, 3), dtype="float16", layouts=("nhwc", "channels-last", "packed", "nhwc"), seed=37,
    ),
    "3-D, 2x2x2 outputs": small_case((1, 16, 2, 2, 2), (24, 16, 3, 3, 3), seed=38),
    "K blocks: 2304 channel-taps x 64 positions (B larger than one block)": small_case((1, 256, 8, 8), (24, 256, 3, 3), seed=39),
    "ResNet's 8x8 stage, 64 -> 64 channels, bias: 4-row tiles, every tap a shifted masked load of the plane": small_case(
        (1, 64, 8, 8), (64, 64, 3, 3), bias=True, seed=42,
    ),
    "a 3x3 filter over a 2-row input, stride 1: the first and last filter rows read padding only": small_case(
        (1, 32, 2, 11), (20, 32, 3, 3), seed=43,
    ),
}


@pytest.mark.parametrize("case", list(SMALL_OUTPUT_CASES.values()), ids=list(SMALL_OUTPUT_CASES))
def test_few_output_convolutions_match_the_oracles(backend: str, case: ConvCase) -> None:
    check_case(backend, case)


def test_the_few_output_cases_meet_the_native_selection_limits() -> None:
    """Each case is FORWARD with at most MAX_P computed positions per image and group, 64+ channel-taps and
    16+ output channels per group; some are dot-product cases (<= DOT_P positions), some are not."""
    limit = small_path_limits()
    positions = []
    for name, case in SMALL_OUTPUT_CASES.items():
        computed = math.prod(size - op for size, op in zip(case.out_sizes[2:], case.output_padding, strict=True))
        assert case.direction == int(FORWARD) and 0 < computed <= limit["MAX_P"], name
        assert case.filter_sizes[1] * math.prod(case.filter_sizes[2:]) >= 64 and case.filter_sizes[0] // case.groups >= 16, name
        positions.append(computed)
    assert min(positions) <= limit["DOT_P"] < max(positions)


@pytest.mark.parametrize(("x_sizes", "cout", "kernel"), [((1, 256, 7, 7), 96, 3), ((2, 128, 2, 2), 40, 3), ((1, 64, 14, 14), 80, 1)], ids=["7x7", "2x2-dot-products", "1x1-filter-14x14"])
def test_few_output_results_do_not_depend_on_the_thread_count(rng: np.random.Generator, x_sizes: tuple[int, ...], cout: int, kernel: int) -> None:
    """Items are runs of output channels; each output is one item's sum in kk order whatever the split."""
    x = rng.uniform(-1, 1, x_sizes).astype(np.float32)
    w = rng.uniform(-1, 1, (cout, x_sizes[1], kernel, kernel)).astype(np.float32)
    b = rng.uniform(-1, 1, (1, cout, 1, 1)).astype(np.float32)
    pad = (kernel // 2,) * 2
    desc = conv_desc(x.shape, w.shape, (x_sizes[0], cout, *x_sizes[2:]), start=pad, end=pad, bias=True)
    np.testing.assert_array_equal(run_conv(desc, native_device(threads=1), x, w, b), run_conv(desc, native_device(threads=2), x, w, b))


@pytest.mark.parametrize("positions", [(1, 1), (1, 20), (1, 32)], ids=["dot-products", "broadcast", "broadcast-whole-vectors"])
@pytest.mark.parametrize("channels", [64, 16], ids=["576-channel-taps", "144-channel-taps-one-K-block"])
def test_an_infinite_weight_over_padding_is_skipped_with_few_outputs_and_many_channels(device: dmlpy.Device, rng: np.random.Generator, positions: tuple[int, int], channels: int) -> None:
    """3x3 filter, padding 1, input height 1: the taps of filter rows 0 and 2 fall in padding for every output, so an
    infinite weight there reaches no output (the direct sum skips padding taps); NaN would come from 0 * inf. With
    16 input channels the sums are one K block, whose kernels store 20 positions' outputs themselves."""
    x = rng.uniform(-1, 1, (1, channels, *positions)).astype(np.float32)
    w = rng.uniform(-1, 1, (16, channels, 3, 3)).astype(np.float32)
    w[3, 10, 0, 1] = np.inf
    w[7, 0, 2, 2] = -np.inf
    desc = conv_desc(x.shape, w.shape, (1, 16, *positions), start=(1, 1), end=(1, 1))
    finite_w = w.copy()
    finite_w[~np.isfinite(finite_w)] = 0.0
    expected = oracle_forward(x, finite_w, (1, 1), (1, 1), (1, 1), positions, 1)
    y = run_conv(desc, device, x, w)
    assert np.isfinite(y).all()
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4)


def test_an_infinite_weight_on_a_real_tap_reaches_its_outputs_with_few_outputs(device: dmlpy.Device, rng: np.random.Generator) -> None:
    """The centre tap multiplies a real input at every output: +inf times positive inputs gives +inf in that output
    channel only, the other channels stay finite and equal the direct sum."""
    x = rng.uniform(0.5, 1, (1, 64, 3, 3)).astype(np.float32)
    w = rng.uniform(-1, 1, (16, 64, 3, 3)).astype(np.float32)
    w[5, 2, 1, 1] = np.inf
    desc = conv_desc(x.shape, w.shape, (1, 16, 3, 3), start=(1, 1), end=(1, 1))
    y = run_conv(desc, device, x, w)
    assert np.isposinf(y[0, 5]).all()
    others = [c for c in range(16) if c != 5]
    np.testing.assert_allclose(y[0, others], oracle_forward(x, w[others], (1, 1), (1, 1), (1, 1), (3, 3), 1)[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("spatial", [(14, 14), (4, 8)], ids=["14x14-tail-of-4", "4x8-no-tail"])
def test_an_infinite_input_reaches_exactly_its_positions_in_a_1x1_convolution_with_few_outputs(device: dmlpy.Device, rng: np.random.Generator, spatial: tuple[int, int]) -> None:
    """1x1 filter, no padding, float32 without activation (the few-positions path's kernels store these outputs
    themselves): +inf in one input channel at one position, with positive weights on that channel in output
    channels 0-7 and negative ones in 8-15, gives +inf and -inf at that position only; every other output is
    finite and equals the direct sum."""
    x = rng.uniform(-1, 1, (1, 64, *spatial)).astype(np.float32)
    w = rng.uniform(-1, 1, (16, 64, 1, 1)).astype(np.float32)
    w[:8, 9] = rng.uniform(0.5, 1, (8, 1, 1))
    w[8:, 9] = -rng.uniform(0.5, 1, (8, 1, 1))
    row, col = spatial[0] - 1, spatial[1] - 1
    x[0, 9, row, col] = np.inf
    y = run_conv(conv_desc(x.shape, w.shape, (1, 16, *spatial)), device, x, w)
    assert np.isposinf(y[0, :8, row, col]).all() and np.isneginf(y[0, 8:, row, col]).all()
    finite_x = x.copy()
    finite_x[0, 9, row, col] = 0.0
    expected = oracle_forward(finite_x, w, (1, 1), (1, 1), (0, 0), spatial, 1)
    hit = np.zeros(y.shape, bool)
    hit[0, :, row, col] = True
    assert np.isfinite(y[~hit]).all()
    np.testing.assert_allclose(y[~hit], expected[~hit], rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------------------
# Many small channels (MobileNet's depthwise and expansion layers at 2x2 .. 14x14). The native depthwise path
# (Cin/G == 1) packs whole small planes in batches and computes rows of at most 16 outputs several grid rows per
# vector; the few-positions path (conv_small.h) also takes 1x1/kxk problems with fewer than 64 channel-taps when
# each group has at least 4 output channels per channel-tap. These cases take those paths; all are held to the
# oracles of check_case (the oracle, onnxruntime, and the NumPy backend).


@st.composite
def many_small_channel_cases(draw: st.DrawFn, spatial: int, dtype: str = "float32") -> ConvCase:
    """Depthwise (one input channel per group) with 17 to 48 groups of tiny planes: both directions (BACKWARD at
    stride 1 is computed like FORWARD), strides, dilations, asymmetric padding, OutputPadding, both modes, bias,
    fused activations, every layout, 1 or 2 output channels per group, 1 or 2 images."""
    direction = draw(st.sampled_from([int(FORWARD), int(FORWARD), int(BACKWARD)]))
    backward = direction == BACKWARD
    groups, cout_g = draw(st.integers(17, 48)), draw(st.sampled_from([1, 1, 2]))
    kernel, strides, dilations, start, end, output_padding, extra, in_spatial = [], [], [], [], [], [], [], []
    with_output_padding = draw(st.integers(0, 4)) == 0
    longest = {1: 20, 2: 9, 3: 4}[spatial]
    for _ in range(spatial):
        k, s, d = draw(st.integers(1, 3)), draw(st.sampled_from([1, 1, 2])), draw(st.sampled_from([1, 1, 2]))
        sp, ep = draw(st.integers(0, min(2, (k - 1) * d))), draw(st.integers(0, min(2, (k - 1) * d)))
        keff = (k - 1) * d + 1
        if backward:
            low = max(1, 1 + -(-(sp + ep + 1 - keff) // s))
            extra.append(draw(st.integers(0, s - 1)))
        else:
            low = max(1, keff - sp - ep)
            extra.append(0)
        in_spatial.append(draw(st.integers(low, max(low, longest))))
        output_padding.append(draw(st.integers(0, s - 1 if backward else 1)) if with_output_padding else 0)
        kernel.append(k)
        strides.append(s)
        dilations.append(d)
        start.append(sp)
        end.append(ep)
    filter_sizes = (groups, cout_g, *kernel) if backward else (groups * cout_g, 1, *kernel)
    return ConvCase(
        direction=direction, mode=draw(st.sampled_from([int(CROSS), int(CONVOLUTION)])),
        in_sizes=(draw(st.integers(1, 2)), groups, *in_spatial), filter_sizes=filter_sizes,
        strides=tuple(strides), dilations=tuple(dilations), start=tuple(start), end=tuple(end),
        output_padding=tuple(output_padding), extra=tuple(extra), groups=groups,
        bias=draw(st.booleans()), activation=draw(st.sampled_from([None, None, *FUSED])), dtype=dtype,
        layouts=tuple(draw(st.sampled_from(LAYOUTS[kind])) for kind in "xwby"),  # type: ignore[arg-type]
        seed=draw(st.integers(0, 2**32 - 1)),
    )  # fmt: skip


@settings(PROPERTY, max_examples=50)
@given(case=many_small_channel_cases(spatial=2))
def test_property_depthwise_with_many_small_channels_2d_fp32(backend: str, case: ConvCase) -> None:
    check_case(backend, case)


@settings(PROPERTY, max_examples=30)
@given(case=st.one_of(many_small_channel_cases(spatial=1), many_small_channel_cases(spatial=3)))
def test_property_depthwise_with_many_small_channels_1d_and_3d_fp32(backend: str, case: ConvCase) -> None:
    check_case(backend, case)


@settings(PROPERTY, max_examples=30)
@given(case=st.one_of(many_small_channel_cases(spatial=2, dtype="float16"), many_small_channel_cases(spatial=1, dtype="float16")))
def test_property_depthwise_with_many_small_channels_fp16(backend: str, case: ConvCase) -> None:
    check_case(backend, case)


def depthwise_case(channels: int, spatial_in: tuple[int, ...], kernel: int, **fields: Any) -> ConvCase:
    pad = (kernel // 2,) * len(spatial_in)
    fields = {"start": pad, "end": pad, "groups": channels, **fields}
    return small_case((1, channels, *spatial_in), (channels, 1, *(kernel,) * len(spatial_in)), **fields)


MANY_SMALL_CHANNEL_CASES = {
    "MobileNetV2 depthwise, 336 channels of 2x2, bias and relu": depthwise_case(
        336, (2, 2), 3, bias=True, activation=Activation("RELU"),
    ),
    "144 channels of 4x4, two images, NHWC input and output": small_case(
        (2, 144, 4, 4), (144, 1, 3, 3), groups=144, layouts=("nhwc", "packed", "packed", "nhwc"), seed=41,
    ),
    "96 channels of 8x8 to 4x4 at stride 2, channels-last filter": depthwise_case(
        96, (8, 8), 3, strides=(2, 2), layouts=("packed", "channels-last", "packed", "packed"), seed=42,
    ),
    "64 channels of 14x14 (two grid rows per 32 lanes), CONVOLUTION mode, padded layouts": depthwise_case(
        64, (14, 14), 3, mode=int(CONVOLUTION), layouts=("padded", "padded", "packed", "padded"), seed=43,
    ),
    "40 channels of 5x5, dilation 2, asymmetric padding, leaky relu": depthwise_case(
        40, (5, 5), 3, dilations=(2, 2), start=(2, 1), end=(0, 2), activation=Activation("LEAKY_RELU", (0.1,)), seed=44,
    ),
    "fp16, 72 channels of 3x3, 5x5 filter, zero-stride bias, sigmoid": depthwise_case(
        72, (3, 3), 5, dtype="float16", bias=True, activation=Activation("SIGMOID"), layouts=("packed", "packed", "zero-strides", "packed"), seed=45,
    ),
    "1-D, 50 channels of 6": depthwise_case(50, (6,), 3, seed=46),
    "3-D, 33 channels of 3x3x3": depthwise_case(33, (3, 3, 3), 3, bias=True, seed=47),
    "2 output channels per group, 24 groups of 4x4": small_case((1, 24, 4, 4), (48, 1, 3, 3), groups=24, seed=48),
    "17-wide rows (the row path: 85 outputs a plane, more than the channels-as-lanes path takes), 20 channels": depthwise_case(
        20, (5, 17), 3, seed=49,
    ),
    "channels as lanes: 21 channels of 3x3 (a block of 16 and one of 5), stride 2, CONVOLUTION mode, bias, relu": depthwise_case(
        21, (3, 3), 3, strides=(2, 2), mode=int(CONVOLUTION), bias=True, activation=Activation("RELU"), seed=50,
    ),
    "MobileNetV2's stride-2 layer, 48 channels of 32x32 to 16x16 (grid rows of 17 columns, four output rows at a time), bias, relu": depthwise_case(
        48, (32, 32), 3, strides=(2, 2), bias=True, activation=Activation("RELU"), seed=51,
    ),
    "18 channels of 14x15 (grid rows of 17 columns: three groups of four output rows, then two single rows)": depthwise_case(
        18, (14, 15), 3, seed=52,
    ),
    "12 channels of 5x40 (rows of 40 outputs: two vectors at once, then a masked one), bias": depthwise_case(
        12, (5, 40), 3, bias=True, seed=53,
    ),
}


@pytest.mark.parametrize("case", list(MANY_SMALL_CHANNEL_CASES.values()), ids=list(MANY_SMALL_CHANNEL_CASES))
def test_depthwise_convolutions_with_many_small_channels_match_the_oracles(backend: str, case: ConvCase) -> None:
    check_case(backend, case)


SMALL_K_CASES = {
    "MobileNetV2 expansion 56 -> 336 at 2x2 (dot products)": small_case((1, 56, 2, 2), (336, 56, 1, 1), start=(0, 0), end=(0, 0), bias=True, seed=51),
    "32 -> 192 at 4x4, relu": small_case((1, 32, 4, 4), (192, 32, 1, 1), start=(0, 0), end=(0, 0), activation=Activation("RELU"), seed=52),
    "24 -> 144 at 8x8, NHWC input and output, channels-last filter": small_case(
        (1, 24, 8, 8), (144, 24, 1, 1), start=(0, 0), end=(0, 0), layouts=("nhwc", "channels-last", "packed", "nhwc"), seed=53,
    ),
    "fp16, 16 -> 96 at 16x16 (256 positions), two images": small_case(
        (2, 16, 16, 16), (96, 16, 1, 1), start=(0, 0), end=(0, 0), dtype="float16", bias=True, seed=54,
    ),
    "2x2 filter, 4 -> 64 channels at 5x5, stride 2, padding": small_case((1, 4, 5, 5), (64, 4, 2, 2), strides=(2, 2), seed=55),
    "2 groups of 8 -> 40, 1-D, 9 positions": small_case((1, 16, 9), (80, 8, 1), start=(0,), end=(0,), groups=2, seed=56),
    "3-D, 8 -> 48 at 3x3x3, 1x1x1 filter with padding (border outputs read only padding)": small_case(
        (1, 8, 3, 3, 3), (48, 8, 1, 1, 1), bias=True, activation=Activation("SIGMOID"), seed=57,
    ),
}


@pytest.mark.parametrize("case", list(SMALL_K_CASES.values()), ids=list(SMALL_K_CASES))
def test_pointwise_convolutions_with_few_channel_taps_match_the_oracles(backend: str, case: ConvCase) -> None:
    check_case(backend, case)


# Depthwise 3x3 FORWARD at stride 1 or 2 straight from the input (dw_k3_rows; planes whose output rows have 8 columns
# or more)
DEPTHWISE_3X3_CASES = {
    "MobileNetV2's 48 channels of 32x32 to 16x16, bias, CLIP": depthwise_case(48, (32, 32), 3, strides=(2, 2), bias=True, activation=CLIP, seed=71),
    "two images of 8 channels of 70x67: three 16-output blocks a row, the column before each block carried in, a partial block": small_case(
        (2, 8, 70, 67), (8, 1, 3, 3), groups=8, strides=(2, 2), bias=True, seed=72,
    ),
    "no padding (the column after each block carried in), 34x50, odd rows left over after groups of four": small_case(
        (1, 12, 34, 50), (12, 1, 3, 3), groups=12, strides=(2, 2), start=(0, 0), end=(0, 0), activation=Activation("RELU"), seed=73,
    ),
    "CONVOLUTION mode (the filter flipped), end padding 1, 17x31": small_case(
        (1, 16, 17, 31), (16, 1, 3, 3), groups=16, strides=(2, 2), start=(1, 1), end=(1, 1), mode=int(CONVOLUTION), seed=74,
    ),
    "a 112x112 plane split into row chunks across items, 2 channels": small_case((1, 2, 112, 112), (2, 1, 3, 3), groups=2, strides=(2, 2), bias=True, seed=75),
    "padded output rows and a channels-last filter": small_case(
        (1, 24, 20, 20), (24, 1, 3, 3), groups=24, strides=(2, 2), layouts=("packed", "channels-last", "packed", "padded"), seed=76,
    ),
    "stride 1: MobileNetV2's 48 channels of 16x16, bias, CLIP": depthwise_case(48, (16, 16), 3, bias=True, activation=CLIP, seed=77),
    "stride 1, 40 columns (three blocks, the first and last reading padding), 10 rows (two left over)": small_case(
        (1, 6, 10, 40), (6, 1, 3, 3), groups=6, bias=True, seed=78,
    ),
    "stride 1 without padding, two images": small_case((2, 10, 12, 21), (10, 1, 3, 3), groups=10, start=(0, 0), end=(0, 0), seed=79),
    "stride 1, 96 channels of 8x8 (rows of 8 outputs: the smallest this path takes), CONVOLUTION mode": depthwise_case(
        96, (8, 8), 3, mode=int(CONVOLUTION), seed=80,
    ),
}


@pytest.mark.parametrize("case", list(DEPTHWISE_3X3_CASES.values()), ids=list(DEPTHWISE_3X3_CASES))
def test_depthwise_3x3_rows_from_the_input_match_the_oracles(backend: str, case: ConvCase) -> None:
    check_case(backend, case)


BITS_CASES = [name for name in DEPTHWISE_3X3_CASES if name.startswith(("MobileNetV2", "two images", "no padding", "stride 1"))]


@pytest.mark.parametrize("name", BITS_CASES)
def test_depthwise_3x3_rows_give_the_packed_path_s_bits(name: str) -> None:
    """An NHWC input (W stride above 1) takes the packed depthwise path: the same taps in the same order, the same bytes."""
    case = DEPTHWISE_3X3_CASES[name]
    x, w, b = case.arrays()
    device = native_device()
    direct = run_conv(case.desc(), device, x, w, b)
    packed = run_conv(dataclasses.replace(case, layouts=("nhwc", *case.layouts[1:])).desc(), device, x, w, b)
    np.testing.assert_array_equal(direct, packed)


# A fused CLIP on each native path's epilogue (MobileNets fuse ReLU6, CLIP 0..6, into every expansion and depthwise layer)
FUSED_CLIP_CASES = {
    "blocked GEMM path: 1x1 filter, 8 -> 48 channels at 32x32 (MobileNetV2's first expansion), bias, CLIP 0..1 (ReLU6's form)": small_case(
        (1, 8, 32, 32), (48, 8, 1, 1), start=(0, 0), end=(0, 0), bias=True, activation=Activation("CLIP", (0.0, 1.0)), seed=61,
    ),
    "Winograd: 3x3, 32 -> 32 channels at 16x16, bias": winograd_case((1, 32, 16, 16), (32, 32, 3, 3), bias=True, activation=CLIP, seed=62),
    "few positions: 1x1 filter, 64 -> 256 channels at 2x2, bias": small_case(
        (1, 64, 2, 2), (256, 64, 1, 1), start=(0, 0), end=(0, 0), bias=True, activation=CLIP, seed=63,
    ),
    "depthwise rows: 48 channels of 32x32 to 16x16 at stride 2, bias": depthwise_case(48, (32, 32), 3, strides=(2, 2), bias=True, activation=CLIP, seed=64),
    "depthwise channels as lanes: 144 channels of 4x4, bias": depthwise_case(144, (4, 4), 3, bias=True, activation=CLIP, seed=65),
    "backward k4 stride 2, 16 -> 8 channels": winograd_case((1, 16, 6, 6), (16, 8, 4, 4), direction=BACKWARD, strides=(2, 2), bias=True, activation=CLIP, seed=66),
    "fp16, bounds binary16 cannot hold (-0.3 and 0.7): clamped in float32, then rounded once": small_case(
        (1, 16, 8, 8), (24, 16, 3, 3), dtype="float16", bias=True, activation=Activation("CLIP", (-0.3, 0.7)), seed=67,
    ),
}


@pytest.mark.parametrize("case", list(FUSED_CLIP_CASES.values()), ids=list(FUSED_CLIP_CASES))
def test_a_fused_clip_clamps_each_path_s_outputs(backend: str, case: ConvCase) -> None:
    check_case(backend, case)


def test_the_few_channel_tap_cases_meet_the_native_selection_limits() -> None:
    """Each case is FORWARD with at most MAX_P computed positions per image and group, fewer than 64 but at least
    MIN_K channel-taps, and at least 4 output channels per channel-tap (and 16) per group."""
    limit = small_path_limits()
    path = os.path.join(os.path.dirname(dmlpy.__file__), "native", "conv_small.h")
    with open(path, encoding="utf-8") as f:
        min_k = int(re.search(r"#define CONV_SMALL_MIN_K (\d+)", f.read()).group(1))  # type: ignore[union-attr]
    for name, case in SMALL_K_CASES.items():
        computed = math.prod(size - op for size, op in zip(case.out_sizes[2:], case.output_padding, strict=True))
        k, cout_g = case.filter_sizes[1] * math.prod(case.filter_sizes[2:]), case.filter_sizes[0] // case.groups
        assert case.direction == int(FORWARD) and 0 < computed <= limit["MAX_P"], name
        assert min_k <= k < 64 and cout_g >= max(16, 4 * k), name


@pytest.mark.parametrize(
    ("x_sizes", "w_sizes", "groups", "pad"),
    [((2, 336, 2, 2), (336, 1, 3, 3), 336, 1), ((1, 96, 14, 14), (96, 1, 3, 3), 96, 1), ((1, 56, 2, 2), (336, 56, 1, 1), 1, 0), ((1, 32, 7, 7), (192, 32, 1, 1), 1, 0)],
    ids=["depthwise-2x2", "depthwise-14x14", "expansion-2x2", "expansion-7x7"],
)  # fmt: skip
def test_many_small_channel_results_do_not_depend_on_the_thread_count(
    rng: np.random.Generator, x_sizes: tuple[int, ...], w_sizes: tuple[int, ...], groups: int, pad: int
) -> None:
    """Every output is one item's sum in a fixed tap order, whichever thread runs the item."""
    x = rng.uniform(-1, 1, x_sizes).astype(np.float32)
    w = rng.uniform(-1, 1, w_sizes).astype(np.float32)
    b = rng.uniform(-1, 1, (1, w_sizes[0], 1, 1)).astype(np.float32)
    desc = conv_desc(x.shape, w.shape, (x_sizes[0], w_sizes[0], *x_sizes[2:]), start=(pad, pad), end=(pad, pad), groups=groups, bias=True)
    np.testing.assert_array_equal(run_conv(desc, native_device(threads=1), x, w, b), run_conv(desc, native_device(threads=2), x, w, b))


def test_an_infinite_depthwise_weight_over_padding_is_skipped_in_every_small_channel(device: dmlpy.Device, rng: np.random.Generator) -> None:
    """1x1 planes, 3x3 filter, padding 1: only the centre tap reads real input, so infinities and NaNs in the other
    taps of 40 channels reach no output (the direct sum skips padding taps; 0 * inf would give NaN)."""
    x = rng.uniform(-1, 1, (1, 40, 1, 1)).astype(np.float32)
    w = rng.uniform(-1, 1, (40, 1, 3, 3)).astype(np.float32)
    w[::3, 0, 0, 0] = np.inf
    w[1::3, 0, 2, 1] = np.nan
    y = run_conv(conv_desc(x.shape, w.shape, x.shape, start=(1, 1), end=(1, 1), groups=40), device, x, w)
    np.testing.assert_allclose(y, x * w[:, :, 1:2, 1:2].transpose(1, 0, 2, 3), rtol=1e-6, atol=0)


def test_an_infinite_pointwise_weight_reaches_only_outputs_that_read_real_input(device: dmlpy.Device) -> None:
    """1x1 filter, 32 -> 192 channels, padding 1: the border outputs read only padding and stay 0; channel 7's
    weight is +inf on input channel 3, whose input is positive, so its interior outputs are +inf."""
    x = np.linspace(0.5, 1.0, 32 * 4).astype(np.float32).reshape(1, 32, 2, 2)
    w = np.linspace(-1.0, 1.0, 192 * 32).astype(np.float32).reshape(192, 32, 1, 1)
    w[7, 3, 0, 0] = np.inf
    y = run_conv(conv_desc(x.shape, w.shape, (1, 192, 4, 4), start=(1, 1), end=(1, 1)), device, x, w)
    border = np.ones((4, 4), bool)
    border[1:3, 1:3] = False
    assert (y[0][:, border] == 0).all()
    assert np.isposinf(y[0, 7, 1:3, 1:3]).all()
    finite = [c for c in range(192) if c != 7]
    expected = np.einsum("oc,nchw->nohw", w[finite, :, 0, 0].astype(np.float64), x.astype(np.float64))
    np.testing.assert_allclose(y[0, finite, 1:3, 1:3], expected[0], rtol=1e-5, atol=1e-5)
