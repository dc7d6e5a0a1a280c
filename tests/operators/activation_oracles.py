"""Oracles for the element-wise activations, shared by the activation and convolution kernel tests.

* ``oracle_activation``: each formula of the DirectML pages, element by element with Python's
  ``math`` (written independently of dmlpy/operators/activation.py).
* ``onnx_activation_nodes``: the same function as ONNX nodes, so that onnxruntime can apply it
  after its Conv / ConvTranspose (LINEAR is Mul + Add; SOFTPLUS with a steepness is
  Mul -> Softplus -> Div; GELU is ONNX Gelu from opset 20; SCALED_ELU is Selu; PARAMETRIC_SOFTPLUS
  is Mul -> Softplus -> Mul; SCALED_TANH is Mul -> Tanh -> Mul; SWISH is Mul -> Sigmoid -> Mul by x;
  HARD_SWISH is HardSigmoid -> Mul by x, ONNX's HardSwish being the case alpha = 1/6, beta = 0.5).

``ALL`` holds the ten activations of the first kernels, ``MORE`` the nine added later (and
``FUSABLE_MORE`` those of them DirectML can fuse).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dmlpy import DML_OPERATOR_DESC, DML_OPERATOR_TYPE, FusedActivation
from dmlpy.operators import REGISTRY


@dataclass(frozen=True)
class Activation:
    name: str  # the DML_OPERATOR_ACTIVATION_* suffix
    params: tuple[float, ...] = ()

    def fused(self) -> DML_OPERATOR_DESC:
        """The DML_OPERATOR_DESC a FusedActivation field takes."""
        return getattr(FusedActivation, self.name.lower())(*self.params)

    def standalone(self, x: Any, y: Any) -> Any:
        """The standalone desc with InputTensor ``x`` and OutputTensor ``y`` (the parameters in field order)."""
        return REGISTRY[DML_OPERATOR_TYPE["ACTIVATION_" + self.name]].desc_class(x, y, *self.params)

    def __str__(self) -> str:
        return self.name + (f"({', '.join(f'{p:g}' for p in self.params)})" if self.params else "")


def _softplus(v: float, s: float) -> float:
    t = s * v
    return (t + math.log1p(math.exp(-t)) if t > 0 else math.log1p(math.exp(t))) / s


FORMULAS: dict[str, Callable[[float, tuple[float, ...]], float]] = {
    "IDENTITY": lambda v, p: v,
    "LINEAR": lambda v, p: p[0] * v + p[1],
    "RELU": lambda v, p: max(0.0, v),
    "LEAKY_RELU": lambda v, p: v if v >= 0 else p[0] * v,
    "SIGMOID": lambda v, p: 1 / (1 + math.exp(-v)) if v >= -700 else 0.0,
    "TANH": lambda v, p: math.tanh(v),
    "ELU": lambda v, p: v if v > 0 else p[0] * (math.exp(v) - 1),
    "HARD_SIGMOID": lambda v, p: max(0.0, min(p[0] * v + p[1], 1.0)),
    "SOFTPLUS": lambda v, p: _softplus(v, p[0]),
    "GELU": lambda v, p: 0.5 * v * (1 + math.erf(v / math.sqrt(2))),
    "CELU": lambda v, p: max(0.0, v) + min(0.0, p[0] * (math.exp(min(v / p[0], 700.0)) - 1)),
    "PARAMETRIC_SOFTPLUS": lambda v, p: p[0] * _softplus(p[1] * v, 1.0),
    "SCALED_ELU": lambda v, p: p[1] * v if v > 0 else p[1] * (p[0] * math.exp(v) - p[0]),
    "SCALED_TANH": lambda v, p: p[0] * math.tanh(p[1] * v),
    "SOFTSIGN": lambda v, p: v / (1 + abs(v)),
    "THRESHOLDED_RELU": lambda v, p: v if v > p[0] else 0.0,
    "SHRINK": lambda v, p: v + p[0] if v < -p[1] else (v - p[0] if v > p[1] else 0.0),
    "SWISH": lambda v, p: v * (1 / (1 + math.exp(-p[0] * v)) if p[0] * v >= -700 else 0.0),
    "HARD_SWISH": lambda v, p: v * max(0.0, min(p[0] * v + p[1], 1.0)),
    "CLIP": lambda v, p: v if math.isnan(v) else min(max(v, p[0]), p[1]),  # ELEMENT_WISE_CLIP as a FusedActivation: (Min, Max)
}

# One instance of each activation, with parameters away from the defaults where there are any.
ALL = [
    Activation("IDENTITY"),
    Activation("LINEAR", (1.5, -0.25)),
    Activation("RELU"),
    Activation("LEAKY_RELU", (0.2,)),
    Activation("SIGMOID"),
    Activation("TANH"),
    Activation("ELU", (0.7,)),
    Activation("HARD_SIGMOID", (0.3, 0.4)),
    Activation("SOFTPLUS", (2.0,)),
    Activation("GELU"),
]

# The activations added to the first ten, with parameters away from the defaults.
MORE = [
    Activation("CELU", (0.8,)),
    Activation("PARAMETRIC_SOFTPLUS", (1.5, 0.7)),
    Activation("SCALED_ELU", (1.2, 0.9)),
    Activation("SCALED_TANH", (1.7, 0.6)),
    Activation("SOFTSIGN"),
    Activation("THRESHOLDED_RELU", (0.4,)),
    Activation("SHRINK", (0.25, 0.6)),
    Activation("SWISH", (1.3,)),
    Activation("HARD_SWISH", (0.25, 0.4)),
]
FUSABLE_MORE = [a for a in MORE if a.name not in ("SWISH", "HARD_SWISH")]  # the fused-activation page lists neither


def oracle_activation(activation: Activation | None, y: np.ndarray) -> np.ndarray:
    """``f(y)`` element by element in float64."""
    y = np.asarray(y, dtype=np.float64)
    if activation is None:
        return y
    formula = FORMULAS[activation.name]
    return np.array([formula(float(v), activation.params) for v in y.ravel()], dtype=np.float64).reshape(y.shape)


def onnx_activation_nodes(activation: Activation | None, source: str, target: str) -> tuple[list[Any], list[Any]]:
    """ONNX nodes (and initializers) that compute ``target = f(source)``."""
    from onnx import TensorProto, helper

    def constant(name: str, value: float) -> Any:
        return helper.make_tensor(name, TensorProto.FLOAT, [], [value])

    if activation is None or activation.name == "IDENTITY":
        return [helper.make_node("Identity", [source], [target])], []
    p = (*activation.params, 0.0, 0.0)  # the attributes of activations without parameters are unused
    if activation.name == "LINEAR":
        return [
            helper.make_node("Mul", [source, "linear_alpha"], ["linear_scaled"]),
            helper.make_node("Add", ["linear_scaled", "linear_beta"], [target]),
        ], [constant("linear_alpha", p[0]), constant("linear_beta", p[1])]
    if activation.name in ("PARAMETRIC_SOFTPLUS", "SCALED_TANH"):  # Alpha * f(Beta * x)
        inner = "Softplus" if activation.name == "PARAMETRIC_SOFTPLUS" else "Tanh"
        return [
            helper.make_node("Mul", [source, "inner_beta"], ["inner_in"]),
            helper.make_node(inner, ["inner_in"], ["inner_out"]),
            helper.make_node("Mul", ["inner_out", "outer_alpha"], [target]),
        ], [constant("inner_beta", p[1]), constant("outer_alpha", p[0])]
    if activation.name == "SWISH":
        return [
            helper.make_node("Mul", [source, "swish_scale"], ["swish_in"]),
            helper.make_node("Sigmoid", ["swish_in"], ["swish_gate"]),
            helper.make_node("Mul", [source, "swish_gate"], [target]),
        ], [constant("swish_scale", p[0])]
    if activation.name == "HARD_SWISH":
        return [
            helper.make_node("HardSigmoid", [source], ["hard_swish_gate"], alpha=p[0], beta=p[1]),
            helper.make_node("Mul", [source, "hard_swish_gate"], [target]),
        ], []
    if activation.name == "CLIP":
        return [helper.make_node("Clip", [source, "clip_min", "clip_max"], [target])], [constant("clip_min", p[0]), constant("clip_max", p[1])]
    if activation.name == "SOFTPLUS":
        return [
            helper.make_node("Mul", [source, "steepness"], ["softplus_in"]),
            helper.make_node("Softplus", ["softplus_in"], ["softplus_out"]),
            helper.make_node("Div", ["softplus_out", "steepness"], [target]),
        ], [constant("steepness", p[0])]
    op, attrs = {
        "RELU": ("Relu", {}),
        "LEAKY_RELU": ("LeakyRelu", {"alpha": p[0]}),
        "SIGMOID": ("Sigmoid", {}),
        "TANH": ("Tanh", {}),
        "ELU": ("Elu", {"alpha": p[0]}),
        "HARD_SIGMOID": ("HardSigmoid", {"alpha": p[0], "beta": p[1]}),
        "GELU": ("Gelu", {}),
        "CELU": ("Celu", {"alpha": p[0]}),
        "SCALED_ELU": ("Selu", {"alpha": p[0], "gamma": p[1]}),
        "SOFTSIGN": ("Softsign", {}),
        "THRESHOLDED_RELU": ("ThresholdedRelu", {"alpha": p[0]}),
        "SHRINK": ("Shrink", {"bias": p[0], "lambd": p[1]}),
    }[activation.name]
    return [helper.make_node(op, [source], [target], **attrs)], []


def run_onnx(nodes: list[Any], initializers: list[Any], inputs: dict[str, np.ndarray], output: str = "Y") -> np.ndarray:
    """One ONNX graph (opset 20, IR 10) on onnxruntime's CPU provider; every input and the output FLOAT."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        nodes,
        "oracle",
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, list(value.shape)) for name, value in inputs.items()],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)],
        initializer=initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 10
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    feeds = {name: np.ascontiguousarray(value, dtype=np.float32) for name, value in inputs.items()}
    return session.run(None, feeds)[0]  # type: ignore[no-any-return]
