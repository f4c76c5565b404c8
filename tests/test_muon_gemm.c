/* Tests of muon.h's SGEMM / SSYRK section against a float64 reference written here.
 * Tolerance per element: (k + 4) * FLT_EPSILON * (|alpha| sum_p |a||b| + |beta||c|) (the float32
 * accumulation bound), plus a tiny absolute term. */
#include <stdlib.h>
/* Count the header's allocations: the _ws forms must make none. */
static size_t t_mallocs, t_frees;
static void *t_malloc(size_t n) { t_mallocs++; return malloc(n); }
static void t_free(void *p) { if (p) t_frees++; free(p); }
#define MUON_MALLOC(n) t_malloc(n)
#define MUON_FREE(p) t_free(p)
#define MUON_IMPLEMENTATION
#include "muon.h"
#include "test.h"
#include <float.h>
#include <stdint.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define POISON_BITS 0x7fc0beefu /* a quiet NaN with a recognisable payload */

static float poison_value(void)
{
    float f;
    unsigned u = POISON_BITS;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* A rows x cols matrix stored with leading dimension ld; padding columns poisoned. */
typedef struct {
    size_t rows, cols, ld;
    float *v;
} tmat;

static tmat tmat_new(size_t rows, size_t cols, size_t ld, t_rng *r)
{
    tmat m;
    size_t i, j;
    m.rows = rows; m.cols = cols; m.ld = ld;
    m.v = (float *)malloc(rows * ld * sizeof(float));
    for (i = 0; i < rows; i++)
        for (j = 0; j < ld; j++) m.v[i * ld + j] = j < cols ? (float)t_rng_normal(r) : poison_value();
    return m;
}

static int tmat_padding_intact(const tmat *m)
{
    size_t i, j;
    unsigned u;
    for (i = 0; i < m->rows; i++)
        for (j = m->cols; j < m->ld; j++) {
            memcpy(&u, &m->v[i * m->ld + j], sizeof u);
            if (u != POISON_BITS) return 0;
        }
    return 1;
}

static double op_at(const tmat *x, muon_transpose t, size_t i, size_t p)
{
    return t == MUON_NO_TRANS ? (double)x->v[i * x->ld + p] : (double)x->v[p * x->ld + i];
}

/* want = alpha op(A) op(B) + beta C0 (beta == 0: C0 ignored); bound = the error scale. */
static void ref_gemm(muon_transpose ta, muon_transpose tb, size_t m, size_t n, size_t k, double alpha,
                     const tmat *A, const tmat *B, double beta, const tmat *C0, double *want, double *bound)
{
    size_t i, j, p;
    for (i = 0; i < m; i++)
        for (j = 0; j < n; j++) {
            double s = 0.0, sa = 0.0, c = beta == 0.0 ? 0.0 : (double)C0->v[i * C0->ld + j];
            for (p = 0; p < k; p++) {
                double x = op_at(A, ta, i, p) * op_at(B, tb == MUON_NO_TRANS ? MUON_TRANS : MUON_NO_TRANS, j, p);
                s += x;
                sa += fabs(x);
            }
            want[i * n + j] = alpha * s + beta * c;
            bound[i * n + j] = fabs(alpha) * sa + fabs(beta * c);
        }
}

/* Checks C (logical m x n) against want within the float32 accumulation bound; one CHECK. */
static void check_close(const char *what, const tmat *C, size_t m, size_t n, size_t k, const double *want,
                        const double *bound)
{
    size_t i, j, bad = 0, bi = 0, bj = 0;
    double tol = (double)(k + 4) * FLT_EPSILON;
    for (i = 0; i < m; i++)
        for (j = 0; j < n; j++) {
            double got = C->v[i * C->ld + j], w = want[i * n + j];
            if (!(fabs(got - w) <= tol * bound[i * n + j] + 1e-30)) {
                if (!bad) { bi = i; bj = j; }
                bad++;
            }
        }
    CHECK_MSG(bad == 0, "%s: %zu bad elements, first (%zu,%zu) got %.9g want %.9g", what, bad, bi, bj,
              bad ? (double)C->v[bi * C->ld + bj] : 0.0, bad ? want[bi * n + bj] : 0.0);
}

static tmat op_storage(muon_transpose t, size_t rows, size_t cols, size_t pad, t_rng *r)
{
    /* op(X) is rows x cols: stored rows x cols (NO_TRANS) or cols x rows (TRANS) */
    size_t sr = t == MUON_NO_TRANS ? rows : cols, sc = t == MUON_NO_TRANS ? cols : rows;
    return tmat_new(sr, sc, sc + pad, r);
}

/* One GEMM case through the public API (and its _ws form), checked against the reference. */
static void gemm_case(muon_transpose ta, muon_transpose tb, size_t m, size_t n, size_t k, float alpha, float beta,
                      size_t pad, t_rng *r)
{
    tmat A = op_storage(ta, m, k, pad, r), B = op_storage(tb, k, n, pad + 1, r);
    tmat C = tmat_new(m, n, n + pad + 2, r), C2 = tmat_new(m, n, n + pad + 2, r);
    double *want = (double *)malloc(m * n * sizeof(double)), *bound = (double *)malloc(m * n * sizeof(double));
    size_t wsb = muon_gemm_workspace_size(0);
    void *ws = malloc(wsb);
    char what[160];
    size_t i, j;
    if (beta == 0.0f) /* C must not be read: NaN everywhere in the logical part */
        for (i = 0; i < m; i++)
            for (j = 0; j < n; j++) C.v[i * C.ld + j] = poison_value();
    memcpy(C2.v, C.v, m * C.ld * sizeof(float));
    ref_gemm(ta, tb, m, n, k, alpha, &A, &B, beta, &C, want, bound);
    sprintf(what, "sgemm %c%c m=%zu n=%zu k=%zu alpha=%g beta=%g pad=%zu", ta ? 'T' : 'N', tb ? 'T' : 'N', m, n,
            k, (double)alpha, (double)beta, pad);
    CHECK(muon_sgemm(ta, tb, m, n, k, alpha, A.v, A.ld, B.v, B.ld, beta, C.v, C.ld) == MUON_OK);
    check_close(what, &C, m, n, k, want, bound);
    CHECK(tmat_padding_intact(&C) && tmat_padding_intact(&A) && tmat_padding_intact(&B));
    CHECK(muon_sgemm_ws(ta, tb, m, n, k, alpha, A.v, A.ld, B.v, B.ld, beta, C2.v, C2.ld, ws, wsb) == MUON_OK);
    CHECK_MSG(memcmp(C.v, C2.v, m * C.ld * sizeof(float)) == 0, "%s: _ws form differs from plain form", what);
    free(A.v); free(B.v); free(C.v); free(C2.v); free(want); free(bound); free(ws);
}

static const muon_transpose TR[2] = {MUON_NO_TRANS, MUON_TRANS};

static void test_gemm_small_odd_sizes(void)
{
    static const size_t sz[] = {1, 2, 3, 7, 17, 33};
    t_rng r = {1};
    size_t a, b, c;
    int x, y;
    for (x = 0; x < 2; x++)
        for (y = 0; y < 2; y++)
            for (a = 0; a < 6; a++)
                for (b = 0; b < 6; b++)
                    for (c = 0; c < 6; c += (a + b) % 2 + 1)
                        gemm_case(TR[x], TR[y], sz[a], sz[b], sz[c], 1.0f, 0.0f, (a + c) % 3, &r);
}

static void test_gemm_tile_and_block_edges(void)
{
    /* m, n, k off every MR/NR multiple; k across KC (384) and split unevenly; n across NC (512
     * at a 2 MB L2, and where the caches are unknown); m across MC (1015: the fixed 1008; 1030:
     * also the 1022 of a 2 MB L2; a smaller L2's blocks are smaller). */
    static const size_t cases[][3] = {{65, 129, 257}, {129, 65, 33}, {13, 31, 385}, {15, 33, 769},
                                      {29, 545, 19},  {17, 1040, 9}, {1015, 17, 13}, {1030, 17, 13},
                                      {257, 47, 100}, {14, 32, 384},  {28, 64, 1}};
    t_rng r = {2};
    size_t i;
    int x, y;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (x = 0; x < 2; x++)
            for (y = 0; y < 2; y++) gemm_case(TR[x], TR[y], cases[i][0], cases[i][1], cases[i][2], 1.0f, 0.0f, 3, &r);
}

static void test_gemm_alpha_beta(void)
{
    static const float ab[][2] = {{1.0f, 1.0f}, {-1.5f, 0.0f}, {-0.75f, 1.0f}, {2.0f, -0.5f}, {0.5f, 3.0f}};
    t_rng r = {3};
    size_t i;
    for (i = 0; i < sizeof ab / sizeof ab[0]; i++) {
        gemm_case(MUON_NO_TRANS, MUON_NO_TRANS, 37, 45, 53, ab[i][0], ab[i][1], 2, &r);
        gemm_case(MUON_TRANS, MUON_TRANS, 21, 70, 400, ab[i][0], ab[i][1], 1, &r);
        gemm_case(MUON_NO_TRANS, MUON_TRANS, 5, 3, 2, ab[i][0], ab[i][1], 0, &r);
    }
}

/* alpha == 0: op(A) op(B) is not formed (Inf in A gives no NaN); C = beta C. */
static void test_gemm_alpha_zero(void)
{
    float A[6], B[6], C[4] = {1, 2, 3, 4};
    int i;
    for (i = 0; i < 6; i++) A[i] = B[i] = INFINITY;
    CHECK(muon_sgemm(MUON_NO_TRANS, MUON_NO_TRANS, 2, 2, 3, 0.0f, A, 3, B, 2, 2.0f, C, 2) == MUON_OK);
    CHECK(C[0] == 2.0f && C[1] == 4.0f && C[2] == 6.0f && C[3] == 8.0f);
    C[0] = NAN;
    CHECK(muon_sgemm(MUON_NO_TRANS, MUON_NO_TRANS, 2, 2, 3, 0.0f, A, 3, B, 2, 0.0f, C, 2) == MUON_OK);
    CHECK(C[0] == 0.0f && C[1] == 0.0f && C[2] == 0.0f && C[3] == 0.0f);
}

/* A product small enough to check by hand: [1 2; 3 4] [5 6; 7 8] = [19 22; 43 50]. */
static void test_gemm_by_hand(void)
{
    const float A[4] = {1, 2, 3, 4}, B[4] = {5, 6, 7, 8};
    float C[4];
    CHECK(muon_sgemm(MUON_NO_TRANS, MUON_NO_TRANS, 2, 2, 2, 1.0f, A, 2, B, 2, 0.0f, C, 2) == MUON_OK);
    CHECK_NEAR(C[0], 19.0, 0.0, 1e-6);
    CHECK_NEAR(C[1], 22.0, 0.0, 1e-6);
    CHECK_NEAR(C[2], 43.0, 0.0, 1e-6);
    CHECK_NEAR(C[3], 50.0, 0.0, 1e-6);
    CHECK(muon_sgemm(MUON_TRANS, MUON_TRANS, 2, 2, 2, 1.0f, A, 2, B, 2, 0.0f, C, 2) == MUON_OK);
    CHECK_NEAR(C[0], 23.0, 0.0, 1e-6); /* A^T B^T = (BA)^T: [1 3; 2 4][5 7; 6 8] = [23 31; 34 46] */
    CHECK_NEAR(C[1], 31.0, 0.0, 1e-6);
    CHECK_NEAR(C[2], 34.0, 0.0, 1e-6);
    CHECK_NEAR(C[3], 46.0, 0.0, 1e-6);
}

/* SSYRK: C = alpha op(A) op(A)^T + beta C, exactly symmetric, vs the reference. */
static void syrk_case(muon_transpose ta, size_t n, size_t k, float alpha, float beta, size_t pad, t_rng *r)
{
    tmat A = op_storage(ta, n, k, pad, r), C = tmat_new(n, n, n + pad + 1, r), C2;
    double *want = (double *)malloc(n * n * sizeof(double)), *bound = (double *)malloc(n * n * sizeof(double));
    size_t wsb = muon_gemm_workspace_size(0), i, j, asym = 0;
    void *ws = malloc(wsb);
    char what[160];
    for (i = 0; i < n; i++) /* a symmetric C (SSYRK reads one triangle), or NaN when beta == 0 */
        for (j = 0; j <= i; j++)
            C.v[i * C.ld + j] = C.v[j * C.ld + i] = beta == 0.0f ? poison_value() : (float)t_rng_normal(r);
    C2 = tmat_new(n, n, C.ld, r);
    memcpy(C2.v, C.v, n * C.ld * sizeof(float));
    ref_gemm(ta, ta == MUON_NO_TRANS ? MUON_TRANS : MUON_NO_TRANS, n, n, k, alpha, &A, &A, beta, &C, want, bound);
    sprintf(what, "ssyrk %c n=%zu k=%zu alpha=%g beta=%g", ta ? 'T' : 'N', n, k, (double)alpha, (double)beta);
    CHECK(muon_ssyrk(ta, n, k, alpha, A.v, A.ld, beta, C.v, C.ld) == MUON_OK);
    check_close(what, &C, n, n, k, want, bound);
    for (i = 0; i < n; i++)
        for (j = 0; j < i; j++)
            if (memcmp(&C.v[i * C.ld + j], &C.v[j * C.ld + i], sizeof(float)) != 0) asym++;
    CHECK_MSG(asym == 0, "%s: %zu asymmetric pairs", what, asym);
    CHECK(tmat_padding_intact(&C) && tmat_padding_intact(&A));
    CHECK(muon_ssyrk_ws(ta, n, k, alpha, A.v, A.ld, beta, C2.v, C2.ld, ws, wsb) == MUON_OK);
    CHECK_MSG(memcmp(C.v, C2.v, n * C.ld * sizeof(float)) == 0, "%s: _ws form differs", what);
    free(A.v); free(C.v); free(C2.v); free(want); free(bound); free(ws);
}

static void test_syrk(void)
{
    static const size_t cases[][2] = {{1, 1}, {2, 3}, {3, 7}, {7, 1}, {17, 33}, {33, 17}, {65, 129},
                                      {129, 65}, {47, 400}, {300, 20}, {15, 2}};
    t_rng r = {4};
    size_t i;
    int x;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (x = 0; x < 2; x++) {
            syrk_case(TR[x], cases[i][0], cases[i][1], 1.0f, 0.0f, i % 3, &r);
            if (i % 3 == 0) syrk_case(TR[x], cases[i][0], cases[i][1], -0.5f, 1.0f, 1, &r);
            if (i % 3 == 1) syrk_case(TR[x], cases[i][0], cases[i][1], 2.0f, -0.25f, 2, &r);
        }
    syrk_case(MUON_NO_TRANS, 1030, 5, 1.0f, 0.0f, 0, &r); /* crosses MC */
}

/* SSYRK's lower triangle is the GEMM op(A) op(A)^T's, bit for bit (alpha 1, beta 0: the same
 * kernel, the same k order; SSYRK reads its A micro-panels where it packed X's rows as B panels,
 * in place, at every lane offset the 14-row grid meets on 32-row panels), and its upper one the
 * mirror. Sizes meet partial panels, micro-panels past n, several column chunks and row blocks
 * (and, in the smallblk build, many of each); 1 to 3 threads split the rows. */
static void test_syrk_matches_gemm(void)
{
    static const size_t cases[][2] = {{128, 37}, {129, 400}, {150, 75}, {222, 5}, {300, 400},
                                      {470, 390}, {1030, 5}, {1030, 41}};
    t_rng r = {11};
    size_t i, a, b;
    int x, t;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (x = 0; x < 2; x++) {
            size_t n = cases[i][0], k = cases[i][1], bad = 0, asym = 0;
            tmat A = op_storage(TR[x], n, k, 1, &r);
            float *S = (float *)malloc(n * n * sizeof(float)), *G = (float *)malloc(n * n * sizeof(float));
            CHECK(muon__sgemm_builtin(0, 1, TR[x], TR[1 - x], n, n, k, 1.0f, A.v, A.ld, A.v, A.ld, 0.0f, G, n) == MUON_OK);
            for (t = 1; t <= 3; t++) {
                CHECK(muon__ssyrk_builtin(0, t, TR[x], n, k, 1.0f, A.v, A.ld, 0.0f, S, n) == MUON_OK);
                for (a = 0; a < n; a++)
                    for (b = 0; b <= a; b++) {
                        bad += memcmp(&S[a * n + b], &G[a * n + b], sizeof(float)) != 0;
                        asym += memcmp(&S[a * n + b], &S[b * n + a], sizeof(float)) != 0;
                    }
            }
            CHECK_MSG(bad == 0 && asym == 0, "ssyrk %c n=%zu k=%zu: %zu elements differ from the gemm, %zu asymmetric",
                      x ? 'T' : 'N', n, k, bad, asym);
            free(A.v); free(S); free(G);
        }
}

/* Every error: the right status and C byte-for-byte untouched. */
static void test_errors_leave_c_untouched(void)
{
    float A[64], B[64], C[64], keep[64], big[8];
    unsigned char ws[1 << 12];
    size_t wsb = muon_gemm_workspace_size(1), i;
    void *wsbig = malloc(wsb);
    const size_t huge = (size_t)-1 / 2;
    for (i = 0; i < 64; i++) A[i] = B[i] = 1.0f, C[i] = keep[i] = (float)i;
    for (i = 0; i < 8; i++) big[i] = 0.0f;
#define EXPECT(call, st) do { CHECK((call) == (st)); CHECK(memcmp(C, keep, sizeof C) == 0); } while (0)
    EXPECT(muon_sgemm(MUON_NO_TRANS, MUON_NO_TRANS, 4, 4, 4, 1, NULL, 4, B, 4, 0, C, 4), MUON_ERR_NULL);
    EXPECT(muon_sgemm(MUON_NO_TRANS, MUON_NO_TRANS, 4, 4, 4, 1, A, 4, NULL, 4, 0, C, 4), MUON_ERR_NULL);
    CHECK(muon_sgemm(MUON_NO_TRANS, MUON_NO_TRANS, 4, 4, 4, 1, A, 4, B, 4, 0, NULL, 4) == MUON_ERR_NULL);
    EXPECT(muon_ssyrk(MUON_NO_TRANS, 4, 4, 1, NULL, 4, 0, C, 4), MUON_ERR_NULL);
    CHECK(muon_ssyrk(MUON_NO_TRANS, 4, 4, 1, A, 4, 0, NULL, 4) == MUON_ERR_NULL);
    EXPECT(muon_sgemm_ws(MUON_NO_TRANS, MUON_NO_TRANS, 4, 4, 4, 1, A, 4, B, 4, 0, C, 4, NULL, wsb), MUON_ERR_NULL);
    EXPECT(muon_ssyrk_ws(MUON_NO_TRANS, 4, 4, 1, A, 4, 0, C, 4, NULL, wsb), MUON_ERR_NULL);
    /* zero sizes */
    EXPECT(muon_sgemm(MUON_NO_TRANS, MUON_NO_TRANS, 0, 4, 4, 1, A, 4, B, 4, 0, C, 4), MUON_ERR_SIZE);
    EXPECT(muon_sgemm(MUON_NO_TRANS, MUON_NO_TRANS, 4, 0, 4, 1, A, 4, B, 4, 0, C, 4), MUON_ERR_SIZE);
    EXPECT(muon_sgemm(MUON_NO_TRANS, MUON_NO_TRANS, 4, 4, 0, 1, A, 4, B, 4, 0, C, 4), MUON_ERR_SIZE);
    EXPECT(muon_ssyrk(MUON_NO_TRANS, 0, 4, 1, A, 4, 0, C, 4), MUON_ERR_SIZE);
    EXPECT(muon_ssyrk(MUON_TRANS, 4, 0, 1, A, 4, 0, C, 4), MUON_ERR_SIZE);
    /* ld smaller than the stored row: A (NO_TRANS: k wide; TRANS: m wide), B, C */
    EXPECT(muon_sgemm(MUON_NO_TRANS, MUON_NO_TRANS, 2, 4, 5, 1, A, 4, B, 4, 0, C, 4), MUON_ERR_SIZE);
    EXPECT(muon_sgemm(MUON_TRANS, MUON_NO_TRANS, 5, 4, 2, 1, A, 4, B, 4, 0, C, 5), MUON_ERR_SIZE);
    EXPECT(muon_sgemm(MUON_NO_TRANS, MUON_NO_TRANS, 2, 5, 2, 1, A, 2, B, 4, 0, C, 5), MUON_ERR_SIZE);
    EXPECT(muon_sgemm(MUON_NO_TRANS, MUON_TRANS, 2, 2, 5, 1, A, 5, B, 4, 0, C, 2), MUON_ERR_SIZE);
    EXPECT(muon_sgemm(MUON_NO_TRANS, MUON_NO_TRANS, 2, 5, 2, 1, A, 2, B, 5, 0, C, 4), MUON_ERR_SIZE);
    EXPECT(muon_ssyrk(MUON_NO_TRANS, 4, 5, 1, A, 4, 0, C, 4), MUON_ERR_SIZE);
    EXPECT(muon_ssyrk(MUON_TRANS, 5, 4, 1, A, 4, 0, C, 5), MUON_ERR_SIZE);
    EXPECT(muon_ssyrk(MUON_NO_TRANS, 5, 4, 1, A, 4, 0, C, 4), MUON_ERR_SIZE);
    /* overflowing rows * ld */
    EXPECT(muon_sgemm(MUON_NO_TRANS, MUON_NO_TRANS, 2, 2, 2, 1, A, huge, B, 2, 0, C, 2), MUON_ERR_SIZE);
    EXPECT(muon_sgemm(MUON_NO_TRANS, MUON_NO_TRANS, huge, 2, 2, 1, A, 2, B, 2, 0, C, 2), MUON_ERR_SIZE);
    EXPECT(muon_ssyrk(MUON_TRANS, 2, huge, 1, A, 2, 0, C, 2), MUON_ERR_SIZE);
    /* aliasing: C overlapping A or B */
    EXPECT(muon_sgemm(MUON_NO_TRANS, MUON_NO_TRANS, 4, 4, 4, 1, C, 4, B, 4, 0, C, 4), MUON_ERR_ALIAS);
    EXPECT(muon_sgemm(MUON_NO_TRANS, MUON_NO_TRANS, 4, 4, 4, 1, A, 4, C + 15, 4, 0, C, 4), MUON_ERR_ALIAS);
    EXPECT(muon_sgemm(MUON_NO_TRANS, MUON_NO_TRANS, 4, 4, 4, 1, C + 16, 4, B, 4, 0, C + 3, 4), MUON_ERR_ALIAS);
    EXPECT(muon_ssyrk(MUON_NO_TRANS, 4, 4, 1, C + 8, 4, 0, C, 4), MUON_ERR_ALIAS);
    CHECK(muon_sgemm(MUON_NO_TRANS, MUON_NO_TRANS, 4, 4, 4, 1, C + 16, 4, B, 4, 0, C, 4) == MUON_OK); /* adjacent */
    for (i = 0; i < 64; i++) C[i] = keep[i];
    /* workspace too small even for one thread */
    EXPECT(muon_sgemm_ws(MUON_NO_TRANS, MUON_NO_TRANS, 4, 4, 4, 1, A, 4, B, 4, 0, C, 4, ws, 16), MUON_ERR_SIZE);
    EXPECT(muon_ssyrk_ws(MUON_NO_TRANS, 4, 4, 1, A, 4, 0, C, 4, ws, 16), MUON_ERR_SIZE);
    /* a transpose value outside the enum */
    EXPECT(muon_sgemm((muon_transpose)7, MUON_NO_TRANS, 4, 4, 4, 1, A, 4, B, 4, 0, C, 4), MUON_ERR_DOMAIN);
    EXPECT(muon_ssyrk((muon_transpose)7, 4, 4, 1, A, 4, 0, C, 4), MUON_ERR_DOMAIN);
    /* a small problem fits a small caller buffer (the size needed follows the problem) */
    CHECK(muon_sgemm_ws(MUON_NO_TRANS, MUON_NO_TRANS, 2, 2, 2, 1, A, 2, B, 2, 0, big, 2, ws, sizeof ws) == MUON_OK);
    CHECK(big[0] == 2.0f && big[3] == 2.0f && big[4] == 0.0f);
    CHECK(muon_gemm_workspace_size(2) > muon_gemm_workspace_size(1));
    CHECK(muon_gemm_workspace_size(0) >= muon_gemm_workspace_size(1));
#undef EXPECT
    free(wsbig);
}

/* The _ws forms with a buffer for one thread only: same bits as the plain form. */
static void test_ws_fewer_threads(void)
{
    t_rng r = {5};
    size_t m = 100, n = 300, k = 200, wsb = muon_gemm_workspace_size(1);
    tmat A = tmat_new(m, k, k, &r), B = tmat_new(k, n, n, &r), C = tmat_new(m, n, n, &r), C2 = tmat_new(m, n, n, &r);
    void *ws = malloc(wsb);
    CHECK(muon_sgemm(MUON_NO_TRANS, MUON_NO_TRANS, m, n, k, 1.0f, A.v, k, B.v, n, 0.0f, C.v, n) == MUON_OK);
    CHECK(muon_sgemm_ws(MUON_NO_TRANS, MUON_NO_TRANS, m, n, k, 1.0f, A.v, k, B.v, n, 0.0f, C2.v, n, ws, wsb) ==
          MUON_OK);
    CHECK(memcmp(C.v, C2.v, m * n * sizeof(float)) == 0);
    free(A.v); free(B.v); free(C.v); free(C2.v); free(ws);
}

/* The _ws forms use caller memory only; the plain forms allocate through MUON_MALLOC (and
 * free it) above the small-problem stack buffer. */
static void test_allocation_policy(void)
{
    t_rng r = {8};
    size_t n = 200, wsb = muon_gemm_workspace_size(0), m0, f0;
    tmat A = tmat_new(n, n, n, &r), C = tmat_new(n, n, n, &r);
    void *ws = malloc(wsb);
    m0 = t_mallocs;
    f0 = t_frees;
    CHECK(muon_sgemm_ws(MUON_NO_TRANS, MUON_TRANS, n, n, n, 1.0f, A.v, n, A.v, n, 0.0f, C.v, n, ws, wsb) == MUON_OK);
    CHECK(muon_ssyrk_ws(MUON_TRANS, n, n, 1.0f, A.v, n, 0.5f, C.v, n, ws, wsb) == MUON_OK);
    CHECK(t_mallocs == m0 && t_frees == f0);
    CHECK(muon_sgemm(MUON_NO_TRANS, MUON_TRANS, n, n, n, 1.0f, A.v, n, A.v, n, 0.0f, C.v, n) == MUON_OK);
    CHECK(muon_ssyrk(MUON_TRANS, n, n, 1.0f, A.v, n, 0.5f, C.v, n) == MUON_OK);
#ifndef MUON_USE_CBLAS
    CHECK(t_mallocs == m0 + 2);
#endif
    CHECK(t_mallocs - m0 == t_frees - f0);
#if !defined(MUON_USE_CBLAS) && MUON_GEMM_STACK_BYTES == 0
    /* the default since 0.3: even an 8^3 product allocates (no stack buffer: every path <= 2 KB) */
    m0 = t_mallocs;
    CHECK(muon_sgemm(MUON_NO_TRANS, MUON_NO_TRANS, 8, 8, 8, 1.0f, A.v, n, A.v, n, 0.0f, C.v, n) == MUON_OK);
    CHECK(t_mallocs == m0 + 1 && t_mallocs - m0 == t_frees - f0 - 2);
#endif
    free(A.v); free(C.v); free(ws);
}

/* The scalar reference micro-kernel and the build's SIMD kernel on the same inputs. */
static void test_scalar_vs_simd(void)
{
    static const size_t cases[][3] = {{1, 1, 1}, {7, 9, 11}, {33, 65, 17}, {100, 97, 390}, {15, 40, 3}};
    t_rng r = {6};
    size_t i, x, y, e;
    printf("  kernels: built-in %s, reference %s\n", muon__gemm_kernel_name(0), muon__gemm_kernel_name(1));
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (x = 0; x < 2; x++)
            for (y = 0; y < 2; y++) {
                size_t m = cases[i][0], n = cases[i][1], k = cases[i][2];
                tmat A = op_storage(TR[x], m, k, 1, &r), B = op_storage(TR[y], k, n, 2, &r);
                tmat C1 = tmat_new(m, n, n + 1, &r), C2 = tmat_new(m, n, n + 1, &r), S1, S2;
                double *want = (double *)malloc(m * n * sizeof(double)), *bound = (double *)malloc(m * n * sizeof(double));
                memcpy(C2.v, C1.v, m * C1.ld * sizeof(float));
                ref_gemm(TR[x], TR[y], m, n, k, 0.5, &A, &B, -1.0, &C1, want, bound);
                CHECK(muon__sgemm_builtin(1, 0, TR[x], TR[y], m, n, k, 0.5f, A.v, A.ld, B.v, B.ld, -1.0f, C1.v, C1.ld) == MUON_OK);
                CHECK(muon__sgemm_builtin(0, 0, TR[x], TR[y], m, n, k, 0.5f, A.v, A.ld, B.v, B.ld, -1.0f, C2.v, C2.ld) == MUON_OK);
                check_close("scalar kernel", &C1, m, n, k, want, bound);
                check_close("simd kernel", &C2, m, n, k, want, bound);
                {   /* the two paths agree within twice the bound */
                    size_t bad = 0;
                    double tol = 2.0 * (double)(k + 4) * FLT_EPSILON;
                    for (e = 0; e < m * n; e++)
                        if (fabs((double)C1.v[e / n * C1.ld + e % n] - C2.v[e / n * C2.ld + e % n]) >
                            tol * bound[e] + 1e-30)
                            bad++;
                    CHECK_MSG(bad == 0, "scalar vs simd: %zu elements differ beyond the bound", bad);
                }
                /* SSYRK on the m x k operand, both kernels against the reference */
                S1 = tmat_new(m, m, m + 1, &r);
                S2 = tmat_new(m, m, m + 1, &r);
                free(want); free(bound);
                want = (double *)malloc(m * m * sizeof(double));
                bound = (double *)malloc(m * m * sizeof(double));
                ref_gemm(TR[x], TR[1 - x], m, m, k, 1.0, &A, &A, 0.0, &S1, want, bound);
                CHECK(muon__ssyrk_builtin(1, 0, TR[x], m, k, 1.0f, A.v, A.ld, 0.0f, S1.v, S1.ld) == MUON_OK);
                CHECK(muon__ssyrk_builtin(0, 0, TR[x], m, k, 1.0f, A.v, A.ld, 0.0f, S2.v, S2.ld) == MUON_OK);
                check_close("ssyrk scalar kernel", &S1, m, m, k, want, bound);
                check_close("ssyrk simd kernel", &S2, m, m, k, want, bound);
                CHECK(tmat_padding_intact(&S1) && tmat_padding_intact(&S2));
                free(A.v); free(B.v); free(C1.v); free(C2.v); free(S1.v); free(S2.v); free(want); free(bound);
            }
}

/* Bit-identical results for 1, 2 and 3 threads (each element's k-order is fixed by the blocking). */
static void test_threads_bitwise(void)
{
    t_rng r = {7};
    size_t m = 150, n = 610, k = 450, x;
#ifdef _OPENMP
    int saved = omp_get_max_threads();
#endif
    for (x = 0; x < 2; x++) {
        tmat A = op_storage(TR[x], m, k, 1, &r), B = op_storage(TR[1 - x], k, n, 0, &r);
        tmat C1 = tmat_new(m, n, n, &r), C2 = tmat_new(m, n, n, &r), S1 = tmat_new(m, m, m, &r), S2 = tmat_new(m, m, m, &r);
        CHECK(muon__sgemm_builtin(0, 1, TR[x], TR[1 - x], m, n, k, 1.0f, A.v, A.ld, B.v, B.ld, 0.0f, C1.v, n) == MUON_OK);
        CHECK(muon__sgemm_builtin(0, 2, TR[x], TR[1 - x], m, n, k, 1.0f, A.v, A.ld, B.v, B.ld, 0.0f, C2.v, n) == MUON_OK);
        CHECK(memcmp(C1.v, C2.v, m * n * sizeof(float)) == 0);
        CHECK(muon__ssyrk_builtin(0, 1, TR[x], m, k, 1.0f, A.v, A.ld, 0.0f, S1.v, m) == MUON_OK);
        CHECK(muon__ssyrk_builtin(0, 2, TR[x], m, k, 1.0f, A.v, A.ld, 0.0f, S2.v, m) == MUON_OK);
        CHECK(memcmp(S1.v, S2.v, m * m * sizeof(float)) == 0);
        CHECK(muon__sgemm_builtin(0, 3, TR[x], TR[1 - x], m, n, k, 1.0f, A.v, A.ld, B.v, B.ld, 0.0f, C2.v, n) == MUON_OK);
        CHECK(memcmp(C1.v, C2.v, m * n * sizeof(float)) == 0);
        CHECK(muon__ssyrk_builtin(0, 3, TR[x], m, k, 1.0f, A.v, A.ld, 0.0f, S2.v, m) == MUON_OK);
        CHECK(memcmp(S1.v, S2.v, m * m * sizeof(float)) == 0);
#ifdef _OPENMP
        /* and through the public API with omp_set_num_threads */
        omp_set_num_threads(1);
        CHECK(muon_sgemm(TR[x], TR[1 - x], m, n, k, 1.0f, A.v, A.ld, B.v, B.ld, 0.0f, C1.v, n) == MUON_OK);
        CHECK(muon_ssyrk(TR[x], m, k, 1.0f, A.v, A.ld, 0.0f, S1.v, m) == MUON_OK);
        omp_set_num_threads(2);
        CHECK(muon_sgemm(TR[x], TR[1 - x], m, n, k, 1.0f, A.v, A.ld, B.v, B.ld, 0.0f, C2.v, n) == MUON_OK);
        CHECK(muon_ssyrk(TR[x], m, k, 1.0f, A.v, A.ld, 0.0f, S2.v, m) == MUON_OK);
        CHECK(memcmp(C1.v, C2.v, m * n * sizeof(float)) == 0);
        CHECK(memcmp(S1.v, S2.v, m * m * sizeof(float)) == 0);
        omp_set_num_threads(saved);
#endif
        free(A.v); free(B.v); free(C1.v); free(C2.v); free(S1.v); free(S2.v);
    }
    {   /* a tall product (threads split rows instead of columns) */
        size_t mt = 310, nt = 70, kt = 130;
        tmat A = tmat_new(mt, kt, kt, &r), B = tmat_new(kt, nt, nt, &r);
        tmat C1 = tmat_new(mt, nt, nt, &r), C2 = tmat_new(mt, nt, nt, &r), C3 = tmat_new(mt, nt, nt, &r);
        CHECK(muon__sgemm_builtin(0, 1, MUON_NO_TRANS, MUON_NO_TRANS, mt, nt, kt, 1.0f, A.v, kt, B.v, nt, 0.0f, C1.v, nt) == MUON_OK);
        CHECK(muon__sgemm_builtin(0, 2, MUON_NO_TRANS, MUON_NO_TRANS, mt, nt, kt, 1.0f, A.v, kt, B.v, nt, 0.0f, C2.v, nt) == MUON_OK);
        CHECK(muon__sgemm_builtin(0, 3, MUON_NO_TRANS, MUON_NO_TRANS, mt, nt, kt, 1.0f, A.v, kt, B.v, nt, 0.0f, C3.v, nt) == MUON_OK);
        CHECK(memcmp(C1.v, C2.v, mt * nt * sizeof(float)) == 0 && memcmp(C1.v, C3.v, mt * nt * sizeof(float)) == 0);
        free(A.v); free(B.v); free(C1.v); free(C2.v); free(C3.v);
    }
}

/* ---- cache-derived blocks (issue 51) ---- */
/* caches (bytes) of a few CPUs, and values no CPU has */
typedef struct { const char *what; size_t l1d, l2, l3; } cpu_caches;
static const cpu_caches CPUS[] = {
    {"this Xeon (48K/2M)", 48 * 1024, 2048 * 1024, 0},  {"Zen 3", 32 * 1024, 512 * 1024, 32 * 1048576},
    {"Zen 4", 32 * 1024, 1024 * 1024, 32 * 1048576},    {"Cortex-A76-like", 64 * 1024, 512 * 1024, 0},
    {"Haswell", 32 * 1024, 256 * 1024, 8 * 1048576},    {"tiny", 1024, 4096, 0},
    {"one byte", 1, 1, 1},                              {"huge", SIZE_MAX, SIZE_MAX, SIZE_MAX},
    {"32 MB L2", 48 * 1024, 32 * 1048576, 0},           {"unknown", 0, 0, 0}};
#define NCPUS (sizeof CPUS / sizeof CPUS[0])
static muon__caches cpu_of(size_t i)
{
    muon__caches c;
    c.l1d = CPUS[i].l1d, c.l2 = CPUS[i].l2, c.l3 = CPUS[i].l3;
    return c;
}

/* The rule as a pure function: its values for the CPUs of its comment, and its promises
 * (multiples of MR / NR, never below them, the A panel within 3/4 and the B block within 3/8 of
 * the clamped L2 and as large as that allows, L1d and L3 ignored, unknown: the fixed blocks) for
 * every geometry of the kernel table, scalar included, at every cache set above. */
static void test_cache_rule(void)
{
    static const struct { size_t mr, nr, esz, kc; size_t l1d, l2, mc, nc; } want[] = {
        {14, 32, 4, 384, 48 * 1024, 2048 * 1024, 1022, 512}, /* AVX-512 here */
        {6, 16, 4, 384, 48 * 1024, 2048 * 1024, 1020, 512},  /* AVX2 here */
        {6, 16, 4, 384, 32 * 1024, 512 * 1024, 252, 128},    /* AVX2, Zen 3 */
        {14, 32, 4, 384, 32 * 1024, 1024 * 1024, 504, 256},  /* AVX-512, Zen 4 */
        {6, 16, 4, 384, 32 * 1024, 1024 * 1024, 510, 256},   /* AVX2, Zen 4 */
        {8, 8, 4, 384, 64 * 1024, 512 * 1024, 256, 128},     /* NEON, Cortex-A76-like */
        {32, 32, 2, 384, 48 * 1024, 2048 * 1024, 2048, 1024}, /* AMX here: the same bytes */
        {14, 32, 4, 384, 0, 0, 1008, 512},                   /* unknown: the fixed blocks */
        {6, 16, 4, 384, 0, 0, 1008, 512},
        {32, 32, 2, 384, 0, 0, 992, 512},                    /* (1008 rounded down to MR 32) */
        {14, 32, 4, 384, 1024, 4096, 56, 32},                /* tiny: the L2 taken as 128 KB */
        {14, 32, 4, 384, 48 * 1024, SIZE_MAX, 2044, 1024},   /* huge: as 4 MB */
        {14, 32, 4, 1u << 20, 48 * 1024, 2048 * 1024, 14, 32}, /* a k block larger than L2 */
    };
    size_t i, kidx;
    for (i = 0; i < sizeof want / sizeof want[0]; i++) {
        muon__caches c;
        size_t mc = 0, nc = 0;
        c.l1d = want[i].l1d, c.l2 = want[i].l2, c.l3 = 0;
        muon__gemm_cache_blocks(&c, want[i].mr, want[i].nr, want[i].esz, want[i].kc, 1008, 512, &mc, &nc);
        CHECK_MSG(mc == want[i].mc && nc == want[i].nc, "%zux%zu esz %zu at L2 %zu: MC %zu NC %zu, want %zu %zu",
                  want[i].mr, want[i].nr, want[i].esz, want[i].l2, mc, nc, want[i].mc, want[i].nc);
    }
    /* Zen 3 with the AVX2 kernel: the A panel fits L2 with B's streaming micro-panel beside it */
    {
        muon__caches c = cpu_of(1);
        size_t mc, nc;
        muon__gemm_cache_blocks(&c, 6, 16, 4, 384, 1008, 512, &mc, &nc);
        CHECK(mc * 384 * 4 + 16 * 384 * 4 <= c.l2 && nc * 384 * 4 <= c.l2 / 2);
    }
    for (kidx = 0; kidx <= MUON__GEMM_NTABLE; kidx++) {
        const muon__gemm_kernel *kr = kidx < MUON__GEMM_NTABLE ? muon__gemm_table[kidx] : &muon__gemm_k_scalar;
        for (i = 0; i < NCPUS; i++) {
            muon__caches c = cpu_of(i), c2 = c;
            size_t mc, nc, mc2, nc2, row = kr->kc * kr->esz, l2 = c.l2;
            muon__gemm_cache_blocks(&c, kr->mr, kr->nr, kr->esz, kr->kc, kr->mc, kr->nc, &mc, &nc);
            CHECK_MSG(mc >= kr->mr && mc % kr->mr == 0 && nc >= kr->nr && nc % kr->nr == 0,
                      "%s at %s: MC %zu NC %zu", kr->name, CPUS[i].what, mc, nc);
            if (l2) {
                if (l2 < MUON__GEMM_L2_MIN) l2 = MUON__GEMM_L2_MIN;
                if (l2 > MUON__GEMM_L2_MAX) l2 = MUON__GEMM_L2_MAX;
                CHECK_MSG(mc * row <= l2 / 4 * 3 && (mc + kr->mr) * row > l2 / 4 * 3,
                          "%s at %s: A panel %zu B of L2 %zu", kr->name, CPUS[i].what, mc * row, l2);
                CHECK_MSG(nc * row <= l2 / 8 * 3 && (nc + kr->nr) * row > l2 / 8 * 3,
                          "%s at %s: B block %zu B of L2 %zu", kr->name, CPUS[i].what, nc * row, l2);
                CHECK(mc * row <= (size_t)3 * 1024 * 1024 && nc * row <= (size_t)1536 * 1024);
            } else {
                CHECK(mc == kr->mc / kr->mr * kr->mr && nc == kr->nc / kr->nr * kr->nr);
            }
            /* L1d and L3 do not enter */
            c2.l1d = c.l1d ? c.l1d / 2 : 1;
            c2.l3 = c.l3 ? 0 : 64 * 1048576;
            muon__gemm_cache_blocks(&c2, kr->mr, kr->nr, kr->esz, kr->kc, kr->mc, kr->nc, &mc2, &nc2);
            CHECK(mc2 == mc && nc2 == nc);
        }
    }
}

/* Detection: one answer per process, which a forced set replaces exactly (whole KB) and forcing
 * NULL gives back; every kernel's bounds and the workspace size follow the forced caches. */
static void test_cache_detection(void)
{
    muon__caches d = muon__caches_get(), e = muon__caches_get(), z3 = cpu_of(1), f;
    size_t mc, nc, w1, w2;
    printf("  caches read: L1d %zu, L2 %zu, L3 %zu bytes\n", d.l1d, d.l2, d.l3);
    CHECK(d.l1d == e.l1d && d.l2 == e.l2 && d.l3 == e.l3);
#if defined(__linux__) && (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
    CHECK_MSG(d.l2 > 0 && d.l1d > 0, "no L2 / L1d read on x86 Linux");
#endif
    w1 = muon_gemm_workspace_size(1);
    muon__caches_force(&z3);
    f = muon__caches_get();
    CHECK(f.l1d == z3.l1d && f.l2 == z3.l2 && f.l3 == z3.l3);
    muon__gemm_bounds(&muon__gemm_k_build, &mc, &nc);
    w2 = muon_gemm_workspace_size(1);
#if !defined(MUON_GEMM_MC) && !defined(MUON_GEMM_NC)
    {
        size_t mc0, nc0;
        muon__gemm_cache_blocks(&z3, muon__gemm_k_build.mr, muon__gemm_k_build.nr, 4, muon__gemm_k_build.kc, 1008, 512,
                                &mc0, &nc0);
        CHECK(mc == mc0 && nc == nc0);
        CHECK_MSG(d.l2 <= z3.l2 || w2 < w1, "workspace %zu at Zen 3's caches, %zu at these", w2, w1);
    }
#else
    CHECK(mc == muon__gemm_k_build.mc && nc == muon__gemm_k_build.nc); /* the compile-time blocks win */
    CHECK(w2 == w1);
#endif
    muon__caches_force(MUON__NULL);
    f = muon__caches_get();
    CHECK(f.l1d == d.l1d && f.l2 == d.l2 && f.l3 == d.l3);
    CHECK(muon_gemm_workspace_size(1) == w1);
}

/* MC and NC change no bit: the same SGEMM (both transposes), SSYRK and a full muon_orthogonalize
 * (Jordan x 5; fp32 and bf16) on shapes that cross several MC, NC and KC blocks under the small
 * sets, run under every cache set above, on the build's kernel and the scalar reference, on 1 and
 * 2 threads, are bit-identical to the run under the first set. Each run's workspace is sized under
 * its own set, so the size queries and the products agree. (KC following the caches fails it.) */
static void test_cache_blocks_bits(void)
{
    const size_t m = 200, n = 530, k = 700; /* tiny (L2 taken as 128 KB): AVX-512 MC 56, NC 32; KC 384: 2 k blocks */
    t_rng r = {51};
    tmat A = tmat_new(m, k, k, &r), B = tmat_new(k, n, n, &r), Bt = tmat_new(n, k, k, &r), G = tmat_new(m, n, n, &r);
    float *ref[2][6];
    size_t ci, w, j, mcs[NCPUS], ncs[NCPUS], distinct = 0;
    muon_ns_config ns = muon_ns_preset(MUON_NS_JORDAN, 0), nsb = ns;
    nsb.precision = MUON_NS_BF16;
    for (ci = 0; ci < NCPUS; ci++) {
        muon__caches c = cpu_of(ci);
        muon__gemm_blocks bl;
        muon__caches_force(&c);
        bl = muon__gemm_blocking(&muon__gemm_k_build, m, n, k);
        mcs[ci] = bl.mc, ncs[ci] = bl.nc;
        for (j = 0; j < ci; j++)
            if (mcs[j] == bl.mc && ncs[j] == bl.nc) break;
        distinct += j == ci;
        for (w = 0; w < 2; w++) { /* w: the build's kernel, the scalar reference */
            float *res[6];
            int th = 1 + (int)(ci % 2), ok = 1;
            size_t sz[6] = {m * n, m * n, m * m, m * m, m * n, m * n}, q;
            for (q = 0; q < 6; q++) res[q] = (float *)calloc(sz[q], sizeof(float));
            ok &= muon__sgemm_builtin((int)w, th, MUON_NO_TRANS, MUON_NO_TRANS, m, n, k, 1.0f, A.v, A.ld, B.v, B.ld,
                                      0.0f, res[0], n) == MUON_OK;
            ok &= muon__sgemm_builtin((int)w, th, MUON_NO_TRANS, MUON_TRANS, m, n, k, 0.5f, A.v, A.ld, Bt.v, Bt.ld,
                                      0.0f, res[1], n) == MUON_OK;
            ok &= muon__ssyrk_builtin((int)w, th, MUON_NO_TRANS, m, k, 1.0f, A.v, A.ld, 0.0f, res[2], m) == MUON_OK;
            ok &= muon__ssyrk_builtin((int)w, th, MUON_TRANS, m, k, 1.0f, B.v, B.ld, 0.0f, res[3], m) == MUON_OK;
            if (w == 0) { /* the public paths (the build's kernel), the _ws one in a workspace sized now */
                size_t need = muon_orthogonalize_workspace_size(m, n);
                void *ws = malloc(need);
                ok &= muon_orthogonalize_ws(G.v, m, n, G.ld, &ns, res[4], n, ws, need) == MUON_OK;
                ok &= muon_orthogonalize(G.v, m, n, G.ld, &nsb, res[5], n) == MUON_OK;
                free(ws);
            }
            CHECK_MSG(ok, "%s: a call failed", CPUS[ci].what);
            for (q = 0; q < 6; q++) {
                if (ci == 0) {
                    ref[w][q] = res[q];
                    continue;
                }
                CHECK_MSG(memcmp(res[q], ref[w][q], sz[q] * sizeof(float)) == 0,
                          "%s kernel, product %zu: MC %zu NC %zu differ from MC %zu NC %zu", w ? "scalar" : "build", q,
                          mcs[ci], ncs[ci], mcs[0], ncs[0]);
                free(res[q]);
            }
        }
    }
#if !defined(MUON_GEMM_MC) && !defined(MUON_GEMM_NC)
    CHECK_MSG(distinct >= 5, "only %zu distinct MC x NC among the sets", distinct);
#else
    CHECK(distinct == 1);
#endif
    /* and the blocked results are those of the product: against the float64 reference */
    muon__caches_force(MUON__NULL);
    {
        double *want = (double *)malloc(m * n * sizeof(double)), *bound = (double *)malloc(m * n * sizeof(double));
        tmat C = tmat_new(m, n, n, &r);
        memcpy(C.v, ref[0][0], m * n * sizeof(float));
        ref_gemm(MUON_NO_TRANS, MUON_NO_TRANS, m, n, k, 1.0, &A, &B, 0.0, &C, want, bound);
        check_close("cache-forced blocks", &C, m, n, k, want, bound);
        free(want); free(bound); free(C.v);
    }
    for (w = 0; w < 2; w++)
        for (j = 0; j < 6; j++) free(ref[w][j]);
    free(A.v); free(B.v); free(Bt.v); free(G.v);
}

/* The build kernel's packing of op(B) = B against the layout's definition (panel q of NR columns:
 * dst[(q - jq) NR kc + p NR + s] = B[p0 + p][q NR + s], 0 past n), both panel at a time
 * (kr->pack_b) and, where the kernel has one, whole blocks at once (kr->pack_b_block, which must
 * write nothing past the block). Blocks at B's start, middle and ragged end; k blocks shorter than
 * the block packing's prefetch distance. */
static void test_pack_b_block(void)
{
    /* n, the block's first and last column c0, c1 (0: n; panels c0 / NR to the one holding
     * column c1 - 1, so the cases hold for every NR: 8, 16, 32), p0, kc */
    static const size_t cases[][5] = {{530, 0, 0, 0, 384},   {530, 128, 256, 0, 384}, {530, 480, 0, 384, 146},
                                      {530, 0, 0, 527, 3},   {3, 0, 0, 0, 1},         {16, 0, 0, 10, 9},
                                      {100, 32, 0, 200, 330}, {530, 512, 0, 0, 17}};
    const muon__gemm_kernel *kr = &muon__gemm_k_build;
    const size_t k = 530;
    t_rng r = {52};
    size_t i;
    CHECK(kr->esz == sizeof(float) && kr->kgran == 1);
    if (!kr->pack_b_block) printf("  %s packs B panel by panel (no block packing in this build)\n", kr->name);
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = cases[i][0], nr = kr->nr, np = (n + nr - 1) / nr, jq = cases[i][1] / nr;
        size_t jqend = ((cases[i][2] ? cases[i][2] : n) + nr - 1) / nr, p0 = cases[i][3], kc = cases[i][4], q, p, c;
        size_t nf;
        CHECK(jq < jqend && jqend <= np);
        if (!(jq < jqend && jqend <= np)) continue;
        nf = (jqend - jq) * nr * kc;
        tmat B = tmat_new(k, n, n + 3, &r);
        float *want = (float *)malloc((nf + 16) * sizeof(float)), *got = (float *)malloc((nf + 16) * sizeof(float));
        for (q = jq; q < jqend; q++)
            for (p = 0; p < kc; p++)
                for (c = 0; c < nr; c++)
                    want[(q - jq) * nr * kc + p * nr + c] = q * nr + c < n ? B.v[(p0 + p) * B.ld + q * nr + c] : 0.0f;
        memset(got, 0x5a, nf * sizeof(float));
        for (q = jq; q < jqend; q++)
            kr->pack_b(kr, MUON_NO_TRANS, B.v, B.ld, q * nr, n - q * nr < nr ? n - q * nr : nr, p0, kc,
                       (unsigned char *)(got + (q - jq) * nr * kc));
        CHECK_MSG(memcmp(got, want, nf * sizeof(float)) == 0, "%s: panel pack of n %zu panels [%zu, %zu) k [%zu, +%zu)",
                  kr->name, n, jq, jqend, p0, kc);
        if (kr->pack_b_block) {
            memset(got, 0x5a, nf * sizeof(float));
            memset(got + nf, 0xa5, 16 * sizeof(float));
            memset(want + nf, 0xa5, 16 * sizeof(float));
            kr->pack_b_block(B.v, B.ld, jq, jqend, n, p0, kc, kr->kgran, (unsigned char *)got);
            CHECK_MSG(memcmp(got, want, (nf + 16) * sizeof(float)) == 0,
                      "%s: block pack of n %zu panels [%zu, %zu) k [%zu, +%zu)", kr->name, n, jq, jqend, p0, kc);
        }
        free(B.v); free(want); free(got);
    }
}

int main(void)
{
    RUN(test_gemm_small_odd_sizes);
    RUN(test_gemm_tile_and_block_edges);
    RUN(test_gemm_alpha_beta);
    RUN(test_gemm_alpha_zero);
    RUN(test_gemm_by_hand);
    RUN(test_syrk);
    RUN(test_syrk_matches_gemm);
    RUN(test_errors_leave_c_untouched);
    RUN(test_ws_fewer_threads);
    RUN(test_allocation_policy);
    RUN(test_scalar_vs_simd);
    RUN(test_threads_bitwise);
    RUN(test_cache_rule);
    RUN(test_cache_detection);
    RUN(test_cache_blocks_bits);
    RUN(test_pack_b_block);
    return TEST_REPORT();
}
