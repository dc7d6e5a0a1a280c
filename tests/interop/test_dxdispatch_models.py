"""DirectML's own example DxDispatch models load, validate and emit C++; every desc field kind reads
and writes as DxDispatch's parser spells it.

The models in ``dxdispatch_models/`` were written by DirectML's team for DxDispatch (MIT, see the
LICENSE and README there). The expected field values below are read off those JSON files by hand
(FLOAT16 bits: 2.0 is 0x4000, 4.0 is 0x4400, 1.0 is 0x3C00, -0.5 is 0xB800); the format is judged by
``dxdispatch_format.format_errors``, written from DxDispatch's parser, never from dmlpy's writer.
"""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from dxdispatch_format import format_errors

import dmlpy
from dmlpy import DML_OPERATOR_TYPE, cli
from dmlpy.enums import DML_INTERPOLATION_MODE, DML_RECURRENT_NETWORK_DIRECTION, DML_TENSOR_DATA_TYPE
from dmlpy.errors import DmlError
from dmlpy.interop import cpp
from dmlpy.interop import dxdispatch as dx
from dmlpy.interop.dxdispatch import DxDispatchFormatError
from dmlpy.operators import DML_OPERATOR_DESC, NOT_EMULATED, REGISTRY, operator_desc
from dmlpy.operators.descs.helpers import DML_SCALE_BIAS, DML_SIZE_2D
from dmlpy.structs import DML_SCALAR_UNION, Kind, kind_of, normalized
from dmlpy.tensor import buffer_tensor

OP = DML_OPERATOR_TYPE
DT = DML_TENSOR_DATA_TYPE
MODELS_DIR = Path(__file__).parent / "dxdispatch_models"
MODELS = sorted(MODELS_DIR.glob("dml_*.json"))
GXX = shutil.which("g++")


def test_all_nineteen_example_models_are_here_with_their_license() -> None:
    assert len(MODELS) == 19
    assert "MIT License" in (MODELS_DIR / "LICENSE").read_text(encoding="utf-8")


def _runnable(model: dx.Model) -> bool:
    return all(REGISTRY[operator_desc(d).Type].emulated for d in model.dispatchables.values())


@pytest.mark.parametrize("path", MODELS, ids=[p.stem for p in MODELS])
def test_example_model_follows_dxdispatchs_format(path: Path) -> None:
    assert format_errors(dx.parse_json(path.read_text(encoding="utf-8"))) == []


@pytest.mark.parametrize("path", MODELS, ids=[p.stem for p in MODELS])
def test_example_model_validates_with_no_error_only_not_emulated_warnings(path: Path) -> None:
    model = dx.read_model(path)
    found = dx.check_model(model)
    assert [f.finding.rule for f in found if f.finding.rule != NOT_EMULATED.id] == []
    # a model is either runnable or reports the finding for exactly the operators without a kernel
    missing = sorted({f.where for f in found})
    expected = sorted(f"dispatchables.{n}" for n, d in model.dispatchables.items() if not REGISTRY[operator_desc(d).Type].emulated)
    assert missing == expected


@pytest.mark.parametrize("path", MODELS, ids=[p.stem for p in MODELS])
def test_example_model_validate_exits_0_when_runnable_else_3(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["validate", str(path)])
    capsys.readouterr()
    assert code == (cli.EXIT_OK if _runnable(dx.read_model(path)) else cli.EXIT_NOT_EMULATED)


@pytest.mark.parametrize("path", MODELS, ids=[p.stem for p in MODELS])
def test_example_model_without_a_kernel_compiles_to_e_notimpl(path: Path) -> None:
    model = dx.read_model(path)
    device = dmlpy.create_device(backend="numpy")
    for desc in model.dispatchables.values():
        operator = device.create_operator(desc)
        if REGISTRY[operator_desc(desc).Type].emulated:
            device.compile_operator(operator)
            continue
        with pytest.raises(DmlError) as caught:
            device.compile_operator(operator)
        assert caught.value.hresult == dmlpy.HRESULT.E_NOTIMPL


_ELU_OF_MINUS_2 = 0.5 * (math.exp(-2.0) - 1.0)  # ADD1's fused ELU, Alpha 0.5, at 3 + (-5)
# What each model's output holds, worked by hand from its initial values and its operator's page
EXPECTED = {
    "dml_element_wise_add": ("Out", [1 + 5, 2 + 8, 3 - 5]),
    "dml_element_wise_add1": ("Out", [6, 10, _ELU_OF_MINUS_2]),
    "dml_element_wise_clip": ("A", [-2.5, -2.5, -2, -1, 0, 1, 2, 2.5, 2.5]),  # in place, bounds -2.5 and 2.5
    "dml_element_wise_identity": ("Out", [1 * 2 + 10, 2 * 2 + 10, 3 * 2 + 10]),  # ScaleBias {2, 10}
    "dml_owned_tensors": ("Out", [6, 10, -2]),
    "dml_reduce": ("output", [1 + 2 + 3, 4 + 5 + 6, 7 + 8 + 9]),  # REDUCE SUM of 1..9 as {1,1,3,3} over axis 3: the row sums
    "dml_scalar_union_fp16": ("output", [2, 2, 3, 4, 4]),  # CLIP1 of 1..5 to [2, 4] in FLOAT16
    "dml_slice": ("output", [7, 9, 12, 14, 17, 19]),  # rows 1..3, columns 1 and 3 of 1..25 as 5x5
    "dml_split": ("Out3", [5, 6]),  # the third pair of 1..6
    "dml_join": ("Out", [1, 2, 3, 100, 115]),  # A's first 3 elements, then B's first 2
    "dml_gemm": ("output", [1 * 4 + 2, 1 * 5 + 2, 1 * 6 + 2, 2 * 4 + 2, 2 * 5 + 2, 2 * 6 + 2, 3 * 4 + 2, 3 * 5 + 2, 3 * 6 + 2]),  # {3,1} x {1,3} + 2
    "dml_gemm_graph": ("output", [32.0] * 1024),  # ones {32, 32} x ones {32, 32}, B OWNED_BY_DML: 32 ones summed
    "dml_cumulative_product": ("Out", [2, 2 * 4, 2 * 4 * 8, 2 * 4 * 8 * 3]),  # the running product of {2, 4, 8, 3} along Axis 3, INCREASING, inclusive
}


def _add_npy_expected() -> np.ndarray:
    """A read with NumPy's own .npy reader, B as raw FLOAT32 bytes: independent of dmlpy's readers."""
    return np.load(MODELS_DIR / "dml_element_wise_add_input.npy").astype(np.float32).ravel() + np.fromfile(MODELS_DIR / "dml_element_wise_add_input.dat", dtype=np.float32)


def test_example_models_with_kernels_are_the_convolutions_the_gemms_the_element_wise_the_data_movement_ones_reduce_and_cumulative_product() -> None:
    runnable = {p.stem for p in MODELS if _runnable(dx.read_model(p))}
    assert runnable == {"dml_convolution_2d", "dml_convolution_3d", "dml_element_wise_add_npy", *EXPECTED}


@pytest.mark.parametrize("stem", [*EXPECTED, "dml_element_wise_add_npy", "dml_convolution_2d", "dml_convolution_3d"])
def test_example_model_runs_to_the_values_worked_by_hand(backend: str, stem: str) -> None:
    result = dx.run_model(MODELS_DIR / f"{stem}.json", dmlpy.create_device(backend=backend))
    if stem in EXPECTED:
        name, values = EXPECTED[stem]
        # a resource holds whole DWORDs: five FLOAT16 values take 12 bytes, the sixth half is padding
        np.testing.assert_allclose(result.shown[name][: len(values)], values, rtol=1e-6, atol=1e-7)
    elif stem == "dml_element_wise_add_npy":
        np.testing.assert_allclose(result.shown["Out"], _add_npy_expected(), rtol=1e-6)
    else:  # the convolutions' values are checked against onnxruntime in test_dxdispatch.py; here both backends agree
        other = dx.run_model(MODELS_DIR / f"{stem}.json", dmlpy.create_device(backend="numpy"))
        np.testing.assert_allclose(result.shown["output"], other.shown["output"], rtol=1e-5)


@pytest.mark.parametrize("path", MODELS, ids=[p.stem for p in MODELS])
def test_example_model_descs_write_back_to_equal_descs(path: Path) -> None:
    for name, desc in dx.read_model(path).dispatchables.items():
        entry = json.loads(json.dumps(dx.operator_dispatchable(desc)))
        assert dx.desc_from_json(entry["type"], entry["desc"], name) == desc
        assert format_errors({"resources": {}, "dispatchables": {name: entry}, "commands": []}) == []


def _desc(stem: str, name: str) -> Any:
    return dx.read_model(MODELS_DIR / f"{stem}.json").dispatchables[name]


def test_scale_bias_is_read_from_its_scale_and_bias_object() -> None:
    assert _desc("dml_element_wise_identity", "identity").ScaleBias == DML_SCALE_BIAS(2.0, 10.0)


def test_an_absent_scale_bias_is_null() -> None:
    assert _desc("dml_element_wise_clip", "clip").ScaleBias is None


def test_float16_scalar_union_numbers_become_the_halfs_bits() -> None:
    desc = _desc("dml_scalar_union_fp16", "clip")
    assert (desc.MinMaxDataType, desc.Min, desc.Max) == (DT.FLOAT16, DML_SCALAR_UNION(UInt16=0x4000), DML_SCALAR_UNION(UInt16=0x4400))


def test_float32_scalar_union_is_read_by_its_value_data_type() -> None:
    desc = _desc("dml_fill_value_sequence", "fill_sequence")
    assert (desc.ValueStart, desc.ValueDelta) == (DML_SCALAR_UNION(Float32=3.2), DML_SCALAR_UNION(Float32=1.5))


def test_size_2d_is_read_from_width_and_height() -> None:
    desc = _desc("dml_upsample_2d", "upsample")
    assert (desc.ScaleSize, desc.InterpolationMode) == (DML_SIZE_2D(2, 2), DML_INTERPOLATION_MODE.LINEAR)


def test_tensor_arrays_are_read_element_by_element() -> None:
    join = _desc("dml_join", "join")
    assert (join.InputCount, [list(t.Desc.Sizes) for t in join.InputTensors]) == (3, [[3], [2], [5]])
    split = _desc("dml_split", "split")
    assert (split.OutputCount, [list(t.Desc.Sizes) for t in split.OutputTensors]) == (3, [[2], [2], [2]])


def test_operator_desc_arrays_are_read_as_fused_activations() -> None:
    desc = _desc("dml_rnn", "rnn")
    assert [(a.Type, a.Desc.Alpha, a.Desc.InputTensor) for a in desc.ActivationDescs] == [(OP.ACTIVATION_ELU, 0.5, None), (OP.ACTIVATION_ELU, 3.5, None)]
    assert desc.Direction == DML_RECURRENT_NETWORK_DIRECTION.BIDIRECTIONAL


def test_tensor_array_bind_point_takes_one_resource_per_tensor() -> None:
    model = dx.parse_json((MODELS_DIR / "dml_join.json").read_text(encoding="utf-8"))
    model["commands"][0]["bindings"]["InputTensors"] = model["commands"][0]["bindings"]["InputTensors"][:2]
    with pytest.raises(DxDispatchFormatError, match="takes 3 resources, got 2"):
        dx.read_model(model, base_dir=MODELS_DIR)


@pytest.mark.skipif(GXX is None, reason="g++ is not installed")
def test_every_example_models_descs_emit_cpp_that_compiles(tmp_path: Path) -> None:
    includes, checks = [], []
    for i, path in enumerate(MODELS):
        model = dx.read_model(path)
        (tmp_path / f"m{i}.h").write_text(cpp.emit_model(model, prefix=f"m{i}"), encoding="utf-8")
        includes.append(f'#include "m{i}.h"')
        for name, desc in model.dispatchables.items():
            checks.append(f"    failures += {cpp.identifier(f'm{i}_{name}')}()->Type != {operator_desc(desc).Type.value};")
    source = "\n".join([*includes, "int main() {", "    int failures = 0;", *checks, "    return failures;", "}", ""])
    (tmp_path / "all.cpp").write_text(source, encoding="utf-8")
    flags = ["-std=c++17", "-Wall", "-Wextra", "-Werror", "-DDMLPY_TYPES_ONLY", f"-I{dmlpy.get_include()}", "-DDML_TARGET_VERSION_USE_LATEST"]
    assert GXX is not None
    done = subprocess.run([GXX, *flags, "all.cpp", "-o", "all"], capture_output=True, text=True, cwd=tmp_path, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert subprocess.run([str(tmp_path / "all")], check=False).returncode == 0


# ---------------------------------------------------------------------------------------
# Round trips through write_model and read_model, one desc per field kind


def _t(data_type: DT, *sizes: int) -> Any:
    return buffer_tensor(data_type, list(sizes))


ROUND_TRIPS = {
    Kind.TENSOR_ARRAY: dmlpy.DML_JOIN_OPERATOR_DESC(InputCount=2, InputTensors=[_t(DT.FLOAT32, 2), _t(DT.FLOAT32, 3)], OutputTensor=_t(DT.FLOAT32, 5), Axis=0),
    Kind.OPERATOR_ARRAY: dmlpy.DML_RNN_OPERATOR_DESC(
        InputTensor=_t(DT.FLOAT32, 1, 1, 8, 4), WeightTensor=_t(DT.FLOAT32, 1, 1, 5, 4), RecurrenceTensor=_t(DT.FLOAT32, 1, 1, 5, 5),
        OutputSingleTensor=_t(DT.FLOAT32, 1, 1, 8, 5), ActivationDescCount=1,
        ActivationDescs=[DML_OPERATOR_DESC(OP.ACTIVATION_SCALED_TANH, dmlpy.DML_ACTIVATION_SCALED_TANH_OPERATOR_DESC(None, None, 0.5, 2.0))],
        Direction=DML_RECURRENT_NETWORK_DIRECTION.FORWARD,
    ),
    Kind.STRUCT: dmlpy.DML_UPSAMPLE_2D_OPERATOR_DESC(_t(DT.FLOAT32, 1, 1, 2, 2), _t(DT.FLOAT32, 1, 1, 6, 4), DML_SIZE_2D(2, 3), DML_INTERPOLATION_MODE.NEAREST_NEIGHBOR),
    Kind.STRUCT_POINTER: dmlpy.DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC(_t(DT.FLOAT32, 4), _t(DT.FLOAT32, 4), DML_SCALE_BIAS(-0.25, float("inf"))),
    Kind.SCALAR_UNION: dmlpy.DML_FILL_VALUE_SEQUENCE_OPERATOR_DESC(_t(DT.FLOAT16, 4), DT.FLOAT16, DML_SCALAR_UNION(UInt16=0x3C00), DML_SCALAR_UNION(UInt16=0xB800)),
    Kind.INT: dmlpy.DML_DIAGONAL_MATRIX1_OPERATOR_DESC(None, _t(DT.INT32, 3, 3), DT.INT32, DML_SCALAR_UNION(Int32=-7), -1, 2),
    Kind.INT_ARRAY: dmlpy.DML_SLICE1_OPERATOR_DESC(_t(DT.FLOAT32, 1, 1, 4, 4), _t(DT.FLOAT32, 1, 1, 2, 2), 4, [0, 0, 3, 0], [1, 1, 2, 2], [1, 1, -2, 2]),
    Kind.FLOAT_ARRAY: dmlpy.DML_RESAMPLE_OPERATOR_DESC(_t(DT.FLOAT32, 1, 1, 2, 2), _t(DT.FLOAT32, 1, 1, 5, 3), DML_INTERPOLATION_MODE.LINEAR, 4, [1.0, 1.0, 2.5, 1.5]),
    Kind.OPERATOR: dmlpy.DML_CONVOLUTION_OPERATOR_DESC(
        _t(DT.FLOAT32, 1, 1, 3, 3), _t(DT.FLOAT32, 1, 1, 2, 2), None, _t(DT.FLOAT32, 1, 1, 2, 2), Mode=dmlpy.DML_CONVOLUTION_MODE.CROSS_CORRELATION,
        Direction=dmlpy.DML_CONVOLUTION_DIRECTION.FORWARD, DimensionCount=2, Strides=[1, 1], Dilations=[1, 1], StartPadding=[0, 0], EndPadding=[0, 0],
        OutputPadding=[0, 0], GroupCount=1, FusedActivation=DML_OPERATOR_DESC(OP.ACTIVATION_LEAKY_RELU, dmlpy.DML_ACTIVATION_LEAKY_RELU_OPERATOR_DESC(None, None, 0.1)),
    ),
}
ROUND_TRIPS[Kind.DESC_POINTER] = ROUND_TRIPS[Kind.STRUCT]  # every tensor is a DML_TENSOR_DESC pointing at its buffer desc


def _kinds_in_registry() -> set[Kind]:
    return {kind_of(f) for spec in REGISTRY.values() for f in dataclasses.fields(spec.desc_class)}


def test_round_trip_cases_cover_every_field_kind_an_operator_desc_has() -> None:
    simple = {Kind.TENSOR, Kind.UINT, Kind.UINT64, Kind.UINT_ARRAY, Kind.BOOL, Kind.FLOAT, Kind.ENUM, Kind.FLAGS, Kind.DIMENSION_COUNT}
    found = {kind_of(f) for d in ROUND_TRIPS.values() for f in dataclasses.fields(d) if getattr(d, f.name) is not None}
    assert _kinds_in_registry() - simple - found == set()


@pytest.mark.parametrize("kind", list(ROUND_TRIPS), ids=[k.name for k in ROUND_TRIPS])
def test_write_model_then_read_model_gives_an_equal_desc(kind: Kind, tmp_path: Path) -> None:
    desc = ROUND_TRIPS[kind]
    model = {"resources": {}, "dispatchables": {"op": dx.operator_dispatchable(desc)}, "commands": []}
    path = dx.write_model(model, tmp_path / "model.json")
    assert format_errors(json.loads(path.read_text(encoding="utf-8"))) == []
    assert dx.read_model(path).dispatchables["op"] == normalized(desc, "desc")


def test_float16_scalar_is_written_as_the_number_dxdispatch_reads() -> None:
    entry = dx.operator_dispatchable(ROUND_TRIPS[Kind.SCALAR_UNION])
    assert (entry["desc"]["ValueStart"], entry["desc"]["ValueDelta"]) == (1.0, -0.5)


def test_float16_nan_scalar_keeps_its_bits_through_the_uint16_member() -> None:
    desc = dmlpy.DML_FILL_VALUE_CONSTANT_OPERATOR_DESC(_t(DT.FLOAT16, 2), DT.FLOAT16, DML_SCALAR_UNION(UInt16=0x7E01))
    entry = json.loads(json.dumps(dx.operator_dispatchable(desc)))
    assert entry["desc"]["Value"] == {"UInt16": 0x7E01}
    assert dx.desc_from_json(entry["type"], entry["desc"], "op").Value == DML_SCALAR_UNION(UInt16=0x7E01)


@pytest.mark.parametrize(
    ("data_type", "value", "member", "expected"),
    [
        pytest.param("INT8", -128, "Int8", -128, id="an INT8 scalar takes the lowest int8"),
        pytest.param("UINT64", 2**64 - 1, "UInt64", 2**64 - 1, id="a UINT64 scalar takes 2^64-1"),
        pytest.param("FLOAT64", 0.1, "Float64", 0.1, id="a FLOAT64 scalar keeps the double"),
        pytest.param("FLOAT16", {"UInt16": 0x3555}, "UInt16", 0x3555, id="a FLOAT16 scalar as an object gives the bits"),
        pytest.param("INT32", {"Int32": -5}, "Int32", -5, id="an INT32 scalar as an object names its member"),
    ],
)
def test_scalar_union_is_read_through_the_member_its_data_type_selects(data_type: str, value: Any, member: str, expected: Any) -> None:
    desc = dx.desc_from_json("FILL_VALUE_CONSTANT", {"OutputTensor": {"DataType": data_type, "Sizes": [1]}, "ValueDataType": data_type, "Value": value}, "op")
    assert desc.Value == DML_SCALAR_UNION(**{member: expected})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param({"Value": 128}, "expected an integer in", id="an INT8 scalar beyond int8 is refused"),
        pytest.param({"Value": 1.5}, "expected an integer in", id="a fraction for an integer scalar is refused"),
        pytest.param({"Value": {"Int32": 1}}, "not a field of a INT8 DML_SCALAR_UNION", id="an object naming another member is refused"),
        pytest.param({"ValueDataType": "UNKNOWN"}, "DxDispatch reads", id="a scalar whose data type DxDispatch cannot read is refused"),
        pytest.param({"Value": None}, "expected an integer in", id="a null scalar is refused"),
    ],
)
def test_scalar_union_dxdispatch_would_refuse_is_a_format_error(change: dict[str, Any], message: str) -> None:
    obj = {"OutputTensor": {"DataType": "INT8", "Sizes": [1]}, "ValueDataType": "INT8", "Value": 1, **change}
    with pytest.raises(DxDispatchFormatError, match=message):
        dx.desc_from_json("FILL_VALUE_CONSTANT", obj, "op")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        pytest.param("ScaleBias", {"Scale": 1.0}, "field 'Bias' is required", id="a scale-bias without Bias is refused"),
        pytest.param("ScaleBias", {"Scale": 1.0, "Bias": 0.0, "bias": 1}, "did you mean Bias", id="a misspelled scale-bias member is refused"),
        pytest.param("ScaleBias", [1.0, 0.0], "expected a JSON object", id="a scale-bias as an array is refused"),
    ],
)
def test_helper_struct_dxdispatch_would_refuse_is_a_format_error(field: str, value: Any, message: str) -> None:
    obj = {"InputTensor": {"DataType": "FLOAT32", "Sizes": [1]}, "OutputTensor": {"DataType": "FLOAT32", "Sizes": [1]}, field: value}
    with pytest.raises(DxDispatchFormatError, match=message):
        dx.desc_from_json("ELEMENT_WISE_IDENTITY", obj, "op")


def test_int_array_takes_negative_integers_and_refuses_fractions() -> None:
    entry = json.loads(json.dumps(dx.operator_dispatchable(ROUND_TRIPS[Kind.INT_ARRAY])))
    assert entry["desc"]["InputWindowStrides"] == [1, 1, -2, 2]
    entry["desc"]["InputWindowStrides"][2] = -2.5
    with pytest.raises(DxDispatchFormatError, match=r"InputWindowStrides\[2\]: expected an integer"):
        dx.desc_from_json(entry["type"], entry["desc"], "op")


def test_a_tensor_array_element_that_is_not_an_object_is_refused() -> None:
    entry = json.loads(json.dumps(dx.operator_dispatchable(ROUND_TRIPS[Kind.TENSOR_ARRAY])))
    entry["desc"]["InputTensors"][1] = [3]
    with pytest.raises(DxDispatchFormatError, match=r"InputTensors\[1\]: expected a JSON object"):
        dx.desc_from_json(entry["type"], entry["desc"], "op")


# --- ONNX dispatchables ("type": "onnx"), run through dmlpy's ONNX importer ---------------------------

ONNX_MODELS = sorted(MODELS_DIR.glob("onnx_*.json"))


def test_both_onnx_example_models_are_here() -> None:
    assert [p.stem for p in ONNX_MODELS] == ["onnx_dynamic_shapes", "onnx_gemm"]


@pytest.mark.parametrize("path", ONNX_MODELS, ids=[p.stem for p in ONNX_MODELS])
def test_onnx_example_model_follows_dxdispatchs_format_and_validates_clean(path: Path) -> None:
    pytest.importorskip("onnx")
    assert format_errors(dx.parse_json(path.read_text(encoding="utf-8"))) == []
    assert dx.check_model(path) == []  # the dynamic model validates at each dispatch's bound shapes


def test_onnx_gemm_dispatch_writes_a0_b0_plus_a1_b1(device: dmlpy.Device) -> None:
    """Gemm(A0, B0) + Gemm(A1, B1) with A = 1..6 as 3x2 and B = 1..8 as 2x4: row i of A @ B is
    (2i+1) * [1, 2, 3, 4] + (2i+2) * [5, 6, 7, 8], hand-computed; both products are equal, so doubled."""
    pytest.importorskip("onnx")
    result = dx.run_model(MODELS_DIR / "onnx_gemm.json", device)
    rows = [[(2 * i + 1) * b0 + (2 * i + 2) * b1 for b0, b1 in zip([1, 2, 3, 4], [5, 6, 7, 8], strict=True)] for i in range(3)]
    assert result.array("Out").tolist() == [[2 * v for v in row] for row in rows]


def test_onnx_dynamic_shapes_dispatches_at_each_bound_shape_and_fills_the_deferred_resource(device: dmlpy.Device) -> None:
    """Concat along axis 0 of x0 and x1 bound as [1,2] then [3,2] (the model's N is symbolic): c takes
    [a0 a1; b0 b1] then all of a over all of b; deferredY is created the size of the [6,2] output."""
    pytest.importorskip("onnx")
    seen: list[list[float]] = []
    model = dx.read_model(MODELS_DIR / "onnx_dynamic_shapes.json")
    assert model.deferred == {"deferredY"} and "deferredY" not in model.resources
    first = dx.run_model(dataclasses.replace(model, commands=model.commands[:2]), device)
    seen.append(first.array("c").tolist())
    result = dx.run_model(model, device, keep_resources=True)
    assert seen == [[[1.0, 2.0], [7.0, 8.0]]]
    assert result.array("c").tolist() == [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0], [9.0, 10.0], [11.0, 12.0]]
    assert result.array("deferredY").tolist() == result.array("c").tolist() and result.resources["deferredY"].size == 12 * 4


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param(lambda m: m["commands"][0]["bindings"].pop("x1"), "input 'x1' is not bound", id="an unbound ONNX input"),
        pytest.param(lambda m: m["commands"][0]["bindings"]["x0"].pop("shape"), "needs a 'shape'", id="a symbolic input bound without a shape"),
        pytest.param(lambda m: m["commands"][0]["bindings"]["x0"].update(shape=[4, 2]), "holds 24", id="a shape larger than its resource"),
        pytest.param(lambda m: m["commands"][0]["bindings"]["y"].update(shape=[3, 2]), r"output is \[2, 2\]", id="an output shape the model does not give"),
        pytest.param(lambda m: m["commands"].insert(0, {"type": "print", "resource": "deferredY"}), "printed before a dispatch wrote it", id="a deferred resource printed before it exists"),
    ],
)
def test_onnx_dispatch_binding_mistakes_are_format_errors_that_say_what(change: Any, message: str, tmp_path: Path) -> None:
    pytest.importorskip("onnx")
    model = json.loads((MODELS_DIR / "onnx_dynamic_shapes.json").read_text(encoding="utf-8"))
    change(model)
    shutil.copy(MODELS_DIR / "onnx_dynamic_shapes.onnx", tmp_path)
    (tmp_path / "m.json").write_text(json.dumps(model), encoding="utf-8")
    with pytest.raises(DxDispatchFormatError, match=message):
        dx.run_model(tmp_path / "m.json")


def test_emitting_cpp_for_an_onnx_dispatchable_points_to_the_importer() -> None:
    with pytest.raises(ValueError, match="ONNX model"):
        cpp.model_steps(dx.read_model(MODELS_DIR / "onnx_gemm.json"))


def test_cli_runs_an_onnx_dispatchable_model_and_refuses_its_cpp_with_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("onnx")
    assert cli.main(["run", str(MODELS_DIR / "onnx_gemm.json")]) == cli.EXIT_OK
    assert "Out: float32[3, 4] min 22 max 136" in capsys.readouterr().out
    assert cli.main(["emit-cpp", str(MODELS_DIR / "onnx_gemm.json")]) == cli.EXIT_USAGE
    assert "is an ONNX model" in capsys.readouterr().err
