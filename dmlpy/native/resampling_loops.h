/*
 * resampling_loops.h - the loops of resampling.c for one compute type (private; included twice).
 *
 * The includer defines RS_T (double: INT8, UINT8; float: FLOAT32, FLOAT16), RS_NAME(name) (a suffix per
 * type) and RS_WEIGHT(axis, k) (the tap weight in RS_T). Every sum starts at +0 and adds w * v tap by
 * tap, as the NumPy kernel does; nothing here may be reordered. The FLOAT32 fast paths (RS_FLOAT32) exist
 * only in the float copy: the double one never sees a FLOAT32 tensor.
 */
#define RS_FLOAT32(p) (sizeof(RS_T) == sizeof(float) && (p)->type == DML_TENSOR_DATA_TYPE_FLOAT32)

/* One row of the vector: dst[i] = the input element at element offset off + i * stride (contiguous when
 * stride is 1), in RS_T. */
static void RS_NAME(rs_load_row)(const rs_plan* p, RS_T* dst, uint64_t off, uint64_t n, uint64_t stride) {
    uint64_t i;
    switch (p->type) {
    case DML_TENSOR_DATA_TYPE_FLOAT32: {
        const float* s = (const float*)p->x + off;
        if (stride == 1) {
            for (i = 0; i < n; ++i) dst[i] = (RS_T)s[i];
        } else {
            for (i = 0; i < n; ++i) dst[i] = (RS_T)s[i * stride];
        }
        break;
    }
    case DML_TENSOR_DATA_TYPE_FLOAT16: {
        const uint16_t* s = (const uint16_t*)p->x + off;
        if (stride == 1 && sizeof(RS_T) == sizeof(float)) {
            dmlpy_h2f_row((float*)dst, s, (size_t)n);
        } else {
            for (i = 0; i < n; ++i) dst[i] = (RS_T)dmlpy_h2f(s[i * stride]);
        }
        break;
    }
    case DML_TENSOR_DATA_TYPE_INT8: {
        const int8_t* s = (const int8_t*)p->x + off;
        for (i = 0; i < n; ++i) dst[i] = (RS_T)s[i * stride];
        break;
    }
    default: { /* UINT8 */
        const uint8_t* s = (const uint8_t*)p->x + off;
        for (i = 0; i < n; ++i) dst[i] = (RS_T)s[i * stride];
        break;
    }
    }
}

/* dst = the vector at element offset off: element (j, q) (q < nq, the lanes) at off + (start + j) * xs_R
 * + q * xs_Q, or off + table[j] (no lanes). */
static void RS_NAME(rs_load)(const rs_plan* p, RS_T* dst, uint64_t off, const rs_vec* v) {
    const uint64_t n = v->n, xs = p->axes[p->R].xs, nq = p->nq;
    uint64_t j;
    if (v->table) {
        for (j = 0; j < n; ++j) RS_NAME(rs_load_row)(p, dst + j, off + v->table[j], 1, 1);
    } else if (nq == 1) {
        RS_NAME(rs_load_row)(p, dst, off + v->start * xs, n, xs);
    } else if (p->xq * nq == xs) { /* the block is one run */
        RS_NAME(rs_load_row)(p, dst, off + v->start * xs, n * nq, p->xq);
    } else {
        for (j = 0; j < n; ++j) RS_NAME(rs_load_row)(p, dst + j * nq, off + (v->start + j) * xs, nq, p->xq);
    }
}

/* acc = (first ? +0 : acc) + w * src */
static void RS_NAME(rs_acc)(RS_T* acc, const RS_T* src, uint64_t n, RS_T w, int first) {
    uint64_t j;
    if (first) {
        for (j = 0; j < n; ++j) acc[j] = (RS_T)0 + w * src[j];
    } else {
        for (j = 0; j < n; ++j) acc[j] = acc[j] + w * src[j];
    }
}

/* acc = (first ? +0 : acc) + w * input vector at off; tmp: a scratch vector. */
static void RS_NAME(rs_acc_input)(const rs_plan* p, RS_T* acc, RS_T* tmp, uint64_t off, const rs_vec* v, RS_T w, int first) {
    const uint64_t xs = p->axes[p->R].xs, nq = p->nq, count = v->n * nq;
    uint64_t j;
    if (RS_FLOAT32(p) && v->table == NULL && (nq == 1 ? xs == 1 : p->xq == 1 && xs == nq)) {
        const float* s = (const float*)p->x + off + v->start * xs; /* one contiguous run */
        if (first) {
            for (j = 0; j < count; ++j) acc[j] = (RS_T)0 + w * (RS_T)s[j];
        } else {
            for (j = 0; j < count; ++j) acc[j] = acc[j] + w * (RS_T)s[j];
        }
        return;
    }
    RS_NAME(rs_load)(p, tmp, off, v);
    RS_NAME(rs_acc)(acc, tmp, count, w, first);
}

/* Two taps at once when both input vectors are contiguous FLOAT32 runs: acc = (+0 + w0 * x0) + w1 * x1, the
 * same operations in the same order as two rs_acc_input calls, in one pass. Returns 0 when not applicable. */
static int RS_NAME(rs_acc2_input)(const rs_plan* p, RS_T* acc, uint64_t off0, uint64_t off1, const rs_vec* v, RS_T w0, RS_T w1) {
    const uint64_t xs = p->axes[p->R].xs, nq = p->nq, count = v->n * nq;
    const float *s0, *s1;
    uint64_t j;
    if (!RS_FLOAT32(p) || v->table != NULL || !(nq == 1 ? xs == 1 : p->xq == 1 && xs == nq)) return 0;
    s0 = (const float*)p->x + off0 + v->start * xs;
    s1 = (const float*)p->x + off1 + v->start * xs;
    for (j = 0; j < count; ++j) acc[j] = ((RS_T)0 + w0 * (RS_T)s0[j]) + w1 * (RS_T)s1[j];
    return 1;
}

/* bufs[L] = the nested sum of levels L, L - 1, ..., 0 at input element offset off (the other axes' part). */
static void RS_NAME(rs_level)(const rs_plan* p, RS_T* const* bufs, uint32_t L, uint64_t off, const uint64_t* o, const rs_vec* v) {
    const rs_axis* a = &p->axes[p->level_axis[L]];
    const uint64_t oa = o[p->level_axis[L]], s = a->start[oa], e = a->start[oa + 1];
    RS_T* acc = bufs[L];
    uint64_t k;
    if (s == e) {
        for (k = 0; k < v->n * p->nq; ++k) acc[k] = (RS_T)0;
        return;
    }
    if (L == 0 && e - s == 2 && RS_NAME(rs_acc2_input)(p, acc, off + (uint64_t)a->idx[s] * a->xs, off + (uint64_t)a->idx[s + 1] * a->xs, v,
                                                      RS_WEIGHT(a, s), RS_WEIGHT(a, s + 1))) {
        return;
    }
    for (k = s; k < e; ++k) {
        const uint64_t at = off + (uint64_t)a->idx[k] * a->xs;
        if (L == 0) {
            RS_NAME(rs_acc_input)(p, acc, bufs[p->levels], at, v, RS_WEIGHT(a, k), k == s);
        } else {
            RS_NAME(rs_level)(p, bufs, L - 1, at, o, v);
            RS_NAME(rs_acc)(acc, bufs[L - 1], v->n * p->nq, RS_WEIGHT(a, k), k == s);
        }
    }
}

/* ob[j] = sum over the vector axis's taps of output j0 + j, t holding input indices lo, lo + 1, ... */
static void RS_NAME(rs_row_taps)(const rs_axis* r, RS_T* ob, const RS_T* t, uint64_t lo, uint64_t j0, uint64_t j1, uint64_t from) {
    uint64_t j, k;
    for (j = j0; j < j1; ++j) {
        RS_T acc = (RS_T)0;
        for (k = r->start[j]; k < r->start[j + 1]; ++k) acc = acc + RS_WEIGHT(r, k) * t[r->idx[k] - lo];
        ob[j - from] = acc;
    }
}

/* With lanes: block row j - j0 of ob = sum over output j's taps of w * block row idx - lo of t. */
static void RS_NAME(rs_row_lanes)(const rs_axis* r, RS_T* ob, const RS_T* t, uint64_t lo, uint64_t j0, uint64_t n, uint64_t nq) {
    uint64_t j, k;
    for (j = j0; j < j0 + n; ++j) {
        RS_T* o = ob + (j - j0) * nq;
        const uint64_t s = r->start[j], e = r->start[j + 1];
        if (s == e) {
            for (k = 0; k < nq; ++k) o[k] = (RS_T)0;
            continue;
        }
        for (k = s; k < e; ++k) RS_NAME(rs_acc)(o, t + (r->idx[k] - lo) * nq, nq, RS_WEIGHT(r, k), k == s);
    }
}

/* rs_row_lanes for FLOAT32 outputs whose lanes are contiguous (output stride 1): each position's sum over its
 * taps (the same operations in the same order) goes straight to the output as float, position j at
 * out + (j - j0) * ys, without the block and the separate store pass. */
static void RS_NAME(rs_row_lanes_direct)(const rs_axis* r, float* out, uint64_t ys, const RS_T* t, uint64_t lo, uint64_t j0, uint64_t n,
                                         uint64_t nq) {
    uint64_t j, k, q;
    for (j = j0; j < j0 + n; ++j) {
        float* o = out + (j - j0) * ys;
        const uint64_t s = r->start[j], e = r->start[j + 1];
        if (e - s == 2) {
            const RS_T w0 = RS_WEIGHT(r, s), w1 = RS_WEIGHT(r, s + 1);
            const RS_T* a = t + (r->idx[s] - lo) * nq;
            const RS_T* b = t + (r->idx[s + 1] - lo) * nq;
            for (q = 0; q < nq; ++q) o[q] = (float)(((RS_T)0 + w0 * a[q]) + w1 * b[q]);
        } else if (e - s == 1) {
            const RS_T w0 = RS_WEIGHT(r, s);
            const RS_T* a = t + (r->idx[s] - lo) * nq;
            for (q = 0; q < nq; ++q) o[q] = (float)((RS_T)0 + w0 * a[q]);
        } else if (s == e) {
            for (q = 0; q < nq; ++q) o[q] = 0.0f;
        } else {
            for (q = 0; q < nq; ++q) {
                RS_T acc = (RS_T)0;
                for (k = s; k < e; ++k) acc = acc + RS_WEIGHT(r, k) * t[(r->idx[k] - lo) * nq + q];
                o[q] = (float)acc;
            }
        }
    }
}

/* ob[j - j0] = output j of R's taps for j in [j0, j0 + n). direct (FLOAT32 rows of unit stride, 2x only): the
 * outputs go straight to it as floats instead, and the function returns 1. */
static int RS_NAME(rs_row)(const rs_axis* r, RS_T* ob, const RS_T* t, uint64_t lo, uint64_t hi, uint64_t j0, uint64_t n, float* direct) {
    uint64_t mA, mB, m, j;
    if (!r->twice) {
        RS_NAME(rs_row_taps)(r, ob, t, lo, j0, j0 + n, j0);
        return 0;
    }
    /* 2x at pixel centres: outputs 2m and 2m + 1 from inputs m - 1, m, m + 1 inside [lo, hi], the same
     * two products and sums per output as the tap loop; the rest (edges, chunk ends) through the tap loop. */
    mA = (j0 + 1) / 2;
    if (mA < lo + 1) mA = lo + 1;
    mB = (j0 + n) / 2;
    if (mB > hi) mB = hi;
    if (mA >= mB) {
        RS_NAME(rs_row_taps)(r, ob, t, lo, j0, j0 + n, j0);
        return 0;
    }
    RS_NAME(rs_row_taps)(r, ob, t, lo, j0, 2 * mA, j0);
    RS_NAME(rs_row_taps)(r, ob, t, lo, 2 * mB, j0 + n, j0);
    {
        const RS_T q = (RS_T)0.25, tq = (RS_T)0.75, z = (RS_T)0;
        const RS_T* tm = t - lo;
        if (direct) {
            float* out = direct - j0;
            for (j = j0; j < 2 * mA; ++j) out[j] = (float)ob[j - j0];
            for (m = mA; m < mB; ++m) {
                const RS_T a = tm[m - 1], b = tm[m], c = tm[m + 1];
                out[2 * m] = (float)((z + q * a) + tq * b);
                out[2 * m + 1] = (float)((z + tq * b) + q * c);
            }
            for (j = 2 * mB; j < j0 + n; ++j) out[j] = (float)ob[j - j0];
            return 1;
        } else {
            RS_T* out = ob - j0;
            for (m = mA; m < mB; ++m) {
                const RS_T a = tm[m - 1], b = tm[m], c = tm[m + 1];
                out[2 * m] = (z + q * a) + tq * b;
                out[2 * m + 1] = (z + tq * b) + q * c;
            }
        }
    }
    return 0;
}

/* Writes n values to the output at element offset off, stride ys. */
static void RS_NAME(rs_store_row)(const rs_plan* p, const RS_T* v, uint64_t n, uint64_t off, uint64_t ys) {
    uint64_t j;
    switch (p->type) {
    case DML_TENSOR_DATA_TYPE_FLOAT32: {
        float* d = (float*)p->y + off;
        if (ys == 1) {
            for (j = 0; j < n; ++j) d[j] = (float)v[j];
        } else {
            for (j = 0; j < n; ++j) d[j * ys] = (float)v[j];
        }
        break;
    }
    case DML_TENSOR_DATA_TYPE_FLOAT16: {
        uint16_t* d = (uint16_t*)p->y + off;
        for (j = 0; j < n; ++j) d[j * ys] = dmlpy_f2h((float)v[j]);
        break;
    }
    case DML_TENSOR_DATA_TYPE_INT8: {
        int8_t* d = (int8_t*)p->y + off;
        for (j = 0; j < n; ++j) d[j * ys] = (int8_t)rs_saturate((double)v[j], -128.0, 127.0);
        break;
    }
    default: { /* UINT8 */
        uint8_t* d = (uint8_t*)p->y + off;
        for (j = 0; j < n; ++j) d[j * ys] = (uint8_t)rs_saturate((double)v[j], 0.0, 255.0);
        break;
    }
    }
}

/* Writes n positions along R (each nq lanes) from output element offset off. */
static void RS_NAME(rs_store)(const rs_plan* p, const RS_T* v, uint64_t n, uint64_t off) {
    const uint64_t ys = p->axes[p->R].ys, nq = p->nq;
    uint64_t j;
    if (nq == 1) {
        RS_NAME(rs_store_row)(p, v, n, off, ys);
    } else if (p->yq * nq == ys) { /* the block is one run */
        RS_NAME(rs_store_row)(p, v, n * nq, off, p->yq);
    } else {
        for (j = 0; j < n; ++j) RS_NAME(rs_store_row)(p, v + j * nq, nq, off + j * ys, p->yq);
    }
}

static void RS_NAME(rs_run)(void* ctx, uint64_t begin, uint64_t end, unsigned worker) {
    const rs_plan* p = (const rs_plan*)ctx;
    const rs_axis* r = &p->axes[p->R];
    const uint64_t stride = (p->vmax + 16) / 8 * 8;
    RS_T* bufs[DMLPY_MAX_RANK + 2];
    RS_T* ob;
    uintptr_t base = (uintptr_t)(p->scratch + (size_t)worker * p->per_worker);
    uint64_t item;
    uint32_t b;
    uint64_t o[DMLPY_MAX_RANK], c = begin % p->chunks, pos = begin / p->chunks;
    uint32_t q;
    base = (base + 63) & ~(uintptr_t)63;
    for (b = 0; b < p->levels + 2; ++b) bufs[b] = (RS_T*)base + b * stride;
    ob = bufs[p->levels + 1];
    /* the other axes' indices of the first item; each next item steps them as an odometer (no division per item:
     * rows of a few vectors, NCHW's, spent a third of their time dividing) */
    for (q = p->outers; q-- > 0;) {
        const uint32_t ai = p->outer_axis[q];
        o[ai] = pos % p->axes[ai].out_size;
        pos /= p->axes[ai].out_size;
    }
    for (item = begin; item < end; ++item) {
        uint64_t in_off = 0, out_off = 0, j0, n, j;
        const RS_T* top;
        rs_vec v;
        if (item != begin && ++c == p->chunks) {
            c = 0;
            for (q = p->outers; q-- > 0;) {
                const uint32_t ai = p->outer_axis[q];
                if (++o[ai] < p->axes[ai].out_size) break;
                o[ai] = 0;
            }
        }
        for (q = 0; q < p->outers; ++q) {
            const rs_axis* a = &p->axes[p->outer_axis[q]];
            const uint64_t oa = o[p->outer_axis[q]];
            out_off += oa * a->ys;
            if (a->kind != RS_WEIGHTED) in_off += (uint64_t)a->idx[a->start[oa]] * a->xs;
        }
        j0 = c * p->chunk;
        n = r->out_size - j0 < p->chunk ? r->out_size - j0 : p->chunk;
        if (p->row_weighted) {
            v.start = p->chunk_lo[c];
            v.n = (uint64_t)p->chunk_hi[c] - p->chunk_lo[c] + 1;
            v.table = NULL;
        } else if (r->kind == RS_GATHER) {
            v.start = 0;
            v.n = n;
            v.table = p->goff + j0;
        } else {
            v.start = j0;
            v.n = n;
            v.table = NULL;
        }
        if (p->levels) {
            RS_NAME(rs_level)(p, bufs, p->levels - 1, in_off, o, &v);
            top = bufs[p->levels - 1];
        } else {
            RS_NAME(rs_load)(p, bufs[p->levels], in_off, &v);
            top = bufs[p->levels];
        }
        if (p->row_weighted) {
            if (p->nq > 1 && RS_FLOAT32(p) && p->yq == 1) {
                RS_NAME(rs_row_lanes_direct)(r, (float*)p->y + out_off + j0 * r->ys, r->ys, top, p->chunk_lo[c], j0, n, p->nq);
                continue;
            } else if (p->nq > 1) {
                RS_NAME(rs_row_lanes)(r, ob, top, p->chunk_lo[c], j0, n, p->nq);
            } else {
                const uint64_t at = out_off + j0 * r->ys;
                float* direct = RS_FLOAT32(p) && r->ys == 1 ? (float*)p->y + at : NULL;
                if (RS_NAME(rs_row)(r, ob, top, p->chunk_lo[c], p->chunk_hi[c], j0, n, direct)) continue;
            }
            top = ob;
        } else if (!p->levels) {
            for (j = 0; j < n; ++j) ob[j] = (RS_T)0 + top[j]; /* 0 + 1 * x: no -0 out, as in NumPy */
            top = ob;
        }
        RS_NAME(rs_store)(p, top, n, out_off + j0 * r->ys);
    }
}

#undef RS_FLOAT32
