/*
 * dmlpy_internal.h - private declarations shared by the native sources.
 */
#ifndef DMLPY_NATIVE_INTERNAL_H
#define DMLPY_NATIVE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "dmlpy/dmlpy.h"

#define DMLPY_MAX_RANK 8

/* ---- checked 64-bit arithmetic (returns 0 on overflow) ---------------------------------------- */

static inline int dmlpy_mul_u64(uint64_t a, uint64_t b, uint64_t* out) {
#if defined(__GNUC__) || defined(__clang__)
    return !__builtin_mul_overflow(a, b, out);
#else
    if (a != 0 && b > UINT64_MAX / a) return 0;
    *out = a * b;
    return 1;
#endif
}

static inline int dmlpy_add_u64(uint64_t a, uint64_t b, uint64_t* out) {
    if (b > UINT64_MAX - a) return 0;
    *out = a + b;
    return 1;
}

/* ---- tensors ----------------------------------------------------------------------------------- */

/* A buffer tensor after validation: sizes and element strides widened to 64 bits. */
typedef struct dmlpy_tensor {
    DML_TENSOR_DATA_TYPE data_type;
    uint32_t element_size;            /* bytes */
    uint32_t rank;
    uint64_t sizes[DMLPY_MAX_RANK];
    uint64_t strides[DMLPY_MAX_RANK]; /* elements; explicit or packed */
    uint64_t extent_bytes;            /* (sum (size-1)*stride + 1) * element_size */
    char* data;                       /* set by dmlpy_tensor_bind */
    uint64_t bound_bytes;
} dmlpy_tensor;

/* Byte size of a whole-byte element type, 0 for UNKNOWN, 4-bit and unknown values. */
uint32_t dmlpy_element_size(DML_TENSOR_DATA_TYPE t);

/* Reads a DML_TENSOR_DESC: NULL checks, Type == BUFFER, 1 <= DimensionCount <= 8, nonzero sizes,
 * a byte-sized data type, and the overflow-checked byte extent. */
int32_t dmlpy_tensor_from_desc(const DML_TENSOR_DESC* desc, dmlpy_tensor* out);

/* Attaches a bound buffer: Data not NULL, aligned to the element size, extent <= SizeInBytes. */
int32_t dmlpy_tensor_bind(dmlpy_tensor* t, const DMLPY_BOUND_BUFFER* buffer);

/* 1 when the byte ranges [a, a + extent) of two bound tensors overlap. */
int dmlpy_tensors_overlap(const dmlpy_tensor* a, const dmlpy_tensor* b);

/* 1 when no two logical indices of t address the same element, proven by nested strides: after dropping
 * size-1 dims and ordering by stride, each stride exceeds the farthest offset the smaller ones reach. 0
 * covers every overlapping layout and a few exotic one-to-one ones (strides {3, 2} for sizes {2, 2});
 * dmlpy_output_stage treats both alike, which costs those only a copy. */
int dmlpy_layout_nested(const dmlpy_tensor* t);

/* An output whose layout may map two logical indices to one element (TENSOR.OUTPUT_OVERLAP in
 * docs/rules.md) is computed into a packed scratch tensor and then written element by element in
 * row-major logical order, so the last index wins, whatever the thread count or kernel path; an in-place
 * input that shares those elements is read intact. Usage: after every check of the bound tensors,
 * dmlpy_output_stage(&yt, &stage) (yt then describes the scratch), run the kernel on yt, then
 * dmlpy_output_unstage(&stage, ok). One-to-one outputs are left alone and cost one stride sort. */
typedef struct dmlpy_staged_output {
    dmlpy_tensor target; /* the bound output, when staged */
    void* block;         /* the scratch, NULL when not staged */
} dmlpy_staged_output;

int32_t dmlpy_output_stage(dmlpy_tensor* t, dmlpy_staged_output* stage);

/* write: copy the scratch to the real output (after a successful run); always frees the scratch. */
void dmlpy_output_unstage(dmlpy_staged_output* stage, int write);

/* ---- threads ----------------------------------------------------------------------------------- */

/* Runs fn(ctx, begin, end, worker) over [0, count) in chunks of `grain` items, handed out through an
 * atomic counter to `threads` workers (the calling thread is worker 0; the others come from a lazily
 * created, fork-safe pool whose idle threads sleep; a nested or concurrent call spawns threads for
 * itself). If a thread cannot be had, the remaining workers do its share. */
typedef void (*dmlpy_range_fn)(void* ctx, uint64_t begin, uint64_t end, unsigned worker);
void dmlpy_parallel_for(uint64_t count, uint64_t grain, unsigned threads, dmlpy_range_fn fn, void* ctx);

unsigned dmlpy_online_cpus(void);

/* The bytes of cache private to one core (its L2; 1 MB when the system does not say): a kernel whose data
 * per thread exceeds it streams through memory, and its large outputs may skip the cache (non-temporal
 * stores, which save the read for ownership of every output line). */
uint64_t dmlpy_core_cache_bytes(void);

/* Chooses a thread count for `work` units (about one element read or written each) and a grain over
 * `items` work items. requested = 0 means all online CPUs. */
unsigned dmlpy_choose_threads(uint64_t work, uint64_t items, unsigned requested);
uint64_t dmlpy_choose_grain(uint64_t items, unsigned threads);

/* ---- operators --------------------------------------------------------------------------------- */

int32_t dmlpy_average_pooling(const DML_OPERATOR_DESC* desc, UINT inputCount, const DMLPY_BOUND_BUFFER* inputs,
                              UINT outputCount, const DMLPY_BOUND_BUFFER* outputs, UINT threadCount);

/* SPACE_TO_DEPTH (68), DEPTH_TO_SPACE (69), DEPTH_TO_SPACE1 (113), SPACE_TO_DEPTH1 (114): space_depth.c. */
int32_t dmlpy_space_depth(const DML_OPERATOR_DESC* desc, UINT inputCount, const DMLPY_BOUND_BUFFER* inputs,
                          UINT outputCount, const DMLPY_BOUND_BUFFER* outputs, UINT threadCount);

/* CONVOLUTION (53): convolution.c. */
int32_t dmlpy_convolution(const DML_OPERATOR_DESC* desc, UINT inputCount, const DMLPY_BOUND_BUFFER* inputs,
                          UINT outputCount, const DMLPY_BOUND_BUFFER* outputs, UINT threadCount);

/* ELEMENT_WISE_ADD, ADD1, SUBTRACT, MULTIPLY, DIVIDE, MAX, MIN, POW, IDENTITY, ABS, NEGATE, CLIP, SQRT,
 * RECIP, EXP, LOG, TANH, ERF, CONSTANT_POW, and the standalone ACTIVATION_IDENTITY, LINEAR, RELU,
 * LEAKY_RELU, SIGMOID, TANH, ELU, HARD_SIGMOID, SOFTPLUS, GELU (activation.c's functions), on FLOAT32 and
 * FLOAT16: element_wise.c. */
int32_t dmlpy_element_wise(const DML_OPERATOR_DESC* desc, UINT inputCount, const DMLPY_BOUND_BUFFER* inputs,
                           UINT outputCount, const DMLPY_BOUND_BUFFER* outputs, UINT threadCount);

/* MAX_POOLING (58), MAX_POOLING1 (91), MAX_POOLING2 (110), FLOAT32 and FLOAT16: max_pooling.c. */
int32_t dmlpy_max_pooling(const DML_OPERATOR_DESC* desc, UINT inputCount, const DMLPY_BOUND_BUFFER* inputs,
                          UINT outputCount, const DMLPY_BOUND_BUFFER* outputs, UINT threadCount);

/* RESAMPLE (96), RESAMPLE1 (116), RESAMPLE2 (161), RESAMPLE3 (175): resampling.c. */
int32_t dmlpy_resample(const DML_OPERATOR_DESC* desc, UINT inputCount, const DMLPY_BOUND_BUFFER* inputs,
                       UINT outputCount, const DMLPY_BOUND_BUFFER* outputs, UINT threadCount);

/* BATCH_NORMALIZATION (72), MEAN_VARIANCE_NORMALIZATION (73), MEAN_VARIANCE_NORMALIZATION1 (115),
 * ACTIVATION_SOFTMAX (48), SOFTMAX1 (158), LOG_SOFTMAX (41), LOG_SOFTMAX1 (159): normalization.c. */
int32_t dmlpy_normalization(const DML_OPERATOR_DESC* desc, UINT inputCount, const DMLPY_BOUND_BUFFER* inputs,
                            UINT outputCount, const DMLPY_BOUND_BUFFER* outputs, UINT threadCount);
/* GEMM (54): gemm.c. */
int32_t dmlpy_gemm(const DML_OPERATOR_DESC* desc, UINT inputCount, const DMLPY_BOUND_BUFFER* inputs,
                   UINT outputCount, const DMLPY_BOUND_BUFFER* outputs, UINT threadCount);


/* JOIN (63), SPLIT (62), SLICE (60), SLICE1 (111), PADDING (64), PADDING1 (155), CAST (61), GATHER (67),
 * GATHER_ELEMENTS (107), GATHER_ND (108), GATHER_ND1 (140): data_movement.c (baseline only: memory-bound copies gain nothing from wider
 * vectors the compiler's memcpy does not already use). */
int32_t dmlpy_data_movement(const DML_OPERATOR_DESC* desc, UINT inputCount, const DMLPY_BOUND_BUFFER* inputs,
                            UINT outputCount, const DMLPY_BOUND_BUFFER* outputs, UINT threadCount);

/* REDUCE (55), ARGMIN (137), ARGMAX (138), ACTIVATION_HARDMAX (36), ACTIVATION_HARDMAX1 (160): reduction.c. */
int32_t dmlpy_reduction(const DML_OPERATOR_DESC* desc, UINT inputCount, const DMLPY_BOUND_BUFFER* inputs,
                        UINT outputCount, const DMLPY_BOUND_BUFFER* outputs, UINT threadCount);

/* ---- instruction-set variants: dispatch.c ------------------------------------------------------ */

typedef int32_t (*dmlpy_kernel_fn)(const DML_OPERATOR_DESC* desc, UINT inputCount, const DMLPY_BOUND_BUFFER* inputs,
                                   UINT outputCount, const DMLPY_BOUND_BUFFER* outputs, UINT threadCount);

/* One variant's entry points (the baseline's are the functions above). */
typedef struct dmlpy_kernels {
    const char* name;
    dmlpy_kernel_fn average_pooling, space_depth, convolution, element_wise, max_pooling, resample, normalization, gemm, data_movement, reduction;
} dmlpy_kernels;

/* The variant dmlpy_execute runs: the best one this CPU supports, or dmlpy_native_select_isa's choice. */
const dmlpy_kernels* dmlpy_kernels_chosen(void);

#endif /* DMLPY_NATIVE_INTERNAL_H */
