/* test_hostile_muon.c - the contract holes that hostile inputs found in muon.h (issue 14,
 * items 1, 4 and 5 on the header side).
 *
 * The contract: every step function either produces finite output or returns an error with
 * its outputs and its whole state byte-identical to before the call. Each test below builds
 * the input that broke it (finite gradients that overflow the SUM momentum, learning rates
 * and decays whose products overflow, schedules whose polynomials overflow float, Inf in W
 * under the spectral cap, NaN in the cap's singular pair, AdamW gradients whose squares
 * overflow float, step counters at the edge of their type, a tensor listed twice for
 * clipping, negative singular values, a batch read from one matrix) and checks the status
 * and the bytes. Each of them failed on the header before the fix (the commit says how).
 */
#define MUON_IMPLEMENTATION
#include "muon.h"
#include "test.h"

#include <float.h>
#include <limits.h>

static float *h_alloc(size_t n)
{
    float *p = (float *)calloc(n ? n : 1, sizeof(float));
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

static float *h_copy(const float *a, size_t n)
{
    float *p = h_alloc(n);
    memcpy(p, a, n * sizeof(float));
    return p;
}

static int h_finite(const float *a, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (!t_finite(a[i])) return 0;
    return 1;
}

static void h_fill(float *a, size_t n, double scale, unsigned long long seed)
{
    t_rng r;
    size_t i;
    r.s = seed;
    for (i = 0; i < n; i++) a[i] = (float)(scale * t_rng_normal(&r));
}

/* A byte snapshot of a muon_state: the struct and every buffer it owns. */
typedef struct {
    muon_state st;
    float *mom;
    double *cu, *cv;
} muon_snap;

static void muon_snap_take(muon_snap *s, const muon_state *st)
{
    s->st = *st;
    s->mom = h_copy(st->momentum, st->rows * st->cols);
    s->cu = (double *)malloc(st->rows * sizeof(double));
    s->cv = (double *)malloc(st->cols * sizeof(double));
    if (!s->cu || !s->cv) exit(2);
    memcpy(s->cu, st->cap_u, st->rows * sizeof(double));
    memcpy(s->cv, st->cap_v, st->cols * sizeof(double));
}

static int muon_snap_same(const muon_snap *s, const muon_state *st)
{
    return memcmp(&s->st, st, sizeof *st) == 0 &&
           memcmp(s->mom, st->momentum, st->rows * st->cols * sizeof(float)) == 0 &&
           memcmp(s->cu, st->cap_u, st->rows * sizeof(double)) == 0 &&
           memcmp(s->cv, st->cap_v, st->cols * sizeof(double)) == 0;
}

static void muon_snap_free(muon_snap *s)
{
    free(s->mom);
    free(s->cu);
    free(s->cv);
}

/* One muon_step that must fail with `want` and leave W and the state as they were. */
static void expect_muon_refused(muon_state *st, const muon_config *cfg, float *W, const float *G,
                                muon_status want, const char *what)
{
    size_t n = st->rows * st->cols;
    float *W0 = h_copy(W, n);
    muon_snap snap;
    muon_status s;
    muon_snap_take(&snap, st);
    s = muon_step(st, cfg, W, st->cols, G, st->cols, NULL, 0);
    CHECK_MSG(s == want, "%s: status %d (%s), want %d", what, (int)s, muon_status_string(s), (int)want);
    CHECK_MSG(memcmp(W, W0, n * sizeof(float)) == 0, "%s: W changed", what);
    CHECK_MSG(muon_snap_same(&snap, st), "%s: state changed", what);
    muon_snap_free(&snap);
    free(W0);
}

/* Item 1: the SUM momentum B <- beta B + G overflows float for finite G (|G| near FLT_MAX/20
 * and above); before the fix the step returned MUON_OK with W all NaN and B Inf. */
static void test_sum_momentum_overflow(void)
{
    muon_state st;
    muon_config cfg = muon_default();
    size_t rows = 8, cols = 16, n = rows * cols, i;
    float *W = h_alloc(n), *G = h_alloc(n);
    int nest;
    for (nest = 0; nest <= 1; nest++) {
        CHECK(muon_init(&st, rows, cols) == MUON_OK);
        cfg.momentum_form = MUON_MOMENTUM_SUM;
        cfg.nesterov = nest;
        for (i = 0; i < n; i++) {
            W[i] = 0.01f;
            G[i] = (float)((double)((int)(i % 3) - 1) * 2e38);
        }
        /* one step: 0.95 * 0 + 2e38 fits; Nesterov's G + beta B = 3.9e38 does not */
        if (nest) {
            expect_muon_refused(&st, &cfg, W, G, MUON_ERR_RANGE, "SUM nesterov, first step");
        } else {
            CHECK(muon_step(&st, &cfg, W, cols, G, cols, NULL, 0) == MUON_OK);
            CHECK(h_finite(W, n) && h_finite(st.momentum, n));
            /* second step: B = 0.95 * 2e38 + 2e38 = 3.9e38 overflows */
            expect_muon_refused(&st, &cfg, W, G, MUON_ERR_RANGE, "SUM plain, second step");
        }
        /* the EMA form is a convex combination: never overflows, same input is fine */
        cfg.momentum_form = MUON_MOMENTUM_EMA;
        for (i = 0; i < 3; i++) CHECK(muon_step(&st, &cfg, W, cols, G, cols, NULL, 0) == MUON_OK);
        CHECK(h_finite(W, n) && h_finite(st.momentum, n));
        muon_free(&st);
    }
    free(W);
    free(G);
}

/* Item 1: learning rate and decay domains, the same in muon.h and rownorm.h. */
static void test_lr_wd_domain(void)
{
    muon_state st;
    muon_config cfg = muon_default(), bad;
    size_t rows = 6, cols = 10, n = rows * cols;
    float *W = h_alloc(n), *G = h_alloc(n);
    h_fill(W, n, 0.1, 1);
    h_fill(G, n, 1.0, 2);
    CHECK(muon_init(&st, rows, cols) == MUON_OK);
    bad = cfg; bad.lr = 1e200; bad.weight_decay = 1e200;
    expect_muon_refused(&st, &bad, W, G, MUON_ERR_DOMAIN, "lr*wd overflowing");
    bad = cfg; bad.lr = 1e300;
    expect_muon_refused(&st, &bad, W, G, MUON_ERR_DOMAIN, "lr 1e300");
    bad = cfg; bad.lr = 2.0 * MUON_LR_MAX;
    expect_muon_refused(&st, &bad, W, G, MUON_ERR_DOMAIN, "lr 2 MUON_LR_MAX");
    bad = cfg; bad.lr = 0.5; bad.weight_decay = 3.0;
    expect_muon_refused(&st, &bad, W, G, MUON_ERR_DOMAIN, "lr*wd 1.5");
    bad = cfg; bad.lr = 0.5; bad.weight_decay = 2.0; /* lr*wd = 1: W <- S, allowed */
    CHECK(muon_step(&st, &bad, W, cols, G, cols, NULL, 0) == MUON_OK);
    CHECK(h_finite(W, n));
    /* lr at the bound: the step overflows float, which is reported, not written */
    bad = cfg; bad.lr = MUON_LR_MAX; bad.scale = MUON_SCALE_MATCH_ADAMW; bad.scale_coeff = 1e10;
    expect_muon_refused(&st, &bad, W, G, MUON_ERR_RANGE, "lr 1e30 x scale 1e10");
    /* a scale coefficient that overflows the float step by itself */
    bad = cfg; bad.scale = MUON_SCALE_MATCH_ADAMW; bad.scale_coeff = 1e300;
    expect_muon_refused(&st, &bad, W, G, MUON_ERR_RANGE, "scale_coeff 1e300");
    /* W at +-FLT_MAX plus a finite step (about 1e32, above FLT_MAX's half ulp 1e31) that
     * carries some entry over */
    {
        float *Wb = h_copy(W, n);
        size_t i;
        bad = cfg; bad.lr = MUON_LR_MAX; bad.scale = MUON_SCALE_MATCH_ADAMW; bad.scale_coeff = 100.0;
        for (i = 0; i < n; i++) Wb[i] = i < n / 2 ? FLT_MAX : -FLT_MAX;
        expect_muon_refused(&st, &bad, Wb, G, MUON_ERR_RANGE, "W + step past FLT_MAX");
        free(Wb);
    }
    /* a NaN already in W stays in its own entry (W is not checked without the cap) */
    {
        float *Wn = h_copy(W, n);
        size_t i, others = 1;
        Wn[5] = NAN;
        CHECK(muon_step(&st, &cfg, Wn, cols, G, cols, NULL, 0) == MUON_OK);
        CHECK(t_isnan(Wn[5]));
        for (i = 0; i < n; i++)
            if (i != 5 && !t_finite(Wn[i])) others = 0;
        CHECK(others);
        free(Wn);
    }
    muon_free(&st);
    free(W);
    free(G);
}

/* Item 1: schedules with finite but huge coefficients (or a tiny safety) overflow float
 * inside NS; they are outside the schedule domain (the iteration's bound is computed from the
 * coefficients) and rejected before anything is written. */
static void test_ns_overflowing_schedules(void)
{
    size_t rows = 8, cols = 12, n = rows * cols;
    float *G = h_alloc(n), *O = h_alloc(n), *O0;
    muon_ns_config ns = muon_ns_preset(MUON_NS_JORDAN, 0), bad;
    muon_state st;
    muon_config cfg = muon_default();
    float *W = h_alloc(n);
    h_fill(G, n, 1.0, 3);
    h_fill(O, n, 1.0, 4);
    h_fill(W, n, 0.1, 5);
    O0 = h_copy(O, n);
    bad = ns;
    bad.count = 1; bad.steps = 5; bad.coeffs[0][0] = 1e30; bad.coeffs[0][1] = 0.0; bad.coeffs[0][2] = 0.0;
    bad.mode = MUON_NS_REPEAT_LAST; bad.safety = 1.0;
    CHECK(muon_orthogonalize(G, rows, cols, cols, &bad, O, cols) == MUON_ERR_DOMAIN);
    CHECK(memcmp(O, O0, n * sizeof(float)) == 0);
    CHECK(t_isnan(muon_ns_transfer(&bad, 0.5))); /* NaN: invalid */
    bad.coeffs[0][0] = 3.0; bad.coeffs[0][2] = 1e30; /* the x^5 term */
    CHECK(muon_orthogonalize(G, rows, cols, cols, &bad, O, cols) == MUON_ERR_DOMAIN);
    bad.coeffs[0][2] = 0.0; bad.coeffs[0][0] = 10.0; bad.steps = 40; /* 10^40 after 40 steps */
    CHECK(muon_orthogonalize(G, rows, cols, cols, &bad, O, cols) == MUON_ERR_DOMAIN);
    bad.steps = 9; /* singular values up to 10^9, their squares 10^18 < 2^64: accepted, finite */
    CHECK(muon_orthogonalize(G, rows, cols, cols, &bad, O, cols) == MUON_OK);
    CHECK(h_finite(O, n));
    memcpy(O, O0, n * sizeof(float));
    bad = ns; bad.count = 1; bad.steps = 3; bad.safety = 1e-30; /* X0 with sigma up to 1e30 */
    bad.coeffs[0][0] = 3.4445; bad.coeffs[0][1] = -4.775; bad.coeffs[0][2] = 2.0315;
    CHECK(muon_orthogonalize(G, rows, cols, cols, &bad, O, cols) == MUON_ERR_DOMAIN);
    CHECK(memcmp(O, O0, n * sizeof(float)) == 0);
    /* Gram form too, and the batched and step paths share the rule */
    bad = ns; bad.count = 1; bad.steps = 5; bad.coeffs[0][0] = 1e30; bad.coeffs[0][1] = 0.0;
    bad.coeffs[0][2] = 0.0; bad.method = MUON_NS_GRAM;
    CHECK(muon_orthogonalize(G, 4, 12, 12, &bad, O, 12) == MUON_ERR_DOMAIN);
    CHECK(muon_orthogonalize_batched(G, 2, 4, 12, 12, 48, &bad, O, 12, 48) == MUON_ERR_DOMAIN);
    CHECK(memcmp(O, O0, n * sizeof(float)) == 0);
    CHECK(muon_init(&st, rows, cols) == MUON_OK);
    cfg.ns = bad;
    expect_muon_refused(&st, &cfg, W, G, MUON_ERR_DOMAIN, "step with 1e30 coefficients");
    /* every preset, at its own and at the largest step count, is inside the domain */
    {
        int k;
        for (k = 0; k < 4; k++) {
            muon_ns_config p = muon_ns_preset((muon_ns_kind)k, 0);
            CHECK_MSG(muon_orthogonalize(G, rows, cols, cols, &p, O, cols) == MUON_OK, "preset %d", k);
            p = muon_ns_preset((muon_ns_kind)k, MUON_NS_MAX_STEPS);
            CHECK_MSG(muon_orthogonalize(G, rows, cols, cols, &p, O, cols) == MUON_OK, "preset %d x max", k);
            CHECK(h_finite(O, n));
        }
    }
    muon_free(&st);
    free(G);
    free(O);
    free(O0);
    free(W);
}

/* Item 1: the spectral cap reads W; an Inf there made the step store cap_sigma = NaN. */
static void test_cap_nonfinite(void)
{
    muon_state st;
    muon_config cfg = muon_default();
    size_t rows = 6, cols = 9, n = rows * cols;
    float *W = h_alloc(n), *G = h_alloc(n), *D = h_alloc(n), *D0;
    double u[6], v[9];
    size_t i;
    h_fill(W, n, 0.2, 7);
    h_fill(G, n, 1.0, 8);
    cfg.cap = MUON_CAP_GROWTH;
    CHECK(muon_init(&st, rows, cols) == MUON_OK);
    CHECK(muon_step(&st, &cfg, W, cols, G, cols, NULL, 0) == MUON_OK); /* a valid warm pair */
    W[7] = INFINITY;
    expect_muon_refused(&st, &cfg, W, G, MUON_ERR_NONFINITE, "cap with Inf in W");
    W[7] = NAN;
    cfg.cap = MUON_CAP_ALWAYS;
    expect_muon_refused(&st, &cfg, W, G, MUON_ERR_NONFINITE, "cap with NaN in W");
    muon_free(&st);
    /* muon_spectral_cap with NaN in u or v: before the fix ALWAYS wrote NaN into D */
    h_fill(D, n, 1.0, 9);
    D0 = h_copy(D, n);
    for (i = 0; i < rows; i++) u[i] = 1.0 / sqrt((double)rows);
    for (i = 0; i < cols; i++) v[i] = 1.0 / sqrt((double)cols);
    u[2] = NAN;
    CHECK(muon_spectral_cap(D, rows, cols, cols, u, v, MUON_CAP_ALWAYS, NULL) == MUON_ERR_NONFINITE);
    CHECK(muon_spectral_cap(D, rows, cols, cols, u, v, MUON_CAP_GROWTH, NULL) == MUON_ERR_NONFINITE);
    u[2] = 0.1;
    v[4] = INFINITY;
    CHECK(muon_spectral_cap(D, rows, cols, cols, u, v, MUON_CAP_ALWAYS, NULL) == MUON_ERR_NONFINITE);
    CHECK(memcmp(D, D0, n * sizeof(float)) == 0);
    v[4] = 0.1;
    D[3] = NAN;
    CHECK(muon_spectral_cap(D, rows, cols, cols, u, v, MUON_CAP_ALWAYS, NULL) == MUON_ERR_NONFINITE);
    free(W);
    free(G);
    free(D);
    free(D0);
}

/* Item 1: AdamW's second moment v = beta2 v + (1 - beta2) g^2 overflowed float for |g| >= ~6e20
 * and stayed Inf (the entry then never moved again: m / Inf = 0). */
static void test_adamw_moments_finite(void)
{
    muon_adamw_state st;
    muon_adamw_config cfg = muon_adamw_default();
    size_t n = 16, i, k;
    float p[16], g[16], p1[16];
    cfg.weight_decay = 0.0;
    CHECK(muon_adamw_init(&st, n) == MUON_OK);
    for (i = 0; i < n; i++) {
        p[i] = 0.5f;
        g[i] = i == 3 ? 1e30f : 0.25f;
    }
    CHECK(muon_adamw_step(&st, &cfg, p, g, NULL) == MUON_OK);
    CHECK(h_finite(st.m, n) && h_finite(st.v, n) && h_finite(p, n));
    /* ordinary gradients afterwards: entry 3 keeps moving (it froze before) */
    for (i = 0; i < n; i++) g[i] = 0.25f;
    memcpy(p1, p, sizeof p);
    for (k = 0; k < 3; k++) CHECK(muon_adamw_step(&st, &cfg, p, g, NULL) == MUON_OK);
    CHECK(p[3] != p1[3]);
    CHECK(h_finite(st.v, n) && h_finite(p, n));
    /* FLT_MAX gradients: still finite */
    for (i = 0; i < n; i++) g[i] = (i & 1) ? FLT_MAX : -FLT_MAX;
    for (k = 0; k < 3; k++) CHECK(muon_adamw_step(&st, &cfg, p, g, NULL) == MUON_OK);
    CHECK(h_finite(st.m, n) && h_finite(st.v, n) && h_finite(p, n));
    muon_adamw_free(&st);
}

/* AdamW domains, its counter, and a hostile state whose update would overflow p. */
static void test_adamw_refusals(void)
{
    muon_adamw_state st;
    muon_adamw_config cfg = muon_adamw_default(), bad;
    size_t n = 8, i;
    float p[8], g[8], p0[8], m0[8], v0[8];
    long long s0;
    CHECK(muon_adamw_init(&st, n) == MUON_OK);
    for (i = 0; i < n; i++) {
        p[i] = 1.0f;
        g[i] = 0.5f;
    }
    CHECK(muon_adamw_step(&st, &cfg, p, g, NULL) == MUON_OK);
#define SNAP() (memcpy(p0, p, sizeof p), memcpy(m0, st.m, sizeof m0), memcpy(v0, st.v, sizeof v0), s0 = st.step)
#define SAME() (memcmp(p0, p, sizeof p) == 0 && memcmp(m0, st.m, sizeof m0) == 0 && \
                memcmp(v0, st.v, sizeof v0) == 0 && s0 == st.step)
    SNAP();
    bad = cfg; bad.lr = 1e300;
    CHECK(muon_adamw_step(&st, &bad, p, g, NULL) == MUON_ERR_DOMAIN && SAME());
    bad = cfg; bad.lr = 1e200; bad.weight_decay = 1e200;
    CHECK(muon_adamw_step(&st, &bad, p, g, NULL) == MUON_ERR_DOMAIN && SAME());
    bad = cfg; bad.lr = 0.5; bad.weight_decay = 4.0;
    CHECK(muon_adamw_step(&st, &bad, p, g, NULL) == MUON_ERR_DOMAIN && SAME());
    /* counters: -1 made t = 0 and 1 - beta^0 = 0 (NaN); LLONG_MAX overflowed t */
    st.step = -1;
    SNAP();
    CHECK(muon_adamw_step(&st, &cfg, p, g, NULL) == MUON_ERR_DOMAIN && SAME());
    st.step = LLONG_MAX;
    SNAP();
    CHECK(muon_adamw_step(&st, &cfg, p, g, NULL) == MUON_ERR_DOMAIN && SAME());
    st.step = LLONG_MAX - 1; /* the last step the counter can take */
    CHECK(muon_adamw_step(&st, &cfg, p, g, NULL) == MUON_OK && st.step == LLONG_MAX && h_finite(p, n));
    /* a hostile state: m huge, v zero (and a tiny gradient): lr m / eps overflows p; refused,
     * nothing written */
    st.step = 10;
    for (i = 0; i < n; i++) {
        st.m[i] = 1e38f;
        st.v[i] = 0.0f;
        g[i] = 1e-30f;
    }
    SNAP();
    CHECK(muon_adamw_step(&st, &cfg, p, g, NULL) == MUON_ERR_RANGE && SAME());
    /* a NaN in the state is a non-finite input */
    st.m[2] = NAN;
    SNAP();
    CHECK(muon_adamw_step(&st, &cfg, p, g, NULL) == MUON_ERR_NONFINITE);
    CHECK(memcmp(p0, p, sizeof p) == 0 && s0 == st.step);
    /* a NaN or Inf gradient (issue 40: under -Ofast the check was folded away, MUON_OK, and
     * NaN written into p, m and v); NaN decay rates and lr are refused too */
    for (i = 0; i < n; i++) {
        st.m[i] = 0.01f;
        st.v[i] = 1e-4f;
        g[i] = 0.5f;
    }
    for (i = 0; i < 2; i++) {
        g[3] = i ? INFINITY : NAN;
        SNAP();
        CHECK(muon_adamw_step(&st, &cfg, p, g, NULL) == MUON_ERR_NONFINITE && SAME());
    }
    g[3] = 0.5f;
    bad = cfg; bad.beta1 = NAN;
    CHECK(muon_adamw_step(&st, &bad, p, g, NULL) == MUON_ERR_DOMAIN && SAME());
    bad = cfg; bad.beta2 = NAN;
    CHECK(muon_adamw_step(&st, &bad, p, g, NULL) == MUON_ERR_DOMAIN && SAME());
    bad = cfg; bad.lr = NAN;
    CHECK(muon_adamw_step(&st, &bad, p, g, NULL) == MUON_ERR_DOMAIN && SAME());
    bad = cfg; bad.weight_decay = NAN;
    CHECK(muon_adamw_step(&st, &bad, p, g, NULL) == MUON_ERR_DOMAIN && SAME());
    CHECK(muon_adamw_step(&st, &cfg, p, g, NULL) == MUON_OK && h_finite(p, n));
#undef SNAP
#undef SAME
    muon_adamw_free(&st);
}

/* Item 5 (header side): step counters near LLONG_MAX (from a checkpoint) overflowed in
 * muon_step and muown_step (signed overflow: UB). */
static void test_step_counters(void)
{
    muon_state st;
    muown_state ow;
    muon_config cfg = muon_default();
    muown_config oc = muown_default();
    size_t rows = 4, cols = 8, n = rows * cols;
    float *W = h_alloc(n), *G = h_alloc(n), *W0;
    h_fill(W, n, 0.3, 11);
    h_fill(G, n, 1.0, 12);
    W0 = h_copy(W, n);
    CHECK(muon_init(&st, rows, cols) == MUON_OK);
    st.step = LLONG_MAX;
    expect_muon_refused(&st, &cfg, W, G, MUON_ERR_DOMAIN, "muon step LLONG_MAX");
    st.step = -5;
    expect_muon_refused(&st, &cfg, W, G, MUON_ERR_DOMAIN, "muon step negative");
    st.step = LLONG_MAX - 1;
    CHECK(muon_step(&st, &cfg, W, cols, G, cols, NULL, 0) == MUON_OK && st.step == LLONG_MAX);
    muon_free(&st);
    memcpy(W, W0, n * sizeof(float));
    CHECK(muown_init(&ow, W, rows, cols, cols) == MUON_OK);
    ow.step = LLONG_MAX;
    CHECK(muown_step(&ow, &oc, W, cols, G, cols, NULL, 0) == MUON_ERR_DOMAIN);
    CHECK(memcmp(W, W0, n * sizeof(float)) == 0 && ow.step == LLONG_MAX);
    ow.step = -1; /* t = 0: Adam's bias correction 1 - beta^0 = 0 divided the magnitudes by 0 */
    CHECK(muown_step(&ow, &oc, W, cols, G, cols, NULL, 0) == MUON_ERR_DOMAIN);
    CHECK(memcmp(W, W0, n * sizeof(float)) == 0);
    muown_free(&ow);
    free(W);
    free(G);
    free(W0);
}

/* Muown: the same momentum overflow, and a magnitude rate that overflows the row magnitudes. */
static void test_muown_overflow(void)
{
    muown_state ow;
    muown_config oc = muown_default();
    size_t rows = 4, cols = 8, n = rows * cols, i;
    float *W = h_alloc(n), *G = h_alloc(n), *W0;
    double g0[4], m0[4], v0[4];
    float *B0;
    h_fill(W, n, 0.3, 13);
    W0 = h_copy(W, n);
    CHECK(muown_init(&ow, W, rows, cols, cols) == MUON_OK);
    B0 = h_copy(ow.momentum, n);
    memcpy(g0, ow.g, sizeof g0);
    memcpy(m0, ow.mag_m, sizeof m0);
    memcpy(v0, ow.mag_v, sizeof v0);
    for (i = 0; i < n; i++) G[i] = (float)((double)((int)(i % 3) - 1) * 3e38);
    oc.muon.momentum_form = MUON_MOMENTUM_SUM;
    oc.muon.nesterov = 1;
    CHECK(muown_step(&ow, &oc, W, cols, G, cols, NULL, 0) == MUON_ERR_RANGE);
    CHECK(memcmp(W, W0, n * sizeof(float)) == 0 && memcmp(B0, ow.momentum, n * sizeof(float)) == 0);
    CHECK(memcmp(g0, ow.g, sizeof g0) == 0 && memcmp(m0, ow.mag_m, sizeof m0) == 0 && ow.step == 0);
    /* Signum magnitudes with mag_lr 1e300: |g| past FLT_MAX would make W Inf */
    h_fill(G, n, 1.0, 14);
    oc = muown_default();
    oc.magnitude = MUOWN_MAG_SIGNUM;
    oc.mag_lr = 1e300;
    CHECK(muown_step(&ow, &oc, W, cols, G, cols, NULL, 0) == MUON_ERR_RANGE);
    CHECK(memcmp(W, W0, n * sizeof(float)) == 0 && memcmp(g0, ow.g, sizeof g0) == 0 &&
          memcmp(v0, ow.mag_v, sizeof v0) == 0 && ow.step == 0);
    oc.mag_lr = 1e-3; /* and the same state steps fine afterwards */
    CHECK(muown_step(&ow, &oc, W, cols, G, cols, NULL, 0) == MUON_OK && h_finite(W, n));
    muown_free(&ow);
    free(W);
    free(G);
    free(W0);
    free(B0);
}

/* Item 4: a tensor listed twice was scaled twice; the list functions now refuse overlap. */
static void test_clip_aliases(void)
{
    float a[8], b[8], a0[8], b0[8];
    float *list[3];
    size_t sizes[3] = {8, 8, 8}, i;
    double tot = -1.0;
    for (i = 0; i < 8; i++) {
        a[i] = 10.0f + (float)i;
        b[i] = -3.0f;
    }
    memcpy(a0, a, sizeof a);
    memcpy(b0, b, sizeof b);
    list[0] = a; list[1] = b; list[2] = a;
    CHECK(muon_clip_grad_norm(list, sizes, 3, 1.0, &tot) == MUON_ERR_ALIAS);
    CHECK(memcmp(a, a0, sizeof a) == 0 && memcmp(b, b0, sizeof b) == 0 && tot == -1.0);
    list[2] = a + 4; sizes[2] = 4; /* a partial overlap */
    CHECK(muon_clip_grad_norm(list, sizes, 3, 1.0, &tot) == MUON_ERR_ALIAS);
    CHECK(memcmp(a, a0, sizeof a) == 0);
    sizes[2] = 0; /* an empty tensor overlaps nothing */
    CHECK(muon_clip_grad_norm(list, sizes, 3, 1.0, &tot) == MUON_OK);
    {
        double want = 0.0;
        for (i = 0; i < 8; i++) want += (double)a0[i] * a0[i] + (double)b0[i] * b0[i];
        CHECK_NEAR(tot, sqrt(want), 0.0, 1e-15);
        CHECK_NEAR(a[0], a0[0] / sqrt(want), 0.0, 1e-6);
    }
}

/* Item 4: negative singular values are outside the domain of the budget chooser. */
static void test_ns_choose_negative(void)
{
    double sv[4] = {1.0, 0.5, 0.2, -0.1};
    muon_ns_config out;
    size_t idx;
    CHECK(muon_ns_choose(sv, 4, 0.1, 0.5, 20, NULL, 0, &out, &idx) == MUON_ERR_DOMAIN);
    sv[3] = 0.05;
    CHECK(muon_ns_choose(sv, 4, 0.1, 0.5, 20, NULL, 0, &out, &idx) == MUON_OK);
}

/* Item 4: a batch that reads one matrix count times (stride_g = 0) is a valid read-only input. */
static void test_batched_stride_zero(void)
{
    size_t rows = 5, cols = 7, n = rows * cols, count = 3, i;
    float *G = h_alloc(n), *O = h_alloc(count * n), *R = h_alloc(n);
    h_fill(G, n, 1.0, 21);
    CHECK(muon_orthogonalize(G, rows, cols, cols, NULL, R, cols) == MUON_OK);
    CHECK(muon_orthogonalize_batched(G, count, rows, cols, cols, 0, NULL, O, cols, n) == MUON_OK);
    for (i = 0; i < count; i++) CHECK(memcmp(O + i * n, R, n * sizeof(float)) == 0);
    /* in place with stride 0 would write one matrix three times: still an alias */
    CHECK(muon_orthogonalize_batched(G, count, rows, cols, cols, 0, NULL, G, cols, n) == MUON_ERR_ALIAS);
    free(G);
    free(O);
    free(R);
}

int main(void)
{
    RUN(test_sum_momentum_overflow);
    RUN(test_lr_wd_domain);
    RUN(test_ns_overflowing_schedules);
    RUN(test_cap_nonfinite);
    RUN(test_adamw_moments_finite);
    RUN(test_adamw_refusals);
    RUN(test_step_counters);
    RUN(test_muown_overflow);
    RUN(test_clip_aliases);
    RUN(test_ns_choose_negative);
    RUN(test_batched_stride_zero);
    return TEST_REPORT();
}
