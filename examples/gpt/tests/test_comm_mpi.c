/* test_comm_mpi.c - the MPI communicator (comm.h) and the sharded library calls the trainer makes,
 * against their one-process results. Run under mpirun with 2 or more ranks (mpi_train.sh does):
 *   mpirun -np 2 build/gpt/test_comm_mpi
 * A test passes when it made checks and none failed on ANY rank (the verdicts are all-reduced);
 * rank 0 prints "mpi_comm: N passed, M failed".
 *   split      gpt_comm_split tiles [0, n) in contiguous blocks differing by at most one row
 *   allreduce  float and double sums; bcast; send / recv
 *   share      owned segments of one array reach every rank; bytes outside the segments untouched
 *   muon split muon_assign_owners + each owner's muon_step + share = every rank stepping every
 *              matrix, bit for bit (3 steps, 6 shapes; both ranks own matrices)
 *   rownorm    rn_rownorm_shard_begin/middle/finish with the all-reduces = rn_rownorm_step on the
 *              whole head: B bit for bit, W and S within 2 float ulps (rownorm.h 1.5b: the
 *              column sums are added in another order); a NaN in one rank's rows is reported by
 *              every rank and leaves every state as it was */
#include "comm.h"
#include "muon.h"
#include "rownorm.h"

#define TEST_VARIANT "mpi_comm"
#include "tests/test.h"

static gpt_comm *g_comm;

/* RUN with the verdict agreed over the ranks */
#define MRUN(fn)                                                                               \
    do {                                                                                       \
        int c0_ = t__checks, bad_ = 0;                                                         \
        t__current = #fn;                                                                      \
        t__fails_here = 0;                                                                     \
        fn();                                                                                  \
        if (t__checks == c0_) fprintf(stderr, "[rank %d] %s: made no checks\n", g_comm->rank, #fn); \
        bad_ = t__fails_here > 0 || t__checks == c0_;                                          \
        gpt_comm_agree(g_comm, bad_, &bad_);                                                   \
        if (bad_) t__failed++; else t__passed++;                                               \
    } while (0)

static void test_split(void)
{
    size_t n;
    int size, r;
    for (n = 0; n < 60; n++)
        for (size = 1; size <= 7; size++) {
            size_t next = 0, mn = (size_t)-1, mx = 0;
            for (r = 0; r < size; r++) {
                size_t lo, hi;
                gpt_comm_split(n, r, size, &lo, &hi);
                CHECK(lo == next && hi >= lo);
                next = hi;
                mn = hi - lo < mn ? hi - lo : mn;
                mx = hi - lo > mx ? hi - lo : mx;
            }
            CHECK(next == n && mx - mn <= 1);
        }
}

static void test_allreduce_bcast_sendrecv(void)
{
    gpt_comm *c = g_comm;
    size_t n = 100003, i;
    int r;
    float *f = (float *)malloc(n * sizeof *f);
    double *d = (double *)malloc(n * sizeof *d), want_r = 0.0;
    unsigned char *b = (unsigned char *)malloc(n);
    for (r = 0; r < c->size; r++) want_r += r;
    for (i = 0; i < n; i++) f[i] = (float)c->rank + 0.5f * (float)(i % 1000), d[i] = c->rank * 1e-3 + (double)i;
    CHECK(c->ops->allreduce_f32(c, f, n) == 0);
    CHECK(c->ops->allreduce_f64(c, d, n) == 0);
    for (i = 0; i < n; i++) {
        if (f[i] != (float)want_r + (float)c->size * 0.5f * (float)(i % 1000)) break;
        if (fabs(d[i] - (want_r * 1e-3 + (double)c->size * (double)i)) > 1e-6 * (1.0 + (double)i)) break;
    }
    CHECK_MSG(i == n, "element %zu wrong", i);
    CHECK_NEAR(d[n - 1], want_r * 1e-3 + (double)c->size * (double)(n - 1), 0.0, 1e-12);
    /* bcast from the last rank */
    for (i = 0; i < n; i++) b[i] = c->rank == c->size - 1 ? (unsigned char)(i * 7) : 0;
    CHECK(c->ops->bcast(c, b, n, c->size - 1) == 0);
    for (i = 0; i < n && b[i] == (unsigned char)(i * 7); i++) continue;
    CHECK(i == n);
    /* rank 0 sends to every rank, which sends back the bytes + 1 */
    if (c->rank == 0) {
        for (r = 1; r < c->size; r++) {
            for (i = 0; i < n; i++) b[i] = (unsigned char)(i + (size_t)r);
            CHECK(c->ops->send(c, b, n, r) == 0);
            CHECK(c->ops->recv(c, b, n, r) == 0);
            for (i = 0; i < n && b[i] == (unsigned char)(i + (size_t)r + 1); i++) continue;
            CHECK(i == n);
        }
    } else {
        CHECK(c->ops->recv(c, b, n, 0) == 0);
        for (i = 0; i < n; i++) b[i]++;
        CHECK(c->ops->send(c, b, n, 0) == 0);
    }
    free(f), free(d), free(b);
}

static void test_share(void)
{
    gpt_comm *c = g_comm;
    /* segments with gaps between them, owners in a scrambled order */
    gpt_comm_segment seg[9];
    size_t off = 3, k, i, n;
    float *a;
    int ok = 1;
    for (k = 0; k < 9; k++) {
        seg[k].offset = off;
        seg[k].count = 17 * k + (k == 4 ? 0 : 5); /* one segment is empty */
        seg[k].owner = (int)((k * 5 + 1) % (size_t)c->size);
        off += seg[k].count + (k % 3);
    }
    n = off + 11;
    a = (float *)malloc(n * sizeof *a);
    for (i = 0; i < n; i++) a[i] = -1.0f - (float)c->rank;
    for (k = 0; k < 9; k++)
        if (seg[k].owner == c->rank)
            for (i = 0; i < seg[k].count; i++) a[seg[k].offset + i] = 0.25f * (float)(seg[k].offset + i) + (float)seg[k].owner;
    CHECK(c->ops->share(c, a, seg, 9) == 0);
    for (i = 0; i < n; i++) {
        float want = -1.0f - (float)c->rank;
        for (k = 0; k < 9; k++)
            if (i >= seg[k].offset && i < seg[k].offset + seg[k].count) want = 0.25f * (float)i + (float)seg[k].owner;
        ok &= a[i] == want;
    }
    CHECK(ok);
    /* twice in a row (the packing buffers are reused) */
    CHECK(c->ops->share(c, a, seg, 9) == 0);
    free(a);
}

static void fill(float *x, size_t n, t_rng *r, double s)
{
    size_t i;
    for (i = 0; i < n; i++) x[i] = (float)(s * t_rng_normal(r));
}

static void test_muon_split(void)
{
    gpt_comm *c = g_comm;
    enum { NM = 6, STEPS = 3 };
    const size_t rows[NM] = {16, 32, 16, 8, 24, 40}, cols[NM] = {16, 16, 48, 8, 24, 8};
    size_t off[NM + 1], i;
    int owner[NM], k, t, owns = 0, all = 0, ok = 1;
    float *W_ref, *W, *G;
    muon_state ref[NM], st[NM];
    muon_config cfg = muon_default();
    gpt_comm_segment seg[NM];
    t_rng rng = {42};
    off[0] = 0;
    for (k = 0; k < NM; k++) off[k + 1] = off[k] + rows[k] * cols[k];
    W_ref = (float *)malloc(off[NM] * sizeof(float));
    W = (float *)malloc(off[NM] * sizeof(float));
    G = (float *)malloc(off[NM] * sizeof(float));
    fill(W_ref, off[NM], &rng, 0.02);
    memcpy(W, W_ref, off[NM] * sizeof(float));
    CHECK(muon_assign_owners(rows, cols, NM, c->size, owner, NULL) == MUON_OK);
    for (k = 0; k < NM; k++) {
        owns |= owner[k] == c->rank;
        seg[k].offset = off[k], seg[k].count = rows[k] * cols[k], seg[k].owner = owner[k];
        CHECK(muon_init(&ref[k], rows[k], cols[k]) == MUON_OK);
        memset(&st[k], 0, sizeof st[k]);
        if (owner[k] == c->rank) CHECK(muon_init(&st[k], rows[k], cols[k]) == MUON_OK);
    }
    gpt_comm_agree(c, owns, &all);
    CHECK_MSG(all == c->size, "only %d of %d ranks own a matrix", all, c->size);
    cfg.weight_decay = 0.1;
    for (t = 0; t < STEPS; t++) {
        fill(G, off[NM], &rng, 1.0); /* the same on every rank (same seed) */
        for (k = 0; k < NM; k++) {
            CHECK(muon_step(&ref[k], &cfg, W_ref + off[k], cols[k], G + off[k], cols[k], NULL, 0) == MUON_OK);
            if (owner[k] == c->rank) CHECK(muon_step(&st[k], &cfg, W + off[k], cols[k], G + off[k], cols[k], NULL, 0) == MUON_OK);
        }
        CHECK(c->ops->share(c, W, seg, NM) == 0);
    }
    for (i = 0; i < off[NM]; i++) ok &= memcmp(&W[i], &W_ref[i], sizeof(float)) == 0;
    CHECK_MSG(ok, "owner split + share differs from stepping every matrix");
    for (k = 0; k < NM; k++) muon_free(&ref[k]), muon_free(&st[k]);
    free(W_ref), free(W), free(G);
}

static int ulps_close(float a, float b, double ulps)
{
    double m = fabs((double)a) > fabs((double)b) ? fabs((double)a) : fabs((double)b);
    return fabs((double)a - (double)b) <= ulps * m * 1.1920928955078125e-07 + 1e-30;
}

static void test_rownorm_shard(void)
{
    gpt_comm *c = g_comm;
    const size_t V = 37, d = 24;
    size_t lo, hi, nl, i, n = 0, nx = rn_rownorm_shard_exchange_size(d);
    float *W_ref = (float *)malloc(V * d * sizeof(float)), *W = (float *)malloc(V * d * sizeof(float));
    float *G = (float *)malloc(V * d * sizeof(float)), *S_ref = (float *)malloc(V * d * sizeof(float));
    float *S = (float *)malloc(V * d * sizeof(float));
    double *x = (double *)malloc(nx * sizeof(double));
    rn_rownorm_state ref, st;
    rn_rownorm_config cfg = rn_rownorm_default();
    rn_status rs;
    t_rng rng = {7};
    int t, okW = 1, okS = 1, okB = 1, agreed = 0;
    unsigned long long t_before;
    gpt_comm_split(V, c->rank, c->size, &lo, &hi);
    nl = hi - lo;
    fill(W_ref, V * d, &rng, 0.02);
    memcpy(W, W_ref, V * d * sizeof(float));
    CHECK(rn_rownorm_init(&ref, V, d) == RN_OK);
    CHECK(rn_rownorm_init(&st, nl, d) == RN_OK);
    cfg.lr = 3.2e-3, cfg.weight_decay = 0.01;
    for (t = 0; t < 4; t++) {
        fill(G, V * d, &rng, 1e-2);
        CHECK(rn_rownorm_step(&ref, &cfg, W_ref, d, G, d, S_ref, d) == RN_OK);
        CHECK(rn_rownorm_shard_begin(&st, &cfg, G + lo * d, d, x, &n) == RN_OK);
        CHECK(c->ops->allreduce_f64(c, x, n) == 0);
        CHECK(rn_rownorm_shard_middle(&st, G + lo * d, d, x, x, &n) == RN_OK);
        if (n) CHECK(c->ops->allreduce_f64(c, x, n) == 0);
        CHECK(rn_rownorm_shard_finish(&st, W + lo * d, d, n ? x : NULL, S + lo * d, d) == RN_OK);
    }
    for (i = 0; i < nl * d; i++) {
        okW &= ulps_close(W[lo * d + i], W_ref[lo * d + i], 2.0);
        okS &= ulps_close(S[lo * d + i], S_ref[lo * d + i], 2.0);
        okB &= memcmp(&st.B[i], &ref.B[lo * d + i], sizeof(float)) == 0;
    }
    CHECK_MSG(okW, "sharded W differs from the unsharded step by more than 2 ulps");
    CHECK_MSG(okS, "sharded S differs from the unsharded step by more than 2 ulps");
    CHECK_MSG(okB, "sharded B differs from the unsharded step");
    CHECK(st.t == ref.t);
    /* a NaN in the last rank's rows only: every rank hears of it, nothing changes */
    fill(G, V * d, &rng, 1e-2);
    if (c->rank == c->size - 1) G[lo * d + 3] = NAN;
    memcpy(S, W, V * d * sizeof(float));
    t_before = st.t;
    CHECK(rn_rownorm_shard_begin(&st, &cfg, G + lo * d, d, x, &n) == RN_OK);
    CHECK(c->ops->allreduce_f64(c, x, n) == 0);
    rs = rn_rownorm_shard_middle(&st, G + lo * d, d, x, x, &n);
    CHECK(rs == RN_ERR_NONFINITE);
    gpt_comm_agree(c, rs == RN_ERR_NONFINITE, &agreed);
    CHECK(agreed == c->size);
    CHECK(st.t == t_before && memcmp(S, W, V * d * sizeof(float)) == 0);
    rn_rownorm_free(&ref), rn_rownorm_free(&st);
    free(W_ref), free(W), free(G), free(S_ref), free(S), free(x);
}

int main(int argc, char **argv)
{
    int rc;
    g_comm = gpt_comm_mpi_init(&argc, &argv);
    if (!g_comm) return 1;
    if (g_comm->size < 2 && g_comm->rank == 0) fprintf(stderr, "mpi_comm: run it with mpirun -np 2 (or more)\n");
    MRUN(test_split);
    MRUN(test_allreduce_bcast_sendrecv);
    MRUN(test_share);
    MRUN(test_muon_split);
    MRUN(test_rownorm_shard);
    if (g_comm->size < 2) t__failed++; /* a one-rank run tests nothing distributed */
    if (g_comm->rank == 0) rc = TEST_REPORT();
    else rc = t__failed ? 1 : 0;
    g_comm->ops->destroy(g_comm);
    return rc;
}
