/* activation.c for avx2 (see variant.h). */
#include "avx2.h"
#if DMLPY_ISA_VARIANTS
#include "activation.c"
#else
typedef int dmlpy_isa_avx2_activation_not_built;
#endif
