"""Every DirectML operator is described and validated; the ones without a kernel give three distinct answers.

* DirectML would reject the desc: E_INVALIDARG, exit code 1.
* The desc is valid but dmlpy has no kernel: validate() and CreateOperator warn
  OPERATOR.NOT_EMULATED, CreateOperator succeeds, CompileOperator and CompileGraph answer
  E_NOTIMPL, ``dmlpy validate`` exits 3.
* The desc is valid and a kernel runs it: no NOT_EMULATED finding anywhere.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_rule, rule_ids

import dmlpy
from dmlpy import DML_FEATURE_LEVEL as FL
from dmlpy import DML_OPERATOR_TYPE as OP
from dmlpy import HRESULT, DmlError, buffer_tensor
from dmlpy.cli import EXIT_INVALID, EXIT_NOT_EMULATED, EXIT_OK, main
from dmlpy.errors import DmlWarning
from dmlpy.graph import graph_desc, input_edge, intermediate_edge, operator_node, output_edge
from dmlpy.interop import dxdispatch as dx
from dmlpy.operators import REGISTRY, emulated_operators
from dmlpy.operators.activation import DESC_CLASSES, FUSABLE_IN_DIRECTML, HOST_FUSABLE, NATIVE_KERNELS, FusedActivation
from dmlpy.operators.data_movement import KERNELS as DATA_MOVEMENT_KERNELS
from dmlpy.operators.element_wise import NATIVE as NATIVE_ELEMENT_WISE
from dmlpy.operators.descs import (
    DML_ACTIVATION_RELU_GRAD_OPERATOR_DESC,
    DML_ACTIVATION_RELU_OPERATOR_DESC,
    DML_CONVOLUTION_OPERATOR_DESC,
    DML_ELEMENT_WISE_ADD1_OPERATOR_DESC,
    DML_ELEMENT_WISE_ADD_OPERATOR_DESC,
    DML_GEMM_OPERATOR_DESC,
    DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC,
    DML_JOIN_OPERATOR_DESC,
    DML_SCALE_BIAS,
)

F32 = np.float32


def relu_grad(shape: tuple[int, ...] = (1, 1, 2, 2), **overrides: object) -> DML_ACTIVATION_RELU_GRAD_OPERATOR_DESC:
    """A two-input operator dmlpy validates but has no kernel for."""
    fields = {"InputTensor": buffer_tensor(F32, shape), "InputGradientTensor": buffer_tensor(F32, shape), "OutputGradientTensor": buffer_tensor(F32, shape)}
    fields.update(overrides)
    return DML_ACTIVATION_RELU_GRAD_OPERATOR_DESC(**fields)  # type: ignore[arg-type]


def conv_with(fused: object) -> DML_CONVOLUTION_OPERATOR_DESC:
    return DML_CONVOLUTION_OPERATOR_DESC(
        buffer_tensor(F32, (1, 1, 3, 3)), buffer_tensor(F32, (1, 1, 1, 1)), None, buffer_tensor(F32, (1, 1, 3, 3)),
        Strides=[1, 1], Dilations=[1, 1], StartPadding=[0, 0], EndPadding=[0, 0], OutputPadding=[0, 0], GroupCount=1, FusedActivation=fused,
    )  # fmt: skip


def test_the_registry_holds_every_operator_type_and_132_kernels() -> None:
    assert set(REGISTRY) == {t for t in OP if t != OP.INVALID}
    emulated = emulated_operators()
    element_wise = {t for t in emulated if t.name.startswith("ELEMENT_WISE_") or t == OP.VALUE_SCALE_2D}
    data_movement = set(DATA_MOVEMENT_KERNELS)
    normalization = {OP.BATCH_NORMALIZATION, OP.MEAN_VARIANCE_NORMALIZATION, OP.MEAN_VARIANCE_NORMALIZATION1}  # C kernel: normalization.c
    resampling = {OP.RESAMPLE, OP.RESAMPLE1, OP.RESAMPLE2, OP.RESAMPLE3}  # C kernel: dmlpy/native/resampling.c
    max_pooling = {OP.MAX_POOLING, OP.MAX_POOLING1, OP.MAX_POOLING2}  # a C kernel for FLOAT32 and FLOAT16
    reductions = {OP.REDUCE, OP.ARGMIN, OP.ARGMAX}  # C kernel: reduction.c (with HARDMAX and HARDMAX1, in NATIVE_KERNELS)
    lrn_lp = {OP.LOCAL_RESPONSE_NORMALIZATION, OP.LP_NORMALIZATION, OP.LP_POOLING, OP.LP_POOLING1}  # NumPy kernels only
    top_k_cumulative_scatter = {OP.TOP_K, OP.TOP_K1, OP.CUMULATIVE_SUMMATION, OP.CUMULATIVE_PRODUCT, OP.ONE_HOT, OP.SCATTER_ELEMENTS, OP.SCATTER_ND}  # NumPy kernels
    numpy_only = (element_wise - NATIVE_ELEMENT_WISE) | (set(DESC_CLASSES) - NATIVE_KERNELS) | lrn_lp | top_k_cumulative_scatter
    assert len(emulated) == 132 and len(element_wise) == 63 and len(data_movement) == 11
    assert normalization | resampling | max_pooling | reductions <= set(emulated)
    assert all(REGISTRY[t].native and REGISTRY[t].native_covers is not None for t in resampling | max_pooling)
    assert all(REGISTRY[t].native and REGISTRY[t].native_covers is None for t in data_movement | reductions)  # C takes every valid desc
    assert {OP.ACTIVATION_HARDMAX, OP.ACTIVATION_HARDMAX1} <= NATIVE_KERNELS
    assert all(REGISTRY[t].native for t in set(emulated) - numpy_only)
    assert not any(REGISTRY[t].native for t in numpy_only)  # the native backend runs their NumPy kernel
    # 19 element-wise operators have a C kernel (on FLOAT32 / FLOAT16: native_covers); the rest run their NumPy kernel
    assert {t for t in element_wise if REGISTRY[t].native} == NATIVE_ELEMENT_WISE and len(NATIVE_ELEMENT_WISE) == 20


def test_a_valid_desc_without_a_kernel_is_valid_with_a_not_emulated_warning() -> None:
    report = dmlpy.validate(relu_grad())
    assert rule_ids(report) == ["OPERATOR.NOT_EMULATED"] and report.ok
    assert_rule(report, "OPERATOR.NOT_EMULATED", path="DML_ACTIVATION_RELU_GRAD_OPERATOR_DESC")


def test_create_operator_succeeds_and_compile_operator_answers_e_notimpl() -> None:
    device = dmlpy.create_device(backend="numpy")
    with pytest.warns(DmlWarning):
        operator = device.create_operator(relu_grad())
    with pytest.raises(DmlError) as raised:
        device.compile_operator(operator)
    assert raised.value.hresult == HRESULT.E_NOTIMPL
    assert_rule(raised.value, "OPERATOR.NOT_EMULATED")


def test_a_strict_device_still_creates_a_valid_operator_without_a_kernel() -> None:
    device = dmlpy.create_device(backend="numpy", strict=True)
    with pytest.warns(DmlWarning):
        device.create_operator(relu_grad())


def test_an_invalid_desc_without_a_kernel_is_e_invalidarg_and_never_not_emulated() -> None:
    device = dmlpy.create_device(backend="numpy")
    with pytest.raises(DmlError) as raised:
        device.create_operator(relu_grad(InputGradientTensor=None))
    assert raised.value.hresult == HRESULT.E_INVALIDARG
    assert_rule(raised.value, "TENSOR.REQUIRED", path="DML_ACTIVATION_RELU_GRAD_OPERATOR_DESC.InputGradientTensor")
    assert "OPERATOR.NOT_EMULATED" not in rule_ids(raised.value)


def test_an_operator_newer_than_the_device_is_invalid_not_merely_not_emulated() -> None:
    shape = (1, 1, 2, 2)
    mvn2 = REGISTRY[OP.MEAN_VARIANCE_NORMALIZATION2].desc_class(buffer_tensor(F32, shape), None, None, buffer_tensor(F32, shape), 2, [2, 3], True, True, 1e-5, None)
    assert rule_ids(dmlpy.validate(mvn2, feature_level=FL.LEVEL_6_4)) == ["OPERATOR.NOT_EMULATED"]
    assert rule_ids(dmlpy.validate(mvn2, feature_level=FL.LEVEL_6_2)) == ["OPERATOR.FEATURE_LEVEL"]


# One of each type a convolution can fuse, built as DirectMLX builds them (parameters where the defaults need some)
EVERY_CONVOLUTION_FUSION = [
    FusedActivation.identity(), FusedActivation.linear(2.0, 1.0), FusedActivation.relu(), FusedActivation.leaky_relu(), FusedActivation.sigmoid(),
    FusedActivation.tanh(), FusedActivation.elu(), FusedActivation.hard_sigmoid(), FusedActivation.softplus(), FusedActivation.gelu(),
    FusedActivation.celu(), FusedActivation.parametric_softplus(1.0, 1.0), FusedActivation.scaled_elu(), FusedActivation.scaled_tanh(),
    FusedActivation.softsign(), FusedActivation.thresholded_relu(), FusedActivation.shrink(), FusedActivation.clip(0.0, 6.0),
]  # fmt: skip


def test_every_activation_a_convolution_can_fuse_is_valid_and_runs() -> None:
    assert {f.Type for f in EVERY_CONVOLUTION_FUSION} == FUSABLE_IN_DIRECTML | set(HOST_FUSABLE[OP.CONVOLUTION])
    x = np.arange(-4.0, 5.0, dtype=F32).reshape(1, 1, 3, 3)
    for fused in EVERY_CONVOLUTION_FUSION:
        assert rule_ids(dmlpy.validate(conv_with(fused))) == [], fused.Type
        y = dmlpy.run(conv_with(fused), backend="numpy", InputTensor=x, FilterTensor=np.ones((1, 1, 1, 1), F32))
        assert y.shape == x.shape


def test_a_fused_clip_needs_feature_level_6_0() -> None:
    report = dmlpy.validate(conv_with(FusedActivation.clip(0.0, 6.0)), feature_level=FL.LEVEL_5_1)
    assert_rule(report, "OPERATOR.FEATURE_LEVEL", path="DML_CONVOLUTION_OPERATOR_DESC.FusedActivation.Type")
    assert rule_ids(dmlpy.validate(conv_with(FusedActivation.clip(0.0, 6.0)), feature_level=FL.LEVEL_6_0)) == []


def _gemm_with(fused: object, shape: tuple[int, ...] = (1, 1, 2, 2)) -> DML_GEMM_OPERATOR_DESC:
    return DML_GEMM_OPERATOR_DESC(buffer_tensor(F32, shape), buffer_tensor(F32, shape), None, buffer_tensor(F32, shape), FusedActivation=fused)  # type: ignore[arg-type]


def test_gemm_fuses_softmax_and_softmax1_from_feature_level_6_1_and_a_convolution_does_not() -> None:
    softmax = dmlpy.DML_OPERATOR_DESC(OP.ACTIVATION_SOFTMAX, REGISTRY[OP.ACTIVATION_SOFTMAX].desc_class())
    softmax1 = dmlpy.DML_OPERATOR_DESC(OP.ACTIVATION_SOFTMAX1, REGISTRY[OP.ACTIVATION_SOFTMAX1].desc_class(None, None, 2, [2, 3]))
    for fused in (softmax, softmax1):
        assert rule_ids(dmlpy.validate(_gemm_with(fused), feature_level=FL.LEVEL_6_1)) == []
        assert_rule(dmlpy.validate(_gemm_with(fused), feature_level=FL.LEVEL_6_0), "OPERATOR.FEATURE_LEVEL", path="DML_GEMM_OPERATOR_DESC.FusedActivation.Type")
    assert_rule(dmlpy.validate(conv_with(softmax)), "ACTIVATION.NOT_FUSABLE", path="DML_CONVOLUTION_OPERATOR_DESC.FusedActivation.Type")


def test_a_fused_softmax1_axis_beyond_the_gemm_output_s_rank_is_named() -> None:
    softmax1 = dmlpy.DML_OPERATOR_DESC(OP.ACTIVATION_SOFTMAX1, REGISTRY[OP.ACTIVATION_SOFTMAX1].desc_class(None, None, 2, [3, 4]))
    report = dmlpy.validate(_gemm_with(softmax1))
    assert rule_ids(report) == ["ACTIVATION.AXIS_RANGE"]
    assert_rule(report, "ACTIVATION.AXIS_RANGE", path="DML_GEMM_OPERATOR_DESC.FusedActivation.Axes[1]")


def test_a_fused_clip_is_not_fusable_into_an_operator_other_than_convolution_and_gemm() -> None:
    shape = (1, 1, 2, 2)
    add1 = DML_ELEMENT_WISE_ADD1_OPERATOR_DESC(buffer_tensor(F32, shape), buffer_tensor(F32, shape), buffer_tensor(F32, shape), FusedActivation.clip(0.0, 6.0))
    assert_rule(dmlpy.validate(add1), "ACTIVATION.NOT_FUSABLE", path="DML_ELEMENT_WISE_ADD1_OPERATOR_DESC.FusedActivation.Type")
    gemm = DML_GEMM_OPERATOR_DESC(buffer_tensor(F32, shape), buffer_tensor(F32, shape), None, buffer_tensor(F32, shape), FusedActivation=FusedActivation.clip(0.0, 6.0))
    assert rule_ids(dmlpy.validate(gemm)) == []


def test_a_fused_activation_with_a_kernel_has_no_not_emulated_finding() -> None:
    assert rule_ids(dmlpy.validate(conv_with(FusedActivation.relu()))) == []


def test_a_tensor_array_takes_one_binding_slot_per_element() -> None:
    join = DML_JOIN_OPERATOR_DESC(None, [buffer_tensor(F32, (1, 1, 2, 2)), buffer_tensor(F32, (1, 1, 3, 2))], buffer_tensor(F32, (1, 1, 5, 2)), Axis=2)
    device = dmlpy.create_device(backend="numpy")
    operator = device.create_operator(join)
    assert operator.desc.InputCount == 2
    assert [s.name for s in operator.slots("input")] == ["InputTensors[0]", "InputTensors[1]"]
    assert [s.tensor.Sizes for s in operator.slots("input")] == [(1, 1, 2, 2), (1, 1, 3, 2)]  # type: ignore[union-attr]


def _graph(device: dmlpy.Device, *, bad_edge: bool = False) -> object:
    shape = (1, 1, 2, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DmlWarning)
        relu = device.create_operator(DML_ACTIVATION_RELU_OPERATOR_DESC(buffer_tensor(F32, shape), buffer_tensor(F32, shape)))
        summed = device.create_operator(relu_grad(shape))
    edges = [intermediate_edge(0, 0, 1, 0), intermediate_edge(0, 0, 1, 5 if bad_edge else 1)]
    return graph_desc(1, 1, [operator_node(relu), operator_node(summed)], [input_edge(0, 0, 0)], [output_edge(1, 0, 0)], edges)


def test_compile_graph_answers_e_notimpl_for_a_valid_graph_with_a_node_without_a_kernel() -> None:
    device = dmlpy.create_device(backend="numpy")
    with pytest.raises(DmlError) as raised:
        device.compile_graph(_graph(device))
    assert raised.value.hresult == HRESULT.E_NOTIMPL
    assert_rule(raised.value, "OPERATOR.NOT_EMULATED", path="DML_GRAPH_DESC.Nodes[1] DML_OPERATOR_ACTIVATION_RELU_GRAD")


def test_compile_graph_answers_e_invalidarg_for_an_invalid_graph_even_with_a_node_without_a_kernel() -> None:
    device = dmlpy.create_device(backend="numpy")
    with pytest.raises(DmlError) as raised:
        device.compile_graph(_graph(device, bad_edge=True))
    assert raised.value.hresult == HRESULT.E_INVALIDARG


def _write_model(tmp_path: Path, desc: object, inputs: dict[str, np.ndarray]) -> Path:
    path = tmp_path / "model.json"
    path.write_text(json.dumps(dx.operator_model(desc, inputs)), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("overrides", "code"),
    [
        pytest.param({}, EXIT_NOT_EMULATED, id="a valid model with an operator without a kernel exits 3"),
        pytest.param({"OutputGradientTensor": buffer_tensor(F32, (1,) * 9)}, EXIT_INVALID, id="an invalid model exits 1"),
    ],
)
def test_cli_validate_exit_code_tells_invalid_from_not_emulated(tmp_path: Path, capsys: pytest.CaptureFixture[str], overrides: dict, code: int) -> None:
    x = np.ones((1, 1, 2, 2), F32)
    path = _write_model(tmp_path, relu_grad(**overrides), {"InputTensor": x, "InputGradientTensor": x})
    assert main(["validate", str(path)]) == code
    assert main(["validate", "--strict", str(path)]) == code
    capsys.readouterr()


def test_cli_run_of_an_operator_without_a_kernel_exits_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    x = np.ones((1, 1, 2, 2), F32)
    assert main(["run", str(_write_model(tmp_path, relu_grad(), {"InputTensor": x, "InputGradientTensor": x}))]) == EXIT_NOT_EMULATED
    err = capsys.readouterr().err
    assert "E_NOTIMPL" in err and "OPERATOR.NOT_EMULATED" in err


def test_cli_info_lists_every_operator_by_family_with_what_runs_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info"]) == EXIT_OK
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith("  DML_OPERATOR_")}
    assert len(rows) == len(REGISTRY)
    assert rows["DML_OPERATOR_CONVOLUTION"] == ["1.0", "yes", "family", "yes", "yes"]
    assert rows["DML_OPERATOR_ELEMENT_WISE_ADD"] == ["1.0", "yes", "generic", "yes", "yes"]
    assert rows["DML_OPERATOR_ELEMENT_WISE_ROUND"] == ["2.1", "yes", "generic", "yes", "-"]
    assert rows["DML_OPERATOR_ELEMENT_WISE_CLIP1"] == ["5.0", "yes", "family", "yes", "yes"]
    assert rows["DML_OPERATOR_ELEMENT_WISE_SIN"] == ["1.0", "yes", "generic", "yes", "-"]
    assert rows["DML_OPERATOR_ACTIVATION_RELU_GRAD"] == ["3.0", "yes", "generic", "-", "-"]
    assert rows["DML_OPERATOR_ACTIVATION_GELU"][0] == "5.1"
    assert "element_wise (63):" in out and "pooling (11):" in out


def test_str_of_a_desc_c_cannot_hold_names_the_field_instead_of_crashing() -> None:
    text = str(DML_ELEMENT_WISE_ADD_OPERATOR_DESC(buffer_tensor(F32, (2, 2)), "B", None))
    assert text.startswith("// DML_ELEMENT_WISE_ADD_OPERATOR_DESC has no C++ form: [FIELD.TYPE] DML_ELEMENT_WISE_ADD_OPERATOR_DESC.BTensor")


def test_a_graph_binds_each_element_of_a_tensor_array_as_its_own_input() -> None:
    device = dmlpy.create_device(backend="numpy")
    joined = device.create_operator(DML_JOIN_OPERATOR_DESC(None, [buffer_tensor(F32, (1, 1, 2, 2)), buffer_tensor(F32, (1, 1, 3, 2))], buffer_tensor(F32, (1, 1, 5, 2)), Axis=2))
    graph = graph_desc(2, 1, [operator_node(joined)], [input_edge(0, 0, 0), input_edge(1, 0, 1)], [output_edge(0, 0, 0)])
    assert dmlpy.validate(graph).ok
    assert len(device.compile_graph(graph).input_slots()) == 2  # JOIN has a kernel: the graph compiles, one slot per graph input
    too_far = graph_desc(2, 1, [operator_node(joined)], [input_edge(0, 0, 0), input_edge(1, 0, 2)], [output_edge(0, 0, 0)])
    assert not dmlpy.validate(too_far).ok  # JOIN of two tensors has binding inputs 0 and 1 only


def test_an_operator_model_of_a_desc_with_a_scale_bias_reads_back_with_it() -> None:
    identity = DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC(buffer_tensor(F32, (1, 1, 2, 2)), buffer_tensor(F32, (1, 1, 2, 2)), DML_SCALE_BIAS(3.0, -1.0))
    model = dx.operator_model(identity, {"InputTensor": np.ones((1, 1, 2, 2), F32)})
    assert model["dispatchables"]["op"]["desc"]["ScaleBias"] == {"Scale": 3.0, "Bias": -1.0}
    assert dx.read_model(model).dispatchables["op"].ScaleBias == DML_SCALE_BIAS(3.0, -1.0)
