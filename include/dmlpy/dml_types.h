/*
 * dmlpy/dml_types.h - the DirectML descriptor types that dmlpy emulates.
 *
 * Names, enum values, field order and field types follow DirectML.h (DML_TARGET_VERSION 0x6400), so a
 * struct filled through this header is byte-compatible with the real one on the same ABI, and C/C++
 * code written against DirectML.h compiles against this header unchanged (for the types declared here).
 *
 * Differences from DirectML.h, all deliberate:
 *   - COM interface pointers (IDMLOperator*, ID3D12Resource*, IDMLDispatchable*) are declared void*.
 *   - Nothing is gated on DML_TARGET_VERSION: every value and struct is always declared.
 *   - The Windows base types (BOOL, UINT, UINT64, FLOAT, SIZE_T) come from <windows.h> on Windows and
 *     are defined here with the same widths elsewhere. D3D12 descriptor handles are defined here unless
 *     <d3d12.h> was included first.
 * Do not include this header together with the real DirectML.h in one translation unit.
 *
 * Compiles as C99/C11 and C++98 and later. Layout checks for 64-bit targets are compiled in, so a field
 * order or type mistake fails the build.
 */
#ifndef DMLPY_DML_TYPES_H
#define DMLPY_DML_TYPES_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#include <windows.h>
#else
#ifndef DMLPY_WINDOWS_BASE_TYPES_DEFINED
#define DMLPY_WINDOWS_BASE_TYPES_DEFINED
typedef int BOOL;               /* 32-bit; 0 is FALSE, nonzero is TRUE */
typedef unsigned int UINT;      /* 32-bit */
typedef uint64_t UINT64;
typedef float FLOAT;            /* IEEE binary32 */
typedef size_t SIZE_T;
#endif
#ifndef TRUE
#define TRUE 1
#endif
#ifndef FALSE
#define FALSE 0
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------------ */
/* Constants                                                                                          */
/* ------------------------------------------------------------------------------------------------ */

#define DML_TENSOR_DIMENSION_COUNT_MAX 5
#define DML_TENSOR_DIMENSION_COUNT_MAX1 8
#define DML_TEMPORARY_BUFFER_ALIGNMENT 256
#define DML_PERSISTENT_BUFFER_ALIGNMENT 256
#define DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT 16

/* ------------------------------------------------------------------------------------------------ */
/* D3D12 descriptor handles (only used by DML_BINDING_TABLE_DESC)                                   */
/* ------------------------------------------------------------------------------------------------ */

#if !defined(__d3d12_h__) && !defined(DMLPY_D3D12_HANDLES_DEFINED)
#define DMLPY_D3D12_HANDLES_DEFINED
typedef struct D3D12_CPU_DESCRIPTOR_HANDLE {
    SIZE_T ptr;
} D3D12_CPU_DESCRIPTOR_HANDLE;

typedef struct D3D12_GPU_DESCRIPTOR_HANDLE {
    UINT64 ptr;
} D3D12_GPU_DESCRIPTOR_HANDLE;
#endif

/* ------------------------------------------------------------------------------------------------ */
/* Enumerations                                                                                       */
/* ------------------------------------------------------------------------------------------------ */

typedef enum DML_TENSOR_DATA_TYPE {
    DML_TENSOR_DATA_TYPE_UNKNOWN = 0,
    DML_TENSOR_DATA_TYPE_FLOAT32 = 1,
    DML_TENSOR_DATA_TYPE_FLOAT16 = 2,
    DML_TENSOR_DATA_TYPE_UINT32 = 3,
    DML_TENSOR_DATA_TYPE_UINT16 = 4,
    DML_TENSOR_DATA_TYPE_UINT8 = 5,
    DML_TENSOR_DATA_TYPE_INT32 = 6,
    DML_TENSOR_DATA_TYPE_INT16 = 7,
    DML_TENSOR_DATA_TYPE_INT8 = 8,
    DML_TENSOR_DATA_TYPE_FLOAT64 = 9,
    DML_TENSOR_DATA_TYPE_UINT64 = 10,
    DML_TENSOR_DATA_TYPE_INT64 = 11,
    DML_TENSOR_DATA_TYPE_UINT4 = 12,
    DML_TENSOR_DATA_TYPE_INT4 = 13
} DML_TENSOR_DATA_TYPE;

typedef enum DML_TENSOR_TYPE {
    DML_TENSOR_TYPE_INVALID = 0,
    DML_TENSOR_TYPE_BUFFER = 1
} DML_TENSOR_TYPE;

typedef enum DML_TENSOR_FLAGS {
    DML_TENSOR_FLAG_NONE = 0x0,
    DML_TENSOR_FLAG_OWNED_BY_DML = 0x1
} DML_TENSOR_FLAGS;

typedef enum DML_OPERATOR_TYPE {
    DML_OPERATOR_INVALID = 0,
    DML_OPERATOR_ELEMENT_WISE_IDENTITY = 1,
    DML_OPERATOR_ELEMENT_WISE_ABS = 2,
    DML_OPERATOR_ELEMENT_WISE_ACOS = 3,
    DML_OPERATOR_ELEMENT_WISE_ADD = 4,
    DML_OPERATOR_ELEMENT_WISE_ASIN = 5,
    DML_OPERATOR_ELEMENT_WISE_ATAN = 6,
    DML_OPERATOR_ELEMENT_WISE_CEIL = 7,
    DML_OPERATOR_ELEMENT_WISE_CLIP = 8,
    DML_OPERATOR_ELEMENT_WISE_COS = 9,
    DML_OPERATOR_ELEMENT_WISE_DIVIDE = 10,
    DML_OPERATOR_ELEMENT_WISE_EXP = 11,
    DML_OPERATOR_ELEMENT_WISE_FLOOR = 12,
    DML_OPERATOR_ELEMENT_WISE_LOG = 13,
    DML_OPERATOR_ELEMENT_WISE_LOGICAL_AND = 14,
    DML_OPERATOR_ELEMENT_WISE_LOGICAL_EQUALS = 15,
    DML_OPERATOR_ELEMENT_WISE_LOGICAL_GREATER_THAN = 16,
    DML_OPERATOR_ELEMENT_WISE_LOGICAL_LESS_THAN = 17,
    DML_OPERATOR_ELEMENT_WISE_LOGICAL_NOT = 18,
    DML_OPERATOR_ELEMENT_WISE_LOGICAL_OR = 19,
    DML_OPERATOR_ELEMENT_WISE_LOGICAL_XOR = 20,
    DML_OPERATOR_ELEMENT_WISE_MAX = 21,
    DML_OPERATOR_ELEMENT_WISE_MEAN = 22,
    DML_OPERATOR_ELEMENT_WISE_MIN = 23,
    DML_OPERATOR_ELEMENT_WISE_MULTIPLY = 24,
    DML_OPERATOR_ELEMENT_WISE_POW = 25,
    DML_OPERATOR_ELEMENT_WISE_CONSTANT_POW = 26,
    DML_OPERATOR_ELEMENT_WISE_RECIP = 27,
    DML_OPERATOR_ELEMENT_WISE_SIN = 28,
    DML_OPERATOR_ELEMENT_WISE_SQRT = 29,
    DML_OPERATOR_ELEMENT_WISE_SUBTRACT = 30,
    DML_OPERATOR_ELEMENT_WISE_TAN = 31,
    DML_OPERATOR_ELEMENT_WISE_THRESHOLD = 32,
    DML_OPERATOR_ELEMENT_WISE_QUANTIZE_LINEAR = 33,
    DML_OPERATOR_ELEMENT_WISE_DEQUANTIZE_LINEAR = 34,
    DML_OPERATOR_ACTIVATION_ELU = 35,
    DML_OPERATOR_ACTIVATION_HARDMAX = 36,
    DML_OPERATOR_ACTIVATION_HARD_SIGMOID = 37,
    DML_OPERATOR_ACTIVATION_IDENTITY = 38,
    DML_OPERATOR_ACTIVATION_LEAKY_RELU = 39,
    DML_OPERATOR_ACTIVATION_LINEAR = 40,
    DML_OPERATOR_ACTIVATION_LOG_SOFTMAX = 41,
    DML_OPERATOR_ACTIVATION_PARAMETERIZED_RELU = 42,
    DML_OPERATOR_ACTIVATION_PARAMETRIC_SOFTPLUS = 43,
    DML_OPERATOR_ACTIVATION_RELU = 44,
    DML_OPERATOR_ACTIVATION_SCALED_ELU = 45,
    DML_OPERATOR_ACTIVATION_SCALED_TANH = 46,
    DML_OPERATOR_ACTIVATION_SIGMOID = 47,
    DML_OPERATOR_ACTIVATION_SOFTMAX = 48,
    DML_OPERATOR_ACTIVATION_SOFTPLUS = 49,
    DML_OPERATOR_ACTIVATION_SOFTSIGN = 50,
    DML_OPERATOR_ACTIVATION_TANH = 51,
    DML_OPERATOR_ACTIVATION_THRESHOLDED_RELU = 52,
    DML_OPERATOR_CONVOLUTION = 53,
    DML_OPERATOR_GEMM = 54,
    DML_OPERATOR_REDUCE = 55,
    DML_OPERATOR_AVERAGE_POOLING = 56,
    DML_OPERATOR_LP_POOLING = 57,
    DML_OPERATOR_MAX_POOLING = 58,
    DML_OPERATOR_ROI_POOLING = 59,
    DML_OPERATOR_SLICE = 60,
    DML_OPERATOR_CAST = 61,
    DML_OPERATOR_SPLIT = 62,
    DML_OPERATOR_JOIN = 63,
    DML_OPERATOR_PADDING = 64,
    DML_OPERATOR_VALUE_SCALE_2D = 65,
    DML_OPERATOR_UPSAMPLE_2D = 66,
    DML_OPERATOR_GATHER = 67,
    DML_OPERATOR_SPACE_TO_DEPTH = 68,
    DML_OPERATOR_DEPTH_TO_SPACE = 69,
    DML_OPERATOR_TILE = 70,
    DML_OPERATOR_TOP_K = 71,
    DML_OPERATOR_BATCH_NORMALIZATION = 72,
    DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION = 73,
    DML_OPERATOR_LOCAL_RESPONSE_NORMALIZATION = 74,
    DML_OPERATOR_LP_NORMALIZATION = 75,
    DML_OPERATOR_RNN = 76,
    DML_OPERATOR_LSTM = 77,
    DML_OPERATOR_GRU = 78,
    DML_OPERATOR_ELEMENT_WISE_SIGN = 79,
    DML_OPERATOR_ELEMENT_WISE_IS_NAN = 80,
    DML_OPERATOR_ELEMENT_WISE_ERF = 81,
    DML_OPERATOR_ELEMENT_WISE_SINH = 82,
    DML_OPERATOR_ELEMENT_WISE_COSH = 83,
    DML_OPERATOR_ELEMENT_WISE_TANH = 84,
    DML_OPERATOR_ELEMENT_WISE_ASINH = 85,
    DML_OPERATOR_ELEMENT_WISE_ACOSH = 86,
    DML_OPERATOR_ELEMENT_WISE_ATANH = 87,
    DML_OPERATOR_ELEMENT_WISE_IF = 88,
    DML_OPERATOR_ELEMENT_WISE_ADD1 = 89,
    DML_OPERATOR_ACTIVATION_SHRINK = 90,
    DML_OPERATOR_MAX_POOLING1 = 91,
    DML_OPERATOR_MAX_UNPOOLING = 92,
    DML_OPERATOR_DIAGONAL_MATRIX = 93,
    DML_OPERATOR_SCATTER_ELEMENTS = 94,
    DML_OPERATOR_SCATTER = DML_OPERATOR_SCATTER_ELEMENTS, /* alias; takes no number of its own */
    DML_OPERATOR_ONE_HOT = 95,
    DML_OPERATOR_RESAMPLE = 96,
    DML_OPERATOR_ELEMENT_WISE_BIT_SHIFT_LEFT = 97,
    DML_OPERATOR_ELEMENT_WISE_BIT_SHIFT_RIGHT = 98,
    DML_OPERATOR_ELEMENT_WISE_ROUND = 99,
    DML_OPERATOR_ELEMENT_WISE_IS_INFINITY = 100,
    DML_OPERATOR_ELEMENT_WISE_MODULUS_TRUNCATE = 101,
    DML_OPERATOR_ELEMENT_WISE_MODULUS_FLOOR = 102,
    DML_OPERATOR_FILL_VALUE_CONSTANT = 103,
    DML_OPERATOR_FILL_VALUE_SEQUENCE = 104,
    DML_OPERATOR_CUMULATIVE_SUMMATION = 105,
    DML_OPERATOR_REVERSE_SUBSEQUENCES = 106,
    DML_OPERATOR_GATHER_ELEMENTS = 107,
    DML_OPERATOR_GATHER_ND = 108,
    DML_OPERATOR_SCATTER_ND = 109,
    DML_OPERATOR_MAX_POOLING2 = 110,
    DML_OPERATOR_SLICE1 = 111,
    DML_OPERATOR_TOP_K1 = 112,
    DML_OPERATOR_DEPTH_TO_SPACE1 = 113,
    DML_OPERATOR_SPACE_TO_DEPTH1 = 114,
    DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1 = 115,
    DML_OPERATOR_RESAMPLE1 = 116,
    DML_OPERATOR_MATRIX_MULTIPLY_INTEGER = 117,
    DML_OPERATOR_QUANTIZED_LINEAR_MATRIX_MULTIPLY = 118,
    DML_OPERATOR_CONVOLUTION_INTEGER = 119,
    DML_OPERATOR_QUANTIZED_LINEAR_CONVOLUTION = 120,
    DML_OPERATOR_ELEMENT_WISE_BIT_AND = 121,
    DML_OPERATOR_ELEMENT_WISE_BIT_OR = 122,
    DML_OPERATOR_ELEMENT_WISE_BIT_XOR = 123,
    DML_OPERATOR_ELEMENT_WISE_BIT_NOT = 124,
    DML_OPERATOR_ELEMENT_WISE_BIT_COUNT = 125,
    DML_OPERATOR_ELEMENT_WISE_LOGICAL_GREATER_THAN_OR_EQUAL = 126,
    DML_OPERATOR_ELEMENT_WISE_LOGICAL_LESS_THAN_OR_EQUAL = 127,
    DML_OPERATOR_ACTIVATION_CELU = 128,
    DML_OPERATOR_ACTIVATION_RELU_GRAD = 129,
    DML_OPERATOR_AVERAGE_POOLING_GRAD = 130,
    DML_OPERATOR_MAX_POOLING_GRAD = 131,
    DML_OPERATOR_RANDOM_GENERATOR = 132,
    DML_OPERATOR_NONZERO_COORDINATES = 133,
    DML_OPERATOR_RESAMPLE_GRAD = 134,
    DML_OPERATOR_SLICE_GRAD = 135,
    DML_OPERATOR_ADAM_OPTIMIZER = 136,
    DML_OPERATOR_ARGMIN = 137,
    DML_OPERATOR_ARGMAX = 138,
    DML_OPERATOR_ROI_ALIGN = 139,
    DML_OPERATOR_GATHER_ND1 = 140,
    DML_OPERATOR_ELEMENT_WISE_ATAN_YX = 141,
    DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD = 142,
    DML_OPERATOR_ELEMENT_WISE_DIFFERENCE_SQUARE = 143,
    DML_OPERATOR_LOCAL_RESPONSE_NORMALIZATION_GRAD = 144,
    DML_OPERATOR_CUMULATIVE_PRODUCT = 145,
    DML_OPERATOR_BATCH_NORMALIZATION_GRAD = 146,
    DML_OPERATOR_ELEMENT_WISE_QUANTIZED_LINEAR_ADD = 147,
    DML_OPERATOR_DYNAMIC_QUANTIZE_LINEAR = 148,
    DML_OPERATOR_ROI_ALIGN1 = 149,
    DML_OPERATOR_ROI_ALIGN_GRAD = 150,
    DML_OPERATOR_BATCH_NORMALIZATION_TRAINING = 151,
    DML_OPERATOR_BATCH_NORMALIZATION_TRAINING_GRAD = 152,
    DML_OPERATOR_ELEMENT_WISE_CLIP1 = 153,
    DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD1 = 154,
    DML_OPERATOR_PADDING1 = 155,
    DML_OPERATOR_ELEMENT_WISE_NEGATE = 156,
    DML_OPERATOR_ACTIVATION_GELU = 157,
    DML_OPERATOR_ACTIVATION_SOFTMAX1 = 158,
    DML_OPERATOR_ACTIVATION_LOG_SOFTMAX1 = 159,
    DML_OPERATOR_ACTIVATION_HARDMAX1 = 160,
    DML_OPERATOR_RESAMPLE2 = 161,
    DML_OPERATOR_RESAMPLE_GRAD1 = 162,
    DML_OPERATOR_DIAGONAL_MATRIX1 = 163,
    DML_OPERATOR_MULTIHEAD_ATTENTION = 164,
    DML_OPERATOR_LP_POOLING1 = 165,
    DML_OPERATOR_AVERAGE_POOLING1 = 166,
    DML_OPERATOR_ACTIVATION_SWISH = 167,
    DML_OPERATOR_ACTIVATION_HARD_SWISH = 168,
    DML_OPERATOR_QUANTIZED_LINEAR_AVERAGE_POOLING = 169,
    DML_OPERATOR_MATRIX_MULTIPLY_INTEGER_TO_FLOAT = 170,
    DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION2 = 171,
    DML_OPERATOR_MULTIHEAD_ATTENTION1 = 172,
    DML_OPERATOR_QUANTIZE = 173,
    DML_OPERATOR_DEQUANTIZE = 174,
    DML_OPERATOR_RESAMPLE3 = 175,
    DML_OPERATOR_FOLD = 176,
    DML_OPERATOR_UNFOLD = 177
} DML_OPERATOR_TYPE;

typedef enum DML_FEATURE_LEVEL {
    DML_FEATURE_LEVEL_1_0 = 0x1000,
    DML_FEATURE_LEVEL_2_0 = 0x2000,
    DML_FEATURE_LEVEL_2_1 = 0x2100,
    DML_FEATURE_LEVEL_3_0 = 0x3000,
    DML_FEATURE_LEVEL_3_1 = 0x3100,
    DML_FEATURE_LEVEL_4_0 = 0x4000,
    DML_FEATURE_LEVEL_4_1 = 0x4100,
    DML_FEATURE_LEVEL_5_0 = 0x5000,
    DML_FEATURE_LEVEL_5_1 = 0x5100,
    DML_FEATURE_LEVEL_5_2 = 0x5200,
    DML_FEATURE_LEVEL_6_0 = 0x6000,
    DML_FEATURE_LEVEL_6_1 = 0x6100,
    DML_FEATURE_LEVEL_6_2 = 0x6200,
    DML_FEATURE_LEVEL_6_3 = 0x6300,
    DML_FEATURE_LEVEL_6_4 = 0x6400
} DML_FEATURE_LEVEL;

typedef enum DML_FEATURE {
    DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT = 0,
    DML_FEATURE_FEATURE_LEVELS = 1
} DML_FEATURE;

typedef enum DML_CREATE_DEVICE_FLAGS {
    DML_CREATE_DEVICE_FLAG_NONE = 0x0,
    DML_CREATE_DEVICE_FLAG_DEBUG = 0x1
} DML_CREATE_DEVICE_FLAGS;

typedef enum DML_CONVOLUTION_MODE {
    DML_CONVOLUTION_MODE_CONVOLUTION = 0,
    DML_CONVOLUTION_MODE_CROSS_CORRELATION = 1
} DML_CONVOLUTION_MODE;

typedef enum DML_CONVOLUTION_DIRECTION {
    DML_CONVOLUTION_DIRECTION_FORWARD = 0,
    DML_CONVOLUTION_DIRECTION_BACKWARD = 1
} DML_CONVOLUTION_DIRECTION;

typedef enum DML_DEPTH_SPACE_ORDER {
    DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW = 0,
    DML_DEPTH_SPACE_ORDER_COLUMN_ROW_DEPTH = 1
} DML_DEPTH_SPACE_ORDER;

typedef enum DML_PADDING_MODE {
    DML_PADDING_MODE_CONSTANT = 0,
    DML_PADDING_MODE_EDGE = 1,
    DML_PADDING_MODE_REFLECTION = 2,
    DML_PADDING_MODE_SYMMETRIC = 3,
    DML_PADDING_MODE_WRAP = 4
} DML_PADDING_MODE;

typedef enum DML_EXECUTION_FLAGS {
    DML_EXECUTION_FLAG_NONE = 0x0,
    DML_EXECUTION_FLAG_ALLOW_HALF_PRECISION_COMPUTATION = 0x1,
    DML_EXECUTION_FLAG_DISABLE_META_COMMANDS = 0x2,
    DML_EXECUTION_FLAG_DESCRIPTORS_VOLATILE = 0x4
} DML_EXECUTION_FLAGS;

typedef enum DML_BINDING_TYPE {
    DML_BINDING_TYPE_NONE = 0,
    DML_BINDING_TYPE_BUFFER = 1,
    DML_BINDING_TYPE_BUFFER_ARRAY = 2
} DML_BINDING_TYPE;

typedef enum DML_GRAPH_EDGE_TYPE {
    DML_GRAPH_EDGE_TYPE_INVALID = 0,
    DML_GRAPH_EDGE_TYPE_INPUT = 1,
    DML_GRAPH_EDGE_TYPE_OUTPUT = 2,
    DML_GRAPH_EDGE_TYPE_INTERMEDIATE = 3
} DML_GRAPH_EDGE_TYPE;

typedef enum DML_GRAPH_NODE_TYPE {
    DML_GRAPH_NODE_TYPE_INVALID = 0,
    DML_GRAPH_NODE_TYPE_OPERATOR = 1,
    DML_GRAPH_NODE_TYPE_CONSTANT = 2
} DML_GRAPH_NODE_TYPE;

/* ------------------------------------------------------------------------------------------------ */
/* Tensors                                                                                            */
/* ------------------------------------------------------------------------------------------------ */

typedef struct DML_BUFFER_TENSOR_DESC {
    DML_TENSOR_DATA_TYPE DataType;
    DML_TENSOR_FLAGS Flags;
    UINT DimensionCount;
    const UINT* Sizes;                  /* [DimensionCount] */
    const UINT* Strides;                /* [DimensionCount], in elements; NULL = packed row-major */
    UINT64 TotalTensorSizeInBytes;
    UINT GuaranteedBaseOffsetAlignment;
} DML_BUFFER_TENSOR_DESC;

typedef struct DML_TENSOR_DESC {
    DML_TENSOR_TYPE Type;
    const void* Desc;                   /* DML_BUFFER_TENSOR_DESC* when Type == DML_TENSOR_TYPE_BUFFER */
} DML_TENSOR_DESC;

/* ------------------------------------------------------------------------------------------------ */
/* Operators                                                                                          */
/* ------------------------------------------------------------------------------------------------ */

typedef struct DML_OPERATOR_DESC {
    DML_OPERATOR_TYPE Type;
    const void* Desc;                   /* DML_<NAME>_OPERATOR_DESC* matching Type */
} DML_OPERATOR_DESC;

/* Pooling. DimensionCount is the number of SPATIAL dimensions (2 or 3); the spatial arrays have that
 * many entries, ordered {H, W} or {D, H, W}. */

typedef struct DML_AVERAGE_POOLING_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
    UINT DimensionCount;
    const UINT* Strides;
    const UINT* WindowSize;
    const UINT* StartPadding;
    const UINT* EndPadding;
    BOOL IncludePadding;
} DML_AVERAGE_POOLING_OPERATOR_DESC;

typedef struct DML_AVERAGE_POOLING1_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
    UINT DimensionCount;
    const UINT* Strides;
    const UINT* WindowSize;
    const UINT* StartPadding;
    const UINT* EndPadding;
    const UINT* Dilations;
    BOOL IncludePadding;
} DML_AVERAGE_POOLING1_OPERATOR_DESC;

typedef struct DML_AVERAGE_POOLING_GRAD_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputGradientTensor;
    const DML_TENSOR_DESC* OutputGradientTensor;
    UINT DimensionCount;
    const UINT* Strides;
    const UINT* WindowSize;
    const UINT* StartPadding;
    const UINT* EndPadding;
    BOOL IncludePadding;
} DML_AVERAGE_POOLING_GRAD_OPERATOR_DESC;

typedef struct DML_LP_POOLING_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
    UINT DimensionCount;
    const UINT* Strides;
    const UINT* WindowSize;
    const UINT* StartPadding;
    const UINT* EndPadding;
    UINT P;
} DML_LP_POOLING_OPERATOR_DESC;

typedef struct DML_LP_POOLING1_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
    UINT DimensionCount;
    const UINT* Strides;
    const UINT* WindowSize;
    const UINT* StartPadding;
    const UINT* EndPadding;
    const UINT* Dilations;
    UINT P;
} DML_LP_POOLING1_OPERATOR_DESC;

typedef struct DML_MAX_POOLING_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
    UINT DimensionCount;
    const UINT* Strides;
    const UINT* WindowSize;
    const UINT* StartPadding;
    const UINT* EndPadding;
} DML_MAX_POOLING_OPERATOR_DESC;

typedef struct DML_MAX_POOLING1_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
    const DML_TENSOR_DESC* OutputIndicesTensor;   /* optional */
    UINT DimensionCount;
    const UINT* Strides;
    const UINT* WindowSize;
    const UINT* StartPadding;
    const UINT* EndPadding;
} DML_MAX_POOLING1_OPERATOR_DESC;

typedef struct DML_MAX_POOLING2_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
    const DML_TENSOR_DESC* OutputIndicesTensor;   /* optional */
    UINT DimensionCount;
    const UINT* Strides;
    const UINT* WindowSize;
    const UINT* StartPadding;
    const UINT* EndPadding;
    const UINT* Dilations;
} DML_MAX_POOLING2_OPERATOR_DESC;

/* Convolution. DimensionCount is the number of SPATIAL dimensions. */

typedef struct DML_CONVOLUTION_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* FilterTensor;
    const DML_TENSOR_DESC* BiasTensor;            /* optional */
    const DML_TENSOR_DESC* OutputTensor;
    DML_CONVOLUTION_MODE Mode;
    DML_CONVOLUTION_DIRECTION Direction;
    UINT DimensionCount;
    const UINT* Strides;
    const UINT* Dilations;
    const UINT* StartPadding;
    const UINT* EndPadding;
    const UINT* OutputPadding;
    UINT GroupCount;
    const DML_OPERATOR_DESC* FusedActivation;     /* optional */
} DML_CONVOLUTION_OPERATOR_DESC;

/* Space / depth */

typedef struct DML_SPACE_TO_DEPTH_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
    UINT BlockSize;
} DML_SPACE_TO_DEPTH_OPERATOR_DESC;

typedef struct DML_DEPTH_TO_SPACE_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
    UINT BlockSize;
} DML_DEPTH_TO_SPACE_OPERATOR_DESC;

typedef struct DML_SPACE_TO_DEPTH1_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
    UINT BlockSize;
    DML_DEPTH_SPACE_ORDER Order;
} DML_SPACE_TO_DEPTH1_OPERATOR_DESC;

typedef struct DML_DEPTH_TO_SPACE1_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
    UINT BlockSize;
    DML_DEPTH_SPACE_ORDER Order;
} DML_DEPTH_TO_SPACE1_OPERATOR_DESC;

/* Activations (standalone, or as a FusedActivation with both tensor pointers NULL) */

typedef struct DML_ACTIVATION_IDENTITY_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
} DML_ACTIVATION_IDENTITY_OPERATOR_DESC;

typedef struct DML_ACTIVATION_RELU_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
} DML_ACTIVATION_RELU_OPERATOR_DESC;

typedef struct DML_ACTIVATION_SIGMOID_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
} DML_ACTIVATION_SIGMOID_OPERATOR_DESC;

typedef struct DML_ACTIVATION_LEAKY_RELU_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
    FLOAT Alpha;
} DML_ACTIVATION_LEAKY_RELU_OPERATOR_DESC;

typedef struct DML_ACTIVATION_LINEAR_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
    FLOAT Alpha;
    FLOAT Beta;
} DML_ACTIVATION_LINEAR_OPERATOR_DESC;

typedef struct DML_ACTIVATION_ELU_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
    FLOAT Alpha;
} DML_ACTIVATION_ELU_OPERATOR_DESC;

typedef struct DML_ACTIVATION_HARD_SIGMOID_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
    FLOAT Alpha;
    FLOAT Beta;
} DML_ACTIVATION_HARD_SIGMOID_OPERATOR_DESC;

typedef struct DML_ACTIVATION_TANH_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
} DML_ACTIVATION_TANH_OPERATOR_DESC;

typedef struct DML_ACTIVATION_SOFTPLUS_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
    FLOAT Steepness;
} DML_ACTIVATION_SOFTPLUS_OPERATOR_DESC;

typedef struct DML_ACTIVATION_GELU_OPERATOR_DESC {
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
} DML_ACTIVATION_GELU_OPERATOR_DESC;

/* ------------------------------------------------------------------------------------------------ */
/* Graph                                                                                              */
/* ------------------------------------------------------------------------------------------------ */

typedef struct DML_GRAPH_EDGE_DESC {
    DML_GRAPH_EDGE_TYPE Type;
    const void* Desc;
} DML_GRAPH_EDGE_DESC;

typedef struct DML_INPUT_GRAPH_EDGE_DESC {
    UINT GraphInputIndex;
    UINT ToNodeIndex;
    UINT ToNodeInputIndex;
    const char* Name;                   /* optional */
} DML_INPUT_GRAPH_EDGE_DESC;

typedef struct DML_OUTPUT_GRAPH_EDGE_DESC {
    UINT FromNodeIndex;
    UINT FromNodeOutputIndex;
    UINT GraphOutputIndex;
    const char* Name;                   /* optional */
} DML_OUTPUT_GRAPH_EDGE_DESC;

typedef struct DML_INTERMEDIATE_GRAPH_EDGE_DESC {
    UINT FromNodeIndex;
    UINT FromNodeOutputIndex;
    UINT ToNodeIndex;
    UINT ToNodeInputIndex;
    const char* Name;                   /* optional */
} DML_INTERMEDIATE_GRAPH_EDGE_DESC;

typedef struct DML_GRAPH_NODE_DESC {
    DML_GRAPH_NODE_TYPE Type;
    const void* Desc;
} DML_GRAPH_NODE_DESC;

typedef struct DML_OPERATOR_GRAPH_NODE_DESC {
    void* Operator;                     /* IDMLOperator* */
    const char* Name;                   /* optional */
} DML_OPERATOR_GRAPH_NODE_DESC;

typedef struct DML_CONSTANT_DATA_GRAPH_NODE_DESC {
    const void* Data;
    SIZE_T DataSize;
    const char* Name;                   /* optional */
} DML_CONSTANT_DATA_GRAPH_NODE_DESC;

typedef struct DML_GRAPH_DESC {
    UINT InputCount;
    UINT OutputCount;
    UINT NodeCount;
    const DML_GRAPH_NODE_DESC* Nodes;
    UINT InputEdgeCount;
    const DML_GRAPH_EDGE_DESC* InputEdges;
    UINT OutputEdgeCount;
    const DML_GRAPH_EDGE_DESC* OutputEdges;
    UINT IntermediateEdgeCount;
    const DML_GRAPH_EDGE_DESC* IntermediateEdges;
} DML_GRAPH_DESC;

/* ------------------------------------------------------------------------------------------------ */
/* Binding                                                                                            */
/* ------------------------------------------------------------------------------------------------ */

typedef struct DML_BINDING_DESC {
    DML_BINDING_TYPE Type;
    const void* Desc;                   /* NULL for DML_BINDING_TYPE_NONE */
} DML_BINDING_DESC;

typedef struct DML_BUFFER_BINDING {
    void* Buffer;                       /* ID3D12Resource*; NULL = no binding */
    UINT64 Offset;
    UINT64 SizeInBytes;
} DML_BUFFER_BINDING;

typedef struct DML_BUFFER_ARRAY_BINDING {
    UINT BindingCount;
    const DML_BUFFER_BINDING* Bindings;
} DML_BUFFER_ARRAY_BINDING;

typedef struct DML_BINDING_PROPERTIES {
    UINT RequiredDescriptorCount;
    UINT64 TemporaryResourceSize;
    UINT64 PersistentResourceSize;
} DML_BINDING_PROPERTIES;

typedef struct DML_BINDING_TABLE_DESC {
    void* Dispatchable;                 /* IDMLDispatchable* */
    D3D12_CPU_DESCRIPTOR_HANDLE CPUDescriptorHandle;
    D3D12_GPU_DESCRIPTOR_HANDLE GPUDescriptorHandle;
    UINT SizeInDescriptors;
} DML_BINDING_TABLE_DESC;

/* ------------------------------------------------------------------------------------------------ */
/* Compile-time layout checks (x64 / any 64-bit target with 4-byte int and 8-byte pointers)            */
/* ------------------------------------------------------------------------------------------------ */

#if defined(__cplusplus) && (__cplusplus >= 201103L || (defined(_MSC_VER) && _MSC_VER >= 1600))
#define DMLPY_STATIC_ASSERT(cond, name) static_assert(cond, #name)
#elif !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define DMLPY_STATIC_ASSERT(cond, name) _Static_assert(cond, #name)
#else
#define DMLPY_STATIC_ASSERT(cond, name) typedef char dmlpy_static_assert_##name[(cond) ? 1 : -1]
#endif

DMLPY_STATIC_ASSERT(sizeof(BOOL) == 4, bool_is_32_bit);
DMLPY_STATIC_ASSERT(sizeof(UINT) == 4, uint_is_32_bit);
DMLPY_STATIC_ASSERT(sizeof(UINT64) == 8, uint64_is_64_bit);
DMLPY_STATIC_ASSERT(sizeof(FLOAT) == 4, float_is_32_bit);
DMLPY_STATIC_ASSERT(sizeof(DML_TENSOR_DATA_TYPE) == 4, enum_is_32_bit);

#if UINTPTR_MAX == 0xFFFFFFFFFFFFFFFFu
#define DMLPY_CHECK_LAYOUT(type, size) DMLPY_STATIC_ASSERT(sizeof(type) == (size), size_of_##type)
#define DMLPY_CHECK_OFFSET(type, field, off) \
    DMLPY_STATIC_ASSERT(offsetof(type, field) == (off), offset_of_##type##_##field)

DMLPY_CHECK_LAYOUT(DML_TENSOR_DESC, 16);
DMLPY_CHECK_OFFSET(DML_TENSOR_DESC, Desc, 8);

DMLPY_CHECK_LAYOUT(DML_BUFFER_TENSOR_DESC, 48);
DMLPY_CHECK_OFFSET(DML_BUFFER_TENSOR_DESC, Flags, 4);
DMLPY_CHECK_OFFSET(DML_BUFFER_TENSOR_DESC, DimensionCount, 8);
DMLPY_CHECK_OFFSET(DML_BUFFER_TENSOR_DESC, Sizes, 16);
DMLPY_CHECK_OFFSET(DML_BUFFER_TENSOR_DESC, Strides, 24);
DMLPY_CHECK_OFFSET(DML_BUFFER_TENSOR_DESC, TotalTensorSizeInBytes, 32);
DMLPY_CHECK_OFFSET(DML_BUFFER_TENSOR_DESC, GuaranteedBaseOffsetAlignment, 40);

DMLPY_CHECK_LAYOUT(DML_OPERATOR_DESC, 16);
DMLPY_CHECK_OFFSET(DML_OPERATOR_DESC, Desc, 8);

DMLPY_CHECK_LAYOUT(DML_AVERAGE_POOLING_OPERATOR_DESC, 64);
DMLPY_CHECK_OFFSET(DML_AVERAGE_POOLING_OPERATOR_DESC, DimensionCount, 16);
DMLPY_CHECK_OFFSET(DML_AVERAGE_POOLING_OPERATOR_DESC, Strides, 24);
DMLPY_CHECK_OFFSET(DML_AVERAGE_POOLING_OPERATOR_DESC, WindowSize, 32);
DMLPY_CHECK_OFFSET(DML_AVERAGE_POOLING_OPERATOR_DESC, StartPadding, 40);
DMLPY_CHECK_OFFSET(DML_AVERAGE_POOLING_OPERATOR_DESC, EndPadding, 48);
DMLPY_CHECK_OFFSET(DML_AVERAGE_POOLING_OPERATOR_DESC, IncludePadding, 56);

DMLPY_CHECK_LAYOUT(DML_AVERAGE_POOLING1_OPERATOR_DESC, 72);
DMLPY_CHECK_OFFSET(DML_AVERAGE_POOLING1_OPERATOR_DESC, DimensionCount, 16);
DMLPY_CHECK_OFFSET(DML_AVERAGE_POOLING1_OPERATOR_DESC, Strides, 24);
DMLPY_CHECK_OFFSET(DML_AVERAGE_POOLING1_OPERATOR_DESC, WindowSize, 32);
DMLPY_CHECK_OFFSET(DML_AVERAGE_POOLING1_OPERATOR_DESC, StartPadding, 40);
DMLPY_CHECK_OFFSET(DML_AVERAGE_POOLING1_OPERATOR_DESC, EndPadding, 48);
DMLPY_CHECK_OFFSET(DML_AVERAGE_POOLING1_OPERATOR_DESC, Dilations, 56);
DMLPY_CHECK_OFFSET(DML_AVERAGE_POOLING1_OPERATOR_DESC, IncludePadding, 64);

DMLPY_CHECK_LAYOUT(DML_AVERAGE_POOLING_GRAD_OPERATOR_DESC, 64);
DMLPY_CHECK_LAYOUT(DML_LP_POOLING_OPERATOR_DESC, 64);
DMLPY_CHECK_LAYOUT(DML_LP_POOLING1_OPERATOR_DESC, 72);

DMLPY_CHECK_LAYOUT(DML_MAX_POOLING_OPERATOR_DESC, 56);
DMLPY_CHECK_LAYOUT(DML_MAX_POOLING1_OPERATOR_DESC, 64);
DMLPY_CHECK_OFFSET(DML_MAX_POOLING1_OPERATOR_DESC, DimensionCount, 24);
DMLPY_CHECK_LAYOUT(DML_MAX_POOLING2_OPERATOR_DESC, 72);
DMLPY_CHECK_OFFSET(DML_MAX_POOLING2_OPERATOR_DESC, Dilations, 64);

DMLPY_CHECK_LAYOUT(DML_CONVOLUTION_OPERATOR_DESC, 104);
DMLPY_CHECK_OFFSET(DML_CONVOLUTION_OPERATOR_DESC, BiasTensor, 16);
DMLPY_CHECK_OFFSET(DML_CONVOLUTION_OPERATOR_DESC, OutputTensor, 24);
DMLPY_CHECK_OFFSET(DML_CONVOLUTION_OPERATOR_DESC, Mode, 32);
DMLPY_CHECK_OFFSET(DML_CONVOLUTION_OPERATOR_DESC, Direction, 36);
DMLPY_CHECK_OFFSET(DML_CONVOLUTION_OPERATOR_DESC, DimensionCount, 40);
DMLPY_CHECK_OFFSET(DML_CONVOLUTION_OPERATOR_DESC, Strides, 48);
DMLPY_CHECK_OFFSET(DML_CONVOLUTION_OPERATOR_DESC, Dilations, 56);
DMLPY_CHECK_OFFSET(DML_CONVOLUTION_OPERATOR_DESC, StartPadding, 64);
DMLPY_CHECK_OFFSET(DML_CONVOLUTION_OPERATOR_DESC, EndPadding, 72);
DMLPY_CHECK_OFFSET(DML_CONVOLUTION_OPERATOR_DESC, OutputPadding, 80);
DMLPY_CHECK_OFFSET(DML_CONVOLUTION_OPERATOR_DESC, GroupCount, 88);
DMLPY_CHECK_OFFSET(DML_CONVOLUTION_OPERATOR_DESC, FusedActivation, 96);

DMLPY_CHECK_LAYOUT(DML_SPACE_TO_DEPTH_OPERATOR_DESC, 24);
DMLPY_CHECK_LAYOUT(DML_DEPTH_TO_SPACE_OPERATOR_DESC, 24);
DMLPY_CHECK_LAYOUT(DML_SPACE_TO_DEPTH1_OPERATOR_DESC, 24);
DMLPY_CHECK_OFFSET(DML_SPACE_TO_DEPTH1_OPERATOR_DESC, BlockSize, 16);
DMLPY_CHECK_OFFSET(DML_SPACE_TO_DEPTH1_OPERATOR_DESC, Order, 20);
DMLPY_CHECK_LAYOUT(DML_DEPTH_TO_SPACE1_OPERATOR_DESC, 24);
DMLPY_CHECK_OFFSET(DML_DEPTH_TO_SPACE1_OPERATOR_DESC, Order, 20);

DMLPY_CHECK_LAYOUT(DML_ACTIVATION_IDENTITY_OPERATOR_DESC, 16);
DMLPY_CHECK_LAYOUT(DML_ACTIVATION_RELU_OPERATOR_DESC, 16);
DMLPY_CHECK_LAYOUT(DML_ACTIVATION_SIGMOID_OPERATOR_DESC, 16);
DMLPY_CHECK_LAYOUT(DML_ACTIVATION_LEAKY_RELU_OPERATOR_DESC, 24);
DMLPY_CHECK_LAYOUT(DML_ACTIVATION_LINEAR_OPERATOR_DESC, 24);
DMLPY_CHECK_OFFSET(DML_ACTIVATION_LINEAR_OPERATOR_DESC, Alpha, 16);
DMLPY_CHECK_OFFSET(DML_ACTIVATION_LINEAR_OPERATOR_DESC, Beta, 20);
DMLPY_CHECK_LAYOUT(DML_ACTIVATION_ELU_OPERATOR_DESC, 24);
DMLPY_CHECK_LAYOUT(DML_ACTIVATION_HARD_SIGMOID_OPERATOR_DESC, 24);
DMLPY_CHECK_LAYOUT(DML_ACTIVATION_TANH_OPERATOR_DESC, 16);
DMLPY_CHECK_LAYOUT(DML_ACTIVATION_SOFTPLUS_OPERATOR_DESC, 24);
DMLPY_CHECK_LAYOUT(DML_ACTIVATION_GELU_OPERATOR_DESC, 16);

DMLPY_CHECK_LAYOUT(DML_GRAPH_EDGE_DESC, 16);
DMLPY_CHECK_LAYOUT(DML_INPUT_GRAPH_EDGE_DESC, 24);
DMLPY_CHECK_OFFSET(DML_INPUT_GRAPH_EDGE_DESC, Name, 16);
DMLPY_CHECK_LAYOUT(DML_OUTPUT_GRAPH_EDGE_DESC, 24);
DMLPY_CHECK_LAYOUT(DML_INTERMEDIATE_GRAPH_EDGE_DESC, 24);
DMLPY_CHECK_OFFSET(DML_INTERMEDIATE_GRAPH_EDGE_DESC, Name, 16);
DMLPY_CHECK_LAYOUT(DML_GRAPH_NODE_DESC, 16);
DMLPY_CHECK_LAYOUT(DML_OPERATOR_GRAPH_NODE_DESC, 16);
DMLPY_CHECK_LAYOUT(DML_CONSTANT_DATA_GRAPH_NODE_DESC, 24);
DMLPY_CHECK_LAYOUT(DML_GRAPH_DESC, 72);
DMLPY_CHECK_OFFSET(DML_GRAPH_DESC, NodeCount, 8);
DMLPY_CHECK_OFFSET(DML_GRAPH_DESC, Nodes, 16);
DMLPY_CHECK_OFFSET(DML_GRAPH_DESC, InputEdgeCount, 24);
DMLPY_CHECK_OFFSET(DML_GRAPH_DESC, InputEdges, 32);
DMLPY_CHECK_OFFSET(DML_GRAPH_DESC, OutputEdgeCount, 40);
DMLPY_CHECK_OFFSET(DML_GRAPH_DESC, OutputEdges, 48);
DMLPY_CHECK_OFFSET(DML_GRAPH_DESC, IntermediateEdgeCount, 56);
DMLPY_CHECK_OFFSET(DML_GRAPH_DESC, IntermediateEdges, 64);

DMLPY_CHECK_LAYOUT(DML_BINDING_DESC, 16);
DMLPY_CHECK_LAYOUT(DML_BUFFER_BINDING, 24);
DMLPY_CHECK_OFFSET(DML_BUFFER_BINDING, Offset, 8);
DMLPY_CHECK_OFFSET(DML_BUFFER_BINDING, SizeInBytes, 16);
DMLPY_CHECK_LAYOUT(DML_BUFFER_ARRAY_BINDING, 16);
DMLPY_CHECK_LAYOUT(DML_BINDING_PROPERTIES, 24);
DMLPY_CHECK_OFFSET(DML_BINDING_PROPERTIES, TemporaryResourceSize, 8);
DMLPY_CHECK_LAYOUT(DML_BINDING_TABLE_DESC, 32);
DMLPY_CHECK_OFFSET(DML_BINDING_TABLE_DESC, CPUDescriptorHandle, 8);
DMLPY_CHECK_OFFSET(DML_BINDING_TABLE_DESC, GPUDescriptorHandle, 16);
DMLPY_CHECK_OFFSET(DML_BINDING_TABLE_DESC, SizeInDescriptors, 24);

#undef DMLPY_CHECK_LAYOUT
#undef DMLPY_CHECK_OFFSET
#endif /* 64-bit */

#ifdef __cplusplus
} /* extern "C" */

/* Bit operators for the flag enums, as DirectML.h provides through DEFINE_ENUM_FLAG_OPERATORS. */
#if defined(DEFINE_ENUM_FLAG_OPERATORS)
DEFINE_ENUM_FLAG_OPERATORS(DML_TENSOR_FLAGS)
DEFINE_ENUM_FLAG_OPERATORS(DML_EXECUTION_FLAGS)
DEFINE_ENUM_FLAG_OPERATORS(DML_CREATE_DEVICE_FLAGS)
#else
#define DMLPY_ENUM_FLAG_OPERATORS(T)                                                              \
    inline T operator|(T a, T b) { return T(static_cast<unsigned>(a) | static_cast<unsigned>(b)); } \
    inline T operator&(T a, T b) { return T(static_cast<unsigned>(a) & static_cast<unsigned>(b)); } \
    inline T operator^(T a, T b) { return T(static_cast<unsigned>(a) ^ static_cast<unsigned>(b)); } \
    inline T operator~(T a) { return T(~static_cast<unsigned>(a)); }                               \
    inline T& operator|=(T& a, T b) { return a = a | b; }                                           \
    inline T& operator&=(T& a, T b) { return a = a & b; }                                           \
    inline T& operator^=(T& a, T b) { return a = a ^ b; }
DMLPY_ENUM_FLAG_OPERATORS(DML_TENSOR_FLAGS)
DMLPY_ENUM_FLAG_OPERATORS(DML_EXECUTION_FLAGS)
DMLPY_ENUM_FLAG_OPERATORS(DML_CREATE_DEVICE_FLAGS)
#undef DMLPY_ENUM_FLAG_OPERATORS
#endif
#endif /* __cplusplus */

#endif /* DMLPY_DML_TYPES_H */
