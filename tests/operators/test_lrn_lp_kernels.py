"""LOCAL_RESPONSE_NORMALIZATION, LP_POOLING(1) and LP_NORMALIZATION through the whole pipeline, on both backends, and their rules.

Oracles: values worked by hand from the pages' formulas -
``Input / (Bias + (Alpha / LocalSize) * sum(Input^2 over the local region))^Beta`` (LRN, the region
clipped to the tensor), ``(sum |x|^P over the window)^(1 / P)`` (Lp pooling) and the Lp norm along
Axis (Lp normalization) - and onnxruntime on the one-node ONNX models onnxruntime's DirectML provider
maps to them (LRN with CrossChannel TRUE and the same alpha; LpPool-18; LpNormalization). onnxruntime's
CPU LRN takes odd sizes only, so even sizes are checked against onnx's reference evaluator, on inputs
with N == C (its loop runs over the batch axis where it means the channels: with N == C the two agree).
The ``device`` fixture runs every case on both backends (the native one falls back to these NumPy kernels).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import assert_rule

import dmlpy
from dmlpy import buffer_tensor, nhwc_strides
from dmlpy.builder import GraphBuilder
from dmlpy.operators.normalization import (
    DML_LOCAL_RESPONSE_NORMALIZATION_OPERATOR_DESC,
    DML_LP_NORMALIZATION_OPERATOR_DESC,
)
from dmlpy.operators.pooling import (
    DML_LP_POOLING1_OPERATOR_DESC,
    DML_LP_POOLING_OPERATOR_DESC,
    average_pooling_output_sizes,
)

F32, F16 = np.float32, np.float16
FL = dmlpy.DML_FEATURE_LEVEL
RNG = np.random.default_rng(2024)
pytestmark = pytest.mark.filterwarnings("ignore::dmlpy.DmlWarning")


# ---------------------------------------------------------------------------------------
# Oracles


def onnx_model(op: str, x: np.ndarray, attributes: dict[str, Any], opset: int) -> Any:
    from onnx import helper

    node = helper.make_node(op, ["x"], ["y"], **attributes)
    graph = helper.make_graph([node], "oracle", [helper.make_tensor_value_info("x", helper.np_dtype_to_tensor_dtype(x.dtype), list(x.shape))],
                              [helper.make_empty_tensor_value_info("y")])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    return model


def ort(op: str, x: np.ndarray, attributes: dict[str, Any], opset: int = 18) -> np.ndarray:
    """onnxruntime (CPU) on the one-node model; a FLOAT16 input is run as the float32 of its binary16 values."""
    import onnxruntime as ort_

    x32 = x.astype(F32)
    options = ort_.SessionOptions()
    options.log_severity_level = 3
    session = ort_.InferenceSession(onnx_model(op, x32, attributes, opset).SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x32})[0]  # type: ignore[no-any-return]


def onnx_reference(op: str, x: np.ndarray, attributes: dict[str, Any], opset: int = 13) -> np.ndarray:
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(onnx_model(op, x, attributes, opset)).run(None, {"x": x})[0]  # type: ignore[no-any-return]


def tolerance(dtype: Any) -> dict[str, float]:
    return {"rtol": 2e-3, "atol": 2e-3} if dtype == F16 else {"rtol": 1e-5, "atol": 1e-6}


# ---------------------------------------------------------------------------------------
# Descs


def lrn(x: np.ndarray, local_size: int, alpha: float, beta: float, bias: float, *, cross: bool = True, x_strides: Any = None) -> DML_LOCAL_RESPONSE_NORMALIZATION_OPERATOR_DESC:
    return DML_LOCAL_RESPONSE_NORMALIZATION_OPERATOR_DESC(buffer_tensor(x.dtype, x.shape, x_strides), buffer_tensor(x.dtype, x.shape), CrossChannel=cross,
                                                           LocalSize=local_size, Alpha=alpha, Beta=beta, Bias=bias)  # fmt: skip


def lpn(x: np.ndarray, axis: int, p: int, epsilon: float = 1e-5) -> DML_LP_NORMALIZATION_OPERATOR_DESC:
    return DML_LP_NORMALIZATION_OPERATOR_DESC(buffer_tensor(x.dtype, x.shape), buffer_tensor(x.dtype, x.shape), Axis=axis, Epsilon=epsilon, P=p)


def lpp(x: np.ndarray, window: Any, strides: Any = None, start: Any = None, end: Any = None, dilations: Any = None, *, p: int = 2, ceil: bool = False,
        out: Any = None, x_strides: Any = None) -> DML_LP_POOLING_OPERATOR_DESC | DML_LP_POOLING1_OPERATOR_DESC:  # fmt: skip
    spatial = x.ndim - 2
    strides, start, end = strides or (1,) * spatial, start or (0,) * spatial, end or (0,) * spatial
    out = out or average_pooling_output_sizes(x.shape, window, strides, start, end, dilations, ceil_mode=ceil)
    tensors = (buffer_tensor(x.dtype, x.shape, x_strides), buffer_tensor(x.dtype, out))
    if dilations is None:
        return DML_LP_POOLING_OPERATOR_DESC(*tensors, spatial, strides, window, start, end, P=p)
    return DML_LP_POOLING1_OPERATOR_DESC(*tensors, spatial, strides, window, start, end, dilations, P=p)


def row(*values: float, dtype: Any = F32) -> np.ndarray:
    """``{1, 1, 1, n}``: one batch item, one channel, one row."""
    return np.array(values, dtype).reshape(1, 1, 1, -1)


def channels(*values: float, dtype: Any = F32) -> np.ndarray:
    """``{1, C, 1, 1}``: one value per channel."""
    return np.array(values, dtype).reshape(1, -1, 1, 1)


# ---------------------------------------------------------------------------------------
# LOCAL_RESPONSE_NORMALIZATION: hand values (Alpha = LocalSize and Beta = Bias = 1 make y = x / (1 + sum of squares))

LRN_HAND = [
    ("LocalSize 3 across channels clips the region at both ends", channels(1, 2, 3), 3, True, [1 / (1 + 5), 2 / (1 + 14), 3 / (1 + 13)]),
    ("an even LocalSize 2 reaches one channel forward, none back", channels(1, 2, 3), 2, True, [1 / (1 + 5), 2 / (1 + 13), 3 / (1 + 9)]),
    ("LocalSize 4 reaches one channel back and two forward", channels(1, 2, 3, 4), 4, True, [1 / (1 + 14), 2 / (1 + 30), 3 / (1 + 29), 4 / (1 + 25)]),
    ("LocalSize 1 is each element on its own", channels(1, 2, 3), 1, True, [1 / 2, 2 / 5, 3 / 10]),
    ("CrossChannel FALSE sums LocalSize positions along W (H of 1 clips to the row) and divides Alpha by LocalSize", row(1, 2, 3, 4), 3, False,
     [1 / (1 + 5), 2 / (1 + 14), 3 / (1 + 29), 4 / (1 + 25)]),
    ("CrossChannel FALSE never sums across channels", channels(1, 2, 3), 3, False, [1 / 2, 2 / 5, 3 / 10]),
    ("CrossChannel TRUE never sums along W", row(1, 2, 3, 4), 3, True, [1 / 2, 2 / 5, 3 / 10, 4 / 17]),
]  # fmt: skip


@pytest.mark.parametrize(("x", "local_size", "cross", "expected"), [pytest.param(*c[1:], id=c[0]) for c in LRN_HAND])
@pytest.mark.parametrize("dtype", [F32, F16])
def test_lrn_follows_the_page_formula_by_hand(device: dmlpy.Device, x: np.ndarray, local_size: int, cross: bool, expected: list[float], dtype: Any) -> None:
    x = x.astype(dtype)
    y = dmlpy.run(lrn(x, local_size, alpha=float(local_size), beta=1.0, bias=1.0, cross=cross), device=device, InputTensor=x)
    assert y.dtype == dtype
    np.testing.assert_allclose(y.reshape(-1), expected, **tolerance(dtype))


def test_lrn_within_channels_sums_a_square_of_height_and_width(device: dmlpy.Device) -> None:
    x = np.arange(1, 10, dtype=F32).reshape(1, 1, 3, 3)
    y = dmlpy.run(lrn(x, 3, alpha=3.0, beta=1.0, bias=1.0, cross=False), device=device, InputTensor=x)
    # the centre's region is the whole 3x3 (sum of squares 285); the corner (0, 0) covers rows 0-1 and columns 0-1: 1 + 4 + 16 + 25
    assert y[0, 0, 1, 1] == pytest.approx(5 / 286, rel=1e-6)
    assert y[0, 0, 0, 0] == pytest.approx(1 / 47, rel=1e-6)


def test_lrn_with_a_local_size_of_2_to_the_32_minus_1_sums_every_channel_at_once(device: dmlpy.Device) -> None:
    x = channels(1, 2, 3)
    size = 2**32 - 1
    y = dmlpy.run(lrn(x, size, alpha=float(size), beta=1.0, bias=1.0), device=device, InputTensor=x)  # Alpha / LocalSize is 1 to float32's precision
    np.testing.assert_allclose(y.reshape(-1), [1 / 15, 2 / 15, 3 / 15], rtol=1e-6)


def test_lrn_a_nan_reaches_only_the_outputs_whose_region_holds_it(device: dmlpy.Device) -> None:
    x = channels(1, float("nan"), 3, 4, 5)
    y = dmlpy.run(lrn(x, 3, alpha=3.0, beta=1.0, bias=1.0), device=device, InputTensor=x).reshape(-1)
    assert np.isnan(y[:3]).all()
    np.testing.assert_allclose(y[3:], [4 / (1 + 50), 5 / (1 + 41)], rtol=1e-6)


@pytest.mark.parametrize("size", [1, 3, 5, 7])
@pytest.mark.parametrize("dtype", [F32, F16])
def test_lrn_agrees_with_onnxruntime_on_odd_sizes(device: dmlpy.Device, size: int, dtype: Any) -> None:
    x = RNG.normal(size=(2, 6, 3, 4)).astype(dtype)
    attributes = {"size": size, "alpha": 0.4, "beta": 0.75, "bias": 1.2}
    y = dmlpy.run(lrn(x, size, 0.4, 0.75, 1.2), device=device, InputTensor=x)
    np.testing.assert_allclose(y, ort("LRN", x, attributes, 13), **tolerance(dtype))


@pytest.mark.parametrize("size", [2, 4, 6])
def test_lrn_agrees_with_onnx_reference_on_even_sizes(device: dmlpy.Device, size: int) -> None:
    x = RNG.normal(size=(5, 5, 2, 3)).astype(F32)  # N == C: see the module docstring
    y = dmlpy.run(lrn(x, size, 0.3, 0.6, 1.5), device=device, InputTensor=x)
    np.testing.assert_allclose(y, onnx_reference("LRN", x, {"size": size, "alpha": 0.3, "beta": 0.6, "bias": 1.5}), **tolerance(F32))


def test_lrn_reads_an_nhwc_input_through_its_strides(device: dmlpy.Device) -> None:
    x = RNG.normal(size=(2, 5, 3, 4)).astype(F32)
    nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    desc = lrn(x, 3, 0.4, 0.75, 1.0, x_strides=nhwc_strides(x.shape))
    got = dmlpy.run(desc, device=device, InputTensor=np.lib.stride_tricks.as_strided(nhwc, x.shape, [s * 4 for s in nhwc_strides(x.shape)]))
    np.testing.assert_allclose(got, ort("LRN", x, {"size": 3, "alpha": 0.4, "beta": 0.75, "bias": 1.0}, 13), **tolerance(F32))


# ---------------------------------------------------------------------------------------
# LP_NORMALIZATION

LPN_HAND = [
    ("p=2 divides by the Euclidean norm", [3, 4], 2, 1e-5, [0.6, 0.8]),
    ("p=1 divides by the sum of magnitudes, signs kept", [-3, 4], 1, 1e-5, [-3 / 7, 4 / 7]),
    ("an all-zero slice divides by Epsilon and stays 0", [0, 0], 2, 1e-5, [0, 0]),
    ("a norm below Epsilon divides by Epsilon instead", [3e-7, 4e-7], 2, 1e-5, [0.03, 0.04]),
    ("a norm above Epsilon ignores it", [3e-3, 4e-3], 2, 1e-5, [0.6, 0.8]),
]


@pytest.mark.parametrize(("values", "p", "epsilon", "expected"), [pytest.param(*c[1:], id=c[0]) for c in LPN_HAND])
def test_lp_normalization_by_hand(device: dmlpy.Device, values: list[float], p: int, epsilon: float, expected: list[float]) -> None:
    x = np.array(values, F32).reshape(1, 1, 1, -1)
    y = dmlpy.run(lpn(x, 3, p, epsilon), device=device, InputTensor=x)
    np.testing.assert_allclose(y.reshape(-1), expected, rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize(("shape", "axis"), [((2, 3, 4, 5), 0), ((2, 3, 4, 5), 1), ((2, 3, 4, 5), 3), ((7,), 0), ((2, 3, 2, 2, 3), 2)])
@pytest.mark.parametrize("dtype", [F32, F16])
def test_lp_normalization_agrees_with_onnxruntime(device: dmlpy.Device, p: int, shape: tuple[int, ...], axis: int, dtype: Any) -> None:
    x = RNG.normal(size=shape).astype(dtype)
    y = dmlpy.run(lpn(x, axis, p), device=device, InputTensor=x)
    assert y.dtype == dtype
    np.testing.assert_allclose(y, ort("LpNormalization", x, {"axis": axis, "p": p}, 1), **tolerance(dtype))


# ---------------------------------------------------------------------------------------
# LP_POOLING and LP_POOLING1: hand values on one row

LPP_HAND = [
    ("p=1 sums magnitudes", row(1, -2, 3, -4), {"window": (1, 2), "strides": (1, 2), "p": 1}, [3, 7]),
    ("p=2 is the Euclidean norm", row(1, -2, 3, -4), {"window": (1, 2), "strides": (1, 2), "p": 2}, [5**0.5, 5]),
    ("p=3 is the cube root of the sum of cubed magnitudes", row(1, -2, 3, -4), {"window": (1, 2), "strides": (1, 2), "p": 3}, [9 ** (1 / 3), 91 ** (1 / 3)]),
    ("start padding adds nothing to the sum", row(1, -2, 3), {"window": (1, 2), "strides": (1, 2), "start": (0, 1), "p": 2}, [1, 13**0.5]),
    ("the ceil shape's last window overhangs and sums what it covers", row(1, 2, 3, 4, 5), {"window": (1, 2), "strides": (1, 2), "p": 1, "ceil": True}, [3, 7, 5]),
    ("dilations (LP_POOLING1) skip taps", row(1, 2, 3, 4, 5), {"window": (1, 2), "dilations": (1, 2), "p": 2}, [10**0.5, 20**0.5, 34**0.5]),
    ("a window wholly in padding gives 0", row(-1, 2), {"window": (1, 1), "start": (0, 2), "p": 1}, [0, 0, 1, 2]),
    ("a large p keeps the largest magnitude", row(1, -3, 2), {"window": (1, 3), "p": 40}, [3.0]),
]  # fmt: skip


@pytest.mark.parametrize(("x", "options", "expected"), [pytest.param(*c[1:], id=c[0]) for c in LPP_HAND])
def test_lp_pooling_by_hand(device: dmlpy.Device, x: np.ndarray, options: dict[str, Any], expected: list[float]) -> None:
    y = dmlpy.run(lpp(x, **options), device=device, InputTensor=x)
    np.testing.assert_allclose(y.reshape(-1), expected, rtol=1e-5)


LPP_ORT = [  # (id, input shape, window, strides, pads (ONNX order), dilations, ceil)
    ("2x2 stride 1", (2, 3, 7, 8), (2, 2), (1, 1), (0, 0, 0, 0), None, False),
    ("3x2 stride 2x3 with uneven pads", (2, 3, 7, 8), (3, 2), (2, 3), (1, 0, 1, 1), None, False),
    ("dilated 3x3", (1, 2, 9, 8), (3, 3), (2, 2), (1, 1, 0, 0), (2, 1), False),
    ("ceil mode", (1, 2, 7, 8), (2, 2), (2, 2), (0, 0, 0, 0), None, True),
    ("dilated ceil mode with pads", (1, 2, 7, 8), (3, 3), (2, 3), (1, 1, 1, 1), (1, 2), True),
    ("5-D", (1, 2, 3, 4, 5), (2, 2, 3), (1, 2, 2), (0, 1, 1, 1, 0, 1), None, False),
]


@pytest.mark.parametrize(("shape", "window", "strides", "pads", "dilations", "ceil"), [pytest.param(*c[1:], id=c[0]) for c in LPP_ORT])
@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("dtype", [F32, F16])
def test_lp_pooling_agrees_with_onnxruntime(device: dmlpy.Device, shape: tuple[int, ...], window: tuple[int, ...], strides: tuple[int, ...], pads: tuple[int, ...],
                                            dilations: tuple[int, ...] | None, ceil: bool, p: int, dtype: Any) -> None:  # fmt: skip
    x = RNG.normal(size=shape).astype(dtype)
    spatial = len(window)
    desc = lpp(x, window, strides, pads[:spatial], pads[spatial:], dilations, p=p, ceil=ceil)
    y = dmlpy.run(desc, device=device, InputTensor=x)
    attributes: dict[str, Any] = {"kernel_shape": list(window), "strides": list(strides), "pads": list(pads), "p": p, "ceil_mode": int(ceil)}
    if dilations is not None:
        attributes["dilations"] = list(dilations)
    assert y.dtype == dtype
    np.testing.assert_allclose(y, ort("LpPool", x, attributes), **tolerance(dtype))


def test_lp_pooling_reads_an_nhwc_input_through_its_strides(device: dmlpy.Device) -> None:
    x = RNG.normal(size=(2, 3, 6, 5)).astype(F32)
    nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    desc = lpp(x, (2, 2), (2, 1), x_strides=nhwc_strides(x.shape))
    got = dmlpy.run(desc, device=device, InputTensor=np.lib.stride_tricks.as_strided(nhwc, x.shape, [s * 4 for s in nhwc_strides(x.shape)]))
    np.testing.assert_allclose(got, ort("LpPool", x, {"kernel_shape": [2, 2], "strides": [2, 1]}), **tolerance(F32))


# ---------------------------------------------------------------------------------------
# Rules, by id

X4 = np.zeros((1, 3, 4, 4), F32)
RULES = [  # (id, desc, feature level, rule id, field path or None, severity)
    ("LRN's LocalSize is at least 1", lambda: lrn(X4, 0, 1e-4, 0.75, 1.0), FL.LEVEL_6_4, "LRN.LOCAL_SIZE", "DML_LOCAL_RESPONSE_NORMALIZATION_OPERATOR_DESC.LocalSize", "error"),
    ("LRN warns of an infinite Beta", lambda: lrn(X4, 3, 1e-4, float("inf"), 1.0), FL.LEVEL_6_4, "LRN.PARAMETERS", "DML_LOCAL_RESPONSE_NORMALIZATION_OPERATOR_DESC.Beta", "warning"),
    ("LRN takes 4-D tensors only", lambda: lrn(np.zeros((1, 3, 4), F32), 3, 1e-4, 0.75, 1.0), FL.LEVEL_6_4, "TENSOR.DIMENSION_COUNT_SUPPORT", None, "error"),
    ("LRN takes no FLOAT64", lambda: lrn(X4.astype(np.float64), 3, 1e-4, 0.75, 1.0), FL.LEVEL_6_4, "TENSOR.DATA_TYPE_SUPPORT", None, "error"),
    ("LP_NORMALIZATION's P is 1 or 2", lambda: lpn(X4, 1, 3), FL.LEVEL_6_4, "LP_NORMALIZATION.P", "DML_LP_NORMALIZATION_OPERATOR_DESC.P", "error"),
    ("LP_NORMALIZATION's Axis is below the rank", lambda: lpn(X4, 4, 2), FL.LEVEL_6_4, "LP_NORMALIZATION.AXIS_RANGE", "DML_LP_NORMALIZATION_OPERATOR_DESC.Axis", "error"),
    ("LP_NORMALIZATION warns of a negative Epsilon", lambda: lpn(X4, 1, 2, -1.0), FL.LEVEL_6_4, "NORMALIZATION.EPSILON", "DML_LP_NORMALIZATION_OPERATOR_DESC.Epsilon", "warning"),
    ("LP_NORMALIZATION below FL 3.1 takes 4-D only", lambda: lpn(np.zeros((3, 4), F32), 1, 2), FL.LEVEL_3_0, "TENSOR.DIMENSION_COUNT_SUPPORT", None, "error"),
    ("LP_POOLING's P is at least 1", lambda: lpp(X4, (2, 2), p=0), FL.LEVEL_6_4, "LP_POOLING.P", "DML_LP_POOLING_OPERATOR_DESC.P", "error"),
    ("LP_POOLING's output size follows the floor formula", lambda: lpp(X4, (2, 2), out=(1, 3, 2, 3)), FL.LEVEL_6_4, "POOLING.OUTPUT_SIZE",
     "DML_LP_POOLING_OPERATOR_DESC.OutputTensor.Sizes[2]", "error"),
    ("LP_POOLING warns of the ceil shape", lambda: lpp(X4, (3, 3), (2, 2), ceil=True), FL.LEVEL_6_4, "POOLING.CEIL_OUTPUT", None, "warning"),
    ("LP_POOLING's strides are at least 1", lambda: lpp(X4, (2, 2), (0, 1), out=(1, 3, 3, 3)), FL.LEVEL_6_4, "POOLING.STRIDE_ZERO", "DML_LP_POOLING_OPERATOR_DESC.Strides[0]", "error"),
    ("LP_POOLING's window fits the padded input", lambda: lpp(X4, (5, 2), out=(1, 3, 1, 3)), FL.LEVEL_6_4, "POOLING.WINDOW_LARGER_THAN_INPUT",
     "DML_LP_POOLING_OPERATOR_DESC.WindowSize[0]", "error"),
    ("LP_POOLING keeps N and C", lambda: lpp(X4, (2, 2), out=(1, 2, 3, 3)), FL.LEVEL_6_4, "POOLING.BATCH_AND_CHANNELS", "DML_LP_POOLING_OPERATOR_DESC.OutputTensor.Sizes[1]", "error"),
    ("LP_POOLING1's output uses the dilated window", lambda: lpp(X4, (2, 2), dilations=(2, 1), out=(1, 3, 3, 3)), FL.LEVEL_6_4, "POOLING.OUTPUT_SIZE_UNDILATED",
     "DML_LP_POOLING1_OPERATOR_DESC.OutputTensor.Sizes[2]", "error"),
    ("LP_POOLING1's dilations are at least 1", lambda: lpp(X4, (2, 2), dilations=(0, 1), out=(1, 3, 3, 3)), FL.LEVEL_6_4, "POOLING.DILATION_ZERO",
     "DML_LP_POOLING1_OPERATOR_DESC.Dilations[0]", "error"),
    ("LP_POOLING1 needs feature level 6.2", lambda: lpp(X4, (2, 2), dilations=(1, 1)), FL.LEVEL_6_1, "OPERATOR.FEATURE_LEVEL", None, "error"),
]  # fmt: skip


@pytest.mark.parametrize(("make", "level", "rule_id", "path", "severity"), [pytest.param(*c[1:], id=c[0]) for c in RULES])
def test_rules_report_their_ids(make: Any, level: Any, rule_id: str, path: str | None, severity: str) -> None:
    report = dmlpy.validate(make(), feature_level=level)
    finding = assert_rule(report, rule_id, path) if path else assert_rule(report, rule_id)
    assert finding.severity.name.lower() == severity


def test_the_valid_descs_of_each_operator_validate_cleanly() -> None:
    for desc in (lrn(X4, 5, 1e-4, 0.75, 1.0), lpn(X4, 1, 1), lpp(X4, (2, 2), (2, 2)), lpp(X4, (2, 2), dilations=(2, 2))):
        assert dmlpy.validate(desc).ok and not dmlpy.validate(desc).findings


# ---------------------------------------------------------------------------------------
# GraphBuilder


def test_builder_methods_infer_sizes_and_pick_lp_pooling1_only_when_dilated(device: dmlpy.Device) -> None:
    x = RNG.normal(size=(1, 3, 5, 6)).astype(F32)
    g = GraphBuilder(device=device)
    t = g.input("x", F32, x.shape)
    pooled = g.lp_pooling(t, 2, strides=2, ceil=True, p=1)
    dilated = g.lp_pooling(t, 2, dilations=2)
    assert pooled.sizes == (1, 3, 3, 3) and dilated.sizes == (1, 3, 3, 4)
    assert [type(node.desc).__name__ for node in g._nodes[-2:]] == ["DML_LP_POOLING_OPERATOR_DESC", "DML_LP_POOLING1_OPERATOR_DESC"]
    outputs = {"n": g.local_response_normalization(t, 3, alpha=0.4), "l": g.lp_normalization(t, -1, p=1), "p": pooled, "d": dilated}
    got = g.compile(outputs)(x=x)
    np.testing.assert_allclose(got["n"], ort("LRN", x, {"size": 3, "alpha": 0.4}, 13), **tolerance(F32))
    np.testing.assert_allclose(got["l"], ort("LpNormalization", x, {"axis": -1, "p": 1}, 1), **tolerance(F32))
    np.testing.assert_allclose(got["p"], ort("LpPool", x, {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1, "p": 1}), **tolerance(F32))
    np.testing.assert_allclose(got["d"], ort("LpPool", x, {"kernel_shape": [2, 2], "dilations": [2, 2]}), **tolerance(F32))


def test_builder_errors_name_the_argument() -> None:
    g = GraphBuilder(feature_level=FL.LEVEL_6_1)
    t = g.input("x", F32, (1, 3, 5, 6))
    with pytest.raises(dmlpy.DmlError, match="argument 'dilations'"):
        g.lp_pooling(t, 2, dilations=2)
    with pytest.raises(dmlpy.DmlError, match="argument 'p'"):
        g.lp_normalization(t, p=3)
    with pytest.raises(dmlpy.DmlError, match="argument 'local_size'"):
        g.local_response_normalization(t, 0)
    with pytest.raises(ValueError, match="argument 'axis'"):
        g.lp_normalization(t, 4)


# ---------------------------------------------------------------------------------------
# The ONNX importer beyond the one-node table of tests/interop/test_onnx_mappings.py


def test_onnx_lrn_of_any_rank_reads_the_spatial_axes_as_one(device: dmlpy.Device) -> None:
    """onnxruntime's CPU LRN takes 4-D only: the oracle is its answer on the same values as {N, C, 1, rest} (the sum never crosses spatial axes)."""
    import dmlpy.interop.onnx as dx

    for shape in ((2, 5), (2, 5, 7), (2, 5, 2, 3, 2)):
        x = RNG.normal(size=shape).astype(F32)
        attributes = {"size": 3, "alpha": 0.5, "beta": 0.7, "bias": 1.1}
        got = dx.import_model(onnx_model("LRN", x, attributes, 13), device=device).run({"x": x})["y"]
        expected = ort("LRN", x.reshape(shape[0], shape[1], 1, -1), attributes, 13).reshape(shape)
        assert got.shape == shape
        np.testing.assert_allclose(got, expected, **tolerance(F32))


ONNX_REFUSED = [  # (id, op, opset, attributes, rule id, HRESULT)
    ("LpPool-1's p of 2.5 has no integer P", "LpPool", 1, {"kernel_shape": [2, 2], "p": 2.5}, "ONNX.UNSUPPORTED_ATTRIBUTE", dmlpy.HRESULT.E_NOTIMPL),
    ("LpPool's p of 0 is invalid", "LpPool", 18, {"kernel_shape": [2, 2], "p": 0}, "ONNX.INVALID_ATTRIBUTE", dmlpy.HRESULT.E_INVALIDARG),
    ("LpNormalization's p is 1 or 2", "LpNormalization", 1, {"p": 3}, "ONNX.INVALID_ATTRIBUTE", dmlpy.HRESULT.E_INVALIDARG),
    ("LRN needs its size", "LRN", 13, {}, "ONNX.INVALID_ATTRIBUTE", dmlpy.HRESULT.E_INVALIDARG),
]


@pytest.mark.parametrize(("op", "opset", "attributes", "rule_id", "hresult"), [pytest.param(*c[1:], id=c[0]) for c in ONNX_REFUSED])
def test_onnx_attributes_dmlpy_cannot_map_are_refused_by_rule(op: str, opset: int, attributes: dict[str, Any], rule_id: str, hresult: Any) -> None:
    import dmlpy.interop.onnx as dx

    with pytest.raises(dx.OnnxImportError) as error:
        dx.import_model(onnx_model(op, X4, attributes, opset))
    assert error.value.rule == rule_id and error.value.hresult == hresult


def test_onnx_lp_normalization_below_feature_level_3_1_is_lifted_to_4d(backend: str) -> None:
    import dmlpy.interop.onnx as dx

    x = RNG.normal(size=(3, 4)).astype(F32)
    got = dx.import_model(onnx_model("LpNormalization", x, {"axis": 0}, 1), feature_level=FL.LEVEL_3_0, backend=backend).run({"x": x})["y"]
    np.testing.assert_allclose(got, ort("LpNormalization", x, {"axis": 0}, 1), **tolerance(F32))
