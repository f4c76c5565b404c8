/* tests/test_muon.c - muon.h against float64 references written here from SPEC.md section 2.
 * Every reference below (transfer polynomials, Newton-Schulz in double, momentum, AdamW, power
 * iteration) is an independent plain-double implementation of the math, not a call into muon.h.
 */
#include <float.h>
#include <stdlib.h>
/* an allocator that can be told to fail, to reach MUON_ERR_NOMEM */
static int t_fail_alloc;
static void *t_malloc(size_t n) { return t_fail_alloc ? NULL : malloc(n); }
#define MUON_MALLOC(sz) t_malloc(sz)
#define MUON_FREE(p) free(p)
#define MUON_IMPLEMENTATION
#include "muon.h"
#include "test.h"

/* ---------------------------------------------------------------- double-precision helpers */

static double *dalloc(size_t n)
{
    double *p = (double *)calloc(n ? n : 1, sizeof(double));
    if (!p) abort();
    return p;
}
static float *falloc(size_t n)
{
    float *p = (float *)calloc(n ? n : 1, sizeof(float));
    if (!p) abort();
    return p;
}

/* Q (n x n) orthogonal: Gram-Schmidt (twice) of a Gaussian matrix; columns are Q[i*n + j], col j */
static void rand_orth(t_rng *r, size_t n, double *Q)
{
    size_t i, j, k, pass;
    for (i = 0; i < n * n; i++) Q[i] = t_rng_normal(r);
    for (j = 0; j < n; j++) {
        for (pass = 0; pass < 2; pass++)
            for (k = 0; k < j; k++) {
                double d = 0.0;
                for (i = 0; i < n; i++) d += Q[i * n + j] * Q[i * n + k];
                for (i = 0; i < n; i++) Q[i * n + j] -= d * Q[i * n + k];
            }
        {
            double nn = 0.0;
            for (i = 0; i < n; i++) nn += Q[i * n + j] * Q[i * n + j];
            nn = sqrt(nn);
            for (i = 0; i < n; i++) Q[i * n + j] /= nn;
        }
    }
}

/* M = U diag(s) V^T for rows x cols, U rows x rows, V cols x cols; s has min(rows, cols) entries */
static void build_usv(size_t rows, size_t cols, const double *U, const double *s, const double *V, double *M)
{
    size_t p = rows < cols ? rows : cols, i, j, k;
    for (i = 0; i < rows; i++)
        for (j = 0; j < cols; j++) {
            double acc = 0.0;
            for (k = 0; k < p; k++) acc += U[i * rows + k] * s[k] * V[j * cols + k];
            M[i * cols + j] = acc;
        }
}

/* reference odd-polynomial composition, triples given explicitly */
static double ref_compose(const double (*tr)[3], int count, int cycle, int K, double x)
{
    int k;
    for (k = 0; k < K; k++) {
        const double *t = tr[k < count ? k : (cycle ? k % count : count - 1)];
        x = t[0] * x + t[1] * x * x * x + t[2] * x * x * x * x * x;
    }
    return x;
}

static const double JORDAN[1][3] = {{3.4445, -4.7750, 2.0315}};


/* sigma_1 of a rows x cols double matrix by long power iteration (well-separated tests only) */
static double ref_sigma1(const double *M, size_t rows, size_t cols, double *uo, double *vo)
{
    double *v = dalloc(cols), *u = dalloc(rows), s = 0.0;
    size_t i, j;
    int it;
    for (j = 0; j < cols; j++) v[j] = 1.0 + 0.1 * (double)j;
    for (it = 0; it < 3000; it++) {
        double nv = 0.0;
        for (i = 0; i < rows; i++) {
            double acc = 0.0;
            for (j = 0; j < cols; j++) acc += M[i * cols + j] * v[j];
            u[i] = acc;
        }
        s = 0.0;
        for (i = 0; i < rows; i++) s += u[i] * u[i];
        s = sqrt(s);
        for (i = 0; i < rows; i++) u[i] /= s;
        for (j = 0; j < cols; j++) {
            double acc = 0.0;
            for (i = 0; i < rows; i++) acc += M[i * cols + j] * u[i];
            v[j] = acc;
        }
        for (j = 0; j < cols; j++) nv += v[j] * v[j];
        nv = sqrt(nv);
        for (j = 0; j < cols; j++) v[j] /= nv;
        s = nv;
    }
    if (uo) memcpy(uo, u, rows * sizeof(double));
    if (vo) memcpy(vo, v, cols * sizeof(double));
    free(u); free(v);
    return s;
}

static void to_float(const double *a, float *f, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) f[i] = (float)a[i];
}

static void rand_fill(t_rng *r, float *a, size_t n, double scale)
{
    size_t i;
    for (i = 0; i < n; i++) a[i] = (float)(scale * t_rng_normal(r));
}

static double max_abs_diff_fd(const float *a, const double *b, size_t n)
{
    double m = 0.0;
    size_t i;
    for (i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= m)) m = d;
    }
    return m;
}

/* ---------------------------------------------------------------- schedules and transfer */

static void test_status_strings(void)
{
    int s;
    for (s = MUON_OK; s <= MUON_ERR_UNREACHABLE; s++) {
        const char *a = muon_status_string((muon_status)s);
        CHECK(a != NULL && a[0] != '\0');
        if (s > 0) CHECK(strcmp(a, muon_status_string((muon_status)(s - 1))) != 0);
    }
    CHECK((int)MUON_OK == 0 && muon_status_string((muon_status)99) != NULL);
}

static void test_presets(void)
{
    muon_ns_config j = muon_ns_preset(MUON_NS_JORDAN, 0), p = muon_ns_preset(MUON_NS_POLAR_EXPRESS, 0);
    muon_ns_config d = muon_ns_preset(MUON_NS_DEEPSEEK_V4, 0), c = muon_ns_preset(MUON_NS_CUBIC, 0);
    muon_ns_config z, bad = muon_ns_preset((muon_ns_kind)99, 0);
    float G[6] = {1, 2, 3, 4, 5, 6}, out[6];
    int i;
    CHECK(j.count == 1 && j.steps == 5 && j.safety == 1.0 && j.eps == 1e-7 && j.mode == MUON_NS_REPEAT_LAST);
    CHECK(j.coeffs[0][0] == 3.4445 && j.coeffs[0][1] == -4.7750 && j.coeffs[0][2] == 2.0315);
    CHECK(p.count == 8 && p.steps == 5 && p.safety == 1.01);
    CHECK_NEAR(p.coeffs[0][0], 8.28721201814563 / 1.01, 0, 1e-15);
    CHECK_NEAR(p.coeffs[0][1], -23.595886519098837 / (1.01 * 1.01 * 1.01), 0, 1e-14);
    CHECK_NEAR(p.coeffs[0][2], 17.300387312530933 / pow(1.01, 5), 0, 1e-14);
    CHECK_NEAR(p.coeffs[6][0], 1.8750014808534479 / 1.01, 0, 1e-15);
    CHECK(p.coeffs[7][0] == 1.875 && p.coeffs[7][1] == -1.25 && p.coeffs[7][2] == 0.375);
    CHECK(d.count == 10 && d.steps == 10);
    for (i = 0; i < 8; i++) CHECK(d.coeffs[i][0] == 3.4445 && d.coeffs[i][2] == 2.0315);
    CHECK(d.coeffs[8][0] == 2.0 && d.coeffs[9][1] == -1.5 && d.coeffs[9][2] == 0.5);
    CHECK(c.count == 1 && c.coeffs[0][0] == 1.5 && c.coeffs[0][1] == -0.5 && c.coeffs[0][2] == 0.0);
    CHECK(muon_ns_preset(MUON_NS_JORDAN, 7).steps == 7);
    CHECK(muon_ns_preset(MUON_NS_POLAR_EXPRESS, -2).steps == 5); /* PE x 5 by default, 8 triples */
    CHECK(muon_ns_preset(MUON_NS_POLAR_EXPRESS, 8).steps == 8);
    { /* past MUON_NS_MAX_STEPS: stored as given (not clamped) and rejected everywhere */
        muon_ns_config big = muon_ns_preset(MUON_NS_JORDAN, MUON_NS_MAX_STEPS + 1);
        muon_config mc = muon_default();
        float keep[6];
        CHECK(big.steps == MUON_NS_MAX_STEPS + 1);
        memset(out, 0x5A, sizeof out);
        memcpy(keep, out, sizeof out);
        CHECK(muon_orthogonalize(G, 2, 3, 3, &big, out, 3) == MUON_ERR_DOMAIN);
        CHECK(memcmp(out, keep, sizeof out) == 0);
        CHECK(muon_ns_transfer(&big, 0.3) != muon_ns_transfer(&big, 0.3));
        mc.ns = big;
        {
            muon_state st;
            float W[6] = {1, 0, 0, 0, 1, 0}, Wk[6];
            memcpy(Wk, W, sizeof W);
            CHECK(muon_init(&st, 2, 3) == MUON_OK);
            CHECK(muon_step(&st, &mc, W, 3, G, 3, NULL, 0) == MUON_ERR_DOMAIN);
            CHECK(memcmp(W, Wk, sizeof W) == 0 && st.step == 0);
            muon_free(&st);
        }
    }
    /* zeroed config == Jordan x 5; NULL == Jordan x 5 */
    memset(&z, 0, sizeof z);
    CHECK(muon_ns_transfer(&z, 0.3) == muon_ns_transfer(&j, 0.3));
    CHECK(muon_ns_transfer(NULL, 0.3) == muon_ns_transfer(&j, 0.3));
    /* unknown kind is rejected */
    CHECK(muon_orthogonalize(G, 2, 3, 3, &bad, out, 3) == MUON_ERR_DOMAIN);
    CHECK(muon_ns_transfer(&bad, 0.3) != muon_ns_transfer(&bad, 0.3)); /* NaN */
}

/* least x in [lo, hi] with f(x) >= t, f increasing there (bisection) */
static double solve_transfer(const muon_ns_config *ns, double t, double lo, double hi)
{
    int i;
    for (i = 0; i < 200; i++) {
        double mid = 0.5 * (lo + hi);
        if (muon_ns_transfer(ns, mid) < t) lo = mid; else hi = mid;
    }
    return 0.5 * (lo + hi);
}

static void test_transfer_jordan_facts(void)
{
    muon_ns_config j = muon_ns_preset(MUON_NS_JORDAN, 5);
    double lo = 1e9, hi = -1e9, x;
    int i;
    CHECK_NEAR(muon_ns_transfer(&j, 1e-9) / 1e-9, 484.9, 0.05, 0);
    CHECK_NEAR(muon_ns_transfer(&j, 1e-9) / 1e-9, pow(3.4445, 5), 0, 1e-6);
    CHECK_NEAR(solve_transfer(&j, 0.5, 1e-6, 0.01), 1.07e-3, 0, 0.005);
    CHECK_NEAR(solve_transfer(&j, 0.7, 1e-6, 0.01), 1.55e-3, 0, 0.005);
    CHECK_NEAR(solve_transfer(&j, 0.9, 1e-6, 0.01), 2.13e-3, 0, 0.005);
    for (i = 0; i <= 100000; i++) {
        double f = muon_ns_transfer(&j, 0.05 + 0.95 * i / 100000.0);
        if (f < lo) lo = f;
        if (f > hi) hi = f;
    }
    CHECK_NEAR(lo, 0.68, 0.005, 0);
    CHECK_NEAR(hi, 1.13, 0.005, 0);
    /* against the reference composition */
    for (x = 1e-4; x < 1.0; x *= 1.7)
        CHECK_NEAR(muon_ns_transfer(&j, x), ref_compose(JORDAN, 1, 0, 5, x), 1e-15, 1e-13);
    CHECK(muon_ns_transfer(&j, 0.0) == 0.0);
    CHECK_NEAR(muon_ns_transfer(&j, -0.3), -muon_ns_transfer(&j, 0.3), 0, 1e-15); /* odd */
}

static void test_transfer_polar_express(void)
{
    muon_ns_config p = muon_ns_preset(MUON_NS_POLAR_EXPRESS, 5);
    double lo = 1e9, hi = -1e9;
    double tr[8][3] = {{8.28721201814563, -23.595886519098837, 17.300387312530933},
                       {4.107059111542203, -2.9478499167379106, 0.5448431082926601},
                       {3.9486908534822946, -2.908902115962949, 0.5518191394370137},
                       {3.3184196573706015, -2.488488024314874, 0.51004894012372},
                       {2.300652019954817, -1.6689039845747493, 0.4188073119525673},
                       {1.891301407787398, -1.2679958271945868, 0.37680408948524835},
                       {1.8750014808534479, -1.2500016453999487, 0.3750001645474248},
                       {1.875, -1.25, 0.375}};
    int i;
    for (i = 0; i < 7; i++) {
        tr[i][0] /= 1.01;
        tr[i][1] /= 1.01 * 1.01 * 1.01;
        tr[i][2] /= 1.01 * 1.01 * 1.01 * 1.01 * 1.01;
    }
    CHECK_NEAR(solve_transfer(&p, 0.5, 1e-6, 0.01), 5.39e-4, 0, 0.005);
    for (i = 0; i <= 100000; i++) {
        double f = muon_ns_transfer(&p, 0.05 + 0.95 * i / 100000.0);
        if (f < lo) lo = f;
        if (f > hi) hi = f;
    }
    CHECK_NEAR(lo, 0.87, 0.005, 0);
    CHECK_NEAR(hi, 1.12, 0.005, 0);
    for (i = 1; i <= 12; i++) { /* beyond 8 steps: the last triple repeats */
        muon_ns_config q = muon_ns_preset(MUON_NS_POLAR_EXPRESS, i);
        CHECK_NEAR(muon_ns_transfer(&q, 0.01), ref_compose((const double(*)[3])tr, 8, 0, i, 0.01 / 1.01), 1e-15, 1e-12);
    }
}

static void test_schedule_modes(void)
{
    muon_ns_config c;
    static const double tr[2][3] = {{1.5, -0.5, 0.0}, {2.0, -1.5, 0.5}};
    int K;
    memset(&c, 0, sizeof c);
    c.count = 2;
    memcpy(c.coeffs, tr, sizeof tr);
    for (K = 1; K <= 7; K++) {
        c.steps = K;
        c.mode = MUON_NS_REPEAT_LAST;
        CHECK_NEAR(muon_ns_transfer(&c, 0.2), ref_compose(tr, 2, 0, K, 0.2), 0, 1e-14);
        c.mode = MUON_NS_CYCLE;
        CHECK_NEAR(muon_ns_transfer(&c, 0.2), ref_compose(tr, 2, 1, K, 0.2), 0, 1e-14);
    }
    /* they differ from step 4 on (triples 1,2,2,2 vs 1,2,1,2) */
    c.steps = 4;
    c.mode = MUON_NS_REPEAT_LAST;
    {
        double a = muon_ns_transfer(&c, 0.2);
        c.mode = MUON_NS_CYCLE;
        CHECK(fabs(a - muon_ns_transfer(&c, 0.2)) > 1e-6);
    }
    /* steps == 0: each triple once; safety 0 means 1 */
    c.steps = 0;
    c.mode = MUON_NS_REPEAT_LAST;
    CHECK_NEAR(muon_ns_transfer(&c, 0.2), ref_compose(tr, 2, 0, 2, 0.2), 0, 1e-14);
    c.safety = 2.0;
    CHECK_NEAR(muon_ns_transfer(&c, 0.2), ref_compose(tr, 2, 0, 2, 0.1), 0, 1e-14);
}

static void test_min_steps_and_choose(void)
{
    muon_ns_config j = muon_ns_preset(MUON_NS_JORDAN, 5), cub = muon_ns_preset(MUON_NS_CUBIC, 0), out;
    double sigma = 1e-3, sv[64], ss = 0.0, sq;
    int K, ref = -1, k;
    size_t idx = 99, i;
    /* reference: brute force on the composition */
    for (K = 1; K <= 20 && ref < 0; K++)
        if (ref_compose(JORDAN, 1, 0, K, sigma) >= 0.9) ref = K;
    CHECK(ref > 0);
    CHECK(muon_ns_min_steps(&j, sigma, 0.9, 20) == ref);
    CHECK(muon_ns_min_steps(&j, sigma, 0.9, ref - 1) == -1);
    CHECK(muon_ns_min_steps(&cub, 1e-6, 0.99, 5) == -1);
    CHECK(muon_ns_min_steps(&j, 0.5, 0.5, 0) == -1);
    /* choose on a power-law spectrum sigma_i ~ i^-1 */
    for (i = 0; i < 64; i++) {
        sv[i] = 1.0 / (double)(i + 1);
        ss += sv[i] * sv[i];
    }
    CHECK(muon_sv_quantile(sv, 64, 0.5, &sq) == MUON_OK);
    sq /= sqrt(ss);
    {
        muon_ns_config cands[2];
        int kj, kp;
        cands[0] = j;
        cands[1] = muon_ns_preset(MUON_NS_POLAR_EXPRESS, 0);
        kj = muon_ns_min_steps(&cands[0], sq, 0.95, 30);
        kp = muon_ns_min_steps(&cands[1], sq, 0.95, 30);
        CHECK(kj > 0 && kp > 0);
        CHECK(muon_ns_choose(sv, 64, 0.5, 0.95, 30, cands, 2, &out, &idx) == MUON_OK);
        k = kp < kj ? kp : kj;
        CHECK(out.steps == k);
        CHECK(idx == (kp < kj ? 1u : 0u));
        CHECK(muon_ns_transfer(&out, sq) >= 0.95);
        /* a scaled spectrum gives the same choice (normalised internally) */
        for (i = 0; i < 64; i++) sv[i] *= 1000.0;
        CHECK(muon_ns_choose(sv, 64, 0.5, 0.95, 30, cands, 2, &out, &idx) == MUON_OK && out.steps == k);
    }
    /* presets by default; unreachable target leaves out untouched */
    CHECK(muon_ns_choose(sv, 64, 0.5, 0.9, 30, NULL, 0, &out, NULL) == MUON_OK);
    memset(&out, 0xAB, sizeof out);
    {
        muon_ns_config poison;
        memset(&poison, 0xAB, sizeof poison);
        CHECK(muon_ns_choose(sv, 64, 0.5, 2.0, 3, NULL, 0, &out, NULL) == MUON_ERR_UNREACHABLE);
        CHECK(memcmp(&out, &poison, sizeof out) == 0);
    }
}

static void test_quantile(void)
{
    double sv[5] = {5, 4, 3, 2, 1}, q, unsorted[3] = {1, 2, 3};
    CHECK(muon_sv_quantile(sv, 5, 0.5, &q) == MUON_OK && q == 3.0);
    CHECK(muon_sv_quantile(sv, 5, 0.0, &q) == MUON_OK && q == 1.0);
    CHECK(muon_sv_quantile(sv, 5, 1.0, &q) == MUON_OK && q == 5.0);
    CHECK(muon_sv_quantile(sv, 5, 0.125, &q) == MUON_OK);
    CHECK_NEAR(q, 1.5, 0, 1e-15);
    CHECK(muon_sv_quantile(sv, 1, 0.7, &q) == MUON_OK && q == 5.0);
    q = -7;
    CHECK(muon_sv_quantile(sv, 5, 1.5, &q) == MUON_ERR_DOMAIN && q == -7);
    CHECK(muon_sv_quantile(unsorted, 3, 0.5, &q) == MUON_ERR_DOMAIN && q == -7);
    CHECK(muon_sv_quantile(sv, 0, 0.5, &q) == MUON_ERR_SIZE);
    CHECK(muon_sv_quantile(NULL, 5, 0.5, &q) == MUON_ERR_NULL);
}

/* ---------------------------------------------------------------- Newton-Schulz */

/* NS of U diag(s) V^T must equal U diag(f(s_i / (safety*||G||_F + eps))) V^T */
static void check_ns_svd(t_rng *r, size_t rows, size_t cols, size_t ld_extra, const muon_ns_config *ns,
                         int diagonal, double tol)
{
    size_t p = rows < cols ? rows : cols, i, j, ldg = cols + ld_extra;
    double *U = dalloc(rows * rows), *V = dalloc(cols * cols), *s = dalloc(p), *fs = dalloc(p);
    double *M = dalloc(rows * cols), *E = dalloc(rows * cols), nrm = 0.0;
    float *G = falloc(rows * ldg), *O = falloc(rows * ldg);
    if (diagonal) {
        for (i = 0; i < rows * rows; i++) U[i] = (i % (rows + 1) == 0);
        for (i = 0; i < cols * cols; i++) V[i] = (i % (cols + 1) == 0);
    } else {
        rand_orth(r, rows, U);
        rand_orth(r, cols, V);
    }
    for (i = 0; i < p; i++) s[i] = 0.3 + 0.7 * t_rng_uniform(r);
    build_usv(rows, cols, U, s, V, M);
    for (i = 0; i < rows; i++)
        for (j = 0; j < ldg; j++) G[i * ldg + j] = j < cols ? (float)M[i * cols + j] : NAN; /* padding never read */
    for (i = 0; i < rows; i++)
        for (j = 0; j < cols; j++) nrm += (double)G[i * ldg + j] * G[i * ldg + j];
    nrm = sqrt(nrm);
    /* f evaluated at the exact NS start s/(safety*nrm + eps) (safety folded into the argument) */
    for (i = 0; i < p; i++) {
        muon_ns_config one = *ns;
        one.safety = 1.0;
        fs[i] = muon_ns_transfer(&one, s[i] / (ns->safety * nrm + ns->eps));
    }
    build_usv(rows, cols, U, fs, V, E);
    for (i = 0; i < rows * ldg; i++) O[i] = -12345.0f;
    CHECK(muon_orthogonalize(G, rows, cols, ldg, ns, O, ldg) == MUON_OK);
    {
        double md = 0.0;
        for (i = 0; i < rows; i++)
            for (j = 0; j < cols; j++) {
                double d = fabs((double)O[i * ldg + j] - E[i * cols + j]);
                if (!(d <= md)) md = d;
            }
        CHECK_MSG(md <= tol, "%zux%zu diag=%d max diff %g", rows, cols, diagonal, md);
        for (i = 0; i < rows; i++)
            for (j = cols; j < ldg; j++) CHECK(O[i * ldg + j] == -12345.0f);
    }
    free(U); free(V); free(s); free(fs); free(M); free(E); free(G); free(O);
}

static void test_ns_matches_transfer(void)
{
    t_rng r = {11};
    static const size_t shapes[][2] = {{8, 8}, {6, 10}, {10, 6}, {1, 7}, {7, 1}, {5, 16}, {33, 20}, {1, 1}};
    muon_ns_config js = muon_ns_preset(MUON_NS_JORDAN, 5), pe = muon_ns_preset(MUON_NS_POLAR_EXPRESS, 5);
    muon_ns_config ds = muon_ns_preset(MUON_NS_DEEPSEEK_V4, 0), cy;
    size_t k;
    /* a custom cycling schedule goes through the same path */
    memset(&cy, 0, sizeof cy);
    cy.count = 2;
    cy.steps = 7;
    cy.mode = MUON_NS_CYCLE;
    cy.safety = 1.02;
    cy.coeffs[0][0] = 3.4445, cy.coeffs[0][1] = -4.7750, cy.coeffs[0][2] = 2.0315;
    cy.coeffs[1][0] = 2.0, cy.coeffs[1][1] = -1.5, cy.coeffs[1][2] = 0.5;
    check_ns_svd(&r, 9, 13, 1, &cy, 0, 3e-4);
    check_ns_svd(&r, 13, 9, 0, &cy, 0, 3e-4);
    for (k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        check_ns_svd(&r, shapes[k][0], shapes[k][1], k % 3, &js, 0, 3e-4);
        check_ns_svd(&r, shapes[k][0], shapes[k][1], 1, &js, 1, 3e-4);
        check_ns_svd(&r, shapes[k][0], shapes[k][1], 2, &pe, 0, 3e-4);
        check_ns_svd(&r, shapes[k][0], shapes[k][1], 0, &ds, 0, 3e-4);
    }
}

static void test_cubic_polar_factor(void)
{
    t_rng r = {5};
    static const size_t shapes[][2] = {{6, 6}, {4, 9}, {9, 4}};
    muon_ns_config c = muon_ns_preset(MUON_NS_CUBIC, 40);
    size_t k, i, j;
    c.eps = 0.0;
    for (k = 0; k < 3; k++) {
        size_t rows = shapes[k][0], cols = shapes[k][1], p = rows < cols ? rows : cols;
        double *U = dalloc(rows * rows), *V = dalloc(cols * cols), *s = dalloc(p), *one = dalloc(p);
        double *M = dalloc(rows * cols), *P = dalloc(rows * cols);
        float *G = falloc(rows * cols), *O = falloc(rows * cols);
        rand_orth(&r, rows, U);
        rand_orth(&r, cols, V);
        for (i = 0; i < p; i++) {
            s[i] = 0.2 + t_rng_uniform(&r);
            one[i] = 1.0;
        }
        build_usv(rows, cols, U, s, V, M);
        build_usv(rows, cols, U, one, V, P); /* polar factor U V^T */
        to_float(M, G, rows * cols);
        CHECK(muon_orthogonalize(G, rows, cols, cols, &c, O, cols) == MUON_OK);
        CHECK_MSG(max_abs_diff_fd(O, P, rows * cols) < 2e-5, "diff %g", max_abs_diff_fd(O, P, rows * cols));
        /* and O O^T (wide) / O^T O (tall) = I */
        for (i = 0; i < p; i++)
            for (j = 0; j < p; j++) {
                double acc = 0.0;
                size_t q;
                if (rows <= cols)
                    for (q = 0; q < cols; q++) acc += (double)O[i * cols + q] * O[j * cols + q];
                else
                    for (q = 0; q < rows; q++) acc += (double)O[q * cols + i] * O[q * cols + j];
                CHECK_NEAR(acc, i == j ? 1.0 : 0.0, 5e-5, 0);
            }
        free(U); free(V); free(s); free(one); free(M); free(P); free(G); free(O);
    }
}

static void test_ns_zero_and_tiny(void)
{
    float Z[12], O[12], G[12], Ot[12], Ob[12];
    muon_ns_kind kinds[4] = {MUON_NS_JORDAN, MUON_NS_POLAR_EXPRESS, MUON_NS_DEEPSEEK_V4, MUON_NS_CUBIC};
    muon_ns_config ns;
    t_rng r = {3};
    int k, i;
    memset(Z, 0, sizeof Z);
    for (k = 0; k < 4; k++) {
        ns = muon_ns_preset(kinds[k], 0);
        for (i = 0; i < 12; i++) O[i] = NAN;
        CHECK(muon_orthogonalize(Z, 3, 4, 4, &ns, O, 4) == MUON_OK);
        for (i = 0; i < 12; i++) CHECK(O[i] == 0.0f);
        ns.eps = 0.0; /* eps = 0 is safe on zero input */
        for (i = 0; i < 12; i++) O[i] = NAN;
        CHECK(muon_orthogonalize(Z, 4, 3, 3, &ns, O, 3) == MUON_OK);
        for (i = 0; i < 12; i++) CHECK(O[i] == 0.0f);
    }
    /* ||G||_F ~ 1e-9 and 1e-12: with eps = 0 the result is scale invariant */
    rand_fill(&r, G, 12, 1.0);
    ns = muon_ns_preset(MUON_NS_JORDAN, 5);
    ns.eps = 0.0;
    CHECK(muon_orthogonalize(G, 3, 4, 4, &ns, O, 4) == MUON_OK);
    for (i = 0; i < 12; i++) Ot[i] = G[i] * 1e-9f;
    CHECK(muon_orthogonalize(Ot, 3, 4, 4, &ns, Ob, 4) == MUON_OK);
    for (i = 0; i < 12; i++) CHECK_NEAR(Ob[i], O[i], 1e-5, 1e-5);
    for (i = 0; i < 12; i++) Ot[i] = G[i] * 1e-12f;
    CHECK(muon_orthogonalize(Ot, 3, 4, 4, &ns, Ob, 4) == MUON_OK);
    for (i = 0; i < 12; i++) CHECK_NEAR(Ob[i], O[i], 1e-5, 1e-5);
    /* with eps = 1e-7 (the preset) it is documented to shrink: at ||G||_F ~ 1e-11 the
     * output's Frobenius norm is far below that of the unit-scale result */
    ns.eps = 1e-7;
    CHECK(muon_orthogonalize(Ot, 3, 4, 4, &ns, Ob, 4) == MUON_OK);
    {
        double a = 0.0, b = 0.0;
        for (i = 0; i < 12; i++) {
            a += (double)O[i] * O[i];
            b += (double)Ob[i] * Ob[i];
        }
        CHECK(b < 0.5 * a);
    }
}

static void test_ns_inplace_alias_batched(void)
{
    t_rng r = {7};
    float G[3 * 24], O[3 * 24], P[3 * 24], keep[3 * 24];
    size_t i, k;
    rand_fill(&r, G, 72, 1.0);
    for (k = 0; k < 3; k++) /* very different scales: normalised per matrix */
        for (i = 0; i < 24; i++) G[k * 24 + i] *= (float)pow(100.0, (double)k);
    /* batched == one at a time */
    CHECK(muon_orthogonalize_batched(G, 3, 4, 6, 6, 24, NULL, O, 6, 24) == MUON_OK);
    for (k = 0; k < 3; k++) {
        CHECK(muon_orthogonalize(G + 24 * k, 4, 6, 6, NULL, P + 24 * k, 6) == MUON_OK);
    }
    CHECK(memcmp(O, P, sizeof O) == 0);
    /* each batched output has its own ~unit singular values (norm^2 ~ 4, not 4/1e8) */
    for (k = 0; k < 3; k++) {
        double n2 = 0.0;
        for (i = 0; i < 24; i++) n2 += (double)O[24 * k + i] * O[24 * k + i];
        CHECK(n2 > 1.5 && n2 < 6.0);
    }
    /* in place */
    memcpy(P, G, sizeof G);
    CHECK(muon_orthogonalize_batched(P, 3, 4, 6, 6, 24, NULL, P, 6, 24) == MUON_OK);
    CHECK(memcmp(O, P, sizeof O) == 0);
    /* partial overlap: ALIAS, out untouched */
    memcpy(P, G, sizeof G);
    memcpy(keep, P, sizeof P);
    CHECK(muon_orthogonalize(P, 4, 6, 6, NULL, P + 1, 6) == MUON_ERR_ALIAS);
    CHECK(memcmp(keep, P, sizeof P) == 0);
    /* output strides that overlap: SIZE */
    CHECK(muon_orthogonalize_batched(G, 3, 4, 6, 6, 24, NULL, O, 6, 10) == MUON_ERR_SIZE);
}

static void test_ns_workspace(void)
{
    t_rng r = {9};
    float G[40], O1[40], O2[40];
    size_t need = muon_orthogonalize_workspace_size(5, 8);
    unsigned char *ws = (unsigned char *)malloc(need + 3);
    rand_fill(&r, G, 40, 1.0);
    CHECK(need > 0);
    CHECK(muon_orthogonalize(G, 5, 8, 8, NULL, O1, 8) == MUON_OK);
    /* unaligned caller workspace works */
    CHECK(muon_orthogonalize_ws(G, 5, 8, 8, NULL, O2, 8, ws + 3, need) == MUON_OK);
    CHECK(memcmp(O1, O2, sizeof O1) == 0);
    memcpy(O2, G, sizeof O2);
    CHECK(muon_orthogonalize_ws(G, 5, 8, 8, NULL, O1, 8, ws, need - 1) == MUON_ERR_SIZE);
    { /* batched workspace (concurrent under OpenMP) == minimal workspace (sequential), bitwise */
        float Gb[7 * 40], Ob1[7 * 40], Ob2[7 * 40];
        size_t nb = muon_orthogonalize_batched_workspace_size(7, 5, 8), n1 = muon_orthogonalize_workspace_size(5, 8);
        void *wb = malloc(nb), *w1 = malloc(n1);
        CHECK(nb >= n1 && muon_orthogonalize_batched_workspace_size(0, 5, 8) == 0);
        rand_fill(&r, Gb, 7 * 40, 1.0);
        CHECK(muon_orthogonalize_batched_ws(Gb, 7, 5, 8, 8, 40, NULL, Ob1, 8, 40, wb, nb) == MUON_OK);
        CHECK(muon_orthogonalize_batched_ws(Gb, 7, 5, 8, 8, 40, NULL, Ob2, 8, 40, w1, n1) == MUON_OK);
        CHECK(memcmp(Ob1, Ob2, sizeof Ob1) == 0);
        free(wb);
        free(w1);
    }
    CHECK(muon_orthogonalize_workspace_size(0, 8) == 0);
    CHECK(muon_orthogonalize_workspace_size((size_t)-1, (size_t)-1) == 0);
    free(ws);
}

/* ---------------------------------------------------------------- Muon step */

/* reference Muon step in double (SPEC 2.2); B (rows x cols) updated */
static void ref_muon_step(double *W, double *B, const double *G, size_t rows, size_t cols, double lr,
                          double beta, double wd, int nesterov, int sum_form, double scale, double eps)
{
    double *u = dalloc(rows * cols), *O = dalloc(rows * cols);
    size_t i;
    for (i = 0; i < rows * cols; i++) {
        if (sum_form) {
            B[i] = beta * B[i] + G[i];
            u[i] = nesterov ? G[i] + beta * B[i] : B[i];
        } else {
            B[i] = beta * B[i] + (1 - beta) * G[i];
            u[i] = nesterov ? (1 - beta) * G[i] + beta * B[i] : B[i];
        }
    }
    t_ref_ns(u, rows, cols, JORDAN, 1, 5, 1.0, eps, O);
    for (i = 0; i < rows * cols; i++) W[i] = W[i] * (1 - lr * wd) - lr * scale * O[i];
    free(u); free(O);
}

static void test_muon_golden_3_steps(void)
{
    const size_t rows = 6, cols = 4;
    int form, nest;
    for (form = 0; form < 2; form++)
        for (nest = 0; nest < 2; nest++) {
            t_rng r = {100};
            double Wd[24], Bd[24], Gd[24];
            float W[24], G[24];
            muon_state st;
            muon_config cfg = muon_default();
            int step;
            size_t i;
            cfg.lr = 0.05;
            cfg.momentum = 0.9;
            cfg.weight_decay = 0.1;
            cfg.nesterov = nest;
            cfg.momentum_form = form ? MUON_MOMENTUM_SUM : MUON_MOMENTUM_EMA;
            for (i = 0; i < 24; i++) {
                W[i] = (float)(0.5 * t_rng_normal(&r));
                Wd[i] = W[i];
                Bd[i] = 0.0;
            }
            CHECK(muon_init(&st, rows, cols) == MUON_OK);
            for (step = 0; step < 3; step++) {
                for (i = 0; i < 24; i++) {
                    G[i] = (float)t_rng_normal(&r);
                    Gd[i] = G[i];
                }
                CHECK(muon_step(&st, &cfg, W, cols, G, cols, NULL, 0) == MUON_OK);
                ref_muon_step(Wd, Bd, Gd, rows, cols, 0.05, 0.9, 0.1, nest, form, sqrt(6.0 / 4.0), 1e-7);
            }
            CHECK(st.step == 3);
            CHECK_MSG(max_abs_diff_fd(W, Wd, 24) < 2e-5, "form %d nesterov %d diff %g", form, nest,
                      max_abs_diff_fd(W, Wd, 24));
            CHECK(max_abs_diff_fd(st.momentum, Bd, 24) < 1e-5);
            muon_free(&st);
        }
}

static void test_momentum_forms_agree(void)
{
    int nest;
    for (nest = 0; nest < 2; nest++) {
        t_rng r = {21};
        float W1[35], W2[35], G[35];
        muon_state s1, s2;
        muon_config c1 = muon_default(), c2;
        int step;
        size_t i;
        c1.ns.eps = 0.0;
        c1.nesterov = nest;
        c2 = c1;
        c2.momentum_form = MUON_MOMENTUM_SUM;
        rand_fill(&r, W1, 35, 1.0);
        memcpy(W2, W1, sizeof W1);
        CHECK(muon_init(&s1, 5, 7) == MUON_OK && muon_init(&s2, 5, 7) == MUON_OK);
        for (step = 0; step < 5; step++) {
            rand_fill(&r, G, 35, 1.0);
            CHECK(muon_step(&s1, &c1, W1, 7, G, 7, NULL, 0) == MUON_OK);
            CHECK(muon_step(&s2, &c2, W2, 7, G, 7, NULL, 0) == MUON_OK);
        }
        for (i = 0; i < 35; i++) CHECK_NEAR(W1[i], W2[i], 1e-5, 1e-5);
        /* and the momenta differ by the factor 1/(1-beta) */
        for (i = 0; i < 35; i++) CHECK_NEAR(s2.momentum[i] * (1.0 - 0.95), s1.momentum[i], 1e-5, 1e-4);
        muon_free(&s1);
        muon_free(&s2);
    }
}

/* one step from zero momentum, beta 0, no Nesterov, no decay: W1 = W0 - lr*scale*NS(G) */
static void test_scale_modes_and_split(void)
{
    static const size_t shapes[][2] = {{12, 4}, {4, 12}, {5, 5}};
    size_t k, i;
    for (k = 0; k < 3; k++) {
        size_t rows = shapes[k][0], cols = shapes[k][1], n = rows * cols;
        double rr = (double)rows, cc = (double)cols;
        double want[4];
        muon_scale_mode modes[4] = {MUON_SCALE_ORIGINAL, MUON_SCALE_MATCH_ADAMW, MUON_SCALE_SPECTRAL, MUON_SCALE_NONE};
        int m;
        t_rng r = {40};
        float G[60], W[60], O[60];
        want[0] = sqrt(rr > cc ? rr / cc : 1.0);
        want[1] = 0.2 * sqrt(rr > cc ? rr : cc);
        want[2] = sqrt(rr / cc);
        want[3] = 1.0;
        rand_fill(&r, G, n, 1.0);
        CHECK(muon_orthogonalize(G, rows, cols, cols, NULL, O, cols) == MUON_OK);
        for (m = 0; m < 4; m++) {
            muon_state st;
            muon_config cfg = muon_default();
            cfg.momentum = 0.0;
            cfg.nesterov = 0;
            cfg.lr = 0.1;
            cfg.scale = modes[m];
            memset(W, 0, sizeof W);
            CHECK(muon_init(&st, rows, cols) == MUON_OK);
            CHECK(muon_step(&st, &cfg, W, cols, G, cols, NULL, 0) == MUON_OK);
            for (i = 0; i < n; i++) CHECK_NEAR(W[i], -0.1 * want[m] * O[i], 1e-7, 1e-5);
            muon_free(&st);
        }
        { /* DeepSeek-V4's coefficient */
            muon_state st;
            muon_config cfg = muon_default();
            cfg.momentum = 0.0;
            cfg.nesterov = 0;
            cfg.lr = 0.1;
            cfg.scale = MUON_SCALE_MATCH_ADAMW;
            cfg.scale_coeff = 0.18;
            memset(W, 0, sizeof W);
            CHECK(muon_init(&st, rows, cols) == MUON_OK);
            CHECK(muon_step(&st, &cfg, W, cols, G, cols, NULL, 0) == MUON_OK);
            for (i = 0; i < n; i++) CHECK_NEAR(W[i], -0.1 * 0.18 * sqrt(rr > cc ? rr : cc) * O[i], 1e-7, 1e-5);
            muon_free(&st);
        }
    }
    { /* fused QKV: 12 x 4 split in 3 chunks of 4 x 4, each its own NS and the chunk's scale */
        t_rng r = {41};
        float G[48], W[48], O[48];
        muon_state st;
        muon_config cfg = muon_default();
        cfg.momentum = 0.0;
        cfg.nesterov = 0;
        cfg.lr = 0.1;
        cfg.split_rows = 3;
        cfg.scale = MUON_SCALE_MATCH_ADAMW;
        rand_fill(&r, G, 48, 1.0);
        for (i = 0; i < 16; i++) G[16 + i] *= 50.0f; /* chunk scales differ */
        CHECK(muon_orthogonalize_batched(G, 3, 4, 4, 4, 16, NULL, O, 4, 16) == MUON_OK);
        memset(W, 0, sizeof W);
        CHECK(muon_init(&st, 12, 4) == MUON_OK);
        CHECK(muon_step(&st, &cfg, W, 4, G, 4, NULL, 0) == MUON_OK);
        for (i = 0; i < 48; i++) CHECK_NEAR(W[i], -0.1 * 0.2 * 2.0 * O[i], 1e-7, 1e-5); /* sqrt(max(4,4)) */
        cfg.split_rows = 5; /* does not divide 12 */
        CHECK(muon_step(&st, &cfg, W, 4, G, 4, NULL, 0) == MUON_ERR_SIZE);
        muon_free(&st);
    }
}

static void test_muon_zero_grad_and_untouched(void)
{
    t_rng r = {50};
    float W[20], W0[20], G[20], G0[20];
    muon_state st;
    muon_config cfg = muon_default();
    size_t i;
    rand_fill(&r, W, 20, 1.0);
    memcpy(W0, W, sizeof W);
    memset(G, 0, sizeof G);
    CHECK(muon_init(&st, 4, 5) == MUON_OK);
    CHECK(muon_step(&st, &cfg, W, 5, G, 5, NULL, 0) == MUON_OK); /* zero gradient: zero step, no NaN */
    CHECK(memcmp(W, W0, sizeof W) == 0);
    rand_fill(&r, G, 20, 1.0);
    memcpy(G0, G, sizeof G);
    CHECK(muon_step(&st, &cfg, W, 5, G, 5, NULL, 0) == MUON_OK);
    CHECK(memcmp(G, G0, sizeof G) == 0); /* caller's gradient never modified */
    for (i = 0; i < 20; i++) CHECK(W[i] == W[i] && W[i] != W0[i]);
    muon_free(&st);
}

static void test_muon_ws_variants(void)
{
    t_rng r = {60};
    float W1[30], W2[30], G[30];
    muon_state s1, s2;
    muon_config cfg = muon_default();
    size_t need = muon_step_workspace_size(6, 5, &cfg);
    void *ws = malloc(need);
    int k;
    rand_fill(&r, W1, 30, 1.0);
    rand_fill(&r, G, 30, 1.0);
    memcpy(W2, W1, sizeof W1);
    CHECK(muon_init(&s1, 6, 5) == MUON_OK);
    CHECK(muon_init_ex(&s2, 6, 5, 0) == MUON_OK);
    CHECK(s2.workspace == NULL);
    CHECK(muon_step(&s2, &cfg, W2, 5, G, 5, NULL, 0) == MUON_ERR_NULL);
    for (k = 0; k < 3; k++) {
        rand_fill(&r, G, 30, 1.0);
        CHECK(muon_step(&s1, &cfg, W1, 5, G, 5, NULL, 0) == MUON_OK);
        CHECK(muon_step_ws(&s2, &cfg, W2, 5, G, 5, NULL, 0, ws, need) == MUON_OK);
    }
    CHECK(memcmp(W1, W2, sizeof W1) == 0);
    CHECK(muon_step_ws(&s2, &cfg, W2, 5, G, 5, NULL, 0, ws, need - 1) == MUON_ERR_SIZE);
    muon_free(&s1);
    muon_free(&s2);
    muon_free(&s2); /* double free is safe: zeroed */
    muon_free(NULL);
    free(ws);
}

/* ---------------------------------------------------------------- singular values */

static void test_singular_values(void)
{
    t_rng r = {70};
    static const size_t shapes[][2] = {{7, 7}, {5, 9}, {9, 5}, {1, 6}, {6, 1}, {12, 8}};
    size_t k, i;
    for (k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        size_t rows = shapes[k][0], cols = shapes[k][1], p = rows < cols ? rows : cols;
        double *U = dalloc(rows * rows), *V = dalloc(cols * cols), *s = dalloc(p), *M = dalloc(rows * cols);
        double *sv = dalloc(p);
        float *F = falloc(rows * cols);
        int rank_def;
        for (rank_def = 0; rank_def < 2; rank_def++) {
            rand_orth(&r, rows, U);
            rand_orth(&r, cols, V);
            for (i = 0; i < p; i++) s[i] = (double)(p - i) * 0.7; /* distinct, descending */
            if (rank_def && p > 1) s[p - 1] = 0.0, s[p / 2] = 0.0;
            if (rank_def && p > 1) { /* keep descending */
                size_t a, b;
                for (a = 0; a < p; a++)
                    for (b = a + 1; b < p; b++)
                        if (s[b] > s[a]) { double t = s[a]; s[a] = s[b]; s[b] = t; }
            }
            build_usv(rows, cols, U, s, V, M);
            to_float(M, F, rows * cols);
            CHECK(muon_singular_values(F, rows, cols, cols, sv) == MUON_OK);
            for (i = 0; i < p; i++) CHECK_NEAR(sv[i], s[i], 2e-6 * s[0], 0);
            for (i = 1; i < p; i++) CHECK(sv[i] <= sv[i - 1]);
        }
        free(U); free(V); free(s); free(M); free(sv); free(F);
    }
    { /* relative accuracy on tiny values of a scaled diagonal matrix (no float rounding involved) */
        float D[12];
        double sv[3];
        memset(D, 0, sizeof D);
        D[0 * 4 + 2] = 1e-20f;
        D[1 * 4 + 0] = 3.0f;
        D[2 * 4 + 3] = 2e-10f;
        CHECK(muon_singular_values(D, 3, 4, 4, sv) == MUON_OK);
        CHECK_NEAR(sv[0], 3.0, 0, 1e-15);
        CHECK_NEAR(sv[1], (double)2e-10f, 0, 1e-14);
        CHECK_NEAR(sv[2], (double)1e-20f, 0, 1e-14);
    }
    { /* all zero */
        float Z[6] = {0, 0, 0, 0, 0, 0};
        double sv[2] = {5, 5};
        CHECK(muon_singular_values(Z, 2, 3, 3, sv) == MUON_OK && sv[0] == 0.0 && sv[1] == 0.0);
    }
}

/* The Gram path (issue 49's cheap budget estimate): against the spectrum it was built from and
 * against the Jacobi values of the same float matrix, over a geometric spectrum spanning 1e-4 */
static void test_singular_values_gram(void)
{
    t_rng r = {71};
    static const size_t shapes[][2] = {{7, 7}, {5, 9}, {9, 5}, {1, 6}, {6, 1}, {24, 40}, {40, 24}, {2, 2}};
    size_t k, i;
    for (k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        size_t rows = shapes[k][0], cols = shapes[k][1], p = rows < cols ? rows : cols;
        double *U = dalloc(rows * rows), *V = dalloc(cols * cols), *s = dalloc(p), *M = dalloc(rows * cols);
        double *sg = dalloc(p), *sj = dalloc(p);
        float *F = falloc(rows * cols);
        int form;
        for (form = 0; form < 3; form++) { /* geometric, with a repeated value, rank deficient */
            rand_orth(&r, rows, U);
            rand_orth(&r, cols, V);
            for (i = 0; i < p; i++) s[i] = 2.0 * pow(1e-4, p > 1 ? (double)i / (double)(p - 1) : 0.0);
            if (form == 1 && p > 2) s[1] = s[2];
            if (form == 2 && p > 1) s[p - 1] = 0.0;
            build_usv(rows, cols, U, s, V, M);
            to_float(M, F, rows * cols);
            CHECK(muon_singular_values_gram(F, rows, cols, cols, sg) == MUON_OK);
            CHECK(muon_singular_values(F, rows, cols, cols, sj) == MUON_OK);
            for (i = 0; i < p; i++) {
                /* the float matrix's own values (Jacobi) to the Gram path's bound, relative
                 * 16 p eps (sigma_1 / sigma)^2, down to 1e-4 sigma_1; the built spectrum to the
                 * float rounding of M */
                if (s[i] >= 1e-4 * s[0] * 0.999)
                    CHECK_NEAR(sg[i], sj[i], 0, 16.0 * (double)p * DBL_EPSILON * (s[0] / s[i]) * (s[0] / s[i]) + 1e-13);
                CHECK_NEAR(sg[i], s[i], 2e-6 * s[0], 0);
                if (i) CHECK(sg[i] <= sg[i - 1]);
                CHECK(sg[i] >= 0.0);
            }
        }
        free(U); free(V); free(s); free(M); free(sg); free(sj); free(F);
    }
    { /* QL and its bisection fallback on the same tridiagonals (the fallback never runs on
       * these: only this calls it) */
        static const size_t ps[] = {1, 2, 3, 17, 64};
        for (k = 0; k < sizeof ps / sizeof ps[0]; k++) {
            size_t p = ps[k];
            double *d = dalloc(p), *e = dalloc(p), *dq = dalloc(p), *eq = dalloc(p), *sb = dalloc(p);
            for (i = 0; i < p; i++) { /* diagonally dominant: positive definite */
                d[i] = 3.0 + 2.0 * (double)(i % 5) + 0.25 * (double)i;
                e[i] = i + 1 < p ? 0.5 + 0.1 * (double)(i % 3) : 0.0;
                if (k == 4 && i == 30) e[i] = 0.0; /* a split */
            }
            memcpy(dq, d, p * sizeof(double));
            memcpy(eq, e, p * sizeof(double));
            CHECK(muon__tridiag_ql(dq, eq, p) == 1);
            muon__tridiag_bisect(d, e, p, sb);
            for (i = 1; i < p; i++) { /* QL's values sorted, non-increasing */
                size_t a = i;
                double x = dq[i];
                while (a > 0 && dq[a - 1] < x) dq[a] = dq[a - 1], a--;
                dq[a] = x;
            }
            for (i = 0; i < p; i++) CHECK_NEAR(sb[i], sqrt(dq[i]), 0, 1e-13);
            { /* the trace: the eigenvalues' sum */
                double tr = 0.0, sum = 0.0;
                for (i = 0; i < p; i++) tr += d[i], sum += sb[i] * sb[i];
                CHECK_NEAR(sum, tr, 0, 1e-12);
            }
            free(d); free(e); free(dq); free(eq); free(sb);
        }
    }
    { /* a zero matrix, a zero column, a 1 x 1 */
        float Z[6] = {0, 0, 0, 0, 0, 0}, C[6] = {3, 0, 4, 0, 0, 0}, one = -2.5f;
        double sv[2] = {5, 5};
        CHECK(muon_singular_values_gram(Z, 2, 3, 3, sv) == MUON_OK && sv[0] == 0.0 && sv[1] == 0.0);
        CHECK(muon_singular_values_gram(C, 3, 2, 2, sv) == MUON_OK);
        CHECK_NEAR(sv[0], 5.0, 0, 1e-15);
        CHECK(sv[1] >= 0.0 && sv[1] <= 1e-8 * 5.0); /* noise near 0, as documented */
        CHECK(muon_singular_values_gram(&one, 1, 1, 1, sv) == MUON_OK && sv[0] == 2.5);
    }
    { /* the statuses, nothing written on failure */
        float G[20], ws_f[4];
        double sv[4] = {7, 7, 7, 7};
        static double big[64];
        for (i = 0; i < 20; i++) G[i] = (float)i - 9.5f;
        CHECK(muon_singular_values_gram(NULL, 4, 5, 5, sv) == MUON_ERR_NULL);
        CHECK(muon_singular_values_gram(G, 4, 5, 5, NULL) == MUON_ERR_NULL);
        CHECK(muon_singular_values_gram(G, 0, 5, 5, sv) == MUON_ERR_SIZE);
        CHECK(muon_singular_values_gram(G, 4, 5, 4, sv) == MUON_ERR_SIZE);
        CHECK(muon_singular_values_gram_workspace_size(0, 5) == 0);
        CHECK(muon_singular_values_gram_workspace_size((size_t)-1 / 4, (size_t)-1 / 4) == 0);
        CHECK(muon_singular_values_gram_ws(G, 4, 5, 5, sv, ws_f, sizeof ws_f) == MUON_ERR_SIZE);
        memcpy(big, G, sizeof G); /* M inside the workspace */
        CHECK(muon_singular_values_gram_ws((const float *)(void *)big, 4, 5, 5, sv, big, sizeof big) == MUON_ERR_ALIAS);
        CHECK(muon_singular_values_gram_ws(G, 4, 5, 5, (double *)big, big, sizeof big) == MUON_ERR_ALIAS);
        G[7] = NAN;
        CHECK(muon_singular_values_gram(G, 4, 5, 5, sv) == MUON_ERR_NONFINITE);
        for (i = 0; i < 4; i++) CHECK(sv[i] == 7.0);
    }
}

/* ---------------------------------------------------------------- spectral cap */

static void test_cap_first_order(void)
{
    const size_t rows = 8, cols = 6;
    t_rng r = {80};
    double U[64], V[36], s[6] = {3.0, 1.5, 1.0, 0.7, 0.4, 0.2}, M[48], u[8], v[6], sigma, c;
    double Wd[48], X[48];
    float W[48], D[48], Dc[48];
    size_t i;
    int mode;
    rand_orth(&r, rows, U);
    rand_orth(&r, cols, V);
    build_usv(rows, cols, U, s, V, M);
    to_float(M, W, 48);
    for (i = 0; i < 48; i++) Wd[i] = W[i];
    /* power iteration meets the top pair (sign-free comparison) */
    memset(v, 0, sizeof v);
    CHECK(muon_top_singular_pair(W, rows, cols, cols, 200, u, v, &sigma) == MUON_OK);
    CHECK_NEAR(sigma, 3.0, 1e-5, 0);
    {
        double du = 0.0, dv = 0.0;
        for (i = 0; i < rows; i++) du += u[i] * U[i * rows + 0];
        for (i = 0; i < cols; i++) dv += v[i] * V[i * cols + 0];
        CHECK_NEAR(fabs(du), 1.0, 1e-6, 0);
        CHECK_NEAR(fabs(dv), 1.0, 1e-6, 0);
        CHECK(du * dv > 0.0); /* a consistent pair */
    }
    for (mode = 0; mode < 2; mode++) {
        double s0, g1, g2, t1 = 1e-4, t2 = 5e-5, cu;
        rand_fill(&r, D, 48, 1.0);
        /* make the raw growth positive (mode 0) or negative (mode 1) */
        cu = 0.0;
        {
            size_t a, b;
            for (a = 0; a < rows; a++)
                for (b = 0; b < cols; b++) cu += u[a] * D[a * cols + b] * v[b];
            if ((mode == 0 && cu < 0) || (mode == 1 && cu > 0)) {
                for (i = 0; i < 48; i++) D[i] = -D[i];
                cu = -cu;
            }
        }
        memcpy(Dc, D, sizeof D);
        CHECK(muon_spectral_cap(Dc, rows, cols, cols, u, v, MUON_CAP_GROWTH, &c) == MUON_OK);
        CHECK_NEAR(c, cu, 1e-9, 1e-6);
        if (mode == 1) {
            CHECK(memcmp(Dc, D, sizeof D) == 0); /* growth-only leaves a shrinking step alone */
            CHECK(muon_spectral_cap(Dc, rows, cols, cols, u, v, MUON_CAP_ALWAYS, &c) == MUON_OK);
        }
        /* sigma_1(W + t D) - sigma_1(W): first order c*t without the cap, O(t^2) with it */
        s0 = ref_sigma1(Wd, rows, cols, NULL, NULL);
        for (i = 0; i < 48; i++) X[i] = Wd[i] + t1 * D[i];
        g1 = ref_sigma1(X, rows, cols, NULL, NULL) - s0;
        CHECK_NEAR(g1 / t1, cu, 0, 0.02);
        for (i = 0; i < 48; i++) X[i] = Wd[i] + t1 * Dc[i];
        g1 = ref_sigma1(X, rows, cols, NULL, NULL) - s0;
        for (i = 0; i < 48; i++) X[i] = Wd[i] + t2 * Dc[i];
        g2 = ref_sigma1(X, rows, cols, NULL, NULL) - s0;
        CHECK_MSG(fabs(g1) / t1 < 1e-2 * fabs(cu), "capped growth/t %g vs %g", g1 / t1, cu);
        CHECK_MSG(g1 >= -1e-12 && g1 / g2 > 3.0 && g1 / g2 < 5.0, "g1 %g g2 %g", g1, g2); /* ~t^2, convex */
    }
}

static void test_cap_in_muon_step(void)
{
    const size_t rows = 10, cols = 8;
    t_rng r = {90};
    double U[100], V[64], s[8] = {4.0, 1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4}, M[80], Wd[80], uref[10], vref[8];
    float W[80], Wn[80], G[80];
    muon_state st, sn;
    muon_config cfg = muon_default(), cn;
    double hc, hn;
    int k;
    size_t i;
    rand_orth(&r, rows, U);
    rand_orth(&r, cols, V);
    build_usv(rows, cols, U, s, V, M);
    to_float(M, W, 80);
    memcpy(Wn, W, sizeof W);
    cfg.cap = MUON_CAP_ALWAYS;
    cfg.lr = 0.05;
    cn = cfg;
    cn.cap = MUON_CAP_OFF;
    CHECK(muon_init(&st, rows, cols) == MUON_OK && muon_init(&sn, rows, cols) == MUON_OK);
    for (k = 0; k < 10; k++) {
        /* gradients aligned against the top direction make plain Muon grow sigma_1 */
        for (i = 0; i < 80; i++) G[i] = (float)(-0.5 * U[(i / cols) * rows] * V[(i % cols) * cols] + 0.1 * t_rng_normal(&r));
        for (i = 0; i < 80; i++) Wd[i] = W[i];
        CHECK(muon_step(&st, &cfg, W, cols, G, cols, NULL, 0) == MUON_OK);
        CHECK(muon_step(&sn, &cn, Wn, cols, G, cols, NULL, 0) == MUON_OK);
    }
    /* the warm pair in the state tracks the top pair of the W it was computed on */
    ref_sigma1(Wd, rows, cols, uref, vref);
    {
        double du = 0.0, dv = 0.0;
        for (i = 0; i < rows; i++) du += st.cap_u[i] * uref[i];
        for (i = 0; i < cols; i++) dv += st.cap_v[i] * vref[i];
        CHECK_NEAR(fabs(du), 1.0, 1e-4, 0);
        CHECK_NEAR(fabs(dv), 1.0, 1e-4, 0);
        CHECK(st.cap_valid && st.cap_sigma > 0.0);
    }
    /* the cap keeps sigma_1 from growing and raises the min-entropy relative to plain Muon */
    for (i = 0; i < 80; i++) Wd[i] = Wn[i];
    {
        double sn1 = ref_sigma1(Wd, rows, cols, NULL, NULL), sc1;
        for (i = 0; i < 80; i++) Wd[i] = W[i];
        sc1 = ref_sigma1(Wd, rows, cols, NULL, NULL);
        CHECK(sc1 < sn1);
        CHECK(muon_min_entropy(W, rows, cols, cols, sc1, &hc) == MUON_OK);
        CHECK(muon_min_entropy(Wn, rows, cols, cols, sn1, &hn) == MUON_OK);
        CHECK(hc > hn);
    }
    muon_free(&st);
    muon_free(&sn);
}

static void test_decomposition(void)
{
    const size_t rows = 9, cols = 7;
    t_rng r = {95};
    float W[63];
    double Wd[63], n[9], nmax = 0.0, K[81], f2 = 0.0;
    muon_decomposition d;
    size_t i, j, q;
    rand_fill(&r, W, 63, 1.0);
    for (i = 0; i < rows; i++)
        for (j = 0; j < cols; j++) W[i * cols + j] *= (float)(0.2 + i); /* varied row norms */
    for (i = 0; i < 63; i++) Wd[i] = W[i];
    CHECK(muon_spectral_decomposition(W, rows, cols, cols, &d) == MUON_OK);
    CHECK_NEAR(d.spectral_norm, ref_sigma1(Wd, rows, cols, NULL, NULL), 0, 1e-10);
    CHECK_NEAR(d.spectral_norm, d.row_factor * d.coherence, 0, 1e-12);
    CHECK(d.coherence >= 1.0 - 1e-12 && d.coherence <= sqrt((double)rows) + 1e-12);
    /* reference: lambda_max(diag(p) C diag(p)) by power iteration on the explicit m x m matrix */
    for (i = 0; i < rows; i++) {
        double acc = 0.0;
        for (j = 0; j < cols; j++) acc += Wd[i * cols + j] * Wd[i * cols + j];
        n[i] = sqrt(acc);
        f2 += acc;
        if (n[i] > nmax) nmax = n[i];
    }
    CHECK_NEAR(d.row_factor, nmax, 0, 1e-14);
    for (i = 0; i < rows; i++)
        for (j = 0; j < rows; j++) {
            double c = 0.0;
            for (q = 0; q < cols; q++) c += (Wd[i * cols + q] / n[i]) * (Wd[j * cols + q] / n[j]);
            K[i * rows + j] = (n[i] / nmax) * c * (n[j] / nmax);
        }
    {
        double lam = ref_sigma1(K, rows, rows, NULL, NULL); /* K is PSD: sigma_1 = lambda_max */
        CHECK_NEAR(d.coherence, sqrt(lam), 0, 1e-10);
    }
    CHECK_NEAR(d.min_entropy, log(f2 / (d.spectral_norm * d.spectral_norm)), 0, 1e-12);
}

/* ---------------------------------------------------------------- Muown */

static double muown_loss(const double *g, const double *v, const double *C, size_t rows, size_t cols)
{
    /* L = sum C o W + 0.5 ||W||^2 with W_i = g_i v_i/||v_i|| */
    double L = 0.0;
    size_t i, j;
    for (i = 0; i < rows; i++) {
        double nv = 0.0;
        for (j = 0; j < cols; j++) nv += v[i * cols + j] * v[i * cols + j];
        nv = sqrt(nv);
        for (j = 0; j < cols; j++) {
            double w = g[i] * v[i * cols + j] / nv;
            L += C[i * cols + j] * w + 0.5 * w * w;
        }
    }
    return L;
}

static void test_muown_gradients_fd(void)
{
    const size_t rows = 4, cols = 5;
    t_rng r = {110};
    float W[20], G[20], gv[20];
    double C[20], g[4], v[20], gg[4], h = 1e-6;
    muown_state st;
    size_t i, j;
    rand_fill(&r, W, 20, 1.0);
    for (i = 0; i < 20; i++) C[i] = t_rng_normal(&r);
    for (i = 0; i < 20; i++) G[i] = (float)(C[i] + W[i]); /* dL/dW */
    CHECK(muown_init(&st, W, rows, cols, cols) == MUON_OK);
    st.vnorm[1] = 2.5; /* ||v|| need not equal g: exercise the g/||v|| factor */
    st.g[2] = -st.g[2]; /* a negative magnitude: W_2 = g_2 v_2/||v_2|| with v_2 against W_2 */
    st.vnorm[2] = 0.7;
    CHECK(muown_gradients(&st, W, cols, G, cols, gg, gv, cols) == MUON_OK);
    for (i = 0; i < rows; i++) {
        double wn = 0.0, dot = 0.0, gn = 0.0;
        for (j = 0; j < cols; j++) wn += (double)W[i * cols + j] * W[i * cols + j];
        wn = sqrt(wn);
        g[i] = st.g[i];
        CHECK_NEAR(fabs(g[i]), wn, 0, 1e-12);
        for (j = 0; j < cols; j++) v[i * cols + j] = st.vnorm[i] * W[i * cols + j] / g[i]; /* SPEC: v = ||v|| W/g */
        for (j = 0; j < cols; j++) {
            dot += (double)gv[i * cols + j] * W[i * cols + j] / wn;
            gn += (double)gv[i * cols + j] * gv[i * cols + j];
        }
        CHECK(fabs(dot) <= 1e-6 * sqrt(gn) + 1e-12); /* grad_v orthogonal to u */
    }
    for (i = 0; i < rows; i++) {
        double gp[4], gm[4], fd;
        memcpy(gp, g, sizeof g);
        memcpy(gm, g, sizeof g);
        gp[i] += h;
        gm[i] -= h;
        fd = (muown_loss(gp, v, C, rows, cols) - muown_loss(gm, v, C, rows, cols)) / (2 * h);
        CHECK_NEAR(gg[i], fd, 1e-5, 1e-5);
        for (j = 0; j < cols; j++) {
            double vp[20], vm[20];
            memcpy(vp, v, sizeof v);
            memcpy(vm, v, sizeof v);
            vp[i * cols + j] += h;
            vm[i * cols + j] -= h;
            fd = (muown_loss(g, vp, C, rows, cols) - muown_loss(g, vm, C, rows, cols)) / (2 * h);
            CHECK_NEAR(gv[i * cols + j], fd, 1e-5, 1e-4);
        }
    }
    muown_free(&st);
}

static void test_muown_invariants(void)
{
    int rule;
    for (rule = 0; rule < 3; rule++) {
        const size_t rows = 6, cols = 8;
        t_rng r = {120};
        float W[48], G[48];
        double g0[6];
        muown_state st;
        muown_config cfg = muown_default();
        int k;
        size_t i, j;
        cfg.magnitude = (muown_magnitude_rule)rule;
        rand_fill(&r, W, 48, 1.0);
        CHECK(muown_init(&st, W, rows, cols, cols) == MUON_OK);
        memcpy(g0, st.g, sizeof g0);
        for (k = 0; k < 5; k++) {
            double gg[6];
            float gvv[48];
            rand_fill(&r, G, 48, 1.0);
            CHECK(muown_gradients(&st, W, cols, G, cols, gg, gvv, cols) == MUON_OK);
            {
                double gbefore[6];
                memcpy(gbefore, st.g, sizeof gbefore);
                CHECK(muown_step(&st, &cfg, W, cols, G, cols, NULL, 0) == MUON_OK);
                if (k == 0 && rule != MUOWN_MAG_FIXED) /* first step: both rules move by ~mag_lr*sign */
                    for (i = 0; i < rows; i++)
                        CHECK_NEAR(st.g[i] - gbefore[i], -cfg.mag_lr * (gg[i] > 0 ? 1.0 : -1.0), 1e-7, 1e-4);
            }
            for (i = 0; i < rows; i++) {
                double n2 = 0.0;
                for (j = 0; j < cols; j++) n2 += (double)W[i * cols + j] * W[i * cols + j];
                CHECK_NEAR(sqrt(n2), st.g[i], 0, 2e-6); /* ||W_i|| = g_i */
                if (rule == MUOWN_MAG_FIXED) CHECK(st.g[i] == g0[i]);
            }
        }
        /* weight decay resync: g = row norms after a decayed step */
        cfg.muon.weight_decay = 0.5;
        rand_fill(&r, G, 48, 1.0);
        CHECK(muown_step(&st, &cfg, W, cols, G, cols, NULL, 0) == MUON_OK);
        for (i = 0; i < rows; i++) {
            double n2 = 0.0;
            for (j = 0; j < cols; j++) n2 += (double)W[i * cols + j] * W[i * cols + j];
            CHECK_NEAR(sqrt(n2), st.g[i], 0, 1e-12);
        }
        CHECK(st.step == 6);
        muown_free(&st);
    }
}

/* SPEC 2.3 in float64, v held explicitly (muon.h keeps only ||v|| and recovers v's direction as
 * ||v|| W/g). One step of every row; rule 0 Adam, 1 Signum, 2 fixed; t is the 1-based step. */
typedef struct ref_muown {
    double *W, *v, *g, *vn, *mm, *mv, *B; /* W, v, B: rows x cols */
    int sign_disagree;                     /* Signum: some row had sign(EMA) != sign(grad_g) */
} ref_muown;

static void ref_muown_step(ref_muown *s, const double *G, size_t rows, size_t cols, double lr, double beta,
                           double wd, int rule, double mag_lr, double b1, double b2, double eps, int t)
{
    const size_t n = rows * cols;
    double *u = dalloc(n), *gv = dalloc(n), *dir = dalloc(n), *O = dalloc(n), *Wold = dalloc(n);
    double scale = sqrt(rows > cols ? (double)rows / (double)cols : 1.0);
    size_t i, j;
    memcpy(Wold, s->W, n * sizeof(double));
    for (i = 0; i < rows; i++) {
        double gg = 0.0;
        for (j = 0; j < cols; j++) u[i * cols + j] = s->W[i * cols + j] / s->g[i]; /* u = W/g, signed */
        for (j = 0; j < cols; j++) gg += G[i * cols + j] * u[i * cols + j];
        for (j = 0; j < cols; j++)
            gv[i * cols + j] = s->g[i] / s->vn[i] * (G[i * cols + j] - u[i * cols + j] * gg);
        switch (rule) {
        case 0:
            s->mm[i] = b1 * s->mm[i] + (1 - b1) * gg;
            s->mv[i] = b2 * s->mv[i] + (1 - b2) * gg * gg;
            s->g[i] -= mag_lr * (s->mm[i] / (1 - pow(b1, t))) / (sqrt(s->mv[i] / (1 - pow(b2, t))) + eps);
            break;
        case 1:
            s->mm[i] = b1 * s->mm[i] + (1 - b1) * gg;
            if ((s->mm[i] > 0) != (gg > 0)) s->sign_disagree = 1;
            s->g[i] -= mag_lr * (s->mm[i] > 0 ? 1.0 : -1.0);
            break;
        default: break;
        }
    }
    for (i = 0; i < n; i++) { /* EMA momentum, Nesterov */
        s->B[i] = beta * s->B[i] + (1 - beta) * gv[i];
        dir[i] = (1 - beta) * gv[i] + beta * s->B[i];
    }
    t_ref_ns(dir, rows, cols, JORDAN, 1, 5, 1.0, 1e-7, O);
    for (i = 0; i < rows; i++) {
        double nv = 0.0, nw = 0.0, dot = 0.0;
        for (j = 0; j < cols; j++) {
            s->v[i * cols + j] -= lr * scale * O[i * cols + j];
            nv += s->v[i * cols + j] * s->v[i * cols + j];
        }
        nv = sqrt(nv);
        s->vn[i] = nv;
        for (j = 0; j < cols; j++) s->W[i * cols + j] = s->g[i] * s->v[i * cols + j] / nv;
        if (wd == 0.0) continue;
        for (j = 0; j < cols; j++) {
            s->W[i * cols + j] -= lr * wd * Wold[i * cols + j];
            nw += s->W[i * cols + j] * s->W[i * cols + j];
            dot += s->W[i * cols + j] * s->v[i * cols + j];
        }
        s->g[i] = dot < 0 ? -sqrt(nw) : sqrt(nw); /* the row norm, oriented along v */
    }
    free(u); free(gv); free(dir); free(O); free(Wold);
}

/* Three Muown steps against ref_muown_step for each magnitude rule: beta 0.9, Nesterov, lambda
 * on the last step only. Row 0 starts small and is pushed down, so its g crosses zero. */
static void test_muown_golden_3_steps(void)
{
    enum { R = 6, C = 5, N = R * C };
    int rule;
    for (rule = 0; rule < 3; rule++) {
        t_rng r = {170};
        float W[N], G[N];
        double Wd[N], v[N], g[R], vn[R], mm[R], mv[R], B[N], Gd[N], Gprev[N] = {0};
        ref_muown ref;
        muown_state st;
        muown_config cfg = muown_default();
        int step;
        size_t i, j;
        cfg.muon.lr = 0.05;
        cfg.muon.momentum = 0.9;
        cfg.magnitude = (muown_magnitude_rule)rule;
        cfg.mag_lr = 0.05;
        rand_fill(&r, W, N, 1.0);
        {
            double n0 = 0.0;
            for (j = 0; j < C; j++) n0 += (double)W[j] * W[j];
            for (j = 0; j < C; j++) W[j] = (float)(W[j] * 0.07 / sqrt(n0)); /* ||W_0|| = 0.07 */
        }
        CHECK(muown_init(&st, W, R, C, C) == MUON_OK);
        for (i = 0; i < N; i++) {
            Wd[i] = W[i];
            v[i] = W[i];
            B[i] = 0.0;
        }
        for (i = 0; i < R; i++) {
            double acc = 0.0;
            for (j = 0; j < C; j++) acc += Wd[i * C + j] * Wd[i * C + j];
            g[i] = vn[i] = sqrt(acc);
            mm[i] = mv[i] = 0.0;
        }
        ref.W = Wd; ref.v = v; ref.g = g; ref.vn = vn; ref.mm = mm; ref.mv = mv; ref.B = B;
        ref.sign_disagree = 0;
        for (step = 0; step < 3; step++) {
            for (i = 0; i < N; i++) { /* step 1 mostly reverses step 0 (Signum's EMA then disagrees) */
                double x = t_rng_normal(&r);
                Gd[i] = step == 1 ? -0.4 * Gprev[i] + 0.05 * x : x;
            }
            for (j = 0; j < C; j++) Gd[j] += 3.0 * Wd[j] / g[j / C]; /* grad_g_0 > 0: g_0 goes down */
            for (i = 0; i < N; i++) {
                G[i] = (float)Gd[i];
                Gd[i] = G[i];
                Gprev[i] = Gd[i];
            }
            if (step == 2) cfg.muon.weight_decay = 0.5;
            CHECK(muown_step(&st, &cfg, W, C, G, C, NULL, 0) == MUON_OK);
            ref_muown_step(&ref, Gd, R, C, 0.05, 0.9, cfg.muon.weight_decay, rule, 0.05, 0.9, 0.95, 1e-8, step + 1);
        }
        CHECK(st.step == 3);
        if (rule != MUOWN_MAG_FIXED) CHECK_MSG(g[0] < 0.0, "rule %d: g_0 = %g did not cross zero", rule, g[0]);
        if (rule == MUOWN_MAG_SIGNUM) CHECK(ref.sign_disagree); /* the case where EMA and raw differ */
        CHECK_MSG(max_abs_diff_fd(W, Wd, N) < 2e-5, "rule %d: W diff %g", rule, max_abs_diff_fd(W, Wd, N));
        CHECK_MSG(max_abs_diff_fd(st.momentum, B, N) < 1e-5, "rule %d: momentum diff %g", rule,
                  max_abs_diff_fd(st.momentum, B, N));
        for (i = 0; i < R; i++) {
            CHECK_NEAR(st.g[i], g[i], 2e-5, 0);
            CHECK_NEAR(st.vnorm[i], vn[i], 2e-5, 0);
            CHECK_NEAR(st.mag_m[i], mm[i], 1e-6, 1e-5);
            CHECK_NEAR(st.mag_v[i], mv[i], 1e-6, 1e-5);
        }
        muown_free(&st);
    }
}

/* A magnitude driven through zero (the signed u = W/g of SPEC 2.3): L = <G, W> with G = e_0,
 * direction frozen (lr 0), Signum with beta1 0: dL/dg = <e_0, v/||v||> = +1 at every step, so g
 * and W_00 go down by mag_lr each step, through zero, and keep going (the loss keeps falling). */
static void test_muown_negative_magnitude(void)
{
    float W[8] = {0.5f, 0, 0, 0, 0, -0.45f, 0, 0}, G[8] = {1, 0, 0, 0, 0, 1, 0, 0}, gv[8];
    muown_state st;
    muown_config cfg = muown_default();
    int k;
    cfg.muon.lr = 0.0;
    cfg.magnitude = MUOWN_MAG_SIGNUM;
    cfg.mag_lr = 0.3;
    cfg.mag_beta1 = 0.0;
    CHECK(muown_init(&st, W, 2, 4, 4) == MUON_OK);
    for (k = 1; k <= 6; k++) {
        double gg[2];
        CHECK(muown_gradients(&st, W, 4, G, 4, gg, gv, 4) == MUON_OK);
        CHECK_NEAR(gg[0], 1.0, 1e-12, 0); /* dL/dg_0 = +1 whatever the sign of g_0 */
        CHECK_NEAR(gg[1], -1.0, 1e-12, 0); /* row 1: W_11 = -g_1 (v_1 = -e_1): dL/dg_1 = -1 */
        CHECK(muown_step(&st, &cfg, W, 4, G, 4, NULL, 0) == MUON_OK);
        CHECK_NEAR(st.g[0], 0.5 - 0.3 * k, 1e-12, 0);
        CHECK_NEAR(W[0], 0.5 - 0.3 * k, 1e-6, 0);
        CHECK_NEAR(st.g[1], (double)0.45f + 0.3 * k, 1e-12, 0);
        CHECK_NEAR(W[5], -((double)0.45f + 0.3 * k), 1e-6, 0);
        CHECK(W[1] == 0.0f && W[2] == 0.0f && W[3] == 0.0f && W[4] == 0.0f && W[6] == 0.0f && W[7] == 0.0f);
    }
    /* weight decay keeps the orientation: g stays negative, W = g v/||v|| - lr lambda W_old */
    cfg.muon.lr = 0.1;
    cfg.muon.weight_decay = 0.5;
    cfg.mag_lr = 0.0;
    {
        double g0 = st.g[0];
        float w0 = W[0];
        CHECK(muown_step(&st, &cfg, W, 4, G, 4, NULL, 0) == MUON_OK);
        CHECK_NEAR(W[0], g0 - 0.05 * w0, 1e-6, 0); /* grad_v = 0 and no momentum: v unchanged */
        CHECK_NEAR(st.g[0], W[0], 1e-7, 0);
        CHECK(st.g[0] < 0.0);
        CHECK(muown_resync(&st, W, 4) == MUON_OK && st.g[0] < 0.0); /* resync keeps the sign too */
        CHECK_NEAR(st.g[0], W[0], 1e-7, 0);
    }
    muown_free(&st);
    { /* g landing exactly on 0: the row becomes 0, has no direction, and stays 0 with g = 0 */
        float Z[4] = {0.6f, 0, 0, 0}, GZ[4] = {1, 0, 0, 0};
        double gg;
        cfg = muown_default();
        cfg.muon.lr = 0.0;
        cfg.magnitude = MUOWN_MAG_SIGNUM;
        cfg.mag_beta1 = 0.0;
        CHECK(muown_init(&st, Z, 1, 4, 4) == MUON_OK);
        cfg.mag_lr = st.g[0] / 2; /* exactly representable halves */
        CHECK(muown_step(&st, &cfg, Z, 4, GZ, 4, NULL, 0) == MUON_OK);
        CHECK(muown_step(&st, &cfg, Z, 4, GZ, 4, NULL, 0) == MUON_OK);
        CHECK(st.g[0] == 0.0 && Z[0] == 0.0f);
        CHECK(muown_gradients(&st, Z, 4, GZ, 4, &gg, gv, 4) == MUON_OK && gg == 0.0 && gv[0] == 0.0f);
        CHECK(muown_step(&st, &cfg, Z, 4, GZ, 4, NULL, 0) == MUON_OK);
        CHECK(st.g[0] == 0.0 && Z[0] == 0.0f && Z[1] == 0.0f && Z[2] == 0.0f && Z[3] == 0.0f);
        muown_free(&st);
    }
}

/* The cap inside muon_step (SPEC 2.4) acts on the increment D only:
 * ALWAYS: u1^T (W_new - (1 - lr lambda) W_old) v1 = 0 for the state's pair, and D_capped equals
 * the uncapped D minus c u1 v1^T; GROWTH with c < 0: the step is the uncapped one, bit for bit. */
static void test_cap_step_increment(void)
{
    enum { R = 10, C = 8, N = R * C };
    const double lr = 0.05, wd = 0.1;
    t_rng r = {180};
    double U[R * R], V[C * C], s[C] = {4.0, 1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4}, M[N], Wd[N], uref[R], vref[C];
    float W[N], Wo[N], G[N];
    muon_state sc, so;
    muon_config cc = muon_default(), co;
    int k, sgn;
    size_t i, j;
    rand_orth(&r, R, U);
    rand_orth(&r, C, V);
    build_usv(R, C, U, s, V, M);
    cc.lr = lr;
    cc.weight_decay = wd;
    co = cc;
    co.cap = MUON_CAP_OFF;
    for (sgn = 0; sgn < 2; sgn++) { /* sgn 0: ALWAYS on growing steps; sgn 1: GROWTH on shrinking ones */
        cc.cap = sgn == 0 ? MUON_CAP_ALWAYS : MUON_CAP_GROWTH;
        to_float(M, W, N);
        memcpy(Wo, W, sizeof W);
        CHECK(muon_init(&sc, R, C) == MUON_OK && muon_init(&so, R, C) == MUON_OK);
        for (k = 0; k < 4; k++) {
            double c_off = 0.0, c_cap = 0.0, dmax = 0.0, lw = lr * wd;
            for (i = 0; i < N; i++) /* along -u1 v1^T plain Muon grows sigma_1; along +u1 v1^T it shrinks it */
                G[i] = (float)((sgn == 0 ? -0.5 : 0.5) * U[(i / C) * R] * V[(i % C) * C] + 0.1 * t_rng_normal(&r));
            if (sgn == 0) { /* uncapped step from the capped run's state */
                memcpy(Wo, W, sizeof W);
                memcpy(so.momentum, sc.momentum, N * sizeof(float));
            }
            for (i = 0; i < N; i++) Wd[i] = W[i];
            CHECK(muon_step(&sc, &cc, W, C, G, C, NULL, 0) == MUON_OK);
            CHECK(muon_step(&so, &co, Wo, C, G, C, NULL, 0) == MUON_OK);
            if (k == 0) { /* the cold pair is the top pair of W_old */
                double du = 0.0, dv = 0.0;
                ref_sigma1(Wd, R, C, uref, vref);
                for (i = 0; i < R; i++) du += sc.cap_u[i] * uref[i];
                for (j = 0; j < C; j++) dv += sc.cap_v[j] * vref[j];
                CHECK_NEAR(fabs(du), 1.0, 1e-9, 0);
                CHECK_NEAR(fabs(dv), 1.0, 1e-9, 0);
                CHECK_NEAR(sc.cap_sigma, ref_sigma1(Wd, R, C, NULL, NULL), 0, 1e-9);
            }
            /* c of both increments against the pair the step used (the state's) */
            for (i = 0; i < R; i++)
                for (j = 0; j < C; j++) {
                    double dc = (double)W[i * C + j] - (1.0 - lw) * Wd[i * C + j];
                    double doff = (double)Wo[i * C + j] - (1.0 - lw) * Wd[i * C + j];
                    c_cap += sc.cap_u[i] * dc * sc.cap_v[j];
                    c_off += sc.cap_u[i] * doff * sc.cap_v[j];
                }
            if (sgn == 0) {
                CHECK_MSG(c_off > 1e-3, "step %d: uncapped growth %g not positive", k, c_off);
                CHECK_MSG(fabs(c_cap) <= 1e-4 * fabs(c_off), "step %d: capped growth %g (uncapped %g)", k, c_cap, c_off);
                for (i = 0; i < R; i++)
                    for (j = 0; j < C; j++) {
                        double want = (double)Wo[i * C + j] - c_off * sc.cap_u[i] * sc.cap_v[j];
                        double d = fabs((double)W[i * C + j] - want);
                        if (d > dmax) dmax = d;
                    }
                CHECK_MSG(dmax < 1e-6, "step %d: D_cap vs D - c u v^T: %g", k, dmax);
            } else {
                CHECK_MSG(c_off < -1e-3, "step %d: growth %g not negative", k, c_off);
                CHECK(memcmp(W, Wo, sizeof W) == 0); /* growth-only leaves a shrinking step alone */
                CHECK(memcmp(sc.momentum, so.momentum, N * sizeof(float)) == 0);
            }
        }
        muon_free(&sc);
        muon_free(&so);
    }
}

/* ldw, ldg != cols: the padding (NaN) is never read or written, and the results are bitwise those
 * of the compact layout (Muon with split, cap and decay; Muown; the Muown gradients). */
static void test_step_leading_dims(void)
{
    enum { R = 12, C = 7, LW = 10, LG = 9, LV = 11 };
    t_rng r = {190};
    float W1[R * C], G1[R * C], W2[R * LW], G2[R * LG], W2k[R * LW], G2k[R * LG];
    muon_state a, b;
    muown_state oa, ob;
    muon_config cfg = muon_default();
    muown_config oc = muown_default();
    int k;
    size_t i, j;
    cfg.weight_decay = 0.1;
    cfg.cap = MUON_CAP_GROWTH;
    cfg.split_rows = 3;
    for (k = 0; k < 2; k++) { /* k 0: Muon; k 1: Muown */
        int step;
        rand_fill(&r, W1, R * C, 1.0);
        for (i = 0; i < R; i++)
            for (j = 0; j < LW; j++) W2[i * LW + j] = j < C ? W1[i * C + j] : NAN;
        if (k == 0) CHECK(muon_init(&a, R, C) == MUON_OK && muon_init(&b, R, C) == MUON_OK);
        else CHECK(muown_init(&oa, W1, R, C, C) == MUON_OK && muown_init(&ob, W2, R, C, LW) == MUON_OK);
        for (step = 0; step < 4; step++) {
            rand_fill(&r, G1, R * C, 1.0);
            for (i = 0; i < R; i++)
                for (j = 0; j < LG; j++) G2[i * LG + j] = j < C ? G1[i * C + j] : NAN;
            memcpy(G2k, G2, sizeof G2);
            if (k == 0) {
                CHECK(muon_step(&a, &cfg, W1, C, G1, C, NULL, 0) == MUON_OK);
                CHECK(muon_step(&b, &cfg, W2, LW, G2, LG, NULL, 0) == MUON_OK);
            } else {
                oc.muon.weight_decay = step == 3 ? 0.1 : 0.0;
                CHECK(muown_step(&oa, &oc, W1, C, G1, C, NULL, 0) == MUON_OK);
                CHECK(muown_step(&ob, &oc, W2, LW, G2, LG, NULL, 0) == MUON_OK);
            }
            CHECK(memcmp(G2, G2k, sizeof G2) == 0);
        }
        for (i = 0; i < R; i++) {
            CHECK(memcmp(W1 + i * C, W2 + i * LW, C * sizeof(float)) == 0);
            for (j = C; j < LW; j++) CHECK(W2[i * LW + j] != W2[i * LW + j]); /* still NaN */
        }
        if (k == 0) {
            CHECK(memcmp(a.momentum, b.momentum, R * C * sizeof(float)) == 0);
            muon_free(&a);
            muon_free(&b);
        } else {
            double gga[R], ggb[R];
            float gva[R * C], gvb[R * LV];
            CHECK(memcmp(oa.g, ob.g, R * sizeof(double)) == 0);
            CHECK(memcmp(oa.vnorm, ob.vnorm, R * sizeof(double)) == 0);
            CHECK(memcmp(oa.momentum, ob.momentum, R * C * sizeof(float)) == 0);
            for (i = 0; i < R * LV; i++) gvb[i] = NAN;
            memcpy(W2k, W2, sizeof W2);
            CHECK(muown_gradients(&oa, W1, C, G1, C, gga, gva, C) == MUON_OK);
            CHECK(muown_gradients(&ob, W2, LW, G2, LG, ggb, gvb, LV) == MUON_OK);
            CHECK(memcmp(gga, ggb, sizeof gga) == 0);
            for (i = 0; i < R; i++) {
                CHECK(memcmp(gva + i * C, gvb + i * LV, C * sizeof(float)) == 0);
                for (j = C; j < LV; j++) CHECK(gvb[i * LV + j] != gvb[i * LV + j]);
            }
            CHECK(memcmp(W2, W2k, sizeof W2) == 0);
            muown_free(&oa);
            muown_free(&ob);
        }
    }
}

/* The decay term is not lost to rounding: with lr*lambda = 1e-8 (where (float)(1 - lr*lambda)
 * is 1.0f) W - lr*lambda*W + D is rounded once, so over many elements the decayed run sits
 * below the undecayed one by lr*lambda*|W| on average (SPEC 2.2 / 2.3 / 2.6 decoupled decay);
 * and with lr*lambda = 2.5e-7 and a zero gradient each element is w - lr*lambda*w rounded once. */
static double decay_shift_ratio(const float *W0, const float *Wa, const float *Wb, size_t n, double lw)
{
    double got = 0.0, want = 0.0;
    size_t i;
    for (i = 0; i < n; i++) {
        double sg = W0[i] < 0 ? -1.0 : 1.0;
        got += sg * ((double)Wb[i] - (double)Wa[i]);
        want -= lw * fabs((double)W0[i]);
    }
    return got / want;
}

static void test_decay_rounding(void)
{
    enum { R = 64, C = 96, N = R * C };
    t_rng r = {200};
    float *W0 = falloc(N), *Wa = falloc(N), *Wb = falloc(N), *G = falloc(N);
    size_t i;
    rand_fill(&r, W0, N, 1.0);
    rand_fill(&r, G, N, 1.0);
    { /* Muon */
        muon_state sa, sb;
        muon_config ca = muon_default(), cb;
        double q;
        ca.lr = 0.01;
        cb = ca;
        cb.weight_decay = 1e-6;
        memcpy(Wa, W0, N * sizeof(float));
        memcpy(Wb, W0, N * sizeof(float));
        CHECK(muon_init(&sa, R, C) == MUON_OK && muon_init(&sb, R, C) == MUON_OK);
        CHECK(muon_step(&sa, &ca, Wa, C, G, C, NULL, 0) == MUON_OK && muon_step(&sb, &cb, Wb, C, G, C, NULL, 0) == MUON_OK);
        q = decay_shift_ratio(W0, Wa, Wb, N, 0.01 * 1e-6);
        CHECK_MSG(q > 0.8 && q < 1.2, "Muon: decay realised %g of lr*lambda*|W|", q);
        /* zero gradient from zero momentum: W <- W - lr*lambda*W, rounded once */
        {
            float *Z = falloc(N);
            int bad = 0;
            cb.lr = 0.025;
            cb.weight_decay = 1e-5;
            muon_free(&sb);
            CHECK(muon_init(&sb, R, C) == MUON_OK);
            memcpy(Wb, W0, N * sizeof(float));
            CHECK(muon_step(&sb, &cb, Wb, C, Z, C, NULL, 0) == MUON_OK);
            for (i = 0; i < N; i++) bad += Wb[i] != (float)((double)W0[i] - 0.025 * 1e-5 * (double)W0[i]);
            CHECK_MSG(bad == 0, "Muon: %d of %d decayed elements not w - lr*lambda*w rounded once", bad, N);
            free(Z);
        }
        muon_free(&sa);
        muon_free(&sb);
    }
    { /* Muown */
        muown_state sa, sb;
        muown_config ca = muown_default(), cb;
        double q;
        ca.muon.lr = 0.01;
        ca.magnitude = MUOWN_MAG_FIXED;
        cb = ca;
        cb.muon.weight_decay = 1e-6;
        memcpy(Wa, W0, N * sizeof(float));
        memcpy(Wb, W0, N * sizeof(float));
        CHECK(muown_init(&sa, W0, R, C, C) == MUON_OK && muown_init(&sb, W0, R, C, C) == MUON_OK);
        CHECK(muown_step(&sa, &ca, Wa, C, G, C, NULL, 0) == MUON_OK && muown_step(&sb, &cb, Wb, C, G, C, NULL, 0) == MUON_OK);
        q = decay_shift_ratio(W0, Wa, Wb, N, 0.01 * 1e-6);
        CHECK_MSG(q > 0.8 && q < 1.2, "Muown: decay realised %g of lr*lambda*|W|", q);
        muown_free(&sa);
        muown_free(&sb);
    }
    { /* AdamW */
        muon_adamw_state sa, sb;
        muon_adamw_config ca = muon_adamw_default(), cb;
        double q;
        ca.weight_decay = 0.0;
        cb = ca;
        cb.weight_decay = 1e-5; /* lr 1e-3: lr*wd = 1e-8 */
        float *P1 = falloc(N);
        memcpy(Wa, W0, N * sizeof(float));
        memcpy(Wb, W0, N * sizeof(float));
        CHECK(muon_adamw_init(&sa, N) == MUON_OK && muon_adamw_init(&sb, N) == MUON_OK);
        /* a common first step (its update is +-lr for every element, the same offset within each
         * binade: no test of rounding), then the second step with and without decay */
        CHECK(muon_adamw_step(&sa, &ca, Wa, G, NULL) == MUON_OK && muon_adamw_step(&sb, &ca, Wb, G, NULL) == MUON_OK);
        memcpy(P1, Wa, N * sizeof(float));
        rand_fill(&r, G, N, 1.0);
        CHECK(muon_adamw_step(&sa, &ca, Wa, G, NULL) == MUON_OK && muon_adamw_step(&sb, &cb, Wb, G, NULL) == MUON_OK);
        q = decay_shift_ratio(P1, Wa, Wb, N, 1e-3 * 1e-5);
        free(P1);
        CHECK_MSG(q > 0.8 && q < 1.2, "AdamW: decay realised %g of lr*wd*|p|", q);
        muon_adamw_free(&sa);
        muon_adamw_free(&sb);
    }
    free(W0); free(Wa); free(Wb); free(G);
}

/* ---------------------------------------------------------------- AdamW and clipping */

static void test_adamw(void)
{
    const size_t n = 17;
    t_rng r = {130};
    float p[17], g[17];
    double pd[17], m[17], v[17];
    muon_adamw_state st;
    muon_adamw_config cfg = muon_adamw_default();
    int t;
    size_t i;
    cfg.lr = 0.01;
    cfg.weight_decay = 0.1;
    rand_fill(&r, p, n, 1.0);
    for (i = 0; i < n; i++) {
        pd[i] = p[i];
        m[i] = v[i] = 0.0;
    }
    CHECK(muon_adamw_init(&st, n) == MUON_OK);
    for (t = 1; t <= 6; t++) {
        rand_fill(&r, g, n, 1.0 + t);
        CHECK(muon_adamw_step(&st, &cfg, p, g, NULL) == MUON_OK);
        for (i = 0; i < n; i++) {
            double mh, vh;
            pd[i] *= 1.0 - 0.01 * 0.1;
            m[i] = 0.9 * m[i] + 0.1 * g[i];
            v[i] = 0.999 * v[i] + 0.001 * (double)g[i] * g[i];
            mh = m[i] / (1.0 - pow(0.9, t));
            vh = v[i] / (1.0 - pow(0.999, t));
            pd[i] -= 0.01 * mh / (sqrt(vh) + 1e-8);
        }
    }
    CHECK(st.step == 6);
    for (i = 0; i < n; i++) CHECK_NEAR(p[i], pd[i], 1e-6, 1e-5);
    /* first step moves each parameter by ~lr (bias correction) */
    {
        muon_adamw_state s2;
        float q[3] = {0, 0, 0}, gq[3] = {1e-3f, -5.0f, 2.0f};
        muon_adamw_config c2 = muon_adamw_default();
        c2.weight_decay = 0.0;
        CHECK(muon_adamw_init(&s2, 3) == MUON_OK);
        CHECK(muon_adamw_step(&s2, &c2, q, gq, NULL) == MUON_OK);
        CHECK_NEAR(q[0], -1e-3, 0, 1e-4);
        CHECK_NEAR(q[1], 1e-3, 0, 1e-6);
        muon_adamw_free(&s2);
    }
    muon_adamw_free(&st);
}

/* AdamW's arithmetic (one pass on the vector layer, every element through the same vector code,
 * the last partial block on padded copies) gives each element the bits of the formula taken one
 * rounding at a time (volatile: no contraction in the reference either; see T_CONTRACTS for the
 * builds that may fuse), and the same bits whatever its position
 * (a shifted copy puts every element in another block and lane, the tail included) and whatever
 * the thread count; the moments and step_out too. A gradient of 3e22 exercises the clamped
 * second moment. */
static uint32_t tobits_f(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
/* GCC contracts a multiply and an add into an FMA in GNU C and in C++ (-ffp-contract=fast, its
 * default outside ISO C), the layer's vector operations included; ISO C (the C variants) and
 * clang keep them apart. Where it may, an element is held to the formula within one float ulp
 * (the roundings in double move the float result by at most that), elsewhere to its bits. */
#if defined(__GNUC__) && !defined(__clang__) && (defined(__cplusplus) || !defined(__STRICT_ANSI__))
#define T_CONTRACTS 1
#else
#define T_CONTRACTS 0
#endif
static int t_same_or_ulp(float got, float want)
{
    uint32_t a = tobits_f(got), b = tobits_f(want);
    if (a == b) return 1;
    if (!T_CONTRACTS || (a ^ b) >> 31) return 0; /* (opposite signs: never within an ulp here) */
    return (a > b ? a - b : b - a) <= 1u;
}
static void test_adamw_bits(void)
{
    const size_t n = 70001; /* past the one-thread threshold, and no multiple of any width */
    float *p = (float *)malloc(n * sizeof(float)), *g = (float *)malloc(n * sizeof(float));
    float *q = (float *)malloc(n * sizeof(float)), *s1 = (float *)malloc(n * sizeof(float));
    float *s2 = (float *)malloc(n * sizeof(float)), *p0 = (float *)malloc(n * sizeof(float));
    muon_adamw_state a, b;
    muon_adamw_config cfg = muon_adamw_default();
    t_rng r = {4242};
    size_t i, bad = 0, badshift = 0;
    int t;
#ifdef _OPENMP
    const int t0 = omp_get_max_threads();
#endif
    cfg.lr = 3e-3;
    cfg.weight_decay = 0.05;
    rand_fill(&r, p, n, 1.0);
    memcpy(p0, p, n * sizeof(float));
    memcpy(q, p + 1, (n - 1) * sizeof(float));
    CHECK(muon_adamw_init(&a, n) == MUON_OK && muon_adamw_init(&b, n - 1) == MUON_OK);
    for (t = 1; t <= 3; t++) {
        volatile double bc1 = -expm1((double)t * log(0.9)), bc2 = -expm1((double)t * log(0.999));
        float *m_old = (float *)malloc(n * sizeof(float)), *v_old = (float *)malloc(n * sizeof(float));
        float *pb = (float *)malloc(n * sizeof(float));
        rand_fill(&r, g, n, 0.5 * t);
        if (t == 2) g[n - 1] = 3e22f; /* (0.001 g^2 = 9e41: clamped to FLT_MAX) */
        memcpy(m_old, a.m, n * sizeof(float));
        memcpy(v_old, a.v, n * sizeof(float));
        memcpy(pb, p, n * sizeof(float));
#ifdef _OPENMP
        omp_set_num_threads(t == 2 ? 1 : 2);
#endif
        CHECK(muon_adamw_step(&a, &cfg, p, g, s1) == MUON_OK);
#ifdef _OPENMP
        omp_set_num_threads(t == 2 ? 2 : 1);
#endif
        CHECK(muon_adamw_step(&b, &cfg, q, g + 1, s2) == MUON_OK);
        for (i = 0; i < n; i++) {
            volatile double gg = g[i], m1 = 0.9 * (double)m_old[i], m2 = (1.0 - 0.9) * gg, mm = m1 + m2;
            volatile double v1 = 0.999 * (double)v_old[i], v2 = (1.0 - 0.999) * gg, v3 = v2 * gg, vv = v1 + v3;
            volatile double t1 = mm / bc1, t2 = -3e-3 * t1, t3 = vv / bc2, t4 = sqrt(t3), t5 = t4 + 1e-8, st = t2 / t5;
            volatile double pp = pb[i], d1 = (3e-3 * 0.05) * pp, d2 = pp - d1, pn = d2 + st;
            float wm = (float)mm, wv = (float)(vv < (double)FLT_MAX ? vv : (double)FLT_MAX);
            if (!t_same_or_ulp(p[i], (float)pn) || !t_same_or_ulp(a.m[i], wm) || !t_same_or_ulp(a.v[i], wv) ||
                !t_same_or_ulp(s1[i], (float)st))
                bad++;
            if (i > 0 && (tobits_f(q[i - 1]) != tobits_f(p[i]) || tobits_f(b.m[i - 1]) != tobits_f(a.m[i]) ||
                          tobits_f(b.v[i - 1]) != tobits_f(a.v[i]) || tobits_f(s2[i - 1]) != tobits_f(s1[i])))
                badshift++;
        }
        if (t == 2) CHECK(a.v[n - 1] == FLT_MAX);
        free(m_old), free(v_old), free(pb);
    }
#ifdef _OPENMP
    omp_set_num_threads(t0);
#endif
    CHECK_MSG(bad == 0, "%zu AdamW elements differ from the formula (%s)", bad,
              T_CONTRACTS ? "within an ulp: this compiler may contract" : "bit for bit");
    CHECK_MSG(badshift == 0, "%zu AdamW elements change with their position or the thread count", badshift);
    CHECK(a.v[n - 1] < FLT_MAX); /* decaying again */
    muon_adamw_free(&a), muon_adamw_free(&b);
    free(p), free(g), free(q), free(s1), free(s2), free(p0);
}

/* A second moment written negative by hand (a state the library never makes): the one-pass
 * AdamW's bound assumed sqrt(v) >= 0 and wrote NaN with MUON_OK (found by fuzz_muon_adamw);
 * the step must be RANGE, as before the screen, with everything untouched. */
static void test_adamw_negative_moment(void)
{
    muon_adamw_state st;
    muon_adamw_config cfg = muon_adamw_default();
    float p[19], g[19], p0[19], m0[19], v0[19];
    size_t i;
    for (i = 0; i < 19; i++) p[i] = 0.1f * (float)i - 1.0f, g[i] = 0.01f * (float)(i % 5);
    CHECK(muon_adamw_init(&st, 19) == MUON_OK);
    st.v[7] = -3.0f;
    memcpy(p0, p, sizeof p);
    memcpy(m0, st.m, sizeof m0);
    memcpy(v0, st.v, sizeof v0);
    CHECK(muon_adamw_step(&st, &cfg, p, g, NULL) == MUON_ERR_RANGE);
    CHECK(memcmp(p, p0, sizeof p) == 0 && memcmp(st.m, m0, sizeof m0) == 0 && memcmp(st.v, v0, sizeof v0) == 0);
    CHECK(st.step == 0);
    muon_adamw_free(&st);
}

static void test_clip(void)
{
    float a[3] = {3, 0, 0}, b[2] = {0, 4}, *gs[3];
    size_t sz[3] = {3, 0, 2};
    double tot = -1;
    gs[0] = a;
    gs[1] = NULL; /* size 0 may be NULL */
    gs[2] = b;
    CHECK(muon_clip_grad_norm(gs, sz, 3, 10.0, &tot) == MUON_OK && tot == 5.0 && a[0] == 3.0f);
    CHECK(muon_clip_grad_norm(gs, sz, 3, 1.0, &tot) == MUON_OK && tot == 5.0);
    CHECK_NEAR(a[0], 0.6, 0, 1e-7);
    CHECK_NEAR(b[1], 0.8, 0, 1e-7);
    {
        float c[2] = {1, NAN}, keepa[3];
        float *g2[2];
        size_t s2[2] = {3, 2};
        g2[0] = a;
        g2[1] = c;
        memcpy(keepa, a, sizeof a);
        tot = -1;
        CHECK(muon_clip_grad_norm(g2, s2, 2, 0.1, &tot) == MUON_ERR_NONFINITE && tot == -1);
        CHECK(memcmp(keepa, a, sizeof a) == 0 && c[0] == 1.0f);
        CHECK(muon_clip_grad_norm(g2, s2, 2, 0.0, &tot) == MUON_ERR_DOMAIN);
        CHECK(muon_clip_grad_norm(g2, s2, 0, 1.0, &tot) == MUON_ERR_SIZE);
        g2[0] = NULL;
        CHECK(muon_clip_grad_norm(g2, s2, 2, 1.0, &tot) == MUON_ERR_NULL);
    }
}

/* The global norm of large tensors against a long double sum (its documented fixed order is
 * within n eps of it, and on a nonnegative sum every order is), the same bits for every team,
 * and the clipped entries exactly (float)(g * (max_norm / total)) in double. */
static void test_clip_large(void)
{
    static const size_t sz[4] = {100003, 7, 0, 65543};
    float *g[4], *keep[4];
    size_t k, i, bad = 0;
    double tot1 = -1, tot2 = -2, f;
    long double ref = 0.0L;
    t_rng r = {0x5eedc11bu};
#ifdef _OPENMP
    int t0 = omp_get_max_threads();
#endif
    for (k = 0; k < 4; k++) {
        g[k] = (float *)malloc((sz[k] ? sz[k] : 1) * sizeof(float));
        keep[k] = (float *)malloc((sz[k] ? sz[k] : 1) * sizeof(float));
        if (!g[k] || !keep[k]) abort();
        rand_fill(&r, g[k], sz[k], k == 3 ? 1e-3 : 1.0);
        memcpy(keep[k], g[k], sz[k] * sizeof(float));
        for (i = 0; i < sz[k]; i++) ref += (long double)g[k][i] * (long double)g[k][i];
    }
#ifdef _OPENMP
    omp_set_num_threads(1);
#endif
    CHECK(muon_clip_grad_norm(g, sz, 4, 1e9, &tot1) == MUON_OK); /* not clipped: only the norm */
#ifdef _OPENMP
    omp_set_num_threads(2);
#endif
    CHECK(muon_clip_grad_norm(g, sz, 4, 1e9, &tot2) == MUON_OK);
    CHECK_MSG(memcmp(&tot1, &tot2, sizeof tot1) == 0, "the norm depends on the team: %.17g / %.17g", tot1, tot2);
    CHECK_NEAR(tot1, (double)sqrtl(ref), 0, 1e-13);
    for (k = 0; k < 4; k++) CHECK(memcmp(g[k], keep[k], sz[k] * sizeof(float)) == 0);
    CHECK(muon_clip_grad_norm(g, sz, 4, 0.5, &tot2) == MUON_OK && memcmp(&tot1, &tot2, sizeof tot1) == 0);
#ifdef _OPENMP
    omp_set_num_threads(t0);
#endif
    f = 0.5 / tot1;
    for (k = 0; k < 4; k++)
        for (i = 0; i < sz[k]; i++)
            if (tobits_f(g[k][i]) != tobits_f((float)((double)keep[k][i] * f))) bad++;
    CHECK_MSG(bad == 0, "%zu clipped entries differ from (float)(g * f)", bad);
    for (k = 0; k < 4; k++) free(g[k]), free(keep[k]);
}

/* ---------------------------------------------------------------- every error status */

/* The overlap and finiteness checks added after the audit: every call is rejected before it
 * writes anything (buffers compared byte for byte). Overlapping buffers live in one malloc'd
 * block, so a missing check would write valid memory and be caught by the comparison. */
static void test_alias_statuses(void)
{
    t_rng r = {210};
    { /* GEMM _ws: the workspace may not overlap A, B or C */
        const size_t m = 6, n = 5, k = 4, need = muon_gemm_workspace_size(1), nf = need / sizeof(float) + 64;
        float *buf = falloc(nf), *keep = falloc(nf), *A = falloc(m * k), *B = falloc(k * n), *Cm = falloc(m * n);
        float *ck = falloc(m * n);
        rand_fill(&r, buf, nf, 1.0);
        rand_fill(&r, A, m * k, 1.0);
        rand_fill(&r, B, k * n, 1.0);
        rand_fill(&r, Cm, m * n, 1.0);
        memcpy(keep, buf, nf * sizeof(float));
        memcpy(ck, Cm, m * n * sizeof(float));
        CHECK(muon_sgemm_ws(MUON_NO_TRANS, MUON_NO_TRANS, m, n, k, 1.0f, buf + 8, k, B, n, 0.0f, Cm, n, buf, need) ==
              MUON_ERR_ALIAS);
        CHECK(muon_sgemm_ws(MUON_NO_TRANS, MUON_TRANS, m, n, k, 1.0f, A, k, buf + nf - 64 - 8, k, 0.0f, Cm, n, buf,
                            need) == MUON_ERR_ALIAS);
        CHECK(muon_sgemm_ws(MUON_NO_TRANS, MUON_NO_TRANS, m, n, k, 1.0f, A, k, B, n, 1.0f, buf + 16, n, buf, need) ==
              MUON_ERR_ALIAS);
        /* the workspace starting inside C's span */
        CHECK(muon_sgemm_ws(MUON_NO_TRANS, MUON_NO_TRANS, m, n, k, 1.0f, A, k, B, n, 0.0f, buf, n, buf + m * n - 1,
                            need) == MUON_ERR_ALIAS);
        CHECK(muon_ssyrk_ws(MUON_NO_TRANS, m, k, 1.0f, buf + 4, k, 0.0f, Cm, m, buf, need) == MUON_ERR_ALIAS);
        CHECK(muon_ssyrk_ws(MUON_TRANS, m, k, 1.0f, A, m, 0.0f, buf + 40, m, buf, need) == MUON_ERR_ALIAS);
        CHECK(memcmp(buf, keep, nf * sizeof(float)) == 0 && memcmp(Cm, ck, m * n * sizeof(float)) == 0);
        /* adjacent but disjoint is fine */
        CHECK(muon_sgemm_ws(MUON_NO_TRANS, MUON_NO_TRANS, m, n, k, 1.0f, A, k, B, n, 0.0f, buf, n, buf + m * n,
                            need) == MUON_OK);
        free(buf); free(keep); free(A); free(B); free(Cm); free(ck);
    }
    { /* muon_step_ws: ws, W and G may not overlap the momentum or the cap pair */
        enum { R = 4, C = 5, N = R * C };
        muon_state st, fake, fk;
        muon_config cfg = muon_default();
        float W[N], G[N], Wk[N];
        size_t need = muon_step_workspace_size(R, C, &cfg), total = need + 1024;
        unsigned char *blk = (unsigned char *)malloc(total), *keep = (unsigned char *)malloc(total);
        float *Wb = falloc(N + 2 * C);
        int which;
        rand_fill(&r, W, N, 1.0);
        rand_fill(&r, G, N, 1.0);
        cfg.cap = MUON_CAP_GROWTH;
        CHECK(muon_init(&st, R, C) == MUON_OK);
        CHECK(muon_step(&st, &cfg, W, C, G, C, NULL, 0) == MUON_OK); /* a non-trivial state */
        memcpy(Wk, W, sizeof W);
        for (which = 0; which < 5; which++) {
            float *w = W;
            size_t i;
            for (i = 0; i < total; i++) blk[i] = (unsigned char)(t_rng_u64(&r) >> 56);
            memcpy(&fake, &st, sizeof st);
            switch (which) {
            case 0: fake.momentum = (float *)(blk + 64); memcpy(fake.momentum, st.momentum, N * sizeof(float)); break;
            case 1: fake.cap_u = (double *)(blk + 256); break;
            case 2: fake.cap_v = (double *)(blk + need - 16); break; /* its end inside ws */
            case 3: /* W overlapping cap_v */
                memcpy(Wb, W, sizeof W);
                w = Wb;
                fake.cap_v = (double *)(void *)(Wb + N - 2);
                break;
            default: fake.momentum = (float *)G; break; /* G overlapping the momentum */
            }
            memcpy(keep, blk, total);
            memcpy(&fk, &fake, sizeof fake);
            CHECK_MSG(muon_step_ws(&fake, &cfg, w, C, G, C, NULL, 0, blk, need) == MUON_ERR_ALIAS, "case %d", which);
            CHECK(memcmp(blk, keep, total) == 0 && memcmp(&fake, &fk, sizeof fake) == 0);
            CHECK(memcmp(W, Wk, sizeof W) == 0);
            if (which == 3) CHECK(memcmp(Wb, Wk, sizeof W) == 0);
        }
        muon_free(&st);
        free(blk); free(keep); free(Wb);
    }
    { /* muown_step_ws: ws, W, G vs g, ||v||, the magnitude moments and the momentum; NaN in W */
        enum { R = 4, C = 5, N = R * C };
        muown_state st, fake, fk;
        muown_config cfg = muown_default();
        float W[N], *G = falloc(N), Wk[N];
        size_t need = muown_step_workspace_size(R, C, &cfg), total = need + 1024;
        unsigned char *blk = (unsigned char *)malloc(total), *keep = (unsigned char *)malloc(total);
        float *Wb = falloc(N + 2 * C);
        double gk[R];
        int which;
        rand_fill(&r, W, N, 1.0);
        rand_fill(&r, G, N, 1.0);
        CHECK(muown_init(&st, W, R, C, C) == MUON_OK);
        CHECK(muown_step(&st, &cfg, W, C, G, C, NULL, 0) == MUON_OK);
        memcpy(Wk, W, sizeof W);
        memcpy(gk, st.g, sizeof gk);
        for (which = 0; which < 7; which++) {
            float *w = W;
            size_t i;
            for (i = 0; i < total; i++) blk[i] = (unsigned char)(t_rng_u64(&r) >> 56);
            memcpy(&fake, &st, sizeof st);
            switch (which) {
            case 0: fake.g = (double *)(blk + 128); memcpy(fake.g, st.g, R * sizeof(double)); break;
            case 1: fake.vnorm = (double *)(blk + 64); break;
            case 2: fake.mag_m = (double *)(blk + need - 8); break;
            case 3: fake.mag_v = (double *)(blk + 512); break;
            case 4: fake.momentum = (float *)(blk + need - 4); break;
            case 5: /* W overlapping g */
                memcpy(Wb, W, sizeof W);
                w = Wb;
                fake.g = (double *)(void *)(Wb + 4);
                break;
            default: fake.vnorm = (double *)(void *)(G + 2); break; /* G overlapping ||v|| */
            }
            memcpy(keep, blk, total);
            memcpy(&fk, &fake, sizeof fake);
            CHECK_MSG(muown_step_ws(&fake, &cfg, w, C, G, C, NULL, 0, blk, need) == MUON_ERR_ALIAS, "case %d", which);
            CHECK(memcmp(blk, keep, total) == 0 && memcmp(&fake, &fk, sizeof fake) == 0);
            CHECK(memcmp(W, Wk, sizeof W) == 0);
            if (which == 5) CHECK(memcmp(Wb, Wk, sizeof W) == 0);
        }
        { /* NaN / Inf in W would enter g and ||v||: NONFINITE, nothing written */
            double vk[R], mk[R];
            float Bk[N];
            memcpy(vk, st.vnorm, sizeof vk);
            memcpy(mk, st.mag_m, sizeof mk);
            memcpy(Bk, st.momentum, sizeof Bk);
            W[7] = NAN;
            memcpy(Wk, W, sizeof W);
            CHECK(muown_step(&st, &cfg, W, C, G, C, NULL, 0) == MUON_ERR_NONFINITE);
            W[7] = Wk[7] = INFINITY;
            CHECK(muown_step(&st, &cfg, W, C, G, C, NULL, 0) == MUON_ERR_NONFINITE);
            CHECK(memcmp(W, Wk, sizeof W) == 0 && memcmp(st.g, gk, sizeof gk) == 0);
            CHECK(memcmp(st.vnorm, vk, sizeof vk) == 0 && memcmp(st.mag_m, mk, sizeof mk) == 0);
            CHECK(memcmp(st.momentum, Bk, sizeof Bk) == 0 && st.step == 1);
        }
        muown_free(&st);
        free(blk); free(keep); free(Wb); free(G);
    }
    { /* AdamW: param or grad overlapping the moments */
        muon_adamw_state as;
        muon_adamw_config ac = muon_adamw_default();
        float p[20], g[20], pk[20], mk[20], vk[20];
        rand_fill(&r, p, 20, 1.0);
        rand_fill(&r, g, 20, 1.0);
        CHECK(muon_adamw_init(&as, 20) == MUON_OK);
        CHECK(muon_adamw_step(&as, &ac, p, g, NULL) == MUON_OK);
        memcpy(pk, p, sizeof p);
        memcpy(mk, as.m, sizeof mk);
        memcpy(vk, as.v, sizeof vk);
        CHECK(muon_adamw_step(&as, &ac, as.m, g, NULL) == MUON_ERR_ALIAS);
        CHECK(muon_adamw_step(&as, &ac, as.m + 5, g, NULL) == MUON_ERR_ALIAS);
        CHECK(muon_adamw_step(&as, &ac, p, as.m + 3, NULL) == MUON_ERR_ALIAS);
        CHECK(muon_adamw_step(&as, &ac, p, as.v, NULL) == MUON_ERR_ALIAS);
        CHECK(memcmp(p, pk, sizeof p) == 0 && memcmp(as.m, mk, sizeof mk) == 0 && memcmp(as.v, vk, sizeof vk) == 0);
        CHECK(as.step == 1);
        muon_adamw_free(&as);
    }
    { /* top singular pair: u and v may not overlap W */
        enum { R = 4, C = 6 };
        double *blk = dalloc(R * C), *keep = dalloc(R * C), u[R], v[C], uk[R], vk[C], sg = 7.0;
        float *W = (float *)(void *)blk; /* R x C floats in the first half */
        size_t i;
        rand_fill(&r, W, R * C, 1.0);
        for (i = 0; i < R; i++) u[i] = 3.0;
        for (i = 0; i < C; i++) v[i] = 1.0;
        memcpy(uk, u, sizeof u);
        memcpy(vk, v, sizeof v);
        memcpy(keep, blk, R * C * sizeof(double));
        CHECK(muon_top_singular_pair(W, R, C, C, 3, blk + 2, v, &sg) == MUON_ERR_ALIAS);
        CHECK(muon_top_singular_pair(W, R, C, C, 3, u, blk + R * C / 2 - 1, &sg) == MUON_ERR_ALIAS);
        CHECK(memcmp(blk, keep, R * C * sizeof(double)) == 0 && sg == 7.0);
        CHECK(memcmp(u, uk, sizeof u) == 0 && memcmp(v, vk, sizeof v) == 0);
        CHECK(muon_top_singular_pair(W, R, C, C, 3, u, blk + R * C / 2, &sg) == MUON_OK); /* just past W */
        free(blk); free(keep);
    }
}


static void test_error_statuses(void)
{
    float G[20], O[20], P[20], W[20], Wk[20], Gk[20];
    double sv[4], svk[4], u[4], v[5], d5[5];
    muon_state st, stk;
    muon_config cfg = muon_default(), bad;
    muon_ns_config badns;
    muown_state ow, owk;
    muown_config ocfg = muown_default();
    muon_adamw_state as;
    muon_adamw_config ac = muon_adamw_default();
    size_t i;
    t_rng r = {140};
    rand_fill(&r, G, 20, 1.0);
    rand_fill(&r, W, 20, 1.0);
    /* orthogonalize: outputs poisoned, compared byte for byte */
    memset(O, 0x5A, sizeof O);
    memcpy(P, O, sizeof O);
    CHECK(muon_orthogonalize(NULL, 4, 5, 5, NULL, O, 5) == MUON_ERR_NULL);
    CHECK(muon_orthogonalize(G, 4, 5, 5, NULL, NULL, 5) == MUON_ERR_NULL);
    CHECK(muon_orthogonalize(G, 0, 5, 5, NULL, O, 5) == MUON_ERR_SIZE);
    CHECK(muon_orthogonalize(G, 4, 5, 4, NULL, O, 5) == MUON_ERR_SIZE);
    CHECK(muon_orthogonalize(G, 4, 5, 5, NULL, O, 4) == MUON_ERR_SIZE);
    CHECK(muon_orthogonalize(G, (size_t)-1 / 2, 5, 5, NULL, O, 5) == MUON_ERR_SIZE);
    badns = muon_ns_preset(MUON_NS_JORDAN, 5);
    badns.eps = -1.0;
    CHECK(muon_orthogonalize(G, 4, 5, 5, &badns, O, 5) == MUON_ERR_DOMAIN);
    badns = muon_ns_preset(MUON_NS_JORDAN, 5);
    badns.mode = (muon_ns_mode)7;
    CHECK(muon_orthogonalize(G, 4, 5, 5, &badns, O, 5) == MUON_ERR_DOMAIN);
    badns = muon_ns_preset(MUON_NS_JORDAN, 5);
    badns.coeffs[0][1] = NAN;
    CHECK(muon_orthogonalize(G, 4, 5, 5, &badns, O, 5) == MUON_ERR_DOMAIN);
    badns.count = MUON_NS_MAX_TRIPLES + 1;
    CHECK(muon_orthogonalize(G, 4, 5, 5, &badns, O, 5) == MUON_ERR_DOMAIN);
    memcpy(Gk, G, sizeof G);
    Gk[7] = NAN;
    CHECK(muon_orthogonalize(Gk, 4, 5, 5, NULL, O, 5) == MUON_ERR_NONFINITE);
    Gk[7] = INFINITY;
    CHECK(muon_orthogonalize(Gk, 4, 5, 5, NULL, O, 5) == MUON_ERR_NONFINITE);
    CHECK(memcmp(O, P, sizeof O) == 0);
    /* the largest finite entries are not NONFINITE (one matrix is checked through its norm,
     * summed in double: finite exactly when every entry is) */
    Gk[7] = FLT_MAX;
    Gk[3] = -FLT_MAX;
    CHECK(muon_orthogonalize(Gk, 4, 5, 5, NULL, O, 5) == MUON_OK);
    memcpy(O, P, sizeof O);

    /* step: state and W untouched on every error */
    CHECK(muon_init(&st, 4, 5) == MUON_OK);
    CHECK(muon_step(&st, &cfg, W, 5, G, 5, NULL, 0) == MUON_OK); /* non-trivial state */
    memcpy(&stk, &st, sizeof st);
    {
        float Bk[20];
        memcpy(Bk, st.momentum, sizeof Bk);
        memcpy(Wk, W, sizeof W);
        CHECK(muon_step(NULL, &cfg, W, 5, G, 5, NULL, 0) == MUON_ERR_NULL);
        CHECK(muon_step(&st, NULL, W, 5, G, 5, NULL, 0) == MUON_ERR_NULL);
        CHECK(muon_step(&st, &cfg, NULL, 5, G, 5, NULL, 0) == MUON_ERR_NULL);
        CHECK(muon_step(&st, &cfg, W, 5, NULL, 5, NULL, 0) == MUON_ERR_NULL);
        CHECK(muon_step(&st, &cfg, W, 4, G, 5, NULL, 0) == MUON_ERR_SIZE);
        CHECK(muon_step(&st, &cfg, W, 5, G, 3, NULL, 0) == MUON_ERR_SIZE);
        bad = cfg; bad.lr = -1.0;
        CHECK(muon_step(&st, &bad, W, 5, G, 5, NULL, 0) == MUON_ERR_DOMAIN);
        bad = cfg; bad.lr = NAN;
        CHECK(muon_step(&st, &bad, W, 5, G, 5, NULL, 0) == MUON_ERR_DOMAIN);
        bad = cfg; bad.momentum = 1.0;
        CHECK(muon_step(&st, &bad, W, 5, G, 5, NULL, 0) == MUON_ERR_DOMAIN);
        bad = cfg; bad.weight_decay = -0.1;
        CHECK(muon_step(&st, &bad, W, 5, G, 5, NULL, 0) == MUON_ERR_DOMAIN);
        bad = cfg; bad.scale = (muon_scale_mode)9;
        CHECK(muon_step(&st, &bad, W, 5, G, 5, NULL, 0) == MUON_ERR_DOMAIN);
        bad = cfg; bad.momentum_form = (muon_momentum_form)9;
        CHECK(muon_step(&st, &bad, W, 5, G, 5, NULL, 0) == MUON_ERR_DOMAIN);
        bad = cfg; bad.cap = (muon_cap_mode)9;
        CHECK(muon_step(&st, &bad, W, 5, G, 5, NULL, 0) == MUON_ERR_DOMAIN);
        bad = cfg; bad.ns.steps = -3;
        CHECK(muon_step(&st, &bad, W, 5, G, 5, NULL, 0) == MUON_ERR_DOMAIN);
        bad = cfg; bad.split_rows = 3;
        CHECK(muon_step(&st, &bad, W, 5, G, 5, NULL, 0) == MUON_ERR_SIZE);
        CHECK(muon_step(&st, &cfg, W, 5, W, 5, NULL, 0) == MUON_ERR_ALIAS);
        CHECK(muon_step(&st, &cfg, W, 5, W + 3, 5, NULL, 0) == MUON_ERR_ALIAS);
        CHECK(muon_step_ws(&st, &cfg, W, 5, G, 5, NULL, 0, G, sizeof G) == MUON_ERR_SIZE);
        CHECK(muon_step_ws(&st, &cfg, W, 5, G, 5, NULL, 0, NULL, 0) == MUON_ERR_NULL);
        memcpy(Gk, G, sizeof G);
        Gk[19] = NAN;
        CHECK(muon_step(&st, &cfg, W, 5, Gk, 5, NULL, 0) == MUON_ERR_NONFINITE);
        Gk[19] = -INFINITY;
        CHECK(muon_step(&st, &cfg, W, 5, Gk, 5, NULL, 0) == MUON_ERR_NONFINITE);
        CHECK(memcmp(W, Wk, sizeof W) == 0);
        CHECK(memcmp(st.momentum, Bk, sizeof Bk) == 0);
        CHECK(memcmp(&st, &stk, sizeof st) == 0);
    }
    {
        muon_state z;
        memset(&z, 0, sizeof z);
        CHECK(muon_step(&z, &cfg, W, 5, G, 5, NULL, 0) == MUON_ERR_NULL); /* never initialised */
        memset(&z, 0x33, sizeof z);
        memcpy(&stk, &z, sizeof z);
        CHECK(muon_init(&z, 0, 5) == MUON_ERR_SIZE);
        CHECK(muon_init(&z, (size_t)-1, (size_t)-1) == MUON_ERR_SIZE);
        CHECK(memcmp(&z, &stk, sizeof z) == 0);
        CHECK(muon_init(NULL, 3, 3) == MUON_ERR_NULL);
    }
    muon_free(&st);

    /* singular values */
    for (i = 0; i < 4; i++) sv[i] = -99.0;
    memcpy(svk, sv, sizeof sv);
    CHECK(muon_singular_values(NULL, 4, 5, 5, sv) == MUON_ERR_NULL);
    CHECK(muon_singular_values(G, 4, 5, 5, NULL) == MUON_ERR_NULL);
    CHECK(muon_singular_values(G, 4, 0, 5, sv) == MUON_ERR_SIZE);
    CHECK(muon_singular_values(G, 4, 5, 2, sv) == MUON_ERR_SIZE);
    memcpy(Gk, G, sizeof G);
    Gk[0] = NAN;
    CHECK(muon_singular_values(Gk, 4, 5, 5, sv) == MUON_ERR_NONFINITE);
    CHECK(muon_singular_values_ws(G, 4, 5, 5, sv, d5, sizeof d5) == MUON_ERR_SIZE);
    CHECK(memcmp(sv, svk, sizeof sv) == 0);

    /* top pair, cap, min-entropy */
    for (i = 0; i < 4; i++) u[i] = 7.0;
    for (i = 0; i < 5; i++) v[i] = 0.0;
    {
        double uk[4], vk[5], sg = 3.0, hk = 4.0;
        memcpy(uk, u, sizeof u);
        memcpy(vk, v, sizeof v);
        CHECK(muon_top_singular_pair(G, 4, 5, 5, 0, u, v, &sg) == MUON_ERR_DOMAIN);
        CHECK(muon_top_singular_pair(Gk, 4, 5, 5, 3, u, v, &sg) == MUON_ERR_NONFINITE);
        CHECK(muon_top_singular_pair(G, 4, 5, 5, 3, NULL, v, &sg) == MUON_ERR_NULL);
        CHECK(muon_top_singular_pair(G, 4, 5, 3, 3, u, v, &sg) == MUON_ERR_SIZE);
        CHECK(memcmp(u, uk, sizeof u) == 0 && memcmp(v, vk, sizeof v) == 0 && sg == 3.0);
        memcpy(P, G, sizeof G);
        CHECK(muon_spectral_cap(P, 4, 5, 5, u, v, (muon_cap_mode)5, NULL) == MUON_ERR_DOMAIN);
        CHECK(muon_spectral_cap(P, 4, 5, 5, NULL, v, MUON_CAP_ALWAYS, NULL) == MUON_ERR_NULL);
        CHECK(memcmp(P, G, sizeof G) == 0);
        CHECK(muon_min_entropy(G, 4, 5, 5, 0.0, &hk) == MUON_ERR_DOMAIN && hk == 4.0);
        CHECK(muon_min_entropy(Gk, 4, 5, 5, 1.0, &hk) == MUON_ERR_NONFINITE && hk == 4.0);
    }
    {
        muon_decomposition dd, dk;
        float Z[20];
        memset(&dd, 0x11, sizeof dd);
        memcpy(&dk, &dd, sizeof dd);
        memset(Z, 0, sizeof Z);
        CHECK(muon_spectral_decomposition(Z, 4, 5, 5, &dd) == MUON_ERR_DOMAIN);
        CHECK(muon_spectral_decomposition(Gk, 4, 5, 5, &dd) == MUON_ERR_NONFINITE);
        CHECK(muon_spectral_decomposition(G, 4, 5, 5, NULL) == MUON_ERR_NULL);
        CHECK(memcmp(&dd, &dk, sizeof dd) == 0);
    }

    /* Muown */
    {
        float Zr[20];
        memcpy(Zr, W, sizeof W);
        for (i = 0; i < 5; i++) Zr[5 + i] = 0.0f;
        memset(&ow, 0x44, sizeof ow);
        memcpy(&owk, &ow, sizeof ow);
        CHECK(muown_init(&ow, Zr, 4, 5, 5) == MUON_ERR_DOMAIN); /* zero row */
        CHECK(muown_init(&ow, Gk, 4, 5, 5) == MUON_ERR_NONFINITE);
        CHECK(muown_init(&ow, W, 4, 5, 4) == MUON_ERR_SIZE);
        CHECK(memcmp(&ow, &owk, sizeof ow) == 0);
        CHECK(muown_init(&ow, W, 4, 5, 5) == MUON_OK);
        memcpy(&owk, &ow, sizeof ow);
        {
            double gk[4];
            memcpy(gk, ow.g, sizeof gk);
            memcpy(Wk, W, sizeof W);
            ocfg.magnitude = (muown_magnitude_rule)9;
            CHECK(muown_step(&ow, &ocfg, W, 5, G, 5, NULL, 0) == MUON_ERR_DOMAIN);
            ocfg = muown_default();
            ocfg.mag_eps = -1e-8; /* 0 is the default (test_config_resolve) */
            CHECK(muown_step(&ow, &ocfg, W, 5, G, 5, NULL, 0) == MUON_ERR_DOMAIN);
            ocfg = muown_default();
            ocfg.mag_beta2 = 1.0;
            CHECK(muown_step(&ow, &ocfg, W, 5, G, 5, NULL, 0) == MUON_ERR_DOMAIN);
            ocfg = muown_default();
            CHECK(muown_step(&ow, &ocfg, W, 5, Gk, 5, NULL, 0) == MUON_ERR_NONFINITE);
            CHECK(muown_step(&ow, &ocfg, W, 5, W, 5, NULL, 0) == MUON_ERR_ALIAS);
            CHECK(muown_step(&ow, NULL, W, 5, G, 5, NULL, 0) == MUON_ERR_NULL);
            CHECK(memcmp(W, Wk, sizeof W) == 0 && memcmp(ow.g, gk, sizeof gk) == 0);
            CHECK(memcmp(&ow, &owk, sizeof ow) == 0);
        }
        muown_free(&ow);
    }

    /* AdamW */
    memset(&as, 0x22, sizeof as);
    {
        muon_adamw_state ask;
        memcpy(&ask, &as, sizeof as);
        CHECK(muon_adamw_init(&as, 0) == MUON_ERR_SIZE);
        CHECK(muon_adamw_init(&as, (size_t)-1) == MUON_ERR_SIZE);
        CHECK(memcmp(&as, &ask, sizeof as) == 0);
    }
    CHECK(muon_adamw_init(&as, 20) == MUON_OK);
    memcpy(Wk, W, sizeof W);
    ac.eps = -1e-8; /* 0 is the default (test_config_resolve) */
    CHECK(muon_adamw_step(&as, &ac, W, G, NULL) == MUON_ERR_DOMAIN);
    ac = muon_adamw_default();
    ac.beta1 = -0.1;
    CHECK(muon_adamw_step(&as, &ac, W, G, NULL) == MUON_ERR_DOMAIN);
    ac = muon_adamw_default();
    CHECK(muon_adamw_step(&as, &ac, W, Gk, NULL) == MUON_ERR_NONFINITE);
    CHECK(muon_adamw_step(&as, &ac, W, W + 2, NULL) == MUON_ERR_ALIAS);
    CHECK(muon_adamw_step(&as, NULL, W, G, NULL) == MUON_ERR_NULL);
    CHECK(memcmp(W, Wk, sizeof W) == 0 && as.step == 0);
    for (i = 0; i < 20; i++) CHECK(as.m[i] == 0.0f && as.v[i] == 0.0f);
    muon_adamw_free(&as);

    /* choose */
    {
        double s3[3] = {3, 2, 1};
        muon_ns_config o;
        CHECK(muon_ns_choose(s3, 3, 1.5, 0.9, 10, NULL, 0, &o, NULL) == MUON_ERR_DOMAIN);
        CHECK(muon_ns_choose(s3, 3, 0.5, 0.9, 0, NULL, 0, &o, NULL) == MUON_ERR_DOMAIN);
        CHECK(muon_ns_choose(NULL, 3, 0.5, 0.9, 10, NULL, 0, &o, NULL) == MUON_ERR_NULL);
        CHECK(muon_ns_choose(s3, 3, 0.5, 0.9, 10, &badns, 1, &o, NULL) == MUON_ERR_DOMAIN);
    }
}

static void test_nomem(void)
{
    float G[20], O[20], P[20], W[20];
    double sv[4], svk[4];
    muon_state st, stk;
    muon_decomposition d, dk;
    muown_state ow, owk;
    muon_adamw_state as, ask;
    t_rng r = {150};
    rand_fill(&r, G, 20, 1.0);
    rand_fill(&r, W, 20, 1.0);
    memset(O, 0x5A, sizeof O);
    memcpy(P, O, sizeof O);
    memset(sv, 0x5A, sizeof sv);
    memcpy(svk, sv, sizeof sv);
    memset(&st, 0x5A, sizeof st);
    memcpy(&stk, &st, sizeof st);
    memset(&d, 0x5A, sizeof d);
    memcpy(&dk, &d, sizeof d);
    memset(&ow, 0x5A, sizeof ow);
    memcpy(&owk, &ow, sizeof ow);
    memset(&as, 0x5A, sizeof as);
    memcpy(&ask, &as, sizeof as);
    t_fail_alloc = 1;
    CHECK(muon_orthogonalize(G, 4, 5, 5, NULL, O, 5) == MUON_ERR_NOMEM);
    CHECK(muon_orthogonalize_batched(G, 2, 2, 5, 5, 10, NULL, O, 5, 10) == MUON_ERR_NOMEM);
    CHECK(muon_singular_values(G, 4, 5, 5, sv) == MUON_ERR_NOMEM);
    CHECK(muon_init(&st, 4, 5) == MUON_ERR_NOMEM);
    CHECK(muon_spectral_decomposition(G, 4, 5, 5, &d) == MUON_ERR_NOMEM);
    CHECK(muown_init(&ow, W, 4, 5, 5) == MUON_ERR_NOMEM);
    CHECK(muon_adamw_init(&as, 20) == MUON_ERR_NOMEM);
    t_fail_alloc = 0;
    CHECK(memcmp(O, P, sizeof O) == 0);
    CHECK(memcmp(sv, svk, sizeof sv) == 0);
    CHECK(memcmp(&st, &stk, sizeof st) == 0);
    CHECK(memcmp(&d, &dk, sizeof d) == 0);
    CHECK(memcmp(&ow, &owk, sizeof ow) == 0);
    CHECK(memcmp(&as, &ask, sizeof as) == 0);
}

/* same inputs, same bits: across runs, and across OpenMP thread counts where built with OpenMP.
 * Under OpenMP the shape is above both parallel thresholds (every NS product has
 * m*m*n = 21M >= MUON_GEMM_PARALLEL_MIN multiply-adds, and 81920 elements >= the elementwise
 * passes' 65536), so the 1-thread and the many-thread runs really take different paths. */
#ifdef _OPENMP
#define DET_R 256
#define DET_C 320
#else
#define DET_R 96
#define DET_C 160
#endif

/* kind 0: Muon; 1: Muon with the growth cap; 2: Muown (decay on the second step) */
static void run_series(float *W, int kind)
{
    const size_t rows = DET_R, cols = DET_C;
    t_rng r = {160};
    float *G = falloc(rows * cols);
    int k;
    rand_fill(&r, W, rows * cols, 0.05);
    if (kind < 2) {
        muon_state st;
        muon_config cfg = muon_default();
        if (kind == 1) cfg.cap = MUON_CAP_GROWTH;
        cfg.weight_decay = 0.1;
        cfg.ns.steps = 2; /* every product still runs threaded; keeps the test short */
        CHECK(muon_init(&st, rows, cols) == MUON_OK);
        for (k = 0; k < 2; k++) {
            rand_fill(&r, G, rows * cols, 1.0);
            CHECK(muon_step(&st, &cfg, W, cols, G, cols, NULL, 0) == MUON_OK);
        }
        muon_free(&st);
    } else {
        muown_state st;
        muown_config cfg = muown_default();
        cfg.muon.ns.steps = 2;
        CHECK(muown_init(&st, W, rows, cols, cols) == MUON_OK);
        for (k = 0; k < 2; k++) {
            rand_fill(&r, G, rows * cols, 1.0);
            cfg.muon.weight_decay = k == 1 ? 0.1 : 0.0;
            CHECK(muown_step(&st, &cfg, W, cols, G, cols, NULL, 0) == MUON_OK);
        }
        muown_free(&st);
    }
    free(G);
}

static void test_determinism(void)
{
    const size_t n = DET_R * DET_C;
    float *a = falloc(n), *b = falloc(n);
    int kind;
#ifdef _OPENMP
    CHECK_MSG((double)DET_R * DET_R * DET_C >= (double)MUON_GEMM_PARALLEL_MIN, "below the GEMM threshold");
    CHECK_MSG((double)DET_R * DET_C >= MUON__PAR_MIN, "below the elementwise threshold");
#endif
    for (kind = 0; kind < 3; kind++) {
#ifdef _OPENMP
        int t0 = omp_get_max_threads();
        omp_set_num_threads(1);
        run_series(a, kind);
        omp_set_num_threads(t0 > 1 ? t0 : 2);
        CHECK(omp_get_max_threads() >= 2);
        run_series(b, kind);
        omp_set_num_threads(t0);
#else
        run_series(a, kind);
        run_series(b, kind);
#endif
        CHECK_MSG(memcmp(a, b, n * sizeof(float)) == 0, "series %d differs across thread counts", kind);
    }
    { /* a state sized at one thread keeps working when the thread count grows */
        muon_state st;
        muon_config cfg = muon_default();
        t_rng r = {161};
#ifdef _OPENMP
        int t0 = omp_get_max_threads();
        omp_set_num_threads(1);
#endif
        CHECK(muon_init(&st, DET_R, DET_C) == MUON_OK);
#ifdef _OPENMP
        omp_set_num_threads(t0 > 1 ? t0 : 2);
#endif
        rand_fill(&r, a, n, 1.0);
        rand_fill(&r, b, n, 1.0);
        CHECK(muon_step(&st, &cfg, a, DET_C, b, DET_C, NULL, 0) == MUON_OK);
#ifdef _OPENMP
        omp_set_num_threads(t0);
#endif
        muon_free(&st);
    }
    free(a);
    free(b);
}

/* One defaults rule (zero means default where zero is not a valid value), the public resolvers
 * that say what a step runs, the AdamW _ws form and the deprecated names. */
static void test_config_resolve(void)
{
    muon_ns_config z, r, poison;
    muon_config mz, mr, mp;
    size_t i;
    memset(&z, 0, sizeof z);
    memset(&poison, 0x5A, sizeof poison);
    CHECK(muon_ns_resolve(&z, NULL) == MUON_ERR_NULL);
    CHECK(muon_ns_resolve(&z, &r) == MUON_OK);
    {
        muon_ns_config j = muon_ns_preset(MUON_NS_JORDAN, 0);
        CHECK(r.count == j.count && r.steps == 5 && r.coeffs[0][0] == j.coeffs[0][0] && r.safety == j.safety &&
              r.eps == j.eps && r.method == MUON_NS_PLAIN && r.gram_restart == 2);
    }
    z.count = 2, z.steps = 0, z.safety = 0.0, z.coeffs[0][0] = 1.5, z.coeffs[0][1] = -0.5, z.coeffs[1][0] = 1.5;
    z.coeffs[1][1] = -0.5, z.method = MUON_NS_GRAM;
    CHECK(muon_ns_resolve(&z, &r) == MUON_OK && r.steps == 2 && r.safety == 1.0 && r.gram_restart == 2);
    z.count = -1;
    memcpy(&r, &poison, sizeof r); /* bytes, padding included (memcmp below) */
    CHECK(muon_ns_resolve(&z, &r) == MUON_ERR_DOMAIN && memcmp(&r, &poison, sizeof r) == 0);
    z.count = 1, z.coeffs[0][0] = 1e30, z.steps = 3; /* leaves float's range: rejected after filling */
    CHECK(muon_ns_resolve(&z, &r) == MUON_ERR_DOMAIN && memcmp(&r, &poison, sizeof r) == 0);

    memset(&mz, 0, sizeof mz);
    CHECK(muon_config_resolve(NULL, &mr) == MUON_ERR_NULL && muon_config_resolve(&mz, NULL) == MUON_ERR_NULL);
    CHECK(muon_config_resolve(&mz, &mr) == MUON_OK);
    CHECK(mr.scale_coeff == 0.2 && mr.split_rows == 1 && mr.cap_iters == 2 && mr.ns.steps == 5 && mr.lr == 0.0 &&
          mr.momentum == 0.0);
    memset(&mp, 0x33, sizeof mp);
    memcpy(&mr, &mp, sizeof mr);
    mz.cap_iters = 101;
    CHECK(muon_config_resolve(&mz, &mr) == MUON_ERR_DOMAIN && memcmp(&mr, &mp, sizeof mr) == 0);
    { /* a step with the zero fields equals a step with their resolved values, bit for bit */
        float W1[6 * 8], W2[6 * 8], G[6 * 8];
        muon_state s1, s2;
        muon_config c1 = muon_default(), c2;
        t_rng rg = {77};
        rand_fill(&rg, G, 48, 1.0);
        rand_fill(&rg, W1, 48, 1.0);
        memcpy(W2, W1, sizeof W1);
        c1.scale = MUON_SCALE_MATCH_ADAMW, c1.scale_coeff = 0.0, c1.split_rows = 0, c1.cap = MUON_CAP_GROWTH;
        c1.cap_iters = 0;
        memset(&c1.ns, 0, sizeof c1.ns);
        CHECK(muon_config_resolve(&c1, &c2) == MUON_OK);
        CHECK(muon_init_ex(&s1, 6, 8, MUON_INIT_WORKSPACE) == MUON_OK && s1.workspace != NULL);
        CHECK(muon_init(&s2, 6, 8) == MUON_OK);
        for (i = 0; i < 3; i++) {
            CHECK(muon_step(&s1, &c1, W1, 8, G, 8, NULL, 0) == MUON_OK);
            CHECK(muon_step(&s2, &c2, W2, 8, G, 8, NULL, 0) == MUON_OK);
        }
        CHECK(memcmp(W1, W2, sizeof W1) == 0);
        muon_free(&s1), muon_free(&s2);
        CHECK(muon_init_ex(&s1, 6, 8, MUON_INIT_NO_WORKSPACE) == MUON_OK && s1.workspace == NULL);
        CHECK(muon_step(&s1, &c1, W1, 8, G, 8, NULL, 0) == MUON_ERR_NULL);
        muon_free(&s1);
    }
    { /* Muown: mag_eps 0 is 1e-8 */
        float W0[4 * 5], W1[4 * 5], W2[4 * 5], G[4 * 5];
        muown_state o1, o2;
        muown_config a = muown_default(), b = muown_default(), ar;
        t_rng rg = {78};
        rand_fill(&rg, G, 20, 1.0);
        rand_fill(&rg, W0, 20, 1.0);
        memcpy(W1, W0, sizeof W0), memcpy(W2, W0, sizeof W0);
        a.mag_eps = 0.0, b.mag_eps = 1e-8;
        CHECK(muown_config_resolve(&a, &ar) == MUON_OK && ar.mag_eps == 1e-8 && ar.muon.cap_iters == 2);
        CHECK(muown_init(&o1, W0, 4, 5, 5) == MUON_OK && muown_init(&o2, W0, 4, 5, 5) == MUON_OK);
        for (i = 0; i < 3; i++) {
            CHECK(muown_step(&o1, &a, W1, 5, G, 5, NULL, 0) == MUON_OK);
            CHECK(muown_step(&o2, &b, W2, 5, G, 5, NULL, 0) == MUON_OK);
        }
        CHECK(memcmp(W1, W2, sizeof W1) == 0 && memcmp(o1.g, o2.g, 4 * sizeof(double)) == 0);
        muown_free(&o1), muown_free(&o2);
        a.mag_eps = -1.0;
        memset(&b, 0x44, sizeof b);
        memcpy(&ar, &b, sizeof ar);
        CHECK(muown_config_resolve(&a, &ar) == MUON_ERR_DOMAIN && memcmp(&ar, &b, sizeof ar) == 0);
    }
    { /* AdamW: eps 0 is 1e-8; the _ws form in caller memory of any alignment */
        enum { N = 37 };
        float p1[N], p2[N], g[N];
        unsigned char buf[2 * N * sizeof(float) + 16];
        muon_adamw_state s1, s2, sk;
        muon_adamw_config a = muon_adamw_default(), b = muon_adamw_default(), ar;
        size_t need = muon_adamw_init_workspace_size(N);
        t_rng rg = {79};
        rand_fill(&rg, g, N, 1.0);
        rand_fill(&rg, p1, N, 1.0);
        memcpy(p2, p1, sizeof p1);
        a.eps = 0.0, b.eps = 1e-8;
        CHECK(muon_adamw_config_resolve(&a, &ar) == MUON_OK && ar.eps == 1e-8 && ar.lr == a.lr);
        CHECK(muon_adamw_config_resolve(&a, NULL) == MUON_ERR_NULL);
        CHECK(need >= 2 * N * sizeof(float) && need <= sizeof buf - 1);
        CHECK(muon_adamw_init_workspace_size(0) == 0 && muon_adamw_init_workspace_size((size_t)-1 / 4) == 0);
        memset(&s1, 0x11, sizeof s1);
        memcpy(&sk, &s1, sizeof sk);
        CHECK(muon_adamw_init_ws(&s1, N, buf + 1, need - 1) == MUON_ERR_SIZE);
        CHECK(muon_adamw_init_ws(&s1, 0, buf + 1, need) == MUON_ERR_SIZE);
        CHECK(muon_adamw_init_ws(&s1, N, NULL, need) == MUON_ERR_NULL);
        CHECK(memcmp(&s1, &sk, sizeof s1) == 0);
        CHECK(muon_adamw_init_ws(&s1, N, buf + 1, need) == MUON_OK); /* misaligned on purpose */
        CHECK((size_t)((uintptr_t)s1.m % sizeof(float)) == 0 && (unsigned char *)s1.m >= buf + 1 &&
              (unsigned char *)(s1.v + N) <= buf + 1 + need);
        CHECK(muon_adamw_init(&s2, N) == MUON_OK);
        for (i = 0; i < 3; i++) {
            CHECK(muon_adamw_step(&s1, &a, p1, g, NULL) == MUON_OK);
            CHECK(muon_adamw_step(&s2, &b, p2, g, NULL) == MUON_OK);
        }
        CHECK(memcmp(p1, p2, sizeof p1) == 0 && memcmp(s1.m, s2.m, N * sizeof(float)) == 0 &&
              memcmp(s1.v, s2.v, N * sizeof(float)) == 0);
        muon_adamw_free(&s1); /* frees nothing (ASan would report a free of the stack buffer) */
        CHECK(s1.m == NULL && s1.size == 0);
        muon_adamw_free(&s2);
    }
    /* 0.2.0's deprecated names were kept for one minor version and are gone in 0.3.0 */
#if defined(muon_ns_workspace_size) || defined(muon_ns_batched_workspace_size) || \
    defined(muon_sv_workspace_size) || defined(muon_workspace_size) || defined(muown_workspace_size) || \
    defined(muon_assign_workspace_size)
    CHECK(0);
#endif
}

/* A small layer carries a small workspace: the GEMM packing space is fitted to the NS products
 * of the layer (0.1.0 reserved the largest blocks, 2.4 MB, for a 32 x 64 layer). A 32 x 64 step
 * runs from a 56 KB buffer, and gives the same bits as from a large one. */
static void test_small_layer_workspace(void)
{
    enum { R = 32, C = 64 };
    static unsigned char small[56 * 1024];
    float W1[R * C], W2[R * C], G[R * C];
    muon_state s1, s2;
    muon_config cfg = muon_default();
    size_t need = muon_step_workspace_size(R, C, NULL), i;
    void *big = malloc(4u << 20);
    t_rng rg = {81};
    CHECK(need > 0 && need <= sizeof small);
    CHECK(muon_orthogonalize_workspace_size(R, C) <= 48 * 1024);
    rand_fill(&rg, G, R * C, 1.0);
    rand_fill(&rg, W1, R * C, 1.0);
    memcpy(W2, W1, sizeof W1);
    CHECK(big != NULL);
    CHECK(muon_init_ex(&s1, R, C, MUON_INIT_NO_WORKSPACE) == MUON_OK);
    CHECK(muon_init_ex(&s2, R, C, MUON_INIT_NO_WORKSPACE) == MUON_OK);
    for (i = 0; i < 3; i++) {
        CHECK(muon_step_ws(&s1, &cfg, W1, C, G, C, NULL, 0, small, need) == MUON_OK);
        CHECK(muon_step_ws(&s2, &cfg, W2, C, G, C, NULL, 0, big, 4u << 20) == MUON_OK);
    }
    CHECK(memcmp(W1, W2, sizeof W1) == 0);
    muon_free(&s1), muon_free(&s2);
    free(big);
}

/* ---------------------------------------------------------------- the step S (step_out) */

/* S against the change it claims: |S - (W_after - (W_before - lrwd W_before))| within the two
 * roundings (of W_after and of S), in double; and the padding of S (lds > cols) untouched. */
static int step_matches(const float *S, size_t lds, const float *Wb, const float *Wa, size_t rows, size_t cols,
                        double lrwd, double *worst)
{
    size_t i, j;
    int ok = 1;
    for (i = 0; i < rows; i++) {
        for (j = 0; j < cols; j++) {
            double wb = Wb[i * cols + j], wa = Wa[i * cols + j], sv = S[i * lds + j];
            double want = wa - (wb - lrwd * wb), tol = ldexp(1.0, -23) * (fabs(wa) + fabs(sv)) + 1e-300;
            double e = fabs(sv - want) / tol;
            if (!(e <= 1.0)) ok = 0;
            if (worst && e > *worst) *worst = e;
        }
        for (j = cols; j < lds; j++)
            if (S[i * lds + j] != 77.0f) ok = 0;
    }
    return ok;
}

static void test_step_out(void)
{
    enum { R = 12, C = 20, LDS = 23, STEPS = 4 };
    t_rng r = {91};
    float W0[R * C], G[STEPS][R * C], Wa[R * C], Wb[R * C], Wn[R * C], S[R * LDS], Sk[R * LDS];
    double worst = 0.0;
    int k, v;
    size_t i;
    rand_fill(&r, W0, R * C, 0.5);
    for (k = 0; k < STEPS; k++) rand_fill(&r, G[k], R * C, 1.0);
    /* Muon: with and without decay, the cap, the SUM momentum, split rows */
    for (v = 0; v < 5; v++) {
        muon_config cfg = muon_default();
        muon_state sa, sb;
        int same = 1, match = 1;
        cfg.lr = 0.03;
        cfg.weight_decay = v == 1 || v == 2 ? 0.1 : 0.0;
        if (v == 2) cfg.cap = MUON_CAP_ALWAYS;
        if (v == 3) cfg.momentum_form = MUON_MOMENTUM_SUM;
        if (v == 4) cfg.split_rows = 3;
        CHECK(muon_init(&sa, R, C) == MUON_OK && muon_init(&sb, R, C) == MUON_OK);
        memcpy(Wa, W0, sizeof Wa);
        memcpy(Wn, W0, sizeof Wn);
        for (k = 0; k < STEPS; k++) {
            for (i = 0; i < R * LDS; i++) S[i] = 77.0f;
            memcpy(Wb, Wa, sizeof Wb);
            CHECK(muon_step(&sa, &cfg, Wa, C, G[k], C, S, LDS) == MUON_OK);
            CHECK(muon_step(&sb, &cfg, Wn, C, G[k], C, NULL, 0) == MUON_OK);
            same &= memcmp(Wa, Wn, sizeof Wa) == 0 && memcmp(sa.momentum, sb.momentum, R * C * sizeof(float)) == 0;
            match &= step_matches(S, LDS, Wb, Wa, R, C, cfg.lr * cfg.weight_decay, &worst);
        }
        CHECK_MSG(same, "muon variant %d: step_out changed the step", v);
        CHECK_MSG(match, "muon variant %d: S is not W_after - (1 - lr wd) W_before (worst %.3g of tol)", v, worst);
        /* errors leave S untouched: S over W, S over G, lds < cols, NaN in G */
        memcpy(Sk, S, sizeof S);
        CHECK(muon_step(&sa, &cfg, Wa, C, G[0], C, Wa + 2, C) == MUON_ERR_ALIAS);
        CHECK(muon_step(&sa, &cfg, Wa, C, G[0], C, (float *)G[0] + C, C) == MUON_ERR_ALIAS);
        CHECK(muon_step(&sa, &cfg, Wa, C, G[0], C, sa.momentum, C) == MUON_ERR_ALIAS);
        CHECK(muon_step(&sa, &cfg, Wa, C, G[0], C, S, C - 1) == MUON_ERR_SIZE);
        G[1][5] = NAN;
        CHECK(muon_step(&sa, &cfg, Wa, C, G[1], C, S, LDS) == MUON_ERR_NONFINITE);
        G[1][5] = 0.25f;
        CHECK(memcmp(Sk, S, sizeof S) == 0 && sa.step == STEPS);
        muon_free(&sa);
        muon_free(&sb);
    }
    /* Muown: Adam and Signum magnitudes, with and without decay */
    for (v = 0; v < 3; v++) {
        muown_config cfg = muown_default();
        muown_state sa, sb;
        int same = 1, match = 1;
        cfg.muon.lr = 0.03;
        cfg.mag_lr = 0.01;
        cfg.muon.weight_decay = v == 1 ? 0.1 : 0.0;
        if (v == 2) cfg.magnitude = MUOWN_MAG_SIGNUM;
        CHECK(muown_init(&sa, W0, R, C, C) == MUON_OK && muown_init(&sb, W0, R, C, C) == MUON_OK);
        memcpy(Wa, W0, sizeof Wa);
        memcpy(Wn, W0, sizeof Wn);
        for (k = 0; k < STEPS; k++) {
            for (i = 0; i < R * LDS; i++) S[i] = 77.0f;
            memcpy(Wb, Wa, sizeof Wb);
            CHECK(muown_step(&sa, &cfg, Wa, C, G[k], C, S, LDS) == MUON_OK);
            CHECK(muown_step(&sb, &cfg, Wn, C, G[k], C, NULL, 0) == MUON_OK);
            same &= memcmp(Wa, Wn, sizeof Wa) == 0 && memcmp(sa.g, sb.g, R * sizeof(double)) == 0;
            match &= step_matches(S, LDS, Wb, Wa, R, C, cfg.muon.lr * cfg.muon.weight_decay, &worst);
        }
        CHECK_MSG(same, "muown variant %d: step_out changed the step", v);
        CHECK_MSG(match, "muown variant %d: S is not the change (worst %.3g of tol)", v, worst);
        memcpy(Sk, S, sizeof S);
        CHECK(muown_step(&sa, &cfg, Wa, C, G[0], C, Wa + C, C) == MUON_ERR_ALIAS);
        CHECK(muown_step(&sa, &cfg, Wa, C, G[0], C, (float *)sa.g, C) == MUON_ERR_ALIAS);
        CHECK(muown_step(&sa, &cfg, Wa, C, G[0], C, S, 0) == MUON_ERR_SIZE);
        CHECK(memcmp(Sk, S, sizeof S) == 0 && sa.step == STEPS);
        muown_free(&sa);
        muown_free(&sb);
    }
    /* AdamW: with and without decay; S from the unrounded moments */
    for (v = 0; v < 2; v++) {
        muon_adamw_config cfg = muon_adamw_default();
        muon_adamw_state sa, sb;
        int same = 1, match = 1;
        cfg.lr = 4e-3;
        cfg.weight_decay = v ? 0.1 : 0.0;
        CHECK(muon_adamw_init(&sa, R * C) == MUON_OK && muon_adamw_init(&sb, R * C) == MUON_OK);
        memcpy(Wa, W0, sizeof Wa);
        memcpy(Wn, W0, sizeof Wn);
        for (k = 0; k < STEPS; k++) {
            memcpy(Wb, Wa, sizeof Wb);
            CHECK(muon_adamw_step(&sa, &cfg, Wa, G[k], S) == MUON_OK);
            CHECK(muon_adamw_step(&sb, &cfg, Wn, G[k], NULL) == MUON_OK);
            same &= memcmp(Wa, Wn, sizeof Wa) == 0 && memcmp(sa.m, sb.m, R * C * sizeof(float)) == 0;
            match &= step_matches(S, R * C, Wb, Wa, 1, R * C, cfg.lr * cfg.weight_decay, &worst);
        }
        CHECK_MSG(same, "adamw variant %d: step_out changed the step", v);
        CHECK_MSG(match, "adamw variant %d: S is not the change (worst %.3g of tol)", v, worst);
        {   /* the first step of Adam is -lr g/(|g| + eps) (m_hat = g, v_hat = g^2) */
            muon_adamw_state s1;
            memset(&s1, 0, sizeof s1);
            memcpy(Wa, W0, sizeof Wa);
            CHECK(muon_adamw_init(&s1, R * C) == MUON_OK);
            CHECK(muon_adamw_step(&s1, &cfg, Wa, G[0], S) == MUON_OK);
            for (i = 0; i < R * C; i++) match &= fabs(S[i] + cfg.lr * (G[0][i] > 0 ? 1.0 : -1.0)) <= cfg.lr * (1e-6 + 2e-8 / fabs(G[0][i]));
            CHECK(match);
            muon_adamw_free(&s1);
        }
        memcpy(Sk, S, sizeof S);
        CHECK(muon_adamw_step(&sa, &cfg, Wa, G[0], Wa + 3) == MUON_ERR_ALIAS);
        CHECK(muon_adamw_step(&sa, &cfg, Wa, G[0], sa.v + 1) == MUON_ERR_ALIAS);
        CHECK(muon_adamw_step(&sa, &cfg, Wa, G[0], (float *)G[0]) == MUON_ERR_ALIAS);
        CHECK(memcmp(Sk, S, sizeof S) == 0 && sa.step == STEPS);
        muon_adamw_free(&sa);
        muon_adamw_free(&sb);
    }
    CHECK(worst > 0.0); /* the comparison measured something */
}

int main(void)
{
    RUN(test_status_strings);
    RUN(test_presets);
    RUN(test_transfer_jordan_facts);
    RUN(test_transfer_polar_express);
    RUN(test_schedule_modes);
    RUN(test_min_steps_and_choose);
    RUN(test_quantile);
    RUN(test_ns_matches_transfer);
    RUN(test_cubic_polar_factor);
    RUN(test_ns_zero_and_tiny);
    RUN(test_ns_inplace_alias_batched);
    RUN(test_ns_workspace);
    RUN(test_muon_golden_3_steps);
    RUN(test_momentum_forms_agree);
    RUN(test_scale_modes_and_split);
    RUN(test_muon_zero_grad_and_untouched);
    RUN(test_muon_ws_variants);
    RUN(test_singular_values);
    RUN(test_singular_values_gram);
    RUN(test_cap_first_order);
    RUN(test_cap_in_muon_step);
    RUN(test_decomposition);
    RUN(test_muown_gradients_fd);
    RUN(test_muown_invariants);
    RUN(test_muown_golden_3_steps);
    RUN(test_muown_negative_magnitude);
    RUN(test_cap_step_increment);
    RUN(test_step_leading_dims);
    RUN(test_decay_rounding);
    RUN(test_adamw);
    RUN(test_adamw_bits);
    RUN(test_adamw_negative_moment);
    RUN(test_step_out);
    RUN(test_clip);
    RUN(test_clip_large);
    RUN(test_error_statuses);
    RUN(test_config_resolve);
    RUN(test_small_layer_workspace);
    RUN(test_alias_statuses);
    RUN(test_nomem);
    RUN(test_determinism);
    return TEST_REPORT();
}
