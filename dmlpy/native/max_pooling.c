/*
 * max_pooling.c - DML_OPERATOR_MAX_POOLING (58), MAX_POOLING1 (91, optional OutputIndicesTensor) and
 * MAX_POOLING2 (110, adds Dilations), FLOAT32 and FLOAT16 (the other data types run on the NumPy kernel).
 *
 * Semantics, as the NumPy kernel (max_pooling_reference in dmlpy/operators/pooling.py) and
 * docs/deviations.md define them. Spatial axis i is tensor axis i + 2; output position o_i has taps at
 * input positions p = o_i * Strides[i] + k * Dilations[i] - StartPadding[i], k = 0 .. WindowSize[i] - 1.
 *   - Only taps with 0 <= p < in_i in every spatial axis count: padding never wins.
 *   - A number beats a NaN (IEEE maxNum, as HLSL's max); a window of NaNs only gives its first tap.
 *   - Among equal values the first tap in row-major window order wins (the DML_MAX_POOLING2_OPERATOR_DESC
 *     page: "the index points to the first value encountered"); so does the sign of an equal zero.
 *   - A window with no tap on the input gives -inf and the index with every bit set.
 *   - The index is the row-major position of the chosen element in InputTensor's logical Sizes, whatever
 *     its Strides.
 * The output value is the chosen input element's own bits (FLOAT16 is compared in float32 but copied).
 *
 * The max is separable: per output row (n, c, od, oh), a vertical pass keeps for every input column the
 * first maximum over the row's valid (kd, kh) taps in row-major order, with the number of the input row
 * that holds it; the horizontal pass then takes, per output column, the maximum over the valid kw taps of
 * those column maxima, an equal value replacing the current one only when its input row comes earlier:
 * that is the first tap in (kd, kh, kw) order, equal zeros' signs included. The interior outputs (every W
 * tap on the input) run as kw-outer, ow-inner blends the compiler vectorises (the AVX2 and AVX-512
 * variants compile this file for those targets; W strides 1 and 2 get loops of their own); the edge
 * outputs take a scalar loop. Rows wider than MP_COLUMN_CAP columns, or windows with more valid rows than
 * that, take a direct per-output loop instead, so scratch stays small.
 *
 * Without indices (float32, 2-D, packed rows) no tap needs remembering: a plane at a time, each input row's
 * horizontal maxima are taken once (vector maxps chains along W, the stride-2 taps deinterleaved from pairs
 * of vectors), then each output row's maximum over its window's rows (mp_plane_values, below). That path
 * reads the input once and is 3-6x faster than the separable path on a ResNet stem's 3x3 stride 2.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dmlpy_internal.h"
#include "half.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#define MP_VN 16
typedef __m512 mp_vf;
#define MP_VLOAD(p) _mm512_loadu_ps(p)
#define MP_VSTORE(p, v) _mm512_storeu_ps((p), (v))
#define MP_VMAX(a, b) _mm512_max_ps((a), (b))
/* the even and the odd lanes of the 2 * MP_VN floats lo:hi */
#define MP_VEVEN(lo, hi) \
    _mm512_permutex2var_ps((lo), _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30), (hi))
#define MP_VODD(lo, hi) \
    _mm512_permutex2var_ps((lo), _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31), (hi))
#elif defined(__AVX2__)
#include <immintrin.h>
#define MP_VN 8
typedef __m256 mp_vf;
#define MP_VLOAD(p) _mm256_loadu_ps(p)
#define MP_VSTORE(p, v) _mm256_storeu_ps((p), (v))
#define MP_VMAX(a, b) _mm256_max_ps((a), (b))
#define MP_VEVEN(lo, hi) \
    _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps((lo), (hi), 0x88)), 0xD8))
#define MP_VODD(lo, hi) \
    _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps((lo), (hi), 0xDD)), 0xD8))
#elif defined(__SSE2__)
#include <emmintrin.h>
#define MP_VN 4
typedef __m128 mp_vf;
#define MP_VLOAD(p) _mm_loadu_ps(p)
#define MP_VSTORE(p, v) _mm_storeu_ps((p), (v))
#define MP_VMAX(a, b) _mm_max_ps((a), (b))
#define MP_VEVEN(lo, hi) _mm_shuffle_ps((lo), (hi), 0x88)
#define MP_VODD(lo, hi) _mm_shuffle_ps((lo), (hi), 0xDD)
#endif

#define MP_COLUMN_CAP ((uint64_t)1 << 20)
/* the values-only path's per-worker scratch (one row of horizontal maxima per input row), at most */
#define MP_PLANE_CAP ((uint64_t)1 << 18)
/* per-worker scratch lengths rounded up to 16 elements: every worker's block starts on a 64-byte line */
#define MP_PAD16(n) (((uint64_t)(n) + 15) & ~(uint64_t)15)

typedef struct mp_plan {
    int half;          /* FLOAT16 input and output */
    int index64;       /* UINT64 indices */
    const char* x;
    char* y;
    char* idx;         /* NULL without OutputIndicesTensor */
    uint64_t N, C;
    /* three spatial axes: fewer are padded in front with size 1, window 1, stride 1 */
    uint64_t in[3], out[3], win[3], str[3], dil[3], pad[3];
    uint64_t xs_n, xs_c, xs[3];
    uint64_t ys_n, ys_c, ys[3];
    uint64_t is_n, is_c, is[3];
    uint64_t lin_n, lin_c, lin[3]; /* row-major multipliers of the input's logical Sizes */
    uint32_t* taps[3];             /* per axis and output position: first and end valid k */
    int direct;                    /* 1: per-output loop (wide rows) */
    uint64_t rows_cap;             /* valid input rows per output row, at most */
    uint64_t ow_a, ow_b;           /* outputs [ow_a, ow_b) have every W tap on the input */
    /* separable path scratch, per worker: */
    float* vmax;                   /* in[2]: per input column, the maximum over the valid rows */
    uint32_t* vrow;                /* in[2]: the number of the valid row holding it */
    float* hbest;                  /* out[2]: per output column, the running maximum */
    uint32_t *hrow, *hcol;         /* out[2]: its valid-row number and input column */
    uint64_t *rowsrc, *rowlin;     /* rows_cap: per valid input row, its element offset and logical index */
    float* hplane;                 /* values-only path, per worker: in[1] rows of MP_PAD16(out[2]) */
} mp_plan;

static inline float mp_load(const mp_plan* p, uint64_t offset) {
    return p->half ? dmlpy_h2f(((const uint16_t*)p->x)[offset]) : ((const float*)p->x)[offset];
}

/* maxNum with the first tap winning ties: does v (from a later tap) replace the current best b? */
static inline int mp_better(float v, float b) { return v > b || (b != b && v == v); }

/* Taps k in [0, w) with 0 <= o*s + k*d - pad < in: the range [k0, k1) (empty: k0 == k1). */
static void mp_tap_range(uint64_t o, uint64_t s, uint64_t d, uint64_t w, uint64_t pad, uint64_t in, uint32_t* k0,
                         uint32_t* k1) {
    uint64_t start, lo, hi;
    *k0 = *k1 = 0;
    if (!dmlpy_mul_u64(o, s, &start)) return;
    /* p = start + k*d - pad >= 0  <=>  k*d >= pad - start */
    lo = start >= pad ? 0 : (pad - start + d - 1) / d;
    /* p < in  <=>  start + k*d < in + pad */
    if (start >= in + pad) return;
    hi = (in + pad - start + d - 1) / d;
    if (hi > w) hi = w;
    if (lo >= hi) return;
    *k0 = (uint32_t)lo;
    *k1 = (uint32_t)hi;
}

static void mp_store(const mp_plan* p, uint64_t yoff, uint64_t ioff, int empty, uint64_t src_off, uint64_t index) {
    if (p->half) {
        ((uint16_t*)p->y)[yoff] = empty ? (uint16_t)0xFC00u : ((const uint16_t*)p->x)[src_off];
    } else {
        uint32_t bits = 0xFF800000u;
        if (!empty) memcpy(&bits, p->x + src_off * 4, 4);
        memcpy(p->y + yoff * 4, &bits, 4);
    }
    if (p->idx != NULL) {
        if (p->index64) {
            ((uint64_t*)p->idx)[ioff] = empty ? UINT64_MAX : index;
        } else {
            ((uint32_t*)p->idx)[ioff] = empty ? UINT32_MAX : (uint32_t)index;
        }
    }
}

/* One output row (n, c, od, oh). */
static void mp_row(const mp_plan* p, uint64_t n, uint64_t c, uint64_t od, uint64_t oh, unsigned worker) {
    const uint32_t kd0 = p->taps[0][2 * od], kd1 = p->taps[0][2 * od + 1];
    const uint32_t kh0 = p->taps[1][2 * oh], kh1 = p->taps[1][2 * oh + 1];
    const uint64_t xbase = n * p->xs_n + c * p->xs_c, ybase = n * p->ys_n + c * p->ys_c + od * p->ys[0] + oh * p->ys[1];
    const uint64_t ibase = n * p->is_n + c * p->is_c + od * p->is[0] + oh * p->is[1];
    const uint64_t lbase = n * p->lin_n + c * p->lin_c;
    const uint64_t W = p->in[2], OW = p->out[2];
    const int rows_empty = kd0 == kd1 || kh0 == kh1;
    uint64_t ow;

    if (p->direct || rows_empty) {
        for (ow = 0; ow < OW; ++ow) {
            const uint32_t kw0 = p->taps[2][2 * ow], kw1 = p->taps[2][2 * ow + 1];
            uint64_t best_off = 0, best_index = 0;
            float best = 0.0f;
            int found = 0;
            uint32_t kd, kh, kw;
            if (!rows_empty) {
                for (kd = kd0; kd < kd1; ++kd) {
                    const uint64_t pd = od * p->str[0] + kd * p->dil[0] - p->pad[0];
                    for (kh = kh0; kh < kh1; ++kh) {
                        const uint64_t ph = oh * p->str[1] + kh * p->dil[1] - p->pad[1];
                        for (kw = kw0; kw < kw1; ++kw) {
                            const uint64_t pw = ow * p->str[2] + kw * p->dil[2] - p->pad[2];
                            const uint64_t off = xbase + pd * p->xs[0] + ph * p->xs[1] + pw * p->xs[2];
                            const float v = mp_load(p, off);
                            if (!found || mp_better(v, best)) {
                                best = v;
                                best_off = off;
                                best_index = lbase + pd * p->lin[0] + ph * p->lin[1] + pw * p->lin[2];
                                found = 1;
                            }
                        }
                    }
                }
            }
            mp_store(p, ybase + ow * p->ys[2], ibase + ow * p->is[2], !found, best_off, best_index);
        }
        return;
    }

    {
        const uint64_t wk = worker, s_w = p->str[2], d_w = p->dil[2], a = p->ow_a, b = p->ow_b;
        /* each worker's scratch starts on its own cache lines (no false sharing between threads) */
        float* vmax = p->vmax + wk * MP_PAD16(W);
        uint32_t* vrow = p->vrow + wk * MP_PAD16(W);
        float* hbest = p->hbest + wk * MP_PAD16(OW);
        uint32_t* hrow = p->hrow + wk * MP_PAD16(OW);
        uint32_t* hcol = p->hcol + wk * MP_PAD16(OW);
        uint64_t* rowsrc = p->rowsrc + wk * MP_PAD16(p->rows_cap);
        uint64_t* rowlin = p->rowlin + wk * MP_PAD16(p->rows_cap);
        uint32_t kd, kh, row = 0;
        uint64_t w, kw;
        for (kd = kd0; kd < kd1; ++kd) {
            const uint64_t pd = od * p->str[0] + kd * p->dil[0] - p->pad[0];
            for (kh = kh0; kh < kh1; ++kh, ++row) {
                const uint64_t ph = oh * p->str[1] + kh * p->dil[1] - p->pad[1];
                const uint64_t roff = xbase + pd * p->xs[0] + ph * p->xs[1], xs = p->xs[2];
                rowsrc[row] = roff;
                rowlin[row] = lbase + pd * p->lin[0] + ph * p->lin[1];
                if (row == 0) {
                    if (p->half) {
                        const uint16_t* src = (const uint16_t*)p->x + roff;
                        for (w = 0; w < W; ++w) vmax[w] = dmlpy_h2f(src[w * xs]);
                    } else {
                        const float* src = (const float*)p->x + roff;
                        for (w = 0; w < W; ++w) vmax[w] = src[w * xs];
                    }
                    memset(vrow, 0, sizeof(uint32_t) * W);
                } else if (!p->half && xs == 1) {
                    const float* src = (const float*)p->x + roff;
                    for (w = 0; w < W; ++w) {
                        const float v = src[w], cur = vmax[w];
                        const int take = mp_better(v, cur);
                        vmax[w] = take ? v : cur;
                        vrow[w] = take ? row : vrow[w];
                    }
                } else {
                    for (w = 0; w < W; ++w) {
                        const float v = mp_load(p, roff + w * xs);
                        if (mp_better(v, vmax[w])) {
                            vmax[w] = v;
                            vrow[w] = row;
                        }
                    }
                }
            }
        }
        if (a < b) {
            const uint64_t base = a * s_w - p->pad[2], n_in = b - a; /* base >= 0: output a's taps are all on the input */
            for (w = 0; w < n_in; ++w) {
                hbest[w] = vmax[base + w * s_w];
                hrow[w] = vrow[base + w * s_w];
                hcol[w] = (uint32_t)(base + w * s_w);
            }
            for (kw = 1; kw < p->win[2]; ++kw) {
                const uint64_t first = base + kw * d_w;
#define MP_MERGE(POS)                                                                 \
    for (w = 0; w < n_in; ++w) {                                                      \
        const uint64_t pw = (POS);                                                    \
        const float v = vmax[pw], cur = hbest[w];                                     \
        const uint32_t r = vrow[pw];                                                  \
        const int take = mp_better(v, cur) | ((v == cur) & (r < hrow[w]));            \
        hbest[w] = take ? v : cur;                                                    \
        hrow[w] = take ? r : hrow[w];                                                 \
        hcol[w] = take ? (uint32_t)pw : hcol[w];                                      \
    }
                if (s_w == 1) {
                    MP_MERGE(first + w)
                } else if (s_w == 2) {
                    MP_MERGE(first + 2 * w)
                } else {
                    MP_MERGE(first + w * s_w)
                }
#undef MP_MERGE
            }
            if (!p->half && p->idx == NULL && p->ys[2] == 1) {
                /* values only: the maximum is the chosen element itself, bit for bit */
                memcpy(p->y + (ybase + a) * 4, hbest, n_in * 4);
            } else {
                for (w = 0; w < n_in; ++w) {
                    mp_store(p, ybase + (a + w) * p->ys[2], ibase + (a + w) * p->is[2], 0, rowsrc[hrow[w]] + hcol[w] * p->xs[2],
                             rowlin[hrow[w]] + hcol[w] * p->lin[2]);
                }
            }
        }
        for (ow = 0; ow < OW; ++ow) {
            const uint32_t kw0 = p->taps[2][2 * ow], kw1 = p->taps[2][2 * ow + 1];
            uint64_t bw = 0;
            uint32_t brow = 0, k;
            float best = 0.0f;
            int found = 0;
            if (ow == a && a < b) {
                ow = b - 1; /* the interior is done */
                continue;
            }
            for (k = kw0; k < kw1; ++k) {
                const uint64_t pw = ow * s_w + k * d_w - p->pad[2];
                const float v = vmax[pw];
                if (!found || mp_better(v, best) || (v == best && vrow[pw] < brow)) {
                    best = v;
                    bw = pw;
                    brow = vrow[pw];
                    found = 1;
                }
            }
            mp_store(p, ybase + ow * p->ys[2], ibase + ow * p->is[2], !found, found ? rowsrc[brow] + bw * p->xs[2] : 0,
                     found ? rowlin[brow] + bw * p->lin[2] : 0);
        }
    }
}

/* ---- values only: float32, no indices, 2-D (or 1-D), rows packed along W ------------------------------
 *
 * The first maximum in row-major window order (mp_better, ties to the earlier tap) is a reduction by an
 * associative operation (keep the left operand unless the right one is strictly better: a strict weak
 * order with NaN lowest), so it can be taken over each input row's W taps first (one row of horizontal
 * maxima per input row of the plane, each computed once) and then over the window's rows in order.
 * Vectors take it as maxps(b, a) = (b > a ? b : a) chains, which is that operation exactly unless the
 * chain's first operand is NaN (then the chain stays NaN): a NaN result is recomputed with mp_better, so
 * every value is the chosen element's bits, as mp_row's. */

/* The exact horizontal maximum of output column ow over input row src (-inf for no valid tap). */
static float mp_hexact(const mp_plan* p, const float* src, uint64_t ow) {
    const uint32_t k0 = p->taps[2][2 * ow], k1 = p->taps[2][2 * ow + 1];
    float best = -INFINITY;
    uint32_t k;
    for (k = k0; k < k1; ++k) {
        const float v = src[ow * p->str[2] + k * p->dil[2] - p->pad[2]];
        if (k == k0 || mp_better(v, best)) best = v;
    }
    return best;
}

/* The same as a maxps chain (branchless; exact unless the result is NaN, see above). */
static inline float mp_hchain(const mp_plan* p, const float* src, uint64_t ow) {
    const uint32_t k0 = p->taps[2][2 * ow], k1 = p->taps[2][2 * ow + 1];
    const float* q = src + ow * p->str[2] - p->pad[2];
    float acc;
    uint32_t k;
    if (k0 == k1) return -INFINITY;
    acc = q[k0 * p->dil[2]];
    for (k = k0 + 1; k < k1; ++k) {
        const float v = q[k * p->dil[2]];
        acc = v > acc ? v : acc;
    }
    return acc;
}

#if defined(__AVX512F__)
/* src[e .. e + 16) with -inf in the lanes outside [0, W): a masked load, which reads none of those lanes; at the
 * row's edges *nan notes a NaN among the lanes read (there a window's first tap may be padding). */
static inline __m512 mp_load_row(const float* src, int64_t e, int64_t W, __mmask16* nan) {
    const float* at = (const float*)((uintptr_t)src + (uintptr_t)(e * (int64_t)sizeof(float))); /* e may be < 0 */
    int64_t lo, hi;
    __m512 v;
    if (e >= 0 && e + 16 <= W) return _mm512_loadu_ps(at);
    lo = e < 0 ? -e : 0;
    hi = W - e < 16 ? W - e : 16;
    v = _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), hi > lo ? (__mmask16)(((1u << hi) - 1u) & ~((1u << lo) - 1u)) : 0, at);
    *nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    return v;
}

/* Every output column of a row of stride 1 or 2 in vectors, the edges too: the taps off the row read -inf, which a
 * maxps chain passes over exactly as the first-maximum rule skips them (any real value, -inf included, keeps or takes
 * the place it would have; a window of padding alone is -inf). maxps(tap, acc) keeps acc when either is NaN, so a NaN
 * tap after the first is passed over as maxNum wants, and a window whose first tap is NaN ends NaN; but a NaN after
 * padding taps is passed over too, so NaNs read at the edges count as well: a row with either is computed again tap
 * by tap. Stride 2: each pair of vectors serves two taps (its even and odd lanes). */
static void mp_hrow_masked(const mp_plan* p, const float* src, float* h) {
    const int64_t OW = (int64_t)p->out[2], K = (int64_t)p->win[2], W = (int64_t)p->in[2], pad = (int64_t)p->pad[2];
    __mmask16 nan = 0;
    int64_t ow, k;
    if (p->str[2] == 2) {
        for (ow = 0; ow < OW; ow += 16) {
            const int64_t e = 2 * ow - pad; /* tap k of column ow + j is element e + 2 j + k */
            __m512 lo = mp_load_row(src, e, W, &nan), hi = mp_load_row(src, e + 16, W, &nan);
            __m512 acc = MP_VEVEN(lo, hi);
            if (K > 1) acc = MP_VMAX(MP_VODD(lo, hi), acc);
            for (k = 2; k < K; k += 2) {
                lo = mp_load_row(src, e + k, W, &nan);
                hi = mp_load_row(src, e + k + 16, W, &nan);
                acc = MP_VMAX(MP_VEVEN(lo, hi), acc);
                if (k + 1 < K) acc = MP_VMAX(MP_VODD(lo, hi), acc);
            }
            nan |= _mm512_cmp_ps_mask(acc, acc, _CMP_UNORD_Q);
            MP_VSTORE(h + ow, acc);
        }
    } else {
        for (ow = 0; ow < OW; ow += 16) {
            __m512 acc = mp_load_row(src, ow - pad, W, &nan);
            for (k = 1; k < K; ++k) acc = MP_VMAX(mp_load_row(src, ow - pad + k, W, &nan), acc);
            nan |= _mm512_cmp_ps_mask(acc, acc, _CMP_UNORD_Q);
            MP_VSTORE(h + ow, acc);
        }
    }
    if (nan) {
        for (ow = 0; ow < OW; ++ow) h[ow] = mp_hexact(p, src, (uint64_t)ow);
    }
}
#endif

/* h[ow] for every output column: the horizontal maxima of input row src. */
static void mp_hrow(const mp_plan* p, const float* src, float* h) {
    const uint64_t OW = p->out[2], W = p->in[2], s = p->str[2], K = p->win[2], pad = p->pad[2];
    uint64_t ow = 0, k;
    int nan = 0;
#if defined(__AVX512F__)
    if (p->dil[2] == 1 && (s == 1 || s == 2)) {
        mp_hrow_masked(p, src, h);
        return;
    }
#endif
    for (; ow < p->ow_a; ++ow) h[ow] = mp_hchain(p, src, ow);
#if defined(MP_VN)
    if (p->dil[2] == 1 && s == 2) {
        /* taps 2 ow - pad + k: the even (k even) or odd lanes of the 2 MP_VN floats from 2 ow - pad + (k & ~1) */
        for (; ow + MP_VN <= p->ow_b && 2 * ow - pad + ((K - 1) & ~(uint64_t)1) + 2 * MP_VN <= W; ow += MP_VN) {
            const float* q = src + 2 * ow - pad;
            mp_vf acc = MP_VEVEN(MP_VLOAD(q), MP_VLOAD(q + MP_VN));
            for (k = 1; k < K; ++k) {
                const float* r = q + (k & ~(uint64_t)1);
                const mp_vf lo = MP_VLOAD(r), hi = MP_VLOAD(r + MP_VN);
                acc = MP_VMAX((k & 1) ? MP_VODD(lo, hi) : MP_VEVEN(lo, hi), acc);
            }
            MP_VSTORE(h + ow, acc);
        }
    } else if (p->dil[2] == 1 && s == 1) {
        for (; ow + MP_VN <= p->ow_b; ow += MP_VN) {
            const float* q = src + ow - pad;
            mp_vf acc = MP_VLOAD(q);
            for (k = 1; k < K; ++k) acc = MP_VMAX(MP_VLOAD(q + k), acc);
            MP_VSTORE(h + ow, acc);
        }
    }
#else
    (void)W, (void)s, (void)K, (void)pad, (void)k;
#endif
    for (; ow < OW; ++ow) h[ow] = mp_hchain(p, src, ow);
    for (ow = 0; ow < OW; ++ow) nan |= h[ow] != h[ow];
    if (nan) { /* a chain that began with NaN: recompute exactly */
        for (ow = 0; ow < OW; ++ow) {
            if (h[ow] != h[ow]) h[ow] = mp_hexact(p, src, ow);
        }
    }
}

/* One plane (n, c): every input row's horizontal maxima, then each output row's maximum over its rows. */
static void mp_plane_values(const mp_plan* p, uint64_t n, uint64_t c, unsigned worker) {
    const uint64_t H = p->in[1], OH = p->out[1], OW = p->out[2], hs = MP_PAD16(OW);
    const float* x = (const float*)p->x + n * p->xs_n + c * p->xs_c;
    float* hp = p->hplane + (uint64_t)worker * H * hs;
    uint64_t ph, oh, ow;
    for (ph = 0; ph < H; ++ph) mp_hrow(p, x + ph * p->xs[1], hp + ph * hs);
    for (oh = 0; oh < OH; ++oh) {
        const uint32_t k0 = p->taps[1][2 * oh], k1 = p->taps[1][2 * oh + 1];
        float* y = (float*)p->y + n * p->ys_n + c * p->ys_c + oh * p->ys[1];
        int nan = 0;
        uint32_t k;
        if (k0 == k1) {
            for (ow = 0; ow < OW; ++ow) y[ow] = -INFINITY;
            continue;
        }
#if defined(__AVX512F__)
        /* in registers, 16 columns at a time: y is stored once and not read back (h's rows are MP_PAD16 long) */
        for (ow = 0; ow < OW; ow += 16) {
            const __mmask16 mk = OW - ow >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (OW - ow)) - 1u);
            __m512 acc = _mm512_load_ps(hp + (oh * p->str[1] + k0 * p->dil[1] - p->pad[1]) * hs + ow);
            for (k = k0 + 1; k < k1; ++k) acc = MP_VMAX(_mm512_load_ps(hp + (oh * p->str[1] + k * p->dil[1] - p->pad[1]) * hs + ow), acc);
            nan |= _mm512_mask_cmp_ps_mask(mk, acc, acc, _CMP_UNORD_Q) != 0;
            _mm512_mask_storeu_ps(y + ow, mk, acc);
        }
#else
        {
            const float* first = hp + (oh * p->str[1] + k0 * p->dil[1] - p->pad[1]) * hs;
            for (ow = 0; ow < OW; ++ow) y[ow] = first[ow];
        }
        for (k = k0 + 1; k < k1; ++k) {
            const float* r = hp + (oh * p->str[1] + k * p->dil[1] - p->pad[1]) * hs;
            for (ow = 0; ow < OW; ++ow) y[ow] = r[ow] > y[ow] ? r[ow] : y[ow]; /* maxps(r, y) */
        }
        for (ow = 0; ow < OW; ++ow) nan |= y[ow] != y[ow];
#endif
        if (nan) {
            for (ow = 0; ow < OW; ++ow) {
                if (y[ow] != y[ow]) {
                    float best = 0.0f;
                    for (k = k0; k < k1; ++k) {
                        const float v = hp[(oh * p->str[1] + k * p->dil[1] - p->pad[1]) * hs + ow];
                        if (k == k0 || mp_better(v, best)) best = v;
                    }
                    y[ow] = best;
                }
            }
        }
    }
}

static void mp_run_values(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    const mp_plan* p = (const mp_plan*)vp;
    uint64_t item;
    for (item = begin; item < end; ++item) mp_plane_values(p, item / p->C, item % p->C, worker);
}

static void mp_run(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    const mp_plan* p = (const mp_plan*)vp;
    uint64_t item;
    for (item = begin; item < end; ++item) {
        uint64_t t = item;
        const uint64_t oh = t % p->out[1];
        t /= p->out[1];
        {
            const uint64_t od = t % p->out[0];
            t /= p->out[0];
            mp_row(p, t / p->C, t % p->C, od, oh, worker);
        }
    }
}

typedef struct mp_fields {
    const DML_TENSOR_DESC *input, *output, *indices;
    UINT count;
    const UINT *strides, *window, *start, *end, *dilations;
} mp_fields;

/* The three structs share their leading fields (MAX_POOLING1 and 2 add OutputIndicesTensor after OutputTensor). */
#define MP_READ_COMMON(d)                 \
    do {                                  \
        f->input = (d)->InputTensor;      \
        f->output = (d)->OutputTensor;    \
        f->count = (d)->DimensionCount;   \
        f->strides = (d)->Strides;        \
        f->window = (d)->WindowSize;      \
        f->start = (d)->StartPadding;     \
        f->end = (d)->EndPadding;         \
    } while (0)

static int32_t mp_read_fields(const DML_OPERATOR_DESC* desc, mp_fields* f) {
    memset(f, 0, sizeof *f);
    if (desc->Desc == NULL) return DMLPY_E_NULL_ARGUMENT;
    switch (desc->Type) {
    case DML_OPERATOR_MAX_POOLING:
        MP_READ_COMMON((const DML_MAX_POOLING_OPERATOR_DESC*)desc->Desc);
        break;
    case DML_OPERATOR_MAX_POOLING1: {
        const DML_MAX_POOLING1_OPERATOR_DESC* d = (const DML_MAX_POOLING1_OPERATOR_DESC*)desc->Desc;
        MP_READ_COMMON(d);
        f->indices = d->OutputIndicesTensor;
        break;
    }
    case DML_OPERATOR_MAX_POOLING2: {
        const DML_MAX_POOLING2_OPERATOR_DESC* d = (const DML_MAX_POOLING2_OPERATOR_DESC*)desc->Desc;
        MP_READ_COMMON(d);
        f->indices = d->OutputIndicesTensor;
        f->dilations = d->Dilations;
        if (f->dilations == NULL) return DMLPY_E_NULL_ARGUMENT;
        break;
    }
    default:
        return DMLPY_E_UNSUPPORTED_OPERATOR;
    }
    if (f->strides == NULL || f->window == NULL || f->start == NULL || f->end == NULL) return DMLPY_E_NULL_ARGUMENT;
    return DMLPY_OK;
}
#undef MP_READ_COMMON

int32_t dmlpy_max_pooling(const DML_OPERATOR_DESC* desc, UINT inputCount, const DMLPY_BOUND_BUFFER* inputs,
                          UINT outputCount, const DMLPY_BOUND_BUFFER* outputs, UINT threadCount) {
    mp_fields f;
    mp_plan p;
    dmlpy_tensor xt, yt, it;
    dmlpy_staged_output ystage, istage;
    uint32_t nsp, i, lead;
    uint64_t items, work = 0, windows = 1, linear = 1;
    unsigned threads, max_threads;
    int32_t st;

    if (desc == NULL) return DMLPY_E_NULL_ARGUMENT;
    st = mp_read_fields(desc, &f);
    if (st != DMLPY_OK) return st;
    /* one output slot for MAX_POOLING; OutputTensor and OutputIndicesTensor (maybe unbound) for 1 and 2 */
    if (inputCount != 1 || outputCount != (desc->Type == DML_OPERATOR_MAX_POOLING ? 1u : 2u)) return DMLPY_E_BINDING_COUNT;
    if (inputs == NULL || outputs == NULL) return DMLPY_E_NULL_ARGUMENT;

    st = dmlpy_tensor_from_desc(f.input, &xt);
    if (st != DMLPY_OK) return st;
    st = dmlpy_tensor_from_desc(f.output, &yt);
    if (st != DMLPY_OK) return st;
    if (xt.data_type != yt.data_type) return DMLPY_E_INVALID_DESC;
    if (xt.data_type != DML_TENSOR_DATA_TYPE_FLOAT32 && xt.data_type != DML_TENSOR_DATA_TYPE_FLOAT16) return DMLPY_E_INVALID_DESC;
    if (xt.rank != yt.rank || xt.rank < 3 || xt.rank > 5 || f.count != xt.rank - 2) return DMLPY_E_INVALID_DESC;
    if (xt.sizes[0] != yt.sizes[0] || xt.sizes[1] != yt.sizes[1]) return DMLPY_E_INVALID_DESC;
    nsp = f.count;
    if (f.indices != NULL) {
        st = dmlpy_tensor_from_desc(f.indices, &it);
        if (st != DMLPY_OK) return st;
        if (it.data_type != DML_TENSOR_DATA_TYPE_UINT32 && it.data_type != DML_TENSOR_DATA_TYPE_UINT64) return DMLPY_E_INVALID_DESC;
        if (it.rank != yt.rank) return DMLPY_E_INVALID_DESC;
        for (i = 0; i < it.rank; ++i) {
            if (it.sizes[i] != yt.sizes[i]) return DMLPY_E_INVALID_DESC;
        }
    }

    memset(&p, 0, sizeof p);
    p.half = xt.data_type == DML_TENSOR_DATA_TYPE_FLOAT16;
    p.N = xt.sizes[0];
    p.C = xt.sizes[1];
    p.xs_n = xt.strides[0];
    p.xs_c = xt.strides[1];
    p.ys_n = yt.strides[0];
    p.ys_c = yt.strides[1];
    lead = 3 - nsp;
    for (i = 0; i < 3; ++i) {
        p.in[i] = p.out[i] = p.win[i] = p.str[i] = p.dil[i] = 1;
        p.pad[i] = p.xs[i] = p.ys[i] = p.is[i] = 0;
    }
    for (i = 0; i < nsp; ++i) {
        const uint32_t a = lead + i;
        p.in[a] = xt.sizes[2 + i];
        p.out[a] = yt.sizes[2 + i];
        p.win[a] = f.window[i];
        p.str[a] = f.strides[i];
        p.dil[a] = f.dilations != NULL ? f.dilations[i] : 1;
        p.pad[a] = f.start[i];
        p.xs[a] = xt.strides[2 + i];
        p.ys[a] = yt.strides[2 + i];
        if (p.win[a] == 0 || p.str[a] == 0 || p.dil[a] == 0) return DMLPY_E_INVALID_DESC;
        if (!dmlpy_mul_u64(windows, p.win[a], &windows)) return DMLPY_E_INVALID_DESC;
    }
    /* row-major multipliers of the logical input (its element count is below 2^32) */
    for (i = 3; i-- > 0;) {
        p.lin[i] = linear;
        linear *= p.in[i];
    }
    p.lin_c = linear;
    p.lin_n = linear * p.C;

    st = dmlpy_tensor_bind(&xt, &inputs[0]);
    if (st != DMLPY_OK) return st;
    st = dmlpy_tensor_bind(&yt, &outputs[0]);
    if (st != DMLPY_OK) return st;
    if (dmlpy_tensors_overlap(&xt, &yt)) return DMLPY_E_INVALID_ARGUMENT;
    if (f.indices != NULL) {
        st = dmlpy_tensor_bind(&it, &outputs[1]);
        if (st != DMLPY_OK) return st;
        if (dmlpy_tensors_overlap(&xt, &it) || dmlpy_tensors_overlap(&yt, &it)) return DMLPY_E_INVALID_ARGUMENT;
    }

    for (i = 0; i < 3; ++i) {
        uint64_t o;
        p.taps[i] = (uint32_t*)malloc(sizeof(uint32_t) * 2 * p.out[i]);
        if (p.taps[i] == NULL) {
            while (i-- > 0) free(p.taps[i]);
            return DMLPY_E_OUT_OF_MEMORY;
        }
        for (o = 0; o < p.out[i]; ++o) {
            mp_tap_range(o, p.str[i], p.dil[i], p.win[i], p.pad[i], p.in[i], &p.taps[i][2 * o], &p.taps[i][2 * o + 1]);
        }
    }

    st = dmlpy_output_stage(&yt, &ystage);
    if (st == DMLPY_OK && f.indices != NULL) {
        st = dmlpy_output_stage(&it, &istage);
        if (st != DMLPY_OK) dmlpy_output_unstage(&ystage, 0);
    }
    if (st != DMLPY_OK) {
        for (i = 0; i < 3; ++i) free(p.taps[i]);
        return st;
    }
    p.x = xt.data;
    p.y = yt.data;
    if (f.indices != NULL) {
        p.idx = it.data;
        p.index64 = it.data_type == DML_TENSOR_DATA_TYPE_UINT64;
        p.is_n = it.strides[0];
        p.is_c = it.strides[1];
        for (i = 0; i < nsp; ++i) p.is[lead + i] = it.strides[2 + i];
    }

    items = p.N * p.C * p.out[0] * p.out[1]; /* output rows: a factor of the output's element count */
    {
        uint64_t outputs_count = items * p.out[2];
        if (!dmlpy_mul_u64(outputs_count, windows, &work)) work = UINT64_MAX;
    }
    max_threads = threadCount ? threadCount : dmlpy_online_cpus();
    threads = dmlpy_choose_threads(work ? work : 1, items, max_threads);
    p.direct = p.in[2] > MP_COLUMN_CAP || p.out[2] > MP_COLUMN_CAP;
    {
        /* the interior: outputs whose W taps all fall on the input (a contiguous run of them) */
        uint64_t o;
        p.ow_a = p.ow_b = 0;
        for (o = 0; o < p.out[2] && !(p.taps[2][2 * o] == 0 && p.taps[2][2 * o + 1] == p.win[2]); ++o) {
        }
        p.ow_a = o;
        for (; o < p.out[2] && p.taps[2][2 * o] == 0 && p.taps[2][2 * o + 1] == p.win[2]; ++o) {
        }
        p.ow_b = o;
    }
    p.rows_cap = (p.win[0] < p.in[0] ? p.win[0] : p.in[0]) * (p.win[1] < p.in[1] ? p.win[1] : p.in[1]);
    if (p.rows_cap > MP_COLUMN_CAP) p.direct = 1;
    /* Values only (float32, no indices, one depth, packed rows, planes enough for the threads): by planes. */
    if (!p.half && p.idx == NULL && p.in[0] == 1 && p.out[0] == 1 && p.xs[2] == 1 && p.ys[2] == 1 &&
        p.in[1] * MP_PAD16(p.out[2]) <= MP_PLANE_CAP && (threads == 1 || p.N * p.C >= 4u * threads)) {
        p.hplane = (float*)aligned_alloc(64, sizeof(float) * p.in[1] * MP_PAD16(p.out[2]) * threads);
    }
    if (p.hplane != NULL) {
        dmlpy_parallel_for(p.N * p.C, dmlpy_choose_grain(p.N * p.C, threads), threads, mp_run_values, &p);
    } else if (!p.direct) {
        const uint64_t W = p.in[2], OW = p.out[2], R = p.rows_cap;
        p.vmax = (float*)aligned_alloc(64, sizeof(float) * MP_PAD16(W) * threads);
        p.vrow = (uint32_t*)aligned_alloc(64, sizeof(uint32_t) * MP_PAD16(W) * threads);
        p.hbest = (float*)aligned_alloc(64, sizeof(float) * MP_PAD16(OW) * threads);
        p.hrow = (uint32_t*)aligned_alloc(64, sizeof(uint32_t) * MP_PAD16(OW) * threads);
        p.hcol = (uint32_t*)aligned_alloc(64, sizeof(uint32_t) * MP_PAD16(OW) * threads);
        p.rowsrc = (uint64_t*)aligned_alloc(64, sizeof(uint64_t) * MP_PAD16(R) * threads);
        p.rowlin = (uint64_t*)aligned_alloc(64, sizeof(uint64_t) * MP_PAD16(R) * threads);
        if (!p.vmax || !p.vrow || !p.hbest || !p.hrow || !p.hcol || !p.rowsrc || !p.rowlin) p.direct = 1;
    }
    if (p.hplane == NULL) dmlpy_parallel_for(items, dmlpy_choose_grain(items, threads), threads, mp_run, &p);

    free(p.hplane);
    free(p.vmax);
    free(p.vrow);
    free(p.hbest);
    free(p.hrow);
    free(p.hcol);
    free(p.rowsrc);
    free(p.rowlin);
    for (i = 0; i < 3; ++i) free(p.taps[i]);
    if (f.indices != NULL) dmlpy_output_unstage(&istage, 1);
    dmlpy_output_unstage(&ystage, 1);
    return DMLPY_OK;
}
