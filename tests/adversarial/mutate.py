"""Mutate every public attribute of dmlpy's objects between the steps of a pipeline; nothing may crash.

Run as a script (``python -X faulthandler tests/adversarial/mutate.py --backend native``) so a
segfault ends the process with a signal instead of passing silently. Three pipelines (an
OWNED_BY_DML pooling, a convolution with bias and a fused RELU, a two-node graph that uses a
temporary resource) are stopped after each step; one mutation is applied to one object that
exists at that point (the device, the operator, the compiled operator or graph, the
initializer, the binding tables, the buffers, the command list and recorder, and every desc
and binding desc the user handed over); then the pipeline continues. The attributes are
enumerated with ``dir()``, so attributes added later are covered too. A mutation is replacing
the attribute (with None, a wrong type, negative or huge ints, shorter or longer sequences,
read-only or foreign memory, a desc whose Type does not match its Desc, ...) or changing a
field inside the value it returns, to any depth of nested descs.

Each outcome is one of: the mutation itself was refused (AttributeError, TypeError or
ValueError at the assignment), the pipeline raised DmlError, TypeError or ValueError, or the
pipeline gave exactly the output of an unmutated run. Anything else (another exception, or a
different output) is a failure; the last line printed is a JSON summary.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import mmap
import random
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import dmlpy  # noqa: E402
from dmlpy import (  # noqa: E402
    D3D12_RESOURCE_BARRIER,
    DML_ACTIVATION_RELU_OPERATOR_DESC,
    DML_AVERAGE_POOLING_OPERATOR_DESC,
    DML_BINDING_DESC,
    DML_CONVOLUTION_OPERATOR_DESC,
    DML_OPERATOR_DESC,
    DML_OPERATOR_TYPE,
    DML_TENSOR_DATA_TYPE,
    DML_TENSOR_FLAGS,
    DmlError,
    FusedActivation,
    array_binding,
    buffer_binding,
    buffer_tensor,
)

DT = DML_TENSOR_DATA_TYPE
ALLOWED = (DmlError, TypeError, ValueError)
REFUSED = (AttributeError, TypeError, ValueError)
MAX_DEPTH = 3
_MAPS: list[Any] = []  # read-only mmaps stay open for the whole run: a buffer may still hold one


# ---------------------------------------------------------------------------------------
# The pipelines: each step takes and extends a namespace of live objects


def pool_desc(n: int, *, owned: bool = False) -> DML_AVERAGE_POOLING_OPERATOR_DESC:
    flags = DML_TENSOR_FLAGS.OWNED_BY_DML if owned else DML_TENSOR_FLAGS.NONE
    return DML_AVERAGE_POOLING_OPERATOR_DESC(
        buffer_tensor(DT.FLOAT32, [1, 1, n, n], flags=flags), buffer_tensor(DT.FLOAT32, [1, 1, n // 2, n // 2]),
        2, [2, 2], [2, 2], [0, 0], [0, 0], True,
    )  # fmt: skip


def conv_desc() -> DML_CONVOLUTION_OPERATOR_DESC:
    return DML_CONVOLUTION_OPERATOR_DESC(
        buffer_tensor(DT.FLOAT32, [1, 1, 3, 3]), buffer_tensor(DT.FLOAT32, [1, 1, 2, 2]), buffer_tensor(DT.FLOAT32, [1, 1, 1, 1]),
        buffer_tensor(DT.FLOAT32, [1, 1, 2, 2]), dmlpy.DML_CONVOLUTION_MODE.CROSS_CORRELATION, dmlpy.DML_CONVOLUTION_DIRECTION.FORWARD,
        2, [1, 1], [1, 1], [0, 0], [0, 0], [0, 0], 1, FusedActivation.relu(),
    )  # fmt: skip


def inputs_of(kind: str) -> list[np.ndarray]:
    if kind == "conv":
        x = np.array([[3, -1, 4], [1, -5, 9], [2, 6, -5]], np.float32).reshape(1, 1, 3, 3)
        return [x, np.array([1, -1, 2, -2], np.float32).reshape(1, 1, 2, 2), np.array([0.5], np.float32)]
    return [np.arange(16 if kind == "pool" else 64, dtype=np.float32)]


# Hand-computed outputs of the unmutated pipelines:
# pool: the 2x2/2 average of 0..15 as 4x4;
# conv: relu(x[i,j] - x[i,j+1] + 2 x[i+1,j] - 2 x[i+1,j+1] + 0.5) = relu(16.5, -32.5, -1.5, 8.5);
# graph: two 2x2/2 averages of 0..63 as 8x8 give 32p + 4q + 13.5.
HAND = {"pool": [2.5, 4.5, 10.5, 12.5], "conv": [16.5, 0.0, 0.0, 8.5], "graph": [13.5, 17.5, 45.5, 49.5]}


OUTPUT = buffer_tensor(DT.FLOAT32, [1, 1, 2, 2])  # every pipeline's output


def step_device(s: SimpleNamespace) -> None:
    s.device = dmlpy.create_device(backend=s.backend)


def step_operator(s: SimpleNamespace) -> None:
    if s.kind == "graph":
        s.desc, s.desc2 = pool_desc(8), pool_desc(4)
        s.op, s.op2 = s.device.create_operator(s.desc), s.device.create_operator(s.desc2)
    else:
        s.desc = pool_desc(4, owned=True) if s.kind == "pool" else conv_desc()
        s.op = s.device.create_operator(s.desc)


def step_compile(s: SimpleNamespace) -> None:
    if s.kind == "graph":
        s.graph_desc = dmlpy.graph_desc(1, 1, [dmlpy.operator_node(s.op), dmlpy.operator_node(s.op2)], [dmlpy.input_edge(0, 0)],
                                        [dmlpy.output_edge(1, 0, 0)], [dmlpy.intermediate_edge(0, 0, 1)])  # fmt: skip
        s.compiled = s.device.compile_graph(s.graph_desc)
    else:
        s.compiled = s.device.compile_operator(s.op)


def step_buffers(s: SimpleNamespace) -> None:
    s.inputs = [dmlpy.Buffer.from_array(a) for a in inputs_of(s.kind)]
    s.y = dmlpy.Buffer(16, "y")
    props = s.compiled.get_binding_properties()
    s.persistent = dmlpy.Buffer(props.PersistentResourceSize, "persistent") if props.PersistentResourceSize else None
    s.temporary = dmlpy.Buffer(props.TemporaryResourceSize, "temporary") if props.TemporaryResourceSize else None


def step_initializer(s: SimpleNamespace) -> None:
    s.initializer = s.device.create_operator_initializer([s.compiled])
    s.init_table = s.device.create_binding_table(s.initializer)
    if s.kind == "pool":
        s.init_bindings = [array_binding([buffer_binding(s.inputs[0])]), buffer_binding(s.persistent)]
        s.init_table.bind_inputs(s.init_bindings[:1])
        s.init_table.bind_outputs(s.init_bindings[1:])
    s.recorder, s.command_list = s.device.create_command_recorder(), s.device.create_command_list()
    s.recorder.record_dispatch(s.command_list, s.initializer, s.init_table)
    s.command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav()])  # the dispatch after the initializer reads what it wrote


def step_bind(s: SimpleNamespace) -> None:
    s.table = s.device.create_binding_table(s.compiled)
    if s.kind == "pool":
        s.bindings = [DML_BINDING_DESC(), buffer_binding(s.y), buffer_binding(s.persistent)]
        s.table.bind_inputs(s.bindings[:1])
        s.table.bind_outputs(s.bindings[1:2])
        s.table.bind_persistent_resource(s.bindings[2])
    else:
        s.bindings = [buffer_binding(b) for b in s.inputs] + [buffer_binding(s.y), buffer_binding(s.temporary)]
        s.table.bind_inputs(s.bindings[: len(s.inputs)])
        s.table.bind_outputs([s.bindings[len(s.inputs)]])
        s.table.bind_temporary_resource(s.bindings[-1])


def step_record(s: SimpleNamespace) -> None:
    s.recorder.record_dispatch(s.command_list, s.compiled, s.table)
    s.command_list.close()


def step_execute(s: SimpleNamespace) -> None:
    s.device.execute(s.command_list)


def step_read(s: SimpleNamespace) -> None:
    s.result = s.y.read(OUTPUT)


STEPS: list[Callable[[SimpleNamespace], None]] = [step_device, step_operator, step_compile, step_buffers, step_initializer, step_bind, step_record, step_execute, step_read]
KINDS = ["pool", "conv", "graph"]


def run_to(kind: str, backend: str, steps: int) -> SimpleNamespace:
    state = SimpleNamespace(kind=kind, backend=backend)
    for step in STEPS[:steps]:
        step(state)
    return state


# ---------------------------------------------------------------------------------------
# Mutations


def read_only_mmap(content: bytes) -> np.ndarray:
    with tempfile.TemporaryFile() as file:
        file.write(content)
        file.flush()
        mapped = mmap.mmap(file.fileno(), len(content), prot=mmap.PROT_READ)
    _MAPS.append(mapped)
    return np.frombuffer(mapped, np.uint8)


def candidates(value: Any) -> list[tuple[str, Callable[[], Any]]]:
    """Replacements for ``value``: made lazily, so each scenario gets fresh objects."""
    found: list[tuple[str, Callable[[], Any]]] = [
        ("None", lambda: None), ("object()", object), ("'x'", lambda: "x"), ("-1", lambda: -1), ("0", lambda: 0), ("2**64", lambda: 2**64),
    ]  # fmt: skip
    if callable(value) and not isinstance(value, type):
        found.append(("a lambda", lambda: lambda *args, **kwargs: None))
    if isinstance(value, bool):
        found.append(("not", lambda: not value))
    elif isinstance(value, (int, np.integer)):
        v = int(value)
        found += [("+1", lambda: v + 1), ("-1 less", lambda: v - 1), ("*1000", lambda: v * 1000 + 7), ("2**32", lambda: 2**32), ("1.5", lambda: 1.5)]
    elif isinstance(value, float):
        found += [("nan", lambda: float("nan")), ("-v", lambda: -value), ("1e30", lambda: 1e30)]
    if isinstance(value, (list, tuple)):
        kind = type(value)
        found += [("shorter", lambda: kind(list(value)[:-1])), ("longer", lambda: kind([*value, *value[-1:]])), ("empty", lambda: kind())]
        if value and isinstance(value[0], (int, np.integer)) and not isinstance(value[0], bool):
            found += [("negative entry", lambda: kind([-1, *list(value)[1:]])), ("huge entry", lambda: kind([2**40, *list(value)[1:]]))]
    if isinstance(value, np.ndarray):
        content = value.tobytes()

        def read_only() -> np.ndarray:
            copy = value.copy()
            copy.setflags(write=False)
            return copy

        found += [
            ("read-only copy", read_only), ("bytes copy", lambda: content), ("PROT_READ mmap copy", lambda: read_only_mmap(content) if content else b""),
            ("shorter array", lambda: value[:-1].copy()), ("strided array", lambda: np.repeat(value, 2)[::2]), ("float32 array", lambda: value.view(np.float32).copy() if value.nbytes % 4 == 0 else value),
            ("bytearray copy", lambda: bytearray(content)), ("list", lambda: value.tolist()),
        ]  # fmt: skip
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        found += [
            ("LINEAR over a RELU desc", lambda: DML_OPERATOR_DESC(DML_OPERATOR_TYPE.ACTIVATION_LINEAR, DML_ACTIVATION_RELU_OPERATOR_DESC())),
            ("another desc type", lambda: pool_desc(2)),
            ("a tensor desc", lambda: buffer_tensor(DT.FLOAT32, [1])),
            ("a default instance", lambda: _default(type(value))),
        ]
    if isinstance(value, dmlpy.Buffer):
        found += [("a 4-byte buffer", lambda: dmlpy.Buffer(4)), ("a same-size buffer", lambda: dmlpy.Buffer(value.size))]
    return found


def _default(cls: type) -> Any:
    try:
        return cls()
    except TypeError:
        return object()


def public_names(obj: Any) -> list[str]:
    return sorted(name for name in dir(obj) if not name.startswith("_"))


def targets(state: SimpleNamespace) -> Iterator[tuple[str, Any]]:
    """Every dmlpy object and user desc alive in the pipeline, by a stable name."""
    for name in sorted(vars(state)):
        value = getattr(state, name)
        if name in ("kind", "backend", "result") or value is None:
            continue
        if isinstance(value, list):
            for i, item in enumerate(value):
                if item is not None:
                    yield f"{name}[{i}]", item
        else:
            yield name, value


def getters(obj: Any) -> list[str]:
    """Zero-argument read methods whose results are worth changing (slots, properties)."""
    return [name for name in public_names(obj) if (name.startswith("get_") or name.endswith("_slots")) and callable(getattr(obj, name, None))]


def is_leafless(value: Any) -> bool:
    return isinstance(value, (str, bytes, int, float, type(None))) or isinstance(value, type)


def groups(state: SimpleNamespace) -> list[tuple[str, Any, str]]:
    """(label, object, attribute name) for every public attribute of every live object."""
    return [(label, obj, name) for label, obj in targets(state) for name in public_names(obj)]


def expand(label: str, obj: Any, name: str) -> list[tuple[str, Callable[[], None]]]:
    """Every mutation of one attribute: replacing it, and changing what is inside the value it gives."""
    found: list[tuple[str, Callable[[], None]]] = []

    def inner(label: str, value: Any, depth: int) -> None:
        if depth > MAX_DEPTH or is_leafless(value) or isinstance(value, (dmlpy.Device, np.generic)):
            return
        if isinstance(value, np.ndarray):
            found.append((f"{label}.setflags(write=False)", lambda: value.setflags(write=False)))
            found.append((f"{label}.shape = (2, -1)", lambda: setattr(value, "shape", (2, -1))))
            found.append((f"{label}.dtype = float32", lambda: setattr(value, "dtype", np.float32)))
            return
        if isinstance(value, list):
            found.append((f"{label}.clear()", value.clear))
            found.append((f"{label}.append(object())", lambda: value.append(object())))
        if isinstance(value, dict):
            for key in list(value)[:4]:
                found.append((f"{label}[{key!r}] = -1", lambda key=key: value.__setitem__(key, -1)))
            items = list(value.values())
        elif isinstance(value, (list, tuple, set)):
            items = list(value)
        else:
            for field in public_names(value):
                try:
                    current = getattr(value, field)
                except Exception:  # noqa: BLE001, S112 - a property that fails to read has nothing to mutate
                    continue
                if callable(current) and not dataclasses.is_dataclass(current) and not isinstance(current, dmlpy.Buffer):
                    continue  # methods of values are replaced only at the top level
                replace(f"{label}.{field}", value, field, current, depth + 1)
            return
        for i, item in enumerate(items[:4]):
            inner(f"{label}[{i}]", item, depth + 1)

    def replace(label: str, owner: Any, field: str, current: Any, depth: int) -> None:
        for what, make in candidates(current):
            found.append((f"{label} = {what}", lambda make=make: setattr(owner, field, make())))
        inner(label, current, depth)

    current = getattr(obj, name)
    top = f"{label}.{name}"
    if callable(current) and not dataclasses.is_dataclass(current) and not isinstance(current, (dmlpy.Buffer, type)):
        found.append((f"{top} = None", lambda: setattr(obj, name, None)))
        found.append((f"{top} = a lambda", lambda: setattr(obj, name, lambda *args, **kwargs: None)))
        if name.startswith("get_") or name.endswith("_slots"):  # read methods: change what they hand out
            try:
                inner(f"{top}()", current(), 1)
            except Exception:  # noqa: BLE001 - a getter that cannot answer yet has nothing to mutate
                pass
        return found
    replace(top, obj, name, current, 0)
    return found


# ---------------------------------------------------------------------------------------
# Running scenarios


def reference(kind: str, backend: str) -> np.ndarray:
    return run_to(kind, backend, len(STEPS)).result


def scenario(kind: str, backend: str, step: int, group: int, pick: int, expected: np.ndarray) -> tuple[str, str]:
    """(outcome, label): refused, error, correct, or FAIL: ..."""
    try:
        state = run_to(kind, backend, step)
    except Exception as error:  # noqa: BLE001 - an unmutated pipeline fails only if an earlier mutation reached shared state
        return f"FAIL: the unmutated steps raised {type(error).__name__}: {error}; an earlier mutation leaked into shared state", "(before mutating)"
    options = expand(*groups(state)[group])
    label, mutate = options[pick % len(options)]
    try:
        mutate()
    except REFUSED:
        return "refused", label
    try:
        for later in STEPS[step:]:
            later(state)
    except ALLOWED:
        return "error", label
    except Exception as error:  # noqa: BLE001 - the point: any other exception is a finding
        where = traceback.extract_tb(error.__traceback__)[-1]
        return f"FAIL: {type(error).__name__}: {error} (at {Path(where.filename).name}:{where.lineno})", label
    if not isinstance(state.result, np.ndarray) or not np.array_equal(state.result, expected, equal_nan=True):
        return f"FAIL: wrong answer {state.result!r} != {expected.reshape(-1).tolist()}", label
    return "correct", label


def space(backend: str) -> list[tuple[str, int, int]]:
    """Every (pipeline, step, attribute group), in a stable order."""
    return [(kind, step, g) for kind in KINDS for step in range(1, len(STEPS)) for g in range(len(groups(run_to(kind, backend, step))))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["native", "numpy"], required=True)
    parser.add_argument("--count", type=int, default=0, help="a seeded sample of this many attributes, one mutation each (0: every attribute)")
    parser.add_argument("--per-attribute", type=int, default=1, help="mutations tried per chosen attribute")
    parser.add_argument("--seed", type=int, default=20261124)
    parser.add_argument("--verbose", action="store_true", help="print every scenario before it runs (to find the one that crashed)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    start = time.perf_counter()
    rng = random.Random(args.seed)
    expected = {kind: reference(kind, args.backend) for kind in KINDS}
    for kind, values in HAND.items():
        if expected[kind].reshape(-1).tolist() != values:
            print(json.dumps({"failures": [f"the unmutated {kind} pipeline gives {expected[kind].reshape(-1).tolist()}, not the hand-computed {values}"]}))
            return 1
    every = space(args.backend)
    chosen = sorted(rng.sample(every, min(args.count, len(every)))) if args.count else every
    counts: dict[str, int] = {"refused": 0, "error": 0, "correct": 0}
    failures = []
    for kind, step, group in chosen:
        first = rng.randrange(1 << 30)
        for pick in range(first, first + args.per_attribute):
            if args.verbose:
                print(f"{kind} after {STEPS[step - 1].__name__}: group {group} pick {pick}", flush=True)
            outcome, label = scenario(kind, args.backend, step, group, pick, expected[kind])
            if outcome.startswith("FAIL"):
                failures.append(f"{kind} after {STEPS[step - 1].__name__}: {label}: {outcome}")
            else:
                counts[outcome] += 1
    summary = {"backend": args.backend, "attributes": len(every), "chosen": len(chosen), **counts, "failures": failures, "seconds": round(time.perf_counter() - start, 1)}
    print(json.dumps(summary))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
