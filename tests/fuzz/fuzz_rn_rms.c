/* fuzz_rn_rms.c - rn_hilbert_rms, rn_hilbert_rms_workspace_size, rn_hilbert_rms_partial_ws,
 * rn_hilbert_rms_from_range.
 * Checks: outputs (rms, tok_max, tok_min) untouched on an error; S, H and the ranges never
 * change; invalid sizes and NaN/Inf never OK (from_range: tok_max < tok_min never OK); with
 * tame values the RMS matches a double brute force within the float32 product error bound
 * (1e-4 of the largest sum of |s_ij - c_j||h_lj|); the partial ranges agree likewise;
 * from_range of the partial ranges equals rn_hilbert_rms to 1e-12 relative. */
#include "rownorm.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    uint8_t op = fz_u8(&in);
    fz_shape s = fz_take_shape(&in, 80, 20), h = fz_take_shape(&in, 70, 1);
    fz_valgen gs = fz_take_valgen(&in), gh = fz_take_valgen(&in);
    float *S, *H;
    size_t tokens, ldh, l, i, k;
    double rms = -1.0, *tmax, *tmin;
    rn_status st;
    fz_snap snS, snH, s1, s2;
    int finite, bogus;

    /* H: tokens x cols with its own ld; bad shapes of H are folded into its ld or tokens */
    tokens = h.bogus == 1 ? 0 : h.rows;
    ldh = s.bogus ? s.ld : s.cols + (h.bogus ? 0 : h.ld - h.cols);
    if (h.bogus == 2 && !s.bogus && s.cols > 1) ldh = s.cols - 1;
    bogus = s.bogus || tokens == 0 || ldh < s.cols;
    h.rows = tokens ? tokens : 1;
    h.cols = s.bogus ? 1 : s.cols;
    h.ld = s.bogus ? 1 : ldh < h.cols ? h.cols : ldh;
    h.alloc = fz_extent(h.rows, h.cols, h.ld);
    h.bogus = 0;
    S = fz_matrix(&s, &gs, &in);
    H = fz_matrix(&h, &gh, &in);
    finite = fz_matrix_finite(S, &s) && fz_all_finite_f(H, h.alloc);
    if (!bogus)
        for (i = 0; i < h.alloc; i++)
            if (i % h.ld >= h.cols) H[i] = NAN; /* padding of H: never read */
    finite = fz_matrix_finite(S, &s) && (bogus || fz_matrix_finite(H, &h));
    tmax = (double *)fz_malloc((tokens ? tokens : 1) * sizeof(double));
    tmin = (double *)fz_malloc((tokens ? tokens : 1) * sizeof(double));
    for (l = 0; l < (tokens ? tokens : 1); l++) tmax[l] = tmin[l] = -3.0;
    snS = fz_take_snap(S, s.alloc * sizeof(float));
    snH = fz_take_snap(H, h.alloc * sizeof(float));
    s1 = fz_take_snap(tmax, (tokens ? tokens : 1) * sizeof(double));
    s2 = fz_take_snap(tmin, (tokens ? tokens : 1) * sizeof(double));
    if (op & 1) {
        size_t need = rn_hilbert_rms_workspace_size(s.cols, tokens), have = need;
        void *ws;
        if (fz_u8(&in) % 8 == 0 && have) have--;
        ws = fz_malloc(have);
        st = rn_hilbert_rms_partial_ws(S, s.rows, s.cols, s.ld, H, tokens, ldh, ws, have, tmax, tmin);
        free(ws);
        if (st != RN_OK) FZ_CHECK(fz_snap_same(&s1) && fz_snap_same(&s2), "ranges written on error %d", (int)st);
        else {
            double r2 = -1.0, r1 = -1.0;
            /* (finite inputs whose float32 products overflow give infinite ranges: not checked) */
            FZ_CHECK(rn_hilbert_rms_from_range(tmax, tmin, tokens, &r2) == RN_OK || !fz_valgen_tame(&gs) || !fz_valgen_tame(&gh),
                     "from_range of the partial ranges failed");
            if (rn_hilbert_rms(S, s.rows, s.cols, s.ld, H, tokens, ldh, &r1) == RN_OK && r2 >= 0.0)
                FZ_CHECK(fabs(r1 - r2) <= 1e-12 * r1 + 1e-300, "rms %.17g vs from_range %.17g", r1, r2);
        }
    } else if (op & 2) {
        /* from_range on fuzzed ranges */
        double rr = -1.0;
        fz_valgen g2 = fz_take_valgen(&in);
        size_t n = fz_u8(&in) % 20;
        double *a = (double *)fz_malloc((n ? n : 1) * sizeof(double)), *b = (double *)fz_malloc((n ? n : 1) * sizeof(double));
        int ok_in = n > 0;
        for (l = 0; l < n; l++) {
            a[l] = fz_value(&g2, &in, l);
            b[l] = fz_u8(&in) % 8 ? a[l] - fabs((double)fz_value(&g2, &in, l)) : (double)fz_value(&g2, &in, l);
            if (!(a[l] >= b[l]) || !(fabs(a[l]) <= DBL_MAX) || !(fabs(b[l]) <= DBL_MAX)) ok_in = 0;
        }
        st = rn_hilbert_rms_from_range(a, b, n, &rr);
        if (!ok_in) FZ_CHECK(st != RN_OK, "invalid ranges accepted");
        if (st != RN_OK) FZ_CHECK(rr == -1.0, "rms written on error");
        else FZ_CHECK(rr >= 0.0, "rms %.17g", rr);
        free(a);
        free(b);
        bogus = 0;
        finite = 1;
    } else {
        st = rn_hilbert_rms(S, s.rows, s.cols, s.ld, H, tokens, ldh, &rms);
        if (st != RN_OK) FZ_CHECK(rms == -1.0, "rms written on error %d (%s)", (int)st, rn_status_string(st));
        else if (fz_valgen_tame(&gs) && fz_valgen_tame(&gh)) {
            double acc = 0.0, bound = 0.0, *c = (double *)fz_malloc(s.cols * sizeof(double));
            for (k = 0; k < s.cols; k++) {
                c[k] = 0.0;
                for (i = 0; i < s.rows; i++) c[k] += S[i * s.ld + k];
                c[k] /= (double)s.rows;
            }
            for (l = 0; l < tokens; l++) {
                double mx = -INFINITY, mn = INFINITY, bl = 0.0;
                for (i = 0; i < s.rows; i++) {
                    double dot = 0.0, ab = 0.0;
                    for (k = 0; k < s.cols; k++) {
                        dot += (double)S[i * s.ld + k] * H[l * ldh + k];
                        ab += (fabs((double)S[i * s.ld + k]) + fabs(c[k])) * fabs((double)H[l * ldh + k]);
                    }
                    if (dot > mx) mx = dot;
                    if (dot < mn) mn = dot;
                    if (ab > bl) bl = ab;
                }
                acc += (mx - mn) * (mx - mn);
                if (bl > bound) bound = bl;
            }
            acc = sqrt(acc / (double)tokens);
            FZ_CHECK(fabs(rms - acc) <= 1e-4 * bound + 1e-35, /* float32 products: underflow below ~1e-38 */ "rms %.17g, brute force %.17g (bound %.3g)", rms, acc, bound);
            free(c);
        }
    }
    if (bogus || !finite) FZ_CHECK(st != RN_OK, "invalid sizes or NaN/Inf accepted");
    FZ_CHECK(fz_snap_same(&snS) && fz_snap_same(&snH), "S or H changed");
    fz_snap_free(&snS);
    fz_snap_free(&snH);
    fz_snap_free(&s1);
    fz_snap_free(&s2);
    free(tmax);
    free(tmin);
    free(S);
    free(H);
    return 0;
}
