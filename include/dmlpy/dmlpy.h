/*
 * dmlpy/dmlpy.h - entry points of dmlpy's native compute library.
 *
 * One call executes one operator on CPU memory: the caller passes the operator exactly as DirectML takes
 * it (a DML_OPERATOR_DESC whose Desc points at the operator's struct) plus one DMLPY_BOUND_BUFFER per
 * binding slot. The library re-checks every invariant it relies on and returns a status code instead of
 * reading or writing outside the bound ranges.
 */
#ifndef DMLPY_DMLPY_H
#define DMLPY_DMLPY_H

#include "dml_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a struct layout or a function signature in this header changes. Python compares
 * dmlpy_abi_version() with dmlpy/_version.py NATIVE_ABI_VERSION and refuses a mismatched build. */
#define DMLPY_ABI_VERSION 3

/* One bound tensor.
 * Data:        buffer base + binding offset (the address of element 0); NULL = slot not bound.
 * SizeInBytes: bytes the caller guarantees readable (inputs) or writable (outputs) from Data. Every
 *              byte the tensor's Sizes/Strides can reach must lie inside [Data, Data + SizeInBytes).
 * Data must be aligned to the element size. */
typedef struct DMLPY_BOUND_BUFFER {
    void* Data;
    UINT64 SizeInBytes;
} DMLPY_BOUND_BUFFER;

/* Status codes returned by dmlpy_execute. */
enum {
    DMLPY_OK = 0,
    DMLPY_E_NULL_ARGUMENT = 1,        /* a required pointer (desc, tensor, array, bound Data) is NULL */
    DMLPY_E_UNSUPPORTED_OPERATOR = 2, /* desc->Type has no native kernel */
    DMLPY_E_INVALID_DESC = 3,         /* the desc breaks a rule the kernel relies on */
    DMLPY_E_BINDING_COUNT = 4,        /* inputCount / outputCount differ from the operator's slots */
    DMLPY_E_BUFFER_TOO_SMALL = 5,     /* a tensor reaches past its bound SizeInBytes */
    DMLPY_E_OUT_OF_MEMORY = 6,        /* scratch allocation failed */
    DMLPY_E_INVALID_ARGUMENT = 7      /* misaligned Data, or an output overlapping an input */
};

/* Executes one operator.
 * inputs/outputs: DirectML binding-slot order (desc field order of the input tensors / output tensors).
 *   AVERAGE_POOLING (56), AVERAGE_POOLING1 (166), SPACE_TO_DEPTH(1) (68, 114), DEPTH_TO_SPACE(1) (69, 113)
 *   and the ACTIVATION_* operators: 1 input (InputTensor), 1 output (OutputTensor).
 *   ELEMENT_WISE_IDENTITY (1), ABS (2), CLIP (8), EXP (11), LOG (13), RECIP (27), SQRT (29),
 *   CONSTANT_POW (26), ERF (81), TANH (84), NEGATE (156): 1 input (InputTensor), 1 output (OutputTensor).
 *   ELEMENT_WISE_ADD (4), ADD1 (89), SUBTRACT (30), MULTIPLY (24), DIVIDE (10), MAX (21), MIN (23): 2 inputs (ATensor,
 *   BTensor), 1 output (OutputTensor); POW (25): 2 inputs (InputTensor, ExponentTensor), 1 output.
 *   These take FLOAT32 or FLOAT16 tensors (all of one type) only; an input may be the output itself
 *   (same Data, same strides: in place).
 *   RESAMPLE (96), RESAMPLE1 (116), RESAMPLE2 (161), RESAMPLE3 (175): 1 input (InputTensor), 1 output
 *   (OutputTensor); FLOAT32, FLOAT16, INT8 or UINT8, and every Scales entry finite.
 *   ACTIVATION_SOFTMAX (48), SOFTMAX1 (158), LOG_SOFTMAX (41), LOG_SOFTMAX1 (159): 1 input, 1 output.
 *   BATCH_NORMALIZATION (72): 5 inputs (InputTensor, MeanTensor, VarianceTensor, ScaleTensor, BiasTensor),
 *   1 output (OutputTensor).
 *   MEAN_VARIANCE_NORMALIZATION (73), MEAN_VARIANCE_NORMALIZATION1 (115): 3 inputs (InputTensor,
 *   ScaleTensor, BiasTensor; Data NULL for a NULL ScaleTensor or BiasTensor), 1 output (OutputTensor).
 *   REDUCE (55), ARGMIN (137), ARGMAX (138), ACTIVATION_HARDMAX (36), ACTIVATION_HARDMAX1 (160): 1 input
 *   (InputTensor), 1 output (OutputTensor); FLOAT32, FLOAT16 or an integer type (HARDMAX and REDUCE's
 *   AVERAGE, L2, LOG_SUM and LOG_SUM_EXP: floats only), ARGMIN's and ARGMAX's output UINT32, INT32, UINT64
 *   or INT64.
 *   CONVOLUTION (53): 3 inputs (InputTensor, FilterTensor, BiasTensor; Data NULL when the desc has no
 *   BiasTensor), 1 output (OutputTensor).
 *   MAX_POOLING (58): 1 input (InputTensor), 1 output (OutputTensor). MAX_POOLING1 (91), MAX_POOLING2 (110):
 *   1 input, 2 outputs (OutputTensor, OutputIndicesTensor; Data NULL when the desc has no indices).
 *   A tensor array takes one slot per element, in array order:
 *   JOIN (63): InputCount inputs (InputTensors[0 .. InputCount-1]), 1 output (OutputTensor).
 *   SPLIT (62): 1 input (InputTensor), OutputCount outputs (OutputTensors[0 .. OutputCount-1]).
 *   SLICE (60), SLICE1 (111), PADDING (64), PADDING1 (155), CAST (61): 1 input (InputTensor), 1 output
 *   (OutputTensor).
 *   GATHER (67), GATHER_ELEMENTS (107), GATHER_ND (108), GATHER_ND1 (140): 2 inputs (InputTensor, IndicesTensor), 1 output (OutputTensor);
 *   an index outside its axis is clamped into it (a negative signed one counts from the end first).
 * threadCount: number of threads to use at most; 0 = all online cores. Small problems run on the
 *   calling thread only.
 * Returns DMLPY_OK or one of the DMLPY_E_* codes; on error nothing has been written. */
int32_t dmlpy_execute(const DML_OPERATOR_DESC* desc, UINT inputCount, const DMLPY_BOUND_BUFFER* inputs,
                      UINT outputCount, const DMLPY_BOUND_BUFFER* outputs, UINT threadCount);

/* One call of a sequence: dmlpy_execute's arguments but the thread count. */
typedef struct DMLPY_DISPATCH {
    const DML_OPERATOR_DESC* Desc;
    UINT InputCount;
    const DMLPY_BOUND_BUFFER* Inputs;
    UINT OutputCount;
    const DMLPY_BOUND_BUFFER* Outputs;
} DMLPY_DISPATCH;

/* dmlpy_execute on *dispatches[0], *dispatches[1], ... *dispatches[count - 1], in that order (each sees what
 * the ones before it wrote): a graph's operators in one call instead of one call each. Stops at the first
 * that fails and returns its status, with its index in *failedIndex when failedIndex is not NULL; the ones
 * before it have run. Returns DMLPY_OK when every one succeeded (count 0 included), DMLPY_E_NULL_ARGUMENT
 * when dispatches or one of its first count pointers is NULL. */
int32_t dmlpy_execute_sequence(UINT count, const DMLPY_DISPATCH* const* dispatches, UINT threadCount, UINT* failedIndex);

/* "DMLPY_OK", "DMLPY_E_NULL_ARGUMENT", ...; "DMLPY_E_UNKNOWN" for any other value. Static storage. */
const char* dmlpy_status_name(int32_t status);

/* The package version compiled in (dmlpy/_version.py __version__). Static storage. */
const char* dmlpy_native_version(void);

/* DMLPY_ABI_VERSION as compiled in. */
UINT dmlpy_abi_version(void);

/* The number of CPUs this process may run on (at least 1). */
UINT dmlpy_hardware_concurrency(void);

/* The kernels come in instruction-set variants, space-separated names, baseline first: "baseline" (the
 * compiler's default target), "avx2" (x86-64-v3) and "avx512" (x86-64-v4); only GCC on x86 builds the
 * last two. dmlpy_execute runs the best variant this CPU supports unless dmlpy_native_select_isa chose
 * another. Static storage. */
const char* dmlpy_native_isa_compiled(void);  /* compiled in */
const char* dmlpy_native_isa_runnable(void);  /* compiled in and supported by this CPU */
const char* dmlpy_native_isa(void);           /* the one dmlpy_execute runs */

/* Runs the variant `name` from the next dmlpy_execute on (NULL: the best one again). Returns
 * DMLPY_E_INVALID_ARGUMENT, changing nothing, when `name` is not in dmlpy_native_isa_runnable(). */
int32_t dmlpy_native_select_isa(const char* name);

/* The target flags the whole library was compiled with (DMLPY_NATIVE_ARCH at build time); "" for the
 * compiler's default target, which any CPU of the platform runs. Static storage. */
const char* dmlpy_native_arch_flags(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DMLPY_DMLPY_H */
