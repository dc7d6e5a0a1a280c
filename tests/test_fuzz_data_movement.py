"""Fuzzing the whole pipeline with data-movement descs and nonsense bindings, on both backends.

The guarantees of tests/test_fuzz.py, whose guards, limits, batch runner and generic mutations this file
reuses: only ``dmlpy.DmlError``, ``TypeError`` or ``ValueError`` come out; no byte outside a bound
output range changes (sentinel-filled guard bytes around every range); ``validate`` and
``create_operator`` agree; every DmlError names registered rules; an unmutated case runs.

SLICE, SLICE1, PADDING, PADDING1 and CAST (one input, one output) run through test_fuzz's own case
runner with its tensor, binding and step mutations plus their fields' nonsense. JOIN, SPLIT and the
gathers bind several slots (tensor arrays, indices), so a runner here binds every slot in its own
guarded buffer, and its mutations break any tensor of the desc, the operator's fields, and each slot's
binding (too small, misaligned, unbound).
"""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import test_fuzz as base  # the shared harness (tests/ is on sys.path, as for conftest)

import dmlpy
from dmlpy import D3D12_RESOURCE_BARRIER, DML_BINDING_DESC, DML_BINDING_TYPE, DML_BUFFER_BINDING
from dmlpy.enums import DML_PADDING_MODE as MODE
from dmlpy.enums import HRESULT
from dmlpy.errors import DmlError
from dmlpy.operators.data_movement import (
    DML_CAST_OPERATOR_DESC,
    DML_GATHER_ELEMENTS_OPERATOR_DESC,
    DML_GATHER_ND1_OPERATOR_DESC,
    DML_GATHER_ND_OPERATOR_DESC,
    DML_GATHER_OPERATOR_DESC,
    DML_JOIN_OPERATOR_DESC,
    DML_PADDING1_OPERATOR_DESC,
    DML_PADDING_OPERATOR_DESC,
    DML_SLICE1_OPERATOR_DESC,
    DML_SLICE_OPERATOR_DESC,
    DML_SPLIT_OPERATOR_DESC,
    gather_nd_output_sizes,
    gather_output_sizes,
)
from dmlpy.structs import DML_SCALAR_UNION

SEED = 0xDA7A_F022
BATCHES = 6
CASES_PER_BATCH = 150  # per backend and runner: 900 cases
TYPES = [np.float32, np.float16, np.float64, np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32, np.uint64, np.int64]
INDEX_TYPES = [np.uint32, np.int32, np.uint64, np.int64]
pick = base.pick


def _layout(rng: np.random.Generator, sizes: tuple[int, ...], *, broadcast: bool) -> Any:
    return base._layout(rng, sizes, allow_broadcast=broadcast) if len(sizes) == 4 else (None if rng.integers(0, 2) else dmlpy.packed_strides([s + 1 for s in sizes]))


def _tensor(rng: np.random.Generator, dtype: Any, sizes: tuple[int, ...], *, broadcast: bool = True) -> Any:
    return dmlpy.buffer_tensor(dtype, sizes, _layout(rng, sizes, broadcast=broadcast))


def _sizes(rng: np.random.Generator, most: int = 3) -> tuple[int, ...]:
    return tuple(int(rng.integers(1, most + 1)) for _ in range(int(rng.integers(1, 6))))


# ---------------------------------------------------------------------------------------
# One input, one output: test_fuzz's runner


def single_valid_case(rng: np.random.Generator) -> base.Plan:
    dtype, sizes = pick(rng, TYPES), _sizes(rng, 4)
    x = _tensor(rng, dtype, sizes)
    kind = int(rng.integers(0, 5))
    if kind == 0:
        offsets = [int(rng.integers(0, n)) for n in sizes]
        strides = [int(rng.integers(0, 3)) for _ in sizes]
        counts = [int(rng.integers(1, (1 + (n - 1 - o) // s if s else 3) + 1)) for n, o, s in zip(sizes, offsets, strides, strict=True)]
        desc: Any = DML_SLICE_OPERATOR_DESC(x, _tensor(rng, dtype, tuple(counts), broadcast=False), None, offsets, counts, strides)
    elif kind == 1:
        offsets = [int(rng.integers(0, n)) for n in sizes]
        windows = [int(rng.integers(1, n - o + 1)) for n, o in zip(sizes, offsets, strict=True)]
        strides = [int(rng.integers(1, 3)) * (1 if rng.integers(0, 2) else -1) for _ in sizes]
        counts = [1 + (w - 1) // abs(s) for w, s in zip(windows, strides, strict=True)]
        desc = DML_SLICE1_OPERATOR_DESC(x, _tensor(rng, dtype, tuple(counts), broadcast=False), None, offsets, windows, strides)
    elif kind in (2, 3):
        start, end = [int(rng.integers(0, 3)) for _ in sizes], [int(rng.integers(0, 3)) for _ in sizes]
        y = _tensor(rng, dtype, tuple(n + a + b for n, a, b in zip(sizes, start, end, strict=True)), broadcast=False)
        mode = MODE(int(rng.integers(0, 5)))
        if kind == 2:
            desc = DML_PADDING_OPERATOR_DESC(x, y, mode, float(np.float32(rng.normal() * 100)), None, start, end)
        else:
            desc = DML_PADDING1_OPERATOR_DESC(x, y, mode, x.Desc.DataType, DML_SCALAR_UNION(Bytes=bytes(rng.integers(0, 256, 8, dtype=np.uint8))), None, start, end)
    else:
        desc = DML_CAST_OPERATOR_DESC(x, _tensor(rng, pick(rng, TYPES), sizes, broadcast=False))
    plan = base.Plan(desc)
    plan.in_guard = int(rng.choice([0, 16, 32, 64]))
    plan.out_guard = int(rng.choice([16, 32, 64]))
    return plan


def m_fields(plan: Any, rng: np.random.Generator) -> str:
    """Nonsense or off-by-one values in the operator's own fields (arrays, counts, axes, modes, values)."""
    desc = base.inner_desc(plan) if isinstance(plan, base.Plan) else plan.desc
    names = [n for n in ("Offsets", "Sizes", "Strides", "InputWindowOffsets", "InputWindowSizes", "InputWindowStrides", "StartPadding", "EndPadding",
                         "DimensionCount", "PaddingMode", "PaddingValue", "PaddingValueDataType", "Axis", "IndexDimensions", "InputCount", "OutputCount") if hasattr(desc, n)]  # fmt: skip
    if not names:
        return "fields: none"
    name = pick(rng, names)
    value = getattr(desc, name)
    if isinstance(value, list) and value and rng.integers(0, 2):
        i = int(rng.integers(0, len(value)))
        value = list(value)
        value[i] = pick(rng, [value[i] + 1, value[i] - 1, 0, -1, 2**31, 2**32 - 1, -(2**31), *base.UINT_NONSENSE])
    elif isinstance(value, list):
        value = pick(rng, [value[:-1], [*value, 1], None, *base.ARRAY_NONSENSE])
    elif isinstance(value, int):
        value = pick(rng, [value + 1, value - 1, 0, 5, 8, 9, 2**32 - 1, *base.UINT_NONSENSE])
    else:
        value = pick(rng, [float("nan"), 1e39, -1e39, None, "x", 3, DML_SCALAR_UNION(Bytes=b"\xff" * 8)])
    with contextlib.suppress(Exception):
        setattr(desc, name, value)
    return f"{name} = {value!r}"[:200]


SINGLE_MUTATIONS: list[tuple[Callable[[Any, np.random.Generator], str], int]] = [
    (base.m_tensor_sizes, 2),
    (base.m_tensor_strides, 3),
    (base.m_tensor_scalar, 3),
    (base.m_tensor_object, 1),
    (m_fields, 6),
    (base.m_output_sizes, 2),
    (base.m_in_binding, 4),
    (base.m_out_binding, 5),
    (base.m_shared_buffer, 1),
    (base.m_owned, 1),
    (base.m_steps, 3),
]


def make_single_case(batch: int, index: int) -> base.Plan:
    rng = np.random.default_rng([SEED, 1, batch, index])
    return base.mutate(single_valid_case(rng), rng, SINGLE_MUTATIONS)


# ---------------------------------------------------------------------------------------
# Several slots: JOIN, SPLIT, GATHER, GATHER_ELEMENTS


@dataclass
class MultiCase:
    desc: Any
    log: list[str] = field(default_factory=list)
    guard: int = 32
    # per (side, slot index): "short" (4 bytes less), "misaligned" (offset + 1), "none" (unbound), "huge"
    bindings: dict[tuple[str, int], str] = field(default_factory=dict)


def _indices_tensor(rng: np.random.Generator, sizes: tuple[int, ...]) -> Any:
    return _tensor(rng, pick(rng, INDEX_TYPES), sizes)


def multi_valid_case(rng: np.random.Generator) -> MultiCase:
    dtype, sizes = pick(rng, TYPES), _sizes(rng)
    rank = len(sizes)
    axis = int(rng.integers(0, rank))
    kind = int(rng.integers(0, 5))
    if kind in (0, 1):
        lengths = [int(rng.integers(1, 4)) for _ in range(int(rng.integers(1, 5)))]
        parts = [_tensor(rng, dtype, tuple(n if d == axis else s for d, s in enumerate(sizes)), broadcast=kind == 0) for n in lengths]
        whole = _tensor(rng, dtype, tuple(sum(lengths) if d == axis else s for d, s in enumerate(sizes)), broadcast=kind == 1)
        desc: Any = DML_JOIN_OPERATOR_DESC(None, parts, whole, axis) if kind == 0 else DML_SPLIT_OPERATOR_DESC(whole, None, parts, axis)
    elif kind == 2:
        count = int(rng.integers(0, rank + 1))
        index_sizes = tuple(int(rng.integers(1, 3)) if d >= rank - count else 1 for d in range(rank))
        out = gather_output_sizes(sizes, index_sizes, axis, count, rank)
        if out is None:
            count, index_sizes, out = 0, (1,) * rank, gather_output_sizes(sizes, (1,) * rank, axis, 0, rank)
        assert out is not None
        desc = DML_GATHER_OPERATOR_DESC(_tensor(rng, dtype, sizes), _indices_tensor(rng, index_sizes), _tensor(rng, dtype, out, broadcast=False), axis, count)
    elif kind == 4:  # GATHER_ND(1): every dim meaningful, tuples of 1..rank - batch coordinates
        batch = int(rng.integers(0, rank)) if rank > 1 and rng.integers(0, 2) else 0
        tuple_size = int(rng.integers(1, rank - batch + 1))
        index_sizes = (*sizes[:batch], *(int(rng.integers(1, 3)) for _ in range(rank - batch - 1)), tuple_size)
        out = gather_nd_output_sizes(sizes, index_sizes, rank, rank, rank, batch)
        if out is None or batch >= rank:
            batch, tuple_size, index_sizes = 0, 1, (*(1,) * (rank - 1), 1)
            out = gather_nd_output_sizes(sizes, index_sizes, rank, rank, rank, 0)
        assert out is not None
        x, i, y = _tensor(rng, dtype, sizes), _indices_tensor(rng, index_sizes), _tensor(rng, dtype, out, broadcast=False)
        desc = DML_GATHER_ND1_OPERATOR_DESC(x, i, y, rank, rank, batch) if batch or rng.integers(0, 2) else DML_GATHER_ND_OPERATOR_DESC(x, i, y, rank, rank)
    else:
        index_sizes = tuple(int(rng.integers(1, 4)) if d == axis else s for d, s in enumerate(sizes))
        desc = DML_GATHER_ELEMENTS_OPERATOR_DESC(_tensor(rng, dtype, sizes), _indices_tensor(rng, index_sizes), _tensor(rng, dtype, index_sizes, broadcast=False), axis)
    return MultiCase(desc, guard=int(rng.choice([16, 32, 64])))


def _all_tensors(desc: Any) -> list[tuple[str, Any]]:
    out = []
    for name in ("InputTensor", "IndicesTensor", "OutputTensor", "InputTensors", "OutputTensors"):
        value = getattr(desc, name, None)
        for i, t in enumerate(value if isinstance(value, list) else [value]):
            buf = base.tensor_buffer(t)
            if buf is not None:
                out.append((f"{name}[{i}]" if isinstance(value, list) else name, buf))
    return out


def m_any_tensor(case: MultiCase, rng: np.random.Generator) -> str:
    """Sizes, strides, data type or total size of any tensor of the desc, nonsense or plausible."""
    tensors = _all_tensors(case.desc)
    if not tensors:
        return "tensor: none"
    name, buf = pick(rng, tensors)
    what = int(rng.integers(0, 5))
    if what == 0:
        sizes = list(buf.Sizes)
        sizes[int(rng.integers(0, len(sizes)))] = pick(rng, [1, 2, 5, 0, 2**32 - 1, *base.UINT_NONSENSE])
        with contextlib.suppress(Exception):
            buf.Sizes = sizes
        return f"{name}.Sizes = {sizes!r}"[:200]
    if what == 1:
        strides = list(buf.Strides or dmlpy.packed_strides(buf.Sizes))
        strides[int(rng.integers(0, len(strides)))] = pick(rng, [0, 1, 2**20, 2**31, 2**32 - 1, *base.UINT_NONSENSE])
        with contextlib.suppress(Exception):
            buf.Strides = strides
        return f"{name}.Strides = {strides!r}"[:200]
    if what == 2:
        value = pick(rng, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 0, 99, *base.UINT_NONSENSE])
        with contextlib.suppress(Exception):
            buf.DataType = value
        return f"{name}.DataType = {value!r}"
    if what == 3:
        value = pick(rng, [0, 4, buf.TotalTensorSizeInBytes - 4, 2**64 - 1, *base.UINT_NONSENSE])
        with contextlib.suppress(Exception):
            buf.TotalTensorSizeInBytes = value
        return f"{name}.TotalTensorSizeInBytes = {value!r}"
    value = pick(rng, [buf.DimensionCount + 1, buf.DimensionCount - 1, 0, 9, *base.UINT_NONSENSE])
    with contextlib.suppress(Exception):
        buf.DimensionCount = value
    return f"{name}.DimensionCount = {value!r}"


def m_tensor_list(case: MultiCase, rng: np.random.Generator) -> str:
    """A tensor array with one element more, one less, or a nonsense element."""
    name = "InputTensors" if hasattr(case.desc, "InputTensors") else "OutputTensors" if hasattr(case.desc, "OutputTensors") else None
    if name is None:
        return "tensor list: none"
    value = list(getattr(case.desc, name))
    how = int(rng.integers(0, 3))
    value = value[:-1] if how == 0 else [*value, value[-1]] if how == 1 else [*value[:-1], pick(rng, [None, "t", 3])]
    setattr(case.desc, name, value)
    return f"{name} now {len(value)} entries ({'fewer' if how == 0 else 'more' if how == 1 else 'nonsense last'})"


def m_binding(case: MultiCase, rng: np.random.Generator) -> str:
    side = "in" if rng.integers(0, 2) else "out"
    slot = int(rng.integers(0, 4))
    how = pick(rng, ["short", "short", "misaligned", "none", "huge"])
    case.bindings[(side, slot)] = how
    return f"{side} slot {slot}: {how}"


MULTI_MUTATIONS: list[tuple[Callable[[Any, np.random.Generator], str], int]] = [(m_any_tensor, 5), (m_fields, 5), (m_tensor_list, 2), (m_binding, 5)]


def make_multi_case(batch: int, index: int) -> MultiCase:
    rng = np.random.default_rng([SEED, 2, batch, index])
    return base.mutate(multi_valid_case(rng), rng, MULTI_MUTATIONS)


def _bind(case: MultiCase, side: str, slots: list[Any], guards: base.Guards, rng: np.random.Generator) -> list[Any]:
    bindings = []
    for i, slot in enumerate(slots):
        total = base.sane_int(getattr(slot.tensor, "TotalTensorSizeInBytes", None)) or 16
        buffer = base._filled(case.guard + total + 32, f"{side}put {i}", guards)
        how = case.bindings.get((side, i), "")
        if side == "in":
            buffer.data[case.guard : case.guard + total] = rng.integers(0, 256, total, dtype=np.uint8)
        offset = case.guard + (1 if how == "misaligned" else 0)
        size = {"short": total - 4, "huge": buffer.size}.get(how, total)
        if side == "out":
            guards.allow(buffer, offset, size, total)
        bindings.append(DML_BINDING_DESC() if how == "none" else DML_BINDING_DESC(DML_BINDING_TYPE.BUFFER, DML_BUFFER_BINDING(buffer, offset, size)))
    return bindings


def run_multi_case(case: MultiCase, backend: str) -> base.Outcome:
    outcome = base.Outcome()
    guards = base.Guards()
    device = dmlpy.create_device(backend=backend)
    rng = np.random.default_rng(len(case.log))
    try:
        outcome.stage = "validate"
        report = dmlpy.validate(case.desc)
        outcome.stage = "create_operator"
        try:
            operator = device.create_operator(case.desc)
        except DmlError:
            assert report.ok is not True, "validate() found no error but create_operator raised DmlError"
            raise
        assert report.ok is True, f"validate() found errors {report.rule_ids} but create_operator accepted the desc"
        outcome.stage = "compile"
        compiled = device.compile_operator(operator)
        initializer = device.create_operator_initializer([compiled])
        recorder, command_list = device.create_command_recorder(), device.create_command_list()
        recorder.record_dispatch(command_list, initializer, device.create_binding_table(initializer))
        command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav()])
        table = device.create_binding_table(compiled)
        inputs, outputs = _bind(case, "in", compiled.input_slots(), guards, rng), _bind(case, "out", compiled.output_slots(), guards, rng)
        guards.refresh()
        outcome.stage = "bind_inputs"
        table.bind_inputs(inputs)
        outcome.stage = "bind_outputs"
        table.bind_outputs(outputs)
        outcome.stage = "record"
        recorder.record_dispatch(command_list, compiled, table)
        command_list.close()
        outcome.stage = "execute"
        device.execute(command_list)
        outcome.executed = True
    except base.ALLOWED as error:
        outcome.error = error
        if isinstance(error, DmlError):
            if not error.findings:
                outcome.problems.append(f"DmlError at {outcome.stage} carries no findings: {error}")
            unknown = [f.rule for f in error.findings if f.rule not in dmlpy.RULES]
            if unknown:
                outcome.problems.append(f"DmlError at {outcome.stage} names unregistered rules {unknown}")
            if outcome.stage in base.BIND_STAGES and error.hresult != HRESULT.DXGI_ERROR_DEVICE_REMOVED and device.get_device_removed_reason() == HRESULT.S_OK:
                outcome.problems.append(f"DmlError at {outcome.stage} did not remove the device")
            if any(f.rule == "NATIVE.REJECTED" for f in error.findings):
                outcome.problems.append(f"the native kernel refused a dispatch that validation and binding accepted: {error}")
    except base.CaseTimeout as error:
        outcome.error = error
        outcome.problems.append(f"hang at {outcome.stage}: {error}")
    except Exception as error:  # noqa: BLE001 - the point of the fuzz: anything else is a bug
        outcome.error = error
        outcome.problems.append(f"{type(error).__name__} at {outcome.stage}: {error}\n{''.join(traceback.format_exception(error))[-3000:]}")
    outcome.problems.extend(f"guard bytes changed in {v}" for v in guards.violations())
    if not case.log and not outcome.executed:
        outcome.problems.append(f"an unmutated case failed at {outcome.stage}: {outcome.error!r}")
    return outcome


def describe_multi(case: MultiCase, batch: int, index: int, outcome: base.Outcome) -> str:
    lines = [f"case (batch {batch}, index {index}; make_multi_case({batch}, {index})) failed at stage {outcome.stage}:"]
    lines += [f"  mutation {line}" for line in case.log] or ["  (no mutation)"]
    lines.append(f"  desc: {case.desc!r}"[:1500])
    lines += [f"  problem: {p}" for p in outcome.problems]
    return "\n".join(lines)


@pytest.mark.slow
@pytest.mark.parametrize("batch", range(BATCHES))
def test_fuzz_slice_padding_cast_batch(backend: str, batch: int) -> None:
    """Random SLICE/SLICE1/PADDING/PADDING1/CAST descs and bindings: only DmlError/TypeError/ValueError, no stray write."""
    base.run_batch(batch, CASES_PER_BATCH, make_single_case, lambda plan: base.run_case(plan, backend))


@pytest.mark.slow
@pytest.mark.parametrize("batch", range(BATCHES))
def test_fuzz_join_split_gather_batch(backend: str, batch: int) -> None:
    """Random JOIN/SPLIT/GATHER/GATHER_ELEMENTS/GATHER_ND(1) descs and bindings of every slot: the same guarantees."""
    base.run_batch(batch, CASES_PER_BATCH, make_multi_case, lambda case: run_multi_case(case, backend), describe_multi)


def test_fuzz_cases_cover_every_data_movement_desc_with_a_c_kernel() -> None:
    single = {type(base.inner_desc(make_single_case(b, i))).__name__ for b in range(BATCHES) for i in range(30)}
    multi = {type(make_multi_case(b, i).desc).__name__ for b in range(BATCHES) for i in range(30)}
    assert {"DML_SLICE_OPERATOR_DESC", "DML_SLICE1_OPERATOR_DESC", "DML_PADDING_OPERATOR_DESC", "DML_PADDING1_OPERATOR_DESC", "DML_CAST_OPERATOR_DESC"} <= single
    assert {"DML_JOIN_OPERATOR_DESC", "DML_SPLIT_OPERATOR_DESC", "DML_GATHER_OPERATOR_DESC", "DML_GATHER_ELEMENTS_OPERATOR_DESC", "DML_GATHER_ND_OPERATOR_DESC",
            "DML_GATHER_ND1_OPERATOR_DESC"} <= multi  # fmt: skip


def test_unmutated_cases_execute_on_both_backends() -> None:
    for index in range(30):
        for backend in ("numpy", *(("native",) if dmlpy.native_available() else ())):
            plan = single_valid_case(np.random.default_rng([SEED, 99, index]))
            assert base.run_case(plan, backend).executed, (backend, plan.desc)
            case = multi_valid_case(np.random.default_rng([SEED, 98, index]))
            outcome = run_multi_case(case, backend)
            assert outcome.executed and not outcome.problems, (backend, case.desc, outcome.problems)
