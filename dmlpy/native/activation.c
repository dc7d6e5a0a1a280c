/*
 * activation.c - the activation functions of ACTIVATION_IDENTITY (38), LINEAR (40), RELU (44),
 * LEAKY_RELU (39), SIGMOID (47), TANH (51), ELU (35), HARD_SIGMOID (37), SOFTPLUS (49) and GELU (157):
 * reading their descs and applying them to float rows. The standalone operators run through the
 * element-wise loop (element_wise.c: an IDENTITY whose row is then activated, with that loop's strides,
 * in-place and overlap rules); CONVOLUTION and ELEMENT_WISE_ADD1 apply them as their FusedActivation.
 */
#include <string.h>

#include "activation.h"
#include "dmlpy_internal.h"
#include "half.h"

#if defined(DMLPY_V16) /* activation.h included v16.h */
#define ACT_AVX512 1
#endif

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
        return DMLPY_E_UNSUPPORTED_OPERATOR;
    case DML_OPERATOR_ELEMENT_WISE_CLIP: { /* its struct also begins with InputTensor, OutputTensor */
        const DML_ELEMENT_WISE_CLIP_OPERATOR_DESC* d = (const DML_ELEMENT_WISE_CLIP_OPERATOR_DESC*)desc->Desc;
        if (fused != DMLPY_ACT_FUSED_CLIP) return fused ? DMLPY_E_INVALID_DESC : DMLPY_E_UNSUPPORTED_OPERATOR;
        if (d->ScaleBias != NULL) return DMLPY_E_UNSUPPORTED_OPERATOR;
        act->kind = DMLPY_ACT_CLIP;
        act->alpha = d->Min;
        act->beta = d->Max;
        break;
    }
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

void dmlpy_act_apply_row_from(const dmlpy_act* a, float* v, const float* x, size_t n) {
    size_t i = 0;
    switch (a->kind) {
    case DMLPY_ACT_NONE:
    case DMLPY_ACT_IDENTITY:
        if (v != x) memmove(v, x, n * sizeof(float));
        return;
#if defined(ACT_AVX512)
    case DMLPY_ACT_LINEAR: {
        __m512 al = _mm512_set1_ps(a->alpha), be = _mm512_set1_ps(a->beta);
        for (; i + 16 <= n; i += 16) _mm512_storeu_ps(v + i, _mm512_fmadd_ps(al, _mm512_loadu_ps(x + i), be));
        break;
    }
    case DMLPY_ACT_RELU:
        for (; i + 16 <= n; i += 16) _mm512_storeu_ps(v + i, dmlpy_act_relu_vec(_mm512_loadu_ps(x + i)));
        break;
    case DMLPY_ACT_LEAKY_RELU: {
        __m512 z = _mm512_setzero_ps(), al = _mm512_set1_ps(a->alpha);
        for (; i + 16 <= n; i += 16) {
            __m512 t = _mm512_loadu_ps(x + i);
            __mmask16 neg = _mm512_cmp_ps_mask(t, z, _CMP_NGE_UQ); /* !(t >= 0): negative or NaN */
            _mm512_storeu_ps(v + i, _mm512_mask_mul_ps(t, neg, t, al));
        }
        break;
    }
    case DMLPY_ACT_CLIP:
        for (; i + 16 <= n; i += 16) _mm512_storeu_ps(v + i, dmlpy_act_clip_vec(a, _mm512_loadu_ps(x + i)));
        break;
#endif
    default:
        break;
    }
    for (; i < n; ++i) v[i] = dmlpy_act_scalar(a, x[i]);
}

void dmlpy_act_apply_row(const dmlpy_act* a, float* v, size_t n) { dmlpy_act_apply_row_from(a, v, v, n); }
