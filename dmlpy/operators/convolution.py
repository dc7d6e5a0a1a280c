"""Convolution, forward and backward (transposed): DML_CONVOLUTION_OPERATOR_DESC.

Facts: DirectML.h and the DML_CONVOLUTION_OPERATOR_DESC page and DirectML's operator schema and onnxruntime's DirectML provider. The contract with the C kernels is
docs/convolution-semantics.md; decisions (docs/deviations.md):

* Layouts. FORWARD: Filter ``{Cout, Cin/G, k...}``, output channels ``Filter[0]``.
  BACKWARD (ONNX ConvTranspose): Filter ``{Cin, Cout/G, k...}`` (ONNX's ``W`` unchanged),
  output channels ``Filter[1] * G``. Bias ``{1, Cout, 1, ...}`` with the output's rank.
* Sizes, per spatial axis with ``keff = (k - 1) * d + 1``. FORWARD:
  ``out = (in + start + end - keff) / s + 1 + OutputPadding``. BACKWARD: the natural size
  ``(in - 1) * s + keff - start - end + OutputPadding``, and up to ``s - 1`` more (the extra
  positions are computed, which is how ONNX's output_padding and output_shape reach DirectML).
* Values. CONVOLUTION mode flips the kernel along every spatial axis, CROSS_CORRELATION
  does not. BACKWARD is the exact adjoint of FORWARD with the same filter. The last
  OutputPadding positions of every spatial axis are zero before the bias is added and the
  fused activation applied (a modelling choice: ``CONVOLUTION.OUTPUT_PADDING_NONZERO`` warns).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dmlpy.enums import DML_CONVOLUTION_DIRECTION, DML_CONVOLUTION_MODE, DML_FEATURE_LEVEL, DML_MATRIX_TRANSFORM, DML_OPERATOR_TYPE, c_name
from dmlpy.errors import Severity, int_argument, ints_argument
from dmlpy.operators import OperatorSpec, register
from dmlpy.operators.activation import apply_fused, check_fused_activation, native_fused
from dmlpy.operators.descs.convolution import DML_CONVOLUTION_OPERATOR_DESC, DML_GEMM_OPERATOR_DESC
from dmlpy.rules import Checker, fmt, rule
from dmlpy.support import OPERATORS
from dmlpy.tensor import DML_BUFFER_TENSOR_DESC

MODE = DML_CONVOLUTION_MODE
DIRECTION = DML_CONVOLUTION_DIRECTION
FORWARD, BACKWARD = DIRECTION.FORWARD, DIRECTION.BACKWARD


# ---------------------------------------------------------------------------------------
# Output sizes (DirectMLX asserts on BACKWARD; these answer both directions)


def effective_kernel(kernel: int, dilation: int = 1) -> int:
    """The taps a dilated kernel spans: ``(k - 1) * d + 1``."""
    return (kernel - 1) * dilation + 1


def forward_output_size(size: int, kernel: int, stride: int = 1, start: int = 0, end: int = 0, dilation: int = 1, output_padding: int = 0) -> int:
    """One FORWARD spatial size: ``(in + start + end - keff) / stride + 1 + output_padding``.

    Example: 112 inputs, a 3-tap kernel, stride 2, padding 1 + 1: ``(112 + 1 + 1 - 3) / 2 + 1 = 56``.
    Raises ``ValueError`` when the dilated kernel is longer than the padded input.
    """
    size, kernel, stride, start, end, dilation, output_padding = _axis_arguments("forward_output_size", size, kernel, stride, start, end, dilation, output_padding)
    keff = effective_kernel(kernel, dilation)
    if keff > size + start + end:
        msg = f"forward_output_size: a kernel spanning {keff} taps does not fit {size} + {start} + {end} padded inputs"
        raise ValueError(msg)
    return (size + start + end - keff) // stride + 1 + output_padding


def backward_output_size(size: int, kernel: int, stride: int = 1, start: int = 0, end: int = 0, dilation: int = 1, output_padding: int = 0) -> int:
    """One BACKWARD (transposed) spatial size: the natural ``(in - 1) * stride + keff - start - end + output_padding``.

    Example (a 2x decoder layer): 32 inputs, a 4-tap kernel, stride 2, padding 1 + 1:
    ``(32 - 1) * 2 + 4 - 1 - 1 = 64``. DirectML-in-dmlpy also accepts up to ``stride - 1``
    more (64 or 65 here): those positions are computed, not zeroed. ONNX's
    ``output_padding`` maps to such a larger output with ``OutputPadding`` 0, as onnxruntime
    maps it. Returns the smallest accepted size (at least 1: padding may push the natural
    size to 0 or below while ``stride - 1`` more is still positive, as for the gradient of a
    FORWARD convolution whose last window overhangs the input). Raises ``ValueError`` when
    no size is accepted.
    """
    size, kernel, stride, start, end, dilation, output_padding = _axis_arguments("backward_output_size", size, kernel, stride, start, end, dilation, output_padding)
    lowest, highest = backward_output_size_range(size, kernel, stride, start, end, dilation, output_padding)
    if highest < 1:
        msg = f"padding {start} + {end} leaves no output of a transposed convolution (at most {highest})"
        raise ValueError(msg)
    return lowest


def backward_output_size_range(size: int, kernel: int, stride: int = 1, start: int = 0, end: int = 0, dilation: int = 1, output_padding: int = 0) -> tuple[int, int]:
    """The BACKWARD sizes accepted along one axis: ``max(1, natural) .. natural + stride - 1``.

    These are exactly the sizes S that a FORWARD convolution with the same fields maps back
    to ``size``: ``(S + start + end - keff) / stride + 1 == size`` (the DML_CONVOLUTION_OPERATOR_DESC page's hypothesis,
    docs/deviations.md); ``OutputPadding`` adds to both ends.
    """
    size, kernel, stride, start, end, dilation, output_padding = _axis_arguments("backward_output_size_range", size, kernel, stride, start, end, dilation, output_padding)
    natural = (size - 1) * stride + effective_kernel(kernel, dilation) - start - end + output_padding
    return max(1, natural), natural + stride - 1


def _axis_arguments(function: str, *values: Any) -> tuple[int, ...]:
    """The seven per-axis arguments of the size helpers as ints in their ranges, or a TypeError/ValueError naming the one that is not."""
    names = ("size", "kernel", "stride", "start", "end", "dilation", "output_padding")
    minimums = (1, 1, 1, 0, 0, 1, 0)
    return tuple(int_argument(function, name, value, minimum=minimum) for name, value, minimum in zip(names, values, minimums, strict=True))


def convolution_output_sizes(
    input_sizes: Sequence[int],
    filter_sizes: Sequence[int],
    strides: Sequence[int] | None = None,
    dilations: Sequence[int] | None = None,
    start_padding: Sequence[int] | None = None,
    end_padding: Sequence[int] | None = None,
    output_padding: Sequence[int] | None = None,
    group_count: int = 1,
    direction: DML_CONVOLUTION_DIRECTION | int = FORWARD,
) -> tuple[int, ...]:
    """The OutputTensor.Sizes DirectML expects: ``{N, Cout, spatial...}``.

    ``Cout`` is ``filter_sizes[0]`` for FORWARD and ``filter_sizes[1] * group_count`` for
    BACKWARD. The spatial sizes are ``forward_output_size`` / ``backward_output_size`` (for
    BACKWARD the smallest accepted size). Empty arrays mean strides and dilations 1 and
    padding 0, as in DirectMLX. Raises ``ValueError`` for sizes no output can have.
    """
    name = "convolution_output_sizes"
    input_sizes = ints_argument(name, "input_sizes", input_sizes, minimum=1)
    filter_sizes = ints_argument(name, "filter_sizes", filter_sizes, minimum=1)
    spatial = len(input_sizes) - 2
    if spatial < 1 or len(filter_sizes) != len(input_sizes):
        msg = f"{name}: input_sizes {input_sizes} and filter_sizes {filter_sizes} need the same rank, at least 3"
        raise ValueError(msg)

    def per_axis(argument: str, values: Sequence[int] | None, default: int, minimum: int) -> tuple[int, ...]:
        if values is None or (isinstance(values, (list, tuple)) and not values):
            return (default,) * spatial
        return ints_argument(name, argument, values, length=spatial, minimum=minimum)

    strides, dilations = per_axis("strides", strides, 1, 1), per_axis("dilations", dilations, 1, 1)
    start_padding, end_padding = per_axis("start_padding", start_padding, 0, 0), per_axis("end_padding", end_padding, 0, 0)
    output_padding = per_axis("output_padding", output_padding, 0, 0)
    group_count = int_argument(name, "group_count", group_count, minimum=1)
    if input_sizes[1] % group_count:
        msg = f"{name}: group_count {group_count} does not divide the {input_sizes[1]} input channels"
        raise ValueError(msg)
    try:
        direction = DIRECTION(direction)
    except ValueError:
        msg = f"{name}: direction is {direction!r}, expected DML_CONVOLUTION_DIRECTION_FORWARD (0) or DML_CONVOLUTION_DIRECTION_BACKWARD (1)"
        raise ValueError(msg) from None
    backward = direction == BACKWARD
    size_of = backward_output_size if backward else forward_output_size
    channels = filter_sizes[1] * group_count if backward else filter_sizes[0]
    axes = zip(input_sizes[2:], filter_sizes[2:], strides, start_padding, end_padding, dilations, output_padding, strict=True)
    return (input_sizes[0], channels, *(size_of(*args) for args in axes))


# ---------------------------------------------------------------------------------------
# Rules

_SOURCE = "ns-directml-dml_convolution_operator_desc"
MODE_UNKNOWN = rule("CONVOLUTION.MODE", "Mode is DML_CONVOLUTION_MODE_CONVOLUTION (0) or DML_CONVOLUTION_MODE_CROSS_CORRELATION (1).", source="ne-directml-dml_convolution_mode")
DIRECTION_UNKNOWN = rule("CONVOLUTION.DIRECTION", "Direction is DML_CONVOLUTION_DIRECTION_FORWARD (0) or DML_CONVOLUTION_DIRECTION_BACKWARD (1).", source="ne-directml-dml_convolution_direction")
DIMENSION_COUNT = rule("CONVOLUTION.DIMENSION_COUNT", "DimensionCount counts the spatial dims: InputTensor's DimensionCount - 2 (1 for 3-D, 2 for 4-D, 3 for 5-D).", source=_SOURCE)
ONE_D_FEATURE_LEVEL = rule("CONVOLUTION.ONE_D_FEATURE_LEVEL", "A 1-D convolution (DimensionCount 1, 3-D tensors) needs DML_FEATURE_LEVEL_4_0.", source="dml-feature-level-history 4.0")
SAME_DIMENSION_COUNT = rule("CONVOLUTION.SAME_DIMENSION_COUNT", "FilterTensor and OutputTensor have InputTensor's DimensionCount (BiasTensor: CONVOLUTION.BIAS_SHAPE).", source=_SOURCE)
SAME_DATA_TYPE = rule("CONVOLUTION.SAME_DATA_TYPE", "FilterTensor, BiasTensor and OutputTensor have InputTensor's DataType.", source=_SOURCE)
ARRAY_LENGTH = rule("CONVOLUTION.ARRAY_LENGTH", "Strides, Dilations, StartPadding, EndPadding and OutputPadding are present with DimensionCount entries.", source=_SOURCE)
STRIDE_ZERO = rule("CONVOLUTION.STRIDE_ZERO", "Every stride is at least 1.", source="the output-size formula divides by Strides[i]")
DILATION_ZERO = rule("CONVOLUTION.DILATION_ZERO", "Every dilation is at least 1 (1 is a dense kernel).", source=_SOURCE)
GROUP_COUNT_ZERO = rule("CONVOLUTION.GROUP_COUNT_ZERO", "GroupCount is at least 1.", source=_SOURCE)
BATCH = rule("CONVOLUTION.BATCH", "OutputTensor.Sizes[0] equals InputTensor.Sizes[0] (N).", source=_SOURCE)
GROUP_DIVIDES_CHANNELS = rule("CONVOLUTION.GROUP_DIVIDES_CHANNELS", "GroupCount divides the input channels (InputTensor.Sizes[1]) and the output channels (OutputTensor.Sizes[1]).", source="the DML_CONVOLUTION_OPERATOR_DESC page; docs/deviations.md")
FILTER_CHANNELS = rule("CONVOLUTION.FILTER_CHANNELS", "FORWARD: FilterTensor.Sizes[1] = Cin / GroupCount. BACKWARD: FilterTensor.Sizes[0] = Cin (ONNX ConvTranspose's W, {Cin, Cout/G, k...}).", source="the DML_CONVOLUTION_OPERATOR_DESC page; docs/deviations.md")
OUTPUT_CHANNELS = rule("CONVOLUTION.OUTPUT_CHANNELS", "OutputTensor.Sizes[1] is FilterTensor.Sizes[0] (FORWARD) or FilterTensor.Sizes[1] * GroupCount (BACKWARD).", source="the DML_CONVOLUTION_OPERATOR_DESC page (DirectMLX, onnxruntime); docs/deviations.md")
BIAS_SHAPE = rule("CONVOLUTION.BIAS_SHAPE", "A BiasTensor has the output's DimensionCount and Sizes {1, Cout, 1, ...}; a 1-D {Cout} bias is described as {1, Cout, 1, 1}.", source=_SOURCE)
KERNEL_TOO_LARGE = rule("CONVOLUTION.KERNEL_LARGER_THAN_INPUT", "FORWARD: the dilated kernel (k - 1) * d + 1 fits the padded input in + start + end.", source="DirectMLX Convolution (asserts keff <= padded)")
PADDING_TOO_LARGE = rule("CONVOLUTION.PADDING_TOO_LARGE", "BACKWARD: start + end padding leaves some output: (in - 1) * s + (k - 1) * d + 1 - start - end + OutputPadding + s - 1 >= 1.", source="the DML_CONVOLUTION_OPERATOR_DESC page; docs/deviations.md")
OUTPUT_SIZE = rule("CONVOLUTION.OUTPUT_SIZE", "FORWARD: each output spatial size is (in + start + end - ((k - 1) * d + 1)) / s + 1 + OutputPadding.", source=_SOURCE)
BACKWARD_OUTPUT_SIZE = rule(
    "CONVOLUTION.BACKWARD_OUTPUT_SIZE",
    "BACKWARD: each output spatial size is (in - 1) * s + (k - 1) * d + 1 - start - end + OutputPadding, or up to s - 1 more (computed, not zeroed), and at least 1.",
    source="the DML_CONVOLUTION_OPERATOR_DESC page; docs/deviations.md",
)
OUTPUT_PADDING_NONZERO = rule(
    "CONVOLUTION.OUTPUT_PADDING_NONZERO",
    "OutputPadding is 0 (every known caller passes 0 and a larger output). Nonzero values are UNCONFIRMED; dmlpy zeroes the last OutputPadding positions before bias and activation.",
    source="the DML_CONVOLUTION_OPERATOR_DESC page; docs/deviations.md",
    severity=Severity.WARNING,
)

_ARRAYS = ("Strides", "Dilations", "StartPadding", "EndPadding", "OutputPadding")


def _check_convolution(ctx: Checker, desc: DML_CONVOLUTION_OPERATOR_DESC, path: str, buffers: dict[str, DML_BUFFER_TENSOR_DESC | None]) -> None:
    x, w, b, y = (buffers[name] for name in ("InputTensor", "FilterTensor", "BiasTensor", "OutputTensor"))
    enums_ok = _check_enums(ctx, desc, path)
    ranks_ok = _check_ranks(ctx, desc, path, x, w, y)
    _check_data_types(ctx, path, x, w, b, y)
    arrays_ok = _check_arrays(ctx, desc, path)
    group_ok = ctx.check(desc.GroupCount >= 1, GROUP_COUNT_ZERO, f"{path}.GroupCount", actual=desc.GroupCount, expected=">= 1", message="is 0, expected at least 1 (1 for an ungrouped convolution)")
    check_fused_activation(ctx, desc.FusedActivation, f"{path}.FusedActivation", host=DML_OPERATOR_TYPE.CONVOLUTION)
    if arrays_ok:
        _warn_output_padding(ctx, desc, path)
    if x is None or w is None or y is None or not ranks_ok:
        return
    if group_ok and enums_ok:
        _check_channels(ctx, desc, path, x, w, y)
    _check_bias(ctx, desc, path, y)
    if arrays_ok and enums_ok:
        _check_spatial_sizes(ctx, desc, path, x, w, y)


def _check_enums(ctx: Checker, desc: DML_CONVOLUTION_OPERATOR_DESC, path: str) -> bool:
    ok = ctx.check(isinstance(desc.Mode, MODE), MODE_UNKNOWN, f"{path}.Mode", actual=desc.Mode, expected="0 (CONVOLUTION) or 1 (CROSS_CORRELATION)",
                   message=f"is {fmt(desc.Mode)}, expected DML_CONVOLUTION_MODE_CONVOLUTION (0) or DML_CONVOLUTION_MODE_CROSS_CORRELATION (1)")  # fmt: skip
    ok &= ctx.check(isinstance(desc.Direction, DIRECTION), DIRECTION_UNKNOWN, f"{path}.Direction", actual=desc.Direction, expected="0 (FORWARD) or 1 (BACKWARD)",
                    message=f"is {fmt(desc.Direction)}, expected DML_CONVOLUTION_DIRECTION_FORWARD (0) or DML_CONVOLUTION_DIRECTION_BACKWARD (1)")  # fmt: skip
    return ok


def _check_ranks(ctx: Checker, desc: DML_CONVOLUTION_OPERATOR_DESC, path: str, *tensors: DML_BUFFER_TENSOR_DESC | None) -> bool:
    x, w, y = tensors
    count = desc.DimensionCount
    ctx.check(count != 1 or ctx.feature_level >= DML_FEATURE_LEVEL.LEVEL_4_0, ONE_D_FEATURE_LEVEL, f"{path}.DimensionCount", actual=ctx.feature_level, expected=DML_FEATURE_LEVEL.LEVEL_4_0,
              message=f"is 1: a 1-D convolution (3-D tensors) requires DML_FEATURE_LEVEL_4_0; the device targets {c_name(ctx.feature_level)} (describe it as 4-D with a height of 1, as onnxruntime does)")  # fmt: skip
    if x is None:
        return False
    rank = x.DimensionCount
    ok = ctx.check(count == rank - 2, DIMENSION_COUNT, f"{path}.DimensionCount", actual=count, expected=rank - 2, why=f"InputTensor.DimensionCount ({rank}) - 2")
    for name, tensor in (("FilterTensor", w), ("OutputTensor", y)):
        if tensor is not None:
            ok &= ctx.check(tensor.DimensionCount == rank, SAME_DIMENSION_COUNT, f"{path}.{name}.DimensionCount", actual=tensor.DimensionCount, expected=rank, why="InputTensor.DimensionCount")
    return ok


def _check_data_types(ctx: Checker, path: str, *tensors: DML_BUFFER_TENSOR_DESC | None) -> None:
    x = tensors[0]
    if x is None:
        return
    for name, tensor in zip(("FilterTensor", "BiasTensor", "OutputTensor"), tensors[1:], strict=True):
        if tensor is not None:
            ctx.check(tensor.DataType == x.DataType, SAME_DATA_TYPE, f"{path}.{name}.DataType", actual=tensor.DataType, expected=x.DataType, why="InputTensor.DataType")


def _check_arrays(ctx: Checker, desc: DML_CONVOLUTION_OPERATOR_DESC, path: str) -> bool:
    count = desc.DimensionCount
    ok = True
    for name in _ARRAYS:
        values = getattr(desc, name)
        if not ctx.check(values is not None and len(values) == count, ARRAY_LENGTH, f"{path}.{name}", actual=None if values is None else len(values), expected=count,
                         message=f"has {'no array (NULL)' if values is None else f'{len(values)} entr' + ('y' if len(values) == 1 else 'ies')}, expected DimensionCount = {count} entries"):  # fmt: skip
            ok = False
            continue
        zero_rule = {"Strides": STRIDE_ZERO, "Dilations": DILATION_ZERO}.get(name)
        for i, value in enumerate(values):
            if zero_rule is not None and not ctx.check(value >= 1, zero_rule, f"{path}.{name}[{i}]", actual=value, expected=">= 1", message="is 0, expected at least 1"):
                ok = False
    return ok


def _warn_output_padding(ctx: Checker, desc: DML_CONVOLUTION_OPERATOR_DESC, path: str) -> None:
    assert desc.OutputPadding is not None
    for i, value in enumerate(desc.OutputPadding):
        if value:
            ctx.fail(OUTPUT_PADDING_NONZERO, f"{path}.OutputPadding[{i}]", actual=value, expected=0,
                     message=f"is {value}: what DirectML does with a nonzero OutputPadding is UNCONFIRMED (its callers pass 0 and an enlarged OutputTensor, "
                             f"which is where ONNX's output_padding belongs); dmlpy makes the output {value} larger and zeroes those last {value} positions before bias and activation")  # fmt: skip


def _check_channels(ctx: Checker, desc: DML_CONVOLUTION_OPERATOR_DESC, path: str, x: DML_BUFFER_TENSOR_DESC, w: DML_BUFFER_TENSOR_DESC, y: DML_BUFFER_TENSOR_DESC) -> None:
    assert x.Sizes is not None and w.Sizes is not None and y.Sizes is not None
    n, cin, cout, g = x.Sizes[0], x.Sizes[1], y.Sizes[1], desc.GroupCount
    ctx.check(y.Sizes[0] == n, BATCH, f"{path}.OutputTensor.Sizes[0]", actual=y.Sizes[0], expected=n, why="InputTensor.Sizes[0] (N)")
    for name, channels in (("InputTensor", cin), ("OutputTensor", cout)):
        ctx.check(channels % g == 0, GROUP_DIVIDES_CHANNELS, f"{path}.{name}.Sizes[1]", actual=channels, expected=f"a multiple of GroupCount {g}",
                  message=f"is {channels} channels, not a multiple of GroupCount {g} ({channels} % {g} = {channels % g})")  # fmt: skip
    if desc.Direction == BACKWARD:
        hint = ""
        if w.Sizes[1] * g == cin and w.Sizes[0] != cin:
            hint = f"; this is the FORWARD layout {{Cout, Cin/G, k...}}: BACKWARD takes ONNX ConvTranspose's W as is, {{Cin, Cout/G, k...}} = {fmt((cin, cout // g if g else cout, *w.Sizes[2:]))}"
        if not ctx.check(w.Sizes[0] == cin, FILTER_CHANNELS, f"{path}.FilterTensor.Sizes[0]", actual=w.Sizes[0], expected=cin,
                         message=f"is {w.Sizes[0]}, expected {cin} = InputTensor.Sizes[1] (BACKWARD filters are {{Cin, Cout/G, k...}}){hint}"):  # fmt: skip
            return  # the output channels it would imply are a consequence, not a second mistake
        expected = w.Sizes[1] * g
        hint = ""
        fitting_filter = fmt((cin, cout // g, *w.Sizes[2:]))
        other_group_count = cout // w.Sizes[1] if cout % w.Sizes[1] == 0 and cin % (cout // w.Sizes[1]) == 0 else 0
        if cout == expected or cout % g:
            pass  # nothing to fix here, or CONVOLUTION.GROUP_DIVIDES_CHANNELS already says what
        elif w.Sizes[1] == cout and g > 1:
            hint = f"; FilterTensor.Sizes[1] holds all {cout} output channels, but a grouped BACKWARD filter holds Cout/G per group: {{Cin, Cout/G, k...}} = {fitting_filter}"
        elif other_group_count:
            hint = f"; GroupCount {other_group_count} would give {cout}, or with GroupCount {g} the filter {{Cin, Cout/G, k...}} is {fitting_filter}"
        else:
            hint = f"; with GroupCount {g} the filter {{Cin, Cout/G, k...}} for {cout} outputs is {fitting_filter}"
        ctx.check(cout == expected, OUTPUT_CHANNELS, f"{path}.OutputTensor.Sizes[1]", actual=cout, expected=expected,
                  message=f"is {cout}, expected {expected} = FilterTensor.Sizes[1] * GroupCount = {w.Sizes[1]} * {g}{hint}")  # fmt: skip
        return
    if cin % g == 0:
        hint = ""
        if w.Sizes[0] == cin and w.Sizes[1] * g == cout and cin != cout:
            hint = "; this is the BACKWARD (ConvTranspose) layout {Cin, Cout/G, k...}: FORWARD filters are {Cout, Cin/G, k...}"
        elif w.Sizes[1] == cin and g > 1:
            hint = f"; with GroupCount {g} each filter sees {cin} / {g} = {cin // g} channels"
        if not ctx.check(w.Sizes[1] == cin // g, FILTER_CHANNELS, f"{path}.FilterTensor.Sizes[1]", actual=w.Sizes[1], expected=cin // g,
                         message=f"is {w.Sizes[1]}, expected {cin // g} = InputTensor.Sizes[1] / GroupCount = {cin} / {g}{hint}"):  # fmt: skip
            return
    ctx.check(cout == w.Sizes[0], OUTPUT_CHANNELS, f"{path}.OutputTensor.Sizes[1]", actual=cout, expected=w.Sizes[0],
              message=f"is {cout}, expected {w.Sizes[0]} = FilterTensor.Sizes[0] (FORWARD filters are {{Cout, Cin/G, k...}})")  # fmt: skip


def _check_bias(ctx: Checker, desc: DML_CONVOLUTION_OPERATOR_DESC, path: str, y: DML_BUFFER_TENSOR_DESC) -> None:
    """Read from the desc itself, so that a 1-D bias (which the support table also rejects) gets the fix."""
    tensor = desc.BiasTensor
    if tensor is None or not isinstance(tensor.Desc, DML_BUFFER_TENSOR_DESC) or tensor.Desc.Sizes is None or y.Sizes is None:
        return
    sizes, cout = tuple(tensor.Desc.Sizes), y.Sizes[1]
    expected = (1, cout) + (1,) * (len(y.Sizes) - 2)
    if sizes == expected:
        return
    if len(sizes) == 1 and sizes[0] == cout:
        message = (f"is {fmt(sizes)}, a 1-D bias as ONNX's B; DirectML needs the output's rank: describe the same {cout} values "
                   f"as Sizes {fmt(expected)} (Cout = OutputTensor.Sizes[1] = {cout})")  # fmt: skip
    else:
        message = f"is {fmt(sizes)}, expected {fmt(expected)} (Cout = OutputTensor.Sizes[1] = {cout}; the bias broadcasts over N and the spatial dims)"
    ctx.fail(BIAS_SHAPE, f"{path}.BiasTensor.Sizes", actual=sizes, expected=expected, message=message)


def _check_spatial_sizes(ctx: Checker, desc: DML_CONVOLUTION_OPERATOR_DESC, path: str, x: DML_BUFFER_TENSOR_DESC, w: DML_BUFFER_TENSOR_DESC, y: DML_BUFFER_TENSOR_DESC) -> None:
    assert x.Sizes is not None and w.Sizes is not None and y.Sizes is not None
    arrays = zip(desc.Strides or (), desc.Dilations or (), desc.StartPadding or (), desc.EndPadding or (), desc.OutputPadding or (), strict=True)
    for i, (s, d, sp, ep, op) in enumerate(arrays):
        axis = i + 2
        size, k, actual = x.Sizes[axis], w.Sizes[axis], y.Sizes[axis]
        keff = effective_kernel(k, d)
        kernel_text = f"(({k} - 1) * {d} + 1)" if d != 1 else f"{k}"
        op_text = f" + {op}" if op else ""
        field = f"{path}.OutputTensor.Sizes[{axis}]"
        forward_formula = f"({size} + {sp} + {ep} - {kernel_text}) / {s} + 1{op_text}"
        forward_size = (size + sp + ep - keff) // s + 1 + op if keff <= size + sp + ep else None
        base = (size - 1) * s + keff - sp - ep
        backward_formula = f"({size} - 1) * {s} + {kernel_text} - {sp} - {ep}{op_text}"
        if desc.Direction == FORWARD:
            if not ctx.check(forward_size is not None, KERNEL_TOO_LARGE, f"{path}.FilterTensor.Sizes[{axis}]", actual=keff, expected=f"<= {size + sp + ep}",
                             message=f"spans {kernel_text + ' = ' if d != 1 else ''}{keff} taps, more than the padded input {size} + {sp} + {ep} = {size + sp + ep}"):  # fmt: skip
                continue
            hint = f"; {actual} is the BACKWARD size {backward_formula} (is Direction right?)" if base >= 1 and base + op <= actual < base + op + s else ""
            ctx.check(actual == forward_size, OUTPUT_SIZE, field, actual=actual, expected=forward_size, message=f"is {actual}, expected {forward_size} = {forward_formula}{hint}")
            continue
        lowest, highest = backward_output_size_range(size, k, s, sp, ep, d, op)
        if not ctx.check(highest >= 1, PADDING_TOO_LARGE, f"{path}.StartPadding[{i}]", actual=sp + ep, expected=f"< {sp + ep + 1 - highest}",
                         message=f"and EndPadding[{i}] add up to {sp} + {ep} = {sp + ep}, which leaves ({size} - 1) * {s} + {kernel_text} - {sp} - {ep}{op_text} = {base + op} outputs"
                                 + (f" (at most {highest} with stride {s})" if s > 1 else "")):  # fmt: skip
            continue
        if lowest <= actual <= highest:
            continue
        natural = base + op
        span = f" (+ 0 .. {s - 1} for stride {s})" if s > 1 else ""
        hint = f"; {actual} is the FORWARD size {forward_formula} (is Direction right?)" if actual == forward_size else ""
        expected_text = f"{natural} = {backward_formula}{span}" if natural >= 1 else f"{lowest} .. {highest}: {backward_formula} = {natural}, + 0 .. {s - 1} for stride {s}, and at least 1"
        ctx.fail(BACKWARD_OUTPUT_SIZE, field, actual=actual, expected=lowest if lowest == highest else f"{lowest} .. {highest}",
                 message=f"is {actual}, expected {expected_text}{hint}")  # fmt: skip


# ---------------------------------------------------------------------------------------
# NumPy kernels (float64 inside; the result is rounded once to the output's type).
#
# Both are direct sums over real input only (docs/convolution-semantics.md): padding taps are
# skipped, never multiplied as zeros, so an infinite or NaN weight reaches only the outputs
# whose taps read real input through it. Both loop over the filter taps: FORWARD adds, per
# tap, the strided slice of the input that the outputs reading real input through that tap
# see; BACKWARD is written the other way round, as DirectML's scatter: each input element,
# times each filter tap, lands at i * s + k * d - start. Neither pads the input, so UINT-sized
# paddings, strides and dilations cost nothing.


def convolve_forward(x: np.ndarray, w: np.ndarray, out: Sequence[int], strides: Sequence[int], dilations: Sequence[int], start: Sequence[int], groups: int) -> np.ndarray:
    """Cross-correlation: ``y[n, oc, o] = sum_{ic, k} x[n, g * Cin/G + ic, o * s + k * d - start] * w[oc, ic, k]`` over taps on the input."""
    n, cin = x.shape[:2]
    cout, kernel, inputs = w.shape[0], w.shape[2:], x.shape[2:]
    xg = x.reshape(n, groups, cin // groups, *inputs)
    wg = w.reshape(groups, cout // groups, cin // groups, *kernel)
    y = np.zeros((n, groups, cout // groups, *out))
    for tap in itertools.product(*(range(k) for k in kernel)):
        sources, targets = [], []
        for size, o, k, s, d, sp in zip(inputs, out, tap, strides, dilations, start, strict=True):
            first = k * d - sp  # output j reads input j * s + first
            lo = max(0, -(first // s))  # the first j with j * s + first >= 0: ceil(-first / s)
            hi = min(o - 1, (size - 1 - first) // s)  # the last j with j * s + first < size
            if hi < lo:
                break
            targets.append(slice(lo, hi + 1))
            sources.append(slice(lo * s + first, hi * s + first + 1, s))
        else:
            y[(..., *targets)] += np.einsum("ngc...,gfc->ngf...", xg[(..., *sources)], wg[(..., *tap)])
    return y.reshape(n, cout, *out)


def convolve_backward(x: np.ndarray, w: np.ndarray, out: Sequence[int], strides: Sequence[int], dilations: Sequence[int], start: Sequence[int], groups: int) -> np.ndarray:
    """Transposed: ``y[n, g * Cout/G + oc, i * s + k * d - start] += x[n, ci, i] * w[ci, oc, k]`` (targets outside dropped)."""
    n, cin = x.shape[:2]
    cout_g, kernel, inputs = w.shape[1], w.shape[2:], x.shape[2:]
    xg = x.reshape(n, groups, cin // groups, *inputs)
    wg = w.reshape(groups, cin // groups, cout_g, *kernel)
    y = np.zeros((n, groups, cout_g, *out))
    for tap in itertools.product(*(range(k) for k in kernel)):
        sources, targets = [], []
        for size, o, k, s, d, sp in zip(inputs, out, tap, strides, dilations, start, strict=True):
            first = k * d - sp  # where input 0 lands; input i lands at i * s + first
            lo = max(0, -(first // s))  # the first i with i * s + first >= 0: ceil(-first / s)
            hi = min(size - 1, (o - 1 - first) // s)  # the last i with i * s + first < o
            if hi < lo:
                break
            sources.append(slice(lo, hi + 1))
            targets.append(slice(lo * s + first, hi * s + first + 1, s))
        else:
            contribution = np.einsum("ngc...,gcf->ngf...", xg[(..., *sources)], wg[(..., *tap)])
            y[(..., *targets)] += contribution
    return y.reshape(n, groups * cout_g, *out)


def convolution_reference(desc: DML_CONVOLUTION_OPERATOR_DESC, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    x, w, bias = inputs["InputTensor"], inputs["FilterTensor"], inputs.get("BiasTensor")
    assert x is not None and w is not None and desc.OutputTensor is not None and desc.OutputTensor.Desc is not None
    out_tensor = desc.OutputTensor.Desc
    out = tuple(out_tensor.Sizes or ())[2:]
    args = (desc.Strides or (), desc.Dilations or (), desc.StartPadding or (), desc.GroupCount)
    with np.errstate(all="ignore"):  # inf and NaN propagate as on hardware; float16 saturates
        w = w.astype(np.float64)
        if desc.Mode == MODE.CONVOLUTION:
            w = np.flip(w, axis=tuple(range(2, w.ndim)))
        kernel = convolve_backward if desc.Direction == BACKWARD else convolve_forward
        y = kernel(x.astype(np.float64), w, out, *args)
        for axis, padding in enumerate(desc.OutputPadding or (), start=2):
            if padding:
                y[(slice(None),) * axis + (slice(max(0, y.shape[axis] - padding), None),)] = 0.0
        if bias is not None:
            y = y + bias.astype(np.float64)
        y = apply_fused(desc.FusedActivation, y)
        return {"OutputTensor": y.astype(out_tensor.dtype)}


# The C convolution applies the fused activations activation.c computes; for the others (SCALED_TANH,
# CELU, SHRINK, ...) the native backend runs this NumPy kernel rather than refusing a valid desc.
register(OperatorSpec(DML_OPERATOR_TYPE.CONVOLUTION, DML_CONVOLUTION_OPERATOR_DESC, OPERATORS[DML_OPERATOR_TYPE.CONVOLUTION], _check_convolution, convolution_reference, native=True,
                      native_covers=lambda desc: native_fused(desc.FusedActivation)))  # fmt: skip

# ---------------------------------------------------------------------------------------
# GEMM: A {.., M, K} x B {.., K, N} = Output {.., M, N}, TransA/TransB swapping the last two sizes
# of A/B (the DML_GEMM_OPERATOR_DESC page). Same DataType and DimensionCount of all four tensors
# and C's Sizes equal to the output's are the generic TENSOR.SAME_* rules of the page's constraints.

GEMM_PAGE = "ns-directml-dml_gemm_operator_desc"
GEMM_INNER_SIZE = rule("GEMM.INNER_SIZE", "A's K (Sizes[-1], or Sizes[-2] with TransA) equals B's K (Sizes[-2], or Sizes[-1] with TransB).", source=GEMM_PAGE)
GEMM_OUTPUT_SIZE = rule("GEMM.OUTPUT_SIZE", "OutputTensor's last two sizes are {M, N}: M from ATensor, N from BTensor, after TransA/TransB.", source=GEMM_PAGE)
GEMM_BATCH_SIZES = rule("GEMM.BATCH_SIZES", "ATensor's and BTensor's leading sizes {BatchCount, ChannelCount} equal OutputTensor's (broadcast is by zero strides, not by size 1).", source=GEMM_PAGE)


def _matrix_axes(rank: int, transform: object) -> tuple[int, int]:
    """(rows axis, columns axis) of a matrix tensor after its DML_MATRIX_TRANSFORM."""
    return (rank - 1, rank - 2) if transform == DML_MATRIX_TRANSFORM.TRANSPOSE else (rank - 2, rank - 1)


def _check_gemm(ctx: Checker, desc: DML_GEMM_OPERATOR_DESC, path: str, buffers: dict[str, DML_BUFFER_TENSOR_DESC | None]) -> None:
    a, b, y = buffers["ATensor"], buffers["BTensor"], buffers["OutputTensor"]
    if a is None or b is None or y is None or not isinstance(desc.TransA, DML_MATRIX_TRANSFORM) or not isinstance(desc.TransB, DML_MATRIX_TRANSFORM):
        return
    rank = y.DimensionCount
    if a.DimensionCount != rank or b.DimensionCount != rank or rank is None or rank < 2:
        return  # TENSOR.SAME_DIMENSION_COUNT or the support table's dimension counts already say it
    assert a.Sizes is not None and b.Sizes is not None and y.Sizes is not None
    a_rows, a_cols = _matrix_axes(rank, desc.TransA)
    b_rows, b_cols = _matrix_axes(rank, desc.TransB)
    m, k, k_b, n = a.Sizes[a_rows], a.Sizes[a_cols], b.Sizes[b_rows], b.Sizes[b_cols]
    ctx.check(k_b == k, GEMM_INNER_SIZE, f"{path}.BTensor.Sizes[{b_rows}]", actual=k_b, expected=k,
              message=f"is {k_b}, expected K = ATensor.Sizes[{a_cols}] = {k} (TransA {c_name(desc.TransA)}, TransB {c_name(desc.TransB)})")  # fmt: skip
    ctx.check(y.Sizes[rank - 2] == m, GEMM_OUTPUT_SIZE, f"{path}.OutputTensor.Sizes[{rank - 2}]", actual=y.Sizes[rank - 2], expected=m,
              message=f"is {y.Sizes[rank - 2]}, expected M = ATensor.Sizes[{a_rows}] = {m} (TransA {c_name(desc.TransA)})")  # fmt: skip
    ctx.check(y.Sizes[rank - 1] == n, GEMM_OUTPUT_SIZE, f"{path}.OutputTensor.Sizes[{rank - 1}]", actual=y.Sizes[rank - 1], expected=n,
              message=f"is {y.Sizes[rank - 1]}, expected N = BTensor.Sizes[{b_cols}] = {n} (TransB {c_name(desc.TransB)})")  # fmt: skip
    for name, tensor in (("ATensor", a), ("BTensor", b)):
        for axis in range(rank - 2):
            ctx.check(tensor.Sizes[axis] == y.Sizes[axis], GEMM_BATCH_SIZES, f"{path}.{name}.Sizes[{axis}]", actual=tensor.Sizes[axis], expected=y.Sizes[axis], why=f"OutputTensor.Sizes[{axis}]")


def gemm_reference(desc: DML_GEMM_OPERATOR_DESC, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    """``Output = FusedActivation(Alpha * TransA(A) x TransB(B) + Beta * C)`` (the DML_GEMM_OPERATOR_DESC page).

    One matrix product per leading (batch) index: the rules make A's, B's and C's batch sizes the
    output's, and a broadcast operand repeats by zero strides, which the backend's strided views
    carry. FLOAT32 is computed in float64 and FLOAT16 in float32, each rounded once to the output's
    type; the sum is a direct sum, so infinities and NaNs propagate as the formula gives.
    """
    a, b, c = inputs["ATensor"], inputs["BTensor"], inputs.get("CTensor")
    assert a is not None and b is not None and desc.OutputTensor is not None and desc.OutputTensor.Desc is not None
    out_type = desc.OutputTensor.Desc.dtype
    compute = np.float32 if out_type == np.float16 else np.float64
    with np.errstate(all="ignore"):  # inf and NaN propagate as on hardware; float16 saturates
        alpha, beta = compute(np.float32(desc.Alpha)), compute(np.float32(desc.Beta))  # FLOAT fields (beyond its range: inf)
        a, b = a.astype(compute), b.astype(compute)
        if desc.TransA == DML_MATRIX_TRANSFORM.TRANSPOSE:
            a = np.swapaxes(a, -1, -2)
        if desc.TransB == DML_MATRIX_TRANSFORM.TRANSPOSE:
            b = np.swapaxes(b, -1, -2)
        y = alpha * np.einsum("...mk,...kn->...mn", a, b)
        if c is not None:
            y = y + beta * c.astype(compute)
        y = apply_fused(desc.FusedActivation, y)
        return {"OutputTensor": y.astype(out_type)}


def _gemm_native_covers(desc: DML_GEMM_OPERATOR_DESC) -> bool:
    """The C kernel applies the fused activations activation.c computes; a valid desc with another one runs on NumPy."""
    return native_fused(desc.FusedActivation)


register(OperatorSpec(DML_OPERATOR_TYPE.GEMM, DML_GEMM_OPERATOR_DESC, OPERATORS[DML_OPERATOR_TYPE.GEMM], _check_gemm, gemm_reference,
                      native=True, native_covers=_gemm_native_covers, generic_rules=True))  # fmt: skip

__all__ = [
    "DML_CONVOLUTION_OPERATOR_DESC",
    "DML_GEMM_OPERATOR_DESC",
    "backward_output_size",
    "backward_output_size_range",
    "convolution_output_sizes",
    "convolution_reference",
    "convolve_backward",
    "convolve_forward",
    "effective_kernel",
    "forward_output_size",
    "gemm_reference",
]
