/* space_depth.c for avx512 (see variant.h). */
#include "avx512vbmi.h"
#if DMLPY_ISA_VARIANTS
#include "space_depth.c"
#else
typedef int dmlpy_isa_avx512_space_depth_not_built;
#endif
