"""Max pooling's C kernel (dmlpy/native/max_pooling.c) against the NumPy kernel, bit for bit.

The NumPy kernel is the reference (tested against onnxruntime and the DML_MAX_POOLING2_OPERATOR_DESC
page in test_max_pooling_kernels.py); here every random geometry, layout and value pattern (ties, NaN,
signed zeros, -inf, windows wholly in padding) must give the same output bits and indices on the C
kernel, at 1 and 2 threads and on every instruction-set variant this CPU runs.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from conftest import native_device

import dmlpy
from dmlpy import buffer_tensor, nhwc_strides
from dmlpy.operators import REGISTRY
from dmlpy.operators.descs import DML_MAX_POOLING1_OPERATOR_DESC, DML_MAX_POOLING2_OPERATOR_DESC, DML_MAX_POOLING_OPERATOR_DESC
from dmlpy.operators.pooling import ceil_shape_allowed, pooled_size


def geometry(rng: np.random.Generator, spatial: int, *, dilated: bool) -> tuple[list[int], list[int], list[int], list[int], list[int], list[int], list[int]]:
    """Random sizes, windows, strides, paddings and dilations whose output has at least one element per axis."""
    while True:
        x = [int(rng.integers(1, 4)), int(rng.integers(1, 6))] + [int(rng.integers(1, 12)) for _ in range(spatial)]
        window = [int(rng.integers(1, 5)) for _ in range(spatial)]
        strides = [int(rng.integers(1, 4)) for _ in range(spatial)]
        dilations = [int(rng.integers(1, 3)) if dilated else 1 for _ in range(spatial)]
        start = [int(rng.integers(0, 3)) for _ in range(spatial)]
        end = [int(rng.integers(0, 3)) for _ in range(spatial)]
        try:
            out = [pooled_size(x[2 + i], window[i], strides[i], start[i], end[i], dilations[i]) for i in range(spatial)]
        except (ValueError, ZeroDivisionError):
            continue
        if all(o >= 1 for o in out):
            extra = [rng.random() < 0.3 and ceil_shape_allowed(x[2 + i], window[i], strides[i], start[i], end[i], dilations[i]) for i in range(spatial)]
            ceil = [o + int(e) for o, e in zip(out, extra, strict=True)]  # sometimes the ceil shape
            return x, [*x[:2], *ceil], window, strides, start, end, dilations


def values(rng: np.random.Generator, shape: Sequence[int], dtype: Any) -> np.ndarray:
    """Few distinct values (ties), with NaN, signed zeros and infinities sprinkled in."""
    pool = np.array([-2.0, -1.0, -0.0, 0.0, 1.0, 2.5, -np.inf, np.inf, np.nan], dtype=np.float64)
    choice = rng.integers(0, 6, size=shape)
    x = pool[choice].astype(dtype)
    special = rng.random(shape) < 0.15
    x[special] = pool[rng.integers(6, 9, size=int(special.sum()))].astype(dtype)
    return x


def build(kind: type, x: list[int], y: list[int], window: list[int], strides: list[int], start: list[int], end: list[int], dilations: list[int],
          *, dtype: Any, index_type: Any, x_strides: Any = None, y_strides: Any = None) -> Any:  # fmt: skip
    spatial = len(x) - 2
    fields: dict[str, Any] = {"DimensionCount": spatial, "Strides": strides, "WindowSize": window, "StartPadding": start, "EndPadding": end}
    tensors: dict[str, Any] = {"InputTensor": buffer_tensor(dtype, x, x_strides), "OutputTensor": buffer_tensor(dtype, y, y_strides)}
    if kind is not DML_MAX_POOLING_OPERATOR_DESC:
        tensors["OutputIndicesTensor"] = None if index_type is None else buffer_tensor(index_type, y)
    if kind is DML_MAX_POOLING2_OPERATOR_DESC:
        fields["Dilations"] = dilations
    return kind(**tensors, **fields)


def run_both(desc: Any, x: np.ndarray, threads: int = 0) -> tuple[Any, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dmlpy.DmlWarning)
        native = dmlpy.run(desc, device=native_device(threads), InputTensor=x)
        reference = dmlpy.run(desc, device=dmlpy.create_device(backend="numpy"), InputTensor=x)
    return native, reference


def assert_same_bits(native: Any, reference: Any) -> None:
    pairs = zip(native, reference, strict=True) if isinstance(native, tuple) else [(native, reference)]
    for got, want in pairs:
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"))


KINDS = [DML_MAX_POOLING_OPERATOR_DESC, DML_MAX_POOLING1_OPERATOR_DESC, DML_MAX_POOLING2_OPERATOR_DESC]


def test_the_c_kernel_takes_floating_max_pooling_and_leaves_integers_to_numpy() -> None:
    spec = REGISTRY[dmlpy.DML_OPERATOR_TYPE.MAX_POOLING2]
    floating = build(DML_MAX_POOLING2_OPERATOR_DESC, [1, 1, 3, 3], [1, 1, 2, 2], [2, 2], [1, 1], [0, 0], [0, 0], [1, 1], dtype=np.float16, index_type=np.uint32)
    integer = build(DML_MAX_POOLING2_OPERATOR_DESC, [1, 1, 3, 3], [1, 1, 2, 2], [2, 2], [1, 1], [0, 0], [0, 0], [1, 1], dtype=np.int8, index_type=np.uint32)
    assert spec.runs_natively(floating) and not spec.runs_natively(integer)


@pytest.mark.parametrize("seed", range(60))
def test_random_max_pooling_gives_the_numpy_kernels_bits_and_indices(seed: int) -> None:
    rng = np.random.default_rng(seed)
    kind = KINDS[seed % 3]
    spatial = 1 + seed % 3 if kind is not DML_MAX_POOLING_OPERATOR_DESC else 2 + seed % 2
    x, y, window, strides, start, end, dilations = geometry(rng, spatial, dilated=kind is DML_MAX_POOLING2_OPERATOR_DESC)
    dtype = np.float16 if seed % 4 == 1 else np.float32
    index_type = None if kind is DML_MAX_POOLING_OPERATOR_DESC or seed % 5 == 0 else (np.uint64 if seed % 2 else np.uint32)
    x_strides = nhwc_strides(x) if len(x) == 4 and seed % 3 == 2 else None
    desc = build(kind, x, y, window, strides, start, end, dilations, dtype=dtype, index_type=index_type, x_strides=x_strides)
    data = values(rng, x, dtype)
    native, reference = run_both(desc, data)
    assert_same_bits(native, reference)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_large_pooling_gives_the_same_bits_at_one_and_two_threads(threads: int) -> None:
    rng = np.random.default_rng(5)
    x = values(rng, (2, 16, 40, 40), np.float32)
    desc = build(DML_MAX_POOLING2_OPERATOR_DESC, [2, 16, 40, 40], [2, 16, 20, 20], [3, 3], [2, 2], [1, 1], [1, 1], [1, 1], dtype=np.float32, index_type=np.uint32)
    native, reference = run_both(desc, x, threads)
    assert_same_bits(native, reference)


# Values only (no indices), float32, packed rows (wide, or short: masked vectors on AVX-512): the C kernel's
# plane path (horizontal maxima per input row, then over the window's rows; vector maxps chains with
# NaN results recomputed). (input, window, strides, start, end, dilations)
WIDE_VALUES_ONLY = [
    ("ResNet stem k3 s2 p1", [2, 5, 23, 100], [3, 3], [2, 2], [1, 1], [1, 1], [1, 1]),
    ("k2 s2 p0", [1, 6, 8, 130], [2, 2], [2, 2], [0, 0], [0, 0], [1, 1]),
    ("k4 s2 start 2 end 1", [1, 4, 9, 97], [4, 4], [2, 2], [2, 2], [1, 1], [1, 1]),
    ("k3 s1 p1", [1, 4, 7, 70], [3, 3], [1, 1], [1, 1], [1, 1], [1, 1]),
    ("k5 s1 p2", [1, 4, 9, 41], [5, 2], [1, 1], [2, 0], [2, 0], [1, 1]),
    ("k3 s3 (no vectors along W)", [1, 4, 9, 64], [3, 3], [3, 3], [0, 0], [0, 0], [1, 1]),
    ("k3 s1 dilation 2 along W", [1, 4, 9, 80], [3, 3], [1, 1], [1, 2], [1, 2], [2, 2]),
    ("one row k1x3 s2 p1", [2, 4, 1, 150], [1, 3], [1, 2], [0, 1], [0, 1], [1, 1]),
    # short rows: on AVX-512 (whose masked vectors take every row of stride 1 or 2) the edges are most of the row
    ("short rows k3 s2 p1 (16 outputs)", [2, 5, 32, 32], [3, 3], [2, 2], [1, 1], [1, 1], [1, 1]),
    ("short rows k3 s1 p1", [1, 4, 7, 20], [3, 3], [1, 1], [1, 1], [1, 1], [1, 1]),
    ("short rows k2 s2 p0 (7 outputs)", [1, 3, 6, 14], [2, 2], [2, 2], [0, 0], [0, 0], [1, 1]),
    ("short rows k4 s2 start 2 end 1", [1, 4, 9, 21], [4, 4], [2, 2], [2, 2], [1, 1], [1, 1]),
    ("short rows k5 s1 p2", [1, 4, 9, 13], [5, 2], [1, 1], [2, 0], [2, 0], [1, 1]),
    ("short rows k3 s2 p2", [1, 3, 5, 9], [3, 3], [2, 2], [2, 2], [2, 2], [1, 1]),
]


@pytest.mark.parametrize("case", WIDE_VALUES_ONLY, ids=[c[0] for c in WIDE_VALUES_ONLY])
@pytest.mark.parametrize("threads", [1, 2])
def test_values_only_pooling_of_wide_and_short_rows_gives_the_numpy_kernels_bits(case: tuple[Any, ...], threads: int) -> None:
    """Ties, signed zeros, NaN (often a window's first tap) and infinities, on every variant this CPU runs."""
    _, x, window, strides, start, end, dilations = case
    y = [*x[:2], *(pooled_size(x[2 + i], window[i], strides[i], start[i], end[i], dilations[i]) for i in range(len(window)))]
    desc = build(DML_MAX_POOLING2_OPERATOR_DESC, x, y, window, strides, start, end, dilations, dtype=np.float32, index_type=None)
    data = values(np.random.default_rng(len(case[0])), x, np.float32)
    reference = run_both(desc, data)[1]
    from dmlpy.backends import native  # noqa: PLC0415

    ffi, lib = native.library()
    try:
        for isa in ffi.string(lib.dmlpy_native_isa_runnable()).decode().split():
            assert lib.dmlpy_native_select_isa(isa.encode()) == 0
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", dmlpy.DmlWarning)
                assert_same_bits(dmlpy.run(desc, device=native_device(threads), InputTensor=data), reference)
    finally:
        lib.dmlpy_native_select_isa(ffi.NULL)


def test_a_window_wholly_in_padding_gives_minus_infinity_and_all_ones_indices() -> None:
    desc = build(DML_MAX_POOLING2_OPERATOR_DESC, [1, 1, 2, 2], [1, 1, 2, 4], [1, 1], [1, 1], [0, 2], [0, 0], [1, 1], dtype=np.float32, index_type=np.uint64)
    native, reference = run_both(desc, np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2))
    assert_same_bits(native, reference)
    values_out, indices = native
    assert np.isneginf(values_out[0, 0, :, :2]).all() and (indices[0, 0, :, :2] == np.iinfo(np.uint64).max).all()
    np.testing.assert_array_equal(values_out[0, 0, :, 2:], [[0, 1], [2, 3]])


def test_equal_zeros_keep_the_sign_of_the_first_tap_in_row_major_order() -> None:
    # window rows (a<0, +0) then (-0, b<0): the first maximum in (row, column) order is +0 at (0, 1),
    # although column 0's maximum (-0) comes first along W
    x = np.array([[[[-1.0, 0.0], [-0.0, -1.0]]]], np.float32)
    desc = build(DML_MAX_POOLING1_OPERATOR_DESC, [1, 1, 2, 2], [1, 1, 1, 1], [2, 2], [1, 1], [0, 0], [0, 0], [1, 1], dtype=np.float32, index_type=np.uint32)
    native, reference = run_both(desc, x)
    assert_same_bits(native, reference)
    assert not np.signbit(native[0]).any() and native[1].item() == 1


def test_an_output_written_through_nhwc_and_padded_strides_matches() -> None:
    rng = np.random.default_rng(9)
    x = values(rng, (1, 3, 9, 7), np.float16)
    desc = build(DML_MAX_POOLING2_OPERATOR_DESC, [1, 3, 9, 7], [1, 3, 4, 3], [3, 2], [2, 2], [0, 0], [0, 0], [1, 2], dtype=np.float16, index_type=np.uint32,
                 x_strides=nhwc_strides((1, 3, 9, 7)), y_strides=(60, 20, 5, 1))  # fmt: skip
    native, reference = run_both(desc, x)
    assert_same_bits(native, reference)


def test_every_isa_variant_gives_the_same_bits() -> None:
    native_device()
    from dmlpy.backends import native  # noqa: PLC0415

    ffi, lib = native.library()
    rng = np.random.default_rng(11)
    x = values(rng, (2, 4, 17, 19), np.float32)
    desc = build(DML_MAX_POOLING2_OPERATOR_DESC, [2, 4, 17, 19], [2, 4, 9, 10], [3, 3], [2, 2], [1, 1], [1, 1], [1, 1], dtype=np.float32, index_type=np.uint32)
    reference = run_both(desc, x)[1]
    try:
        for isa in ffi.string(lib.dmlpy_native_isa_runnable()).decode().split():
            assert lib.dmlpy_native_select_isa(isa.encode()) == 0
            assert_same_bits(dmlpy.run(desc, device=native_device(), InputTensor=x), reference)
    finally:
        lib.dmlpy_native_select_isa(ffi.NULL)


def _guarded_run(device: dmlpy.Device, desc: Any, x: np.ndarray, guard: int = 64) -> tuple[list[np.ndarray], list[bool]]:
    """Runs ``desc`` with every tensor bound in the middle of a buffer filled with 0xA5; returns the outputs and,
    per buffer, whether every byte outside its bound range is still 0xA5."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dmlpy.DmlWarning)
        compiled = device.compile_operator(device.create_operator(desc))
    slots_in, slots_out = compiled.input_slots(), compiled.output_slots()
    init = device.create_operator_initializer([compiled])
    init_list = device.create_command_list()
    device.create_command_recorder().record_dispatch(init_list, init, device.create_binding_table(init))
    init_list.close()
    device.execute(init_list)

    def guarded(tensor: Any) -> tuple[dmlpy.Buffer, int]:
        size = tensor.TotalTensorSizeInBytes
        buffer = device.create_buffer(guard + size + guard + (-size) % 4)
        buffer.data[:] = 0xA5
        return buffer, size

    bound = []
    table = device.create_binding_table(compiled)
    x_buffer, x_size = guarded(slots_in[0].tensor)
    x_buffer.view(slots_in[0].tensor, guard, writeable=True)[...] = x
    table.bind_inputs([dmlpy.buffer_binding(x_buffer, guard, x_size)])
    outs = []
    for slot in slots_out:
        if slot.tensor is None:
            outs.append(dmlpy.DML_BINDING_DESC())
            continue
        buffer, size = guarded(slot.tensor)
        bound.append((buffer, size, slot.tensor))
        outs.append(dmlpy.buffer_binding(buffer, guard, size))
    table.bind_outputs(outs)
    command_list = device.create_command_list()
    device.create_command_recorder().record_dispatch(command_list, compiled, table)
    command_list.close()
    device.execute(command_list)
    intact = [bool((x_buffer.data[:guard] == 0xA5).all() and (x_buffer.data[guard + x_size :] == 0xA5).all())]
    results = []
    for buffer, size, tensor in bound:
        intact.append(bool((buffer.data[:guard] == 0xA5).all() and (buffer.data[guard + size :] == 0xA5).all()))
        results.append(buffer.read(tensor, guard))
    return results, intact


@pytest.mark.parametrize("seed", range(40))
def test_guard_bytes_around_every_bound_range_stay_untouched_and_results_match(seed: int) -> None:
    rng = np.random.default_rng(1000 + seed)
    spatial = 2 + seed % 2
    x, y, window, strides, start, end, dilations = geometry(rng, spatial, dilated=True)
    dtype = np.float16 if seed % 2 else np.float32
    layouts = [None, "padded", "reversed"]
    layout = layouts[seed % 3]
    x_strides = y_strides = None
    if layout == "padded":  # rows padded by 3 elements
        x_strides = tuple(int(v) for v in np.cumprod([1, x[-1] + 3, *x[:0:-1][1:]])[::-1])
    elif layout == "reversed" and len(x) >= 3:  # channels innermost for the output (a transposed layout)
        y_strides = nhwc_strides(y) if len(y) == 4 else None
    desc = build(DML_MAX_POOLING2_OPERATOR_DESC, x, y, window, strides, start, end, dilations, dtype=dtype, index_type=np.uint32 if seed % 4 else np.uint64,
                 x_strides=x_strides, y_strides=y_strides)  # fmt: skip
    data = values(rng, x, dtype)
    results, intact = _guarded_run(native_device(), desc, data)
    assert all(intact), f"a kernel wrote outside its bound range: {intact}"
    reference = run_both(desc, data)[1]
    assert_same_bits(tuple(results), reference)
