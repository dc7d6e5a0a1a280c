/*
 * reduction.c - REDUCE (55, every DML_REDUCE_FUNCTION), ARGMIN (137), ARGMAX (138), ACTIVATION_HARDMAX (36)
 * and ACTIVATION_HARDMAX1 (160).
 *
 * Semantics (DirectML's pages; docs/deviations.md, "Reductions and top-k" and "Activations"), those of the
 * NumPy kernels in dmlpy/operators/reduction.py and activation.py:
 *   REDUCE               each output element reduces the input elements of its row (the reduced axes: Axes,
 *                        each once); SUM, AVERAGE, L1, L2, SUM_SQUARE, MULTIPLY, LOG_SUM, LOG_SUM_EXP
 *                        (max + log(sum(exp(x - max)))), MIN, MAX, ARGMIN, ARGMAX (INCREASING)
 *   ARGMIN, ARGMAX       the position of the row's first (DECREASING: last) smallest or largest element,
 *                        counted row-major over the reduced axes in dimension order; a number beats a NaN
 *                        and a row of NaNs gives its first (last) position
 *   MIN, MAX             the value at ARGMIN's / ARGMAX's INCREASING position (so -0 and +0 come out as the
 *                        first of them, a row of NaNs as its first NaN)
 *   HARDMAX, HARDMAX1    1 at the first maximum, 0 elsewhere; the scan starts at the row's first element and
 *                        moves only to a greater one, so a NaN is chosen only as the first element (HARDMAX:
 *                        the last dimension, HARDMAX1: Axes)
 * Floating types compute in the NumPy kernel's working types (FLOAT32 in double, FLOAT16 in float: converted
 * on load, rounded once on store), but for FLOAT32's SUM, AVERAGE, L1, SUM_SQUARE and LOG_SUM (red_in_float):
 * float32 sums of a few terms each, added in double, and the row or block again in double when its result is
 * not finite. Integers compute in 64-bit two's complement, which wraps as the type's own
 * arithmetic does once the result is truncated to the type (SUM, MULTIPLY, L1, SUM_SQUARE), and compare as
 * keys ordered like the type (the unsigned ones with the top bit flipped).
 *
 * One loop serves them all. The input's dimensions split into kept ones (which output element) and reduced
 * ones (where in its row); size-1 dimensions are dropped and neighbours of a class merged where every tensor
 * is contiguous across them. Two shapes of work, chosen from the layout alone:
 *   rows     (the innermost kept dimension is not packed in the input): each work item is one output element,
 *            its row walked in chunks of RED_CHUNK (in place for a packed FLOAT32 row, else gathered); a chunk
 *            sums in interleaved lanes combined as a tree (reduction_acc.h: 32 doubles or 64 floats), and
 *            chunks add in order (FLOAT32's in double; a packed FLOAT32 row of one chunk, the 49 floats of a 7x7 global
 *            pool, runs in a loop of its function alone: red_rows); MIN/MAX/ARG/HARDMAX take two exact passes
 *            (the extreme ignoring NaN, then the first or last position holding it);
 *   columns  (the innermost kept dimension has input stride 1 and the row is not packed, e.g. axis 1 of
 *            12x197x197 or H and W of an NHWC tensor): each work item is a block of RED_BLOCK neighbouring
 *            output elements (the last block of a run takes the rest, up to 2 * RED_BLOCK - 1), the reduced
 *            positions walked in row-major order, every output accumulating its own terms in that order
 *            (vectorised across the block, the outputs in registers; red_in_float's in float32 over spans
 *            of RED_COL_SPAN positions, each span's sum added to a double).
 * Sums start from +0, as NumPy's do: a row of -0 sums to +0 (the padding of a partial vector is -0, which
 * leaves every sum as it is). The lanes are vectors of the target's width but an element's lane does not
 * depend on it: every instruction set gives the same bytes, except that `acc + x * x` (SUM_SQUARE, L2) may be
 * fused where the target has FMA.
 * Items run in parallel (parallel.c); each output element is computed by one thread in a fixed order, so the
 * thread count changes no bit. Sums differ from the NumPy kernel's pairwise sums by rounding only:
 * docs/deviations.md states the bound (tests/operators/test_reduction_native.py checks it); integer results,
 * MIN, MAX, ARGMIN, ARGMAX and HARDMAX are exact.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dmlpy_internal.h"
#include "half.h"

#define RED_CHUNK 256
#define RED_BLOCK 128 /* columns: a block has RED_BLOCK outputs, the last of a run up to 2 * RED_BLOCK - 1 */
#define RED_LANES 16 /* the exact passes (extremes, finding them) */
#if defined(__GNUC__) || defined(__clang__)
#define RED_INLINE static inline __attribute__((always_inline))
#define RED_PREFETCH(p) __builtin_prefetch(p)
#else
#define RED_INLINE static inline
#define RED_PREFETCH(p) ((void)(p))
#endif

/* With GCC or Clang the lanes are vectors of the target's width (vector extensions: SSE2, AVX2 or AVX-512
 * registers); the lane of an element does not depend on the width, so every instruction set gives the same
 * sums. Elsewhere plain arrays serve. */
#if defined(__GNUC__) || defined(__clang__)
#define RED_VEC 1
#if defined(__AVX512F__)
#define RED_VB 64
#elif defined(__AVX__)
#define RED_VB 32
#else
#define RED_VB 16
#endif
#define RED_NF (RED_VB / 4) /* floats per vector */
#define RED_ND (RED_VB / 8) /* doubles per vector */
typedef float red_vf __attribute__((vector_size(RED_VB)));
typedef int32_t red_vi __attribute__((vector_size(RED_VB)));
typedef double red_vd __attribute__((vector_size(RED_VB)));
typedef int64_t red_vl __attribute__((vector_size(RED_VB)));
typedef float red_vh __attribute__((vector_size(RED_VB / 2))); /* the floats that widen to one red_vd */
/* Macros rather than functions: a vector passed by value draws GCC's notes on the vector ABI. */
#define RED_VSELECT(m, a, b) ((red_vf)(((m) & (red_vi)(a)) | (~(m) & (red_vi)(b))))
/* dst (red_vd) = the RED_ND floats at p, widened (exact). GCC 12 lowers __builtin_convertvector of a whole
 * 512-bit vector to halves extracted and inserted again; the instruction set's load-and-widen is one. */
#if defined(__AVX512F__)
#include <immintrin.h>
#define RED_WIDEN(dst, p) (dst = (red_vd)_mm512_cvtps_pd(_mm256_loadu_ps(p)))
#elif defined(__AVX__)
#include <immintrin.h>
#define RED_WIDEN(dst, p) (dst = (red_vd)_mm256_cvtps_pd(_mm_loadu_ps(p)))
#else
#define RED_WIDEN(dst, p)                              \
    do {                                               \
        red_vh h_;                                     \
        memcpy(&h_, (p), sizeof h_);                   \
        dst = __builtin_convertvector(h_, red_vd);     \
    } while (0)
#endif
/* dst = the c (0 <= c <= lanes) values at p, then `pad` in the other lanes; nothing beyond p + c is read. */
#define RED_PART_ANY(vt, dst, p, c, pad)                                    \
    do {                                                                    \
        size_t e_;                                                          \
        dst = (vt){0} + (pad);                                              \
        for (e_ = 0; e_ < (size_t)(c); ++e_) dst[e_] = (p)[e_];             \
    } while (0)
#if defined(__AVX512F__)
#define RED_WIDEN_PART(dst, p, c, pad)                                                                        \
    do {                                                                                                      \
        const __mmask8 m_ = (__mmask8)((1u << (c)) - 1u);                                                     \
        dst = (red_vd)_mm512_mask_cvtps_pd(_mm512_set1_pd((double)(pad)), m_, _mm256_maskz_loadu_ps(m_, p)); \
    } while (0)
#elif defined(__AVX2__)
#define RED_WIDEN_PART(dst, p, c, pad)                                                                       \
    do {                                                                                                     \
        const __m128i m_ = _mm_cmpgt_epi32(_mm_set1_epi32((int)(c)), _mm_setr_epi32(0, 1, 2, 3));            \
        dst = (red_vd)_mm256_blendv_pd(_mm256_set1_pd((double)(pad)), _mm256_cvtps_pd(_mm_maskload_ps(p, m_)), \
                                       _mm256_castsi256_pd(_mm256_cvtepi32_epi64(m_)));                      \
    } while (0)
#else
#define RED_WIDEN_PART(dst, p, c, pad) RED_PART_ANY(red_vd, dst, p, c, pad)
#endif
#if defined(__AVX512F__)
#define RED_LOAD_PART(dst, p, c, pad) \
    (dst = (red_vf)_mm512_mask_loadu_ps(_mm512_set1_ps(pad), (__mmask16)((1u << (c)) - 1u), p))
#elif defined(__AVX2__)
#define RED_LOAD_PART(dst, p, c, pad)                                                                      \
    do {                                                                                                   \
        const __m256i m_ = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(c)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)); \
        dst = (red_vf)_mm256_blendv_ps(_mm256_set1_ps(pad), _mm256_maskload_ps(p, m_), _mm256_castsi256_ps(m_)); \
    } while (0)
#else
#define RED_LOAD_PART(dst, p, c, pad) RED_PART_ANY(red_vf, dst, p, c, pad)
#endif
#endif

enum { RK_REDUCE, RK_ARG, RK_HARDMAX };
enum { RT_F32, RT_F16, RT_INT };

typedef struct red_plan {
    int kind;                /* RK_* */
    int func;                /* DML_REDUCE_FUNCTION (RK_REDUCE) */
    int by_index;            /* the result comes from a position: ARG, MIN, MAX, HARDMAX */
    int largest, last;       /* which extreme; the last of equal ones (ARG DECREASING) */
    int in_kind, in_signed;  /* RT_*; a signed integer type */
    DML_TENSOR_DATA_TYPE in_type, out_type;
    uint32_t in_bytes, out_bytes;
    uint32_t kr, rr;         /* kept / reduced dims after merging (at least 1 each) */
    uint64_t ksz[DMLPY_MAX_RANK], rsz[DMLPY_MAX_RANK];
    uint64_t xk[DMLPY_MAX_RANK], xr[DMLPY_MAX_RANK]; /* input element strides over kept / reduced dims */
    uint64_t yk[DMLPY_MAX_RANK], yr[DMLPY_MAX_RANK]; /* output's (yr: HARDMAX only, else 0) */
    uint64_t row_len, rows;
    int row_packed;          /* one reduced dim of input stride 1 */
    int short_sum;           /* FLOAT32 packed rows of at most RED_CHUNK, a sum but LOG_SUM_EXP: red_rows' short cut */
    int column;              /* the columns shape (above) */
    uint64_t inner, blocks;  /* columns: the innermost kept dim's size and its blocks of RED_BLOCK */
    const char* x;
    char* y;
} red_plan;

/* ---- element access -------------------------------------------------------------------------------- */

static inline float red_getf(const red_plan* p, uint64_t o) {
    return p->in_kind == RT_F16 ? dmlpy_h2f(((const uint16_t*)p->x)[o]) : ((const float*)p->x)[o];
}

/* An integer element as a 64-bit two's complement value (sign- or zero-extended). */
static inline uint64_t red_geti(const red_plan* p, uint64_t o) {
    switch (p->in_type) {
    case DML_TENSOR_DATA_TYPE_INT8: return (uint64_t)(int64_t)((const int8_t*)p->x)[o];
    case DML_TENSOR_DATA_TYPE_UINT8: return ((const uint8_t*)p->x)[o];
    case DML_TENSOR_DATA_TYPE_INT16: return (uint64_t)(int64_t)((const int16_t*)p->x)[o];
    case DML_TENSOR_DATA_TYPE_UINT16: return ((const uint16_t*)p->x)[o];
    case DML_TENSOR_DATA_TYPE_INT32: return (uint64_t)(int64_t)((const int32_t*)p->x)[o];
    case DML_TENSOR_DATA_TYPE_UINT32: return ((const uint32_t*)p->x)[o];
    default: return ((const uint64_t*)p->x)[o]; /* INT64, UINT64 */
    }
}

/* An ordering key: signed comparison of keys orders the values of the type. */
static inline int64_t red_key(const red_plan* p, uint64_t v) {
    return (int64_t)(p->in_signed ? v : v ^ 0x8000000000000000ull);
}

static void red_store_u(const red_plan* p, uint64_t o, uint64_t v) {
    switch (p->out_bytes) {
    case 1: ((uint8_t*)p->y)[o] = (uint8_t)v; break;
    case 2: ((uint16_t*)p->y)[o] = (uint16_t)v; break;
    case 4: ((uint32_t*)p->y)[o] = (uint32_t)v; break;
    default: ((uint64_t*)p->y)[o] = v; break;
    }
}

static void red_store_f(const red_plan* p, uint64_t o, double v) {
    if (p->out_type == DML_TENSOR_DATA_TYPE_FLOAT16) {
        ((uint16_t*)p->y)[o] = dmlpy_f2h((float)v);
    } else {
        ((float*)p->y)[o] = (float)v;
    }
}

/* The reduced positions in row-major order: offsets into the input (ox) and, for HARDMAX, the output (oy). */
typedef struct red_odo {
    uint64_t idx[DMLPY_MAX_RANK];
    uint64_t ox, oy;
} red_odo;

static void red_odo_seek(const red_plan* p, red_odo* o, uint64_t j) {
    uint32_t i;
    o->ox = o->oy = 0;
    for (i = p->rr; i-- > 0;) {
        o->idx[i] = j % p->rsz[i];
        j /= p->rsz[i];
        o->ox += o->idx[i] * p->xr[i];
        o->oy += o->idx[i] * p->yr[i];
    }
}

static inline void red_odo_step(const red_plan* p, red_odo* o) {
    uint32_t i;
    for (i = p->rr; i-- > 0;) {
        o->ox += p->xr[i];
        o->oy += p->yr[i];
        if (++o->idx[i] < p->rsz[i]) return;
        o->ox -= o->idx[i] * p->xr[i];
        o->oy -= o->idx[i] * p->yr[i];
        o->idx[i] = 0;
    }
}

/* The offsets of kept element `row` (row-major over the kept dims). */
static void red_row_offsets(const red_plan* p, uint64_t row, uint64_t* xo, uint64_t* yo) {
    uint32_t i;
    *xo = *yo = 0;
    for (i = p->kr; i-- > 0;) {
        const uint64_t k = row % p->ksz[i];
        row /= p->ksz[i];
        *xo += k * p->xk[i];
        *yo += k * p->yk[i];
    }
}

/* Row elements [j0, j0 + n) as floats: in place for a packed FLOAT32 row, else converted or gathered into buf. */
static inline const float* red_load_f(const red_plan* p, uint64_t off, uint64_t j0, size_t n, float* buf) {
    red_odo o;
    size_t j;
    if (p->row_packed) {
        if (p->in_kind == RT_F32) return (const float*)p->x + off + j0;
        dmlpy_h2f_row(buf, (const uint16_t*)p->x + off + j0, n);
        return buf;
    }
    red_odo_seek(p, &o, j0);
    for (j = 0; j < n; ++j) {
        buf[j] = red_getf(p, off + o.ox);
        red_odo_step(p, &o);
    }
    return buf;
}

/* Row elements [j0, j0 + n) of an integer tensor: their values (keys = 0) or their ordering keys. */
static void red_load_i(const red_plan* p, uint64_t off, uint64_t j0, size_t n, uint64_t* buf, int keys) {
    red_odo o;
    size_t j;
    red_odo_seek(p, &o, j0);
    for (j = 0; j < n; ++j) {
        const uint64_t v = red_geti(p, off + o.ox);
        buf[j] = keys ? (uint64_t)red_key(p, v) : v;
        red_odo_step(p, &o);
    }
}

/* ---- the working-type sums (reduction_acc.h, once per type) ------------------------------------------ */

#define RW double
#define RW_FN(name) name##_d
#define RW_LANES 32
#define RW_EXP exp
#define RW_LOG log
#define RW_SQRT sqrt
#define RW_ABS fabs
#if defined(RED_VEC)
#define RW_V red_vd
#define RW_NV RED_ND
#define RW_VLOAD(dst, p) RED_WIDEN(dst, p)
#define RW_VLOAD_PART(dst, p, c, pad) RED_WIDEN_PART(dst, p, c, pad)
#define RW_VABS(x) ((red_vd)((red_vl)(x) & 0x7FFFFFFFFFFFFFFFll))
#endif
#include "reduction_acc.h" /* it undefines the RW_* parameters */

#define RW float
#define RW_FN(name) name##_f
#define RW_LANES 64
#define RW_EXP expf
#define RW_LOG logf
#define RW_SQRT sqrtf
#define RW_ABS fabsf
#if defined(RED_VEC)
#define RW_V red_vf
#define RW_NV RED_NF
#define RW_VLOAD(dst, p) memcpy(&(dst), (p), sizeof(red_vf))
#define RW_VLOAD_PART(dst, p, c, pad) RED_LOAD_PART(dst, p, c, pad)
#define RW_VABS(x) ((red_vf)((red_vi)(x) & 0x7FFFFFFF))
#endif
#include "reduction_acc.h" /* it undefines the RW_* parameters */

/* FLOAT32 functions whose sums add in float32 within blocks (a row chunk's lanes, a column's RED_COL_SPAN
 * positions) and in double across them: the terms cannot lose more than the bound docs/deviations.md states
 * (L2's square root would turn the sum of squares' underflow into a relative error; MULTIPLY and LOG_SUM_EXP
 * stay in double). A result that is not finite is computed again in double, so float32's range never shows. */
static int red_in_float(int func) {
    return func == DML_REDUCE_FUNCTION_SUM || func == DML_REDUCE_FUNCTION_AVERAGE || func == DML_REDUCE_FUNCTION_L1 ||
           func == DML_REDUCE_FUNCTION_SUM_SQUARE || func == DML_REDUCE_FUNCTION_LOG_SUM;
}

/* ---- exact passes over a chunk ---------------------------------------------------------------------- */

/* The largest (smallest) of m and v[0..n), NaNs skipped; lanes, as the maximum is exact in any order. */
static float red_extreme_f(const float* v, size_t n, int largest, float m) {
    float acc[RED_LANES];
    size_t i = 0, k;
    for (k = 0; k < RED_LANES; ++k) acc[k] = m;
#if defined(RED_VEC)
    {
        red_vf vm[RED_LANES / RED_NF];
        for (k = 0; k < RED_LANES / RED_NF; ++k) vm[k] = (red_vf){0} + m;
        if (largest) {
            for (; i + RED_LANES <= n; i += RED_LANES) {
                for (k = 0; k < RED_LANES / RED_NF; ++k) {
                    red_vf x;
                    memcpy(&x, v + i + k * RED_NF, sizeof x);
                    vm[k] = RED_VSELECT(x > vm[k], x, vm[k]);
                }
            }
        } else {
            for (; i + RED_LANES <= n; i += RED_LANES) {
                for (k = 0; k < RED_LANES / RED_NF; ++k) {
                    red_vf x;
                    memcpy(&x, v + i + k * RED_NF, sizeof x);
                    vm[k] = RED_VSELECT(x < vm[k], x, vm[k]);
                }
            }
        }
        memcpy(acc, vm, sizeof vm);
    }
#endif
    if (largest) {
        for (; i + RED_LANES <= n; i += RED_LANES) {
            for (k = 0; k < RED_LANES; ++k) acc[k] = v[i + k] > acc[k] ? v[i + k] : acc[k];
        }
        for (; i < n; ++i) acc[0] = v[i] > acc[0] ? v[i] : acc[0];
        for (k = 0; k < RED_LANES; ++k) m = acc[k] > m ? acc[k] : m;
    } else {
        for (; i + RED_LANES <= n; i += RED_LANES) {
            for (k = 0; k < RED_LANES; ++k) acc[k] = v[i + k] < acc[k] ? v[i + k] : acc[k];
        }
        for (; i < n; ++i) acc[0] = v[i] < acc[0] ? v[i] : acc[0];
        for (k = 0; k < RED_LANES; ++k) m = acc[k] < m ? acc[k] : m;
    }
    return m;
}

/* The first (last) j with v[j] == e, or -1: whole lane groups tested without branches, then the hit's group. */
/* 1 when v[0..RED_LANES) holds e. */
static inline int red_lanes_hold(const float* v, float e) {
    size_t k;
#if defined(RED_VEC)
    red_vi hit = {0};
    int32_t h[RED_NF];
    int any = 0;
    for (k = 0; k < RED_LANES / RED_NF; ++k) {
        red_vf x;
        memcpy(&x, v + k * RED_NF, sizeof x);
        hit |= x == ((red_vf){0} + e);
    }
    memcpy(h, &hit, sizeof h);
    for (k = 0; k < RED_NF; ++k) any |= h[k];
    return any != 0;
#else
    int hit = 0;
    for (k = 0; k < RED_LANES; ++k) hit |= v[k] == e;
    return hit;
#endif
}

static int64_t red_find_f(const float* v, size_t n, float e, int last) {
    size_t i;
    if (!last) {
        for (i = 0; i + RED_LANES <= n; i += RED_LANES) {
            if (red_lanes_hold(v + i, e)) break;
        }
        for (; i < n; ++i) {
            if (v[i] == e) return (int64_t)i;
        }
        return -1;
    }
    for (i = n; i >= RED_LANES; i -= RED_LANES) {
        if (red_lanes_hold(v + i - RED_LANES, e)) break;
    }
    while (i-- > 0) {
        if (v[i] == e) return (int64_t)i;
    }
    return -1;
}

/* ---- rows ---------------------------------------------------------------------------------------------- */

/* The position the row's result comes from (ARG, MIN, MAX, HARDMAX). */
static uint64_t red_row_index(const red_plan* p, uint64_t off) {
    uint64_t j0, n;
    if (p->in_kind != RT_INT) {
        float buf[RED_CHUNK];
        float e = p->largest ? -INFINITY : INFINITY;
        if (p->kind == RK_HARDMAX && isnan(red_getf(p, off))) return 0; /* a leading NaN: nothing is greater */
        for (j0 = 0; j0 < p->row_len; j0 += n) {
            n = p->row_len - j0 < RED_CHUNK ? p->row_len - j0 : RED_CHUNK;
            e = red_extreme_f(red_load_f(p, off, j0, (size_t)n, buf), (size_t)n, p->largest, e);
        }
        if (!p->last) {
            for (j0 = 0; j0 < p->row_len; j0 += n) {
                int64_t k;
                n = p->row_len - j0 < RED_CHUNK ? p->row_len - j0 : RED_CHUNK;
                k = red_find_f(red_load_f(p, off, j0, (size_t)n, buf), (size_t)n, e, 0);
                if (k >= 0) return j0 + (uint64_t)k;
            }
            return 0; /* only NaNs */
        }
        for (j0 = (p->row_len - 1) / RED_CHUNK * RED_CHUNK;; j0 -= RED_CHUNK) {
            int64_t k;
            n = p->row_len - j0 < RED_CHUNK ? p->row_len - j0 : RED_CHUNK;
            k = red_find_f(red_load_f(p, off, j0, (size_t)n, buf), (size_t)n, e, 1);
            if (k >= 0) return j0 + (uint64_t)k;
            if (j0 == 0) break;
        }
        return p->row_len - 1; /* only NaNs */
    } else {
        uint64_t buf[RED_CHUNK], best = 0;
        int64_t e = 0;
        for (j0 = 0; j0 < p->row_len; j0 += n) {
            uint64_t j;
            n = p->row_len - j0 < RED_CHUNK ? p->row_len - j0 : RED_CHUNK;
            red_load_i(p, off, j0, (size_t)n, buf, 1);
            if (j0 == 0) e = (int64_t)buf[0];
            for (j = 0; j < n; ++j) {
                const int64_t k = (int64_t)buf[j];
                const int take = p->largest ? (p->last ? k >= e : k > e) : (p->last ? k <= e : k < e);
                if (take) {
                    e = k;
                    best = j0 + j;
                }
            }
        }
        return best;
    }
}

static double red_row_value(const red_plan* p, uint64_t off) {
    float buf[RED_CHUNK];
    uint64_t j0, n;
    const int product = p->func == DML_REDUCE_FUNCTION_MULTIPLY;
    float top = -INFINITY;
    if (p->func == DML_REDUCE_FUNCTION_LOG_SUM_EXP) { /* the shift: the largest number (NaN and inf give NaN and inf anyway) */
        for (j0 = 0; j0 < p->row_len; j0 += n) {
            n = p->row_len - j0 < RED_CHUNK ? p->row_len - j0 : RED_CHUNK;
            top = red_extreme_f(red_load_f(p, off, j0, (size_t)n, buf), (size_t)n, 1, top);
        }
        if (!isfinite(top)) top = 0.0f;
    } else {
        top = 0.0f;
    }
    if (p->in_kind == RT_F32 && red_in_float(p->func)) {
        double total = 0.0;
        for (j0 = 0; j0 < p->row_len; j0 += n) {
            n = p->row_len - j0 < RED_CHUNK ? p->row_len - j0 : RED_CHUNK;
            total += (double)red_row_sum_f(p->func, red_load_f(p, off, j0, (size_t)n, buf), (size_t)n, 0.0f);
        }
        if (isfinite(total)) return red_finish_d(p->func, total, 0.0, p->row_len);
    }
    if (p->in_kind == RT_F32) { /* and the float sums that overflowed (or met inf or NaN): again in double */
        double total = product ? 1.0 : 0.0;
        for (j0 = 0; j0 < p->row_len; j0 += n) {
            double c;
            n = p->row_len - j0 < RED_CHUNK ? p->row_len - j0 : RED_CHUNK;
            c = red_row_sum_d(p->func, red_load_f(p, off, j0, (size_t)n, buf), (size_t)n, (double)top);
            total = product ? total * c : total + c;
        }
        return red_finish_d(p->func, total, (double)top, p->row_len);
    } else {
        float total = product ? 1.0f : 0.0f;
        for (j0 = 0; j0 < p->row_len; j0 += n) {
            float c;
            n = p->row_len - j0 < RED_CHUNK ? p->row_len - j0 : RED_CHUNK;
            c = red_row_sum_f(p->func, red_load_f(p, off, j0, (size_t)n, buf), (size_t)n, top);
            total = product ? total * c : total + c;
        }
        return (double)red_finish_f(p->func, total, top, p->row_len);
    }
}

/* SUM, MULTIPLY, L1, SUM_SQUARE of an integer row, modulo 2^64. */
static uint64_t red_int_term(const red_plan* p, uint64_t v) {
    switch (p->func) {
    case DML_REDUCE_FUNCTION_L1: return (p->in_signed && (int64_t)v < 0) ? 0 - v : v;
    case DML_REDUCE_FUNCTION_SUM_SQUARE: return v * v;
    default: return v;
    }
}

static uint64_t red_row_int(const red_plan* p, uint64_t off) {
    uint64_t buf[RED_CHUNK], j0, n, j;
    const int product = p->func == DML_REDUCE_FUNCTION_MULTIPLY;
    uint64_t total = product ? 1u : 0u;
    for (j0 = 0; j0 < p->row_len; j0 += n) {
        n = p->row_len - j0 < RED_CHUNK ? p->row_len - j0 : RED_CHUNK;
        red_load_i(p, off, j0, (size_t)n, buf, 0);
        for (j = 0; j < n; ++j) total = product ? total * buf[j] : total + red_int_term(p, buf[j]);
    }
    return total;
}

/* HARDMAX: 1 at position `at` of the row, 0 elsewhere. */
static void red_write_hardmax_row(const red_plan* p, uint64_t yo, uint64_t at) {
    red_odo o;
    uint64_t j;
    const int half = p->out_type == DML_TENSOR_DATA_TYPE_FLOAT16;
    red_odo_seek(p, &o, 0);
    for (j = 0; j < p->row_len; ++j) {
        if (half) {
            ((uint16_t*)p->y)[yo + o.oy] = j == at ? 0x3C00u : 0u;
        } else {
            ((float*)p->y)[yo + o.oy] = j == at ? 1.0f : 0.0f;
        }
        red_odo_step(p, &o);
    }
}

/* The output element of a row whose result comes from position `at`. */
static void red_write_indexed(const red_plan* p, uint64_t xo, uint64_t yo, uint64_t at) {
    if (p->kind == RK_HARDMAX) {
        red_write_hardmax_row(p, yo, at);
    } else if (p->kind == RK_ARG || p->func == DML_REDUCE_FUNCTION_ARGMIN || p->func == DML_REDUCE_FUNCTION_ARGMAX) {
        red_store_u(p, yo, at);
    } else { /* MIN, MAX: the element itself (the output has the input's type) */
        red_odo o;
        red_odo_seek(p, &o, at);
        memcpy(p->y + yo * p->out_bytes, p->x + (xo + o.ox) * p->in_bytes, p->in_bytes);
    }
}

static void red_row(const red_plan* p, uint64_t xo, uint64_t yo) {
    if (p->by_index) {
        red_write_indexed(p, xo, yo, red_row_index(p, xo));
    } else if (p->in_kind == RT_INT) {
        red_store_u(p, yo, red_row_int(p, xo));
    } else {
        red_store_f(p, yo, red_row_value(p, xo));
    }
}

/* ---- columns --------------------------------------------------------------------------------------------- */

/* The block's values at one reduced position (input offset o, stride 1) as floats. */
static const float* red_block_f(const red_plan* p, uint64_t o, size_t b, float* buf) {
    if (p->in_kind == RT_F32) return (const float*)p->x + o;
    dmlpy_h2f_row(buf, (const uint16_t*)p->x + o, b);
    return buf;
}

/* Per output of the block, the position its result comes from: one scan in row-major order, each output
 * moving to a later position only as the row scan of red_row_index would end there. */
static void red_block_index(const red_plan* p, uint64_t xo, size_t b, uint64_t* at) {
    red_odo o;
    uint64_t pos;
    size_t j;
    const int hard = p->kind == RK_HARDMAX, largest = p->largest, last = p->last;
    red_odo_seek(p, &o, 0);
    if (p->in_kind != RT_INT) {
        float best[2 * RED_BLOCK], buf[2 * RED_BLOCK];
        const float* v = red_block_f(p, xo, b, buf);
        for (j = 0; j < b; ++j) {
            best[j] = v[j];
            at[j] = 0;
        }
        for (pos = 1; pos < p->row_len; ++pos) {
            red_odo_step(p, &o);
            v = red_block_f(p, xo + o.ox, b, buf);
            for (j = 0; j < b; ++j) {
                const float x = v[j], e = best[j];
                int take;
                if (hard) {
                    take = x > e;
                } else if (largest) {
                    take = last ? (x >= e || e != e) : (x > e || (e != e && x == x));
                } else {
                    take = last ? (x <= e || e != e) : (x < e || (e != e && x == x));
                }
                if (take) {
                    best[j] = x;
                    at[j] = pos;
                }
            }
        }
    } else {
        int64_t best[2 * RED_BLOCK];
        for (j = 0; j < b; ++j) {
            best[j] = red_key(p, red_geti(p, xo + j));
            at[j] = 0;
        }
        for (pos = 1; pos < p->row_len; ++pos) {
            red_odo_step(p, &o);
            for (j = 0; j < b; ++j) {
                const int64_t k = red_key(p, red_geti(p, xo + o.ox + j));
                const int take = largest ? (last ? k >= best[j] : k > best[j]) : (last ? k <= best[j] : k < best[j]);
                if (take) {
                    best[j] = k;
                    at[j] = pos;
                }
            }
        }
    }
}

/* FLOAT32 columns but LOG_SUM_EXP: acc[j] (j < b) accumulates term(base[offs[q] + j]) over the positions q < npos
 * in order, the outputs held in vector registers across the positions: groups of RED_COL_GROUP vectors, so as
 * many independent chains of adds hide their latency (64 outputs, 256 contiguous bytes of input per position
 * with AVX-512; AVX2's 16 registers hold 8 and the loads), then the rest in groups of 2 vectors, the last of
 * them ending at b and overlapping the one before, of which only the new outputs are kept (an output's sum is
 * its own terms in position order, whichever group computes it). Only a block narrower than 2 vectors goes
 * one output at a time, with the same operations. */
#if defined(RED_VEC)
#define RED_COL_GROUP 8
/* The group's cache lines RED_COL_AHEAD positions ahead are prefetched: the positions are a row stride apart
 * (788 bytes for 12x197x197 over axis 1), a pattern the hardware prefetchers follow late (measured: 12x197x197
 * 66-72 us without, 57-61 us with 6 ahead; 12 ahead no better). */
#define RED_COL_AHEAD 6
#define RED_COL_LOOP(TERM, OP)                                          \
    for (q = 0; q < npos; ++q) {                                        \
        const float* src = base + offs[q];                              \
        const float* ahead = base + offs[q + RED_COL_AHEAD < npos ? q + RED_COL_AHEAD : q]; \
        for (k = 0; k < nv * RED_ND; k += 16) __builtin_prefetch(ahead + k); \
        for (k = 0; k < nv; ++k) {                                      \
            red_vd x;                                                   \
            RED_WIDEN(x, src + k * RED_ND);                             \
            va[k] = va[k] OP(TERM);                                     \
        }                                                               \
    }

/* acc[0..nv * RED_ND) accumulates the terms of base[offs[q] + j]; nv (at most RED_COL_GROUP) is a constant
 * where this is inlined, so the vectors stay in registers. */
RED_INLINE void red_col_group_d(int func, const float* base, const uint64_t* offs, size_t npos, double* acc, size_t nv) {
    red_vd va[RED_COL_GROUP];
    size_t q, k;
    memcpy(va, acc, nv * sizeof va[0]);
    switch (func) {
    case DML_REDUCE_FUNCTION_MULTIPLY:
        RED_COL_LOOP(x, *)
        break;
    case DML_REDUCE_FUNCTION_L1:
        RED_COL_LOOP((red_vd)((red_vl)x & 0x7FFFFFFFFFFFFFFFll), +)
        break;
    case DML_REDUCE_FUNCTION_L2:
    case DML_REDUCE_FUNCTION_SUM_SQUARE:
        RED_COL_LOOP(x * x, +)
        break;
    default:
        RED_COL_LOOP(x, +)
        break;
    }
    memcpy(acc, va, nv * sizeof va[0]);
}
#undef RED_COL_LOOP
#endif

/* red_in_float's columns: each output adds its terms in position order, in float32 from the function's identity
 * over RED_COL_SPAN positions, then the span's sum to its double accumulator. The span's outputs stay in vector
 * registers: groups of RED_COL_GROUP_F vectors (256 outputs with AVX-512), the whole vectors left in one group,
 * then one vector ending at b and overlapping the one before, of which only the new outputs are kept. */
#define RED_COL_SPAN 16
#if defined(RED_VEC)
#if RED_VB == 64
#define RED_COL_GROUP_F 16 /* of AVX-512's 32 registers */
#else
#define RED_COL_GROUP_F 8
#endif
#define RED_COL_LOOP_F(TERM)                                                       \
    for (q = q0; q < q1; ++q) {                                                    \
        const float* src = base + offs[q];                                         \
        const float* ahead = base + offs[q + RED_COL_AHEAD < npos ? q + RED_COL_AHEAD : q]; \
        for (k = 0; k < nv * RED_NF; k += 16) __builtin_prefetch(ahead + k);       \
        for (k = 0; k < nv; ++k) {                                                 \
            red_vf x;                                                              \
            memcpy(&x, src + k * RED_NF, sizeof x);                                \
            va[k] = va[k] + (TERM);                                                \
        }                                                                          \
    }

RED_INLINE void red_col_group_f(int func, const float* base, const uint64_t* offs, size_t npos, double* acc, size_t nv) {
    const float id = 0.0f; /* every sum starts at +0 (see the top) */
    size_t q0, q, k, e;
    for (q0 = 0; q0 < npos; q0 += RED_COL_SPAN) {
        const size_t q1 = npos - q0 < RED_COL_SPAN ? npos : q0 + RED_COL_SPAN;
        red_vf va[RED_COL_GROUP_F];
        for (k = 0; k < nv; ++k) va[k] = (red_vf){0} + id;
        switch (func) {
        case DML_REDUCE_FUNCTION_L1:
            RED_COL_LOOP_F((red_vf)((red_vi)x & 0x7FFFFFFF))
            break;
        case DML_REDUCE_FUNCTION_SUM_SQUARE:
            RED_COL_LOOP_F(x * x)
            break;
        default:
            RED_COL_LOOP_F(x)
            break;
        }
        for (k = 0; k < nv; ++k) { /* the span's sums widened (exact) and added to the accumulators */
            float f[RED_NF];
            memcpy(f, (const red_vf[1]){va[k]}, sizeof f); /* a copy: the address of va would keep it in memory */
            for (e = 0; e < RED_NF; e += RED_ND) {
                red_vd d, a;
                RED_WIDEN(d, f + e);
                memcpy(&a, acc + k * RED_NF + e, sizeof a);
                a += d;
                memcpy(acc + k * RED_NF + e, &a, sizeof a);
            }
        }
    }
}
#undef RED_COL_LOOP_F
#endif

static void red_col_sum_fd(int func, const float* base, const uint64_t* offs, size_t npos, size_t b, double* acc) {
    const float id = 0.0f; /* every sum starts at +0 (see the top) */
    size_t j0 = 0, q0, q;
#if defined(RED_VEC)
    const size_t g = RED_COL_GROUP_F * RED_NF, h = RED_NF;
    for (; j0 + g <= b; j0 += g) red_col_group_f(func, base + j0, offs, npos, acc + j0, RED_COL_GROUP_F);
    switch ((b - j0) / h) { /* the whole vectors left, in one group (each count a constant where inlined) */
#define RED_COL_REST(nv)                                                 \
    case nv:                                                             \
        red_col_group_f(func, base + j0, offs, npos, acc + j0, nv);      \
        j0 += nv * h;                                                    \
        break;
#if RED_COL_GROUP_F > 8
        RED_COL_REST(15)
        RED_COL_REST(14)
        RED_COL_REST(13)
        RED_COL_REST(12)
        RED_COL_REST(11)
        RED_COL_REST(10)
        RED_COL_REST(9)
        RED_COL_REST(8)
#endif
        RED_COL_REST(7)
        RED_COL_REST(6)
        RED_COL_REST(5)
        RED_COL_REST(4)
        RED_COL_REST(3)
        RED_COL_REST(2)
        RED_COL_REST(1)
#undef RED_COL_REST
    default: break;
    }
    if (j0 < b && b >= h) { /* the overlapping last group: its first outputs are done already */
        double t[RED_NF];
        memcpy(t, acc + b - h, sizeof t);
        red_col_group_f(func, base + b - h, offs, npos, t, 1);
        memcpy(acc + j0, t + h - (b - j0), (b - j0) * sizeof t[0]);
        j0 = b;
    }
#endif
    for (; j0 < b; ++j0) {
        for (q0 = 0; q0 < npos; q0 += RED_COL_SPAN) {
            const size_t q1 = npos - q0 < RED_COL_SPAN ? npos : q0 + RED_COL_SPAN;
            float a = id;
            for (q = q0; q < q1; ++q) {
                const float x = base[offs[q] + j0];
                a = a + (func == DML_REDUCE_FUNCTION_L1 ? fabsf(x) : func == DML_REDUCE_FUNCTION_SUM_SQUARE ? x * x : x);
            }
            acc[j0] += (double)a;
        }
    }
}

static void red_col_sum_d(int func, const float* base, const uint64_t* offs, size_t npos, size_t b, double* acc) {
    size_t j0 = 0, q;
#if defined(RED_VEC)
    const size_t g = RED_COL_GROUP * RED_ND, h = 2 * RED_ND;
    for (; j0 + g <= b; j0 += g) red_col_group_d(func, base + j0, offs, npos, acc + j0, RED_COL_GROUP);
    for (; j0 + h <= b; j0 += h) red_col_group_d(func, base + j0, offs, npos, acc + j0, 2);
    if (j0 < b && b >= h) { /* the overlapping last group: its first outputs are done already */
        double t[2 * RED_ND];
        memcpy(t, acc + b - h, sizeof t);
        red_col_group_d(func, base + b - h, offs, npos, t, 2);
        memcpy(acc + j0, t + h - (b - j0), (b - j0) * sizeof t[0]);
        j0 = b;
    }
#endif
    for (; j0 < b; ++j0) {
        double a = acc[j0];
        for (q = 0; q < npos; ++q) {
            const double x = (double)base[offs[q] + j0];
            switch (func) {
            case DML_REDUCE_FUNCTION_MULTIPLY: a = a * x; break;
            case DML_REDUCE_FUNCTION_L1: a = a + fabs(x); break;
            case DML_REDUCE_FUNCTION_L2:
            case DML_REDUCE_FUNCTION_SUM_SQUARE: a = a + x * x; break;
            default: a = a + x; break;
            }
        }
        acc[j0] = a;
    }
}
#if defined(RED_VEC)
#undef RED_COL_GROUP
#undef RED_COL_GROUP_F
#undef RED_COL_AHEAD
#endif

static void red_block_values(const red_plan* p, uint64_t xo, size_t b, double* out) {
    red_odo o;
    uint64_t pos;
    size_t j;
    float buf[2 * RED_BLOCK], top[2 * RED_BLOCK];
    const int product = p->func == DML_REDUCE_FUNCTION_MULTIPLY;
    for (j = 0; j < b; ++j) top[j] = p->func == DML_REDUCE_FUNCTION_LOG_SUM_EXP ? -INFINITY : 0.0f;
    if (p->func == DML_REDUCE_FUNCTION_LOG_SUM_EXP) {
        red_odo_seek(p, &o, 0);
        for (pos = 0; pos < p->row_len; ++pos, red_odo_step(p, &o)) {
            const float* v = red_block_f(p, xo + o.ox, b, buf);
            for (j = 0; j < b; ++j) top[j] = v[j] > top[j] ? v[j] : top[j];
        }
        for (j = 0; j < b; ++j) top[j] = isfinite(top[j]) ? top[j] : 0.0f;
    }
    red_odo_seek(p, &o, 0);
    if (p->in_kind == RT_F32) {
        double acc[2 * RED_BLOCK], shift[2 * RED_BLOCK];
        for (j = 0; j < b; ++j) {
            acc[j] = product ? 1.0 : 0.0;
            shift[j] = (double)top[j];
        }
        if (p->func == DML_REDUCE_FUNCTION_LOG_SUM_EXP) {
            for (pos = 0; pos < p->row_len; ++pos, red_odo_step(p, &o)) {
                red_col_acc_d(p->func, (const float*)p->x + xo + o.ox, b, acc, shift);
            }
        } else {
            int in_float = red_in_float(p->func);
            uint64_t offs[RED_CHUNK], np;
            for (;;) {
                for (pos = 0; pos < p->row_len; pos += np) {
                    uint64_t q;
                    np = p->row_len - pos < RED_CHUNK ? p->row_len - pos : RED_CHUNK;
                    if (p->rr == 1) { /* one reduced dim (after merging): no odometer */
                        for (q = 0; q < np; ++q) offs[q] = (pos + q) * p->xr[0];
                    } else {
                        for (q = 0; q < np; ++q, red_odo_step(p, &o)) offs[q] = o.ox;
                    }
                    if (in_float) {
                        red_col_sum_fd(p->func, (const float*)p->x + xo, offs, (size_t)np, b, acc);
                    } else {
                        red_col_sum_d(p->func, (const float*)p->x + xo, offs, (size_t)np, b, acc);
                    }
                }
                if (!in_float) break;
                for (j = 0; j < b && isfinite(acc[j]); ++j) {
                }
                if (j == b) break;
                in_float = 0; /* a float sum overflowed (or met inf or NaN): the block again in double */
                for (j = 0; j < b; ++j) acc[j] = 0.0;
                red_odo_seek(p, &o, 0);
            }
        }
        for (j = 0; j < b; ++j) out[j] = red_finish_d(p->func, acc[j], shift[j], p->row_len);
    } else {
        float acc[2 * RED_BLOCK];
        for (j = 0; j < b; ++j) acc[j] = product ? 1.0f : 0.0f;
        for (pos = 0; pos < p->row_len; ++pos, red_odo_step(p, &o)) {
            red_col_acc_f(p->func, red_block_f(p, xo + o.ox, b, buf), b, acc, top);
        }
        for (j = 0; j < b; ++j) out[j] = (double)red_finish_f(p->func, acc[j], top[j], p->row_len);
    }
}

static void red_block_int(const red_plan* p, uint64_t xo, size_t b, uint64_t* out) {
    red_odo o;
    uint64_t pos;
    size_t j;
    const int product = p->func == DML_REDUCE_FUNCTION_MULTIPLY;
    for (j = 0; j < b; ++j) out[j] = product ? 1u : 0u;
    red_odo_seek(p, &o, 0);
    for (pos = 0; pos < p->row_len; ++pos, red_odo_step(p, &o)) {
        for (j = 0; j < b; ++j) {
            const uint64_t v = red_geti(p, xo + o.ox + j);
            out[j] = product ? out[j] * v : out[j] + red_int_term(p, v);
        }
    }
}

static void red_block(const red_plan* p, uint64_t item) {
    const uint64_t outer = item / p->blocks, j0 = (item % p->blocks) * RED_BLOCK;
    const size_t b = (size_t)(item % p->blocks == p->blocks - 1 ? p->inner - j0 : RED_BLOCK); /* the last takes the rest */
    const uint64_t ys = p->yk[p->kr - 1];
    uint64_t xo, yo;
    size_t j;
    red_row_offsets(p, outer * p->inner + j0, &xo, &yo);
    if (p->by_index) {
        uint64_t at[2 * RED_BLOCK];
        red_block_index(p, xo, b, at);
        for (j = 0; j < b; ++j) red_write_indexed(p, xo + j, yo + j * ys, at[j]);
    } else if (p->in_kind == RT_INT) {
        uint64_t out[2 * RED_BLOCK];
        red_block_int(p, xo, b, out);
        for (j = 0; j < b; ++j) red_store_u(p, yo + j * ys, out[j]);
    } else {
        double out[2 * RED_BLOCK];
        red_block_values(p, xo, b, out);
        for (j = 0; j < b; ++j) red_store_f(p, yo + j * ys, out[j]);
    }
}

/* The next row's offsets: the odometer over the kept dims. */
#define RED_NEXT_ROW(p, idx, xo, yo)                 \
    do {                                             \
        uint32_t d_;                                 \
        for (d_ = (p)->kr; d_-- > 0;) {              \
            xo += (p)->xk[d_];                       \
            yo += (p)->yk[d_];                       \
            if (++idx[d_] < (p)->ksz[d_]) break;     \
            xo -= idx[d_] * (p)->xk[d_];             \
            yo -= idx[d_] * (p)->yk[d_];             \
            idx[d_] = 0;                             \
        }                                            \
    } while (0)

/* the rows 4 KB on (those to come, as a kept dim is usually contiguous rows) towards the cache; measured on
 * 8x2048x7x7 over 7x7 (3.2 MB, from the last-level cache), one thread: 143 -> 135 us (a prefetch is only a
 * hint: an address past the tensor is harmless) */
#define RED_PREFETCH_ROW(v, n)                                                                        \
    do {                                                                                              \
        uint64_t e_;                                                                                  \
        for (e_ = 0; e_ < (n); e_ += 16) RED_PREFETCH((const void*)((uintptr_t)((v) + e_) + 4096u)); \
    } while (0)

#if defined(__AVX512F__)
/* Sixteen rows' lane vectors (red_row_vec_f) reduced at once, row k's sum in lane k: lane j + j+8, then + 4,
 * + 2 and + 1, the additions red_tree_sum_f makes for one row, so every row gets the same bits. A row's tree
 * alone is a chain of shuffles and adds, then a division and a store: on short rows (49 floats of a 7x7 global
 * pool) that fixed cost was most of the time, and here it is shared by 16 rows. */
static inline __m512 red_tree16(const red_vf* r) {
    __m512 s[8], u[4], w[2];
    int i;
    for (i = 0; i < 8; ++i) { /* s[i]: rows 2i and 2i+1, 8 sums each */
        const __m512 a = (__m512)r[2 * i], b = (__m512)r[2 * i + 1];
        s[i] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
    }
    for (i = 0; i < 4; ++i) /* u[i]: rows 4i .. 4i+3, 4 sums each, one row per 16 bytes */
        u[i] = _mm512_add_ps(_mm512_shuffle_f32x4(s[2 * i], s[2 * i + 1], 0x88), _mm512_shuffle_f32x4(s[2 * i], s[2 * i + 1], 0xDD));
    for (i = 0; i < 2; ++i) { /* w[i]: 16 bytes m hold rows 8i+m and 8i+4+m, 2 sums each */
        const __m512d a = _mm512_castps_pd(u[2 * i]), b = _mm512_castps_pd(u[2 * i + 1]);
        w[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)), _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
    }
    /* lane 4m + q holds row 4q + m */
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15),
                                 _mm512_add_ps(_mm512_shuffle_ps(w[0], w[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                               _mm512_shuffle_ps(w[0], w[1], _MM_SHUFFLE(3, 1, 3, 1))));
}

/* A group's sums: all finite; AVERAGE's quotient in double (red_finish_d's); stored unaligned. */
#define RED_GROUP 16
typedef __m512 red_gv;
#define red_tree_group red_tree16
static inline int red_group_finite(__m512 z) {
    return _mm512_cmp_ps_mask(_mm512_abs_ps(z), _mm512_set1_ps(INFINITY), _CMP_LT_OQ) == 0xFFFF;
}
static inline __m512 red_group_average(__m512 z, double count) {
    const __m512d c = _mm512_set1_pd(count);
    const __m256 lo = _mm512_cvtpd_ps(_mm512_div_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(z)), c));
    const __m256 hi = _mm512_cvtpd_ps(_mm512_div_pd(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(z), 1))), c));
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1));
}
#define red_group_store _mm512_storeu_ps
#endif

#if !defined(__AVX512F__) && defined(__AVX2__) && defined(RED_VEC)
/* AVX2: eight rows' lane vectors (red_row_vec_f, 8 lanes) reduced at once, row k's sum in lane k: lane j + j+4,
 * then + 2 and + 1, the additions red_tree_sum_f makes for one row (so the same bits), as red_tree16 does for
 * 16 rows on AVX-512; the fixed cost of a short row's tree (a 7x7 global pool's 49 floats) is shared by 8 rows. */
static inline __m256 red_tree8(const red_vf* r) {
    __m256 t[4], u[2], w;
    int i;
    for (i = 0; i < 4; ++i) { /* t[i]: rows 2i (low half) and 2i+1 (high half), lanes j + j+4 */
        const __m256 a = (__m256)r[2 * i], b = (__m256)r[2 * i + 1];
        t[i] = _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20), _mm256_permute2f128_ps(a, b, 0x31));
    }
    for (i = 0; i < 2; ++i) /* u[i], per half h: rows 4i+h and 4i+2+h, elements 0 + 2 and 1 + 3 of each */
        u[i] = _mm256_add_ps(_mm256_shuffle_ps(t[2 * i], t[2 * i + 1], 0x44), _mm256_shuffle_ps(t[2 * i], t[2 * i + 1], 0xEE));
    /* element 0 + 1: low half rows 0, 2, 4, 6, high half rows 1, 3, 5, 7 */
    w = _mm256_add_ps(_mm256_shuffle_ps(u[0], u[1], 0x88), _mm256_shuffle_ps(u[0], u[1], 0xDD));
    return _mm256_permutevar8x32_ps(w, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* A group's sums, as the AVX-512 forms above. */
#define RED_GROUP 8
typedef __m256 red_gv;
#define red_tree_group red_tree8
static inline int red_group_finite(__m256 z) {
    const __m256 abs = _mm256_and_ps(z, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF)));
    return _mm256_movemask_ps(_mm256_cmp_ps(abs, _mm256_set1_ps(INFINITY), _CMP_LT_OQ)) == 0xFF;
}
static inline __m256 red_group_average(__m256 z, double count) {
    const __m256d c = _mm256_set1_pd(count);
    const __m128 lo = _mm256_cvtpd_ps(_mm256_div_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(z)), c));
    const __m128 hi = _mm256_cvtpd_ps(_mm256_div_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(z, 1)), c));
    return _mm256_set_m128(hi, lo);
}
#define red_group_store _mm256_storeu_ps
#endif

#if defined(RED_GROUP)
/* Rows item .. item + RED_GROUP - 1 of a float32 sum (red_in_float): their trees at once (red_tree16, red_tree8),
 * then red_finish_d's results, a row whose sum is not finite computed again in double as red_rows does it. */
RED_INLINE void red_rows_group(const red_plan* p, uint64_t* idx, uint64_t* xo, uint64_t* yo, int func, const red_tail_f* tf,
                               const red_tail_d* td) {
    red_vf r[RED_GROUP];
    uint64_t xs[RED_GROUP], ys[RED_GROUP];
    float sums[RED_GROUP], out[RED_GROUP];
    const size_t n = (size_t)p->row_len;
    int q, contiguous = 1;
    red_gv z;
    for (q = 0; q < RED_GROUP; ++q) {
        const float* v = (const float*)p->x + *xo;
        RED_PREFETCH_ROW(v, n);
        r[q] = red_row_vec_f(func, v, n, tf);
        xs[q] = *xo;
        ys[q] = *yo;
        contiguous &= *yo == ys[0] + (uint64_t)q;
        RED_NEXT_ROW(p, idx, *xo, *yo);
    }
    z = red_tree_group(r);
    if (red_group_finite(z) && func != DML_REDUCE_FUNCTION_LOG_SUM) {
        if (func == DML_REDUCE_FUNCTION_AVERAGE) z = red_group_average(z, (double)p->row_len);
        /* SUM, L1, SUM_SQUARE: the float sum is the result */
        if (contiguous) {
            red_group_store((float*)p->y + ys[0], z);
            return;
        }
        red_group_store(out, z);
    } else {
        red_group_store(sums, z);
        for (q = 0; q < RED_GROUP; ++q) {
            double c = (double)sums[q];
            if (!isfinite(c)) c = red_row_sum_t_d(func, (const float*)p->x + xs[q], n, 0.0, td);
            out[q] = (float)red_finish_d(func, c, 0.0, p->row_len);
        }
    }
    for (q = 0; q < RED_GROUP; ++q) ((float*)p->y)[ys[q]] = out[q];
}
#endif

/* Rows [begin, end): the first one's offsets, then an odometer over the kept dims. func >= 0 is short_sum's
 * function, a constant where this is inlined: red_row_value's one chunk read in place (id + c is c) with the
 * function's code alone and no call per row, as for short rows (49 floats of a 7x7 global pool) the fixed cost
 * of a row is most of its time. */
RED_INLINE void red_rows(const red_plan* p, uint64_t begin, uint64_t end, int func) {
    uint64_t item, idx[DMLPY_MAX_RANK], xo = 0, yo = 0, r = begin;
    uint32_t i;
    red_tail_f tf;
    red_tail_d td;
    red_tail_of_f((size_t)p->row_len, &tf);
    red_tail_of_d((size_t)p->row_len, &td);
    for (i = p->kr; i-- > 0;) {
        idx[i] = r % p->ksz[i];
        r /= p->ksz[i];
        xo += idx[i] * p->xk[i];
        yo += idx[i] * p->yk[i];
    }
#if defined(RED_GROUP)
    if (func >= 0 && red_in_float(func)) {
        for (item = begin; item + RED_GROUP <= end; item += RED_GROUP) red_rows_group(p, idx, &xo, &yo, func, &tf, &td);
        begin = item;
    }
#endif
    for (item = begin; item < end; ++item) {
        if (func >= 0) {
            const float* v = (const float*)p->x + xo;
            double c;
            RED_PREFETCH_ROW(v, p->row_len);
            if (red_in_float(func)) {
                c = (double)red_row_sum_t_f(func, v, (size_t)p->row_len, 0.0f, &tf);
                if (!isfinite(c)) c = red_row_sum_t_d(func, v, (size_t)p->row_len, 0.0, &td);
            } else {
                c = red_row_sum_t_d(func, v, (size_t)p->row_len, 0.0, &td);
            }
            ((float*)p->y)[yo] = (float)red_finish_d(func, c, 0.0, p->row_len);
        } else {
            red_row(p, xo, yo);
        }
        RED_NEXT_ROW(p, idx, xo, yo);
    }
}

static void red_run(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    const red_plan* p = (const red_plan*)vp;
    uint64_t item;
    (void)worker;
    if (p->column) {
        for (item = begin; item < end; ++item) red_block(p, item);
    } else if (p->short_sum) {
        switch (p->func) {
        case DML_REDUCE_FUNCTION_SUM: red_rows(p, begin, end, DML_REDUCE_FUNCTION_SUM); break;
        case DML_REDUCE_FUNCTION_AVERAGE: red_rows(p, begin, end, DML_REDUCE_FUNCTION_AVERAGE); break;
        case DML_REDUCE_FUNCTION_L1: red_rows(p, begin, end, DML_REDUCE_FUNCTION_L1); break;
        case DML_REDUCE_FUNCTION_L2: red_rows(p, begin, end, DML_REDUCE_FUNCTION_L2); break;
        case DML_REDUCE_FUNCTION_SUM_SQUARE: red_rows(p, begin, end, DML_REDUCE_FUNCTION_SUM_SQUARE); break;
        case DML_REDUCE_FUNCTION_MULTIPLY: red_rows(p, begin, end, DML_REDUCE_FUNCTION_MULTIPLY); break;
        default: red_rows(p, begin, end, p->func); break; /* LOG_SUM */
        }
    } else {
        red_rows(p, begin, end, -1);
    }
}

/* ---- desc reading and checks ------------------------------------------------------------------------ */

static int red_is_int(DML_TENSOR_DATA_TYPE t) {
    switch (t) {
    case DML_TENSOR_DATA_TYPE_INT8:
    case DML_TENSOR_DATA_TYPE_UINT8:
    case DML_TENSOR_DATA_TYPE_INT16:
    case DML_TENSOR_DATA_TYPE_UINT16:
    case DML_TENSOR_DATA_TYPE_INT32:
    case DML_TENSOR_DATA_TYPE_UINT32:
    case DML_TENSOR_DATA_TYPE_INT64:
    case DML_TENSOR_DATA_TYPE_UINT64: return 1;
    default: return 0;
    }
}

static int red_is_index(DML_TENSOR_DATA_TYPE t) {
    return t == DML_TENSOR_DATA_TYPE_UINT32 || t == DML_TENSOR_DATA_TYPE_INT32 || t == DML_TENSOR_DATA_TYPE_UINT64 ||
           t == DML_TENSOR_DATA_TYPE_INT64;
}

int32_t dmlpy_reduction(const DML_OPERATOR_DESC* desc, UINT inputCount, const DMLPY_BOUND_BUFFER* inputs,
                        UINT outputCount, const DMLPY_BOUND_BUFFER* outputs, UINT threadCount) {
    const DML_TENSOR_DESC *xd = NULL, *yd = NULL;
    UINT axis_count = 0;
    const UINT* axes = NULL;
    int reduced[DMLPY_MAX_RANK] = {0};
    dmlpy_tensor tx, ty;
    red_plan p;
    dmlpy_staged_output stage;
    uint32_t i, rank;
    int32_t st;
    uint64_t elements = 1, work, items;
    unsigned threads;

    if (desc == NULL || desc->Desc == NULL) return DMLPY_E_NULL_ARGUMENT;
    memset(&p, 0, sizeof p);
    switch (desc->Type) {
    case DML_OPERATOR_REDUCE: {
        const DML_REDUCE_OPERATOR_DESC* d = (const DML_REDUCE_OPERATOR_DESC*)desc->Desc;
        if ((unsigned)d->Function > (unsigned)DML_REDUCE_FUNCTION_SUM_SQUARE) return DMLPY_E_INVALID_DESC;
        p.kind = RK_REDUCE;
        p.func = (int)d->Function;
        xd = d->InputTensor;
        yd = d->OutputTensor;
        axis_count = d->AxisCount;
        axes = d->Axes;
        p.largest = p.func == DML_REDUCE_FUNCTION_ARGMAX || p.func == DML_REDUCE_FUNCTION_MAX;
        p.by_index = p.func == DML_REDUCE_FUNCTION_ARGMAX || p.func == DML_REDUCE_FUNCTION_ARGMIN ||
                     p.func == DML_REDUCE_FUNCTION_MAX || p.func == DML_REDUCE_FUNCTION_MIN;
        break;
    }
    case DML_OPERATOR_ARGMIN:
    case DML_OPERATOR_ARGMAX: {
        /* DML_ARGMIN_OPERATOR_DESC and DML_ARGMAX_OPERATOR_DESC have the same fields */
        const DML_ARGMIN_OPERATOR_DESC* d = (const DML_ARGMIN_OPERATOR_DESC*)desc->Desc;
        if ((unsigned)d->AxisDirection > (unsigned)DML_AXIS_DIRECTION_DECREASING) return DMLPY_E_INVALID_DESC;
        p.kind = RK_ARG;
        p.by_index = 1;
        p.largest = desc->Type == DML_OPERATOR_ARGMAX;
        p.last = d->AxisDirection == DML_AXIS_DIRECTION_DECREASING;
        xd = d->InputTensor;
        yd = d->OutputTensor;
        axis_count = d->AxisCount;
        axes = d->Axes;
        break;
    }
    case DML_OPERATOR_ACTIVATION_HARDMAX: {
        const DML_ACTIVATION_HARDMAX_OPERATOR_DESC* d = (const DML_ACTIVATION_HARDMAX_OPERATOR_DESC*)desc->Desc;
        p.kind = RK_HARDMAX;
        xd = d->InputTensor;
        yd = d->OutputTensor;
        break;
    }
    case DML_OPERATOR_ACTIVATION_HARDMAX1: {
        const DML_ACTIVATION_HARDMAX1_OPERATOR_DESC* d = (const DML_ACTIVATION_HARDMAX1_OPERATOR_DESC*)desc->Desc;
        p.kind = RK_HARDMAX;
        xd = d->InputTensor;
        yd = d->OutputTensor;
        axis_count = d->AxisCount;
        axes = d->Axes;
        break;
    }
    default:
        return DMLPY_E_UNSUPPORTED_OPERATOR;
    }
    if (p.kind == RK_HARDMAX) {
        p.by_index = 1;
        p.largest = 1;
    }
    if (xd == NULL || yd == NULL) return DMLPY_E_NULL_ARGUMENT;
    if (axis_count > 0 && axes == NULL) return DMLPY_E_NULL_ARGUMENT;
    if (inputCount != 1 || outputCount != 1) return DMLPY_E_BINDING_COUNT;
    if (inputs == NULL || outputs == NULL) return DMLPY_E_NULL_ARGUMENT;
    st = dmlpy_tensor_from_desc(xd, &tx);
    if (st != DMLPY_OK) return st;
    st = dmlpy_tensor_from_desc(yd, &ty);
    if (st != DMLPY_OK) return st;
    rank = tx.rank;
    if (ty.rank != rank) return DMLPY_E_INVALID_DESC;

    /* Types: FLOAT32, FLOAT16 or an integer type in; the output the input's type, but an index type (UINT32,
     * INT32, UINT64, INT64) for ARGMIN and ARGMAX (the operators and REDUCE's functions); AVERAGE, L2, LOG_SUM,
     * LOG_SUM_EXP and HARDMAX on floats only. */
    p.in_type = tx.data_type;
    p.out_type = ty.data_type;
    p.in_bytes = tx.element_size;
    p.out_bytes = ty.element_size;
    if (p.in_type == DML_TENSOR_DATA_TYPE_FLOAT32) {
        p.in_kind = RT_F32;
    } else if (p.in_type == DML_TENSOR_DATA_TYPE_FLOAT16) {
        p.in_kind = RT_F16;
    } else if (red_is_int(p.in_type)) {
        p.in_kind = RT_INT;
        p.in_signed = p.in_type == DML_TENSOR_DATA_TYPE_INT8 || p.in_type == DML_TENSOR_DATA_TYPE_INT16 ||
                      p.in_type == DML_TENSOR_DATA_TYPE_INT32 || p.in_type == DML_TENSOR_DATA_TYPE_INT64;
    } else {
        return DMLPY_E_INVALID_DESC;
    }
    if (p.kind == RK_ARG || (p.kind == RK_REDUCE && (p.func == DML_REDUCE_FUNCTION_ARGMAX || p.func == DML_REDUCE_FUNCTION_ARGMIN))) {
        if (!red_is_index(p.out_type)) return DMLPY_E_INVALID_DESC;
    } else {
        if (p.out_type != p.in_type) return DMLPY_E_INVALID_DESC;
        if (p.in_kind == RT_INT && (p.kind == RK_HARDMAX || p.func == DML_REDUCE_FUNCTION_AVERAGE || p.func == DML_REDUCE_FUNCTION_L2 ||
                                    p.func == DML_REDUCE_FUNCTION_LOG_SUM || p.func == DML_REDUCE_FUNCTION_LOG_SUM_EXP)) {
            return DMLPY_E_INVALID_DESC;
        }
    }

    /* The reduced dims: Axes (a set), HARDMAX's last dimension; the output has size 1 on them (HARDMAX: the
     * input's sizes). */
    if (desc->Type == DML_OPERATOR_ACTIVATION_HARDMAX) reduced[rank - 1] = 1;
    for (i = 0; i < axis_count; ++i) {
        if (axes[i] >= rank) return DMLPY_E_INVALID_DESC;
        reduced[axes[i]] = 1;
    }
    for (i = 0; i < rank; ++i) {
        const uint64_t expected = (p.kind != RK_HARDMAX && reduced[i]) ? 1u : tx.sizes[i];
        if (ty.sizes[i] != expected) return DMLPY_E_INVALID_DESC;
    }
    st = dmlpy_tensor_bind(&tx, &inputs[0]);
    if (st != DMLPY_OK) return st;
    st = dmlpy_tensor_bind(&ty, &outputs[0]);
    if (st != DMLPY_OK) return st;
    if (dmlpy_tensors_overlap(&tx, &ty)) return DMLPY_E_INVALID_ARGUMENT;
    st = dmlpy_output_stage(&ty, &stage);
    if (st != DMLPY_OK) return st;
    p.x = tx.data;
    p.y = ty.data;

    /* Dims: drop size 1, merge neighbours of the same class where both tensors are contiguous across them. */
    for (i = 0; i < rank; ++i) {
        const uint64_t size = tx.sizes[i];
        const int r = reduced[i];
        uint64_t* sz = r ? p.rsz : p.ksz;
        uint64_t* xs = r ? p.xr : p.xk;
        uint64_t* ys = r ? p.yr : p.yk;
        uint32_t* count = r ? &p.rr : &p.kr;
        const uint64_t sx = tx.strides[i], sy = ty.sizes[i] == 1 ? 0 : ty.strides[i];
        elements *= size;
        if (size == 1) continue;
        /* strides and sizes below 2^32 in a bound tensor: the products cannot overflow */
        if (*count > 0 && sx <= UINT32_MAX && sy <= UINT32_MAX && xs[*count - 1] == sx * size && ys[*count - 1] == sy * size) {
            sz[*count - 1] *= size;
            xs[*count - 1] = sx;
            ys[*count - 1] = sy;
        } else {
            sz[*count] = size;
            xs[*count] = sx;
            ys[*count] = sy;
            ++*count;
        }
    }
    if (p.kr == 0) { /* one output element */
        p.kr = 1;
        p.ksz[0] = 1;
    }
    if (p.rr == 0) { /* rows of one element */
        p.rr = 1;
        p.rsz[0] = 1;
        p.xr[0] = 1;
    }
    p.rows = 1;
    for (i = 0; i < p.kr; ++i) p.rows *= p.ksz[i];
    p.row_len = 1;
    for (i = 0; i < p.rr; ++i) p.row_len *= p.rsz[i];
    p.row_packed = p.rr == 1 && p.xr[0] == 1;
    p.short_sum = p.in_kind == RT_F32 && p.row_packed && p.row_len <= RED_CHUNK && p.kind == RK_REDUCE && !p.by_index &&
                  p.func != DML_REDUCE_FUNCTION_LOG_SUM_EXP;
    p.column = !p.row_packed && p.xk[p.kr - 1] == 1 && p.ksz[p.kr - 1] > 1;
    if (p.column) {
        p.inner = p.ksz[p.kr - 1];
        p.blocks = p.inner < 2 * RED_BLOCK ? 1 : p.inner / RED_BLOCK; /* no block narrower than RED_BLOCK but a lone one */
        items = p.rows / p.inner * p.blocks;
    } else {
        items = p.rows;
    }
    /* Work in parallel.c's units (about 1/16 ns each): a comparison of the two exact passes 3, exp 24 (as
     * measured); HARDMAX also writes every element. A FLOAT32 term widened to double and added takes about 2-3
     * (0.12-0.18 ns on one thread: 12x197x197 over axis 1 or 2, 8x2048x7x7 over 7x7), but counts 5: a second
     * thread measured faster from far below parallel.c's threshold (SUM of 4x197x197 over axis 1: 17 us on one
     * thread, 12 us on two; 12x197x197: 58 us, 28-40 us), as a reduction's items are even and independent;
     * 5 lets it join from about 420k terms (about 60 us), as before these paths were faster. */
    if (p.by_index) {
        work = elements * (p.kind == RK_HARDMAX ? 5u : 3u);
    } else if (p.func == DML_REDUCE_FUNCTION_LOG_SUM_EXP) {
        work = elements * 24u;
    } else {
        work = elements * 5u;
    }
    threads = dmlpy_choose_threads(work, items, threadCount);
    dmlpy_parallel_for(items, dmlpy_choose_grain(items, threads), threads, red_run, &p);
    dmlpy_output_unstage(&stage, 1);
    return DMLPY_OK;
}
