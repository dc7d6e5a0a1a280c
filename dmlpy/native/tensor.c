/*
 * tensor.c - validation of buffer tensor descriptions and bound buffers.
 */
#include <string.h>

#include "dmlpy_internal.h"

uint32_t dmlpy_element_size(DML_TENSOR_DATA_TYPE t) {
    switch (t) {
    case DML_TENSOR_DATA_TYPE_FLOAT32:
    case DML_TENSOR_DATA_TYPE_UINT32:
    case DML_TENSOR_DATA_TYPE_INT32:
        return 4;
    case DML_TENSOR_DATA_TYPE_FLOAT16:
    case DML_TENSOR_DATA_TYPE_UINT16:
    case DML_TENSOR_DATA_TYPE_INT16:
        return 2;
    case DML_TENSOR_DATA_TYPE_UINT8:
    case DML_TENSOR_DATA_TYPE_INT8:
        return 1;
    case DML_TENSOR_DATA_TYPE_FLOAT64:
    case DML_TENSOR_DATA_TYPE_UINT64:
    case DML_TENSOR_DATA_TYPE_INT64:
        return 8;
    default:
        return 0;
    }
}

int32_t dmlpy_tensor_from_desc(const DML_TENSOR_DESC* desc, dmlpy_tensor* out) {
    const DML_BUFFER_TENSOR_DESC* b;
    uint32_t rank, i;
    uint64_t last = 0; /* element index of the farthest reachable element */
    uint64_t bytes;

    if (desc == NULL || out == NULL) return DMLPY_E_NULL_ARGUMENT;
    if (desc->Type != DML_TENSOR_TYPE_BUFFER) return DMLPY_E_INVALID_DESC;
    b = (const DML_BUFFER_TENSOR_DESC*)desc->Desc;
    if (b == NULL) return DMLPY_E_NULL_ARGUMENT;
    rank = b->DimensionCount;
    if (rank < 1 || rank > DMLPY_MAX_RANK) return DMLPY_E_INVALID_DESC;
    if (b->Sizes == NULL) return DMLPY_E_NULL_ARGUMENT;

    memset(out, 0, sizeof *out);
    out->data_type = b->DataType;
    out->element_size = dmlpy_element_size(b->DataType);
    if (out->element_size == 0) return DMLPY_E_INVALID_DESC;
    out->rank = rank;

    {
        /* Sizes are nonzero and a buffer tensor holds at most 2^32 - 1 elements (the DML_BUFFER_TENSOR_DESC page). */
        uint64_t count = 1;
        for (i = 0; i < rank; ++i) {
            if (b->Sizes[i] == 0) return DMLPY_E_INVALID_DESC;
            out->sizes[i] = b->Sizes[i];
            if (!dmlpy_mul_u64(count, b->Sizes[i], &count) || count > UINT32_MAX) return DMLPY_E_INVALID_DESC;
        }
    }
    if (b->Strides != NULL) {
        for (i = 0; i < rank; ++i) out->strides[i] = b->Strides[i];
    } else {
        /* Packed row-major. A product that overflows makes the extent overflow too: report it there. */
        uint64_t stride = 1;
        int ok = 1;
        for (i = rank; i-- > 0;) {
            out->strides[i] = ok ? stride : UINT64_MAX;
            if (ok) ok = dmlpy_mul_u64(stride, out->sizes[i], &stride);
        }
    }
    for (i = 0; i < rank; ++i) {
        uint64_t term;
        if (!dmlpy_mul_u64(out->sizes[i] - 1, out->strides[i], &term) || !dmlpy_add_u64(last, term, &last)) {
            return DMLPY_E_BUFFER_TOO_SMALL; /* no buffer can be that large */
        }
    }
    if (!dmlpy_add_u64(last, 1, &bytes) || !dmlpy_mul_u64(bytes, out->element_size, &bytes) ||
        bytes > (uint64_t)INT64_MAX) {
        return DMLPY_E_BUFFER_TOO_SMALL;
    }
    out->extent_bytes = bytes;
    return DMLPY_OK;
}

int32_t dmlpy_tensor_bind(dmlpy_tensor* t, const DMLPY_BOUND_BUFFER* buffer) {
    if (t == NULL || buffer == NULL || buffer->Data == NULL) return DMLPY_E_NULL_ARGUMENT;
    if (((uintptr_t)buffer->Data) % t->element_size != 0) return DMLPY_E_INVALID_ARGUMENT;
    if (t->extent_bytes > buffer->SizeInBytes) return DMLPY_E_BUFFER_TOO_SMALL;
    if ((uint64_t)UINTPTR_MAX - (uintptr_t)buffer->Data < t->extent_bytes) return DMLPY_E_INVALID_ARGUMENT;
    t->data = (char*)buffer->Data;
    t->bound_bytes = buffer->SizeInBytes;
    return DMLPY_OK;
}

int dmlpy_tensors_overlap(const dmlpy_tensor* a, const dmlpy_tensor* b) {
    uintptr_t a0 = (uintptr_t)a->data, a1 = a0 + (uintptr_t)a->extent_bytes;
    uintptr_t b0 = (uintptr_t)b->data, b1 = b0 + (uintptr_t)b->extent_bytes;
    return a0 < b1 && b0 < a1;
}
