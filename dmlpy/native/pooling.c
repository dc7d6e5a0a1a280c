/*
 * pooling.c - DML_OPERATOR_AVERAGE_POOLING (56) and DML_OPERATOR_AVERAGE_POOLING1 (166).
 *
 * Semantics (docs/deviations.md, the DML_AVERAGE_POOLING_OPERATOR_DESC page and the DML_AVERAGE_POOLING1_OPERATOR_DESC page). Spatial axis i is tensor axis i + 2. For
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
 * Five paths:
 *   global path   - (AVX-512, FLOAT32) one output per plane whose window is the whole plane without padding
 *                   (global average pooling, as ONNX exports it), planes of at most POOL_GLOBAL_MAX
 *                   elements: 16 channels per vector, each tap one gather, in the order above (per column
 *                   the taps down it, then the columns from a -0.0 start), so the bits are the register
 *                   path's; a plane of 2x2 costs a few gathers per 16 channels instead of a row item.
 *   register path - (AVX-512) input W stride 1, at most 256 input columns used and 256 output columns:
 *                   per output row, the vertical sums of the input row's 16-column vectors are kept in
 *                   registers and every W tap is a lane permutation of them added under a lane mask;
 *                   all per-row and per-tap data (row offsets, tap counts, permutation indices, masks,
 *                   reciprocals) are tables built once per call. Rows of one or two vectors go 4 or 8
 *                   at a time (independent dependency chains), and with at most 8 outputs two rows share
 *                   each vector. The results equal the row path's bit for bit (same order of adds).
 *   row path      - one output row (n, c, od, oh) at a time: accumulate the valid input rows into a
 *                   float row buffer (contiguous vector adds when the input W stride is 1), then sum
 *                   the window taps along W and scale. Used for every other layout with moderate W.
 *   channel path  - input channel stride 1 and W stride not 1 (NHWC-like): one output pixel at a time,
 *                   vectors along C.
 *   direct path   - anything else (huge W / OW / C): per output element, no scratch memory.
 */
#include <stdlib.h>
#include <string.h>

#include "dmlpy_internal.h"
#include "half.h"

#include "v16.h"
#if defined(DMLPY_V16) && !defined(DMLPY_FORCE_SOFT_HALF) /* on AVX-512, or AVX2 through v16.h (same bits) */
#define POOL_AVX512 1
#endif

/* The row and channel paths keep per-worker float buffers of this many elements at most. */
#ifndef POOL_SCRATCH_CAP
#define POOL_SCRATCH_CAP ((uint64_t)1 << 18)
#endif

enum { PATH_ROW = 0, PATH_CHANNEL = 1, PATH_DIRECT = 2, PATH_REG = 3, PATH_GLOBAL = 4 };

/* Global path: at most this many input elements per plane (each one gather per 16 channels). */
#ifndef POOL_GLOBAL_MAX
#define POOL_GLOBAL_MAX 64
#endif

/* Register path limits: input vectors of 16 columns per row, output blocks of 16 columns, W tap entries,
 * the W tap span of one block, output rows per (n, c) plane, and distinct row divisors. */
#define POOL_REG_VECS 16
#define POOL_REG_BLOCKS 16
#define POOL_REG_ENTRIES 1024
#define POOL_REG_KSPAN 1024
#define POOL_REG_ROWS ((uint64_t)1 << 14)
#define POOL_REG_INVS 64

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
    /* Register path: W taps as lane permutations of the input row's vertical sums held in registers. */
    struct {
        uint32_t nv;                   /* input vectors of 16 columns per row */
        uint32_t nb;                   /* output blocks of 16 columns */
        uint32_t pack;                 /* OW <= 8 and nv == 1: two rows per horizontal vector */
        uint16_t last_mask;            /* columns < cols in the last input vector */
        const uint32_t* first;         /* [nb + 1]: block b's entries are [first[b], first[b + 1]) */
        const uint16_t* out_mask;      /* [nb]: lanes < OW of each block */
        const int32_t* idx;            /* [entries][16]: tap column - 16 q (0..31) for each output lane */
        const uint16_t* m;             /* [entries]: lanes whose tap is on input */
        const uint16_t* q;             /* [entries]: the entry permutes input vectors q and q + 1 */
        const float* init;             /* [nb][16]: -0.0 where the output has a W tap on input, else +0.0 */
        const float* inv;              /* [distinct row divisors][nb][16]: reciprocal(rowdiv, W factor) */
        const struct narrow_row* rows; /* [OD * OH]: the rows of one (n, c) plane */
    } rg;
} pool_plan;

/* One output row (od, oh) of an (n, c) plane, for the register path. */
typedef struct narrow_row {
    uint64_t xoff;   /* bytes from the plane's input to the row of the first valid (kd, kh) tap */
    uint64_t yoff;   /* output elements from the plane's output */
    uint32_t nd, nh; /* valid taps along D and H (both 0 when the window has no valid row) */
    uint32_t inv;    /* index of the row divisor in the reciprocal table */
    uint32_t joint;  /* rows q .. q+joint-1 are in the plane, have valid rows and share nd, nh, inv (capped at 8) */
} narrow_row;

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

/* Full unrolling of short constant loops (keeps small arrays of vectors in registers). */
#if defined(__clang__)
#define POOL_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define POOL_UNROLL _Pragma("GCC unroll 16")
#else
#define POOL_UNROLL
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
        v = v16_even_lanes(lo, hi);
        if (d == 1 && w <= 3) {
            if (w >= 2) v = _mm512_add_ps(v, v16_odd_lanes(lo, hi));
            if (w == 3) {
#if DMLPY_V16 == 2 /* AVX2: two more loads beat the emulated lane shifts */
                v = _mm512_add_ps(v, v16_even_lanes(_mm512_loadu_ps(b + 2), _mm512_loadu_ps(b + 18)));
#else
                /* The third tap is the even lanes of b[2 .. 33]: shift lo:hi:b[32..47] by two. */
                __m512i l = _mm512_castps_si512(lo), h = _mm512_castps_si512(hi);
                __m512i h2 = _mm512_castps_si512(_mm512_loadu_ps(b + 32));
                __m512 lo2 = _mm512_castsi512_ps(_mm512_alignr_epi32(h, l, 2));
                __m512 hi2 = _mm512_castsi512_ps(_mm512_alignr_epi32(h2, h, 2));
                v = _mm512_add_ps(v, v16_even_lanes(lo2, hi2));
#endif
            }
            return v;
        }
        for (k = 1; k < w; ++k) {
            const float* bk = b + k * d;
            v = _mm512_add_ps(v, v16_even_lanes(_mm512_loadu_ps(bk), _mm512_loadu_ps(bk + 16)));
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

/* ---- register path (W stride 1, at most 256 input and output columns; AVX-512) --------------------- */

#if defined(POOL_AVX512)
/* Input columns [0, cols) of one row as floats: lanes 0..15 in lo, 16..31 in hi (two registers). */
typedef struct narrow_vec {
    __m512 lo, hi;
} narrow_vec;

POOL_INLINE __m512 reg_load(const char* row, uint64_t v, __mmask16 m, int half, int masked) {
    if (half) {
        const uint16_t* h = (const uint16_t*)row + 16 * v;
        return _mm512_cvtph_ps(masked ? _mm256_maskz_loadu_epi16(m, h) : _mm256_loadu_si256((const __m256i*)h));
    }
    return masked ? _mm512_maskz_loadu_ps(m, (const float*)row + 16 * v) : _mm512_loadu_ps((const float*)row + 16 * v);
}

POOL_INLINE narrow_vec narrow_load(const char* row, __mmask16 mlast, int half, int two) {
    narrow_vec r;
    r.hi = _mm512_setzero_ps();
    if (two) {
        r.lo = reg_load(row, 0, 0xFFFF, half, 0);
        r.hi = reg_load(row, 1, mlast, half, 1);
    } else {
        r.lo = reg_load(row, 0, mlast, half, 1);
    }
    return r;
}

POOL_INLINE narrow_vec narrow_add(narrow_vec a, narrow_vec b, int two) {
    a.lo = _mm512_add_ps(a.lo, b.lo);
    if (two) a.hi = _mm512_add_ps(a.hi, b.hi);
    return a;
}

/* Vertical sum of one row: the valid taps (kd, kh) in increasing order; +0.0 when there is none. */
POOL_INLINE narrow_vec narrow_vertical(const char* base, const narrow_row* t, uint64_t step_d, uint64_t step_h,
                                       __mmask16 mlast, int half, int two) {
    narrow_vec a;
    uint64_t kd, kh, off_d = 0;
    a.lo = a.hi = _mm512_setzero_ps();
    if (t->nd == 0) return a;
    a = narrow_load(base, mlast, half, two);
    for (kd = 0; kd < t->nd; ++kd, off_d += step_d) {
        uint64_t off_h = off_d;
        for (kh = 0; kh < t->nh; ++kh, off_h += step_h) {
            if (kd == 0 && kh == 0) continue;
            a = narrow_add(a, narrow_load(base + off_h, mlast, half, two), two);
        }
    }
    return a;
}

/* Stores lanes [0, min(16, OW - 16b)) of v as outputs 16b.. of the row at element offset ybase. */
POOL_INLINE void reg_store(const pool_plan* p, uint64_t ybase, uint32_t b, __m512 v, int half) {
    if (p->ys[2] == 1) {
        const __mmask16 m = (__mmask16)p->rg.out_mask[b];
        store16(p->y, ybase + 16 * (uint64_t)b, v, m, half, m != 0xFFFF);
    } else {
        float t[16];
        uint64_t j, n = p->out[2] - 16 * (uint64_t)b;
        if (n > 16) n = 16;
        _mm512_storeu_ps(t, v);
        for (j = 0; j < n; ++j) store_one(p, ybase + (16 * (uint64_t)b + j) * p->ys[2], t[j]);
    }
}

/* Packed pair (OW <= 8): lanes 0..7 are row ya's outputs, lanes 8..15 row yb's. */
POOL_INLINE void reg_store_pair(const pool_plan* p, uint64_t ya, uint64_t yb, __m512 v, int half) {
    if (p->ys[2] == 1) {
        const __mmask8 m = (__mmask8)p->rg.out_mask[0];
        if (half) {
            __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            _mm_mask_storeu_epi16((uint16_t*)p->y + ya, m, _mm256_castsi256_si128(h));
            _mm_mask_storeu_epi16((uint16_t*)p->y + yb, m, _mm256_extracti128_si256(h, 1));
        } else {
            _mm256_mask_storeu_ps((float*)p->y + ya, m, _mm512_castps512_ps256(v));
            _mm256_mask_storeu_ps((float*)p->y + yb, m, _mm512_extractf32x8_ps(v, 1));
        }
    } else {
        float t[16];
        uint64_t j;
        _mm512_storeu_ps(t, v);
        for (j = 0; j < p->out[2]; ++j) {
            store_one(p, ya + j * p->ys[2], t[j]);
            store_one(p, yb + j * p->ys[2], t[8 + j]);
        }
    }
}

/* Horizontal stage of one row of one or two registers, and its store. */
POOL_INLINE void narrow_single(const pool_plan* p, uint64_t ybase, narrow_vec a, const float* inv, int half, int two) {
    uint32_t b, e;
    for (b = 0; b < p->rg.nb; ++b) {
        __m512 v = _mm512_load_ps(p->rg.init + 16 * b);
        for (e = p->rg.first[b]; e < p->rg.first[b + 1]; ++e) {
            const __m512i idx = _mm512_load_si512((const void*)(p->rg.idx + 16 * (uint64_t)e));
            const __m512 t = two ? _mm512_permutex2var_ps(a.lo, idx, a.hi) : _mm512_permutexvar_ps(idx, a.lo);
            v = _mm512_mask_add_ps(v, (__mmask16)p->rg.m[e], v, t);
        }
        reg_store(p, ybase, b, _mm512_mul_ps(v, _mm512_load_ps(inv + 16 * b)), half);
    }
}

/* G rows q .. q+G-1 of one plane with the same nd, nh (nonzero) and divisor: their vertical sums and W
 * sums advance together (independent dependency chains), sharing the table loads. With `pack`, two rows
 * share each horizontal vector (the tables' lanes 8..15 repeat lanes 0..7 for the second row, whose
 * register is the permutation's second source). */
POOL_INLINE void narrow_group_t(const pool_plan* p, const narrow_row* t, const char* xplane, uint64_t yplane,
                                const float* inv, uint64_t step_d, uint64_t step_h, int G, int half, int two,
                                int pack) {
    const __mmask16 mlast = (__mmask16)p->rg.last_mask;
    narrow_vec v[8];
    const char* base[8];
    uint64_t kd, kh, off_d = 0;
    uint32_t b, e;
    int i;
    POOL_UNROLL for (i = 0; i < G; ++i) {
        base[i] = xplane + t[i].xoff;
        v[i] = narrow_load(base[i], mlast, half, two);
    }
    for (kd = 0; kd < t->nd; ++kd, off_d += step_d) {
        uint64_t off_h = off_d;
        for (kh = 0; kh < t->nh; ++kh, off_h += step_h) {
            if (kd == 0 && kh == 0) continue;
            POOL_UNROLL for (i = 0; i < G; ++i) {
                v[i] = narrow_add(v[i], narrow_load(base[i] + off_h, mlast, half, two), two);
            }
        }
    }
    if (pack) {
        const __m512 scale = _mm512_load_ps(inv);
        __m512 s[4];
        POOL_UNROLL for (i = 0; i < G / 2; ++i) s[i] = _mm512_load_ps(p->rg.init);
        for (e = p->rg.first[0]; e < p->rg.first[1]; ++e) {
            const __m512i idx = _mm512_load_si512((const void*)(p->rg.idx + 16 * (uint64_t)e));
            const __mmask16 m = (__mmask16)p->rg.m[e];
            POOL_UNROLL for (i = 0; i < G / 2; ++i) {
                s[i] = _mm512_mask_add_ps(s[i], m, s[i], _mm512_permutex2var_ps(v[2 * i].lo, idx, v[2 * i + 1].lo));
            }
        }
        POOL_UNROLL for (i = 0; i < G / 2; ++i) {
            reg_store_pair(p, yplane + t[2 * i].yoff, yplane + t[2 * i + 1].yoff, _mm512_mul_ps(s[i], scale), half);
        }
        return;
    }
    for (b = 0; b < p->rg.nb; ++b) {
        const __m512 scale = _mm512_load_ps(inv + 16 * b);
        __m512 s[8];
        POOL_UNROLL for (i = 0; i < G; ++i) s[i] = _mm512_load_ps(p->rg.init + 16 * b);
        for (e = p->rg.first[b]; e < p->rg.first[b + 1]; ++e) {
            const __m512i idx = _mm512_load_si512((const void*)(p->rg.idx + 16 * (uint64_t)e));
            const __mmask16 m = (__mmask16)p->rg.m[e];
            POOL_UNROLL for (i = 0; i < G; ++i) {
                const __m512 g =
                    two ? _mm512_permutex2var_ps(v[i].lo, idx, v[i].hi) : _mm512_permutexvar_ps(idx, v[i].lo);
                s[i] = _mm512_mask_add_ps(s[i], m, s[i], g);
            }
        }
        POOL_UNROLL for (i = 0; i < G; ++i) reg_store(p, yplane + t[i].yoff, b, _mm512_mul_ps(s[i], scale), half);
    }
}

/* Rows of one or two input registers: runs of 8 or 4 rows of one plane with the same tap counts and
 * divisor go through narrow_group_t, other rows one at a time. */
POOL_INLINE void narrow_rows_t(const pool_plan* p, uint64_t begin, uint64_t end, int half, int two, int pack) {
    const uint64_t esize = half ? 2 : 4;
    const uint64_t step_d = p->dil[0] * p->xs[0] * esize, step_h = p->dil[1] * p->xs[1] * esize;
    const __mmask16 mlast = (__mmask16)p->rg.last_mask;
    const uint32_t inv_stride = 16 * p->rg.nb;
    const uint64_t per_plane = p->out[0] * p->out[1];
    const narrow_row* table = p->rg.rows;
    uint64_t n, c, q, r = begin;
    const char* xplane;
    uint64_t yplane;

    q = begin % per_plane;
    c = begin / per_plane;
    n = c / p->C;
    c %= p->C;
    xplane = p->x + (n * p->xs_n + c * p->xs_c) * esize;
    yplane = n * p->ys_n + c * p->ys_c;
    while (r < end) {
        const narrow_row* t = table + q;
        const float* inv = p->rg.inv + (size_t)t->inv * inv_stride;
        if (t->joint >= 8 && end - r >= 8) {
            narrow_group_t(p, t, xplane, yplane, inv, step_d, step_h, 8, half, two, pack);
            r += 8;
            q += 8;
        } else if (t->joint >= 4 && end - r >= 4) {
            narrow_group_t(p, t, xplane, yplane, inv, step_d, step_h, 4, half, two, pack);
            r += 4;
            q += 4;
        } else {
            narrow_single(p, yplane + t->yoff, narrow_vertical(xplane + t->xoff, t, step_d, step_h, mlast, half, two),
                          inv, half, two);
            r += 1;
            q += 1;
        }
        if (q == per_plane) {
            q = 0;
            if (++c == p->C) {
                c = 0;
                ++n;
            }
            xplane = p->x + (n * p->xs_n + c * p->xs_c) * esize;
            yplane = n * p->ys_n + c * p->ys_c;
        }
    }
}

/* Prefetches the input rows that output row q + POOL_PREFETCH_AHEAD of plane (n, c) adds to those of the
 * row before it (the last `H stride` valid rows of each D tap). The caller checks that the row exists. */
static inline void wide_prefetch(const pool_plan* p, const char* xplane, uint64_t q, uint64_t n, uint64_t c,
                                 uint64_t esize) {
    const uint64_t per_plane = p->out[0] * p->out[1];
    const narrow_row* t;
    uint64_t kd, kh, off_d = 0, kh_from;
    q += POOL_PREFETCH_AHEAD;
    if (q >= per_plane) {
        c += q / per_plane;
        q %= per_plane;
        n += c / p->C;
        c %= p->C;
        xplane = p->x + (n * p->xs_n + c * p->xs_c) * esize;
    }
    t = p->rg.rows + q;
    kh_from = t->nh > p->str[1] ? t->nh - p->str[1] : 0;
    for (kd = 0; kd < t->nd; ++kd, off_d += p->dil[0] * p->xs[0] * esize) {
        for (kh = kh_from; kh < t->nh; ++kh) {
            prefetch_bytes(xplane + t->xoff + off_d + kh * p->dil[1] * p->xs[1] * esize, p->cols * esize);
        }
    }
}

/* Rows of 3 .. POOL_REG_VECS input registers, one at a time: the vertical sums of the row's vectors go to
 * an aligned local array, then each W tap entry permutes a pair of adjacent vectors (q, q + 1). With a
 * constant nv (fixed_nv > 0) the vertical loop keeps the sums in registers, one tap row at a time. */
POOL_INLINE void wide_rows_t(const pool_plan* p, uint64_t begin, uint64_t end, int half, uint32_t fixed_nv) {
    const uint64_t esize = half ? 2 : 4;
    const uint64_t step_d = p->dil[0] * p->xs[0] * esize, step_h = p->dil[1] * p->xs[1] * esize;
    const __mmask16 mlast = (__mmask16)p->rg.last_mask;
    const uint32_t nb = p->rg.nb, nv = fixed_nv ? fixed_nv : p->rg.nv, inv_stride = 16 * p->rg.nb;
    const uint64_t per_plane = p->out[0] * p->out[1];
    const narrow_row* table = p->rg.rows;
    __m512 acc[POOL_REG_VECS + 1];
    uint64_t n, c, q, r;
    const char* xplane;
    uint64_t yplane;

    acc[nv] = _mm512_setzero_ps(); /* the pair partner of the last vector */
    q = begin % per_plane;
    c = begin / per_plane;
    n = c / p->C;
    c %= p->C;
    xplane = p->x + (n * p->xs_n + c * p->xs_c) * esize;
    yplane = n * p->ys_n + c * p->ys_c;
    for (r = begin; r < end; ++r) {
        const narrow_row* t = table + q;
        const float* inv = p->rg.inv + (size_t)t->inv * inv_stride;
        const uint64_t ybase = yplane + t->yoff;
        uint32_t v, b, e;
        if (r + POOL_PREFETCH_AHEAD < end) wide_prefetch(p, xplane, q, n, c, esize);
        if (t->nd == 0) {
            for (v = 0; v < nv; ++v) acc[v] = _mm512_setzero_ps();
        } else if (fixed_nv) {
            const char* base = xplane + t->xoff;
            uint64_t kd, kh, off_d = 0;
            __m512 a[POOL_REG_VECS];
            POOL_UNROLL for (v = 0; v < fixed_nv; ++v) {
                a[v] = reg_load(base, v, v + 1 == fixed_nv ? mlast : 0xFFFF, half, v + 1 == fixed_nv);
            }
            for (kd = 0; kd < t->nd; ++kd, off_d += step_d) {
                uint64_t off_h = off_d;
                for (kh = 0; kh < t->nh; ++kh, off_h += step_h) {
                    if (kd == 0 && kh == 0) continue;
                    POOL_UNROLL for (v = 0; v < fixed_nv; ++v) {
                        const int last = v + 1 == fixed_nv;
                        a[v] = _mm512_add_ps(a[v], reg_load(base + off_h, v, last ? mlast : 0xFFFF, half, last));
                    }
                }
            }
            POOL_UNROLL for (v = 0; v < fixed_nv; ++v) acc[v] = a[v];
        } else {
            const char* base = xplane + t->xoff;
            for (v = 0; v < nv; ++v) {
                const int masked = v + 1 == nv;
                const __mmask16 m = masked ? mlast : (__mmask16)0xFFFF;
                uint64_t kd, kh, off_d = 0;
                __m512 a = reg_load(base, v, m, half, masked);
                for (kd = 0; kd < t->nd; ++kd, off_d += step_d) {
                    uint64_t off_h = off_d;
                    for (kh = 0; kh < t->nh; ++kh, off_h += step_h) {
                        if (kd == 0 && kh == 0) continue;
                        a = _mm512_add_ps(a, reg_load(base + off_h, v, m, half, masked));
                    }
                }
                acc[v] = a;
            }
        }
        for (b = 0; b < nb; ++b) {
            __m512 s = _mm512_load_ps(p->rg.init + 16 * b);
            for (e = p->rg.first[b]; e < p->rg.first[b + 1]; ++e) {
                const __m512i idx = _mm512_load_si512((const void*)(p->rg.idx + 16 * (uint64_t)e));
                const uint32_t qv = p->rg.q[e];
                s = _mm512_mask_add_ps(s, (__mmask16)p->rg.m[e], s, _mm512_permutex2var_ps(acc[qv], idx, acc[qv + 1]));
            }
            reg_store(p, ybase, b, _mm512_mul_ps(s, _mm512_load_ps(inv + 16 * b)), half);
        }
        if (++q == per_plane) {
            q = 0;
            if (++c == p->C) {
                c = 0;
                ++n;
            }
            xplane = p->x + (n * p->xs_n + c * p->xs_c) * esize;
            yplane = n * p->ys_n + c * p->ys_c;
        }
    }
}

static void run_wide(const pool_plan* p, uint64_t begin, uint64_t end, int half) {
    switch (p->rg.nv) {
    case 3: wide_rows_t(p, begin, end, half, 3); break;
    case 4: wide_rows_t(p, begin, end, half, 4); break;
    case 5: wide_rows_t(p, begin, end, half, 5); break;
    case 6: wide_rows_t(p, begin, end, half, 6); break;
    case 7: wide_rows_t(p, begin, end, half, 7); break;
    case 8: wide_rows_t(p, begin, end, half, 8); break;
    default: wide_rows_t(p, begin, end, half, 0); break;
    }
}

/* Output rows [begin, end). Per row: the vertical sum (valid taps (kd, kh) in increasing order) of the
 * input row in registers, then per block of 16 outputs the W taps in increasing k, each a lane
 * permutation of the row added under the mask of the lanes whose tap is on input. The W sums start at
 * -0.0, the exact additive identity (-0.0 + x == x for every x), so every sum equals the row path's
 * (first tap, then the others added in order); outputs without any W tap start at +0.0 (the row path's
 * zero sum). */
static void run_reg(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    const pool_plan* p = (const pool_plan*)vp;
    (void)worker;
    if (p->rg.nv > 2) {
        if (p->half) {
            run_wide(p, begin, end, 1);
        } else {
            run_wide(p, begin, end, 0);
        }
    } else if (p->half) {
        if (p->rg.pack) {
            narrow_rows_t(p, begin, end, 1, 0, 1);
        } else if (p->rg.nv == 2) {
            narrow_rows_t(p, begin, end, 1, 1, 0);
        } else {
            narrow_rows_t(p, begin, end, 1, 0, 0);
        }
    } else if (p->rg.pack) {
        narrow_rows_t(p, begin, end, 0, 0, 1);
    } else if (p->rg.nv == 2) {
        narrow_rows_t(p, begin, end, 0, 1, 0);
    } else {
        narrow_rows_t(p, begin, end, 0, 0, 0);
    }
}

/* Blocks [begin, end) of 16 channels (block b: image b / ceil(C / 16)): the whole-plane average of each, the
 * column sums (taps down the column in increasing (kd, kh)) added in increasing kw from -0.0, times the
 * reciprocal of the plane size, as run_reg sums it. */
static void run_global(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    const pool_plan* p = (const pool_plan*)vp;
    const uint64_t blocks = (p->C + 15) / 16;
    const __m512i lane = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                            _mm512_set1_epi32((int)p->xs_c));
    const __m512 inv = _mm512_set1_ps(reciprocal(p->in[0] * p->in[1], p->in[2]));
    uint64_t b;
    (void)worker;
    for (b = begin; b < end; ++b) {
        const uint64_t n = b / blocks, c0 = b % blocks * 16, count = p->C - c0 < 16 ? p->C - c0 : 16;
        const __mmask16 m = tail_mask(count);
        const float* base = (const float*)p->x + n * p->xs_n + c0 * p->xs_c;
        __m512 s = _mm512_set1_ps(-0.0f);
        uint64_t d, h, w;
        for (w = 0; w < p->in[2]; ++w) {
            __m512 col = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, lane, base + w * p->xs[2], 4);
            for (d = 0; d < p->in[0]; ++d) {
                for (h = 0; h < p->in[1]; ++h) {
                    if (d == 0 && h == 0) continue;
                    col = _mm512_add_ps(col, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, lane, base + d * p->xs[0] + h * p->xs[1] + w * p->xs[2], 4));
                }
            }
            s = _mm512_add_ps(s, col);
        }
        s = _mm512_mul_ps(s, inv);
        if (p->ys_c == 1) {
            store16(p->y, n * p->ys_n + c0, s, m, 0, 1);
        } else {
            float t[16];
            uint64_t j;
            _mm512_storeu_ps(t, s);
            for (j = 0; j < count; ++j) store_one(p, n * p->ys_n + (c0 + j) * p->ys_c, t[j]);
        }
    }
}
#endif

/* Whether the global path takes the call: FLOAT32 (AVX-512), one output per plane whose window is the whole
 * plane (no padding, dilation 1 where the window is longer than 1), at most POOL_GLOBAL_MAX elements a plane, and
 * 16 channels' input offsets in 32 bits. */
static int global_path_fits(const pool_plan* p) {
#if defined(POOL_AVX512)
    int d;
    if (p->half || p->in[0] * p->in[1] * p->in[2] > POOL_GLOBAL_MAX || p->xs_c > (uint64_t)INT32_MAX / 16) return 0;
    for (d = 0; d < 3; ++d) {
        if (p->out[d] != 1 || p->win[d] != p->in[d] || p->sp[d] != 0 || p->ep[d] != 0 || (p->in[d] > 1 && p->dil[d] != 1)) return 0;
    }
    return 1;
#else
    (void)p;
    return 0;
#endif
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

#if defined(POOL_AVX512)
/* W tap k of output block b as register path entries: the lanes whose tap is on input, grouped by the pair
 * of adjacent input vectors (q, q + 1) that holds their columns (always q = 0 with at most two vectors).
 * Writes them from index e; returns how many, or UINT32_MAX when there are more than `room`. */
static uint32_t reg_entries(const pool_plan* p, uint32_t b, uint64_t k, int pack, uint32_t e, uint32_t room,
                            int32_t* idx, uint16_t* masks, uint16_t* qs) {
    const uint64_t OW = p->out[2];
    uint64_t pos[16];
    uint32_t j, count = 0;
    uint16_t left = 0;
    for (j = 0; j < 16; ++j) {
        const uint64_t o = 16 * (uint64_t)b + (pack ? j % 8 : j);
        pos[j] = 0;
        if (o < OW && p->taps[2][o].k0 <= k && k < p->taps[2][o].k1) {
            pos[j] = tap_pos(p, 2, o, k);
            if (pos[j] >= p->cols) return UINT32_MAX; /* cannot happen: cols bounds every valid tap */
            left = (uint16_t)(left | (1u << j));
        }
    }
    while (left != 0) {
        uint64_t lo = UINT64_MAX, q;
        uint16_t m = 0;
        for (j = 0; j < 16; ++j) {
            if ((left >> j & 1u) && pos[j] < lo) lo = pos[j];
        }
        q = p->rg.nv <= 2 ? 0 : lo / 16;
        if (q >= p->rg.nv) return UINT32_MAX; /* cannot happen: lo < cols <= 16 nv */
        for (j = 0; j < 16; ++j) {
            if ((left >> j & 1u) && pos[j] < 16 * q + 32) m = (uint16_t)(m | (1u << j));
        }
        left = (uint16_t)(left & ~m);
        if (count == room) return UINT32_MAX;
        {
            for (j = 0; j < 16; ++j) {
                /* Packed: lanes 8..15 take the second row's register (indices 16..31). */
                idx[16 * (size_t)(e + count) + j] =
                    (m >> j & 1u) ? (int32_t)(pos[j] - 16 * q) + (pack && j >= 8 ? 16 : 0) : 0;
            }
            masks[e + count] = m;
            qs[e + count] = (uint16_t)q;
        }
        ++count;
    }
    return count;
}

/* Builds the register path's tables when they fit (then sets p->path = PATH_REG); *block receives the
 * allocation to free. Needs the per-dim tables and p->cols. */
static int32_t reg_setup(pool_plan* p, void** block) {
    const uint64_t OW = p->out[2], per_plane = p->out[0] * p->out[1];
    const uint64_t esize = p->half ? 2 : 4;
    const uint32_t nb = (uint32_t)((OW + 15) / 16);
    const uint32_t nv = p->cols <= 16 ? 1u : (uint32_t)((p->cols + 15) / 16);
    uint64_t kmin[POOL_REG_BLOCKS], kmax[POOL_REG_BLOCKS], k, q, od, oh, divs[POOL_REG_INVS];
    uint64_t span = 0, per_tap;
    uint32_t b, j, count, e, ninv = 0, ninv_max, d;
    int pack;
    char* mem;
    int32_t* idx;
    uint16_t *masks, *qs, *out_mask;
    uint32_t* first;
    float *init, *inv;
    narrow_row* rows;

    *block = NULL;
    if (p->cols > 16 * (uint64_t)POOL_REG_VECS || nb == 0 || nb > POOL_REG_BLOCKS || per_plane > POOL_REG_ROWS) {
        return DMLPY_OK;
    }
    p->rg.nv = nv;
    pack = OW <= 8 && nv == 1;
    for (b = 0; b < nb; ++b) {
        int any = 0;
        kmin[b] = kmax[b] = 0;
        for (j = 0; j < 16 && 16 * b + j < OW; ++j) {
            const pool_taps* t = &p->taps[2][16 * b + j];
            if (t->k0 >= t->k1) continue;
            if (!any || t->k0 < kmin[b]) kmin[b] = t->k0;
            if (!any || t->k1 > kmax[b]) kmax[b] = t->k1;
            any = 1;
        }
        if (kmax[b] - kmin[b] > POOL_REG_KSPAN) return DMLPY_OK;
        span += kmax[b] - kmin[b];
    }
    /* At most this many entries: per tap, one (two vectors or less) or one per 16 columns the 16 lanes'
     * taps spread over, plus one. */
    per_tap = nv <= 2 ? 1 : p->str[2] >= 16 ? 16 : 2 + (15 * p->str[2]) / 16;
    count = (uint32_t)(span * per_tap);
    if (span * per_tap > POOL_REG_ENTRIES) return DMLPY_OK;
    ninv_max = per_plane < POOL_REG_INVS ? (uint32_t)per_plane : POOL_REG_INVS;

    /* idx (64-byte rows), init, inv (64 bytes per block and row divisor), rows, first, masks, qs, out_mask. */
    mem = (char*)malloc((size_t)count * 64 + (size_t)nb * 64 * (1 + ninv_max) +
                        (size_t)per_plane * sizeof(narrow_row) + (nb + 1) * sizeof(uint32_t) + (size_t)count * 4 +
                        nb * 2 + 64);
    if (mem == NULL) return DMLPY_E_OUT_OF_MEMORY;
    *block = mem;
    idx = (int32_t*)(((uintptr_t)mem + 63) & ~(uintptr_t)63);
    init = (float*)(idx + 16 * (size_t)count);
    inv = init + 16 * (size_t)nb;
    rows = (narrow_row*)(inv + 16 * (size_t)nb * ninv_max);
    first = (uint32_t*)(rows + per_plane);
    masks = (uint16_t*)(first + nb + 1);
    qs = masks + count;
    out_mask = qs + count;

    /* Rows of one (n, c) plane: input offset of the first valid tap row, tap counts, the index of the row
     * divisor (D and H factors multiplied) among the distinct ones, joint runs. */
    q = 0;
    for (od = 0; od < p->out[0]; ++od) {
        const pool_taps* td = &p->taps[0][od];
        for (oh = 0; oh < p->out[1]; ++oh, ++q) {
            const pool_taps* th = &p->taps[1][oh];
            const uint64_t rowdiv = (uint64_t)td->div * th->div;
            narrow_row* t = &rows[q];
            for (d = 0; d < ninv && divs[d] != rowdiv; ++d) {
            }
            if (d == ninv) {
                if (ninv == ninv_max) {
                    free(mem);
                    *block = NULL;
                    return DMLPY_OK;
                }
                divs[ninv++] = rowdiv;
            }
            t->inv = d;
            t->yoff = od * p->ys[0] + oh * p->ys[1];
            t->xoff = 0;
            t->nd = t->nh = 0;
            t->joint = 0;
            if (td->k0 < td->k1 && th->k0 < th->k1) {
                t->nd = td->k1 - td->k0;
                t->nh = th->k1 - th->k0;
                t->xoff = (tap_pos(p, 0, od, td->k0) * p->xs[0] + tap_pos(p, 1, oh, th->k0) * p->xs[1]) * esize;
            }
        }
    }
    /* joint: the length (at most 8) of the run of rows from q with the same nd (nonzero), nh and inv. */
    for (q = per_plane; q-- > 0;) {
        const narrow_row* t = &rows[q];
        rows[q].joint = t->nd == 0 ? 0
                        : q + 1 < per_plane && t[1].nd == t->nd && t[1].nh == t->nh && t[1].inv == t->inv
                            ? (t[1].joint < 8 ? t[1].joint + 1 : 8)
                            : 1;
    }

    e = 0;
    for (b = 0; b < nb; ++b) {
        first[b] = e;
        for (j = 0; j < 16; ++j) {
            const uint64_t o = 16 * (uint64_t)b + (pack ? j % 8 : j);
            init[16 * b + j] = 0.0f;
            for (d = 0; d < ninv; ++d) inv[(size_t)d * 16 * nb + 16 * b + j] = 1.0f;
            if (o < OW) {
                const pool_taps* t = &p->taps[2][o];
                if (t->k0 < t->k1) init[16 * b + j] = -0.0f;
                for (d = 0; d < ninv; ++d) inv[(size_t)d * 16 * nb + 16 * b + j] = reciprocal(divs[d], t->div);
            }
        }
        for (k = kmin[b]; k < kmax[b]; ++k) {
            const uint32_t added = reg_entries(p, b, k, pack, e, count - e, idx, masks, qs);
            if (added == UINT32_MAX) { /* cannot happen: count bounds the entries */
                free(mem);
                *block = NULL;
                return DMLPY_OK;
            }
            e += added;
        }
        out_mask[b] = (uint16_t)(OW - 16 * b >= 16 ? 0xFFFFu : (1u << (OW - 16 * b)) - 1u);
    }
    first[nb] = e;

    p->rg.nb = nb;
    p->rg.pack = (uint32_t)pack;
    p->rg.last_mask = (uint16_t)(p->cols == 0 ? 0u : p->cols % 16 == 0 ? 0xFFFFu : (1u << (p->cols % 16)) - 1u);
    p->rg.first = first;
    p->rg.out_mask = out_mask;
    p->rg.idx = idx;
    p->rg.m = masks;
    p->rg.q = qs;
    p->rg.init = init;
    p->rg.inv = inv;
    p->rg.rows = rows;
    p->path = PATH_REG;
    return DMLPY_OK;
}
#endif

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
    dmlpy_staged_output stage;
    void* scratch_block = NULL;
    void* reg_block = NULL;
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
    st = dmlpy_output_stage(&yt, &stage);
    if (st != DMLPY_OK) return st;

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

    /* Pick the path. The scratch-based paths need every per-dim table and row buffer to be modest. */
    table_len = p.out[0] + p.out[1] + OW;
    if (global_path_fits(&p)) {
        p.path = PATH_GLOBAL;
    } else if (table_len > 3 * POOL_SCRATCH_CAP) {
        p.path = PATH_DIRECT;
    } else if (p.xs_c == 1 && p.xs[2] != 1 && p.C >= 8 && p.C <= POOL_SCRATCH_CAP) {
        p.path = PATH_CHANNEL;
    } else if (p.in[2] <= POOL_SCRATCH_CAP && OW <= POOL_SCRATCH_CAP) {
        p.path = PATH_ROW;
    } else {
        p.path = PATH_DIRECT;
    }

    if (p.path != PATH_DIRECT && p.path != PATH_GLOBAL) {
        uint64_t o, cols = 0, ow_a = 0, ow_b = 0;
        int d, seen_full = 0;
        pool_taps* t;
        tables = (pool_taps*)malloc((size_t)table_len * sizeof(pool_taps));
        if (tables == NULL) {
            dmlpy_output_unstage(&stage, 0);
            return DMLPY_E_OUT_OF_MEMORY;
        }
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
#if defined(POOL_AVX512) && !defined(DMLPY_POOL_NO_REG)
        if (p.path == PATH_ROW && p.xs[2] == 1) {
            st = reg_setup(&p, &reg_block);
            if (st != DMLPY_OK) {
                free(tables);
                dmlpy_output_unstage(&stage, 0);
                return st;
            }
        }
#endif
    }

    /* Work estimate in vectorised element operations (scalar loops count 8 per element), and threads. */
    {
        double taps_v = (double)p.win[0] * (double)p.win[1];
        double est;
        if (p.path == PATH_GLOBAL) {
            /* per block of 16 channels, one gather (about 4 vector operations) and one add per tap */
            items = p.N * ((p.C + 15) / 16);
            est = 80.0 * (double)items * (double)(p.in[0] * p.in[1] * p.in[2]);
        } else if (p.path == PATH_REG) {
            /* Per output row: the row loads and adds, the W tap permutes and adds, the scale and store,
             * about one 16-lane vector operation each. */
            items = p.N * p.C * p.out[0] * p.out[1];
            est = 16.0 * (double)items *
                  (taps_v * (double)p.rg.nv + 2.0 * (double)p.rg.first[p.rg.nb] + 3.0 * (double)p.rg.nb);
        } else if (p.path == PATH_CHANNEL) {
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
    threads = dmlpy_choose_threads(work, items, threadCount);
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
            free(reg_block);
            free(tables);
            dmlpy_output_unstage(&stage, 0);
            return DMLPY_E_OUT_OF_MEMORY;
        }
        p.scratch = (char*)(((uintptr_t)scratch_block + 63) & ~(uintptr_t)63);
        p.scratch_stride = (size_t)per_worker;
    }

    {
        dmlpy_range_fn fn = p.path == PATH_ROW ? run_rows : p.path == PATH_CHANNEL ? run_pixels : run_direct;
#if defined(POOL_AVX512)
        if (p.path == PATH_REG) fn = run_reg;
        if (p.path == PATH_GLOBAL) fn = run_global;
#endif
        dmlpy_parallel_for(items, grain, threads, fn, &p);
    }

    free(reg_block);
    free(scratch_block);
    free(tables);
    dmlpy_output_unstage(&stage, 1);
    return DMLPY_OK;
}
