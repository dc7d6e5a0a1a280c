"""The command line: every command through ``cli.main(argv)`` and through a real ``python -m dmlpy``.

Exit codes, as the CLI's help states them: 0 ok, 1 validation errors, 2 usage errors. Expected
values are independent of dmlpy: DxDispatch's average-pooling example model (0..15 pooled 2x2
stride 2 is 2.5, 4.5, 10.5, 12.5), DMLCalcBufferTensorSize worked by hand (DirectML's helper functions page), and
onnxruntime for ONNX models. ONNX tests skip until ``dmlpy/interop/onnx.py`` exists.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dmlpy
from dmlpy import cli
from dmlpy.interop.dxdispatch import read_model, write_model

ROOT = Path(__file__).resolve().parent.parent
HAS_ONNX_INTEROP = (ROOT / "dmlpy" / "interop" / "onnx.py").is_file() and importlib.util.find_spec("onnx") is not None
needs_onnx = pytest.mark.skipif(not HAS_ONNX_INTEROP, reason="dmlpy/interop/onnx.py (the ONNX importer) does not exist yet, or onnx is not installed")

POOL = {
    "resources": {
        "x": {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 16, "valueStart": 0, "valueDelta": 1}},
        "y": {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 4, "value": 0}},
    },
    "dispatchables": {
        "avgpool": {
            "type": "DML_OPERATOR_AVERAGE_POOLING",
            "desc": {
                "InputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 4, 4]},
                "OutputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 2, 2]},
                "DimensionCount": 2,
                "Strides": [2, 2],
                "WindowSize": [2, 2],
                "StartPadding": [0, 0],
                "EndPadding": [0, 0],
                "IncludePadding": False,
            },
        }
    },
    "commands": [{"type": "dispatch", "dispatchable": "avgpool", "bindings": {"InputTensor": "x", "OutputTensor": "y"}}, {"type": "print", "resource": "y"}],
}
DOC_RESULT = [2.5, 4.5, 10.5, 12.5]


def write(tmp_path: Path, name: str, model: dict[str, Any]) -> str:
    return str(write_model(model, tmp_path / name))


def variant(**changes: Any) -> dict[str, Any]:
    """POOL with desc fields (or, for keys containing '/', any member path) replaced."""
    model = copy.deepcopy(POOL)
    for key, value in changes.items():
        target: Any = model
        *parents, last = key.split("/") if "/" in key else ["dispatchables", "avgpool", "desc", key]
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        target[int(last) if isinstance(target, list) else last] = value
    return model


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_process(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dmlpy", *argv], capture_output=True, text=True, timeout=120, check=False, cwd=cwd)


@pytest.fixture
def pool_json(tmp_path: Path) -> str:
    return write(tmp_path, "pool.json", POOL)


@pytest.fixture
def invalid_json(tmp_path: Path) -> str:
    return write(tmp_path, "invalid.json", variant(OutputTensor={"DataType": "FLOAT32", "Sizes": [1, 1, 3, 3]}, **{"resources/y/initialValues/valueCount": 9}))


# ---------------------------------------------------------------------------------------
# validate


def test_validate_valid_model_exits_0_and_says_valid(capsys: pytest.CaptureFixture[str], pool_json: str) -> None:
    code, out, _ = run_cli(capsys, "validate", pool_json)
    assert code == 0
    assert "valid at DML_FEATURE_LEVEL_6_4 (0 errors, 0 warnings)" in out


def test_validate_prints_every_finding_with_rule_and_path_and_exits_1(capsys: pytest.CaptureFixture[str], invalid_json: str) -> None:
    code, out, _ = run_cli(capsys, "validate", invalid_json)
    assert code == 1
    lines = [line for line in out.splitlines() if line.startswith("error")]
    assert len(lines) == 2  # both spatial sizes are wrong: (4 - 2) / 2 + 1 = 2, not 3
    assert all("POOLING.OUTPUT_SIZE" in line and "dispatchables.avgpool" in line for line in lines)
    assert "OutputTensor.Sizes[2]" in lines[0] and "OutputTensor.Sizes[3]" in lines[1]
    assert "(2 errors, 0 warnings)" in out


def test_validate_json_is_a_list_of_finding_dicts(capsys: pytest.CaptureFixture[str], invalid_json: str) -> None:
    code, out, _ = run_cli(capsys, "validate", "--json", invalid_json)
    findings = json.loads(out)
    assert code == 1 and len(findings) == 2
    assert set(findings[0]) == {"rule", "severity", "path", "expected", "actual", "message", "where"}
    assert (findings[0]["rule"], findings[0]["severity"], findings[0]["expected"], findings[0]["actual"]) == ("POOLING.OUTPUT_SIZE", "error", 2, 3)


def test_validate_json_of_a_valid_model_is_an_empty_list(capsys: pytest.CaptureFixture[str], pool_json: str) -> None:
    code, out, _ = run_cli(capsys, "validate", "--json", pool_json)
    assert (code, json.loads(out)) == (0, [])


@pytest.mark.parametrize(("level", "code"), [("6.1", 1), ("6.2", 0)], ids=["AVERAGE_POOLING1 is an error at 6.1", "AVERAGE_POOLING1 is valid from 6.2"])
def test_validate_feature_level_decides_which_operators_exist(capsys: pytest.CaptureFixture[str], tmp_path: Path, level: str, code: int) -> None:
    model = variant(**{"dispatchables/avgpool/type": "AVERAGE_POOLING1"}, Dilations=[1, 1])
    got, out, _ = run_cli(capsys, "validate", "--json", "--feature-level", level, write(tmp_path, "pool1.json", model))
    assert got == code
    assert [f["rule"] for f in json.loads(out)] == (["OPERATOR.FEATURE_LEVEL"] if code else [])


def test_validate_strict_turns_warnings_into_failure(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # 66 bytes covers the 64 the tensor needs but is not a multiple of 4: a warning, not an error
    path = write(tmp_path, "warn.json", variant(InputTensor={"DataType": "FLOAT32", "Sizes": [1, 1, 4, 4], "TotalTensorSizeInBytes": 66}, **{"resources/x/sizeInBytes": 68}))
    code, out, _ = run_cli(capsys, "validate", "--json", path)
    assert code == 0 and [f["rule"] for f in json.loads(out)] == ["TENSOR.TOTAL_SIZE_ALIGNMENT"]
    assert run_cli(capsys, "validate", "--strict", path)[0] == 1


def test_validate_reports_a_model_dxdispatch_cannot_parse_as_a_format_finding(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run_cli(capsys, "validate", "--json", write(tmp_path, "bool.json", variant(IncludePadding=0)))
    (finding,) = json.loads(out)
    assert code == 1
    assert (finding["rule"], finding["path"]) == ("DXDISPATCH.FORMAT", "dispatchables.avgpool.desc.IncludePadding")
    assert "true/false" in finding["message"]


def test_validate_reports_a_resource_too_small_for_its_tensor(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run_cli(capsys, "validate", "--json", write(tmp_path, "small.json", variant(**{"resources/y/initialValues/valueCount": 2})))
    findings = json.loads(out)
    assert code == 1 and findings and all(f["rule"].startswith("BINDING.") and f["where"] == "commands[0]" for f in findings)
    assert run_cli(capsys, "validate", "--no-bindings", write(tmp_path, "small2.json", variant(**{"resources/y/initialValues/valueCount": 2})))[0] == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["validate", "missing.json"], "no such file", id="a missing model is a usage error"),
        pytest.param(["validate", "model.txt"], "expected a DxDispatch model (.json) or an ONNX model", id="an unknown model type is a usage error"),
        pytest.param(["validate", "--feature-level", "6.9", "model.txt"], "not a DML_FEATURE_LEVEL", id="an unknown feature level is a usage error"),
        pytest.param([], "required", id="no command is a usage error"),
        pytest.param(["validate"], "required", id="a command without its model is a usage error"),
        pytest.param(["frobnicate"], "invalid choice", id="an unknown command is a usage error"),
    ],
)
def test_usage_errors_exit_2_with_a_message(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str], message: str) -> None:
    (tmp_path / "model.txt").write_text("{}", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, *argv)
    assert code == 2
    assert message in err


def test_validate_as_a_process_exits_1_and_prints_json(tmp_path: Path, invalid_json: str) -> None:
    done = run_process("validate", "--json", invalid_json)
    assert done.returncode == 1, done.stderr
    assert {f["rule"] for f in json.loads(done.stdout)} == {"POOLING.OUTPUT_SIZE"}


# ---------------------------------------------------------------------------------------
# run


def test_run_prints_each_output_in_its_tensor_shape(capsys: pytest.CaptureFixture[str], pool_json: str) -> None:
    code, out, _ = run_cli(capsys, "run", pool_json)
    assert code == 0
    assert out.startswith("y: float32[1, 1, 2, 2] min 2.5 max 12.5 mean 7.5")
    assert "[ 2.5  4.5 10.5 12.5]" in out


def test_run_output_dir_saves_every_output_as_npy(capsys: pytest.CaptureFixture[str], tmp_path: Path, pool_json: str) -> None:
    code, _, err = run_cli(capsys, "run", pool_json, "--output-dir", str(tmp_path / "out"))
    assert code == 0 and "saved y" in err
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "y.npy"), np.array(DOC_RESULT, np.float32).reshape(1, 1, 2, 2))


def test_run_input_npy_replaces_the_resource(capsys: pytest.CaptureFixture[str], tmp_path: Path, pool_json: str) -> None:
    np.save(tmp_path / "x.npy", 2 * np.arange(16, dtype=np.float32))
    code, _, _ = run_cli(capsys, "run", pool_json, "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", str(tmp_path))
    assert code == 0
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy").reshape(-1), [5, 9, 21, 25])


def test_run_fill_zeros_replaces_the_models_initial_values(capsys: pytest.CaptureFixture[str], tmp_path: Path, pool_json: str) -> None:
    assert run_cli(capsys, "run", pool_json, "--fill", "zeros", "--output-dir", str(tmp_path))[0] == 0
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), np.zeros((1, 1, 2, 2), np.float32))


def test_run_fill_random_depends_on_the_seed_only(capsys: pytest.CaptureFixture[str], tmp_path: Path, pool_json: str) -> None:
    outputs = []
    for seed, folder in (("1", "a"), ("1", "b"), ("2", "c")):
        assert run_cli(capsys, "run", pool_json, "--fill", "random", "--seed", seed, "--output-dir", str(tmp_path / folder))[0] == 0
        outputs.append(np.load(tmp_path / folder / "y.npy"))
    np.testing.assert_array_equal(outputs[0], outputs[1])
    assert not np.array_equal(outputs[0], outputs[2])


def test_run_write_file_commands_write_into_the_output_dir(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    model = variant(**{"commands/1": {"type": "writeFile", "resource": "y", "targetPath": "pooled.npy"}})
    code, _, err = run_cli(capsys, "run", write(tmp_path, "wf.json", model), "--output-dir", str(tmp_path / "out"))
    assert code == 0 and "wrote y" in err
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "pooled.npy"), DOC_RESULT)


def test_run_progress_goes_to_stderr_only_when_asked_or_slow(capsys: pytest.CaptureFixture[str], pool_json: str) -> None:
    _, out, err = run_cli(capsys, "run", "--progress", pool_json)
    assert "[1/2] dispatch avgpool" in err and "[2/2] print y" in err and "[1/2]" not in out
    assert "[1/2]" not in run_cli(capsys, "run", pool_json)[2]  # a quick run stays quiet
    assert "[1/2]" not in run_cli(capsys, "run", "--quiet", pool_json)[2]


def test_progress_in_auto_mode_starts_once_the_run_is_slow() -> None:
    lines: list[str] = []

    class Sink:
        def write(self, text: str) -> None:
            lines.append(text)

        def flush(self) -> None:
            pass

    quick, slow = cli.Progress("auto", after=3600, stream=Sink()), cli.Progress("auto", after=0.0, stream=Sink())
    quick(1, 2, "dispatch a")
    slow(1, 2, "dispatch a")
    assert (quick.shown, slow.shown) == (0, 1)
    assert lines[0].startswith("[1/2] dispatch a")


def test_run_of_a_desc_directml_rejects_exits_1_with_the_rule(capsys: pytest.CaptureFixture[str], invalid_json: str) -> None:
    code, _, err = run_cli(capsys, "run", invalid_json)
    assert code == 1 and "POOLING.OUTPUT_SIZE" in err


def test_run_input_for_an_unknown_resource_is_a_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path, pool_json: str) -> None:
    np.save(tmp_path / "q.npy", np.zeros(4, np.float32))
    code, _, err = run_cli(capsys, "run", pool_json, "--input", f"q={tmp_path / 'q.npy'}")
    assert code == 2 and "no such resource" in err
    assert run_cli(capsys, "run", pool_json, "--input", "x")[0] == 2


def test_run_as_a_process_saves_outputs(tmp_path: Path, pool_json: str) -> None:
    done = run_process("run", pool_json, "--output-dir", str(tmp_path / "out"), "--backend", "numpy")
    assert done.returncode == 0, done.stderr
    assert "y: float32[1, 1, 2, 2]" in done.stdout
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "y.npy").reshape(-1), DOC_RESULT)


# ---------------------------------------------------------------------------------------
# export-dxdispatch and emit-cpp


@pytest.fixture
def decoder_json(tmp_path: Path) -> str:
    sys.path.insert(0, str(ROOT / "tests" / "interop"))
    try:
        from export_cases import decoder  # noqa: PLC0415
    finally:
        sys.path.pop(0)
    from dmlpy.interop.dxdispatch import graph_model  # noqa: PLC0415

    program, inputs = decoder(backend="numpy")
    return write(tmp_path, "decoder.json", graph_model(program, inputs))


def test_export_dxdispatch_writes_the_graph_and_one_model_per_operator(capsys: pytest.CaptureFixture[str], tmp_path: Path, decoder_json: str) -> None:
    code, out, _ = run_cli(capsys, "export-dxdispatch", decoder_json, str(tmp_path / "exported"))
    assert code == 0
    files = [Path(line) for line in out.splitlines()]
    assert [f.name for f in files] == ["graph.json", "node0_conv_transpose0.json", "node1_depth_to_space1.json", "node2_sigmoid2.json"]
    for file in files[1:]:
        parsed = read_model(file)
        assert len(parsed.dispatchables) == 1 and parsed.commands[0]["type"] == "dispatch"
    assert len(read_model(files[0]).dispatchables) == 3


def test_export_dxdispatch_as_a_process(tmp_path: Path, pool_json: str) -> None:
    done = run_process("export-dxdispatch", pool_json, str(tmp_path / "exported"), "--output-command", "writeFile")
    assert done.returncode == 0, done.stderr
    single = json.loads((tmp_path / "exported" / "avgpool.json").read_text(encoding="utf-8"))
    assert single["commands"][-1] == {"type": "writeFile", "resource": "y", "targetPath": "y.npy"}
    assert single["resources"]["x"]["initialValues"] == list(range(16))


def test_emit_cpp_prints_one_builder_per_dispatchable(capsys: pytest.CaptureFixture[str], pool_json: str) -> None:
    code, out, _ = run_cli(capsys, "emit-cpp", pool_json, "--prefix", "pool")
    assert code == 0
    assert "inline const DML_OPERATOR_DESC* pool_avgpool()" in out
    assert "DML_AVERAGE_POOLING_OPERATOR_DESC op_Desc = {&op_Desc_InputTensor, &op_Desc_OutputTensor, 2u, op_Desc_Strides, op_Desc_WindowSize, op_Desc_StartPadding, op_Desc_EndPadding, FALSE};" in out


def test_emit_cpp_as_a_process_writes_a_header_that_compiles(tmp_path: Path, pool_json: str) -> None:
    done = run_process("emit-cpp", pool_json, "-o", str(tmp_path / "pool.h"))
    assert done.returncode == 0, done.stderr
    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed")
    (tmp_path / "main.cpp").write_text('#include "pool.h"\nint main() { return dmlpy_avgpool()->Type != DML_OPERATOR_AVERAGE_POOLING; }\n', encoding="utf-8")
    include = run_process("include").stdout.strip()
    built = subprocess.run(["g++", "-std=c++17", "-Wall", "-Werror", "-DDMLPY_TYPES_ONLY", f"-I{include}", "main.cpp", "-o", "main"], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr
    assert subprocess.run([str(tmp_path / "main")], check=False).returncode == 0


# ---------------------------------------------------------------------------------------
# calc-size, include, info, rules

CALC_SIZE = [
    pytest.param(["FLOAT32", "1,3,4,4"], 192, id="packed FLOAT32 1x3x4x4 is 48 elements, 192 bytes"),
    pytest.param(["FLOAT32", "1,3,4,4", "48,16,4,1"], 192, id="explicit packed strides reach the same last element"),
    pytest.param(["FLOAT32", "1,3,4,4", "48,1,12,3"], 192, id="NHWC strides: last index 2 + 3*12 + 3*3 = 47, so 48 elements"),
    pytest.param(["FLOAT32", "1,3,4,4", "0,0,0,1"], 16, id="broadcast strides reach 4 elements"),
    pytest.param(["FLOAT16", "3"], 8, id="3 FLOAT16 are 6 bytes, rounded up to 8"),
    pytest.param(["DML_TENSOR_DATA_TYPE_UINT8", "5"], 8, id="the full C name works and 5 bytes round up to 8"),
    pytest.param(["uint64", "2,2"], 32, id="data type names are case-insensitive"),
]


@pytest.mark.parametrize(("argv", "size"), CALC_SIZE)
def test_calc_size_prints_dml_calc_buffer_tensor_size(capsys: pytest.CaptureFixture[str], argv: list[str], size: int) -> None:
    code, out, _ = run_cli(capsys, "calc-size", *argv)
    assert (code, out) == (0, f"{size}\n")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["FLOAT33", "1"], "not a DML_TENSOR_DATA_TYPE", id="an unknown data type"),
        pytest.param(["FLOAT32", "1,-3"], "one or more UINTs", id="a negative size"),
        pytest.param(["FLOAT32", "1,three"], "comma-separated unsigned integers", id="a size that is not a number"),
        pytest.param(["FLOAT32", "1,3", "1"], "STRIDES has 1 entries for 2 SIZES", id="strides of the wrong length"),
    ],
)
def test_calc_size_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    code, _, err = run_cli(capsys, "calc-size", *argv)
    assert code == 2 and message in err


def test_calc_size_as_a_process() -> None:
    done = run_process("calc-size", "FLOAT32", "1,3,4,4", "0,16,4,1")
    assert (done.returncode, done.stdout) == (0, "192\n")  # last index 2*16 + 3*4 + 3 = 47


def test_include_prints_the_directory_holding_the_headers(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "include")
    assert code == 0
    assert (Path(out.strip()) / "dmlpy" / "dml_types.h").is_file() and out.strip() == dmlpy.get_include()


def test_include_as_a_process_and_through_the_installed_script() -> None:
    done = run_process("include")
    assert done.returncode == 0 and (Path(done.stdout.strip()) / "dmlpy" / "dmlpy.h").is_file()
    script = shutil.which("dmlpy", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("the dmlpy console script is not installed next to this Python")
    scripted = subprocess.run([script, "include"], capture_output=True, text=True, check=False)
    assert (scripted.returncode, scripted.stdout) == (0, done.stdout)


def test_info_names_the_backend_operators_and_headers(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "info")
    assert code == 0
    assert f"headers: {dmlpy.get_include()}" in out and "DML_OPERATOR_CONVOLUTION" in out


def test_rules_lists_every_rule_id(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "rules")
    assert code == 0 and all(rule_id in out for rule_id in dmlpy.RULES)


def test_info_and_rules_as_processes() -> None:
    info, rules = run_process("info"), run_process("rules", "--markdown")
    assert info.returncode == 0 and f"dmlpy {dmlpy.__version__}" in info.stdout and "headers: " in info.stdout
    assert rules.returncode == 0 and rules.stdout.startswith("# dmlpy validation rules")


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "--help")
    assert code == 0 and "export-dxdispatch" in out and "calc-size" in out


# ---------------------------------------------------------------------------------------
# Headers in the wheel: the package configuration


def test_package_list_names_every_package_so_the_wheel_misses_none() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    listed = set(config["packages"])
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "dmlpy").rglob("__init__.py") if "__pycache__" not in p.parts}
    assert on_disk <= listed, f"add {sorted(on_disk - listed)} to [tool.setuptools] packages"


def test_headers_ship_as_package_data_of_dmlpy_include() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert "dmlpy.include.dmlpy" in config["packages"]
    source = ROOT / config["package-dir"]["dmlpy.include"] / "dmlpy"
    patterns = config["package-data"]["dmlpy.include.dmlpy"]
    shipped = {p.relative_to(source).as_posix() for pattern in patterns for p in source.glob(pattern)}
    assert shipped == {"dml_types.h", "dmlpy.h"}


# ---------------------------------------------------------------------------------------
# ONNX models


def test_onnx_model_without_the_onnx_interop_is_a_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "m.onnx").write_bytes(b"")
    monkeypatch.setitem(sys.modules, "dmlpy.interop.onnx", None)  # import now raises ImportError
    import dmlpy.interop  # noqa: PLC0415

    monkeypatch.delattr(dmlpy.interop, "onnx", raising=False)  # an earlier import left the submodule as an attribute
    code, _, err = run_cli(capsys, "validate", str(tmp_path / "m.onnx"))
    assert code == 2 and "dmlpy[onnx]" in err


def _average_pool_onnx(path: Path) -> np.ndarray:
    """An ONNX AveragePool model (2x2, stride 2) and onnxruntime's output for 0..15."""
    import onnx  # noqa: PLC0415
    import onnxruntime  # noqa: PLC0415
    from onnx import TensorProto, helper  # noqa: PLC0415

    node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])
    graph = helper.make_graph(
        [node], "pool", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 2, 2])]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    onnx.save(model, path)
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)})[0]


@needs_onnx
def test_onnx_model_validates(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _average_pool_onnx(tmp_path / "pool.onnx")
    code, out, _ = run_cli(capsys, "validate", "--json", str(tmp_path / "pool.onnx"))
    assert code == 0 and [f for f in json.loads(out) if f["severity"] == "error"] == []


@needs_onnx
def test_onnx_model_runs_to_onnxruntimes_result(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    expected = _average_pool_onnx(tmp_path / "pool.onnx")
    np.save(tmp_path / "x.npy", np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4))
    code, _, _ = run_cli(capsys, "run", str(tmp_path / "pool.onnx"), "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", str(tmp_path / "out"))
    assert code == 0
    np.testing.assert_allclose(np.load(tmp_path / "out" / "y.npy"), expected, rtol=1e-6)


@needs_onnx
def test_onnx_model_exports_a_graph_and_per_operator_models(tmp_path: Path) -> None:
    _average_pool_onnx(tmp_path / "pool.onnx")
    done = run_process("export-dxdispatch", str(tmp_path / "pool.onnx"), str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    files = [Path(line) for line in done.stdout.splitlines()]
    assert files[0].name == "graph.json" and len(files) == 2
    assert all(read_model(f).dispatchables for f in files)


@needs_onnx
def test_onnx_model_emits_cpp(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _average_pool_onnx(tmp_path / "pool.onnx")
    code, out, _ = run_cli(capsys, "emit-cpp", str(tmp_path / "pool.onnx"), "--prefix", "pool")
    assert code == 0 and "inline void pool_fill(" in out and "DML_AVERAGE_POOLING" in out


def _decoder_onnx(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """A small ONNX decoder (ConvTranspose with weights and bias, Relu, DepthToSpace CRD); its input
    and onnxruntime's output."""
    import onnx  # noqa: PLC0415
    import onnxruntime  # noqa: PLC0415
    from onnx import TensorProto, helper, numpy_helper  # noqa: PLC0415

    rng = np.random.default_rng(3)
    w = (rng.standard_normal((8, 4, 3, 3)) * 0.3).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    nodes = [
        helper.make_node("ConvTranspose", ["z", "w", "b"], ["h"], strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("DepthToSpace", ["r"], ["image"], blocksize=2, mode="CRD"),
    ]
    graph = helper.make_graph(
        nodes, "decoder", [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 8, 4, 4])], [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 1, 16, 16])],
        initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )  # fmt: skip
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10), path)
    z = rng.standard_normal((1, 8, 4, 4)).astype(np.float32)
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return z, session.run(None, {"z": z})[0]


@needs_onnx
@pytest.mark.parametrize("level", ["6.4", "6.1"], ids=["weights as constant nodes (FL 6.4)", "weights as OWNED_BY_DML inputs (FL 6.1)"])
def test_exported_onnx_decoder_runs_to_onnxruntimes_result(tmp_path: Path, level: str) -> None:
    z, expected = _decoder_onnx(tmp_path / "decoder.onnx")
    np.save(tmp_path / "z.npy", z)
    code = cli.main(["export-dxdispatch", str(tmp_path / "decoder.onnx"), str(tmp_path / "out"), "--feature-level", level, "--input", f"z={tmp_path / 'z.npy'}", "--quiet"])
    assert code == 0
    graph = json.loads((tmp_path / "out" / "graph.json").read_text(encoding="utf-8"))
    owned = [entry.get("bindings", {}) for entry in graph["dispatchables"].values()]
    assert any(owned) == (level == "6.1")
    assert cli.main(["run", str(tmp_path / "out" / "graph.json"), "--feature-level", level, "--output-dir", str(tmp_path / "results"), "--quiet"]) == 0
    np.testing.assert_allclose(np.load(tmp_path / "results" / "image.npy").reshape(expected.shape), expected, rtol=1e-4, atol=1e-5)


@needs_onnx
def test_onnx_decoder_runs_through_the_cli_to_onnxruntimes_result(tmp_path: Path) -> None:
    z, expected = _decoder_onnx(tmp_path / "decoder.onnx")
    np.save(tmp_path / "z.npy", z)
    done = run_process("run", str(tmp_path / "decoder.onnx"), "--input", f"z={tmp_path / 'z.npy'}", "--output-dir", str(tmp_path / "out"), "--progress")
    assert done.returncode == 0, done.stderr
    assert "[1/3] importing the ONNX model" in done.stderr
    np.testing.assert_allclose(np.load(tmp_path / "out" / "image.npy"), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("command", ["run", "emit-cpp", "export-dxdispatch"])
def test_a_model_dxdispatch_cannot_parse_fails_other_commands_with_exit_1(capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str) -> None:
    path = write(tmp_path, "bool.json", variant(IncludePadding=0))
    code, _, err = run_cli(capsys, command, path, *([str(tmp_path / "out")] if command == "export-dxdispatch" else []))
    assert code == 1 and "true/false" in err


# ---------------------------------------------------------------------------------------
# Warnings and unwritable outputs

# 66 bytes cover the 64 the tensor needs but are not a multiple of 4: TENSOR.TOTAL_SIZE_ALIGNMENT warns
WARNING_MODEL = variant(InputTensor={"DataType": "FLOAT32", "Sizes": [1, 1, 4, 4], "TotalTensorSizeInBytes": 66}, **{"resources/x/sizeInBytes": 68})


def _finding_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith(("warning ", "error "))]


@pytest.mark.parametrize("command", ["run", "export-dxdispatch"])
def test_warnings_are_printed_once_each_as_validate_prints_findings(capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str) -> None:
    path = write(tmp_path, "warn.json", WARNING_MODEL)
    (finding,) = json.loads(run_cli(capsys, "validate", "--json", path)[1])
    (line,) = [line for line in run_cli(capsys, "validate", path)[1].splitlines() if line.startswith("warning ")]
    assert finding["rule"] == "TENSOR.TOTAL_SIZE_ALIGNMENT"
    code, _, err = run_cli(capsys, command, path, *([str(tmp_path / "out")] if command == "export-dxdispatch" else []))
    assert code == 0
    # validate's line without its model location (a warning raised while running has none); the
    # graph run and each operator model raise it again, and it is printed once
    assert _finding_lines(err) == [line.replace(f"{finding['where']}: ", "", 1)]
    assert "dxdispatch.py" not in err and "DmlWarning" not in err  # no Python warning lines with dmlpy's source


@pytest.mark.parametrize("command", ["run", "export-dxdispatch"])
def test_quiet_silences_warnings(tmp_path: Path, command: str) -> None:
    path = write(tmp_path, "warn.json", WARNING_MODEL)
    done = run_process(command, path, *([str(tmp_path / "out")] if command == "export-dxdispatch" else []), "--quiet", cwd=ROOT)
    assert done.returncode == 0 and done.stderr == ""


def test_warnings_in_a_process_are_finding_lines_on_stderr_only(tmp_path: Path) -> None:
    path = write(tmp_path, "warn.json", WARNING_MODEL)
    done = run_process("run", path, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert [line.split()[:2] for line in done.stderr.splitlines()] == [["warning", "TENSOR.TOTAL_SIZE_ALIGNMENT"]]
    assert run_process("run", path, "--quiet", cwd=ROOT).stderr == ""


@needs_onnx
def test_emit_cpp_prints_an_onnx_models_warnings_once_each_and_quiet_silences_them(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import onnx  # noqa: PLC0415
    from onnx import TensorProto, helper  # noqa: PLC0415

    # ceil_mode on 5x5, 2x2 stride 2: 3x3, one more than the floor size in each spatial dimension
    node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)
    graph = helper.make_graph([node], "pool", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 5, 5])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 3, 3])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10), tmp_path / "ceil.onnx")
    code, out, err = run_cli(capsys, "emit-cpp", str(tmp_path / "ceil.onnx"))
    assert code == 0 and "DML_AVERAGE_POOLING" in out
    assert [line.split()[1] for line in _finding_lines(err)] == ["POOLING.CEIL_OUTPUT", "POOLING.CEIL_OUTPUT"]  # Sizes[2] and Sizes[3]
    assert len(set(_finding_lines(err))) == 2
    assert run_cli(capsys, "emit-cpp", str(tmp_path / "ceil.onnx"), "--quiet")[2] == ""


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["run", "{model}", "--output-dir", "{blocked}/out"], id="run into an output dir under a file"),
        pytest.param(["export-dxdispatch", "{model}", "{blocked}/out"], id="export-dxdispatch into an out dir under a file"),
        pytest.param(["emit-cpp", "{model}", "-o", "{blocked}/model.h"], id="emit-cpp to a header under a file"),
    ],
)
def test_unwritable_output_path_is_one_line_on_stderr_and_exit_2(tmp_path: Path, argv: list[str]) -> None:
    model = write(tmp_path, "pool.json", POOL)
    (tmp_path / "blocked").write_text("a file, not a directory", encoding="utf-8")
    done = run_process(*[a.format(model=model, blocked=tmp_path / "blocked") for a in argv], cwd=ROOT)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("dmlpy: error: ") and "blocked" in done.stderr


def test_export_of_a_model_with_weights_in_files_writes_a_whole_model_from_any_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.arange(64 * 64, dtype=np.float32)  # 16 KiB: write_model puts them in a .npy file
    model = variant(InputTensor={"DataType": "FLOAT32", "Sizes": [1, 1, 64, 64]}, OutputTensor={"DataType": "FLOAT32", "Sizes": [1, 1, 32, 32]},
                    **{"resources/x/initialValues": x.tolist(), "resources/y/initialValues/valueCount": 32 * 32})  # fmt: skip
    source = tmp_path / "models" / "big.json"
    source.parent.mkdir()
    write_model(model, source)
    assert (tmp_path / "models" / "big_x.npy").is_file()
    monkeypatch.chdir(tmp_path)  # not the model's directory: its sourcePath is relative to the model
    code, out, _ = run_cli(capsys, "export-dxdispatch", str(source), str(tmp_path / "out"), "--quiet")
    assert code == 0
    shutil.rmtree(tmp_path / "models")  # the exported models must not lean on the originals
    expected = x.reshape(32, 2, 32, 2).mean(axis=(1, 3)).reshape(-1)  # 2x2 windows, stride 2
    for file in [Path(line) for line in out.splitlines()]:
        assert cli.main(["run", str(file), "--output-dir", str(tmp_path / "results" / file.stem), "--quiet"]) == 0
        np.testing.assert_allclose(np.load(tmp_path / "results" / file.stem / "y.npy").reshape(-1), expected, rtol=1e-6)


def _onnx_chain(path: Path, ops: list[str], batch: Any = 1) -> None:
    """A chain of one-input ONNX nodes on x {batch, 2, 4, 4} (TopK gets its k)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits, previous = [], [], "x"
    for k, op in enumerate(ops):
        extra: dict[str, Any] = {}
        inputs = [previous, "k"] if op == "TopK" else [previous]
        outputs = [f"v{k}", f"i{k}"] if op == "TopK" else [f"v{k}"]
        nodes.append(helper.make_node(op, inputs, outputs, name=f"n{k}", **extra))
        previous = f"v{k}"
    inits.append(numpy_helper.from_array(np.array([1], np.int64), "k"))
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 2, 4, 4])], [helper.make_empty_tensor_value_info(previous)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)


ONNX_EXIT_CASES = [
    ("a model dmlpy imports and runs exits 0", ["Relu", "Sigmoid"], 0),
    ("a node whose DirectML operator dmlpy describes but cannot run exits 3", ["RandomUniformLike", "Relu"], 3),
    ("an ONNX operator the importer does not map exits 4, even beside a not-emulated one", ["RandomUniformLike", "Unique"], 4),
    ("an invalid node exits 1, whatever else the model holds", ["RandomUniformLike", "SpaceToDepth", "Unique"], 1),
]


@needs_onnx
@pytest.mark.parametrize(("ops", "code"), [pytest.param(c[1], c[2], id=c[0]) for c in ONNX_EXIT_CASES])
def test_onnx_validate_exit_codes_separate_invalid_unsupported_and_not_emulated(capsys: pytest.CaptureFixture[str], tmp_path: Path, ops: list[str], code: int) -> None:
    _onnx_chain(tmp_path / "m.onnx", ops)
    got, out, _ = run_cli(capsys, "validate", str(tmp_path / "m.onnx"))
    assert got == code, out


@needs_onnx
def test_onnx_input_shape_fixes_a_symbolic_dimension_for_validate_and_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _onnx_chain(tmp_path / "m.onnx", ["Relu"], batch="N")
    assert run_cli(capsys, "validate", str(tmp_path / "m.onnx"))[0] == 1  # the batch is not static
    assert run_cli(capsys, "validate", str(tmp_path / "m.onnx"), "--input-shape", "x=3,2,4,4")[0] == 0
    code, out, _ = run_cli(capsys, "run", str(tmp_path / "m.onnx"), "--input-shape", "x=3,2,4,4", "--fill", "zeros", "--full")
    assert code == 0 and "float32[3, 2, 4, 4]" in out
    assert run_cli(capsys, "validate", str(tmp_path / "m.onnx"), "--input-shape", "x")[0] == 2
