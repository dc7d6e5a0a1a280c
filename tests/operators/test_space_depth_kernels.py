"""Space/depth kernels: documentation examples, TensorFlow layouts, property tests, the native re-checks.

Every kernel test runs on both backends (the ``backend``/``device`` fixtures of conftest.py).
The oracles are independent of dmlpy's code:

* DirectML's worked examples ({1,2,4,6} <-> {1,8,2,3}, both orders) and the three TensorFlow
  space_to_depth examples of the seed document, typed in from the pages;
* onnxruntime's SpaceToDepth and DepthToSpace (DCR and CRD), run on an index tensor so that
  they say, for every output element, which input element it is; that permutation then
  judges any data type, bit for bit (this is data movement: no rounding anywhere).

Property tests also check native == NumPy bit for bit and that depth-to-space undoes
space-to-depth.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from conftest import assert_rule, native_device
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dmlpy
from dmlpy import D3D12_RESOURCE_BARRIER
from dmlpy import (
    DML_DEPTH_SPACE_ORDER,
    DML_DEPTH_TO_SPACE1_OPERATOR_DESC,
    DML_DEPTH_TO_SPACE_OPERATOR_DESC,
    DML_SPACE_TO_DEPTH1_OPERATOR_DESC,
    DML_SPACE_TO_DEPTH_OPERATOR_DESC,
    DML_TENSOR_DATA_TYPE,
    buffer_tensor,
)

DT = DML_TENSOR_DATA_TYPE
DCR = DML_DEPTH_SPACE_ORDER.DEPTH_COLUMN_ROW
CRD = DML_DEPTH_SPACE_ORDER.COLUMN_ROW_DEPTH
ALL_TYPES = [
    np.float32,
    np.float16,
    np.float64,
    np.uint8,
    np.int8,
    np.uint16,
    np.int16,
    np.uint32,
    np.int32,
    np.uint64,
    np.int64,
]

# ---------------------------------------------------------------------------------------
# The DirectML examples (ns-directml-dml_space_to_depth1_operator_desc, ..._depth_to_space1_...)

DOC_DEPTH = [  # {1, 8, 2, 3}: the depth side of both examples
    [[0, 1, 2], [3, 4, 5]],
    [[9, 10, 11], [12, 13, 14]],
    [[18, 19, 20], [21, 22, 23]],
    [[27, 28, 29], [30, 31, 32]],
    [[36, 37, 38], [39, 40, 41]],
    [[45, 46, 47], [48, 49, 50]],
    [[54, 55, 56], [57, 58, 59]],
    [[63, 64, 65], [66, 67, 68]],
]
DOC_SPACE_DCR = [  # {1, 2, 4, 6}, Example 1 (DEPTH_COLUMN_ROW)
    [[0, 18, 1, 19, 2, 20], [36, 54, 37, 55, 38, 56], [3, 21, 4, 22, 5, 23], [39, 57, 40, 58, 41, 59]],
    [[9, 27, 10, 28, 11, 29], [45, 63, 46, 64, 47, 65], [12, 30, 13, 31, 14, 32], [48, 66, 49, 67, 50, 68]],
]
DOC_SPACE_CRD = [  # {1, 2, 4, 6}, Example 2 (COLUMN_ROW_DEPTH)
    [[0, 9, 1, 10, 2, 11], [18, 27, 19, 28, 20, 29], [3, 12, 4, 13, 5, 14], [21, 30, 22, 31, 23, 32]],
    [[36, 45, 37, 46, 38, 47], [54, 63, 55, 64, 56, 65], [39, 48, 40, 49, 41, 50], [57, 66, 58, 67, 59, 68]],
]


def doc(values: list[Any]) -> np.ndarray:
    return np.array([values], dtype=np.uint32)


@pytest.mark.doc_example
@pytest.mark.parametrize(
    ("make", "space"),
    [
        pytest.param(
            lambda x, y: DML_SPACE_TO_DEPTH_OPERATOR_DESC(x, y, 2),
            DOC_SPACE_DCR,
            id="SPACE_TO_DEPTH (no Order: DEPTH_COLUMN_ROW)",
        ),
        pytest.param(
            lambda x, y: DML_SPACE_TO_DEPTH1_OPERATOR_DESC(x, y, 2, DCR),
            DOC_SPACE_DCR,
            id="SPACE_TO_DEPTH1 DEPTH_COLUMN_ROW (example 1)",
        ),
        pytest.param(
            lambda x, y: DML_SPACE_TO_DEPTH1_OPERATOR_DESC(x, y, 2, CRD),
            DOC_SPACE_CRD,
            id="SPACE_TO_DEPTH1 COLUMN_ROW_DEPTH (example 2)",
        ),
    ],
)
def test_directml_space_to_depth_example(device: dmlpy.Device, make: Any, space: list[Any]) -> None:
    value = make(buffer_tensor(DT.UINT32, (1, 2, 4, 6)), buffer_tensor(DT.UINT32, (1, 8, 2, 3)))
    y = dmlpy.run(value, device=device, InputTensor=doc(space))
    assert y.dtype == np.uint32
    np.testing.assert_array_equal(y, doc(DOC_DEPTH))


@pytest.mark.doc_example
@pytest.mark.parametrize(
    ("make", "space"),
    [
        pytest.param(
            lambda x, y: DML_DEPTH_TO_SPACE_OPERATOR_DESC(x, y, 2),
            DOC_SPACE_DCR,
            id="DEPTH_TO_SPACE (no Order: DEPTH_COLUMN_ROW)",
        ),
        pytest.param(
            lambda x, y: DML_DEPTH_TO_SPACE1_OPERATOR_DESC(x, y, 2, DCR),
            DOC_SPACE_DCR,
            id="DEPTH_TO_SPACE1 DEPTH_COLUMN_ROW",
        ),
        pytest.param(
            lambda x, y: DML_DEPTH_TO_SPACE1_OPERATOR_DESC(x, y, 2, CRD),
            DOC_SPACE_CRD,
            id="DEPTH_TO_SPACE1 COLUMN_ROW_DEPTH",
        ),
    ],
)
def test_directml_depth_to_space_example(device: dmlpy.Device, make: Any, space: list[Any]) -> None:
    value = make(buffer_tensor(DT.UINT32, (1, 8, 2, 3)), buffer_tensor(DT.UINT32, (1, 2, 4, 6)))
    np.testing.assert_array_equal(dmlpy.run(value, device=device, InputTensor=doc(DOC_DEPTH)), doc(space))


@pytest.mark.doc_example
@pytest.mark.parametrize("order", [DCR, CRD], ids=["DCR", "CRD"])
def test_directml_example_through_nhwc_and_padded_strides(device: dmlpy.Device, order: DML_DEPTH_SPACE_ORDER) -> None:
    """The same example with an NHWC input and a row-padded output: the layout changes nothing logical."""
    space = DOC_SPACE_DCR if order == DCR else DOC_SPACE_CRD
    value = DML_SPACE_TO_DEPTH1_OPERATOR_DESC(
        buffer_tensor(DT.UINT32, (1, 2, 4, 6), dmlpy.nhwc_strides((1, 2, 4, 6))),
        buffer_tensor(DT.UINT32, (1, 8, 2, 3), (80, 10, 5, 1)),
        2,
        order,
    )
    np.testing.assert_array_equal(dmlpy.run(value, device=device, InputTensor=doc(space)), doc(DOC_DEPTH))


@pytest.mark.parametrize(
    "make",
    [DML_SPACE_TO_DEPTH1_OPERATOR_DESC, DML_DEPTH_TO_SPACE1_OPERATOR_DESC],
    ids=["SPACE_TO_DEPTH1", "DEPTH_TO_SPACE1"],
)
@pytest.mark.parametrize("order", [DCR, CRD], ids=["DCR", "CRD"])
def test_block_size_1_is_the_identity(
    device: dmlpy.Device, make: Any, order: DML_DEPTH_SPACE_ORDER, rng: np.random.Generator
) -> None:
    sizes = (2, 3, 5, 7)
    x = rng.integers(-1000, 1000, size=sizes).astype(np.int16)
    value = make(buffer_tensor(DT.INT16, sizes), buffer_tensor(DT.INT16, sizes, dmlpy.nhwc_strides(sizes)), 1, order)
    np.testing.assert_array_equal(dmlpy.run(value, device=device, InputTensor=x), x)


# ---------------------------------------------------------------------------------------
# TensorFlow (seed document: tf.nn.space_to_depth with data_format "NHWC", block_size 2)

TF_EXAMPLES = [
    pytest.param([[[[1], [2]], [[3], [4]]]], [[[[1, 2, 3, 4]]]], id="[1,2,2,1] -> [1,1,1,4]"),
    pytest.param(
        [[[[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [10, 11, 12]]]],
        [[[[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]]]],
        id="[1,2,2,3] -> [1,1,1,12]",
    ),
    pytest.param(
        [[[[1], [2], [5], [6]], [[3], [4], [7], [8]], [[9], [10], [13], [14]], [[11], [12], [15], [16]]]],
        [[[[1, 2, 3, 4], [5, 6, 7, 8]], [[9, 10, 11, 12], [13, 14, 15, 16]]]],
        id="[1,4,4,1] -> [1,2,2,4]",
    ),
]


def run_raw(
    device: dmlpy.Device, desc: Any, data: np.ndarray, out_shape: tuple[int, ...], out_dtype: Any
) -> np.ndarray:
    """DirectML's pipeline on raw bytes: the input buffer holds ``data``'s bytes as they are, and the
    output buffer's bytes are returned as ``out_shape``. No transposes: the layout is in the strides."""
    compiled = device.compile_operator(device.create_operator(desc))
    recorder = device.create_command_recorder()
    command_list = device.create_command_list()
    initializer = device.create_operator_initializer([compiled])
    recorder.record_dispatch(command_list, initializer, device.create_binding_table(initializer))
    command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav()])  # the dispatch after the initializer reads what it wrote
    x_buffer = dmlpy.Buffer.from_array(data)
    y_tensor = compiled.output_slots()[0].tensor
    y_buffer = device.create_buffer(y_tensor.TotalTensorSizeInBytes)
    table = device.create_binding_table(compiled)
    table.bind_inputs([dmlpy.buffer_binding(x_buffer)])
    table.bind_outputs([dmlpy.buffer_binding(y_buffer)])
    recorder.record_dispatch(command_list, compiled, table)
    command_list.close()
    device.execute(command_list)
    count = math.prod(out_shape)
    return np.frombuffer(y_buffer.data, dtype=out_dtype, count=count).reshape(out_shape)


@pytest.mark.doc_example
@pytest.mark.parametrize(("x", "expected"), TF_EXAMPLES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8], ids=["float32", "int32", "uint8"])
def test_tensorflow_nhwc_examples_run_as_one_operator_on_the_nhwc_bytes(
    device: dmlpy.Device, x: list[Any], expected: list[Any], dtype: Any
) -> None:
    x_tf = np.array(x, dtype=dtype)
    op = dmlpy.tensorflow_space_to_depth(x_tf.shape, 2, "NHWC", dtype)
    assert op.output_shape == np.array(expected).shape
    np.testing.assert_array_equal(
        run_raw(device, op.desc, x_tf, op.output_shape, dtype), np.array(expected, dtype=dtype)
    )
    # the same through dmlpy.run, with the helper's (copy-free) views
    np.testing.assert_array_equal(
        op.tf_output(dmlpy.run(op.desc, device=device, InputTensor=op.logical_input(x_tf))),
        np.array(expected, dtype=dtype),
    )


@pytest.mark.doc_example
@pytest.mark.parametrize(("x", "expected"), TF_EXAMPLES)
def test_tensorflow_depth_to_space_inverts_the_seed_examples(
    device: dmlpy.Device, x: list[Any], expected: list[Any]
) -> None:
    y_tf = np.array(expected, dtype=np.float32)
    op = dmlpy.tensorflow_depth_to_space(y_tf.shape, 2, "NHWC")
    np.testing.assert_array_equal(
        run_raw(device, op.desc, y_tf, op.output_shape, np.float32), np.array(x, dtype=np.float32)
    )


@pytest.mark.doc_example
@pytest.mark.parametrize(("x", "expected"), TF_EXAMPLES)
def test_tensorflow_nchw_gives_the_seed_examples_transposed(
    device: dmlpy.Device, x: list[Any], expected: list[Any]
) -> None:
    x_nchw = np.ascontiguousarray(np.array(x, dtype=np.float32).transpose(0, 3, 1, 2))
    op = dmlpy.tensorflow_space_to_depth(x_nchw.shape, 2, "NCHW")
    got = run_raw(device, op.desc, x_nchw, op.output_shape, np.float32)
    np.testing.assert_array_equal(got.transpose(0, 2, 3, 1), np.array(expected, dtype=np.float32))


def vect_c_to_nchw(x: np.ndarray) -> np.ndarray:
    """TensorFlow's NCHW_VECT_C [N, C/4, H, W, 4] -> logical NCHW (channel c = 4 * (c div 4) + c mod 4)."""
    n, groups, h, w, _ = x.shape
    return x.transpose(0, 1, 4, 2, 3).reshape(n, groups * 4, h, w)


def nchw_to_vect_c(y: np.ndarray) -> np.ndarray:
    n, c, h, w = y.shape
    return y.reshape(n, c // 4, 4, h, w).transpose(0, 1, 3, 4, 2)


@pytest.mark.parametrize(
    ("shape", "block", "to_depth", "as_int32"),
    [
        pytest.param((1, 2, 4, 6, 4), 2, True, False, id="space-to-depth, N = 1, lanes on the batch axis"),
        pytest.param((1, 1, 9, 3, 4), 3, True, False, id="space-to-depth, N = 1, B = 3"),
        pytest.param((3, 2, 4, 6, 4), 2, True, True, id="space-to-depth, N = 3, lanes as one INT32"),
        pytest.param((1, 8, 2, 3, 4), 2, False, False, id="depth-to-space, N = 1, lanes on the batch axis"),
        pytest.param((2, 8, 2, 3, 4), 2, False, True, id="depth-to-space, N = 2, lanes as one INT32"),
    ],
)
def test_tensorflow_nchw_vect_c_matches_onnxruntime_on_the_logical_tensor(
    device: dmlpy.Device, shape: tuple[int, ...], block: int, to_depth: bool, as_int32: bool, rng: np.random.Generator
) -> None:
    x = rng.integers(-128, 128, size=shape).astype(np.int8)
    make = dmlpy.tensorflow_space_to_depth if to_depth else dmlpy.tensorflow_depth_to_space
    op = make(shape, block, "NCHW_VECT_C", np.int8, vect_c_as_int32=as_int32)
    expected = nchw_to_vect_c(onnxruntime_run(to_depth, DCR, vect_c_to_nchw(x), block))
    np.testing.assert_array_equal(run_raw(device, op.desc, x, op.output_shape, np.int8), expected)
    np.testing.assert_array_equal(
        op.tf_output(dmlpy.run(op.desc, device=device, InputTensor=op.logical_input(x))), expected
    )


# ---------------------------------------------------------------------------------------
# onnxruntime as the oracle


def onnxruntime_run(to_depth: bool, order: DML_DEPTH_SPACE_ORDER, x: np.ndarray, block: int) -> np.ndarray:
    """onnxruntime's SpaceToDepth (DCR only) or DepthToSpace (DCR or CRD) on ``x``."""
    import onnxruntime as ort
    from onnx import helper

    op = "SpaceToDepth" if to_depth else "DepthToSpace"
    attributes: dict[str, Any] = {"blocksize": block}
    if not to_depth:
        attributes["mode"] = "DCR" if order == DCR else "CRD"
    element = helper.np_dtype_to_tensor_dtype(x.dtype)
    graph = helper.make_graph(
        [helper.make_node(op, ["x"], ["y"], **attributes)],
        "space_depth",
        [helper.make_tensor_value_info("x", element, list(x.shape))],
        [helper.make_tensor_value_info("y", element, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


def output_sizes(to_depth: bool, sizes: tuple[int, ...], block: int) -> tuple[int, ...]:
    n, c, h, w = sizes
    return (
        (n, c * block * block, h // block, w // block) if to_depth else (n, c // (block * block), h * block, w * block)
    )


@functools.lru_cache(maxsize=2048)
def source_index(to_depth: bool, order: DML_DEPTH_SPACE_ORDER, sizes: tuple[int, ...], block: int) -> np.ndarray:
    """For each output element (C order), the flat index of the input element it holds, by onnxruntime.

    onnxruntime moves an index tensor (float64: exact). ONNX has no CRD SpaceToDepth; its
    inverse, DepthToSpace CRD, run on the output's indices says where each input goes.
    """
    if to_depth and order == CRD:
        out = output_sizes(True, sizes, block)
        landing = onnxruntime_run(False, CRD, np.arange(math.prod(out), dtype=np.float64).reshape(out), block)
        source = np.empty(math.prod(out), dtype=np.int64)
        source[landing.reshape(-1).astype(np.int64)] = np.arange(math.prod(sizes))
        return source
    moved = onnxruntime_run(to_depth, order, np.arange(math.prod(sizes), dtype=np.float64).reshape(sizes), block)
    return moved.reshape(-1).astype(np.int64)


def expected_output(to_depth: bool, order: DML_DEPTH_SPACE_ORDER, x: np.ndarray, block: int) -> np.ndarray:
    return x.reshape(-1)[source_index(to_depth, order, x.shape, block)].reshape(output_sizes(to_depth, x.shape, block))


def test_the_onnxruntime_oracle_reproduces_the_directml_examples() -> None:
    for order, space in ((DCR, DOC_SPACE_DCR), (CRD, DOC_SPACE_CRD)):
        np.testing.assert_array_equal(expected_output(True, order, doc(space), 2), doc(DOC_DEPTH))
        np.testing.assert_array_equal(expected_output(False, order, doc(DOC_DEPTH), 2), doc(space))


# ---------------------------------------------------------------------------------------
# Cases: any type, direction, order, block size 1-8, and input/output layouts


def random_bits(rng: np.random.Generator, dtype: Any, sizes: tuple[int, ...]) -> np.ndarray:
    """Every bit pattern of the type, NaNs and infinities included: the copy must keep them all."""
    dtype = np.dtype(dtype)
    raw = rng.integers(0, 256, size=math.prod(sizes) * dtype.itemsize, dtype=np.uint8)
    return raw.view(dtype).reshape(sizes)


def layout_strides(sizes: tuple[int, ...], layout: str, rng: np.random.Generator) -> tuple[int, ...] | None:
    if layout == "packed":
        return None
    if layout == "nhwc":
        return dmlpy.nhwc_strides(sizes)
    if layout == "padded":
        return dmlpy.packed_strides([s + int(rng.integers(1, 3)) for s in sizes])
    if layout == "permuted":  # dims laid out in a random memory order
        order = rng.permutation(4)
        strides = [0] * 4
        running = 1
        for axis in reversed(order):
            strides[axis] = running
            running *= sizes[axis]
        return tuple(strides)
    if layout.startswith("broadcast"):  # one axis read with stride 0
        strides = list(dmlpy.packed_strides(sizes))
        strides[int(layout[-1])] = 0
        return tuple(strides)
    raise AssertionError(layout)


@dataclass(frozen=True)
class Case:
    to_depth: bool
    order: DML_DEPTH_SPACE_ORDER | None  # None: the desc without Order (DCR)
    dtype: str
    in_sizes: tuple[int, int, int, int]
    block: int
    in_layout: str
    out_layout: str
    seed: int

    @property
    def out_sizes(self) -> tuple[int, ...]:
        return output_sizes(self.to_depth, self.in_sizes, self.block)

    @property
    def effective_order(self) -> DML_DEPTH_SPACE_ORDER:
        return DCR if self.order is None else self.order

    def desc(self) -> Any:
        rng = np.random.default_rng(self.seed)
        x = buffer_tensor(self.dtype, self.in_sizes, layout_strides(self.in_sizes, self.in_layout, rng))
        y = buffer_tensor(self.dtype, self.out_sizes, layout_strides(self.out_sizes, self.out_layout, rng))
        if self.order is None:
            cls = DML_SPACE_TO_DEPTH_OPERATOR_DESC if self.to_depth else DML_DEPTH_TO_SPACE_OPERATOR_DESC
            return cls(x, y, self.block)
        cls1 = DML_SPACE_TO_DEPTH1_OPERATOR_DESC if self.to_depth else DML_DEPTH_TO_SPACE1_OPERATOR_DESC
        return cls1(x, y, self.block, self.order)

    def inverse_desc(self) -> Any:
        cls = DML_DEPTH_TO_SPACE1_OPERATOR_DESC if self.to_depth else DML_SPACE_TO_DEPTH1_OPERATOR_DESC
        return cls(
            buffer_tensor(self.dtype, self.out_sizes),
            buffer_tensor(self.dtype, self.in_sizes),
            self.block,
            self.effective_order,
        )

    def input(self) -> np.ndarray:
        x = random_bits(np.random.default_rng(self.seed + 1), self.dtype, self.in_sizes)
        if self.in_layout.startswith("broadcast"):  # constant along the stride-0 axis
            axis = int(self.in_layout[-1])
            x = np.ascontiguousarray(np.broadcast_to(np.take(x, [0], axis=axis), self.in_sizes))
        return x


@st.composite
def cases(draw: st.DrawFn, to_depth: bool) -> Case:
    block = draw(st.integers(1, 8))
    n = draw(st.integers(1, 2))
    c = draw(st.integers(1, 3))
    h = draw(st.integers(1, 3))
    w = draw(st.integers(1, 24))  # rows up to 24 blocks: the vector paths and their tails
    in_sizes = (n, c, h * block, w * block) if to_depth else (n, c * block * block, h, w)
    return Case(
        to_depth=to_depth,
        order=draw(st.sampled_from([None, DCR, CRD])),
        dtype=draw(st.sampled_from([np.dtype(t).name for t in ALL_TYPES])),
        in_sizes=in_sizes,
        block=block,
        in_layout=draw(
            st.sampled_from(["packed", "nhwc", "padded", "permuted", "broadcast0", "broadcast1", "broadcast3"])
        ),
        out_layout=draw(st.sampled_from(["packed", "nhwc", "padded", "permuted"])),
        seed=draw(st.integers(0, 2**31)),
    )


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return (
        a.shape == b.shape
        and a.dtype == b.dtype
        and np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()
    )


def check_case(backend: str, case: Case) -> None:
    x = case.input()
    device = dmlpy.create_device(backend=backend)
    y = dmlpy.run(case.desc(), device=device, InputTensor=x)
    expected = expected_output(case.to_depth, case.effective_order, x, case.block)
    assert same_bits(y, expected), f"{backend} vs onnxruntime: {case}"
    if backend == "native":
        y_numpy = dmlpy.run(case.desc(), backend="numpy", InputTensor=x)
        assert same_bits(y, y_numpy), f"native vs numpy: {case}"
    back = dmlpy.run(case.inverse_desc(), device=device, InputTensor=y)
    assert same_bits(back, x), f"the inverse does not give the input back: {case}"


EXAMPLES = {"space_to_depth": 170, "depth_to_space": 170}  # per backend: 340 cases

PROPERTY = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)


@settings(PROPERTY, max_examples=EXAMPLES["space_to_depth"])
@given(case=cases(to_depth=True))
def test_property_space_to_depth(backend: str, case: Case) -> None:
    check_case(backend, case)


@settings(PROPERTY, max_examples=EXAMPLES["depth_to_space"])
@given(case=cases(to_depth=False))
def test_property_depth_to_space(backend: str, case: Case) -> None:
    check_case(backend, case)


def test_property_tests_generate_at_least_300_cases() -> None:
    assert sum(EXAMPLES.values()) >= 300


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("to_depth", [True, False], ids=["space_to_depth", "depth_to_space"])
@pytest.mark.parametrize("order", [DCR, CRD], ids=["DCR", "CRD"])
def test_every_data_type_in_both_orders_and_directions(
    backend: str, dtype: Any, to_depth: bool, order: DML_DEPTH_SPACE_ORDER
) -> None:
    """A fixed table over every type, so coverage never depends on what hypothesis draws."""
    sizes = (2, 3, 6, 9) if to_depth else (2, 27, 2, 3)
    check_case(backend, Case(to_depth, order, np.dtype(dtype).name, sizes, 3, "nhwc", "padded", 7))


# ---------------------------------------------------------------------------------------
# The native kernel's vector paths, tails, streams and threads, against NumPy


@pytest.mark.parametrize("block", [2, 3, 4, 5, 7, 8, 16])
@pytest.mark.parametrize(
    "dtype", [np.uint8, np.float16, np.float32, np.float64], ids=["1 byte", "2 bytes", "4 bytes", "8 bytes"]
)
@pytest.mark.parametrize("to_depth", [True, False], ids=["space_to_depth", "depth_to_space"])
def test_native_equals_numpy_on_rows_with_whole_vectors_and_tails(dtype: Any, block: int, to_depth: bool) -> None:
    """Rows of 67 blocks: whole 64-byte vectors and a tail for every element size; B streams of up to 16."""
    native = native_device(threads=2)
    sizes = (2, 3, 2 * block, 67 * block) if to_depth else (2, 3 * block * block, 2, 67)
    x = random_bits(np.random.default_rng(block), dtype, sizes)
    for order in (DCR, CRD):
        case = Case(to_depth, order, np.dtype(dtype).name, sizes, block, "packed", "packed", 0)
        y = dmlpy.run(case.desc(), device=native, InputTensor=x)
        assert same_bits(y, dmlpy.run(case.desc(), backend="numpy", InputTensor=x)), case
        if order == CRD and dtype == np.float32:
            assert same_bits(y, expected_output(to_depth, order, x, block)), case


@pytest.mark.parametrize(
    ("to_depth", "sizes", "block"),
    [
        pytest.param(True, (1, 1, 2, 2 * 300_000), 2, id="one long row pair: the row is split among threads"),
        pytest.param(True, (1, 3, 64, 4096), 1, id="B = 1 over 786432 elements: one memcpy split among threads"),
        pytest.param(False, (1, 4, 1, 200_000), 2, id="depth-to-space of one long row"),
        pytest.param(True, (4, 16, 64, 64), 2, id="many rows, NCHW"),
    ],
)
def test_native_threads_give_the_same_bits_as_one_thread(to_depth: bool, sizes: tuple[int, ...], block: int) -> None:
    x = random_bits(np.random.default_rng(1), np.float32, sizes)
    one, two = native_device(threads=1), native_device(threads=2)
    for layout in ("packed", "nhwc"):
        case = Case(to_depth, DCR, "float32", sizes, block, layout, layout, 0)
        y1 = dmlpy.run(case.desc(), device=one, InputTensor=x)
        assert same_bits(y1, dmlpy.run(case.desc(), device=two, InputTensor=x)), case
        assert same_bits(y1, dmlpy.run(case.desc(), backend="numpy", InputTensor=x)), case


@pytest.mark.parametrize(
    ("to_depth", "order", "dtype", "sizes", "block", "layout"),
    [
        pytest.param(
            True,
            DCR,
            np.float32,
            (5, 16, 120, 132),
            2,
            "packed",
            id="joined rows, 2 groups of 2 streams, rows of 66 values straddling vectors",
        ),
        pytest.param(
            True, DCR, np.uint8, (5, 16, 240, 270), 2, "packed", id="joined rows of 1-byte values, rows of 135"
        ),
        pytest.param(True, CRD, np.float32, (5, 16, 128, 132), 2, "packed", id="joined rows, COLUMN_ROW_DEPTH"),
        pytest.param(
            False,
            DCR,
            np.float16,
            (4, 64, 100, 90),
            2,
            "packed",
            id="depth-to-space joined over two row dims, 2-byte values",
        ),
        pytest.param(
            False,
            CRD,
            np.float64,
            (4, 72, 50, 37),
            3,
            "packed",
            id="depth-to-space joined, 3 streams of 8-byte values, rows of 37",
        ),
        pytest.param(True, DCR, np.float32, (2, 8, 256, 256), 2, "padded", id="rows of whole lines in a padded output"),
        pytest.param(True, DCR, np.float32, (2, 64, 128, 128), 2, "nhwc", id="NHWC: whole-line copies"),
        pytest.param(
            False, DCR, np.float32, (2, 256, 64, 64), 2, "nhwc", id="NHWC depth-to-space: whole-line copies to 2 rows"
        ),
    ],
)
def test_native_large_outputs_with_non_temporal_stores_equal_numpy(
    to_depth: bool, order: DML_DEPTH_SPACE_ORDER, dtype: Any, sizes: tuple[int, ...], block: int, layout: str
) -> None:
    """Outputs of 4 MiB and more take the non-temporal paths (joined rows, whole-line rows, whole-line
    copies), on one thread and split across two, with and without the rows split among them."""
    x = random_bits(np.random.default_rng(3), dtype, sizes)
    case = Case(
        to_depth, order, np.dtype(dtype).name, sizes, block, layout if layout != "padded" else "packed", layout, 5
    )
    if layout == "padded":  # an output whose rows and planes are whole 64-byte lines
        out = case.out_sizes
        desc = DML_SPACE_TO_DEPTH1_OPERATOR_DESC(
            buffer_tensor(dtype, sizes),
            buffer_tensor(dtype, out, dmlpy.packed_strides((out[0], out[1], out[2] + 2, out[3] + 16))),
            block,
            order,
        )
    else:
        desc = case.desc()
    assert math.prod(case.out_sizes) * np.dtype(dtype).itemsize >= 4 << 20
    expected = dmlpy.run(desc, backend="numpy", InputTensor=x)
    for threads in (1, 2):
        assert same_bits(dmlpy.run(desc, device=native_device(threads), InputTensor=x), expected), (case, threads)
    if layout == "packed":  # N = 1: few items, so the rows are split among the threads
        one_batch = (1, sizes[0] * sizes[1], *sizes[2:])
        x1 = x.reshape(one_batch)
        case1 = Case(to_depth, order, np.dtype(dtype).name, one_batch, block, "packed", "packed", 5)
        assert same_bits(
            dmlpy.run(case1.desc(), device=native_device(2), InputTensor=x1),
            dmlpy.run(case1.desc(), backend="numpy", InputTensor=x1),
        ), case1


def test_an_output_whose_channels_share_memory_keeps_the_last_channel(device: dmlpy.Device) -> None:
    """Output strides {0, 0, 3, 1}: all 8 channels share memory. DirectML leaves the winner open; dmlpy writes in
    row-major order, so the last channel (7) wins on both backends (docs/deviations.md), with TENSOR.OUTPUT_OVERLAP."""
    value = DML_SPACE_TO_DEPTH_OPERATOR_DESC(
        buffer_tensor(DT.UINT32, (1, 2, 4, 6)), buffer_tensor(DT.UINT32, (1, 8, 2, 3), (0, 0, 3, 1)), 2
    )
    with pytest.warns(dmlpy.DmlWarning) as caught:
        y = dmlpy.run(value, device=device, InputTensor=doc(DOC_SPACE_DCR))
    assert [w.message.finding.rule for w in caught] == ["TENSOR.OUTPUT_OVERLAP"]
    depth = doc(DOC_DEPTH)[0]
    for c in range(8):
        np.testing.assert_array_equal(y[0, c], depth[7])


# ---------------------------------------------------------------------------------------
# The native kernel re-checks what it relies on and refuses with a status


def native_dispatch(
    value: Any,
    in_bytes: int | None = None,
    out_bytes: int | None = None,
    *,
    same_memory: bool = False,
    misalign: bool = False,
) -> tuple[Any, np.ndarray]:
    """Lower ``value`` without validation and run it on buffers of the given sizes."""
    if not dmlpy.native_available():
        pytest.skip(dmlpy.native_status())
    from dmlpy.backends import BoundTensor
    from dmlpy.backends.native import NativeBackend
    from dmlpy.operators import spec_for_desc

    backend = NativeBackend()
    prepared = backend.prepare(spec_for_desc(value), value)
    x_memory = np.zeros((in_bytes or value.InputTensor.Desc.TotalTensorSizeInBytes) + 64, dtype=np.uint8)
    x_memory = x_memory[1:] if misalign else x_memory[:-64]
    y_memory = (
        x_memory
        if same_memory
        else np.full(out_bytes or value.OutputTensor.Desc.TotalTensorSizeInBytes, 0xAB, dtype=np.uint8)
    )
    runner = backend.bind(
        prepared,
        [BoundTensor("InputTensor", x_memory, getattr(value.InputTensor, "Desc", None))],
        [BoundTensor("OutputTensor", y_memory, value.OutputTensor.Desc)],
    )
    return runner, y_memory


def f32(sizes: tuple[int, ...], data_type: DT = DT.FLOAT32) -> Any:
    return buffer_tensor(data_type, sizes)


@pytest.mark.parametrize(
    ("value", "status"),
    [
        pytest.param(
            DML_SPACE_TO_DEPTH_OPERATOR_DESC(f32((1, 2, 4, 6)), f32((1, 4, 2, 3)), 2),
            "DMLPY_E_INVALID_DESC",
            id="output C 4 instead of 8",
        ),
        pytest.param(
            DML_SPACE_TO_DEPTH_OPERATOR_DESC(f32((1, 2, 5, 6)), f32((1, 8, 2, 3)), 2),
            "DMLPY_E_INVALID_DESC",
            id="input H 5 with B = 2",
        ),
        pytest.param(
            DML_DEPTH_TO_SPACE_OPERATOR_DESC(f32((1, 6, 2, 3)), f32((1, 1, 4, 6)), 2),
            "DMLPY_E_INVALID_DESC",
            id="input C 6 with B = 2",
        ),
        pytest.param(
            DML_SPACE_TO_DEPTH_OPERATOR_DESC(f32((1, 2, 4, 6)), f32((1, 8, 2, 3)), 0),
            "DMLPY_E_INVALID_DESC",
            id="B = 0",
        ),
        pytest.param(
            DML_SPACE_TO_DEPTH_OPERATOR_DESC(f32((1, 1, 1, 1)), f32((1, 1, 1, 1)), 2**32 - 1),
            "DMLPY_E_INVALID_DESC",
            id="B = 2^32 - 1: B * B * C is not 1",
        ),
        pytest.param(
            DML_SPACE_TO_DEPTH1_OPERATOR_DESC(f32((1, 2, 4, 6)), f32((1, 8, 2, 3)), 2, 7),
            "DMLPY_E_INVALID_DESC",
            id="Order 7",
        ),
        pytest.param(
            DML_DEPTH_TO_SPACE1_OPERATOR_DESC(f32((1, 8, 2, 3)), f32((1, 2, 4, 6), DT.FLOAT16), 2),
            "DMLPY_E_INVALID_DESC",
            id="FLOAT32 in, FLOAT16 out",
        ),
        pytest.param(
            DML_DEPTH_TO_SPACE_OPERATOR_DESC(f32((8, 2, 3)), f32((1, 2, 4, 6)), 2),
            "DMLPY_E_INVALID_DESC",
            id="a 3-D input",
        ),
        pytest.param(
            DML_DEPTH_TO_SPACE_OPERATOR_DESC(f32((1, 8, 2, 3)), f32((2, 2, 4, 6)), 2),
            "DMLPY_E_INVALID_DESC",
            id="output N 2 for input N 1",
        ),
        pytest.param(
            DML_SPACE_TO_DEPTH_OPERATOR_DESC(f32((1, 2, 4, 6), DT.INT4), f32((1, 8, 2, 3), DT.INT4), 2),
            "DMLPY_E_INVALID_DESC",
            id="a 4-bit type",
        ),
        pytest.param(
            DML_SPACE_TO_DEPTH_OPERATOR_DESC(None, f32((1, 8, 2, 3)), 2),
            "DMLPY_E_NULL_ARGUMENT",
            id="a NULL input tensor",
        ),
    ],
)
def test_native_kernel_refuses_a_desc_it_cannot_trust(value: Any, status: str) -> None:
    runner, y_memory = native_dispatch(value, in_bytes=256, out_bytes=256)
    with pytest.raises(dmlpy.DmlError) as caught:
        runner()
    finding = assert_rule(caught.value, "NATIVE.REJECTED")
    assert finding.actual == status
    assert (y_memory == 0xAB).all(), "nothing is written on error"


@pytest.mark.parametrize(
    ("kwargs", "status"),
    [
        pytest.param({"out_bytes": 188}, "DMLPY_E_BUFFER_TOO_SMALL", id="an output buffer 4 bytes short"),
        pytest.param({"in_bytes": 100}, "DMLPY_E_BUFFER_TOO_SMALL", id="an input buffer of 100 of 192 bytes"),
        pytest.param({"same_memory": True}, "DMLPY_E_INVALID_ARGUMENT", id="output and input in the same memory"),
        pytest.param(
            {"misalign": True}, "DMLPY_E_INVALID_ARGUMENT", id="input data not aligned to its 4-byte elements"
        ),
    ],
)
def test_native_kernel_refuses_buffers_it_cannot_use(kwargs: dict[str, Any], status: str) -> None:
    value = DML_SPACE_TO_DEPTH_OPERATOR_DESC(f32((1, 2, 4, 6)), f32((1, 8, 2, 3)), 2)
    runner, _ = native_dispatch(value, **kwargs)
    with pytest.raises(dmlpy.DmlError) as caught:
        runner()
    assert assert_rule(caught.value, "NATIVE.REJECTED").actual == status
