/* element_wise.c for avx512 (see variant.h). */
#include "avx512.h"
#if DMLPY_ISA_VARIANTS
#include "element_wise.c"
#else
typedef int dmlpy_isa_avx512_element_wise_not_built;
#endif
