"""Recording and executing: IDMLCommandRecorder, a command list, and execution.

``record_dispatch`` checks that the binding table is complete for its dispatchable (every
required binding made, temporary and persistent resources present, outputs not overlapping
inputs), then asks the dispatchable for a runner over exactly the bound bytes. With
``DML_EXECUTION_FLAG_DESCRIPTORS_VOLATILE`` the same happens at execute instead, because
bindings may change until the list is submitted (DirectML's binding documentation: https://learn.microsoft.com/windows/ai/directml/dml-binding).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from dmlpy.binding import BindingTable, DeviceLike, Dispatchable
from dmlpy.enums import DML_EXECUTION_FLAGS, HRESULT
from dmlpy.errors import DmlError, Severity
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
    """An ID3D12GraphicsCommandList of type COMPUTE, open for recording until ``close()``."""

    __slots__ = ("__weakref__", "_closed", "_device", "_dispatches")

    def __init__(self, device: DeviceLike) -> None:
        self._device = device
        self._dispatches: list[RecordedDispatch] = []
        self._closed = False

    @property
    def device(self) -> DeviceLike:
        return self._device

    @property
    def dispatches(self) -> tuple[RecordedDispatch, ...]:
        return tuple(self._dispatches)

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        self._closed = True

    def reset(self) -> None:
        self._dispatches.clear()
        self._closed = False

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
        volatile = bool(getattr(dispatchable, "execution_flags", 0) & DML_EXECUTION_FLAGS.DESCRIPTORS_VOLATILE)
        if not ctx.has_errors and not volatile:
            check_table_complete(ctx, dispatchable, table)
        errors = [f for f in ctx.findings if f.severity is Severity.ERROR]
        table.add_warnings(f for f in ctx.findings if f.severity is Severity.WARNING)
        if errors:
            self.device.remove(errors, "IDMLCommandRecorder::RecordDispatch with incomplete or invalid bindings; DirectML removes the device")
        runner = None if volatile else dispatchable.record(table)
        command_list._append(RecordedDispatch(dispatchable, table, runner))  # noqa: SLF001 - only RecordDispatch adds to a list


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


__all__ = ["CommandList", "CommandRecorder", "RecordedDispatch", "execute_command_list"]
