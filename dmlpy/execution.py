"""Recording and executing: IDMLCommandRecorder, a command list, and execution.

``record_dispatch`` checks that the binding table is complete for its dispatchable (every
required binding made, temporary and persistent resources present, outputs not overlapping
inputs), then asks the dispatchable for a runner over exactly the bound bytes. With
``DML_EXECUTION_FLAG_DESCRIPTORS_VOLATILE`` the same happens at execute instead, because
bindings may change until the list is submitted (DirectML's binding documentation: https://learn.microsoft.com/windows/ai/directml/dml-binding).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from dmlpy.binding import BindingTable, BoundRange, Buffer, DescriptorHeap, DeviceLike, Dispatchable
from dmlpy.enums import DML_EXECUTION_FLAGS, HRESULT
from dmlpy.errors import DmlError, DmlWarning, Finding, Severity
from dmlpy.rules import Checker, rule

NO_INPUTS = rule("DISPATCH.INPUTS_UNBOUND", "Before RecordDispatch, BindInputs was called when the dispatchable has inputs to bind.", source="nf-directml-idmlcommandrecorder-recorddispatch")
NO_OUTPUTS = rule("DISPATCH.OUTPUTS_UNBOUND", "Before RecordDispatch, BindOutputs was called when the dispatchable has outputs.", source="nf-directml-idmlcommandrecorder-recorddispatch")
NO_TEMPORARY = rule("DISPATCH.TEMPORARY_UNBOUND", "A dispatchable whose TemporaryResourceSize is nonzero has a temporary resource bound.", source="nf-directml-idmlbindingtable-bindtemporaryresource")
NO_PERSISTENT = rule("DISPATCH.PERSISTENT_UNBOUND", "A compiled operator whose PersistentResourceSize is nonzero has its persistent resource bound.", source="nf-directml-idmlbindingtable-bindpersistentresource")
TABLE_MISMATCH = rule("DISPATCH.TABLE_MISMATCH", "RecordDispatch gets the binding table made for that dispatchable.", source="nf-directml-idmlcommandrecorder-recorddispatch")
LIST_CLOSED = rule("DISPATCH.COMMAND_LIST_CLOSED", "Dispatches are recorded into an open command list.", source="nf-directml-idmlcommandrecorder-recorddispatch")
LIST_OPEN = rule("DISPATCH.COMMAND_LIST_OPEN", "A command list is closed before it is executed.", source="ID3D12CommandQueue::ExecuteCommandLists")
NOT_INITIALIZED = rule("DISPATCH.NOT_INITIALIZED", "A compiled operator is initialized (its initializer dispatched) before it executes.", source="nf-directml-idmldevice-createoperatorinitializer")
STALE = rule("DISPATCH.BINDINGS_STALE", "A binding table's bindings were made for its dispatchable's current slots (after IDMLOperatorInitializer::Reset, bind again).", source="nf-directml-idmloperatorinitializer-reset")
WRONG_DEVICE = rule("DISPATCH.WRONG_DEVICE", "The dispatchable, binding table and command list belong to the recorder's device.", source="IDMLDeviceChild")

LIST_CLOSE_TWICE = rule("LIST.CLOSE_CLOSED", "ID3D12GraphicsCommandList::Close is called on an open command list (closing a closed one fails with E_FAIL).", source="nf-d3d12-id3d12graphicscommandlist-close")
LIST_RESET_OPEN = rule("LIST.RESET_OPEN", "ID3D12GraphicsCommandList::Reset is called on a closed command list (resetting an open one fails with E_FAIL).", source="nf-d3d12-id3d12graphicscommandlist-reset")
LIST_BARRIER_CLOSED = rule("LIST.BARRIER_ON_CLOSED", "Barriers and descriptor heaps are set on an open command list.", source="nf-d3d12-id3d12graphicscommandlist-resourcebarrier")
HEAP_ONE_PER_TYPE = rule("HEAP.ONE_PER_TYPE", "SetDescriptorHeaps gets at most one CBV_SRV_UAV heap, of the command list's device.", source="nf-d3d12-id3d12graphicscommandlist-setdescriptorheaps")
HEAP_NOT_SET = rule("HEAP.NOT_SET", "The descriptor heap of a dispatch's binding table is set on the command list (SetDescriptorHeaps) before RecordDispatch.", source="nf-directml-idmlcommandrecorder-recorddispatch")
UAV_BARRIER_MISSING = rule(
    "BARRIER.UAV_MISSING",
    "A dispatch that reads or writes memory an earlier dispatch of the same command list wrote (or writes memory it read) is separated from it by a UAV barrier; "
    "without one the GPU may run them at the same time (an error on a debug device, as the D3D12 debug layer reports it; a warning otherwise).",
    source="dml-binding",
)  # fmt: skip


@dataclass(frozen=True)
class D3D12_RESOURCE_BARRIER:  # noqa: N801 - the C name
    """A UAV barrier (D3D12_RESOURCE_BARRIER_TYPE_UAV): every dispatch recorded before it finishes its reads and
    writes of ``Resource`` before any dispatch after it starts; ``Resource`` None is every resource.
    ``D3D12_RESOURCE_BARRIER.uav(buffer)`` reads like CD3DX12_RESOURCE_BARRIER::UAV."""

    Resource: Buffer | None = None

    @classmethod
    def uav(cls, resource: Buffer | None = None) -> D3D12_RESOURCE_BARRIER:
        return cls(resource)


@dataclass(frozen=True)
class Access:
    """Bytes ``[start, end)`` of ``buffer`` that a recorded dispatch reads or writes."""

    buffer: Buffer
    start: int
    end: int
    write: bool
    dispatch: str

    def conflicts(self, other: Access) -> bool:
        return (self.write or other.write) and self.buffer is other.buffer and self.start < other.end and other.start < self.end


def accesses(table: BindingTable, name: str) -> list[Access]:
    """What a dispatch with ``table`` touches: inputs and the persistent resource are read; outputs and the
    temporary resource are written (an initializer's outputs are its targets' persistent resources)."""
    found: list[Access] = []

    def add(bound: Any, write: bool) -> None:
        if isinstance(bound, tuple):
            for item in bound:
                add(item, write)
        elif isinstance(bound, BoundRange):
            found.append(Access(bound.buffer, bound.offset, bound.offset + bound.size, write, name))

    add(table.inputs or (), False)
    add(table.persistent, False)
    add(table.outputs or (), True)
    add(table.temporary, True)
    return found


Runner = Callable[[], None]


class RecordingDispatchable(Dispatchable, Protocol):
    device: Any
    execution_flags: DML_EXECUTION_FLAGS

    def record(self, table: BindingTable) -> Runner: ...


@dataclass(frozen=True)
class RecordedDispatch:
    dispatchable: RecordingDispatchable
    table: BindingTable
    runner: Runner | None  # None: resolved at execute (DESCRIPTORS_VOLATILE)


class CommandList:
    """An ID3D12GraphicsCommandList of type COMPUTE, open for recording until ``close()``.

    D3D12's rules that DirectML programs meet: the descriptor heap of every binding table is set
    (``set_descriptor_heaps``) before RecordDispatch; a dispatch that depends on memory an earlier
    dispatch of the list wrote needs a UAV barrier between them (``resource_barrier``), the GPU
    otherwise running them at once; ``close()`` once before executing, ``reset()`` only when closed.
    """

    __slots__ = ("__weakref__", "_closed", "_device", "_dispatches", "_heaps", "_pending")

    def __init__(self, device: DeviceLike) -> None:
        self._device = device
        self._dispatches: list[RecordedDispatch] = []
        self._closed = False
        self._heaps: tuple[DescriptorHeap, ...] = ()
        self._pending: list[Access] = []  # what dispatches since the last barrier touch

    @property
    def device(self) -> DeviceLike:
        return self._device

    @property
    def dispatches(self) -> tuple[RecordedDispatch, ...]:
        return tuple(self._dispatches)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def descriptor_heaps(self) -> tuple[DescriptorHeap, ...]:
        return self._heaps

    def close(self) -> None:
        """ID3D12GraphicsCommandList::Close: E_FAIL on a list that is already closed."""
        if self._closed:
            ctx = Checker()
            ctx.fail(LIST_CLOSE_TWICE, "ID3D12GraphicsCommandList::Close", actual="closed", expected="open", message="is called on a command list that is already closed")
            raise DmlError(HRESULT.E_FAIL, ctx.findings, "Close")
        self._closed = True

    def reset(self) -> None:
        """ID3D12GraphicsCommandList::Reset: an empty, open list with no heaps set; E_FAIL on an open list."""
        if not self._closed:
            ctx = Checker()
            ctx.fail(LIST_RESET_OPEN, "ID3D12GraphicsCommandList::Reset", actual="open", expected="closed", message="is called on a command list that is still open; close() it first")
            raise DmlError(HRESULT.E_FAIL, ctx.findings, "Reset")
        self._dispatches.clear()
        self._heaps = ()
        self._pending.clear()
        self._closed = False

    def set_descriptor_heaps(self, heaps: Sequence[DescriptorHeap]) -> None:
        """ID3D12GraphicsCommandList::SetDescriptorHeaps: the heap later RecordDispatch calls take descriptors from."""
        heaps = tuple(heaps)
        for heap in heaps:
            if not isinstance(heap, DescriptorHeap):
                msg = f"SetDescriptorHeaps: got a {type(heap).__name__}, expected DescriptorHeap objects (device.create_descriptor_heap)"
                raise TypeError(msg)
        ctx = Checker()
        self._check_open(ctx, "SetDescriptorHeaps")
        ctx.check(len(heaps) <= 1 and all(h.device is self._device for h in heaps), HEAP_ONE_PER_TYPE, "ID3D12GraphicsCommandList::SetDescriptorHeaps",
                  actual=f"{len(heaps)} heaps", expected="at most one CBV_SRV_UAV heap of this device")  # fmt: skip
        if ctx.findings:
            raise DmlError(HRESULT.E_INVALIDARG, ctx.findings, "SetDescriptorHeaps")
        self._heaps = heaps

    def resource_barrier(self, barriers: Sequence[D3D12_RESOURCE_BARRIER]) -> None:
        """ID3D12GraphicsCommandList::ResourceBarrier with UAV barriers: dispatches after it see what those before it wrote."""
        barriers = tuple(barriers)
        for barrier in barriers:
            if not isinstance(barrier, D3D12_RESOURCE_BARRIER) or not (barrier.Resource is None or isinstance(barrier.Resource, Buffer)):
                msg = f"ResourceBarrier: got {barrier!r}, expected D3D12_RESOURCE_BARRIER.uav(buffer or None)"
                raise TypeError(msg)
        ctx = Checker()
        self._check_open(ctx, "ResourceBarrier")
        if ctx.findings:
            raise DmlError(HRESULT.E_INVALIDARG, ctx.findings, "ResourceBarrier")
        for barrier in barriers:
            self._pending = [] if barrier.Resource is None else [a for a in self._pending if a.buffer is not barrier.Resource]

    # the C names
    SetDescriptorHeaps = set_descriptor_heaps
    ResourceBarrier = resource_barrier
    Close = close
    Reset = reset

    def _check_open(self, ctx: Checker, method: str) -> None:
        ctx.check(not self._closed, LIST_BARRIER_CLOSED, f"ID3D12GraphicsCommandList::{method}", actual="closed", expected="open",
                  message=f"{method} on a closed command list; reset it first")  # fmt: skip

    def hazards(self, table: BindingTable, name: str) -> list[tuple[Access, Access]]:
        """(earlier, new) pairs where a dispatch with ``table`` would race with one recorded since the last barrier."""
        return [(old, new) for new in accesses(table, name) for old in self._pending if new.conflicts(old)]

    def _note_accesses(self, table: BindingTable, name: str) -> None:
        self._pending.extend(accesses(table, name))

    def _append(self, dispatch: RecordedDispatch) -> None:
        assert not self._closed  # RecordDispatch checked
        self._dispatches.append(dispatch)


def check_table_complete(ctx: Checker, dispatchable: RecordingDispatchable, table: BindingTable) -> None:
    name = dispatchable.name
    if not ctx.check(table.bound_for_current_slots(), STALE, f"{name}.RecordDispatch", actual="bindings for the slots before a Reset", expected="bindings for the current slots",
                     message="was bound before the dispatchable was Reset to other operators; Reset the binding table and bind again"):  # fmt: skip
        return
    needs_inputs = any(slot.tensor is not None and not slot.owned or slot.array is not None and any(s.owned for s in slot.array) for slot in dispatchable.input_slots())
    ctx.check(table.inputs is not None or not needs_inputs, NO_INPUTS, f"{name}.BindInputs", actual="never called", expected="bindings for every input slot",
              message="was never called; bind every input slot (NONE for absent or OWNED_BY_DML tensors) before recording")  # fmt: skip
    needs_outputs = any(slot.tensor is not None or slot.resource_size for slot in dispatchable.output_slots())
    ctx.check(table.outputs is not None or not needs_outputs, NO_OUTPUTS, f"{name}.BindOutputs", actual="never called", expected="bindings for every output slot",
              message="was never called; bind every output slot before recording")  # fmt: skip
    props = dispatchable.get_binding_properties()
    ctx.check(table.temporary is not None or props.TemporaryResourceSize == 0, NO_TEMPORARY, f"{name}.BindTemporaryResource", actual="NONE",
              expected=f"a buffer of at least {props.TemporaryResourceSize} bytes")  # fmt: skip
    ctx.check(table.persistent is not None or props.PersistentResourceSize == 0, NO_PERSISTENT, f"{name}.BindPersistentResource", actual="NONE",
              expected=f"the persistent resource ({props.PersistentResourceSize} bytes) the initializer filled")  # fmt: skip
    table.check_input_output_overlaps(ctx, getattr(dispatchable, "in_place", False))


class CommandRecorder:
    """IDMLCommandRecorder."""

    __slots__ = ("__weakref__", "_device")

    def __init__(self, device: DeviceLike) -> None:
        self._device = device

    @property
    def device(self) -> DeviceLike:
        return self._device

    def record_dispatch(self, command_list: CommandList, dispatchable: RecordingDispatchable, table: BindingTable) -> None:
        """Record ``dispatchable`` with ``table``'s bindings; misuse removes the device (it returns void)."""
        self.device.check_alive()
        _require(command_list, CommandList, "RecordDispatch: command_list")
        _require(table, BindingTable, "RecordDispatch: table")
        if not callable(getattr(dispatchable, "record", None)):
            msg = f"RecordDispatch: dispatchable is a {type(dispatchable).__name__}, expected a compiled operator, compiled graph or operator initializer"
            raise TypeError(msg)
        ctx = Checker()
        name = getattr(dispatchable, "name", type(dispatchable).__name__)
        same_device = command_list.device is self.device and getattr(dispatchable, "device", None) is self.device and table._device is self.device  # noqa: SLF001
        if not ctx.check(same_device, WRONG_DEVICE, f"{name}.RecordDispatch", actual="another device", expected="this recorder's device"):
            self.device.remove(ctx.findings, "IDMLCommandRecorder::RecordDispatch was given objects of another device")
        ctx.check(not command_list.closed, LIST_CLOSED, f"{name}.RecordDispatch", actual="closed", expected="open", message="records into a closed command list; reset it first")
        ctx.check(table.dispatchable is dispatchable, TABLE_MISMATCH, f"{name}.RecordDispatch", actual=getattr(table.dispatchable, "name", None), expected=name,
                  message=f"got a binding table made for {getattr(table.dispatchable, 'name', None)}, not for {name}; Reset the table to this dispatchable")  # fmt: skip
        heap = table.heap
        ctx.check(heap is None or heap in command_list.descriptor_heaps, HEAP_NOT_SET, f"{name}.RecordDispatch", actual="not set on the command list", expected=repr(heap),
                  message=f"uses a binding table in {heap!r}, but the command list has {list(command_list.descriptor_heaps) or 'no heap'} set; call set_descriptor_heaps([heap]) first")  # fmt: skip
        volatile = bool(getattr(dispatchable, "execution_flags", 0) & DML_EXECUTION_FLAGS.DESCRIPTORS_VOLATILE)
        if not ctx.has_errors and not volatile:
            check_table_complete(ctx, dispatchable, table)
        errors = [f for f in ctx.findings if f.severity is Severity.ERROR]
        table.add_warnings(f for f in ctx.findings if f.severity is Severity.WARNING)
        if errors:
            self.device.remove(errors, "IDMLCommandRecorder::RecordDispatch with incomplete or invalid bindings; DirectML removes the device")
        hazards = Checker()
        report_hazards(hazards, command_list.hazards(table, name), name, debug=bool(getattr(self.device, "debug", True)))
        if hazards.has_errors:
            raise DmlError(HRESULT.E_INVALIDARG, hazards.findings, f"RecordDispatch of {name}: a UAV barrier is missing (the D3D12 debug layer reports this race; the dispatch was not recorded)")
        table.add_warnings(hazards.findings)
        for finding in hazards.findings:
            warnings.warn(DmlWarning(finding), stacklevel=2)
        runner = None if volatile else dispatchable.record(table)
        command_list._append(RecordedDispatch(dispatchable, table, runner))  # noqa: SLF001 - only RecordDispatch adds to a list
        command_list._note_accesses(table, name)  # noqa: SLF001


def report_hazards(ctx: Checker, pairs: list[tuple[Access, Access]], name: str, *, debug: bool) -> None:
    """One BARRIER.UAV_MISSING finding per earlier dispatch and buffer: an error on a debug device, else a warning."""
    seen: set[tuple[str, int]] = set()
    for old, new in pairs:
        key = (old.dispatch, id(old.buffer))
        if key in seen:
            continue
        seen.add(key)
        what = "writes" if new.write else "reads"
        earlier = "wrote" if old.write else "read"
        finding = Finding(UAV_BARRIER_MISSING.id, Severity.ERROR if debug else Severity.WARNING, f"{name}.RecordDispatch",
                          f"a UAV barrier on {new.buffer!r} (or on every resource) after {old.dispatch}", "no barrier",
                          f"{what} bytes [{new.start}, {new.end}) of {new.buffer!r}, which {old.dispatch}, recorded earlier in this command list, {earlier} "
                          f"([{old.start}, {old.end})) with no UAV barrier between them: on a GPU they may run at once. "
                          "Call command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav(buffer)]) between the two dispatches")  # fmt: skip
        ctx.findings.append(finding)


def execute_command_list(device: DeviceLike, command_list: CommandList) -> None:
    """Run every recorded dispatch in order, as the GPU would."""
    device.check_alive()
    _require(command_list, CommandList, "ExecuteCommandLists: command_list")
    if not command_list.closed:
        ctx = Checker()
        ctx.fail(LIST_OPEN, "ExecuteCommandLists", actual="open", expected="closed", message="got a command list that is still open; close() it first")
        raise DmlError(HRESULT.E_INVALIDARG, ctx.findings, "ExecuteCommandLists")
    for dispatch in command_list._dispatches:  # noqa: SLF001 - read in place: a closed list cannot change
        runner = dispatch.runner
        if runner is None:
            late = Checker()
            check_table_complete(late, dispatch.dispatchable, dispatch.table)
            dispatch.table.add_warnings(f for f in late.findings if f.severity is Severity.WARNING)
            if late.has_errors:
                device.remove([f for f in late.findings if f.severity is Severity.ERROR], "a DESCRIPTORS_VOLATILE dispatch found incomplete bindings at execute")
            runner = dispatch.dispatchable.record(dispatch.table)
        runner()


def _require(value: Any, kind: type, what: str) -> None:
    """What C's type system would refuse."""
    if not isinstance(value, kind):
        msg = f"{what} is a {type(value).__name__}, expected a {kind.__name__}"
        raise TypeError(msg)


__all__ = ["D3D12_RESOURCE_BARRIER", "CommandList", "CommandRecorder", "RecordedDispatch", "execute_command_list"]
