"""The device and its children: IDMLDevice, IDMLOperator, IDMLCompiledOperator, IDMLOperatorInitializer.

``Device.create_operator`` is where a desc is validated, as DirectML validates at
CreateOperator: every error finding goes into one ``DmlError`` (E_INVALIDARG), warnings go
to ``warnings.warn`` (or become errors on a ``strict`` device). Where DirectML would remove
the device (a void Bind* or RecordDispatch misuse), dmlpy raises at that call and the device
stays removed: ``get_device_removed_reason()`` returns the cause and every later call
raises DXGI_ERROR_DEVICE_REMOVED.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dmlpy.backends import Backend, BoundTensor, get_backend
from dmlpy.binding import (
    DML_BINDING_DESC,
    DML_BINDING_PROPERTIES,
    DML_BINDING_TABLE_DESC,
    BindingTable,
    BoundRange,
    Buffer,
    Slot,
    array_binding,
    buffer_binding,
)
from dmlpy.enums import (
    DML_EXECUTION_FLAGS,
    DML_FEATURE,
    DML_FEATURE_LEVEL,
    DML_PERSISTENT_BUFFER_ALIGNMENT,
    DML_TENSOR_DATA_TYPE,
    HRESULT,
    c_name,
)
from dmlpy.errors import DmlError, DmlWarning, Finding, Report, Severity
from dmlpy.execution import NOT_INITIALIZED, CommandList, CommandRecorder, execute_command_list
from dmlpy.graph import DML_GRAPH_DESC, CompiledGraph, compile_graph, plan_graph
from dmlpy.operators import OperatorSpec, check_operator, operator_desc
from dmlpy.rules import Checker, rule
from dmlpy.structs import FieldError
from dmlpy.support import data_type_supported
from dmlpy.tensor import DML_BUFFER_TENSOR_DESC, is_owned_by_dml

REMOVED = rule("DEVICE.REMOVED", "Once removed, a device and its children fail every call with DXGI_ERROR_DEVICE_REMOVED.", source="dml-errors")
FEATURE_QUERY = rule("DEVICE.FEATURE_QUERY", "CheckFeatureSupport gets the query struct that matches the DML_FEATURE.", source="nf-directml-idmldevice-checkfeaturesupport")
FEATURE_UNSUPPORTED = rule("DEVICE.FEATURE_UNSUPPORTED", "CheckFeatureSupport asks for a DML_FEATURE the device's feature level has.", source="nf-directml-idmldevice-checkfeaturesupport")
FOREIGN_OBJECT = rule("DEVICE.FOREIGN_OBJECT", "Operators, compiled operators and initializers are used only with the device that made them.", source="IDMLDeviceChild")
TABLE_DISPATCHABLE = rule("DEVICE.BINDING_TABLE_DISPATCHABLE", "CreateBindingTable gets a compiled operator or an initializer of this device.", source="ns-directml-dml_binding_table_desc")
TABLE_DESCRIPTORS = rule("DEVICE.BINDING_TABLE_SIZE", "A binding table's SizeInDescriptors is at least the dispatchable's RequiredDescriptorCount.", source="ns-directml-dml_binding_table_desc")


def _align(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


# ---------------------------------------------------------------------------------------
# CheckFeatureSupport structs


@dataclass
class DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT:  # noqa: N801 - the C name
    DataType: DML_TENSOR_DATA_TYPE | int = DML_TENSOR_DATA_TYPE.UNKNOWN


@dataclass
class DML_FEATURE_DATA_TENSOR_DATA_TYPE_SUPPORT:  # noqa: N801 - the C name
    IsSupported: bool = False


@dataclass
class DML_FEATURE_QUERY_FEATURE_LEVELS:  # noqa: N801 - the C name
    RequestedFeatureLevelCount: int = 0
    RequestedFeatureLevels: Sequence[DML_FEATURE_LEVEL | int] = ()


@dataclass
class DML_FEATURE_DATA_FEATURE_LEVELS:  # noqa: N801 - the C name
    MaxSupportedFeatureLevel: DML_FEATURE_LEVEL


# ---------------------------------------------------------------------------------------
# Device children


class Operator:
    """IDMLOperator: a validated, deep-copied desc. Changing the caller's dataclass later changes nothing."""

    def __init__(self, device: Device, spec: OperatorSpec, desc: Any, findings: list[Finding]) -> None:
        self.device = device
        self.spec = spec
        self.desc = desc
        self.warnings = [f for f in findings if f.severity is Severity.WARNING]

    @property
    def name(self) -> str:
        return c_name(self.spec.operator_type)

    def tensor(self, slot_name: str) -> DML_BUFFER_TENSOR_DESC | None:
        tensor = getattr(self.desc, slot_name)
        return None if tensor is None else tensor.buffer


class CompiledOperator:
    """IDMLCompiledOperator: an operator ready to bind; OWNED_BY_DML inputs live in its persistent resource."""

    def __init__(self, operator: Operator, flags: DML_EXECUTION_FLAGS) -> None:
        self.device = operator.device
        self.operator = operator
        self.execution_flags = DML_EXECUTION_FLAGS(flags)
        self.spec = operator.spec
        self.in_place = operator.spec.in_place
        self.initialized = False
        self._prepared = self.device.backend.prepare(self.spec, operator.desc)
        self._inputs = [
            Slot(s.name, operator.tensor(s.name), s.optional, is_owned_by_dml(getattr(operator.desc, s.name)))
            for s in self.spec.support.inputs
        ]
        self._outputs = [Slot(s.name, operator.tensor(s.name), s.optional) for s in self.spec.support.outputs]
        # persistent layout: each owned input at a 256-byte-aligned offset
        self.persistent_offsets: dict[str, int] = {}
        size = 0
        for slot in self._inputs:
            if slot.owned and slot.tensor is not None:
                self.persistent_offsets[slot.name] = size
                size = _align(size + slot.tensor.TotalTensorSizeInBytes, DML_PERSISTENT_BUFFER_ALIGNMENT)
        self._properties = DML_BINDING_PROPERTIES(
            RequiredDescriptorCount=sum(s.tensor is not None for s in self._inputs + self._outputs) + (1 if size else 0),
            TemporaryResourceSize=0,
            PersistentResourceSize=size,
        )

    @property
    def name(self) -> str:
        return self.operator.name

    def input_slots(self) -> list[Slot]:
        return self._inputs

    def output_slots(self) -> list[Slot]:
        return self._outputs

    def get_binding_properties(self) -> DML_BINDING_PROPERTIES:
        return self._properties

    def record(self, table: BindingTable) -> Any:
        inputs = []
        for i, slot in enumerate(self._inputs):
            if slot.owned:
                assert table.persistent is not None and slot.tensor is not None
                start = table.persistent.offset + self.persistent_offsets[slot.name]
                memory = table.persistent.buffer.data[start : start + slot.tensor.TotalTensorSizeInBytes]
            else:
                bound = table.inputs[i] if table.inputs else None
                memory = bound.memory() if isinstance(bound, BoundRange) else None
            inputs.append(BoundTensor(slot.name, memory, slot.tensor))
        outputs = [
            BoundTensor(slot.name, bound.memory() if bound is not None else None, slot.tensor)
            for slot, bound in zip(self._outputs, table.outputs or [None] * len(self._outputs), strict=True)
        ]
        runner = self.device.backend.bind(self._prepared, inputs, outputs)

        def run() -> None:
            if not self.initialized:
                ctx = Checker()
                ctx.fail(NOT_INITIALIZED, f"{self.name}.Execute", actual="not initialized", expected="initialized",
                         message="executes before any operator initializer targeting it was dispatched")  # fmt: skip
                self.device.remove(ctx.findings, "a compiled operator ran before its initializer")
            runner()

        return run


class OperatorInitializer:
    """IDMLOperatorInitializer: fills its targets' persistent resources and marks them initialized."""

    def __init__(self, device: Device, operators: Sequence[CompiledOperator]) -> None:
        self.device = device
        self.execution_flags = DML_EXECUTION_FLAGS.NONE
        self.in_place = False
        self.reset(operators)

    def reset(self, operators: Sequence[CompiledOperator] | None) -> None:
        """IDMLOperatorInitializer::Reset: re-target."""
        self.device.check_alive()
        targets = list(operators or ())
        for op in targets:
            self.device.check_own(op, "CreateOperatorInitializer")
        self.targets = targets

    @property
    def name(self) -> str:
        return "IDMLOperatorInitializer"

    def input_slots(self) -> list[Slot]:
        return [Slot(f"{op.name}[{i}]", None, array=tuple(op.input_slots())) for i, op in enumerate(self.targets)]

    def output_slots(self) -> list[Slot]:
        return [
            Slot(f"{op.name}[{i}] persistent resource", None, is_resource=True, resource_size=op.get_binding_properties().PersistentResourceSize)
            for i, op in enumerate(self.targets)
        ]

    def get_binding_properties(self) -> DML_BINDING_PROPERTIES:
        owned = sum(s.owned for op in self.targets for s in op.input_slots())
        persistent = sum(op.get_binding_properties().PersistentResourceSize > 0 for op in self.targets)
        return DML_BINDING_PROPERTIES(max(1, owned + persistent), 0, 0)

    def record(self, table: BindingTable) -> Any:
        copies: list[tuple[np.ndarray, np.ndarray]] = []
        for t, op in enumerate(self.targets):
            entries = table.inputs[t] if table.inputs else None
            target = table.outputs[t] if table.outputs else None
            for j, slot in enumerate(op.input_slots()):
                if not slot.owned or slot.tensor is None:
                    continue
                assert isinstance(entries, list) and target is not None
                source = entries[j]
                assert source is not None
                size = slot.tensor.TotalTensorSizeInBytes
                start = target.offset + op.persistent_offsets[slot.name]
                copies.append((target.buffer.data[start : start + size], source.memory()[:size]))
        targets = list(self.targets)

        def run() -> None:
            for destination, source in copies:
                destination[:] = source
            for op in targets:
                op.initialized = True

        return run


# ---------------------------------------------------------------------------------------
# The device


class Device:
    """IDMLDevice (with IDMLDevice1): creates operators and the objects that run them."""

    def __init__(self, feature_level: DML_FEATURE_LEVEL | int, *, debug: bool, strict: bool, backend: Backend) -> None:
        self.feature_level = DML_FEATURE_LEVEL(feature_level)
        self.debug = debug
        self.strict = strict
        self.backend = backend
        self._removed: HRESULT | None = None
        self.removal_findings: list[Finding] = []

    @property
    def backend_name(self) -> str:
        return self.backend.name

    # --- lifetime ---------------------------------------------------------------------

    def check_alive(self) -> None:
        if self._removed is not None:
            ctx = Checker()
            cause = "; ".join(str(f) for f in self.removal_findings) or self._removed.name
            ctx.fail(REMOVED, "IDMLDevice", actual="removed", expected="alive", message=f"was removed earlier by: {cause}. Create a new device.")
            raise DmlError(HRESULT.DXGI_ERROR_DEVICE_REMOVED, ctx.findings, "the device was removed")

    def remove(self, findings: list[Finding], summary: str) -> None:
        """Remove the device for a void-method misuse, and raise at the call that did it."""
        self._removed = HRESULT.E_INVALIDARG
        self.removal_findings = list(findings)
        raise DmlError(HRESULT.E_INVALIDARG, findings, summary + "; the device is now removed")

    def get_device_removed_reason(self) -> HRESULT:
        return HRESULT.S_OK if self._removed is None else self._removed

    def check_own(self, child: Any, method: str) -> None:
        self.check_alive()
        if getattr(child, "device", None) is not self:
            ctx = Checker()
            ctx.fail(FOREIGN_OBJECT, method, actual=type(child).__name__, expected="an object made by this device",
                     message=f"got a {type(child).__name__} that this device did not make")  # fmt: skip
            raise DmlError(HRESULT.E_INVALIDARG, ctx.findings, method)

    # --- IDMLDevice -------------------------------------------------------------------

    def validate(self, desc: Any) -> Report:
        """Every finding for ``desc`` at this device's feature level, without creating anything."""
        return validate(desc, feature_level=self.feature_level)

    def create_operator(self, desc: Any) -> Operator:
        """IDMLDevice::CreateOperator: validate and deep-copy the desc (bare or in a DML_OPERATOR_DESC)."""
        self.check_alive()
        ctx = Checker(self.feature_level)
        normalized = check_operator(ctx, desc)
        errors = [f for f in ctx.findings if f.severity is Severity.ERROR or self.strict]
        if errors or normalized is None:
            raise DmlError(HRESULT.E_INVALIDARG, errors, f"CreateOperator rejected the desc ({len(errors)} error{'s' * (len(errors) != 1)})")
        for finding in ctx.findings:
            warnings.warn(DmlWarning(finding), stacklevel=2)
        return Operator(self, _spec_of(desc), copy.deepcopy(normalized), ctx.findings)

    def compile_operator(self, operator: Operator, flags: DML_EXECUTION_FLAGS | int = DML_EXECUTION_FLAGS.NONE) -> CompiledOperator:
        """IDMLDevice::CompileOperator."""
        self.check_own(operator, "CompileOperator")
        return CompiledOperator(operator, DML_EXECUTION_FLAGS(flags))

    def compile_graph(self, desc: Any, flags: DML_EXECUTION_FLAGS | int = DML_EXECUTION_FLAGS.NONE) -> Any:
        """IDMLDevice1::CompileGraph: check every graph rule, then plan and compile the whole graph."""
        self.check_alive()
        ctx = Checker(self.feature_level)
        compiled = compile_graph(self, ctx, desc, DML_EXECUTION_FLAGS(flags))
        errors = [f for f in ctx.findings if f.severity is Severity.ERROR or self.strict]
        if errors or compiled is None:
            raise DmlError(HRESULT.E_INVALIDARG, errors, f"CompileGraph rejected the graph ({len(errors)} error{'s' * (len(errors) != 1)})")
        for finding in ctx.findings:
            warnings.warn(DmlWarning(finding), stacklevel=2)
        return compiled

    def create_operator_initializer(self, operators: Sequence[CompiledOperator | CompiledGraph] | None = None) -> OperatorInitializer:
        """IDMLDevice::CreateOperatorInitializer: the list may be empty."""
        self.check_alive()
        return OperatorInitializer(self, operators or ())

    def create_binding_table(self, desc: DML_BINDING_TABLE_DESC | CompiledOperator | OperatorInitializer | None = None) -> BindingTable:
        """IDMLDevice::CreateBindingTable. A bare dispatchable gets a desc sized to its RequiredDescriptorCount."""
        self.check_alive()
        if desc is None:
            return BindingTable(self, DML_BINDING_TABLE_DESC())
        if not isinstance(desc, DML_BINDING_TABLE_DESC):
            desc = DML_BINDING_TABLE_DESC(desc, 0, 0, _required_descriptors(desc))
        self.check_binding_table_desc(desc)
        return BindingTable(self, desc)

    def check_binding_table_desc(self, desc: DML_BINDING_TABLE_DESC) -> None:
        """What CreateBindingTable and IDMLBindingTable::Reset check of a DML_BINDING_TABLE_DESC."""
        ctx = Checker()
        dispatchable = desc.Dispatchable
        if ctx.check(isinstance(dispatchable, (CompiledOperator, CompiledGraph, OperatorInitializer)) and dispatchable.device is self, TABLE_DISPATCHABLE,
                     "DML_BINDING_TABLE_DESC.Dispatchable", actual=type(dispatchable).__name__, expected="a compiled operator or initializer of this device"):  # fmt: skip
            required = dispatchable.get_binding_properties().RequiredDescriptorCount
            ctx.check(desc.SizeInDescriptors >= required, TABLE_DESCRIPTORS, "DML_BINDING_TABLE_DESC.SizeInDescriptors", actual=desc.SizeInDescriptors, expected=f">= {required}",
                      message=f"is {desc.SizeInDescriptors}, expected at least RequiredDescriptorCount = {required}")  # fmt: skip
        if ctx.findings:
            raise DmlError(HRESULT.E_INVALIDARG, ctx.findings, "CreateBindingTable")

    def create_command_recorder(self) -> CommandRecorder:
        self.check_alive()
        return CommandRecorder(self)

    def create_command_list(self) -> CommandList:
        """An open COMPUTE command list (D3D12's, emulated)."""
        self.check_alive()
        return CommandList(self)

    def execute(self, command_list: CommandList) -> None:
        """Submit a closed command list and wait for it, as ExecuteCommandLists plus a fence would."""
        execute_command_list(self, command_list)

    def create_buffer(self, size_in_bytes: int, name: str = "") -> Buffer:
        self.check_alive()
        return Buffer(size_in_bytes, name)

    def check_feature_support(self, feature: DML_FEATURE | int, query: Any = None) -> Any:
        """IDMLDevice::CheckFeatureSupport for TENSOR_DATA_TYPE_SUPPORT and FEATURE_LEVELS."""
        self.check_alive()
        ctx = Checker()
        if feature == DML_FEATURE.TENSOR_DATA_TYPE_SUPPORT:
            if ctx.check(isinstance(query, DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT), FEATURE_QUERY, "CheckFeatureSupport.queryData", actual=type(query).__name__,
                         expected="DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT"):  # fmt: skip
                try:
                    data_type = DML_TENSOR_DATA_TYPE(query.DataType)
                except ValueError:
                    return DML_FEATURE_DATA_TENSOR_DATA_TYPE_SUPPORT(False)
                return DML_FEATURE_DATA_TENSOR_DATA_TYPE_SUPPORT(data_type_supported(data_type, self.feature_level))
            raise DmlError(HRESULT.E_INVALIDARG, ctx.findings, "CheckFeatureSupport")
        if feature == DML_FEATURE.FEATURE_LEVELS:
            if not ctx.check(self.feature_level >= DML_FEATURE_LEVEL.LEVEL_2_0, FEATURE_UNSUPPORTED, "CheckFeatureSupport.feature", actual="DML_FEATURE_FEATURE_LEVELS",
                             expected="a feature of FL 1.0", message=f"DML_FEATURE_FEATURE_LEVELS arrived with FL 2.0; the device targets {self.feature_level.dotted}"):  # fmt: skip
                raise DmlError(HRESULT.DXGI_ERROR_UNSUPPORTED, ctx.findings, "CheckFeatureSupport")
            ok = isinstance(query, DML_FEATURE_QUERY_FEATURE_LEVELS) and query.RequestedFeatureLevelCount == len(query.RequestedFeatureLevels) > 0
            if not ctx.check(ok, FEATURE_QUERY, "CheckFeatureSupport.queryData", actual=repr(query), expected="DML_FEATURE_QUERY_FEATURE_LEVELS with a non-empty, correctly counted list"):
                raise DmlError(HRESULT.E_INVALIDARG, ctx.findings, "CheckFeatureSupport")
            supported = [int(level) for level in query.RequestedFeatureLevels if int(level) <= self.feature_level and int(level) in DML_FEATURE_LEVEL._value2member_map_]
            if not supported:
                ctx.fail(FEATURE_UNSUPPORTED, "CheckFeatureSupport.queryData.RequestedFeatureLevels", actual=list(query.RequestedFeatureLevels), expected=f"a level <= {self.feature_level.dotted}")
                raise DmlError(HRESULT.DXGI_ERROR_UNSUPPORTED, ctx.findings, "CheckFeatureSupport")
            return DML_FEATURE_DATA_FEATURE_LEVELS(DML_FEATURE_LEVEL(max(supported)))
        ctx.fail(FEATURE_UNSUPPORTED, "CheckFeatureSupport.feature", actual=feature, expected="a DML_FEATURE value")
        raise DmlError(HRESULT.DXGI_ERROR_UNSUPPORTED, ctx.findings, "CheckFeatureSupport")


def _spec_of(desc: Any) -> OperatorSpec:
    from dmlpy.operators import REGISTRY  # noqa: PLC0415

    return REGISTRY[operator_desc(desc).Type]


def _required_descriptors(dispatchable: Any) -> int:
    props = getattr(dispatchable, "get_binding_properties", None)
    return props().RequiredDescriptorCount if props else 0


def create_device(
    feature_level: DML_FEATURE_LEVEL | int = DML_FEATURE_LEVEL.LEVEL_6_4,
    *,
    debug: bool = True,
    strict: bool = False,
    backend: str = "auto",
    threads: int = 0,
) -> Device:
    """DMLCreateDevice1: an emulated device at ``feature_level``.

    ``backend`` is ``"native"``, ``"numpy"`` or ``"auto"`` (native when it built;
    ``DMLPY_BACKEND`` overrides auto). ``strict=True`` turns warnings into errors.
    ``threads`` caps the native kernels' threads (0: every core).
    """
    try:
        level = DML_FEATURE_LEVEL(feature_level)
    except ValueError:
        msg = f"{feature_level!r} is not a DML_FEATURE_LEVEL"
        raise ValueError(msg) from None
    return Device(level, debug=debug, strict=strict, backend=get_backend(backend, threads))


def validate(desc: Any, feature_level: DML_FEATURE_LEVEL | int = DML_FEATURE_LEVEL.LEVEL_6_4) -> Report:
    """Every finding for an operator desc (bare or in a DML_OPERATOR_DESC) or a DML_GRAPH_DESC at ``feature_level``."""
    ctx = Checker(DML_FEATURE_LEVEL(feature_level))
    if isinstance(desc, DML_GRAPH_DESC):
        plan_graph(ctx, desc)
        return Report(ctx.findings)
    try:
        check_operator(ctx, desc)
    except FieldError as error:
        ctx.findings.append(error.finding)
    return Report(ctx.findings)


# ---------------------------------------------------------------------------------------
# The one-call path


def run(desc: Any, *, device: Device | None = None, backend: str = "auto", feature_level: DML_FEATURE_LEVEL | int | None = None, **inputs: Any) -> Any:
    """Run one operator through the whole pipeline and return its output(s) as arrays.

    Inputs are passed by the desc's tensor field names: ``run(pool_desc, InputTensor=x)``.
    The steps are DirectML's: CreateOperator, CompileOperator, an initializer (which takes
    the OWNED_BY_DML inputs), binding tables, RecordDispatch, execute, read back.
    """
    device = device or create_device(feature_level or DML_FEATURE_LEVEL.LEVEL_6_4, backend=backend)
    operator = device.create_operator(desc)
    compiled = device.compile_operator(operator)
    slots = compiled.input_slots()
    names = {s.name for s in slots}
    unknown = set(inputs) - names
    if unknown:
        msg = f"{operator.name} has no input {', '.join(sorted(unknown))}; its inputs are {', '.join(s.name for s in slots)}"
        raise TypeError(msg)
    missing = [s.name for s in slots if s.tensor is not None and s.name not in inputs]
    if missing:
        msg = f"{operator.name} needs {', '.join(missing)} (pass them as keyword arguments)"
        raise TypeError(msg)

    def upload(slot: Slot) -> Buffer | None:
        if slot.tensor is None:
            if inputs.get(slot.name) is not None:
                msg = f"{slot.name} was given, but the desc leaves it out (NULL)"
                raise TypeError(msg)
            return None
        buffer = device.create_buffer(slot.tensor.TotalTensorSizeInBytes, slot.name)
        _write_tensor(buffer, slot.tensor, inputs[slot.name], slot.name)
        return buffer

    in_buffers = [upload(s) for s in slots]
    out_buffers = [device.create_buffer(s.tensor.TotalTensorSizeInBytes, s.name) if s.tensor is not None else None for s in compiled.output_slots()]

    props = compiled.get_binding_properties()
    persistent = device.create_buffer(props.PersistentResourceSize, "persistent") if props.PersistentResourceSize else None
    recorder = device.create_command_recorder()
    command_list = device.create_command_list()

    initializer = device.create_operator_initializer([compiled])
    table = device.create_binding_table(initializer)
    table.bind_inputs([array_binding([buffer_binding(b).Desc if s.owned and b is not None else None for s, b in zip(slots, in_buffers, strict=True)])])
    table.bind_outputs([buffer_binding(persistent)])
    recorder.record_dispatch(command_list, initializer, table)

    table.reset(DML_BINDING_TABLE_DESC(compiled, 0, 0, props.RequiredDescriptorCount))
    table.bind_inputs([DML_BINDING_DESC() if s.owned else buffer_binding(b) for s, b in zip(slots, in_buffers, strict=True)])
    table.bind_outputs([buffer_binding(b) for b in out_buffers])
    table.bind_persistent_resource(buffer_binding(persistent) if persistent is not None else None)
    recorder.record_dispatch(command_list, compiled, table)
    command_list.close()
    device.execute(command_list)

    results = [b.read(s.tensor) for s, b in zip(compiled.output_slots(), out_buffers, strict=True) if b is not None and s.tensor is not None]
    return results[0] if len(results) == 1 else tuple(results)


def _write_tensor(buffer: Buffer, tensor: DML_BUFFER_TENSOR_DESC, value: Any, name: str) -> None:
    """Write a logical array through the tensor's strides, refusing lossy casts."""
    array = np.asarray(value)
    target = tensor.dtype
    if not np.can_cast(array.dtype, target, casting="same_kind"):
        msg = f"{name}: cannot pass {array.dtype} data to a {DML_TENSOR_DATA_TYPE(tensor.DataType).name} tensor without an explicit astype"
        raise TypeError(msg)
    sizes = tuple(tensor.Sizes or ())
    try:
        logical = np.broadcast_to(array, sizes)
    except ValueError:
        msg = f"{name}: an array of shape {array.shape} does not fit Sizes {sizes}"
        raise ValueError(msg) from None
    view = buffer.view(tensor, writeable=True)
    view[...] = logical
    # Strides that alias elements (0 for broadcast) keep one value per memory location.
    if not np.array_equal(view, logical.astype(view.dtype), equal_nan=True):
        msg = f"{name}: the array differs along axes whose Strides {tuple(tensor.element_strides)} make elements share memory (a 0 stride broadcasts one value)"
        raise ValueError(msg)


__all__ = [
    "DML_FEATURE_DATA_FEATURE_LEVELS",
    "DML_FEATURE_DATA_TENSOR_DATA_TYPE_SUPPORT",
    "DML_FEATURE_QUERY_FEATURE_LEVELS",
    "DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT",
    "CompiledOperator",
    "Device",
    "Operator",
    "OperatorInitializer",
    "create_device",
    "run",
    "validate",
]
