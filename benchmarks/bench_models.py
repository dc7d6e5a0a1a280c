"""Whole models end to end: dmlpy's native backend next to onnxruntime CPU, at 1 and 2 threads.

    python -m benchmarks.bench_models                         # resnet18, mobilenet_v2, unet (torchscript export)
    python -m benchmarks.bench_models --model densenet --exporter dynamo --threads 1
    DMLPY_MODEL_CACHE=~/.cache/dmlpy-models python -m benchmarks.bench_models
    python -m benchmarks.bench_models --breakdown             # and each DML operator type's share

The models are tests/models/architectures.py's, exported by tests/models/export.py into
``$DMLPY_MODEL_CACHE`` (default: a temporary directory; exporting needs torch, reading the cache
does not). A model the importer cannot take yet (``validate`` reports errors) is skipped with
the op types it rejects. dmlpy runs ``ImportedModel.run`` (what a user calls: ONNX-shaped arrays
in and out) on a native device created with ``threads=N``; onnxruntime runs an
``InferenceSession`` with ``intra_op_num_threads=N`` and ``inter_op_num_threads=1`` at its
default graph optimisations. Both outputs are checked against each other before the times
count. Times are medians taken in alternating rounds (benchmarks/bench.py's
``interleaved_medians``); "vs ort" is onnxruntime's time over dmlpy's, as bench.py's "vs fastest peer"
(above 1: dmlpy faster).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

import dmlpy

try:
    from benchmarks.bench import interleaved_medians, median_seconds, prepared_dmlpy
    from tests.models import export as models
except ImportError:  # run as a file: python benchmarks/bench_models.py from the repository root
    sys.path.append(str(Path(__file__).resolve().parents[1]))
    from benchmarks.bench import interleaved_medians, median_seconds, prepared_dmlpy
    from tests.models import export as models

DEFAULT_MODELS = ("resnet18", "mobilenet_v2", "unet")


def model_file(directory: Path, name: str, exporter: str) -> Path | None:
    try:
        import torch  # noqa: F401
    except ImportError:
        return models.cached(directory, name, exporter)
    return models.export(name, exporter, directory)


def bench_model(path: Path, threads: int) -> dict[str, Any]:
    import onnxruntime as ort

    import dmlpy.interop.onnx as dx

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        imported = dx.import_model(str(path), device=dmlpy.create_device(backend="native", threads=threads))
    (name,) = imported.input_names
    x = np.random.default_rng(20261126).standard_normal(imported.input_shapes[name]).astype(np.float32)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    outputs = [o.name for o in session.get_outputs()]
    expected = session.run(outputs, {name: x})
    got = imported.run({name: x})
    worst = max(float(np.max(np.abs(got[o] - e))) for o, e in zip(outputs, expected, strict=True))
    agree = all(np.allclose(got[o], e, rtol=1e-3, atol=1e-4) for o, e in zip(outputs, expected, strict=True))
    times = interleaved_medians({"dmlpy native": lambda: imported.run({name: x}), "onnxruntime": lambda: session.run(outputs, {name: x})}, min_time=2.0, max_runs=400)
    return {"dmlpy": times["dmlpy native"], "onnxruntime": times["onnxruntime"], "max_abs_diff": worst, "agree": agree}


def breakdown(path: Path, threads: int) -> list[tuple[str, int, float]]:
    """Where dmlpy's time goes: each operator desc of the imported graph timed alone (compiled, bound, random inputs), summed per DML operator type."""
    import dmlpy.interop.onnx as dx

    device = dmlpy.create_device(backend="native", threads=threads)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        imported = dx.import_model(str(path), device=device)
    rng = np.random.default_rng(0)
    totals: dict[str, list[float]] = {}
    for descs in imported.descs.values():
        for desc in descs:
            compiled = device.compile_operator(device.create_operator(desc))
            inputs = {}
            for slot in compiled.input_slots():
                if slot.tensor is not None:
                    view = device.create_buffer(slot.tensor.TotalTensorSizeInBytes).view(slot.tensor)
                    inputs[slot.name] = (rng.standard_normal(view.shape) * 0.5).astype(view.dtype)
            call, _ = prepared_dmlpy(desc, inputs, "native", threads)
            totals.setdefault(type(desc).__name__.removeprefix("DML_").removesuffix("_OPERATOR_DESC"), []).append(median_seconds(call, min_time=0.1, min_runs=5, max_runs=100))
    return sorted(((name, len(times), sum(times)) for name, times in totals.items()), key=lambda row: -row[2])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", action="append", choices=models.architecture_names(), help=f"repeatable; default {', '.join(DEFAULT_MODELS)}")
    parser.add_argument("--exporter", choices=models.EXPORTERS, default="torchscript")
    parser.add_argument("--threads", type=int, action="append", help="repeatable; default 1 and 2")
    parser.add_argument("--breakdown", action="store_true", help="also time every operator of each model alone and sum per DML operator type")
    args = parser.parse_args(argv)
    if not dmlpy.native_available():
        print(f"the native backend is not built: {dmlpy.native_status()}")
        return 1
    cache = os.environ.get("DMLPY_MODEL_CACHE")
    directory = Path(cache) if cache else Path(tempfile.mkdtemp(prefix="dmlpy-models-"))
    print(f"{'model':18} {'exporter':11} {'threads':>7} {'dmlpy ms':>9} {'ort ms':>8} {'vs ort':>9}  note")
    for name in args.model or DEFAULT_MODELS:
        path = model_file(directory, name, args.exporter)
        if path is None:
            print(f"{name:18} {args.exporter:11} skipped: not in {directory} and torch is not installed to export it")
            continue
        rejected = models.rejected_op_types(path)
        if rejected:
            print(f"{name:18} {args.exporter:11} skipped: the importer rejects {', '.join(rejected)}")
            continue
        for threads in args.threads or [1, 2]:
            r = bench_model(path, threads)
            note = f"max |diff| {r['max_abs_diff']:.2g}" + ("" if r["agree"] else " DISAGREES with onnxruntime")
            print(f"{name:18} {args.exporter:11} {threads:>7} {r['dmlpy'] * 1e3:>9.2f} {r['onnxruntime'] * 1e3:>8.2f} {r['onnxruntime'] / r['dmlpy']:>8.2f}x  {note}")
            if args.breakdown:
                for op, count, seconds in breakdown(path, threads):
                    print(f"{'':18} {op:>30} x{count:<3} {seconds * 1e3:8.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
