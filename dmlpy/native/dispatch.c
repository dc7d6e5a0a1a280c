/*
 * dispatch.c - chooses the instruction-set variant of the kernels (isa/variant.h) that dmlpy_execute runs.
 *
 * The choice is made once, on first use, from the CPU's features (the best variant it supports), so one
 * build runs on any CPU of its platform; dmlpy_native_select_isa overrides it (tests, benchmarks and
 * DMLPY_NATIVE_ISA compare the variants).
 */
#include <string.h>

#include "dmlpy_internal.h"
#include "isa/isa.h"

#define DMLPY_KERNEL_PARAMS                                                                              \
    const DML_OPERATOR_DESC *desc, UINT inputCount, const DMLPY_BOUND_BUFFER *inputs, UINT outputCount, \
        const DMLPY_BOUND_BUFFER *outputs, UINT threadCount

#if DMLPY_ISA_VARIANTS
#define DMLPY_DECLARE_VARIANT(isa)                                  \
    int32_t dmlpy_average_pooling_##isa(DMLPY_KERNEL_PARAMS);       \
    int32_t dmlpy_space_depth_##isa(DMLPY_KERNEL_PARAMS);           \
    int32_t dmlpy_convolution_##isa(DMLPY_KERNEL_PARAMS);           \
    int32_t dmlpy_element_wise_##isa(DMLPY_KERNEL_PARAMS);          \
    int32_t dmlpy_max_pooling_##isa(DMLPY_KERNEL_PARAMS);           \
    int32_t dmlpy_resample_##isa(DMLPY_KERNEL_PARAMS);              \
    int32_t dmlpy_normalization_##isa(DMLPY_KERNEL_PARAMS);         \
    int32_t dmlpy_gemm_##isa(DMLPY_KERNEL_PARAMS);                  \
    int32_t dmlpy_reduction_##isa(DMLPY_KERNEL_PARAMS);
DMLPY_DECLARE_VARIANT(avx2)
DMLPY_DECLARE_VARIANT(avx512)

/* The avx512 space/depth kernel also needs VBMI (isa/avx512vbmi.h); without it the avx2 one serves. */
static int32_t space_depth_avx512(DMLPY_KERNEL_PARAMS) {
    if (__builtin_cpu_supports("avx512vbmi")) {
        return dmlpy_space_depth_avx512(desc, inputCount, inputs, outputCount, outputs, threadCount);
    }
    return dmlpy_space_depth_avx2(desc, inputCount, inputs, outputCount, outputs, threadCount);
}
#endif

static const dmlpy_kernels dmlpy_variants[] = {
    {"baseline", dmlpy_average_pooling, dmlpy_space_depth, dmlpy_convolution, dmlpy_element_wise, dmlpy_max_pooling,
     dmlpy_resample, dmlpy_normalization, dmlpy_gemm, dmlpy_data_movement, dmlpy_reduction},
#if DMLPY_ISA_VARIANTS
    {"avx2", dmlpy_average_pooling_avx2, dmlpy_space_depth_avx2, dmlpy_convolution_avx2, dmlpy_element_wise_avx2,
     dmlpy_max_pooling_avx2, dmlpy_resample_avx2, dmlpy_normalization_avx2, dmlpy_gemm_avx2, dmlpy_data_movement,
     dmlpy_reduction_avx2},
    {"avx512", dmlpy_average_pooling_avx512, space_depth_avx512, dmlpy_convolution_avx512,
     dmlpy_element_wise_avx512, dmlpy_max_pooling_avx512, dmlpy_resample_avx512, dmlpy_normalization_avx512, dmlpy_gemm_avx512,
     dmlpy_data_movement, dmlpy_reduction_avx512},
#endif
};
#define DMLPY_VARIANT_COUNT ((int)(sizeof dmlpy_variants / sizeof dmlpy_variants[0]))

/* Variant i runs here. Each level also requires the one below it, so the runnable variants are always a
 * prefix of the table. The feature sets match the target pragmas of isa/avx2.h and isa/avx512.h;
 * __builtin_cpu_supports also checks that the OS saves the vector registers. */
static int dmlpy_variant_runs(int i) {
#if DMLPY_ISA_VARIANTS
    __builtin_cpu_init();
    if (i >= 1 && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    __builtin_cpu_supports("f16c") && __builtin_cpu_supports("bmi") &&
                    __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("lzcnt") &&
                    __builtin_cpu_supports("popcnt") && __builtin_cpu_supports("movbe"))) {
        return 0;
    }
    if (i >= 2 && !(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
                    __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                    __builtin_cpu_supports("avx512vl"))) {
        return 0;
    }
#endif
    return i >= 0 && i < DMLPY_VARIANT_COUNT;
}

static int dmlpy_best_variant(void) {
    int i = DMLPY_VARIANT_COUNT - 1;
    while (i > 0 && !dmlpy_variant_runs(i)) --i;
    return i;
}

/* -1 until the first choice; then an index into dmlpy_variants. A race between two first uses is
 * harmless: both store the same index. */
static int dmlpy_chosen = -1;

#if defined(__GNUC__) || defined(__clang__)
#define DMLPY_LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define DMLPY_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#else /* one variant only: the index never changes from 0 */
#define DMLPY_LOAD(p) (*(volatile int*)(p))
#define DMLPY_STORE(p, v) (*(volatile int*)(p) = (v))
#endif

const dmlpy_kernels* dmlpy_kernels_chosen(void) {
    int i = DMLPY_LOAD(&dmlpy_chosen);
    if (i < 0) {
        i = dmlpy_best_variant();
        DMLPY_STORE(&dmlpy_chosen, i);
    }
    return &dmlpy_variants[i];
}

int32_t dmlpy_native_select_isa(const char* name) {
    int i;
    if (name == NULL) {
        DMLPY_STORE(&dmlpy_chosen, dmlpy_best_variant());
        return DMLPY_OK;
    }
    for (i = 0; i < DMLPY_VARIANT_COUNT; ++i) {
        if (strcmp(name, dmlpy_variants[i].name) == 0) {
            if (!dmlpy_variant_runs(i)) return DMLPY_E_INVALID_ARGUMENT;
            DMLPY_STORE(&dmlpy_chosen, i);
            return DMLPY_OK;
        }
    }
    return DMLPY_E_INVALID_ARGUMENT;
}

const char* dmlpy_native_isa(void) { return dmlpy_kernels_chosen()->name; }

static const char* const dmlpy_variant_lists[] = {"baseline", "baseline avx2", "baseline avx2 avx512"};

const char* dmlpy_native_isa_compiled(void) { return dmlpy_variant_lists[DMLPY_VARIANT_COUNT - 1]; }

const char* dmlpy_native_isa_runnable(void) { return dmlpy_variant_lists[dmlpy_best_variant()]; }
