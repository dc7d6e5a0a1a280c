/*
 * v16.h - the 16-lane float32 vectors the convolution, GEMM, pooling and activation kernels are written in.
 *
 * On an AVX-512 variant (F, BW, VL) they are the hardware's zmm registers and this header only includes
 * <immintrin.h>. On the AVX2 variant (x86-64-v3 CPUs without AVX-512: Haswell to Alder Lake, Zen 1 to 3) the same source compiles
 * against this header's emulation: each __m512 is a pair of ymm halves, each _mm512_* (and AVX-512VL masked
 * _mm256_*) intrinsic the kernels use is a short inline function or macro over AVX2, FMA and F16C, lane for
 * lane the same operation. So both targets compute the same products and sums in the same order and give the
 * same bits; only the speed differs. Without this, every kernel written for 16 lanes fell back to its scalar
 * loop on AVX2 machines (a 256x768x3072 GEMM ran at 4% of the machine's matmul peak).
 *
 * DMLPY_V16: 1 where the vectors are native, 2 where they are emulated, undefined where neither (baseline
 * builds, DMLPY_NO_AVX512). Masked loads read no masked-off element and masked stores write none, as the
 * AVX-512 instructions (a kernel may rely on it at the end of a row).
 */
#ifndef DMLPY_NATIVE_V16_H
#define DMLPY_NATIVE_V16_H

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && !defined(DMLPY_NO_AVX512)
#include <immintrin.h>
#define DMLPY_V16 1
/* the even (odd) lanes of the 32 floats a:b */
static inline __m512 v16_even_lanes(__m512 a, __m512 b) {
    return _mm512_permutex2var_ps(a, _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30), b);
}
static inline __m512 v16_odd_lanes(__m512 a, __m512 b) {
    return _mm512_permutex2var_ps(a, _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31), b);
}
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__) && !defined(__AVX512F__) && !defined(DMLPY_NO_AVX512) && \
    !defined(DMLPY_NO_V16_EMULATION) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#include <stdint.h>
#include <string.h>
#define DMLPY_V16 2

typedef struct { __m256 lo, hi; } dmlpy_v16f;
typedef struct { __m256i lo, hi; } dmlpy_v16i;
typedef struct { __m256d lo, hi; } dmlpy_v8d;
/* __mmask8 / __mmask16 / __mmask32 are plain integer typedefs <immintrin.h> declares for every target. */

#define V16_INLINE static inline __attribute__((always_inline))

/* ---- masks: bit i of k <-> lane i all ones ------------------------------------------------------- */

V16_INLINE __m256i v16_lanes8(unsigned k) {
    const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)k), bit), bit);
}
V16_INLINE unsigned v16_bits8(__m256 m) { return (unsigned)_mm256_movemask_ps(m); }
V16_INLINE __m256 v16_sel(__m256 no, __m256 yes, unsigned k8) { /* k8 ? yes : no, lane by lane */
    return _mm256_blendv_ps(no, yes, _mm256_castsi256_ps(v16_lanes8(k8)));
}

/* ---- casts ------------------------------------------------------------------------------------------ */

V16_INLINE dmlpy_v16i v16_castps_si512(dmlpy_v16f a) { return (dmlpy_v16i){_mm256_castps_si256(a.lo), _mm256_castps_si256(a.hi)}; }
V16_INLINE dmlpy_v16f v16_castsi512_ps(dmlpy_v16i a) { return (dmlpy_v16f){_mm256_castsi256_ps(a.lo), _mm256_castsi256_ps(a.hi)}; }
V16_INLINE dmlpy_v8d v16_castps_pd(dmlpy_v16f a) { return (dmlpy_v8d){_mm256_castps_pd(a.lo), _mm256_castps_pd(a.hi)}; }
V16_INLINE dmlpy_v16f v16_castpd_ps(dmlpy_v8d a) { return (dmlpy_v16f){_mm256_castpd_ps(a.lo), _mm256_castpd_ps(a.hi)}; }
V16_INLINE __m256 v16_castps512_ps256(dmlpy_v16f a) { return a.lo; }
V16_INLINE __m128 v16_castps512_ps128(dmlpy_v16f a) { return _mm256_castps256_ps128(a.lo); }
V16_INLINE dmlpy_v16f v16_castps256_ps512(__m256 a) { return (dmlpy_v16f){a, _mm256_setzero_ps()}; }

/* ---- float32 loads and stores ---------------------------------------------------------------------- */

V16_INLINE dmlpy_v16f v16_loadu_ps(const void* p) {
    return (dmlpy_v16f){_mm256_loadu_ps((const float*)p), _mm256_loadu_ps((const float*)p + 8)};
}
V16_INLINE dmlpy_v16f v16_load_ps(const void* p) {
    return (dmlpy_v16f){_mm256_load_ps((const float*)p), _mm256_load_ps((const float*)p + 8)};
}
V16_INLINE void v16_storeu_ps(void* p, dmlpy_v16f a) {
    _mm256_storeu_ps((float*)p, a.lo);
    _mm256_storeu_ps((float*)p + 8, a.hi);
}
V16_INLINE void v16_store_ps(void* p, dmlpy_v16f a) {
    _mm256_store_ps((float*)p, a.lo);
    _mm256_store_ps((float*)p + 8, a.hi);
}
V16_INLINE void v16_stream_ps(void* p, dmlpy_v16f a) {
    _mm256_stream_ps((float*)p, a.lo);
    _mm256_stream_ps((float*)p + 8, a.hi);
}
V16_INLINE __m256 v16_maskz_load8(unsigned k8, const float* p) {
    if ((k8 & 0xFFu) == 0xFFu) return _mm256_loadu_ps(p);
    if ((k8 & 0xFFu) == 0) return _mm256_setzero_ps();
    return _mm256_maskload_ps(p, v16_lanes8(k8));
}
V16_INLINE void v16_mask_store8(float* p, unsigned k8, __m256 a) {
    if ((k8 & 0xFFu) == 0xFFu) {
        _mm256_storeu_ps(p, a);
    } else if (k8 & 0xFFu) {
        _mm256_maskstore_ps(p, v16_lanes8(k8), a);
    }
}
V16_INLINE dmlpy_v16f v16_maskz_loadu_ps(__mmask16 k, const void* p) {
    return (dmlpy_v16f){v16_maskz_load8(k, (const float*)p), v16_maskz_load8((unsigned)k >> 8, (const float*)p + 8)};
}
V16_INLINE dmlpy_v16f v16_mask_loadu_ps(dmlpy_v16f src, __mmask16 k, const void* p) {
    const dmlpy_v16f v = v16_maskz_loadu_ps(k, p);
    return (dmlpy_v16f){v16_sel(src.lo, v.lo, k), v16_sel(src.hi, v.hi, (unsigned)k >> 8)};
}
V16_INLINE void v16_mask_storeu_ps(void* p, __mmask16 k, dmlpy_v16f a) {
    v16_mask_store8((float*)p, k, a.lo);
    v16_mask_store8((float*)p + 8, (unsigned)k >> 8, a.hi);
}
/* AVX-512VL forms on 8 lanes */
V16_INLINE __m256 v16_256_maskz_loadu_ps(__mmask8 k, const void* p) { return v16_maskz_load8(k, (const float*)p); }
V16_INLINE void v16_256_mask_storeu_ps(void* p, __mmask8 k, __m256 a) { v16_mask_store8((float*)p, k, a); }

/* 16-bit elements: AVX2 has no 16-bit masked load or store, so a partial mask goes element by element. */
V16_INLINE __m256i v16_256_maskz_loadu_epi16(__mmask16 k, const void* p) {
    uint16_t t[16];
    unsigned i;
    if (k == 0xFFFFu) return _mm256_loadu_si256((const __m256i*)p);
    for (i = 0; i < 16; ++i) t[i] = (k >> i) & 1u ? ((const uint16_t*)p)[i] : 0;
    return _mm256_loadu_si256((const __m256i*)t);
}
V16_INLINE void v16_256_mask_storeu_epi16(void* p, __mmask16 k, __m256i a) {
    uint16_t t[16];
    unsigned i;
    if (k == 0xFFFFu) {
        _mm256_storeu_si256((__m256i*)p, a);
        return;
    }
    _mm256_storeu_si256((__m256i*)t, a);
    for (i = 0; i < 16; ++i)
        if ((k >> i) & 1u) ((uint16_t*)p)[i] = t[i];
}
V16_INLINE void v16_128_mask_storeu_epi16(void* p, __mmask8 k, __m128i a) {
    uint16_t t[8];
    unsigned i;
    if (k == 0xFFu) {
        _mm_storeu_si128((__m128i*)p, a);
        return;
    }
    _mm_storeu_si128((__m128i*)t, a);
    for (i = 0; i < 8; ++i)
        if ((k >> i) & 1u) ((uint16_t*)p)[i] = t[i];
}

/* ---- integer vectors --------------------------------------------------------------------------------- */

V16_INLINE dmlpy_v16i v16_loadu_si512(const void* p) {
    return (dmlpy_v16i){_mm256_loadu_si256((const __m256i*)p), _mm256_loadu_si256((const __m256i*)p + 1)};
}
V16_INLINE dmlpy_v16i v16_load_si512(const void* p) {
    return (dmlpy_v16i){_mm256_load_si256((const __m256i*)p), _mm256_load_si256((const __m256i*)p + 1)};
}
V16_INLINE void v16_storeu_si512(void* p, dmlpy_v16i a) {
    _mm256_storeu_si256((__m256i*)p, a.lo);
    _mm256_storeu_si256((__m256i*)p + 1, a.hi);
}
V16_INLINE void v16_stream_si512(void* p, dmlpy_v16i a) {
    _mm256_stream_si256((__m256i*)p, a.lo);
    _mm256_stream_si256((__m256i*)p + 1, a.hi);
}
V16_INLINE dmlpy_v16i v16_setzero_si512(void) { return (dmlpy_v16i){_mm256_setzero_si256(), _mm256_setzero_si256()}; }
V16_INLINE dmlpy_v16i v16_set1_epi32(int x) { return (dmlpy_v16i){_mm256_set1_epi32(x), _mm256_set1_epi32(x)}; }
V16_INLINE dmlpy_v16i v16_set1_epi16(short x) { return (dmlpy_v16i){_mm256_set1_epi16(x), _mm256_set1_epi16(x)}; }
V16_INLINE dmlpy_v16i v16_setr_epi32(int e0, int e1, int e2, int e3, int e4, int e5, int e6, int e7, int e8, int e9,
                                     int e10, int e11, int e12, int e13, int e14, int e15) {
    return (dmlpy_v16i){_mm256_setr_epi32(e0, e1, e2, e3, e4, e5, e6, e7), _mm256_setr_epi32(e8, e9, e10, e11, e12, e13, e14, e15)};
}
V16_INLINE dmlpy_v16i v16_set_epi32(int e15, int e14, int e13, int e12, int e11, int e10, int e9, int e8, int e7, int e6,
                                    int e5, int e4, int e3, int e2, int e1, int e0) {
    return v16_setr_epi32(e0, e1, e2, e3, e4, e5, e6, e7, e8, e9, e10, e11, e12, e13, e14, e15);
}
#define V16_INT_OP(NAME, OP)                                                                                      \
    V16_INLINE dmlpy_v16i NAME(dmlpy_v16i a, dmlpy_v16i b) { return (dmlpy_v16i){OP(a.lo, b.lo), OP(a.hi, b.hi)}; }
V16_INT_OP(v16_and_si512, _mm256_and_si256)
V16_INT_OP(v16_or_si512, _mm256_or_si256)
V16_INT_OP(v16_add_epi32, _mm256_add_epi32)
V16_INT_OP(v16_mullo_epi32, _mm256_mullo_epi32)
#undef V16_INT_OP
V16_INLINE dmlpy_v16i v16_srli_epi32(dmlpy_v16i a, unsigned n) {
    return (dmlpy_v16i){_mm256_srli_epi32(a.lo, (int)n), _mm256_srli_epi32(a.hi, (int)n)};
}
V16_INLINE dmlpy_v16i v16_mask_sub_epi32(dmlpy_v16i src, __mmask16 k, dmlpy_v16i a, dmlpy_v16i b) {
    const __m256i m0 = v16_lanes8(k), m1 = v16_lanes8((unsigned)k >> 8);
    return (dmlpy_v16i){_mm256_blendv_epi8(src.lo, _mm256_sub_epi32(a.lo, b.lo), m0),
                        _mm256_blendv_epi8(src.hi, _mm256_sub_epi32(a.hi, b.hi), m1)};
}
V16_INLINE __mmask16 v16_cmpeq_epi32_mask(dmlpy_v16i a, dmlpy_v16i b) {
    return (__mmask16)(v16_bits8(_mm256_castsi256_ps(_mm256_cmpeq_epi32(a.lo, b.lo))) |
                       v16_bits8(_mm256_castsi256_ps(_mm256_cmpeq_epi32(a.hi, b.hi))) << 8);
}
V16_INLINE __mmask16 v16_mask_cmpeq_epi32_mask(__mmask16 k, dmlpy_v16i a, dmlpy_v16i b) {
    return (__mmask16)(k & v16_cmpeq_epi32_mask(a, b));
}
V16_INLINE __mmask16 v16_cmpge_epi32_mask(dmlpy_v16i a, dmlpy_v16i b) { /* signed a >= b: not b > a */
    return (__mmask16)(~(v16_bits8(_mm256_castsi256_ps(_mm256_cmpgt_epi32(b.lo, a.lo))) |
                         v16_bits8(_mm256_castsi256_ps(_mm256_cmpgt_epi32(b.hi, a.hi))) << 8) & 0xFFFFu);
}
V16_INLINE __mmask32 v16_cmpeq_epi16_mask(dmlpy_v16i a, dmlpy_v16i b) { /* 32 lanes of 16 bits */
    const unsigned lo = (unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi16(a.lo, b.lo));
    const unsigned hi = (unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi16(a.hi, b.hi));
    return (__mmask32)(_pext_u32(lo, 0xAAAAAAAAu) | _pext_u32(hi, 0xAAAAAAAAu) << 16);
}
/* elements imm .. imm + 15 of the 32 elements b (0 .. 15), a (16 .. 31) */
V16_INLINE dmlpy_v16i v16_alignr_epi32(dmlpy_v16i a, dmlpy_v16i b, unsigned imm) {
    int32_t t[32];
    _mm256_storeu_si256((__m256i*)t, b.lo);
    _mm256_storeu_si256((__m256i*)t + 1, b.hi);
    _mm256_storeu_si256((__m256i*)t + 2, a.lo);
    _mm256_storeu_si256((__m256i*)t + 3, a.hi);
    return v16_loadu_si512(t + (imm & 15u));
}

/* ---- float32 arithmetic -------------------------------------------------------------------------------- */

V16_INLINE dmlpy_v16f v16_set1_ps(float x) { return (dmlpy_v16f){_mm256_set1_ps(x), _mm256_set1_ps(x)}; }
V16_INLINE dmlpy_v16f v16_setzero_ps(void) { return (dmlpy_v16f){_mm256_setzero_ps(), _mm256_setzero_ps()}; }
#define V16_FLOAT_OP(NAME, OP)                                                                                    \
    V16_INLINE dmlpy_v16f NAME(dmlpy_v16f a, dmlpy_v16f b) { return (dmlpy_v16f){OP(a.lo, b.lo), OP(a.hi, b.hi)}; }
V16_FLOAT_OP(v16_add_ps, _mm256_add_ps)
V16_FLOAT_OP(v16_sub_ps, _mm256_sub_ps)
V16_FLOAT_OP(v16_mul_ps, _mm256_mul_ps)
V16_FLOAT_OP(v16_max_ps, _mm256_max_ps)
V16_FLOAT_OP(v16_min_ps, _mm256_min_ps)
V16_FLOAT_OP(v16_unpacklo_ps, _mm256_unpacklo_ps)
V16_FLOAT_OP(v16_unpackhi_ps, _mm256_unpackhi_ps)
#undef V16_FLOAT_OP
V16_INLINE dmlpy_v16f v16_fmadd_ps(dmlpy_v16f a, dmlpy_v16f b, dmlpy_v16f c) {
    return (dmlpy_v16f){_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
}
V16_INLINE dmlpy_v16f v16_fnmadd_ps(dmlpy_v16f a, dmlpy_v16f b, dmlpy_v16f c) {
    return (dmlpy_v16f){_mm256_fnmadd_ps(a.lo, b.lo, c.lo), _mm256_fnmadd_ps(a.hi, b.hi, c.hi)};
}
V16_INLINE dmlpy_v16f v16_abs_ps(dmlpy_v16f a) {
    const __m256 m = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    return (dmlpy_v16f){_mm256_and_ps(a.lo, m), _mm256_and_ps(a.hi, m)};
}
V16_INLINE dmlpy_v16f v16_mask_blend_ps(__mmask16 k, dmlpy_v16f a, dmlpy_v16f b) { /* k ? b : a */
    return (dmlpy_v16f){v16_sel(a.lo, b.lo, k), v16_sel(a.hi, b.hi, (unsigned)k >> 8)};
}
V16_INLINE dmlpy_v16f v16_mask_mov_ps(dmlpy_v16f src, __mmask16 k, dmlpy_v16f a) { return v16_mask_blend_ps(k, src, a); }
V16_INLINE dmlpy_v16f v16_mask_add_ps(dmlpy_v16f src, __mmask16 k, dmlpy_v16f a, dmlpy_v16f b) {
    return v16_mask_blend_ps(k, src, v16_add_ps(a, b));
}
V16_INLINE dmlpy_v16f v16_mask_mul_ps(dmlpy_v16f src, __mmask16 k, dmlpy_v16f a, dmlpy_v16f b) {
    return v16_mask_blend_ps(k, src, v16_mul_ps(a, b));
}
#define v16_cmp_ps_mask(a, b, imm)                                                                                   \
    ((__mmask16)(v16_bits8(_mm256_cmp_ps((a).lo, (b).lo, (imm))) | v16_bits8(_mm256_cmp_ps((a).hi, (b).hi, (imm))) << 8))
#define v16_mask_cmp_ps_mask(k, a, b, imm) ((__mmask16)((k) & v16_cmp_ps_mask((a), (b), (imm))))
#define v16_256_cmp_ps_mask(a, b, imm) ((__mmask8)v16_bits8(_mm256_cmp_ps((a), (b), (imm))))
/* the order GCC's _mm512_reduce_add_ps adds in: halves, then 128-bit quarters, then pairs */
V16_INLINE float v16_reduce_add_ps(dmlpy_v16f a) {
    const __m256 h = _mm256_add_ps(a.hi, a.lo);
    const __m128 q = _mm_add_ps(_mm256_extractf128_ps(h, 1), _mm256_castps256_ps128(h));
    const __m128 s = _mm_add_ps(q, _mm_shuffle_ps(q, q, _MM_SHUFFLE(1, 0, 3, 2)));
    return _mm_cvtss_f32(s) + _mm_cvtss_f32(_mm_shuffle_ps(s, s, 1));
}

/* ---- lane movement ---------------------------------------------------------------------------------------- */

#define v16_shuffle_ps(a, b, imm)                                                                                    \
    ((dmlpy_v16f){_mm256_shuffle_ps((a).lo, (b).lo, (imm)), _mm256_shuffle_ps((a).hi, (b).hi, (imm))})
V16_INLINE __m128 v16_quarter(dmlpy_v16f a, unsigned q) {
    switch (q & 3u) {
    case 0: return _mm256_castps256_ps128(a.lo);
    case 1: return _mm256_extractf128_ps(a.lo, 1);
    case 2: return _mm256_castps256_ps128(a.hi);
    default: return _mm256_extractf128_ps(a.hi, 1);
    }
}
V16_INLINE dmlpy_v16f v16_shuffle_f32x4(dmlpy_v16f a, dmlpy_v16f b, unsigned imm) {
    return (dmlpy_v16f){_mm256_set_m128(v16_quarter(a, imm >> 2), v16_quarter(a, imm)),
                        _mm256_set_m128(v16_quarter(b, imm >> 6), v16_quarter(b, imm >> 4))};
}
V16_INLINE __m128 v16_extractf32x4_ps(dmlpy_v16f a, unsigned q) { return v16_quarter(a, q); }
V16_INLINE __m256 v16_extractf32x8_ps(dmlpy_v16f a, unsigned h) { return h & 1u ? a.hi : a.lo; }
V16_INLINE __m256d v16_extractf64x4_pd(dmlpy_v8d a, unsigned h) { return h & 1u ? a.hi : a.lo; }
V16_INLINE dmlpy_v16f v16_insertf32x8(dmlpy_v16f a, __m256 b, unsigned h) {
    if (h & 1u) a.hi = b;
    else a.lo = b;
    return a;
}
V16_INLINE dmlpy_v8d v16_insertf64x4(dmlpy_v8d a, __m256d b, unsigned h) {
    if (h & 1u) a.hi = b;
    else a.lo = b;
    return a;
}
/* out[i] = a[idx[i] % 16] */
V16_INLINE __m256 v16_perm_half(dmlpy_v16f a, __m256i idx) {
    const __m256 from_lo = _mm256_permutevar8x32_ps(a.lo, idx), from_hi = _mm256_permutevar8x32_ps(a.hi, idx);
    return _mm256_blendv_ps(from_lo, from_hi, _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28)));
}
V16_INLINE dmlpy_v16f v16_permutexvar_ps(dmlpy_v16i idx, dmlpy_v16f a) {
    return (dmlpy_v16f){v16_perm_half(a, idx.lo), v16_perm_half(a, idx.hi)};
}
/* out[i] = (idx[i] & 16 ? b : a)[idx[i] % 16] */
V16_INLINE dmlpy_v16f v16_permutex2var_ps(dmlpy_v16f a, dmlpy_v16i idx, dmlpy_v16f b) {
    const __m256 s0 = _mm256_castsi256_ps(_mm256_slli_epi32(idx.lo, 27)), s1 = _mm256_castsi256_ps(_mm256_slli_epi32(idx.hi, 27));
    return (dmlpy_v16f){_mm256_blendv_ps(v16_perm_half(a, idx.lo), v16_perm_half(b, idx.lo), s0),
                        _mm256_blendv_ps(v16_perm_half(a, idx.hi), v16_perm_half(b, idx.hi), s1)};
}

/* the even (odd) lanes of the 32 floats a:b, as _mm512_permutex2var_ps(a, {0, 2, .. 30} ({1, 3, .. 31}), b): two
 * instructions per half instead of the general permute's ten */
V16_INLINE __m256 v16_even8(__m256 a, __m256 b) {
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xD8));
}
V16_INLINE __m256 v16_odd8(__m256 a, __m256 b) {
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xDD)), 0xD8));
}
V16_INLINE dmlpy_v16f v16_even_lanes(dmlpy_v16f a, dmlpy_v16f b) { return (dmlpy_v16f){v16_even8(a.lo, a.hi), v16_even8(b.lo, b.hi)}; }
V16_INLINE dmlpy_v16f v16_odd_lanes(dmlpy_v16f a, dmlpy_v16f b) { return (dmlpy_v16f){v16_odd8(a.lo, a.hi), v16_odd8(b.lo, b.hi)}; }

/* ---- gathers and scatters ------------------------------------------------------------------------------------- */

#define v16_i32gather_ps(idx, base, scale)                                                                           \
    ((dmlpy_v16f){_mm256_i32gather_ps((const float*)(base), (idx).lo, (scale)),                                       \
                  _mm256_i32gather_ps((const float*)(base), (idx).hi, (scale))})
#define v16_mask_i32gather_ps(src, k, idx, base, scale)                                                              \
    ((dmlpy_v16f){_mm256_mask_i32gather_ps((src).lo, (const float*)(base), (idx).lo, _mm256_castsi256_ps(v16_lanes8(k)), (scale)), \
                  _mm256_mask_i32gather_ps((src).hi, (const float*)(base), (idx).hi,                                 \
                                           _mm256_castsi256_ps(v16_lanes8((unsigned)(k) >> 8)), (scale))})
#define v16_256_mmask_i32gather_ps(src, k, idx, base, scale)                                                         \
    _mm256_mask_i32gather_ps((src), (const float*)(base), (idx), _mm256_castsi256_ps(v16_lanes8(k)), (scale))
V16_INLINE void v16_mask_i32scatter_ps(void* base, __mmask16 k, dmlpy_v16i idx, dmlpy_v16f a, int scale) {
    int32_t ix[16];
    float v[16];
    unsigned i;
    v16_storeu_si512(ix, idx);
    v16_storeu_ps(v, a);
    for (i = 0; i < 16; ++i)
        if ((k >> i) & 1u) memcpy((char*)base + (int64_t)ix[i] * scale, &v[i], sizeof(float));
}

/* ---- float16 and float64 ------------------------------------------------------------------------------------------ */

V16_INLINE dmlpy_v16f v16_cvtph_ps(__m256i h) {
    return (dmlpy_v16f){_mm256_cvtph_ps(_mm256_castsi256_si128(h)), _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1))};
}
#define v16_cvtps_ph(a, imm) _mm256_set_m128i(_mm256_cvtps_ph((a).hi, (imm)), _mm256_cvtps_ph((a).lo, (imm)))
V16_INLINE dmlpy_v8d v16_cvtps_pd(__m256 a) {
    return (dmlpy_v8d){_mm256_cvtps_pd(_mm256_castps256_ps128(a)), _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1))};
}
V16_INLINE __m256 v16_cvtpd_ps(dmlpy_v8d a) { return _mm256_set_m128(_mm256_cvtpd_ps(a.hi), _mm256_cvtpd_ps(a.lo)); }
V16_INLINE dmlpy_v8d v16_set1_pd(double x) { return (dmlpy_v8d){_mm256_set1_pd(x), _mm256_set1_pd(x)}; }
#define V16_DOUBLE_OP(NAME, OP)                                                                                   \
    V16_INLINE dmlpy_v8d NAME(dmlpy_v8d a, dmlpy_v8d b) { return (dmlpy_v8d){OP(a.lo, b.lo), OP(a.hi, b.hi)}; }
V16_DOUBLE_OP(v16_add_pd, _mm256_add_pd)
V16_DOUBLE_OP(v16_sub_pd, _mm256_sub_pd)
V16_DOUBLE_OP(v16_mul_pd, _mm256_mul_pd)
V16_DOUBLE_OP(v16_div_pd, _mm256_div_pd)
V16_DOUBLE_OP(v16_unpacklo_pd, _mm256_unpacklo_pd)
V16_DOUBLE_OP(v16_unpackhi_pd, _mm256_unpackhi_pd)
#undef V16_DOUBLE_OP

/* ---- the AVX-512 names, for the kernels' source (some are macros in <immintrin.h>, hence the #undefs) ---------------------------------------------------------------------- */

#define __m512 dmlpy_v16f
#define __m512i dmlpy_v16i
#define __m512d dmlpy_v8d
#undef _mm512_castps_si512
#define _mm512_castps_si512 v16_castps_si512
#undef _mm512_castsi512_ps
#define _mm512_castsi512_ps v16_castsi512_ps
#undef _mm512_castps_pd
#define _mm512_castps_pd v16_castps_pd
#undef _mm512_castpd_ps
#define _mm512_castpd_ps v16_castpd_ps
#undef _mm512_castps512_ps256
#define _mm512_castps512_ps256 v16_castps512_ps256
#undef _mm512_castps512_ps128
#define _mm512_castps512_ps128 v16_castps512_ps128
#undef _mm512_castps256_ps512
#define _mm512_castps256_ps512 v16_castps256_ps512
#undef _mm512_loadu_ps
#define _mm512_loadu_ps v16_loadu_ps
#undef _mm512_load_ps
#define _mm512_load_ps v16_load_ps
#undef _mm512_storeu_ps
#define _mm512_storeu_ps v16_storeu_ps
#undef _mm512_store_ps
#define _mm512_store_ps v16_store_ps
#undef _mm512_stream_ps
#define _mm512_stream_ps v16_stream_ps
#undef _mm512_maskz_loadu_ps
#define _mm512_maskz_loadu_ps v16_maskz_loadu_ps
#undef _mm512_mask_loadu_ps
#define _mm512_mask_loadu_ps v16_mask_loadu_ps
#undef _mm512_mask_storeu_ps
#define _mm512_mask_storeu_ps v16_mask_storeu_ps
#undef _mm256_maskz_loadu_ps
#define _mm256_maskz_loadu_ps v16_256_maskz_loadu_ps
#undef _mm256_mask_storeu_ps
#define _mm256_mask_storeu_ps v16_256_mask_storeu_ps
#undef _mm256_maskz_loadu_epi16
#define _mm256_maskz_loadu_epi16 v16_256_maskz_loadu_epi16
#undef _mm256_mask_storeu_epi16
#define _mm256_mask_storeu_epi16 v16_256_mask_storeu_epi16
#undef _mm_mask_storeu_epi16
#define _mm_mask_storeu_epi16 v16_128_mask_storeu_epi16
#undef _mm512_loadu_si512
#define _mm512_loadu_si512 v16_loadu_si512
#undef _mm512_load_si512
#define _mm512_load_si512 v16_load_si512
#undef _mm512_storeu_si512
#define _mm512_storeu_si512 v16_storeu_si512
#undef _mm512_stream_si512
#define _mm512_stream_si512 v16_stream_si512
#undef _mm512_setzero_si512
#define _mm512_setzero_si512 v16_setzero_si512
#undef _mm512_set1_epi32
#define _mm512_set1_epi32 v16_set1_epi32
#undef _mm512_set1_epi16
#define _mm512_set1_epi16 v16_set1_epi16
#undef _mm512_setr_epi32
#define _mm512_setr_epi32 v16_setr_epi32
#undef _mm512_set_epi32
#define _mm512_set_epi32 v16_set_epi32
#undef _mm512_and_si512
#define _mm512_and_si512 v16_and_si512
#undef _mm512_or_si512
#define _mm512_or_si512 v16_or_si512
#undef _mm512_add_epi32
#define _mm512_add_epi32 v16_add_epi32
#undef _mm512_mullo_epi32
#define _mm512_mullo_epi32 v16_mullo_epi32
#undef _mm512_srli_epi32
#define _mm512_srli_epi32 v16_srli_epi32
#undef _mm512_mask_sub_epi32
#define _mm512_mask_sub_epi32 v16_mask_sub_epi32
#undef _mm512_cmpeq_epi32_mask
#define _mm512_cmpeq_epi32_mask v16_cmpeq_epi32_mask
#undef _mm512_mask_cmpeq_epi32_mask
#define _mm512_mask_cmpeq_epi32_mask v16_mask_cmpeq_epi32_mask
#undef _mm512_cmpge_epi32_mask
#define _mm512_cmpge_epi32_mask v16_cmpge_epi32_mask
#undef _mm512_cmpeq_epi16_mask
#define _mm512_cmpeq_epi16_mask v16_cmpeq_epi16_mask
#undef _mm512_alignr_epi32
#define _mm512_alignr_epi32 v16_alignr_epi32
#undef _mm512_set1_ps
#define _mm512_set1_ps v16_set1_ps
#undef _mm512_setzero_ps
#define _mm512_setzero_ps v16_setzero_ps
#undef _mm512_add_ps
#define _mm512_add_ps v16_add_ps
#undef _mm512_sub_ps
#define _mm512_sub_ps v16_sub_ps
#undef _mm512_mul_ps
#define _mm512_mul_ps v16_mul_ps
#undef _mm512_max_ps
#define _mm512_max_ps v16_max_ps
#undef _mm512_min_ps
#define _mm512_min_ps v16_min_ps
#undef _mm512_unpacklo_ps
#define _mm512_unpacklo_ps v16_unpacklo_ps
#undef _mm512_unpackhi_ps
#define _mm512_unpackhi_ps v16_unpackhi_ps
#undef _mm512_fmadd_ps
#define _mm512_fmadd_ps v16_fmadd_ps
#undef _mm512_fnmadd_ps
#define _mm512_fnmadd_ps v16_fnmadd_ps
#undef _mm512_abs_ps
#define _mm512_abs_ps v16_abs_ps
#undef _mm512_mask_blend_ps
#define _mm512_mask_blend_ps v16_mask_blend_ps
#undef _mm512_mask_mov_ps
#define _mm512_mask_mov_ps v16_mask_mov_ps
#undef _mm512_mask_add_ps
#define _mm512_mask_add_ps v16_mask_add_ps
#undef _mm512_mask_mul_ps
#define _mm512_mask_mul_ps v16_mask_mul_ps
#undef _mm512_cmp_ps_mask
#define _mm512_cmp_ps_mask v16_cmp_ps_mask
#undef _mm512_mask_cmp_ps_mask
#define _mm512_mask_cmp_ps_mask v16_mask_cmp_ps_mask
#undef _mm256_cmp_ps_mask
#define _mm256_cmp_ps_mask v16_256_cmp_ps_mask
#undef _mm512_reduce_add_ps
#define _mm512_reduce_add_ps v16_reduce_add_ps
#undef _mm512_shuffle_ps
#define _mm512_shuffle_ps v16_shuffle_ps
#undef _mm512_shuffle_f32x4
#define _mm512_shuffle_f32x4 v16_shuffle_f32x4
#undef _mm512_extractf32x4_ps
#define _mm512_extractf32x4_ps v16_extractf32x4_ps
#undef _mm512_extractf32x8_ps
#define _mm512_extractf32x8_ps v16_extractf32x8_ps
#undef _mm512_extractf64x4_pd
#define _mm512_extractf64x4_pd v16_extractf64x4_pd
#undef _mm512_insertf32x8
#define _mm512_insertf32x8 v16_insertf32x8
#undef _mm512_insertf64x4
#define _mm512_insertf64x4 v16_insertf64x4
#undef _mm512_permutexvar_ps
#define _mm512_permutexvar_ps v16_permutexvar_ps
#undef _mm512_permutex2var_ps
#define _mm512_permutex2var_ps v16_permutex2var_ps
#undef _mm512_i32gather_ps
#define _mm512_i32gather_ps v16_i32gather_ps
#undef _mm512_mask_i32gather_ps
#define _mm512_mask_i32gather_ps v16_mask_i32gather_ps
#undef _mm256_mmask_i32gather_ps
#define _mm256_mmask_i32gather_ps v16_256_mmask_i32gather_ps
#undef _mm512_mask_i32scatter_ps
#define _mm512_mask_i32scatter_ps v16_mask_i32scatter_ps
#undef _mm512_cvtph_ps
#define _mm512_cvtph_ps v16_cvtph_ps
#undef _mm512_cvtps_ph
#define _mm512_cvtps_ph v16_cvtps_ph
#undef _mm512_cvtps_pd
#define _mm512_cvtps_pd v16_cvtps_pd
#undef _mm512_cvtpd_ps
#define _mm512_cvtpd_ps v16_cvtpd_ps
#undef _mm512_set1_pd
#define _mm512_set1_pd v16_set1_pd
#undef _mm512_add_pd
#define _mm512_add_pd v16_add_pd
#undef _mm512_sub_pd
#define _mm512_sub_pd v16_sub_pd
#undef _mm512_mul_pd
#define _mm512_mul_pd v16_mul_pd
#undef _mm512_div_pd
#define _mm512_div_pd v16_div_pd
#undef _mm512_unpacklo_pd
#define _mm512_unpacklo_pd v16_unpacklo_pd
#undef _mm512_unpackhi_pd
#define _mm512_unpackhi_pd v16_unpackhi_pd
#endif

#endif /* DMLPY_NATIVE_V16_H */
