/*
 * isa.h - which instruction-set variants of the kernels this compiler builds (private; see variant.h).
 */
#ifndef DMLPY_NATIVE_ISA_H
#define DMLPY_NATIVE_ISA_H

#if defined(__GNUC__) && !defined(__clang__) && !defined(__INTEL_COMPILER) && \
    (defined(__x86_64__) || defined(__i386__)) && !defined(DMLPY_NO_ISA_VARIANTS)
#define DMLPY_ISA_VARIANTS 1
#else
#define DMLPY_ISA_VARIANTS 0
#endif

#endif /* DMLPY_NATIVE_ISA_H */
