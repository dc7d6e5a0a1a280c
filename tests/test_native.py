"""The native library: loaded when required, stamped with this version, and honest about why not."""

import os
import platform
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from conftest import _skip_native_unless_required

import dmlpy
from dmlpy import (
    DML_ACTIVATION_ELU_OPERATOR_DESC,
    DML_ACTIVATION_GELU_OPERATOR_DESC,
    DML_ACTIVATION_LINEAR_OPERATOR_DESC,
    DML_ACTIVATION_SIGMOID_OPERATOR_DESC,
    DML_AVERAGE_POOLING_OPERATOR_DESC,
    DML_AXIS_DIRECTION,
    DML_CONVOLUTION_DIRECTION,
    DML_CONVOLUTION_MODE,
    DML_CONVOLUTION_OPERATOR_DESC,
    DML_DEPTH_SPACE_ORDER,
    DML_DEPTH_TO_SPACE1_OPERATOR_DESC,
    DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC,
    DML_GEMM_OPERATOR_DESC,
    DML_INTERPOLATION_MODE,
    DML_REDUCE_FUNCTION,
    DML_REDUCE_OPERATOR_DESC,
    DML_RESAMPLE3_OPERATOR_DESC,
    DML_SPACE_TO_DEPTH1_OPERATOR_DESC,
    FusedActivation,
    buffer_tensor,
)
from dmlpy.backends import BoundTensor, native
from dmlpy.operators import spec_for_desc


def test_native_backend_loaded_when_required() -> None:
    if os.environ.get("DMLPY_REQUIRE_NATIVE") != "1":
        pytest.skip("DMLPY_REQUIRE_NATIVE is not set")
    assert dmlpy.native_available(), dmlpy.native_status()
    assert dmlpy.create_device().backend_name == "native"


def test_native_status_names_the_loaded_version_or_the_reason() -> None:
    status = dmlpy.native_status()
    if dmlpy.native_available():
        assert dmlpy.__version__ in status
    else:
        assert "dmlpy._native" in status or "stale" in status


def test_native_module_carries_this_package_version() -> None:
    if not dmlpy.native_available():
        pytest.skip(dmlpy.native_status())
    ffi, lib = native.library()
    assert ffi.string(lib.dmlpy_native_version()).decode() == dmlpy.__version__


def test_info_command_reports_the_backend() -> None:
    done = subprocess.run([sys.executable, "-m", "dmlpy", "info"], capture_output=True, text=True, check=True)
    expected = "backend: native" if dmlpy.native_available() else "backend: numpy"
    assert expected in done.stdout
    assert "DML_OPERATOR_AVERAGE_POOLING" in done.stdout


def test_backend_env_variable_overrides_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DMLPY_BACKEND", "numpy")
    assert dmlpy.create_device().backend_name == "numpy"


def test_unknown_backend_name_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown backend"):
        dmlpy.create_device(backend="cuda")


# ---------------------------------------------------------------------------------------
# Instruction-set variants: one portable build, the best kernels for the CPU chosen at run time


def _variant_lists() -> tuple[str, list[str], list[str]]:
    ffi, lib = native.library()
    text = lambda pointer: ffi.string(pointer).decode()  # noqa: E731
    return text(lib.dmlpy_native_isa()), text(lib.dmlpy_native_isa_compiled()).split(), text(lib.dmlpy_native_isa_runnable()).split()


def _cpu_flags() -> set[str]:
    """The CPU's feature flags as the Linux kernel reports them (an oracle independent of the library)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


AVX2_FLAGS = {"avx2", "fma", "f16c", "bmi1", "bmi2", "abm", "popcnt", "movbe"}  # x86-64-v3 (lzcnt is "abm")
AVX512_FLAGS = AVX2_FLAGS | {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}  # x86-64-v4


def _gcc_on_x86() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64") and sysconfig.get_config_var("CC") is not None and "gcc" in sysconfig.get_config_var("CC")


@pytest.fixture
def variants() -> Iterator[list[str]]:
    """The variants this CPU runs; the selection is restored afterwards."""
    _skip_native_unless_required()
    ffi, lib = native.library()
    chosen, _, runnable = _variant_lists()
    yield runnable
    assert lib.dmlpy_native_select_isa(chosen.encode()) == 0


def test_a_portable_build_holds_the_avx2_and_avx512_kernels_beside_the_baseline() -> None:
    _skip_native_unless_required()
    _, compiled, _ = _variant_lists()
    assert compiled[0] == "baseline"
    if not _gcc_on_x86():
        pytest.skip("only GCC on x86-64 builds the AVX2 and AVX-512 variants")
    assert compiled == ["baseline", "avx2", "avx512"]


def test_the_chosen_kernels_are_the_best_the_cpu_supports() -> None:
    _skip_native_unless_required()
    flags = _cpu_flags()
    if not flags or not _gcc_on_x86():
        pytest.skip("needs /proc/cpuinfo and a GCC x86-64 build")
    expected = "avx512" if AVX512_FLAGS <= flags else "avx2" if AVX2_FLAGS <= flags else "baseline"
    done = subprocess.run([sys.executable, "-c", "from dmlpy.backends import native; native.library(); print(native.kernels())"],
                          capture_output=True, text=True, check=True, env={k: v for k, v in os.environ.items() if k != "DMLPY_NATIVE_ISA"})  # fmt: skip
    assert done.stdout.split()[0] == expected


def test_info_names_the_chosen_kernels_and_says_the_build_is_portable() -> None:
    _skip_native_unless_required()
    env = {k: v for k, v in os.environ.items() if k not in ("DMLPY_NATIVE_ISA", "DMLPY_BACKEND")}
    done = subprocess.run([sys.executable, "-m", "dmlpy", "info"], capture_output=True, text=True, check=True, env=env)
    line = next(line for line in done.stdout.splitlines() if line.startswith("native kernels: "))
    _, _, runnable = _variant_lists()
    assert line.startswith(f"native kernels: {runnable[-1]} (chosen at run time from the CPU's features")
    ffi, lib = native.library()
    if ffi.string(lib.dmlpy_native_arch_flags()) == b"":  # built without DMLPY_NATIVE_ARCH, as pip builds it
        assert line.endswith("; portable build)")
    else:
        assert "(DMLPY_NATIVE_ARCH), not the portable default)" in line


@pytest.mark.parametrize("variant", ["baseline", "avx2", "avx512"])
def test_native_isa_variable_selects_the_kernels(variant: str) -> None:
    _skip_native_unless_required()
    if variant not in _variant_lists()[2]:
        pytest.skip(f"this CPU or build has no {variant} variant")
    env = {**os.environ, "DMLPY_NATIVE_ISA": variant}
    done = subprocess.run([sys.executable, "-m", "dmlpy", "info"], capture_output=True, text=True, check=True, env=env)
    assert f"native kernels: {variant} (chosen by DMLPY_NATIVE_ISA" in done.stdout


@pytest.mark.parametrize("value", ["avx9", "AVX512", "native"])
def test_an_unknown_native_isa_leaves_native_unavailable_and_says_why(value: str) -> None:
    _skip_native_unless_required()
    env = {**os.environ, "DMLPY_NATIVE_ISA": value}
    env.pop("DMLPY_REQUIRE_NATIVE", None)
    code = "import dmlpy; print(dmlpy.native_available()); print(dmlpy.native_status())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    available, status = done.stdout.splitlines()
    assert available == "False"
    assert f"DMLPY_NATIVE_ISA={value!r}" in status and "baseline" in status


def test_selecting_a_variant_the_cpu_cannot_run_is_refused() -> None:
    _skip_native_unless_required()
    _, compiled, runnable = _variant_lists()
    ffi, lib = native.library()
    assert lib.dmlpy_native_select_isa(b"avx9") == lib.DMLPY_E_INVALID_ARGUMENT
    for name in set(compiled) - set(runnable):
        assert lib.dmlpy_native_select_isa(name.encode()) == lib.DMLPY_E_INVALID_ARGUMENT
    assert ffi.string(lib.dmlpy_native_isa()).decode() in runnable


def _pool(dtype: Any, include_padding: bool) -> tuple[Any, dict[str, np.ndarray]]:
    desc = DML_AVERAGE_POOLING_OPERATOR_DESC(
        InputTensor=buffer_tensor(dtype, (2, 19, 33, 35)), OutputTensor=buffer_tensor(dtype, (2, 19, 17, 18)),
        DimensionCount=2, Strides=(2, 2), WindowSize=(3, 3), StartPadding=(1, 1), EndPadding=(1, 1), IncludePadding=include_padding,
    )  # fmt: skip
    return desc, {"InputTensor": np.random.default_rng(1).standard_normal((2, 19, 33, 35)).astype(dtype)}


def _conv(shape: tuple[int, ...], cout: int, k: int, s: int, p: int, *, backward: bool, groups: int = 1, dtype: Any = np.float32,
          fused: Any = None) -> tuple[Any, dict[str, np.ndarray]]:  # fmt: skip
    spatial = len(shape) - 2
    cin = shape[1]
    wshape = (cin, cout // groups, *(k,) * spatial) if backward else (cout, cin // groups, *(k,) * spatial)
    out = [(i - 1) * s + k - 2 * p for i in shape[2:]] if backward else [(i + 2 * p - k) // s + 1 for i in shape[2:]]
    desc = DML_CONVOLUTION_OPERATOR_DESC(
        InputTensor=buffer_tensor(dtype, shape), FilterTensor=buffer_tensor(dtype, wshape),
        BiasTensor=buffer_tensor(dtype, (1, cout, *(1,) * spatial)), OutputTensor=buffer_tensor(dtype, (shape[0], cout, *out)),
        Mode=DML_CONVOLUTION_MODE.CROSS_CORRELATION, Direction=DML_CONVOLUTION_DIRECTION.BACKWARD if backward else DML_CONVOLUTION_DIRECTION.FORWARD,
        DimensionCount=spatial, Strides=(s,) * spatial, Dilations=(1,) * spatial, StartPadding=(p,) * spatial, EndPadding=(p,) * spatial,
        OutputPadding=(0,) * spatial, GroupCount=groups, FusedActivation=fused,
    )  # fmt: skip
    rng = np.random.default_rng(2)
    return desc, {
        "InputTensor": rng.standard_normal(shape).astype(dtype),
        "FilterTensor": (rng.standard_normal(wshape) / 8).astype(dtype),
        "BiasTensor": rng.standard_normal((1, cout, *(1,) * spatial)).astype(dtype),
    }


def _space_depth(to_depth: bool, dtype: Any) -> tuple[Any, dict[str, np.ndarray]]:
    shape, out = ((2, 8, 24, 40), (2, 32, 12, 20)) if to_depth else ((2, 32, 12, 20), (2, 8, 24, 40))
    op = DML_SPACE_TO_DEPTH1_OPERATOR_DESC if to_depth else DML_DEPTH_TO_SPACE1_OPERATOR_DESC
    desc = op(InputTensor=buffer_tensor(dtype, shape), OutputTensor=buffer_tensor(dtype, out), BlockSize=2, Order=DML_DEPTH_SPACE_ORDER.COLUMN_ROW_DEPTH)
    x = np.arange(np.prod(shape)).reshape(shape).astype(dtype)
    return desc, {"InputTensor": x}


def _activation(make: Callable[..., Any], dtype: Any, *params: float) -> tuple[Any, dict[str, np.ndarray]]:
    shape = (3, 5, 7, 37)
    desc = make(buffer_tensor(dtype, shape), buffer_tensor(dtype, shape), *params)
    x = (np.random.default_rng(3).standard_normal(shape) * 4).astype(dtype)
    return desc, {"InputTensor": x}


def _gemm(dtype: Any, a_shape: tuple[int, ...], b_shape: tuple[int, ...], fused: Any = None) -> tuple[Any, dict[str, np.ndarray]]:
    y_shape = (*a_shape[:-1], b_shape[-1])
    desc = DML_GEMM_OPERATOR_DESC(
        ATensor=buffer_tensor(dtype, a_shape), BTensor=buffer_tensor(dtype, b_shape), CTensor=buffer_tensor(dtype, y_shape, (0, 0, 0, 1)),
        OutputTensor=buffer_tensor(dtype, y_shape), Alpha=0.5, Beta=2.0, FusedActivation=fused,
    )  # fmt: skip
    rng = np.random.default_rng(4)
    return desc, {
        "ATensor": rng.standard_normal(a_shape).astype(dtype),
        "BTensor": (rng.standard_normal(b_shape) / 8).astype(dtype),
        "CTensor": np.broadcast_to(rng.standard_normal(y_shape[-1]).astype(dtype), y_shape),
    }


def _resample(dtype: Any, shape: tuple[int, ...], out: tuple[int, ...], scales: tuple[float, ...], *, antialiased: bool = False) -> tuple[Any, dict[str, np.ndarray]]:
    n = len(shape)
    desc = DML_RESAMPLE3_OPERATOR_DESC(buffer_tensor(dtype, shape), buffer_tensor(dtype, out), DML_INTERPOLATION_MODE.LINEAR, DML_AXIS_DIRECTION.INCREASING,
                                       n, list(scales), [0.5] * n, [-0.5] * n, antialiased)  # fmt: skip
    return desc, {"InputTensor": (np.random.default_rng(4).standard_normal(shape) * 4).astype(dtype)}


def _global_pool(function: Any, *, infinite: bool = False) -> tuple[Any, dict[str, np.ndarray]]:
    # 81 rows of 49 floats: ten groups of 8 (AVX2) or five of 16 (AVX-512) summed at once, the rest one by one
    shape = (3, 27, 7, 7)
    desc = DML_REDUCE_OPERATOR_DESC(function, buffer_tensor(np.float32, shape), buffer_tensor(np.float32, (3, 27, 1, 1)), 2, [2, 3])
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    if infinite:  # a row whose float sum overflows is summed again in double
        x[1, 3] = 3e38
    return desc, {"InputTensor": x}


# Same arithmetic in every variant (vector lanes do what the scalar loop does, F16C converts as the
# portable code does): the same bytes.
SAME_BYTES_CASES = [
    pytest.param(lambda: _pool(np.float32, False), id="average pooling fp32"),
    pytest.param(lambda: _pool(np.float16, True), id="average pooling fp16 including padding"),
    pytest.param(lambda: _space_depth(True, np.float32), id="space to depth fp32"),
    pytest.param(lambda: _global_pool(DML_REDUCE_FUNCTION.AVERAGE), id="reduce average over 7x7 rows"),
    pytest.param(lambda: _global_pool(DML_REDUCE_FUNCTION.SUM, infinite=True), id="reduce sum over 7x7 rows, one overflowing"),
    pytest.param(lambda: _global_pool(DML_REDUCE_FUNCTION.L1), id="reduce l1 over 7x7 rows"),
    pytest.param(lambda: _space_depth(False, np.uint8), id="depth to space uint8"),
    pytest.param(lambda: _space_depth(True, np.float16), id="space to depth fp16"),
    pytest.param(lambda: _activation(DML_ACTIVATION_ELU_OPERATOR_DESC, np.float32, 0.7), id="elu fp32"),
    pytest.param(lambda: _activation(DML_ACTIVATION_SIGMOID_OPERATOR_DESC, np.float16), id="sigmoid fp16"),
    pytest.param(lambda: _activation(DML_ACTIVATION_GELU_OPERATOR_DESC, np.float32), id="gelu fp32"),
    pytest.param(lambda: _resample(np.float32, (2, 8, 30, 37), (2, 8, 60, 74), (1, 1, 2, 2)), id="resample 2x linear fp32"),
    pytest.param(lambda: _resample(np.float16, (1, 4, 33, 41), (1, 4, 50, 17), (1, 1, 1.5, 0.4)), id="resample linear fp16"),
    pytest.param(lambda: _resample(np.float32, (1, 3, 40, 50), (1, 3, 9, 12), (1, 1, 0.23, 0.25), antialiased=True), id="resample antialiased fp32"),
]

# The AVX-512 convolution, GEMM and LINEAR kernels fuse multiply-adds (one rounding instead of two) and the
# convolution sums in another order (docs/deviations.md): they agree with the baseline to rounding.
ROUNDING_CASES = [
    pytest.param(lambda: _conv((1, 16, 20, 20), 24, 3, 1, 1, backward=False), id="convolution forward k3"),
    pytest.param(lambda: _conv((1, 32, 12, 12), 16, 4, 2, 1, backward=True), id="convolution backward k4 s2"),
    pytest.param(lambda: _conv((2, 16, 9, 9), 16, 3, 1, 1, backward=True, fused=FusedActivation.gelu()), id="convolution backward k3 with fused gelu"),
    pytest.param(lambda: _conv((1, 32, 16, 16), 32, 4, 2, 1, backward=True, groups=32), id="convolution depthwise k4 s2"),
    pytest.param(lambda: _conv((1, 8, 6, 10, 10), 8, 2, 2, 0, backward=True, dtype=np.float16), id="convolution 3-D fp16"),
    pytest.param(lambda: _activation(DML_ACTIVATION_LINEAR_OPERATOR_DESC, np.float32, 1.5, -0.25), id="linear fp32"),
    pytest.param(lambda: _gemm(np.float32, (2, 3, 37, 130), (2, 3, 130, 100), FusedActivation.relu()), id="gemm fp32 batched with C and relu"),
    pytest.param(lambda: _gemm(np.float16, (1, 1, 5, 300), (1, 1, 300, 49)), id="gemm fp16 K over two blocks"),
]


def _run_each_variant(case: Callable[[], tuple[Any, dict[str, np.ndarray]]], variants: list[str]) -> dict[str, np.ndarray]:
    if len(variants) < 2:
        pytest.skip("this CPU runs only the baseline variant")
    desc, inputs = case()
    _, lib = native.library()
    results = {}
    for name in variants:
        assert lib.dmlpy_native_select_isa(name.encode()) == 0
        results[name] = np.asarray(dmlpy.run(desc, backend="native", **inputs))
    return results


@pytest.mark.parametrize("case", SAME_BYTES_CASES)
def test_every_kernel_variant_gives_the_bytes_of_the_baseline(case: Callable[[], tuple[Any, dict[str, np.ndarray]]], variants: list[str]) -> None:
    results = _run_each_variant(case, variants)
    for name in variants[1:]:
        assert results[name].tobytes() == results["baseline"].tobytes(), name


@pytest.mark.parametrize("case", ROUNDING_CASES)
def test_every_kernel_variant_agrees_with_the_baseline_to_rounding(case: Callable[[], tuple[Any, dict[str, np.ndarray]]], variants: list[str]) -> None:
    results = _run_each_variant(case, variants)
    baseline = results["baseline"].astype(np.float64)
    tolerance = 2e-3 if results["baseline"].dtype == np.float16 else 2e-5
    for name in variants[1:]:
        np.testing.assert_allclose(results[name].astype(np.float64), baseline, rtol=tolerance, atol=tolerance, err_msg=name)
    if {"avx2", "avx512"} <= results.keys():  # the same 16-lane kernels: AVX2 runs them on v16.h's emulated vectors
        assert results["avx2"].tobytes() == results["avx512"].tobytes()


# ---------------------------------------------------------------------------------------
# dmlpy_execute_sequence: a graph's native nodes in one call


def _identity_runner(backend: native.NativeBackend, source: np.ndarray, target: np.ndarray, elements: int = 4) -> Any:
    """A bound ELEMENT_WISE_IDENTITY of ``elements`` floats from ``source``'s bytes to ``target``'s (uint8 arrays)."""
    desc = DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC(InputTensor=buffer_tensor(np.float32, (1, 1, 1, elements)), OutputTensor=buffer_tensor(np.float32, (1, 1, 1, elements)))
    spec = spec_for_desc(desc)
    assert spec is not None
    prepared = backend.prepare(spec, desc)
    return backend.bind(prepared, [BoundTensor("InputTensor", source, desc.InputTensor)], [BoundTensor("OutputTensor", target, desc.OutputTensor)])


def test_a_sequence_runs_its_dispatches_in_order_and_stops_at_the_first_refused() -> None:
    """Each call sees what the ones before it wrote (a -> b, then b -> c); the refused one's index comes back, and the
    calls after it do not run."""
    _skip_native_unless_required()
    ffi, lib = native.library()
    backend = native.NativeBackend(threads=1)
    a = np.arange(4, dtype=np.float32).view(np.uint8)
    b, c, d = (np.zeros(16, np.uint8) for _ in range(3))
    short = np.zeros(8, np.uint8)  # half the bytes the tensor reaches: DMLPY_E_BUFFER_TOO_SMALL
    first, second, refused, after = _identity_runner(backend, a, b), _identity_runner(backend, b, c), _identity_runner(backend, c, short), _identity_runner(backend, c, d)
    failed = ffi.new("UINT*", 99)
    dispatches = ffi.new("DMLPY_DISPATCH*[]", [r.dispatch for r in (first, second, refused, after)])
    status = lib.dmlpy_execute_sequence(4, dispatches, 1, failed)
    assert (status, failed[0]) == (lib.DMLPY_E_BUFFER_TOO_SMALL, 2)
    np.testing.assert_array_equal(c.view(np.float32), [0, 1, 2, 3])
    assert not short.any() and not d.any()


def test_a_sequence_refuses_null_dispatches_and_runs_an_empty_one() -> None:
    _skip_native_unless_required()
    ffi, lib = native.library()
    failed = ffi.new("UINT*", 99)
    assert lib.dmlpy_execute_sequence(0, ffi.NULL, 1, failed) == lib.DMLPY_OK
    assert lib.dmlpy_execute_sequence(1, ffi.NULL, 1, failed) == lib.DMLPY_E_NULL_ARGUMENT
    assert (lib.dmlpy_execute_sequence(1, ffi.new("DMLPY_DISPATCH*[]", [ffi.NULL]), 1, failed), failed[0]) == (lib.DMLPY_E_NULL_ARGUMENT, 0)


def test_the_backend_joins_consecutive_native_runners_and_keeps_other_steps_in_place() -> None:
    """[native, native, Python, native, native] becomes [sequence, Python, sequence]; run in order, each copy sees the
    previous one's output, and a refusal inside a sequence raises the refused node's NATIVE.REJECTED."""
    _skip_native_unless_required()
    backend = native.NativeBackend(threads=1)
    a = np.arange(4, dtype=np.float32).view(np.uint8)
    b, c, d, e = (np.zeros(16, np.uint8) for _ in range(4))
    seen: list[float] = []

    def python_step() -> None:
        seen.append(float(c.view(np.float32)[3]))
        c.view(np.float32)[:] *= 10

    runners = [_identity_runner(backend, a, b), _identity_runner(backend, b, c), python_step, _identity_runner(backend, c, d), _identity_runner(backend, d, e)]
    steps = backend.sequence(runners)
    assert len(steps) == 3 and steps[1] is python_step
    for step in steps:
        step()
    assert seen == [3.0]
    np.testing.assert_array_equal(e.view(np.float32), [0, 10, 20, 30])

    refusing = backend.sequence([_identity_runner(backend, a, b), _identity_runner(backend, b, np.zeros(8, np.uint8))])
    assert len(refusing) == 1
    with pytest.raises(dmlpy.DmlError) as raised:
        refusing[0]()
    assert [f.rule for f in raised.value.findings] == ["NATIVE.REJECTED"]
    assert raised.value.findings[0].path == "DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC"
