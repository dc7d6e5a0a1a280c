"""The NumPy backend: runs each operator family's reference kernel through strided views."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dmlpy.backends import BoundTensor, Runner
from dmlpy.binding import tensor_view
from dmlpy.operators import OperatorSpec
from dmlpy.tensor import DML_BUFFER_TENSOR_DESC, layout_overlap


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
        writers = {b.name: _writer(b.memory, b.tensor) for b in outputs if b.memory is not None and b.tensor is not None}

        def run() -> None:
            results = spec.reference(desc, in_views)
            # rounding to the output type may overflow to inf, as DirectML's would: not an error
            with np.errstate(over="ignore", invalid="ignore"):
                for name, write in writers.items():
                    write(results[name])

        return run

    def sequence(self, runners: list[Runner]) -> list[Runner]:
        return list(runners)


def _writer(memory: np.ndarray, tensor: DML_BUFFER_TENSOR_DESC) -> Callable[[np.ndarray], None]:
    """Writes a result through the tensor's strides. Where the layout maps several indices to one element
    (TENSOR.OUTPUT_OVERLAP), the last index in row-major order wins, as a sequential loop over the
    indices would leave it (np.copyto's order is unspecified there)."""
    view = tensor_view(memory, tensor, writeable=True)
    sizes, strides = tuple(tensor.Sizes or ()), tensor.element_strides
    if layout_overlap(sizes, strides) is None:
        return lambda result: np.copyto(view, result, casting="unsafe")
    offsets = np.zeros((), dtype=np.int64)
    for size, stride in zip(sizes, strides, strict=True):
        offsets = np.add.outer(offsets, np.arange(size, dtype=np.int64) * stride)
    offsets = offsets.ravel()
    # the last occurrence of each offset: the first in the reversed order
    elements, first_reversed = np.unique(offsets[::-1], return_index=True)
    last = offsets.size - 1 - first_reversed
    flat = memory[: (int(offsets.max()) + 1) * view.itemsize].view(view.dtype)

    def write(result: np.ndarray) -> None:
        flat[elements] = np.broadcast_to(result, sizes).reshape(-1)[last].astype(view.dtype, casting="unsafe")

    return write
