"""Fuzz every operator of DirectML.h: random descs built from each desc's field kinds.

Values of the right kind and of wrong kinds, short and long arrays, NULL where a field is
required, enum values out of range, random and malformed tensors, bare and wrapped descs. Through
str() (the C++ that builds the desc), validate() and CreateOperator (and CompileOperator when it
succeeds) the only outcomes allowed are
findings with registered rule ids, DmlError, TypeError and ValueError: never another exception.
A fixed sample runs in the normal suite; ``-m slow`` runs many more seeds.
"""

from __future__ import annotations

import dataclasses
import math
import traceback
import warnings
from typing import Any

import numpy as np
import pytest

import dmlpy
from dmlpy import DML_FEATURE_LEVEL as FL
from dmlpy import DML_TENSOR_DATA_TYPE as DT
from dmlpy import DmlError, buffer_tensor
from dmlpy.operators import DML_OPERATOR_DESC, REGISTRY
from dmlpy.operators.activation import FusedActivation
from dmlpy.structs import DML_SCALAR_UNION, Kind, kind_of
from dmlpy.tensor import DML_BUFFER_TENSOR_DESC, DML_TENSOR_DESC

OPERATORS = sorted(REGISTRY, key=int)
DATA_TYPES = [DT.FLOAT32, DT.FLOAT16, DT.INT32, DT.UINT32, DT.INT8, DT.UINT8, DT.INT64, DT.FLOAT64, DT.INT4]
WRONG = ["x", 1.5, -1, 2**40, [1, "a"], object(), b"\x00", (), {}]
LEVELS = list(FL)


def _pick(rng: np.random.Generator, options: list[Any]) -> Any:
    return options[int(rng.integers(len(options)))]


def _tensor(rng: np.random.Generator) -> Any:
    roll = rng.random()
    rank = int(rng.integers(1, 7))
    sizes = [int(s) for s in rng.integers(1, 5, rank)]
    if roll < 0.75:
        return buffer_tensor(_pick(rng, DATA_TYPES), sizes)
    if roll < 0.8:
        return buffer_tensor(_pick(rng, DATA_TYPES), sizes).Desc  # a bare DML_BUFFER_TENSOR_DESC
    if roll < 0.85:
        return DML_TENSOR_DESC(_pick(rng, [0, 2, 1]), None)
    if roll < 0.9:
        return DML_TENSOR_DESC(Desc=DML_BUFFER_TENSOR_DESC(DT.FLOAT32, 0, rank + 1, sizes, None, 4))
    if roll < 0.95:
        return DML_TENSOR_DESC(Desc=DML_BUFFER_TENSOR_DESC(_pick(rng, [0, 99, DT.FLOAT32]), _pick(rng, [0, 1, 6]), None, None, [1] * rank, 0, 3))
    return _pick(rng, WRONG)


def _fused(rng: np.random.Generator) -> Any:
    options = [None, FusedActivation.relu(), FusedActivation.linear(1.0, 0.5), DML_OPERATOR_DESC(int(rng.integers(0, 200)), None)]
    other = REGISTRY[_pick(rng, OPERATORS)].desc_class
    options += [DML_OPERATOR_DESC(_pick(rng, OPERATORS), other()), other(), _pick(rng, WRONG)]
    return _pick(rng, options)


def _scalar_union(rng: np.random.Generator) -> Any:
    member = _pick(rng, [f.name for f in dataclasses.fields(DML_SCALAR_UNION)])
    value: Any = bytes(int(v) for v in rng.integers(0, 256, 8)) if member == "Bytes" else _pick(rng, [0, 1, -1, 300, 2**70, 0.5, math.nan, "x"])
    roll = rng.random()
    if roll < 0.1:
        return DML_SCALAR_UNION(Int8=1, Float32=2.0)
    if roll < 0.15:
        return _pick(rng, WRONG)
    return DML_SCALAR_UNION(**{member: value})


def _array(rng: np.random.Generator, length: int, kind: Kind) -> Any:
    if kind is Kind.UINT_ARRAY:
        return [int(v) for v in rng.integers(0, 6, length)]
    if kind is Kind.INT_ARRAY:
        return [int(v) for v in rng.integers(-3, 4, length)]
    if kind is Kind.FLOAT_ARRAY:
        return [float(_pick(rng, [0.5, 1.0, 2.0, -1.0, math.nan, math.inf])) for _ in range(length)]
    if kind is Kind.TENSOR_ARRAY:
        return [_tensor(rng) for _ in range(length)]
    return [_fused(rng) for _ in range(length)]


def _value(rng: np.random.Generator, f: dataclasses.Field[Any], length: int) -> Any:  # noqa: PLR0911, C901
    kind = kind_of(f)
    if rng.random() < 0.06:
        return _pick(rng, [*WRONG, None])
    if kind is Kind.TENSOR:
        return None if f.metadata["optional"] and rng.random() < 0.3 else _tensor(rng)
    if kind is Kind.OPERATOR:
        return _fused(rng)
    if kind in (Kind.UINT_ARRAY, Kind.INT_ARRAY, Kind.FLOAT_ARRAY, Kind.TENSOR_ARRAY, Kind.OPERATOR_ARRAY):
        if rng.random() < 0.1:
            return None
        return _array(rng, max(0, length + _pick(rng, [0, 0, 0, -1, 1])), kind)
    if kind is Kind.DIMENSION_COUNT:
        return _pick(rng, [None, None, length, length + 1, 0])
    if kind is Kind.UINT:
        return int(_pick(rng, [0, 1, 2, 3, 2**32 - 1, 2**32]))
    if kind is Kind.INT:
        return int(_pick(rng, [-2, 0, 1, 2**31 - 1, -(2**31) - 1]))
    if kind is Kind.UINT64:
        return int(_pick(rng, [0, 16, 2**64 - 1, 2**64]))
    if kind is Kind.BOOL:
        return _pick(rng, [True, False, 2, 2**40])
    if kind is Kind.FLOAT:
        return float(_pick(rng, [0.0, 1.0, -2.5, 1e-4, math.nan, math.inf]))
    if kind in (Kind.ENUM, Kind.FLAGS):
        members = list(f.metadata["enum"])
        return _pick(rng, [*members, *members, 7, 99999, -1, "NOT_A_NAME", members[0].name])
    if kind is Kind.STRUCT:
        struct = f.metadata["struct"]
        return struct(*(int(v) for v in rng.integers(0, 5, len(dataclasses.fields(struct))))) if rng.random() < 0.9 else (1, 2)
    if kind is Kind.STRUCT_POINTER:
        struct = f.metadata["struct"]
        return _pick(rng, [None, struct(), struct(*(float(v) for v in rng.normal(size=len(dataclasses.fields(struct))))), "x"])
    if kind is Kind.SCALAR_UNION:
        return _scalar_union(rng)
    raise AssertionError(kind)


def random_desc(rng: np.random.Generator, operator_type: Any) -> Any:
    spec = REGISTRY[operator_type]
    length = int(rng.integers(0, 5))
    desc = spec.desc_class(**{f.name: _value(rng, f, length) for f in dataclasses.fields(spec.desc_class)})
    roll = rng.random()
    if roll < 0.15:
        return DML_OPERATOR_DESC(operator_type, desc)
    if roll < 0.2:
        return DML_OPERATOR_DESC(_pick(rng, OPERATORS), desc)
    return desc


def _exercise(desc: Any, level: FL) -> None:
    assert isinstance(str(desc), str)  # the C++ that builds it, or a comment saying why C cannot hold it
    report = dmlpy.validate(desc, feature_level=level)
    unknown = [f.rule for f in report.findings if f.rule not in dmlpy.RULES]
    assert not unknown, f"findings with undeclared rule ids {unknown}"
    device = dmlpy.create_device(level, backend="numpy")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            operator = device.create_operator(desc)
        except (DmlError, TypeError, ValueError):
            return
        try:
            device.compile_operator(operator)
        except DmlError as error:
            assert error.hresult == dmlpy.HRESULT.E_NOTIMPL, error


def _run_seeds(operator_type: Any, seeds: range) -> None:
    for seed in seeds:
        rng = np.random.default_rng([int(operator_type), seed])
        desc = random_desc(rng, operator_type)
        level = _pick(rng, LEVELS)
        try:
            _exercise(desc, level)
        except (DmlError, TypeError, ValueError):
            continue
        except AssertionError:
            raise
        except Exception as error:  # noqa: BLE001 - the point: nothing else may escape
            pytest.fail(f"seed {seed}, FL {level.dotted}: {type(error).__name__}: {error}\n{desc!r}\n{traceback.format_exc()}")


@pytest.mark.parametrize("operator_type", OPERATORS, ids=lambda t: t.name)
def test_random_descs_give_clean_answers(operator_type: Any) -> None:
    _run_seeds(operator_type, range(6))


@pytest.mark.slow
@pytest.mark.parametrize("operator_type", OPERATORS, ids=lambda t: t.name)
def test_many_random_descs_give_clean_answers(operator_type: Any) -> None:
    _run_seeds(operator_type, range(6, 66))


def test_the_fuzzer_reaches_valid_descs_and_every_kind_of_answer() -> None:
    answers = {"valid": 0, "invalid": 0, "type": 0}
    # every operator: the operator-specific rules leave no valid random desc among the first 60
    for operator_type in OPERATORS:
        for seed in range(6):
            rng = np.random.default_rng([int(operator_type), seed])
            desc = random_desc(rng, operator_type)
            try:
                report = dmlpy.validate(desc, feature_level=_pick(rng, LEVELS))
            except (TypeError, ValueError):
                answers["type"] += 1
                continue
            answers["valid" if report.ok else "invalid"] += 1
    assert answers["invalid"] > 0 and answers["valid"] > 0
