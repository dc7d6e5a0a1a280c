"""Support tables as data, printed the way DirectML's reference pages print them.

Each operator page has a "Tensor support" table per feature level: for every tensor its
kind (input or output), the dimension counts and the data types it accepts. The validator
and the generated docs both read these tables, so they cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from dmlpy.enums import DML_FEATURE_LEVEL as FL
from dmlpy.enums import DML_OPERATOR_TYPE as OP
from dmlpy.enums import DML_TENSOR_DATA_TYPE as DT

FLOATS = (DT.FLOAT32, DT.FLOAT16)
INTEGERS_8_16_32 = (DT.UINT32, DT.UINT16, DT.UINT8, DT.INT32, DT.INT16, DT.INT8)
SIXTY_FOUR_BIT = (DT.FLOAT64, DT.UINT64, DT.INT64)


@dataclass(frozen=True)
class TensorSupport:
    """One row of a tensor-support table: what one tensor accepts at one feature level."""

    dimension_counts: tuple[int, int]  # inclusive range
    data_types: tuple[DT, ...]

    @property
    def ranks(self) -> str:
        """The dimension counts as one rank ("4D") or an inclusive range ("4-5D")."""
        low, high = self.dimension_counts
        return f"{low}D" if low == high else f"{low}-{high}D"


@dataclass(frozen=True)
class TensorSlot:
    """A tensor field of an operator desc; slot order is field order (DirectML's operator schema)."""

    name: str
    kind: str  # "input" or "output"
    optional: bool = False


@dataclass(frozen=True)
class OperatorSupport:
    operator_type: OP
    introduced: FL
    slots: tuple[TensorSlot, ...]
    # feature level -> tensor name -> support; the row in force is the highest level <= the device's
    tables: dict[FL, dict[str, TensorSupport]]
    source: str = ""

    @property
    def inputs(self) -> tuple[TensorSlot, ...]:
        return tuple(s for s in self.slots if s.kind == "input")

    @property
    def outputs(self) -> tuple[TensorSlot, ...]:
        return tuple(s for s in self.slots if s.kind == "output")

    def table_at(self, feature_level: FL) -> tuple[FL, dict[str, TensorSupport]] | None:
        """The table in force at ``feature_level`` and the level it was introduced at."""
        levels = [level for level in self.tables if level <= feature_level]
        if not levels:
            return None
        level = max(levels)
        return level, self.tables[level]


def _same_for_all(names: tuple[str, ...], support: TensorSupport) -> dict[str, TensorSupport]:
    return {name: support for name in names}


_IN_OUT = (TensorSlot("InputTensor", "input"), TensorSlot("OutputTensor", "output"))

OPERATORS: dict[OP, OperatorSupport] = {}


def _add(support: OperatorSupport) -> None:
    OPERATORS[support.operator_type] = support


# the DML_AVERAGE_POOLING_OPERATOR_DESC page: 4 to 5 dims, FLOAT32/FLOAT16, at every feature level.
_add(
    OperatorSupport(
        OP.AVERAGE_POOLING,
        FL.LEVEL_1_0,
        _IN_OUT,
        {FL.LEVEL_1_0: _same_for_all(("InputTensor", "OutputTensor"), TensorSupport((4, 5), FLOATS))},
        "ns-directml-dml_average_pooling_operator_desc",
    )
)
# the DML_AVERAGE_POOLING1_OPERATOR_DESC page: as AVERAGE_POOLING, introduced at FL 6.2.
_add(
    OperatorSupport(
        OP.AVERAGE_POOLING1,
        FL.LEVEL_6_2,
        _IN_OUT,
        {FL.LEVEL_6_2: _same_for_all(("InputTensor", "OutputTensor"), TensorSupport((4, 5), FLOATS))},
        "ns-directml-dml_average_pooling1_operator_desc",
    )
)

# the space-to-depth and depth-to-space pages: exactly 4-D; data types as the pages print each feature level's row.
_SPACE_DEPTH_TYPES_2_1 = (DT.FLOAT32, DT.FLOAT16, DT.INT32, DT.INT16, DT.INT8, DT.UINT32, DT.UINT16, DT.UINT8)
_SPACE_DEPTH_TYPES_5_0 = (
    DT.FLOAT64, DT.FLOAT32, DT.FLOAT16, DT.INT64, DT.INT32, DT.INT16, DT.INT8, DT.UINT64, DT.UINT32, DT.UINT16, DT.UINT8,
)  # fmt: skip
_SPACE_DEPTH_ROWS = {
    FL.LEVEL_1_0: _same_for_all(("InputTensor", "OutputTensor"), TensorSupport((4, 4), FLOATS)),
    FL.LEVEL_2_1: _same_for_all(("InputTensor", "OutputTensor"), TensorSupport((4, 4), _SPACE_DEPTH_TYPES_2_1)),
    FL.LEVEL_5_0: _same_for_all(("InputTensor", "OutputTensor"), TensorSupport((4, 4), _SPACE_DEPTH_TYPES_5_0)),
}
for _op, _introduced, _page in (
    (OP.SPACE_TO_DEPTH, FL.LEVEL_1_0, "ns-directml-dml_space_to_depth_operator_desc"),
    (OP.DEPTH_TO_SPACE, FL.LEVEL_1_0, "ns-directml-dml_depth_to_space_operator_desc"),
    (OP.SPACE_TO_DEPTH1, FL.LEVEL_2_1, "ns-directml-dml_space_to_depth1_operator_desc"),
    (OP.DEPTH_TO_SPACE1, FL.LEVEL_2_1, "ns-directml-dml_depth_to_space1_operator_desc"),
):
    _add(OperatorSupport(_op, _introduced, _IN_OUT, {level: row for level, row in _SPACE_DEPTH_ROWS.items() if level >= _introduced}, _page))

# the DML_CONVOLUTION_OPERATOR_DESC page and DirectML's operator schema: CONVOLUTION's slots are InputTensor, FilterTensor, BiasTensor (optional), OutputTensor.
# FL 1.0 to 3.1: 4 to 5 dims; FL 4.0 adds 3-D tensors (1-D convolution). FLOAT32/FLOAT16 throughout.
_CONVOLUTION_TENSORS = ("InputTensor", "FilterTensor", "BiasTensor", "OutputTensor")
_add(
    OperatorSupport(
        OP.CONVOLUTION,
        FL.LEVEL_1_0,
        (
            TensorSlot("InputTensor", "input"),
            TensorSlot("FilterTensor", "input"),
            TensorSlot("BiasTensor", "input", optional=True),
            TensorSlot("OutputTensor", "output"),
        ),
        {
            FL.LEVEL_1_0: _same_for_all(_CONVOLUTION_TENSORS, TensorSupport((4, 5), FLOATS)),
            FL.LEVEL_4_0: _same_for_all(_CONVOLUTION_TENSORS, TensorSupport((3, 5), FLOATS)),
        },
        "ns-directml-dml_convolution_operator_desc",
    )
)

# the activation pages (and each ns-directml-dml_activation_*_operator_desc page): FL 1.0 exactly 4-D,
# FL 2.0 4 to 5, FL 3.0 1 to 8, FLOAT32/FLOAT16. GELU arrives at FL 5.1 with 1 to 8.
_ACTIVATION_ROWS = {
    FL.LEVEL_1_0: _same_for_all(("InputTensor", "OutputTensor"), TensorSupport((4, 4), FLOATS)),
    FL.LEVEL_2_0: _same_for_all(("InputTensor", "OutputTensor"), TensorSupport((4, 5), FLOATS)),
    FL.LEVEL_3_0: _same_for_all(("InputTensor", "OutputTensor"), TensorSupport((1, 8), FLOATS)),
}
for _op, _introduced, _page in (
    (OP.ACTIVATION_ELU, FL.LEVEL_1_0, "ns-directml-dml_activation_elu_operator_desc"),
    (OP.ACTIVATION_HARD_SIGMOID, FL.LEVEL_1_0, "ns-directml-dml_activation_hard_sigmoid_operator_desc"),
    (OP.ACTIVATION_IDENTITY, FL.LEVEL_1_0, "ns-directml-dml_activation_identity_operator_desc"),
    (OP.ACTIVATION_LEAKY_RELU, FL.LEVEL_1_0, "ns-directml-dml_activation_leaky_relu_operator_desc"),
    (OP.ACTIVATION_LINEAR, FL.LEVEL_1_0, "ns-directml-dml_activation_linear_operator_desc"),
    (OP.ACTIVATION_RELU, FL.LEVEL_1_0, "ns-directml-dml_activation_relu_operator_desc"),
    (OP.ACTIVATION_SIGMOID, FL.LEVEL_1_0, "ns-directml-dml_activation_sigmoid_operator_desc"),
    (OP.ACTIVATION_SOFTPLUS, FL.LEVEL_1_0, "ns-directml-dml_activation_softplus_operator_desc"),
    (OP.ACTIVATION_TANH, FL.LEVEL_1_0, "ns-directml-dml_activation_tanh_operator_desc"),
):
    _add(OperatorSupport(_op, _introduced, _IN_OUT, dict(_ACTIVATION_ROWS), _page))
_add(
    OperatorSupport(
        OP.ACTIVATION_GELU,
        FL.LEVEL_5_1,
        _IN_OUT,
        {FL.LEVEL_5_1: _same_for_all(("InputTensor", "OutputTensor"), TensorSupport((1, 8), FLOATS))},
        "ns-directml-dml_activation_gelu_operator_desc",
    )
)


def data_type_supported(data_type: DT, feature_level: FL) -> bool:
    """What the emulated device answers to DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT.

    The 64-bit types arrive with FL 3.0 and the 4-bit ones with FL 6.3 (the DML_TENSOR_DATA_TYPE page and the DML_FEATURE_LEVEL page).
    """
    if data_type == DT.UNKNOWN:
        return False
    if data_type in SIXTY_FOUR_BIT:
        return feature_level >= FL.LEVEL_3_0
    if data_type in (DT.UINT4, DT.INT4):
        return feature_level >= FL.LEVEL_6_3
    return True


def max_dimension_count(feature_level: FL) -> int:
    """DML_TENSOR_DIMENSION_COUNT_MAX (5) before FL 3.0, DML_TENSOR_DIMENSION_COUNT_MAX1 (8) from it."""
    return 8 if feature_level >= FL.LEVEL_3_0 else 5


__all__ = [
    "FLOATS",
    "INTEGERS_8_16_32",
    "OPERATORS",
    "SIXTY_FOUR_BIT",
    "OperatorSupport",
    "TensorSlot",
    "TensorSupport",
    "data_type_supported",
    "max_dimension_count",
]
