/* element_wise.c for avx2 (see variant.h). */
#include "avx2.h"
#if DMLPY_ISA_VARIANTS
#include "element_wise.c"
#else
typedef int dmlpy_isa_avx2_element_wise_not_built;
#endif
