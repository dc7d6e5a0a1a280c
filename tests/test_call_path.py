"""The call path: a GraphProgram and ``dmlpy.run`` prepare DirectML's steps once and then only copy in,
execute and copy out. What must still hold: every call computes from its own inputs, an equal desc
reuses the pipeline while a different one never does, and new OWNED_BY_DML values reach the kernel."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import assert_rule

import dmlpy
from dmlpy import (
    DML_ACTIVATION_LINEAR_OPERATOR_DESC,
    DML_AVERAGE_POOLING_OPERATOR_DESC,
    DML_TENSOR_FLAGS,
    DmlError,
    DmlWarning,
    GraphBuilder,
    buffer_tensor,
)


def linear(alpha: float, beta: float, shape: tuple[int, ...] = (1, 1, 2, 2)) -> DML_ACTIVATION_LINEAR_OPERATOR_DESC:
    return DML_ACTIVATION_LINEAR_OPERATOR_DESC(buffer_tensor("float32", shape), buffer_tensor("float32", shape), Alpha=alpha, Beta=beta)


def pool(owned: bool = False) -> DML_AVERAGE_POOLING_OPERATOR_DESC:
    flags = DML_TENSOR_FLAGS.OWNED_BY_DML if owned else DML_TENSOR_FLAGS.NONE
    return DML_AVERAGE_POOLING_OPERATOR_DESC(
        buffer_tensor("float32", (1, 1, 2, 2), flags=flags), buffer_tensor("float32", (1, 1, 1, 1)),
        DimensionCount=2, Strides=(1, 1), WindowSize=(2, 2), StartPadding=(0, 0), EndPadding=(0, 0), IncludePadding=False,
    )  # fmt: skip


def test_run_computes_each_call_from_its_own_inputs(device: dmlpy.Device) -> None:
    desc = linear(2.0, 1.0)
    for x in (np.arange(4, dtype=np.float32), np.full(4, -3, dtype=np.float32), np.zeros(4, dtype=np.float32)):
        np.testing.assert_array_equal(dmlpy.run(desc, device=device, InputTensor=x.reshape(1, 1, 2, 2)).ravel(), 2 * x + 1)


def test_run_of_an_equal_desc_reuses_the_prepared_pipeline(device: dmlpy.Device) -> None:
    x = np.ones((1, 1, 2, 2), np.float32)
    dmlpy.run(linear(2.0, 1.0), device=device, InputTensor=x)
    dmlpy.run(linear(2.0, 1.0), device=device, InputTensor=x)  # another object, the same value
    assert len(device._run_cache) == 1


def test_run_after_changing_the_desc_object_runs_the_changed_desc(device: dmlpy.Device) -> None:
    desc = linear(2.0, 1.0)
    x = np.ones((1, 1, 2, 2), np.float32)
    assert dmlpy.run(desc, device=device, InputTensor=x)[0, 0, 0, 0] == 3.0
    desc.Alpha = 5.0
    assert dmlpy.run(desc, device=device, InputTensor=x)[0, 0, 0, 0] == 6.0
    desc.Alpha = 2.0
    assert dmlpy.run(desc, device=device, InputTensor=x)[0, 0, 0, 0] == 3.0


def test_negative_zero_and_zero_are_different_descs(device: dmlpy.Device) -> None:
    x = np.ones((1, 1, 2, 2), np.float32)
    plus = dmlpy.run(linear(0.0, 0.0), device=device, InputTensor=x)
    minus = dmlpy.run(linear(-0.0, -0.0), device=device, InputTensor=x)
    assert not np.signbit(plus).any()
    assert np.signbit(minus).all()  # -0 * 1 + -0 is -0


def test_a_float_where_an_int_belongs_is_not_taken_for_the_valid_int_desc(device: dmlpy.Device) -> None:
    x = np.ones((1, 1, 2, 2), np.float32)
    dmlpy.run(pool(), device=device, InputTensor=x)
    bad = pool()
    bad.WindowSize = (2.0, 2)
    with pytest.raises(DmlError) as error:
        dmlpy.run(bad, device=device, InputTensor=x)
    assert_rule(error.value, "FIELD.TYPE")


def test_an_invalid_desc_is_refused_on_every_call(device: dmlpy.Device) -> None:
    bad = linear(1.0, 0.0)
    bad.OutputTensor = buffer_tensor("float32", (1, 1, 2, 3))
    for _ in range(2):
        with pytest.raises(DmlError):
            dmlpy.run(bad, device=device, InputTensor=np.ones((1, 1, 2, 2), np.float32))


def test_run_warns_again_when_it_reuses_a_desc_with_warnings(device: dmlpy.Device) -> None:
    desc = pool()  # 3x3 by 2x2 windows at stride 2 into 2x2: the ceil shape, POOLING.CEIL_OUTPUT
    desc.InputTensor, desc.OutputTensor, desc.Strides = buffer_tensor("float32", (1, 1, 3, 3)), buffer_tensor("float32", (1, 1, 2, 2)), (2, 2)
    calls = []
    for _ in range(2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            dmlpy.run(desc, device=device, InputTensor=np.ones((1, 1, 3, 3), np.float32))
        calls.append([(w.message.finding.rule, w.message.finding.path) for w in caught if isinstance(w.message, DmlWarning)])
    assert calls[0] == calls[1]
    assert {rule for rule, _ in calls[1]} == {"POOLING.CEIL_OUTPUT"}


def test_run_with_an_owned_input_takes_the_new_value_on_every_call(device: dmlpy.Device) -> None:
    for value in (1.0, 5.0, -2.0):
        out = dmlpy.run(pool(owned=True), device=device, InputTensor=np.full((1, 1, 2, 2), value, np.float32))
        assert out.item() == value


def test_run_still_refuses_an_input_for_a_null_slot_after_a_cached_call(device: dmlpy.Device) -> None:
    from dmlpy import DML_CONVOLUTION_OPERATOR_DESC  # noqa: PLC0415

    desc = DML_CONVOLUTION_OPERATOR_DESC(
        buffer_tensor("float32", (1, 1, 2, 2)), buffer_tensor("float32", (1, 1, 1, 1)), None, buffer_tensor("float32", (1, 1, 2, 2)),
        DimensionCount=2, Strides=(1, 1), Dilations=(1, 1), StartPadding=(0, 0), EndPadding=(0, 0), OutputPadding=(0, 0), GroupCount=1,
    )  # fmt: skip
    x, w = np.ones((1, 1, 2, 2), np.float32), np.full((1, 1, 1, 1), 2, np.float32)
    np.testing.assert_array_equal(dmlpy.run(desc, device=device, InputTensor=x, FilterTensor=w), 2 * x)
    with pytest.raises(TypeError, match="BiasTensor"):
        dmlpy.run(desc, device=device, InputTensor=x, FilterTensor=w, BiasTensor=np.ones((1, 1, 1, 1), np.float32))


def test_run_refuses_a_lossy_input_after_a_cached_call(device: dmlpy.Device) -> None:
    desc = linear(1.0, 0.0)
    dmlpy.run(desc, device=device, InputTensor=np.ones((1, 1, 2, 2), np.float32))
    with pytest.raises(ValueError, match="overflows"):
        dmlpy.run(desc, device=device, InputTensor=np.full((1, 1, 2, 2), 1e300))


def test_a_removed_device_fails_run_even_with_a_prepared_pipeline(device: dmlpy.Device) -> None:
    desc = linear(1.0, 0.0)
    dmlpy.run(desc, device=device, InputTensor=np.ones((1, 1, 2, 2), np.float32))
    with pytest.raises(DmlError):
        device.remove([], "removed by the test")
    with pytest.raises(DmlError) as error:
        dmlpy.run(desc, device=device, InputTensor=np.ones((1, 1, 2, 2), np.float32))
    assert error.value.hresult == dmlpy.HRESULT.DXGI_ERROR_DEVICE_REMOVED


def test_the_run_cache_is_bounded_in_entries(device: dmlpy.Device) -> None:
    x = np.ones((1, 1, 2, 2), np.float32)
    for i in range(device._run_cache.MAX_ENTRIES + 5):
        dmlpy.run(linear(float(i), 0.0), device=device, InputTensor=x)
    assert len(device._run_cache) == device._run_cache.MAX_ENTRIES


def test_a_graph_program_computes_each_call_from_its_own_inputs(backend: str) -> None:
    g = GraphBuilder(backend=backend)
    x = g.input("x", "float32", (1, 1, 2, 2))
    program = g.compile({"y": g.linear(x, 3.0, -1.0)})
    for value in (0.0, 2.0, -4.0):
        y = program(x=np.full((1, 1, 2, 2), value, np.float32))["y"]
        np.testing.assert_array_equal(y, np.full((1, 1, 2, 2), 3 * value - 1, np.float32))


def test_a_graph_programs_outputs_are_copies_the_next_call_does_not_change(backend: str) -> None:
    g = GraphBuilder(backend=backend)
    x = g.input("x", "float32", (1, 1, 2, 2))
    program = g.compile({"y": g.relu(x)})
    first = program(x=np.ones((1, 1, 2, 2), np.float32))["y"]
    program(x=np.full((1, 1, 2, 2), 7, np.float32))
    np.testing.assert_array_equal(first, np.ones((1, 1, 2, 2), np.float32))


def test_a_graph_program_takes_new_owned_weights_on_every_call(backend: str) -> None:
    g = GraphBuilder(backend=backend)
    x = g.input("x", "float32", (1, 1, 3, 3))
    w = g.input("w", "float32", (1, 1, 1, 1), owned=True)
    program = g.compile({"y": g.convolution(x, w)})
    ones = np.ones((1, 1, 3, 3), np.float32)
    for weight in (2.0, -1.0, 0.5):
        np.testing.assert_array_equal(program(x=ones, w=np.full((1, 1, 1, 1), weight, np.float32))["y"], weight * ones)


def test_a_graph_program_casts_and_broadcasts_inputs_as_before(backend: str) -> None:
    g = GraphBuilder(backend=backend)
    x = g.input("x", "float16", (1, 1, 2, 2))
    program = g.compile({"y": g.relu(x)})
    y = program(x=np.array([[-1.0, 2.0]]))["y"]  # float64, broadcast over the rows
    np.testing.assert_array_equal(y, np.array([[[[0, 2], [0, 2]]]], np.float16))
    with pytest.raises(ValueError, match="overflows"):
        program(x=np.full((1, 1, 2, 2), 1e6))


def test_a_graph_program_refuses_unknown_and_missing_inputs_after_a_call(backend: str) -> None:
    g = GraphBuilder(backend=backend)
    x = g.input("x", "float32", (1, 1, 2, 2))
    program = g.compile({"y": g.relu(x)})
    program(x=np.ones((1, 1, 2, 2), np.float32))
    with pytest.raises(TypeError, match="missing: x"):
        program()
    with pytest.raises(TypeError, match="unknown: z"):
        program(x=np.ones((1, 1, 2, 2), np.float32), z=1)


def test_run_after_changing_a_nested_list_in_place_runs_the_changed_desc(device: dmlpy.Device) -> None:
    desc = linear(2.0, 1.0, (1, 1, 2, 2))
    for tensor in (desc.InputTensor, desc.OutputTensor):
        tensor.Desc.Sizes = [1, 1, 2, 2]
    assert dmlpy.run(desc, device=device, InputTensor=np.ones((1, 1, 2, 2), np.float32)).shape == (1, 1, 2, 2)
    for tensor in (desc.InputTensor, desc.OutputTensor):
        tensor.Desc.Sizes[3] = 3  # the same list object, one element changed
        tensor.Desc.TotalTensorSizeInBytes = 24
    out = dmlpy.run(desc, device=device, InputTensor=np.full((1, 1, 2, 3), 2, np.float32))
    np.testing.assert_array_equal(out, np.full((1, 1, 2, 3), 5, np.float32))
    assert len(device._run_cache) == 2


def test_a_nested_desc_of_another_kind_is_not_taken_for_the_cached_one(device: dmlpy.Device) -> None:
    desc = linear(2.0, 1.0)
    x = np.ones((1, 1, 2, 2), np.float32)
    dmlpy.run(desc, device=device, InputTensor=x)
    desc.InputTensor = desc.InputTensor.Desc  # dmlpy takes a DML_BUFFER_TENSOR_DESC for its DML_TENSOR_DESC
    np.testing.assert_array_equal(dmlpy.run(desc, device=device, InputTensor=x), 2 * x + 1)
    assert len(device._run_cache) == 2
    desc.InputTensor = None
    with pytest.raises(DmlError):
        dmlpy.run(desc, device=device, InputTensor=x)


# From 256 KiB a packed tensor is lent rather than copied: the input array is read in place for the call, and
# an output is written into a new array that becomes the result. What must hold: each call computes from its
# own arrays, a result is never written again by a later call, and any other array takes the copy path.
BIG = (1, 64, 32, 64)  # 512 KiB of float32


def scale_program(device: dmlpy.Device) -> dmlpy.GraphProgram:
    """y = relu(x + x) and z = relu(y + y): three nodes, the middle one touching no graph input or output."""
    builder = GraphBuilder(device)
    x = builder.input("x", np.float32, BIG)
    y = builder.relu(builder.add(x, x))
    return builder.compile({"y": y, "z": builder.relu(builder.add(y, y))})


def big(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(BIG).astype(np.float32)


def test_results_of_lent_calls_are_new_arrays_that_later_calls_leave_alone(device: dmlpy.Device) -> None:
    program = scale_program(device)
    a, b = big(1), big(2)
    first = program(x=a)
    second = program(x=b)
    np.testing.assert_array_equal(first["y"], np.maximum(2 * a, 0))
    np.testing.assert_array_equal(first["z"], np.maximum(4 * a, 0))
    np.testing.assert_array_equal(second["z"], np.maximum(4 * b, 0))
    assert not np.shares_memory(first["z"], second["z"])
    assert first["z"].flags.writeable


def test_a_result_passed_back_in_is_read_not_overwritten(device: dmlpy.Device) -> None:
    desc = linear(2.0, 1.0, BIG)
    a = big(3)
    once = dmlpy.run(desc, device=device, InputTensor=a)
    twice = dmlpy.run(desc, device=device, InputTensor=once)
    np.testing.assert_array_equal(once, 2 * a + 1)
    np.testing.assert_array_equal(twice, 2 * (2 * a + 1) + 1)


def test_the_input_array_is_not_kept_after_the_call(device: dmlpy.Device) -> None:
    program = scale_program(device)
    a = big(4)
    program(x=a)
    a[...] = 7  # the buffers hold their own memory again: nothing reads a later
    np.testing.assert_array_equal(program(x=np.ascontiguousarray(big(5)[:, :, ::-1]))["y"], np.maximum(2 * big(5)[:, :, ::-1], 0))


def read_only(x: np.ndarray) -> np.ndarray:
    y = x.copy()
    y.setflags(write=False)
    return y


INPUT_KINDS = [
    ("a non-contiguous view (copied)", lambda x: np.repeat(x, 2, axis=3)[..., ::2]),
    ("memory 4 bytes off the 16-byte alignment (copied)", lambda x: np.frombuffer(np.concatenate([np.zeros(1, np.float32), x.ravel()]).tobytes(), np.float32, offset=4).reshape(BIG)),
    ("float64 values that float32 holds (copied)", lambda x: x.astype(np.float64)),
    ("a read-only array (lent: inputs are only read)", read_only),
]  # fmt: skip


@pytest.mark.parametrize(("what", "make"), INPUT_KINDS, ids=[c[0] for c in INPUT_KINDS])
def test_every_kind_of_input_array_gives_the_same_answer_lent_or_copied(device: dmlpy.Device, what: str, make: Any) -> None:
    program = scale_program(device)
    for seed in (6, 7):  # alternating with a lent array: the buffers' memory changes at every call
        x = big(seed)
        np.testing.assert_array_equal(program(x=make(x))["z"], np.maximum(4 * x, 0))
        np.testing.assert_array_equal(program(x=x)["z"], np.maximum(4 * x, 0))


def test_a_call_that_fails_on_its_second_input_leaves_the_next_call_correct(device: dmlpy.Device) -> None:
    builder = GraphBuilder(device)
    program = builder.compile({"s": builder.add(builder.input("a", np.float32, BIG), builder.input("b", np.float32, BIG))})
    a, b = big(8), big(9)
    with pytest.raises(ValueError):
        program(a=a, b=np.ones((2, 2), np.float32))  # a was lent before b failed
    np.testing.assert_array_equal(program(a=b, b=np.ascontiguousarray(a[..., ::-1]))["s"], b + a[..., ::-1])
