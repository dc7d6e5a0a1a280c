"""The native backend: lowers a validated desc into DirectML's C structs and calls dmlpy_execute.

Lowering walks the C struct's own field list (cffi knows it from the cdef, which the
compiler checked against include/dmlpy/dml_types.h), so every field lands at its C offset.
The module is loaded once; a version stamp compiled into it must match this package, so a
stale build is never used.
"""

from __future__ import annotations

from typing import Any

from dmlpy._version import NATIVE_ABI_VERSION, __version__
from dmlpy.backends.numpy_backend import NumpyBackend
from dmlpy.backends import NATIVE_REJECTED, BoundTensor, Runner, thread_count
from dmlpy.enums import HRESULT
from dmlpy.errors import DmlError, Finding, Severity
from dmlpy.operators import DML_OPERATOR_DESC, OperatorSpec, operator_desc


_ffi: Any = None
_lib: Any = None
_status = "not loaded yet"


def _requested_isa() -> str:
    """DMLPY_NATIVE_ISA: the kernel variant to run instead of the best one for this CPU ("" = the best)."""
    from os import environ  # noqa: PLC0415 - kept with its only user

    return environ.get("DMLPY_NATIVE_ISA", "").strip()


def _load() -> None:
    global _ffi, _lib, _status  # noqa: PLW0603 - loaded once per process
    if _lib is not None or _status != "not loaded yet":
        return
    try:
        from dmlpy._native import ffi, lib  # noqa: PLC0415
    except ImportError as error:
        _status = f"the compiled module dmlpy._native is missing ({error}); reinstall with a C compiler (pip install --no-cache-dir .)"
        return
    built = ffi.string(lib.dmlpy_native_version()).decode()
    abi = int(lib.dmlpy_abi_version())
    if built != __version__ or abi != NATIVE_ABI_VERSION:
        _status = f"the compiled module is stale: built for dmlpy {built} (ABI {abi}), this is dmlpy {__version__} (ABI {NATIVE_ABI_VERSION}); reinstall"
        return
    requested = _requested_isa()
    if requested and lib.dmlpy_native_select_isa(requested.encode()):
        runnable = ffi.string(lib.dmlpy_native_isa_runnable()).decode().split()
        compiled = ffi.string(lib.dmlpy_native_isa_compiled()).decode().split()
        why = "this CPU cannot run it" if requested in compiled else "this build has no such variant"
        _status = f"DMLPY_NATIVE_ISA={requested!r}: {why}; use one of: {', '.join(runnable)} (or unset it)"
        return
    _ffi, _lib = ffi, lib
    _status = f"loaded dmlpy._native {built} (ABI {abi}), {int(lib.dmlpy_hardware_concurrency())} hardware threads"


def kernels() -> str:
    """Which kernels dmlpy_execute runs and why, e.g. 'avx512 (chosen at run time from the CPU's features
    among baseline, avx2, avx512; portable build)'. Raises RuntimeError when the library did not load."""
    ffi, lib = library()
    chosen = ffi.string(lib.dmlpy_native_isa()).decode()
    compiled = ", ".join(ffi.string(lib.dmlpy_native_isa_compiled()).decode().split())
    how = "chosen by DMLPY_NATIVE_ISA" if _requested_isa() else "chosen at run time from the CPU's features"
    arch = ffi.string(lib.dmlpy_native_arch_flags()).decode()
    build = f"built for {arch} (DMLPY_NATIVE_ARCH), not the portable default" if arch else "portable build"
    return f"{chosen} ({how} among {compiled}; {build})"


def available() -> bool:
    _load()
    return _lib is not None


def status() -> str:
    _load()
    return _status


def library() -> tuple[Any, Any]:
    """(ffi, lib) of the loaded module; raises RuntimeError when it did not load."""
    if not available():
        raise RuntimeError(_status)
    return _ffi, _lib


class Lowered:
    """A desc as C structs; holds every allocation alive as long as the pointer is used."""

    def __init__(self, desc: Any) -> None:
        self._keep: list[Any] = []
        self.pointer = self._struct(operator_desc(desc))

    def _struct(self, value: Any) -> Any:
        ffi = _ffi
        struct = ffi.new(f"{type(value).__name__}*")
        self._keep.append(struct)
        for name, field_type in ffi.typeof(type(value).__name__).fields:
            setattr(struct, name, self._field(getattr(value, name), field_type.type))
        return struct

    def _field(self, value: Any, c_type: Any) -> Any:
        ffi = _ffi
        if c_type.kind == "union":  # DML_SCALAR_UNION: its 8 bytes as the desc holds them
            union = ffi.new(f"{c_type.cname}*")
            ffi.memmove(union, value.to_bytes(), ffi.sizeof(c_type))
            self._keep.append(union)
            return union[0]
        if c_type.kind != "pointer":
            return float(value) if c_type.kind == "primitive" and c_type.cname in ("float", "double") else int(value)
        if value is None:
            return ffi.NULL
        pointee = c_type.item
        if pointee.kind == "struct" and isinstance(value, (list, tuple)):  # a tensor array (JOIN's InputTensors)
            array = ffi.new(f"{pointee.cname}[]", max(1, len(value)))
            self._keep.append(array)
            for i, element in enumerate(value):
                for name, field_type in ffi.typeof(pointee.cname).fields:
                    setattr(array[i], name, self._field(getattr(element, name), field_type.type))
            return array
        if pointee.kind == "struct":  # DML_TENSOR_DESC* or DML_OPERATOR_DESC* (a fused activation)
            if pointee.cname.endswith("DML_OPERATOR_DESC") and not isinstance(value, DML_OPERATOR_DESC):
                value = operator_desc(value)
            return self._struct(value)
        if pointee.kind == "void":  # the Desc of a type-tagged struct
            return ffi.cast("void*", self._struct(value))
        convert = float if pointee.kind == "primitive" and pointee.cname in ("float", "double") else int  # FLOAT arrays: Scales, offsets
        array = ffi.new(f"{pointee.cname}[]", [convert(v) for v in value])
        self._keep.append(array)
        return array


_NUMPY = NumpyBackend()


class NativeBackend:
    __slots__ = ("_ffi", "_lib", "_threads")
    name = "native"

    def __init__(self, threads: int = 0) -> None:
        ffi, lib = library()
        self._ffi, self._lib = ffi, lib
        self._threads = thread_count(threads)

    @property
    def threads(self) -> int:
        return self._threads

    def prepare(self, spec: OperatorSpec, desc: Any) -> tuple[OperatorSpec, Any]:
        # A valid desc the C kernels do not take runs on the NumPy kernel, never refused as invalid.
        if not spec.runs_natively(desc):
            return spec, _NUMPY.prepare(spec, desc)
        return spec, Lowered(desc)

    def bind(self, prepared: tuple[OperatorSpec, Any], inputs: list[BoundTensor], outputs: list[BoundTensor]) -> Runner:
        if not isinstance(prepared[1], Lowered):
            return _NUMPY.bind(prepared[1], inputs, outputs)
        spec, lowered = prepared
        ffi, lib = self._ffi, self._lib
        keep: list[Any] = []

        def buffers(bound: list[BoundTensor], *, writable: bool) -> Any:
            array = ffi.new("DMLPY_BOUND_BUFFER[]", max(1, len(bound)))
            for i, b in enumerate(bound):
                if b.memory is not None:
                    # cffi refuses read-only memory for outputs; the size is the buffer's own, not a claim about it
                    data = ffi.from_buffer("uint8_t[]", b.memory, require_writable=writable)
                    keep.append(data)
                    array[i].Data = data
                    array[i].SizeInBytes = ffi.sizeof(data)
            return array

        in_array, out_array = buffers(inputs, writable=False), buffers(outputs, writable=True)
        n_in, n_out, threads, pointer = len(inputs), len(outputs), self._threads, lowered.pointer
        execute = lib.dmlpy_execute

        def run() -> None:
            status = execute(pointer, n_in, in_array, n_out, out_array, threads)
            if status:
                self._refused(spec, status)

        run.keep = (keep, in_array, out_array, lowered)  # type: ignore[attr-defined]
        # the same call as one entry of a sequence (NativeBackend.sequence)
        run.dispatch = ffi.new("DMLPY_DISPATCH*", (pointer, n_in, in_array, n_out, out_array))  # type: ignore[attr-defined]
        run.spec = spec  # type: ignore[attr-defined]
        return run

    def sequence(self, runners: list[Runner]) -> list[Runner]:
        """The runners, each run of consecutive native dispatches made one dmlpy_execute_sequence call (a graph's
        nodes: about a microsecond of Python per node less); NumPy kernels and copies stay steps of their own."""
        steps: list[Runner] = []
        native: list[Runner] = []
        for runner in [*runners, None]:
            if runner is not None and hasattr(runner, "dispatch"):
                native.append(runner)
                continue
            if len(native) > 1:
                steps.append(self._sequence(native))
            else:
                steps.extend(native)
            native = []
            if runner is not None:
                steps.append(runner)
        return steps

    def _sequence(self, runners: list[Runner]) -> Runner:
        ffi, lib = self._ffi, self._lib
        dispatches = ffi.new("DMLPY_DISPATCH*[]", [r.dispatch for r in runners])  # type: ignore[attr-defined]
        failed = ffi.new("UINT*")
        count, threads, execute = len(runners), self._threads, lib.dmlpy_execute_sequence

        def run() -> None:
            status = execute(count, dispatches, threads, failed)
            if status:
                self._refused(runners[failed[0]].spec, status)  # type: ignore[attr-defined]

        run.keep = (runners, dispatches)  # type: ignore[attr-defined]
        return run

    def _refused(self, spec: OperatorSpec, status: int) -> None:
        name = self._ffi.string(self._lib.dmlpy_status_name(status)).decode()
        finding = Finding(NATIVE_REJECTED.id, Severity.ERROR, spec.c_struct, "DMLPY_OK", name, f"dmlpy_execute returned {name} ({status})")
        raise DmlError(HRESULT.E_INVALIDARG, [finding], "the native kernel refused the dispatch")


__all__ = ["Lowered", "NativeBackend", "available", "kernels", "library", "status"]
