"""Fuzzing the whole pipeline with space/depth descriptors and nonsense bindings, on both backends.

The same harness and the same guarantees as tests/test_fuzz.py (whose case runner, guards,
limits and generic tensor, binding and step mutations this file reuses): each case starts
from a valid SPACE_TO_DEPTH(1) or DEPTH_TO_SPACE(1) desc of any data type, order, block size
and layout, applies zero to three random mutations, and goes through ``dmlpy.validate``,
``create_operator``, compile, an initializer, the Bind* calls, RecordDispatch and execute on a
fresh device. Whatever happened:

* only ``dmlpy.DmlError``, ``TypeError`` or ``ValueError`` come out;
* no byte outside a bound output range changes (sentinel-filled guard bytes around every
  input and output range), and inputs are never written;
* ``validate`` and ``create_operator`` agree; every DmlError names registered rules; a Bind*
  or RecordDispatch error removes the device;
* an unmutated case runs without error.

The space/depth mutations add nonsense BlockSize and Order values, block sizes that break or
keep the size relations, swapped directions and type tags, and extreme but valid descs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import test_fuzz as base  # the shared harness (tests/ is on sys.path, as for conftest)

import dmlpy
from dmlpy import (
    DML_DEPTH_SPACE_ORDER,
    DML_DEPTH_TO_SPACE1_OPERATOR_DESC,
    DML_DEPTH_TO_SPACE_OPERATOR_DESC,
    DML_OPERATOR_DESC,
    DML_OPERATOR_TYPE,
    DML_SPACE_TO_DEPTH1_OPERATOR_DESC,
    DML_SPACE_TO_DEPTH_OPERATOR_DESC,
)

SEED = 0x5D_F022
BATCHES = 6
CASES_PER_BATCH = 100  # per backend: 600 cases
TYPES = [
    np.float32,
    np.float16,
    np.float64,
    np.uint8,
    np.int8,
    np.uint16,
    np.int16,
    np.uint32,
    np.int32,
    np.uint64,
    np.int64,
]
Plan = base.Plan
pick = base.pick


def valid_case(rng: np.random.Generator) -> Plan:
    """A valid space/depth desc: any type, direction, order, block size 1-4, small tensors, any layout."""
    to_depth = bool(rng.integers(0, 2))
    block = int(rng.integers(1, 5))
    n, c, h, w = (int(rng.integers(1, 3)), int(rng.integers(1, 4)), int(rng.integers(1, 4)), int(rng.integers(1, 5)))
    in_sizes = (n, c, h * block, w * block) if to_depth else (n, c * block * block, h, w)
    out_sizes = (n, c * block * block, h, w) if to_depth else (n, c, h * block, w * block)
    dtype = TYPES[int(rng.integers(0, len(TYPES)))]
    x = dmlpy.buffer_tensor(dtype, in_sizes, base._layout(rng, in_sizes, allow_broadcast=True))
    y = dmlpy.buffer_tensor(dtype, out_sizes, base._layout(rng, out_sizes, allow_broadcast=False))
    if rng.integers(0, 2):
        cls1 = DML_SPACE_TO_DEPTH1_OPERATOR_DESC if to_depth else DML_DEPTH_TO_SPACE1_OPERATOR_DESC
        desc: Any = cls1(x, y, block, DML_DEPTH_SPACE_ORDER(int(rng.integers(0, 2))))
    else:
        cls = DML_SPACE_TO_DEPTH_OPERATOR_DESC if to_depth else DML_DEPTH_TO_SPACE_OPERATOR_DESC
        desc = cls(x, y, block)
    if rng.integers(0, 4) == 0:
        desc = dmlpy.operator_desc(desc)
    plan = Plan(desc)
    plan.in_guard = int(rng.choice([0, 16, 32, 64]))
    plan.out_guard = int(rng.choice([16, 32, 64]))
    return plan


# ---------------------------------------------------------------------------------------
# Space/depth mutations


def m_block_size(plan: Plan, rng: np.random.Generator) -> str:
    desc = base.inner_desc(plan)
    if not hasattr(desc, "BlockSize"):
        return "block size: no such field"
    desc.BlockSize = pick(rng, [0, 1, 2, 3, 4, 5, 8, 2**16, 2**16 + 1, 2**31, 2**32 - 1, *base.UINT_NONSENSE])
    return f"BlockSize = {desc.BlockSize!r}"


def m_order(plan: Plan, rng: np.random.Generator) -> str:
    desc = base.inner_desc(plan)
    value = pick(
        rng,
        [
            0,
            1,
            2,
            3,
            2**31,
            2**32 - 1,
            2**32,
            -1,
            "DEPTH_COLUMN_ROW",
            "COLUMN_ROW_DEPTH",
            "DCR",
            None,
            1.0,
            DML_DEPTH_SPACE_ORDER.COLUMN_ROW_DEPTH,
        ],
    )
    try:
        desc.Order = value  # the plain descs have no Order: a dataclass takes the attribute but C never sees it
    except AttributeError:
        return "order: not settable"
    return f"Order = {value!r}"


def m_swap_direction(plan: Plan, rng: np.random.Generator) -> str:
    """The same tensors under the other direction's (or the other version's) struct."""
    desc = base.inner_desc(plan)
    classes = [
        DML_SPACE_TO_DEPTH_OPERATOR_DESC,
        DML_DEPTH_TO_SPACE_OPERATOR_DESC,
        DML_SPACE_TO_DEPTH1_OPERATOR_DESC,
        DML_DEPTH_TO_SPACE1_OPERATOR_DESC,
    ]
    cls = pick(rng, classes)
    fields = {
        "InputTensor": getattr(desc, "InputTensor", None),
        "OutputTensor": getattr(desc, "OutputTensor", None),
        "BlockSize": getattr(desc, "BlockSize", 2),
    }
    if rng.integers(0, 2):
        fields["InputTensor"], fields["OutputTensor"] = fields["OutputTensor"], fields["InputTensor"]
    plan.desc = cls(**fields)
    return f"now a {cls.__name__} (tensors swapped: {fields['InputTensor'] is getattr(desc, 'OutputTensor', None)})"


def m_operator_wrapper(plan: Plan, rng: np.random.Generator) -> str:
    desc = base.inner_desc(plan)
    op_type = pick(rng, [
        DML_OPERATOR_TYPE.SPACE_TO_DEPTH, DML_OPERATOR_TYPE.DEPTH_TO_SPACE, DML_OPERATOR_TYPE.SPACE_TO_DEPTH1, DML_OPERATOR_TYPE.DEPTH_TO_SPACE1,
        DML_OPERATOR_TYPE.AVERAGE_POOLING, DML_OPERATOR_TYPE.INVALID, 9999, -1, "SPACE_TO_DEPTH", None,
    ])  # fmt: skip
    inner = pick(rng, [desc, desc, None, "desc", DML_OPERATOR_DESC(DML_OPERATOR_TYPE.SPACE_TO_DEPTH, desc)])
    plan.desc = pick(
        rng, [DML_OPERATOR_DESC(op_type, inner), DML_OPERATOR_DESC(op_type, inner), "not a desc", None, desc.__class__]
    )
    return f"wrapped: {plan.desc!r}"[:200]


def m_extreme_valid(plan: Plan, rng: np.random.Generator) -> str:
    """A valid desc at an edge: one block as big as the image (B = H = W up to 64), or B = 1 on odd sizes."""
    desc = base.inner_desc(plan)
    x_buf = base.tensor_buffer(getattr(desc, "InputTensor", None))
    if x_buf is None or not hasattr(desc, "BlockSize"):
        return "extreme: no tensors"
    block = pick(rng, [1, 16, 32, 64])
    to_depth = isinstance(desc, (DML_SPACE_TO_DEPTH_OPERATOR_DESC, DML_SPACE_TO_DEPTH1_OPERATOR_DESC))
    if block == 1:
        in_sizes = out_sizes = (1, int(rng.integers(1, 6)), int(rng.integers(1, 9)), int(rng.integers(1, 9)))
    elif to_depth:
        in_sizes, out_sizes = (1, 1, block, block), (1, block * block, 1, 1)
    else:
        in_sizes, out_sizes = (1, block * block, 1, 1), (1, 1, block, block)
    data_type = x_buf.DataType
    try:
        desc.InputTensor = dmlpy.buffer_tensor(
            data_type, in_sizes, dmlpy.nhwc_strides(in_sizes) if rng.integers(0, 2) else None
        )
        desc.OutputTensor = dmlpy.buffer_tensor(
            data_type, out_sizes, dmlpy.nhwc_strides(out_sizes) if rng.integers(0, 2) else None
        )
    except (TypeError, ValueError):
        return "extreme: data type already broken"
    desc.BlockSize = block
    return f"extreme: B = {block}, {in_sizes} -> {out_sizes}"


MUTATIONS: list[tuple[Callable[[Plan, np.random.Generator], str], int]] = [
    (base.m_tensor_sizes, 3),
    (base.m_tensor_strides, 3),
    (base.m_tensor_scalar, 4),
    (base.m_tensor_object, 1),
    (m_block_size, 4),
    (m_order, 3),
    (m_swap_direction, 2),
    (m_operator_wrapper, 1),
    (m_extreme_valid, 2),
    (base.m_output_sizes, 2),
    (base.m_in_binding, 4),
    (base.m_out_binding, 5),
    (base.m_shared_buffer, 1),
    (base.m_owned, 2),
    (base.m_steps, 5),
]


def make_case(batch: int, index: int) -> Plan:
    rng = np.random.default_rng([SEED, batch, index])
    plan = valid_case(rng)
    return base.mutate(plan, rng, MUTATIONS)


@pytest.mark.slow
@pytest.mark.parametrize("batch", range(BATCHES))
def test_fuzz_space_depth_batch(backend: str, batch: int) -> None:
    """Random space/depth descs and bindings: only DmlError/TypeError/ValueError, and no write outside a bound output."""
    base.run_batch(batch, CASES_PER_BATCH, make_case, lambda plan: base.run_case(plan, backend))


def test_fuzz_generates_at_least_500_space_depth_cases_per_backend() -> None:
    assert BATCHES * CASES_PER_BATCH >= 500


def test_fuzz_cases_cover_every_space_depth_desc_and_reach_execution() -> None:
    """The starting points span the four structs, and most unmutated or mutated cases are still valid enough to run."""
    kinds = {type(base.inner_desc(make_case(b, i))).__name__ for b in range(BATCHES) for i in range(40)}
    assert {
        "DML_SPACE_TO_DEPTH_OPERATOR_DESC",
        "DML_SPACE_TO_DEPTH1_OPERATOR_DESC",
        "DML_DEPTH_TO_SPACE_OPERATOR_DESC",
        "DML_DEPTH_TO_SPACE1_OPERATOR_DESC",
    } <= kinds


def test_unmutated_cases_run_through_dmlpy_run_and_match_the_reference() -> None:
    """The fuzz's starting points are valid and run on both backends with the same bits."""
    for index in range(40):
        plan = valid_case(np.random.default_rng([SEED, 999, index]))
        desc = base.inner_desc(plan)
        x_buf = desc.InputTensor.Desc
        sizes = tuple(x_buf.Sizes)
        raw = np.random.default_rng(index).integers(
            0, 256, size=int(np.prod(sizes)) * x_buf.dtype.itemsize, dtype=np.uint8
        )
        x = raw.view(x_buf.dtype).reshape(sizes)
        if x_buf.Strides is not None and 0 in x_buf.Strides:
            axis = list(x_buf.Strides).index(0)
            x = np.ascontiguousarray(np.broadcast_to(np.take(x, [0], axis=axis), sizes))
        y = dmlpy.run(plan.desc, backend="numpy", InputTensor=x)
        assert y.shape == tuple(desc.OutputTensor.Desc.Sizes)
        if dmlpy.native_available():
            assert dmlpy.run(plan.desc, backend="native", InputTensor=x).tobytes() == y.tobytes()
