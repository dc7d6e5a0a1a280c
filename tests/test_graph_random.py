"""Random graphs compute what their nodes compute one by one, on both backends; owned weights; the builder's operators.

The oracle is the one the issue names: the graph's own operator descs (``Operator.desc``, the
copies CreateOperator made), each dispatched alone with ``dmlpy.run`` in dependency order, the
bytes of every edge handed from producer to consumer exactly as the graph hands them (so an
edge that joins two different descs of the same byte size reinterprets the bytes, as
DML_GRAPH_DESC's remarks allow). Graph and oracle run on the same backend, so they agree to
rounding (fp32 rtol 1e-5, fp16 rtol 1e-3).

Each random graph is a *recipe* (pure data, seeded by its index) that is materialized either
through ``GraphBuilder`` (even indices; every output size inferred by the builder and checked
against this file's own formulas) or as a raw DML_GRAPH_DESC (odd indices; nodes in shuffled
order, shuffled edges, strided intermediates with explicit strides, edges that reinterpret
bytes). ``test_the_recipes_cover_what_the_issue_lists`` counts what the recipes contain.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from conftest import assert_rule

import dmlpy
from dmlpy import D3D12_RESOURCE_BARRIER
from dmlpy import (
    DML_AVERAGE_POOLING1_OPERATOR_DESC,
    DML_AVERAGE_POOLING_OPERATOR_DESC,
    DML_BUFFER_TENSOR_DESC,
    DML_CONVOLUTION_DIRECTION,
    DML_CONVOLUTION_MODE,
    DML_CONVOLUTION_OPERATOR_DESC,
    DML_DEPTH_SPACE_ORDER,
    DML_DEPTH_TO_SPACE1_OPERATOR_DESC,
    DML_DEPTH_TO_SPACE_OPERATOR_DESC,
    DML_FEATURE_LEVEL,
    DML_GRAPH_NODE_TYPE,
    DML_SPACE_TO_DEPTH1_OPERATOR_DESC,
    DML_SPACE_TO_DEPTH_OPERATOR_DESC,
    DML_TENSOR_DESC,
    DML_TENSOR_FLAGS,
    Buffer,
    DmlError,
    FusedActivation,
    buffer_tensor,
    constant_node,
    graph_desc,
    input_edge,
    intermediate_edge,
    operator_node,
    output_edge,
)
from dmlpy.operators import activation as act

pytestmark = pytest.mark.filterwarnings("ignore::dmlpy.DmlWarning")  # ceil-shaped pools warn by design

SEED = 0x6A_2026
GRAPHS = 120
FL = DML_FEATURE_LEVEL
DCR, CRD = DML_DEPTH_SPACE_ORDER.DEPTH_COLUMN_ROW, DML_DEPTH_SPACE_ORDER.COLUMN_ROW_DEPTH

# name -> (desc class, parameter ranges: builder argument -> (low, high), lowest feature level)
ACTIVATIONS: dict[str, tuple[type, dict[str, tuple[float, float]], DML_FEATURE_LEVEL]] = {
    "relu": (act.DML_ACTIVATION_RELU_OPERATOR_DESC, {}, FL.LEVEL_1_0),
    "leaky_relu": (act.DML_ACTIVATION_LEAKY_RELU_OPERATOR_DESC, {"alpha": (0.0, 0.5)}, FL.LEVEL_1_0),
    "sigmoid": (act.DML_ACTIVATION_SIGMOID_OPERATOR_DESC, {}, FL.LEVEL_1_0),
    "tanh": (act.DML_ACTIVATION_TANH_OPERATOR_DESC, {}, FL.LEVEL_1_0),
    "elu": (act.DML_ACTIVATION_ELU_OPERATOR_DESC, {"alpha": (0.1, 2.0)}, FL.LEVEL_1_0),
    "hard_sigmoid": (act.DML_ACTIVATION_HARD_SIGMOID_OPERATOR_DESC, {"alpha": (0.1, 0.5), "beta": (0.0, 1.0)}, FL.LEVEL_1_0),
    "softplus": (act.DML_ACTIVATION_SOFTPLUS_OPERATOR_DESC, {"steepness": (1.0, 3.0)}, FL.LEVEL_1_0),
    "gelu": (act.DML_ACTIVATION_GELU_OPERATOR_DESC, {}, FL.LEVEL_5_1),
    "linear": (act.DML_ACTIVATION_LINEAR_OPERATOR_DESC, {"alpha": (-2.0, 2.0), "beta": (-1.0, 1.0)}, FL.LEVEL_1_0),
    "identity": (act.DML_ACTIVATION_IDENTITY_OPERATOR_DESC, {}, FL.LEVEL_1_0),
}


# ---------------------------------------------------------------------------------------
# Recipes: what a random graph is, independent of how it is built


@dataclass(frozen=True)
class Src:
    kind: str  # "input" (graph input), "node" (a node's output) or "constant"
    index: int


@dataclass
class InputSpec:
    name: str
    sizes: tuple[int, ...]
    strides: tuple[int, ...] | None = None
    owned: bool = False
    used: bool = True
    scale: float = 1.0


@dataclass
class NodeSpec:
    kind: str  # pool, conv, conv_transpose, activation, space_to_depth, depth_to_space
    params: dict[str, Any]
    x: Src
    out_sizes: tuple[int, ...]
    filter: Src | None = None
    bias: Src | None = None
    out_layout: str = "packed"  # raw graphs: packed, explicit, nhwc, padded
    x_read: Any = "same"  # raw graphs: "same", "packed" (same sizes, packed layout) or ("reshape", sizes)


@dataclass
class Recipe:
    index: int
    via: str  # "builder" or "raw"
    shape: str  # "chain" or "dag"
    dtype: Any
    feature_level: DML_FEATURE_LEVEL
    policy: str = "nchw"
    inputs: list[InputSpec] = field(default_factory=list)
    constants: list[np.ndarray] = field(default_factory=list)
    nodes: list[NodeSpec] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)  # node index per graph output (a node may repeat)
    order: list[int] = field(default_factory=list)  # raw graphs: DML node index of each recipe node


def _padded_strides(rng: np.random.Generator, sizes: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides with gaps: H and/or W rows longer than the tensor (the gaps are never written)."""
    grown = [s + (int(rng.integers(1, 3)) if axis >= 2 and rng.random() < 0.7 else 0) for axis, s in enumerate(sizes)]
    if grown == list(sizes):
        grown[-1] += 1
    return dmlpy.packed_strides(grown)


def _gapless(recipe: Recipe, src: Src) -> bool:
    if src.kind == "input":
        spec = recipe.inputs[src.index]
        return spec.strides is None or tuple(spec.strides) == dmlpy.nhwc_strides(spec.sizes)
    if src.kind == "constant":
        return True
    return recipe.via == "builder" or recipe.nodes[src.index].out_layout != "padded"


def _sizes_of(recipe: Recipe, src: Src) -> tuple[int, ...]:
    if src.kind == "input":
        return recipe.inputs[src.index].sizes
    if src.kind == "constant":
        return tuple(recipe.constants[src.index].shape)
    return recipe.nodes[src.index].out_sizes


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _pool(rng: np.random.Generator, recipe: Recipe, x: tuple[int, ...]) -> tuple[dict[str, Any], tuple[int, ...]] | None:
    n, c, *spatial = x
    dilated = recipe.feature_level >= FL.LEVEL_6_2 and rng.random() < 0.3
    window = [int(rng.integers(1, 4)) for _ in spatial]
    dilations = [int(rng.integers(1, 3)) if dilated else 1 for _ in spatial]
    strides = [int(rng.integers(1, 3)) for _ in spatial]
    start = [0 if dilated else int(rng.integers(0, min(1, w - 1) + 1)) for w in window]  # no window wholly in padding
    end = [0 if dilated else int(rng.integers(0, min(1, w - 1) + 1)) for w in window]
    out, ceil = [], rng.random() < 0.25
    for size, w, d, s, sp, ep in zip(spatial, window, dilations, strides, start, end, strict=True):
        keff = (w - 1) * d + 1
        if keff > size + sp + ep:
            return None
        floor_size = (size + sp + ep - keff) // s + 1  # DML_AVERAGE_POOLING_OPERATOR_DESC remarks
        ceil_ok = ceil and (size + sp + ep - keff) % s != 0 and floor_size * s < size + sp  # docs/deviations.md
        out.append(floor_size + (1 if ceil_ok else 0))
    params = {"window": window, "strides": strides, "start": start, "end": end, "dilations": dilations,
              "include_padding": bool(rng.integers(0, 2)), "ceil": tuple(out) != tuple(pooled(x, window, strides, start, end, dilations)),
              "v1": dilated or (recipe.feature_level >= FL.LEVEL_6_2 and rng.random() < 0.3)}  # fmt: skip
    return params, (n, c, *out)


def pooled(x: tuple[int, ...], window: list[int], strides: list[int], start: list[int], end: list[int], dilations: list[int]) -> tuple[int, ...]:
    return tuple((size + sp + ep - ((w - 1) * d + 1)) // s + 1 for size, w, s, sp, ep, d in zip(x[2:], window, strides, start, end, dilations, strict=True))


def _fused(rng: np.random.Generator, recipe: Recipe) -> tuple[str, dict[str, float]] | None:
    if rng.random() < 0.4:
        return None
    name = _activation_name(rng, recipe)
    return name, _activation_params(rng, name)


def _activation_name(rng: np.random.Generator, recipe: Recipe) -> str:
    names = [name for name, (_, _, level) in ACTIVATIONS.items() if recipe.feature_level >= level]
    return names[int(rng.integers(0, len(names)))]


def _activation_params(rng: np.random.Generator, name: str) -> dict[str, float]:
    return {arg: round(float(rng.uniform(lo, hi)), 3) for arg, (lo, hi) in ACTIVATIONS[name][1].items()}


def _conv(rng: np.random.Generator, recipe: Recipe, x: tuple[int, ...], *, backward: bool) -> tuple[dict[str, Any], tuple[int, ...], tuple[int, ...]] | None:
    n, c, *spatial = x
    groups = int(rng.choice(_divisors(c))) if rng.random() < 0.4 else 1
    per_group = int(rng.integers(1, 4))
    cout = groups * per_group
    if cout > 12:
        return None
    strides = [int(rng.integers(1, 3)) for _ in spatial]
    if backward:
        kernel = [int(rng.integers(1, 5)) for _ in spatial]
        dilations = [int(rng.integers(1, 3)) if rng.random() < 0.15 else 1 for _ in spatial]
    else:
        kernel = [int(rng.integers(1, 4)) for _ in spatial]
        dilations = [int(rng.integers(1, 3)) if rng.random() < 0.3 else 1 for _ in spatial]
    start = [int(rng.integers(0, min(1, k - 1) + 1)) for k in kernel]
    end = [int(rng.integers(0, min(1, k - 1) + 1)) for k in kernel]
    extra = [int(rng.integers(0, s)) if backward else 0 for s in strides]  # ONNX output_padding: below the stride
    out = []
    for size, k, s, d, sp, ep, op in zip(spatial, kernel, strides, dilations, start, end, extra, strict=True):
        keff = (k - 1) * d + 1
        if backward:
            size_out = (size - 1) * s + keff - sp - ep + op  # the DML_CONVOLUTION_OPERATOR_DESC page; ONNX ConvTranspose
        else:
            if keff > size + sp + ep:
                return None
            size_out = (size + sp + ep - keff) // s + 1  # DML_CONVOLUTION_OPERATOR_DESC remarks
        if not 1 <= size_out <= 16:
            return None
        out.append(size_out)
    filter_sizes = (c, per_group, *kernel) if backward else (cout, c // groups, *kernel)
    params = {"strides": strides, "dilations": dilations, "start": start, "end": end, "output_padding": extra, "groups": groups,
              "mode": DML_CONVOLUTION_MODE(int(rng.integers(0, 2))), "activation": _fused(rng, recipe),
              "bias": None if rng.random() < 0.4 else ("1d" if rng.random() < 0.4 else "4d")}  # fmt: skip
    return params, (n, cout, *out), filter_sizes


def _space_depth(rng: np.random.Generator, recipe: Recipe, x: tuple[int, ...], *, to_depth: bool) -> tuple[dict[str, Any], tuple[int, ...]] | None:
    n, c, h, w = x
    if to_depth:
        blocks = [b for b in (2, 3) if h % b == 0 and w % b == 0] or [1]
    else:
        blocks = [b for b in (2, 3) if c % (b * b) == 0 and h * b <= 16 and w * b <= 16] or [1]
    if blocks == [1] and rng.random() < 0.7:
        return None  # BlockSize 1 (the identity) now and then, not whenever nothing else fits
    b = blocks[int(rng.integers(0, len(blocks)))]
    order = DML_DEPTH_SPACE_ORDER(int(rng.integers(0, 2)))
    out = (n, c * b * b, h // b, w // b) if to_depth else (n, c // (b * b), h * b, w * b)  # the space-to-depth and depth-to-space pages
    if out[1] > 32:
        return None
    return {"block_size": b, "order": order, "plain": order == DCR and rng.random() < 0.5}, out


def make_recipe(index: int) -> Recipe:  # noqa: C901, PLR0912, PLR0915 - one random choice per line
    rng = np.random.default_rng([SEED, index])
    levels = [FL.LEVEL_6_4, FL.LEVEL_6_4, FL.LEVEL_6_4, FL.LEVEL_6_2, FL.LEVEL_5_0, FL.LEVEL_2_1]
    recipe = Recipe(
        index, "builder" if index % 2 == 0 else "raw", "chain" if rng.random() < 0.4 else "dag",
        np.float16 if rng.random() < 0.2 else np.float32, levels[int(rng.integers(0, len(levels)))],
    )  # fmt: skip
    recipe.policy = "nhwc" if rng.random() < 0.4 else "nchw"
    constants_ok = recipe.feature_level >= FL.LEVEL_6_2

    def new_input(sizes: tuple[int, ...], *, owned: bool = False, layout_choice: bool = True, scale: float = 1.0) -> Src:
        strides = None
        if layout_choice and len(sizes) == 4:
            pick = rng.random()
            strides = dmlpy.nhwc_strides(sizes) if pick < 0.2 else (_padded_strides(rng, sizes) if pick < 0.3 else None)
        recipe.inputs.append(InputSpec(f"in{len(recipe.inputs)}", tuple(sizes), strides, owned, True, scale))
        return Src("input", len(recipe.inputs) - 1)

    def new_weights(sizes: tuple[int, ...], fan_in: int, *, room: int) -> Src:
        scale = 1 / math.sqrt(max(1, fan_in))
        kinds = ["input", "owned"] + (["constant"] * 2 if constants_ok else []) + (["node"] if room >= 2 else [])
        kind = kinds[int(rng.integers(0, len(kinds)))]
        if kind == "constant":
            recipe.constants.append((rng.standard_normal(sizes) * scale).astype(recipe.dtype))
            return Src("constant", len(recipe.constants) - 1)
        if kind == "node":  # the weights are themselves computed: an activation of a graph input
            name = _activation_name(rng, recipe)
            source = new_input(sizes, layout_choice=False, scale=scale)
            recipe.nodes.append(NodeSpec("activation", {"name": name, **_activation_params(rng, name)}, source, tuple(sizes), out_layout=_layout(rng)))
            return Src("node", len(recipe.nodes) - 1)
        return new_input(sizes, owned=kind == "owned", layout_choice=False, scale=scale)

    first = (int(rng.integers(1, 3)), int(rng.integers(1, 9)), int(rng.integers(2, 11)), int(rng.integers(2, 11)))
    if constants_ok and rng.random() < 0.1:
        recipe.constants.append(rng.standard_normal(first).astype(recipe.dtype))
        values = [Src("constant", 0)]
    else:
        values = [new_input(first)]
    target = int(rng.integers(2, 9))
    while len(recipe.nodes) < target:
        room = target - len(recipe.nodes)
        if recipe.shape == "chain":
            x_src = values[-1]
        else:
            x_src = values[int(rng.integers(0, len(values)))] if rng.random() < 0.5 else values[-1]
        x_sizes = _sizes_of(recipe, x_src)
        kinds = ["pool", "conv", "conv_transpose", "activation", "space_to_depth", "depth_to_space"]
        rng.shuffle(kinds)
        for kind in [*kinds, "activation"]:
            x_read: Any = "same"
            sizes = x_sizes
            if recipe.via == "raw" and _gapless(recipe, x_src) and rng.random() < 0.25:
                if kind == "activation" and rng.random() < 0.5:
                    sizes = tuple(int(s) for s in rng.permutation(x_sizes))
                    x_read = ("reshape", sizes)
                else:
                    x_read = "packed"
            spec: NodeSpec | None = None
            if kind == "pool":
                made = _pool(rng, recipe, sizes)
                spec = None if made is None else NodeSpec(kind, made[0], x_src, made[1])
            elif kind in ("conv", "conv_transpose"):
                conv = _conv(rng, recipe, sizes, backward=kind == "conv_transpose")
                if conv is not None:
                    params, out, filter_sizes = conv
                    fan_in = filter_sizes[0] * math.prod(filter_sizes[2:]) if kind == "conv_transpose" else math.prod(filter_sizes[1:])
                    weights = new_weights(filter_sizes, fan_in, room=room)
                    spec = NodeSpec(kind, params, x_src, out, filter=weights)
                    if params["bias"] is not None:
                        bias_sizes = (out[1],) if params["bias"] == "1d" else (1, out[1], 1, 1)
                        if constants_ok and rng.random() < 0.5:
                            recipe.constants.append(rng.standard_normal(bias_sizes).astype(recipe.dtype))
                            spec.bias = Src("constant", len(recipe.constants) - 1)
                        else:
                            spec.bias = new_input(bias_sizes, layout_choice=False)
            elif kind == "activation":
                name = _activation_name(rng, recipe)
                spec = NodeSpec(kind, {"name": name, **_activation_params(rng, name)}, x_src, sizes)
            else:
                made = _space_depth(rng, recipe, sizes, to_depth=kind == "space_to_depth")
                spec = None if made is None else NodeSpec(kind, made[0], x_src, made[1])
            if spec is not None:
                spec.x_read = x_read
                spec.out_layout = _layout(rng)
                recipe.nodes.append(spec)
                values.append(Src("node", len(recipe.nodes) - 1))
                break
        if recipe.shape == "dag" and rng.random() < 0.15:  # a second graph input, read by later nodes (shared when two do)
            values.append(new_input(x_sizes))
    if rng.random() < 0.3:  # a graph input no edge reads: it still takes a binding slot
        recipe.inputs.append(InputSpec(f"in{len(recipe.inputs)}", (1, 2, 2, 2), None, used=False))
    consumed = {s.index for spec in recipe.nodes for s in (spec.x, spec.filter, spec.bias) if s is not None and s.kind == "node"}
    recipe.outputs = [i for i in range(len(recipe.nodes)) if i not in consumed]
    if consumed and rng.random() < 0.3:  # a node output read by a node and also a graph output
        recipe.outputs.append(sorted(consumed)[int(rng.integers(0, len(consumed)))])
    if rng.random() < 0.15:  # one node output written to two graph outputs
        recipe.outputs.append(recipe.outputs[0])
    rng.shuffle(recipe.outputs)
    recipe.order = [int(i) for i in rng.permutation(len(recipe.nodes))]
    return recipe


def _layout(rng: np.random.Generator) -> str:
    return ["packed", "packed", "explicit", "nhwc", "padded"][int(rng.integers(0, 5))]


def features(recipe: Recipe) -> set[str]:
    """What a recipe exercises, for the coverage test."""
    found = {recipe.via, recipe.shape, np.dtype(recipe.dtype).name, f"{len(recipe.nodes)} nodes"}
    reads: dict[Src, int] = {}
    for spec in recipe.nodes:
        found.add(spec.kind)
        for src in (spec.x, spec.filter, spec.bias):
            if src is not None:
                reads[src] = reads.get(src, 0) + 1
                found.add(f"reads a {src.kind}")
        if spec.kind in ("conv", "conv_transpose"):
            if spec.params["bias"]:
                found.add(f"{spec.kind} with bias")
            if spec.params["activation"]:
                found.add(f"{spec.kind} with fused activation")
            if spec.filter is not None and spec.filter.kind == "input" and recipe.inputs[spec.filter.index].owned:
                found.add("OWNED_BY_DML filter")
        if recipe.via == "raw" and spec.x_read != "same":
            found.add("reinterpreting edge")
    if recipe.via == "raw":
        found.update(f"{recipe.nodes[src.index].out_layout} intermediate" for src in reads if src.kind == "node")
    if recipe.via == "builder" and recipe.policy == "nhwc":
        found.add("nhwc intermediate")
    if any(count > 1 for src, count in reads.items() if src.kind == "input"):
        found.add("shared graph input")
    if any(not spec.used for spec in recipe.inputs):
        found.add("unused graph input")
    if recipe.constants:
        found.add("constant")
    if len(set(recipe.outputs)) < len(recipe.outputs):
        found.add("one output to two graph outputs")
    return found


# ---------------------------------------------------------------------------------------
# Materializing a recipe


def input_array(recipe: Recipe, spec: InputSpec) -> np.ndarray:
    rng = np.random.default_rng([SEED, recipe.index, 1, len(spec.name), *map(ord, spec.name)])
    return (rng.standard_normal(spec.sizes) * spec.scale).astype(recipe.dtype)


def input_desc(recipe: Recipe, spec: InputSpec) -> DML_BUFFER_TENSOR_DESC:
    flags = DML_TENSOR_FLAGS.OWNED_BY_DML if spec.owned else DML_TENSOR_FLAGS.NONE
    return buffer_tensor(recipe.dtype, spec.sizes, spec.strides, flags).Desc


def tensor_bytes(desc: DML_BUFFER_TENSOR_DESC, array: np.ndarray) -> np.ndarray:
    """The bytes a tensor of ``desc`` holds for the logical ``array`` (gaps zero)."""
    buffer = Buffer(desc.TotalTensorSizeInBytes)
    buffer.view(desc, writeable=True)[...] = array
    return buffer.data.copy()


def build_raw(device: dmlpy.Device, recipe: Recipe) -> tuple[dmlpy.DML_GRAPH_DESC, list[np.ndarray]]:  # noqa: C901 - one branch per operator kind
    rng = np.random.default_rng([SEED, recipe.index, 2])
    dtype = recipe.dtype
    inputs = [input_desc(recipe, spec) for spec in recipe.inputs]
    constants = [buffer_tensor(dtype, c.shape).Desc for c in recipe.constants]
    outputs: list[DML_BUFFER_TENSOR_DESC] = []

    def produced(src: Src) -> DML_BUFFER_TENSOR_DESC:
        return {"input": inputs, "constant": constants, "node": outputs}[src.kind][src.index]

    def read(src: Src, how: Any = "same") -> DML_TENSOR_DESC:
        source = produced(src)
        if how == "same":
            return DML_TENSOR_DESC(Desc=copy.deepcopy(source))
        sizes = tuple(source.Sizes) if how == "packed" else how[1]
        return buffer_tensor(dtype, sizes)  # the same bytes read as a packed tensor of these sizes

    nodes_by_recipe = []
    for spec in recipe.nodes:
        layout = {"packed": None, "explicit": dmlpy.packed_strides(spec.out_sizes), "nhwc": dmlpy.nhwc_strides(spec.out_sizes)}.get(spec.out_layout, "padded")
        strides = _padded_strides(rng, spec.out_sizes) if layout == "padded" else layout
        y = buffer_tensor(dtype, spec.out_sizes, strides)
        outputs.append(y.Desc)
        x, p = read(spec.x, spec.x_read), spec.params
        if spec.kind == "pool":
            common = dict(InputTensor=x, OutputTensor=y, DimensionCount=2, Strides=p["strides"], WindowSize=p["window"], StartPadding=p["start"],
                          EndPadding=p["end"], IncludePadding=p["include_padding"])  # fmt: skip
            desc: Any = DML_AVERAGE_POOLING1_OPERATOR_DESC(**common, Dilations=p["dilations"]) if p["v1"] else DML_AVERAGE_POOLING_OPERATOR_DESC(**common)
        elif spec.kind in ("conv", "conv_transpose"):
            assert spec.filter is not None
            bias = None
            if spec.bias is not None:  # a 1-D {C} source is read as {1, C, 1, 1}: same bytes
                bias = read(spec.bias, "same" if len(produced(spec.bias).Sizes) == 4 else ("reshape", (1, spec.out_sizes[1], 1, 1)))
            fused = None
            if p["activation"] is not None:
                name, params = p["activation"]
                fused = getattr(FusedActivation, name)(**params)
            desc = DML_CONVOLUTION_OPERATOR_DESC(
                x, read(spec.filter), bias, y, p["mode"], DML_CONVOLUTION_DIRECTION.BACKWARD if spec.kind == "conv_transpose" else DML_CONVOLUTION_DIRECTION.FORWARD,
                2, p["strides"], p["dilations"], p["start"], p["end"], (0, 0), p["groups"], fused,
            )  # fmt: skip
        elif spec.kind == "activation":
            cls, ranges, _ = ACTIVATIONS[p["name"]]
            desc = cls(x, y, **{arg.capitalize(): p[arg] for arg in ranges})
        else:
            to_depth = spec.kind == "space_to_depth"
            if p["plain"]:
                desc = (DML_SPACE_TO_DEPTH_OPERATOR_DESC if to_depth else DML_DEPTH_TO_SPACE_OPERATOR_DESC)(x, y, p["block_size"])
            else:
                desc = (DML_SPACE_TO_DEPTH1_OPERATOR_DESC if to_depth else DML_DEPTH_TO_SPACE1_OPERATOR_DESC)(x, y, p["block_size"], p["order"])
        nodes_by_recipe.append(device.create_operator(desc))

    # DML node indices: the recipe's nodes in shuffled order, constants after them
    count = len(recipe.nodes)
    position = {("node", i): recipe.order[i] for i in range(count)}
    position.update({("constant", j): count + j for j in range(len(recipe.constants))})
    nodes: list[Any] = [None] * (count + len(recipe.constants))
    for i, op in enumerate(nodes_by_recipe):
        nodes[recipe.order[i]] = operator_node(op, f"{recipe.nodes[i].kind}{i}" if rng.random() < 0.5 else None)
    for j, array in enumerate(recipe.constants):
        nodes[count + j] = constant_node(tensor_bytes(constants[j], array), f"constant{j}")
    in_edges, mid_edges, out_edges = [], [], []
    for i, spec in enumerate(recipe.nodes):
        slots = [s.name for s in nodes_by_recipe[i].spec.support.inputs]
        for slot_name, src in (("InputTensor", spec.x), ("FilterTensor", spec.filter), ("BiasTensor", spec.bias)):
            if src is None:
                continue
            to, slot = recipe.order[i], slots.index(slot_name)
            if src.kind == "input":
                in_edges.append(input_edge(src.index, to, slot))
            else:
                mid_edges.append(intermediate_edge(position[(src.kind, src.index)], 0, to, slot, f"{src.kind}{src.index}->{i}"))
    for g, i in enumerate(recipe.outputs):
        out_edges.append(output_edge(recipe.order[i], 0, g, f"y{g}"))
    for edges in (in_edges, mid_edges, out_edges):
        rng.shuffle(edges)
    desc = graph_desc(len(recipe.inputs), len(recipe.outputs), nodes, in_edges, out_edges, mid_edges)
    raw_inputs = [tensor_bytes(d, input_array(recipe, s)) for d, s in zip(inputs, recipe.inputs, strict=True)]
    return desc, raw_inputs


def build_with_builder(device: dmlpy.Device, recipe: Recipe) -> tuple[dmlpy.GraphProgram, dict[str, np.ndarray]]:
    g = dmlpy.GraphBuilder(device, policy=recipe.policy)
    inputs = [g.input(s.name, recipe.dtype, s.sizes, s.strides, owned=s.owned) for s in recipe.inputs]
    constants = [g.constant(c, f"constant{j}") for j, c in enumerate(recipe.constants)]
    made: list[dmlpy.builder.Tensor] = []

    def value(src: Src | None) -> Any:
        return None if src is None else {"input": inputs, "constant": constants, "node": made}[src.kind][src.index]

    for spec in recipe.nodes:
        x, p = value(spec.x), spec.params
        if spec.kind == "pool":
            y = g.average_pooling(x, p["window"], p["strides"], p["start"], p["end"], p["dilations"] if p["v1"] else None,
                                  include_padding=p["include_padding"], output_sizes=spec.out_sizes if p["ceil"] else None)  # fmt: skip
        elif spec.kind in ("conv", "conv_transpose"):
            activation = None if p["activation"] is None else getattr(FusedActivation, p["activation"][0])(**p["activation"][1])
            common = dict(strides=p["strides"], dilations=p["dilations"], start_padding=p["start"], end_padding=p["end"], groups=p["groups"],
                          mode=p["mode"], activation=activation)  # fmt: skip
            if spec.kind == "conv":
                y = g.convolution(x, value(spec.filter), value(spec.bias), **common)
            else:
                y = g.conv_transpose(x, value(spec.filter), value(spec.bias), output_padding=p["output_padding"], **common)
        elif spec.kind == "activation":
            y = getattr(g, p["name"])(x, **{k: v for k, v in p.items() if k != "name"})
        else:
            y = getattr(g, spec.kind)(x, p["block_size"], p["order"])
        assert y.sizes == spec.out_sizes, f"the builder inferred {y.sizes} for {spec.kind}, this file's formula gives {spec.out_sizes}"
        made.append(y)
    program = g.compile({f"y{k}": made[i] for k, i in enumerate(recipe.outputs)})
    return program, {s.name: input_array(recipe, s) for s in recipe.inputs}


# ---------------------------------------------------------------------------------------
# Running: the compiled graph, and the oracle


def execute_graph(device: dmlpy.Device, compiled: Any, inputs: list[np.ndarray], rng: np.random.Generator) -> list[np.ndarray]:
    """Initialize (owned inputs), bind and execute a compiled graph; the raw bytes of every graph output."""
    props = compiled.get_binding_properties()
    slots = compiled.input_slots()
    buffers = [Buffer.from_array(raw) for raw in inputs]
    persistent = Buffer(props.PersistentResourceSize) if props.PersistentResourceSize else None
    temporary = Buffer(props.TemporaryResourceSize) if props.TemporaryResourceSize else None
    recorder, command_list = device.create_command_recorder(), device.create_command_list()
    initializer = device.create_operator_initializer([compiled])
    table = device.create_binding_table(initializer)
    table.bind_inputs([dmlpy.array_binding([dmlpy.buffer_binding(b).Desc if s.owned else None for s, b in zip(slots, buffers, strict=True)])])
    table.bind_outputs([dmlpy.buffer_binding(persistent)])
    recorder.record_dispatch(command_list, initializer, table)
    command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav()])  # the dispatch after the initializer reads what it wrote
    outs = [Buffer(s.tensor.TotalTensorSizeInBytes) for s in compiled.output_slots()]
    table.reset(dmlpy.DML_BINDING_TABLE_DESC(compiled, 0, 0, props.RequiredDescriptorCount))
    bindings = []
    for s, b in zip(slots, buffers, strict=True):
        unused_none = s.ignored and rng.random() < 0.5  # an unused input accepts NONE or any buffer
        bindings.append(dmlpy.DML_BINDING_DESC() if s.owned or unused_none else dmlpy.buffer_binding(b))
    table.bind_inputs(bindings)
    table.bind_outputs([dmlpy.buffer_binding(b) for b in outs])
    table.bind_temporary_resource(dmlpy.buffer_binding(temporary))
    table.bind_persistent_resource(dmlpy.buffer_binding(persistent))
    recorder.record_dispatch(command_list, compiled, table)
    command_list.close()
    device.execute(command_list)
    return [b.data.copy() for b in outs]


def one_by_one(device: dmlpy.Device, desc: dmlpy.DML_GRAPH_DESC, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Dispatch every operator node alone (``dmlpy.run`` on its Operator.desc), handing edge bytes along; the bytes of every graph output."""
    feeds: dict[tuple[int, int], tuple[str, Any]] = {}
    for e in (edge.Desc for edge in desc.InputEdges or ()):
        feeds[(e.ToNodeIndex, e.ToNodeInputIndex)] = ("input", e.GraphInputIndex)
    for e in (edge.Desc for edge in desc.IntermediateEdges or ()):
        feeds[(e.ToNodeIndex, e.ToNodeInputIndex)] = ("node", (e.FromNodeIndex, e.FromNodeOutputIndex))
    produced: dict[tuple[int, int], np.ndarray] = {}
    pending = []
    for i, node in enumerate(desc.Nodes):
        if node.Type == DML_GRAPH_NODE_TYPE.CONSTANT:
            produced[(i, 0)] = np.frombuffer(bytes(node.Desc.Data), np.uint8)[: node.Desc.DataSize]
        else:
            pending.append(i)

    def source_bytes(kind: str, value: Any) -> np.ndarray | None:
        return inputs[value] if kind == "input" else produced.get(value)

    while pending:
        ready = [i for i in pending if all(source_bytes(*source) is not None for (node, _), source in feeds.items() if node == i)]
        assert ready, "the oracle found no runnable node: the recipe has a cycle"
        for i in ready:
            op = desc.Nodes[i].Desc.Operator
            arrays = {}
            for k, slot in enumerate(op.spec.support.inputs):
                if (i, k) in feeds:
                    raw = source_bytes(*feeds[(i, k)])
                    tensor = op.tensor(slot.name)
                    holder = Buffer(max(raw.size, tensor.TotalTensorSizeInBytes))
                    holder.data[: raw.size] = raw
                    arrays[slot.name] = holder.read(tensor)
            result = dmlpy.run(op.desc, device=device, **arrays)
            results = result if isinstance(result, tuple) else (result,)
            out_slots = [s for s in op.spec.support.outputs if op.tensor(s.name) is not None]
            for k, (slot, array) in enumerate(zip(out_slots, results, strict=True)):
                produced[(i, k)] = tensor_bytes(op.tensor(slot.name), array)
            pending.remove(i)
    return [produced[(e.Desc.FromNodeIndex, e.Desc.FromNodeOutputIndex)] for e in sorted(desc.OutputEdges, key=lambda edge: edge.Desc.GraphOutputIndex)]


def assert_same(got: np.ndarray, expected: np.ndarray, dtype: Any, what: str) -> None:
    tight = np.dtype(dtype) == np.float32
    np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=1e-5 if tight else 1e-3, atol=1e-6 if tight else 1e-3,
                               equal_nan=True, err_msg=what)  # fmt: skip


# ---------------------------------------------------------------------------------------
# The random graphs


@pytest.mark.parametrize("index", range(GRAPHS))
def test_a_random_graph_computes_what_its_nodes_compute_one_by_one(backend: str, index: int) -> None:
    recipe = make_recipe(index)
    device = dmlpy.create_device(recipe.feature_level, backend=backend)
    if recipe.via == "raw":
        desc, raw_inputs = build_raw(device, recipe)
        compiled = device.compile_graph(desc)
        got = execute_graph(device, compiled, raw_inputs, np.random.default_rng(index))
        slots = compiled.output_slots()
        logical = [Buffer.from_array(raw).read(slot.tensor) for raw, slot in zip(got, slots, strict=True)]
    else:
        program, arrays = build_with_builder(device, recipe)
        desc, compiled, slots = program.graph_desc, program.compiled, program.compiled.output_slots()
        raw_inputs = [tensor_bytes(d, arrays[name]) for name, d in program._inputs]  # noqa: SLF001 - the input descs the program binds
        result = program(**arrays)
        logical = [result[name] for name in program.output_names]
    expected = one_by_one(device, desc, raw_inputs)
    assert len(logical) == len(expected) == len(recipe.outputs)
    for g, (value, raw, slot) in enumerate(zip(logical, expected, slots, strict=True)):
        assert_same(value, Buffer.from_array(raw).read(slot.tensor), recipe.dtype, f"graph output {g} of recipe {index} ({sorted(features(recipe))})")


def test_the_recipes_cover_what_the_issue_lists() -> None:
    """At least 100 graphs; chains and DAGs of 2 to 8 nodes; every operator family; the graph features named in the issue."""
    assert GRAPHS >= 100
    seen: dict[str, int] = {}
    for index in range(GRAPHS):
        for feature in features(make_recipe(index)):
            seen[feature] = seen.get(feature, 0) + 1
    wanted = [
        "builder", "raw", "chain", "dag", "float32", "float16", "pool", "conv", "conv_transpose", "activation", "space_to_depth", "depth_to_space",
        "conv with bias", "conv_transpose with bias", "conv with fused activation", "conv_transpose with fused activation", "OWNED_BY_DML filter",
        "shared graph input", "unused graph input", "constant", "reads a constant", "nhwc intermediate", "padded intermediate", "explicit intermediate",
        "reinterpreting edge", "one output to two graph outputs", "2 nodes", "8 nodes",
    ]  # fmt: skip
    missing = [w for w in wanted if seen.get(w, 0) < 2]
    assert not missing, f"the recipes never (or only once) contain {missing}; seen {sorted(seen.items())}"
    assert all(2 <= len(make_recipe(i).nodes) <= 8 for i in range(GRAPHS))


def test_graph_and_one_by_one_agree_across_backends() -> None:
    """A spot check that the oracle is not backend-specific: native graph vs NumPy one-by-one, on a few recipes."""
    if not dmlpy.native_available():
        pytest.skip(dmlpy.native_status())
    for index in (1, 3, 5, 7):
        recipe = make_recipe(index)
        native = dmlpy.create_device(recipe.feature_level, backend="native")
        desc, raw_inputs = build_raw(native, recipe)
        compiled = native.compile_graph(desc)
        got = execute_graph(native, compiled, raw_inputs, np.random.default_rng(index))
        expected = one_by_one(dmlpy.create_device(recipe.feature_level, backend="numpy"), desc, raw_inputs)
        for raw, want, slot in zip(got, expected, compiled.output_slots(), strict=True):
            a, b = Buffer.from_array(raw).read(slot.tensor), Buffer.from_array(want).read(slot.tensor)
            np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=2e-3, atol=2e-3, equal_nan=True)


# ---------------------------------------------------------------------------------------
# OWNED_BY_DML weights in a graph


def owned_filter_graph(device: dmlpy.Device) -> tuple[dmlpy.GraphProgram, Any]:
    """x {1, 3, 6, 6} -> convolution with an OWNED_BY_DML 3x3 filter {4, 3, 3, 3}, padding 1, fused ReLU -> average pooling 2x2."""
    g = dmlpy.GraphBuilder(device)
    x = g.input("x", np.float32, (1, 3, 6, 6))
    w = g.input("w", np.float32, (4, 3, 3, 3), owned=True)
    y = g.convolution(x, w, start_padding=1, end_padding=1, activation=FusedActivation.relu())
    z = g.average_pooling(y, window=(2, 2), strides=(2, 2))
    program = g.compile({"z": z})
    return program, program.compiled


def bind_for_execute(device: dmlpy.Device, compiled: Any, x: Buffer, w: Buffer | None) -> tuple[Any, Buffer, Buffer | None]:
    """A binding table for execute: x, the filter slot (NONE unless ``w``), the output, temporary and persistent resources."""
    props = compiled.get_binding_properties()
    persistent = Buffer(props.PersistentResourceSize)
    out = Buffer(compiled.output_slots()[0].tensor.TotalTensorSizeInBytes)
    table = device.create_binding_table(compiled)
    table.bind_inputs([dmlpy.buffer_binding(x), dmlpy.buffer_binding(w)])
    table.bind_outputs([dmlpy.buffer_binding(out)])
    table.bind_temporary_resource(dmlpy.buffer_binding(Buffer(props.TemporaryResourceSize) if props.TemporaryResourceSize else None))
    table.bind_persistent_resource(dmlpy.buffer_binding(persistent))
    return table, out, persistent


def test_an_owned_filter_is_an_owned_graph_input_in_the_persistent_resource(numpy_device: dmlpy.Device) -> None:
    _, compiled = owned_filter_graph(numpy_device)
    slots = compiled.input_slots()
    assert [s.owned for s in slots] == [False, True]
    assert compiled.get_binding_properties().PersistentResourceSize >= 4 * 3 * 3 * 3 * 4  # the filter's bytes


def test_a_graph_with_an_owned_filter_does_not_run_before_its_initializer(backend: str) -> None:
    device = dmlpy.create_device(backend=backend)
    _, compiled = owned_filter_graph(device)
    table, _, _ = bind_for_execute(device, compiled, Buffer(432), None)
    recorder, command_list = device.create_command_recorder(), device.create_command_list()
    recorder.record_dispatch(command_list, compiled, table)
    command_list.close()
    with pytest.raises(DmlError) as caught:
        device.execute(command_list)
    assert_rule(caught.value, "DISPATCH.NOT_INITIALIZED")


def test_binding_an_owned_filter_at_execute_is_refused_with_the_rule_id(backend: str) -> None:
    device = dmlpy.create_device(backend=backend)
    _, compiled = owned_filter_graph(device)
    w = Buffer.from_array(np.ones((4, 3, 3, 3), np.float32))
    with pytest.raises(DmlError) as caught:
        bind_for_execute(device, compiled, Buffer(432), w)
    assert_rule(caught.value, "BINDING.OWNED_INPUT_AT_EXECUTE", "IDMLCompiledOperator (graph).BindInputs[1] (GraphInput[1])")
    assert device.get_device_removed_reason() != dmlpy.S_OK  # BindInputs returns void: DirectML removes the device


def test_an_owned_filter_is_read_at_initialize_and_later_writes_to_its_buffer_change_nothing(backend: str) -> None:
    device = dmlpy.create_device(backend=backend)
    program, compiled = owned_filter_graph(device)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 3, 6, 6)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    x_buffer, w_buffer = Buffer.from_array(x), Buffer.from_array(w)
    recorder, command_list = device.create_command_recorder(), device.create_command_list()
    initializer = device.create_operator_initializer([compiled])
    init_table = device.create_binding_table(initializer)
    init_table.bind_inputs([dmlpy.array_binding([None, dmlpy.buffer_binding(w_buffer).Desc])])
    table, out, persistent = bind_for_execute(device, compiled, x_buffer, None)
    init_table.bind_outputs([dmlpy.buffer_binding(persistent)])
    recorder.record_dispatch(command_list, initializer, init_table)
    command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav()])  # the dispatch after the initializer reads what it wrote
    command_list.close()
    device.execute(command_list)
    w_buffer.data[:] = 0  # the weights were consumed at initialize
    run_list = device.create_command_list()
    recorder.record_dispatch(run_list, compiled, table)
    run_list.close()
    device.execute(run_list)
    conv_desc, pool_desc = (node.Desc.Operator.desc for node in program.graph_desc.Nodes)
    expected = dmlpy.run(pool_desc, device=device, InputTensor=dmlpy.run(conv_desc, device=device, InputTensor=x, FilterTensor=w))
    np.testing.assert_allclose(out.read(compiled.output_slots()[0].tensor), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(program(x=x, w=w)["z"], expected, rtol=1e-5, atol=1e-6)  # the builder's program initializes for you


# ---------------------------------------------------------------------------------------
# The builder's operators: inferred sizes against hand-computed numbers


def _conv_case(call: str, x: tuple[int, ...], w: tuple[int, ...], **kwargs: Any) -> Callable[[dmlpy.GraphBuilder], Any]:
    def make(g: dmlpy.GraphBuilder) -> Any:
        return getattr(g, call)(g.input("x", np.float32, x), g.input("w", np.float32, w), **kwargs)

    return make


def _unary_case(call: str, x: tuple[int, ...], *args: Any, **kwargs: Any) -> Callable[[dmlpy.GraphBuilder], Any]:
    def make(g: dmlpy.GraphBuilder) -> Any:
        return getattr(g, call)(g.input("x", np.float32, x), *args, **kwargs)

    return make


SIZE_CASES = [
    # (id, builder call, expected output sizes, the hand computation)
    ("conv-3x3-stride-2-pad-1-halves-32-to-16", _conv_case("convolution", (1, 3, 32, 32), (8, 3, 3, 3), strides=2, start_padding=1, end_padding=1), (1, 8, 16, 16)),  # (32 + 1 + 1 - 3) / 2 + 1
    ("conv-defaults-are-stride-1-no-padding", _conv_case("convolution", (2, 3, 7, 5), (4, 3, 3, 2)), (2, 4, 5, 4)),  # 7 - 3 + 1, 5 - 2 + 1
    ("conv-dilation-2-grouped", _conv_case("convolution", (1, 4, 10, 10), (6, 2, 3, 3), dilations=(2, 2), groups=2), (1, 6, 6, 6)),  # 10 - ((3 - 1) * 2 + 1) + 1
    ("conv-5-d-stride-2", _conv_case("convolution", (1, 2, 4, 8, 8), (4, 2, 2, 2, 2), strides=2), (1, 4, 2, 4, 4)),  # (8 - 2) / 2 + 1
    ("conv-transpose-decoder-56-to-112", _conv_case("conv_transpose", (1, 64, 56, 56), (64, 32, 4, 4), strides=2, start_padding=1, end_padding=1), (1, 32, 112, 112)),  # (56 - 1) * 2 + 4 - 1 - 1
    ("conv-transpose-onnx-output-padding-1", _conv_case("conv_transpose", (1, 16, 7, 7), (16, 8, 3, 3), strides=2, start_padding=1, end_padding=1, output_padding=1), (1, 8, 14, 14)),  # (7 - 1) * 2 + 3 - 2 + 1
    ("conv-transpose-groups-2-doubles-filter-channels", _conv_case("conv_transpose", (1, 4, 5, 5), (4, 3, 2, 2), groups=2), (1, 6, 6, 6)),  # Cout = 3 * 2; (5 - 1) + 2
    ("conv-transpose-dilation-2", _conv_case("conv_transpose", (1, 2, 4, 4), (2, 1, 3, 3), dilations=2), (1, 1, 8, 8)),  # (4 - 1) + (3 - 1) * 2 + 1
    ("conv-transpose-asymmetric-padding", _conv_case("conv_transpose", (1, 1, 3, 4), (1, 1, 3, 3), strides=(2, 3), start_padding=(0, 1), end_padding=(1, 0)), (1, 1, 6, 11)),  # (3-1)*2+3-1, (4-1)*3+3-1
    ("relu-keeps-sizes", _unary_case("relu", (2, 3, 4, 5)), (2, 3, 4, 5)),
    ("softplus-keeps-sizes-5-d", _unary_case("softplus", (1, 2, 3, 4, 5), 2.0), (1, 2, 3, 4, 5)),
    ("space-to-depth-2", _unary_case("space_to_depth", (1, 2, 6, 4), 2), (1, 8, 3, 2)),  # {N, C * 4, H / 2, W / 2}
    ("depth-to-space-3-crd", _unary_case("depth_to_space", (1, 18, 2, 3), 3, DML_DEPTH_SPACE_ORDER.COLUMN_ROW_DEPTH), (1, 2, 6, 9)),  # {N, C / 9, H * 3, W * 3}
]


@pytest.mark.parametrize(("make", "expected"), [pytest.param(make, expected, id=case_id) for case_id, make, expected in SIZE_CASES])
def test_the_builder_infers_output_sizes(make: Callable[[dmlpy.GraphBuilder], Any], expected: tuple[int, ...]) -> None:
    assert make(dmlpy.GraphBuilder(backend="numpy")).sizes == expected


def test_conv_transpose_keeps_dml_output_padding_zero_and_reads_a_1_d_bias_as_dml_bias(numpy_device: dmlpy.Device) -> None:
    g = dmlpy.GraphBuilder(numpy_device)
    x, w = g.input("x", np.float32, (1, 16, 7, 7)), g.input("w", np.float32, (16, 8, 3, 3))
    y = g.conv_transpose(x, w, g.input("b", np.float32, (8,)), strides=2, start_padding=1, end_padding=1, output_padding=1)
    desc = g._nodes[-1].desc  # noqa: SLF001 - the desc the builder wrote
    assert y.sizes == (1, 8, 14, 14)
    assert tuple(desc.OutputPadding) == (0, 0)  # ONNX output_padding enlarges OutputTensor instead (onnxruntime's DirectML provider)
    assert (desc.Direction, desc.Mode) == (DML_CONVOLUTION_DIRECTION.BACKWARD, DML_CONVOLUTION_MODE.CROSS_CORRELATION)
    assert tuple(desc.BiasTensor.Desc.Sizes) == (1, 8, 1, 1)  # ONNX's B {8}, joined by an edge of the same 32 bytes
    rng = np.random.default_rng(3)
    arrays = {"x": rng.standard_normal((1, 16, 7, 7)).astype(np.float32), "w": rng.standard_normal((16, 8, 3, 3)).astype(np.float32),
              "b": rng.standard_normal(8).astype(np.float32)}  # fmt: skip
    got = g.compile([y])(**arrays)["output0"]
    expected = dmlpy.run(desc, device=numpy_device, InputTensor=arrays["x"], FilterTensor=arrays["w"], BiasTensor=arrays["b"].reshape(1, 8, 1, 1))
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_convolution_defaults_are_directmlx_s() -> None:
    g = dmlpy.GraphBuilder(backend="numpy")
    g.convolution(g.input("x", np.float32, (1, 2, 5, 5)), g.input("w", np.float32, (3, 2, 3, 3)))
    desc = g._nodes[-1].desc  # noqa: SLF001
    assert (tuple(desc.Strides), tuple(desc.Dilations), tuple(desc.StartPadding), tuple(desc.EndPadding)) == ((1, 1), (1, 1), (0, 0), (0, 0))
    assert (desc.Mode, desc.Direction, desc.GroupCount, desc.FusedActivation, desc.BiasTensor) == (DML_CONVOLUTION_MODE.CROSS_CORRELATION, DML_CONVOLUTION_DIRECTION.FORWARD, 1, None, None)


@pytest.mark.parametrize(
    ("call", "field_values"),
    [
        ("leaky_relu", {"Alpha": 0.01}), ("elu", {"Alpha": 1.0}), ("hard_sigmoid", {"Alpha": 0.2, "Beta": 0.5}), ("softplus", {"Steepness": 1.0}),
        ("relu", {}), ("sigmoid", {}), ("tanh", {}), ("gelu", {}), ("identity", {}),
    ],
)  # fmt: skip
def test_standalone_activations_take_directml_s_defaults(call: str, field_values: dict[str, float]) -> None:
    g = dmlpy.GraphBuilder(backend="numpy")
    getattr(g, call)(g.input("x", np.float32, (1, 2, 3, 3)))
    desc = g._nodes[-1].desc  # noqa: SLF001
    assert type(desc) is ACTIVATIONS[call][0]
    assert {name: getattr(desc, name) for name in field_values} == field_values


def test_linear_has_no_defaults() -> None:
    g = dmlpy.GraphBuilder(backend="numpy")
    x = g.input("x", np.float32, (1, 1, 2, 2))
    with pytest.raises(TypeError):
        g.linear(x)  # type: ignore[call-arg]
    g.linear(x, 2.0, -1.0)
    assert (g._nodes[-1].desc.Alpha, g._nodes[-1].desc.Beta) == (2.0, -1.0)  # noqa: SLF001


def test_space_depth_emits_the_versioned_descs_from_feature_level_2_1_and_the_plain_ones_below() -> None:
    modern = dmlpy.GraphBuilder(backend="numpy")
    modern.space_to_depth(modern.input("x", np.float32, (1, 1, 4, 4)), 2)
    modern.depth_to_space(modern.input("y", np.float32, (1, 4, 2, 2)), 2)
    assert [type(n.desc) for n in modern._nodes] == [DML_SPACE_TO_DEPTH1_OPERATOR_DESC, DML_DEPTH_TO_SPACE1_OPERATOR_DESC]  # noqa: SLF001
    old = dmlpy.GraphBuilder(feature_level=DML_FEATURE_LEVEL.LEVEL_2_0, backend="numpy")
    old.space_to_depth(old.input("x", np.float32, (1, 1, 4, 4)), 2)
    old.depth_to_space(old.input("y", np.float32, (1, 4, 2, 2)), 2)
    assert [type(n.desc) for n in old._nodes] == [DML_SPACE_TO_DEPTH_OPERATOR_DESC, DML_DEPTH_TO_SPACE_OPERATOR_DESC]  # noqa: SLF001
    with pytest.raises(DmlError) as caught:
        old.depth_to_space(old.input("z", np.float32, (1, 4, 2, 2)), 2, DML_DEPTH_SPACE_ORDER.COLUMN_ROW_DEPTH)
    assert_rule(caught.value, "OPERATOR.FEATURE_LEVEL")
    assert "depth_to_space" in caught.value.summary and "'order'" in caught.value.summary


def test_the_nhwc_policy_changes_layouts_not_values(backend: str) -> None:
    """One graph with every builder operator, built twice: every NHWC output has channels-last strides, and the answers agree."""
    rng = np.random.default_rng(11)
    arrays = {"x": rng.standard_normal((1, 4, 6, 6)).astype(np.float32), "w": (rng.standard_normal((4, 2, 4, 4)) / 8).astype(np.float32),
              "v": (rng.standard_normal((4, 8, 3, 3)) / 8).astype(np.float32)}  # fmt: skip
    results = {}
    for policy in ("nchw", "nhwc"):
        g = dmlpy.GraphBuilder(dmlpy.create_device(backend=backend), policy=policy)
        x, w, v = g.input("x", np.float32, (1, 4, 6, 6)), g.input("w", np.float32, (4, 2, 4, 4)), g.input("v", np.float32, (4, 8, 3, 3))
        y = g.conv_transpose(x, w, strides=2, start_padding=1, end_padding=1, activation=FusedActivation.leaky_relu(0.1))  # {1, 2, 12, 12}
        y = g.average_pooling(y, window=(2, 2), strides=(2, 2))  # {1, 2, 6, 6}
        y = g.space_to_depth(y, 2)  # {1, 8, 3, 3}
        y = g.convolution(y, v, g.constant(np.arange(4, dtype=np.float32) / 4), start_padding=1, end_padding=1)  # {1, 4, 3, 3}
        for name in ("relu", "sigmoid", "tanh", "elu", "hard_sigmoid", "softplus", "gelu", "identity"):
            y = getattr(g, name)(y)
        y = g.depth_to_space(g.linear(g.leaky_relu(y), 0.5, 0.25), 2)  # {1, 1, 6, 6}
        if policy == "nhwc":
            assert all(tuple(n.desc.OutputTensor.Desc.Strides) == dmlpy.nhwc_strides(n.desc.OutputTensor.Desc.Sizes) for n in g._nodes if n.desc is not None)  # noqa: SLF001
        results[policy] = g.compile({"y": y})(**arrays)["y"]
    assert results["nchw"].shape == (1, 1, 6, 6)
    np.testing.assert_allclose(results["nhwc"], results["nchw"], rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------
# The builder's operators: a mistake names the call and the argument


def _conv_error(call: str, x: tuple[int, ...] = (1, 4, 6, 6), w: tuple[int, ...] = (4, 2, 3, 3), bias: tuple[int, ...] | None = None,
                w_dtype: Any = np.float32, **kwargs: Any) -> Callable[[dmlpy.GraphBuilder], Any]:  # fmt: skip
    def make(g: dmlpy.GraphBuilder) -> Any:
        b = g.input("b", np.float32, bias) if bias is not None else None
        return getattr(g, call)(g.input("x", np.float32, x), g.input("w", w_dtype, w), b, **kwargs)

    return make


ERROR_CASES = [
    # (id, builder call, rule id, the argument the summary names)
    ("conv-transpose-groups-3-on-4-channels", _conv_error("conv_transpose", groups=3), "CONVOLUTION.GROUP_DIVIDES_CHANNELS", "groups"),
    ("conv-groups-3-on-4-channels", _conv_error("convolution", w=(6, 1, 3, 3), groups=3), "CONVOLUTION.GROUP_DIVIDES_CHANNELS", "groups"),
    ("conv-filter-sees-3-channels-of-4", _conv_error("convolution", w=(8, 3, 3, 3)), "CONVOLUTION.FILTER_CHANNELS", "filter"),
    ("conv-transpose-given-a-forward-layout-filter", _conv_error("conv_transpose", w=(8, 4, 3, 3)), "CONVOLUTION.FILTER_CHANNELS", "filter"),
    ("conv-stride-0", _conv_error("convolution", strides=(0, 1)), "CONVOLUTION.STRIDE_ZERO", "strides"),
    ("conv-dilation-0", _conv_error("convolution", dilations=(1, 0)), "CONVOLUTION.DILATION_ZERO", "dilations"),
    ("conv-three-strides-for-two-axes", _conv_error("convolution", strides=(1, 1, 1)), "CONVOLUTION.ARRAY_LENGTH", "strides"),
    ("conv-kernel-larger-than-input", _conv_error("convolution", x=(1, 4, 2, 2)), "CONVOLUTION.KERNEL_LARGER_THAN_INPUT", "filter"),
    ("conv-bias-of-5-channels-for-4", _conv_error("convolution", bias=(1, 5, 1, 1)), "CONVOLUTION.BIAS_SHAPE", "bias"),
    ("conv-filter-of-another-type", _conv_error("convolution", w_dtype=np.float16), "CONVOLUTION.SAME_DATA_TYPE", "filter"),
    ("conv-explicit-output-sizes-off-by-one", _conv_error("convolution", output_sizes=(1, 4, 5, 4)), "CONVOLUTION.OUTPUT_SIZE", "output_sizes"),
    ("conv-mode-7", _conv_error("convolution", mode=7), "CONVOLUTION.MODE", "mode"),
    ("conv-activation-that-is-a-space-to-depth", _conv_error("convolution", activation=DML_SPACE_TO_DEPTH_OPERATOR_DESC(None, None, 2)), "ACTIVATION.NOT_FUSABLE", "activation"),
    ("conv-activation-with-tensors", _conv_error("convolution", activation=act.DML_ACTIVATION_RELU_OPERATOR_DESC(buffer_tensor(np.float32, (1,)), None)),
     "ACTIVATION.FUSED_TENSORS_NOT_NULL", "activation"),
    ("conv-softplus-activation-steepness-0.5", _conv_error("convolution", activation=FusedActivation.softplus(0.5)), "ACTIVATION.SOFTPLUS_STEEPNESS", "activation"),
    ("conv-transpose-padding-eats-the-output", _conv_error("conv_transpose", x=(1, 4, 1, 1), start_padding=(2, 0), end_padding=(2, 0)), "CONVOLUTION.PADDING_TOO_LARGE", "start_padding"),
    ("conv-transpose-output-padding-2-with-stride-2", _conv_error("conv_transpose", strides=2, output_padding=2), "CONVOLUTION.BACKWARD_OUTPUT_SIZE", "output_padding"),
    ("conv-transpose-explicit-output-sizes-too-large", _conv_error("conv_transpose", output_sizes=(1, 2, 9, 8)), "CONVOLUTION.BACKWARD_OUTPUT_SIZE", "output_sizes"),
    ("softplus-steepness-0.5", _unary_case("softplus", (1, 1, 2, 2), 0.5), "ACTIVATION.SOFTPLUS_STEEPNESS", "steepness"),
    ("leaky-relu-alpha-a-string", _unary_case("leaky_relu", (1, 1, 2, 2), "0.1"), "FIELD.TYPE", "alpha"),
    ("linear-beta-none", _unary_case("linear", (1, 1, 2, 2), 1.0, None), "FIELD.TYPE", "beta"),
    ("space-to-depth-block-4-on-height-6", _unary_case("space_to_depth", (1, 1, 6, 8), 4), "SPACE_DEPTH.SPATIAL_DIVISIBLE", "block_size"),
    ("space-to-depth-block-0", _unary_case("space_to_depth", (1, 1, 6, 8), 0), "SPACE_DEPTH.BLOCK_SIZE_ZERO", "block_size"),
    ("depth-to-space-6-channels-block-2", _unary_case("depth_to_space", (1, 6, 2, 2), 2), "SPACE_DEPTH.CHANNELS_DIVISIBLE", "block_size"),
    ("space-to-depth-order-5", _unary_case("space_to_depth", (1, 1, 4, 4), 2, 5), "SPACE_DEPTH.ORDER", "order"),
    ("space-to-depth-of-a-5-d-tensor", _unary_case("space_to_depth", (1, 1, 4, 4, 4), 2), "TENSOR.DIMENSION_COUNT_SUPPORT", "x"),
]  # fmt: skip


@pytest.mark.parametrize(("make", "rule_id", "argument"), [pytest.param(m, r, a, id=i) for i, m, r, a in ERROR_CASES])
def test_a_builder_mistake_names_the_call_the_argument_and_the_line(make: Callable[[dmlpy.GraphBuilder], Any], rule_id: str, argument: str) -> None:
    g = dmlpy.GraphBuilder(backend="numpy")
    with pytest.raises(DmlError) as caught:
        make(g)
    assert_rule(caught.value, rule_id)
    summary = caught.value.summary
    call = summary.split(" at ")[0].removeprefix("GraphBuilder.")
    assert f"argument '{argument}'" in summary, summary
    assert call in ("convolution", "conv_transpose", "softplus", "leaky_relu", "linear", "space_to_depth", "depth_to_space")
    assert "test_graph_random.py" in summary  # the line that made the call, not a line inside dmlpy
    assert g._nodes == []  # noqa: SLF001 - nothing was added


def test_builder_arguments_that_are_not_graph_values_are_type_errors_naming_them() -> None:
    g, other = dmlpy.GraphBuilder(backend="numpy"), dmlpy.GraphBuilder(backend="numpy")
    x = g.input("x", np.float32, (1, 2, 4, 4))
    with pytest.raises(TypeError, match=r"GraphBuilder.convolution at .*test_graph_random.py:\d+: argument 'filter' is a ndarray.*g.constant"):
        g.convolution(x, np.ones((2, 2, 1, 1), np.float32))
    with pytest.raises(TypeError, match="argument 'x' is a list"):
        g.relu([1.0, 2.0])
    with pytest.raises(ValueError, match="argument 'bias' comes from another GraphBuilder"):
        g.convolution(x, g.input("w", np.float32, (2, 2, 1, 1)), other.input("b", np.float32, (2,)))
    with pytest.raises(ValueError, match="argument 'output_padding' is -1"):
        g.conv_transpose(x, g.input("v", np.float32, (2, 2, 1, 1)), output_padding=-1)
