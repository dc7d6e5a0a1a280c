"""How dmlpy's objects look in a REPL and in a notebook.

Every desc dataclass is shown by walking ``dataclasses.fields`` and the C kind each field
carries (``dmlpy/structs.py``), so a desc class added later displays without code of its
own. ``repr`` is short and multi-line; ``_repr_html_`` is a table of C field names, C types
and values, with the C++ that builds the desc. Reports link every rule id to its family on
docs/rules.md; graphs are drawn as SVG, layer by layer in topological order.

Every value that reaches HTML goes through ``html.escape``: names, paths and messages may
hold anything a caller put in them.
"""

from __future__ import annotations

import dataclasses
import enum
import html
from collections.abc import Sequence
from typing import Any

from dmlpy.enums import c_name, c_text
from dmlpy.errors import Finding, Severity
from dmlpy.structs import Kind, is_struct, to_cpp

# Where rule ids link to. Relative to the repository root, as README.md links it; set an
# absolute URL here to make the links work from a notebook anywhere.
RULES_PAGE = "docs/rules.md"

_STYLE = (
    "<style>"
    ".dmlpy{font-family:sans-serif;font-size:13px}"
    ".dmlpy table{border-collapse:collapse;font-family:sans-serif;font-size:13px;margin:2px 0}"
    ".dmlpy th,.dmlpy td{border:1px solid #bbb;padding:2px 6px;text-align:left;vertical-align:top}"
    ".dmlpy th{background:#e8eef7}"
    ".dmlpy caption{text-align:left;font-weight:bold;padding:2px 0}"
    ".dmlpy code,.dmlpy pre{font-family:monospace;font-size:12px}"
    ".dmlpy .error{color:#b00020;font-weight:bold}.dmlpy .warning{color:#9a6700;font-weight:bold}"
    ".dmlpy .muted{color:#777}"
    "</style>"
)

_e = html.escape


# ---------------------------------------------------------------------------------------
# Values as text


def enum_text(value: Any) -> str:
    """An enum member by its C name; a value the enum does not define as a bare number."""
    return c_text(value) if isinstance(value, enum.Enum) else repr(value)


def _array_text(values: Any) -> str:
    if isinstance(values, (str, bytes)):  # not an array: show what it is
        return repr(values)
    try:
        return "{" + ", ".join(str(v) for v in values) + "}"
    except TypeError:
        return repr(values)


def tensor_text(tensor: Any) -> str:
    """A tensor desc in one line: ``DML_BUFFER_TENSOR_DESC(FLOAT32, {1, 1, 4, 4})``."""
    from dmlpy.tensor import DML_BUFFER_TENSOR_DESC, DML_TENSOR_DESC  # noqa: PLC0415 - display sits above tensor

    if isinstance(tensor, DML_TENSOR_DESC) and isinstance(tensor.Desc, DML_BUFFER_TENSOR_DESC):
        tensor = tensor.Desc
    if not isinstance(tensor, DML_BUFFER_TENSOR_DESC):
        return repr(tensor)
    dtype = tensor.DataType.name if isinstance(tensor.DataType, enum.Enum) else repr(tensor.DataType)
    parts = [dtype, _array_text(tensor.Sizes) if tensor.Sizes is not None else "Sizes=NULL"]
    if tensor.Strides is not None:
        parts.append(f"Strides={_array_text(tensor.Strides)}")
    flags = tensor.Flags
    if isinstance(flags, enum.Flag) and flags.value or not isinstance(flags, enum.Flag) and flags:
        parts.append(enum_text(flags) if isinstance(flags, enum.Flag) else f"Flags={flags!r}")
    return f"DML_BUFFER_TENSOR_DESC({', '.join(parts)})"


def _kind(field: dataclasses.Field[Any]) -> Kind | None:
    return field.metadata.get("kind")


def _inner(value: Any) -> Any:
    """The operator desc inside a DML_OPERATOR_DESC (the wrapper says nothing the class does not)."""
    if type(value).__name__ == "DML_OPERATOR_DESC" and is_struct(getattr(value, "Desc", None)):
        return value.Desc
    return value


def field_text(field: dataclasses.Field[Any], value: Any) -> str:
    """One field's value as a C programmer would say it."""
    kind = _kind(field)
    if value is None:
        return "None (derived)" if kind is Kind.DIMENSION_COUNT else "NULL" if kind is not None else "None"
    if kind is Kind.TENSOR or (kind is Kind.DESC_POINTER and type(value).__name__ == "DML_BUFFER_TENSOR_DESC"):
        return tensor_text(value)
    if kind in (Kind.OPERATOR, Kind.DESC_POINTER) and is_struct(value):
        return short_text(_inner(value))
    if kind is Kind.UINT_ARRAY:
        return _array_text(value)
    if kind is Kind.BOOL and isinstance(value, (bool, int)):
        return "TRUE" if value else "FALSE"
    if kind in (Kind.ENUM, Kind.FLAGS):
        enum_type = field.metadata.get("enum")
        if isinstance(value, enum.Enum):
            return enum_text(value)
        name = enum_type.__name__ if enum_type is not None else "enum"
        return f"{value!r} (not a {name} value)"
    if is_struct(value):
        return short_text(value)
    if isinstance(value, enum.Enum):
        return enum_text(value)
    return repr(value)


def short_text(desc: Any) -> str:
    """A nested desc in one line: its tensors and NULLs left out."""
    if type(desc).__name__ in ("DML_TENSOR_DESC", "DML_BUFFER_TENSOR_DESC"):
        return tensor_text(desc)
    parts = []
    for f in dataclasses.fields(desc):
        value = getattr(desc, f.name)
        if _kind(f) is Kind.TENSOR or value is None:
            continue
        parts.append(f"{f.name}={field_text(f, value)}")
    return f"{type(desc).__name__}({', '.join(parts)})"


def desc_repr(desc: Any) -> str:
    """A desc, one field a line, nested tensors in one line each."""
    rows = [f"    {f.name}={field_text(f, getattr(desc, f.name))}," for f in dataclasses.fields(desc)]
    if not rows:
        return f"{type(desc).__name__}()"
    return "\n".join([f"{type(desc).__name__}(", *rows, ")"])


# ---------------------------------------------------------------------------------------
# Descs as HTML


def _c_type(field: dataclasses.Field[Any]) -> str:
    kind = _kind(field)
    if kind is None:
        return ""
    if kind in (Kind.ENUM, Kind.FLAGS):
        enum_type = field.metadata.get("enum")
        return enum_type.__name__ if enum_type is not None else "enum"
    return str(kind.value)


def desc_table(desc: Any, caption: str | None = None) -> str:
    """The fields of ``desc`` as an HTML table (nested operator descs as nested tables)."""
    rows = []
    for f in dataclasses.fields(desc):
        value = getattr(desc, f.name)
        kind = _kind(f)
        inner = _inner(value)
        if kind in (Kind.OPERATOR, Kind.DESC_POINTER) and is_struct(inner) and type(inner).__name__ not in ("DML_BUFFER_TENSOR_DESC",):
            cell = desc_table(inner)
        else:
            cell = f"<code>{_e(field_text(f, value))}</code>"
        rows.append(f"<tr><td><code>{_e(f.name)}</code></td><td><code>{_e(_c_type(f))}</code></td><td>{cell}</td></tr>")
    title = _e(caption if caption is not None else type(desc).__name__)
    return (
        f"<table><caption>{title}</caption><thead><tr><th>field</th><th>C type</th><th>value</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def desc_html(desc: Any) -> str:
    """A desc's field table and, folded, the C++ that builds it."""
    caption = type(desc).__name__
    try:
        from dmlpy.operators import spec_for_desc  # noqa: PLC0415 - display sits above operators

        spec = spec_for_desc(desc)
    except ImportError:  # pragma: no cover - operators always import
        spec = None
    if spec is not None:
        caption += f" ({c_name(spec.operator_type)})"
    try:
        cpp = to_cpp(desc)
    except (TypeError, ValueError, AttributeError) as error:  # a field C could not hold at all (a number where a struct goes)
        cpp = f"// no C++: {error}"
    return (
        f'<div class="dmlpy">{_STYLE}{desc_table(desc, caption)}'
        f"<details><summary>C++</summary><pre>{_e(cpp)}</pre></details></div>"
    )


# ---------------------------------------------------------------------------------------
# Findings


def rule_anchor(rule_id: str) -> str:
    """The anchor GitHub gives the heading of the rule's family on docs/rules.md (``## SPACE_DEPTH`` -> ``space_depth``)."""
    family = rule_id.split(".", 1)[0]
    return "".join(c for c in family.lower() if c.isalnum() or c in "-_ ").replace(" ", "-")


def rule_link(rule_id: str) -> str:
    return f'<a href="{_e(RULES_PAGE)}#{_e(rule_anchor(rule_id))}" title="{_e(rule_id)} on docs/rules.md"><code>{_e(rule_id)}</code></a>'


def findings_html(findings: Sequence[Finding], title: str) -> str:
    errors = sum(f.severity is Severity.ERROR for f in findings)
    warnings = len(findings) - errors
    head = f"{_e(title)}: {errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}"
    if not findings:
        return f'<div class="dmlpy">{_STYLE}<p>{_e(title)}: no findings</p></div>'
    rows = "".join(
        f'<tr><td class="{_e(f.severity.value)}">{_e(f.severity.value)}</td><td>{rule_link(f.rule)}</td>'
        f"<td><code>{_e(f.path)}</code></td><td>{_e(f.message)}</td></tr>"
        for f in findings
    )
    return (
        f'<div class="dmlpy">{_STYLE}<table><caption>{head}</caption>'
        f"<thead><tr><th>severity</th><th>rule</th><th>path</th><th>message</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></div>"
    )


def report_html(report: Any) -> str:
    return findings_html(report.findings, "Report")


def error_html(error: Any) -> str:
    hresult = error.hresult
    title = f"DmlError {hresult.name} (0x{hresult.value:08X})" + (f": {error.summary}" if error.summary else "")
    return findings_html(error.findings, title)


# ---------------------------------------------------------------------------------------
# Devices, operators, binding properties


def _table(caption: str, rows: Sequence[tuple[str, str]]) -> str:
    """Rows of (name, already-escaped HTML)."""
    body = "".join(f"<tr><th>{_e(name)}</th><td>{cell}</td></tr>" for name, cell in rows)
    return f"<table><caption>{_e(caption)}</caption><tbody>{body}</tbody></table>"


def _device_state(device: Any) -> str:
    reason = device.get_device_removed_reason()
    return "alive" if reason.value == 0 else f"removed ({reason.name})"


def device_repr(device: Any) -> str:
    return (
        f"<dmlpy.Device backend={device.backend_name!r} feature_level={c_name(device.feature_level)} "
        f"debug={bool(device.debug)} strict={bool(device.strict)} {_device_state(device)}>"
    )


def device_html(device: Any) -> str:
    rows = [
        ("backend", f"<code>{_e(device.backend_name)}</code>"),
        ("feature level", f"<code>{_e(c_name(device.feature_level))}</code> ({_e(device.feature_level.dotted)})"),
        ("debug", _e(str(bool(device.debug)))),
        ("strict", _e(str(bool(device.strict))) + ' <span class="muted">(warnings are errors)</span>' * bool(device.strict)),
        ("state", _e(_device_state(device))),
    ]
    removal = "".join(f"<li>{_e(str(f))}</li>" for f in getattr(device, "removal_findings", []))
    return f'<div class="dmlpy">{_STYLE}{_table("IDMLDevice", rows)}' + (f"<ul>{removal}</ul>" if removal else "") + "</div>"


def _slot_rows(slots: Sequence[Any], direction: str) -> list[str]:
    rows = []
    for index, slot in enumerate(slots):
        notes = [word for word, on in (("optional", slot.optional), ("OWNED_BY_DML", slot.owned)) if on]
        tensor = "NULL" if slot.tensor is None else tensor_text(slot.tensor)
        rows.append(
            f"<tr><td>{_e(direction)} {index}</td><td><code>{_e(slot.name)}</code></td>"
            f"<td><code>{_e(tensor)}</code></td><td>{_e(', '.join(notes))}</td></tr>"
        )
    return rows


def slots_table(inputs: Sequence[Any], outputs: Sequence[Any]) -> str:
    rows = _slot_rows(inputs, "input") + _slot_rows(outputs, "output")
    return (
        "<table><caption>binding slots</caption><thead><tr><th>slot</th><th>name</th><th>tensor</th><th></th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _slots_text(slots: Sequence[Any]) -> str:
    return ", ".join(f"{s.name}={'NULL' if s.tensor is None else tensor_text(s.tensor)}" for s in slots) or "none"


def operator_repr(operator: Any) -> str:
    from dmlpy.tensor import DML_TENSOR_DESC  # noqa: PLC0415

    inputs, outputs = [], []
    for slot in operator.spec.support.slots:
        tensor = getattr(operator.desc, slot.name)
        text = f"{slot.name}={'NULL' if tensor is None else tensor_text(tensor) if isinstance(tensor, DML_TENSOR_DESC) else repr(tensor)}"
        (outputs if slot.kind == "output" else inputs).append(text)
    return (
        f"<dmlpy.Operator {operator.name} ({operator.spec.c_struct})\n"
        f"    inputs:  {', '.join(inputs) or 'none'}\n    outputs: {', '.join(outputs) or 'none'}>"
    )


def operator_html(operator: Any) -> str:
    warnings = findings_html(operator.warnings, "warnings") if operator.warnings else ""
    return (
        f'<div class="dmlpy">{_STYLE}<p><b>IDMLOperator</b> <code>{_e(operator.name)}</code></p>'
        f"{desc_table(operator.desc)}{warnings}</div>"
    )


def compiled_repr(compiled: Any) -> str:
    props = compiled.get_binding_properties()
    return (
        f"<dmlpy.CompiledOperator {compiled.name} flags={enum_text(compiled.execution_flags)}\n"
        f"    inputs:  {_slots_text(compiled.input_slots())}\n    outputs: {_slots_text(compiled.output_slots())}\n"
        f"    {properties_text(props)}>"
    )


def compiled_html(compiled: Any) -> str:
    props = compiled.get_binding_properties()
    return (
        f'<div class="dmlpy">{_STYLE}<p><b>IDMLCompiledOperator</b> <code>{_e(compiled.name)}</code>, '
        f"flags <code>{_e(enum_text(compiled.execution_flags))}</code></p>"
        f"{slots_table(compiled.input_slots(), compiled.output_slots())}{_properties_table(props)}</div>"
    )


def properties_text(props: Any) -> str:
    return (
        f"DML_BINDING_PROPERTIES(RequiredDescriptorCount={props.RequiredDescriptorCount}, "
        f"TemporaryResourceSize={props.TemporaryResourceSize}, PersistentResourceSize={props.PersistentResourceSize})"
    )


def _properties_table(props: Any) -> str:
    rows = [(f.name, _e(str(getattr(props, f.name)))) for f in dataclasses.fields(props)]
    return _table("DML_BINDING_PROPERTIES", rows)


def properties_html(props: Any) -> str:
    return f'<div class="dmlpy">{_STYLE}{_properties_table(props)}</div>'


# ---------------------------------------------------------------------------------------
# Graphs


def graph_repr(desc: Any) -> str:
    from dmlpy.pictures import graph_model  # noqa: PLC0415

    model = graph_model(desc)
    lines = [
        f"DML_GRAPH_DESC(InputCount={desc.InputCount}, OutputCount={desc.OutputCount}, NodeCount={desc.NodeCount}, "
        f"InputEdgeCount={desc.InputEdgeCount}, OutputEdgeCount={desc.OutputEdgeCount}, IntermediateEdgeCount={desc.IntermediateEdgeCount})"
    ]
    lines += [f"    {box.label}: {box.detail}" for box in model.boxes if box.kind == "node"]
    lines += [f"    {model.boxes[edge.source].label} -> {model.boxes[edge.target].label}" + (f"  {edge.label}" if edge.label else "") for edge in model.edges]
    return "\n".join(lines)


def graph_html(desc: Any) -> str:
    from dmlpy.pictures import graph_picture  # noqa: PLC0415

    return f'<div class="dmlpy">{graph_picture(desc)}</div>'


__all__ = [
    "RULES_PAGE",
    "compiled_html",
    "compiled_repr",
    "desc_html",
    "desc_repr",
    "desc_table",
    "device_html",
    "device_repr",
    "enum_text",
    "error_html",
    "field_text",
    "findings_html",
    "graph_html",
    "graph_repr",
    "operator_html",
    "operator_repr",
    "properties_html",
    "properties_text",
    "report_html",
    "rule_anchor",
    "tensor_text",
]
