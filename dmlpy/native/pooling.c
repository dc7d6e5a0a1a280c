/*
 * pooling.c - DML_OPERATOR_AVERAGE_POOLING (56) and DML_OPERATOR_AVERAGE_POOLING1 (166).
 *
 * Semantics (DESIGN.md section 5, reference section 3.1/3.2). Spatial axis i is tensor axis i + 2. For
 * output position o_i the window taps sit at input positions p = o_i*Strides[i] + k*Dilations[i] -
 * StartPadding[i], k = 0 .. WindowSize[i]-1 (Dilations are 1 for AVERAGE_POOLING).
 *   sum     = sum of x over the taps with 0 <= p < in_i in every spatial dim (padding adds 0);
 *   divisor = product over dims of the per-dim tap count inside [-StartPadding, in + EndPadding) when
 *             IncludePadding is nonzero, inside [0, in) otherwise;
 *   output  = sum * (1 / divisor), computed in float32 and rounded once to the output type.
 * A divisor of 0 gives NaN (0 * inf). The output spatial sizes are whatever the OutputTensor says.
 *
 * Summation order, identical on every path below so that layout and thread count never change a bit:
 * for each input column w, the taps (kd, kh) are added in increasing order; the column sums are then
 * added in increasing kw order.
 *
 * Three paths:
 *   row path      - one output row (n, c, od, oh) at a time: accumulate the valid input rows into a
 *                   float row buffer (contiguous vector adds when the input W stride is 1), then sum
 *                   the window taps along W and scale. Used for every layout with moderate W.
 *   channel path  - input channel stride 1 and W stride not 1 (NHWC-like): one output pixel at a time,
 *                   vectors along C.
 *   direct path   - anything else (huge W / OW / C): per output element, no scratch memory.
 */
#include <stdlib.h>
#include <string.h>

#include "dmlpy_internal.h"
#include "half.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && !defined(DMLPY_NO_AVX512) && \
    !defined(DMLPY_FORCE_SOFT_HALF)
#include <immintrin.h>
#define POOL_AVX512 1
#endif

/* The row and channel paths keep per-worker float buffers of this many elements at most. */
#ifndef POOL_SCRATCH_CAP
#define POOL_SCRATCH_CAP ((uint64_t)1 << 18)
#endif

enum { PATH_ROW = 0, PATH_CHANNEL = 1, PATH_DIRECT = 2 };

typedef struct pool_plan {
    int half;             /* FLOAT16 when 1, FLOAT32 when 0 */
    int include_padding;
    int path;
    const char* x;
    char* y;
    uint64_t N, C;
    /* Spatial dims, always 3: a 2-D pooling uses dim 0 (D) with size 1, window 1, stride 1, no pads. */
    uint64_t in[3], out[3], win[3], str[3], dil[3], sp[3], ep[3];
    uint64_t xs_n, xs_c, xs[3]; /* input strides, elements */
    uint64_t ys_n, ys_c, ys[3]; /* output strides, elements */
    /* Per-dim tables (row and channel paths), taps[i][o] for o < out[i]. */
    const struct pool_taps* taps[3];
    uint64_t ow_a, ow_b;  /* [ow_a, ow_b): every W tap on input */
    uint64_t cols;        /* row path: input columns [0, cols) are accumulated */
    /* Scratch, per worker: row path 2 x acc[acc_len], tmp[out_len], inv[out_len]; channel path 3 x [out_len] */
    char* scratch;
    size_t scratch_stride; /* bytes per worker */
    uint64_t acc_len, out_len;
} pool_plan;

/* Output position o along one dim: the taps [k0, k1) fall on real input; div = divisor factor. */
typedef struct pool_taps {
    uint32_t k0, k1, div;
} pool_taps;

/* ---- window arithmetic -------------------------------------------------------------------------- */

/* Taps k in [0, w) whose position p = o*s + k*d - sp lies in [lo, hi): the range [*k0, *k1). */
static void tap_range(uint64_t o, uint64_t s, uint64_t d, uint64_t w, uint64_t sp, int64_t lo, int64_t hi,
                      uint64_t* k0, uint64_t* k1) {
    uint64_t os, a, b;
    int64_t base;
    *k0 = 0;
    *k1 = 0;
    /* Positions never exceed in + end padding < 2^33, so o*s beyond 2^40 is past every extent. */
    if (!dmlpy_mul_u64(o, s, &os) || os > ((uint64_t)1 << 40)) return;
    base = (int64_t)os - (int64_t)sp;
    if (base >= hi) return;
    a = base >= lo ? 0 : ((uint64_t)(lo - base) + d - 1) / d;
    b = ((uint64_t)(hi - base) + d - 1) / d;
    if (a > w) a = w;
    if (b > w) b = w;
    if (b < a) b = a;
    *k0 = a;
    *k1 = b;
}

/* Taps of output o in dim i that fall on real input: [*k0, *k1). Returns the divisor factor. */
static uint64_t dim_taps(const pool_plan* p, int i, uint64_t o, uint64_t* k0, uint64_t* k1) {
    tap_range(o, p->str[i], p->dil[i], p->win[i], p->sp[i], 0, (int64_t)p->in[i], k0, k1);
    if (p->include_padding) {
        uint64_t a, b;
        tap_range(o, p->str[i], p->dil[i], p->win[i], p->sp[i], -(int64_t)p->sp[i],
                  (int64_t)p->in[i] + (int64_t)p->ep[i], &a, &b);
        return b - a;
    }
    return *k1 - *k0;
}

/* Input position of tap k (valid taps only, so the result is in [0, in)). */
static inline uint64_t tap_pos(const pool_plan* p, int i, uint64_t o, uint64_t k) {
    return o * p->str[i] + k * p->dil[i] - p->sp[i];
}

static inline float reciprocal(uint64_t a, uint64_t b) {
    /* Equals 1.0f / (float)(a*b) (checked for every divisor up to 2^24); 1/0 = inf so 0 * inf = NaN. */
    return (float)(1.0 / ((double)a * (double)b));
}

/* ---- row path ------------------------------------------------------------------------------------ */

/* How many output rows ahead the row path prefetches the input rows it will need. */
#ifndef POOL_PREFETCH_AHEAD
#define POOL_PREFETCH_AHEAD 4
#endif
#ifndef POOL_PREFETCH_LOCALITY
#define POOL_PREFETCH_LOCALITY 3
#endif

/* Extra floats after each row buffer so the vector loops may read and write whole vectors past the end. */
#define POOL_ROW_SLACK 64

#if defined(POOL_AVX512)
static inline __mmask16 tail_mask(uint64_t remaining) {
    return remaining >= 16 ? (__mmask16)0xFFFFu : (__mmask16)((1u << remaining) - 1u);
}
#endif

#if defined(__GNUC__) || defined(__clang__)
#define POOL_INLINE static inline __attribute__((always_inline))
#else
#define POOL_INLINE static inline
#endif

/* Rows accumulated per vertical sweep (each sweep reads and writes the row buffer once). */
#define POOL_ROW_GROUP 8

#if defined(POOL_AVX512)
/* Stores 16 results (masked) to the output at element offset off. */
POOL_INLINE void store16(char* y, uint64_t off, __m512 v, __mmask16 m, int half, int masked) {
    if (half) {
        __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        if (masked) {
            _mm256_mask_storeu_epi16((uint16_t*)y + off, m, h);
        } else {
            _mm256_storeu_si256((__m256i*)((uint16_t*)y + off), h);
        }
    } else if (masked) {
        _mm512_mask_storeu_ps((float*)y + off, m, v);
    } else {
        _mm512_storeu_ps((float*)y + off, v);
    }
}

/* Window sum of 16 outputs starting at output j: sum_k a[(j + l)*s + k*d], l < 16, k in increasing order.
 * s is 1 or 2; for s = 2, d = 1, w <= 3 the taps share two or three loads. */
POOL_INLINE __m512 hsum16(const float* a, uint64_t j, uint64_t s, uint64_t d, uint64_t w) {
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    uint64_t k;
    __m512 v;
    if (s == 1) {
        const float* b = a + j;
        v = _mm512_loadu_ps(b);
        for (k = 1; k < w; ++k) v = _mm512_add_ps(v, _mm512_loadu_ps(b + k * d));
        return v;
    }
    {
        const float* b = a + 2 * j;
        __m512 lo = _mm512_loadu_ps(b), hi = _mm512_loadu_ps(b + 16);
        v = _mm512_permutex2var_ps(lo, even, hi);
        if (d == 1 && w <= 3) {
            if (w >= 2) v = _mm512_add_ps(v, _mm512_permutex2var_ps(lo, odd, hi));
            if (w == 3) {
                /* The third tap is the even lanes of b[2 .. 33]: shift lo:hi:b[32..47] by two. */
                __m512i l = _mm512_castps_si512(lo), h = _mm512_castps_si512(hi);
                __m512i h2 = _mm512_castps_si512(_mm512_loadu_ps(b + 32));
                __m512 lo2 = _mm512_castsi512_ps(_mm512_alignr_epi32(h, l, 2));
                __m512 hi2 = _mm512_castsi512_ps(_mm512_alignr_epi32(h2, h, 2));
                v = _mm512_add_ps(v, _mm512_permutex2var_ps(lo2, even, hi2));
            }
            return v;
        }
        for (k = 1; k < w; ++k) {
            const float* bk = b + k * d;
            v = _mm512_add_ps(v, _mm512_permutex2var_ps(_mm512_loadu_ps(bk), even, _mm512_loadu_ps(bk + 16)));
        }
        return v;
    }
}

/* Loads 16 elements (masked: lanes outside m read nothing and are 0) as floats. */
POOL_INLINE __m512 load16(const char* row, uint64_t j, __mmask16 m, int half, int masked) {
    if (half) {
        const uint16_t* h = (const uint16_t*)row + j;
        return _mm512_cvtph_ps(masked ? _mm256_maskz_loadu_epi16(m, h) : _mm256_loadu_si256((const __m256i*)h));
    }
    return masked ? _mm512_maskz_loadu_ps(m, (const float*)row + j) : _mm512_loadu_ps((const float*)row + j);
}

/* One 16-lane column block of the vertical sum. */
POOL_INLINE void vert_block(float* restrict acc, const char* const* rows, unsigned nr, uint64_t j, __mmask16 m,
                            int add, int half, int masked) {
    unsigned q = 0;
    __m512 v;
    if (add) {
        v = _mm512_load_ps(acc + j);
    } else {
        v = load16(rows[0], j, m, half, masked);
        q = 1;
    }
    for (; q < nr; ++q) v = _mm512_add_ps(v, load16(rows[q], j, m, half, masked));
    _mm512_store_ps(acc + j, v);
}

POOL_INLINE void vert_contig_t(float* restrict acc, const char* const* rows, unsigned nr, uint64_t n, int add,
                               int half) {
    uint64_t j = 0;
    for (; j + 16 <= n; j += 16) vert_block(acc, rows, nr, j, 0xFFFF, add, half, 0);
    if (j < n) vert_block(acc, rows, nr, j, tail_mask(n - j), add, half, 1);
}
#endif

/* acc = [acc +] rows[0] + rows[1] + ... (in that order), n contiguous elements per row. acc is 64-byte
 * aligned and padded: whole vectors are stored; input reads are masked to n elements. */
POOL_INLINE void vert_contig(const pool_plan* p, float* restrict acc, const char* const* rows, unsigned nr,
                             uint64_t n, int add) {
#if defined(POOL_AVX512)
    /* Constant flags, so each combination compiles to its own loop. */
    if (p->half) {
        if (add) {
            vert_contig_t(acc, rows, nr, n, 1, 1);
        } else {
            vert_contig_t(acc, rows, nr, n, 0, 1);
        }
    } else if (add) {
        vert_contig_t(acc, rows, nr, n, 1, 0);
    } else {
        vert_contig_t(acc, rows, nr, n, 0, 0);
    }
#else
    uint64_t j;
    unsigned q;
    for (q = 0; q < nr; ++q) {
        if (p->half) {
            if (add || q > 0) {
                dmlpy_h2f_add_row(acc, (const uint16_t*)rows[q], (size_t)n);
            } else {
                dmlpy_h2f_row(acc, (const uint16_t*)rows[q], (size_t)n);
            }
        } else {
            const float* restrict src = (const float*)rows[q];
            if (add || q > 0) {
                for (j = 0; j < n; ++j) acc[j] += src[j];
            } else {
                for (j = 0; j < n; ++j) acc[j] = src[j];
            }
        }
    }
#endif
}

/* Same with an element stride other than 1 (gathers). */
static void vert_strided(const pool_plan* p, float* restrict acc, const char* const* rows, unsigned nr, uint64_t n,
                         uint64_t stride, int add) {
    uint64_t j;
    unsigned q;
    for (q = 0; q < nr; ++q) {
        int set = !add && q == 0;
        if (p->half) {
            const uint16_t* src = (const uint16_t*)rows[q];
            if (set) {
                for (j = 0; j < n; ++j) acc[j] = dmlpy_h2f(src[j * stride]);
            } else {
                for (j = 0; j < n; ++j) acc[j] += dmlpy_h2f(src[j * stride]);
            }
        } else {
            const float* src = (const float*)rows[q];
            if (set) {
                for (j = 0; j < n; ++j) acc[j] = src[j * stride];
            } else {
                for (j = 0; j < n; ++j) acc[j] += src[j * stride];
            }
        }
    }
}

/* t[j] = sum_k a[j*s + k*d], k = 0..w-1 in increasing order, j < n. a and t have POOL_ROW_SLACK floats
 * of readable/writable slack past the last element used. */
static void window_sum(float* restrict t, const float* restrict a, uint64_t n, uint64_t s, uint64_t d,
                       uint64_t w) {
    uint64_t j, k;
#if defined(POOL_AVX512)
    if (s <= 2) {
        for (j = 0; j < n; j += 16) _mm512_storeu_ps(t + j, hsum16(a, j, s, d, w));
        return;
    }
#endif
    if (s == 1) {
        for (j = 0; j < n; ++j) t[j] = a[j];
        for (k = 1; k < w; ++k) {
            const float* ak = a + k * d;
            for (j = 0; j < n; ++j) t[j] += ak[j];
        }
    } else {
        for (j = 0; j < n; ++j) t[j] = a[j * s];
        for (k = 1; k < w; ++k) {
            const float* ak = a + k * d;
            for (j = 0; j < n; ++j) t[j] += ak[j * s];
        }
    }
}

/* y[j*stride] = t[j] * scale[j], j < n. */
POOL_INLINE void row_store(const pool_plan* p, uint64_t elem_offset, const float* restrict t,
                           const float* restrict scale, uint64_t n, uint64_t stride) {
    uint64_t j;
    if (p->half) {
        uint16_t* y = (uint16_t*)p->y + elem_offset;
        if (stride == 1) {
#if defined(POOL_AVX512)
            for (j = 0; j < n; j += 16) {
                __m512 v = _mm512_mul_ps(_mm512_loadu_ps(t + j), _mm512_loadu_ps(scale + j));
                _mm256_mask_storeu_epi16(y + j, tail_mask(n - j),
                                         _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
            }
#else
            dmlpy_f2h_scale_row(y, t, scale, (size_t)n);
#endif
        } else {
            for (j = 0; j < n; ++j) y[j * stride] = dmlpy_f2h(t[j] * scale[j]);
        }
    } else {
        float* y = (float*)p->y + elem_offset;
        if (stride == 1) {
#if defined(POOL_AVX512)
            for (j = 0; j < n; j += 16) {
                __m512 v = _mm512_mul_ps(_mm512_loadu_ps(t + j), _mm512_loadu_ps(scale + j));
                _mm512_mask_storeu_ps(y + j, tail_mask(n - j), v);
            }
#else
            for (j = 0; j < n; ++j) y[j] = t[j] * scale[j];
#endif
        } else {
            for (j = 0; j < n; ++j) y[j * stride] = t[j] * scale[j];
        }
    }
}

static inline void prefetch_bytes(const char* start, uint64_t bytes) {
#if defined(__GNUC__) || defined(__clang__)
    uintptr_t a = (uintptr_t)start & ~(uintptr_t)63, e = (uintptr_t)start + (uintptr_t)bytes;
    for (; a < e; a += 64) __builtin_prefetch((const void*)a, 0, POOL_PREFETCH_LOCALITY);
#else
    (void)start;
    (void)bytes;
#endif
}

typedef struct row_iter {
    uint64_t n, c, od, oh;
} row_iter;

static inline void row_iter_init(const pool_plan* p, row_iter* it, uint64_t r) {
    uint64_t t;
    it->oh = r % p->out[1];
    t = r / p->out[1];
    it->od = t % p->out[0];
    t /= p->out[0];
    it->c = t % p->C;
    it->n = t / p->C;
}

static inline void row_iter_next(const pool_plan* p, row_iter* it) {
    if (++it->oh == p->out[1]) {
        it->oh = 0;
        if (++it->od == p->out[0]) {
            it->od = 0;
            if (++it->c == p->C) {
                it->c = 0;
                ++it->n;
            }
        }
    }
}

/* Writes one output element. */
POOL_INLINE void store_one(const pool_plan* p, uint64_t elem_offset, float v) {
    if (p->half) {
        ((uint16_t*)p->y)[elem_offset] = dmlpy_f2h(v);
    } else {
        ((float*)p->y)[elem_offset] = v;
    }
}

#if defined(POOL_AVX512)
POOL_INLINE void window_sum_store_t(char* y, uint64_t elem_offset, const float* restrict a, uint64_t n, uint64_t s,
                                    uint64_t d, uint64_t w, const float* restrict scale, int half) {
    uint64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        __m512 v = _mm512_mul_ps(hsum16(a, j, s, d, w), _mm512_loadu_ps(scale + j));
        store16(y, elem_offset + j, v, 0xFFFF, half, 0);
    }
    if (j < n) {
        __m512 v = _mm512_mul_ps(hsum16(a, j, s, d, w), _mm512_loadu_ps(scale + j));
        store16(y, elem_offset + j, v, tail_mask(n - j), half, 1);
    }
}

/* Interior outputs straight to a contiguous output row: y[j] = (sum_k a[j*s + k*d]) * scale[j], j < n.
 * Only s = 1 and s = 2 come here. a has POOL_ROW_SLACK readable floats past the last one used. */
static void window_sum_store(const pool_plan* p, uint64_t elem_offset, const float* restrict a, uint64_t n,
                             uint64_t s, uint64_t d, uint64_t w, const float* restrict scale) {
    if (p->half) {
        window_sum_store_t(p->y, elem_offset, a, n, s, d, w, scale, 1);
    } else {
        window_sum_store_t(p->y, elem_offset, a, n, s, d, w, scale, 0);
    }
}
#endif

/* Vertical stage of one output row: acc[w] = sum over the valid (kd, kh) taps of x[n, c, id, ih, w]. */
POOL_INLINE void row_vertical(const pool_plan* p, const row_iter* it, float* restrict acc) {
    const uint64_t esize = p->half ? 2 : 4;
    const pool_taps* td = &p->taps[0][it->od];
    const pool_taps* th = &p->taps[1][it->oh];
    const char* xplane = p->x + (it->n * p->xs_n + it->c * p->xs_c) * esize;
    /* Byte steps between consecutive taps along D and H. */
    const uint64_t step_d = p->dil[0] * p->xs[0] * esize, step_h = p->dil[1] * p->xs[1] * esize;
    const char* rows[POOL_ROW_GROUP];
    uint64_t off_d; /* byte offsets from xplane (kept as integers: the one past the last tap is never used) */
    unsigned nr = 0;
    int first = 1;
    uint64_t kd, kh;
    if (p->cols == 0 || td->k0 >= td->k1 || th->k0 >= th->k1) {
        memset(acc, 0, (size_t)p->cols * sizeof(float));
        return;
    }
    off_d = (tap_pos(p, 0, it->od, td->k0) * p->xs[0] + tap_pos(p, 1, it->oh, th->k0) * p->xs[1]) * esize;
    for (kd = td->k0; kd < td->k1; ++kd, off_d += step_d) {
        uint64_t off_h = off_d;
        for (kh = th->k0; kh < th->k1; ++kh, off_h += step_h) {
            rows[nr++] = xplane + off_h;
            if (nr == POOL_ROW_GROUP) {
                if (p->xs[2] == 1) {
                    vert_contig(p, acc, rows, nr, p->cols, !first);
                } else {
                    vert_strided(p, acc, rows, nr, p->cols, p->xs[2], !first);
                }
                first = 0;
                nr = 0;
            }
        }
    }
    if (nr > 0) {
        if (p->xs[2] == 1) {
            vert_contig(p, acc, rows, nr, p->cols, !first);
        } else {
            vert_strided(p, acc, rows, nr, p->cols, p->xs[2], !first);
        }
    }
}

/* Prefetches the input rows that output row `it` adds to those of the previous output row. */
POOL_INLINE void row_prefetch(const pool_plan* p, const row_iter* it) {
    const uint64_t esize = p->half ? 2 : 4;
    const pool_taps* pd = &p->taps[0][it->od];
    const pool_taps* ph = &p->taps[1][it->oh];
    const char* plane = p->x + (it->n * p->xs_n + it->c * p->xs_c) * esize;
    uint64_t kh_from = ph->k1 - ph->k0 > p->str[1] ? ph->k1 - p->str[1] : ph->k0;
    uint64_t kd, kh;
    if (kh_from >= ph->k1) return;
    for (kd = pd->k0; kd < pd->k1; ++kd) {
        uint64_t off = (tap_pos(p, 0, it->od, kd) * p->xs[0] + tap_pos(p, 1, it->oh, kh_from) * p->xs[1]) * esize;
        for (kh = kh_from; kh < ph->k1; ++kh, off += p->dil[1] * p->xs[1] * esize) {
            prefetch_bytes(plane + off, p->cols * esize);
        }
    }
}

/* Rows are processed as a two-stage pipeline: the vertical stage of row r+1 runs before the horizontal
 * stage of row r, so the horizontal loads of a row buffer never wait on its just-issued stores
 * (unaligned loads from fresh stores cannot be store-forwarded). */
static void run_rows(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    const pool_plan* p = (const pool_plan*)vp;
    const uint64_t OW = p->out[2];
    float* acc[2];
    float* tmp;
    float* inv;
    uint64_t cached_rowdiv = 0;
    int have_cache = 0;
    row_iter it, next, ahead;
    uint64_t r, ow;
#if defined(POOL_AVX512)
    const int fused = p->ys[2] == 1 && (p->str[2] == 1 || p->str[2] == 2);
#else
    const int fused = 0;
#endif

    acc[0] = (float*)(p->scratch + (size_t)worker * p->scratch_stride);
    acc[1] = acc[0] + p->acc_len;
    tmp = acc[1] + p->acc_len;
    inv = tmp + p->out_len;

    row_iter_init(p, &it, begin);
    next = it;
    ahead = it;
    for (r = begin; r < end && r < begin + POOL_PREFETCH_AHEAD; ++r) row_iter_next(p, &ahead);

    row_vertical(p, &it, acc[0]);
    row_iter_next(p, &next);

    for (r = begin; r < end; ++r) {
        const float* a = acc[(r - begin) & 1];
        uint64_t rowdiv = (uint64_t)p->taps[0][it.od].div * p->taps[1][it.oh].div;
        uint64_t ybase = it.n * p->ys_n + it.c * p->ys_c + it.od * p->ys[0] + it.oh * p->ys[1];

        if (p->xs[2] == 1 && r + POOL_PREFETCH_AHEAD < end) {
            row_prefetch(p, &ahead);
            row_iter_next(p, &ahead);
        }
        if (r + 1 < end) {
            row_vertical(p, &next, acc[(r + 1 - begin) & 1]);
            row_iter_next(p, &next);
        }

        if (!have_cache || rowdiv != cached_rowdiv) {
            for (ow = 0; ow < OW; ++ow) inv[ow] = reciprocal(rowdiv, p->taps[2][ow].div);
            cached_rowdiv = rowdiv;
            have_cache = 1;
        }

        /* Horizontal stage: interior outputs in one vector sweep; border outputs tap by tap. */
        if (p->ow_b > p->ow_a) {
            const float* a0 = a + (p->ow_a * p->str[2] - p->sp[2]);
#if defined(POOL_AVX512)
            if (fused) {
                window_sum_store(p, ybase + p->ow_a, a0, p->ow_b - p->ow_a, p->str[2], p->dil[2], p->win[2],
                                 inv + p->ow_a);
            } else
#endif
            {
                window_sum(tmp + p->ow_a, a0, p->ow_b - p->ow_a, p->str[2], p->dil[2], p->win[2]);
            }
        }
        for (ow = 0; ow < OW; ++ow) {
            uint64_t k, k0, k1;
            float sum;
            if (ow == p->ow_a && p->ow_b > p->ow_a) {
                ow = p->ow_b - 1;
                continue;
            }
            k0 = p->taps[2][ow].k0;
            k1 = p->taps[2][ow].k1;
            sum = 0.0f;
            if (k0 < k1) {
                sum = a[tap_pos(p, 2, ow, k0)];
                for (k = k0 + 1; k < k1; ++k) sum += a[tap_pos(p, 2, ow, k)];
            }
            if (fused) {
                store_one(p, ybase + ow, sum * inv[ow]);
            } else {
                tmp[ow] = sum;
            }
        }
        if (!fused) row_store(p, ybase, tmp, inv, OW, p->ys[2]);
        row_iter_next(p, &it);
    }
}

/* ---- channel path (input C stride 1) --------------------------------------------------------------- */

/* Output pixel (n, od, oh, ow), all channels: for each valid kw, the column sum over (kd, kh) of the
 * contiguous channel vectors x[n, :, id, ih, iw]; the column sums are added in kw order. */
static void run_pixels(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    const pool_plan* p = (const pool_plan*)vp;
    const uint64_t OW = p->out[2], OH = p->out[1], OD = p->out[0], C = p->C;
    const uint64_t esize = p->half ? 2 : 4;
    float* sum = (float*)(p->scratch + (size_t)worker * p->scratch_stride);
    float* col = sum + p->out_len;
    float* scale = col + p->out_len;
    const uint64_t step_d = p->dil[0] * p->xs[0] * esize, step_h = p->dil[1] * p->xs[1] * esize;
    float cached_f = 0.0f;
    int have_scale = 0;
    uint64_t n, od, oh, ow, r, t, i;

    ow = begin % OW;
    t = begin / OW;
    oh = t % OH;
    t /= OH;
    od = t % OD;
    n = t / OD;

    for (r = begin; r < end; ++r) {
        const pool_taps* td = &p->taps[0][od];
        const pool_taps* th = &p->taps[1][oh];
        const pool_taps* tw = &p->taps[2][ow];
        uint64_t kd, kh, kw;
        float f = reciprocal((uint64_t)td->div * th->div, tw->div);
        int first_col = 1;

        if (td->k0 < td->k1 && th->k0 < th->k1) {
            const uint64_t off0 =
                (n * p->xs_n + tap_pos(p, 0, od, td->k0) * p->xs[0] + tap_pos(p, 1, oh, th->k0) * p->xs[1]) * esize;
            for (kw = tw->k0; kw < tw->k1; ++kw) {
                float* dst = first_col ? sum : col;
                const char* xw = p->x + off0 + tap_pos(p, 2, ow, kw) * p->xs[2] * esize;
                const char* rows[POOL_ROW_GROUP];
                unsigned nr = 0;
                int first = 1;
                uint64_t off_d = 0; /* byte offsets from xw */
                for (kd = td->k0; kd < td->k1; ++kd, off_d += step_d) {
                    uint64_t off_h = off_d;
                    for (kh = th->k0; kh < th->k1; ++kh, off_h += step_h) {
                        rows[nr++] = xw + off_h;
                        if (nr == POOL_ROW_GROUP) {
                            vert_contig(p, dst, rows, nr, C, !first);
                            first = 0;
                            nr = 0;
                        }
                    }
                }
                if (nr > 0) vert_contig(p, dst, rows, nr, C, !first);
                if (!first_col) {
                    for (i = 0; i < C; ++i) sum[i] += col[i];
                }
                first_col = 0;
            }
        }
        if (first_col) memset(sum, 0, (size_t)C * sizeof(float));
        if (!have_scale || dmlpy_f32_bits(f) != dmlpy_f32_bits(cached_f)) {
            for (i = 0; i < C; ++i) scale[i] = f;
            cached_f = f;
            have_scale = 1;
        }
        row_store(p, n * p->ys_n + od * p->ys[0] + oh * p->ys[1] + ow * p->ys[2], sum, scale, C, p->ys_c);

        if (++ow == OW) {
            ow = 0;
            if (++oh == OH) {
                oh = 0;
                if (++od == OD) {
                    od = 0;
                    ++n;
                }
            }
        }
    }
}

/* ---- direct path ----------------------------------------------------------------------------------- */

static inline float load_elem(const pool_plan* p, uint64_t off) {
    return p->half ? dmlpy_h2f(((const uint16_t*)p->x)[off]) : ((const float*)p->x)[off];
}

static void run_direct(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    const pool_plan* p = (const pool_plan*)vp;
    const uint64_t OW = p->out[2], OH = p->out[1], OD = p->out[0];
    uint64_t n, c, od, oh, r, t;
    (void)worker;

    oh = begin % OH;
    t = begin / OH;
    od = t % OD;
    t /= OD;
    c = t % p->C;
    n = t / p->C;

    for (r = begin; r < end; ++r) {
        uint64_t kd0, kd1, kh0, kh1, ow;
        uint64_t div_d = dim_taps(p, 0, od, &kd0, &kd1);
        uint64_t div_h = dim_taps(p, 1, oh, &kh0, &kh1);
        uint64_t xbase = n * p->xs_n + c * p->xs_c;
        uint64_t ybase = n * p->ys_n + c * p->ys_c + od * p->ys[0] + oh * p->ys[1];
        for (ow = 0; ow < OW; ++ow) {
            uint64_t kw0, kw1, kw, kd, kh;
            uint64_t div_w = dim_taps(p, 2, ow, &kw0, &kw1);
            float s = 0.0f, v;
            int first_col = 1;
            if (kd0 < kd1 && kh0 < kh1) {
                for (kw = kw0; kw < kw1; ++kw) {
                    uint64_t xw = xbase + tap_pos(p, 2, ow, kw) * p->xs[2];
                    float colsum = 0.0f;
                    int first = 1;
                    for (kd = kd0; kd < kd1; ++kd) {
                        uint64_t xd = xw + tap_pos(p, 0, od, kd) * p->xs[0];
                        for (kh = kh0; kh < kh1; ++kh) {
                            float e = load_elem(p, xd + tap_pos(p, 1, oh, kh) * p->xs[1]);
                            colsum = first ? e : colsum + e;
                            first = 0;
                        }
                    }
                    s = first_col ? colsum : s + colsum;
                    first_col = 0;
                }
            }
            v = s * reciprocal(div_d * div_h, div_w);
            if (p->half) {
                ((uint16_t*)p->y)[ybase + ow * p->ys[2]] = dmlpy_f2h(v);
            } else {
                ((float*)p->y)[ybase + ow * p->ys[2]] = v;
            }
        }

        if (++oh == OH) {
            oh = 0;
            if (++od == OD) {
                od = 0;
                if (++c == p->C) {
                    c = 0;
                    ++n;
                }
            }
        }
    }
}

/* ---- setup ------------------------------------------------------------------------------------------ */

typedef struct pool_fields {
    const DML_TENSOR_DESC* input;
    const DML_TENSOR_DESC* output;
    UINT dims;
    const UINT* strides;
    const UINT* window;
    const UINT* start;
    const UINT* end;
    const UINT* dilations; /* NULL for AVERAGE_POOLING */
    BOOL include_padding;
} pool_fields;

static int32_t read_fields(const DML_OPERATOR_DESC* desc, pool_fields* f) {
    if (desc->Desc == NULL) return DMLPY_E_NULL_ARGUMENT;
    if (desc->Type == DML_OPERATOR_AVERAGE_POOLING) {
        const DML_AVERAGE_POOLING_OPERATOR_DESC* d = (const DML_AVERAGE_POOLING_OPERATOR_DESC*)desc->Desc;
        f->input = d->InputTensor;
        f->output = d->OutputTensor;
        f->dims = d->DimensionCount;
        f->strides = d->Strides;
        f->window = d->WindowSize;
        f->start = d->StartPadding;
        f->end = d->EndPadding;
        f->dilations = NULL;
        f->include_padding = d->IncludePadding;
    } else {
        const DML_AVERAGE_POOLING1_OPERATOR_DESC* d = (const DML_AVERAGE_POOLING1_OPERATOR_DESC*)desc->Desc;
        f->input = d->InputTensor;
        f->output = d->OutputTensor;
        f->dims = d->DimensionCount;
        f->strides = d->Strides;
        f->window = d->WindowSize;
        f->start = d->StartPadding;
        f->end = d->EndPadding;
        f->dilations = d->Dilations;
        f->include_padding = d->IncludePadding;
        if (f->dilations == NULL) return DMLPY_E_NULL_ARGUMENT;
    }
    if (f->input == NULL || f->output == NULL) return DMLPY_E_NULL_ARGUMENT;
    if (f->strides == NULL || f->window == NULL || f->start == NULL || f->end == NULL) return DMLPY_E_NULL_ARGUMENT;
    return DMLPY_OK;
}

int32_t dmlpy_average_pooling(const DML_OPERATOR_DESC* desc, UINT inputCount, const DMLPY_BOUND_BUFFER* inputs,
                              UINT outputCount, const DMLPY_BOUND_BUFFER* outputs, UINT threadCount) {
    pool_fields f;
    pool_plan p;
    dmlpy_tensor xt, yt;
    int32_t st;
    uint32_t i;
    int off; /* 0 for 3 spatial dims, 1 for 2 (dim 0 is a unit D) */
    uint64_t items, work, grain, per_worker = 0, OW, table_len;
    unsigned threads;
    int output_aliases = 0;
    void* scratch_block = NULL;
    pool_taps* tables = NULL;

    st = read_fields(desc, &f);
    if (st != DMLPY_OK) return st;
    if (inputCount != 1 || outputCount != 1) return DMLPY_E_BINDING_COUNT;
    if (inputs == NULL || outputs == NULL) return DMLPY_E_NULL_ARGUMENT;

    if (f.dims != 2 && f.dims != 3) return DMLPY_E_INVALID_DESC;
    st = dmlpy_tensor_from_desc(f.input, &xt);
    if (st != DMLPY_OK) return st;
    st = dmlpy_tensor_from_desc(f.output, &yt);
    if (st != DMLPY_OK) return st;
    if (xt.rank != f.dims + 2 || yt.rank != f.dims + 2) return DMLPY_E_INVALID_DESC;
    if (xt.data_type != DML_TENSOR_DATA_TYPE_FLOAT32 && xt.data_type != DML_TENSOR_DATA_TYPE_FLOAT16) {
        return DMLPY_E_INVALID_DESC;
    }
    if (yt.data_type != xt.data_type) return DMLPY_E_INVALID_DESC;
    if (xt.sizes[0] != yt.sizes[0] || xt.sizes[1] != yt.sizes[1]) return DMLPY_E_INVALID_DESC;
    for (i = 0; i < f.dims; ++i) {
        if (f.window[i] == 0 || f.strides[i] == 0) return DMLPY_E_INVALID_DESC;
        if (f.dilations != NULL && f.dilations[i] == 0) return DMLPY_E_INVALID_DESC;
    }

    st = dmlpy_tensor_bind(&xt, &inputs[0]);
    if (st != DMLPY_OK) return st;
    st = dmlpy_tensor_bind(&yt, &outputs[0]);
    if (st != DMLPY_OK) return st;
    if (dmlpy_tensors_overlap(&xt, &yt)) return DMLPY_E_INVALID_ARGUMENT;

    memset(&p, 0, sizeof p);
    p.half = xt.data_type == DML_TENSOR_DATA_TYPE_FLOAT16;
    p.include_padding = f.include_padding != 0;
    p.x = xt.data;
    p.y = yt.data;
    p.N = xt.sizes[0];
    p.C = xt.sizes[1];
    p.xs_n = xt.strides[0];
    p.xs_c = xt.strides[1];
    p.ys_n = yt.strides[0];
    p.ys_c = yt.strides[1];
    off = f.dims == 2 ? 1 : 0;
    if (off) {
        p.in[0] = p.out[0] = p.win[0] = p.str[0] = p.dil[0] = 1;
        p.sp[0] = p.ep[0] = 0;
        p.xs[0] = p.ys[0] = 0;
    }
    for (i = 0; i < f.dims; ++i) {
        p.in[i + off] = xt.sizes[i + 2];
        p.out[i + off] = yt.sizes[i + 2];
        p.xs[i + off] = xt.strides[i + 2];
        p.ys[i + off] = yt.strides[i + 2];
        p.win[i + off] = f.window[i];
        p.str[i + off] = f.strides[i];
        p.dil[i + off] = f.dilations ? f.dilations[i] : 1;
        p.sp[i + off] = f.start[i];
        p.ep[i + off] = f.end[i];
    }
    OW = p.out[2];

    /* An output with a zero stride over a dimension of size > 1 writes one element several times; run
     * such outputs on one thread so the last write is deterministic. */
    for (i = 0; i < yt.rank; ++i) {
        if (yt.strides[i] == 0 && yt.sizes[i] > 1) output_aliases = 1;
    }

    /* Pick the path. The scratch-based paths need every per-dim table and row buffer to be modest. */
    table_len = p.out[0] + p.out[1] + OW;
    if (table_len > 3 * POOL_SCRATCH_CAP) {
        p.path = PATH_DIRECT;
    } else if (p.xs_c == 1 && p.xs[2] != 1 && p.C >= 8 && p.C <= POOL_SCRATCH_CAP) {
        p.path = PATH_CHANNEL;
    } else if (p.in[2] <= POOL_SCRATCH_CAP && OW <= POOL_SCRATCH_CAP) {
        p.path = PATH_ROW;
    } else {
        p.path = PATH_DIRECT;
    }

    if (p.path != PATH_DIRECT) {
        uint64_t o, cols = 0, ow_a = 0, ow_b = 0;
        int d, seen_full = 0;
        pool_taps* t;
        tables = (pool_taps*)malloc((size_t)table_len * sizeof(pool_taps));
        if (tables == NULL) return DMLPY_E_OUT_OF_MEMORY;
        t = tables;
        for (d = 0; d < 3; ++d) {
            p.taps[d] = t;
            for (o = 0; o < p.out[d]; ++o, ++t) {
                uint64_t k0, k1;
                t->div = (uint32_t)dim_taps(&p, d, o, &k0, &k1);
                t->k0 = (uint32_t)k0;
                t->k1 = (uint32_t)k1;
            }
        }
        for (o = 0; o < OW; ++o) {
            const pool_taps* tw = &p.taps[2][o];
            if (tw->k1 > tw->k0) {
                uint64_t last = tap_pos(&p, 2, o, tw->k1 - 1) + 1;
                if (last > cols) cols = last;
            }
            if (tw->k0 == 0 && tw->k1 == p.win[2]) {
                if (!seen_full) ow_a = o;
                seen_full = 1;
                ow_b = o + 1;
            }
        }
        p.cols = cols;
        p.ow_a = ow_a;
        p.ow_b = ow_b;
    }

    /* Work estimate in vectorised element operations (scalar loops count 8 per element), and threads. */
    {
        double taps_v = (double)p.win[0] * (double)p.win[1];
        double est;
        if (p.path == PATH_CHANNEL) {
            items = p.N * p.out[0] * p.out[1] * OW;
            est = (double)items * (double)p.C * (taps_v * (double)p.win[2] + 1.0);
        } else {
            items = p.N * p.C * p.out[0] * p.out[1];
            if (p.path == PATH_ROW) {
                est = (double)items * (taps_v * (double)p.cols * (p.xs[2] == 1 ? 1.0 : 8.0) +
                                       (double)OW * (double)p.win[2]);
            } else {
                est = 8.0 * (double)items * (double)OW * taps_v * (double)p.win[2];
            }
        }
        work = est > 1.8e19 ? UINT64_MAX : (uint64_t)est;
    }
    threads = output_aliases ? 1u : dmlpy_choose_threads(work, items, threadCount);
    grain = dmlpy_choose_grain(items, threads);

    /* Row buffers: lengths rounded to whole 64-byte lines plus slack for whole-vector reads/writes. */
    if (p.path == PATH_ROW) {
        p.acc_len = ((p.cols + 15) & ~(uint64_t)15) + POOL_ROW_SLACK;
        p.out_len = ((OW + 15) & ~(uint64_t)15) + POOL_ROW_SLACK;
        per_worker = (2 * p.acc_len + 2 * p.out_len) * sizeof(float);
    } else if (p.path == PATH_CHANNEL) {
        p.out_len = ((p.C + 15) & ~(uint64_t)15) + POOL_ROW_SLACK;
        per_worker = 3 * p.out_len * sizeof(float);
    }
    if (per_worker > 0) {
        scratch_block = calloc(1, (size_t)(per_worker * threads + 64)); /* zeroed: slack lanes stay finite */
        if (scratch_block == NULL) {
            free(tables);
            return DMLPY_E_OUT_OF_MEMORY;
        }
        p.scratch = (char*)(((uintptr_t)scratch_block + 63) & ~(uintptr_t)63);
        p.scratch_stride = (size_t)per_worker;
    }

    dmlpy_parallel_for(items, grain, threads,
                       p.path == PATH_ROW ? run_rows : p.path == PATH_CHANNEL ? run_pixels : run_direct, &p);

    free(scratch_block);
    free(tables);
    return DMLPY_OK;
}
