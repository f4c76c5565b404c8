/* tests/test_rownorm_shard.c - rownorm.h with the vocabulary split across processes
 * (SPEC.md sections 1.2, 1.3, 1.5): the phased RowNorm step, the sharded Hilbert RMS and the
 * block-pair exact diameter with its ring schedule. The processes are simulated in one
 * process: every "rank" has its own state and buffers, and the all-reduces are done here
 * (a sum over the ranks in rank order). The unsharded calls are the references for the
 * bit-for-bit claims; float64 brute force (written here from the SPEC) for the rest.
 * Built by `make test` as C99 and C++ in every variant. */
#include <stdlib.h>
#define ROWNORM_IMPLEMENTATION
#include "rownorm.h"
#include "test.h"
#include <float.h>
#include <stdint.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define NANF ((float)NAN)
#define MAXP 8

/* ---- helpers -------------------------------------------------------------------------- */

static float *fmat(size_t n) { return (float *)calloc(n ? n : 1, sizeof(float)); }
static double *dvec(size_t n) { return (double *)calloc(n ? n : 1, sizeof(double)); }

/* distance in float ulps between two floats (0 for equal bits; large for sign changes) */
static double ulps(float a, float b)
{
    int32_t ia, ib;
    if (a == b) return 0.0;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    if (ia < 0) ia = (int32_t)0x80000000 - ia;
    if (ib < 0) ib = (int32_t)0x80000000 - ib;
    return fabs((double)ia - (double)ib);
}

/* rows x cols in a matrix of leading dimension ld equal bit for bit (padding ignored) */
static int same_rows(const float *a, size_t lda, const float *b, size_t ldb, size_t rows, size_t cols)
{
    size_t i;
    for (i = 0; i < rows; i++)
        if (memcmp(a + i * lda, b + i * ldb, cols * sizeof(float)) != 0) return 0;
    return 1;
}

/* split rows into P contiguous shards of unequal sizes (every shard >= 1 row); off[P] = rows */
static void split_rows(t_rng *r, size_t rows, size_t P, size_t *off)
{
    size_t p;
    off[0] = 0;
    off[P] = rows;
    for (p = 1; p < P; p++) {
        size_t lo = off[p - 1] + 1, hi = rows - (P - p); /* room for the rest */
        size_t span = hi - lo + 1;
        /* skewed: some shards tiny, some large */
        double u = t_rng_uniform(r);
        off[p] = lo + (size_t)((double)(span / (P - p + 1) * 2) * u * u);
        if (off[p] > hi) off[p] = hi;
    }
}

/* ---- the simulated cluster of the sharded RowNorm step -------------------------------- */

typedef struct {
    size_t P, rows, cols, off[MAXP + 1];
    rn_rownorm_state st[MAXP];
    double *snd[MAXP], *rcv;
    int in_place; /* the all-reduce writes recv over send (MPI_IN_PLACE) */
} cluster;

static void cl_init(cluster *c, size_t rows, size_t cols, size_t P, const size_t *off)
{
    size_t p, nx = rn_rownorm_shard_exchange_size(cols);
    memset(c, 0, sizeof *c);
    c->P = P; c->rows = rows; c->cols = cols;
    for (p = 0; p <= P; p++) c->off[p] = off[p];
    for (p = 0; p < P; p++) {
        CHECK(rn_rownorm_init(&c->st[p], off[p + 1] - off[p], cols) == RN_OK);
        c->snd[p] = dvec(nx);
    }
    c->rcv = dvec(nx);
}

static void cl_free(cluster *c)
{
    size_t p;
    for (p = 0; p < c->P; p++) { rn_rownorm_free(&c->st[p]); free(c->snd[p]); }
    free(c->rcv);
}

/* the all-reduce: sum over ranks in rank order; every rank gets the same n */
static int cl_reduce(cluster *c, const size_t *n)
{
    size_t p, k;
    for (p = 1; p < c->P; p++)
        if (n[p] != n[0]) return 0;
    for (k = 0; k < n[0]; k++) {
        double s = 0.0;
        for (p = 0; p < c->P; p++) s += c->snd[p][k];
        c->rcv[k] = s;
    }
    return 1;
}

/* One sharded step over the whole (global) W, G, S with their leading dimensions. Returns the
 * status of the middle phase (RN_ERR_NONFINITE aborts the step) or of the first failure. */
static rn_status cl_step(cluster *c, const rn_rownorm_config *cfg, float *W, size_t ldw, const float *G,
                         size_t ldg, float *S, size_t lds)
{
    size_t p, n[MAXP], nr;
    rn_status r, rm = RN_OK;
    for (p = 0; p < c->P; p++) {
        r = rn_rownorm_shard_begin(&c->st[p], cfg, G + c->off[p] * ldg, ldg, c->snd[p], &n[p]);
        if (r != RN_OK) return r;
    }
    if (!CHECK(cl_reduce(c, n))) return RN_ERR_SIZE;
    nr = n[0];
    for (p = 0; p < c->P; p++) {
        const double *in = c->rcv;
        if (c->in_place) { memcpy(c->snd[p], c->rcv, nr * sizeof(double)); in = c->snd[p]; }
        r = rn_rownorm_shard_middle(&c->st[p], G + c->off[p] * ldg, ldg, in, c->snd[p], &n[p]);
        if (p == 0) rm = r;
        else if (!CHECK(r == rm)) return r; /* every rank agrees */
    }
    if (rm != RN_OK) return rm;
    if (!CHECK(cl_reduce(c, n))) return RN_ERR_SIZE;
    nr = n[0];
    for (p = 0; p < c->P; p++) {
        const double *in = nr ? c->rcv : NULL;
        if (c->in_place && nr) { memcpy(c->snd[p], c->rcv, nr * sizeof(double)); in = c->snd[p]; }
        r = rn_rownorm_shard_finish(&c->st[p], W + c->off[p] * ldw, ldw, in, S ? S + c->off[p] * lds : NULL, lds);
        if (r != RN_OK) return r;
    }
    return RN_OK;
}

/* the union of the shards' B equals the unsharded B bit for bit */
static int cl_same_B(const cluster *c, const rn_rownorm_state *un)
{
    size_t p;
    for (p = 0; p < c->P; p++)
        if (memcmp(c->st[p].B, un->B + c->off[p] * c->cols, (c->off[p + 1] - c->off[p]) * c->cols * sizeof(float)) != 0)
            return 0;
    return 1;
}

/* ---- 1. one shard: bit for bit rn_rownorm_step ---------------------------------------- */

static void test_one_shard_bitexact(void)
{
    static const size_t rows_list[] = {1, 513};
    t_rng r = {11};
    size_t ri, cols = 19, ldw = 21, ldg = 20, lds = 23;
    unsigned flags;
    int bad = 0, runs = 0;
    for (ri = 0; ri < sizeof rows_list / sizeof rows_list[0]; ri++) {
        size_t rows = rows_list[ri], off[2];
        off[0] = 0; off[1] = rows;
        for (flags = 0; flags < 32; flags++) {
            int var;
            for (var = 0; var < 4; var++) {
                rn_rownorm_config cfg = rn_rownorm_default();
                rn_rownorm_state un;
                cluster c;
                float *W1 = fmat(rows * ldw), *W2 = fmat(rows * ldw), *G = fmat(rows * ldg);
                float *S1 = fmat(rows * lds), *S2 = fmat(rows * lds);
                size_t i, step;
                cfg.flags = flags;
                cfg.lr = 0.01;
                cfg.weight_decay = (var & 1) ? 0.1 : 0.0;
                cfg.beta = (var & 2) ? 0.0 : 0.9;
                if (var == 3) cfg.eps = 1e-3;
                for (i = 0; i < rows * ldw; i++) W1[i] = W2[i] = (float)t_rng_normal(&r);
                CHECK(rn_rownorm_init(&un, rows, cols) == RN_OK);
                cl_init(&c, rows, cols, 1, off);
                c.in_place = var & 1;
                for (step = 0; step < 4; step++) {
                    size_t k;
                    float *s1 = (step % 2) ? NULL : S1, *s2 = (step % 2) ? NULL : S2;
                    for (i = 0; i < rows; i++)
                        for (k = 0; k < cols; k++)
                            G[i * ldg + k] = (float)(0.3 + exp(1.5 * t_rng_normal(&r)) * t_rng_normal(&r));
                    if (step == 3) { rn_rownorm_sync(&un); rn_rownorm_sync(&c.st[0]); }
                    if (rn_rownorm_step(&un, &cfg, W1, ldw, G, ldg, s1, lds) != RN_OK) bad++;
                    if (cl_step(&c, &cfg, W2, ldw, G, ldg, s2, lds) != RN_OK) bad++;
                    if (!same_rows(W1, ldw, W2, ldw, rows, cols) || !cl_same_B(&c, &un) || un.t != c.st[0].t) bad++;
                    if (s1 && !same_rows(S1, lds, S2, lds, rows, cols)) bad++;
                    runs++;
                }
                cl_free(&c);
                rn_rownorm_free(&un);
                free(W1); free(W2); free(G); free(S1); free(S2);
            }
        }
    }
    CHECK_MSG(bad == 0, "%d of %d one-shard steps differ from rn_rownorm_step", bad, runs);
}

/* ---- 1b. equal rows: S = 0 exactly, sharded as unsharded (issue 14, item 2) ------------- *
 * G with all rows equal (fresh values each step) keeps the rows of B equal; with the inner
 * projection every mode must give S = 0 and leave W alone (wd = 0), on 1-4 shards of unequal
 * sizes, and bit for bit as rn_rownorm_step. */
static void test_shards_equal_rows(void)
{
    static const size_t rows_list[] = {1, 5, 300};
    t_rng r = {17};
    size_t ri, cols = 13;
    unsigned flags;
    int bad = 0, nonzero = 0, runs = 0;
    for (ri = 0; ri < sizeof rows_list / sizeof rows_list[0]; ri++) {
        size_t rows = rows_list[ri], P;
        for (P = 1; P <= 4 && P <= rows; P++)
            for (flags = 0; flags < 32; flags++) {
                rn_rownorm_config cfg = rn_rownorm_default();
                rn_rownorm_state un;
                cluster c;
                size_t off[MAXP + 1], i, k, step;
                float *W0 = fmat(rows * cols), *W1 = fmat(rows * cols), *W2 = fmat(rows * cols);
                float *G = fmat(rows * cols), *S1 = fmat(rows * cols), *S2 = fmat(rows * cols);
                if (flags & (RN_NO_CENTER_IN | RN_REFERENCE_COMPAT)) { free(W0); free(W1); free(W2); free(G); free(S1); free(S2); continue; }
                split_rows(&r, rows, P, off);
                cfg.flags = flags;
                cfg.lr = 0.02;
                if (flags & 1u) cfg.eps = 0.0;
                for (i = 0; i < rows * cols; i++) W0[i] = W1[i] = W2[i] = (float)t_rng_normal(&r);
                CHECK(rn_rownorm_init(&un, rows, cols) == RN_OK);
                cl_init(&c, rows, cols, P, off);
                c.in_place = (int)(flags >> 3) & 1;
                for (step = 0; step < 5; step++) {
                    for (k = 0; k < cols; k++) G[k] = (float)(exp(1.5 * t_rng_normal(&r)) * t_rng_normal(&r));
                    for (i = 1; i < rows; i++) memcpy(G + i * cols, G, cols * sizeof(float));
                    if (rn_rownorm_step(&un, &cfg, W1, cols, G, cols, S1, cols) != RN_OK) bad++;
                    if (cl_step(&c, &cfg, W2, cols, G, cols, S2, cols) != RN_OK) bad++;
                    if (!same_rows(W1, cols, W2, cols, rows, cols) || !same_rows(S1, cols, S2, cols, rows, cols) ||
                        !cl_same_B(&c, &un))
                        bad++;
                    for (i = 0; i < rows * cols; i++) nonzero += S1[i] != 0.0f || S2[i] != 0.0f;
                    runs++;
                }
                if (memcmp(W0, W1, rows * cols * sizeof(float)) || memcmp(W0, W2, rows * cols * sizeof(float))) nonzero++;
                cl_free(&c);
                rn_rownorm_free(&un);
                free(W0); free(W1); free(W2); free(G); free(S1); free(S2);
            }
    }
    CHECK_MSG(bad == 0, "%d of %d equal-row steps: sharded differs from unsharded", bad, runs);
    CHECK_MSG(nonzero == 0, "equal rows: %d nonzero entries of S (or W moved) over %d steps", nonzero, runs);
}

/* ---- 2. several shards, exact sums: bit for bit ---------------------------------------- *
 * Data for which every column sum is exact in double: beta in {0, 1/2}, eps = 0, B and G of
 * the form c_t 1^T + R with c_t dyadic (k/8) and R a fixed set of rows with entries in
 * {0, +-2^-j}, squared norms powers of 4, and every row's negation present (columns of R sum to
 * 0). Then the means are c exactly, the centred rows are the rows of R, the norms powers of
 * two, RN(P B) dyadic, and every partial sum of any subset is exact: the order of additions
 * (chunks, ranks) cannot matter, which is the claim. W and lr, weight decay are arbitrary. */
static void make_R(t_rng *r, size_t rows, size_t cols, float *R)
{
    size_t i, k, *perm = (size_t *)malloc(rows * sizeof(size_t));
    float *base = fmat(cols);
    for (i = 0; i < rows; i++) perm[i] = i;
    for (i = rows; i > 1; i--) { size_t j = (size_t)(t_rng_u64(r) % i), t = perm[i - 1]; perm[i - 1] = perm[j]; perm[j] = t; }
    memset(R, 0, rows * cols * sizeof(float));
    for (i = 0; i + 1 < rows; i += 2) {
        /* 1, 4 or 16 nonzero entries of +-2^-(e + {0, 1, 2}): squared norm 4^-e */
        size_t nz = (size_t)1 << (2 * (t_rng_u64(r) % 3)), e = t_rng_u64(r) % 4;
        float mag = ldexpf(1.0f, -(int)e - (nz == 1 ? 0 : nz == 4 ? 1 : 2));
        if (nz > cols) { nz = 1; mag = ldexpf(1.0f, -(int)e); }
        memset(base, 0, cols * sizeof(float));
        for (k = 0; k < nz; k++) {
            size_t at;
            do at = (size_t)(t_rng_u64(r) % cols); while (base[at] != 0.0f);
            base[at] = (t_rng_u64(r) & 1) ? mag : -mag;
        }
        for (k = 0; k < cols; k++) { R[perm[i] * cols + k] = base[k]; R[perm[i + 1] * cols + k] = -base[k]; }
    } /* an odd row count leaves one zero row (norm 0: stays 0) */
    free(perm);
    free(base);
}

static void test_shards_exact_bitexact(void)
{
    t_rng r = {22};
    size_t rows = 601, cols = 24, ldw = 26, ldg = 24, lds = 25, P;
    int bad = 0, runs = 0, bad_st = 0, moved = 0;
    float *R = fmat(rows * cols);
    make_R(&r, rows, cols, R);
    for (P = 1; P <= 5; P++) {
        static const unsigned flagset[8] = {0u, RN_NO_CENTER_IN, RN_NO_CENTER_OUT, RN_NO_CENTER_IN | RN_NO_CENTER_OUT,
                                            RN_REFERENCE_COMPAT, RN_SKIP_CHECKS | RN_NO_BIAS_CORRECTION,
                                            RN_NO_BIAS_CORRECTION | RN_NO_CENTER_OUT, 31u};
        size_t fi;
        for (fi = 0; fi < 8; fi++) {
            unsigned flags = flagset[fi];
            int var;
            for (var = 0; var < 2; var++) {
                rn_rownorm_config cfg = rn_rownorm_default();
                rn_rownorm_state un;
                cluster c;
                size_t off[MAXP + 1], i, k, p, step;
                int centred_in = !(flags & (RN_NO_CENTER_IN | RN_REFERENCE_COMPAT));
                float *W1 = fmat(rows * ldw), *W2 = fmat(rows * ldw), *G = fmat(rows * ldg);
                float *S1 = fmat(rows * lds), *S2 = fmat(rows * lds);
                double c0[64];
                split_rows(&r, rows, P, off);
                cfg.flags = flags;
                cfg.lr = 0.0123;
                cfg.eps = 0.0;
                cfg.beta = var ? 0.5 : 0.0;
                cfg.weight_decay = var ? 0.07 : 0.0;
                for (i = 0; i < rows * ldw; i++) W1[i] = W2[i] = (float)t_rng_normal(&r);
                CHECK(rn_rownorm_init(&un, rows, cols) == RN_OK);
                cl_init(&c, rows, cols, P, off);
                c.in_place = (int)(P & 1);
                /* B_0 = c_0 + R (c = 0 without the inner centre: then the norms are about 0) */
                for (k = 0; k < cols; k++) c0[k] = centred_in ? (double)((int)(t_rng_u64(&r) % 17) - 8) / 8.0 : 0.0;
                for (i = 0; i < rows; i++)
                    for (k = 0; k < cols; k++) un.B[i * cols + k] = (float)(c0[k] + R[i * cols + k]);
                for (p = 0; p < P; p++)
                    memcpy(c.st[p].B, un.B + off[p] * cols, (off[p + 1] - off[p]) * cols * sizeof(float));
                rn_rownorm_sync(&un);
                for (p = 0; p < P; p++) rn_rownorm_sync(&c.st[p]);
                for (step = 0; step < 4; step++) {
                    float *s1 = step == 2 ? NULL : S1, *s2 = step == 2 ? NULL : S2;
                    for (k = 0; k < cols; k++) c0[k] = centred_in ? (double)((int)(t_rng_u64(&r) % 17) - 8) / 8.0 : 0.0;
                    for (i = 0; i < rows; i++)
                        for (k = 0; k < cols; k++) G[i * ldg + k] = (float)(c0[k] + R[i * cols + k]);
                    if (rn_rownorm_step(&un, &cfg, W1, ldw, G, ldg, s1, lds) != RN_OK) bad_st++;
                    if (cl_step(&c, &cfg, W2, ldw, G, ldg, s2, lds) != RN_OK) bad_st++;
                    if (!same_rows(W1, ldw, W2, ldw, rows, cols) || !cl_same_B(&c, &un) ||
                        (s1 && !same_rows(S1, lds, S2, lds, rows, cols)))
                        bad++;
                    for (p = 0; p < P; p++) if (c.st[p].t != un.t) bad++;
                    if (s1 && cfg.lr > 0.0) for (i = 0; i < rows * lds; i += 7) moved += S1[i] != 0.0f;
                    runs++;
                }
                cl_free(&c);
                rn_rownorm_free(&un);
                free(W1); free(W2); free(G); free(S1); free(S2);
            }
        }
    }
    CHECK(bad_st == 0);
    CHECK_MSG(bad == 0, "%d of %d sharded steps differ from rn_rownorm_step", bad, runs);
    CHECK(moved > 1000); /* the construction really moves: S is not zero */
    free(R);
}

/* ---- 3. several shards, general data: B exact, W and S within rounding ----------------- */

static void test_shards_general_rounding(void)
{
    t_rng r = {33};
    size_t rows = 1100, cols = 40, P;
    double worst_w = 0.0, worst_s = 0.0, worst_sabs = 0.0;
    size_t ndiff = 0, ntot = 0, mudiff = 0, nudiff = 0;
    int bad = 0, bad_st = 0;
    for (P = 2; P <= 5; P++) {
        unsigned fl;
        for (fl = 0; fl < 3; fl++) {
            static const unsigned flagset[3] = {0u, RN_NO_CENTER_OUT, RN_NO_BIAS_CORRECTION};
            rn_rownorm_config cfg = rn_rownorm_default();
            rn_rownorm_state un;
            cluster c;
            size_t off[MAXP + 1], i, k, step;
            float *W1 = fmat(rows * cols), *W2 = fmat(rows * cols), *G = fmat(rows * cols);
            float *S1 = fmat(rows * cols), *S2 = fmat(rows * cols);
            double *rs = dvec(rows);
            split_rows(&r, rows, P, off);
            cfg.flags = flagset[fl];
            cfg.weight_decay = 0.1;
            /* gradient-like: heavy-tailed row norms, a common component */
            for (i = 0; i < rows; i++) rs[i] = exp(3.0 * t_rng_normal(&r));
            for (i = 0; i < rows * cols; i++) W1[i] = W2[i] = (float)(0.02 * t_rng_normal(&r));
            CHECK(rn_rownorm_init(&un, rows, cols) == RN_OK);
            cl_init(&c, rows, cols, P, off);
            for (step = 0; step < 6; step++) {
                for (i = 0; i < rows; i++)
                    for (k = 0; k < cols; k++) G[i * cols + k] = (float)(0.5 + rs[i] * t_rng_normal(&r));
                if (rn_rownorm_step(&un, &cfg, W1, cols, G, cols, S1, cols) != RN_OK) bad_st++;
                if (cl_step(&c, &cfg, W2, cols, G, cols, S2, cols) != RN_OK) bad_st++;
                if (!cl_same_B(&c, &un)) bad++;
                for (k = 0; k < cols; k++) {
                    mudiff += memcmp(&c.st[P - 1].rn__mu[k], &un.rn__mu[k], sizeof(double)) != 0;
                    nudiff += memcmp(&c.st[P - 1].rn__nu[k], &un.rn__nu[k], sizeof(double)) != 0;
                }
                for (i = 0; i < rows * cols; i++) {
                    double uw = ulps(W1[i], W2[i]), us = ulps(S1[i], S2[i]);
                    double da = fabs((double)S1[i] - (double)S2[i]) / cfg.lr;
                    ntot++;
                    if (uw > 0 || us > 0) ndiff++;
                    if (uw > worst_w) worst_w = uw;
                    if (da > worst_sabs) worst_sabs = da;
                    if (fabs(S1[i]) > 1e-6 * cfg.lr && us > worst_s) worst_s = us;
                }
            }
            cl_free(&c);
            rn_rownorm_free(&un);
            free(W1); free(W2); free(G); free(S1); free(S2); free(rs);
        }
    }
    CHECK(bad_st == 0);
    CHECK_MSG(bad == 0, "B differs between the shards and the unsharded step");
    printf("    sharded vs unsharded, general data: centres differ in %zu (inner), %zu (outer) columns x steps; %zu of %zu "
           "entries of W, S differ; max %g ulp (W), %g ulp (S, |S| > 1e-6 lr), max |dS|/lr %.3g\n", mudiff, nudiff,
           ndiff, ntot, worst_w, worst_s, worst_sabs);
    CHECK(mudiff + nudiff > 100); /* the data do exercise a different summation order */
    /* within rounding: a float ulp or two (|S| <= 2 lr: one ulp is at most 2.4e-7 lr) */
    CHECK_MSG(worst_w <= 2.0 && worst_s <= 2.0 && worst_sabs <= 5e-7, "W %g ulp, S %g ulp, |dS|/lr %g",
              worst_w, worst_s, worst_sabs);
    CHECK(ndiff <= ntot / 10000);
}

/* ---- 4. NaN/Inf in one shard: every rank refuses in middle, states as before begin ----- */

static void test_shards_nonfinite(void)
{
    t_rng r = {44};
    size_t rows = 530, cols = 17, P = 3, off[4] = {0, 200, 201, 530}, i, p;
    rn_rownorm_config cfg = rn_rownorm_default();
    rn_rownorm_state un;
    cluster c;
    float *W1 = fmat(rows * cols), *W2 = fmat(rows * cols), *G = fmat(rows * cols), *S = fmat(rows * cols);
    void *snap_mem[3];
    rn_rownorm_state snap_st[3];
    float *Wsnap = fmat(rows * cols), *Ssnap = fmat(rows * cols);
    size_t bytes[3];
    int bad_state = 0, trial;
    cl_init(&c, rows, cols, P, off);
    CHECK(rn_rownorm_init(&un, rows, cols) == RN_OK);
    for (i = 0; i < rows * cols; i++) W1[i] = W2[i] = (float)t_rng_normal(&r);
    for (i = 0; i < rows * cols; i++) S[i] = -7.0f;
    /* two good steps first (so B and the tracked sums are not trivial) */
    for (trial = 0; trial < 2; trial++) {
        for (i = 0; i < rows * cols; i++) G[i] = (float)t_rng_normal(&r);
        CHECK(rn_rownorm_step(&un, &cfg, W1, cols, G, cols, NULL, 0) == RN_OK);
        CHECK(cl_step(&c, &cfg, W2, cols, G, cols, NULL, 0) == RN_OK);
    }
    for (trial = 0; trial < 4; trial++) {
        static const float badv[4] = {NANF, (float)INFINITY, -(float)INFINITY, NANF};
        rn_status rs;
        for (i = 0; i < rows * cols; i++) G[i] = (float)t_rng_normal(&r);
        /* the bad value in the middle one-row shard, then the last, then the first */
        G[(trial == 0 ? 200 : trial == 1 ? 529 : trial == 2 ? 0 : 300) * cols + (size_t)trial] = badv[trial];
        for (p = 0; p < P; p++) {
            bytes[p] = rn_rownorm_init_workspace_size(c.st[p].rows, cols);
            snap_mem[p] = malloc(bytes[p]);
            memcpy(snap_mem[p], c.st[p].rn__mem, bytes[p]);
            snap_st[p] = c.st[p];
        }
        memcpy(Wsnap, W2, rows * cols * sizeof(float));
        memcpy(Ssnap, S, rows * cols * sizeof(float));
        rs = cl_step(&c, &cfg, W2, cols, G, cols, S, cols);
        CHECK(rs == RN_ERR_NONFINITE);
        for (p = 0; p < P; p++) {
            if (memcmp(snap_mem[p], c.st[p].rn__mem, bytes[p]) != 0) bad_state++;
            if (memcmp(&snap_st[p], &c.st[p], sizeof snap_st[p]) != 0) bad_state++;
            free(snap_mem[p]);
        }
        CHECK(memcmp(Wsnap, W2, rows * cols * sizeof(float)) == 0 && memcmp(Ssnap, S, rows * cols * sizeof(float)) == 0);
        CHECK(rn_rownorm_step(&un, &cfg, W1, cols, G, cols, NULL, 0) == RN_ERR_NONFINITE);
        /* the count in the exchange is the number of bad values (a second one in another shard) */
        {
            size_t n[MAXP];
            G[5 * cols + 1] = NANF;
            for (p = 0; p < P; p++) CHECK(rn_rownorm_shard_begin(&c.st[p], &cfg, G + off[p] * cols, cols, c.snd[p], &n[p]) == RN_OK);
            CHECK(cl_reduce(&c, n) && c.rcv[0] == 2.0 && c.rcv[1] == (double)rows);
            for (p = 0; p < P; p++) CHECK(rn_rownorm_shard_middle(&c.st[p], G + off[p] * cols, cols, c.rcv, c.snd[p], &n[p]) == RN_ERR_NONFINITE);
        }
    }
    CHECK_MSG(bad_state == 0, "%d states changed by a refused step", bad_state);
    /* the next good step still matches the unsharded sequence that skipped the same steps */
    for (trial = 0; trial < 2; trial++) {
        for (i = 0; i < rows * cols; i++) G[i] = (float)(0.01 * t_rng_normal(&r));
        CHECK(rn_rownorm_step(&un, &cfg, W1, cols, G, cols, NULL, 0) == RN_OK);
        CHECK(cl_step(&c, &cfg, W2, cols, G, cols, NULL, 0) == RN_OK);
    }
    CHECK(cl_same_B(&c, &un));
    for (i = 0; i < rows * cols; i++) if (ulps(W1[i], W2[i]) > 2.0) break;
    CHECK(i == rows * cols);
    for (p = 0; p < P; p++) CHECK(c.st[p].t == 4 && un.t == 4);
    /* RN_SKIP_CHECKS: not counted, propagates as in rn_rownorm_step */
    {
        size_t n[MAXP];
        cfg.flags = RN_SKIP_CHECKS;
        G[3] = NANF;
        for (p = 0; p < P; p++) CHECK(rn_rownorm_shard_begin(&c.st[p], &cfg, G + off[p] * cols, cols, c.snd[p], &n[p]) == RN_OK);
        CHECK(cl_reduce(&c, n) && c.rcv[0] == 0.0);
    }
    cl_free(&c);
    rn_rownorm_free(&un);
    free(W1); free(W2); free(G); free(S); free(Wsnap); free(Ssnap);
}

/* ---- 5. phase order, validation, untouched outputs on every error ---------------------- */

typedef struct {
    rn_rownorm_state st;
    unsigned char *mem;
    size_t bytes;
} snap;

static void snap_take(snap *s, const rn_rownorm_state *st)
{
    s->st = *st;
    s->bytes = rn_rownorm_init_workspace_size(st->rows, st->cols);
    s->mem = (unsigned char *)malloc(s->bytes);
    memcpy(s->mem, st->rn__mem, s->bytes);
}
static int snap_same(snap *s, const rn_rownorm_state *st)
{
    int same = memcmp(&s->st, st, sizeof *st) == 0 && memcmp(s->mem, st->rn__mem, s->bytes) == 0;
    free(s->mem);
    return same;
}

static void test_shard_phases_and_errors(void)
{
    t_rng r = {55};
    size_t rows = 40, cols = 9, nx = rn_rownorm_shard_exchange_size(cols), n = 12345, i;
    rn_rownorm_config cfg = rn_rownorm_default(), badcfg;
    rn_rownorm_state st;
    float *W = fmat(rows * cols), *G = fmat(rows * cols), *S = fmat(rows * cols);
    double *snd = dvec(nx), *rcv = dvec(nx), *poison = dvec(nx);
    float *Wp = fmat(rows * cols);
    snap sn;
    CHECK(rn_rownorm_shard_exchange_size(0) == 0);
    CHECK(rn_rownorm_shard_exchange_size((size_t)-1 / 8) == 0);
    CHECK(nx == 2 * cols + 2);
    CHECK_NEAR((double)rn_rownorm_shard_exchange_size(768), 1538.0, 0.0, 0.0);
    for (i = 0; i < nx; i++) poison[i] = snd[i] = rcv[i] = -3.5;
    for (i = 0; i < rows * cols; i++) { W[i] = Wp[i] = (float)t_rng_normal(&r); G[i] = (float)t_rng_normal(&r); S[i] = 9.0f; }
    CHECK(rn_rownorm_init(&st, rows, cols) == RN_OK);

#define UNTOUCHED(call, want)                                                                     \
    do {                                                                                          \
        rn_status rs_;                                                                            \
        size_t n0_ = n;                                                                           \
        snap_take(&sn, &st);                                                                      \
        rs_ = (call);                                                                             \
        CHECK_MSG(rs_ == (want), "%s gave %d", #call, (int)rs_);                                  \
        CHECK_MSG(snap_same(&sn, &st), "%s changed the state", #call);                           \
        CHECK(memcmp(snd, poison, nx * sizeof(double)) == 0 && n == n0_);                        \
        CHECK(memcmp(W, Wp, rows * cols * sizeof(float)) == 0);                                   \
        for (i = 0; i < rows * cols; i++) if (S[i] != 9.0f) break;                                \
        CHECK(i == rows * cols);                                                                  \
    } while (0)

    /* out of order from idle */
    UNTOUCHED(rn_rownorm_shard_middle(&st, G, cols, rcv, snd, &n), RN_ERR_PHASE);
    UNTOUCHED(rn_rownorm_shard_finish(&st, W, cols, rcv, S, cols), RN_ERR_PHASE);
    /* begin's validation */
    UNTOUCHED(rn_rownorm_shard_begin(NULL, &cfg, G, cols, snd, &n), RN_ERR_NULL);
    UNTOUCHED(rn_rownorm_shard_begin(&st, NULL, G, cols, snd, &n), RN_ERR_NULL);
    UNTOUCHED(rn_rownorm_shard_begin(&st, &cfg, NULL, cols, snd, &n), RN_ERR_NULL);
    UNTOUCHED(rn_rownorm_shard_begin(&st, &cfg, G, cols, NULL, &n), RN_ERR_NULL);
    UNTOUCHED(rn_rownorm_shard_begin(&st, &cfg, G, cols, snd, NULL), RN_ERR_NULL);
    UNTOUCHED(rn_rownorm_shard_begin(&st, &cfg, G, cols - 1, snd, &n), RN_ERR_SIZE);
    UNTOUCHED(rn_rownorm_shard_begin(&st, &cfg, G, (size_t)-1 / 2, snd, &n), RN_ERR_SIZE);
    badcfg = cfg; badcfg.beta = 1.0;
    UNTOUCHED(rn_rownorm_shard_begin(&st, &badcfg, G, cols, snd, &n), RN_ERR_DOMAIN);
    badcfg = cfg; badcfg.lr = NAN;
    UNTOUCHED(rn_rownorm_shard_begin(&st, &badcfg, G, cols, snd, &n), RN_ERR_DOMAIN);
    badcfg = cfg; badcfg.flags = 32u;
    UNTOUCHED(rn_rownorm_shard_begin(&st, &badcfg, G, cols, snd, &n), RN_ERR_DOMAIN);
    UNTOUCHED(rn_rownorm_shard_begin(&st, &cfg, st.B, cols, snd, &n), RN_ERR_ALIAS);
    UNTOUCHED(rn_rownorm_shard_begin(&st, &cfg, G, cols, (double *)(void *)(st.B + 4), &n), RN_ERR_ALIAS);
    UNTOUCHED(rn_rownorm_shard_begin(&st, &cfg, G, cols, (double *)(void *)(G + 2), &n), RN_ERR_ALIAS);
    UNTOUCHED(rn_rownorm_shard_begin(&st, &cfg, G, cols, snd, (size_t *)(void *)(snd + 3)), RN_ERR_ALIAS);

    /* begin, and the counts: 2 cols + 2 then cols by default */
    CHECK(rn_rownorm_shard_begin(&st, &cfg, G, cols, snd, &n) == RN_OK && n == 2 * cols + 2);
    CHECK(st.rn__sphase == 1 && st.t == 0);
    /* begin again restarts (nothing committed) */
    CHECK(rn_rownorm_shard_begin(&st, &cfg, G, cols, snd, &n) == RN_OK && n == 2 * cols + 2);
    memcpy(rcv, snd, nx * sizeof(double));
    memcpy(poison, snd, nx * sizeof(double));
    UNTOUCHED(rn_rownorm_shard_finish(&st, W, cols, rcv, S, cols), RN_ERR_PHASE);
    /* middle's validation */
    UNTOUCHED(rn_rownorm_shard_middle(&st, NULL, cols, rcv, snd, &n), RN_ERR_NULL);
    UNTOUCHED(rn_rownorm_shard_middle(&st, G, cols, NULL, snd, &n), RN_ERR_NULL);
    UNTOUCHED(rn_rownorm_shard_middle(&st, G, cols, rcv, NULL, &n), RN_ERR_NULL);
    UNTOUCHED(rn_rownorm_shard_middle(&st, G, cols, rcv, snd, NULL), RN_ERR_NULL);
    UNTOUCHED(rn_rownorm_shard_middle(&st, G, 0, rcv, snd, &n), RN_ERR_SIZE);
    UNTOUCHED(rn_rownorm_shard_middle(&st, G, cols, snd + 1, snd, &n), RN_ERR_ALIAS); /* partial overlap */
    UNTOUCHED(rn_rownorm_shard_middle(&st, G, cols, rcv, (double *)(void *)G, &n), RN_ERR_ALIAS);
    UNTOUCHED(rn_rownorm_shard_middle(&st, st.B, cols, rcv, snd, &n), RN_ERR_ALIAS);
    rcv[1] = (double)rows - 1.0; /* fewer rows than this shard: not an all-reduced buffer */
    UNTOUCHED(rn_rownorm_shard_middle(&st, G, cols, rcv, snd, &n), RN_ERR_DOMAIN);
    rcv[1] = (double)rows + 0.5;
    UNTOUCHED(rn_rownorm_shard_middle(&st, G, cols, rcv, snd, &n), RN_ERR_DOMAIN);
    rcv[1] = NAN;
    UNTOUCHED(rn_rownorm_shard_middle(&st, G, cols, rcv, snd, &n), RN_ERR_DOMAIN);
    rcv[1] = (double)rows;
    /* the unsharded step is fine in phase 1 (it discards the begin) but not in phase 2 */
    {
        rn_rownorm_state tw;
        void *m2 = malloc(rn_rownorm_init_workspace_size(rows, cols));
        float *W3 = fmat(rows * cols);
        memcpy(W3, W, rows * cols * sizeof(float));
        tw = st;
        memcpy(m2, st.rn__mem, rn_rownorm_init_workspace_size(rows, cols));
        CHECK(rn_rownorm_step(&st, &cfg, W3, cols, G, cols, NULL, 0) == RN_OK && st.rn__sphase == 0 && st.t == 1);
        st = tw; /* restore the state to phase 1 */
        memcpy(st.rn__mem, m2, rn_rownorm_init_workspace_size(rows, cols));
        free(m2);
        free(W3);
    }
    /* middle in place (recv == send) */
    memcpy(snd, rcv, nx * sizeof(double));
    CHECK(rn_rownorm_shard_middle(&st, G, cols, snd, snd, &n) == RN_OK && n == cols);
    CHECK(st.rn__sphase == 2 && st.t == 0);
    memcpy(rcv, snd, nx * sizeof(double));
    memcpy(poison, snd, nx * sizeof(double));
    UNTOUCHED(rn_rownorm_shard_begin(&st, &cfg, G, cols, snd, &n), RN_ERR_PHASE);
    UNTOUCHED(rn_rownorm_shard_middle(&st, G, cols, rcv, snd, &n), RN_ERR_PHASE);
    UNTOUCHED(rn_rownorm_step(&st, &cfg, W, cols, G, cols, S, cols), RN_ERR_PHASE);
    /* finish's validation */
    UNTOUCHED(rn_rownorm_shard_finish(NULL, W, cols, rcv, S, cols), RN_ERR_NULL);
    UNTOUCHED(rn_rownorm_shard_finish(&st, NULL, cols, rcv, S, cols), RN_ERR_NULL);
    UNTOUCHED(rn_rownorm_shard_finish(&st, W, cols, NULL, S, cols), RN_ERR_NULL);
    UNTOUCHED(rn_rownorm_shard_finish(&st, W, cols - 1, rcv, S, cols), RN_ERR_SIZE);
    UNTOUCHED(rn_rownorm_shard_finish(&st, W, cols, rcv, S, 0), RN_ERR_SIZE);
    UNTOUCHED(rn_rownorm_shard_finish(&st, W, cols, rcv, W + 3, cols), RN_ERR_ALIAS);
    UNTOUCHED(rn_rownorm_shard_finish(&st, W, cols, (const double *)(const void *)(W + 8), S, cols), RN_ERR_ALIAS);
    UNTOUCHED(rn_rownorm_shard_finish(&st, st.B + 1, cols, rcv, S, cols), RN_ERR_ALIAS);
    rcv[2] = INFINITY;
    UNTOUCHED(rn_rownorm_shard_finish(&st, W, cols, rcv, S, cols), RN_ERR_NONFINITE);
    rcv[2] = snd[2];
    CHECK(rn_rownorm_shard_finish(&st, W, cols, rcv, S, cols) == RN_OK);
    CHECK(st.t == 1 && st.rn__sphase == 0 && st.rn__slr == 0.0 && st.rn__srows == 0.0);
    /* counts without the projections: 2 then 0 (and finish accepts recv NULL) */
    cfg.flags = RN_REFERENCE_COMPAT;
    CHECK(rn_rownorm_shard_begin(&st, &cfg, G, cols, snd, &n) == RN_OK && n == 2);
    CHECK(rn_rownorm_shard_middle(&st, G, cols, snd, snd, &n) == RN_OK && n == 0);
    CHECK(rn_rownorm_shard_finish(&st, W, cols, NULL, NULL, 0) == RN_OK && st.t == 2);
    cfg.flags = RN_NO_CENTER_IN;
    CHECK(rn_rownorm_shard_begin(&st, &cfg, G, cols, snd, &n) == RN_OK && n == 2);
    CHECK(rn_rownorm_shard_middle(&st, G, cols, snd, snd, &n) == RN_OK && n == cols);
    CHECK(rn_rownorm_shard_finish(&st, W, cols, snd, NULL, 0) == RN_OK);
    cfg.flags = RN_NO_CENTER_OUT;
    CHECK(rn_rownorm_shard_begin(&st, &cfg, G, cols, snd, &n) == RN_OK && n == 2 * cols + 2);
    CHECK(rn_rownorm_shard_middle(&st, G, cols, snd, snd, &n) == RN_OK && n == 0);
    CHECK(rn_rownorm_shard_finish(&st, W, cols, NULL, NULL, 0) == RN_OK && st.t == 4);
    CHECK(strcmp(rn_status_string(RN_ERR_PHASE), rn_status_string(RN_ERR_NOCONVERGE)) != 0);
#undef UNTOUCHED
    rn_rownorm_free(&st);
    free(W); free(G); free(S); free(snd); free(rcv); free(poison); free(Wp);
}

/* ---- 6. the ring schedule: every unordered pair of shards (and each shard with itself) once */

static void test_ring_schedule(void)
{
    size_t P;
    int bad = 0;
    for (P = 1; P <= 13; P++) {
        size_t held[16], next[16], cover[16][16], r, k, a, b, rounds = rn_diameter_ring_rounds(P);
        memset(cover, 0, sizeof cover);
        if (rounds != P / 2 + 1) bad++;
        for (r = 0; r < P; r++) held[r] = r;
        for (k = 0; k < rounds; k++) {
            if (k > 0) { /* everyone sends what it holds to r - 1, receives from r + 1 */
                for (r = 0; r < P; r++) {
                    size_t s, to, from;
                    if (rn_diameter_ring(P, r, k, &s, &to, &from) != RN_OK) bad++;
                    if (to != (r + P - 1) % P || from != (r + 1) % P) bad++;
                    next[r] = held[from];
                }
                for (r = 0; r < P; r++) held[r] = next[r];
            }
            for (r = 0; r < P; r++) {
                size_t s = 7, to = 7, from = 7;
                if (rn_diameter_ring(P, r, k, &s, k ? NULL : &to, k ? NULL : &from) != RN_OK) bad++;
                if (k == 0 && (s != r || to != r || from != r)) bad++;
                if (s == (size_t)-1) continue;
                if (s != held[r]) bad++; /* the block it computes with is the one it holds */
                a = r < s ? r : s; b = r < s ? s : r;
                cover[a][b]++;
            }
        }
        for (a = 0; a < P; a++)
            for (b = a; b < P; b++)
                if (cover[a][b] != 1) bad++;
    }
    CHECK_MSG(bad == 0, "%d schedule faults", bad);
    {
        size_t s = 99;
        CHECK(rn_diameter_ring_rounds(0) == 0);
        CHECK(rn_diameter_ring(0, 0, 0, &s, NULL, NULL) == RN_ERR_SIZE && s == 99);
        CHECK(rn_diameter_ring(3, 3, 0, &s, NULL, NULL) == RN_ERR_DOMAIN && s == 99);
        CHECK(rn_diameter_ring(4, 0, 3, &s, NULL, NULL) == RN_ERR_DOMAIN && s == 99);
        CHECK(rn_diameter_ring(4, 0, 0, NULL, NULL, NULL) == RN_ERR_NULL);
        CHECK(rn_diameter_ring(4, 3, 2, &s, NULL, NULL) == RN_OK && s == (size_t)-1);
        CHECK(rn_diameter_ring(4, 1, 2, &s, NULL, NULL) == RN_OK && s == 3);
    }
}

/* ---- 7. the sharded exact diameter equals rn_row_diameter exactly ---------------------- */

static double ref_dist2(const float *S, size_t ld, size_t cols, size_t i, size_t j)
{
    double s = 0.0;
    size_t k;
    for (k = 0; k < cols; k++) { double d = (double)S[i * ld + k] - (double)S[j * ld + k]; s += d * d; }
    return s;
}

/* the ring over P shards of S (copies of each shard in its own buffer, as on another process),
 * with the block-pair kernel's screen (rn__diam_stats.screen: 0 the build's choice, or forced) */
static rn_status ring_diameter(const float *S, size_t rows, size_t cols, size_t ld, size_t P, const size_t *off,
                               int carry, int screen, rn_diameter_best *out)
{
    float *blk[MAXP];
    rn_diameter_best best[MAXP];
    size_t held[MAXP], next[MAXP], p, k, rounds = rn_diameter_ring_rounds(P), maxrows = 0;
    size_t ldb = cols + 3; /* the copies have their own leading dimension */
    void *ws;
    size_t need;
    rn_status rs = RN_OK;
    (void)rows;
    for (p = 0; p < P; p++) if (off[p + 1] - off[p] > maxrows) maxrows = off[p + 1] - off[p];
    need = rn_row_diameter_pair_workspace_size(maxrows, maxrows, cols);
    ws = malloc(need);
    for (p = 0; p < P; p++) {
        size_t n = off[p + 1] - off[p], i;
        blk[p] = fmat(n * ldb);
        for (i = 0; i < n * ldb; i++) blk[p][i] = NANF; /* padding never read */
        for (i = 0; i < n; i++) memcpy(blk[p] + i * ldb, S + (off[p] + i) * ld, cols * sizeof(float));
        best[p] = rn_diameter_best_none();
        held[p] = p;
    }
    for (k = 0; k < rounds && rs == RN_OK; k++) {
        if (k > 0) {
            for (p = 0; p < P; p++) {
                size_t s = 0, to = 0, from = 0;
                rn_diameter_ring(P, p, k, &s, &to, &from);
                next[p] = held[from];
            }
            for (p = 0; p < P; p++) held[p] = next[p];
        }
        for (p = 0; p < P && rs == RN_OK; p++) {
            size_t s = 0, q;
            rn_diameter_best one = rn_diameter_best_none(), *acc = carry ? &best[p] : &one;
            rn_diameter_ring(P, p, k, &s, NULL, NULL);
            if (s == (size_t)-1) continue;
            q = held[p];
            {
                rn__diam_stats st;
                memset(&st, 0, sizeof st);
                st.screen = screen;
                rs = rn__diam_pair_core(blk[p], off[p + 1] - off[p], ldb, off[p], k ? blk[q] : NULL,
                                        off[q + 1] - off[q], ldb, off[q], cols, ws, need, acc, screen ? &st : NULL);
            }
            if (!carry) rn_diameter_best_merge(&best[p], &one);
        }
    }
    *out = rn_diameter_best_none();
    for (p = P; p-- > 0;) rn_diameter_best_merge(out, &best[p]); /* any order */
    for (p = 0; p < P; p++) free(blk[p]);
    free(ws);
    return rs;
}

static void test_diameter_sharded(void)
{
    t_rng r = {77};
    int kind, bad = 0, cases = 0, bad_ref = 0;
    for (kind = 0; kind < 9; kind++) {
        size_t rows = kind == 7 ? 1 + (size_t)(t_rng_u64(&r) % 4) : 150 + (size_t)(t_rng_u64(&r) % 250);
        size_t cols = kind == 5 ? 3 : 12 + (size_t)(t_rng_u64(&r) % 30), ld = cols + 1, i, k, P;
        float *S = fmat(rows * ld);
        for (i = 0; i < rows; i++) {
            double sc = kind == 1 ? exp(2.5 * t_rng_normal(&r)) : 1.0, n2 = 0.0;
            double *v = dvec(cols);
            for (k = 0; k < cols; k++) { v[k] = t_rng_normal(&r); n2 += v[k] * v[k]; }
            for (k = 0; k < cols; k++) {
                double x = sc * v[k];
                if (kind == 2 || kind == 3) x = v[k] / sqrt(n2) * 0.01; /* equal norms (a RowNorm step) */
                if (kind == 4) x = 0.25;                                 /* all equal: D = 0 */
                if (kind == 6) x = 1000.0 + 1e-3 * v[k];                 /* large common part */
                if (kind == 8) x = (i % (2 * cols) == 2 * k) ? 1.0 : (i % (2 * cols) == 2 * k + 1) ? -1.0 : 0.0;
                S[i * ld + k] = (float)x;
            }
            free(v);
        }
        if (kind == 3 || kind == 5) {
            /* ties: copies of the two rows of the farthest pair elsewhere */
            double D;
            size_t a, b, c1 = rows / 3, c2 = rows - 2;
            CHECK(rn_row_diameter(S, rows, cols, ld, &D, &a, &b) == RN_OK);
            if (c1 != a && c1 != b && c2 != a && c2 != b) {
                memcpy(S + c1 * ld, S + a * ld, cols * sizeof(float));
                memcpy(S + c2 * ld, S + b * ld, cols * sizeof(float));
            }
            memcpy(S + 1 * ld, S + b * ld, cols * sizeof(float));
        }
        for (i = 0; i < rows; i++) S[i * ld + cols] = NANF;
        for (P = 1; P <= 5 && P <= rows; P++) {
            int rep;
            for (rep = 0; rep < 6; rep++) { /* carry or not, x the build's screen, float32, int8 */
                static const int screens[3] = {0, RN__SCREEN_F32, RN__SCREEN_Q8_ONLY};
                size_t off[MAXP + 1], ri, rj;
                double D;
                rn_diameter_best got;
                split_rows(&r, rows, P, off);
                CHECK(rn_row_diameter(S, rows, cols, ld, &D, &ri, &rj) == RN_OK);
                if (ring_diameter(S, rows, cols, ld, P, off, rep & 1, screens[rep / 2], &got) != RN_OK) { bad++; continue; }
                cases++;
                if (rows == 1) {
                    if (got.i != got.j || D != 0.0) bad++;
                    continue;
                }
                if (!(got.i < got.j) || sqrt(got.dist2) != D || got.i != ri || got.j != rj) {
                    bad++;
                    fprintf(stderr, "kind %d P %zu screen %d: sharded (%zu, %zu) %.17g, whole (%zu, %zu) %.17g\n", kind,
                            P, screens[rep / 2], got.i, got.j, sqrt(got.dist2), ri, rj, D);
                }
                /* and the float64 brute force */
                {
                    double best = 0.0;
                    size_t a, b;
                    for (a = 0; a < rows; a++)
                        for (b = a + 1; b < rows; b++) {
                            double d2 = ref_dist2(S, ld, cols, a, b);
                            if (d2 > best) best = d2;
                        }
                    if (!t__near(sqrt(got.dist2), sqrt(best), 0.0, 1e-12)) bad_ref++;
                }
            }
        }
        free(S);
    }
    CHECK_MSG(bad == 0, "%d of %d sharded diameters differ from rn_row_diameter", bad, cases);
    CHECK(bad_ref == 0);
    CHECK(cases > 180);
}

/* the kernel's own contract: merge rule, in/out best, validation with untouched outputs */
static void test_diameter_pair_api(void)
{
    t_rng r = {88};
    size_t ra = 70, rb = 9, cols = 5, i, need = rn_row_diameter_pair_workspace_size(ra, rb, cols);
    float *A = fmat(ra * cols), *B = fmat(rb * cols);
    void *ws = malloc(need);
    rn_diameter_best b0, b1, x;
    double want = -1.0;
    size_t wi = 0, wj = 0, a, b;
    for (i = 0; i < ra * cols; i++) A[i] = (float)t_rng_normal(&r);
    for (i = 0; i < rb * cols; i++) B[i] = (float)(3.0 * t_rng_normal(&r));
    /* cross pair against brute force, global indices: A rows 100.., B rows 10.. */
    b0 = rn_diameter_best_none();
    CHECK(rn_row_diameter_pair_ws(A, ra, cols, 100, B, rb, cols, 10, cols, ws, need, &b0) == RN_OK);
    for (a = 0; a < ra; a++)
        for (b = 0; b < rb; b++) {
            double s = 0.0;
            size_t k;
            for (k = 0; k < cols; k++) { double d = (double)A[a * cols + k] - (double)B[b * cols + k]; s += d * d; }
            if (s > want) { want = s; wi = 10 + b; wj = 100 + a; }
        }
    CHECK(b0.i == wi && b0.j == wj);
    CHECK_NEAR(b0.dist2, want, 0.0, 1e-13);
    /* a better incoming best is kept; a worse one replaced */
    b1.dist2 = 1e9; b1.i = 1; b1.j = 2;
    x = b1;
    CHECK(rn_row_diameter_pair_ws(A, ra, cols, 100, B, rb, cols, 10, cols, ws, need, &x) == RN_OK);
    CHECK(memcmp(&x, &b1, sizeof x) == 0);
    b1.dist2 = 1e-9;
    x = b1;
    CHECK(rn_row_diameter_pair_ws(A, ra, cols, 100, B, rb, cols, 10, cols, ws, need, &x) == RN_OK);
    CHECK(x.i == b0.i && x.j == b0.j && x.dist2 == b0.dist2);
    /* an equal distance with a smaller pair wins the tie; a larger pair loses it */
    b1 = b0; b1.i = 0; b1.j = 1;
    x = b1;
    CHECK(rn_row_diameter_pair_ws(A, ra, cols, 100, B, rb, cols, 10, cols, ws, need, &x) == RN_OK);
    CHECK(x.i == 0 && x.j == 1);
    b1.i = 500; b1.j = 600;
    x = b1;
    CHECK(rn_row_diameter_pair_ws(A, ra, cols, 100, B, rb, cols, 10, cols, ws, need, &x) == RN_OK);
    CHECK(x.i == b0.i && x.j == b0.j);
    /* merge */
    x = rn_diameter_best_none();
    rn_diameter_best_merge(&x, &b0);
    CHECK(memcmp(&x, &b0, sizeof x) == 0);
    b1 = rn_diameter_best_none();
    rn_diameter_best_merge(&x, &b1);
    CHECK(memcmp(&x, &b0, sizeof x) == 0);
    memset(&b1, 0, sizeof b1); /* zeroed = empty */
    rn_diameter_best_merge(&b1, &x);
    CHECK(memcmp(&b1, &b0, sizeof x) == 0);
    rn_diameter_best_merge(NULL, &x);
    rn_diameter_best_merge(&x, NULL);
    /* self pair with one row: nothing; untouched */
    x = rn_diameter_best_none();
    CHECK(rn_row_diameter_pair_ws(A, 1, cols, 0, NULL, 0, 0, 0, cols, ws, need, &x) == RN_OK && x.i == x.j && x.dist2 == -1.0);
    /* errors leave best untouched */
#define PAIR_ERR(call, want_)                                                                   \
    do {                                                                                        \
        rn_diameter_best keep_ = b0;                                                            \
        x = b0;                                                                                 \
        CHECK_MSG((call) == (want_), "%s", #call);                                              \
        CHECK(memcmp(&x, &keep_, sizeof x) == 0);                                               \
    } while (0)
    PAIR_ERR(rn_row_diameter_pair_ws(NULL, ra, cols, 0, B, rb, cols, 100, cols, ws, need, &x), RN_ERR_NULL);
    PAIR_ERR(rn_row_diameter_pair_ws(A, ra, cols, 0, B, rb, cols, 100, cols, NULL, need, &x), RN_ERR_NULL);
    CHECK(rn_row_diameter_pair_ws(A, ra, cols, 0, B, rb, cols, 100, cols, ws, need, NULL) == RN_ERR_NULL);
    PAIR_ERR(rn_row_diameter_pair_ws(A, 0, cols, 0, B, rb, cols, 100, cols, ws, need, &x), RN_ERR_SIZE);
    PAIR_ERR(rn_row_diameter_pair_ws(A, ra, cols, 0, B, rb, cols - 1, 100, cols, ws, need, &x), RN_ERR_SIZE);
    { /* the one-thread size (one tile) is the least it takes */
        size_t one;
        T_ONE_THREAD(rn_row_diameter_pair_workspace_size(ra, rb, cols), one);
        CHECK(one > 0 && one <= need);
        PAIR_ERR(rn_row_diameter_pair_ws(A, ra, cols, 0, B, rb, cols, 100, cols, ws, one - 1, &x), RN_ERR_SIZE);
    }
    PAIR_ERR(rn_row_diameter_pair_ws(A, ra, cols, 0, B, rb, cols, 60, cols, ws, need, &x), RN_ERR_DOMAIN);
    PAIR_ERR(rn_row_diameter_pair_ws(A, ra, cols, (size_t)-1 - 5, B, rb, cols, 0, cols, ws, need, &x), RN_ERR_DOMAIN);
    PAIR_ERR(rn_row_diameter_pair_ws(A, ra, cols, 0, B, rb, cols, 100, cols, (void *)A, need, &x), RN_ERR_ALIAS);
    {
        rn_diameter_best bad = b0;
        bad.i = 9; bad.j = 3; /* not i < j */
        CHECK(rn_row_diameter_pair_ws(A, ra, cols, 0, B, rb, cols, 100, cols, ws, need, &bad) == RN_ERR_DOMAIN && bad.i == 9);
        bad.i = 3; bad.j = 9; bad.dist2 = NAN;
        CHECK(rn_row_diameter_pair_ws(A, ra, cols, 0, B, rb, cols, 100, cols, ws, need, &bad) == RN_ERR_DOMAIN);
    }
    { /* best inside ws, A or B is RN_ERR_ALIAS whatever its bytes decode to (the overlap is
       * checked before *best is read; an invalid best in ws gave RN_ERR_DOMAIN, issue 40), and
       * those bytes are left as they were */
        rn_diameter_best bad[3], keep;
        rn_diameter_best *in[3];
        const char *where[3] = {"ws", "A", "B"};
        int w, v;
        in[0] = (rn_diameter_best *)(void *)((char *)ws + 64);
        in[1] = (rn_diameter_best *)(void *)(A + 2);
        in[2] = (rn_diameter_best *)(void *)(B + 2);
        bad[0] = b0; bad[0].i = 9; bad[0].j = 3;  /* not i < j */
        bad[1] = b0; bad[1].dist2 = NAN;          /* not a distance */
        bad[2] = b0;                              /* valid */
        for (w = 0; w < 3; w++)
            for (v = 0; v < 3; v++) {
                memcpy(&keep, in[w], sizeof keep);
                memcpy(in[w], &bad[v], sizeof bad[v]);
                CHECK_MSG(rn_row_diameter_pair_ws(A, ra, cols, 0, B, rb, cols, 100, cols, ws, need, in[w]) == RN_ERR_ALIAS,
                          "best in %s, case %d", where[w], v);
                CHECK_MSG(memcmp(in[w], &bad[v], sizeof bad[v]) == 0, "best in %s, case %d: written", where[w], v);
                if (w > 0)
                    CHECK_MSG(rn_row_diameter_pair(A, ra, cols, 0, B, rb, cols, 100, cols, in[w]) == RN_ERR_ALIAS,
                              "rn_row_diameter_pair, best in %s, case %d", where[w], v);
                memcpy(in[w], &keep, sizeof keep);
            }
    }
    B[7] = (float)INFINITY;
    PAIR_ERR(rn_row_diameter_pair_ws(A, ra, cols, 0, B, rb, cols, 100, cols, ws, need, &x), RN_ERR_NONFINITE);
    PAIR_ERR(rn_row_diameter_pair(A, ra, cols, 0, B, rb, cols, 100, cols, &x), RN_ERR_NONFINITE);
    B[7] = 0.0f;
    x = rn_diameter_best_none();
    CHECK(rn_row_diameter_pair(A, ra, cols, 100, B, rb, cols, 10, cols, &x) == RN_OK && x.i == b0.i && x.j == b0.j);
    CHECK(rn_row_diameter_pair_workspace_size(0, 3, 3) == 0 && rn_row_diameter_pair_workspace_size(3, 3, 0) == 0);
    CHECK(rn_row_diameter_pair_workspace_size((size_t)-1, 3, 3) == 0);
#undef PAIR_ERR
    free(A); free(B); free(ws);
}

/* ---- 8. the sharded Hilbert RMS ----------------------------------------------------------- */

/* float64 brute force: per-token max/min of s_i . h_l, the RMS of the ranges */
static double ref_rms(const float *S, size_t rows, size_t cols, size_t lds, const float *H, size_t N, size_t ldh)
{
    double acc = 0.0;
    size_t l, i, k;
    for (l = 0; l < N; l++) {
        double mx = -HUGE_VAL, mn = HUGE_VAL;
        for (i = 0; i < rows; i++) {
            double z = 0.0;
            for (k = 0; k < cols; k++) z += (double)S[i * lds + k] * (double)H[l * ldh + k];
            if (z > mx) mx = z;
            if (z < mn) mn = z;
        }
        acc += (mx - mn) * (mx - mn);
    }
    return sqrt(acc / (double)N);
}

/* P shards of S: centred (common centre from the summed column sums) or local-centre partials,
 * combined by max/min; returns the RMS and the ranges in mx/mn */
static rn_status rms_sharded(const float *S, size_t cols, size_t lds, size_t P, const size_t *off, int centred,
                             const float *H, size_t N, size_t ldh, double *mx, double *mn, double *rms)
{
    size_t need = rn_hilbert_rms_workspace_size(cols, N), p, l, k;
    void *ws = malloc(need);
    double *sums = dvec(cols + 1), *part = dvec(cols + 1), *pmx = dvec(N), *pmn = dvec(N);
    rn_status rs = RN_OK;
    if (centred)
        for (p = 0; p < P && rs == RN_OK; p++) {
            rs = rn_hilbert_rms_center_sums(S + off[p] * lds, off[p + 1] - off[p], cols, lds, part);
            for (k = 0; k <= cols; k++) sums[k] += part[k]; /* the all-reduce, rank order */
        }
    for (l = 0; l < N; l++) { mx[l] = -HUGE_VAL; mn[l] = HUGE_VAL; }
    for (p = 0; p < P && rs == RN_OK; p++) {
        if (centred)
            rs = rn_hilbert_rms_partial_centered_ws(S + off[p] * lds, off[p + 1] - off[p], cols, lds, sums, H, N, ldh, ws,
                                                    need, pmx, pmn);
        else
            rs = rn_hilbert_rms_partial_ws(S + off[p] * lds, off[p + 1] - off[p], cols, lds, H, N, ldh, ws, need, pmx, pmn);
        for (l = 0; l < N; l++) {
            if (pmx[l] > mx[l]) mx[l] = pmx[l];
            if (pmn[l] < mn[l]) mn[l] = pmn[l];
        }
    }
    if (rs == RN_OK) rs = rn_hilbert_rms_from_range(mx, mn, N, rms);
    free(ws); free(sums); free(part); free(pmx); free(pmn);
    return rs;
}

static void test_rms_sharded(void)
{
    t_rng r = {99};
    int kind, bad_exact = 0, bad_one = 0, runs = 0;
    double worst_local = 0.0, worst_cent = 0.0, worst_ref = 0.0;
    for (kind = 0; kind < 4; kind++) {
        /* kind 0, 1: dyadic S (multiples of 2^-8: every column sum exact); 2, 3: general S.
         * kinds 1, 3: 600 tokens (the threads split tokens), else 70 (they split vocabulary) */
        size_t rows = kind < 2 ? 1500 : 1100, cols = 24, lds = 26, N = (kind & 1) ? 600 : 70, ldh = 25, i, k, P;
        float *S = fmat(rows * lds), *H = fmat(N * ldh);
        double *mx = dvec(N), *mn = dvec(N), *wx = dvec(N), *wn = dvec(N), rms_whole, rms_ref;
        size_t need = rn_hilbert_rms_workspace_size(cols, N);
        void *ws = malloc(need);
        for (i = 0; i < rows; i++)
            for (k = 0; k < lds; k++) {
                double v = (0.5 + (i % 7)) * t_rng_normal(&r) + 0.3;
                S[i * lds + k] = k >= cols ? NANF : kind < 2 ? (float)(floor(v * 256.0) / 256.0) : (float)v;
            }
        for (i = 0; i < N * ldh; i++) H[i] = (i % ldh) < cols ? (float)t_rng_normal(&r) : NANF;
        CHECK(rn_hilbert_rms(S, rows, cols, lds, H, N, ldh, &rms_whole) == RN_OK);
        CHECK(rn_hilbert_rms_partial_ws(S, rows, cols, lds, H, N, ldh, ws, need, wx, wn) == RN_OK);
        rms_ref = ref_rms(S, rows, cols, lds, H, N, ldh);
        if (fabs(rms_whole - rms_ref) / rms_ref > worst_ref) worst_ref = fabs(rms_whole - rms_ref) / rms_ref;
        for (P = 1; P <= 4; P++) {
            size_t off[MAXP + 1];
            double rms;
            split_rows(&r, rows, P, off);
            runs++;
            /* centred: bit for bit when the sums are exact (and always with one shard) */
            CHECK(rms_sharded(S, cols, lds, P, off, 1, H, N, ldh, mx, mn, &rms) == RN_OK);
            if (kind < 2 || P == 1) {
                if (rms != rms_whole || memcmp(mx, wx, N * sizeof(double)) != 0 || memcmp(mn, wn, N * sizeof(double)) != 0) {
                    if (P == 1) bad_one++; else bad_exact++;
                }
            } else if (fabs(rms - rms_whole) / rms_whole > worst_cent) {
                worst_cent = fabs(rms - rms_whole) / rms_whole;
            }
            /* local centres (rn_hilbert_rms_partial_ws per shard): within rounding */
            CHECK(rms_sharded(S, cols, lds, P, off, 0, H, N, ldh, mx, mn, &rms) == RN_OK);
            if (fabs(rms - rms_whole) / rms_whole > worst_local) worst_local = fabs(rms - rms_whole) / rms_whole;
        }
        free(S); free(H); free(mx); free(mn); free(wx); free(wn); free(ws);
    }
    printf("    sharded Hilbert RMS: common centre, inexact sums: max rel diff %.2g; local centres: %.2g; "
           "unsharded vs float64: %.2g\n", worst_cent, worst_local, worst_ref);
#ifdef RN_USE_CBLAS
    /* the products come from cblas_sgemm, whose rounding may depend on the block's size and on
     * the library's threads (measured with OpenBLAS 0.3.21 on an AMD EPYC: 6 of 16 exact-sum runs
     * differ, the common-centre runs by 1.4e-9): bit-identity is the built-in kernel's claim only,
     * and here the sharded result must agree to float rounding */
    (void)bad_one;
    (void)bad_exact;
    CHECK(worst_cent <= 1e-6 && worst_local <= 1e-5 && worst_ref <= 1e-5);
#else
    CHECK_MSG(bad_one == 0 && bad_exact == 0, "%d one-shard, %d exact-sum runs (of %d) not bit-identical", bad_one,
              bad_exact, runs);
    CHECK(worst_cent <= 1e-9 && worst_local <= 1e-5 && worst_ref <= 1e-5);
#endif
}

/* bit-identical across thread counts (1, 2, 3; without OpenMP: repeated calls), in both
 * parallel modes (70 and 600 tokens) and with a partial last group of vocabulary blocks */
static void test_rms_threads(void)
{
    t_rng r = {111};
    size_t rows = 2100, cols = 33, N, i;
    float *S = fmat(rows * cols), *H = fmat(600 * cols);
    int bad = 0, t;
#ifdef _OPENMP
    int maxt = omp_get_max_threads();
#endif
    for (i = 0; i < rows * cols; i++) S[i] = (float)(t_rng_normal(&r) * (1 + i % 5));
    for (i = 0; i < 600 * cols; i++) H[i] = (float)t_rng_normal(&r);
    for (N = 70; N <= 600; N += 530) {
        double r0 = 0.0, r1;
        for (t = 1; t <= 3; t++) {
#ifdef _OPENMP
            omp_set_num_threads(t);
#endif
            CHECK(rn_hilbert_rms(S, rows, cols, cols, H, N, cols, &r1) == RN_OK);
            if (t == 1) r0 = r1;
            else if (memcmp(&r0, &r1, sizeof r0) != 0) bad++;
        }
    }
#ifdef _OPENMP
    omp_set_num_threads(maxt);
#endif
    CHECK(bad == 0);
    free(S); free(H);
}

static void test_rms_sharded_errors(void)
{
    size_t rows = 10, cols = 4, N = 3, need = rn_hilbert_rms_workspace_size(cols, N), i;
    float S[40], H[12];
    double sums[5], keep[5], mx[3], mn[3];
    void *ws = malloc(need);
    for (i = 0; i < 40; i++) S[i] = (float)i * 0.25f;
    for (i = 0; i < 12; i++) H[i] = 1.0f - (float)i;
    for (i = 0; i < 5; i++) sums[i] = keep[i] = -2.0;
    CHECK(rn_hilbert_rms_center_sums(NULL, rows, cols, cols, sums) == RN_ERR_NULL);
    CHECK(rn_hilbert_rms_center_sums(S, rows, cols, cols, NULL) == RN_ERR_NULL);
    CHECK(rn_hilbert_rms_center_sums(S, 0, cols, cols, sums) == RN_ERR_SIZE);
    CHECK(rn_hilbert_rms_center_sums(S, rows, cols, cols - 1, sums) == RN_ERR_SIZE);
    CHECK(rn_hilbert_rms_center_sums(S, rows, cols, cols, (double *)(void *)(S + 2)) == RN_ERR_ALIAS);
    S[13] = NANF;
    CHECK(rn_hilbert_rms_center_sums(S, rows, cols, cols, sums) == RN_ERR_NONFINITE);
    CHECK(memcmp(sums, keep, sizeof sums) == 0);
    S[13] = 1.0f;
    CHECK(rn_hilbert_rms_center_sums(S, rows, cols, cols, sums) == RN_OK && sums[4] == 10.0);
    CHECK_NEAR(sums[0], 0.25 * (0 + 4 + 8 + 12 + 16 + 20 + 24 + 28 + 32 + 36), 0.0, 0.0);
    for (i = 0; i < 3; i++) mx[i] = mn[i] = 5.0;
    CHECK(rn_hilbert_rms_partial_centered_ws(S, rows, cols, cols, NULL, H, N, cols, ws, need, mx, mn) == RN_ERR_NULL);
    sums[4] = 9.0; /* fewer rows in all than this shard has */
    CHECK(rn_hilbert_rms_partial_centered_ws(S, rows, cols, cols, sums, H, N, cols, ws, need, mx, mn) == RN_ERR_DOMAIN);
    sums[4] = 10.5;
    CHECK(rn_hilbert_rms_partial_centered_ws(S, rows, cols, cols, sums, H, N, cols, ws, need, mx, mn) == RN_ERR_DOMAIN);
    sums[4] = 20.0; sums[1] = INFINITY;
    CHECK(rn_hilbert_rms_partial_centered_ws(S, rows, cols, cols, sums, H, N, cols, ws, need, mx, mn) == RN_ERR_NONFINITE);
    sums[1] = 1.0;
    CHECK(rn_hilbert_rms_partial_centered_ws(S, rows, cols, cols, sums, H, N, cols, ws, need, mx, (double *)ws) == RN_ERR_ALIAS);
    CHECK(rn_hilbert_rms_partial_centered_ws(S, rows, cols, cols, (const double *)ws, H, N, cols, ws, need, mx, mn) == RN_ERR_ALIAS);
    {
        size_t one; /* the least it takes: the one-thread size */
        T_ONE_THREAD(rn_hilbert_rms_workspace_size(cols, N), one);
        CHECK(rn_hilbert_rms_partial_centered_ws(S, rows, cols, cols, sums, H, N, cols, ws, one - 1, mx, mn) ==
              RN_ERR_SIZE);
    }
    for (i = 0; i < 3; i++) CHECK(mx[i] == 5.0 && mn[i] == 5.0);
    /* any centre gives the same ranges up to rounding (here the sums of a larger "cluster") */
    CHECK(rn_hilbert_rms_partial_centered_ws(S, rows, cols, cols, sums, H, N, cols, ws, need, mx, mn) == RN_OK);
    {
        double wx[3], wn[3];
        CHECK(rn_hilbert_rms_partial_ws(S, rows, cols, cols, H, N, cols, ws, need, wx, wn) == RN_OK);
        for (i = 0; i < 3; i++) { CHECK_NEAR(mx[i], wx[i], 1e-4, 1e-5); CHECK_NEAR(mn[i], wn[i], 1e-4, 1e-5); }
    }
    free(ws);
}

int main(void)
{
    RUN(test_one_shard_bitexact);
    RUN(test_shards_equal_rows);
    RUN(test_shards_exact_bitexact);
    RUN(test_shards_general_rounding);
    RUN(test_shards_nonfinite);
    RUN(test_shard_phases_and_errors);
    RUN(test_ring_schedule);
    RUN(test_diameter_sharded);
    RUN(test_diameter_pair_api);
    RUN(test_rms_sharded);
    RUN(test_rms_threads);
    RUN(test_rms_sharded_errors);
    return TEST_REPORT();
}
