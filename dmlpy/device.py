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
import dataclasses
import itertools
import os
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
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
    DescriptorHeap,
    Slot,
    array_binding,
    buffer_binding,
    current_memory,
    same_memory,
    table_heap_range,
    tensor_view,
)
from dmlpy.enums import (
    DML_EXECUTION_FLAGS,
    DML_FEATURE,
    DML_FEATURE_LEVEL,
    DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT,
    DML_PERSISTENT_BUFFER_ALIGNMENT,
    DML_TENSOR_DATA_TYPE,
    HRESULT,
    c_name,
)
from dmlpy.errors import DmlError, DmlWarning, Finding, Report, Severity, int_argument
from dmlpy.execution import NOT_INITIALIZED, CommandList, CommandRecorder, execute_command_list
from dmlpy.graph import DML_GRAPH_DESC, CompiledGraph, compile_graph, plan_graph
from dmlpy.operators import NOT_EMULATED, OperatorSpec, binding_slots, check_operator, operator_desc, tensor_at
from dmlpy.rules import Checker, rule
from dmlpy.structs import FieldError
from dmlpy.support import data_type_supported
from dmlpy.tensor import DML_BUFFER_TENSOR_DESC, cast_to_data_type, is_owned_by_dml, layout_overlap, numpy_dtype, packed_strides

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
    """IDMLOperator: a validated desc, deep-copied and lowered once at CreateOperator, as DirectML copies it.

    ``desc`` hands out a copy: nothing done to it, or to the caller's dataclass, reaches a kernel.
    """

    __slots__ = ("__weakref__", "_desc", "_device", "_prepared", "_spec", "_warnings")

    def __init__(self, device: Device, spec: OperatorSpec, desc: Any, findings: list[Finding]) -> None:
        self._device = device
        self._spec = spec
        self._desc = copy.deepcopy(desc)
        self._warnings = [f for f in findings if f.severity is Severity.WARNING]
        # lowered once, here; an operator no kernel runs is never lowered (CompileOperator answers E_NOTIMPL)
        self._prepared = None if self.not_emulated else device.backend.prepare(spec, self._desc)

    @property
    def device(self) -> Device:
        return self._device

    @property
    def spec(self) -> OperatorSpec:
        return self._spec  # the registry's, read-only all through

    @property
    def desc(self) -> Any:
        return copy.deepcopy(self._desc)

    @property
    def warnings(self) -> list[Finding]:
        return list(self._warnings)

    @property
    def name(self) -> str:
        return c_name(self._spec.operator_type)

    def tensor(self, slot_name: str) -> DML_BUFFER_TENSOR_DESC | None:
        """The buffer desc of a binding slot (``OutputTensor``, or ``InputTensors[1]`` of a tensor array), as a copy."""
        tensor = tensor_at(self._desc, slot_name)
        return None if tensor is None else copy.deepcopy(tensor.buffer)

    def slots(self, role: str) -> list[Slot]:
        """The binding slots of ``role`` ("input" or "output") in binding order, tensor arrays flattened; copies."""
        return [
            Slot(name, None if tensor is None else copy.deepcopy(tensor.buffer), optional, role == "input" and is_owned_by_dml(tensor))
            for name, tensor, optional in binding_slots(self._spec, self._desc, role)
        ]

    @property
    def not_emulated(self) -> list[Finding]:
        """The OPERATOR.NOT_EMULATED findings: no kernel runs this operator (or its fused activation) yet."""
        return [f for f in self._warnings if f.rule == NOT_EMULATED.id]

    def __repr__(self) -> str:
        from dmlpy.display import operator_repr  # noqa: PLC0415 - display sits above the device

        return operator_repr(self)

    def _repr_html_(self) -> str:
        from dmlpy.display import operator_html  # noqa: PLC0415

        return operator_html(self)


class CompiledOperator:
    """IDMLCompiledOperator: an operator ready to bind; OWNED_BY_DML inputs live in its persistent resource.

    Everything a dispatch relies on (slots, sizes, persistent offsets, the lowered desc) is private;
    the public accessors return copies.
    """

    __slots__ = ("__weakref__", "_execution_flags", "_initialized", "_inputs", "_operator", "_outputs", "_persistent_offsets", "_prepared", "_properties")

    def __init__(self, operator: Operator, flags: DML_EXECUTION_FLAGS) -> None:
        self._operator = operator
        self._execution_flags = DML_EXECUTION_FLAGS(flags)
        self._initialized = False
        self._prepared = operator._prepared  # noqa: SLF001 - lowered once, at CreateOperator
        self._inputs = operator.slots("input")
        self._outputs = operator.slots("output")
        # persistent layout: each owned input at a 256-byte-aligned offset
        self._persistent_offsets: dict[str, int] = {}
        size = 0
        for slot in self._inputs:
            if slot.owned and slot.tensor is not None:
                self._persistent_offsets[slot.name] = size
                size = _align(size + slot.tensor.TotalTensorSizeInBytes, DML_PERSISTENT_BUFFER_ALIGNMENT)
        self._properties = DML_BINDING_PROPERTIES(
            RequiredDescriptorCount=sum(s.tensor is not None for s in self._inputs + self._outputs) + (1 if size else 0),
            TemporaryResourceSize=0,
            PersistentResourceSize=size,
        )

    @property
    def device(self) -> Device:
        return self._operator.device

    @property
    def operator(self) -> Operator:
        return self._operator

    @property
    def spec(self) -> OperatorSpec:
        return self._operator.spec

    @property
    def execution_flags(self) -> DML_EXECUTION_FLAGS:
        return self._execution_flags

    @property
    def in_place(self) -> bool:
        return bool(self._operator._spec.in_place)  # noqa: SLF001

    @property
    def initialized(self) -> bool:
        """Whether an initializer targeting this operator has executed."""
        return self._initialized

    @property
    def persistent_offsets(self) -> dict[str, int]:
        return dict(self._persistent_offsets)

    @property
    def name(self) -> str:
        return self._operator.name

    def __repr__(self) -> str:
        from dmlpy.display import compiled_repr  # noqa: PLC0415 - display sits above the device

        return compiled_repr(self)

    def _repr_html_(self) -> str:
        from dmlpy.display import compiled_html  # noqa: PLC0415

        return compiled_html(self)

    def input_slots(self) -> list[Slot]:
        return copy.deepcopy(self._inputs)

    def output_slots(self) -> list[Slot]:
        return copy.deepcopy(self._outputs)

    def get_binding_properties(self) -> DML_BINDING_PROPERTIES:
        return self._properties

    def _mark_initialized(self) -> None:
        self._initialized = True

    def record(self, table: BindingTable) -> Any:
        """The bindings as recorded; their memory is taken, and checked, when the dispatch executes."""
        name = self.name
        bound_inputs = table.inputs or (None,) * len(self._inputs)
        persistent = table.persistent
        inputs: list[tuple[Slot, BoundRange | None, str, int]] = []
        for i, (slot, bound) in enumerate(zip(self._inputs, bound_inputs, strict=True)):
            if slot.owned and slot.tensor is not None:
                inputs.append((slot, persistent, f"{name}.BindPersistentResource", self._persistent_offsets[slot.name]))
            else:
                inputs.append((slot, bound if isinstance(bound, BoundRange) else None, f"{name}.BindInputs[{i}] ({slot.name})", 0))
        bound_outputs = table.outputs or (None,) * len(self._outputs)
        outputs = [(slot, bound, f"{name}.BindOutputs[{j}] ({slot.name})") for j, (slot, bound) in enumerate(zip(self._outputs, bound_outputs, strict=True))]
        backend = self.device.backend
        ranges = [bound for _, bound, _, _ in inputs] + [bound for _, bound, _ in outputs]
        bound_to: list[Any] = [None, None]  # the memory the runner was built on, and the runner

        def run() -> None:
            if not self._initialized:
                ctx = Checker()
                ctx.fail(NOT_INITIALIZED, f"{name}.Execute", actual="not initialized", expected="initialized",
                         message="executes before any operator initializer targeting it was dispatched")  # fmt: skip
                self.device.remove(ctx.findings, "a compiled operator ran before its initializer")
            memory = current_memory(ranges)
            if not same_memory(bound_to[0], memory):
                ctx = Checker()
                ins = [BoundTensor(slot.name, _take(ctx, bound, slot, path, start, writable=False), slot.tensor) for slot, bound, path, start in inputs]
                outs = [BoundTensor(slot.name, _take(ctx, bound, slot, path, 0, writable=True), slot.tensor) for slot, bound, path in outputs]
                if ctx.has_errors:
                    self.device.remove(ctx.findings, f"{name} was executed on memory it cannot use")
                bound_to[:] = [memory, backend.bind(self._prepared, ins, outs)]
            bound_to[1]()

        return run


def _take(ctx: Checker, bound: BoundRange | None, slot: Slot, path: str, start: int, *, writable: bool) -> np.ndarray | None:
    """A slot's bytes: an owned input's own part of the persistent resource, otherwise the whole bound range."""
    if bound is None or slot.tensor is None:
        return None
    return bound.take(ctx, path, start, slot.tensor.TotalTensorSizeInBytes if slot.owned else None, writable=writable)


class OperatorInitializer:
    """IDMLOperatorInitializer: fills its targets' persistent resources and marks them initialized."""

    __slots__ = ("__weakref__", "_device", "_targets")

    def __init__(self, device: Device, operators: Sequence[CompiledOperator]) -> None:
        self._device = device
        self.reset(operators)

    def reset(self, operators: Sequence[CompiledOperator] | None) -> None:
        """IDMLOperatorInitializer::Reset: re-target."""
        self._device.check_alive()
        targets = list(operators or ())
        for op in targets:
            self._device.check_own(op, "CreateOperatorInitializer", (CompiledOperator, CompiledGraph))
        self._targets = tuple(targets)

    @property
    def device(self) -> Device:
        return self._device

    @property
    def targets(self) -> tuple[CompiledOperator | CompiledGraph, ...]:
        return self._targets

    @property
    def execution_flags(self) -> DML_EXECUTION_FLAGS:
        return DML_EXECUTION_FLAGS.NONE

    @property
    def in_place(self) -> bool:
        return False

    @property
    def name(self) -> str:
        return "IDMLOperatorInitializer"

    def input_slots(self) -> list[Slot]:
        return [Slot(f"{op.name}[{i}]", None, array=tuple(op.input_slots())) for i, op in enumerate(self._targets)]

    def output_slots(self) -> list[Slot]:
        return [
            Slot(f"{op.name}[{i}] persistent resource", None, is_resource=True, resource_size=op.get_binding_properties().PersistentResourceSize)
            for i, op in enumerate(self._targets)
        ]

    def get_binding_properties(self) -> DML_BINDING_PROPERTIES:
        owned = sum(s.owned for op in self._targets for s in op.input_slots())
        persistent = sum(op.get_binding_properties().PersistentResourceSize > 0 for op in self._targets)
        return DML_BINDING_PROPERTIES(max(1, owned + persistent), 0, 0)

    def record(self, table: BindingTable) -> Any:
        """The copies as recorded; their memory is taken, and checked, when the dispatch executes."""
        copies: list[tuple[BoundRange, int, BoundRange, int, str, str]] = []
        for t, op in enumerate(self._targets):
            entries = table.inputs[t] if table.inputs else None
            target = table.outputs[t] if table.outputs else None
            offsets = op.persistent_offsets
            for j, slot in enumerate(op.input_slots()):
                if not slot.owned or slot.tensor is None:
                    continue
                source = entries[j] if isinstance(entries, tuple) else None
                assert isinstance(source, BoundRange) and target is not None  # the table was checked complete for these slots
                path = f"{self.name}.BindInputs[{t}].Bindings[{j}] ({slot.name})"
                copies.append((target, offsets[slot.name], source, slot.tensor.TotalTensorSizeInBytes, f"{self.name}.BindOutputs[{t}] ({op.name}[{t}] persistent resource)", path))
        targets = self._targets
        device = self._device

        def run() -> None:
            ctx = Checker()
            pairs = [(target.take(ctx, target_path, offset, size, writable=True), source.take(ctx, path, 0, size, writable=False))
                     for target, offset, source, size, target_path, path in copies]  # fmt: skip
            if ctx.has_errors:
                device.remove(ctx.findings, "an operator initializer was executed on memory it cannot use")
            for destination, source in pairs:
                assert destination is not None and source is not None
                destination[:] = source
            for op in targets:
                op._mark_initialized()  # noqa: SLF001 - only an executed initializer initializes

        return run


# ---------------------------------------------------------------------------------------
# The device


class Device:
    """IDMLDevice (with IDMLDevice1): creates operators and the objects that run them."""

    __slots__ = ("__weakref__", "_backend", "_debug", "_feature_level", "_removal_findings", "_removed", "_run_cache", "_strict")

    def __init__(self, feature_level: DML_FEATURE_LEVEL | int, *, debug: bool, strict: bool, backend: Backend) -> None:
        self._feature_level = DML_FEATURE_LEVEL(feature_level)
        self._debug = bool(debug)
        self._strict = bool(strict)
        self._backend = backend
        self._removed: HRESULT | None = None
        self._removal_findings: list[Finding] = []
        self._run_cache = _RunCache()  # dmlpy.run's prepared pipelines on this device

    # A device's settings are fixed at DMLCreateDevice1, as DirectML's are.

    @property
    def feature_level(self) -> DML_FEATURE_LEVEL:
        return self._feature_level

    @property
    def debug(self) -> bool:
        return self._debug

    @property
    def strict(self) -> bool:
        return self._strict

    @property
    def backend(self) -> Backend:
        return self._backend

    @property
    def removal_findings(self) -> list[Finding]:
        return list(self._removal_findings)

    @property
    def backend_name(self) -> str:
        return self._backend.name

    def __repr__(self) -> str:
        from dmlpy.display import device_repr  # noqa: PLC0415 - display sits above the device

        return device_repr(self)

    def _repr_html_(self) -> str:
        from dmlpy.display import device_html  # noqa: PLC0415

        return device_html(self)

    # --- lifetime ---------------------------------------------------------------------

    def check_alive(self) -> None:
        if self._removed is not None:
            ctx = Checker()
            cause = "; ".join(str(f) for f in self._removal_findings) or self._removed.name
            ctx.fail(REMOVED, "IDMLDevice", actual="removed", expected="alive", message=f"was removed earlier by: {cause}. Create a new device.")
            raise DmlError(HRESULT.DXGI_ERROR_DEVICE_REMOVED, ctx.findings, "the device was removed")

    def remove(self, findings: list[Finding], summary: str) -> None:
        """Remove the device for a void-method misuse, and raise at the call that did it."""
        self._removed = HRESULT.E_INVALIDARG
        self._removal_findings = list(findings)
        raise DmlError(HRESULT.E_INVALIDARG, findings, summary + "; the device is now removed")

    def get_device_removed_reason(self) -> HRESULT:
        return HRESULT.S_OK if self._removed is None else self._removed

    def check_own(self, child: Any, method: str, kinds: type | tuple[type, ...]) -> None:
        """``child`` is one of ``kinds`` and this device made it (its ``device`` is read-only, so it cannot be claimed)."""
        self.check_alive()
        if not isinstance(child, kinds) or child.device is not self:
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
        # strict turns warnings about the desc into errors; "no kernel yet" is not about the desc
        errors = [f for f in ctx.findings if f.severity is Severity.ERROR or (self.strict and f.rule != NOT_EMULATED.id)]
        if errors or normalized is None:
            raise DmlError(HRESULT.E_INVALIDARG, errors, f"CreateOperator rejected the desc ({len(errors)} error{'s' * (len(errors) != 1)})")
        for finding in ctx.findings:
            warnings.warn(DmlWarning(finding), stacklevel=2)
        return Operator(self, _spec_of(desc), normalized, ctx.findings)

    def compile_operator(self, operator: Operator, flags: DML_EXECUTION_FLAGS | int = DML_EXECUTION_FLAGS.NONE) -> CompiledOperator:
        """IDMLDevice::CompileOperator; E_NOTIMPL for a valid operator no kernel runs yet."""
        self.check_own(operator, "CompileOperator", Operator)
        if operator.not_emulated:
            raise DmlError(HRESULT.E_NOTIMPL, operator.not_emulated, f"CompileOperator: dmlpy validates {operator.name} but cannot run it yet")
        return CompiledOperator(operator, DML_EXECUTION_FLAGS(flags))

    def owns_operator(self, operator: Any) -> bool:
        """Whether ``operator`` is an IDMLOperator this device created (a graph node must be one)."""
        return isinstance(operator, Operator) and operator.device is self

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
        if operators is not None and (isinstance(operators, (str, bytes)) or not isinstance(operators, Sequence)):
            msg = f"CreateOperatorInitializer: operators is a {type(operators).__name__}, expected a list of compiled operators or graphs"
            raise TypeError(msg)
        return OperatorInitializer(self, operators or ())

    def create_binding_table(self, desc: DML_BINDING_TABLE_DESC | CompiledOperator | OperatorInitializer | None = None) -> BindingTable:
        """IDMLDevice::CreateBindingTable. A bare dispatchable gets a desc sized to its RequiredDescriptorCount."""
        self.check_alive()
        if desc is None:
            return BindingTable(self, DML_BINDING_TABLE_DESC())
        if not isinstance(desc, DML_BINDING_TABLE_DESC):
            desc = DML_BINDING_TABLE_DESC(desc, 0, 0, _required_descriptors(desc))
        return BindingTable(self, desc, self.check_binding_table_desc(desc))

    def create_descriptor_heap(self, num_descriptors: int, name: str = "") -> DescriptorHeap:
        """ID3D12Device::CreateDescriptorHeap: a shader-visible CBV_SRV_UAV heap of ``num_descriptors`` slots
        for binding tables (``heap.cpu_handle(i)`` / ``heap.gpu_handle(i)`` go into DML_BINDING_TABLE_DESC)."""
        self.check_alive()
        return DescriptorHeap(self, num_descriptors, name)

    def check_binding_table_desc(self, desc: DML_BINDING_TABLE_DESC) -> tuple[DescriptorHeap, int, int] | None:
        """What CreateBindingTable and IDMLBindingTable::Reset check of a DML_BINDING_TABLE_DESC; returns the
        descriptor heap range it names (None: no heap)."""
        ctx = Checker()
        dispatchable = desc.Dispatchable
        if ctx.check(isinstance(dispatchable, (CompiledOperator, CompiledGraph, OperatorInitializer)) and dispatchable.device is self, TABLE_DISPATCHABLE,
                     "DML_BINDING_TABLE_DESC.Dispatchable", actual=type(dispatchable).__name__, expected="a compiled operator or initializer of this device"):  # fmt: skip
            required = dispatchable.get_binding_properties().RequiredDescriptorCount
            ctx.check(desc.SizeInDescriptors >= required, TABLE_DESCRIPTORS, "DML_BINDING_TABLE_DESC.SizeInDescriptors", actual=desc.SizeInDescriptors, expected=f">= {required}",
                      message=f"is {desc.SizeInDescriptors}, expected at least RequiredDescriptorCount = {required}")  # fmt: skip
        heap_range = table_heap_range(ctx, desc, self)
        if ctx.findings:
            raise DmlError(HRESULT.E_INVALIDARG, ctx.findings, "CreateBindingTable")
        return heap_range

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
        msg = f"create_device: feature_level {feature_level!r} is not a DML_FEATURE_LEVEL"
        raise ValueError(msg) from None
    return Device(level, debug=debug, strict=strict, backend=get_backend(backend, threads))


def validate(desc: Any, feature_level: DML_FEATURE_LEVEL | int = DML_FEATURE_LEVEL.LEVEL_6_4) -> Report:
    """Every finding for an operator desc (bare or in a DML_OPERATOR_DESC) or a DML_GRAPH_DESC at ``feature_level``."""
    try:
        ctx = Checker(DML_FEATURE_LEVEL(feature_level))
    except ValueError:
        msg = f"validate: feature_level {feature_level!r} is not a DML_FEATURE_LEVEL"
        raise ValueError(msg) from None
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
    A value the cast to the tensor's DataType would change is refused (``cast_to_data_type``:
    ``ValueError`` for int64 300 into INT8, ``TypeError`` for floats into an integer tensor).
    The steps are DirectML's: CreateOperator, CompileOperator, an initializer (which takes
    the OWNED_BY_DML inputs), binding tables, RecordDispatch, execute, read back.

    The prepared pipeline is kept per device and keyed by the desc's value (not the object), so
    running an equal desc again only copies the inputs in, executes the recorded command list
    (re-running the initializer when the desc has OWNED_BY_DML inputs) and copies the outputs out
    (from 256 KiB a packed tensor is lent instead, as GraphProgram's call describes).
    Without ``device`` the run uses a shared device for ``backend`` and ``feature_level``.
    """
    if device is not None and not isinstance(device, Device):
        msg = f"run: device is a {type(device).__name__}, expected a dmlpy Device (or None; backend='numpy' picks a backend)"
        raise TypeError(msg)
    if device is None:
        device = _shared_device(backend, feature_level)
    key = _desc_key(desc)
    cache = device._run_cache  # noqa: SLF001 - the device's own cache
    prepared = cache.get(key) if key is not _NO_KEY else None
    if prepared is None:
        prepared = _PreparedRun(device, desc)
        if key is not _NO_KEY:
            cache.put(key, prepared, prepared.nbytes)
    else:
        for finding in prepared.warnings:
            warnings.warn(DmlWarning(finding), stacklevel=2)
    return prepared(inputs)


# From this size a prepared call lends its buffers memory instead of copying: the user's input array, and a
# fresh array for an output that becomes the result. The buffers get new memory at each call, so the recorded
# dispatch binds again (about 15 us for one operator, the nodes at the graph's edges for a graph), which a
# copy of 256 KiB costs too; past it, copying in and out (two passes over memory the kernel's one pass
# would need) is what the call spends. Measured on a 1 MB ReLU GraphProgram call, one thread: 0.27 -> 0.15 ms.
_LEND_BYTES = 256 * 1024


class _Port:
    """One tensor of a prepared call: its buffer, and the fastest correct way to write or read it."""

    __slots__ = ("_fresh", "_memory", "_own", "_view", "buffer", "dtype", "lends", "name", "one_to_one", "shape", "tensor")

    def __init__(self, buffer: Buffer, tensor: DML_BUFFER_TENSOR_DESC, name: str) -> None:
        self.buffer, self.tensor, self.name = buffer, tensor, name
        self.dtype = numpy_dtype(tensor.DataType)
        self.shape = tuple(int(s) for s in tensor.Sizes or ())
        self.one_to_one = layout_overlap(self.shape, tensor.element_strides) is None
        self._memory: np.ndarray | None = None
        self._view: np.ndarray | None = None
        self._own = buffer._data  # noqa: SLF001 - the buffer's own memory, given back after every lent call
        self._fresh: np.ndarray | None = None
        # packed in C order with nothing past the elements: an array of the tensor's shape is the buffer's bytes
        nbytes = self.dtype.itemsize * int(np.prod(self.shape, dtype=np.int64))
        self.lends = tensor.element_strides == packed_strides(self.shape) and tensor.TotalTensorSizeInBytes == nbytes >= _LEND_BYTES

    def view(self) -> np.ndarray:
        """The tensor's strided view of the memory the buffer holds now (rebuilt when ``data`` was replaced)."""
        memory = self.buffer._data  # noqa: SLF001
        if memory is not self._memory:
            self._view = tensor_view(memory, self.tensor, writeable=bool(memory.flags.writeable))
            self._memory = memory
        assert self._view is not None
        return self._view

    def write(self, value: Any) -> None:
        """``_write_tensor``, with its checks skipped only where they cannot fail: an array of the tensor's
        own dtype and shape, into a layout that gives every element its own memory. A large packed input lends
        the array itself (read only, for this call) when it is C-contiguous and 16-byte aligned, as every
        buffer's memory is."""
        if type(value) is np.ndarray and value.dtype == self.dtype and value.shape == self.shape and self.one_to_one:
            if self.lends and value.flags.c_contiguous and value.ctypes.data % DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT == 0:
                self.buffer._data = value.reshape(-1).view(np.uint8)  # noqa: SLF001 - what Buffer.data's setter checks, checked above
                return
            self.restore()
            view = self.view()
            if view.flags.writeable:
                np.copyto(view, value)
                return
        self.restore()
        _write_tensor(self.buffer, self.tensor, value, self.name)

    def prepare_output(self) -> None:
        """A large packed output is written into fresh memory that read() hands over as the result."""
        if self.lends:
            fresh = np.empty(self.tensor.TotalTensorSizeInBytes, np.uint8)
            if fresh.ctypes.data % DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT == 0:
                self.buffer._data = self._fresh = fresh  # noqa: SLF001

    def read(self) -> np.ndarray:
        fresh = self._fresh
        if fresh is not None:
            self._fresh = None
            self.restore()
            return fresh.view(self.dtype).reshape(self.shape)
        return np.array(self.view())

    def restore(self) -> None:
        """The buffer's own memory again: lent memory is never kept past its call."""
        self._fresh = None
        if self.buffer._data is not self._own:  # noqa: SLF001
            self.buffer._data = self._own  # noqa: SLF001


def _call_ports(device: Device, lists: Sequence[CommandList], inputs: Sequence[tuple[_Port, Any]], outputs: Sequence[_Port]) -> None:
    """A prepared call's middle: write the inputs, execute the lists with the outputs' fresh memory in place.
    Lent memory goes back to the buffers when the call fails, and the inputs' when it ends; the outputs'
    goes with the results, at read()."""
    try:
        for port, value in inputs:
            port.write(value)
        for port in outputs:
            port.prepare_output()
        for command_list in lists:
            device.execute(command_list)
    except BaseException:
        for port in (*(port for port, _ in inputs), *outputs):
            port.restore()
        raise
    for port, _ in inputs:
        port.restore()


class _PreparedRun:
    """``run``'s pipeline for one desc, made once: buffers, initializer, binding tables, recorded command lists."""

    def __init__(self, device: Device, desc: Any) -> None:
        operator = device.create_operator(desc)
        self.warnings = operator.warnings
        compiled = device.compile_operator(operator)
        self.name = operator.name
        slots = compiled.input_slots()
        self.slot_names = [s.name for s in slots]
        self.required = [s.name for s in slots if s.tensor is not None]
        self.absent = frozenset(s.name for s in slots if s.tensor is None)
        self.accepted = frozenset(self.slot_names)
        # a tensor array (JOIN's InputTensors) may be passed as one sequence: InputTensors=[a, b] binds InputTensors[0], [1]
        self.arrays = frozenset(name.partition("[")[0] for name in self.slot_names if name.endswith("]"))
        in_buffers = [device.create_buffer(s.tensor.TotalTensorSizeInBytes, s.name) if s.tensor is not None else None for s in slots]
        out_buffers = [device.create_buffer(s.tensor.TotalTensorSizeInBytes, s.name) if s.tensor is not None else None for s in compiled.output_slots()]
        props = compiled.get_binding_properties()
        owned = ", ".join(s.name for s in slots if s.owned and s.tensor is not None)
        persistent = device.create_buffer(props.PersistentResourceSize, f"persistent resource ({owned})") if props.PersistentResourceSize else None
        recorder = device.create_command_recorder()

        initializer = device.create_operator_initializer([compiled])
        init_table = device.create_binding_table(initializer)
        init_table.bind_inputs([array_binding([buffer_binding(b).Desc if s.owned and b is not None else None for s, b in zip(slots, in_buffers, strict=True)])])
        init_table.bind_outputs([buffer_binding(persistent)])
        init_list = device.create_command_list()
        recorder.record_dispatch(init_list, initializer, init_table)
        init_list.close()
        device.execute(init_list)  # marks the operator initialized; executed again per call only for owned inputs

        table = device.create_binding_table(DML_BINDING_TABLE_DESC(compiled, 0, 0, props.RequiredDescriptorCount))
        table.bind_inputs([DML_BINDING_DESC() if s.owned else buffer_binding(b) for s, b in zip(slots, in_buffers, strict=True)])
        table.bind_outputs([buffer_binding(b) for b in out_buffers])
        table.bind_persistent_resource(buffer_binding(persistent) if persistent is not None else None)
        command_list = device.create_command_list()
        recorder.record_dispatch(command_list, compiled, table)
        command_list.close()
        self.lists = (init_list, command_list) if any(s.owned and s.tensor is not None for s in slots) else (command_list,)
        self.device = device
        self.inputs = [(s.name, _Port(b, s.tensor, s.name)) for s, b in zip(slots, in_buffers, strict=True) if b is not None and s.tensor is not None]
        self.outputs = [_Port(b, s.tensor, s.name) for s, b in zip(compiled.output_slots(), out_buffers, strict=True) if b is not None and s.tensor is not None]
        self.nbytes = sum(b.size for b in (*in_buffers, *out_buffers, persistent) if b is not None)

    def __call__(self, inputs: dict[str, Any]) -> Any:
        if self.arrays:
            inputs = _expand_arrays(inputs, self.arrays)
        if self.absent or inputs.keys() != self.accepted:
            self._check_names(inputs)
        outputs = self.outputs
        _call_ports(self.device, self.lists, [(port, inputs[name]) for name, port in self.inputs], outputs)
        if len(outputs) == 1:
            return outputs[0].read()
        return tuple(port.read() for port in outputs)

    def _check_names(self, inputs: dict[str, Any]) -> None:
        unknown = set(inputs) - self.accepted
        if unknown:
            msg = f"{self.name} has no input {', '.join(sorted(unknown))}; its inputs are {', '.join(self.slot_names)}"
            raise TypeError(msg)
        missing = [n for n in self.required if n not in inputs]
        if missing:
            msg = f"{self.name} needs {', '.join(missing)} (pass them as keyword arguments)"
            raise TypeError(msg)
        for name in self.absent:
            if inputs.get(name) is not None:
                msg = f"{name} was given, but the desc leaves it out (NULL)"
                raise TypeError(msg)


def _expand_arrays(inputs: dict[str, Any], arrays: frozenset[str]) -> dict[str, Any]:
    """``InputTensors=[a, b]`` as ``InputTensors[0]=a, InputTensors[1]=b``; other inputs as they are."""
    expanded: dict[str, Any] = {}
    for key, value in inputs.items():
        if key in arrays and isinstance(value, (list, tuple)):
            expanded.update({f"{key}[{i}]": element for i, element in enumerate(value)})
        else:
            expanded[key] = value
    return expanded


class _RunCache:
    """The prepared runs of one device, least recently used first out, bounded in count and in bytes held."""

    MAX_ENTRIES = 32
    MAX_BYTES = 256 * 2**20

    __slots__ = ("_bytes", "_entries")

    def __init__(self) -> None:
        self._entries: OrderedDict[Any, tuple[_PreparedRun, int]] = OrderedDict()
        self._bytes = 0

    def get(self, key: Any) -> _PreparedRun | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        self._entries.move_to_end(key)
        return entry[0]

    def put(self, key: Any, prepared: _PreparedRun, nbytes: int) -> None:
        if nbytes > self.MAX_BYTES:
            return
        old = self._entries.pop(key, None)
        if old is not None:
            self._bytes -= old[1]
        self._entries[key] = (prepared, nbytes)
        self._bytes += nbytes
        while len(self._entries) > self.MAX_ENTRIES or self._bytes > self.MAX_BYTES:
            _, (_, dropped) = self._entries.popitem(last=False)
            self._bytes -= dropped

    def __len__(self) -> int:
        return len(self._entries)


_SHARED_DEVICES: dict[tuple[Any, ...], Device] = {}


def _shared_device(backend: str, feature_level: DML_FEATURE_LEVEL | int | None) -> Device:
    """The device ``run`` uses without one: one per backend, feature level and backend environment, replaced once removed."""
    key = (backend, feature_level, os.environ.get("DMLPY_BACKEND"), os.environ.get("DMLPY_NUM_THREADS"))
    device = _SHARED_DEVICES.get(key)
    if device is None or device._removed is not None:  # noqa: SLF001
        device = create_device(feature_level or DML_FEATURE_LEVEL.LEVEL_6_4, backend=backend)
        _SHARED_DEVICES[key] = device
    return device


_Key = Callable[[Any], Any]
_KEYS: dict[type, _Key] = {}
_INT_KINDS: set[type] = set()  # int subclasses met (enums): keyed by their type and value
_INTS = {int}
_NO_KEY = object()  # a value without a key: ``_NO_KEY in keys`` compares by identity first, so it never calls __eq__ on user values


def _desc_key(value: Any) -> Any:
    """A hashable key equal for two descs only when they hold the same values of the same types (floats by
    their bits, so -0.0 and 0.0 differ); ``_NO_KEY`` when a value has no such key (then nothing is cached).
    Built by one small function per type, since it runs at every ``run``."""
    key = _KEYS.get(type(value))
    if key is None:
        key = _KEYS[type(value)] = _key_for(type(value), value)
    return key(value)


def _key_for(kind: type, sample: Any) -> _Key:
    if kind is int or kind is str or kind is type(None):
        return lambda v: v
    if kind is bool:
        return lambda v: (bool, v)
    if kind is float:
        return lambda v: (float, v.hex())
    if issubclass(kind, int):  # IntEnum, numpy integers
        _INT_KINDS.add(kind)
        return lambda v: (kind, int(v))
    if issubclass(kind, np.floating):
        return lambda v: (kind, float(v).hex())
    if kind is tuple or kind is list:
        def sequence(v: Any) -> Any:
            if set(map(type, v)) <= _INTS:  # Sizes, Strides, Axes: ints are their own keys
                return tuple(v)
            keys = tuple([_desc_key(x) for x in v])
            return _NO_KEY if _NO_KEY in keys else keys
        return sequence
    if dataclasses.is_dataclass(kind):
        return _dataclass_key(kind, sample)
    return lambda v: _NO_KEY


_KEY_DEPTH = 4  # nested descs written into their parent's key function (a tensor desc's buffer desc is 2 deep)


def _dataclass_key(kind: type, sample: Any) -> _Key:
    """The key of a desc dataclass as straight-line code, generated once per type: a call per field, or per
    nested desc, was most of ``run``'s time. The nested descs of the first value seen (a tensor desc and its
    buffer desc) are written inline behind a type check; any other value of a field takes ``_desc_key``. The
    key is the same as one built field by field: (type, field keys...), nested descs as nested tuples."""
    lines = ["def key(v):"]
    names: dict[str, Any] = {"_desc_key": _desc_key, "_NO_KEY": _NO_KEY, "_INT_KINDS": _INT_KINDS, "_INTS": _INTS}
    count = itertools.count()

    def leaf(var: str, pad: str) -> str:
        k = f"k{next(count)}"
        lines.extend(f"{pad}{line}" for line in (
            f"t = type({var})",
            f"if t is int or {var} is None: {k} = {var}",
            f"elif t in _INT_KINDS: {k} = (t, int({var}))",
            f"elif (t is list or t is tuple) and set(map(type, {var})) <= _INTS: {k} = tuple({var})",
            "else:",
            f"    {k} = _desc_key({var})",
            f"    if {k} is _NO_KEY: return _NO_KEY",
        ))  # fmt: skip
        return k

    def fields(of: type, value: Any, var: str, pad: str, depth: int) -> str:
        type_name = f"T{next(count)}"
        names[type_name] = of
        keys = [type_name]
        for f in dataclasses.fields(of):
            field_var = f"x{next(count)}"
            lines.append(f"{pad}{field_var} = {var}.{f.name}")
            x = getattr(value, f.name, None)
            if dataclasses.is_dataclass(type(x)) and depth < _KEY_DEPTH:
                k = f"k{next(count)}"
                nested_name = f"T{next(count)}"
                names[nested_name] = type(x)
                lines.append(f"{pad}if type({field_var}) is {nested_name}:")
                inner = fields(type(x), x, field_var, pad + "    ", depth + 1)
                lines.append(f"{pad}    {k} = {inner}")
                lines.append(f"{pad}else:")
                other = leaf(field_var, pad + "    ")
                lines.append(f"{pad}    {k} = {other}")
                keys.append(k)
            else:
                keys.append(leaf(field_var, pad))
        k = f"k{next(count)}"
        lines.append(f"{pad}{k} = ({', '.join(keys)},)")
        return k

    lines.append(f"    return {fields(kind, sample, 'v', '    ', 1)}")
    exec("\n".join(lines), names)  # noqa: S102 - source built above from field names alone
    return names["key"]


def _write_tensor(buffer: Buffer, tensor: DML_BUFFER_TENSOR_DESC, value: Any, name: str) -> None:
    """Write a logical array through the tensor's strides, refusing every cast that changes a value (``cast_to_data_type``)."""
    array = cast_to_data_type(value, tensor.DataType, name)
    sizes = tuple(tensor.Sizes or ())
    try:
        logical = np.broadcast_to(array, sizes)
    except ValueError:
        msg = f"{name}: an array of shape {array.shape} does not fit Sizes {sizes}"
        raise ValueError(msg) from None
    view = buffer.view(tensor, writeable=True)
    view[...] = logical
    if layout_overlap(sizes, tensor.element_strides) is None:
        return
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
