"""Element-wise operators: the 62 DML_ELEMENT_WISE_*_OPERATOR_DESC structs and DML_VALUE_SCALE_2D.

One mechanism for all of them: ``KERNELS`` maps each operator type to a function of the desc and
its input arrays (in the slot order of the struct), already converted to the working type:

* floating tensors compute in float64 (FLOAT32, FLOAT64) or float32 (FLOAT16, stored as binary16);
* integer tensors compute in their own type, wrapping on overflow as two's complement does;
* an operator with ``ScaleBias`` first applies ``g(x) = x * Scale + Bias`` to its input, as each page
  says (``f(g(x))``); on an integer tensor that step and the function run in float64 and the result
  is truncated toward zero and saturated (docs/deviations.md);
* comparisons, logic and IS_NAN / IS_INFINITY write 1 for true and 0 for false in OutputTensor's
  type (UINT8 or UINT32);
* bit operations act on the stored bit pattern, floating types included.

Formulas come from each operator's page,
https://learn.microsoft.com/windows/win32/api/directml/ns-directml-dml_element_wise_<name>_operator_desc.
Where the pages are silent (integer division by zero, shift counts of the type's width or more,
MAX / MIN of a NaN) docs/deviations.md records dmlpy's choice.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from dmlpy.enums import DML_FEATURE_LEVEL, DML_IS_INFINITY_MODE, DML_OPERATOR_TYPE, DML_ROUNDING_MODE, DML_TENSOR_DATA_TYPE, c_name
from dmlpy.operators import OperatorSpec, no_family_rules, register
from dmlpy.operators.activation import apply_fused
from dmlpy.operators.descs import OPERATORS as DESCS
from dmlpy.operators.descs.element_wise import *  # noqa: F403 - the family's descs, re-exported
from dmlpy.operators.descs.element_wise import __all__ as _DESC_NAMES
from dmlpy.rules import Checker, rule
from dmlpy.support import OPERATORS
from dmlpy.tensor import DML_BUFFER_TENSOR_DESC, numpy_dtype

OP = DML_OPERATOR_TYPE
DT = DML_TENSOR_DATA_TYPE
FL = DML_FEATURE_LEVEL

# ---------------------------------------------------------------------------------------
# Working types and storing


def _floating(dtype: np.dtype[Any]) -> bool:
    return dtype.kind == "f"


def _work_float(dtype: np.dtype[Any]) -> type:
    """FLOAT16 computes in float32; FLOAT32 and FLOAT64 in float64 (then rounded once, to the stored type)."""
    return np.float32 if dtype == np.float16 else np.float64


def store(y: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
    """``y`` in the output's stored type: floats rounded (overflow to inf), floats into integers truncated and saturated."""
    y = np.asarray(y)
    if _floating(dtype) or not _floating(y.dtype):
        with np.errstate(over="ignore", invalid="ignore"):
            return y.astype(dtype)
    info = np.iinfo(dtype)
    t = np.nan_to_num(np.trunc(y.astype(np.float64)), nan=0.0)
    high, low = t >= float(info.max), t <= float(info.min)  # float(2**63 - 1) is 2**63: compare before converting
    inside = np.where(high | low, 0.0, t).astype(dtype)
    return np.where(high, dtype.type(info.max), np.where(low, dtype.type(info.min), inside)).astype(dtype)


def _scale_bias(desc: Any, x: np.ndarray) -> np.ndarray:
    """``x * Scale + Bias`` in ``x``'s (floating) working type, or ``x`` when ScaleBias is NULL. Scale and Bias are
    FLOAT fields: their float32 values, as the C struct (and the C kernel) holds them, not the Python floats."""
    sb = getattr(desc, "ScaleBias", None)
    if sb is None:
        return x
    with np.errstate(over="ignore"):  # beyond float32's range a FLOAT is infinite
        scale, bias = np.float32(sb.Scale), np.float32(sb.Bias)
    return x * x.dtype.type(scale) + x.dtype.type(bias)


def _has_scale_bias(desc: Any) -> bool:
    return getattr(desc, "ScaleBias", None) is not None


def _bits(x: np.ndarray) -> np.ndarray:
    """The stored bit pattern of ``x`` as unsigned integers of the same width."""
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


# ---------------------------------------------------------------------------------------
# The functions. Each takes (desc, *inputs) with inputs in the stored type and returns an array
# ``store`` turns into the output type.

Kernel = Callable[..., np.ndarray]


def _float_math(fn: Callable[[np.ndarray], np.ndarray]) -> Kernel:
    """A floating-point function of ``g(x)`` (the types these pages list are FLOAT32 and FLOAT16)."""

    def kernel(desc: Any, x: np.ndarray) -> np.ndarray:
        return fn(_scale_bias(desc, x.astype(_work_float(x.dtype))))

    return kernel


def _numeric(float_fn: Callable[..., np.ndarray], int_fn: Callable[..., np.ndarray] | None = None) -> Kernel:
    """A unary function on any numeric type: ``g(x)`` and ``float_fn`` on floats (and on integers with a ScaleBias), ``int_fn`` on integers."""

    def kernel(desc: Any, x: np.ndarray) -> np.ndarray:
        if _floating(x.dtype):
            return float_fn(desc, _scale_bias(desc, x.astype(_work_float(x.dtype))))
        if _has_scale_bias(desc) or int_fn is None:
            return float_fn(desc, _scale_bias(desc, x.astype(np.float64)))
        return int_fn(desc, x)

    return kernel


def _int_bound(value: float, dtype: np.dtype[Any]) -> Any:
    """A FLOAT bound (CLIP's Min and Max, THRESHOLD's Min) on an integer tensor: truncated and saturated to the type."""
    info = np.iinfo(dtype)
    if math.isnan(value):
        return dtype.type(0)
    if math.isinf(value):
        return dtype.type(info.max if value > 0 else info.min)
    return dtype.type(min(max(math.trunc(value), info.min), info.max))


def _round(desc: Any, x: np.ndarray) -> np.ndarray:
    x = x.astype(_work_float(x.dtype))
    mode = desc.RoundingMode
    if mode == DML_ROUNDING_MODE.HALVES_TO_NEAREST_EVEN:
        return np.rint(x)
    if mode == DML_ROUNDING_MODE.TOWARD_ZERO:
        return np.trunc(x)
    floor = np.floor(np.abs(x))  # TOWARD_INFINITY: to nearest, halves away from zero
    return np.copysign(np.where(np.abs(x) - floor >= 0.5, floor + 1, floor), x)


def _is_infinity(desc: Any, x: np.ndarray) -> np.ndarray:
    mode = desc.InfinityMode
    if mode == DML_IS_INFINITY_MODE.POSITIVE:
        return np.isposinf(x)
    if mode == DML_IS_INFINITY_MODE.NEGATIVE:
        return np.isneginf(x)
    return np.isinf(x)


def _arith(float_fn: Callable[[np.ndarray, np.ndarray], np.ndarray], int_fn: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None) -> Kernel:
    """A binary function: floats in the working type, integers in their own type (wrapping)."""

    def kernel(desc: Any, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if _floating(a.dtype):
            work = _work_float(a.dtype)
            return float_fn(a.astype(work), b.astype(work))
        with np.errstate(over="ignore"):
            return (int_fn or float_fn)(a, b)

    return kernel


def _divide_truncating(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C's integer division (the DIVIDE page: truncated); dividing by 0 gives 0 (docs/deviations.md)."""
    safe = np.where(b == 0, np.ones_like(b), b)
    with np.errstate(over="ignore"):
        q = np.floor_divide(a, safe)
        inexact = np.remainder(a, safe) != 0
        q = np.where(inexact & ((a < 0) != (safe < 0)), q + a.dtype.type(1), q)
    return np.where(b == 0, np.zeros_like(a), q)


def _modulus_int(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    def kernel(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        safe = np.where(b == 0, np.ones_like(b), b)
        return np.where(b == 0, np.zeros_like(a), fn(a, safe))

    return kernel


def _mean_int(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(a + b) / 2 without overflowing the type, truncated toward zero as C's integer division."""
    total = a.astype(np.int64) + b.astype(np.int64)  # the MEAN tables list 32-bit integers at most
    return np.trunc(total / 2).astype(np.int64)


def _difference_square_int(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d = a - b
    return d * d


def _max_float(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.fmax(a, b)  # IEEE 754 maxNum, as HLSL's max: a NaN loses to a number (docs/deviations.md)


def _min_float(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.fmin(a, b)


def _compare(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Kernel:
    return lambda desc, a, b: fn(a, b)


def _logical(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Kernel:
    return lambda desc, a, b: fn(a != 0, b != 0)


def _bitwise(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Kernel:
    return lambda desc, a, b: fn(_bits(a), _bits(b)).view(a.dtype)


def _shift(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Kernel:
    """The count is taken modulo the type's width, as the GPU's shift instructions do (docs/deviations.md)."""

    def kernel(desc: Any, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        width = a.dtype.type(8 * a.dtype.itemsize - 1)
        return fn(a, (b & width).astype(a.dtype))

    return kernel


def _pow(desc: Any, x: np.ndarray, e: np.ndarray) -> np.ndarray:
    """pow(g(x), e); integer inputs compute in float64, then truncate and saturate (docs/deviations.md)."""
    work = _work_float(x.dtype) if _floating(x.dtype) else np.float64
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.power(_scale_bias(desc, x.astype(work)), e.astype(work))


def _constant_pow(desc: Any, x: np.ndarray) -> np.ndarray:
    work = _work_float(x.dtype)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.power(_scale_bias(desc, x.astype(work)), work(desc.Exponent))


def _clip(desc: Any, x: np.ndarray) -> np.ndarray:
    def on_float(d: Any, v: np.ndarray) -> np.ndarray:
        return np.minimum(np.maximum(v, v.dtype.type(d.Min)), v.dtype.type(d.Max))

    def on_int(d: Any, v: np.ndarray) -> np.ndarray:
        return np.minimum(np.maximum(v, _int_bound(d.Min, v.dtype)), _int_bound(d.Max, v.dtype))

    return _numeric(on_float, on_int)(desc, x)


def _threshold(desc: Any, x: np.ndarray) -> np.ndarray:
    return _numeric(lambda d, v: np.maximum(v, v.dtype.type(d.Min)), lambda d, v: np.maximum(v, _int_bound(d.Min, v.dtype)))(desc, x)


def scalar_value(union: Any, data_type: DT | int) -> Any:
    """The value a DML_SCALAR_UNION holds, read as ``data_type`` (its first bytes, as C reads the union)."""
    dtype = numpy_dtype(data_type)
    return np.frombuffer(union.to_bytes()[: dtype.itemsize], dtype=dtype)[0]


def _clip1(desc: Any, x: np.ndarray) -> np.ndarray:
    low, high = scalar_value(desc.Min, desc.MinMaxDataType), scalar_value(desc.Max, desc.MinMaxDataType)
    if _floating(x.dtype) or _has_scale_bias(desc):
        v = _scale_bias(desc, x.astype(_work_float(x.dtype) if _floating(x.dtype) else np.float64))
        return np.minimum(np.maximum(v, v.dtype.type(low)), v.dtype.type(high))
    return np.minimum(np.maximum(x, x.dtype.type(low)), x.dtype.type(high))


def _quantize(desc: Any, x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None) -> np.ndarray:
    """clamp(round(x / scale) + zero_point, Min, Max), rounding halves to even; computed in float32."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        q = np.rint(x.astype(np.float32) / scale.astype(np.float32)).astype(np.float64)
    if zero_point is not None:
        q = q + zero_point.astype(np.float64)
    return q  # store saturates to the output type's range


def _dequantize(desc: Any, x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None) -> np.ndarray:
    """(x - zero_point) * scale: the difference exactly in int64, the product in float32."""
    d = x.astype(np.int64) - (0 if zero_point is None else zero_point.astype(np.int64))
    return d.astype(np.float32) * scale.astype(np.float32)


def _value_scale_2d(desc: Any, x: np.ndarray) -> np.ndarray:
    work = _work_float(x.dtype)
    bias = np.asarray(desc.Bias, dtype=work).reshape(1, -1, 1, 1)
    return x.astype(work) * work(desc.Scale) + bias


def _add1(desc: Any, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    work = _work_float(a.dtype)
    total = a.astype(work) + b.astype(work)
    if desc.FusedActivation is None:
        return total
    return apply_fused(desc.FusedActivation, total).astype(work)


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x).astype(x.dtype) if x.size else x


KERNELS: dict[OP, Kernel] = {
    # unary math of g(x) = x * Scale + Bias (FLOAT32 and FLOAT16)
    OP.ELEMENT_WISE_ACOS: _float_math(np.arccos),
    OP.ELEMENT_WISE_ASIN: _float_math(np.arcsin),
    OP.ELEMENT_WISE_ATAN: _float_math(np.arctan),
    OP.ELEMENT_WISE_CEIL: _float_math(np.ceil),
    OP.ELEMENT_WISE_COS: _float_math(np.cos),
    OP.ELEMENT_WISE_EXP: _float_math(np.exp),
    OP.ELEMENT_WISE_FLOOR: _float_math(np.floor),
    OP.ELEMENT_WISE_LOG: _float_math(np.log),
    OP.ELEMENT_WISE_RECIP: _float_math(lambda x: 1 / x),
    OP.ELEMENT_WISE_SIN: _float_math(np.sin),
    OP.ELEMENT_WISE_SQRT: _float_math(np.sqrt),
    OP.ELEMENT_WISE_TAN: _float_math(np.tan),
    OP.ELEMENT_WISE_ERF: _float_math(_erf),
    OP.ELEMENT_WISE_SINH: _float_math(np.sinh),
    OP.ELEMENT_WISE_COSH: _float_math(np.cosh),
    OP.ELEMENT_WISE_TANH: _float_math(np.tanh),
    OP.ELEMENT_WISE_ASINH: _float_math(np.arcsinh),
    OP.ELEMENT_WISE_ACOSH: _float_math(np.arccosh),
    OP.ELEMENT_WISE_ATANH: _float_math(np.arctanh),
    OP.ELEMENT_WISE_CONSTANT_POW: _constant_pow,
    # unary on any numeric type
    OP.ELEMENT_WISE_IDENTITY: _numeric(lambda d, x: x, lambda d, x: x),
    OP.ELEMENT_WISE_ABS: _numeric(lambda d, x: np.abs(x), lambda d, x: np.abs(x)),  # INT_MIN stays INT_MIN, as in C
    OP.ELEMENT_WISE_CLIP: _clip,
    OP.ELEMENT_WISE_CLIP1: _clip1,
    OP.ELEMENT_WISE_THRESHOLD: _threshold,
    OP.ELEMENT_WISE_SIGN: lambda d, x: np.sign(x),
    OP.ELEMENT_WISE_NEGATE: lambda d, x: np.negative(x),
    OP.ELEMENT_WISE_ROUND: _round,
    OP.ELEMENT_WISE_IS_NAN: lambda d, x: np.isnan(x),
    OP.ELEMENT_WISE_IS_INFINITY: _is_infinity,
    OP.ELEMENT_WISE_LOGICAL_NOT: lambda d, x: x == 0,
    OP.ELEMENT_WISE_BIT_NOT: lambda d, x: np.invert(_bits(x)).view(x.dtype),
    OP.ELEMENT_WISE_BIT_COUNT: lambda d, x: np.bitwise_count(_bits(x)),
    OP.VALUE_SCALE_2D: _value_scale_2d,
    # binary arithmetic
    OP.ELEMENT_WISE_ADD: _arith(np.add),
    OP.ELEMENT_WISE_ADD1: _add1,
    OP.ELEMENT_WISE_SUBTRACT: _arith(np.subtract),
    OP.ELEMENT_WISE_MULTIPLY: _arith(np.multiply),
    OP.ELEMENT_WISE_DIVIDE: _arith(np.divide, _divide_truncating),
    OP.ELEMENT_WISE_MAX: _arith(_max_float, np.maximum),
    OP.ELEMENT_WISE_MIN: _arith(_min_float, np.minimum),
    OP.ELEMENT_WISE_MEAN: _arith(lambda a, b: (a + b) / 2, _mean_int),
    OP.ELEMENT_WISE_DIFFERENCE_SQUARE: _arith(lambda a, b: np.square(a - b), _difference_square_int),
    OP.ELEMENT_WISE_MODULUS_TRUNCATE: _arith(np.fmod, _modulus_int(np.fmod)),  # a - b * trunc(a / b)
    OP.ELEMENT_WISE_MODULUS_FLOOR: _arith(np.mod, _modulus_int(np.mod)),  # a - b * floor(a / b)
    OP.ELEMENT_WISE_ATAN_YX: _arith(np.arctan2),  # ATensor is y, BTensor is x
    OP.ELEMENT_WISE_POW: _pow,
    # comparisons and logic: 1 or 0
    OP.ELEMENT_WISE_LOGICAL_EQUALS: _compare(np.equal),
    OP.ELEMENT_WISE_LOGICAL_GREATER_THAN: _compare(np.greater),
    OP.ELEMENT_WISE_LOGICAL_LESS_THAN: _compare(np.less),
    OP.ELEMENT_WISE_LOGICAL_GREATER_THAN_OR_EQUAL: _compare(np.greater_equal),
    OP.ELEMENT_WISE_LOGICAL_LESS_THAN_OR_EQUAL: _compare(np.less_equal),
    OP.ELEMENT_WISE_LOGICAL_AND: _logical(np.logical_and),
    OP.ELEMENT_WISE_LOGICAL_OR: _logical(np.logical_or),
    OP.ELEMENT_WISE_LOGICAL_XOR: _logical(np.logical_xor),
    # bits
    OP.ELEMENT_WISE_BIT_AND: _bitwise(np.bitwise_and),
    OP.ELEMENT_WISE_BIT_OR: _bitwise(np.bitwise_or),
    OP.ELEMENT_WISE_BIT_XOR: _bitwise(np.bitwise_xor),
    OP.ELEMENT_WISE_BIT_SHIFT_LEFT: _shift(np.left_shift),
    OP.ELEMENT_WISE_BIT_SHIFT_RIGHT: _shift(np.right_shift),
    # selection and quantization
    OP.ELEMENT_WISE_IF: lambda d, c, a, b: np.where(c != 0, a, b),
    OP.ELEMENT_WISE_QUANTIZE_LINEAR: _quantize,
    OP.ELEMENT_WISE_DEQUANTIZE_LINEAR: _dequantize,
}


def _input_slots(op_type: OP) -> list[str]:
    return [slot.name for slot in OPERATORS[op_type].slots if slot.kind == "input"]


def element_wise_reference(desc: Any, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    """The NumPy kernel of every operator in ``KERNELS``: the function on the inputs, stored in OutputTensor's type."""
    op_type = _TYPE_OF[type(desc)]
    out_dtype = numpy_dtype(desc.OutputTensor.Desc.DataType)
    arrays = [inputs.get(name) for name in _input_slots(op_type)]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        y = KERNELS[op_type](desc, *arrays)
    return {"OutputTensor": store(np.asarray(y), out_dtype)}


# ---------------------------------------------------------------------------------------
# Rules the pages state beyond the support tables and "same" constraints

CLIP1_MIN_MAX_DATA_TYPE = rule("ELEMENT_WISE.CLIP1_MIN_MAX_DATA_TYPE", "ELEMENT_WISE_CLIP1's MinMaxDataType (the type of Min and Max) equals OutputTensor's DataType.",
                               source="ns-directml-dml_element_wise_clip1_operator_desc")  # fmt: skip
ADD1_FUSED_ACTIVATION_FLOAT = rule("ELEMENT_WISE.ADD1_FUSED_ACTIVATION_FLOAT", "ELEMENT_WISE_ADD1's FusedActivation is set only when OutputTensor's DataType is FLOAT32 or FLOAT16.",
                                   source="ns-directml-dml_element_wise_add1_operator_desc")  # fmt: skip
POW_EXPONENT_DATA_TYPE = rule("ELEMENT_WISE.POW_EXPONENT_DATA_TYPE", "Below DML_FEATURE_LEVEL_3_0, ELEMENT_WISE_POW's ExponentTensor has InputTensor's DataType.",
                              source="ns-directml-dml_element_wise_pow_operator_desc")  # fmt: skip
QUANTIZE_SCALE_DATA_TYPE = rule("ELEMENT_WISE.QUANTIZE_SCALE_DATA_TYPE", "ELEMENT_WISE_QUANTIZE_LINEAR's ScaleTensor is FLOAT32 when InputTensor is INT32, and has InputTensor's DataType otherwise.",
                                source="ns-directml-dml_element_wise_quantize_linear_operator_desc")  # fmt: skip
ZERO_POINT_OPTIONAL = rule("ELEMENT_WISE.ZERO_POINT_OPTIONAL", "A (DE)QUANTIZE_LINEAR ZeroPointTensor may be NULL only from DML_FEATURE_LEVEL_6_2.",
                           source="dml-feature-level-history")  # fmt: skip
VALUE_SCALE_2D_CHANNEL_COUNT = rule("ELEMENT_WISE.VALUE_SCALE_2D_CHANNEL_COUNT", "VALUE_SCALE_2D's ChannelCount is 1 or 3 and equals InputTensor's channel size (Sizes[1]).",
                                    source="ns-directml-dml_value_scale_2d_operator_desc")  # fmt: skip

FLOAT_TYPES = (DT.FLOAT32, DT.FLOAT16)


def _check_clip1(ctx: Checker, desc: Any, path: str, buffers: dict[str, DML_BUFFER_TENSOR_DESC | None]) -> None:
    y = buffers["OutputTensor"]
    if y is not None:
        ctx.check(desc.MinMaxDataType == y.DataType, CLIP1_MIN_MAX_DATA_TYPE, f"{path}.MinMaxDataType", actual=desc.MinMaxDataType, expected=y.DataType,
                  why="OutputTensor.DataType")  # fmt: skip


def _check_add1(ctx: Checker, desc: Any, path: str, buffers: dict[str, DML_BUFFER_TENSOR_DESC | None]) -> None:
    y = buffers["OutputTensor"]
    if y is not None and desc.FusedActivation is not None:
        ctx.check(y.DataType in FLOAT_TYPES, ADD1_FUSED_ACTIVATION_FLOAT, f"{path}.FusedActivation", actual=y.DataType, expected="FLOAT32 or FLOAT16",
                  message=f"is set, but OutputTensor.DataType is {c_name(y.DataType)}; a fused activation needs a FLOAT32 or FLOAT16 output")  # fmt: skip


def _check_pow(ctx: Checker, desc: Any, path: str, buffers: dict[str, DML_BUFFER_TENSOR_DESC | None]) -> None:
    x, e = buffers["InputTensor"], buffers["ExponentTensor"]
    if x is not None and e is not None and ctx.feature_level < FL.LEVEL_3_0:
        ctx.check(e.DataType == x.DataType, POW_EXPONENT_DATA_TYPE, f"{path}.ExponentTensor.DataType", actual=e.DataType, expected=x.DataType,
                  why="InputTensor.DataType (below DML_FEATURE_LEVEL_3_0)")  # fmt: skip


def _check_zero_point(ctx: Checker, desc: Any, path: str) -> None:
    if desc.ZeroPointTensor is None:
        ctx.check(ctx.feature_level >= FL.LEVEL_6_2, ZERO_POINT_OPTIONAL, f"{path}.ZeroPointTensor", actual="NULL", expected="a DML_TENSOR_DESC",
                  message=f"is NULL, which DirectML accepts from DML_FEATURE_LEVEL_6_2; the device targets {c_name(ctx.feature_level)}")  # fmt: skip


def _check_quantize(ctx: Checker, desc: Any, path: str, buffers: dict[str, DML_BUFFER_TENSOR_DESC | None]) -> None:
    x, scale = buffers["InputTensor"], buffers["ScaleTensor"]
    if x is not None and scale is not None:
        wanted = DT.FLOAT32 if x.DataType == DT.INT32 else x.DataType
        ctx.check(scale.DataType == wanted, QUANTIZE_SCALE_DATA_TYPE, f"{path}.ScaleTensor.DataType", actual=scale.DataType, expected=wanted,
                  why="FLOAT32 for an INT32 InputTensor, else InputTensor.DataType")  # fmt: skip
    _check_zero_point(ctx, desc, path)


def _check_dequantize(ctx: Checker, desc: Any, path: str, buffers: dict[str, DML_BUFFER_TENSOR_DESC | None]) -> None:
    _check_zero_point(ctx, desc, path)


def _check_value_scale_2d(ctx: Checker, desc: Any, path: str, buffers: dict[str, DML_BUFFER_TENSOR_DESC | None]) -> None:
    count = desc.ChannelCount
    if not ctx.check(count in (1, 3), VALUE_SCALE_2D_CHANNEL_COUNT, f"{path}.ChannelCount", actual=count, expected="1 or 3"):
        return
    x = buffers["InputTensor"]
    sizes = tuple(x.Sizes or ()) if x is not None else ()
    if len(sizes) >= 2:
        ctx.check(sizes[1] == count, VALUE_SCALE_2D_CHANNEL_COUNT, f"{path}.ChannelCount", actual=count, expected=sizes[1], why="InputTensor.Sizes[1]")


CHECKS = {
    OP.ELEMENT_WISE_CLIP1: _check_clip1,
    OP.ELEMENT_WISE_ADD1: _check_add1,
    OP.ELEMENT_WISE_POW: _check_pow,
    OP.ELEMENT_WISE_QUANTIZE_LINEAR: _check_quantize,
    OP.ELEMENT_WISE_DEQUANTIZE_LINEAR: _check_dequantize,
    OP.VALUE_SCALE_2D: _check_value_scale_2d,
}

_TYPE_OF: dict[type, OP] = {DESCS[t].desc_class: t for t in KERNELS}

# The C kernel (dmlpy/native/element_wise.c) takes these operators when every tensor is FLOAT32, or every
# tensor FLOAT16, and ADD1's FusedActivation is one the C activations compute; every other desc runs on
# the NumPy kernel above. The two agree bit for bit except for the transcendental functions (EXP, LOG,
# TANH, ERF, POW, CONSTANT_POW: within 1 ulp of the stored type) and fused activations other than
# IDENTITY and RELU (computed in float32, as the ACTIVATION_* kernels): docs/deviations.md.
NATIVE: frozenset[OP] = frozenset({
    OP.ELEMENT_WISE_ADD, OP.ELEMENT_WISE_ADD1, OP.ELEMENT_WISE_SUBTRACT, OP.ELEMENT_WISE_MULTIPLY, OP.ELEMENT_WISE_DIVIDE,
    OP.ELEMENT_WISE_MAX, OP.ELEMENT_WISE_MIN, OP.ELEMENT_WISE_POW, OP.ELEMENT_WISE_IDENTITY, OP.ELEMENT_WISE_ABS,
    OP.ELEMENT_WISE_NEGATE, OP.ELEMENT_WISE_CLIP, OP.ELEMENT_WISE_CLIP1, OP.ELEMENT_WISE_SQRT, OP.ELEMENT_WISE_RECIP, OP.ELEMENT_WISE_EXP,
    OP.ELEMENT_WISE_LOG, OP.ELEMENT_WISE_TANH, OP.ELEMENT_WISE_ERF, OP.ELEMENT_WISE_CONSTANT_POW,
})  # fmt: skip
# the activations dmlpy/native/activation.c computes (as a FusedActivation too)
NATIVE_FUSED: frozenset[OP] = frozenset({
    OP.ACTIVATION_IDENTITY, OP.ACTIVATION_LINEAR, OP.ACTIVATION_RELU, OP.ACTIVATION_LEAKY_RELU, OP.ACTIVATION_SIGMOID,
    OP.ACTIVATION_TANH, OP.ACTIVATION_ELU, OP.ACTIVATION_HARD_SIGMOID, OP.ACTIVATION_SOFTPLUS, OP.ACTIVATION_GELU,
})  # fmt: skip


def native_covers(desc: Any) -> bool:
    """Whether the C kernel runs ``desc``: all tensors FLOAT32 or all FLOAT16, and a fused activation C computes."""
    tensors = [t for t in (getattr(desc, name, None) for name in ("ATensor", "BTensor", "InputTensor", "ExponentTensor", "OutputTensor")) if t is not None]
    types = {t.Desc.DataType for t in tensors}
    if len(types) != 1 or next(iter(types)) not in FLOAT_TYPES:
        return False
    fused = getattr(desc, "FusedActivation", None)
    return fused is None or OP(fused.Type) in NATIVE_FUSED


for _type in KERNELS:
    register(OperatorSpec(_type, DESCS[_type].desc_class, OPERATORS[_type], CHECKS.get(_type, no_family_rules), element_wise_reference,
                          in_place=DESCS[_type].in_place, native=_type in NATIVE, native_covers=native_covers if _type in NATIVE else None,
                          generic_rules=True))  # fmt: skip

__all__ = [*_DESC_NAMES, "KERNELS", "NATIVE", "element_wise_reference", "native_covers", "scalar_value", "store"]
