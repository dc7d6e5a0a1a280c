/*
 * winograd.c - the Winograd path of CONVOLUTION (53) for 2-D, dilation-1 problems that are, per output phase,
 * dense stride-1 correlations with a 3x3 or a 2x2 filter (convolution.c's try_winograd hands them over in
 * that form, see dmlpy_wino_problem in conv_shared.h):
 *  - F(2x2, 3x3), m = 2: 3x3 stride-1 FORWARD, and 3x3 stride-1 BACKWARD (a forward correlation with the
 *    filter flipped, its channels swapped per group and padding 2 - StartPadding); one phase.
 *  - F(3x3, 2x2), m = 3: BACKWARD with filter size 2 x stride per dim (ConvTranspose k4 s2, k2 s1, k6 s3):
 *    output phase (rh, rw) (outputs rh + s*i, rw + s*j) receives exactly two taps per dim, at consecutive
 *    inputs, so it is a 2x2 stride-1 correlation with the sub-filter those taps pick; up to 16 phases, each
 *    writing at the output strides times s.
 *
 * Algorithm. Output tile (th, tw) of a phase covers outputs [m*th, m*th + m) x [m*tw, m*tw + m) and reads
 * the 4x4 input patch d at (m*th - pad_h, m*tw - pad_w), zeros outside the input. Per tile and channel pair
 *   Y = A^T [ (G g G^T) (.) (B^T d B) ] A      ((.): element-wise over the 16 "elements" e = (r, c))
 * so the 36 multiply-adds of a tile (m = 2: 4 outputs x 9 taps; m = 3: 9 outputs x 4 taps) become 16, and
 * the sum over input channels becomes, per element e, a matrix product M_e[oc][tile] = sum_ic U_e[oc][ic] *
 * V_e[ic][tile] (2.25x fewer multiply-adds than the GEMM path, plus the transforms). Both variants use the
 * points 0, 1, -1 and infinity, so B^T and A^T hold only 0 and +-1.
 *  1. Filter transform U = G g G^T, in double (8 output channels in the lanes), rounded once to float32
 *     and stored in the micro-kernel's 8-row panels [phase][g][e][oc/8][ic][8], two input channels per
 *     64-byte store. U's blocks are padded by a line: power-of-two distances put all 16 element streams in
 *     one L1 set, which made this stage several times slower. Every phase's U is made at once and then one
 *     pass runs all items, phase-major; except on one thread when all of U would not fit in L2 (8 MB for
 *     k4 s2 from 256 channels): then phase by phase, so that each phase's U is read back while in cache.
 *  2. Work items (phase, image, group, run of qb tiles). Tiles are numbered row-major over a grid with one
 *     extra tile column, q = th*tpr + tw (tpr = tile columns + 1). Patch row i of tile row th (input row
 *     m*th + i - pad_h) is packed into plane i % m at plane row th + i / m (from the item's first tile row),
 *     plane rows m*tpr floats apart, so that patch row i of tile q starts at m*q in its plane: a 16-lane
 *     vector holds 16 consecutive tiles even across tile rows (the extra column, which the last real tile
 *     of a row reads past, is computed and dropped: 1/tpr of the work).
 *     Per input channel: pack the planes (float32, zero padding, any input strides, float16 converted),
 *     deinterleave each patch row into 4 vectors with permutes, apply B^T along the rows, then along the
 *     columns, store V[e][ic][tile]. The next channel is packed before this one is transformed, so the
 *     transform's loads do not wait for the packing stores.
 *  3. Per element e: M_e = U_e V_e with an AVX-512 8 x 32 micro-kernel (16 accumulators, U broadcast, V
 *     rows loaded), and an 8 x 16 one for a last odd vector of tiles.
 *  4. Per output channel and 16 tiles: A^T M A, re-interleaved into output rows with permutes, then the
 *     epilogue helpers the GEMM path uses (conv_shared.h): + bias, fused activation, float16 rounding once,
 *     masked vector stores for output W strides 1 and 2 (stride 2: the phases of k4 s2), scalar stores for
 *     any other. OutputPadding positions are left to convolution.c (its act(bias) fill).
 * qb (a multiple of 32, at most 128) keeps an item's V and M within about 1 MB (L2): larger items pack
 * fewer input rows twice (items overlap by the patch halo) but must stay cache-resident. Threads take items
 * through dmlpy_parallel_for; each has its own planes, V and M. With fewer items than twice the threads (a
 * small plane is one item) the items' V and M are shared instead, and made in two passes: stage 1 split by
 * runs of input channels, then stages 2 and 3 by runs of output panels. A result does not depend on the split.
 *
 * Error behaviour: float32 except the filter transform. The input transform's sums and differences before
 * the channel sum, and the output transform's after it, add roundings a direct sum does not have.
 * Measured against float64 with x, w uniform in [-1, 1], as max |error| / (1 + |y|): F(2x2, 3x3), 64 -> 64
 * channels, 56x56: 8e-6 (GEMM path 6e-6); 256 -> 256, 14x14: 3e-5. F(3x3, 2x2), k4 s2, 256 -> 128, 12x12:
 * 2.1e-5 (GEMM path 7.5e-6). The tests allow 1e-4. F(4x4, 3x3) was measured too (about 1.25x faster): 2.7e-4
 * and 7.8e-4 on the same problems, beyond the tests' tolerances, so it is not used.
 * Infinities and NaNs: the transforms would spread one over its whole 4x4 patch (inf - inf = NaN, and
 * outputs a direct sum never reaches it would see it), so packing notes any infinite or NaN input or
 * transformed filter value and the call is then declined after the fact (-1) and redone by the other
 * paths, which give the direct sum's results. Finite inputs near FLT_MAX can still overflow in the input
 * transform where a direct sum might not.
 *
 * When it is chosen (thresholds measured against the GEMM path, one thread, 3x3 forward): AVX-512 builds;
 * at least WINO_MIN_CIN input and WINO_MIN_COUT output channels per group (16: with 8 or 12 the two paths
 * tie, with 16 Winograd is ~1.1x faster, with 32 or more 1.4-1.8x); at least WINO_MIN_OUT computed outputs
 * in the largest phase, per image and group (64: an 8x8 output is faster, 6x6 slower); scratch within
 * WINO_SCRATCH_CAP (an output that maps two indices to one element is staged by convolution.c, so it arrives
 * packed). Otherwise -1: the GEMM, depthwise and direct paths run as before.
 *
 * Memory safety: x, w and b are read and y is written only at the element indices of the validated,
 * bound tensors (the index forms of convolution.c's paths; the phases' filter taps are filter elements by
 * construction, their outputs y0 + s*i stay below the computed outputs; vector loads of the input are masked
 * to the columns inside it). Tiles, lanes and patch elements outside the problem read zeros or this call's
 * scratch and are never stored.
 */
#include <string.h>

#include "conv_shared.h"

#if defined(CONV_AVX512)

#define WINO_MMAX 3 /* output tile side: m = 2 or 3 */
#define WINO_A 4    /* input tile side, m + R - 1 for both variants */
#define WINO_E (WINO_A * WINO_A)

/* Tiles per work item: a multiple of the micro-kernel's width, at most WINO_QB_MAX, V and M within about
 * WINO_ITEM_BYTES. */
#ifndef WINO_QB_MAX
#define WINO_QB_MAX 128
#endif
#ifndef WINO_ITEM_BYTES
#define WINO_ITEM_BYTES ((uint64_t)1 << 20)
#endif
#ifndef WINO_MIN_CIN
#define WINO_MIN_CIN 16
#endif
#ifndef WINO_MIN_COUT
#define WINO_MIN_COUT 16
#endif
#ifndef WINO_MIN_OUT
#define WINO_MIN_OUT 64
#endif
#ifndef WINO_SCRATCH_CAP
#define WINO_SCRATCH_CAP ((uint64_t)1 << 30) /* bytes */
#endif
#define WINO_MR 8
#ifndef WINO_U_ALL_FLOATS
#define WINO_U_ALL_FLOATS ((uint64_t)1 << 19) /* 2 MB */
#endif
#ifndef WINO_PREFETCH_CH
#define WINO_PREFETCH_CH 4 /* input channels ahead */
#endif
#define WINO_NR 32
/* floats readable after the last packed element of a plane (vector loads past a row's end) */
#define WINO_PLANE_SLACK 96

typedef struct wino_plan {
    const dmlpy_wino_problem* p;
    unsigned m;                  /* output tile side */
    int all;                     /* every phase's U at once, one pass over all items; else phase by phase */
    unsigned f;                  /* phase by phase: the phase being run */
    uint64_t items;              /* items per phase */
    uint64_t TH, TW, tpr, Lw, Q; /* tile rows, tile columns, tiles per grid row (TW + 1), plane row, grid */
    uint64_t qb;                 /* tiles per item (multiple of WINO_NR, at most WINO_QB_MAX) */
    uint64_t nqc;                /* items per (n, g) */
    uint64_t nocb, cout_pad;     /* 8-row panels */
    uint64_t rows_max, plane_stride;
    uint64_t u_es;    /* floats between the elements' blocks of U */
    uint64_t u_group; /* floats of U per (phase, group) */
    float* u;
    unsigned char* nonfinite; /* per worker: saw an infinity or NaN in the filter or input */
    uint64_t worker_floats;
    float* work; /* per worker: planes | V | M */
    uint64_t v_es, m_es; /* floats between the elements' blocks of V and M */
    uint64_t v_floats, m_floats;
    /* Fewer items than twice the threads (small planes): each item's V and M are shared, at shared + item * (v_floats +
     * m_floats), and made in two passes, input channels split into ics runs, then output panels into ocs runs */
    float* shared;
    uint64_t ics, ocs;
} wino_plan;

/* ---- filter transform -------------------------------------------------------------------------- */

/* The variants, index m - 2: F(2x2, 3x3) and F(3x3, 2x2), both on the points 0, 1, -1, infinity.
 * G (filter, 4 x R, R = 5 - m) is {1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1} and {1 0; .5 .5; .5 -.5; 0 1}
 * (wino_filter_g); B^T (input, 4 x 4) and A^T (output, m x 4) as data: */
static const signed char wino_BT[2][WINO_A][WINO_A] = {{{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}},
                                                       {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, -1, 0, 1}}};
static const signed char wino_AT[2][WINO_MMAX][WINO_A] = {{{1, 1, 1, 0}, {0, 1, -1, -1}, {0, 0, 0, 0}},
                                                          {{1, 1, 1, 0}, {0, 1, -1, 0}, {0, 1, 1, 1}}};

/* Row `row` of a 0/+-1 matrix applied to 4 vectors: the terms with +1 summed in order, then those with -1
 * subtracted in order (m is a constant at every call site, so this folds to the adds and subtracts). */
CONV_INLINE __m512 wino_combine(const signed char* coef, const __m512* d) {
    __m512 acc = _mm512_setzero_ps();
    int k, first = 1;
    for (k = 0; k < WINO_A; ++k) {
        if (coef[k] == 1) {
            acc = first ? d[k] : _mm512_add_ps(acc, d[k]);
            first = 0;
        }
    }
    for (k = 0; k < WINO_A; ++k) {
        if (coef[k] == -1) acc = _mm512_sub_ps(acc, d[k]);
    }
    return acc;
}

/* G applied to the R = 5 - m taps of a filter row or column (8 output channels in the double lanes): the
 * 4 element values. In double, so that U is rounded once, to float32, when it is stored. */
CONV_INLINE void wino_filter_g(unsigned m, const __m512d* g, __m512d* t) {
    const __m512d half = _mm512_set1_pd(0.5);
    if (m == 2) {
        const __m512d even = _mm512_add_pd(g[0], g[2]);
        t[0] = g[0];
        t[1] = _mm512_mul_pd(half, _mm512_add_pd(even, g[1]));
        t[2] = _mm512_mul_pd(half, _mm512_sub_pd(even, g[1]));
        t[3] = g[2];
    } else {
        t[0] = g[0];
        t[1] = _mm512_mul_pd(half, _mm512_add_pd(g[0], g[1]));
        t[2] = _mm512_mul_pd(half, _mm512_sub_pd(g[0], g[1]));
        t[3] = g[1];
    }
}

/* The filter elements at index at + r*wo, r < rows (zeros for r >= rows), in the 8 double lanes. Scalar
 * loads into registers: the rows are distinct cache lines, which a gather fetches far more slowly (one
 * lane at a time on cores with the gather-sampling mitigation), and a reload of scalar stores as a vector
 * would stall on store forwarding. */
CONV_INLINE __m512d wino_filter_taps(const dmlpy_wino_problem* p, uint64_t at, unsigned rows) {
    float v[WINO_MR];
    unsigned r;
    if (p->half) {
        for (r = 0; r < WINO_MR; ++r) v[r] = r < rows ? dmlpy_h2f(((const uint16_t*)p->w)[at + r * p->wo]) : 0.0f;
    } else if (rows == WINO_MR) {
        for (r = 0; r < WINO_MR; ++r) v[r] = ((const float*)p->w)[at + r * p->wo];
    } else {
        for (r = 0; r < WINO_MR; ++r) v[r] = r < rows ? ((const float*)p->w)[at + r * p->wo] : 0.0f;
    }
    return _mm512_cvtps_pd(_mm256_set_ps(v[7], v[6], v[5], v[4], v[3], v[2], v[1], v[0]));
}

/* U of one input channel and 8 output channels (filter element index w0 + r*wo of row r < rows) for phase
 * ph: G g G^T in double, rounded once to float32; u[e], e = 4*row + column. */
CONV_INLINE void wino_filter_transform(const dmlpy_wino_problem* p, const dmlpy_wino_phase* ph, unsigned m, uint64_t w0,
                                       unsigned rows, __m256* u) {
    const unsigned R = 5 - m;
    __m512d fl[9], t[WINO_A][3];
    unsigned r, c, k;
    for (k = 0; k < R * R; ++k) {
        const uint64_t at = w0 + (uint64_t)(ph->kh0 + (int64_t)(k / R) * ph->ksh) * p->ws_h +
                            (uint64_t)(ph->kw0 + (int64_t)(k % R) * ph->ksw) * p->ws_w;
        fl[k] = wino_filter_taps(p, at, rows);
    }
    for (c = 0; c < R; ++c) { /* G g, column c */
        __m512d col[3], tc[WINO_A];
        for (k = 0; k < R; ++k) col[k] = fl[k * R + c];
        wino_filter_g(m, col, tc);
        for (r = 0; r < WINO_A; ++r) t[r][c] = tc[r];
    }
    for (r = 0; r < WINO_A; ++r) { /* (G g) G^T, row r */
        __m512d ur[WINO_A];
        wino_filter_g(m, t[r], ur);
        for (c = 0; c < WINO_A; ++c) u[r * WINO_A + c] = _mm512_cvtpd_ps(ur[c]);
    }
}

/* Item ([phase,] g, 8-row panel): U[g][e][panel][ic][0..8) of its phase (every phase at once: item / (G *
 * nocb); phase by phase: wp->f) for every ic, rows past Cout_g zeros. The filter lines of channel ic + 8 are
 * prefetched (consecutive ic are a page or more apart in BACKWARD filters). */
CONV_INLINE void wino_filter_item(const wino_plan* wp, uint64_t item, unsigned worker, unsigned m) {
    const dmlpy_wino_problem* p = wp->p;
    const unsigned f = wp->all ? (unsigned)(item / (p->G * wp->nocb)) : wp->f;
    const uint64_t g = item % (p->G * wp->nocb) / wp->nocb, ocb = item % wp->nocb;
    const unsigned rows = (unsigned)(p->Cout_g - ocb * WINO_MR < WINO_MR ? p->Cout_g - ocb * WINO_MR : WINO_MR);
    const size_t esize = p->half ? 2 : 4;
    const dmlpy_wino_phase* ph = &p->ph[f];
    float* base = wp->u + (wp->all ? f * p->G * wp->u_group : 0) + g * wp->u_group + ocb * p->Cin_g * WINO_MR;
    uint64_t ic;
    __mmask16 bad = 0;
    for (ic = 0; ic < p->Cin_g; ic += 2) {
        /* two input channels at a time, so that every store fills a 64-byte line */
        const unsigned pair = ic + 1 < p->Cin_g;
        __m256 u[2][WINO_E];
        unsigned h, r, e;
        for (h = 0; h <= pair; ++h) {
            if (ic + h + 8 < p->Cin_g) {
                for (r = 0; r < rows; ++r) {
                    const uint64_t at = g * p->wg + (ocb * WINO_MR + r) * p->wo + (ic + h + 8) * p->wi;
                    _mm_prefetch(p->w + at * esize, _MM_HINT_T0);
                }
            }
            wino_filter_transform(p, ph, m, g * p->wg + ocb * WINO_MR * p->wo + (ic + h) * p->wi, rows, u[h]);
        }
        for (e = 0; e < WINO_E; ++e) {
            float* at = base + e * wp->u_es + ic * WINO_MR;
            if (pair) {
                const __m512 v = _mm512_insertf32x8(_mm512_castps256_ps512(u[0][e]), u[1][e], 1);
                /* v - v is NaN exactly when v is infinite or NaN (also a float32 overflow of U) */
                bad |= _mm512_cmp_ps_mask(_mm512_sub_ps(v, v), _mm512_setzero_ps(), _CMP_NEQ_UQ);
                _mm512_storeu_ps(at, v);
            } else {
                bad |= _mm256_cmp_ps_mask(_mm256_sub_ps(u[0][e], u[0][e]), _mm256_setzero_ps(), _CMP_NEQ_UQ);
                _mm256_storeu_ps(at, u[0][e]);
            }
        }
    }
    if (bad) wp->nonfinite[worker] = 1;
}

static void wino_filter_run2(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    uint64_t item;
    for (item = begin; item < end; ++item) wino_filter_item((const wino_plan*)vp, item, worker, 2);
}

static void wino_filter_run3(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    uint64_t item;
    for (item = begin; item < end; ++item) wino_filter_item((const wino_plan*)vp, item, worker, 3);
}

/* ---- input packing and transform --------------------------------------------------------------- */

/* count input elements from index xi (element stride xs) as float32: float16 rows and strided rows (float32
 * rows with unit stride are read by wino_pack_row directly). */
static void wino_copy_in(const dmlpy_wino_problem* p, float* restrict dst, uint64_t xi, uint64_t xs, uint64_t count) {
    uint64_t j;
    if (p->half) {
        const uint16_t* src = (const uint16_t*)p->x + xi;
        if (xs == 1) {
            dmlpy_h2f_row(dst, src, (size_t)count);
        } else {
            for (j = 0; j < count; ++j) dst[j] = dmlpy_h2f(src[j * xs]);
        }
    } else {
        const float* src = (const float*)p->x + xi;
        for (j = 0; j < count; ++j) dst[j] = src[j * xs];
    }
}

/* Plane columns [c0, c1) of input row h (any integer) of channel xc (element index of its origin): column
 * c is input column c - pad_w. */
/* Returns nonzero when the row holds an infinity or NaN (x - x is NaN exactly for those). */
CONV_INLINE __mmask16 wino_pack_row(const dmlpy_wino_problem* p, int64_t pad_w, float* dst, uint64_t xc, int64_t h, int64_t c0,
                                    int64_t c1) {
    int64_t v0 = pad_w, v1 = (int64_t)p->W + pad_w, c;
    __mmask16 nonfinite = 0;
    if (!p->half && p->xs_w == 1 && h >= 0 && h < (int64_t)p->H) {
        /* float32 rows: whole vectors, the padding columns masked off (a masked-off lane reads nothing) */
        const float* row = (const float*)p->x + xc + (uint64_t)h * p->xs_h;
        for (c = c0; c < c1; c += 16) {
            const int64_t lo = v0 - c, hi = v1 - c; /* lanes [lo, hi) hold input columns */
            __mmask16 mk = mask_n(hi <= 0 ? 0 : (uint64_t)hi);
            __m512 v;
            if (lo > 0) mk &= (__mmask16)~mask_n(lo >= 16 ? 16 : (uint64_t)lo);
            v = _mm512_maskz_loadu_ps(mk, row + (c - pad_w) * (mk != 0));
            nonfinite |= _mm512_cmp_ps_mask(_mm512_sub_ps(v, v), _mm512_setzero_ps(), _CMP_NEQ_UQ);
            _mm512_mask_storeu_ps(dst + c, mask_n((uint64_t)(c1 - c)), v);
        }
        return nonfinite;
    }
    if (v0 < c0) v0 = c0;
    if (v1 > c1) v1 = c1;
    if (h < 0 || h >= (int64_t)p->H || v0 >= v1) {
        for (c = c0; c < c1; ++c) dst[c] = 0.0f;
        return 0;
    }
    for (c = c0; c < v0; ++c) dst[c] = 0.0f;
    wino_copy_in(p, dst + v0, xc + (uint64_t)h * p->xs_h + (uint64_t)(v0 - pad_w) * p->xs_w, p->xs_w, (uint64_t)(v1 - v0));
    for (c = v0; c < v1; ++c) nonfinite |= (__mmask16)(dst[c] - dst[c] != 0.0f);
    for (c = v1; c < c1; ++c) dst[c] = 0.0f;
    return nonfinite;
}

/* d[j] lane l = src[m*l + j], j < 4, l < 16 (the 4 patch columns of 16 tiles); reads src[0, 16*m + 1). */
CONV_INLINE void wino_deinterleave(const float* src, __m512* d, unsigned m) {
    if (m == 2) {
        const __m512i sh0 = _mm512_set_epi32(16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1);
        const __m512i sh1 = _mm512_set_epi32(17, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1);
        const __m512 v0 = _mm512_loadu_ps(src), v1 = _mm512_loadu_ps(src + 16), v2 = _mm512_loadu_ps(src + 32);
        const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
        d[0] = _mm512_permutex2var_ps(v0, even, v1);
        d[1] = _mm512_permutex2var_ps(v0, _mm512_add_epi32(even, _mm512_set1_epi32(1)), v1);
        d[2] = _mm512_permutex2var_ps(d[0], sh0, v2);
        d[3] = _mm512_permutex2var_ps(d[1], sh1, v2);
    } else {
        /* column j: lanes with 3l + j < 32 from v0|v1, the rest from v2 (3l + j - 32); column 3 is column 0
         * one lane on, its lane 15 being src[48] */
        const __m512i shift = _mm512_set_epi32(16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1);
        const __m512 v0 = _mm512_loadu_ps(src), v1 = _mm512_loadu_ps(src + 16), v2 = _mm512_loadu_ps(src + 32);
        const __m512 v3 = _mm512_maskz_loadu_ps(1, src + 48);
        const __m512i three = _mm512_set_epi32(45, 42, 39, 36, 33, 30, 27, 24, 21, 18, 15, 12, 9, 6, 3, 0);
        unsigned j;
        for (j = 0; j < 3; ++j) {
            const __m512i ix = _mm512_add_epi32(three, _mm512_set1_epi32((int)j)); /* 3l + j, < 48 */
            const __mmask16 hi = _mm512_cmpge_epi32_mask(ix, _mm512_set1_epi32(32));
            const __m512i lanes = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
            const __m512 t = _mm512_permutex2var_ps(v0, ix, v1); /* index mod 32 for the high lanes: unused */
            d[j] = _mm512_permutex2var_ps(t, _mm512_mask_sub_epi32(lanes, hi, ix, _mm512_set1_epi32(16)), v2);
        }
        d[3] = _mm512_permutex2var_ps(d[0], shift, v3);
    }
}

/* V[e][16 tiles] (element stride vstride between e) of the 16 tiles whose patch row 0 starts at src; patch
 * row i is input row m*th + i, packed in plane i % m, one plane row (Lw) further for i >= m. */
CONV_INLINE void wino_input_tile(const float* src, uint64_t plane_stride, uint64_t Lw, float* v, uint64_t vstride, unsigned m) {
    const signed char(*BT)[WINO_A] = wino_BT[m - 2];
    __m512 t[WINO_A][WINO_A];
    int i, c;
    for (i = 0; i < WINO_A; ++i) {
        __m512 d[WINO_A];
        wino_deinterleave(src + (uint64_t)(i % m) * plane_stride + (uint64_t)(i / m) * Lw, d, m);
        for (c = 0; c < WINO_A; ++c) t[i][c] = wino_combine(BT[c], d); /* along the row */
    }
    for (c = 0; c < WINO_A; ++c) {
        __m512 d[WINO_A];
        for (i = 0; i < WINO_A; ++i) d[i] = t[i][c];
        for (i = 0; i < WINO_A; ++i) _mm512_store_ps(v + (uint64_t)(i * WINO_A + c) * vstride, wino_combine(BT[i], d)); /* along the column */
    }
}

/* ---- GEMM micro-kernel ------------------------------------------------------------------------- */

#if DMLPY_V16 == 2
/* AVX2: the same sums by v16e_fma_tile's register-sized sub-tiles (same bits) */
static void wino_kernel(uint64_t K, const float* restrict a, const float* restrict b, uint64_t ldb, float* restrict c,
                        uint64_t ldc) {
    const float* bc[4] = {b, b + 8, b + 16, b + 24};
    v16e_fma_tile(4, 2, K, a, 1, WINO_MR, bc, NULL, ldb, c, ldc, 0, NULL, NULL);
    v16e_fma_tile(4, 2, K, a + 4, 1, WINO_MR, bc, NULL, ldb, c + 4 * ldc, ldc, 0, NULL, NULL);
    v16e_fma_tile(4, 2, K, a, 1, WINO_MR, bc + 2, NULL, ldb, c + 16, ldc, 0, NULL, NULL);
    v16e_fma_tile(4, 2, K, a + 4, 1, WINO_MR, bc + 2, NULL, ldb, c + 4 * ldc + 16, ldc, 0, NULL, NULL);
}
static void wino_kernel16(uint64_t K, const float* restrict a, const float* restrict b, uint64_t ldb, float* restrict c,
                          uint64_t ldc) {
    const float* bc[2] = {b, b + 8};
    v16e_fma_tile(4, 2, K, a, 1, WINO_MR, bc, NULL, ldb, c, ldc, 0, NULL, NULL);
    v16e_fma_tile(4, 2, K, a + 4, 1, WINO_MR, bc, NULL, ldb, c + 4 * ldc, ldc, 0, NULL, NULL);
}
#else
/* C[m][0..32) = sum_k A[k*8 + m] * B[k*ldb + 0..32), m < 8; B, C 64-byte aligned, ldb, ldc multiples of 16. */
static void wino_kernel(uint64_t K, const float* restrict a, const float* restrict b, uint64_t ldb, float* restrict c,
                        uint64_t ldc) {
    __m512 c0a = _mm512_setzero_ps(), c0b = c0a, c1a = c0a, c1b = c0a, c2a = c0a, c2b = c0a, c3a = c0a, c3b = c0a;
    __m512 c4a = c0a, c4b = c0a, c5a = c0a, c5b = c0a, c6a = c0a, c6b = c0a, c7a = c0a, c7b = c0a;
    uint64_t k;
    for (k = 0; k < K; ++k, a += WINO_MR, b += ldb) {
        const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
        __m512 av;
#define WINO_ROW(m)                                \
    av = _mm512_set1_ps(a[m]);                     \
    c##m##a = _mm512_fmadd_ps(av, b0, c##m##a);    \
    c##m##b = _mm512_fmadd_ps(av, b1, c##m##b);
        WINO_ROW(0) WINO_ROW(1) WINO_ROW(2) WINO_ROW(3) WINO_ROW(4) WINO_ROW(5) WINO_ROW(6) WINO_ROW(7)
#undef WINO_ROW
    }
#define WINO_STORE(m)                                  \
    _mm512_store_ps(c + m * ldc, c##m##a);             \
    _mm512_store_ps(c + m * ldc + 16, c##m##b);
    WINO_STORE(0) WINO_STORE(1) WINO_STORE(2) WINO_STORE(3) WINO_STORE(4) WINO_STORE(5) WINO_STORE(6) WINO_STORE(7)
#undef WINO_STORE
}

/* The same for the 16 columns of a last odd vector: C[m][0..16). */
static void wino_kernel16(uint64_t K, const float* restrict a, const float* restrict b, uint64_t ldb, float* restrict c,
                          uint64_t ldc) {
    __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
    uint64_t k;
    for (k = 0; k < K; ++k, a += WINO_MR, b += ldb) {
        const __m512 b0 = _mm512_load_ps(b);
#define WINO_ROW(m) c##m = _mm512_fmadd_ps(_mm512_set1_ps(a[m]), b0, c##m);
        WINO_ROW(0) WINO_ROW(1) WINO_ROW(2) WINO_ROW(3) WINO_ROW(4) WINO_ROW(5) WINO_ROW(6) WINO_ROW(7)
#undef WINO_ROW
    }
#define WINO_STORE(m) _mm512_store_ps(c + m * ldc, c##m);
    WINO_STORE(0) WINO_STORE(1) WINO_STORE(2) WINO_STORE(3) WINO_STORE(4) WINO_STORE(5) WINO_STORE(6) WINO_STORE(7)
#undef WINO_STORE
}
#endif

/* ---- output transform and epilogue ------------------------------------------------------------- */

/* A run of lanes [l0, l0 + n) of one 16-tile vector: tile row th, first tile column tw (all n real). */
typedef struct wino_seg {
    unsigned l0, n;
    uint64_t th, tw;
} wino_seg;

/* o = the 16*m floats out[m*l + j] = y[j] lane l (j < m, l < 16), as m vectors: one output row of 16 tiles. */
CONV_INLINE void wino_interleave(const __m512* y, __m512* o, unsigned m) {
    if (m == 2) {
        const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
        const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
        o[0] = _mm512_permutex2var_ps(y[0], lo, y[1]);
        o[1] = _mm512_permutex2var_ps(y[0], hi, y[1]);
    } else {
        /* position 16b + k is y[j] lane l, l = (16b + k) / 3, j = (16b + k) % 3: y0|y1 first, then y2 */
        static const int32_t first[3][16] = {{0, 16, 0, 1, 17, 0, 2, 18, 0, 3, 19, 0, 4, 20, 0, 5},
                                             {21, 0, 6, 22, 0, 7, 23, 0, 8, 24, 0, 9, 25, 0, 10, 26},
                                             {0, 11, 27, 0, 12, 28, 0, 13, 29, 0, 14, 30, 0, 15, 31, 0}};
        static const int32_t second[3][16] = {{0, 1, 16, 3, 4, 17, 6, 7, 18, 9, 10, 19, 12, 13, 20, 15},
                                              {0, 21, 2, 3, 22, 5, 6, 23, 8, 9, 24, 11, 12, 25, 14, 15},
                                              {26, 1, 2, 27, 4, 5, 28, 7, 8, 29, 10, 11, 30, 13, 14, 31}};
        unsigned b;
        for (b = 0; b < 3; ++b) {
            const __m512 t = _mm512_permutex2var_ps(y[0], _mm512_loadu_si512(first[b]), y[1]);
            o[b] = _mm512_permutex2var_ps(t, _mm512_loadu_si512(second[b]), y[2]);
        }
    }
}

/* Floats [start, start + count) of the m*16 floats in o (+ bias, activated) to y from element index yi, element
 * stride ys_w. The floats stay in registers (a reload from a just-written buffer would stall on store
 * forwarding). Element stride 2 (one phase of a stride-2 output row) is stored as two vectors spread over
 * even lanes with masked stores, which leave the other phase's elements alone. */
CONV_INLINE void wino_store_run(const dmlpy_wino_problem* p, const __m512* o, unsigned start, __m512 bias, uint64_t yi,
                                uint64_t count, unsigned m) {
    const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const unsigned off = start % 16;
    unsigned b = start / 16;
    uint64_t k;
    for (k = 0; k < count; k += 16, ++b) {
        const __mmask16 mk = mask_n(count - k);
        __m512 v = o[b];
        if (off != 0) {
            v = b + 1 < m ? _mm512_permutex2var_ps(v, _mm512_add_epi32(iota, _mm512_set1_epi32((int)off)), o[b + 1])
                          : _mm512_permutexvar_ps(_mm512_add_epi32(iota, _mm512_set1_epi32((int)off)), v);
        }
        v = finish_vec(&p->act, v, bias);
        if (p->ys_w == 1) {
            store_vec(p->half, 0, p->y, yi + k, v, mk);
        } else if (p->ys_w == 2) {
            const __m512i spread = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
            const uint64_t n = count - k < 16 ? count - k : 16;
            const __mmask16 even = (__mmask16)(0x5555u & ((1u << (2 * (n < 8 ? n : 8))) - 1u));
            const __mmask16 even_hi = n > 8 ? (__mmask16)(0x5555u & ((1u << (2 * (n - 8))) - 1u)) : 0;
            store_vec(p->half, 0, p->y, yi + 2 * k, _mm512_permutexvar_ps(spread, v), even);
            if (even_hi) {
                store_vec(p->half, 0, p->y, yi + 2 * k + 16,
                          _mm512_permutexvar_ps(_mm512_add_epi32(spread, _mm512_set1_epi32(8)), v), even_hi);
            }
        } else {
            _Alignas(64) float tmp[16];
            uint64_t j, n = count - k < 16 ? count - k : 16;
            _mm512_store_ps(tmp, v);
            for (j = 0; j < n; ++j) store_elem(p->half, p->y, yi + (k + j) * p->ys_w, tmp[j]);
        }
    }
}

/* ---- work items ----------------------------------------------------------------------------------- */

/* One work item: phase f, image n, group g, tiles [q0, q1) of the grid in nv vectors. */
typedef struct wino_item {
    const dmlpy_wino_phase* ph;
    const float* U;
    uint64_t f, n, g, q0, q1, nv, th_lo, rows, qbase, tw_first, tw_last;
} wino_item;

/* The planes of input channel ic of the item: plane row t of plane i holds input row m*(th_lo + t) + i; row
 * `rows` only for the last tile row's patch rows m..a-1. Columns: those of the item's tiles (real tiles end
 * before Lw). */
CONV_INLINE __mmask16 wino_pack_channel(const wino_plan* wp, const wino_item* it, uint64_t ic, float* planes, unsigned m) {
    const dmlpy_wino_problem* p = wp->p;
    const uint64_t Lw = wp->Lw;
    const uint64_t xc = it->n * p->xs_n + (it->g * p->Cin_g + ic) * p->xs_c;
    uint64_t i, t;
    __mmask16 nonfinite = 0;
    for (t = 0; t <= it->rows; ++t) {
        const int64_t c0 = t == 0 ? (int64_t)(m * it->tw_first) : 0;
        int64_t c1 = t == it->rows ? (int64_t)(m * it->tw_last + WINO_A) : (int64_t)Lw;
        if (c1 > (int64_t)Lw) c1 = (int64_t)Lw;
        for (i = 0; i < (t == it->rows ? (uint64_t)(WINO_A - m) : m); ++i) {
            const int64_t h = (int64_t)(m * (it->th_lo + t) + i) - it->ph->pad_h;
            nonfinite |= wino_pack_row(p, it->ph->pad_w, planes + i * wp->plane_stride + t * Lw, xc, h, c0, c1);
            if (ic + WINO_PREFETCH_CH < p->Cin_g && h >= 0 && h < (int64_t)p->H) {
                /* the row's first and last lines a few channels on (channels are usually a page or more apart,
                 * beyond the hardware prefetchers) */
                const char* row = p->x + (xc + WINO_PREFETCH_CH * p->xs_c + (uint64_t)h * p->xs_h) * (p->half ? 2 : 4);
                _mm_prefetch(row, _MM_HINT_T0);
                _mm_prefetch(row + (p->W - 1) * p->xs_w * (p->half ? 2 : 4), _MM_HINT_T0);
            }
        }
    }
    return nonfinite;
}

/* Stage 1: the item's input patches, transformed, into V[e][ic][tile], one input channel at a time. Two
 * plane sets: channel ic + 1 is packed before channel ic is transformed, so the transform's loads do not
 * overlap stores still in flight (they could not be forwarded: different offsets, masked stores). */
CONV_INLINE __mmask16 wino_input_stage(const wino_plan* wp, const wino_item* it, float* planes, float* V, unsigned m,
                                       uint64_t ic0, uint64_t ic1) {
    const uint64_t set = m * wp->plane_stride;
    uint64_t ic, v;
    __mmask16 nonfinite = wino_pack_channel(wp, it, ic0, planes + (ic0 & 1) * set, m);
    for (ic = ic0; ic < ic1; ++ic) {
        const float* cur = planes + (ic & 1) * set;
        if (ic + 1 < ic1) nonfinite |= wino_pack_channel(wp, it, ic + 1, planes + ((ic + 1) & 1) * set, m);
        for (v = 0; v < it->nv; ++v) {
            wino_input_tile(cur + m * (it->q0 - it->qbase + 16 * v), wp->plane_stride, wp->Lw, V + ic * wp->qb + 16 * v,
                            wp->v_es, m);
        }
    }
    return nonfinite;
}

/* Stage 2: per element, M_e = U_e V_e, output panels [ocb0, ocb1). */
static void wino_gemm_stage(const wino_plan* wp, const wino_item* it, const float* V, float* M, uint64_t ocb0, uint64_t ocb1) {
    const dmlpy_wino_problem* p = wp->p;
    const float* U = it->U + it->g * wp->u_group;
    uint64_t e, ocb, jb;
    for (e = 0; e < WINO_E; ++e) {
        const float* Ve = V + e * wp->v_es;
        for (ocb = ocb0; ocb < ocb1; ++ocb) {
            const float* Ue = U + e * wp->u_es + ocb * p->Cin_g * WINO_MR;
            float* Me = M + e * wp->m_es + ocb * WINO_MR * wp->qb;
            for (jb = 0; jb < it->nv / 2; ++jb) wino_kernel(p->Cin_g, Ue, Ve + jb * WINO_NR, wp->qb, Me + jb * WINO_NR, wp->qb);
            if (it->nv & 1) wino_kernel16(p->Cin_g, Ue, Ve + jb * WINO_NR, wp->qb, Me + jb * WINO_NR, wp->qb);
        }
    }
}

/* Stage 3: per output channel in [oc0, oc1) and vector, A^T M A, and the epilogue for the lanes holding real tiles. */
CONV_INLINE void wino_output_stage(const wino_plan* wp, const wino_item* it, const float* M, unsigned m, uint64_t oc0, uint64_t oc1) {
    const dmlpy_wino_problem* p = wp->p;
    const dmlpy_wino_phase* ph = it->ph;
    const signed char(*AT)[WINO_A] = wino_AT[m - 2];
    const uint64_t tpr = wp->tpr, estride = wp->m_es;
    wino_seg segs[(WINO_QB_MAX / 16) * 17];
    unsigned seg_first[WINO_QB_MAX / 16 + 1], nseg = 0;
    uint64_t oc, v;
    /* runs of lanes of one tile row, real tiles only */
    for (v = 0; v < it->nv; ++v) {
        unsigned l = 0;
        seg_first[v] = nseg;
        while (l < 16) {
            const uint64_t q = it->q0 + 16 * v + l, th = q / tpr, tw = q % tpr;
            const unsigned run = (unsigned)(tpr - tw < 16u - l ? tpr - tw : 16u - l);
            if (q >= it->q1) break;
            if (th < wp->TH && tw < wp->TW) {
                wino_seg* sg = &segs[nseg++];
                sg->l0 = l;
                sg->n = (unsigned)(wp->TW - tw < run ? wp->TW - tw : run);
                if (q + sg->n > it->q1) sg->n = (unsigned)(it->q1 - q);
                sg->th = th;
                sg->tw = tw;
            }
            l += run;
        }
    }
    seg_first[it->nv] = nseg;
    for (oc = oc0; oc < oc1; ++oc) {
        const uint64_t ch = it->g * p->Cout_g + oc;
        const __m512 bv = _mm512_set1_ps(p->b ? load_elem(p->half, p->b, ch * p->bs_c) : 0.0f);
        const uint64_t ybase = ph->y0 + it->n * p->ys_n + ch * p->ys_c;
        const float* Mo = M + oc * wp->qb;
        for (v = 0; v < it->nv; ++v) {
            __m512 s[WINO_A][WINO_MMAX], Y[WINO_MMAX][WINO_MMAX]; /* Y[j][i]: output row i, column j */
            unsigned r, i, j, k;
            if (seg_first[v] == seg_first[v + 1]) continue;
            for (r = 0; r < WINO_A; ++r) {
                __m512 row[WINO_A];
                for (k = 0; k < WINO_A; ++k) row[k] = _mm512_load_ps(Mo + (r * WINO_A + k) * estride + 16 * v);
                for (j = 0; j < m; ++j) s[r][j] = wino_combine(AT[j], row); /* along the row */
            }
            for (j = 0; j < m; ++j) {
                __m512 col[WINO_A];
                for (r = 0; r < WINO_A; ++r) col[r] = s[r][j];
                for (i = 0; i < m; ++i) Y[j][i] = wino_combine(AT[i], col); /* along the column */
            }
            for (i = 0; i < m; ++i) {
                __m512 y[WINO_MMAX], o[WINO_MMAX];
                for (j = 0; j < m; ++j) y[j] = Y[j][i];
                wino_interleave(y, o, m);
                for (k = seg_first[v]; k < seg_first[v + 1]; ++k) {
                    const wino_seg* sg = &segs[k];
                    const uint64_t oh = m * sg->th + i, ow = m * sg->tw;
                    uint64_t count = m * sg->n;
                    if (oh >= ph->OH || ow >= ph->OW) continue;
                    if (count > ph->OW - ow) count = ph->OW - ow;
                    wino_store_run(p, o, (unsigned)(m * sg->l0), bv, ybase + oh * p->ys_h + ow * p->ys_w, count, m);
                }
            }
        }
    }
}

/* Item (phase, n, g, run of qb tiles of the grid) number `item`. */
static void wino_item_at(const wino_plan* wp, uint64_t item, wino_item* it) {
    const dmlpy_wino_problem* p = wp->p;
    const uint64_t qc = item % wp->nqc;
    uint64_t qlast;
    it->f = wp->all ? (unsigned)(item / wp->items) : wp->f;
    it->U = wp->u + (wp->all ? it->f * p->G * wp->u_group : 0);
    it->g = (item / wp->nqc) % p->G;
    it->n = item % wp->items / (wp->nqc * p->G);
    it->ph = &p->ph[it->f];
    it->q0 = qc * wp->qb;
    it->q1 = it->q0 + wp->qb < wp->Q ? it->q0 + wp->qb : wp->Q;
    it->nv = (it->q1 - it->q0 + 15) / 16;
    qlast = it->q0 + 16 * it->nv - 1;
    it->th_lo = it->q0 / wp->tpr;
    it->rows = qlast / wp->tpr - it->th_lo + 1;
    it->qbase = it->th_lo * wp->tpr;
    it->tw_first = it->q0 - it->qbase;
    it->tw_last = qlast % wp->tpr;
}

/* Items run whole by a worker with its own planes, V and M; m is a constant in each instance (wino_run2,
 * wino_run3). */
CONV_INLINE void wino_run_m(const wino_plan* wp, uint64_t begin, uint64_t end, unsigned worker, unsigned m) {
    const dmlpy_wino_problem* p = wp->p;
    float* planes = wp->work + (uint64_t)worker * wp->worker_floats;
    float* V = planes + 2 * m * wp->plane_stride;
    float* M = V + wp->v_floats;
    uint64_t item;
    for (item = begin; item < end; ++item) {
        wino_item it;
        wino_item_at(wp, item, &it);
        if (wino_input_stage(wp, &it, planes, V, m, 0, p->Cin_g)) {
            wp->nonfinite[worker] = 1; /* the call is redone by another path: no point finishing this item */
            continue;
        }
        wino_gemm_stage(wp, &it, V, M, 0, wp->nocb);
        wino_output_stage(wp, &it, M, m, 0, p->Cout_g);
    }
}

static void wino_run2(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    wino_run_m((const wino_plan*)vp, begin, end, worker, 2);
}

static void wino_run3(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    wino_run_m((const wino_plan*)vp, begin, end, worker, 3);
}

/* A shared item's V; its M follows. */
static float* wino_shared_v(const wino_plan* wp, uint64_t item) {
    return wp->shared + item * (wp->v_floats + wp->m_floats);
}

/* Shared items, first pass: (item, run r of input channels) into the item's V, on the worker's planes. */
CONV_INLINE void wino_in_m(const wino_plan* wp, uint64_t begin, uint64_t end, unsigned worker, unsigned m) {
    const uint64_t cin = wp->p->Cin_g;
    float* planes = wp->work + (uint64_t)worker * wp->worker_floats;
    uint64_t unit;
    for (unit = begin; unit < end; ++unit) {
        const uint64_t item = unit / wp->ics, r = unit % wp->ics;
        wino_item it;
        wino_item_at(wp, item, &it);
        if (wino_input_stage(wp, &it, planes, wino_shared_v(wp, item), m, r * cin / wp->ics, (r + 1) * cin / wp->ics)) {
            wp->nonfinite[worker] = 1;
        }
    }
}

/* Second pass: (item, run r of output panels) from the item's V into its M, transformed and stored. */
CONV_INLINE void wino_out_m(const wino_plan* wp, uint64_t begin, uint64_t end, unsigned m) {
    const uint64_t cout = wp->p->Cout_g;
    uint64_t unit;
    for (unit = begin; unit < end; ++unit) {
        const uint64_t item = unit / wp->ocs, r = unit % wp->ocs;
        const uint64_t ocb0 = r * wp->nocb / wp->ocs, ocb1 = (r + 1) * wp->nocb / wp->ocs;
        float* V = wino_shared_v(wp, item);
        float* M = V + wp->v_floats;
        wino_item it;
        wino_item_at(wp, item, &it);
        wino_gemm_stage(wp, &it, V, M, ocb0, ocb1);
        wino_output_stage(wp, &it, M, m, ocb0 * WINO_MR, ocb1 * WINO_MR < cout ? ocb1 * WINO_MR : cout);
    }
}

static void wino_in2(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    wino_in_m((const wino_plan*)vp, begin, end, worker, 2);
}

static void wino_in3(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    wino_in_m((const wino_plan*)vp, begin, end, worker, 3);
}

static void wino_out2(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    (void)worker;
    wino_out_m((const wino_plan*)vp, begin, end, 2);
}

static void wino_out3(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    (void)worker;
    wino_out_m((const wino_plan*)vp, begin, end, 3);
}

static int wino_any(const unsigned char* flags, unsigned count) {
    unsigned i;
    for (i = 0; i < count; ++i) {
        if (flags[i]) return 1;
    }
    return 0;
}

int32_t dmlpy_winograd_conv(const dmlpy_wino_problem* p, unsigned threadCount) {
    wino_plan wp;
    uint64_t u_floats, per_worker, bytes, items, work, macs;
    unsigned threads, limit, t;
    void* block;
    char* cur;
    unsigned char nonfinite[256];
    uint64_t OH = 0, OW = 0; /* the grid covers every phase's outputs */
    unsigned m = p->m, f;
    if (m != 2 && m != 3) return -1;
    if (p->nph == 0 || p->nph > DMLPY_WINO_MAX_PHASES) return -1;
    if (p->Cin_g < WINO_MIN_CIN || p->Cout_g < WINO_MIN_COUT) return -1;
    if (p->Cin_g > ((uint64_t)1 << 24) || p->Cout_g > ((uint64_t)1 << 24)) return -1;
    for (f = 0; f < p->nph; ++f) {
        const dmlpy_wino_phase* ph = &p->ph[f];
        if (ph->OH == 0 || ph->OW == 0 || ph->OH > ((uint64_t)1 << 30) || ph->OW > ((uint64_t)1 << 30)) return -1;
        if (ph->pad_h > ((int64_t)1 << 32) || ph->pad_h < -((int64_t)1 << 32) || ph->pad_w > ((int64_t)1 << 32) ||
            ph->pad_w < -((int64_t)1 << 32)) {
            return -1;
        }
        if (ph->OH > OH) OH = ph->OH;
        if (ph->OW > OW) OW = ph->OW;
    }
    if (OH * OW < WINO_MIN_OUT) return -1;
    memset(&wp, 0, sizeof wp);
    memset(nonfinite, 0, sizeof nonfinite);
    wp.p = p;
    wp.m = m;
    wp.nonfinite = nonfinite;
    wp.TH = (OH + m - 1) / m;
    wp.TW = (OW + m - 1) / m;
    wp.tpr = wp.TW + 1;
    wp.Lw = m * wp.tpr;
    wp.Q = wp.TH * wp.tpr; /* < 2^61 */
    /* Tiles per item: as many as keep the item's V and M (e * (Cin_g + Cout) * qb floats) within WINO_ITEM_BYTES
     * (L2, next to U); more tiles per item pack fewer input rows twice (items overlap by the patch halo). */
    wp.qb = WINO_ITEM_BYTES / (sizeof(float) * WINO_E * (p->Cin_g + ((p->Cout_g + WINO_MR - 1) / WINO_MR) * WINO_MR));
    wp.qb = wp.qb / WINO_NR * WINO_NR;
    if (wp.qb > WINO_QB_MAX) wp.qb = WINO_QB_MAX;
    if (wp.qb < WINO_NR) wp.qb = WINO_NR;
    wp.nqc = (wp.Q + wp.qb - 1) / wp.qb;
    wp.nocb = (p->Cout_g + WINO_MR - 1) / WINO_MR;
    wp.cout_pad = wp.nocb * WINO_MR;
    if (!dmlpy_mul_u64(p->N, p->G, &items) || !dmlpy_mul_u64(items, wp.nqc, &items)) return -1;
    /* work units (~1/16 ns) of the whole call, every phase: the element GEMMs at ~16 multiply-adds per unit,
     * transforms and stores */
    if (!dmlpy_mul_u64(items, wp.qb * WINO_E, &macs) || !dmlpy_mul_u64(macs, p->nph, &macs) ||
        !dmlpy_mul_u64(macs, p->Cin_g, &work) || !dmlpy_mul_u64(work, wp.cout_pad, &work)) {
        work = UINT64_MAX;
    } else {
        uint64_t transforms;
        work /= 16;
        if (!dmlpy_mul_u64(macs, (p->Cin_g + p->Cout_g) / 2 + 1, &transforms) || !dmlpy_add_u64(work, transforms, &work)) {
            work = UINT64_MAX;
        }
    }
    limit = threadCount ? threadCount : dmlpy_online_cpus();
    {
        /* the most units a pass can split into: shared items' runs of output panels */
        uint64_t units;
        if (!dmlpy_mul_u64(items, p->nph, &units) || !dmlpy_mul_u64(units, wp.nocb < p->Cin_g ? wp.nocb : p->Cin_g, &units)) units = UINT64_MAX;
        threads = dmlpy_choose_threads(work, units, threadCount);
    }
    if (threads > limit) threads = limit;
    if (threads > 256) threads = 256;
    /* Fewer items (all phases) than twice the threads, as on a small plane's one item: the items are shared,
     * their input channels and then their output panels split over the threads (two passes, no work done twice;
     * on two threads 64 -> 64 channels at 16x16 measured 1.47x and 128 -> 128 at 14x14 1.29x faster than one
     * item a thread, which left the second thread idle). */
    if (threads > 1 && (double)items * (double)p->nph < 2.0 * threads) {
        const uint64_t all = items * p->nph, runs = (2 * (uint64_t)threads + all - 1) / all;
        wp.ics = runs < p->Cin_g ? runs : p->Cin_g;
        wp.ocs = runs < wp.nocb ? runs : wp.nocb;
    }
    /* The phases run one after another, each split over the threads: smaller items (down to WINO_NR tiles)
     * when a phase's items would not divide among them (3 items on 2 threads take as long as 4). */
    for (t = 0; t < 8 && threads > 1 && !wp.ics && wp.qb > WINO_NR && items % threads != 0; ++t) {
        const uint64_t tiles = (wp.Q + wp.nqc) / (wp.nqc + 1); /* ceil(Q / (nqc + 1)) */
        wp.qb = (tiles + WINO_NR - 1) / WINO_NR * WINO_NR;
        wp.nqc = (wp.Q + wp.qb - 1) / wp.qb;
        items = p->N * p->G * wp.nqc; /* at most the product above */
    }
    wp.rows_max = (wp.qb - 1) / wp.tpr + 3; /* tile rows an item touches, + 1 plane row */
    /* sizes in floats, overflow-checked against the cap */
    if (!dmlpy_mul_u64(wp.rows_max, wp.Lw, &wp.plane_stride) ||
        !dmlpy_add_u64(wp.plane_stride, WINO_PLANE_SLACK + 15, &wp.plane_stride)) {
        return -1;
    }
    wp.plane_stride &= ~(uint64_t)15;
    /* One vector (64 bytes) between element blocks: a power-of-two distance would put the 16 elements of a
     * tile vector, which the transforms read or write together, into one L1 set. */
    if (!dmlpy_mul_u64(p->Cin_g, wp.qb, &wp.v_es) || !dmlpy_add_u64(wp.v_es, 16, &wp.v_es) ||
        !dmlpy_mul_u64(wp.cout_pad, wp.qb, &wp.m_es) || !dmlpy_add_u64(wp.m_es, 16, &wp.m_es) ||
        !dmlpy_mul_u64(wp.v_es, WINO_E, &wp.v_floats) || !dmlpy_mul_u64(wp.m_es, WINO_E, &wp.m_floats) ||
        !dmlpy_mul_u64(wp.cout_pad, p->Cin_g, &wp.u_es) || !dmlpy_add_u64(wp.u_es, 16, &wp.u_es) ||
        !dmlpy_mul_u64(wp.u_es, WINO_E, &wp.u_group) || !dmlpy_add_u64(wp.u_group, 16, &wp.u_group) || !dmlpy_mul_u64(wp.u_group, p->G, &u_floats) ||
        0) {
        return -1;
    }
    if (!dmlpy_mul_u64(wp.plane_stride, 2 * m, &per_worker) || !dmlpy_add_u64(per_worker, wp.v_floats, &per_worker) ||
        !dmlpy_add_u64(per_worker, wp.m_floats, &per_worker)) {
        return -1;
    }
    per_worker = (per_worker + 15) & ~(uint64_t)15;
    wp.worker_floats = per_worker;


    /* Phase by phase on one thread when every phase's U together would not fit in L2 (k4 s2 from 256
     * channels: 8 MB): U is then written and read back while it is in cache (measured 8% faster). With more
     * threads one pass over all items is faster (~5-25%): fewer wake-ups, and the phases' items balance. */
    wp.all = threads > 1 || p->nph == 1 || u_floats * p->nph <= WINO_U_ALL_FLOATS;
    wp.items = items;
    {
        uint64_t all_items, all_filter_items; /* the parallel_for counts below must not wrap */
        if (!dmlpy_mul_u64(items, p->nph, &all_items) || !dmlpy_mul_u64(p->G * wp.nocb, p->nph, &all_filter_items)) return -1;
    }
    if (wp.all && !dmlpy_mul_u64(u_floats, p->nph, &u_floats)) return -1;
    if (!dmlpy_mul_u64(per_worker, threads, &bytes) || !dmlpy_add_u64(bytes, u_floats, &bytes) ||
        bytes > WINO_SCRATCH_CAP / sizeof(float)) {
        return -1;
    }
    if (wp.ics) { /* the shared items' V and M (fewer than 2 x 256 items of about 1 MB: checked against the cap) */
        uint64_t shared;
        if (!dmlpy_add_u64(wp.v_floats, wp.m_floats, &shared) || !dmlpy_mul_u64(shared, items * p->nph, &shared) ||
            !dmlpy_add_u64(shared, 16, &shared) || !dmlpy_add_u64(bytes, shared, &bytes) || bytes > WINO_SCRATCH_CAP / sizeof(float)) {
            return -1;
        }
    }
    bytes = bytes * sizeof(float) + 3 * 64;
    block = conv_scratch_get(bytes);
    if (block == NULL) return DMLPY_E_OUT_OF_MEMORY;
    cur = (char*)(((uintptr_t)block + 64 + 63) & ~(uintptr_t)63);
    wp.u = (float*)cur;
    cur += (u_floats * sizeof(float) + 63) & ~(uint64_t)63;
    wp.work = (float*)cur;
    if (wp.ics) wp.shared = wp.work + ((per_worker * threads + 15) & ~(uint64_t)15);
    /* plane contents never read by a stored lane are still defined */
    for (t = 0; t < threads; ++t) memset(wp.work + t * per_worker, 0, (size_t)(2 * m * wp.plane_stride) * sizeof(float));
    {
        const uint64_t fitems = p->G * wp.nocb;
        const unsigned ft = dmlpy_choose_threads(u_floats * 8u, fitems, threads);
        const unsigned rounds = wp.all ? 1 : p->nph, per_round = wp.all ? p->nph : 1;
        for (wp.f = 0; wp.f < rounds && !wino_any(nonfinite, threads); ++wp.f) {
            dmlpy_parallel_for(fitems * per_round, dmlpy_choose_grain(fitems * per_round, ft), ft,
                               m == 2 ? wino_filter_run2 : wino_filter_run3, &wp);
            if (wino_any(nonfinite, threads)) break;
            if (!wp.ics) {
                dmlpy_parallel_for(items * per_round, 1, threads, m == 2 ? wino_run2 : wino_run3, &wp);
                continue;
            }
            dmlpy_parallel_for(items * per_round * wp.ics, 1, threads, m == 2 ? wino_in2 : wino_in3, &wp);
            if (!wino_any(nonfinite, threads)) dmlpy_parallel_for(items * per_round * wp.ocs, 1, threads, m == 2 ? wino_out2 : wino_out3, &wp);
        }
    }
    conv_scratch_put(block);
    /* Declined after the fact: the other paths then rewrite every output, propagating infinities and NaNs
     * as a direct sum does. */
    return wino_any(nonfinite, threads) ? -1 : DMLPY_OK;
}

#else /* no AVX-512: the other paths serve */

int32_t dmlpy_winograd_conv(const dmlpy_wino_problem* p, unsigned threadCount) {
    (void)p;
    (void)threadCount;
    return -1;
}

#endif
