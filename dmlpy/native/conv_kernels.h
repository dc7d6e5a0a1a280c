/*
 * conv_kernels.h - the blocked GEMM micro-kernels of the convolution's GEMM path (convolution.c), shared
 * with DML_OPERATOR_GEMM (gemm.c). Private; each including file gets its own static copies, compiled for
 * its instruction-set variant (isa/variant.h).
 *
 * A micro-kernel computes one MR x NR tile of C = A x B from a packed A panel (K steps of MR floats) and
 * NV row pointers into B, the k-th B row of vector v at xv[v] + off[k] (an offset table, so the same kernel
 * serves the convolution's implicit GEMM and a packed B panel, whose offsets are k * row stride).
 */
#ifndef DMLPY_NATIVE_CONV_KERNELS_H
#define DMLPY_NATIVE_CONV_KERNELS_H

#include "conv_shared.h"

/* Micro-tile: MR rows (output channels) x NV vectors of 16 columns (output positions). */
#define CONV_MR 8
#ifndef CONV_NV
#define CONV_NV 2
#endif
#define CONV_NR (16 * CONV_NV)

/* C[m][v*16 + j] (+)= sum_{kk < K} A[kk*MR + m] * xv[off[kk] + j], m < MR, v < NV, j < 16.
 * C rows are CONV_NR floats apart and 64-byte aligned; acc = 0: overwrite, 1: accumulate. */

#if defined(CONV_AVX512) && DMLPY_V16 == 2

/* AVX2 (v16.h's emulated 16-lane vectors): an MR x NR tile is 24 or 16 zmm accumulators, 48 or 32 ymm, three times
 * the 16 registers AVX2 has; written with the emulated vectors the compiler spilled them at every k step (about 12%
 * of the matmul peak). So the tile is computed in sub-tiles of 4 rows by 24 or 16 columns (12 or 8 ymm
 * accumulators, 3 or 2 B vectors and the broadcast A value: at most 16 registers), column strips outer, so a strip's
 * B rows are read from L1 by both row halves. Every output is still one fused multiply-add per k in increasing k
 * from a zero, then the running sum added: the AVX-512 kernels' operations lane for lane, so the same bits. */
#if CONV_NV == 3
#define KERNEL_PARAMS const float *x0, const float *x1, const float *x2
#define CONV_X2 x2
#else
#define KERNEL_PARAMS const float *x0, const float *x1
#define CONV_X2 NULL
#endif
#define CONV_SUB_Y (CONV_NV == 3 ? 3 : 2) /* ymm columns of a sub-tile: 24 or 16 floats */
/* the MR x NR tile by sub-tiles: column strips of CONV_SUB_Y ymm, in each the rows 4 at a time */
CONV_INLINE void conv_tile(unsigned MR, uint64_t K, const float* restrict A, const float* x0, const float* x1,
                           const float* x2, const int64_t* restrict off, uint64_t ldb, float* restrict C, int acc) {
    const float* bc[6] = {x0, x0 + 8, x1, x1 + 8, x2, x2 != NULL ? x2 + 8 : NULL};
    unsigned s, r0;
    V16E_UNROLL for (s = 0; s < 2 * CONV_NV / CONV_SUB_Y; ++s) {
        V16E_UNROLL for (r0 = 0; r0 < MR; r0 += 4) {
            v16e_fma_tile(MR - r0 < 4 ? MR - r0 : 4, CONV_SUB_Y, K, A + r0, 1, MR, bc + s * CONV_SUB_Y, off, ldb,
                          C + r0 * CONV_NR + 8 * CONV_SUB_Y * s, CONV_NR, acc, NULL, NULL);
        }
    }
}
#define DEFINE_KERNEL(NAME, MR)                                                                                   \
    static void NAME(uint64_t K, const float* restrict A, KERNEL_PARAMS, const int64_t* restrict off, float* restrict C, \
                     int acc) {                                                                                    \
        conv_tile(MR, K, A, x0, x1, CONV_X2, off, 0, C, acc);                                                      \
    }
#define DEFINE_KERNEL_LD(NAME, MR)                                                                                \
    static void NAME(uint64_t K, const float* restrict A, KERNEL_PARAMS, uint64_t ldb, float* restrict C, int acc) { \
        conv_tile(MR, K, A, x0, x1, CONV_X2, NULL, ldb, C, acc);                                                   \
    }
DEFINE_KERNEL(kernel_8, 8)
DEFINE_KERNEL(kernel_4, 4)
DEFINE_KERNEL(kernel_2, 2)
DEFINE_KERNEL(kernel_1, 1)
DEFINE_KERNEL_LD(kernel_ld_8, 8)
DEFINE_KERNEL_LD(kernel_ld_4, 4)
DEFINE_KERNEL_LD(kernel_ld_2, 2)
DEFINE_KERNEL_LD(kernel_ld_1, 1)

#elif defined(CONV_AVX512)

#define ROWS_8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define ROWS_4(X) X(0) X(1) X(2) X(3)
#define ROWS_2(X) X(0) X(1)
#define ROWS_1(X) X(0)

#if CONV_NV == 2
#define KERNEL_PARAMS const float *x0, const float *x1
#define ROW_DECL(m) __m512 c##m##a = _mm512_setzero_ps(), c##m##b = _mm512_setzero_ps();
#define ROW_ADD(m)                                                      \
    c##m##a = _mm512_add_ps(c##m##a, _mm512_load_ps(C + m * CONV_NR));      \
    c##m##b = _mm512_add_ps(c##m##b, _mm512_load_ps(C + m * CONV_NR + 16));
#define ROW_FMA(m)                                   \
    {                                                \
        const __m512 av = _mm512_set1_ps(a[m]);      \
        c##m##a = _mm512_fmadd_ps(av, b0, c##m##a);  \
        c##m##b = _mm512_fmadd_ps(av, b1, c##m##b);  \
    }
#define ROW_STORE(m)                                 \
    _mm512_store_ps(C + m * CONV_NR, c##m##a);       \
    _mm512_store_ps(C + m * CONV_NR + 16, c##m##b);
#define B_LOAD(o)                                    \
    const __m512 b0 = _mm512_loadu_ps(x0 + (o));     \
    const __m512 b1 = _mm512_loadu_ps(x1 + (o));
#elif CONV_NV == 3
#define KERNEL_PARAMS const float *x0, const float *x1, const float *x2
#define ROW_DECL(m) __m512 c##m##a = _mm512_setzero_ps(), c##m##b = _mm512_setzero_ps(), c##m##c = _mm512_setzero_ps();
#define ROW_ADD(m)                                                      \
    c##m##a = _mm512_add_ps(c##m##a, _mm512_load_ps(C + m * CONV_NR));      \
    c##m##b = _mm512_add_ps(c##m##b, _mm512_load_ps(C + m * CONV_NR + 16)); \
    c##m##c = _mm512_add_ps(c##m##c, _mm512_load_ps(C + m * CONV_NR + 32));
#define ROW_FMA(m)                                   \
    {                                                \
        const __m512 av = _mm512_set1_ps(a[m]);      \
        c##m##a = _mm512_fmadd_ps(av, b0, c##m##a);  \
        c##m##b = _mm512_fmadd_ps(av, b1, c##m##b);  \
        c##m##c = _mm512_fmadd_ps(av, b2, c##m##c);  \
    }
#define ROW_STORE(m)                                 \
    _mm512_store_ps(C + m * CONV_NR, c##m##a);       \
    _mm512_store_ps(C + m * CONV_NR + 16, c##m##b);  \
    _mm512_store_ps(C + m * CONV_NR + 32, c##m##c);
#define B_LOAD(o)                                    \
    const __m512 b0 = _mm512_loadu_ps(x0 + (o));     \
    const __m512 b1 = _mm512_loadu_ps(x1 + (o));     \
    const __m512 b2 = _mm512_loadu_ps(x2 + (o));
#else
#error "CONV_NV must be 2 or 3"
#endif

#ifndef CONV_PF
#define CONV_PF 8 /* k steps ahead the kernel prefetches its B rows (0: off) */
#endif
#if CONV_NV == 3
#define CONV_PREFETCH_X2(kk) _mm_prefetch((const char*)(x2 + off[(kk) + CONV_PF] + 15), _MM_HINT_T0);
#else
#define CONV_PREFETCH_X2(kk)
#endif
#if defined(__GNUC__) && !defined(__clang__)
#define CONV_UNROLL2 _Pragma("GCC unroll 2")
#else
#define CONV_UNROLL2
#endif
#if CONV_PF > 0
#define CONV_PREFETCH_AHEAD(kk)                                                                           \
    {                                                                                                     \
        _mm_prefetch((const char*)(x0 + off[(kk) + CONV_PF]), _MM_HINT_T0);                               \
        _mm_prefetch((const char*)(x1 + off[(kk) + CONV_PF] + 15), _MM_HINT_T0);                          \
        CONV_PREFETCH_X2(kk)                                                                              \
    }
#else
#define CONV_PREFETCH_AHEAD(kk)
#endif

/* The k loop in two parts, the steps that prefetch CONV_PF steps ahead and the last CONV_PF, each unrolled
 * by two: no per-step bound check for the prefetch, half the loop overhead (integer uops that otherwise
 * compete with the multiply-adds for ports 0 and 5). */
#define DEFINE_KERNEL(NAME, MR, ROWS)                                                                    \
    static void NAME(uint64_t K, const float* restrict A, KERNEL_PARAMS, const int64_t* restrict off,      \
                     float* restrict C, int acc) {                                                       \
        uint64_t kk = 0;                                                                                  \
        const uint64_t kpf = K > CONV_PF ? K - CONV_PF : 0;                                               \
        ROWS(ROW_DECL)                                                                                    \
        CONV_UNROLL2                                                                                      \
        for (; kk < kpf; ++kk) {                                                                          \
            const float* a = A + kk * MR;                                                                 \
            CONV_PREFETCH_AHEAD(kk)                                                                       \
            B_LOAD(off[kk])                                                                               \
            ROWS(ROW_FMA)                                                                                 \
        }                                                                                                 \
        CONV_UNROLL2                                                                                      \
        for (; kk < K; ++kk) {                                                                            \
            const float* a = A + kk * MR;                                                                 \
            B_LOAD(off[kk])                                                                               \
            ROWS(ROW_FMA)                                                                                 \
        }                                                                                                 \
        if (acc) { /* block sums added to the running sums: two-level summation */                        \
            ROWS(ROW_ADD)                                                                                 \
        }                                                                                                 \
        ROWS(ROW_STORE)                                                                                   \
    }

DEFINE_KERNEL(kernel_8, 8, ROWS_8)
DEFINE_KERNEL(kernel_4, 4, ROWS_4)
DEFINE_KERNEL(kernel_2, 2, ROWS_2)
DEFINE_KERNEL(kernel_1, 1, ROWS_1)

#if defined(__GNUC__) && !defined(__clang__)
#define CONV_UNROLL _Pragma("GCC unroll 4")
#else
#define CONV_UNROLL
#endif

/* The same tiles over B rows a constant ldb floats apart (a packed panel, or a row-major matrix read in
 * place): no offset table to load per k step. */
#define DEFINE_KERNEL_LD(NAME, MR, ROWS)                                                                 \
    static void NAME(uint64_t K, const float* restrict A, KERNEL_PARAMS, uint64_t ldb, float* restrict C, \
                     int acc) {                                                                          \
        uint64_t kk;                                                                                      \
        ROWS(ROW_DECL)                                                                                    \
        CONV_UNROLL                                                                                       \
        for (kk = 0; kk < K; ++kk) {                                                                      \
            const float* a = A + kk * MR;                                                                 \
            if (CONV_PF > 0 && ldb > CONV_NR && kk + CONV_PF < K) { /* rows in place, not a panel */      \
                const float* ahead = x0 + (kk + CONV_PF) * ldb;                                           \
                int v;                                                                                    \
                for (v = 0; v < CONV_NV; ++v) _mm_prefetch((const char*)(ahead + 16 * v), _MM_HINT_T0);   \
                _mm_prefetch((const char*)(ahead + CONV_NR - 1), _MM_HINT_T0);                            \
            }                                                                                             \
            B_LOAD(kk * ldb)                                                                              \
            ROWS(ROW_FMA)                                                                                 \
        }                                                                                                 \
        if (acc) {                                                                                        \
            ROWS(ROW_ADD)                                                                                 \
        }                                                                                                 \
        ROWS(ROW_STORE)                                                                                   \
    }

DEFINE_KERNEL_LD(kernel_ld_8, 8, ROWS_8)
DEFINE_KERNEL_LD(kernel_ld_4, 4, ROWS_4)
DEFINE_KERNEL_LD(kernel_ld_2, 2, ROWS_2)
DEFINE_KERNEL_LD(kernel_ld_1, 1, ROWS_1)

#else /* portable: plain loops the compiler can vectorise */

#define KERNEL_PARAMS const float* const* xv

#define DEFINE_KERNEL(NAME, MR)                                                                          \
    static void NAME(uint64_t K, const float* restrict A, KERNEL_PARAMS, const int64_t* restrict off,      \
                     float* restrict C, int acc) {                                                       \
        float sum[MR][CONV_NR];                                                                           \
        uint64_t kk;                                                                                      \
        int m, v, j;                                                                                      \
        for (m = 0; m < MR; ++m)                                                                          \
            for (j = 0; j < CONV_NR; ++j) sum[m][j] = 0.0f;                                               \
        for (kk = 0; kk < K; ++kk) {                                                                      \
            const float* a = A + kk * MR;                                                                 \
            for (v = 0; v < CONV_NV; ++v) {                                                               \
                const float* b = xv[v] + off[kk];                                                         \
                for (m = 0; m < MR; ++m) {                                                                \
                    const float av = a[m];                                                                \
                    for (j = 0; j < 16; ++j) sum[m][v * 16 + j] += av * b[j];                             \
                }                                                                                         \
            }                                                                                             \
        }                                                                                                 \
        for (m = 0; m < MR; ++m)                                                                          \
            for (j = 0; j < CONV_NR; ++j) C[m * CONV_NR + j] = acc ? C[m * CONV_NR + j] + sum[m][j] : sum[m][j]; \
    }

DEFINE_KERNEL(kernel_8, 8)
DEFINE_KERNEL(kernel_4, 4)
DEFINE_KERNEL(kernel_2, 2)
DEFINE_KERNEL(kernel_1, 1)

#define DEFINE_KERNEL_LD(NAME, MR)                                                                       \
    static void NAME(uint64_t K, const float* restrict A, KERNEL_PARAMS, uint64_t ldb, float* restrict C, \
                     int acc) {                                                                          \
        float sum[MR][CONV_NR];                                                                           \
        uint64_t kk;                                                                                      \
        int m, v, j;                                                                                      \
        for (m = 0; m < MR; ++m)                                                                          \
            for (j = 0; j < CONV_NR; ++j) sum[m][j] = 0.0f;                                               \
        for (kk = 0; kk < K; ++kk) {                                                                      \
            const float* a = A + kk * MR;                                                                 \
            for (v = 0; v < CONV_NV; ++v) {                                                               \
                const float* b = xv[v] + kk * ldb;                                                        \
                for (m = 0; m < MR; ++m) {                                                                \
                    const float av = a[m];                                                                \
                    for (j = 0; j < 16; ++j) sum[m][v * 16 + j] += av * b[j];                             \
                }                                                                                         \
            }                                                                                             \
        }                                                                                                 \
        for (m = 0; m < MR; ++m)                                                                          \
            for (j = 0; j < CONV_NR; ++j) C[m * CONV_NR + j] = acc ? C[m * CONV_NR + j] + sum[m][j] : sum[m][j]; \
    }

DEFINE_KERNEL_LD(kernel_ld_8, 8)
DEFINE_KERNEL_LD(kernel_ld_4, 4)
DEFINE_KERNEL_LD(kernel_ld_2, 2)
DEFINE_KERNEL_LD(kernel_ld_1, 1)

#endif

static inline void run_kernel(unsigned width, uint64_t K, const float* A, const float* const* xv,
                              const int64_t* off, float* C, int acc) {
#if defined(CONV_AVX512)
#if CONV_NV == 2
#define XV_ARGS xv[0], xv[1]
#else
#define XV_ARGS xv[0], xv[1], xv[2]
#endif
#else
#define XV_ARGS xv
#endif
    switch (width) {
    case 8: kernel_8(K, A, XV_ARGS, off, C, acc); break;
    case 4: kernel_4(K, A, XV_ARGS, off, C, acc); break;
    case 2: kernel_2(K, A, XV_ARGS, off, C, acc); break;
    default: kernel_1(K, A, XV_ARGS, off, C, acc); break;
    }
#undef XV_ARGS
}

/* run_kernel with B rows ldb floats apart. */
static inline void run_kernel_ld(unsigned width, uint64_t K, const float* A, const float* const* xv, uint64_t ldb,
                                 float* C, int acc) {
#if defined(CONV_AVX512)
#if CONV_NV == 2
#define XV_ARGS xv[0], xv[1]
#else
#define XV_ARGS xv[0], xv[1], xv[2]
#endif
#else
#define XV_ARGS xv
#endif
    switch (width) {
    case 8: kernel_ld_8(K, A, XV_ARGS, ldb, C, acc); break;
    case 4: kernel_ld_4(K, A, XV_ARGS, ldb, C, acc); break;
    case 2: kernel_ld_2(K, A, XV_ARGS, ldb, C, acc); break;
    default: kernel_ld_1(K, A, XV_ARGS, ldb, C, acc); break;
    }
#undef XV_ARGS
}

#endif /* DMLPY_NATIVE_CONV_KERNELS_H */
