"""Every public function answers bad input with DmlError, or a TypeError/ValueError that names the argument to change.

Never a Python IndexError, ZeroDivisionError, AttributeError, KeyError, MemoryError or NumPy's
own errors from deep inside. Each row calls one public function or method with one bad
argument and names the text (the argument, usually) the message must contain.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from conftest import assert_rule

import dmlpy
from dmlpy import (
    DML_ACTIVATION_RELU_OPERATOR_DESC,
    DML_TENSOR_DATA_TYPE,
    DML_TENSOR_FLAGS,
    HRESULT,
    Buffer,
    DmlError,
    GraphBuilder,
    buffer_tensor,
)
from dmlpy.operators import pooling

DT = DML_TENSOR_DATA_TYPE
SIZES = [1, 1, 4, 4]
ALLOWED = (DmlError, TypeError, ValueError)


def relu(**kwargs: Any) -> DML_ACTIVATION_RELU_OPERATOR_DESC:
    return DML_ACTIVATION_RELU_OPERATOR_DESC(buffer_tensor(DT.FLOAT32, SIZES, **kwargs), buffer_tensor(DT.FLOAT32, SIZES))


def builder() -> tuple[GraphBuilder, Any]:
    g = GraphBuilder(backend="numpy")
    return g, g.input("x", "float32", (1, 2, 4, 4))


def device() -> dmlpy.Device:
    return dmlpy.create_device(backend="numpy")


def table() -> Any:
    d = device()
    return d.create_binding_table(d.compile_operator(d.create_operator(relu())))


CASES = [
    # --- size helpers
    pytest.param(lambda: dmlpy.average_pooling_output_sizes(SIZES, [2]), "window_size", id="average_pooling_output_sizes with a one-entry window for two spatial dims"),
    pytest.param(lambda: dmlpy.average_pooling_output_sizes(SIZES, [2, 2], [1]), "strides", id="average_pooling_output_sizes with one stride for two spatial dims"),
    pytest.param(lambda: dmlpy.average_pooling_output_sizes(SIZES, [2, 2], None, [0]), "start_padding", id="average_pooling_output_sizes with a short start_padding"),
    pytest.param(lambda: dmlpy.average_pooling_output_sizes(SIZES, [2, 2], None, None, [0]), "end_padding", id="average_pooling_output_sizes with a short end_padding"),
    pytest.param(lambda: dmlpy.average_pooling_output_sizes(SIZES, [2, 2], dilations=[1]), "dilations", id="average_pooling_output_sizes with a short dilations"),
    pytest.param(lambda: dmlpy.average_pooling_output_sizes([1, 1], [2, 2]), "input_sizes", id="average_pooling_output_sizes of a 2-D input"),
    pytest.param(lambda: dmlpy.average_pooling_output_sizes(None, [2, 2]), "input_sizes", id="average_pooling_output_sizes of None"),
    pytest.param(lambda: dmlpy.average_pooling_output_sizes(SIZES, [2.5, 2]), "window_size", id="average_pooling_output_sizes with a float window"),
    pytest.param(lambda: dmlpy.average_pooling_output_sizes(SIZES, [5, 2]), "window_size", id="average_pooling_output_sizes with a window larger than the input"),
    pytest.param(lambda: dmlpy.average_pooling_output_sizes(SIZES, [2, 2], {"a": 1}), "strides", id="average_pooling_output_sizes with a dict of strides"),
    pytest.param(lambda: dmlpy.average_pooling_output_sizes(SIZES, [2, 2], [1, -1]), "strides", id="average_pooling_output_sizes with a negative stride"),
    pytest.param(lambda: pooling.pooled_size(4, 2, 0, 0, 0), "stride", id="pooled_size with stride 0"),
    pytest.param(lambda: pooling.ceil_shape_allowed(4, 2, 0, 0, 0), "stride", id="ceil_shape_allowed with stride 0"),
    pytest.param(lambda: dmlpy.forward_output_size(4, 2, 0), "stride", id="forward_output_size with stride 0"),
    pytest.param(lambda: dmlpy.forward_output_size(4, 2, 1, -1), "start", id="forward_output_size with negative padding"),
    pytest.param(lambda: dmlpy.forward_output_size(None, 2), "size", id="forward_output_size of None"),
    pytest.param(lambda: dmlpy.forward_output_size(4, 9), "kernel", id="forward_output_size with a kernel larger than the input"),
    pytest.param(lambda: dmlpy.backward_output_size(4, 2, 0), "stride", id="backward_output_size with stride 0"),
    pytest.param(lambda: dmlpy.backward_output_size(4, 0), "kernel", id="backward_output_size with kernel 0"),
    pytest.param(lambda: dmlpy.backward_output_size_range(4, 2, 1, 0, 0, 0), "dilation", id="backward_output_size_range with dilation 0"),
    pytest.param(lambda: dmlpy.backward_output_size_range(4, 2, 1.0), "stride", id="backward_output_size_range with a float stride"),
    pytest.param(lambda: dmlpy.convolution_output_sizes(SIZES, [1, 1, 2, 2], [1]), "strides", id="convolution_output_sizes with one stride for two spatial dims"),
    pytest.param(lambda: dmlpy.convolution_output_sizes(SIZES, [1, 1, 2, 2], [0, 1]), "strides", id="convolution_output_sizes with stride 0"),
    pytest.param(lambda: dmlpy.convolution_output_sizes(SIZES, [1, 1, 2, 2], output_padding=[0]), "output_padding", id="convolution_output_sizes with a short output_padding"),
    pytest.param(lambda: dmlpy.convolution_output_sizes(SIZES, None), "filter_sizes", id="convolution_output_sizes without a filter"),
    pytest.param(lambda: dmlpy.convolution_output_sizes(SIZES, [1, 1, 2, 2], group_count=0), "group_count", id="convolution_output_sizes with group_count 0"),
    pytest.param(lambda: dmlpy.convolution_output_sizes(SIZES, [1, 1, 2, 2], direction=7), "direction", id="convolution_output_sizes with direction 7"),
    pytest.param(lambda: dmlpy.space_to_depth_output_sizes(SIZES, 0), "block_size", id="space_to_depth_output_sizes with block size 0"),
    pytest.param(lambda: dmlpy.space_to_depth_output_sizes(None, 2), "input_sizes", id="space_to_depth_output_sizes of None"),
    pytest.param(lambda: dmlpy.depth_to_space_output_sizes([1, 4, 2, 2], 2.0), "block_size", id="depth_to_space_output_sizes with a float block size"),
    pytest.param(lambda: dmlpy.tensorflow_space_to_depth(None, 2), "shape", id="tensorflow_space_to_depth of None"),
    # --- tensors
    pytest.param(lambda: dmlpy.calc_buffer_tensor_size(DT.FLOAT32, [1, -2]), "sizes", id="calc_buffer_tensor_size with a negative size"),
    pytest.param(lambda: dmlpy.calc_buffer_tensor_size(DT.FLOAT32, [1, 2], [1]), "strides", id="calc_buffer_tensor_size with one stride for two sizes"),
    pytest.param(lambda: dmlpy.calc_buffer_tensor_size("nonsense", [1]), "data_type", id="calc_buffer_tensor_size of an unknown type name"),
    pytest.param(lambda: dmlpy.buffer_tensor(DT.FLOAT32, None), "sizes", id="buffer_tensor without sizes"),
    pytest.param(lambda: dmlpy.buffer_tensor(DT.FLOAT32, [1, 2.5]), "sizes", id="buffer_tensor with a float size"),
    pytest.param(lambda: dmlpy.buffer_tensor("complex64", [1]), "dtype", id="buffer_tensor of complex64"),
    pytest.param(lambda: dmlpy.packed_strides(None), "sizes", id="packed_strides of None"),
    pytest.param(lambda: dmlpy.nhwc_strides([1, "a", 2]), "sizes", id="nhwc_strides with a string size"),
    # --- device, run, validate
    pytest.param(lambda: dmlpy.create_device(backend="numpy", threads=-1), "threads", id="create_device with -1 threads"),
    pytest.param(lambda: dmlpy.create_device(0x1234), "feature_level", id="create_device at an unknown feature level"),
    pytest.param(lambda: dmlpy.validate(relu(), feature_level=99), "feature_level", id="validate at an unknown feature level"),
    pytest.param(lambda: dmlpy.run(relu(), device="numpy", InputTensor=np.zeros(SIZES)), "device", id="run with a string for a device"),
    pytest.param(lambda: dmlpy.run(relu(), backend="numpy", InputTensor=None), "InputTensor", id="run with None for an input"),
    pytest.param(lambda: device().create_buffer(-1), "size_in_bytes", id="create_buffer of -1 bytes"),
    pytest.param(lambda: device().create_operator_initializer(42), "operators", id="create_operator_initializer of an int"),
    pytest.param(lambda: device().create_command_recorder().record_dispatch(None, None, None), "command_list", id="record_dispatch of None"),
    pytest.param(lambda: device().execute(None), "command_list", id="execute of None"),
    # --- buffers and bindings
    pytest.param(lambda: Buffer("a"), "size_in_bytes", id="a Buffer of a string size"),
    pytest.param(lambda: Buffer(64).view(None), "tensor", id="Buffer.view of None"),
    pytest.param(lambda: Buffer(64).read(buffer_tensor(DT.FLOAT32, [2]), offset="a"), "offset", id="Buffer.read at a string offset"),
    pytest.param(lambda: Buffer(64).upload(np.zeros(4, np.float32), offset=None), "offset", id="Buffer.upload at offset None"),
    pytest.param(lambda: Buffer.from_array(None), "array", id="Buffer.from_array of None"),
    pytest.param(lambda: Buffer(64).upload([None, 1]), "array", id="Buffer.upload of Python objects"),
    pytest.param(lambda: dmlpy.buffer_binding(42), "buffer", id="buffer_binding of an int"),
    pytest.param(lambda: dmlpy.buffer_binding(Buffer(64), "a"), "offset", id="buffer_binding at a string offset"),
    pytest.param(lambda: dmlpy.array_binding(None), "bindings", id="array_binding of None"),
    pytest.param(lambda: table().reset(42), "desc", id="BindingTable.reset to an int"),
    # --- graphs
    pytest.param(lambda: dmlpy.constant_node(None), "data", id="constant_node of None"),
    pytest.param(lambda: dmlpy.constant_node(np.array([object()])), "data", id="constant_node of Python objects (their bytes would be pointers)"),
    pytest.param(lambda: dmlpy.graph_desc(1, 1, None, [], []), "nodes", id="graph_desc without a node list"),
    # --- the builder
    pytest.param(lambda: GraphBuilder(device="numpy"), "device", id="GraphBuilder on a string for a device"),
    pytest.param(lambda: builder()[0].input("y", "float32", None), "sizes", id="GraphBuilder.input without sizes"),
    pytest.param(lambda: builder()[0].average_pooling(np.zeros((1, 1, 4, 4)), (2, 2)), "'x'", id="GraphBuilder.average_pooling of an array"),
    pytest.param(lambda: builder()[0].average_pooling(builder()[1], (2, 2)), "'x'", id="GraphBuilder.average_pooling of another builder's tensor"),
    pytest.param(lambda: (lambda g, x: g.average_pooling(x, None))(*builder()), "'window'", id="GraphBuilder.average_pooling without a window"),
    pytest.param(lambda: (lambda g, x: g.average_pooling(x, (2, 2), output_sizes=5))(*builder()), "output_sizes", id="GraphBuilder.average_pooling with an int output_sizes"),
    pytest.param(lambda: (lambda g, x: g.convolution(x, None))(*builder()), "'filter'", id="GraphBuilder.convolution without a filter"),
    pytest.param(lambda: (lambda g, x: g.convolution(x, g.input("w", "float32", (2, 2, 1, 1)), output_sizes="abc"))(*builder()), "output_sizes",
                 id="GraphBuilder.convolution with a string output_sizes"),
    pytest.param(lambda: (lambda g, x: g.add_operator(None, {"InputTensor": x}))(*builder()), "desc", id="GraphBuilder.add_operator of None"),
    pytest.param(lambda: builder()[0].add_operator(DML_ACTIVATION_RELU_OPERATOR_DESC(), None), "inputs", id="GraphBuilder.add_operator without inputs"),
    pytest.param(lambda: (lambda g, x: g.add_operator(DML_ACTIVATION_RELU_OPERATOR_DESC(), {"Bogus": x}))(*builder()), "Bogus", id="GraphBuilder.add_operator with an unknown field"),
    pytest.param(lambda: builder()[0].add_operator(DML_ACTIVATION_RELU_OPERATOR_DESC(), {"InputTensor": 3}), "InputTensor", id="GraphBuilder.add_operator with an int input"),
    pytest.param(lambda: (lambda g, x: g.compile([1]))(*builder()), "outputs", id="GraphBuilder.compile of an int output"),
    pytest.param(lambda: (lambda g, x: g.compile(g.relu(x)))(*builder()), "outputs", id="GraphBuilder.compile of a bare Tensor"),
    pytest.param(lambda: (lambda g, x: g.compile({"y": g.relu(x)})(x=np.array([object()])))(*builder()), "x", id="a graph program called with objects"),
]  # fmt: skip


@pytest.mark.parametrize(("call", "named"), CASES)
def test_a_public_function_refuses_bad_input_with_an_error_that_names_what_to_change(call: Callable[[], Any], named: str) -> None:
    with pytest.raises(ALLOWED) as caught:
        call()
    assert named in str(caught.value), f"{type(caught.value).__name__}: {caught.value}"


# ---------------------------------------------------------------------------------------
# Buffers larger than the host: E_OUTOFMEMORY with RESOURCE.OUT_OF_MEMORY, as CreateCommittedResource

HUGE = [
    pytest.param(2**62, id="4 EiB (beyond any address space NumPy can map)"),
    pytest.param(2**64 - 4, id="the largest valid TotalTensorSizeInBytes (beyond sys.maxsize)"),
]


@pytest.mark.parametrize("size", HUGE)
def test_a_buffer_larger_than_the_host_fails_with_e_outofmemory_naming_it(size: int) -> None:
    with pytest.raises(DmlError) as caught:
        device().create_buffer(size, "weights")
    assert caught.value.hresult == HRESULT.E_OUTOFMEMORY == 0x8007000E
    assert_rule(caught.value, "RESOURCE.OUT_OF_MEMORY", "Buffer('weights')")


@pytest.mark.parametrize("size", HUGE)
@pytest.mark.parametrize("owned", [False, True], ids=["an input", "an OWNED_BY_DML input"])
def test_run_with_a_huge_but_valid_total_tensor_size_fails_with_e_outofmemory_naming_the_tensor(backend: str, size: int, owned: bool) -> None:
    flags = DML_TENSOR_FLAGS.OWNED_BY_DML if owned else DML_TENSOR_FLAGS.NONE
    desc = relu(total_size=size, flags=flags)
    assert dmlpy.validate(desc).ok  # the desc itself is valid: only the allocation fails
    with pytest.raises(DmlError) as caught:
        dmlpy.run(desc, backend=backend, InputTensor=np.ones(SIZES, np.float32))
    assert caught.value.hresult == HRESULT.E_OUTOFMEMORY
    assert_rule(caught.value, "RESOURCE.OUT_OF_MEMORY", "Buffer('InputTensor')")


def test_sizes_beyond_the_address_space_are_refused_before_numpy_sees_them() -> None:
    with pytest.raises(DmlError) as caught:
        Buffer(sys.maxsize)
    assert caught.value.hresult == HRESULT.E_OUTOFMEMORY


# ---------------------------------------------------------------------------------------
# Every argument of every sizing, tensor and builder function, each replaced by each bad value

BAD_VALUES = [None, -1, 0, 2**70, 1.5, "a", [], [1], [1, 2], [1, 1, 0, 0], [1, 1, -3, 4], (1, 1, 2**40, 2), {"a": 1}, True, np.array([1, 1, 4, 4]), object()]


def _pool(*args: Any) -> Any:
    g, x = builder()
    return g.average_pooling(x, *args)


def _conv(backward: bool, *args: Any) -> Any:
    g, x = builder()
    keywords = ("strides", "dilations", "start_padding", "end_padding", "groups", "mode", "activation", "output_sizes", "output_padding")
    call = g.conv_transpose if backward else g.convolution
    kwargs = dict(zip(keywords, args))
    if not backward:
        kwargs.pop("output_padding")
    return call(x, g.input("w", "float32", (2, 2, 1, 1)), **kwargs)


def _add(desc: Any, inputs: Any) -> Any:
    g, x = builder()
    if isinstance(desc, str) and desc == "a RELU desc":
        desc = DML_ACTIVATION_RELU_OPERATOR_DESC(OutputTensor=buffer_tensor(DT.FLOAT32, [1, 2, 4, 4]))
    return g.add_operator(desc, {"InputTensor": x} if isinstance(inputs, str) and inputs == "x" else inputs)


SWEEP = [
    pytest.param(dmlpy.average_pooling_output_sizes, ([1, 1, 4, 4], [2, 2], [1, 1], [0, 0], [0, 0], [1, 1]), id="average_pooling_output_sizes"),
    pytest.param(dmlpy.forward_output_size, (4, 2, 1, 0, 0, 1, 0), id="forward_output_size"),
    pytest.param(dmlpy.backward_output_size, (4, 2, 1, 0, 0, 1, 0), id="backward_output_size"),
    pytest.param(dmlpy.backward_output_size_range, (4, 2, 1, 0, 0, 1, 0), id="backward_output_size_range"),
    pytest.param(dmlpy.convolution_output_sizes, ([1, 1, 4, 4], [1, 1, 2, 2], [1, 1], [1, 1], [0, 0], [0, 0], [0, 0], 1, 0), id="convolution_output_sizes"),
    pytest.param(dmlpy.space_to_depth_output_sizes, ([1, 1, 4, 4], 2), id="space_to_depth_output_sizes"),
    pytest.param(dmlpy.depth_to_space_output_sizes, ([1, 4, 4, 4], 2), id="depth_to_space_output_sizes"),
    pytest.param(dmlpy.tensorflow_space_to_depth, ((1, 4, 4, 1), 2, "NHWC"), id="tensorflow_space_to_depth"),
    pytest.param(dmlpy.calc_buffer_tensor_size, (DT.FLOAT32, [1, 1, 4, 4], None), id="calc_buffer_tensor_size"),
    pytest.param(dmlpy.buffer_tensor, (DT.FLOAT32, [1, 1, 4, 4], None), id="buffer_tensor"),
    pytest.param(dmlpy.packed_strides, ([1, 1, 4, 4],), id="packed_strides"),
    pytest.param(dmlpy.nhwc_strides, ([1, 1, 4, 4],), id="nhwc_strides"),
    pytest.param(pooling.pooled_size, (4, 2, 1, 0, 0, 1), id="pooled_size"),
    pytest.param(lambda size, name: Buffer(size, name), (16, "b"), id="Buffer"),
    pytest.param(lambda tensor, offset: Buffer(64).read(tensor, offset), (buffer_tensor(DT.FLOAT32, [1, 1, 2, 2]), 0), id="Buffer.read"),
    pytest.param(lambda array, offset: Buffer(64).upload(array, offset), (np.zeros(4, np.float32), 0), id="Buffer.upload"),
    pytest.param(dmlpy.buffer_binding, (Buffer(64), 0, 16), id="buffer_binding"),
    pytest.param(dmlpy.validate, (relu(), dmlpy.DML_FEATURE_LEVEL.LEVEL_6_4), id="validate"),
    pytest.param(lambda x: dmlpy.run(relu(), backend="numpy", InputTensor=x), (np.zeros(SIZES, np.float32),), id="run"),
    pytest.param(lambda level, threads: dmlpy.create_device(level, backend="numpy", threads=threads), (dmlpy.DML_FEATURE_LEVEL.LEVEL_6_4, 0), id="create_device"),
    pytest.param(lambda name, dtype, sizes, strides: builder()[0].input(name, dtype, sizes, strides), ("y", "float32", (1, 2, 4, 4), None), id="GraphBuilder.input"),
    pytest.param(_pool, ((2, 2), (1, 1), (0, 0), (0, 0), None), id="GraphBuilder.average_pooling"),
    pytest.param(lambda *args: _conv(False, *args), (None, None, None, None, 1, 1, None, None, None), id="GraphBuilder.convolution"),
    pytest.param(lambda *args: _conv(True, *args), (None, None, None, None, 1, 1, None, None, None), id="GraphBuilder.conv_transpose"),
    pytest.param(lambda block, order: (lambda g, x: g.space_to_depth(x, block, order))(*builder()), (2, 0), id="GraphBuilder.space_to_depth"),
    pytest.param(lambda desc, inputs: _add(desc, inputs), ("a RELU desc", "x"), id="GraphBuilder.add_operator"),
]  # fmt: skip


@pytest.mark.filterwarnings("ignore:Data type alias:DeprecationWarning")  # NumPy's note on np.dtype("a")
@pytest.mark.parametrize(("function", "good"), SWEEP)
def test_no_bad_argument_value_makes_a_public_function_leak_a_python_error(function: Callable[..., Any], good: tuple[Any, ...]) -> None:
    function(*good)  # the good arguments work, so each failure below is the bad value's
    for position in range(len(good)):
        for bad in BAD_VALUES:
            arguments = list(good)
            arguments[position] = bad
            try:
                function(*arguments)
            except ALLOWED:
                pass
