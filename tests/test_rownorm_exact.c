/* Tests of the certified exact diameter-constrained step (SPEC 1.4): rn_exact_step[_ws].
 * References are float64 computations written here from the math: brute-force diameters, the
 * flow constraint, RowNorm's decrease (eta/2) sum ||g_i - gbar||, the regular simplex value and
 * Jung's bound sqrt((k+1)/(2k)). */
#include <stdlib.h>

/* an allocator that can be told to fail, to test RN_ERR_NOMEM */
static int t_fail_alloc;
static void *t_malloc(size_t n) { return t_fail_alloc ? NULL : malloc(n); }
#define RN_MALLOC(sz) t_malloc(sz)
#define RN_FREE(p) free(p)

#define ROWNORM_IMPLEMENTATION
#include "rownorm.h"
#include "tests/test.h"

#include <float.h>
#include <stdint.h>

#define MAXV 64
#define POISON 0x5a

/* ---- float64 references -------------------------------------------------------------------- */

/* centred copy of G in double */
static void ref_centre(const float *G, size_t V, size_t d, size_t ldg, double *gc)
{
    size_t i, c;
    for (c = 0; c < d; c++) {
        double m = 0.0;
        for (i = 0; i < V; i++) m += G[i * ldg + c];
        m /= (double)V;
        for (i = 0; i < V; i++) gc[i * d + c] = G[i * ldg + c] - m;
    }
}

static double ref_norm(const double *a, size_t n)
{
    double s = 0.0;
    size_t i;
    for (i = 0; i < n; i++) s += a[i] * a[i];
    return sqrt(s);
}

/* RowNorm's first-order decrease (eta/2) sum_i ||g_i - gbar||, epsilon = 0 */
static double ref_rownorm_decrease(const float *G, size_t V, size_t d, size_t ldg, double eta)
{
    double *gc = (double *)malloc(V * d * sizeof(double)), s = 0.0;
    size_t i;
    ref_centre(G, V, d, ldg, gc);
    for (i = 0; i < V; i++) s += ref_norm(gc + i * d, d);
    free(gc);
    return 0.5 * eta * s;
}

/* RowNorm's decrease from the library's own step: S_RN = -(eta/2) P RN_0(P G) by
 * rn_projected_rownorm (float), decrease -<G, S_RN> in double; also checks D(S_RN) <= eta with
 * rn_row_diameter. Returns -1 on a library error. */
static double lib_rownorm_decrease(const float *G, size_t V, size_t d, size_t ldg, double eta)
{
    float *out = (float *)malloc(V * d * sizeof(float));
    double dec = 0.0, D = 0.0;
    size_t i, c;
    if (rn_projected_rownorm(G, V, d, ldg, 0.0f, out, d) != RN_OK) dec = -1.0;
    for (i = 0; i < V && dec >= 0.0; i++)
        for (c = 0; c < d; c++) dec += 0.5 * eta * (double)G[i * ldg + c] * out[i * d + c];
    if (dec >= 0.0 && rn_row_diameter(out, V, d, d, &D, NULL, NULL) != RN_OK) dec = -1.0;
    if (dec >= 0.0 && !(0.5 * eta * D <= eta * (1.0 + 1e-6))) dec = -2.0;
    free(out);
    return dec;
}

/* brute-force D(S), scaled by the largest |entry| so that extreme scales neither under- nor
 * overflow */
static double ref_diameter(const double *S, size_t V, size_t d, size_t lds)
{
    double D = 0.0, m = 0.0;
    size_t i, j, c;
    for (i = 0; i < V; i++)
        for (c = 0; c < d; c++) m = fabs(S[i * lds + c]) > m ? fabs(S[i * lds + c]) : m;
    if (m == 0.0) return 0.0;
    for (i = 0; i < V; i++)
        for (j = i + 1; j < V; j++) {
            double s = 0.0;
            for (c = 0; c < d; c++) {
                double u = S[i * lds + c] / m - S[j * lds + c] / m;
                s += u * u;
            }
            if (sqrt(s) > D) D = sqrt(s);
        }
    return D * m;
}

/* -<G, S> with the original (uncentred) G */
static double ref_decrease(const float *G, size_t V, size_t d, size_t ldg, const double *S, size_t lds)
{
    double s = 0.0;
    size_t i, c;
    for (i = 0; i < V; i++)
        for (c = 0; c < d; c++) s -= (double)G[i * ldg + c] * S[i * lds + c];
    return s;
}

static size_t pair_index(size_t i, size_t j, size_t V) { return i * V - i * (i + 1) / 2 + (j - i - 1); }

/* random orthonormal columns: Q is d x m (row-major), m <= d, Gram-Schmidt twice in double */
static void ref_orthonormal(t_rng *r, size_t d, size_t m, double *Q)
{
    size_t a, b, c, pass;
    for (a = 0; a < m; a++) {
        double nrm;
        for (c = 0; c < d; c++) Q[c * m + a] = t_rng_normal(r);
        for (pass = 0; pass < 2; pass++)
            for (b = 0; b < a; b++) {
                double dot = 0.0;
                for (c = 0; c < d; c++) dot += Q[c * m + a] * Q[c * m + b];
                for (c = 0; c < d; c++) Q[c * m + a] -= dot * Q[c * m + b];
            }
        nrm = 0.0;
        for (c = 0; c < d; c++) nrm += Q[c * m + a] * Q[c * m + a];
        nrm = sqrt(nrm);
        for (c = 0; c < d; c++) Q[c * m + a] /= nrm;
    }
}

/* G = A B, A V x k normal, B k x d normal (rank <= k); if exact, B is zero past column k after a
 * fixed column permutation with sign flips, so the float G has exact rank <= k. */
static void make_lowrank(t_rng *r, size_t V, size_t d, size_t k, int exact, float *G, size_t ldg)
{
    double *A = (double *)malloc(V * k * sizeof(double)), *B = (double *)calloc(k * d, sizeof(double));
    size_t i, a, c;
    for (i = 0; i < V * k; i++) A[i] = t_rng_normal(r);
    if (exact) {
        for (a = 0; a < k; a++) {
            size_t col = (a * 7 + 3) % d; /* distinct for d not a multiple of 7, d > k */
            while (1) {
                int used = 0;
                size_t b;
                for (b = 0; b < a; b++)
                    if (B[b * d + col] != 0.0) used = 1;
                if (!used) break;
                col = (col + 1) % d;
            }
            B[a * d + col] = (a & 1) ? -1.0 : 1.0;
        }
    } else {
        for (i = 0; i < k * d; i++) B[i] = t_rng_normal(r);
    }
    for (i = 0; i < V; i++)
        for (c = 0; c < d; c++) {
            double s = 0.0;
            for (a = 0; a < k; a++) s += A[i * k + a] * B[a * d + c];
            G[i * ldg + c] = (float)s;
        }
    free(A);
    free(B);
}

/* Every property of a returned certificate, checked against the references. */
static void check_certificate(const float *G, size_t V, size_t d, size_t ldg, double eta, double tol,
                              const double *S, size_t lds, const double *flow, size_t ldf,
                              const rn_exact_result *res)
{
    double D = ref_diameter(S, V, d, lds), dec = ref_decrease(G, V, d, ldg, S, lds);
    double *gc = (double *)malloc(V * d * sizeof(double)), *sum = (double *)calloc(V * d, sizeof(double));
    double scale = 0.0, tot = 0.0, maxerr = 0.0, colsum = 0.0;
    size_t i, j, c;
    CHECK(res->decrease_lo <= res->decrease_hi);
    CHECK_MSG(res->decrease_hi - res->decrease_lo <= tol * res->decrease_hi, "lo %.17g hi %.17g",
              res->decrease_lo, res->decrease_hi);
    CHECK_MSG(D <= eta * (1.0 + 1e-12), "D %.17g eta %.17g", D, eta);
    CHECK_NEAR(res->diameter, D, 0.0, 1e-12);
    CHECK_NEAR(dec, res->decrease_lo, 1e-12 * res->decrease_hi, 1e-10);
    CHECK_NEAR(res->decrease_rownorm, ref_rownorm_decrease(G, V, d, ldg, eta), 0.0, 1e-12);
    /* Delta* >= RowNorm's decrease (RowNorm's step is feasible) */
    CHECK(res->decrease_rownorm <= res->decrease_hi * (1.0 + 1e-12));
    /* 1^T S = 0 */
    for (c = 0; c < d; c++) {
        double m = 0.0;
        for (i = 0; i < V; i++) m += S[i * lds + c];
        if (fabs(m) > colsum) colsum = fabs(m);
    }
    CHECK(colsum <= 1e-12 * eta * (double)V);
    if (flow && V > 1) {
        ref_centre(G, V, d, ldg, gc);
        for (i = 0; i < V * d; i++) scale = fabs(gc[i]) > scale ? fabs(gc[i]) : scale;
        for (i = 0; i < V; i++)
            for (j = i + 1; j < V; j++) {
                const double *y = flow + pair_index(i, j, V) * ldf;
                double s = 0.0;
                for (c = 0; c < d; c++) {
                    sum[i * d + c] += y[c];
                    sum[j * d + c] -= y[c];
                    s += y[c] * y[c];
                }
                tot += sqrt(s);
            }
        for (i = 0; i < V * d; i++) {
            double e = fabs(sum[i] - gc[i]);
            if (e > maxerr) maxerr = e;
        }
        CHECK_MSG(maxerr <= 1e-11 * scale + 1e-300, "flow constraint error %.3g (scale %.3g)", maxerr, scale);
        CHECK_NEAR(eta * tot, res->decrease_hi, 0.0, 1e-12);
        /* weak duality between the two certificates, from the math (independent of the solver) */
        CHECK(dec <= eta * tot * (1.0 + 1e-12) + 1e-300);
    }
    free(gc);
    free(sum);
}

/* Solve with S and flow and check everything; returns the result. */
static rn_exact_result solve_checked(const float *G, size_t V, size_t d, size_t ldg, double eta, double tol,
                                     double *S_out)
{
    size_t P = V * (V - 1) / 2;
    double *S = (double *)malloc(V * d * sizeof(double));
    double *flow = (double *)malloc((P ? P : 1) * d * sizeof(double));
    rn_exact_result res;
    rn_status st;
    memset(&res, 0, sizeof res);
    st = rn_exact_step(G, V, d, ldg, eta, tol, S, d, flow, d, &res);
    CHECK_MSG(st == RN_OK, "status %d (%s) V=%zu d=%zu", (int)st, rn_status_string(st), V, d);
    if (st == RN_OK) check_certificate(G, V, d, ldg, eta, tol, S, d, flow, d, &res);
    if (S_out) memcpy(S_out, S, V * d * sizeof(double));
    free(S);
    free(flow);
    return res;
}

/* ---- tests ----------------------------------------------------------------------------------- */

static void test_certificate_random(void)
{
    static const size_t cases[][2] = {{3, 4},   {4, 2},   {5, 9},  {7, 3}, {8, 16},
                                     {10, 10}, {12, 20}, {12, 5}, {20, 24}, {64, 2}};
    t_rng r = {11};
    size_t t, i;
    for (t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        size_t V = cases[t][0], d = cases[t][1];
        float *G = (float *)malloc(V * d * sizeof(float));
        rn_exact_result res;
        for (i = 0; i < V * d; i++) G[i] = (float)t_rng_normal(&r);
        res = solve_checked(G, V, d, d, 0.7, 1e-6, NULL);
        CHECK(res.rank == (V - 1 < d ? V - 1 : d));
        free(G);
    }
}

static void test_two_rows_ratio_one(void)
{
    t_rng r = {12};
    size_t t, c, d = 6;
    for (t = 0; t < 5; t++) {
        float G[12];
        double eta = 0.1 + t, want = 0.0, rn;
        rn_exact_result res;
        for (c = 0; c < 12; c++) G[c] = (float)(t_rng_normal(&r) + (c < 6 ? 3.0 : 0.0));
        for (c = 0; c < d; c++) want += 0.25 * ((double)G[c] - G[d + c]) * ((double)G[c] - G[d + c]);
        want = eta * sqrt(want); /* Delta* = eta ||g_1 - gbar|| = eta ||g_1 - g_2|| / 2 */
        res = solve_checked(G, 2, d, d, eta, 1e-6, NULL);
        rn = ref_rownorm_decrease(G, 2, d, d, eta);
        CHECK_NEAR(res.decrease_lo, want, 0.0, 1e-12);
        CHECK_NEAR(res.decrease_hi, want, 0.0, 1e-12);
        CHECK_NEAR(rn / res.decrease_hi, 1.0, 0.0, 1e-6);
        CHECK_NEAR(rn / res.decrease_lo, 1.0, 0.0, 1e-6);
        CHECK_NEAR(lib_rownorm_decrease(G, 2, d, d, eta) / res.decrease_hi, 1.0, 0.0, 2e-6);
    }
}

/* Rows = vertices of a centred regular k-simplex (V = k+1), embedded by a random isometry into
 * d > k (and, for one case, translated): ratio = sqrt((k+1)/(2k)) exactly. */
static void test_regular_simplex(void)
{
    static const size_t ks[] = {2, 3, 5, 8};
    t_rng r = {13};
    size_t t, i, a, c;
    for (t = 0; t < sizeof ks / sizeof ks[0]; t++) {
        size_t k = ks[t], V = k + 1, d = k + 3, ldg = d + 2;
        double *Q = (double *)malloc(d * V * sizeof(double));
        float *G = (float *)malloc(V * ldg * sizeof(float));
        double R = 0.5 + (double)t, eta = 1.3, ratio_want = sqrt((k + 1.0) / (2.0 * k));
        double rn, dstar_want;
        rn_exact_result res;
        ref_orthonormal(&r, d, V, Q);
        for (i = 0; i < V; i++)
            for (c = 0; c < ldg; c++) {
                double s = 0.0;
                if (c >= d) { G[i * ldg + c] = NAN; continue; } /* padding: never read */
                for (a = 0; a < V; a++) s += Q[c * V + a] * ((a == i ? 1.0 : 0.0) - 1.0 / (double)V);
                G[i * ldg + c] = (float)(R * s + (t == 1 ? 2.0 * (double)c : 0.0));
            }
        res = solve_checked(G, V, d, ldg, eta, 1e-6, NULL);
        rn = ref_rownorm_decrease(G, V, d, ldg, eta);
        /* ||v_i|| = sqrt(k/(k+1)) R: RowNorm (eta/2)(k+1) sqrt(k/(k+1)) R, and
         * Delta* = RN / ratio = (eta/2) sqrt(2) k R */
        CHECK_NEAR(rn, 0.5 * eta * (k + 1.0) * sqrt(k / (k + 1.0)) * R, 0.0, 1e-6);
        dstar_want = 0.5 * eta * sqrt(2.0) * (double)k * R;
        CHECK_NEAR(res.decrease_hi, dstar_want, 0.0, 2e-6);
        CHECK_NEAR(rn / res.decrease_hi, ratio_want, 0.0, 1e-5);
        CHECK_NEAR(rn / res.decrease_lo, ratio_want, 0.0, 1e-5);
        CHECK_NEAR(lib_rownorm_decrease(G, V, d, ldg, eta), rn, 0.0, 1e-6);
        CHECK_NEAR(lib_rownorm_decrease(G, V, d, ldg, eta) / res.decrease_hi, ratio_want, 0.0, 1e-5);
        CHECK(res.rank == k);
        free(Q);
        free(G);
    }
}

/* Jung's bound on random G of several ranks (exact low rank, and rounded low rank whose float
 * noise the solver must recognise as negligible at rel_tol 1e-6). */
static void test_ratio_bound_ranks(void)
{
    static const size_t cases[][4] = {/* V, d, k, exact */
                                      {6, 10, 1, 1},  {9, 12, 2, 1},  {16, 20, 3, 1}, {24, 30, 2, 1},
                                      {40, 24, 3, 1}, {64, 12, 2, 1}, {20, 24, 3, 0}, {10, 4, 4, 0},
                                      {11, 30, 10, 0}};
    t_rng r = {14};
    size_t t;
    for (t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        size_t V = cases[t][0], d = cases[t][1], k = cases[t][2];
        float *G = (float *)malloc(V * d * sizeof(float));
        rn_exact_result res;
        double rn, bound;
        make_lowrank(&r, V, d, k, (int)cases[t][3], G, d);
        res = solve_checked(G, V, d, d, 1.0, 1e-6, NULL);
        rn = ref_rownorm_decrease(G, V, d, d, 1.0);
        bound = sqrt((k + 1.0) / (2.0 * k));
        CHECK_MSG(res.rank == k, "rank %zu want %zu (V=%zu d=%zu)", res.rank, k, V, d);
        CHECK_MSG(rn / res.decrease_hi >= bound - 1e-6, "ratio %.9f bound %.9f k=%zu", rn / res.decrease_hi,
                  bound, k);
        CHECK(rn / res.decrease_lo <= 1.0 + 1e-6);
        /* the same with the library's RowNorm step (float32: 1e-6 relative) */
        CHECK_NEAR(lib_rownorm_decrease(G, V, d, d, 1.0), rn, 0.0, 1e-6);
        CHECK(lib_rownorm_decrease(G, V, d, d, 1.0) / res.decrease_hi >= bound - 2e-6);
        if (k == 1) CHECK_NEAR(rn / res.decrease_hi, 1.0, 0.0, 1e-6);
        free(G);
    }
}

/* d = 1: Delta* = (eta/2) sum |g_i - gbar| = RowNorm's decrease. */
static void test_one_column(void)
{
    float G[9] = {1.0f, -2.0f, 0.5f, 3.0f, 0.0f, -1.25f, 7.0f, 2.0f, -4.0f};
    rn_exact_result res = solve_checked(G, 9, 1, 1, 2.0, 1e-6, NULL);
    CHECK_NEAR(res.decrease_lo, ref_rownorm_decrease(G, 9, 1, 1, 2.0), 0.0, 1e-6);
    CHECK_NEAR(res.decrease_hi, ref_rownorm_decrease(G, 9, 1, 1, 2.0), 0.0, 1e-6);
    CHECK(res.rank == 1);
}

/* Delta* is invariant under an orthogonal map of the columns (exact: permutation with signs;
 * generic rotation up to float rounding) and under a common row shift (dyadic, exact in float). */
static void test_invariances(void)
{
    t_rng r = {15};
    size_t V = 7, d = 5, d2 = 8, i, c, a;
    float G[7 * 5], G2[7 * 5], G3[7 * 8], G4[7 * 5];
    double Q[8 * 5], sh[5];
    rn_exact_result r0, r1, r2, r3;
    for (i = 0; i < V * d; i++) G[i] = (float)(floor(t_rng_normal(&r) * 1024.0) / 1024.0);
    for (c = 0; c < d; c++) sh[c] = floor(t_rng_normal(&r) * 64.0) / 16.0;
    for (i = 0; i < V; i++)
        for (c = 0; c < d; c++) {
            size_t src = (c * 2 + 1) % d; /* permutation of 5 columns */
            G2[i * d + c] = (c & 1) ? -G[i * d + src] : G[i * d + src];
            G4[i * d + c] = (float)(G[i * d + c] + sh[c]);
        }
    ref_orthonormal(&r, d2, d, Q);
    for (i = 0; i < V; i++)
        for (c = 0; c < d2; c++) {
            double s = 0.0;
            for (a = 0; a < d; a++) s += Q[c * d + a] * G[i * d + a];
            G3[i * d2 + c] = (float)s;
        }
    r0 = solve_checked(G, V, d, d, 1.0, 1e-7, NULL);
    r1 = solve_checked(G2, V, d, d, 1.0, 1e-7, NULL);
    r2 = solve_checked(G3, V, d2, d2, 1.0, 1e-7, NULL);
    r3 = solve_checked(G4, V, d, d, 1.0, 1e-7, NULL);
    /* the intervals [lo, hi] all contain the same Delta* (rotation: up to float rounding) */
    CHECK_NEAR(r1.decrease_hi, r0.decrease_hi, 0.0, 2e-7);
    CHECK_NEAR(r3.decrease_hi, r0.decrease_hi, 0.0, 2e-7);
    CHECK_NEAR(r2.decrease_hi, r0.decrease_hi, 0.0, 1e-6);
    CHECK(r1.decrease_lo <= r0.decrease_hi * (1 + 1e-12) && r0.decrease_lo <= r1.decrease_hi * (1 + 1e-12));
    CHECK(r3.decrease_lo <= r0.decrease_hi * (1 + 1e-12) && r0.decrease_lo <= r3.decrease_hi * (1 + 1e-12));
    CHECK(r2.rank == r0.rank);
}

/* Delta*(c G, eta) = c Delta*(G, eta) and Delta*(G, c eta) = c Delta*(G, eta). */
static void test_linear_scaling(void)
{
    t_rng r = {16};
    size_t V = 6, d = 4, i;
    float G[24], G8[24], G3[24];
    rn_exact_result r0, r1, r2, r3, r4;
    for (i = 0; i < V * d; i++) {
        G[i] = (float)t_rng_normal(&r);
        G8[i] = G[i] * 8.0f;
        G3[i] = (float)(G[i] * 0.3);
    }
    r0 = solve_checked(G, V, d, d, 1.0, 1e-6, NULL);
    r1 = solve_checked(G8, V, d, d, 1.0, 1e-6, NULL);
    r2 = solve_checked(G, V, d, d, 0.25, 1e-6, NULL);
    r3 = solve_checked(G3, V, d, d, 1.0, 1e-6, NULL);
    r4 = solve_checked(G, V, d, d, 37.5, 1e-6, NULL);
    /* powers of two: the iterates are the same, the bounds scale exactly up to the last rounding */
    CHECK_NEAR(r1.decrease_lo, 8.0 * r0.decrease_lo, 0.0, 1e-13);
    CHECK_NEAR(r1.decrease_hi, 8.0 * r0.decrease_hi, 0.0, 1e-13);
    CHECK_NEAR(r2.decrease_lo, 0.25 * r0.decrease_lo, 0.0, 1e-13);
    CHECK_NEAR(r2.decrease_hi, 0.25 * r0.decrease_hi, 0.0, 1e-13);
    /* general factors: the certified intervals overlap and agree to the tolerance */
    CHECK_NEAR(r3.decrease_hi, 0.3 * r0.decrease_hi, 0.0, 2e-6);
    CHECK_NEAR(r4.decrease_hi, 37.5 * r0.decrease_hi, 0.0, 2e-6);
    CHECK(r4.decrease_lo <= 37.5 * r0.decrease_hi * (1 + 1e-12));
    CHECK(37.5 * r0.decrease_lo <= r4.decrease_hi * (1 + 1e-12));
}

/* Weak duality against random objects built from the math: any flow satisfying the constraint
 * costs >= lo; any feasible S (random points scaled to D <= eta, or RowNorm's step) gains <= hi. */
static void test_weak_duality_random(void)
{
    t_rng r = {17};
    size_t V = 8, d = 5, P = 28, i, j, c, trial;
    float G[40];
    double gc[40], y[28 * 5], res_r[40], S[40], eta = 0.9;
    rn_exact_result res;
    for (i = 0; i < V * d; i++) G[i] = (float)t_rng_normal(&r);
    res = solve_checked(G, V, d, d, eta, 1e-6, NULL);
    ref_centre(G, V, d, d, gc);
    for (trial = 0; trial < 20; trial++) {
        double cost = 0.0, D, gain = 0.0;
        for (i = 0; i < P * d; i++) y[i] = trial ? 0.3 * t_rng_normal(&r) : 0.0;
        memcpy(res_r, gc, sizeof gc);
        for (i = 0; i < V; i++)
            for (j = i + 1; j < V; j++)
                for (c = 0; c < d; c++) {
                    res_r[i * d + c] -= y[pair_index(i, j, V) * d + c];
                    res_r[j * d + c] += y[pair_index(i, j, V) * d + c];
                }
        for (i = 0; i < V; i++)
            for (j = i + 1; j < V; j++) {
                double s = 0.0;
                for (c = 0; c < d; c++) {
                    double v = y[pair_index(i, j, V) * d + c] + (res_r[i * d + c] - res_r[j * d + c]) / (double)V;
                    s += v * v;
                }
                cost += sqrt(s);
            }
        CHECK(eta * cost >= res.decrease_lo * (1 - 1e-12));
        for (i = 0; i < V * d; i++) S[i] = t_rng_normal(&r);
        D = ref_diameter(S, V, d, d);
        for (i = 0; i < V * d; i++) S[i] *= eta / D;
        for (i = 0; i < V * d; i++) gain -= gc[i] * S[i];
        CHECK(gain <= res.decrease_hi * (1 + 1e-12));
    }
    {   /* RowNorm's own step: S = -(eta/2) g_i/||g_i|| on centred rows */
        double gain = 0.0;
        for (i = 0; i < V; i++) {
            double nr = ref_norm(gc + i * d, d);
            for (c = 0; c < d; c++) S[i * d + c] = -0.5 * eta * gc[i * d + c] / nr;
        }
        CHECK(ref_diameter(S, V, d, d) <= eta * (1 + 1e-12));
        for (i = 0; i < V * d; i++) gain -= gc[i] * S[i];
        CHECK_NEAR(gain, ref_rownorm_decrease(G, V, d, d, eta), 0.0, 1e-12);
        CHECK(gain <= res.decrease_hi * (1 + 1e-12));
    }
}

static void test_edge_cases(void)
{
    double S[4 * 6], flow[6 * 6], z[6 * 6];
    rn_exact_result res;
    size_t i;
    {   /* V = 1: Delta* = 0, S = 0, flow has no rows and is not touched */
        float G[3] = {1.0f, -2.0f, 3.0f};
        memset(flow, POISON, sizeof flow);
        memcpy(z, flow, sizeof z);
        CHECK(rn_exact_step(G, 1, 3, 3, 1.0, 1e-6, S, 3, flow, 3, &res) == RN_OK);
        CHECK(res.decrease_lo == 0.0 && res.decrease_hi == 0.0 && res.diameter == 0.0 && res.rank == 0);
        CHECK(S[0] == 0.0 && S[1] == 0.0 && S[2] == 0.0);
        CHECK(memcmp(flow, z, sizeof z) == 0);
        CHECK(rn_exact_step(G, 1, 3, 3, 1.0, 1e-6, NULL, 0, NULL, 0, &res) == RN_OK);
    }
    {   /* G = 0 and G with identical rows: centred G is 0 */
        float G[4 * 6];
        int pass;
        for (pass = 0; pass < 2; pass++) {
            for (i = 0; i < 24; i++) G[i] = pass ? (float)(i % 6) - 2.5f : 0.0f;
            memset(S, POISON, sizeof S);
            memset(flow, POISON, sizeof flow);
            CHECK(rn_exact_step(G, 4, 6, 6, 1.0, 1e-6, S, 6, flow, 6, &res) == RN_OK);
            CHECK(res.decrease_lo == 0.0 && res.decrease_hi == 0.0 && res.rank == 0);
            for (i = 0; i < 24; i++) CHECK(S[i] == 0.0);
            for (i = 0; i < 36; i++) CHECK(flow[i] == 0.0);
        }
    }
    {   /* duplicated rows (rank deficient), d < V and d > V */
        t_rng r = {18};
        float G[10 * 3], H[5 * 12];
        for (i = 0; i < 15; i++) G[i] = (float)t_rng_normal(&r);
        memcpy(G + 15, G, 15 * sizeof(float));
        res = solve_checked(G, 10, 3, 3, 1.0, 1e-6, NULL);
        CHECK(res.rank == 3);
        for (i = 0; i < 60; i++) H[i] = (float)t_rng_normal(&r);
        res = solve_checked(H, 5, 12, 12, 1.0, 1e-6, NULL);
        CHECK(res.rank == 4);
    }
    {   /* rows equal to the mean row (zero centred rows), symmetric pairs */
        float G[5 * 3] = {1, 2, 0, -1, -2, 0, 0.5f, -3, 1, -0.5f, 3, -1, 0, 0, 0};
        res = solve_checked(G, 5, 3, 3, 1.0, 1e-6, NULL);
        CHECK(res.rank == 2);
    }
    {   /* rows with a large common component: centring in double keeps the small part */
        t_rng r = {19};
        float G[6 * 4], Gs[6 * 4];
        rn_exact_result r1, r2;
        for (i = 0; i < 24; i++) {
            G[i] = (float)(1000.0 + t_rng_normal(&r));
            Gs[i] = (float)((double)G[i] - 1000.0); /* exact */
        }
        r1 = solve_checked(G, 6, 4, 4, 1.0, 1e-6, NULL);
        r2 = solve_checked(Gs, 6, 4, 4, 1.0, 1e-6, NULL);
        CHECK_NEAR(r1.decrease_hi, r2.decrease_hi, 0.0, 2e-6);
    }
}

/* Loose tolerances are honoured (and cheaper); extreme but representable scales work. */
static void test_tolerance_and_scales(void)
{
    t_rng r = {22};
    size_t V = 9, d = 7, i;
    float G[63], Gs[63], Gb[63];
    rn_exact_result a, b, c, e;
    for (i = 0; i < V * d; i++) {
        G[i] = (float)t_rng_normal(&r);
        Gs[i] = ldexpf(G[i], -100); /* exact powers of two */
        Gb[i] = ldexpf(G[i], 100);
    }
    a = solve_checked(G, V, d, d, 1.0, 1e-6, NULL);
    b = solve_checked(G, V, d, d, 1.0, 1e-2, NULL);
    CHECK(b.newton_steps < a.newton_steps);
    CHECK(b.decrease_lo <= a.decrease_hi * (1 + 1e-12) && a.decrease_lo <= b.decrease_hi * (1 + 1e-12));
    c = solve_checked(Gs, V, d, d, 1e-200, 1e-6, NULL);
    e = solve_checked(Gb, V, d, d, 1e+200, 1e-6, NULL);
    CHECK_NEAR(c.decrease_hi, ldexp(a.decrease_hi, -100) * 1e-200, 0.0, 1e-12);
    CHECK_NEAR(e.decrease_hi, ldexp(a.decrease_hi, 100) * 1e+200, 0.0, 1e-12);
}

/* Tight tolerances: the exactly representable centred simplices e_i - 1/(k+1) (k + 1 = 4, 8)
 * reach Jung's ratio to 1e-9 at rel_tol 1e-10, and a random problem certifies 1e-10. */
static void test_tight_tolerance(void)
{
    static const size_t ks[] = {3, 7};
    t_rng r = {23};
    size_t t, i, c;
    float Gr[10 * 6];
    rn_exact_result res;
    for (t = 0; t < 2; t++) {
        size_t k = ks[t], V = k + 1, d = V + 1;
        float *G = (float *)malloc(V * d * sizeof(float));
        for (i = 0; i < V; i++)
            for (c = 0; c < d; c++) G[i * d + c] = (c < V) ? (float)((i == c ? 1.0 : 0.0) - 1.0 / (double)V) : 0.0f;
        res = solve_checked(G, V, d, d, 1.0, 1e-10, NULL);
        CHECK_NEAR(res.decrease_rownorm / res.decrease_hi, sqrt((k + 1.0) / (2.0 * k)), 0.0, 1e-9);
        CHECK_NEAR(res.decrease_rownorm / res.decrease_lo, sqrt((k + 1.0) / (2.0 * k)), 0.0, 1e-9);
        free(G);
    }
    for (i = 0; i < 60; i++) Gr[i] = (float)t_rng_normal(&r);
    res = solve_checked(Gr, 10, 6, 6, 1.0, 1e-10, NULL);
    CHECK(res.decrease_hi - res.decrease_lo <= 1e-10 * res.decrease_hi);
}

/* Leading dimensions: padding of G is never read (NaN there), padding of S and flow never written. */
static void test_leading_dimensions(void)
{
    t_rng r = {20};
    size_t V = 5, d = 3, ldg = 7, lds = 5, ldf = 4, P = 10, i, c;
    float G[5 * 7];
    double S[5 * 5], flow[10 * 4], Sd[5 * 3], fd[10 * 3];
    rn_exact_result res, res2;
    for (i = 0; i < V * ldg; i++) G[i] = (i % ldg) < d ? (float)t_rng_normal(&r) : NAN;
    memset(S, POISON, sizeof S);
    memset(flow, POISON, sizeof flow);
    CHECK(rn_exact_step(G, V, d, ldg, 1.0, 1e-6, S, lds, flow, ldf, &res) == RN_OK);
    check_certificate(G, V, d, ldg, 1.0, 1e-6, S, lds, flow, ldf, &res);
    for (i = 0; i < V; i++)
        for (c = d; c < lds; c++) {
            unsigned char b[sizeof(double)];
            memcpy(b, &S[i * lds + c], sizeof b);
            CHECK(b[0] == POISON && b[7] == POISON);
        }
    for (i = 0; i < P; i++) {
        unsigned char b[sizeof(double)];
        memcpy(b, &flow[i * ldf + 3], sizeof b);
        CHECK(b[0] == POISON && b[7] == POISON);
    }
    /* the same numbers as with packed storage */
    {
        float Gp[15];
        for (i = 0; i < V; i++)
            for (c = 0; c < d; c++) Gp[i * d + c] = G[i * ldg + c];
        CHECK(rn_exact_step(Gp, V, d, d, 1.0, 1e-6, Sd, d, fd, d, &res2) == RN_OK);
        CHECK(res2.decrease_lo == res.decrease_lo && res2.decrease_hi == res.decrease_hi);
        for (i = 0; i < V; i++)
            for (c = 0; c < d; c++) CHECK(Sd[i * d + c] == S[i * lds + c]);
    }
}

/* _ws form: same bits as the allocating form, any alignment, exact size accepted, size-1 refused;
 * deterministic across runs. */
static void test_workspace(void)
{
    t_rng r = {21};
    size_t V = 9, d = 6, need = rn_exact_step_workspace_size(9, 6), i;
    float G[54];
    double S1[54], S2[54], f1[36 * 6], f2[36 * 6];
    rn_exact_result a, b;
    unsigned char *buf = (unsigned char *)malloc(need + 16);
    for (i = 0; i < 54; i++) G[i] = (float)t_rng_normal(&r);
    CHECK(need > 0);
    CHECK(rn_exact_step_workspace_size(0, 4) == 0);
    CHECK(rn_exact_step_workspace_size(4, 0) == 0);
    CHECK(rn_exact_step_workspace_size(65, 4) == 0);
    CHECK(rn_exact_step_workspace_size(64, (size_t)-1 / 8) == 0);
    CHECK(rn_exact_step_workspace_size(64, 4) > 0);
    CHECK(rn_exact_step(G, V, d, d, 1.0, 1e-6, S1, d, f1, d, &a) == RN_OK);
    CHECK(rn_exact_step_ws(G, V, d, d, 1.0, 1e-6, S2, d, f2, d, &b, buf + 3, need) == RN_OK);
    CHECK(memcmp(S1, S2, sizeof S1) == 0 && memcmp(f1, f2, sizeof f1) == 0);
    CHECK(a.decrease_lo == b.decrease_lo && a.decrease_hi == b.decrease_hi && a.newton_steps == b.newton_steps);
    CHECK(rn_exact_step_ws(G, V, d, d, 1.0, 1e-6, S2, d, f2, d, &b, buf, need - 1) == RN_ERR_SIZE);
    free(buf);
}

/* Every error status, with S, flow and res byte-for-byte untouched. */
static void test_errors_untouched(void)
{
    float G[4 * 3] = {1, 2, 3, -1, 0, 2, 5, -3, 1, 0, 0, 1}, Gbad[12];
    double S[12], flow[6 * 3];
    unsigned char sS[sizeof S], sF[sizeof flow], sR[sizeof(rn_exact_result)];
    rn_exact_result res;
    size_t need = rn_exact_step_workspace_size(4, 3);
    unsigned char *ws = (unsigned char *)malloc(need);
    double *big = (double *)malloc(64 * sizeof(double));
    int t;
    memset(S, POISON, sizeof S);
    memset(flow, POISON, sizeof flow);
    memset(&res, POISON, sizeof res);
    memcpy(sS, S, sizeof S);
    memcpy(sF, flow, sizeof flow);
    memcpy(sR, &res, sizeof res);
#define UNTOUCHED() CHECK(memcmp(S, sS, sizeof S) == 0 && memcmp(flow, sF, sizeof flow) == 0 && \
                          memcmp(&res, sR, sizeof res) == 0)
#define EXPECT(call, want) do { rn_status st_ = (call); CHECK_MSG(st_ == (want), "%s: got %d (%s)", #call, (int)st_, \
                                rn_status_string(st_)); UNTOUCHED(); } while (0)
    EXPECT(rn_exact_step(NULL, 4, 3, 3, 1.0, 1e-6, S, 3, flow, 3, &res), RN_ERR_NULL);
    EXPECT(rn_exact_step(G, 4, 3, 3, 1.0, 1e-6, S, 3, flow, 3, NULL), RN_ERR_NULL);
    EXPECT(rn_exact_step_ws(G, 4, 3, 3, 1.0, 1e-6, S, 3, flow, 3, &res, NULL, need), RN_ERR_NULL);
    EXPECT(rn_exact_step(G, 0, 3, 3, 1.0, 1e-6, S, 3, flow, 3, &res), RN_ERR_SIZE);
    EXPECT(rn_exact_step(G, 4, 0, 3, 1.0, 1e-6, S, 3, flow, 3, &res), RN_ERR_SIZE);
    EXPECT(rn_exact_step(G, 65, 3, 3, 1.0, 1e-6, S, 3, flow, 3, &res), RN_ERR_SIZE);
    EXPECT(rn_exact_step(G, 4, 3, 2, 1.0, 1e-6, S, 3, flow, 3, &res), RN_ERR_SIZE);
    EXPECT(rn_exact_step(G, 4, 3, 3, 1.0, 1e-6, S, 2, flow, 3, &res), RN_ERR_SIZE);
    EXPECT(rn_exact_step(G, 4, 3, 3, 1.0, 1e-6, S, 3, flow, 2, &res), RN_ERR_SIZE);
    EXPECT(rn_exact_step(G, 4, 3, (size_t)-1 / 2, 1.0, 1e-6, S, 3, flow, 3, &res), RN_ERR_SIZE);
    EXPECT(rn_exact_step(G, 4, 3, 3, 1.0, 1e-6, S, (size_t)-1 / 4, flow, 3, &res), RN_ERR_SIZE);
    EXPECT(rn_exact_step_ws(G, 4, 3, 3, 1.0, 1e-6, S, 3, flow, 3, &res, ws, need - 1), RN_ERR_SIZE);
    EXPECT(rn_exact_step(G, 4, 3, 3, 0.0, 1e-6, S, 3, flow, 3, &res), RN_ERR_DOMAIN);
    EXPECT(rn_exact_step(G, 4, 3, 3, -1.0, 1e-6, S, 3, flow, 3, &res), RN_ERR_DOMAIN);
    EXPECT(rn_exact_step(G, 4, 3, 3, NAN, 1e-6, S, 3, flow, 3, &res), RN_ERR_DOMAIN);
    EXPECT(rn_exact_step(G, 4, 3, 3, INFINITY, 1e-6, S, 3, flow, 3, &res), RN_ERR_DOMAIN);
    EXPECT(rn_exact_step(G, 4, 3, 3, 1.0, 0.0, S, 3, flow, 3, &res), RN_ERR_DOMAIN);
    EXPECT(rn_exact_step(G, 4, 3, 3, 1.0, 1.0, S, 3, flow, 3, &res), RN_ERR_DOMAIN);
    EXPECT(rn_exact_step(G, 4, 3, 3, 1.0, -1e-6, S, 3, flow, 3, &res), RN_ERR_DOMAIN);
    EXPECT(rn_exact_step(G, 4, 3, 3, 1.0, NAN, S, 3, flow, 3, &res), RN_ERR_DOMAIN);
    {   /* bounds that would overflow double */
        float Gh[12];
        for (t = 0; t < 12; t++) Gh[t] = (t & 1) ? 3e38f : -3e38f;
        EXPECT(rn_exact_step(Gh, 4, 3, 3, 1e280, 1e-6, S, 3, flow, 3, &res), RN_ERR_DOMAIN);
    }
    for (t = 0; t < 3; t++) {
        memcpy(Gbad, G, sizeof G);
        Gbad[5 + t] = t == 0 ? NAN : (t == 1 ? INFINITY : -INFINITY);
        EXPECT(rn_exact_step(Gbad, 4, 3, 3, 1.0, 1e-6, S, 3, flow, 3, &res), RN_ERR_NONFINITE);
    }
    /* aliasing: S over flow, flow over G, workspace over S */
    EXPECT(rn_exact_step(G, 4, 3, 3, 1.0, 1e-6, big, 3, big + 5, 3, &res), RN_ERR_ALIAS);
    EXPECT(rn_exact_step((const float *)(void *)big, 4, 3, 3, 1.0, 1e-6, S, 3, big + 2, 3, &res), RN_ERR_ALIAS);
    EXPECT(rn_exact_step_ws(G, 4, 3, 3, 1.0, 1e-6, (double *)(void *)ws, 3, flow, 3, &res, ws, need), RN_ERR_ALIAS);
    EXPECT(rn_exact_step(G, 4, 3, 3, 1.0, 1e-6, S, 3, flow, 3, (rn_exact_result *)(void *)S), RN_ERR_ALIAS);
    /* allocation failure (plain form only) */
    t_fail_alloc = 1;
    EXPECT(rn_exact_step(G, 4, 3, 3, 1.0, 1e-6, S, 3, flow, 3, &res), RN_ERR_NOMEM);
    t_fail_alloc = 0;
    /* a tolerance below double rounding cannot be certified */
    EXPECT(rn_exact_step(G, 4, 3, 3, 1.0, 1e-18, S, 3, flow, 3, &res), RN_ERR_NOCONVERGE);
#undef EXPECT
#undef UNTOUCHED
    CHECK(strcmp(rn_status_string(RN_ERR_NOCONVERGE), rn_status_string(RN_OK)) != 0);
    free(ws);
    free(big);
}

int main(void)
{
    RUN(test_certificate_random);
    RUN(test_two_rows_ratio_one);
    RUN(test_regular_simplex);
    RUN(test_ratio_bound_ranks);
    RUN(test_one_column);
    RUN(test_invariances);
    RUN(test_linear_scaling);
    RUN(test_weak_duality_random);
    RUN(test_edge_cases);
    RUN(test_tolerance_and_scales);
    RUN(test_tight_tolerance);
    RUN(test_leading_dimensions);
    RUN(test_workspace);
    RUN(test_errors_untouched);
    return TEST_REPORT();
}
