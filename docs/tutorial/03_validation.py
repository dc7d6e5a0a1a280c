# %% [markdown]
# # 3. Validation and the rules
#
# DirectML answers a wrong desc with `E_INVALIDARG` and nothing else. dmlpy checks the same rules
# before anything runs and names each one: a stable rule id, the C field path, what was expected
# and what was found. `docs/rules.md` lists every rule with the DirectML page it comes from.

# %%
import warnings

import dmlpy
from dmlpy import DML_AVERAGE_POOLING_OPERATOR_DESC, DML_ELEMENT_WISE_ADD_OPERATOR_DESC, buffer_tensor

pool = DML_AVERAGE_POOLING_OPERATOR_DESC(
    InputTensor=buffer_tensor("float32", (1, 8, 10, 10)),
    OutputTensor=buffer_tensor("float32", (1, 8, 4, 6)),
    DimensionCount=2, Strides=(2, 2), WindowSize=(3, 3), StartPadding=(0, 0), EndPadding=(0, 0), IncludePadding=False,
)  # fmt: skip
report = dmlpy.validate(pool)
print(report)
assert [f.rule for f in report.errors] == ["POOLING.OUTPUT_SIZE"]
assert report.errors[0].path == "DML_AVERAGE_POOLING_OPERATOR_DESC.OutputTensor.Sizes[3]"  # (10 - 3) / 2 + 1 = 4 (or 5, the ceil shape), not 6

# %% [markdown]
# `create_operator` raises one `DmlError` with every error finding and the HRESULT DirectML would
# return; tests and tools match on `rule_ids`, never on message text.

# %%
device = dmlpy.create_device()
try:
    device.create_operator(pool)
except dmlpy.DmlError as error:
    assert error.hresult == dmlpy.HRESULT.E_INVALIDARG
    print(error.rule_ids)

# %% [markdown]
# ## Warnings are portability risks
#
# The ceil shape (one more output than the floor formula, the last window overhanging the input)
# is accepted with the warning `POOLING.CEIL_OUTPUT`; `create_device(strict=True)` makes warnings
# errors.

# %%
pool.OutputTensor = buffer_tensor("float32", (1, 8, 5, 5))
assert {f.rule for f in dmlpy.validate(pool).warnings} == {"POOLING.CEIL_OUTPUT"}
with warnings.catch_warnings(record=True):
    warnings.simplefilter("always")
    device.create_operator(pool)  # fine, with a DmlWarning
try:
    dmlpy.create_device(strict=True).create_operator(pool)
except dmlpy.DmlError as error:
    assert "POOLING.CEIL_OUTPUT" in error.rule_ids

# %% [markdown]
# ## Feature levels
#
# What a desc may use depends on the device's DML_FEATURE_LEVEL: 8-bit integers in ELEMENT_WISE_ADD
# arrived later than FLOAT32, so a device at 2.1 refuses them. Each operator page's support table
# is data in dmlpy (`dmlpy/data/support/`), checked per tensor.

# %%
add_int8 = DML_ELEMENT_WISE_ADD_OPERATOR_DESC(*(buffer_tensor("int8", (1, 1, 2, 2)) for _ in range(3)))
assert dmlpy.validate(add_int8).ok
old = dmlpy.validate(add_int8, feature_level=dmlpy.DML_FEATURE_LEVEL.LEVEL_2_1)
assert "TENSOR.DATA_TYPE_SUPPORT" in [f.rule for f in old.errors]

# %% [markdown]
# ## "Invalid" and "not emulated" are different answers
#
# dmlpy describes and validates every operator of DirectML.h, but has kernels for fewer. A valid
# desc without a kernel gets the warning `OPERATOR.NOT_EMULATED`: CreateOperator succeeds, and
# CompileOperator answers `E_NOTIMPL`, never `E_INVALIDARG`.

# %%
from dmlpy.operators import REGISTRY

missing = [t for t, spec in REGISTRY.items() if not spec.emulated]
print(f"{len(REGISTRY) - len(missing)} of {len(REGISTRY)} operator types run; for example {missing[0].name} does not yet")
