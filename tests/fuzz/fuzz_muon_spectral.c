/* fuzz_muon_spectral.c - muon_singular_values, muon_singular_values_ws, muon_singular_values_workspace_size,
 * muon_top_singular_pair, muon_spectral_cap, muon_min_entropy, muon_spectral_decomposition.
 * Checks: outputs untouched on an error, the matrix never changes (muon_spectral_cap: D only on
 * OK); invalid sizes and NaN/Inf in the matrix never OK (except muon_spectral_cap, which does
 * not check D); singular values non-negative, non-increasing and finite for finite input, their
 * squares summing to ||M||_F^2 (tame values); the top pair's sigma <= sigma_1 (1e-6 margin). */
#include "muon.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    uint8_t op = fz_u8(&in);
    fz_shape s = fz_take_shape(&in, 16, 16);
    fz_valgen g = fz_take_valgen(&in);
    float *M = fz_matrix(&s, &g, &in);
    size_t mn = s.bogus ? 4 : (s.rows < s.cols ? s.rows : s.cols), i, j;
    size_t nr = s.bogus ? 4 : s.rows, nc = s.bogus ? 4 : s.cols;
    double *sv = (double *)fz_malloc(mn * sizeof(double)), *u = (double *)fz_malloc(nr * sizeof(double));
    double *v = (double *)fz_malloc(nc * sizeof(double)), scalar = -3.0;
    fz_snap snM = fz_take_snap(M, s.alloc * sizeof(float)), snOut;
    muon_status st;
    int finite = fz_matrix_finite(M, &s), checks_matrix = 1;
    muon_decomposition dec;
    static const double ord_sigma[] = {1.0, 2.5, 0.1, 1e-3};

    for (i = 0; i < mn; i++) sv[i] = -1.0;
    for (i = 0; i < nr; i++) u[i] = -1.0;
    for (i = 0; i < nc; i++) v[i] = fz_u8(&in) % 3 ? (double)fz_value(&g, &in, i) : 0.0;
    memset(&dec, 0x5a, sizeof dec);
    switch (op % 5) {
    case 0: { /* singular values, allocating or _ws */
        snOut = fz_take_snap(sv, mn * sizeof(double));
        if (op & 8) {
            size_t need = muon_singular_values_workspace_size(s.rows, s.cols), have = (op & 16) && need ? need - 1 : need;
            void *ws = fz_malloc(have);
            st = muon_singular_values_ws(M, s.rows, s.cols, s.ld, sv, ws, have);
            free(ws);
        } else {
            st = muon_singular_values(M, s.rows, s.cols, s.ld, sv);
        }
        if (st == MUON_OK) {
            double ss = 0.0, fro = 0.0;
            for (i = 0; i < mn; i++) {
                FZ_CHECK(sv[i] >= 0.0 && (i == 0 || sv[i] <= sv[i - 1]), "sv[%zu] = %.17g not sorted/non-negative", i, sv[i]);
                ss += sv[i] * sv[i];
            }
            for (i = 0; i < s.rows; i++)
                for (j = 0; j < s.cols; j++) fro += (double)M[i * s.ld + j] * M[i * s.ld + j];
            if (fz_valgen_tame(&g) && g.mode != 9 && g.mode != 10)
                FZ_CHECK(fabs(ss - fro) <= 1e-9 * fro + 1e-300, "sum sv^2 %.17g vs ||M||_F^2 %.17g", ss, fro);
        }
        break;
    }
    case 1: { /* top singular pair */
        int iters = (int)(fz_u8(&in) % 40) - 1;
        double *both = (double *)fz_malloc((nr + nc + 1) * sizeof(double));
        fz_snap su = fz_take_snap(u, nr * sizeof(double)), sv2 = fz_take_snap(v, nc * sizeof(double));
        st = muon_top_singular_pair(M, s.rows, s.cols, s.ld, iters, u, v, &scalar);
        if (st != MUON_OK) FZ_CHECK(fz_snap_same(&su) && fz_snap_same(&sv2) && scalar == -3.0, "pair written on error %d", (int)st);
        else {
            double sv1[16];
            FZ_CHECK(scalar >= 0.0 && scalar == scalar, "sigma %.17g", scalar);
            if (fz_valgen_tame(&g) && muon_singular_values(M, s.rows, s.cols, s.ld, sv1) == MUON_OK)
                FZ_CHECK(scalar <= sv1[0] * (1.0 + 1e-6) + 1e-300, "power sigma %.17g > sigma_1 %.17g", scalar, sv1[0]);
        }
        fz_snap_free(&su);
        fz_snap_free(&sv2);
        free(both);
        snOut = fz_take_snap(sv, 0);
        break;
    }
    case 2: { /* spectral cap on D = M (D is modified on OK) with unit-ish u, v */
        int mode = (int)(fz_u8(&in) % 4);
        double growth = -5.0;
        for (i = 0; i < nr; i++) u[i] = (double)fz_value(&g, &in, i);
        checks_matrix = 0;
        snOut = fz_take_snap(&growth, sizeof growth);
        st = muon_spectral_cap(M, s.rows, s.cols, s.ld, u, v, (muon_cap_mode)mode, (op & 8) ? NULL : &growth);
        if (st != MUON_OK) FZ_CHECK(fz_snap_same(&snM), "D changed on error %d", (int)st);
        if (st == MUON_OK && mode == MUON_CAP_OFF) FZ_CHECK(fz_snap_same(&snM), "CAP_OFF changed D");
        if (st != MUON_OK) FZ_CHECK(fz_snap_same(&snOut), "growth written on error");
        fz_snap_free(&snOut);
        snOut = fz_take_snap(sv, 0);
        break;
    }
    case 3: { /* min-entropy */
        double sigma1 = fz_param(&in, ord_sigma, 4);
        snOut = fz_take_snap(&scalar, sizeof scalar);
        st = muon_min_entropy(M, s.rows, s.cols, s.ld, sigma1, &scalar);
        if (st != MUON_OK) FZ_CHECK(scalar == -3.0, "h written on error %d", (int)st);
        break;
    }
    default: { /* spectral decomposition */
        muon_decomposition d0 = dec;
        snOut = fz_take_snap(&dec, 0);
        st = muon_spectral_decomposition(M, s.rows, s.cols, s.ld, &dec);
        if (st != MUON_OK) FZ_CHECK(memcmp(&d0, &dec, sizeof dec) == 0, "decomposition written on error %d", (int)st);
        else if (fz_valgen_tame(&g) && g.mode != 10)
            FZ_CHECK(dec.coherence >= 1.0 - 1e-6 && dec.coherence <= sqrt((double)s.rows) * (1.0 + 1e-6),
                     "coherence %.17g outside [1, sqrt(rows)]", dec.coherence);
        break;
    }
    }
    if (s.bogus) FZ_CHECK(st != MUON_OK, "invalid sizes accepted");
    if (checks_matrix) {
        FZ_CHECK(fz_snap_same(&snM), "matrix changed (status %d)", (int)st);
        if (!finite && op % 5 != 2) FZ_CHECK(st != MUON_OK, "NaN/Inf accepted");
    }
    if (st != MUON_OK) FZ_CHECK(fz_snap_same(&snOut), "output written on error %d", (int)st);
    fz_snap_free(&snOut);
    fz_snap_free(&snM);
    free(M);
    free(sv);
    free(u);
    free(v);
    return 0;
}
