/*
 * activation.h - element-wise activation functions shared by the standalone ACTIVATION_* operators
 * (activation.c) and the fused activation of CONVOLUTION (convolution.c). Private.
 *
 * Formulas (docs/convolution-semantics.md; DirectML's activation and fused-activation pages), computed in float32:
 *   IDENTITY      x
 *   LINEAR        Alpha*x + Beta
 *   RELU          max(0, x)                      (NaN stays NaN)
 *   LEAKY_RELU    x >= 0 ? x : Alpha*x
 *   SIGMOID       1 / (1 + exp(-x))
 *   TANH          tanh(x)
 *   ELU           x > 0 ? x : Alpha*(exp(x) - 1)   (expm1 for accuracy near 0)
 *   HARD_SIGMOID  max(0, min(Alpha*x + Beta, 1))
 *   SOFTPLUS      log(1 + exp(Steepness*x)) / Steepness   (evaluated without overflow)
 *   GELU          0.5*x*(1 + erf(x / sqrt(2)))
 *   CLIP          min(max(x, Min), Max)   (ELEMENT_WISE_CLIP without ScaleBias, fused into CONVOLUTION and GEMM
 *                                          from FL 6.0; NumPy's maximum and minimum: a NaN x, Min or Max gives
 *                                          NaN, and of two equal values, zeros of either sign, the bound)
 */
#ifndef DMLPY_NATIVE_ACTIVATION_H
#define DMLPY_NATIVE_ACTIVATION_H

#include <math.h>
#include <stddef.h>

#include "dmlpy_internal.h"

enum {
    DMLPY_ACT_NONE = 0, /* no fused activation */
    DMLPY_ACT_IDENTITY,
    DMLPY_ACT_LINEAR,
    DMLPY_ACT_RELU,
    DMLPY_ACT_LEAKY_RELU,
    DMLPY_ACT_SIGMOID,
    DMLPY_ACT_TANH,
    DMLPY_ACT_ELU,
    DMLPY_ACT_HARD_SIGMOID,
    DMLPY_ACT_SOFTPLUS,
    DMLPY_ACT_GELU,
    DMLPY_ACT_CLIP
};

/* What dmlpy_activation_read reads: a standalone ACTIVATION_* operator, a FusedActivation, or the FusedActivation
 * of a CONVOLUTION or GEMM, which may also be an ELEMENT_WISE_CLIP. */
enum { DMLPY_ACT_STANDALONE = 0, DMLPY_ACT_FUSED = 1, DMLPY_ACT_FUSED_CLIP = 2 };

typedef struct dmlpy_act {
    int kind;    /* DMLPY_ACT_* */
    float alpha; /* Alpha, Steepness for SOFTPLUS, Min for CLIP */
    float beta;  /* Beta, Max for CLIP */
} dmlpy_act;

/* Reads an ACTIVATION_* operator desc. fused (DMLPY_ACT_FUSED or DMLPY_ACT_FUSED_CLIP): the desc is a
 * FusedActivation, whose InputTensor and OutputTensor must both be NULL (*input / *output are then set to NULL).
 * DMLPY_ACT_STANDALONE: a standalone operator; *input / *output receive its tensor descs (not checked here).
 * Returns DMLPY_OK, DMLPY_E_NULL_ARGUMENT (desc->Desc NULL), DMLPY_E_INVALID_DESC (fused with non-NULL
 * tensors, or a Type that is no activation this library knows or this host cannot fuse), DMLPY_E_UNSUPPORTED_OPERATOR
 * (an activation without a native kernel, a CLIP with a ScaleBias). */
int32_t dmlpy_activation_read(const DML_OPERATOR_DESC* desc, int fused, dmlpy_act* act,
                              const DML_TENSOR_DESC** input, const DML_TENSOR_DESC** output);

/* True when the activation needs exp/tanh/erf (the vector helpers then fall back to libm per element). */
static inline int dmlpy_act_is_transcendental(int kind) {
    return kind == DMLPY_ACT_SIGMOID || kind == DMLPY_ACT_TANH || kind == DMLPY_ACT_ELU ||
           kind == DMLPY_ACT_SOFTPLUS || kind == DMLPY_ACT_GELU;
}

static inline float dmlpy_act_scalar(const dmlpy_act* a, float x) {
    switch (a->kind) {
    case DMLPY_ACT_LINEAR:
        return a->alpha * x + a->beta;
    case DMLPY_ACT_RELU:
        return x < 0.0f ? 0.0f : x;
    case DMLPY_ACT_LEAKY_RELU:
        return x >= 0.0f ? x : a->alpha * x;
    case DMLPY_ACT_SIGMOID:
        return 1.0f / (1.0f + expf(-x));
    case DMLPY_ACT_TANH:
        return tanhf(x);
    case DMLPY_ACT_ELU:
        return x > 0.0f ? x : a->alpha * expm1f(x);
    case DMLPY_ACT_HARD_SIGMOID: {
        float v = a->alpha * x + a->beta;
        v = v < 1.0f ? v : (v != v ? v : 1.0f);
        return v > 0.0f ? v : (v != v ? v : 0.0f);
    }
    case DMLPY_ACT_SOFTPLUS: {
        /* log(1 + e^z) = max(z, 0) + log1p(e^-|z|), exact in both tails. */
        float z = a->alpha * x;
        float m = z > 0.0f ? z : 0.0f;
        if (z != z) return z;
        return (m + log1pf(expf(-fabsf(z)))) / a->alpha;
    }
    case DMLPY_ACT_GELU:
        return 0.5f * x * (1.0f + erff(x * 0.70710678118654752440f));
    case DMLPY_ACT_CLIP: {
        const float m = x != x ? x : (x > a->alpha ? x : a->alpha); /* a NaN Min falls through as Min */
        return m != m ? m : (m < a->beta ? m : a->beta);
    }
    default: /* NONE, IDENTITY */
        return x;
    }
}

#include "v16.h"
#if defined(DMLPY_V16)
/* RELU on 16 lanes, as dmlpy_act_scalar's: 0 where x < 0 (a NaN and -0 stay). */
static inline __m512 dmlpy_act_relu_vec(__m512 x) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ), x, _mm512_setzero_ps());
}

/* CLIP on 16 lanes, as dmlpy_act_scalar's: vmaxps and vminps return their second operand (the bound) for equal
 * values and when either is a NaN, so a NaN x, and a NaN after the max, is put back. */
static inline __m512 dmlpy_act_clip_vec(const dmlpy_act* a, __m512 x) {
    const __m512 m = _mm512_mask_mov_ps(_mm512_max_ps(x, _mm512_set1_ps(a->alpha)), _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
    return _mm512_mask_mov_ps(_mm512_min_ps(m, _mm512_set1_ps(a->beta)), _mm512_cmp_ps_mask(m, m, _CMP_UNORD_Q), m);
}
#endif

/* v[i] = f(v[i]) for i < n, contiguous float32 (vectorised for the piecewise-linear activations). */
void dmlpy_act_apply_row(const dmlpy_act* a, float* v, size_t n);
/* v[i] = the activation of x[i] (x may be v): one pass where a copy and then the activation in place were two */
void dmlpy_act_apply_row_from(const dmlpy_act* a, float* v, const float* x, size_t n);

#endif /* DMLPY_NATIVE_ACTIVATION_H */
