/*
 * reduction_acc.h - reduction.c's sums in one working type (private; included twice by reduction.c).
 *
 * Before each inclusion reduction.c defines RW (the working type: double for FLOAT32, float for FLOAT16, the
 * NumPy kernel's types), RW_FN(name) (the name with the type's suffix) and RW_EXP, RW_LOG, RW_SQRT, RW_ABS
 * (the type's functions). The functions:
 *   RW_FN(red_row_sum)    one chunk of a row summed in RED_LANES interleaved lanes combined as a tree
 *                         (the product for MULTIPLY);
 *   RW_FN(red_col_acc)    one reduced position of a block of outputs: acc[j] += term(v[j]) (*= for MULTIPLY);
 *   RW_FN(red_finish)     the function applied to the row's sum (AVERAGE's division, L2's square root, ...).
 * The term is x for SUM, AVERAGE and LOG_SUM, |x| for L1, x * x for L2 and SUM_SQUARE, exp(x - shift) for
 * LOG_SUM_EXP, each computed in RW from the float value.
 */

#define RED_LANE_LOOP(TERM, OP)                                      \
    for (; i + RED_LANES <= n; i += RED_LANES) {                     \
        for (k = 0; k < RED_LANES; ++k) {                            \
            const RW x = (RW)v[i + k];                               \
            acc[k] = acc[k] OP(TERM);                                \
        }                                                            \
    }                                                                \
    for (; i < n; ++i) {                                             \
        const RW x = (RW)v[i];                                       \
        tail = tail OP(TERM);                                        \
    }

#if defined(RW_V)
/* The whole row with vectors of RW_NV lanes, the function chosen once: the lane groups of v[0..whole), the
 * tail in order, then the tree (across vectors, then across the lanes of the first). The accumulators stay
 * in registers (nothing takes their address): for short rows (49 floats of a 7x7 global pool) the row's
 * fixed cost is most of its time. TERM is the term of a vector x, STERM of a scalar x. */
#define RED_VROW(TERM, STERM, OP)                                              \
    do {                                                                       \
        RW s_[RW_NV];                                                          \
        for (i = 0; i < whole; i += RED_LANES) {                               \
            for (k = 0; k < RED_LANES / RW_NV; ++k) {                          \
                RW_V x;                                                        \
                RW_VLOAD(x, v + i + k * RW_NV);                                \
                va[k] = va[k] OP(TERM);                                        \
            }                                                                  \
        }                                                                      \
        for (; i < n; ++i) {                                                   \
            const RW x = (RW)v[i];                                             \
            tail = tail OP(STERM);                                             \
        }                                                                      \
        for (w = RED_LANES / RW_NV / 2; w >= 1; w /= 2) {                      \
            for (k = 0; k < (size_t)w; ++k) va[k] = va[k] OP va[k + w];        \
        }                                                                      \
        for (k = 0; k < RW_NV; ++k) s_[k] = va[0][k];                          \
        for (w = RW_NV / 2; w >= 1; w /= 2) {                                  \
            for (k = 0; k < (size_t)w; ++k) s_[k] = s_[k] OP s_[k + w];        \
        }                                                                      \
        return s_[0] OP tail;                                                  \
    } while (0)
#endif

/* Lane k takes the terms of elements k, k + 16, ... of the whole groups of 16; the lanes start at the
 * operation's identity (-0 for a sum: x + -0 is x for every x, +0 included) and combine as a tree (lane k + w
 * into lane k, w = 8, 4, 2, 1); the tail of fewer than 16 elements is taken in order into one more
 * accumulator, combined last. Every instruction set adds the same numbers in the same order. */
RED_INLINE RW RW_FN(red_row_sum)(int func, const float* v, size_t n, RW shift) {
    RW acc[RED_LANES];
    size_t i = 0, k;
    int w;
    const int product = func == DML_REDUCE_FUNCTION_MULTIPLY;
    const RW id = product ? (RW)1 : (RW)-0.0;
    RW tail = id;
#if defined(RW_V)
    if (func != DML_REDUCE_FUNCTION_LOG_SUM_EXP) {
        RW_V va[RED_LANES / RW_NV];
        const size_t whole = n - n % RED_LANES;
        for (k = 0; k < RED_LANES / RW_NV; ++k) va[k] = (RW_V){0} + id;
        switch (func) {
        case DML_REDUCE_FUNCTION_MULTIPLY: RED_VROW(x, x, *);
        case DML_REDUCE_FUNCTION_L1: RED_VROW(RW_VABS(x), RW_ABS(x), +);
        case DML_REDUCE_FUNCTION_L2:
        case DML_REDUCE_FUNCTION_SUM_SQUARE: RED_VROW(x * x, x * x, +);
        default: RED_VROW(x, x, +);
        }
    }
#endif
    for (k = 0; k < RED_LANES; ++k) acc[k] = id;
    switch (func) {
    case DML_REDUCE_FUNCTION_MULTIPLY:
        RED_LANE_LOOP(x, *)
        break;
    case DML_REDUCE_FUNCTION_L1:
        RED_LANE_LOOP(RW_ABS(x), +)
        break;
    case DML_REDUCE_FUNCTION_L2:
    case DML_REDUCE_FUNCTION_SUM_SQUARE:
        RED_LANE_LOOP(x * x, +)
        break;
    case DML_REDUCE_FUNCTION_LOG_SUM_EXP:
        RED_LANE_LOOP(RW_EXP(x - shift), +)
        break;
    default: /* SUM, AVERAGE, LOG_SUM */
        RED_LANE_LOOP(x, +)
        break;
    }
    for (w = RED_LANES / 2; w >= 1; w /= 2) {
        for (k = 0; k < (size_t)w; ++k) acc[k] = product ? acc[k] * acc[k + w] : acc[k] + acc[k + w];
    }
    return product ? acc[0] * tail : acc[0] + tail;
}

static void RW_FN(red_col_acc)(int func, const float* v, size_t n, RW* acc, const RW* shift) {
    size_t j;
    switch (func) {
    case DML_REDUCE_FUNCTION_MULTIPLY:
        for (j = 0; j < n; ++j) acc[j] *= (RW)v[j];
        break;
    case DML_REDUCE_FUNCTION_L1:
        for (j = 0; j < n; ++j) acc[j] += RW_ABS((RW)v[j]);
        break;
    case DML_REDUCE_FUNCTION_L2:
    case DML_REDUCE_FUNCTION_SUM_SQUARE:
        for (j = 0; j < n; ++j) acc[j] += (RW)v[j] * (RW)v[j];
        break;
    case DML_REDUCE_FUNCTION_LOG_SUM_EXP:
        for (j = 0; j < n; ++j) acc[j] += RW_EXP((RW)v[j] - shift[j]);
        break;
    default:
        for (j = 0; j < n; ++j) acc[j] += (RW)v[j];
        break;
    }
}

RED_INLINE RW RW_FN(red_finish)(int func, RW acc, RW shift, uint64_t count) {
    switch (func) {
    case DML_REDUCE_FUNCTION_AVERAGE: return acc / (RW)count;
    case DML_REDUCE_FUNCTION_L2: return RW_SQRT(acc);
    case DML_REDUCE_FUNCTION_LOG_SUM: return RW_LOG(acc);
    case DML_REDUCE_FUNCTION_LOG_SUM_EXP: return RW_LOG(acc) + shift;
    default: return acc;
    }
}

#undef RED_LANE_LOOP
#undef RED_VROW
/* the parameters of this inclusion: reduction.c defines them afresh for the next */
#undef RW
#undef RW_FN
#undef RW_EXP
#undef RW_LOG
#undef RW_SQRT
#undef RW_ABS
#undef RW_V
#undef RW_NV
#undef RW_VLOAD
#undef RW_VABS
