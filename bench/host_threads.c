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
 * Then, in this process: a stack [L, m, n] with one state, its blocks one after another against
 * one per thread (issue 13).
 *
 *   build/bench/host_threads [--rounds N]      (make bench-host; bench/RESULTS.md records it)
 *
 * Built again as build/bench/host_threshold (-DHOST_THRESHOLD -DMUON_GEMM_PARALLEL_MIN=1, also in
 * make bench-host): where two threads start to pay for one product, per wait policy and load:
 * the measurement behind MUON_GEMM_PARALLEL_MIN.
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
#include "bench_proc.h"

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

/* Runs "self --child a b c" in a fresh process (its environment set first); 0 and its output
 * line in out. */
static int run_child(const char *self, const char *policy, int a, int b, int c, char *out, size_t outlen)
{
    int fd[2], status;
    pid_t pid;
    ssize_t got;
    size_t have = 0;
    if (pipe(fd) != 0) return 1;
    pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
        char sa[16], sb[16], sc[16];
        dup2(fd[1], 1);
        close(fd[0]);
        if (policy) setenv("OMP_WAIT_POLICY", policy, 1);
        else unsetenv("OMP_WAIT_POLICY");
        setenv("OMP_NUM_THREADS", "2", 1); /* the team's ceiling; cfg.threads picks 1 or 2 */
        snprintf(sa, sizeof sa, "%d", a);
        snprintf(sb, sizeof sb, "%d", b);
        snprintf(sc, sizeof sc, "%d", c);
        execl(self, self, "--child", sa, sb, sc, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    while (have + 1 < outlen && (got = read(fd[0], out + have, outlen - 1 - have)) > 0) have += (size_t)got;
    close(fd[0]);
    waitpid(pid, &status, 0);
    out[have] = 0;
    return have == 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}

static int run_config(const char *self, const char *policy, int threads, int layers, int rounds, double *med,
                      double *mx)
{
    char buf[128];
    if (run_child(self, policy, threads, rounds, layers, buf, sizeof buf)) return 1;
    return sscanf(buf, "%lf %lf", med, mx) == 2 ? 0 : 1;
}


#ifdef HOST_THRESHOLD
/* The threshold build (build/bench/host_threshold, -DMUON_GEMM_PARALLEL_MIN=1: every product on
 * the whole team): muon_sgemm_ws of n x n x n, n in SIZES, on `threads` threads; prints the
 * median ms of each size on one line. */
#define NSIZES 9
static const int sizes[NSIZES] = {16, 24, 32, 48, 64, 96, 128, 192, 256};
static int child_gemm(int threads)
{
    int q;
    omp_set_num_threads(threads);
    for (q = 0; q < NSIZES; q++) {
        size_t n = (size_t)sizes[q], i, wsb = muon_gemm_workspace_size(threads);
        float *A = (float *)malloc(n * n * sizeof(float)), *B = (float *)malloc(n * n * sizeof(float));
        float *C = (float *)malloc(n * n * sizeof(float));
        void *ws = malloc(wsb);
        double t[MAXR];
        int reps = 31, r, inner = (int)(2e6 / (double)(n * n * n)) + 1, k;
        if (!A || !B || !C || !ws) return 1;
        for (i = 0; i < n * n; i++) A[i] = (float)(i % 7) - 3.0f, B[i] = (float)(i % 5) - 2.0f;
        for (r = -1; r < reps; r++) { /* r = -1: warm-up */
            double t0 = now_s();
            for (k = 0; k < inner; k++)
                if (muon_sgemm_ws(MUON_NO_TRANS, MUON_NO_TRANS, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n, ws, wsb) != MUON_OK)
                    return 1;
            if (r >= 0) t[r] = 1e3 * (now_s() - t0) / inner;
        }
        qsort(t, (size_t)reps, sizeof(double), cmp_double);
        printf("%.5f ", t[reps / 2]);
        free(A), free(B), free(C), free(ws);
    }
    printf("\n");
    return 0;
}

static int threshold_main(void)
{
    static const char *policies[2] = {NULL, "passive"};
    int p, load, q;
    printf("host_threshold: muon_sgemm_ws n x n x n with every product threaded (MUON_GEMM_PARALLEL_MIN=1),\n"
           "1 vs 2 threads, each in a fresh process; median of 31 timings (each of >= 2M multiply-adds);\n"
           "the built-in threshold is %.0f multiply-adds (128^3); competing = one process spinning on a core\n",
           2097152.0);
    for (p = 0; p < 2; p++)
        for (load = 0; load < 2; load++) {
            char b1[512], b2[512];
            double t1[NSIZES], t2[NSIZES];
            const char *c1 = b1, *c2 = b2;
            pid_t sp = load ? spinner() : 0;
            int bad, n1 = 0, n2 = 0;
            if (load) {
                struct timespec pause = {0, 200000000L};
                nanosleep(&pause, NULL);
            }
            bad = run_child("/proc/self/exe", policies[p], 1, 0, 0, b1, sizeof b1) ||
                  run_child("/proc/self/exe", policies[p], 2, 0, 0, b2, sizeof b2);
            if (sp > 0) {
                kill(sp, SIGKILL);
                waitpid(sp, NULL, 0);
            }
            for (q = 0; !bad && q < NSIZES; q++) {
                bad = sscanf(c1, "%lf%n", &t1[q], &n1) != 1 || sscanf(c2, "%lf%n", &t2[q], &n2) != 1;
                c1 += n1, c2 += n2;
            }
            printf("\nOMP_WAIT_POLICY %s, %s\n%6s %14s %12s %10s %12s\n", policies[p] ? policies[p] : "(default)",
                   load ? "competing" : "idle", "n", "mult-adds", "1 thread ms", "2 thr ms", "2 thr gain");
            if (bad) {
                printf("FAILED\n");
                return 1;
            }
            for (q = 0; q < NSIZES; q++)
                printf("%6d %14.0f %12.4f %10.4f %11.2fx\n", sizes[q], (double)sizes[q] * sizes[q] * sizes[q], t1[q],
                       t2[q], t1[q] / t2[q]);
            fflush(stdout);
        }
    return 0;
}
#endif

#if !defined(HOST_THRESHOLD) && defined(_OPENMP)
/* A stack [L, m, n] with one state (split_rows = L), this process, the default wait policy, idle:
 * the L blocks one after another on the 2-thread team (a workspace 65 bytes short of a slice per
 * thread) against one per thread (the size muon_step_workspace_size gives the split config),
 * and one thread (the one-thread size); the three alternate rep by rep; median of 9. */
static int stack_table(void)
{
    static const size_t shp[3][3] = {{16, 128, 128}, {12, 384, 384}, {4, 768, 768}};
    int q;
    printf("\nstacks [L, m, n], one state, split_rows = L (this process, default policy, idle), median ms of 9:\n"
           "%-16s %12s %18s %18s %8s\n", "L x m x n", "1 thread", "2 thr one-by-one", "2 thr per-thread", "gain");
    for (q = 0; q < 3; q++) {
        size_t L = shp[q][0], m = shp[q][1], n = shp[q][2], N = L * m * n, i, one, lanes;
        float *W = (float *)malloc(N * sizeof(float)), *G = (float *)malloc(N * sizeof(float));
        muon_config cfg = muon_default();
        muon_state st;
        void *ws;
        double t[3][9], med[3];
        int r, k, saved = omp_get_max_threads();
        unsigned x = 3u;
        if (!W || !G || muon_init_ex(&st, L * m, n, MUON_INIT_NO_WORKSPACE) != MUON_OK) return 1;
        for (i = 0; i < N; i++) {
            x = x * 1664525u + 1013904223u;
            W[i] = 0.02f * ((float)(x >> 9) / 4194304.0f - 1.0f);
            G[i] = (float)(x >> 9) / 4194304.0f - 1.0f;
        }
        cfg.lr = 1e-4;
        cfg.split_rows = L;
        omp_set_num_threads(2);
        lanes = muon_step_workspace_size(L * m, n, &cfg);
        omp_set_num_threads(1);
        one = muon_step_workspace_size(L * m, n, &cfg);
        omp_set_num_threads(saved);
        ws = malloc(lanes > one ? lanes : one);
        if (!ws) return 1;
        for (r = -1; r < 9; r++) /* r = -1: warm-up */
            for (k = 0; k < 3; k++) {
                int j = (r + 9 + k) % 3;
                double t0;
                cfg.threads = j == 0 ? 1 : 2;
                t0 = now_s();
                /* 65 bytes short of the slices (the alignment slack is 64): the blocks one after
                 * another, each on the 2-thread team with its full packing space (as before 0.3) */
                if (muon_step_ws(&st, &cfg, W, n, G, n, NULL, 0, ws, j == 0 ? one : j == 2 ? lanes : lanes - 65) !=
                    MUON_OK)
                    return 1;
                if (r >= 0) t[j][r] = 1e3 * (now_s() - t0);
            }
        for (k = 0; k < 3; k++) {
            qsort(t[k], 9, sizeof(double), cmp_double);
            med[k] = t[k][4];
        }
        printf("%4zu x %4zu x %4zu %12.2f %18.2f %18.2f %7.2fx\n", L, m, n, med[0], med[1], med[2], med[1] / med[2]);
        fflush(stdout);
        muon_free(&st);
        free(W);
        free(G);
        free(ws);
    }
    return 0;
}
#endif

int main(int argc, char **argv)
{
    static const char *policies[2] = {NULL, "passive"};
    static const char *forms[2] = {"muon_step x16", "muon_step_layers"};
    int rounds = 15, p, th, load, f;
    double base = 0.0;
#ifdef HOST_THRESHOLD
    if (argc == 5 && strcmp(argv[1], "--child") == 0) return child_gemm(atoi(argv[2]));
    return threshold_main();
#endif
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
#if defined(_OPENMP) && !defined(HOST_THRESHOLD)
    return stack_table();
#else
    return 0;
#endif
}
