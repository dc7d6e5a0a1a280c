"""TensorFlow and nGraph operators as DirectML descs: one DirectML operator each, nothing copied.

    from dmlpy.interop import frameworks

    op = frameworks.space_to_depth((1, 4, 4, 1), 2, data_format="NHWC")   # tf.nn.space_to_depth
    y = op.run(x)                                                         # TensorFlow's NHWC result
    pool = frameworks.ngraph_avg_pool((1, 1, 3, 3), (2, 2), padding_below=(1, 1))
    pool.desc                                                             # DML_AVERAGE_POOLING_OPERATOR_DESC

Every helper returns a ``FrameworkOperator``: the DirectML ``desc``, the framework's input and
output shapes, and ``run(x)``, which takes and returns arrays in the framework's own shapes.

* **TensorFlow SpaceToDepth / DepthToSpace** (TensorFlow's and nGraph's documentation): TensorFlow's order is DCR, so the
  desc is DML_SPACE_TO_DEPTH / DML_DEPTH_TO_SPACE (FL 1.0; the integer types need FL 2.1).
  DirectML keeps ``Sizes`` in NCHW order; ``data_format="NHWC"`` is said with NHWC
  ``Strides`` on both tensors, so the input buffer holds the TensorFlow array's bytes as they
  are and the output buffer's bytes are TensorFlow's result (``NCHW_VECT_C`` works too; see
  ``dmlpy.tensorflow_space_to_depth``, which these wrap).
* **nGraph AvgPool** (``ngraph::op::AvgPool``; the nGraph operator page): ``window_shape``,
  ``window_movement_strides``, ``padding_below`` / ``padding_above`` and
  ``include_padding_in_avg_computation`` map one to one onto WindowSize, Strides,
  StartPadding / EndPadding and IncludePadding. nGraph's output size
  ``ceil((p + d + q - w + 1) / s)`` is DirectML's floor formula ``(p + d + q - w) / s + 1``
  written another way; ``ceil_mode`` gives ``ceil((p + d + q - w) / s) + 1``, a larger output
  tensor with the same padding (DirectML has no rounding field). DirectML (docs/deviations.md)
  accepts that size only where the last window still starts inside input + padding below;
  nGraph's formula has no such rule, and the helper says so rather than guess. The divisor
  of a window that overhangs the padding above (ceil mode) counts the taps inside the padded
  input with include_padding TRUE, DirectML's rule. One spatial dim is lifted to 4-D
  ``{N, C, 1, d}`` (window 1 on the unit axis), as the ONNX importer does; more than three
  spatial dims have no DirectML pooling.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dmlpy.device import Device
from dmlpy.device import run as run_desc
from dmlpy.device import validate as validate_desc
from dmlpy.enums import DML_FEATURE_LEVEL, HRESULT
from dmlpy.errors import DmlError
from dmlpy.operators.pooling import DML_AVERAGE_POOLING_OPERATOR_DESC, ceil_shape_allowed, pooled_size
from dmlpy.operators.space_depth import tensorflow_depth_to_space, tensorflow_space_to_depth
from dmlpy.tensor import buffer_tensor


@dataclass(frozen=True)
class FrameworkOperator:
    """A framework operator as one DirectML desc, with converters between the two shapes of its tensors.

    ``desc.InputTensor.Sizes`` may differ from ``input_shape`` (NCHW order for an NHWC
    TensorFlow tensor, a unit H axis for a 1-D nGraph pool): ``dml_input`` gives the array
    ``dmlpy.run`` takes (a NumPy view, never a copy of the data's meaning) and
    ``framework_output`` turns ``dmlpy.run``'s result back into the framework's shape.
    """

    desc: Any
    framework: str
    op_type: str
    input_shape: tuple[int, ...]
    output_shape: tuple[int, ...]
    _to_dml: Callable[[np.ndarray], np.ndarray]
    _from_dml: Callable[[np.ndarray], np.ndarray]

    def dml_input(self, x: Any) -> np.ndarray:
        """The framework-shaped input as the array ``desc.InputTensor`` describes."""
        x = np.asarray(x)
        if x.shape != self.input_shape:
            msg = f"{self.framework} {self.op_type}: expected an input of shape {self.input_shape}, got {x.shape}"
            raise ValueError(msg)
        return self._to_dml(x)

    def framework_output(self, y: Any) -> np.ndarray:
        """An output in ``desc.OutputTensor.Sizes`` order as the framework's array."""
        return self._from_dml(np.asarray(y))

    def run(self, x: Any, *, device: Device | None = None, backend: str = "auto") -> np.ndarray:
        """Run the desc through dmlpy's whole pipeline on a framework-shaped input; returns the framework-shaped output."""
        return self.framework_output(run_desc(self.desc, device=device, backend=backend, InputTensor=self.dml_input(x)))


def _checked(desc: Any, feature_level: DML_FEATURE_LEVEL | int, what: str) -> None:
    report = validate_desc(desc, feature_level=feature_level)
    if report.errors:
        raise DmlError(HRESULT.E_INVALIDARG, report.errors, f"{what}: DirectML rejects the mapped {type(desc).__name__}")


# ---------------------------------------------------------------------------------------
# TensorFlow


def space_to_depth(shape: Sequence[int], block_size: int, data_format: str = "NHWC", dtype: Any = np.float32, *, vect_c_as_int32: bool = False) -> FrameworkOperator:
    """``tf.nn.space_to_depth(x, block_size, data_format)`` for a TensorFlow input of ``shape``.

    NHWC (TensorFlow's default) and NCHW are one DML_SPACE_TO_DEPTH_OPERATOR_DESC each, the
    layout in the tensors' Strides. TensorFlow requires ``block_size >= 2`` and H and W
    divisible by it; both raise ``ValueError`` / ``DmlError`` here too.
    """
    mapped = tensorflow_space_to_depth(shape, block_size, data_format, dtype, vect_c_as_int32=vect_c_as_int32)
    return FrameworkOperator(mapped.desc, "TensorFlow", f"SpaceToDepth({data_format})", mapped.input_shape, mapped.output_shape, mapped.logical_input, mapped.tf_output)


def depth_to_space(shape: Sequence[int], block_size: int, data_format: str = "NHWC", dtype: Any = np.float32, *, vect_c_as_int32: bool = False) -> FrameworkOperator:
    """``tf.nn.depth_to_space(x, block_size, data_format)``: the inverse of ``space_to_depth``, laid out the same way."""
    mapped = tensorflow_depth_to_space(shape, block_size, data_format, dtype, vect_c_as_int32=vect_c_as_int32)
    return FrameworkOperator(mapped.desc, "TensorFlow", f"DepthToSpace({data_format})", mapped.input_shape, mapped.output_shape, mapped.logical_input, mapped.tf_output)


# ---------------------------------------------------------------------------------------
# nGraph


def ngraph_avg_pool_output_shape(
    input_shape: Sequence[int],
    window_shape: Sequence[int],
    window_movement_strides: Sequence[int] | None = None,
    padding_below: Sequence[int] | None = None,
    padding_above: Sequence[int] | None = None,
    *,
    ceil_mode: bool = False,
) -> tuple[int, ...]:
    """nGraph's AvgPool output shape: ``(N, C, d'_1..d'_n)``, ``d'_i = ceil((p_i + d_i + q_i - w_i + 1) / s_i)``.

    With ``ceil_mode`` nGraph rounds the window count up: ``ceil((p_i + d_i + q_i - w_i) / s_i) + 1``.
    """
    n = len(input_shape) - 2
    strides = tuple(window_movement_strides or (1,) * n)
    below = tuple(padding_below or (0,) * n)
    above = tuple(padding_above or (0,) * n)
    out = list(input_shape[:2])
    for d, w, s, p, q in zip(input_shape[2:], window_shape, strides, below, above, strict=True):
        span = p + d + q - w
        out.append(-(-span // s) + 1 if ceil_mode else -(-(span + 1) // s))
    return tuple(out)


def ngraph_avg_pool(
    input_shape: Sequence[int],
    window_shape: Sequence[int],
    window_movement_strides: Sequence[int] | None = None,
    padding_below: Sequence[int] | None = None,
    padding_above: Sequence[int] | None = None,
    include_padding_in_avg_computation: bool = False,
    ceil_mode: bool = False,
    *,
    dtype: Any = np.float32,
    feature_level: DML_FEATURE_LEVEL | int = DML_FEATURE_LEVEL.LEVEL_6_4,
) -> FrameworkOperator:
    """nGraph's ``AvgPool(arg, window_shape, window_movement_strides, padding_below, padding_above, include_padding_in_avg_computation, pad_type, ceil_mode)``.

    ``input_shape`` is ``(N, C, d_1..d_n)`` with n = 1, 2 or 3. Strides default to 1 and
    paddings to 0, include_padding to false, as nGraph's constructors do. Returns the
    DML_AVERAGE_POOLING_OPERATOR_DESC (validated at ``feature_level``) in a
    ``FrameworkOperator``. Raises ``ValueError`` for what nGraph or DirectML cannot say (rank,
    array lengths, a window larger than the padded input, a ceil-mode window starting in the
    padding above) and ``DmlError`` for what DirectML rejects.
    """
    shape = tuple(int(v) for v in input_shape)
    n = len(shape) - 2
    if n not in (1, 2, 3):
        msg = f"nGraph AvgPool: input shape {shape} has {n} spatial dims; DirectML pools 1 (lifted to 2), 2 or 3"
        raise ValueError(msg)
    window = tuple(int(v) for v in window_shape)
    strides = tuple(int(v) for v in (window_movement_strides or (1,) * n))
    below = tuple(int(v) for v in (padding_below or (0,) * n))
    above = tuple(int(v) for v in (padding_above or (0,) * n))
    for name, values in (("window_shape", window), ("window_movement_strides", strides), ("padding_below", below), ("padding_above", above)):
        if len(values) != n:
            msg = f"nGraph AvgPool: {name} {values} needs {n} entries, one per spatial dim of {shape}"
            raise ValueError(msg)
    for i in range(n):
        if window[i] > below[i] + shape[i + 2] + above[i]:
            msg = f"nGraph AvgPool: window_shape[{i}] = {window[i]} is larger than the padded input {below[i]} + {shape[i + 2]} + {above[i]}: no window fits (nGraph's output size would be 0)"
            raise ValueError(msg)
    output = ngraph_avg_pool_output_shape(shape, window, strides, below, above, ceil_mode=ceil_mode)
    for i in range(n):
        args = (shape[i + 2], window[i], strides[i], below[i], above[i])
        floor = pooled_size(*args)
        if ceil_mode and output[i + 2] > floor and not ceil_shape_allowed(*args):
            msg = (f"nGraph AvgPool: ceil_mode gives {output[i + 2]} outputs along spatial dim {i}, but the last window would start at {(output[i + 2] - 1) * strides[i] - below[i]}, "
                   f"past the input ({shape[i + 2]}): DirectML accepts one output more than the floor size {floor} only when that window starts inside input + padding_below")  # fmt: skip
            raise ValueError(msg)
    lift = n == 1

    def lifted(sizes: Sequence[int]) -> tuple[int, ...]:
        return (sizes[0], sizes[1], 1, sizes[2]) if lift else tuple(sizes)

    def spatial(values: tuple[int, ...], fill: int) -> tuple[int, ...]:
        return (fill, *values) if lift else values

    desc = DML_AVERAGE_POOLING_OPERATOR_DESC(
        buffer_tensor(dtype, lifted(shape)), buffer_tensor(dtype, lifted(output)), max(n, 2),
        spatial(strides, 1), spatial(window, 1), spatial(below, 0), spatial(above, 0), bool(include_padding_in_avg_computation),
    )  # fmt: skip
    _checked(desc, feature_level, "nGraph AvgPool")
    dml_in = lifted(shape)
    return FrameworkOperator(desc, "nGraph", "AvgPool", shape, output, lambda x: x.reshape(dml_in), lambda y: y.reshape(output))


__all__ = ["FrameworkOperator", "depth_to_space", "ngraph_avg_pool", "ngraph_avg_pool_output_shape", "space_to_depth"]
