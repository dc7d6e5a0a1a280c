/* gemm.c for avx2 (see variant.h). */
#include "avx2.h"
#if DMLPY_ISA_VARIANTS
#include "gemm.c"
#else
typedef int dmlpy_isa_avx2_gemm_not_built;
#endif
