"""Output layouts that map two logical indices to one element (docs/deviations.md, TENSOR.OUTPUT_OVERLAP).

DirectML's DML_BUFFER_TENSOR_DESC page says strides express broadcasting and padding and says nothing of
outputs whose elements overlap, so the desc stays valid with a warning, and dmlpy defines the result: the
outputs are written in row-major logical order, the last index wins, on both backends and whatever the
thread count. In place, every value is computed from the unmodified input. Expected values come from
plain loops over the indices (or are hand-computed in the ids), never from dmlpy's own kernels.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from conftest import assert_rule, rule_ids

import dmlpy
from dmlpy import D3D12_RESOURCE_BARRIER
from dmlpy import (
    DML_ACTIVATION_LINEAR_OPERATOR_DESC,
    DML_AVERAGE_POOLING_OPERATOR_DESC,
    DML_CONVOLUTION_OPERATOR_DESC,
    DML_SPACE_TO_DEPTH_OPERATOR_DESC,
    buffer_binding,
    buffer_tensor,
)
from dmlpy.tensor import layout_overlap

OVERLAP = "TENSOR.OUTPUT_OVERLAP"


def offsets_of(sizes: Sequence[int], strides: Sequence[int]) -> np.ndarray:
    """Element offset of every logical index, in row-major order, by a plain loop."""
    return np.array([sum(i * s for i, s in zip(index, strides, strict=True)) for index in itertools.product(*(range(n) for n in sizes))], dtype=np.int64)


# ---------------------------------------------------------------------------------------
# The predicate: exact, whatever the strides


def test_layout_overlap_agrees_with_counting_distinct_offsets(rng: np.random.Generator) -> None:
    for _ in range(4000):
        rank = int(rng.integers(1, 5))
        sizes = [int(n) for n in rng.integers(1, 5, rank)]
        strides = [int(s) for s in rng.integers(0, 13, rank)]
        offsets = offsets_of(sizes, strides)
        one_to_one = np.unique(offsets).size == offsets.size
        assert (layout_overlap(sizes, strides) is None) == one_to_one, (sizes, strides)


@pytest.mark.parametrize(
    ("sizes", "strides", "one_to_one"),
    [
        pytest.param((2, 2), (0, 1), False, id="a zero stride over two indices overlaps"),
        pytest.param((1, 64, 62, 62), (0, 1, 62, 1), False, id="C and W both of stride 1 overlap without a zero stride over a size above 1"),
        pytest.param((2, 3), (2, 1), False, id="rows of 3 two apart overlap: (0, 2) and (1, 0) share element 2"),
        pytest.param((2, 2), (3, 2), True, id="strides 3 and 2 over 2 x 2 reach 0, 2, 3, 5: one-to-one without nesting"),
        pytest.param((3, 5), (4, 3), True, id="strides 4 and 3 over 3 x 5 reach 15 distinct elements"),
        pytest.param((1000, 1000), (1001, 999), True, id="coprime strides 1001 and 999 over 1000 x 1000 never meet"),
        pytest.param((2, 1, 3), (0, 0, 1), False, id="a zero stride on a size-1 dim is harmless, on size 2 it is not"),
        pytest.param((1, 1, 3), (0, 0, 1), True, id="zero strides on size-1 dims only"),
    ],
)
def test_layout_overlap_decides_hand_checked_layouts(sizes: tuple[int, ...], strides: tuple[int, ...], one_to_one: bool) -> None:
    assert (layout_overlap(sizes, strides) is None) == one_to_one


# ---------------------------------------------------------------------------------------
# Validation: a warning at the output's Strides, never an error; inputs may broadcast freely


def linear(x_sizes: Sequence[int], y_strides: Sequence[int] | None, x_strides: Sequence[int] | None = None) -> DML_ACTIVATION_LINEAR_OPERATOR_DESC:
    return DML_ACTIVATION_LINEAR_OPERATOR_DESC(buffer_tensor(np.float32, x_sizes, x_strides), buffer_tensor(np.float32, x_sizes, y_strides), 2.0, 1.0)


@pytest.mark.parametrize(
    ("sizes", "strides"),
    [
        pytest.param((2, 2), (0, 1), id="a zero stride"),
        pytest.param((1, 64, 62, 62), (0, 1, 62, 1), id="overlapping nonzero strides"),
        pytest.param((2, 3), (2, 1), id="rows closer than their length"),
    ],
)
def test_an_overlapping_output_layout_is_a_warning_at_its_strides(sizes: tuple[int, ...], strides: tuple[int, ...]) -> None:
    report = dmlpy.validate(linear(sizes, strides))
    finding = assert_rule(report, OVERLAP, path="DML_ACTIVATION_LINEAR_OPERATOR_DESC.OutputTensor.Strides")
    assert finding.severity is dmlpy.Severity.WARNING
    assert report.ok


def test_one_to_one_outputs_and_broadcast_inputs_are_not_warned() -> None:
    assert OVERLAP not in rule_ids(dmlpy.validate(linear((2, 2), (3, 2), x_strides=(0, 1))))
    assert OVERLAP not in rule_ids(dmlpy.validate(linear((2, 2), None)))


# ---------------------------------------------------------------------------------------
# In place (item: the function is applied once per element, however many indices share it)


def run_in_place(desc: Any, device: dmlpy.Device, memory: np.ndarray) -> np.ndarray:
    compiled = device.compile_operator(device.create_operator(desc))
    buffer = device.create_buffer(memory.nbytes)
    buffer.upload(memory)
    recorder, command_list = device.create_command_recorder(), device.create_command_list()
    initializer = device.create_operator_initializer([compiled])
    recorder.record_dispatch(command_list, initializer, device.create_binding_table(initializer))
    command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav()])  # the dispatch after the initializer reads what it wrote
    table = device.create_binding_table(compiled)
    table.bind_inputs([buffer_binding(buffer)])
    table.bind_outputs([buffer_binding(buffer)])
    recorder.record_dispatch(command_list, compiled, table)
    command_list.close()
    device.execute(command_list)
    return np.frombuffer(bytes(buffer.data), np.float32)[: memory.size]


@pytest.mark.parametrize(
    ("sizes", "strides", "memory", "expected"),
    [
        pytest.param((2, 2), (0, 1), [1, 2], [3, 5], id="{2,2} strides {0,1} over [1, 2]: 2x + 1 once gives [3, 5]"),
        pytest.param((2, 3), (2, 1), [1, 2, 3, 4, 5], [3, 5, 7, 9, 11], id="{2,3} strides {2,1} share element 2: [1..5] -> [3, 5, 7, 9, 11]"),
        pytest.param((3, 2, 2), (0, 0, 1), [1, 2], [3, 5], id="six indices per element, strides {0,0,1}: [3, 5]"),
    ],
)
def test_an_in_place_activation_applies_the_function_once_to_each_shared_element(
    device: dmlpy.Device, sizes: tuple[int, ...], strides: tuple[int, ...], memory: list[float], expected: list[float]
) -> None:
    tensor = buffer_tensor(np.float32, sizes, strides)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", dmlpy.DmlWarning)
        result = run_in_place(DML_ACTIVATION_LINEAR_OPERATOR_DESC(tensor, tensor, 2.0, 1.0), device, np.array(memory, np.float32))
    assert any(isinstance(w.message, dmlpy.DmlWarning) and w.message.finding.rule == OVERLAP for w in caught)
    np.testing.assert_array_equal(result, expected)


# ---------------------------------------------------------------------------------------
# Overlapping outputs of every kernel: the last index in row-major order wins, run after run

OUT_SIZES, OUT_STRIDES = (1, 64, 62, 62), (0, 1, 62, 1)


def last_index_wins(values: np.ndarray, sizes: Sequence[int], strides: Sequence[int]) -> np.ndarray:
    """What a sequential loop over the indices in row-major order leaves in memory, read back through the strides."""
    offsets = offsets_of(sizes, strides)
    memory = np.full(int(offsets.max()) + 1, np.nan)
    for offset, value in zip(offsets.tolist(), values.ravel().tolist(), strict=True):
        memory[offset] = value
    return memory[offsets].reshape(sizes)


def pooling_case(rng: np.random.Generator) -> tuple[Any, dict[str, np.ndarray], np.ndarray]:
    x = rng.standard_normal((1, 64, 63, 63)).astype(np.float32)
    desc = DML_AVERAGE_POOLING_OPERATOR_DESC(buffer_tensor(np.float32, x.shape), buffer_tensor(np.float32, OUT_SIZES, OUT_STRIDES), 2, (1, 1), (2, 2), (0, 0), (0, 0), False)
    x64 = x.astype(np.float64)
    logical = (x64[:, :, :-1, :-1] + x64[:, :, 1:, :-1] + x64[:, :, :-1, 1:] + x64[:, :, 1:, 1:]) / 4  # 2x2 windows, stride 1
    return desc, {"InputTensor": x}, logical


def convolution_case(rng: np.random.Generator) -> tuple[Any, dict[str, np.ndarray], np.ndarray]:
    x = rng.standard_normal((1, 8, 62, 62)).astype(np.float32)
    w = rng.standard_normal((64, 8, 1, 1)).astype(np.float32)
    desc = DML_CONVOLUTION_OPERATOR_DESC(
        buffer_tensor(np.float32, x.shape), buffer_tensor(np.float32, w.shape), None, buffer_tensor(np.float32, OUT_SIZES, OUT_STRIDES),
        dmlpy.DML_CONVOLUTION_MODE_CROSS_CORRELATION, dmlpy.DML_CONVOLUTION_DIRECTION_FORWARD, 2, (1, 1), (1, 1), (0, 0), (0, 0), (0, 0), 1, None,
    )  # fmt: skip
    logical = np.einsum("nchw,oc->nohw", x.astype(np.float64), w[:, :, 0, 0].astype(np.float64))  # 1x1: a channel mix per pixel
    return desc, {"InputTensor": x, "FilterTensor": w}, logical


def activation_case(rng: np.random.Generator) -> tuple[Any, dict[str, np.ndarray], np.ndarray]:
    x = rng.standard_normal(OUT_SIZES).astype(np.float32)
    desc = DML_ACTIVATION_LINEAR_OPERATOR_DESC(buffer_tensor(np.float32, OUT_SIZES), buffer_tensor(np.float32, OUT_SIZES, OUT_STRIDES), 2.0, 1.0)
    return desc, {"InputTensor": x}, 2.0 * x.astype(np.float64) + 1.0


def space_to_depth_case(rng: np.random.Generator) -> tuple[Any, dict[str, np.ndarray], np.ndarray]:
    x = rng.standard_normal((1, 16, 124, 124)).astype(np.float32)
    desc = DML_SPACE_TO_DEPTH_OPERATOR_DESC(buffer_tensor(np.float32, x.shape), buffer_tensor(np.float32, OUT_SIZES, OUT_STRIDES), 2)
    logical = np.empty(OUT_SIZES)
    for by, bx, c in itertools.product(range(2), range(2), range(16)):  # DCR: channel (by * B + bx) * C + c
        logical[:, (by * 2 + bx) * 16 + c] = x[:, c, by::2, bx::2]
    return desc, {"InputTensor": x}, logical


@pytest.mark.parametrize("case", [pooling_case, convolution_case, activation_case, space_to_depth_case], ids=["average pooling", "convolution", "activation", "space-to-depth"])
def test_an_overlapping_output_keeps_the_last_index_in_row_major_order_on_every_run(
    device: dmlpy.Device, rng: np.random.Generator, case: Callable[[np.random.Generator], tuple[Any, dict[str, np.ndarray], np.ndarray]]
) -> None:
    desc, inputs, logical = case(rng)
    expected = last_index_wins(logical, OUT_SIZES, OUT_STRIDES)
    runs = []
    for _ in range(5):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", dmlpy.DmlWarning)
            runs.append(dmlpy.run(desc, device=device, **inputs))
        assert [w.message.finding.rule for w in caught if isinstance(w.message, dmlpy.DmlWarning)] == [OVERLAP]
    for y in runs:
        np.testing.assert_array_equal(y, runs[0])
    np.testing.assert_allclose(runs[0], expected, rtol=1e-5, atol=1e-5)
