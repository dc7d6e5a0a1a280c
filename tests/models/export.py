"""Export the model test set with both PyTorch exporters, into a cache outside the repository.

    python -m tests.models.export OUT_DIR              # every architecture x exporter; prints op types
    python -m tests.models.export OUT_DIR --only unet  # one architecture
    python -m tests.models.export OUT_DIR --table      # also what dmlpy's importer rejects (the test's table)

Exporters: ``torchscript`` is ``torch.onnx.export(..., dynamo=False, opset_version=17)``;
``dynamo`` is ``torch.onnx.export(..., dynamo=True)`` at its default opset. Files are named
``<architecture>-<exporter>-<key>.onnx`` where the key hashes this file and architectures.py, so
an edit re-exports and a stale file is never read; ``export`` also re-exports a file another torch
version wrote (its producer_version), while a run without torch reads whatever the cache holds. The models are never
committed (``.gitignore``); ``tests/models/test_real_models.py`` exports into
``$DMLPY_MODEL_CACHE`` when set, else into a per-session temporary directory.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import os
import sys
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

EXPORTERS = ("torchscript", "dynamo")
TORCHSCRIPT_OPSET = 17
HERE = Path(__file__).resolve().parent


def architecture_names() -> list[str]:
    """The architectures' names, read without importing torch."""
    import ast

    tree = ast.parse((HERE / "architectures.py").read_text())
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Architecture" and node.args and isinstance(node.args[0], ast.Constant):
            names.append(str(node.args[0].value))
    return names


def cache_key() -> str:
    """A hash of this file and architectures.py: an edit to either re-exports."""
    digest = hashlib.sha256()
    for name in ("architectures.py", "export.py"):
        digest.update((HERE / name).read_bytes())
    return digest.hexdigest()[:10]


def _exported_by_this_torch(path: Path) -> bool:
    """Whether the file's producer_version is the installed torch's (without the local +cpu part)."""
    import onnx
    import torch

    producer = onnx.load(str(path), load_external_data=False).producer_version
    return producer.split("+")[0] == torch.__version__.split("+")[0]


def model_path(directory: Path, name: str, exporter: str, key: str | None = None) -> Path:
    return Path(directory) / f"{name}-{exporter}-{key or cache_key()}.onnx"


def cached(directory: Path, name: str, exporter: str) -> Path | None:
    """The exported model if it is in ``directory`` for this key, whichever torch wrote it (torch not needed), else None."""
    path = model_path(directory, name, exporter)
    return path if path.exists() else None


def _architectures() -> Any:
    try:
        from . import architectures  # python -m tests.models.export
    except ImportError:
        import architectures  # type: ignore[no-redef]  # pytest puts tests/models on sys.path
    return architectures


def export(name: str, exporter: str, directory: str | os.PathLike[str]) -> Path:
    """Export architecture ``name`` with ``exporter`` into ``directory`` (reused when present); returns the .onnx path."""
    if exporter not in EXPORTERS:
        msg = f"exporter must be one of {EXPORTERS}, not {exporter!r}"
        raise ValueError(msg)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = model_path(directory, name, exporter)
    if path.exists() and _exported_by_this_torch(path):
        return path
    import torch

    arch = _architectures().ARCHITECTURES[name]
    model, example = arch.build(), arch.example()
    partial = path.with_suffix(f".{os.getpid()}.partial")
    noise = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(noise), torch.no_grad():
        warnings.simplefilter("ignore")
        if exporter == "torchscript":
            torch.onnx.export(model, (example,), str(partial), dynamo=False, opset_version=TORCHSCRIPT_OPSET, input_names=["x"], output_names=["y"])
        else:
            program = torch.onnx.export(model, (example,), dynamo=True, input_names=["x"], output_names=["y"], verbose=False)
            assert program is not None
            program.save(str(partial))
    partial.replace(path)  # atomic: parallel sessions never read half a file
    return path


def export_all(directory: str | os.PathLike[str], names: list[str] | None = None) -> dict[tuple[str, str], Path]:
    return {(name, exporter): export(name, exporter, directory) for name in names or architecture_names() for exporter in EXPORTERS}


def op_types(path: str | os.PathLike[str]) -> Counter[str]:
    import onnx

    model = onnx.load(str(path))
    return Counter(n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}" for n in model.graph.node)


def opset(path: str | os.PathLike[str]) -> int:
    import onnx

    return next(e.version for e in onnx.load(str(path)).opset_import if e.domain in ("", "ai.onnx"))


def rejected_op_types(path: str | os.PathLike[str]) -> list[str]:
    """The op types of the nodes ``dmlpy.interop.onnx.validate`` reports errors for (sorted), '<graph>' for graph-level errors."""
    import re

    import dmlpy.interop.onnx as dx

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = dx.validate(str(path))
    found = set()
    for finding in report.errors:
        match = re.search(r"graph\.node\[\d+\](?: '[^']*')? \(([A-Za-z0-9_.]+?)(?:-\d+)?\)", finding.path)
        found.add(match.group(1) if match else "<graph>")
    return sorted(found)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directory", help="where the .onnx files go (outside the repository)")
    parser.add_argument("--only", action="append", help="an architecture name (repeatable)")
    parser.add_argument("--table", action="store_true", help="print what dmlpy's validate rejects, as test_real_models.py's REJECTED table")
    args = parser.parse_args(argv)
    paths = {}
    for name in args.only or architecture_names():
        for exporter in EXPORTERS:
            path = export(name, exporter, args.directory)
            paths[name, exporter] = path
            ops = op_types(path)
            print(f"{name:18} {exporter:11} opset {opset(path):2}  {sum(ops.values()):4} nodes  {path}")
            print("    " + ", ".join(f"{op} x{n}" for op, n in sorted(ops.items())))
    if args.table:
        print("\nREJECTED = {")
        for (name, exporter), path in paths.items():
            print(f"    ({name!r}, {exporter!r}): {', '.join(rejected_op_types(path))!r},")
        print("}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
