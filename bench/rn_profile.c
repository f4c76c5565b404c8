/* rn_profile.c - a fixed amount of RowNorm-step work for instruction-count profiles
 * (valgrind --tool=callgrind has no AVX-512: build with AVX2, as bench.mk's rn_profile does).
 *   build/bench/rn_profile MODE [V d steps]     MODE: ceiling | compat | compat-skip | default
 *   build/bench/rn_profile hilbert [V d tokens]   one rn_hilbert_rms (H: tokens x d)
 *   build/bench/rn_profile diam [V d]             one rn_row_diameter of sphere-like rows
 *                                                 (every row of norm 1: nothing to prune)
 * e.g. valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.default build/bench/rn_profile default
 *      callgrind_annotate /tmp/cg.default | head -30
 */
#define RN_STATIC
#define ROWNORM_IMPLEMENTATION
#include "rownorm.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "default";
    size_t V = argc > 2 ? (size_t)atol(argv[2]) : 8192, d = argc > 3 ? (size_t)atol(argv[3]) : 512, i;
    int steps = argc > 4 ? atoi(argv[4]) : 4, s;
    float *G = (float *)malloc(V * d * sizeof(float)), *W = (float *)malloc(V * d * sizeof(float));
    rn_rownorm_state st;
    rn_rownorm_config cfg = rn_rownorm_default();
    unsigned x = 1;
    if (!G || !W || rn_rownorm_init(&st, V, d) != RN_OK) return 2;
    for (i = 0; i < V * d; i++) {
        x = x * 1664525u + 1013904223u;
        G[i] = ((float)(x >> 8) / 16777216.0f - 0.5f) * 1e-3f;
        W[i] = G[i] * 10.0f;
    }
    if (!strcmp(mode, "diam")) {
        double D = 0;
        size_t a, b;
        for (a = 0; a < V; a++) {
            double n = 0;
            for (b = 0; b < d; b++) n += (double)G[a * d + b] * G[a * d + b];
            for (b = 0; b < d; b++) G[a * d + b] = (float)(G[a * d + b] / sqrt(n));
        }
        if (rn_row_diameter(G, V, d, d, &D, &a, &b) != RN_OK) return 3;
        printf("diam %zux%zu: D %.9g (%zu, %zu); all pairs %.3g flops\n", V, d, D, a, b,
               (double)V * (double)(V - 1) * (double)d);
        rn_rownorm_free(&st);
        free(G); free(W);
        return 0;
    }
    if (!strcmp(mode, "hilbert")) {
        size_t N = (size_t)steps;
        float *H = (float *)malloc(N * d * sizeof(float));
        double rms = 0;
        if (!H) return 2;
        for (i = 0; i < N * d; i++) {
            x = x * 1664525u + 1013904223u;
            H[i] = (float)(x >> 8) / 16777216.0f - 0.5f;
        }
        if (rn_hilbert_rms(G, V, d, d, H, N, d, &rms) != RN_OK) return 3;
        printf("hilbert %zux%zu N=%zu: rms %g (%.3g flops)\n", V, d, N, rms, 2.0 * (double)V * (double)N * (double)d);
        free(H);
        rn_rownorm_free(&st);
        free(G); free(W);
        return 0;
    }
    if (!strcmp(mode, "compat")) cfg.flags = RN_REFERENCE_COMPAT;
    else if (!strcmp(mode, "compat-skip")) cfg.flags = RN_REFERENCE_COMPAT | RN_SKIP_CHECKS;
    else if (strcmp(mode, "default") && strcmp(mode, "ceiling")) return 2;
    for (s = 0; s < steps; s++) {
        if (!strcmp(mode, "ceiling")) {
            float *B = st.B;
            for (i = 0; i < V * d; i++) {
                float b = 0.95f * B[i] + 0.05f * G[i];
                B[i] = b;
                W[i] += -1e-3f * b;
            }
        } else if (rn_rownorm_step(&st, &cfg, W, d, G, d, NULL, 0) != RN_OK)
            return 3;
    }
    printf("%s %zux%zu x%d: W[7] = %g\n", mode, V, d, steps, (double)W[7]);
    rn_rownorm_free(&st);
    free(G); free(W);
    return 0;
}
