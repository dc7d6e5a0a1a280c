/* The avx2 target: x86-64-v3 (Haswell, Zen 1 and later). Included first by its wrappers (see variant.h). */
#ifndef DMLPY_NATIVE_ISA_AVX2_H
#define DMLPY_NATIVE_ISA_AVX2_H

#include "isa.h"

#if DMLPY_ISA_VARIANTS
#pragma GCC target("avx2,fma,f16c,bmi,bmi2,lzcnt,popcnt,movbe")
#define DMLPY_ISA avx2
#include "variant.h"
#endif

#endif /* DMLPY_NATIVE_ISA_AVX2_H */
