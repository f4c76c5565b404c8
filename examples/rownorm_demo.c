/* rownorm_demo.c - a tour of rownorm.h on a synthetic language-model head.
 *
 * Build and run (from the repository root):
 *     cc -std=c99 -O2 -march=native -I. examples/rownorm_demo.c -o rownorm_demo -lm && ./rownorm_demo
 * (add -fopenmp to parallelise the RowNorm step; -DRN_NO_SIMD for the scalar reference.)
 *
 * It takes a few RowNorm steps on a head U (V x d) with cross-entropy-like gradients
 * G = sum_tokens (p - y) h^T (so 1^T G = 0, SPEC 1.4), and after each step prints the exact
 * diameter D(S) of the step (which stays at most 2 lr, SPEC 1.4), its O(Vd) bracket, the
 * Hilbert RMS over a fixed panel of hidden states (SPEC 1.3), and checks the theorem of
 * SPEC 1.2: the worst-case hidden state h* of norm H moves the logits by exactly H D(S).
 */
#define ROWNORM_IMPLEMENTATION
#include "rownorm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long rng = 0x1234567ULL;
static double uniform(void) /* in (0, 1) */
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return ((double)(rng >> 11) + 0.5) / 9007199254740992.0;
}
static double normal(void) { return sqrt(-2.0 * log(uniform())) * cos(6.283185307179586 * uniform()); }

#define CHECK_OK(call)                                                                  \
    do {                                                                                \
        rn_status st_ = (call);                                                         \
        if (st_ != RN_OK) {                                                             \
            fprintf(stderr, "%s: %s\n", #call, rn_status_string(st_));                  \
            return 1;                                                                   \
        }                                                                               \
    } while (0)

int main(void)
{
    const size_t V = 4096, d = 64, N = 512, batch = 32;
    float *U = (float *)malloc(V * d * sizeof(float));
    float *G = (float *)malloc(V * d * sizeof(float));
    float *S = (float *)malloc(V * d * sizeof(float));
    float *Hs = (float *)malloc(N * d * sizeof(float)); /* validation hidden states */
    float *h = (float *)malloc(d * sizeof(float));
    double *logit = (double *)malloc(V * sizeof(double));
    rn_rownorm_state st;
    rn_rownorm_config cfg = rn_rownorm_default();
    size_t i, k, b, step;

    for (i = 0; i < V * d; i++) U[i] = (float)(0.02 * normal());
    for (i = 0; i < N * d; i++) Hs[i] = (float)normal();
    cfg.lr = 3.2e-3;
    CHECK_OK(rn_rownorm_init(&st, V, d));
    printf("RowNorm on a %zu x %zu head, lr %.2g (diameter budget 2 lr = %.3g)\n", V, d, cfg.lr, 2 * cfg.lr);

    for (step = 1; step <= 5; step++) {
        double D, lo, hi, rms, Hnorm = 10.0, mx = -1e300, mn = 1e300;
        size_t pi, pj;
        /* cross-entropy gradient of a small batch: sum_b (softmax(U h_b) - e_{y_b}) h_b^T / batch */
        memset(G, 0, V * d * sizeof(float));
        for (b = 0; b < batch; b++) {
            double zmax = -1e300, z = 0.0;
            size_t y = (size_t)(uniform() * (double)V) % V;
            for (k = 0; k < d; k++) h[k] = (float)normal();
            for (i = 0; i < V; i++) {
                double s = 0.0;
                for (k = 0; k < d; k++) s += (double)U[i * d + k] * h[k];
                logit[i] = s;
                zmax = s > zmax ? s : zmax;
            }
            for (i = 0; i < V; i++) { logit[i] = exp(logit[i] - zmax); z += logit[i]; }
            for (i = 0; i < V; i++) {
                double coef = (logit[i] / z - (i == y ? 1.0 : 0.0)) / (double)batch;
                for (k = 0; k < d; k++) G[i * d + k] += (float)(coef * h[k]);
            }
        }
        CHECK_OK(rn_rownorm_step(&st, &cfg, U, d, G, d, S, d));

        /* diagnostics of the step S (SPEC 1.2, 1.3) */
        CHECK_OK(rn_row_diameter(S, V, d, d, &D, &pi, &pj));
        CHECK_OK(rn_row_diameter_bounds(S, V, d, d, &lo, &hi));
        CHECK_OK(rn_hilbert_rms(S, V, d, d, Hs, N, d, &rms));
        /* the theorem: h* = H (s_i - s_j)/|s_i - s_j| attains osc(S h*) = H D(S) */
        CHECK_OK(rn_worst_hidden_state(S, V, d, d, pi, pj, Hnorm, h));
        for (i = 0; i < V; i++) {
            double s = 0.0;
            for (k = 0; k < d; k++) s += (double)S[i * d + k] * h[k];
            mx = s > mx ? s : mx;
            mn = s < mn ? s : mn;
        }
        printf("step %zu: D(S) = %.6g (pair %zu,%zu; %.4f x 2lr), bracket [%.4g, %.4g], "
               "Hilbert RMS %.4g, osc(S h*) / (H D) = %.6f, TV bound at h*: %.4g\n",
               step, D, pi, pj, D / (2 * cfg.lr), lo, hi, rms, (mx - mn) / (Hnorm * D),
               rn_tv_bound(mx - mn));
    }
    rn_rownorm_free(&st);
    free(U); free(G); free(S); free(Hs); free(h); free(logit);
    return 0;
}
