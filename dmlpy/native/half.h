/*
 * half.h - IEEE binary16 <-> binary32 conversion for dmlpy's kernels (private).
 *
 * FLOAT16 tensors are stored as binary16 (uint16_t bit patterns) and computed in float32. Conversions
 * round to nearest, ties to even, and handle zeros, subnormals, infinities and NaNs (a NaN stays a NaN
 * with its sign and the top payload bits, made quiet).
 *
 * With F16C (x86 -mf16c; the avx2 and avx512 kernel variants of dmlpy/native/isa/ have it) the hardware
 * instructions are used; otherwise a portable bit-manipulation version that gives bit-identical results
 * (checked exhaustively by the scratch tests against the hardware). Define DMLPY_FORCE_SOFT_HALF to force the portable code.
 */
#ifndef DMLPY_NATIVE_HALF_H
#define DMLPY_NATIVE_HALF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(DMLPY_FORCE_SOFT_HALF)
#undef DMLPY_HALF_F16C
#undef DMLPY_HALF_AVX512
#elif defined(__F16C__)
#include <immintrin.h>
#define DMLPY_HALF_F16C 1
#if defined(__AVX512F__)
#define DMLPY_HALF_AVX512 1
#endif
#endif

static inline uint32_t dmlpy_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float dmlpy_f32_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Portable binary16 -> binary32 (exact: every half is representable as a float). */
static inline float dmlpy_h2f_soft(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1Fu;
    uint32_t mantissa = h & 0x3FFu;
    if (exponent == 0x1Fu) {
        /* Inf, or NaN made quiet (as the hardware does) with its payload kept. */
        uint32_t quiet = mantissa ? 0x00400000u : 0u;
        return dmlpy_f32_from_bits(sign | 0x7F800000u | quiet | (mantissa << 13));
    }
    if (exponent != 0) {
        return dmlpy_f32_from_bits(sign | ((exponent + 112u) << 23) | (mantissa << 13));
    }
    if (mantissa == 0) {
        return dmlpy_f32_from_bits(sign);
    }
    /* Subnormal: mantissa * 2^-24, exact in float. */
    {
        float magnitude = (float)mantissa * 5.9604644775390625e-08f; /* 2^-24 */
        return dmlpy_f32_from_bits(sign | dmlpy_f32_bits(magnitude));
    }
}

/* Portable binary32 -> binary16, round to nearest, ties to even. */
static inline uint16_t dmlpy_f2h_soft(float f) {
    uint32_t x = dmlpy_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7FFFFFFFu;
    if (ax >= 0x7F800000u) {
        if (ax == 0x7F800000u) {
            return (uint16_t)(sign | 0x7C00u);
        }
        /* NaN: quiet, top 10 payload bits kept. */
        return (uint16_t)(sign | 0x7E00u | ((ax >> 13) & 0x3FFu));
    }
    if (ax >= 0x477FF000u) {
        /* >= 65520 = 65504 + half an ulp; the tie goes to the even neighbour, which is infinity. */
        return (uint16_t)(sign | 0x7C00u);
    }
    if (ax >= 0x38800000u) {
        /* Normal half range (>= 2^-14). A carry out of the mantissa correctly bumps the exponent. */
        uint32_t h = ((((ax >> 23) - 112u) << 10) | ((ax >> 13) & 0x3FFu));
        uint32_t rest = ax & 0x1FFFu;
        if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) {
            h += 1u;
        }
        return (uint16_t)(sign | h);
    }
    if (ax < 0x33000000u) {
        /* Below 2^-25 (or exactly 2^-25, a tie that goes to even 0): signed zero. */
        return (uint16_t)sign;
    }
    {
        /* Half subnormal range: result = round(|f| * 2^24) units of 2^-24. */
        uint32_t e = ax >> 23;                      /* 102 .. 112 */
        uint32_t m = (ax & 0x7FFFFFu) | 0x800000u;  /* |f| = m * 2^(e - 150) */
        uint32_t shift = 126u - e;                  /* 14 .. 24 */
        uint32_t h = m >> shift;
        uint32_t rest = m & ((1u << shift) - 1u);
        uint32_t halfway = 1u << (shift - 1u);
        if (rest > halfway || (rest == halfway && (h & 1u))) {
            h += 1u;                                /* may become 0x400, the smallest normal */
        }
        return (uint16_t)(sign | h);
    }
}

#if defined(DMLPY_HALF_F16C)
static inline float dmlpy_h2f(uint16_t h) { return _cvtsh_ss(h); }
static inline uint16_t dmlpy_f2h(float f) { return (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT); }
#else
static inline float dmlpy_h2f(uint16_t h) { return dmlpy_h2f_soft(h); }
static inline uint16_t dmlpy_f2h(float f) { return dmlpy_f2h_soft(f); }
#endif

/* dst[i] = (float)src[i], contiguous. */
static inline void dmlpy_h2f_row(float* dst, const uint16_t* src, size_t n) {
    size_t i = 0;
#if defined(DMLPY_HALF_AVX512)
    for (; i + 16 <= n; i += 16) {
        _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(src + i))));
    }
#elif defined(DMLPY_HALF_F16C)
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(src + i))));
    }
#endif
    for (; i < n; ++i) {
        dst[i] = dmlpy_h2f(src[i]);
    }
}

/* acc[i] += (float)src[i], contiguous. */
static inline void dmlpy_h2f_add_row(float* acc, const uint16_t* src, size_t n) {
    size_t i = 0;
#if defined(DMLPY_HALF_AVX512)
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(src + i)));
        _mm512_storeu_ps(acc + i, _mm512_add_ps(_mm512_loadu_ps(acc + i), v));
    }
#elif defined(DMLPY_HALF_F16C)
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(src + i)));
        _mm256_storeu_ps(acc + i, _mm256_add_ps(_mm256_loadu_ps(acc + i), v));
    }
#endif
    for (; i < n; ++i) {
        acc[i] += dmlpy_h2f(src[i]);
    }
}

/* dst[i] = half(src[i]), contiguous, rounded to nearest even. */
static inline void dmlpy_f2h_row(uint16_t* dst, const float* src, size_t n) {
    size_t i = 0;
#if defined(DMLPY_HALF_AVX512)
    for (; i + 16 <= n; i += 16) {
        _mm256_storeu_si256((__m256i*)(dst + i),
                            _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
#elif defined(DMLPY_HALF_F16C)
    for (; i + 8 <= n; i += 8) {
        _mm_storeu_si128((__m128i*)(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
#endif
    for (; i < n; ++i) {
        dst[i] = dmlpy_f2h(src[i]);
    }
}

/* dst[i] = half(src[i] * scale[i]), contiguous. */
static inline void dmlpy_f2h_scale_row(uint16_t* dst, const float* src, const float* scale, size_t n) {
    size_t i = 0;
#if defined(DMLPY_HALF_AVX512)
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_mul_ps(_mm512_loadu_ps(src + i), _mm512_loadu_ps(scale + i));
        _mm256_storeu_si256((__m256i*)(dst + i), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
#elif defined(DMLPY_HALF_F16C)
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_mul_ps(_mm256_loadu_ps(src + i), _mm256_loadu_ps(scale + i));
        _mm_storeu_si128((__m128i*)(dst + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
#endif
    for (; i < n; ++i) {
        dst[i] = dmlpy_f2h(src[i] * scale[i]);
    }
}

#endif /* DMLPY_NATIVE_HALF_H */
