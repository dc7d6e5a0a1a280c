/*
 * data_movement.c - DML_OPERATOR_JOIN (63), SPLIT (62), SLICE (60), SLICE1 (111), PADDING (64), PADDING1 (155),
 * CAST (61), GATHER (67), GATHER_ELEMENTS (107), GATHER_ND (108) and GATHER_ND1 (140), for every element type
 * their support tables list.
 *
 * Semantics: the NumPy kernels of dmlpy/operators/data_movement.py and docs/deviations.md (gather indices
 * clamped into their axis, a negative signed index counting from the end; CAST truncating and saturating
 * floats into integers with NaN -> 0, rounding to nearest even into floats, keeping the low bits between
 * integers; REFLECTION/SYMMETRIC padding folding periodically). Results are the NumPy kernels' bytes.
 *
 * One engine moves the data: dm_copy, a strided N-D copy of up to 8 dims with per-tensor element strides
 * (broadcast inputs, NHWC layouts, negative-direction SLICE1 windows), size-1 dims dropped and dims that
 * are contiguous in both tensors merged, the innermost run a memcpy when it is contiguous in both, or a
 * per-pair element converter (CAST). The work items are the rows (every dim but the innermost) times
 * pieces of the innermost run (split when there are few rows), handed to dmlpy_parallel_for with the
 * shared thread rule (dmlpy_choose_threads); outputs of 4 MB and more (see DM_STREAM_MIN_BYTES) are written
 * with non-temporal stores (SSE2, in the baseline of x86-64): copies in runs of 4 KB and more, and padded
 * rows of 4- or 8-byte elements whole through a writer that stores every 16-byte unit it covers with one
 * movntdq (borders included, so no normal store lands in a line being combined). JOIN and SPLIT are one copy per part at its offset along
 * Axis, all parts' items in one parallel loop; SLICE/SLICE1 a copy with a start offset and scaled
 * strides; CAST a copy with a converter; PADDING a row loop that copies each row's interior with the same
 * row copy and writes its border by the mode's index map (CONSTANT: the fill value), plane by plane when the
 * rows are contiguous (the rows of a plane in a tight loop, runs of CONSTANT rows one fill); GATHER a copy of one
 * block per (outer index, index element) with the clamped index picking the source.
 *
 * The kernel never trusts its caller: it re-reads every tensor (dmlpy_tensor_from_desc), re-checks each
 * size relation it relies on with overflow-checked arithmetic, checks that every window it reads lies
 * inside its tensor, binds every buffer (dmlpy_tensor_bind: the tensor's whole extent inside the bound
 * range) and refuses outputs that overlap an input or each other. Outputs whose layout maps two indices
 * to one element are staged (dmlpy_output_stage), so every destination is one-to-one and the result does
 * not depend on the thread count.
 */
#include <stdlib.h>
#include <string.h>

#include "dmlpy_internal.h"

#if defined(__SSE2__) && !defined(DMLPY_NO_STREAMING)
#include <emmintrin.h>
#define DM_STREAM 1
#endif
#if defined(__linux__) || defined(__APPLE__)
#include <unistd.h>
#endif

/* Copies whose destination is at least DM_STREAM_MIN_BYTES (as space_depth.c's), in contiguous runs of at
 * least DM_STREAM_MIN_RUN bytes, store with non-temporal stores: the destination is not read into the cache
 * first (a normal store's read-for-ownership is a third of a large copy's memory traffic). A destination
 * the cache holds would be better written normally (the next operator reads it from there), so this was
 * once 3/4 of the last-level cache (glibc memcpy's rule): on a machine reporting a 300 MB last-level cache,
 * non-temporal stores made Concat of 4x 8x64x56x56 1.5x slower when it was idle. On the same 2-core VM
 * later the last-level cache gave a single core nothing beyond its 2 MB L2 (memcpy of 4 to 64 MB at 10.5
 * GB/s, non-temporal 17 GB/s), and the same Concat took 1.8 ms instead of 2.3 ms with non-temporal stores,
 * PADDING of 8x64x112x112 by 2 (27.6 MB) 2.1 ms instead of 2.8-3.9: whether a large last-level cache keeps
 * a destination for its reader depends on who else uses it, and a core's own L2 is the cache it can count
 * on. -DDM_STREAM_USE_LLC=1 restores the last-level-cache rule. */
#ifndef DM_STREAM_MIN_BYTES
#define DM_STREAM_MIN_BYTES ((uint64_t)4 << 20)
#endif
#ifndef DM_STREAM_USE_LLC /* 1: also at least 3/4 of the last-level cache */
#define DM_STREAM_USE_LLC 0
#endif
#ifndef DM_STREAM_MIN_RUN
#define DM_STREAM_MIN_RUN 4096u
#endif

#define DM_MAX DMLPY_MAX_RANK
/* Innermost runs are split into pieces of at least this many bytes when there are too few rows. */
#ifndef DM_MIN_PIECE_BYTES
#define DM_MIN_PIECE_BYTES 16384u
#endif

typedef void (*dm_convert_fn)(char* d, int64_t dstep, const char* s, int64_t sstep, uint64_t n);

/* ---- element conversions (CAST, PADDING's FLOAT value) ---------------------------------------------- */

static inline uint32_t dm_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* binary64 -> binary16, round to nearest, ties to even, overflow to infinity; a NaN keeps its sign and
 * the top 10 bits of its significand (1 when they are all 0), as NumPy's conversion does. */
static inline uint16_t dm_d2h(double d) {
    uint64_t b, a, m, q, rem, half;
    uint16_t sign;
    int e;
    unsigned s;
    memcpy(&b, &d, 8);
    sign = (uint16_t)((b >> 48) & 0x8000u);
    a = b & 0x7fffffffffffffffull;
    if (a >= 0x7ff0000000000000ull) {
        uint16_t sig = (uint16_t)((a >> 42) & 0x3ffu);
        if (a == 0x7ff0000000000000ull) return (uint16_t)(sign | 0x7c00u);
        return (uint16_t)(sign | 0x7c00u | (sig ? sig : 1u));
    }
    e = (int)(a >> 52) - 1023;
    if (e >= 16) return (uint16_t)(sign | 0x7c00u);
    if (e < -25) return sign; /* below half the smallest subnormal: 0 (2^-25 itself ties to 0, below) */
    m = (a & 0x000fffffffffffffull) | 0x0010000000000000ull;
    /* value = m * 2^(e - 52) = q * 2^u with u the half's unit in the last place at this exponent */
    s = (unsigned)(52 - e + ((e < -14 ? -14 : e) - 10)); /* 42 .. 53 */
    q = m >> s;
    rem = m & ((1ull << s) - 1);
    half = 1ull << (s - 1);
    if (rem > half || (rem == half && (q & 1))) ++q;
    if (e < -14) return (uint16_t)(sign | q); /* subnormal; q = 1024 is the smallest normal */
    return (uint16_t)(sign + (((uint64_t)(e + 14) << 10) + q)); /* a carry into the exponent is right */
}

static inline uint16_t dm_f2h(float f) {
    const uint32_t u = dm_f32_bits(f);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) { /* NaN: NumPy keeps the payload's top bits */
        uint16_t sig = (uint16_t)((u & 0x007fffffu) >> 13);
        return (uint16_t)(((u >> 16) & 0x8000u) | 0x7c00u | (sig ? sig : 1u));
    }
    return dm_d2h((double)f);
}

/* binary16 -> binary32, exact; a NaN keeps its payload (not quieted), as NumPy's conversion does. */
static inline float dm_h2f(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, sig = h & 0x3ffu;
    uint32_t u;
    float f;
    if (exp == 0x1fu) {
        u = sign | 0x7f800000u | (sig << 13);
    } else if (exp == 0) {
        f = (float)sig * 5.9604644775390625e-8f; /* sig * 2^-24, exact */
        u = dm_f32_bits(f) | sign;
    } else {
        u = sign | ((exp + 112u) << 23) | (sig << 13);
    }
    memcpy(&f, &u, 4);
    return f;
}

static inline double dm_h2d(uint16_t h) {
    if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu)) {
        const uint64_t u = ((uint64_t)(h & 0x8000u) << 48) | 0x7ff0000000000000ull | ((uint64_t)(h & 0x3ffu) << 42);
        double d;
        memcpy(&d, &u, 8);
        return d;
    }
    return (double)dm_h2f(h);
}

/* A float (as double) into an integer type: truncated toward zero, saturated, NaN -> 0. Comparing before
 * converting keeps 2^63 and 2^64, which (double)MAX rounds up to, out of the conversion. */
#define DM_SATURATE(NAME, T, LO, HI)                                     \
    static inline T dm_sat_##NAME(double x) {                            \
        if (x != x) return 0;                                            \
        if (x >= (double)(HI)) return (T)(HI);                           \
        if (x <= (double)(LO)) return (T)(LO);                           \
        return (T)x;                                                     \
    }
DM_SATURATE(INT8, int8_t, INT8_MIN, INT8_MAX)
DM_SATURATE(INT16, int16_t, INT16_MIN, INT16_MAX)
DM_SATURATE(INT32, int32_t, INT32_MIN, INT32_MAX)
DM_SATURATE(INT64, int64_t, INT64_MIN, INT64_MAX)
DM_SATURATE(UINT8, uint8_t, 0, UINT8_MAX)
DM_SATURATE(UINT16, uint16_t, 0, UINT16_MAX)
DM_SATURATE(UINT32, uint32_t, 0, UINT32_MAX)
DM_SATURATE(UINT64, uint64_t, 0, UINT64_MAX)

#define dm_f16_from_FLOAT32(x) dm_f2h(x)
#define dm_f16_from_FLOAT64(x) dm_d2h(x)
#define dm_from_f16_FLOAT32(x) dm_h2f(x)
#define dm_from_f16_FLOAT64(x) dm_h2d(x)

/* The expression converting x of (source name SN, kind SK) to (DN, DT, kind DK); kinds: F float or double,
 * H float16 (its bits in a uint16_t), I integer. */
#define DM_EXPR_FF(x, SN, DN, DT) ((DT)(x))
#define DM_EXPR_FH(x, SN, DN, DT) dm_f16_from_##SN(x)
#define DM_EXPR_FI(x, SN, DN, DT) dm_sat_##DN((double)(x))
#define DM_EXPR_HF(x, SN, DN, DT) dm_from_f16_##DN(x)
#define DM_EXPR_HH(x, SN, DN, DT) (x)
#define DM_EXPR_HI(x, SN, DN, DT) dm_sat_##DN((double)dm_h2f(x))
#define DM_EXPR_IF(x, SN, DN, DT) ((DT)(x))
#define DM_EXPR_IH(x, SN, DN, DT) dm_d2h((double)(x))
#define DM_EXPR_II(x, SN, DN, DT) ((DT)(x))

#define DM_TYPES_S(X)             \
    X(FLOAT32, float, F)          \
    X(FLOAT16, uint16_t, H)       \
    X(FLOAT64, double, F)         \
    X(UINT8, uint8_t, I)          \
    X(UINT16, uint16_t, I)        \
    X(UINT32, uint32_t, I)        \
    X(UINT64, uint64_t, I)        \
    X(INT8, int8_t, I)            \
    X(INT16, int16_t, I)          \
    X(INT32, int32_t, I)          \
    X(INT64, int64_t, I)
#define DM_TYPES_D(Y, SN, ST, SK)     \
    Y(SN, ST, SK, FLOAT32, float, F)    \
    Y(SN, ST, SK, FLOAT16, uint16_t, H) \
    Y(SN, ST, SK, FLOAT64, double, F)   \
    Y(SN, ST, SK, UINT8, uint8_t, I)    \
    Y(SN, ST, SK, UINT16, uint16_t, I)  \
    Y(SN, ST, SK, UINT32, uint32_t, I)  \
    Y(SN, ST, SK, UINT64, uint64_t, I)  \
    Y(SN, ST, SK, INT8, int8_t, I)      \
    Y(SN, ST, SK, INT16, int16_t, I)    \
    Y(SN, ST, SK, INT32, int32_t, I)    \
    Y(SN, ST, SK, INT64, int64_t, I)

#define DM_CONVERTER(SN, ST, SK, DN, DT, DK)                                                        \
    static inline DT dm_cv1_##SN##_##DN(ST x) { return DM_EXPR_##SK##DK(x, SN, DN, DT); }          \
    static void dm_cv_##SN##_##DN(char* d, int64_t dstep, const char* s, int64_t sstep, uint64_t n) { \
        uint64_t i;                                                                                 \
        if (dstep == (int64_t)sizeof(DT) && sstep == (int64_t)sizeof(ST)) {                         \
            DT* dd = (DT*)(void*)d;                                                                 \
            const ST* ss = (const ST*)(const void*)s;                                               \
            for (i = 0; i < n; ++i) dd[i] = dm_cv1_##SN##_##DN(ss[i]);                              \
            return;                                                                                 \
        }                                                                                           \
        for (i = 0; i < n; ++i, d += dstep, s += sstep) {                                           \
            *(DT*)(void*)d = dm_cv1_##SN##_##DN(*(const ST*)(const void*)s);                        \
        }                                                                                           \
    }
#define DM_CONVERTER_ROW(SN, ST, SK) DM_TYPES_D(DM_CONVERTER, SN, ST, SK)
DM_TYPES_S(DM_CONVERTER_ROW)

#define DM_TABLE_CELL(SN, ST, SK, DN, DT, DK) [DML_TENSOR_DATA_TYPE_##SN][DML_TENSOR_DATA_TYPE_##DN] = dm_cv_##SN##_##DN,
#define DM_TABLE_ROW(SN, ST, SK) DM_TYPES_D(DM_TABLE_CELL, SN, ST, SK)
static const dm_convert_fn dm_converters[12][12] = {DM_TYPES_S(DM_TABLE_ROW)};

/* The converter from one type to another, NULL for a plain copy (same type) or an unknown type. */
static dm_convert_fn dm_converter(DML_TENSOR_DATA_TYPE from, DML_TENSOR_DATA_TYPE to) {
    if (from == to || (unsigned)from >= 12u || (unsigned)to >= 12u) return NULL;
    return dm_converters[from][to];
}

/* ---- the strided copy engine -------------------------------------------------------------------------- */

typedef struct dm_copy {
    unsigned rank; /* >= 1 after dm_copy_init */
    uint64_t sizes[DM_MAX];
    int64_t ds[DM_MAX], ss[DM_MAX]; /* byte strides */
    uint32_t esize;                 /* destination element bytes */
    dm_convert_fn convert;          /* NULL: copy the bits */
    int stream;                     /* contiguous runs copied with non-temporal stores */
    uint64_t elements, rows, piece, pieces, items;
} dm_copy;

/* Sizes and element strides (signed: SLICE1 runs backwards) of the destination and the source; every
 * index the copy forms has been checked against its tensor by the caller. */
static void dm_copy_init(dm_copy* c, unsigned rank, const uint64_t* sizes, const int64_t* dst_strides, uint32_t dst_esize,
                         const int64_t* src_strides, uint32_t src_esize, dm_convert_fn convert) {
    uint64_t sz[DM_MAX];
    int64_t ds[DM_MAX], ss[DM_MAX];
    unsigned n = 0, i;
    int have = 0;
    uint64_t cur_size = 1;
    int64_t cur_ds = 0, cur_ss = 0;
    memset(c, 0, sizeof *c);
    c->esize = dst_esize;
    c->convert = convert;
    c->elements = 1;
    /* From the innermost dim outwards: drop size-1 dims, merge a dim into the group inside it when both
     * tensors step over that group exactly. */
    for (i = rank; i-- > 0;) {
        const int64_t d = dst_strides[i] * (int64_t)dst_esize, s = src_strides[i] * (int64_t)src_esize;
        c->elements *= sizes[i];
        if (sizes[i] == 1) continue;
        if (have && d == cur_ds * (int64_t)cur_size && s == cur_ss * (int64_t)cur_size) {
            cur_size *= sizes[i];
            continue;
        }
        if (have) {
            sz[n] = cur_size;
            ds[n] = cur_ds;
            ss[n] = cur_ss;
            ++n;
        }
        have = 1;
        cur_size = sizes[i];
        cur_ds = d;
        cur_ss = s;
    }
    if (!have) {
        cur_size = 1;
        cur_ds = (int64_t)dst_esize;
        cur_ss = (int64_t)src_esize;
    }
    sz[n] = cur_size;
    ds[n] = cur_ds;
    ss[n] = cur_ss;
    ++n;
    c->rank = n;
    for (i = 0; i < n; ++i) { /* outermost first */
        c->sizes[i] = sz[n - 1 - i];
        c->ds[i] = ds[n - 1 - i];
        c->ss[i] = ss[n - 1 - i];
    }
    c->rows = 1;
    for (i = 0; i + 1 < n; ++i) c->rows *= c->sizes[i];
    c->pieces = 1;
    c->piece = c->sizes[n - 1];
    c->items = c->rows;
}

/* Splits the innermost run into pieces when there are too few rows to share among `threads`. */
static void dm_copy_split(dm_copy* c, unsigned threads) {
    const uint64_t inner = c->sizes[c->rank - 1], min_piece = DM_MIN_PIECE_BYTES / c->esize;
    uint64_t want, most, pieces;
    if (threads <= 1 || c->rows >= 8u * (uint64_t)threads || inner < 2 * min_piece) return;
    want = (8u * (uint64_t)threads + c->rows - 1) / c->rows;
    most = inner / min_piece;
    pieces = want < most ? want : most;
    if (pieces <= 1) return;
    c->piece = (inner + pieces - 1) / pieces;
    c->pieces = (inner + c->piece - 1) / c->piece;
    c->items = c->rows * c->pieces;
}

/* n elements from s to d with byte steps: memcpy when contiguous in both, else typed loops. */
static inline void dm_row(uint32_t esize, dm_convert_fn convert, char* d, int64_t dstep, const char* s, int64_t sstep, uint64_t n) {
    uint64_t i;
    if (convert != NULL) {
        convert(d, dstep, s, sstep, n);
        return;
    }
    if (dstep == (int64_t)esize && sstep == (int64_t)esize) {
        memcpy(d, s, (size_t)(n * esize));
        return;
    }
    switch (esize) {
    case 1:
        for (i = 0; i < n; ++i, d += dstep, s += sstep) *(uint8_t*)d = *(const uint8_t*)s;
        break;
    case 2:
        for (i = 0; i < n; ++i, d += dstep, s += sstep) *(uint16_t*)(void*)d = *(const uint16_t*)(const void*)s;
        break;
    case 4:
        for (i = 0; i < n; ++i, d += dstep, s += sstep) *(uint32_t*)(void*)d = *(const uint32_t*)(const void*)s;
        break;
    default:
        for (i = 0; i < n; ++i, d += dstep, s += sstep) *(uint64_t*)(void*)d = *(const uint64_t*)(const void*)s;
        break;
    }
}

/* The smallest destination written with non-temporal stores (read once; two first calls store the same value). */
static uint64_t dm_stream_min_bytes(void) {
    static volatile uint64_t cached = 0;
    uint64_t bytes = cached;
    if (bytes == 0) {
        long llc = 0;
#if defined(_SC_LEVEL3_CACHE_SIZE) && DM_STREAM_USE_LLC
        llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
        if (llc <= 0) llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
        bytes = llc > 0 ? (uint64_t)llc / 4 * 3 : 0;
        if (bytes < DM_STREAM_MIN_BYTES) bytes = DM_STREAM_MIN_BYTES;
        cached = bytes;
    }
    return bytes;
}

/* n contiguous bytes with non-temporal stores where the destination holds whole 16-byte units. */
static void dm_copy_stream(char* d, const char* s, size_t n) {
#if defined(DM_STREAM)
    size_t head = (16u - ((uintptr_t)d & 15u)) & 15u;
    if (head > n) head = n;
    memcpy(d, s, head);
    d += head;
    s += head;
    n -= head;
    for (; n >= 64; n -= 64, d += 64, s += 64) {
        const __m128i a = _mm_loadu_si128((const __m128i*)(const void*)s);
        const __m128i b = _mm_loadu_si128((const __m128i*)(const void*)(s + 16));
        const __m128i c = _mm_loadu_si128((const __m128i*)(const void*)(s + 32));
        const __m128i e = _mm_loadu_si128((const __m128i*)(const void*)(s + 48));
        _mm_stream_si128((__m128i*)(void*)d, a);
        _mm_stream_si128((__m128i*)(void*)(d + 16), b);
        _mm_stream_si128((__m128i*)(void*)(d + 32), c);
        _mm_stream_si128((__m128i*)(void*)(d + 48), e);
    }
    for (; n >= 16; n -= 16, d += 16, s += 16) {
        _mm_stream_si128((__m128i*)(void*)d, _mm_loadu_si128((const __m128i*)(const void*)s));
    }
#endif
    memcpy(d, s, n);
}

#if defined(DM_STREAM)
/* n bytes (a multiple of 4, d 4-byte aligned) with non-temporal stores only: 4-byte movnti up to a
 * 16-byte boundary and after the last whole unit, movntdq between; a row written so leaves no normal store
 * in a line the write-combining buffers are assembling. */
static inline void dm_stream4(char* d, const char* s, size_t n) {
    int32_t v;
    for (; n >= 4 && ((uintptr_t)d & 15u); n -= 4, d += 4, s += 4) {
        memcpy(&v, s, 4);
        _mm_stream_si32((int*)(void*)d, v);
    }
    for (; n >= 16; n -= 16, d += 16, s += 16) {
        _mm_stream_si128((__m128i*)(void*)d, _mm_loadu_si128((const __m128i*)(const void*)s));
    }
    for (; n >= 4; n -= 4, d += 4, s += 4) {
        memcpy(&v, s, 4);
        _mm_stream_si32((int*)(void*)d, v);
    }
}

/* A sequential writer of 4-byte words with non-temporal stores (PADDING's large outputs): every 16-byte unit
 * of the output it covers whole is one movntdq, composed in a register-sized buffer where it gathers a
 * border and an interior (or two rows); only the units at the two ends of a run it does not cover whole are
 * written word by word (movnti). A stream of whole aligned units is what write combining handles best:
 * rows of 4-byte movnti at each border measured no faster than normal stores. */
typedef struct dm_ntw {
    char* d;     /* the next byte it writes (4-byte aligned) */
    unsigned lo; /* the unit holding d: its words before `lo` are not this run's */
    __m128i u;   /* that unit's words [lo, d) so far, shifted in from the top: the last one in the top lane */
} dm_ntw;

static inline void dm_ntw_begin(dm_ntw* w, char* d) {
    w->d = d;
    w->lo = (unsigned)(((uintptr_t)d & 15u) >> 2);
    w->u = _mm_setzero_si128();
}

/* Words [from, to) of the unit ending at `end` with movnti, from u (word j of the unit in lane j + 4 - to). */
static inline void dm_ntw_words(char* end, __m128i u, unsigned from, unsigned to) {
    int32_t lanes[4];
    unsigned j;
    _mm_storeu_si128((__m128i*)(void*)lanes, u);
    for (j = from; j < to; ++j) _mm_stream_si32((int*)(void*)(end - 16 + 4 * j), lanes[j + 4 - to]);
}

/* Writes the words of a unit left partial at the end of a run. */
static inline void dm_ntw_flush(dm_ntw* w) {
    const unsigned hi = (unsigned)(((uintptr_t)w->d & 15u) >> 2);
    if (hi > w->lo) dm_ntw_words(w->d - 4u * hi + 16, w->u, w->lo, hi);
    w->lo = hi;
}

/* Continues at d: the run so far is flushed when d is not where it stands. */
static inline void dm_ntw_seek(dm_ntw* w, char* d) {
    if (d != w->d) {
        dm_ntw_flush(w);
        dm_ntw_begin(w, d);
    }
}

static inline void dm_ntw_word(dm_ntw* w, int32_t v) {
    w->u = _mm_or_si128(_mm_srli_si128(w->u, 4), _mm_slli_si128(_mm_cvtsi32_si128(v), 12));
    w->d += 4;
    if (((uintptr_t)w->d & 15u) == 0) {
        if (w->lo == 0) {
            _mm_stream_si128((__m128i*)(void*)(w->d - 16), w->u);
        } else {
            dm_ntw_words(w->d, w->u, w->lo, 4);
        }
        w->lo = 0;
    }
}

/* n bytes (a multiple of 4) from s. */
static inline void dm_ntw_copy(dm_ntw* w, const char* s, size_t n) {
    int32_t v;
    for (; n >= 4 && ((uintptr_t)w->d & 15u); n -= 4, s += 4) {
        memcpy(&v, s, 4);
        dm_ntw_word(w, v);
    }
    for (; n >= 16; n -= 16, s += 16, w->d += 16) { /* w->lo is 0 at a unit's start once a word was written */
        _mm_stream_si128((__m128i*)(void*)w->d, _mm_loadu_si128((const __m128i*)(const void*)s));
    }
    for (; n >= 4; n -= 4, s += 4) {
        memcpy(&v, s, 4);
        dm_ntw_word(w, v);
    }
}

/* n bytes (a multiple of 4) of the element `fill` of esize 4 or 8 bytes, starting at an element. */
static inline void dm_ntw_fill(dm_ntw* w, const unsigned char* fill, uint32_t esize, size_t n) {
    int32_t cur, next, t; /* the word to write now and the one after it (equal for 4-byte elements) */
    memcpy(&cur, fill, 4);
    memcpy(&next, fill + (esize == 8 ? 4 : 0), 4);
    for (; n >= 4 && ((uintptr_t)w->d & 15u); n -= 4) {
        dm_ntw_word(w, cur);
        t = cur, cur = next, next = t;
    }
    if (n >= 16) {
        const __m128i u = _mm_set_epi32(next, cur, next, cur); /* cur at the lowest address */
        for (; n >= 16; n -= 16, w->d += 16) _mm_stream_si128((__m128i*)(void*)w->d, u);
    }
    for (; n >= 4; n -= 4) {
        dm_ntw_word(w, cur);
        t = cur, cur = next, next = t;
    }
}
#endif

/* Items [b, e) of the copy whose element 0 is at dst / src. */
static void dm_copy_range(const dm_copy* c, char* dst, const char* src, uint64_t b, uint64_t e) {
    const unsigned outer = c->rank - 1;
    const uint64_t inner = c->sizes[outer];
    const int64_t dsi = c->ds[outer], ssi = c->ss[outer];
    uint64_t idx[DM_MAX], row, k, rest;
    int64_t doff = 0, soff = 0;
    unsigned d;
    if (b >= e) return;
    row = b / c->pieces;
    k = b % c->pieces;
    rest = row;
    for (d = outer; d-- > 0;) {
        idx[d] = rest % c->sizes[d];
        rest /= c->sizes[d];
        doff += (int64_t)idx[d] * c->ds[d];
        soff += (int64_t)idx[d] * c->ss[d];
    }
    while (b < e) {
        const uint64_t l0 = k * c->piece, l1 = l0 + c->piece < inner ? l0 + c->piece : inner;
        if (c->stream) {
            dm_copy_stream(dst + doff + (int64_t)l0 * dsi, src + soff + (int64_t)l0 * ssi, (size_t)((l1 - l0) * c->esize));
        } else {
            dm_row(c->esize, c->convert, dst + doff + (int64_t)l0 * dsi, dsi, src + soff + (int64_t)l0 * ssi, ssi, l1 - l0);
        }
        ++b;
        if (++k < c->pieces) continue;
        k = 0;
        for (d = outer; d-- > 0;) {
            doff += c->ds[d];
            soff += c->ss[d];
            if (++idx[d] < c->sizes[d]) break;
            doff -= (int64_t)idx[d] * c->ds[d];
            soff -= (int64_t)idx[d] * c->ss[d];
            idx[d] = 0;
        }
    }
}

/* Several copies (JOIN's inputs, SPLIT's outputs) as one parallel loop over all their items. */
typedef struct dm_task {
    dm_copy c;
    char* dst;
    const char* src;
    uint64_t first; /* the loop's index of this copy's item 0 */
} dm_task;

typedef struct dm_job {
    dm_task* tasks;
    unsigned count;
} dm_job;

static void dm_job_run(void* ctx, uint64_t b, uint64_t e, unsigned worker) {
    const dm_job* job = (const dm_job*)ctx;
    unsigned lo = 0, hi = job->count;
    (void)worker;
    while (hi - lo > 1) { /* the last task whose first item is <= b */
        const unsigned mid = lo + (hi - lo) / 2;
        if (job->tasks[mid].first <= b) lo = mid; else hi = mid;
    }
    for (; b < e && lo < job->count; ++lo) {
        const dm_task* t = &job->tasks[lo];
        const uint64_t end = t->first + t->c.items < e ? t->first + t->c.items : e;
        if (b < t->first) b = t->first;
        dm_copy_range(&t->c, t->dst, t->src, b - t->first, end - t->first);
        b = end;
    }
#if defined(DM_STREAM)
    _mm_sfence(); /* the non-temporal stores are visible before the loop reports this chunk done */
#endif
}

/* Work for the thread rule (parallel.c: about 16 units per ns of one thread's time; two threads from 2^19):
 * one unit per 2 bytes read or written, conversions counted twice, so copies take the second thread from
 * about 1 MB moved. Measured on a 2-core machine, a FLOAT32 copy moves 0.5-1.3 units' worth per byte (PADDING
 * 1x64x56x56 by 1: 1.7 MB in about 50 us; a 4-way JOIN of 1x64x56x56: 6.4 MB in 300 us; NCHW->NHWC of
 * 1x256x56x56: 6.4 MB in 520 us); PADDING took 0.65x the time on two threads at 1.7 MB and gained nothing at
 * 0.85 MB (25 us). At one unit per 4 bytes and the old 2^21, copies went parallel only from 8 MB. */
static uint64_t dm_work(uint64_t elements, uint32_t dst_esize, uint32_t src_esize, int convert) {
    uint64_t work = elements * (dst_esize + src_esize) / 2u;
    if (convert) work *= 2;
    return work ? work : 1;
}

static void dm_job_execute(dm_job* job, uint64_t work, UINT threadCount) {
    const unsigned most = threadCount ? threadCount : dmlpy_online_cpus();
    uint64_t items = 0;
    unsigned i, threads;
    uint64_t out_bytes = 0;
    for (i = 0; i < job->count; ++i) out_bytes += job->tasks[i].c.elements * job->tasks[i].c.esize;
    for (i = 0; i < job->count; ++i) {
        dm_copy* c = &job->tasks[i].c;
        const unsigned last = c->rank - 1;
        c->stream = out_bytes >= dm_stream_min_bytes() && c->convert == NULL && c->ds[last] == (int64_t)c->esize &&
                    c->ss[last] == (int64_t)c->esize && c->sizes[last] * c->esize >= DM_STREAM_MIN_RUN;
        dm_copy_split(c, most);
        job->tasks[i].first = items;
        items += job->tasks[i].c.items;
    }
    threads = dmlpy_choose_threads(work, items, threadCount);
    if (items) dmlpy_parallel_for(items, dmlpy_choose_grain(items, threads), threads, dm_job_run, job);
}

/* ---- shared checks ------------------------------------------------------------------------------------- */

static int dm_copyable(const dmlpy_tensor* t) {
    return t->element_size == 1 || t->element_size == 2 || t->element_size == 4 || t->element_size == 8;
}

/* Reads and checks one tensor desc. */
static int32_t dm_tensor(const DML_TENSOR_DESC* desc, dmlpy_tensor* t) {
    int32_t st = dmlpy_tensor_from_desc(desc, t);
    if (st != DMLPY_OK) return st;
    return dm_copyable(t) ? DMLPY_OK : DMLPY_E_INVALID_DESC;
}

static void dm_strides(const dmlpy_tensor* t, int64_t* out) {
    unsigned i;
    for (i = 0; i < t->rank; ++i) out[i] = (int64_t)t->strides[i]; /* within the validated extent (< 2^63) */
}

/* Outputs [0, n) against inputs [0, m) and each other. */
static int dm_any_overlap(const dmlpy_tensor* outs, unsigned n, const dmlpy_tensor* ins, unsigned m) {
    unsigned i, j;
    for (i = 0; i < n; ++i) {
        for (j = 0; j < m; ++j) {
            if (dmlpy_tensors_overlap(&outs[i], &ins[j])) return 1;
        }
        for (j = 0; j < i; ++j) {
            if (dmlpy_tensors_overlap(&outs[i], &outs[j])) return 1;
        }
    }
    return 0;
}

/* ---- JOIN and SPLIT ---------------------------------------------------------------------------------- */

/* parts[i] has whole's sizes except along axis, where they sum to whole's. */
static int32_t dm_check_parts(const dmlpy_tensor* whole, const dmlpy_tensor* parts, unsigned count, unsigned axis) {
    uint64_t sum = 0;
    unsigned i, d;
    if (axis >= whole->rank) return DMLPY_E_INVALID_DESC;
    for (i = 0; i < count; ++i) {
        if (parts[i].rank != whole->rank || parts[i].data_type != whole->data_type) return DMLPY_E_INVALID_DESC;
        for (d = 0; d < whole->rank; ++d) {
            if (d != axis && parts[i].sizes[d] != whole->sizes[d]) return DMLPY_E_INVALID_DESC;
        }
        if (!dmlpy_add_u64(sum, parts[i].sizes[axis], &sum)) return DMLPY_E_INVALID_DESC;
    }
    return sum == whole->sizes[axis] ? DMLPY_OK : DMLPY_E_INVALID_DESC;
}

static int32_t dm_join_split(const DML_OPERATOR_DESC* desc, UINT inputCount, const DMLPY_BOUND_BUFFER* inputs,
                             UINT outputCount, const DMLPY_BOUND_BUFFER* outputs, UINT threadCount) {
    const int join = desc->Type == DML_OPERATOR_JOIN;
    const DML_TENSOR_DESC *whole_desc, *part_descs;
    unsigned count, axis, i;
    dmlpy_tensor whole, *parts = NULL;
    dmlpy_staged_output *stages = NULL, whole_stage;
    dm_job job = {NULL, 0};
    uint64_t offset = 0, elements = 0;
    int64_t ws[DM_MAX], ps[DM_MAX];
    int32_t st;

    if (join) {
        const DML_JOIN_OPERATOR_DESC* d = (const DML_JOIN_OPERATOR_DESC*)desc->Desc;
        if (d == NULL) return DMLPY_E_NULL_ARGUMENT;
        whole_desc = d->OutputTensor;
        part_descs = d->InputTensors;
        count = d->InputCount;
        axis = d->Axis;
        if (inputCount != count || outputCount != 1) return DMLPY_E_BINDING_COUNT;
    } else {
        const DML_SPLIT_OPERATOR_DESC* d = (const DML_SPLIT_OPERATOR_DESC*)desc->Desc;
        if (d == NULL) return DMLPY_E_NULL_ARGUMENT;
        whole_desc = d->InputTensor;
        part_descs = d->OutputTensors;
        count = d->OutputCount;
        axis = d->Axis;
        if (inputCount != 1 || outputCount != count) return DMLPY_E_BINDING_COUNT;
    }
    if (count == 0) return DMLPY_E_INVALID_DESC;
    if (part_descs == NULL || inputs == NULL || outputs == NULL) return DMLPY_E_NULL_ARGUMENT;
    st = dm_tensor(whole_desc, &whole);
    if (st != DMLPY_OK) return st;
    parts = (dmlpy_tensor*)calloc(count, sizeof *parts);
    stages = (dmlpy_staged_output*)calloc(count, sizeof *stages);
    job.tasks = (dm_task*)calloc(count, sizeof *job.tasks);
    whole_stage.block = NULL;
    if (parts == NULL || stages == NULL || job.tasks == NULL) {
        st = DMLPY_E_OUT_OF_MEMORY;
        goto done;
    }
    for (i = 0; i < count && st == DMLPY_OK; ++i) st = dm_tensor(&part_descs[i], &parts[i]);
    if (st == DMLPY_OK) st = dm_check_parts(&whole, parts, count, axis);
    if (st == DMLPY_OK) st = dmlpy_tensor_bind(&whole, join ? &outputs[0] : &inputs[0]);
    for (i = 0; i < count && st == DMLPY_OK; ++i) st = dmlpy_tensor_bind(&parts[i], join ? &inputs[i] : &outputs[i]);
    if (st != DMLPY_OK) goto done;
    if (join ? dm_any_overlap(&whole, 1, parts, count) : dm_any_overlap(parts, count, &whole, 1)) {
        st = DMLPY_E_INVALID_ARGUMENT;
        goto done;
    }
    if (join) {
        st = dmlpy_output_stage(&whole, &whole_stage);
    } else {
        for (i = 0; i < count && st == DMLPY_OK; ++i) st = dmlpy_output_stage(&parts[i], &stages[i]);
    }
    if (st != DMLPY_OK) goto done;

    dm_strides(&whole, ws);
    for (i = 0; i < count; ++i) {
        dm_task* t = &job.tasks[i];
        /* the part's window of the whole: offset along axis, below whole.sizes[axis] (checked sums) */
        char* at = whole.data + (int64_t)offset * ws[axis] * (int64_t)whole.element_size;
        dm_strides(&parts[i], ps);
        if (join) {
            dm_copy_init(&t->c, whole.rank, parts[i].sizes, ws, whole.element_size, ps, parts[i].element_size, NULL);
            t->dst = at;
            t->src = parts[i].data;
        } else {
            dm_copy_init(&t->c, whole.rank, parts[i].sizes, ps, parts[i].element_size, ws, whole.element_size, NULL);
            t->dst = parts[i].data;
            t->src = at;
        }
        elements += t->c.elements;
        offset += parts[i].sizes[axis];
    }
    job.count = count;
    dm_job_execute(&job, dm_work(elements, whole.element_size, whole.element_size, 0), threadCount);

done:
    if (join) {
        dmlpy_output_unstage(&whole_stage, st == DMLPY_OK);
    } else if (stages != NULL) {
        for (i = 0; i < count; ++i) dmlpy_output_unstage(&stages[i], st == DMLPY_OK);
    }
    free(job.tasks);
    free(stages);
    free(parts);
    return st;
}

/* ---- SLICE, SLICE1 and CAST: one copy ------------------------------------------------------------------ */

static int32_t dm_slice_cast(const DML_OPERATOR_DESC* desc, UINT inputCount, const DMLPY_BOUND_BUFFER* inputs,
                             UINT outputCount, const DMLPY_BOUND_BUFFER* outputs, UINT threadCount) {
    const DML_TENSOR_DESC *x_desc, *y_desc;
    dmlpy_tensor xt, yt;
    dmlpy_staged_output stage;
    dm_job job;
    dm_task task;
    int64_t xs[DM_MAX], ys[DM_MAX], window[DM_MAX];
    int64_t base = 0;
    unsigned i, rank;
    int32_t st;
    dm_convert_fn convert = NULL;

    switch (desc->Type) {
    case DML_OPERATOR_CAST: {
        const DML_CAST_OPERATOR_DESC* d = (const DML_CAST_OPERATOR_DESC*)desc->Desc;
        if (d == NULL) return DMLPY_E_NULL_ARGUMENT;
        x_desc = d->InputTensor;
        y_desc = d->OutputTensor;
        break;
    }
    case DML_OPERATOR_SLICE: {
        const DML_SLICE_OPERATOR_DESC* d = (const DML_SLICE_OPERATOR_DESC*)desc->Desc;
        if (d == NULL) return DMLPY_E_NULL_ARGUMENT;
        x_desc = d->InputTensor;
        y_desc = d->OutputTensor;
        break;
    }
    default: {
        const DML_SLICE1_OPERATOR_DESC* d = (const DML_SLICE1_OPERATOR_DESC*)desc->Desc;
        if (d == NULL) return DMLPY_E_NULL_ARGUMENT;
        x_desc = d->InputTensor;
        y_desc = d->OutputTensor;
        break;
    }
    }
    if (inputCount != 1 || outputCount != 1) return DMLPY_E_BINDING_COUNT;
    if (inputs == NULL || outputs == NULL) return DMLPY_E_NULL_ARGUMENT;
    st = dm_tensor(x_desc, &xt);
    if (st != DMLPY_OK) return st;
    st = dm_tensor(y_desc, &yt);
    if (st != DMLPY_OK) return st;
    rank = xt.rank;
    if (yt.rank != rank) return DMLPY_E_INVALID_DESC;
    dm_strides(&xt, xs);

    if (desc->Type == DML_OPERATOR_CAST) {
        for (i = 0; i < rank; ++i) {
            if (xt.sizes[i] != yt.sizes[i]) return DMLPY_E_INVALID_DESC;
            window[i] = xs[i];
        }
        convert = dm_converter(xt.data_type, yt.data_type);
        if (convert == NULL && xt.data_type != yt.data_type) return DMLPY_E_INVALID_DESC;
    } else if (desc->Type == DML_OPERATOR_SLICE) {
        const DML_SLICE_OPERATOR_DESC* d = (const DML_SLICE_OPERATOR_DESC*)desc->Desc;
        if (xt.data_type != yt.data_type) return DMLPY_E_INVALID_DESC;
        if (d->DimensionCount != rank) return DMLPY_E_INVALID_DESC;
        if (d->Offsets == NULL || d->Sizes == NULL || d->Strides == NULL) return DMLPY_E_NULL_ARGUMENT;
        for (i = 0; i < rank; ++i) {
            uint64_t last;
            /* every element read, Offsets + Strides * (Sizes - 1) at most, lies inside the input */
            if (d->Sizes[i] == 0 || d->Sizes[i] != yt.sizes[i]) return DMLPY_E_INVALID_DESC;
            if (!dmlpy_mul_u64(d->Strides[i], (uint64_t)d->Sizes[i] - 1u, &last) ||
                !dmlpy_add_u64(last, d->Offsets[i], &last) || last >= xt.sizes[i]) {
                return DMLPY_E_INVALID_DESC;
            }
            base += (int64_t)d->Offsets[i] * xs[i];
            /* a stride along an output dim of 1 is never stepped (and may be far past the input) */
            window[i] = yt.sizes[i] == 1 ? 0 : (int64_t)d->Strides[i] * xs[i];
        }
    } else {
        const DML_SLICE1_OPERATOR_DESC* d = (const DML_SLICE1_OPERATOR_DESC*)desc->Desc;
        if (xt.data_type != yt.data_type) return DMLPY_E_INVALID_DESC;
        if (d->DimensionCount != rank) return DMLPY_E_INVALID_DESC;
        if (d->InputWindowOffsets == NULL || d->InputWindowSizes == NULL || d->InputWindowStrides == NULL) {
            return DMLPY_E_NULL_ARGUMENT;
        }
        for (i = 0; i < rank; ++i) {
            const uint64_t offset = d->InputWindowOffsets[i], size = d->InputWindowSizes[i];
            const int64_t stride = d->InputWindowStrides[i];
            const uint64_t step = (uint64_t)(stride < 0 ? -stride : stride);
            int64_t start;
            /* the window [offset, offset + size) is non-empty and inside the input, and the output's
             * elements along i, read every |stride| from one of its ends, stay inside it */
            if (size == 0 || offset + size > xt.sizes[i] || step == 0) return DMLPY_E_INVALID_DESC;
            if (yt.sizes[i] > 1 + (size - 1) / step) return DMLPY_E_INVALID_DESC;
            start = (int64_t)offset + (stride < 0 ? (int64_t)size - 1 : 0);
            base += start * xs[i];
            window[i] = yt.sizes[i] == 1 ? 0 : stride * xs[i];
        }
    }

    st = dmlpy_tensor_bind(&xt, &inputs[0]);
    if (st != DMLPY_OK) return st;
    st = dmlpy_tensor_bind(&yt, &outputs[0]);
    if (st != DMLPY_OK) return st;
    if (dmlpy_tensors_overlap(&xt, &yt)) return DMLPY_E_INVALID_ARGUMENT;
    st = dmlpy_output_stage(&yt, &stage);
    if (st != DMLPY_OK) return st;
    dm_strides(&yt, ys);
    dm_copy_init(&task.c, rank, yt.sizes, ys, yt.element_size, window, xt.element_size, convert);
    task.dst = yt.data;
    task.src = xt.data + base * (int64_t)xt.element_size;
    job.tasks = &task;
    job.count = 1;
    dm_job_execute(&job, dm_work(task.c.elements, yt.element_size, xt.element_size, convert != NULL), threadCount);
    dmlpy_output_unstage(&stage, 1);
    return DMLPY_OK;
}

/* ---- PADDING and PADDING1 ------------------------------------------------------------------------------ */

typedef struct dm_pad {
    unsigned rank;
    uint64_t out[DM_MAX], in[DM_MAX], start[DM_MAX];
    int64_t ds[DM_MAX], ss[DM_MAX]; /* byte strides */
    uint32_t esize;
    int mode;
    unsigned char fill[8];
    char* dst;
    const char* src;
    uint64_t piece, pieces;
    int stream; /* contiguous rows of 4- or 8-byte elements written with non-temporal stores only */
} dm_pad;

/* The input position output position o copies along a dim of n input elements after `start` padding, or
 * -1 for CONSTANT padding (the NumPy kernel's _pad_source). */
static inline int64_t dm_pad_source(int64_t o, uint64_t start, uint64_t n, int mode) {
    const int64_t i = o - (int64_t)start, N = (int64_t)n;
    int64_t p, m;
    if (i >= 0 && i < N) return i;
    /* the first fold on either side without a division (padding narrower than the input) */
    if (mode == DML_PADDING_MODE_REFLECTION && N > 1) {
        m = i < 0 ? -i : 2 * (N - 1) - i;
        if (m >= 0 && m < N) return m;
    } else if (mode == DML_PADDING_MODE_SYMMETRIC) {
        m = i < 0 ? -i - 1 : 2 * N - 1 - i;
        if (m >= 0 && m < N) return m;
    } else if (mode == DML_PADDING_MODE_WRAP) {
        m = i < 0 ? i + N : i - N;
        if (m >= 0 && m < N) return m;
    }
    switch (mode) {
    case DML_PADDING_MODE_EDGE:
        return i < 0 ? 0 : N - 1;
    case DML_PADDING_MODE_REFLECTION:
        if (N == 1) return 0;
        p = 2 * (N - 1);
        m = ((i % p) + p) % p;
        return m < N ? m : p - m;
    case DML_PADDING_MODE_SYMMETRIC:
        p = 2 * N;
        m = ((i % p) + p) % p;
        return m < N ? m : p - 1 - m;
    case DML_PADDING_MODE_WRAP:
        return ((i % N) + N) % N;
    default:
        return -1;
    }
}

static inline void dm_fill(char* d, int64_t step, uint64_t n, const unsigned char* value, uint32_t esize) {
    uint64_t i;
    switch (esize) {
    case 1:
        if (step == 1) {
            memset(d, value[0], (size_t)n);
            return;
        }
        for (i = 0; i < n; ++i, d += step) *(uint8_t*)d = value[0];
        return;
    case 2: {
        uint16_t v;
        memcpy(&v, value, 2);
        if (step == 2) {
            uint16_t* t = (uint16_t*)(void*)d;
            for (i = 0; i < n; ++i) t[i] = v;
            return;
        }
        for (i = 0; i < n; ++i, d += step) *(uint16_t*)(void*)d = v;
        return;
    }
    case 4: {
        uint32_t v;
        memcpy(&v, value, 4);
        if (step == 4) {
            uint32_t* t = (uint32_t*)(void*)d;
            for (i = 0; i < n; ++i) t[i] = v;
            return;
        }
        for (i = 0; i < n; ++i, d += step) *(uint32_t*)(void*)d = v;
        return;
    }
    default: {
        uint64_t v;
        memcpy(&v, value, 8);
        if (step == 8) {
            uint64_t* t = (uint64_t*)(void*)d;
            for (i = 0; i < n; ++i) t[i] = v;
            return;
        }
        for (i = 0; i < n; ++i, d += step) *(uint64_t*)(void*)d = v;
        return;
    }
    }
}

/* Output positions [j0, j1) of a row's border along the innermost dim: the fill (CONSTANT) or the input
 * elements the mode's index map picks. */
static void dm_pad_border(const dm_pad* p, char* dst, const char* src, uint64_t j0, uint64_t j1) {
    const unsigned last = p->rank - 1;
    const uint64_t n = p->in[last], start = p->start[last];
    const int64_t dsi = p->ds[last], ssi = p->ss[last];
    uint64_t j;
    if (j0 >= j1) return;
    if (p->mode == DML_PADDING_MODE_CONSTANT) {
        dm_fill(dst + (int64_t)j0 * dsi, dsi, j1 - j0, p->fill, p->esize);
        return;
    }
#define DM_PAD_BORDER(T)                                                                                    \
    for (j = j0; j < j1; ++j) {                                                                             \
        *(T*)(void*)(dst + (int64_t)j * dsi) =                                                              \
            *(const T*)(const void*)(src + dm_pad_source((int64_t)j, start, n, p->mode) * ssi);             \
    }
    switch (p->esize) {
    case 1: DM_PAD_BORDER(uint8_t) break;
    case 2: DM_PAD_BORDER(uint16_t) break;
    case 4: DM_PAD_BORDER(uint32_t) break;
    default: DM_PAD_BORDER(uint64_t) break;
    }
#undef DM_PAD_BORDER
}

/* A row piece [l0, l1) whose innermost dim is contiguous in both tensors: border, memcpy, border, typed. */
#define DM_PAD_ROW(T)                                                                                          \
    static inline void dm_pad_row_##T(const dm_pad* p, char* dst, const char* src, uint64_t l0, uint64_t l1) { \
        const unsigned last = p->rank - 1;                                                                     \
        const uint64_t n = p->in[last], start = p->start[last];                                                \
        const uint64_t a = l0 > start ? l0 : start, z = l1 < start + n ? l1 : start + n;                       \
        T* d = (T*)(void*)dst;                                                                                 \
        const T* sr = (const T*)(const void*)src;                                                              \
        T fill;                                                                                                \
        uint64_t j;                                                                                            \
        memcpy(&fill, p->fill, sizeof fill);                                                                   \
        if (p->mode == DML_PADDING_MODE_CONSTANT) {                                                            \
            for (j = l0; j < l1 && j < start; ++j) d[j] = fill;                                                \
            for (j = a > z ? a : z; j < l1; ++j) d[j] = fill;                                                  \
        } else {                                                                                               \
            for (j = l0; j < l1 && j < start; ++j) d[j] = sr[dm_pad_source((int64_t)j, start, n, p->mode)];   \
            for (j = a > z ? a : z; j < l1; ++j) d[j] = sr[dm_pad_source((int64_t)j, start, n, p->mode)];     \
        }                                                                                                      \
        if (a < z) memcpy(d + a, sr + (a - start), (size_t)(z - a) * sizeof(T));                               \
    }
DM_PAD_ROW(uint8_t)
DM_PAD_ROW(uint16_t)
DM_PAD_ROW(uint32_t)
DM_PAD_ROW(uint64_t)
#undef DM_PAD_ROW

#if defined(DM_STREAM)
/* dm_pad_row for a large output (elements of 4 or 8 bytes), through the non-temporal writer w. */
static void dm_pad_row_stream(const dm_pad* p, dm_ntw* w, char* dst, const char* src, uint64_t l0, uint64_t l1) {
    const unsigned last = p->rank - 1;
    const uint64_t n = p->in[last], start = p->start[last], es = p->esize;
    const uint64_t a = l0 > start ? l0 : start, z = l1 < start + n ? l1 : start + n;
    const uint64_t b1 = l1 < start ? l1 : start, b2 = a > z ? a : z; /* the borders: [l0, b1), [b2, l1) */
    uint64_t j;
    dm_ntw_seek(w, dst + l0 * es);
    if (p->mode == DML_PADDING_MODE_CONSTANT) {
        if (l0 < b1) dm_ntw_fill(w, p->fill, (uint32_t)es, (size_t)((b1 - l0) * es));
        if (a < z) dm_ntw_copy(w, src + (a - start) * es, (size_t)((z - a) * es));
        if (b2 < l1) dm_ntw_fill(w, p->fill, (uint32_t)es, (size_t)((l1 - b2) * es));
        return;
    }
    for (j = l0; j < b1; ++j) dm_ntw_copy(w, src + (uint64_t)dm_pad_source((int64_t)j, start, n, p->mode) * es, (size_t)es);
    if (a < z) dm_ntw_copy(w, src + (a - start) * es, (size_t)((z - a) * es));
    for (j = b2; j < l1; ++j) dm_ntw_copy(w, src + (uint64_t)dm_pad_source((int64_t)j, start, n, p->mode) * es, (size_t)es);
}
#endif

/* Where an output row (or plane) of PADDING starts: the index of each dim above `top`, the byte offsets of the
 * output and of the input (the input offset leaves out the dims whose index is CONSTANT padding: their
 * contribution is -1, a real byte offset being >= 0), and how many of those dims there are. */
typedef struct dm_pad_pos {
    uint64_t idx[DM_MAX];
    int64_t doff, soff, scontrib[DM_MAX];
    unsigned outside;
} dm_pad_pos;

static void dm_pad_set_dim(const dm_pad* p, dm_pad_pos* q, unsigned d) {
    const int64_t s = dm_pad_source((int64_t)q->idx[d], p->start[d], p->in[d], p->mode);
    q->scontrib[d] = s < 0 ? -1 : s * p->ss[d];
    q->outside += s < 0;
    q->soff += s < 0 ? 0 : q->scontrib[d];
}

/* The position of row (or plane) `at` of the dims below `top`, counted row-major. */
static void dm_pad_seek(const dm_pad* p, dm_pad_pos* q, unsigned top, uint64_t at) {
    unsigned d;
    q->doff = q->soff = 0;
    q->outside = 0;
    for (d = top; d-- > 0;) {
        q->idx[d] = at % p->out[d];
        at /= p->out[d];
        q->doff += (int64_t)q->idx[d] * p->ds[d];
        dm_pad_set_dim(p, q, d);
    }
}

/* The next row (or plane): the offsets of the dims that step are updated. */
static void dm_pad_step(const dm_pad* p, dm_pad_pos* q, unsigned top) {
    unsigned d;
    for (d = top; d-- > 0;) {
        q->outside -= q->scontrib[d] == -1;
        q->soff -= q->scontrib[d] == -1 ? 0 : q->scontrib[d];
        if (++q->idx[d] < p->out[d]) {
            q->doff += p->ds[d];
        } else {
            q->doff -= (int64_t)(p->out[d] - 1) * p->ds[d];
            q->idx[d] = 0;
        }
        dm_pad_set_dim(p, q, d);
        if (q->idx[d] != 0) break;
    }
}

static void dm_pad_run(void* ctx, uint64_t b, uint64_t e, unsigned worker) {
    const dm_pad* p = (const dm_pad*)ctx;
    const unsigned last = p->rank - 1;
    const uint64_t n = p->in[last], start = p->start[last], total = p->out[last];
    const int64_t dsi = p->ds[last], ssi = p->ss[last];
    const int contiguous = dsi == (int64_t)p->esize && ssi == (int64_t)p->esize;
    dm_pad_pos q;
    uint64_t k;
#if defined(DM_STREAM)
    dm_ntw w;
    dm_ntw_begin(&w, p->dst);
#endif
    (void)worker;
    if (b >= e) return;
    dm_pad_seek(p, &q, last, b / p->pieces);
    k = b % p->pieces;
    for (;;) {
        const uint64_t l0 = k * p->piece, l1 = l0 + p->piece < total ? l0 + p->piece : total;
        char* dst = p->dst + q.doff;
        const char* src = p->src + q.soff;
        if (q.outside) {
#if defined(DM_STREAM)
            if (p->stream) {
                dm_ntw_seek(&w, dst + l0 * p->esize);
                dm_ntw_fill(&w, p->fill, p->esize, (size_t)((l1 - l0) * p->esize));
            } else
#endif
            dm_fill(dst + (int64_t)l0 * dsi, dsi, l1 - l0, p->fill, p->esize);
        } else if (contiguous) {
#if defined(DM_STREAM)
            if (p->stream) {
                dm_pad_row_stream(p, &w, dst, src, l0, l1);
            } else
#endif
            switch (p->esize) {
            case 1: dm_pad_row_uint8_t(p, dst, src, l0, l1); break;
            case 2: dm_pad_row_uint16_t(p, dst, src, l0, l1); break;
            case 4: dm_pad_row_uint32_t(p, dst, src, l0, l1); break;
            default: dm_pad_row_uint64_t(p, dst, src, l0, l1); break;
            }
        } else {
            const uint64_t a = l0 > start ? l0 : start, z = l1 < start + n ? l1 : start + n;
            dm_pad_border(p, dst, src, l0, l1 < start ? l1 : start); /* before the input */
            if (a < z) dm_row(p->esize, NULL, dst + (int64_t)a * dsi, dsi, src + (int64_t)(a - start) * ssi, ssi, z - a);
            dm_pad_border(p, dst, src, a > z ? a : z, l1); /* after it */
        }
        if (++b >= e) break;
        if (++k < p->pieces) continue;
        k = 0;
        dm_pad_step(p, &q, last);
    }
#if defined(DM_STREAM)
    if (p->stream) {
        dm_ntw_flush(&w);
        _mm_sfence();
    }
#endif
}

/* dm_pad_run for whole rows (one piece per row) whose innermost dim is contiguous in both tensors, written
 * normally: the rows of one plane (the next-to-innermost dim) run in a tight loop, the outer dims' offsets
 * are stepped once per plane, and a plane's rows that are all CONSTANT padding are one fill when they are
 * adjacent in the output. Same bytes as dm_pad_run. */
static void dm_pad_run_rows(void* ctx, uint64_t b, uint64_t e, unsigned worker) {
    const dm_pad* p = (const dm_pad*)ctx;
    const unsigned last = p->rank - 1, H = last - 1;
    const uint64_t total = p->out[last], outH = p->out[H], inH = p->in[H], startH = p->start[H];
    const int64_t dsH = p->ds[H], ssH = p->ss[H];
    const int packed_rows = dsH == (int64_t)(total * p->esize); /* a plane's rows are adjacent in the output */
    dm_pad_pos q;
    uint64_t h;
    (void)worker;
    if (b >= e) return;
    h = b % outH;
    dm_pad_seek(p, &q, H, b / outH);
    for (;;) {
        const uint64_t h_end = outH - h < e - b ? outH : h + (e - b);
        char* plane = p->dst + q.doff;
        const char* splane = p->src + q.soff;
        if (q.outside) {
            if (packed_rows) {
                dm_fill(plane + (int64_t)h * dsH, (int64_t)p->esize, (h_end - h) * total, p->fill, p->esize);
            } else {
                uint64_t r;
                for (r = h; r < h_end; ++r) dm_fill(plane + (int64_t)r * dsH, (int64_t)p->esize, total, p->fill, p->esize);
            }
        } else {
            uint64_t r = h;
            while (r < h_end) {
                const int64_t s = dm_pad_source((int64_t)r, startH, inH, p->mode);
                if (s < 0) { /* CONSTANT rows above or below the input: one fill for the run of them */
                    uint64_t r1 = r + 1;
                    while (r1 < h_end && dm_pad_source((int64_t)r1, startH, inH, p->mode) < 0) ++r1;
                    if (packed_rows) {
                        dm_fill(plane + (int64_t)r * dsH, (int64_t)p->esize, (r1 - r) * total, p->fill, p->esize);
                    } else {
                        uint64_t rr;
                        for (rr = r; rr < r1; ++rr) dm_fill(plane + (int64_t)rr * dsH, (int64_t)p->esize, total, p->fill, p->esize);
                    }
                    r = r1;
                    continue;
                }
                {
                    char* dst = plane + (int64_t)r * dsH;
                    const char* src = splane + s * ssH;
                    switch (p->esize) {
                    case 1: dm_pad_row_uint8_t(p, dst, src, 0, total); break;
                    case 2: dm_pad_row_uint16_t(p, dst, src, 0, total); break;
                    case 4: dm_pad_row_uint32_t(p, dst, src, 0, total); break;
                    default: dm_pad_row_uint64_t(p, dst, src, 0, total); break;
                    }
                }
                ++r;
            }
        }
        b += h_end - h;
        if (b >= e) break;
        h = 0;
        dm_pad_step(p, &q, H);
    }
}

/* PADDING's FLOAT value in the tensor's type: NumPy's store of the float (truncated and saturated into an
 * integer type, NaN -> 0; rounded to nearest even into FLOAT16). */
static void dm_float_value(float v, DML_TENSOR_DATA_TYPE t, unsigned char* out) {
    if (t == DML_TENSOR_DATA_TYPE_FLOAT32) {
        memcpy(out, &v, 4);
    } else {
        dm_converters[DML_TENSOR_DATA_TYPE_FLOAT32][t]((char*)out, 0, (const char*)&v, 0, 1);
    }
}

static int32_t dm_padding(const DML_OPERATOR_DESC* desc, UINT inputCount, const DMLPY_BOUND_BUFFER* inputs,
                          UINT outputCount, const DMLPY_BOUND_BUFFER* outputs, UINT threadCount) {
    const DML_TENSOR_DESC *x_desc, *y_desc;
    const UINT *starts, *ends;
    UINT count;
    dmlpy_tensor xt, yt;
    dmlpy_staged_output stage;
    dm_pad p;
    uint64_t rows = 1, items, elements = 1;
    unsigned i, rank, threads, most;
    int32_t st;

    memset(&p, 0, sizeof p);
    if (desc->Type == DML_OPERATOR_PADDING) {
        const DML_PADDING_OPERATOR_DESC* d = (const DML_PADDING_OPERATOR_DESC*)desc->Desc;
        if (d == NULL) return DMLPY_E_NULL_ARGUMENT;
        x_desc = d->InputTensor;
        y_desc = d->OutputTensor;
        p.mode = (int)d->PaddingMode;
        count = d->DimensionCount;
        starts = d->StartPadding;
        ends = d->EndPadding;
    } else {
        const DML_PADDING1_OPERATOR_DESC* d = (const DML_PADDING1_OPERATOR_DESC*)desc->Desc;
        if (d == NULL) return DMLPY_E_NULL_ARGUMENT;
        x_desc = d->InputTensor;
        y_desc = d->OutputTensor;
        p.mode = (int)d->PaddingMode;
        count = d->DimensionCount;
        starts = d->StartPadding;
        ends = d->EndPadding;
    }
    if (inputCount != 1 || outputCount != 1) return DMLPY_E_BINDING_COUNT;
    if (inputs == NULL || outputs == NULL) return DMLPY_E_NULL_ARGUMENT;
    if (p.mode < DML_PADDING_MODE_CONSTANT || p.mode > DML_PADDING_MODE_WRAP) return DMLPY_E_INVALID_DESC;
    st = dm_tensor(x_desc, &xt);
    if (st != DMLPY_OK) return st;
    st = dm_tensor(y_desc, &yt);
    if (st != DMLPY_OK) return st;
    rank = xt.rank;
    if (yt.rank != rank || count != rank || xt.data_type != yt.data_type) return DMLPY_E_INVALID_DESC;
    if (starts == NULL || ends == NULL) return DMLPY_E_NULL_ARGUMENT;
    for (i = 0; i < rank; ++i) {
        uint64_t want;
        if (!dmlpy_add_u64(xt.sizes[i], starts[i], &want) || !dmlpy_add_u64(want, ends[i], &want) || want != yt.sizes[i]) {
            return DMLPY_E_INVALID_DESC;
        }
    }
    if (desc->Type == DML_OPERATOR_PADDING) {
        dm_float_value(((const DML_PADDING_OPERATOR_DESC*)desc->Desc)->PaddingValue, yt.data_type, p.fill);
    } else {
        const DML_PADDING1_OPERATOR_DESC* d = (const DML_PADDING1_OPERATOR_DESC*)desc->Desc;
        if (d->PaddingValueDataType != yt.data_type) return DMLPY_E_INVALID_DESC;
        memcpy(p.fill, d->PaddingValue.Bytes, yt.element_size); /* the union's first bytes, as C reads it */
    }

    st = dmlpy_tensor_bind(&xt, &inputs[0]);
    if (st != DMLPY_OK) return st;
    st = dmlpy_tensor_bind(&yt, &outputs[0]);
    if (st != DMLPY_OK) return st;
    if (dmlpy_tensors_overlap(&xt, &yt)) return DMLPY_E_INVALID_ARGUMENT;
    st = dmlpy_output_stage(&yt, &stage);
    if (st != DMLPY_OK) return st;

    /* Dims without padding that are contiguous in both tensors with the dim inside them merge into it. */
    p.esize = yt.element_size;
    for (i = 0; i < rank; ++i) {
        const int64_t ds = (int64_t)yt.strides[i] * (int64_t)p.esize, ss = (int64_t)xt.strides[i] * (int64_t)p.esize;
        const uint64_t pad = (uint64_t)starts[i] + ends[i];
        elements *= yt.sizes[i];
        if (p.rank > 0 && pad == 0 && p.start[p.rank - 1] == 0 && p.out[p.rank - 1] == p.in[p.rank - 1] &&
            p.ds[p.rank - 1] == ds * (int64_t)yt.sizes[i] && p.ss[p.rank - 1] == ss * (int64_t)yt.sizes[i]) {
            p.out[p.rank - 1] *= yt.sizes[i];
            p.in[p.rank - 1] *= yt.sizes[i];
            p.ds[p.rank - 1] = ds;
            p.ss[p.rank - 1] = ss;
            continue;
        }
        p.out[p.rank] = yt.sizes[i];
        p.in[p.rank] = xt.sizes[i];
        p.start[p.rank] = starts[i];
        p.ds[p.rank] = ds;
        p.ss[p.rank] = ss;
        ++p.rank;
    }
    p.dst = yt.data;
    p.src = xt.data;
    for (i = 0; i + 1 < p.rank; ++i) rows *= p.out[i];
    p.piece = p.out[p.rank - 1];
    p.pieces = 1;
    most = threadCount ? threadCount : dmlpy_online_cpus();
    if (most > 1 && rows < 8u * (uint64_t)most && p.piece >= 2u * (DM_MIN_PIECE_BYTES / p.esize)) {
        uint64_t want = (8u * (uint64_t)most + rows - 1) / rows, by = p.piece / (DM_MIN_PIECE_BYTES / p.esize);
        uint64_t pieces = want < by ? want : by, inner = p.piece;
        p.piece = (inner + pieces - 1) / pieces;
        p.pieces = (inner + p.piece - 1) / p.piece;
    }
    items = rows * p.pieces;
    p.stream = elements * p.esize >= dm_stream_min_bytes() && (p.esize == 4 || p.esize == 8) &&
               p.ds[p.rank - 1] == (int64_t)p.esize && p.ss[p.rank - 1] == (int64_t)p.esize;
    threads = dmlpy_choose_threads(dm_work(elements, p.esize, p.esize, 0), items, threadCount);
    dmlpy_parallel_for(items, dmlpy_choose_grain(items, threads), threads,
                       p.pieces == 1 && p.rank >= 2 && !p.stream && p.ds[p.rank - 1] == (int64_t)p.esize &&
                               p.ss[p.rank - 1] == (int64_t)p.esize
                           ? dm_pad_run_rows
                           : dm_pad_run,
                       &p);
    dmlpy_output_unstage(&stage, 1);
    return DMLPY_OK;
}

/* ---- GATHER and GATHER_ELEMENTS ------------------------------------------------------------------------ */

/* An index element as a position in [0, size): a negative signed index counts from the end, then the
 * position is clamped into the axis (safe_indices). */
static inline uint64_t dm_index(const char* p, DML_TENSOR_DATA_TYPE t, uint64_t size) {
    int64_t v;
    switch (t) {
    case DML_TENSOR_DATA_TYPE_UINT32: {
        const uint64_t u = *(const uint32_t*)(const void*)p;
        return u < size ? u : size - 1;
    }
    case DML_TENSOR_DATA_TYPE_UINT64: {
        const uint64_t u = *(const uint64_t*)(const void*)p;
        return u < size ? u : size - 1;
    }
    case DML_TENSOR_DATA_TYPE_INT32:
        v = *(const int32_t*)(const void*)p;
        break;
    default:
        v = *(const int64_t*)(const void*)p;
        break;
    }
    if (v < 0) v += (int64_t)size; /* size < 2^32: no overflow */
    if (v < 0) return 0;
    return (uint64_t)v < size ? (uint64_t)v : size - 1;
}

static int dm_index_type(DML_TENSOR_DATA_TYPE t) {
    return t == DML_TENSOR_DATA_TYPE_UINT32 || t == DML_TENSOR_DATA_TYPE_UINT64 || t == DML_TENSOR_DATA_TYPE_INT32 ||
           t == DML_TENSOR_DATA_TYPE_INT64;
}

#define DM_FULL (2 * DM_MAX)

/* The gathers' outputs are a list of "full" dims right-aligned with the output's: leading 1s cropped or
 * added. Checks the sizes; with full_dst, also gives each full dim's output byte stride (0 when cropped). */
static int32_t dm_align_output(const uint64_t* full_sizes, unsigned nfull, const dmlpy_tensor* yt, int64_t* full_dst) {
    const unsigned rank = yt->rank;
    unsigned i;
    if (nfull >= rank) {
        const unsigned shift = nfull - rank;
        for (i = 0; i < nfull; ++i) {
            if (i < shift ? full_sizes[i] != 1 : full_sizes[i] != yt->sizes[i - shift]) return DMLPY_E_INVALID_DESC;
            if (full_dst) full_dst[i] = i < shift ? 0 : (int64_t)yt->strides[i - shift] * (int64_t)yt->element_size;
        }
    } else {
        const unsigned shift = rank - nfull;
        for (i = 0; i < shift; ++i) {
            if (yt->sizes[i] != 1) return DMLPY_E_INVALID_DESC;
        }
        for (i = 0; i < nfull; ++i) {
            if (full_sizes[i] != yt->sizes[i + shift]) return DMLPY_E_INVALID_DESC;
            if (full_dst) full_dst[i] = (int64_t)yt->strides[i + shift] * (int64_t)yt->element_size;
        }
    }
    return DMLPY_OK;
}

typedef struct dm_gather {
    /* GATHER: item = (outer index over P, index element over I); each copies the block `block` */
    unsigned np, ni;
    uint64_t p_sizes[DM_MAX], i_sizes[DM_MAX];
    int64_t p_src[DM_MAX], p_dst[DM_MAX]; /* bytes */
    int64_t i_idx[DM_MAX], i_dst[DM_MAX]; /* bytes into the indices, into the output */
    int64_t axis_stride;                  /* bytes */
    uint64_t axis_size;
    DML_TENSOR_DATA_TYPE index_type;
    const char* x;
    const char* indices;
    char* y;
    dm_copy block;
} dm_gather;

static void dm_gather_run(void* ctx, uint64_t b, uint64_t e, unsigned worker) {
    const dm_gather* g = (const dm_gather*)ctx;
    (void)worker;
    for (; b < e; ++b) {
        uint64_t rest = b;
        int64_t src = 0, dst = 0, at = 0;
        unsigned d;
        for (d = g->ni; d-- > 0;) {
            const uint64_t k = rest % g->i_sizes[d];
            rest /= g->i_sizes[d];
            at += (int64_t)k * g->i_idx[d];
            dst += (int64_t)k * g->i_dst[d];
        }
        for (d = g->np; d-- > 0;) {
            const uint64_t k = rest % g->p_sizes[d];
            rest /= g->p_sizes[d];
            src += (int64_t)k * g->p_src[d];
            dst += (int64_t)k * g->p_dst[d];
        }
        src += (int64_t)dm_index(g->indices + at, g->index_type, g->axis_size) * g->axis_stride;
        dm_copy_range(&g->block, g->y + dst, g->x + src, 0, g->block.items);
    }
}

static int32_t dm_gather_op(const DML_OPERATOR_DESC* desc, UINT inputCount, const DMLPY_BOUND_BUFFER* inputs,
                            UINT outputCount, const DMLPY_BOUND_BUFFER* outputs, UINT threadCount) {
    const DML_GATHER_OPERATOR_DESC* d = (const DML_GATHER_OPERATOR_DESC*)desc->Desc;
    dmlpy_tensor xt, it, yt, ins[2];
    dmlpy_staged_output stage;
    dm_gather g;
    uint64_t full_sizes[DM_FULL], items = 1, elements = 1;
    int64_t full_dst[DM_FULL], qs[DM_MAX], qd[DM_MAX];
    unsigned rank, axis, k, nfull, i, threads;
    int32_t st;

    if (d == NULL) return DMLPY_E_NULL_ARGUMENT;
    if (inputCount != 2 || outputCount != 1) return DMLPY_E_BINDING_COUNT;
    if (inputs == NULL || outputs == NULL) return DMLPY_E_NULL_ARGUMENT;
    if ((st = dm_tensor(d->InputTensor, &xt)) != DMLPY_OK) return st;
    if ((st = dmlpy_tensor_from_desc(d->IndicesTensor, &it)) != DMLPY_OK) return st;
    if ((st = dm_tensor(d->OutputTensor, &yt)) != DMLPY_OK) return st;
    rank = xt.rank;
    axis = d->Axis;
    k = d->IndexDimensions;
    if (it.rank != rank || yt.rank != rank || axis >= rank || k > rank) return DMLPY_E_INVALID_DESC;
    if (xt.data_type != yt.data_type || !dm_index_type(it.data_type)) return DMLPY_E_INVALID_DESC;

    /* The output is {x sizes before axis, the last k indices sizes, x sizes after axis}, right-aligned:
     * leading 1s cropped or added. */
    nfull = 0;
    for (i = 0; i < axis; ++i) full_sizes[nfull++] = xt.sizes[i];
    for (i = rank - k; i < rank; ++i) full_sizes[nfull++] = it.sizes[i];
    for (i = axis + 1; i < rank; ++i) full_sizes[nfull++] = xt.sizes[i];
    if ((st = dm_align_output(full_sizes, nfull, &yt, 0)) != DMLPY_OK) return st;

    if ((st = dmlpy_tensor_bind(&xt, &inputs[0])) != DMLPY_OK) return st;
    if ((st = dmlpy_tensor_bind(&it, &inputs[1])) != DMLPY_OK) return st;
    if ((st = dmlpy_tensor_bind(&yt, &outputs[0])) != DMLPY_OK) return st;
    ins[0] = xt;
    ins[1] = it;
    if (dm_any_overlap(&yt, 1, ins, 2)) return DMLPY_E_INVALID_ARGUMENT;
    if ((st = dmlpy_output_stage(&yt, &stage)) != DMLPY_OK) return st;
    dm_align_output(full_sizes, nfull, &yt, full_dst);

    memset(&g, 0, sizeof g);
    g.np = axis;
    for (i = 0; i < axis; ++i) {
        g.p_sizes[i] = xt.sizes[i];
        g.p_src[i] = (int64_t)xt.strides[i] * (int64_t)xt.element_size;
        g.p_dst[i] = full_dst[i];
        items *= xt.sizes[i];
    }
    g.ni = k;
    for (i = 0; i < k; ++i) {
        g.i_sizes[i] = it.sizes[rank - k + i];
        g.i_idx[i] = (int64_t)it.strides[rank - k + i] * (int64_t)it.element_size;
        g.i_dst[i] = full_dst[axis + i];
        items *= g.i_sizes[i];
    }
    for (i = axis + 1; i < rank; ++i) {
        qs[i - axis - 1] = (int64_t)xt.strides[i];
        qd[i - axis - 1] = full_dst[axis + k + i - axis - 1] / (int64_t)yt.element_size;
    }
    /* the block: x's sizes after axis (one element when axis is the last) */
    if (axis + 1 < rank) {
        dm_copy_init(&g.block, rank - axis - 1, &xt.sizes[axis + 1], qd, yt.element_size, qs, xt.element_size, NULL);
    } else {
        const uint64_t one = 1;
        const int64_t unit = 1;
        dm_copy_init(&g.block, 1, &one, &unit, yt.element_size, &unit, xt.element_size, NULL);
    }
    g.axis_stride = (int64_t)xt.strides[axis] * (int64_t)xt.element_size;
    g.axis_size = xt.sizes[axis];
    g.index_type = it.data_type;
    g.x = xt.data;
    g.indices = it.data; /* the leading indices dims the desc ignores are read at index 0 */
    g.y = yt.data;
    for (i = 0; i < rank; ++i) elements *= yt.sizes[i];
    threads = dmlpy_choose_threads(dm_work(elements, yt.element_size, xt.element_size, 0) + items, items, threadCount);
    dmlpy_parallel_for(items, dmlpy_choose_grain(items, threads), threads, dm_gather_run, &g);
    dmlpy_output_unstage(&stage, 1);
    return DMLPY_OK;
}

/* GATHER_ND, GATHER_ND1: item = an index tuple's position over the indices' meaningful dims before the
 * tuple (the first BatchDimensionCount of them also step the input's batch dims); each copies the block
 * of input dims after the batches and the tuple. */
typedef struct dm_gather_nd {
    unsigned ni, tuple;
    uint64_t i_sizes[DM_MAX];
    int64_t i_idx[DM_MAX], i_dst[DM_MAX], i_src[DM_MAX]; /* bytes: indices, output, input (batch dims) */
    uint64_t t_size[DM_MAX];
    int64_t t_src[DM_MAX], t_idx;
    DML_TENSOR_DATA_TYPE index_type;
    const char* x;
    const char* indices;
    char* y;
    dm_copy block;
} dm_gather_nd;

static void dm_gather_nd_run(void* ctx, uint64_t b, uint64_t e, unsigned worker) {
    const dm_gather_nd* g = (const dm_gather_nd*)ctx;
    (void)worker;
    for (; b < e; ++b) {
        uint64_t rest = b;
        int64_t src = 0, dst = 0, at = 0;
        unsigned d, j;
        for (d = g->ni; d-- > 0;) {
            const uint64_t k = rest % g->i_sizes[d];
            rest /= g->i_sizes[d];
            at += (int64_t)k * g->i_idx[d];
            dst += (int64_t)k * g->i_dst[d];
            src += (int64_t)k * g->i_src[d];
        }
        for (j = 0; j < g->tuple; ++j) {
            src += (int64_t)dm_index(g->indices + at + (int64_t)j * g->t_idx, g->index_type, g->t_size[j]) * g->t_src[j];
        }
        dm_copy_range(&g->block, g->y + dst, g->x + src, 0, g->block.items);
    }
}

static int32_t dm_gather_nd_op(const DML_OPERATOR_DESC* desc, UINT inputCount, const DMLPY_BOUND_BUFFER* inputs,
                               UINT outputCount, const DMLPY_BOUND_BUFFER* outputs, UINT threadCount) {
    const DML_TENSOR_DESC *x_desc, *i_desc, *y_desc;
    dmlpy_tensor xt, it, yt, ins[2];
    dmlpy_staged_output stage;
    dm_gather_nd g;
    uint64_t full_sizes[DM_FULL], items = 1, elements = 1;
    int64_t full_dst[DM_FULL], qs[DM_MAX], qd[DM_MAX];
    unsigned r, ix, ic, batch, T, first_x, first_i, q0, nq, nfull = 0, i, threads;
    int32_t st;

    if (desc->Type == DML_OPERATOR_GATHER_ND) {
        const DML_GATHER_ND_OPERATOR_DESC* d = (const DML_GATHER_ND_OPERATOR_DESC*)desc->Desc;
        x_desc = d->InputTensor;
        i_desc = d->IndicesTensor;
        y_desc = d->OutputTensor;
        ix = d->InputDimensionCount;
        ic = d->IndicesDimensionCount;
        batch = 0;
    } else {
        const DML_GATHER_ND1_OPERATOR_DESC* d = (const DML_GATHER_ND1_OPERATOR_DESC*)desc->Desc;
        x_desc = d->InputTensor;
        i_desc = d->IndicesTensor;
        y_desc = d->OutputTensor;
        ix = d->InputDimensionCount;
        ic = d->IndicesDimensionCount;
        batch = d->BatchDimensionCount;
    }
    if (inputCount != 2 || outputCount != 1) return DMLPY_E_BINDING_COUNT;
    if (inputs == NULL || outputs == NULL) return DMLPY_E_NULL_ARGUMENT;
    if ((st = dm_tensor(x_desc, &xt)) != DMLPY_OK) return st;
    if ((st = dmlpy_tensor_from_desc(i_desc, &it)) != DMLPY_OK) return st;
    if ((st = dm_tensor(y_desc, &yt)) != DMLPY_OK) return st;
    r = xt.rank;
    if (it.rank != r || yt.rank != r || xt.data_type != yt.data_type || !dm_index_type(it.data_type)) return DMLPY_E_INVALID_DESC;
    /* the meaningful dims exist, the batches precede the tuple in the indices and fit in the input with it */
    if (ix < 1 || ix > r || ic < 1 || ic > r || batch >= ic) return DMLPY_E_INVALID_DESC;
    T = it.sizes[r - 1] > DM_MAX ? DM_MAX + 1 : (unsigned)it.sizes[r - 1];
    if (batch + T > ix) return DMLPY_E_INVALID_DESC;
    first_x = r - ix;
    first_i = r - ic;
    for (i = 0; i < batch; ++i) {
        if (xt.sizes[first_x + i] != it.sizes[first_i + i]) return DMLPY_E_INVALID_DESC;
    }
    q0 = first_x + batch + T;
    nq = r - q0;
    for (i = first_i; i + 1 < r; ++i) full_sizes[nfull++] = it.sizes[i];
    for (i = q0; i < r; ++i) full_sizes[nfull++] = xt.sizes[i];
    if ((st = dm_align_output(full_sizes, nfull, &yt, 0)) != DMLPY_OK) return st;

    if ((st = dmlpy_tensor_bind(&xt, &inputs[0])) != DMLPY_OK) return st;
    if ((st = dmlpy_tensor_bind(&it, &inputs[1])) != DMLPY_OK) return st;
    if ((st = dmlpy_tensor_bind(&yt, &outputs[0])) != DMLPY_OK) return st;
    ins[0] = xt;
    ins[1] = it;
    if (dm_any_overlap(&yt, 1, ins, 2)) return DMLPY_E_INVALID_ARGUMENT;
    if ((st = dmlpy_output_stage(&yt, &stage)) != DMLPY_OK) return st;
    dm_align_output(full_sizes, nfull, &yt, full_dst);

    memset(&g, 0, sizeof g);
    g.ni = ic - 1;
    for (i = 0; i < g.ni; ++i) {
        g.i_sizes[i] = it.sizes[first_i + i];
        g.i_idx[i] = (int64_t)it.strides[first_i + i] * (int64_t)it.element_size;
        g.i_dst[i] = full_dst[i];
        g.i_src[i] = i < batch ? (int64_t)xt.strides[first_x + i] * (int64_t)xt.element_size : 0;
        items *= g.i_sizes[i];
    }
    g.tuple = T;
    g.t_idx = (int64_t)it.strides[r - 1] * (int64_t)it.element_size;
    for (i = 0; i < T; ++i) {
        g.t_size[i] = xt.sizes[first_x + batch + i];
        g.t_src[i] = (int64_t)xt.strides[first_x + batch + i] * (int64_t)xt.element_size;
    }
    for (i = 0; i < nq; ++i) {
        qs[i] = (int64_t)xt.strides[q0 + i];
        qd[i] = full_dst[g.ni + i] / (int64_t)yt.element_size;
    }
    if (nq > 0) {
        dm_copy_init(&g.block, nq, &xt.sizes[q0], qd, yt.element_size, qs, xt.element_size, NULL);
    } else {
        const uint64_t one = 1;
        const int64_t unit = 1;
        dm_copy_init(&g.block, 1, &one, &unit, yt.element_size, &unit, xt.element_size, NULL);
    }
    g.index_type = it.data_type;
    g.x = xt.data; /* the leading dims the desc ignores are read at index 0 */
    g.indices = it.data;
    g.y = yt.data;
    for (i = 0; i < r; ++i) elements *= yt.sizes[i];
    threads = dmlpy_choose_threads(dm_work(elements, yt.element_size, xt.element_size, 0) + items * T, items, threadCount);
    dmlpy_parallel_for(items, dmlpy_choose_grain(items, threads), threads, dm_gather_nd_run, &g);
    dmlpy_output_unstage(&stage, 1);
    return DMLPY_OK;
}

typedef struct dm_gather_elements {
    unsigned rank, axis;
    uint64_t sizes[DM_MAX];                          /* the output's = the indices' */
    int64_t xs[DM_MAX], is[DM_MAX], ys[DM_MAX];      /* bytes */
    uint64_t axis_size;
    uint32_t esize;
    DML_TENSOR_DATA_TYPE index_type;
    const char* x;
    const char* indices;
    char* y;
} dm_gather_elements;

static void dm_gather_elements_run(void* ctx, uint64_t b, uint64_t e, unsigned worker) {
    const dm_gather_elements* g = (const dm_gather_elements*)ctx;
    const unsigned last = g->rank - 1;
    const uint64_t n = g->sizes[last];
    (void)worker;
    for (; b < e; ++b) {
        uint64_t rest = b, j;
        int64_t xo = 0, io = 0, yo = 0;
        unsigned d;
        for (d = last; d-- > 0;) {
            const uint64_t k = rest % g->sizes[d];
            rest /= g->sizes[d];
            if (d != g->axis) xo += (int64_t)k * g->xs[d];
            io += (int64_t)k * g->is[d];
            yo += (int64_t)k * g->ys[d];
        }
        for (j = 0; j < n; ++j) {
            const uint64_t at = dm_index(g->indices + io + (int64_t)j * g->is[last], g->index_type, g->axis_size);
            const int64_t src = xo + (int64_t)at * g->xs[g->axis] + (last == g->axis ? 0 : (int64_t)j * g->xs[last]);
            dm_row(g->esize, NULL, g->y + yo + (int64_t)j * g->ys[last], 0, g->x + src, 0, 1);
        }
    }
}

static int32_t dm_gather_elements_op(const DML_OPERATOR_DESC* desc, UINT inputCount, const DMLPY_BOUND_BUFFER* inputs,
                                     UINT outputCount, const DMLPY_BOUND_BUFFER* outputs, UINT threadCount) {
    const DML_GATHER_ELEMENTS_OPERATOR_DESC* d = (const DML_GATHER_ELEMENTS_OPERATOR_DESC*)desc->Desc;
    dmlpy_tensor xt, it, yt, ins[2];
    dmlpy_staged_output stage;
    dm_gather_elements g;
    uint64_t rows = 1, elements = 1;
    unsigned i, threads;
    int32_t st;

    if (d == NULL) return DMLPY_E_NULL_ARGUMENT;
    if (inputCount != 2 || outputCount != 1) return DMLPY_E_BINDING_COUNT;
    if (inputs == NULL || outputs == NULL) return DMLPY_E_NULL_ARGUMENT;
    if ((st = dm_tensor(d->InputTensor, &xt)) != DMLPY_OK) return st;
    if ((st = dmlpy_tensor_from_desc(d->IndicesTensor, &it)) != DMLPY_OK) return st;
    if ((st = dm_tensor(d->OutputTensor, &yt)) != DMLPY_OK) return st;
    if (it.rank != xt.rank || yt.rank != xt.rank || d->Axis >= xt.rank) return DMLPY_E_INVALID_DESC;
    if (xt.data_type != yt.data_type || !dm_index_type(it.data_type)) return DMLPY_E_INVALID_DESC;
    for (i = 0; i < xt.rank; ++i) {
        if (yt.sizes[i] != it.sizes[i] || (i != d->Axis && it.sizes[i] != xt.sizes[i])) return DMLPY_E_INVALID_DESC;
    }
    if ((st = dmlpy_tensor_bind(&xt, &inputs[0])) != DMLPY_OK) return st;
    if ((st = dmlpy_tensor_bind(&it, &inputs[1])) != DMLPY_OK) return st;
    if ((st = dmlpy_tensor_bind(&yt, &outputs[0])) != DMLPY_OK) return st;
    ins[0] = xt;
    ins[1] = it;
    if (dm_any_overlap(&yt, 1, ins, 2)) return DMLPY_E_INVALID_ARGUMENT;
    if ((st = dmlpy_output_stage(&yt, &stage)) != DMLPY_OK) return st;

    memset(&g, 0, sizeof g);
    g.rank = xt.rank;
    g.axis = d->Axis;
    for (i = 0; i < xt.rank; ++i) {
        g.sizes[i] = yt.sizes[i];
        g.xs[i] = (int64_t)xt.strides[i] * (int64_t)xt.element_size;
        g.is[i] = (int64_t)it.strides[i] * (int64_t)it.element_size;
        g.ys[i] = (int64_t)yt.strides[i] * (int64_t)yt.element_size;
        elements *= yt.sizes[i];
        if (i + 1 < xt.rank) rows *= yt.sizes[i];
    }
    g.axis_size = xt.sizes[d->Axis];
    g.esize = yt.element_size;
    g.index_type = it.data_type;
    g.x = xt.data;
    g.indices = it.data;
    g.y = yt.data;
    threads = dmlpy_choose_threads(elements * 4u, rows, threadCount);
    dmlpy_parallel_for(rows, dmlpy_choose_grain(rows, threads), threads, dm_gather_elements_run, &g);
    dmlpy_output_unstage(&stage, 1);
    return DMLPY_OK;
}

/* ---- entry ---------------------------------------------------------------------------------------------- */

int32_t dmlpy_data_movement(const DML_OPERATOR_DESC* desc, UINT inputCount, const DMLPY_BOUND_BUFFER* inputs,
                            UINT outputCount, const DMLPY_BOUND_BUFFER* outputs, UINT threadCount) {
    if (desc == NULL || desc->Desc == NULL) return DMLPY_E_NULL_ARGUMENT;
    switch (desc->Type) {
    case DML_OPERATOR_JOIN:
    case DML_OPERATOR_SPLIT:
        return dm_join_split(desc, inputCount, inputs, outputCount, outputs, threadCount);
    case DML_OPERATOR_SLICE:
    case DML_OPERATOR_SLICE1:
    case DML_OPERATOR_CAST:
        return dm_slice_cast(desc, inputCount, inputs, outputCount, outputs, threadCount);
    case DML_OPERATOR_PADDING:
    case DML_OPERATOR_PADDING1:
        return dm_padding(desc, inputCount, inputs, outputCount, outputs, threadCount);
    case DML_OPERATOR_GATHER:
        return dm_gather_op(desc, inputCount, inputs, outputCount, outputs, threadCount);
    case DML_OPERATOR_GATHER_ELEMENTS:
        return dm_gather_elements_op(desc, inputCount, inputs, outputCount, outputs, threadCount);
    case DML_OPERATOR_GATHER_ND:
    case DML_OPERATOR_GATHER_ND1:
        return dm_gather_nd_op(desc, inputCount, inputs, outputCount, outputs, threadCount);
    default:
        return DMLPY_E_UNSUPPORTED_OPERATOR;
    }
}
