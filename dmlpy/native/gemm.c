/*
 * gemm.c - DML_OPERATOR_GEMM (54): Output = FusedActivation(Alpha * TransA(A) x TransB(B) + Beta * C)
 * (the DML_GEMM_OPERATOR_DESC page), FLOAT32 and FLOAT16 (binary16 storage, float32 arithmetic, one
 * rounding at the end), 2 to 8 dims (the leading ones are batch dims whose sizes equal the output's; a
 * broadcast operand has stride 0 there), optional C (its Sizes equal the output's; broadcast by strides),
 * TransA / TransB as swapped strides, any element strides on every tensor.
 *
 *   y[b, m, n] = act(Alpha * sum_k A'[b, m, k] * B'[b, k, n] + Beta * C[b, m, n])
 *
 * where A' = A or A with its last two dims swapped (TransA), B' likewise. Every output is a direct sum
 * over the K real products in float32 (no padding products reach it: packed tails are zero rows and
 * columns of outputs that are not stored), so infinities and NaNs propagate as the formula gives.
 *
 * Blocked path: the convolution's micro-kernels (conv_kernels.h, their constant-row-stride form: an MR x NR
 * tile, MR = 8 rows, NR = 48 columns here, AVX-512 when the variant has it, plain loops the compiler
 * vectorises otherwise). A pass packs A' into MR-row panels (kk-major, a batch group at a time); then work
 * items (batch, run of M blocks, run of NR-column panels) pack their B' panels (K rows of NR floats, zero
 * beyond N) GEMM_PACK_PANELS at a time into a per-worker buffer, and run K in blocks of GEMM_KC steps (one
 * B block in L1 serves every M block of the item), accumulating into a per-worker tile buffer; the epilogue
 * applies Alpha, Beta * C and the activation and stores through the output's strides. A float32 B' with
 * unit column stride is read in place (no packing) when M is small (its rows are read about once). With the
 * AVX-512 kernels, while a pack group runs, the next group's B' rows are brought into L2 a few lines per kernel
 * step and that group is packed by the kernels of its panels' first M block; full tiles of a plain float32
 * output are stored by their last K block's kernel, around the caches when the output is large. On two threads and
 * more the items are small (about 32 per thread) and each thread computes a contiguous segment of them in order,
 * then helps the others from their segments' ends: the threads end within about one item of each other even when one
 * of them starts late or runs slower (a parallel_for of a few large chunks left one thread alone for a chunk's
 * length: 256x768 by 768x3072 scaled 1.8x on two threads).
 *
 * Row-streaming paths (AVX-512, M of at most 4: matrix-vector products): a float32 B' with unit column stride is
 * read once in its memory order, the same block sums and running sums as the tile kernels (same bits); a B' with
 * unit k stride (TransB of a row-major B) by dot products, whose block sums are formed in another fixed order.
 *
 * Direct path: one output at a time in float32 with no scratch, for problems whose scratch would exceed
 * GEMM_SCRATCH_CAP.
 */
#include <stdlib.h>
#include <string.h>

/* GEMM tiles are 8 x 48 (24 accumulators, 3 B vectors per k step), as the convolution's. */
#define CONV_NV 3
#include "conv_kernels.h"
#include "conv_shared.h"

#ifndef GEMM_KC
#define GEMM_KC 160 /* K steps per block: a B block of GEMM_KC x NR floats (30 KB) stays in L1 */
#endif
#ifndef GEMM_MC_FLOATS
#define GEMM_MC_FLOATS ((uint64_t)256 << 10) /* floats of packed A one item runs over (1 MB: stays in L2) */
#endif
#ifndef GEMM_A_GROUP_FLOATS
#define GEMM_A_GROUP_FLOATS ((uint64_t)8 << 20) /* floats of packed A per batch group (32 MB) */
#endif
#ifndef GEMM_SCRATCH_CAP
#define GEMM_SCRATCH_CAP ((uint64_t)1 << 31) /* bytes of scratch at most; beyond: direct path */
#endif
#ifndef GEMM_DIRECT_B_ROWS
#define GEMM_DIRECT_B_ROWS 16 /* M up to this reads a float32 unit-column-stride B in place */
#endif
#ifndef GEMM_PACK_PF
#define GEMM_PACK_PF 8 /* B rows ahead the panel packing prefetches */
#endif
#ifndef GEMM_MAX_MB_PER_ITEM
#define GEMM_MAX_MB_PER_ITEM 64 /* M blocks per item at most (a 96 KB tile buffer) */
#endif
#ifndef GEMM_PACK_PANELS
#define GEMM_PACK_PANELS 8 /* B' panels packed together (a row's run of 8 x 48 elements read at once) */
#endif
#ifndef GEMM_STREAM
#define GEMM_STREAM 1
#endif
#ifndef GEMM_FUSED
#define GEMM_FUSED 1 /* a streamed group is packed by its first M block's kernels (where those exist: AVX-512) */
#endif
#ifndef GEMM_MB_SUB
#define GEMM_MB_SUB 8 /* M blocks whose tiles (8 x 1.5 KB) share L1 with a B block (30 KB) */
#endif
#ifndef GEMM_CHUNKS_PER_THREAD
#define GEMM_CHUNKS_PER_THREAD 2u /* without segments (no GCC atomics): parallel_for chunks per thread */
#endif
#ifndef GEMM_NT_BYTES
#define GEMM_NT_BYTES ((uint64_t)2 << 20) /* outputs of this size and more are stored around the caches */
#endif
#ifndef GEMM_ITEMS_PER_THREAD
#define GEMM_ITEMS_PER_THREAD 32 /* small items: a thread that runs out takes one another thread has not started */
#endif
#if (defined(__GNUC__) || defined(__clang__)) && !defined(GEMM_NO_SEGMENTS)
#define GEMM_SEGMENTS 1
#endif
#define GEMM_SEG_WORDS 8 /* 64 bytes: a segment's word on a line of its own */

typedef struct gemm_plan {
    int half;
    dmlpy_act act;
    float alpha, beta;
    uint64_t M, N, K;
    uint32_t nbd;                    /* batch dims (rank - 2) */
    uint64_t bsize[DMLPY_MAX_RANK];  /* batch sizes */
    uint64_t as_b[DMLPY_MAX_RANK], bs_b[DMLPY_MAX_RANK], cs_b[DMLPY_MAX_RANK], ys_b[DMLPY_MAX_RANK];
    uint64_t batch;                  /* product of the batch sizes */
    uint64_t as_m, as_k, bs_k, bs_n, cs_m, cs_n, ys_m, ys_n;
    const char* a;
    const char* b;
    const char* c; /* NULL: no C */
    char* y;

    /* blocked path */
    uint64_t mblocks;   /* ceil(M / MR) */
    unsigned mr_tail;   /* width of the last M block (1, 2, 4 or 8) */
    uint64_t a_floats;  /* packed A of one batch: mblocks * MR * K (the tail panel is narrower, padded) */
    uint64_t npanels;   /* ceil(N / NR) */
    uint64_t mb_per_item, m_items;
    uint64_t panels_per_item, n_items;
    uint64_t b0, nbatch; /* the batch group being computed */
    int direct_b;        /* B' read in place (full panels) */
    float* ap;           /* packed A of the group */
    float* bp;           /* per-worker B panel (K x NR) */
    float* tiles;        /* per-worker tile buffer (mb_per_item x MR x NR) */
    uint64_t tile_floats;
    int nt_out; /* output stored around the caches (much larger than L2: the packed operands stay cached) */
    uint64_t* segs; /* NULL: items handed out in chunks; else the threads' segments (GEMM_SEG_WORDS words each) */
    unsigned nsegs;
} gemm_plan;

/* Element offsets of batch b in A, B, C and the output. */
static void batch_offsets(const gemm_plan* p, uint64_t b, uint64_t* ao, uint64_t* bo, uint64_t* co, uint64_t* yo) {
    uint64_t a = 0, bb = 0, c = 0, y = 0;
    uint32_t i = p->nbd;
    while (i-- > 0) {
        const uint64_t idx = b % p->bsize[i];
        b /= p->bsize[i];
        a += idx * p->as_b[i];
        bb += idx * p->bs_b[i];
        c += idx * p->cs_b[i];
        y += idx * p->ys_b[i];
    }
    *ao = a;
    *bo = bb;
    *co = c;
    *yo = y;
}

static inline unsigned gemm_block_width(const gemm_plan* p, uint64_t mb) {
    return mb + 1 < p->mblocks ? CONV_MR : p->mr_tail;
}

CONV_INLINE float finish_scalar(const gemm_plan* p, float acc, uint64_t ci) {
    float v = p->alpha * acc;
    if (p->c != NULL) v += p->beta * load_elem(p->half, p->c, ci);
    return dmlpy_act_scalar(&p->act, v);
}

/* ---- direct path ----------------------------------------------------------------------------------- */

/* Output rows (b, m), every n. */
static void direct_rows(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    const gemm_plan* p = (const gemm_plan*)vp;
    uint64_t row, n, k;
    (void)worker;
    for (row = begin; row < end; ++row) {
        const uint64_t m = row % p->M, b = row / p->M;
        uint64_t ao, bo, co, yo;
        batch_offsets(p, b, &ao, &bo, &co, &yo);
        for (n = 0; n < p->N; ++n) {
            float acc = 0.0f;
            for (k = 0; k < p->K; ++k) {
                acc += load_elem(p->half, p->a, ao + m * p->as_m + k * p->as_k) *
                       load_elem(p->half, p->b, bo + k * p->bs_k + n * p->bs_n);
            }
            store_elem(p->half, p->y, yo + m * p->ys_m + n * p->ys_n, finish_scalar(p, acc, co + m * p->cs_m + n * p->cs_n));
        }
    }
}

/* ---- packing ------------------------------------------------------------------------------------- */

/* A pack item: (batch of the group, M block). Panel[kk][m] = A'[m0 + m, kk], rows beyond M zero. */
static void pack_a_run(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    const gemm_plan* p = (const gemm_plan*)vp;
    uint64_t item;
    (void)worker;
    for (item = begin; item < end; ++item) {
        const uint64_t mb = item % p->mblocks, bl = item / p->mblocks;
        const unsigned width = gemm_block_width(p, mb);
        float* panel = p->ap + bl * p->a_floats + mb * CONV_MR * p->K;
        uint64_t ao, bo, co, yo, kk;
        unsigned m;
        batch_offsets(p, p->b0 + bl, &ao, &bo, &co, &yo);
#if defined(CONV_AVX512)
        if (!p->half && p->as_k == 1 && width == 8 && mb * CONV_MR + 8 <= p->M) {
            /* eight float32 rows with unit K stride: 8 x 8 blocks transposed in registers */
            const float* src = (const float*)p->a + ao + mb * CONV_MR * p->as_m;
            const uint64_t sm = p->as_m;
            for (kk = 0; kk + 8 <= p->K; kk += 8) {
                const float* s0 = src + kk;
                const __m256 r0 = _mm256_loadu_ps(s0), r1 = _mm256_loadu_ps(s0 + sm), r2 = _mm256_loadu_ps(s0 + 2 * sm);
                const __m256 r3 = _mm256_loadu_ps(s0 + 3 * sm), r4 = _mm256_loadu_ps(s0 + 4 * sm), r5 = _mm256_loadu_ps(s0 + 5 * sm);
                const __m256 r6 = _mm256_loadu_ps(s0 + 6 * sm), r7 = _mm256_loadu_ps(s0 + 7 * sm);
                const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
                const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
                const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
                const __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
                const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
                const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
                const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
                const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
                float* d = panel + kk * 8;
                _mm256_storeu_ps(d, _mm256_permute2f128_ps(u0, u4, 0x20));
                _mm256_storeu_ps(d + 8, _mm256_permute2f128_ps(u1, u5, 0x20));
                _mm256_storeu_ps(d + 16, _mm256_permute2f128_ps(u2, u6, 0x20));
                _mm256_storeu_ps(d + 24, _mm256_permute2f128_ps(u3, u7, 0x20));
                _mm256_storeu_ps(d + 32, _mm256_permute2f128_ps(u0, u4, 0x31));
                _mm256_storeu_ps(d + 40, _mm256_permute2f128_ps(u1, u5, 0x31));
                _mm256_storeu_ps(d + 48, _mm256_permute2f128_ps(u2, u6, 0x31));
                _mm256_storeu_ps(d + 56, _mm256_permute2f128_ps(u3, u7, 0x31));
            }
            for (; kk < p->K; ++kk) {
                for (m = 0; m < 8; ++m) panel[kk * 8 + m] = src[m * sm + kk];
            }
            continue;
        }
#endif
        for (m = 0; m < width; ++m) {
            const uint64_t row = mb * CONV_MR + m;
            float* dst = panel + m;
            if (row >= p->M) {
                for (kk = 0; kk < p->K; ++kk) dst[kk * width] = 0.0f;
                continue;
            }
            {
                const uint64_t base = ao + row * p->as_m;
                if (p->half) {
                    const uint16_t* src = (const uint16_t*)p->a + base;
                    for (kk = 0; kk < p->K; ++kk) dst[kk * width] = dmlpy_h2f(src[kk * p->as_k]);
                } else {
                    const float* src = (const float*)p->a + base;
                    for (kk = 0; kk < p->K; ++kk) dst[kk * width] = src[kk * p->as_k];
                }
            }
        }
    }
}

#if defined(CONV_AVX512)
/* B' of a TransB operand (unit k stride: B' column n is B's row n) 16 columns at a time: r[i] = B'[k .. k + 16, col i]
 * for the `valid` columns (their first elements at b + si[i]), the k lanes in `km`, zero elsewhere; then transposed
 * in registers (unpack, then 32- and 128-bit lane shuffles), so that r[t] = B'[k + t][the 16 columns]. */
CONV_INLINE void gemm_bt_load16(const gemm_plan* p, const uint64_t* si, unsigned valid, uint64_t k, __mmask16 km, __m512* r) {
    unsigned i;
    if (valid == 16 && !p->half) {
        for (i = 0; i < 16; ++i) r[i] = _mm512_maskz_loadu_ps(km, (const float*)p->b + si[i] + k);
        return;
    }
    for (i = 0; i < 16; ++i) {
        if (i >= valid) {
            r[i] = _mm512_setzero_ps();
        } else if (p->half) {
            r[i] = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(km, (const uint16_t*)p->b + si[i] + k));
        } else {
            r[i] = _mm512_maskz_loadu_ps(km, (const float*)p->b + si[i] + k);
        }
    }
}

CONV_INLINE void gemm_transpose16(__m512* r) {
    __m512 t[16], u[16];
    unsigned i, c;
    for (i = 0; i < 8; ++i) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);     /* per 128-bit lane L: r0[4L], r1[4L], r0[4L+1], r1[4L+1] */
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]); /* r0[4L+2], r1[4L+2], r0[4L+3], r1[4L+3] */
    }
    for (i = 0; i < 4; ++i) { /* u[4g + c], lane L: rows 4g .. 4g + 3 at column 4L + c */
        u[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        u[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        u[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        u[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (c = 0; c < 4; ++c) { /* column 4L + c: lane L of u[c], u[4 + c], u[8 + c], u[12 + c] into lanes 0 .. 3 */
        const __m512 v0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88), v1 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xDD);
        const __m512 v2 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88), v3 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xDD);
        r[c] = _mm512_shuffle_f32x4(v0, v2, 0x88);
        r[8 + c] = _mm512_shuffle_f32x4(v0, v2, 0xDD);
        r[4 + c] = _mm512_shuffle_f32x4(v1, v3, 0x88);
        r[12 + c] = _mm512_shuffle_f32x4(v1, v3, 0xDD);
    }
}
#endif

/* B' panels n0 / NR .. + np - 1 (columns n0 .. n0 + np * NR - 1, zero beyond N) of the batch at element offset bo,
 * panel q at dst + q * K * NR: K rows of NR floats each. With a unit column stride each B' row's run over all np
 * panels is read at once (np * NR contiguous elements), so the rows' pages are visited np times less often. */
static void pack_b_panels(const gemm_plan* p, float* restrict dst, uint64_t bo, uint64_t n0, uint64_t np) {
    const uint64_t span = p->N - n0 < np * CONV_NR ? p->N - n0 : np * CONV_NR;
    const uint64_t panel_floats = p->K * CONV_NR;
    uint64_t kk, j, q;
    if (p->bs_n == 1) {
        for (kk = 0; kk < p->K; ++kk) {
            const uint64_t si = bo + kk * p->bs_k + n0;
#if defined(CONV_AVX512)
            if (kk + GEMM_PACK_PF < p->K) {
                /* rows far apart: each its own page, which the hardware prefetchers do not follow */
                const uint64_t es = p->half ? 2 : 4;
                const char* ahead = p->b + (si + GEMM_PACK_PF * p->bs_k) * es;
                uint64_t off;
                for (off = 0; off < span * es; off += 64) _mm_prefetch(ahead + off, _MM_HINT_T0);
                _mm_prefetch(ahead + span * es - 1, _MM_HINT_T0);
            }
            for (q = 0; q < np; ++q) {
                float* d = dst + q * panel_floats + kk * CONV_NR;
                for (j = 0; j < CONV_NR; j += 16) {
                    const uint64_t col = q * CONV_NR + j;
                    const __mmask16 mk = col < span ? mask_n(span - col) : 0;
                    if (p->half) {
                        _mm512_store_ps(d + j, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mk, (const uint16_t*)p->b + si + col)));
                    } else {
                        _mm512_store_ps(d + j, _mm512_maskz_loadu_ps(mk, (const float*)p->b + si + col));
                    }
                }
            }
#else
            for (q = 0; q < np; ++q) {
                float* d = dst + q * panel_floats + kk * CONV_NR;
                const uint64_t c0 = q * CONV_NR, cols = span > c0 ? (span - c0 < CONV_NR ? span - c0 : CONV_NR) : 0;
                if (p->half) {
                    dmlpy_h2f_row(d, (const uint16_t*)p->b + si + c0, (size_t)cols);
                } else if (cols) {
                    memcpy(d, (const float*)p->b + si + c0, (size_t)cols * sizeof(float));
                }
                for (j = cols; j < CONV_NR; ++j) d[j] = 0.0f;
            }
#endif
        }
        return;
    }
#if defined(CONV_AVX512)
    if (p->bs_k == 1) { /* TransB of a row-major B: 16 of its rows read together and transposed in registers */
        for (q = 0; q < np; ++q) {
            for (j = 0; j < CONV_NR; j += 16) {
                const uint64_t col = q * CONV_NR + j;
                const unsigned valid = col < span ? (unsigned)(span - col < 16 ? span - col : 16) : 0;
                float* d = dst + q * panel_floats + j;
                uint64_t si[16];
                unsigned i, t;
                for (i = 0; i < valid; ++i) si[i] = bo + (n0 + col + i) * p->bs_n;
                for (kk = 0; kk < p->K; kk += 16) {
                    const unsigned steps = p->K - kk < 16 ? (unsigned)(p->K - kk) : 16;
                    __m512 r[16];
                    if (valid == 0) {
                        for (t = 0; t < steps; ++t) _mm512_store_ps(d + (kk + t) * CONV_NR, _mm512_setzero_ps());
                        continue;
                    }
                    gemm_bt_load16(p, si, valid, kk, mask_n(steps), r);
                    gemm_transpose16(r);
                    for (t = 0; t < steps; ++t) _mm512_store_ps(d + (kk + t) * CONV_NR, r[t]);
                }
            }
        }
        return;
    }
#endif
    /* strided columns: column by column */
    for (q = 0; q < np; ++q) {
        for (j = 0; j < CONV_NR; ++j) {
            float* d = dst + q * panel_floats + j;
            const uint64_t col = q * CONV_NR + j;
            if (col >= span) {
                for (kk = 0; kk < p->K; ++kk) d[kk * CONV_NR] = 0.0f;
                continue;
            }
            {
                const uint64_t si = bo + (n0 + col) * p->bs_n;
                if (p->half) {
                    const uint16_t* src = (const uint16_t*)p->b + si;
                    for (kk = 0; kk < p->K; ++kk) d[kk * CONV_NR] = dmlpy_h2f(src[kk * p->bs_k]);
                } else {
                    const float* src = (const float*)p->b + si;
                    for (kk = 0; kk < p->K; ++kk) d[kk * CONV_NR] = src[kk * p->bs_k];
                }
            }
        }
    }
}

/* Asks for the output lines rows m0 .. m0 + rows - 1, columns n0 .. n0 + cols - 1 will be stored to (for
 * writing), long before the epilogue stores them, so the stores do not wait for their lines. */
static void prefetch_outputs(const gemm_plan* p, uint64_t m0, unsigned rows, uint64_t n0, uint64_t cols, uint64_t yo) {
#if defined(__GNUC__) || defined(__clang__)
    const uint64_t es = p->half ? 2 : 4;
    unsigned m;
    for (m = 0; m < rows && m0 + m < p->M; ++m) {
        const char* row = p->y + (yo + (m0 + m) * p->ys_m + n0) * es;
        uint64_t off;
        for (off = 0; off < cols * es; off += 64) __builtin_prefetch(row + off, 0, 2);
        __builtin_prefetch(row + cols * es - 1, 0, 2);
    }
#else
    (void)p;
    (void)m0;
    (void)rows;
    (void)n0;
    (void)cols;
    (void)yo;
#endif
}

/* ---- epilogue ------------------------------------------------------------------------------------ */

/* Rows [0, rows) of tile T (row m at T + m*ts, 64-byte aligned), columns [0, cols): output rows m0 + m, columns n0 + j. */
static void epilogue(const gemm_plan* p, const float* T, uint64_t ts, unsigned rows, uint64_t cols, uint64_t m0, uint64_t n0,
                     uint64_t co, uint64_t yo) {
    unsigned m;
    uint64_t j;
#if defined(CONV_AVX512)
    if (p->ys_n == 1) {
        const __m512 alpha = _mm512_set1_ps(p->alpha), beta = _mm512_set1_ps(p->beta), zero = _mm512_setzero_ps();
        const int plain = p->act.kind == DMLPY_ACT_NONE || p->act.kind == DMLPY_ACT_IDENTITY;
        if (plain && p->c == NULL && !p->half) { /* the common case: Alpha * sum, stored */
            for (m = 0; m < rows; ++m) {
                float* yrow = (float*)p->y + yo + (m0 + m) * p->ys_m + n0;
                const float* trow = T + m * ts;
                if (p->nt_out && ((uintptr_t)yrow & 63) == 0) {
                    for (j = 0; j + 16 <= cols; j += 16) _mm512_stream_ps(yrow + j, _mm512_mul_ps(alpha, _mm512_load_ps(trow + j)));
                } else {
                    for (j = 0; j + 16 <= cols; j += 16) _mm512_storeu_ps(yrow + j, _mm512_mul_ps(alpha, _mm512_load_ps(trow + j)));
                }
                if (j < cols) _mm512_mask_storeu_ps(yrow + j, mask_n(cols - j), _mm512_mul_ps(alpha, _mm512_load_ps(trow + j)));
            }
            return;
        }
        for (m = 0; m < rows; ++m) {
            const uint64_t yrow = yo + (m0 + m) * p->ys_m + n0, crow = co + (m0 + m) * p->cs_m + n0 * p->cs_n;
            for (j = 0; j < cols; j += 16) {
                const __mmask16 mk = mask_n(cols - j);
                __m512 v = _mm512_mul_ps(alpha, _mm512_load_ps(T + m * ts + j));
                if (p->c != NULL) {
                    __m512 cv;
                    if (p->cs_n == 1) {
                        cv = p->half ? _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mk, (const uint16_t*)p->c + crow + j))
                                     : _mm512_maskz_loadu_ps(mk, (const float*)p->c + crow + j);
                    } else {
                        float tmp[16];
                        uint64_t t;
                        for (t = 0; t < 16; ++t) tmp[t] = j + t < cols ? load_elem(p->half, p->c, crow + (j + t) * p->cs_n) : 0.0f;
                        cv = _mm512_loadu_ps(tmp);
                    }
                    v = _mm512_add_ps(v, _mm512_mul_ps(beta, cv)); /* rounded as the scalar path rounds it */
                }
                if (!plain) v = finish_vec(&p->act, v, zero);
                store_vec(p->half, 0, p->y, yrow + j, v, mk);
            }
        }
        return;
    }
#endif
    for (m = 0; m < rows; ++m) {
        const uint64_t yrow = yo + (m0 + m) * p->ys_m, crow = co + (m0 + m) * p->cs_m;
        for (j = 0; j < cols; ++j) {
            store_elem(p->half, p->y, yrow + (n0 + j) * p->ys_n, finish_scalar(p, T[m * ts + j], crow + (n0 + j) * p->cs_n));
        }
    }
}

/* ---- compute items ------------------------------------------------------------------------------- */

/* A stream of cache lines to bring into L2 a few per kernel step: B' rows (rs bytes apart) of the next pack group,
 * `lines` lines from each row's 64-byte aligned start. */
typedef struct gemm_pf {
    const char* row; /* current row's first line */
    uint64_t col;    /* next line of it */
    uint64_t lines;  /* lines per row */
    uint64_t rs;     /* row stride in bytes */
    uint64_t left;   /* lines still to ask for */
    uint64_t quota;  /* lines per kernel call */
} gemm_pf;

#if defined(CONV_AVX512) && CONV_NV == 3 && DMLPY_V16 == 1 /* (AVX2: conv_kernels.h's sub-tiles instead) */
/* The full 8 x 48 tile over B rows ldb floats apart, as kernel_ld_8 computes it (the same products in the same
 * order), which also asks for up to n lines of the prefetch stream, one per k step, and, with pack, copies the B
 * rows it reads into the packed panel P (rows of CONV_NR floats): the panel's first M block packs it from the
 * source rows the stream brought into L2, so no separate packing pass waits on memory. */
typedef struct gemm_out {
    float* y;    /* the tile's first output */
    uint64_t ys; /* row stride in floats */
    float alpha;
    int nt;      /* streaming stores (y and ys 64-byte aligned) */
} gemm_out;
#define ROW_OUT(m)                                                                                           \
    _mm512_storeu_ps(Y + m * ys, _mm512_mul_ps(al, c##m##a));                                               \
    _mm512_storeu_ps(Y + m * ys + 16, _mm512_mul_ps(al, c##m##b));                                          \
    _mm512_storeu_ps(Y + m * ys + 32, _mm512_mul_ps(al, c##m##c));
#define ROW_OUT_NT(m)                                                                                        \
    _mm512_stream_ps(Y + m * ys, _mm512_mul_ps(al, c##m##a));                                               \
    _mm512_stream_ps(Y + m * ys + 16, _mm512_mul_ps(al, c##m##b));                                          \
    _mm512_stream_ps(Y + m * ys + 32, _mm512_mul_ps(al, c##m##c));
#define GEMM_KERNEL_BODY(PACK)                                                                               \
    {                                                                                                        \
        uint64_t kk, used = n < K ? (n < pf->left ? n : pf->left) : (K < pf->left ? K : pf->left);            \
        const char* pr = pf->row;                                                                            \
        uint64_t col = pf->col;                                                                              \
        const float* x1 = x0 + 16;                                                                           \
        const float* x2 = x0 + 32;                                                                           \
        ROWS_8(ROW_DECL)                                                                                     \
        CONV_UNROLL                                                                                          \
        for (kk = 0; kk < K; ++kk) {                                                                         \
            const float* a = A + kk * 8;                                                                     \
            if (kk < used) {                                                                                 \
                _mm_prefetch(pr + col * 64, _MM_HINT_T1);                                                    \
                if (++col == pf->lines) {                                                                    \
                    col = 0;                                                                                 \
                    pr += pf->rs;                                                                            \
                }                                                                                            \
            }                                                                                                \
            B_LOAD(kk * ldb)                                                                                 \
            if (PACK) {                                                                                      \
                _mm512_store_ps(P + kk * CONV_NR, b0);                                                       \
                _mm512_store_ps(P + kk * CONV_NR + 16, b1);                                                  \
                _mm512_store_ps(P + kk * CONV_NR + 32, b2);                                                  \
            }                                                                                                \
            ROWS_8(ROW_FMA)                                                                                  \
        }                                                                                                    \
        if (acc) {                                                                                           \
            ROWS_8(ROW_ADD)                                                                                  \
        }                                                                                                    \
        if (out != NULL) { /* the last K block of a plain float32 output: Alpha * sum stored, as the epilogue */ \
            const __m512 al = _mm512_set1_ps(out->alpha);                                                    \
            float* Y = out->y;                                                                               \
            const uint64_t ys = out->ys;                                                                     \
            if (out->nt) {                                                                                   \
                ROWS_8(ROW_OUT_NT)                                                                           \
            } else {                                                                                         \
                ROWS_8(ROW_OUT)                                                                              \
            }                                                                                                \
        } else {                                                                                             \
            ROWS_8(ROW_STORE)                                                                                \
        }                                                                                                    \
        pf->row = pr;                                                                                        \
        pf->col = col;                                                                                       \
        pf->left -= used;                                                                                    \
    }

static void gemm_kernel_8(uint64_t K, const float* restrict A, const float* x0, uint64_t ldb, float* restrict C, int acc,
                          gemm_pf* pf, uint64_t n, const gemm_out* out) {
    float* P = NULL;
    (void)P;
    GEMM_KERNEL_BODY(0)
}

static void gemm_kernel_8_pack(uint64_t K, const float* restrict A, const float* x0, uint64_t ldb, float* restrict P,
                               float* restrict C, int acc, gemm_pf* pf, uint64_t n, const gemm_out* out) {
    GEMM_KERNEL_BODY(1)
}
/* A last panel of at most 32 real columns (N % 48 of 1 .. 32: 64 or 197 columns, attention's): the 8-row tile over
 * only its first 1 or 2 vectors of B, a third or two thirds of the full kernel's multiply-adds; each column's
 * products are the same and in the same order, so the same bits (the tile's other columns are not stored). */
#define GEMM_NARROW_KERNEL(NAME, NVN)                                                                          \
    static void NAME(uint64_t K, const float* restrict A, const float* x0, uint64_t ldb, float* restrict C, int acc) { \
        __m512 c[8][NVN];                                                                                      \
        unsigned m, v;                                                                                         \
        uint64_t kk;                                                                                           \
        for (m = 0; m < 8; ++m)                                                                                \
            for (v = 0; v < NVN; ++v) c[m][v] = _mm512_setzero_ps();                                           \
        for (kk = 0; kk < K; ++kk) {                                                                           \
            const float* a = A + kk * 8;                                                                       \
            __m512 b[NVN];                                                                                     \
            for (v = 0; v < NVN; ++v) b[v] = _mm512_loadu_ps(x0 + kk * ldb + 16 * v);                          \
            for (m = 0; m < 8; ++m) {                                                                          \
                const __m512 av = _mm512_set1_ps(a[m]);                                                        \
                for (v = 0; v < NVN; ++v) c[m][v] = _mm512_fmadd_ps(av, b[v], c[m][v]);                        \
            }                                                                                                  \
        }                                                                                                      \
        for (m = 0; m < 8; ++m) {                                                                              \
            for (v = 0; v < NVN; ++v) {                                                                        \
                if (acc) c[m][v] = _mm512_add_ps(c[m][v], _mm512_load_ps(C + m * CONV_NR + 16 * v));            \
                _mm512_store_ps(C + m * CONV_NR + 16 * v, c[m][v]);                                             \
            }                                                                                                  \
        }                                                                                                      \
    }
GEMM_NARROW_KERNEL(gemm_kernel_8x16, 1)
GEMM_NARROW_KERNEL(gemm_kernel_8x32, 2)
#define GEMM_FUSED_KERNELS 1
#define GEMM_CAN_FUSE GEMM_FUSED
#else
#define GEMM_CAN_FUSE 0
#endif

/* Asks for the stream's next n lines at once (what a kernel call did not take). */
static void gemm_pf_burst(gemm_pf* pf, uint64_t n) {
    if (n > pf->left) n = pf->left;
    pf->left -= n;
    while (n--) {
#if defined(__GNUC__) || defined(__clang__)
        __builtin_prefetch(pf->row + pf->col * 64, 0, 2);
#endif
        if (++pf->col == pf->lines) {
            pf->col = 0;
            pf->row += pf->rs;
        }
    }
}

/* Decodes item into its batch of the group, M block range, panel range and element offsets. */
typedef struct gemm_item {
    uint64_t bl, mb0, mb1, pn0, pn1, ao, bo, co, yo;
} gemm_item;

static void gemm_item_decode(const gemm_plan* p, uint64_t item, gemm_item* it) {
    const uint64_t ni = item % p->n_items, mi = (item / p->n_items) % p->m_items;
    it->bl = item / p->n_items / p->m_items;
    it->mb0 = mi * p->mb_per_item;
    it->mb1 = it->mb0 + p->mb_per_item < p->mblocks ? it->mb0 + p->mb_per_item : p->mblocks;
    it->pn0 = ni * p->panels_per_item;
    it->pn1 = it->pn0 + p->panels_per_item < p->npanels ? it->pn0 + p->panels_per_item : p->npanels;
    batch_offsets(p, p->b0 + it->bl, &it->ao, &it->bo, &it->co, &it->yo);
}

/* Items begin .. end - 1 (batch of the group, run of M blocks, run of panels), panels GEMM_PACK_PANELS at a time
 * (a pack group). While a group runs, the next group of the range (in this item or the next) has its B' rows
 * brought into L2 a few lines per kernel step; that group is then packed by the kernels of its panels' first M
 * block (fused), instead of by a pass that waits on memory (the range's first group is packed that way). */
/* Where a thread's items come from: a range of items (a parallel_for chunk), or the shared segments (slot). */
typedef struct gemm_src {
    uint64_t next, end; /* the range */
    unsigned slot;      /* the segments: this thread's own */
    int segmented;
} gemm_src;

#if defined(GEMM_SEGMENTS)
/* The thread of slot s computes segment s (items s * n / T .. (s + 1) * n / T - 1) from its front; a thread whose
 * segment is done takes items from the back of the segment with the most left. Each segment's (front << 32 | back)
 * is one 64-bit word on a line of its own. */
static int gemm_claim(const gemm_plan* p, unsigned slot, int own_only, uint64_t* item) {
    uint64_t* own = &p->segs[(uint64_t)slot * GEMM_SEG_WORDS];
    uint64_t cur = __atomic_load_n(own, __ATOMIC_RELAXED);
    while ((cur >> 32) < (cur & 0xffffffffu)) {
        if (__atomic_compare_exchange_n(own, &cur, cur + ((uint64_t)1 << 32), 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
            *item = cur >> 32;
            return 1;
        }
    }
    if (own_only) return 0;
    for (;;) {
        uint64_t most = 0, c;
        unsigned t, best = 0;
        for (t = 0; t < p->nsegs; ++t) {
            c = __atomic_load_n(&p->segs[(uint64_t)t * GEMM_SEG_WORDS], __ATOMIC_RELAXED);
            if ((c & 0xffffffffu) > (c >> 32) && (c & 0xffffffffu) - (c >> 32) > most) {
                most = (c & 0xffffffffu) - (c >> 32);
                best = t;
            }
        }
        if (most == 0) return 0;
        {
            uint64_t* seg = &p->segs[(uint64_t)best * GEMM_SEG_WORDS];
            c = __atomic_load_n(seg, __ATOMIC_RELAXED);
            while ((c & 0xffffffffu) > (c >> 32)) {
                if (__atomic_compare_exchange_n(seg, &c, c - 1, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
                    *item = (c & 0xffffffffu) - 1;
                    return 1;
                }
            }
        }
    }
}
#endif

/* The next item of src (ahead: only one that need not be taken from another thread: one taken ahead of its turn
 * is this thread's, and the others' items are taken only when this thread has nothing left to compute). */
static int gemm_take(const gemm_plan* p, gemm_src* src, int ahead, uint64_t* item) {
#if defined(GEMM_SEGMENTS)
    if (src->segmented) return gemm_claim(p, src->slot, ahead, item);
#else
    (void)p;
#endif
    (void)ahead;
    if (src->next >= src->end) return 0;
    *item = src->next++;
    return 1;
}

static void compute_items(const gemm_plan* p, gemm_src* src, unsigned worker);

static void compute_run(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    const gemm_plan* p = (const gemm_plan*)vp;
    gemm_src src;
    src.segmented = p->segs != NULL;
    if (src.segmented) { /* slots begin .. end - 1 (one each, unless a thread of the pool did not come) */
        src.next = src.end = 0;
        for (src.slot = (unsigned)begin; src.slot < end; ++src.slot) compute_items(p, &src, worker);
    } else {
        src.next = begin;
        src.end = end;
        src.slot = 0;
        compute_items(p, &src, worker);
    }
#if defined(CONV_AVX512)
    if (p->nt_out) _mm_sfence(); /* the streamed stores are visible before the caller joins */
#endif
}

/* The items of src, each next one taken when the current one starts (so its rows can be streamed meanwhile). */
static void compute_items(const gemm_plan* p, gemm_src* src, unsigned worker) {
    float* bp = p->bp + (uint64_t)worker * p->K * CONV_NR * GEMM_PACK_PANELS;
    float* T = p->tiles + (uint64_t)worker * p->tile_floats;
    const uint64_t nkb = (p->K + GEMM_KC - 1) / GEMM_KC;
    const uint64_t es = p->half ? 2 : 4;
    const int stream = GEMM_STREAM && !p->direct_b && p->bs_n == 1;
    const int plain_out = (p->act.kind == DMLPY_ACT_NONE || p->act.kind == DMLPY_ACT_IDENTITY) && p->c == NULL && !p->half &&
                          p->ys_n == 1;
    int warm = 0; /* the current group's rows were streamed into L2 */
    uint64_t item;
    int have_item;
    gemm_item it, nx;
    gemm_pf pf;
    memset(&pf, 0, sizeof pf);
    have_item = gemm_take(p, src, 0, &item);
    if (have_item) gemm_item_decode(p, item, &it);
    while (have_item) {
        const float* ag = p->ap + it.bl * p->a_floats;
        uint64_t g0;
        int have_next_item = gemm_take(p, src, 1, &item);
        if (have_next_item) gemm_item_decode(p, item, &nx);
        for (g0 = it.pn0; g0 < it.pn1; g0 += GEMM_PACK_PANELS) {
            const uint64_t np = it.pn1 - g0 < GEMM_PACK_PANELS ? it.pn1 - g0 : GEMM_PACK_PANELS;
            const int packed = !p->direct_b && !warm; /* the whole group packed up front */
            uint64_t pn;
            if (packed) pack_b_panels(p, bp, it.bo, g0 * CONV_NR, np);
            /* the stream of the next group's rows */
            pf.left = 0;
            if (stream && (g0 + np < it.pn1 || have_next_item)) {
                const uint64_t ng0 = g0 + np < it.pn1 ? g0 + np : nx.pn0;
                const uint64_t npn1 = g0 + np < it.pn1 ? it.pn1 : nx.pn1;
                const uint64_t nbo = g0 + np < it.pn1 ? it.bo : nx.bo;
                const uint64_t nn0 = ng0 * CONV_NR;
                const uint64_t nnp = npn1 - ng0 < GEMM_PACK_PANELS ? npn1 - ng0 : GEMM_PACK_PANELS;
                const uint64_t span = (p->N - nn0 < nnp * CONV_NR ? p->N - nn0 : nnp * CONV_NR) * es;
                const uintptr_t start = (uintptr_t)(p->b + (nbo + nn0) * es);
                const uint64_t calls = np * nkb * (it.mb1 - it.mb0);
                pf.row = (const char*)(start & ~(uintptr_t)63);
                pf.col = 0;
                pf.rs = p->bs_k * es;
                pf.lines = (span + (start & 63) + 63) / 64 + ((pf.rs & 63) != 0);
                pf.left = pf.lines * p->K;
                pf.quota = (pf.left + calls - 1) / calls;
            }
            for (pn = g0; pn < g0 + np; ++pn) {
                const uint64_t n0 = pn * CONV_NR, cols = p->N - n0 < CONV_NR ? p->N - n0 : CONV_NR;
                const int direct = p->direct_b && cols == CONV_NR;
                float* panel = bp + (pn - g0) * p->K * CONV_NR;
                /* fused packing: a warm float32 full panel whose first M block is a full one */
                const int fused = GEMM_CAN_FUSE && !packed && !p->direct_b && !p->half && p->bs_n == 1 && cols == CONV_NR &&
                                  gemm_block_width(p, it.mb0) == CONV_MR;
                const uint64_t ldb = direct ? p->bs_k : CONV_NR;
                /* full tiles of a plain float32 output are stored by their last K block's kernel */
                const int out_fused = GEMM_CAN_FUSE && plain_out && cols == CONV_NR && !direct;
                uint64_t k0, mb, sg;
                if (!packed && !direct && !fused) pack_b_panels(p, panel, it.bo, n0, 1);
                /* M blocks GEMM_MB_SUB at a time: their running sums (tiles) stay in L1 next to the B block */
                for (sg = it.mb0; sg < it.mb1; sg += GEMM_MB_SUB) {
                    const uint64_t sg1 = sg + GEMM_MB_SUB < it.mb1 ? sg + GEMM_MB_SUB : it.mb1;
                    for (k0 = 0; k0 < p->K; k0 += GEMM_KC) {
                        const uint64_t kn = p->K - k0 < GEMM_KC ? p->K - k0 : GEMM_KC;
                        const float* x0 = direct ? (const float*)p->b + it.bo + k0 * p->bs_k + n0 : panel + k0 * CONV_NR;
                        const float* xv[CONV_NV];
                        unsigned v;
                        for (v = 0; v < CONV_NV; ++v) xv[v] = x0 + 16 * v;
                        for (mb = sg; mb < sg1; ++mb) {
                            const unsigned width = gemm_block_width(p, mb);
                            const float* am = ag + mb * CONV_MR * p->K + k0 * width;
                            float* tile = T + (mb - sg) * (uint64_t)CONV_MR * CONV_NR;
                            uint64_t quota = pf.left ? pf.quota : 0;
#if defined(GEMM_FUSED_KERNELS)
                            gemm_out ot, *out = NULL;
                            if (out_fused && mb * CONV_MR + CONV_MR <= p->M && k0 + kn == p->K) { /* 8 real rows */
                                ot.y = (float*)p->y + it.yo + mb * CONV_MR * p->ys_m + n0;
                                ot.ys = p->ys_m;
                                ot.alpha = p->alpha;
                                ot.nt = p->nt_out && ((uintptr_t)ot.y & 63) == 0 && ((p->ys_m * 4) & 63) == 0;
                                out = &ot;
                            }
                            if (fused && mb == it.mb0) {
                                gemm_kernel_8_pack(kn, am, (const float*)p->b + it.bo + k0 * p->bs_k + n0, p->bs_k,
                                                   panel + k0 * CONV_NR, tile, k0 != 0, &pf, quota, out);
                                quota = quota > kn ? quota - kn : 0;
                            } else if (width == CONV_MR && !direct && cols <= 32) {
                                (cols <= 16 ? gemm_kernel_8x16 : gemm_kernel_8x32)(kn, am, x0, ldb, tile, k0 != 0);
                            } else if (width == CONV_MR && !direct) {
                                gemm_kernel_8(kn, am, x0, ldb, tile, k0 != 0, &pf, quota, out);
                                quota = quota > kn ? quota - kn : 0;
                            } else
#endif
                            {
                                run_kernel_ld(width, kn, am, xv, ldb, tile, k0 != 0);
                            }
                            if (quota && pf.left) gemm_pf_burst(&pf, quota);
                            /* the output lines into L2 one K block ahead of the epilogue (earlier, they would be evicted again) */
                            if (!p->nt_out && k0 + 2 * GEMM_KC >= p->K && (k0 + GEMM_KC < p->K || nkb == 1) && p->ys_n == 1) {
                                prefetch_outputs(p, mb * CONV_MR, width, n0, cols, it.yo);
                            }
                        }
                    }
                    for (mb = sg; mb < sg1; ++mb) {
                        const unsigned width = gemm_block_width(p, mb);
                        const uint64_t m0 = mb * CONV_MR;
                        if (out_fused && m0 + CONV_MR <= p->M) continue; /* stored by the kernel */
                        const unsigned rows = p->M - m0 < width ? (unsigned)(p->M - m0) : width;
                        epilogue(p, T + (mb - sg) * (uint64_t)CONV_MR * CONV_NR, CONV_NR, rows, cols, m0, n0, it.co, it.yo);
                    }
                }
            }
            if (pf.left) gemm_pf_burst(&pf, pf.left);
            warm = stream;
        }
        if (!have_next_item && gemm_take(p, src, 0, &item)) { /* another thread's item: not streamed */
            have_next_item = 1;
            gemm_item_decode(p, item, &nx);
            warm = 0;
        }
        if (have_next_item) it = nx;
        have_item = have_next_item;
    }
}

/* ---- the row-streaming path (a few rows of A: matrix-vector products) ------------------------------ */

#if defined(CONV_AVX512)
/* With M of at most GEMM_ROWS_MAX_M, B' (float32, unit column stride) is read once, row after row in its memory
 * order (whole rows, or column chunks of them), at the memory's full speed: item (batch, K block, column chunk)
 * sums its block's products for every output of the chunk,
 *   S[b][j][m][n] = sum over k of block j of A'[b, m, k] * B'[b, k, n]
 * one fused multiply-add per product in increasing k from 0, into L1-resident rows of the scratch; a second pass
 * adds the block sums in increasing j (T = S_j + T, the first stored as it is) and runs the epilogue. The blocked
 * kernels compute exactly these block sums and running sums, so both paths give the same bits for any thread
 * count (which splits items, never a sum). */
#ifndef GEMM_ROWS_MAX_M
#define GEMM_ROWS_MAX_M 4
#endif
#ifndef GEMM_ROWS_SCRATCH
#define GEMM_ROWS_SCRATCH ((uint64_t)16 << 20) /* bytes of block sums at most; beyond: the blocked path */
#endif

typedef struct gemm_rows {
    const gemm_plan* p;
    uint64_t nkb;       /* K blocks */
    uint64_t whole;     /* the first `whole` K blocks are items of whole rows (memory order) */
    uint64_t nchunks;   /* the other blocks (fewer than the threads) are split into nchunks column chunks */
    uint64_t chunk;     /* columns per chunk (a multiple of 16) */
    uint64_t per_batch; /* items per batch */
    uint64_t ld;                  /* floats per scratch row: N rounded up to 16 */
    float* s;                     /* [batch][nkb][M][ld] */
} gemm_rows;

static void rows_sum(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    const gemm_rows* r = (const gemm_rows*)vp;
    const gemm_plan* p = r->p;
    uint64_t item;
    (void)worker;
    for (item = begin; item < end; ++item) {
        const uint64_t b = item / r->per_batch, i = item % r->per_batch;
        const uint64_t j = i < r->whole ? i : r->whole + (i - r->whole) / r->nchunks;
        const uint64_t c = i < r->whole ? 0 : (i - r->whole) % r->nchunks;
        const uint64_t c0 = i < r->whole ? 0 : c * r->chunk;
        const uint64_t c1 = i < r->whole ? p->N : (c0 + r->chunk < p->N ? c0 + r->chunk : p->N);
        const uint64_t k0 = j * GEMM_KC, k1 = k0 + GEMM_KC < p->K ? k0 + GEMM_KC : p->K;
        float* sb = r->s + (b * r->nkb + j) * p->M * r->ld;
        uint64_t ao, bo, co, yo, k, n;
        unsigned m;
        batch_offsets(p, b, &ao, &bo, &co, &yo);
        if (c0 >= c1) continue;
        for (m = 0; m < p->M; ++m) memset(sb + m * r->ld + c0, 0, (c1 - c0) * sizeof(float));
        /* four rows at a time: each output's sum stays in a register over them (the same products in the same order);
         * the rows are read in memory order, which the hardware prefetchers follow (software prefetching measured slower) */
        for (k = k0; k + 4 <= k1; k += 4) {
            const float* b0 = (const float*)p->b + bo + k * p->bs_k;
            const float* b1 = b0 + p->bs_k;
            const float* b2 = b1 + p->bs_k;
            const float* b3 = b2 + p->bs_k;
            for (m = 0; m < p->M; ++m) {
                const float* arow = (const float*)p->a + ao + m * p->as_m + k * p->as_k;
                const __m512 a0 = _mm512_set1_ps(arow[0]), a1 = _mm512_set1_ps(arow[p->as_k]);
                const __m512 a2 = _mm512_set1_ps(arow[2 * p->as_k]), a3 = _mm512_set1_ps(arow[3 * p->as_k]);
                float* srow = sb + m * r->ld;
                for (n = c0; n + 16 <= c1; n += 16) {
                    __m512 acc = _mm512_load_ps(srow + n);
                    acc = _mm512_fmadd_ps(a0, _mm512_loadu_ps(b0 + n), acc);
                    acc = _mm512_fmadd_ps(a1, _mm512_loadu_ps(b1 + n), acc);
                    acc = _mm512_fmadd_ps(a2, _mm512_loadu_ps(b2 + n), acc);
                    acc = _mm512_fmadd_ps(a3, _mm512_loadu_ps(b3 + n), acc);
                    _mm512_store_ps(srow + n, acc);
                }
                if (n < c1) {
                    const __mmask16 mk = mask_n(c1 - n);
                    __m512 acc = _mm512_load_ps(srow + n);
                    acc = _mm512_fmadd_ps(a0, _mm512_maskz_loadu_ps(mk, b0 + n), acc);
                    acc = _mm512_fmadd_ps(a1, _mm512_maskz_loadu_ps(mk, b1 + n), acc);
                    acc = _mm512_fmadd_ps(a2, _mm512_maskz_loadu_ps(mk, b2 + n), acc);
                    acc = _mm512_fmadd_ps(a3, _mm512_maskz_loadu_ps(mk, b3 + n), acc);
                    _mm512_store_ps(srow + n, acc);
                }
            }
        }
        for (; k < k1; ++k) {
            const float* brow = (const float*)p->b + bo + k * p->bs_k;
            for (m = 0; m < p->M; ++m) {
                const __m512 av = _mm512_set1_ps(((const float*)p->a)[ao + m * p->as_m + k * p->as_k]);
                float* srow = sb + m * r->ld;
                for (n = c0; n + 64 <= c1; n += 64) {
                    _mm512_store_ps(srow + n, _mm512_fmadd_ps(av, _mm512_loadu_ps(brow + n), _mm512_load_ps(srow + n)));
                    _mm512_store_ps(srow + n + 16, _mm512_fmadd_ps(av, _mm512_loadu_ps(brow + n + 16), _mm512_load_ps(srow + n + 16)));
                    _mm512_store_ps(srow + n + 32, _mm512_fmadd_ps(av, _mm512_loadu_ps(brow + n + 32), _mm512_load_ps(srow + n + 32)));
                    _mm512_store_ps(srow + n + 48, _mm512_fmadd_ps(av, _mm512_loadu_ps(brow + n + 48), _mm512_load_ps(srow + n + 48)));
                }
                for (; n < c1; n += 16) {
                    const __mmask16 mk = mask_n(c1 - n);
                    _mm512_store_ps(srow + n, _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(mk, brow + n), _mm512_load_ps(srow + n)));
                }
            }
        }
    }
}

/* Item b (a batch): its K blocks' sums added in order, then the epilogue. */
static void rows_finish(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    const gemm_rows* r = (const gemm_rows*)vp;
    const gemm_plan* p = r->p;
    uint64_t b;
    (void)worker;
    for (b = begin; b < end; ++b) {
        float* t = r->s + b * r->nkb * p->M * r->ld;
        uint64_t ao, bo, co, yo, j, n;
        unsigned m;
        batch_offsets(p, b, &ao, &bo, &co, &yo);
        for (j = 1; j < r->nkb; ++j) {
            const float* sj = t + j * p->M * r->ld;
            for (m = 0; m < p->M; ++m) {
                for (n = 0; n < p->N; n += 16) {
                    _mm512_store_ps(t + m * r->ld + n, _mm512_add_ps(_mm512_load_ps(sj + m * r->ld + n), _mm512_load_ps(t + m * r->ld + n)));
                }
            }
        }
        epilogue(p, t, r->ld, (unsigned)p->M, p->N, 0, 0, co, yo);
    }
}

/* The sum of v's 16 lanes as a fixed tree: lane j + lane j + 8, then + 4, + 2, + 1. */
CONV_INLINE float rows_t_lanes_sum(__m512 v) {
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    return _mm_cvtss_f32(_mm_add_ss(q, _mm_movehdup_ps(q)));
}

#if DMLPY_V16 == 2
/* 16 elements from base + i (float16 or float32) as two float32 halves; only the first n when n < 16. */
CONV_INLINE void rows_t_load(int half, const void* base, uint64_t i, uint64_t n, __m256* lo, __m256* hi) {
    if (half) {
        const __m256i h = n >= 16 ? _mm256_loadu_si256((const __m256i*)((const uint16_t*)base + i))
                                  : _mm256_maskz_loadu_epi16(mask_n(n), (const uint16_t*)base + i);
        *lo = _mm256_cvtph_ps(_mm256_castsi256_si128(h));
        *hi = _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1));
    } else if (n >= 16) {
        *lo = _mm256_loadu_ps((const float*)base + i);
        *hi = _mm256_loadu_ps((const float*)base + i + 8);
    } else {
        const __m512 v = _mm512_maskz_loadu_ps(mask_n(n), (const float*)base + i);
        *lo = v.lo;
        *hi = v.hi;
    }
}

/* AVX2: rows_t_item's block sums s[m][c0 + c] for CB of its 4 B rows (row[0 ..]): each the same 16 lanes of
 * multiply-adds as the AVX-512 form's and the same tree, two ymm per lane set; CB chosen so the accumulators fit
 * the 16 registers (the four B rows at once with M rows of A would need 8M ymm). */
CONV_INLINE void rows_t_sums(const gemm_plan* p, unsigned M, unsigned CB, const uint64_t* row, int a_direct, uint64_t ao,
                             float (*ablock)[GEMM_KC], uint64_t k0, uint64_t k1, float (*s)[4], unsigned c0) {
    __m256 lo[GEMM_ROWS_MAX_M][4], hi[GEMM_ROWS_MAX_M][4];
    uint64_t k;
    unsigned m, c;
    V16E_UNROLL for (m = 0; m < GEMM_ROWS_MAX_M; ++m) V16E_UNROLL for (c = 0; c < 4; ++c) lo[m][c] = hi[m][c] = _mm256_setzero_ps();
    for (k = k0; k < k1; k += 16) {
        const uint64_t n = k1 - k; /* zero products past the block: an exact +0 added */
        __m256 blo[4], bhi[4];
        V16E_UNROLL for (c = 0; c < 4; ++c) if (c < CB) rows_t_load(p->half, p->b, row[c] + k, n, &blo[c], &bhi[c]);
        V16E_UNROLL for (m = 0; m < GEMM_ROWS_MAX_M; ++m) {
            if (m < M) {
                __m256 alo, ahi;
                if (!a_direct) {
                    rows_t_load(0, ablock[m], k - k0, n, &alo, &ahi);
                } else {
                    rows_t_load(p->half, p->a, ao + m * p->as_m + k, n, &alo, &ahi);
                }
                V16E_UNROLL for (c = 0; c < 4; ++c) {
                    if (c < CB) {
                        lo[m][c] = _mm256_fmadd_ps(alo, blo[c], lo[m][c]);
                        hi[m][c] = _mm256_fmadd_ps(ahi, bhi[c], hi[m][c]);
                    }
                }
            }
        }
    }
    for (m = 0; m < M; ++m) {
        for (c = 0; c < CB; ++c) {
            const __m512 v = {lo[m][c], hi[m][c]};
            s[m][c0 + c] = rows_t_lanes_sum(v);
        }
    }
}
#endif

/* TransB of a row-major B (unit k stride, a fully connected layer's weight) with at most GEMM_ROWS_MAX_M rows of A:
 * item (batch, 16 columns) takes dot products of A's rows with its columns' B rows, 4 rows at a time read in memory
 * order, 16 k per step. Each output's sum over a K block is formed as 16 interleaved partial sums (lane j: the
 * products at k0 + j, k0 + 16 + j, ..., one fused multiply-add each from +0) added as a fixed tree
 * (rows_t_lanes_sum); the block sums are then added in increasing order, as every path adds them. That is a
 * different order from the tile kernels' (increasing k within a block), so these outputs may differ from the
 * as-stored B's in the last bits; summing in increasing k here would need the 16 rows transposed in registers,
 * which measured 1.47x slower than the memory's speed these dot products run at (1x2048 by 1000x2048). */
CONV_INLINE void rows_t_item(const gemm_plan* p, uint64_t b, uint64_t n0, unsigned M) {
    const unsigned valid = p->N - n0 < 16 ? (unsigned)(p->N - n0) : 16;
    const int a_direct = p->as_k == 1; /* else A's block packed as float32 */
    float tile[GEMM_ROWS_MAX_M * 16] __attribute__((aligned(64))) = {0};
    float ablock[GEMM_ROWS_MAX_M][GEMM_KC] __attribute__((aligned(64)));
    uint64_t ao, bo, co, yo, k0, k;
    unsigned g, m, c;
    batch_offsets(p, b, &ao, &bo, &co, &yo);
    for (g = 0; g < valid; g += 4) {
        uint64_t row[4]; /* B' columns n0 + g + c (the last one again past `valid`: its sums are not stored) */
        float total[GEMM_ROWS_MAX_M][4] = {{0}}; /* replaced by the first block's sums */
        for (c = 0; c < 4; ++c) row[c] = bo + (n0 + (g + c < valid ? g + c : valid - 1)) * p->bs_n;
        for (k0 = 0; k0 < p->K; k0 += GEMM_KC) {
            const uint64_t k1 = k0 + GEMM_KC < p->K ? k0 + GEMM_KC : p->K;
            __m512 acc[GEMM_ROWS_MAX_M][4];
            if (!a_direct) {
                for (m = 0; m < M; ++m) {
                    for (k = k0; k < k1; ++k) ablock[m][k - k0] = load_elem(p->half, p->a, ao + m * p->as_m + k * p->as_k);
                }
            }
#if DMLPY_V16 == 2
            {
                float s[GEMM_ROWS_MAX_M][4];
                const unsigned cb = M == 1 ? 4 : M == 2 ? 2 : 1;
                (void)acc;
                for (c = 0; c < 4; c += cb) rows_t_sums(p, M, cb, row + c, a_direct, ao, ablock, k0, k1, s, c);
                for (m = 0; m < M; ++m) {
                    for (c = 0; c < 4; ++c) total[m][c] = k0 == 0 ? s[m][c] : s[m][c] + total[m][c];
                }
                continue;
            }
#endif
            for (m = 0; m < M; ++m) {
                for (c = 0; c < 4; ++c) acc[m][c] = _mm512_setzero_ps();
            }
            for (k = k0; k < k1; k += 16) {
                const __mmask16 km = mask_n(k1 - k); /* zero products past the block: an exact +0 added */
                __m512 bv[4];
                for (c = 0; c < 4; ++c) {
                    bv[c] = p->half ? _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(km, (const uint16_t*)p->b + row[c] + k))
                                    : _mm512_maskz_loadu_ps(km, (const float*)p->b + row[c] + k);
                }
                for (m = 0; m < M; ++m) {
                    const uint64_t ai = ao + m * p->as_m + k;
                    const __m512 av = !a_direct ? _mm512_maskz_loadu_ps(km, ablock[m] + (k - k0))
                                      : p->half ? _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(km, (const uint16_t*)p->a + ai))
                                                : _mm512_maskz_loadu_ps(km, (const float*)p->a + ai);
                    for (c = 0; c < 4; ++c) acc[m][c] = _mm512_fmadd_ps(av, bv[c], acc[m][c]);
                }
            }
            for (m = 0; m < M; ++m) {
                for (c = 0; c < 4; ++c) {
                    const float s = rows_t_lanes_sum(acc[m][c]);
                    total[m][c] = k0 == 0 ? s : s + total[m][c];
                }
            }
        }
        for (m = 0; m < M; ++m) {
            for (c = 0; c < 4 && g + c < valid; ++c) tile[16 * m + g + c] = total[m][c];
        }
    }
    epilogue(p, tile, 16, M, valid, 0, n0, co, yo);
}

static void rows_t_run(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    const gemm_plan* p = (const gemm_plan*)vp;
    const uint64_t groups = (p->N + 15) / 16;
    uint64_t item;
    (void)worker;
    for (item = begin; item < end; ++item) {
        const uint64_t b = item / groups, n0 = item % groups * 16;
        switch (p->M) { /* M a constant in each copy: the sums stay in registers */
        case 1: rows_t_item(p, b, n0, 1); break;
        case 2: rows_t_item(p, b, n0, 2); break;
        case 3: rows_t_item(p, b, n0, 3); break;
        default: rows_t_item(p, b, n0, 4); break;
        }
    }
}

static int32_t run_rows_t(gemm_plan* p, UINT threadCount) {
    const uint64_t items = p->batch * ((p->N + 15) / 16);
    /* the elements moved, B's twice (as the blocked path counts them) */
    const double w = (double)p->batch * ((double)p->M * (double)p->N * (double)p->K / 4.0 + 2.0 * (double)p->K * (double)p->N);
    const unsigned threads = dmlpy_choose_threads(w > 1.8e19 ? UINT64_MAX : (uint64_t)w, items, threadCount);
    dmlpy_parallel_for(items, dmlpy_choose_grain(items, threads), threads, rows_t_run, p);
    return DMLPY_OK;
}

/* Returns DMLPY_OK, DMLPY_E_OUT_OF_MEMORY, or -1 when the problem is not one for this path. */
static int32_t run_rows(gemm_plan* p, UINT threadCount) {
    gemm_rows r;
    uint64_t floats, items, limit;
    unsigned threads;
    char* block;
    if (p->M > GEMM_ROWS_MAX_M || p->M == 0 || p->N == 0 || p->K == 0) return -1;
    if (p->bs_k == 1 && p->bs_n != 1) return run_rows_t(p, threadCount);
    if (p->half || p->bs_n != 1) return -1;
    r.p = p;
    r.nkb = (p->K + GEMM_KC - 1) / GEMM_KC;
    r.ld = (p->N + 15) & ~(uint64_t)15;
    if ((double)p->batch * (double)r.nkb * (double)p->M * (double)r.ld * 4.0 > (double)GEMM_ROWS_SCRATCH) return -1;
    floats = p->batch * r.nkb * p->M * r.ld;
    limit = threadCount ? threadCount : dmlpy_online_cpus();
    {
        /* the elements moved, B's twice (as the blocked path counts them) */
        const double w = (double)p->batch * ((double)p->M * (double)p->N * (double)p->K / 4.0 + 2.0 * (double)p->K * (double)p->N);
        const uint64_t work = w > 1.8e19 ? UINT64_MAX : (uint64_t)w;
        threads = dmlpy_choose_threads(work, p->batch * r.nkb * (limit < 16 ? limit : 16), threadCount);
        /* items of whole rows (B' read in its memory order); a remainder of K blocks that does not split evenly
         * between the threads (one batch) is split by columns */
        r.nchunks = threads > 1 && p->batch == 1 && r.ld >= 64 * (uint64_t)threads ? threads : 1;
        r.whole = r.nchunks > 1 ? r.nkb - r.nkb % r.nchunks : r.nkb;
        r.chunk = ((r.ld + r.nchunks - 1) / r.nchunks + 15) & ~(uint64_t)15;
        r.per_batch = r.whole + (r.nkb - r.whole) * r.nchunks;
        items = p->batch * r.per_batch;
        if (threads > items) threads = (unsigned)items;
    }
    block = (char*)conv_scratch_get(floats * sizeof(float) + 64);
    if (block == NULL) return DMLPY_E_OUT_OF_MEMORY;
    r.s = (float*)(((uintptr_t)block + 64 + 63) & ~(uintptr_t)63);
    dmlpy_parallel_for(items, 1, threads, rows_sum, &r);
    dmlpy_parallel_for(p->batch, 1, threads < p->batch ? threads : (unsigned)p->batch, rows_finish, &r);
    conv_scratch_put(block);
    return DMLPY_OK;
}
#else
static int32_t run_rows(gemm_plan* p, UINT threadCount) {
    (void)p;
    (void)threadCount;
    return -1;
}
#endif

/* The blocked path. Returns DMLPY_OK, DMLPY_E_OUT_OF_MEMORY, or -1 when the scratch would be too large. */
static int32_t run_blocked(gemm_plan* p, UINT threadCount) {
    uint64_t group, bytes, bp_floats, tiles_floats, batch_work;
    unsigned limit, threads;
    char* block;
    char* cur;
    uint64_t* segs;

    p->mblocks = (p->M + CONV_MR - 1) / CONV_MR;
    {
        const uint64_t rem = p->M - (p->mblocks - 1) * CONV_MR;
        p->mr_tail = rem > 4 ? 8u : rem > 2 ? 4u : rem > 1 ? 2u : 1u;
    }
    /* M, K < 2^32: mblocks * MR * K < 2^65 can overflow only through the product */
    if (!dmlpy_mul_u64(p->mblocks * CONV_MR, p->K, &p->a_floats)) return -1;
    if (p->a_floats > GEMM_SCRATCH_CAP / sizeof(float)) return -1;
    p->npanels = (p->N + CONV_NR - 1) / CONV_NR;
    p->direct_b = !p->half && p->bs_n == 1 && p->M <= GEMM_DIRECT_B_ROWS;
    {
        const double out_bytes = (double)p->batch * (double)p->M * (double)p->N * (p->half ? 2.0 : 4.0);
        p->nt_out = out_bytes >= (double)GEMM_NT_BYTES;
    }

    /* M blocks per item: the packed A an item runs over stays in L2 */
    p->mb_per_item = GEMM_MC_FLOATS / (CONV_MR * p->K);
    if (p->mb_per_item < 1) p->mb_per_item = 1;
    if (p->mb_per_item > GEMM_MAX_MB_PER_ITEM) p->mb_per_item = GEMM_MAX_MB_PER_ITEM; /* the tile buffer stays small */
    if (p->mb_per_item > p->mblocks) p->mb_per_item = p->mblocks;
    p->m_items = (p->mblocks + p->mb_per_item - 1) / p->mb_per_item;

    limit = threadCount ? threadCount : dmlpy_online_cpus();
    if (limit > 256) limit = 256;
    /* batches per group: the group's packed A at most GEMM_A_GROUP_FLOATS (at least one batch) */
    group = GEMM_A_GROUP_FLOATS / p->a_floats;
    if (group < 1) group = 1;
    if (group > p->batch) group = p->batch;
    /* a few panels and fewer (batch, M run) pairs than threads: split M between the threads, so that each computes
     * rows of every panel (64x576 by 576x64, one full panel and one of 16 columns, went to 2 threads as one panel
     * each: 3 to 1, slower than 1 thread); each thread packs the panels it uses */
    if (limit > 1 && group * p->m_items < limit && p->npanels < 4 * (uint64_t)limit) {
        const uint64_t runs = (limit + group - 1) / group;
        p->mb_per_item = (p->mblocks + runs - 1) / runs;
        p->m_items = (p->mblocks + p->mb_per_item - 1) / p->mb_per_item;
    }
    /* panels per item: about GEMM_ITEMS_PER_THREAD items per thread */
    {
        const uint64_t want = (uint64_t)limit * GEMM_ITEMS_PER_THREAD, base = group * p->m_items;
        uint64_t per = base >= want ? p->npanels : (p->npanels * base + want - 1) / want;
        if (per < 1) per = 1;
        if (per > p->npanels) per = p->npanels;
        p->panels_per_item = limit > 1 ? per : p->npanels;
        p->n_items = (p->npanels + p->panels_per_item - 1) / p->panels_per_item;
    }
    /* work of one batch for the thread count: multiply-adds / 4, as the convolution counts them, plus the elements
     * moved (B's twice: its rows are read far apart, so a matrix-vector product, memory-bound, gets its threads) */
    {
        const double w = (double)p->M * (double)p->N * (double)p->K / 4.0 + 2.0 * (double)p->K * (double)p->N +
                         (double)p->M * (double)p->K + (double)p->M * (double)p->N;
        batch_work = w > 1.8e19 ? UINT64_MAX : (uint64_t)w;
    }
    {
        uint64_t work;
        if (!dmlpy_mul_u64(batch_work, group, &work)) work = UINT64_MAX;
        threads = dmlpy_choose_threads(work, group * p->m_items * p->n_items, threadCount);
    }
    if (threads > limit) threads = limit;
    p->tile_floats = p->mb_per_item * (uint64_t)CONV_MR * CONV_NR;
    if (!dmlpy_mul_u64(p->K * CONV_NR * GEMM_PACK_PANELS, threads, &bp_floats)) return -1;
    tiles_floats = p->tile_floats * threads;
    bytes = 64 + (group * p->a_floats + 16) * sizeof(float) + bp_floats * sizeof(float) + tiles_floats * sizeof(float) +
            4 * 64 + (uint64_t)threads * GEMM_SEG_WORDS * sizeof(uint64_t);
    if (bp_floats > GEMM_SCRATCH_CAP / sizeof(float) || bytes > GEMM_SCRATCH_CAP) return -1;
    block = (char*)conv_scratch_get(bytes);
    if (block == NULL) return DMLPY_E_OUT_OF_MEMORY;
    cur = (char*)(((uintptr_t)block + 64 + 63) & ~(uintptr_t)63);
    p->ap = (float*)cur;
    cur += ((group * p->a_floats + 16) * sizeof(float) + 63) & ~(uint64_t)63;
    p->bp = (float*)cur;
    cur += (bp_floats * sizeof(float) + 63) & ~(uint64_t)63;
    p->tiles = (float*)cur;
    cur += (tiles_floats * sizeof(float) + 63) & ~(uint64_t)63;
    segs = (uint64_t*)cur;
    (void)segs; /* unused without segments */

    for (p->b0 = 0; p->b0 < p->batch; p->b0 += p->nbatch) {
        uint64_t pack_items, items;
        unsigned pt;
        p->nbatch = p->batch - p->b0 < group ? p->batch - p->b0 : group;
        pack_items = p->nbatch * p->mblocks;
        /* packing moves each element once with strided reads: ~1 ns = 16 units each */
        pt = dmlpy_choose_threads(p->nbatch * p->a_floats * 16u, pack_items, threadCount);
        if (pt > threads) pt = threads;
        dmlpy_parallel_for(pack_items, dmlpy_choose_grain(pack_items, pt), pt, pack_a_run, p);
        items = p->nbatch * p->m_items * p->n_items;
        p->segs = NULL;
        p->nsegs = 0;
#if defined(GEMM_SEGMENTS)
        if (threads > 1 && items < ((uint64_t)1 << 32)) {
            p->segs = segs;
            p->nsegs = threads;
        }
#endif
        if (p->segs != NULL) {
            /* thread s computes items s * items / T .. (s + 1) * items / T - 1 in order (each next item's rows streamed
             * while the current one runs), then helps the others from their ends */
            unsigned t;
            for (t = 0; t < p->nsegs; ++t) {
                const uint64_t lo = items * t / p->nsegs, hi = items * (t + 1) / p->nsegs;
                p->segs[(uint64_t)t * GEMM_SEG_WORDS] = lo << 32 | hi;
            }
            dmlpy_parallel_for(p->nsegs, 1, threads, compute_run, p);
        } else {
            /* chunks of a few items: a chunk's next group (in its next item) is streamed while the current one runs */
            dmlpy_parallel_for(items, threads <= 1 ? items : (items / (GEMM_CHUNKS_PER_THREAD * threads) ? items / (GEMM_CHUNKS_PER_THREAD * threads) : 1), threads, compute_run, p);
        }
    }
    conv_scratch_put(block);
    return DMLPY_OK;
}

/* ---- entry --------------------------------------------------------------------------------------- */

int32_t dmlpy_gemm(const DML_OPERATOR_DESC* desc, UINT inputCount, const DMLPY_BOUND_BUFFER* inputs, UINT outputCount,
                   const DMLPY_BOUND_BUFFER* outputs, UINT threadCount) {
    const DML_GEMM_OPERATOR_DESC* d;
    gemm_plan p;
    dmlpy_tensor at, bt, ct, yt;
    dmlpy_staged_output stage;
    int32_t st;
    uint32_t rank, i, ar, ac, br, bc;
    int has_c;

    if (desc == NULL || desc->Desc == NULL) return DMLPY_E_NULL_ARGUMENT;
    d = (const DML_GEMM_OPERATOR_DESC*)desc->Desc;
    if (d->ATensor == NULL || d->BTensor == NULL || d->OutputTensor == NULL) return DMLPY_E_NULL_ARGUMENT;
    if ((d->TransA != DML_MATRIX_TRANSFORM_NONE && d->TransA != DML_MATRIX_TRANSFORM_TRANSPOSE) ||
        (d->TransB != DML_MATRIX_TRANSFORM_NONE && d->TransB != DML_MATRIX_TRANSFORM_TRANSPOSE)) {
        return DMLPY_E_INVALID_DESC;
    }
    if (inputCount != 3 || outputCount != 1) return DMLPY_E_BINDING_COUNT;
    if (inputs == NULL || outputs == NULL) return DMLPY_E_NULL_ARGUMENT;

    memset(&p, 0, sizeof p);
    st = dmlpy_tensor_from_desc(d->ATensor, &at);
    if (st != DMLPY_OK) return st;
    st = dmlpy_tensor_from_desc(d->BTensor, &bt);
    if (st != DMLPY_OK) return st;
    st = dmlpy_tensor_from_desc(d->OutputTensor, &yt);
    if (st != DMLPY_OK) return st;
    has_c = d->CTensor != NULL;
    if (has_c) {
        st = dmlpy_tensor_from_desc(d->CTensor, &ct);
        if (st != DMLPY_OK) return st;
    } else if (inputs[2].Data != NULL) {
        return DMLPY_E_INVALID_ARGUMENT; /* a buffer bound to the C slot of a desc without C */
    }
    rank = yt.rank;
    if (rank < 2 || at.rank != rank || bt.rank != rank || (has_c && ct.rank != rank)) return DMLPY_E_INVALID_DESC;
    if (yt.data_type != DML_TENSOR_DATA_TYPE_FLOAT32 && yt.data_type != DML_TENSOR_DATA_TYPE_FLOAT16) return DMLPY_E_INVALID_DESC;
    if (at.data_type != yt.data_type || bt.data_type != yt.data_type || (has_c && ct.data_type != yt.data_type)) {
        return DMLPY_E_INVALID_DESC;
    }
    /* A' {.., M, K}, B' {.., K, N}, output {.., M, N}, C the output's sizes, batch sizes equal */
    ar = d->TransA == DML_MATRIX_TRANSFORM_TRANSPOSE ? rank - 1 : rank - 2;
    ac = 2 * rank - 3 - ar;
    br = d->TransB == DML_MATRIX_TRANSFORM_TRANSPOSE ? rank - 1 : rank - 2;
    bc = 2 * rank - 3 - br;
    p.M = yt.sizes[rank - 2];
    p.N = yt.sizes[rank - 1];
    p.K = at.sizes[ac];
    if (at.sizes[ar] != p.M || bt.sizes[br] != p.K || bt.sizes[bc] != p.N) return DMLPY_E_INVALID_DESC;
    p.nbd = rank - 2;
    p.batch = 1;
    for (i = 0; i < rank; ++i) {
        if (i < p.nbd && (at.sizes[i] != yt.sizes[i] || bt.sizes[i] != yt.sizes[i])) return DMLPY_E_INVALID_DESC;
        if (has_c && ct.sizes[i] != yt.sizes[i]) return DMLPY_E_INVALID_DESC;
    }
    for (i = 0; i < p.nbd; ++i) {
        p.bsize[i] = yt.sizes[i];
        p.batch *= yt.sizes[i]; /* <= the output's element count < 2^32 */
        p.as_b[i] = at.strides[i];
        p.bs_b[i] = bt.strides[i];
        p.cs_b[i] = has_c ? ct.strides[i] : 0;
    }
    p.as_m = at.strides[ar];
    p.as_k = at.strides[ac];
    p.bs_k = bt.strides[br];
    p.bs_n = bt.strides[bc];
    p.cs_m = has_c ? ct.strides[rank - 2] : 0;
    p.cs_n = has_c ? ct.strides[rank - 1] : 0;
    p.half = yt.data_type == DML_TENSOR_DATA_TYPE_FLOAT16;
    p.alpha = d->Alpha;
    p.beta = d->Beta;
    p.act.kind = DMLPY_ACT_NONE;
    if (d->FusedActivation != NULL) {
        st = dmlpy_activation_read(d->FusedActivation, DMLPY_ACT_FUSED_CLIP, &p.act, NULL, NULL);
        if (st != DMLPY_OK) return st;
    }

    /* Bind: every extent inside its buffer; the output overlaps no input. */
    st = dmlpy_tensor_bind(&at, &inputs[0]);
    if (st != DMLPY_OK) return st;
    st = dmlpy_tensor_bind(&bt, &inputs[1]);
    if (st != DMLPY_OK) return st;
    if (has_c) {
        st = dmlpy_tensor_bind(&ct, &inputs[2]);
        if (st != DMLPY_OK) return st;
    }
    st = dmlpy_tensor_bind(&yt, &outputs[0]);
    if (st != DMLPY_OK) return st;
    if (dmlpy_tensors_overlap(&yt, &at) || dmlpy_tensors_overlap(&yt, &bt)) return DMLPY_E_INVALID_ARGUMENT;
    if (has_c && dmlpy_tensors_overlap(&yt, &ct)) return DMLPY_E_INVALID_ARGUMENT;
    st = dmlpy_output_stage(&yt, &stage);
    if (st != DMLPY_OK) return st;
    p.a = at.data;
    p.b = bt.data;
    p.c = has_c ? ct.data : NULL;
    p.y = yt.data;
    for (i = 0; i < p.nbd; ++i) p.ys_b[i] = yt.strides[i]; /* after staging: packed when staged */
    p.ys_m = yt.strides[rank - 2];
    p.ys_n = yt.strides[rank - 1];

    st = run_rows(&p, threadCount);
    if (st < 0) st = run_blocked(&p, threadCount);
    if (st < 0) {
        const uint64_t rows = p.batch * p.M;
        double macs = (double)rows * (double)p.N * (double)p.K;
        uint64_t work = macs * 8.0 > 1.8e19 ? UINT64_MAX : (uint64_t)(macs * 8.0);
        const unsigned threads = dmlpy_choose_threads(work, rows, threadCount);
        dmlpy_parallel_for(rows, dmlpy_choose_grain(rows, threads), threads, direct_rows, &p);
        st = DMLPY_OK;
    }
    dmlpy_output_unstage(&stage, st == DMLPY_OK);
    return st;
}
