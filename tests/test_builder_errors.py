"""GraphBuilder reports the rule that fails at the builder call, never a size it inferred itself.

A pooling window wider than the padded input has no output size: the builder must say
POOLING.WINDOW_LARGER_THAN_INPUT at WindowSize and blame ``window``, not an ``output_sizes``
the user never passed (FIELD.RANGE for the formula's -1, TENSOR.SIZE_ZERO for its 0).
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_rule

import dmlpy
from dmlpy import DmlError

POOL = "DML_AVERAGE_POOLING_OPERATOR_DESC"
POOL1 = "DML_AVERAGE_POOLING1_OPERATOR_DESC"
CONV = "DML_CONVOLUTION_OPERATOR_DESC"
INFERRED_SIZE_RULES = {"FIELD.RANGE", "TENSOR.SIZE_ZERO", "POOLING.OUTPUT_SIZE", "CONVOLUTION.OUTPUT_SIZE", "CONVOLUTION.BACKWARD_OUTPUT_SIZE"}


def builder_error(call: str, *args: object, x: tuple[int, ...] = (1, 2, 3, 3), **kwargs: object) -> DmlError:
    g = dmlpy.GraphBuilder(backend="numpy")
    value = g.input("x", "float32", x)
    tensors = [g.input(f"t{i}", "float32", a) if isinstance(a, tuple) else a for i, a in enumerate(args)]
    with pytest.raises(DmlError) as caught:
        getattr(g, call)(value, *tensors, **kwargs)
    assert not INFERRED_SIZE_RULES & set(caught.value.rule_ids), caught.value
    assert "output_sizes" not in caught.value.summary
    return caught.value


@pytest.mark.parametrize(
    ("kwargs", "path"),
    [
        pytest.param({"window": (5, 5)}, f"{POOL}.WindowSize[0]", id="a 5-tap window over 3 inputs (the floor formula gives -1)"),
        pytest.param({"window": (4, 1)}, f"{POOL}.WindowSize[0]", id="a 4-tap window over 3 inputs (the floor formula gives 0)"),
        pytest.param({"window": (2, 2), "dilations": (1, 3)}, f"{POOL1}.WindowSize[1]", id="a window dilated to 4 taps over 3 inputs"),
        pytest.param({"window": 6, "start_padding": (1, 1), "end_padding": (1, 1)}, f"{POOL}.WindowSize[1]", id="a 6-tap window over 3 inputs padded to 5"),
    ],
)
def test_a_pooling_window_larger_than_the_input_is_reported_as_such_at_the_builder_call(kwargs: dict[str, object], path: str) -> None:
    error = builder_error("average_pooling", **kwargs)
    assert_rule(error, "POOLING.WINDOW_LARGER_THAN_INPUT", path)
    assert "'window'" in error.summary and "test_builder_errors.py" in error.summary


def test_a_pooling_stride_of_zero_is_reported_without_an_inferred_size() -> None:
    assert_rule(builder_error("average_pooling", window=(2, 2), strides=(0, 1)), "POOLING.STRIDE_ZERO", f"{POOL}.Strides[0]")


@pytest.mark.parametrize(
    ("call", "args", "kwargs", "rule", "path"),
    [
        pytest.param("conv_transpose", ((2, 2, 3, 3),), {"start_padding": 4, "end_padding": 4}, "CONVOLUTION.PADDING_TOO_LARGE", f"{CONV}.StartPadding[0]",
                     id="a transposed convolution whose padding leaves no output"),
        pytest.param("conv_transpose", ((2, 2, 3, 3),), {"strides": 2, "start_padding": 5, "end_padding": 5}, "CONVOLUTION.PADDING_TOO_LARGE", f"{CONV}.StartPadding[0]",
                     id="a strided transposed convolution whose padding leaves no output"),
        pytest.param("conv_transpose", ((2, 2, 3, 3),), {"strides": 0}, "CONVOLUTION.STRIDE_ZERO", f"{CONV}.Strides[0]", id="a transposed convolution of stride 0"),
        pytest.param("convolution", ((2, 2, 5, 5),), {}, "CONVOLUTION.KERNEL_LARGER_THAN_INPUT", f"{CONV}.FilterTensor.Sizes[2]", id="a 5-tap kernel over 3 inputs"),
        pytest.param("convolution", ((2, 2, 2, 2),), {"strides": (1, 0)}, "CONVOLUTION.STRIDE_ZERO", f"{CONV}.Strides[1]", id="a convolution of stride 0"),
    ],
)  # fmt: skip
def test_a_convolution_without_an_output_size_reports_the_rule_that_fails(call: str, args: tuple[object, ...], kwargs: dict[str, object], rule: str, path: str) -> None:
    assert_rule(builder_error(call, *args, **kwargs), rule, path)


def test_the_builder_pools_with_one_int_for_every_axis(numpy_device: dmlpy.Device) -> None:
    g = dmlpy.GraphBuilder(numpy_device)
    x = g.input("x", "float32", (1, 1, 4, 4))
    y = g.average_pooling(x, window=2, strides=2)
    assert y.sizes == (1, 1, 2, 2)
    out = g.compile([y])(x=np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4))["output0"]
    np.testing.assert_array_equal(out.reshape(-1), [2.5, 4.5, 10.5, 12.5])  # (0 + 1 + 4 + 5) / 4, ...
