/* The avx512 target: x86-64-v4 (Skylake-SP, Zen 4 and later). Included first by its wrappers (see variant.h). */
#ifndef DMLPY_NATIVE_ISA_AVX512_H
#define DMLPY_NATIVE_ISA_AVX512_H

#include "isa.h"

#if DMLPY_ISA_VARIANTS
#pragma GCC target("avx2,fma,f16c,bmi,bmi2,lzcnt,popcnt,movbe,avx512f,avx512cd,avx512bw,avx512dq,avx512vl")
#define DMLPY_ISA avx512
#include "variant.h"
#endif

#endif /* DMLPY_NATIVE_ISA_AVX512_H */
