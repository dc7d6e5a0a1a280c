"""The ONNX importer: random models against onnxruntime, ONNX's formulas by hand, seed examples, errors.

Oracles, each independent of dmlpy's code:

* onnxruntime 1.31's CPU kernels, on 360 random single-node models per backend, wherever
  ONNX and onnxruntime agree (the generator in onnx_cases.py stays out of the regions where
  onnxruntime departs from ONNX; each departure has its own test below, with a hand-computed
  or onnx.reference expected value);
* the formulas of the ONNX operator pages (seeds 000 and 004), written out in the tests;
* NumPy oracles written from the averaging rules (full window, taps inside the padded input)
  and torch's conv_transpose for the opset-1 ConvTranspose split onnxruntime does not follow;
* the worked examples of DirectML's AveragePool page (seed 003) and SPACE_TO_DEPTH1 page.

onnxruntime disagreements found and how dmlpy treats them (each a test here):

1. AveragePool, count_include_pad=0, a dilated window wholly in padding: onnxruntime 0, dmlpy
   NaN (0/0; docs/deviations.md) with POOLING.EMPTY_WINDOW.
2. AveragePool SAME_* with dilations: onnxruntime (and onnx.reference) size the padding with
   the undilated kernel; dmlpy uses the spec's dilated formula (ceil(in / s) outputs).
3. AveragePool SAME_* with a kernel shorter than the stride (negative padding): onnxruntime
   raises (2-D) or shifts the windows (3-D); dmlpy clamps the padding at 0.
4. Conv SAME_* with dilations: onnxruntime refuses; dmlpy matches onnx.reference.
5. ConvTranspose-1..10 with output_shape and an odd total padding, NOTSET: onnxruntime applies
   the opset-11 split; dmlpy follows ConvTranspose-1's formula and warns
   ONNX.CONV_TRANSPOSE_PADS_SPLIT.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import sys
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import assert_rule
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dmlpy
from dmlpy import DML_FEATURE_LEVEL, DML_GRAPH_NODE_TYPE, DML_OPERATOR_TYPE, Finding

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from onnx_cases import Case, make_model, ort_run, random_case

import dmlpy.interop.onnx as dx

pytestmark = pytest.mark.filterwarnings("ignore::dmlpy.DmlWarning")

FL = DML_FEATURE_LEVEL
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
HYPOTHESIS = settings(derandomize=True, deadline=None, database=None, max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])


def rules_of(findings: Iterable[Finding]) -> set[str]:
    return {f.rule for f in findings}


def single(op: str, inputs: dict[str, tuple[int, ...]], attributes: dict[str, Any] | None = None, *, initializers: dict[str, np.ndarray] | None = None, opset: int = 22) -> Any:
    """A one-node model: ``op`` reads the graph inputs, then the initializers, and writes ``y``."""
    node = helper.make_node(op, list(inputs) + list(initializers or {}), ["y"], **(attributes or {}))
    return make_model([node], inputs, ["y"], initializers=initializers, opset=opset)


# ---------------------------------------------------------------------------------------
# 360 random single-node models per backend against onnxruntime

SEED = 0x0_DEC0DE
BATCHES = 8
CASES_PER_BATCH = 45


@functools.cache
def batch(index: int) -> list[tuple[Case, np.ndarray]]:
    rng = np.random.default_rng([SEED, index])
    cases = [random_case(rng) for _ in range(CASES_PER_BATCH)]
    return [(case, ort_run(case.model, case.feeds)[0]) for case in cases]


def onnx_overhang(case: Case) -> bool:
    """Whether ONNX's ceil-mode output adds a window that runs past the padded input (AveragePool page, opset 10+), computed from the page's formulas."""
    a = case.attributes
    if case.op != "AveragePool" or not a.get("ceil_mode") or not a.get("count_include_pad") or a.get("auto_pad", "NOTSET").startswith("SAME"):
        return False
    shape = case.feeds["x"].shape[2:]
    n = len(shape)
    pads = a.get("pads", [0] * 2 * n)
    for i, size in enumerate(shape):
        k, s, d = a["kernel_shape"][i], a.get("strides", [1] * n)[i], a.get("dilations", [1] * n)[i]
        keff = d * (k - 1) + 1
        padded = size + pads[i] + pads[i + n]
        out = math.ceil((padded - keff) / s + 1)
        if (out - 1) * s >= size + pads[i]:  # "sliding windows that start in the right padded region are ignored"
            out -= 1
        if (out - 1) * s + keff > padded:
            return True
    return False


@pytest.mark.parametrize("index", range(BATCHES))
def test_random_single_node_models_import_and_run_equal_to_onnxruntime(index: int, device: dmlpy.Device) -> None:
    for case, expected in batch(index):
        imported = dx.import_model(case.model, device=device)
        got = imported.run(case.feeds)["y"]
        ids = rules_of(imported.warnings)
        assert got.shape == expected.shape, case.id
        empty = np.isnan(got)
        if empty.any():  # disagreement 1: a window wholly in padding without count_include_pad
            assert "POOLING.EMPTY_WINDOW" in ids, case.id
            assert np.all(expected[empty] == 0), case.id
        np.testing.assert_allclose(got[~empty], expected[~empty], **TOLERANCE, err_msg=case.id)
        assert ("ONNX.CEIL_MODE_DIVISOR" in ids) == onnx_overhang(case), case.id


def test_the_random_models_cover_every_operator_rank_and_attribute() -> None:
    seen: set[str] = set()
    for index in range(BATCHES):
        for case, _ in batch(index):
            seen.add(case.op)
            seen.add(f"rank{case.rank}")
            seen.update(f"{case.op}.{name}" for name in case.attributes)
            seen.update(f"{case.op}.{value}" for value in case.attributes.values() if isinstance(value, str))
            if onnx_overhang(case):
                seen.add("a ceil-mode window past the padded input with count_include_pad (ONNX.CEIL_MODE_DIVISOR)")
    assert BATCHES * CASES_PER_BATCH >= 300
    required = {
        "AveragePool", "GlobalAveragePool", "Conv", "ConvTranspose", "SpaceToDepth", "DepthToSpace", "Relu", "LeakyRelu", "Sigmoid",
        "rank3", "rank4", "rank5", "AveragePool.auto_pad", "AveragePool.SAME_UPPER", "AveragePool.SAME_LOWER", "AveragePool.VALID", "AveragePool.ceil_mode",
        "AveragePool.count_include_pad", "AveragePool.dilations", "AveragePool.pads", "Conv.group", "Conv.dilations", "Conv.auto_pad", "Conv.pads",
        "ConvTranspose.output_shape", "ConvTranspose.output_padding", "ConvTranspose.dilations", "ConvTranspose.group", "ConvTranspose.auto_pad",
        "ConvTranspose.pads", "DepthToSpace.CRD", "DepthToSpace.DCR", "LeakyRelu.alpha",
        "a ceil-mode window past the padded input with count_include_pad (ONNX.CEIL_MODE_DIVISOR)",
    }  # fmt: skip
    assert required <= seen, sorted(required - seen)


# ---------------------------------------------------------------------------------------
# AveragePool: ceil mode and its divisor


def full_window_average(x: np.ndarray, kernel: list[int], strides: list[int], pads: list[int], dilations: list[int], out: Sequence[int]) -> np.ndarray:
    """Every window divided by the whole kernel: padding and overhang count as zeros (the full-window reading)."""
    return _average(x, kernel, strides, pads, dilations, out, lambda taps, inside_padded, on_input: math.prod(kernel))


def padded_taps_average(x: np.ndarray, kernel: list[int], strides: list[int], pads: list[int], dilations: list[int], out: Sequence[int]) -> np.ndarray:
    """Every window divided by its taps inside the padded input [-begin, in + end) (docs/deviations.md)."""
    return _average(x, kernel, strides, pads, dilations, out, lambda taps, inside_padded, on_input: inside_padded)


def _average(x: np.ndarray, kernel: list[int], strides: list[int], pads: list[int], dilations: list[int], out: Sequence[int], divisor: Callable[[int, int, int], int]) -> np.ndarray:
    n = len(kernel)
    y = np.zeros(x.shape[:2] + tuple(out))
    for o in itertools.product(*(range(v) for v in out)):
        total = np.zeros(x.shape[:2])
        inside_padded = on_input = taps = 0
        for k in itertools.product(*(range(v) for v in kernel)):
            p = [o[i] * strides[i] - pads[i] + k[i] * dilations[i] for i in range(n)]
            taps += 1
            inside_padded += all(-pads[i] <= p[i] < x.shape[2 + i] + pads[n + i] for i in range(n))
            if all(0 <= p[i] < x.shape[2 + i] for i in range(n)):
                on_input += 1
                total += x[(slice(None), slice(None), *p)]
        y[(slice(None), slice(None), *o)] = total / divisor(taps, inside_padded, on_input)
    return y.astype(x.dtype)


@st.composite
def overhanging_pools(draw: st.DrawFn) -> tuple[list[int], list[int], list[int], list[int], list[int]]:
    """AveragePool attributes whose ceil-mode output adds a window past the padded input along spatial axis 0."""
    n = draw(st.sampled_from([1, 2]))
    kernel = [draw(st.integers(2, 3))] + [draw(st.integers(1, 3)) for _ in range(n - 1)]
    strides = [draw(st.integers(2, 3))] + [draw(st.integers(1, 3)) for _ in range(n - 1)]
    dilations = [draw(st.integers(1, 2)) for _ in range(n)]
    keff = [(k - 1) * d + 1 for k, d in zip(kernel, dilations, strict=True)]
    pads = [draw(st.integers(0, k - 1)) for k in kernel + kernel]  # onnxruntime: pads below the kernel
    # an overhang needs the end padding of axis 0 below keff - 1 (the extra window starts inside input + begin padding)
    pads[n] = draw(st.integers(0, min(kernel[0] - 1, keff[0] - 2)))
    smallest = [max(1, keff[i] - pads[i] - pads[i + n]) for i in range(n)]

    def overhangs(size: int) -> bool:  # a remainder, and the extra window starts inside input + begin padding
        span = size + pads[0] + pads[n] - keff[0]
        return span % strides[0] != 0 and (span // strides[0] + 1) * strides[0] < size + pads[0]

    sizes = [draw(st.sampled_from([v for v in range(smallest[0], 12) if overhangs(v)]))] + [draw(st.integers(smallest[i], 8)) for i in range(1, n)]
    return kernel, strides, dilations, pads, sizes


@HYPOTHESIS
@given(overhanging_pools())
def test_ceil_mode_divisor_warning_gives_an_exact_full_window_alternative(params: tuple[list[int], ...]) -> None:
    """ONNX.CEIL_MODE_DIVISOR: the default divides by the taps inside the padded input (onnxruntime agrees); the
    warning's EndPadding recipe, and ceil_mode_divisor='full_window', give the full-window divisor exactly."""
    kernel, strides, dilations, pads, sizes = params
    attributes = {"kernel_shape": kernel, "strides": strides, "dilations": dilations, "pads": pads, "ceil_mode": 1, "count_include_pad": 1}
    x = np.random.default_rng(7).standard_normal((1, 2, *sizes)).astype(np.float32)
    model = single("AveragePool", {"x": x.shape}, attributes, opset=19)
    with pytest.warns(dmlpy.DmlWarning, match=r"ONNX\.CEIL_MODE_DIVISOR"):
        imported = dx.import_model(model, backend="numpy")
    finding = assert_rule(imported.warnings, "ONNX.CEIL_MODE_DIVISOR")
    out = imported.output_shapes["y"][2:]
    default = imported.run({"x": x})["y"]
    np.testing.assert_allclose(default, padded_taps_average(x, kernel, strides, pads, dilations, out), **TOLERANCE)
    np.testing.assert_allclose(default, ort_run(model, {"x": x})[0], **TOLERANCE)
    full = full_window_average(x, kernel, strides, pads, dilations, out)
    # the recipe, applied literally to the imported desc
    desc = imported.nodes[0].desc
    end = list(desc.EndPadding)
    for axis, before, over, after in re.findall(r"EndPadding\[(\d+)\] = (\d+) \+ (\d+) = (\d+)", finding.message):
        assert end[int(axis)] == int(before) and int(before) + int(over) == int(after)
        end[int(axis)] = int(after)
    assert end != list(desc.EndPadding)
    desc.EndPadding = end
    assert desc.IncludePadding
    report = dmlpy.validate(desc)
    assert report.ok and "POOLING.CEIL_OUTPUT" not in report.rule_ids  # the same sizes are now the floor sizes
    recipe = dmlpy.run(desc, backend="numpy", InputTensor=x.reshape(dx.lifted(x.shape)))
    np.testing.assert_allclose(recipe.reshape(default.shape), full, **TOLERANCE)
    # the option does the same
    with warnings.catch_warnings():
        warnings.simplefilter("error", dmlpy.DmlWarning)  # and raises no ONNX.CEIL_MODE_DIVISOR
        warnings.filterwarnings("ignore", message=r"\[POOLING\.")
        np.testing.assert_allclose(dx.run(model, {"x": x}, ceil_mode_divisor="full_window", backend="numpy")["y"], full, **TOLERANCE)


@pytest.mark.doc_example
def test_onnx_averagepool_2d_ceil_example_divides_the_overhanging_windows_by_their_inside_taps() -> None:
    """The AveragePool page's ceil example (4x4 of 1..16, kernel 3, stride 2, ceil_mode): [[6, 7.5], [12, 13.5]]."""
    x = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)
    model = single("AveragePool", {"x": x.shape}, {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1})
    np.testing.assert_array_equal(dx.run(model, {"x": x})["y"], np.array([[[[6, 7.5], [12, 13.5]]]], np.float32))


def test_ceil_mode_with_count_include_pad_warns_and_full_window_divides_by_nine() -> None:
    x = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)
    model = single("AveragePool", {"x": x.shape}, {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1, "count_include_pad": 1})
    with pytest.warns(dmlpy.DmlWarning, match="EndPadding\\[0\\] = 0 \\+ 1 = 1 and EndPadding\\[1\\] = 0 \\+ 1 = 1"):
        y = dx.run(model, {"x": x})["y"]
    np.testing.assert_array_equal(y, [[[[54 / 9, 45 / 6], [72 / 6, 54 / 4]]]])  # divisors: the taps inside the 4x4 input (no padding)
    full = dx.run(model, {"x": x}, ceil_mode_divisor="full_window")["y"]
    # by hand: (0, 0) holds 1 2 3 5 6 7 9 10 11 = 54; (0, 1) 3 4 7 8 11 12 = 45; (1, 0) 9 10 11 13 14 15 = 72; (1, 1) 11 12 15 16 = 54
    np.testing.assert_array_equal(full, [[[[54 / 9, 45 / 9], [72 / 9, 54 / 9]]]])


def test_ceil_mode_keeps_the_padding_and_enlarges_the_output_tensor() -> None:
    """onnxruntime's DirectML provider: DirectML has no rounding field; the output sizes say ceil, the padding stays the model's."""
    node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)
    imported = dx.import_node(node, [(1, 1, 6, 6)], opset=19)
    desc = imported.desc
    assert (list(desc.StartPadding), list(desc.EndPadding)) == ([1, 1], [1, 1])
    assert list(desc.OutputTensor.Desc.Sizes) == [1, 1, 4, 4]  # floor (6 + 2 - 3) / 2 + 1 = 3; ceil 4, and window 3 starts at 5 < 6 + 1
    assert_rule(imported.warnings, "POOLING.CEIL_OUTPUT")


def test_ceil_mode_ignores_a_window_that_would_start_in_the_end_padding() -> None:
    """ONNX's backend case 'ceil_last_window_starts_on_pad': 2x2 input, kernel 3, stride 3, pads 1: one output, 1.3595 / 9."""
    x = np.array([[[[0.8580, 0.0786], [0.2692, 0.1537]]]], np.float32)
    model = single("AveragePool", {"x": x.shape}, {"kernel_shape": [3, 3], "strides": [3, 3], "pads": [1, 1, 1, 1], "ceil_mode": 1, "count_include_pad": 1})
    y = dx.run(model, {"x": x})["y"]
    assert y.shape == (1, 1, 1, 1)
    np.testing.assert_allclose(y.ravel(), [0.1511], atol=1e-4)


@pytest.mark.parametrize(("opset", "include"), [(1, False), (7, True), (7, False)], ids=["opset1-never-counts-padding", "opset7-count_include_pad", "opset7-default-excludes"])
def test_averagepool_count_include_pad_by_opset(opset: int, include: bool) -> None:
    """AveragePool-1 has no count_include_pad and excludes padding; from opset 7 the attribute decides (default 0)."""
    x = np.arange(1, 5, dtype=np.float32).reshape(1, 1, 1, 4)
    attributes = {"kernel_shape": [1, 2], "pads": [0, 1, 0, 0]} | ({"count_include_pad": 1} if include else {})
    node = helper.make_node("AveragePool", ["x"], ["y"], **attributes)
    imported = dx.import_node(node, [x.shape], opset=opset)
    assert bool(imported.desc.IncludePadding) is include
    expected = [0.5, 1.5, 2.5, 3.5] if include else [1.0, 1.5, 2.5, 3.5]  # the first window is (pad, 1)
    np.testing.assert_array_equal(imported.run([x]).ravel(), expected)


def test_valid_with_ceil_mode_rounds_up_like_onnx_shape_inference() -> None:
    """VALID means no padding; ceil_mode still rounds up (ONNX's shape inference and onnxruntime), not the page's VALID line."""
    x = np.arange(1, 7, dtype=np.float32).reshape(1, 1, 6)
    model = single("AveragePool", {"x": x.shape}, {"kernel_shape": [3], "strides": [2], "auto_pad": "VALID", "ceil_mode": 1})
    inferred = onnx.shape_inference.infer_shapes(model).graph.output[0].type.tensor_type.shape
    assert [d.dim_value for d in inferred.dim] == [1, 1, 3]
    np.testing.assert_array_equal(dx.run(model, {"x": x})["y"].ravel(), [2, 4, 5.5])  # (1+2+3)/3, (3+4+5)/3, (5+6)/2


def test_average_pool_same_with_dilations_follows_the_onnx_pad_formula() -> None:
    """Disagreement 2. AveragePool-19: SAME_UPPER pads (out - 1) * s + ((k - 1) * d + 1) - in with out = ceil(in / s).

    in 7, kernel 2, dilation 2, stride 2: out = 4, pads 3 * 2 + 3 - 7 = 2 -> begin 1, end 1. Taps of output o: 2o - 1 and
    2o + 1. x = 1..7, count_include_pad=1: (0 + 2) / 2, (2 + 4) / 2, (4 + 6) / 2, (6 + 0) / 2. onnxruntime pads with the
    undilated kernel and returns three outputs [2, 4, 6].
    """
    x = np.arange(1, 8, dtype=np.float32).reshape(1, 1, 7)
    model = single("AveragePool", {"x": x.shape}, {"kernel_shape": [2], "strides": [2], "dilations": [2], "auto_pad": "SAME_UPPER", "count_include_pad": 1}, opset=19)
    np.testing.assert_array_equal(dx.run(model, {"x": x})["y"].ravel(), [1, 3, 5, 3])
    np.testing.assert_array_equal(ort_run(model, {"x": x})[0].ravel(), [2, 4, 6])


@pytest.mark.parametrize("shape", [(1, 1, 6, 6), (1, 1, 6, 6, 6)], ids=["2d", "3d"])
def test_average_pool_same_padding_is_never_negative(shape: tuple[int, ...]) -> None:
    """Disagreement 3. Kernel 1, stride 3: ceil(6 / 3) = 2 outputs and pads (2 - 1) * 3 + 1 - 6 = -2, clamped to 0: windows at 0 and 3.

    onnxruntime raises for 2-D ('padding values must be non-negative') and shifts the windows by the negative padding for 3-D.
    """
    n = len(shape) - 2
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    model = single("AveragePool", {"x": shape}, {"kernel_shape": [1] * n, "strides": [3] * n, "auto_pad": "SAME_UPPER"})
    expected = x[(slice(None), slice(None), *[slice(0, 6, 3)] * n)]
    np.testing.assert_array_equal(dx.run(model, {"x": x})["y"], expected)


def test_a_dilated_window_wholly_in_padding_is_nan_where_onnxruntime_gives_zero() -> None:
    """Disagreement 1: taps at -1 and 1 of a height-1 input both miss it; 0/0 is NaN (docs/deviations.md), onnxruntime returns 0."""
    x = np.ones((1, 1, 1, 3), np.float32)
    model = single("AveragePool", {"x": x.shape}, {"kernel_shape": [2, 1], "dilations": [2, 1], "pads": [1, 0, 1, 0]})
    imported = dx.import_model(model)
    assert_rule(imported.warnings, "POOLING.EMPTY_WINDOW")
    assert np.isnan(imported.run({"x": x})["y"]).all()
    np.testing.assert_array_equal(ort_run(model, {"x": x})[0], 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # its mean of no taps
        np.testing.assert_array_equal(ReferenceEvaluator(model).run(None, {"x": x})[0], np.nan)  # onnx.reference agrees with dmlpy


def test_dilations_need_average_pooling1_and_feature_level_6_2() -> None:
    node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], dilations=[2, 1], name="pool")
    assert type(dx.import_node(node, [(1, 1, 5, 5)], opset=19).desc) is dmlpy.DML_AVERAGE_POOLING1_OPERATOR_DESC
    undilated = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], dilations=[1, 1])
    assert type(dx.import_node(undilated, [(1, 1, 5, 5)], opset=19, feature_level=FL.LEVEL_1_0).desc) is dmlpy.DML_AVERAGE_POOLING_OPERATOR_DESC
    with pytest.raises(dx.OnnxImportError) as error:
        dx.import_node(node, [(1, 1, 5, 5)], opset=19, feature_level=FL.LEVEL_6_1)
    assert error.value.rule == "ONNX.FEATURE_LEVEL"
    assert (error.value.attribute, error.value.node_name, error.value.op_type) == ("dilations", "pool", "AveragePool")


# ---------------------------------------------------------------------------------------
# The DirectML pooling page's layout and size formula (seed 003), through the importer


@pytest.mark.doc_example
@pytest.mark.parametrize(
    ("shape", "kernel", "strides", "pads"),
    [((1, 1, 4, 4), [2, 2], [2, 2], [0, 0, 0, 0]), ((2, 3, 7, 6), [3, 2], [2, 1], [1, 0, 2, 1]), ((1, 2, 5, 6, 7), [2, 3, 2], [1, 2, 3], [0, 1, 1, 1, 0, 2])],
    ids=["doc-4x4-window-2", "4d-padded", "5d-DHW"],
)
def test_directml_pooling_layout_and_output_size_formula(shape: tuple[int, ...], kernel: list[int], strides: list[int], pads: list[int]) -> None:
    """DML_AVERAGE_POOLING_OPERATOR_DESC: {N, C, H, W} / {N, C, D, H, W}; DimensionCount 2 or 3; arrays in {H, W} / {D, H, W}
    order; OutputTensor->Sizes[i + 2] = (InputTensor->Sizes[i + 2] + StartPadding[i] + EndPadding[i] - WindowSize[i]) / Strides[i] + 1."""
    n = len(kernel)
    node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=kernel, strides=strides, pads=pads)
    desc = dx.import_node(node, [shape]).desc
    assert desc.DimensionCount == len(shape) - 2 == n
    assert (list(desc.WindowSize), list(desc.Strides), list(desc.StartPadding), list(desc.EndPadding)) == (kernel, strides, pads[:n], pads[n:])
    out = list(desc.OutputTensor.Desc.Sizes)
    assert out[:2] == list(shape[:2])
    for i in range(n):
        padded = desc.InputTensor.Desc.Sizes[i + 2] + desc.StartPadding[i] + desc.EndPadding[i]
        assert out[i + 2] == (padded - desc.WindowSize[i]) // desc.Strides[i] + 1


@pytest.mark.doc_example
def test_directml_doc_layout_example_values_through_the_importer(device: dmlpy.Device) -> None:
    """The DirectML docs' 1x1x4x4 tensor of 0..15, window 2, stride 2 -> 2.5, 4.5, 10.5, 12.5."""
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    model = single("AveragePool", {"x": x.shape}, {"kernel_shape": [2, 2], "strides": [2, 2]})
    np.testing.assert_array_equal(dx.run(model, {"x": x}, device=device)["y"], [[[[2.5, 4.5], [10.5, 12.5]]]])


# ---------------------------------------------------------------------------------------
# ConvTranspose: the output_shape and pads formulas of the ONNX page (seed 004)


def seed_total_padding(stride: int, in_size: int, output_padding: int, kernel: int, dilation: int, output_shape: int) -> int:
    """total_padding[i] = stride[i] * (input_size[i] - 1) + output_padding[i] + ((kernel_shape[i] - 1) * dilations[i] + 1) - output_shape[i]."""
    return stride * (in_size - 1) + output_padding + ((kernel - 1) * dilation + 1) - output_shape


CONV_TRANSPOSE_FORMULA_CASES = [
    # id, opset, auto_pad, in, kernel, stride, dilation, output_padding, output_shape, (begin, end) from the page's split
    ("opset22-NOTSET-odd: begin = total - total/2", 22, "NOTSET", 5, 3, 2, 1, 0, 8, (2, 1)),
    ("opset22-SAME_UPPER-odd: begin = total/2", 22, "SAME_UPPER", 5, 3, 2, 1, 0, 8, (1, 2)),
    ("opset11-SAME_LOWER-odd: begin = total - total/2", 11, "SAME_LOWER", 5, 3, 2, 1, 0, 8, (2, 1)),
    ("opset11-NOTSET-even", 11, "NOTSET", 5, 3, 2, 1, 0, 9, (1, 1)),
    ("opset22-dilation-and-output_padding: total 3*3+1+5-12 = 3", 22, "NOTSET", 4, 3, 3, 2, 1, 12, (2, 1)),
    ("opset22-SAME_UPPER-dilated: total 2*4+0+5-10 = 3", 22, "SAME_UPPER", 5, 3, 2, 2, 0, 10, (1, 2)),
    ("opset1-NOTSET-odd: ConvTranspose-1 begin = total/2", 1, "NOTSET", 5, 3, 2, 1, 0, 8, (1, 2)),
    ("opset1-SAME_UPPER-odd: the auto_pad text, extra at the end", 1, "SAME_UPPER", 5, 3, 2, 1, 0, 8, (1, 2)),
]


@pytest.mark.doc_example
@pytest.mark.parametrize(("opset", "auto_pad", "size", "kernel", "stride", "dilation", "output_padding", "output_shape", "split"), [c[1:] for c in CONV_TRANSPOSE_FORMULA_CASES], ids=[c[0] for c in CONV_TRANSPOSE_FORMULA_CASES])
def test_conv_transpose_output_shape_gives_the_pages_pads(opset: int, auto_pad: str, size: int, kernel: int, stride: int, dilation: int, output_padding: int, output_shape: int, split: tuple[int, int]) -> None:
    total = seed_total_padding(stride, size, output_padding, kernel, dilation, output_shape)
    assert sum(split) == total
    attributes = {"strides": [stride], "dilations": [dilation], "output_shape": [output_shape], "auto_pad": auto_pad} | ({"output_padding": [output_padding]} if output_padding else {})
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], **attributes)
    imported = dx.import_node(node, [(1, 1, size), (1, 1, kernel)], opset=opset)
    desc = imported.desc
    assert (desc.StartPadding[1], desc.EndPadding[1]) == split  # spatial axis 0, after the unit H axis of the 1-D lift
    assert list(desc.OutputPadding) == [0, 0] and desc.OutputTensor.Desc.Sizes[3] == output_shape == imported.output_shapes[0][2]
    assert ("ONNX.CONV_TRANSPOSE_PADS_SPLIT" in rules_of(imported.warnings)) == (opset < 11 and total % 2 == 1)


@pytest.mark.doc_example
@pytest.mark.parametrize(("size", "kernel", "stride", "dilation", "output_padding", "pads"), [(5, 3, 2, 1, 0, (1, 1)), (4, 3, 3, 2, 2, (0, 2)), (3, 2, 1, 3, 0, (2, 0))])
def test_conv_transpose_output_size_is_the_pages_formula(size: int, kernel: int, stride: int, dilation: int, output_padding: int, pads: tuple[int, int]) -> None:
    """output_shape[i] = stride[i] * (input_size[i] - 1) + output_padding[i] + ((kernel_shape[i] - 1) * dilations[i] + 1) - pads[start_i] - pads[end_i]."""
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[stride], dilations=[dilation], output_padding=[output_padding], pads=list(pads))
    imported = dx.import_node(node, [(1, 1, size), (1, 1, kernel)])
    expected = stride * (size - 1) + output_padding + ((kernel - 1) * dilation + 1) - pads[0] - pads[1]
    assert imported.output_shapes[0] == (1, 1, expected)


def torch_conv_transpose(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, stride: int, dilation: int, output_padding: int, begin: int, out: int) -> np.ndarray:
    """ONNX ConvTranspose from its definition: the full scatter extent, output_padding zeros appended, bias, then [begin, begin + out)."""
    torch = pytest.importorskip("torch")
    full = torch.nn.functional.conv_transpose1d(torch.tensor(x), torch.tensor(w), stride=stride, dilation=dilation).numpy()
    full = np.concatenate([full, np.zeros((*full.shape[:2], output_padding + 8), np.float32)], axis=2)
    if b is not None:
        full = full + b[None, :, None]
    return full[:, :, begin : begin + out]


@pytest.mark.parametrize("case", CONV_TRANSPOSE_FORMULA_CASES, ids=[c[0] for c in CONV_TRANSPOSE_FORMULA_CASES])
def test_conv_transpose_output_shape_values(case: tuple[Any, ...], device: dmlpy.Device) -> None:
    """Values against ONNX's definition (torch's full transposed convolution, cropped by the page's pads); against
    onnxruntime where it agrees (opset 11 and 22). Disagreement 5: for ConvTranspose-1 NOTSET with an odd total,
    onnxruntime's output is dmlpy's shifted by one (it uses the opset-11 split)."""
    _, opset, auto_pad, size, kernel, stride, dilation, output_padding, output_shape, (begin, _) = case
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 2, size)).astype(np.float32)
    w = rng.standard_normal((2, 3, kernel)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    attributes = {"strides": [stride], "dilations": [dilation], "output_shape": [output_shape], "auto_pad": auto_pad} | ({"output_padding": [output_padding]} if output_padding else {})
    model = single("ConvTranspose", {"x": x.shape}, attributes, initializers={"w": w, "b": b}, opset=max(opset, 7) if opset >= 11 else opset)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = dx.run(model, {"x": x}, device=device)["y"]
    np.testing.assert_allclose(got, torch_conv_transpose(x, w, b, stride, dilation, output_padding, begin, output_shape), **TOLERANCE)
    onnxruntime = ort_run(model, {"x": x})[0]
    if opset >= 11 or auto_pad != "NOTSET" or seed_total_padding(stride, size, output_padding, kernel, dilation, output_shape) % 2 == 0:
        np.testing.assert_allclose(got, onnxruntime, **TOLERANCE)
    else:
        np.testing.assert_allclose(got[..., 1:], onnxruntime[..., :-1], **TOLERANCE)
        assert not np.allclose(got, onnxruntime)


def test_conv_transpose_output_padding_computes_extra_positions_and_directml_output_padding_stays_zero() -> None:
    """output_padding only selects more computed values (ONNX page); DirectML's OutputPadding stays 0 and the output tensor grows."""
    x = np.arange(1, 4, dtype=np.float32).reshape(1, 1, 3)
    w = np.ones((1, 1, 2), np.float32)
    model = single("ConvTranspose", {"x": x.shape}, {"strides": [3], "output_padding": [2], "pads": [0, 1]}, initializers={"w": w, "b": np.array([0.5], np.float32)})
    imported = dx.import_model(model)
    desc = imported.nodes[0].desc
    assert list(desc.OutputPadding) == [0, 0] and list(desc.OutputTensor.Desc.Sizes) == [1, 1, 1, 9]  # 3*2 + 2 + 2 - 0 - 1
    # the full extent with output_padding: 1 1 0 2 2 0 3 3 | 0 0 (10 positions); pads [0, 1] keep the first 9; + bias 0.5
    np.testing.assert_array_equal(imported.run({"x": x})["y"].ravel(), [1.5, 1.5, 0.5, 2.5, 2.5, 0.5, 3.5, 3.5, 0.5])
    np.testing.assert_array_equal(imported.run({"x": x})["y"], ort_run(model, {"x": x})[0])


def test_conv_transpose_output_padding_at_the_stride_is_unsupported_and_names_the_attribute() -> None:
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[1], dilations=[3], output_padding=[2], name="up")
    with pytest.raises(dx.OnnxImportError) as error:
        dx.import_node(node, [(1, 1, 5), (1, 1, 3)])
    assert error.value.rule == "ONNX.UNSUPPORTED_ATTRIBUTE"
    assert (error.value.node_index, error.value.node_name, error.value.op_type, error.value.attribute) == (0, "up", "ConvTranspose", "output_padding")
    assert "graph.node[0] 'up' (ConvTranspose-22) attribute 'output_padding'" in str(error.value)


def test_conv_transpose_same_without_output_shape_outputs_input_times_stride() -> None:
    """SAME_*: output_shape[i] = input_shape[i] * strides[i]; the padding cannot be negative, so a kernel shorter than the stride gives the natural size (ONNX shape inference, onnxruntime)."""
    x = np.ones((1, 1, 3), np.float32)
    for kernel, out in ((3, 9), (1, 7)):  # (3 - 1) * 3 + 3 = 9 = 3 * 3; (3 - 1) * 3 + 1 = 7 < 9
        model = single("ConvTranspose", {"x": x.shape}, {"strides": [3], "auto_pad": "SAME_UPPER"}, initializers={"w": np.ones((1, 1, kernel), np.float32)})
        got = dx.run(model, {"x": x})["y"]
        assert got.shape == (1, 1, out)
        np.testing.assert_array_equal(got, ort_run(model, {"x": x})[0])


# ---------------------------------------------------------------------------------------
# Conv


def test_conv_same_with_dilations_matches_onnx_reference() -> None:
    """Disagreement 4: onnxruntime refuses SAME with dilations; ONNX defines it (pads from the dilated kernel)."""
    x = np.arange(1, 8, dtype=np.float32).reshape(1, 1, 7)
    model = single("Conv", {"x": x.shape}, {"strides": [2], "dilations": [2], "auto_pad": "SAME_UPPER"}, initializers={"w": np.ones((1, 1, 2), np.float32)}, opset=11)
    expected = ReferenceEvaluator(model).run(None, {"x": x})[0]
    np.testing.assert_array_equal(expected.ravel(), [2, 6, 10, 6])
    np.testing.assert_array_equal(dx.run(model, {"x": x})["y"], expected)


def test_conv_bias_is_described_as_1_m_1_1_and_filters_keep_the_onnx_layout() -> None:
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], group=2)
    desc = dx.import_node(node, [(1, 4, 5, 5), (6, 2, 3, 3), (6,)]).desc
    assert list(desc.FilterTensor.Desc.Sizes) == [6, 2, 3, 3] and list(desc.BiasTensor.Desc.Sizes) == [1, 6, 1, 1]
    assert desc.Mode == dmlpy.DML_CONVOLUTION_MODE_CROSS_CORRELATION and desc.Direction == dmlpy.DML_CONVOLUTION_DIRECTION_FORWARD and desc.GroupCount == 2
    transposed = dx.import_node(helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], group=2), [(1, 4, 5, 5, 5), (4, 3, 2, 2, 2), (6,)]).desc
    assert list(transposed.FilterTensor.Desc.Sizes) == [4, 3, 2, 2, 2] and list(transposed.BiasTensor.Desc.Sizes) == [1, 6, 1, 1, 1]
    assert transposed.Direction == dmlpy.DML_CONVOLUTION_DIRECTION_BACKWARD and list(transposed.OutputTensor.Desc.Sizes) == [1, 6, 6, 6, 6]


def test_a_directml_rejection_names_the_node_and_carries_directmls_rule() -> None:
    node = helper.make_node("Conv", ["x", "w"], ["y"], group=3, name="grouped")
    with pytest.raises(dx.OnnxImportError) as error:
        dx.import_node(node, [(1, 4, 5, 5), (6, 1, 3, 3)], index=4)
    assert "CONVOLUTION.GROUP_DIVIDES_CHANNELS" in error.value.rule_ids
    assert "graph.node[4] 'grouped' (Conv-22)" in str(error.value) and error.value.node_index == 4


# ---------------------------------------------------------------------------------------
# 1-D operators are lifted to 4-D


def test_one_d_operators_are_lifted_to_4d_with_a_unit_height() -> None:
    pool = dx.import_node(helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3], strides=[2], pads=[1, 0], dilations=[2]), [(2, 3, 9)], opset=19).desc
    assert list(pool.InputTensor.Desc.Sizes) == [2, 3, 1, 9] and list(pool.OutputTensor.Desc.Sizes) == [2, 3, 1, 3]  # (9 + 1 - 5) / 2 + 1
    assert (list(pool.WindowSize), list(pool.Strides), list(pool.StartPadding), list(pool.EndPadding), list(pool.Dilations)) == ([1, 3], [1, 2], [0, 1], [0, 0], [1, 2])
    conv = dx.import_node(helper.make_node("Conv", ["x", "w", "b"], ["y"]), [(2, 3, 9), (4, 3, 2), (4,)]).desc
    assert list(conv.FilterTensor.Desc.Sizes) == [4, 3, 1, 2] and list(conv.BiasTensor.Desc.Sizes) == [1, 4, 1, 1] and conv.DimensionCount == 2


def test_a_1d_conv_feeding_a_1d_pool_runs_below_feature_level_4_0(backend: str) -> None:
    """DirectML takes 3-D convolution tensors only from FL 4.0 and 3-D pooling tensors never; lifted, FL 3.0 runs both."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((1, 2, 10)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1]), helper.make_node("AveragePool", ["c"], ["y"], kernel_shape=[2], strides=[2])]
    model = make_model(nodes, {"x": x.shape}, ["y"], initializers={"w": rng.standard_normal((3, 2, 3)).astype(np.float32)})
    imported = dx.import_model(model, feature_level=FL.LEVEL_3_0, backend=backend)
    assert imported.weights == "auto" and imported.owned_weights  # below FL 6.2: OWNED_BY_DML
    np.testing.assert_allclose(imported.run({"x": x})["y"], ort_run(model, {"x": x})[0], **TOLERANCE)
    assert imported.program.input_names == ["x", "w"] and imported.dml_input_sizes["x"] == (1, 2, 1, 10)


# ---------------------------------------------------------------------------------------
# Space and depth


@pytest.mark.doc_example
def test_directml_space_to_depth_page_example_in_both_orders() -> None:
    """SPACE_TO_DEPTH1 page: {1, 2, 4, 6} -> {1, 8, 2, 3} with B = 2; output channel 1 is input channel 1 at block offset
    (0, 0) in DCR, input channel 0 at block offset (0, 1) in CRD (SpaceToDepth-28's mode)."""
    x = np.arange(48, dtype=np.float32).reshape(1, 2, 4, 6)
    for mode, (channel, dy, dx_) in (("DCR", (1, 0, 0)), ("CRD", (0, 0, 1))):
        node = helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=2, mode=mode)
        imported = dx.import_node(node, [x.shape], opset=28)
        assert type(imported.desc) is dmlpy.DML_SPACE_TO_DEPTH1_OPERATOR_DESC and imported.output_shapes[0] == (1, 8, 2, 3)
        y = imported.run([x])
        np.testing.assert_array_equal(y[0, 1], x[0, channel, dy::2, dx_::2])
        model = single("SpaceToDepth", {"x": x.shape}, {"blocksize": 2, "mode": mode}, opset=28)
        np.testing.assert_array_equal(y, ReferenceEvaluator(model).run(None, {"x": x})[0])  # onnxruntime 1.31 stops at opset 26


def test_depth_to_space_modes_map_to_the_orders_and_invert_space_to_depth() -> None:
    x = np.arange(72, dtype=np.float32).reshape(1, 8, 3, 3)
    for mode, order in (("DCR", dmlpy.DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW), ("CRD", dmlpy.DML_DEPTH_SPACE_ORDER_COLUMN_ROW_DEPTH)):
        nodes = [helper.make_node("DepthToSpace", ["x"], ["s"], blocksize=2, mode=mode), helper.make_node("SpaceToDepth", ["s"], ["y"], blocksize=2, mode=mode)]
        imported = dx.import_model(make_model(nodes, {"x": x.shape}, ["y"], opset=28))
        assert imported.nodes[0].desc.Order == order
        np.testing.assert_array_equal(imported.run({"x": x})["y"], x)
    opset1 = dx.import_node(helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=2), [x.shape], opset=1).desc
    assert opset1.Order == dmlpy.DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW


def test_space_depth_below_feature_level_2_1_uses_the_descs_without_order() -> None:
    node = helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=2, mode="DCR")
    assert type(dx.import_node(node, [(1, 4, 2, 2)], opset=13, feature_level=FL.LEVEL_1_0).desc) is dmlpy.DML_DEPTH_TO_SPACE_OPERATOR_DESC
    crd = helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=2, mode="CRD", name="d2s")
    with pytest.raises(dx.OnnxImportError) as error:
        dx.import_node(crd, [(1, 4, 2, 2)], opset=13, feature_level=FL.LEVEL_2_0)
    assert error.value.rule == "ONNX.FEATURE_LEVEL" and error.value.attribute == "mode"


# ---------------------------------------------------------------------------------------
# Activations, fused when possible


@pytest.mark.parametrize(
    ("op", "attributes", "activation"),
    [("Relu", {}, DML_OPERATOR_TYPE.ACTIVATION_RELU), ("LeakyRelu", {"alpha": 0.2}, DML_OPERATOR_TYPE.ACTIVATION_LEAKY_RELU), ("Sigmoid", {}, DML_OPERATOR_TYPE.ACTIVATION_SIGMOID)],
)
@pytest.mark.parametrize("conv", ["Conv", "ConvTranspose"])
def test_an_activation_after_a_convolution_is_fused_into_it(conv: str, op: str, attributes: dict, activation: DML_OPERATOR_TYPE, device: dmlpy.Device) -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 3) if conv == "Conv" else (2, 3, 3, 3)).astype(np.float32)
    nodes = [helper.make_node(conv, ["x", "w", "b"], ["c"], strides=[2, 2], name="conv"), helper.make_node(op, ["c"], ["y"], name="act", **attributes)]
    model = make_model(nodes, {"x": x.shape}, ["y"], initializers={"w": w, "b": rng.standard_normal(3).astype(np.float32)})
    imported = dx.import_model(model, device=device)
    assert imported.descs["act"] == [] and imported.nodes[1].fused_into == "conv" and imported.nodes[0].fused_activation == "act"
    fused = imported.descs["conv"][0].FusedActivation
    assert fused.Type == activation and (op != "LeakyRelu" or fused.Desc.Alpha == pytest.approx(0.2))
    assert len(imported.graph_desc.Nodes) == 3  # the convolution and two constants
    np.testing.assert_allclose(imported.run({"x": x})["y"], ort_run(model, {"x": x})[0], **TOLERANCE)


@pytest.mark.parametrize("why", ["the convolution's output is a graph output", "the convolution feeds two nodes", "fusion is off"])
def test_an_activation_stays_a_separate_operator_when_it_cannot_be_fused(why: str) -> None:
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Relu", ["c"], ["y"])]
    outputs = ["y"]
    if why.startswith("the convolution's output"):
        outputs.append("c")
    elif why.startswith("the convolution feeds"):
        nodes.append(helper.make_node("Sigmoid", ["c"], ["z"]))
        outputs.append("z")
    model = make_model(nodes, {"x": x.shape}, outputs, initializers={"w": rng.standard_normal((2, 2, 1, 1)).astype(np.float32)})
    imported = dx.import_model(model, fuse_activations=why != "fusion is off")
    assert imported.descs["Conv_0"][0].FusedActivation is None
    assert type(imported.descs["Relu_1"][0]) is dmlpy.DML_ACTIVATION_RELU_OPERATOR_DESC
    got, expected = imported.run({"x": x}), ort_run(model, {"x": x})
    for name, value in zip(outputs, expected, strict=True):
        np.testing.assert_allclose(got[name], value, **TOLERANCE)


def _clip_host(host: str, rng: np.random.Generator) -> tuple[list[Any], dict[str, np.ndarray], tuple[int, ...]]:
    """A host node named "host" writing "c", its initializers and the input's shape."""
    if host in ("Conv", "ConvTranspose"):
        w = rng.standard_normal((3, 2, 3, 3) if host == "Conv" else (2, 3, 3, 3)).astype(np.float32)
        return [helper.make_node(host, ["x", "w", "b"], ["c"], name="host")], {"w": w, "b": rng.standard_normal(3).astype(np.float32)}, (1, 2, 5, 5)
    if host == "Gemm":
        return [helper.make_node("Gemm", ["x", "w", "b"], ["c"], transB=1, name="host")], {"w": rng.standard_normal((7, 6)).astype(np.float32), "b": rng.standard_normal(7).astype(np.float32)}, (4, 6)
    return [helper.make_node("MatMul", ["x", "w"], ["c"], name="host")], {"w": rng.standard_normal((6, 7)).astype(np.float32)}, (4, 6)


def _constant(name: str, value: float) -> Any:
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array(value, np.float32)))


# (host, how the Clip gets its bounds, opset, the fused (Min, Max))
CLIP_FUSIONS = [
    pytest.param("Conv", "constant nodes after the host", 17, (0.0, 6.0), id="Conv then Clip-13 whose bounds are Constant nodes placed after the Conv, as PyTorch exports ReLU6"),
    pytest.param("ConvTranspose", "initializers", 13, (-0.5, 1.0), id="ConvTranspose then Clip-13 with initializer bounds"),
    pytest.param("Conv", "attributes", 10, (-0.5, 1.0), id="Conv then Clip-6 with attribute bounds"),
    pytest.param("Conv", "max only", 13, (-math.inf, 1.0), id="Conv then Clip-13 with only a max: Min is -infinity"),
    pytest.param("Gemm", "initializers", 13, (0.0, 6.0), id="Gemm then Clip-13"),
    pytest.param("MatMul", "constant nodes after the host", 17, (-1.0, 1.0), id="MatMul then Clip-13"),
]


@pytest.mark.parametrize(("host", "bounds", "opset", "expected"), CLIP_FUSIONS)
def test_a_clip_after_a_convolution_or_gemm_is_its_fused_clip(host: str, bounds: str, opset: int, expected: tuple[float, float], device: dmlpy.Device) -> None:
    rng = np.random.default_rng(5)
    nodes, initializers, shape = _clip_host(host, rng)
    low, high = expected
    if bounds == "attributes":
        nodes.append(helper.make_node("Clip", ["c"], ["y"], name="clip", min=low, max=high))
    elif bounds == "max only":
        nodes.append(helper.make_node("Clip", ["c", "", "hi"], ["y"], name="clip"))
        initializers["hi"] = np.array(high, np.float32)
    elif bounds == "initializers":
        nodes.append(helper.make_node("Clip", ["c", "lo", "hi"], ["y"], name="clip"))
        initializers.update(lo=np.array(low, np.float32), hi=np.array(high, np.float32))
    else:
        nodes += [_constant("lo", low), _constant("hi", high), helper.make_node("Clip", ["c", "lo", "hi"], ["y"], name="clip")]
    model = make_model(nodes, {"x": shape}, ["y"], initializers=initializers, opset=opset)
    imported = dx.import_model(model, device=device)
    assert [n.fused_into for n in imported.nodes if n.label == "clip"] == ["host"]
    fused = imported.descs["host"][-1].FusedActivation
    assert fused.Type == DML_OPERATOR_TYPE.ELEMENT_WISE_CLIP and (fused.Desc.Min, fused.Desc.Max) == expected
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    y, y_ort = imported.run({"x": x})["y"], ort_run(model, {"x": x})[0]
    assert (y_ort == np.float32(high)).any() and (np.isinf(low) or (y_ort == np.float32(low)).any())  # both bounds reached
    np.testing.assert_allclose(y, y_ort, **TOLERANCE)


@pytest.mark.parametrize("why", ["the device is below feature level 6.0", "the max is computed at run time", "the host is an Add"])
def test_a_clip_stays_a_separate_operator_when_it_cannot_be_fused(why: str) -> None:
    rng = np.random.default_rng(6)
    nodes, initializers, shape = _clip_host("Conv", rng)
    inputs: dict[str, Any] = {"x": shape}
    if why == "the host is an Add":
        nodes = [helper.make_node("Add", ["x", "x"], ["c"], name="host")]
        initializers = {}
    if why == "the max is computed at run time":
        nodes.append(helper.make_node("Clip", ["c", "lo", "hi"], ["y"], name="clip"))
        initializers["lo"] = np.array(0.0, np.float32)
        inputs["hi"] = ()
    else:
        nodes.append(helper.make_node("Clip", ["c", "lo", "hi"], ["y"], name="clip"))
        initializers.update(lo=np.array(0.0, np.float32), hi=np.array(1.0, np.float32))
    model = make_model(nodes, inputs, ["y"], initializers=initializers, opset=13)
    level = FL.LEVEL_5_1 if why.startswith("the device") else FL.LEVEL_6_4
    if why == "the max is computed at run time":
        with pytest.raises(dx.OnnxImportError) as error:  # the separate CLIP needs its bounds at import, and says so
            dx.import_model(model, feature_level=level)
        assert error.value.rule == "ONNX.UNSUPPORTED_ATTRIBUTE" and "clip" in error.value.findings[0].path.lower()
        return
    imported = dx.import_model(model, feature_level=level)
    assert [n.fused_into for n in imported.nodes if n.label == "clip"] == [None]
    assert getattr(imported.descs["host"][-1], "FusedActivation", None) is None
    x = rng.standard_normal(shape).astype(np.float32)
    np.testing.assert_allclose(imported.run({"x": x})["y"], ort_run(model, {"x": x})[0], **TOLERANCE)


# ---------------------------------------------------------------------------------------
# Initializers: constants or OWNED_BY_DML inputs


def conv_model() -> tuple[Any, np.ndarray]:
    rng = np.random.default_rng(8)
    x = rng.standard_normal((1, 2, 6, 6)).astype(np.float32)
    model = single("Conv", {"x": x.shape}, {"pads": [1, 1, 1, 1]}, initializers={"w": rng.standard_normal((3, 2, 3, 3)).astype(np.float32), "b": rng.standard_normal(3).astype(np.float32)})
    return model, x


@pytest.mark.parametrize(("level", "weights", "expected"), [(FL.LEVEL_6_4, "auto", "constant"), (FL.LEVEL_6_1, "auto", "owned"), (FL.LEVEL_6_4, "owned", "owned"), (FL.LEVEL_6_2, "constant", "constant")])
def test_initializers_become_constant_nodes_or_owned_by_dml_inputs(level: DML_FEATURE_LEVEL, weights: str, expected: str, backend: str) -> None:
    model, x = conv_model()
    imported = dx.import_model(model, feature_level=level, weights=weights, backend=backend)
    constants = [n for n in imported.graph_desc.Nodes if n.Type == DML_GRAPH_NODE_TYPE.CONSTANT]
    if expected == "constant":
        assert len(constants) == 2 and imported.graph_desc.InputCount == 1 and not imported.owned_weights
    else:
        assert not constants and imported.graph_desc.InputCount == 3 and set(imported.owned_weights) == {"w", "b"}
        conv = imported.nodes[0].desc
        assert conv.FilterTensor.Desc.Flags == dmlpy.DML_TENSOR_FLAG_OWNED_BY_DML and conv.BiasTensor.Desc.Flags == dmlpy.DML_TENSOR_FLAG_OWNED_BY_DML
        assert imported.program.compiled.get_binding_properties().PersistentResourceSize > 0
    np.testing.assert_allclose(imported.run({"x": x})["y"], ort_run(model, {"x": x})[0], **TOLERANCE)


def test_constant_weights_below_feature_level_6_2_are_refused() -> None:
    model, _ = conv_model()
    with pytest.raises(dx.OnnxImportError) as error:
        dx.import_model(model, feature_level=FL.LEVEL_6_1, weights="constant")
    assert error.value.rule == "ONNX.FEATURE_LEVEL" and "weights='owned'" in str(error.value)


def test_a_model_needs_the_graph_api_of_feature_level_2_1() -> None:
    model, _ = conv_model()
    with pytest.raises(dx.OnnxImportError) as error:
        dx.import_model(model, feature_level=FL.LEVEL_2_0)
    assert error.value.rule == "ONNX.FEATURE_LEVEL"


# ---------------------------------------------------------------------------------------
# Errors name the node (index and name), the op and the attribute


ERROR_CASES = [
    ("RandomUniformLike needs RANDOM_GENERATOR, which dmlpy describes but cannot run", "RandomUniformLike", {}, 22, "ONNX.NOT_EMULATED", None),
    ("NonMaxSuppression has no DirectML operator dmlpy knows", "NonMaxSuppression", {}, 22, "ONNX.UNSUPPORTED_OP", None),
    ("ceil_mode is not an attribute of AveragePool-7", "AveragePool", {"kernel_shape": [2, 2], "ceil_mode": 1}, 7, "ONNX.INVALID_ATTRIBUTE", "ceil_mode"),
    ("kernel_shape is required", "AveragePool", {}, 22, "ONNX.INVALID_ATTRIBUTE", "kernel_shape"),
    ("kernel_shape needs one entry per spatial axis", "AveragePool", {"kernel_shape": [2]}, 22, "ONNX.INVALID_ATTRIBUTE", "kernel_shape"),
    ("auto_pad must be a known value", "AveragePool", {"kernel_shape": [2, 2], "auto_pad": "SAME"}, 22, "ONNX.INVALID_ATTRIBUTE", "auto_pad"),
    ("pads and auto_pad are exclusive", "AveragePool", {"kernel_shape": [2, 2], "auto_pad": "VALID", "pads": [1, 1, 1, 1]}, 22, "ONNX.INVALID_ATTRIBUTE", "pads"),
    ("strides must be positive", "AveragePool", {"kernel_shape": [2, 2], "strides": [0, 1]}, 22, "ONNX.INVALID_ATTRIBUTE", "strides"),
    ("the window must fit the padded input", "AveragePool", {"kernel_shape": [9, 2]}, 22, "ONNX.INVALID_ATTRIBUTE", "kernel_shape"),
    ("count_include_pad is 0 or 1", "AveragePool", {"kernel_shape": [2, 2], "count_include_pad": 2}, 22, "ONNX.INVALID_ATTRIBUTE", "count_include_pad"),
    ("an INTS attribute given as an INT", "AveragePool", {"kernel_shape": 2}, 22, "ONNX.INVALID_ATTRIBUTE", "kernel_shape"),
    ("DepthToSpace's mode is DCR or CRD", "DepthToSpace", {"blocksize": 2, "mode": "RCD"}, 13, "ONNX.INVALID_ATTRIBUTE", "mode"),
    ("SpaceToDepth before opset 28 has no mode", "SpaceToDepth", {"blocksize": 2, "mode": "CRD"}, 13, "ONNX.INVALID_ATTRIBUTE", "mode"),
    ("the block must divide H and W", "SpaceToDepth", {"blocksize": 3}, 13, "ONNX.SHAPE", "blocksize"),
]


@pytest.mark.parametrize(("op", "attributes", "opset", "rule_id", "attribute"), [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES])
def test_unsupported_or_invalid_nodes_raise_naming_node_op_and_attribute(op: str, attributes: dict, opset: int, rule_id: str, attribute: str | None) -> None:
    identity = helper.make_node("Relu", ["x"], ["r"], name="first")
    node = helper.make_node(op, ["r"], ["y"], name="culprit", **attributes)
    model = make_model([identity, node], {"x": (1, 4, 4, 4)}, ["y"], opset=opset)
    with pytest.raises(dx.OnnxImportError) as error:
        dx.import_model(model)
    assert error.value.rule == rule_id
    assert (error.value.node_index, error.value.node_name, error.value.op_type, error.value.attribute) == (1, "culprit", op, attribute)
    text = str(error.value)
    assert "graph.node[1] 'culprit'" in text and op in text and (attribute is None or f"'{attribute}'" in text)
    report = dx.validate(model)
    assert not report.ok and rule_id in report.rule_ids


def test_unsupported_types_shapes_and_graphs() -> None:
    complex_valued = make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": (1, 2)}, ["y"], dtype=TensorProto.COMPLEX64)
    assert_rule(dx.validate(complex_valued), "ONNX.UNSUPPORTED_TYPE")
    symbolic = make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": ("batch", 3, 4, 4)}, ["y"])
    with pytest.raises(dx.OnnxImportError) as error:
        dx.import_model(symbolic)
    assert error.value.rule == "ONNX.SHAPE" and "input_shapes" in str(error.value)
    assert dx.run(symbolic, {"x": -np.ones((2, 3, 4, 4), np.float32)})["y"].shape == (2, 3, 4, 4)  # run takes the shapes from the arrays
    six_d = make_model([helper.make_node("GlobalAveragePool", ["x"], ["y"])], {"x": (1, 1, 2, 2, 2, 2)}, ["y"])
    assert_rule(dx.validate(six_d), "ONNX.SHAPE")
    passthrough = make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": (1, 2, 2, 2)}, ["y", "x"])  # a graph input as an output: an IDENTITY node writes it
    x = -np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2)
    np.testing.assert_array_equal(dx.run(passthrough, {"x": x})["x"], x)
    unordered = make_model([helper.make_node("Relu", ["r"], ["y"]), helper.make_node("Relu", ["x"], ["r"])], {"x": (1, 2, 2, 2)}, ["y"])
    assert "topological order" in assert_rule(dx.validate(unordered), "ONNX.UNSUPPORTED_GRAPH").message
    custom = make_model([helper.make_node("Relu", ["x"], ["y"], domain="com.example")], {"x": (1, 2, 2, 2)}, ["y"])
    assert_rule(dx.validate(custom), "ONNX.UNSUPPORTED_OP")


def test_validate_collects_every_node_error_and_the_warnings_without_raising() -> None:
    nodes = [
        helper.make_node("RandomUniformLike", ["x"], ["a"], name="rnd1"),
        helper.make_node("Relu", ["a"], ["b"], name="after_rnd"),  # checked: shape inference sizes its input
        helper.make_node("AveragePool", ["x"], ["c"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1, count_include_pad=1, name="ceil"),
        helper.make_node("RandomUniformLike", ["c"], ["d"], name="rnd2"),
        helper.make_node("NonMaxSuppression", ["d", "d"], ["e"], name="nms"),
        helper.make_node("Relu", ["e"], ["f"], name="after_nms"),
    ]
    report = dx.validate(make_model(nodes, {"x": (1, 1, 4, 4)}, ["b", "f"], opset=19))
    assert sorted(f.rule for f in report.errors) == ["ONNX.NOT_EMULATED", "ONNX.UNSUPPORTED_OP"]  # one finding per op type
    not_emulated = assert_rule(report, "ONNX.NOT_EMULATED")
    assert "rnd1" in not_emulated.message and "rnd2" in not_emulated.message and "RANDOM_GENERATOR" in not_emulated.message
    assert {"ONNX.CEIL_MODE_DIVISOR", "POOLING.CEIL_OUTPUT"} <= {f.rule for f in report.warnings}
    good = dx.validate(conv_model()[0])
    assert good.ok and not good.findings


def test_validate_checks_the_nodes_after_an_unsupported_one() -> None:
    nodes = [
        helper.make_node("RandomUniformLike", ["x"], ["a"], name="rnd"),
        helper.make_node("AveragePool", ["a"], ["b"], kernel_shape=[9, 9], name="too_big"),  # the window does not fit: reported too
    ]
    report = dx.validate(make_model(nodes, {"x": (1, 1, 4, 4)}, ["b"], opset=19))
    assert sorted(f.rule for f in report.errors) == ["ONNX.INVALID_ATTRIBUTE", "ONNX.NOT_EMULATED"]


def test_a_declared_output_shape_that_onnx_contradicts_warns() -> None:
    model = make_model([helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2])], {"x": (1, 1, 4, 4)}, ["y"], output_shapes={"y": (1, 1, 2, 2)})
    with pytest.warns(dmlpy.DmlWarning, match=r"ONNX\.DECLARED_SHAPE"):
        imported = dx.import_model(model)
    assert imported.output_shapes["y"] == (1, 1, 3, 3)
    with pytest.raises(dx.OnnxImportError) as error:
        dx.import_model(model, strict=True)
    assert error.value.rule == "ONNX.DECLARED_SHAPE"


def test_conv_transpose_opset1_odd_split_warns() -> None:
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2], output_shape=[8], name="ct")
    with pytest.warns(dmlpy.DmlWarning, match=r"ONNX\.CONV_TRANSPOSE_PADS_SPLIT.*onnxruntime"):
        dx.import_node(node, [(1, 1, 5), (1, 1, 3)], opset=1)


# ---------------------------------------------------------------------------------------
# The public API the CLI calls


def test_load_import_model_run_and_validate_accept_a_path_bytes_or_a_proto(tmp_path: Path) -> None:
    model, x = conv_model()
    path = tmp_path / "conv.onnx"
    onnx.save(model, path)
    expected = ort_run(model, {"x": x})[0]
    for source in (model, path, str(path), model.SerializeToString()):
        assert dx.load(source).graph.node[0].op_type == "Conv"
        np.testing.assert_allclose(dx.run(source, {"x": x})["y"], expected, **TOLERANCE)
        assert dx.validate(source).ok
    imported = dx.import_model(path)
    assert (imported.input_names, imported.output_names, imported.input_shapes, imported.output_shapes) == (["x"], ["y"], {"x": (1, 2, 6, 6)}, {"y": (1, 3, 6, 6)})
    assert isinstance(imported.program, dmlpy.GraphProgram) and isinstance(imported.graph_desc, dmlpy.DML_GRAPH_DESC)
    assert list(imported.descs) == ["Conv_0"] and type(imported.descs["Conv_0"][0]) is dmlpy.DML_CONVOLUTION_OPERATOR_DESC
    np.testing.assert_allclose(imported(x=x)["y"], expected, **TOLERANCE)
    np.testing.assert_allclose(dx.run(imported, {"x": x})["y"], expected, **TOLERANCE)
    with pytest.raises(TypeError, match="missing: x"):
        imported.run({})
    with pytest.raises(ValueError, match="shape"):
        imported.run({"x": np.zeros((1, 2, 5, 5), np.float32)})


def test_weights_that_are_graph_inputs_are_bound_at_run_time_in_onnx_shapes(backend: str) -> None:
    """W and B as graph inputs (not initializers): described as {M, C, 1, k} and {1, M, 1, 1}, passed in ONNX's shapes."""
    rng = np.random.default_rng(6)
    feeds = {"x": rng.standard_normal((1, 2, 7)).astype(np.float32), "w": rng.standard_normal((3, 2, 3)).astype(np.float32), "b": rng.standard_normal(3).astype(np.float32)}
    model = make_model([helper.make_node("Conv", ["x", "w", "b"], ["y"], strides=[2])], {k: v.shape for k, v in feeds.items()}, ["y"])
    imported = dx.import_model(model, backend=backend)
    assert imported.input_names == ["x", "w", "b"] and imported.dml_input_sizes == {"x": (1, 2, 1, 7), "w": (3, 2, 1, 3), "b": (1, 3, 1, 1)}
    np.testing.assert_allclose(imported.run(feeds)["y"], ort_run(model, feeds)[0], **TOLERANCE)


def test_the_onnx_extra_is_optional_and_its_absence_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx now raises ImportError
    with pytest.raises(ImportError, match=r"pip install dmlpy\[onnx\]"):
        dx.load(b"")
