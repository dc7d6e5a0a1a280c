"""dmlpy.run and GraphProgram refuse every input cast that would change a value.

The operator is SPACE_TO_DEPTH1 with BlockSize 1 (the identity: reference values are the
inputs themselves) on a {1, 4, 1, 1} tensor, which takes every integer and float type from
feature level 5.0. The ranges are the C types' own: INT8 -128..127, UINT8 0..255, INT64
-2^63..2^63 - 1, FLOAT16's largest finite value 65504, FLOAT32's 2^24 + 1 the first integer
it cannot hold.
"""

from __future__ import annotations

import numpy as np
import pytest

import dmlpy
from dmlpy import DML_SPACE_TO_DEPTH1_OPERATOR_DESC, DML_TENSOR_DATA_TYPE, buffer_tensor

DT = DML_TENSOR_DATA_TYPE


def identity(data_type: DT) -> DML_SPACE_TO_DEPTH1_OPERATOR_DESC:
    return DML_SPACE_TO_DEPTH1_OPERATOR_DESC(buffer_tensor(data_type, [1, 4, 1, 1]), buffer_tensor(data_type, [1, 4, 1, 1]), 1)


def column(*values: object, dtype: object) -> np.ndarray:
    return np.array(values, dtype=dtype).reshape(1, 4, 1, 1)


REFUSED = [
    pytest.param(DT.INT8, column(300, 1, 2, 3, dtype=np.int64), "300", id="int64 300 does not fit INT8"),
    pytest.param(DT.INT8, column(0, -129, 2, 3, dtype=np.int64), "-129", id="int64 -129 does not fit INT8"),
    pytest.param(DT.INT64, column(2**63, 1, 2, 3, dtype=np.uint64), str(2**63), id="uint64 2^63 does not fit INT64"),
    pytest.param(DT.UINT8, column(0, 1, -1, 3, dtype=np.int64), "-1", id="int64 -1 does not fit UINT8"),
    pytest.param(DT.UINT32, column(0, 2**32, 2, 3, dtype=np.int64), str(2**32), id="int64 2^32 does not fit UINT32"),
    pytest.param(DT.FLOAT16, column(0.5, 1e5, 2.0, 3.0, dtype=np.float64), "100000", id="float64 1e5 overflows FLOAT16 to infinity"),
    pytest.param(DT.FLOAT32, column(1e300, 1, 2, 3, dtype=np.float64), "1e+300", id="float64 1e300 overflows FLOAT32 to infinity"),
    pytest.param(DT.FLOAT32, column(2**24 + 1, 1, 2, 3, dtype=np.int64), str(2**24 + 1), id="int64 2^24 + 1 is not a FLOAT32"),
    pytest.param(DT.FLOAT16, column(70000, 1, 2, 3, dtype=np.int32), "70000", id="int32 70000 overflows FLOAT16"),
    pytest.param(DT.FLOAT64, column(2**63 - 1, 1, 2, 3, dtype=np.int64), str(2**63 - 1), id="int64 2^63 - 1 is not a FLOAT64"),
    pytest.param(DT.FLOAT64, column(2**64 - 1, 1, 2, 3, dtype=np.uint64), str(2**64 - 1), id="uint64 2^64 - 1 rounds to 2^64 in FLOAT64"),
]


@pytest.mark.parametrize(("data_type", "data", "value"), REFUSED)
def test_run_refuses_a_value_the_cast_would_change_naming_the_input_and_value(backend: str, data_type: DT, data: np.ndarray, value: str) -> None:
    with pytest.raises(ValueError, match="InputTensor") as caught:
        dmlpy.run(identity(data_type), backend=backend, InputTensor=data)
    assert value in str(caught.value)


ACCEPTED = [
    pytest.param(DT.INT8, column(127, -128, 0, 5, dtype=np.int64), [127, -128, 0, 5], id="int64 values inside INT8's range"),
    pytest.param(DT.UINT8, column(0, 255, 7, 1, dtype=np.int64), [0, 255, 7, 1], id="non-negative int64 values into UINT8"),
    pytest.param(DT.INT64, column(2**63 - 1, 0, 1, 2, dtype=np.uint64), [2**63 - 1, 0, 1, 2], id="uint64 2^63 - 1 into INT64"),
    pytest.param(DT.UINT64, column(2**64 - 1, 0, 1, 2, dtype=np.uint64), [2**64 - 1, 0, 1, 2], id="uint64 2^64 - 1 into UINT64"),
    pytest.param(DT.INT8, column(True, False, True, False, dtype=bool), [1, 0, 1, 0], id="booleans into INT8"),
    pytest.param(DT.FLOAT32, column(2**24, -(2**24), 3, 4, dtype=np.int64), [2**24, -(2**24), 3, 4], id="int64 2^24 is exactly a FLOAT32"),
    pytest.param(DT.FLOAT16, column(65504.0, -65504.0, 0.5, 1.0, dtype=np.float64), [65504.0, -65504.0, 0.5, 1.0], id="float64 65504 is FLOAT16's largest finite value"),
    pytest.param(DT.FLOAT16, column(np.inf, -np.inf, np.nan, 1.0, dtype=np.float64), [np.inf, -np.inf, np.nan, 1.0], id="infinities and NaN stay what they are"),
    pytest.param(DT.FLOAT32, column(0.1, 0.2, 0.3, 0.4, dtype=np.float64), [np.float32(0.1), np.float32(0.2), np.float32(0.3), np.float32(0.4)],
                 id="float64 rounds to the nearest FLOAT32"),  # fmt: skip
]


@pytest.mark.parametrize(("data_type", "data", "expected"), ACCEPTED)
def test_run_accepts_every_value_that_survives_the_cast(backend: str, data_type: DT, data: np.ndarray, expected: list[object]) -> None:
    got = dmlpy.run(identity(data_type), backend=backend, InputTensor=data)
    assert got.dtype == dmlpy.numpy_dtype(data_type)
    np.testing.assert_array_equal(got.reshape(-1), np.array(expected, dtype=got.dtype))


def test_run_refuses_floats_for_an_integer_tensor_with_type_error(backend: str) -> None:
    with pytest.raises(TypeError, match="InputTensor"):
        dmlpy.run(identity(DT.INT32), backend=backend, InputTensor=column(1.0, 2.0, 3.0, 4.0, dtype=np.float64))


def test_a_graph_program_refuses_a_value_the_cast_would_change(backend: str) -> None:
    g = dmlpy.GraphBuilder(backend=backend)
    x = g.input("x", "int8", (1, 4, 1, 1))
    program = g.compile({"y": g.space_to_depth(x, 1)})
    np.testing.assert_array_equal(program(x=column(-128, 127, 0, 1, dtype=np.int64))["y"].reshape(-1), [-128, 127, 0, 1])
    with pytest.raises(ValueError, match="x: the value 300"):
        program(x=column(300, 0, 0, 0, dtype=np.int64))
