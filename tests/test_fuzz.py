"""Fuzzing the whole pipeline with nonsense descriptors and bindings, on both backends.

Each case starts from a valid average-pooling desc with valid bindings and applies zero to
three random mutations: nonsense values in desc fields (huge, zero, negative, float, string,
None; unknown enum values; wrong ranks and array lengths; overflowing strides; bad
TotalTensorSizeInBytes), extreme but valid descs, and binding misuse (too-small or odd-sized
buffers, misaligned offsets, ranges outside buffers, wrong binding counts and types, wrong
tables, skipped initialization, late re-binding). The case then goes through
``dmlpy.validate``, ``create_operator``, compile, an initializer, the Bind* calls,
RecordDispatch and execute, on a fresh device (a Bind* misuse removes the device).

What must hold, whatever happened:

* only ``dmlpy.DmlError``, ``TypeError`` or ``ValueError`` come out (anything else, or a
  hang, fails the test with the case printed);
* nothing is written outside a bound output range: every buffer is filled with a sentinel
  pattern, and afterwards only the bytes inside ``[Offset, Offset + min(SizeInBytes,
  TotalTensorSizeInBytes))`` of an output binding (or the bound persistent resource of the
  initializer) may differ; inputs are never written;
* ``validate`` and ``create_operator`` agree; every DmlError names registered rules; a DmlError
  from a Bind* or RecordDispatch leaves the device removed;
* an unmutated case runs without error.

The cases are deterministic (seeded per batch and index). Memory is capped while a case runs
(a kernel that tries to allocate gigabytes fails with MemoryError instead of exhausting the
machine), and each case has a time limit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import signal
import sys
import threading
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

import dmlpy
from dmlpy import D3D12_RESOURCE_BARRIER
from dmlpy import (
    DML_BINDING_DESC,
    DML_BINDING_TABLE_DESC,
    DML_BINDING_TYPE,
    DML_BUFFER_ARRAY_BINDING,
    DML_BUFFER_BINDING,
    DML_BUFFER_TENSOR_DESC,
    DML_EXECUTION_FLAGS,
    DML_OPERATOR_DESC,
    DML_OPERATOR_TYPE,
    DML_TENSOR_DATA_TYPE,
    DML_TENSOR_DESC,
    DML_TENSOR_FLAGS,
    HRESULT,
    Buffer,
    DmlError,
)

SEED = 0x5EED_F022
BATCHES = 20
CASES_PER_BATCH = 100  # per backend: 2,000 cases
CASE_TIME_LIMIT = 10.0  # seconds
MEMORY_HEADROOM = 3 * 2**30  # bytes of address space a case may add
MAX_ALLOCATION = 1 << 16  # the fuzz never allocates a buffer above 64 KiB + guards

ALLOWED = (DmlError, TypeError, ValueError)
BIND_STAGES = (
    "init.bind_inputs",
    "init.bind_outputs",
    "init.record",
    "bind_inputs",
    "bind_outputs",
    "bind_persistent",
    "bind_temporary",
    "record",
)

SENTINEL = np.frombuffer(b"\xde\xad\xbe\xef\x5a\xa5\xc3\x3c", dtype=np.uint8)

# Nonsense for UINT fields and UINT array entries
UINT_NONSENSE: list[Any] = [
    0, 1, 7, 2**31, 2**32 - 1, 2**32, 2**40, 2**63, 2**64, -1, -(2**31), -(2**40),
    1.5, 2.0, float("nan"), float("inf"), "3", "", None, True, False, b"\x01",
    np.int64(3), np.uint32(2**32 - 1), np.float32(2.0), np.int8(-1), [], [1], {1: 2}, object(), 3j,
]  # fmt: skip
ARRAY_NONSENSE: list[Any] = [
    None,
    (),
    "abc",
    b"ab",
    5,
    2.5,
    {0: 1},
    {1, 2},
    np.array([1.5, 2.5]),
    np.zeros((2, 2), dtype=np.int64),
    object(),
]


class CaseTimeout(BaseException):
    """Raised by the alarm when a case runs too long (a BaseException so no `except Exception` in dmlpy swallows it)."""


# ---------------------------------------------------------------------------------------
# A case: a desc and a binding plan, plus the mutations applied to them


@dataclass
class Plan:
    desc: Any
    log: list[str] = field(default_factory=list)
    # input binding
    in_alloc: int | None = None  # None: derive from TotalTensorSizeInBytes
    in_guard: int = 32
    in_offset: Any = None  # None: in_guard
    in_size: Any = None  # None: TotalTensorSizeInBytes
    in_type: Any = DML_BINDING_TYPE.BUFFER
    in_desc: Any = "default"
    in_list: Callable[[Any], Any] = lambda b: [b]
    # output binding
    out_alloc: int | None = None
    out_guard: int = 32
    out_offset: Any = None
    out_size: Any = None
    out_type: Any = DML_BINDING_TYPE.BUFFER
    out_desc: Any = "default"
    out_list: Callable[[Any], Any] = lambda b: [b]
    out_is_input_buffer: bool = False
    # resources and steps
    owned: bool = False  # the input has OWNED_BY_DML: bind it at initialize, NONE at execute
    owned_rule_broken: str = ""  # "", "bind-at-execute", "missing-at-init"
    compile_flags: Any = DML_EXECUTION_FLAGS.NONE
    initializer_targets: str = "compiled"  # compiled, none, twice, junk
    init_inputs: str = "default"  # default, none, junk, wrong-count, plain-buffer
    init_outputs: str = "default"  # default, none, junk, too-small
    skip_init_dispatch: bool = False
    table_size: str = "default"  # default, zero
    reset_to: str = "compiled"  # compiled, initializer, junk
    persistent: str = "default"  # default, none, too-small, misaligned
    temporary: str = "none"  # none, junk, buffer
    rebind_after_record: str = ""  # "", inputs-none, outputs-junk, outputs-elsewhere
    close_list: bool = True
    record_into_closed_list: bool = False
    foreign_device: str = ""  # "", table, list


def tensor_buffer(tensor: Any) -> DML_BUFFER_TENSOR_DESC | None:
    if isinstance(tensor, DML_TENSOR_DESC) and isinstance(tensor.Desc, DML_BUFFER_TENSOR_DESC):
        return tensor.Desc
    if isinstance(tensor, DML_BUFFER_TENSOR_DESC):
        return tensor
    return None


def inner_desc(plan: Plan) -> Any:
    desc = plan.desc
    return desc.Desc if isinstance(desc, DML_OPERATOR_DESC) else desc


def sane_int(value: Any, limit: int = MAX_ALLOCATION) -> int | None:
    """``value`` as an int when it is a plain non-negative integer up to ``limit``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        return None
    value = int(value)
    return value if 0 <= value <= limit else None


def valid_case(rng: np.random.Generator) -> Plan:
    """A valid AVERAGE_POOLING(1) desc with small tensors and a layout drawn at random."""
    rank = int(rng.choice([4, 5]))
    spatial = rank - 2
    dtype = rng.choice([np.float32, np.float16])
    window = [int(rng.integers(1, 4)) for _ in range(spatial)]
    dilated = bool(rng.integers(0, 2))
    dilations = [int(rng.integers(1, 3)) if dilated else 1 for _ in range(spatial)]
    strides = [int(rng.integers(1, 4)) for _ in range(spatial)]
    start = [int(rng.integers(0, 3)) for _ in range(spatial)]
    end = [int(rng.integers(0, 3)) for _ in range(spatial)]
    in_spatial = [
        max(1, (w - 1) * d + 1 - sp - ep) + int(rng.integers(0, 4))
        for w, d, sp, ep in zip(window, dilations, start, end, strict=True)
    ]
    in_sizes = (int(rng.integers(1, 3)), int(rng.integers(1, 4)), *in_spatial)
    out_sizes = dmlpy.average_pooling_output_sizes(
        in_sizes, window, strides, start, end, dilations, ceil_mode=bool(rng.integers(0, 2))
    )
    in_strides = _layout(rng, in_sizes, allow_broadcast=True)
    out_strides = _layout(rng, out_sizes, allow_broadcast=False)
    common = {
        "InputTensor": dmlpy.buffer_tensor(dtype, in_sizes, in_strides),
        "OutputTensor": dmlpy.buffer_tensor(dtype, out_sizes, out_strides),
        "DimensionCount": spatial if rng.integers(0, 4) else None,
        "Strides": strides,
        "WindowSize": window,
        "StartPadding": start,
        "EndPadding": end,
        "IncludePadding": bool(rng.integers(0, 2)),
    }
    if dilated or rng.integers(0, 4) == 0:
        desc: Any = dmlpy.DML_AVERAGE_POOLING1_OPERATOR_DESC(**common, Dilations=dilations)
    else:
        desc = dmlpy.DML_AVERAGE_POOLING_OPERATOR_DESC(**common)
    if rng.integers(0, 4) == 0:
        desc = dmlpy.operator_desc(desc)
    plan = Plan(desc)
    plan.in_guard = int(rng.choice([0, 16, 32, 64]))
    plan.out_guard = int(rng.choice([16, 32, 64]))
    return plan


def _layout(rng: np.random.Generator, sizes: tuple[int, ...], *, allow_broadcast: bool) -> tuple[int, ...] | None:
    kind = int(rng.integers(0, 5 if allow_broadcast else 4))
    if kind == 0:
        return None
    if kind == 1:
        return dmlpy.nhwc_strides(sizes)
    if kind == 2:
        return dmlpy.packed_strides(sizes)
    if kind == 3:  # padded rows
        return dmlpy.packed_strides([s + int(rng.integers(0, 3)) for s in sizes])
    strides = list(dmlpy.packed_strides(sizes))
    strides[int(rng.integers(0, 2))] = 0
    return tuple(strides)


# ---------------------------------------------------------------------------------------
# Mutations. Each changes the plan and returns a line for the case log.


def pick(rng: np.random.Generator, values: list[Any]) -> Any:
    return values[int(rng.integers(0, len(values)))]


def _tensor_of(plan: Plan, rng: np.random.Generator) -> tuple[str, DML_BUFFER_TENSOR_DESC | None]:
    name = pick(rng, ["InputTensor", "OutputTensor"])
    return name, tensor_buffer(getattr(inner_desc(plan), name, None))


def m_tensor_sizes(plan: Plan, rng: np.random.Generator) -> str:
    name, buf = _tensor_of(plan, rng)
    if buf is None:
        return "sizes: no tensor"
    sizes = list(buf.Sizes or ())
    how = int(rng.integers(0, 5))
    if how == 0 and sizes:
        i = int(rng.integers(0, len(sizes)))
        sizes[i] = pick(rng, UINT_NONSENSE)
        buf.Sizes = sizes
        return f"{name}.Sizes[{i}] = {sizes[i]!r}"
    if how == 1:
        buf.Sizes = pick(rng, ARRAY_NONSENSE)
        return f"{name}.Sizes = {buf.Sizes!r}"
    if how == 2:
        buf.Sizes = sizes[:-1] if rng.integers(0, 2) and sizes else [*sizes, int(rng.integers(1, 4))]
        return f"{name}.Sizes = {buf.Sizes} (wrong length)"
    if how == 3 and sizes:  # huge, keeping TotalTensorSizeInBytes consistent or not
        i = int(rng.integers(0, len(sizes)))
        sizes[i] = pick(rng, [2**16, 2**20, 2**31, 2**32 - 1, 2**40])
        buf.Sizes = sizes
        if rng.integers(0, 2):
            with contextlib.suppress(Exception):
                buf.TotalTensorSizeInBytes = dmlpy.calc_buffer_tensor_size(buf.DataType, buf.Sizes, buf.Strides)
        return f"{name}.Sizes[{i}] = {sizes[i]} (Total {buf.TotalTensorSizeInBytes})"
    new_rank = int(rng.integers(0, 10))
    buf.Sizes = [int(rng.integers(1, 4)) for _ in range(new_rank)]
    buf.Strides = None
    if rng.integers(0, 2):
        buf.DimensionCount = new_rank
    with contextlib.suppress(ValueError, TypeError):
        buf.TotalTensorSizeInBytes = dmlpy.calc_buffer_tensor_size(buf.DataType, buf.Sizes)
    return f"{name} rank {new_rank}: Sizes {buf.Sizes}, DimensionCount {buf.DimensionCount}"


def m_tensor_strides(plan: Plan, rng: np.random.Generator) -> str:
    name, buf = _tensor_of(plan, rng)
    if buf is None or not isinstance(buf.Sizes, (list, tuple)):
        return "strides: no tensor"
    sizes = list(buf.Sizes)
    how = int(rng.integers(0, 5))
    if how == 0:  # random small strides (overlapping, zero, gappy): valid when Total follows
        buf.Strides = [int(rng.integers(0, 8)) for _ in sizes]
    elif how == 1:  # overflowing strides
        buf.Strides = [pick(rng, [2**31, 2**32 - 1, 2**30 + 1, 1]) for _ in sizes]
    elif how == 2 and sizes:
        strides = list(buf.Strides or dmlpy.packed_strides(sizes))
        i = int(rng.integers(0, len(strides)))
        strides[i] = pick(rng, UINT_NONSENSE)
        buf.Strides = strides
    elif how == 3:
        buf.Strides = [1] * (len(sizes) + pick(rng, [-1, 1, 3]))
    else:
        buf.Strides = pick(rng, ARRAY_NONSENSE)
    if rng.integers(0, 3):  # usually keep the total consistent so later stages run
        with contextlib.suppress(ValueError, TypeError):
            buf.TotalTensorSizeInBytes = dmlpy.calc_buffer_tensor_size(buf.DataType, sizes, buf.Strides)
    return f"{name}.Strides = {buf.Strides!r} (Total {buf.TotalTensorSizeInBytes!r})"


def m_tensor_scalar(plan: Plan, rng: np.random.Generator) -> str:
    name, buf = _tensor_of(plan, rng)
    if buf is None:
        return "scalar: no tensor"
    field_name = pick(
        rng, ["DimensionCount", "DataType", "Flags", "TotalTensorSizeInBytes", "GuaranteedBaseOffsetAlignment"]
    )
    total = buf.TotalTensorSizeInBytes if isinstance(buf.TotalTensorSizeInBytes, int) else 16
    choices: dict[str, list[Any]] = {
        "DimensionCount": [None, 0, 1, 2, 3, 4, 5, 6, 8, 9, 2**32 - 1, 2**32, -1, 4.0, "4"],
        "DataType": [
            0,
            3,
            4,
            6,
            9,
            11,
            12,
            13,
            14,
            99,
            -1,
            2**32,
            "FLOAT32",
            "FLOAT16",
            "BOGUS",
            None,
            1.0,
            DML_TENSOR_DATA_TYPE.FLOAT64,
            np.float32,
        ],
        "Flags": [1, 2, 3, 0x80000000, 0xFFFFFFFF, 2**32, -1, None, "x", DML_TENSOR_FLAGS.OWNED_BY_DML],
        "TotalTensorSizeInBytes": [
            0,
            total - 1,
            total - 2,
            total - 4,
            total + 1,
            total + 2,
            total + 3,
            2**32,
            2**64 - 1,
            2**64,
            -4,
            3.5,
            None,
            "16",
        ],
        "GuaranteedBaseOffsetAlignment": [1, 2, 3, 4, 6, 8, 16, 32, 64, 2**31, 2**32, -1, None, 1.0],
    }
    value = pick(rng, choices[field_name])
    setattr(buf, field_name, value)
    if field_name == "Flags" and name == "InputTensor" and value in (1, DML_TENSOR_FLAGS.OWNED_BY_DML):
        plan.owned = True  # a valid flag: follow the owned-input binding rules
    return f"{name}.{field_name} = {value!r}"


def m_tensor_object(plan: Plan, rng: np.random.Generator) -> str:
    desc = inner_desc(plan)
    name = pick(rng, ["InputTensor", "OutputTensor"])
    current = getattr(desc, name, None)
    other = getattr(desc, "OutputTensor" if name == "InputTensor" else "InputTensor", None)
    value = pick(rng, [
        None, "tensor", 5, tensor_buffer(current), DML_TENSOR_DESC(0, tensor_buffer(current)), DML_TENSOR_DESC(2, tensor_buffer(current)),
        DML_TENSOR_DESC(1, None), DML_TENSOR_DESC(1, "desc"), other, DML_TENSOR_DESC("BUFFER", tensor_buffer(current)),
    ])  # fmt: skip
    setattr(desc, name, value)
    return f"{name} = {value!r}"[:200]


OP_ARRAYS = ["Strides", "WindowSize", "StartPadding", "EndPadding", "Dilations"]


def m_op_field(plan: Plan, rng: np.random.Generator) -> str:
    desc = inner_desc(plan)
    if not dataclasses.is_dataclass(desc):
        return "op field: desc is not a dataclass"
    field_name = pick(rng, [*OP_ARRAYS, "DimensionCount", "IncludePadding"])
    if not hasattr(desc, field_name):
        return f"op field: no {field_name}"
    if field_name == "DimensionCount":
        value = pick(rng, [None, 0, 1, 2, 3, 4, 5, 8, 2**32 - 1, 2**32, -1, 2.0, "2"])
    elif field_name == "IncludePadding":
        value = pick(rng, [2, -1, 2**31 - 1, 2**31, -(2**31), 2**40, "yes", None, 1.5, np.bool_(True), np.int32(0)])
    else:
        current = list(getattr(desc, field_name) or [1, 1])
        how = int(rng.integers(0, 4))
        if how == 0 and current:
            i = int(rng.integers(0, len(current)))
            current[i] = pick(rng, UINT_NONSENSE)
            value = current
        elif how == 1:
            value = current[:-1] if rng.integers(0, 2) else [*current, 1]
        elif how == 2:
            value = pick(rng, ARRAY_NONSENSE)
        else:
            value = [pick(rng, [0, 1, 2, 3, 2**31, 2**32 - 1]) for _ in current]
    setattr(desc, field_name, value)
    return f"op.{field_name} = {value!r}"


def m_operator_wrapper(plan: Plan, rng: np.random.Generator) -> str:
    desc = inner_desc(plan)
    op_type = pick(rng, [
        DML_OPERATOR_TYPE.AVERAGE_POOLING, DML_OPERATOR_TYPE.AVERAGE_POOLING1, DML_OPERATOR_TYPE.CONVOLUTION,
        DML_OPERATOR_TYPE.INVALID, 9999, -1, 2**32, "AVERAGE_POOLING", None, 1.0,
    ])  # fmt: skip
    inner = pick(rng, [desc, desc, None, "desc", DML_OPERATOR_DESC(DML_OPERATOR_TYPE.AVERAGE_POOLING, desc)])
    plan.desc = pick(
        rng,
        [DML_OPERATOR_DESC(op_type, inner), DML_OPERATOR_DESC(op_type, inner), "not a desc", None, 42, desc.__class__],
    )
    return f"wrapped: {plan.desc!r}"[:200]


def m_extreme_valid(plan: Plan, rng: np.random.Generator) -> str:
    """Huge windows, paddings, strides or dilations whose output is still small: a valid desc."""
    desc = inner_desc(plan)
    buf_in, buf_out = (
        tensor_buffer(getattr(desc, "InputTensor", None)),
        tensor_buffer(getattr(desc, "OutputTensor", None)),
    )
    if (
        buf_in is None
        or buf_out is None
        or not isinstance(desc, (dmlpy.DML_AVERAGE_POOLING_OPERATOR_DESC, dmlpy.DML_AVERAGE_POOLING1_OPERATOR_DESC))
    ):
        return "extreme: not a pooling desc"
    try:
        spatial = len(buf_in.Sizes) - 2
        axis = int(rng.integers(0, spatial))
        big = pick(rng, [2**16, 2**24, 2**31, 2**32 - 2, 2**32 - 1])
        arrays = {name: list(getattr(desc, name, None) or [1] * spatial) for name in OP_ARRAYS if hasattr(desc, name)}
        kind = pick(rng, ["stride+start", "window+start", "window+end", "dilation+padding", "end+stride"])
        if kind == "stride+start":
            arrays["Strides"][axis] = big
            arrays["StartPadding"][axis] = big - 1
        elif kind == "window+start":
            arrays["WindowSize"][axis] = big
            arrays["StartPadding"][axis] = big - 1
        elif kind == "window+end":
            arrays["WindowSize"][axis] = big
            arrays["EndPadding"][axis] = big - 1
        elif kind == "dilation+padding" and "Dilations" in arrays:
            arrays["WindowSize"][axis] = 2
            arrays["Dilations"][axis] = big
            arrays["StartPadding"][axis] = big - 1
        else:
            arrays["EndPadding"][axis] = big
            arrays["Strides"][axis] = big
        for name, values in arrays.items():
            setattr(desc, name, values)
        desc.DimensionCount = spatial
        dil = arrays.get("Dilations")
        out = dmlpy.average_pooling_output_sizes(
            buf_in.Sizes,
            arrays["WindowSize"],
            arrays["Strides"],
            arrays["StartPadding"],
            arrays["EndPadding"],
            dil,
            ceil_mode=bool(rng.integers(0, 2)),
        )
    except (TypeError, ValueError, IndexError):
        return "extreme: desc already broken"
    if min(out) < 1 or math.prod(out) > 4096:
        return f"extreme ({kind}): output {out} too big, not applied"
    buf_out.Sizes = tuple(out)
    buf_out.Strides = None
    buf_out.DimensionCount = len(out)
    buf_out.TotalTensorSizeInBytes = dmlpy.calc_buffer_tensor_size(buf_out.DataType, out)
    return f"extreme ({kind}) axis {axis} = {big}: output {out}"


def m_output_sizes(plan: Plan, rng: np.random.Generator) -> str:
    buf = tensor_buffer(getattr(inner_desc(plan), "OutputTensor", None))
    if buf is None or not isinstance(buf.Sizes, (list, tuple)):
        return "output sizes: no tensor"
    sizes = [max(1, int(s) + int(rng.integers(-1, 2))) if isinstance(s, int) else 1 for s in buf.Sizes]
    buf.Sizes, buf.Strides = sizes, None
    buf.TotalTensorSizeInBytes = dmlpy.calc_buffer_tensor_size(buf.DataType, sizes) if buf.DataType in (1, 2) else 64
    return f"OutputTensor.Sizes = {sizes}"


def m_axes(plan: Plan, rng: np.random.Generator) -> str:
    """An Axes array (softmax, MVN1, reduce, arg, hardmax1) out of range, repeated, empty, absent or of the wrong type."""
    desc = inner_desc(plan)
    if not hasattr(desc, "Axes"):
        return "no Axes"
    desc.Axes = pick(rng, [[], [7], [0, 0], [3, 2, 1, 0], [4], [2**32 - 1], None, [-1], "1"])
    return f"Axes = {desc.Axes!r}"


def m_in_binding(plan: Plan, rng: np.random.Generator) -> str:
    return _binding_mutation(plan, rng, "in")


def m_out_binding(plan: Plan, rng: np.random.Generator) -> str:
    return _binding_mutation(plan, rng, "out")


def _binding_mutation(plan: Plan, rng: np.random.Generator, side: str) -> str:
    how = pick(rng, ["offset", "size", "alloc", "odd-alloc", "type", "desc", "list"])
    if how == "offset":
        value = pick(
            rng, [1, 2, 4, 8, 15, 17, 24, 48, 4096, 2**64 - 16, 2**64, -16, 16.0, "16", None, np.uint64(16), True]
        )
        setattr(plan, f"{side}_offset", value if value is not None else "none")
    elif how == "size":
        value = pick(rng, [0, 1, 3, -1, 4.5, "8", 2**63, 2**64 - 1, 2**64, "total-1", "total-4", "rest", "rest+4"])
        setattr(plan, f"{side}_size", value)
    elif how == "alloc":
        value = pick(rng, [0, 4, 8, "total/2", "total-4", "guard"])
        setattr(plan, f"{side}_alloc", value)
    elif how == "odd-alloc":
        value = pick(rng, ["+1", "+2", "+3"])
        setattr(plan, f"{side}_alloc", value)
    elif how == "type":
        value = pick(rng, [DML_BINDING_TYPE.NONE, DML_BINDING_TYPE.BUFFER_ARRAY, 3, -1, "BUFFER", None, 1.0])
        setattr(plan, f"{side}_type", value)
    elif how == "desc":
        value = pick(rng, [None, "desc", 7, "array", "null-buffer", "numpy-buffer", "binding-desc"])
        setattr(plan, f"{side}_desc", value)
    else:
        name, transform = pick(rng, LIST_TRANSFORMS)
        setattr(plan, f"{side}_list", transform)
        value = name
    return f"{side} binding {how} = {value!r}"


LIST_TRANSFORMS: list[tuple[str, Callable[[Any], Any]]] = [
    ("[]", lambda b: []),
    ("[b, b]", lambda b: [b, b]),
    ("[b] * 3", lambda b: [b] * 3),
    ("[None]", lambda b: [None]),
    ("[5]", lambda b: [5]),
    ("['b']", lambda b: ["b"]),
    ("b", lambda b: b),
    ("None", lambda b: None),
    ("(b,)", lambda b: (b,)),
    ("[NONE]", lambda b: [DML_BINDING_DESC()]),
    ("iter([b])", lambda b: iter([b])),
    ("{0: b}", lambda b: {0: b}),
]


def m_shared_buffer(plan: Plan, rng: np.random.Generator) -> str:
    plan.out_is_input_buffer = True
    return "output bound in the input's buffer"


def m_owned(plan: Plan, rng: np.random.Generator) -> str:
    buf = tensor_buffer(getattr(inner_desc(plan), "InputTensor", None))
    if buf is not None:
        buf.Flags = DML_TENSOR_FLAGS.OWNED_BY_DML
        plan.owned = True
    plan.owned_rule_broken = pick(rng, ["", "", "bind-at-execute", "missing-at-init"])
    return f"InputTensor OWNED_BY_DML, rule broken: {plan.owned_rule_broken or 'no'}"


def m_steps(plan: Plan, rng: np.random.Generator) -> str:
    what = pick(rng, [
        "compile_flags", "initializer_targets", "init_inputs", "init_outputs", "skip_init_dispatch", "table_size", "reset_to",
        "persistent", "temporary", "rebind_after_record", "close_list", "record_into_closed_list", "foreign_device",
    ])  # fmt: skip
    values: dict[str, list[Any]] = {
        "compile_flags": [1, 2, 4, 7, 8, 2**31, -1, "x", None, 1.5, DML_EXECUTION_FLAGS.DESCRIPTORS_VOLATILE],
        "initializer_targets": ["none", "twice", "junk"],
        "init_inputs": ["none", "junk", "wrong-count", "plain-buffer", "entry-junk"],
        "init_outputs": ["none", "junk", "too-small"],
        "skip_init_dispatch": [True],
        "table_size": ["zero"],
        "reset_to": ["initializer", "junk"],
        "persistent": ["none", "too-small", "misaligned", "junk"],
        "temporary": ["junk", "buffer", "misaligned"],
        "rebind_after_record": ["inputs-none", "outputs-junk", "outputs-elsewhere"],
        "close_list": [False],
        "record_into_closed_list": [True],
        "foreign_device": ["table", "list"],
    }
    value = pick(rng, values[what])
    setattr(plan, what, value)
    if what == "rebind_after_record" and rng.integers(0, 2):
        plan.compile_flags = DML_EXECUTION_FLAGS.DESCRIPTORS_VOLATILE
    return f"step {what} = {value!r}"


MUTATIONS: list[tuple[Callable[[Plan, np.random.Generator], str], int]] = [
    (m_tensor_sizes, 3),
    (m_tensor_strides, 3),
    (m_tensor_scalar, 4),
    (m_tensor_object, 1),
    (m_op_field, 4),
    (m_operator_wrapper, 1),
    (m_extreme_valid, 3),
    (m_output_sizes, 1),
    (m_in_binding, 4),
    (m_out_binding, 5),
    (m_shared_buffer, 1),
    (m_owned, 2),
    (m_steps, 5),
]


Mutation = Callable[[Any, np.random.Generator], str]


def mutate(plan: Any, rng: np.random.Generator, mutations: Sequence[tuple[Mutation, int]], counts: Sequence[int] = (0, 1, 1, 2, 2, 3)) -> Any:
    """Applies a count drawn from ``counts`` of mutations, each drawn by weight, logging each on the plan
    (every fuzz file's cases are a valid case run through this)."""
    weights = np.array([w for _, w in mutations], dtype=float)
    for _ in range(int(rng.choice(list(counts)))):
        mutation = mutations[int(rng.choice(len(mutations), p=weights / weights.sum()))][0]
        try:
            line = mutation(plan, rng)
        except Exception as error:  # noqa: BLE001 - helpers choke on descs earlier mutations broke
            line = f"not applied to the already broken desc ({type(error).__name__})"
        plan.log.append(f"{mutation.__name__}: {line}")
    return plan


def make_case(batch: int, index: int) -> Plan:
    rng = np.random.default_rng([SEED, batch, index])
    return mutate(valid_case(rng), rng, MUTATIONS)


# ---------------------------------------------------------------------------------------
# Running a case


class Guards:
    """Every buffer of a case, its bytes before the pipeline, and where writes are allowed."""

    def __init__(self) -> None:
        self.buffers: list[tuple[str, Buffer, np.ndarray]] = []
        self.allowed: dict[int, list[tuple[int, int]]] = {}

    def track(self, name: str, buffer: Buffer) -> Buffer:
        self.buffers.append((name, buffer, buffer.data.copy()))
        return buffer

    def refresh(self) -> None:
        """Snapshot again after the inputs were uploaded."""
        self.buffers = [(name, buffer, buffer.data.copy()) for name, buffer, _ in self.buffers]

    def allow(self, buffer: Any, offset: Any, size: Any, total: Any = None) -> None:
        """An output binding: DirectML may write [offset, offset + min(size, total))."""
        if not isinstance(buffer, Buffer):
            return
        offset_int = sane_int(offset, 2**64)
        size_int = sane_int(size, 2**64)
        if offset_int is None or size_int is None:
            return
        total_int = sane_int(total, 2**64)
        limit = min(size_int, total_int) if total_int is not None else size_int
        self.allowed.setdefault(id(buffer), []).append((offset_int, min(offset_int + limit, buffer.size)))

    def violations(self) -> list[str]:
        problems = []
        for name, buffer, before in self.buffers:
            changed = buffer.data != before
            for lo, hi in self.allowed.get(id(buffer), []):
                changed[lo:hi] = False
            if changed.any():
                where = np.flatnonzero(changed)
                problems.append(
                    f"{name} ({buffer.size} bytes, allowed {self.allowed.get(id(buffer), [])}): {where.size} bytes changed at {where[:8].tolist()}..."
                )
        return problems


def _filled(size: int, name: str, guards: Guards) -> Buffer:
    buffer = Buffer(size, name)
    if size:
        buffer.data[:] = np.resize(SENTINEL, size)
    return guards.track(name, buffer)


def _alloc_size(spec: Any, total: int, guard: int) -> int:
    if spec is None:
        return guard + total + 32
    if isinstance(spec, int):
        return spec
    return {
        "total/2": guard + total // 2 // 4 * 4,
        "total-4": guard + max(0, total - 4),
        "guard": guard,
        "+1": guard + total + 32 + 1,
        "+2": guard + total + 32 + 2,
        "+3": guard + total + 32 + 3,
    }[spec]


def _binding(plan: Plan, side: str, buffer: Buffer, total: int, guard: int, guards: Guards, tensor_total: Any) -> Any:
    offset = getattr(plan, f"{side}_offset")
    offset = guard if offset is None else (None if offset == "none" else offset)
    size = getattr(plan, f"{side}_size")
    rest = buffer.size - offset if isinstance(offset, int) and not isinstance(offset, bool) else 0
    size = (
        {None: total, "total-1": total - 1, "total-4": total - 4, "rest": rest, "rest+4": rest + 4}.get(size, size)
        if isinstance(size, (str, type(None)))
        else size
    )
    binding_desc: Any = DML_BUFFER_BINDING(buffer, offset, size)
    special = getattr(plan, f"{side}_desc")
    if special != "default":
        binding_desc = {
            None: None,
            "desc": "desc",
            7: 7,
            "array": DML_BUFFER_ARRAY_BINDING(1, [DML_BUFFER_BINDING(buffer, offset, size)]),
            "null-buffer": DML_BUFFER_BINDING(None, offset, size),
            "numpy-buffer": DML_BUFFER_BINDING(buffer.data, offset, size),
            "binding-desc": DML_BINDING_DESC(DML_BINDING_TYPE.BUFFER, DML_BUFFER_BINDING(buffer, offset, size)),
        }[special]
    if side == "out":
        guards.allow(buffer, offset, size, tensor_total)
    return DML_BINDING_DESC(getattr(plan, f"{side}_type"), binding_desc)


@contextlib.contextmanager
def limits(seconds: float) -> Iterator[None]:
    """A time limit (SIGALRM) and an address-space cap while a case runs (POSIX only)."""
    try:
        import resource
    except ImportError:  # pragma: no cover
        resource = None  # type: ignore[assignment]
    old_limit = None
    if resource is not None and sys.platform.startswith("linux"):
        with open("/proc/self/status", encoding="ascii") as status:
            vm = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
        old_limit = resource.getrlimit(resource.RLIMIT_AS)
        cap = vm + MEMORY_HEADROOM
        if old_limit[1] == resource.RLIM_INFINITY or cap < old_limit[1]:
            resource.setrlimit(resource.RLIMIT_AS, (cap, old_limit[1]))
        else:
            old_limit = None
    use_alarm = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if use_alarm:

        def on_alarm(signum: int, frame: Any) -> None:
            raise CaseTimeout(f"case ran longer than {seconds} s")

        previous = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        if use_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        if old_limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, old_limit)


@dataclass
class Outcome:
    stage: str = "start"
    error: BaseException | None = None
    problems: list[str] = field(default_factory=list)
    executed: bool = False


def run_case(plan: Plan, backend: str) -> Outcome:
    outcome = Outcome()
    guards = Guards()
    device = dmlpy.create_device(backend=backend)
    other_device = dmlpy.create_device(backend=backend)
    desc = plan.desc
    inner = inner_desc(plan)
    x_buf = tensor_buffer(getattr(inner, "InputTensor", None))
    y_buf = tensor_buffer(getattr(inner, "OutputTensor", None))
    x_total = sane_int(getattr(x_buf, "TotalTensorSizeInBytes", None)) or 16
    y_total = sane_int(getattr(y_buf, "TotalTensorSizeInBytes", None)) or 16
    y_tensor_total = getattr(y_buf, "TotalTensorSizeInBytes", None)

    in_size = _alloc_size(plan.in_alloc, x_total, plan.in_guard)
    in_buffer = _filled(in_size, "input", guards)
    if plan.out_is_input_buffer:
        out_buffer = in_buffer
    else:
        out_buffer = _filled(_alloc_size(plan.out_alloc, y_total, plan.out_guard), "output", guards)
    # input data inside the bound range: small finite values of the tensor's type
    if x_buf is not None and x_buf.DataType in (DML_TENSOR_DATA_TYPE.FLOAT32, DML_TENSOR_DATA_TYPE.FLOAT16):
        dtype = np.float32 if x_buf.DataType == DML_TENSOR_DATA_TYPE.FLOAT32 else np.float16
        count = max(0, min(x_total, in_size - plan.in_guard)) // np.dtype(dtype).itemsize
        if count:
            in_buffer.upload(np.linspace(-2, 2, count).astype(dtype), plan.in_guard)
    guards.refresh()

    report_ok: bool | None = None
    try:
        outcome.stage = "validate"
        report = dmlpy.validate(desc)
        assert isinstance(report, dmlpy.Report), f"validate returned {type(report).__name__}"
        report_ok = report.ok
        outcome.stage = "create_operator"
        try:
            operator = device.create_operator(desc)
        except DmlError:
            assert report_ok is not True, "validate() found no error but create_operator raised DmlError"
            raise
        assert report_ok is True, f"validate() found errors {report.rule_ids} but create_operator accepted the desc"
        outcome.stage = "compile"
        compiled = device.compile_operator(operator, plan.compile_flags)
        props = compiled.get_binding_properties()
        n_slots = props.RequiredDescriptorCount

        outcome.stage = "create_initializer"
        targets = {"compiled": [compiled], "none": None, "twice": [compiled, compiled], "junk": ["junk"]}[
            plan.initializer_targets
        ]
        initializer = device.create_operator_initializer(targets)
        table_desc: Any = initializer if plan.table_size == "default" else DML_BINDING_TABLE_DESC(initializer, 0, 0, 0)
        outcome.stage = "create_binding_table"
        table = (other_device if plan.foreign_device == "table" else device).create_binding_table(table_desc)
        recorder = device.create_command_recorder()
        command_list = (other_device if plan.foreign_device == "list" else device).create_command_list()

        persistent_size = props.PersistentResourceSize
        persistent = None
        if persistent_size and persistent_size <= MAX_ALLOCATION:
            size = persistent_size // 2 // 4 * 4 if plan.persistent == "too-small" else persistent_size
            persistent = _filled(256 + size + 64, "persistent", guards)
        persistent_offset = 16 if plan.persistent == "misaligned" else 256

        def persistent_binding() -> Any:
            if plan.persistent == "junk":
                return DML_BINDING_DESC(DML_BINDING_TYPE.BUFFER, "junk")
            if persistent is None or plan.persistent == "none":
                return DML_BINDING_DESC()
            return DML_BINDING_DESC(
                DML_BINDING_TYPE.BUFFER,
                DML_BUFFER_BINDING(persistent, persistent_offset, persistent.size - persistent_offset),
            )

        if persistent is not None:
            guards.allow(persistent, persistent_offset, persistent.size - persistent_offset)

        in_binding = _binding(plan, "in", in_buffer, x_total, plan.in_guard, guards, None)
        in_entry = in_binding.Desc if isinstance(in_binding.Desc, DML_BUFFER_BINDING) else DML_BUFFER_BINDING()

        # --- initialize ---
        outcome.stage = "init.bind_inputs"
        owned_entry = in_entry if (plan.owned and plan.owned_rule_broken != "missing-at-init") else None
        if plan.init_inputs == "default":
            table.bind_inputs([dmlpy.array_binding([owned_entry])])
        elif plan.init_inputs == "junk":
            table.bind_inputs([DML_BINDING_DESC(DML_BINDING_TYPE.BUFFER_ARRAY, "junk")])
        elif plan.init_inputs == "wrong-count":
            table.bind_inputs([dmlpy.array_binding([owned_entry, owned_entry])])
        elif plan.init_inputs == "plain-buffer":
            table.bind_inputs([in_binding])
        elif plan.init_inputs == "entry-junk":
            table.bind_inputs([DML_BINDING_DESC(DML_BINDING_TYPE.BUFFER_ARRAY, DML_BUFFER_ARRAY_BINDING(1, ["junk"]))])
        outcome.stage = "init.bind_outputs"
        if plan.init_outputs == "default":
            table.bind_outputs([persistent_binding()])
        elif plan.init_outputs == "junk":
            table.bind_outputs(
                [DML_BINDING_DESC(DML_BINDING_TYPE.BUFFER, DML_BUFFER_BINDING(in_buffer, 0, in_buffer.size))]
            )
            guards.allow(in_buffer, 0, in_buffer.size)
        elif plan.init_outputs == "too-small":
            small = _filled(16, "small persistent", guards)
            guards.allow(small, 0, 16)
            table.bind_outputs([DML_BINDING_DESC(DML_BINDING_TYPE.BUFFER, DML_BUFFER_BINDING(small, 0, 16))])
        if not plan.skip_init_dispatch:
            outcome.stage = "init.record"
            recorder.record_dispatch(command_list, initializer, table)
            command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav()])  # the dispatch after the initializer reads what it wrote

        # --- execute bindings ---
        outcome.stage = "reset"
        target = {"compiled": compiled, "initializer": initializer, "junk": "junk"}[plan.reset_to]
        table.reset(DML_BINDING_TABLE_DESC(target, 0, 0, n_slots))
        outcome.stage = "bind_inputs"
        execute_input = DML_BINDING_DESC() if plan.owned and plan.owned_rule_broken != "bind-at-execute" else in_binding
        table.bind_inputs(plan.in_list(execute_input))
        outcome.stage = "bind_outputs"
        out_guard = plan.out_guard if not plan.out_is_input_buffer else 0
        out_binding = _binding(plan, "out", out_buffer, y_total, out_guard, guards, y_tensor_total)
        table.bind_outputs(plan.out_list(out_binding))
        outcome.stage = "bind_persistent"
        table.bind_persistent_resource(persistent_binding() if persistent_size else None)
        if plan.temporary != "none":
            outcome.stage = "bind_temporary"
            temporary = _filled(512, "temporary", guards)
            offset = 16 if plan.temporary == "misaligned" else 256
            guards.allow(temporary, offset, 256)
            binding = (
                DML_BINDING_DESC(DML_BINDING_TYPE.BUFFER, "junk")
                if plan.temporary == "junk"
                else DML_BINDING_DESC(DML_BINDING_TYPE.BUFFER, DML_BUFFER_BINDING(temporary, offset, 256))
            )
            table.bind_temporary_resource(binding)
        if plan.record_into_closed_list:
            command_list.close()
        outcome.stage = "record"
        recorder.record_dispatch(command_list, compiled, table)
        if plan.rebind_after_record:
            outcome.stage = "rebind"
            if plan.rebind_after_record == "inputs-none":
                table.bind_inputs(None)
            elif plan.rebind_after_record == "outputs-junk":
                table.bind_outputs([DML_BINDING_DESC(DML_BINDING_TYPE.BUFFER, DML_BUFFER_BINDING(out_buffer, 1, 3))])
            else:
                elsewhere = _filled(max(64, y_total + 64), "second output", guards)
                guards.allow(elsewhere, 32, elsewhere.size - 32, y_tensor_total)
                table.bind_outputs(
                    [DML_BINDING_DESC(DML_BINDING_TYPE.BUFFER, DML_BUFFER_BINDING(elsewhere, 32, elsewhere.size - 32))]
                )
        if plan.close_list:
            command_list.close()
        outcome.stage = "execute"
        device.execute(command_list)
        outcome.executed = True
    except ALLOWED as error:
        outcome.error = error
        if isinstance(error, DmlError):
            if not error.findings:
                outcome.problems.append(f"DmlError at {outcome.stage} carries no findings: {error}")
            unknown = [f.rule for f in error.findings if f.rule not in dmlpy.RULES]
            if unknown:
                outcome.problems.append(f"DmlError at {outcome.stage} names unregistered rules {unknown}")
            if (
                outcome.stage in BIND_STAGES
                and error.hresult != HRESULT.DXGI_ERROR_DEVICE_REMOVED
                and device.get_device_removed_reason() == HRESULT.S_OK
            ):
                outcome.problems.append(f"DmlError at {outcome.stage} did not remove the device")
    except CaseTimeout as error:
        outcome.error = error
        outcome.problems.append(
            f"hang at {outcome.stage}: {error}\n{''.join(traceback.format_exception(error))[-3000:]}"
        )
    except Exception as error:  # noqa: BLE001 - the point of the fuzz: anything else is a bug
        outcome.error = error
        outcome.problems.append(
            f"{type(error).__name__} at {outcome.stage}: {error}\n{''.join(traceback.format_exception(error))[-3000:]}"
        )
    outcome.problems.extend(f"guard bytes changed in {v}" for v in guards.violations())
    if not plan.log and not outcome.executed:
        outcome.problems.append(f"an unmutated case failed at {outcome.stage}: {outcome.error!r}")
    return outcome


def describe(plan: Plan, batch: int, index: int, outcome: Outcome) -> str:
    lines = [f"case (batch {batch}, index {index}; make_case({batch}, {index})) failed at stage {outcome.stage}:"]
    lines += [f"  mutation {line}" for line in plan.log] or ["  (no mutation)"]
    lines.append(f"  desc: {plan.desc!r}"[:1500])
    lines += [f"  problem: {p}" for p in outcome.problems]
    return "\n".join(lines)


def run_batch(batch: int, cases: int, make: Callable[[int, int], Any], run: Callable[[Any], Any], explain: Callable[[Any, int, int, Any], str] = describe) -> None:
    """One batch of a fuzz: each case made and run under the time limit with DmlWarnings silenced; fails
    listing the first few cases whose outcome has problems."""
    failures = []
    for index in range(cases):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", dmlpy.DmlWarning)
            with limits(CASE_TIME_LIMIT):
                case = make(batch, index)
                outcome = run(case)
        if outcome.problems:
            failures.append(explain(case, batch, index, outcome))
    assert not failures, f"{len(failures)} of {cases} cases failed:\n\n" + "\n\n".join(failures[:6])


@pytest.mark.slow
@pytest.mark.parametrize("batch", range(BATCHES))
def test_fuzz_batch(backend: str, batch: int) -> None:
    """Random descs and bindings: only DmlError/TypeError/ValueError, and no write outside a bound output."""
    run_batch(batch, CASES_PER_BATCH, make_case, lambda plan: run_case(plan, backend))


def test_fuzz_generates_at_least_2000_cases_per_backend() -> None:
    assert BATCHES * CASES_PER_BATCH >= 2000


def test_unmutated_cases_run_through_dmlpy_run() -> None:
    """The fuzz's starting points are valid: they run on NumPy and give the reference answer."""
    for index in range(25):
        plan = valid_case(np.random.default_rng([SEED, 999, index]))
        desc = inner_desc(plan)
        x_sizes = tuple(desc.InputTensor.Desc.Sizes)
        x = np.random.default_rng(index).uniform(-1, 1, size=x_sizes).astype(desc.InputTensor.Desc.dtype)
        if desc.InputTensor.Desc.Strides is not None and 0 in desc.InputTensor.Desc.Strides:
            axis = list(desc.InputTensor.Desc.Strides).index(0)
            x = np.ascontiguousarray(np.broadcast_to(np.take(x, [0], axis=axis), x_sizes))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", dmlpy.DmlWarning)
            y = dmlpy.run(plan.desc, backend="numpy", InputTensor=x)
        assert y.shape == tuple(desc.OutputTensor.Desc.Sizes)


# ---------------------------------------------------------------------------------------
# Minimal repros of what the fuzz found (each also shows up in the random batches above)


def _bound_table(stage: str) -> tuple[dmlpy.Device, dmlpy.BindingTable, Buffer]:
    """A fresh device and a binding table for an initializer ("init") or a compiled operator ("execute")."""
    device = dmlpy.create_device(backend="numpy")
    desc = dmlpy.DML_AVERAGE_POOLING_OPERATOR_DESC(
        dmlpy.buffer_tensor(np.float32, (1, 1, 2, 2)),
        dmlpy.buffer_tensor(np.float32, (1, 1, 1, 1)),
        2,
        (1, 1),
        (2, 2),
        (0, 0),
        (0, 0),
        False,
    )
    compiled = device.compile_operator(device.create_operator(desc))
    dispatchable = device.create_operator_initializer([compiled]) if stage == "init" else compiled
    return device, device.create_binding_table(dispatchable), device.create_buffer(64)


@pytest.mark.parametrize(
    ("stage", "method", "bindings"),
    [
        ("execute", "bind_inputs", [5]),
        ("execute", "bind_outputs", ["junk"]),
        ("execute", "bind_inputs", {0: "a dict iterates its keys"}),
        (
            "init",
            "bind_inputs",
            [DML_BINDING_DESC(DML_BINDING_TYPE.BUFFER_ARRAY, DML_BUFFER_ARRAY_BINDING(1, ["junk"]))],
        ),
    ],
    ids=["int-entry", "str-entry", "dict", "array-entry-not-a-buffer-binding"],
)
def test_bind_with_entries_of_the_wrong_python_type_raises_type_error_or_dml_error(
    stage: str, method: str, bindings: Any
) -> None:
    """binding.py reads ``.Type`` / ``.Buffer`` without checking the entry's type, so AttributeError escapes."""
    _, table, _ = _bound_table(stage)
    with pytest.raises(ALLOWED):
        getattr(table, method)(bindings)


def test_calc_buffer_tensor_size_with_numpy_integers_does_not_wrap() -> None:
    """NumPy uint32 sizes and strides (as a list of NumPy scalars) must be widened like Python ints, not wrap in 32 bits."""
    expected = dmlpy.calc_buffer_tensor_size(DML_TENSOR_DATA_TYPE.FLOAT32, [3, 2], [2**31, 1])
    assert expected == ((2 * 2**31 + 1) + 1) * 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sizes, strides = [np.uint32(3), np.uint32(2)], [np.uint32(2**31), np.uint32(1)]
        assert dmlpy.calc_buffer_tensor_size(DML_TENSOR_DATA_TYPE.FLOAT32, sizes, strides) == expected


@pytest.mark.parametrize("field_name", ["window_size", "strides", "dilations"])
def test_average_pooling_output_sizes_rejects_zero_with_value_error(field_name: str) -> None:
    kwargs: dict[str, Any] = {"input_sizes": (1, 1, 4, 4), "window_size": (2, 2), field_name: (0, 1)}
    with pytest.raises(ValueError, match="below 1"):
        dmlpy.average_pooling_output_sizes(**kwargs)
