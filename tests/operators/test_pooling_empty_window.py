"""POOLING.EMPTY_WINDOW in closed form: the same outputs as a tap-by-tap search, at a cost that does not grow with the tensor.

The oracle walks every tap of every output (taps of output o at o * s - start + k * d, k < w)
and asks whether one lands on the input [0, size): the definition, written as plainly as it
can be. The geometries are random and small, with dilations both below and above the input
size (above it, empty windows can sit between non-empty ones).
"""

from __future__ import annotations

import random
import time

import pytest
from conftest import assert_rule

import dmlpy
from dmlpy import DML_AVERAGE_POOLING1_OPERATOR_DESC, DML_AVERAGE_POOLING_OPERATOR_DESC, DML_TENSOR_DATA_TYPE, buffer_tensor
from dmlpy.operators.pooling import _floor_sum, empty_window_count, empty_window_positions, pooled_size

DT = DML_TENSOR_DATA_TYPE
PATH = "DML_AVERAGE_POOLING1_OPERATOR_DESC.OutputTensor.Sizes"


def empty_by_search(out: int, size: int, window: int, stride: int, start: int, dilation: int) -> list[int]:
    return [o for o in range(out) if not any(0 <= o * stride - start + k * dilation < size for k in range(window))]


def test_floor_sum_equals_the_plain_sum_of_floors() -> None:
    rng = random.Random(11)
    for _ in range(5000):
        n, m, a, b = rng.randint(0, 40), rng.randint(1, 30), rng.randint(0, 60), rng.randint(-90, 90)
        assert _floor_sum(n, m, a, b) == sum((a * i + b) // m for i in range(n)), (n, m, a, b)
    assert _floor_sum(10**5, 2**32 - 1, 2**31 + 7, -(2**40)) == sum((i * (2**31 + 7) - 2**40) // (2**32 - 1) for i in range(10**5))


def test_empty_window_count_and_positions_match_a_tap_by_tap_search_on_random_geometries() -> None:
    rng = random.Random(20261124)
    with_middle_gaps = 0
    for _ in range(6000):
        size, window, stride, start, dilation = rng.randint(1, 9), rng.randint(1, 6), rng.randint(1, 5), rng.randint(0, 14), rng.randint(1, 13)
        out = rng.randint(0, 30)
        expected = empty_by_search(out, size, window, stride, start, dilation)
        assert empty_window_count(out, size, window, stride, start, dilation) == len(expected), (size, window, stride, start, dilation, out)
        assert empty_window_positions(out, size, window, stride, start, dilation, 8) == expected[:8], (size, window, stride, start, dilation, out)
        non_empty = [o for o in range(out) if o not in expected]
        with_middle_gaps += bool(non_empty) and any(non_empty[0] < o < non_empty[-1] for o in expected)
    assert with_middle_gaps > 500  # the sample reaches the case where dilation steps over the input


def test_validate_reports_every_empty_window_of_random_descs_as_a_search_finds_them() -> None:
    rng = random.Random(7)
    checked = 0
    while checked < 300:
        sizes, window, strides, start, end, dilations = ([rng.randint(lo, hi) for _ in range(2)] for lo, hi in ((1, 6), (1, 4), (1, 3), (0, 6), (0, 6), (1, 7)))
        out = [pooled_size(*args) for args in zip(sizes, window, strides, start, end, dilations, strict=True)]
        if min(out) < 1:
            continue
        checked += 1
        desc = DML_AVERAGE_POOLING1_OPERATOR_DESC(buffer_tensor(DT.FLOAT32, [1, 1, *sizes]), buffer_tensor(DT.FLOAT32, [1, 1, *out]), 2, strides, window, start, end, dilations, False)
        findings = {f.path: f.actual for f in dmlpy.validate(desc).findings if f.rule == "POOLING.EMPTY_WINDOW"}
        for i in range(2):
            expected = empty_by_search(out[i], sizes[i], window[i], strides[i], start[i], dilations[i])
            assert findings.get(f"{PATH}[{i + 2}]", []) == expected[:8]


def test_empty_windows_between_non_empty_ones_are_reported_when_dilation_exceeds_the_input() -> None:
    # size 2, window 2, dilation 5, stride 1, start 5: output o has taps o - 5 and o; on the input
    # [0, 2) are o = 0, 1 (tap o) and o = 5, 6 (tap o - 5): outputs 2, 3, 4 are empty
    desc = DML_AVERAGE_POOLING1_OPERATOR_DESC(buffer_tensor(DT.FLOAT32, [1, 1, 1, 2]), buffer_tensor(DT.FLOAT32, [1, 1, 1, 7]), 2,
                                              [1, 1], [1, 2], [0, 5], [0, 5], [1, 5], False)  # fmt: skip
    finding = assert_rule(dmlpy.validate(desc), "POOLING.EMPTY_WINDOW", path=f"{PATH}[3]")
    assert finding.actual == [2, 3, 4]


@pytest.mark.parametrize(
    "sizes",
    [pytest.param([1, 4_000_000], id="4 million outputs along one dim"), pytest.param([2000, 2000], id="4 million outputs as 2000 x 2000")],
)
def test_validating_four_million_outputs_without_include_padding_takes_well_under_a_tenth_of_a_second(sizes: list[int]) -> None:
    desc = DML_AVERAGE_POOLING_OPERATOR_DESC(buffer_tensor(DT.FLOAT32, [1, 1, *sizes]), buffer_tensor(DT.FLOAT32, [1, 1, *sizes]), 2,
                                             [1, 1], [3, 3], [1, 1], [1, 1], False)  # fmt: skip
    best = min(_timed(desc) for _ in range(3))
    assert best < 0.05, f"validate took {best:.3f} s"


def _timed(desc: object) -> float:
    start = time.perf_counter()
    report = dmlpy.validate(desc)
    elapsed = time.perf_counter() - start
    assert report.ok and not report.findings
    return elapsed
