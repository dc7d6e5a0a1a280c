"""Buffers and bindings: DML_BUFFER_BINDING, DML_BINDING_DESC, binding properties and tables.

A ``Buffer`` stands in for a DEFAULT-heap ID3D12Resource. A ``BindingTable`` checks every
binding rule of DirectML's binding documentation when the binding is made. The Bind* methods return void in
DirectML, so a broken rule there removes the device: dmlpy raises at once with the rule and
records the removal on the device.
"""

from __future__ import annotations

import copy
import sys
import warnings
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from numpy.lib.stride_tricks import as_strided

from dmlpy.enums import (
    DML_BINDING_TYPE,
    DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT,
    DML_PERSISTENT_BUFFER_ALIGNMENT,
    DML_TEMPORARY_BUFFER_ALIGNMENT,
    HRESULT,
)
from dmlpy.errors import DmlError, DmlWarning, Finding, Severity, int_argument
from dmlpy.rules import Checker, fmt, rule
from dmlpy.tensor import DML_BUFFER_TENSOR_DESC, DML_TENSOR_DESC, numpy_dtype

_BASE_ALIGNMENT = 64


class Buffer:
    """A GPU buffer in a DEFAULT heap, emulated by 64-byte-aligned host memory.

    ``data`` may be replaced by other memory of the same size (an array, bytes, an mmap):
    the size of an ID3D12Resource is fixed when it is created. Read-only memory can be bound
    as an input; outputs, temporary and persistent resources must be writable.
    """

    __slots__ = ("__weakref__", "_data", "name")

    def __init__(self, size_in_bytes: int, name: str = "") -> None:
        size_in_bytes = int_argument("Buffer", "size_in_bytes", size_in_bytes)
        raw = _allocate(size_in_bytes + _BASE_ALIGNMENT, size_in_bytes, name)
        start = (-raw.ctypes.data) % _BASE_ALIGNMENT
        self._data: np.ndarray = raw[start : start + size_in_bytes]
        self.name = name

    @property
    def data(self) -> np.ndarray:
        """The bytes, as a fresh uint8 view: reshaping or retyping the view leaves the buffer as it is."""
        return self._data.view()

    @data.setter
    def data(self, memory: Any) -> None:
        self._data = _as_memory(memory, self.size)

    @property
    def size(self) -> int:
        return int(self._data.size)

    @classmethod
    def from_array(cls, array: Any, *, size_in_bytes: int | None = None, name: str = "") -> Buffer:
        """A buffer holding ``array``'s bytes in C order, padded with zeros to a multiple of 4."""
        array = np.ascontiguousarray(array)
        if array.dtype.hasobject:
            msg = f"Buffer.from_array: array holds Python objects ({array.dtype}), expected numbers; convert it with np.asarray(..., dtype=...)"
            raise TypeError(msg)
        size = size_in_bytes if size_in_bytes is not None else (array.nbytes + 3) & ~3
        buffer = cls(size, name)
        buffer.upload(array)
        return buffer

    def upload(self, array: Any, offset: int = 0) -> None:
        """Copy ``array``'s bytes (C order) into the buffer at ``offset``."""
        offset = int_argument("Buffer.upload", "offset", offset, minimum=None)
        array = np.ascontiguousarray(array)
        if array.dtype.hasobject:
            msg = f"Buffer.upload: array holds Python objects ({array.dtype}), expected numbers; convert it with np.asarray(..., dtype=...)"
            raise TypeError(msg)
        raw = array.reshape(-1).view(np.uint8)
        if offset < 0 or offset + raw.size > self.size:
            msg = f"uploading {raw.size} bytes at offset {offset} overruns a {self.size}-byte buffer"
            raise ValueError(msg)
        self._data[offset : offset + raw.size] = raw

    def view(self, tensor: DML_TENSOR_DESC | DML_BUFFER_TENSOR_DESC, offset: int = 0, *, writeable: bool = False) -> np.ndarray:
        """The tensor's elements as a strided view of this buffer (no copy)."""
        buf = tensor.buffer if isinstance(tensor, DML_TENSOR_DESC) else tensor
        if not isinstance(buf, DML_BUFFER_TENSOR_DESC):
            msg = f"Buffer.view: tensor is a {type(tensor).__name__}, expected a DML_TENSOR_DESC or DML_BUFFER_TENSOR_DESC"
            raise TypeError(msg)
        offset = int_argument("Buffer.view", "offset", offset)
        return tensor_view(self._data, buf, offset, writeable=writeable)

    def read(self, tensor: DML_TENSOR_DESC | DML_BUFFER_TENSOR_DESC, offset: int = 0) -> np.ndarray:
        """A packed copy of the tensor at ``offset``, honouring its Sizes and Strides."""
        return np.array(self.view(tensor, offset))

    def __repr__(self) -> str:
        return f"Buffer({self.size}{', ' + repr(self.name) if self.name else ''})"


OUT_OF_MEMORY = rule(
    "RESOURCE.OUT_OF_MEMORY",
    "A buffer (a committed ID3D12Resource) is no larger than the memory the host can allocate; a larger one fails with E_OUTOFMEMORY.",
    source="nf-d3d12-id3d12device-createcommittedresource",
)


def _allocate(total: int, size: int, name: str) -> np.ndarray:
    """Zeroed host memory, or E_OUTOFMEMORY as CreateCommittedResource answers, naming the buffer (run() names it after its tensor)."""
    memory = None
    if total <= sys.maxsize:  # beyond the address space NumPy refuses with "Maximum allowed dimension exceeded"
        try:
            memory = np.zeros(total, dtype=np.uint8)
        except (MemoryError, ValueError):
            memory = None
    if memory is None:
        ctx = Checker()
        ctx.fail(OUT_OF_MEMORY, f"Buffer({name!r})" if name else "Buffer", actual=size, expected="a size the host can allocate",
                 message=f"needs {size} bytes ({size / 2**30:.4g} GiB), more than the host could allocate; D3D12 answers E_OUTOFMEMORY")  # fmt: skip
        raise DmlError(HRESULT.E_OUTOFMEMORY, ctx.findings, f"creating a {size}-byte buffer{' for ' + name if name else ''}")
    return memory


def _as_memory(memory: Any, size: int) -> np.ndarray:
    """``memory`` as a 1-D uint8 array over the same bytes, when it can stand for a ``size``-byte buffer."""
    try:
        view = memoryview(memory)
    except (TypeError, ValueError):
        msg = f"Buffer.data takes memory with the buffer protocol (a NumPy array, bytes, bytearray, mmap), not {type(memory).__name__}"
        raise TypeError(msg) from None
    if not view.c_contiguous:
        msg = "Buffer.data takes C-contiguous memory; copy it with np.ascontiguousarray first"
        raise ValueError(msg)
    if view.nbytes != size:
        msg = f"Buffer.data takes exactly {size} bytes (a buffer's size is fixed when it is created); got {view.nbytes}"
        raise ValueError(msg)
    array = np.frombuffer(view, dtype=np.uint8) if size else np.zeros(0, np.uint8)
    if array.ctypes.data % DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT:
        msg = f"Buffer.data takes memory aligned to {DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT} bytes, as every bound tensor's offset is"
        raise ValueError(msg)
    return array


def tensor_view(memory: np.ndarray, buf: DML_BUFFER_TENSOR_DESC, offset: int = 0, *, writeable: bool = False) -> np.ndarray:
    """``as_strided(memory[offset:], Sizes, Strides * itemsize)``, after checking it stays in bounds."""
    dtype = numpy_dtype(buf.DataType)
    sizes = tuple(buf.Sizes or ())
    strides = buf.element_strides
    extent = (sum((s - 1) * st for s, st in zip(sizes, strides, strict=True)) + 1) * dtype.itemsize
    if offset < 0 or offset + extent > memory.size:
        msg = f"a {fmt(sizes)} tensor with strides {fmt(strides)} at offset {offset} needs {extent} bytes; only {memory.size - offset} remain"
        raise ValueError(msg)
    base = memory[offset : offset + extent].view(dtype) if extent % dtype.itemsize == 0 else None
    assert base is not None
    return as_strided(base, sizes, tuple(st * dtype.itemsize for st in strides), writeable=writeable)


@dataclass
class DML_BUFFER_BINDING:  # noqa: N801 - the C name
    Buffer: Buffer | None = None
    Offset: int = 0
    SizeInBytes: int = 0


@dataclass
class DML_BUFFER_ARRAY_BINDING:  # noqa: N801 - the C name
    BindingCount: int = 0
    Bindings: Sequence[DML_BUFFER_BINDING] | None = None


@dataclass
class DML_BINDING_DESC:  # noqa: N801 - the C name
    Type: DML_BINDING_TYPE | int = DML_BINDING_TYPE.NONE
    Desc: DML_BUFFER_BINDING | DML_BUFFER_ARRAY_BINDING | None = None


@dataclass(frozen=True)
class DML_BINDING_PROPERTIES:  # noqa: N801 - the C name
    RequiredDescriptorCount: int
    TemporaryResourceSize: int
    PersistentResourceSize: int

    def _repr_html_(self) -> str:
        from dmlpy.display import properties_html  # noqa: PLC0415 - display sits above binding

        return properties_html(self)


@dataclass
class DML_BINDING_TABLE_DESC:  # noqa: N801 - the C name
    """Where a binding table writes its descriptors: ``SizeInDescriptors`` slots of a descriptor heap from
    ``CPUDescriptorHandle`` / ``GPUDescriptorHandle`` (the same slot of one heap, as
    ``heap.cpu_handle(i)`` and ``heap.gpu_handle(i)`` give them). Both left 0 means no heap: dmlpy then
    gives the table descriptors of its own (a convenience; on Windows the handles must come from a
    shader-visible CBV_SRV_UAV heap).

    https://learn.microsoft.com/windows/win32/api/directml/ns-directml-dml_binding_table_desc
    """

    Dispatchable: Any = None
    CPUDescriptorHandle: D3D12_CPU_DESCRIPTOR_HANDLE | int = 0
    GPUDescriptorHandle: D3D12_GPU_DESCRIPTOR_HANDLE | int = 0
    SizeInDescriptors: int = 0


# ---------------------------------------------------------------------------------------
# Descriptor heaps


@dataclass(frozen=True)
class D3D12_CPU_DESCRIPTOR_HANDLE:  # noqa: N801 - the C name
    """A CPU descriptor handle: slot ``index`` of ``heap`` (in C, a pointer-sized address into the heap)."""

    heap: DescriptorHeap
    index: int = 0

    def offset(self, count: int) -> D3D12_CPU_DESCRIPTOR_HANDLE:
        """The handle ``count`` slots further (CD3DX12_CPU_DESCRIPTOR_HANDLE::Offset with the heap's increment)."""
        return type(self)(self.heap, self.index + int_argument("offset", "count", count, minimum=None))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.heap.name or 'heap'}[{self.index}])"


@dataclass(frozen=True, repr=False)
class D3D12_GPU_DESCRIPTOR_HANDLE(D3D12_CPU_DESCRIPTOR_HANDLE):  # noqa: N801 - the C name
    """A GPU descriptor handle: slot ``index`` of a shader-visible ``heap``."""


class DescriptorHeap:
    """An ID3D12DescriptorHeap of type CBV_SRV_UAV, shader visible: ``num_descriptors`` slots that binding
    tables write their descriptors into. Each live table owns its range of slots; the command list that
    records a dispatch with the table must have the heap set (``CommandList.set_descriptor_heaps``)."""

    __slots__ = ("__weakref__", "_device", "_num_descriptors", "_tables", "name")

    def __init__(self, device: Any, num_descriptors: int, name: str = "") -> None:
        self._device = device
        self._num_descriptors = int_argument("CreateDescriptorHeap", "num_descriptors", num_descriptors, minimum=1)
        self._tables: weakref.WeakSet[Any] = weakref.WeakSet()  # the live binding tables with a range here
        self.name = name

    @property
    def device(self) -> Any:
        return self._device

    @property
    def num_descriptors(self) -> int:
        return self._num_descriptors

    def cpu_handle(self, index: int = 0) -> D3D12_CPU_DESCRIPTOR_HANDLE:
        """The CPU handle of slot ``index`` (GetCPUDescriptorHandleForHeapStart, offset by ``index``)."""
        return D3D12_CPU_DESCRIPTOR_HANDLE(self, int_argument("cpu_handle", "index", index))

    def gpu_handle(self, index: int = 0) -> D3D12_GPU_DESCRIPTOR_HANDLE:
        """The GPU handle of slot ``index`` (GetGPUDescriptorHandleForHeapStart, offset by ``index``)."""
        return D3D12_GPU_DESCRIPTOR_HANDLE(self, int_argument("gpu_handle", "index", index))

    def GetCPUDescriptorHandleForHeapStart(self) -> D3D12_CPU_DESCRIPTOR_HANDLE:  # noqa: N802 - the C name
        return self.cpu_handle(0)

    def GetGPUDescriptorHandleForHeapStart(self) -> D3D12_GPU_DESCRIPTOR_HANDLE:  # noqa: N802 - the C name
        return self.gpu_handle(0)

    def __repr__(self) -> str:
        return f"<dmlpy.DescriptorHeap {self.name + ' ' if self.name else ''}{self._num_descriptors} descriptors, {len(self._tables)} tables>"


HEAP_HANDLE_TYPE = rule("HEAP.HANDLE_TYPE", "CPUDescriptorHandle is a D3D12_CPU_DESCRIPTOR_HANDLE and GPUDescriptorHandle a D3D12_GPU_DESCRIPTOR_HANDLE of a descriptor heap (or both 0: no heap).",
                        source="ns-directml-dml_binding_table_desc")  # fmt: skip
HEAP_HANDLES_AGREE = rule("HEAP.HANDLES_AGREE", "The CPU and GPU handles of a binding table name the same slot of the same heap.", source="ns-directml-dml_binding_table_desc")
HEAP_RANGE = rule("HEAP.RANGE_IN_HEAP", "A binding table's SizeInDescriptors slots from its handles lie inside the descriptor heap.", source="ns-directml-dml_binding_table_desc")
HEAP_DEVICE = rule("HEAP.WRONG_DEVICE", "A binding table's descriptor heap was made on the table's device.", source="ns-directml-dml_binding_table_desc")
HEAP_TABLE_OVERLAP = rule(
    "HEAP.TABLE_OVERLAP",
    "Two live binding tables do not write overlapping descriptor ranges of one heap (the later one overwrites the earlier one's descriptors; fine only once the earlier table is no longer used).",
    source="dml-binding", severity=Severity.WARNING,
)  # fmt: skip


def table_heap_range(ctx: Checker, desc: DML_BINDING_TABLE_DESC, device: Any) -> tuple[DescriptorHeap, int, int] | None:
    """``(heap, first, end)`` of the descriptor slots a table desc names, None for no heap (both handles 0) or a finding."""
    cpu, gpu, path = desc.CPUDescriptorHandle, desc.GPUDescriptorHandle, "DML_BINDING_TABLE_DESC"
    if isinstance(cpu, int) and not isinstance(cpu, bool) and isinstance(gpu, int) and not isinstance(gpu, bool) and cpu == 0 and gpu == 0:
        return None
    good_cpu = type(cpu) is D3D12_CPU_DESCRIPTOR_HANDLE
    good_gpu = type(gpu) is D3D12_GPU_DESCRIPTOR_HANDLE
    if not ctx.check(good_cpu, HEAP_HANDLE_TYPE, f"{path}.CPUDescriptorHandle", actual=type(cpu).__name__, expected="D3D12_CPU_DESCRIPTOR_HANDLE (heap.cpu_handle(i))") or \
            not ctx.check(good_gpu, HEAP_HANDLE_TYPE, f"{path}.GPUDescriptorHandle", actual=type(gpu).__name__, expected="D3D12_GPU_DESCRIPTOR_HANDLE (heap.gpu_handle(i))"):  # fmt: skip
        return None
    if not ctx.check(cpu.heap is gpu.heap and cpu.index == gpu.index, HEAP_HANDLES_AGREE, f"{path}.GPUDescriptorHandle", actual=repr(gpu), expected=f"the slot of {cpu!r}",
                     message=f"is {gpu!r}, but CPUDescriptorHandle is {cpu!r}: both must name the same slot of one heap"):  # fmt: skip
        return None
    heap = cpu.heap
    if not ctx.check(heap.device is device, HEAP_DEVICE, f"{path}.CPUDescriptorHandle", actual="a heap of another device", expected="a heap of this device"):
        return None
    size = int(desc.SizeInDescriptors)
    end = cpu.index + size
    if not ctx.check(cpu.index >= 0 and end <= heap.num_descriptors, HEAP_RANGE, f"{path}.SizeInDescriptors", actual=f"slots [{cpu.index}, {end})", expected=f"inside [0, {heap.num_descriptors})",
                     message=f"asks for slots [{cpu.index}, {end}) of a heap of {heap.num_descriptors} descriptors"):  # fmt: skip
        return None
    return heap, cpu.index, end


def buffer_binding(buffer: Buffer | None, offset: int = 0, size_in_bytes: int | None = None) -> DML_BINDING_DESC:
    """A BUFFER binding desc; the size defaults to the rest of the buffer. ``None`` gives NONE."""
    if buffer is None:
        return DML_BINDING_DESC()
    if not isinstance(buffer, Buffer):
        msg = f"buffer_binding: buffer is a {type(buffer).__name__}, expected a dmlpy Buffer (or None for NONE)"
        raise TypeError(msg)
    offset = int_argument("buffer_binding", "offset", offset, minimum=None)  # a bad range is BindInputs' to report
    size = buffer.size - offset if size_in_bytes is None else int_argument("buffer_binding", "size_in_bytes", size_in_bytes, minimum=None)
    return DML_BINDING_DESC(DML_BINDING_TYPE.BUFFER, DML_BUFFER_BINDING(buffer, offset, size))


def array_binding(bindings: Sequence[DML_BUFFER_BINDING | DML_BINDING_DESC | None]) -> DML_BINDING_DESC:
    """A BUFFER_ARRAY binding desc for an initializer (one entry per operator input)."""
    if isinstance(bindings, (str, bytes)) or not isinstance(bindings, Sequence):
        msg = f"array_binding: bindings is a {type(bindings).__name__}, expected a list with one entry per operator input"
        raise TypeError(msg)
    entries = []
    for b in bindings:
        if isinstance(b, DML_BINDING_DESC):
            b = b.Desc if isinstance(b.Desc, DML_BUFFER_BINDING) else DML_BUFFER_BINDING()
        entries.append(b if b is not None else DML_BUFFER_BINDING())
    return DML_BINDING_DESC(DML_BINDING_TYPE.BUFFER_ARRAY, DML_BUFFER_ARRAY_BINDING(len(entries), entries))


# ---------------------------------------------------------------------------------------
# What a dispatchable tells its binding table


@dataclass(frozen=True)
class Slot:
    """One binding slot: which tensor it carries and how it must be bound."""

    name: str
    tensor: DML_BUFFER_TENSOR_DESC | None  # None: an optional tensor the desc leaves out
    optional: bool = False
    owned: bool = False  # OWNED_BY_DML: bound at initialize, NONE at execute
    # initializer slots: inputs carry a whole operator's inputs as a BUFFER_ARRAY, outputs
    # are the target's persistent resource
    array: tuple[Slot, ...] | None = None
    is_resource: bool = False
    resource_size: int = 0
    ignored: bool = False  # a graph input no edge reads: any binding (or NONE) is accepted


class Dispatchable(Protocol):
    name: str

    def input_slots(self) -> list[Slot]: ...
    def output_slots(self) -> list[Slot]: ...
    def get_binding_properties(self) -> DML_BINDING_PROPERTIES: ...


class DeviceLike(Protocol):
    def remove(self, findings: list[Finding], summary: str) -> None: ...
    def check_alive(self) -> None: ...
    def check_binding_table_desc(self, desc: DML_BINDING_TABLE_DESC) -> tuple[DescriptorHeap, int, int] | None: ...


@dataclass(frozen=True)
class BoundRange:
    """A checked buffer range: ``[Offset, Offset + SizeInBytes)`` of ``buffer``."""

    buffer: Buffer
    offset: int
    size: int

    def memory(self) -> np.ndarray:
        return self.buffer._data[self.offset : self.offset + self.size]  # noqa: SLF001 - the buffer's own memory, not a view a caller could retype

    def take(self, ctx: Checker, path: str, start: int = 0, size: int | None = None, *, writable: bool) -> np.ndarray | None:
        """Bytes ``[start, start + size)`` of the range as the buffer holds them now, or None with a finding.

        Called just before a kernel runs, so a buffer whose data was replaced since binding is checked
        on the memory the kernel will really get.
        """
        size = self.size - start if size is None else size
        if start < 0 or start + size > self.size:
            ctx.fail(SIZE_TOO_SMALL, f"{path}.SizeInBytes", actual=self.size, expected=f">= {start + size}",
                     message=f"is {self.size}, but the dispatch needs bytes [{start}, {start + size}) of it")  # fmt: skip
            return None
        memory = self.buffer._data[self.offset + start : self.offset + start + size]  # noqa: SLF001
        if writable and not memory.flags.writeable:
            _check_writable(ctx, self, path)
            return None
        return memory

    def overlaps(self, other: BoundRange, size: int | None = None, other_size: int | None = None) -> bool:
        mine = self.size if size is None else size
        theirs = other.size if other_size is None else other_size
        return self.buffer is other.buffer and self.offset < other.offset + theirs and other.offset < self.offset + mine


# ---------------------------------------------------------------------------------------
# Rules of DirectML's binding documentation

INPUT_COUNT = rule("BINDING.INPUT_COUNT", "BindInputs gets exactly one binding per input slot, optional slots included.", source="nf-directml-idmlbindingtable-bindinputs")
OUTPUT_COUNT = rule("BINDING.OUTPUT_COUNT", "BindOutputs gets exactly one binding per output slot, optional slots included.", source="nf-directml-idmlbindingtable-bindoutputs")
BINDING_TYPE = rule("BINDING.TYPE", "A binding is NONE or BUFFER; BUFFER_ARRAY only for initializer inputs, one per target operator.", source="ns-directml-dml_binding_desc; dml-binding")
UNBOUND = rule("BINDING.TENSOR_UNBOUND", "Every tensor the desc describes is bound (an optional tensor whose desc is given is required too).", source="dml-binding; docs/deviations.md")
ABSENT_BOUND = rule("BINDING.ABSENT_TENSOR_BOUND", "A slot whose tensor desc is NULL takes DML_BINDING_TYPE_NONE.", source="nf-directml-idmlbindingtable-bindinputs")
OWNED_AT_EXECUTE = rule("BINDING.OWNED_INPUT_AT_EXECUTE", "An OWNED_BY_DML input is bound at initialize and takes NONE at execute.", source="ne-directml-dml_tensor_flags")
NOT_OWNED_AT_INIT = rule("BINDING.UNOWNED_INPUT_AT_INITIALIZE", "An initializer binds only the OWNED_BY_DML inputs; the other entries are empty.", source="dml-binding")
SIZE_TOO_SMALL = rule("BINDING.SIZE_TOO_SMALL", "SizeInBytes is at least the tensor's TotalTensorSizeInBytes.", source="ns-directml-dml_buffer_binding")
RANGE_OUTSIDE = rule("BINDING.RANGE_OUTSIDE_BUFFER", "[Offset, Offset + SizeInBytes) lies inside the buffer.", source="ns-directml-dml_buffer_binding")
OFFSET_ALIGNMENT = rule("BINDING.OFFSET_ALIGNMENT", "A tensor binding's Offset is a multiple of 16 and of GuaranteedBaseOffsetAlignment.", source="ns-directml-dml_buffer_binding; DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT")
BUFFER_SIZE_ALIGNMENT = rule("BINDING.BUFFER_SIZE_ALIGNMENT", "A bound buffer's total size is a multiple of 4 bytes (DWORD-aligned).", source="dml-helper-functions")
NULL_BUFFER_DESC = rule("BINDING.DESC_NULL", "A BUFFER binding points at a DML_BUFFER_BINDING with a buffer.", source="ns-directml-dml_binding_desc")
ARRAY_COUNT = rule("BINDING.ARRAY_COUNT", "An initializer's BUFFER_ARRAY has one entry per input of its operator (or is empty when nothing is owned).", source="dml-binding")
RESOURCE_ALIGNMENT = rule("BINDING.RESOURCE_OFFSET_ALIGNMENT", "Temporary and persistent bindings start at a multiple of 256 bytes.", source="DML_TEMPORARY_BUFFER_ALIGNMENT, DML_PERSISTENT_BUFFER_ALIGNMENT")
RESOURCE_TOO_SMALL = rule("BINDING.RESOURCE_TOO_SMALL", "A temporary or persistent binding is at least the binding properties' size.", source="nf-directml-idmlbindingtable-bindtemporaryresource")
OUTPUT_OVERLAP = rule("BINDING.OUTPUT_OVERLAP", "The writable ranges [Offset, Offset + TotalTensorSizeInBytes) of outputs do not overlap.", source="dml-binding")
INPUT_OUTPUT_OVERLAP = rule("BINDING.INPUT_OUTPUT_OVERLAP", "An output's writable range does not overlap an input's range, unless the operator executes in place with identical layout and offset.", source="dml-binding")
READ_ONLY = rule("BINDING.READ_ONLY_BUFFER", "Outputs, temporary and persistent resources are bound to writable memory (a Buffer whose data is not read-only).", source="dml-binding")
SAME_RESOURCE = rule("BINDING.INPUT_OUTPUT_SAME_RESOURCE", "An input and an output share one resource in disjoint ranges (DirectML documents no resource may be both; UNCONFIRMED for disjoint ranges).", source="dml-binding", severity=Severity.WARNING)


class BindingTable:
    """IDMLBindingTable: where inputs, outputs and resources are bound for one dispatchable."""

    __slots__ = ("__weakref__", "_desc", "_device", "_heap_range", "_input_slots", "_inputs", "_output_slots", "_outputs", "_persistent", "_temporary", "_warnings")

    def __init__(self, device: DeviceLike, desc: DML_BINDING_TABLE_DESC, heap_range: tuple[DescriptorHeap, int, int] | None = None) -> None:
        self._device = device
        self._desc = copy.copy(desc)
        self._heap_range: tuple[DescriptorHeap, int, int] | None = None
        self._inputs: list[BoundRange | list[BoundRange | None] | None] | None = None
        self._outputs: list[BoundRange | None] | None = None
        self._input_slots: list[Slot] | None = None  # the slots the bindings were checked against
        self._output_slots: list[Slot] | None = None
        self._temporary: BoundRange | None = None
        self._persistent: BoundRange | None = None
        self._warnings: list[Finding] = []
        self._take_heap_range(heap_range)

    @property
    def heap(self) -> DescriptorHeap | None:
        """The descriptor heap the table's descriptors live in (None: dmlpy's own, for handles left 0)."""
        return None if self._heap_range is None else self._heap_range[0]

    def _take_heap_range(self, heap_range: tuple[DescriptorHeap, int, int] | None) -> None:
        """Own ``heap_range``'s slots, warning when a live table of the same heap owns some of them too."""
        if self._heap_range is not None:
            self._heap_range[0]._tables.discard(self)  # noqa: SLF001
        self._heap_range = heap_range
        if heap_range is None:
            return
        heap, first, end = heap_range
        ctx = Checker()
        for other in list(heap._tables):  # noqa: SLF001
            _, other_first, other_end = other._heap_range
            if first < other_end and other_first < end:
                ctx.fail(HEAP_TABLE_OVERLAP, "DML_BINDING_TABLE_DESC.CPUDescriptorHandle", actual=f"slots [{first}, {end})",
                         expected=f"slots outside [{other_first}, {other_end}), which the table for {getattr(other.dispatchable, 'name', '?')} holds",
                         message=f"takes slots [{first}, {end}) of {heap!r}, overlapping [{other_first}, {other_end}) of the live table for "
                         f"{getattr(other.dispatchable, 'name', '?')}: whichever binds last overwrites the other's descriptors")  # fmt: skip
        heap._tables.add(self)  # noqa: SLF001
        self._warnings.extend(ctx.findings)
        for finding in ctx.findings:
            warnings.warn(DmlWarning(finding), stacklevel=4)

    # What the table holds is read-only: it was checked when bound, and only Bind* and Reset change it.

    @property
    def desc(self) -> DML_BINDING_TABLE_DESC:
        return copy.copy(self._desc)

    @property
    def dispatchable(self) -> Dispatchable:
        return self._desc.Dispatchable  # type: ignore[no-any-return]

    @property
    def inputs(self) -> tuple[BoundRange | tuple[BoundRange | None, ...] | None, ...] | None:
        return None if self._inputs is None else tuple(tuple(b) if isinstance(b, list) else b for b in self._inputs)

    @property
    def outputs(self) -> tuple[BoundRange | None, ...] | None:
        return None if self._outputs is None else tuple(self._outputs)

    @property
    def temporary(self) -> BoundRange | None:
        return self._temporary

    @property
    def persistent(self) -> BoundRange | None:
        return self._persistent

    @property
    def warnings(self) -> list[Finding]:
        return list(self._warnings)

    def bound_for_current_slots(self) -> bool:
        """Whether every binding was checked against the slots the dispatchable has now (IDMLOperatorInitializer::Reset changes them)."""
        current = self.dispatchable
        return (self._inputs is None or self._input_slots == current.input_slots()) and (self._outputs is None or self._output_slots == current.output_slots())

    def add_warnings(self, findings: Iterable[Finding]) -> None:
        self._warnings.extend(findings)

    def reset(self, desc: DML_BINDING_TABLE_DESC | None = None) -> None:
        """IDMLBindingTable::Reset: clear every binding, optionally re-target."""
        self._device.check_alive()
        if desc is not None and not isinstance(desc, DML_BINDING_TABLE_DESC):
            msg = f"IDMLBindingTable::Reset: desc is a {type(desc).__name__}, expected a DML_BINDING_TABLE_DESC (or None)"
            raise TypeError(msg)
        if desc is not None:
            heap_range = self._device.check_binding_table_desc(desc)
            self._desc = copy.copy(desc)
            self._take_heap_range(heap_range)
        self._inputs = self._outputs = None
        self._input_slots = self._output_slots = None
        self._temporary = self._persistent = None

    # --- the four Bind* methods -------------------------------------------------------

    def bind_inputs(self, bindings: Sequence[DML_BINDING_DESC] | None) -> None:
        self._device.check_alive()
        _require_binding_descs(bindings, "BindInputs")
        if not bindings:
            self._inputs = self._input_slots = None
            return
        ctx = Checker()
        slots = self.dispatchable.input_slots()
        root = f"{self.dispatchable.name}.BindInputs"
        if not ctx.check(len(bindings) == len(slots), INPUT_COUNT, root, actual=len(bindings), expected=len(slots),
                         message=f"got {len(bindings)} bindings, expected {len(slots)}: {', '.join(s.name for s in slots)}"):  # fmt: skip
            self._remove(ctx, "BindInputs")
        ranges = [self._check_input(ctx, slot, b, f"{root}[{i}] ({slot.name})") for i, (slot, b) in enumerate(zip(slots, bindings, strict=True))]
        self._remove(ctx, "BindInputs")
        self._inputs, self._input_slots = ranges, slots

    def bind_outputs(self, bindings: Sequence[DML_BINDING_DESC] | None) -> None:
        self._device.check_alive()
        _require_binding_descs(bindings, "BindOutputs")
        if not bindings:
            self._outputs = self._output_slots = None
            return
        ctx = Checker()
        slots = self.dispatchable.output_slots()
        root = f"{self.dispatchable.name}.BindOutputs"
        if not ctx.check(len(bindings) == len(slots), OUTPUT_COUNT, root, actual=len(bindings), expected=len(slots),
                         message=f"got {len(bindings)} bindings, expected {len(slots)}: {', '.join(s.name for s in slots)}"):  # fmt: skip
            self._remove(ctx, "BindOutputs")
        ranges: list[BoundRange | None] = []
        for i, (slot, b) in enumerate(zip(slots, bindings, strict=True)):
            path = f"{root}[{i}] ({slot.name})"
            if slot.is_resource:
                ranges.append(self._check_resource(ctx, b, path, slot.resource_size, DML_PERSISTENT_BUFFER_ALIGNMENT, required=slot.resource_size > 0))
            else:
                bound = self._check_tensor_binding(ctx, slot, b, path)
                ranges.append(bound if bound is None or _check_writable(ctx, bound, path) else None)
        self._check_output_overlaps(ctx, slots, ranges, root)
        self._remove(ctx, "BindOutputs")
        self._outputs, self._output_slots = ranges, slots

    def bind_temporary_resource(self, binding: DML_BINDING_DESC | None) -> None:
        self._device.check_alive()
        _require_binding_descs(None if binding is None else [binding], "BindTemporaryResource")
        ctx = Checker()
        size = self.dispatchable.get_binding_properties().TemporaryResourceSize
        self._temporary = self._check_resource(ctx, binding, f"{self.dispatchable.name}.BindTemporaryResource", size, DML_TEMPORARY_BUFFER_ALIGNMENT, required=False)
        self._remove(ctx, "BindTemporaryResource")

    def bind_persistent_resource(self, binding: DML_BINDING_DESC | None) -> None:
        self._device.check_alive()
        _require_binding_descs(None if binding is None else [binding], "BindPersistentResource")
        ctx = Checker()
        size = self.dispatchable.get_binding_properties().PersistentResourceSize
        self._persistent = self._check_resource(ctx, binding, f"{self.dispatchable.name}.BindPersistentResource", size, DML_PERSISTENT_BUFFER_ALIGNMENT, required=False)
        self._remove(ctx, "BindPersistentResource")

    # --- checks -----------------------------------------------------------------------

    def _remove(self, ctx: Checker, method: str) -> None:
        errors = [f for f in ctx.findings if f.severity is Severity.ERROR]
        self._warnings.extend(f for f in ctx.findings if f.severity is Severity.WARNING)
        if errors:
            self._device.remove(errors, f"IDMLBindingTable::{method} broke a binding rule; DirectML removes the device")

    def _check_input(self, ctx: Checker, slot: Slot, binding: DML_BINDING_DESC, path: str) -> BoundRange | list[BoundRange | None] | None:
        if slot.array is not None:
            return self._check_array(ctx, slot, binding, path)
        if slot.owned:
            ctx.check(_is_none(binding), OWNED_AT_EXECUTE, path, actual=_kind(binding), expected="NONE",
                      message="is bound, but the tensor is OWNED_BY_DML: bind it to the operator initializer, and NONE at execute")  # fmt: skip
            return None
        return self._check_tensor_binding(ctx, slot, binding, path)

    def _check_array(self, ctx: Checker, slot: Slot, binding: DML_BINDING_DESC, path: str) -> list[BoundRange | None] | None:
        assert slot.array is not None
        owned = [s.owned for s in slot.array]
        if _is_none(binding):
            ctx.check(not any(owned), UNBOUND, path, actual="NONE", expected="a BUFFER_ARRAY with the OWNED_BY_DML inputs",
                      message="is NONE, but this operator has OWNED_BY_DML inputs to initialize")  # fmt: skip
            return None
        if not ctx.check(binding.Type == DML_BINDING_TYPE.BUFFER_ARRAY and isinstance(binding.Desc, DML_BUFFER_ARRAY_BINDING), BINDING_TYPE, f"{path}.Type",
                         actual=_kind(binding), expected="DML_BINDING_TYPE_BUFFER_ARRAY"):  # fmt: skip
            return None
        assert isinstance(binding.Desc, DML_BUFFER_ARRAY_BINDING)
        entries = list(binding.Desc.Bindings or ())[: binding.Desc.BindingCount]
        if not entries and not any(owned):
            return None
        if not ctx.check(len(entries) == len(slot.array) and binding.Desc.BindingCount == len(entries), ARRAY_COUNT, f"{path}.BindingCount",
                         actual=binding.Desc.BindingCount, expected=len(slot.array)):  # fmt: skip
            return None
        result: list[BoundRange | None] = []
        for j, (inner, entry) in enumerate(zip(slot.array, entries, strict=True)):
            entry_desc = DML_BINDING_DESC(DML_BINDING_TYPE.BUFFER, entry) if entry is not None and entry.Buffer is not None else DML_BINDING_DESC()
            entry_path = f"{path}.Bindings[{j}] ({inner.name})"
            if inner.owned:
                result.append(self._check_tensor_binding(ctx, inner, entry_desc, entry_path))
            else:
                ctx.check(_is_none(entry_desc), NOT_OWNED_AT_INIT, entry_path, actual="a buffer", expected="an empty entry",
                          message="is bound at initialize, but the tensor is not OWNED_BY_DML: bind it at execute instead")  # fmt: skip
                result.append(None)
        return result

    def _check_tensor_binding(self, ctx: Checker, slot: Slot, binding: DML_BINDING_DESC, path: str) -> BoundRange | None:
        if slot.ignored:
            return None
        if slot.tensor is None:
            ctx.check(_is_none(binding), ABSENT_BOUND, path, actual=_kind(binding), expected="NONE",
                      message="is bound, but the desc leaves this optional tensor out (NULL); bind DML_BINDING_TYPE_NONE")  # fmt: skip
            return None
        if _is_none(binding):
            ctx.fail(UNBOUND, path, actual="NONE", expected="a BUFFER binding",
                     message="is NONE, but the desc describes this tensor" + (" (an optional tensor with a desc must be bound)" if slot.optional else ""))  # fmt: skip
            return None
        bound = self._check_buffer_binding(ctx, binding, path)
        if bound is None:
            return None
        need = slot.tensor.TotalTensorSizeInBytes
        ok = ctx.check(bound.size >= need, SIZE_TOO_SMALL, f"{path}.SizeInBytes", actual=bound.size, expected=f">= {need}", why="",
                       message=f"is {bound.size}, expected at least TotalTensorSizeInBytes = {need}")  # fmt: skip
        alignment = max(DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT, slot.tensor.GuaranteedBaseOffsetAlignment or 0)
        ok &= ctx.check(bound.offset % alignment == 0, OFFSET_ALIGNMENT, f"{path}.Offset", actual=bound.offset, expected=f"a multiple of {alignment}",
                        message=f"is {bound.offset}, expected a multiple of {alignment}" + (" (GuaranteedBaseOffsetAlignment)" if alignment > DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT else " (DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT)"))  # fmt: skip
        return bound if ok else None

    def _check_buffer_binding(self, ctx: Checker, binding: DML_BINDING_DESC, path: str) -> BoundRange | None:
        if not ctx.check(binding.Type == DML_BINDING_TYPE.BUFFER, BINDING_TYPE, f"{path}.Type", actual=_kind(binding), expected="DML_BINDING_TYPE_BUFFER"):
            return None
        desc = binding.Desc
        if not ctx.check(isinstance(desc, DML_BUFFER_BINDING) and isinstance(desc.Buffer, Buffer), NULL_BUFFER_DESC, f"{path}.Desc", actual=repr(desc), expected="a DML_BUFFER_BINDING with a Buffer"):
            return None
        assert isinstance(desc, DML_BUFFER_BINDING) and desc.Buffer is not None
        offset, size, total = _as_int(desc.Offset), _as_int(desc.SizeInBytes), desc.Buffer.size
        if offset is None or size is None:
            ctx.fail(RANGE_OUTSIDE, path, actual=f"Offset={desc.Offset!r}, SizeInBytes={desc.SizeInBytes!r}", expected="unsigned 64-bit integers",
                     message=f"has Offset {desc.Offset!r} and SizeInBytes {desc.SizeInBytes!r}; both must be unsigned 64-bit integers")  # fmt: skip
            return None
        if not ctx.check(offset + size <= total, RANGE_OUTSIDE, path, actual=f"[{offset}, {offset + size})", expected=f"inside [0, {total})",
                         message=f"covers [{offset}, {offset + size}), outside the {total}-byte buffer"):  # fmt: skip
            return None
        if not ctx.check(total % 4 == 0, BUFFER_SIZE_ALIGNMENT, f"{path}.Buffer", actual=total, expected="a multiple of 4", message=f"is {total} bytes, not a multiple of 4"):
            return None
        return BoundRange(desc.Buffer, offset, size)

    def _check_resource(self, ctx: Checker, binding: DML_BINDING_DESC | None, path: str, size: int, alignment: int, *, required: bool) -> BoundRange | None:
        if binding is None or _is_none(binding):
            ctx.check(not required, UNBOUND, path, actual="NONE", expected=f"a BUFFER of at least {size} bytes", message=f"is NONE, but {size} bytes are required")
            return None
        bound = self._check_buffer_binding(ctx, binding, path)
        if bound is None:
            return None
        ok = ctx.check(bound.offset % alignment == 0, RESOURCE_ALIGNMENT, f"{path}.Offset", actual=bound.offset, expected=f"a multiple of {alignment}")
        ok &= ctx.check(bound.size >= size, RESOURCE_TOO_SMALL, f"{path}.SizeInBytes", actual=bound.size, expected=f">= {size}", message=f"is {bound.size}, expected at least {size} (binding properties)")
        ok = ok and _check_writable(ctx, bound, path)
        return bound if ok else None

    def _check_output_overlaps(self, ctx: Checker, slots: list[Slot], ranges: list[BoundRange | None], root: str) -> None:
        for i, a in enumerate(ranges):
            for j in range(i):
                b = ranges[j]
                if a is None or b is None:
                    continue
                size_a = slots[i].tensor.TotalTensorSizeInBytes if slots[i].tensor else a.size
                size_b = slots[j].tensor.TotalTensorSizeInBytes if slots[j].tensor else b.size
                ctx.check(not a.overlaps(b, size_a, size_b), OUTPUT_OVERLAP, f"{root}[{i}] ({slots[i].name})", actual=f"[{a.offset}, {a.offset + size_a})",
                          expected=f"no overlap with output {j}", message=f"writes [{a.offset}, {a.offset + size_a}), which overlaps output {j} ({slots[j].name}) at [{b.offset}, {b.offset + size_b})")  # fmt: skip

    def check_input_output_overlaps(self, ctx: Checker, in_place: bool) -> None:
        """Outputs may not write where inputs are read (checked once both are bound)."""
        if not self._inputs or not self._outputs:
            return
        in_slots, out_slots = self.dispatchable.input_slots(), self.dispatchable.output_slots()
        for j, (out_slot, out) in enumerate(zip(out_slots, self._outputs, strict=True)):
            if out is None or out_slot.tensor is None:
                continue
            writable = out_slot.tensor.TotalTensorSizeInBytes
            for i, (in_slot, inp) in enumerate(zip(in_slots, self._inputs, strict=True)):
                if not isinstance(inp, BoundRange):
                    continue
                path = f"{self.dispatchable.name}.BindOutputs[{j}] ({out_slot.name})"
                if out.overlaps(inp, writable, inp.size):
                    same_layout = in_place and in_slot.tensor == out_slot.tensor and inp.offset == out.offset
                    ctx.check(same_layout, INPUT_OUTPUT_OVERLAP, path, actual=f"[{out.offset}, {out.offset + writable})", expected=f"no overlap with input {i}",
                              message=f"writes [{out.offset}, {out.offset + writable}), which overlaps input {i} ({in_slot.name}) at [{inp.offset}, {inp.offset + inp.size})")  # fmt: skip
                elif out.buffer is inp.buffer:
                    ctx.fail(SAME_RESOURCE, path, actual=repr(out.buffer), expected="separate resources",
                             message=f"shares its buffer with input {i} ({in_slot.name}) in a disjoint range; DirectML documents that no resource may be bound as both input and output")  # fmt: skip


def current_memory(ranges: Iterable[BoundRange | None]) -> tuple[np.ndarray | None, ...]:
    """The arrays the ranges' buffers hold now. While they are the same objects, memory taken from them
    earlier is still what the buffers hold, and still passes the checks it passed then."""
    return tuple([None if r is None else r.buffer._data for r in ranges])  # noqa: SLF001 - runs at every execute


def same_memory(a: tuple[np.ndarray | None, ...] | None, b: tuple[np.ndarray | None, ...]) -> bool:
    if a is None or len(a) != len(b):
        return False
    for x, y in zip(a, b):  # noqa: B905 - lengths compared above
        if x is not y:
            return False
    return True


def _check_writable(ctx: Checker, bound: BoundRange, path: str) -> bool:
    return ctx.check(bool(bound.buffer._data.flags.writeable), READ_ONLY, path, actual=f"read-only memory in {bound.buffer!r}", expected="writable memory",
                     message=f"is bound to {bound.buffer!r}, whose data is read-only; a kernel writes here, so give the buffer writable memory")  # fmt: skip


def _require_binding_descs(bindings: Any, method: str) -> None:
    """What C's type system would refuse: Bind* takes DML_BINDING_DESC structs."""
    if bindings is None:
        return
    if not isinstance(bindings, (list, tuple)):
        msg = f"{method} takes a list of DML_BINDING_DESC, not {type(bindings).__name__}"
        raise TypeError(msg)
    for i, binding in enumerate(bindings):
        if binding is not None and not isinstance(binding, DML_BINDING_DESC):
            msg = f"{method}[{i}] is a {type(binding).__name__}, expected a DML_BINDING_DESC (or None for NONE)"
            raise TypeError(msg)
        if binding is not None and binding.Desc is not None and not isinstance(binding.Desc, (DML_BUFFER_BINDING, DML_BUFFER_ARRAY_BINDING)):
            msg = f"{method}[{i}].Desc is a {type(binding.Desc).__name__}, expected a DML_BUFFER_BINDING or DML_BUFFER_ARRAY_BINDING"
            raise TypeError(msg)
        if isinstance(binding.Desc if binding is not None else None, DML_BUFFER_ARRAY_BINDING):
            entries = binding.Desc.Bindings  # type: ignore[union-attr]
            if entries is not None and (not isinstance(entries, (list, tuple)) or not all(e is None or isinstance(e, DML_BUFFER_BINDING) for e in entries)):
                msg = f"{method}[{i}].Desc.Bindings must be a list of DML_BUFFER_BINDING"
                raise TypeError(msg)


def _is_none(binding: DML_BINDING_DESC | None) -> bool:
    if binding is None or binding.Type == DML_BINDING_TYPE.NONE:
        return True
    desc = binding.Desc
    return binding.Type == DML_BINDING_TYPE.BUFFER and isinstance(desc, DML_BUFFER_BINDING) and desc.Buffer is None


def _kind(binding: DML_BINDING_DESC | None) -> str:
    if binding is None:
        return "NONE"
    try:
        return f"DML_BINDING_TYPE_{DML_BINDING_TYPE(binding.Type).name}"
    except ValueError:
        return f"binding type {binding.Type!r}"


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        return None
    value = int(value)
    return value if 0 <= value < 2**64 else None


__all__ = [
    "DML_BINDING_DESC",
    "DML_BINDING_PROPERTIES",
    "DML_BINDING_TABLE_DESC",
    "DML_BUFFER_ARRAY_BINDING",
    "DML_BUFFER_BINDING",
    "BindingTable",
    "BoundRange",
    "Buffer",
    "Slot",
    "array_binding",
    "buffer_binding",
    "current_memory",
    "same_memory",
    "tensor_view",
]
