/* space_depth.c for avx2 (see variant.h). */
#include "avx2.h"
#if DMLPY_ISA_VARIANTS
#include "space_depth.c"
#else
typedef int dmlpy_isa_avx2_space_depth_not_built;
#endif
