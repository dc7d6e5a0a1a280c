"""The activations added to the first ten: values, onnxruntime, strides, FLOAT16, NaN and infinities, rules.

* the element-wise ones (CELU, PARAMETRIC_SOFTPLUS, SCALED_ELU, SCALED_TANH, SOFTSIGN,
  THRESHOLDED_RELU, SHRINK, SWISH, HARD_SWISH), standalone and, where the fused-activation page
  lists them, as a convolution's FusedActivation;
* PARAMETERIZED_RELU with a broadcast (stride 0) SlopeTensor, integers wrapping;
* SOFTMAX, LOG_SOFTMAX, HARDMAX over the last dimension and their *1 forms over Axes.

Oracles: onnxruntime one-node (or few-node) models as DirectML's ONNX mapping builds them (Celu,
Selu for SCALED_ELU, Softsign, ThresholdedRelu, Shrink, PRelu, Softmax / LogSoftmax / Hardmax with
opset 13's single axis; several axes through Transpose and Reshape to one), and values computed by
hand from each page's formula or taken from the page's examples.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest
from activation_oracles import FUSABLE_MORE, MORE, Activation, onnx_activation_nodes, oracle_activation, run_onnx
from conftest import assert_rule, rule_ids
from test_convolution_kernels import BACKWARD, CROSS, FORWARD, ConvCase, check_case, conv_desc, run_conv

import dmlpy
from dmlpy import DML_FEATURE_LEVEL as FL
from dmlpy import DML_OPERATOR_TYPE as OP
from dmlpy import buffer_binding, buffer_tensor, nhwc_strides, packed_strides
from dmlpy.operators import DML_OPERATOR_DESC, REGISTRY
from dmlpy.operators.activation import (
    DML_ACTIVATION_HARDMAX1_OPERATOR_DESC,
    DML_ACTIVATION_HARDMAX_OPERATOR_DESC,
    DML_ACTIVATION_LOG_SOFTMAX1_OPERATOR_DESC,
    DML_ACTIVATION_LOG_SOFTMAX_OPERATOR_DESC,
    DML_ACTIVATION_PARAMETERIZED_RELU_OPERATOR_DESC,
    DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC,
    DML_ACTIVATION_SOFTMAX_OPERATOR_DESC,
    DML_ACTIVATION_SWISH_OPERATOR_DESC,
    IN_PLACE,
    FusedActivation,
)

X = np.array([-2.0, -0.5, 0.0, 0.5, 2.0], dtype=np.float32).reshape(1, 1, 1, 5)


def standalone(activation: Activation, sizes: tuple[int, ...] = (1, 1, 1, 5), dtype: Any = np.float32, x_strides: Any = None, y_strides: Any = None) -> Any:
    return activation.standalone(buffer_tensor(dtype, sizes, x_strides), buffer_tensor(dtype, sizes, y_strides))


# ---------------------------------------------------------------------------------------
# The element-wise ones

# f(x) at x = -2, -0.5, 0, 0.5, 2, worked from each page's formula (calculator values).
HAND_COMPUTED = [
    pytest.param(Activation("CELU", (0.8,)), [-0.7343320011008809, -0.3717908571848078, 0.0, 0.5, 2.0], id="CELU(0.8) is 0.8 * (e^(x/0.8) - 1) below 0"),
    pytest.param(Activation("PARAMETRIC_SOFTPLUS", (1.5, 0.7)), [0.33062611487767646, 0.8000732331281655, 1.0397207708399179, 1.3250732331281654, 2.4306261148776764],
                 id="PARAMETRIC_SOFTPLUS(1.5, 0.7)(0) is 1.5 ln 2"),
    pytest.param(Activation("SCALED_ELU", (1.2, 0.9)), [-0.9338378941044584, -0.42494688751035586, 0.0, 0.45, 1.8], id="SCALED_ELU(1.2, 0.9) scales both sides by Gamma"),
    pytest.param(Activation("SCALED_ELU", (1.67326319217681884765625, 1.05070102214813232421875)),
                 [-1.5201664733475926, -0.6917581899652425, 0.0, 0.5253505110740662, 2.1014020442962646], id="SCALED_ELU with SELU's constants"),
    pytest.param(Activation("SCALED_TANH", (1.7, 0.6)), [-1.4172128319206638, -0.4952314411677045, 0.0, 0.4952314411677045, 1.4172128319206638],
                 id="SCALED_TANH(1.7, 0.6) is 1.7 tanh(0.6 x)"),
    pytest.param(Activation("SOFTSIGN"), [-2 / 3, -1 / 3, 0.0, 1 / 3, 2 / 3], id="SOFTSIGN(2) is 2/3"),
    pytest.param(Activation("THRESHOLDED_RELU", (0.4,)), [0.0, 0.0, 0.0, 0.5, 2.0], id="THRESHOLDED_RELU(0.4) zeroes x <= 0.4"),
    pytest.param(Activation("THRESHOLDED_RELU", (0.5,)), [0.0, 0.0, 0.0, 0.0, 2.0], id="THRESHOLDED_RELU(0.5) zeroes x = 0.5 itself (strictly greater)"),
    pytest.param(Activation("SHRINK", (0.25, 0.6)), [-1.75, 0.0, 0.0, 0.0, 1.75], id="SHRINK(0.25, 0.6) moves |x| > 0.6 toward 0 by 0.25"),
    pytest.param(Activation("SHRINK", (-1.0, 0.5)), [-3.0, 0.0, 0.0, 0.0, 3.0], id="SHRINK with a negative Bias grows, and x = Threshold is 0"),
    pytest.param(Activation("SWISH", (1.3,)), [-0.13827684068669363, -0.17149476866325059, 0.0, 0.3285052313367494, 1.8617231593133066], id="SWISH(1.3) is x sigmoid(1.3 x)"),
    pytest.param(Activation("HARD_SWISH", (0.25, 0.4)), [0.0, -0.1375, 0.0, 0.2625, 1.8], id="HARD_SWISH(0.25, 0.4) is x clamp(0.25 x + 0.4, 0, 1)"),
]


# The hand-computed values above and MORE run through test_activation.py's tests of every activation
# (values worked from the page, the shared oracle, onnxruntime at four ranks and two types).


def test_hard_swish_with_onnx_constants_is_onnx_hardswish(device: dmlpy.Device) -> None:
    pytest.importorskip("onnxruntime")
    from onnx import helper

    x = np.linspace(-5, 5, 41, dtype=np.float32).reshape(1, 41)
    y = dmlpy.run(standalone(Activation("HARD_SWISH", (1 / 6, 0.5)), (1, 41)), device=device, InputTensor=x)
    np.testing.assert_allclose(y, run_onnx([helper.make_node("HardSwish", ["X"], ["Y"])], [], {"X": x}), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("activation", MORE, ids=str)
def test_activation_reads_nhwc_and_writes_a_padded_layout(device: dmlpy.Device, activation: Activation) -> None:
    sizes = (2, 3, 4, 5)
    x = np.random.default_rng(7).uniform(-3, 3, size=sizes).astype(np.float32)
    y = dmlpy.run(standalone(activation, sizes, x_strides=nhwc_strides(sizes), y_strides=packed_strides((2, 3, 4, 7))), device=device, InputTensor=x)
    np.testing.assert_allclose(y, oracle_activation(activation, x), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("activation", MORE, ids=str)
def test_nan_and_infinities_give_what_onnxruntime_gives(device: dmlpy.Device, activation: Activation) -> None:
    """NaN stays NaN where the formula keeps it (THRESHOLDED_RELU and SHRINK compare it away to 0);
    x / (1 + |x|) at +-inf and inf * 0 in SWISH and HARD_SWISH at -inf are NaN, as the formulas compute."""
    pytest.importorskip("onnxruntime")
    x = np.array([-math.inf, -1000.0, -1.0, 0.0, 1.0, 1000.0, math.inf, math.nan], dtype=np.float32).reshape(1, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = dmlpy.run(standalone(activation, (1, 8)), device=device, InputTensor=x)
    nodes, initializers = onnx_activation_nodes(activation, "X", "Y")
    np.testing.assert_allclose(y, run_onnx(nodes, initializers, {"X": x}), rtol=1e-6, atol=1e-7, err_msg=str(activation))


def test_float16_results_round_once_from_float32(device: dmlpy.Device) -> None:
    """SCALED_TANH(1000, 1)(1) = 761.59...: binary16 holds 761.5; 1000 * tanh(100) = 1000 exactly;
    SWISH(1)(-20) = -20 / (1 + e^20) = -4.12e-8 rounds to binary16's smallest subnormal, -2^-24."""
    x = np.array([1.0, 100.0, -20.0], dtype=np.float16).reshape(1, 3)
    y = dmlpy.run(standalone(Activation("SCALED_TANH", (1000.0, 1.0)), (1, 3), np.float16), device=device, InputTensor=x)
    assert y.dtype == np.float16 and y.ravel()[:2].tolist() == [761.5, 1000.0]
    tiny = dmlpy.run(standalone(Activation("SWISH", (1.0,)), (1, 3), np.float16), device=device, InputTensor=x).ravel()[2]
    assert float(tiny) == -(2.0**-24)


# SHRINK takes integers from FL 5.1; its FLOAT Bias applies in float64, then the result is truncated toward zero and saturated.
SHRINK_INTEGERS = [
    pytest.param(np.int8, (1.5, 2.0), [-128, -3, -2, 0, 2, 3, 127], [-126, -1, 0, 0, 0, 1, 125], id="INT8: -128 + 1.5 = -126.5 truncates to -126"),
    pytest.param(np.int8, (-10.0, 100.0), [-128, -101, -100, 120, 127], [-128, -111, 0, 127, 127], id="INT8: a negative Bias saturates at -128 and 127"),
    pytest.param(np.uint8, (2.0, 1.0), [0, 1, 2, 5, 255], [0, 0, 0, 3, 253], id="UINT8: nothing is below -Threshold"),
    pytest.param(np.uint16, (-2.0, 1.0), [0, 7, 65535], [0, 9, 65535], id="UINT16: 65535 + 2 saturates"),
    pytest.param(np.int32, (0.5, 0.0), [-7, 0, 7], [-6, 0, 6], id="INT32: -6.5 and 6.5 truncate toward zero"),
]


@pytest.mark.parametrize(("dtype", "params", "x", "expected"), SHRINK_INTEGERS)
def test_shrink_on_integers_truncates_and_saturates(device: dmlpy.Device, dtype: Any, params: tuple[float, float], x: list[int], expected: list[int]) -> None:
    desc = standalone(Activation("SHRINK", params), (1, len(x)), dtype)
    y = dmlpy.run(desc, device=device, InputTensor=np.array([x], dtype))
    assert y.dtype == dtype and y.ravel().tolist() == expected


# ---------------------------------------------------------------------------------------
# As a convolution's FusedActivation: the C convolution applies only activation.c's ten; the
# native backend runs these on the NumPy kernel rather than refusing a valid desc.


@pytest.mark.parametrize("direction", [FORWARD, BACKWARD], ids=["forward", "backward"])
@pytest.mark.parametrize("activation", FUSABLE_MORE, ids=str)
def test_each_new_fusable_activation_applies_after_the_convolution_bias(backend: str, activation: Activation, direction: Any) -> None:
    case = ConvCase(
        direction=int(direction), mode=int(CROSS), in_sizes=(2, 4, 5, 4), filter_sizes=(4, 3, 3, 2) if direction == BACKWARD else (6, 2, 3, 2),
        strides=(2, 1), dilations=(1, 2), start=(1, 0), end=(0, 1), output_padding=(0, 0), extra=(1, 0) if direction == BACKWARD else (0, 0),
        groups=2, bias=True, activation=activation, dtype="float32", layouts=("packed",) * 4, seed=23,
    )  # fmt: skip
    check_case(backend, case)


def test_a_float16_convolution_with_fused_shrink_runs_on_both_backends(device: dmlpy.Device) -> None:
    case = ConvCase(
        direction=int(FORWARD), mode=int(CROSS), in_sizes=(1, 2, 4, 4), filter_sizes=(3, 2, 2, 2), strides=(1, 1), dilations=(1, 1), start=(0, 0),
        end=(0, 0), output_padding=(0, 0), extra=(0, 0), groups=1, bias=True, activation=Activation("SHRINK", (0.5, 1.0)), dtype="float16",
        layouts=("packed",) * 4, seed=5,
    )  # fmt: skip
    check_case(device.backend_name, case)


def test_the_native_backend_runs_the_c_convolution_only_for_fused_activations_c_applies() -> None:
    spec = REGISTRY[OP.CONVOLUTION]
    plain = conv_desc((1, 1, 3, 3), (1, 1, 2, 2), (1, 1, 2, 2))
    assert spec.runs_natively(plain)
    plain.FusedActivation = FusedActivation.relu()
    assert spec.runs_natively(plain)
    plain.FusedActivation = FusedActivation.scaled_tanh()
    assert not spec.runs_natively(plain)


def test_a_convolution_with_fused_scaled_tanh_gives_the_hand_value(device: dmlpy.Device) -> None:
    """A 1x1 convolution by 2 of x = 1 is 2; SCALED_TANH(3, 0.5)(2) = 3 tanh(1) = 2.2847748..."""
    desc = conv_desc((1, 1, 1, 2), (1, 1, 1, 1), (1, 1, 1, 2))
    desc.FusedActivation = FusedActivation.scaled_tanh(3.0, 0.5)
    y = run_conv(desc, device, np.array([[[[1.0, -1.0]]]], np.float32), np.full((1, 1, 1, 1), 2.0, np.float32))
    np.testing.assert_allclose(y.ravel(), [3 * math.tanh(1.0), -3 * math.tanh(1.0)], rtol=1e-7)


@pytest.mark.parametrize(
    ("built", "op_type", "params"),
    [
        (FusedActivation.celu(), OP.ACTIVATION_CELU, {"Alpha": 1.0}),
        (FusedActivation.scaled_elu(), OP.ACTIVATION_SCALED_ELU, {"Alpha": 1.67326319217681884765625, "Gamma": 1.05070102214813232421875}),
        (FusedActivation.scaled_tanh(), OP.ACTIVATION_SCALED_TANH, {"Alpha": 1.0, "Beta": 0.5}),
        (FusedActivation.thresholded_relu(), OP.ACTIVATION_THRESHOLDED_RELU, {"Alpha": 1.0}),
        (FusedActivation.shrink(), OP.ACTIVATION_SHRINK, {"Bias": 0.0, "Threshold": 0.5}),
        (FusedActivation.parametric_softplus(2.0, 3.0), OP.ACTIVATION_PARAMETRIC_SOFTPLUS, {"Alpha": 2.0, "Beta": 3.0}),
        (FusedActivation.softsign(), OP.ACTIVATION_SOFTSIGN, {}),
    ],
    ids=["celu alpha 1", "scaled_elu SELU constants", "scaled_tanh 1, 0.5", "thresholded_relu 1", "shrink 0, 0.5", "parametric_softplus as given", "softsign"],
)
def test_new_fused_activation_builders_use_directmlx_defaults(built: Any, op_type: OP, params: dict[str, float]) -> None:
    assert built.Type == op_type and built.Desc.InputTensor is None and built.Desc.OutputTensor is None
    assert {name: getattr(built.Desc, name) for name in params} == params


# ---------------------------------------------------------------------------------------
# PARAMETERIZED_RELU


def prelu_desc(sizes: tuple[int, ...], dtype: Any = np.float32, slope_strides: Any = None, x_strides: Any = None) -> Any:
    return DML_ACTIVATION_PARAMETERIZED_RELU_OPERATOR_DESC(buffer_tensor(dtype, sizes, x_strides), buffer_tensor(dtype, sizes, slope_strides), buffer_tensor(dtype, sizes))


def test_prelu_takes_each_slope_element_by_element(device: dmlpy.Device) -> None:
    x = np.array([[-2.0, -2.0, 3.0, -0.5, 0.0, -4.0]], np.float32)
    slope = np.array([[0.5, -1.0, 7.0, 2.0, 9.0, 0.0]], np.float32)
    y = dmlpy.run(prelu_desc((1, 6)), device=device, InputTensor=x, SlopeTensor=slope)
    assert y.ravel().tolist() == [-1.0, 2.0, 3.0, -1.0, 0.0, -0.0]


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["FLOAT32", "FLOAT16"])
@pytest.mark.parametrize("nhwc", [False, True], ids=["NCHW input", "NHWC input"])
def test_prelu_with_a_per_channel_slope_broadcast_by_zero_strides_agrees_with_onnxruntime(device: dmlpy.Device, dtype: Any, nhwc: bool) -> None:
    pytest.importorskip("onnxruntime")
    from onnx import helper

    sizes = (2, 3, 4, 5)
    rng = np.random.default_rng(3)
    x = rng.uniform(-3, 3, size=sizes).astype(dtype)
    slope = np.array([0.1, -0.5, 2.0], dtype)  # ONNX's {C, 1, 1}; DirectML's {N, C, H, W} with strides {0, 1, 0, 0}
    desc = prelu_desc(sizes, dtype, slope_strides=(0, 1, 0, 0), x_strides=nhwc_strides(sizes) if nhwc else None)
    y = dmlpy.run(desc, device=device, InputTensor=x, SlopeTensor=np.broadcast_to(slope.reshape(1, 3, 1, 1), sizes))
    expected = run_onnx([helper.make_node("PRelu", ["X", "S"], ["Y"])], [], {"X": x.astype(np.float32), "S": slope.reshape(3, 1, 1).astype(np.float32)})
    tolerance = {"rtol": 1e-6, "atol": 0.0} if dtype == np.float32 else {"rtol": 1e-3, "atol": 1e-3}
    assert y.dtype == dtype
    np.testing.assert_allclose(y.astype(np.float64), expected, **tolerance)


@pytest.mark.parametrize(
    ("dtype", "x", "slope", "expected"),
    [
        pytest.param(np.int8, [-100, -3, 0, 5, 127], [2, 3, 9, 9, 9], [56, -9, 0, 5, 127], id="INT8: -100 * 2 = -200 wraps to 56"),
        pytest.param(np.int16, [-20000, -7, 7], [2, -1, -1], [25536, 7, 7], id="INT16: -40000 wraps to 25536"),
        pytest.param(np.int32, [-3, 4], [-5, 100], [15, 4], id="INT32: a negative slope flips the sign"),
    ],
)
def test_prelu_on_integers_multiplies_in_the_type_and_wraps(device: dmlpy.Device, dtype: Any, x: list[int], slope: list[int], expected: list[int]) -> None:
    y = dmlpy.run(prelu_desc((1, len(x)), dtype), device=device, InputTensor=np.array([x], dtype), SlopeTensor=np.array([slope], dtype))
    assert y.dtype == dtype and y.ravel().tolist() == expected


def test_prelu_propagates_nan_and_infinities(device: dmlpy.Device) -> None:
    x = np.array([[math.nan, -math.inf, math.inf, -1.0]], np.float32)
    y = dmlpy.run(prelu_desc((1, 4)), device=device, InputTensor=x, SlopeTensor=np.array([[2.0, 0.5, 0.5, math.nan]], np.float32))
    np.testing.assert_array_equal(y, [[math.nan, -math.inf, math.inf, math.nan]])


# ---------------------------------------------------------------------------------------
# SOFTMAX, LOG_SOFTMAX, HARDMAX and their *1 forms

PAGE_INPUT = np.array([[[12, 0], [-101, 11]], [[3, 234], [0, -101]]], np.float32)  # the HARDMAX1 page's {2, 2, 2} input


@pytest.mark.doc_example
@pytest.mark.parametrize(
    ("axes", "expected"),
    [
        pytest.param([1], [[[1, 0], [0, 1]], [[1, 1], [0, 0]]], id="example 1: Axes {1}"),
        pytest.param([0], [[[1, 0], [0, 1]], [[0, 1], [1, 0]]], id="example 2: Axes {0}"),
        pytest.param([0, 2], [[[0, 0], [0, 1]], [[0, 1], [0, 0]]], id="example 3: Axes {0, 2}"),
    ],
)
def test_hardmax1_gives_the_pages_examples(device: dmlpy.Device, axes: list[int], expected: list[Any]) -> None:
    desc = DML_ACTIVATION_HARDMAX1_OPERATOR_DESC(buffer_tensor(np.float32, (2, 2, 2)), buffer_tensor(np.float32, (2, 2, 2)), None, axes)
    np.testing.assert_array_equal(dmlpy.run(desc, device=device, InputTensor=PAGE_INPUT), expected)


LN = math.log
SOFTMAX_HAND = [  # rows whose exponentials are 1, 2 and 5 (sum 8), and 1 and 3 (sum 4)
    pytest.param(DML_ACTIVATION_SOFTMAX_OPERATOR_DESC, [[0.0, LN(2), LN(5)], [LN(3), 0.0, -math.inf]], [[1 / 8, 2 / 8, 5 / 8], [3 / 4, 1 / 4, 0.0]],
                 id="SOFTMAX: e^x / sum e^x, e^-inf = 0"),
    pytest.param(DML_ACTIVATION_LOG_SOFTMAX_OPERATOR_DESC, [[0.0, LN(2), LN(5)], [LN(3), 0.0, -math.inf]],
                 [[LN(1 / 8), LN(2 / 8), LN(5 / 8)], [LN(3 / 4), LN(1 / 4), -math.inf]], id="LOG_SOFTMAX: x - ln sum e^x"),
    pytest.param(DML_ACTIVATION_SOFTMAX_OPERATOR_DESC, [[1000.0, 0.0, 1000.0], [-1000.0, -1000.0, -1000.0]], [[0.5, 0.0, 0.5], [1 / 3, 1 / 3, 1 / 3]],
                 id="SOFTMAX of 1000 and -1000 neither overflows nor divides 0 by 0"),
    pytest.param(DML_ACTIVATION_HARDMAX_OPERATOR_DESC, [[1.0, 5.0, 5.0], [-math.inf, -math.inf, -7.0]], [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
                 id="HARDMAX: 1 at the first of two equal maxima"),
]


@pytest.mark.parametrize(("cls", "x", "expected"), SOFTMAX_HAND)
def test_softmax_family_over_the_last_dimension_gives_hand_values(device: dmlpy.Device, cls: type, x: list[list[float]], expected: list[list[float]]) -> None:
    x_array = np.array(x, np.float32).reshape(1, 1, 2, 3)  # effective rank 2: {1, 1, BatchCount, Width}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = dmlpy.run(cls(buffer_tensor(np.float32, (1, 1, 2, 3)), buffer_tensor(np.float32, (1, 1, 2, 3))), device=device, InputTensor=x_array)
    np.testing.assert_allclose(y.reshape(2, 3), np.array(expected, np.float32), rtol=2e-7, atol=1e-7)


ONNX_NAMES = {"softmax": "Softmax", "log_softmax": "LogSoftmax", "hardmax": "Hardmax"}
AXES_CLASSES = {"softmax": DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC, "log_softmax": DML_ACTIVATION_LOG_SOFTMAX1_OPERATOR_DESC, "hardmax": DML_ACTIVATION_HARDMAX1_OPERATOR_DESC}
LAST_CLASSES = {"softmax": DML_ACTIVATION_SOFTMAX_OPERATOR_DESC, "log_softmax": DML_ACTIVATION_LOG_SOFTMAX_OPERATOR_DESC, "hardmax": DML_ACTIVATION_HARDMAX_OPERATOR_DESC}


def onnx_over_axes(kind: str, x: np.ndarray, axes: list[int]) -> np.ndarray:
    """onnxruntime's Softmax / LogSoftmax / Hardmax (opset 13: one axis) over several axes: Transpose them last,
    Reshape them into one, apply over it, and undo both."""
    from onnx import TensorProto, helper

    rest = [d for d in range(x.ndim) if d not in axes]
    order = rest + sorted(axes)
    moved = tuple(x.shape[d] for d in order)
    flat = [*moved[: len(rest)], -1]
    nodes = [
        helper.make_node("Transpose", ["X"], ["moved"], perm=order),
        helper.make_node("Reshape", ["moved", "flat_shape"], ["flat"]),
        helper.make_node(ONNX_NAMES[kind], ["flat"], ["flat_y"], axis=-1),
        helper.make_node("Reshape", ["flat_y", "moved_shape"], ["moved_y"]),
        helper.make_node("Transpose", ["moved_y"], ["Y"], perm=list(np.argsort(order))),
    ]
    initializers = [helper.make_tensor("flat_shape", TensorProto.INT64, [len(flat)], flat), helper.make_tensor("moved_shape", TensorProto.INT64, [len(moved)], moved)]
    return run_onnx(nodes, initializers, {"X": x.astype(np.float32)})


@pytest.mark.parametrize("kind", ["softmax", "log_softmax", "hardmax"])
@pytest.mark.parametrize(
    ("sizes", "axes", "dtype"),
    [
        pytest.param((2, 3, 4, 5), [3], np.float32, id="4-D last axis"),
        pytest.param((2, 3, 4, 5), [1], np.float32, id="4-D channel axis"),
        pytest.param((2, 3, 4, 5), [0], np.float32, id="4-D batch axis"),
        pytest.param((2, 3, 4, 5), [1, 3], np.float32, id="4-D axes 1 and 3"),
        pytest.param((2, 3, 4, 5), [3, 0, 2], np.float32, id="4-D axes 3, 0, 2 (any order)"),
        pytest.param((2, 3, 4, 5), [0, 1, 2, 3], np.float32, id="4-D every axis"),
        pytest.param((7,), [0], np.float32, id="1-D"),
        pytest.param((2, 1, 3, 1, 2, 1, 2, 3), [2, 7], np.float32, id="8-D axes 2 and 7"),
        pytest.param((3, 4, 6), [1, 2], np.float16, id="3-D fp16 axes 1 and 2"),
    ],
)
def test_axes_forms_agree_with_onnxruntime(device: dmlpy.Device, kind: str, sizes: tuple[int, ...], axes: list[int], dtype: Any) -> None:
    pytest.importorskip("onnxruntime")
    x = np.random.default_rng(len(sizes) + len(axes)).uniform(-4, 4, size=sizes).astype(dtype)
    desc = AXES_CLASSES[kind](buffer_tensor(dtype, sizes), buffer_tensor(dtype, sizes), None, axes)
    y = dmlpy.run(desc, device=device, InputTensor=x)
    tolerance = {"rtol": 2e-6, "atol": 1e-6} if dtype == np.float32 else {"rtol": 2e-3, "atol": 2e-3}
    assert y.dtype == dtype
    np.testing.assert_allclose(y.astype(np.float64), onnx_over_axes(kind, x, axes), **tolerance)


@pytest.mark.parametrize("kind", ["softmax", "log_softmax", "hardmax"])
@pytest.mark.parametrize(("sizes", "dtype"), [((1, 1, 6, 7), np.float32), ((5, 4), np.float32), ((9,), np.float32), ((1, 3, 5), np.float16)],
                         ids=["{1, 1, 6, 7}", "2-D", "1-D", "fp16 {1, 3, 5}"])  # fmt: skip
def test_last_dimension_forms_agree_with_onnxruntime(device: dmlpy.Device, kind: str, sizes: tuple[int, ...], dtype: Any) -> None:
    pytest.importorskip("onnxruntime")
    x = np.random.default_rng(len(sizes)).uniform(-4, 4, size=sizes).astype(dtype)
    y = dmlpy.run(LAST_CLASSES[kind](buffer_tensor(dtype, sizes), buffer_tensor(dtype, sizes)), device=device, InputTensor=x)
    tolerance = {"rtol": 2e-6, "atol": 1e-6} if dtype == np.float32 else {"rtol": 2e-3, "atol": 2e-3}
    np.testing.assert_allclose(y.astype(np.float64), onnx_over_axes(kind, x, [len(sizes) - 1]), **tolerance)


@pytest.mark.parametrize("kind", ["softmax", "log_softmax", "hardmax"])
def test_axes_forms_read_nhwc_and_write_a_padded_layout(device: dmlpy.Device, kind: str) -> None:
    pytest.importorskip("onnxruntime")
    sizes = (2, 3, 4, 5)
    x = np.random.default_rng(11).uniform(-3, 3, size=sizes).astype(np.float32)
    desc = AXES_CLASSES[kind](buffer_tensor(np.float32, sizes, nhwc_strides(sizes)), buffer_tensor(np.float32, sizes, packed_strides((2, 3, 4, 8))), None, [1])
    np.testing.assert_allclose(dmlpy.run(desc, device=device, InputTensor=x), onnx_over_axes(kind, x, [1]), rtol=2e-6, atol=1e-6)


def test_nan_and_infinities_in_a_row_follow_onnxruntime(device: dmlpy.Device) -> None:
    """A +inf or a NaN makes its softmax row NaN (inf - inf); a -inf weighs 0; a row of -inf is NaN.
    HARDMAX: a NaN never compares greater, so the first non-NaN maximum wins, as onnxruntime's Hardmax."""
    pytest.importorskip("onnxruntime")
    x = np.array([[1, math.inf, 0], [1, -math.inf, 0], [1, math.nan, 0], [-math.inf] * 3, [2, math.nan, 5], [3, 3, 1]], np.float32)
    for kind in ("softmax", "log_softmax", "hardmax"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            y = dmlpy.run(LAST_CLASSES[kind](buffer_tensor(np.float32, (6, 3)), buffer_tensor(np.float32, (6, 3))), device=device, InputTensor=x)
        np.testing.assert_allclose(y, onnx_over_axes(kind, x, [1]), rtol=1e-6, atol=1e-7, err_msg=kind)


def test_hardmax_of_a_row_starting_with_nan_marks_that_nan() -> None:
    """ARGMAX always names one element: a scan that starts at the first element and moves only to a
    greater one stays on a leading NaN (onnxruntime writes no 1 at all there: docs/deviations.md)."""
    x = np.array([[math.nan, 2, 5], [math.nan] * 3, [-1, math.nan, -1]], np.float32)
    for backend in ("numpy", "native") if dmlpy.native_available() else ("numpy",):
        y = dmlpy.run(DML_ACTIVATION_HARDMAX_OPERATOR_DESC(buffer_tensor(np.float32, (3, 3)), buffer_tensor(np.float32, (3, 3))), backend=backend, InputTensor=x)
        np.testing.assert_array_equal(y, [[1, 0, 0], [1, 0, 0], [1, 0, 0]])


def test_softmax1_over_no_axis_makes_each_element_its_own_row(device: dmlpy.Device) -> None:
    """AxisCount 0: e^x / e^x = 1 (NaN stays NaN), ln 1 = 0, and every element is its row's maximum."""
    x = np.array([[-3.0, 0.0, 7.5, math.nan]], np.float32)
    for cls, expected in ((DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC, [1, 1, 1, math.nan]), (DML_ACTIVATION_LOG_SOFTMAX1_OPERATOR_DESC, [0, 0, 0, math.nan]),
                          (DML_ACTIVATION_HARDMAX1_OPERATOR_DESC, [1, 1, 1, 1])):  # fmt: skip
        desc = cls(buffer_tensor(np.float32, (1, 4)), buffer_tensor(np.float32, (1, 4)), None, [])
        np.testing.assert_array_equal(dmlpy.run(desc, device=device, InputTensor=x), [expected])


def test_a_repeated_axis_normalises_once(device: dmlpy.Device) -> None:
    x = np.array([[0.0, LN(3)]], np.float32)
    desc = DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC(buffer_tensor(np.float32, (1, 2)), buffer_tensor(np.float32, (1, 2)), None, [1, 1])
    with pytest.warns(dmlpy.DmlWarning):
        y = dmlpy.run(desc, device=device, InputTensor=x)
    np.testing.assert_allclose(y, [[0.25, 0.75]], rtol=1e-7)


# ---------------------------------------------------------------------------------------
# In-place execution: as each page states


def _in_place(desc: Any, device: dmlpy.Device, x: np.ndarray) -> np.ndarray:
    compiled = device.compile_operator(device.create_operator(desc))
    buffer = device.create_buffer(x.nbytes)
    buffer.upload(x)
    recorder, command_list = device.create_command_recorder(), device.create_command_list()
    initializer = device.create_operator_initializer([compiled])
    recorder.record_dispatch(command_list, initializer, device.create_binding_table(initializer))
    table = device.create_binding_table(compiled)
    table.bind_inputs([buffer_binding(buffer)])
    table.bind_outputs([buffer_binding(buffer)])
    recorder.record_dispatch(command_list, compiled, table)
    command_list.close()
    device.execute(command_list)
    return buffer.read(desc.OutputTensor)


@pytest.mark.parametrize("activation", MORE, ids=str)
def test_each_new_element_wise_activation_runs_in_place(device: dmlpy.Device, activation: Activation) -> None:
    assert OP["ACTIVATION_" + activation.name] in IN_PLACE
    np.testing.assert_allclose(_in_place(standalone(activation), device, X), oracle_activation(activation, X), rtol=2e-7, atol=1e-7)


@pytest.mark.parametrize("cls", [*LAST_CLASSES.values(), *AXES_CLASSES.values()], ids=lambda c: c.__name__)
def test_softmax_family_may_not_run_in_place(cls: type) -> None:
    sizes = (1, 1, 1, 5)
    extra = (None, [3]) if "1_" in cls.__name__ else ()
    with pytest.raises(dmlpy.DmlError) as caught:
        _in_place(cls(buffer_tensor(np.float32, sizes), buffer_tensor(np.float32, sizes), *extra), dmlpy.create_device(backend="numpy"), X)
    assert_rule(caught.value, "BINDING.INPUT_OUTPUT_OVERLAP")


# ---------------------------------------------------------------------------------------
# Rules

SOFTMAX = "DML_ACTIVATION_SOFTMAX_OPERATOR_DESC"
PRELU = "DML_ACTIVATION_PARAMETERIZED_RELU_OPERATOR_DESC"
CONV = "DML_CONVOLUTION_OPERATOR_DESC"


def _conv_with(fused: Any) -> Any:
    desc = conv_desc((1, 1, 3, 3), (1, 1, 2, 2), (1, 1, 2, 2))
    desc.FusedActivation = fused
    return desc


RULE_CASES = [
    pytest.param(DML_ACTIVATION_SOFTMAX_OPERATOR_DESC(buffer_tensor(np.float32, (2, 3, 4)), buffer_tensor(np.float32, (2, 3, 4))), FL.LEVEL_6_4,
                 "ACTIVATION.EFFECTIVE_RANK", f"{SOFTMAX}.InputTensor.Sizes", id="SOFTMAX of {2, 3, 4}: effective rank 3"),
    pytest.param(DML_ACTIVATION_HARDMAX_OPERATOR_DESC(buffer_tensor(np.float32, (1, 2, 1, 4)), buffer_tensor(np.float32, (1, 2, 1, 4))), FL.LEVEL_6_4,
                 "ACTIVATION.EFFECTIVE_RANK", "DML_ACTIVATION_HARDMAX_OPERATOR_DESC.InputTensor.Sizes", id="HARDMAX of {1, 2, 1, 4}: only leading 1s drop"),
    pytest.param(standalone(Activation("CELU", (1.0,))), FL.LEVEL_2_1, "OPERATOR.FEATURE_LEVEL", "DML_ACTIVATION_CELU_OPERATOR_DESC", id="CELU arrived at FL 3.0"),
    pytest.param(standalone(Activation("SWISH", (1.0,))), FL.LEVEL_6_1, "OPERATOR.FEATURE_LEVEL", "DML_ACTIVATION_SWISH_OPERATOR_DESC", id="SWISH arrived at FL 6.2"),
    pytest.param(standalone(Activation("SHRINK", (0.0, 0.5)), dtype=np.int32), FL.LEVEL_5_0, "TENSOR.DATA_TYPE_SUPPORT",
                 "DML_ACTIVATION_SHRINK_OPERATOR_DESC.InputTensor.DataType", id="INT32 SHRINK before FL 5.1"),
    pytest.param(standalone(Activation("SOFTSIGN"), dtype=np.int32), FL.LEVEL_6_4, "TENSOR.DATA_TYPE_SUPPORT",
                 "DML_ACTIVATION_SOFTSIGN_OPERATOR_DESC.InputTensor.DataType", id="SOFTSIGN takes no integers"),
    pytest.param(Activation("SCALED_TANH", (1.0, 0.5)).standalone(buffer_tensor(np.float32, (1, 5)), buffer_tensor(np.float16, (1, 5))), FL.LEVEL_6_4,
                 "ACTIVATION.SAME_DATA_TYPE", "DML_ACTIVATION_SCALED_TANH_OPERATOR_DESC.OutputTensor.DataType", id="SCALED_TANH FLOAT16 output of a FLOAT32 input"),
    pytest.param(DML_ACTIVATION_PARAMETERIZED_RELU_OPERATOR_DESC(buffer_tensor(np.float32, (1, 3, 2, 2)), buffer_tensor(np.float32, (1, 3, 1, 1)),
                                                                 buffer_tensor(np.float32, (1, 3, 2, 2))), FL.LEVEL_6_4,
                 "TENSOR.SAME_SIZES", f"{PRELU}.SlopeTensor.Sizes", id="PRELU slope {1, 3, 1, 1}: broadcast is by strides, sizes are equal"),
    pytest.param(prelu_desc((1, 4), np.int8), FL.LEVEL_5_0, "TENSOR.DATA_TYPE_SUPPORT", f"{PRELU}.InputTensor.DataType", id="INT8 PRELU before FL 5.1"),
    pytest.param(_conv_with(DML_OPERATOR_DESC(OP.ACTIVATION_SWISH, DML_ACTIVATION_SWISH_OPERATOR_DESC(None, None, 1.0))), FL.LEVEL_6_4,
                 "ACTIVATION.NOT_FUSABLE", f"{CONV}.FusedActivation.Type", id="SWISH is not on the fused-activation page"),
    pytest.param(_conv_with(DML_OPERATOR_DESC(OP.ACTIVATION_SOFTMAX, DML_ACTIVATION_SOFTMAX_OPERATOR_DESC())), FL.LEVEL_6_4,
                 "ACTIVATION.NOT_FUSABLE", f"{CONV}.FusedActivation.Type", id="SOFTMAX cannot be fused"),
    pytest.param(_conv_with(DML_OPERATOR_DESC(OP.ACTIVATION_PARAMETERIZED_RELU, DML_ACTIVATION_PARAMETERIZED_RELU_OPERATOR_DESC())), FL.LEVEL_6_4,
                 "ACTIVATION.NOT_FUSABLE", f"{CONV}.FusedActivation.Type", id="PARAMETERIZED_RELU cannot be fused"),
    pytest.param(_conv_with(FusedActivation.celu()), FL.LEVEL_2_0, "OPERATOR.FEATURE_LEVEL", f"{CONV}.FusedActivation.Type", id="a fused CELU needs FL 3.0"),
]


@pytest.mark.parametrize(("desc", "level", "rule_id", "path"), RULE_CASES)
def test_rule_is_reported_at_its_field(desc: Any, level: FL, rule_id: str, path: str) -> None:
    assert_rule(dmlpy.validate(desc, feature_level=level), rule_id, path)
    with pytest.raises(dmlpy.DmlError) as caught:
        dmlpy.create_device(level, backend="numpy").create_operator(desc)
    assert caught.value.hresult == dmlpy.HRESULT.E_INVALIDARG


@pytest.mark.parametrize(
    "desc",
    [
        pytest.param(DML_ACTIVATION_SOFTMAX_OPERATOR_DESC(buffer_tensor(np.float32, (1, 1, 3, 4)), buffer_tensor(np.float32, (1, 1, 3, 4))), id="SOFTMAX {1, 1, 3, 4}"),
        pytest.param(DML_ACTIVATION_LOG_SOFTMAX_OPERATOR_DESC(buffer_tensor(np.float32, (1, 1, 1, 4)), buffer_tensor(np.float32, (1, 1, 1, 4))), id="LOG_SOFTMAX {1, 1, 1, 4}"),
        pytest.param(standalone(Activation("SHRINK", (1.0, 0.5)), dtype=np.uint8), id="UINT8 SHRINK at FL 5.1"),
        pytest.param(_conv_with(FusedActivation.shrink()), id="a convolution with fused SHRINK"),
        pytest.param(prelu_desc((1, 3, 2, 2), slope_strides=(0, 1, 0, 0)), id="PRELU with a stride-0 slope"),
    ],
)
def test_valid_descs_have_no_finding(desc: Any) -> None:
    assert rule_ids(dmlpy.validate(desc, feature_level=FL.LEVEL_5_1)) == []


def test_effective_rank_message_names_the_rank() -> None:
    desc = DML_ACTIVATION_SOFTMAX_OPERATOR_DESC(buffer_tensor(np.float32, (2, 3, 4)), buffer_tensor(np.float32, (2, 3, 4)))
    assert assert_rule(dmlpy.validate(desc), "ACTIVATION.EFFECTIVE_RANK").message.startswith("is {2, 3, 4}, of effective rank 3")


# ---------------------------------------------------------------------------------------
# GraphBuilder


@pytest.mark.parametrize(
    ("call", "kwargs", "op_type", "fields"),
    [
        ("celu", {}, OP.ACTIVATION_CELU, {"Alpha": 1.0}),
        ("scaled_elu", {}, OP.ACTIVATION_SCALED_ELU, {"Alpha": 1.67326319217681884765625, "Gamma": 1.05070102214813232421875}),
        ("scaled_tanh", {}, OP.ACTIVATION_SCALED_TANH, {"Alpha": 1.0, "Beta": 0.5}),
        ("thresholded_relu", {}, OP.ACTIVATION_THRESHOLDED_RELU, {"Alpha": 1.0}),
        ("shrink", {}, OP.ACTIVATION_SHRINK, {"Bias": 0.0, "Threshold": 0.5}),
        ("swish", {}, OP.ACTIVATION_SWISH, {"SigmoidInputScale": 1.0}),
        ("hard_swish", {}, OP.ACTIVATION_HARD_SWISH, {"Alpha": 0.2, "Beta": 0.5}),
        ("softsign", {}, OP.ACTIVATION_SOFTSIGN, {}),
        ("parametric_softplus", {"alpha": 2.0, "beta": 0.5}, OP.ACTIVATION_PARAMETRIC_SOFTPLUS, {"Alpha": 2.0, "Beta": 0.5}),
        ("softmax", {}, OP.ACTIVATION_SOFTMAX1, {"Axes": (2,)}),
        ("log_softmax", {"axes": [0, -1]}, OP.ACTIVATION_LOG_SOFTMAX1, {"Axes": (0, 2)}),
        ("hardmax", {"axes": [1]}, OP.ACTIVATION_HARDMAX1, {"Axes": (1,)}),
    ],
)
def test_builder_methods_use_the_defaults_and_run_on_both_backends(backend: str, call: str, kwargs: dict[str, Any], op_type: OP, fields: dict[str, Any]) -> None:
    g = dmlpy.GraphBuilder(backend=backend)
    x = g.input("x", np.float32, (2, 3, 4))
    y = getattr(g, call)(x, **kwargs)
    node = g._nodes[-1].desc
    assert REGISTRY[op_type].desc_class is type(node)
    assert {name: (tuple(getattr(node, name)) if name == "Axes" else getattr(node, name)) for name in fields} == fields
    xv = np.random.default_rng(1).uniform(-3, 3, size=(2, 3, 4)).astype(np.float32)
    got = g.compile({"y": y})(x=xv)["y"]
    direct = dmlpy.run(dmlpy.operator_desc(node).Desc, backend=backend, InputTensor=xv)
    np.testing.assert_array_equal(got, direct)


def test_builder_prelu_broadcasts_a_per_channel_slope(backend: str) -> None:
    g = dmlpy.GraphBuilder(backend=backend)
    x = g.input("x", np.float32, (2, 3, 2, 2))
    slope = g.input("slope", np.float32, (3, 1, 1))
    program = g.compile({"y": g.prelu(x, slope)})
    xv = np.linspace(-6, 5, 24, dtype=np.float32).reshape(2, 3, 2, 2)
    sv = np.array([0.5, -2.0, 0.0], np.float32).reshape(3, 1, 1)
    np.testing.assert_array_equal(program(x=xv, slope=sv)["y"], np.where(xv >= 0, xv, sv * xv))


def test_builder_softmax_below_fl_5_1_emits_the_last_dimension_operator() -> None:
    g = dmlpy.GraphBuilder(feature_level=FL.LEVEL_4_0, backend="numpy")
    x = g.input("x", np.float32, (1, 1, 2, 3))
    y = g.softmax(x)
    assert isinstance(g._nodes[-1].desc, DML_ACTIVATION_SOFTMAX_OPERATOR_DESC)
    got = g.compile({"y": y})(x=np.array([[[[0.0, LN(2), LN(5)], [LN(3), 0.0, LN(4)]]]], np.float32))["y"]
    np.testing.assert_allclose(got.ravel(), [1 / 8, 2 / 8, 5 / 8, 3 / 8, 1 / 8, 4 / 8], rtol=1e-6)


def test_builder_softmax_over_other_axes_below_fl_5_1_names_axes() -> None:
    g = dmlpy.GraphBuilder(feature_level=FL.LEVEL_4_0, backend="numpy")
    x = g.input("x", np.float32, (1, 1, 2, 3))
    with pytest.raises(dmlpy.DmlError) as caught:
        g.softmax(x, axes=[2])
    assert "argument 'axes'" in str(caught.value)
    assert_rule(caught.value, "OPERATOR.FEATURE_LEVEL")


def test_builder_softmax_of_an_effective_rank_3_input_below_fl_5_1_names_x() -> None:
    g = dmlpy.GraphBuilder(feature_level=FL.LEVEL_4_0, backend="numpy")
    x = g.input("x", np.float32, (2, 1, 2, 3))
    with pytest.raises(dmlpy.DmlError) as caught:
        g.softmax(x)
    assert "argument 'x'" in str(caught.value)
    assert_rule(caught.value, "ACTIVATION.EFFECTIVE_RANK")


def test_builder_softmax_axis_out_of_range_names_axes() -> None:
    g = dmlpy.GraphBuilder(backend="numpy")
    with pytest.raises(dmlpy.DmlError) as caught:
        g.softmax(g.input("x", np.float32, (2, 3)), axes=[2])
    assert "argument 'axes'" in str(caught.value)
    assert_rule(caught.value, "ACTIVATION.AXIS_RANGE")


def test_prelu_runs_in_place_over_its_input(device: dmlpy.Device) -> None:
    """The page: the output may alias InputTensor. The slope stays in its own buffer."""
    desc = prelu_desc((1, 4))
    compiled = device.compile_operator(device.create_operator(desc))
    data, slope = device.create_buffer(16), device.create_buffer(16)
    data.upload(np.array([-2.0, -1.0, 0.5, 3.0], np.float32))
    slope.upload(np.array([0.5, 3.0, 9.0, 9.0], np.float32))
    recorder, command_list = device.create_command_recorder(), device.create_command_list()
    initializer = device.create_operator_initializer([compiled])
    recorder.record_dispatch(command_list, initializer, device.create_binding_table(initializer))
    table = device.create_binding_table(compiled)
    table.bind_inputs([buffer_binding(data), buffer_binding(slope)])
    table.bind_outputs([buffer_binding(data)])
    recorder.record_dispatch(command_list, compiled, table)
    command_list.close()
    device.execute(command_list)
    assert data.read(desc.OutputTensor).ravel().tolist() == [-1.0, -3.0, 0.5, 3.0]


def test_a_graph_convolution_with_fused_celu_runs_on_both_backends(backend: str) -> None:
    """A 1x1 convolution by -1 then CELU(1): x = 2 gives e^-2 - 1, x = -3 gives 3."""
    g = dmlpy.GraphBuilder(backend=backend)
    x = g.input("x", np.float32, (1, 1, 1, 2))
    w = g.input("w", np.float32, (1, 1, 1, 1))
    program = g.compile({"y": g.convolution(x, w, activation=FusedActivation.celu())})
    y = program(x=np.array([[[[2.0, -3.0]]]], np.float32), w=np.full((1, 1, 1, 1), -1.0, np.float32))["y"]
    np.testing.assert_allclose(y.ravel(), [math.exp(-2.0) - 1, 3.0], rtol=1e-7)


def test_element_wise_add1_applies_a_fused_shrink(device: dmlpy.Device) -> None:
    """ADD1's FusedActivation takes the same list: SHRINK(0.5, 1) of 2, 0.5 and -3 is 1.5, 0 and -2.5."""
    from dmlpy.operators.descs import DML_ELEMENT_WISE_ADD1_OPERATOR_DESC

    desc = DML_ELEMENT_WISE_ADD1_OPERATOR_DESC(*(buffer_tensor(np.float32, (1, 3)) for _ in range(3)), FusedActivation.shrink(0.5, 1.0))
    y = dmlpy.run(desc, device=device, ATensor=np.array([[1.0, 0.0, -3.0]], np.float32), BTensor=np.array([[1.0, 0.5, 0.0]], np.float32))
    assert y.ravel().tolist() == [1.5, 0.0, -2.5]
