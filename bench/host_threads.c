/* host_threads.c - muon.h inside a host program that shares the machine (issue 13).
 *
 * The case: an existing C trainer (llm.c's GPT-2 at 4 layers, 128 channels) runs Muon on its 16
 * block matrices, one muon_step each per training step: c_attn (384 x 128), attn c_proj
 * (128 x 128), c_fc (512 x 128), mlp c_proj (128 x 512) per layer, 3.1 MB of parameters. Small
 * matrices, so each step opens many short OpenMP regions: between them OpenMP's default wait
 * policy keeps the team's threads spinning, and once another process wants a core those spinning
 * threads take it from the working ones.
 *
 * Measured, each configuration in a fresh process (OMP_WAIT_POLICY is read at start-up): the
 * wall time of one round of the 16 steps, median and maximum over the rounds after a warm-up
 * round, for {default, passive} wait policy x {1, 2} threads (cfg.threads, one process) x
 * {idle, a competing process spinning on a core} x {16 muon_step calls, one muon_step_layers
 * call (the 16 layers in one parallel region, one layer per thread)}. On a 2-core machine
 * "competing" leaves the 2-thread runs one core short, as a host program's own threads would.
 *
 *   build/bench/host_threads [--rounds N]      (make bench-host; bench/RESULTS.md records it)
 */
#define _POSIX_C_SOURCE 200809L
#define MUON_IMPLEMENTATION
#include "../muon.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NMAT 16
#define MAXR 64

#include "bench_time.h"

/* One configuration, in this process: prints "median max" in ms of a round of 16 steps, as 16
 * muon_step calls (layers 0) or one muon_step_layers call (layers 1). */
static int child(int rounds, int threads, int layers)
{
    static const size_t shape[4][2] = {{384, 128}, {128, 128}, {512, 128}, {128, 512}};
    muon_state st[NMAT];
    muon_layer lay[NMAT];
    float *W[NMAT], *G[NMAT];
    double t[MAXR + 1];
    muon_config cfg = muon_default();
    unsigned r = 7u;
    int i, k;
    cfg.threads = threads;
    for (i = 0; i < NMAT; i++) {
        size_t rows = shape[i % 4][0], cols = shape[i % 4][1], n = rows * cols, j;
        W[i] = (float *)malloc(n * sizeof(float));
        G[i] = (float *)malloc(n * sizeof(float));
        if (!W[i] || !G[i] || muon_init(&st[i], rows, cols) != MUON_OK) return 1;
        for (j = 0; j < n; j++) {
            r = r * 1664525u + 1013904223u;
            W[i][j] = 0.02f * ((float)(r >> 9) / 4194304.0f - 1.0f);
            G[i][j] = (float)(r >> 9) / 4194304.0f - 1.0f;
        }
        memset(&lay[i], 0, sizeof lay[i]);
        lay[i].state = &st[i];
        lay[i].cfg = &cfg;
        lay[i].W = W[i];
        lay[i].G = G[i];
        lay[i].ldw = lay[i].ldg = cols;
    }
    for (k = 0; k <= rounds; k++) { /* round 0: warm-up */
        double t0 = now_s();
        if (layers) {
            if (muon_step_layers(lay, NMAT, threads) != MUON_OK) return 1;
        } else
            for (i = 0; i < NMAT; i++)
                if (muon_step(&st[i], &cfg, W[i], st[i].cols, G[i], st[i].cols, NULL, 0) != MUON_OK) return 1;
        t[k] = 1e3 * (now_s() - t0);
    }
    qsort(t + 1, (size_t)rounds, sizeof(double), cmp_double);
    printf("%.2f %.2f\n", t[1 + rounds / 2], t[rounds]);
    for (i = 0; i < NMAT; i++) {
        muon_free(&st[i]);
        free(W[i]);
        free(G[i]);
    }
    return 0;
}

/* Runs one configuration in a fresh process (its environment set first); 0 and the figures. */
static int run_config(const char *self, const char *policy, int threads, int layers, int rounds, double *med,
                      double *mx)
{
    int fd[2], status;
    pid_t pid;
    char buf[128];
    ssize_t got;
    if (pipe(fd) != 0) return 1;
    pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
        char th[16], ro[16], la[16];
        dup2(fd[1], 1);
        close(fd[0]);
        if (policy) setenv("OMP_WAIT_POLICY", policy, 1);
        else unsetenv("OMP_WAIT_POLICY");
        setenv("OMP_NUM_THREADS", "2", 1); /* the team's ceiling; cfg.threads picks 1 or 2 */
        snprintf(th, sizeof th, "%d", threads);
        snprintf(ro, sizeof ro, "%d", rounds);
        snprintf(la, sizeof la, "%d", layers);
        execl(self, self, "--child", th, ro, la, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    got = read(fd[0], buf, sizeof buf - 1);
    close(fd[0]);
    waitpid(pid, &status, 0);
    if (got <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
    buf[got] = 0;
    return sscanf(buf, "%lf %lf", med, mx) == 2 ? 0 : 1;
}

static pid_t spinner(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        volatile unsigned long x = 0;
        for (;;) x++;
    }
    return pid;
}

int main(int argc, char **argv)
{
    static const char *policies[2] = {NULL, "passive"};
    static const char *forms[2] = {"muon_step x16", "muon_step_layers"};
    int rounds = 15, p, th, load, f;
    double base = 0.0;
    if (argc == 5 && strcmp(argv[1], "--child") == 0) return child(atoi(argv[3]), atoi(argv[2]), atoi(argv[4]));
    if (argc == 3 && strcmp(argv[1], "--rounds") == 0) rounds = atoi(argv[2]);
    if (rounds < 1 || rounds > MAXR) {
        fprintf(stderr, "usage: %s [--rounds 1..%d]\n", argv[0], MAXR);
        return 2;
    }
#ifndef _OPENMP
    fprintf(stderr, "host_threads: built without OpenMP: nothing to measure\n");
    return 2;
#endif
    printf("host_threads: 16 muon_step calls (llm.c GPT-2, 4 layers x 128 channels: 384x128, 128x128,\n"
           "512x128, 128x512 per layer), wall ms per round, median and max of %d rounds after a warm-up;\n"
           "each row a fresh process; competing = one process spinning on a core\n", rounds);
    printf("%-17s %-16s %-8s %-10s %10s %10s %10s\n", "form", "OMP_WAIT_POLICY", "threads", "load", "median", "max",
           "vs idle 1t");
    for (f = 0; f < 2; f++)
        for (p = 0; p < 2; p++)
            for (th = 1; th <= 2; th++)
                for (load = 0; load < 2; load++) {
                    double med = 0.0, mx = 0.0;
                    pid_t sp = load ? spinner() : 0;
                    int bad;
                    if (load) { /* let it take its core */
                        struct timespec pause = {0, 200000000L};
                        nanosleep(&pause, NULL);
                    }
                    bad = run_config("/proc/self/exe", policies[p], th, f, rounds, &med, &mx);
                    if (sp > 0) {
                        kill(sp, SIGKILL);
                        waitpid(sp, NULL, 0);
                    }
                    if (bad) {
                        printf("%-17s %-16s %-8d %-10s    FAILED\n", forms[f], policies[p] ? policies[p] : "(default)",
                               th, load ? "competing" : "idle");
                        return 1;
                    }
                    if (f == 0 && p == 0 && th == 1 && load == 0) base = med;
                    printf("%-17s %-16s %-8d %-10s %10.2f %10.2f %9.2fx\n", forms[f],
                           policies[p] ? policies[p] : "(default)", th, load ? "competing" : "idle", med, mx,
                           med / base);
                    fflush(stdout);
                }
    return 0;
}
