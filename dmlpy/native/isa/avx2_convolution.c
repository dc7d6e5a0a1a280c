/* convolution.c for avx2 (see variant.h). */
#include "avx2.h"
#if DMLPY_ISA_VARIANTS
#include "convolution.c"
#else
typedef int dmlpy_isa_avx2_convolution_not_built;
#endif
