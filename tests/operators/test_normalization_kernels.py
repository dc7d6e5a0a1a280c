"""BATCH_NORMALIZATION, MEAN_VARIANCE_NORMALIZATION and MEAN_VARIANCE_NORMALIZATION1 through the whole pipeline, on both backends.

Oracles: onnxruntime on the ONNX models DirectML's ONNX mapping pairs with these operators
(BatchNormalization opset 15 in inference mode; LayerNormalization opset 17, which is
MEAN_VARIANCE_NORMALIZATION1 over the last axes; InstanceNormalization, MEAN_VARIANCE_NORMALIZATION1
over the spatial axes; MeanVarianceNormalization, whose epsilon of 1e-9 sits outside the square
root, so the descs it checks have Epsilon 0 and inputs whose deviation is far above 1e-9), and
values worked by hand from the pages' formula
``FusedActivation(Scale * (Input - Mean) / sqrt(Variance + Epsilon) + Bias)``: where epsilon
sits, the population variance, broadcast Mean and Variance, NormalizeVariance FALSE, NULL Scale
or Bias, NaN and constant inputs. The ``device`` fixture runs every case on both backends (the native
one through dmlpy/native/normalization.c; test_normalization_native.py compares the two closely).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import assert_rule

import dmlpy
from dmlpy import FusedActivation, buffer_tensor, nhwc_strides
from dmlpy.operators.normalization import (
    DML_BATCH_NORMALIZATION_OPERATOR_DESC,
    DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC,
    DML_MEAN_VARIANCE_NORMALIZATION_OPERATOR_DESC,
)

F32, F16 = np.float32, np.float16
NAN = float("nan")


# ---------------------------------------------------------------------------------------
# onnxruntime oracle: a chain of nodes, the first taking the inputs, each next one the previous output


def run_onnx(nodes: list[tuple[str, dict[str, Any]]], inputs: list[np.ndarray | None], opset: int) -> np.ndarray:
    import onnxruntime as ort
    from onnx import helper

    names = [f"x{i}" if v is not None else "" for i, v in enumerate(inputs)]
    while names and names[-1] == "":
        names.pop()
    graph_nodes = []
    previous = names
    for k, (op, attrs) in enumerate(nodes):
        out = "y" if k == len(nodes) - 1 else f"t{k}"
        graph_nodes.append(helper.make_node(op, previous, [out], **attrs))
        previous = [out]
    given = [(n, v) for n, v in zip(names, inputs) if n]
    graph = helper.make_graph(
        graph_nodes,
        "oracle",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape)) for n, v in given],
        [helper.make_empty_tensor_value_info("y")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, dict(given))[0]  # type: ignore[no-any-return]


def tolerance(dtype: Any) -> dict[str, float]:
    return {"rtol": 2e-3, "atol": 2e-3} if dtype == F16 else {"rtol": 1e-5, "atol": 1e-5}


# ---------------------------------------------------------------------------------------
# Descs


def bn_desc(x: np.ndarray, stats: tuple[int, ...], *, spatial: bool = True, epsilon: float = 1e-5, fused: Any = None, x_strides: Any = None) -> DML_BATCH_NORMALIZATION_OPERATOR_DESC:
    t = x.dtype
    return DML_BATCH_NORMALIZATION_OPERATOR_DESC(
        buffer_tensor(t, x.shape, x_strides), buffer_tensor(t, stats), buffer_tensor(t, stats), buffer_tensor(t, stats), buffer_tensor(t, stats),
        buffer_tensor(t, x.shape), Spatial=spatial, Epsilon=epsilon, FusedActivation=fused,
    )  # fmt: skip


def mvn1_desc(x: np.ndarray, axes: tuple[int, ...], scale: tuple[int, ...] | None, bias: tuple[int, ...] | None, *, normalize_variance: bool = True,
              epsilon: float = 1e-5, fused: Any = None) -> DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC:  # fmt: skip
    t = x.dtype
    return DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC(
        buffer_tensor(t, x.shape), None if scale is None else buffer_tensor(t, scale), None if bias is None else buffer_tensor(t, bias), buffer_tensor(t, x.shape),
        len(axes), list(axes), normalize_variance, epsilon, fused,
    )  # fmt: skip


def mvn_desc(x: np.ndarray, cross_channel: bool, stats: tuple[int, ...] | None = None, *, normalize_variance: bool = True, epsilon: float = 0.0) -> DML_MEAN_VARIANCE_NORMALIZATION_OPERATOR_DESC:
    t = x.dtype
    tensor = None if stats is None else buffer_tensor(t, stats)
    return DML_MEAN_VARIANCE_NORMALIZATION_OPERATOR_DESC(buffer_tensor(t, x.shape), tensor, tensor, buffer_tensor(t, x.shape), cross_channel, normalize_variance, epsilon)


def channel(v: np.ndarray) -> np.ndarray:
    return v.reshape(1, -1, 1, 1)


# ---------------------------------------------------------------------------------------
# BATCH_NORMALIZATION against onnxruntime's BatchNormalization (opset 15, inference)


@pytest.mark.parametrize("dtype", [F32, F16], ids=["FLOAT32", "FLOAT16 computed in float32"])
@pytest.mark.parametrize(
    ("epsilon", "fused", "onnx_after", "nhwc"),
    [
        pytest.param(1e-3, None, [], False, id="per-channel statistics, epsilon 1e-3"),
        pytest.param(0.5, None, [], False, id="a large epsilon, inside the square root"),
        pytest.param(1e-5, FusedActivation.relu(), [("Relu", {})], False, id="fused RELU after the normalization"),
        pytest.param(1e-5, None, [], True, id="an NHWC input through strides"),
    ],
)
def test_batch_normalization_matches_onnxruntime(device: dmlpy.Device, rng: np.random.Generator, dtype: Any, epsilon: float, fused: Any, onnx_after: list[Any], nhwc: bool) -> None:
    shape = (2, 3, 4, 5)
    x = rng.normal(1.0, 2.0, shape).astype(dtype)
    mean, scale, bias = (rng.normal(0, 1, 3).astype(dtype) for _ in range(3))
    variance = rng.uniform(0.1, 3.0, 3).astype(dtype)
    expected = run_onnx([("BatchNormalization", {"epsilon": epsilon}), *onnx_after], [x, scale, bias, mean, variance], opset=15)
    desc = bn_desc(x, (1, 3, 1, 1), epsilon=epsilon, fused=fused, x_strides=nhwc_strides(shape) if nhwc else None)
    got = dmlpy.run(desc, device=device, InputTensor=x, MeanTensor=channel(mean), VarianceTensor=channel(variance), ScaleTensor=channel(scale), BiasTensor=channel(bias))
    assert got.dtype == dtype
    np.testing.assert_allclose(got.astype(F32), expected.astype(F32), **tolerance(dtype))


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (1, 3, 2, 3, 4)], ids=["2-D {N, C}", "3-D {N, C, L}", "5-D {N, C, D, H, W}"])
def test_batch_normalization_of_other_ranks_matches_onnxruntime(device: dmlpy.Device, rng: np.random.Generator, shape: tuple[int, ...]) -> None:
    x = rng.normal(0.0, 2.0, shape).astype(F32)
    mean, scale, bias = (rng.normal(0, 1, 3).astype(F32) for _ in range(3))
    variance = rng.uniform(0.1, 3.0, 3).astype(F32)
    expected = run_onnx([("BatchNormalization", {"epsilon": 1e-5})], [x, scale, bias, mean, variance], opset=15)
    stats = (1, 3) + (1,) * (len(shape) - 2)
    got = dmlpy.run(bn_desc(x, stats), device=device, InputTensor=x, MeanTensor=mean.reshape(stats), VarianceTensor=variance.reshape(stats),
                    ScaleTensor=scale.reshape(stats), BiasTensor=bias.reshape(stats))  # fmt: skip
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


# Hand values from the page's formula y = Scale * (x - Mean) / sqrt(Variance + Epsilon) + Bias
X22 = np.array([[[[1.0, 2.0], [3.0, 4.0]]]], F32)
BN_HAND = [
    pytest.param(X22, [[[[1.0, 2.0]]]], [[[[4.0, 0.25]]]], 1.0, 0.0, 0.0, [[[[0.0, 0.0], [1.0, 4.0]]]],
                 id="Mean and Variance {1,1,1,2} broadcast over H: (x - m) / sqrt(v) per column"),  # fmt: skip
    pytest.param(X22, [[[[1.0, 2.0], [3.0, 0.0]]]], [[[[4.0, 1.0], [0.0, 0.0]]]], 2.0, 1.0, 0.25, [[[[1.0, 1.0], [1.0, 17.0]]]],
                 id="full-size Mean and Variance; Variance 0 with Epsilon 0.25 divides by sqrt(0.25) = 0.5, not by 0.25"),  # fmt: skip
    pytest.param(X22, [[[[2.5]]]], [[[[0.0]]]], 1.0, 0.0, 0.0, [[[[-np.inf, -np.inf], [np.inf, np.inf]]]],
                 id="Variance 0 and Epsilon 0: (x - m) / 0 is an infinity"),  # fmt: skip
]


@pytest.mark.parametrize(("x", "mean", "variance", "scale", "bias", "epsilon", "expected"), BN_HAND)
@pytest.mark.parametrize("spatial", [True, False], ids=["Spatial TRUE", "Spatial FALSE (no effect on the values)"])
def test_batch_normalization_hand_values(device: dmlpy.Device, x: np.ndarray, mean: Any, variance: Any, scale: float, bias: float, epsilon: float, expected: Any, spatial: bool) -> None:
    mean, variance = np.array(mean, F32), np.array(variance, F32)
    t = F32
    desc = DML_BATCH_NORMALIZATION_OPERATOR_DESC(
        buffer_tensor(t, x.shape), buffer_tensor(t, mean.shape), buffer_tensor(t, variance.shape), buffer_tensor(t, (1, 1, 1, 1)), buffer_tensor(t, (1, 1, 1, 1)),
        buffer_tensor(t, x.shape), Spatial=spatial, Epsilon=epsilon,
    )  # fmt: skip
    got = dmlpy.run(desc, device=device, InputTensor=x, MeanTensor=mean, VarianceTensor=variance, ScaleTensor=np.full((1, 1, 1, 1), scale, F32), BiasTensor=np.full((1, 1, 1, 1), bias, F32))
    np.testing.assert_array_equal(got, np.array(expected, F32))


def test_batch_normalization_propagates_nan_only_where_it_is(device: dmlpy.Device) -> None:
    x = np.array([[[[NAN, 2.0]], [[3.0, 5.0]]]], F32)  # {1, 2, 1, 2}
    ones, zeros = np.ones((1, 2, 1, 1), F32), np.zeros((1, 2, 1, 1), F32)
    got = dmlpy.run(bn_desc(x, (1, 2, 1, 1), epsilon=0.0), device=device, InputTensor=x, MeanTensor=zeros, VarianceTensor=ones, ScaleTensor=ones, BiasTensor=zeros)
    np.testing.assert_array_equal(got, x)  # mean 0, variance 1, scale 1, bias 0: the identity, NaN included


# ---------------------------------------------------------------------------------------
# MEAN_VARIANCE_NORMALIZATION1 against LayerNormalization and InstanceNormalization


@pytest.mark.parametrize("dtype", [F32, F16], ids=["FLOAT32", "FLOAT16 computed in float32"])
@pytest.mark.parametrize(
    ("shape", "axis", "with_bias"),
    [
        pytest.param((2, 3, 4, 5), -1, True, id="LayerNormalization over W: Axes {3}"),
        pytest.param((2, 3, 4, 5), -2, True, id="LayerNormalization over H, W: Axes {2, 3}"),
        pytest.param((2, 3, 4, 5), 1, False, id="LayerNormalization over C, H, W with Scale only (NULL Bias, FL 5.2)"),
        pytest.param((6,), 0, True, id="a 1-D tensor (FL 3.1 allows 1 to 8 dimensions)"),
        pytest.param((2, 2, 3, 2, 4), -3, True, id="a 5-D tensor over its last three axes"),
        pytest.param((4, 8), -1, True, id="a transformer's {tokens, hidden} rows"),
    ],
)
def test_mvn1_over_the_last_axes_is_layer_normalization(device: dmlpy.Device, rng: np.random.Generator, dtype: Any, shape: tuple[int, ...], axis: int, with_bias: bool) -> None:
    x = rng.normal(0.5, 3.0, shape).astype(dtype)
    normalized = shape[axis % len(shape):]
    scale = rng.normal(1.0, 0.5, normalized).astype(dtype)
    bias = rng.normal(0.0, 1.0, normalized).astype(dtype) if with_bias else None
    expected = run_onnx([("LayerNormalization", {"axis": axis, "epsilon": 1e-4})], [x, scale, bias], opset=17)
    padded = (1,) * (len(shape) - len(normalized)) + normalized
    desc = mvn1_desc(x, tuple(range(axis % len(shape), len(shape))), padded, padded if with_bias else None, epsilon=1e-4)
    inputs = {"InputTensor": x, "ScaleTensor": scale.reshape(padded)} | ({"BiasTensor": bias.reshape(padded)} if bias is not None else {})
    got = dmlpy.run(desc, device=device, **inputs)
    np.testing.assert_allclose(got.astype(F32), expected.astype(F32), **tolerance(dtype))


@pytest.mark.parametrize("dtype", [F32, F16], ids=["FLOAT32", "FLOAT16 computed in float32"])
@pytest.mark.parametrize("epsilon", [1e-5, 0.3], ids=["epsilon 1e-5", "epsilon 0.3"])
def test_mvn1_over_the_spatial_axes_is_instance_normalization(device: dmlpy.Device, rng: np.random.Generator, dtype: Any, epsilon: float) -> None:
    x = rng.normal(-1.0, 2.0, (2, 3, 5, 4)).astype(dtype)
    scale, bias = rng.normal(1, 0.5, 3).astype(dtype), rng.normal(0, 1, 3).astype(dtype)
    expected = run_onnx([("InstanceNormalization", {"epsilon": epsilon})], [x, scale, bias], opset=6)
    got = dmlpy.run(mvn1_desc(x, (2, 3), (1, 3, 1, 1), (1, 3, 1, 1), epsilon=epsilon), device=device, InputTensor=x, ScaleTensor=channel(scale), BiasTensor=channel(bias))
    np.testing.assert_allclose(got.astype(F32), expected.astype(F32), **tolerance(dtype))


@pytest.mark.parametrize(
    ("fused", "onnx_after"),
    [
        pytest.param(FusedActivation.sigmoid(), [("Sigmoid", {})], id="fused SIGMOID"),
        pytest.param(FusedActivation.leaky_relu(0.1), [("LeakyRelu", {"alpha": 0.1})], id="fused LEAKY_RELU alpha 0.1"),
    ],
)
def test_mvn1_fused_activation_follows_the_normalization(device: dmlpy.Device, rng: np.random.Generator, fused: Any, onnx_after: list[Any]) -> None:
    x = rng.normal(0, 1, (1, 2, 3, 4)).astype(F32)
    scale, bias = rng.normal(1, 0.5, (4,)).astype(F32), rng.normal(0, 1, (4,)).astype(F32)
    expected = run_onnx([("LayerNormalization", {"axis": -1, "epsilon": 1e-5}), *onnx_after], [x, scale, bias], opset=17)
    got = dmlpy.run(mvn1_desc(x, (3,), (1, 1, 1, 4), (1, 1, 1, 4), fused=fused), device=device, InputTensor=x, ScaleTensor=scale.reshape(1, 1, 1, 4), BiasTensor=bias.reshape(1, 1, 1, 4))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("axes", "onnx_axes"), [((0, 2, 3), [0, 2, 3]), ((1,), [1]), ((3, 2), [2, 3])], ids=["Axes {0,2,3} (ONNX's default)", "Axes {1}", "Axes {3,2} in any order"])
def test_mvn1_matches_onnx_mean_variance_normalization(device: dmlpy.Device, rng: np.random.Generator, axes: tuple[int, ...], onnx_axes: list[int]) -> None:
    x = rng.normal(2.0, 3.0, (2, 3, 4, 5)).astype(F32)
    expected = run_onnx([("MeanVarianceNormalization", {"axes": onnx_axes})], [x], opset=13)
    got = dmlpy.run(mvn1_desc(x, axes, None, None, epsilon=0.0), device=device, InputTensor=x)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


# Hand values over one row of 4 (Axes {3} of a {1,1,1,4} input)
MVN_HAND = [
    pytest.param([1.0, 3.0, 1.0, 3.0], True, 0.0, None, None, [-1.0, 1.0, -1.0, 1.0],
                 id="population variance: mean 2, variance 1 (the sample variance would be 4/3)"),  # fmt: skip
    pytest.param([1.0, 3.0, 1.0, 3.0], True, 3.0, None, None, [-0.5, 0.5, -0.5, 0.5],
                 id="Epsilon 3 inside the root: divides by sqrt(1 + 3) = 2"),  # fmt: skip
    pytest.param([1.0, 2.0, 3.0, 6.0], False, 1.0, 2.0, 1.0, [-3.0, -1.0, 1.0, 7.0],
                 id="NormalizeVariance FALSE: Scale * (x - mean) + Bias, Epsilon unused"),  # fmt: skip
    pytest.param([5.0, 5.0, 5.0, 5.0], True, 1e-5, None, None, [0.0, 0.0, 0.0, 0.0],
                 id="a constant row: 0 / sqrt(0 + Epsilon) = 0"),  # fmt: skip
    pytest.param([5.0, 5.0, 5.0, 5.0], True, 0.0, None, None, [NAN, NAN, NAN, NAN],
                 id="a constant row with Epsilon 0: 0 / 0 is NaN"),  # fmt: skip
    pytest.param([1.0, NAN, 3.0, 4.0], True, 1e-5, None, None, [NAN, NAN, NAN, NAN],
                 id="a NaN spreads through its row's mean"),  # fmt: skip
    pytest.param([1.0, 3.0, 1.0, 3.0], True, 0.0, None, 10.0, [9.0, 11.0, 9.0, 11.0],
                 id="Bias without Scale (FL 5.2): a NULL Scale is 1"),  # fmt: skip
]


@pytest.mark.parametrize(("row", "normalize_variance", "epsilon", "scale", "bias", "expected"), MVN_HAND)
def test_mvn1_hand_values(device: dmlpy.Device, row: list[float], normalize_variance: bool, epsilon: float, scale: float | None, bias: float | None, expected: list[float]) -> None:
    x = np.array(row, F32).reshape(1, 1, 1, 4)
    one = (1, 1, 1, 1)
    desc = mvn1_desc(x, (3,), None if scale is None else one, None if bias is None else one, normalize_variance=normalize_variance, epsilon=epsilon)
    inputs = {"InputTensor": x} | ({"ScaleTensor": np.full(one, scale, F32)} if scale is not None else {}) | ({"BiasTensor": np.full(one, bias, F32)} if bias is not None else {})
    got = dmlpy.run(desc, device=device, **inputs)
    np.testing.assert_array_equal(got.reshape(-1), np.array(expected, F32))


def test_mvn1_normalizes_each_group_on_its_own(device: dmlpy.Device) -> None:
    # Axes {2, 3} of {1, 2, 1, 2}: channel 0 is [0, 2] (mean 1, variance 1), channel 1 is [10, 30] (mean 20, variance 100)
    x = np.array([[[[0.0, 2.0]], [[10.0, 30.0]]]], F32)
    got = dmlpy.run(mvn1_desc(x, (2, 3), None, None, epsilon=0.0), device=device, InputTensor=x)
    np.testing.assert_array_equal(got, np.array([[[[-1.0, 1.0]], [[-1.0, 1.0]]]], F32))


# ---------------------------------------------------------------------------------------
# MEAN_VARIANCE_NORMALIZATION: CrossChannel picks the axes


@pytest.mark.parametrize(("cross_channel", "onnx_axes"), [(True, [1, 2, 3]), (False, [2, 3])], ids=["CrossChannel TRUE: {C, H, W}", "CrossChannel FALSE: {H, W}"])
def test_mvn_cross_channel_matches_onnx_mean_variance_normalization(device: dmlpy.Device, rng: np.random.Generator, cross_channel: bool, onnx_axes: list[int]) -> None:
    x = rng.normal(1.0, 2.0, (2, 3, 4, 5)).astype(F32)
    expected = run_onnx([("MeanVarianceNormalization", {"axes": onnx_axes})], [x], opset=13)
    got = dmlpy.run(mvn_desc(x, cross_channel), device=device, InputTensor=x)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [F32, F16], ids=["FLOAT32", "FLOAT16 computed in float32"])
def test_mvn_with_scale_and_bias_is_instance_normalization(device: dmlpy.Device, rng: np.random.Generator, dtype: Any) -> None:
    x = rng.normal(0.0, 2.0, (1, 4, 3, 3)).astype(dtype)
    scale, bias = rng.normal(1, 0.5, 4).astype(dtype), rng.normal(0, 1, 4).astype(dtype)
    expected = run_onnx([("InstanceNormalization", {"epsilon": 1e-2})], [x, scale, bias], opset=6)
    t = x.dtype
    desc = DML_MEAN_VARIANCE_NORMALIZATION_OPERATOR_DESC(buffer_tensor(t, x.shape), buffer_tensor(t, (1, 4, 1, 1)), buffer_tensor(t, (1, 4, 1, 1)), buffer_tensor(t, x.shape), False, True, 1e-2)
    got = dmlpy.run(desc, device=device, InputTensor=x, ScaleTensor=channel(scale), BiasTensor=channel(bias))
    np.testing.assert_allclose(got.astype(F32), expected.astype(F32), **tolerance(dtype))


def test_mvn_without_variance_only_centres(device: dmlpy.Device) -> None:
    # CrossChannel TRUE over {C, H, W} of {2, 2, 1, 1}: batch 0 is [1, 5] (mean 3), batch 1 is [0, -4] (mean -2)
    x = np.array([1.0, 5.0, 0.0, -4.0], F32).reshape(2, 2, 1, 1)
    got = dmlpy.run(mvn_desc(x, True, normalize_variance=False), device=device, InputTensor=x)
    np.testing.assert_array_equal(got.reshape(-1), np.array([-2.0, 2.0, 2.0, -2.0], F32))


# ---------------------------------------------------------------------------------------
# GraphBuilder: batch_normalization -> layer_normalization -> mean_variance_normalization


def test_a_graph_of_normalizations_matches_onnxruntime(device: dmlpy.Device, rng: np.random.Generator) -> None:
    shape = (2, 3, 4, 5)
    x = rng.normal(0, 2, shape).astype(F32)
    mean, scale, bias = (rng.normal(0, 1, 3).astype(F32) for _ in range(3))
    variance = rng.uniform(0.5, 2.0, 3).astype(F32)
    ln_scale, ln_bias = rng.normal(1, 0.3, 5).astype(F32), rng.normal(0, 1, 5).astype(F32)

    g = dmlpy.GraphBuilder(device)
    inputs = {name: g.input(name, "float32", a.shape) for name, a in
              (("x", x), ("mean", mean), ("variance", variance), ("scale", scale), ("bias", bias), ("ln_scale", ln_scale), ("ln_bias", ln_bias))}  # fmt: skip
    y = g.batch_normalization(inputs["x"], inputs["mean"], inputs["variance"], inputs["scale"], inputs["bias"], epsilon=1e-3, activation=FusedActivation.relu())
    y = g.layer_normalization(y, inputs["ln_scale"], inputs["ln_bias"], axis=-1, epsilon=1e-4)
    z = g.mean_variance_normalization(y, inputs["scale"], inputs["bias"], epsilon=1e-5)  # instance normalization
    got = g.compile({"y": y, "z": z})(x=x, mean=mean, variance=variance, scale=scale, bias=bias, ln_scale=ln_scale, ln_bias=ln_bias)

    bn = run_onnx([("BatchNormalization", {"epsilon": 1e-3}), ("Relu", {})], [x, scale, bias, mean, variance], opset=15)
    ln = run_onnx([("LayerNormalization", {"axis": -1, "epsilon": 1e-4})], [bn, ln_scale, ln_bias], opset=17)
    instance = run_onnx([("InstanceNormalization", {"epsilon": 1e-5})], [ln, scale, bias], opset=6)
    np.testing.assert_allclose(got["y"], ln, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got["z"], instance, rtol=1e-4, atol=1e-4)


def test_the_builder_reads_onnx_channel_vectors_of_a_2d_batch_normalization(device: dmlpy.Device, rng: np.random.Generator) -> None:
    x = rng.normal(0, 1, (4, 3)).astype(F32)
    mean, scale, bias = (rng.normal(0, 1, 3).astype(F32) for _ in range(3))
    variance = rng.uniform(0.5, 2.0, 3).astype(F32)
    g = dmlpy.GraphBuilder(device)
    values = [g.input(name, "float32", a.shape) for name, a in (("x", x), ("m", mean), ("v", variance), ("s", scale), ("b", bias))]
    y = g.batch_normalization(*values)
    got = g.compile({"y": y})(x=x, m=mean, v=variance, s=scale, b=bias)["y"]
    np.testing.assert_allclose(got, run_onnx([("BatchNormalization", {"epsilon": 1e-5})], [x, scale, bias, mean, variance], opset=15), rtol=1e-5, atol=1e-6)


def test_the_builder_mean_variance_normalization_takes_any_axes(device: dmlpy.Device) -> None:
    g = dmlpy.GraphBuilder(device)
    x = g.input("x", "float32", (1, 2, 2, 2))
    y = g.mean_variance_normalization(x, axes=(1, 2, 3), epsilon=0.0)
    got = g.compile({"y": y})(x=np.arange(8, dtype=F32).reshape(1, 2, 2, 2))["y"]
    # mean 3.5, population variance (2 * (0.25 + 2.25 + 6.25 + 12.25)) / 8 = 5.25
    np.testing.assert_allclose(got.reshape(-1), (np.arange(8) - 3.5) / np.sqrt(5.25), rtol=1e-6)


def test_the_builder_names_a_bad_axis() -> None:
    g = dmlpy.GraphBuilder(backend="numpy")
    x = g.input("x", "float32", (1, 2, 2, 2))
    with pytest.raises(dmlpy.DmlError, match="argument 'axes'") as error:
        g.mean_variance_normalization(x, axes=(1, 4))
    assert_rule(error.value, "NORMALIZATION.AXIS_RANGE", "DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC.Axes[1]")
    with pytest.raises(ValueError, match="argument 'axis'"):
        g.layer_normalization(x, axis=4)
