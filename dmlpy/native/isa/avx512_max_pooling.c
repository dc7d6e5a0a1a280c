/* max_pooling.c for avx512 (see variant.h). */
#include "avx512.h"
#if DMLPY_ISA_VARIANTS
#include "max_pooling.c"
#else
typedef int dmlpy_isa_avx512_max_pooling_not_built;
#endif
