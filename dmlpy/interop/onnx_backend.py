"""dmlpy as an ONNX backend (``onnx.backend.base.Backend``): ONNX's own backend tests run against dmlpy.

    from dmlpy.interop.onnx_backend import DmlpyBackend

    rep = DmlpyBackend.prepare(model, "CPU")         # imports with dmlpy.interop.onnx.import_model
    (y,) = rep.run([x])                               # outputs in the graph's output order
    DmlpyBackend.run_model(model, [x], backend="numpy")
    DmlpyBackend.run_node(node_proto, [x])            # one node, shapes and types from the arrays

``prepare`` takes ``import_model``'s keyword options (``backend``, ``feature_level``,
``weights``, ...). A model whose graph inputs all have static shapes is imported at
``prepare``; one with symbolic dimensions is imported at its first ``run``, with the shapes of
the arrays given (and again for each new set of shapes).

What the importer cannot take is raised as ``Rejected`` (a ``NotImplementedError``): the import
error's HRESULT is E_NOTIMPL, which is how dmlpy says "an operator, version, attribute or
type the importer does not map" (``ONNX.UNSUPPORTED_*``) and "DirectML accepts this, but dmlpy
has no kernel for it" (``OPERATOR.NOT_EMULATED``); so is any import error of a model with nodes
outside ONNX's default domain (the importer maps that domain only). Any other ``DmlError`` (a
desc DirectML would reject, an invalid model) propagates unchanged, so a test runner can tell
"rejected" from "failed".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep, Device, DeviceType, namedtupledict

import dmlpy.interop.onnx as dml_onnx
from dmlpy.enums import HRESULT
from dmlpy.errors import DmlError, Finding

REJECTING_RULES = frozenset({"ONNX.UNSUPPORTED_OP", "ONNX.NOT_EMULATED", "OPERATOR.NOT_EMULATED"})


class Rejected(NotImplementedError):
    """The importer does not map (or dmlpy does not emulate) something in the model: ``error`` says what, with rule ids."""

    def __init__(self, error: DmlError) -> None:
        self.error = error
        self.findings: list[Finding] = list(error.findings)
        super().__init__(str(error))

    @property
    def rules(self) -> list[str]:
        return [f.rule for f in self.findings]


def is_rejection(error: BaseException) -> bool:
    """Whether ``error`` is dmlpy saying "not mapped / not emulated" rather than "invalid"."""
    if isinstance(error, Rejected):
        return True
    if not isinstance(error, DmlError):
        return False
    return error.hresult == HRESULT.E_NOTIMPL or any(f.rule in REJECTING_RULES for f in error.findings)


def _static_shapes(model: onnx.ModelProto) -> bool:
    """Whether the import can happen now: no tensor input has a symbolic or missing dimension.

    A graph input that is not a tensor (a sequence, a map, an optional) counts as static: the
    importer rejects it at once (ONNX.UNSUPPORTED_TYPE), before any array is given.
    """
    initializers = {t.name for t in model.graph.initializer}
    inputs = [v for v in model.graph.input if v.name not in initializers]
    if any(v.type.WhichOneof("value") != "tensor_type" for v in inputs):
        return True
    for value in inputs:
        tensor = value.type.tensor_type
        if not tensor.HasField("shape") or any(not d.HasField("dim_value") for d in tensor.shape.dim):
            return False
    return True


def _foreign_domains(model: onnx.ModelProto) -> list[str]:
    """The operator domains other than ONNX's default one that the model's nodes use (ai.onnx.ml, training, custom)."""
    return sorted({n.domain for n in model.graph.node if n.domain not in ("", "ai.onnx")})


def _import(model: onnx.ModelProto, options: Mapping[str, Any], input_shapes: Mapping[str, Sequence[int]] | None = None) -> dml_onnx.ImportedModel:
    try:
        return dml_onnx.import_model(model, input_shapes=input_shapes, **options)
    except DmlError as error:
        # a model of another domain only (ai.onnx.ml, ai.onnx.preview.training) fails before any
        # node is read (no default-domain opset): the importer maps default-domain operators only
        if is_rejection(error) or _foreign_domains(model):
            raise Rejected(error) from error
        raise


class DmlpyBackendRep(BackendRep):
    """A prepared model: ``run(inputs)`` takes a list (graph input order) or a dict by name, returns the outputs in ONNX order."""

    def __init__(self, model: onnx.ModelProto, options: Mapping[str, Any]) -> None:
        self.model = model
        self.options = dict(options)
        initializers = {t.name for t in model.graph.initializer}
        self.input_names = [v.name for v in model.graph.input if v.name not in initializers]
        self.output_names = [v.name for v in model.graph.output]
        self._imported: dict[tuple[tuple[int, ...], ...], dml_onnx.ImportedModel] = {}
        if _static_shapes(model):
            imported = _import(model, self.options)
            self._imported[tuple(imported.input_shapes[n] for n in imported.input_names)] = imported

    def imported(self, arrays: Mapping[str, np.ndarray]) -> dml_onnx.ImportedModel:
        """The ImportedModel for these input shapes (imported now if the model has symbolic dimensions)."""
        key = tuple(tuple(np.shape(arrays[n])) for n in self.input_names)
        if key not in self._imported:
            if self._imported and _static_shapes(self.model):
                return next(iter(self._imported.values()))  # ImportedModel.run reports the shape mismatch
            self._imported[key] = _import(self.model, self.options, {n: np.shape(arrays[n]) for n in self.input_names})
        return self._imported[key]

    def run(self, inputs: Any, **kwargs: Any) -> tuple[Any, ...]:
        if kwargs:
            msg = f"DmlpyBackendRep.run takes no options ({', '.join(sorted(kwargs))}); give import options to prepare"
            raise TypeError(msg)
        if isinstance(inputs, Mapping):
            arrays = {name: np.asarray(value) for name, value in inputs.items()}
        else:
            values = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)
            if len(values) != len(self.input_names):
                msg = f"the model takes {len(self.input_names)} inputs ({', '.join(self.input_names)}), not {len(values)}"
                raise ValueError(msg)
            arrays = {name: np.asarray(value) for name, value in zip(self.input_names, values, strict=True)}
        imported = self.imported(arrays)
        try:
            results = imported.run(arrays)
        except DmlError as error:
            if is_rejection(error):
                raise Rejected(error) from error
            raise
        return namedtupledict("Outputs", self.output_names)(*[results[name] for name in self.output_names])


class DmlpyBackend(Backend):
    """``onnx.backend.base.Backend`` over dmlpy.interop.onnx: CPU only (dmlpy emulates DirectML on the CPU)."""

    @classmethod
    def supports_device(cls, device: str) -> bool:
        try:
            return Device(device).type == DeviceType.CPU
        except (AttributeError, ValueError):
            return False

    @classmethod
    def is_compatible(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> bool:
        """Whether ``validate`` finds no error (the model imports); ``kwargs`` are ``validate``'s options."""
        return cls.supports_device(device) and dml_onnx.validate(model, **kwargs).ok

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> DmlpyBackendRep:
        if not cls.supports_device(device):
            msg = f"dmlpy runs on the CPU; device {device!r} is not supported"
            raise ValueError(msg)
        return DmlpyBackendRep(dml_onnx.load(model), kwargs)

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any) -> tuple[Any, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: onnx.NodeProto, inputs: Any, device: str = "CPU", outputs_info: Sequence[tuple[Any, tuple[int, ...]]] | None = None, **kwargs: Any) -> tuple[Any, ...]:
        """Run one node: graph inputs typed and shaped from ``inputs`` (a list in node input order, or a dict by name)."""
        opset = kwargs.pop("opset_version", None)
        names = [n for n in node.input if n]
        arrays = {n: np.asarray(v) for n, v in inputs.items()} if isinstance(inputs, Mapping) else dict(zip(names, [np.asarray(v) for v in inputs], strict=True))
        graph_inputs = [onnx.helper.make_tensor_value_info(n, onnx.helper.np_dtype_to_tensor_dtype(a.dtype), a.shape) for n, a in arrays.items()]
        if outputs_info is not None:
            graph_outputs = [onnx.helper.make_tensor_value_info(n, onnx.helper.np_dtype_to_tensor_dtype(np.dtype(t)), s) for n, (t, s) in zip(node.output, outputs_info, strict=False)]
        else:
            graph_outputs = [onnx.helper.make_empty_tensor_value_info(n) for n in node.output if n]
        graph = onnx.helper.make_graph([node], "node", graph_inputs, graph_outputs)
        opsets = [onnx.helper.make_opsetid("", opset if opset is not None else onnx.defs.onnx_opset_version())]
        model = onnx.helper.make_model(graph, opset_imports=opsets)
        return cls.run_model(model, arrays, device, **kwargs)


prepare = DmlpyBackend.prepare
run_model = DmlpyBackend.run_model
run_node = DmlpyBackend.run_node
supports_device = DmlpyBackend.supports_device

__all__ = ["DmlpyBackend", "DmlpyBackendRep", "Rejected", "is_rejection", "prepare", "run_model", "run_node", "supports_device"]
