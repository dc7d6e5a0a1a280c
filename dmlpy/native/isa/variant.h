/*
 * variant.h - turns the kernel source a wrapper #includes into one instruction-set variant (private).
 *
 * A wrapper (e.g. avx512_pooling.c) includes its target's header (avx2.h, avx512.h, avx512vbmi.h: the
 * target pragma, ahead of every declaration, then this file), then the kernel source. The whole
 * translation unit is compiled for that target (GCC's target pragma also defines __AVX2__, __AVX512F__,
 * ... so the kernels' #if'd intrinsics apply),
 * and every external symbol of the kernel sources gets the suffix _<DMLPY_ISA>, so the variants link
 * side by side; dispatch.c calls the one the CPU can run. The kernel sources compiled as they are form
 * the baseline variant, for the compiler's default target (x86-64 without -march: SSE2 only).
 *
 * Only GCC on x86 gets variants: Clang's target pragma does not define the feature macros the kernels
 * test, and MSVC has no per-file target. Elsewhere the wrappers compile to nothing and only the baseline
 * exists. DMLPY_NO_ISA_VARIANTS forces that.
 */
#ifndef DMLPY_NATIVE_ISA_VARIANT_H
#define DMLPY_NATIVE_ISA_VARIANT_H

#include "isa.h"

#if DMLPY_ISA_VARIANTS
/* Parts compiled once, in the baseline objects (convolution.c's scratch cache) test this. */
#define DMLPY_ISA_VARIANT 1

#define DMLPY_ISA_CAT2(name, isa) name##_##isa
#define DMLPY_ISA_CAT(name, isa) DMLPY_ISA_CAT2(name, isa)
#define DMLPY_ISA_NAME(name) DMLPY_ISA_CAT(name, DMLPY_ISA)

/* Every external symbol the kernel sources define (a missing one fails the link as a duplicate). */
#define dmlpy_average_pooling DMLPY_ISA_NAME(dmlpy_average_pooling)
#define dmlpy_space_depth DMLPY_ISA_NAME(dmlpy_space_depth)
#define dmlpy_convolution DMLPY_ISA_NAME(dmlpy_convolution)
#define dmlpy_winograd_conv DMLPY_ISA_NAME(dmlpy_winograd_conv)
#define dmlpy_gemm DMLPY_ISA_NAME(dmlpy_gemm)
#define dmlpy_activation_read DMLPY_ISA_NAME(dmlpy_activation_read)
#define dmlpy_act_apply_row DMLPY_ISA_NAME(dmlpy_act_apply_row)
#define dmlpy_act_apply_row_from DMLPY_ISA_NAME(dmlpy_act_apply_row_from)
#define dmlpy_element_wise DMLPY_ISA_NAME(dmlpy_element_wise)
#define dmlpy_max_pooling DMLPY_ISA_NAME(dmlpy_max_pooling)
#define dmlpy_resample DMLPY_ISA_NAME(dmlpy_resample)
#define dmlpy_normalization DMLPY_ISA_NAME(dmlpy_normalization)
#define dmlpy_reduction DMLPY_ISA_NAME(dmlpy_reduction)
#endif

#endif /* DMLPY_NATIVE_ISA_VARIANT_H */
