"""Resampling: DML_RESAMPLE_OPERATOR_DESC and DML_RESAMPLE1_OPERATOR_DESC.

Facts: the DML_RESAMPLE_OPERATOR_DESC and DML_RESAMPLE1_OPERATOR_DESC pages. Scales (and
RESAMPLE1's pixel offsets) have one entry per tensor dimension; the output sizes are free: "the
scales don't need to be exactly OutputSize / InputSize", a larger scaled input is cropped and a
smaller one clamped at the edges. Decision (docs/deviations.md): a scale that is not a positive
finite number is a warning, the pages being silent about it.
"""

from __future__ import annotations

import math
from typing import Any

from dmlpy.enums import DML_OPERATOR_TYPE
from dmlpy.errors import Severity
from dmlpy.operators import OperatorSpec, register
from dmlpy.operators.descs.resampling import DML_RESAMPLE1_OPERATOR_DESC, DML_RESAMPLE_OPERATOR_DESC
from dmlpy.rules import Checker, fmt, rule
from dmlpy.support import OPERATORS

PAGE = "ns-directml-dml_resample1_operator_desc"
SCALE_COUNT = rule("RESAMPLE.SCALE_COUNT", "ScaleCount (RESAMPLE) or DimensionCount (RESAMPLE1) equals the tensors' DimensionCount: one scale per dimension.", source=PAGE)
SCALE_VALUE = rule("RESAMPLE.SCALE_VALUE", "Every scale is a positive finite number (the pages are silent; 0, a negative or NaN scale maps no output to the input).", source="docs/deviations.md", severity=Severity.WARNING)


def _check_resample(ctx: Checker, desc: DML_RESAMPLE_OPERATOR_DESC | DML_RESAMPLE1_OPERATOR_DESC, path: str, buffers: dict[str, Any]) -> None:
    x, y = buffers["InputTensor"], buffers["OutputTensor"]
    count_name = "ScaleCount" if isinstance(desc, DML_RESAMPLE_OPERATOR_DESC) else "DimensionCount"
    count = getattr(desc, count_name)
    if x is not None and y is not None and x.DimensionCount == y.DimensionCount:
        ctx.check(count == x.DimensionCount, SCALE_COUNT, f"{path}.{count_name}", actual=count, expected=x.DimensionCount, why="InputTensor.DimensionCount (one scale per dimension)")
    for i, scale in enumerate(desc.Scales or ()):
        ctx.check(math.isfinite(scale) and scale > 0, SCALE_VALUE, f"{path}.Scales[{i}]", actual=scale, expected="> 0 and finite",
                  message=f"is {fmt(scale)}, expected a positive finite scale")  # fmt: skip


for _type, _class in ((DML_OPERATOR_TYPE.RESAMPLE, DML_RESAMPLE_OPERATOR_DESC), (DML_OPERATOR_TYPE.RESAMPLE1, DML_RESAMPLE1_OPERATOR_DESC)):
    register(OperatorSpec(_type, _class, OPERATORS[_type], _check_resample, generic_rules=True))

__all__ = ["DML_RESAMPLE1_OPERATOR_DESC", "DML_RESAMPLE_OPERATOR_DESC"]
