/* tests/test_rownorm_float.c - rownorm.h built with RN_FLOAT_ARITH (the option for
 * single-precision FPUs: the RowNorm rows' arithmetic in float) against the float64 references
 * of SPEC 1.4 / 1.5 (tests/test.h) and SPEC 1.5's invariants. The bounds asserted here are the
 * ones docs/numerics.md states for the option: |S - S_ref| <= 1e-6 lr (row scale 1) while the
 * column mean is small against the rows' spread, growing with |mu| / |b - mu| (a common shift 100
 * times the spread: 1e-4 lr); D(S) <= 2 lr (1 + 1e-5); equal rows and a zero G still give S = 0
 * exactly; a row below 1e-29 takes the double formulas. */
#ifndef RN_FLOAT_ARITH /* also built as the rnfloat variant, which defines it */
#define RN_FLOAT_ARITH
#endif
#define ROWNORM_IMPLEMENTATION
#include "rownorm.h"
#include "test.h"

static float *fmat(t_rng *r, size_t n, double sd, double shift)
{
    float *a = (float *)malloc(n * sizeof(float));
    size_t i;
    if (!a) abort();
    for (i = 0; i < n; i++) a[i] = (float)(shift + sd * t_rng_normal(r));
    return a;
}

/* worst |S - lr ref| over the matrix, in units of lr */
static double step_error(size_t V, size_t d, double shift, int steps, double *diam_over_lr)
{
    t_rng r = {5};
    rn_rownorm_state st;
    rn_rownorm_config cfg = rn_rownorm_default();
    float *W = fmat(&r, V * d, 1.0, 0.0), *S = (float *)calloc(V * d, sizeof(float));
    const float *Gs[4];
    float *G[4];
    double *Wd = (double *)calloc(V * d, sizeof(double)), *Wp = (double *)calloc(V * d, sizeof(double));
    double *B = (double *)calloc(V * d, sizeof(double)), worst = 0.0;
    size_t i;
    int t;
    cfg.lr = 0.01;
    cfg.weight_decay = 0.1;
    for (t = 0; t < steps; t++) Gs[t] = G[t] = fmat(&r, V * d, 1.0, shift);
    CHECK(rn_rownorm_init(&st, V, d) == RN_OK);
    for (t = 0; t < steps; t++) {
        for (i = 0; i < V * d; i++) Wd[i] = W[i];
        CHECK(rn_rownorm_step(&st, &cfg, W, d, G[t], d, S, d) == RN_OK);
    }
    /* the reference's last step from the library's W before it: S = W_after - (1 - lr wd) W_before */
    for (i = 0; i < V * d; i++) Wp[i] = 0.0;
    t_ref_rownorm(Wp, B, Gs, (size_t)steps, V, d, cfg.lr, cfg.beta, cfg.eps, 0.0, 0); /* Wp = sum of S_t */
    {
        double *Bq = (double *)calloc(V * d, sizeof(double)), *Wq = (double *)calloc(V * d, sizeof(double));
        t_ref_rownorm(Wq, Bq, Gs, (size_t)steps - 1, V, d, cfg.lr, cfg.beta, cfg.eps, 0.0, 0);
        for (i = 0; i < V * d; i++) { /* S_last = Wp - Wq (the reference's last S) */
            double e = fabs((double)S[i] - (Wp[i] - Wq[i]));
            worst = e > worst ? e : worst;
        }
        free(Bq);
        free(Wq);
    }
    *diam_over_lr = t_ref_diameter(S, V, d, d) / cfg.lr;
    { /* the outer projection: every column of S sums to 0 */
        double cs = 0.0;
        for (i = 0; i < V; i++) cs += S[i * d + d / 2];
        CHECK_NEAR(cs, 0.0, (double)V * 1e-6 * cfg.lr, 0.0);
    }
    rn_rownorm_free(&st);
    for (t = 0; t < steps; t++) free(G[t]);
    free(W); free(S); free(Wd); free(Wp); free(B);
    return worst / cfg.lr;
}

static void test_step_accuracy(void)
{
    static const struct { size_t V, d; double shift, bound; } c[] = {
        {300, 19, 0.0, 1e-6}, {300, 19, 0.2, 1e-6}, {64, 200, 0.0, 1e-6}, {64, 200, 100.0, 1e-4}};
    size_t k;
    for (k = 0; k < sizeof c / sizeof c[0]; k++) {
        double dl = 0.0, e = step_error(c[k].V, c[k].d, c[k].shift, 3, &dl);
        printf("  RN_FLOAT_ARITH step %zu x %zu, shift %g: max |S - S_ref| = %.3g lr, D(S) = %.7f lr\n", c[k].V,
               c[k].d, c[k].shift, e, dl);
        CHECK_MSG(e <= c[k].bound, "case %zu: error %g lr > %g lr", k, e, c[k].bound);
        CHECK_MSG(dl <= 2.0 * (1 + 1e-5), "case %zu: D(S) %.9g lr", k, dl);
    }
}

/* equal rows, a zero gradient: S = 0 exactly; rows below 1e-29 (the double formulas) stay finite
 * and within the budget */
static void test_step_exact_cases(void)
{
    enum { V = 40, d = 9 };
    static float W[V * d], G[V * d], S[V * d];
    rn_rownorm_state st;
    rn_rownorm_config cfg = rn_rownorm_default();
    size_t i, k;
    int zero = 1, fin = 1;
    t_rng r = {7};
    for (i = 0; i < V * d; i++) W[i] = (float)t_rng_normal(&r);
    for (i = 0; i < V; i++) for (k = 0; k < d; k++) G[i * d + k] = (float)k - 3.5f; /* equal rows */
    CHECK(rn_rownorm_init(&st, V, d) == RN_OK);
    CHECK(rn_rownorm_step(&st, &cfg, W, d, G, d, S, d) == RN_OK);
    for (i = 0; i < V * d; i++) zero &= S[i] == 0.0f;
    CHECK_MSG(zero, "equal rows gave a nonzero step");
    memset(G, 0, sizeof G);
    CHECK(rn_rownorm_step(&st, &cfg, W, d, G, d, S, d) == RN_OK); /* B decays: still equal rows */
    for (i = 0; i < V * d; i++) zero &= S[i] == 0.0f;
    CHECK(zero);
    rn_rownorm_free(&st);
    for (i = 0; i < V * d; i++) G[i] = (float)(1e-33 * t_rng_normal(&r)); /* 1/||row|| past 1e29 */
    CHECK(rn_rownorm_init(&st, V, d) == RN_OK);
    CHECK(rn_rownorm_step(&st, &cfg, W, d, G, d, S, d) == RN_OK);
    for (i = 0; i < V * d; i++) fin &= S[i] == S[i] && fabsf(S[i]) <= 2.0f * (float)cfg.lr;
    CHECK(fin);
    CHECK(t_ref_diameter(S, V, d, d) <= 2 * cfg.lr * (1 + 1e-5));
    rn_rownorm_free(&st);
}

static void test_projected_accuracy(void)
{
    t_rng r = {11};
    size_t V = 120, d = 150, i;
    float *A = fmat(&r, V * d, 1.0, 0.3), *O = (float *)malloc(V * d * sizeof(float));
    double *Ad = (double *)malloc(V * d * sizeof(double)), *P = (double *)malloc(V * d * sizeof(double)), worst = 0;
    if (!O || !Ad || !P) abort();
    for (i = 0; i < V * d; i++) Ad[i] = A[i];
    CHECK(rn_projected_rownorm(A, V, d, d, 1e-8f, O, d) == RN_OK);
    t_ref_prn(Ad, V, d, 1e-8, P);
    for (i = 0; i < V * d; i++) worst = fabs(O[i] - P[i]) > worst ? fabs(O[i] - P[i]) : worst;
    printf("  RN_FLOAT_ARITH projected RowNorm %zu x %zu: max error %.3g\n", V, d, worst);
    CHECK_MSG(worst <= 1e-6, "projected RowNorm error %g", worst);
    free(A); free(O); free(Ad); free(P);
}

int main(void)
{
    RUN(test_step_accuracy);
    RUN(test_step_exact_cases);
    RUN(test_projected_accuracy);
    return TEST_REPORT();
}
