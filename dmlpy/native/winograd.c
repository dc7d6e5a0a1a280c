/*
 * winograd.c - the Winograd path of CONVOLUTION (53) for 2-D, stride-1, dilation-1, 3x3 correlations:
 * FORWARD, and BACKWARD at stride 1 (a forward correlation with the filter flipped, its channels swapped
 * per group and padding 2 - StartPadding; convolution.c's try_winograd hands both over in that form, see
 * dmlpy_wino_problem in conv_shared.h).
 *
 * Algorithm: F(2x2, 3x3). Output tile (th, tw) covers outputs [2th, 2th + 2) x [2tw, 2tw + 2) and reads the
 * 4x4 input patch d at (2th - pad_h, 2tw - pad_w), zeros outside the input. Per tile and channel pair
 *   Y = A^T [ (G g G^T) (.) (B^T d B) ] A      ((.): element-wise over the 16 "elements" e = (r, c))
 * so the 36 multiply-adds of a tile become 16, and the sum over input channels becomes, per element e, a
 * matrix product M_e[oc][tile] = sum_ic U_e[oc][ic] * V_e[ic][tile] (2.25x fewer multiply-adds than the
 * GEMM path, plus the transforms).
 *  1. Filter transform U = G g G^T, in double (8 output channels in the lanes), rounded once to float32
 *     and stored in the micro-kernel's 8-row panels [g][e][oc/8][ic][8]; once per call.
 *  2. Work items (image, group, run of qb tiles). Tiles are numbered row-major over a grid with one extra
 *     tile column, q = th*tpr + tw (tpr = tile columns + 1). Patch row i of tile row th (input row
 *     2th + i - pad_h) is packed into plane i % 2 at plane row th + i / 2 (from the item's first tile row),
 *     plane rows 2*tpr floats apart, so that patch row i of tile q starts at 2q in its plane: a 16-lane
 *     vector holds 16 consecutive tiles even across tile rows (the extra column, which the last real tile
 *     of a row reads two columns of, is computed and dropped: 1/tpr of the work).
 *     Per input channel: pack the planes (float32, zero padding, any input strides, float16 converted),
 *     deinterleave each patch row into 4 vectors with permutes, apply B^T along the rows, then along the
 *     columns, store V[e][ic][tile]. The next channel is packed before this one is transformed, so the
 *     transform's loads do not wait for the packing stores.
 *  3. Per element e: M_e = U_e V_e with an AVX-512 8 x 32 micro-kernel (16 accumulators, U broadcast, V
 *     rows loaded; the 8-row panels of U_e pass over the element's V block, which stays in L1 for up to
 *     ~64 input channels).
 *  4. Per output channel and 16 tiles: A^T M A, re-interleaved into output rows with permutes, then the
 *     epilogue helpers the GEMM path uses (conv_shared.h): + bias, fused activation, float16 rounding once,
 *     masked vector stores for unit output W stride, scalar stores for any other output strides.
 *     OutputPadding positions are left to convolution.c (its act(bias) fill).
 * qb (a multiple of 32, at most 128) keeps an item's V and M within about 1 MB (L2): larger items pack
 * fewer input rows twice (items overlap by the patch halo) but must stay cache-resident. Threads take items
 * through dmlpy_parallel_for; each has its own planes, V and M. A result does not depend on the split.
 *
 * Error behaviour: float32 except the filter transform. The input transform's sums and differences before
 * the channel sum, and the output transform's after it, add roundings a direct sum does not have.
 * Measured against float64 with x, w uniform in [-1, 1]: 64 -> 64 channels, 56x56 (|y| up to ~40): max
 * |error| 1.4e-5 (GEMM path 1.0e-5); 256 -> 256, 14x14 (|y| up to ~65): 4.6e-5 (GEMM path 1.9e-5); as a
 * fraction of 1 + |y| at most 3e-5 against the tests' 1e-4. F(4x4, 3x3) was measured too (about 1.25x
 * faster): 2.7e-4 and 7.8e-4 on the same problems, beyond the tests' tolerances, so it is not used.
 * Infinities and NaNs: the transforms would spread one over its whole 4x4 patch (inf - inf = NaN, and
 * outputs a direct sum never reaches it would see it), so packing notes any infinite or NaN input or
 * transformed filter value and the call is then declined after the fact (-1) and redone by the other
 * paths, which give the direct sum's results. Finite inputs near FLT_MAX can still overflow in the input
 * transform where a direct sum might not.
 *
 * When it is chosen (thresholds measured against the GEMM path, one thread, 3x3 forward): AVX-512 builds;
 * at least WINO_MIN_CIN input and WINO_MIN_COUT output channels per group (16: with 8 or 12 the two paths
 * tie, with 16 Winograd is ~1.1x faster, with 32 or more 1.4-1.8x); at least WINO_MIN_OUT computed outputs
 * per image and group (64: an 8x8 output is faster, 6x6 slower); scratch within WINO_SCRATCH_CAP; not when
 * the output aliases itself (convolution.c keeps the other paths' write order then). Otherwise -1: the
 * GEMM, depthwise and direct paths run as before.
 *
 * Memory safety: x, w and b are read and y is written only at the element indices of the validated,
 * bound tensors (the index forms of convolution.c's paths; vector loads of the input are masked to the
 * columns inside it). Tiles, lanes and patch elements outside the problem read zeros or this call's
 * scratch and are never stored.
 */
#include <string.h>

#include "conv_shared.h"

#if defined(CONV_AVX512)

#define WINO_M 2 /* output tile side */
#define WINO_A (WINO_M + 2)
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
#define WINO_NR 32
/* floats readable after the last packed element of a plane (vector loads past a row's end) */
#define WINO_PLANE_SLACK 96

typedef struct wino_plan {
    const dmlpy_wino_problem* p;
    uint64_t TH, TW, tpr, Lw, Q; /* tile rows, tile columns, tiles per grid row (TW + 1), plane row, grid */
    uint64_t qb;                 /* tiles per item (multiple of WINO_NR, at most WINO_QB_MAX) */
    uint64_t nqc;                /* items per (n, g) */
    uint64_t nocb, cout_pad;     /* 8-row panels */
    uint64_t rows_max, plane_stride;
    uint64_t u_group; /* floats of U per group */
    float* u;
    unsigned char* nonfinite; /* per worker: saw an infinity or NaN in the filter or input */
    uint64_t worker_floats;
    float* work; /* per worker: planes | V | M */
    uint64_t v_es, m_es; /* floats between the elements' blocks of V and M */
    uint64_t v_floats, m_floats;
} wino_plan;

/* ---- filter transform -------------------------------------------------------------------------- */

static const double wino_G[WINO_A][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};

/* Item (g, 8-row panel): U[g][e][panel][ic][0..8) for every ic, the panel's 8 output channels in the 8
 * double lanes (rows past Cout_g are zeros). */
static void wino_filter_run(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    const wino_plan* wp = (const wino_plan*)vp;
    const dmlpy_wino_problem* p = wp->p;
    const uint64_t estride = wp->nocb * p->Cin_g * WINO_MR;
    uint64_t item;
    for (item = begin; item < end; ++item) {
        const uint64_t g = item / wp->nocb, ocb = item % wp->nocb;
        const unsigned rows = (unsigned)(p->Cout_g - ocb * WINO_MR < WINO_MR ? p->Cout_g - ocb * WINO_MR : WINO_MR);
        float* base = wp->u + g * wp->u_group + ocb * p->Cin_g * WINO_MR;
        uint64_t ic;
        for (ic = 0; ic < p->Cin_g; ++ic) {
            _Alignas(64) double f[9][WINO_MR];
            __m512d t[WINO_A][3];
            unsigned r, c, k;
            for (r = 0; r < WINO_MR; ++r) {
                const uint64_t wrow = g * p->wg + (ocb * WINO_MR + r) * p->wo + ic * p->wi;
                for (k = 0; k < 9; ++k) {
                    const uint64_t kh = k / 3, kw = k % 3, fh = p->flip ? 2 - kh : kh, fw = p->flip ? 2 - kw : kw;
                    f[k][r] = r < rows ? load_elem(p->half, p->w, wrow + fh * p->ws_h + fw * p->ws_w) : 0.0;
                }
            }
            for (r = 0; r < WINO_A; ++r) { /* G g */
                for (c = 0; c < 3; ++c) {
                    __m512d acc = _mm512_setzero_pd();
                    for (k = 0; k < 3; ++k) {
                        if (wino_G[r][k] != 0.0) acc = _mm512_fmadd_pd(_mm512_set1_pd(wino_G[r][k]), _mm512_load_pd(f[k * 3 + c]), acc);
                    }
                    t[r][c] = acc;
                }
            }
            for (r = 0; r < WINO_A; ++r) { /* (G g) G^T */
                for (c = 0; c < WINO_A; ++c) {
                    __m512d acc = _mm512_setzero_pd();
                    for (k = 0; k < 3; ++k) {
                        if (wino_G[c][k] != 0.0) acc = _mm512_fmadd_pd(_mm512_set1_pd(wino_G[c][k]), t[r][k], acc);
                    }
                    const __m256 u = _mm512_cvtpd_ps(acc);
                    /* u - u is NaN exactly when u is infinite or NaN (also a float32 overflow of U) */
                    if (_mm256_cmp_ps_mask(_mm256_sub_ps(u, u), _mm256_setzero_ps(), _CMP_NEQ_UQ)) wp->nonfinite[worker] = 1;
                    _mm256_store_ps(base + (r * WINO_A + c) * estride + ic * WINO_MR, u);
                }
            }
        }
    }
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
CONV_INLINE __mmask16 wino_pack_row(const dmlpy_wino_problem* p, float* dst, uint64_t xc, int64_t h, int64_t c0, int64_t c1) {
    int64_t v0 = p->pad_w, v1 = (int64_t)p->W + p->pad_w, c;
    __mmask16 nonfinite = 0;
    if (!p->half && p->xs_w == 1 && h >= 0 && h < (int64_t)p->H) {
        /* float32 rows: whole vectors, the padding columns masked off (a masked-off lane reads nothing) */
        const float* row = (const float*)p->x + xc + (uint64_t)h * p->xs_h;
        for (c = c0; c < c1; c += 16) {
            const int64_t lo = v0 - c, hi = v1 - c; /* lanes [lo, hi) hold input columns */
            __mmask16 mk = mask_n(hi <= 0 ? 0 : (uint64_t)hi);
            __m512 v;
            if (lo > 0) mk &= (__mmask16)~mask_n(lo >= 16 ? 16 : (uint64_t)lo);
            v = _mm512_maskz_loadu_ps(mk, row + (c - p->pad_w) * (mk != 0));
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
    wino_copy_in(p, dst + v0, xc + (uint64_t)h * p->xs_h + (uint64_t)(v0 - p->pad_w) * p->xs_w, p->xs_w, (uint64_t)(v1 - v0));
    for (c = v0; c < v1; ++c) nonfinite |= (__mmask16)(dst[c] - dst[c] != 0.0f);
    for (c = v1; c < c1; ++c) dst[c] = 0.0f;
    return nonfinite;
}

/* B^T applied to 4 vectors (rows of the patch, or columns). */
CONV_INLINE void wino_bt(const __m512* d, __m512* r) {
    r[0] = _mm512_sub_ps(d[0], d[2]);
    r[1] = _mm512_add_ps(d[1], d[2]);
    r[2] = _mm512_sub_ps(d[2], d[1]);
    r[3] = _mm512_sub_ps(d[1], d[3]);
}

/* d[j] lane l = src[2l + j], j < 4, l < 16 (the 4 patch columns of 16 tiles); reads src[0, 48). */
CONV_INLINE void wino_deinterleave(const float* src, __m512* d) {
    const __m512i sh0 = _mm512_set_epi32(16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1);
    const __m512i sh1 = _mm512_set_epi32(17, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1);
    const __m512 v0 = _mm512_loadu_ps(src), v1 = _mm512_loadu_ps(src + 16), v2 = _mm512_loadu_ps(src + 32);
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    d[0] = _mm512_permutex2var_ps(v0, even, v1);
    d[1] = _mm512_permutex2var_ps(v0, _mm512_add_epi32(even, _mm512_set1_epi32(1)), v1);
    d[2] = _mm512_permutex2var_ps(d[0], sh0, v2);
    d[3] = _mm512_permutex2var_ps(d[1], sh1, v2);
}

/* V[e][16 tiles] (element stride vstride between e) of the 16 tiles whose patch row 0 starts at src; patch
 * row i is input row m*th + i, packed in plane i % m, one plane row (Lw) further for i >= m. */
CONV_INLINE void wino_input_tile(const float* src, uint64_t plane_stride, uint64_t Lw, float* v, uint64_t vstride) {
    __m512 t[WINO_A][WINO_A];
    int i, c;
    for (i = 0; i < WINO_A; ++i) {
        __m512 d[WINO_A];
        wino_deinterleave(src + (uint64_t)(i % WINO_M) * plane_stride + (uint64_t)(i / WINO_M) * Lw, d);
        wino_bt(d, t[i]); /* along the row: t[i][c] */
    }
    for (c = 0; c < WINO_A; ++c) {
        __m512 d[WINO_A], r[WINO_A];
        for (i = 0; i < WINO_A; ++i) d[i] = t[i][c];
        wino_bt(d, r); /* along the column */
        for (i = 0; i < WINO_A; ++i) _mm512_store_ps(v + (uint64_t)(i * WINO_A + c) * vstride, r[i]);
    }
}

/* ---- GEMM micro-kernel ------------------------------------------------------------------------- */

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

/* ---- output transform and epilogue ------------------------------------------------------------- */

/* A run of lanes [l0, l0 + n) of one 16-tile vector: tile row th, first tile column tw (all n real). */
typedef struct wino_seg {
    unsigned l0, n;
    uint64_t th, tw;
} wino_seg;

/* o = the 32 floats out[2l + j] = y[j] lane l (j < 2, l < 16), as 2 vectors: one output row of 16 tiles. */
CONV_INLINE void wino_interleave(const __m512* y, __m512* o) {
    const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
    o[0] = _mm512_permutex2var_ps(y[0], lo, y[1]);
    o[1] = _mm512_permutex2var_ps(y[0], hi, y[1]);
}

/* A^T applied to 4 vectors: the 2 outputs. */
CONV_INLINE void wino_at(const __m512* s, __m512* y) {
    y[0] = _mm512_add_ps(_mm512_add_ps(s[0], s[1]), s[2]);
    y[1] = _mm512_sub_ps(_mm512_sub_ps(s[1], s[2]), s[3]);
}

/* Floats [start, start + count) of the m*16 floats in o (+ bias, activated) to y from element index yi, element
 * stride ys_w. The floats stay in registers (a reload from a just-written buffer would stall on store
 * forwarding). */
CONV_INLINE void wino_store_run(const dmlpy_wino_problem* p, const __m512* o, unsigned start, __m512 bias, uint64_t yi,
                                uint64_t count) {
    const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const unsigned off = start % 16;
    unsigned b = start / 16;
    uint64_t k;
    for (k = 0; k < count; k += 16, ++b) {
        const __mmask16 mk = mask_n(count - k);
        __m512 v = o[b];
        if (off != 0) {
            v = b + 1 < WINO_M ? _mm512_permutex2var_ps(v, _mm512_add_epi32(iota, _mm512_set1_epi32((int)off)), o[b + 1])
                               : _mm512_permutexvar_ps(_mm512_add_epi32(iota, _mm512_set1_epi32((int)off)), v);
        }
        v = finish_vec(&p->act, v, bias);
        if (p->ys_w == 1) {
            store_vec(p->half, 0, p->y, yi + k, v, mk);
        } else {
            _Alignas(64) float tmp[16];
            uint64_t j, n = count - k < 16 ? count - k : 16;
            _mm512_store_ps(tmp, v);
            for (j = 0; j < n; ++j) store_elem(p->half, p->y, yi + (k + j) * p->ys_w, tmp[j]);
        }
    }
}

/* ---- work items ----------------------------------------------------------------------------------- */

/* One work item: image n, group g, tiles [q0, q1) of the grid in nv vectors. */
typedef struct wino_item {
    uint64_t n, g, q0, q1, nv, th_lo, rows, qbase, tw_first, tw_last;
} wino_item;

/* The planes of input channel ic of the item: plane row t of plane i holds input row m*(th_lo + t) + i; row
 * `rows` only for the last tile row's patch rows m..a-1. Columns: those of the item's tiles (real tiles end
 * before Lw). */
static __mmask16 wino_pack_channel(const wino_plan* wp, const wino_item* it, uint64_t ic, float* planes) {
    const dmlpy_wino_problem* p = wp->p;
    const uint64_t m = WINO_M, Lw = wp->Lw;
    const uint64_t xc = it->n * p->xs_n + (it->g * p->Cin_g + ic) * p->xs_c;
    uint64_t i, t;
    __mmask16 nonfinite = 0;
    for (t = 0; t <= it->rows; ++t) {
        const int64_t c0 = t == 0 ? (int64_t)(m * it->tw_first) : 0;
        int64_t c1 = t == it->rows ? (int64_t)(m * it->tw_last + WINO_A) : (int64_t)Lw;
        if (c1 > (int64_t)Lw) c1 = (int64_t)Lw;
        for (i = 0; i < (t == it->rows ? (uint64_t)(WINO_A - WINO_M) : m); ++i) {
            nonfinite |= wino_pack_row(p, planes + i * wp->plane_stride + t * Lw, xc, (int64_t)(m * (it->th_lo + t) + i) - p->pad_h, c0, c1);
        }
    }
    return nonfinite;
}

/* Stage 1: the item's input patches, transformed, into V[e][ic][tile], one input channel at a time. Two
 * plane sets: channel ic + 1 is packed before channel ic is transformed, so the transform's loads do not
 * overlap stores still in flight (they could not be forwarded: different offsets, masked stores). */
static __mmask16 wino_input_stage(const wino_plan* wp, const wino_item* it, float* planes, float* V) {
    const dmlpy_wino_problem* p = wp->p;
    const uint64_t set = WINO_M * wp->plane_stride;
    uint64_t ic, v, e;
    __mmask16 nonfinite = wino_pack_channel(wp, it, 0, planes);
    for (ic = 0; ic < p->Cin_g; ++ic) {
        const float* cur = planes + (ic & 1) * set;
        if (ic + 1 < p->Cin_g) nonfinite |= wino_pack_channel(wp, it, ic + 1, planes + ((ic + 1) & 1) * set);
        for (v = 0; v < it->nv; ++v) {
            wino_input_tile(cur + WINO_M * (it->q0 - it->qbase + 16 * v), wp->plane_stride, wp->Lw, V + ic * wp->qb + 16 * v,
                            wp->v_es);
        }
        if (it->nv & 1) { /* the micro-kernel's second vector of the last block: defined, never stored */
            for (e = 0; e < WINO_E; ++e) _mm512_store_ps(V + e * wp->v_es + ic * wp->qb + 16 * it->nv, _mm512_setzero_ps());
        }
    }
    return nonfinite;
}

/* Stage 2: per element, M_e = U_e V_e. */
static void wino_gemm_stage(const wino_plan* wp, const wino_item* it, const float* V, float* M) {
    const dmlpy_wino_problem* p = wp->p;
    const float* U = wp->u + it->g * wp->u_group;
    const uint64_t nb = (it->nv + 1) / 2;
    uint64_t e, ocb, jb;
    for (e = 0; e < WINO_E; ++e) {
        const float* Ve = V + e * wp->v_es;
        for (ocb = 0; ocb < wp->nocb; ++ocb) {
            const float* Ue = U + (e * wp->nocb + ocb) * p->Cin_g * WINO_MR;
            float* Me = M + e * wp->m_es + ocb * WINO_MR * wp->qb;
            for (jb = 0; jb < nb; ++jb) wino_kernel(p->Cin_g, Ue, Ve + jb * WINO_NR, wp->qb, Me + jb * WINO_NR, wp->qb);
        }
    }
}

/* Stage 3: per output channel and vector, A^T M A, and the epilogue for the lanes holding real tiles. */
static void wino_output_stage(const wino_plan* wp, const wino_item* it, const float* M) {
    const dmlpy_wino_problem* p = wp->p;
    const uint64_t m = WINO_M, tpr = wp->tpr, estride = wp->m_es;
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
    for (oc = 0; oc < p->Cout_g; ++oc) {
        const uint64_t ch = it->g * p->Cout_g + oc;
        const __m512 bv = _mm512_set1_ps(p->b ? load_elem(p->half, p->b, ch * p->bs_c) : 0.0f);
        const uint64_t ybase = it->n * p->ys_n + ch * p->ys_c;
        const float* Mo = M + oc * wp->qb;
        for (v = 0; v < it->nv; ++v) {
            __m512 s[WINO_A][WINO_M], Y[WINO_M][WINO_M]; /* Y[j][i]: output row i, column j */
            unsigned r, i, j, k;
            if (seg_first[v] == seg_first[v + 1]) continue;
            for (r = 0; r < WINO_A; ++r) {
                __m512 row[WINO_A];
                for (k = 0; k < WINO_A; ++k) row[k] = _mm512_load_ps(Mo + (r * WINO_A + k) * estride + 16 * v);
                wino_at(row, s[r]); /* along the row */
            }
            for (j = 0; j < WINO_M; ++j) {
                __m512 col[WINO_A];
                for (r = 0; r < WINO_A; ++r) col[r] = s[r][j];
                wino_at(col, Y[j]); /* along the column */
            }
            for (i = 0; i < WINO_M; ++i) {
                __m512 y[WINO_M], o[WINO_M];
                for (j = 0; j < WINO_M; ++j) y[j] = Y[j][i];
                wino_interleave(y, o);
                for (k = seg_first[v]; k < seg_first[v + 1]; ++k) {
                    const wino_seg* sg = &segs[k];
                    const uint64_t oh = m * sg->th + i, ow = m * sg->tw;
                    uint64_t count = m * sg->n;
                    if (oh >= p->OH) continue;
                    if (count > p->OW - ow) count = p->OW - ow;
                    wino_store_run(p, o, (unsigned)(m * sg->l0), bv, ybase + oh * p->ys_h + ow * p->ys_w, count);
                }
            }
        }
    }
}

/* Items (n, g, run of qb tiles of the grid), run by a worker with its own planes, V and M. */
static void wino_run(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    const wino_plan* wp = (const wino_plan*)vp;
    const dmlpy_wino_problem* p = wp->p;
    float* planes = wp->work + (uint64_t)worker * wp->worker_floats;
    float* V = planes + 2 * WINO_M * wp->plane_stride;
    float* M = V + wp->v_floats;
    uint64_t item;
    for (item = begin; item < end; ++item) {
        wino_item it;
        uint64_t qlast;
        const uint64_t qc = item % wp->nqc;
        it.g = (item / wp->nqc) % p->G;
        it.n = item / (wp->nqc * p->G);
        it.q0 = qc * wp->qb;
        it.q1 = it.q0 + wp->qb < wp->Q ? it.q0 + wp->qb : wp->Q;
        it.nv = (it.q1 - it.q0 + 15) / 16;
        qlast = it.q0 + 16 * it.nv - 1;
        it.th_lo = it.q0 / wp->tpr;
        it.rows = qlast / wp->tpr - it.th_lo + 1;
        it.qbase = it.th_lo * wp->tpr;
        it.tw_first = it.q0 - it.qbase;
        it.tw_last = qlast % wp->tpr;
        if (wino_input_stage(wp, &it, planes, V)) {
            wp->nonfinite[worker] = 1; /* the call is redone by another path: no point finishing this item */
            continue;
        }
        wino_gemm_stage(wp, &it, V, M);
        wino_output_stage(wp, &it, M);
    }
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
    if (p->Cin_g < WINO_MIN_CIN || p->Cout_g < WINO_MIN_COUT) return -1;
    if (p->OH > ((uint64_t)1 << 30) || p->OW > ((uint64_t)1 << 30) || p->Cin_g > ((uint64_t)1 << 24) ||
        p->Cout_g > ((uint64_t)1 << 24)) {
        return -1;
    }
    if (p->OH == 0 || p->OW == 0 || p->OH * p->OW < WINO_MIN_OUT) return -1;
    if (p->pad_h > ((int64_t)1 << 32) || p->pad_h < -((int64_t)1 << 32) || p->pad_w > ((int64_t)1 << 32) ||
        p->pad_w < -((int64_t)1 << 32)) {
        return -1;
    }
    memset(&wp, 0, sizeof wp);
    memset(nonfinite, 0, sizeof nonfinite);
    wp.p = p;
    wp.nonfinite = nonfinite;
    wp.TH = (p->OH + WINO_M - 1) / WINO_M;
    wp.TW = (p->OW + WINO_M - 1) / WINO_M;
    wp.tpr = wp.TW + 1;
    wp.Lw = WINO_M * wp.tpr;
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
        !dmlpy_mul_u64(wp.cout_pad * p->Cin_g, WINO_E, &wp.u_group) || !dmlpy_mul_u64(wp.u_group, p->G, &u_floats)) {
        return -1;
    }
    if (!dmlpy_mul_u64(wp.plane_stride, 2 * WINO_M, &per_worker) || !dmlpy_add_u64(per_worker, wp.v_floats, &per_worker) ||
        !dmlpy_add_u64(per_worker, wp.m_floats, &per_worker)) {
        return -1;
    }
    per_worker = (per_worker + 15) & ~(uint64_t)15;
    wp.worker_floats = per_worker;

    if (!dmlpy_mul_u64(p->N, p->G, &items) || !dmlpy_mul_u64(items, wp.nqc, &items)) return -1;
    /* work units (~1/16 ns): the element GEMMs at ~16 multiply-adds per unit, transforms and stores */
    if (!dmlpy_mul_u64(items, wp.qb * WINO_E, &macs) || !dmlpy_mul_u64(macs, p->Cin_g, &work) ||
        !dmlpy_mul_u64(work, wp.cout_pad, &work)) {
        work = UINT64_MAX;
    } else {
        uint64_t transforms;
        work /= 16;
        if (!dmlpy_mul_u64(macs, (p->Cin_g + p->Cout_g) / 2 + 1, &transforms) || !dmlpy_add_u64(work, transforms, &work)) {
            work = UINT64_MAX;
        }
    }
    limit = threadCount ? threadCount : dmlpy_online_cpus();
    threads = dmlpy_choose_threads(work, items, threadCount);
    if (threads > limit) threads = limit;
    if (threads > 256) threads = 256;

    if (!dmlpy_mul_u64(per_worker, threads, &bytes) || !dmlpy_add_u64(bytes, u_floats, &bytes) ||
        bytes > WINO_SCRATCH_CAP / sizeof(float)) {
        return -1;
    }
    bytes = bytes * sizeof(float) + 3 * 64;
    block = conv_scratch_get(bytes);
    if (block == NULL) return DMLPY_E_OUT_OF_MEMORY;
    cur = (char*)(((uintptr_t)block + 64 + 63) & ~(uintptr_t)63);
    wp.u = (float*)cur;
    cur += (u_floats * sizeof(float) + 63) & ~(uint64_t)63;
    wp.work = (float*)cur;
    /* plane contents never read by a stored lane are still defined */
    for (t = 0; t < threads; ++t) memset(wp.work + t * per_worker, 0, (size_t)(2 * WINO_M * wp.plane_stride) * sizeof(float));
    {
        const uint64_t fitems = p->G * wp.nocb;
        const unsigned ft = dmlpy_choose_threads(u_floats * 8u, fitems, threads);
        dmlpy_parallel_for(fitems, dmlpy_choose_grain(fitems, ft), ft, wino_filter_run, &wp);
    }
    if (!wino_any(nonfinite, threads)) dmlpy_parallel_for(items, 1, threads, wino_run, &wp);
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
