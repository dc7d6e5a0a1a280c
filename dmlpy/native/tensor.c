/*
 * tensor.c - validation of buffer tensor descriptions and bound buffers.
 */
#include <stdlib.h>
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

int dmlpy_layout_nested(const dmlpy_tensor* t) {
    uint32_t order[DMLPY_MAX_RANK], n = 0, i, j;
    uint64_t reach = 0;
    for (i = 0; i < t->rank; ++i) {
        if (t->sizes[i] > 1) order[n++] = i;
    }
    for (i = 1; i < n; ++i) { /* insertion sort by stride: at most 8 dims */
        uint32_t d = order[i];
        for (j = i; j > 0 && t->strides[order[j - 1]] > t->strides[d]; --j) order[j] = order[j - 1];
        order[j] = d;
    }
    for (i = 0; i < n; ++i) {
        const uint32_t d = order[i];
        if (t->strides[d] <= reach) return 0;
        reach += (t->sizes[d] - 1) * t->strides[d]; /* within the validated extent: no overflow */
    }
    return 1;
}

int32_t dmlpy_output_stage(dmlpy_tensor* t, dmlpy_staged_output* stage) {
    uint64_t count = 1, stride = 1;
    uint32_t i;
    stage->block = NULL;
    if (dmlpy_layout_nested(t)) return DMLPY_OK;
    for (i = 0; i < t->rank; ++i) count *= t->sizes[i]; /* <= 2^32 - 1: checked by tensor_from_desc */
    stage->block = calloc((size_t)count, t->element_size);
    if (stage->block == NULL) return DMLPY_E_OUT_OF_MEMORY;
    stage->target = *t;
    for (i = t->rank; i-- > 0;) {
        t->strides[i] = stride;
        stride *= t->sizes[i];
    }
    t->data = (char*)stage->block;
    t->extent_bytes = t->bound_bytes = count * t->element_size;
    return DMLPY_OK;
}

void dmlpy_output_unstage(dmlpy_staged_output* stage, int write) {
    const dmlpy_tensor* t = &stage->target;
    uint64_t idx[DMLPY_MAX_RANK] = {0};
    uint64_t off = 0, count = 1, e;
    uint32_t i;
    if (stage->block == NULL) return;
    if (write) {
        const size_t size = t->element_size;
        for (i = 0; i < t->rank; ++i) count *= t->sizes[i];
        for (e = 0; e < count; ++e) { /* row-major: a later index overwrites an earlier one */
            memcpy(t->data + off * size, (const char*)stage->block + e * size, size);
            for (i = t->rank; i-- > 0;) {
                off += t->strides[i];
                if (++idx[i] < t->sizes[i]) break;
                off -= idx[i] * t->strides[i];
                idx[i] = 0;
            }
        }
    }
    free(stage->block);
    stage->block = NULL;
}
