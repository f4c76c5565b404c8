/* tests/test_rownorm.c - rownorm.h against float64 references written from SPEC.md section 1.
 * Built by `make test` as C99 and C++ in every variant (scalar, AVX2, AVX-512, CBLAS, ASan+UBSan). */
#include <stdlib.h>
/* an allocator that can be made to fail (RN_ERR_NOMEM paths) */
static int t_alloc_fail;
#define RN_MALLOC(sz) (t_alloc_fail ? NULL : malloc(sz))
#define RN_FREE(p) free(p)
#define ROWNORM_IMPLEMENTATION
#include "rownorm.h"
#include "test.h"
#include <float.h>
#include <stdint.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define NANF ((float)NAN)

/* ---- helpers -------------------------------------------------------------------------- */

/* rows x cols normal(0, sd) matrix with leading dimension ld; the padding past cols is NaN, so
 * any read of it shows up as a non-finite error or a NaN result. */
static float *mat_new(t_rng *r, size_t rows, size_t cols, size_t ld, double sd)
{
    float *m = (float *)malloc(rows * ld * sizeof(float));
    size_t i, j;
    for (i = 0; i < rows; i++)
        for (j = 0; j < ld; j++) m[i * ld + j] = j < cols ? (float)(sd * t_rng_normal(r)) : NANF;
    return m;
}

static double *dmat(size_t n) { return (double *)calloc(n ? n : 1, sizeof(double)); }

static double ref_dist2(const float *S, size_t ld, size_t cols, size_t i, size_t j)
{
    double s = 0.0;
    size_t k;
    for (k = 0; k < cols; k++) { double d = (double)S[i * ld + k] - (double)S[j * ld + k]; s += d * d; }
    return s;
}

/* brute-force diameter in float64 */
static double ref_diameter(const float *S, size_t rows, size_t cols, size_t ld)
{
    double best = 0.0;
    size_t i, j;
    for (i = 0; i < rows; i++)
        for (j = i + 1; j < rows; j++) {
            double d = ref_dist2(S, ld, cols, i, j);
            if (d > best) best = d;
        }
    return sqrt(best);
}

/* ---- 1.1 Hilbert distance ----------------------------------------------------------------- */

static void test_status_strings(void)
{
    int a, b;
    for (a = RN_OK; a <= RN_ERR_NOCONVERGE; a++) {
        CHECK(rn_status_string((rn_status)a) != NULL);
        for (b = a + 1; b <= RN_ERR_NOCONVERGE; b++)
            CHECK(strcmp(rn_status_string((rn_status)a), rn_status_string((rn_status)b)) != 0);
    }
    CHECK(rn_status_string((rn_status)99) != NULL);
}

static void test_hilbert_logits(void)
{
    t_rng r = {1};
    size_t n = 257, k;
    float *z0 = mat_new(&r, 1, n, n, 3.0), *z1 = mat_new(&r, 1, n, n, 3.0), *z2 = mat_new(&r, 1, n, n, 1.0);
    double d, d2, mx = -1e300, mn = 1e300, lse0 = 0, lse1 = 0, m0 = -1e300, m1 = -1e300, pmx = -1e300, pmn = 1e300;
    CHECK(rn_hilbert_logits(z0, z1, n, &d) == RN_OK);
    for (k = 0; k < n; k++) {
        double t = (double)z1[k] - (double)z0[k];
        mx = t > mx ? t : mx; mn = t < mn ? t : mn;
        m0 = z0[k] > m0 ? z0[k] : m0; m1 = z1[k] > m1 ? z1[k] : m1;
    }
    CHECK_NEAR(d, mx - mn, 0, 1e-15);
    /* the Hilbert identity: d_H(softmax z0, softmax z1) from log-probabilities */
    for (k = 0; k < n; k++) { lse0 += exp(z0[k] - m0); lse1 += exp(z1[k] - m1); }
    lse0 = m0 + log(lse0); lse1 = m1 + log(lse1);
    for (k = 0; k < n; k++) {
        double lr = ((double)z1[k] - lse1) - ((double)z0[k] - lse0);
        pmx = lr > pmx ? lr : pmx; pmn = lr < pmn ? lr : pmn;
    }
    CHECK_NEAR(d, pmx - pmn, 1e-12, 1e-12);
    /* shift invariance (softmax invariance): z1 + c */
    for (k = 0; k < n; k++) z2[k] = z1[k] + 5.0f;
    CHECK(rn_hilbert_logits(z0, z2, n, &d2) == RN_OK);
    CHECK_NEAR(d2, d, 1e-5, 1e-6);
    /* stable at |z| ~ 1e4: logits 1e4 + small */
    for (k = 0; k < n; k++) { z0[k] = 1e4f + (float)(k % 7) * 0.25f; z1[k] = -1e4f + (float)(k % 5) * 0.5f; }
    CHECK(rn_hilbert_logits(z0, z1, n, &d) == RN_OK);
    CHECK_NEAR(d, 1.5 + 2.0, 0, 1e-15); /* max (2 - 0) - min(0 - 1.5) */
    /* symmetric, zero on itself */
    CHECK(rn_hilbert_logits(z1, z0, n, &d2) == RN_OK && d2 == d);
    CHECK(rn_hilbert_logits(z0, z0, n, &d2) == RN_OK && d2 == 0.0);
    free(z0); free(z1); free(z2);
}

static void test_hilbert_probs(void)
{
    t_rng r = {2};
    size_t n = 100, k;
    float p[100], q[100], p2[100];
    double zp[100], zq[100], sp = 0, sq = 0, d, dl, tv = 0;
    float fz0[100], fz1[100];
    for (k = 0; k < n; k++) { zp[k] = 2 * t_rng_normal(&r); zq[k] = 2 * t_rng_normal(&r); sp += exp(zp[k]); sq += exp(zq[k]); }
    for (k = 0; k < n; k++) {
        p[k] = (float)(exp(zp[k]) / sp); q[k] = (float)(exp(zq[k]) / sq);
        fz0[k] = (float)log((double)q[k]); fz1[k] = (float)log((double)p[k]);
        p2[k] = p[k] * 1024.0f; /* unnormalised, same point of the simplex */
        tv += 0.5 * fabs((double)p[k] / 1.0 - (double)q[k]);
    }
    CHECK(rn_hilbert_probs(p, q, n, &d) == RN_OK);
    {
        double mx = -1e300, mn = 1e300;
        for (k = 0; k < n; k++) { double t = log((double)p[k]) - log((double)q[k]); mx = t > mx ? t : mx; mn = t < mn ? t : mn; }
        CHECK_NEAR(d, mx - mn, 1e-12, 1e-12);
    }
    CHECK(rn_hilbert_logits(fz0, fz1, n, &dl) == RN_OK);
    CHECK_NEAR(dl, d, 1e-5, 1e-6); /* the logits form agrees (float-rounded logs) */
    CHECK(rn_hilbert_probs(p2, q, n, &dl) == RN_OK);
    CHECK_NEAR(dl, d, 1e-12, 1e-12); /* scale-free */
    /* TV bound: TV(p,q) <= tanh(d_H/4) (p, q normalised up to float rounding) */
    CHECK(tv <= rn_tv_bound(d) + 1e-6);
    CHECK(rn_tv_bound(0.0) == 0.0);
    CHECK_NEAR(rn_tv_bound(4.0), tanh(1.0), 0, 1e-15);
    CHECK(rn_tv_bound(-1.0) != rn_tv_bound(-1.0)); /* NaN */
}

static void test_hilbert_errors(void)
{
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 1, 1, 1}, bad[4] = {1, NANF, 1, 1}, inf[4] = {1, 1, (float)HUGE_VAL, 1};
    float neg[4] = {1, 0, 1, 1};
    double out = 123.0;
    CHECK(rn_hilbert_logits(NULL, b, 4, &out) == RN_ERR_NULL);
    CHECK(rn_hilbert_logits(a, NULL, 4, &out) == RN_ERR_NULL);
    CHECK(rn_hilbert_logits(a, b, 4, NULL) == RN_ERR_NULL);
    CHECK(rn_hilbert_logits(a, b, 0, &out) == RN_ERR_SIZE);
    CHECK(rn_hilbert_logits(a, bad, 4, &out) == RN_ERR_NONFINITE);
    CHECK(rn_hilbert_logits(inf, b, 4, &out) == RN_ERR_NONFINITE);
    CHECK(rn_hilbert_probs(a, neg, 4, &out) == RN_ERR_DOMAIN);
    CHECK(rn_hilbert_probs(neg, a, 4, &out) == RN_ERR_DOMAIN);
    CHECK(rn_hilbert_probs(a, bad, 4, &out) == RN_ERR_NONFINITE);
    CHECK(rn_hilbert_probs(a, b, 0, &out) == RN_ERR_SIZE);
    CHECK(rn_hilbert_probs(NULL, b, 4, &out) == RN_ERR_NULL);
    CHECK(out == 123.0);
}

/* ---- 1.2 Diameter --------------------------------------------------------------------------- */

/* The tile scan with each screen forced (float32 products; int8 with its fallbacks to float32;
 * int8 for every tile; on any build): 1 if all return D and the pair bit for bit. The exactness of the result must not depend on
 * the screen (rn__row_diameter_core), so every diameter check below runs all of them. */
static size_t t_q8_fallbacks; /* int8 tiles handed to the float32 product (rn__diam_q8 returned 0) */
static int diam_screens_agree(const float *S, size_t rows, size_t cols, size_t ld, double D, size_t a, size_t b)
{
    static const int screens[3] = {RN__SCREEN_F32, RN__SCREEN_Q8, RN__SCREEN_Q8_ONLY};
    size_t need = rn_row_diameter_workspace_size(rows, cols), k;
    void *ws = malloc(need ? need : 1);
    int ok = ws != NULL;
    for (k = 0; k < 3 && ok; k++) {
        rn__diam_stats st;
        double D2 = -1.0;
        size_t i2 = 99, j2 = 99;
        memset(&st, 0, sizeof st);
        st.screen = screens[k];
        ok = rn__row_diameter_core(S, rows, cols, ld, ws, need, &D2, &i2, &j2, &st) == RN_OK && D2 == D &&
             i2 == a && j2 == b;
        if (st.screen == RN__SCREEN_Q8) t_q8_fallbacks += st.tiles - st.q8tiles;
        if (!ok)
            fprintf(stderr, "  screen %d: D %.17g (%zu, %zu), default %.17g (%zu, %zu)\n", screens[k], D2, i2, j2, D,
                    a, b);
    }
    free(ws);
    return ok;
}

static void check_diameter(const float *S, size_t rows, size_t cols, size_t ld, const char *what)
{
    double D = -1, want = ref_diameter(S, rows, cols, ld), lo = -1, hi = -1;
    size_t i = 99, j = 99;
    rn_status st = rn_row_diameter(S, rows, cols, ld, &D, &i, &j);
    CHECK_MSG(st == RN_OK, "%s: status %d", what, (int)st);
    CHECK_MSG(fabs(D - want) <= 1e-12 * want + 1e-300 || (want == 0.0 && D == 0.0), /* 1e-6 asked; exact to rounding */
              "%s: D %.17g want %.17g", what, D, want);
    CHECK_MSG(st != RN_OK || diam_screens_agree(S, rows, cols, ld, D, i, j), "%s: the screens differ", what);
    if (rows > 1) {
        CHECK_MSG(i < j && j < rows, "%s: pair %zu %zu", what, i, j);
        if (i < j && j < rows) CHECK_NEAR(sqrt(ref_dist2(S, ld, cols, i, j)), D, 0, 1e-14);
    } else {
        CHECK(i == 0 && j == 0 && D == 0.0);
    }
    CHECK(rn_row_diameter_bounds(S, rows, cols, ld, &lo, &hi) == RN_OK);
    CHECK_MSG(lo <= want * (1 + 1e-12) && want <= hi * (1 + 1e-12) && hi <= 2 * lo * (1 + 1e-12),
              "%s: bracket lo %.17g D %.17g hi %.17g", what, lo, want, hi);
}

/* the bracket's two forms agree bit for bit for narrow (stack), wide (allocated) and very wide
 * rows, hold lo <= D <= hi <= 2 lo against the float64 diameter, and the _ws form's errors */
static void test_bounds_ws(void)
{
    static const size_t widths[4] = {5, 128, 129, 1500};
    t_rng r = {21};
    size_t k;
    for (k = 0; k < 4; k++) {
        size_t rows = 40, cols = widths[k], ld = cols + 3, need = rn_row_diameter_bounds_workspace_size(cols), i, j;
        float *S = mat_new(&r, rows, cols, ld, 1.0);
        double lo = -1, hi = -1, lo2 = -2, hi2 = -2, want = 0.0;
        unsigned char *ws = (unsigned char *)malloc(need + 1);
        if (!ws) abort();
        for (i = 0; i < rows; i++)
            for (j = i + 1; j < rows; j++) {
                double d2 = ref_dist2(S, ld, cols, i, j);
                want = d2 > want ? d2 : want;
            }
        want = sqrt(want);
        CHECK(need >= cols * sizeof(double));
        CHECK(rn_row_diameter_bounds(S, rows, cols, ld, &lo, &hi) == RN_OK);
        CHECK(rn_row_diameter_bounds_ws(S, rows, cols, ld, &lo2, &hi2, ws + 1, need) == RN_OK); /* misaligned */
        CHECK_MSG(lo == lo2 && hi == hi2, "cols %zu: %.17g %.17g vs %.17g %.17g", cols, lo, hi, lo2, hi2);
        CHECK_MSG(lo <= want * (1 + 1e-12) && want <= hi * (1 + 1e-12) && hi <= 2 * lo * (1 + 1e-12),
                  "cols %zu: bracket lo %.17g D %.17g hi %.17g", cols, lo, want, hi);
        lo2 = hi2 = 7.0;
        CHECK(rn_row_diameter_bounds_ws(S, rows, cols, ld, &lo2, &hi2, ws, need - 1) == RN_ERR_SIZE);
        CHECK(rn_row_diameter_bounds_ws(S, rows, cols, ld, &lo2, &hi2, NULL, need) == RN_ERR_NULL);
        CHECK(rn_row_diameter_bounds_ws(S, rows, cols, ld, &lo2, &hi2, (void *)S, need) == RN_ERR_ALIAS);
        CHECK(rn_row_diameter_bounds_ws(S, rows, cols, ld, (double *)(void *)ws, &hi2, ws, need + 1) ==
              RN_ERR_ALIAS);
        CHECK(lo2 == 7.0 && hi2 == 7.0);
        free(ws);
        free(S);
    }
    CHECK(rn_row_diameter_bounds_workspace_size(0) == 0 && rn_row_diameter_bounds_workspace_size((size_t)-1) == 0);
}

static void test_diameter_cases(void)
{
    t_rng r = {3};
    size_t i, k;
    { /* random, ld > cols with NaN padding */
        float *S = mat_new(&r, 200, 37, 41, 1.0);
        check_diameter(S, 200, 37, 41, "random");
        free(S);
    }
    { /* common shift: S = 1 c^T + small */
        size_t V = 150, d = 33;
        float *S = mat_new(&r, V, d, d, 1e-3);
        float c[33];
        for (k = 0; k < d; k++) c[k] = (float)(1e4 * t_rng_normal(&r));
        for (i = 0; i < V; i++) for (k = 0; k < d; k++) S[i * d + k] += c[k];
        check_diameter(S, V, d, d, "common shift");
        free(S);
    }
    { /* duplicate rows: all equal, then two distinct values repeated */
        size_t V = 70, d = 9;
        float *S = mat_new(&r, V, d, d, 1.0);
        for (i = 1; i < V; i++) memcpy(S + i * d, S, d * sizeof(float));
        check_diameter(S, V, d, d, "all equal");
        for (i = 0; i < V; i += 3) S[i * d + 2] += 1.0f;
        check_diameter(S, V, d, d, "two values");
        free(S);
    }
    { /* sphere-like: every row the same norm (where pruning fails), several blocks */
        size_t V = 333, d = 48;
        float *S = mat_new(&r, V, d, d, 1.0);
        for (i = 0; i < V; i++) {
            double n = sqrt(ref_dist2(S, d, d, i, i) + 0.0), s = 0.0;
            for (k = 0; k < d; k++) s += (double)S[i * d + k] * S[i * d + k];
            n = sqrt(s);
            for (k = 0; k < d; k++) S[i * d + k] = (float)(S[i * d + k] / n * 0.01);
        }
        check_diameter(S, V, d, d, "sphere");
        free(S);
    }
    { /* gradient-like: heavy-tailed row norms */
        size_t V = 700, d = 40;
        float *S = mat_new(&r, V, d, d, 1.0);
        for (i = 0; i < V; i++) {
            double sc = exp(2.0 * t_rng_normal(&r));
            for (k = 0; k < d; k++) S[i * d + k] = (float)(S[i * d + k] * sc);
        }
        check_diameter(S, V, d, d, "heavy tail");
        free(S);
    }
    { /* V = 1, V = 2, cols = 1 */
        float *S = mat_new(&r, 2, 5, 5, 1.0);
        check_diameter(S, 1, 5, 5, "V=1");
        check_diameter(S, 2, 5, 5, "V=2");
        check_diameter(S, 2, 1, 5, "V=2 d=1");
        free(S);
    }
    { /* near ties below the float32 resolution of the tiles: +-e_k (1 + 1e-7 k), plus a shift */
        size_t V = 260, d = 100;
        float *S = mat_new(&r, V, d, d, 0.0);
        for (i = 0; i < V; i++) {
            for (k = 0; k < d; k++) S[i * d + k] = 0.0f;
            S[i * d + (i / 2) % d] = (float)((i % 2 ? -1.0 : 1.0) * (1.0 + 1e-7 * (double)i));
        }
        check_diameter(S, V, d, d, "near ties");
        for (i = 0; i < V; i++) for (k = 0; k < d; k++) S[i * d + k] += 3.0f;
        check_diameter(S, V, d, d, "near ties shifted");
        free(S);
    }
    { /* two tight dense clusters at +-u: thousands of pairs within the float32 error of the
       * tile products of the maximum, so only a sound margin finds the true pair */
        size_t V = 200, d = 256;
        float *S = mat_new(&r, V, d, d, 0.0);
        double u[256], un = 0.0;
        for (k = 0; k < d; k++) { u[k] = t_rng_normal(&r); un += u[k] * u[k]; }
        for (i = 0; i < V; i++)
            for (k = 0; k < d; k++)
                S[i * d + k] = (float)((i % 2 ? -1.0 : 1.0) * u[k] / sqrt(un) + 1e-7 * t_rng_normal(&r));
        check_diameter(S, V, d, d, "tight clusters");
        free(S);
    }
    { /* four corners (+-1, +-1) plus 1e-4 noise: the float32 tile products cannot see the noise
       * at all (it is below the spacing of the +-1 terms), so every opposite-corner pair looks
       * the same to the tiles and only the error margin makes the verification find the max */
        size_t V = 240, d = 32;
        float *S = mat_new(&r, V, d, d, 1e-4);
        for (i = 0; i < V; i++) {
            S[i * d + 0] = (i % 2) ? 1.0f : -1.0f;
            S[i * d + 1] = ((i / 2) % 2) ? 1.0f : -1.0f;
        }
        /* a decoy row of the largest radius, so that the farthest-point sweeps start away
         * from the best pair and stop at a pair that is only locally farthest */
        S[0] = 0.0f; S[1] = 0.0f; S[2] = 1.5f;
        check_diameter(S, V, d, d, "corners");
        free(S);
    }
    { /* wide rows (> 1024 columns: the bracket's centre is a row) */
        float *S = mat_new(&r, 20, 1100, 1100, 1.0);
        check_diameter(S, 20, 1100, 1100, "wide");
        free(S);
    }
}

/* SPEC 1.2 theorem: osc(S h*) = H D(S) at h* of the maximising pair, and no ||h|| <= H does more. */
static void test_diameter_theorem(void)
{
    t_rng r = {4};
    size_t V = 120, d = 24, i, j, a, k, trial;
    float *S = mat_new(&r, V, d, d, 1.0), h[24];
    double D, H = 2.5;
    CHECK(rn_row_diameter(S, V, d, d, &D, &i, &j) == RN_OK);
    CHECK(rn_worst_hidden_state(S, V, d, d, i, j, H, h) == RN_OK);
    for (trial = 0; trial < 21; trial++) {
        double mx = -1e300, mn = 1e300, hn = 0.0;
        if (trial > 0) { /* random h of norm H */
            for (k = 0; k < d; k++) { h[k] = (float)t_rng_normal(&r); hn += (double)h[k] * h[k]; }
            for (k = 0; k < d; k++) h[k] = (float)(h[k] * H / sqrt(hn));
        }
        hn = 0.0;
        for (k = 0; k < d; k++) hn += (double)h[k] * h[k];
        for (a = 0; a < V; a++) {
            double s = 0.0;
            for (k = 0; k < d; k++) s += (double)S[a * d + k] * h[k];
            mx = s > mx ? s : mx; mn = s < mn ? s : mn;
        }
        if (trial == 0) {
            CHECK_NEAR(sqrt(hn), H, 0, 1e-6);
            CHECK_NEAR(mx - mn, H * D, 0, 1e-6);
        } else {
            CHECK(mx - mn <= sqrt(hn) * D * (1 + 1e-6));
        }
    }
    /* equal rows: h = 0 */
    CHECK(rn_worst_hidden_state(S, V, d, d, 3, 3, H, h) == RN_OK && h[0] == 0.0f && h[d - 1] == 0.0f);
    free(S);
}

static void test_diameter_ws_and_errors(void)
{
    t_rng r = {5};
    size_t V = 50, d = 10, i = 7, j = 7, need;
    float *S = mat_new(&r, V, d, d, 1.0);
    double D = 42.0, D2, lo = 42.0, hi = 42.0;
    void *ws;
    float h[10];
    need = rn_row_diameter_workspace_size(V, d);
    CHECK(need > 0);
    ws = malloc(need + 1);
    CHECK(rn_row_diameter_ws(S, V, d, d, (char *)ws + 1, need, &D2, NULL, NULL) == RN_OK); /* unaligned ok */
    CHECK_NEAR(D2, ref_diameter(S, V, d, d), 0, 1e-12);
    { /* the one-thread size (one tile) is the least it takes, on fewer threads, same result */
        size_t one, i1 = 0, j1 = 0, i2 = 0, j2 = 0;
        double D1 = -1.0;
        T_ONE_THREAD(rn_row_diameter_workspace_size(V, d), one);
        CHECK(one > 0 && one <= need);
        CHECK(rn_row_diameter_ws(S, V, d, d, ws, one, &D1, &i1, &j1) == RN_OK);
        CHECK(rn_row_diameter_ws(S, V, d, d, ws, need, &D2, &i2, &j2) == RN_OK);
        CHECK(D1 == D2 && i1 == i2 && j1 == j2);
        CHECK(rn_row_diameter_ws(S, V, d, d, ws, one - 1, &D, &i, &j) == RN_ERR_SIZE);
    }
    CHECK(rn_row_diameter_ws(S, V, d, d, ws, 100, &D, &i, &j) == RN_ERR_SIZE);
    CHECK(rn_row_diameter_ws(S, V, d, d, NULL, need, &D, &i, &j) == RN_ERR_NULL);
    CHECK(rn_row_diameter_ws(S, 2, d, d, S, need, &D, &i, &j) == RN_ERR_ALIAS);
    CHECK(rn_row_diameter(NULL, V, d, d, &D, &i, &j) == RN_ERR_NULL);
    CHECK(rn_row_diameter(S, V, d, d, NULL, &i, &j) == RN_ERR_NULL);
    CHECK(rn_row_diameter(S, 0, d, d, &D, &i, &j) == RN_ERR_SIZE);
    CHECK(rn_row_diameter(S, V, 0, d, &D, &i, &j) == RN_ERR_SIZE);
    CHECK(rn_row_diameter(S, V, d, d - 1, &D, &i, &j) == RN_ERR_SIZE);
    CHECK(rn_row_diameter(S, (size_t)-1 / 8, d, d, &D, &i, &j) == RN_ERR_SIZE);
    CHECK(rn_row_diameter_bounds(S, 0, d, d, &lo, &hi) == RN_ERR_SIZE);
    CHECK(rn_row_diameter_bounds(S, V, d, d, NULL, &hi) == RN_ERR_NULL);
    CHECK(rn_worst_hidden_state(S, V, d, d, V, 0, 1.0, h) == RN_ERR_DOMAIN);
    CHECK(rn_worst_hidden_state(S, V, d, d, 0, 1, -1.0, h) == RN_ERR_DOMAIN);
    CHECK(rn_worst_hidden_state(S, V, d, d, 0, 1, (double)NAN, h) == RN_ERR_DOMAIN);
    CHECK(rn_worst_hidden_state(S, V, d, d, 0, 1, 1.0, NULL) == RN_ERR_NULL);
    S[13 * d + 4] = NANF;
    CHECK(rn_row_diameter(S, V, d, d, &D, &i, &j) == RN_ERR_NONFINITE);
    CHECK(rn_row_diameter_bounds(S, V, d, d, &lo, &hi) == RN_ERR_NONFINITE);
    S[13 * d + 4] = (float)HUGE_VAL;
    CHECK(rn_row_diameter_ws(S, V, d, d, ws, need, &D, &i, &j) == RN_ERR_NONFINITE);
    CHECK(D == 42.0 && i == 7 && j == 7 && lo == 42.0 && hi == 42.0);
    free(ws); free(S);
}

/* brute-force diameter in float64 with the documented tie rule: the first maximising pair in
 * (i, j) lexicographic order */
static double ref_diameter_pair(const float *S, size_t rows, size_t cols, size_t ld, size_t *bi, size_t *bj)
{
    double best = -1.0;
    size_t i, j;
    *bi = 0; *bj = rows > 1 ? 1 : 0;
    for (i = 0; i < rows; i++)
        for (j = i + 1; j < rows; j++) {
            double d = ref_dist2(S, ld, cols, i, j);
            if (d > best) { best = d; *bi = i; *bj = j; }
        }
    return sqrt(best > 0.0 ? best : 0.0);
}

/* 1 if rn_row_diameter returns the float64 brute-force D (relative 1e-12) and, with
 * check_pair, exactly the lexicographically smallest maximising pair. */
static int diam_agrees(const float *S, size_t rows, size_t cols, size_t ld, int check_pair)
{
    size_t bi, bj, a = 99, b = 99;
    double want = ref_diameter_pair(S, rows, cols, ld, &bi, &bj), D = -1.0;
    if (rn_row_diameter(S, rows, cols, ld, &D, &a, &b) != RN_OK) return 0;
    if (!(fabs(D - want) <= 1e-12 * want) && !(want == 0.0 && D == 0.0)) return 0;
    if (check_pair && (a != bi || b != bj)) return 0;
    if (!diam_screens_agree(S, rows, cols, ld, D, a, b)) return 0;
    return a < b && b < rows;
}

/* Rows spread so far that float32 products of the raw centred rows overflow (1e20, 1e30) or
 * fall into the subnormal range (1e-23, 1e-30): the tiles work on rows scaled by a power of
 * two, so D and the pair stay exact. Small random sets, and the corners + decoy configuration
 * (the farthest-point sweeps stop at a pair that is only locally farthest). */
static void test_diameter_extreme_scales(void)
{
    static const double scales[] = {1e20, 1e-23, 1e-30, 1e30, 1e-38};
    t_rng r = {21};
    size_t si, t, i, k;
    float *S = (float *)malloc(240 * 32 * sizeof(float));
    for (si = 0; si < sizeof scales / sizeof scales[0]; si++) {
        double sc = scales[si];
        int bad = 0, ntr = si < 4 ? 700 : 100;
        for (t = 0; t < (size_t)ntr; t++) {
            size_t V = 3 + (size_t)(t_rng_uniform(&r) * 60), d = 1 + (size_t)(t_rng_uniform(&r) * 4);
            for (i = 0; i < V * d; i++) S[i] = (float)(sc * t_rng_normal(&r));
            bad += !diam_agrees(S, V, d, d, 0);
        }
        CHECK_MSG(bad == 0, "scale %g: %d of %d random sets wrong", sc, bad, ntr);
        { /* corners (+-1, +-1) + noise + a decoy row of the largest radius, times sc */
            size_t V = 240, d = 32;
            for (i = 0; i < V; i++)
                for (k = 0; k < d; k++) S[i * d + k] = (float)(sc * 1e-4 * (t_rng_uniform(&r) - 0.5));
            for (i = 0; i < V; i++) {
                S[i * d + 0] = (float)(sc * ((i % 2) ? 1.0 : -1.0));
                S[i * d + 1] = (float)(sc * (((i / 2) % 2) ? 1.0 : -1.0));
            }
            S[0] = 0.0f; S[1] = 0.0f; S[2] = (float)(1.5 * sc);
            CHECK_MSG(diam_agrees(S, V, d, d, 0), "scale %g: corners + decoy", sc);
        }
    }
    free(S);
}

/* Normal-scale fuzz of the pruning: several 64-row blocks, d = 2..6, heavy-tailed or
 * sphere-like row norms, or a decoy row of the largest radius. */
static void test_diameter_fuzz(void)
{
    t_rng r = {22};
    size_t t, i, k;
    int bad = 0, ntr = 150;
    float *S = (float *)malloc(400 * 6 * sizeof(float));
    for (t = 0; t < (size_t)ntr; t++) {
        size_t V = 65 + (size_t)(t_rng_uniform(&r) * 335), d = 2 + (size_t)(t_rng_uniform(&r) * 5);
        int kind = (int)(t % 3);
        for (i = 0; i < V; i++) {
            double sc = kind == 0 ? exp(1.5 * t_rng_normal(&r)) : 1.0, n = 0.0;
            for (k = 0; k < d; k++) { double v = t_rng_normal(&r); S[i * d + k] = (float)v; n += v * v; }
            if (kind == 1) sc = (1.0 + 0.01 * t_rng_uniform(&r)) / sqrt(n);
            for (k = 0; k < d; k++) S[i * d + k] = (float)(S[i * d + k] * sc);
        }
        if (kind == 2) { for (k = 0; k < d; k++) S[k] = 0.0f; S[d - 1] = 3.0f; }
        bad += !diam_agrees(S, V, d, d, 0);
    }
    CHECK_MSG(bad == 0, "%d of %d wrong", bad, ntr);
    free(S);
}

/* Exact ties (small integer coordinates, many duplicate rows, optional common offset): D and
 * the documented tie rule (the lexicographically smallest maximising pair). */
static void test_diameter_ties(void)
{
    t_rng r = {23};
    size_t t, i;
    int bad = 0, ntr = 150;
    float *S = (float *)malloc(400 * 5 * sizeof(float));
    for (t = 0; t < (size_t)ntr; t++) {
        size_t V = 2 + (size_t)(t_rng_uniform(&r) * 398), d = 1 + (size_t)(t_rng_uniform(&r) * 5);
        int range = 1 + (int)(t_rng_uniform(&r) * 4);
        double off = t_rng_uniform(&r) < 0.5 ? 0.0 : 1000.0 * (t_rng_uniform(&r) - 0.5);
        for (i = 0; i < V * d; i++) S[i] = (float)((int)(t_rng_uniform(&r) * (2 * range + 1)) - range + off);
        bad += !diam_agrees(S, V, d, d, 1);
    }
    CHECK_MSG(bad == 0, "%d of %d wrong (D or tie rule)", bad, ntr);
    /* many exact ties: some int8 tiles have too many candidates and take the float32 product */
    CHECK_MSG(t_q8_fallbacks > 0, "no int8 tile fell back to float32 (%zu)", t_q8_fallbacks);
    free(S);
}

/* Where the error margin M of the tile threshold decides: hypercube-corner clusters with
 * coordinates that round in float32, sub-resolution noise, and a decoy of the largest radius.
 * Also the corners + decoy case with noise below the tiles' resolution (1e-5, 1e-6), once with
 * ld > cols and NaN padding (the verification must use ld). */
static void test_diameter_margin(void)
{
    t_rng r = {24};
    size_t V = 192, d = 64, i, k, rep;
    int bad = 0, nrep = 40;
    float *S = (float *)malloc(192 * 64 * sizeof(float)); /* >= 240 x 36 */
    for (rep = 0; rep < (size_t)nrep; rep++) {
        double noise = pow(10.0, -4.0 - 3.0 * t_rng_uniform(&r));
        size_t nc = 2 + (size_t)(t_rng_uniform(&r) * 6);
        for (i = 0; i < V; i++)
            for (k = 0; k < d; k++) {
                double base = k < nc ? (((i >> (k % 8)) & 1) ? 1.0 : -1.0) * (1.0 + 0.37 * (double)k / (double)nc) : 0.0;
                S[i * d + k] = (float)(base + noise * t_rng_normal(&r));
            }
        for (k = 0; k < d; k++) S[k] = 0.0f;
        S[nc] = (float)(1.05 * sqrt((double)nc) * 1.3);
        bad += !diam_agrees(S, V, d, d, 0);
    }
    CHECK_MSG(bad == 0, "clusters: %d of %d wrong", bad, nrep);
    {
        static const double noises[] = {1e-5, 1e-6, 1e-6};
        size_t q, Vc = 240, dc = 32;
        for (q = 0; q < 3; q++) {
            size_t ld = q == 2 ? dc + 4 : dc;
            for (i = 0; i < Vc; i++)
                for (k = 0; k < ld; k++) S[i * ld + k] = k < dc ? (float)(noises[q] * t_rng_normal(&r)) : NANF;
            for (i = 0; i < Vc; i++) {
                S[i * ld + 0] = (i % 2) ? 1.0f : -1.0f;
                S[i * ld + 1] = ((i / 2) % 2) ? 1.0f : -1.0f;
            }
            S[0] = 0.0f; S[1] = 0.0f; S[2] = 1.5f;
            CHECK_MSG(diam_agrees(S, Vc, dc, ld, 0), "corners noise %g ld %zu", noises[q], ld);
        }
    }
    free(S);
}

/* Pruning effectiveness, from the internal work counters: rows sharing a common component
 * 1e5 times their spread (the centring keeps the tile error bound small), heavy-tailed row
 * norms (the radius bound leaves a tile or two) and sphere-like rows (every tile is met, but
 * the error margin lets only a few pairs through to the double verification). */
static void test_diameter_pruning_work(void)
{
    t_rng r = {29};
    size_t V = 1024, d = 24, i, k, a, b, need = rn_row_diameter_workspace_size(V, d);
    float *S = (float *)malloc(V * d * sizeof(float));
    void *ws = malloc(need);
    double c[24], v[24], D;
    int kind;
    for (kind = 0; kind < 2; kind++) {
        rn__diam_stats st;
        for (k = 0; k < d; k++) c[k] = 1e5 * t_rng_normal(&r);
        for (i = 0; i < V; i++) {
            double sc = exp(1.5 * t_rng_normal(&r)), n = 0.0;
            for (k = 0; k < d; k++) { v[k] = t_rng_normal(&r); n += v[k] * v[k]; }
            if (kind == 1) sc = 1.0 / sqrt(n);
            for (k = 0; k < d; k++) S[i * d + k] = (float)(c[k] + sc * v[k]);
        }
        memset(&st, 0, sizeof st);
        st.screen = RN__SCREEN_F32;
        CHECK(rn__row_diameter_core(S, V, d, d, ws, need, &D, &a, &b, &st) == RN_OK);
        CHECK_NEAR(D, ref_diameter(S, V, d, d), 0, 1e-12);
        CHECK(st.screen == RN__SCREEN_F32 && st.q8tiles == 0);
        if (kind == 0) CHECK_MSG(st.tiles <= 8 && st.verified <= 64, "heavy tail: %zu tiles, %zu verified", st.tiles, st.verified);
        else CHECK_MSG(st.tiles == 136 && st.verified <= V, "sphere: %zu tiles, %zu verified", st.tiles, st.verified);
        /* the int8 screen: the same tiles met, every one of them int8, its wider bound letting a
         * few more pairs through (measured: Q8_WORK_HEAVY, Q8_WORK_SPHERE) */
        memset(&st, 0, sizeof st);
        st.screen = RN__SCREEN_Q8_ONLY;
        CHECK(rn__row_diameter_core(S, V, d, d, ws, need, &D, &a, &b, &st) == RN_OK);
        CHECK_NEAR(D, ref_diameter(S, V, d, d), 0, 1e-12);
        CHECK(st.screen == RN__SCREEN_Q8_ONLY && st.q8tiles == st.tiles);
        if (kind == 0) CHECK_MSG(st.tiles <= 8 && st.verified <= 64, "int8, heavy tail: %zu tiles, %zu verified", st.tiles, st.verified);
        else CHECK_MSG(st.tiles == 136 && st.verified <= 4 * V, "int8, sphere: %zu tiles, %zu verified", st.tiles, st.verified);
        fprintf(stderr, "  pruning work kind %d, int8: %zu tiles, %zu verified\n", kind, st.tiles, st.verified);
    }
    free(S); free(ws);
}

/* One pair (row a of A against row b of B, mu = 0) through the int8 screen as the scan runs it:
 * packing, the float32 bound, quantisation, the exact int32 product and the estimate. Returns
 * the estimate's error (true squared distance minus the estimate, scaled units) and the bound
 * rn__q8_bound in *Mq; qmul scales the bound (1: as built). */
static double q8_pair_error(const float *A, size_t ra, const float *B, size_t rb, size_t cols, size_t a, size_t b,
                            double qmul, double *Mq)
{
    rn__diam_ctx ctx;
    rn__diam_stats st;
    size_t wsb = rn__diam_side_bytes(ra, cols) + rn__diam_side_bytes(rb, cols) + rn__diam_tiles_bytes(1) + 4 * 64, k;
    char *ws = (char *)malloc(wsb), *cur = ws, *end = ws + wsb;
    double *mu = (double *)calloc(cols, sizeof(double)), R, sc, Rf, t2 = 0.0, err;
    float *C;
    size_t pa = 0, pb = 0;
    if (!ws || !mu) abort();
    memset(&ctx, 0, sizeof ctx);
    memset(&st, 0, sizeof st);
    rn__diam_carve_side(&ctx.a, A, ra, cols, cols, 0, &cur, end);
    rn__diam_carve_side(&ctx.b, B, rb, cols, cols, ra, &cur, end);
    rn__diam_radii(&ctx.a, cols, mu);
    rn__diam_radii(&ctx.b, cols, mu);
    ctx.a.nbact = (ra + RN__BS - 1) / RN__BS;
    ctx.b.nbact = (rb + RN__BS - 1) / RN__BS;
    R = ctx.a.ord[0].r > ctx.b.ord[0].r ? ctx.a.ord[0].r : ctx.b.ord[0].r;
    sc = ldexp(1.0, -rn__exp2_of(R));
    Rf = rn__diam_pack(&ctx.a, cols, mu, sc, R * sc);
    Rf = rn__diam_pack(&ctx.b, cols, mu, sc, Rf);
    rn__diam_bound(&ctx, cols, sc, Rf);
    st.screen = RN__SCREEN_Q8_ONLY;
    st.qmul = qmul;
    rn__diam_screen(&ctx, &st, cur, end);
    CHECK(ctx.screen == RN__SCREEN_Q8_ONLY);
    while (ctx.a.ord[pa].idx != a) pa++; /* positions in radius order */
    while (ctx.b.ord[pb].idx != b) pb++;
    *Mq = rn__q8_bound(&ctx, pa / RN__BS, pb / RN__BS);
    C = (float *)rn__carve(&cur, end, RN__DIAM_TILE_FLOATS * sizeof(float));
    if (!C) abort();
    rn__q8_tile(ctx.a.Q + (pa / RN__BS) * RN__Q8_PANEL(ctx.kq), ctx.b.Q + (pb / RN__BS) * RN__Q8_PANEL(ctx.kq), ctx.kq,
                ctx.a.qsum + (pa / RN__BS) * RN__BS, (int32_t *)(void *)C);
    {
        double *e = (double *)(void *)(C + RN__TILE_FLOATS);
        size_t q0 = (pb / RN__BS) * RN__BS, qm = (rb - q0 < RN__BS ? rb - q0 : RN__BS);
        rn__q8_erow(ctx.a.sqn[pa], 2.0 * ctx.a.qs[pa], ctx.b.sqn + q0, ctx.b.qs + q0,
                    (int32_t *)(void *)C + (pa % RN__BS) * RN__BS, qm, e);
        for (k = 0; k < cols; k++) {
            double d = ((double)A[a * cols + k] - (double)B[b * cols + k]) * sc;
            t2 += d * d;
        }
        err = t2 - e[pb % RN__BS];
    }
    free(ws);
    free(mu);
    return err;
}

/* The int8 screen's bound (rn__q8_bound). Sharp: row j on the int8 grid (every |q| = QMAX, no
 * rounding error), row i a half step less 1/64 off the grid towards j everywhere but its largest
 * entry, so i's rounding error is parallel to j and the estimate of |y_i - y_j|^2 is low by
 * 2 eps_i |y_j| (Cauchy-Schwarz with equality): it must stay within the bound and pass half of
 * it (a halved bound fails here; shown with qmul = 1/2). Sound: every estimate of random rows
 * of several kinds (Gaussian, heavy-tailed entries, sparse, a few huge entries, near-equal rows)
 * is within its bound. For cols a multiple of 4 or not, at scales 1, 2^-110 and 2^90. */
static void test_diameter_q8_bound(void)
{
    static const size_t widths[3] = {64, 67, 768};
    static const int exps[3] = {0, -110, 90};
    t_rng r = {31};
    size_t wi, si, k, t;
    double worst_sound = 0.0, least_sharp = 1e300;
    for (wi = 0; wi < 3; wi++)
        for (si = 0; si < 3; si++) {
            size_t cols = widths[wi];
            float *A = (float *)malloc(cols * sizeof(float)), *B = (float *)malloc(cols * sizeof(float));
            double s = ldexp(1.0, exps[si] - 7), Mq = 0.0, Mh = 0.0, err, errh, qm = (double)RN__Q8_QMAX;
            for (k = 0; k < cols; k++) {
                double sg = t_rng_uniform(&r) < 0.5 ? -1.0 : 1.0;
                B[k] = (float)(qm * s * sg);
                A[k] = (float)(-(k == 0 ? qm : qm - 0.515625) * s * sg);
            }
            err = q8_pair_error(A, 1, B, 1, cols, 0, 0, 1.0, &Mq);
            errh = q8_pair_error(A, 1, B, 1, cols, 0, 0, 0.5, &Mh);
            CHECK_MSG(fabs(err) <= Mq, "cols %zu 2^%d: error %.6g past the bound %.6g", cols, exps[si], err, Mq);
            CHECK_MSG(err > 0.5 * Mq && errh == err && fabs(errh) > Mh,
                      "cols %zu 2^%d: error %.6g, bound %.6g: not past half of it", cols, exps[si], err, Mq);
            least_sharp = err / Mq < least_sharp ? err / Mq : least_sharp;
            free(A);
            free(B);
        }
    for (t = 0; t < 300; t++) {
        size_t cols = 1 + (size_t)(t_rng_uniform(&r) * 150), ra = 1 + (size_t)(t_rng_uniform(&r) * 70);
        size_t rb = 1 + (size_t)(t_rng_uniform(&r) * 70), a, b;
        int kind = (int)(t % 5);
        float *A = (float *)malloc(ra * cols * sizeof(float)), *B = (float *)malloc(rb * cols * sizeof(float));
        double Mq = 0.0, err;
        for (k = 0; k < (ra + rb) * cols; k++) {
            float *x = k < ra * cols ? A + k : B + (k - ra * cols);
            double v = t_rng_normal(&r);
            if (kind == 1) v = v * v * v * v * v;                               /* heavy-tailed entries */
            if (kind == 2 && t_rng_uniform(&r) < 0.9) v = 0.0;                  /* sparse */
            if (kind == 3 && t_rng_uniform(&r) < 0.02) v *= 1e4;                /* a few huge entries */
            if (kind == 4) v = 1.0 + 1e-3 * v;                                  /* near-equal rows */
            *x = (float)v;
        }
        a = (size_t)(t_rng_uniform(&r) * (double)ra);
        b = (size_t)(t_rng_uniform(&r) * (double)rb);
        a = a < ra ? a : ra - 1;
        b = b < rb ? b : rb - 1;
        err = q8_pair_error(A, ra, B, rb, cols, a, b, 1.0, &Mq);
        CHECK_MSG(fabs(err) <= Mq, "random kind %d cols %zu: error %.6g past the bound %.6g", kind, cols, err, Mq);
        worst_sound = fabs(err) / Mq > worst_sound ? fabs(err) / Mq : worst_sound;
        free(A);
        free(B);
    }
    fprintf(stderr, "  int8 bound: adversarial pairs reach %.3f of it (least), random rows %.3f (most)\n", least_sharp,
            worst_sound);
}

/* The whole scan at the int8 bound's margin. Rows (mean exactly 0, every value exact in float):
 *  - i, j on columns 0..63: j = 114 2^-10 sigma (on the int8 grid), i = -(QMAX - 0.515625) g sigma
 *    but for its first entry -QMAX g sigma_0, so i's rounding error is parallel to j (the
 *    construction of test_diameter_q8_bound) and the int8 estimate of |i - j|^2 is low by about
 *    0.94 of its bound;
 *  - a decoy pair k = 0.125 tau, l = -b tau on columns 64..127, |k - l|^2 = |i - j|^2 - g with
 *    g = 0.0015, a fifth of the bound: k has the largest radius, so the farthest-point sweeps
 *    find (k, l) and the scan starts from LB = |k - l|;
 *  - 80 fillers +-0.921875 e_m (radii between i's and j's: j's block is not i's, and its rows
 *    quantise exactly; their pairs are nearer than k and l) and two small rows that make every
 *    column sum 0.
 * The int8 screen must verify (i, j) and return it (as the float32 screen does); with its bound
 * halved (qmul) the pair's estimate falls below the threshold and the scan returns (k, l): the
 * test fails for a halved bound, as it should. */
static void test_diameter_q8_margin(void)
{
    size_t V = 86, d = 168, i, k, need = rn_row_diameter_workspace_size(86, 168), a, b;
    float *S = (float *)calloc(V * d, sizeof(float));
    void *ws = malloc(need);
    t_rng r = {34};
    double tij2 = 0.0, tkl2, g, bl, D;
    int pass;
    /* rows: 0 k, 1 l, 2 i, 3 j, 4 c = -(i + j), 5 c2 = -(k + l), 6.. fillers */
    /* i's grid: 2^-10 for 127 levels, 2^-9 for the AVX2 kernel's 63 (radius about 0.98 either way) */
    double qm = (double)RN__Q8_QMAX, gi = RN__Q8_QMAX > 100 ? ldexp(1.0, -10) : ldexp(1.0, -9);
    for (k = 0; k < 64; k++) {
        double sg = t_rng_uniform(&r) < 0.5 ? -1.0 : 1.0;
        S[2 * d + k] = (float)(-(k == 0 ? qm : qm - 0.515625) * gi * sg);
        S[3 * d + k] = (float)(114.0 * ldexp(sg, -10));
        S[4 * d + k] = -(S[2 * d + k] + S[3 * d + k]); /* exact: a multiple of 2^-16 */
        tij2 += ((double)S[2 * d + k] - (double)S[3 * d + k]) * ((double)S[2 * d + k] - (double)S[3 * d + k]);
    }
    g = 0.0015;
    bl = (double)(float)(sqrt((tij2 - g) / 64.0) - 0.125);
    tkl2 = 64.0 * (0.125 + bl) * (0.125 + bl);
    CHECK_MSG(tij2 - tkl2 > 0.001 && tij2 - tkl2 < 0.002, "decoy gap %.6g", tij2 - tkl2);
    for (k = 64; k < 128; k++) {
        double sg = t_rng_uniform(&r) < 0.5 ? -1.0 : 1.0;
        S[0 * d + k] = (float)(0.125 * sg);
        S[1 * d + k] = (float)(-bl * sg);
        S[5 * d + k] = -(S[0 * d + k] + S[1 * d + k]); /* exact (Sterbenz) */
    }
    for (i = 6; i < V; i++) S[i * d + 128 + (i - 6) / 2] = (i % 2) ? 0.921875f : -0.921875f;
    for (pass = 0; pass < 3; pass++) {
        rn__diam_stats st;
        memset(&st, 0, sizeof st);
        st.screen = pass == 0 ? RN__SCREEN_F32 : RN__SCREEN_Q8_ONLY;
        st.qmul = pass == 2 ? 0.5 : 1.0;
        CHECK(rn__row_diameter_core(S, V, d, d, ws, need, &D, &a, &b, &st) == RN_OK);
        if (pass < 2)
            CHECK_MSG(a == 2 && b == 3 && fabs(D * D - tij2) <= 1e-14 * tij2, "screen %d: pair (%zu, %zu) D^2 %.17g, want (2, 3) %.17g",
                      st.screen, a, b, D * D, tij2);
        else /* the halved bound misses the farthest pair: this input is at the margin */
            CHECK_MSG(a == 0 && b == 1, "halved int8 bound: pair (%zu, %zu), expected the decoy (0, 1)", a, b);
    }
    CHECK(diam_agrees(S, V, d, d, 1));
    free(S);
    free(ws);
}

/* The int8 tile product of the build (VNNI, sdot or scalar) against the scalar kernel, bit for
 * bit: random quads and all-extreme ones (every q = -127 or 127: the largest sums, and for VNNI
 * the largest unsigned operand), kq across the k-chunk edge (RN__QKC = 128) and the widest rows
 * (RN__Q8_MAXCOLS). And the quantisers (rn__quant16, vector where the VNNI kernel is, and the
 * scalar reference rn__quant16_scalar) against q = rint(x inv) written here: the same bytes, sums
 * and sums of squares, and against each other. */
static void test_q8_kernels(void)
{
    static const size_t kqs[5] = {1, 5, 128, 129, 300};
    const int QM = RN__Q8_QMAX; /* the build's range of quantised values */
    t_rng r = {33};
    size_t t, i, l, rr, bad = 0;
    int32_t *C = (int32_t *)malloc(64 * 64 * sizeof(int32_t)), *C0 = (int32_t *)malloc(64 * 64 * sizeof(int32_t));
    int32_t qsa[64];
    /* 5 random, 5 extreme, and with the VNNI kernel (fast enough for it; elsewhere the scalar
     * kernel under emulation is not) the widest rows, all quads equal: the largest sum */
#if defined(RN__Q8_FAST) && defined(RN__AVX512)
    size_t nt = 11;
#else
    size_t nt = 10;
#endif
    for (t = 0; t < nt; t++) {
        size_t kq = t < 10 ? kqs[t % 5] : RN__Q8_MAXCOLS / 4;
        int extreme = t >= 5;
        signed char *Qa = (signed char *)malloc(kq * 256), *Qb = (signed char *)malloc(kq * 256);
        for (i = 0; i < kq * 256; i++) {
            int va = t == 10 ? QM : extreme ? (t_rng_uniform(&r) < 0.5 ? -QM : QM) : (int)(t_rng_uniform(&r) * (2 * QM + 1)) - QM;
            int vb = extreme ? (t == 10 ? va : -va) : (int)(t_rng_uniform(&r) * (2 * QM + 1)) - QM;
            Qa[i] = (signed char)(va < -QM ? -QM : va > QM ? QM : va);
            Qb[i] = (signed char)(vb < -QM ? -QM : vb > QM ? QM : vb);
        }
        for (rr = 0; rr < 64; rr++) {
            qsa[rr] = 0;
            for (l = 0; l < 4 * kq; l++) qsa[rr] += Qa[(l >> 2) * 256 + 4 * rr + (l & 3)];
        }
        rn__q8_tile(Qa, Qb, kq, qsa, C);
        if (t < 10) rn__q8_tile_scalar(Qa, Qb, kq, C0);
        else for (i = 0; i < 64 * 64; i++) C0[i] = QM * QM * (int32_t)(4 * kq);
        if (memcmp(C, C0, 64 * 64 * sizeof(int32_t)) != 0) {
            bad++;
            fprintf(stderr, "  int8 tile kq %zu extreme %d: C[0] %ld vs %ld\n", kq, extreme, (long)C[0], (long)C0[0]);
        }
        if (t >= 5) /* the largest sums the screen forms, +-QMAX^2 k: exact */
            CHECK(C[0] == (t == 10 ? 1 : -1) * QM * QM * (int32_t)(4 * kq));
        free(Qa);
        free(Qb);
    }
    CHECK_MSG(bad == 0, "%zu int8 tiles differ from the scalar kernel", bad);
    { /* the quantiser */
        size_t cols = 203, kq = (cols + 3) / 4;
        float *P = (float *)malloc(cols * RN__BS * sizeof(float));
        signed char *Q = (signed char *)malloc(kq * 256), *Q0 = (signed char *)malloc(kq * 256);
        double inv[16], sc[16], err[16], qq[16], err0[16], qq0[16];
        int32_t qs[16], qs0[16];
        int qbad = 0, v;
        for (i = 0; i < cols * RN__BS; i++) P[i] = (float)(t_rng_normal(&r) * (i % 7 == 0 ? 30.0 : 1.0));
        for (rr = 0; rr < 16; rr++) {
            float mx = 0.0f;
            for (l = 0; l < cols; l++) mx = fabsf(P[l * RN__BS + 16 + rr]) > mx ? fabsf(P[l * RN__BS + 16 + rr]) : mx;
            if (rr == 5) { mx = 0.0f; for (l = 0; l < cols; l++) P[l * RN__BS + 16 + rr] = 0.0f; } /* a zero row */
            sc[rr] = (double)mx / (double)QM;
            inv[rr] = mx > 0.0f ? (double)QM / (double)mx : 0.0;
        }
        /* the build's quantiser, then the library's scalar reference (every build compiles it),
         * each against q = rint(x inv) from the definition, and against each other bit for bit */
        for (v = 0; v < 2; v++) {
            memset(Q, 0x55, kq * 256);
            if (v == 0) rn__quant16(P + 16, cols, inv, sc, Q + 4 * 16, err, qq, qs);
            else rn__quant16_scalar(P + 16, cols, inv, sc, Q + 4 * 16, err, qq, qs);
            for (rr = 0; rr < 16; rr++) {
                double e2 = 0.0, n2 = 0.0;
                long sum = 0;
                for (l = 0; l < 4 * kq; l++) {
                    double x = l < cols ? (double)P[l * RN__BS + 16 + rr] : 0.0, q = rint(x * inv[rr]);
                    signed char got = Q[(l >> 2) * 256 + 4 * (16 + rr) + (l & 3)];
                    if (got != (signed char)(int)q || fabs(q) > (double)QM) qbad++;
                    e2 += (x - sc[rr] * q) * (x - sc[rr] * q);
                    n2 += q * q;
                    sum += (long)q;
                }
                if (qq[rr] != n2 || (long)qs[rr] != sum || !(fabs(err[rr] - e2) <= 1e-12 * e2 + 1e-300)) qbad++;
            }
            if (v == 0) {
                memcpy(Q0, Q, kq * 256);
                memcpy(err0, err, sizeof err);
                memcpy(qq0, qq, sizeof qq);
                memcpy(qs0, qs, sizeof qs);
            } else if (memcmp(Q0, Q, kq * 256) != 0 || memcmp(qq0, qq, sizeof qq) != 0 || memcmp(qs0, qs, sizeof qs) != 0) {
                qbad++;
            } else {
                for (rr = 0; rr < 16; rr++) qbad += !(fabs(err[rr] - err0[rr]) <= 1e-12 * err0[rr] + 1e-300);
            }
        }
        CHECK_MSG(qbad == 0, "%d quantised values or sums differ", qbad);
        free(P);
        free(Q);
        free(Q0);
    }
#if defined(RN__Q8_FAST) && defined(RN__AVX512)
    fprintf(stderr, "  int8 tile kernel: AVX512-VNNI\n");
#elif defined(RN__Q8_FAST) && defined(RN__AVX2)
    fprintf(stderr, "  int8 tile kernel: AVX2 vpmaddubsw, 7-bit values\n");
#elif defined(RN__Q8_FAST)
    fprintf(stderr, "  int8 tile kernel: sdot\n");
#else
    fprintf(stderr, "  int8 tile kernel: scalar (no faster int8 product in this build)\n");
#endif
    free(C);
    free(C0);
}

/* Head steps at a size with several blocks (V = 400, not a multiple of 64; d = 67, not a
 * multiple of 4): RowNorm-like rows (centred, equal norms), AdamW-like (near-sign entries, a few
 * norms), gradient-like (Zipf norms), at scales 1, 1e-30 and 1e30: every screen returns the
 * float64 brute force's D and pair (diam_agrees). */
static void test_diameter_screens_heads(void)
{
    static const double scales[3] = {1.0, 1e-30, 1e30};
    t_rng r = {32};
    size_t V = 400, d = 67, i, k, kind, si;
    float *S = (float *)malloc(V * d * sizeof(float));
    double *mean = (double *)calloc(d, sizeof(double));
    for (kind = 0; kind < 3; kind++)
        for (si = 0; si < 3; si++) {
            for (k = 0; k < d; k++) mean[k] = 0.0;
            for (i = 0; i < V; i++) {
                double n2 = 0.0, v[67], sc = kind == 2 ? 1.0 / (double)(1 + (i * 7919) % V) : 1.0;
                for (k = 0; k < d; k++) {
                    v[k] = t_rng_normal(&r);
                    if (kind == 1) v[k] = (v[k] > 0 ? 1.0 : -1.0) * (1.0 + 0.05 * t_rng_uniform(&r)) * (i % 3 + 1);
                    n2 += v[k] * v[k];
                }
                for (k = 0; k < d; k++) {
                    double x = kind == 0 ? v[k] / sqrt(n2) : v[k] * sc;
                    S[i * d + k] = (float)(x * scales[si]);
                    mean[k] += (double)S[i * d + k] / (double)V;
                }
            }
            if (kind == 0)
                for (i = 0; i < V; i++)
                    for (k = 0; k < d; k++) S[i * d + k] = (float)((double)S[i * d + k] - mean[k]);
            CHECK_MSG(diam_agrees(S, V, d, d, 1), "kind %zu scale %g", kind, scales[si]);
        }
    free(S);
    free(mean);
}

/* ---- 1.3 Hilbert RMS -------------------------------------------------------------------------- */

static double ref_rms(const float *S, size_t V, size_t d, size_t lds, const float *H, size_t N, size_t ldh)
{
    double acc = 0.0;
    size_t l, i, k;
    for (l = 0; l < N; l++) {
        double mx = -1e300, mn = 1e300;
        for (i = 0; i < V; i++) {
            double s = 0.0;
            for (k = 0; k < d; k++) s += (double)S[i * lds + k] * H[l * ldh + k];
            mx = s > mx ? s : mx; mn = s < mn ? s : mn;
        }
        acc += (mx - mn) * (mx - mn);
    }
    return sqrt(acc / (double)N);
}

static void test_hilbert_rms(void)
{
    t_rng r = {6};
    size_t V = 150, d = 45, N = 300, lds = 47, ldh = 50, i, k, l;
    float *S = mat_new(&r, V, d, lds, 1e-2), *H = mat_new(&r, N, d, ldh, 1.0);
    double rms = -1, want = ref_rms(S, V, d, lds, H, N, ldh);
    double *mx = dmat(N), *mn = dmat(N), *mx2 = dmat(N), *mn2 = dmat(N), rms2 = -1;
    size_t need = rn_hilbert_rms_workspace_size(d, N);
    void *ws = malloc(need);
    CHECK(rn_hilbert_rms(S, V, d, lds, H, N, ldh, &rms) == RN_OK);
    CHECK_NEAR(rms, want, 0, 1e-5);
    /* a vocabulary split in two shards, combined by max / min */
    CHECK(rn_hilbert_rms_partial_ws(S, 61, d, lds, H, N, ldh, ws, need, mx, mn) == RN_OK);
    CHECK(rn_hilbert_rms_partial_ws(S + 61 * lds, V - 61, d, lds, H, N, ldh, ws, need, mx2, mn2) == RN_OK);
    for (l = 0; l < N; l++) { mx[l] = mx2[l] > mx[l] ? mx2[l] : mx[l]; mn[l] = mn2[l] < mn[l] ? mn2[l] : mn[l]; }
    CHECK(rn_hilbert_rms_from_range(mx, mn, N, &rms2) == RN_OK);
    CHECK_NEAR(rms2, want, 0, 1e-5);
    /* common shift in S: the osc ignores it, and so must the precision */
    {
        float c[45];
        for (k = 0; k < d; k++) c[k] = (float)(100.0 * t_rng_normal(&r));
        for (i = 0; i < V; i++) for (k = 0; k < d; k++) S[i * lds + k] += c[k];
        want = ref_rms(S, V, d, lds, H, N, ldh);
        CHECK(rn_hilbert_rms(S, V, d, lds, H, N, ldh, &rms) == RN_OK);
        CHECK_NEAR(rms, want, 0, 1e-4);
    }
    /* one row: every osc is 0 */
    CHECK(rn_hilbert_rms(S, 1, d, lds, H, N, ldh, &rms) == RN_OK && rms == 0.0);
    /* errors, output untouched */
    rms = 7.0;
    CHECK(rn_hilbert_rms(NULL, V, d, lds, H, N, ldh, &rms) == RN_ERR_NULL);
    CHECK(rn_hilbert_rms(S, V, d, lds, H, 0, ldh, &rms) == RN_ERR_SIZE);
    CHECK(rn_hilbert_rms(S, V, d, d - 1, H, N, ldh, &rms) == RN_ERR_SIZE);
    CHECK(rn_hilbert_rms(S, V, d, lds, H, N, d - 1, &rms) == RN_ERR_SIZE);
    { /* the one-thread size (one thread area) is the least it takes: fewer threads, same bits */
        size_t one;
        double *mx1 = (double *)malloc(N * sizeof(double)), *mn1 = (double *)malloc(N * sizeof(double));
        T_ONE_THREAD(rn_hilbert_rms_workspace_size(d, N), one);
        CHECK(one > 0 && one <= need && mx1 && mn1);
        CHECK(rn_hilbert_rms_partial_ws(S, V, d, lds, H, N, ldh, ws, one, mx1, mn1) == RN_OK);
        CHECK(rn_hilbert_rms_partial_ws(S, V, d, lds, H, N, ldh, ws, need, mx, mn) == RN_OK);
        CHECK(memcmp(mx1, mx, N * sizeof(double)) == 0 && memcmp(mn1, mn, N * sizeof(double)) == 0);
        CHECK(rn_hilbert_rms_partial_ws(S, V, d, lds, H, N, ldh, ws, one - 1, mx, mn) == RN_ERR_SIZE);
        free(mx1);
        free(mn1);
    }
    CHECK(rn_hilbert_rms_partial_ws(S, V, d, lds, H, N, ldh, ws, need, mx, mx) == RN_ERR_ALIAS);
    H[7 * ldh + 3] = NANF;
    CHECK(rn_hilbert_rms(S, V, d, lds, H, N, ldh, &rms) == RN_ERR_NONFINITE);
    CHECK(rms == 7.0);
    mx[0] = 0.0; mn[0] = 1.0;
    CHECK(rn_hilbert_rms_from_range(mx, mn, N, &rms) == RN_ERR_DOMAIN);
    CHECK(rms == 7.0);
    free(S); free(H); free(mx); free(mn); free(mx2); free(mn2); free(ws);
}

/* Magnitudes whose float32 products overflow (|S|, |h| ~ 1e19) or underflow (1e-20, 1e-22),
 * and mixed ones: the panels are scaled by powers of two, undone in double. */
static void test_hilbert_rms_extreme_scales(void)
{
    static const double ss[] = {1e19, 1e-20, 1e-22, 1e19, 1e-30}, hs[] = {1e19, 1e-20, 1e-22, 1e-22, 1e25};
    t_rng r = {25};
    size_t V = 100, d = 16, N = 70, q, i, l, need = rn_hilbert_rms_workspace_size(d, N);
    float *S = (float *)malloc(V * d * sizeof(float)), *H = (float *)malloc(N * d * sizeof(float));
    double *mx = dmat(N), *mn = dmat(N);
    void *ws = malloc(need);
    for (q = 0; q < sizeof ss / sizeof ss[0]; q++) {
        double rms = -1.0, want, err = 0.0;
        rn_status st;
        for (i = 0; i < V * d; i++) S[i] = (float)(ss[q] * t_rng_normal(&r));
        for (i = 0; i < N * d; i++) H[i] = (float)(hs[q] * (t_rng_normal(&r) + (i % d == 3 ? 5.0 : 0.0)));
        for (i = 0; i < d; i++) H[5 * d + i] = (float)(H[5 * d + i] * 1e-6); /* a much shorter token */
        want = ref_rms(S, V, d, d, H, N, d);
        st = rn_hilbert_rms(S, V, d, d, H, N, d, &rms);
        CHECK_MSG(st == RN_OK, "|S| %g |h| %g: status %d", ss[q], hs[q], (int)st);
        CHECK_MSG(fabs(rms - want) <= 1e-5 * want, "|S| %g |h| %g: rms %.9g want %.9g", ss[q], hs[q], rms, want);
        /* and each token's range (the shorter token included) */
        CHECK(rn_hilbert_rms_partial_ws(S, V, d, d, H, N, d, ws, need, mx, mn) == RN_OK);
        for (l = 0; l < N; l++) {
            double rmx = -HUGE_VAL, rmn = HUGE_VAL, e;
            size_t k;
            for (i = 0; i < V; i++) {
                double t = 0.0;
                for (k = 0; k < d; k++) t += (double)S[i * d + k] * H[l * d + k];
                rmx = t > rmx ? t : rmx; rmn = t < rmn ? t : rmn;
            }
            e = fabs((mx[l] - mn[l]) - (rmx - rmn)) / (rmx - rmn);
            err = e > err ? e : err;
        }
        CHECK_MSG(err <= 1e-5, "|S| %g |h| %g: worst token range error %g", ss[q], hs[q], err);
    }
    free(S); free(H); free(mx); free(mn); free(ws);
}

/* ---- 1.4 Projected RowNorm ---------------------------------------------------------------------- */

static void test_projected_rownorm(void)
{
    t_rng r = {7};
    size_t V = 60, d = 21, lda = 23, ldo = 25, i, k;
    float *A = mat_new(&r, V, d, lda, 1.0), *out = mat_new(&r, V, d, ldo, 0.0), *in = NULL;
    double *Ad = dmat(V * d), *ref = dmat(V * d), *Gd = dmat(V * d), *P = dmat(V * d);
    double colmax = 0.0, err = 0.0, D, dec = 0.0, want = 0.0, *mu = dmat(d);
    for (i = 0; i < V; i++) for (k = 0; k < d; k++) { A[i * lda + k] += (float)(k * 0.3); Ad[i * d + k] = A[i * lda + k]; }
    CHECK(rn_projected_rownorm(A, V, d, lda, 0.0f, out, ldo) == RN_OK);
    t_ref_prn(Ad, V, d, 0.0, ref);
    for (i = 0; i < V; i++) for (k = 0; k < d; k++) {
        double e = fabs(out[i * ldo + k] - ref[i * d + k]);
        err = e > err ? e : err;
    }
    CHECK_MSG(err <= 1e-6, "max err %g", err);
    for (k = 0; k < d; k++) { /* 1^T PRN = 0 */
        double s = 0.0;
        for (i = 0; i < V; i++) s += out[i * ldo + k];
        colmax = fabs(s) > colmax ? fabs(s) : colmax;
    }
    CHECK_MSG(colmax <= 1e-5, "column sum %g", colmax);
    for (i = 0; i < V; i++) { /* padding untouched */
        unsigned int u; memcpy(&u, out + i * ldo + d, 4);
        CHECK(out[i * ldo + d] != out[i * ldo + d]);
    }
    /* D(S) <= 2 gamma for S = -gamma PRN (here gamma = 1), rows of RN have norm <= 1 */
    D = ref_diameter(out, V, d, ldo);
    CHECK(D <= 2.0 * (1 + 1e-6));
    /* first-order decrease gamma * sum ||g_i|| when 1^T G = 0, eps = 0 */
    for (k = 0; k < d; k++) { for (i = 0; i < V; i++) mu[k] += Ad[i * d + k] / (double)V; }
    for (i = 0; i < V; i++) {
        double n = 0.0;
        for (k = 0; k < d; k++) { Gd[i * d + k] = Ad[i * d + k] - mu[k]; n += Gd[i * d + k] * Gd[i * d + k]; }
        want += sqrt(n);
    }
    t_ref_prn(Gd, V, d, 0.0, P);
    for (i = 0; i < V * d; i++) dec += Gd[i] * P[i];
    CHECK_NEAR(dec, want, 0, 1e-12);
    /* and for the float routine on A (not centred: PRN centres it) */
    dec = 0.0;
    for (i = 0; i < V; i++) for (k = 0; k < d; k++) dec += Gd[i * d + k] * out[i * ldo + k];
    CHECK_NEAR(dec, want, 0, 1e-6);
    /* in place (out == A, same ld) gives the same bytes */
    in = (float *)malloc(V * lda * sizeof(float));
    memcpy(in, A, V * lda * sizeof(float));
    CHECK(rn_projected_rownorm(in, V, d, lda, 0.0f, in, lda) == RN_OK);
    {
        int same = 1;
        for (i = 0; i < V; i++) for (k = 0; k < d; k++) same &= in[i * lda + k] == out[i * ldo + k];
        CHECK(same);
    }
    /* eps > 0 matches the reference too */
    CHECK(rn_projected_rownorm(A, V, d, lda, 0.5f, out, ldo) == RN_OK);
    t_ref_prn(Ad, V, d, 0.5, ref);
    err = 0.0;
    for (i = 0; i < V; i++) for (k = 0; k < d; k++) { double e = fabs(out[i * ldo + k] - ref[i * d + k]); err = e > err ? e : err; }
    CHECK(err <= 1e-6);
    /* zero input gives zero output (no 0/0) */
    memset(in, 0, V * lda * sizeof(float));
    CHECK(rn_projected_rownorm(in, V, d, lda, 0.0f, out, ldo) == RN_OK && out[0] == 0.0f && out[5 * ldo + 3] == 0.0f);
    free(A); free(out); free(in); free(Ad); free(ref); free(Gd); free(P); free(mu);
}

static void test_projected_rownorm_errors(void)
{
    t_rng r = {8};
    size_t V = 10, d = 6;
    float *A = mat_new(&r, V, d, d, 1.0), *out = mat_new(&r, V, d, d, 1.0), *copy = (float *)malloc(V * d * 4);
    char ws[16];
    memcpy(copy, out, V * d * 4);
    CHECK(rn_projected_rownorm(NULL, V, d, d, 0.0f, out, d) == RN_ERR_NULL);
    CHECK(rn_projected_rownorm(A, V, d, d, 0.0f, NULL, d) == RN_ERR_NULL);
    CHECK(rn_projected_rownorm(A, 0, d, d, 0.0f, out, d) == RN_ERR_SIZE);
    CHECK(rn_projected_rownorm(A, V, d, d, 0.0f, out, d - 1) == RN_ERR_SIZE);
    CHECK(rn_projected_rownorm(A, V, d, d, -1.0f, out, d) == RN_ERR_DOMAIN);
    CHECK(rn_projected_rownorm(A, V, d, d, NANF, out, d) == RN_ERR_DOMAIN);
    CHECK(rn_projected_rownorm(A, V, d, d, 0.0f, A + 1, d) == RN_ERR_ALIAS);
    CHECK(rn_projected_rownorm(A, V - 1, d, d, 0.0f, A, d - 1 + 1 + 0) == RN_OK); /* same ld in place */
    CHECK(rn_projected_rownorm(A, V, d, d, 0.0f, out, d) == RN_OK);
    memcpy(copy, out, V * d * 4);
    CHECK(rn_projected_rownorm_ws(A, V, d, d, 0.0f, out, d, ws, sizeof ws) == RN_ERR_SIZE);
    A[3] = (float)HUGE_VAL;
    CHECK(rn_projected_rownorm(A, V, d, d, 0.0f, out, d) == RN_ERR_NONFINITE);
    CHECK(memcmp(copy, out, V * d * 4) == 0);
    free(A); free(out); free(copy);
}

/* ---- 1.5 RowNorm optimizer ------------------------------------------------------------------------ */

static void test_rownorm_step_t1(void)
{
    t_rng r = {9};
    size_t V = 300, d = 19, i, k;
    float *W = mat_new(&r, V, d, d, 1.0), *G = mat_new(&r, V, d, d, 1.0), *So = mat_new(&r, V, d, d, 0.0);
    double *Gd = dmat(V * d), *P = dmat(V * d), err = 0.0;
    rn_rownorm_state st;
    rn_rownorm_config cfg = rn_rownorm_default();
    cfg.lr = 0.01;
    for (i = 0; i < V * d; i++) { G[i] += 0.2f; Gd[i] = G[i]; }
    CHECK(rn_rownorm_init(&st, V, d) == RN_OK);
    CHECK(rn_rownorm_step(&st, &cfg, W, d, G, d, So, d) == RN_OK);
    CHECK(st.t == 1);
    t_ref_prn(Gd, V, d, 1e-8, P); /* at t = 1, B-hat = G */
    for (i = 0; i < V; i++) for (k = 0; k < d; k++) {
        double e = fabs((double)So[i * d + k] + cfg.lr * P[i * d + k]);
        err = e > err ? e : err;
    }
    CHECK_MSG(err <= 1e-8, "err %g", err);
    /* the diameter budget: D(S) <= 2 lr, 1^T S = 0 */
    CHECK(ref_diameter(So, V, d, d) <= 2 * cfg.lr * (1 + 1e-6));
    {
        double s = 0.0;
        for (i = 0; i < V; i++) s += So[i * d + 3];
        CHECK(fabs(s) < 1e-6);
    }
    { /* without the outer P every row of S is -lr RN(P B-hat)_i: norm <= lr (= lr up to eps) */
        double worst = 0.0, least = 1e300;
        cfg.flags = RN_NO_CENTER_OUT;
        CHECK(rn_rownorm_step(&st, &cfg, W, d, G, d, So, d) == RN_OK);
        for (i = 0; i < V; i++) {
            double n2 = 0.0;
            for (k = 0; k < d; k++) n2 += (double)So[i * d + k] * So[i * d + k];
            worst = sqrt(n2) > worst ? sqrt(n2) : worst;
            least = sqrt(n2) < least ? sqrt(n2) : least;
        }
        CHECK(worst <= cfg.lr * (1 + 1e-6) && least >= cfg.lr * (1 - 1e-5));
    }
    rn_rownorm_free(&st);
    CHECK(st.B == NULL);
    free(W); free(G); free(So); free(Gd); free(P);
}

/* Tiny and huge rows (fuzz findings): one step from B = 0, W = 0.5, wd = 0, must leave W and S
 * finite with S = -lr P RN_{eps bc}(P B) of the stored B in double (rows of RN with norm <= 1;
 * a zero row gives zero whatever eps, eps = 0 included). beta = 0 with the inner P, so that
 * its centre (tracked from G) is exactly the mean of the stored B. Returns the failures. */
static int tiny_case(const float *G, size_t V, size_t d, unsigned flags, double beta, double eps)
{
    rn_rownorm_state st;
    rn_rownorm_config cfg = rn_rownorm_default();
    float *W = (float *)malloc(V * d * sizeof(float)), *S = (float *)malloc(V * d * sizeof(float));
    double *R = dmat(V * d), *mu = dmat(d), *nu = dmat(d), bc, es = 0.0, ew = 0.0;
    int cin = !(flags & (RN_NO_CENTER_IN | RN_REFERENCE_COMPAT)), cout = !(flags & (RN_NO_CENTER_OUT | RN_REFERENCE_COMPAT));
    int bad = 0, fails = 0;
    size_t i, k;
    cfg.flags = flags; cfg.beta = beta; cfg.eps = eps;
    for (i = 0; i < V * d; i++) W[i] = 0.5f;
    if (rn_rownorm_init(&st, V, d) != RN_OK) return 1;
    if (rn_rownorm_step(&st, &cfg, W, d, G, d, S, d) != RN_OK) { rn_rownorm_free(&st); return 1; }
    bc = ((flags & RN_NO_BIAS_CORRECTION) || beta == 0.0) ? 1.0 : 1.0 - beta;
    if (cin) { /* summed, then divided (as the step does: equal rows centre to exactly 0) */
        for (i = 0; i < V; i++) for (k = 0; k < d; k++) mu[k] += (double)st.B[i * d + k];
        for (k = 0; k < d; k++) mu[k] /= (double)V;
    }
    for (i = 0; i < V; i++) {
        double n = 0.0, inv;
        for (k = 0; k < d; k++) { double x = (double)st.B[i * d + k] - mu[k]; n += x * x; }
        inv = n > 0.0 ? 1.0 / (sqrt(n) + eps * bc) : 0.0;
        for (k = 0; k < d; k++) R[i * d + k] = ((double)st.B[i * d + k] - mu[k]) * inv;
    }
    if (cout) {
        for (i = 0; i < V; i++) for (k = 0; k < d; k++) nu[k] += R[i * d + k] / (double)V;
        for (i = 0; i < V; i++) for (k = 0; k < d; k++) R[i * d + k] -= nu[k];
    }
    for (i = 0; i < V * d; i++) {
        double e1 = fabs((double)S[i] + cfg.lr * R[i]), e2 = fabs((double)W[i] - (0.5 - cfg.lr * R[i]));
        if (!isfinite(W[i]) || !isfinite(S[i])) bad++;
        es = e1 > es ? e1 : es;
        ew = e2 > ew ? e2 : ew;
    }
    if (bad || !(es <= 3e-7 * cfg.lr) || !(ew <= 1e-7)) {
        fprintf(stderr, "  tiny_case %zux%zu flags %u beta %g eps %g: %d non-finite, S err %g lr, W err %g\n", V, d,
                flags, beta, eps, bad, es / cfg.lr, ew);
        fails = 1;
    }
    rn_rownorm_free(&st);
    free(W); free(S); free(R); free(mu); free(nu);
    return fails;
}

static void test_rownorm_tiny_rows(void)
{
    static const double epss[] = {0.0, 1e-178, 1.30151e-314, 1e-8};
    static const double scales[] = {1e-40, 1e-30, 1e30};
    t_rng r = {41};
    size_t V, d, i, j, e, c;
    unsigned f;
    int fails = 0;
    float *G;
    { /* reproducer (a): subnormal G; compat (flags 8, 27) overflowed the float factor 1/||b|| */
        V = 13; d = 9;
        G = (float *)malloc(V * d * sizeof(float));
        for (i = 0; i < V * d; i++) G[i] = 1e-41f * (float)((int)(i * 7919 % 13) - 6);
        for (f = 0; f < 32; f++)
            for (e = 0; e < 4; e++) fails += tiny_case(G, V, d, f, (f & 10u) == 8u ? 0.95 : 0.0, epss[e]);
        free(G);
    }
    { /* reproducer (b): equal rows (centred rows exactly 0), subnormal eps: step exactly 0 */
        rn_rownorm_state st;
        rn_rownorm_config cfg = rn_rownorm_default();
        float W[18 * 11], S[18 * 11];
        int exact = 1;
        V = 18; d = 11;
        G = (float *)malloc(V * d * sizeof(float));
        for (i = 0; i < V; i++) for (j = 0; j < d; j++) G[i * d + j] = (float)((int)(j % 7) - 3);
        cfg.beta = 0.0; cfg.eps = 1.30151e-314;
        for (i = 0; i < V * d; i++) W[i] = 0.5f;
        CHECK(rn_rownorm_init(&st, V, d) == RN_OK);
        CHECK(rn_rownorm_step(&st, &cfg, W, d, G, d, S, d) == RN_OK);
        for (i = 0; i < V * d; i++) if (W[i] != 0.5f || S[i] != 0.0f) exact = 0;
        CHECK(exact);
        rn_rownorm_free(&st);
        for (f = 0; f < 32; f++)
            for (e = 0; e < 4; e++) fails += tiny_case(G, V, d, f, 0.0, epss[e]);
        free(G);
    }
    /* rows of norm about 1e-40, 1e-30, 1e30 (one of them zero), every flag mode and eps */
    V = 21; d = 13;
    G = (float *)malloc(V * d * sizeof(float));
    for (c = 0; c < 3; c++) {
        for (i = 0; i < V * d; i++) G[i] = (float)(scales[c] / sqrt((double)d) * t_rng_normal(&r));
        for (j = 0; j < d; j++) G[2 * d + j] = 0.0f;
        for (f = 0; f < 32; f++)
            for (e = 0; e < 4; e++)
                fails += tiny_case(G, V, d, f, (f & 3u) != 0u || (f & 8u) ? 0.95 * ((f & 10u) != 0u) : 0.0, epss[e]);
    }
    free(G);
    CHECK_MSG(fails == 0, "%d failing cases", fails);
}

/* The projected RowNorm at the same scales: finite, equal to the double reference, zero row
 * (eps 0) zero. */
static void test_projected_rownorm_tiny(void)
{
    static const double scales[] = {1e-40, 1e-30, 1e30};
    static const float epss[] = {0.0f, 1e-45f, 1e-8f};
    t_rng r = {42};
    size_t V = 17, d = 10, i, c, e;
    float *A = (float *)malloc(V * d * sizeof(float)), *O = (float *)malloc(V * d * sizeof(float));
    double *Ad = dmat(V * d), *P = dmat(V * d);
    int fails = 0;
    for (c = 0; c < 3; c++)
        for (e = 0; e < 3; e++) {
            double err = 0.0;
            int bad = 0;
            for (i = 0; i < V * d; i++) { A[i] = (float)(scales[c] / sqrt((double)d) * t_rng_normal(&r)); Ad[i] = A[i]; }
            CHECK(rn_projected_rownorm(A, V, d, d, epss[e], O, d) == RN_OK);
            t_ref_prn(Ad, V, d, (double)epss[e], P);
            for (i = 0; i < V * d; i++) {
                double x = fabs((double)O[i] - P[i]);
                if (!isfinite(O[i])) bad++;
                err = x > err ? x : err;
            }
            if (bad || !(err <= 1e-6)) { fprintf(stderr, "  scale %g eps %g: %d bad, err %g\n", scales[c], (double)epss[e], bad, err); fails++; }
        }
    { /* all rows equal: zero output for eps 0 and a subnormal-float eps */
        int nz = 0;
        for (i = 0; i < V * d; i++) A[i] = (float)((int)(i % d) - 3);
        CHECK(rn_projected_rownorm(A, V, d, d, 0.0f, O, d) == RN_OK);
        for (i = 0; i < V * d; i++) nz += O[i] != 0.0f;
        CHECK(rn_projected_rownorm(A, V, d, d, 1e-45f, O, d) == RN_OK);
        for (i = 0; i < V * d; i++) nz += O[i] != 0.0f;
        CHECK(nz == 0);
    }
    CHECK(fails == 0);
    free(A); free(O); free(Ad); free(P);
}

/* A subnormal eta is refused (the certificate D(S) <= eta needed eta's relative precision);
 * DBL_MIN and above keep it. */
static void test_exact_tiny_eta(void)
{
    float G[12] = {1.0f, -2.0f, 0.5f, 3.0f, 0.25f, -1.0f, -0.75f, 1.5f, 2.0f, 0.125f, -3.0f, 1.0f};
    double S[12], F[6 * 3], etas[3] = {2.2250738585072014e-308, 1e-300, 1e-30};
    rn_exact_result res;
    size_t i, j, k, e;
    CHECK(rn_exact_step(G, 4, 3, 3, 4.94e-324, 1e-6, S, 3, F, 3, &res) == RN_ERR_DOMAIN);
    CHECK(rn_exact_step(G, 4, 3, 3, 1e-310, 1e-6, S, 3, F, 3, &res) == RN_ERR_DOMAIN);
    for (e = 0; e < 3; e++) {
        double worst = 0.0;
        CHECK(rn_exact_step(G, 4, 3, 3, etas[e], 1e-6, S, 3, F, 3, &res) == RN_OK);
        for (i = 0; i < 4; i++)
            for (j = i + 1; j < 4; j++) {
                double s2 = 0.0;
                for (k = 0; k < 3; k++) { double x = S[i * 3 + k] / etas[e] - S[j * 3 + k] / etas[e]; s2 += x * x; }
                worst = sqrt(s2) > worst ? sqrt(s2) : worst;
            }
        CHECK_MSG(worst <= 1.0 + 1e-9 && res.diameter <= etas[e] * (1 + 1e-9), "eta %g: max ||s_i - s_j|| = %.17g eta", etas[e], worst);
    }
}

static void run_golden_shape(int compat, unsigned flags, double wd, size_t V, size_t d, size_t ldw, size_t ldg)
{
    t_rng r = {10};
    size_t i, k, t;
    float *W = mat_new(&r, V, d, ldw, 1.0), *Gs[3];
    double *Wd = dmat(V * d), *Bd = dmat(V * d), err = 0.0, berr = 0.0;
    rn_rownorm_state st;
    rn_rownorm_config cfg = rn_rownorm_default();
    cfg.lr = 0.05; cfg.weight_decay = wd; cfg.flags = flags; cfg.eps = 1e-3; /* eps visible */
    for (t = 0; t < 3; t++) {
        float *g = mat_new(&r, V, d, ldg, 1.0);
        Gs[t] = (float *)malloc(V * d * sizeof(float));
        for (i = 0; i < V; i++) for (k = 0; k < d; k++) { g[i * ldg + k] += 0.5f; Gs[t][i * d + k] = g[i * ldg + k]; }
        if (t == 0) {
            for (i = 0; i < V; i++) for (k = 0; k < d; k++) Wd[i * d + k] = W[i * ldw + k];
            CHECK(rn_rownorm_init(&st, V, d) == RN_OK);
        }
        CHECK(rn_rownorm_step(&st, &cfg, W, ldw, g, ldg, NULL, 0) == RN_OK);
        if (ldw > d) for (i = 0; i < V; i++) CHECK(W[i * ldw + d] != W[i * ldw + d]); /* padding untouched */
        free(g);
    }
    t_ref_rownorm(Wd, Bd, (const float *const *)Gs, 3, V, d, cfg.lr, cfg.beta, cfg.eps, wd, compat);
    for (i = 0; i < V; i++) for (k = 0; k < d; k++) {
        double e = fabs(W[i * ldw + k] - Wd[i * d + k]), eb = fabs(st.B[i * d + k] - Bd[i * d + k]);
        err = e > err ? e : err;
        berr = eb > berr ? eb : berr;
    }
    CHECK_MSG(err <= 2e-6, "golden compat=%d flags=%u: W err %g", compat, flags, err);
    CHECK_MSG(berr <= 1e-6, "golden compat=%d: B err %g", compat, berr);
    CHECK(st.t == 3);
    rn_rownorm_free(&st);
    for (t = 0; t < 3; t++) free(Gs[t]);
    free(W); free(Wd); free(Bd);
}

static void run_golden(int compat, unsigned flags, double wd, size_t ldw, size_t ldg)
{
    run_golden_shape(compat, flags, wd, 37, 11, ldw, ldg);
}

static void test_rownorm_golden(void)
{
    /* degenerate shapes: one column, one row (P of one row is 0: S = 0), 257 rows (2 chunks) */
    run_golden_shape(0, 0u, 0.1, 5, 1, 1, 2);
    run_golden_shape(1, RN_REFERENCE_COMPAT, 0.1, 5, 1, 2, 1);
    run_golden_shape(0, 0u, 0.0, 1, 6, 6, 6);
    run_golden_shape(1, RN_REFERENCE_COMPAT, 0.0, 1, 6, 6, 6);
    run_golden_shape(0, 0u, 0.01, 257, 3, 3, 3);
    run_golden(0, 0u, 0.0, 11, 11);
    run_golden(0, 0u, 0.1, 13, 12);
    run_golden(1, RN_REFERENCE_COMPAT, 0.0, 11, 11);
    run_golden(1, RN_NO_CENTER_IN | RN_NO_CENTER_OUT, 0.1, 12, 14); /* same rule as compat */
    run_golden(0, RN_SKIP_CHECKS, 0.0, 11, 11);
}

static void test_rownorm_decay_and_step_out(void)
{
    t_rng r = {11};
    size_t V = 40, d = 9, i;
    float *W = mat_new(&r, V, d, d, 1.0), *W0 = (float *)malloc(V * d * 4), *G = mat_new(&r, V, d, d, 0.0);
    float *So = mat_new(&r, V, d, d, 0.0);
    rn_rownorm_state st;
    rn_rownorm_config cfg = rn_rownorm_default();
    double err = 0.0;
    cfg.lr = 0.1; cfg.weight_decay = 0.5;
    memcpy(W0, W, V * d * 4);
    CHECK(rn_rownorm_init(&st, V, d) == RN_OK);
    /* G = 0: S = 0, only the decay acts */
    CHECK(rn_rownorm_step(&st, &cfg, W, d, G, d, So, d) == RN_OK);
    for (i = 0; i < V * d; i++) {
        double e = fabs(W[i] - 0.95 * W0[i]);
        err = e > err ? e : err;
        CHECK(So[i] == 0.0f);
    }
    CHECK(err <= 1e-6);
    /* non-zero G: W_new - (1 - lr wd) W_old = S (step_out) */
    for (i = 0; i < V * d; i++) G[i] = (float)t_rng_normal(&r);
    memcpy(W0, W, V * d * 4);
    CHECK(rn_rownorm_step(&st, &cfg, W, d, G, d, So, d) == RN_OK);
    err = 0.0;
    for (i = 0; i < V * d; i++) {
        double e = fabs(((double)W[i] - 0.95 * (double)W0[i]) - (double)So[i]);
        err = e > err ? e : err;
    }
    CHECK_MSG(err <= 2e-7, "err %g", err);
    /* zeroed config (lr 0, beta 0, eps 0) is valid: W unchanged, B = G */
    {
        rn_rownorm_config z;
        memset(&z, 0, sizeof z);
        memcpy(W0, W, V * d * 4);
        CHECK(rn_rownorm_step(&st, &z, W, d, G, d, NULL, 0) == RN_OK);
        CHECK(memcmp(W0, W, V * d * 4) == 0);
        CHECK(memcmp(st.B, G, V * d * 4) == 0);
    }
    rn_rownorm_free(&st);
    free(W); free(W0); free(G); free(So);
}

static void test_rownorm_errors(void)
{
    t_rng r = {12};
    size_t V = 20, d = 7, need;
    float *W = mat_new(&r, V, d, d, 1.0), *G = mat_new(&r, V, d, d, 1.0), *So = mat_new(&r, V, d, d, 1.0);
    float *Wc = (float *)malloc(V * d * 4), *Sc = (float *)malloc(V * d * 4), *Bc = (float *)malloc(V * d * 4);
    rn_rownorm_state st, st0, un;
    rn_rownorm_config cfg = rn_rownorm_default(), bad;
    void *mem;
    memset(&un, 0, sizeof un);
    CHECK(rn_rownorm_init(NULL, V, d) == RN_ERR_NULL);
    CHECK(rn_rownorm_init(&st, 0, d) == RN_ERR_SIZE);
    CHECK(rn_rownorm_init(&st, V, 0) == RN_ERR_SIZE);
    CHECK(rn_rownorm_init(&st, (size_t)-1 / 4, 8) == RN_ERR_SIZE);
    CHECK(rn_rownorm_init(&st, V, d) == RN_OK);
    CHECK(rn_rownorm_step(&st, &cfg, W, d, G, d, NULL, 0) == RN_OK); /* a non-trivial B */
    memcpy(Wc, W, V * d * 4); memcpy(Sc, So, V * d * 4); memcpy(Bc, st.B, V * d * 4);
    st0 = st;
#define SAME() (memcmp(Wc, W, V * d * 4) == 0 && memcmp(Sc, So, V * d * 4) == 0 && \
                memcmp(Bc, st.B, V * d * 4) == 0 && st.t == st0.t)
    CHECK(rn_rownorm_step(NULL, &cfg, W, d, G, d, So, d) == RN_ERR_NULL);
    CHECK(rn_rownorm_step(&un, &cfg, W, d, G, d, So, d) == RN_ERR_NULL);
    CHECK(rn_rownorm_step(&st, NULL, W, d, G, d, So, d) == RN_ERR_NULL);
    CHECK(rn_rownorm_step(&st, &cfg, NULL, d, G, d, So, d) == RN_ERR_NULL);
    CHECK(rn_rownorm_step(&st, &cfg, W, d, NULL, d, So, d) == RN_ERR_NULL);
    CHECK(rn_rownorm_step(&st, &cfg, W, d - 1, G, d, So, d) == RN_ERR_SIZE);
    CHECK(rn_rownorm_step(&st, &cfg, W, d, G, d - 1, So, d) == RN_ERR_SIZE);
    CHECK(rn_rownorm_step(&st, &cfg, W, d, G, d, So, d - 1) == RN_ERR_SIZE);
    bad = cfg; bad.beta = 1.0; CHECK(rn_rownorm_step(&st, &bad, W, d, G, d, So, d) == RN_ERR_DOMAIN);
    bad = cfg; bad.beta = -0.1; CHECK(rn_rownorm_step(&st, &bad, W, d, G, d, So, d) == RN_ERR_DOMAIN);
    bad = cfg; bad.lr = -1e-3; CHECK(rn_rownorm_step(&st, &bad, W, d, G, d, So, d) == RN_ERR_DOMAIN);
    bad = cfg; bad.lr = (double)NAN; CHECK(rn_rownorm_step(&st, &bad, W, d, G, d, So, d) == RN_ERR_DOMAIN);
    bad = cfg; bad.eps = -1.0; CHECK(rn_rownorm_step(&st, &bad, W, d, G, d, So, d) == RN_ERR_DOMAIN);
    bad = cfg; bad.weight_decay = -1.0; CHECK(rn_rownorm_step(&st, &bad, W, d, G, d, So, d) == RN_ERR_DOMAIN);
    bad = cfg; bad.weight_decay = (double)HUGE_VAL; CHECK(rn_rownorm_step(&st, &bad, W, d, G, d, So, d) == RN_ERR_DOMAIN);
    bad = cfg; bad.flags = 1024u; CHECK(rn_rownorm_step(&st, &bad, W, d, G, d, So, d) == RN_ERR_DOMAIN);
    CHECK(rn_rownorm_step(&st, &cfg, W, d, W, d, So, d) == RN_ERR_ALIAS);
    CHECK(rn_rownorm_step(&st, &cfg, W, d, G, d, W + 3, d) == RN_ERR_ALIAS);
    CHECK(rn_rownorm_step(&st, &cfg, W, d, st.B, d, So, d) == RN_ERR_ALIAS);
    CHECK(rn_rownorm_step(&st, &cfg, W, d, G, d, (float *)(void *)st.rn__rowinv, d) == RN_ERR_ALIAS);
    G[V * d - 1] = NANF;
    CHECK(rn_rownorm_step(&st, &cfg, W, d, G, d, So, d) == RN_ERR_NONFINITE);
    G[V * d - 1] = (float)-HUGE_VAL;
    CHECK(rn_rownorm_step(&st, &cfg, W, d, G, d, So, d) == RN_ERR_NONFINITE);
    CHECK(SAME());
#undef SAME
    rn_rownorm_free(&st);
    rn_rownorm_free(NULL);
    /* init_ws: caller memory, any alignment, too small is an error */
    need = rn_rownorm_init_workspace_size(V, d);
    CHECK(need > V * d * 4);
    mem = malloc(need + 3);
    CHECK(rn_rownorm_init_ws(&st, V, d, mem, need - 1) == RN_ERR_SIZE);
    CHECK(rn_rownorm_init_ws(&st, V, d, NULL, need) == RN_ERR_NULL);
    CHECK(rn_rownorm_init_ws(&st, V, d, (char *)mem + 3, need) == RN_OK);
    G[V * d - 1] = 0.5f;
    CHECK(rn_rownorm_step(&st, &cfg, W, d, G, d, NULL, 0) == RN_OK && st.t == 1);
    rn_rownorm_free(&st);
    free(mem);
    {
        rn_rownorm_config c = rn_rownorm_default();
        CHECK(c.beta == 0.95 && c.eps == 1e-8 && c.weight_decay == 0.0 && c.flags == 0u && c.lr > 0.0);
    }
    free(W); free(G); free(So); free(Wc); free(Sc); free(Bc);
}

/* A rejected step leaves the whole caller block of rn_rownorm_init_ws (B and every private
 * scratch array) and the struct byte-identical, in every mode: the NaN is late in G (last
 * chunk), after the column sums of earlier chunks have been formed. Also: the finiteness check
 * of G runs in the modes without the inner P (compat, no centering). */
static void test_rownorm_error_state(void)
{
    static const unsigned modes[] = {0u, RN_REFERENCE_COMPAT, RN_NO_CENTER_IN, RN_NO_CENTER_OUT,
                                     RN_NO_CENTER_IN | RN_NO_CENTER_OUT, RN_NO_BIAS_CORRECTION};
    t_rng r = {26};
    size_t V = 600, d = 13, i, mi, need = rn_rownorm_init_workspace_size(V, d);
    float *W = mat_new(&r, V, d, d, 1.0), *G = mat_new(&r, V, d, d, 1.0), *So = mat_new(&r, V, d, d, 0.0);
    float *Wc = (float *)malloc(V * d * 4), *Sc = (float *)malloc(V * d * 4);
    unsigned char *mem = (unsigned char *)malloc(need), *copy = (unsigned char *)malloc(need);
    for (mi = 0; mi < sizeof modes / sizeof modes[0]; mi++) {
        rn_rownorm_state st, st0;
        rn_rownorm_config cfg = rn_rownorm_default();
        size_t pos[2];
        int q;
        cfg.flags = modes[mi]; cfg.weight_decay = 0.1;
        memset(mem, 0x5a, need); /* arbitrary caller memory */
        CHECK(rn_rownorm_init_ws(&st, V, d, mem, need) == RN_OK);
        for (i = 0; i < V * d; i++) G[i] = (float)t_rng_normal(&r) + 0.3f;
        CHECK(rn_rownorm_step(&st, &cfg, W, d, G, d, NULL, 0) == RN_OK); /* a non-trivial state */
        for (i = 0; i < V * d; i++) G[i] = (float)t_rng_normal(&r) - 0.2f; /* other column sums */
        pos[0] = V * d - 1; pos[1] = 300 * d + 5;
        for (q = 0; q < 2; q++) {
            float keep = G[pos[q]];
            memcpy(copy, mem, need); st0 = st;
            memcpy(Wc, W, V * d * 4); memcpy(Sc, So, V * d * 4);
            G[pos[q]] = q ? (float)HUGE_VAL : NANF;
            CHECK_MSG(rn_rownorm_step(&st, &cfg, W, d, G, d, So, d) == RN_ERR_NONFINITE, "flags %u", modes[mi]);
            CHECK_MSG(memcmp(copy, mem, need) == 0, "flags %u: state block changed by a rejected step", modes[mi]);
            CHECK(memcmp(&st, &st0, sizeof st) == 0);
            CHECK(memcmp(Wc, W, V * d * 4) == 0 && memcmp(Sc, So, V * d * 4) == 0);
            G[pos[q]] = keep;
        }
        /* the state still works, and gives what a fresh twin gives */
        {
            rn_rownorm_state tw;
            float *W2 = (float *)malloc(V * d * 4);
            memcpy(W2, W, V * d * 4);
            CHECK(rn_rownorm_init(&tw, V, d) == RN_OK);
            memcpy(tw.B, st.B, V * d * 4); tw.t = st.t; rn_rownorm_sync(&tw);
            CHECK(rn_rownorm_step(&st, &cfg, W, d, G, d, NULL, 0) == RN_OK);
            CHECK(rn_rownorm_step(&tw, &cfg, W2, d, G, d, NULL, 0) == RN_OK);
            CHECK(memcmp(W, W2, V * d * 4) == 0);
            rn_rownorm_free(&tw);
            free(W2);
        }
        rn_rownorm_free(&st);
    }
    free(W); free(G); free(So); free(Wc); free(Sc); free(mem); free(copy);
}

/* Weight decay with a tiny lr * lambda (1e-8 .. 3e-7, where 1 - lr lambda is not a float) in
 * every mode: W_new is (1 - lr lambda) W + S correctly rounded, up to a rare one-ulp miss of the
 * float form w + fl(c w + s) (c = -lr lambda) next to a rounding midpoint, and the mean shrink
 * is unbiased. G = 0 (so S = 0) checks the decay alone; then a random G with the step. */
static void test_rownorm_small_decay(void)
{
    static const double lrwd[] = {1e-8, 3e-8, 1e-7, 3e-7};
    static const unsigned modes[] = {RN_REFERENCE_COMPAT, 0u, RN_NO_CENTER_IN | RN_NO_CENTER_OUT};
    t_rng r = {27};
    size_t V = 128, d = 64, i, q, mi;
    float *W = (float *)malloc(V * d * 4), *W0 = (float *)malloc(V * d * 4), *G = (float *)calloc(V * d, 4);
    float *So = (float *)malloc(V * d * 4);
    for (mi = 0; mi < sizeof modes / sizeof modes[0]; mi++)
        for (q = 0; q < sizeof lrwd / sizeof lrwd[0]; q++) {
            rn_rownorm_state st;
            rn_rownorm_config cfg = rn_rownorm_default();
            double shrink = 0.0, want_shrink = 0.0, worst = 0.0, dec;
            size_t nbad = 0;
            cfg.lr = 1e-3; cfg.weight_decay = lrwd[q] / cfg.lr; cfg.flags = modes[mi];
            dec = 1.0 - cfg.lr * cfg.weight_decay;
            for (i = 0; i < V * d; i++) W0[i] = W[i] = (float)(0.5 + t_rng_uniform(&r));
            memset(G, 0, V * d * 4);
            CHECK(rn_rownorm_init(&st, V, d) == RN_OK);
            CHECK(rn_rownorm_step(&st, &cfg, W, d, G, d, So, d) == RN_OK);
            for (i = 0; i < V * d; i++) {
                float want = (float)((double)W0[i] * dec); /* the exact value, rounded once */
                nbad += W[i] != want;
                shrink += ((double)W0[i] - W[i]) / W0[i];
                want_shrink += ((double)W0[i] - want) / W0[i];
            }
            CHECK_MSG(nbad <= V * d / 2000 && fabs(shrink - want_shrink) <= 2e-3 * lrwd[q] * (double)(V * d),
                      "flags %u lr*wd %g: %zu entries off, mean shrink %.4g want %.4g",
                      modes[mi], lrwd[q], nbad, shrink / (double)(V * d), want_shrink / (double)(V * d));
            /* with a step: |W_new - ((1 - lr wd) W + S)| within half an ulp (plus the rounding of
             * c w + s, far below it) */
            for (i = 0; i < V * d; i++) G[i] = (float)t_rng_normal(&r);
            memcpy(W0, W, V * d * 4);
            CHECK(rn_rownorm_step(&st, &cfg, W, d, G, d, So, d) == RN_OK);
            for (i = 0; i < V * d; i++) {
                double exact = (double)W0[i] * dec + (double)So[i];
                /* the projected modes round s once for S and W separately: S's rounding too */
                double ulp = ldexp(1.0, ilogb(exact) - 23);
                double e = (fabs((double)W[i] - exact) - fabs((double)So[i]) * ldexp(1.0, -24)) / ulp;
                worst = e > worst ? e : worst;
            }
            CHECK_MSG(worst <= 0.5 + 1e-4, "flags %u lr*wd %g: error %.3f ulp", modes[mi], lrwd[q], worst);
            rn_rownorm_free(&st);
        }
    free(W); free(W0); free(G); free(So);
}

/* Size queries that overflow, and the worst-case hidden state's domain and alias rules. */
static void test_sizes_and_hidden_state_rules(void)
{
    t_rng r = {28};
    size_t V = 6, d = 5, ld = 8;
    float *S = mat_new(&r, V, d, ld, 1.0), h[5] = {7, 7, 7, 7, 7};
    CHECK(rn_hilbert_rms_workspace_size(1, (size_t)-1) == 0);
    CHECK(rn_hilbert_rms_workspace_size(1, (size_t)-1 - 62) == 0);
    CHECK(rn_hilbert_rms_workspace_size((size_t)-1, 1) == 0);
    CHECK(rn_hilbert_rms_workspace_size(4, 100) > 100 * 4 * 4);
    CHECK(rn_row_diameter_workspace_size((size_t)-1, 2) == 0);
    CHECK(rn_rownorm_init_workspace_size((size_t)-1 / 2, 3) == 0);
    { /* one row whose cols * 4 bytes overflow: a size error, nothing read */
        double lo = 5.0, hi = 5.0, D = 5.0;
        CHECK(rn_row_diameter_bounds(S, 1, (size_t)-1 - 1, (size_t)-1 - 1, &lo, &hi) == RN_ERR_SIZE);
        CHECK(rn_row_diameter(S, 1, (size_t)-1 / 2, (size_t)-1 / 2, &D, NULL, NULL) == RN_ERR_SIZE);
        CHECK(lo == 5.0 && hi == 5.0 && D == 5.0);
    }
    CHECK(rn_worst_hidden_state(S, V, d, ld, 0, 1, (double)FLT_MAX * 1.001, h) == RN_ERR_DOMAIN);
    CHECK(rn_worst_hidden_state(S, V, d, ld, 0, 1, (double)HUGE_VAL, h) == RN_ERR_DOMAIN);
    CHECK(h[0] == 7.0f && h[4] == 7.0f);
    CHECK(rn_worst_hidden_state(S, V, d, ld, 0, 1, (double)FLT_MAX, h) == RN_OK);
    {
        int fin = 1, k;
        double n = 0.0;
        for (k = 0; k < 5; k++) { fin &= h[k] == h[k] && fabs(h[k]) <= FLT_MAX; n += (double)h[k] * h[k]; }
        CHECK(fin && fabs(sqrt(n) / FLT_MAX - 1.0) <= 1e-6);
    }
    { /* subnormal radii: every entry is the float nearest its double value (never a NaN or
       * a raised norm beyond half a subnormal per entry), and radii below 2^-150 give h = 0 */
        static const double radii[] = {1e-38, 1e-40, 1e-44, 8.0037598499155074e-46, 1e-46, 5e-324};
        size_t q;
        for (q = 0; q < sizeof radii / sizeof radii[0]; q++) {
            double n2 = 0.0, nh = 0.0, sc;
            int k, nearest = 1;
            CHECK(rn_worst_hidden_state(S, V, d, ld, 0, 1, radii[q], h) == RN_OK);
            for (k = 0; k < 5; k++) n2 += ((double)S[k] - S[ld + k]) * ((double)S[k] - S[ld + k]);
            sc = radii[q] / sqrt(n2);
            for (k = 0; k < 5; k++) {
                double x = ((double)S[k] - S[ld + k]) * sc;
                nearest &= fabs((double)h[k] - x) <= ldexp(1.0, -150) * (1.0 + 1e-9) + fabs(x) * ldexp(1.0, -24);
                nh += (double)h[k] * h[k];
            }
            CHECK(nearest);
            CHECK(fabs(sqrt(nh) - radii[q]) <= radii[q] * 1e-6 + sqrt(5.0) * ldexp(1.0, -150));
            if (radii[q] < ldexp(1.0, -151)) CHECK(nh == 0.0);
        }
    }
    /* h inside S (even in a row's padding, or over rows i, j themselves) */
    CHECK(rn_worst_hidden_state(S, V, d, ld, 0, 1, 1.0, S + 2 * ld) == RN_ERR_ALIAS);
    CHECK(rn_worst_hidden_state(S, V, d, ld, 0, 1, 1.0, S + d) == RN_ERR_ALIAS);
    CHECK(rn_worst_hidden_state(S, V, d, ld, 2, 3, 1.0, S + (V - 1) * ld + d - 1) == RN_ERR_ALIAS);
    CHECK(rn_worst_hidden_state(S, 2, d, ld, 0, 1, 1.0, S + 2 * ld) == RN_OK); /* past the 2-row extent */
    free(S);
}

/* Mixed modes and a B written by the caller: the tracked mean of B must follow (SPEC 1.5). */
static void test_rownorm_mixed_and_sync(void)
{
    t_rng r = {17};
    size_t V = 90, d = 13, i;
    float *G1 = mat_new(&r, V, d, d, 1.0), *G2 = mat_new(&r, V, d, d, 1.0), *W = mat_new(&r, V, d, d, 1.0);
    float *W2 = (float *)malloc(V * d * 4), *So = mat_new(&r, V, d, d, 0.0), *So2 = mat_new(&r, V, d, d, 0.0);
    double *Bd = dmat(V * d), *P = dmat(V * d), err = 0.0, beta = 0.9;
    rn_rownorm_state a, b;
    rn_rownorm_config cfg = rn_rownorm_default();
    cfg.beta = beta; cfg.lr = 0.02;
    for (i = 0; i < V * d; i++) { G1[i] += 0.7f; G2[i] -= 0.4f; } /* large column means */
    memcpy(W2, W, V * d * 4);
    CHECK(rn_rownorm_init(&a, V, d) == RN_OK && rn_rownorm_init(&b, V, d) == RN_OK);
    /* step 1 without projections, step 2 with both */
    cfg.flags = RN_REFERENCE_COMPAT;
    CHECK(rn_rownorm_step(&a, &cfg, W, d, G1, d, NULL, 0) == RN_OK);
    cfg.flags = 0;
    CHECK(rn_rownorm_step(&a, &cfg, W, d, G2, d, So, d) == RN_OK);
    for (i = 0; i < V * d; i++) Bd[i] = (beta * (1 - beta) * G1[i] + (1 - beta) * G2[i]) / (1 - beta * beta);
    t_ref_prn(Bd, V, d, cfg.eps, P);
    for (i = 0; i < V * d; i++) { double e = fabs(So[i] + cfg.lr * P[i]); err = e > err ? e : err; }
    CHECK_MSG(err <= 1e-8, "mixed: err %g", err);
    /* state b: B written directly (a checkpoint of a after step 1), then sync */
    {
        rn_rownorm_state c;
        CHECK(rn_rownorm_init(&c, V, d) == RN_OK);
        CHECK(rn_rownorm_step(&c, &cfg, W2, d, G1, d, NULL, 0) == RN_OK); /* default mode: mean tracked */
        memcpy(b.B, c.B, V * d * 4);
        b.t = 1;
        rn_rownorm_sync(&b);
        memcpy(W2, W, V * d * 4);
        CHECK(rn_rownorm_step(&b, &cfg, W2, d, G2, d, So2, d) == RN_OK);
        err = 0.0;
        for (i = 0; i < V * d; i++) { double e = fabs(So2[i] + cfg.lr * P[i]); err = e > err ? e : err; }
        CHECK_MSG(err <= 1e-8, "sync: err %g", err);
        rn_rownorm_free(&c);
    }
    rn_rownorm_free(&a); rn_rownorm_free(&b);
    free(G1); free(G2); free(W); free(W2); free(So); free(So2); free(Bd); free(P);
}

/* The paper's check (SPEC 1.5): the final step diameters equal about 2 x the learning rate. */
static void test_rownorm_diameter_budget(void)
{
    t_rng r = {13};
    size_t V = 200, d = 16, t, i;
    float *W = mat_new(&r, V, d, d, 0.02), *G = mat_new(&r, V, d, d, 1.0), *So = mat_new(&r, V, d, d, 0.0);
    rn_rownorm_state st;
    rn_rownorm_config cfg = rn_rownorm_default();
    double D;
    cfg.lr = 0.1 * 3.2e-3;
    CHECK(rn_rownorm_init(&st, V, d) == RN_OK);
    for (t = 0; t < 5; t++) {
        for (i = 0; i < V * d; i++) G[i] = (float)t_rng_normal(&r);
        CHECK(rn_rownorm_step(&st, &cfg, W, d, G, d, So, d) == RN_OK);
    }
    CHECK(rn_row_diameter(So, V, d, d, &D, NULL, NULL) == RN_OK);
    CHECK(D <= 2 * cfg.lr * (1 + 1e-6) && D >= 1.5 * cfg.lr);
    rn_rownorm_free(&st);
    free(W); free(G); free(So);
}

#ifdef _OPENMP
static void test_rownorm_threads_deterministic(void)
{
    t_rng r = {14};
    size_t V = 1000, d = 33;
    float *W1 = mat_new(&r, V, d, d, 1.0), *W2 = (float *)malloc(V * d * 4), *G = mat_new(&r, V, d, d, 1.0);
    rn_rownorm_state s1, s2;
    rn_rownorm_config cfg = rn_rownorm_default();
    int nt = omp_get_max_threads();
    memcpy(W2, W1, V * d * 4);
    CHECK(rn_rownorm_init(&s1, V, d) == RN_OK && rn_rownorm_init(&s2, V, d) == RN_OK);
    omp_set_num_threads(1);
    CHECK(rn_rownorm_step(&s1, &cfg, W1, d, G, d, NULL, 0) == RN_OK);
    omp_set_num_threads(3);
    CHECK(rn_rownorm_step(&s2, &cfg, W2, d, G, d, NULL, 0) == RN_OK);
    omp_set_num_threads(nt);
    CHECK(memcmp(W1, W2, V * d * 4) == 0);
    { /* diameter: same D and pair for 1 and 3 threads, on sphere-like rows with exact ties */
        double D1, D2;
        size_t i1, j1, i2, j2, i, k;
        for (i = 0; i < V; i++) {
            double n = 0.0;
            for (k = 0; k < d; k++) n += (double)G[i * d + k] * G[i * d + k];
            for (k = 0; k < d; k++) G[i * d + k] = (float)(G[i * d + k] / sqrt(n));
        }
        memcpy(G + 500 * d, G + 7 * d, d * sizeof(float)); /* duplicate rows make tied pairs */
        memcpy(G + 900 * d, G + 3 * d, d * sizeof(float));
        omp_set_num_threads(1);
        CHECK(rn_row_diameter(G, V, d, d, &D1, &i1, &j1) == RN_OK);
        omp_set_num_threads(3);
        CHECK(rn_row_diameter(G, V, d, d, &D2, &i2, &j2) == RN_OK);
        omp_set_num_threads(nt);
        CHECK(D1 == D2 && i1 == i2 && j1 == j2);
        CHECK_NEAR(D1, ref_diameter(G, V, d, d), 0, 1e-12);
    }
    rn_rownorm_free(&s1); rn_rownorm_free(&s2);
    free(W1); free(W2); free(G);
}
#endif

#ifndef RN_FLOAT_ARITH
/* ---- every SIMD kernel against its scalar reference -------------------------------------------- */

static void test_kernels_vs_scalar(void)
{
    t_rng r = {15};
    size_t lens[] = {1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100};
    size_t li, k, n;
    for (li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        float x[100], y[100], b1[100], b2[100], w1[100], w2[100], s1[100], s2[100];
        double mu[100], a1[100], a2[100], c1[100], c2[100], v1, v2;
        n = lens[li];
        for (k = 0; k < n; k++) {
            x[k] = (float)t_rng_normal(&r); y[k] = (float)t_rng_normal(&r);
            mu[k] = t_rng_normal(&r); a1[k] = a2[k] = t_rng_normal(&r); c1[k] = c2[k] = 0.5;
            w1[k] = w2[k] = (float)t_rng_normal(&r);
        }
        CHECK(rn__all_finite(x, n) == rn__all_finite_scalar(x, n) && rn__all_finite(x, n));
        for (k = 0; k < n; k++) { /* a non-finite value in each position, the tail included */
            float keep = x[k];
            x[k] = (k & 1) ? NANF : (float)-HUGE_VAL;
            CHECK(rn__all_finite(x, n) == 0 && rn__all_finite_scalar(x, n) == 0);
            x[k] = keep;
        }
        v1 = rn__sumsq_fd(x, mu, n); v2 = rn__sumsq_fd_scalar(x, mu, n);
        CHECK_NEAR(v1, v2, 0, 1e-13);
        v1 = rn__sumsq_fd(x, NULL, n); v2 = rn__sumsq_fd_scalar(x, NULL, n);
        CHECK_NEAR(v1, v2, 0, 1e-13);
        v1 = rn__sumsq_ff(x, y, n); v2 = rn__sumsq_ff_scalar(x, y, n);
        CHECK_NEAR(v1, v2, 0, 1e-13);
        memcpy(b1, y, n * 4); memcpy(b2, y, n * 4);
        rn__row_ema(b1, x, n, 0.9f, 0.1f, c1);
        rn__row_ema_scalar(b2, x, n, 0.9f, 0.1f, c2);
        for (k = 0; k < n; k++) { CHECK_NEAR(b1[k], b2[k], 1e-7, 1e-6); CHECK_NEAR(c1[k], c2[k], 1e-7, 1e-6); }
        memcpy(b1, y, n * 4); memcpy(b2, y, n * 4);
        v1 = rn__row_ema_sq(b1, x, n, 0.9f, 0.1f);
        v2 = rn__row_ema_sq_scalar(b2, x, n, 0.9f, 0.1f);
        CHECK_NEAR(v1, v2, 1e-12, 1e-6);
        for (k = 0; k < n; k++) CHECK_NEAR(b1[k], b2[k], 1e-7, 1e-6);
        memcpy(w2, w1, n * 4);
        rn__row_axpby(x, -0.25f, 0.9f, w1, s1, n);
        rn__row_axpby_scalar(x, -0.25f, 0.9f, w2, s2, n);
        for (k = 0; k < n; k++) { CHECK_NEAR(w1[k], w2[k], 1e-7, 1e-6); CHECK(s1[k] == s2[k]); }
        memcpy(w2, w1, n * 4);
        rn__row_axpby(x, -0.25f, 0.9f, w1, NULL, n);
        rn__row_axpby_scalar(x, -0.25f, 0.9f, w2, NULL, n);
        for (k = 0; k < n; k++) CHECK_NEAR(w1[k], w2[k], 1e-7, 1e-6);
        memcpy(b1, y, n * 4); memcpy(b2, y, n * 4);
        for (k = 0; k < n; k++) c1[k] = c2[k] = 0.25;
        v1 = rn__row_ema_stats(b1, x, n, 0.9f, 0.1f, mu, c1);
        v2 = rn__row_ema_stats_scalar(b2, x, n, 0.9f, 0.1f, mu, c2);
        CHECK_NEAR(v1, v2, 1e-12, 1e-6);
        for (k = 0; k < n; k++) { CHECK_NEAR(b1[k], b2[k], 1e-7, 1e-6); CHECK_NEAR(c1[k], c2[k], 1e-7, 1e-6); }
        CHECK(rn__row_gsum(x, n, c1) == 1 && rn__row_gsum_scalar(x, n, c2) == 1);
        for (k = 0; k < n; k++) CHECK_NEAR(c1[k], c2[k], 1e-7, 1e-6);
        {
            float keep = x[n - 1];
            x[n - 1] = NANF;
            CHECK(rn__row_gsum(x, n, c1) == 0 && rn__row_gsum_scalar(x, n, c2) == 0);
            x[n - 1] = keep;
            keep = x[0];
            x[0] = (float)HUGE_VAL;
            CHECK(rn__row_gsum(x, n, c1) == 0 && rn__row_gsum_scalar(x, n, c2) == 0);
            x[0] = keep;
        }
        rn__row_nu(x, mu, 0.7, a1, n);
        rn__row_nu_scalar(x, mu, 0.7, a2, n);
        for (k = 0; k < n; k++) CHECK_NEAR(a1[k], a2[k], 1e-14, 1e-14);
        rn__row_write(x, mu, 0.7, a1, -0.3, 0.99, w1, s1, n);
        rn__row_write_scalar(x, mu, 0.7, a1, -0.3, 0.99, w2, s2, n);
        for (k = 0; k < n; k++) { CHECK_NEAR(w1[k], w2[k], 1e-7, 1e-6); CHECK_NEAR(s1[k], s2[k], 1e-7, 1e-6); }
        rn__row_write(x, mu, 0.7, a1, -0.3, 0.99, w1, NULL, n);
        rn__row_write_scalar(x, mu, 0.7, a1, -0.3, 0.99, w2, NULL, n);
        for (k = 0; k < n; k++) CHECK_NEAR(w1[k], w2[k], 1e-7, 1e-6);
    }
    { /* the panel tile (64 x 64 product of packed panels), several k incl. chunk edges */
        size_t ks[] = {1, 5, 16, 17, 127, 128, 129, 300};
        size_t ki, i, j, l;
        float *Pa = (float *)malloc(300 * 64 * 4), *Pb = (float *)malloc(300 * 64 * 4);
        float *C1 = (float *)malloc(64 * 64 * 4), *C2 = (float *)malloc(64 * 64 * 4);
        for (ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
            size_t kk = ks[ki];
            int ok = 1;
            for (i = 0; i < kk * 64; i++) { Pa[i] = (float)t_rng_normal(&r); Pb[i] = (float)t_rng_normal(&r); }
            rn__panel_tile(Pa, Pb, kk, C1);
            rn__panel_tile_scalar(Pa, Pb, kk, C2);
            for (i = 0; i < 64; i++) for (j = 0; j < 64; j++) {
                double bound = 0.0, exact = 0.0;
                for (l = 0; l < kk; l++) {
                    bound += fabs((double)Pa[l * 64 + i] * Pb[l * 64 + j]);
                    exact += (double)Pa[l * 64 + i] * Pb[l * 64 + j];
                }
                bound *= (double)(kk + 16) * ldexp(1.0, -24); /* the gamma_k bound the pruning uses */
                ok &= fabs((double)C1[i * 64 + j] - exact) <= bound + 1e-30;
                ok &= fabs((double)C2[i * 64 + j] - exact) <= bound + 1e-30;
            }
            CHECK_MSG(ok, "panel tile k=%zu", kk);
        }
        free(Pa); free(Pb); free(C1); free(C2);
    }
}
#endif

/* The step's bits do not depend on where the caller's W, G and step_out sit relative to a
 * 64-byte line: the AVX-512 W update of the plain sweep starts its vectors at W's line or
 * switches to 32-byte vectors by placement (rn__row_axpby), and each element is computed on its
 * own. Rows of 37 and 2051 columns (tails) in both the plain and the centred sweeps, W and
 * step_out at 0..15 floats past a line against a placement on the line; 2 steps each. */
static void test_rownorm_placement(void)
{
    static const size_t shapes[2][2] = {{41, 37}, {9, 2051}};
    static const unsigned flags[3] = {0u, RN_REFERENCE_COMPAT, RN_REFERENCE_COMPAT | RN_SKIP_CHECKS};
    size_t si, fi, off, i;
    for (si = 0; si < 2; si++)
        for (fi = 0; fi < 3; fi++) {
            size_t V = shapes[si][0], d = shapes[si][1], n = V * d;
            t_rng r = {77};
            float *G0 = mat_new(&r, V, d, d, 0.01), *W0 = mat_new(&r, V, d, d, 0.02);
            float *wbuf = (float *)malloc((n + 64) * sizeof(float)), *sbuf = (float *)malloc((n + 64) * sizeof(float));
            float *gbuf = (float *)malloc((n + 64) * sizeof(float));
            float *Wref = (float *)malloc(n * sizeof(float)), *Sref = (float *)malloc(n * sizeof(float));
            float *Bref = (float *)malloc(n * sizeof(float));
            /* the first 64-byte line inside each buffer (malloc aligns to at least 8 bytes) */
            float *wl = wbuf + (64 - (size_t)((uintptr_t)(void *)wbuf & 63u)) % 64 / sizeof(float);
            float *sl = sbuf + (64 - (size_t)((uintptr_t)(void *)sbuf & 63u)) % 64 / sizeof(float);
            float *gl = gbuf + (64 - (size_t)((uintptr_t)(void *)gbuf & 63u)) % 64 / sizeof(float);
            for (off = 0; off < 16; off++) {
                rn_rownorm_state st;
                rn_rownorm_config cfg = rn_rownorm_default();
                float *W = wl + off, *S = sl + (off * 7) % 16, *G = gl + (off * 3) % 16;
                int t, same = 1;
                cfg.flags = flags[fi];
                cfg.weight_decay = 0.1; /* the decay term in the update's arithmetic too */
                memcpy(W, W0, n * sizeof(float));
                memcpy(G, G0, n * sizeof(float));
                CHECK(rn_rownorm_init(&st, V, d) == RN_OK);
                for (t = 0; t < 2; t++) CHECK(rn_rownorm_step(&st, &cfg, W, d, G, d, S, d) == RN_OK);
                if (off == 0) {
                    memcpy(Wref, W, n * sizeof(float)); memcpy(Sref, S, n * sizeof(float));
                    memcpy(Bref, st.B, n * sizeof(float));
                } else {
                    for (i = 0; i < n; i++)
                        if (memcmp(W + i, Wref + i, sizeof(float)) || memcmp(S + i, Sref + i, sizeof(float)) ||
                            memcmp(st.B + i, Bref + i, sizeof(float)))
                            same = 0;
                    CHECK_MSG(same, "%zux%zu flags %u: W %zu floats past a line changes the step's bits", V, d,
                              flags[fi], off);
                }
                rn_rownorm_free(&st);
            }
            free(G0); free(W0); free(wbuf); free(sbuf); free(gbuf); free(Wref); free(Sref); free(Bref);
        }
}

static void test_nomem(void)
{
    t_rng r = {16};
    size_t V = 30, d = 8, i = 5, j = 6;
    float *S = mat_new(&r, V, d, d, 1.0), *out = mat_new(&r, V, d, d, 1.0), *copy = (float *)malloc(V * d * 4);
    double D = 3.0, rms = 4.0;
    rn_rownorm_state st;
    memset(&st, 0xab, sizeof st);
    memcpy(copy, out, V * d * 4);
    t_alloc_fail = 1;
    CHECK(rn_row_diameter(S, V, d, d, &D, &i, &j) == RN_ERR_NOMEM);
    CHECK(rn_hilbert_rms(S, V, d, d, out, V, d, &rms) == RN_ERR_NOMEM);
    CHECK(rn_projected_rownorm(S, V, d, d, 0.0f, out, d) == RN_ERR_NOMEM);
    CHECK(rn_rownorm_init(&st, V, d) == RN_ERR_NOMEM);
    t_alloc_fail = 0;
    CHECK(D == 3.0 && i == 5 && j == 6 && rms == 4.0 && memcmp(copy, out, V * d * 4) == 0);
    {
        unsigned char pat[sizeof st];
        memset(pat, 0xab, sizeof pat);
        CHECK(memcmp(&st, pat, sizeof st) == 0);
    }
    free(S); free(out); free(copy);
}

/* rn_rownorm_config_resolve: validation only (every zero is a valid value), RN_REFERENCE_COMPAT
 * spelled out as the two flags it implies, and the same step either way; the deprecated name. */
static void test_config_resolve(void)
{
    rn_rownorm_config c = rn_rownorm_default(), r, poison;
    t_rng rg = {91};
    size_t rows = 9, cols = 7, i;
    float *W1 = mat_new(&rg, rows, cols, cols, 1.0), *W2 = (float *)malloc(rows * cols * 4);
    float *G = mat_new(&rg, rows, cols, cols, 1.0);
    rn_rownorm_state s1, s2;
    memset(&poison, 0x5A, sizeof poison);
    CHECK(rn_rownorm_config_resolve(&c, NULL) == RN_ERR_NULL && rn_rownorm_config_resolve(NULL, &r) == RN_ERR_NULL);
    CHECK(rn_rownorm_config_resolve(&c, &r) == RN_OK && r.lr == c.lr && r.beta == c.beta && r.eps == c.eps &&
          r.weight_decay == c.weight_decay && r.flags == c.flags);
    memset(&c, 0, sizeof c);
    CHECK(rn_rownorm_config_resolve(&c, &r) == RN_OK && r.lr == 0.0 && r.beta == 0.0 && r.eps == 0.0);
    c = rn_rownorm_default();
    c.flags = RN_REFERENCE_COMPAT;
    CHECK(rn_rownorm_config_resolve(&c, &r) == RN_OK &&
          r.flags == (RN_REFERENCE_COMPAT | RN_NO_CENTER_IN | RN_NO_CENTER_OUT));
    c.beta = 1.0;
    memcpy(&r, &poison, sizeof r); /* bytes, padding included (memcmp below) */
    CHECK(rn_rownorm_config_resolve(&c, &r) == RN_ERR_DOMAIN && memcmp(&r, &poison, sizeof r) == 0);
    /* RN_REFERENCE_COMPAT and RN_NO_CENTER_IN | RN_NO_CENTER_OUT: the same steps, bit for bit */
    memcpy(W2, W1, rows * cols * 4);
    CHECK(rn_rownorm_init(&s1, rows, cols) == RN_OK && rn_rownorm_init(&s2, rows, cols) == RN_OK);
    c = rn_rownorm_default();
    r = c;
    c.flags = RN_REFERENCE_COMPAT;
    r.flags = RN_NO_CENTER_IN | RN_NO_CENTER_OUT;
    for (i = 0; i < 3; i++) {
        CHECK(rn_rownorm_step(&s1, &c, W1, cols, G, cols, NULL, 0) == RN_OK);
        CHECK(rn_rownorm_step(&s2, &r, W2, cols, G, cols, NULL, 0) == RN_OK);
    }
    CHECK(memcmp(W1, W2, rows * cols * 4) == 0 && memcmp(s1.B, s2.B, rows * cols * 4) == 0);
    rn_rownorm_free(&s1), rn_rownorm_free(&s2);
    /* 0.2.0's deprecated name was kept for one minor version and is gone in 0.3.0 */
#ifdef rn_rownorm_state_size
    CHECK(0);
#endif
    free(W1), free(W2), free(G);
}

int main(void)
{
    RUN(test_status_strings);
    RUN(test_bounds_ws);
    RUN(test_config_resolve);
    RUN(test_hilbert_logits);
    RUN(test_hilbert_probs);
    RUN(test_hilbert_errors);
    RUN(test_diameter_cases);
    RUN(test_diameter_theorem);
    RUN(test_diameter_ws_and_errors);
    RUN(test_diameter_extreme_scales);
    RUN(test_diameter_fuzz);
    RUN(test_diameter_ties);
    RUN(test_diameter_margin);
    RUN(test_diameter_pruning_work);
    RUN(test_q8_kernels);
    RUN(test_diameter_q8_bound);
    RUN(test_diameter_q8_margin);
    RUN(test_diameter_screens_heads);
    RUN(test_hilbert_rms);
    RUN(test_hilbert_rms_extreme_scales);
    RUN(test_projected_rownorm);
    RUN(test_projected_rownorm_errors);
    RUN(test_rownorm_step_t1);
    RUN(test_rownorm_golden);
    RUN(test_rownorm_decay_and_step_out);
    RUN(test_rownorm_errors);
    RUN(test_rownorm_error_state);
    RUN(test_rownorm_small_decay);
    RUN(test_sizes_and_hidden_state_rules);
    RUN(test_rownorm_mixed_and_sync);
    RUN(test_rownorm_diameter_budget);
    RUN(test_rownorm_tiny_rows);
    RUN(test_projected_rownorm_tiny);
    RUN(test_exact_tiny_eta);
#ifdef _OPENMP
    RUN(test_rownorm_threads_deterministic);
#endif
    RUN(test_rownorm_placement);
    RUN(test_nomem);
#ifndef RN_FLOAT_ARITH
    RUN(test_kernels_vs_scalar);
#else /* the float-arithmetic row helpers keep float pairs in their column sums: no SIMD twin */
    printf("[%s] test_kernels_vs_scalar: not run (RN_FLOAT_ARITH has no SIMD kernels)\n", TEST_VARIANT);
#endif
    return TEST_REPORT();
}
