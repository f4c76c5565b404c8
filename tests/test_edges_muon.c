/* test_edges_muon.c - numerical edges and determinism of muon.h (the reliability issue).
 *
 * Edges: gradients whose norms are near 1e-30 and 1e30 (and entries near FLT_MAX) are
 * orthogonalised from a norm accumulated in double (no overflow, no underflow to zero);
 * all-zero gradients give a zero step and no NaN in every optimizer; 1 x n and n x 1 shapes
 * against their closed form; ld > cols with NaN poison past cols (never read, never
 * written); the documented aliasing rules (in place allowed exactly where the header says so,
 * every other overlap MUON_ERR_ALIAS with nothing written).
 * Determinism: every routine whose results the header calls bit-identical (the GEMM section,
 * NS, the batched form's concurrent path, the steps, AdamW, clipping) is run at 1..3 OpenMP
 * threads (OpenMP builds) or twice (others) and compared bit for bit. A threaded CBLAS is not
 * claimed deterministic: under MUON_USE_CBLAS the thread counts are not compared.
 */
#define MUON_IMPLEMENTATION
#include "muon.h"
#include "test.h"

#include <float.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static int all_zero(const float *A, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (A[i] != 0.0f) return 0;
    return 1;
}

/* the FPU flushes subnormals (FTZ/DAZ, set at startup by -Ofast / -ffast-math's crtfastmath.o) */
static int subnormals_flushed(void)
{
    volatile float t = 1e-41f;
    float r = t * 2.0f;
    return r == 0.0f;
}

static double frob(const float *A, size_t rows, size_t cols, size_t ld)
{
    double s = 0.0;
    size_t i, j;
    for (i = 0; i < rows; i++)
        for (j = 0; j < cols; j++) s += (double)A[i * ld + j] * A[i * ld + j];
    return sqrt(s);
}

static muon_ns_config jordan_eps0(void)
{
    muon_ns_config ns = muon_ns_preset(MUON_NS_JORDAN, 0);
    ns.eps = 0.0;
    return ns;
}

/* ---- scaled norms ----------------------------------------------------------------------- */

/* eps = 0: orthogonalisation is exactly scale invariant; powers of two scale every float
 * exactly, so the outputs must be bit-identical; 1e+-30 agree to float rounding. */
static void test_ns_scaled_norms(void)
{
    static const size_t shapes[3][2] = {{10, 14}, {14, 10}, {12, 12}};
    muon_ns_config ns = jordan_eps0();
    size_t s;
    for (s = 0; s < 3; s++) {
        size_t r = shapes[s][0], c = shapes[s][1], n = r * c, k;
        float *G = t_floats(n), *Gs = t_floats(n), *O = t_floats(n), *Os = t_floats(n);
        double scales[4];
        scales[0] = ldexp(1.0, -100); /* powers of two: exact float scaling */
        scales[1] = ldexp(1.0, 100);
        scales[2] = 1e-30;
        scales[3] = 1e30;
        t_fill_matrix(G, r, c, c, 1.0, 100 + s);
        CHECK(muon_orthogonalize(G, r, c, c, &ns, O, c) == MUON_OK);
        for (k = 0; k < 4; k++) {
            size_t i;
            double maxd = 0.0;
            for (i = 0; i < n; i++) Gs[i] = (float)(scales[k] * G[i]);
            CHECK(muon_orthogonalize(Gs, r, c, c, &ns, Os, c) == MUON_OK);
            CHECK(t_all_finite_matrix(Os, r, c, c));
            for (i = 0; i < n; i++) {
                double d = fabs((double)Os[i] - O[i]);
                if (d > maxd) maxd = d;
            }
            if (k < 2)
                CHECK_MSG(memcmp(O, Os, n * sizeof(float)) == 0, "scale 2^%+d: max diff %.3g", k ? 100 : -100, maxd);
            else
                CHECK_MSG(maxd <= 1e-5, "scale %g: max diff %.3g", scales[k], maxd);
        }
        free(G);
        free(Gs);
        free(O);
        free(Os);
    }
}

/* Default eps (1e-7): huge gradients are unaffected; tiny ones shrink (documented) but stay
 * finite; entries near FLT_MAX (||G||_F^2 overflows float, not double) and rows of norm 1e30
 * next to rows of norm 1e-30 give a finite result. */
static void test_ns_huge_tiny_default_eps(void)
{
    const size_t r = 9, c = 13, n = 9 * 13;
    float *G = t_floats(n), *O = t_floats(n), *Ob = t_floats(n);
    size_t i, j;
    double maxd = 0.0;
    t_fill_matrix(G, r, c, c, 1.0, 7);
    CHECK(muon_orthogonalize(G, r, c, c, NULL, O, c) == MUON_OK);
    for (i = 0; i < n; i++) G[i] *= 1e30f;
    CHECK(muon_orthogonalize(G, r, c, c, NULL, Ob, c) == MUON_OK);
    for (i = 0; i < n; i++) {
        double d = fabs((double)Ob[i] - O[i]);
        if (d > maxd) maxd = d;
    }
    CHECK_MSG(maxd <= 1e-5, "1e30 vs 1: max diff %.3g", maxd);
    /* entries near FLT_MAX */
    t_fill_matrix(G, r, c, c, 1.0, 8);
    for (i = 0; i < n; i++) G[i] = G[i] >= 0 ? FLT_MAX / 2 : -FLT_MAX / 3;
    CHECK(muon_orthogonalize(G, r, c, c, NULL, O, c) == MUON_OK);
    CHECK(t_all_finite_matrix(O, r, c, c));
    CHECK(frob(O, r, c, c) > 0.5);
    /* mixed rows: row norms 1e30 and 1e-30 */
    t_fill_matrix(G, r, c, c, 1.0, 9);
    for (i = 0; i < r; i++)
        for (j = 0; j < c; j++) G[i * c + j] *= (i % 2) ? 1e-31f : 1e29f;
    CHECK(muon_orthogonalize(G, r, c, c, NULL, O, c) == MUON_OK);
    CHECK(t_all_finite_matrix(O, r, c, c));
    /* tiny with the default eps: finite, never NaN, smaller than the unit result */
    t_fill_matrix(G, r, c, c, 1e-30, 10);
    CHECK(muon_orthogonalize(G, r, c, c, NULL, O, c) == MUON_OK);
    CHECK(t_all_finite_matrix(O, r, c, c));
    CHECK(frob(O, r, c, c) <= 3.0 + 1e-6);
    /* denormal entries only */
    for (i = 0; i < n; i++) G[i] = (i % 3 ? 1 : -1) * 1e-41f;
    CHECK(muon_orthogonalize(G, r, c, c, NULL, O, c) == MUON_OK);
    CHECK(t_all_finite_matrix(O, r, c, c));
    {
        muon_ns_config ns = jordan_eps0();
        CHECK(muon_orthogonalize(G, r, c, c, &ns, O, c) == MUON_OK);
        CHECK(t_all_finite_matrix(O, r, c, c));
        /* -Ofast links crtfastmath.o, which sets flush-to-zero / denormals-are-zero for the
         * whole process: the subnormal G then reads as 0, and zero in is zero out */
        CHECK(frob(O, r, c, c) > 0.1 || (subnormals_flushed() && frob(O, r, c, c) == 0.0));
    }
    free(G);
    free(O);
    free(Ob);
}

/* singular values and the top pair of a matrix scaled by 1e+-30: relative accuracy kept */
static void test_sv_scaled(void)
{
    const size_t r = 7, c = 5, n = 35;
    float *M = t_floats(n), *Ms = t_floats(n);
    double sv[5], svs[5], u[7], v[5], sigma = 0.0;
    static const double scales[2] = {1e-30, 1e30};
    size_t i, k;
    t_fill_matrix(M, r, c, c, 1.0, 11);
    CHECK(muon_singular_values(M, r, c, c, sv) == MUON_OK);
    for (k = 0; k < 2; k++) {
        for (i = 0; i < n; i++) Ms[i] = (float)(scales[k] * M[i]);
        CHECK(muon_singular_values(Ms, r, c, c, svs) == MUON_OK);
        for (i = 0; i < 5; i++) CHECK_NEAR(svs[i] / scales[k], sv[i], 0.0, 1e-5);
        memset(v, 0, sizeof v);
        CHECK(muon_top_singular_pair(Ms, r, c, c, 60, u, v, &sigma) == MUON_OK);
        CHECK_NEAR(sigma / scales[k], sv[0], 0.0, 1e-3);
    }
    free(M);
    free(Ms);
}

/* ---- all-zero gradients ------------------------------------------------------------------ */

static void test_zero_gradients(void)
{
    const size_t r = 6, c = 11, n = 66;
    float *W = t_floats(n), *W0 = t_floats(n), *G = t_floats(n), *O = t_floats(n);
    double sv[6];
    int form, nest, cap;
    memset(G, 0, n * sizeof(float));
    t_fill_matrix(W0, r, c, c, 0.1, 12);
    /* NS, singular values, top pair */
    CHECK(muon_orthogonalize(G, r, c, c, NULL, O, c) == MUON_OK);
    CHECK(all_zero(O, n));
    {
        muon_ns_config ns = jordan_eps0();
        CHECK(muon_orthogonalize(G, r, c, c, &ns, O, c) == MUON_OK);
        CHECK(all_zero(O, n));
    }
    CHECK(muon_singular_values(G, r, c, c, sv) == MUON_OK);
    CHECK(sv[0] == 0.0 && sv[5] == 0.0);
    /* Muon: every momentum form, Nesterov on/off, cap off/growth/always: W unchanged */
    for (form = 0; form < 2; form++)
        for (nest = 0; nest < 2; nest++)
            for (cap = 0; cap < 3; cap++) {
                muon_state st;
                muon_config cfg = muon_default();
                int t;
                cfg.momentum_form = (muon_momentum_form)form;
                cfg.nesterov = nest;
                cfg.cap = (muon_cap_mode)cap;
                memcpy(W, W0, n * sizeof(float));
                CHECK(muon_init(&st, r, c) == MUON_OK);
                for (t = 0; t < 3; t++) CHECK(muon_step(&st, &cfg, W, c, G, c, NULL, 0) == MUON_OK);
                CHECK_MSG(memcmp(W, W0, n * sizeof(float)) == 0, "form %d nesterov %d cap %d", form, nest, cap);
                CHECK(all_zero(st.momentum, n));
                muon_free(&st);
            }
    /* Muown: W moves by rounding at most, stays finite */
    {
        muown_state st;
        muown_config cfg = muown_default();
        size_t i;
        double maxd = 0.0;
        memcpy(W, W0, n * sizeof(float));
        CHECK(muown_init(&st, W, r, c, c) == MUON_OK);
        CHECK(muown_step(&st, &cfg, W, c, G, c, NULL, 0) == MUON_OK);
        CHECK(muown_step(&st, &cfg, W, c, G, c, NULL, 0) == MUON_OK);
        CHECK(t_all_finite_matrix(W, r, c, c));
        for (i = 0; i < n; i++) {
            double d = fabs((double)W[i] - W0[i]);
            if (d > maxd) maxd = d;
        }
        CHECK_MSG(maxd <= 1e-6, "muown moved W by %.3g on a zero gradient", maxd);
        muown_free(&st);
    }
    /* AdamW without weight decay: bit-identical parameters; clipping: nothing to scale */
    {
        muon_adamw_state st;
        muon_adamw_config cfg = muon_adamw_default();
        float *gp = G;
        size_t sz = n;
        double total = -1.0;
        cfg.weight_decay = 0.0;
        memcpy(W, W0, n * sizeof(float));
        CHECK(muon_adamw_init(&st, n) == MUON_OK);
        CHECK(muon_adamw_step(&st, &cfg, W, G, NULL) == MUON_OK);
        CHECK(muon_adamw_step(&st, &cfg, W, G, NULL) == MUON_OK);
        CHECK(memcmp(W, W0, n * sizeof(float)) == 0);
        CHECK(all_zero(st.m, n) && all_zero(st.v, n));
        muon_adamw_free(&st);
        CHECK(muon_clip_grad_norm(&gp, &sz, 1, 1.0, &total) == MUON_OK);
        CHECK(total == 0.0 && all_zero(G, n));
    }
    free(W);
    free(W0);
    free(G);
    free(O);
}

/* ---- 1 x n and n x 1 ----------------------------------------------------------------------- */

/* A rank-one G = s u v^T has the single singular value 1 after normalisation, so NS gives
 * f_K(1) G/||G||_F exactly in exact arithmetic (eps = 0). */
static void test_vectors(void)
{
    static const size_t lens[4] = {1, 2, 17, 300};
    muon_ns_config ns = jordan_eps0();
    double f1 = muon_ns_transfer(&ns, 1.0);
    size_t li, orient;
    CHECK(f1 > 0.5 && f1 < 1.5);
    for (li = 0; li < 4; li++)
        for (orient = 0; orient < 2; orient++) {
            size_t len = lens[li], r = orient ? len : 1, c = orient ? 1 : len, i;
            float *G = t_floats(len), *O = t_floats(len), *W = t_floats(len), *W0 = t_floats(len);
            double nrm, sv = -1.0, scale, maxd = 0.0;
            muon_state st;
            muon_config cfg = muon_default();
            t_fill_matrix(G, r, c, c, 1.0, 20 + len);
            nrm = frob(G, r, c, c);
            CHECK(muon_orthogonalize(G, r, c, c, &ns, O, c) == MUON_OK);
            for (i = 0; i < len; i++) {
                double d = fabs((double)O[i] - f1 * G[i] / nrm);
                if (d > maxd) maxd = d;
            }
            CHECK_MSG(maxd <= 2e-5, "%zu x %zu: max diff %.3g", r, c, maxd);
            CHECK(muon_singular_values(G, r, c, c, &sv) == MUON_OK);
            CHECK_NEAR(sv, nrm, 0.0, 1e-6);
            /* one Muon step: W - lr * sqrt(max(1, r/c)) * NS(u), u parallel to G */
            t_fill_matrix(W0, r, c, c, 0.5, 40 + len);
            memcpy(W, W0, len * sizeof(float));
            cfg.ns = ns;
            CHECK(muon_init(&st, r, c) == MUON_OK);
            CHECK(muon_step(&st, &cfg, W, c, G, c, NULL, 0) == MUON_OK);
            scale = sqrt(r > c ? (double)r / (double)c : 1.0);
            maxd = 0.0;
            for (i = 0; i < len; i++) {
                double want = W0[i] - cfg.lr * scale * f1 * G[i] / nrm;
                double d = fabs((double)W[i] - want);
                if (d > maxd) maxd = d;
            }
            CHECK_MSG(maxd <= 1e-6 * (1.0 + scale), "step %zu x %zu: max diff %.3g", r, c, maxd);
            muon_free(&st);
            free(G);
            free(O);
            free(W);
            free(W0);
        }
}

/* ---- ld > cols ---------------------------------------------------------------------------- */

/* Results with a padded leading dimension equal the packed ones bit for bit; NaN in the input
 * padding is never read (no MUON_ERR_NONFINITE); the output padding is never written. */
static void test_leading_dimensions(void)
{
    static const size_t shapes[3][2] = {{5, 9}, {9, 5}, {1, 7}};
    size_t s;
    for (s = 0; s < 3; s++) {
        size_t r = shapes[s][0], c = shapes[s][1], ld = c + 5, i;
        float *G = t_floats(r * c), *Gp = t_floats(r * ld), *O = t_floats(r * c), *Op = t_floats(r * ld);
        float *W = t_floats(r * c), *Wp = t_floats(r * ld);
        double sv[9], svp[9];
        muon_state st, stp;
        muon_config cfg = muon_default();
        t_fill_matrix(Gp, r, c, ld, 1.0, 50 + s);
        for (i = 0; i < r; i++) memcpy(G + i * c, Gp + i * ld, c * sizeof(float));
        t_fill_matrix(Op, r, c, ld, 1.0, 0);
        CHECK(muon_orthogonalize(G, r, c, c, NULL, O, c) == MUON_OK);
        CHECK(muon_orthogonalize(Gp, r, c, ld, NULL, Op, ld) == MUON_OK);
        CHECK(t_same_bits(O, c, Op, ld, r, c));
        CHECK(t_padding_intact(Op, r, c, ld) && t_padding_intact(Gp, r, c, ld));
        CHECK(muon_singular_values(G, r, c, c, sv) == MUON_OK);
        CHECK(muon_singular_values(Gp, r, c, ld, svp) == MUON_OK);
        CHECK(memcmp(sv, svp, (r < c ? r : c) * sizeof(double)) == 0);
        /* Muon steps with W and G both padded */
        t_fill_matrix(Wp, r, c, ld, 0.3, 60 + s);
        for (i = 0; i < r; i++) memcpy(W + i * c, Wp + i * ld, c * sizeof(float));
        cfg.cap = MUON_CAP_GROWTH;
        cfg.weight_decay = 0.1;
        CHECK(muon_init(&st, r, c) == MUON_OK);
        CHECK(muon_init(&stp, r, c) == MUON_OK);
        for (i = 0; i < 3; i++) {
            CHECK(muon_step(&st, &cfg, W, c, G, c, NULL, 0) == MUON_OK);
            CHECK(muon_step(&stp, &cfg, Wp, ld, Gp, ld, NULL, 0) == MUON_OK);
        }
        CHECK(t_same_bits(W, c, Wp, ld, r, c));
        CHECK(t_padding_intact(Wp, r, c, ld));
        muon_free(&st);
        muon_free(&stp);
        /* SGEMM with padded A, B, C (beta 0: C not read) */
        {
            float *C = t_floats(r * r), *Cp = t_floats(r * ld);
            t_fill_matrix(Cp, r, r, ld, 1.0, 0);
            CHECK(muon_sgemm(MUON_NO_TRANS, MUON_TRANS, r, r, c, 1.0f, G, c, G, c, 0.0f, C, r) == MUON_OK);
            CHECK(muon_sgemm(MUON_NO_TRANS, MUON_TRANS, r, r, c, 1.0f, Gp, ld, Gp, ld, 0.0f, Cp, ld) == MUON_OK);
            CHECK(t_same_bits(C, r, Cp, ld, r, r));
            CHECK(t_padding_intact(Cp, r, r, ld));
            free(C);
            free(Cp);
        }
        free(G);
        free(Gp);
        free(O);
        free(Op);
        free(W);
        free(Wp);
    }
}

/* ---- aliasing rules ------------------------------------------------------------------------ */

static void test_aliasing_rules(void)
{
    const size_t r = 6, c = 8, n = 48;
    float *buf = t_floats(2 * n), *G = t_floats(n), *O = t_floats(n), *snap = t_floats(2 * n);
    float *W = t_floats(n);
    muon_state st;
    muon_config cfg = muon_default();
    t_fill_matrix(G, r, c, c, 1.0, 70);
    CHECK(muon_orthogonalize(G, r, c, c, NULL, O, c) == MUON_OK);
    /* in place (out == G, same ld): the same bits as out of place */
    memcpy(buf, G, n * sizeof(float));
    CHECK(muon_orthogonalize(buf, r, c, c, NULL, buf, c) == MUON_OK);
    CHECK(memcmp(buf, O, n * sizeof(float)) == 0);
    /* any other overlap: ALIAS, nothing written */
    t_fill_matrix(buf, 2 * r, c, c, 1.0, 71);
    memcpy(snap, buf, 2 * n * sizeof(float));
    CHECK(muon_orthogonalize(buf, r, c, c, NULL, buf + 3, c) == MUON_ERR_ALIAS);
    CHECK(muon_orthogonalize(buf + c, r, c, c, NULL, buf, c) == MUON_ERR_ALIAS);
    CHECK(memcmp(buf, snap, 2 * n * sizeof(float)) == 0);
    /* batched in place: count 2, stride n */
    memcpy(buf, G, n * sizeof(float));
    memcpy(buf + n, G, n * sizeof(float));
    CHECK(muon_orthogonalize_batched(buf, 2, r, c, c, n, NULL, buf, c, n) == MUON_OK);
    CHECK(memcmp(buf, O, n * sizeof(float)) == 0 && memcmp(buf + n, O, n * sizeof(float)) == 0);
    /* SGEMM: C overlapping A or B is ALIAS */
    t_fill_matrix(buf, 2 * r, c, c, 1.0, 72);
    memcpy(snap, buf, 2 * n * sizeof(float));
    CHECK(muon_sgemm(MUON_NO_TRANS, MUON_TRANS, r, r, c, 1.0f, buf, c, G, c, 0.0f, buf + 4, c) == MUON_ERR_ALIAS);
    CHECK(muon_sgemm(MUON_NO_TRANS, MUON_TRANS, r, r, c, 1.0f, G, c, buf + 2, c, 1.0f, buf, c) == MUON_ERR_ALIAS);
    CHECK(muon_ssyrk(MUON_NO_TRANS, r, c, 1.0f, buf, c, 0.0f, buf + 1, c) == MUON_ERR_ALIAS);
    CHECK(memcmp(buf, snap, 2 * n * sizeof(float)) == 0);
    /* Muon step: G overlapping W is ALIAS, W and the state untouched */
    CHECK(muon_init(&st, r, c) == MUON_OK);
    t_fill_matrix(W, r, c, c, 0.2, 73);
    CHECK(muon_step(&st, &cfg, W, c, G, c, NULL, 0) == MUON_OK);
    t_fill_matrix(buf, 2 * r, c, c, 1.0, 74);
    memcpy(snap, buf, 2 * n * sizeof(float));
    {
        float *mom = t_floats(n);
        long long step = st.step;
        memcpy(mom, st.momentum, n * sizeof(float));
        CHECK(muon_step(&st, &cfg, buf, c, buf + 5, c, NULL, 0) == MUON_ERR_ALIAS);
        CHECK(muon_step(&st, &cfg, buf, c, buf, c, NULL, 0) == MUON_ERR_ALIAS);
        CHECK(memcmp(buf, snap, 2 * n * sizeof(float)) == 0);
        CHECK(memcmp(mom, st.momentum, n * sizeof(float)) == 0 && st.step == step);
        free(mom);
    }
    muon_free(&st);
    /* AdamW: param overlapping grad is ALIAS */
    {
        muon_adamw_state as;
        muon_adamw_config ac = muon_adamw_default();
        CHECK(muon_adamw_init(&as, n) == MUON_OK);
        CHECK(muon_adamw_step(&as, &ac, buf, buf + 1, NULL) == MUON_ERR_ALIAS);
        CHECK(memcmp(buf, snap, 2 * n * sizeof(float)) == 0 && as.step == 0);
        muon_adamw_free(&as);
    }
    free(buf);
    free(G);
    free(O);
    free(snap);
    free(W);
}

/* ---- overlaps are checked before contents (issue 40) -------------------------------------- */

/* A forbidden overlap is MUON_ERR_ALIAS whatever the overlapping bytes hold: each call below has
 * a value in the overlapped memory that a content check would refuse first (before the fix:
 * DOMAIN, SIZE and NONFINITE). Nothing is written. */
static void test_alias_before_content(void)
{
    const size_t r = 4, c = 6, n = r * c;
    size_t k;
    float *buf = t_floats(2 * n), *snap = t_floats(2 * n), *W1 = t_floats(n), *G0 = t_floats(n);
    double u[4], sigma = -1.0, *v;
    memset(buf, 0, 2 * n * sizeof(float)); /* the whole span compared below is defined (valgrind) */
    /* muon_top_singular_pair: v (the warm start, read) inside W, its bytes a NaN */
    t_fill_matrix(buf, r, c, c, 1.0, 80);
    v = (double *)(void *)(buf + 2);
    for (k = 0; k < c; k++) v[k] = NAN;
    memcpy(snap, buf, 2 * n * sizeof(float));
    CHECK(muon_top_singular_pair(buf, r, c, c, 2, u, v, &sigma) == MUON_ERR_ALIAS);
    CHECK(memcmp(buf, snap, 2 * n * sizeof(float)) == 0 && sigma == -1.0);
    /* muon_assign_owners: owner inside rows, which holds a zero dimension */
    {
        size_t rows[4] = {8, 0, 8, 8}, cols[4] = {8, 8, 8, 8}, keep[4];
        memcpy(keep, rows, sizeof rows);
        CHECK(muon_assign_owners(rows, cols, 4, 2, (int *)(void *)(rows + 1), NULL) == MUON_ERR_ALIAS);
        CHECK(memcmp(rows, keep, sizeof rows) == 0);
    }
    /* muon_step_layers: layer 1 reads its G from layer 0's W, which holds a NaN */
    {
        muon_state s0, s1;
        muon_config cfg = muon_default();
        muon_layer L[2];
        CHECK(muon_init(&s0, r, c) == MUON_OK && muon_init(&s1, r, c) == MUON_OK);
        t_fill_matrix(buf, r, c, c, 0.5, 81);
        t_fill_matrix(W1, r, c, c, 0.5, 82);
        t_fill_matrix(G0, r, c, c, 1.0, 83);
        buf[5] = NAN;
        memcpy(snap, buf, n * sizeof(float));
        memset(L, 0, sizeof L);
        L[0].state = &s0, L[0].cfg = &cfg, L[0].W = buf, L[0].ldw = c, L[0].G = G0, L[0].ldg = c;
        L[1].state = &s1, L[1].cfg = &cfg, L[1].W = W1, L[1].ldw = c, L[1].G = buf, L[1].ldg = c;
        CHECK(muon_step_layers(L, 2, 0) == MUON_ERR_ALIAS);
        CHECK(L[0].status == MUON_ERR_ALIAS && L[1].status == MUON_ERR_ALIAS);
        CHECK(memcmp(buf, snap, n * sizeof(float)) == 0 && s0.step == 0 && s1.step == 0);
        /* the same without the overlap: layer 1's NaN is its own NONFINITE, layer 0 passes */
        L[1].G = snap;
        CHECK(muon_step_layers(L, 2, 0) == MUON_ERR_NONFINITE);
        CHECK(L[0].status == MUON_OK && L[1].status == MUON_ERR_NONFINITE);
        muon_free(&s0);
        muon_free(&s1);
    }
    free(buf); free(snap); free(W1); free(G0);
}

/* ---- determinism ------------------------------------------------------------------------- */

/* Everything one "run" computes, flattened for a bitwise comparison. */
typedef struct {
    float *gemm[4], *syrk, *ns, *batched_conc, *batched_seq, *W_muon, *W_muown, *p_adamw, *clip;
    double sv[8], clip_total;
} edge_run;

#ifdef _OPENMP
#define EDGE_BIG 1
#else
#define EDGE_BIG 0
#endif
/* shapes: large enough in OpenMP builds to split the products and the elementwise passes
 * (65536 elements) across threads; small elsewhere (scalar, ASan, qemu) */
#define E_M (EDGE_BIG ? 157 : 37)
#define E_N (EDGE_BIG ? 203 : 45)
#define E_K (EDGE_BIG ? 131 : 29)
#define E_R (EDGE_BIG ? 200 : 24)
#define E_C (EDGE_BIG ? 344 : 40)
#define E_BATCH 6
#define E_BR 24
#define E_BC 40

static void edge_run_free(edge_run *e)
{
    int i;
    for (i = 0; i < 4; i++) free(e->gemm[i]);
    free(e->syrk);
    free(e->ns);
    free(e->batched_conc);
    free(e->batched_seq);
    free(e->W_muon);
    free(e->W_muown);
    free(e->p_adamw);
    free(e->clip);
}

static int edge_compute(edge_run *e)
{
    int bad = 0, t;
    size_t nm = (size_t)E_M * E_N, nk = (size_t)(E_M > E_N ? E_M : E_N) * E_K;
    float *A = t_floats(nk), *B = t_floats(nk), *G = t_floats((size_t)E_R * E_C);
    float *Gb = t_floats((size_t)E_BATCH * E_BR * E_BC);
    size_t i;
    memset(e, 0, sizeof *e);
    t_fill_matrix(A, nk, 1, 1, 1.0, 80);
    t_fill_matrix(B, nk, 1, 1, 1.0, 81);
    t_fill_matrix(G, E_R, E_C, E_C, 1.0, 82);
    t_fill_matrix(Gb, (size_t)E_BATCH * E_BR, E_BC, E_BC, 1.0, 83);
    /* all four transpose combinations, odd shapes, beta 1 on a filled C */
    for (t = 0; t < 4; t++) {
        muon_transpose ta = (muon_transpose)(t & 1), tb = (muon_transpose)(t >> 1);
        size_t lda = ta ? E_M : E_K, ldb = tb ? E_K : E_N;
        e->gemm[t] = t_floats(nm);
        t_fill_matrix(e->gemm[t], E_M, E_N, E_N, 1.0, 84);
        bad |= muon_sgemm(ta, tb, E_M, E_N, E_K, 0.75f, A, lda, B, ldb, 0.5f, e->gemm[t], E_N) != MUON_OK;
    }
    e->syrk = t_floats((size_t)E_M * E_M);
    t_fill_matrix(e->syrk, E_M, E_M, E_M, 1.0, 85);
    bad |= muon_ssyrk(MUON_NO_TRANS, E_M, E_K, 1.25f, A, E_K, 0.0f, e->syrk, E_M) != MUON_OK;
    e->ns = t_floats((size_t)E_R * E_C);
    bad |= muon_orthogonalize(G, E_R, E_C, E_C, NULL, e->ns, E_C) != MUON_OK;
    bad |= muon_singular_values(G, 8, 8, E_C, e->sv) != MUON_OK;
    /* batched: concurrent workspace and sequential workspace */
    {
        size_t nb = (size_t)E_BATCH * E_BR * E_BC, wsc = muon_orthogonalize_batched_workspace_size(E_BATCH, E_BR, E_BC);
        size_t wss = muon_orthogonalize_workspace_size(E_BR, E_BC);
        void *ws = malloc(wsc > wss ? wsc : wss);
        e->batched_conc = t_floats(nb);
        e->batched_seq = t_floats(nb);
        bad |= ws == NULL;
        if (ws) {
            bad |= muon_orthogonalize_batched_ws(Gb, E_BATCH, E_BR, E_BC, E_BC, (size_t)E_BR * E_BC, NULL,
                                                 e->batched_conc, E_BC, (size_t)E_BR * E_BC, ws, wsc) != MUON_OK;
            bad |= muon_orthogonalize_batched_ws(Gb, E_BATCH, E_BR, E_BC, E_BC, (size_t)E_BR * E_BC, NULL,
                                                 e->batched_seq, E_BC, (size_t)E_BR * E_BC, ws, wss) != MUON_OK;
        }
        free(ws);
    }
    /* three Muon steps with the spectral cap, weight decay and a QKV split */
    {
        muon_state st;
        muon_config cfg = muon_default();
        cfg.cap = MUON_CAP_GROWTH;
        cfg.weight_decay = 0.01;
        cfg.split_rows = 2;
        e->W_muon = t_floats((size_t)E_R * E_C);
        t_fill_matrix(e->W_muon, E_R, E_C, E_C, 0.05, 86);
        bad |= muon_init(&st, E_R, E_C) != MUON_OK;
        for (t = 0; t < 3 && !bad; t++) {
            for (i = 0; i < (size_t)E_R * E_C; i++) G[i] = G[i] * 0.9f + 0.01f * (float)t;
            bad |= muon_step(&st, &cfg, e->W_muon, E_C, G, E_C, NULL, 0) != MUON_OK;
        }
        muon_free(&st);
    }
    /* two Muown steps */
    {
        muown_state st;
        muown_config cfg = muown_default();
        e->W_muown = t_floats((size_t)E_R * E_C);
        t_fill_matrix(e->W_muown, E_R, E_C, E_C, 0.05, 87);
        bad |= muown_init(&st, e->W_muown, E_R, E_C, E_C) != MUON_OK;
        for (t = 0; t < 2 && !bad; t++) bad |= muown_step(&st, &cfg, e->W_muown, E_C, G, E_C, NULL, 0) != MUON_OK;
        muown_free(&st);
    }
    /* AdamW on the flattened matrix and clipping of two tensors */
    {
        muon_adamw_state st;
        muon_adamw_config cfg = muon_adamw_default();
        size_t n = (size_t)E_R * E_C, sizes[2];
        float *grads[2];
        double total = 0.0;
        e->p_adamw = t_floats(n);
        t_fill_matrix(e->p_adamw, n, 1, 1, 0.1, 88);
        bad |= muon_adamw_init(&st, n) != MUON_OK;
        for (t = 0; t < 2 && !bad; t++) bad |= muon_adamw_step(&st, &cfg, e->p_adamw, G, NULL) != MUON_OK;
        muon_adamw_free(&st);
        e->clip = t_floats(n + 1);
        memcpy(e->clip, G, n * sizeof(float));
        grads[0] = e->clip;
        grads[1] = e->clip + n / 3;
        sizes[0] = n / 3;
        sizes[1] = n - n / 3;
        bad |= muon_clip_grad_norm(grads, sizes, 2, 1.0, &total) != MUON_OK;
        e->clip_total = total;
    }
    free(A);
    free(B);
    free(G);
    free(Gb);
    return bad;
}

static int edge_same(const edge_run *a, const edge_run *b, const char **what)
{
    size_t nm = (size_t)E_M * E_N, nr = (size_t)E_R * E_C, nb = (size_t)E_BATCH * E_BR * E_BC;
    int t;
    for (t = 0; t < 4; t++)
        if (memcmp(a->gemm[t], b->gemm[t], nm * sizeof(float))) return *what = "sgemm", 0;
    if (memcmp(a->syrk, b->syrk, (size_t)E_M * E_M * sizeof(float))) return *what = "ssyrk", 0;
    if (memcmp(a->ns, b->ns, nr * sizeof(float))) return *what = "orthogonalize", 0;
    if (memcmp(a->sv, b->sv, sizeof a->sv)) return *what = "singular_values", 0;
    if (memcmp(a->batched_conc, b->batched_conc, nb * sizeof(float))) return *what = "batched", 0;
    if (memcmp(a->W_muon, b->W_muon, nr * sizeof(float))) return *what = "muon_step", 0;
    if (memcmp(a->W_muown, b->W_muown, nr * sizeof(float))) return *what = "muown_step", 0;
    if (memcmp(a->p_adamw, b->p_adamw, nr * sizeof(float))) return *what = "adamw_step", 0;
    if (memcmp(a->clip, b->clip, nr * sizeof(float)) || memcmp(&a->clip_total, &b->clip_total, sizeof(double)))
        return *what = "clip_grad_norm", 0;
    return 1;
}

static void test_determinism_threads(void)
{
    edge_run ref, run;
    const char *what = "";
    int nt;
    CHECK(edge_compute(&ref) == 0);
    /* the concurrent batch equals the sequential one bit for bit (documented) */
    CHECK(memcmp(ref.batched_conc, ref.batched_seq, (size_t)E_BATCH * E_BR * E_BC * sizeof(float)) == 0);
    /* the same run again */
    CHECK(edge_compute(&run) == 0);
    CHECK_MSG(edge_same(&ref, &run, &what), "second run differs in %s", what);
    edge_run_free(&run);
#if defined(_OPENMP) && !defined(MUON_USE_CBLAS)
    {
        int saved = omp_get_max_threads();
        for (nt = 1; nt <= 3; nt++) {
            omp_set_num_threads(nt);
            CHECK(edge_compute(&run) == 0);
            CHECK_MSG(edge_same(&ref, &run, &what), "%d threads differ in %s", nt, what);
            edge_run_free(&run);
        }
        omp_set_num_threads(saved);
    }
#else
    (void)nt;
#endif
    edge_run_free(&ref);
}

/* muon_config.threads: each team size (1: no region; 0: the OpenMP default; above the
 * OpenMP default too) gives the same bits for Muon and Muown, above the parallel thresholds;
 * a negative count is DOMAIN with nothing written. */
static void test_config_threads(void)
{
    const size_t r = 256, c = 384, n = r * c;
    float *W0 = t_floats(n), *G = t_floats(n), *W = t_floats(n), *S = t_floats(n), *Wref = t_floats(n),
          *Sref = t_floats(n), *Mref = t_floats(n);
    static const int counts[5] = {1, 0, 2, 3, INT_MAX}; /* 3, INT_MAX: capped at the OpenMP default */
    int k, t;
    t_fill_matrix(W0, r, c, c, 0.05, 120);
    t_fill_matrix(G, r, c, c, 1.0, 121);
    for (k = 0; k < 5; k++) {
        muon_state st;
        muown_state ow;
        muon_config cfg = muon_default();
        muown_config ocfg = muown_default();
        cfg.threads = counts[k];
        cfg.weight_decay = 0.01;
        ocfg.muon.threads = counts[k];
        memcpy(W, W0, n * sizeof(float));
        CHECK(muon_init(&st, r, c) == MUON_OK);
        for (t = 0; t < 2; t++) CHECK(muon_step(&st, &cfg, W, c, G, c, S, c) == MUON_OK);
        if (k == 0) {
            memcpy(Wref, W, n * sizeof(float));
            memcpy(Sref, S, n * sizeof(float));
        } else {
            CHECK_MSG(memcmp(W, Wref, n * sizeof(float)) == 0 && memcmp(S, Sref, n * sizeof(float)) == 0,
                      "muon_step with threads = %d differs from threads = 1", counts[k]);
        }
        cfg.threads = -1;
        memcpy(S, W, n * sizeof(float));
        CHECK(muon_step(&st, &cfg, W, c, G, c, NULL, 0) == MUON_ERR_DOMAIN);
        CHECK(memcmp(S, W, n * sizeof(float)) == 0 && st.step == 2);
        muon_free(&st);
        memcpy(W, W0, n * sizeof(float));
        CHECK(muown_init(&ow, W, r, c, c) == MUON_OK);
        CHECK(muown_step(&ow, &ocfg, W, c, G, c, NULL, 0) == MUON_OK);
        if (k == 0) memcpy(Mref, W, n * sizeof(float));
        else CHECK_MSG(memcmp(W, Mref, n * sizeof(float)) == 0, "muown_step with threads = %d differs", counts[k]);
        muown_free(&ow);
    }
#ifdef _OPENMP
    { /* a count above a host's one-thread OpenMP setting is held to it, same bits */
        int saved = omp_get_max_threads();
        muon_state st;
        muon_config cfg = muon_default();
        cfg.threads = 2;
        cfg.weight_decay = 0.01;
        omp_set_num_threads(1);
        memcpy(W, W0, n * sizeof(float));
        CHECK(muon_init(&st, r, c) == MUON_OK);
        for (t = 0; t < 2; t++) CHECK(muon_step(&st, &cfg, W, c, G, c, S, c) == MUON_OK);
        CHECK(memcmp(W, Wref, n * sizeof(float)) == 0);
        muon_free(&st);
        omp_set_num_threads(saved);
    }
#endif
    free(W0);
    free(G);
    free(W);
    free(S);
    free(Wref);
    free(Sref);
    free(Mref);
}

/* SGEMM with a workspace sized for 1..4 threads: bit-identical (documented) */
static void test_gemm_workspace_sizes(void)
{
    const size_t m = 70, n = 90, k = 50;
    float *A = t_floats(m * k), *B = t_floats(k * n), *C1 = t_floats(m * n), *C = t_floats(m * n);
    int t;
    size_t big = muon_gemm_workspace_size(4);
    void *ws = malloc(big);
    t_fill_matrix(A, m, k, k, 1.0, 90);
    t_fill_matrix(B, k, n, n, 1.0, 91);
    CHECK(ws != NULL);
    CHECK(muon_sgemm_ws(MUON_NO_TRANS, MUON_NO_TRANS, m, n, k, 1.0f, A, k, B, n, 0.0f, C1, n, ws,
                        muon_gemm_workspace_size(1)) == MUON_OK);
    for (t = 2; t <= 4; t++) {
        CHECK(muon_sgemm_ws(MUON_NO_TRANS, MUON_NO_TRANS, m, n, k, 1.0f, A, k, B, n, 0.0f, C, n, ws,
                            muon_gemm_workspace_size(t)) == MUON_OK);
        CHECK_MSG(memcmp(C, C1, m * n * sizeof(float)) == 0, "workspace for %d threads differs", t);
    }
    free(ws);
    free(A);
    free(B);
    free(C1);
    free(C);
}

int main(void)
{
    RUN(test_ns_scaled_norms);
    RUN(test_ns_huge_tiny_default_eps);
    RUN(test_sv_scaled);
    RUN(test_zero_gradients);
    RUN(test_vectors);
    RUN(test_leading_dimensions);
    RUN(test_aliasing_rules);
    RUN(test_alias_before_content);
    RUN(test_determinism_threads);
    RUN(test_config_threads);
    RUN(test_gemm_workspace_sizes);
    return TEST_REPORT();
}
