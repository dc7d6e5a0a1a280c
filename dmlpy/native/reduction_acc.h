/*
 * reduction_acc.h - reduction.c's sums in one working type (private; included twice by reduction.c).
 *
 * Before each inclusion reduction.c defines RW (the working type: double, or float for FLOAT16 and for FLOAT32's
 * blocks of float sums), RW_LANES (the row sum's lanes), RW_FN(name) (the name with the type's suffix) and RW_EXP, RW_LOG, RW_SQRT, RW_ABS
 * (the type's functions). The functions:
 *   RW_FN(red_row_sum)    one chunk of a row summed in RED_LANES interleaved lanes combined as a tree
 *                         (the product for MULTIPLY);
 *   RW_FN(red_row_vec)    a sum's chunk before the tree across one vector's lanes (vector extensions only);
 *   RW_FN(red_col_acc)    one reduced position of a block of outputs: acc[j] += term(v[j]) (*= for MULTIPLY);
 *   RW_FN(red_finish)     the function applied to the row's sum (AVERAGE's division, L2's square root, ...).
 * The term is x for SUM, AVERAGE and LOG_SUM, |x| for L1, x * x for L2 and SUM_SQUARE, exp(x - shift) for
 * LOG_SUM_EXP, each computed in RW from the float value.
 */

/* Element i's term goes to lane i % RW_LANES (the last group may be partial: its missing elements add
 * nothing); the lanes start at the operation's identity and combine as a tree (lane k + w into lane k, w =
 * RW_LANES / 2, ..., 2, 1). RW_LANES (32 doubles, 64 floats) makes 4 chains of adds in AVX-512 registers (8
 * with AVX2): enough to hide the add's latency behind the loads. Every instruction set adds the same numbers in the same
 * order. Every sum's lanes start at +0, as NumPy's sums do (a row of -0 sums to +0); the vector code pads
 * missing elements with -0, which leaves a lane as it is. */
#define RED_LANE_LOOP(TERM, OP)                                      \
    for (; i + RW_LANES <= n; i += RW_LANES) {             \
        for (k = 0; k < RW_LANES; ++k) {                        \
            const RW x = (RW)v[i + k];                               \
            acc[k] = acc[k] OP(TERM);                                \
        }                                                            \
    }                                                                \
    for (k = 0; i + k < n; ++k) {                                    \
        const RW x = (RW)v[i + k];                                   \
        acc[k] = acc[k] OP(TERM);                                    \
    }

#if defined(RW_V)
/* The whole row with vectors of RW_NV lanes, the function chosen once: the full groups, the partial last
 * group (RW_VLOAD_PART puts `pad` where elements are missing, in whole vectors too, so that every index is a
 * constant: -0, or 1 for MULTIPLY, whose term leaves a lane as it is), then the tree across vectors, which
 * leaves va[0] for the tree across its lanes (red_tree_*, or red_tree16 for 16 rows). The accumulators stay in
 * registers: va holds the group's first half of the lanes and vb the second, two arrays because GCC keeps a
 * larger one in memory. For short rows (49 floats of a 7x7 global pool) the row's fixed cost is most of its
 * time. TERM is the term of a vector x. */
#define RED_H (RW_LANES / RW_NV / 2) /* vectors per half */
/* x = vector q of the partial group: its elements that are left (none past the row), `pad` after them */
#define RED_VLOAD_LEFT(x, q) RW_VLOAD_PART(x, v + t->at[q], t->count[q], pad)
#define RED_VACC(TERM, OP)                                                           \
    do {                                                                       \
        for (; i < t->whole; i += RW_LANES) {                                  \
            for (k = 0; k < RED_H; ++k) {                                      \
                RW_V x;                                                        \
                RW_VLOAD(x, v + i + k * RW_NV);                                \
                va[k] = va[k] OP(TERM);                                        \
                RW_VLOAD(x, v + i + (RED_H + k) * RW_NV);                      \
                vb[k] = vb[k] OP(TERM);                                        \
            }                                                                  \
        }                                                                      \
        if (i < n) {                                                           \
            for (k = 0; k < RED_H; ++k) {                                      \
                RW_V x;                                                        \
                RED_VLOAD_LEFT(x, k);                                          \
                va[k] = va[k] OP(TERM);                                        \
                RED_VLOAD_LEFT(x, RED_H + k);                                  \
                vb[k] = vb[k] OP(TERM);                                        \
            }                                                                  \
        }                                                                      \
        for (k = 0; k < RED_H; ++k) va[k] = va[k] OP vb[k];                    \
        for (w = RED_H / 2; w >= 1; w /= 2) {                                  \
            for (k = 0; k < (size_t)w; ++k) va[k] = va[k] OP va[k + w];        \
        }                                                                      \
    } while (0)

/* The tree across one vector's lanes: halves added (lane k + w into lane k) down to 16 bytes, then in
 * scalars; the halves are copied out (not indexed), which the compiler turns into extracts. */
typedef RW RW_FN(red_w32) __attribute__((vector_size(32)));
typedef RW RW_FN(red_w16) __attribute__((vector_size(16)));
#define RED_TREE_FN(OPNAME, OP)                                                  \
    RED_INLINE RW RW_FN(red_tree_##OPNAME)(const RW_V* v) {                      \
        RW_FN(red_w16) q, qh;                                                    \
        RW s[16 / sizeof(RW)];                                                   \
        size_t k, w;                                                             \
        if (sizeof(RW_V) == 64) {                                                \
            RW_FN(red_w32) lo, hi;                                               \
            memcpy(&lo, v, 32);                                                  \
            memcpy(&hi, (const char*)v + 32, 32);                                \
            lo = lo OP hi;                                                       \
            memcpy(&q, &lo, 16);                                                 \
            memcpy(&qh, (const char*)&lo + 16, 16);                              \
            q = q OP qh;                                                         \
        } else if (sizeof(RW_V) == 32) {                                         \
            memcpy(&q, v, 16);                                                   \
            memcpy(&qh, (const char*)v + 16, 16);                                \
            q = q OP qh;                                                         \
        } else {                                                                 \
            memcpy(&q, v, 16);                                                   \
        }                                                                        \
        memcpy(s, &q, 16);                                                       \
        for (w = 16 / sizeof(RW) / 2; w >= 1; w /= 2) {                          \
            for (k = 0; k < w; ++k) s[k] = s[k] OP s[k + w];                     \
        }                                                                        \
        return s[0];                                                             \
    }
RED_TREE_FN(sum, +)
RED_TREE_FN(product, *)
#undef RED_TREE_FN
#endif

/* Where a row of n elements ends: its full groups, and for the partial group's vectors (a row length's, worked
 * out once for rows of one length) where each starts and how many elements it has. */
typedef struct RW_FN(red_tail) {
    size_t whole;
#if defined(RW_V)
    size_t at[RW_LANES / RW_NV], count[RW_LANES / RW_NV];
#endif
} RW_FN(red_tail);

static inline void RW_FN(red_tail_of)(size_t n, RW_FN(red_tail)* t) {
    t->whole = n - n % RW_LANES;
#if defined(RW_V)
    {
        size_t k;
        for (k = 0; k < RW_LANES / RW_NV; ++k) {
            t->at[k] = t->whole + k * RW_NV < n ? t->whole + k * RW_NV : n;
            t->count[k] = n - t->at[k] < RW_NV ? n - t->at[k] : RW_NV;
        }
    }
#endif
}

#if defined(RW_V)
/* A chunk's sum of a row (not MULTIPLY or LOG_SUM_EXP) before the tree across the lanes of one vector:
 * red_row_sum_t finishes it with red_tree_sum, red_rows_group the trees of 8 or 16 rows at once in the same order. */
RED_INLINE RW_V RW_FN(red_row_vec)(int func, const float* v, size_t n, const RW_FN(red_tail)* t) {
    RW_V va[RED_H], vb[RED_H];
    size_t i = 0, k;
    int w;
    const float pad = -0.0f;
    for (k = 0; k < RED_H; ++k) va[k] = vb[k] = (RW_V){0};
    switch (func) {
    case DML_REDUCE_FUNCTION_L1: RED_VACC(RW_VABS(x), +); break;
    case DML_REDUCE_FUNCTION_L2:
    case DML_REDUCE_FUNCTION_SUM_SQUARE: RED_VACC(x * x, +); break;
    default: RED_VACC(x, +); break;
    }
    return va[0];
}
#endif

RED_INLINE RW RW_FN(red_row_sum_t)(int func, const float* v, size_t n, RW shift, const RW_FN(red_tail)* t) {
    RW acc[RW_LANES];
    size_t i = 0, k;
    int w;
    const int product = func == DML_REDUCE_FUNCTION_MULTIPLY;
    const RW id = product ? (RW)1 : (RW)0;
    (void)t; /* the vector code's */
#if defined(RW_V)
    if (product) {
        RW_V va[RED_H], vb[RED_H];
        const float pad = 1.0f;
        for (k = 0; k < RED_H; ++k) va[k] = vb[k] = (RW_V){0} + id;
        RED_VACC(x, *);
        return RW_FN(red_tree_product)(&va[0]);
    }
    if (func != DML_REDUCE_FUNCTION_LOG_SUM_EXP) {
        const RW_V sum = RW_FN(red_row_vec)(func, v, n, t);
        return RW_FN(red_tree_sum)(&sum);
    }
#endif
    for (k = 0; k < RW_LANES; ++k) acc[k] = id;
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
    for (w = RW_LANES / 2; w >= 1; w /= 2) {
        for (k = 0; k < (size_t)w; ++k) acc[k] = product ? acc[k] * acc[k + w] : acc[k] + acc[k + w];
    }
    return acc[0];
}

RED_INLINE RW RW_FN(red_row_sum)(int func, const float* v, size_t n, RW shift) {
    RW_FN(red_tail) t;
    RW_FN(red_tail_of)(n, &t);
    return RW_FN(red_row_sum_t)(func, v, n, shift, &t);
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
#undef RED_VACC
#undef RED_H
#undef RED_VLOAD_LEFT
/* the parameters of this inclusion: reduction.c defines them afresh for the next */
#undef RW
#undef RW_FN
#undef RW_LANES
#undef RW_EXP
#undef RW_LOG
#undef RW_SQRT
#undef RW_ABS
#undef RW_V
#undef RW_NV
#undef RW_VLOAD
#undef RW_VLOAD_PART
#undef RW_VABS
