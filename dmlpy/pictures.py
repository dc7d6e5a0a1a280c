"""Pictures of what dmlpy computes, as SVG text: no dependency, crisp at any zoom, testable.

Each function takes a desc (or plain parameters, from which it builds the desc), validates
it with ``dmlpy.validate`` and draws from dmlpy's own functions, so a picture never shows
something the validator would refuse or a kernel would not do:

* ``pooling_windows`` and ``convolution_windows``: each output's window sliding over the
  padded input, per spatial axis (start and end padding, dilation, stride, the ceil-shape
  overhang past the padded input, and the average's divisor);
* ``backward_scatter``: where a BACKWARD (transposed) convolution adds each input times
  each filter tap, and which of those land outside the output (cropped by the padding);
* ``space_depth_blocks``: where SPACE_TO_DEPTH / DEPTH_TO_SPACE move every element, in
  DCR or CRD order (the operator's own NumPy kernel moves numbered elements);
* ``tensor_layout``: how Sizes and Strides place a tensor's elements in its buffer's bytes
  (packed NCHW, NHWC, broadcast 0-strides, padded rows);
* ``graph_picture``: a DML_GRAPH_DESC (or a GraphBuilder program) as a layered DAG.

Every function returns an ``SVG``: a notebook shows it, ``save(path)`` writes it, ``str()``
is the SVG text.
"""

from __future__ import annotations

import colorsys
import dataclasses
import enum
import html
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dmlpy.device import validate
from dmlpy.enums import DML_CONVOLUTION_DIRECTION, DML_DEPTH_SPACE_ORDER, DML_GRAPH_NODE_TYPE, HRESULT
from dmlpy.errors import DmlError
from dmlpy.graph import DML_INPUT_GRAPH_EDGE_DESC, DML_INTERMEDIATE_GRAPH_EDGE_DESC, DML_OUTPUT_GRAPH_EDGE_DESC
from dmlpy.operators import DML_OPERATOR_DESC, spec_for_desc
from dmlpy.operators.convolution import DML_CONVOLUTION_OPERATOR_DESC, convolution_output_sizes, effective_kernel
from dmlpy.operators.pooling import DML_AVERAGE_POOLING1_OPERATOR_DESC, DML_AVERAGE_POOLING_OPERATOR_DESC, average_pooling_output_sizes, dilations_of, taps_inside
from dmlpy.operators.space_depth import (
    DML_DEPTH_TO_SPACE1_OPERATOR_DESC,
    DML_DEPTH_TO_SPACE_OPERATOR_DESC,
    DML_SPACE_TO_DEPTH1_OPERATOR_DESC,
    DML_SPACE_TO_DEPTH_OPERATOR_DESC,
    is_space_to_depth,
    order_of,
    space_to_depth_output_sizes,
)
from dmlpy.tensor import DML_BUFFER_TENSOR_DESC, DML_TENSOR_DESC, ELEMENT_BITS, as_data_type, buffer_tensor, calc_buffer_tensor_size

MAX_CELLS = 4096  # past this a picture is unreadable anyway; callers get a ValueError that says so

_e = html.escape


class SVG:
    """An SVG picture: ``_repr_svg_`` for notebooks, ``save(path)``, and ``str()`` for the text."""

    def __init__(self, text: str) -> None:
        self.text = text

    def _repr_svg_(self) -> str:
        return self.text

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"<dmlpy.pictures.SVG {len(self.text)} characters; .save(path) writes it>"

    def save(self, path: Any) -> Any:
        with open(path, "w", encoding="utf-8") as file:
            file.write(self.text)
        return path


class _Canvas:
    """SVG elements in drawing order; the size grows to fit what is drawn."""

    def __init__(self, title: str) -> None:
        self.items: list[str] = []
        self.width = 0.0
        self.height = 0.0
        self.title = title

    def _grow(self, x: float, y: float) -> None:
        self.width, self.height = max(self.width, x), max(self.height, y)

    def rect(self, x: float, y: float, w: float, h: float, cls: str, fill: str, *, stroke: str = "#444", dash: bool = False, opacity: float = 1.0, tip: str = "") -> None:
        extra = ' stroke-dasharray="3,2"' if dash else ""
        extra += f' opacity="{opacity:g}"' if opacity != 1.0 else ""
        body = f"<title>{_e(tip)}</title>" if tip else ""
        self.items.append(f'<rect class="{cls}" x="{x:g}" y="{y:g}" width="{w:g}" height="{h:g}" fill="{fill}" stroke="{stroke}"{extra}>{body}</rect>')
        self._grow(x + w, y + h)

    def text(self, x: float, y: float, value: Any, *, size: float = 11, anchor: str = "middle", cls: str = "label", weight: str = "normal", fill: str = "#111") -> None:
        self.items.append(
            f'<text class="{cls}" x="{x:g}" y="{y:g}" font-size="{size:g}" text-anchor="{anchor}" font-weight="{weight}" fill="{fill}">{_e(str(value))}</text>'
        )
        width = len(str(value)) * size * 0.6
        left = {"start": x, "middle": x - width / 2, "end": x - width}[anchor]
        self._grow(left + width, y + size * 0.3)

    def line(self, x1: float, y1: float, x2: float, y2: float, cls: str, stroke: str = "#444", *, width: float = 1.2, dash: bool = False, arrow: bool = False, opacity: float = 1.0) -> None:
        extra = ' stroke-dasharray="4,3"' if dash else ""
        extra += ' marker-end="url(#arrow)"' if arrow else ""
        extra += f' opacity="{opacity:g}"' if opacity != 1.0 else ""
        self.items.append(f'<line class="{cls}" x1="{x1:g}" y1="{y1:g}" x2="{x2:g}" y2="{y2:g}" stroke="{stroke}" stroke-width="{width:g}"{extra}/>')
        self._grow(max(x1, x2), max(y1, y2))

    def svg(self) -> SVG:
        width, height = math.ceil(self.width + 12), math.ceil(self.height + 12)
        head = (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            f'font-family="sans-serif"><title>{_e(self.title)}</title>'
            '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
            '<path d="M 0 0 L 10 5 L 0 10 z" fill="#444"/></marker></defs>'
            f'<rect class="background" x="0" y="0" width="{width}" height="{height}" fill="white"/>'
        )
        return SVG(head + "".join(self.items) + "</svg>")


def _hue(index: int, count: int, lightness: float = 0.72) -> str:
    r, g, b = colorsys.hls_to_rgb((index / max(count, 1)) % 1.0, lightness, 0.65)
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


def _require_valid(desc: Any, what: str) -> None:
    report = validate(desc)
    if report.errors:
        raise DmlError(HRESULT.E_INVALIDARG, report.errors, f"{what}: the desc is invalid, so there is nothing DirectML would compute to draw")


def _unwrap(desc: Any) -> Any:
    return desc.Desc if isinstance(desc, DML_OPERATOR_DESC) else desc


def _per_axis(value: Any, count: int, default: int, name: str) -> tuple[int, ...]:
    if value is None:
        return (default,) * count
    if isinstance(value, (int, np.integer)):
        return (int(value),) * count
    values = tuple(int(v) for v in value)
    if len(values) != count:
        msg = f"{name} has {len(values)} entries for {count} spatial dimensions"
        raise ValueError(msg)
    return values


def _spatial_params(input_size: Any, **values: tuple[Any, int]) -> tuple[tuple[int, ...], dict[str, tuple[int, ...]]]:
    """Spatial sizes and per-axis parameters as a 2-D or 3-D operator takes them.

    A single ``input_size`` is a row: height 1, and every single parameter applies to the
    width (the height gets the neutral value: window 1, stride 1, padding 0). ``values``
    maps a name to (value, neutral value); a value is None, one int, or one per axis.
    """
    row = isinstance(input_size, (int, np.integer))
    spatial = (1, int(input_size)) if row else tuple(int(s) for s in input_size)
    if len(spatial) not in (2, 3):
        msg = f"input_size {input_size!r}: give one size, or the 2 or 3 spatial sizes (H, W) or (D, H, W)"
        raise ValueError(msg)
    count = len(spatial)
    result = {}
    for name, (value, neutral) in values.items():
        if value is None:
            result[name] = (neutral,) * count
        elif isinstance(value, (int, np.integer)):
            result[name] = (neutral, int(value)) if row else (int(value),) * count
        else:
            result[name] = _per_axis(value, count, neutral, name)
    return spatial, result


def _check_cells(count: int, what: str) -> None:
    if count > MAX_CELLS:
        msg = f"{what} would draw {count} cells, more than {MAX_CELLS}; draw a smaller example"
        raise ValueError(msg)


# ---------------------------------------------------------------------------------------
# Windows sliding over the padded input


@dataclasses.dataclass(frozen=True)
class _Axis:
    name: str
    size: int
    window: int
    stride: int
    start: int
    end: int
    dilation: int
    outputs: int  # windows drawn
    include_padding: bool | None  # None: a convolution, which has no divisor
    zeroed: int = 0  # convolution OutputPadding: the last outputs are zero, no window

    def taps(self, out: int) -> list[int]:
        return [out * self.stride - self.start + k * self.dilation for k in range(self.window)]

    @property
    def trivial(self) -> bool:
        return self.size == 1 and self.window == 1 and self.outputs == 1 and not self.start and not self.end


_CELL, _ROW = 26, 20
_COLOURS = {"input": "#cfe3ff", "pad": "#e6e6e6", "beyond": "#ffd6d6"}
_TAP = {"input": "#2f6fd0", "pad": "#9aa7b8", "beyond": "#d33"}


def _where(position: int, axis: _Axis) -> str:
    if 0 <= position < axis.size:
        return "input"
    if -axis.start <= position < axis.size + axis.end:
        return "pad"
    return "beyond"


def _windows_svg(axes: list[_Axis], title: str, output_index: Sequence[int] | int | None) -> SVG:
    shown = [(i, a) for i, a in enumerate(axes) if not a.trivial] or list(enumerate(axes))
    _check_cells(sum(a.outputs * a.window + a.size + a.start + a.end for _, a in shown), title)
    highlight = _per_axis(output_index, len(axes), -1, "output_index") if output_index is not None else None
    canvas = _Canvas(title)
    canvas.text(8, 16, title, anchor="start", size=13, weight="bold", cls="title")
    y = 30
    left = 56
    for axis_index, axis in shown:
        positions = [p for o in range(axis.outputs) for p in axis.taps(o)]
        low = min([-axis.start, *positions])
        high = max([axis.size + axis.end - 1, *positions])
        keff = effective_kernel(axis.window, axis.dilation)
        floor = (axis.size + axis.start + axis.end - keff) // axis.stride + 1
        note = f"axis {axis.name}: input {axis.size}, window {axis.window}, stride {axis.stride}, dilation {axis.dilation}, padding {axis.start} + {axis.end}"
        note += f" -> {axis.outputs + axis.zeroed} outputs"
        if axis.outputs > floor:
            note += f" (floor formula gives {floor}: ceil shape, the last window overhangs)"
        if axis.zeroed:
            note += f" (last {axis.zeroed} zeroed by OutputPadding)"
        canvas.text(8, y + 12, note, anchor="start", size=12, cls="axis-title")
        y += 22
        for p in range(low, high + 1):
            kind = _where(p, axis)
            x = left + (p - low) * _CELL
            canvas.rect(x, y, _CELL, _ROW, f"cell {kind}", _COLOURS[kind], dash=kind == "beyond", tip=f"position {p}: {kind}")
            canvas.text(x + _CELL / 2, y + 14, p, size=10, fill="#111" if kind == "input" else "#777")
        canvas.text(left - 6, y + 14, "x", anchor="end", size=11)
        y += _ROW + 6
        for out in range(axis.outputs):
            faded = highlight is not None and highlight[axis_index] not in (-1, out)
            opacity = 0.3 if faded else 1.0
            taps = axis.taps(out)
            x0 = left + (taps[0] - low) * _CELL
            x1 = left + (taps[-1] - low + 1) * _CELL
            canvas.rect(x0, y + 2, x1 - x0, _ROW - 4, "window", "none", stroke="#888", opacity=opacity, tip=f"window of output {out}")
            for k, p in enumerate(taps):
                kind = _where(p, axis)
                canvas.rect(left + (p - low) * _CELL + 5, y + 5, _CELL - 10, _ROW - 10, f"tap {kind}", _TAP[kind], stroke="none", opacity=opacity, tip=f"output {out}, tap {k} at position {p} ({kind})")
            canvas.text(left - 6, y + 14, f"y[{out}]", anchor="end", size=11, cls="output-label")
            right = left + (high - low + 1) * _CELL + 8
            if axis.include_padding is not None:
                bounds = (-axis.start, axis.size + axis.end) if axis.include_padding else (0, axis.size)
                divisor = taps_inside(out, axis.size, axis.window, axis.stride, axis.start, axis.dilation, *bounds)
                canvas.text(right, y + 14, f"sum / {divisor}", anchor="start", size=11, cls="divisor")
            else:
                canvas.text(right, y + 14, f"{sum(_where(p, axis) == 'input' for p in taps)} taps on input", anchor="start", size=11, cls="divisor")
            y += _ROW
        y += 14
    legend = [("input", "input element"), ("pad", "padding (reads 0)"), ("beyond", "past the padded input (never counted)")]
    x = 8
    for kind, words in legend:
        canvas.rect(x, y, 14, 12, f"legend {kind}", _TAP[kind], stroke="none")
        canvas.text(x + 18, y + 10, words, anchor="start", size=11, cls="legend")
        x += 30 + len(words) * 6.6
    return canvas.svg()


def pooling_windows(
    desc: Any = None,
    *,
    input_size: Any = None,
    window: Any = None,
    strides: Any = None,
    start_padding: Any = None,
    end_padding: Any = None,
    dilations: Any = None,
    include_padding: bool = False,
    ceil_mode: bool = False,
    output_index: Sequence[int] | int | None = None,
) -> SVG:
    """Every output's window over the padded input of an AVERAGE_POOLING(1) desc, axis by axis.

    Without a desc, the parameters build one (``input_size`` an int for a row, or the spatial
    sizes; the others an int for every axis or one per axis; ``ceil_mode`` takes the ceil
    shape where dmlpy accepts it). ``output_index`` highlights one output per axis. Each row
    says what the average divides by: taps inside the padded input with ``IncludePadding``,
    taps on the input without. Raises DmlError for a desc the validator rejects.
    """
    if desc is None:
        if input_size is None or window is None:
            msg = "pooling_windows needs a desc, or input_size and window"
            raise TypeError(msg)
        spatial, p = _spatial_params(input_size, window=(window, 1), strides=(strides, 1), start=(start_padding, 0), end=(end_padding, 0), dilations=(dilations, 1))
        count = len(spatial)
        window_, strides_, start, end, dil = p["window"], p["strides"], p["start"], p["end"], p["dilations"]
        x = (1, 1, *spatial)
        y = average_pooling_output_sizes(x, window_, strides_, start, end, dil, ceil_mode=ceil_mode)
        desc = DML_AVERAGE_POOLING1_OPERATOR_DESC(buffer_tensor("float32", x), buffer_tensor("float32", y), count, strides_, window_, start, end, dil, include_padding)
    desc = _unwrap(desc)
    if not isinstance(desc, (DML_AVERAGE_POOLING_OPERATOR_DESC, DML_AVERAGE_POOLING1_OPERATOR_DESC)):
        msg = f"pooling_windows draws AVERAGE_POOLING descs, not {type(desc).__name__}"
        raise TypeError(msg)
    _require_valid(desc, "pooling_windows")
    x_sizes, y_sizes = desc.InputTensor.Desc.Sizes, desc.OutputTensor.Desc.Sizes
    names = "DHW"[-(len(x_sizes) - 2) :]
    axes = [
        _Axis(names[i], x_sizes[i + 2], desc.WindowSize[i], desc.Strides[i], desc.StartPadding[i], desc.EndPadding[i], d, y_sizes[i + 2], bool(desc.IncludePadding))
        for i, d in enumerate(dilations_of(desc))
    ]
    return _windows_svg(axes, f"{type(desc).__name__}: windows over the padded input", output_index)


def _convolution_desc(input_size: Any, kernel: Any, strides: Any, start_padding: Any, end_padding: Any, dilations: Any, direction: Any, output_size: Any = None) -> DML_CONVOLUTION_OPERATOR_DESC:
    spatial, p = _spatial_params(input_size, kernel=(kernel, 1), strides=(strides, 1), start=(start_padding, 0), end=(end_padding, 0), dilations=(dilations, 1))
    count = len(spatial)
    kernel_, strides_, start, end, dil = p["kernel"], p["strides"], p["start"], p["end"], p["dilations"]
    x, w = (1, 1, *spatial), (1, 1, *kernel_)
    y = convolution_output_sizes(x, w, strides_, dil, start, end, None, 1, direction)
    if output_size is not None:
        _, given = _spatial_params(input_size, output=(output_size, 1))
        y = (1, 1, *given["output"])
    return DML_CONVOLUTION_OPERATOR_DESC(
        buffer_tensor("float32", x), buffer_tensor("float32", w), None, buffer_tensor("float32", y),
        Direction=direction, DimensionCount=count, Strides=strides_, Dilations=dil, StartPadding=start, EndPadding=end,
        OutputPadding=(0,) * count, GroupCount=1,
    )  # fmt: skip


def convolution_windows(
    desc: Any = None,
    *,
    input_size: Any = None,
    kernel: Any = None,
    strides: Any = None,
    start_padding: Any = None,
    end_padding: Any = None,
    dilations: Any = None,
    output_index: Sequence[int] | int | None = None,
) -> SVG:
    """Every output's kernel taps over the padded input of a FORWARD convolution, axis by axis.

    Without a desc, the parameters build one (as for ``pooling_windows``). A BACKWARD desc
    scatters rather than gathers: draw it with ``backward_scatter``.
    """
    if desc is None:
        if input_size is None or kernel is None:
            msg = "convolution_windows needs a desc, or input_size and kernel"
            raise TypeError(msg)
        desc = _convolution_desc(input_size, kernel, strides, start_padding, end_padding, dilations, DML_CONVOLUTION_DIRECTION.FORWARD)
    desc = _unwrap(desc)
    if not isinstance(desc, DML_CONVOLUTION_OPERATOR_DESC):
        msg = f"convolution_windows draws DML_CONVOLUTION_OPERATOR_DESC, not {type(desc).__name__}"
        raise TypeError(msg)
    _require_valid(desc, "convolution_windows")
    if desc.Direction == DML_CONVOLUTION_DIRECTION.BACKWARD:
        msg = "this convolution is BACKWARD: it scatters each input over the output; draw it with backward_scatter(desc)"
        raise ValueError(msg)
    x_sizes, w_sizes, y_sizes = desc.InputTensor.Desc.Sizes, desc.FilterTensor.Desc.Sizes, desc.OutputTensor.Desc.Sizes
    names = "DHW"[-(len(x_sizes) - 2) :]
    axes = [
        _Axis(names[i], x_sizes[i + 2], w_sizes[i + 2], desc.Strides[i], desc.StartPadding[i], desc.EndPadding[i], desc.Dilations[i],
              y_sizes[i + 2] - desc.OutputPadding[i], None, desc.OutputPadding[i])  # fmt: skip
        for i in range(len(x_sizes) - 2)
    ]
    return _windows_svg(axes, "DML_CONVOLUTION_OPERATOR_DESC (FORWARD): kernel taps over the padded input", output_index)


# ---------------------------------------------------------------------------------------
# BACKWARD convolution: the scatter


def backward_scatter(
    desc: Any = None,
    *,
    input_size: Any = None,
    kernel: Any = None,
    strides: Any = None,
    start_padding: Any = None,
    end_padding: Any = None,
    dilations: Any = None,
    output_size: Any = None,
) -> SVG:
    """Where a BACKWARD convolution adds ``x[i] * w[k]``: output position ``i * stride + k * dilation - start``.

    One panel per spatial axis: the inputs on top, lines to every position a tap reaches,
    the output below with the number of terms each position sums; positions before 0 or
    past the output are cropped by the padding (dashed). ``output_size`` picks one of the
    larger accepted sizes (up to stride - 1 more, computed, not zeroed).
    """
    if desc is None:
        if input_size is None or kernel is None:
            msg = "backward_scatter needs a desc, or input_size and kernel"
            raise TypeError(msg)
        desc = _convolution_desc(input_size, kernel, strides, start_padding, end_padding, dilations, DML_CONVOLUTION_DIRECTION.BACKWARD, output_size)
    desc = _unwrap(desc)
    if not isinstance(desc, DML_CONVOLUTION_OPERATOR_DESC) or desc.Direction != DML_CONVOLUTION_DIRECTION.BACKWARD:
        msg = "backward_scatter draws a DML_CONVOLUTION_OPERATOR_DESC whose Direction is BACKWARD (convolution_windows draws FORWARD)"
        raise TypeError(msg)
    _require_valid(desc, "backward_scatter")
    x_sizes, w_sizes, y_sizes = desc.InputTensor.Desc.Sizes, desc.FilterTensor.Desc.Sizes, desc.OutputTensor.Desc.Sizes
    names = "DHW"[-(len(x_sizes) - 2) :]
    title = "DML_CONVOLUTION_OPERATOR_DESC (BACKWARD): y[i * stride + k * dilation - start] += x[i] * w[k]"
    canvas = _Canvas(title)
    canvas.text(8, 16, title, anchor="start", size=13, weight="bold", cls="title")
    y = 30
    left = 56
    panels = [i for i in range(len(x_sizes) - 2) if not (x_sizes[i + 2] == 1 and w_sizes[i + 2] == 1 and y_sizes[i + 2] == 1)] or [len(x_sizes) - 3]
    _check_cells(sum(x_sizes[i + 2] * w_sizes[i + 2] for i in panels), "backward_scatter")
    for i in panels:
        size, k, out = x_sizes[i + 2], w_sizes[i + 2], y_sizes[i + 2]
        s, d, sp, ep, op = desc.Strides[i], desc.Dilations[i], desc.StartPadding[i], desc.EndPadding[i], desc.OutputPadding[i]
        targets = {(a, t): a * s + t * d - sp for a in range(size) for t in range(k)}
        low = min(0, *targets.values())
        high = max(out - 1, *targets.values())
        canvas.text(8, y + 12, f"axis {names[i]}: input {size}, kernel {k}, stride {s}, dilation {d}, padding {sp} + {ep} -> output {out}", anchor="start", size=12, cls="axis-title")
        y += 24
        top, bottom = y, y + 110

        def centre(p: int) -> float:
            return left + (p - low) * _CELL + _CELL / 2

        for a in range(size):
            p = a * s - sp
            canvas.rect(centre(p) - _CELL / 2, top, _CELL, _ROW, "input", "#cfe3ff", tip=f"x[{a}]")
            canvas.text(centre(p), top + 14, a, size=10)
        canvas.text(left - 6, top + 14, "x", anchor="end")
        for (a, t), p in targets.items():
            inside = 0 <= p < out
            canvas.line(centre(a * s - sp), top + _ROW, centre(p), bottom, "scatter" + ("" if inside else " cropped"), _hue(t, k, 0.45), dash=not inside, opacity=1.0 if inside else 0.6)
        for p in range(low, high + 1):
            inside = 0 <= p < out
            terms = sum(1 for q in targets.values() if q == p)
            zeroed = inside and p >= out - op
            kind = "output zeroed" if zeroed else "output" if inside else "cropped"
            canvas.rect(centre(p) - _CELL / 2, bottom, _CELL, _ROW, kind, "#d8f0d0" if inside else "#eeeeee", dash=not inside, tip=f"y[{p}]: {terms} terms" + (" (cropped)" if not inside else ""))
            canvas.text(centre(p), bottom + 14, p, size=10)
            canvas.text(centre(p), bottom + _ROW + 13, terms if inside else "", size=10, cls="terms")
        canvas.text(left - 6, bottom + 14, "y", anchor="end")
        canvas.text(left - 6, bottom + _ROW + 13, "terms", anchor="end", size=10)
        y = bottom + _ROW + 30
    x = 8
    for t in range(min(max(w_sizes[2:]), 8)):
        canvas.line(x, y, x + 18, y, "legend", _hue(t, max(w_sizes[2:]), 0.45), width=3)
        canvas.text(x + 22, y + 4, f"tap k={t}", anchor="start", size=11, cls="legend")
        x += 80
    canvas.text(8, y + 22, "dashed: lands outside the output (cropped by StartPadding/EndPadding); CONVOLUTION mode uses w[K-1-k] for tap k", anchor="start", size=11, cls="legend")
    return canvas.svg()


# ---------------------------------------------------------------------------------------
# SPACE_TO_DEPTH / DEPTH_TO_SPACE


def space_depth_blocks(
    desc: Any = None,
    *,
    channels: int = 1,
    height: int = 4,
    width: int = 4,
    block_size: int = 2,
    order: DML_DEPTH_SPACE_ORDER | int | str = DML_DEPTH_SPACE_ORDER.DEPTH_COLUMN_ROW,
) -> SVG:
    """Where every element goes: numbered elements run through the operator's own kernel.

    Without a desc, draws SPACE_TO_DEPTH1 of a ``{1, channels, height, width}`` input with
    ``order`` (``"DEPTH_COLUMN_ROW"``/DCR or ``"COLUMN_ROW_DEPTH"``/CRD). A DEPTH_TO_SPACE desc
    draws the inverse move. An element keeps its number and colour (the hue says its place
    in the block, the shade its space channel); each depth channel is captioned with the
    ``(by, bx, c)`` it holds.
    """
    if desc is None:
        order_ = DML_DEPTH_SPACE_ORDER[order] if isinstance(order, str) else DML_DEPTH_SPACE_ORDER(order)
        x = (1, channels, height, width)
        desc = DML_SPACE_TO_DEPTH1_OPERATOR_DESC(buffer_tensor("float32", x), buffer_tensor("float32", space_to_depth_output_sizes(x, block_size)), block_size, order_)
    desc = _unwrap(desc)
    kinds = (DML_SPACE_TO_DEPTH_OPERATOR_DESC, DML_SPACE_TO_DEPTH1_OPERATOR_DESC, DML_DEPTH_TO_SPACE_OPERATOR_DESC, DML_DEPTH_TO_SPACE1_OPERATOR_DESC)
    if not isinstance(desc, kinds):
        msg = f"space_depth_blocks draws SPACE_TO_DEPTH and DEPTH_TO_SPACE descs, not {type(desc).__name__}"
        raise TypeError(msg)
    _require_valid(desc, "space_depth_blocks")
    x_sizes = tuple(desc.InputTensor.Desc.Sizes)
    _check_cells(2 * math.prod(x_sizes[1:]), "space_depth_blocks")
    numbered = np.arange(math.prod(x_sizes), dtype=np.float64).reshape(x_sizes)
    moved = spec_for_desc(desc).reference(desc, {"InputTensor": numbered})["OutputTensor"]
    b, order_ = desc.BlockSize, DML_DEPTH_SPACE_ORDER(order_of(desc))
    to_depth = is_space_to_depth(desc)
    space, depth = (numbered, moved) if to_depth else (moved, numbered)
    c_space = space.shape[1]
    # each element's place in its block and its space channel, read off the space tensor
    place = {int(space[0, c, h, w]): (h % b, w % b, c) for c in range(space.shape[1]) for h in range(space.shape[2]) for w in range(space.shape[3])}

    def colour(element: int) -> str:
        by, bx, c = place[element]
        return _hue(by * b + bx, b * b, 0.55 + 0.3 * c / max(c_space, 1))

    def channel_caption(k: int, is_depth: bool) -> str:
        if not is_depth:
            return f"c={k}"
        if order_ == DML_DEPTH_SPACE_ORDER.DEPTH_COLUMN_ROW:
            by, bx, c = k // (b * c_space), (k // c_space) % b, k % c_space
        else:
            c, by, bx = k // (b * b), (k // b) % b, k % b
        return f"{k}: by={by} bx={bx} c={c}"

    name = type(desc).__name__
    title = f"{name}, BlockSize {b}, {order_.name} ({'DCR' if order_ == DML_DEPTH_SPACE_ORDER.DEPTH_COLUMN_ROW else 'CRD'})"
    canvas = _Canvas(title)
    canvas.text(8, 16, title, anchor="start", size=13, weight="bold", cls="title")
    cell = 24
    y = 36
    for role, tensor in (("input", numbered), ("output", moved)):
        is_depth = (role == "output") == to_depth
        canvas.text(8, y + 10, f"{role} {{{', '.join(str(s) for s in tensor.shape)}}} ({'depth' if is_depth else 'space'})", anchor="start", size=12, cls="tensor-title")
        y += 18
        x = 8
        _, c_count, h_count, w_count = tensor.shape
        caption_width = max(w_count * cell, 110 if is_depth else 30)
        for c in range(c_count):
            canvas.text(x, y + 10, channel_caption(c, is_depth), anchor="start", size=10, cls="channel-caption")
            for h in range(h_count):
                for w in range(w_count):
                    element = int(tensor[0, c, h, w])
                    canvas.rect(x + w * cell, y + 16 + h * cell, cell, cell, f"element {role}", colour(element), stroke="#555", tip=f"element {element} at (c={c}, h={h}, w={w})")
                    canvas.text(x + w * cell + cell / 2, y + 16 + h * cell + 16, element, size=10, cls=f"element-number {role}")
            if not is_depth and b > 1:  # block borders on the space tensor
                for by in range(0, h_count, b):
                    for bx in range(0, w_count, b):
                        canvas.rect(x + bx * cell, y + 16 + by * cell, b * cell, b * cell, "block", "none", stroke="#000")
            x += caption_width + 14
        y += 16 + h_count * cell + 22
    canvas.text(8, y, "hue: position (by, bx) inside a block; shade: space channel c; numbers follow each element", anchor="start", size=11, cls="legend")
    return canvas.svg()


# ---------------------------------------------------------------------------------------
# Sizes + Strides -> buffer bytes


def tensor_layout(desc: Any = None, *, sizes: Sequence[int] | None = None, strides: Sequence[int] | None = None, data_type: Any = "float32", per_row: int = 16) -> SVG:
    """The logical tensor, and where each element sits in the buffer: byte ``sum(index * stride) * element size``.

    Takes a DML_TENSOR_DESC / DML_BUFFER_TENSOR_DESC or ``sizes`` (and ``strides``, NULL for
    packed). Buffer slots no element reaches (padding) are grey; slots several elements share
    (a 0 stride: broadcast) say how many. The buffer is ``TotalTensorSizeInBytes`` long.
    """
    if desc is None:
        if sizes is None:
            msg = "tensor_layout needs a tensor desc or sizes"
            raise TypeError(msg)
        desc = buffer_tensor(data_type, sizes, strides)
    if isinstance(desc, DML_TENSOR_DESC):
        desc = desc.Desc
    if not isinstance(desc, DML_BUFFER_TENSOR_DESC):
        msg = f"tensor_layout draws a DML_TENSOR_DESC or DML_BUFFER_TENSOR_DESC, not {type(desc).__name__}"
        raise TypeError(msg)
    shape = tuple(int(s) for s in desc.Sizes or ())
    element_strides = tuple(int(s) for s in desc.Strides) if desc.Strides is not None else None
    if not shape or any(s < 1 for s in shape) or (element_strides is not None and len(element_strides) != len(shape)):
        msg = f"Sizes {shape} and Strides {element_strides} do not describe a tensor (validate the desc for the rule that fails)"
        raise ValueError(msg)
    data_type_ = as_data_type(desc.DataType)
    bits = ELEMENT_BITS.get(data_type_, 0)
    if not bits:
        msg = f"DataType {data_type_.name} has no element size to lay out"
        raise ValueError(msg)
    minimum = calc_buffer_tensor_size(data_type_, shape, element_strides)
    total = max(int(desc.TotalTensorSizeInBytes), minimum)
    count = math.prod(shape)
    slots = total * 8 // bits
    _check_cells(count + slots, "tensor_layout")
    strides_ = element_strides if element_strides is not None else tuple(int(v) for v in np.cumprod((1, *shape[::-1]))[:-1][::-1])
    index = np.indices(shape).reshape(len(shape), -1).T  # row-major logical order
    offsets = index @ np.array(strides_, dtype=np.int64)
    holders: dict[int, list[int]] = {}
    for logical, offset in enumerate(offsets.tolist()):
        holders.setdefault(offset, []).append(logical)

    title = f"{data_type_.name} Sizes {{{', '.join(map(str, shape))}}} Strides {'NULL (packed)' if element_strides is None else '{' + ', '.join(map(str, element_strides)) + '}'}: {total} bytes"
    canvas = _Canvas(title)
    canvas.text(8, 16, title, anchor="start", size=13, weight="bold", cls="title")
    canvas.text(8, 34, f"element (i0, i1, ...) sits at byte (i0 * {strides_[0]}" + "".join(f" + i{k} * {s}" for k, s in enumerate(strides_[1:], 1)) + f") * {bits / 8:g}", anchor="start", size=11, cls="formula")
    cell = 30
    y = 50
    four = (1,) * (4 - len(shape)) + shape if len(shape) <= 4 else (math.prod(shape[:-3]), *shape[-3:])
    n_count, c_count, h_count, w_count = four
    canvas.text(8, y + 10, "logical tensor (numbers: row-major element index)", anchor="start", size=12, cls="tensor-title")
    y += 18
    for n in range(n_count):
        x = 8
        for c in range(c_count):
            canvas.text(x, y + 10, f"n={n} c={c}" if len(shape) >= 3 else "", anchor="start", size=10)
            for h in range(h_count):
                for w in range(w_count):
                    logical = ((n * c_count + c) * h_count + h) * w_count + w
                    canvas.rect(x + w * cell, y + 14 + h * cell, cell, cell, "logical", _hue(logical, count), tip=f"element {logical}: byte {offsets[logical] * bits // 8}")
                    canvas.text(x + w * cell + cell / 2, y + 14 + h * cell + 19, logical, size=10, cls="logical-number")
            x += max(w_count * cell, 60) + 14
        y += 14 + h_count * cell + 12
    y += 10
    canvas.text(8, y + 10, f"buffer: {slots} slots of {bits / 8:g} bytes (TotalTensorSizeInBytes {total})", anchor="start", size=12, cls="tensor-title")
    y += 18
    left = 60
    for slot in range(slots):
        row, col = divmod(slot, per_row)
        x, top = left + col * cell, y + row * (cell + 14)
        if col == 0:
            canvas.text(left - 6, top + 19, f"byte {slot * bits // 8}", anchor="end", size=10, cls="byte-offset")
        held = holders.get(slot, [])
        if not held:
            canvas.rect(x, top, cell, cell, "slot unused", "#eeeeee", dash=True, tip=f"slot {slot}: no element (padding)")
        else:
            canvas.rect(x, top, cell, cell, "slot used", _hue(held[0], count), tip=f"slot {slot}: elements {held}")
            canvas.text(x + cell / 2, top + 19, held[0] if len(held) == 1 else f"x{len(held)}", size=10, cls="slot-number")
    canvas.text(8, y + (slots // per_row + 1) * (cell + 14) + 10, "grey dashed: bytes no element uses; xN: N elements read the same bytes (a 0 stride broadcasts)", anchor="start", size=11, cls="legend")
    return canvas.svg()


# ---------------------------------------------------------------------------------------
# Graphs


@dataclasses.dataclass
class GraphBox:
    kind: str  # "input", "node", "output"
    index: int
    label: str
    detail: str = ""


@dataclasses.dataclass
class GraphEdge:
    source: int  # box index
    target: int
    label: str = ""


@dataclasses.dataclass
class GraphModel:
    boxes: list[GraphBox]
    edges: list[GraphEdge]


def _tensor_label(operator: Any, kind: str, slot_index: int) -> str:
    """``FLOAT32 {1, 64, 32, 32}`` for one slot of a device Operator, or "" when it has none."""
    spec = getattr(operator, "spec", None)
    if spec is None:
        return ""
    slots = spec.support.inputs if kind == "input" else spec.support.outputs
    if not isinstance(slot_index, int) or not 0 <= slot_index < len(slots):
        return ""
    tensor = getattr(getattr(operator, "desc", None), slots[slot_index].name, None)
    buffer = getattr(tensor, "Desc", None)
    if not isinstance(buffer, DML_BUFFER_TENSOR_DESC):
        return ""
    dtype = buffer.DataType.name if isinstance(buffer.DataType, enum.Enum) else str(buffer.DataType)
    return f"{dtype} {{{', '.join(str(s) for s in buffer.Sizes or ())}}}"


def graph_model(graph: Any, input_names: Sequence[str] | None = None) -> GraphModel:
    """The boxes and edges of a DML_GRAPH_DESC: graph inputs, nodes, graph outputs."""
    nodes = list(graph.Nodes or ())
    boxes: list[GraphBox] = []
    node_box: dict[int, int] = {}
    for i, node in enumerate(nodes):
        inner = getattr(node, "Desc", None)
        name = getattr(inner, "Name", None)
        if getattr(node, "Type", None) == DML_GRAPH_NODE_TYPE.CONSTANT:
            detail = f"CONSTANT ({getattr(inner, 'DataSize', 0)} bytes)"
        else:
            operator = getattr(inner, "Operator", None)
            detail = str(getattr(operator, "name", type(operator).__name__)).removeprefix("DML_OPERATOR_")
        node_box[i] = len(boxes)
        boxes.append(GraphBox("node", i, name or f"node {i}", detail))
    inputs: dict[int, int] = {}
    outputs: dict[int, int] = {}
    edges: list[GraphEdge] = []

    def operator_of(index: Any) -> Any:
        return getattr(getattr(nodes[index], "Desc", None), "Operator", None) if isinstance(index, int) and 0 <= index < len(nodes) else None

    def edge_desc(edge: Any, struct: type) -> Any:
        """The edge's struct when it is the right one with integer indices, else None (an invalid graph draws what it can)."""
        e = getattr(edge, "Desc", None)
        if not isinstance(e, struct) or not all(isinstance(v, int) for k, v in vars(e).items() if k.endswith("Index")):
            return None
        return e

    for edge in graph.InputEdges or ():
        e = edge_desc(edge, DML_INPUT_GRAPH_EDGE_DESC)
        if e is None or e.ToNodeIndex not in node_box:
            continue
        if e.GraphInputIndex not in inputs:
            inputs[e.GraphInputIndex] = len(boxes)
            given = input_names[e.GraphInputIndex] if input_names is not None and 0 <= e.GraphInputIndex < len(input_names) else None
            boxes.append(GraphBox("input", e.GraphInputIndex, given or e.Name or f"input {e.GraphInputIndex}"))
        edges.append(GraphEdge(inputs[e.GraphInputIndex], node_box[e.ToNodeIndex], _tensor_label(operator_of(e.ToNodeIndex), "input", e.ToNodeInputIndex)))
    for edge in graph.IntermediateEdges or ():
        e = edge_desc(edge, DML_INTERMEDIATE_GRAPH_EDGE_DESC)
        if e is None or e.FromNodeIndex not in node_box or e.ToNodeIndex not in node_box:
            continue
        label = _tensor_label(operator_of(e.FromNodeIndex), "output", e.FromNodeOutputIndex) or _tensor_label(operator_of(e.ToNodeIndex), "input", e.ToNodeInputIndex)
        edges.append(GraphEdge(node_box[e.FromNodeIndex], node_box[e.ToNodeIndex], label))
    for edge in graph.OutputEdges or ():
        e = edge_desc(edge, DML_OUTPUT_GRAPH_EDGE_DESC)
        if e is None or e.FromNodeIndex not in node_box:
            continue
        if e.GraphOutputIndex not in outputs:
            outputs[e.GraphOutputIndex] = len(boxes)
            boxes.append(GraphBox("output", e.GraphOutputIndex, e.Name or f"output {e.GraphOutputIndex}"))
        edges.append(GraphEdge(node_box[e.FromNodeIndex], outputs[e.GraphOutputIndex], _tensor_label(operator_of(e.FromNodeIndex), "output", e.FromNodeOutputIndex)))
    return GraphModel(boxes, edges)


def _layers(model: GraphModel) -> list[int]:
    """The longest path from a source to each box; boxes on a cycle (an invalid graph) go one layer below the rest."""
    count = len(model.boxes)
    incoming = [0] * count
    for edge in model.edges:
        incoming[edge.target] += 1
    layer = [0] * count
    ready = [i for i in range(count) if incoming[i] == 0]
    seen = 0
    while ready:
        box = ready.pop()
        seen += 1
        for edge in model.edges:
            if edge.source == box:
                layer[edge.target] = max(layer[edge.target], layer[box] + 1)
                incoming[edge.target] -= 1
                if incoming[edge.target] == 0:
                    ready.append(edge.target)
    if seen < count:
        deepest = max(layer) + 1
        for i in range(count):
            if incoming[i] > 0:
                layer[i] = deepest
    outputs = [i for i, b in enumerate(model.boxes) if b.kind == "output"]
    bottom = max([layer[i] for i in range(count)], default=0)
    for i in outputs:  # graph outputs on one line at the bottom
        layer[i] = bottom
    return layer


def graph_picture(graph: Any) -> SVG:
    """A DML_GRAPH_DESC, a GraphProgram, or a CompiledGraph's desc drawn as a DAG, top to bottom.

    Boxes: graph inputs (blue), operator and constant nodes (with the operator type), graph
    outputs (green). Edges carry the tensor's data type and sizes where the operators say them.
    """
    input_names = None
    if hasattr(graph, "graph_desc") and hasattr(graph, "input_names"):  # a GraphBuilder program
        input_names = list(graph.input_names)
        graph = graph.graph_desc
    model = graph_model(graph, input_names)
    layers = _layers(model)
    by_layer: dict[int, list[int]] = {}
    for i, layer in enumerate(layers):
        by_layer.setdefault(layer, []).append(i)
    box_w, box_h, gap_x, gap_y = 180, 42, 40, 70
    position: dict[int, tuple[float, float]] = {}
    widest = max((len(v) for v in by_layer.values()), default=1)
    total_w = widest * (box_w + gap_x)
    for layer in sorted(by_layer):
        members = by_layer[layer]
        # order a layer by where its predecessors sit, so edges cross less
        def pull(i: int) -> float:
            xs = [position[e.source][0] for e in model.edges if e.target == i and e.source in position]
            return sum(xs) / len(xs) if xs else float(i)

        members.sort(key=pull)
        offset = (total_w - len(members) * (box_w + gap_x)) / 2
        for k, i in enumerate(members):
            position[i] = (20 + offset + k * (box_w + gap_x), 40 + layer * (box_h + gap_y))
    title = f"DML_GRAPH_DESC: {sum(b.kind == 'node' for b in model.boxes)} nodes, {len(model.edges)} edges"
    canvas = _Canvas(title)
    canvas.text(8, 18, title, anchor="start", size=13, weight="bold", cls="title")
    # edges leave and enter a box spread along its side, in the order of where they go and come from
    leaving = {i: sorted((e for e in model.edges if e.source == i), key=lambda e: position[e.target][0]) for i in range(len(model.boxes))}
    entering = {i: sorted((e for e in model.edges if e.target == i), key=lambda e: position[e.source][0]) for i in range(len(model.boxes))}
    for edge in model.edges:
        (sx, sy), (tx, ty) = position[edge.source], position[edge.target]
        out_rank = next(k for k, e in enumerate(leaving[edge.source]) if e is edge)
        in_rank = next(k for k, e in enumerate(entering[edge.target]) if e is edge)
        x1 = sx + box_w * (out_rank + 1) / (len(leaving[edge.source]) + 1)
        x2 = tx + box_w * (in_rank + 1) / (len(entering[edge.target]) + 1)
        y1, y2 = sy + box_h, ty
        canvas.line(x1, y1, x2, y2, "edge", arrow=True)
        if edge.label:
            at = min(0.5, gap_y * 0.45 / max(y2 - y1, 1.0))  # in the gap below the source, never behind a box it passes
            canvas.text(x1 + (x2 - x1) * at + 4, y1 + (y2 - y1) * at + 4, edge.label, anchor="start", size=10, cls="edge-label", fill="#333")
    fills = {"input": "#cfe3ff", "node": "#fff3c4", "output": "#d8f0d0"}
    for i, box in enumerate(model.boxes):
        x, y = position[i]
        canvas.rect(x, y, box_w, box_h, f"box {box.kind}", fills[box.kind], tip=f"{box.kind} {box.index}: {box.label} {box.detail}")
        canvas.text(x + box_w / 2, y + (17 if box.detail else 25), box.label[:28], size=12, weight="bold", cls="box-label")
        if box.detail:
            canvas.text(x + box_w / 2, y + 33, box.detail[:30], size=10, cls="box-detail")
    return canvas.svg()


__all__ = [
    "MAX_CELLS",
    "SVG",
    "backward_scatter",
    "convolution_windows",
    "graph_model",
    "graph_picture",
    "pooling_windows",
    "space_depth_blocks",
    "tensor_layout",
]
