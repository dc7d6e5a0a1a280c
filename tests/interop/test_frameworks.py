"""TensorFlow SpaceToDepth and nGraph AvgPool through dmlpy.interop.frameworks: the seed documents' examples, and more.

Expected values come from the seed documents (002: TensorFlow's SpaceToDepth page, three NHWC
examples; 001: nGraph's AvgPool page, the worked example with and without include_padding),
from hand computation, and from onnxruntime where the operator is ONNX's too.
"""

from __future__ import annotations

import numpy as np
import pytest

import dmlpy
from dmlpy import D3D12_RESOURCE_BARRIER
from dmlpy import DML_TENSOR_DATA_TYPE
from dmlpy.interop import frameworks

pytestmark = pytest.mark.filterwarnings("ignore::dmlpy.DmlWarning")

# ---------------------------------------------------------------------------------------
# TensorFlow SpaceToDepth (seed 002)

TF_EXAMPLES = [
    # id, NHWC input, NHWC output: the three examples of TensorFlow's SpaceToDepth page, block_size 2
    ("[1, 2, 2, 1] -> [1, 1, 1, 4]", [[[[1], [2]], [[3], [4]]]], [[[[1, 2, 3, 4]]]]),
    ("[1, 2, 2, 3] -> [1, 1, 1, 12]", [[[[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [10, 11, 12]]]], [[[[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]]]]),
    (
        "[1, 4, 4, 1] -> [1, 2, 2, 4]",
        [[[[1], [2], [5], [6]], [[3], [4], [7], [8]], [[9], [10], [13], [14]], [[11], [12], [15], [16]]]],
        [[[[1, 2, 3, 4], [5, 6, 7, 8]], [[9, 10, 11, 12], [13, 14, 15, 16]]]],
    ),
]


@pytest.mark.doc_example
@pytest.mark.parametrize(("tf_input", "tf_output"), [c[1:] for c in TF_EXAMPLES], ids=[c[0] for c in TF_EXAMPLES])
def test_tensorflow_space_to_depth_nhwc_reproduces_the_pages_examples(tf_input: list, tf_output: list, device: dmlpy.Device) -> None:
    x, expected = np.array(tf_input, np.float32), np.array(tf_output, np.float32)
    op = frameworks.space_to_depth(x.shape, 2, "NHWC")
    assert op.output_shape == expected.shape
    np.testing.assert_array_equal(op.run(x, device=device), expected)


@pytest.mark.doc_example
@pytest.mark.parametrize(("tf_input", "tf_output"), [c[1:] for c in TF_EXAMPLES], ids=[c[0] for c in TF_EXAMPLES])
def test_tensorflow_space_to_depth_nchw_gives_the_same_examples_transposed(tf_input: list, tf_output: list, device: dmlpy.Device) -> None:
    x, expected = np.array(tf_input, np.float32).transpose(0, 3, 1, 2), np.array(tf_output, np.float32).transpose(0, 3, 1, 2)
    op = frameworks.space_to_depth(x.shape, 2, "NCHW")
    np.testing.assert_array_equal(op.run(x, device=device), expected)


def test_nhwc_is_said_with_strides_on_sizes_in_nchw_order() -> None:
    """Reference 4.4: Sizes stay {N, C, H, W}; NHWC lives in the Strides, so the buffers hold TensorFlow's bytes as they are."""
    op = frameworks.space_to_depth((1, 4, 4, 1), 2, "NHWC")
    x, y = op.desc.InputTensor.Desc, op.desc.OutputTensor.Desc
    assert list(x.Sizes) == [1, 1, 4, 4] and list(x.Strides) == [16, 1, 4, 1]  # {H*W*C, 1, W*C, C}
    assert list(y.Sizes) == [1, 4, 2, 2] and list(y.Strides) == [16, 1, 8, 4]
    assert type(op.desc) is dmlpy.DML_SPACE_TO_DEPTH_OPERATOR_DESC  # TensorFlow's order is DCR
    nchw = frameworks.space_to_depth((1, 1, 4, 4), 2, "NCHW")
    assert nchw.desc.InputTensor.Desc.Strides is None


@pytest.mark.doc_example
def test_the_nhwc_bytes_go_in_and_come_out_untouched(device: dmlpy.Device) -> None:
    """The third example through raw buffers: the TensorFlow array's bytes in, TensorFlow's output bytes out."""
    x = np.array(TF_EXAMPLES[2][1], np.float32)
    op = frameworks.space_to_depth(x.shape, 2, "NHWC")
    compiled = device.compile_operator(device.create_operator(op.desc))
    initializer = device.create_operator_initializer([compiled])
    recorder, commands = device.create_command_recorder(), device.create_command_list()
    recorder.record_dispatch(commands, initializer, device.create_binding_table(initializer))
    commands.resource_barrier([D3D12_RESOURCE_BARRIER.uav()])  # the dispatch after the initializer reads what it wrote
    source = dmlpy.Buffer.from_array(x)
    target = device.create_buffer(op.desc.OutputTensor.Desc.TotalTensorSizeInBytes)
    table = device.create_binding_table(compiled)
    table.bind_inputs([dmlpy.buffer_binding(source)])
    table.bind_outputs([dmlpy.buffer_binding(target)])
    recorder.record_dispatch(commands, compiled, table)
    commands.close()
    device.execute(commands)
    np.testing.assert_array_equal(target.data.view(np.float32)[:16], np.arange(1, 17, dtype=np.float32))


def test_tensorflow_depth_to_space_inverts_space_to_depth(device: dmlpy.Device) -> None:
    x = np.random.default_rng(1).standard_normal((2, 6, 4, 4)).astype(np.float32)
    for data_format in ("NHWC", "NCHW"):
        down = frameworks.space_to_depth(x.shape, 2, data_format)
        y = down.run(x, device=device)
        np.testing.assert_array_equal(frameworks.depth_to_space(y.shape, 2, data_format).run(y, device=device), x)


def test_tensorflow_rules_hold_block_size_at_least_2_and_divisible_sizes() -> None:
    with pytest.raises(ValueError, match="block_size"):
        frameworks.space_to_depth((1, 2, 2, 1), 1)
    with pytest.raises(ValueError, match="multiples of BlockSize 2"):
        frameworks.space_to_depth((1, 3, 4, 1), 2)
    with pytest.raises(ValueError, match="shape"):
        frameworks.space_to_depth((1, 4, 4, 1), 2).run(np.zeros((1, 4, 4, 2), np.float32))


def test_tensorflow_integer_types_and_nchw_vect_c_pass_through() -> None:
    op = frameworks.space_to_depth((1, 1, 4, 4, 4), 2, "NCHW_VECT_C", np.int8)
    assert op.desc.InputTensor.Desc.DataType == DML_TENSOR_DATA_TYPE.INT8
    x = np.arange(64, dtype=np.int8).reshape(1, 1, 4, 4, 4)
    y = op.run(x)
    # NCHW_VECT_C is NCHW with C = 4 lanes innermost; as NCHW the same op is a plain DCR space-to-depth
    plain = x.transpose(0, 1, 4, 2, 3).reshape(1, 4, 4, 4)
    expected = frameworks.space_to_depth(plain.shape, 2, "NCHW", np.int8).run(plain)
    np.testing.assert_array_equal(y.transpose(0, 1, 4, 2, 3).reshape(expected.shape), expected)


# ---------------------------------------------------------------------------------------
# nGraph AvgPool (seed 001)

NGRAPH_INPUT = np.array([[1, 3, 5], [7, 11, 13], [17, 19, 23]], dtype=np.float32)[None, None]


@pytest.mark.doc_example
@pytest.mark.parametrize(("include_padding", "top_left"), [(False, 1.0), (True, 0.25)], ids=["i=false: the average of {1}", "i=true: the average of {0, 0, 0, 1}"])
def test_ngraph_avgpool_worked_example(include_padding: bool, top_left: float, device: dmlpy.Device) -> None:
    """nGraph's example: w = (2, 2), s = (1, 1), p = (1, 1); the top-left window holds (0) (0) (0) 1."""
    op = frameworks.ngraph_avg_pool(NGRAPH_INPUT.shape, (2, 2), (1, 1), (1, 1), (0, 0), include_padding)
    y = op.run(NGRAPH_INPUT, device=device)
    assert y[0, 0, 0, 0] == top_left
    # the rest by hand: the second window of the first row holds (0) (0) 1 3; the centre 1 3 7 11
    assert y[0, 0, 0, 1] == (2.0 if not include_padding else 1.0)
    assert y[0, 0, 1, 1] == 5.5


@pytest.mark.doc_example
@pytest.mark.parametrize(("shape", "window", "strides", "below", "above"), [((1, 1, 3, 3), (2, 2), (1, 1), (1, 1), (0, 0)), ((2, 3, 7, 8), (3, 2), (2, 3), (1, 0), (2, 1)), ((1, 1, 5, 6, 7), (2, 3, 2), (2, 2, 3), (0, 1, 1), (1, 0, 1))])
def test_ngraph_output_shape_is_the_pages_formula_and_directmls(shape: tuple[int, ...], window: tuple[int, ...], strides: tuple[int, ...], below: tuple[int, ...], above: tuple[int, ...]) -> None:
    """d'_i = ceil((p_i + d_i + q_i - w_i + 1) / s_i) (nGraph's page) equals DirectML's (p + d + q - w) / s + 1."""
    op = frameworks.ngraph_avg_pool(shape, window, strides, below, above)
    for i in range(len(window)):
        page = -(-(below[i] + shape[i + 2] + above[i] - window[i] + 1) // strides[i])
        assert op.output_shape[i + 2] == page == (below[i] + shape[i + 2] + above[i] - window[i]) // strides[i] + 1
    desc = op.desc
    assert (tuple(desc.WindowSize), tuple(desc.Strides), tuple(desc.StartPadding), tuple(desc.EndPadding)) == (window, strides, below, above)
    assert tuple(desc.OutputTensor.Desc.Sizes) == op.output_shape


def test_ngraph_defaults_are_unit_strides_no_padding_and_padding_excluded() -> None:
    op = frameworks.ngraph_avg_pool((1, 2, 4, 4), (2, 2))
    assert (list(op.desc.Strides), list(op.desc.StartPadding), list(op.desc.EndPadding), op.desc.IncludePadding) == ([1, 1], [0, 0], [0, 0], False)


def test_ngraph_ceil_mode_enlarges_the_output_and_keeps_the_padding(device: dmlpy.Device) -> None:
    """[1, 2, 3, 4, 5], window 2, stride 2: floor gives 2 windows; ceil_mode 3, the last holding 5 alone."""
    x = np.arange(1, 6, dtype=np.float32).reshape(1, 1, 5)
    floor = frameworks.ngraph_avg_pool(x.shape, (2,), (2,))
    ceil = frameworks.ngraph_avg_pool(x.shape, (2,), (2,), ceil_mode=True)
    assert floor.output_shape == (1, 1, 2) and ceil.output_shape == (1, 1, 3)
    assert list(ceil.desc.EndPadding) == [0, 0] and list(ceil.desc.OutputTensor.Desc.Sizes) == [1, 1, 1, 3]  # 1-D lifted to {N, C, 1, W}
    np.testing.assert_array_equal(ceil.run(x, device=device).ravel(), [1.5, 3.5, 5.0])
    assert "POOLING.CEIL_OUTPUT" in dmlpy.validate(ceil.desc).rule_ids


def test_ngraph_ceil_window_starting_in_the_padding_above_is_refused() -> None:
    """Input 2, window 3, stride 3, padding 1 + 1: nGraph's ceil gives ceil(1 / 3) + 1 = 2 windows, the second starting at 2, past the input."""
    with pytest.raises(ValueError, match="padding_below"):
        frameworks.ngraph_avg_pool((1, 1, 2, 2), (3, 3), (3, 3), (1, 1), (1, 1), ceil_mode=True)


def test_ngraph_avgpool_matches_onnxruntime_averagepool(device: dmlpy.Device) -> None:
    """nGraph's AvgPool and ONNX's AveragePool share their semantics: compare on a 3-D pool with padding both ways."""
    helper = pytest.importorskip("onnx").helper
    from onnx_cases import make_model, ort_run

    x = np.random.default_rng(3).standard_normal((1, 2, 5, 6, 7)).astype(np.float32)
    for include in (False, True):
        op = frameworks.ngraph_avg_pool(x.shape, (2, 3, 2), (2, 2, 3), (1, 1, 0), (1, 0, 1), include)
        node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 3, 2], strides=[2, 2, 3], pads=[1, 1, 0, 1, 0, 1], count_include_pad=int(include))
        expected = ort_run(make_model([node], {"x": x.shape}, ["y"]), {"x": x})[0]
        np.testing.assert_allclose(op.run(x, device=device), expected, rtol=1e-5, atol=1e-6)


def test_ngraph_rank_and_array_lengths_are_checked() -> None:
    with pytest.raises(ValueError, match="spatial dims"):
        frameworks.ngraph_avg_pool((1, 1, 2, 2, 2, 2), (1, 1, 1, 1))
    with pytest.raises(ValueError, match="window_movement_strides"):
        frameworks.ngraph_avg_pool((1, 1, 4, 4), (2, 2), (1,))
    with pytest.raises(ValueError, match="larger than the padded input"):
        frameworks.ngraph_avg_pool((1, 1, 2, 2), (3, 3))
    with pytest.raises(dmlpy.DmlError) as error:  # what DirectML rejects comes back with its rule ids
        frameworks.ngraph_avg_pool((1, 1, 4, 4), (2, 2), dtype=np.int32)
    assert "TENSOR.DATA_TYPE_SUPPORT" in error.value.rule_ids
