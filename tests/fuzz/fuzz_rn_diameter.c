/* fuzz_rn_diameter.c - rn_row_diameter, rn_row_diameter_ws, rn_row_diameter_workspace_size,
 * rn_row_diameter_bounds (+ _ws, _workspace_size), rn_worst_hidden_state.
 * Checks: outputs (D, i, j, lo, hi, h) untouched on an error; S never changes; invalid sizes
 * and NaN/Inf never OK; the exact D equals the brute-force maximum over all pairs in double
 * (relative 1e-9), the pair is ordered (i < j, or 0,0 for one row) and attains D; the _ws form
 * gives the same bits; lo <= D <= hi <= 2 lo (relative 1e-9); h has norm radius to float rounding
 * (relative, and 2^-150 per entry for subnormal radii), or is 0. */
#include "rownorm.h"
#include "fuzz_common.h"

static double pair_dist(const float *S, size_t ld, size_t cols, size_t a, size_t b)
{
    double s = 0.0;
    size_t k;
    for (k = 0; k < cols; k++) {
        double d = (double)S[a * ld + k] - (double)S[b * ld + k];
        s += d * d;
    }
    return sqrt(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    uint8_t op = fz_u8(&in);
    fz_shape s = fz_take_shape(&in, 48, 24);
    fz_valgen g = fz_take_valgen(&in);
    float *S = fz_matrix(&s, &g, &in);
    fz_snap snS = fz_take_snap(S, s.alloc * sizeof(float));
    int finite = fz_matrix_finite(S, &s);
    rn_status st;
    double D = -1.0, lo = -1.0, hi = -1.0;
    size_t pi = 777, pj = 777, a, b;

    switch (op % 3) {
    case 0: {
        int use_ws = (op >> 2) & 1, null_ij = ((op >> 3) & 3) == 0;
        size_t need = rn_row_diameter_workspace_size(s.rows, s.cols), have = need;
        void *ws = NULL;
        if (use_ws) {
            if (fz_u8(&in) % 8 == 0 && have) have -= 1;
            ws = fz_malloc(have);
            st = rn_row_diameter_ws(S, s.rows, s.cols, s.ld, ws, have, &D, null_ij ? NULL : &pi, null_ij ? NULL : &pj);
        } else {
            st = rn_row_diameter(S, s.rows, s.cols, s.ld, &D, null_ij ? NULL : &pi, null_ij ? NULL : &pj);
        }
        if (st != RN_OK) {
            FZ_CHECK(D == -1.0 && pi == 777 && pj == 777, "outputs written on error %d (%s)", (int)st, rn_status_string(st));
        } else {
            double best = 0.0;
            for (a = 0; a < s.rows; a++)
                for (b = a + 1; b < s.rows; b++) {
                    double d = pair_dist(S, s.ld, s.cols, a, b);
                    if (d > best) best = d;
                }
            FZ_CHECK(fabs(D - best) <= 1e-9 * best, "D %.17g, brute force %.17g (%zu x %zu)", D, best, s.rows, s.cols);
            if (!null_ij) {
                if (s.rows == 1) FZ_CHECK(pi == 0 && pj == 0, "pair for one row");
                else {
                    FZ_CHECK(pi < pj && pj < s.rows, "pair (%zu, %zu)", pi, pj);
                    FZ_CHECK(fabs(pair_dist(S, s.ld, s.cols, pi, pj) - D) <= 1e-9 * D, "pair does not attain D");
                }
            }
            if (!use_ws) { /* the _ws form: same bits */
                double D2 = -2.0;
                size_t i2 = 0, j2 = 0;
                void *w2 = fz_malloc(need);
                FZ_CHECK(rn_row_diameter_ws(S, s.rows, s.cols, s.ld, w2, need, &D2, &i2, &j2) == RN_OK, "_ws failed");
                FZ_CHECK(memcmp(&D, &D2, sizeof D) == 0 && (null_ij || (i2 == pi && j2 == pj)), "_ws differs");
                free(w2);
            }
        }
        free(ws);
        break;
    }
    case 1:
        st = rn_row_diameter_bounds(S, s.rows, s.cols, s.ld, &lo, &hi);
        if (st != RN_OK) FZ_CHECK(lo == -1.0 && hi == -1.0, "bounds written on error %d", (int)st);
        else {
            double Dx = -1.0, lo2 = -1.0, hi2 = -1.0;
            size_t wb = rn_row_diameter_bounds_workspace_size(s.cols);
            void *wsb = fz_malloc(wb);
            /* the _ws form: the same bits, in the workspace its query sizes */
            FZ_CHECK(rn_row_diameter_bounds_ws(S, s.rows, s.cols, s.ld, &lo2, &hi2, wsb, wb) == RN_OK &&
                         lo2 == lo && hi2 == hi, "_ws bracket %.17g %.17g vs %.17g %.17g", lo2, hi2, lo, hi);
            free(wsb);
            FZ_CHECK(rn_row_diameter(S, s.rows, s.cols, s.ld, &Dx, NULL, NULL) == RN_OK, "diameter failed");
            FZ_CHECK(lo <= Dx * (1 + 1e-9) && Dx <= hi * (1 + 1e-9) + 1e-300 && hi <= 2 * lo * (1 + 1e-9) + 1e-300,
                     "bracket lo %.17g D %.17g hi %.17g", lo, Dx, hi);
        }
        break;
    default: {
        static const double ord_r[] = {1.0, 0.0, 2.5, 1e-3};
        size_t i = fz_u8(&in) % (s.bogus ? 4 : s.rows + 1), j = fz_u8(&in) % (s.bogus ? 4 : s.rows + 1);
        double radius = fz_param(&in, ord_r, 4);
        size_t nc = s.bogus ? 4 : s.cols, k;
        float *h = (float *)fz_malloc(nc * sizeof(float));
        fz_snap sh;
        for (k = 0; k < nc; k++) h[k] = 3.0f;
        sh = fz_take_snap(h, nc * sizeof(float));
        st = rn_worst_hidden_state(S, s.rows, s.cols, s.ld, i, j, radius, h);
        /* it reads rows i and j only, and checks those for NaN/Inf */
        if (!s.bogus && i < s.rows && j < s.rows)
            finite = fz_all_finite_f(S + i * s.ld, s.cols) && fz_all_finite_f(S + j * s.ld, s.cols);
        if (!s.bogus && (i >= s.rows || j >= s.rows)) FZ_CHECK(st != RN_OK, "row index out of range accepted");
        if (st != RN_OK) FZ_CHECK(fz_snap_same(&sh), "h written on error %d", (int)st);
        else if (fz_valgen_tame(&g) && g.mode != 9 && g.mode != 10) {
            double nn = 0.0;
            for (k = 0; k < nc; k++) nn += (double)h[k] * h[k];
            nn = sqrt(nn);
            /* each entry is the float nearest its exact value: relative float precision, and
             * at most half the smallest subnormal (2^-150) absolute per entry once radius nears
             * the subnormal range (a radius of 8e-46 gives one entry of 2^-149) */
            FZ_CHECK(nn == 0.0 || fabs(nn - radius) <= 1e-5 * radius + sqrt((double)nc) * ldexp(1.0, -150),
                     "||h|| %.17g, radius %.17g", nn, radius);
        }
        fz_snap_free(&sh);
        free(h);
        break;
    }
    }
    if (s.bogus || !finite) FZ_CHECK(st != RN_OK, "invalid sizes or NaN/Inf accepted");
    FZ_CHECK(fz_snap_same(&snS), "S changed");
    fz_snap_free(&snS);
    free(S);
    return 0;
}
