"""ONNX's own backend node tests against dmlpy: pass / rejected / fail per op type, on both backends.

    python -m tests.interop.onnx_node_report                  # every op type the importer maps
    python -m tests.interop.onnx_node_report --op Conv --op Relu --details
    python -m tests.interop.onnx_node_report --backend numpy --json out.json
    python -m tests.interop.onnx_node_report --expanded       # also the *_expanded (function body) cases

The cases are the ones the ``onnx`` wheel ships as code (``onnx.backend.test.case.node``, what
``onnx.backend.test.loader.load_model_tests(kind="node")`` returns; the wheel does not carry
the ``data/node`` directory): a one-node model, its inputs, and the outputs ONNX's reference
computes. A case belongs to the op type of its node; the ``*_expanded`` variants (the op's
function body, other op types) are left out unless ``--expanded``. Each case runs through
``dmlpy.interop.onnx_backend.DmlpyBackend`` and is compared as onnx's runner does (shape,
dtype, then ``assert_allclose`` with the case's rtol/atol). Outcomes:

* pass: every output matches;
* rejected: the importer does not map the node (its version, an attribute, a type) or dmlpy
  does not emulate the DML operator: ``Rejected`` (E_NOTIMPL), with the rule ids;
* fail: a wrong answer, a desc DirectML would reject, or any other exception (``crash``): a
  bug to fix or a DirectML limit to document. Nothing is allowed to escape the runner.

DirectML takes shapes, axes, pads, repeats, scales and clip bounds as constants (onnxruntime's
DirectML provider leaves a node whose such input is computed at run time to the CPU), and
ONNX's cases feed them as graph inputs. So a case the importer rejects while it has more than
one graph input runs again with every input but the node's first made an initializer holding
the case's values; the table counts those runs under "folded" (``--no-fold`` turns it off).
Test values stored as TensorProto (float8, int4, ...) are converted with ``numpy_helper``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
import traceback
import warnings
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

import dmlpy
from dmlpy.errors import DmlError, DmlWarning

STATUSES = ("pass", "rejected", "fail")
EXPANDED = re.compile(r"_expanded(_ver\d+)?$")


@dataclass
class Outcome:
    case: str
    op: str
    backend: str
    status: str  # pass, rejected, fail
    detail: str = ""  # rule ids or the first line of the failure
    crash: bool = False  # fail by an exception that is not a DmlError or a mismatch
    folded: bool = False  # run with the secondary graph inputs made initializers (see run_case)


def mapped_op_types() -> list[str]:
    """The op types dmlpy's importer maps (the keys of its SUPPORTED_VERSIONS and MAPPINGS tables)."""
    import dmlpy.interop.onnx as dx

    return sorted(set(getattr(dx, "SUPPORTED_VERSIONS", {})) | set(getattr(dx, "MAPPINGS", {})))


def _module_names(op: str) -> list[str]:
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", op).lower()
    return list(dict.fromkeys([op.lower(), snake, op.lower() + "_"]))


def node_cases(ops: Iterable[str] | None = None, *, expanded: bool = False) -> list[tuple[str, Any]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # onnx's case generators overflow casts on purpose (RuntimeWarning)
        return _node_cases(ops, expanded=expanded)


def _node_cases(ops: Iterable[str] | None = None, *, expanded: bool = False) -> list[tuple[str, Any]]:
    """(op type, onnx TestCase) for the node cases of ``ops`` (None: every case onnx ships), in onnx's order.

    With ``ops`` given, only those ops' case modules are imported (fast); an op whose module
    name is not its lower-cased name falls back to loading every case.
    """
    import onnx.backend.test.case.node as node_module
    from onnx.backend.test.loader import load_model_tests

    wanted = set(ops) if ops is not None else None
    if wanted is None:
        cases = load_model_tests(kind="node")
    else:
        for op in sorted(wanted):
            for name in _module_names(op):
                try:
                    importlib.import_module(f"onnx.backend.test.case.node.{name}")
                    break
                except ImportError:
                    continue
            else:
                load_model_tests(kind="node")
                break
        cases = node_module._NodeTestCases  # the list the loader returns
    by_name = {c.name: c for c in cases}
    selected = []
    for case in cases:
        base = EXPANDED.sub("", case.name)
        if base != case.name and not expanded:
            continue
        origin = by_name.get(base, case)
        op_types = {n.op_type for n in origin.model.graph.node}
        if len(op_types) != 1:
            continue  # a multi-node case (a few loops and sequences): no single op under test
        (op,) = op_types
        if wanted is not None and op not in wanted:
            continue
        selected.append((op + (" (expanded)" if base != case.name else ""), case))
    return selected


def compare(expected: Sequence[Any], got: Sequence[Any], rtol: float, atol: float) -> None:
    """onnx's runner comparison (assert_similar_outputs) for tensor outputs."""
    assert len(got) == len(expected), f"{len(got)} outputs, expected {len(expected)}"
    for i, (ref, out) in enumerate(zip(expected, got, strict=True)):
        out = np.asarray(out)
        assert out.shape == ref.shape, f"output {i} has shape {out.shape}, expected {ref.shape}"
        assert out.dtype == ref.dtype, f"output {i} has dtype {out.dtype}, expected {ref.dtype}"
        if ref.dtype.kind in "fc":
            np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol, err_msg=f"output {i}")
        else:
            np.testing.assert_array_equal(out, ref, err_msg=f"output {i}")


def _first_line(text: str, limit: int = 160) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return (lines[0] if lines else "")[:limit]


def _array(value: Any) -> Any:
    """A test value as NumPy: onnx stores some (float8, int4, ...) as TensorProto."""
    import onnx

    return onnx.numpy_helper.to_array(value) if isinstance(value, onnx.TensorProto) else value


def folded(model: Any, inputs: Sequence[Any]) -> Any:
    """The model with every graph input but the one feeding the node's first input made an initializer holding ``inputs``' values."""
    import onnx

    folded_model = onnx.ModelProto()
    folded_model.CopyFrom(model)
    graph = folded_model.graph
    first = graph.node[0].input[0] if graph.node and graph.node[0].input else None
    keep = []
    for value, array in zip(list(graph.input), inputs, strict=False):
        if value.name == first:
            keep.append(value)
        else:
            graph.initializer.append(onnx.numpy_helper.from_array(np.asarray(array), value.name))
    del graph.input[:]
    graph.input.extend(keep)
    return folded_model


def _attempt(case: Any, backend: str, fold: bool) -> None:
    from dmlpy.interop.onnx_backend import DmlpyBackend

    for inputs, expected in case.data_sets:
        inputs = [_array(v) for v in inputs]
        model = folded(case.model, inputs) if fold else case.model
        rep = DmlpyBackend.prepare(model, "CPU", backend=backend)
        first = model.graph.node[0].input[0] if fold else None
        got = rep.run([v for v, value in zip(inputs, case.model.graph.input, strict=False) if value.name == first] if fold else inputs)
        compare([_array(v) for v in expected], list(got), case.rtol, case.atol)


def run_case(op: str, case: Any, backend: str, *, fold: bool = True) -> Outcome:
    """One case on one backend, classified; never raises.

    With ``fold``, a case the importer rejects while it has more than one graph input runs
    again with every input but the node's first made an initializer (``Outcome.folded``):
    DirectML takes shapes, axes, pads, scales and clip bounds as constants, and ONNX's cases
    feed them as graph inputs.
    """
    outcome = _classified(op, case, backend, fold=False)
    if fold and outcome.status == "rejected" and len(case.model.graph.input) > 1 and case.model.graph.node and case.model.graph.node[0].input:
        retry = _classified(op, case, backend, fold=True)
        if retry.status != "rejected":
            retry.folded = True
            return retry
    return outcome


def _classified(op: str, case: Any, backend: str, *, fold: bool) -> Outcome:
    from dmlpy.interop.onnx_backend import Rejected, is_rejection

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DmlWarning)
            _attempt(case, backend, fold)
    except Rejected as error:
        return Outcome(case.name, op, backend, "rejected", ", ".join(dict.fromkeys(error.rules)) + ": " + _first_line(str(error.findings[0].message) if error.findings else str(error)))
    except AssertionError as error:
        return Outcome(case.name, op, backend, "fail", "mismatch: " + _first_line(str(error)))
    except DmlError as error:
        status = "rejected" if is_rejection(error) else "fail"
        return Outcome(case.name, op, backend, status, ", ".join(dict.fromkeys(f.rule for f in error.findings)) + ": " + _first_line(str(error)))
    except Exception as error:  # noqa: BLE001 - classified, never raised: the report must finish
        where = traceback.extract_tb(error.__traceback__)[-1]
        return Outcome(case.name, op, backend, "fail", f"crash: {type(error).__name__}: {_first_line(str(error))} ({where.filename.rsplit('/', 1)[-1]}:{where.lineno})", crash=True)
    return Outcome(case.name, op, backend, "pass")


def backends() -> list[str]:
    return ["native", "numpy"] if dmlpy.native_available() else ["numpy"]


def run_all(ops: Iterable[str] | None = None, *, backend_names: Sequence[str] | None = None, expanded: bool = False) -> list[Outcome]:
    outcomes = []
    for op, case in node_cases(ops if ops is not None else mapped_op_types(), expanded=expanded):
        for backend in backend_names or backends():
            outcomes.append(run_case(op, case, backend))
    return outcomes


def table(outcomes: list[Outcome]) -> str:
    counts: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    names = sorted({o.backend for o in outcomes})
    for o in outcomes:
        counts[o.op, o.backend][o.status] += 1
        counts["TOTAL", o.backend][o.status] += 1
        for key in ((o.op, o.backend), ("TOTAL", o.backend)):
            counts[key]["crash"] += o.crash
            counts[key]["folded"] += o.folded
    width = max([len(op) for op, _ in counts] + [7])
    header = f"{'op type':{width}}" + "".join(f" | {b + ': pass / rejected / fail':>32} {'':<22}" for b in names)
    lines = [header, "-" * len(header)]
    ops = sorted({op for op, _ in counts} - {"TOTAL"}) + ["TOTAL"]
    for op in ops:
        cells = []
        for b in names:
            c = counts[op, b]
            notes = ", ".join(n for n in (f"{c['crash']} crash" if c["crash"] else "", f"{c['folded']} folded" if c["folded"] else "") if n)
            cells.append(f" | {c['pass']:>14} / {c['rejected']:>8} / {c['fail']:>4} {'(' + notes + ')' if notes else '':<22}")
        lines.append(f"{op:{width}}" + "".join(cells))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--op", action="append", help="an op type (repeatable); default: every op type the importer maps")
    parser.add_argument("--all-ops", action="store_true", help="every op type onnx has node cases for, mapped or not")
    parser.add_argument("--backend", choices=["native", "numpy"], action="append", help="default: both (native when built)")
    parser.add_argument("--expanded", action="store_true", help="also the *_expanded cases (the op's function body)")
    parser.add_argument("--details", action="store_true", help="list every case that did not pass, with its reason")
    parser.add_argument("--no-fold", action="store_true", help="never retry a rejected case with its secondary inputs made initializers")
    parser.add_argument("--json", help="write every outcome to this file")
    args = parser.parse_args(argv)
    ops = None if args.all_ops else (args.op or mapped_op_types())
    outcomes = []
    for op, case in node_cases(ops, expanded=args.expanded):
        for backend in args.backend or backends():
            outcomes.append(run_case(op, case, backend, fold=not args.no_fold))
    print(f"ONNX backend node tests (onnx {__import__('onnx').__version__}) through dmlpy.interop.onnx_backend, {len({o.case for o in outcomes})} cases\n")
    print(table(outcomes))
    if args.details:
        print()
        for o in outcomes:
            if o.status != "pass" or o.folded:
                print(f"{o.status:8} {o.backend:6} {o.case}{' (folded)' if o.folded else ''}: {o.detail}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([asdict(o) for o in outcomes], f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
