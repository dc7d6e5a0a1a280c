"""DML_OPERATOR_GEMM's kernels, through the whole pipeline (dmlpy.run) on both backends.

``Output = FusedActivation(Alpha * TransA(A) x TransB(B) + Beta * C)`` (the DML_GEMM_OPERATOR_DESC
page). Oracles: onnxruntime on one-node ONNX models, as onnxruntime's DirectML provider maps them
(Gemm -> GEMM with transA/transB/alpha/beta and C broadcast by zero strides; MatMul -> GEMM with
Alpha 1 and no C, batch dims broadcast by zero strides; Gemm followed by an activation node -> a
fused activation), and values worked by hand from the formula (infinities and NaNs as the direct
sum gives them, FLOAT16 saturation). The C kernel is also compared with the NumPy kernel on random
shapes, layouts, transposes and data types, and called directly with bindings that do not fit.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from conftest import native_device

import dmlpy
from dmlpy import DML_GEMM_OPERATOR_DESC, DML_MATRIX_TRANSFORM, FusedActivation, buffer_tensor, packed_strides

NAN, INF = math.nan, math.inf
TOLERANCE = {np.dtype(np.float32): {"rtol": 2e-5, "atol": 2e-5}, np.dtype(np.float16): {"rtol": 4e-3, "atol": 4e-3}}


def gemm_desc(a: tuple[int, ...], b: tuple[int, ...], y: tuple[int, ...], c: tuple[int, ...] | None = None, *, dtype: Any = np.float32,
              trans_a: bool = False, trans_b: bool = False, alpha: float = 1.0, beta: float = 1.0, fused: Any = None,
              strides: dict[str, tuple[int, ...] | None] | None = None) -> DML_GEMM_OPERATOR_DESC:  # fmt: skip
    """A GEMM desc over tensors of these Sizes (and Strides by slot letter: "a", "b", "c", "y")."""
    strides = strides or {}
    return DML_GEMM_OPERATOR_DESC(
        ATensor=buffer_tensor(dtype, a, strides.get("a")),
        BTensor=buffer_tensor(dtype, b, strides.get("b")),
        CTensor=None if c is None else buffer_tensor(dtype, c, strides.get("c")),
        OutputTensor=buffer_tensor(dtype, y, strides.get("y")),
        TransA=DML_MATRIX_TRANSFORM(int(trans_a)), TransB=DML_MATRIX_TRANSFORM(int(trans_b)), Alpha=alpha, Beta=beta, FusedActivation=fused,
    )  # fmt: skip


def run(device: dmlpy.Device, desc: DML_GEMM_OPERATOR_DESC, a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None) -> np.ndarray:
    inputs = {"ATensor": a, "BTensor": b} | ({} if c is None else {"CTensor": c})
    return np.asarray(dmlpy.run(desc, device=device, **inputs))


def onnx_run(nodes: list[Any], inputs: dict[str, np.ndarray]) -> np.ndarray:
    import onnxruntime as ort
    from onnx import helper

    graph = helper.make_graph(
        nodes, "oracle",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape)) for n, v in inputs.items()],
        [helper.make_empty_tensor_value_info(nodes[-1].output[0])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 10
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, inputs)[0]  # type: ignore[no-any-return]


def assert_close(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.shape == expected.shape
    np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), **TOLERANCE[got.dtype])


# ---------------------------------------------------------------------------------------
# ONNX Gemm: transA, transB, alpha, beta and C broadcast (as onnxruntime's DirectML provider maps
# it: {M, N} tensors as {1, 1, M, N}, a C of fewer dims read through zero strides)

# (M, K, N, transA, transB, alpha, beta, C's ONNX shape or None)
GEMM_CASES = [
    pytest.param(3, 4, 5, 0, 0, 1.0, 1.0, None, id="plain product without C"),
    pytest.param(3, 4, 5, 1, 0, 1.0, 1.0, (3, 5), id="transA reads A stored K x M"),
    pytest.param(3, 4, 5, 0, 1, 1.0, 1.0, (3, 5), id="transB reads B stored N x K, as a fully connected layer's weight"),
    pytest.param(3, 4, 5, 1, 1, 0.5, -2.0, (3, 5), id="both transposes with alpha 0.5 and beta -2"),
    pytest.param(7, 9, 6, 0, 1, 1.0, 1.0, (6,), id="a bias row C {N} broadcast over the rows"),
    pytest.param(7, 9, 6, 0, 0, 2.0, 0.5, (7, 1), id="a column C {M, 1} broadcast over the columns"),
    pytest.param(7, 9, 6, 0, 0, 1.0, 3.0, (1,), id="a scalar C broadcast everywhere"),
    pytest.param(1, 200, 70, 0, 0, 1.0, 1.0, (70,), id="one row by a wide matrix: a matrix-vector product"),
    pytest.param(37, 130, 100, 0, 1, -1.5, 0.25, (100,), id="several 8 x 48 tiles, partial ones at both edges, K beyond one block"),
    pytest.param(37, 300, 50, 1, 0, 1.0, 1.0, (37, 50), id="K of 300 spans two blocks of the C kernel"),
]


@pytest.mark.parametrize(("m", "k", "n", "trans_a", "trans_b", "alpha", "beta", "c_shape"), GEMM_CASES)
def test_gemm_matches_onnx_gemm(device: dmlpy.Device, rng: np.random.Generator, m: int, k: int, n: int, trans_a: int, trans_b: int, alpha: float,
                                beta: float, c_shape: tuple[int, ...] | None) -> None:  # fmt: skip
    a = rng.standard_normal((k, m) if trans_a else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if trans_b else (k, n)).astype(np.float32)
    c = None if c_shape is None else rng.standard_normal(c_shape).astype(np.float32)
    from onnx import helper

    node = helper.make_node("Gemm", ["a", "b", *([] if c is None else ["c"])], ["y"], transA=trans_a, transB=trans_b, alpha=alpha, beta=beta)
    expected = onnx_run([node], {"a": a, "b": b} | ({} if c is None else {"c": c}))
    c_strides = None
    c_full = None
    if c is not None:  # C {.., M, N} read through zero strides where ONNX broadcasts
        padded = (1,) * (2 - c.ndim) + c.shape
        c_strides = (0, 0, *(0 if size == 1 else stride for size, stride in zip(padded, packed_strides(padded), strict=True)))
        c_full = np.broadcast_to(c.reshape(padded), (m, n)).reshape(1, 1, m, n)
    desc = gemm_desc((1, 1, *a.shape), (1, 1, *b.shape), (1, 1, m, n), None if c is None else (1, 1, m, n), trans_a=bool(trans_a),
                     trans_b=bool(trans_b), alpha=alpha, beta=beta, strides={"c": c_strides})  # fmt: skip
    if c is not None:
        assert desc.CTensor is not None and desc.CTensor.Desc.TotalTensorSizeInBytes == 4 * max(1, c.size)
    y = run(device, desc, a.reshape(1, 1, *a.shape), b.reshape(1, 1, *b.shape), c_full)
    assert_close(y[0, 0], expected)


# ---------------------------------------------------------------------------------------
# ONNX MatMul: batched, and batch dims broadcast (A {2, 1, M, K} x B {1, 3, K, N} -> {2, 3, M, N}:
# in DirectML the batch Sizes are the output's and the broadcast operand has stride 0 there)

MATMUL_CASES = [
    pytest.param((4, 6), (6, 5), id="2-D"),
    pytest.param((3, 4, 6), (3, 6, 5), id="3-D with 3 batches"),
    pytest.param((2, 3, 4, 6), (2, 3, 6, 5), id="4-D with 2 x 3 batches"),
    pytest.param((2, 1, 4, 6), (1, 3, 6, 5), id="4-D with A broadcast over channels and B over batches"),
    pytest.param((1, 1, 9, 70), (2, 3, 70, 60), id="one A for all six B matrices"),
    pytest.param((2, 3, 17, 33), (1, 1, 33, 50), id="one shared weight B for six A matrices"),
]


@pytest.mark.parametrize(("a_shape", "b_shape"), MATMUL_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["fp32", "fp16"])
def test_gemm_matches_onnx_matmul(device: dmlpy.Device, rng: np.random.Generator, a_shape: tuple[int, ...], b_shape: tuple[int, ...], dtype: Any) -> None:
    from onnx import helper

    a = rng.uniform(-1, 1, a_shape).astype(dtype)
    b = rng.uniform(-1, 1, b_shape).astype(dtype)
    expected = onnx_run([helper.make_node("MatMul", ["a", "b"], ["y"])], {"a": a, "b": b})
    batch = expected.shape[:-2]

    def broadcast(x: np.ndarray) -> tuple[np.ndarray, tuple[int, ...]]:
        sizes = (*batch, *x.shape[-2:])
        strides = tuple(0 if i < len(batch) and x.shape[i] == 1 and batch[i] != 1 else s for i, s in enumerate(packed_strides(x.shape)))
        return np.broadcast_to(x, sizes), strides

    (a_full, a_strides), (b_full, b_strides) = broadcast(a), broadcast(b)
    desc = gemm_desc(a_full.shape, b_full.shape, expected.shape, dtype=dtype, strides={"a": a_strides, "b": b_strides})
    assert desc.ATensor.Desc.TotalTensorSizeInBytes == a.nbytes and desc.BTensor.Desc.TotalTensorSizeInBytes == b.nbytes
    assert_close(run(device, desc, a_full, b_full), expected)


# ---------------------------------------------------------------------------------------
# Fused activations: Gemm followed by the activation's ONNX node

ACTIVATIONS = [
    pytest.param(FusedActivation.relu(), ("Relu", {}), id="relu"),
    pytest.param(FusedActivation.leaky_relu(0.1), ("LeakyRelu", {"alpha": 0.1}), id="leaky relu 0.1"),
    pytest.param(FusedActivation.sigmoid(), ("Sigmoid", {}), id="sigmoid"),
    pytest.param(FusedActivation.tanh(), ("Tanh", {}), id="tanh"),
    pytest.param(FusedActivation.elu(0.5), ("Elu", {"alpha": 0.5}), id="elu 0.5"),
    pytest.param(FusedActivation.hard_sigmoid(0.3, 0.4), ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}), id="hard sigmoid 0.3 0.4"),
    pytest.param(FusedActivation.softplus(1.0), ("Softplus", {}), id="softplus"),
    pytest.param(FusedActivation.gelu(), ("Gelu", {}), id="gelu"),
]


@pytest.mark.parametrize(("fused", "onnx_op"), ACTIVATIONS)
def test_the_fused_activation_applies_after_alpha_and_beta(device: dmlpy.Device, rng: np.random.Generator, fused: Any, onnx_op: tuple[str, dict[str, Any]]) -> None:
    from onnx import helper

    m, k, n = 9, 20, 53
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((n, k)).astype(np.float32)
    c = rng.standard_normal((n,)).astype(np.float32)
    nodes = [helper.make_node("Gemm", ["a", "b", "c"], ["g"], transB=1, alpha=0.5, beta=2.0), helper.make_node(onnx_op[0], ["g"], ["y"], **onnx_op[1])]
    expected = onnx_run(nodes, {"a": a, "b": b, "c": c})
    desc = gemm_desc((1, 1, m, k), (1, 1, n, k), (1, 1, m, n), (1, 1, m, n), trans_b=True, alpha=0.5, beta=2.0, fused=fused, strides={"c": (0, 0, 0, 1)})
    y = run(device, desc, a.reshape(1, 1, m, k), b.reshape(1, 1, n, k), np.broadcast_to(c, (1, 1, m, n)))
    assert_close(y[0, 0], expected)


# ELEMENT_WISE_CLIP as GEMM's FusedActivation (DML_FEATURE_LEVEL_6_0): K = 1, so each output is a[m] * b[n], exactly
CLIP_A = [1.0, NAN, INF, -INF, -0.0]
CLIP_B = [-3.0, -0.5, 0.25, 7.0]
FUSED_CLIP_CASES = [
    pytest.param((-1.0, 2.0), [[-1.0, -0.5, 0.25, 2.0], [NAN] * 4, [-1.0, -1.0, 2.0, 2.0], [2.0, 2.0, -1.0, -1.0], [0.0, 0.0, -0.0, -0.0]],
                 id="clamped to [-1, 2]; a NaN stays NaN, infinities clamp"),
    pytest.param((2.0, 1.0), [[1.0] * 4, [NAN] * 4, [1.0] * 4, [1.0] * 4, [1.0] * 4], id="Min above Max: max(x, Min) then min(., Max) gives Max"),
    pytest.param((-INF, INF), [[-3.0, -0.5, 0.25, 7.0], [NAN] * 4, [-INF, -INF, INF, INF], [INF, INF, -INF, -INF], [0.0, 0.0, -0.0, -0.0]],
                 id="infinite bounds change nothing"),
]


@pytest.mark.parametrize(("bounds", "expected"), FUSED_CLIP_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["fp32", "fp16"])
def test_a_fused_clip_clamps_the_products(device: dmlpy.Device, bounds: tuple[float, float], expected: list[list[float]], dtype: Any) -> None:
    a = np.array(CLIP_A, dtype).reshape(1, 1, 5, 1)
    b = np.array(CLIP_B, dtype).reshape(1, 1, 1, 4)
    y = run(device, gemm_desc(a.shape, b.shape, (1, 1, 5, 4), dtype=dtype, fused=FusedActivation.clip(*bounds)), a, b)
    np.testing.assert_array_equal(y[0, 0], np.array(expected, dtype))


def test_a_fused_clip_with_a_scale_bias_scales_first(device: dmlpy.Device, rng: np.random.Generator) -> None:
    """The C kernels fuse CLIP without ScaleBias; with one, the native backend runs the NumPy kernel: clamp(2 * y - 1)."""
    from dmlpy.operators.descs.helpers import DML_SCALE_BIAS

    a, b = rng.standard_normal((1, 1, 6, 5)).astype(np.float32), rng.standard_normal((1, 1, 5, 7)).astype(np.float32)
    fused = FusedActivation.clip(-0.5, 0.75)
    fused.Desc.ScaleBias = DML_SCALE_BIAS(2.0, -1.0)
    expected = np.clip(2.0 * (a[0, 0].astype(np.float64) @ b[0, 0].astype(np.float64)) - 1.0, -0.5, 0.75)
    y = run(device, gemm_desc(a.shape, b.shape, (1, 1, 6, 7), fused=fused), a, b)
    assert_close(y[0, 0], expected.astype(np.float32))


def test_a_fused_softmax_normalizes_each_output_row_as_onnx_gemm_then_softmax(device: dmlpy.Device, rng: np.random.Generator) -> None:
    """GEMM's FusedActivation takes ACTIVATION_SOFTMAX from feature level 6.1: over the output's last dimension."""
    from onnx import helper

    from dmlpy.operators.descs import DML_ACTIVATION_SOFTMAX_OPERATOR_DESC

    m, k, n = 6, 9, 11
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n), (n,)))
    nodes = [helper.make_node("Gemm", ["a", "b", "c"], ["g"], alpha=0.5, beta=2.0), helper.make_node("Softmax", ["g"], ["y"], axis=-1)]
    expected = onnx_run(nodes, {"a": a, "b": b, "c": c})
    fused = dmlpy.DML_OPERATOR_DESC(dmlpy.DML_OPERATOR_TYPE.ACTIVATION_SOFTMAX, DML_ACTIVATION_SOFTMAX_OPERATOR_DESC())
    desc = gemm_desc((1, 1, m, k), (1, 1, k, n), (1, 1, m, n), (1, 1, m, n), alpha=0.5, beta=2.0, fused=fused, strides={"c": (0, 0, 0, 1)})
    y = run(device, desc, a.reshape(1, 1, m, k), b.reshape(1, 1, k, n), np.broadcast_to(c, (1, 1, m, n)))
    assert_close(y[0, 0], expected)


def test_a_fused_softmax1_normalizes_over_its_axes(device: dmlpy.Device, rng: np.random.Generator) -> None:
    """ACTIVATION_SOFTMAX1 with Axes {2, 3}: each batch's whole M x N output sums to 1 (plain loops: the products, then
    exp over the matrix divided by its sum)."""
    from dmlpy.operators.descs import DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC

    a, b = rng.standard_normal((2, 3, 4, 5)).astype(np.float32), rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    fused = dmlpy.DML_OPERATOR_DESC(dmlpy.DML_OPERATOR_TYPE.ACTIVATION_SOFTMAX1, DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC(None, None, 2, [2, 3]))
    y = run(device, gemm_desc(a.shape, b.shape, (2, 3, 4, 6), fused=fused), a, b)
    expected = np.empty((2, 3, 4, 6))
    for i, j in itertools.product(range(2), range(3)):
        product = [[math.fsum(float(a[i, j, m, k]) * float(b[i, j, k, n]) for k in range(5)) for n in range(6)] for m in range(4)]
        total = math.fsum(math.exp(v) for row in product for v in row)
        expected[i, j] = [[math.exp(v) / total for v in row] for row in product]
    assert_close(y, expected)


# ---------------------------------------------------------------------------------------
# Hand-worked values: the direct sum's infinities and NaNs, FLOAT16 saturation


def test_hand_worked_2x2_with_alpha_beta_and_c(device: dmlpy.Device) -> None:
    """[[1, 2], [3, 4]] x [[5, 6], [7, 8]] = [[19, 22], [43, 50]]; 2 * that - 1 * [[1, 1], [1, 1]]."""
    a = np.array([[[[1, 2], [3, 4]]]], np.float32)
    b = np.array([[[[5, 6], [7, 8]]]], np.float32)
    c = np.ones((1, 1, 2, 2), np.float32)
    y = run(device, gemm_desc(a.shape, b.shape, (1, 1, 2, 2), c.shape, alpha=2.0, beta=-1.0), a, b, c)
    np.testing.assert_array_equal(y[0, 0], [[37, 43], [85, 99]])


# (A row, B column, the one output): a direct sum of the K products
INF_NAN_CASES = [
    pytest.param([INF, 1.0], [1.0, 2.0], INF, id="inf times 1 plus 2 is inf"),
    pytest.param([INF, 1.0], [0.0, 2.0], NAN, id="inf times 0 is NaN: every product is summed"),
    pytest.param([INF, -INF], [1.0, 1.0], NAN, id="inf plus -inf is NaN"),
    pytest.param([NAN, 0.0], [0.0, 0.0], NAN, id="NaN times 0 is NaN"),
    pytest.param([1e30, 1e30], [1e10, 1e10], INF, id="float32 overflow of the sum is inf"),
]


@pytest.mark.parametrize(("row", "column", "expected"), INF_NAN_CASES)
def test_infinities_and_nans_propagate_as_the_direct_sum_gives(device: dmlpy.Device, row: list[float], column: list[float], expected: float) -> None:
    a = np.array(row, np.float32).reshape(1, 1, 1, -1)
    b = np.array(column, np.float32).reshape(1, 1, -1, 1)
    y = run(device, gemm_desc(a.shape, b.shape, (1, 1, 1, 1)), a, b)
    np.testing.assert_array_equal(y.ravel(), [expected])


@pytest.mark.parametrize("trans_b", [False, True], ids=["B as stored", "B transposed"])
def test_an_infinite_b_column_reaches_only_its_output_column(device: dmlpy.Device, rng: np.random.Generator, trans_b: bool) -> None:
    """The C kernel pads its 8 x 48 tiles with zeros: padding must never meet the infinity (0 * inf = NaN elsewhere)."""
    m, k, n = 11, 13, 50
    a = rng.uniform(0.5, 1.0, (1, 1, m, k)).astype(np.float32)
    b = rng.uniform(0.5, 1.0, (1, 1, k, n)).astype(np.float32)
    b[0, 0, 4, 3] = INF
    stored = np.ascontiguousarray(np.swapaxes(b, -1, -2)) if trans_b else b
    y = run(device, gemm_desc(a.shape, stored.shape, (1, 1, m, n), trans_b=trans_b), a, stored)
    assert np.isposinf(y[0, 0, :, 3]).all()
    others = np.delete(y[0, 0], 3, axis=1)
    assert np.isfinite(others).all()
    np.testing.assert_allclose(others, np.delete((a[0, 0].astype(np.float64) @ np.where(np.isinf(b[0, 0]), 0, b[0, 0])), 3, axis=1), rtol=1e-5)


def test_an_infinite_a_row_reaches_only_its_output_row(device: dmlpy.Device, rng: np.random.Generator) -> None:
    m, k, n = 9, 5, 60
    a = rng.uniform(0.5, 1.0, (1, 1, m, k)).astype(np.float32)
    a[0, 0, 8, 2] = -INF
    b = rng.uniform(0.5, 1.0, (1, 1, k, n)).astype(np.float32)
    y = run(device, gemm_desc(a.shape, b.shape, (1, 1, m, n)), a, b)
    assert np.isneginf(y[0, 0, 8]).all()
    assert np.isfinite(y[0, 0, :8]).all()


def test_beta_0_times_an_infinite_c_is_nan_as_the_formula_gives(device: dmlpy.Device) -> None:
    """docs/deviations.md: Beta * C is always formed; 0 * inf = NaN, 0 * 5 = 0."""
    a, b = np.ones((1, 1, 1, 2), np.float32), np.ones((1, 1, 2, 2), np.float32)
    c = np.array([[[[INF, 5.0]]]], np.float32)
    y = run(device, gemm_desc(a.shape, b.shape, (1, 1, 1, 2), c.shape, beta=0.0), a, b, c)
    np.testing.assert_array_equal(y.ravel(), [NAN, 2.0])


def test_float16_sums_in_float32_and_saturates_once_at_the_store(device: dmlpy.Device) -> None:
    """60000 + 60000 = 120000 > 65504: inf in FLOAT16; 60000 + 60000 - 60000 = 60000 stays finite (no FLOAT16 partial sums)."""
    a = np.array([[[[60000, 60000, -60000], [60000, 60000, 0]]]], np.float16)
    b = np.ones((1, 1, 3, 1), np.float16)
    y = run(device, gemm_desc(a.shape, b.shape, (1, 1, 2, 1), dtype=np.float16), a, b)
    assert y.dtype == np.float16
    np.testing.assert_array_equal(y.ravel(), np.array([60000, INF], np.float16))


# ---------------------------------------------------------------------------------------
# Layouts through strides


def test_transposes_through_strides_give_the_packed_answer(device: dmlpy.Device, rng: np.random.Generator) -> None:
    """A stored column-major with TransA NONE, B read through padded rows, C broadcast, the output column-major: same values."""
    m, k, n = 10, 7, 49
    a, b = rng.standard_normal((2, 1, m, k)).astype(np.float32), rng.standard_normal((2, 1, k, n)).astype(np.float32)
    c = rng.standard_normal((2, 1, m, n)).astype(np.float32)
    packed = run(device, gemm_desc(a.shape, b.shape, (2, 1, m, n), c.shape, alpha=0.75, beta=1.25), a, b, c)
    layouts = {"a": (m * k, m * k, 1, m), "b": (k * (n + 3), k * (n + 3), n + 3, 1), "c": (m * n, m * n, n, 1), "y": (m * n, m * n, 1, m)}
    strided = run(device, gemm_desc(a.shape, b.shape, (2, 1, m, n), c.shape, alpha=0.75, beta=1.25, strides=layouts), a, b, c)
    np.testing.assert_array_equal(strided, packed)
    expected = 0.75 * (a.astype(np.float64) @ b) + 1.25 * c
    np.testing.assert_allclose(packed, expected, rtol=1e-5, atol=1e-5)


def test_transa_of_a_matrix_equals_no_transform_of_its_transposed_strides(device: dmlpy.Device, rng: np.random.Generator) -> None:
    m, k, n = 6, 9, 8
    stored = rng.standard_normal((1, 1, k, m)).astype(np.float32)
    b = rng.standard_normal((1, 1, k, n)).astype(np.float32)
    with_trans = run(device, gemm_desc(stored.shape, b.shape, (1, 1, m, n), trans_a=True), stored, b)
    through_strides = run(device, gemm_desc((1, 1, m, k), b.shape, (1, 1, m, n), strides={"a": (k * m, k * m, 1, m)}), np.swapaxes(stored, -1, -2), b)
    np.testing.assert_array_equal(with_trans, through_strides)


# ---------------------------------------------------------------------------------------
# The C kernel against the NumPy kernel: random shapes, layouts, transposes, data types, threads


def _random_case(rng: np.random.Generator) -> tuple[DML_GEMM_OPERATOR_DESC, list[np.ndarray | None]]:
    rank = int(rng.integers(2, 5))
    dtype = [np.float32, np.float16][int(rng.integers(0, 2))]
    batch = tuple(int(rng.integers(1, 3)) for _ in range(rank - 2))
    m, k, n = (int(rng.integers(1, v)) for v in [[4, 20, 70][int(rng.integers(0, 3))], [3, 40, 300][int(rng.integers(0, 3))], [5, 50, 130][int(rng.integers(0, 3))]])
    trans_a, trans_b = bool(rng.integers(0, 2)), bool(rng.integers(0, 2))
    a_sizes, b_sizes, y_sizes = (*batch, *((k, m) if trans_a else (m, k))), (*batch, *((n, k) if trans_b else (k, n))), (*batch, m, n)

    def layout(sizes: tuple[int, ...], broadcast: bool) -> tuple[int, ...] | None:
        kind = int(rng.integers(0, 4))
        strides = list(packed_strides(sizes))
        if kind == 1:  # column-major matrices
            strides[-2], strides[-1] = 1, sizes[-2]
        elif kind == 2:  # padded rows
            strides = list(packed_strides([*sizes[:-1], sizes[-1] + 5]))
        elif kind == 3 and broadcast:
            strides[int(rng.integers(0, rank))] = 0
        return tuple(strides) if kind else None

    has_c = bool(rng.integers(0, 2))
    desc = gemm_desc(a_sizes, b_sizes, y_sizes, y_sizes if has_c else None, dtype=dtype, trans_a=trans_a, trans_b=trans_b,
                     alpha=float(rng.uniform(-2, 2)), beta=float(rng.uniform(-2, 2)), fused=[None, FusedActivation.relu(), FusedActivation.tanh()][int(rng.integers(0, 3))],
                     strides={"a": layout(a_sizes, True), "b": layout(b_sizes, True), "c": layout(y_sizes, True), "y": layout(y_sizes, False)})  # fmt: skip

    def values(sizes: tuple[int, ...], tensor: Any) -> np.ndarray:
        x = rng.uniform(-1, 1, sizes).astype(dtype)
        for axis, stride in enumerate(tensor.Desc.Strides or ()):
            if stride == 0:  # a broadcast axis holds one value
                x = np.ascontiguousarray(np.broadcast_to(np.take(x, [0], axis=axis), sizes))
        return x

    return desc, [values(a_sizes, desc.ATensor), values(b_sizes, desc.BTensor), values(y_sizes, desc.CTensor) if has_c else None]


@pytest.mark.parametrize("seed", range(60))
def test_native_matches_numpy_on_random_cases(numpy_device: dmlpy.Device, seed: int) -> None:
    native = native_device()
    desc, (a, b, c) = _random_case(np.random.default_rng([54, seed]))
    assert a is not None and b is not None
    expected = run(numpy_device, desc, a, b, c)
    got = run(native, desc, a, b, c)
    tolerance = {"rtol": 1e-2, "atol": 1e-2} if got.dtype == np.float16 else {"rtol": 1e-5, "atol": 1e-5}
    np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), **tolerance, err_msg=str(desc))


# Each path of the C kernel (docs/deviations.md, GEMM: the answer never depends on the thread count, and on the strides
# only where the row-streaming dot products read a transposed B)
_PATH_CASES = [
    pytest.param(1, 2048, 1000, id="one row: B read once row after row, 13 K blocks"),
    pytest.param(2, 37, 21, id="two rows: K of 37 ends inside the third 16-step, 21 columns end inside the second 16"),
    pytest.param(3, 500, 200, id="three rows: B read row after row, a partial last K block"),
    pytest.param(4, 165, 17, id="four rows: a K block of 5 steps after the first 160, one column in the last 16"),
    pytest.param(12, 300, 200, id="twelve rows: B read in place by the tile kernels"),
    pytest.param(130, 300, 700, id="packed B panels, partial tiles at both edges"),
    pytest.param(256, 200, 2112, id="several pack groups streamed and packed by their first M block, the 2 MB output stored around the caches"),
]


def _native_isa() -> str:
    from dmlpy.backends import native

    ffi, lib = native.library()
    return str(ffi.string(lib.dmlpy_native_isa()).decode())


def _dot_products_in_sixteen_lanes(a: np.ndarray, bt: np.ndarray, kc: int = 160) -> np.ndarray:
    """A' x B in the row-streaming dot products' documented order, by float32 NumPy: per K block of kc, lane j sums the
    products at k = j, 16 + j, ... of the block with one rounding each (a float32 product is exact in float64, so the
    float64 sum rounded to float32 is the fused multiply-add but for a double rounding once in about 2**29), the lanes
    are added as the tree j + 8, + 4, + 2, + 1, and the blocks in increasing order."""
    m, k = a.shape
    total = np.zeros((m, bt.shape[0]), np.float32)
    for k0 in range(0, k, kc):
        width = min(kc, k - k0)
        steps = -(-width // 16)
        pad = ((0, 0), (0, 16 * steps - width))
        ab = np.pad(a[:, k0 : k0 + width].astype(np.float32), pad).reshape(m, 1, steps, 16)
        bb = np.pad(bt[:, k0 : k0 + width].astype(np.float32), pad).reshape(1, -1, steps, 16)
        lanes = np.zeros((m, bt.shape[0], 16), np.float32)
        for step in range(steps):
            lanes = (ab[:, :, step].astype(np.float64) * bb[:, :, step] + lanes).astype(np.float32)
        for half in (8, 4, 2, 1):
            lanes = lanes[..., :half] + lanes[..., half : 2 * half]
        total = lanes[..., 0] if k0 == 0 else lanes[..., 0] + total
    return total


@pytest.mark.parametrize(("m", "k", "n"), _PATH_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["fp32", "fp16"])
def test_the_thread_count_never_changes_a_byte_and_the_b_layout_only_for_row_dot_products(m: int, k: int, n: int, dtype: Any,
                                                                                           rng: np.random.Generator) -> None:  # fmt: skip
    a, b = rng.uniform(-1, 1, (1, 1, m, k)).astype(dtype), rng.uniform(-1, 1, (1, 1, k, n)).astype(dtype)
    desc = gemm_desc(a.shape, b.shape, (1, 1, m, n), dtype=dtype)
    one, two = run(native_device(threads=1), desc, a, b), run(native_device(threads=2), desc, a, b)
    assert one.tobytes() == two.tobytes()
    # B stored transposed (TransB, a fully connected layer's weight): its columns strided. The tile kernels' packing
    # transposes 16 of its rows at a time in registers (the same sums as B as stored); up to 4 rows of A take dot
    # products of its rows instead, summed in 16 lanes (the 16-lane kernels' row-streaming path: AVX-512, and AVX2 through
    # v16.h's emulation of the same vectors)
    stored = np.ascontiguousarray(np.swapaxes(b, -1, -2))
    transposed = [run(native_device(threads=t), gemm_desc(a.shape, stored.shape, (1, 1, m, n), dtype=dtype, trans_b=True), a, stored) for t in (1, 2)]
    assert transposed[0].tobytes() == transposed[1].tobytes()
    dot_products = m <= 4 and _native_isa() in ("avx2", "avx512")
    expected_bytes = _dot_products_in_sixteen_lanes(a[0, 0], stored[0, 0]).astype(dtype)[None, None] if dot_products else one
    assert transposed[0].tobytes() == expected_bytes.tobytes()
    expected = a[0, 0].astype(np.float64) @ b[0, 0].astype(np.float64)
    tolerance = {"rtol": 2e-3, "atol": 1e-3 * np.sqrt(k)} if dtype == np.float16 else {"rtol": 1e-5, "atol": 2e-6 * k}
    for got in (one, transposed[0]):
        np.testing.assert_allclose(got[0, 0].astype(np.float64), expected, **tolerance)


@pytest.mark.parametrize("n", [17, 40, 64, 100], ids=lambda n: f"{n} of 144 columns")
def test_a_column_gets_the_same_bits_whatever_columns_follow_it(n: int, rng: np.random.Generator) -> None:
    # the tile paths sum each column on its own: a last panel of at most 32 columns (narrower kernels) gives the bits
    # those columns get inside full panels of a wider B
    a, b = rng.standard_normal((1, 1, 24, 300)).astype(np.float32), rng.standard_normal((1, 1, 300, 144)).astype(np.float32)
    device = native_device(threads=1)
    wide = run(device, gemm_desc(a.shape, b.shape, (1, 1, 24, 144)), a, b)
    part = np.ascontiguousarray(b[..., :n])
    narrow = run(device, gemm_desc(a.shape, part.shape, (1, 1, 24, n)), a, part)
    assert narrow.tobytes() == np.ascontiguousarray(wide[..., :n]).tobytes()


_SPLIT_CASES = [
    pytest.param((1, 1, 256, 768, 3072), id="a transformer MLP block: one panel per item, 32 items per thread"),
    pytest.param((2, 3, 70, 2100, 300), id="six batches whose last M block has 6 rows of 8: its padding rows are not stored"),
    pytest.param((1, 2, 126, 2100, 100), id="two batches of two M runs (2100 K steps: 15 M blocks stay in L2), 6 rows in the last"),
]


@pytest.mark.parametrize("shape", _SPLIT_CASES)
def test_however_many_threads_share_the_items_the_bytes_are_the_same(shape: tuple[int, ...], rng: np.random.Generator) -> None:
    *batch, m, k, n = shape
    a, b = rng.standard_normal((*batch, m, k)).astype(np.float32), rng.standard_normal((*batch, k, n)).astype(np.float32)
    desc = gemm_desc(a.shape, b.shape, (*batch, m, n), alpha=0.5)
    outputs = [run(native_device(threads=t), desc, a, b) for t in (1, 2, 3, 5)]
    assert all(o.tobytes() == outputs[0].tobytes() for o in outputs[1:])
    expected = 0.5 * (a.astype(np.float64) @ b.astype(np.float64))
    np.testing.assert_allclose(outputs[0], expected, rtol=1e-5, atol=2e-6 * k)


# ---------------------------------------------------------------------------------------
# The C entry point never trusts its caller


def _direct_call(desc: DML_GEMM_OPERATOR_DESC, sizes: list[int], out_size: int) -> str:
    native_device()
    from dmlpy.backends import native

    ffi, lib = native.library()
    lowered = native.Lowered(desc)
    memory = [ffi.new("uint8_t[]", max(1, s)) for s in sizes]
    inputs = ffi.new("DMLPY_BOUND_BUFFER[]", 3)
    for i, (block, size) in enumerate(zip(memory, sizes, strict=True)):
        if size:
            inputs[i].Data, inputs[i].SizeInBytes = block, size
    out_block = ffi.new("uint8_t[]", out_size)
    outputs = ffi.new("DMLPY_BOUND_BUFFER[]", 1)
    outputs[0].Data, outputs[0].SizeInBytes = out_block, out_size
    return ffi.string(lib.dmlpy_status_name(lib.dmlpy_execute(lowered.pointer, 3, inputs, 1, outputs, 1))).decode()


DIRECT_CASES = [
    pytest.param(gemm_desc((1, 1, 2, 3), (1, 1, 3, 4), (1, 1, 2, 4)), [24, 48, 0], 32, "DMLPY_OK", id="a fitting call runs"),
    pytest.param(gemm_desc((1, 1, 2, 3), (1, 1, 3, 4), (1, 1, 2, 4)), [24, 44, 0], 32, "DMLPY_E_BUFFER_TOO_SMALL", id="B's buffer 4 bytes short"),
    pytest.param(gemm_desc((1, 1, 2, 3), (1, 1, 3, 4), (1, 1, 2, 4)), [24, 48, 0], 28, "DMLPY_E_BUFFER_TOO_SMALL", id="the output's buffer 4 bytes short"),
    pytest.param(gemm_desc((1, 1, 2, 3), (1, 1, 3, 4), (1, 1, 2, 4), (1, 1, 2, 4)), [24, 48, 16], 32, "DMLPY_E_BUFFER_TOO_SMALL", id="C's buffer half its extent"),
    pytest.param(gemm_desc((1, 1, 2, 3), (1, 1, 5, 4), (1, 1, 2, 4)), [24, 80, 0], 32, "DMLPY_E_INVALID_DESC", id="B's K differs from A's"),
    pytest.param(gemm_desc((1, 1, 2, 3), (1, 1, 3, 4), (1, 1, 3, 4)), [24, 48, 0], 48, "DMLPY_E_INVALID_DESC", id="the output's M differs from A's"),
    pytest.param(gemm_desc((2, 1, 2, 3), (1, 1, 3, 4), (2, 1, 2, 4)), [48, 48, 0], 64, "DMLPY_E_INVALID_DESC", id="B's batch size differs from the output's"),
    pytest.param(gemm_desc((1, 1, 2, 3), (1, 1, 3, 4), (1, 1, 2, 4), (1, 1, 1, 4)), [24, 48, 16], 32, "DMLPY_E_INVALID_DESC", id="C's sizes are not the output's"),
    pytest.param(gemm_desc((1, 1, 2, 3), (1, 1, 3, 4), (1, 1, 2, 4)), [24, 48, 16], 32, "DMLPY_E_INVALID_ARGUMENT", id="a buffer bound to C of a desc without C"),
    pytest.param(gemm_desc((1, 1, 2, 3), (1, 1, 3, 4), (1, 1, 2, 4), strides={"b": (0, 0, 2**31, 1)}), [24, 48, 0], 32, "DMLPY_E_BUFFER_TOO_SMALL",
                 id="B's strides reach far beyond its buffer"),
]


@pytest.mark.parametrize(("desc", "sizes", "out_size", "status"), DIRECT_CASES)
def test_the_c_kernel_rechecks_what_python_validated(desc: DML_GEMM_OPERATOR_DESC, sizes: list[int], out_size: int, status: str) -> None:
    assert _direct_call(desc, sizes, out_size) == status


# ---------------------------------------------------------------------------------------
# GraphBuilder.gemm and matmul: ONNX's broadcasting as zero strides over the same bytes


def test_builder_gemm_and_matmul_match_onnx_gemm_then_matmul(device: dmlpy.Device, rng: np.random.Generator) -> None:
    """A fully connected layer (Gemm transB=1 with a bias row, relu) then a batched MatMul against one shared matrix."""
    from onnx import helper

    x, w, bias, v = (rng.standard_normal(shape).astype(np.float32) for shape in [(5, 12), (7, 12), (7,), (2, 3, 7, 4)])
    nodes = [helper.make_node("Gemm", ["x", "w", "bias"], ["g"], transB=1, alpha=0.5, beta=2.0), helper.make_node("Relu", ["g"], ["r"]),
             helper.make_node("MatMul", ["r", "v"], ["y"])]  # fmt: skip
    expected = onnx_run(nodes, {"x": x, "w": w, "bias": bias, "v": v})
    g = dmlpy.GraphBuilder(device)
    hidden = g.gemm(g.input("x", np.float32, x.shape), g.input("w", np.float32, w.shape), g.input("bias", np.float32, bias.shape),
                    trans_b=True, alpha=0.5, beta=2.0, activation=FusedActivation.relu())  # fmt: skip
    assert hidden.sizes == (5, 7)
    y = g.matmul(hidden, g.input("v", np.float32, v.shape))
    assert y.sizes == (2, 3, 5, 4)
    assert_close(g.compile([y])(x=x, w=w, bias=bias, v=v)["output0"], expected)


def test_builder_gemm_defaults_are_alpha_1_beta_1_no_transpose(numpy_device: dmlpy.Device) -> None:
    """[[1, 2], [3, 4]] x [[5, 6], [7, 8]] + [[1, 1], [1, 1]] = [[20, 23], [44, 51]]."""
    g = dmlpy.GraphBuilder(numpy_device)
    y = g.gemm(g.input("a", np.float32, (2, 2)), g.input("b", np.float32, (2, 2)), g.input("c", np.float32, (2, 2)))
    out = g.compile([y])(a=np.array([[1, 2], [3, 4]], np.float32), b=np.array([[5, 6], [7, 8]], np.float32), c=np.ones((2, 2), np.float32))["output0"]
    np.testing.assert_array_equal(out, [[20, 23], [44, 51]])


BUILDER_ERRORS = [
    pytest.param((1, 1, 2, 3), (1, 1, 4, 5), {}, "GEMM.INNER_SIZE", "'b'", id="B's K 4 differs from A's K 3"),
    pytest.param((1, 1, 2, 3), (1, 1, 5, 3), {"trans_b": False}, "GEMM.INNER_SIZE", "'b'", id="a transposed weight without trans_b"),
    pytest.param((2, 1, 2, 3), (3, 1, 3, 4), {}, "GEMM.BATCH_SIZES", "'b'", id="batches 2 and 3 do not broadcast"),
    pytest.param((1, 1, 2, 3), (1, 1, 3, 4), {"c": (1, 1, 3, 4)}, "TENSOR.SAME_SIZES", "'c'", id="C {3, 4} does not broadcast to the output {2, 4}"),
]


@pytest.mark.parametrize(("a", "b", "kwargs", "rule", "argument"), BUILDER_ERRORS)
def test_builder_gemm_names_the_argument_of_a_mismatch(a: tuple[int, ...], b: tuple[int, ...], kwargs: dict[str, Any], rule: str, argument: str) -> None:
    from conftest import assert_rule

    g = dmlpy.GraphBuilder(backend="numpy")
    extra = {k: g.input(k, np.float32, v) if isinstance(v, tuple) else v for k, v in kwargs.items()}
    with pytest.raises(dmlpy.DmlError) as caught:
        g.gemm(g.input("a", np.float32, a), g.input("b", np.float32, b), **extra)
    assert_rule(caught.value, rule)
    assert argument in caught.value.summary and "test_gemm_kernels.py" in caught.value.summary


def test_builder_gemm_of_a_vector_is_a_value_error_naming_it() -> None:
    g = dmlpy.GraphBuilder(backend="numpy")
    with pytest.raises(ValueError, match="argument 'a'"):
        g.gemm(g.input("a", np.float32, (3,)), g.input("b", np.float32, (3, 2)))
    with pytest.raises(TypeError, match="argument 'b'"):
        g.matmul(g.input("a2", np.float32, (2, 3)), np.ones((3, 2), np.float32))  # type: ignore[arg-type]
