"""Average pooling kernels: documentation examples, hand-computed cases and property tests.

Every kernel test runs on both backends (the ``backend``/``device`` fixtures of conftest.py):
the native C kernels and the NumPy kernels. Three independent oracles check them:

* golden values from DirectML's and nGraph's documentation and cases computed by hand;
* ``oracle_average_pool`` below, a plain nested loop over window taps written from the
  divisor rule of docs/deviations.md (not from dmlpy's code);
* onnxruntime's AveragePool, wherever ONNX semantics coincide with DirectML's (see
  ``onnx_comparable``).

The property tests also check that native and NumPy agree with each other.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pytest
from conftest import native_device
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dmlpy

CEIL_OUTPUT = "POOLING.CEIL_OUTPUT"
EMPTY_WINDOW = "POOLING.EMPTY_WINDOW"

# Tolerances. fp32: native accumulates in float32, NumPy in float64, so results differ by a
# few float32 ulps; the small atol covers windows whose sum cancels to near zero. fp16: both
# round the same average to binary16 (at most 1 ulp = 2^-10 relative apart).
TOLERANCE = {
    np.dtype(np.float32): {"rtol": 1e-5, "atol": 1e-5},
    np.dtype(np.float16): {"rtol": 1e-3, "atol": 1e-3},
}


# ---------------------------------------------------------------------------------------
# Helpers


def pool_desc(
    in_sizes: Sequence[int],
    window: Sequence[int],
    strides: Sequence[int] | None = None,
    start: Sequence[int] | None = None,
    end: Sequence[int] | None = None,
    dilations: Sequence[int] | None = None,
    *,
    include_padding: bool = False,
    dtype: type = np.float32,
    in_strides: Sequence[int] | None = None,
    out_strides: Sequence[int] | None = None,
    out_sizes: Sequence[int] | None = None,
    ceil_mode: bool = False,
) -> dmlpy.DML_AVERAGE_POOLING_OPERATOR_DESC | dmlpy.DML_AVERAGE_POOLING1_OPERATOR_DESC:
    """AVERAGE_POOLING, or AVERAGE_POOLING1 when ``dilations`` is given."""
    spatial = len(in_sizes) - 2
    strides = tuple(strides or (1,) * spatial)
    start = tuple(start or (0,) * spatial)
    end = tuple(end or (0,) * spatial)
    if out_sizes is None:
        out_sizes = dmlpy.average_pooling_output_sizes(
            in_sizes, window, strides, start, end, dilations, ceil_mode=ceil_mode
        )
    common = {
        "InputTensor": dmlpy.buffer_tensor(dtype, in_sizes, in_strides),
        "OutputTensor": dmlpy.buffer_tensor(dtype, out_sizes, out_strides),
        "DimensionCount": spatial,
        "Strides": strides,
        "WindowSize": tuple(window),
        "StartPadding": start,
        "EndPadding": end,
        "IncludePadding": include_padding,
    }
    if dilations is None:
        return dmlpy.DML_AVERAGE_POOLING_OPERATOR_DESC(**common)
    return dmlpy.DML_AVERAGE_POOLING1_OPERATOR_DESC(**common, Dilations=tuple(dilations))


def run_pool(desc: object, x: np.ndarray, device: dmlpy.Device, expect_warnings: Sequence[str] = ()) -> np.ndarray:
    """``dmlpy.run`` on ``device``, asserting exactly the DmlWarnings (by rule id) that ``expect_warnings`` names."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", dmlpy.DmlWarning)
        result = dmlpy.run(desc, device=device, InputTensor=x)
    raised = sorted({w.message.finding.rule for w in caught if isinstance(w.message, dmlpy.DmlWarning)})
    assert raised == sorted(set(expect_warnings)), f"DmlWarnings {raised}, expected {sorted(set(expect_warnings))}"
    return result


def padded_strides(sizes: Sequence[int], extra: Sequence[int]) -> tuple[int, ...]:
    """Packed strides of a buffer whose every axis is ``extra`` elements longer than ``sizes``."""
    return dmlpy.packed_strides([s + e for s, e in zip(sizes, extra, strict=True)])


# ---------------------------------------------------------------------------------------
# The independent oracle: the rule of docs/deviations.md as a plain loop over window taps.
#
#   tap position along dim i:   p_i = o_i * stride_i + k_i * dilation_i - start_i
#   on the input:               0 <= p_i < in_i                      for every i
#   inside the padded extent:   -start_i <= p_i < in_i + end_i       for every i
#   sum     = sum of x over the taps on the input (padding adds 0)
#   divisor = taps inside the padded extent (IncludePadding TRUE) or taps on the input (FALSE);
#             taps beyond the padded extent (a ceil-mode overhang) never count
#   output  = sum / divisor, and 0/0 = NaN for a window wholly in padding without IncludePadding


@dataclass
class OracleResult:
    output: np.ndarray  # float64
    real_taps: np.ndarray  # per output position: taps on the input
    overhangs: np.ndarray  # per output position: some tap lies beyond the padded extent


def oracle_average_pool(
    x: np.ndarray,
    window: Sequence[int],
    strides: Sequence[int],
    start: Sequence[int],
    end: Sequence[int],
    dilations: Sequence[int],
    include_padding: bool,
    out_spatial: Sequence[int],
) -> OracleResult:
    x = np.asarray(x, dtype=np.float64)
    n, c = x.shape[:2]
    in_spatial = x.shape[2:]
    out = np.empty((n, c, *out_spatial))
    real_taps = np.zeros(tuple(out_spatial), dtype=np.int64)
    overhangs = np.zeros(tuple(out_spatial), dtype=bool)
    for o in itertools.product(*(range(size) for size in out_spatial)):
        total = np.zeros((n, c))
        on_input_count = 0
        padded_count = 0
        for k in itertools.product(*(range(w) for w in window)):
            p = [o[i] * strides[i] + k[i] * dilations[i] - start[i] for i in range(len(window))]
            on_input = all(0 <= p[i] < in_spatial[i] for i in range(len(p)))
            in_extent = all(-start[i] <= p[i] < in_spatial[i] + end[i] for i in range(len(p)))
            if on_input:
                total += x[(slice(None), slice(None), *p)]
                on_input_count += 1
            if in_extent:
                padded_count += 1
            else:
                overhangs[o] = True
        divisor = padded_count if include_padding else on_input_count
        out[(slice(None), slice(None), *o)] = total / divisor if divisor else np.nan
        real_taps[o] = on_input_count
    return OracleResult(out, real_taps, overhangs)


def test_oracle_reproduces_the_ngraph_example() -> None:
    """The oracle itself against the nGraph worked example (it must be right to judge anything)."""
    x = np.array([[1, 3, 5], [7, 11, 13], [17, 19, 23]], dtype=np.float64)[None, None]
    for include, top_left in ((False, 1.0), (True, 0.25)):
        result = oracle_average_pool(x, (2, 2), (1, 1), (1, 1), (0, 0), (1, 1), include, (3, 3))
        assert result.output[0, 0, 0, 0] == top_left


# ---------------------------------------------------------------------------------------
# Golden values from documentation


@pytest.mark.doc_example
def test_directml_doc_layout_example_averages_2x2_blocks(device: dmlpy.Device) -> None:
    """DirectML docs: a 1x1x4x4 tensor of 0..15, window 2, stride 2, no padding -> 2.5, 4.5, 10.5, 12.5."""
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    desc = pool_desc((1, 1, 4, 4), (2, 2), (2, 2))
    y = run_pool(desc, x, device)
    np.testing.assert_array_equal(y, np.array([[2.5, 4.5], [10.5, 12.5]], dtype=np.float32)[None, None])
    assert y.dtype == np.float32


NGRAPH_INPUT = np.array([[1, 3, 5], [7, 11, 13], [17, 19, 23]], dtype=np.float32)[None, None]


@pytest.mark.doc_example
@pytest.mark.parametrize(
    ("include_padding", "expected"),
    [
        # i = false: padding ignored; top-left window {(0),(0),(0),1} averages {1} = 1.0
        (False, [[1.0, 2.0, 4.0], [4.0, 5.5, 8.0], [12.0, 13.5, 16.5]]),
        # i = true: padding counts as zeros; top-left averages {0,0,0,1} = 0.25
        (True, [[0.25, 1.0, 2.0], [2.0, 5.5, 8.0], [6.0, 13.5, 16.5]]),
    ],
    ids=["ngraph-exclude-padding-top-left-1.0", "ngraph-include-padding-top-left-0.25"],
)
def test_ngraph_avgpool_example(device: dmlpy.Device, include_padding: bool, expected: list[list[float]]) -> None:
    """nGraph AvgPool: window 2x2, stride 1, padding below 1x1; top-left 1.0 without padding in the average, 0.25 with."""
    desc = pool_desc((1, 1, 3, 3), (2, 2), (1, 1), (1, 1), (0, 0), include_padding=include_padding)
    y = run_pool(desc, NGRAPH_INPUT, device)
    assert y.shape == (1, 1, 3, 3)
    assert y[0, 0, 0, 0] == (0.25 if include_padding else 1.0)
    np.testing.assert_array_equal(y[0, 0], np.array(expected, dtype=np.float32))


# ---------------------------------------------------------------------------------------
# Hand-computed cases


@pytest.mark.parametrize(
    ("include_padding", "expected"),
    [
        # windows (taps): o0 {-1,0,1}, o1 {1,2,3}, o2 {3,4,5}, o3 {5,6,7}; padded extent [-1, 7)
        # TRUE: divisors 3, 3, 3 and 2 (tap 7 is beyond the extent and never counts)
        (True, [1.0, 3.0, 5.0, 3.0]),
        # FALSE: divisors 2, 3, 3 and 1 (only tap 5 is on the input)
        (False, [1.5, 3.0, 5.0, 6.0]),
    ],
    ids=["include-padding", "exclude-padding"],
)
def test_ceil_shape_overhanging_window_counts_only_taps_inside_the_padded_extent(
    device: dmlpy.Device, include_padding: bool, expected: list[float]
) -> None:
    """Input 1..6, window 3, stride 2, padding 1+1: floor size 3, ceil size 4.

    ONNX's reference implementation would divide the last window by the full 3 taps (6/3 = 2)
    when count_include_pad=1; DirectML-in-dmlpy follows docs/deviations.md (6/2 = 3).
    """
    x = np.arange(1, 7, dtype=np.float32).reshape(1, 1, 1, 6)
    desc = pool_desc((1, 1, 1, 6), (1, 3), (1, 2), (0, 1), (0, 1), include_padding=include_padding, ceil_mode=True)
    assert desc.OutputTensor.Desc.Sizes == (1, 1, 1, 4)
    y = run_pool(desc, x, device, expect_warnings=[CEIL_OUTPUT])
    np.testing.assert_array_equal(y[0, 0, 0], np.array(expected, dtype=np.float32))


@pytest.mark.parametrize("include_padding", [True, False])
def test_ceil_shape_without_padding_last_window_averages_the_taps_on_the_input(
    device: dmlpy.Device, include_padding: bool
) -> None:
    """Input 1..5, window 2, stride 2: ceil size 3; the last window {4, 5} has only tap 4 (value 5) inside."""
    x = np.arange(1, 6, dtype=np.float32).reshape(1, 1, 1, 5)
    desc = pool_desc((1, 1, 1, 5), (1, 2), (1, 2), include_padding=include_padding, ceil_mode=True)
    y = run_pool(desc, x, device, expect_warnings=[CEIL_OUTPUT])
    np.testing.assert_array_equal(y[0, 0, 0], np.array([1.5, 3.5, 5.0], dtype=np.float32))


def test_ceil_shape_in_two_dims_counts_the_product_of_taps_inside(device: dmlpy.Device) -> None:
    """3x3 of 1..9, window 2x2, stride 2, IncludePadding TRUE: ceil 2x2; edges average 2 taps, the corner 1."""
    x = np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)
    desc = pool_desc((1, 1, 3, 3), (2, 2), (2, 2), include_padding=True, ceil_mode=True)
    y = run_pool(desc, x, device, expect_warnings=[CEIL_OUTPUT])
    # [[1,2],[4,5]] -> 3; [[3],[6]] -> 4.5; [[7,8]] -> 7.5; [[9]] -> 9
    np.testing.assert_array_equal(y[0, 0], np.array([[3.0, 4.5], [7.5, 9.0]], dtype=np.float32))


def test_dilated_window_takes_every_dth_element(device: dmlpy.Device) -> None:
    """AVERAGE_POOLING1, 1..7, window 2, dilation 3: taps {o, o+3} -> 2.5, 3.5, 4.5, 5.5."""
    x = np.arange(1, 8, dtype=np.float32).reshape(1, 1, 1, 7)
    desc = pool_desc((1, 1, 1, 7), (1, 2), (1, 1), dilations=(1, 3))
    assert isinstance(desc, dmlpy.DML_AVERAGE_POOLING1_OPERATOR_DESC)
    y = run_pool(desc, x, device)
    np.testing.assert_array_equal(y[0, 0, 0], np.array([2.5, 3.5, 4.5, 5.5], dtype=np.float32))


def test_dilated_2d_window(device: dmlpy.Device) -> None:
    """4x4 of 0..15, window 2x2, dilation 2x2 (a 3x3 extent), stride 1: the corners of each 3x3 block."""
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    desc = pool_desc((1, 1, 4, 4), (2, 2), (1, 1), dilations=(2, 2))
    y = run_pool(desc, x, device)
    # (0+2+8+10)/4 = 5, (1+3+9+11)/4 = 6, (4+6+12+14)/4 = 9, (5+7+13+15)/4 = 10
    np.testing.assert_array_equal(y[0, 0], np.array([[5.0, 6.0], [9.0, 10.0]], dtype=np.float32))


@pytest.mark.parametrize(
    ("include_padding", "expected"),
    [
        # taps {o-2, o+1, o+4}: o0 {-2,1,4} -> 2+5; o1 {-1,2,5} -> 3+6; o2 {0,3,6} -> 1+4+7
        (True, [7 / 3, 3.0, 4.0]),
        (False, [3.5, 4.5, 4.0]),
    ],
    ids=["include-padding", "exclude-padding"],
)
def test_dilated_window_with_start_padding(device: dmlpy.Device, include_padding: bool, expected: list[float]) -> None:
    """1..7, window 3, dilation 3 (extent 7), start padding 2: output (7 + 2 - 7) / 1 + 1 = 3."""
    x = np.arange(1, 8, dtype=np.float32).reshape(1, 1, 1, 7)
    desc = pool_desc((1, 1, 1, 7), (1, 3), (1, 1), (0, 2), (0, 0), dilations=(1, 3), include_padding=include_padding)
    y = run_pool(desc, x, device)
    np.testing.assert_allclose(y[0, 0, 0], np.array(expected, dtype=np.float32), rtol=1e-6)


@pytest.mark.parametrize("include_padding", [True, False])
def test_dilated_ceil_shape_last_window_loses_its_overhanging_tap(device: dmlpy.Device, include_padding: bool) -> None:
    """1..6, window 2, dilation 2, stride 2: floor 2, ceil 3; the last window {4, 6} keeps only tap 4 (value 5).

    The ONNX reference (count_include_pad=1) would give 5/2 = 2.5 there; docs/deviations.md gives 5.
    """
    x = np.arange(1, 7, dtype=np.float32).reshape(1, 1, 1, 6)
    desc = pool_desc((1, 1, 1, 6), (1, 2), (1, 2), dilations=(1, 2), include_padding=include_padding, ceil_mode=True)
    assert desc.OutputTensor.Desc.Sizes[3] == 3
    y = run_pool(desc, x, device, expect_warnings=[CEIL_OUTPUT])
    np.testing.assert_array_equal(y[0, 0, 0], np.array([2.0, 4.0, 5.0], dtype=np.float32))


def test_unit_dilations_equal_average_pooling(device: dmlpy.Device, rng: np.random.Generator) -> None:
    x = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    args = ((2, 3, 5, 6), (3, 2), (2, 1), (1, 0), (1, 1))
    plain = run_pool(pool_desc(*args, include_padding=True), x, device)
    dilated = run_pool(pool_desc(*args, dilations=(1, 1), include_padding=True), x, device)
    np.testing.assert_array_equal(plain, dilated)


def test_window_wholly_in_padding_is_nan_without_include_padding(device: dmlpy.Device) -> None:
    """Input [1, 2], window 1, padding 1 + 1: windows at -1 and 2 hold only padding -> 0/0 = NaN (nGraph's note)."""
    x = np.array([1.0, 2.0], dtype=np.float32).reshape(1, 1, 1, 2)
    desc = pool_desc((1, 1, 1, 2), (1, 1), (1, 1), (0, 1), (0, 1), include_padding=False)
    y = run_pool(desc, x, device, expect_warnings=[EMPTY_WINDOW])
    assert np.isnan(y[0, 0, 0, 0]) and np.isnan(y[0, 0, 0, 3])
    np.testing.assert_array_equal(y[0, 0, 0, 1:3], [1.0, 2.0])


def test_window_wholly_in_padding_is_zero_with_include_padding(device: dmlpy.Device) -> None:
    x = np.array([1.0, 2.0], dtype=np.float32).reshape(1, 1, 1, 2)
    desc = pool_desc((1, 1, 1, 2), (1, 1), (1, 1), (0, 1), (0, 1), include_padding=True)
    y = run_pool(desc, x, device)
    np.testing.assert_array_equal(y[0, 0, 0], [0.0, 1.0, 2.0, 0.0])


def test_2d_window_in_padding_along_one_dim_only_is_nan(device: dmlpy.Device) -> None:
    """A window is empty when it misses the input along any one dim, even if the other dim is fine."""
    x = np.arange(1, 5, dtype=np.float32).reshape(1, 1, 2, 2)
    desc = pool_desc((1, 1, 2, 2), (1, 2), (1, 1), (2, 0), (0, 0), include_padding=False)
    y = run_pool(desc, x, device, expect_warnings=[EMPTY_WINDOW])
    assert y.shape == (1, 1, 4, 1)
    assert np.isnan(y[0, 0, :2, 0]).all()
    np.testing.assert_array_equal(y[0, 0, 2:, 0], [1.5, 3.5])


def test_5d_window_averages_a_2x2x2_block(device: dmlpy.Device) -> None:
    """N=2, C=2, D,H,W = 2,3,3 of arange: a 2x2x2 block of base + 9d + 3h + w averages to its centre."""
    x = np.arange(2 * 2 * 2 * 3 * 3, dtype=np.float32).reshape(2, 2, 2, 3, 3)
    desc = pool_desc(x.shape, (2, 2, 2), (1, 1, 1))
    y = run_pool(desc, x, device)
    n, c, h, w = np.meshgrid(range(2), range(2), range(2), range(2), indexing="ij")
    expected = 18 * (2 * n + c) + 4.5 + 3 * (h + 0.5) + (w + 0.5)
    np.testing.assert_array_equal(y[:, :, 0], expected.astype(np.float32))


@pytest.mark.parametrize("include_padding", [True, False])
def test_5d_with_start_padding(device: dmlpy.Device, include_padding: bool) -> None:
    """Ones 2x2x2, window 2x2x2, start padding 1: with padding counted, a window averages (real taps) / 8."""
    x = np.ones((1, 1, 2, 2, 2), dtype=np.float32)
    desc = pool_desc(x.shape, (2, 2, 2), (1, 1, 1), (1, 1, 1), (0, 0, 0), include_padding=include_padding)
    y = run_pool(desc, x, device)
    real = np.array([1, 2])  # taps on the input along one dim, at output 0 and 1
    expected = (
        real[:, None, None] * real[None, :, None] * real[None, None, :] / 8 if include_padding else np.ones((2, 2, 2))
    )
    np.testing.assert_array_equal(y[0, 0], expected.astype(np.float32))


def test_5d_dilated_strided(device: dmlpy.Device) -> None:
    x = np.arange(5 * 5 * 5, dtype=np.float32).reshape(1, 1, 5, 5, 5)
    desc = pool_desc(x.shape, (2, 2, 2), (2, 2, 2), dilations=(2, 2, 2))
    y = run_pool(desc, x, device)
    # extent 3, stride 2 -> 2 per dim; the taps of output (a,b,c) are x[2a+{0,2}, 2b+{0,2}, 2c+{0,2}]: the mean is x at 2a+1, ...
    a, b, c = np.meshgrid(range(2), range(2), range(2), indexing="ij")
    expected = 25 * (2 * a + 1) + 5 * (2 * b + 1) + (2 * c + 1)
    np.testing.assert_array_equal(y[0, 0], expected.astype(np.float32))


@pytest.mark.doc_example
def test_fp16_directml_doc_layout_example(device: dmlpy.Device) -> None:
    x = np.arange(16, dtype=np.float16).reshape(1, 1, 4, 4)
    y = run_pool(pool_desc((1, 1, 4, 4), (2, 2), (2, 2), dtype=np.float16), x, device)
    assert y.dtype == np.float16
    np.testing.assert_array_equal(y, np.array([[2.5, 4.5], [10.5, 12.5]], dtype=np.float16)[None, None])


def test_fp16_accumulates_in_fp32(device: dmlpy.Device) -> None:
    """[2048, 1, 1] averages to 2050/3 = 683.33 -> 683.5 in binary16.

    Summing in binary16 would lose both ones (2048 + 1 rounds to 2048) and give 682.5.
    """
    x = np.array([2048, 1, 1], dtype=np.float16).reshape(1, 1, 1, 3)
    y = run_pool(pool_desc((1, 1, 1, 3), (1, 3), dtype=np.float16), x, device)
    assert y[0, 0, 0, 0] == np.float16(2050 / 3) == np.float16(683.5)


def test_fp16_include_padding_and_nan(device: dmlpy.Device) -> None:
    x = np.array([1.0, 3.0], dtype=np.float16).reshape(1, 1, 1, 2)
    with_pad = run_pool(
        pool_desc((1, 1, 1, 2), (1, 2), (1, 1), (0, 2), (0, 0), include_padding=True, dtype=np.float16), x, device
    )
    np.testing.assert_array_equal(with_pad[0, 0, 0], np.array([0.0, 0.5, 2.0], dtype=np.float16))
    without = run_pool(
        pool_desc((1, 1, 1, 2), (1, 2), (1, 1), (0, 2), (0, 0), dtype=np.float16),
        x,
        device,
        expect_warnings=[EMPTY_WINDOW],
    )
    assert np.isnan(without[0, 0, 0, 0])
    np.testing.assert_array_equal(without[0, 0, 0, 1:], np.array([1.0, 2.0], dtype=np.float16))


def test_nhwc_input_and_padded_output_give_the_doc_example(device: dmlpy.Device) -> None:
    """Layouts live in strides: NHWC input, an output with 3 spare elements per row; logical values unchanged."""
    sizes = (2, 3, 4, 4)
    x = np.arange(np.prod(sizes), dtype=np.float32).reshape(sizes)
    out_strides = padded_strides((2, 3, 2, 2), (0, 0, 1, 3))
    desc = pool_desc(sizes, (2, 2), (2, 2), in_strides=dmlpy.nhwc_strides(sizes), out_strides=out_strides)
    y = run_pool(desc, x, device)
    expected = x.reshape(2, 3, 2, 2, 2, 2).mean(axis=(3, 5))
    np.testing.assert_array_equal(y, expected)


def column_order_global_average(x: np.ndarray) -> np.ndarray:
    """Whole-plane averages {N, C, 1, ...} in the C kernels' order, one float32 step at a time: per input column
    the taps down it (D, then H, increasing), the column sums added from -0.0 in column order, then times the
    float32 reciprocal of the plane size."""
    n, c, width = x.shape[0], x.shape[1], x.shape[-1]
    columns = x.reshape(n, c, -1, width)
    inverse = np.float32(1.0 / columns.shape[2] / width)
    out = np.empty((n, c), np.float32)
    for i, j in itertools.product(range(n), range(c)):
        total = np.float32(-0.0)
        for w in range(width):
            column = columns[i, j, 0, w]
            for r in range(1, columns.shape[2]):
                column = np.float32(column + columns[i, j, r, w])
            total = np.float32(total + column)
        out[i, j] = np.float32(total * inverse)
    return out.reshape((n, c) + (1,) * (x.ndim - 2))


# Global average pooling (window = plane, no padding): the C kernel's global path takes planes of up to 64 elements,
# 16 channels per vector; larger planes go through the register path, in the same order of adds.
GLOBAL_CASES = [
    pytest.param((2, 1283, 2, 2), None, None, id="1283 channels of 2x2 (MobileNetV2's 1280 and a partial block of 3), two images"),
    pytest.param((1, 64, 8, 8), None, None, id="64 channels of 8x8, the largest plane the global path takes"),
    pytest.param((1, 40, 5, 13), None, None, id="65-element planes: beyond the global path"),
    pytest.param((1, 37, 2, 3, 4), None, None, id="5-D: 37 channels of 2x3x4"),
    pytest.param((2, 20, 3, 3), "nhwc", (60, 3, 1, 1), id="NHWC input, an output with a channel stride of 3"),
]


@pytest.mark.parametrize(("sizes", "layout", "out_strides"), GLOBAL_CASES)
@pytest.mark.parametrize("include_padding", [False, True], ids=["excluding padding", "including padding"])
def test_global_average_pooling_sums_columns_in_order(device: dmlpy.Device, rng: np.random.Generator, sizes: tuple[int, ...], layout: str | None,
                                                      out_strides: tuple[int, ...] | None, include_padding: bool) -> None:  # fmt: skip
    x = (rng.standard_normal(sizes) * 10).astype(np.float32)
    desc = pool_desc(sizes, sizes[2:], include_padding=include_padding, in_strides=dmlpy.nhwc_strides(sizes) if layout else None, out_strides=out_strides)
    y = run_pool(desc, x, device)
    expected = column_order_global_average(x)
    if device.backend_name == "native":
        np.testing.assert_array_equal(y, expected)  # the same order of adds: the same bits
    np.testing.assert_allclose(y, expected, **TOLERANCE[np.dtype(np.float32)])
    np.testing.assert_allclose(y, x.astype(np.float64).mean(axis=tuple(range(2, x.ndim)), keepdims=True), **TOLERANCE[np.dtype(np.float32)])


@pytest.mark.parametrize("axis", [0, 1], ids=["broadcast-N", "broadcast-C"])
def test_broadcast_input_stride_zero(device: dmlpy.Device, axis: int) -> None:
    """A 0 stride on N or C reads one image for every batch item or channel."""
    sizes = [2, 3, 4, 4]
    strides = list(dmlpy.packed_strides(sizes))
    strides[axis] = 0
    one = np.arange(16 * (3 if axis == 0 else 2), dtype=np.float32).reshape(
        [1 if a == axis else s for a, s in enumerate(sizes)]
    )
    x = np.broadcast_to(one, sizes)
    desc = pool_desc(sizes, (2, 2), (2, 2), in_strides=strides)
    assert desc.InputTensor.Desc.TotalTensorSizeInBytes < np.prod(sizes) * 4
    y = run_pool(desc, x, device)
    np.testing.assert_array_equal(y, x.reshape(2, 3, 2, 2, 2, 2).mean(axis=(3, 5)))


# ---------------------------------------------------------------------------------------
# A window's sum comes from its own taps only: a value outside it, however extreme, changes nothing.

# 1-D windows over x = 1..12 with one value replaced at position 4; (window, stride, start, end, dilation).
ISOLATION_WINDOWS = [
    pytest.param((3,), (1,), (1,), (1,), (1,), id="window 3 stride 1 padded"),
    pytest.param((2,), (2,), (0,), (0,), (1,), id="window 2 stride 2"),
    pytest.param((3,), (1,), (2,), (0,), (2,), id="window 3 dilation 2 padded"),
    pytest.param((12,), (1,), (11,), (11,), (1,), id="window 12 over all 12 inputs, stride 1"),
]


@pytest.mark.parametrize("special", [math.inf, -math.inf, math.nan, 1e30], ids=["inf", "-inf", "nan", "1e30"])
@pytest.mark.parametrize(("window", "strides", "start", "end", "dilations"), ISOLATION_WINDOWS)
def test_an_extreme_value_changes_only_the_windows_that_hold_it(
    device: dmlpy.Device, special: float, window: tuple[int], strides: tuple[int], start: tuple[int], end: tuple[int], dilations: tuple[int]
) -> None:
    x = np.arange(1.0, 13.0, dtype=np.float32)
    x[4] = special
    x = x.reshape(1, 1, 1, 12)
    desc = pool_desc((1, 1, 1, 12), (1, *window), (1, *strides), (0, *start), (0, *end), (1, *dilations))
    out_spatial = tuple(desc.OutputTensor.Desc.Sizes[2:])
    oracle = oracle_average_pool(x, (1, *window), (1, *strides), (0, *start), (0, *end), (1, *dilations), False, out_spatial)
    y = run_pool(desc, x, device).astype(np.float64)
    holds = np.array([any(o * strides[0] + k * dilations[0] - start[0] == 4 for k in range(window[0])) for o in range(out_spatial[1])])
    assert holds.any() and not holds.all()
    np.testing.assert_allclose(y[0, 0, 0, ~holds], oracle.output[0, 0, 0, ~holds], rtol=1e-6)
    np.testing.assert_allclose(y[0, 0, 0, holds], oracle.output[0, 0, 0, holds], rtol=1e-6)


def test_an_extreme_value_in_a_2d_window_changes_only_the_windows_that_hold_it(device: dmlpy.Device) -> None:
    x = np.arange(1.0, 37.0, dtype=np.float32).reshape(1, 1, 6, 6)
    x[0, 0, 1, 1] = math.nan
    x[0, 0, 3, 4] = 1e30
    desc = pool_desc((1, 1, 6, 6), (2, 2), (1, 1), (1, 1), (0, 0))
    oracle = oracle_average_pool(x, (2, 2), (1, 1), (1, 1), (0, 0), (1, 1), False, (6, 6)).output
    y = run_pool(desc, x, device).astype(np.float64)
    # hand-counted: the NaN at (1, 1) is in windows (1..2, 1..2), the 1e30 at (3, 4) in (3..4, 4..5)
    touched = np.zeros((6, 6), dtype=bool)
    touched[1:3, 1:3] = touched[3:5, 4:6] = True
    np.testing.assert_allclose(y[0, 0][~touched], oracle[0, 0][~touched], rtol=1e-6)
    assert np.isnan(y[0, 0, 1:3, 1:3]).all()
    np.testing.assert_allclose(y[0, 0, 3:5, 4:6], 1e30 / 4, rtol=1e-6)


# ---------------------------------------------------------------------------------------
# Extreme but valid descs: UINT-sized windows, paddings, strides and dilations with tiny tensors.
# The kernels must compute them from the taps, never by materializing the padded input
# (2^32 padding elements are 32 GiB in float64). The address space is capped while they run,
# so a kernel that tries fails with MemoryError instead of exhausting the machine.


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


BIG = 2**32 - 1  # the largest UINT


@pytest.mark.parametrize(
    ("include_padding", "expected", "warns"),
    [(True, [0.0, 2.0], []), (False, [math.nan, 2.0], [EMPTY_WINDOW])],
    ids=["include-padding", "exclude-padding"],
)
def test_huge_stride_and_start_padding(
    device: dmlpy.Device, include_padding: bool, expected: list[float], warns: list[str]
) -> None:
    """[1, 2, 3], window 1, stride 2^31, start padding 2^31 - 1: output (3 + 2^31 - 1 - 1) / 2^31 + 1 = 2.

    Output 0's tap is at -(2^31 - 1) (padding); output 1's tap is at 1 (value 2).
    """
    x = np.array([1, 2, 3], dtype=np.float32).reshape(1, 1, 1, 3)
    desc = pool_desc((1, 1, 1, 3), (1, 1), (1, 2**31), (0, 2**31 - 1), (0, 0), include_padding=include_padding)
    assert desc.OutputTensor.Desc.Sizes == (1, 1, 1, 2)
    with address_space_cap():
        y = run_pool(desc, x, device, expect_warnings=warns)
    np.testing.assert_array_equal(y[0, 0, 0], np.array(expected, dtype=np.float32))


@pytest.mark.parametrize("include_padding", [True, False], ids=["include-padding", "exclude-padding"])
def test_window_of_2_pow_32_minus_1_taps(device: dmlpy.Device, include_padding: bool) -> None:
    """[1, 2, 3], window 2^32 - 1, start padding 2^32 - 3: output 2; windows end at input 1 and 2.

    Without padding in the divisor: 3/2 and 6/3. With it, every tap lies inside the padded
    extent: 3/(2^32 - 1) and 6/(2^32 - 1). Validation must count taps in closed form, too.
    """
    x = np.array([1, 2, 3], dtype=np.float32).reshape(1, 1, 1, 3)
    desc = pool_desc((1, 1, 1, 3), (1, BIG), (1, 1), (0, BIG - 2), (0, 0), include_padding=include_padding)
    assert desc.OutputTensor.Desc.Sizes == (1, 1, 1, 2)
    expected = [3 / BIG, 6 / BIG] if include_padding else [1.5, 2.0]
    with address_space_cap():
        y = run_pool(desc, x, device)
    np.testing.assert_allclose(y[0, 0, 0], np.array(expected, dtype=np.float32), rtol=1e-6)


@pytest.mark.parametrize(
    ("include_padding", "expected"), [(True, 1.5), (False, 3.0)], ids=["include-padding", "exclude-padding"]
)
def test_dilation_of_2_pow_32_minus_1(device: dmlpy.Device, include_padding: bool, expected: float) -> None:
    """AVERAGE_POOLING1, [1, 2, 3], window 2, dilation 2^32 - 1, start padding 2^32 - 3: one output, taps at -(2^32 - 3) and 2."""
    x = np.array([1, 2, 3], dtype=np.float32).reshape(1, 1, 1, 3)
    desc = pool_desc((1, 1, 1, 3), (1, 2), (1, 1), (0, BIG - 2), (0, 0), (1, BIG), include_padding=include_padding)
    assert desc.OutputTensor.Desc.Sizes == (1, 1, 1, 1)
    with address_space_cap():
        y = run_pool(desc, x, device)
    assert y[0, 0, 0, 0] == np.float32(expected)


@pytest.mark.parametrize(
    ("include_padding", "expected", "warns"),
    [(True, [1.5, 0.0], []), (False, [1.5, math.nan], [EMPTY_WINDOW])],
    ids=["include-padding", "exclude-padding"],
)
def test_huge_end_padding_and_stride(
    device: dmlpy.Device, include_padding: bool, expected: list[float], warns: list[str]
) -> None:
    """[1, 2, 3], window 2, stride and end padding 2^32 - 1: output 2; output 1's taps are both in the end padding."""
    x = np.array([1, 2, 3], dtype=np.float32).reshape(1, 1, 1, 3)
    desc = pool_desc((1, 1, 1, 3), (1, 2), (1, BIG), (0, 0), (0, BIG), include_padding=include_padding)
    assert desc.OutputTensor.Desc.Sizes == (1, 1, 1, 2)
    with address_space_cap():
        y = run_pool(desc, x, device, expect_warnings=warns)
    np.testing.assert_array_equal(y[0, 0, 0], np.array(expected, dtype=np.float32))


def test_validating_a_huge_window_without_include_padding_is_fast() -> None:
    """The empty-window check counts taps in closed form: a 2^32 - 1 tap window validates in well under a second."""
    desc = pool_desc((1, 1, 1, 3), (1, BIG), (1, 1), (0, BIG - 2), (0, 0), include_padding=False)
    started = time.perf_counter()
    report = dmlpy.validate(desc)
    assert report.ok, str(report)
    assert time.perf_counter() - started < 1.0


# ---------------------------------------------------------------------------------------
# onnxruntime as an oracle


@functools.lru_cache(maxsize=1)
def _ort() -> tuple[object, object]:
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    return onnx, ort


def onnxruntime_average_pool(
    x: np.ndarray,
    window: Sequence[int],
    strides: Sequence[int],
    start: Sequence[int],
    end: Sequence[int],
    dilations: Sequence[int],
    include_padding: bool,
    ceil_mode: bool,
) -> np.ndarray:
    """ONNX AveragePool (opset 19; opset 22 when dilated) on onnxruntime's CPU provider."""
    onnx, ort = _ort()
    helper, tensor_proto = onnx.helper, onnx.TensorProto  # type: ignore[attr-defined]
    elem = tensor_proto.FLOAT16 if x.dtype == np.float16 else tensor_proto.FLOAT
    dilated = any(d != 1 for d in dilations)
    attrs: dict[str, object] = {
        "kernel_shape": list(window),
        "strides": list(strides),
        "pads": [*start, *end],
        "count_include_pad": int(include_padding),
        "ceil_mode": int(ceil_mode),
    }
    if dilated:
        attrs["dilations"] = list(dilations)
    node = helper.make_node("AveragePool", ["X"], ["Y"], **attrs)
    graph = helper.make_graph(
        [node],
        "pool",
        [helper.make_tensor_value_info("X", elem, list(x.shape))],
        [helper.make_tensor_value_info("Y", elem, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22 if dilated else 19)])
    model.ir_version = 10
    options = ort.SessionOptions()  # type: ignore[attr-defined]
    options.log_severity_level = 3
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])  # type: ignore[attr-defined]
    return session.run(None, {"X": np.ascontiguousarray(x)})[0]  # type: ignore[no-any-return]


def onnx_comparable(case: PoolCase, oracle: OracleResult) -> np.ndarray | None:
    """Output positions where ONNX AveragePool's semantics coincide with DirectML's, or None for none.

    * onnxruntime rejects pads >= kernel_shape (DirectML allows them): no comparison.
    * count_include_pad=1 with a ceil-mode window that overhangs the padded input: the ONNX
      reference (op_pool_common.py) pads the overhang and divides by the full window, docs/deviations.md
      counts only taps inside the padded extent, so those positions are left out.
      (onnxruntime's CPU kernel happens to follow PyTorch's rule, as dmlpy does, but the ONNX
      spec does not promise it.)
    * A window wholly in padding with count_include_pad=0 is 0/0; ONNX leaves it undefined.
    """
    if any(p >= w for p, w in zip(case.start + case.end, case.window + case.window, strict=True)):
        return None
    mask = oracle.real_taps > 0
    if case.include_padding:
        mask &= ~oracle.overhangs
    return mask


# ---------------------------------------------------------------------------------------
# Property tests


@dataclass(frozen=True)
class PoolCase:
    in_sizes: tuple[int, ...]
    window: tuple[int, ...]
    strides: tuple[int, ...]
    start: tuple[int, ...]
    end: tuple[int, ...]
    dilations: tuple[int, ...] | None  # None: AVERAGE_POOLING, else AVERAGE_POOLING1
    include_padding: bool
    ceil_mode: bool
    dtype: str
    in_layout: str  # packed, nhwc, broadcast-n, broadcast-c, padded
    out_layout: str  # packed, nhwc, padded
    seed: int

    @property
    def spatial(self) -> int:
        return len(self.window)

    @property
    def dils(self) -> tuple[int, ...]:
        return self.dilations or (1,) * self.spatial

    @property
    def out_sizes(self) -> tuple[int, ...]:
        return dmlpy.average_pooling_output_sizes(
            self.in_sizes, self.window, self.strides, self.start, self.end, self.dils, ceil_mode=self.ceil_mode
        )

    @property
    def floor_sizes(self) -> tuple[int, ...]:
        return dmlpy.average_pooling_output_sizes(
            self.in_sizes, self.window, self.strides, self.start, self.end, self.dils
        )

    def strides_for(self, layout: str, sizes: tuple[int, ...]) -> tuple[int, ...] | None:
        if layout == "packed":
            return None
        if layout == "nhwc":
            return dmlpy.nhwc_strides(sizes)
        if layout in ("broadcast-n", "broadcast-c"):
            strides = list(dmlpy.packed_strides(sizes))
            strides[0 if layout == "broadcast-n" else 1] = 0
            return tuple(strides)
        extra = [(self.seed >> (3 * i)) % 3 for i in range(len(sizes))]
        extra[-1] += 1  # at least one spare element per row
        return padded_strides(sizes, extra)

    def desc(self) -> object:
        return pool_desc(
            self.in_sizes, self.window, self.strides, self.start, self.end, self.dilations,
            include_padding=self.include_padding, dtype=np.dtype(self.dtype).type,
            in_strides=self.strides_for(self.in_layout, self.in_sizes),
            out_strides=self.strides_for(self.out_layout, self.out_sizes),
            out_sizes=self.out_sizes,
        )  # fmt: skip

    def input(self) -> np.ndarray:
        rng = np.random.default_rng(self.seed)
        shape = list(self.in_sizes)
        if self.in_layout == "broadcast-n":
            shape[0] = 1
        if self.in_layout == "broadcast-c":
            shape[1] = 1
        one = rng.uniform(-4, 4, size=shape).astype(self.dtype)
        return np.ascontiguousarray(np.broadcast_to(one, self.in_sizes))


@st.composite
def pool_cases(
    draw: st.DrawFn,
    rank: int,
    dtype: str,
    *,
    dilated: bool | None = None,
    ceil_mode: bool | None = None,
    include_padding: bool | None = None,
) -> PoolCase:
    spatial = rank - 2
    use_dilations = draw(st.booleans()) if dilated is None else dilated
    # Mostly padding below the window, as ONNX requires (so onnxruntime can judge the case);
    # sometimes any padding, which DirectML allows (windows wholly in padding, NaN).
    padding_below_window = draw(st.integers(0, 3)) > 0
    window, strides, start, end, dilations, in_spatial = [], [], [], [], [], []
    for _ in range(spatial):
        w = draw(st.integers(1, 3))
        d = draw(st.integers(1, 3)) if use_dilations else 1
        s = draw(st.integers(1, 3))
        max_padding = w - 1 if padding_below_window else 2
        sp = draw(st.integers(0, max_padding))
        ep = draw(st.integers(0, max_padding))
        low = max(1, (w - 1) * d + 1 - sp - ep)  # the dilated window fits the padded input
        in_spatial.append(draw(st.integers(low, low + (5 if spatial == 2 else 3))))
        window.append(w)
        strides.append(s)
        start.append(sp)
        end.append(ep)
        dilations.append(d)
    n = draw(st.integers(1, 2))
    c = draw(st.integers(1, 3))
    return PoolCase(
        in_sizes=(n, c, *in_spatial),
        window=tuple(window),
        strides=tuple(strides),
        start=tuple(start),
        end=tuple(end),
        dilations=tuple(dilations) if use_dilations else None,
        include_padding=draw(st.booleans()) if include_padding is None else include_padding,
        ceil_mode=draw(st.booleans()) if ceil_mode is None else ceil_mode,
        dtype=dtype,
        in_layout=draw(st.sampled_from(["packed", "nhwc", "broadcast-n", "broadcast-c", "padded"])),
        out_layout=draw(st.sampled_from(["packed", "nhwc", "padded"])),
        seed=draw(st.integers(0, 2**32 - 1)),
    )


def _oracle(case: PoolCase, x: np.ndarray) -> OracleResult:
    return oracle_average_pool(
        x, case.window, case.strides, case.start, case.end, case.dils, case.include_padding, case.out_sizes[2:]
    )


@functools.lru_cache(maxsize=1024)
def _onnxruntime_for(case: PoolCase) -> np.ndarray:
    """Cached per case: the native and numpy parametrizations draw the same derandomized cases."""
    ceil = case.out_sizes != case.floor_sizes  # ceil_mode only where dmlpy produced the ceil shape
    return onnxruntime_average_pool(
        case.input(), case.window, case.strides, case.start, case.end, case.dils, case.include_padding, ceil
    )


def _expected_warnings(case: PoolCase, oracle: OracleResult) -> list[str]:
    expected = []
    if case.out_sizes != case.floor_sizes:
        expected.append(CEIL_OUTPUT)
    if not case.include_padding and (oracle.real_taps == 0).any():
        expected.append(EMPTY_WINDOW)
    return expected


def check_case(backend: str, case: PoolCase, *, against_onnx: bool = True) -> None:
    """The backend against the oracle and onnxruntime; native also against NumPy."""
    x = case.input()
    oracle = _oracle(case, x)
    tolerance = TOLERANCE[np.dtype(case.dtype)]
    expected_warnings = _expected_warnings(case, oracle)
    y = run_pool(case.desc(), x, dmlpy.create_device(backend=backend), expected_warnings)
    assert y.shape == case.out_sizes and y.dtype == np.dtype(case.dtype)
    np.testing.assert_allclose(
        y.astype(np.float64), oracle.output, equal_nan=True, err_msg=f"{backend} vs the oracle: {case}", **tolerance
    )

    if backend == "native":
        y_numpy = run_pool(case.desc(), x, dmlpy.create_device(backend="numpy"), expected_warnings)
        np.testing.assert_allclose(
            y.astype(np.float64),
            y_numpy.astype(np.float64),
            equal_nan=True,
            err_msg=f"native vs numpy: {case}",
            **tolerance,
        )

    mask = onnx_comparable(case, oracle) if against_onnx else None
    if mask is not None and mask.any():
        y_ort = _onnxruntime_for(case)
        assert y_ort.shape == case.out_sizes, f"onnxruntime's shape {y_ort.shape} differs from {case.out_sizes}: {case}"
        full_mask = np.broadcast_to(mask, y.shape)
        np.testing.assert_allclose(
            y.astype(np.float64)[full_mask],
            y_ort.astype(np.float64)[full_mask],
            err_msg=f"{backend} vs onnxruntime: {case}",
            **tolerance,
        )


# Generated cases per property test (per backend): 320 in all.
EXAMPLES = {"4d-fp32": 120, "5d-fp32": 60, "4d-fp16": 70, "5d-fp16": 30, "dilated-ceil": 40}

PROPERTY = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)


@settings(PROPERTY, max_examples=EXAMPLES["4d-fp32"])
@given(case=pool_cases(rank=4, dtype="float32"))
def test_property_4d_fp32(backend: str, case: PoolCase) -> None:
    check_case(backend, case)


@settings(PROPERTY, max_examples=EXAMPLES["5d-fp32"])
@given(case=pool_cases(rank=5, dtype="float32"))
def test_property_5d_fp32(backend: str, case: PoolCase) -> None:
    check_case(backend, case)


@settings(PROPERTY, max_examples=EXAMPLES["4d-fp16"])
@given(case=pool_cases(rank=4, dtype="float16"))
def test_property_4d_fp16(backend: str, case: PoolCase) -> None:
    check_case(backend, case)


@settings(PROPERTY, max_examples=EXAMPLES["5d-fp16"])
@given(case=pool_cases(rank=5, dtype="float16"))
def test_property_5d_fp16(backend: str, case: PoolCase) -> None:
    check_case(backend, case)


@settings(PROPERTY, max_examples=EXAMPLES["dilated-ceil"])
@given(case=pool_cases(rank=4, dtype="float32", dilated=True, ceil_mode=True, include_padding=True))
def test_property_dilated_ceil_include_padding_where_onnx_differs(backend: str, case: PoolCase) -> None:
    """The overhanging ceil-mode windows with IncludePadding TRUE: the oracle judges them; ONNX only elsewhere."""
    check_case(backend, case)


def test_property_tests_generate_at_least_300_cases() -> None:
    """The floor on generated cases (per backend) that the test plan promises."""
    assert sum(EXAMPLES.values()) >= 300


def test_native_and_numpy_agree_on_a_large_random_case(rng: np.random.Generator) -> None:
    """One bigger case than the property tests draw, to exercise the native kernel's threaded paths."""
    native = native_device()
    sizes = (3, 17, 31, 29)
    x = rng.uniform(-1, 1, size=sizes).astype(np.float32)
    for in_strides in (None, dmlpy.nhwc_strides(sizes)):
        desc = pool_desc(
            sizes, (3, 4), (2, 3), (1, 2), (2, 1), (2, 1), include_padding=True, in_strides=in_strides, ceil_mode=True
        )
        expect = (
            [CEIL_OUTPUT]
            if desc.OutputTensor.Desc.Sizes
            != dmlpy.average_pooling_output_sizes(sizes, (3, 4), (2, 3), (1, 2), (2, 1), (2, 1))
            else []
        )
        y_native = run_pool(desc, x, native, expect)
        y_numpy = run_pool(desc, x, dmlpy.create_device(backend="numpy"), expect)
        np.testing.assert_allclose(y_native, y_numpy, rtol=1e-5, atol=1e-6)
        assert math.isfinite(float(np.abs(y_native).max()))


# ---------------------------------------------------------------------------------------
# Thread counts around the one-thread threshold (dmlpy_choose_threads in parallel.c: below about
# 2^19 work units one thread runs; 1x32x56x56 k2 s2 is below it, 1x64x56x56 above).


def block_mean_2x2(x: np.ndarray) -> np.ndarray:
    """2x2 stride-2 average pooling without padding as a reshape and a float64 mean (rows and columns past
    the last whole window dropped): another formulation than the tap-loop oracle and than either backend."""
    n, c, h, w = x.shape
    blocks = x[:, :, : h // 2 * 2, : w // 2 * 2].astype(np.float64).reshape(n, c, h // 2, 2, w // 2, 2)
    return blocks.mean(axis=(3, 5))


@pytest.mark.parametrize("threads", [1, 2, 0], ids=["one thread", "two threads", "every core"])
@pytest.mark.parametrize(
    ("sizes", "layout", "dtype"),
    [
        pytest.param((1, 1, 2, 2), "packed", np.float32, id="a single window"),
        pytest.param((1, 3, 7, 9), "packed", np.float32, id="odd sizes drop the last row and column"),
        pytest.param((1, 8, 56, 56), "packed", np.float32, id="1x8x56x56, well below the threshold"),
        pytest.param((1, 32, 56, 56), "packed", np.float32, id="1x32x56x56, just below the threshold"),
        pytest.param((1, 64, 56, 56), "packed", np.float32, id="1x64x56x56, just above the threshold"),
        pytest.param((1, 256, 56, 56), "packed", np.float32, id="1x256x56x56, well above the threshold"),
        pytest.param((1, 256, 56, 56), "packed", np.float16, id="1x256x56x56 float16"),
        pytest.param((2, 96, 30, 30), "nhwc", np.float32, id="NHWC layout (channel path)"),
        pytest.param((1, 160, 40, 40), "padded", np.float32, id="padded row and plane strides"),
    ],
)
def test_2x2_stride_2_pooling_is_right_at_every_thread_count(
    backend: str, rng: np.random.Generator, sizes: tuple[int, ...], layout: str, dtype: type, threads: int
) -> None:
    """Small problems run on one thread and larger ones on more: both give the block means, and the native
    kernel's bits do not depend on the thread count."""
    in_strides = {"packed": None, "nhwc": dmlpy.nhwc_strides(sizes), "padded": padded_strides(sizes, (0, 1, 2, 5))}[layout]
    desc = pool_desc(sizes, (2, 2), (2, 2), dtype=dtype, in_strides=in_strides)
    x = rng.uniform(-1, 1, size=sizes).astype(dtype)
    got = run_pool(desc, x, dmlpy.create_device(backend=backend, threads=threads))
    np.testing.assert_allclose(got.astype(np.float64), block_mean_2x2(x), **TOLERANCE[np.dtype(dtype)])
    if backend == "native" and threads != 1:
        np.testing.assert_array_equal(got, run_pool(desc, x, native_device(threads=1)))
