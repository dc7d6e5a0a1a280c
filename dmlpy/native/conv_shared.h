/*
 * conv_shared.h - what convolution.c and winograd.c share (private): the AVX-512 switch, element access,
 * the vector epilogue helpers (bias + fused activation, float32/float16 stores), the scratch block and
 * the interface of the Winograd path.
 */
#ifndef DMLPY_NATIVE_CONV_SHARED_H
#define DMLPY_NATIVE_CONV_SHARED_H

#include <stdint.h>

#include "activation.h"
#include "dmlpy_internal.h"
#include "half.h"

/* CONV_AVX512: the kernels' 16-lane paths, on AVX-512 or on AVX2 through v16.h's emulation (same bits) */
#include "v16.h"
#if defined(DMLPY_V16)
#define CONV_AVX512 1
#endif

#if defined(__GNUC__) || defined(__clang__)
#define CONV_INLINE static inline __attribute__((always_inline))
/* a hot loop kept out of a large caller, whose register pressure would otherwise spill its accumulators */
#define CONV_NOINLINE static __attribute__((noinline))
#else
#define CONV_INLINE static inline
#define CONV_NOINLINE static
#endif

#if DMLPY_V16 == 2
/* C[r][8j .. 8j + 8) (+)= sum over k < K of A[r * ars + k * aks] * B_j[k][0 .. 8) for r < R <= 4, j < NY <= 3, one
 * fused multiply-add per k in increasing k from zero (the AVX-512 kernels' order, lane for lane), then the running
 * sum C added when acc; B_j row k at bc[j] + off[k] (off != NULL) or bc[j] + k * ldb; C rows ldc floats apart. With
 * bias: C[r][..] = sum + bias[r] instead, and *bad = 1 when a sum is infinite or NaN (conv_small.h's epilogue).
 * At most 12 accumulators, NY B vectors and a broadcast: AVX2's 16 ymm registers (the emulated 16-lane
 * micro-kernels' 16 to 24 zmm accumulators would be spilled at every k step). */
#if defined(__GNUC__) && !defined(__clang__)
#define V16E_UNROLL _Pragma("GCC unroll 16")
#define V16E_UNROLL4 _Pragma("GCC unroll 4")
#else
#define V16E_UNROLL
#define V16E_UNROLL4
#endif
CONV_INLINE void v16e_fma_tile(unsigned R, unsigned NY, uint64_t K, const float* restrict A, uint64_t ars, uint64_t aks,
                               const float* const* bc, const int64_t* restrict off, uint64_t ldb, float* restrict C,
                               uint64_t ldc, int acc, const float* restrict bias, uint32_t* bad) {
    __m256 c[4][3];
    uint64_t kk;
    unsigned r, j;
    V16E_UNROLL for (r = 0; r < 4; ++r) V16E_UNROLL for (j = 0; j < 3; ++j) c[r][j] = _mm256_setzero_ps();
    V16E_UNROLL4 for (kk = 0; kk < K; ++kk) {
        const float* a = A + kk * aks;
        const int64_t o = off != NULL ? off[kk] : (int64_t)(kk * ldb);
        __m256 b[3];
        V16E_UNROLL for (j = 0; j < 3; ++j) b[j] = j < NY ? _mm256_loadu_ps(bc[j] + o) : _mm256_setzero_ps();
        V16E_UNROLL for (r = 0; r < 4; ++r) {
            if (r < R) {
                const __m256 av = _mm256_broadcast_ss(a + r * ars);
                V16E_UNROLL for (j = 0; j < 3; ++j) if (j < NY) c[r][j] = _mm256_fmadd_ps(av, b[j], c[r][j]);
            }
        }
    }
    if (bias != NULL) {
        const __m256i e = _mm256_set1_epi32(0x7F800000);
        int hit = 0;
        V16E_UNROLL for (r = 0; r < 4; ++r) {
            if (r < R) {
                const __m256 br = _mm256_broadcast_ss(bias + r);
                V16E_UNROLL for (j = 0; j < 3; ++j) {
                    if (j < NY) {
                        hit |= _mm256_movemask_epi8(_mm256_cmpeq_epi32(_mm256_and_si256(_mm256_castps_si256(c[r][j]), e), e));
                        _mm256_storeu_ps(C + r * ldc + 8 * j, _mm256_add_ps(c[r][j], br));
                    }
                }
            }
        }
        if (hit) *bad = 1;
        return;
    }
    V16E_UNROLL for (r = 0; r < 4; ++r) {
        if (r < R) {
            V16E_UNROLL for (j = 0; j < 3; ++j) {
                if (j < NY) {
                    float* d = C + r * ldc + 8 * j;
                    _mm256_storeu_ps(d, acc ? _mm256_add_ps(c[r][j], _mm256_loadu_ps(d)) : c[r][j]);
                }
            }
        }
    }
}
#endif

/* ---- element access ------------------------------------------------------------------------------ */

CONV_INLINE float load_elem(int half, const char* base, uint64_t index) {
    return half ? dmlpy_h2f(((const uint16_t*)base)[index]) : ((const float*)base)[index];
}

CONV_INLINE void store_elem(int half, char* base, uint64_t index, float v) {
    if (half) {
        ((uint16_t*)base)[index] = dmlpy_f2h(v);
    } else {
        ((float*)base)[index] = v;
    }
}

/* ---- vector epilogue ----------------------------------------------------------------------------- */

#if defined(CONV_AVX512)
static inline __mmask16 mask_n(uint64_t n) {
    return n >= 16 ? (__mmask16)0xFFFFu : (__mmask16)((1u << n) - 1u);
}

/* The fused activations the epilogues' fast loops apply inline: none (NONE, IDENTITY), RELU and CLIP, the ones real
 * models fuse. A fast loop is written once with the kind as a parameter and called with each constant (act_fast_call),
 * so no copy holds a switch per vector; act_fast gives 0 for the other activations (the general loops, finish_vec). */
enum { ACT_FAST_NONE = 1, ACT_FAST_RELU, ACT_FAST_CLIP };

CONV_INLINE int act_fast(const dmlpy_act* act) {
    switch (act->kind) {
    case DMLPY_ACT_NONE:
    case DMLPY_ACT_IDENTITY:
        return ACT_FAST_NONE;
    case DMLPY_ACT_RELU:
        return ACT_FAST_RELU;
    case DMLPY_ACT_CLIP:
        return ACT_FAST_CLIP;
    default:
        return 0;
    }
}

/* v + bias, then the activation `fast` names (a constant where inlined). */
CONV_INLINE __m512 act_fast_vec(int fast, const dmlpy_act* act, __m512 v, __m512 bias) {
    v = _mm512_add_ps(v, bias);
    if (fast == ACT_FAST_RELU) return dmlpy_act_relu_vec(v);
    if (fast == ACT_FAST_CLIP) return dmlpy_act_clip_vec(act, v);
    return v;
}

/* v + bias, then an activation act_fast does not cover (LINEAR, LEAKY_RELU inline; the others lane by lane). */
static __m512 finish_vec_other(const dmlpy_act* act, __m512 v, __m512 bias) {
    v = _mm512_add_ps(v, bias);
    switch (act->kind) {
    case DMLPY_ACT_LINEAR:
        return _mm512_fmadd_ps(_mm512_set1_ps(act->alpha), v, _mm512_set1_ps(act->beta));
    case DMLPY_ACT_LEAKY_RELU:
        return _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_NGE_UQ), v,
                                  _mm512_set1_ps(act->alpha));
    default: {
        float tmp[16];
        int i;
        _mm512_storeu_ps(tmp, v);
        for (i = 0; i < 16; ++i) tmp[i] = dmlpy_act_scalar(act, tmp[i]);
        return _mm512_loadu_ps(tmp);
    }
    }
}

/* v + bias, then the activation: the common ones tested first and inline. */
CONV_INLINE __m512 finish_vec(const dmlpy_act* act, __m512 v, __m512 bias) {
    const int fast = act_fast(act);
    if (fast == ACT_FAST_RELU) return act_fast_vec(ACT_FAST_RELU, act, v, bias);
    if (fast == ACT_FAST_NONE) return _mm512_add_ps(v, bias);
    if (fast == ACT_FAST_CLIP) return act_fast_vec(ACT_FAST_CLIP, act, v, bias);
    return finish_vec_other(act, v, bias);
}

/* CALL (an expression using the name `fast_`) with fast_ each constant ACT_FAST_* equal to `fast` */
#define act_fast_call(fast, CALL)                  \
    do {                                           \
        if ((fast) == ACT_FAST_RELU) {             \
            const int fast_ = ACT_FAST_RELU;       \
            CALL;                                  \
        } else if ((fast) == ACT_FAST_CLIP) {      \
            const int fast_ = ACT_FAST_CLIP;       \
            CALL;                                  \
        } else {                                   \
            const int fast_ = ACT_FAST_NONE;       \
            CALL;                                  \
        }                                          \
    } while (0)

/* Stores the lanes of m; nt: a whole, 64-byte aligned float32 vector goes around the caches (outputs much
 * larger than the caches: no read-for-ownership, and the packed operands stay cached). */
CONV_INLINE void store_vec(int half, int nt, char* y, uint64_t index, __m512 v, __mmask16 m) {
    if (half) {
        _mm256_mask_storeu_epi16((uint16_t*)y + index, m,
                                 _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    } else if (m == 0xFFFF) {
        if (nt && (((uintptr_t)((float*)y + index)) & 63) == 0) {
            _mm512_stream_ps((float*)y + index, v);
        } else {
            _mm512_storeu_ps((float*)y + index, v);
        }
    } else {
        _mm512_mask_storeu_ps((float*)y + index, m, v);
    }
}
#endif

/* ---- scratch (convolution.c) --------------------------------------------------------------------- */

/* A block with `bytes` usable bytes from block + 64 (the first 64 bytes hold its size), or NULL when malloc
 * fails; give it back with conv_scratch_put. Blocks up to CONV_SCRATCH_KEEP are kept for the next call. */
void* conv_scratch_get(uint64_t bytes);
void conv_scratch_put(void* block);

/* ---- the Winograd path (winograd.c) -------------------------------------------------------------- */

/* A 2-D convolution made of nph (at most DMLPY_WINO_MAX_PHASES) dense stride-1, dilation-1 R x R
 * correlations per group, R = 5 - m (m = 2: F(2x2, 3x3), 3x3 filters; m = 3: F(3x3, 2x2), 2x2 filters),
 * phase f (ph[f]) writing
 *   y[y0 + n*ys_n + (g*Cout_g + oc)*ys_c + oh*ys_h + ow*ys_w] = act(bias[g*Cout_g + oc] +
 *       sum_{ic, kh, kw} x[n, g*Cin_g + ic, oh + kh - pad_h, ow + kw - pad_w] * F[g, oc, ic, kh, kw])
 * for oh < OH, ow < OW (x is 0 outside [0, H) x [0, W)), where the correlation filter is read as
 *   F[g, oc, ic, kh, kw] = w[g*wg + oc*wo + ic*wi + (kh0 + kh*ksh)*ws_h + (kw0 + kw*ksw)*ws_w]
 * (the caller guarantees those filter indices are inside the filter). Element strides throughout; outputs
 * beyond OH x OW (OutputPadding) are not written. */
#define DMLPY_WINO_MAX_PHASES 16
typedef struct dmlpy_wino_phase {
    uint64_t OH, OW; /* computed outputs */
    int64_t pad_h, pad_w;
    int64_t kh0, kw0, ksh, ksw;
    uint64_t y0;
} dmlpy_wino_phase;

typedef struct dmlpy_wino_problem {
    int half; /* FLOAT16 tensors (else FLOAT32) */
    unsigned m; /* output tile side: 2 or 3 */
    unsigned nph;
    dmlpy_act act;
    uint64_t N, G, Cin_g, Cout_g;
    uint64_t H, W; /* input */
    uint64_t xs_n, xs_c, xs_h, xs_w;
    uint64_t wg, wo, wi, ws_h, ws_w;
    uint64_t ys_n, ys_c, ys_h, ys_w;
    uint64_t bs_c;
    const char* x;
    const char* w;
    const char* b; /* NULL: no bias */
    char* y;
    dmlpy_wino_phase ph[DMLPY_WINO_MAX_PHASES];
} dmlpy_wino_problem;

/* Runs the problem by Winograd when that is faster than the GEMM path. Returns DMLPY_OK,
 * DMLPY_E_OUT_OF_MEMORY, or -1 when the problem is left to the other paths, which then write every output
 * (a call declined after the fact, on an infinity or NaN, may have written some: outputs never alias an
 * input, so the inputs are intact). */
int32_t dmlpy_winograd_conv(const dmlpy_wino_problem* p, unsigned threadCount);

#endif /* DMLPY_NATIVE_CONV_SHARED_H */
