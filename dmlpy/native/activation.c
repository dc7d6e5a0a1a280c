/*
 * activation.c - the standalone element-wise activation operators ACTIVATION_IDENTITY (38), LINEAR (40),
 * RELU (44), LEAKY_RELU (39), SIGMOID (47), TANH (51), ELU (35), HARD_SIGMOID (37), SOFTPLUS (49) and
 * GELU (157), and the activation helpers the convolution uses for its FusedActivation.
 *
 * One input, one output: same DataType (FLOAT32 or FLOAT16), same rank (1 to 8) and the same Sizes;
 * each may have any element strides. The output may be the input itself (same Data, same strides: the
 * in-place execution DirectML allows); any other overlap is refused. An output layout that maps two
 * indices to one element is staged (dmlpy_output_stage): in place, every value is then computed from the
 * unmodified input, however many indices share it. FLOAT16 is computed in float32 and rounded once.
 *
 * The tensors are walked as rows: dimensions that are contiguous in both tensors are merged, size-1
 * dimensions dropped, and the innermost remaining dimension is processed in chunks of ACT_CHUNK
 * elements through a float buffer (gather, apply, scatter), with direct contiguous loops when both inner
 * strides are 1.
 */
#include <stdlib.h>
#include <string.h>

#include "activation.h"
#include "dmlpy_internal.h"
#include "half.h"

#if defined(__AVX512F__) && !defined(DMLPY_NO_AVX512)
#include <immintrin.h>
#define ACT_AVX512 1
#endif

#define ACT_CHUNK 512

/* ---- desc reading --------------------------------------------------------------------------------- */

int32_t dmlpy_activation_read(const DML_OPERATOR_DESC* desc, int fused, dmlpy_act* act,
                              const DML_TENSOR_DESC** input, const DML_TENSOR_DESC** output) {
    const DML_TENSOR_DESC* in_desc;
    const DML_TENSOR_DESC* out_desc;
    if (desc == NULL || act == NULL) return DMLPY_E_NULL_ARGUMENT;
    if (desc->Desc == NULL) return DMLPY_E_NULL_ARGUMENT;
    act->alpha = 0.0f;
    act->beta = 0.0f;
    /* Every activation desc begins with InputTensor, OutputTensor; read those through the identity
     * layout only after the type is known to be an activation. */
    switch (desc->Type) {
    case DML_OPERATOR_ACTIVATION_IDENTITY:
        act->kind = DMLPY_ACT_IDENTITY;
        break;
    case DML_OPERATOR_ACTIVATION_LINEAR: {
        const DML_ACTIVATION_LINEAR_OPERATOR_DESC* d = (const DML_ACTIVATION_LINEAR_OPERATOR_DESC*)desc->Desc;
        act->kind = DMLPY_ACT_LINEAR;
        act->alpha = d->Alpha;
        act->beta = d->Beta;
        break;
    }
    case DML_OPERATOR_ACTIVATION_RELU:
        act->kind = DMLPY_ACT_RELU;
        break;
    case DML_OPERATOR_ACTIVATION_LEAKY_RELU: {
        const DML_ACTIVATION_LEAKY_RELU_OPERATOR_DESC* d =
            (const DML_ACTIVATION_LEAKY_RELU_OPERATOR_DESC*)desc->Desc;
        act->kind = DMLPY_ACT_LEAKY_RELU;
        act->alpha = d->Alpha;
        break;
    }
    case DML_OPERATOR_ACTIVATION_SIGMOID:
        act->kind = DMLPY_ACT_SIGMOID;
        break;
    case DML_OPERATOR_ACTIVATION_TANH:
        act->kind = DMLPY_ACT_TANH;
        break;
    case DML_OPERATOR_ACTIVATION_ELU: {
        const DML_ACTIVATION_ELU_OPERATOR_DESC* d = (const DML_ACTIVATION_ELU_OPERATOR_DESC*)desc->Desc;
        act->kind = DMLPY_ACT_ELU;
        act->alpha = d->Alpha;
        break;
    }
    case DML_OPERATOR_ACTIVATION_HARD_SIGMOID: {
        const DML_ACTIVATION_HARD_SIGMOID_OPERATOR_DESC* d =
            (const DML_ACTIVATION_HARD_SIGMOID_OPERATOR_DESC*)desc->Desc;
        act->kind = DMLPY_ACT_HARD_SIGMOID;
        act->alpha = d->Alpha;
        act->beta = d->Beta;
        break;
    }
    case DML_OPERATOR_ACTIVATION_SOFTPLUS: {
        const DML_ACTIVATION_SOFTPLUS_OPERATOR_DESC* d = (const DML_ACTIVATION_SOFTPLUS_OPERATOR_DESC*)desc->Desc;
        act->kind = DMLPY_ACT_SOFTPLUS;
        act->alpha = d->Steepness;
        break;
    }
    case DML_OPERATOR_ACTIVATION_GELU:
        act->kind = DMLPY_ACT_GELU;
        break;
    /* Fusable per DirectML's fused-activation page, but without a native kernel here. */
    case DML_OPERATOR_ACTIVATION_SCALED_TANH:
    case DML_OPERATOR_ACTIVATION_THRESHOLDED_RELU:
    case DML_OPERATOR_ACTIVATION_CELU:
    case DML_OPERATOR_ACTIVATION_SCALED_ELU:
    case DML_OPERATOR_ACTIVATION_PARAMETRIC_SOFTPLUS:
    case DML_OPERATOR_ACTIVATION_SOFTSIGN:
    case DML_OPERATOR_ACTIVATION_SHRINK:
    case DML_OPERATOR_ELEMENT_WISE_CLIP:
        return DMLPY_E_UNSUPPORTED_OPERATOR;
    default:
        return fused ? DMLPY_E_INVALID_DESC : DMLPY_E_UNSUPPORTED_OPERATOR;
    }
    {
        const DML_ACTIVATION_IDENTITY_OPERATOR_DESC* d = (const DML_ACTIVATION_IDENTITY_OPERATOR_DESC*)desc->Desc;
        in_desc = d->InputTensor;
        out_desc = d->OutputTensor;
    }
    if (fused) {
        if (in_desc != NULL || out_desc != NULL) return DMLPY_E_INVALID_DESC;
    }
    if (input) *input = in_desc;
    if (output) *output = out_desc;
    return DMLPY_OK;
}

/* ---- row application ------------------------------------------------------------------------------ */

void dmlpy_act_apply_row(const dmlpy_act* a, float* v, size_t n) {
    size_t i = 0;
    switch (a->kind) {
    case DMLPY_ACT_NONE:
    case DMLPY_ACT_IDENTITY:
        return;
#if defined(ACT_AVX512)
    case DMLPY_ACT_LINEAR: {
        __m512 al = _mm512_set1_ps(a->alpha), be = _mm512_set1_ps(a->beta);
        for (; i + 16 <= n; i += 16) _mm512_storeu_ps(v + i, _mm512_fmadd_ps(al, _mm512_loadu_ps(v + i), be));
        break;
    }
    case DMLPY_ACT_RELU: {
        __m512 z = _mm512_setzero_ps();
        for (; i + 16 <= n; i += 16) {
            __m512 x = _mm512_loadu_ps(v + i);
            _mm512_storeu_ps(v + i, _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, z, _CMP_LT_OQ), x, z));
        }
        break;
    }
    case DMLPY_ACT_LEAKY_RELU: {
        __m512 z = _mm512_setzero_ps(), al = _mm512_set1_ps(a->alpha);
        for (; i + 16 <= n; i += 16) {
            __m512 x = _mm512_loadu_ps(v + i);
            __mmask16 neg = _mm512_cmp_ps_mask(x, z, _CMP_NGE_UQ); /* !(x >= 0): negative or NaN */
            _mm512_storeu_ps(v + i, _mm512_mask_mul_ps(x, neg, x, al));
        }
        break;
    }
#endif
    default:
        break;
    }
    for (; i < n; ++i) v[i] = dmlpy_act_scalar(a, v[i]);
}

/* ---- the standalone operator ------------------------------------------------------------------------ */

typedef struct act_plan {
    dmlpy_act act;
    int half;
    uint32_t rank;                /* merged dims; the last one is the row */
    uint64_t sizes[DMLPY_MAX_RANK];
    uint64_t xs[DMLPY_MAX_RANK], ys[DMLPY_MAX_RANK];
    uint64_t chunks_per_row;
    const char* x;
    char* y;
} act_plan;

static void act_chunk(const act_plan* p, uint64_t xoff, uint64_t yoff, uint64_t n) {
    float buf[ACT_CHUNK];
    const uint64_t xs = p->xs[p->rank - 1], ys = p->ys[p->rank - 1];
    uint64_t j;
    if (!p->half && xs == 1 && ys == 1) {
        const float* src = (const float*)p->x + xoff;
        float* dst = (float*)p->y + yoff;
        if (dst != src) memcpy(dst, src, (size_t)n * sizeof(float));
        dmlpy_act_apply_row(&p->act, dst, (size_t)n);
        return;
    }
    if (p->half) {
        const uint16_t* src = (const uint16_t*)p->x + xoff;
        uint16_t* dst = (uint16_t*)p->y + yoff;
        if (xs == 1) {
            dmlpy_h2f_row(buf, src, (size_t)n);
        } else {
            for (j = 0; j < n; ++j) buf[j] = dmlpy_h2f(src[j * xs]);
        }
        dmlpy_act_apply_row(&p->act, buf, (size_t)n);
        for (j = 0; j < n; ++j) dst[j * ys] = dmlpy_f2h(buf[j]);
    } else {
        const float* src = (const float*)p->x + xoff;
        float* dst = (float*)p->y + yoff;
        for (j = 0; j < n; ++j) buf[j] = src[j * xs];
        dmlpy_act_apply_row(&p->act, buf, (size_t)n);
        for (j = 0; j < n; ++j) dst[j * ys] = buf[j];
    }
}

static void act_run(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    const act_plan* p = (const act_plan*)vp;
    const uint32_t last = p->rank - 1;
    const uint64_t len = p->sizes[last];
    uint64_t item;
    (void)worker;
    for (item = begin; item < end; ++item) {
        uint64_t row = item / p->chunks_per_row, chunk = item % p->chunks_per_row;
        uint64_t xoff = 0, yoff = 0, t = row, j0, n;
        uint32_t i;
        for (i = last; i-- > 0;) {
            uint64_t idx = t % p->sizes[i];
            t /= p->sizes[i];
            xoff += idx * p->xs[i];
            yoff += idx * p->ys[i];
        }
        j0 = chunk * ACT_CHUNK;
        n = len - j0 < ACT_CHUNK ? len - j0 : ACT_CHUNK;
        act_chunk(p, xoff + j0 * p->xs[last], yoff + j0 * p->ys[last], n);
    }
}

int32_t dmlpy_activation(const DML_OPERATOR_DESC* desc, UINT inputCount, const DMLPY_BOUND_BUFFER* inputs,
                         UINT outputCount, const DMLPY_BOUND_BUFFER* outputs, UINT threadCount) {
    act_plan p;
    dmlpy_tensor xt, yt;
    const DML_TENSOR_DESC* in_desc = NULL;
    const DML_TENSOR_DESC* out_desc = NULL;
    int32_t st;
    uint32_t i;
    uint64_t rows = 1, items, elements, work;
    unsigned threads;
    dmlpy_staged_output stage;

    if (desc == NULL) return DMLPY_E_NULL_ARGUMENT;
    memset(&p, 0, sizeof p);
    st = dmlpy_activation_read(desc, 0, &p.act, &in_desc, &out_desc);
    if (st != DMLPY_OK) return st;
    if (in_desc == NULL || out_desc == NULL) return DMLPY_E_NULL_ARGUMENT;
    if (inputCount != 1 || outputCount != 1) return DMLPY_E_BINDING_COUNT;
    if (inputs == NULL || outputs == NULL) return DMLPY_E_NULL_ARGUMENT;

    st = dmlpy_tensor_from_desc(in_desc, &xt);
    if (st != DMLPY_OK) return st;
    st = dmlpy_tensor_from_desc(out_desc, &yt);
    if (st != DMLPY_OK) return st;
    if (xt.data_type != DML_TENSOR_DATA_TYPE_FLOAT32 && xt.data_type != DML_TENSOR_DATA_TYPE_FLOAT16) {
        return DMLPY_E_INVALID_DESC;
    }
    if (yt.data_type != xt.data_type || yt.rank != xt.rank) return DMLPY_E_INVALID_DESC;
    for (i = 0; i < xt.rank; ++i) {
        if (xt.sizes[i] != yt.sizes[i]) return DMLPY_E_INVALID_DESC;
    }
    st = dmlpy_tensor_bind(&xt, &inputs[0]);
    if (st != DMLPY_OK) return st;
    st = dmlpy_tensor_bind(&yt, &outputs[0]);
    if (st != DMLPY_OK) return st;
    if (dmlpy_tensors_overlap(&xt, &yt)) {
        /* In place: the very same elements, element for element. */
        if (xt.data != yt.data) return DMLPY_E_INVALID_ARGUMENT;
        for (i = 0; i < xt.rank; ++i) {
            if (xt.sizes[i] > 1 && xt.strides[i] != yt.strides[i]) return DMLPY_E_INVALID_ARGUMENT;
        }
    }
    st = dmlpy_output_stage(&yt, &stage);
    if (st != DMLPY_OK) return st;

    p.half = xt.data_type == DML_TENSOR_DATA_TYPE_FLOAT16;
    p.x = xt.data;
    p.y = yt.data;
    /* Merge dimensions: drop size-1 dims, fuse a dim into the next when both tensors are contiguous
     * across them. */
    p.rank = 0;
    for (i = 0; i < xt.rank; ++i) {
        if (xt.sizes[i] == 1) continue;
        if (p.rank > 0) {
            uint32_t l = p.rank - 1;
            /* strides <= 2^32 - 1 and sizes <= 2^32 - 1: the products cannot overflow */
            if (xt.strides[i] <= UINT32_MAX && yt.strides[i] <= UINT32_MAX &&
                p.xs[l] == xt.strides[i] * xt.sizes[i] && p.ys[l] == yt.strides[i] * yt.sizes[i]) {
                p.sizes[l] *= xt.sizes[i];
                p.xs[l] = xt.strides[i];
                p.ys[l] = yt.strides[i];
                continue;
            }
        }
        p.sizes[p.rank] = xt.sizes[i];
        p.xs[p.rank] = xt.strides[i];
        p.ys[p.rank] = yt.strides[i];
        ++p.rank;
    }
    if (p.rank == 0) {
        p.rank = 1;
        p.sizes[0] = 1;
        p.xs[0] = p.ys[0] = 1;
    }
    elements = 1;
    for (i = 0; i < p.rank; ++i) elements *= p.sizes[i]; /* <= 2^32 - 1: checked by tensor_from_desc */
    for (i = 0; i + 1 < p.rank; ++i) rows *= p.sizes[i];
    p.chunks_per_row = (p.sizes[p.rank - 1] + ACT_CHUNK - 1) / ACT_CHUNK;
    items = rows * p.chunks_per_row;
    work = elements * (dmlpy_act_is_transcendental(p.act.kind) ? 16u : 2u);
    /* In place is safe on any number of threads: the output is one-to-one (or staged), so every element
     * belongs to one chunk. */
    threads = dmlpy_choose_threads(work, items, threadCount);
    dmlpy_parallel_for(items, dmlpy_choose_grain(items, threads), threads, act_run, &p);
    dmlpy_output_unstage(&stage, 1);
    return DMLPY_OK;
}
