/*
 * dmlpy.c - the library's entry points: dmlpy_execute dispatches on DML_OPERATOR_DESC.Type to the chosen
 * instruction-set variant's kernel (dispatch.c).
 */
#include "dmlpy_internal.h"

#ifndef DMLPY_NATIVE_VERSION
#define DMLPY_NATIVE_VERSION "0+unknown"
#endif

/* build.py passes DMLPY_NATIVE_ARCH's flags; none means the compiler's default target. */
#ifndef DMLPY_NATIVE_ARCH_FLAGS
#define DMLPY_NATIVE_ARCH_FLAGS ""
#endif

/* build.py passes the ABI version of dmlpy/_version.py; a header that disagrees must not build. */
#if defined(DMLPY_EXPECTED_ABI_VERSION) && (DMLPY_EXPECTED_ABI_VERSION != DMLPY_ABI_VERSION)
#error "dmlpy/_version.py NATIVE_ABI_VERSION differs from DMLPY_ABI_VERSION in include/dmlpy/dmlpy.h"
#endif

int32_t dmlpy_execute(const DML_OPERATOR_DESC* desc, UINT inputCount, const DMLPY_BOUND_BUFFER* inputs,
                      UINT outputCount, const DMLPY_BOUND_BUFFER* outputs, UINT threadCount) {
    const dmlpy_kernels* kernels = dmlpy_kernels_chosen();
    if (desc == NULL) return DMLPY_E_NULL_ARGUMENT;
    switch (desc->Type) {
    case DML_OPERATOR_AVERAGE_POOLING:
    case DML_OPERATOR_AVERAGE_POOLING1:
        return kernels->average_pooling(desc, inputCount, inputs, outputCount, outputs, threadCount);
    case DML_OPERATOR_SPACE_TO_DEPTH:
    case DML_OPERATOR_DEPTH_TO_SPACE:
    case DML_OPERATOR_SPACE_TO_DEPTH1:
    case DML_OPERATOR_DEPTH_TO_SPACE1:
        return kernels->space_depth(desc, inputCount, inputs, outputCount, outputs, threadCount);
    case DML_OPERATOR_MAX_POOLING:
    case DML_OPERATOR_MAX_POOLING1:
    case DML_OPERATOR_MAX_POOLING2:
        return kernels->max_pooling(desc, inputCount, inputs, outputCount, outputs, threadCount);
    case DML_OPERATOR_CONVOLUTION:
        return kernels->convolution(desc, inputCount, inputs, outputCount, outputs, threadCount);
    case DML_OPERATOR_GEMM:
        return kernels->gemm(desc, inputCount, inputs, outputCount, outputs, threadCount);
    case DML_OPERATOR_ACTIVATION_ELU:
    case DML_OPERATOR_ACTIVATION_HARD_SIGMOID:
    case DML_OPERATOR_ACTIVATION_IDENTITY:
    case DML_OPERATOR_ACTIVATION_LEAKY_RELU:
    case DML_OPERATOR_ACTIVATION_LINEAR:
    case DML_OPERATOR_ACTIVATION_RELU:
    case DML_OPERATOR_ACTIVATION_SIGMOID:
    case DML_OPERATOR_ACTIVATION_SOFTPLUS:
    case DML_OPERATOR_ACTIVATION_TANH:
    case DML_OPERATOR_ACTIVATION_GELU:
    case DML_OPERATOR_ELEMENT_WISE_ADD:
    case DML_OPERATOR_ELEMENT_WISE_ADD1:
    case DML_OPERATOR_ELEMENT_WISE_SUBTRACT:
    case DML_OPERATOR_ELEMENT_WISE_MULTIPLY:
    case DML_OPERATOR_ELEMENT_WISE_DIVIDE:
    case DML_OPERATOR_ELEMENT_WISE_MAX:
    case DML_OPERATOR_ELEMENT_WISE_MIN:
    case DML_OPERATOR_ELEMENT_WISE_POW:
    case DML_OPERATOR_ELEMENT_WISE_IDENTITY:
    case DML_OPERATOR_ELEMENT_WISE_ABS:
    case DML_OPERATOR_ELEMENT_WISE_NEGATE:
    case DML_OPERATOR_ELEMENT_WISE_CLIP:
    case DML_OPERATOR_ELEMENT_WISE_CLIP1:
    case DML_OPERATOR_ELEMENT_WISE_SQRT:
    case DML_OPERATOR_ELEMENT_WISE_RECIP:
    case DML_OPERATOR_ELEMENT_WISE_EXP:
    case DML_OPERATOR_ELEMENT_WISE_LOG:
    case DML_OPERATOR_ELEMENT_WISE_TANH:
    case DML_OPERATOR_ELEMENT_WISE_ERF:
    case DML_OPERATOR_ELEMENT_WISE_CONSTANT_POW:
        return kernels->element_wise(desc, inputCount, inputs, outputCount, outputs, threadCount);
    case DML_OPERATOR_RESAMPLE:
    case DML_OPERATOR_RESAMPLE1:
    case DML_OPERATOR_RESAMPLE2:
    case DML_OPERATOR_RESAMPLE3:
        return kernels->resample(desc, inputCount, inputs, outputCount, outputs, threadCount);
    case DML_OPERATOR_BATCH_NORMALIZATION:
    case DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION:
    case DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1:
    case DML_OPERATOR_ACTIVATION_SOFTMAX:
    case DML_OPERATOR_ACTIVATION_SOFTMAX1:
    case DML_OPERATOR_ACTIVATION_LOG_SOFTMAX:
    case DML_OPERATOR_ACTIVATION_LOG_SOFTMAX1:
        return kernels->normalization(desc, inputCount, inputs, outputCount, outputs, threadCount);
    case DML_OPERATOR_REDUCE:
    case DML_OPERATOR_ARGMIN:
    case DML_OPERATOR_ARGMAX:
    case DML_OPERATOR_ACTIVATION_HARDMAX:
    case DML_OPERATOR_ACTIVATION_HARDMAX1:
        return kernels->reduction(desc, inputCount, inputs, outputCount, outputs, threadCount);
    case DML_OPERATOR_JOIN:
    case DML_OPERATOR_SPLIT:
    case DML_OPERATOR_SLICE:
    case DML_OPERATOR_SLICE1:
    case DML_OPERATOR_PADDING:
    case DML_OPERATOR_PADDING1:
    case DML_OPERATOR_CAST:
    case DML_OPERATOR_GATHER:
    case DML_OPERATOR_GATHER_ELEMENTS:
    case DML_OPERATOR_GATHER_ND:
    case DML_OPERATOR_GATHER_ND1:
        return kernels->data_movement(desc, inputCount, inputs, outputCount, outputs, threadCount);
    default:
        return DMLPY_E_UNSUPPORTED_OPERATOR;
    }
}

int32_t dmlpy_execute_sequence(UINT count, const DMLPY_DISPATCH* const* dispatches, UINT threadCount, UINT* failedIndex) {
    UINT i;
    if (count > 0 && dispatches == NULL) return DMLPY_E_NULL_ARGUMENT;
    for (i = 0; i < count; ++i) {
        const DMLPY_DISPATCH* d = dispatches[i];
        const int32_t status = d == NULL ? DMLPY_E_NULL_ARGUMENT
                                         : dmlpy_execute(d->Desc, d->InputCount, d->Inputs, d->OutputCount, d->Outputs, threadCount);
        if (status != DMLPY_OK) {
            if (failedIndex != NULL) *failedIndex = i;
            return status;
        }
    }
    return DMLPY_OK;
}

const char* dmlpy_status_name(int32_t status) {
    switch (status) {
    case DMLPY_OK: return "DMLPY_OK";
    case DMLPY_E_NULL_ARGUMENT: return "DMLPY_E_NULL_ARGUMENT";
    case DMLPY_E_UNSUPPORTED_OPERATOR: return "DMLPY_E_UNSUPPORTED_OPERATOR";
    case DMLPY_E_INVALID_DESC: return "DMLPY_E_INVALID_DESC";
    case DMLPY_E_BINDING_COUNT: return "DMLPY_E_BINDING_COUNT";
    case DMLPY_E_BUFFER_TOO_SMALL: return "DMLPY_E_BUFFER_TOO_SMALL";
    case DMLPY_E_OUT_OF_MEMORY: return "DMLPY_E_OUT_OF_MEMORY";
    case DMLPY_E_INVALID_ARGUMENT: return "DMLPY_E_INVALID_ARGUMENT";
    default: return "DMLPY_E_UNKNOWN";
    }
}

const char* dmlpy_native_version(void) { return DMLPY_NATIVE_VERSION; }

UINT dmlpy_abi_version(void) { return DMLPY_ABI_VERSION; }

UINT dmlpy_hardware_concurrency(void) { return dmlpy_online_cpus(); }

const char* dmlpy_native_arch_flags(void) { return DMLPY_NATIVE_ARCH_FLAGS; }
