/* fuzz_rn_projected.c - rn_projected_rownorm, rn_projected_rownorm_ws,
 * rn_projected_rownorm_workspace_size with fuzzed shapes, eps, values and placements of the
 * output (separate, in place, overlapping, in place with a different ld).
 * Checks: on an error the whole output region and A are untouched; invalid sizes, NaN/Inf,
 * eps < 0 / non-finite and overlaps other than exact in place are never OK; an OK result is
 * finite, has column sums ~0 (|sum| <= 1e-5 rows) and rows of norm <= 2 (RN rows <= 1, P at
 * most doubles); in place gives the bits of out of place; padding never written. */
#include "rownorm.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    uint8_t op = fz_u8(&in), place = fz_u8(&in);
    fz_shape s = fz_take_shape(&in, 40, 24);
    fz_valgen g = fz_take_valgen(&in);
    static const double ord_eps[] = {1e-8, 0.0, 1e-3, 1.0};
    float eps = (float)fz_param(&in, ord_eps, 4);
    size_t ldo = s.bogus ? s.ld : s.cols + fz_u8(&in) % 3, aext = s.alloc, oext, tot, off = 0, i, j;
    int inplace = 0, overlap = 0;
    float *buf, *A, *O;
    fz_snap snAll;
    rn_status st;

    oext = s.bogus ? s.alloc : fz_extent(s.rows, s.cols, ldo);
    switch (place % 4) {
    case 1: if (!s.bogus) { inplace = 1; ldo = s.ld; oext = aext; } break;
    case 2: if (aext > 1) { overlap = 1; off = 1 + fz_u8(&in) % (aext - 1); } break;
    case 3: if (!s.bogus && aext > 1 && fz_u8(&in) % 2) { overlap = 1; off = 0; ldo = s.ld + 1; oext = fz_extent(s.rows, s.cols, ldo); } break;
    default: break;
    }
    tot = inplace ? aext : overlap ? (off + oext > aext ? off + oext : aext) : aext + oext;
    buf = (float *)fz_malloc(tot * sizeof(float));
    for (i = 0; i < tot; i++) buf[i] = -99.0f;
    A = buf;
    O = inplace ? buf : overlap ? buf + off : buf + aext;
    for (i = 0; i < aext; i++) A[i] = (s.bogus || i % s.ld < s.cols) ? fz_value(&g, &in, i % (s.ld ? s.ld : 1)) : (overlap ? A[i] : NAN);
    snAll = fz_take_snap(buf, tot * sizeof(float));
    if (op & 1) {
        size_t need = rn_projected_rownorm_workspace_size(s.cols), have = need;
        void *ws;
        if (fz_u8(&in) % 8 == 0 && have) have--;
        ws = fz_malloc(have);
        st = rn_projected_rownorm_ws(A, s.rows, s.cols, s.ld, eps, O, ldo, ws, have);
        free(ws);
    } else {
        st = rn_projected_rownorm(A, s.rows, s.cols, s.ld, eps, O, ldo);
    }
    if (s.bogus || !fz_matrix_finite((const float *)snAll.copy, &s) || !(eps >= 0.0f) || !(eps <= FLT_MAX) || overlap)
        FZ_CHECK(st != RN_OK, "invalid input accepted (overlap %d, eps %g)", overlap, (double)eps);
    if (st != RN_OK) {
        FZ_CHECK(fz_snap_same(&snAll), "A or output changed on error %d (%s)", (int)st, rn_status_string(st));
    } else {
        double *cs = (double *)fz_malloc(s.cols * sizeof(double));
        for (j = 0; j < s.cols; j++) cs[j] = 0.0;
        if (!inplace) FZ_CHECK(memcmp(A, snAll.copy, aext * sizeof(float)) == 0, "A changed");
        for (i = 0; i < s.rows; i++) {
            double nn = 0.0;
            FZ_CHECK(fz_all_finite_f(O + i * ldo, s.cols), "non-finite output row %zu", i);
            for (j = 0; j < s.cols; j++) {
                cs[j] += O[i * ldo + j];
                nn += (double)O[i * ldo + j] * O[i * ldo + j];
            }
            FZ_CHECK(sqrt(nn) <= 2.0 + 1e-5, "row %zu norm %.17g", i, sqrt(nn));
            if (!inplace && i + 1 < s.rows)
                for (j = s.cols; j < ldo; j++) FZ_CHECK(O[i * ldo + j] == -99.0f, "output padding written");
        }
        for (j = 0; j < s.cols; j++) FZ_CHECK(fabs(cs[j]) <= 1e-5 * (double)s.rows, "column %zu sums to %.3g", j, cs[j]);
        free(cs);
        if (inplace) {
            float *o2 = (float *)fz_malloc(aext * sizeof(float));
            FZ_CHECK(rn_projected_rownorm((const float *)snAll.copy, s.rows, s.cols, s.ld, eps, o2, s.ld) == RN_OK, "out of place failed");
            for (i = 0; i < s.rows; i++)
                FZ_CHECK(memcmp(o2 + i * s.ld, O + i * s.ld, s.cols * sizeof(float)) == 0, "in place differs, row %zu", i);
            free(o2);
        }
    }
    fz_snap_free(&snAll);
    free(buf);
    return 0;
}
