/* test_team.c - the libraries' threads on a shared machine (issue 40): the rule that sends their
 * regions to one thread while their teams are held up by other work, and the results' independence
 * of it. Both headers' implementations are in this file, so the tests reach their private state
 * (muon__gate_*, rn__gate_*) to drive the rule with chosen times instead of a loaded machine. */
#define MUON_IMPLEMENTATION
/* a long muon_step_layers region at test sizes (test_gate_layers_long): 2^20 instead of 2^27;
 * test_gate_layers' layers stay below it */
#define MUON_LAYERS_TEAM_MIN 1048576.0
#include "muon.h"
#define ROWNORM_IMPLEMENTATION
#include "rownorm.h"
#include "test.h"

static void fill(float *x, size_t n, double scale, unsigned seed)
{
    size_t i;
    for (i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)(scale * ((double)(seed >> 8) / 8388608.0 - 1.0));
    }
}

#if defined(_OPENMP) && _OPENMP >= 201107
/* force a header's gate: closed (one thread) for the next `secs`, or open (secs <= 0) */
static void muon_gate_force(double secs)
{
    muon__gate_until = secs > 0.0 ? omp_get_wtime() + secs : 0.0;
    muon__gate_span = secs > 0.0 ? secs : 0.0;
    muon__gate_wall = muon__gate_lost = 0.0;
}
static void rn_gate_force(double secs)
{
    rn__gate_until = secs > 0.0 ? omp_get_wtime() + secs : 0.0;
    rn__gate_span = secs > 0.0 ? secs : 0.0;
    rn__gate_wall = rn__gate_lost = 0.0;
}

/* One region of `wall` seconds ending now whose members lost `lost` seconds (a late start). The
 * fork is put a microsecond earlier still: with a coarse omp_get_wtime (libomp's is gettimeofday's
 * microseconds) the note's own clock may read `now` again, and now - (now - wall) can round below
 * wall. */
static void muon_region(double wall, double lost)
{
    double now = omp_get_wtime(), t0 = now - wall - 1e-6;
    muon__gate_note(t0, t0 + lost, now);
}
static void rn_region(double wall, double lost)
{
    double now = omp_get_wtime(), t0 = now - wall - 1e-6;
    rn__gate_note(t0, t0, now - lost); /* a member finished early: the others were late */
}

/* The gate closed: one thread, unless its period already ran out (a test preempted for longer
 * than the 20 ms period on a loaded machine must not fail). */
#define MUON_CLOSED() (muon_team(2) == 1 || omp_get_wtime() >= muon__gate_until)
#define RN_CLOSED() (rn__gate(2) == 1 || omp_get_wtime() >= rn__gate_until)

/* the rule, driven with chosen times */
static void test_gate_rule(void)
{
    int saved = omp_get_max_threads(), k;
    double w = MUON__GATE_WINDOW, now;
    omp_set_num_threads(2);
    muon_gate_force(0.0);
    muon__gate_wall = muon__gate_lost = 0.0;
    CHECK(muon_team(0) == 2 && muon_team(2) == 2 && muon_team(1) == 1);
    /* regions that lose 20 % of their time (a member stalled now and then): no verdict against the
     * team, window after window */
    for (k = 0; k < 20; k++) muon_region(0.1 * w, 0.2 * 0.1 * w);
    CHECK(muon_team(2) == 2 && muon__gate_until == 0.0);
    /* a region that loses 60 % is judged with the rest of its window: 0.6 w of 1 w and 0.15 w of
     * 0.5 w -> 50 % lost -> held up: one thread for the shortest period */
    muon__gate_wall = muon__gate_lost = 0.0;
    muon_region(0.5 * w, 0.15 * w);
    CHECK(muon_team(2) == 2); /* half a window: no verdict yet */
    now = omp_get_wtime();
    muon_region(w, 0.6 * w);
    CHECK(MUON_CLOSED() && (muon_team(0) == 1 || omp_get_wtime() >= muon__gate_until));
    CHECK(muon__gate_span == MUON__GATE_SOLO_MIN);
    CHECK(muon__gate_until >= now + MUON__GATE_SOLO_MIN && muon__gate_until <= omp_get_wtime() + MUON__GATE_SOLO_MIN);
    CHECK(muon__gate_wall == 0.0 && muon__gate_lost == 0.0); /* a fresh window */
    /* held up again (the next try): the period doubles, up to the longest */
    for (k = 0; k < 12; k++) muon_region(w, 0.8 * w);
    CHECK(muon__gate_span == MUON__GATE_SOLO_MAX);
    muon_region(w, 0.8 * w);
    CHECK(muon__gate_span == MUON__GATE_SOLO_MAX);
    /* a window on time changes nothing; the period runs out as set */
    muon_region(w, 0.0);
    CHECK(muon__gate_span == MUON__GATE_SOLO_MAX && MUON_CLOSED());
    muon__gate_until = omp_get_wtime() - 1e-3; /* the period over */
    CHECK(muon_team(2) == 2);
    /* held up again right after it: still the longest */
    muon_region(w, 0.5 * w);
    CHECK(muon__gate_span == MUON__GATE_SOLO_MAX && MUON_CLOSED());
    /* held up long after the last period ended (a passing burst on a quiet machine): the shortest */
    muon__gate_until = omp_get_wtime() - (MUON__GATE_SOLO_MAX + MUON__GATE_RETRY + 0.01);
    muon_region(w, 0.5 * w);
    CHECK(muon__gate_span == MUON__GATE_SOLO_MIN && MUON_CLOSED());
    muon__gate_until = omp_get_wtime() - 1e-3;
    CHECK(muon_team(2) == 2);
    /* under the line: 30 % lost is not held up (the margin to 40 % absorbs a preempted test) */
    muon__gate_wall = muon__gate_lost = 0.0;
    muon_region(w, 0.3 * w);
    CHECK(muon_team(2) == 2);
    /* inside an active region the team is one (no nested teams) */
    {
        int inner = 0;
        MUON__OMP(omp parallel num_threads(2) reduction(max : inner))
        inner = muon_team(0);
        CHECK(inner == 1);
    }
    /* rownorm.h's rule is the same (here the lost time at the end: members finishing early) */
    rn_gate_force(0.0);
    rn__gate_wall = rn__gate_lost = 0.0;
    CHECK(rn__gate(2) == 2);
    for (k = 0; k < 20; k++) rn_region(0.1 * RN__GATE_WINDOW, 0.02 * RN__GATE_WINDOW);
    CHECK(rn__gate(2) == 2 && rn__gate_until == 0.0);
    rn_region(RN__GATE_WINDOW, 0.7 * RN__GATE_WINDOW);
    CHECK(RN_CLOSED() && rn__gate_span == RN__GATE_SOLO_MIN);
    rn_region(RN__GATE_WINDOW, 0.7 * RN__GATE_WINDOW);
    CHECK(rn__gate_span == 2.0 * RN__GATE_SOLO_MIN);
    rn__gate_until = omp_get_wtime() - 10.0;
    rn_region(RN__GATE_WINDOW, 0.7 * RN__GATE_WINDOW);
    CHECK(rn__gate_span == RN__GATE_SOLO_MIN);
    rn_gate_force(0.0);
    muon_gate_force(0.0);
    omp_set_num_threads(saved);
}

/* A region that runs on one thread (the gate closed, or below the threshold) judges nothing: the
 * doubling survives it, so a busy machine is not retried every 20 ms. */
static void test_gate_one_thread_silent(void)
{
    const size_t n = 512;
    float *A = (float *)malloc(n * n * sizeof(float)), *C = (float *)malloc(n * n * sizeof(float));
    int saved = omp_get_max_threads();
    omp_set_num_threads(2);
    fill(A, n * n, 1.0, 5u);
    muon_gate_force(100.0); /* closed, span 100 s */
    CHECK(muon_sgemm(MUON_NO_TRANS, MUON_TRANS, n, n, n, 1.0f, A, n, A, n, 0.0f, C, n) == MUON_OK);
    CHECK(muon__gate_span == 100.0);
    rn_gate_force(100.0);
    {
        rn_rownorm_state st;
        rn_rownorm_config cfg = rn_rownorm_default();
        CHECK(rn_rownorm_init(&st, n, n) == RN_OK);
        CHECK(rn_rownorm_step(&st, &cfg, C, n, A, n, NULL, 0) == RN_OK);
        rn_rownorm_free(&st);
    }
    CHECK(rn__gate_span == 100.0);
    muon_gate_force(0.0);
    rn_gate_force(0.0);
    omp_set_num_threads(saved);
    free(A);
    free(C);
}
/* The gate tests' layers: G and W0 filled from seed, and for each of the two passes nl copies of
 * W0 with fresh states (rows x cols) */
static void gate_layers_init(int nl, size_t rows, size_t cols, unsigned seed, float *G, float *W0,
                             float *W[2][8], muon_state st[2][8])
{
    int pass, i;
    fill(G, rows * cols, 1.0, seed);
    fill(W0, rows * cols, 0.05, seed + 1u);
    for (pass = 0; pass < 2; pass++)
        for (i = 0; i < nl; i++) {
            W[pass][i] = (float *)malloc(rows * cols * sizeof(float));
            memcpy(W[pass][i], W0, rows * cols * sizeof(float));
            CHECK(muon_init(&st[pass][i], rows, cols) == MUON_OK);
        }
}

/* muon_step_layers' own region (one layer per thread) is watched like the products' (issue 49:
 * beside two busy loops the demo's update ran 5x slower, its members waiting at the region's end
 * for one that started late): it reports to the gate when open, runs on one thread and judges
 * nothing when closed, and the layers' bits are the loop's either way. The layers are small, so
 * no product or pass inside them opens a region of its own: only the layers region can report. */
static void test_gate_layers(void)
{
    enum { NL = 8, R = 48, C = 40 };
    muon_state st[2][NL];
    muon_layer L[NL];
    float *W[2][NL], *G = (float *)malloc(R * C * sizeof(float)), *W0 = (float *)malloc(R * C * sizeof(float));
    muon_config cfg = muon_default();
    int saved = omp_get_max_threads(), pass, i;
    omp_set_num_threads(2);
    gate_layers_init(NL, R, C, 21u, G, W0, W, st);
    for (i = 0; i < NL; i++) /* the loop */
        CHECK(muon_step(&st[0][i], &cfg, W[0][i], C, G, C, NULL, 0) == MUON_OK);
    for (pass = 0; pass < 2; pass++) {
        for (i = 0; i < NL; i++) {
            memset(&L[i], 0, sizeof L[i]);
            L[i].state = &st[1][i], L[i].cfg = &cfg, L[i].W = W[1][i], L[i].G = G, L[i].ldw = L[i].ldg = C;
        }
        muon_gate_force(pass ? 100.0 : 0.0);
        if (pass) { /* closed: one thread, nothing judged (the span survives) */
            CHECK(muon_step_layers(L, NL, 2) == MUON_OK);
            CHECK(muon__gate_wall == 0.0 && muon__gate_span == 100.0);
        } else { /* open: the region reports its time (the window's sum starts far below zero, so
                  * that no verdict resets it however slow the machine: qemu takes > 30 ms) */
            muon__gate_wall = -1e9;
            CHECK(muon_step_layers(L, NL, 2) == MUON_OK);
            CHECK(muon__gate_wall > -1e9);
            muon__gate_wall = 0.0;
        }
        for (i = 0; i < NL; i++) { /* same bits as the loop */
            CHECK(memcmp(W[0][i], W[1][i], R * C * sizeof(float)) == 0);
            if (!pass) CHECK(muon_step(&st[0][i], &cfg, W[0][i], C, G, C, NULL, 0) == MUON_OK);
        }
    }
    muon_gate_force(0.0);
    omp_set_num_threads(saved);
    for (pass = 0; pass < 2; pass++)
        for (i = 0; i < NL; i++) free(W[pass][i]), muon_free(&st[pass][i]);
    free(G), free(W0);
}

/* A long muon_step_layers region (work per thread >= MUON_LAYERS_TEAM_MIN) keeps its team while
 * the gate is closed (its members take the next matrix as they finish, so a late one costs only
 * its delay: issue 49, the 12M model's update at half the loop's speed on one thread beside two
 * busy loops), reports to the gate, and gives the loop's bits. The same layers with the bound
 * above their work follow the gate: see test_gate_layers. */
static void test_gate_layers_long(void)
{
    enum { NL = 8, R = 128, C = 96 };
    muon_state st[2][NL];
    muon_layer L[NL];
    float *W[2][NL], *G = (float *)malloc(R * C * sizeof(float)), *W0 = (float *)malloc(R * C * sizeof(float));
    muon_config cfg = muon_default();
    double per_lane = (double)NL / 2.0 * R * C * C;
    int saved = omp_get_max_threads(), pass, i;
    CHECK(per_lane >= MUON_LAYERS_TEAM_MIN && 48.0 * 40.0 * 40.0 * 4.0 < MUON_LAYERS_TEAM_MIN);
    omp_set_num_threads(2);
    gate_layers_init(NL, R, C, 31u, G, W0, W, st);
    for (i = 0; i < NL; i++) {
        CHECK(muon_step(&st[0][i], &cfg, W[0][i], C, G, C, NULL, 0) == MUON_OK); /* the loop */
        memset(&L[i], 0, sizeof L[i]);
        L[i].state = &st[1][i], L[i].cfg = &cfg, L[i].W = W[1][i], L[i].G = G, L[i].ldw = L[i].ldg = C;
    }
    muon_gate_force(100.0);    /* closed for 100 s */
    muon__gate_wall = -1e9;    /* (no verdict resets the window's sum, however slow the machine) */
    CHECK(muon_step_layers(L, NL, 2) == MUON_OK);
#ifndef MUON_USE_CBLAS
    CHECK_MSG(muon__gate_wall > -1e9, "a long layers region ran on one thread while the gate was closed");
#endif
    CHECK(muon__gate_span == 100.0 && muon__gate_until > omp_get_wtime()); /* still closed */
    for (i = 0; i < NL; i++) CHECK(memcmp(W[0][i], W[1][i], R * C * sizeof(float)) == 0);
    muon_gate_force(0.0);
    omp_set_num_threads(saved);
    for (pass = 0; pass < 2; pass++)
        for (i = 0; i < NL; i++) free(W[pass][i]), muon_free(&st[pass][i]);
    free(G), free(W0);
}
#endif

/* The same bits whether the regions run on the team or on one thread (the gate open or closed):
 * muon_step, muown_step, the products, the RowNorm step, the exact diameter and the RMS. */
static void test_gate_same_bits(void)
{
    const size_t r = 384, c = 512, n = r * c, V = 1024, d = 256, tokens = 96;
    float *W0 = (float *)malloc(n * sizeof(float)), *G = (float *)malloc(n * sizeof(float));
    float *W[2], *M[2], *U0 = (float *)malloc(V * d * sizeof(float)), *GU = (float *)malloc(V * d * sizeof(float));
    float *U[2], *S[2], *H = (float *)malloc(tokens * d * sizeof(float));
    double D[2], rms[2];
    size_t ia[2], ib[2];
    int pass, k, saved = 1;
#ifdef _OPENMP
    saved = omp_get_max_threads();
    omp_set_num_threads(2);
#endif
    fill(W0, n, 0.05, 11u);
    fill(G, n, 1.0, 12u);
    fill(U0, V * d, 0.05, 13u);
    fill(GU, V * d, 1.0, 14u);
    fill(H, tokens * d, 2.0, 15u);
    for (pass = 0; pass < 2; pass++) {
        muon_state st;
        muown_state ow;
        muon_config cfg = muon_default();
        muown_config ocfg = muown_default();
        rn_rownorm_state rs;
        rn_rownorm_config rc = rn_rownorm_default();
#if defined(_OPENMP) && _OPENMP >= 201107
        muon_gate_force(pass ? 100.0 : 0.0);
        rn_gate_force(pass ? 100.0 : 0.0);
        CHECK(muon_team(2) == (pass ? 1 : 2));
#endif
        W[pass] = (float *)malloc(n * sizeof(float));
        M[pass] = (float *)malloc(n * sizeof(float));
        U[pass] = (float *)malloc(V * d * sizeof(float));
        S[pass] = (float *)malloc(V * d * sizeof(float));
        memcpy(W[pass], W0, n * sizeof(float));
        memcpy(M[pass], W0, n * sizeof(float));
        memcpy(U[pass], U0, V * d * sizeof(float));
        CHECK(muon_init(&st, r, c) == MUON_OK);
        for (k = 0; k < 2; k++) CHECK(muon_step(&st, &cfg, W[pass], c, G, c, NULL, 0) == MUON_OK);
        muon_free(&st);
        CHECK(muown_init(&ow, M[pass], r, c, c) == MUON_OK);
        CHECK(muown_step(&ow, &ocfg, M[pass], c, G, c, NULL, 0) == MUON_OK);
        muown_free(&ow);
        CHECK(rn_rownorm_init(&rs, V, d) == RN_OK);
        for (k = 0; k < 2; k++) CHECK(rn_rownorm_step(&rs, &rc, U[pass], d, GU, d, S[pass], d) == RN_OK);
        rn_rownorm_free(&rs);
        CHECK(rn_row_diameter(S[pass], V, d, d, &D[pass], &ia[pass], &ib[pass]) == RN_OK);
        CHECK(rn_hilbert_rms(S[pass], V, d, d, H, tokens, d, &rms[pass]) == RN_OK);
    }
    CHECK(memcmp(W[0], W[1], n * sizeof(float)) == 0);
    CHECK(memcmp(M[0], M[1], n * sizeof(float)) == 0);
    CHECK(memcmp(U[0], U[1], V * d * sizeof(float)) == 0 && memcmp(S[0], S[1], V * d * sizeof(float)) == 0);
    CHECK(D[0] == D[1] && ia[0] == ia[1] && ib[0] == ib[1] && D[0] > 0.0);
    { /* and it is the diameter: float64 over every pair */
        double best = 0.0;
        size_t i, j, q;
        for (i = 0; i < V; i++)
            for (j = i + 1; j < V; j++) {
                double s2 = 0.0;
                for (q = 0; q < d; q++) {
                    double e = (double)S[0][i * d + q] - (double)S[0][j * d + q];
                    s2 += e * e;
                }
                if (s2 > best) best = s2;
            }
        CHECK_NEAR(D[0], sqrt(best), 0.0, 1e-6);
    }
    CHECK(rms[0] == rms[1] && rms[0] > 0.0);
#if defined(_OPENMP) && _OPENMP >= 201107
    muon_gate_force(0.0);
    rn_gate_force(0.0);
#endif
#ifdef _OPENMP
    omp_set_num_threads(saved);
#else
    CHECK(muon_team(0) == 1 && muon_team(4) == 1); /* no OpenMP: one thread */
    (void)saved;
#endif
    for (pass = 0; pass < 2; pass++) free(W[pass]), free(M[pass]), free(U[pass]), free(S[pass]);
    free(W0), free(G), free(U0), free(GU), free(H);
}

int main(void)
{
#if defined(_OPENMP) && _OPENMP >= 201107
    RUN(test_gate_rule);
    RUN(test_gate_one_thread_silent);
    RUN(test_gate_layers);
    RUN(test_gate_layers_long);
#endif
    RUN(test_gate_same_bits);
    return TEST_REPORT();
}
