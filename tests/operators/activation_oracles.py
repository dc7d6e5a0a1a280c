"""Oracles for the ten emulated activations, shared by the activation and convolution kernel tests.

* ``oracle_activation``: each formula of the DirectML pages, element by element with Python's
  ``math`` (written independently of dmlpy/operators/activation.py).
* ``onnx_activation_nodes``: the same function as ONNX nodes, so that onnxruntime can apply it
  after its Conv / ConvTranspose (LINEAR is Mul + Add; SOFTPLUS with a steepness is
  Mul -> Softplus -> Div; GELU is ONNX Gelu from opset 20).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dmlpy import DML_OPERATOR_DESC, FusedActivation


@dataclass(frozen=True)
class Activation:
    name: str  # the DML_OPERATOR_ACTIVATION_* suffix
    params: tuple[float, ...] = ()

    def fused(self) -> DML_OPERATOR_DESC:
        """The DML_OPERATOR_DESC a FusedActivation field takes."""
        return getattr(FusedActivation, self.name.lower())(*self.params)

    def standalone(self, x: Any, y: Any) -> Any:
        """The standalone desc with InputTensor ``x`` and OutputTensor ``y``."""
        desc = self.fused().Desc
        desc.InputTensor, desc.OutputTensor = x, y
        return desc

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
