"""Space-to-depth and depth-to-space: DML_SPACE_TO_DEPTH(1) and DML_DEPTH_TO_SPACE(1).

Facts: the space-to-depth and depth-to-space pages and onnxruntime's DirectML provider and TensorFlow's and nGraph's documentation and the DML_FEATURE_LEVEL page. Every tensor is exactly 4-D ``{N, C, H, W}``; a
"space" tensor ``{N, C, H*B, W*B}`` and a "depth" tensor ``{N, C*B*B, H, W}`` hold the same
elements. With ``by = h mod B``, ``bx = w mod B`` (the position inside a block), the depth
channel of space element ``(n, c, h, w)`` is

* ``DEPTH_COLUMN_ROW`` (0, ONNX "DCR", TensorFlow): ``(by*B + bx)*C + c``;
* ``COLUMN_ROW_DEPTH`` (1, ONNX "CRD", PyTorch pixel_shuffle): ``c*B*B + by*B + bx``;

at depth position ``(h div B, w div B)``. SPACE_TO_DEPTH copies space -> depth,
DEPTH_TO_SPACE depth -> space; the descs without ``Order`` mean DEPTH_COLUMN_ROW.

Decisions (docs/deviations.md, and this module):

* SpaceToDepth with an input H or W that is not a multiple of BlockSize is an error
  (``SPACE_DEPTH.SPATIAL_DIVISIBLE``), as is DepthToSpace with an input C that is not a
  multiple of BlockSize^2 (``SPACE_DEPTH.CHANNELS_DIVISIBLE``): the blocks must be whole.
* ``BlockSize == 0`` is an error (``SPACE_DEPTH.BLOCK_SIZE_ZERO``): there are no 0x0 blocks.
* ``BlockSize == 1`` is valid and is the identity: every formula gives the output sizes equal
  to the input sizes (``C*1*1 = C``, ``H/1 = H``) and every element stays where it is, in
  both orders. onnxruntime and DirectMLX compute it the same way; TensorFlow's op alone
  demands ``block_size >= 2``, and the TensorFlow helpers below keep that rule.

TensorFlow layouts (TensorFlow's and nGraph's documentation): DirectML keeps ``Sizes`` in NCHW order and says
everything else through ``Strides``. ``tensorflow_space_to_depth(shape, B, "NHWC")`` is
one DirectML operator on the TensorFlow array's own bytes: NHWC strides on both tensors,
no transposes. ``NCHW_VECT_C`` (qint8 ``[N, C/4, H, W, 4]``) splits the channel index into
two strides (``c div 4`` and ``c mod 4``), which one 4-D tensor cannot say; see
``tensorflow_space_to_depth`` for the two ways dmlpy still describes it exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dmlpy.enums import DML_DEPTH_SPACE_ORDER, DML_OPERATOR_TYPE
from dmlpy.enums import DML_TENSOR_DATA_TYPE as DT
from dmlpy.errors import int_argument, ints_argument
from dmlpy.operators import OperatorSpec, register
from dmlpy.operators.descs.space_depth import (
    DML_DEPTH_TO_SPACE1_OPERATOR_DESC,
    DML_DEPTH_TO_SPACE_OPERATOR_DESC,
    DML_SPACE_TO_DEPTH1_OPERATOR_DESC,
    DML_SPACE_TO_DEPTH_OPERATOR_DESC,
)
from dmlpy.rules import Checker, fmt, rule
from dmlpy.support import OPERATORS
from dmlpy.tensor import DML_BUFFER_TENSOR_DESC, as_data_type, buffer_tensor, nhwc_strides

DCR = DML_DEPTH_SPACE_ORDER.DEPTH_COLUMN_ROW
CRD = DML_DEPTH_SPACE_ORDER.COLUMN_ROW_DEPTH


AnySpaceToDepth = DML_SPACE_TO_DEPTH_OPERATOR_DESC | DML_SPACE_TO_DEPTH1_OPERATOR_DESC
AnyDepthToSpace = DML_DEPTH_TO_SPACE_OPERATOR_DESC | DML_DEPTH_TO_SPACE1_OPERATOR_DESC
AnySpaceDepth = AnySpaceToDepth | AnyDepthToSpace


def order_of(desc: AnySpaceDepth) -> DML_DEPTH_SPACE_ORDER | int:
    """The desc's Order; the descs without one mean DEPTH_COLUMN_ROW (the DML_SPACE_TO_DEPTH_OPERATOR_DESC page and the DML_DEPTH_TO_SPACE_OPERATOR_DESC page)."""
    return getattr(desc, "Order", DCR)


def is_space_to_depth(desc: Any) -> bool:
    return isinstance(desc, (DML_SPACE_TO_DEPTH_OPERATOR_DESC, DML_SPACE_TO_DEPTH1_OPERATOR_DESC))


# ---------------------------------------------------------------------------------------
# Output sizes


def _four(function: str, sizes: Sequence[int], block_size: int) -> tuple[int, int, int, int]:
    sizes = ints_argument(function, "input_sizes", sizes, minimum=1)
    if len(sizes) != 4:
        msg = f"{function}: space/depth tensors are exactly 4-D {{N, C, H, W}}; got {len(sizes)} sizes {fmt(list(sizes))}"
        raise ValueError(msg)
    int_argument(function, "block_size", block_size, minimum=1)
    n, c, h, w = sizes
    return n, c, h, w


def space_to_depth_output_sizes(input_sizes: Sequence[int], block_size: int) -> tuple[int, int, int, int]:
    """``{N, C*B*B, H/B, W/B}`` (https://learn.microsoft.com/windows/win32/api/directml/ns-directml-dml_space_to_depth_operator_desc; its member text has the inverse by mistake).

    Raises TypeError or ValueError unless the input is 4-D, ``B >= 1`` and B divides H and W (docs/deviations.md).
    """
    n, c, h, w = _four("space_to_depth_output_sizes", input_sizes, block_size)
    b = int(block_size)
    if h % b or w % b:
        msg = f"SpaceToDepth needs H and W that are multiples of BlockSize {b}; got H = {h}, W = {w}"
        raise ValueError(msg)
    return n, c * b * b, h // b, w // b


def depth_to_space_output_sizes(input_sizes: Sequence[int], block_size: int) -> tuple[int, int, int, int]:
    """``{N, C/(B*B), H*B, W*B}`` (https://learn.microsoft.com/windows/win32/api/directml/ns-directml-dml_depth_to_space_operator_desc).

    Raises TypeError or ValueError unless the input is 4-D, ``B >= 1`` and B*B divides C (docs/deviations.md).
    """
    n, c, h, w = _four("depth_to_space_output_sizes", input_sizes, block_size)
    b = int(block_size)
    if c % (b * b):
        msg = f"DepthToSpace needs C that is a multiple of BlockSize * BlockSize = {b * b}; got C = {c}"
        raise ValueError(msg)
    return n, c // (b * b), h * b, w * b


# ---------------------------------------------------------------------------------------
# Rules

_SOURCE = "ns-directml-dml_space_to_depth1_operator_desc; ns-directml-dml_depth_to_space1_operator_desc"
SAME_DATA_TYPE = rule(
    "SPACE_DEPTH.SAME_DATA_TYPE", "InputTensor and OutputTensor have the same DataType.", source=_SOURCE
)
BLOCK_SIZE_ZERO = rule(
    "SPACE_DEPTH.BLOCK_SIZE_ZERO",
    "BlockSize is at least 1 (1 is the identity).",
    source="the size formulas divide by BlockSize; docs/deviations.md",
)
ORDER_VALUE = rule(
    "SPACE_DEPTH.ORDER",
    "Order is DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW (0) or DML_DEPTH_SPACE_ORDER_COLUMN_ROW_DEPTH (1).",
    source="ne-directml-dml_depth_space_order",
)
SPATIAL_DIVISIBLE = rule(
    "SPACE_DEPTH.SPATIAL_DIVISIBLE",
    "SpaceToDepth: the input H and W are multiples of BlockSize.",
    source="docs/deviations.md",
)
CHANNELS_DIVISIBLE = rule(
    "SPACE_DEPTH.CHANNELS_DIVISIBLE",
    "DepthToSpace: the input C is a multiple of BlockSize * BlockSize.",
    source="docs/deviations.md",
)
OUTPUT_BATCH = rule(
    "SPACE_DEPTH.OUTPUT_BATCH", "OutputTensor.Sizes[0] (N) equals InputTensor.Sizes[0].", source=_SOURCE
)
OUTPUT_CHANNELS = rule(
    "SPACE_DEPTH.OUTPUT_CHANNELS",
    "OutputTensor.Sizes[1] is C * BlockSize^2 (SpaceToDepth) or C / BlockSize^2 (DepthToSpace).",
    source=_SOURCE + "; docs/deviations.md",
)
OUTPUT_SPATIAL = rule(
    "SPACE_DEPTH.OUTPUT_SPATIAL",
    "OutputTensor.Sizes[2] and [3] are H / BlockSize, W / BlockSize (SpaceToDepth) or H * BlockSize, W * BlockSize (DepthToSpace).",
    source=_SOURCE + "; docs/deviations.md",
)


def _check_space_depth(
    ctx: Checker, desc: AnySpaceDepth, path: str, buffers: dict[str, DML_BUFFER_TENSOR_DESC | None]
) -> None:
    x, y = buffers["InputTensor"], buffers["OutputTensor"]
    if x is not None and y is not None:
        ctx.check(
            y.DataType == x.DataType,
            SAME_DATA_TYPE,
            f"{path}.OutputTensor.DataType",
            actual=y.DataType,
            expected=x.DataType,
            why="InputTensor.DataType",
        )
    order_ok = _check_order(ctx, desc, path)
    b = desc.BlockSize
    block_ok = ctx.check(
        b >= 1,
        BLOCK_SIZE_ZERO,
        f"{path}.BlockSize",
        actual=b,
        expected=">= 1",
        message="is 0, expected at least 1 (1 is the identity)",
    )
    if x is None or not block_ok or not order_ok:
        return
    assert x.Sizes is not None
    if is_space_to_depth(desc):
        divisible = _check_spatial_divisible(ctx, path, x.Sizes, b)
        if y is not None:
            _check_space_to_depth_sizes(ctx, path, x.Sizes, y.Sizes or (), b, divisible)
    else:
        divisible = ctx.check(
            x.Sizes[1] % (b * b) == 0, CHANNELS_DIVISIBLE, f"{path}.InputTensor.Sizes[1]", actual=x.Sizes[1], expected=f"a multiple of {b * b}",
            message=f"is {x.Sizes[1]}, not a multiple of BlockSize * BlockSize = {b} * {b} = {b * b} ({x.Sizes[1]} % {b * b} = {x.Sizes[1] % (b * b)}); DepthToSpace needs whole blocks",
        )  # fmt: skip
        if y is not None:
            _check_depth_to_space_sizes(ctx, path, x.Sizes, y.Sizes or (), b, divisible)


def _check_order(ctx: Checker, desc: AnySpaceDepth, path: str) -> bool:
    if not hasattr(desc, "Order"):
        return True
    order = desc.Order
    return ctx.check(
        isinstance(order, DML_DEPTH_SPACE_ORDER), ORDER_VALUE, f"{path}.Order", actual=order, expected=list(DML_DEPTH_SPACE_ORDER),
        message=f"is {fmt(order)}, expected DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW (0) or DML_DEPTH_SPACE_ORDER_COLUMN_ROW_DEPTH (1)",
    )  # fmt: skip


def _check_spatial_divisible(ctx: Checker, path: str, x_sizes: Sequence[int], b: int) -> dict[int, bool]:
    """Per spatial axis (2: H, 3: W), whether it holds whole blocks."""
    divisible = {}
    for axis, name in ((2, "H"), (3, "W")):
        size = x_sizes[axis]
        divisible[axis] = ctx.check(
            size % b == 0, SPATIAL_DIVISIBLE, f"{path}.InputTensor.Sizes[{axis}]", actual=size, expected=f"a multiple of {b}",
            message=f"is {size}, not a multiple of BlockSize {b} ({size} % {b} = {size % b}); SpaceToDepth needs whole blocks along {name}",
        )  # fmt: skip
    return divisible


def _check_batch(ctx: Checker, path: str, x_sizes: Sequence[int], y_sizes: Sequence[int]) -> None:
    ctx.check(
        y_sizes[0] == x_sizes[0],
        OUTPUT_BATCH,
        f"{path}.OutputTensor.Sizes[0]",
        actual=y_sizes[0],
        expected=x_sizes[0],
        why="InputTensor.Sizes[0] (N)",
    )


def _check_space_to_depth_sizes(
    ctx: Checker, path: str, x: Sequence[int], y: Sequence[int], b: int, divisible: dict[int, bool]
) -> None:
    _check_batch(ctx, path, x, y)
    channels = x[1] * b * b
    ctx.check(y[1] == channels, OUTPUT_CHANNELS, f"{path}.OutputTensor.Sizes[1]", actual=y[1], expected=channels,
              why=f"InputTensor.Sizes[1] * BlockSize * BlockSize = {x[1]} * {b} * {b}")  # fmt: skip
    for axis in (2, 3):
        if not divisible[axis]:
            continue  # no output size is right; SPATIAL_DIVISIBLE said why
        ctx.check(y[axis] == x[axis] // b, OUTPUT_SPATIAL, f"{path}.OutputTensor.Sizes[{axis}]", actual=y[axis], expected=x[axis] // b,
                  why=f"InputTensor.Sizes[{axis}] / BlockSize = {x[axis]} / {b}")  # fmt: skip


def _check_depth_to_space_sizes(
    ctx: Checker, path: str, x: Sequence[int], y: Sequence[int], b: int, divisible: bool
) -> None:
    _check_batch(ctx, path, x, y)
    if divisible:
        channels = x[1] // (b * b)
        ctx.check(y[1] == channels, OUTPUT_CHANNELS, f"{path}.OutputTensor.Sizes[1]", actual=y[1], expected=channels,
                  why=f"InputTensor.Sizes[1] / (BlockSize * BlockSize) = {x[1]} / ({b} * {b})")  # fmt: skip
    for axis in (2, 3):
        ctx.check(y[axis] == x[axis] * b, OUTPUT_SPATIAL, f"{path}.OutputTensor.Sizes[{axis}]", actual=y[axis], expected=x[axis] * b,
                  why=f"InputTensor.Sizes[{axis}] * BlockSize = {x[axis]} * {b}")  # fmt: skip


# ---------------------------------------------------------------------------------------
# NumPy kernels: the reshape/transpose of the DML_SPACE_TO_DEPTH1_OPERATOR_DESC page and the DML_DEPTH_TO_SPACE_OPERATOR_DESC page, axis for axis.
#
# The space tensor viewed as [N, C, H, by, W, bx]; the depth tensor's channel axis split as
# [by, bx, C] (DCR) or [C, by, bx] (CRD).


def space_to_depth_reference(desc: AnySpaceToDepth, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    x = inputs["InputTensor"]
    assert x is not None
    b = desc.BlockSize
    n, c, h, w = x.shape
    blocks = x.reshape(n, c, h // b, b, w // b, b)  # n, c, oh, by, ow, bx
    axes = (0, 3, 5, 1, 2, 4) if order_of(desc) == DCR else (0, 1, 3, 5, 2, 4)  # channel (by, bx, c) or (c, by, bx)
    return {"OutputTensor": blocks.transpose(axes).reshape(n, c * b * b, h // b, w // b)}


def depth_to_space_reference(desc: AnyDepthToSpace, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    x = inputs["InputTensor"]
    assert x is not None
    b = desc.BlockSize
    n, c, h, w = x.shape
    co = c // (b * b)
    if order_of(desc) == DCR:
        blocks = x.reshape(n, b, b, co, h, w).transpose(0, 3, 4, 1, 5, 2)  # (by, bx, c) -> n, c, h, by, w, bx
    else:
        blocks = x.reshape(n, co, b, b, h, w).transpose(0, 1, 4, 2, 5, 3)  # (c, by, bx) -> n, c, h, by, w, bx
    return {"OutputTensor": blocks.reshape(n, co, h * b, w * b)}


for _type, _class, _kernel in (
    (DML_OPERATOR_TYPE.SPACE_TO_DEPTH, DML_SPACE_TO_DEPTH_OPERATOR_DESC, space_to_depth_reference),
    (DML_OPERATOR_TYPE.SPACE_TO_DEPTH1, DML_SPACE_TO_DEPTH1_OPERATOR_DESC, space_to_depth_reference),
    (DML_OPERATOR_TYPE.DEPTH_TO_SPACE, DML_DEPTH_TO_SPACE_OPERATOR_DESC, depth_to_space_reference),
    (DML_OPERATOR_TYPE.DEPTH_TO_SPACE1, DML_DEPTH_TO_SPACE1_OPERATOR_DESC, depth_to_space_reference),
):
    register(OperatorSpec(_type, _class, OPERATORS[_type], _check_space_depth, _kernel, native=True))


# ---------------------------------------------------------------------------------------
# TensorFlow layouts through strides


TF_FORMATS = ("NHWC", "NCHW", "NCHW_VECT_C")


@dataclass(frozen=True)
class TensorFlowSpaceDepth:
    """A TensorFlow space_to_depth / depth_to_space as one DirectML operator on TF's own bytes.

    ``desc`` is the DirectML operator. A buffer holding the TensorFlow input array's bytes
    as they are (C order, ``input_shape``) is a valid binding of ``desc.InputTensor``, and
    the output buffer's bytes are the TensorFlow output in ``output_shape``: the layout is
    in the tensors' Strides (and, for NCHW_VECT_C, in how the lanes are described), never in
    a copy. ``logical_input``/``tf_output`` convert between TensorFlow arrays and the
    NCHW-ordered arrays ``dmlpy.run`` takes and returns; both are NumPy views.
    """

    desc: DML_SPACE_TO_DEPTH_OPERATOR_DESC | DML_DEPTH_TO_SPACE_OPERATOR_DESC
    data_format: str
    input_shape: tuple[int, ...]
    output_shape: tuple[int, ...]
    dtype: np.dtype[Any]  # TensorFlow's element type
    lanes: str = ""  # NCHW_VECT_C only: "batch" or "int32"
    _to_logical: Callable[[np.ndarray], np.ndarray] | None = None
    _from_logical: Callable[[np.ndarray], np.ndarray] | None = None

    def logical_input(self, x: np.ndarray) -> np.ndarray:
        """The TensorFlow input ``x`` as a view in the order of ``desc.InputTensor.Sizes``."""
        x = np.asarray(x)
        if x.shape != self.input_shape:
            msg = f"expected a TensorFlow {self.data_format} array of shape {self.input_shape}, got {x.shape}"
            raise ValueError(msg)
        if x.dtype != self.dtype:
            msg = f"expected {self.dtype} data for this desc, got {x.dtype} (convert explicitly with astype)"
            raise TypeError(msg)
        assert self._to_logical is not None
        return self._to_logical(np.ascontiguousarray(x))

    def tf_output(self, y: np.ndarray) -> np.ndarray:
        """An output in ``desc.OutputTensor.Sizes`` order (as ``dmlpy.run`` returns it) as the TensorFlow array."""
        assert self._from_logical is not None
        return self._from_logical(np.asarray(y))


def _tf_block_size(block_size: int) -> int:
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) or block_size < 2:
        msg = f"TensorFlow's block_size must be an integer >= 2 (TensorFlow rejects {block_size!r}); DirectML's BlockSize 1 is the identity"
        raise ValueError(msg)
    return int(block_size)


def tensorflow_space_to_depth(
    shape: Sequence[int],
    block_size: int,
    data_format: str = "NHWC",
    dtype: Any = np.float32,
    *,
    vect_c_as_int32: bool = False,
) -> TensorFlowSpaceDepth:
    """TensorFlow's ``tf.nn.space_to_depth(x, block_size, data_format)`` as a DML_SPACE_TO_DEPTH desc.

    ``shape`` is the TensorFlow input shape in ``data_format``: ``[N, H, W, C]`` (NHWC),
    ``[N, C, H, W]`` (NCHW) or ``[N, C/4, H, W, 4]`` (NCHW_VECT_C, int8/uint8). TensorFlow's
    order is DCR, so the desc is DML_SPACE_TO_DEPTH_OPERATOR_DESC (FL 1.0; the integer types
    need FL 2.1).

    * NHWC: Sizes ``{N, C, H, W}`` with strides ``{H*W*C, 1, W*C, C}`` on the input and the
      same form on the output; one operator, no transposes.
    * NCHW_VECT_C: the channel index ``c = 4*(c div 4) + (c mod 4)`` needs two strides,
      and a 4-D DirectML tensor has one per dimension. Space-to-depth keeps ``c mod 4`` as
      the innermost part of every channel index (``oc = (by*B + bx)*C + c``), so the op is a
      DCR space-to-depth on ``C/4`` channels whose elements are 4-lane vectors. dmlpy says
      that in one of two exact ways: with N = 1 the 4 lanes ride on the batch axis (INT8,
      Sizes ``{4, C/4, H, W}``, strides ``{1, H*W*4, W*4, 4}``: strides only); with
      ``vect_c_as_int32=True`` each 4 x int8 vector is one INT32 element (Sizes
      ``{N, C/4, H, W}``, any N; TensorFlow's own kernel does the same). N > 1 without it
      is a ValueError naming the limitation.
    """
    return _tensorflow(shape, block_size, data_format, dtype, vect_c_as_int32=vect_c_as_int32, to_depth=True)


def tensorflow_depth_to_space(
    shape: Sequence[int],
    block_size: int,
    data_format: str = "NHWC",
    dtype: Any = np.float32,
    *,
    vect_c_as_int32: bool = False,
) -> TensorFlowSpaceDepth:
    """TensorFlow's ``tf.nn.depth_to_space`` as a DML_DEPTH_TO_SPACE desc; layouts as ``tensorflow_space_to_depth``.

    With NCHW_VECT_C the output depth ``C / B^2`` must also be a multiple of 4 (it is a
    whole number of 4-lane vectors).
    """
    return _tensorflow(shape, block_size, data_format, dtype, vect_c_as_int32=vect_c_as_int32, to_depth=False)


def _tensorflow(
    shape: Sequence[int], block_size: int, data_format: str, dtype: Any, *, vect_c_as_int32: bool, to_depth: bool
) -> TensorFlowSpaceDepth:
    shape = ints_argument("tensorflow_space_to_depth" if to_depth else "tensorflow_depth_to_space", "shape", shape, minimum=1)
    b = _tf_block_size(block_size)
    if data_format not in TF_FORMATS:
        msg = f"data_format {data_format!r} is not one of {', '.join(TF_FORMATS)}"
        raise ValueError(msg)
    tf_type = np.dtype(dtype)
    shape = tuple(int(s) for s in shape)
    sizes_of = space_to_depth_output_sizes if to_depth else depth_to_space_output_sizes
    desc_class = DML_SPACE_TO_DEPTH_OPERATOR_DESC if to_depth else DML_DEPTH_TO_SPACE_OPERATOR_DESC
    if data_format == "NCHW_VECT_C":
        return _tensorflow_vect_c(shape, b, tf_type, vect_c_as_int32=vect_c_as_int32, to_depth=to_depth)
    if len(shape) != 4:
        msg = f"a TensorFlow {data_format} tensor is 4-D; got shape {shape}"
        raise ValueError(msg)
    data_type = as_data_type(tf_type)
    if data_format == "NCHW":
        out = sizes_of(shape, b)
        desc = desc_class(buffer_tensor(data_type, shape), buffer_tensor(data_type, out), b)
        return TensorFlowSpaceDepth(desc, data_format, shape, out, tf_type, "", lambda x: x, lambda y: y)
    n, h, w, c = shape
    sizes = (n, c, h, w)
    out = sizes_of(sizes, b)
    desc = desc_class(
        buffer_tensor(data_type, sizes, nhwc_strides(sizes)), buffer_tensor(data_type, out, nhwc_strides(out)), b
    )
    tf_out = (out[0], out[2], out[3], out[1])
    return TensorFlowSpaceDepth(
        desc,
        data_format,
        shape,
        tf_out,
        tf_type,
        "",
        lambda x: x.transpose(0, 3, 1, 2),
        lambda y: y.transpose(0, 2, 3, 1),
    )


def _tensorflow_vect_c(
    shape: tuple[int, ...], b: int, tf_type: np.dtype[Any], *, vect_c_as_int32: bool, to_depth: bool
) -> TensorFlowSpaceDepth:
    if tf_type.itemsize != 1 or tf_type.kind not in "iu":
        msg = f"NCHW_VECT_C holds qint8 (int8 or uint8) vectors of 4; got {tf_type}"
        raise ValueError(msg)
    if len(shape) != 5 or shape[4] != 4:
        msg = f"an NCHW_VECT_C tensor has shape [N, C/4, H, W, 4]; got {shape}"
        raise ValueError(msg)
    n, groups, h, w, _ = shape
    if not to_depth and groups % (b * b):
        msg = (f"DepthToSpace of NCHW_VECT_C needs the output depth C / B^2 = {4 * groups} / {b * b} to be a whole number of "
               f"4-lane vectors, i.e. C/4 = {groups} to be a multiple of B^2 = {b * b}")  # fmt: skip
        raise ValueError(msg)
    out = (space_to_depth_output_sizes if to_depth else depth_to_space_output_sizes)((n, groups, h, w), b)
    tf_out = (out[0], out[1], out[2], out[3], 4)
    desc_class = DML_SPACE_TO_DEPTH_OPERATOR_DESC if to_depth else DML_DEPTH_TO_SPACE_OPERATOR_DESC
    if vect_c_as_int32:
        in_sizes = (n, groups, h, w)
        desc = desc_class(buffer_tensor(DT.INT32, in_sizes), buffer_tensor(DT.INT32, out), b)
        return TensorFlowSpaceDepth(
            desc, "NCHW_VECT_C", shape, tf_out, tf_type, "int32",
            lambda x: x.view(np.int32).reshape(in_sizes), lambda y: np.ascontiguousarray(y, dtype=np.int32).view(tf_type).reshape(*y.shape, 4),
        )  # fmt: skip
    if n != 1:
        msg = (
            f"NCHW_VECT_C with N = {n} cannot be expressed through strides: DirectML's SPACE_TO_DEPTH/DEPTH_TO_SPACE tensors are exactly "
            f"4-D with one stride per dimension, and NCHW_VECT_C's channel index c = 4 * (c div 4) + (c mod 4) needs two "
            f"(H*W*4 = {h * w * 4} for c div 4 and 1 for c mod 4). With N = 1 dmlpy puts the 4 lanes on the batch axis; for N = {n} "
            f"pass vect_c_as_int32=True to describe each 4 x int8 vector as one INT32 element (exact, any N, what TensorFlow's own kernel does)"
        )
        raise ValueError(msg)
    data_type = as_data_type(tf_type)
    in_sizes = (4, groups, h, w)  # the lane on the batch axis
    out_sizes = (4, *out[1:])
    lane_strides = (1, h * w * 4, w * 4, 4)
    out_strides = (1, out[2] * out[3] * 4, out[3] * 4, 4)
    desc = desc_class(
        buffer_tensor(data_type, in_sizes, lane_strides), buffer_tensor(data_type, out_sizes, out_strides), b
    )
    return TensorFlowSpaceDepth(
        desc, "NCHW_VECT_C", shape, tf_out, tf_type, "batch",
        lambda x: x[0].transpose(3, 0, 1, 2), lambda y: y.transpose(1, 2, 3, 0)[np.newaxis],
    )  # fmt: skip


__all__ = [
    "CRD",
    "DCR",
    "DML_DEPTH_TO_SPACE1_OPERATOR_DESC",
    "DML_DEPTH_TO_SPACE_OPERATOR_DESC",
    "DML_SPACE_TO_DEPTH1_OPERATOR_DESC",
    "DML_SPACE_TO_DEPTH_OPERATOR_DESC",
    "TensorFlowSpaceDepth",
    "depth_to_space_output_sizes",
    "depth_to_space_reference",
    "order_of",
    "space_to_depth_output_sizes",
    "space_to_depth_reference",
    "tensorflow_depth_to_space",
    "tensorflow_space_to_depth",
]
