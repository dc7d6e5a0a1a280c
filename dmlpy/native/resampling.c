/*
 * resampling.c - DML_OPERATOR_RESAMPLE (96), RESAMPLE1 (116), RESAMPLE2 (161) and RESAMPLE3 (175) on
 * FLOAT32, FLOAT16, INT8 and UINT8 tensors of rank 1 to 8 with any element strides.
 *
 * Semantics: dmlpy/operators/resampling.py (the NumPy kernel) and docs/deviations.md. Per axis, output
 * index o maps to the input coordinate x = (o - OutputPixelOffset) / Scale - InputPixelOffset, computed
 * in float32 (RESAMPLE: offsets 0.5 and -0.5). Nearest neighbour takes one input element (RESAMPLE and
 * RESAMPLE1: floor(x + 0.5); RESAMPLE2 and RESAMPLE3: ceil(x) when RoundingDirection is INCREASING,
 * floor(x) otherwise); linear takes two, weights 1 - f and f of f = x - floor(x); RESAMPLE3's antialiased
 * linear filter where 0 < Scale < 0.5 takes the stretched triangle, edges in closed form. Indices are
 * clamped to the input. The axes are separable: the NumPy kernel resamples axis 0, then axis 1, ...,
 * each time summing its taps from 0 in tap order and skipping taps of weight 0.
 *
 * Bit-identical results. The per-axis tap tables (index, weight) are computed here with the NumPy
 * kernel's very operations (float32 coordinates, float64 weights, the same NaN and infinity cases), and
 * the values are combined in its order and precision: FLOAT32 and FLOAT16 in float (float32 there, the
 * weights rounded to float32 first, as a GPU's float32 arithmetic does), INT8 and UINT8 in double (float64
 * there, so every 8-bit interpolation is exact before it is truncated). An
 * output is sum_k w_k * (sum_k' w_k' * (... x)), the innermost sum over the lowest resampled axis, each sum
 * starting at +0 (so -0 never comes out, as in NumPy). Axes whose table is one tap of weight 1 (identity
 * or a pure gather, as nearest neighbour always is) only select input elements: multiplying by 1 is exact
 * and the sign of a zero inside is washed out by the outer sums, so they cost nothing. The C build uses
 * -std=c11, so no multiply-add is contracted.
 *
 * The loop: one axis R is the vector axis, the highest resampled one (its sum is the outermost), or when
 * none is resampled the one with the smallest output stride; every work item is one position of the other
 * axes times one chunk of R. The other resampled axes ("levels") nest recursively over vectors along R:
 * they produce the input range the chunk's taps read once, and a row pass applies R's taps (with a
 * vectorisable path for 2x linear at pixel centres, the upsampling real models use); without a resampled
 * axis the vector is the output itself. An axis left as it is whose output stride is below R's (NHWC's C
 * under W) becomes the lanes: the vectors are then blocks of R positions x lanes, so an NHWC image is
 * processed as rows of pixels x channels. For FLOAT32, a level of two taps over contiguous input runs is one
 * fused pass, and with lanes of output stride 1 each position's taps are summed across its lanes and stored
 * straight to the output (no block and no separate store pass); the operations and their order are those
 * of the general loops, so the bytes are the same. Items are split over threads by dmlpy_parallel_for; each output
 * belongs to one item, so any thread count gives the same bytes.
 *
 * Never trusting the caller: the desc (types, counts, pointers, finite scales) and both tensors are
 * re-read and checked, both buffers bound (dmlpy_tensor_bind: every strided extent inside its range), and
 * every index the tables hold is clamped to its axis, so every element read or written is inside.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dmlpy_internal.h"
#include "half.h"

#define RS_CHUNK 1024u     /* outputs along the vector axis per work item */
#define RS_LANE_BLOCK 2048u /* elements (positions x lanes) per work item with lanes */
#define RS_HALF_BLOCK 256u /* binary16 values converted at a time */

enum { RS_IDENTITY = 0, RS_GATHER = 1, RS_WEIGHTED = 2 };
enum { RS_ROUND_HALF_UP = 0, RS_ROUND_CEIL = 1, RS_ROUND_FLOOR = 2 };

typedef struct rs_axis {
    uint64_t in_size, out_size;
    uint64_t xs, ys;   /* element strides of the input and the output */
    int kind;          /* RS_IDENTITY, RS_GATHER or RS_WEIGHTED */
    int twice;         /* the table is 2x linear at pixel centres (rs_twice_pattern) */
    uint64_t* start;   /* [out_size + 1]: output o's taps are [start[o], start[o + 1]) */
    uint32_t* idx;     /* input index of each tap, < in_size */
    double* w;         /* its weight (never 0) */
    float* wf;         /* the weight rounded to float (FLOAT32, FLOAT16) */
    uint64_t taps, cap;
    uint64_t max_taps; /* most taps of one output */
} rs_axis;

typedef struct rs_plan {
    DML_TENSOR_DATA_TYPE type;
    uint32_t rank;
    uint32_t in_esize, out_esize;
    rs_axis axes[DMLPY_MAX_RANK];
    uint32_t R;             /* the vector axis */
    int row_weighted;       /* R is resampled: levels, then a row pass */
    int has_q;              /* row_weighted with lanes: an axis Q left as it is, of smaller output stride than R */
    uint32_t Q;
    uint64_t nq, xq, yq;    /* lanes per position along R (1 without Q) and Q's strides */
    uint64_t chunk;         /* outputs along R per work item */
    uint32_t levels;        /* resampled axes other than R, ascending (level 0 is the innermost sum) */
    uint32_t level_axis[DMLPY_MAX_RANK];
    uint32_t outers;        /* the axes other than R, ascending */
    uint32_t outer_axis[DMLPY_MAX_RANK];
    uint64_t chunks;        /* chunks of R per position of the other axes */
    uint32_t* chunk_lo;     /* row_weighted: the input range [lo, hi] each chunk's taps read */
    uint32_t* chunk_hi;
    uint64_t* goff;         /* R a gather: input element offset along R per output index */
    uint64_t vmax;          /* longest vector in elements: (chunk or input range) x nq */
    const char* x;
    char* y;
    char* scratch;
    size_t per_worker;      /* scratch bytes per worker */
} rs_plan;

/* A vector along R: element j is at element offset start + j times R's input stride, or table[j]. */
typedef struct rs_vec {
    uint64_t n;
    uint64_t start;
    const uint64_t* table;
} rs_vec;

/* ---- the desc --------------------------------------------------------------------------------------- */

typedef struct rs_desc {
    const DML_TENSOR_DESC* input;
    const DML_TENSOR_DESC* output;
    DML_INTERPOLATION_MODE mode;
    int rounding;
    int antialiased;
    UINT count;
    const FLOAT* scales;
    const FLOAT* input_offsets;  /* NULL: RESAMPLE's 0.5 */
    const FLOAT* output_offsets; /* NULL: RESAMPLE's -0.5 */
} rs_desc;

static int32_t rs_read(const DML_OPERATOR_DESC* desc, rs_desc* d) {
    DML_AXIS_DIRECTION direction = DML_AXIS_DIRECTION_INCREASING;
    int has_direction = 0;
    memset(d, 0, sizeof *d);
    if (desc->Desc == NULL) return DMLPY_E_NULL_ARGUMENT;
    switch (desc->Type) {
    case DML_OPERATOR_RESAMPLE: {
        const DML_RESAMPLE_OPERATOR_DESC* r = (const DML_RESAMPLE_OPERATOR_DESC*)desc->Desc;
        d->input = r->InputTensor;
        d->output = r->OutputTensor;
        d->mode = r->InterpolationMode;
        d->count = r->ScaleCount;
        d->scales = r->Scales;
        break;
    }
    case DML_OPERATOR_RESAMPLE1: {
        const DML_RESAMPLE1_OPERATOR_DESC* r = (const DML_RESAMPLE1_OPERATOR_DESC*)desc->Desc;
        d->input = r->InputTensor;
        d->output = r->OutputTensor;
        d->mode = r->InterpolationMode;
        d->count = r->DimensionCount;
        d->scales = r->Scales;
        d->input_offsets = r->InputPixelOffsets;
        d->output_offsets = r->OutputPixelOffsets;
        if (d->input_offsets == NULL || d->output_offsets == NULL) return DMLPY_E_NULL_ARGUMENT;
        break;
    }
    case DML_OPERATOR_RESAMPLE2: {
        const DML_RESAMPLE2_OPERATOR_DESC* r = (const DML_RESAMPLE2_OPERATOR_DESC*)desc->Desc;
        d->input = r->InputTensor;
        d->output = r->OutputTensor;
        d->mode = r->InterpolationMode;
        direction = r->RoundingDirection;
        has_direction = 1;
        d->count = r->DimensionCount;
        d->scales = r->Scales;
        d->input_offsets = r->InputPixelOffsets;
        d->output_offsets = r->OutputPixelOffsets;
        break;
    }
    case DML_OPERATOR_RESAMPLE3: {
        const DML_RESAMPLE3_OPERATOR_DESC* r = (const DML_RESAMPLE3_OPERATOR_DESC*)desc->Desc;
        d->input = r->InputTensor;
        d->output = r->OutputTensor;
        d->mode = r->InterpolationMode;
        direction = r->RoundingDirection;
        has_direction = 1;
        d->count = r->DimensionCount;
        d->scales = r->Scales;
        d->input_offsets = r->InputPixelOffsets;
        d->output_offsets = r->OutputPixelOffsets;
        d->antialiased = r->Antialiased != 0;
        break;
    }
    default:
        return DMLPY_E_UNSUPPORTED_OPERATOR;
    }
    if (has_direction && (d->input_offsets == NULL || d->output_offsets == NULL)) return DMLPY_E_NULL_ARGUMENT;
    if (d->input == NULL || d->output == NULL || d->scales == NULL) return DMLPY_E_NULL_ARGUMENT;
    if (d->mode != DML_INTERPOLATION_MODE_NEAREST_NEIGHBOR && d->mode != DML_INTERPOLATION_MODE_LINEAR) {
        return DMLPY_E_INVALID_DESC;
    }
    if (has_direction) {
        if (direction != DML_AXIS_DIRECTION_INCREASING && direction != DML_AXIS_DIRECTION_DECREASING) {
            return DMLPY_E_INVALID_DESC;
        }
        d->rounding = direction == DML_AXIS_DIRECTION_INCREASING ? RS_ROUND_CEIL : RS_ROUND_FLOOR;
    } else {
        d->rounding = RS_ROUND_HALF_UP;
    }
    return DMLPY_OK;
}

/* ---- tap tables: the NumPy kernel's operations, one output at a time -------------------------------- */

/* np.maximum / np.minimum: a NaN operand gives NaN. */
static double rs_np_max(double a, double b) { return a != a ? a : (b != b ? b : (a >= b ? a : b)); }
static double rs_np_min(double a, double b) { return a != a ? a : (b != b ? b : (a <= b ? a : b)); }

/* _clamped: NaN -> 0, +inf -> size - 1, -inf -> 0, then clipped to [0, size - 1]. */
static uint32_t rs_clamp(double v, uint64_t size) {
    if (v != v || !(v > 0.0)) return 0;
    if (v >= (double)(size - 1)) return (uint32_t)(size - 1);
    return (uint32_t)v;
}

static int rs_push(rs_axis* a, uint32_t idx, double w) {
    if (a->taps == a->cap) {
        uint64_t cap = a->cap ? 2 * a->cap : 64;
        uint32_t* i2;
        double* w2;
        if (cap > ((uint64_t)SIZE_MAX) / sizeof(double)) return 0;
        i2 = (uint32_t*)realloc(a->idx, (size_t)cap * sizeof(uint32_t));
        if (i2 == NULL) return 0;
        a->idx = i2;
        w2 = (double*)realloc(a->w, (size_t)cap * sizeof(double));
        if (w2 == NULL) return 0;
        a->w = w2;
        a->cap = cap;
    }
    a->idx[a->taps] = idx;
    a->w[a->taps] = w;
    ++a->taps;
    return 1;
}

/* _triangle_sum's arithmetic(a, b, sign). */
static double rs_arithmetic(double a, double b, double sign, double x, double stretch) {
    double n = rs_np_max(0.0, b - a + 1.0);
    return n > 0.0 ? n + sign * ((a + b) * n / 2.0 - n * x) / stretch : 0.0;
}

static double rs_triangle_sum(double low, double high, double x, double stretch) {
    double below = rs_np_min(high, floor(x));
    return rs_arithmetic(low, below, 1.0, x, stretch) +
           rs_arithmetic(rs_np_max(low, below + 1.0), high, -1.0, x, stretch);
}

/* _antialiased_weights for one coordinate (x already through nan_to_num). */
static int rs_antialiased_taps(rs_axis* a, double x, double stretch) {
    const double size = (double)a->in_size, last = size - 1.0;
    const double low = floor(x - stretch) + 1.0, high = ceil(x + stretch) - 1.0;
    const double total = rs_triangle_sum(low, high, x, stretch);
    const double before = rs_triangle_sum(low, rs_np_min(high, -1.0), x, stretch);
    const double after = rs_triangle_sum(rs_np_max(low, size), high, x, stretch);
    const double reach = ceil(2.0 * stretch);
    const uint64_t width = reach >= last ? a->in_size : (uint64_t)reach + 1u; /* min(size, ceil(2 s) + 1) */
    const double top = rs_np_min(high, last);
    /* np.clip(low, 0, size - 1): NaN stays NaN */
    const double base = low != low ? low : (low < 0.0 ? 0.0 : (low > last ? last : low));
    uint64_t j;
    double w = before / total;
    if (w != 0.0 && !rs_push(a, 0, w)) return 0;
    for (j = 0; j < width; ++j) {
        const double tap = base + (double)j;
        double v = 0.0;
        if (tap <= top && tap >= low) v = rs_np_max(0.0, 1.0 - fabs(tap - x) / stretch);
        w = v / total;
        if (w != 0.0 && !rs_push(a, rs_clamp(tap, a->in_size), w)) return 0;
    }
    w = after / total;
    if (w != 0.0 && !rs_push(a, (uint32_t)(a->in_size - 1), w)) return 0;
    return 1;
}

/* 1 when the table is 2x linear at pixel centres: out = 2 * in, output 2m takes (m - 1, 0.25), (m, 0.75)
 * and 2m + 1 takes (m, 0.75), (m + 1, 0.25), indices clamped. */
static int rs_twice_pattern(const rs_axis* a) {
    uint64_t j;
    if (a->out_size != 2 * a->in_size) return 0;
    for (j = 0; j < a->out_size; ++j) {
        const uint64_t m = j / 2, s = a->start[j];
        uint64_t i0, i1;
        double w0, w1;
        if (a->start[j + 1] - s != 2) return 0;
        if (j % 2 == 0) {
            i0 = m > 0 ? m - 1 : 0;
            i1 = m;
            w0 = 0.25;
            w1 = 0.75;
        } else {
            i0 = m;
            i1 = m + 1 < a->in_size ? m + 1 : a->in_size - 1;
            w0 = 0.75;
            w1 = 0.25;
        }
        if (a->idx[s] != i0 || a->idx[s + 1] != i1 || a->w[s] != w0 || a->w[s + 1] != w1) return 0;
    }
    return 1;
}

static int32_t rs_build_axis(rs_axis* a, const rs_desc* d, uint32_t axis) {
    const float scale = d->scales[axis];
    const float in_off = d->input_offsets ? d->input_offsets[axis] : 0.5f;
    const float out_off = d->output_offsets ? d->output_offsets[axis] : -0.5f;
    /* _antialiasing: 0 < Scale < 0.5 (the scale is finite here) */
    const int aa = d->antialiased && d->mode == DML_INTERPOLATION_MODE_LINEAR && scale > 0.0f && scale < 0.5f;
    const double stretch = aa ? 1.0 / (double)scale : 0.0;
    uint64_t o, k;
    int single = 1, identity = a->in_size == a->out_size;

    a->start = (uint64_t*)malloc((size_t)(a->out_size + 1) * sizeof(uint64_t));
    if (a->start == NULL) return DMLPY_E_OUT_OF_MEMORY;
    for (o = 0; o < a->out_size; ++o) {
        /* input_coordinates: float32 throughout */
        const float xf = ((float)o - out_off) / scale - in_off;
        a->start[o] = a->taps;
        if (d->mode == DML_INTERPOLATION_MODE_NEAREST_NEIGHBOR) {
            float r = d->rounding == RS_ROUND_HALF_UP ? floorf(xf + 0.5f) : d->rounding == RS_ROUND_CEIL ? ceilf(xf) : floorf(xf);
            if (!rs_push(a, rs_clamp((double)r, a->in_size), 1.0)) return DMLPY_E_OUT_OF_MEMORY;
        } else if (aa) {
            double x = (double)xf; /* np.nan_to_num */
            if (x != x) x = 0.0;
            else if (x == HUGE_VAL) x = 1.7976931348623157e308;
            else if (x == -HUGE_VAL) x = -1.7976931348623157e308;
            if (!rs_antialiased_taps(a, x, stretch)) return DMLPY_E_OUT_OF_MEMORY;
        } else {
            const double x = (double)xf, low = floor(x), f = x - low, w0 = 1.0 - f;
            if (w0 != 0.0 && !rs_push(a, rs_clamp(low, a->in_size), w0)) return DMLPY_E_OUT_OF_MEMORY;
            if (f != 0.0 && !rs_push(a, rs_clamp(low + 1.0, a->in_size), f)) return DMLPY_E_OUT_OF_MEMORY;
        }
        {
            const uint64_t n = a->taps - a->start[o];
            if (n > a->max_taps) a->max_taps = n;
            if (n != 1 || a->w[a->start[o]] != 1.0) {
                single = 0;
                identity = 0;
            } else if (a->idx[a->start[o]] != o) {
                identity = 0;
            }
        }
    }
    a->start[a->out_size] = a->taps;
    a->wf = (float*)malloc((size_t)(a->taps ? a->taps : 1) * sizeof(float));
    if (a->wf == NULL) return DMLPY_E_OUT_OF_MEMORY;
    for (k = 0; k < a->taps; ++k) a->wf[k] = (float)a->w[k]; /* tap.astype(float32) */
    a->kind = identity ? RS_IDENTITY : single ? RS_GATHER : RS_WEIGHTED;
    a->twice = a->kind == RS_WEIGHTED && rs_twice_pattern(a);
    return DMLPY_OK;
}

/* ---- stores ------------------------------------------------------------------------------------------ */

/* element_wise.store for 8-bit integers: truncated toward zero, NaN -> 0, saturated. */
static inline int32_t rs_saturate(double v, double lo, double hi) {
    double t;
    if (v != v) return 0;
    t = trunc(v);
    if (t >= hi) return (int32_t)hi;
    if (t <= lo) return (int32_t)lo;
    return (int32_t)t;
}

/* ---- the typed loops: double (INT8, UINT8) and float (FLOAT32, FLOAT16) ------------------------------ */

#define RS_T double
#define RS_NAME(name) name##_d
#define RS_WEIGHT(a, k) ((a)->w[k])
#include "resampling_loops.h"
#undef RS_T
#undef RS_NAME
#undef RS_WEIGHT

#define RS_T float
#define RS_NAME(name) name##_f
#define RS_WEIGHT(a, k) ((a)->wf[k])
#include "resampling_loops.h"
#undef RS_T
#undef RS_NAME
#undef RS_WEIGHT

/* ---- planning ---------------------------------------------------------------------------------------- */

static void rs_free(rs_plan* p) {
    uint32_t i;
    for (i = 0; i < DMLPY_MAX_RANK; ++i) {
        free(p->axes[i].start);
        free(p->axes[i].idx);
        free(p->axes[i].w);
        free(p->axes[i].wf);
    }
    free(p->chunk_lo);
    free(p->chunk_hi);
    free(p->goff);
    free(p->scratch);
}

/* The vector axis: the highest resampled axis (its sum is the outermost, so its taps can combine rows the
 * other levels computed once; an axis left as it is with a smaller output stride becomes the lanes), or,
 * when no axis is resampled, the one of size > 1 with the smallest output stride (the last when none). */
static uint32_t rs_choose_vector_axis(const rs_plan* p) {
    uint32_t i, best = p->rank - 1;
    int found = 0;
    for (i = p->rank; i-- > 0;) {
        if (p->axes[i].kind == RS_WEIGHTED) return i;
    }
    for (i = p->rank; i-- > 0;) {
        const rs_axis* a = &p->axes[i];
        if (a->out_size < 2) continue;
        if (!found || a->ys < p->axes[best].ys) {
            best = i;
            found = 1;
        }
    }
    return best;
}

/* The lane axis of a resampled R: the axis left as it is (IDENTITY, size > 1) with the smallest output stride,
 * when that stride is below R's (NHWC: C under W), so a work item's vectors are blocks (R positions x lanes). */
static int32_t rs_choose_lanes(const rs_plan* p) {
    int32_t best = -1;
    uint32_t i;
    for (i = 0; i < p->rank; ++i) {
        const rs_axis* a = &p->axes[i];
        if (i == p->R || a->kind != RS_IDENTITY || a->out_size < 2 || a->out_size > 65536 || a->ys >= p->axes[p->R].ys) continue;
        if (best < 0 || a->ys < p->axes[best].ys) best = (int32_t)i;
    }
    return best;
}

/* Chunks of R and (R resampled) the input range each chunk's taps read; vmax in elements. */
static int32_t rs_plan_chunks(rs_plan* p) {
    const rs_axis* r = &p->axes[p->R];
    uint64_t c, longest;
    free(p->chunk_lo);
    free(p->chunk_hi);
    p->chunk_lo = p->chunk_hi = NULL;
    p->chunk = p->nq > 1 ? (RS_LANE_BLOCK / p->nq ? RS_LANE_BLOCK / p->nq : 1) : RS_CHUNK;
    p->chunks = (r->out_size + p->chunk - 1) / p->chunk;
    longest = r->out_size < p->chunk ? r->out_size : p->chunk;
    if (p->row_weighted) {
        p->chunk_lo = (uint32_t*)malloc((size_t)p->chunks * sizeof(uint32_t));
        p->chunk_hi = (uint32_t*)malloc((size_t)p->chunks * sizeof(uint32_t));
        if (p->chunk_lo == NULL || p->chunk_hi == NULL) return DMLPY_E_OUT_OF_MEMORY;
        for (c = 0; c < p->chunks; ++c) {
            const uint64_t j0 = c * p->chunk, j1 = j0 + p->chunk < r->out_size ? j0 + p->chunk : r->out_size;
            uint64_t k;
            uint32_t lo = UINT32_MAX, hi = 0;
            for (k = r->start[j0]; k < r->start[j1]; ++k) {
                if (r->idx[k] < lo) lo = r->idx[k];
                if (r->idx[k] > hi) hi = r->idx[k];
            }
            if (lo > hi) lo = hi = 0; /* no taps at all: read element 0, use nothing */
            p->chunk_lo[c] = lo;
            p->chunk_hi[c] = hi;
            if ((uint64_t)hi - lo + 1 > longest) longest = (uint64_t)hi - lo + 1;
        }
    }
    p->vmax = longest * p->nq; /* nq <= 65536 and longest < 2^32 */
    return DMLPY_OK;
}

static int32_t rs_plan_loop(rs_plan* p) {
    rs_axis* r;
    uint32_t i;
    uint64_t c;
    int32_t st, q;
    p->R = rs_choose_vector_axis(p);
    r = &p->axes[p->R];
    p->row_weighted = r->kind == RS_WEIGHTED;
    p->nq = 1;
    q = p->row_weighted ? rs_choose_lanes(p) : -1;
    if (q >= 0) {
        p->has_q = 1;
        p->Q = (uint32_t)q;
        p->nq = p->axes[q].out_size;
        p->xq = p->axes[q].xs;
        p->yq = p->axes[q].ys;
    }
    st = rs_plan_chunks(p);
    if (st != DMLPY_OK) return st;
    if (p->has_q && p->vmax > ((uint64_t)1 << 20)) { /* blocks too large (a wide filter): rows of R alone */
        p->has_q = 0;
        p->nq = 1;
        st = rs_plan_chunks(p);
        if (st != DMLPY_OK) return st;
    }
    for (i = 0; i < p->rank; ++i) {
        if (i == p->R || (p->has_q && i == p->Q)) continue;
        p->outer_axis[p->outers++] = i;
        if (p->axes[i].kind == RS_WEIGHTED) p->level_axis[p->levels++] = i;
    }
    if (!p->row_weighted && r->kind == RS_GATHER) {
        p->goff = (uint64_t*)malloc((size_t)r->out_size * sizeof(uint64_t));
        if (p->goff == NULL) return DMLPY_E_OUT_OF_MEMORY;
        for (c = 0; c < r->out_size; ++c) p->goff[c] = (uint64_t)r->idx[r->start[c]] * r->xs;
    }
    return DMLPY_OK;
}

/* ---- the entry point --------------------------------------------------------------------------------- */

int32_t dmlpy_resample(const DML_OPERATOR_DESC* desc, UINT inputCount, const DMLPY_BOUND_BUFFER* inputs,
                       UINT outputCount, const DMLPY_BOUND_BUFFER* outputs, UINT threadCount) {
    rs_desc d;
    rs_plan p;
    dmlpy_tensor xt, yt;
    dmlpy_staged_output stage;
    int32_t st;
    uint32_t i;
    uint64_t items, out_count = 1, work, taps_product = 1;
    unsigned threads;
    int in_float;

    if (desc == NULL) return DMLPY_E_NULL_ARGUMENT;
    st = rs_read(desc, &d);
    if (st != DMLPY_OK) return st;
    if (inputCount != 1 || outputCount != 1) return DMLPY_E_BINDING_COUNT;
    if (inputs == NULL || outputs == NULL) return DMLPY_E_NULL_ARGUMENT;
    st = dmlpy_tensor_from_desc(d.input, &xt);
    if (st != DMLPY_OK) return st;
    st = dmlpy_tensor_from_desc(d.output, &yt);
    if (st != DMLPY_OK) return st;
    if (xt.data_type != yt.data_type || xt.rank != yt.rank || d.count != xt.rank) return DMLPY_E_INVALID_DESC;
    switch (xt.data_type) {
    case DML_TENSOR_DATA_TYPE_FLOAT32:
    case DML_TENSOR_DATA_TYPE_FLOAT16:
    case DML_TENSOR_DATA_TYPE_INT8:
    case DML_TENSOR_DATA_TYPE_UINT8:
        break;
    default:
        return DMLPY_E_INVALID_DESC;
    }
    for (i = 0; i < d.count; ++i) {
        if (!isfinite(d.scales[i])) return DMLPY_E_INVALID_DESC;
    }
    st = dmlpy_tensor_bind(&xt, &inputs[0]);
    if (st != DMLPY_OK) return st;
    st = dmlpy_tensor_bind(&yt, &outputs[0]);
    if (st != DMLPY_OK) return st;
    if (dmlpy_tensors_overlap(&xt, &yt)) return DMLPY_E_INVALID_ARGUMENT;

    memset(&p, 0, sizeof p);
    p.type = xt.data_type;
    p.rank = xt.rank;
    p.in_esize = xt.element_size;
    p.out_esize = yt.element_size;
    for (i = 0; i < p.rank; ++i) {
        p.axes[i].in_size = xt.sizes[i];
        p.axes[i].out_size = yt.sizes[i];
        p.axes[i].xs = xt.strides[i];
        st = rs_build_axis(&p.axes[i], &d, i);
        if (st != DMLPY_OK) {
            rs_free(&p);
            return st;
        }
        out_count *= yt.sizes[i]; /* <= 2^32 - 1: checked by tensor_from_desc */
        if (p.axes[i].kind == RS_WEIGHTED && taps_product < ((uint64_t)1 << 20)) taps_product *= p.axes[i].max_taps;
    }

    st = dmlpy_output_stage(&yt, &stage);
    if (st != DMLPY_OK) {
        rs_free(&p);
        return st;
    }
    for (i = 0; i < p.rank; ++i) p.axes[i].ys = yt.strides[i];
    st = rs_plan_loop(&p);
    if (st != DMLPY_OK) {
        dmlpy_output_unstage(&stage, 0);
        rs_free(&p);
        return st;
    }
    p.x = xt.data;
    p.y = yt.data;
    in_float = p.type == DML_TENSOR_DATA_TYPE_FLOAT16 || p.type == DML_TENSOR_DATA_TYPE_FLOAT32;

    items = (out_count / p.axes[p.R].out_size / p.nq) * p.chunks;
    work = out_count * (2 + taps_product);
    threads = dmlpy_choose_threads(work, items, threadCount);
    {
        /* per worker: a buffer per level, one for the loaded row, one for the outputs of a chunk */
        const uint64_t elem = in_float ? sizeof(float) : sizeof(double);
        uint64_t bytes = ((uint64_t)p.levels + 2) * (p.vmax + 16) * elem + 64, total;
        if (!dmlpy_mul_u64(bytes, threads, &total) || total > (uint64_t)SIZE_MAX) {
            dmlpy_output_unstage(&stage, 0);
            rs_free(&p);
            return DMLPY_E_OUT_OF_MEMORY;
        }
        p.per_worker = (size_t)((bytes + 63) / 64 * 64);
        p.scratch = (char*)malloc(p.per_worker * threads + 64);
        if (p.scratch == NULL) {
            dmlpy_output_unstage(&stage, 0);
            rs_free(&p);
            return DMLPY_E_OUT_OF_MEMORY;
        }
    }
    dmlpy_parallel_for(items, dmlpy_choose_grain(items, threads), threads, in_float ? rs_run_f : rs_run_d, &p);
    dmlpy_output_unstage(&stage, 1);
    rs_free(&p);
    return DMLPY_OK;
}
