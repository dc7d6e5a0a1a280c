/*
 * space_depth.c - DML_OPERATOR_SPACE_TO_DEPTH (68), DEPTH_TO_SPACE (69), DEPTH_TO_SPACE1 (113) and
 * SPACE_TO_DEPTH1 (114): pure data movement, bit for bit, for every element size (1, 2, 4, 8 bytes).
 *
 * Semantics (the space-to-depth and depth-to-space pages). A "space" tensor {N, C, H*B, W*B} and a "depth" tensor {N, C*B*B, H, W}
 * hold the same elements. Index both by (n, c, h, by, w, bx) with c < C, h < H, w < W, by, bx < B:
 *   space element (n, c, h*B + by, w*B + bx)
 *   depth element (n, oc, h, w), oc = (by*B + bx)*C + c   (DEPTH_COLUMN_ROW, the descs without Order)
 *                                oc = c*B*B + by*B + bx   (COLUMN_ROW_DEPTH)
 * SPACE_TO_DEPTH copies space -> depth, DEPTH_TO_SPACE depth -> space. So both are one 6-D strided copy
 * whose strides come from the two tensors' element strides; B = 1 is the identity.
 *
 * The copy engine:
 *   1. the six dims, dims of size 1 dropped, sorted by destination stride (outermost first), adjacent
 *      dims merged where they are contiguous in both tensors;
 *   2. the innermost dims form a block of R rows x (long dim L, short dim S), run by one kernel:
 *        COPY    L contiguous in both tensors (memcpy): NHWC with DCR, B = 1, ...
 *        DEINT   the source is contiguous over [l][s], the destination has S rows contiguous along l:
 *                packed NCHW space-to-depth (one input row -> B output rows);
 *        INTER   the inverse: S source rows -> one destination run [l][s]: packed NCHW depth-to-space;
 *        GENERIC any strides (typed scalar loops).
 *      DEINT and INTER use an AVX-512 permute network (S = 2..16 streams; dword permutes for 4- and
 *      8-byte elements, VBMI byte permutes for 1 and 2); without AVX-512, typed scalar loops (AVX2: block 2 of 4-byte
 *      elements by shuffles);
 *   3. the other dims are the work items, split across cores by dmlpy_parallel_for (the rows or the long
 *      dim are split too when there are few items). An output whose layout maps two indices to one element
 *      is staged (dmlpy_output_stage), so every destination the kernels see is one-to-one.
 *
 * Large outputs are written with non-temporal stores, which measured up to 2x faster than normal stores
 * here, but only when (nearly) every store of a destination stream is a whole aligned line: a stream
 * that mixes non-temporal lines with normal partial-line stores measured slower than normal stores
 * alone. So non-temporal stores are used only where whole lines are guaranteed: rows that are whole
 * lines, or "joined" rows (DEINT/INTER whose consecutive rows are adjacent in the destination). Joined
 * rows that are not whole lines go through a small buffer, a few rows at a time (as many as make whole
 * lines); where that buffer does not fit, a vector that straddles two rows is gathered from both with
 * masked loads.
 *
 * The kernel never trusts its caller: it re-reads both tensors (dmlpy_tensor_from_desc), re-checks every
 * size relation it relies on with overflow-checked arithmetic, and binds both buffers (dmlpy_tensor_bind),
 * so every offset it forms is an index of a valid element inside the bound ranges.
 */
#include <stdlib.h>
#include <string.h>

#include "dmlpy_internal.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VBMI__) && !defined(DMLPY_NO_AVX512)
#include <immintrin.h>
#define SD_AVX512 1
#endif

#if defined(__GNUC__) || defined(__clang__)
#define SD_INLINE static inline __attribute__((always_inline))
#else
#define SD_INLINE static inline
#endif

#define SD_DIMS 6
#define SD_MAX_STREAMS 16 /* S for the DEINT and INTER vector kernels */
#define SD_MAX_PAIRS (SD_MAX_STREAMS / 2)

/* Outputs at least this large use non-temporal stores where every store is a whole line. */
#ifndef SD_NT_MIN_BYTES
#define SD_NT_MIN_BYTES ((uint64_t)4 << 20)
#endif
/* Non-temporal stores into more concurrent destination streams than this measured slower than normal
 * stores (16 streams: ~15% slower), fewer faster. */
#ifndef SD_NT_MAX_STREAMS
#define SD_NT_MAX_STREAMS 8u
#endif
/* Joined rows are staged through an L1 buffer of at most this many bytes per chunk of rows. */
#ifndef SD_STAGE_BYTES
#define SD_STAGE_BYTES 8192u
#endif
/* Below this many elements per item the long dim is not split further. */
#ifndef SD_MIN_PIECE
#define SD_MIN_PIECE 2048u
#endif

enum { SD_COPY = 0, SD_DEINT = 1, SD_INTER = 2, SD_GENERIC = 3 };

typedef struct sd_dim {
    uint64_t size;
    uint64_t src; /* element strides */
    uint64_t dst;
} sd_dim;

#if defined(SD_AVX512)
/* out[o] = OR over pairs q of maskz_permutex2var(mask[o][q], in[2q], idx[o][q], in[2q+1]), permuting
 * dwords when the element size is a multiple of 4 (vpermt2d is one uop; the byte form vpermt2b is three
 * and measured ~15% slower on memory-bound float32 copies), bytes otherwise (mask bit i: unit i). */
typedef struct sd_net {
    __m512i idx[SD_MAX_STREAMS][SD_MAX_PAIRS];
    __mmask64 mask[SD_MAX_STREAMS][SD_MAX_PAIRS];
    int dwords;
} sd_net;
#endif

typedef struct sd_plan {
    uint32_t esize;
    const char* src;
    char* dst;
    int kind;
    /* The block: R rows of a long dim L and a short dim S (S = 1 when absent):
     *   COPY:    dst[s*ds_s + l] = src[s*ss_s + l]              (L strides 1 and 1)
     *   DEINT:   dst[s*ds_s + l] = src[l*S + s]                 (L: src S, dst 1; S: src 1)
     *   INTER:   dst[l*S + s]    = src[s*ss_s + l]              (L: src 1, dst S; S: dst 1)
     *   GENERIC: dst[s*ds_s + l*ds_l] = src[s*ss_s + l*ss_l]
     * Row t is (t / Ri, t % Ri) in up to two dims: offsets (t / Ri)*ss_ro + (t % Ri)*ss_ri (source) and
     * likewise ds_ro, ds_ri (destination). Only joined rows use the outer one (Ri = R otherwise). */
    uint64_t L, S, R, Ri;
    uint64_t ss_l, ds_l, ss_s, ds_s, ss_ri, ds_ri, ss_ro, ds_ro;
    uint64_t G, ss_g, ds_g; /* joined DEINT: G groups of S streams, each at src + g*ss_g, dst + g*ds_g */
    /* Items: an outer index times `pieces` pieces of the rows (split_rows) or of L. */
    int split_rows;
    uint64_t piece, pieces;
    unsigned outer_rank; /* outer dims, outermost first */
    sd_dim outer[SD_DIMS];
    int nt;     /* non-temporal stores (only where every full store is a whole line) */
    int joined; /* DEINT/INTER rows adjacent in the destination: one continuous run per stream */
#if defined(SD_AVX512)
    int use_net;
    const sd_net* net;
#endif
} sd_plan;

/* A block kernel: rows [r0, r1) of the block at dst/src (the item's outer offset), l in [l0, l1). */
typedef void (*sd_block_fn)(const sd_plan* p, char* dst, const char* src, uint64_t l0, uint64_t l1, uint64_t r0,
                            uint64_t r1);

/* Element offsets of row t. */
SD_INLINE uint64_t sd_row_src(const sd_plan* p, uint64_t t) {
    return p->Ri == p->R ? t * p->ss_ri : (t / p->Ri) * p->ss_ro + (t % p->Ri) * p->ss_ri;
}
SD_INLINE uint64_t sd_row_dst(const sd_plan* p, uint64_t t) {
    return p->Ri == p->R ? t * p->ds_ri : (t / p->Ri) * p->ds_ro + (t % p->Ri) * p->ds_ri;
}

/* ---- scalar kernels ------------------------------------------------------------------------------- */

/* T is the unsigned integer type of the element size: bits are copied as they are. */
#define SD_SCALAR_KERNELS(T)                                                                                    \
    static void sd_generic_##T(const sd_plan* p, char* dst, const char* src, uint64_t l0, uint64_t l1,           \
                               uint64_t r0, uint64_t r1) {                                                      \
        uint64_t r, s, l;                                                                                       \
        for (r = r0; r < r1; ++r) {                                                                             \
            for (s = 0; s < p->S; ++s) {                                                                        \
                const T* si = (const T*)src + sd_row_src(p, r) + s * p->ss_s;                                   \
                T* di = (T*)dst + sd_row_dst(p, r) + s * p->ds_s;                                               \
                if (p->ds_l == 1) {                                                                             \
                    for (l = l0; l < l1; ++l) di[l] = si[l * p->ss_l];                                          \
                } else {                                                                                        \
                    for (l = l0; l < l1; ++l) di[l * p->ds_l] = si[l * p->ss_l];                                \
                }                                                                                               \
            }                                                                                                   \
        }                                                                                                       \
    }                                                                                                           \
    static void sd_deint_##T(const sd_plan* p, char* dst, const char* src, uint64_t l0, uint64_t l1,             \
                             uint64_t r0, uint64_t r1) {                                                        \
        const uint64_t S = p->S, ds = p->ds_s;                                                                  \
        uint64_t r, s, l;                                                                                       \
        for (r = r0; r < r1; ++r) {                                                                             \
            const T* s0 = (const T*)src + sd_row_src(p, r);                                                     \
            T* d0 = (T*)dst + sd_row_dst(p, r);                                                                 \
            for (l = l0; l < l1; ++l) {                                                                         \
                for (s = 0; s < S; ++s) d0[s * ds + l] = s0[l * S + s];                                         \
            }                                                                                                   \
        }                                                                                                       \
    }                                                                                                           \
    static void sd_inter_##T(const sd_plan* p, char* dst, const char* src, uint64_t l0, uint64_t l1,             \
                             uint64_t r0, uint64_t r1) {                                                        \
        const uint64_t S = p->S, ss = p->ss_s;                                                                  \
        uint64_t r, s, l;                                                                                       \
        for (r = r0; r < r1; ++r) {                                                                             \
            const T* s0 = (const T*)src + sd_row_src(p, r);                                                     \
            T* d0 = (T*)dst + sd_row_dst(p, r);                                                                 \
            for (l = l0; l < l1; ++l) {                                                                         \
                for (s = 0; s < S; ++s) d0[l * S + s] = s0[s * ss + l];                                         \
            }                                                                                                   \
        }                                                                                                       \
    }

SD_SCALAR_KERNELS(uint8_t)
SD_SCALAR_KERNELS(uint16_t)
SD_SCALAR_KERNELS(uint32_t)
SD_SCALAR_KERNELS(uint64_t)

#if defined(__AVX2__)
#include <immintrin.h>
/* AVX2, 4-byte elements, block 2 (S = 2, the common space/depth block): 8 values of l per step, the two streams
 * split (DEINT) or merged (INTER) by two shuffles each. The bits are moved as they are (float shuffles do not
 * touch NaN payloads), so the result is the scalar kernels'. */
static void sd_deint2_avx2(const sd_plan* p, char* dst, const char* src, uint64_t l0, uint64_t l1, uint64_t r0, uint64_t r1) {
    const uint64_t ds = p->ds_s;
    uint64_t r, l;
    for (r = r0; r < r1; ++r) {
        const float* s0 = (const float*)src + sd_row_src(p, r);
        float* d0 = (float*)dst + sd_row_dst(p, r);
        for (l = l0; l + 8 <= l1; l += 8) {
            const __m256 a = _mm256_loadu_ps(s0 + 2 * l), b = _mm256_loadu_ps(s0 + 2 * l + 8);
            _mm256_storeu_ps(d0 + l, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xD8)));
            _mm256_storeu_ps(d0 + ds + l, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xDD)), 0xD8)));
        }
        for (; l < l1; ++l) {
            ((uint32_t*)d0)[l] = ((const uint32_t*)s0)[2 * l];
            ((uint32_t*)d0)[ds + l] = ((const uint32_t*)s0)[2 * l + 1];
        }
    }
}
static void sd_inter2_avx2(const sd_plan* p, char* dst, const char* src, uint64_t l0, uint64_t l1, uint64_t r0, uint64_t r1) {
    const uint64_t ss = p->ss_s;
    uint64_t r, l;
    for (r = r0; r < r1; ++r) {
        const float* s0 = (const float*)src + sd_row_src(p, r);
        float* d0 = (float*)dst + sd_row_dst(p, r);
        for (l = l0; l + 8 <= l1; l += 8) {
            const __m256 a = _mm256_loadu_ps(s0 + l), b = _mm256_loadu_ps(s0 + ss + l);
            const __m256 lo = _mm256_unpacklo_ps(a, b), hi = _mm256_unpackhi_ps(a, b); /* per 128-bit half */
            _mm256_storeu_ps(d0 + 2 * l, _mm256_permute2f128_ps(lo, hi, 0x20));
            _mm256_storeu_ps(d0 + 2 * l + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
        }
        for (; l < l1; ++l) {
            ((uint32_t*)d0)[2 * l] = ((const uint32_t*)s0)[l];
            ((uint32_t*)d0)[2 * l + 1] = ((const uint32_t*)s0)[ss + l];
        }
    }
}
#define SD_AVX2_PAIRS 1
#endif

/* ---- COPY --------------------------------------------------------------------------------------- */

#if defined(SD_AVX512)
static inline __mmask64 sd_byte_mask(uint64_t bytes) {
    return bytes >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << bytes) - 1);
}

/* A whole vector to d: non-temporal when asked and d starts a line. */
SD_INLINE void sd_store64(char* d, __m512i v, int nt) {
    if (nt && ((uintptr_t)d & 63) == 0) {
        _mm512_stream_si512((void*)d, v);
    } else {
        _mm512_storeu_si512((void*)d, v);
    }
}

/* `bytes` from s to d with non-temporal stores (d and bytes are whole lines when this is used). */
static void sd_copy_stream(char* d, const char* s, uint64_t bytes) {
    uint64_t i = 0;
    for (; i + 64 <= bytes; i += 64) sd_store64(d + i, _mm512_loadu_si512((const void*)(s + i)), 1);
    if (i < bytes) {
        __mmask64 m = sd_byte_mask(bytes - i);
        _mm512_mask_storeu_epi8((void*)(d + i), m, _mm512_maskz_loadu_epi8(m, (const void*)(s + i)));
    }
}
#endif

static void sd_copy(const sd_plan* p, char* dst, const char* src, uint64_t l0, uint64_t l1, uint64_t r0, uint64_t r1) {
    const uint64_t e = p->esize, bytes = (l1 - l0) * e;
    uint64_t r, s;
    for (r = r0; r < r1; ++r) {
        const char* sr = src + (sd_row_src(p, r) + l0) * e;
        char* dr = dst + (sd_row_dst(p, r) + l0) * e;
        for (s = 0; s < p->S; ++s) {
#if defined(SD_AVX512)
            if (p->nt) {
                sd_copy_stream(dr + s * p->ds_s * e, sr + s * p->ss_s * e, bytes);
                continue;
            }
#endif
            memcpy(dr + s * p->ds_s * e, sr + s * p->ss_s * e, (size_t)bytes);
        }
    }
}

#if defined(SD_AVX512)

/* ---- the permute network (DEINT and INTER) -------------------------------------------------------- */

SD_INLINE void sd_net_apply(const sd_net* net, unsigned S, const __m512i* in, __m512i* out) {
    unsigned o, q;
    if (net->dwords) {
        for (o = 0; o < S; ++o) {
            __m512i v = _mm512_maskz_permutex2var_epi32((__mmask16)net->mask[o][0], in[0], net->idx[o][0], in[S > 1 ? 1 : 0]);
            for (q = 1; 2 * q < S; ++q) {
                __m512i hi = in[2 * q + 1 < S ? 2 * q + 1 : 2 * q];
                v = _mm512_or_si512(v, _mm512_maskz_permutex2var_epi32((__mmask16)net->mask[o][q], in[2 * q], net->idx[o][q], hi));
            }
            out[o] = v;
        }
        return;
    }
    for (o = 0; o < S; ++o) {
        __m512i v = _mm512_maskz_permutex2var_epi8(net->mask[o][0], in[0], net->idx[o][0], in[S > 1 ? 1 : 0]);
        for (q = 1; 2 * q < S; ++q) {
            __m512i hi = in[2 * q + 1 < S ? 2 * q + 1 : 2 * q];
            v = _mm512_or_si512(v, _mm512_maskz_permutex2var_epi8(net->mask[o][q], in[2 * q], net->idx[o][q], hi));
        }
        out[o] = v;
    }
}

/* The byte permutes for S streams of E-byte elements (V = 64/E elements per vector). DEINT: output
 * stream o, lane m takes element m*S + o of the S-vector source chunk. INTER: output vector o, lane m
 * is element f = o*V + m of the interleaved run, i.e. source stream f % S at lane f / S. */
static void sd_build_net(sd_net* net, unsigned S, uint32_t e, int inter) {
    const unsigned v = 64u / e, unit = e % 4 == 0 ? 4u : 1u, per = e / unit; /* permuted units per element */
    uint32_t idx[SD_MAX_STREAMS][SD_MAX_PAIRS][64];
    unsigned o, m, b;
    memset(idx, 0, sizeof idx);
    memset(net->mask, 0, sizeof net->mask);
    net->dwords = unit == 4;
    for (o = 0; o < S; ++o) {
        for (m = 0; m < v; ++m) {
            unsigned vec, lane; /* which input vector, which element in it */
            if (inter) {
                unsigned f = o * v + m;
                vec = f % S;
                lane = f / S;
            } else {
                unsigned f = m * S + o;
                vec = f / v;
                lane = f % v;
            }
            for (b = 0; b < per; ++b) {
                idx[o][vec / 2][m * per + b] = (vec % 2) * (64 / unit) + lane * per + b;
                net->mask[o][vec / 2] |= (__mmask64)1 << (m * per + b);
            }
        }
        for (m = 0; m < SD_MAX_PAIRS; ++m) {
            uint8_t bytes[64];
            unsigned i;
            if (unit == 4) {
                for (i = 0; i < 16; ++i) memcpy(bytes + 4 * i, &idx[o][m][i], 4); /* little-endian dword lanes */
            } else {
                for (i = 0; i < 64; ++i) bytes[i] = (uint8_t)idx[o][m][i];
            }
            net->idx[o][m] = _mm512_loadu_si512((const void*)bytes);
        }
    }
}

/* ---- DEINT ---------------------------------------------------------------------------------------- */

/* One row, `count` (< V) values of l from l: masked loads and stores. */
SD_INLINE void sd_deint_part(const sd_plan* p, unsigned S, char* dst, const char* src, uint64_t l, uint64_t count) {
    const uint64_t e = p->esize, ds = p->ds_s * e, rest = count * e, total = rest * S; /* per stream, in all */
    const char* s = src + l * S * e;
    char* d = dst + l * e;
    __m512i in[SD_MAX_STREAMS], out[SD_MAX_STREAMS];
    unsigned q;
    for (q = 0; q < S; ++q) {
        uint64_t done = 64 * (uint64_t)q;
        in[q] = _mm512_maskz_loadu_epi8(total > done ? sd_byte_mask(total - done) : 0, (const void*)(s + done));
    }
    sd_net_apply(p->net, S, in, out);
    for (q = 0; q < S; ++q) _mm512_mask_storeu_epi8((void*)(d + q * ds), sd_byte_mask(rest), out[q]);
}

/* Row by row; each step reads S*64 source bytes (V values of l) and writes 64 bytes to each stream. */
SD_INLINE void sd_deint_rows_s(const sd_plan* p, unsigned S, char* dst, const char* src, uint64_t l0, uint64_t l1,
                               uint64_t r0, uint64_t r1) {
    const uint64_t e = p->esize, v = 64 / e, ds = p->ds_s * e;
    const int nt = p->nt;
    uint64_t r;
    for (r = r0; r < r1; ++r) {
        const char* sr = src + sd_row_src(p, r) * e;
        char* dr = dst + sd_row_dst(p, r) * e;
        uint64_t l = l0;
        for (; l + v <= l1; l += v) {
            __m512i in[SD_MAX_STREAMS], out[SD_MAX_STREAMS];
            const char* s = sr + l * S * e;
            unsigned q;
            for (q = 0; q < S; ++q) in[q] = _mm512_loadu_si512((const void*)(s + 64 * q));
            sd_net_apply(p->net, S, in, out);
            for (q = 0; q < S; ++q) sd_store64(dr + l * e + q * ds, out[q], nt);
        }
        if (l < l1) sd_deint_part(p, S, dr, sr, l, l1 - l);
    }
}

/* Rows per staged chunk: the fewest whole rows whose run (k*L values) is a whole number of lines. */
static inline uint64_t sd_stage_rows(uint64_t row_bytes) {
    uint64_t a = row_bytes, b = 64;
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return 64 / a;
}

/* Joined rows whose length is not a whole number of lines, staged: k rows at a time, each group's k source
 * rows copied into one contiguous buffer, then split into the S streams in whole, aligned vectors. This
 * measured ~1.2x faster than gathering the vectors that straddle two rows straight from the source
 * (sd_deint_joined_s, which does the rest). Needs the run to start on a line; returns the first row not
 * done (r0 when it does nothing). */
SD_INLINE uint64_t sd_deint_staged_s(const sd_plan* p, unsigned S, char* dst, const char* src, uint64_t r0, uint64_t r1) {
    const uint64_t e = p->esize, L = p->L, row_bytes = L * S * e, ds = p->ds_s * e, sg = p->ss_g * e, dg = p->ds_g * e;
    const uint64_t k = sd_stage_rows(L * e), steps = k * L * e / 64;
    char* run = dst + sd_row_dst(p, r0) * e;
    _Alignas(64) char buf[SD_STAGE_BYTES];
    uint64_t r, j, g, u;
    if (k == 1 || k * row_bytes > SD_STAGE_BYTES || ((uintptr_t)run & 63) != 0) return r0;
    for (r = r0; r + k <= r1; r += k, run += k * L * e) {
        for (g = 0; g < p->G; ++g) {
            for (j = 0; j < k; ++j) memcpy(buf + j * row_bytes, src + sd_row_src(p, r + j) * e + g * sg, (size_t)row_bytes);
            for (u = 0; u < steps; ++u) {
                __m512i in[SD_MAX_STREAMS], out[SD_MAX_STREAMS];
                unsigned q;
                for (q = 0; q < S; ++q) in[q] = _mm512_load_si512((const void*)(buf + (u * S + q) * 64));
                sd_net_apply(p->net, S, in, out);
                for (q = 0; q < S; ++q) _mm512_stream_si512((void*)(run + g * dg + q * ds + u * 64), out[q]);
            }
        }
    }
    return r;
}

/* Joined rows (consecutive rows adjacent in every stream, L >= V): each stream is one run of values.
 * Whole vectors go to whole lines after a head; a vector that straddles rows r and r+1 gathers its source
 * from both. G groups (space-to-depth's by: the B source rows of one block row) are done step by step
 * together, so the source is read in order while every destination stream still gets whole lines. */
SD_INLINE void sd_deint_joined_s(const sd_plan* p, unsigned S, char* dst, const char* src, uint64_t r0, uint64_t r1) {
    const uint64_t e = p->esize, v = 64 / e, L = p->L, total = (r1 - r0) * L, ds = p->ds_s * e;
    const uint64_t G = p->G, sg = p->ss_g * e, dg = p->ds_g * e;
    uint64_t f, r = r0, l, g;
    const char* row;
    if (r0 >= r1) return;
    row = src + sd_row_src(p, r0) * e;
    dst += sd_row_dst(p, r0) * e; /* group 0, stream 0's run */
    f = ((64 - ((uintptr_t)dst & 63)) & 63) / e;
    if (f > total) f = total;
    for (g = 0; g < G && f; ++g) sd_deint_part(p, S, dst + g * dg, row + g * sg, 0, f); /* f < V <= L */
    l = f;
    for (; f + v <= total; f += v) {
        const int straddle = l + v > L;
        const uint64_t a = straddle ? (L - l) * S * e : 0; /* bytes from row r, the rest from row r + 1 */
        const char* next = straddle ? src + sd_row_src(p, r + 1) * e : row;
        for (g = 0; g < G; ++g) {
            __m512i in[SD_MAX_STREAMS], out[SD_MAX_STREAMS];
            const char* sa = row + g * sg + l * S * e;
            char* d = dst + g * dg + f * e;
            unsigned q;
            if (!straddle) {
                for (q = 0; q < S; ++q) in[q] = _mm512_loadu_si512((const void*)(sa + 64 * q));
            } else {
                const char* sb = next + g * sg - a; /* chunk byte u >= a is the next row's byte u - a */
                for (q = 0; q < S; ++q) {
                    uint64_t lo = 64 * (uint64_t)q;
                    __mmask64 ma = a > lo ? sd_byte_mask(a - lo) : 0;
                    in[q] = _mm512_or_si512(_mm512_maskz_loadu_epi8(ma, (const void*)(sa + lo)),
                                            _mm512_maskz_loadu_epi8(~ma, (const void*)(sb + lo)));
                }
            }
            sd_net_apply(p->net, S, in, out);
            for (q = 0; q < S; ++q) sd_store64(d + q * ds, out[q], p->nt);
        }
        if (straddle) {
            l = v - (L - l);
            row = next;
            ++r;
        } else {
            l += v;
        }
        if (l == L && f + v < total) {
            l = 0;
            row = src + sd_row_src(p, ++r) * e;
        }
    }
    for (g = 0; g < G && f < total; ++g) {
        sd_deint_part(p, S, dst + g * dg + (f - l) * e, row + g * sg, l, total - f); /* within the last row */
    }
}

/* ---- INTER ---------------------------------------------------------------------------------------- */

/* One row, `count` (< V) values of l from l: masked loads and stores. */
SD_INLINE void sd_inter_part(const sd_plan* p, unsigned S, char* dst, const char* src, uint64_t l, uint64_t count) {
    const uint64_t e = p->esize, ss = p->ss_s * e, rest = count * e, total = rest * S;
    const char* s = src + l * e;
    char* d = dst + l * S * e;
    __m512i in[SD_MAX_STREAMS], out[SD_MAX_STREAMS];
    unsigned q;
    for (q = 0; q < S; ++q) in[q] = _mm512_maskz_loadu_epi8(sd_byte_mask(rest), (const void*)(s + q * ss));
    sd_net_apply(p->net, S, in, out);
    for (q = 0; q < S; ++q) {
        uint64_t done = 64 * (uint64_t)q;
        if (total > done) _mm512_mask_storeu_epi8((void*)(d + done), sd_byte_mask(total - done), out[q]);
    }
}

/* Row by row; each step reads 64 bytes of each of the S source rows and writes S*64 contiguous bytes. */
SD_INLINE void sd_inter_rows_s(const sd_plan* p, unsigned S, char* dst, const char* src, uint64_t l0, uint64_t l1,
                               uint64_t r0, uint64_t r1) {
    const uint64_t e = p->esize, v = 64 / e, ss = p->ss_s * e;
    const int nt = p->nt;
    uint64_t r;
    for (r = r0; r < r1; ++r) {
        const char* sr = src + sd_row_src(p, r) * e;
        char* dr = dst + sd_row_dst(p, r) * e;
        uint64_t l = l0;
        for (; l + v <= l1; l += v) {
            __m512i in[SD_MAX_STREAMS], out[SD_MAX_STREAMS];
            char* d = dr + l * S * e;
            unsigned q;
            for (q = 0; q < S; ++q) in[q] = _mm512_loadu_si512((const void*)(sr + l * e + q * ss));
            sd_net_apply(p->net, S, in, out);
            for (q = 0; q < S; ++q) sd_store64(d + 64 * q, out[q], nt);
        }
        if (l < l1) sd_inter_part(p, S, dr, sr, l, l1 - l);
    }
}

/* The inverse of sd_deint_staged_s: each stream's k source rows copied into one contiguous buffer, then
 * interleaved into whole, aligned destination vectors. */
SD_INLINE uint64_t sd_inter_staged_s(const sd_plan* p, unsigned S, char* dst, const char* src, uint64_t r0, uint64_t r1) {
    const uint64_t e = p->esize, L = p->L, ss = p->ss_s * e, k = sd_stage_rows(L * e), run_bytes = k * L * e;
    const uint64_t steps = run_bytes / 64;
    char* run = dst + sd_row_dst(p, r0) * e;
    _Alignas(64) char buf[SD_STAGE_BYTES];
    uint64_t r, j, u;
    unsigned q;
    if (k == 1 || S * run_bytes > SD_STAGE_BYTES || ((uintptr_t)run & 63) != 0) return r0;
    for (r = r0; r + k <= r1; r += k, run += S * run_bytes) {
        for (q = 0; q < S; ++q) {
            for (j = 0; j < k; ++j) memcpy(buf + q * run_bytes + j * L * e, src + sd_row_src(p, r + j) * e + q * ss, (size_t)(L * e));
        }
        for (u = 0; u < steps; ++u) {
            __m512i in[SD_MAX_STREAMS], out[SD_MAX_STREAMS];
            for (q = 0; q < S; ++q) in[q] = _mm512_load_si512((const void*)(buf + q * run_bytes + u * 64));
            sd_net_apply(p->net, S, in, out);
            for (q = 0; q < S; ++q) _mm512_stream_si512((void*)(run + (u * S + q) * 64), out[q]);
        }
    }
    return r;
}

/* Joined rows (ds_r == L*S, L >= V): the destination is one run of rows*L*S values. The head is whole
 * values of l up to a line start (when S*E steps can reach one); a straddling step loads each source
 * stream from rows r and r+1. */
SD_INLINE void sd_inter_joined_s(const sd_plan* p, unsigned S, char* dst, const char* src, uint64_t r0, uint64_t r1) {
    const uint64_t e = p->esize, v = 64 / e, L = p->L, total = (r1 - r0) * L, ss = p->ss_s * e;
    const uint64_t step = S * e; /* destination bytes per value of l */
    uint64_t f = 0, r = r0, l;
    const char* row;
    if (r0 >= r1) return;
    row = src + sd_row_src(p, r0) * e;
    dst += sd_row_dst(p, r0) * e;
    while (f < v && ((uintptr_t)(dst + f * step) & 63) != 0) ++f;
    if (f == v) f = 0; /* no value of l starts a line: the stores stay unaligned (and normal) */
    if (f) sd_inter_part(p, S, dst, row, 0, f);
    l = f;
    for (; f + v <= total; f += v) {
        __m512i in[SD_MAX_STREAMS], out[SD_MAX_STREAMS];
        char* d = dst + f * step;
        unsigned q;
        if (l + v <= L) {
            for (q = 0; q < S; ++q) in[q] = _mm512_loadu_si512((const void*)(row + l * e + q * ss));
            l += v;
        } else {
            const uint64_t a = (L - l) * e;
            const __mmask64 ma = sd_byte_mask(a);
            const char* next = src + sd_row_src(p, ++r) * e;
            for (q = 0; q < S; ++q) {
                in[q] = _mm512_or_si512(_mm512_maskz_loadu_epi8(ma, (const void*)(row + l * e + q * ss)),
                                        _mm512_maskz_loadu_epi8(~ma, (const void*)(next - a + q * ss)));
            }
            l = v - (L - l);
            row = next;
        }
        sd_net_apply(p->net, S, in, out);
        for (q = 0; q < S; ++q) sd_store64(d + 64 * q, out[q], p->nt);
        if (l == L && f + v < total) {
            l = 0;
            row = src + sd_row_src(p, ++r) * e;
        }
    }
    if (f < total) sd_inter_part(p, S, dst + (f - l) * step, row, l, total - f);
}

/* Constant S for the common block sizes lets the compiler unroll the network. */
#define SD_S_SWITCH(call)                                                                                       \
    switch (p->S) {                                                                                             \
    case 2: call(2); break;                                                                                     \
    case 3: call(3); break;                                                                                     \
    case 4: call(4); break;                                                                                     \
    case 8: call(8); break;                                                                                     \
    default: call((unsigned)p->S); break;                                                                       \
    }

static void sd_deint_vec(const sd_plan* p, char* dst, const char* src, uint64_t l0, uint64_t l1, uint64_t r0,
                         uint64_t r1) {
#define SD_DEINT_ROWS(S) sd_deint_rows_s(p, S, dst, src, l0, l1, r0, r1)
#define SD_DEINT_JOINED(S) sd_deint_joined_s(p, S, dst, src, sd_deint_staged_s(p, S, dst, src, r0, r1), r1)
    if (p->joined) {
        SD_S_SWITCH(SD_DEINT_JOINED)
    } else {
        SD_S_SWITCH(SD_DEINT_ROWS)
    }
}

static void sd_inter_vec(const sd_plan* p, char* dst, const char* src, uint64_t l0, uint64_t l1, uint64_t r0,
                         uint64_t r1) {
#define SD_INTER_ROWS(S) sd_inter_rows_s(p, S, dst, src, l0, l1, r0, r1)
#define SD_INTER_JOINED(S) sd_inter_joined_s(p, S, dst, src, sd_inter_staged_s(p, S, dst, src, r0, r1), r1)
    if (p->joined) {
        SD_S_SWITCH(SD_INTER_JOINED)
    } else {
        SD_S_SWITCH(SD_INTER_ROWS)
    }
}

#endif /* SD_AVX512 */

static sd_block_fn sd_block_function(const sd_plan* p) {
    if (p->kind == SD_COPY) return sd_copy;
#if defined(SD_AVX512)
    if (p->use_net) return p->kind == SD_DEINT ? sd_deint_vec : sd_inter_vec;
#endif
#if defined(SD_AVX2_PAIRS)
    if (p->esize == 4 && p->S == 2 && p->kind == SD_DEINT) return sd_deint2_avx2;
    if (p->esize == 4 && p->S == 2 && p->kind == SD_INTER) return sd_inter2_avx2;
#endif
    switch (p->esize) {
    case 1: return p->kind == SD_DEINT ? sd_deint_uint8_t : p->kind == SD_INTER ? sd_inter_uint8_t : sd_generic_uint8_t;
    case 2: return p->kind == SD_DEINT ? sd_deint_uint16_t : p->kind == SD_INTER ? sd_inter_uint16_t : sd_generic_uint16_t;
    case 4: return p->kind == SD_DEINT ? sd_deint_uint32_t : p->kind == SD_INTER ? sd_inter_uint32_t : sd_generic_uint32_t;
    default: return p->kind == SD_DEINT ? sd_deint_uint64_t : p->kind == SD_INTER ? sd_inter_uint64_t : sd_generic_uint64_t;
    }
}

/* ---- items ------------------------------------------------------------------------------------- */

/* Items [begin, end): item = outer index * pieces + piece. The outer coordinates are decomposed once and
 * then stepped with carries. */
static void sd_run(void* vp, uint64_t begin, uint64_t end, unsigned worker) {
    const sd_plan* p = (const sd_plan*)vp;
    const sd_block_fn block = sd_block_function(p);
    const uint64_t e = p->esize;
    uint64_t coord[SD_DIMS];
    uint64_t outer = begin / p->pieces, piece = begin % p->pieces, item, src_off = 0, dst_off = 0;
    int k;
    (void)worker;
    for (k = (int)p->outer_rank - 1; k >= 0; --k) {
        coord[k] = outer % p->outer[k].size;
        outer /= p->outer[k].size;
        src_off += coord[k] * p->outer[k].src;
        dst_off += coord[k] * p->outer[k].dst;
    }
    for (item = begin; item < end; ++item) {
        uint64_t a = piece * p->piece, b = a + p->piece;
        if (p->split_rows) {
            if (b > p->R) b = p->R;
            block(p, p->dst + dst_off * e, p->src + src_off * e, 0, p->L, a, b);
        } else {
            if (b > p->L) b = p->L;
            block(p, p->dst + dst_off * e, p->src + src_off * e, a, b, 0, p->R);
        }
        if (++piece < p->pieces) continue;
        piece = 0;
        for (k = (int)p->outer_rank - 1; k >= 0; --k) {
            const sd_dim* d = &p->outer[k];
            if (++coord[k] < d->size) {
                src_off += d->src;
                dst_off += d->dst;
                break;
            }
            coord[k] = 0;
            src_off -= (d->size - 1) * d->src;
            dst_off -= (d->size - 1) * d->dst;
        }
    }
#if defined(SD_AVX512)
    if (p->nt) _mm_sfence(); /* the non-temporal stores are globally visible before the join */
#endif
}

/* ---- planning ------------------------------------------------------------------------------------ */

/* Drops unit dims, sorts by destination stride (outermost first; ties by source stride), merges dims
 * that are contiguous in both tensors. Returns the new count (at least 1). */
static unsigned sd_simplify(sd_dim* d, unsigned n) {
    unsigned i, j, m = 0;
    for (i = 0; i < n; ++i) {
        if (d[i].size > 1) d[m++] = d[i];
    }
    if (m == 0) {
        d[0].size = 1;
        d[0].src = 1;
        d[0].dst = 1;
        return 1;
    }
    for (i = 1; i < m; ++i) { /* insertion sort, stable */
        sd_dim t = d[i];
        for (j = i; j > 0 && (d[j - 1].dst < t.dst || (d[j - 1].dst == t.dst && d[j - 1].src < t.src)); --j) d[j] = d[j - 1];
        d[j] = t;
    }
    n = m;
    m = 0;
    for (i = 0; i < n; ++i) {
        /* The last kept dim (outer) absorbs d[i] (inner) when its step is one whole inner run in both. */
        if (m > 0) {
            sd_dim* o = &d[m - 1];
            if (o->dst == d[i].dst * d[i].size && o->src == d[i].src * d[i].size) {
                o->size *= d[i].size; /* a product of sizes of one tensor: < 2^32 */
                o->dst = d[i].dst;
                o->src = d[i].src;
                continue;
            }
        }
        d[m++] = d[i];
    }
    return m;
}

/* The block's kind, L and S from the innermost dims; the rest become outer dims (destination order). */
static void sd_choose_block(sd_plan* p, const sd_dim* d, unsigned n) {
    const sd_dim j = d[n - 1]; /* smallest destination stride */
    unsigned i, pick = n;
    p->S = 1;
    p->ss_s = p->ds_s = 0;
    p->kind = SD_GENERIC;
    p->L = j.size;
    p->ss_l = j.src;
    p->ds_l = j.dst;
    if (j.dst == 1 && j.src == 1) {
        p->kind = SD_COPY;
        /* The rows: the smallest dim (space-to-depth's by), so that the next outer dim (the row loop)
         * advances a few sequential streams on both sides instead of striding through twice. */
        if (n > 1) {
            pick = 0;
            for (i = 1; i + 1 < n; ++i) {
                if (d[i].size < d[pick].size || (d[i].size == d[pick].size && d[i].src < d[pick].src)) pick = i;
            }
        }
    } else if (j.dst == 1) {
        for (i = 0; i + 1 < n; ++i) {
            if (d[i].src != 1) continue;
            if (j.src == d[i].size && d[i].size <= SD_MAX_STREAMS) { /* src [l][s] -> S dst rows */
                p->kind = SD_DEINT;
                pick = i;
                break;
            }
            if (d[i].dst == j.size && j.size <= SD_MAX_STREAMS) { /* S src rows -> dst [l][s] */
                p->kind = SD_INTER;
                p->L = d[i].size;
                p->ss_l = 1;
                p->ds_l = j.size;
                p->S = j.size;
                p->ss_s = j.src;
                p->ds_s = 1;
                pick = i;
                break;
            }
        }
    }
    if (p->kind == SD_GENERIC && n > 1) {
        /* The second dim of a generic block: the smallest source stride, for read locality. */
        pick = 0;
        for (i = 1; i + 1 < n; ++i) {
            if (d[i].src < d[pick].src) pick = i;
        }
    }
    if (pick < n && p->kind != SD_INTER) {
        p->S = d[pick].size;
        p->ss_s = d[pick].src;
        p->ds_s = d[pick].dst;
    }
    p->outer_rank = 0;
    for (i = 0; i + 1 < n; ++i) {
        if (i != pick) p->outer[p->outer_rank++] = d[i];
    }
}

/* Non-temporal stores, where every whole-vector store then starts a line: joined DEINT/INTER rows, or
 * rows and strides that are whole lines. Sets p->nt and p->joined. */
static void sd_choose_stores(sd_plan* p, uint64_t out_bytes, uintptr_t dst_base) {
    const uint64_t e = p->esize;
    unsigned i;
    int lines = 1;
    p->nt = p->joined = 0;
    p->G = 1;
    p->ss_g = p->ds_g = 0;
#if defined(SD_AVX512)
    {
        const uint64_t v = 64 / e;
        const sd_dim* rows = p->outer_rank ? &p->outer[p->outer_rank - 1] : NULL;
        if (out_bytes < SD_NT_MIN_BYTES || (dst_base & 63) != 0) return;
        if (p->use_net && rows != NULL && p->L >= v) {
            if (p->kind == SD_DEINT && rows->dst == p->L && (p->ds_s * e) % 64 == 0) {
                /* Source dims inside the rows (by) become groups, read in order with the rows: at most
                 * one, small, whose streams start on lines too. Otherwise no joined rows. */
                int group = -1, ok = 1;
                for (i = 0; i + 1 < p->outer_rank; ++i) {
                    const sd_dim* o = &p->outer[i];
                    if (o->src >= rows->src) continue;
                    if (group >= 0 || o->size * p->S > SD_NT_MAX_STREAMS || (o->dst * e) % 64 != 0) ok = 0;
                    group = (int)i;
                }
                if (ok && group >= 0) {
                    p->G = p->outer[group].size;
                    p->ss_g = p->outer[group].src;
                    p->ds_g = p->outer[group].dst;
                    for (i = (unsigned)group; i + 1 < p->outer_rank; ++i) p->outer[i] = p->outer[i + 1];
                    --p->outer_rank;
                }
                p->joined = ok;
            }
            if (p->kind == SD_INTER && rows->dst == p->L * p->S) p->joined = 1;
        }
        if (p->joined) {
            p->nt = 1;
            return;
        }
        if (p->kind == SD_GENERIC || ((p->kind == SD_DEINT || p->kind == SD_INTER) && !p->use_net)) return;
        if (p->kind == SD_DEINT && p->S > SD_NT_MAX_STREAMS / 2) return; /* src order interleaves >= 2 rows' streams */
        /* every row start and row length is a whole number of lines */
        lines = (p->L * (p->kind == SD_INTER ? p->S : 1) * e) % 64 == 0;
        if (p->kind != SD_INTER && p->S > 1) lines &= (p->ds_s * e) % 64 == 0;
        for (i = 0; i < p->outer_rank; ++i) lines &= (p->outer[i].dst * e) % 64 == 0;
        p->nt = lines;
    }
#else
    (void)out_bytes;
    (void)dst_base;
    (void)i;
    (void)lines;
    (void)e;
#endif
}

/* The row loop (R), the outer order, and the item split. */
static void sd_choose_items(sd_plan* p, unsigned threads) {
    uint64_t outer_count = 1, rest = 1;
    unsigned i;
    if (p->kind == SD_DEINT && !p->joined) {
        /* DEINT writes S rows per source run: reading the single source stream in order (outer dims by
         * source stride) measured ~2x faster than in destination order. */
        unsigned a, c;
        for (a = 1; a < p->outer_rank; ++a) { /* insertion sort, stable */
            sd_dim t = p->outer[a];
            for (c = a; c > 0 && p->outer[c - 1].src < t.src; --c) p->outer[c] = p->outer[c - 1];
            p->outer[c] = t;
        }
    }
    /* The innermost outer dim becomes the row loop: always when joined, otherwise when the remaining
     * outer dims still give every thread several items. Joined rows take the next dim too when it
     * continues the destination run (depth-to-space: the rows of by, then of (c, h)). */
    p->R = p->Ri = 1;
    p->ss_ri = p->ds_ri = p->ss_ro = p->ds_ro = 0;
    for (i = 0; i + 1 < p->outer_rank; ++i) rest *= p->outer[i].size;
    if (p->outer_rank > 0 && (p->joined || threads <= 1 || rest >= 8u * (uint64_t)threads)) {
        const sd_dim* rows = &p->outer[--p->outer_rank];
        p->R = p->Ri = rows->size;
        p->ss_ri = rows->src;
        p->ds_ri = rows->dst;
        if (p->joined && p->outer_rank > 0 && p->outer[p->outer_rank - 1].dst == rows->dst * rows->size) {
            const sd_dim* more = &p->outer[--p->outer_rank];
            p->R *= more->size;
            p->ss_ro = more->src;
            p->ds_ro = more->dst;
        }
    }
    for (i = 0; i < p->outer_rank; ++i) outer_count *= p->outer[i].size;
    /* Pieces of the rows, or of the long dim: enough items for every thread to get several. */
    p->split_rows = 0;
    p->piece = p->L;
    p->pieces = 1;
    if (threads > 1 && outer_count < 8u * (uint64_t)threads) {
        const uint64_t want = (8u * (uint64_t)threads + outer_count - 1) / outer_count;
        if (p->R > 1) {
            p->split_rows = 1;
            p->piece = (p->R + want - 1) / want;
            p->pieces = (p->R + p->piece - 1) / p->piece;
        } else if (p->L > SD_MIN_PIECE) {
            uint64_t piece = (p->L + want - 1) / want;
            if (piece < SD_MIN_PIECE) piece = SD_MIN_PIECE;
            piece = (piece + 63) & ~(uint64_t)63;
            p->piece = piece;
            p->pieces = (p->L + piece - 1) / piece;
        }
    }
}

/* ---- entry --------------------------------------------------------------------------------------- */

typedef struct sd_fields {
    const DML_TENSOR_DESC* input;
    const DML_TENSOR_DESC* output;
    uint64_t block;
    int to_depth;
    int crd;
} sd_fields;

static int32_t sd_read_fields(const DML_OPERATOR_DESC* desc, sd_fields* f) {
    if (desc->Desc == NULL) return DMLPY_E_NULL_ARGUMENT;
    f->crd = 0;
    switch (desc->Type) {
    case DML_OPERATOR_SPACE_TO_DEPTH: {
        const DML_SPACE_TO_DEPTH_OPERATOR_DESC* d = (const DML_SPACE_TO_DEPTH_OPERATOR_DESC*)desc->Desc;
        f->input = d->InputTensor;
        f->output = d->OutputTensor;
        f->block = d->BlockSize;
        f->to_depth = 1;
        break;
    }
    case DML_OPERATOR_DEPTH_TO_SPACE: {
        const DML_DEPTH_TO_SPACE_OPERATOR_DESC* d = (const DML_DEPTH_TO_SPACE_OPERATOR_DESC*)desc->Desc;
        f->input = d->InputTensor;
        f->output = d->OutputTensor;
        f->block = d->BlockSize;
        f->to_depth = 0;
        break;
    }
    case DML_OPERATOR_SPACE_TO_DEPTH1: {
        const DML_SPACE_TO_DEPTH1_OPERATOR_DESC* d = (const DML_SPACE_TO_DEPTH1_OPERATOR_DESC*)desc->Desc;
        if (d->Order != DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW && d->Order != DML_DEPTH_SPACE_ORDER_COLUMN_ROW_DEPTH) {
            return DMLPY_E_INVALID_DESC;
        }
        f->input = d->InputTensor;
        f->output = d->OutputTensor;
        f->block = d->BlockSize;
        f->to_depth = 1;
        f->crd = d->Order == DML_DEPTH_SPACE_ORDER_COLUMN_ROW_DEPTH;
        break;
    }
    case DML_OPERATOR_DEPTH_TO_SPACE1: {
        const DML_DEPTH_TO_SPACE1_OPERATOR_DESC* d = (const DML_DEPTH_TO_SPACE1_OPERATOR_DESC*)desc->Desc;
        if (d->Order != DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW && d->Order != DML_DEPTH_SPACE_ORDER_COLUMN_ROW_DEPTH) {
            return DMLPY_E_INVALID_DESC;
        }
        f->input = d->InputTensor;
        f->output = d->OutputTensor;
        f->block = d->BlockSize;
        f->to_depth = 0;
        f->crd = d->Order == DML_DEPTH_SPACE_ORDER_COLUMN_ROW_DEPTH;
        break;
    }
    default:
        return DMLPY_E_UNSUPPORTED_OPERATOR;
    }
    if (f->input == NULL || f->output == NULL) return DMLPY_E_NULL_ARGUMENT;
    return DMLPY_OK;
}

int32_t dmlpy_space_depth(const DML_OPERATOR_DESC* desc, UINT inputCount, const DMLPY_BOUND_BUFFER* inputs,
                          UINT outputCount, const DMLPY_BOUND_BUFFER* outputs, UINT threadCount) {
    sd_fields f;
    sd_plan p;
    dmlpy_tensor xt, yt;
    dmlpy_staged_output stage;
    const dmlpy_tensor *space, *depth;
    sd_dim sp[SD_DIMS], dp[SD_DIMS], dims[SD_DIMS];
    uint64_t b, bb, cs, depth_c, h_b, w_b, count = 1, items, work;
    unsigned n, i, threads, max_threads;
    int32_t st;
#if defined(SD_AVX512)
    sd_net* net_block = NULL;
#endif

    if (desc == NULL) return DMLPY_E_NULL_ARGUMENT;
    st = sd_read_fields(desc, &f);
    if (st != DMLPY_OK) return st;
    if (inputCount != 1 || outputCount != 1) return DMLPY_E_BINDING_COUNT;
    if (inputs == NULL || outputs == NULL) return DMLPY_E_NULL_ARGUMENT;

    st = dmlpy_tensor_from_desc(f.input, &xt);
    if (st != DMLPY_OK) return st;
    st = dmlpy_tensor_from_desc(f.output, &yt);
    if (st != DMLPY_OK) return st;
    if (xt.rank != 4 || yt.rank != 4) return DMLPY_E_INVALID_DESC;
    if (xt.data_type != yt.data_type || xt.element_size != yt.element_size) return DMLPY_E_INVALID_DESC;
    if (xt.element_size != 1 && xt.element_size != 2 && xt.element_size != 4 && xt.element_size != 8) {
        return DMLPY_E_INVALID_DESC;
    }

    /* The size relations every index below relies on: depth {N, C*B*B, H, W}, space {N, C, H*B, W*B}. */
    b = f.block;
    if (b == 0) return DMLPY_E_INVALID_DESC;
    space = f.to_depth ? &xt : &yt;
    depth = f.to_depth ? &yt : &xt;
    cs = space->sizes[1];
    if (!dmlpy_mul_u64(b, b, &bb) || !dmlpy_mul_u64(cs, bb, &depth_c) || depth_c != depth->sizes[1]) {
        return DMLPY_E_INVALID_DESC;
    }
    if (!dmlpy_mul_u64(depth->sizes[2], b, &h_b) || h_b != space->sizes[2]) return DMLPY_E_INVALID_DESC;
    if (!dmlpy_mul_u64(depth->sizes[3], b, &w_b) || w_b != space->sizes[3]) return DMLPY_E_INVALID_DESC;
    if (depth->sizes[0] != space->sizes[0]) return DMLPY_E_INVALID_DESC;

    st = dmlpy_tensor_bind(&xt, &inputs[0]);
    if (st != DMLPY_OK) return st;
    st = dmlpy_tensor_bind(&yt, &outputs[0]);
    if (st != DMLPY_OK) return st;
    if (dmlpy_tensors_overlap(&xt, &yt)) return DMLPY_E_INVALID_ARGUMENT;
    st = dmlpy_output_stage(&yt, &stage);
    if (st != DMLPY_OK) return st;

    /* Strides of (n, c, h, by, w, bx). Every product is a stride times a factor of a size (C*B*B, H*B and
     * W*B are sizes, so below 2^32): below 2^64. */
    sp[0].size = space->sizes[0];
    sp[1].size = cs;
    sp[2].size = depth->sizes[2];
    sp[3].size = b;
    sp[4].size = depth->sizes[3];
    sp[5].size = b;
    sp[0].src = space->strides[0];
    sp[1].src = space->strides[1];
    sp[2].src = b * space->strides[2];
    sp[3].src = space->strides[2];
    sp[4].src = b * space->strides[3];
    sp[5].src = space->strides[3];
    dp[0].src = depth->strides[0];
    dp[1].src = depth->strides[1] * (f.crd ? bb : 1);
    dp[2].src = depth->strides[2];
    dp[3].src = depth->strides[1] * (f.crd ? b : b * cs);
    dp[4].src = depth->strides[3];
    dp[5].src = depth->strides[1] * (f.crd ? 1 : cs);
    for (i = 0; i < SD_DIMS; ++i) {
        dims[i].size = sp[i].size;
        dims[i].src = f.to_depth ? sp[i].src : dp[i].src;
        dims[i].dst = f.to_depth ? dp[i].src : sp[i].src;
        count *= sp[i].size; /* the element count, validated below 2^32 */
    }

    memset(&p, 0, sizeof p);
    p.esize = xt.element_size;
    p.src = xt.data;
    p.dst = yt.data;
    n = sd_simplify(dims, SD_DIMS);
    max_threads = threadCount ? threadCount : dmlpy_online_cpus();
    sd_choose_block(&p, dims, n);
#if defined(SD_AVX512)
    p.use_net = (p.kind == SD_DEINT || p.kind == SD_INTER) && p.S >= 2 && p.S <= SD_MAX_STREAMS && p.L * p.esize >= 64;
#endif
    sd_choose_stores(&p, count * p.esize, (uintptr_t)p.dst);
    sd_choose_items(&p, max_threads);
    if (p.joined && p.split_rows == 0 && p.pieces > 1) p.joined = 0; /* joined rows need whole rows */
    items = (uint64_t)p.pieces;
    for (i = 0; i < p.outer_rank; ++i) items *= p.outer[i].size;
    work = count * 2 * p.esize / 4; /* 4-byte units read + written */
    threads = dmlpy_choose_threads(work ? work : 1, items, max_threads);

#if defined(SD_AVX512)
    if (p.use_net) {
        net_block = (sd_net*)aligned_alloc(64, sizeof(sd_net));
        if (net_block == NULL) {
            dmlpy_output_unstage(&stage, 0);
            return DMLPY_E_OUT_OF_MEMORY;
        }
        sd_build_net(net_block, (unsigned)p.S, p.esize, p.kind == SD_INTER);
        p.net = net_block;
    }
#endif

    dmlpy_parallel_for(items, dmlpy_choose_grain(items, threads), threads, sd_run, &p);

#if defined(SD_AVX512)
    free(net_block);
#endif
    dmlpy_output_unstage(&stage, 1);
    return DMLPY_OK;
}
