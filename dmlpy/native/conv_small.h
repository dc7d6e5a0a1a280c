/*
 * conv_small.h - the few-output-pixels path of FORWARD convolution (private; included by convolution.c after
 * its plan and helpers, so it is compiled into every instruction-set variant; the path itself needs the 16-lane
 * vectors of v16.h: AVX-512, or AVX2 through its emulation).
 *
 * The GEMM path's blocking assumes many output positions per (image, group): it repacks the whole filter
 * into MR-row panels on every call and streams those panels once per tile of 32 positions. With few
 * positions (the late stages of CNNs: 2x2 .. 14x14 outputs, 256 .. 1024 channels, or 1x1 expansions such as
 * 56 -> 336 channels) the filter is the large operand, and that repacking and re-reading cost far more than
 * the arithmetic. This path instead
 *  1. copies the small input once, im2col-style, into B (per image and group): B[kk][p] for the P computed
 *     output positions p (zero for taps in padding), kk = (input channel, tap) in the filter's own memory
 *     order; 16-lane masked gathers through a per-tap table of input offsets;
 *  2. reads the filter in its stored layout (OIHW or OHWI, float32; any other layout or FLOAT16 is first
 *     copied once into a row-major float32 [Cout][K] block) as the streamed operand:
 *     - broadcast form (P > CONV_SMALL_DOT_P): C[oc][p] = sum_kk W[oc][kk] * B[kk][p], an MR x (16*NV)
 *       register tile, W broadcast from MR filter rows, B rows loaded as vectors, K blocked so a block of
 *       B stays in L2 while every row block consumes it, each block's sums added to the running sums;
 *     - dot form (P <= CONV_SMALL_DOT_P: 16-lane vectors over positions would be mostly empty): B is kept
 *       position-major (BT[p][kk]) and each C[oc][p] is a dot product over kk, vectorised along kk
 *       (MR rows x PB positions of accumulators, reduced once at the end); also the last P % 16 positions
 *       of the broadcast form when there are 1 to 4 of them (run on each K block of a row block right after
 *       it, so their sums are two-level as the broadcast form's);
 *  3. adds the bias, applies the fused activation and stores (float16: one rounding).
 * Work items are (image, group, run of output channels): every thread reads only its own filter rows.
 * Each output element is one item's sum over kk in a fixed order (K blocks, or 16 lanes then a reduction),
 * so results do not depend on the thread count. Padding taps read stored zeros, and 0 * inf = NaN: instead of
 * scanning the filter first (as the other fast paths must; a second full read of it, as long as the
 * arithmetic here), the epilogue notes any infinite or NaN sum and the call is then declined after the fact
 * (-1) and redone by the other paths. A finite sum used no infinite or NaN weight (every weight of a row
 * enters every sum of the row), so a call that is not declined has the direct sum's results. Outputs never
 * alias an input, so the inputs are intact for the redo.
 */
#ifndef DMLPY_NATIVE_CONV_SMALL_H
#define DMLPY_NATIVE_CONV_SMALL_H

/* Largest computed outputs per (image, group) the path takes. */
#ifndef CONV_SMALL_MAX_P
#define CONV_SMALL_MAX_P 256
#endif
/* From this many positions on, a problem the Winograd path takes (2-D 3x3 stride 1, 16+ channels) goes to it
 * first: below, its per-call filter transform costs more than the multiply-adds it saves (64 -> 64 channels,
 * 8x8 outputs: 0.16 ms by Winograd, 0.05 ms here). */
#ifndef CONV_SMALL_WINO_P
#define CONV_SMALL_WINO_P 96
#endif
/* Up to this many positions: the dot form. */
#ifndef CONV_SMALL_DOT_P
#define CONV_SMALL_DOT_P 12
#endif
/* Bytes of B one K block may hold (broadcast form), and its most K steps: a block's sums start from zero
 * and are added to the running sums (two-level summation, as the GEMM path: 512 x 4608 channel-taps,
 * inputs and weights in [-1, 1], error / (1 + |y|) against float64 5.3e-5 in one run of 1536 steps per
 * block, 1.3e-5 with blocks of 256). */
#ifndef CONV_SMALL_B_BYTES
#define CONV_SMALL_B_BYTES ((uint64_t)384 << 10)
#endif
#ifndef CONV_SMALL_B_L2
#define CONV_SMALL_B_L2 ((uint64_t)1 << 20) /* B of one (n, g) up to this: row blocks outermost */
#endif
#ifndef CONV_SMALL_KC
#define CONV_SMALL_KC 256
#endif
/* Fewest channel-taps (K = Cin_g * taps) per output the path takes (below 64: only with Cout_g >= 4 K). */
#ifndef CONV_SMALL_MIN_K
#define CONV_SMALL_MIN_K 8
#endif
/* Scratch cap of the path (bytes). */
#define CONV_SMALL_CAP ((uint64_t)256 << 20)

#if defined(CONV_AVX512)

typedef struct conv_small {
    const conv_plan* p;
    uint64_t P, Ppad;   /* computed output positions per (n, g); rounded up to 16 */
    uint64_t K, kvol;   /* Cin_g * kvol; taps */
    int tap_major;      /* kk = tap * Cin_g + ic (OHWI filters), else ic * kvol + tap */
    int dot;            /* dot form */
    const float* w;     /* filter rows: row (g*Cout_g + oc) at w + row * lda, kk contiguous */
    uint64_t lda;
    const float* wsrc_unused;
    float* wpack;       /* packed filter (NULL: read in place) */
    float* B;           /* per (n, g): broadcast K x Ppad (ldb = Ppad); dot P x Kpad (ldb = Kpad) */
    uint64_t ldb, b_floats;
    uint64_t Kpad;
    uint64_t ntail;     /* broadcast form: the last P % 16 (1..4) positions as dot products, position-major
                         * after B (ntail x Kpad): a vector of 16 lanes for them would be mostly empty */
    uint64_t nvec;      /* broadcast form: 16-position vectors computed */
    int32_t* tapoff;    /* [kvol][Ppad]: input spatial offset of tap t at position p, -1: padding */
    uint64_t* yoff;     /* [P] output spatial offset */
    int dense_out;      /* yoff[p] == p */
    int64_t* tapshift;  /* [kvol]: tapoff[t][p] == p + tapshift[t] wherever it is not padding, or SM_NOT_A_SHIFT */
    int direct_out;     /* broadcast form, one K block, dense float32 output rows, no activation, P - ntail a
                         * multiple of 16: the kernels store the outputs, the epilogue only the tail positions */
    uint64_t rows;      /* output channels per item (multiple of mr) */
    uint64_t chunks;    /* items per (n, g) */
    unsigned mr, nv;    /* broadcast form tile */
    uint64_t kc;        /* K block */
    float* C;           /* per worker: rows x Ppad */
    uint64_t c_floats;
    uint64_t b_items, kchunk; /* im2col items: (n, g, kk chunk) */
    uint64_t compute_items, fill_items;
    uint8_t* nonfinite; /* per worker: a sum was an infinity or NaN */
} conv_small;

#define SM_NOT_A_SHIFT INT64_MIN

/* ---- kernels --------------------------------------------------------------------------------------- */

#if defined(__GNUC__) && !defined(__clang__)
#define SM_UNROLL _Pragma("GCC unroll 16")
#else
#define SM_UNROLL
#endif

#if defined(__GNUC__) && !defined(__clang__)
#define SM_UNROLL4 _Pragma("GCC unroll 4")
#else
#define SM_UNROLL4
#endif

/* One k step of the broadcast form (sm_bcast_*: c, a, lda, b, ldb, m, v in scope). */
#define SM_BCAST_STEP(MR, NV, K_)                                                                               \
    {                                                                                                             \
        __m512 bv[NV];                                                                                            \
        const float* bk = b + (K_) * ldb;                                                                         \
        SM_UNROLL for (v = 0; v < NV; ++v) bv[v] = _mm512_load_ps(bk + 16 * v);                                   \
        SM_UNROLL for (m = 0; m < MR; ++m) {                                                                      \
            const __m512 av = _mm512_set1_ps(a[m * lda + (K_)]);                                                  \
            SM_UNROLL for (v = 0; v < NV; ++v) c[m][v] = _mm512_fmadd_ps(av, bv[v], c[m][v]);                    \
        }                                                                                                         \
    }

/* Broadcast form: C[m][16v + j] (+)= sum_{kk < K} a[m*lda + kk] * b[kk*ldb + 16v + j] (the block's sum, then
 * added to C when acc). The accumulator array has the tile's exact size (the compiler keeps it in registers only
 * then). With bias (float32 output rows, one K block, no activation): C is the output, each sum + bias[m] is
 * stored unaligned and *bad notes an infinite or NaN sum (the epilogue's work, without the round trip through a
 * tile buffer). */
#define SM_BCAST(MR, NV)                                                                                        \
    static void sm_bcast_##MR##_##NV(uint64_t K, const float* restrict a, uint64_t lda, const float* restrict b, \
                                     uint64_t ldb, float* restrict C, uint64_t ldc, int acc,                     \
                                     const float* restrict bias, uint32_t* bad) {                                \
        __m512 c[MR][NV];                                                                                         \
        unsigned m, v;                                                                                            \
        uint64_t kk;                                                                                              \
        SM_UNROLL for (m = 0; m < MR; ++m) SM_UNROLL for (v = 0; v < NV; ++v) c[m][v] = _mm512_setzero_ps();    \
        /* 16 k steps per filter prefetch (no per-step test; the loop's integer uops compete with the      \
         * multiply-adds for ports 0 and 5) */                                                                 \
        for (kk = 0; kk + 16 <= K; kk += 16) {                                                                    \
            uint64_t ku;                                                                                          \
            SM_UNROLL for (m = 0; m < MR; ++m) _mm_prefetch((const char*)(a + m * lda + kk + 128), _MM_HINT_T0);  \
            SM_UNROLL4 for (ku = kk; ku < kk + 16; ++ku) SM_BCAST_STEP(MR, NV, ku)                                \
        }                                                                                                         \
        for (; kk < K; ++kk) SM_BCAST_STEP(MR, NV, kk)                                                            \
        if (bias) {                                                                                               \
            const __m512i e = _mm512_set1_epi32(0x7F800000);                                                      \
            __mmask16 hit = 0;                                                                                    \
            SM_UNROLL for (m = 0; m < MR; ++m) {                                                                  \
                const __m512 bm = _mm512_set1_ps(bias[m]);                                                        \
                SM_UNROLL for (v = 0; v < NV; ++v) {                                                              \
                    hit |= _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(c[m][v]), e), e);         \
                    _mm512_storeu_ps(C + m * ldc + 16 * v, _mm512_add_ps(c[m][v], bm));                           \
                }                                                                                                 \
            }                                                                                                     \
            if (hit) *bad = 1;                                                                                    \
            return;                                                                                               \
        }                                                                                                         \
        if (acc) { /* block sums added to the running sums */                                                  \
            SM_UNROLL for (m = 0; m < MR; ++m) SM_UNROLL for (v = 0; v < NV; ++v) c[m][v] =                     \
                _mm512_add_ps(c[m][v], _mm512_load_ps(C + m * ldc + 16 * v));                                     \
        }                                                                                                         \
        SM_UNROLL for (m = 0; m < MR; ++m) SM_UNROLL for (v = 0; v < NV; ++v)                                    \
            _mm512_store_ps(C + m * ldc + 16 * v, c[m][v]);                                                       \
    }
#if DMLPY_V16 == 2
/* AVX2: the same sums by v16e_fma_tile's register-sized sub-tiles (4 rows by 16 or 24 columns; same bits); the
 * filter rows are read in order, which the hardware prefetchers follow. */
#undef SM_BCAST
#define SM_BCAST(MR, NV)                                                                                        \
    static void sm_bcast_##MR##_##NV(uint64_t K, const float* restrict a, uint64_t lda, const float* restrict b, \
                                     uint64_t ldb, float* restrict C, uint64_t ldc, int acc,                     \
                                     const float* restrict bias, uint32_t* bad) {                                \
        const float* bc[8] = {b, b + 8, b + 16, b + 24, b + 32, b + 40, b + 48, b + 56};                         \
        const unsigned ny = (2 * NV) % 3 == 0 ? 3 : 2, strips = 2 * NV / ny;                                     \
        unsigned s, r0;                                                                                           \
        V16E_UNROLL for (s = 0; s < strips; ++s) {                                                                \
            V16E_UNROLL for (r0 = 0; r0 < MR; r0 += 4) {                                                          \
                v16e_fma_tile(MR - r0 < 4 ? MR - r0 : 4, ny, K, a + r0 * lda, lda, 1, bc + s * ny, NULL, ldb,      \
                              C + r0 * ldc + 8 * ny * s, ldc, acc, bias != NULL ? bias + r0 : NULL, bad);         \
            }                                                                                                     \
        }                                                                                                         \
    }
#endif
SM_BCAST(6, 4)
SM_BCAST(4, 4)
SM_BCAST(4, 3)
SM_BCAST(4, 2)
SM_BCAST(4, 1)
SM_BCAST(6, 3)
SM_BCAST(6, 2)
SM_BCAST(6, 1)
SM_BCAST(8, 3)
SM_BCAST(8, 2)
SM_BCAST(8, 1)
SM_BCAST(12, 2)
SM_BCAST(12, 1)
SM_BCAST(16, 1)
SM_BCAST(1, 4)
SM_BCAST(1, 3)
SM_BCAST(1, 2)
SM_BCAST(1, 1)

typedef void (*sm_bcast_fn)(uint64_t, const float*, uint64_t, const float*, uint64_t, float*, uint64_t, int, const float*,
                            uint32_t*);

static sm_bcast_fn sm_bcast_pick(unsigned mr, unsigned nv) {
    if (mr == 1) return nv == 4 ? sm_bcast_1_4 : nv == 3 ? sm_bcast_1_3 : nv == 2 ? sm_bcast_1_2 : sm_bcast_1_1;
    if (mr == 4) return nv == 4 ? sm_bcast_4_4 : nv == 3 ? sm_bcast_4_3 : nv == 2 ? sm_bcast_4_2 : sm_bcast_4_1;
    if (mr == 6) return nv == 4 ? sm_bcast_6_4 : nv == 3 ? sm_bcast_6_3 : nv == 2 ? sm_bcast_6_2 : sm_bcast_6_1;
    if (mr == 8) return nv == 3 ? sm_bcast_8_3 : nv == 2 ? sm_bcast_8_2 : sm_bcast_8_1;
    if (mr == 12) return nv == 2 ? sm_bcast_12_2 : sm_bcast_12_1;
    return sm_bcast_16_1;
}

/* The 16 lane sums of c[0..15] (c[4m + q]: row m, position q) into C[m*ldc + q] (added to C when acc), by the
 * tree of _mm512_reduce_add_ps (lanes i + i+8, then + i+4, then + i+2, then + i+1), four sums per vector
 * operation: the same sums to the bit as 16 separate reductions, a third of the instructions. */
CONV_INLINE void sm_reduce_4x4(const __m512* c, float* C, uint64_t ldc, int acc) {
    __m512 a[8], t[4], u[2], r;
    unsigned i, m;
    for (i = 0; i < 8; ++i) { /* quarters 0-1 + 2-3: a of c[2i] low, of c[2i+1] high */
        a[i] = _mm512_add_ps(_mm512_shuffle_f32x4(c[2 * i], c[2 * i + 1], 0x44),
                             _mm512_shuffle_f32x4(c[2 * i], c[2 * i + 1], 0xEE));
    }
    for (i = 0; i < 4; ++i) { /* quarter 0 + 1 of each half: quarter q holds c[4i + q]'s 4 partial sums */
        t[i] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0x88),
                             _mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0xDD));
    }
    for (i = 0; i < 2; ++i) { /* elements 0-1 + 2-3 of each quarter */
        u[i] = _mm512_add_ps(_mm512_shuffle_ps(t[2 * i], t[2 * i + 1], 0x44), _mm512_shuffle_ps(t[2 * i], t[2 * i + 1], 0xEE));
    }
    /* element 0 + 1: lane 4q + j holds the sum of c[4j + q]; transposed to lane 4j + q */
    r = _mm512_add_ps(_mm512_shuffle_ps(u[0], u[1], 0x88), _mm512_shuffle_ps(u[0], u[1], 0xDD));
    r = _mm512_permutexvar_ps(_mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0), r);
    for (m = 0; m < 4; ++m) {
        __m128 v = m == 0 ? _mm512_castps512_ps128(r) : m == 1 ? _mm512_extractf32x4_ps(r, 1)
                 : m == 2 ? _mm512_extractf32x4_ps(r, 2) : _mm512_extractf32x4_ps(r, 3);
        if (acc) v = _mm_add_ps(_mm_loadu_ps(C + m * ldc), v);
        _mm_storeu_ps(C + m * ldc, v);
    }
}

/* Dot form: C[m*ldc + q] (+)= sum_{kk < K} a[m*lda + kk] * bt[q*ldb + kk], m < MR, q < PB (the sum added to C
 * when acc); bt rows are zero beyond K up to a multiple of 16, a rows are read masked there. */
#define SM_DOT(MR, PB)                                                                                          \
    static void sm_dot_##MR##_##PB(uint64_t K, const float* restrict a, uint64_t lda, const float* restrict bt,  \
                                   uint64_t ldb, float* restrict C, uint64_t ldc, int acc) {                     \
        __m512 c[MR][PB];                                                                                         \
        unsigned m, q;                                                                                            \
        uint64_t kk = 0;                                                                                          \
        SM_UNROLL for (m = 0; m < MR; ++m) SM_UNROLL for (q = 0; q < PB; ++q) c[m][q] = _mm512_setzero_ps();    \
        for (; kk + 16 <= K; kk += 16) {                                                                          \
            __m512 bv[PB];                                                                                        \
            SM_UNROLL for (q = 0; q < PB; ++q) bv[q] = _mm512_loadu_ps(bt + q * ldb + kk);                        \
            SM_UNROLL for (m = 0; m < MR; ++m) {                                                                  \
                const __m512 av = _mm512_loadu_ps(a + m * lda + kk);                                              \
                _mm_prefetch((const char*)(a + m * lda + kk + 128), _MM_HINT_T0);                                 \
                SM_UNROLL for (q = 0; q < PB; ++q) c[m][q] = _mm512_fmadd_ps(av, bv[q], c[m][q]);                \
            }                                                                                                     \
        }                                                                                                         \
        if (kk < K) {                                                                                             \
            const __mmask16 mk = mask_n(K - kk);                                                                  \
            __m512 bv[PB];                                                                                        \
            SM_UNROLL for (q = 0; q < PB; ++q) bv[q] = _mm512_maskz_loadu_ps(mk, bt + q * ldb + kk);              \
            SM_UNROLL for (m = 0; m < MR; ++m) {                                                                  \
                const __m512 av = _mm512_maskz_loadu_ps(mk, a + m * lda + kk);                                    \
                SM_UNROLL for (q = 0; q < PB; ++q) c[m][q] = _mm512_fmadd_ps(av, bv[q], c[m][q]);                \
            }                                                                                                     \
        }                                                                                                         \
        if (MR == 4 && PB == 4) {                                                                                 \
            sm_reduce_4x4(&c[0][0], C, ldc, acc);                                                                 \
            return;                                                                                               \
        }                                                                                                         \
        SM_UNROLL for (m = 0; m < MR; ++m) SM_UNROLL for (q = 0; q < PB; ++q) {                                  \
            const float sum_ = _mm512_reduce_add_ps(c[m][q]);                                                     \
            C[m * ldc + q] = acc ? C[m * ldc + q] + sum_ : sum_;                                                  \
        }                                                                                                         \
    }
#if DMLPY_V16 == 2
/* AVX2: the 16-lane sums of rows [m0, m0 + MB) by positions [q0, q0 + QB) (MB, QB <= 2: 8 ymm accumulators, 4 B and
 * 2 A halves), each lane the same chain of multiply-adds as the AVX-512 form's, into c[m * PB + q]. */
CONV_INLINE void sm_dot_block(unsigned MB, unsigned QB, unsigned PB, unsigned m0, unsigned q0, uint64_t K,
                              const float* restrict a, uint64_t lda, const float* restrict bt, uint64_t ldb, __m512* c) {
    __m512 acc[2][2], bv[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    unsigned m, q;
    uint64_t kk = 0;
    V16E_UNROLL for (m = 0; m < 2; ++m) V16E_UNROLL for (q = 0; q < 2; ++q) acc[m][q] = _mm512_setzero_ps();
    for (; kk < K; kk += 16) {
        const __mmask16 mk = K - kk >= 16 ? (__mmask16)0xFFFFu : mask_n(K - kk);
        V16E_UNROLL for (q = 0; q < 2; ++q) if (q < QB) bv[q] = _mm512_maskz_loadu_ps(mk, bt + (q0 + q) * ldb + kk);
        V16E_UNROLL for (m = 0; m < 2; ++m) {
            if (m < MB) {
                const __m512 av = _mm512_maskz_loadu_ps(mk, a + (m0 + m) * lda + kk);
                V16E_UNROLL for (q = 0; q < 2; ++q) if (q < QB) acc[m][q] = _mm512_fmadd_ps(av, bv[q], acc[m][q]);
            }
        }
    }
    V16E_UNROLL for (m = 0; m < 2; ++m) V16E_UNROLL for (q = 0; q < 2; ++q) if (m < MB && q < QB) c[(m0 + m) * PB + q0 + q] = acc[m][q];
}
#undef SM_DOT
#define SM_DOT(MR, PB)                                                                                          \
    static void sm_dot_##MR##_##PB(uint64_t K, const float* restrict a, uint64_t lda, const float* restrict bt,  \
                                   uint64_t ldb, float* restrict C, uint64_t ldc, int acc) {                     \
        __m512 c[MR * PB];                                                                                        \
        unsigned m, q;                                                                                            \
        for (m = 0; m < MR; m += 2)                                                                               \
            for (q = 0; q < PB; q += 2)                                                                           \
                sm_dot_block(MR - m < 2 ? MR - m : 2, PB - q < 2 ? PB - q : 2, PB, m, q, K, a, lda, bt, ldb, c); \
        if (MR == 4 && PB == 4) {                                                                                 \
            sm_reduce_4x4(c, C, ldc, acc);                                                                        \
            return;                                                                                               \
        }                                                                                                         \
        for (m = 0; m < MR; ++m)                                                                                  \
            for (q = 0; q < PB; ++q) {                                                                            \
                const float sum_ = _mm512_reduce_add_ps(c[m * PB + q]);                                           \
                C[m * ldc + q] = acc ? C[m * ldc + q] + sum_ : sum_;                                              \
            }                                                                                                     \
    }
#endif
SM_DOT(4, 4)
SM_DOT(4, 3)
SM_DOT(6, 2)
SM_DOT(8, 1)
SM_DOT(1, 4)
SM_DOT(1, 3)
SM_DOT(1, 2)
SM_DOT(1, 1)

/* ---- packing --------------------------------------------------------------------------------------- */

/* Input channel and tap of kk. */
static inline void sm_kk(const conv_small* s, uint64_t kk, uint64_t* ic, uint64_t* t) {
    if (s->tap_major) {
        *t = kk / s->p->Cin_g;
        *ic = kk % s->p->Cin_g;
    } else {
        *ic = kk / s->kvol;
        *t = kk % s->kvol;
    }
}

/* Filter rows [r0, r1) (global output channels) into wpack as float32 [row][ic * kvol + tap]. */
static void sm_pack_w_rows(const conv_small* s, uint64_t r0, uint64_t r1) {
    const conv_plan* p = s->p;
    const conv_dim* D = &p->dim[0];
    const conv_dim* H = &p->dim[1];
    const conv_dim* W = &p->dim[2];
    uint64_t r, ic, kd, kh, kw;
    for (r = r0; r < r1; ++r) {
        float* dst = s->wpack + r * s->K;
        for (ic = 0; ic < p->Cin_g; ++ic) {
            for (kd = 0; kd < D->k; ++kd)
                for (kh = 0; kh < H->k; ++kh)
                    for (kw = 0; kw < W->k; ++kw)
                        *dst++ = load_elem(p->half, p->w,
                                           r * p->ws_0 + ic * p->ws_1 + kd * p->ws[0] + kh * p->ws[1] + kw * p->ws[2]);
        }
    }
}

/* B of image n, group g, rows kk in [k0, k1). */
static void sm_pack_b(const conv_small* s, uint64_t n, uint64_t g, uint64_t k0, uint64_t k1) {
    const conv_plan* p = s->p;
    float* Bng = s->B + (n * p->G + g) * s->b_floats;
    uint64_t kk;
    for (kk = k0; kk < k1; ++kk) {
        uint64_t ic, t, q;
        const int32_t* to;
        uint64_t cbase;
        sm_kk(s, kk, &ic, &t);
        to = s->tapoff + t * s->Ppad;
        cbase = n * p->xs_n + (g * p->Cin_g + ic) * p->xs_c;
        if (!s->dot && !p->half && s->tapshift[t] != SM_NOT_A_SHIFT) {
            /* the tap reads the input at a constant shift from the position (stride 1 with the input's own width, or
             * a 1x1 filter): masked loads, lanes off the input neither read nor faulting. The address is formed in
             * integer arithmetic: q + shift may be before the channel's first element. */
            const uintptr_t xc = (uintptr_t)((const float*)p->x + cbase);
            const int64_t shift = s->tapshift[t];
            float* dst = Bng + kk * s->ldb;
            for (q = 0; q < s->Ppad; q += 16) {
                const __mmask16 mk = _mm512_cmpge_epi32_mask(_mm512_loadu_si512((const void*)(to + q)), _mm512_setzero_si512());
                const float* at = (const float*)(xc + (uintptr_t)(((int64_t)q + shift) * (int64_t)sizeof(float)));
                _mm512_store_ps(dst + q, _mm512_maskz_loadu_ps(mk, at));
            }
        } else if (!s->dot && !p->half) {
            const float* xc = (const float*)p->x + cbase;
            float* dst = Bng + kk * s->ldb;
            for (q = 0; q < s->Ppad; q += 16) {
                const __m512i idx = _mm512_loadu_si512((const void*)(to + q));
                const __mmask16 mk = _mm512_cmpge_epi32_mask(idx, _mm512_setzero_si512());
                _mm512_store_ps(dst + q, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mk, idx, xc, 4));
            }
        } else {
            for (q = 0; q < s->P; ++q) {
                const float v = to[q] < 0 ? 0.0f : load_elem(p->half, p->x, cbase + (uint64_t)to[q]);
                if (s->dot) {
                    Bng[q * s->ldb + kk] = v;
                } else {
                    Bng[kk * s->ldb + q] = v;
                }
            }
            if (!s->dot) {
                for (; q < s->Ppad; ++q) Bng[kk * s->ldb + q] = 0.0f;
            }
        }
        if (s->ntail) {
            /* the tail positions again, position-major */
            float* bt = Bng + s->K * s->Ppad + kk;
            const float* row = Bng + kk * s->ldb + (s->P - s->ntail);
            for (q = 0; q < s->ntail; ++q) bt[q * s->Kpad] = row[q];
        }
    }
}

/* ---- items ----------------------------------------------------------------------------------------- */

/* Packing items: filter rows first (when packed), then B (n, g, kk chunk). */
static void sm_pack_run(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    const conv_small* s = (const conv_small*)vp;
    const uint64_t wi = s->wpack ? s->p->Cout : 0;
    uint64_t i;
    (void)worker;
    for (i = begin; i < end; ++i) {
        if (i < wi) {
            sm_pack_w_rows(s, i, i + 1);
        } else {
            uint64_t j = i - wi, nk = (s->K + s->kchunk - 1) / s->kchunk;
            uint64_t c = j % nk, ng = j / nk, k0 = c * s->kchunk, k1 = k0 + s->kchunk;
            if (k1 > s->K) k1 = s->K;
            sm_pack_b(s, ng / s->p->G, ng % s->p->G, k0, k1);
        }
    }
}

/* sm_epilogue's common case (float32, dense rows) for the activation `fast` (a constant where called): bias,
 * activation, check, store. Returns the lanes whose sums were not finite. */
CONV_INLINE __mmask16 sm_rows_dense(const conv_small* s, int fast, uint64_t n, uint64_t g, uint64_t oc0, uint64_t rows, const float* C) {
    const conv_plan* p = s->p;
    const __m512i e = _mm512_set1_epi32(0x7F800000);
    __mmask16 bad = 0;
    uint64_t r, q;
    for (r = 0; r < rows; ++r) {
        const uint64_t oc = g * p->Cout_g + oc0 + r;
        float* yrow = (float*)p->y + n * p->ys_n + oc * p->ys_c;
        const __m512 bv = _mm512_set1_ps(bias_of(p, oc));
        const float* crow = C + r * s->Ppad;
        for (q = 0; q + 16 <= s->P; q += 16) {
            const __m512 raw = _mm512_load_ps(crow + q);
            bad |= _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(raw), e), e);
            _mm512_storeu_ps(yrow + q, act_fast_vec(fast, &p->act, raw, bv));
        }
        if (q < s->P) {
            const __mmask16 mk = mask_n(s->P - q);
            const __m512 raw = _mm512_load_ps(crow + q);
            bad |= _mm512_mask_cmpeq_epi32_mask(mk, _mm512_and_si512(_mm512_castps_si512(raw), e), e);
            _mm512_mask_storeu_ps(yrow + q, mk, act_fast_vec(fast, &p->act, raw, bv));
        }
    }
    return bad;
}

/* Bias, activation and store of rows [0, rows) of C (output channels oc0 + r of group g, image n). */
static void sm_epilogue(const conv_small* s, uint64_t n, uint64_t g, uint64_t oc0, uint64_t rows, const float* C,
                        unsigned worker) {
    const conv_plan* p = s->p;
    const __m512i e = _mm512_set1_epi32(0x7F800000);
    const int fast = act_fast(&p->act);
    __mmask16 bad = 0;
    uint64_t r, q;
    if (s->dense_out && !p->half && fast) {
        act_fast_call(fast, bad = sm_rows_dense(s, fast_, n, g, oc0, rows, C));
        if (bad) s->nonfinite[worker] = 1;
        return;
    }
    for (r = 0; r < rows; ++r) {
        const uint64_t oc = g * p->Cout_g + oc0 + r;
        const uint64_t base = n * p->ys_n + oc * p->ys_c;
        const __m512 bv = _mm512_set1_ps(bias_of(p, oc));
        const float* crow = C + r * s->Ppad;
        for (q = 0; q < s->P; q += 16) {
            const __m512 raw = _mm512_load_ps(crow + q);
            const uint64_t cnt = s->P - q < 16 ? s->P - q : 16;
            const __m512 v = finish_vec(&p->act, raw, bv);
            bad |= _mm512_mask_cmpeq_epi32_mask(mask_n(cnt), _mm512_and_si512(_mm512_castps_si512(raw), e), e);
            if (s->dense_out) {
                store_vec(p->half, 0, p->y, base + q, v, mask_n(cnt));
            } else {
                float tmp[16];
                uint64_t j;
                _mm512_storeu_ps(tmp, v);
                for (j = 0; j < cnt; ++j) store_elem(p->half, p->y, base + s->yoff[q + j], tmp[j]);
            }
        }
    }
    if (bad) s->nonfinite[worker] = 1;
}

/* sm_epilogue's plain case for positions [q0, P) only (direct_out: the kernels stored the others). */
static void sm_epilogue_cols(const conv_small* s, uint64_t n, uint64_t g, uint64_t oc0, uint64_t rows, const float* C,
                             uint64_t q0, unsigned worker) {
    const conv_plan* p = s->p;
    const __m512i e = _mm512_set1_epi32(0x7F800000);
    const __mmask16 mk = mask_n(s->P - q0);
    __mmask16 bad = 0;
    uint64_t r;
    for (r = 0; r < rows; ++r) {
        const uint64_t oc = g * p->Cout_g + oc0 + r;
        float* yrow = (float*)p->y + n * p->ys_n + oc * p->ys_c;
        const __m512 raw = _mm512_maskz_loadu_ps(mk, C + r * s->Ppad + q0);
        bad |= _mm512_mask_cmpeq_epi32_mask(mk, _mm512_and_si512(_mm512_castps_si512(raw), e), e);
        _mm512_mask_storeu_ps(yrow + q0, mk, _mm512_add_ps(raw, _mm512_set1_ps(bias_of(p, oc))));
    }
    if (bad) s->nonfinite[worker] = 1;
}

/* Dot products of rows [r0, r1) (of group g; C rows from oc0) with pb <= 4 position-major rows bt (ldb apart),
 * into C columns from q0. Rows in blocks of 4 (6, 8 for 2, 1 positions). */
/* Rows r0..r1 of positions q0..q0+pb over the channel-taps k0..k0+kn (bt points at k0 of the first position
 * row); the block's sums are added to C unless k0 is 0. */
static void sm_dot_rows(const conv_small* s, uint64_t g, uint64_t oc0, uint64_t r0, uint64_t r1, const float* bt,
                        unsigned pb, float* C, uint64_t q0, uint64_t k0, uint64_t kn) {
    const int acc = k0 != 0;
    const conv_plan* p = s->p;
    const unsigned mr = pb >= 3 ? 4u : pb == 2 ? 6u : 8u;
    uint64_t r;
    for (r = r0; r < r1;) {
        const float* a = s->w + (g * p->Cout_g + r) * s->lda + k0;
        float* c = C + (r - oc0) * s->Ppad + q0;
        if (r1 - r >= mr) {
            switch (pb) {
            case 4: sm_dot_4_4(kn, a, s->lda, bt, s->Kpad, c, s->Ppad, acc); break;
            case 3: sm_dot_4_3(kn, a, s->lda, bt, s->Kpad, c, s->Ppad, acc); break;
            case 2: sm_dot_6_2(kn, a, s->lda, bt, s->Kpad, c, s->Ppad, acc); break;
            default: sm_dot_8_1(kn, a, s->lda, bt, s->Kpad, c, s->Ppad, acc); break;
            }
            r += mr;
        } else {
            switch (pb) {
            case 4: sm_dot_1_4(kn, a, s->lda, bt, s->Kpad, c, s->Ppad, acc); break;
            case 3: sm_dot_1_3(kn, a, s->lda, bt, s->Kpad, c, s->Ppad, acc); break;
            case 2: sm_dot_1_2(kn, a, s->lda, bt, s->Kpad, c, s->Ppad, acc); break;
            default: sm_dot_1_1(kn, a, s->lda, bt, s->Kpad, c, s->Ppad, acc); break;
            }
            r += 1;
        }
    }
}

/* Compute items (n, g, run of s->rows output channels); then the output-padding fills. */
static void sm_compute_run(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    const conv_small* s = (const conv_small*)vp;
    const conv_plan* p = s->p;
    float* C = s->C + (uint64_t)worker * s->c_floats;
    uint64_t item;
    for (item = begin; item < end; ++item) {
        uint64_t chunk, ng, n, g, oc0, oc1, r, k0;
        const float* Bng;
        if (item >= s->compute_items) {
            fill_item(p, item - s->compute_items);
            continue;
        }
        chunk = item % s->chunks;
        ng = item / s->chunks;
        n = ng / p->G;
        g = ng % p->G;
        oc0 = chunk * s->rows;
        oc1 = oc0 + s->rows < p->Cout_g ? oc0 + s->rows : p->Cout_g;
        if (oc0 >= oc1) continue;
        Bng = s->B + ng * s->b_floats;
        if (s->dot) {
            /* positions in blocks of at most 4 */
            uint64_t q0;
            for (q0 = 0; q0 < s->P; q0 += 4) {
                const unsigned pb = s->P - q0 >= 4 ? 4u : (unsigned)(s->P - q0);
                sm_dot_rows(s, g, oc0, oc0, oc1, Bng + q0 * s->Kpad, pb, C, q0, 0, s->K);
            }
        } else {
            const uint64_t nvec = s->nvec;
            /* B within L2: row blocks outermost, so each filter row is read front to back in one go; else K
             * blocks outermost, so a block of B serves every row block from L2 */
            const int rows_outer = s->b_floats * sizeof(float) <= CONV_SMALL_B_L2;
            uint64_t r0 = oc0;
            while (r0 < oc1) {
                const uint64_t r1 = rows_outer ? (oc1 - r0 >= s->mr ? r0 + s->mr : r0 + 1) : oc1;
                /* rows outermost: the row block's sums in the first rows of C, stored right after its last K
                 * block while they are in L1 (a C of every row of the item went through L2 and pushed the
                 * filter stream out: 1024 x 196 outputs are 0.8 MB) */
                const uint64_t cr0 = rows_outer ? r0 : oc0;
                /* one K block, float32 rows, no activation, whole vectors: the kernels store the outputs */
                const int direct = rows_outer && s->direct_out && r1 - r0 <= 16;
                float bias[16];
                uint32_t bad = 0;
                if (direct) {
                    for (r = r0; r < r1; ++r) bias[r - r0] = bias_of(p, g * p->Cout_g + r);
                }
                for (k0 = 0; k0 < s->K; k0 += s->kc) {
                    const uint64_t kn = s->K - k0 < s->kc ? s->K - k0 : s->kc;
                    for (r = r0; r < r1;) {
                        const unsigned mr = r1 - r >= s->mr ? s->mr : 1u;
                        const float* a = s->w + (g * p->Cout_g + r) * s->lda + k0;
                        uint64_t v0;
                        for (v0 = 0; v0 < nvec; v0 += s->nv) {
                            const unsigned nv = nvec - v0 >= s->nv ? s->nv : (unsigned)(nvec - v0);
                            if (direct) {
                                sm_bcast_pick(mr, nv)(kn, a, s->lda, Bng + 16 * v0, s->ldb,
                                                      (float*)p->y + n * p->ys_n + (g * p->Cout_g + r) * p->ys_c + 16 * v0,
                                                      p->ys_c, 0, bias + (r - r0), &bad);
                            } else {
                                sm_bcast_pick(mr, nv)(kn, a, s->lda, Bng + k0 * s->ldb + 16 * v0, s->ldb,
                                                      C + (r - cr0) * s->Ppad + 16 * v0, s->Ppad, k0 != 0, NULL, NULL);
                            }
                        }
                        r += mr;
                    }
                    /* the tail positions on the same K block, while its filter rows are still near (after
                     * the whole K they came from L2 a second time: the dots took a sixth of the path's time
                     * on 512 -> 512 channels at 7x7, now a ninth) */
                    if (s->ntail) {
                        sm_dot_rows(s, g, cr0, r0, r1, Bng + s->K * s->Ppad + k0, (unsigned)s->ntail, C,
                                    s->P - s->ntail, k0, kn);
                    }
                }
                if (direct) {
                    if (s->ntail) sm_epilogue_cols(s, n, g, r0, r1 - r0, C, s->P - s->ntail, worker);
                    if (bad) s->nonfinite[worker] = 1;
                } else if (rows_outer) {
                    sm_epilogue(s, n, g, r0, r1 - r0, C, worker);
                }
                r0 = r1;
            }
            if (rows_outer) continue;
        }
        sm_epilogue(s, n, g, oc0, oc1 - oc0, C, worker);
    }
}

/* ---- setup ------------------------------------------------------------------------------------------ */

/* Runs the problem on this path. Returns DMLPY_OK, DMLPY_E_OUT_OF_MEMORY, or -1 when it is not for it. */
static int32_t run_small(conv_plan* p, double macs, UINT threadCount) {
    const conv_dim* D = &p->dim[0];
    const conv_dim* H = &p->dim[1];
    const conv_dim* W = &p->dim[2];
    conv_small s;
    uint64_t t, q, od, oh, ow, bytes, w_floats, tapoff_bytes, tab_bytes, yoff_bytes, work;
    unsigned threads, limit, i;
    char* block;
    char* cur;
    int64_t maxoff = 0;
    memset(&s, 0, sizeof s);
    s.p = p;
    if (p->backward) return -1;
    s.P = D->outc * H->outc * W->outc;
    if (s.P == 0 || s.P > CONV_SMALL_MAX_P) return -1;
    s.kvol = D->k * H->k * W->k;
    if (s.kvol > 4096 || p->Cin_g > ((uint64_t)1 << 20)) return -1;
    s.K = p->Cin_g * s.kvol;
    /* many channels: the filter, not the input, is the large operand */
    if (s.K < CONV_SMALL_MIN_K || p->Cout_g < 16) return -1;
    /* Few channel-taps (a 1x1 expansion, 56 -> 336 channels): only with many output channels per channel-tap,
     * where the GEMM path's per-call packing and per-block overhead dominate (56 -> 336 at 2x2: 0.14 ms there,
     * 0.012 ms here); with few output channels (3 -> 32 channels, 3x3, 16x16) this path's per-call position
     * tables and input gathers cost more than the GEMM path's whole call. */
    if (s.K < 64 && p->Cout_g < 4 * s.K) return -1;
    s.Ppad = (s.P + 15) & ~(uint64_t)15;
    s.dot = s.P <= CONV_SMALL_DOT_P;
    s.Kpad = (s.K + 15) & ~(uint64_t)15;
    s.ldb = s.dot ? s.Kpad : s.Ppad;
    s.ntail = !s.dot && s.P > 16 && s.P % 16 != 0 && s.P % 16 <= 4 ? s.P % 16 : 0;
    s.nvec = (s.P - s.ntail + 15) / 16;
    s.b_floats = s.dot ? s.P * s.Kpad : s.K * s.Ppad + s.ntail * s.Kpad;

    /* filter: in place when float32 and each row's K elements are contiguous (OIHW or OHWI order) */
    {
        uint64_t expect = 1;
        int dd, oihw = 1, ohwi = 1;
        for (dd = 2; dd >= 0; --dd) {
            if (p->dim[dd].k > 1 && p->ws[dd] != expect) oihw = 0;
            if (p->dim[dd].k > 1 && p->ws[dd] != expect * p->Cin_g) ohwi = 0;
            expect *= p->dim[dd].k;
        }
        if (p->Cin_g > 1 && p->ws_1 != s.kvol) oihw = 0;
        if (p->Cin_g > 1 && p->ws_1 != 1) ohwi = 0;
        if (!p->half && (oihw || ohwi) && p->ws_0 >= s.K) {
            s.tap_major = !oihw;
            s.w = (const float*)p->w;
            s.lda = p->ws_0;
        } else {
            s.tap_major = 0;
            s.lda = s.K;
        }
    }
    w_floats = s.w ? 0 : p->Cout * s.K;

    /* position tables */
    tapoff_bytes = (s.kvol * s.Ppad * sizeof(int32_t) + 63) & ~(uint64_t)63;
    tab_bytes = tapoff_bytes + ((s.kvol * sizeof(int64_t) + 63) & ~(uint64_t)63); /* tapoff | tapshift */
    yoff_bytes = (s.P * sizeof(uint64_t) + 63) & ~(uint64_t)63;
    limit = threadCount ? threadCount : dmlpy_online_cpus();
    if (limit > 256) limit = 256;

    /* items: (n, g, run of rows); rows a multiple of the tile height */
    if (!s.dot) {
        const uint64_t nvec = s.nvec;
        s.nv = nvec >= 4 ? 4u : (unsigned)nvec;
        /* 8 x 3 vectors instead of 6 x 4 where that leaves no row tail for the 1-row kernel and no short
         * column group (1024 output channels, 12 vectors: 4 rows at a quarter of the speed otherwise) */
        if (s.nv == 4 && nvec % 3 == 0 && p->Cout_g % 6 != 0 && p->Cout_g % 8 == 0) s.nv = 3;
        s.mr = s.nv == 4 ? 6u : s.nv == 3 ? 8u : s.nv == 2 ? 12u : 16u;
        /* 4 x 4 vectors (still two multiply-adds per load) where 6 rows would leave a tail for the 1-row kernel
         * and 4 do not (64 output channels at 8x8: 4 rows at 60% of the speed took a tenth of the time) */
        if (s.mr == 6 && p->Cout_g % 6 != 0 && p->Cout_g % 4 == 0) s.mr = 4;
        s.kc = CONV_SMALL_B_BYTES / (s.Ppad * sizeof(float));
        if (s.kc < 64) s.kc = 64;
        if (s.kc > CONV_SMALL_KC) s.kc = CONV_SMALL_KC;
    } else {
        s.mr = 8;
    }
    {
        const uint64_t ng = p->N * p->G;
        const uint64_t want = limit > 1 ? (uint64_t)limit * 4 : 1;
        uint64_t blocks = (p->Cout_g + s.mr - 1) / s.mr;
        s.chunks = ng >= want ? 1 : (want + ng - 1) / ng;
        if (s.chunks > blocks) s.chunks = blocks;
        s.rows = ((blocks + s.chunks - 1) / s.chunks) * s.mr;
        s.chunks = (p->Cout_g + s.rows - 1) / s.rows;
        s.compute_items = ng * s.chunks;
    }
    s.c_floats = s.rows * s.Ppad;
    if (!dmlpy_mul_u64(s.b_floats, p->N * p->G, &bytes) || bytes > CONV_SMALL_CAP / sizeof(float)) return -1;
    bytes = 64 + ((bytes * sizeof(float) + 63) & ~(uint64_t)63);
    bytes += (w_floats * sizeof(float) + 63) & ~(uint64_t)63;
    bytes += (s.c_floats * sizeof(float) * limit + 63) & ~(uint64_t)63;
    bytes += tab_bytes + yoff_bytes + 64 + ((limit + 63) & ~(uint64_t)63);
    if (bytes > CONV_SMALL_CAP) return -1;

    /* input offsets of every tap and position must fit int32 */
    {
        int d;
        for (d = 0; d < 3; ++d) {
            const conv_dim* dm = &p->dim[d];
            maxoff += (int64_t)((dm->in - 1) * p->xs[d]);
        }
        if (maxoff >= ((int64_t)1 << 31) - 1) return -1;
    }

    block = (char*)conv_scratch_get(bytes);
    if (block == NULL) return DMLPY_E_OUT_OF_MEMORY;
    cur = (char*)(((uintptr_t)block + 64 + 63) & ~(uintptr_t)63);
    s.B = (float*)cur;
    cur += (s.b_floats * p->N * p->G * sizeof(float) + 63) & ~(uint64_t)63;
    if (w_floats) {
        s.wpack = (float*)cur;
        s.w = s.wpack;
        cur += (w_floats * sizeof(float) + 63) & ~(uint64_t)63;
    }
    s.C = (float*)cur;
    cur += (s.c_floats * sizeof(float) * limit + 63) & ~(uint64_t)63;
    s.tapoff = (int32_t*)cur;
    s.tapshift = (int64_t*)(cur + tapoff_bytes);
    cur += tab_bytes;
    s.yoff = (uint64_t*)cur;
    cur += yoff_bytes;
    s.nonfinite = (uint8_t*)cur;
    memset(s.nonfinite, 0, limit);

    /* tables: tap t = (kd, kh, kw) row-major in the filter's orientation; positions (od, oh, ow) row-major */
    s.dense_out = 1;
    q = 0;
    for (od = 0; od < D->outc; ++od) {
        for (oh = 0; oh < H->outc; ++oh) {
            for (ow = 0; ow < W->outc; ++ow, ++q) {
                s.yoff[q] = od * p->ys[0] + oh * p->ys[1] + ow * p->ys[2];
                if (s.yoff[q] != q) s.dense_out = 0;
            }
        }
    }
    for (t = 0; t < s.kvol; ++t) {
        const uint64_t k[3] = {t / (H->k * W->k), (t / W->k) % H->k, t % W->k};
        int32_t* to = s.tapoff + t * s.Ppad;
        uint64_t o[3];
        q = 0;
        for (o[0] = 0; o[0] < D->outc; ++o[0]) {
            for (o[1] = 0; o[1] < H->outc; ++o[1]) {
                for (o[2] = 0; o[2] < W->outc; ++o[2], ++q) {
                    int64_t off = 0;
                    int d, pad = 0;
                    for (d = 0; d < 3; ++d) {
                        const conv_dim* dm = &p->dim[d];
                        const uint64_t kf = p->flip ? dm->k - 1 - k[d] : k[d];
                        const int64_t pos = (int64_t)(o[d] * dm->s + kf * dm->d) - (int64_t)dm->sp;
                        if (pos < 0 || (uint64_t)pos >= dm->in) pad = 1;
                        else off += pos * (int64_t)p->xs[d];
                    }
                    to[q] = pad ? -1 : (int32_t)off;
                }
            }
        }
        for (; q < s.Ppad; ++q) to[q] = -1;
        s.tapshift[t] = SM_NOT_A_SHIFT;
        for (q = 0; q < s.P; ++q) { /* the first real input the tap reads sets the shift; every other must keep it */
            if (to[q] < 0) continue;
            if (s.tapshift[t] == SM_NOT_A_SHIFT) s.tapshift[t] = (int64_t)to[q] - (int64_t)q;
            if ((int64_t)to[q] - (int64_t)q != s.tapshift[t]) break;
        }
        if (q < s.P) s.tapshift[t] = SM_NOT_A_SHIFT;
        else if (s.tapshift[t] == SM_NOT_A_SHIFT) s.tapshift[t] = 0; /* all padding: every lane masked */
    }
    s.direct_out = !s.dot && s.K <= s.kc && s.dense_out && !p->half &&
                   (p->act.kind == DMLPY_ACT_NONE || p->act.kind == DMLPY_ACT_IDENTITY) && (s.P - s.ntail) % 16 == 0 &&
                   s.mr <= 16;

    work = macs / 4.0 > 1.8e19 ? UINT64_MAX : (uint64_t)(macs / 4.0);
    {
        /* packing: B rows in chunks of about 64K floats per item */
        const uint64_t per_row = s.dot ? s.P : s.Ppad;
        uint64_t nk, pack_items;
        s.kchunk = ((uint64_t)1 << 16) / per_row;
        /* at least one chunk per thread, so that a single image's B is packed by every thread */
        if (limit > 1 && s.kchunk * limit > s.K) s.kchunk = (s.K + limit - 1) / limit;
        if (s.kchunk < 1) s.kchunk = 1;
        nk = (s.K + s.kchunk - 1) / s.kchunk;
        s.b_items = p->N * p->G * nk;
        if ((s.dot || s.ntail) && s.Kpad > s.K) {
            /* zero tails of the position-major rows */
            const uint64_t first = s.dot ? 0 : s.K * s.Ppad, rows = s.dot ? s.P : s.ntail;
            uint64_t ng;
            for (ng = 0; ng < p->N * p->G; ++ng) {
                for (q = 0; q < rows; ++q) {
                    memset(s.B + ng * s.b_floats + first + q * s.Kpad + s.K, 0, (size_t)(s.Kpad - s.K) * sizeof(float));
                }
            }
        }
        pack_items = (w_floats ? p->Cout : 0) + s.b_items;
        threads = dmlpy_choose_threads((s.b_floats * p->N * p->G + w_floats) * 16u, pack_items, threadCount);
        if (threads > limit) threads = limit;
        dmlpy_parallel_for(pack_items, dmlpy_choose_grain(pack_items, threads), threads, sm_pack_run, &s);
    }
    p->fill_needed = D->outc < D->out || H->outc < H->out || W->outc < W->out;
    s.fill_items = p->fill_needed ? p->N * p->Cout : 0;
    {
        const uint64_t items = s.compute_items + s.fill_items;
        threads = dmlpy_choose_threads(work, items, threadCount);
        if (threads > limit) threads = limit;
        dmlpy_parallel_for(items, 1, threads, sm_compute_run, &s);
    }
    conv_scratch_put(block);
    for (i = 0; i < limit; ++i) {
        /* an infinite or NaN sum: an infinite or NaN weight (multiplied by padding zeros here, skipped by the
         * direct sum) or input; the caller redoes the call on the other paths, which write every output */
        if (s.nonfinite[i]) return -1;
    }
    return DMLPY_OK;
}

#else

static int32_t run_small(conv_plan* p, double macs, UINT threadCount) {
    (void)p;
    (void)macs;
    (void)threadCount;
    return -1;
}

#endif /* CONV_AVX512 */

#endif /* DMLPY_NATIVE_CONV_SMALL_H */
