/* The target of the avx512 variant's space_depth.c: x86-64-v4 plus VBMI (Ice Lake, Zen 4 and later) for
 * its byte permutes. On an AVX-512 CPU without VBMI, dispatch.c runs the avx2 space_depth kernel instead.
 * Included first by its wrapper (see variant.h). */
#ifndef DMLPY_NATIVE_ISA_AVX512VBMI_H
#define DMLPY_NATIVE_ISA_AVX512VBMI_H

#include "isa.h"

#if DMLPY_ISA_VARIANTS
#pragma GCC target("avx2,fma,f16c,bmi,bmi2,lzcnt,popcnt,movbe,avx512f,avx512cd,avx512bw,avx512dq,avx512vl,avx512vbmi")
#define DMLPY_ISA avx512
#include "variant.h"
#endif

#endif /* DMLPY_NATIVE_ISA_AVX512VBMI_H */
