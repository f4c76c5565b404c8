/* test_edges_rownorm.c - numerical edges and determinism of rownorm.h (the reliability issue).
 *
 * Edges: rows with norms near 1e-30 and 1e30 (the diameter is exact and scales with the
 * input; the projection and the step stay finite and scale invariant with eps = 0);
 * all-zero gradients give a zero step and no NaN under every flag combination; 1 x n and
 * n x 1 shapes against their closed forms; ld > cols with NaN poison past cols (never read,
 * never written); the documented aliasing rules (in place exactly where allowed, every other
 * overlap RN_ERR_ALIAS with nothing written).
 * Determinism: the header promises bit-identical results across runs and OpenMP thread counts
 * for every function: the diameter, its bounds, the Hilbert RMS, the projection, the step and
 * the exact solver are run at 1..3 threads (OpenMP builds) or twice and compared bit for bit.
 */
#define ROWNORM_IMPLEMENTATION
#include "rownorm.h"
#include "test.h"

#include <float.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ---- scaled norms ------------------------------------------------------------------------ */

/* The diameter is exact at every scale: rows of norm ~1e-30 (float products of such rows
 * underflow) and ~1e30 (they overflow) included. */
static void test_diameter_scaled(void)
{
    const size_t r = 40, c = 19;
    float *S = t_floats(r * c);
    double scales[6];
    int k, seed;
    scales[0] = 1.0;
    scales[1] = 1e-30;
    scales[2] = 1e30;
    scales[3] = ldexp(1.0, -100);
    scales[4] = 1e-20;
    scales[5] = 1e19;
    for (k = 0; k < 6; k++) {
        double worst = 0.0;
        for (seed = 1; seed <= 40; seed++) {
            double D = -1.0, want, lo = -1.0, hi = -1.0;
            size_t i, j;
            t_fill_matrix(S, r, c, c, scales[k], (unsigned long long)seed * 7919u);
            want = t_ref_diameter(S, r, c, c);
            CHECK(rn_row_diameter(S, r, c, c, &D, &i, &j) == RN_OK);
            if (fabs(D - want) / want > worst) worst = fabs(D - want) / want;
            CHECK(rn_row_diameter_bounds(S, r, c, c, &lo, &hi) == RN_OK);
            CHECK(lo <= want * (1 + 1e-12) && want <= hi * (1 + 1e-12) && hi <= 2 * lo * (1 + 1e-12));
        }
        CHECK_MSG(worst <= 1e-12, "scale %g: D off the brute force by %.3g relative", scales[k], worst);
    }
    free(S);
}

/* With eps = 0 the projection is scale invariant; with the default eps huge rows are unaffected
 * and tiny ones stay finite. Entries near FLT_MAX do not overflow (norms in double). */
static void test_projection_scaled(void)
{
    const size_t r = 12, c = 9, n = 108;
    float *A = t_floats(n), *As = t_floats(n), *O = t_floats(n), *Os = t_floats(n);
    double scales[4];
    size_t i;
    int k;
    scales[0] = ldexp(1.0, -100);
    scales[1] = ldexp(1.0, 100);
    scales[2] = 1e-30;
    scales[3] = 1e30;
    t_fill_matrix(A, r, c, c, 1.0, 11);
    CHECK(rn_projected_rownorm(A, r, c, c, 0.0f, O, c) == RN_OK);
    for (k = 0; k < 4; k++) {
        double maxd = 0.0;
        for (i = 0; i < n; i++) As[i] = (float)(scales[k] * A[i]);
        CHECK(rn_projected_rownorm(As, r, c, c, 0.0f, Os, c) == RN_OK);
        CHECK(t_all_finite_matrix(Os, r, c, c));
        for (i = 0; i < n; i++)
            if (fabs((double)Os[i] - O[i]) > maxd) maxd = fabs((double)Os[i] - O[i]);
        CHECK_MSG(maxd <= 1e-6, "eps 0, scale %g: max diff %.3g", scales[k], maxd);
        CHECK(rn_projected_rownorm(As, r, c, c, 1e-8f, Os, c) == RN_OK);
        CHECK(t_all_finite_matrix(Os, r, c, c));
    }
    for (i = 0; i < n; i++) As[i] = (i % 3) ? FLT_MAX / 2 : -FLT_MAX / 3;
    CHECK(rn_projected_rownorm(As, r, c, c, 1e-8f, Os, c) == RN_OK);
    CHECK(t_all_finite_matrix(Os, r, c, c));
    free(A);
    free(As);
    free(O);
    free(Os);
}

/* the FPU flushes subnormals (FTZ/DAZ, set at startup by -Ofast / -ffast-math's crtfastmath.o) */
static int subnormals_flushed(void)
{
    volatile float t = 1e-41f;
    float r = t * 2.0f;
    return r == 0.0f;
}

/* Hilbert distance from logits far from 0 and from tiny probabilities; the RMS of a head
 * scaled by 1e+-30 scales with it. */
static void test_hilbert_scaled(void)
{
    float z0[5] = {1e4f, -1e4f, 3.0f, 0.0f, 2e4f}, z1[5] = {1e4f + 1.0f, -1e4f, 3.0f, -2.0f, 2e4f};
    float p[3] = {1e-40f, 0.5f, 1e-30f}, q[3] = {2e-40f, 0.5f, 1e-30f};
    double d = -1.0;
    CHECK(rn_hilbert_logits(z0, z1, 5, &d) == RN_OK);
    CHECK_NEAR(d, (double)z1[0] - (double)z0[0] + 2.0, 0.0, 1e-12);
    if (subnormals_flushed()) { /* -Ofast's crtfastmath.o: the subnormal p[0] reads as 0 */
        CHECK(rn_hilbert_probs(p, q, 3, &d) == RN_ERR_DOMAIN);
    } else {
        CHECK(rn_hilbert_probs(p, q, 3, &d) == RN_OK);
        CHECK_NEAR(d, log((double)q[0] / (double)p[0]), 1e-12, 1e-9);
    }
    {
        const size_t r = 30, c = 8, tokens = 20;
        float *S = t_floats(r * c), *Ss = t_floats(r * c), *H = t_floats(tokens * c);
        double rms = -1.0, rs = -1.0, scales[2];
        size_t i;
        int k;
        scales[0] = 1e-30;
        scales[1] = 1e30;
        t_fill_matrix(S, r, c, c, 1.0, 12);
        t_fill_matrix(H, tokens, c, c, 1.0, 13);
        CHECK(rn_hilbert_rms(S, r, c, c, H, tokens, c, &rms) == RN_OK);
        for (k = 0; k < 2; k++) {
            for (i = 0; i < r * c; i++) Ss[i] = (float)(scales[k] * S[i]);
            CHECK(rn_hilbert_rms(Ss, r, c, c, H, tokens, c, &rs) == RN_OK);
            CHECK_NEAR(rs / scales[k], rms, 0.0, 1e-5);
        }
        free(S);
        free(Ss);
        free(H);
    }
}

/* ---- all-zero gradients ---------------------------------------------------------------- */

static void test_zero_gradient_step(void)
{
    const size_t r = 7, c = 5, n = 35;
    float *W = t_floats(n), *W0 = t_floats(n), *G = t_floats(n), *S = t_floats(n);
    unsigned flags;
    int e;
    memset(G, 0, n * sizeof(float));
    t_fill_matrix(W0, r, c, c, 0.3, 14);
    for (flags = 0; flags < 32; flags++)
        for (e = 0; e < 2; e++) {
            rn_rownorm_state st;
            rn_rownorm_config cfg = rn_rownorm_default();
            size_t i;
            int t, zero = 1;
            cfg.flags = flags;
            cfg.eps = e ? 0.0 : 1e-8;
            memcpy(W, W0, n * sizeof(float));
            CHECK(rn_rownorm_init(&st, r, c) == RN_OK);
            for (t = 0; t < 2; t++) CHECK(rn_rownorm_step(&st, &cfg, W, c, G, c, S, c) == RN_OK);
            for (i = 0; i < n; i++) zero &= S[i] == 0.0f;
            CHECK_MSG(zero && memcmp(W, W0, n * sizeof(float)) == 0, "flags %u eps %g: step not zero", flags, cfg.eps);
            rn_rownorm_free(&st);
        }
    {
        float *O = t_floats(n);
        size_t i;
        int zero = 1;
        CHECK(rn_projected_rownorm(G, r, c, c, 0.0f, O, c) == RN_OK);
        for (i = 0; i < n; i++) zero &= O[i] == 0.0f;
        CHECK(zero);
        free(O);
    }
    free(W);
    free(W0);
    free(G);
    free(S);
}

/* ---- 1 x n and n x 1 --------------------------------------------------------------------- */

static void test_vectors(void)
{
    static const size_t lens[3] = {1, 2, 33};
    size_t li;
    for (li = 0; li < 3; li++) {
        size_t len = lens[li], k;
        float *v = t_floats(len), *O = t_floats(len), *W = t_floats(len), *S = t_floats(len);
        double D = -1.0, mx = -1e300, mn = 1e300, lo = 1.0, hi = -1.0; /* unwritten: fails */
        size_t i = 99, j = 99;
        rn_rownorm_state st;
        rn_rownorm_config cfg = rn_rownorm_default();
        t_fill_matrix(v, len, 1, 1, 1.0, 20 + len);
        /* 1 x n: one row; diameter 0 with the pair (0, 0); projection and step are zero */
        CHECK(rn_row_diameter(v, 1, len, len, &D, &i, &j) == RN_OK);
        CHECK(D == 0.0 && i == 0 && j == 0);
        CHECK(rn_projected_rownorm(v, 1, len, len, 1e-8f, O, len) == RN_OK);
        for (k = 0; k < len; k++) CHECK(O[k] == 0.0f);
        memset(W, 0, len * sizeof(float));
        CHECK(rn_rownorm_init(&st, 1, len) == RN_OK);
        CHECK(rn_rownorm_step(&st, &cfg, W, len, v, len, S, len) == RN_OK);
        for (k = 0; k < len; k++) CHECK(fabs(S[k]) <= 1e-12 * cfg.lr); /* P of one row is 0 */
        rn_rownorm_free(&st);
        /* n x 1: the diameter is max - min; the projection centres, gives signs, centres */
        for (k = 0; k < len; k++) {
            if (v[k] > mx) mx = v[k];
            if (v[k] < mn) mn = v[k];
        }
        CHECK(rn_row_diameter(v, len, 1, 1, &D, &i, &j) == RN_OK);
        CHECK_NEAR(D, mx - mn, 0.0, 1e-15);
        CHECK(rn_row_diameter_bounds(v, len, 1, 1, &lo, &hi) == RN_OK);
        CHECK(lo <= D && D <= hi);
        CHECK(rn_projected_rownorm(v, len, 1, 1, 0.0f, O, 1) == RN_OK);
        CHECK(t_all_finite_matrix(O, len, 1, 1));
        {
            double sum = 0.0;
            for (k = 0; k < len; k++) sum += O[k];
            CHECK_NEAR(sum, 0.0, 1e-6, 0.0);
        }
        CHECK(rn_rownorm_init(&st, len, 1) == RN_OK);
        memset(W, 0, len * sizeof(float));
        CHECK(rn_rownorm_step(&st, &cfg, W, 1, v, 1, S, 1) == RN_OK);
        CHECK(t_all_finite_matrix(W, len, 1, 1));
        rn_rownorm_free(&st);
        free(v);
        free(O);
        free(W);
        free(S);
    }
}

/* ---- ld > cols ------------------------------------------------------------------------------ */

static void test_leading_dimensions(void)
{
    const size_t r = 70, c = 13, ld = 18, tokens = 9;
    float *S = t_floats(r * c), *Sp = t_floats(r * ld), *H = t_floats(tokens * c), *Hp = t_floats(tokens * ld);
    float *O = t_floats(r * c), *Op = t_floats(r * ld), *W = t_floats(r * c), *Wp = t_floats(r * ld);
    float *T = t_floats(r * c), *Tp = t_floats(r * ld);
    double D1, D2, l1, l2, h1, h2, m1, m2;
    size_t i, i1, j1, i2, j2;
    rn_rownorm_state s1, s2;
    rn_rownorm_config cfg = rn_rownorm_default();
    t_fill_matrix(Sp, r, c, ld, 1.0, 30);
    t_fill_matrix(Hp, tokens, c, ld, 1.0, 31);
    for (i = 0; i < r; i++) memcpy(S + i * c, Sp + i * ld, c * sizeof(float));
    for (i = 0; i < tokens; i++) memcpy(H + i * c, Hp + i * ld, c * sizeof(float));
    CHECK(rn_row_diameter(S, r, c, c, &D1, &i1, &j1) == RN_OK);
    CHECK(rn_row_diameter(Sp, r, c, ld, &D2, &i2, &j2) == RN_OK);
    CHECK(memcmp(&D1, &D2, sizeof D1) == 0 && i1 == i2 && j1 == j2);
    CHECK(rn_row_diameter_bounds(S, r, c, c, &l1, &h1) == RN_OK);
    CHECK(rn_row_diameter_bounds(Sp, r, c, ld, &l2, &h2) == RN_OK);
    CHECK(memcmp(&l1, &l2, sizeof l1) == 0 && memcmp(&h1, &h2, sizeof h1) == 0);
    CHECK(rn_hilbert_rms(S, r, c, c, H, tokens, c, &m1) == RN_OK);
    CHECK(rn_hilbert_rms(Sp, r, c, ld, Hp, tokens, ld, &m2) == RN_OK);
    CHECK(memcmp(&m1, &m2, sizeof m1) == 0);
    t_fill_matrix(Op, r, c, ld, 0.0, 0); /* padding poison, values 0 */
    CHECK(rn_projected_rownorm(S, r, c, c, 1e-8f, O, c) == RN_OK);
    CHECK(rn_projected_rownorm(Sp, r, c, ld, 1e-8f, Op, ld) == RN_OK);
    CHECK(t_same_bits(O, c, Op, ld, r, c) && t_padding_intact(Op, r, c, ld) && t_padding_intact(Sp, r, c, ld));
    /* two steps, W, G and step_out all padded */
    t_fill_matrix(Wp, r, c, ld, 0.2, 32);
    t_fill_matrix(Tp, r, c, ld, 0.0, 0);
    for (i = 0; i < r; i++) memcpy(W + i * c, Wp + i * ld, c * sizeof(float));
    cfg.weight_decay = 0.1;
    CHECK(rn_rownorm_init(&s1, r, c) == RN_OK);
    CHECK(rn_rownorm_init(&s2, r, c) == RN_OK);
    for (i = 0; i < 2; i++) {
        CHECK(rn_rownorm_step(&s1, &cfg, W, c, S, c, T, c) == RN_OK);
        CHECK(rn_rownorm_step(&s2, &cfg, Wp, ld, Sp, ld, Tp, ld) == RN_OK);
    }
    CHECK(t_same_bits(W, c, Wp, ld, r, c) && t_same_bits(T, c, Tp, ld, r, c));
    CHECK(t_padding_intact(Wp, r, c, ld) && t_padding_intact(Tp, r, c, ld));
    rn_rownorm_free(&s1);
    rn_rownorm_free(&s2);
    free(S);
    free(Sp);
    free(H);
    free(Hp);
    free(O);
    free(Op);
    free(W);
    free(Wp);
    free(T);
    free(Tp);
}

/* ---- aliasing rules --------------------------------------------------------------------------- */

static void test_aliasing_rules(void)
{
    const size_t r = 6, c = 5, n = 30;
    float *buf = t_floats(3 * n), *snap = t_floats(3 * n), *A = t_floats(n), *O = t_floats(n);
    rn_rownorm_state st;
    rn_rownorm_config cfg = rn_rownorm_default();
    t_fill_matrix(A, r, c, c, 1.0, 40);
    CHECK(rn_projected_rownorm(A, r, c, c, 1e-8f, O, c) == RN_OK);
    /* in place, same ld: the bits of out of place */
    memcpy(buf, A, n * sizeof(float));
    CHECK(rn_projected_rownorm(buf, r, c, c, 1e-8f, buf, c) == RN_OK);
    CHECK(memcmp(buf, O, n * sizeof(float)) == 0);
    /* any other overlap: ALIAS, nothing written */
    t_fill_matrix(buf, 3 * r, c, c, 1.0, 41);
    memcpy(snap, buf, 3 * n * sizeof(float));
    CHECK(rn_projected_rownorm(buf, r, c, c, 1e-8f, buf + 2, c) == RN_ERR_ALIAS);
    CHECK(rn_projected_rownorm(buf, r, c, c, 1e-8f, buf, c + 1) == RN_ERR_ALIAS);
    CHECK(memcmp(buf, snap, 3 * n * sizeof(float)) == 0);
    /* the step: W, G, step_out and the state must not overlap */
    CHECK(rn_rownorm_init(&st, r, c) == RN_OK);
    CHECK(rn_rownorm_step(&st, &cfg, buf, c, buf + n, c, NULL, 0) == RN_OK);
    memcpy(snap, buf, 3 * n * sizeof(float));
    {
        float *B0 = t_floats(n);
        unsigned long long t = st.t;
        memcpy(B0, st.B, n * sizeof(float));
        CHECK(rn_rownorm_step(&st, &cfg, buf, c, buf + 3, c, NULL, 0) == RN_ERR_ALIAS);
        CHECK(rn_rownorm_step(&st, &cfg, buf, c, buf + n, c, buf + 1, c) == RN_ERR_ALIAS);
        CHECK(rn_rownorm_step(&st, &cfg, buf, c, buf + n, c, buf + n + 2, c) == RN_ERR_ALIAS);
        CHECK(rn_rownorm_step(&st, &cfg, buf, c, st.B, c, NULL, 0) == RN_ERR_ALIAS);
        CHECK(memcmp(buf, snap, 3 * n * sizeof(float)) == 0);
        CHECK(memcmp(B0, st.B, n * sizeof(float)) == 0 && st.t == t);
        free(B0);
    }
    rn_rownorm_free(&st);
    free(buf);
    free(snap);
    free(A);
    free(O);
}

/* ---- overlaps are checked before contents (issue 40) -------------------------------------- */

/* A call whose buffers overlap where the contract forbids it answers RN_ERR_ALIAS whatever the
 * data in them: the overlap checks come before any check that reads a possibly-overlapping
 * argument (finiteness, a caller's running best). Each call here has a NaN or Inf in the input
 * that the workspace or an output overlaps; before the fix the first three answered
 * RN_ERR_NONFINITE (rn_row_diameter_pair_ws's best: tests/test_rownorm_shard.c). Nothing is
 * written. */
static void test_alias_before_content(void)
{
    const size_t r = 6, c = 5, n = r * c, tok = 4;
    size_t need;
    float *S = t_floats(n), *H = t_floats(tok * c), *big, *snap;
    double lo = -1.0, hi = -1.0, D = -1.0, mx[4], mn[4];
    rn_exact_result res;
    t_fill_matrix(S, r, c, c, 1.0, 60);
    t_fill_matrix(H, tok, c, c, 1.0, 61);
    /* one buffer holding S (or G) at its start and large enough to be every workspace too */
    need = rn_row_diameter_bounds_workspace_size(c);
    if (rn_row_diameter_workspace_size(r, c) > need) need = rn_row_diameter_workspace_size(r, c);
    if (rn_hilbert_rms_workspace_size(c, tok) > need) need = rn_hilbert_rms_workspace_size(c, tok);
    if (rn_exact_step_workspace_size(r, c) > need) need = rn_exact_step_workspace_size(r, c);
    if (rn_projected_rownorm_workspace_size(c) > need) need = rn_projected_rownorm_workspace_size(c);
    big = t_floats(n + need / sizeof(float) + 16);
    snap = t_floats(n + need / sizeof(float) + 16);
    memset(big, 0, (n + need / sizeof(float) + 16) * sizeof(float)); /* all of it compared below */
    memcpy(big, S, n * sizeof(float));
    big[7] = (float)NAN;
    memcpy(snap, big, (n + need / sizeof(float) + 16) * sizeof(float));
    /* the workspace starts inside S, which holds a NaN */
    CHECK(rn_row_diameter_bounds_ws(big, r, c, c, &lo, &hi, big + 2, need) == RN_ERR_ALIAS);
    CHECK(rn_row_diameter_ws(big, r, c, c, big + 2, need, &D, NULL, NULL) == RN_ERR_ALIAS);
    CHECK(rn_hilbert_rms_partial_ws(big, r, c, c, H, tok, c, big + 2, need, mx, mn) == RN_ERR_ALIAS);
    CHECK(rn_exact_step_ws(big, r, c, c, 1.0, 1e-6, NULL, 0, NULL, 0, &res, big + 2, need) == RN_ERR_ALIAS);
    CHECK(rn_projected_rownorm_ws(big, r, c, c, 1e-8f, S, c, big + 2, need) == RN_ERR_ALIAS);
    CHECK(memcmp(big, snap, (n + need / sizeof(float) + 16) * sizeof(float)) == 0);
    CHECK(lo == -1.0 && hi == -1.0 && D == -1.0);
    /* tok_max inside H, which holds an Inf */
    {
        float *H2 = t_floats(tok * c + 16);
        void *ws = malloc(need);
        CHECK(ws != NULL);
        memcpy(H2, H, tok * c * sizeof(float));
        H2[0] = (float)INFINITY;
        CHECK(rn_hilbert_rms_partial_ws(S, r, c, c, H2, tok, c, ws, need, (double *)(void *)(H2 + 2), mn) == RN_ERR_ALIAS);
        CHECK(H2[0] == (float)INFINITY);
        free(H2);
        free(ws);
    }
    free(S); free(H); free(big); free(snap);
}

/* ---- equal rows with the inner projection give S = 0 (issue 14, item 2) ------------------- */

/* G with all rows equal (a fresh row of values per step): B keeps equal rows, its rows equal
 * their mean, and every mode with the inner projection must give S = 0 exactly (and W
 * untouched, wd = 0): before the fix RN_NO_CENTER_OUT normalised the float rounding of the
 * EMA to a unit row (S ~ 0.5 lr per entry), the default mode left ~1e-19 lr. */
static void test_equal_rows_zero_step(void)
{
    static const size_t shapes[][2] = {{1, 17}, {1, 3}, {2, 33}, {3, 17}, {7, 5}, {5, 1}, {300, 17}, {513, 9}};
    size_t si;
    for (si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const size_t r = shapes[si][0], c = shapes[si][1], n = r * c;
        float *W = t_floats(n), *W0 = t_floats(n), *G = t_floats(n), *S = t_floats(n), *row = t_floats(c);
        unsigned flags;
        int e;
        t_fill_matrix(W0, r, c, c, 0.3, 70 + si);
        for (flags = 0; flags < 32; flags++) {
            if (flags & (RN_NO_CENTER_IN | RN_REFERENCE_COMPAT)) continue; /* the inner projection is on */
            for (e = 0; e < 3; e++) {
                rn_rownorm_state st;
                rn_rownorm_config cfg = rn_rownorm_default();
                size_t i;
                int t, zero = 1;
                double max_s = 0.0;
                cfg.flags = flags;
                if (e == 1) cfg.eps = 0.0;
                if (e == 2) { cfg.beta = 0.5; cfg.lr = 0.37; }
                memcpy(W, W0, n * sizeof(float));
                CHECK(rn_rownorm_init(&st, r, c) == RN_OK);
                for (t = 0; t < 6; t++) {
                    t_fill_matrix(row, 1, c, c, t == 3 ? 1e-20 : 1.7, 80 + (unsigned long long)t);
                    for (i = 0; i < r; i++) memcpy(G + i * c, row, c * sizeof(float));
                    if (t == 4) { /* B written directly (equal rows), then sync */
                        for (i = 0; i < r; i++) memcpy(st.B + i * c, row, c * sizeof(float));
                        rn_rownorm_sync(&st);
                    }
                    CHECK(rn_rownorm_step(&st, &cfg, W, c, G, c, S, c) == RN_OK);
                    for (i = 0; i < n; i++) {
                        zero &= S[i] == 0.0f;
                        if (!t_finite(S[i])) max_s = 1e300; /* bits: NaN/Inf under -ffast-math too */
                        else if (fabs((double)S[i]) > max_s) max_s = fabs((double)S[i]);
                    }
                }
#if defined(__FAST_MATH__)
                /* -ffast-math: the exact zero rests on exact double rounding of the centre, which
                 * the fast-math build does not keep (docs/numerics.md); with the outer projection
                 * the step stays at the rounding level, without it (RN_NO_CENTER_OUT) the rounding
                 * is normalised to a unit row again (S ~ 0.5 lr): not checked here */
                if (!(flags & RN_NO_CENTER_OUT)) CHECK_MSG(max_s <= 1e-12 * cfg.lr, "%zu x %zu flags %u case %d: step %g",
                                                           r, c, flags, e, max_s);
                else CHECK_MSG(max_s <= 2.0 * cfg.lr, "%zu x %zu flags %u case %d: step %g", r, c, flags, e, max_s);
                (void)zero;
#else
                CHECK_MSG(zero && memcmp(W, W0, n * sizeof(float)) == 0, "%zu x %zu flags %u case %d: step not zero",
                          r, c, flags, e);
#endif
                rn_rownorm_free(&st);
            }
        }
        free(W);
        free(W0);
        free(G);
        free(S);
        free(row);
    }
}

/* ---- the ring schedule's index arithmetic near SIZE_MAX (issue 14, item 3) ----------------- */

static int ring_is(size_t P, size_t rank, size_t round, size_t shard, size_t to, size_t from)
{
    size_t s = 7, a = 7, b = 7;
    if (rn_diameter_ring(P, rank, round, &s, &a, &b) != RN_OK) return 0;
    return s == shard && a == to && b == from;
}

static void test_ring_huge(void)
{
    const size_t M = (size_t)-1;
    size_t P, s = 7;
    /* P = SIZE_MAX (odd): rounds P/2 + 1 */
    P = M;
    CHECK(rn_diameter_ring_rounds(P) == P / 2 + 1);
    CHECK(ring_is(P, 0, 0, 0, 0, 0));
    CHECK(ring_is(P, 0, 1, 1, P - 1, 1));
    CHECK(ring_is(P, 2, 1, 3, 1, 3));
    CHECK(ring_is(P, 5, 3, 8, 4, 6));
    CHECK(ring_is(P, P - 1, 1, 0, P - 2, 0));
    CHECK(ring_is(P, P - 1, P / 2, P / 2 - 1, P - 2, 0));
    CHECK(ring_is(P, P - 2, P / 2, P / 2 - 2, P - 3, P - 1));
    CHECK(ring_is(P, P / 2 + 1, P / 2, 0, P / 2, P / 2 + 2));
    CHECK(ring_is(P, P / 2, P / 2, P - 1, P / 2 - 1, P / 2 + 1));
    CHECK(rn_diameter_ring(P, P, 1, &s, NULL, NULL) == RN_ERR_DOMAIN && s == 7);
    CHECK(rn_diameter_ring(P, 0, P / 2 + 1, &s, NULL, NULL) == RN_ERR_DOMAIN && s == 7);
    /* P = SIZE_MAX - 1 (even): in the last round only ranks < P/2 compute */
    P = M - 1;
    CHECK(ring_is(P, P / 2 - 1, P / 2, P - 1, P / 2 - 2, P / 2));
    CHECK(ring_is(P, P / 2, P / 2, (size_t)-1, P / 2 - 1, P / 2 + 1));
    CHECK(ring_is(P, P - 1, P / 2, (size_t)-1, P - 2, 0));
    CHECK(ring_is(P, P - 2, P / 2 - 1, P / 2 - 3, P - 3, P - 1));
    CHECK(ring_is(P, 3, 2, 5, 2, 4));
    /* just above SIZE_MAX / 2: rank + P - 1 wraps */
    P = M / 2 + 2;
    CHECK(ring_is(P, P - 1, 1, 0, P - 2, 0));
    CHECK(ring_is(P, P - 1, P / 2, P / 2 - 1, P - 2, 0));
    CHECK(ring_is(P, 1, 1, 2, 0, 2));
    /* small P unchanged: every (rank, round) against the reference formulas */
    for (P = 1; P <= 9; P++) {
        size_t rank, k;
        for (rank = 0; rank < P; rank++)
            for (k = 0; k < rn_diameter_ring_rounds(P); k++) {
                size_t want = (rank + k) % P;
                if (k > 0 && 2 * k == P && rank >= P / 2) want = (size_t)-1;
                CHECK(ring_is(P, rank, k, want, k ? (rank + P - 1) % P : rank, k ? (rank + 1) % P : rank));
            }
    }
}

/* ---- parameter domains of the step (issue 14, lr and weight decay) ------------------------ */

static void test_step_param_domain(void)
{
    const size_t r = 6, c = 5, n = 30;
    static const double bad[][2] = {{1e300, 0.0}, {2e30, 0.0}, {RN_LR_MAX * 1.0000001, 0.0}, {0.5, 3.0},
                                    {1e200, 1e200}, {1e30, 1e10}, {1e-3, 1e300}, {1.0, 1.0000001},
                                    {(double)HUGE_VAL, 0.0}, {-1e-3, 0.0}, {0.1, (double)HUGE_VAL},
                                    {0.1, -1.0}, {0.1, (double)NAN}};
    size_t bytes = rn_rownorm_init_workspace_size(r, c), q, nx = rn_rownorm_shard_exchange_size(c);
    unsigned char *mem = (unsigned char *)malloc(bytes), *mem0 = (unsigned char *)malloc(bytes);
    float *W = t_floats(n), *W0 = t_floats(n), *G = t_floats(n), *S = t_floats(n), *S0 = t_floats(n);
    double *snd = (double *)malloc(nx * sizeof(double)), *snd0 = (double *)malloc(nx * sizeof(double));
    rn_rownorm_state st, st0;
    rn_rownorm_config cfg = rn_rownorm_default();
    unsigned flags;
    { double lrmax = RN_LR_MAX; CHECK(lrmax == 1e30); }
    if (!mem || !mem0 || !snd || !snd0) exit(2);
    memset(mem, 0, bytes); /* the byte comparisons below also read the block's alignment slack */
    memset(&st, 0, sizeof st);
    t_fill_matrix(W0, r, c, c, 0.3, 90);
    t_fill_matrix(G, r, c, c, 1.0, 91);
    for (flags = 0; flags < 32; flags += 4) {
        CHECK(rn_rownorm_init_ws(&st, r, c, mem, bytes) == RN_OK);
        cfg = rn_rownorm_default();
        cfg.flags = flags & ~RN_SKIP_CHECKS;
        memcpy(W, W0, n * sizeof(float));
        CHECK(rn_rownorm_step(&st, &cfg, W, c, G, c, S, c) == RN_OK); /* a non-trivial B and W */
        memcpy(W0, W, n * sizeof(float));
        t_fill_matrix(S, r, c, c, 5.0, 92);
        memcpy(S0, S, n * sizeof(float));
        for (q = 0; q < nx; q++) snd[q] = snd0[q] = -2.5;
        for (q = 0; q < sizeof bad / sizeof bad[0]; q++) {
            rn_rownorm_config b = cfg;
            size_t cnt = 777;
            b.lr = bad[q][0];
            b.weight_decay = bad[q][1];
            st0 = st;
            memcpy(mem0, mem, bytes);
            CHECK_MSG(rn_rownorm_step(&st, &b, W, c, G, c, S, c) == RN_ERR_DOMAIN, "lr %g wd %g flags %u accepted",
                      b.lr, b.weight_decay, b.flags);
            CHECK(memcmp(&st, &st0, sizeof st) == 0 && memcmp(mem, mem0, bytes) == 0);
            CHECK(memcmp(W, W0, n * sizeof(float)) == 0 && memcmp(S, S0, n * sizeof(float)) == 0);
            CHECK_MSG(rn_rownorm_shard_begin(&st, &b, G, c, snd, &cnt) == RN_ERR_DOMAIN, "begin: lr %g wd %g accepted",
                      b.lr, b.weight_decay);
            CHECK(memcmp(&st, &st0, sizeof st) == 0 && memcmp(mem, mem0, bytes) == 0);
            CHECK(memcmp(snd, snd0, nx * sizeof(double)) == 0 && cnt == 777);
        }
        /* the edges of the domain are accepted: lr = RN_LR_MAX, lr wd = 1 (W decays to S) */
        {
            rn_rownorm_config b = cfg;
            size_t i;
            int fin = 1;
            b.lr = RN_LR_MAX;
            b.weight_decay = 0.0;
            CHECK(rn_rownorm_step(&st, &b, W, c, G, c, S, c) == RN_OK);
            for (i = 0; i < n; i++) fin &= fabsf(S[i]) <= 2.0f * (float)RN_LR_MAX && fabsf(W[i]) <= FLT_MAX;
            CHECK_MSG(fin, "flags %u: lr = RN_LR_MAX gave a non-finite or oversized step", flags);
            b.lr = 0.5;
            b.weight_decay = 2.0;
            memcpy(W, W0, n * sizeof(float));
            CHECK(rn_rownorm_step(&st, &b, W, c, G, c, S, c) == RN_OK);
            /* decay 0: W = S (exactly with projections; w + fl(-w + s) without) */
            for (i = 0; i < n; i++) fin &= fabsf(W[i] - S[i]) <= 1e-6f * (fabsf(S[i]) + fabsf(W0[i]));
            CHECK_MSG(fin, "flags %u: lr wd = 1 should leave W = S", flags);
        }
        rn_rownorm_free(&st);
    }
    free(mem);
    free(mem0);
    free(W);
    free(W0);
    free(G);
    free(S);
    free(S0);
    free(snd);
    free(snd0);
}

/* ---- determinism ------------------------------------------------------------------------- */

#ifdef _OPENMP
#define RE_BIG 1
#else
#define RE_BIG 0
#endif
#define RE_R (RE_BIG ? 700 : 90) /* > 256 rows: several chunks of the step's reductions */
#define RE_C (RE_BIG ? 48 : 16)
#define RE_T (RE_BIG ? 300 : 40)

typedef struct {
    double D, lo, hi, rms, exact[3];
    size_t i, j;
    float *P, *W, *S;
} re_run;

static int re_compute(re_run *e)
{
    float *A = t_floats((size_t)RE_R * RE_C), *H = t_floats((size_t)RE_T * RE_C), *G = t_floats((size_t)RE_R * RE_C);
    rn_rownorm_state st;
    rn_rownorm_config cfg = rn_rownorm_default();
    int bad = 0, t;
    e->P = t_floats((size_t)RE_R * RE_C);
    e->W = t_floats((size_t)RE_R * RE_C);
    e->S = t_floats((size_t)RE_R * RE_C);
    t_fill_matrix(A, RE_R, RE_C, RE_C, 1.0, 50);
    t_fill_matrix(H, RE_T, RE_C, RE_C, 1.0, 51);
    t_fill_matrix(e->W, RE_R, RE_C, RE_C, 0.1, 52);
    bad |= rn_row_diameter(A, RE_R, RE_C, RE_C, &e->D, &e->i, &e->j) != RN_OK;
    bad |= rn_row_diameter_bounds(A, RE_R, RE_C, RE_C, &e->lo, &e->hi) != RN_OK;
    bad |= rn_hilbert_rms(A, RE_R, RE_C, RE_C, H, RE_T, RE_C, &e->rms) != RN_OK;
    bad |= rn_projected_rownorm(A, RE_R, RE_C, RE_C, 1e-8f, e->P, RE_C) != RN_OK;
    cfg.weight_decay = 0.01;
    bad |= rn_rownorm_init(&st, RE_R, RE_C) != RN_OK;
    for (t = 0; t < 3 && !bad; t++) {
        t_fill_matrix(G, RE_R, RE_C, RE_C, 1.0, 60 + (unsigned long long)t);
        bad |= rn_rownorm_step(&st, &cfg, e->W, RE_C, G, RE_C, e->S, RE_C) != RN_OK;
    }
    rn_rownorm_free(&st);
    {
        rn_exact_result res;
        bad |= rn_exact_step(A, 6, 4, RE_C, 1.0, 1e-6, NULL, 0, NULL, 0, &res) != RN_OK;
        e->exact[0] = res.decrease_lo;
        e->exact[1] = res.decrease_hi;
        e->exact[2] = res.diameter;
    }
    free(A);
    free(H);
    free(G);
    return bad;
}

static int re_same(const re_run *a, const re_run *b, const char **what)
{
    size_t n = (size_t)RE_R * RE_C * sizeof(float);
    if (memcmp(&a->D, &b->D, sizeof a->D) || a->i != b->i || a->j != b->j) return *what = "row_diameter", 0;
    if (memcmp(&a->lo, &b->lo, sizeof a->lo) || memcmp(&a->hi, &b->hi, sizeof a->hi)) return *what = "bounds", 0;
    if (memcmp(&a->rms, &b->rms, sizeof a->rms)) return *what = "hilbert_rms", 0;
    if (memcmp(a->P, b->P, n)) return *what = "projected_rownorm", 0;
    if (memcmp(a->W, b->W, n) || memcmp(a->S, b->S, n)) return *what = "rownorm_step", 0;
    if (memcmp(a->exact, b->exact, sizeof a->exact)) return *what = "exact_step", 0;
    return 1;
}

static void re_free(re_run *e)
{
    free(e->P);
    free(e->W);
    free(e->S);
}

static void test_determinism_threads(void)
{
    re_run ref, run;
    const char *what = "";
    int nt;
    CHECK(re_compute(&ref) == 0);
    CHECK(re_compute(&run) == 0);
    CHECK_MSG(re_same(&ref, &run, &what), "second run differs in %s", what);
    re_free(&run);
#ifdef _OPENMP
    {
        int saved = omp_get_max_threads();
        for (nt = 1; nt <= 3; nt++) {
            omp_set_num_threads(nt);
            CHECK(re_compute(&run) == 0);
            CHECK_MSG(re_same(&ref, &run, &what), "%d threads differ in %s", nt, what);
            re_free(&run);
        }
        omp_set_num_threads(saved);
    }
#else
    (void)nt;
#endif
    re_free(&ref);
}

/* NaN / Inf arguments refused from the bits (issue 40: -ffast-math folds d != d, d == HUGE_VAL,
 * x - x == 0 and x <= DBL_MAX; the fastmath variant runs this) */
static void test_nonfinite_scalars(void)
{
    float S[4 * 3], h[3], O[4 * 3];
    double tmax[2] = {1.0, 2.0}, tmin[2] = {0.0, 1.0}, rms = -1.0;
    unsigned char ws[4096];
    rn_rownorm_state st;
    rn_rownorm_config cfg = rn_rownorm_default(), bad;
    float W[4 * 3], G[4 * 3];
    size_t i;
    int k;
    t_fill_matrix(S, 4, 3, 3, 1.0, 90);
    t_fill_matrix(G, 4, 3, 3, 1.0, 91);
    t_fill_matrix(W, 4, 3, 3, 1.0, 92);
    for (k = 0; k < 3; k++) {
        double x = k == 0 ? (double)NAN : k == 1 ? (double)INFINITY : -(double)INFINITY;
        tmax[1] = x;
        CHECK(rn_hilbert_rms_from_range(tmax, tmin, 2, &rms) == RN_ERR_NONFINITE);
        CHECK(rn_worst_hidden_state(S, 4, 3, 3, 0, 1, x, h) == RN_ERR_DOMAIN);
        CHECK(rn_projected_rownorm_ws(S, 4, 3, 3, (float)x, O, 3, ws, sizeof ws) == RN_ERR_DOMAIN);
        CHECK(rn_rownorm_init(&st, 4, 3) == RN_OK);
        bad = cfg; bad.lr = x;
        CHECK(rn_rownorm_step(&st, &bad, W, 3, G, 3, NULL, 0) == RN_ERR_DOMAIN);
        bad = cfg; bad.beta = x;
        CHECK(rn_rownorm_step(&st, &bad, W, 3, G, 3, NULL, 0) == RN_ERR_DOMAIN);
        bad = cfg; bad.eps = x;
        CHECK(rn_rownorm_step(&st, &bad, W, 3, G, 3, NULL, 0) == RN_ERR_DOMAIN);
        bad = cfg; bad.weight_decay = x;
        CHECK(rn_rownorm_step(&st, &bad, W, 3, G, 3, NULL, 0) == RN_ERR_DOMAIN);
        CHECK(st.t == 0);
        rn_rownorm_free(&st);
    }
    tmax[1] = 2.0;
    CHECK(rn_hilbert_rms_from_range(tmax, tmin, 2, &rms) == RN_OK && rms == 1.0);
    CHECK(t_isnan(rn_tv_bound((double)NAN)));
    for (i = 0; i < 12; i++) CHECK(t_finite(W[i]));
}

int main(void)
{
    RUN(test_diameter_scaled);
    RUN(test_projection_scaled);
    RUN(test_hilbert_scaled);
    RUN(test_zero_gradient_step);
    RUN(test_vectors);
    RUN(test_leading_dimensions);
    RUN(test_aliasing_rules);
    RUN(test_alias_before_content);
    RUN(test_determinism_threads);
    RUN(test_equal_rows_zero_step);
    RUN(test_ring_huge);
    RUN(test_step_param_domain);
    RUN(test_nonfinite_scalars);
    return TEST_REPORT();
}
