"""Fuzzing the whole pipeline with element-wise descriptors and nonsense bindings, on both backends.

The same harness and guarantees as tests/test_fuzz.py (whose case runner, guards, limits and generic
tensor, binding and step mutations this file reuses): each case starts from a valid desc of an
operator the C element-wise kernel runs (IDENTITY, ABS, NEGATE, CLIP, SQRT, RECIP, EXP, LOG, TANH,
ERF, CONSTANT_POW; the harness binds one input, so the binary operators' C checks are fuzzed in
tests/operators/test_element_wise_native.py), FLOAT32 or FLOAT16 (now and then INT32, which the
NumPy kernel runs), any layout and an optional ScaleBias; applies zero to three random mutations; and goes through ``dmlpy.validate``, ``create_operator``, compile, an
initializer, the Bind* calls, RecordDispatch and execute on a fresh device. Whatever happened:

* only ``dmlpy.DmlError``, ``TypeError`` or ``ValueError`` come out;
* no byte outside a bound output range changes (sentinel-filled guard bytes around every input and
  output range), and inputs are never written;
* ``validate`` and ``create_operator`` agree; every DmlError names registered rules;
* an unmutated case runs without error.

The element-wise mutations add nonsense ScaleBias values and objects, CLIP bounds and exponents,
another element-wise struct over the same tensors, and data-type changes of one tensor.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import test_fuzz as base  # the shared harness (tests/ is on sys.path, as for conftest)

import dmlpy
from dmlpy import DML_OPERATOR_TYPE as OP
from dmlpy.operators import REGISTRY
from dmlpy.operators.descs.helpers import DML_SCALE_BIAS

SEED = 0xE1E_F022
BATCHES = 6
CASES_PER_BATCH = 100  # per backend: 600 cases
UNARY = [OP.ELEMENT_WISE_IDENTITY, OP.ELEMENT_WISE_ABS, OP.ELEMENT_WISE_NEGATE, OP.ELEMENT_WISE_CLIP, OP.ELEMENT_WISE_SQRT, OP.ELEMENT_WISE_RECIP,
         OP.ELEMENT_WISE_EXP, OP.ELEMENT_WISE_LOG, OP.ELEMENT_WISE_TANH, OP.ELEMENT_WISE_ERF, OP.ELEMENT_WISE_CONSTANT_POW]  # fmt: skip
OPS = UNARY
Plan = base.Plan
pick = base.pick


def _build(op: OP, x: Any, y: Any, rng: np.random.Generator) -> Any:
    fields: dict[str, Any] = {"InputTensor": x, "OutputTensor": y}
    if op != OP.ELEMENT_WISE_NEGATE:
        fields["ScaleBias"] = DML_SCALE_BIAS(float(rng.uniform(-2, 2)), float(rng.uniform(-1, 1))) if rng.integers(0, 2) else None
    if op == OP.ELEMENT_WISE_CLIP:
        fields["Min"], fields["Max"] = -1.0, 1.5
    if op == OP.ELEMENT_WISE_CONSTANT_POW:
        fields["Exponent"] = float(pick(rng, [0.5, 2.0, -1.0, 1.5, 3.0]))
    return REGISTRY[op].desc_class(**fields)


def valid_case(rng: np.random.Generator) -> Plan:
    """A valid element-wise desc: FLOAT32 / FLOAT16 (now and then INT32 for IDENTITY, ABS, NEGATE, CLIP), rank 1-5, any layout."""
    op = OPS[int(rng.integers(0, len(OPS)))]
    rank = int(rng.integers(1, 6))
    sizes = tuple(int(s) for s in rng.integers(1, 5, rank))
    integer_ok = op in (OP.ELEMENT_WISE_IDENTITY, OP.ELEMENT_WISE_ABS, OP.ELEMENT_WISE_NEGATE, OP.ELEMENT_WISE_CLIP)
    dtype = pick(rng, [np.float32, np.float32, np.float16, np.int32] if integer_ok else [np.float32, np.float16])
    in_layout = base._layout(rng, sizes, allow_broadcast=True) if rank >= 2 else None
    out_layout = base._layout(rng, sizes, allow_broadcast=False) if rank >= 2 else None
    x = dmlpy.buffer_tensor(dtype, sizes, in_layout)
    y = dmlpy.buffer_tensor(dtype, sizes, out_layout)
    desc = _build(op, x, y, rng)
    if rng.integers(0, 4) == 0:
        desc = dmlpy.operator_desc(desc)
    plan = Plan(desc)
    plan.in_guard = int(rng.choice([0, 16, 32, 64]))
    plan.out_guard = int(rng.choice([16, 32, 64]))
    return plan


# ---------------------------------------------------------------------------------------
# Element-wise mutations


def m_scale_bias(plan: Plan, rng: np.random.Generator) -> str:
    desc = base.inner_desc(plan)
    if not hasattr(desc, "ScaleBias"):
        return "scale bias: no such field"
    value = pick(rng, [
        None, DML_SCALE_BIAS(float("nan"), 0.0), DML_SCALE_BIAS(float("inf"), -1.0), DML_SCALE_BIAS(3e38, 3e38), DML_SCALE_BIAS(0.0, -0.0),
        DML_SCALE_BIAS(1e-45, 1e-45), "junk", 1.5, (1.0, 2.0), DML_SCALE_BIAS("a", None),
    ])  # fmt: skip
    desc.ScaleBias = value
    return f"ScaleBias = {value!r}"


def m_parameters(plan: Plan, rng: np.random.Generator) -> str:
    desc = base.inner_desc(plan)
    name = pick(rng, ["Min", "Max", "Exponent"])
    if not hasattr(desc, name):
        return f"{name}: no such field"
    value = pick(rng, [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 3e38, 1e39, -5.0, "1", None, 2**40])
    setattr(desc, name, value)
    return f"{name} = {value!r}"


def m_other_operator(plan: Plan, rng: np.random.Generator) -> str:
    """The same tensors under another element-wise struct."""
    desc = base.inner_desc(plan)
    x, y = getattr(desc, "InputTensor", None), getattr(desc, "OutputTensor", None)
    op = OPS[int(rng.integers(0, len(OPS)))]
    plan.desc = _build(op, x, y, rng)
    return f"now {type(plan.desc).__name__}"


def m_data_type(plan: Plan, rng: np.random.Generator) -> str:
    name, buf = base._tensor_of(plan, rng)
    if buf is None:
        return "data type: no tensor"
    value = pick(rng, [dmlpy.DML_TENSOR_DATA_TYPE.FLOAT16, dmlpy.DML_TENSOR_DATA_TYPE.FLOAT32, dmlpy.DML_TENSOR_DATA_TYPE.INT32, dmlpy.DML_TENSOR_DATA_TYPE.FLOAT64, 0, 99])
    buf.DataType = value
    return f"{name}.DataType = {value!r}"


MUTATIONS: list[tuple[Callable[[Plan, np.random.Generator], str], int]] = [
    (base.m_tensor_sizes, 3),
    (base.m_tensor_strides, 4),
    (base.m_tensor_scalar, 3),
    (base.m_tensor_object, 1),
    (m_scale_bias, 3),
    (m_parameters, 2),
    (m_other_operator, 2),
    (m_data_type, 2),
    (base.m_output_sizes, 2),
    (base.m_in_binding, 4),
    (base.m_out_binding, 5),
    (base.m_shared_buffer, 2),
    (base.m_steps, 4),
]


def make_case(batch: int, index: int) -> Plan:
    rng = np.random.default_rng([SEED, batch, index])
    plan = valid_case(rng)
    return base.mutate(plan, rng, MUTATIONS)


@pytest.mark.slow
@pytest.mark.parametrize("batch", range(BATCHES))
def test_fuzz_element_wise_batch(backend: str, batch: int) -> None:
    """Random element-wise descs and bindings: only DmlError/TypeError/ValueError, and no write outside a bound output."""
    base.run_batch(batch, CASES_PER_BATCH, make_case, lambda plan: base.run_case(plan, backend))


def test_fuzz_element_wise_sample_on_the_native_backend() -> None:
    """A fixed sample of the slow batches runs in the normal suite (native: the C kernel's checks and guards)."""
    if not dmlpy.native_available():
        pytest.skip("native backend not built")
    base.run_batch(BATCHES, 60, make_case, lambda plan: base.run_case(plan, "native"))


def test_fuzz_cases_cover_every_operator_and_reach_the_c_kernel() -> None:
    plans = [make_case(b, i) for b in range(BATCHES) for i in range(60)]
    kinds = {type(base.inner_desc(p)).__name__ for p in plans}
    assert {REGISTRY[op].desc_class.__name__ for op in OPS} <= kinds
    unmutated = [p for p in plans if not p.log]
    assert sum(REGISTRY[OP(dmlpy.operator_desc(p.desc).Type)].runs_natively(base.inner_desc(p)) for p in unmutated) >= 30
