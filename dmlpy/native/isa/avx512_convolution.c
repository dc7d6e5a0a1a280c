/* convolution.c for avx512 (see variant.h). */
#include "avx512.h"
#if DMLPY_ISA_VARIANTS
#include "convolution.c"
#else
typedef int dmlpy_isa_avx512_convolution_not_built;
#endif
