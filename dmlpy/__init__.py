"""dmlpy: DirectML's descriptor API, validated and runnable anywhere Python runs."""

from dmlpy._version import __version__
from dmlpy.backends import native_available, native_status
from dmlpy.binding import (
    DML_BINDING_DESC,
    DML_BINDING_PROPERTIES,
    DML_BINDING_TABLE_DESC,
    DML_BUFFER_ARRAY_BINDING,
    DML_BUFFER_BINDING,
    BindingTable,
    Buffer,
    array_binding,
    buffer_binding,
)
from dmlpy.device import (
    DML_FEATURE_DATA_FEATURE_LEVELS,
    DML_FEATURE_DATA_TENSOR_DATA_TYPE_SUPPORT,
    DML_FEATURE_QUERY_FEATURE_LEVELS,
    DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT,
    CompiledOperator,
    Device,
    Operator,
    OperatorInitializer,
    create_device,
    run,
    validate,
)
from dmlpy.enums import *  # noqa: F403 - every DML_* enum and C constant, by design
from dmlpy.enums import __all__ as _enum_names
from dmlpy.errors import DmlError, DmlWarning, Finding, Report, Severity
from dmlpy.execution import CommandList, CommandRecorder
from dmlpy.operators import DML_OPERATOR_DESC, operator_desc
from dmlpy.operators.pooling import (
    DML_AVERAGE_POOLING1_OPERATOR_DESC,
    DML_AVERAGE_POOLING_OPERATOR_DESC,
    average_pooling_output_sizes,
)
from dmlpy.rules import REGISTRY as RULES
from dmlpy.tensor import (
    DML_BUFFER_TENSOR_DESC,
    DML_TENSOR_DESC,
    buffer_tensor,
    calc_buffer_tensor_size,
    nhwc_strides,
    numpy_dtype,
    packed_strides,
)

__all__ = [
    "DML_AVERAGE_POOLING1_OPERATOR_DESC",
    "DML_AVERAGE_POOLING_OPERATOR_DESC",
    "DML_BINDING_DESC",
    "DML_BINDING_PROPERTIES",
    "DML_BINDING_TABLE_DESC",
    "DML_BUFFER_ARRAY_BINDING",
    "DML_BUFFER_BINDING",
    "DML_BUFFER_TENSOR_DESC",
    "DML_FEATURE_DATA_FEATURE_LEVELS",
    "DML_FEATURE_DATA_TENSOR_DATA_TYPE_SUPPORT",
    "DML_FEATURE_QUERY_FEATURE_LEVELS",
    "DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT",
    "DML_OPERATOR_DESC",
    "DML_TENSOR_DESC",
    "RULES",
    "BindingTable",
    "Buffer",
    "CommandList",
    "CommandRecorder",
    "CompiledOperator",
    "Device",
    "DmlError",
    "DmlWarning",
    "Finding",
    "Operator",
    "OperatorInitializer",
    "Report",
    "Severity",
    "__version__",
    "array_binding",
    "average_pooling_output_sizes",
    "buffer_binding",
    "buffer_tensor",
    "calc_buffer_tensor_size",
    "create_device",
    "native_available",
    "native_status",
    "nhwc_strides",
    "numpy_dtype",
    "operator_desc",
    "packed_strides",
    "run",
    "validate",
    *_enum_names,
]
