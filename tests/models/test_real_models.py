"""Real architectures exported by PyTorch: dmlpy's importer takes them and matches onnxruntime.

Ten networks (tests/models/architectures.py: ResNet, MobileNetV2, EfficientNet, ShuffleNetV2,
DenseNet, a DeepLab-like segmentation net with bilinear Resize, UNet, a PixelShuffle /
PixelUnshuffle super-resolution net, a DCGAN generator, a small Vision Transformer) and a
control made only of operators main's importer maps (so the harness is proven on a model that
imports), random seeded weights, each exported by both torch exporters (tests/models/export.py). For every
model x exporter: ``validate`` reports no error, and ``import_model`` runs it on both backends
equal to onnxruntime's CPU run of the same file (fp32: rtol 1e-3, atol 1e-4).

The oracle is onnxruntime, not torch: torch only writes the files. Without torch (CI) the
tests skip, unless ``$DMLPY_MODEL_CACHE`` holds the exported files (``python -m
tests.models.export $DMLPY_MODEL_CACHE`` writes them; they never go in the repository).

``REJECTED`` says what each model lacks today: the op types of the nodes ``validate`` reports
errors for. A non-empty entry marks that model's tests xfail (strict), and
``test_the_rejected_table_names_exactly_what_validate_reports`` keeps the table honest, so a
fix that maps an operator fails that test until the entry is updated, and a model that
imports and runs fails its xfail until its entry is emptied. ``python -m tests.models.export
DIR --table`` prints the table as the importer sees it.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pytest

import dmlpy

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import export as models  # tests/models/export.py

import dmlpy.interop.onnx as dx

pytestmark = pytest.mark.filterwarnings("ignore::dmlpy.DmlWarning")

TOLERANCE = {"rtol": 1e-3, "atol": 1e-4}

# What the importer rejects, as validate reports it (op types of the nodes with errors): nothing
# today. A model that gains an unsupported op type gets its entry here (the export script prints
# what validate reports), which marks its cases xfail until the importer maps it.
REJECTED: dict[tuple[str, str], str] = {(name, exporter): "" for name in models.architecture_names() for exporter in models.EXPORTERS}

CASES = [(name, exporter) for name in models.architecture_names() for exporter in models.EXPORTERS]


def cases(raises: type[BaseException]) -> list[object]:
    """The cases, each marked xfail (strict, failing only by ``raises``) when REJECTED names what it lacks."""
    params = []
    for name, exporter in CASES:
        rejected = REJECTED.get((name, exporter), "")
        marks = [pytest.mark.xfail(strict=True, raises=raises, reason=f"validate rejects {rejected}")] if rejected else []
        params.append(pytest.param(name, exporter, id=f"{name}-{exporter}", marks=marks))
    return params


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cache = os.environ.get("DMLPY_MODEL_CACHE")
    return Path(cache) if cache else tmp_path_factory.mktemp("exported-models")


def model_file(directory: Path, name: str, exporter: str) -> Path:
    """The exported model: exported now (reused from the cache when this torch wrote it), or without torch from the cache; else skips."""
    try:
        import torch  # noqa: F401
    except ImportError:
        path = models.cached(directory, name, exporter)
        if path is None:
            pytest.skip("torch is not installed (CI has none): the models are exported from PyTorch; run `python -m tests.models.export DIR` "
                        "where torch is and set DMLPY_MODEL_CACHE=DIR to test them without it")  # fmt: skip
        return path
    return models.export(name, exporter, directory)


def input_array(path: Path) -> tuple[str, np.ndarray]:
    """The model's one input, filled from a seeded generator (the same for every backend)."""
    (value,) = onnx.load(str(path), load_external_data=False).graph.input
    shape = tuple(d.dim_value for d in value.type.tensor_type.shape.dim)
    return value.name, np.random.default_rng(20261126).standard_normal(shape).astype(np.float32)


def onnxruntime_outputs(path: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds), strict=True))


def error_lines(report: dmlpy.Report) -> str:
    return "\n".join(str(f) for f in report.errors[:20])


def test_the_table_has_one_entry_per_architecture_and_exporter() -> None:
    assert sorted(REJECTED) == sorted(CASES)
    assert len(models.architecture_names()) == 11  # the ten of issue 14 and the control


@pytest.mark.parametrize(("name", "exporter"), CASES, ids=[f"{n}-{e}" for n, e in CASES])
def test_the_rejected_table_names_exactly_what_validate_reports(name: str, exporter: str, model_dir: Path) -> None:
    path = model_file(model_dir, name, exporter)
    reported = ", ".join(models.rejected_op_types(path))
    assert reported == REJECTED[name, exporter], f"validate now rejects {reported or 'nothing'}: update REJECTED[{name!r}, {exporter!r}]"


@pytest.mark.parametrize(("name", "exporter"), cases(AssertionError))
def test_validate_reports_no_error(name: str, exporter: str, model_dir: Path) -> None:
    path = model_file(model_dir, name, exporter)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = dx.validate(str(path))
    assert report.ok, error_lines(report)


@pytest.mark.parametrize(("name", "exporter"), cases(dmlpy.DmlError))  # the import raises OnnxImportError
def test_the_imported_model_runs_equal_to_onnxruntime(name: str, exporter: str, model_dir: Path, device: dmlpy.Device) -> None:
    path = model_file(model_dir, name, exporter)
    input_name, x = input_array(path)
    expected = onnxruntime_outputs(path, {input_name: x})
    imported = dx.import_model(str(path), device=device)
    got = imported.run({input_name: x})
    assert list(got) == list(expected)
    for output, value in expected.items():
        assert got[output].shape == value.shape, output
        assert got[output].dtype == value.dtype, output
        np.testing.assert_allclose(got[output], value, **TOLERANCE, err_msg=f"{name}-{exporter} output {output}")
