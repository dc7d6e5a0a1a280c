/*
 * convolution.c - DML_OPERATOR_CONVOLUTION (53): FORWARD and BACKWARD directions, CONVOLUTION and
 * CROSS_CORRELATION modes, FLOAT32 and FLOAT16 (float32 accumulation, one rounding at the end), 1 to 3
 * spatial dims, groups, dilations, start/end/output padding, optional bias, optional fused activation,
 * any element strides on every tensor.
 *
 * Semantics: docs/convolution-semantics.md (the contract with the NumPy kernels). W' is the filter,
 * flipped along every spatial axis in Mode CONVOLUTION. Spatial sizes: in, out; computed outputs are
 * o < outc = out - OutputPadding (the trailing OutputPadding positions are 0 before bias/activation).
 *   FORWARD   y[n, oc, o] = sum_{ic, k} x[n, g*Cin_g + ic, o*s + k*d - sp] * W'[oc, ic, k]
 *   BACKWARD  y[n, g*Cout_g + oc, o] = sum over ci of group g and taps k with o + sp - k*d = i*s,
 *             0 <= i < in, of x[n, ci, i] * W'[ci, oc, k]   (the scatter form, written as a gather)
 *   then y += bias[oc], y = act(y).
 *
 * Three paths, all computing every output element exactly once (bias and activation are applied in
 * the same pass; nothing is scattered or accumulated in the output), and a fourth in winograd.c that is
 * tried first: Winograd for 2-D dilation-1 problems with enough channels per group, F(2x2, 3x3) for
 * stride-1 3x3 FORWARD and BACKWARD, F(3x3, 2x2) per output phase for BACKWARD with filter = 2 x stride
 * (try_winograd; winograd.c's header says when and why).
 *
 * 1. GEMM path (implicit GEMM over "phases").
 *   BACKWARD is split, per spatial dim, into s output phases r (outputs o = r + s*t). Within one phase
 *   the taps that reach it are fixed and the input index is t + c_k: a stride-1 forward correlation.
 *   FORWARD is one phase whose input index is o*s + k*d; the input is split into sub-rows per dim (sub-row
 *   q holds positions j*s + q), which makes it o + c_k inside one sub-row as well.
 *   One packed, zero-padded float32 copy of the input (xp) serves every phase, in one of two layouts:
 *     rows   [n][sub][jd][jh][c][jw]: a 16-lane slot is 16 columns of one grid row (no lanes lost when
 *            the phase grid's width is a multiple of 16);
 *     planes [n][sub][c][jd][jh][jw]: a slot is 16 consecutive positions of the flattened grid
 *            p = td*Lh*Lw + th*Lw + tw, spanning rows (the few columns between rows are computed and
 *            dropped); chosen when it computes fewer lanes (widths like 56).
 *   Per (group, phase): C[oc, p] = sum_kk A[kk][oc] * B[kk][p] with kk = (tap, ic) (rows: tap-major, so
 *   a tap's loads over the channels walk memory with a constant stride; planes: ic-major, so a channel's
 *   taps share cache lines), A = W' repacked into MR-row panels, B read straight from xp through a table
 *   of per-kk offsets. The micro-kernel keeps an MR x (16*NV) tile in registers (AVX-512: 8 x 48 = 24
 *   zmm accumulators, A broadcast, one unaligned B load per vector and k step); each of the NV vectors has
 *   its own base, so a tile can take slots from different grid rows. K is blocked (KC steps): one tile's
 *   B block stays in L1 while every M block and W phase consumes it, block sums are added to a per-thread
 *   tile buffer. The epilogue adds the bias, applies the activation, interleaves the two W phases of a
 *   stride-2 BACKWARD row with permutes, converts to float16 if needed and stores (vector stores for unit
 *   output W stride, non-temporal for outputs far larger than the caches; scalar stores otherwise).
 *   Threads take work items (n, group, D/H phase, run of tiles) after a parallel packing pass; with many
 *   images x groups, each item (n, group) instead packs its own input into a cache-resident per-worker
 *   xp and computes all of it ("per-image mode", no shared xp round trip through memory).
 *
 * 2. Depthwise path (Cin/G == 1, at most 4 outputs per group): per item (n, group, run of grid rows) the
 *   input rows are packed into a per-worker buffer, then each output row is computed directly, vectorised
 *   along W (64 columns per step, both W phases of a stride-2 BACKWARD row interleaved in registers).
 *   Everything that depends only on the geometry (tap tables, filter offsets, W runs, prefetch plan) is set
 *   up once per run of items, not per item. When an item is a whole small plane (MobileNet's 2x2 .. 14x14
 *   stages), up to 32 items are packed before any of them is computed, and rows of at most 16 outputs with
 *   one phase per dim are computed several grid rows per vector (dw_plane_flat).
 *
 *   Small planes (at most 64 outputs, FORWARD float32, one channel per group) go instead to run_dw_lanes: 16
 *   channels in the lanes, gathered and scattered, each output the sum of its valid taps (MobileNet's 2x2 .. 8x8
 *   stages: 336 channels of 2x2 in 4 us instead of 19).
 *   2-D FORWARD float32 3x3 at stride 1 or 2 (MobileNets' depthwise layers) with output rows of 8 columns and
 *   more skips the packing: dw_k3_rows reads the input rows directly (stride 2: split into even and odd columns
 *   by permutes), four output rows at a time, the same taps in the same order as the packed loops.
 *
 * 3. Direct path: everything the fast paths do not take (very large strides, kernels, dilations or
 *   paddings, scratch too large): one output element at a time by the gather form, no scratch memory.
 *
 * 4. Few-positions path (conv_small.h, run_small; AVX-512 builds): FORWARD with at most CONV_SMALL_MAX_P
 *   computed outputs per image and group and many channels, where the filter is the large operand: the
 *   input is copied im2col-style once, the filter is streamed in its stored layout. Tried first (2-D 3x3
 *   stride-1 problems from CONV_SMALL_WINO_P positions on: after Winograd); it checks its own sums for
 *   infinities and NaNs instead of the filter scan below.
 *
 * Padding taps are skipped (docs/convolution-semantics.md): an output is the sum over the taps that land on
 * real input only, so an infinite or NaN weight whose taps all fall in padding does not reach it. The direct
 * path never visits such taps. The GEMM, depthwise and Winograd paths read padding as stored zeros, and
 * 0 * inf = NaN: a call whose filter holds an infinity or NaN (one O(filter) scan, filter_is_finite) is
 * declined by them and runs on the direct path. Infinite or NaN inputs need no such care there (a zero
 * weight times an infinite real input is NaN in the direct sum too); the Winograd path declines those on
 * its own (winograd.c).
 *
 * Scratch memory: one block per call (overflow-checked sizes, DMLPY_E_OUT_OF_MEMORY when malloc fails);
 * a block of at most CONV_SCRATCH_KEEP bytes is kept for the next call, so repeated calls do not fault
 * fresh pages in.
 */
#include <stdlib.h>
#include <string.h>

#ifndef CONV_NV
/* three B vectors per k step (8 x 48 tiles, as gemm.c's): 8 x 32 tiles issued 10 loads (8 broadcasts) per 16
 * multiply-adds and ran at about two thirds of the FMA peak; 11 per 24 keep the FMA ports busy */
#define CONV_NV 3
#endif
#include "conv_kernels.h" /* CONV_MR, CONV_NV, CONV_NR and the micro-kernels */
#include "conv_shared.h"

#if !defined(__STDC_NO_ATOMICS__) && !defined(_MSC_VER)
#include <stdatomic.h>
#define CONV_SCRATCH_CACHE 1
#endif

/* K steps per block (B block of one tile: KC rows of 16*NV floats, kept in L1). */
#ifndef CONV_KC
#define CONV_KC 128
#endif

/* Fast-path limits (beyond them: direct path). */
#define CONV_MAX_K 256       /* taps per spatial dim */
#define CONV_MAX_S 64        /* strides (phases / sub-rows per dim) */
#define CONV_MAX_PHASES 4096 /* phases over all dims */
#ifndef CONV_SCRATCH_CAP
#define CONV_SCRATCH_CAP ((uint64_t)1 << 31) /* bytes of scratch at most */
#endif
/* Scratch blocks up to this size are kept for the next call (one block per process). */
#ifndef CONV_SCRATCH_KEEP
#define CONV_SCRATCH_KEEP ((uint64_t)64 << 20)
#endif
/* Output size from which float32 results are stored non-temporally. */
#ifndef CONV_NT_BYTES
#define CONV_NT_BYTES ((uint64_t)6 << 20)
#endif
/* Work items per thread the GEMM path aims for (load balance vs per-item overhead). */
#ifndef CONV_ITEMS_PER_THREAD
#define CONV_ITEMS_PER_THREAD 16
#endif
/* Per-image mode: the largest image-group xp (floats) a worker packs for itself (fits L2 next to A). */
#ifndef CONV_FUSED_FLOATS
#define CONV_FUSED_FLOATS ((uint64_t)320 << 10)
#endif
/* Floats of readable zeros after xp: vectors of the last row run up to 16 floats + tap offset past it. */
#define CONV_XP_SLACK 64

/* ---- plan ------------------------------------------------------------------------------------------ */

typedef struct conv_dim {
    uint64_t in, out, outc, k, s, d, sp, ep, op;
    /* fast path geometry */
    uint64_t nphase;                    /* output phases: s (BACKWARD) or 1 (FORWARD) */
    uint64_t ostep;                     /* output positions between consecutive t of a phase */
    uint64_t T[CONV_MAX_S];             /* grid points of each phase (t < T[r]) */
    uint64_t nsub;                      /* sub-rows of xp along this dim */
    int64_t sub_start[CONV_MAX_S];      /* input position of element 0 of each sub-row */
    uint64_t step;                      /* input positions between consecutive sub-row elements */
    uint64_t len;                       /* elements per sub-row */
    uint32_t tap_first[CONV_MAX_S + 1]; /* taps of phase r: tap_first[r] .. tap_first[r+1]-1 */
    uint32_t tap_k[CONV_MAX_K];         /* filter index (before the Mode flip) */
    uint32_t tap_sub[CONV_MAX_K];       /* sub-row */
    uint64_t tap_c[CONV_MAX_K];         /* element offset inside the sub-row */
} conv_dim;

typedef struct conv_phase {
    uint64_t r[3];      /* phase along D, H, W */
    uint64_t ntaps;     /* product of the per-dim tap counts */
    uint64_t K;         /* Cin_g * ntaps */
    uint64_t a_offset;  /* floats from the start of a group's A panels */
    uint64_t off_index; /* first entry in the offset table */
} conv_phase;

typedef struct conv_plan {
    int half, backward, flip;
    dmlpy_act act;
    uint64_t N, Cin, Cout, G, Cin_g, Cout_g;
    conv_dim dim[3]; /* D, H, W; unused dims have size 1 */
    uint64_t xs_n, xs_c, xs[3];
    uint64_t ws_0, ws_1, ws[3];
    uint64_t ys_n, ys_c, ys[3];
    uint64_t bs_c;
    const char* x;
    const char* w;
    const char* b; /* NULL: no bias */
    char* y;

    /* fast path */
    uint64_t nphase; /* total phases */
    conv_phase* phases;
    uint64_t mblocks; /* ceil(Cout_g / MR) */
    unsigned mr_tail; /* width of the last M block (1, 2, 4 or 8) */
    uint64_t a_group; /* floats of A panels per group */
    float* a;         /* packed filter */
    int64_t* off;     /* offset table */
    /* xp layout. Rows (R): [n][sub][jd][jh][c][jw], a 16-wide slot is 16 columns of one grid row.
     * Planes (P): [n][sub][c][jd][jh][jw], a slot is 16 consecutive positions p = td*Lh*Lw + th*Lw + tw
     * of the flattened grid (spanning rows; the Lw - T columns between rows are computed and dropped).
     * P wastes fewer lanes when T along W is not a multiple of 16. */
    int planes;
    uint64_t xc, xd, xh; /* floats between channels, D rows, H rows of xp */
    uint64_t sub_floats; /* Cin * Ld * Lh * Lw */
    uint64_t n_floats;   /* nsub_total * sub_floats */
    int ic_major;        /* kk = ic*ntaps + tap (else tap*Cin_g + ic) */
    int fused;           /* per-image mode: each (n, g) item packs Cin_g channels into its worker's xp */
    uint64_t cx;         /* channels in an xp image: Cin (shared) or Cin_g (per-image) */
    uint64_t xp_worker_floats; /* per-image mode: floats of one worker's xp */
    float* xp;           /* packed input */
    uint64_t xp_items;   /* pack items (n, sub, jd, c) */
    uint64_t nsub_total;
    uint64_t spr;        /* 16-wide slots per grid row */
    uint64_t tiles_max;  /* tiles of the largest (D, H) phase */
    uint64_t tiles_per_chunk, nchunks;
    uint64_t compute_items, fill_items, pack_a_items;
    uint64_t a_icb; /* input channels per A pack item */
    int w_spatial_packed; /* filter spatial dims packed row-major (Kvol contiguous elements) */
    float* tiles; /* per-worker C tiles */
    uint64_t tile_floats;
    int fill_needed;
    int nt;          /* non-temporal output stores */
    /* depthwise path */
    uint64_t dw_rows;      /* grid rows (th) per item */
    uint64_t dw_chunks;    /* items per (n, g) */
    uint64_t dw_buf_floats; /* per-worker buffer: packed input rows, then weights, a row buffer, tap tables */
    uint64_t dw_pack_floats; /* floats of the packed rows of a batch of items */
    uint64_t dw_plane_floats; /* floats between the items of a batch */
    uint64_t dw_batch;        /* items packed, then computed, together (1 unless an item is a whole plane) */
    uint64_t dw_cmax_h;      /* largest H tap offset (grid rows an item reads past its own) */
    float* dw_buf;
} conv_plan;

/* ---- element access ------------------------------------------------------------------------------ */

static inline float bias_of(const conv_plan* p, uint64_t oc) {
    return p->b ? load_elem(p->half, p->b, oc * p->bs_c) : 0.0f;
}

/* ---- direct path ----------------------------------------------------------------------------------- */

/* Output rows (n, oc, od, oh), every ow, by the gather form. */
static void direct_rows(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    const conv_plan* p = (const conv_plan*)vp;
    const conv_dim* D = &p->dim[0];
    const conv_dim* H = &p->dim[1];
    const conv_dim* W = &p->dim[2];
    uint64_t row;
    (void)worker;
    for (row = begin; row < end; ++row) {
        uint64_t oh = row % H->out, t = row / H->out;
        uint64_t od = t % D->out;
        uint64_t oc, n, g, ocg, ow;
        float bias;
        t /= D->out;
        oc = t % p->Cout;
        n = t / p->Cout;
        g = oc / p->Cout_g;
        ocg = oc % p->Cout_g;
        bias = bias_of(p, oc);
        for (ow = 0; ow < W->out; ++ow) {
            float acc = 0.0f;
            uint64_t o[3];
            uint64_t yi = n * p->ys_n + oc * p->ys_c + od * p->ys[0] + oh * p->ys[1] + ow * p->ys[2];
            o[0] = od;
            o[1] = oh;
            o[2] = ow;
            if (od < D->outc && oh < H->outc && ow < W->outc) {
                uint64_t ic, kk[3];
                for (ic = 0; ic < p->Cin_g; ++ic) {
                    uint64_t ci = g * p->Cin_g + ic;
                    for (kk[0] = 0; kk[0] < D->k; ++kk[0]) {
                        for (kk[1] = 0; kk[1] < H->k; ++kk[1]) {
                            for (kk[2] = 0; kk[2] < W->k; ++kk[2]) {
                                uint64_t pos[3], kf[3], xi, wi;
                                int i, ok = 1;
                                for (i = 0; i < 3; ++i) {
                                    const conv_dim* dm = &p->dim[i];
                                    uint64_t kd = kk[i] * dm->d; /* k, d < 2^32: no overflow */
                                    if (!p->backward) {
                                        /* input position o*s + k*d - sp (o, s < 2^32) */
                                        uint64_t a = o[i] * dm->s;
                                        if (kd > UINT64_MAX - a) {
                                            ok = 0;
                                            break;
                                        }
                                        a += kd;
                                        if (a < dm->sp || a - dm->sp >= dm->in) {
                                            ok = 0;
                                            break;
                                        }
                                        pos[i] = a - dm->sp;
                                    } else {
                                        /* o + sp - k*d = i*s with 0 <= i < in */
                                        uint64_t a = o[i] + dm->sp;
                                        if (a < kd) {
                                            ok = 0;
                                            break;
                                        }
                                        a -= kd;
                                        if (a % dm->s != 0 || a / dm->s >= dm->in) {
                                            ok = 0;
                                            break;
                                        }
                                        pos[i] = a / dm->s;
                                    }
                                    kf[i] = p->flip ? dm->k - 1 - kk[i] : kk[i];
                                }
                                if (!ok) continue;
                                xi = n * p->xs_n + ci * p->xs_c + pos[0] * p->xs[0] + pos[1] * p->xs[1] +
                                     pos[2] * p->xs[2];
                                wi = p->backward ? ci * p->ws_0 + ocg * p->ws_1 : oc * p->ws_0 + ic * p->ws_1;
                                wi += kf[0] * p->ws[0] + kf[1] * p->ws[1] + kf[2] * p->ws[2];
                                acc += load_elem(p->half, p->x, xi) * load_elem(p->half, p->w, wi);
                            }
                        }
                    }
                }
            }
            store_elem(p->half, p->y, yi, dmlpy_act_scalar(&p->act, acc + bias));
        }
    }
}

/* 1 when no filter element is an infinity or NaN (all-ones exponent), read through the filter's strides. The
 * innermost dims that are contiguous form one run, checked by a branch-free loop the compiler vectorises: a
 * packed filter is one pass over its bytes, as cheap as the packing the fast paths do anyway. */
static int filter_is_finite(const dmlpy_tensor* wt) {
    uint64_t idx[DMLPY_MAX_RANK] = {0};
    uint64_t off = 0, run = 1, rows = 1, r, j;
    uint32_t i, outer = wt->rank, bad = 0;
    while (outer > 0 && (wt->sizes[outer - 1] == 1 || wt->strides[outer - 1] == run)) run *= wt->sizes[--outer];
    for (i = 0; i < outer; ++i) rows *= wt->sizes[i]; /* rows * run <= 2^32 - 1: checked by tensor_from_desc */
    for (r = 0; r < rows; ++r) {
        j = 0;
        if (wt->data_type == DML_TENSOR_DATA_TYPE_FLOAT16) {
            const uint16_t* h = (const uint16_t*)wt->data + off;
#if defined(CONV_AVX512)
            {
                const __m512i e = _mm512_set1_epi16(0x7C00);
                __mmask32 hit = 0;
                for (; j + 32 <= run; j += 32) {
                    hit |= _mm512_cmpeq_epi16_mask(_mm512_and_si512(_mm512_loadu_si512((const void*)(h + j)), e), e);
                }
                bad |= hit != 0;
            }
#endif
            for (; j < run; ++j) bad |= (h[j] & 0x7C00u) == 0x7C00u;
        } else {
            const char* f = wt->data + off * 4;
#if defined(CONV_AVX512)
            {
                /* the scalar loop below is not vectorised by every compiler: 4 bytes a cycle on a 9 MB filter */
                const __m512i e = _mm512_set1_epi32(0x7F800000);
                __mmask16 hit = 0;
                for (; j + 16 <= run; j += 16) {
                    hit |= _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_loadu_si512((const void*)(f + j * 4)), e), e);
                }
                bad |= hit != 0;
            }
#endif
            for (; j < run; ++j) {
                uint32_t bits;
                memcpy(&bits, f + j * 4, sizeof bits);
                bad |= (bits & 0x7F800000u) == 0x7F800000u;
            }
        }
        for (i = outer; i-- > 0;) { /* the next row, row-major over the outer dims */
            off += wt->strides[i];
            if (++idx[i] < wt->sizes[i]) break;
            off -= idx[i] * wt->strides[i];
            idx[i] = 0;
        }
    }
    return !bad;
}

/* ---- fast path: geometry ----------------------------------------------------------------------------- */

/* Fills the fast-path fields of one dim. Returns 0 when the dim is outside the fast path's limits. */
static int plan_dim(conv_dim* dm, int backward) {
    uint64_t k, r;
    if (dm->k > CONV_MAX_K || dm->s > CONV_MAX_S) return 0;
    if (dm->d > ((uint64_t)1 << 24) || dm->sp > ((uint64_t)1 << 40)) return 0;
    if (!backward) {
        /* One phase, all taps. Tap k reads input position o*s + k*d - sp = (o + c)*s + q - sp with
         * q = (k*d) mod s, c = (k*d) div s: element o + c of the sub-row of q. */
        uint64_t cmax = 0;
        dm->nphase = 1;
        dm->ostep = 1;
        dm->T[0] = dm->outc;
        dm->step = dm->s;
        dm->nsub = 0;
        dm->tap_first[0] = 0;
        for (k = 0; k < dm->k; ++k) {
            uint64_t kd = k * dm->d, q = kd % dm->s, c = kd / dm->s, u;
            int64_t start = (int64_t)q - (int64_t)dm->sp;
            for (u = 0; u < dm->nsub; ++u) {
                if (dm->sub_start[u] == start) break;
            }
            if (u == dm->nsub) dm->sub_start[dm->nsub++] = start;
            dm->tap_k[k] = (uint32_t)k;
            dm->tap_sub[k] = (uint32_t)u;
            dm->tap_c[k] = c;
            if (c > cmax) cmax = c;
        }
        dm->tap_first[1] = (uint32_t)dm->k;
        dm->len = dm->outc + cmax;
    } else {
        /* s phases. Output o = r + s*t receives tap k when r + sp - k*d = s*c_k; input index t + c_k. */
        int64_t cmin = 0, jmax = 0;
        int any = 0;
        uint64_t ntap = 0;
        const int64_t ss = (int64_t)dm->s;
        dm->nphase = dm->s;
        dm->ostep = dm->s;
        dm->step = 1;
        dm->nsub = 1;
        for (r = 0; r < dm->s; ++r) dm->T[r] = dm->outc > r ? (dm->outc - r + dm->s - 1) / dm->s : 0;
        for (r = 0; r < dm->s; ++r) {
            dm->tap_first[r] = (uint32_t)ntap;
            for (k = 0; k < dm->k; ++k) {
                int64_t num = (int64_t)r + (int64_t)dm->sp - (int64_t)(k * dm->d), c;
                if (num % ss != 0) continue;
                c = num / ss;
                dm->tap_k[ntap] = (uint32_t)k;
                dm->tap_sub[ntap] = 0;
                dm->tap_c[ntap] = (uint64_t)c; /* rebased below */
                ++ntap;
                if (dm->T[r] == 0) continue;
                if (!any || c < cmin) cmin = c;
                if (!any || c + (int64_t)dm->T[r] - 1 > jmax) jmax = c + (int64_t)dm->T[r] - 1;
                any = 1;
            }
        }
        dm->tap_first[dm->s] = (uint32_t)ntap;
        if (!any) cmin = jmax = 0;
        for (r = 0; r < dm->s; ++r) {
            for (k = dm->tap_first[r]; k < dm->tap_first[r + 1]; ++k) {
                /* Taps of phases without outputs are never read; keep their offsets in range anyway. */
                dm->tap_c[k] = dm->T[r] == 0 ? 0 : (uint64_t)((int64_t)dm->tap_c[k] - cmin);
            }
        }
        dm->sub_start[0] = cmin;
        dm->len = (uint64_t)(jmax - cmin + 1);
        /* Grid rows are len apart in the planes layout: every phase's T must fit (phases without taps
         * can have one more point than those with). */
        if (dm->len < dm->T[0]) dm->len = dm->T[0];
    }
    if (dm->len == 0) dm->len = 1;
    return 1;
}

/* ---- fast path: packing -------------------------------------------------------------------------- */

/* Input position of element j of sub-row u along dm, or -1 for padding. */
static inline int64_t sub_pos(const conv_dim* dm, uint64_t u, uint64_t j) {
    int64_t pos = dm->sub_start[u] + (int64_t)(j * dm->step);
    return (pos < 0 || (uint64_t)pos >= dm->in) ? -1 : pos;
}

/* Copies count input elements (element stride xstride from xi) to dst as float32. */
CONV_INLINE void copy_in(const conv_plan* p, float* restrict dst, uint64_t xi, uint64_t xstride, uint64_t count) {
    uint64_t j = 0;
    if (p->half) {
        const uint16_t* src = (const uint16_t*)p->x + xi;
        if (xstride == 1) {
            dmlpy_h2f_row(dst, src, (size_t)count);
        } else {
            for (; j < count; ++j) dst[j] = dmlpy_h2f(src[j * xstride]);
        }
    } else {
        const float* src = (const float*)p->x + xi;
        if (xstride == 1) {
#if defined(CONV_AVX512)
            for (; j + 16 <= count; j += 16) _mm512_storeu_ps(dst + j, _mm512_loadu_ps(src + j));
            if (j < count) {
                __mmask16 m = (__mmask16)((1u << (count - j)) - 1u);
                _mm512_mask_storeu_ps(dst + j, m, _mm512_maskz_loadu_ps(m, src + j));
            }
#else
            memcpy(dst, src, (size_t)count * sizeof(float));
#endif
        } else {
            for (; j < count; ++j) dst[j] = src[j * xstride];
        }
    }
}

/* The grid columns of W sub-row uw that hold real input positions: one run [*j0, *j1). */
static void w_run(const conv_plan* p, uint64_t uw, uint64_t* j0, uint64_t* j1) {
    const conv_dim* W = &p->dim[2];
    const int64_t start = W->sub_start[uw];
    const uint64_t stepw = W->step;
    *j0 = start >= 0 ? 0 : ((uint64_t)(-start) + stepw - 1) / stepw;
    *j1 = start >= (int64_t)W->in ? 0 : (uint64_t)((int64_t)W->in - 1 - start) / stepw + 1;
    if (*j1 > W->len) *j1 = W->len;
    if (*j0 > *j1) *j0 = *j1;
}

/* One grid row (W->len floats) of W sub-row uw at input positions pd, ph of channel c, image n: the run
 * [j0, j1) from w_run read from the input, zeros elsewhere (all zeros when pd or ph is padding). */
static void pack_grid_row(const conv_plan* p, float* dst, uint64_t n, uint64_t c, uint64_t uw, int64_t pd, int64_t ph,
                          uint64_t j0, uint64_t j1) {
    const conv_dim* W = &p->dim[2];
    uint64_t j;
    if (pd < 0 || ph < 0 || j0 == j1) {
        memset(dst, 0, (size_t)W->len * sizeof(float));
        return;
    }
    for (j = 0; j < j0; ++j) dst[j] = 0.0f;
    copy_in(p, dst + j0,
            n * p->xs_n + c * p->xs_c + (uint64_t)pd * p->xs[0] + (uint64_t)ph * p->xs[1] +
                (uint64_t)(W->sub_start[uw] + (int64_t)(j0 * W->step)) * p->xs[2],
            W->step * p->xs[2], j1 - j0);
    for (j = j1; j < W->len; ++j) dst[j] = 0.0f;
}

/* The Lh rows (sub, jd, jh, c_local) of channel c of image n, into the image's xp xn. The input is read
 * along its rows (jh inner). */
static void pack_x_plane(const conv_plan* p, float* xn, uint64_t n, uint64_t sub, uint64_t jd, uint64_t c,
                         uint64_t c_local) {
    const conv_dim* D = &p->dim[0];
    const conv_dim* H = &p->dim[1];
    const conv_dim* W = &p->dim[2];
    const uint64_t uw = sub % W->nsub, uh = (sub / W->nsub) % H->nsub, ud = sub / (W->nsub * H->nsub);
    const int64_t pd = sub_pos(D, ud, jd);
    uint64_t jh, j0, j1;
    float* dst = xn + sub * p->sub_floats + jd * p->xd + c_local * p->xc;
    w_run(p, uw, &j0, &j1);
    for (jh = 0; jh < H->len; ++jh, dst += p->xh) pack_grid_row(p, dst, n, c, uw, pd, sub_pos(H, uh, jh), j0, j1);
}

/* One item of the global packing pass: (n, sub, jd, c). */
static void pack_x_item(const conv_plan* p, uint64_t item) {
    uint64_t c = item % p->Cin, t = item / p->Cin;
    uint64_t jd = t % p->dim[0].len, sub, n;
    t /= p->dim[0].len;
    sub = t % p->nsub_total;
    n = t / p->nsub_total;
    pack_x_plane(p, p->xp + n * p->n_floats, n, sub, jd, c, c);
}

/* Width of M block mb. */
static inline unsigned block_width(const conv_plan* p, uint64_t mb) {
    return mb + 1 < p->mblocks ? CONV_MR : p->mr_tail;
}

/* Taps of a phase along one dim. */
static inline uint64_t phase_taps(const conv_dim* dm, uint64_t r) {
    return dm->tap_first[r + 1] - dm->tap_first[r];
}

/* The filter index (Mode's flip applied) of tap i of phase r along dm. */
static inline uint64_t phase_tap_k(const conv_plan* p, const conv_dim* dm, uint64_t r, uint64_t i) {
    const uint64_t k = dm->tap_k[dm->tap_first[r] + i];
    return p->flip ? dm->k - 1 - k : k;
}

#if defined(CONV_AVX512)
/* pack_a_item for float32 filters: each panel entry (kk, m = 0..width-1) is one 8-lane gather straight from the
 * filter (lanes m*mstride apart: the output channels of one input channel and tap), no staging buffer. Returns 0
 * (nothing written) when the lane offsets do not fit int32 or the filter is FLOAT16. */
static int pack_a_direct(const conv_plan* p, uint64_t g, uint64_t mb, uint64_t ic0, uint64_t ic1) {
    const conv_dim* D = &p->dim[0];
    const conv_dim* H = &p->dim[1];
    const conv_dim* W = &p->dim[2];
    const unsigned width = block_width(p, mb);
    const uint64_t mstride = p->backward ? p->ws_1 : p->ws_0, istride = p->backward ? p->ws_0 : p->ws_1;
    const uint64_t oc0 = mb * CONV_MR;
    const float* wbase;
    __m256i idx;
    __mmask8 live, store;
    uint64_t ph, ic;
    unsigned m;
    if (p->half || mstride > ((uint64_t)1 << 28)) return 0;
    idx = _mm256_mullo_epi32(_mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0), _mm256_set1_epi32((int)mstride));
    live = 0;
    for (m = 0; m < width; ++m) {
        if (oc0 + m < p->Cout_g) live |= (__mmask8)(1u << m);
    }
    store = (__mmask8)((1u << width) - 1u);
    wbase = (const float*)p->w + (p->backward ? g * p->Cin_g * p->ws_0 + oc0 * p->ws_1
                                              : (g * p->Cout_g + oc0) * p->ws_0);
    for (ph = 0; ph < p->nphase; ++ph) {
        const conv_phase* P = &p->phases[ph];
        const uint64_t nd = phase_taps(D, P->r[0]), nh = phase_taps(H, P->r[1]), nw = phase_taps(W, P->r[2]);
        const uint64_t ntaps = nd * nh * nw;
        float* panel = p->a + g * p->a_group + P->a_offset + mb * CONV_MR * P->K;
        uint64_t a, b, c, tap = 0;
        for (a = 0; a < nd; ++a) {
            const uint64_t kd = phase_tap_k(p, D, P->r[0], a);
            for (b = 0; b < nh; ++b) {
                const uint64_t kh = phase_tap_k(p, H, P->r[1], b);
                for (c = 0; c < nw; ++c, ++tap) {
                    const uint64_t kw = phase_tap_k(p, W, P->r[2], c);
                    const float* src = wbase + kd * p->ws[0] + kh * p->ws[1] + kw * p->ws[2];
                    for (ic = ic0; ic < ic1; ++ic) {
                        const __m256 v = _mm256_mmask_i32gather_ps(_mm256_setzero_ps(), live, idx, src + ic * istride, 4);
                        float* dst = panel + (p->ic_major ? ic * ntaps + tap : tap * p->Cin_g + ic) * width;
                        if (width == 8) {
                            _mm256_storeu_ps(dst, v);
                        } else {
                            _mm256_mask_storeu_ps(dst, store, v);
                        }
                    }
                }
            }
        }
    }
    return 1;
}
#endif

/* One A item: group g, M block mb, input channels [ic0, ic0 + a_icb), every phase. The panel of
 * (phase, mb) is K x width floats, kk-major with kk = tap*Cin_g + ic (tap = index in the phase's
 * (kd, kh, kw) list). The filter block (a_icb x width x Kvol) is first read into a float buffer in filter
 * order, then written out tap by tap in contiguous runs. */
#define CONV_PACK_TMP 16384 /* floats */
static void pack_a_item(const conv_plan* p, uint64_t item) {
    const conv_dim* D = &p->dim[0];
    const conv_dim* H = &p->dim[1];
    const conv_dim* W = &p->dim[2];
    const uint64_t icb = p->a_icb, nblk = (p->Cin_g + icb - 1) / icb;
    const uint64_t kvol = D->k * H->k * W->k;
    /* M blocks fastest: consecutive items read consecutive parts of the same filter rows */
    uint64_t mb = item % p->mblocks, t = item / p->mblocks;
    uint64_t ib = t % nblk, g = t / nblk;
    uint64_t ic0 = ib * icb, ic1 = ic0 + icb < p->Cin_g ? ic0 + icb : p->Cin_g, nic = ic1 - ic0;
    unsigned width = block_width(p, mb), m;
    uint64_t ph, ic;
    float tmp[CONV_PACK_TMP]; /* [ic - ic0][m][kd][kh][kw], filter orientation (no flip) */

#if defined(CONV_AVX512)
    if (pack_a_direct(p, g, mb, ic0, ic1)) return;
#endif
    for (ic = 0; ic < nic; ++ic) {
        for (m = 0; m < width; ++m) {
            uint64_t oc = mb * CONV_MR + m, kd, kh, kw;
            float* dst = tmp + (ic * width + m) * kvol;
            uint64_t wrow;
            if (oc >= p->Cout_g) {
                for (kd = 0; kd < kvol; ++kd) dst[kd] = 0.0f;
                continue;
            }
            wrow = p->backward ? (g * p->Cin_g + ic0 + ic) * p->ws_0 + oc * p->ws_1
                               : (g * p->Cout_g + oc) * p->ws_0 + (ic0 + ic) * p->ws_1;
            if (p->w_spatial_packed) {
                /* the Kvol elements of this filter row are contiguous */
                if (p->half) {
                    dmlpy_h2f_row(dst, (const uint16_t*)p->w + wrow, (size_t)kvol);
                } else {
                    const float* src = (const float*)p->w + wrow;
                    uint64_t j = 0;
#if defined(CONV_AVX512)
                    for (; j + 16 <= kvol; j += 16) _mm512_storeu_ps(dst + j, _mm512_loadu_ps(src + j));
                    if (j < kvol) {
                        const __mmask16 mk = (__mmask16)((1u << (kvol - j)) - 1u);
                        _mm512_mask_storeu_ps(dst + j, mk, _mm512_maskz_loadu_ps(mk, src + j));
                    }
#else
                    for (; j < kvol; ++j) dst[j] = src[j];
#endif
                }
                continue;
            }
            for (kd = 0; kd < D->k; ++kd) {
                for (kh = 0; kh < H->k; ++kh) {
                    uint64_t wi = wrow + kd * p->ws[0] + kh * p->ws[1];
                    if (p->half) {
                        const uint16_t* src = (const uint16_t*)p->w + wi;
                        if (p->ws[2] == 1) {
                            dmlpy_h2f_row(dst, src, (size_t)W->k);
                        } else {
                            for (kw = 0; kw < W->k; ++kw) dst[kw] = dmlpy_h2f(src[kw * p->ws[2]]);
                        }
                    } else {
                        const float* src = (const float*)p->w + wi;
                        for (kw = 0; kw < W->k; ++kw) dst[kw] = src[kw * p->ws[2]];
                    }
                    dst += W->k;
                }
            }
        }
    }
    for (ph = 0; ph < p->nphase; ++ph) {
        const conv_phase* P = &p->phases[ph];
        uint64_t nd = phase_taps(D, P->r[0]), nh = phase_taps(H, P->r[1]), nw = phase_taps(W, P->r[2]);
        uint64_t a, b, c, tap = 0;
        float* panel = p->a + g * p->a_group + P->a_offset + mb * CONV_MR * P->K;
        for (a = 0; a < nd; ++a) {
            const uint64_t kd = phase_tap_k(p, D, P->r[0], a);
            for (b = 0; b < nh; ++b) {
                const uint64_t kh = phase_tap_k(p, H, P->r[1], b);
                for (c = 0; c < nw; ++c, ++tap) {
                    const uint64_t kw = phase_tap_k(p, W, P->r[2], c);
                    const float* src;
                    float* dst = panel + (tap * p->Cin_g + ic0) * width;
                    uint64_t i, n = nic * width;
                    src = tmp + (kd * H->k + kh) * W->k + kw;
                    if (p->ic_major) {
                        /* kk = ic*ntaps + tap: one run of width floats per input channel */
                        const uint64_t ntaps = nd * nh * nw;
                        uint64_t icl;
                        for (icl = 0; icl < nic; ++icl) {
                            float* d = panel + ((ic0 + icl) * ntaps + tap) * width;
                            for (m = 0; m < width; ++m) d[m] = src[(icl * width + m) * kvol];
                        }
                        continue;
                    }
                    i = 0;
#if defined(CONV_AVX512)
                    {
                        /* tmp holds < 2^14 floats: 32-bit gather indices */
                        const __m512i idx = _mm512_mullo_epi32(
                            _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                            _mm512_set1_epi32((int)kvol));
                        for (; i + 16 <= n; i += 16) {
                            _mm512_storeu_ps(dst + i, _mm512_i32gather_ps(idx, src + i * kvol, 4));
                        }
                    }
#endif
                    for (; i < n; ++i) dst[i] = src[i * kvol];
                }
            }
        }
    }
}

/* The packing pass: xp items first, then A items. */
static void pack_run(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    const conv_plan* p = (const conv_plan*)vp;
    uint64_t i;
    (void)worker;
    for (i = begin; i < end; ++i) {
        if (i < p->xp_items) {
            pack_x_item(p, i);
        } else {
            pack_a_item(p, i - p->xp_items);
        }
    }
}

/* ---- fast path: micro-kernels: conv_kernels.h (kernel_8/4/2/1, run_kernel), shared with gemm.c ------ */

/* ---- fast path: epilogue ------------------------------------------------------------------------- */

/* One 16-lane vector of a tile. Rows layout: grid row (td, th), columns tw0 .. tw0+15. Planes layout:
 * flattened grid positions p0 .. p0+15 (td, th, tw0 = p0's). */
typedef struct conv_slot {
    uint64_t td, th, tw0, p0;
    int valid;
} conv_slot;

#if defined(CONV_AVX512)
/* store_segment's common case for the activation `fast` (a constant where called): one (masked) vector per row */
CONV_INLINE void gemm_rows_out(const conv_plan* p, int fast, unsigned rows, const float* crow, const float* bias, const uint64_t* ybase,
                               uint64_t out, __mmask16 m0) {
    unsigned m;
    for (m = 0; m < rows; ++m) {
        store_vec(0, p->nt, p->y, ybase[m] + out, act_fast_vec(fast, &p->act, _mm512_load_ps(crow + m * CONV_NR), _mm512_set1_ps(bias[m])), m0);
    }
}
#endif

/* Stores one segment of M block rows: lanes [lane0, lane0 + cols) of vector crow (row m at
 * crow + m*NR; W phase rw at + rw*phase_stride) are grid columns [tw, tw + cols) of one output row; row m
 * goes to ybase[m] + the row offset yrow. */
static void store_segment(const conv_plan* p, const uint64_t* ybase, const float* bias, unsigned rows, uint64_t yrow,
                          const float* crow, uint64_t phase_stride, unsigned lane0, uint64_t tw, uint64_t cols) {
    const conv_dim* W = &p->dim[2];
    const uint64_t Sw = W->ostep;
    uint64_t ow_lo = Sw * tw, ow_hi = Sw * (tw + cols), count, j;
    unsigned m;
    if (ow_hi > W->outc) ow_hi = W->outc;
    if (ow_lo >= ow_hi) return;
    count = ow_hi - ow_lo;
#if defined(CONV_AVX512)
    if (p->ys[2] == 1 && (Sw == 1 || Sw == 2)) {
        const int plain = p->act.kind == DMLPY_ACT_NONE || p->act.kind == DMLPY_ACT_IDENTITY, fast = act_fast(&p->act);
        const __m512i shift = _mm512_add_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                               _mm512_set1_epi32((int)lane0));
        const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
        const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
        const __mmask16 m0 = mask_n(count), m1 = count > 16 ? mask_n(count - 16) : 0;
        const uint64_t out = yrow + ow_lo;
        if (Sw == 2 && plain && !p->half && !p->nt) {
            /* the two W phases interleaved by one two-source permute per 16 outputs, its indices shifted by lane0
             * (lanes past the segment are masked off) */
            const __m512i j2 = _mm512_srli_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), 1);
            const __m512i odd = _mm512_set_epi32(16, 0, 16, 0, 16, 0, 16, 0, 16, 0, 16, 0, 16, 0, 16, 0);
            const __m512i l15 = _mm512_set1_epi32(15);
            const __m512i base = _mm512_add_epi32(j2, _mm512_set1_epi32((int)lane0));
            const __m512i ilo = _mm512_or_si512(_mm512_and_si512(base, l15), odd);
            const __m512i ihi = _mm512_or_si512(_mm512_and_si512(_mm512_add_epi32(base, _mm512_set1_epi32(8)), l15), odd);
            float* y = (float*)p->y + out;
            for (m = 0; m < rows; ++m) {
                const __m512 bv = _mm512_set1_ps(bias[m]);
                const __m512 v0 = _mm512_load_ps(crow + m * CONV_NR), v1 = _mm512_load_ps(crow + m * CONV_NR + phase_stride);
                _mm512_mask_storeu_ps(y + ybase[m], m0, _mm512_add_ps(_mm512_permutex2var_ps(v0, ilo, v1), bv));
                if (m1) _mm512_mask_storeu_ps(y + ybase[m] + 16, m1, _mm512_add_ps(_mm512_permutex2var_ps(v0, ihi, v1), bv));
            }
            return;
        }
        if (Sw == 1 && fast && !p->half && lane0 == 0) {
            /* the common case: one (masked) vector store per row */
            act_fast_call(fast, gemm_rows_out(p, fast_, rows, crow, bias, ybase, out, m0));
            return;
        }
        for (m = 0; m < rows; ++m) {
            const __m512 bv = _mm512_set1_ps(bias[m]);
            __m512 v0 = _mm512_load_ps(crow + m * CONV_NR);
            if (lane0 != 0) v0 = _mm512_permutexvar_ps(shift, v0); /* lanes lane0.. down to 0.. */
            if (Sw == 1) {
                store_vec(p->half, p->nt, p->y, ybase[m] + out, plain ? _mm512_add_ps(v0, bv) : finish_vec(&p->act, v0, bv),
                          m0);
            } else {
                __m512 v1 = _mm512_load_ps(crow + m * CONV_NR + phase_stride), a, b;
                if (lane0 != 0) v1 = _mm512_permutexvar_ps(shift, v1);
                a = _mm512_permutex2var_ps(v0, lo, v1);
                store_vec(p->half, p->nt, p->y, ybase[m] + out, plain ? _mm512_add_ps(a, bv) : finish_vec(&p->act, a, bv),
                          m0);
                if (m1) {
                    b = _mm512_permutex2var_ps(v0, hi, v1);
                    store_vec(p->half, p->nt, p->y, ybase[m] + out + 16,
                              plain ? _mm512_add_ps(b, bv) : finish_vec(&p->act, b, bv), m1);
                }
            }
        }
        return;
    }
#endif
    for (m = 0; m < rows; ++m) {
        for (j = 0; j < count; ++j) {
            uint64_t ow = ow_lo + j, rw = ow % Sw, col = lane0 + (ow / Sw - tw);
            float val = crow[m * CONV_NR + rw * phase_stride + col] + bias[m];
            store_elem(p->half, p->y, ybase[m] + yrow + ow * p->ys[2], dmlpy_act_scalar(&p->act, val));
        }
    }
}

/* Asks for the output lines a tile will write in output channels [oc0, oc1) of the group (for writing), so their
 * misses overlap the tile's arithmetic instead of stalling the epilogue. Unit output W stride, cached stores
 * only. Called per M block before its first kernel: the lines of every channel at once filled the line fill
 * buffers and stalled (2% of a 128 -> 64 channel ConvTranspose k3 s2 at 28x28). */
static void prefetch_outputs(const conv_plan* p, uint64_t n, uint64_t g, uint64_t rd, uint64_t rh,
                             const conv_slot* slots, uint64_t oc0, uint64_t oc1) {
#if defined(__GNUC__) || defined(__clang__)
    const conv_dim* D = &p->dim[0];
    const conv_dim* H = &p->dim[1];
    const conv_dim* W = &p->dim[2];
    const uint64_t Sw = W->ostep, esize = p->half ? 2 : 4;
    unsigned v;
    for (v = 0; v < CONV_NV; ++v) {
        const conv_slot* sl = &slots[v];
        uint64_t td = sl->td, th = sl->th, tw = sl->tw0, oc;
        unsigned lane = 0;
        if (!sl->valid) continue;
        while (lane < 16) {
            uint64_t cols = p->planes ? W->len - tw : 16;
            if (cols > 16u - lane) cols = 16u - lane;
            if (td < D->T[rd] && th < H->T[rh] && Sw * tw < W->outc) {
                const uint64_t od = rd + D->ostep * td, oh = rh + H->ostep * th;
                uint64_t last = Sw * (tw + cols) - 1;
                const char* first;
                uint64_t span;
                if (last >= W->outc) last = W->outc - 1;
                first = p->y + (n * p->ys_n + (g * p->Cout_g + oc0) * p->ys_c + od * p->ys[0] + oh * p->ys[1] + Sw * tw) *
                                   esize;
                span = (last - Sw * tw) * esize;
                for (oc = oc0; oc < oc1; ++oc, first += p->ys_c * esize) {
                    __builtin_prefetch(first, 1, 3);
                    __builtin_prefetch(first + span, 1, 3);
                }
            }
            lane += (unsigned)cols;
            tw = 0;
            if (++th == H->len) {
                th = 0;
                ++td;
            }
        }
    }
#else
    (void)p;
    (void)n;
    (void)g;
    (void)rd;
    (void)rh;
    (void)slots;
    (void)oc0;
    (void)oc1;
#endif
}

/* Stores M block mb of a finished tile. C: [W phase][M block][MR][NR]. */
static void epilogue(const conv_plan* p, uint64_t n, uint64_t g, uint64_t rd, uint64_t rh, uint64_t mb,
                     const conv_slot* slots, const float* C) {
    const conv_dim* D = &p->dim[0];
    const conv_dim* H = &p->dim[1];
    const conv_dim* W = &p->dim[2];
    const uint64_t phase_stride = p->mblocks * (uint64_t)CONV_MR * CONV_NR;
    const float* Cb = C + mb * (uint64_t)CONV_MR * CONV_NR;
    unsigned width = block_width(p, mb), m, rows = 0, v;
    float bias[CONV_MR];
    uint64_t ybase[CONV_MR];

    for (m = 0; m < width; ++m) {
        uint64_t oc = mb * CONV_MR + m;
        if (oc >= p->Cout_g) break;
        ybase[m] = n * p->ys_n + (g * p->Cout_g + oc) * p->ys_c;
        bias[m] = bias_of(p, g * p->Cout_g + oc);
        ++rows;
    }
    for (v = 0; v < CONV_NV; ++v) {
        const conv_slot* sl = &slots[v];
        uint64_t td, th, tw;
        unsigned lane = 0;
        if (!sl->valid) continue;
        td = sl->td;
        th = sl->th;
        tw = sl->tw0;
        /* Rows layout: one segment. Planes layout: the pieces of grid rows the 16 lanes cover. */
        while (lane < 16) {
            uint64_t cols = p->planes ? W->len - tw : 16;
            if (cols > 16u - lane) cols = 16u - lane;
            if (td < D->T[rd] && th < H->T[rh]) {
                const uint64_t od = rd + D->ostep * td, oh = rh + H->ostep * th;
                store_segment(p, ybase, bias, rows, od * p->ys[0] + oh * p->ys[1], Cb + v * 16, phase_stride, lane, tw,
                              cols);
            }
            lane += (unsigned)cols;
            tw = 0;
            if (++th == H->len) {
                th = 0;
                ++td;
            }
        }
    }
}

/* ---- fast path: compute items ---------------------------------------------------------------------- */

/* 16-wide slots of the (rd, rh) grid. */
static uint64_t grid_slots(const conv_plan* p, uint64_t rd, uint64_t rh) {
    const conv_dim* D = &p->dim[0];
    const conv_dim* H = &p->dim[1];
    if (D->T[rd] == 0 || H->T[rh] == 0 || p->spr == 0) return 0;
    if (p->planes) {
        uint64_t tw_max = 0, r;
        for (r = 0; r < p->dim[2].nphase; ++r) {
            if (p->dim[2].T[r] > tw_max) tw_max = p->dim[2].T[r];
        }
        return ((D->T[rd] - 1) * p->xd + (H->T[rh] - 1) * p->xh + tw_max + 15) / 16;
    }
    return D->T[rd] * H->T[rh] * p->spr;
}

/* Output padding regions of one (n, oc): act(bias). */
static void fill_item(const conv_plan* p, uint64_t item) {
    const conv_dim* D = &p->dim[0];
    const conv_dim* H = &p->dim[1];
    const conv_dim* W = &p->dim[2];
    uint64_t oc = item % p->Cout, n = item / p->Cout;
    float v = dmlpy_act_scalar(&p->act, bias_of(p, oc));
    uint64_t od, oh, ow;
    for (od = 0; od < D->out; ++od) {
        for (oh = 0; oh < H->out; ++oh) {
            uint64_t base = n * p->ys_n + oc * p->ys_c + od * p->ys[0] + oh * p->ys[1];
            uint64_t from = (od >= D->outc || oh >= H->outc) ? 0 : W->outc;
            for (ow = from; ow < W->out; ++ow) store_elem(p->half, p->y, base + ow * p->ys[2], v);
        }
    }
}

/* Tiles [tile0, tile1) of phase row (rd, rh) of image n, group g; xg: the group's first channel in xp. */
static void compute_tiles(const conv_plan* p, const float* xg, uint64_t n, uint64_t g, uint64_t rd, uint64_t rh,
                          uint64_t tile0, uint64_t tile1, float* C) {
    const conv_dim* H = &p->dim[1];
    const conv_dim* W = &p->dim[2];
    const uint64_t phase_stride = p->mblocks * (uint64_t)CONV_MR * CONV_NR;
    const uint64_t nslots = grid_slots(p, rd, rh);
    const conv_phase* P0 = &p->phases[(rd * H->nphase + rh) * W->nphase];
    const float* ag = p->a + g * p->a_group;
    /* output prefetch: unit W stride, cached stores, enough arithmetic per tile to hide the misses */
    const int prefetch = p->ys[2] == 1 && !p->nt && p->Cout_g <= 512;
    uint64_t kmax = 0, rw, tile;
    for (rw = 0; rw < W->nphase; ++rw) {
        if (W->T[rw] != 0 && P0[rw].K > kmax) kmax = P0[rw].K;
    }
    for (tile = tile0; tile < tile1; ++tile) {
        conv_slot slots[CONV_NV];
        const float* xv[CONV_NV];
        uint64_t v, k0, mb;
        for (v = 0; v < CONV_NV; ++v) {
            uint64_t s = tile * CONV_NV + v;
            conv_slot* sl = &slots[v];
            sl->valid = s < nslots;
            if (!sl->valid) s = tile * CONV_NV; /* a valid slot: its loads stay in range */
            if (p->planes) {
                sl->p0 = s * 16;
                sl->td = sl->p0 / p->xd;
                sl->th = (sl->p0 % p->xd) / p->xh;
                sl->tw0 = sl->p0 % p->xh;
                xv[v] = xg + sl->p0;
            } else {
                uint64_t row = s / p->spr;
                sl->td = row / H->T[rh];
                sl->th = row % H->T[rh];
                sl->tw0 = (s % p->spr) * 16;
                sl->p0 = 0;
                xv[v] = xg + sl->td * p->xd + sl->th * p->xh + sl->tw0;
            }
        }
        /* K blocks outermost: one block of B serves every M block and W phase from L1. */
        for (k0 = 0; k0 < kmax || k0 == 0; k0 += CONV_KC) {
            for (mb = 0; mb < p->mblocks; ++mb) {
                unsigned width = block_width(p, mb);
                if (prefetch && k0 == 0) {
                    prefetch_outputs(p, n, g, rd, rh, slots, mb * CONV_MR,
                                     mb * CONV_MR + width < p->Cout_g ? mb * CONV_MR + width : p->Cout_g);
                }
                for (rw = 0; rw < W->nphase; ++rw) {
                    const conv_phase* P = &P0[rw];
                    uint64_t kn;
                    if (W->T[rw] == 0) continue;
                    if (k0 >= P->K && !(k0 == 0 && P->K == 0)) continue;
                    kn = P->K - k0 < CONV_KC ? P->K - k0 : CONV_KC;
                    run_kernel(width, kn, ag + P->a_offset + mb * CONV_MR * P->K + k0 * width, xv,
                               p->off + P->off_index + k0, C + rw * phase_stride + mb * (uint64_t)CONV_MR * CONV_NR,
                               k0 != 0);
                }
            }
            if (kmax == 0) break;
        }
        for (mb = 0; mb < p->mblocks; ++mb) epilogue(p, n, g, rd, rh, mb, slots, C);
    }
}

/* Work items of the shared-xp mode: (n, g, rd, rh, run of tiles); then the output-padding fills. */
static void compute_run(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    const conv_plan* p = (const conv_plan*)vp;
    const conv_dim* H = &p->dim[1];
    float* C = p->tiles + (uint64_t)worker * p->tile_floats;
    uint64_t item;
    for (item = begin; item < end; ++item) {
        uint64_t chunk, rh, rd, g, n, t, ntiles, tile0, tile1;
        if (item >= p->compute_items) {
            fill_item(p, item - p->compute_items);
            continue;
        }
        chunk = item % p->nchunks;
        t = item / p->nchunks;
        rh = t % H->nphase;
        t /= H->nphase;
        rd = t % p->dim[0].nphase;
        t /= p->dim[0].nphase;
        g = t % p->G;
        n = t / p->G;
        ntiles = (grid_slots(p, rd, rh) + CONV_NV - 1) / CONV_NV;
        tile0 = chunk * p->tiles_per_chunk;
        tile1 = tile0 + p->tiles_per_chunk;
        if (tile1 > ntiles) tile1 = ntiles;
        if (tile0 >= tile1) continue;
        compute_tiles(p, p->xp + n * p->n_floats + g * p->Cin_g * p->xc, n, g, rd, rh, tile0, tile1, C);
    }
#if defined(CONV_AVX512)
    if (p->nt) _mm_sfence();
#endif
}

/* Work items of the per-image mode: (n, g) packs its own input into the worker's xp (cache-resident) and
 * computes every phase and tile of it; then the output-padding fills. */
static void compute_run_fused(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    const conv_plan* p = (const conv_plan*)vp;
    const conv_dim* D = &p->dim[0];
    const conv_dim* H = &p->dim[1];
    float* C = p->tiles + (uint64_t)worker * p->tile_floats;
    float* xn = p->xp + (uint64_t)worker * p->xp_worker_floats;
    uint64_t item;
    for (item = begin; item < end; ++item) {
        uint64_t g, n, sub, jd, c, rd, rh;
        if (item >= p->compute_items) {
            fill_item(p, item - p->compute_items);
            continue;
        }
        g = item % p->G;
        n = item / p->G;
        for (sub = 0; sub < p->nsub_total; ++sub) {
            for (c = 0; c < p->Cin_g; ++c) {
                for (jd = 0; jd < D->len; ++jd) pack_x_plane(p, xn, n, sub, jd, g * p->Cin_g + c, c);
            }
        }
        for (rd = 0; rd < D->nphase; ++rd) {
            for (rh = 0; rh < H->nphase; ++rh) {
                uint64_t ntiles = (grid_slots(p, rd, rh) + CONV_NV - 1) / CONV_NV;
                compute_tiles(p, xn, n, g, rd, rh, 0, ntiles, C);
            }
        }
    }
#if defined(CONV_AVX512)
    if (p->nt) _mm_sfence();
#endif
}

/* ---- few-output-pixels path: conv_small.h (run_small) --------------------------------------------- */

#include "conv_small.h"

/* ---- depthwise path ------------------------------------------------------------------------------ */

/* Cin_g == 1 (one input channel per group, e.g. depthwise): per item (n, g, run of grid rows th), the
 * input rows the item needs are packed into a per-worker buffer [sub][jd][jh - jh0][jw] (cache-resident),
 * then every output row of the run is computed directly, vectorised along W, both W phases of a
 * stride-2 BACKWARD row interleaved in registers, and stored. No global packing pass, no GEMM. */

#if defined(CONV_AVX512)
/* The input lanes of grid columns [j0, j1) that fall in chunk k (grid columns 16k .. 16k + 15): bit j - 16k of
 * each, or (two: the grid takes every second input column) bit 2 * (j - 16k) of a pair of 16-lane loads. */
static inline uint32_t dw_chunk_lanes(uint64_t j0, uint64_t j1, uint64_t k, int two) {
    const uint64_t lo = j0 > 16 * k ? j0 - 16 * k : 0, hi = j1 > 16 * k ? (j1 - 16 * k < 16 ? j1 - 16 * k : 16) : 0;
    const unsigned scale = two ? 2u : 1u;
    if (hi <= lo) return 0;
    return (uint32_t)((((uint64_t)1 << (scale * hi)) - 1) & ~(((uint64_t)1 << (scale * lo)) - 1) & (two ? 0x55555555u : 0xFFFFu));
}
#endif

/* Packed rows [jh0, jh1) of channel c of image n into buf; j0s/j1s: the real-input run of each W sub-row. */
static void dw_pack(const conv_plan* p, float* buf, uint64_t n, uint64_t c, uint64_t jh0, uint64_t jh1,
                    const uint64_t* j0s, const uint64_t* j1s) {
    const conv_dim* D = &p->dim[0];
    const conv_dim* H = &p->dim[1];
    const conv_dim* W = &p->dim[2];
    const uint64_t rows = jh1 - jh0;
    uint64_t ud, uh, uw, jd, jh;
    float* dst = buf;
#if defined(CONV_AVX512)
    if (W->len <= 64 && (W->step * p->xs[2] == 1 || (W->step == 2 && p->xs[2] == 1 && !p->half))) {
        /* rows of up to 64 grid columns, contiguous or (float32) every second input column, as stride-2 layers'
         * phases are: per 16 grid columns one masked load (two, and the even lanes permuted together, for
         * stride 2) and one masked store; lanes outside the valid run are neither read nor faulting */
        const int two = W->step == 2;
        const uint64_t chunks = (W->len + 15) / 16, esz = p->half ? 2u : 4u;
        const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
        const uint64_t cbase = n * p->xs_n + c * p->xs_c;
        uint64_t k;
        for (ud = 0; ud < D->nsub; ++ud) {
            for (uh = 0; uh < H->nsub; ++uh) {
                for (uw = 0; uw < W->nsub; ++uw) {
                    uint32_t lanes[4]; /* per chunk: the input lanes of its valid grid columns */
                    /* element 0 of the grid row is input column sub_start (possibly before the row) */
                    const int64_t col0 = W->sub_start[uw];
                    for (k = 0; k < chunks; ++k) lanes[k] = dw_chunk_lanes(j0s[uw], j1s[uw], k, two);
                    for (jd = 0; jd < D->len; ++jd) {
                        const int64_t pd = sub_pos(D, ud, jd);
                        for (jh = jh0; jh < jh1; ++jh, dst += W->len) {
                            const int64_t ph = sub_pos(H, uh, jh);
                            const int real = pd >= 0 && ph >= 0;
                            const uintptr_t at = (uintptr_t)p->x +
                                                 (uintptr_t)((cbase + (uint64_t)(real ? pd : 0) * p->xs[0] + (uint64_t)(real ? ph : 0) * p->xs[1]) * esz) +
                                                 (uintptr_t)(col0 * (int64_t)esz);
                            for (k = 0; k < chunks; ++k) {
                                __m512 v = _mm512_setzero_ps();
                                if (real && lanes[k]) {
                                    if (two) {
                                        const float* q = (const float*)(at + 32 * k * esz);
                                        v = _mm512_permutex2var_ps(_mm512_maskz_loadu_ps((__mmask16)lanes[k], q), even,
                                                                   _mm512_maskz_loadu_ps((__mmask16)(lanes[k] >> 16), q + 16));
                                    } else if (p->half) {
                                        v = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16((__mmask16)lanes[k], (const void*)(at + 16 * k * esz)));
                                    } else {
                                        v = _mm512_maskz_loadu_ps((__mmask16)lanes[k], (const void*)(at + 16 * k * esz));
                                    }
                                }
                                _mm512_mask_storeu_ps(dst + 16 * k, mask_n(W->len - 16 * k < 16 ? W->len - 16 * k : 16), v);
                            }
                        }
                    }
                }
            }
        }
        (void)rows;
        return;
    }
#endif
    for (ud = 0; ud < D->nsub; ++ud) {
        for (uh = 0; uh < H->nsub; ++uh) {
            for (uw = 0; uw < W->nsub; ++uw) {
                /* sub = (ud * H->nsub + uh) * W->nsub + uw: rows in the order [sub][jd][jh - jh0] */
                for (jd = 0; jd < D->len; ++jd) {
                    const int64_t pd = sub_pos(D, ud, jd);
                    for (jh = jh0; jh < jh1; ++jh, dst += W->len) {
                        pack_grid_row(p, dst, n, c, uw, pd, sub_pos(H, uh, jh), j0s[uw], j1s[uw]);
                    }
                }
            }
        }
    }
    (void)rows;
}

/* Tap tables of the depthwise path (they depend only on the geometry and the rows per item, so a run of items
 * builds them once): for phase ph, taps first[ph] .. first[ph+1]-1 with element offset to[i] from the grid
 * row base buf + (td*rows + th - jh0)*Lw and filter element offset tk[i] (spatial part; Mode's flip applied). */
static void dw_build_tables(const conv_plan* p, uint64_t rows, int64_t* to, uint64_t* tk, uint32_t* first) {
    const conv_dim* D = &p->dim[0];
    const conv_dim* H = &p->dim[1];
    const conv_dim* W = &p->dim[2];
    uint64_t rd, rh, rw, a, b, c, n = 0;
    for (rd = 0; rd < D->nphase; ++rd) {
        for (rh = 0; rh < H->nphase; ++rh) {
            for (rw = 0; rw < W->nphase; ++rw) {
                first[(rd * H->nphase + rh) * W->nphase + rw] = (uint32_t)n;
                for (a = D->tap_first[rd]; a < D->tap_first[rd + 1]; ++a) {
                    uint64_t kd = p->flip ? D->k - 1 - D->tap_k[a] : D->tap_k[a];
                    for (b = H->tap_first[rh]; b < H->tap_first[rh + 1]; ++b) {
                        uint64_t kh = p->flip ? H->k - 1 - H->tap_k[b] : H->tap_k[b];
                        for (c = W->tap_first[rw]; c < W->tap_first[rw + 1]; ++c, ++n) {
                            uint64_t kw = p->flip ? W->k - 1 - W->tap_k[c] : W->tap_k[c];
                            uint64_t sub = (D->tap_sub[a] * H->nsub + H->tap_sub[b]) * W->nsub + W->tap_sub[c];
                            to[n] = (int64_t)((((sub * D->len + D->tap_c[a]) * rows) + H->tap_c[b]) * W->len + W->tap_c[c]);
                            tk[n] = kd * p->ws[0] + kh * p->ws[1] + kw * p->ws[2];
                        }
                    }
                }
            }
        }
    }
    first[p->nphase] = (uint32_t)n;
}

/* The tap tables and the current channel's tap weights (tw[i]: the weight of tap i). */
typedef struct dw_tables {
    const int64_t* to;
    const float* tw;
    const uint32_t* first;
} dw_tables;

/* acc[j] = sum over the taps [t0, t1) of tw * base[to + j], j < count (rounded up to 16). */
CONV_INLINE void dw_accumulate(const dw_tables* t, uint32_t t0, uint32_t t1, const float* base, float* restrict acc,
                               uint64_t count) {
    uint64_t j;
    uint32_t i;
#if defined(CONV_AVX512)
    for (j = 0; j < count; j += 16) {
        __m512 v = _mm512_setzero_ps();
        for (i = t0; i < t1; ++i) v = _mm512_fmadd_ps(_mm512_set1_ps(t->tw[i]), _mm512_loadu_ps(base + t->to[i] + j), v);
        _mm512_store_ps(acc + j, v);
    }
#else
    for (j = 0; j < count; ++j) acc[j] = 0.0f;
    for (i = t0; i < t1; ++i) {
        const float* src = base + t->to[i];
        const float w = t->tw[i];
        for (j = 0; j < count; ++j) acc[j] += w * src[j];
    }
#endif
}

#if defined(CONV_AVX512)
/* bias, activation (plain: none), store of one finished vector of the depthwise path */
#define DW_OUT(v, at, left)                                                                                \
    store_vec(p->half, p->nt, p->y, (at), plain ? _mm512_add_ps((v), bv) : finish_vec(&p->act, (v), bv), \
              mask_n(left))

/* Sw == 1: grid column j is output column j; Sw == 2: the two W phases interleave. */
#define DW_EMIT(va, vb, jj)                                                                                \
    {                                                                                                      \
        const uint64_t left_ = outc - Sw * (jj);                                                           \
        if (Sw == 1) {                                                                                     \
            DW_OUT(va, ybase + (jj), left_);                                                               \
        } else {                                                                                           \
            DW_OUT(_mm512_permutex2var_ps(va, lo, vb), ybase + 2 * (jj), left_);                           \
            if (left_ > 16) DW_OUT(_mm512_permutex2var_ps(va, hi, vb), ybase + 2 * (jj) + 16, left_ - 16); \
        }                                                                                                  \
    }

/* One output row of the depthwise path, unit output W stride, W phases Sw = 1 or 2 (phase 1's taps in
 * to1/tw1/n1 when Sw == 2): 64 grid columns per step (8 independent FMA chains), then 32 (4), then 16 at a time.
 * Not inlined: inside dw_run the compiler kept a chain's sum on the stack (a store and reload per tap). */
CONV_NOINLINE void dw_row_fast(const conv_plan* p, uint64_t ybase, const float* base, const int64_t* to0,
                               const float* tw0, uint32_t n0, const int64_t* to1, const float* tw1, uint32_t n1,
                               uint64_t Sw, float bias, int plain) {
    const uint64_t outc = p->dim[2].outc, cols = (outc + Sw - 1) / Sw;
    const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
    const __m512 bv = _mm512_set1_ps(bias);
    /* float32, no activation: whole vectors go out unmasked (streamed when the row start is aligned) */
    const int full_ok = !p->half && plain;
    const int stream = p->nt && (((uintptr_t)((float*)p->y + ybase)) & 63) == 0;
    uint64_t j = 0;
    uint32_t i;
#define DW_FULL(v, at)                                                  \
    {                                                                   \
        if (stream) {                                                   \
            _mm512_stream_ps((at), _mm512_add_ps((v), bv));              \
        } else {                                                        \
            _mm512_storeu_ps((at), _mm512_add_ps((v), bv));              \
        }                                                               \
    }
    for (; j + 64 <= cols; j += 64) {
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
        for (i = 0; i < n0; ++i) {
            const __m512 w = _mm512_set1_ps(tw0[i]);
            const float* src = base + to0[i] + j;
            a0 = _mm512_fmadd_ps(w, _mm512_loadu_ps(src), a0);
            a1 = _mm512_fmadd_ps(w, _mm512_loadu_ps(src + 16), a1);
            a2 = _mm512_fmadd_ps(w, _mm512_loadu_ps(src + 32), a2);
            a3 = _mm512_fmadd_ps(w, _mm512_loadu_ps(src + 48), a3);
        }
        for (i = 0; i < n1; ++i) {
            const __m512 w = _mm512_set1_ps(tw1[i]);
            const float* src = base + to1[i] + j;
            b0 = _mm512_fmadd_ps(w, _mm512_loadu_ps(src), b0);
            b1 = _mm512_fmadd_ps(w, _mm512_loadu_ps(src + 16), b1);
            b2 = _mm512_fmadd_ps(w, _mm512_loadu_ps(src + 32), b2);
            b3 = _mm512_fmadd_ps(w, _mm512_loadu_ps(src + 48), b3);
        }
        if (full_ok && outc - Sw * j >= Sw * 64) {
            /* 64 whole grid columns: unmasked stores */
            float* y = (float*)p->y + ybase + Sw * j;
            if (Sw == 1) {
                DW_FULL(a0, y) DW_FULL(a1, y + 16) DW_FULL(a2, y + 32) DW_FULL(a3, y + 48)
            } else {
                DW_FULL(_mm512_permutex2var_ps(a0, lo, b0), y) DW_FULL(_mm512_permutex2var_ps(a0, hi, b0), y + 16)
                DW_FULL(_mm512_permutex2var_ps(a1, lo, b1), y + 32) DW_FULL(_mm512_permutex2var_ps(a1, hi, b1), y + 48)
                DW_FULL(_mm512_permutex2var_ps(a2, lo, b2), y + 64) DW_FULL(_mm512_permutex2var_ps(a2, hi, b2), y + 80)
                DW_FULL(_mm512_permutex2var_ps(a3, lo, b3), y + 96) DW_FULL(_mm512_permutex2var_ps(a3, hi, b3), y + 112)
            }
            continue;
        }
        DW_EMIT(a0, b0, j)
        DW_EMIT(a1, b1, j + 16)
        DW_EMIT(a2, b2, j + 32)
        DW_EMIT(a3, b3, j + 48)
    }
    if (j + 32 <= cols) { /* two independent chains (one chain of 9 taps waits on each multiply-add's latency) */
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, b0 = a0, b1 = a0;
        for (i = 0; i < n0; ++i) {
            const __m512 w = _mm512_set1_ps(tw0[i]);
            a0 = _mm512_fmadd_ps(w, _mm512_loadu_ps(base + to0[i] + j), a0);
            a1 = _mm512_fmadd_ps(w, _mm512_loadu_ps(base + to0[i] + j + 16), a1);
        }
        for (i = 0; i < n1; ++i) {
            const __m512 w = _mm512_set1_ps(tw1[i]);
            b0 = _mm512_fmadd_ps(w, _mm512_loadu_ps(base + to1[i] + j), b0);
            b1 = _mm512_fmadd_ps(w, _mm512_loadu_ps(base + to1[i] + j + 16), b1);
        }
        DW_EMIT(a0, b0, j)
        DW_EMIT(a1, b1, j + 16)
        j += 32;
    }
    for (; j < cols; j += 16) {
        __m512 a0 = _mm512_setzero_ps(), b0 = a0;
        for (i = 0; i < n0; ++i) a0 = _mm512_fmadd_ps(_mm512_set1_ps(tw0[i]), _mm512_loadu_ps(base + to0[i] + j), a0);
        for (i = 0; i < n1; ++i) b0 = _mm512_fmadd_ps(_mm512_set1_ps(tw1[i]), _mm512_loadu_ps(base + to1[i] + j), b0);
        DW_EMIT(a0, b0, j)
    }
#undef DW_FULL
}
/* Output rows of at most 16 columns, one W phase, unit output W stride: the item's grid rows th0 .. th0+nrows-1
 * (of one D position), each output the sum over the taps in the same order as dw_row_fast, in independent FMA
 * chains of 16 positions (one chain of 9 taps waits on each multiply-add's latency):
 *  - grid rows of at most 16 columns (Lw <= 16): the rows flattened, position q = (th - th0)*Lw + tw, in steps of
 *    R = 64 / Lw whole grid rows (up to 64 positions, four chains; the Lw - outc columns between rows are computed
 *    and dropped), every output row then permuted out of the registers and stored (no round trip through memory,
 *    whose unaligned reloads would stall on the stores);
 *  - longer grid rows (Lw <= 32): four rows at a time, a chain each.
 * Whole vectors are read up to 64 floats past the positions used (run_depthwise's slack). */
CONV_NOINLINE void dw_plane_flat(const conv_plan* p, uint64_t ybase, uint64_t ystep, const float* base, const int64_t* to,
                                 const float* tw, uint32_t ntap, uint64_t nrows, float bias, int plain) {
    const uint64_t Lw = p->dim[2].len, outc = p->dim[2].outc;
    const __m512 bv = _mm512_set1_ps(bias);
    const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __mmask16 m = mask_n(outc);
    uint64_t r0 = 0, r;
    uint32_t i;
#define DW_FLAT_OUT(v, row) \
    store_vec(p->half, 0, p->y, ybase + (row) * ystep, plain ? _mm512_add_ps((v), bv) : finish_vec(&p->act, (v), bv), m)
    if (Lw > 16) {
        for (; r0 + 4 <= nrows; r0 += 4) {
            const float* b0 = base + r0 * Lw;
            __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
            for (i = 0; i < ntap; ++i) {
                const __m512 w = _mm512_set1_ps(tw[i]);
                const float* src = b0 + to[i];
                a0 = _mm512_fmadd_ps(w, _mm512_loadu_ps(src), a0);
                a1 = _mm512_fmadd_ps(w, _mm512_loadu_ps(src + Lw), a1);
                a2 = _mm512_fmadd_ps(w, _mm512_loadu_ps(src + 2 * Lw), a2);
                a3 = _mm512_fmadd_ps(w, _mm512_loadu_ps(src + 3 * Lw), a3);
            }
            DW_FLAT_OUT(a0, r0);
            DW_FLAT_OUT(a1, r0 + 1);
            DW_FLAT_OUT(a2, r0 + 2);
            DW_FLAT_OUT(a3, r0 + 3);
        }
        for (; r0 < nrows; ++r0) {
            __m512 a0 = _mm512_setzero_ps();
            for (i = 0; i < ntap; ++i) a0 = _mm512_fmadd_ps(_mm512_set1_ps(tw[i]), _mm512_loadu_ps(base + r0 * Lw + to[i]), a0);
            DW_FLAT_OUT(a0, r0);
        }
        return;
    }
    for (; r0 < nrows;) {
        const uint64_t R = 64 / Lw, rn = nrows - r0 < R ? nrows - r0 : R, used = (rn - 1) * Lw + outc;
        const float* b0 = base + r0 * Lw;
        __m512 a[4];
        a[0] = a[1] = a[2] = a[3] = _mm512_setzero_ps();
        if (used > 32) {
            for (i = 0; i < ntap; ++i) {
                const __m512 w = _mm512_set1_ps(tw[i]);
                const float* src = b0 + to[i];
                a[0] = _mm512_fmadd_ps(w, _mm512_loadu_ps(src), a[0]);
                a[1] = _mm512_fmadd_ps(w, _mm512_loadu_ps(src + 16), a[1]);
                a[2] = _mm512_fmadd_ps(w, _mm512_loadu_ps(src + 32), a[2]);
                a[3] = _mm512_fmadd_ps(w, _mm512_loadu_ps(src + 48), a[3]);
            }
        } else if (used > 16) {
            for (i = 0; i < ntap; ++i) {
                const __m512 w = _mm512_set1_ps(tw[i]);
                const float* src = b0 + to[i];
                a[0] = _mm512_fmadd_ps(w, _mm512_loadu_ps(src), a[0]);
                a[1] = _mm512_fmadd_ps(w, _mm512_loadu_ps(src + 16), a[1]);
            }
        } else {
            for (i = 0; i < ntap; ++i) a[0] = _mm512_fmadd_ps(_mm512_set1_ps(tw[i]), _mm512_loadu_ps(b0 + to[i]), a[0]);
        }
        for (r = 0; r < rn; ++r) {
            const uint64_t at = r * Lw, k = at / 16; /* the row's positions start in chain k; k + 1 < 4 when they cross */
            const __m512i idx = _mm512_add_epi32(iota, _mm512_set1_epi32((int)(at % 16)));
            const __m512 v = at % 16 + outc > 16 ? _mm512_permutex2var_ps(a[k], idx, a[k + 1]) : _mm512_permutexvar_ps(idx, a[k]);
            DW_FLAT_OUT(v, r0 + r);
        }
        r0 += rn;
    }
#undef DW_FLAT_OUT
}
#endif

#if defined(CONV_AVX512)
/* Depthwise 3x3 FORWARD at stride S (1 or 2; MobileNets' depthwise layers) straight from the input, NR output rows
 * (from oh0) of channel g of image n at once: per block of 16 outputs, each of the S (NR - 1) + 3 input rows they
 * read is loaded once. At stride 1 the three W taps are three masked loads one column apart; at stride 2 the
 * row's 32 columns are split into even and odd columns by two permutes, and with start padding 1 the taps are the
 * odd columns moved one lane (the column before the block coming in), the even and the odd columns (start
 * padding 0: even, odd, even moved one lane the other way, the column after the block coming in). Each output
 * row's taps are multiply-added from zero in the tap tables' order (kh, then kw), padding as zeros, then bias and
 * activation: the packed path's operations, without the packing, and NR independent chains instead of one. */
#if defined(__GNUC__) && !defined(__clang__)
#define DW_K3_UNROLL _Pragma("GCC unroll 9") /* every row and chain a constant: the sums stay in registers */
#else
#define DW_K3_UNROLL
#endif
CONV_INLINE void dw_k3_group(const conv_plan* p, const float* x, float* y, const __m512* wt, __m512 bv, uint64_t oh0, unsigned NR,
                             unsigned S) {
    const conv_dim* H = &p->dim[1];
    const conv_dim* W = &p->dim[2];
    const uint64_t IH = H->in, IW = W->in, OW = W->out, blocks = (OW + 15) / 16;
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    const __m512 zero = _mm512_setzero_ps();
    const int pad1 = W->sp == 1;
    const int64_t ih0 = (int64_t)S * (int64_t)oh0 - (int64_t)H->sp;
    uint64_t b;
    unsigned i, r, kw;
    for (b = 0; b < blocks; ++b) {
        const uint64_t c0 = S * 16 * b;
        __mmask16 mlo = 0, mhi = 0, mk[3] = {0, 0, 0};
        __m512 acc[4] = {zero, zero, zero, zero};
        if (S == 2) {
            mlo = IW > c0 ? mask_n(IW - c0) : 0;
            mhi = IW > c0 + 16 ? mask_n(IW - c0 - 16) : 0;
        } else {
            for (kw = 0; kw < 3; ++kw) { /* lane j reads input column c0 - sp + kw + j: inside [0, IW) only */
                const int64_t first = (int64_t)c0 - (int64_t)W->sp + (int64_t)kw;
                const uint32_t below = first < 0 ? (uint32_t)(-first) : 0u;
                const uint64_t above = (int64_t)IW > first ? (uint64_t)((int64_t)IW - first) : 0u;
                mk[kw] = (__mmask16)(mask_n(above) & ~mask_n(below));
            }
        }
        DW_K3_UNROLL for (i = 0; i < S * (NR - 1) + 3; ++i) {
            const int64_t ih = ih0 + (int64_t)i;
            __m512 t0 = zero, t1 = zero, t2 = zero;
            if (ih >= 0 && (uint64_t)ih < IH) {
                const float* row = x + (uint64_t)ih * p->xs[1] + c0;
                if (S == 1) {
                    const float* at = row - W->sp;
                    t0 = _mm512_maskz_loadu_ps(mk[0], at);
                    t1 = _mm512_maskz_loadu_ps(mk[1], at + 1);
                    t2 = _mm512_maskz_loadu_ps(mk[2], at + 2);
                } else {
                    const __m512 lo = _mm512_maskz_loadu_ps(mlo, row), hi = _mm512_maskz_loadu_ps(mhi, row + 16);
                    const __m512 e = _mm512_permutex2var_ps(lo, even, hi), o = _mm512_permutex2var_ps(lo, odd, hi);
                    /* the input column just before the block (start padding 1) or just after it (0) */
                    const float edge = (pad1 ? c0 > 0 : c0 + 32 < IW) ? (pad1 ? row[-1] : row[32]) : 0.0f;
                    if (pad1) {
                        t0 = _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(o), _mm512_castps_si512(_mm512_set1_ps(edge)), 15));
                        t1 = e;
                        t2 = o;
                    } else {
                        t0 = e;
                        t1 = o;
                        t2 = _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(_mm512_set1_ps(edge)), _mm512_castps_si512(e), 1));
                    }
                }
            }
            DW_K3_UNROLL for (r = 0; r < NR; ++r) { /* output row r reads input rows S r .. S r + 2 of the group */
                if (i >= S * r && i <= S * r + 2) {
                    const unsigned kh = i - S * r;
                    acc[r] = _mm512_fmadd_ps(wt[3 * kh], t0, acc[r]);
                    acc[r] = _mm512_fmadd_ps(wt[3 * kh + 1], t1, acc[r]);
                    acc[r] = _mm512_fmadd_ps(wt[3 * kh + 2], t2, acc[r]);
                }
            }
        }
        DW_K3_UNROLL for (r = 0; r < NR; ++r) {
            _mm512_mask_storeu_ps(y + (oh0 + r) * p->ys[1] + 16 * b, mask_n(OW - 16 * b), finish_vec(&p->act, acc[r], bv));
        }
    }
}

/* Output rows [oh0, oh1) of channel g of image n by dw_k3_group, four at a time. */
CONV_NOINLINE void dw_k3_rows(const conv_plan* p, uint64_t n, uint64_t g, uint64_t oh0, uint64_t oh1) {
    const float* x = (const float*)p->x + n * p->xs_n + g * p->xs_c;
    float* y = (float*)p->y + n * p->ys_n + g * p->ys_c;
    const __m512 bv = _mm512_set1_ps(bias_of(p, g));
    __m512 wt[9];
    uint64_t oh, kh, kw;
    DW_K3_UNROLL for (kh = 0; kh < 3; ++kh) {
        DW_K3_UNROLL for (kw = 0; kw < 3; ++kw) {
            const uint64_t fh = p->flip ? 2 - kh : kh, fw = p->flip ? 2 - kw : kw;
            wt[3 * kh + kw] = _mm512_set1_ps(((const float*)p->w)[g * p->ws_0 + fh * p->ws[1] + fw * p->ws[2]]);
        }
    }
    if (p->dim[2].s == 2) {
        for (oh = oh0; oh + 4 <= oh1; oh += 4) dw_k3_group(p, x, y, wt, bv, oh, 4, 2);
        for (; oh < oh1; ++oh) dw_k3_group(p, x, y, wt, bv, oh, 1, 2);
    } else {
        for (oh = oh0; oh + 4 <= oh1; oh += 4) dw_k3_group(p, x, y, wt, bv, oh, 4, 1);
        for (; oh < oh1; ++oh) dw_k3_group(p, x, y, wt, bv, oh, 1, 1);
    }
}
#endif

#if defined(CONV_AVX512)
/* dw_run's items (n, g, chunk of output rows) by dw_k3_rows: no packing, no per-worker buffer. */
static void dw_k3_run(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    const conv_plan* p = (const conv_plan*)vp;
    const uint64_t OH = p->dim[1].out, cend = end < p->compute_items ? end : p->compute_items;
    uint64_t item;
    (void)worker;
    for (item = begin; item < cend; ++item) {
        const uint64_t th0 = item % p->dw_chunks * p->dw_rows, th1 = th0 + p->dw_rows < OH ? th0 + p->dw_rows : OH;
        if (th0 < th1) dw_k3_rows(p, item / (p->dw_chunks * p->G), (item / p->dw_chunks) % p->G, th0, th1);
    }
    for (item = begin > cend ? begin : cend; item < end; ++item) fill_item(p, item - p->compute_items);
}
#endif

static void dw_run(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    const conv_plan* p = (const conv_plan*)vp;
    const conv_dim* D = &p->dim[0];
    const conv_dim* H = &p->dim[1];
    const conv_dim* W = &p->dim[2];
    const uint64_t kvol = D->k * H->k * W->k, Sw = W->ostep, esize = p->half ? 2u : 4u;
    float* buf = p->dw_buf + (uint64_t)worker * p->dw_buf_floats;
    /* after the largest item's packed rows (+ slack for whole-vector reads): tap weights, accumulator, tables */
    float* tw = (float*)(((uintptr_t)(buf + p->dw_pack_floats + 128) + 63) & ~(uintptr_t)63);
    float* acc = tw + ((kvol + 15) & ~(uint64_t)15);
    int64_t* to = (int64_t*)(acc + ((W->len + 63) & ~(uint64_t)15));
    uint64_t* tk = (uint64_t*)(to + kvol);
    uint32_t* first = (uint32_t*)(tk + kvol);
#if defined(CONV_AVX512)
    const int plain = p->act.kind == DMLPY_ACT_NONE || p->act.kind == DMLPY_ACT_IDENTITY;
    const int fast_rows = p->ys[2] == 1 && (Sw == 1 || Sw == 2) && W->nphase == Sw;
    /* short rows, one phase per dim (FORWARD, or stride-1 BACKWARD): several rows per vector */
    const int flat = p->ys[2] == 1 && D->nphase == 1 && H->nphase == 1 && W->nphase == 1 && W->outc <= 16 &&
                     W->len <= 32 && H->ostep == 1;
#endif
    dw_tables tb;
    uint64_t j0s[CONV_MAX_S], j1s[CONV_MAX_S];
    uint64_t item, uw, built_rows = 0, pf_lines = 0, pf_left = 0, pf_step = 0, chunk = 0, g = 0, n = 0;
    const uint64_t cend = end < p->compute_items ? end : p->compute_items;
    const char* pf_next = NULL;
    /* Per run of items, not per item: the W sub-rows' real-input runs, the tap tables (rebuilt only when the
     * rows per item change: the last row chunk), the prefetch plan. */
    for (uw = 0; uw < W->nsub; ++uw) w_run(p, uw, &j0s[uw], &j1s[uw]);
    if (p->dw_chunks == 1) {
        /* the next item's input plane is prefetched, a few lines per output row, while this one computes */
        const uint64_t extent =
            ((D->in - 1) * p->xs[0] + (H->in - 1) * p->xs[1] + (W->in - 1) * p->xs[2] + 1) * esize;
        if (extent <= ((uint64_t)1 << 20) && p->dw_batch == 1) {
            const uint64_t out_rows = p->Cout_g * D->outc * H->outc;
            pf_lines = (extent + 63) / 64;
            pf_step = out_rows ? (pf_lines + out_rows - 1) / out_rows : pf_lines;
        }
    }
    tb.to = to;
    tb.tw = tw;
    tb.first = first;
    if (begin < cend) {
        chunk = begin % p->dw_chunks;
        g = (begin / p->dw_chunks) % p->G;
        n = begin / (p->dw_chunks * p->G);
    }
    for (item = begin; item < cend;) {
        /* a batch of items: all packed first, then all computed (a plane is not read right after its packing
         * stores, which would stall the vector loads that span several of them; many tiny planes per pass) */
        const uint64_t nb = cend - item < p->dw_batch ? cend - item : p->dw_batch;
        uint64_t bi, n1 = n, g1 = g, c1 = chunk;
        for (bi = 0; bi < nb; ++bi) {
            uint64_t th0 = c1 * p->dw_rows, th1 = th0 + p->dw_rows, jh1;
            if (th1 > H->T[0]) th1 = H->T[0];
            jh1 = th1 + p->dw_cmax_h;
            if (jh1 > H->len) jh1 = H->len;
            if (th0 < th1) dw_pack(p, buf + bi * p->dw_plane_floats, n1, g1, th0, jh1, j0s, j1s);
            if (++c1 == p->dw_chunks) {
                c1 = 0;
                if (++g1 == p->G) {
                    g1 = 0;
                    ++n1;
                }
            }
        }
        for (bi = 0; bi < nb; ++bi, ++item) {
            const float* plane = buf + bi * p->dw_plane_floats;
            uint64_t th0 = chunk * p->dw_rows, th1 = th0 + p->dw_rows, jh0, jh1, rows, oc;
            if (th1 > H->T[0]) th1 = H->T[0]; /* T[0] is the largest */
            if (th0 < th1) {
                jh0 = th0;
                jh1 = th1 + p->dw_cmax_h;
                if (jh1 > H->len) jh1 = H->len;
                rows = jh1 - jh0;
                if (rows != built_rows) {
                    dw_build_tables(p, rows, to, tk, first);
                    built_rows = rows;
                }
                pf_next = NULL;
                pf_left = 0;
                if (pf_lines && item + 1 < cend) {
                    const uint64_t g2 = g + 1 < p->G ? g + 1 : 0, n2 = g + 1 < p->G ? n : n + 1;
                    pf_next = p->x + (n2 * p->xs_n + g2 * p->xs_c) * esize;
                    pf_left = pf_lines;
                }
                for (oc = 0; oc < p->Cout_g; ++oc) {
                    const uint64_t ocg = g * p->Cout_g + oc;
                    const uint64_t wbase = p->backward ? g * p->ws_0 + oc * p->ws_1 : ocg * p->ws_0;
                    const float bias = bias_of(p, ocg);
                    uint64_t i, rd, rh, td, th, rw;
                    for (i = 0; i < kvol; ++i) tw[i] = load_elem(p->half, p->w, wbase + tk[i]);
                    for (rd = 0; rd < D->nphase; ++rd) {
                        for (td = 0; td < D->T[rd]; ++td) {
                            for (rh = 0; rh < H->nphase; ++rh) {
                                const uint64_t th_end = th1 < H->T[rh] ? th1 : H->T[rh];
                                const uint32_t* f = first + (rd * H->nphase + rh) * W->nphase;
#if defined(CONV_AVX512)
                                if (flat && th0 < th_end) {
                                    const uint64_t od = rd + D->ostep * td;
                                    dw_plane_flat(p, n * p->ys_n + ocg * p->ys_c + od * p->ys[0] + th0 * p->ys[1],
                                                  p->ys[1], plane + (td * rows + th0 - jh0) * W->len, to + f[0],
                                                  tw + f[0], f[1] - f[0], th_end - th0, bias, plain);
                                    continue;
                                }
#endif
                                for (th = th0; th < th_end; ++th) {
                                    const uint64_t od = rd + D->ostep * td, oh = rh + H->ostep * th;
                                    const uint64_t ybase = n * p->ys_n + ocg * p->ys_c + od * p->ys[0] + oh * p->ys[1];
                                    const float* base = plane + (td * rows + th - jh0) * W->len;
#if defined(__GNUC__) || defined(__clang__)
                                    if (pf_left) {
                                        uint64_t k = pf_step < pf_left ? pf_step : pf_left;
                                        for (; k > 0; --k, --pf_left, pf_next += 64) __builtin_prefetch(pf_next, 0, 3);
                                    }
#endif
#if defined(CONV_AVX512)
                                    if (fast_rows) {
                                        /* both W phases in registers, interleaved, stored directly */
                                        dw_row_fast(p, ybase, base, to + f[0], tw + f[0], f[1] - f[0], to + f[1],
                                                    tw + f[1], Sw == 2 ? f[2] - f[1] : 0, Sw, bias, plain);
                                        continue;
                                    }
#endif
                                    /* general: one W phase at a time through the accumulator row, scalar stores */
                                    for (rw = 0; rw < W->nphase; ++rw) {
                                        uint64_t t;
                                        if (W->T[rw] == 0) continue;
                                        dw_accumulate(&tb, f[rw], f[rw + 1], base, acc, W->T[rw]);
                                        for (t = 0; t < W->T[rw]; ++t) {
                                            store_elem(p->half, p->y, ybase + (rw + Sw * t) * p->ys[2],
                                                       dmlpy_act_scalar(&p->act, acc[t] + bias));
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            if (++chunk == p->dw_chunks) { /* the next item (n, g, chunk) */
                chunk = 0;
                if (++g == p->G) {
                    g = 0;
                    ++n;
                }
            }
        }
    }
    for (item = begin > cend ? begin : cend; item < end; ++item) fill_item(p, item - p->compute_items);
#if defined(CONV_AVX512)
    if (p->nt) _mm_sfence();
#endif
}

/* ---- scratch --------------------------------------------------------------------------------------- */

/* One scratch block is kept between calls (page faults on a fresh multi-megabyte block cost more than
 * small convolutions). The first 64 bytes hold the usable size. One cache per process: the instruction-set
 * variants of this file (isa/variant.h) use the baseline's. */
#if !defined(DMLPY_ISA_VARIANT)
#if defined(CONV_SCRATCH_CACHE)
static _Atomic(void*) conv_cached_block = NULL;
#endif

void* conv_scratch_get(uint64_t bytes) {
    void* block = NULL;
#if defined(CONV_SCRATCH_CACHE)
    block = atomic_exchange(&conv_cached_block, NULL);
    if (block != NULL && *(uint64_t*)block >= bytes) return block;
    free(block);
#endif
    if (bytes > (uint64_t)SIZE_MAX - 64) return NULL;
    block = malloc((size_t)bytes + 64);
    if (block != NULL) *(uint64_t*)block = bytes;
    return block;
}

void conv_scratch_put(void* block) {
    if (block == NULL) return;
#if defined(CONV_SCRATCH_CACHE)
    if (*(uint64_t*)block <= CONV_SCRATCH_KEEP) {
        block = atomic_exchange(&conv_cached_block, block);
    }
#endif
    free(block);
}
#endif /* !DMLPY_ISA_VARIANT */

/* ---- setup ------------------------------------------------------------------------------------------ */

/* Phase geometry of every dim; 0 when the problem is outside the fast paths' limits. */
static int plan_geometry(conv_plan* p) {
    int d;
    for (d = 0; d < 3; ++d) {
        if (!plan_dim(&p->dim[d], p->backward)) return 0;
    }
    p->nphase = p->dim[0].nphase * p->dim[1].nphase * p->dim[2].nphase;
    if (p->nphase > CONV_MAX_PHASES) return 0;
    p->nsub_total = p->dim[0].nsub * p->dim[1].nsub * p->dim[2].nsub;
    return 1;
}

/* Plans the GEMM path (after plan_geometry); 0 when the problem is outside its limits (the direct path
 * then runs). On success the scratch sizes are in *xp_floats, *a_floats, *off_count. */
static int plan_fast(conv_plan* p, unsigned limit, uint64_t* xp_floats, uint64_t* a_floats, uint64_t* off_count) {
    conv_dim* D = &p->dim[0];
    conv_dim* H = &p->dim[1];
    conv_dim* W = &p->dim[2];
    uint64_t total, taps_total, r, tw_max = 0, group_floats;
    /* One image-group of xp: nsub * Ld * Lh * Cin_g * Lw floats. */
    if (!dmlpy_mul_u64(p->Cin_g, W->len, &group_floats) || !dmlpy_mul_u64(group_floats, D->len, &group_floats) ||
        !dmlpy_mul_u64(group_floats, H->len, &group_floats) || !dmlpy_mul_u64(group_floats, p->nsub_total, &group_floats)) {
        return 0;
    }
    /* Per-image mode when there are enough (n, g) items to share out and one fits in L2 with room to spare;
     * otherwise one shared xp for all images and groups, packed in a pass before. */
    p->fused = p->N * p->G >= 4 * (uint64_t)limit && group_floats <= CONV_FUSED_FLOATS;
    p->cx = p->fused ? p->Cin_g : p->Cin;
    if (!dmlpy_mul_u64(p->cx, W->len, &p->sub_floats) || !dmlpy_mul_u64(p->sub_floats, D->len, &p->sub_floats) ||
        !dmlpy_mul_u64(p->sub_floats, H->len, &p->sub_floats)) {
        return 0;
    }
    if (!dmlpy_mul_u64(p->sub_floats, p->nsub_total, &p->n_floats)) return 0;
    if (p->fused) {
        p->xp_worker_floats = (p->n_floats + CONV_XP_SLACK + 15) & ~(uint64_t)15;
        if (!dmlpy_mul_u64(p->xp_worker_floats, limit, &total)) return 0;
        p->xp_items = 0;
    } else {
        if (!dmlpy_mul_u64(p->n_floats, p->N, &total) || !dmlpy_add_u64(total, CONV_XP_SLACK, &total)) return 0;
        p->xp_items = p->N * p->nsub_total * D->len * p->Cin;
    }
    if (total > CONV_SCRATCH_CAP / sizeof(float)) return 0;
    *xp_floats = total;

    for (r = 0; r < W->nphase; ++r) {
        if (W->T[r] > tw_max) tw_max = W->T[r];
    }
    p->spr = (tw_max + 15) / 16;
    {
        /* Lanes computed per layout (R: whole 16-slots per grid row; P: the flattened grid). */
        double lanes_r = 0.0, lanes_p = 0.0;
        uint64_t rd, rh;
        for (rd = 0; rd < D->nphase; ++rd) {
            for (rh = 0; rh < H->nphase; ++rh) {
                double td = (double)D->T[rd], th = (double)H->T[rh];
                if (td == 0.0 || th == 0.0 || tw_max == 0) continue;
                lanes_r += td * th * (double)p->spr * 16.0;
                lanes_p += 16.0 * ceil(((td - 1.0) * (double)H->len * (double)W->len + (th - 1.0) * (double)W->len +
                                        (double)tw_max) / 16.0);
            }
        }
        p->planes = lanes_p * 1.03 < lanes_r;
#if defined(CONV_FORCE_PLANES)
        p->planes = CONV_FORCE_PLANES; /* testing */
#endif
    }
    if (p->planes) {
        p->xh = W->len;
        p->xd = H->len * W->len;
        p->xc = D->len * p->xd;
    } else {
        p->xc = W->len;
        p->xh = p->cx * W->len;
        p->xd = H->len * p->xh;
    }
    p->ic_major = p->planes;

    {
        /* A packing reads a_icb x MR x Kvol filter elements into a CONV_PACK_TMP buffer. */
        uint64_t kvol = D->k * H->k * W->k; /* <= 2^24 (CONV_MAX_K) */
        if (kvol * CONV_MR > CONV_PACK_TMP) return 0;
        p->a_icb = CONV_PACK_TMP / (kvol * CONV_MR);
        {
            /* spatial dims row-major (dims of size 1 have any stride) */
            uint64_t expect = 1;
            int dd;
            p->w_spatial_packed = 1;
            for (dd = 2; dd >= 0; --dd) {
                if (p->dim[dd].k > 1 && p->ws[dd] != expect) p->w_spatial_packed = 0;
                expect *= p->dim[dd].k;
            }
        }
        if (p->a_icb > 16) p->a_icb = 16;
    }
    p->mblocks = (p->Cout_g + CONV_MR - 1) / CONV_MR;
    {
        uint64_t rem = p->Cout_g - (p->mblocks - 1) * CONV_MR;
        p->mr_tail = rem > 4 ? 8u : rem > 2 ? 4u : rem > 1 ? 2u : 1u;
    }
    /* Taps over all phases: k per dim (BACKWARD: each tap reaches exactly one phase). */
    taps_total = D->tap_first[D->nphase] * (uint64_t)H->tap_first[H->nphase] * W->tap_first[W->nphase];
    if (!dmlpy_mul_u64(taps_total, p->Cin_g, off_count)) return 0;
    if (!dmlpy_mul_u64(*off_count, p->mblocks * CONV_MR, &p->a_group)) return 0;
    if (!dmlpy_mul_u64(p->a_group, p->G, a_floats)) return 0;
    if (*a_floats > CONV_SCRATCH_CAP / sizeof(float) || *off_count > CONV_SCRATCH_CAP / sizeof(int64_t)) return 0;
    if (*xp_floats + *a_floats > CONV_SCRATCH_CAP / sizeof(float)) return 0;
    return 1;
}

/* Phase table and offset table (needs p->phases and p->off). */
static void build_phases(conv_plan* p) {
    const conv_dim* D = &p->dim[0];
    const conv_dim* H = &p->dim[1];
    const conv_dim* W = &p->dim[2];
    uint64_t rd, rh, rw, a_offset = 0, off_index = 0;
    for (rd = 0; rd < D->nphase; ++rd) {
        for (rh = 0; rh < H->nphase; ++rh) {
            for (rw = 0; rw < W->nphase; ++rw) {
                conv_phase* P = &p->phases[(rd * H->nphase + rh) * W->nphase + rw];
                uint64_t nd = phase_taps(D, rd), nh = phase_taps(H, rh), nw = phase_taps(W, rw);
                uint64_t ic, a, b, c;
                P->r[0] = rd;
                P->r[1] = rh;
                P->r[2] = rw;
                P->ntaps = nd * nh * nw;
                P->K = p->Cin_g * P->ntaps;
                P->a_offset = a_offset;
                P->off_index = off_index;
                for (a = 0; a < nd; ++a) {
                    uint64_t td = D->tap_first[rd] + a;
                    for (b = 0; b < nh; ++b) {
                        uint64_t th = H->tap_first[rh] + b;
                        for (c = 0; c < nw; ++c) {
                            uint64_t tw = W->tap_first[rw] + c;
                            uint64_t sub = (D->tap_sub[td] * H->nsub + H->tap_sub[th]) * W->nsub + W->tap_sub[tw];
                            uint64_t tap = sub * p->sub_floats + D->tap_c[td] * p->xd + H->tap_c[th] * p->xh + W->tap_c[tw];
                            uint64_t t = (a * nh + b) * nw + c;
                            for (ic = 0; ic < p->Cin_g; ++ic) {
                                uint64_t kk = p->ic_major ? ic * P->ntaps + t : t * p->Cin_g + ic;
                                p->off[off_index + kk] = (int64_t)(tap + ic * p->xc);
                            }
                        }
                    }
                }
                off_index += P->K;
                a_offset += P->K * p->mblocks * CONV_MR;
            }
        }
    }
}

static int32_t check_fields(const DML_CONVOLUTION_OPERATOR_DESC* d) {
    if (d->InputTensor == NULL || d->FilterTensor == NULL || d->OutputTensor == NULL) return DMLPY_E_NULL_ARGUMENT;
    if (d->Strides == NULL || d->Dilations == NULL || d->StartPadding == NULL || d->EndPadding == NULL ||
        d->OutputPadding == NULL) {
        return DMLPY_E_NULL_ARGUMENT;
    }
    if (d->Mode != DML_CONVOLUTION_MODE_CONVOLUTION && d->Mode != DML_CONVOLUTION_MODE_CROSS_CORRELATION) {
        return DMLPY_E_INVALID_DESC;
    }
    if (d->Direction != DML_CONVOLUTION_DIRECTION_FORWARD && d->Direction != DML_CONVOLUTION_DIRECTION_BACKWARD) {
        return DMLPY_E_INVALID_DESC;
    }
    if (d->DimensionCount < 1 || d->DimensionCount > 3) return DMLPY_E_INVALID_DESC;
    if (d->GroupCount == 0) return DMLPY_E_INVALID_DESC;
    return DMLPY_OK;
}

/* Depthwise on small planes, channels in the lanes (AVX-512, FORWARD, float32, one input and one output channel
 * per group, no OutputPadding, at most DW_LANES_MAX_OUT outputs per plane): the row-vector loops spend most of
 * their time per plane on a 2x2 .. 8x8 plane (MobileNet's late stages: 336 channels of 2x2 took 58 ns each).
 * Item (n, run of 16 channels): the 16 planes' inputs are gathered into [position][channel] vectors and the
 * weights into [tap][channel] vectors; each output position sums its valid taps (those on the input; padding taps
 * are skipped, as the direct sum skips them) in (kd, kh, kw) order from 0 by fused multiply-adds, adds the bias,
 * applies the activation and is scattered to its 16 channels. Lanes past the last channel are masked: nothing is
 * read or written for them. Every index is an element offset of the bound tensors, checked to fit int32. */
#ifndef DW_LANES_MAX_OUT
#define DW_LANES_MAX_OUT 64 /* output positions per plane (16x16 planes took 2.5x longer this way than by the row loops) */
#endif
#ifndef DW_LANES_MAX_IN
#define DW_LANES_MAX_IN 256 /* input positions per plane */
#endif
#define DW_LANES_MAX_TAPS 64

typedef struct dw_lanes {
    const conv_plan* p;
    uint64_t S, OS, kvol, nblocks;   /* input and output positions per plane, taps, 16-channel blocks per image */
    int32_t xoff[DW_LANES_MAX_IN];   /* input position s: element offset in the plane */
    int32_t yoff[DW_LANES_MAX_OUT];  /* output position */
    int32_t woff[DW_LANES_MAX_TAPS]; /* tap t (Mode's flip applied): element offset in the channel's filter */
    uint16_t first[DW_LANES_MAX_OUT + 1]; /* output o's valid taps: pairs[first[o] .. first[o + 1]) */
    uint16_t pair_t[DW_LANES_MAX_OUT * DW_LANES_MAX_TAPS], pair_s[DW_LANES_MAX_OUT * DW_LANES_MAX_TAPS];
} dw_lanes;

#if defined(CONV_AVX512)
static void dw_lanes_run(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    const dw_lanes* L = (const dw_lanes*)vp;
    const conv_plan* p = L->p;
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i xl = _mm512_mullo_epi32(lane, _mm512_set1_epi32((int32_t)p->xs_c));
    const __m512i wl = _mm512_mullo_epi32(lane, _mm512_set1_epi32((int32_t)p->ws_0));
    const __m512i yl = _mm512_mullo_epi32(lane, _mm512_set1_epi32((int32_t)p->ys_c));
    __m512 xin[DW_LANES_MAX_IN], wv[DW_LANES_MAX_TAPS];
    uint64_t item, s, t, o;
    (void)worker;
    for (item = begin; item < end; ++item) {
        const uint64_t n = item / L->nblocks, c0 = item % L->nblocks * 16;
        const __mmask16 mk = mask_n(p->Cout - c0);
        const float* xb = (const float*)p->x + n * p->xs_n + c0 * p->xs_c;
        const float* wb = (const float*)p->w + c0 * p->ws_0;
        float* yb = (float*)p->y + n * p->ys_n + c0 * p->ys_c;
        __m512 bias = _mm512_setzero_ps();
        if (p->b) bias = _mm512_mask_i32gather_ps(bias, mk, _mm512_mullo_epi32(lane, _mm512_set1_epi32((int32_t)p->bs_c)), (const float*)p->b + c0 * p->bs_c, 4);
        for (s = 0; s < L->S; ++s) xin[s] = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mk, _mm512_add_epi32(xl, _mm512_set1_epi32(L->xoff[s])), xb, 4);
        for (t = 0; t < L->kvol; ++t) wv[t] = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mk, _mm512_add_epi32(wl, _mm512_set1_epi32(L->woff[t])), wb, 4);
        for (o = 0; o < L->OS; ++o) {
            __m512 acc = _mm512_setzero_ps();
            unsigned j;
            for (j = L->first[o]; j < L->first[o + 1]; ++j) acc = _mm512_fmadd_ps(xin[L->pair_s[j]], wv[L->pair_t[j]], acc);
            _mm512_mask_i32scatter_ps(yb, mk, _mm512_add_epi32(yl, _mm512_set1_epi32(L->yoff[o])), finish_vec(&p->act, acc, bias), 4);
        }
    }
}
#endif

/* DMLPY_OK, DMLPY_E_OUT_OF_MEMORY, or -1 when the problem is not one for this path. */
/* Whether dw_k3_rows computes the call: 2-D FORWARD float32 depthwise (one channel per group and output), 3x3,
 * stride 1 or 2 in both dims, start padding 0 or 1, no OutputPadding, unit W strides. */
#if defined(CONV_AVX512)
static int dw_k3_fits(const conv_plan* p) {
    const conv_dim* D = &p->dim[0];
    const conv_dim* H = &p->dim[1];
    const conv_dim* W = &p->dim[2];
    return !p->half && !p->backward && p->Cin_g == 1 && p->Cout_g == 1 && D->in == 1 && D->out == 1 && H->k == 3 && W->k == 3 &&
           (H->s == 1 || H->s == 2) && W->s == H->s && H->d == 1 && W->d == 1 && H->sp <= 1 && W->sp <= 1 && H->outc == H->out && W->outc == W->out &&
           H->T[0] == H->out && p->xs[2] == 1 && p->ys[2] == 1;
}
#endif

static int32_t run_dw_lanes(conv_plan* p, uint64_t work, UINT threadCount) {
#if defined(CONV_AVX512)
    const conv_dim* D = &p->dim[0];
    const conv_dim* H = &p->dim[1];
    const conv_dim* W = &p->dim[2];
    dw_lanes* L;
    uint64_t od, oh, ow, kd, kh, kw, items, o = 0, npairs = 0, i;
    unsigned threads;
    int d;
    /* rows of 8 outputs and more are dw_k3_rows' (96 channels of 16x16 to 8x8: 23.6 -> 14.2 us); on smaller
     * planes its per-channel setup costs more than the lanes' gathers (192 channels of 4x4: 4.7 -> 9.4 us) */
    if (p->half || p->backward || p->Cin_g != 1 || p->Cout_g != 1 || (dw_k3_fits(p) && W->out >= 8)) return -1;
    for (d = 0; d < 3; ++d) {
        if (p->dim[d].outc != p->dim[d].out) return -1;
    }
    if (D->in * H->in * W->in > DW_LANES_MAX_IN || D->out * H->out * W->out > DW_LANES_MAX_OUT ||
        D->k * H->k * W->k > DW_LANES_MAX_TAPS) {
        return -1;
    }
    /* int32 lane offsets: 15 strides of a channel plus the largest in-plane offset */
    {
        const uint64_t lim = ((uint64_t)1 << 31) - 1;
        uint64_t xmax = 15 * p->xs_c, wmax = 15 * p->ws_0, ymax = 15 * p->ys_c, bmax = 15 * p->bs_c;
        for (d = 0; d < 3; ++d) {
            xmax += (p->dim[d].in - 1) * p->xs[d];
            wmax += (p->dim[d].k - 1) * p->ws[d];
            ymax += (p->dim[d].out - 1) * p->ys[d];
        }
        if (xmax > lim || wmax > lim || ymax > lim || bmax > lim) return -1;
    }
    L = (dw_lanes*)malloc(sizeof *L);
    if (L == NULL) return DMLPY_E_OUT_OF_MEMORY;
    L->p = p;
    L->S = D->in * H->in * W->in;
    L->OS = D->out * H->out * W->out;
    L->kvol = D->k * H->k * W->k;
    L->nblocks = (p->Cout + 15) / 16;
    i = 0;
    for (od = 0; od < D->in; ++od)
        for (oh = 0; oh < H->in; ++oh)
            for (ow = 0; ow < W->in; ++ow) L->xoff[i++] = (int32_t)(od * p->xs[0] + oh * p->xs[1] + ow * p->xs[2]);
    i = 0;
    for (kd = 0; kd < D->k; ++kd)
        for (kh = 0; kh < H->k; ++kh)
            for (kw = 0; kw < W->k; ++kw, ++i) {
                const uint64_t fd = p->flip ? D->k - 1 - kd : kd, fh = p->flip ? H->k - 1 - kh : kh, fw = p->flip ? W->k - 1 - kw : kw;
                L->woff[i] = (int32_t)(fd * p->ws[0] + fh * p->ws[1] + fw * p->ws[2]);
            }
    for (od = 0; od < D->out; ++od)
        for (oh = 0; oh < H->out; ++oh)
            for (ow = 0; ow < W->out; ++ow, ++o) {
                const uint64_t oo[3] = {od, oh, ow};
                L->yoff[o] = (int32_t)(od * p->ys[0] + oh * p->ys[1] + ow * p->ys[2]);
                L->first[o] = (uint16_t)npairs;
                i = 0;
                for (kd = 0; kd < D->k; ++kd)
                    for (kh = 0; kh < H->k; ++kh)
                        for (kw = 0; kw < W->k; ++kw, ++i) {
                            const uint64_t kk[3] = {kd, kh, kw};
                            uint64_t pos[3];
                            int ok = 1;
                            for (d = 0; d < 3 && ok; ++d) { /* input position o*s + k*d - sp, on the input */
                                const conv_dim* dm = &p->dim[d];
                                const uint64_t a = oo[d] * dm->s + kk[d] * dm->d; /* all < 2^32: no overflow */
                                ok = a >= dm->sp && a - dm->sp < dm->in;
                                pos[d] = ok ? a - dm->sp : 0;
                            }
                            if (!ok) continue;
                            L->pair_t[npairs] = (uint16_t)i;
                            L->pair_s[npairs] = (uint16_t)((pos[0] * H->in + pos[1]) * W->in + pos[2]);
                            ++npairs;
                        }
            }
    L->first[L->OS] = (uint16_t)npairs;
    items = p->N * L->nblocks;
    threads = dmlpy_choose_threads(work, items, threadCount);
    dmlpy_parallel_for(items, dmlpy_choose_grain(items, threads), threads, dw_lanes_run, L);
    free(L);
    return DMLPY_OK;
#else
    (void)p;
    (void)work;
    (void)threadCount;
    return -1;
#endif
}

/* The depthwise path (after plan_geometry). Returns DMLPY_OK, DMLPY_E_OUT_OF_MEMORY, or -1 when the
 * problem is not for it. */
static int32_t run_depthwise(conv_plan* p, uint64_t work, uint64_t outputs, UINT threadCount) {
    const conv_dim* D = &p->dim[0];
    const conv_dim* H = &p->dim[1];
    const conv_dim* W = &p->dim[2];
    uint64_t rd, rh, rw, b, cmax_h = 0, per_row, rows, tmax = H->T[0], groups_items, items, kvol, bytes, grain;
    unsigned threads, limit;
    void* block;
    for (rd = 0; rd < D->nphase; ++rd) {
        for (rh = 0; rh < H->nphase; ++rh) {
            for (rw = 0; rw < W->nphase; ++rw) {
                if (phase_taps(D, rd) * phase_taps(H, rh) * phase_taps(W, rw) > 64) return -1;
            }
        }
    }
    if (tmax == 0) tmax = 1;
    for (b = 0; b < H->tap_first[H->nphase]; ++b) {
        if (H->tap_c[b] > cmax_h) cmax_h = H->tap_c[b];
    }
    kvol = D->k * H->k * W->k;
    /* floats per packed row of all sub-volumes and D positions */
    if (!dmlpy_mul_u64(p->nsub_total * D->len, W->len, &per_row) || per_row > ((uint64_t)1 << 24)) return -1;
    /* Rows per item: about 16K floats of packed input (L1/L2), at least 1, at most all; enough items. */
    rows = ((uint64_t)1 << 14) / per_row;
    if (rows < 1) rows = 1;
    if (rows > tmax) rows = tmax;
    groups_items = p->N * p->G;
    limit = threadCount ? threadCount : dmlpy_online_cpus();
    while (rows > 1 && groups_items * ((tmax + rows - 1) / rows) < (uint64_t)limit * 8) rows = (rows + 1) / 2;
    p->dw_rows = rows;
    p->dw_chunks = (tmax + rows - 1) / rows;
    p->compute_items = groups_items * p->dw_chunks;
    p->fill_needed = D->outc < D->out || H->outc < H->out || W->outc < W->out;
    p->fill_items = p->fill_needed ? p->N * p->Cout : 0;
    items = p->compute_items + p->fill_items;
    threads = dmlpy_choose_threads(work, items, threadCount);
    grain = threads <= 1 ? items : p->compute_items / ((uint64_t)threads * 8); /* runs of several planes per worker */
    if (grain == 0) grain = 1;
#if defined(CONV_AVX512)
    if (dw_k3_fits(p)) { /* rows straight from the input: no buffer */
        dmlpy_parallel_for(items, grain, threads, dw_k3_run, p);
        return DMLPY_OK;
    }
#endif
    /* per worker: packed rows, 128 slack + 16 alignment, tap weights, accumulator (+ 48 slack), tap offsets and
     * filter offsets (2 floats each), phase starts */
    p->dw_cmax_h = cmax_h;
    p->dw_plane_floats = (per_row * (rows + cmax_h) + 15) & ~(uint64_t)15;
    /* whole small planes per item: batches of up to 32 of them, about 16 KB */
    p->dw_batch = p->dw_chunks == 1 ? ((uint64_t)1 << 12) / p->dw_plane_floats : 1;
    if (p->dw_batch < 1) p->dw_batch = 1;
    if (p->dw_batch > 32) p->dw_batch = 32;
    p->dw_pack_floats = p->dw_plane_floats * p->dw_batch;
    p->dw_buf_floats = p->dw_pack_floats + 128 + 16 + ((kvol + 15) & ~(uint64_t)15) + ((W->len + 63) & ~(uint64_t)15) +
                       4 * kvol + p->nphase + 1 + 16;
    p->dw_buf_floats = (p->dw_buf_floats + 15) & ~(uint64_t)15;
    if (!dmlpy_mul_u64(p->dw_buf_floats, (uint64_t)threads * sizeof(float), &bytes) || bytes > CONV_SCRATCH_CAP) {
        return -1;
    }
    block = conv_scratch_get(bytes + 64);
    if (block == NULL) return DMLPY_E_OUT_OF_MEMORY;
    p->dw_buf = (float*)(((uintptr_t)block + 64 + 63) & ~(uintptr_t)63);
    /* The flat and fast-row loops read whole vectors past a plane's last element (into the gap before the next
     * plane, or the slack) and drop those lanes. The cached block holds whatever the last convolution left
     * there; a denormal among it costs a microcode assist per FMA: 144 channels of 4x4 took 69 us instead of
     * 26. Zeroed, those lanes are plain zeros (and the reads are of initialised memory). */
    memset(p->dw_buf, 0, p->dw_buf_floats * threads * sizeof(float));
    (void)outputs;
    dmlpy_parallel_for(items, grain, threads, dw_run, p); /* each run's planes prefetch their next one */
    conv_scratch_put(block);
    return DMLPY_OK;
}

/* Output-padding fills only (after the Winograd path, which computes the rest). */
static void fill_run(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    uint64_t item;
    (void)worker;
    for (item = begin; item < end; ++item) fill_item((const conv_plan*)vp, item);
}

/* Phase planning of one dim for the Winograd F(3x3, 2x2) path of BACKWARD: output phase r (outputs
 * o = r + s*t, t < T) receives the taps k with r + sp - k*d = s*c, reading input t + c. The path takes the
 * dim when every phase with outputs has exactly two taps whose c differ by 1 (e.g. kernel 2s, dilation 1):
 * then phase r is a 2-tap forward correlation with padding -c0 whose tap j is filter index k_j (c_j = c0 + j),
 * as the raw filter index (Mode flip applied) k0 + j*kstep. Returns the phases with outputs, 0 when not. */
static unsigned wino_phase_dim(const conv_dim* dm, int flip, uint64_t* r_out, uint64_t* T_out, int64_t* pad, int64_t* k0,
                               int64_t* kstep) {
    const int64_t s = (int64_t)dm->s;
    unsigned n = 0;
    uint64_t r, k;
    if (dm->s == 0 || dm->s > 4 || dm->k > 64 || dm->d > 64 || dm->sp > ((uint64_t)1 << 30)) return 0;
    for (r = 0; r < dm->s; ++r) {
        const uint64_t T = dm->outc > r ? (dm->outc - r + dm->s - 1) / dm->s : 0;
        int64_t c[2] = {0, 0}, kk[2] = {0, 0};
        unsigned ntap = 0;
        for (k = 0; k < dm->k; ++k) {
            const int64_t num = (int64_t)r + (int64_t)dm->sp - (int64_t)(k * dm->d);
            if (num % s != 0) continue;
            if (ntap < 2) {
                c[ntap] = num / s;
                kk[ntap] = (int64_t)k;
            }
            ++ntap;
        }
        if (T == 0) continue;
        if (ntap != 2 || c[0] - c[1] != 1) return 0; /* k ascending: c descending */
        r_out[n] = r;
        T_out[n] = T;
        pad[n] = -c[1];
        /* tap j = 0 reads input t + c[1]: filter index kk[1]; j = 1: kk[0] */
        k0[n] = flip ? (int64_t)dm->k - 1 - kk[1] : kk[1];
        kstep[n] = flip ? kk[1] - kk[0] : kk[0] - kk[1];
        ++n;
    }
    return n;
}

/* The Winograd path (winograd.c) for 2-D dilation-1 problems: F(2x2, 3x3) for stride-1 3x3 FORWARD and
 * BACKWARD (which at stride 1 is a forward correlation with the filter flipped, its channels swapped per
 * group and padding 2 - StartPadding); F(3x3, 2x2) for BACKWARD whose output phases (see plan_dim) are each
 * a 2x2 stride-1 correlation (kernel 4 stride 2, kernel 2 stride 1, ...), one Winograd phase per output
 * phase, writing its outputs at stride s. Returns what dmlpy_winograd_conv returns (-1: not taken). */
static int32_t try_winograd(conv_plan* p, UINT threadCount) {
    const conv_dim* H = &p->dim[1];
    const conv_dim* W = &p->dim[2];
    dmlpy_wino_problem q;
    int32_t st;
    memset(&q, 0, sizeof q);
    if (H->k == 3 && W->k == 3 && H->s == 1 && W->s == 1 && H->d == 1 && W->d == 1) {
        const int flip = p->flip != p->backward; /* BACKWARD's gather form runs the (Mode-flipped) filter backwards */
        q.m = 2;
        q.nph = 1;
        q.ph[0].OH = H->outc;
        q.ph[0].OW = W->outc;
        q.ph[0].pad_h = p->backward ? 2 - (int64_t)H->sp : (int64_t)H->sp;
        q.ph[0].pad_w = p->backward ? 2 - (int64_t)W->sp : (int64_t)W->sp;
        q.ph[0].kh0 = q.ph[0].kw0 = flip ? 2 : 0;
        q.ph[0].ksh = q.ph[0].ksw = flip ? -1 : 1;
        q.ys_h = p->ys[1];
        q.ys_w = p->ys[2];
    } else if (p->backward) {
        uint64_t rh[4], rw[4], Th[4], Tw[4];
        int64_t padh[4], padw[4], kh0[4], kw0[4], ksh[4], ksw[4];
        const unsigned nh = wino_phase_dim(H, p->flip, rh, Th, padh, kh0, ksh);
        const unsigned nw = nh ? wino_phase_dim(W, p->flip, rw, Tw, padw, kw0, ksw) : 0;
        unsigned a, b;
        if (nh == 0 || nw == 0) return -1;
        q.m = 3;
        q.nph = nh * nw;
        for (a = 0; a < nh; ++a) {
            for (b = 0; b < nw; ++b) {
                dmlpy_wino_phase* ph = &q.ph[a * nw + b];
                ph->OH = Th[a];
                ph->OW = Tw[b];
                ph->pad_h = padh[a];
                ph->pad_w = padw[b];
                ph->kh0 = kh0[a];
                ph->kw0 = kw0[b];
                ph->ksh = ksh[a];
                ph->ksw = ksw[b];
                ph->y0 = rh[a] * p->ys[1] + rw[b] * p->ys[2];
            }
        }
        q.ys_h = H->s * p->ys[1];
        q.ys_w = W->s * p->ys[2];
    } else {
        return -1;
    }
    q.half = p->half;
    q.act = p->act;
    q.N = p->N;
    q.G = p->G;
    q.Cin_g = p->Cin_g;
    q.Cout_g = p->Cout_g;
    q.H = H->in;
    q.W = W->in;
    q.xs_n = p->xs_n;
    q.xs_c = p->xs_c;
    q.xs_h = p->xs[1];
    q.xs_w = p->xs[2];
    q.wg = (p->backward ? p->Cin_g : p->Cout_g) * p->ws_0;
    q.wo = p->backward ? p->ws_1 : p->ws_0;
    q.wi = p->backward ? p->ws_0 : p->ws_1;
    q.ws_h = p->ws[1];
    q.ws_w = p->ws[2];
    q.ys_n = p->ys_n;
    q.ys_c = p->ys_c;
    q.bs_c = p->bs_c;
    q.x = p->x;
    q.w = p->w;
    q.b = p->b;
    q.y = p->y;
    st = dmlpy_winograd_conv(&q, threadCount);
    if (st == DMLPY_OK && (H->outc < H->out || W->outc < W->out)) {
        /* OutputPadding: act(bias) at the positions Winograd left alone, as run_fast's fill items do */
        uint64_t items = p->N * p->Cout, work;
        unsigned threads;
        if (!dmlpy_mul_u64(H->out, W->out, &work) || !dmlpy_mul_u64(work, items * 4u, &work)) work = UINT64_MAX;
        threads = dmlpy_choose_threads(work, items, threadCount);
        dmlpy_parallel_for(items, dmlpy_choose_grain(items, threads), threads, fill_run, p);
    }
    return st;
}

/* Runs the fast paths. Returns DMLPY_OK, DMLPY_E_OUT_OF_MEMORY, or -1 when the problem is not for them. */
static int32_t run_fast(conv_plan* p, double macs, uint64_t outputs, UINT threadCount) {
    uint64_t xp_floats, a_floats, off_count, bytes, tiles_bytes, rd, rh, items, ntiles;
    uint64_t work = macs / 4.0 > 1.8e19 ? UINT64_MAX : (uint64_t)(macs / 4.0);
    size_t phase_bytes;
    unsigned threads, limit, i;
    char* block;
    char* cur;

    if (!plan_geometry(p)) return -1;
    if (p->Cin_g == 1 && p->Cout_g <= 4) {
        int32_t st = run_dw_lanes(p, work, threadCount);
        if (st >= 0) return st;
        st = run_depthwise(p, work, outputs, threadCount);
        if (st >= 0) return st;
    }
    limit = threadCount ? threadCount : dmlpy_online_cpus();
    if (limit > 256) limit = 256;
    if (!plan_fast(p, limit, &xp_floats, &a_floats, &off_count)) return -1;
    phase_bytes = (size_t)p->nphase * sizeof(conv_phase);

    /* Work items: (n, g, rd, rh, chunk of tiles). */
    p->tiles_max = 0;
    for (rd = 0; rd < p->dim[0].nphase; ++rd) {
        for (rh = 0; rh < p->dim[1].nphase; ++rh) {
            uint64_t t = (grid_slots(p, rd, rh) + CONV_NV - 1) / CONV_NV;
            if (t > p->tiles_max) p->tiles_max = t;
        }
    }
    ntiles = p->tiles_max ? p->tiles_max : 1;
    if (p->fused) {
        p->tiles_per_chunk = ntiles;
        p->nchunks = 1;
        p->compute_items = p->N * p->G;
    } else {
        uint64_t groups_items = p->N * p->G * p->dim[0].nphase * p->dim[1].nphase;
        p->tiles_per_chunk = ntiles;
        if (limit > 1) {
            /* About CONV_ITEMS_PER_THREAD items per thread, each at least 2 tiles. */
            uint64_t want = (uint64_t)limit * CONV_ITEMS_PER_THREAD;
            uint64_t per = groups_items >= want ? ntiles : (ntiles * groups_items + want - 1) / want;
            if (per < 2) per = 2;
            if (per > ntiles) per = ntiles;
            p->tiles_per_chunk = per;
        }
        p->nchunks = (ntiles + p->tiles_per_chunk - 1) / p->tiles_per_chunk;
        p->compute_items = groups_items * p->nchunks;
    }
    p->fill_needed = 0;
    for (i = 0; i < 3; ++i) {
        if (p->dim[i].outc < p->dim[i].out) p->fill_needed = 1;
    }
    p->fill_items = p->fill_needed ? p->N * p->Cout : 0;
    p->pack_a_items = p->G * p->mblocks * ((p->Cin_g + p->a_icb - 1) / p->a_icb);
    items = p->compute_items + p->fill_items;
    if (!dmlpy_add_u64(work, outputs, &work)) work = UINT64_MAX;
    threads = dmlpy_choose_threads(work, items, threadCount);
    if (threads > limit) threads = limit; /* per-image mode: one xp per possible worker */
    p->tile_floats = p->dim[2].nphase * p->mblocks * (uint64_t)CONV_MR * CONV_NR;
    if (!dmlpy_mul_u64(p->tile_floats, sizeof(float) * (uint64_t)threads, &tiles_bytes)) return -1;
    if (tiles_bytes > CONV_SCRATCH_CAP) return -1;

    /* One block: xp | A | tiles | offsets | phases, 64-byte aligned parts (each < 2^31 bytes). */
    bytes = 64;
    bytes += (xp_floats * sizeof(float) + 63) & ~(uint64_t)63;
    bytes += (a_floats * sizeof(float) + 63) & ~(uint64_t)63;
    bytes += (tiles_bytes + 63) & ~(uint64_t)63;
    bytes += (off_count * sizeof(int64_t) + 63) & ~(uint64_t)63;
    bytes += ((uint64_t)phase_bytes + 63) & ~(uint64_t)63;
    block = (char*)conv_scratch_get(bytes);
    if (block == NULL) return DMLPY_E_OUT_OF_MEMORY;
    cur = (char*)(((uintptr_t)block + 64 + 63) & ~(uintptr_t)63);
    p->xp = (float*)cur;
    cur += (xp_floats * sizeof(float) + 63) & ~(uint64_t)63;
    p->a = (float*)cur;
    cur += (a_floats * sizeof(float) + 63) & ~(uint64_t)63;
    p->tiles = (float*)cur;
    memset(p->tiles, 0, (size_t)tiles_bytes); /* tiles of W phases without outputs are read as 0 */
    cur += (tiles_bytes + 63) & ~(uint64_t)63;
    p->off = (int64_t*)cur;
    cur += (off_count * sizeof(int64_t) + 63) & ~(uint64_t)63;
    p->phases = (conv_phase*)cur;
    build_phases(p);
    if (p->fused) {
        for (i = 0; i < limit; ++i) {
            memset(p->xp + (uint64_t)i * p->xp_worker_floats + p->n_floats, 0,
                   (size_t)(p->xp_worker_floats - p->n_floats) * sizeof(float));
        }
    } else {
        memset(p->xp + (xp_floats - CONV_XP_SLACK), 0, CONV_XP_SLACK * sizeof(float));
    }

    {
        uint64_t pack_items = p->xp_items + p->pack_a_items;
        /* packing moves each element once, with strided reads and transposes: ~1 ns = 16 units each */
        uint64_t pack_work = (p->xp_items ? xp_floats : 0) * 16u + a_floats * 16u;
        unsigned pt = dmlpy_choose_threads(pack_work, pack_items, threadCount);
        if (pt > threads) pt = threads;
        dmlpy_parallel_for(pack_items, dmlpy_choose_grain(pack_items, pt), pt, pack_run, p);
    }
    dmlpy_parallel_for(items, threads <= 1 ? items : 1, threads, p->fused ? compute_run_fused : compute_run, p);
    conv_scratch_put(block);
    return DMLPY_OK;
}

int32_t dmlpy_convolution(const DML_OPERATOR_DESC* desc, UINT inputCount, const DMLPY_BOUND_BUFFER* inputs,
                          UINT outputCount, const DMLPY_BOUND_BUFFER* outputs, UINT threadCount) {
    const DML_CONVOLUTION_OPERATOR_DESC* d;
    conv_plan* p;
    dmlpy_tensor xt, wt, bt, yt;
    int32_t st;
    uint32_t i, dims, shift;
    int has_bias, finite;
    dmlpy_staged_output stage;
    uint64_t outputs_count = 1;
    double macs;

    if (desc == NULL || desc->Desc == NULL) return DMLPY_E_NULL_ARGUMENT;
    d = (const DML_CONVOLUTION_OPERATOR_DESC*)desc->Desc;
    st = check_fields(d);
    if (st != DMLPY_OK) return st;
    if (inputCount != 3 || outputCount != 1) return DMLPY_E_BINDING_COUNT;
    if (inputs == NULL || outputs == NULL) return DMLPY_E_NULL_ARGUMENT;
    dims = d->DimensionCount;

    st = dmlpy_tensor_from_desc(d->InputTensor, &xt);
    if (st != DMLPY_OK) return st;
    st = dmlpy_tensor_from_desc(d->FilterTensor, &wt);
    if (st != DMLPY_OK) return st;
    st = dmlpy_tensor_from_desc(d->OutputTensor, &yt);
    if (st != DMLPY_OK) return st;
    has_bias = d->BiasTensor != NULL;
    if (has_bias) {
        st = dmlpy_tensor_from_desc(d->BiasTensor, &bt);
        if (st != DMLPY_OK) return st;
    } else if (inputs[2].Data != NULL) {
        return DMLPY_E_INVALID_ARGUMENT; /* a buffer bound to the bias slot of a desc without bias */
    }
    if (xt.rank != dims + 2 || wt.rank != dims + 2 || yt.rank != dims + 2) return DMLPY_E_INVALID_DESC;
    if (xt.data_type != DML_TENSOR_DATA_TYPE_FLOAT32 && xt.data_type != DML_TENSOR_DATA_TYPE_FLOAT16) {
        return DMLPY_E_INVALID_DESC;
    }
    if (wt.data_type != xt.data_type || yt.data_type != xt.data_type) return DMLPY_E_INVALID_DESC;
    if (has_bias && (bt.rank != dims + 2 || bt.data_type != xt.data_type)) return DMLPY_E_INVALID_DESC;

    p = (conv_plan*)calloc(1, sizeof *p);
    if (p == NULL) return DMLPY_E_OUT_OF_MEMORY;
    p->backward = d->Direction == DML_CONVOLUTION_DIRECTION_BACKWARD;
    p->flip = d->Mode == DML_CONVOLUTION_MODE_CONVOLUTION;
    p->half = xt.data_type == DML_TENSOR_DATA_TYPE_FLOAT16;
    p->act.kind = DMLPY_ACT_NONE;
    if (d->FusedActivation != NULL) {
        st = dmlpy_activation_read(d->FusedActivation, DMLPY_ACT_FUSED_CLIP, &p->act, NULL, NULL);
        if (st != DMLPY_OK) goto done;
    }
    st = DMLPY_E_INVALID_DESC;
    p->N = xt.sizes[0];
    p->Cin = xt.sizes[1];
    p->Cout = yt.sizes[1];
    p->G = d->GroupCount;
    if (yt.sizes[0] != p->N) goto done;
    if (p->Cin % p->G != 0 || p->Cout % p->G != 0) goto done;
    p->Cin_g = p->Cin / p->G;
    p->Cout_g = p->Cout / p->G;
    if (!p->backward) {
        if (wt.sizes[0] != p->Cout || wt.sizes[1] != p->Cin_g) goto done;
    } else {
        if (wt.sizes[0] != p->Cin || wt.sizes[1] != p->Cout_g) goto done;
    }
    if (has_bias) {
        if (bt.sizes[0] != 1 || bt.sizes[1] != p->Cout) goto done;
        for (i = 2; i < bt.rank; ++i) {
            if (bt.sizes[i] != 1) goto done;
        }
    }

    /* Spatial dims, right-aligned into D, H, W; missing ones have size 1. */
    shift = 3 - dims;
    for (i = 0; i < 3; ++i) {
        conv_dim* dm = &p->dim[i];
        dm->in = dm->out = dm->outc = dm->k = dm->s = dm->d = 1;
        dm->sp = dm->ep = dm->op = 0;
        p->xs[i] = p->ws[i] = p->ys[i] = 0;
    }
    for (i = 0; i < dims; ++i) {
        conv_dim* dm = &p->dim[i + shift];
        uint64_t keff;
        dm->in = xt.sizes[i + 2];
        dm->out = yt.sizes[i + 2];
        dm->k = wt.sizes[i + 2];
        dm->s = d->Strides[i];
        dm->d = d->Dilations[i];
        dm->sp = d->StartPadding[i];
        dm->ep = d->EndPadding[i];
        dm->op = d->OutputPadding[i];
        p->xs[i + shift] = xt.strides[i + 2];
        p->ws[i + shift] = wt.strides[i + 2];
        if (dm->s == 0 || dm->d == 0) goto done;
        keff = (dm->k - 1) * dm->d + 1; /* k, d < 2^32: no overflow */
        if (!p->backward) {
            uint64_t span = dm->in + dm->sp + dm->ep; /* < 2^34 */
            if (span < keff) goto done;
            if (dm->out != (span - keff) / dm->s + 1 + dm->op) goto done;
        } else {
            /* natural = (in-1)*s + keff - sp - ep + op; accepted: natural <= out <= natural + s - 1. */
            uint64_t hi, lo = dm->sp + dm->ep;
            if (!dmlpy_mul_u64(dm->in - 1, dm->s, &hi) || !dmlpy_add_u64(hi, keff, &hi) ||
                !dmlpy_add_u64(hi, dm->op, &hi)) {
                goto done;
            }
            if (hi > dm->out + lo) goto done;             /* out < natural */
            if (dm->out + lo + 1 > hi + dm->s) goto done; /* out > natural + s - 1 */
        }
        dm->outc = dm->out > dm->op ? dm->out - dm->op : 0;
    }
    p->xs_n = xt.strides[0];
    p->xs_c = xt.strides[1];
    p->ws_0 = wt.strides[0];
    p->ws_1 = wt.strides[1];
    p->bs_c = has_bias ? bt.strides[1] : 0;

    /* Bind: every extent inside its buffer; the output overlaps no input. */
    st = dmlpy_tensor_bind(&xt, &inputs[0]);
    if (st != DMLPY_OK) goto done;
    st = dmlpy_tensor_bind(&wt, &inputs[1]);
    if (st != DMLPY_OK) goto done;
    if (has_bias) {
        st = dmlpy_tensor_bind(&bt, &inputs[2]);
        if (st != DMLPY_OK) goto done;
    }
    st = dmlpy_tensor_bind(&yt, &outputs[0]);
    if (st != DMLPY_OK) goto done;
    st = DMLPY_E_INVALID_ARGUMENT;
    if (dmlpy_tensors_overlap(&yt, &xt) || dmlpy_tensors_overlap(&yt, &wt)) goto done;
    if (has_bias && dmlpy_tensors_overlap(&yt, &bt)) goto done;
    st = dmlpy_output_stage(&yt, &stage);
    if (st != DMLPY_OK) goto done;
    p->x = xt.data;
    p->w = wt.data;
    p->b = has_bias ? bt.data : NULL;
    p->y = yt.data;
    /* output strides after staging (packed when staged) */
    p->ys_n = yt.strides[0];
    p->ys_c = yt.strides[1];
    for (i = 0; i < dims; ++i) p->ys[i + shift] = yt.strides[i + 2];
    for (i = 0; i < yt.rank; ++i) outputs_count *= yt.sizes[i];

    /* Multiply-adds (for the thread count). */
    macs = (double)p->N * (double)p->Cout * (double)p->Cin_g;
    for (i = 0; i < 3; ++i) {
        const conv_dim* dm = &p->dim[i];
        macs *= (double)dm->outc * (double)dm->k / (p->backward ? (double)dm->s : 1.0);
    }

#if defined(CONV_AVX512)
    /* Outputs much larger than the caches are written around them. */
    p->nt = !p->half && yt.extent_bytes > CONV_NT_BYTES;
#endif
    /* the fast paths multiply padding zeros by filter taps: an infinite or NaN weight takes the direct path */
    {
        /* the few-positions path first, except where Winograd's fewer multiply-adds win (conv_small.h) */
        const uint64_t positions = p->dim[0].outc * p->dim[1].outc * p->dim[2].outc;
        const conv_dim* H = &p->dim[1];
        const conv_dim* W = &p->dim[2];
        /* a FORWARD problem Winograd cannot take (try_winograd: 3x3, stride 1, dilation 1) goes here first too,
         * so a call the few-positions path takes skips the filter scan (a 1024 x 256 filter: 4% of the call) */
        const int wino_forward = H->k == 3 && W->k == 3 && H->s == 1 && W->s == 1 && H->d == 1 && W->d == 1;
        const int small_first = dims != 2 || positions < CONV_SMALL_WINO_P || (!p->backward && !wino_forward);
        st = small_first ? run_small(p, macs, threadCount) : -1; /* checks its sums, not the filter */
        finite = st < 0 ? filter_is_finite(&wt) : 1;
        if (st < 0 && dims == 2 && finite) st = try_winograd(p, threadCount);
        if (st < 0 && !small_first && finite) st = run_small(p, macs, threadCount);
    }
    if (st < 0 && finite) st = run_fast(p, macs, outputs_count, threadCount);
    if (st < 0) {
        uint64_t rows = p->N * p->Cout * p->dim[0].out * p->dim[1].out;
        uint64_t work = macs * 8.0 > 1.8e19 ? UINT64_MAX : (uint64_t)(macs * 8.0);
        unsigned threads;
        if (!dmlpy_add_u64(work, outputs_count, &work)) work = UINT64_MAX;
        threads = dmlpy_choose_threads(work, rows, threadCount);
        dmlpy_parallel_for(rows, dmlpy_choose_grain(rows, threads), threads, direct_rows, p);
        st = DMLPY_OK;
    }
    dmlpy_output_unstage(&stage, st == DMLPY_OK);

done:
    free(p);
    return st;
}
