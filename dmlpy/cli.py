"""``python -m dmlpy`` (also installed as ``dmlpy``): validate, run and export DirectML models.

Commands::

    dmlpy validate MODEL.json|MODEL.onnx [--json] [--feature-level 6.4] [--strict] [--input-shape NAME=1,3,224,224 ...]
    dmlpy run MODEL.json|MODEL.onnx [--input NAME=FILE.npy ...] [--input-shape NAME=SIZES ...] [--fill random|zeros]
                                    [--seed N] [--output-dir DIR] [--backend auto|native|numpy] [--full]
    dmlpy export-dxdispatch MODEL.onnx|MODEL.json OUT_DIR [--output-command print|writeFile]
    dmlpy emit-cpp MODEL.json|MODEL.onnx [-o OUT.h] [--prefix NAME]
    dmlpy calc-size DTYPE SIZES [STRIDES]        e.g. calc-size FLOAT32 1,3,4,4 48,16,4,1
    dmlpy include                                the directory holding dmlpy/dml_types.h
    dmlpy info                                   version, backend, operators, feature levels
    dmlpy rules [--markdown]                     every validation rule id

``MODEL.json`` is a DxDispatch model (https://github.com/microsoft/DirectML/blob/master/DxDispatch/doc/Guide.md);
``MODEL.onnx`` goes through ``dmlpy.interop.onnx`` (the ``onnx`` extra); ``--input-shape`` fixes
an ONNX input's symbolic dimensions (repeatable). Exit codes: 0 ok,
1 validation errors (a model DirectML would reject), 2 usage errors (bad arguments, unreadable
inputs, output paths that cannot be written: one line on stderr), 3 valid, but an operator has no
dmlpy kernel yet (``validate`` warns OPERATOR.NOT_EMULATED, or reports ONNX.NOT_EMULATED for an
ONNX node whose DirectML operator dmlpy describes but cannot run; ``run`` cannot run it:
E_NOTIMPL), 4 an ONNX model the importer cannot map (ONNX.UNSUPPORTED_OP, ONNX.UNSUPPORTED_ATTRIBUTE,
ONNX.UNSUPPORTED_TYPE, ONNX.UNSUPPORTED_EMPTY_TENSOR: dmlpy's gap, not DirectML's verdict). When several apply, the lowest of 1,
4, 3 wins: an invalid model is invalid whatever else it holds.
Findings and progress go where scripts expect them: results on stdout, progress and errors on
stderr. ``run``, ``export-dxdispatch`` and ``emit-cpp`` print the warnings (portability risks)
DirectML's rules raise on the way as ``validate`` prints findings, once each, on stderr;
``--quiet`` silences them and the progress.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

import dmlpy  # noqa: F401 - importing the package registers every operator family and its rules
from dmlpy._version import NATIVE_ABI_VERSION, __version__
from dmlpy.backends import native_available, native_kernels, native_status
from dmlpy.enums import DML_FEATURE_LEVEL, HRESULT, c_name
from dmlpy.errors import DmlError, DmlWarning, Finding, Report, Severity
from dmlpy.interop.dxdispatch import DxDispatchFormatError
from dmlpy.rules import REGISTRY, Rule
from dmlpy.operators import NOT_EMULATED
from dmlpy.support import OPERATORS

EXIT_OK, EXIT_INVALID, EXIT_USAGE, EXIT_NOT_EMULATED, EXIT_UNSUPPORTED = 0, 1, 2, 3, 4
EXIT_CODES = ("exit codes: 0 ok, 1 invalid (DirectML would reject it), 2 usage error, 3 valid but not runnable by dmlpy yet (E_NOTIMPL), "
              "4 an ONNX model the importer cannot map (unsupported op, attribute or type)")
NOT_EMULATED_RULES = frozenset({NOT_EMULATED.id, "ONNX.NOT_EMULATED"})
UNSUPPORTED_RULES = frozenset({"ONNX.UNSUPPORTED_OP", "ONNX.UNSUPPORTED_ATTRIBUTE", "ONNX.UNSUPPORTED_TYPE", "ONNX.UNSUPPORTED_EMPTY_TENSOR"})
FORMAT_RULE = "DXDISPATCH.FORMAT"  # declared in dmlpy.interop.dxdispatch: the file is not a model DxDispatch would parse


class UsageError(Exception):
    """Bad arguments or an unreadable input: exit code 2."""


# ---------------------------------------------------------------------------------------
# info and rules


def _info(_: argparse.Namespace) -> int:
    from dmlpy.operators import REGISTRY  # noqa: PLC0415

    print(f"dmlpy {__version__} (native ABI {NATIVE_ABI_VERSION})")
    backend = os.environ.get("DMLPY_BACKEND", "auto")
    chosen = ("native" if native_available() else "numpy") if backend == "auto" else backend
    print(f"backend: {chosen}" + (" (DMLPY_BACKEND)" if backend != "auto" else ""))
    print(f"native: {'available' if native_available() else 'unavailable'}: {native_status()}")
    if native_available():
        print(f"native kernels: {native_kernels()}")
    print(f"headers: {dmlpy.get_include()}")
    specs = list(REGISTRY.values())
    emulated = [s for s in specs if s.emulated]
    print(f"operators: {len(specs)} described and validated, {len(emulated)} run on NumPy, {sum(s.native for s in emulated)} native")
    print("  validated: 'generic' = DirectML.h's field rules and the support tables; 'family' = and the family's own rules")
    print("  runs: a kernel exists; without one CreateOperator warns OPERATOR.NOT_EMULATED and CompileOperator answers E_NOTIMPL")
    by_family: dict[str, list[Any]] = {}
    for spec in specs:
        by_family.setdefault(spec.facts.family, []).append(spec)
    header = f"  {'operator':56} {'FL':4} {'described':9} {'validated':9} {'numpy':5} {'native':6}"
    for family in sorted(by_family):
        print(f"{family} ({len(by_family[family])}):")
        print(header)
        for spec in by_family[family]:
            validated = "family" if spec.check.__name__ != "no_family_rules" else "generic"
            numpy_runs = "yes" if spec.emulated else "-"
            native_runs = "yes" if spec.emulated and spec.native else "-"
            name = c_name(spec.operator_type)
            print(f"  {name:56} {spec.support.introduced.dotted:4} {'yes':9} {validated:9} {numpy_runs:5} {native_runs}".rstrip())
    return EXIT_OK


_API_PAGES = "https://learn.microsoft.com/windows/win32/api/directml/"
_GUIDE_PAGES = "https://learn.microsoft.com/windows/ai/directml/"


def _linked_sources(source: str) -> str:
    """A rule's sources with DirectML's page slugs and the repository's docs turned into links."""
    parts = []
    for part in (p.strip() for p in source.split(";")):
        if re.fullmatch(r"n[sfen]-directml-[a-z0-9_]+", part):
            part = f"[{part}]({_API_PAGES}{part})"
        elif re.fullmatch(r"dml-[a-z0-9-]+", part):
            part = f"[{part}]({_GUIDE_PAGES}{part})"
        elif re.fullmatch(r"docs/[a-z0-9-]+\.md", part):
            part = f"[{part}]({part.removeprefix('docs/')})"
        parts.append(part)
    return "; ".join(parts)


def render_rules_markdown() -> str:
    """docs/rules.md: every rule from the registry and every support table, so docs cannot drift."""
    # the interop modules declare rules too; import them so the page never depends on what ran before
    import dmlpy.interop.dxdispatch  # noqa: F401, PLC0415
    import dmlpy.interop.onnx  # noqa: F401, PLC0415

    lines = [
        "# dmlpy validation rules",
        "",
        "Generated by `python -m dmlpy rules --markdown` from the rule registry and the support tables;",
        "a test fails when this file is out of date. Tests and tools match on the ids, never on message text.",
        "",
    ]
    families: dict[str, list[Rule]] = {}
    for declared in REGISTRY.values():
        families.setdefault(declared.family, []).append(declared)
    for family in sorted(families):
        lines += [f"## {family}", "", "| id | severity | rule | source |", "|---|---|---|---|"]
        for declared in sorted(families[family], key=lambda r: r.id):
            lines.append(f"| `{declared.id}` | {declared.severity.value} | {declared.statement} | {_linked_sources(declared.source)} |")
        lines.append("")
    lines += ["## Tensor support by operator and feature level", ""]
    lines += ["From `dmlpy/data/support/<family>.json`. Operators not listed here have no support data yet:", "their tensors get the generic tensor rules only.", ""]
    for support in OPERATORS.values():
        if not support.tables and not support.tables_by_function:
            continue
        lines += [f"### {c_name(support.operator_type)} ({support.operator_type.value}), from FL {support.introduced.dotted}", ""]
        kinds = {slot.name: slot.kind + (" (optional)" if slot.optional else "") for slot in support.slots}
        groups = [("", support.tables)] if support.tables else []
        groups += [(f"Function {', '.join(names)}: ", tables) for names, tables in support.tables_by_function.items()]
        for heading, tables in groups:
            if heading:
                lines += [heading.rstrip(": ") + ":", ""]
            lines += ["| feature level | tensor | kind | dimensions | data types |", "|---|---|---|---|---|"]
            for level, table in tables.items():
                for name, row in table.items():
                    low, high = row.dimension_counts
                    dims = f"{low}" if low == high else f"{low} to {high}"
                    types = "not stated by the page" if row.data_types is None else ", ".join(t.name for t in row.data_types)
                    lines.append(f"| {level.dotted} | {name} | {kinds.get(name, '')} | {dims} | {types} |")
            lines.append("")
        for constraint in support.constraints:
            lines.append(f"- {', '.join(constraint.tensors)}: same {', '.join(constraint.same)}")
        lines += [f"- {text}" for text in support.other]
        if support.constraints or support.other:
            lines.append("")
    missing = [c_name(s.operator_type) for s in OPERATORS.values() if not s.tables and not s.tables_by_function]
    lines += [f"No support data yet ({len(missing)}): " + ", ".join(f"`{name}`" for name in missing), ""]
    return "\n".join(lines)


def _rules(args: argparse.Namespace) -> int:
    if args.markdown:
        print(render_rules_markdown())
        return EXIT_OK
    for declared in REGISTRY.values():
        print(f"{declared.id:40} {declared.severity.value:8} {declared.statement}")
    return EXIT_OK


# ---------------------------------------------------------------------------------------
# Shared helpers


class Progress:
    """``[step/total] label`` lines on stderr.

    ``mode`` ``"always"`` prints every step, ``"never"`` none, ``"auto"`` only once a run has
    taken longer than ``after`` seconds (short runs stay quiet; long ones show where they are).
    """

    def __init__(self, mode: str = "auto", after: float = 1.0, stream: Any = None) -> None:
        self.mode = mode
        self.after = after
        self.stream = stream if stream is not None else sys.stderr
        self.start = time.perf_counter()
        self.shown = 0

    def __call__(self, step: int, total: int, label: str) -> None:
        elapsed = time.perf_counter() - self.start
        if self.mode == "never" or (self.mode == "auto" and elapsed < self.after):
            return
        self.shown += 1
        print(f"[{step}/{total}] {label} ({elapsed:.1f} s)", file=self.stream, flush=True)


def _progress(args: argparse.Namespace) -> Progress:
    return Progress("always" if args.progress else "never" if args.quiet else "auto")


def _feature_level(text: str) -> DML_FEATURE_LEVEL:
    from dmlpy.interop.dxdispatch import parse_feature_level  # noqa: PLC0415

    try:
        return parse_feature_level(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _model_kind(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix == ".json":
        return "json"
    if suffix == ".onnx":
        return "onnx"
    msg = f"{path}: expected a DxDispatch model (.json) or an ONNX model (.onnx)"
    raise UsageError(msg)


def _existing(path: str) -> Path:
    p = Path(path)
    if not p.is_file():
        msg = f"{path}: no such file"
        raise UsageError(msg)
    return p


def _onnx() -> Any:
    """dmlpy.interop.onnx, imported only when an ONNX model is given."""
    try:
        from dmlpy.interop import onnx as onnx_interop  # noqa: PLC0415 - optional extra
    except ImportError as error:
        msg = f"ONNX models need dmlpy.interop.onnx and the onnx package (pip install 'dmlpy[onnx]'): {error}"
        raise UsageError(msg) from None
    return onnx_interop


def _load_onnx(path: Path) -> tuple[Any, Any]:
    onnx_interop = _onnx()
    try:
        return onnx_interop, onnx_interop.load(str(path))
    except Exception as error:  # noqa: BLE001 - protobuf's DecodeError and friends: not an ONNX model
        msg = f"{path}: cannot load the ONNX model: {type(error).__name__}: {error}"
        raise UsageError(msg) from None


def _read_json_model(path: Path) -> Any:
    from dmlpy.interop.dxdispatch import read_model  # noqa: PLC0415

    return read_model(path)


def _inputs_from_args(pairs: Sequence[str]) -> dict[str, np.ndarray]:
    arrays: dict[str, np.ndarray] = {}
    for pair in pairs:
        name, sep, file = pair.partition("=")
        if not sep or not name or not file:
            msg = f"--input takes NAME=FILE.npy, not {pair!r}"
            raise UsageError(msg)
        try:
            arrays[name] = np.load(file, allow_pickle=False)
        except (OSError, ValueError) as error:
            msg = f"--input {name}: cannot read {file}: {error}"
            raise UsageError(msg) from None
    return arrays


def _fill(kind: str, shape: Sequence[int], dtype: np.dtype[Any], rng: np.random.Generator) -> np.ndarray:
    if kind == "zeros":
        return np.zeros(shape, dtype=dtype)
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -8), min(info.max, 8), size=shape, endpoint=True).astype(dtype)


def _print_findings(findings: Sequence[tuple[str, Finding]], stream: Any = None) -> None:
    stream = stream if stream is not None else sys.stdout
    for where, finding in findings:
        prefix = f"{where}: " if where else ""
        print(f"{finding.severity.value:7} {finding.rule} {prefix}{finding.path}: {finding.message}", file=stream)


@contextlib.contextmanager
def _reported_warnings(quiet: bool) -> Iterator[None]:
    """DmlWarnings raised inside, printed on stderr as ``validate`` prints findings, once each.

    The same finding reached twice (a graph compiled, then each of its operators) is one line;
    ``quiet`` prints none. Warnings of other kinds are shown as Python shows them.
    """
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as recorded:
            warnings.simplefilter("always", DmlWarning)  # every one reaches the list; duplicates go below
            caught = recorded
            yield
    finally:
        findings: dict[tuple[str, str, str], Finding] = {}
        for item in caught:
            if isinstance(item.message, DmlWarning):
                finding = item.message.finding
                findings.setdefault((finding.rule, finding.path, finding.message), finding)
            else:
                warnings.showwarning(item.message, item.category, item.filename, item.lineno, item.file, item.line)
        if findings and not quiet:
            _print_findings([("", f) for f in findings.values()], sys.stderr)


def _os_error(error: OSError) -> str:
    """One line for a file the command could not read or write."""
    if error.filename is not None and error.strerror:
        return f"{error.filename}: {error.strerror}"
    return str(error)


def _summary(findings: Sequence[Finding]) -> str:
    errors = sum(f.severity is Severity.ERROR for f in findings)
    warnings = len(findings) - errors
    return f"{errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}"


def _format_finding(where: str, message: str) -> Finding:
    return Finding(FORMAT_RULE, Severity.ERROR, where, "a model DxDispatch parses", None, message)


def _split_format_message(message: str) -> tuple[str, str]:
    where, sep, rest = message.partition(": ")
    return (where, rest) if sep and " " not in where else ("", message)


# ---------------------------------------------------------------------------------------
# validate


def _validate(args: argparse.Namespace) -> int:
    path = _existing(args.model)
    kind = _model_kind(path)
    located: list[tuple[str, Finding]] = []
    if kind == "json":
        from dmlpy.interop.dxdispatch import DxDispatchFormatError, check_model  # noqa: PLC0415

        try:
            located = [(f.where, f.finding) for f in check_model(path, feature_level=args.feature_level, bindings=not args.no_bindings)]
        except DxDispatchFormatError as error:
            where, message = _split_format_message(str(error))
            located = [("", _format_finding(where or str(path), message))]
    else:
        shapes = _input_shapes(args.input_shape) or None
        try:
            report = _onnx().validate(str(path), feature_level=args.feature_level, input_shapes=shapes)  # an unparsable file is a finding too
        except _onnx().OnnxImportError as error:
            report = Report(error.findings)
        located = [("", f) for f in report.findings]
    findings = [f for _, f in located]
    not_emulated = [f for f in findings if f.rule in NOT_EMULATED_RULES]
    unsupported = [f for f in findings if f.rule in UNSUPPORTED_RULES]
    # --strict fails on warnings about the model; "no kernel yet" and "not mapped yet" are dmlpy's gaps, with their own exit codes
    failing = [f for f in findings if f.rule not in NOT_EMULATED_RULES | UNSUPPORTED_RULES and (f.severity is Severity.ERROR or args.strict)]
    if args.json:
        print(json.dumps([{**f.as_dict(), **({"where": w} if w else {})} for w, f in located], indent=2))
    else:
        _print_findings(located)
        verdict = ("invalid" if failing else "not importable by dmlpy yet (unsupported ONNX operators or attributes)" if unsupported
                   else "valid, but dmlpy cannot run it yet" if not_emulated else "valid")  # fmt: skip
        print(f"{path}: {verdict} at DML_FEATURE_LEVEL_{args.feature_level.dotted.replace('.', '_')} ({_summary(findings)})")
    if failing:
        return EXIT_INVALID
    if unsupported:
        return EXIT_UNSUPPORTED
    return EXIT_NOT_EMULATED if not_emulated else EXIT_OK


def _input_shapes(pairs: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """--input-shape NAME=1,3,224,224 (repeatable): the sizes of an ONNX input with symbolic dimensions."""
    shapes: dict[str, tuple[int, ...]] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep or not name or not text:
            msg = f"--input-shape takes NAME=SIZES (e.g. x=1,3,224,224), not {pair!r}"
            raise UsageError(msg)
        shapes[name] = tuple(_int_list(text, f"--input-shape {name}"))
    return shapes


# ---------------------------------------------------------------------------------------
# run


def _describe(name: str, array: np.ndarray, full: bool) -> str:
    head = f"{name}: {array.dtype}{list(array.shape)}"
    if array.size and array.dtype.kind in "fiu":
        finite = array[np.isfinite(array)] if array.dtype.kind == "f" else array
        if finite.size:
            head += f" min {finite.min():.6g} max {finite.max():.6g} mean {finite.astype(np.float64).mean():.6g}"
    threshold = sys.maxsize if full else 8
    body = np.array2string(array.reshape(-1), threshold=threshold, edgeitems=4, precision=6, max_line_width=100)
    return f"{head}\n  {body}"


def _run_json(args: argparse.Namespace, path: Path, progress: Progress) -> dict[str, np.ndarray]:
    from dmlpy.enums import DML_TENSOR_DATA_TYPE  # noqa: PLC0415
    from dmlpy.interop.dxdispatch import run_model  # noqa: PLC0415
    from dmlpy.tensor import cast_to_data_type, numpy_dtype  # noqa: PLC0415

    model = _read_json_model(path)
    given = _inputs_from_args(args.input)
    unknown = sorted(set(given) - set(model.resources))
    if unknown:
        msg = f"--input {', '.join(unknown)}: the model has no such resource (resources: {', '.join(model.resources)})"
        raise UsageError(msg)
    read_by_dispatch = _input_resources(model)
    rng = np.random.default_rng(args.seed)
    for name in model.resources:
        data_type = model.resource_types[name]
        dtype = np.dtype(np.uint8) if data_type == DML_TENSOR_DATA_TYPE.UNKNOWN else numpy_dtype(data_type)
        if name in given:
            array = given[name]
            if data_type == DML_TENSOR_DATA_TYPE.UNKNOWN:
                array = np.ascontiguousarray(array).reshape(-1).view(np.uint8)  # a typed list: the file's bytes
        elif args.fill and name in read_by_dispatch:
            array = _fill(args.fill, (model.resources[name].size // dtype.itemsize,), dtype, rng)
        else:
            continue
        try:
            array = cast_to_data_type(array, DML_TENSOR_DATA_TYPE.UINT8 if data_type == DML_TENSOR_DATA_TYPE.UNKNOWN else data_type, f"--input {name}")
        except (TypeError, ValueError) as refused:
            raise UsageError(str(refused)) from None
        raw = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
        if raw.size > model.resources[name].size:
            msg = f"--input {name}: {raw.size} bytes do not fit the resource's {model.resources[name].size} bytes"
            raise UsageError(msg)
        model.resources[name][:] = 0
        model.resources[name][: raw.size] = raw
    device = dmlpy.create_device(args.feature_level, backend=args.backend)
    result = run_model(model, device, out_dir=args.output_dir, progress=progress)
    for name, target in result.written.items():
        print(f"wrote {name} to {target}", file=sys.stderr)
    return {name: result.array(name) for name in result.shown}


def _input_resources(model: Any) -> set[str]:
    """Resources some dispatch reads (bound to an input bind point, at dispatch or initialization)."""
    from dmlpy.interop.dxdispatch import _source_names  # noqa: PLC0415
    from dmlpy.operators import REGISTRY, operator_desc  # noqa: PLC0415

    names: set[str] = set()
    for command in model.commands:
        if command["type"] != "dispatch":
            continue
        dispatchable = command["dispatchable"]
        if dispatchable in model.onnx_dispatchables:  # the ONNX model's graph inputs
            inputs = {value.name for value in _onnx().load(str(model.onnx_dispatchables[dispatchable])).graph.input}
        else:
            inputs = {s.name for s in REGISTRY[operator_desc(model.dispatchables[dispatchable]).Type].support.inputs}
        for point, source in [*command["bindings"].items(), *model.init_bindings.get(dispatchable, {}).items()]:
            if point in inputs:
                names.update(_source_names(source))
    return names


def _onnx_import(args: argparse.Namespace, path: Path, progress: Progress) -> tuple[Any, dict[str, np.ndarray]]:
    """The imported model and an ONNX-shaped array for every model input (given, or filled by --fill)."""
    onnx_interop, model = _load_onnx(path)
    given = _inputs_from_args(args.input)
    progress(1, 3, "importing the ONNX model")
    device = dmlpy.create_device(args.feature_level, backend=args.backend)
    shapes = {**_input_shapes(args.input_shape), **{name: array.shape for name, array in given.items()}}
    imported = onnx_interop.import_model(model, feature_level=args.feature_level, device=device, input_shapes=shapes or None)
    unknown = sorted(set(given) - set(imported.input_names))
    if unknown:
        msg = f"--input {', '.join(unknown)}: the model's inputs are {', '.join(imported.input_names)}"
        raise UsageError(msg)
    rng = np.random.default_rng(args.seed)
    inputs = dict(given)
    for name in imported.input_names:
        if name not in inputs:
            inputs[name] = _fill(args.fill or "random", imported.input_shapes[name], np.dtype(imported.input_dtypes[name]), rng)
    return imported, inputs


def _run_onnx(args: argparse.Namespace, path: Path, progress: Progress) -> dict[str, np.ndarray]:
    imported, inputs = _onnx_import(args, path, progress)
    progress(2, 3, "running")
    outputs = imported.run(inputs)
    progress(3, 3, "done")
    return {str(name): np.asarray(value) for name, value in outputs.items()}


def _run(args: argparse.Namespace) -> int:
    path = _existing(args.model)
    kind = _model_kind(path)
    progress = _progress(args)
    if args.output_dir is not None:
        Path(args.output_dir).mkdir(parents=True, exist_ok=True)
    try:
        shown = _run_json(args, path, progress) if kind == "json" else _run_onnx(args, path, progress)
    except DmlError as error:
        print(f"error: {error}", file=sys.stderr)
        rules = {f.rule for f in error.findings}
        if rules and rules <= UNSUPPORTED_RULES | NOT_EMULATED_RULES and rules & UNSUPPORTED_RULES:
            return EXIT_UNSUPPORTED
        return EXIT_NOT_EMULATED if error.hresult == HRESULT.E_NOTIMPL else EXIT_INVALID
    for name, array in shown.items():
        print(_describe(name, array, args.full))
        if args.output_dir is not None:
            target = Path(args.output_dir) / f"{_safe(name)}.npy"
            if not target.exists():
                np.save(target, array)
                print(f"saved {name} to {target}", file=sys.stderr)
    return EXIT_OK


def _safe(name: str) -> str:
    from dmlpy.interop.dxdispatch import _file_stem  # noqa: PLC0415

    return _file_stem(name)


# ---------------------------------------------------------------------------------------
# export-dxdispatch and emit-cpp


def _export(args: argparse.Namespace) -> int:
    from dmlpy.interop.dxdispatch import graph_model, operator_models, parse_json, write_model  # noqa: PLC0415

    path = _existing(args.model)
    kind = _model_kind(path)
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)  # an unwritable OUT_DIR fails before the work, not after
    progress = _progress(args)
    try:
        if kind == "onnx":
            imported, inputs = _onnx_import(args, path, progress)
            missing = [n for n in imported.program.input_names if n not in inputs]
            inputs.update(_weights(imported, missing))
            graph, base_dir = graph_model(imported, inputs, output_command=args.output_command), None
        else:
            _read_json_model(path)  # what DxDispatch would not parse stops here, with its reason
            graph, base_dir = parse_json(path.read_text(encoding="utf-8"), str(path)), path.parent
        progress(2, 3, "running the graph for each operator's inputs")
        device = dmlpy.create_device(args.feature_level, backend=args.backend)
        per_operator = operator_models(graph, device=device, output_command=args.output_command, base_dir=base_dir)
    except DmlError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INVALID
    written = [write_model(graph, out_dir / "graph.json", base_dir=base_dir)]
    written += [write_model(m, out_dir / f"{_safe(name)}.json") for name, m in per_operator.items()]
    progress(3, 3, f"wrote {len(written)} files")
    for target in written:
        print(target)
    return EXIT_OK


def _weights(imported: Any, names: Sequence[str]) -> dict[str, np.ndarray]:
    """Values for graph inputs that are not ONNX inputs: the weights the importer made OWNED_BY_DML inputs."""
    if not names:
        return {}
    table = getattr(imported, "owned_weights", None) or {}
    missing = [n for n in names if n not in table]
    if missing:
        msg = f"no values for the graph inputs {', '.join(missing)}; give them with --input NAME=FILE.npy"
        raise UsageError(msg)
    return {n: np.asarray(table[n]) for n in names}


def _emit_cpp(args: argparse.Namespace) -> int:
    from dmlpy.interop import cpp  # noqa: PLC0415

    path = _existing(args.model)
    kind = _model_kind(path)
    if kind == "json":
        model = _read_json_model(path)
        try:
            text = cpp.emit_model(model, prefix=args.prefix)
        except ValueError as error:  # an ONNX dispatchable: its C++ is the imported graph's
            print(f"error: {path}: {error}", file=sys.stderr)
            return EXIT_USAGE
    else:
        onnx_interop, model = _load_onnx(path)
        try:
            imported = onnx_interop.import_model(model, feature_level=args.feature_level)
        except DmlError as error:
            print(f"error: {error}", file=sys.stderr)
            return EXIT_INVALID
        text = cpp.emit_graph(imported, prefix=args.prefix)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT_OK


# ---------------------------------------------------------------------------------------
# calc-size and include


def _int_list(text: str, what: str) -> list[int]:
    parts = [p for p in text.replace("x", ",").replace(" ", ",").split(",") if p]
    try:
        values = [int(p, 0) for p in parts]
    except ValueError:
        msg = f"{what} must be comma-separated unsigned integers, not {text!r}"
        raise UsageError(msg) from None
    if not values or any(v < 0 or v >= 2**32 for v in values):
        msg = f"{what} must be one or more UINTs, not {text!r}"
        raise UsageError(msg)
    return values


def _calc_size(args: argparse.Namespace) -> int:
    from dmlpy.enums import DML_TENSOR_DATA_TYPE  # noqa: PLC0415
    from dmlpy.tensor import calc_buffer_tensor_size  # noqa: PLC0415

    name = args.dtype.upper().removeprefix("DML_TENSOR_DATA_TYPE_")
    if name not in DML_TENSOR_DATA_TYPE.__members__:
        msg = f"{args.dtype!r} is not a DML_TENSOR_DATA_TYPE (one of {', '.join(DML_TENSOR_DATA_TYPE.__members__)})"
        raise UsageError(msg)
    sizes = _int_list(args.sizes, "SIZES")
    strides = _int_list(args.strides, "STRIDES") if args.strides is not None else None
    if strides is not None and len(strides) != len(sizes):
        msg = f"STRIDES has {len(strides)} entries for {len(sizes)} SIZES"
        raise UsageError(msg)
    try:
        size = calc_buffer_tensor_size(DML_TENSOR_DATA_TYPE[name], sizes, strides)
    except ValueError as error:
        msg = f"DMLCalcBufferTensorSize fails: {error}"
        raise UsageError(msg) from None
    print(size)
    return EXIT_OK


def _include(_: argparse.Namespace) -> int:
    print(dmlpy.get_include())
    return EXIT_OK


# ---------------------------------------------------------------------------------------
# main


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="dmlpy", description="DirectML descriptors, validated and run anywhere.", epilog=EXIT_CODES)
    parser.add_argument("--version", action="version", version=f"dmlpy {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def model_command(name: str, help_text: str, handler: Callable[[argparse.Namespace], int]) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text, epilog=EXIT_CODES)
        sub.add_argument("model", help="a DxDispatch model (.json) or an ONNX model (.onnx)")
        sub.add_argument("--feature-level", type=_feature_level, default=DML_FEATURE_LEVEL.LEVEL_6_4, metavar="FL", help="the device's feature level: 6.4 (default), 6.2, 5.1, ...")
        sub.add_argument("--input-shape", action="append", default=[], metavar="NAME=SIZES", help="ONNX: the sizes of an input with symbolic dimensions, e.g. x=1,3,224,224; repeatable")
        sub.set_defaults(handler=handler)
        return sub

    def run_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy", help="an input (ONNX) or resource (DxDispatch) from a .npy file; repeatable")
        sub.add_argument("--fill", choices=("random", "zeros"), help="fill inputs not given by --input (ONNX default: random; DxDispatch default: the model's initial values)")
        sub.add_argument("--seed", type=int, default=0, help="seed for --fill random (default 0)")
        sub.add_argument("--backend", choices=("auto", "native", "numpy"), default="auto", help="the kernels to run on (default: native when built)")
        sub.add_argument("--progress", action="store_true", help="always show progress on stderr (default: only for runs longer than a second)")
        sub.add_argument("--quiet", action="store_true", help="never show progress or warnings")
        sub.set_defaults(reports_warnings=True)

    validate = model_command("validate", "report every finding for a model; exit 1 if any is an error, 4 if dmlpy cannot import it, 3 if valid but not runnable by dmlpy yet", _validate)
    validate.add_argument("--json", action="store_true", help="print the findings as a JSON list of objects (rule, severity, path, expected, actual, message)")
    validate.add_argument("--strict", action="store_true", help="warnings fail validation too")
    validate.add_argument("--no-bindings", action="store_true", help="DxDispatch models: check the descs only, not the dispatch bindings")

    run = model_command("run", "run a model and print (or save) its outputs", _run)
    run_options(run)
    run.add_argument("--output-dir", metavar="DIR", help="save every output as DIR/<name>.npy (and write the model's writeFile targets there)")
    run.add_argument("--full", action="store_true", help="print every value, not a summary")

    export = model_command("export-dxdispatch", "write DxDispatch models: OUT_DIR/graph.json and one file per operator", _export)
    export.add_argument("out_dir", metavar="OUT_DIR")
    run_options(export)
    export.add_argument("--output-command", choices=("print", "writeFile"), default="print", help="how the models show their outputs (default: print)")

    emit = model_command("emit-cpp", "print C++ that builds the model's descs against DirectML.h and records them (heap, barriers, fence)", _emit_cpp)
    emit.add_argument("-o", "--output", metavar="OUT.h", help="write the header here instead of stdout")
    emit.add_argument("--prefix", default="dmlpy", help="prefix of the generated function names (default: dmlpy)")
    emit.add_argument("--quiet", action="store_true", help="never show warnings")
    emit.set_defaults(reports_warnings=True)

    calc = commands.add_parser("calc-size", help="DMLCalcBufferTensorSize: the bytes a tensor's buffer needs")
    calc.add_argument("dtype", metavar="DTYPE", help="FLOAT32, FLOAT16, UINT8, ... (or DML_TENSOR_DATA_TYPE_FLOAT32)")
    calc.add_argument("sizes", metavar="SIZES", help="comma-separated sizes, e.g. 1,3,224,224")
    calc.add_argument("strides", metavar="STRIDES", nargs="?", help="comma-separated element strides (default: packed)")
    calc.set_defaults(handler=_calc_size)

    include = commands.add_parser("include", help="print the directory holding dmlpy/dml_types.h and dmlpy/dmlpy.h (for -I)")
    include.set_defaults(handler=_include)
    info = commands.add_parser("info", help="version, backend, and every operator: described, validated, runs (NumPy / native)")
    info.set_defaults(handler=_info)
    rules = commands.add_parser("rules", help="every validation rule id, its severity and statement")
    rules.add_argument("--markdown", action="store_true", help="print docs/rules.md")
    rules.set_defaults(handler=_rules)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (0 ok, 1 validation errors, 2 usage errors, 3 valid but not emulated, 4 ONNX not importable)."""
    try:
        args = build_parser().parse_args(argv)
        if not getattr(args, "reports_warnings", False):
            return int(args.handler(args))
        with _reported_warnings(args.quiet):
            return int(args.handler(args))
    except UsageError as error:
        print(f"dmlpy: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except DxDispatchFormatError as error:  # run, export-dxdispatch, emit-cpp (validate reports it as a finding)
        print(f"dmlpy: error: not a model DxDispatch would run: {error}", file=sys.stderr)
        return EXIT_INVALID
    except SystemExit as done:  # --help and --version
        return int(done.code or 0) if isinstance(done.code, int) or done.code is None else EXIT_USAGE
    except BrokenPipeError:  # `dmlpy run ... | head`
        return EXIT_OK
    except OSError as error:  # an output path that cannot be written (inputs are checked as usage errors)
        print(f"dmlpy: error: {_os_error(error)}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
