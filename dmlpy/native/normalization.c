/*
 * normalization.c - the operators that normalize over axes: BATCH_NORMALIZATION (72),
 * MEAN_VARIANCE_NORMALIZATION (73), MEAN_VARIANCE_NORMALIZATION1 (115), ACTIVATION_SOFTMAX (48),
 * ACTIVATION_SOFTMAX1 (158), ACTIVATION_LOG_SOFTMAX (41) and ACTIVATION_LOG_SOFTMAX1 (159).
 *
 * Formulas (DirectML's pages; docs/deviations.md, "Normalization" and "Activations"):
 *   BATCH_NORMALIZATION  f(Scale * (x - Mean) / sqrt(Variance + Epsilon) + Bias), the four parameter
 *                        tensors broadcast to the input (a size of 1 reads with stride 0)
 *   MVN, MVN1            mean and population variance over the reduced axes, then
 *                        f(Scale * (x - mean) / sqrt(variance + Epsilon) + Bias) (without NormalizeVariance
 *                        f(Scale * (x - mean) + Bias)); a NULL Scale is 1, a NULL Bias 0
 *   SOFTMAX(1)           exp(x - max) / sum(exp(x - max)) over the reduced axes
 *   LOG_SOFTMAX(1)       (x - max) - log(sum(exp(x - max)))
 * where f is the FusedActivation (activation.h; none for the softmax family). The reduced axes: MVN1's
 * and SOFTMAX1's Axes (a set), MVN's {1..rank-1} (CrossChannel) or {2..rank-1}, SOFTMAX's last dimension;
 * BATCH_NORMALIZATION reduces nothing.
 *
 * One loop serves them all. The input's dimensions split into "kept" ones (which row) and "reduced" ones
 * (where in a row); size-1 dimensions are dropped and neighbours of a class merged where every tensor is
 * contiguous across them. Rows run in parallel (parallel.c). A row is walked in chunks of NORM_CHUNK
 * elements, two or three passes (statistics, then output): a chunk of a float32 tensor whose row is one
 * packed dimension is used in place (the vectorised path: LayerNorm, softmax over the last axis), any
 * other (FLOAT16, strided, several dimensions) is gathered into a float buffer and the result scattered
 * (the strided path). Every tensor may have any strides; the output is staged when two of its indices
 * share an element.
 *
 * Arithmetic is float32 (FLOAT16 converted on load and rounded once on store). Sums are compensated:
 * each chunk is summed in 16 interleaved lanes combined as a tree, and chunk sums are added with
 * Neumaier's compensation. The variance is the mean of squared deviations from the mean (two passes),
 * computed on the deviations scaled by a power of two taken from the row's largest magnitude, so it
 * neither overflows nor underflows where float64 would not; 1/sqrt(variance + Epsilon) is taken in
 * double. exp is a polynomial (Cephes' expf coefficients, about 1 ulp; results below 2^-126 flushed to 0)
 * on vectors of the target's width (AVX-512: one fused reduction step and a degree-6 polynomial, within
 * 0.9u * (1 + |x|) of exp(x), about 1 ulp for |x| < 10). Each row is computed by one thread in a fixed order, so the thread
 * count changes no bit. The NumPy kernels compute FLOAT32 in float64: docs/deviations.md states the
 * tolerance between the two (tests/operators/test_normalization_native.py checks it).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "activation.h"
#include "dmlpy_internal.h"
#include "half.h"

#define NORM_CHUNK 512
#define NORM_LANES 16

enum { NK_BATCH_NORM, NK_MVN, NK_SOFTMAX, NK_LOG_SOFTMAX };
enum { V_X, V_Y, V_SCALE, V_BIAS, V_MEAN, V_VAR, V_COUNT };

typedef struct norm_view {
    const char* data;               /* NULL: the tensor is absent */
    uint64_t ks[DMLPY_MAX_RANK];    /* element strides over the kept dims */
    uint64_t rs[DMLPY_MAX_RANK];    /* element strides over the reduced dims */
    int row_const;                  /* one element per row (every reduced stride 0, or rows of 1) */
    int row_packed;                 /* one reduced dim of stride 1 */
} norm_view;

typedef struct norm_plan {
    int kind, half, normalize_variance;
    float epsilon;
    dmlpy_act act;
    uint32_t kr, rr;                /* kept / reduced dims after merging */
    uint64_t ksz[DMLPY_MAX_RANK], rsz[DMLPY_MAX_RANK];
    uint64_t row_len, rows, chunks_per_row;
    int stream;                     /* batch_norm_packed writes y with non-temporal stores */
    norm_view v[V_COUNT];
} norm_plan;

/* ---- element access ------------------------------------------------------------------------------- */

static inline float norm_read(const norm_plan* p, const norm_view* v, uint64_t o) {
    return p->half ? dmlpy_h2f(((const uint16_t*)v->data)[o]) : ((const float*)v->data)[o];
}

/* The offset of row element j (row-major over the reduced dims) relative to the row's offset. */
static uint64_t norm_element_offset(const norm_plan* p, const norm_view* v, uint64_t j, uint64_t* idx) {
    uint64_t o = 0;
    uint32_t i;
    for (i = p->rr; i-- > 0;) {
        idx[i] = j % p->rsz[i];
        j /= p->rsz[i];
        o += idx[i] * v->rs[i];
    }
    return o;
}

/* Row elements [j0, j0 + n) of view v (row at offset off) as floats: in place for a packed float32 row,
 * else gathered into buf. */
static const float* norm_load(const norm_plan* p, const norm_view* v, uint64_t off, uint64_t j0, uint64_t n,
                              float* buf) {
    uint64_t idx[DMLPY_MAX_RANK], o, j;
    if (v->row_packed) {
        if (!p->half) return (const float*)v->data + off + j0;
        dmlpy_h2f_row(buf, (const uint16_t*)v->data + off + j0, (size_t)n);
        return buf;
    }
    o = off + norm_element_offset(p, v, j0, idx);
    for (j = 0; j < n; ++j) {
        uint32_t i;
        buf[j] = norm_read(p, v, o);
        for (i = p->rr; i-- > 0;) { /* odometer */
            o += v->rs[i];
            if (++idx[i] < p->rsz[i]) break;
            o -= idx[i] * v->rs[i];
            idx[i] = 0;
        }
    }
    return buf;
}

/* Where the output chunk is computed: the output itself for a packed float32 row, else buf. */
static float* norm_out(const norm_plan* p, uint64_t off, uint64_t j0, float* buf) {
    const norm_view* v = &p->v[V_Y];
    return (!p->half && v->row_packed) ? (float*)v->data + off + j0 : buf;
}

/* Writes a chunk computed in buf (no-op when it was computed in place). */
static void norm_store(const norm_plan* p, uint64_t off, uint64_t j0, uint64_t n, const float* buf) {
    const norm_view* v = &p->v[V_Y];
    uint64_t idx[DMLPY_MAX_RANK], o, j;
    if (!p->half && v->row_packed) return;
    o = off + norm_element_offset(p, v, j0, idx);
    for (j = 0; j < n; ++j) {
        uint32_t i;
        if (p->half) {
            ((uint16_t*)v->data)[o] = dmlpy_f2h(buf[j]);
        } else {
            ((float*)v->data)[o] = buf[j];
        }
        for (i = p->rr; i-- > 0;) {
            o += v->rs[i];
            if (++idx[i] < p->rsz[i]) break;
            o -= idx[i] * v->rs[i];
            idx[i] = 0;
        }
    }
}

/* ---- vectorisable chunk arithmetic ------------------------------------------------------------------ */

/* Neumaier-compensated running sum. */
typedef struct norm_sum {
    float s, c;
} norm_sum;

static inline void norm_sum_add(norm_sum* a, float x) {
    float t = a->s + x;
    if (fabsf(a->s) >= fabsf(x)) {
        a->c += (a->s - t) + x;
    } else {
        a->c += (x - t) + a->s;
    }
    a->s = t;
}

/* The chunk helpers work on NORM_LANES interleaved lanes (lane k sums elements k, k + 16, ...), combined as
 * a tree at the end; a tail of fewer than 16 elements goes to lanes 0.. one by one, with the same
 * operations in the same order, so every instruction set gives the same sums. With GCC or Clang the lanes
 * are NORM_VK vectors of the target's width (vector extensions: SSE2, AVX2 or AVX-512 registers; a vector
 * wider than the target's would have its comparisons split into scalars), elsewhere plain arrays. */
#if defined(__GNUC__) || defined(__clang__)
#define NORM_VEC 1
#if defined(__AVX512F__)
#define NORM_VN 16
#elif defined(__AVX__)
#define NORM_VN 8
#else
#define NORM_VN 4
#endif
#define NORM_VK (NORM_LANES / NORM_VN)
typedef float norm_vf __attribute__((vector_size(NORM_VN * sizeof(float))));
typedef int32_t norm_vi __attribute__((vector_size(NORM_VN * sizeof(float))));
typedef uint32_t norm_vu __attribute__((vector_size(NORM_VN * sizeof(float))));

/* Macros rather than functions: a vector passed by value draws GCC's notes on the vector ABI. */
#define NORM_VLOAD(dst, p) memcpy(&(dst), (p), sizeof(norm_vf))
#define NORM_VSTORE(p, v) memcpy((p), &(v), sizeof(norm_vf))
#define NORM_VSPLAT(x) ((norm_vf){0} + (x))
/* m ? a : b lane by lane, for the mask m of a comparison */
#define NORM_VSELECT(m, a, b) ((norm_vf)(((m) & (norm_vi)(a)) | (~(m) & (norm_vi)(b))))
#define NORM_VABS(a) ((norm_vf)((norm_vi)(a) & 0x7FFFFFFF))

/* A row's tail: lanes [0, rem) of a vector loaded from p (rem <= NORM_VN), the others `fill`, and stored
 * back without touching memory past them; masked loads and stores where the target has them (a tail
 * staged through a small array instead costs a failed store forwarding per vector). */
#if defined(__AVX512F__)
#include <immintrin.h>
#define NORM_VPART 1
#define NORM_VLOAD_PART(dst, p, rem, fill) \
    ((dst) = (norm_vf)_mm512_mask_loadu_ps(_mm512_set1_ps(fill), (__mmask16)((1u << (rem)) - 1u), (p)))
#define NORM_VSTORE_PART(p, v, rem) _mm512_mask_storeu_ps((p), (__mmask16)((1u << (rem)) - 1u), (__m512)(v))
#elif defined(__AVX2__)
#include <immintrin.h>
#define NORM_VPART 1
static const int32_t norm_part_masks[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
#define NORM_PART_MASK(rem) _mm256_loadu_si256((const __m256i*)(const void*)(norm_part_masks + 8 - (rem)))
#define NORM_VLOAD_PART(dst, p, rem, fill)                                                              \
    ((dst) = (norm_vf)_mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps((p), NORM_PART_MASK(rem)), \
                                       _mm256_castsi256_ps(NORM_PART_MASK(rem))))
#define NORM_VSTORE_PART(p, v, rem) _mm256_maskstore_ps((p), NORM_PART_MASK(rem), (__m256)(v))
#endif
#endif

static inline float norm_lanes_total(float* acc) {
    int w, k;
    for (w = NORM_LANES / 2; w >= 1; w /= 2) {
        for (k = 0; k < w; ++k) acc[k] += acc[k + w];
    }
    return acc[0];
}

#if defined(NORM_VPART)
/* norm_lanes_total of the NORM_VK vectors' lanes (lane k of vector q is lane q * NORM_VN + k): the same tree,
 * level by level, in registers. */
static inline float norm_vtotal(const norm_vf* va) {
#if defined(__AVX512F__)
    const __m512 v = (__m512)va[0];
    const __m256 a = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
#else
    const __m256 a = _mm256_add_ps((__m256)va[0], (__m256)va[1]);
#endif
    __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    b = _mm_add_ps(b, _mm_movehl_ps(b, b));
    b = _mm_add_ss(b, _mm_shuffle_ps(b, b, 1));
    return _mm_cvtss_f32(b);
}

/* The same for the maximum (acc[q] = acc[q + w] > acc[q] ? acc[q + w] : acc[q]: maxps(hi, lo)). */
static inline float norm_vmaximum(const norm_vf* vm) {
#if defined(__AVX512F__)
    const __m512 v = (__m512)vm[0];
    const __m256 a = _mm256_max_ps(_mm512_extractf32x8_ps(v, 1), _mm512_castps512_ps256(v));
#else
    const __m256 a = _mm256_max_ps((__m256)vm[1], (__m256)vm[0]);
#endif
    __m128 b = _mm_max_ps(_mm256_extractf128_ps(a, 1), _mm256_castps256_ps128(a));
    b = _mm_max_ps(_mm_movehl_ps(b, b), b);
    b = _mm_max_ss(_mm_shuffle_ps(b, b, 1), b);
    return _mm_cvtss_f32(b);
}
#endif

/* The sum of v[0..n) and, into *maxabs, the largest |v[j]| (NaN skipped). */
static float norm_chunk_sum(const float* v, size_t n, float* maxabs) {
    float acc[NORM_LANES] = {0}, mx[NORM_LANES] = {0};
    size_t i = 0, k;
#if defined(NORM_VEC)
    {
        norm_vf va[NORM_VK], vm[NORM_VK];
        for (k = 0; k < NORM_VK; ++k) va[k] = vm[k] = NORM_VSPLAT(0.0f);
        for (; i + NORM_LANES <= n; i += NORM_LANES) {
            for (k = 0; k < NORM_VK; ++k) {
                norm_vf x, a;
                NORM_VLOAD(x, v + i + k * NORM_VN);
                va[k] += x;
                a = NORM_VABS(x);
                vm[k] = NORM_VSELECT(a > vm[k], a, vm[k]);
            }
        }
#if defined(NORM_VPART)
        /* the tail: element i + k of lane k, as below; the lanes past it read 0 (adding +0 to a lane changes
         * nothing: no lane is -0) */
        for (k = 0; k < NORM_VK && i + k * NORM_VN < n; ++k) {
            const size_t left = n - i - k * NORM_VN;
            norm_vf x, a;
            NORM_VLOAD_PART(x, v + i + k * NORM_VN, (unsigned)(left < NORM_VN ? left : NORM_VN), 0.0f);
            va[k] += x;
            a = NORM_VABS(x);
            vm[k] = NORM_VSELECT(a > vm[k], a, vm[k]);
        }
        {
            const float m = norm_vmaximum(vm);
            *maxabs = m > *maxabs ? m : *maxabs;
        }
        return norm_vtotal(va);
#endif
        for (k = 0; k < NORM_VK; ++k) {
            NORM_VSTORE(acc + k * NORM_VN, va[k]);
            NORM_VSTORE(mx + k * NORM_VN, vm[k]);
        }
    }
#endif
    for (; i + NORM_LANES <= n; i += NORM_LANES) {
        for (k = 0; k < NORM_LANES; ++k) {
            float a = fabsf(v[i + k]);
            acc[k] += v[i + k];
            mx[k] = a > mx[k] ? a : mx[k];
        }
    }
    for (k = 0; i < n; ++i, ++k) {
        float a = fabsf(v[i]);
        acc[k] += v[i];
        mx[k] = a > mx[k] ? a : mx[k];
    }
    for (k = 0; k < NORM_LANES; ++k) *maxabs = mx[k] > *maxabs ? mx[k] : *maxabs;
    return norm_lanes_total(acc);
}

/* The sum of v[j] * f. */
static float norm_chunk_scaled_sum(const float* v, size_t n, float f) {
    float acc[NORM_LANES] = {0};
    size_t i = 0, k;
#if defined(NORM_VEC)
    {
        norm_vf va[NORM_VK];
        for (k = 0; k < NORM_VK; ++k) va[k] = NORM_VSPLAT(0.0f);
        for (; i + NORM_LANES <= n; i += NORM_LANES) {
            for (k = 0; k < NORM_VK; ++k) {
                norm_vf x;
                NORM_VLOAD(x, v + i + k * NORM_VN);
                va[k] += x * f;
            }
        }
#if defined(NORM_VPART)
        for (k = 0; k < NORM_VK && i + k * NORM_VN < n; ++k) { /* the tail, lanes past it 0 */
            const size_t left = n - i - k * NORM_VN;
            norm_vf x;
            NORM_VLOAD_PART(x, v + i + k * NORM_VN, (unsigned)(left < NORM_VN ? left : NORM_VN), 0.0f);
            va[k] += x * f;
        }
        return norm_vtotal(va);
#endif
        for (k = 0; k < NORM_VK; ++k) NORM_VSTORE(acc + k * NORM_VN, va[k]);
    }
#endif
    for (; i + NORM_LANES <= n; i += NORM_LANES) {
        for (k = 0; k < NORM_LANES; ++k) acc[k] += v[i + k] * f;
    }
    for (k = 0; i < n; ++i, ++k) acc[k] += v[i] * f;
    return norm_lanes_total(acc);
}

/* The sum of ((v[j] - mean) * f)^2. */
static float norm_chunk_sq_dev(const float* v, size_t n, float mean, float f) {
    float acc[NORM_LANES] = {0};
    size_t i = 0, k;
#if defined(NORM_VEC)
    {
        norm_vf va[NORM_VK];
        for (k = 0; k < NORM_VK; ++k) va[k] = NORM_VSPLAT(0.0f);
        for (; i + NORM_LANES <= n; i += NORM_LANES) {
            for (k = 0; k < NORM_VK; ++k) {
                norm_vf x, d;
                NORM_VLOAD(x, v + i + k * NORM_VN);
                d = (x - mean) * f;
                va[k] += d * d;
            }
        }
#if defined(NORM_VPART)
        for (k = 0; k < NORM_VK && i + k * NORM_VN < n; ++k) { /* the tail, lanes past it reading the mean (0) */
            const size_t left = n - i - k * NORM_VN;
            norm_vf x, d;
            NORM_VLOAD_PART(x, v + i + k * NORM_VN, (unsigned)(left < NORM_VN ? left : NORM_VN), mean);
            d = (x - mean) * f;
            va[k] += d * d;
        }
        return norm_vtotal(va);
#endif
        for (k = 0; k < NORM_VK; ++k) NORM_VSTORE(acc + k * NORM_VN, va[k]);
    }
#endif
    for (; i + NORM_LANES <= n; i += NORM_LANES) {
        for (k = 0; k < NORM_LANES; ++k) {
            float d = (v[i + k] - mean) * f;
            acc[k] += d * d;
        }
    }
    for (k = 0; i < n; ++i, ++k) {
        float d = (v[i] - mean) * f;
        acc[k] += d * d;
    }
    return norm_lanes_total(acc);
}

/* max(m, v[0..n)), NaNs skipped: they reach the result through the sum of exponentials. */
static float norm_chunk_max(const float* v, size_t n, float m) {
    float acc[NORM_LANES];
    size_t i = 0, k;
    for (k = 0; k < NORM_LANES; ++k) acc[k] = m;
#if defined(NORM_VEC)
    {
        norm_vf vm[NORM_VK];
        for (k = 0; k < NORM_VK; ++k) vm[k] = NORM_VSPLAT(m);
        float pad[NORM_LANES];
        norm_vf vm2[NORM_VK];
        for (k = 0; k < NORM_VK; ++k) vm2[k] = vm[k];
        for (; i + 2 * NORM_LANES <= n; i += 2 * NORM_LANES) { /* two chains: the maximum is exact in any order */
            for (k = 0; k < NORM_VK; ++k) {
                norm_vf x, x2;
                NORM_VLOAD(x, v + i + k * NORM_VN);
                NORM_VLOAD(x2, v + i + NORM_LANES + k * NORM_VN);
                vm[k] = NORM_VSELECT(x > vm[k], x, vm[k]);
                vm2[k] = NORM_VSELECT(x2 > vm2[k], x2, vm2[k]);
            }
        }
        for (k = 0; k < NORM_VK; ++k) vm[k] = NORM_VSELECT(vm2[k] > vm[k], vm2[k], vm[k]);
#if defined(NORM_VPART)
        for (; i < n; i += NORM_LANES) { /* the tail: lanes past it read -inf */
            for (k = 0; k < NORM_VK && i + k * NORM_VN < n; ++k) {
                const size_t left = n - i - k * NORM_VN;
                norm_vf x;
                NORM_VLOAD_PART(x, v + i + k * NORM_VN, (unsigned)(left < NORM_VN ? left : NORM_VN), -INFINITY);
                vm[k] = NORM_VSELECT(x > vm[k], x, vm[k]);
            }
        }
        return norm_vmaximum(vm);
#endif
        for (; i < n; i += NORM_LANES) {
            const float* src = v + i;
            if (n - i < NORM_LANES) { /* the tail, padded with -inf */
                for (k = 0; k < NORM_LANES; ++k) pad[k] = i + k < n ? v[i + k] : -INFINITY;
                src = pad;
            }
            for (k = 0; k < NORM_VK; ++k) {
                norm_vf x;
                NORM_VLOAD(x, src + k * NORM_VN);
                vm[k] = NORM_VSELECT(x > vm[k], x, vm[k]);
            }
        }
        for (k = 0; k < NORM_VK; ++k) NORM_VSTORE(acc + k * NORM_VN, vm[k]);
    }
#endif
    for (; i + NORM_LANES <= n; i += NORM_LANES) {
        for (k = 0; k < NORM_LANES; ++k) acc[k] = v[i + k] > acc[k] ? v[i + k] : acc[k];
    }
    for (k = 0; i < n; ++i, ++k) acc[k] = v[i] > acc[k] ? v[i] : acc[k];
    { /* the lanes' maximum, as a tree */
        int w, q;
        for (w = NORM_LANES / 2; w >= 1; w /= 2) {
            for (q = 0; q < w; ++q) acc[q] = acc[q + w] > acc[q] ? acc[q + w] : acc[q];
        }
    }
    return acc[0];
}

/* exp(x) for x <= 0 or NaN (softmax's x - max, the maximum finite). n = round(x / ln 2) by adding
 * 1.5 * 2^23 + 127 (the sum's low bits then hold n + 127, the biased exponent of 2^n), r = x - n ln 2 in two
 * parts, Cephes' expf polynomial (about 1 ulp), times 2^n. x is first raised to -87.33 (where 2^n is still
 * a normal float) and a result below 2^-126 (x < -87.33) is 0: outputs below the smallest normal float
 * are flushed to zero (docs/deviations.md). A NaN stays NaN. */
#define NORM_EXP_LO (-87.33654f)
#define NORM_EXP_MAGIC 12583039.0f /* 1.5 * 2^23 + 127 */
#define NORM_EXP_BODY(xc, t, nf, r, p)                    \
    t = xc * 1.44269504088896341f + NORM_EXP_MAGIC;       \
    nf = t - NORM_EXP_MAGIC;                              \
    r = xc - nf * 0.693359375f;                           \
    r = r - nf * -2.12194440e-4f;                         \
    p = r * 1.9875691500e-4f + 1.3981999507e-3f;          \
    p = p * r + 8.3334519073e-3f;                         \
    p = p * r + 4.1665795894e-2f;                         \
    p = p * r + 1.6666665459e-1f;                         \
    p = p * r + 5.0000001201e-1f;                         \
    p = p * (r * r) + r + 1.0f;

static inline float norm_exp(float x) {
    const float xc = x < NORM_EXP_LO ? NORM_EXP_LO : x; /* NaN kept */
    float t, nf, r, p, scale;
    uint32_t bits;
    NORM_EXP_BODY(xc, t, nf, r, p)
    memcpy(&bits, &t, sizeof bits);
    bits <<= 23; /* n + 127 in [1, 127] */
    memcpy(&scale, &bits, sizeof scale);
    return x < NORM_EXP_LO ? 0.0f : p * scale;
}

/* e = exp(x), vectors (a macro, as above). With AVX-512 in fewer instructions: a lane below NORM_EXP_LO (or
 * -inf) is computed unclamped and zeroed by the final scaling's mask (NaN compares unordered and stays);
 * r = x - n ln2 is one fused step with ln 2 rounded to float (its error, n * 1.9e-9, is the growth with |x|
 * the softmax tolerance allows); exp(r) on [-ln2/2, ln2/2] is 1 + r (c1 + ... + c6 r^5) in Horner's form
 * (coefficients fitted for the least largest relative error, 2.0e-9 in exact arithmetic, where Cephes'
 * form takes one instruction more); 2^n is applied by vscalefps. Measured against double exp on 2e7
 * points of [-87.3, 0]: within 0.9u * (1 + |x|) (u = 2^-24), about 1 ulp for |x| < 10. */
#if defined(NORM_VEC) && defined(__AVX512F__)
#define NORM_VEXP(e, x)                                                                      \
    do {                                                                                     \
        const __m512 x_ = (__m512)(x);                                                       \
        const __mmask16 keep_ = _mm512_cmp_ps_mask(x_, _mm512_set1_ps(NORM_EXP_LO), _CMP_NLT_UQ); \
        const __m512 t_ = _mm512_fmadd_ps(x_, _mm512_set1_ps(1.44269504088896341f), _mm512_set1_ps(NORM_EXP_MAGIC)); \
        const __m512 nf_ = _mm512_sub_ps(t_, _mm512_set1_ps(NORM_EXP_MAGIC));              \
        const __m512 r_ = _mm512_fnmadd_ps(nf_, _mm512_set1_ps(0.693147182464599609375f), x_); \
        __m512 p_ = _mm512_fmadd_ps(r_, _mm512_set1_ps(1.3846099977e-3f), _mm512_set1_ps(8.3741591633e-3f)); \
        p_ = _mm512_fmadd_ps(p_, r_, _mm512_set1_ps(4.1667963112e-2f));                     \
        p_ = _mm512_fmadd_ps(p_, r_, _mm512_set1_ps(1.6666431452e-1f));                     \
        p_ = _mm512_fmadd_ps(p_, r_, _mm512_set1_ps(4.9999994346e-1f));                     \
        p_ = _mm512_fmadd_ps(p_, r_, _mm512_set1_ps(1.0000000320e+0f));                     \
        p_ = _mm512_fmadd_ps(p_, r_, _mm512_set1_ps(1.0f));                                 \
        (e) = (norm_vf)_mm512_maskz_scalef_ps(keep_, p_, nf_);                              \
    } while (0)
#elif defined(NORM_VEC)
#define NORM_VEXP(e, x)                                                            \
    do {                                                                           \
        const norm_vi under_ = (x) < NORM_EXP_LO;                                  \
        const norm_vf xc_ = NORM_VSELECT(under_, NORM_VSPLAT(NORM_EXP_LO), (x));    \
        norm_vf t_, nf_, r_, p_;                                                   \
        NORM_EXP_BODY(xc_, t_, nf_, r_, p_)                                        \
        p_ *= (norm_vf)((norm_vu)t_ << 23);                                        \
        (e) = (norm_vf)(~under_ & (norm_vi)p_);                                    \
    } while (0)
#endif

/* dst[j] = exp(v[j] - m) (dst may be NULL) and the chunk's sum of those. With vectors, a tail of fewer than
 * 16 goes through them too, padded with -inf (whose exponential, 0, leaves the sums as they are). Where
 * the target has FMA, GCC fuses this function's multiply-adds (one rounding fewer each; the sums keep
 * their order). */
#if defined(__FMA__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("fp-contract=fast")))
#endif
static float norm_chunk_exp(const float* v, float* dst, size_t n, float m) {
    float acc[NORM_LANES] = {0};
    size_t i = 0, k;
#if defined(NORM_VEC)
    {
        norm_vf va[NORM_VK];
        float pad[NORM_LANES], out[NORM_LANES];
        for (k = 0; k < NORM_VK; ++k) va[k] = NORM_VSPLAT(0.0f);
#if defined(NORM_VPART)
        for (; i + NORM_LANES <= n; i += NORM_LANES) {
            for (k = 0; k < NORM_VK; ++k) {
                norm_vf x, e;
                NORM_VLOAD(x, v + i + k * NORM_VN);
                x -= m;
                NORM_VEXP(e, x);
                if (dst != NULL) NORM_VSTORE(dst + i + k * NORM_VN, e);
                va[k] += e;
            }
        }
        if (i < n) { /* the tail: lanes past it read -inf, whose exponential (0) leaves the sums as they are */
            for (k = 0; k < NORM_VK && i + k * NORM_VN < n; ++k) {
                const size_t left = n - i - k * NORM_VN;
                const unsigned rem = (unsigned)(left < NORM_VN ? left : NORM_VN);
                norm_vf x, e;
                NORM_VLOAD_PART(x, v + i + k * NORM_VN, rem, -INFINITY);
                x -= m;
                NORM_VEXP(e, x);
                if (dst != NULL) NORM_VSTORE_PART(dst + i + k * NORM_VN, e, rem);
                va[k] += e;
            }
        }
        return norm_vtotal(va);
#endif
        for (; i < n; i += NORM_LANES) {
            const int tail = n - i < NORM_LANES;
            const float* src = v + i;
            float* to = dst != NULL ? dst + i : NULL;
            if (tail) {
                for (k = 0; k < NORM_LANES; ++k) pad[k] = i + k < n ? v[i + k] : -INFINITY;
                src = pad;
                to = dst != NULL ? out : NULL;
            }
            for (k = 0; k < NORM_VK; ++k) {
                norm_vf x, e;
                NORM_VLOAD(x, src + k * NORM_VN);
                x -= m;
                NORM_VEXP(e, x);
                if (to != NULL) NORM_VSTORE(to + k * NORM_VN, e);
                va[k] += e;
            }
            if (tail && dst != NULL) {
                for (k = 0; i + k < n; ++k) dst[i + k] = out[k];
            }
        }
        for (k = 0; k < NORM_VK; ++k) NORM_VSTORE(acc + k * NORM_VN, va[k]);
    }
#endif
    for (; i + NORM_LANES <= n; i += NORM_LANES) {
        for (k = 0; k < NORM_LANES; ++k) {
            float e = norm_exp(v[i + k] - m);
            if (dst != NULL) dst[i + k] = e;
            acc[k] += e;
        }
    }
    for (k = 0; i < n; ++i, ++k) {
        float e = norm_exp(v[i] - m);
        if (dst != NULL) dst[i] = e;
        acc[k] += e;
    }
    return norm_lanes_total(acc);
}

/* ---- rows ------------------------------------------------------------------------------------------- */

static void norm_row_offsets(const norm_plan* p, uint64_t row, uint64_t* off) {
    uint32_t i, t;
    for (t = 0; t < V_COUNT; ++t) off[t] = 0;
    for (i = p->kr; i-- > 0;) {
        uint64_t idx = row % p->ksz[i];
        row /= p->ksz[i];
        for (t = 0; t < V_COUNT; ++t) off[t] += idx * p->v[t].ks[i];
    }
}

/* A power of two near 1/maxabs (1 when maxabs is 0, inf or NaN), within float's normal range. */
static float norm_scale_for(float maxabs) {
    int e;
    if (!(maxabs > 0.0f) || !isfinite(maxabs)) return 1.0f;
    (void)frexpf(maxabs, &e);
    if (e > 120) e = 120;
    if (e < -120) e = -120;
    return ldexpf(1.0f, -e);
}

static void mvn_row(const norm_plan* p, uint64_t row) {
    float xb[NORM_CHUNK], yb[NORM_CHUNK], sb[NORM_CHUNK], bb[NORM_CHUNK];
    uint64_t off[V_COUNT], j0, n;
    const norm_view* sv = &p->v[V_SCALE];
    const norm_view* bv = &p->v[V_BIAS];
    norm_sum total = {0.0f, 0.0f};
    float maxabs = 0.0f, mean, f, rstd = 1.0f, sconst = 1.0f, bconst = 0.0f;
    double m;
    norm_row_offsets(p, row, off);

    for (j0 = 0; j0 < p->row_len; j0 += n) { /* pass 1: the sum and the largest magnitude */
        n = p->row_len - j0 < NORM_CHUNK ? p->row_len - j0 : NORM_CHUNK;
        norm_sum_add(&total, norm_chunk_sum(norm_load(p, &p->v[V_X], off[V_X], j0, n, xb), (size_t)n, &maxabs));
    }
    f = norm_scale_for(maxabs);
    m = (double)total.s + (double)total.c;
    if (!isfinite(m) && isfinite(maxabs)) { /* the float sum overflowed: sum the scaled values */
        total.s = total.c = 0.0f;
        for (j0 = 0; j0 < p->row_len; j0 += n) {
            n = p->row_len - j0 < NORM_CHUNK ? p->row_len - j0 : NORM_CHUNK;
            norm_sum_add(&total, norm_chunk_scaled_sum(norm_load(p, &p->v[V_X], off[V_X], j0, n, xb), (size_t)n, f));
        }
        m = ((double)total.s + (double)total.c) / (double)f;
    }
    mean = (float)(m / (double)p->row_len);

    if (p->normalize_variance) { /* pass 2: the squared deviations, scaled by f (a power of two) */
        norm_sum sq = {0.0f, 0.0f};
        double variance;
        for (j0 = 0; j0 < p->row_len; j0 += n) {
            n = p->row_len - j0 < NORM_CHUNK ? p->row_len - j0 : NORM_CHUNK;
            norm_sum_add(&sq, norm_chunk_sq_dev(norm_load(p, &p->v[V_X], off[V_X], j0, n, xb), (size_t)n, mean, f));
        }
        variance = ((double)sq.s + (double)sq.c) / (double)p->row_len / ((double)f * (double)f);
        rstd = (float)(1.0 / sqrt(variance + (double)p->epsilon));
    }
    if (sv->data != NULL && sv->row_const) sconst = norm_read(p, sv, off[V_SCALE]);
    if (bv->data != NULL && bv->row_const) bconst = norm_read(p, bv, off[V_BIAS]);

    for (j0 = 0; j0 < p->row_len; j0 += n) { /* pass 3: the output */
        const float* x;
        float* y;
        size_t j, c;
        n = p->row_len - j0 < NORM_CHUNK ? p->row_len - j0 : NORM_CHUNK;
        c = (size_t)n;
        x = norm_load(p, &p->v[V_X], off[V_X], j0, n, xb);
        y = norm_out(p, off[V_Y], j0, yb);
        if ((sv->data == NULL || sv->row_const) && (bv->data == NULL || bv->row_const)) {
            const float a = rstd * sconst, b = bconst;
            for (j = 0; j < c; ++j) y[j] = (x[j] - mean) * a + b;
        } else {
            const float* s = (sv->data == NULL || sv->row_const) ? NULL : norm_load(p, sv, off[V_SCALE], j0, n, sb);
            const float* b = (bv->data == NULL || bv->row_const) ? NULL : norm_load(p, bv, off[V_BIAS], j0, n, bb);
            if (s != NULL && b != NULL) {
                for (j = 0; j < c; ++j) y[j] = (x[j] - mean) * rstd * s[j] + b[j];
            } else if (s != NULL) {
                for (j = 0; j < c; ++j) y[j] = (x[j] - mean) * rstd * s[j] + bconst;
            } else {
                const float a = rstd * sconst;
                for (j = 0; j < c; ++j) y[j] = (x[j] - mean) * a + b[j];
            }
        }
        dmlpy_act_apply_row(&p->act, y, c);
        norm_store(p, off[V_Y], j0, n, yb);
    }
}

static void softmax_row(const norm_plan* p, uint64_t row) {
    float xb[NORM_CHUNK], yb[NORM_CHUNK];
    uint64_t off[V_COUNT], j0, n;
    const norm_view* xv = &p->v[V_X];
    const int direct = !p->half && p->v[V_Y].row_packed && p->kind == NK_SOFTMAX;
    norm_sum total = {0.0f, 0.0f};
    float mx = -INFINITY, sum;
    norm_row_offsets(p, row, off);

    for (j0 = 0; j0 < p->row_len; j0 += n) { /* pass 1: the maximum */
        n = p->row_len - j0 < NORM_CHUNK ? p->row_len - j0 : NORM_CHUNK;
        mx = norm_chunk_max(norm_load(p, xv, off[V_X], j0, n, xb), (size_t)n, mx);
    }
    if (!isfinite(mx)) { /* +inf, or no finite value and no +inf: NaN throughout (docs/deviations.md) */
        for (j0 = 0; j0 < p->row_len; j0 += n) {
            float* y;
            size_t j;
            n = p->row_len - j0 < NORM_CHUNK ? p->row_len - j0 : NORM_CHUNK;
            y = norm_out(p, off[V_Y], j0, yb);
            for (j = 0; j < (size_t)n; ++j) y[j] = NAN;
            norm_store(p, off[V_Y], j0, n, yb);
        }
        return;
    }
    for (j0 = 0; j0 < p->row_len; j0 += n) { /* pass 2: the sum of exponentials (kept in a packed output) */
        n = p->row_len - j0 < NORM_CHUNK ? p->row_len - j0 : NORM_CHUNK;
        norm_sum_add(&total, norm_chunk_exp(norm_load(p, xv, off[V_X], j0, n, xb), direct ? norm_out(p, off[V_Y], j0, yb) : NULL,
                                            (size_t)n, mx));
    }
    sum = total.s + total.c;
    if (p->kind == NK_SOFTMAX) {
        const float inv = (float)(1.0 / (double)sum);
        for (j0 = 0; j0 < p->row_len; j0 += n) { /* pass 3: scale */
            float* y;
            size_t j, c;
            n = p->row_len - j0 < NORM_CHUNK ? p->row_len - j0 : NORM_CHUNK;
            c = (size_t)n;
            y = norm_out(p, off[V_Y], j0, yb);
            if (!direct) (void)norm_chunk_exp(norm_load(p, xv, off[V_X], j0, n, xb), y, c, mx);
            for (j = 0; j < c; ++j) y[j] *= inv;
            norm_store(p, off[V_Y], j0, n, yb);
        }
    } else {
        const float lse = (float)log((double)sum);
        for (j0 = 0; j0 < p->row_len; j0 += n) { /* pass 3: (x - max) - log(sum) */
            const float* x;
            float* y;
            size_t j, c;
            n = p->row_len - j0 < NORM_CHUNK ? p->row_len - j0 : NORM_CHUNK;
            c = (size_t)n;
            x = norm_load(p, xv, off[V_X], j0, n, xb);
            y = norm_out(p, off[V_Y], j0, yb);
            for (j = 0; j < c; ++j) y[j] = (x[j] - mx) - lse;
            norm_store(p, off[V_Y], j0, n, yb);
        }
    }
}

/* Rows [begin, end) of a float32 mean-variance normalization whose input and output rows are packed and
 * whose Scale and Bias are absent, constant over a row or packed: mvn_row's arithmetic, chunk by chunk in
 * the same order (the same bits), on the tensors in place and without its per-row staging. A row whose
 * float sum overflows goes to mvn_row. */
static void mvn_packed_rows(const norm_plan* p, uint64_t begin, uint64_t end) {
    const uint64_t len = p->row_len;
    const norm_view* sv = &p->v[V_SCALE];
    const norm_view* bv = &p->v[V_BIAS];
    uint64_t row, off[V_COUNT] = {0, 0, 0, 0, 0, 0};
    for (row = begin; row < end; ++row) {
        const float* x;
        float* y;
        const float *s = NULL, *b = NULL;
        norm_sum total = {0.0f, 0.0f};
        float maxabs = 0.0f, mean, f, rstd = 1.0f, sconst = 1.0f, bconst = 0.0f;
        uint64_t j0, n;
        double m;
        if (p->kr == 1) {
            int t;
            for (t = 0; t < V_COUNT; ++t) off[t] = row * p->v[t].ks[0];
        } else if (p->kr > 1) {
            norm_row_offsets(p, row, off);
        }
        x = (const float*)p->v[V_X].data + off[V_X];
        y = (float*)p->v[V_Y].data + off[V_Y];
        for (j0 = 0; j0 < len; j0 += n) {
            n = len - j0 < NORM_CHUNK ? len - j0 : NORM_CHUNK;
            norm_sum_add(&total, norm_chunk_sum(x + j0, (size_t)n, &maxabs));
        }
        m = (double)total.s + (double)total.c;
        if (!isfinite(m) && isfinite(maxabs)) {
            mvn_row(p, row);
            continue;
        }
        f = norm_scale_for(maxabs);
        mean = (float)(m / (double)len);
        if (p->normalize_variance) {
            norm_sum sq = {0.0f, 0.0f};
            double variance;
            for (j0 = 0; j0 < len; j0 += n) {
                n = len - j0 < NORM_CHUNK ? len - j0 : NORM_CHUNK;
                norm_sum_add(&sq, norm_chunk_sq_dev(x + j0, (size_t)n, mean, f));
            }
            variance = ((double)sq.s + (double)sq.c) / (double)len / ((double)f * (double)f);
            rstd = (float)(1.0 / sqrt(variance + (double)p->epsilon));
        }
        if (sv->data != NULL) {
            if (sv->row_const) {
                sconst = ((const float*)sv->data)[off[V_SCALE]];
            } else {
                s = (const float*)sv->data + off[V_SCALE];
            }
        }
        if (bv->data != NULL) {
            if (bv->row_const) {
                bconst = ((const float*)bv->data)[off[V_BIAS]];
            } else {
                b = (const float*)bv->data + off[V_BIAS];
            }
        }
        { /* mvn_row's pass 3, whole row at once (element by element the same expressions) */
            size_t j;
            const size_t c = (size_t)len;
            if (s == NULL && b == NULL) {
                const float a = rstd * sconst;
                for (j = 0; j < c; ++j) y[j] = (x[j] - mean) * a + bconst;
            } else if (s != NULL && b != NULL) {
                for (j = 0; j < c; ++j) y[j] = (x[j] - mean) * rstd * s[j] + b[j];
            } else if (s != NULL) {
                for (j = 0; j < c; ++j) y[j] = (x[j] - mean) * rstd * s[j] + bconst;
            } else {
                const float a = rstd * sconst;
                for (j = 0; j < c; ++j) y[j] = (x[j] - mean) * a + b[j];
            }
        }
        if (p->act.kind != DMLPY_ACT_NONE) {
            for (j0 = 0; j0 < len; j0 += n) { /* by chunks, as mvn_row */
                n = len - j0 < NORM_CHUNK ? len - j0 : NORM_CHUNK;
                dmlpy_act_apply_row(&p->act, y + j0, (size_t)n);
            }
        }
    }
}

/* Rows [begin, end) of a float32 softmax or log-softmax whose input and output rows are packed and fit in
 * one chunk (softmax over an attention row): softmax_row's arithmetic (its one chunk sum is the row's sum:
 * Neumaier's compensation of a single term is 0) without its per-row staging, which costs as much as a
 * row of 200 elements. */
static void softmax_packed_rows(const norm_plan* p, uint64_t begin, uint64_t end) {
    const size_t n = (size_t)p->row_len;
    const float* xd = (const float*)p->v[V_X].data;
    float* yd = (float*)p->v[V_Y].data;
    uint64_t row, ox = 0, oy = 0;
    for (row = begin; row < end; ++row) {
        const float* x;
        float* y;
        float mx;
        size_t j;
        if (p->kr == 1) {
            ox = row * p->v[V_X].ks[0];
            oy = row * p->v[V_Y].ks[0];
        } else if (p->kr > 1) {
            uint64_t off[V_COUNT];
            norm_row_offsets(p, row, off);
            ox = off[V_X];
            oy = off[V_Y];
        }
        x = xd + ox;
        y = yd + oy;
        mx = norm_chunk_max(x, n, -INFINITY);
        if (!isfinite(mx)) { /* as softmax_row */
            for (j = 0; j < n; ++j) y[j] = NAN;
            continue;
        }
        if (p->kind == NK_SOFTMAX) {
            const float inv = (float)(1.0 / (double)norm_chunk_exp(x, y, n, mx));
#if defined(NORM_VPART)
            const norm_vf vinv = NORM_VSPLAT(inv);
            norm_vf e;
            for (j = 0; j + NORM_VN <= n; j += NORM_VN) {
                NORM_VLOAD(e, y + j);
                e *= vinv;
                NORM_VSTORE(y + j, e);
            }
            if (j < n) {
                NORM_VLOAD_PART(e, y + j, (unsigned)(n - j), 0.0f);
                e *= vinv;
                NORM_VSTORE_PART(y + j, e, (unsigned)(n - j));
            }
#else
            for (j = 0; j < n; ++j) y[j] *= inv;
#endif
        } else {
            const float lse = (float)log((double)norm_chunk_exp(x, NULL, n, mx));
            for (j = 0; j < n; ++j) y[j] = (x[j] - mx) - lse;
        }
    }
}

/* BATCH_NORMALIZATION reduces nothing: a work item is one chunk of a row. */
static void batch_norm_chunk(const norm_plan* p, uint64_t row, uint64_t j0) {
    float xb[NORM_CHUNK], yb[NORM_CHUNK], pb[4][NORM_CHUNK];
    const float* q[4]; /* mean, variance, scale, bias; NULL when constant over the row */
    float k[4];
    uint64_t off[V_COUNT];
    const uint64_t n = p->row_len - j0 < NORM_CHUNK ? p->row_len - j0 : NORM_CHUNK;
    const size_t c = (size_t)n;
    const float* x;
    float* y;
    size_t j;
    int t, all_const = 1;
    static const int views[4] = {V_MEAN, V_VAR, V_SCALE, V_BIAS};
    norm_row_offsets(p, row, off);
    for (t = 0; t < 4; ++t) {
        const norm_view* v = &p->v[views[t]];
        if (v->row_const) {
            q[t] = NULL;
            k[t] = norm_read(p, v, off[views[t]]);
        } else {
            q[t] = norm_load(p, v, off[views[t]], j0, n, pb[t]);
            all_const = 0;
        }
    }
    x = norm_load(p, &p->v[V_X], off[V_X], j0, n, xb);
    y = norm_out(p, off[V_Y], j0, yb);
    if (all_const) {
        const float a = (float)((double)k[2] / sqrt((double)k[1] + (double)p->epsilon)), m = k[0], b = k[3];
        for (j = 0; j < c; ++j) y[j] = (x[j] - m) * a + b;
    } else {
        for (j = 0; j < c; ++j) {
            const float m = q[0] ? q[0][j] : k[0], v = q[1] ? q[1][j] : k[1];
            const float s = q[2] ? q[2][j] : k[2], b = q[3] ? q[3][j] : k[3];
            y[j] = s * (x[j] - m) / sqrtf(v + p->epsilon) + b;
        }
    }
    dmlpy_act_apply_row(&p->act, y, c);
    norm_store(p, off[V_Y], j0, n, yb);
}

#if defined(__AVX512F__) || defined(__AVX__) || defined(__SSE2__)
#include <immintrin.h>
#define NORM_STREAM 1
#if defined(__AVX512F__)
#define NORM_SW 16
typedef __m512 norm_sv;
#define NORM_SLOAD(p) _mm512_loadu_ps(p)
#define NORM_SSPLAT(v) _mm512_set1_ps(v)
#define NORM_SBN(x, m, a, b) _mm512_add_ps(_mm512_mul_ps(_mm512_sub_ps((x), (m)), (a)), (b))
#define NORM_SSTREAM(p, v) _mm512_stream_ps((p), (v))
#elif defined(__AVX__)
#define NORM_SW 8
typedef __m256 norm_sv;
#define NORM_SLOAD(p) _mm256_loadu_ps(p)
#define NORM_SSPLAT(v) _mm256_set1_ps(v)
#define NORM_SBN(x, m, a, b) _mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps((x), (m)), (a)), (b))
#define NORM_SSTREAM(p, v) _mm256_stream_ps((p), (v))
#else
#define NORM_SW 4
typedef __m128 norm_sv;
#define NORM_SLOAD(p) _mm_loadu_ps(p)
#define NORM_SSPLAT(v) _mm_set1_ps(v)
#define NORM_SBN(x, m, a, b) _mm_add_ps(_mm_mul_ps(_mm_sub_ps((x), (m)), (a)), (b))
#define NORM_SSTREAM(p, v) _mm_stream_ps((p), (v))
#endif

/* y[j] = (x[j] - m) * a + b, then the FusedActivation, for j < n, stored with non-temporal stores from the
 * first vector-aligned element of y (the elements before it and after the last whole vector normally).
 * The same operations in the same order as the normal loop (separate multiply and add), so the same bits.
 * With an activation each piece is computed in a buffer, activated there, then streamed. */
static void batch_norm_stream(const norm_plan* p, float* y, const float* x, size_t n, float m, float a, float b) {
    const norm_sv vm = NORM_SSPLAT(m), va = NORM_SSPLAT(a), vb = NORM_SSPLAT(b);
    size_t j = 0;
    for (; j < n && ((uintptr_t)(y + j) & (NORM_SW * sizeof(float) - 1u)) != 0; ++j) y[j] = (x[j] - m) * a + b;
    dmlpy_act_apply_row(&p->act, y, j);
    if (p->act.kind == DMLPY_ACT_NONE) {
        for (; j + NORM_SW <= n; j += NORM_SW) NORM_SSTREAM(y + j, NORM_SBN(NORM_SLOAD(x + j), vm, va, vb));
    } else {
        float buf[NORM_CHUNK];
        while (n - j >= NORM_SW) {
            const size_t c = (n - j) / NORM_SW * NORM_SW < NORM_CHUNK ? (n - j) / NORM_SW * NORM_SW : NORM_CHUNK;
            size_t i;
            for (i = 0; i < c; ++i) buf[i] = (x[j + i] - m) * a + b;
            dmlpy_act_apply_row(&p->act, buf, c);
            for (i = 0; i < c; i += NORM_SW) NORM_SSTREAM(y + j + i, NORM_SLOAD(buf + i));
            j += c;
        }
    }
    {
        const size_t t = j;
        for (; j < n; ++j) y[j] = (x[j] - m) * a + b;
        dmlpy_act_apply_row(&p->act, y + t, n - t);
    }
}
#endif

/* batch_norm_chunk's items [begin, end) when x and y are packed float32 rows and every parameter is one value
 * per row (per-channel BATCH_NORMALIZATION): a row's consecutive chunks in one loop, its parameters read once.
 * Same arithmetic as batch_norm_chunk, so the same bits. */
static void batch_norm_packed(const norm_plan* p, uint64_t begin, uint64_t end) {
    static const int views[4] = {V_MEAN, V_VAR, V_SCALE, V_BIAS};
    while (begin < end) {
        const uint64_t row = begin / p->chunks_per_row, first = row * p->chunks_per_row;
        const uint64_t c1 = end - first < p->chunks_per_row ? end - first : p->chunks_per_row;
        const uint64_t j0 = (begin - first) * NORM_CHUNK, j1 = c1 * NORM_CHUNK < p->row_len ? c1 * NORM_CHUNK : p->row_len;
        uint64_t off[V_COUNT];
        float k[4], a, m, b;
        const float* x;
        float* y;
        size_t j;
        const size_t n = (size_t)(j1 - j0);
        int t;
        norm_row_offsets(p, row, off);
        for (t = 0; t < 4; ++t) k[t] = ((const float*)p->v[views[t]].data)[off[views[t]]];
        a = (float)((double)k[2] / sqrt((double)k[1] + (double)p->epsilon));
        m = k[0];
        b = k[3];
        x = (const float*)p->v[V_X].data + off[V_X] + j0;
        y = (float*)p->v[V_Y].data + off[V_Y] + j0;
#if defined(NORM_STREAM)
        if (p->stream) {
            batch_norm_stream(p, y, x, n, m, a, b);
            begin = first + c1;
            continue;
        }
#endif
        for (j = 0; j < n; ++j) y[j] = (x[j] - m) * a + b;
        dmlpy_act_apply_row(&p->act, y, n);
        begin = first + c1;
    }
}

static void norm_run(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    const norm_plan* p = (const norm_plan*)vp;
    uint64_t item;
    (void)worker;
    if ((p->kind == NK_SOFTMAX || p->kind == NK_LOG_SOFTMAX) && !p->half && p->v[V_X].row_packed &&
        p->v[V_Y].row_packed && p->row_len <= NORM_CHUNK) {
        softmax_packed_rows(p, begin, end);
        return;
    }
    if (p->kind == NK_MVN && !p->half && p->v[V_X].row_packed && p->v[V_Y].row_packed &&
        (p->v[V_SCALE].data == NULL || p->v[V_SCALE].row_const || p->v[V_SCALE].row_packed) &&
        (p->v[V_BIAS].data == NULL || p->v[V_BIAS].row_const || p->v[V_BIAS].row_packed)) {
        mvn_packed_rows(p, begin, end);
        return;
    }
    if (p->kind == NK_BATCH_NORM && !p->half && p->v[V_X].row_packed && p->v[V_Y].row_packed &&
        p->v[V_MEAN].row_const && p->v[V_VAR].row_const && p->v[V_SCALE].row_const && p->v[V_BIAS].row_const) {
        batch_norm_packed(p, begin, end);
#if defined(NORM_STREAM)
        if (p->stream) _mm_sfence(); /* the streamed stores are visible before the caller joins */
#endif
        return;
    }
    for (item = begin; item < end; ++item) {
        if (p->kind == NK_BATCH_NORM) {
            batch_norm_chunk(p, item / p->chunks_per_row, (item % p->chunks_per_row) * NORM_CHUNK);
        } else if (p->kind == NK_MVN) {
            mvn_row(p, item);
        } else {
            softmax_row(p, item);
        }
    }
}

/* ---- desc reading and checks ------------------------------------------------------------------------ */

int32_t dmlpy_normalization(const DML_OPERATOR_DESC* desc, UINT inputCount, const DMLPY_BOUND_BUFFER* inputs,
                            UINT outputCount, const DMLPY_BOUND_BUFFER* outputs, UINT threadCount) {
    /* slots: the inputs in binding order, then the output; the view each one fills */
    const DML_TENSOR_DESC* slot_desc[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    int slot_view[6] = {V_X, V_COUNT, V_COUNT, V_COUNT, V_COUNT, V_COUNT};
    UINT n_in = 1, axis_count = 0;
    const UINT* axes = NULL;
    const DML_OPERATOR_DESC* fused = NULL;
    int reduced[DMLPY_MAX_RANK] = {0};
    dmlpy_tensor t[6];
    norm_plan p;
    dmlpy_staged_output stage;
    uint32_t i, s, rank;
    int32_t st;
    uint64_t elements = 1, work, items;
    unsigned threads;

    if (desc == NULL || desc->Desc == NULL) return DMLPY_E_NULL_ARGUMENT;
    memset(&p, 0, sizeof p);
    switch (desc->Type) {
    case DML_OPERATOR_BATCH_NORMALIZATION: {
        const DML_BATCH_NORMALIZATION_OPERATOR_DESC* d = (const DML_BATCH_NORMALIZATION_OPERATOR_DESC*)desc->Desc;
        p.kind = NK_BATCH_NORM;
        n_in = 5;
        slot_desc[0] = d->InputTensor;
        slot_desc[1] = d->MeanTensor;
        slot_desc[2] = d->VarianceTensor;
        slot_desc[3] = d->ScaleTensor;
        slot_desc[4] = d->BiasTensor;
        slot_desc[5] = d->OutputTensor;
        slot_view[1] = V_MEAN;
        slot_view[2] = V_VAR;
        slot_view[3] = V_SCALE;
        slot_view[4] = V_BIAS;
        for (i = 1; i < 5; ++i) {
            if (slot_desc[i] == NULL) return DMLPY_E_NULL_ARGUMENT;
        }
        p.epsilon = d->Epsilon;
        fused = d->FusedActivation;
        break;
    }
    case DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION: {
        const DML_MEAN_VARIANCE_NORMALIZATION_OPERATOR_DESC* d =
            (const DML_MEAN_VARIANCE_NORMALIZATION_OPERATOR_DESC*)desc->Desc;
        p.kind = NK_MVN;
        n_in = 3;
        slot_desc[0] = d->InputTensor;
        slot_desc[1] = d->ScaleTensor;
        slot_desc[2] = d->BiasTensor;
        slot_desc[5] = d->OutputTensor;
        p.normalize_variance = d->NormalizeVariance != 0;
        p.epsilon = d->Epsilon;
        fused = d->FusedActivation;
        axis_count = d->CrossChannel ? 1u : 2u; /* the first reduced axis, resolved below */
        break;
    }
    case DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1: {
        const DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC* d =
            (const DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC*)desc->Desc;
        p.kind = NK_MVN;
        n_in = 3;
        slot_desc[0] = d->InputTensor;
        slot_desc[1] = d->ScaleTensor;
        slot_desc[2] = d->BiasTensor;
        slot_desc[5] = d->OutputTensor;
        p.normalize_variance = d->NormalizeVariance != 0;
        p.epsilon = d->Epsilon;
        fused = d->FusedActivation;
        axis_count = d->AxisCount;
        axes = d->Axes;
        if (axis_count > 0 && axes == NULL) return DMLPY_E_NULL_ARGUMENT;
        break;
    }
    case DML_OPERATOR_ACTIVATION_SOFTMAX:
    case DML_OPERATOR_ACTIVATION_LOG_SOFTMAX: {
        const DML_ACTIVATION_SOFTMAX_OPERATOR_DESC* d = (const DML_ACTIVATION_SOFTMAX_OPERATOR_DESC*)desc->Desc;
        p.kind = desc->Type == DML_OPERATOR_ACTIVATION_SOFTMAX ? NK_SOFTMAX : NK_LOG_SOFTMAX;
        slot_desc[0] = d->InputTensor;
        slot_desc[5] = d->OutputTensor;
        break;
    }
    case DML_OPERATOR_ACTIVATION_SOFTMAX1:
    case DML_OPERATOR_ACTIVATION_LOG_SOFTMAX1: {
        const DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC* d = (const DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC*)desc->Desc;
        p.kind = desc->Type == DML_OPERATOR_ACTIVATION_SOFTMAX1 ? NK_SOFTMAX : NK_LOG_SOFTMAX;
        slot_desc[0] = d->InputTensor;
        slot_desc[5] = d->OutputTensor;
        axis_count = d->AxisCount;
        axes = d->Axes;
        if (axis_count > 0 && axes == NULL) return DMLPY_E_NULL_ARGUMENT;
        break;
    }
    default:
        return DMLPY_E_UNSUPPORTED_OPERATOR;
    }
    if (p.kind == NK_MVN) {
        slot_view[1] = V_SCALE;
        slot_view[2] = V_BIAS;
    }
    slot_view[5] = V_Y;
    if (slot_desc[0] == NULL || slot_desc[5] == NULL) return DMLPY_E_NULL_ARGUMENT;
    p.act.kind = DMLPY_ACT_NONE;
    if (fused != NULL) {
        st = dmlpy_activation_read(fused, DMLPY_ACT_FUSED, &p.act, NULL, NULL);
        if (st != DMLPY_OK) return st;
    }
    if (inputCount != n_in || outputCount != 1) return DMLPY_E_BINDING_COUNT;
    if (inputs == NULL || outputs == NULL) return DMLPY_E_NULL_ARGUMENT;

    /* Every present tensor: FLOAT32 or FLOAT16 like the input, the input's rank; the output the input's
     * sizes, the others 1 or the input's in each dimension; bound inside its buffer. */
    for (s = 0; s < 6; ++s) {
        if (s >= n_in && s != 5) continue;
        if (slot_desc[s] == NULL) continue;
        st = dmlpy_tensor_from_desc(slot_desc[s], &t[s]);
        if (st != DMLPY_OK) return st;
    }
    rank = t[0].rank;
    if (t[0].data_type != DML_TENSOR_DATA_TYPE_FLOAT32 && t[0].data_type != DML_TENSOR_DATA_TYPE_FLOAT16) {
        return DMLPY_E_INVALID_DESC;
    }
    for (s = 1; s < 6; ++s) {
        if ((s >= n_in && s != 5) || slot_desc[s] == NULL) continue;
        if (t[s].data_type != t[0].data_type || t[s].rank != rank) return DMLPY_E_INVALID_DESC;
        for (i = 0; i < rank; ++i) {
            if (t[s].sizes[i] != t[0].sizes[i] && (s == 5 || t[s].sizes[i] != 1)) return DMLPY_E_INVALID_DESC;
        }
    }
    for (s = 0; s < 6; ++s) {
        if ((s >= n_in && s != 5) || slot_desc[s] == NULL) continue;
        st = dmlpy_tensor_bind(&t[s], s == 5 ? &outputs[0] : &inputs[s]);
        if (st != DMLPY_OK) return st;
    }
    for (s = 0; s < n_in; ++s) {
        if (slot_desc[s] != NULL && dmlpy_tensors_overlap(&t[s], &t[5])) return DMLPY_E_INVALID_ARGUMENT;
    }

    /* The reduced dims. */
    if (desc->Type == DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION) {
        for (i = axis_count; i < rank; ++i) reduced[i] = 1;
    } else if (p.kind == NK_SOFTMAX || p.kind == NK_LOG_SOFTMAX || p.kind == NK_MVN) {
        if (axes == NULL && desc->Type != DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1 &&
            desc->Type != DML_OPERATOR_ACTIVATION_SOFTMAX1 && desc->Type != DML_OPERATOR_ACTIVATION_LOG_SOFTMAX1) {
            reduced[rank - 1] = 1; /* SOFTMAX, LOG_SOFTMAX: the last dimension */
        }
        for (i = 0; i < axis_count; ++i) {
            if (axes[i] >= rank) return DMLPY_E_INVALID_DESC;
            reduced[axes[i]] = 1;
        }
    } else {
        /* BATCH_NORMALIZATION: a row is the trailing dims over which every parameter is broadcast (H and W
         * for per-channel parameters), or the last dim; rows are cut into chunks (the work items). */
        uint32_t first = rank - 1;
        for (i = rank; i-- > 0;) {
            int varies = 0;
            for (s = 1; s < 5; ++s) varies |= t[s].sizes[i] != 1;
            if (varies) break;
            first = i;
        }
        for (i = first; i < rank; ++i) reduced[i] = 1;
    }

    st = dmlpy_output_stage(&t[5], &stage);
    if (st != DMLPY_OK) return st;

    /* Dims: drop size 1, merge neighbours of the same class where every present tensor is contiguous
     * across them; a parameter's size-1 dim reads with stride 0. */
    p.half = t[0].data_type == DML_TENSOR_DATA_TYPE_FLOAT16;
    for (s = 0; s < 6; ++s) {
        if ((s >= n_in && s != 5) || slot_desc[s] == NULL) continue;
        p.v[slot_view[s]].data = t[s].data;
    }
    for (i = 0; i < rank; ++i) {
        const uint64_t size = t[0].sizes[i];
        uint64_t* sz = reduced[i] ? p.rsz : p.ksz;
        uint32_t* count = reduced[i] ? &p.rr : &p.kr;
        uint64_t st_i[6];
        int merge = *count > 0;
        elements *= size;
        if (size == 1) continue;
        for (s = 0; s < 6; ++s) {
            if ((s >= n_in && s != 5) || slot_desc[s] == NULL) {
                st_i[s] = 0;
                continue;
            }
            st_i[s] = t[s].sizes[i] == 1 ? 0 : t[s].strides[i];
            if (merge) {
                const norm_view* v = &p.v[slot_view[s]];
                const uint64_t prev = reduced[i] ? v->rs[*count - 1] : v->ks[*count - 1];
                /* strides and sizes below 2^32 in a bound tensor: the product cannot overflow */
                if (st_i[s] > UINT32_MAX || prev != st_i[s] * size) merge = 0;
            }
        }
        if (merge) {
            sz[*count - 1] *= size;
        } else {
            sz[*count] = size;
            ++*count;
        }
        for (s = 0; s < 6; ++s) {
            norm_view* v;
            if ((s >= n_in && s != 5) || slot_desc[s] == NULL) continue;
            v = &p.v[slot_view[s]];
            if (reduced[i]) {
                v->rs[*count - 1] = st_i[s];
            } else {
                v->ks[*count - 1] = st_i[s];
            }
        }
    }
    p.rows = 1;
    for (i = 0; i < p.kr; ++i) p.rows *= p.ksz[i];
    if (p.rr == 0) { /* rows of one element */
        p.rr = 1;
        p.rsz[0] = 1;
        for (s = 0; s < V_COUNT; ++s) p.v[s].rs[0] = 1;
    }
    p.row_len = 1;
    for (i = 0; i < p.rr; ++i) p.row_len *= p.rsz[i];
    for (s = 0; s < V_COUNT; ++s) {
        norm_view* v = &p.v[s];
        int all_zero = 1;
        for (i = 0; i < p.rr; ++i) all_zero &= v->rs[i] == 0;
        v->row_const = all_zero || p.row_len == 1;
        v->row_packed = p.rr == 1 && v->rs[0] == 1;
    }
    p.chunks_per_row = (p.row_len + NORM_CHUNK - 1) / NORM_CHUNK;

    if (p.kind == NK_BATCH_NORM) {
        items = p.rows * p.chunks_per_row;
        work = elements * 4u;
    } else {
        items = p.rows;
        work = elements * (p.kind == NK_MVN ? 6u : 16u);
    }
    if (dmlpy_act_is_transcendental(p.act.kind)) work += elements * 16u;
    threads = dmlpy_choose_threads(work, items, threadCount);
#if defined(NORM_STREAM)
    /* Per-channel BATCH_NORMALIZATION whose input and output per thread exceed 1.5x the core's cache: the
     * output skips the cache (it would not be there for its reader). Measured in a C loop on one core of a
     * 2-core Sapphire Rapids VM (2 MB L2): 1x256x56x56 (6.4 MB) 20-25% less time, 1x112x56x56 (2.8 MB) 20%
     * less, 1x96x56x56 (2.4 MB) the same, 1x64x56x56 (1.6 MB, in L2) 1.7x more. Not in place (the output's
     * lines are read as the input) nor staged. */
    p.stream = p.kind == NK_BATCH_NORM && !p.half && p.v[V_X].row_packed && p.v[V_Y].row_packed &&
               p.v[V_MEAN].row_const && p.v[V_VAR].row_const && p.v[V_SCALE].row_const && p.v[V_BIAS].row_const &&
               stage.block == NULL && p.v[V_X].data != p.v[V_Y].data &&
               elements * 8u / threads >= dmlpy_core_cache_bytes() / 2u * 3u;
#endif
    dmlpy_parallel_for(items, dmlpy_choose_grain(items, threads), threads, norm_run, &p);
    dmlpy_output_unstage(&stage, 1);
    return DMLPY_OK;
}
