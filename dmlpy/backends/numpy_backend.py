"""The NumPy backend: runs each operator family's reference kernel through strided views."""

from __future__ import annotations

from typing import Any

import numpy as np

from dmlpy.backends import BoundTensor, Runner
from dmlpy.binding import tensor_view
from dmlpy.operators import OperatorSpec


class NumpyBackend:
    __slots__ = ()
    name = "numpy"

    def prepare(self, spec: OperatorSpec, desc: Any) -> tuple[OperatorSpec, Any]:
        return spec, desc

    def bind(self, prepared: tuple[OperatorSpec, Any], inputs: list[BoundTensor], outputs: list[BoundTensor]) -> Runner:
        spec, desc = prepared
        in_views = {
            b.name: tensor_view(b.memory, b.tensor) if b.memory is not None and b.tensor is not None else None
            for b in inputs
        }
        out_views = {
            b.name: tensor_view(b.memory, b.tensor, writeable=True)
            for b in outputs
            if b.memory is not None and b.tensor is not None
        }

        def run() -> None:
            results = spec.reference(desc, in_views)
            # rounding to the output type may overflow to inf, as DirectML's would: not an error
            with np.errstate(over="ignore", invalid="ignore"):
                for name, view in out_views.items():
                    np.copyto(view, results[name], casting="unsafe")

        return run
