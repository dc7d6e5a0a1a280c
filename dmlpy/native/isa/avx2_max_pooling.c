/* max_pooling.c for avx2 (see variant.h). */
#include "avx2.h"
#if DMLPY_ISA_VARIANTS
#include "max_pooling.c"
#else
typedef int dmlpy_isa_avx2_max_pooling_not_built;
#endif
