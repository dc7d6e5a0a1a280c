"""Fuzzing convolution and GEMM descs and bindings through the whole pipeline, on both backends.

The approach of test_fuzz.py (whose harness pieces are imported from it: guard bytes, the time
and memory limits, the nonsense values), applied to DML_CONVOLUTION_OPERATOR_DESC: each case
starts from a valid convolution (either direction and mode, 1-D to 3-D, groups, dilations,
padding, sometimes OutputPadding, with or without a bias, with or without a fused activation,
FLOAT32 or FLOAT16, random layouts) and applies zero to three mutations: nonsense in any of the
four tensors or the desc's fields, a broken or unfusable FusedActivation, extreme but valid
sizes, a device of another feature level, wrong bindings for any slot (a buffer for an absent
bias, NONE for a described one, bad offsets, sizes and types), OWNED_BY_DML filters and biases
with broken initializer bindings, and misused steps. GEMM cases (DML_GEMM_OPERATOR_DESC: the same
four slots, A, B, an optional C and the output) go through the same mutations and checks.

What must hold, whatever happened:

* only ``dmlpy.DmlError``, ``TypeError`` or ``ValueError`` come out;
* nothing is written outside a bound output range (every buffer is filled with a sentinel,
  and only ``[Offset, Offset + min(SizeInBytes, TotalTensorSizeInBytes))`` of the output binding
  or the bound persistent resource may change); inputs are never written;
* ``validate`` and ``create_operator`` agree; a DmlError names registered rules; a DmlError
  from Bind* or RecordDispatch leaves the device removed;
* an unmutated case runs without error.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import math
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from test_fuzz import (
    ALLOWED,
    ARRAY_NONSENSE,
    LIST_TRANSFORMS,
    SENTINEL,
    UINT_NONSENSE,
    CaseTimeout,
    Guards,
    mutate,
    pick,
    run_batch,
    sane_int,
    tensor_buffer,
)

import dmlpy
from dmlpy import D3D12_RESOURCE_BARRIER
from dmlpy import (
    DML_ACTIVATION_LINEAR_OPERATOR_DESC,
    DML_ACTIVATION_RELU_OPERATOR_DESC,
    DML_AVERAGE_POOLING_OPERATOR_DESC,
    DML_BINDING_DESC,
    DML_BINDING_TABLE_DESC,
    DML_BINDING_TYPE,
    DML_BUFFER_ARRAY_BINDING,
    DML_BUFFER_BINDING,
    DML_CONVOLUTION_OPERATOR_DESC,
    DML_EXECUTION_FLAGS,
    DML_FEATURE_LEVEL,
    DML_GEMM_OPERATOR_DESC,
    DML_OPERATOR_DESC,
    DML_OPERATOR_TYPE,
    DML_TENSOR_DATA_TYPE,
    DML_TENSOR_DESC,
    DML_TENSOR_FLAGS,
    HRESULT,
    Buffer,
    DmlError,
    FusedActivation,
)

SEED = 0xC0_4E_F022
BATCHES = 10
CASES_PER_BATCH = 100  # per backend: 1,000 cases
MAX_ALLOCATION = 1 << 16
OP = DML_OPERATOR_TYPE
INPUTS = ("InputTensor", "FilterTensor", "BiasTensor")
TENSORS = (*INPUTS, "OutputTensor")
# GEMM has the same four slots (two inputs, an optional third, the output): the plan keys bindings by the
# convolution's names, and slot() finds the desc's field for each.
GEMM_FIELDS = {"InputTensor": "ATensor", "FilterTensor": "BTensor", "BiasTensor": "CTensor", "OutputTensor": "OutputTensor"}
GEMM_BATCHES = 5  # per backend: 500 GEMM cases


def slot(desc: Any, name: str) -> str:
    """The field of ``desc`` that holds the tensor of slot ``name`` (the convolution's slot names)."""
    return GEMM_FIELDS[name] if isinstance(desc, DML_GEMM_OPERATOR_DESC) else name
ARRAYS = ("Strides", "Dilations", "StartPadding", "EndPadding", "OutputPadding")
BIND_STAGES = ("init.bind_inputs", "init.bind_outputs", "init.record", "bind_inputs", "bind_outputs", "bind_persistent", "bind_temporary", "record")


@dataclass
class Binding:
    """How one slot is bound; ``None`` fields take the valid default."""

    alloc: Any = None
    guard: int = 32
    offset: Any = None
    size: Any = None
    type: Any = DML_BINDING_TYPE.BUFFER
    desc: Any = "default"


@dataclass
class Plan:
    desc: Any
    log: list[str] = field(default_factory=list)
    feature_level: DML_FEATURE_LEVEL = DML_FEATURE_LEVEL.LEVEL_6_4
    bindings: dict[str, Binding] = field(default_factory=lambda: {name: Binding() for name in TENSORS})
    in_list: Callable[[Any], Any] = lambda b: b
    out_list: Callable[[Any], Any] = lambda b: [b]
    bias_binding: str = "follow"  # follow the desc, "buffer" (even when absent), "none" (even when described)
    out_in_buffer_of: str = ""  # bind the output inside this input's buffer
    owned: set[str] = field(default_factory=set)
    owned_rule_broken: str = ""  # "", "bind-at-execute", "missing-at-init"
    compile_flags: Any = DML_EXECUTION_FLAGS.NONE
    initializer_targets: str = "compiled"
    init_inputs: str = "default"
    skip_init_dispatch: bool = False
    table_size: str = "default"
    reset_to: str = "compiled"
    persistent: str = "default"
    temporary: str = "none"
    rebind_after_record: str = ""
    close_list: bool = True
    record_into_closed_list: bool = False


def inner_desc(plan: Plan) -> Any:
    return plan.desc.Desc if isinstance(plan.desc, DML_OPERATOR_DESC) else plan.desc


# ---------------------------------------------------------------------------------------
# A valid starting point


def random_activation(rng: np.random.Generator) -> Any:
    kind = pick(rng, ["identity", "linear", "relu", "leaky_relu", "sigmoid", "tanh", "elu", "hard_sigmoid", "softplus", "gelu"])
    params = {"linear": (float(rng.uniform(-2, 2)), float(rng.uniform(-1, 1))), "leaky_relu": (float(rng.uniform(0, 1)),), "elu": (float(rng.uniform(0.1, 2)),),
              "hard_sigmoid": (float(rng.uniform(0, 1)), float(rng.uniform(0, 1))), "softplus": (float(rng.uniform(1, 3)),)}.get(kind, ())  # fmt: skip
    fused = getattr(FusedActivation, kind)(*params)
    return fused.Desc if rng.integers(0, 4) == 0 else fused  # sometimes the bare desc, which dmlpy wraps


def _layout(rng: np.random.Generator, sizes: tuple[int, ...], *, broadcast: bool) -> tuple[int, ...] | None:
    kind = int(rng.integers(0, 5 if broadcast else 4))
    if kind == 0:
        return None
    if kind == 1:
        return dmlpy.nhwc_strides(sizes)
    if kind == 2:
        return dmlpy.packed_strides(sizes)
    if kind == 3:
        return dmlpy.packed_strides([s + int(rng.integers(0, 3)) for s in sizes])
    strides = list(dmlpy.packed_strides(sizes))
    strides[0] = 0
    return tuple(strides)


def valid_case(rng: np.random.Generator) -> Plan:
    spatial = int(rng.integers(1, 4))
    backward = bool(rng.integers(0, 2))
    dtype = pick(rng, [np.float32, np.float16])
    groups = int(rng.integers(1, 4))
    cin, cout = groups * int(rng.integers(1, 3)), groups * int(rng.integers(1, 3))
    kernel = [int(rng.integers(1, 4)) for _ in range(spatial)]
    strides = [int(rng.integers(1, 4)) for _ in range(spatial)]
    dilations = [int(rng.integers(1, 3)) for _ in range(spatial)]
    # One case in four has the shape the native Winograd path takes (2-D 3x3 stride 1, >= 16 channels per
    # group, >= 64 outputs; the kernel 4 stride 2 BACKWARD shape too), so its stores face the guards as
    # well; within MAX_ALLOCATION even with padded layouts.
    winograd = bool(rng.integers(0, 4) == 0)
    if winograd:
        k, s = (4, 2) if backward and rng.integers(0, 2) else (3, 1)
        spatial, groups = 2, int(rng.integers(1, 3)) if k == 3 else 1
        cin, cout = (32, 32) if groups == 2 else (int(rng.integers(16, 19)), int(rng.integers(16, 19)))
        kernel, strides, dilations = [k, k], [s, s], [1, 1]
    start = [int(rng.integers(0, 3)) for _ in range(spatial)]
    end = [int(rng.integers(0, 3)) for _ in range(spatial)]
    output_padding = [int(rng.integers(0, 2)) if rng.integers(0, 6) == 0 else 0 for _ in range(spatial)]
    in_spatial = []
    for k, s, d, sp, ep in zip(kernel, strides, dilations, start, end, strict=True):
        keff = (k - 1) * d + 1
        low = max(1, 1 + -(-(sp + ep + 1 - keff) // s)) if backward else max(1, keff - sp - ep)
        in_spatial.append(low + int(rng.integers(*((8, 12) if s == 1 else (6, 9))) if winograd else rng.integers(0, 3)))
    x_sizes = (1 if winograd else int(rng.integers(1, 3)), cin, *in_spatial)
    w_sizes = (cin, cout // groups, *kernel) if backward else (cout, cin // groups, *kernel)
    direction = dmlpy.DML_CONVOLUTION_DIRECTION(int(backward))
    y_sizes = list(dmlpy.convolution_output_sizes(x_sizes, w_sizes, strides, dilations, start, end, output_padding, groups, direction))
    if backward:
        for i, s in enumerate(strides):
            y_sizes[2 + i] += int(rng.integers(0, s))
    y_sizes = tuple(y_sizes)
    b_sizes = (1, cout) + (1,) * spatial
    desc: Any = DML_CONVOLUTION_OPERATOR_DESC(
        InputTensor=dmlpy.buffer_tensor(dtype, x_sizes, _layout(rng, x_sizes, broadcast=True)),
        FilterTensor=dmlpy.buffer_tensor(dtype, w_sizes, _layout(rng, w_sizes, broadcast=False)),
        BiasTensor=dmlpy.buffer_tensor(dtype, b_sizes, pick(rng, [None, (0, 1) + (0,) * spatial])) if rng.integers(0, 2) else None,
        OutputTensor=dmlpy.buffer_tensor(dtype, y_sizes, _layout(rng, y_sizes, broadcast=False)),
        Mode=int(rng.integers(0, 2)),
        Direction=direction,
        DimensionCount=spatial if rng.integers(0, 4) else None,
        Strides=strides, Dilations=dilations, StartPadding=start, EndPadding=end, OutputPadding=output_padding,
        GroupCount=groups,
        FusedActivation=random_activation(rng) if rng.integers(0, 2) else None,
    )  # fmt: skip
    if rng.integers(0, 4) == 0:
        desc = dmlpy.operator_desc(desc)
    plan = Plan(desc)
    for name in TENSORS:
        plan.bindings[name].guard = int(rng.choice([0, 16, 32, 64] if name != "OutputTensor" else [16, 32, 64]))
    return plan


def _gemm_layout(rng: np.random.Generator, sizes: tuple[int, ...], *, broadcast: tuple[int, ...] = ()) -> tuple[int, ...] | None:
    """No strides, packed, padded rows, the matrix stored transposed (column-major), or zero strides on ``broadcast`` axes."""
    kind = int(rng.integers(0, 5 if broadcast else 4))
    if kind == 0:
        return None
    if kind == 1:
        return dmlpy.packed_strides(sizes)
    if kind == 2:
        return dmlpy.packed_strides([s + int(rng.integers(0, 3)) for s in sizes])
    strides = list(dmlpy.packed_strides(sizes))
    if kind == 3:  # column-major matrices: element (i, j) at i + j * rows
        rows = sizes[-2]
        strides[-2], strides[-1] = 1, rows
        return tuple(strides)
    for axis in broadcast:
        if rng.integers(0, 2):
            strides[axis] = 0
    return tuple(strides)


def valid_gemm_case(rng: np.random.Generator) -> Plan:
    """A valid GEMM: 2-D to 4-D, TransA/TransB, with or without C, Alpha/Beta, a fused activation or none, FLOAT32 or
    FLOAT16, random layouts (broadcast batches and a C broadcast along rows or columns by zero strides). One case in three
    is wide enough for the C kernel's full 8 x 48 tiles and its in-place reading of B."""
    rank = int(rng.integers(2, 5))
    dtype = pick(rng, [np.float32, np.float16])
    wide = bool(rng.integers(0, 3) == 0)
    batch = tuple(1 if wide else int(rng.integers(1, 3)) for _ in range(rank - 2))
    m, k = (int(rng.integers(1, 18)), int(rng.integers(1, 24))) if wide else (int(rng.integers(1, 6)), int(rng.integers(1, 6)))
    n = int(rng.integers(48, 80)) if wide else int(rng.integers(1, 6))
    trans_a, trans_b = int(rng.integers(0, 2)), int(rng.integers(0, 2))
    a_sizes = (*batch, k, m) if trans_a else (*batch, m, k)
    b_sizes = (*batch, n, k) if trans_b else (*batch, k, n)
    y_sizes = (*batch, m, n)
    batch_axes = tuple(range(rank - 2))
    desc: Any = DML_GEMM_OPERATOR_DESC(
        ATensor=dmlpy.buffer_tensor(dtype, a_sizes, _gemm_layout(rng, a_sizes, broadcast=batch_axes)),
        BTensor=dmlpy.buffer_tensor(dtype, b_sizes, _gemm_layout(rng, b_sizes, broadcast=batch_axes)),
        CTensor=dmlpy.buffer_tensor(dtype, y_sizes, _gemm_layout(rng, y_sizes, broadcast=(*batch_axes, rank - 2, rank - 1))) if rng.integers(0, 2) else None,
        OutputTensor=dmlpy.buffer_tensor(dtype, y_sizes, _gemm_layout(rng, y_sizes)),
        TransA=trans_a, TransB=trans_b,
        Alpha=float(pick(rng, [1.0, -0.5, rng.uniform(-2, 2)])), Beta=float(pick(rng, [1.0, 0.0, rng.uniform(-2, 2)])),
        FusedActivation=random_activation(rng) if rng.integers(0, 2) else None,
    )  # fmt: skip
    if rng.integers(0, 4) == 0:
        desc = dmlpy.operator_desc(desc)
    plan = Plan(desc)
    for name in TENSORS:
        plan.bindings[name].guard = int(rng.choice([0, 16, 32, 64] if name != "OutputTensor" else [16, 32, 64]))
    return plan


# ---------------------------------------------------------------------------------------
# Mutations


def _tensor(plan: Plan, rng: np.random.Generator) -> tuple[str, Any]:
    name = pick(rng, list(TENSORS))
    desc = inner_desc(plan)
    return name, tensor_buffer(getattr(desc, slot(desc, name), None))


def m_tensor_sizes(plan: Plan, rng: np.random.Generator) -> str:
    name, buf = _tensor(plan, rng)
    if buf is None or not isinstance(buf.Sizes, (list, tuple)):
        return f"sizes: no {name}"
    sizes = list(buf.Sizes)
    how = int(rng.integers(0, 4))
    if how == 0 and sizes:
        i = int(rng.integers(0, len(sizes)))
        sizes[i] = pick(rng, UINT_NONSENSE)
        buf.Sizes = sizes
        return f"{name}.Sizes[{i}] = {sizes[i]!r}"
    if how == 1:
        buf.Sizes = pick(rng, ARRAY_NONSENSE)
        return f"{name}.Sizes = {buf.Sizes!r}"
    if how == 2 and sizes:
        i = int(rng.integers(0, len(sizes)))
        sizes[i] = pick(rng, [1, 2, 3, 2**16, 2**31, 2**32 - 1])
        buf.Sizes = sizes
        if rng.integers(0, 2):
            with contextlib.suppress(Exception):
                buf.TotalTensorSizeInBytes = dmlpy.calc_buffer_tensor_size(buf.DataType, buf.Sizes, buf.Strides)
        return f"{name}.Sizes[{i}] = {sizes[i]} (Total {buf.TotalTensorSizeInBytes})"
    rank = int(rng.integers(0, 9))
    buf.Sizes, buf.Strides = [int(rng.integers(1, 4)) for _ in range(rank)], None
    if rng.integers(0, 2):
        buf.DimensionCount = rank
    with contextlib.suppress(ValueError, TypeError):
        buf.TotalTensorSizeInBytes = dmlpy.calc_buffer_tensor_size(buf.DataType, buf.Sizes)
    return f"{name} rank {rank}: Sizes {buf.Sizes}, DimensionCount {buf.DimensionCount}"


def m_tensor_strides(plan: Plan, rng: np.random.Generator) -> str:
    name, buf = _tensor(plan, rng)
    if buf is None or not isinstance(buf.Sizes, (list, tuple)):
        return f"strides: no {name}"
    sizes = list(buf.Sizes)
    how = int(rng.integers(0, 4))
    if how == 0:
        buf.Strides = [int(rng.integers(0, 8)) for _ in sizes]
    elif how == 1:
        buf.Strides = [pick(rng, [2**31, 2**32 - 1, 1]) for _ in sizes]
    elif how == 2 and sizes:
        strides = list(buf.Strides or dmlpy.packed_strides(sizes))
        strides[int(rng.integers(0, len(strides)))] = pick(rng, UINT_NONSENSE)
        buf.Strides = strides
    else:
        buf.Strides = pick(rng, ARRAY_NONSENSE)
    if rng.integers(0, 3):
        with contextlib.suppress(ValueError, TypeError):
            buf.TotalTensorSizeInBytes = dmlpy.calc_buffer_tensor_size(buf.DataType, sizes, buf.Strides)
    return f"{name}.Strides = {buf.Strides!r}"


def m_tensor_scalar(plan: Plan, rng: np.random.Generator) -> str:
    name, buf = _tensor(plan, rng)
    if buf is None:
        return f"scalar: no {name}"
    field_name = pick(rng, ["DimensionCount", "DataType", "Flags", "TotalTensorSizeInBytes", "GuaranteedBaseOffsetAlignment"])
    total = buf.TotalTensorSizeInBytes if isinstance(buf.TotalTensorSizeInBytes, int) else 16
    value = pick(rng, {
        "DimensionCount": [None, 0, 1, 3, 4, 5, 6, 9, 2**32, -1, "4"],
        "DataType": [0, 3, 9, 99, -1, "FLOAT16", "FLOAT32", "BOGUS", None, DML_TENSOR_DATA_TYPE.FLOAT16, DML_TENSOR_DATA_TYPE.FLOAT32],
        "Flags": [1, 2, 0xFFFFFFFF, -1, None, "x", DML_TENSOR_FLAGS.OWNED_BY_DML],
        "TotalTensorSizeInBytes": [0, total - 1, total - 4, total + 2, 2**64 - 1, 2**64, -4, 3.5, None],
        "GuaranteedBaseOffsetAlignment": [1, 3, 8, 32, 64, 2**31, -1, None],
    }[field_name])  # fmt: skip
    setattr(buf, field_name, value)
    if field_name == "Flags" and name != "OutputTensor" and value in (1, DML_TENSOR_FLAGS.OWNED_BY_DML):
        plan.owned.add(name)
    return f"{name}.{field_name} = {value!r}"


def m_tensor_object(plan: Plan, rng: np.random.Generator) -> str:
    desc = inner_desc(plan)
    name = pick(rng, list(TENSORS))
    current = tensor_buffer(getattr(desc, slot(desc, name), None))
    other = getattr(desc, slot(desc, pick(rng, list(TENSORS))), None)
    spatial = len(current.Sizes) - 2 if current is not None and isinstance(current.Sizes, (list, tuple)) else 2
    value = pick(rng, [
        None, "tensor", 5, current, DML_TENSOR_DESC(0, current), DML_TENSOR_DESC(1, None), other,
        dmlpy.buffer_tensor(np.float32, (1, 2) + (1,) * max(0, spatial)), dmlpy.buffer_tensor(np.float32, (2,)),
    ])  # fmt: skip
    setattr(desc, slot(desc, name), value)
    return f"{name} = {value!r}"[:200]


def m_op_field(plan: Plan, rng: np.random.Generator) -> str:
    desc = inner_desc(plan)
    if not dataclasses.is_dataclass(desc):
        return "op field: desc is not a dataclass"
    if isinstance(desc, DML_GEMM_OPERATOR_DESC):
        field_name = pick(rng, ["TransA", "TransB", "Alpha", "Beta"])
        if field_name.startswith("Trans"):
            value: Any = pick(rng, [0, 1, 2, 255, -1, 2**32, None, "TRANSPOSE", 1.0])
        else:
            value = pick(rng, [0.0, -1.0, math.nan, math.inf, -math.inf, 3.4e39, 1e-45, "1", None, 2**100, True])
        setattr(desc, field_name, value)
        return f"op.{field_name} = {value!r}"
    field_name = pick(rng, [*ARRAYS, "DimensionCount", "GroupCount", "Mode", "Direction"])
    if field_name == "DimensionCount":
        value = pick(rng, [None, 0, 1, 2, 3, 4, 2**32 - 1, -1, 2.0, "2"])
    elif field_name == "GroupCount":
        value = pick(rng, [0, 1, 2, 3, 4, 7, 2**31, 2**32 - 1, 2**32, -1, None, 1.5, "2"])
    elif field_name in ("Mode", "Direction"):
        value = pick(rng, [0, 1, 2, 255, -1, 2**32, None, "CONVOLUTION", "BACKWARD", "FORWARD", 1.0])
    else:
        current = list(getattr(desc, field_name, None) or [1, 1])
        how = int(rng.integers(0, 4))
        if how == 0 and current:
            current[int(rng.integers(0, len(current)))] = pick(rng, UINT_NONSENSE)
            value = current
        elif how == 1:
            value = current[:-1] if rng.integers(0, 2) else [*current, 1]
        elif how == 2:
            value = pick(rng, ARRAY_NONSENSE)
        else:
            value = [pick(rng, [0, 1, 2, 3, 2**31, 2**32 - 1]) for _ in current]
    setattr(desc, field_name, value)
    return f"op.{field_name} = {value!r}"


def m_fused(plan: Plan, rng: np.random.Generator) -> str:
    desc = inner_desc(plan)
    y = getattr(desc, "OutputTensor", None)
    how = pick(rng, ["junk", "tensors", "params", "mismatch", "pooling", "type", "gelu", "none"])
    if how == "junk":
        value: Any = pick(rng, ["RELU", 44, object(), DML_OPERATOR_DESC(None, None), DML_OPERATOR_DESC(OP.ACTIVATION_RELU, "desc"), [FusedActivation.relu()]])
    elif how == "tensors":
        relu = DML_ACTIVATION_RELU_OPERATOR_DESC(y if rng.integers(0, 2) else None, y if rng.integers(0, 2) else dmlpy.buffer_tensor(np.float32, (1, 1, 1, 1)))
        value = DML_OPERATOR_DESC(OP.ACTIVATION_RELU, relu)
    elif how == "params":
        value = pick(rng, [FusedActivation.softplus(1.0), FusedActivation.linear(1.0, 0.0), FusedActivation.elu(), FusedActivation.leaky_relu()])
        name = {"ACTIVATION_SOFTPLUS": "Steepness"}.get(value.Type.name, "Alpha")
        setattr(value.Desc, name, pick(rng, [0.0, -1.0, 0.5, math.nan, math.inf, -math.inf, 1e38, 3.4e39, "1", None, 2**100, True]))
    elif how == "mismatch":
        value = DML_OPERATOR_DESC(pick(rng, [OP.ACTIVATION_RELU, OP.ACTIVATION_SOFTPLUS, OP.ACTIVATION_GELU]), DML_ACTIVATION_LINEAR_OPERATOR_DESC(None, None, 1.0, 0.0))
    elif how == "pooling":
        value = pick(rng, [DML_AVERAGE_POOLING_OPERATOR_DESC(DimensionCount=2), DML_OPERATOR_DESC(OP.AVERAGE_POOLING, DML_AVERAGE_POOLING_OPERATOR_DESC(DimensionCount=2))])
    elif how == "type":
        value = DML_OPERATOR_DESC(pick(rng, [9999, -1, 2**32, OP.ACTIVATION_SOFTSIGN, OP.ELEMENT_WISE_CLIP, OP.CONVOLUTION, "RELU"]), DML_ACTIVATION_RELU_OPERATOR_DESC())
    elif how == "gelu":
        value = FusedActivation.gelu()
        plan.feature_level = pick(rng, [DML_FEATURE_LEVEL.LEVEL_5_0, DML_FEATURE_LEVEL.LEVEL_5_1])
    else:
        value = None
    desc.FusedActivation = value
    return f"FusedActivation ({how}) = {value!r}"[:200]


def m_extreme_valid(plan: Plan, rng: np.random.Generator) -> str:
    """Huge strides, paddings or dilations on one axis whose output stays small: still a valid desc."""
    desc = inner_desc(plan)
    x, w, y = (tensor_buffer(getattr(desc, name, None)) for name in ("InputTensor", "FilterTensor", "OutputTensor"))
    if not isinstance(desc, DML_CONVOLUTION_OPERATOR_DESC) or x is None or w is None or y is None:
        return "extreme: not a usable desc"
    try:
        spatial = len(x.Sizes) - 2
        axis = int(rng.integers(0, spatial))
        big = pick(rng, [2**16, 2**24, 2**31, 2**32 - 2, 2**32 - 1])
        arrays = {name: list(getattr(desc, name)) for name in ARRAYS}
        arrays["OutputPadding"][axis] = 0
        kind = pick(rng, ["stride+start", "dilation+start", "end+stride", "dilation+end"])
        w_sizes = list(w.Sizes)
        if kind == "stride+start":
            arrays["Strides"][axis], arrays["StartPadding"][axis] = big, big - 1
        elif kind == "dilation+start":
            w_sizes[2 + axis] = 2
            arrays["Dilations"][axis], arrays["StartPadding"][axis] = big, big - 1
        elif kind == "end+stride":
            arrays["EndPadding"][axis], arrays["Strides"][axis] = big, big
        else:
            w_sizes[2 + axis] = 2
            arrays["Dilations"][axis], arrays["EndPadding"][axis] = big, big
        backward = desc.Direction == dmlpy.DML_CONVOLUTION_DIRECTION.BACKWARD
        sizes = [int(v) for v in x.Sizes]
        if backward:
            sizes[2 + axis] = min(sizes[2 + axis], 2)
        out = dmlpy.convolution_output_sizes(sizes, w_sizes, arrays["Strides"], arrays["Dilations"], arrays["StartPadding"], arrays["EndPadding"],
                                             arrays["OutputPadding"], desc.GroupCount, desc.Direction)  # fmt: skip
    except (TypeError, ValueError, IndexError, AttributeError):
        return "extreme: desc already broken"
    if min(out) < 1 or math.prod(out) > 4096:
        return f"extreme ({kind}): output {out} too big, not applied"
    for name, values in arrays.items():
        setattr(desc, name, values)
    desc.DimensionCount = spatial
    for buf, new_sizes in ((x, sizes), (w, w_sizes), (y, out)):
        buf.Sizes, buf.Strides, buf.DimensionCount = tuple(new_sizes), None, len(new_sizes)
        buf.TotalTensorSizeInBytes = dmlpy.calc_buffer_tensor_size(buf.DataType, new_sizes)
    return f"extreme ({kind}) axis {axis} = {big}: output {out}"


def m_output_sizes(plan: Plan, rng: np.random.Generator) -> str:
    buf = tensor_buffer(getattr(inner_desc(plan), "OutputTensor", None))
    if buf is None or not isinstance(buf.Sizes, (list, tuple)):
        return "output sizes: no tensor"
    sizes = [max(1, int(s) + int(rng.integers(-1, 2))) if isinstance(s, int) else 1 for s in buf.Sizes]
    buf.Sizes, buf.Strides = sizes, None
    buf.TotalTensorSizeInBytes = dmlpy.calc_buffer_tensor_size(buf.DataType, sizes) if buf.DataType in (1, 2) else 64
    return f"OutputTensor.Sizes = {sizes}"


def m_feature_level(plan: Plan, rng: np.random.Generator) -> str:
    plan.feature_level = pick(rng, [DML_FEATURE_LEVEL.LEVEL_1_0, DML_FEATURE_LEVEL.LEVEL_2_1, DML_FEATURE_LEVEL.LEVEL_3_1, DML_FEATURE_LEVEL.LEVEL_4_0, DML_FEATURE_LEVEL.LEVEL_5_0])
    return f"device at {plan.feature_level.name}"


def m_binding(plan: Plan, rng: np.random.Generator) -> str:
    name = pick(rng, list(TENSORS))
    binding = plan.bindings[name]
    how = pick(rng, ["offset", "size", "alloc", "odd-alloc", "type", "desc"])
    if how == "offset":
        binding.offset = pick(rng, [1, 4, 8, 15, 24, 48, 4096, 2**64 - 16, 2**64, -16, 16.0, "16", "none", np.uint64(16), True])
        value = binding.offset
    elif how == "size":
        binding.size = value = pick(rng, [0, 1, 3, -1, 4.5, "8", 2**63, 2**64 - 1, 2**64, "total-1", "total-4", "rest", "rest+4"])
    elif how == "alloc":
        binding.alloc = value = pick(rng, [0, 4, 8, "total/2", "total-4", "guard"])
    elif how == "odd-alloc":
        binding.alloc = value = pick(rng, ["+1", "+2", "+3"])
    elif how == "type":
        binding.type = value = pick(rng, [DML_BINDING_TYPE.NONE, DML_BINDING_TYPE.BUFFER_ARRAY, 3, -1, "BUFFER", None, 1.0])
    else:
        binding.desc = value = pick(rng, [None, "desc", 7, "array", "null-buffer", "numpy-buffer", "binding-desc"])
    return f"{name} binding {how} = {value!r}"


def m_binding_list(plan: Plan, rng: np.random.Generator) -> str:
    if rng.integers(0, 2):
        label, plan.out_list = pick(rng, LIST_TRANSFORMS)
        return f"output binding list {label}"
    def first_only(transform: Callable[[Any], Any]) -> Callable[[Any], Any]:
        return lambda bindings: transform(bindings[0])

    choices: list[tuple[str, Callable[[Any], Any]]] = [(label, first_only(transform)) for label, transform in LIST_TRANSFORMS]
    choices += [("drop the bias", lambda bs: bs[:2]), ("reversed", lambda bs: bs[::-1]), ("a tuple", tuple), ("4 bindings", lambda bs: [*bs, bs[0]])]
    label, plan.in_list = pick(rng, choices)
    return f"input binding list {label}"


def m_bias_binding(plan: Plan, rng: np.random.Generator) -> str:
    plan.bias_binding = pick(rng, ["buffer", "none"])
    return f"bias bound as {plan.bias_binding} whatever the desc says"


def m_shared_buffer(plan: Plan, rng: np.random.Generator) -> str:
    plan.out_in_buffer_of = pick(rng, list(INPUTS))
    return f"output bound in the buffer of {plan.out_in_buffer_of}"


def m_owned(plan: Plan, rng: np.random.Generator) -> str:
    desc = inner_desc(plan)
    names = [n for n in INPUTS if tensor_buffer(getattr(desc, slot(desc, n), None)) is not None and rng.integers(0, 2)] or ["FilterTensor"]
    for name in names:
        buf = tensor_buffer(getattr(desc, slot(desc, name), None))
        if buf is not None:
            buf.Flags = DML_TENSOR_FLAGS.OWNED_BY_DML
            plan.owned.add(name)
    plan.owned_rule_broken = pick(rng, ["", "", "bind-at-execute", "missing-at-init"])
    return f"{names} OWNED_BY_DML, rule broken: {plan.owned_rule_broken or 'no'}"


def m_steps(plan: Plan, rng: np.random.Generator) -> str:
    what = pick(rng, ["compile_flags", "initializer_targets", "init_inputs", "skip_init_dispatch", "table_size", "reset_to", "persistent", "temporary",
                      "rebind_after_record", "close_list", "record_into_closed_list"])  # fmt: skip
    value = pick(rng, {
        "compile_flags": [1, 4, 8, 2**31, -1, "x", None, DML_EXECUTION_FLAGS.DESCRIPTORS_VOLATILE],
        "initializer_targets": ["none", "twice", "junk"],
        "init_inputs": ["none", "junk", "wrong-count", "plain-buffer"],
        "skip_init_dispatch": [True],
        "table_size": ["zero"],
        "reset_to": ["initializer", "junk"],
        "persistent": ["none", "too-small", "misaligned", "junk"],
        "temporary": ["junk", "buffer", "misaligned"],
        "rebind_after_record": ["inputs-none", "outputs-junk", "outputs-elsewhere"],
        "close_list": [False],
        "record_into_closed_list": [True],
    }[what])  # fmt: skip
    setattr(plan, what, value)
    if what == "rebind_after_record" and rng.integers(0, 2):
        plan.compile_flags = DML_EXECUTION_FLAGS.DESCRIPTORS_VOLATILE
    return f"step {what} = {value!r}"


MUTATIONS: list[tuple[Callable[[Plan, np.random.Generator], str], int]] = [
    (m_tensor_sizes, 3), (m_tensor_strides, 3), (m_tensor_scalar, 4), (m_tensor_object, 2), (m_op_field, 5), (m_fused, 4),
    (m_extreme_valid, 4), (m_output_sizes, 2), (m_feature_level, 1), (m_binding, 6), (m_binding_list, 2), (m_bias_binding, 3),
    (m_shared_buffer, 1), (m_owned, 2), (m_steps, 4),
]  # fmt: skip


def make_case(batch: int, index: int, valid: Callable[[np.random.Generator], Plan] = valid_case, stream: int = 0) -> Plan:
    rng = np.random.default_rng([SEED, batch, index] if not stream else [SEED, stream, batch, index])
    plan = valid(rng)
    return mutate(plan, rng, MUTATIONS)


# ---------------------------------------------------------------------------------------
# Running a case


def filled(size: int, name: str, guards: Guards) -> Buffer:
    buffer = Buffer(size, name)
    if size:
        buffer.data[:] = np.resize(SENTINEL, size)
    return guards.track(name, buffer)


def alloc_size(spec: Any, total: int, guard: int) -> int:
    if spec is None:
        return guard + total + 32
    if isinstance(spec, int):
        return spec
    return {"total/2": guard + total // 2 // 4 * 4, "total-4": guard + max(0, total - 4), "guard": guard, "+1": guard + total + 33, "+2": guard + total + 34, "+3": guard + total + 35}[spec]


def binding_desc(binding: Binding, buffer: Buffer, total: int, guards: Guards | None, tensor_total: Any) -> DML_BINDING_DESC:
    offset = binding.guard if binding.offset is None else (None if binding.offset == "none" else binding.offset)
    rest = buffer.size - offset if isinstance(offset, int) and not isinstance(offset, bool) else 0
    size = binding.size
    if isinstance(size, (str, type(None))):
        size = {None: total, "total-1": total - 1, "total-4": total - 4, "rest": rest, "rest+4": rest + 4}.get(size, size)
    inner: Any = DML_BUFFER_BINDING(buffer, offset, size)
    if binding.desc != "default":
        inner = {
            None: None, "desc": "desc", 7: 7, "array": DML_BUFFER_ARRAY_BINDING(1, [DML_BUFFER_BINDING(buffer, offset, size)]),
            "null-buffer": DML_BUFFER_BINDING(None, offset, size), "numpy-buffer": DML_BUFFER_BINDING(buffer.data, offset, size),
            "binding-desc": DML_BINDING_DESC(DML_BINDING_TYPE.BUFFER, DML_BUFFER_BINDING(buffer, offset, size)),
        }[binding.desc]  # fmt: skip
    if guards is not None:
        guards.allow(buffer, offset, size, tensor_total)
    return DML_BINDING_DESC(binding.type, inner)


@dataclass
class Outcome:
    stage: str = "start"
    error: BaseException | None = None
    problems: list[str] = field(default_factory=list)
    executed: bool = False


def run_case(plan: Plan, backend: str) -> Outcome:
    outcome = Outcome()
    guards = Guards()
    device = dmlpy.create_device(plan.feature_level, backend=backend)
    inner = inner_desc(plan)
    bufs = {name: tensor_buffer(getattr(inner, slot(inner, name), None)) for name in TENSORS}
    totals = {name: sane_int(getattr(bufs[name], "TotalTensorSizeInBytes", None), MAX_ALLOCATION) or 16 for name in TENSORS}

    buffers: dict[str, Buffer] = {}
    for name in INPUTS:
        spec = plan.bindings[name]
        buffers[name] = filled(alloc_size(spec.alloc, totals[name], spec.guard), name, guards)
        buf = bufs[name]
        if buf is not None and buf.DataType in (DML_TENSOR_DATA_TYPE.FLOAT32, DML_TENSOR_DATA_TYPE.FLOAT16):
            dtype = np.float32 if buf.DataType == DML_TENSOR_DATA_TYPE.FLOAT32 else np.float16
            count = max(0, min(totals[name], buffers[name].size - spec.guard)) // np.dtype(dtype).itemsize
            if count:
                buffers[name].upload(np.linspace(-2, 2, count).astype(dtype), spec.guard)
    out_spec = plan.bindings["OutputTensor"]
    if plan.out_in_buffer_of:
        out_buffer = buffers[plan.out_in_buffer_of]
        out_spec.guard = 0
    else:
        out_buffer = filled(alloc_size(out_spec.alloc, totals["OutputTensor"], out_spec.guard), "output", guards)
    guards.refresh()

    try:
        outcome.stage = "validate"
        report = dmlpy.validate(plan.desc, feature_level=plan.feature_level)
        outcome.stage = "create_operator"
        try:
            operator = device.create_operator(plan.desc)
        except DmlError:
            assert not report.ok, "validate() found no error but create_operator raised DmlError"
            raise
        assert report.ok, f"validate() found errors {report.rule_ids} but create_operator accepted the desc"
        outcome.stage = "compile"
        compiled = device.compile_operator(operator, plan.compile_flags)
        props = compiled.get_binding_properties()
        outcome.stage = "create_initializer"
        targets = {"compiled": [compiled], "none": None, "twice": [compiled, compiled], "junk": ["junk"]}[plan.initializer_targets]
        initializer = device.create_operator_initializer(targets)
        table = device.create_binding_table(initializer if plan.table_size == "default" else DML_BINDING_TABLE_DESC(initializer, 0, 0, 0))
        recorder, command_list = device.create_command_recorder(), device.create_command_list()

        persistent = None
        if props.PersistentResourceSize and props.PersistentResourceSize <= MAX_ALLOCATION:
            size = props.PersistentResourceSize // 2 // 4 * 4 if plan.persistent == "too-small" else props.PersistentResourceSize
            persistent = filled(256 + size + 64, "persistent", guards)
        persistent_offset = 16 if plan.persistent == "misaligned" else 256
        if persistent is not None:
            guards.allow(persistent, persistent_offset, persistent.size - persistent_offset)

        def persistent_binding() -> DML_BINDING_DESC:
            if plan.persistent == "junk":
                return DML_BINDING_DESC(DML_BINDING_TYPE.BUFFER, "junk")
            if persistent is None or plan.persistent == "none":
                return DML_BINDING_DESC()
            return dmlpy.buffer_binding(persistent, persistent_offset)

        input_bindings = {name: binding_desc(plan.bindings[name], buffers[name], totals[name], None, None) for name in INPUTS}
        bias_described = bufs["BiasTensor"] is not None and getattr(inner, slot(inner, "BiasTensor"), None) is not None
        if plan.bias_binding == "none" or (plan.bias_binding == "follow" and not bias_described):
            input_bindings["BiasTensor"] = DML_BINDING_DESC()

        outcome.stage = "init.bind_inputs"
        entries = [
            input_bindings[name].Desc if name in plan.owned and plan.owned_rule_broken != "missing-at-init" and isinstance(input_bindings[name].Desc, DML_BUFFER_BINDING) else None
            for name in INPUTS
        ]  # fmt: skip
        if plan.init_inputs == "default":
            table.bind_inputs([dmlpy.array_binding(entries)])
        elif plan.init_inputs == "junk":
            table.bind_inputs([DML_BINDING_DESC(DML_BINDING_TYPE.BUFFER_ARRAY, "junk")])
        elif plan.init_inputs == "wrong-count":
            table.bind_inputs([dmlpy.array_binding(entries[:2])])
        elif plan.init_inputs == "plain-buffer":
            table.bind_inputs([input_bindings["InputTensor"]])
        outcome.stage = "init.bind_outputs"
        table.bind_outputs([persistent_binding()])
        if not plan.skip_init_dispatch:
            outcome.stage = "init.record"
            recorder.record_dispatch(command_list, initializer, table)
            command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav()])  # the dispatch after the initializer reads what it wrote

        outcome.stage = "reset"
        target = {"compiled": compiled, "initializer": initializer, "junk": "junk"}[plan.reset_to]
        table.reset(DML_BINDING_TABLE_DESC(target, 0, 0, props.RequiredDescriptorCount))
        outcome.stage = "bind_inputs"
        execute_inputs = [DML_BINDING_DESC() if name in plan.owned and plan.owned_rule_broken != "bind-at-execute" else input_bindings[name] for name in INPUTS]
        table.bind_inputs(plan.in_list(execute_inputs))
        outcome.stage = "bind_outputs"
        out_binding = binding_desc(out_spec, out_buffer, totals["OutputTensor"], guards, getattr(bufs["OutputTensor"], "TotalTensorSizeInBytes", None))
        table.bind_outputs(plan.out_list(out_binding))
        outcome.stage = "bind_persistent"
        table.bind_persistent_resource(persistent_binding() if props.PersistentResourceSize else None)
        if plan.temporary != "none":
            outcome.stage = "bind_temporary"
            temporary = filled(512, "temporary", guards)
            offset = 16 if plan.temporary == "misaligned" else 256
            guards.allow(temporary, offset, 256)
            table.bind_temporary_resource(
                DML_BINDING_DESC(DML_BINDING_TYPE.BUFFER, "junk") if plan.temporary == "junk" else dmlpy.buffer_binding(temporary, offset, 256)
            )
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
                elsewhere = filled(max(64, totals["OutputTensor"] + 64), "second output", guards)
                guards.allow(elsewhere, 32, elsewhere.size - 32, getattr(bufs["OutputTensor"], "TotalTensorSizeInBytes", None))
                table.bind_outputs([dmlpy.buffer_binding(elsewhere, 32)])
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
            if outcome.stage in BIND_STAGES and error.hresult != HRESULT.DXGI_ERROR_DEVICE_REMOVED and device.get_device_removed_reason() == HRESULT.S_OK:
                outcome.problems.append(f"DmlError at {outcome.stage} did not remove the device")
    except CaseTimeout as error:
        outcome.error = error
        outcome.problems.append(f"hang at {outcome.stage}: {error}\n{''.join(traceback.format_exception(error))[-3000:]}")
    except Exception as error:  # noqa: BLE001 - the point of the fuzz: anything else is a bug
        outcome.error = error
        outcome.problems.append(f"{type(error).__name__} at {outcome.stage}: {error}\n{''.join(traceback.format_exception(error))[-3000:]}")
    outcome.problems.extend(f"guard bytes changed in {v}" for v in guards.violations())
    if not plan.log and not outcome.executed:
        outcome.problems.append(f"an unmutated case failed at {outcome.stage}: {outcome.error!r}")
    return outcome


@pytest.mark.slow
@pytest.mark.parametrize("batch", range(BATCHES))
def test_fuzz_convolution_batch(backend: str, batch: int) -> None:
    """Random convolution descs and bindings: only DmlError/TypeError/ValueError, and no write outside a bound output."""
    run_batch(batch, CASES_PER_BATCH, make_case, lambda plan: run_case(plan, backend))


def make_gemm_case(batch: int, index: int) -> Plan:
    return make_case(batch, index, valid_gemm_case, stream=54)


@pytest.mark.slow
@pytest.mark.parametrize("batch", range(GEMM_BATCHES))
def test_fuzz_gemm_batch(backend: str, batch: int) -> None:
    """Random GEMM descs and bindings: only DmlError/TypeError/ValueError, and no write outside a bound output."""
    run_batch(batch, CASES_PER_BATCH, make_gemm_case, lambda plan: run_case(plan, backend))


def test_fuzz_gemm_quick_batch(backend: str) -> None:
    """A quarter of one GEMM batch in the normal suite (the slow marker runs all of them)."""
    run_batch(GEMM_BATCHES, CASES_PER_BATCH // 4, make_gemm_case, lambda plan: run_case(plan, backend))


def test_the_mutations_reach_the_gemm_rules() -> None:
    reached: set[str] = set()
    for batch, index in itertools.product(range(GEMM_BATCHES), range(CASES_PER_BATCH)):
        plan = make_gemm_case(batch, index)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", dmlpy.DmlWarning)
            reached.update(dmlpy.validate(plan.desc, feature_level=plan.feature_level).rule_ids)
    expected = {"GEMM.INNER_SIZE", "GEMM.OUTPUT_SIZE", "GEMM.BATCH_SIZES", "TENSOR.SAME_SIZES", "TENSOR.SAME_DATA_TYPE", "TENSOR.SAME_DIMENSION_COUNT", "ACTIVATION.NOT_FUSABLE"}
    assert expected <= reached, sorted(expected - reached)


def test_unmutated_gemm_cases_give_the_reference_answer_on_both_backends() -> None:
    """The GEMM starting points are valid: through dmlpy.run both backends give gemm_reference's answer."""
    from conftest import native_device

    from dmlpy.operators.convolution import gemm_reference

    native = native_device()
    for index in range(40):
        plan = valid_gemm_case(np.random.default_rng([SEED, 54, 999, index]))
        desc = inner_desc(plan)
        arrays: dict[str, Any] = {}
        for role in INPUTS:
            buf = tensor_buffer(getattr(desc, slot(desc, role)))
            if buf is None:
                continue
            value = np.random.default_rng(index).uniform(-1, 1, size=tuple(buf.Sizes)).astype(buf.dtype)
            for axis, stride in enumerate(buf.Strides or ()):
                if stride == 0:  # a broadcast axis holds one value
                    value = np.ascontiguousarray(np.broadcast_to(np.take(value, [0], axis=axis), value.shape))
            arrays[slot(desc, role)] = value
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", dmlpy.DmlWarning)
            expected = gemm_reference(dmlpy.create_device(backend="numpy").create_operator(plan.desc).desc, {"CTensor": None, **arrays})["OutputTensor"]
            on_numpy = dmlpy.run(plan.desc, backend="numpy", **arrays)
            on_native = dmlpy.run(plan.desc, device=native, **arrays)
        assert on_numpy.shape == tuple(desc.OutputTensor.Desc.Sizes)
        np.testing.assert_array_equal(on_numpy, expected)
        tolerance = 2e-2 if expected.dtype == np.float16 else 1e-5
        np.testing.assert_allclose(on_native.astype(np.float64), expected.astype(np.float64), rtol=tolerance, atol=tolerance, err_msg=str(plan.desc))


def test_fuzz_generates_at_least_1000_convolution_cases_per_backend() -> None:
    assert BATCHES * CASES_PER_BATCH >= 1000


def test_the_mutations_reach_the_convolution_specific_rules() -> None:
    """The fuzz is only as good as what it reaches: its errors include the convolution and fusion rules."""
    reached: set[str] = set()
    for batch, index in itertools.product(range(BATCHES), range(CASES_PER_BATCH)):
        plan = make_case(batch, index)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", dmlpy.DmlWarning)
            report = dmlpy.validate(plan.desc, feature_level=plan.feature_level)
        reached.update(report.rule_ids)
    expected = {
        "ACTIVATION.NOT_FUSABLE", "ACTIVATION.FUSED_TENSORS_NOT_NULL", "ACTIVATION.SOFTPLUS_STEEPNESS", "OPERATOR.FEATURE_LEVEL",
        "CONVOLUTION.ARRAY_LENGTH", "CONVOLUTION.BIAS_SHAPE", "CONVOLUTION.GROUP_DIVIDES_CHANNELS", "CONVOLUTION.FILTER_CHANNELS",
        "CONVOLUTION.OUTPUT_CHANNELS", "CONVOLUTION.OUTPUT_SIZE", "CONVOLUTION.BACKWARD_OUTPUT_SIZE", "CONVOLUTION.PADDING_TOO_LARGE",
        "CONVOLUTION.ONE_D_FEATURE_LEVEL", "CONVOLUTION.MODE", "CONVOLUTION.DIRECTION",
    }  # fmt: skip
    assert expected <= reached, sorted(expected - reached)


def test_unmutated_cases_run_through_dmlpy_run_and_match_the_reference() -> None:
    """The fuzz's starting points are valid and give the NumPy reference's answer through dmlpy.run."""
    from dmlpy.operators.convolution import convolution_reference

    for index in range(25):
        plan = valid_case(np.random.default_rng([SEED, 999, index]))
        desc = inner_desc(plan)
        arrays = {}
        for name in INPUTS:
            buf = tensor_buffer(getattr(desc, name))
            if buf is None:
                arrays[name] = None
                continue
            value = np.random.default_rng(index).uniform(-1, 1, size=tuple(buf.Sizes)).astype(buf.dtype)
            if buf.Strides is not None and 0 in buf.Strides:  # a broadcast axis holds one value
                axis = list(buf.Strides).index(0)
                value = np.ascontiguousarray(np.broadcast_to(np.take(value, [0], axis=axis), tuple(buf.Sizes)))
            arrays[name] = value
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", dmlpy.DmlWarning)
            y = dmlpy.run(plan.desc, backend="numpy", **arrays)
            expected = convolution_reference(dmlpy.create_device(backend="numpy").create_operator(plan.desc).desc, arrays)["OutputTensor"]
        assert y.shape == tuple(desc.OutputTensor.Desc.Sizes)
        np.testing.assert_array_equal(y, expected)
