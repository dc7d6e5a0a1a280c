/* normalization.c for avx2 (see variant.h). */
#include "avx2.h"
#if DMLPY_ISA_VARIANTS
#include "normalization.c"
#else
typedef int dmlpy_isa_avx2_normalization_not_built;
#endif
