/* reduction.c for avx512 (see variant.h). */
#include "avx512.h"
#if DMLPY_ISA_VARIANTS
#include "reduction.c"
#else
typedef int dmlpy_isa_avx512_reduction_not_built;
#endif
