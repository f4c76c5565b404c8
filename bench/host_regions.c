/* host_regions.c - why a step collapses on a shared machine: its OpenMP regions, counted and timed
 * (issue 40). GCC + libgomp only: linked with -Wl,--wrap=GOMP_parallel, so every parallel
 * region of the library passes through __wrap_GOMP_parallel, which times it. Per round of the
 * workload it prints the regions opened (those with a team and those on one thread), their
 * total wall time, the time between regions, a histogram of the team regions' times, and the
 * process's involuntary context switches. Run it alone and beside a copy of itself (or a busy
 * loop) and compare: the team regions' time grows, not their count.
 *
 *   build/bench/host_regions llm|gpt2 [rounds]       (make bench-host-regions; bench/RESULTS.md)
 */
#define _POSIX_C_SOURCE 200809L
#define MUON_IMPLEMENTATION
#include "../muon.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench_time.h"

void __real_GOMP_parallel(void (*fn)(void *), void *data, unsigned num_threads, unsigned flags);
void __wrap_GOMP_parallel(void (*fn)(void *), void *data, unsigned num_threads, unsigned flags);

static long n_team, n_one, hist[5];
static double t_team, t_one;

void __wrap_GOMP_parallel(void (*fn)(void *), void *data, unsigned num_threads, unsigned flags)
{
    double t0 = now_s(), t;
    __real_GOMP_parallel(fn, data, num_threads, flags);
    t = now_s() - t0;
    if (num_threads == 1) {
        n_one++;
        t_one += t;
    } else { /* 0: the default team */
        n_team++;
        t_team += t;
        hist[t < 1e-4 ? 0 : t < 1e-3 ? 1 : t < 1e-2 ? 2 : t < 1e-1 ? 3 : 4]++;
    }
}

int main(int argc, char **argv)
{
    static const size_t llm[4][2] = {{384, 128}, {128, 128}, {512, 128}, {128, 512}};
    static const size_t gpt2[4][2] = {{2304, 768}, {768, 768}, {3072, 768}, {768, 3072}};
    int big = argc > 1 && strcmp(argv[1], "gpt2") == 0, rounds = argc > 2 ? atoi(argv[2]) : 20, k;
    size_t n = big ? 4 : 16, i, j;
    muon_state st[16];
    float *W[16], *G[16];
    muon_config cfg = muon_default();
    unsigned r = 7u;
    struct rusage ru0, ru1;
    double wall = 0.0;
    (void)cmp_double; /* bench_time.h's median helper: not needed here */
    if (rounds < 1) rounds = 1;
    for (i = 0; i < n; i++) {
        size_t rows = big ? gpt2[i][0] : llm[i % 4][0], cols = big ? gpt2[i][1] : llm[i % 4][1];
        W[i] = (float *)malloc(rows * cols * sizeof(float));
        G[i] = (float *)malloc(rows * cols * sizeof(float));
        if (!W[i] || !G[i] || muon_init(&st[i], rows, cols) != MUON_OK) return 1;
        for (j = 0; j < rows * cols; j++) {
            r = r * 1664525u + 1013904223u;
            W[i][j] = 0.02f * ((float)(r >> 9) / 4194304.0f - 1.0f);
            G[i][j] = (float)(r >> 9) / 4194304.0f - 1.0f;
        }
    }
    for (k = -1; k < rounds; k++) { /* k = -1: warm-up, not counted */
        double t0;
        if (k == 0) {
            n_team = n_one = 0, t_team = t_one = 0.0;
            memset(hist, 0, sizeof hist);
            getrusage(RUSAGE_SELF, &ru0);
        }
        t0 = now_s();
        for (i = 0; i < n; i++)
            if (muon_step(&st[i], &cfg, W[i], st[i].cols, G[i], st[i].cols, NULL, 0) != MUON_OK) return 1;
        if (k >= 0) wall += now_s() - t0;
    }
    getrusage(RUSAGE_SELF, &ru1);
    printf("%s: per round %.2f ms; team regions %.1f (%.2f ms in them), one-thread regions %.1f (%.2f ms), "
           "outside regions %.2f ms; team regions by time <0.1 ms %ld, <1 ms %ld, <10 ms %ld, <100 ms %ld, "
           ">= 100 ms %ld; involuntary context switches per round %.1f\n",
           big ? "gpt2" : "llm", 1e3 * wall / rounds, (double)n_team / rounds, 1e3 * t_team / rounds,
           (double)n_one / rounds, 1e3 * t_one / rounds, 1e3 * (wall - t_team - t_one) / rounds, hist[0], hist[1],
           hist[2], hist[3], hist[4], (double)(ru1.ru_nivcsw - ru0.ru_nivcsw) / rounds);
    for (i = 0; i < n; i++) {
        muon_free(&st[i]);
        free(W[i]);
        free(G[i]);
    }
    return 0;
}
