/* reduction.c for avx2 (see variant.h). */
#include "avx2.h"
#if DMLPY_ISA_VARIANTS
#include "reduction.c"
#else
typedef int dmlpy_isa_avx2_reduction_not_built;
#endif
