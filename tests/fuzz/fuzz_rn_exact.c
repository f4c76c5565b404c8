/* fuzz_rn_exact.c - rn_exact_step, rn_exact_step_ws, rn_exact_step_workspace_size on small
 * gradients (rows <= 7, cols <= 6: the solver is cubic in (rows-1)*rank).
 * Checks: on an error S, flow and res are untouched and G never changes; invalid sizes,
 * NaN/Inf, eta <= 0 / non-finite, rel_tol outside (0, 1) and overlaps are never OK; on OK the
 * certificate holds: decrease_lo <= decrease_hi, hi - lo <= rel_tol * hi (+1e-9 relative
 * slack), diameter <= eta (1e-9 relative), S has zero column sums and pairwise distances
 * <= eta, decrease_rownorm <= decrease_hi (RowNorm's first-order decrease never beats Delta*). */
#include "rownorm.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    uint8_t op = fz_u8(&in);
    fz_shape s = fz_take_shape(&in, 7, 6);
    fz_valgen g = fz_take_valgen(&in);
    static const double ord_eta[] = {1.0, 0.5, 2.0, 1e-3};
    static const double ord_tol[] = {1e-6, 1e-3, 0.5, 1e-9};
    double eta = fz_param(&in, ord_eta, 4), tol = fz_param(&in, ord_tol, 4);
    float *G = fz_matrix(&s, &g, &in);
#ifdef FZ_AVOID_KNOWN_RN_TINY_EPS /* to explore past the known subnormal-eta finding (docs/reliability.md) */
    if (eta > 0.0 && eta < 1e-290) eta = 1.0;
#endif
    size_t rows = s.bogus ? 4 : s.rows, cols = s.bogus ? 4 : s.cols, lds = cols + fz_u8(&in) % 2, ldf = cols;
    size_t npair = rows * (rows - 1) / 2, i, j, k;
    double *S = (op & 2) ? NULL : (double *)fz_malloc(rows * lds * sizeof(double));
    double *F = (op & 4) ? NULL : (double *)fz_malloc((npair ? npair : 1) * ldf * sizeof(double));
    rn_exact_result res;
    fz_snap sG = fz_take_snap(G, s.alloc * sizeof(float)), sS, sF, sR;
    rn_status st;

    if (S) for (i = 0; i < rows * lds; i++) S[i] = -4.0;
    if (F) for (i = 0; i < (npair ? npair : 1) * ldf; i++) F[i] = -4.0;
    memset(&res, 0x77, sizeof res);
    sS = fz_take_snap(S ? (void *)S : (void *)&res, S ? rows * lds * sizeof(double) : 0);
    sF = fz_take_snap(F ? (void *)F : (void *)&res, F ? (npair ? npair : 1) * ldf * sizeof(double) : 0);
    sR = fz_take_snap(&res, sizeof res);
    if (op & 1) {
        size_t need = rn_exact_step_workspace_size(s.rows, s.cols), have = need;
        void *ws;
        if (fz_u8(&in) % 8 == 0 && have) have--;
        ws = fz_malloc(have);
        st = rn_exact_step_ws(G, s.rows, s.cols, s.ld, eta, tol, S, lds, F, ldf, &res, ws, have);
        free(ws);
    } else {
        st = rn_exact_step(G, s.rows, s.cols, s.ld, eta, tol, S, lds, F, ldf, &res);
    }
    FZ_CHECK(fz_snap_same(&sG), "G changed");
    if (s.bogus || !fz_matrix_finite(G, &s) || !(eta > 0.0) || !(eta <= DBL_MAX) || !(tol > 0.0 && tol < 1.0))
        FZ_CHECK(st != RN_OK, "invalid input accepted (eta %g tol %g)", eta, tol);
    if (st != RN_OK) {
        FZ_CHECK(fz_snap_same(&sS) && fz_snap_same(&sF) && fz_snap_same(&sR), "outputs written on error %d (%s)", (int)st,
                 rn_status_string(st));
    } else {
        FZ_CHECK(res.decrease_lo <= res.decrease_hi * (1 + 1e-12) + 1e-300, "lo %.17g > hi %.17g", res.decrease_lo, res.decrease_hi);
        FZ_CHECK(res.decrease_hi - res.decrease_lo <= tol * res.decrease_hi * (1 + 1e-9) + 1e-300, "gap %.3g > tol %.3g * hi %.3g",
                 res.decrease_hi - res.decrease_lo, tol, res.decrease_hi);
        FZ_CHECK(res.diameter <= eta * (1 + 1e-9), "diameter %.17g > eta %.17g", res.diameter, eta);
        FZ_CHECK(res.decrease_rownorm <= res.decrease_hi * (1 + 1e-9) + 1e-300, "RowNorm decrease %.17g > upper bound %.17g",
                 res.decrease_rownorm, res.decrease_hi);
        if (S) {
            double mag = 0.0;
            for (k = 0; k < cols; k++) {
                double cs = 0.0;
                for (i = 0; i < rows; i++) {
                    cs += S[i * lds + k];
                    mag += fabs(S[i * lds + k]);
                }
                FZ_CHECK(fabs(cs) <= 1e-9 * mag + 1e-300, "S column %zu sums to %.3g", k, cs);
            }
            for (i = 0; i < rows; i++)
                for (j = i + 1; j < rows; j++) {
                    double d = 0.0;
                    for (k = 0; k < cols; k++) { /* in units of eta: no overflow at eta ~ 1e300 */
                        double x = S[i * lds + k] / eta - S[j * lds + k] / eta;
                        d += x * x;
                    }
                    FZ_CHECK(sqrt(d) <= 1 + 1e-9, "||s_%zu - s_%zu|| = %.17g eta", i, j, sqrt(d));
                }
        }
    }
    fz_snap_free(&sG);
    fz_snap_free(&sS);
    fz_snap_free(&sF);
    fz_snap_free(&sR);
    free(S);
    free(F);
    free(G);
    return 0;
}
