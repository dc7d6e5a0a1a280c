"""onnxruntime as the oracle of a one-node ONNX model, shared by the operator tests."""

from __future__ import annotations

from typing import Any

import numpy as np


def onnx_node(op: str, inputs: list[np.ndarray], attrs: dict[str, Any] | None = None, *, opset: int = 18, outputs: int = 1) -> list[np.ndarray]:
    """onnxruntime's CPU result of a one-node ONNX model; every input is a graph input."""
    import onnxruntime as ort
    from onnx import helper

    names = [f"x{i}" for i in range(len(inputs))]
    results = [f"y{i}" for i in range(outputs)]
    graph = helper.make_graph(
        [helper.make_node(op, names, results, **(attrs or {}))],
        "oracle",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape)) for n, v in zip(names, inputs, strict=True)],
        [helper.make_empty_tensor_value_info(r) for r in results],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, dict(zip(names, inputs, strict=True)))  # type: ignore[no-any-return]
