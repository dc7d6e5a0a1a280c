"""Random single-node ONNX models for the importer's oracle tests, and helpers shared by the interop tests.

``random_case(rng)`` draws one operator (AveragePool 7-22, GlobalAveragePool, Conv and
ConvTranspose 11/22, SpaceToDepth 1/13, DepthToSpace 1/11/13, Relu/LeakyRelu/Sigmoid) with
random attributes (auto_pad, ceil_mode, count_include_pad, output_shape, output_padding,
dilations, groups), rank 3 (1-D), 4 or 5 (3-D), and an input, and returns the model and
its feeds. Every draw is valid ONNX that onnxruntime runs; the draws stay inside what
onnxruntime accepts (pads below the kernel for pooling, output_padding below the stride) and
away from where it departs from ONNX (AveragePool SAME_* with dilations or with a kernel shorter
than the stride, Conv SAME_* with dilations), which test_onnx_import.py tests on their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper

IR_VERSION = 10  # the onnxruntime under test refuses newer IR versions


def make_model(nodes: list[Any], inputs: dict[str, tuple[int, ...] | tuple[Any, ...] | None], outputs: list[str], *, initializers: dict[str, np.ndarray] | None = None,
               opset: int = 22, dtype: int = TensorProto.FLOAT, output_shapes: dict[str, Any] | None = None) -> Any:  # fmt: skip
    """A model around ``nodes``: float inputs of the given shapes (None: no shape), outputs without declared shapes unless given."""
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(name, dtype, shape) for name, shape in inputs.items()],
        [helper.make_tensor_value_info(name, dtype, (output_shapes or {}).get(name)) for name in outputs],
        [numpy_helper.from_array(array, name) for name, array in (initializers or {}).items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR_VERSION)


def ort_run(model: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


@dataclass
class Case:
    op: str
    opset: int
    attributes: dict[str, Any]
    model: Any
    feeds: dict[str, np.ndarray]
    rank: int
    notes: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        shown = ",".join(f"{k}={v}" for k, v in sorted(self.attributes.items()))
        return f"{self.op}-{self.opset} rank{self.rank} {shown} x{tuple(self.feeds['x'].shape)}"


def _pick(rng: np.random.Generator, values: list[Any]) -> Any:
    return values[int(rng.integers(0, len(values)))]


def average_pool_case(rng: np.random.Generator) -> Case:
    rank = _pick(rng, [3, 4, 4, 5])
    n = rank - 2
    opset = _pick(rng, [7, 10, 11, 19, 22])
    kernel = [int(rng.integers(1, 4)) for _ in range(n)]
    strides = [int(rng.integers(1, 4)) for _ in range(n)]
    dilations = [int(rng.integers(1, 4)) for _ in range(n)] if opset >= 19 and rng.random() < 0.6 else [1] * n
    attributes: dict[str, Any] = {"kernel_shape": kernel}
    if any(s != 1 for s in strides) or rng.random() < 0.3:
        attributes["strides"] = strides
    if any(d != 1 for d in dilations):
        attributes["dilations"] = dilations
    auto_pad = _pick(rng, ["NOTSET", "NOTSET", "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"])
    if auto_pad.startswith("SAME") and any(d != 1 for d in dilations) and rng.random() < 0.7:
        auto_pad = "NOTSET"
    if auto_pad.startswith("SAME"):
        # onnxruntime sizes SAME padding with the undilated kernel, and shifts the windows when a
        # kernel shorter than the stride makes the padding negative; ONNX does neither (tests
        # test_average_pool_same_with_dilations_follows_the_onnx_pad_formula and ..._never_negative)
        dilations = [1] * n
        attributes.pop("dilations", None)
        strides = [min(s, k) for s, k in zip(strides, kernel, strict=True)]
        attributes["strides"] = strides
    pads = [0] * (2 * n)
    if auto_pad == "NOTSET":
        pads = [int(rng.integers(0, k)) for k in kernel + kernel]  # onnxruntime: pads below the kernel
        if any(pads):
            attributes["pads"] = pads
    else:
        attributes["auto_pad"] = auto_pad
    if opset >= 10 and rng.random() < 0.6:
        attributes["ceil_mode"] = 1
    if rng.random() < (0.75 if attributes.get("ceil_mode") else 0.5):
        attributes["count_include_pad"] = 1
    keff = [(k - 1) * d + 1 for k, d in zip(kernel, dilations, strict=True)]
    sizes = []
    for i in range(n):
        low = max(1, keff[i] - pads[i] - pads[i + n]) if auto_pad != "VALID" else keff[i]
        choices = list(range(low, low + 6))
        if attributes.get("ceil_mode") and not auto_pad.startswith("SAME") and rng.random() < 0.7:
            # prefer sizes whose ceil-mode output adds a window past the padded input
            def overhangs(size: int, i: int = i) -> bool:
                span = size + pads[i] + pads[i + n] - keff[i]
                return span % strides[i] != 0 and (span // strides[i] + 1) * strides[i] < size + pads[i]

            choices = [v for v in choices if overhangs(v)] or choices
        sizes.append(int(_pick(rng, choices)))
    shape = (int(rng.integers(1, 3)), int(rng.integers(1, 3)), *sizes)
    node = helper.make_node("AveragePool", ["x"], ["y"], **attributes)
    x = rng.standard_normal(shape).astype(np.float32)
    return Case("AveragePool", opset, attributes, make_model([node], {"x": shape}, ["y"], opset=opset), {"x": x}, rank)


def global_average_pool_case(rng: np.random.Generator) -> Case:
    rank = _pick(rng, [3, 4, 5])
    shape = (int(rng.integers(1, 3)), int(rng.integers(1, 4)), *(int(rng.integers(1, 6)) for _ in range(rank - 2)))
    opset = _pick(rng, [11, 22])
    node = helper.make_node("GlobalAveragePool", ["x"], ["y"])
    return Case("GlobalAveragePool", opset, {}, make_model([node], {"x": shape}, ["y"], opset=opset), {"x": rng.standard_normal(shape).astype(np.float32)}, rank)


def conv_case(rng: np.random.Generator) -> Case:
    rank = _pick(rng, [3, 4, 4, 5])
    n = rank - 2
    opset = _pick(rng, [11, 22])
    group = _pick(rng, [1, 1, 2, 3])
    cin, cout = group * int(rng.integers(1, 3)), group * int(rng.integers(1, 3))
    kernel = [int(rng.integers(1, 4)) for _ in range(n)]
    strides = [int(rng.integers(1, 4)) for _ in range(n)]
    auto_pad = _pick(rng, ["NOTSET", "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"])
    # onnxruntime rejects SAME with dilations (test_conv_same_with_dilations_matches_onnx_reference)
    dilations = [int(rng.integers(1, 3)) for _ in range(n)] if rng.random() < 0.4 and not auto_pad.startswith("SAME") else [1] * n
    attributes: dict[str, Any] = {}
    if group != 1:
        attributes["group"] = group
    if any(s != 1 for s in strides):
        attributes["strides"] = strides
    if any(d != 1 for d in dilations):
        attributes["dilations"] = dilations
    if rng.random() < 0.3:
        attributes["kernel_shape"] = kernel
    pads = [0] * (2 * n)
    if auto_pad == "NOTSET":
        pads = [int(rng.integers(0, 3)) for _ in range(2 * n)]
        if any(pads):
            attributes["pads"] = pads
    else:
        attributes["auto_pad"] = auto_pad
    keff = [(k - 1) * d + 1 for k, d in zip(kernel, dilations, strict=True)]
    sizes = [int(rng.integers(max(1, keff[i] - pads[i] - pads[i + n]), max(1, keff[i] - pads[i] - pads[i + n]) + 6)) if auto_pad != "VALID" else int(rng.integers(keff[i], keff[i] + 6)) for i in range(n)]
    shape = (int(rng.integers(1, 3)), cin, *sizes)
    w = rng.standard_normal((cout, cin // group, *kernel)).astype(np.float32)
    inits = {"w": w}
    ins = ["x", "w"]
    if rng.random() < 0.5:
        inits["b"] = rng.standard_normal(cout).astype(np.float32)
        ins.append("b")
    node = helper.make_node("Conv", ins, ["y"], **attributes)
    case = Case("Conv", opset, attributes, make_model([node], {"x": shape}, ["y"], initializers=inits, opset=opset), {"x": rng.standard_normal(shape).astype(np.float32)}, rank)
    case.notes.append(f"bias={'b' in inits}")
    return case


def conv_transpose_case(rng: np.random.Generator) -> Case:
    rank = _pick(rng, [3, 4, 4, 5])
    n = rank - 2
    opset = _pick(rng, [11, 22])
    group = _pick(rng, [1, 1, 2, 3])
    cin, cout_g = group * int(rng.integers(1, 3)), int(rng.integers(1, 3))
    kernel = [int(rng.integers(1, 4)) for _ in range(n)]
    strides = [int(rng.integers(1, 4)) for _ in range(n)]
    dilations = [int(rng.integers(1, 3)) for _ in range(n)] if rng.random() < 0.4 else [1] * n
    output_padding = [int(rng.integers(0, s)) for s in strides] if rng.random() < 0.4 else [0] * n
    sizes = [int(rng.integers(1, 5)) for _ in range(n)]
    keff = [(k - 1) * d + 1 for k, d in zip(kernel, dilations, strict=True)]
    full = [s * (i - 1) + op + e for i, s, op, e in zip(sizes, strides, output_padding, keff, strict=True)]
    attributes: dict[str, Any] = {}
    if group != 1:
        attributes["group"] = group
    if any(s != 1 for s in strides):
        attributes["strides"] = strides
    if any(d != 1 for d in dilations):
        attributes["dilations"] = dilations
    if any(output_padding):
        attributes["output_padding"] = output_padding
    style = _pick(rng, ["pads", "pads", "output_shape", "output_shape", "SAME_UPPER", "SAME_LOWER", "VALID"])
    if style == "pads":
        pads = []
        for i in range(n):
            pads.append(int(rng.integers(0, max(1, min(3, full[i] - 1)) + 1)))
        ends = [int(rng.integers(0, max(1, min(3, full[i] - pads[i] - 1)) + 1)) for i in range(n)]
        pads = [min(p, full[i] - 1) for i, p in enumerate(pads)]
        ends = [max(0, min(e, full[i] - pads[i] - 1)) for i, e in enumerate(ends)]
        if any(pads + ends):
            attributes["pads"] = pads + ends
    elif style == "output_shape":
        # within what DirectML computes: up to strides - 1 - output_padding past the full extent
        attributes["output_shape"] = [int(rng.integers(max(1, f - 4), f + (s - 1 - op) + 1)) for f, s, op in zip(full, strides, output_padding, strict=True)]
        if rng.random() < 0.3:
            attributes["auto_pad"] = _pick(rng, ["SAME_UPPER", "SAME_LOWER"])
    else:
        attributes["auto_pad"] = style
    shape = (int(rng.integers(1, 3)), cin, *sizes)
    w = rng.standard_normal((cin, cout_g, *kernel)).astype(np.float32)
    inits = {"w": w}
    ins = ["x", "w"]
    if rng.random() < 0.5:
        inits["b"] = rng.standard_normal(cout_g * group).astype(np.float32)
        ins.append("b")
    node = helper.make_node("ConvTranspose", ins, ["y"], **attributes)
    return Case("ConvTranspose", opset, attributes, make_model([node], {"x": shape}, ["y"], initializers=inits, opset=opset), {"x": rng.standard_normal(shape).astype(np.float32)}, rank)


def space_depth_case(rng: np.random.Generator) -> Case:
    to_depth = bool(rng.integers(0, 2))
    block = int(rng.integers(1, 4))
    n, c, h, w = int(rng.integers(1, 3)), int(rng.integers(1, 4)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
    attributes: dict[str, Any] = {"blocksize": block}
    if to_depth:
        op, opset, shape = "SpaceToDepth", _pick(rng, [1, 13]), (n, c, h * block, w * block)
    else:
        op, opset, shape = "DepthToSpace", _pick(rng, [1, 11, 13]), (n, c * block * block, h, w)
        if opset >= 11 and rng.random() < 0.7:
            attributes["mode"] = _pick(rng, ["DCR", "CRD"])
    node = helper.make_node(op, ["x"], ["y"], **attributes)
    opset = max(opset, 7)  # onnxruntime guarantees opset 7 and later; the operator version stays the same
    return Case(op, opset, attributes, make_model([node], {"x": shape}, ["y"], opset=opset), {"x": rng.standard_normal(shape).astype(np.float32)}, 4)


def activation_case(rng: np.random.Generator) -> Case:
    op = _pick(rng, ["Relu", "LeakyRelu", "Sigmoid"])
    rank = _pick(rng, [2, 3, 4, 5])
    shape = tuple(int(rng.integers(1, 5)) for _ in range(rank))
    attributes: dict[str, Any] = {}
    if op == "LeakyRelu" and rng.random() < 0.7:
        attributes["alpha"] = float(np.float32(rng.uniform(0.01, 0.5)))
    opset = _pick(rng, [7, 13, 16, 22])
    node = helper.make_node(op, ["x"], ["y"], **attributes)
    return Case(op, opset, attributes, make_model([node], {"x": shape}, ["y"], opset=opset), {"x": rng.standard_normal(shape).astype(np.float32)}, rank)


GENERATORS = [
    (average_pool_case, 6),
    (global_average_pool_case, 1),
    (conv_case, 3),
    (conv_transpose_case, 4),
    (space_depth_case, 2),
    (activation_case, 2),
]


def random_case(rng: np.random.Generator) -> Case:
    weights = np.array([w for _, w in GENERATORS], dtype=float)
    generator = GENERATORS[int(rng.choice(len(GENERATORS), p=weights / weights.sum()))][0]
    return generator(rng)
