/*
 * element_wise.c - the element-wise operators inference spends its time in, as one strided loop:
 *   binary  ELEMENT_WISE_ADD (4), ADD1 (89, with its FusedActivation), SUBTRACT, MULTIPLY, DIVIDE, MAX, MIN,
 *           POW (25, with ScaleBias);
 *   unary   ELEMENT_WISE_IDENTITY (1), ABS, CLIP, CLIP1, SQRT, RECIP, EXP, LOG, TANH, ERF, CONSTANT_POW (each with
 *           its optional ScaleBias) and NEGATE (156).
 * FLOAT32 and FLOAT16 (stored as binary16, computed in float32); every other type runs on the NumPy kernel
 * (dmlpy/operators/element_wise.py's native_covers says which descs come here). The standalone
 * ACTIVATION_* operators activation.c reads run here too, as IDENTITY followed by their function.
 *
 * The operation is a row function from a small table (ew_ops), not a copy of the loop per operator:
 * f(plan, y, a, b, n) on float rows. The loop walks the output's index space (up to 8 dims): size-1
 * dims dropped, dims ordered by the output's stride (so the inner dim is the output's contiguous one, a
 * transpose reads strided and writes contiguously), and dims merged where every tensor is contiguous
 * across them (broadcast: stride 0 merges with stride 0). The inner dim is cut into chunks of EW_CHUNK
 * elements (for a transpose, where an input is contiguous along another dim, EW_TILE x EW_TILE tiles
 * of the inner dim and that one); a chunk's FLOAT32 operands with element stride 1 are used in place
 * (the compiler vectorises the row functions: the avx2 and avx512 variants of isa/ are this file compiled for those targets), any
 * other operand is gathered into (and the output scattered from) a float buffer, converting binary16; a
 * FLOAT32 binary operand that is one value along the row (stride 0: a per-channel bias) is passed as that
 * value to a splat row function (the same expression) instead.
 * Chunks are split across threads with parallel.c's loop and thread rule; results do not depend on the
 * thread count (every element is computed on its own).
 *
 * Rounding, chosen to give the NumPy kernel's values (docs/deviations.md, "Native element-wise kernels"):
 *   - FLOAT32 add, subtract, multiply, divide, sqrt, recip in float32: NumPy's float64-then-round gives
 *     the same bits (binary64 has more than 2*24+2 bits, so the double rounding is innocuous);
 *   - FLOAT32 ScaleBias x*Scale+Bias in double, rounded once (as NumPy's float64 working type does);
 *     the transcendental functions and POW in double (libm), rounded once;
 *   - FLOAT16: x*Scale then +Bias as two float32 operations (no fused multiply-add: -std=c11 keeps
 *     contraction off), the function in float32 (transcendentals: double libm rounded to float32), then
 *     rounded to binary16;
 *   - MAX / MIN are fmax / fmin (a NaN loses to a number), CLIP propagates a NaN input or bound.
 *
 * Checks (the caller validated; these are cheap and never trusted away): types, binding counts, equal
 * ranks and sizes, every strided extent inside its bound buffer (tensor.c), an input overlapping the
 * output only as the very same elements (in place), an output whose layout maps two indices to one
 * element staged (dmlpy_output_stage: the last row-major index wins, inputs read intact).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "activation.h"
#include "dmlpy_internal.h"
#include "half.h"

#if defined(__AVX__)
#include <immintrin.h>
#define EW_STREAM 1
#endif

#define EW_CHUNK 1024
/* Tiles of a transposing loop: EW_TILE elements of the inner dim by EW_TILE indices of the dim along
 * which the strided input is contiguous, so the input's cache lines are reused across the tile's rows. */
#define EW_TILE 64
#define EW_MAX_INPUTS 2
/* A contiguous FLOAT32 output of at least this many bytes (16 MiB: with its inputs, more than most
 * last-level caches hold) is written with non-temporal stores where the variant has AVX: it would not
 * stay in cache for its reader anyway, and streaming saves the read for ownership (ADD+RELU of
 * 8x256x56x56 took 20-30% less time on a 2-core Sapphire Rapids VM). */
#ifndef EW_STREAM_BYTES
#define EW_STREAM_BYTES ((uint64_t)16 << 20)
#endif

/* A plain FLOAT32 copy of contiguous rows streams from this many output bytes (data_movement.c's rule). */
#ifndef EW_COPY_STREAM_BYTES
#define EW_COPY_STREAM_BYTES ((uint64_t)4 << 20)
#endif

typedef struct ew_plan ew_plan;
typedef void (*ew_row_fn)(const ew_plan* p, float* y, const float* a, const float* b, size_t n);
/* A binary row whose other operand is one value v along it (a stride-0 broadcast, a per-channel bias). */
typedef void (*ew_splat_fn)(float* y, const float* x, float v, size_t n);

/* How the optional ScaleBias g(x) = x*Scale + Bias is applied. */
enum {
    EW_SB_NONE = 0,
    EW_SB_F64, /* FLOAT32: in double, rounded once */
    EW_SB_F32  /* FLOAT16: x*Scale, then +Bias, in float32 */
};

typedef struct ew_op {
    int inputs;         /* 1 or 2 */
    int sb_inside;      /* the row function applies ScaleBias itself (math in double, or POW's two inputs) */
    int transcendental; /* per-element libm call: more work per element for the thread rule */
    ew_row_fn row;
    ew_splat_fn splat_a, splat_b; /* binary: the row with A (splat_a) or B (splat_b) one value broadcast along it */
} ew_op;

struct ew_plan {
    const ew_op* op;
    int half;
    int sb;                  /* EW_SB_* */
    double s64, b64;         /* ScaleBias as double (FLOAT32) */
    float s32, b32;          /* ScaleBias as float (FLOAT16) */
    float lo, hi;            /* CLIP */
    double exponent;         /* CONSTANT_POW */
    dmlpy_act act;           /* ADD1's FusedActivation (kind NONE when absent) */
    int stream;              /* contiguous FLOAT32 output rows go through non-temporal stores */
    int copy;                /* FLOAT32 IDENTITY without ScaleBias or activation: gathered straight into y */
    uint32_t nin;
    uint32_t rank;           /* merged dims; the last one is the row */
    uint64_t sizes[DMLPY_MAX_RANK];
    uint64_t st[EW_MAX_INPUTS + 1][DMLPY_MAX_RANK]; /* element strides: [0] output, [1..] inputs */
    const char* in[EW_MAX_INPUTS];
    char* y;
    uint64_t chunk;          /* elements of the inner dim per call: EW_CHUNK, or EW_TILE when tiled */
    uint64_t chunks_per_row;
    uint32_t tile_dim;       /* tiled: the dim blocked by EW_TILE (an input is contiguous along it); else rank */
    uint64_t tile_blocks;
};

/* ---- the row functions ------------------------------------------------------------------------------ */

static void row_add(const ew_plan* p, float* y, const float* a, const float* b, size_t n) {
    size_t i;
    (void)p;
    for (i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

static void row_sub(const ew_plan* p, float* y, const float* a, const float* b, size_t n) {
    size_t i;
    (void)p;
    for (i = 0; i < n; ++i) y[i] = a[i] - b[i];
}

static void row_mul(const ew_plan* p, float* y, const float* a, const float* b, size_t n) {
    size_t i;
    (void)p;
    for (i = 0; i < n; ++i) y[i] = a[i] * b[i];
}

static void row_div(const ew_plan* p, float* y, const float* a, const float* b, size_t n) {
    size_t i;
    (void)p;
    for (i = 0; i < n; ++i) y[i] = a[i] / b[i];
}

/* fmax: a NaN loses to a number; two NaNs give a NaN. */
static void row_max(const ew_plan* p, float* y, const float* a, const float* b, size_t n) {
    size_t i;
    (void)p;
    for (i = 0; i < n; ++i) {
        float x = a[i], z = b[i];
        y[i] = (x > z || z != z) ? x : z;
    }
}

static void row_min(const ew_plan* p, float* y, const float* a, const float* b, size_t n) {
    size_t i;
    (void)p;
    for (i = 0; i < n; ++i) {
        float x = a[i], z = b[i];
        y[i] = (x < z || z != z) ? x : z;
    }
}

/* The binary rows with one operand a single value: x, z the row's A and B elements, the same
 * expressions as the rows above (so the same bits), without filling a buffer with copies of the value. */
#define EW_SPLAT_ROWS(name, expr)                                           \
    static void name##_splat_a(float* y, const float* b, float v, size_t n) { \
        size_t i;                                                           \
        for (i = 0; i < n; ++i) {                                           \
            const float x = v, z = b[i];                                    \
            y[i] = (expr);                                                  \
        }                                                                   \
    }                                                                       \
    static void name##_splat_b(float* y, const float* a, float v, size_t n) { \
        size_t i;                                                           \
        for (i = 0; i < n; ++i) {                                           \
            const float x = a[i], z = v;                                    \
            y[i] = (expr);                                                  \
        }                                                                   \
    }
EW_SPLAT_ROWS(row_add, x + z)
EW_SPLAT_ROWS(row_sub, x - z)
EW_SPLAT_ROWS(row_mul, x * z)
EW_SPLAT_ROWS(row_div, x / z)
EW_SPLAT_ROWS(row_max, (x > z || z != z) ? x : z)
EW_SPLAT_ROWS(row_min, (x < z || z != z) ? x : z)
#undef EW_SPLAT_ROWS

static void row_identity(const ew_plan* p, float* y, const float* a, const float* b, size_t n) {
    (void)p;
    (void)b;
    if (y != a) memmove(y, a, n * sizeof(float));
}

static void row_abs(const ew_plan* p, float* y, const float* a, const float* b, size_t n) {
    size_t i;
    (void)p;
    (void)b;
    for (i = 0; i < n; ++i) y[i] = fabsf(a[i]);
}

static void row_neg(const ew_plan* p, float* y, const float* a, const float* b, size_t n) {
    size_t i;
    (void)p;
    (void)b;
    for (i = 0; i < n; ++i) y[i] = -a[i];
}

/* NumPy's minimum(maximum(v, Min), Max): a NaN value or bound gives a NaN; Min > Max gives Max. */
static void row_clip(const ew_plan* p, float* y, const float* a, const float* b, size_t n) {
    const float lo = p->lo, hi = p->hi;
    size_t i;
    (void)b;
    for (i = 0; i < n; ++i) {
        float v = a[i];
        v = (!(v >= lo) && v == v) ? lo : v;
        v = (!(v <= hi) && v == v) ? hi : v;
        y[i] = v;
    }
}

static void row_sqrt(const ew_plan* p, float* y, const float* a, const float* b, size_t n) {
    size_t i;
    (void)b;
    if (p->sb == EW_SB_F64) {
        for (i = 0; i < n; ++i) y[i] = (float)sqrt((double)a[i] * p->s64 + p->b64);
    } else {
        for (i = 0; i < n; ++i) y[i] = sqrtf(a[i]);
    }
}

static void row_recip(const ew_plan* p, float* y, const float* a, const float* b, size_t n) {
    size_t i;
    (void)b;
    if (p->sb == EW_SB_F64) {
        for (i = 0; i < n; ++i) y[i] = (float)(1.0 / ((double)a[i] * p->s64 + p->b64));
    } else {
        for (i = 0; i < n; ++i) y[i] = 1.0f / a[i];
    }
}

static void row_square(const ew_plan* p, float* y, const float* a, const float* b, size_t n) {
    size_t i;
    (void)b;
    if (p->sb == EW_SB_F64) {
        for (i = 0; i < n; ++i) {
            const double t = (double)a[i] * p->s64 + p->b64;
            y[i] = (float)(t * t);
        }
    } else {
        for (i = 0; i < n; ++i) y[i] = a[i] * a[i];
    }
}

/* g(x) as a double for the ScaleBias sb still to apply: FLOAT32's in double, FLOAT16's as two float32 steps
 * (x * Scale, then + Bias), or none. */
static inline double ew_g_sb(const ew_plan* p, int sb, float x) {
    if (sb == EW_SB_F64) return (double)x * p->s64 + p->b64;
    if (sb == EW_SB_F32) {
        float g = x * p->s32;
        g = g + p->b32;
        return (double)g;
    }
    return (double)x;
}

/* g(x) as a double in a unary row: FLOAT16's ScaleBias was already applied in float32 (EW_SB_F32 runs before the
 * row, see ew_compute). */
static inline double ew_g(const ew_plan* p, float x) {
    return ew_g_sb(p, p->sb == EW_SB_F64 ? EW_SB_F64 : EW_SB_NONE, x);
}

#define EW_MATH_ROW(name, expr)                                                                    \
    static void name(const ew_plan* p, float* y, const float* a, const float* b, size_t n) {       \
        size_t i;                                                                                  \
        (void)b;                                                                                   \
        for (i = 0; i < n; ++i) {                                                                  \
            const double t = ew_g(p, a[i]);                                                        \
            y[i] = (float)(expr);                                                                  \
        }                                                                                          \
    }

EW_MATH_ROW(row_exp, exp(t))
EW_MATH_ROW(row_log, log(t))
EW_MATH_ROW(row_tanh, tanh(t))
EW_MATH_ROW(row_cpow, pow(t, p->exponent))

/* ERF for |t| <= 2.5 by its Maclaurin series in double: erf(t) = t * sum_{k < 2J+1} c_k z^k, z = t^2,
 * c_k = (2 / sqrt(pi)) (-1)^k / (k! (2k + 1)), with as many terms as the chunk's largest |t| needs (17 to |t| = 1,
 * 25 to 1.5, 41 to 2.5: the terms left out sum to under 2e-16 of the result). The terms' magnitudes sum to about 50
 * at 2.5, so Horner's rounding (and the c_k's own, ~1e-14 relative each) stays near 1e-12: the float result is erf(t)
 * rounded, or its neighbour when erf(t) lies within that of a rounding boundary (within 1 ulp, as the C library's
 * erf; none of 3 million float32 values tried rounded otherwise than math.erf). The even and
 * odd terms are two Horner chains in z^2 (half the latency of one), each element one straight-line expression,
 * so the loop vectorises, where the C library's erf ran a value at a time (1x197x3072, GELU's size in a ViT: 3x
 * faster). The other values (|t| > 2.5, NaN) go to the C library's erf. */
#define EW_ERF_TERMS 41
#define EW_ERF_CHUNK 256
#if defined(__GNUC__) && !defined(__clang__)
#define EW_UNROLL _Pragma("GCC unroll 32")
#else
#define EW_UNROLL
#endif
static inline void ew_erf_series(const double* c, int J, const double* t, float* r, size_t m) {
    size_t i;
    int j;
    for (i = 0; i < m; ++i) {
        const double z = t[i] * t[i] < 6.25 ? t[i] * t[i] : 6.25, w = z * z;
        double even = c[2 * J], odd = c[2 * J - 1];
        EW_UNROLL
        for (j = J - 1; j >= 0; --j) even = even * w + c[2 * j];
        EW_UNROLL
        for (j = J - 2; j >= 0; --j) odd = odd * w + c[2 * j + 1];
        r[i] = (float)(t[i] * (even + z * odd));
    }
}

static void row_erf(const ew_plan* p, float* y, const float* a, const float* b, size_t n) {
    double c[EW_ERF_TERMS], t[EW_ERF_CHUNK];
    float r[EW_ERF_CHUNK];
    size_t i0, i, m;
    int k;
    (void)b;
    c[0] = 1.12837916709551257390; /* 2 / sqrt(pi) */
    for (k = 1; k < EW_ERF_TERMS; ++k) c[k] = -c[k - 1] * (double)(2 * k - 1) / ((double)k * (double)(2 * k + 1));
    for (i0 = 0; i0 < n; i0 += m) { /* a chunk read whole before it is written: y may be a */
        int over1 = 0, over15 = 0, other = 0; /* some |t| above 1, above 1.5; some |t| above 2.5 or NaN */
        m = n - i0 < EW_ERF_CHUNK ? n - i0 : EW_ERF_CHUNK;
        for (i = 0; i < m; ++i) t[i] = ew_g(p, a[i0 + i]);
        for (i = 0; i < m; ++i) {
            over1 |= t[i] * t[i] > 1.0;
            over15 |= t[i] * t[i] > 2.25;
            other |= !(t[i] * t[i] <= 6.25);
        }
        if (!over1) {
            ew_erf_series(c, 8, t, r, m);
        } else if (!over15) {
            ew_erf_series(c, 12, t, r, m);
        } else {
            ew_erf_series(c, 20, t, r, m);
        }
        if (other) {
            for (i = 0; i < m; ++i) {
                if (!(t[i] * t[i] <= 6.25)) r[i] = (float)erf(t[i]);
            }
        }
        memcpy(y + i0, r, m * sizeof(float));
    }
}

/* g(x)^3 as (t * t) * t in double, rounded once to float: for a float t, t * t is exact, so the double result is
 * t^3 correctly rounded, as the C library's pow(t, 3) gives it (within 1 ulp of it after the float rounding in
 * any case); no pow call per element, so the loop vectorises (1x197x3072: 15 ms by pow, 0.2-0.3 ms so). Zeros, infinities and
 * NaN come out as pow's (pow(-0, 3) = -0, pow(-inf, 3) = -inf). sb: the ScaleBias still to apply. y may be a. */
static void ew_cube(const ew_plan* p, int sb, float* y, const float* a, size_t n) {
    size_t i;
    for (i = 0; i < n; ++i) {
        const double t = ew_g_sb(p, sb, a[i]);
        y[i] = (float)(t * t * t);
    }
}

/* CONSTANT_POW 3: a FLOAT16 ScaleBias (EW_SB_F32) was applied by ew_compute's pre-pass, as for the other unary rows. */
static void row_cube(const ew_plan* p, float* y, const float* a, const float* b, size_t n) {
    (void)b;
    ew_cube(p, p->sb == EW_SB_F64 ? EW_SB_F64 : EW_SB_NONE, y, a, n);
}

/* POW: pow(g(x), e). ScaleBias applies to the first input only, so it is done here (not by the
 * in-place pre-pass, which could overwrite an exponent the output aliases). */
static void row_pow(const ew_plan* p, float* y, const float* a, const float* b, size_t n) {
    size_t i;
    int cube = 1;
    for (i = 0; i < n; ++i) cube &= b[i] == 3.0f;
    if (cube) { /* x^3 (GELU's tanh form, as PyTorch exports it): ew_cube, vectorised */
        ew_cube(p, p->sb, y, a, n); /* POW applies its ScaleBias itself */
        return;
    }
    for (i = 0; i < n; ++i) y[i] = (float)pow(ew_g_sb(p, p->sb, a[i]), (double)b[i]);
}

/* ScaleBias as a step before a unary function: y = g(a) (y may be a). */
static void ew_scale_bias_row(const ew_plan* p, float* y, const float* a, size_t n) {
    size_t i;
    if (p->sb == EW_SB_F64) {
        const double s = p->s64, c = p->b64;
        for (i = 0; i < n; ++i) y[i] = (float)((double)a[i] * s + c);
    } else {
        const float s = p->s32, c = p->b32;
        for (i = 0; i < n; ++i) {
            float g = a[i] * s;
            y[i] = g + c;
        }
    }
}

enum {
    EW_ADD, EW_SUB, EW_MUL, EW_DIV, EW_MAX, EW_MIN, EW_POW,
    EW_IDENTITY, EW_ABS, EW_NEG, EW_CLIP, EW_SQRT, EW_RECIP, EW_EXP, EW_LOG, EW_TANH, EW_ERF, EW_CPOW,
    EW_SQUARE, EW_CUBE, EW_OP_COUNT
};

static const ew_op ew_ops[EW_OP_COUNT] = {
    [EW_ADD] = {2, 0, 0, row_add, row_add_splat_a, row_add_splat_b},
    [EW_SUB] = {2, 0, 0, row_sub, row_sub_splat_a, row_sub_splat_b},
    [EW_MUL] = {2, 0, 0, row_mul, row_mul_splat_a, row_mul_splat_b},
    [EW_DIV] = {2, 0, 0, row_div, row_div_splat_a, row_div_splat_b},
    [EW_MAX] = {2, 0, 0, row_max, row_max_splat_a, row_max_splat_b},
    [EW_MIN] = {2, 0, 0, row_min, row_min_splat_a, row_min_splat_b},
    [EW_POW] = {2, 1, 1, row_pow},
    [EW_IDENTITY] = {1, 0, 0, row_identity},
    [EW_ABS] = {1, 0, 0, row_abs},
    [EW_NEG] = {1, 0, 0, row_neg},
    [EW_CLIP] = {1, 0, 0, row_clip},
    [EW_SQRT] = {1, 1, 0, row_sqrt},
    [EW_RECIP] = {1, 1, 0, row_recip},
    [EW_EXP] = {1, 1, 1, row_exp},
    [EW_LOG] = {1, 1, 1, row_log},
    [EW_TANH] = {1, 1, 1, row_tanh},
    [EW_ERF] = {1, 1, 1, row_erf},
    [EW_CPOW] = {1, 1, 1, row_cpow},
    [EW_SQUARE] = {1, 1, 0, row_square},
    [EW_CUBE] = {1, 1, 0, row_cube},
};

/* One row of n elements: y = f(g(a), b), then the fused activation. y may be a or b (in place). */
static void ew_compute(const ew_plan* p, float* y, const float* a, const float* b, size_t n) {
    if (p->sb != EW_SB_NONE && (!p->op->sb_inside || p->sb == EW_SB_F32) && p->op->row != row_pow) {
        ew_scale_bias_row(p, y, a, n); /* unary: y aliases nothing but a */
        a = y;
    }
    if (p->op->row == row_identity) { /* an activation operator: the activation of a, in one pass */
        dmlpy_act_apply_row_from(&p->act, y, a, n);
        return;
    }
    p->op->row(p, y, a, b, n);
    if (p->act.kind != DMLPY_ACT_NONE) dmlpy_act_apply_row(&p->act, y, n);
}

/* ---- the loop ----------------------------------------------------------------------------------------- */

#if defined(EW_STREAM)
/* y[0..n) = src[0..n), the whole 32-byte units of y with non-temporal stores (ew_run fences them). */
static void ew_stream_row(float* y, const float* src, size_t n) {
    size_t j = 0;
    for (; j < n && ((uintptr_t)(y + j) & 31u) != 0; ++j) y[j] = src[j];
    for (; j + 8 <= n; j += 8) _mm256_stream_ps(y + j, _mm256_loadu_ps(src + j));
    for (; j < n; ++j) y[j] = src[j];
}
#endif

static void ew_chunk(const ew_plan* p, const uint64_t* off, uint64_t n) {
    float buf[EW_MAX_INPUTS + 1][EW_CHUNK];
    const float* src[EW_MAX_INPUTS] = {NULL, NULL};
    const uint32_t last = p->rank - 1;
    const uint64_t ys = p->st[0][last];
    float* dst;
    uint32_t k;
    uint64_t j;
    int splat = -1; /* FLOAT32, one operand a single value along the row (stride 0), the other contiguous: its index */
    if (!p->half && p->nin == 2 && p->op->splat_a != NULL && p->sb == EW_SB_NONE) {
        const uint64_t sa = p->st[1][last], sb = p->st[2][last];
        splat = sa == 1 && sb == 0 ? 1 : sa == 0 && sb == 1 ? 0 : -1;
    }
#if defined(EW_STREAM)
    if (p->copy && ys == 1 && p->stream && p->st[1][last] == 1) { /* a streamed copy of a contiguous row */
        ew_stream_row((float*)p->y + off[0], (const float*)p->in[0] + off[1], (size_t)n);
        return;
    }
#endif
    if (p->copy && ys == 1 && !p->stream) { /* a strided copy (a transpose): no buffer */
        const float* f = (const float*)p->in[0] + off[1];
        const uint64_t s = p->st[1][last];
        float* y = (float*)p->y + off[0];
        if (s == 1) {
            memmove(y, f, (size_t)n * sizeof(float));
        } else {
            for (j = 0; j < n; ++j) y[j] = f[j * s];
        }
        return;
    }
    for (k = 0; k < p->nin; ++k) {
        const uint64_t s = p->st[k + 1][last];
        float* b = buf[k + 1];
        if (p->half) {
            const uint16_t* h = (const uint16_t*)p->in[k] + off[k + 1];
            if (s == 1) {
                dmlpy_h2f_row(b, h, (size_t)n);
            } else if (s == 0) {
                const float v = dmlpy_h2f(h[0]);
                for (j = 0; j < n; ++j) b[j] = v;
            } else {
                for (j = 0; j < n; ++j) b[j] = dmlpy_h2f(h[j * s]);
            }
            src[k] = b;
        } else {
            const float* f = (const float*)p->in[k] + off[k + 1];
            if (s == 1) {
                src[k] = f;
            } else {
                if ((int)k == splat) {
                    src[k] = f; /* the value itself: the splat row reads f[0] */
                    continue;
                } else if (s == 0) {
                    const float v = f[0];
                    for (j = 0; j < n; ++j) b[j] = v;
                } else {
                    for (j = 0; j < n; ++j) b[j] = f[j * s];
                }
                src[k] = b;
            }
        }
    }
    dst = (!p->half && ys == 1 && !p->stream) ? (float*)p->y + off[0] : buf[0];
    if (splat == 1) {
        p->op->splat_b(dst, src[0], src[1][0], (size_t)n);
        if (p->act.kind != DMLPY_ACT_NONE) dmlpy_act_apply_row(&p->act, dst, (size_t)n);
    } else if (splat == 0) {
        p->op->splat_a(dst, src[1], src[0][0], (size_t)n);
        if (p->act.kind != DMLPY_ACT_NONE) dmlpy_act_apply_row(&p->act, dst, (size_t)n);
    } else {
        ew_compute(p, dst, src[0], src[1], (size_t)n);
    }
    if (dst != buf[0]) return;
#if defined(EW_STREAM)
    if (p->stream && ys == 1) {
        ew_stream_row((float*)p->y + off[0], dst, (size_t)n);
        return;
    }
#endif
    if (p->half) {
        uint16_t* h = (uint16_t*)p->y + off[0];
        if (ys == 1) {
            dmlpy_f2h_row(h, dst, (size_t)n);
        } else {
            for (j = 0; j < n; ++j) h[j * ys] = dmlpy_f2h(dst[j]);
        }
    } else {
        float* f = (float*)p->y + off[0];
        for (j = 0; j < n; ++j) f[j * ys] = dst[j];
    }
}

/* A FLOAT32 transpose tile: y[b * yt + j] = x[b + j * xs] for b < nb, j < n (x is contiguous along b,
 * y along j). With AVX, 8 x 8 blocks go through registers: eight 32-byte loads and eight 32-byte stores
 * instead of 64 scalar gathers. */
static void ew_transpose_tile(float* y, uint64_t yt, const float* x, uint64_t xs, uint64_t nb, uint64_t n) {
    uint64_t b = 0, j;
#if defined(__AVX__)
    for (; b + 8 <= nb; b += 8) {
        for (j = 0; j + 8 <= n; j += 8) {
            const float* s = x + b + j * xs;
            float* d = y + b * yt + j;
            const __m256 r0 = _mm256_loadu_ps(s), r1 = _mm256_loadu_ps(s + xs), r2 = _mm256_loadu_ps(s + 2 * xs),
                         r3 = _mm256_loadu_ps(s + 3 * xs), r4 = _mm256_loadu_ps(s + 4 * xs), r5 = _mm256_loadu_ps(s + 5 * xs),
                         r6 = _mm256_loadu_ps(s + 6 * xs), r7 = _mm256_loadu_ps(s + 7 * xs);
            const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3),
                         t3 = _mm256_unpackhi_ps(r2, r3), t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5),
                         t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
            const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE), u2 = _mm256_shuffle_ps(t1, t3, 0x44),
                         u3 = _mm256_shuffle_ps(t1, t3, 0xEE), u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE),
                         u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
            _mm256_storeu_ps(d, _mm256_permute2f128_ps(u0, u4, 0x20));
            _mm256_storeu_ps(d + yt, _mm256_permute2f128_ps(u1, u5, 0x20));
            _mm256_storeu_ps(d + 2 * yt, _mm256_permute2f128_ps(u2, u6, 0x20));
            _mm256_storeu_ps(d + 3 * yt, _mm256_permute2f128_ps(u3, u7, 0x20));
            _mm256_storeu_ps(d + 4 * yt, _mm256_permute2f128_ps(u0, u4, 0x31));
            _mm256_storeu_ps(d + 5 * yt, _mm256_permute2f128_ps(u1, u5, 0x31));
            _mm256_storeu_ps(d + 6 * yt, _mm256_permute2f128_ps(u2, u6, 0x31));
            _mm256_storeu_ps(d + 7 * yt, _mm256_permute2f128_ps(u3, u7, 0x31));
        }
        for (; j < n; ++j) {
            uint64_t k;
            for (k = b; k < b + 8; ++k) y[k * yt + j] = x[k + j * xs];
        }
    }
#endif
    for (; b < nb; ++b) {
        for (j = 0; j < n; ++j) y[b * yt + j] = x[b + j * xs];
    }
}

static void ew_run(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    const ew_plan* p = (const ew_plan*)vp;
    const uint32_t last = p->rank - 1;
    const uint64_t len = p->sizes[last];
    uint64_t item;
    (void)worker;
    for (item = begin; item < end; ++item) {
        uint64_t row = item / p->chunks_per_row, chunk = item % p->chunks_per_row;
        uint64_t off[EW_MAX_INPUTS + 1] = {0, 0, 0};
        uint64_t t = row, j0 = chunk * p->chunk, n, b0 = 0, b1 = 1, b;
        uint32_t i, k;
        for (i = last; i-- > 0;) {
            if (i == p->tile_dim) { /* a block of EW_TILE indices of this dim, walked below */
                b0 = (t % p->tile_blocks) * EW_TILE;
                t /= p->tile_blocks;
                b1 = b0 + EW_TILE < p->sizes[i] ? b0 + EW_TILE : p->sizes[i];
                continue;
            }
            {
                const uint64_t idx = t % p->sizes[i];
                t /= p->sizes[i];
                for (k = 0; k <= p->nin; ++k) off[k] += idx * p->st[k][i];
            }
        }
        for (k = 0; k <= p->nin; ++k) off[k] += j0 * p->st[k][last];
        n = len - j0 < p->chunk ? len - j0 : p->chunk;
        if (p->copy && p->tile_dim < p->rank && p->st[0][last] == 1 && p->st[1][p->tile_dim] == 1 && !p->stream) {
            ew_transpose_tile((float*)p->y + off[0] + b0 * p->st[0][p->tile_dim], p->st[0][p->tile_dim],
                              (const float*)p->in[0] + off[1] + b0, p->st[1][last], b1 - b0, n);
            continue;
        }
        for (b = b0; b < b1; ++b) {
            uint64_t o[EW_MAX_INPUTS + 1] = {off[0], off[1], off[2]};
            if (p->tile_dim < p->rank) {
                for (k = 0; k <= p->nin; ++k) o[k] += b * p->st[k][p->tile_dim];
            }
            ew_chunk(p, o, n);
        }
    }
#if defined(EW_STREAM)
    if (p->stream) _mm_sfence(); /* the streamed stores are visible before the caller joins */
#endif
}

/* ---- desc reading ------------------------------------------------------------------------------------- */

typedef struct ew_desc {
    int op;
    const DML_TENSOR_DESC* in[EW_MAX_INPUTS];
    const DML_TENSOR_DESC* out;
    const DML_SCALE_BIAS* sb;
    const DML_OPERATOR_DESC* fused;
    dmlpy_act act; /* a standalone ACTIVATION_*: IDENTITY, then this on each row */
    float lo, hi, exponent;
} ew_desc;

/* Unary descs with ScaleBias all begin { InputTensor, OutputTensor, ScaleBias }; binary ones
 * { ATensor, BTensor, OutputTensor }: read through those layouts once the type is known. */
static int32_t ew_read(const DML_OPERATOR_DESC* desc, ew_desc* d) {
    const void* v = desc->Desc;
    memset(d, 0, sizeof *d);
    if (v == NULL) return DMLPY_E_NULL_ARGUMENT;
    switch (desc->Type) {
    case DML_OPERATOR_ELEMENT_WISE_ADD: d->op = EW_ADD; break;
    case DML_OPERATOR_ELEMENT_WISE_ADD1: {
        const DML_ELEMENT_WISE_ADD1_OPERATOR_DESC* s = (const DML_ELEMENT_WISE_ADD1_OPERATOR_DESC*)v;
        d->op = EW_ADD;
        d->fused = s->FusedActivation;
        break;
    }
    case DML_OPERATOR_ELEMENT_WISE_SUBTRACT: d->op = EW_SUB; break;
    case DML_OPERATOR_ELEMENT_WISE_MULTIPLY: d->op = EW_MUL; break;
    case DML_OPERATOR_ELEMENT_WISE_DIVIDE: d->op = EW_DIV; break;
    case DML_OPERATOR_ELEMENT_WISE_MAX: d->op = EW_MAX; break;
    case DML_OPERATOR_ELEMENT_WISE_MIN: d->op = EW_MIN; break;
    case DML_OPERATOR_ELEMENT_WISE_POW: {
        const DML_ELEMENT_WISE_POW_OPERATOR_DESC* s = (const DML_ELEMENT_WISE_POW_OPERATOR_DESC*)v;
        d->op = EW_POW;
        d->in[0] = s->InputTensor;
        d->in[1] = s->ExponentTensor;
        d->out = s->OutputTensor;
        d->sb = s->ScaleBias;
        return DMLPY_OK;
    }
    case DML_OPERATOR_ELEMENT_WISE_NEGATE: {
        const DML_ELEMENT_WISE_NEGATE_OPERATOR_DESC* s = (const DML_ELEMENT_WISE_NEGATE_OPERATOR_DESC*)v;
        d->op = EW_NEG;
        d->in[0] = s->InputTensor;
        d->out = s->OutputTensor;
        return DMLPY_OK;
    }
    case DML_OPERATOR_ELEMENT_WISE_CLIP: {
        const DML_ELEMENT_WISE_CLIP_OPERATOR_DESC* s = (const DML_ELEMENT_WISE_CLIP_OPERATOR_DESC*)v;
        d->op = EW_CLIP;
        d->lo = s->Min;
        d->hi = s->Max;
        break;
    }
    case DML_OPERATOR_ELEMENT_WISE_CLIP1: {
        /* Min and Max are DML_SCALAR_UNIONs of MinMaxDataType, which equals the output's type: FLOAT32 or
         * FLOAT16 here (other types run on the NumPy kernel). */
        const DML_ELEMENT_WISE_CLIP1_OPERATOR_DESC* s = (const DML_ELEMENT_WISE_CLIP1_OPERATOR_DESC*)v;
        d->op = EW_CLIP;
        if (s->MinMaxDataType == DML_TENSOR_DATA_TYPE_FLOAT32) {
            d->lo = s->Min.Float32;
            d->hi = s->Max.Float32;
        } else if (s->MinMaxDataType == DML_TENSOR_DATA_TYPE_FLOAT16) {
            d->lo = dmlpy_h2f(s->Min.UInt16);
            d->hi = dmlpy_h2f(s->Max.UInt16);
        } else {
            return DMLPY_E_INVALID_DESC;
        }
        break;
    }
    case DML_OPERATOR_ELEMENT_WISE_CONSTANT_POW: {
        const DML_ELEMENT_WISE_CONSTANT_POW_OPERATOR_DESC* s = (const DML_ELEMENT_WISE_CONSTANT_POW_OPERATOR_DESC*)v;
        /* Exponents 0.5, -1 and 2 are sqrt, 1/x and x*x, as NumPy's power computes them (sqrt(-inf) is NaN
         * where pow(-inf, 0.5) is +inf; docs/deviations.md); 3 is (x*x)*x in double (ew_cube). */
        d->exponent = s->Exponent;
        d->op = d->exponent == 0.5f ? EW_SQRT : d->exponent == -1.0f ? EW_RECIP : d->exponent == 2.0f ? EW_SQUARE
              : d->exponent == 3.0f ? EW_CUBE : EW_CPOW;
        break;
    }
    case DML_OPERATOR_ELEMENT_WISE_IDENTITY: d->op = EW_IDENTITY; break;
    case DML_OPERATOR_ELEMENT_WISE_ABS: d->op = EW_ABS; break;
    case DML_OPERATOR_ELEMENT_WISE_SQRT: d->op = EW_SQRT; break;
    case DML_OPERATOR_ELEMENT_WISE_RECIP: d->op = EW_RECIP; break;
    case DML_OPERATOR_ELEMENT_WISE_EXP: d->op = EW_EXP; break;
    case DML_OPERATOR_ELEMENT_WISE_LOG: d->op = EW_LOG; break;
    case DML_OPERATOR_ELEMENT_WISE_TANH: d->op = EW_TANH; break;
    case DML_OPERATOR_ELEMENT_WISE_ERF: d->op = EW_ERF; break;
    default: {
        /* A standalone activation (UNSUPPORTED_OPERATOR for any other type). */
        const int32_t st = dmlpy_activation_read(desc, DMLPY_ACT_STANDALONE, &d->act, &d->in[0], &d->out);
        d->op = EW_IDENTITY;
        return st;
    }
    }
    if (ew_ops[d->op].inputs == 2) {
        const DML_ELEMENT_WISE_ADD_OPERATOR_DESC* s = (const DML_ELEMENT_WISE_ADD_OPERATOR_DESC*)v;
        d->in[0] = s->ATensor;
        d->in[1] = s->BTensor;
        d->out = s->OutputTensor;
    } else {
        const DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC* s = (const DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC*)v;
        d->in[0] = s->InputTensor;
        d->out = s->OutputTensor;
        d->sb = s->ScaleBias;
    }
    return DMLPY_OK;
}

/* ---- the operator ------------------------------------------------------------------------------------- */

int32_t dmlpy_element_wise(const DML_OPERATOR_DESC* desc, UINT inputCount, const DMLPY_BOUND_BUFFER* inputs,
                           UINT outputCount, const DMLPY_BOUND_BUFFER* outputs, UINT threadCount) {
    ew_plan p;
    ew_desc d;
    dmlpy_tensor t[EW_MAX_INPUTS + 1]; /* [0] output, [1..] inputs */
    dmlpy_staged_output stage;
    uint32_t i, k, n, order[DMLPY_MAX_RANK];
    uint64_t rows = 1, items, elements = 1, work;
    unsigned threads;
    int32_t st;

    if (desc == NULL) return DMLPY_E_NULL_ARGUMENT;
    st = ew_read(desc, &d);
    if (st != DMLPY_OK) return st;
    memset(&p, 0, sizeof p);
    p.op = &ew_ops[d.op];
    p.nin = (uint32_t)p.op->inputs;
    if (d.out == NULL) return DMLPY_E_NULL_ARGUMENT;
    for (k = 0; k < p.nin; ++k) {
        if (d.in[k] == NULL) return DMLPY_E_NULL_ARGUMENT;
    }
    if (d.fused != NULL) {
        st = dmlpy_activation_read(d.fused, DMLPY_ACT_FUSED, &p.act, NULL, NULL);
        if (st != DMLPY_OK) return st;
    } else {
        p.act = d.act; /* DMLPY_ACT_NONE (0) but for a standalone activation */
    }
    if (inputCount != p.nin || outputCount != 1) return DMLPY_E_BINDING_COUNT;
    if (inputs == NULL || outputs == NULL) return DMLPY_E_NULL_ARGUMENT;

    st = dmlpy_tensor_from_desc(d.out, &t[0]);
    if (st != DMLPY_OK) return st;
    for (k = 0; k < p.nin; ++k) {
        st = dmlpy_tensor_from_desc(d.in[k], &t[k + 1]);
        if (st != DMLPY_OK) return st;
    }
    if (t[0].data_type != DML_TENSOR_DATA_TYPE_FLOAT32 && t[0].data_type != DML_TENSOR_DATA_TYPE_FLOAT16) {
        return DMLPY_E_INVALID_DESC;
    }
    for (k = 1; k <= p.nin; ++k) {
        if (t[k].data_type != t[0].data_type || t[k].rank != t[0].rank) return DMLPY_E_INVALID_DESC;
        for (i = 0; i < t[0].rank; ++i) {
            if (t[k].sizes[i] != t[0].sizes[i]) return DMLPY_E_INVALID_DESC;
        }
    }
    st = dmlpy_tensor_bind(&t[0], &outputs[0]);
    if (st != DMLPY_OK) return st;
    for (k = 1; k <= p.nin; ++k) {
        st = dmlpy_tensor_bind(&t[k], &inputs[k - 1]);
        if (st != DMLPY_OK) return st;
        if (dmlpy_tensors_overlap(&t[k], &t[0])) {
            /* In place: the very same elements, element for element. */
            if (t[k].data != t[0].data) return DMLPY_E_INVALID_ARGUMENT;
            for (i = 0; i < t[0].rank; ++i) {
                if (t[0].sizes[i] > 1 && t[k].strides[i] != t[0].strides[i]) return DMLPY_E_INVALID_ARGUMENT;
            }
        }
    }
    st = dmlpy_output_stage(&t[0], &stage);
    if (st != DMLPY_OK) return st;

    p.half = t[0].data_type == DML_TENSOR_DATA_TYPE_FLOAT16;
    p.y = t[0].data;
    for (k = 0; k < p.nin; ++k) p.in[k] = t[k + 1].data;
    if (d.sb != NULL) {
        p.sb = p.half ? EW_SB_F32 : EW_SB_F64;
        p.s64 = (double)d.sb->Scale;
        p.b64 = (double)d.sb->Bias;
        p.s32 = d.sb->Scale;
        p.b32 = d.sb->Bias;
    }
    p.lo = d.lo;
    p.hi = d.hi;
    p.exponent = (double)d.exponent;

    /* Dims of size > 1, ordered by the output's stride, largest first (stable: ties keep their order). */
    n = 0;
    for (i = 0; i < t[0].rank; ++i) {
        if (t[0].sizes[i] > 1) {
            uint32_t j = n++;
            while (j > 0 && t[0].strides[order[j - 1]] < t[0].strides[i]) {
                order[j] = order[j - 1];
                --j;
            }
            order[j] = i;
        }
    }
    /* Merge a dim into the previous one when every tensor is contiguous across them. */
    p.rank = 0;
    for (i = 0; i < n; ++i) {
        const uint32_t dim = order[i];
        if (p.rank > 0) {
            const uint32_t l = p.rank - 1;
            int merge = 1;
            for (k = 0; k <= p.nin && merge; ++k) {
                /* strides of a bound tensor reach inside it: the product cannot overflow */
                merge = p.st[k][l] == t[k].strides[dim] * t[k].sizes[dim];
            }
            if (merge) {
                p.sizes[l] *= t[0].sizes[dim];
                for (k = 0; k <= p.nin; ++k) p.st[k][l] = t[k].strides[dim];
                continue;
            }
        }
        p.sizes[p.rank] = t[0].sizes[dim];
        for (k = 0; k <= p.nin; ++k) p.st[k][p.rank] = t[k].strides[dim];
        ++p.rank;
    }
    if (p.rank == 0) {
        p.rank = 1;
        p.sizes[0] = 1;
        for (k = 0; k <= p.nin; ++k) p.st[k][0] = 1;
    }
    for (i = 0; i < p.rank; ++i) elements *= p.sizes[i]; /* <= 2^32 - 1: checked by tensor_from_desc */
#if defined(EW_STREAM)
    /* In place, the output's lines are in cache already (read as the input): no streaming then. */
    p.stream = !p.half && p.st[0][p.rank - 1] == 1 && elements * 4u >= EW_STREAM_BYTES && stage.block == NULL;
    for (k = 1; k <= p.nin; ++k) {
        if (t[k].data == t[0].data) p.stream = 0;
    }
#endif
    p.copy = !p.half && p.op == &ew_ops[EW_IDENTITY] && p.sb == EW_SB_NONE && p.act.kind == DMLPY_ACT_NONE;
    /* A transpose: an input strided along the inner dim but contiguous along another one. Tiles of
     * EW_TILE x EW_TILE then read each of its cache lines once instead of once per element. */
    p.chunk = EW_CHUNK;
    p.tile_dim = p.rank;
    for (k = 1; k <= p.nin && p.tile_dim == p.rank; ++k) {
        if (p.st[k][p.rank - 1] > 1) {
            for (i = 0; i + 1 < p.rank; ++i) {
                if (p.st[k][i] == 1) p.tile_dim = i;
            }
        }
    }
    if (p.tile_dim < p.rank) {
        p.chunk = EW_TILE;
        p.tile_blocks = (p.sizes[p.tile_dim] + EW_TILE - 1) / EW_TILE;
    }
#if defined(EW_STREAM)
    /* A plain copy of contiguous rows (a channel shuffle, a slice of rows), as data_movement.c's copies: its
     * output of 4 MB and more skips the cache. */
    if (p.copy && !p.stream && p.tile_dim == p.rank && p.st[0][p.rank - 1] == 1 && p.st[1][p.rank - 1] == 1 &&
        elements * 4u >= EW_COPY_STREAM_BYTES && stage.block == NULL && t[1].data != t[0].data) {
        p.stream = 1;
    }
#endif
    for (i = 0; i + 1 < p.rank; ++i) rows *= i == p.tile_dim ? p.tile_blocks : p.sizes[i];
    p.chunks_per_row = (p.sizes[p.rank - 1] + p.chunk - 1) / p.chunk;
    items = rows * p.chunks_per_row;
    /* one unit per element read or written; a libm call per element costs about 16. A plain FLOAT32 copy (a
     * transpose, a channel shuffle) is data movement and counted as data_movement.c counts it: one unit per
     * 2 bytes read or written, 4 per element. At one unit per element its second thread came only from 1 MB
     * copied, and ShuffleNet's 1x2x116x28x28 shuffle (0.73 MB) ran on one: 26 us a call, 14.5 us on two. */
    work = p.copy ? elements * 4u
                  : elements * ((uint64_t)p.nin + 1u) *
                        ((p.op->transcendental || dmlpy_act_is_transcendental(p.act.kind)) ? 16u : 1u);
    threads = dmlpy_choose_threads(work, items, threadCount);
    dmlpy_parallel_for(items, dmlpy_choose_grain(items, threads), threads, ew_run, &p);
    dmlpy_output_unstage(&stage, 1);
    return DMLPY_OK;
}
