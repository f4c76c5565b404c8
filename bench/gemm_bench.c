/* gemm_bench.c - muon.h's built-in SGEMM/SSYRK side by side with the linked CBLAS (OpenBLAS).
 *
 * Build and run (from the repository root):
 *   cc -O2 -march=native -fopenmp -I. bench/gemm_bench.c -o build/gemm_bench \
 *      $(pkg-config --cflags --libs openblas) -lm
 *   OPENBLAS_CORETYPE=SkylakeX build/gemm_bench [reps] [max_threads] [l1d,l2,l3]
 *                         (reps >= 5, default 7; max_threads 1 or 2, default 2; l1d,l2,l3: cache
 *                         sizes in KB that muon.h's blocks follow instead of this CPU's, e.g.
 *                         32,512,32768 for Zen 3's: issue 51, through the tests' hook)
 * OPENBLAS_CORETYPE: Debian's OpenBLAS 0.3.21 (DYNAMIC_ARCH) does not recognise Sapphire/Emerald
 * Rapids and falls back to its SSE3 "Prescott" kernels (about 6x slower); the line above makes it
 * use its AVX-512 SkylakeX kernels, the fair comparison. Where it is unset the program names the
 * core for this CPU, and sets OPENBLAS_THREAD_TIMEOUT=4 where that is unset (OpenBLAS's idle
 * workers would spin into muon.h's 2-thread runs), and re-executes itself (bench_env.h). The core
 * it runs is printed.
 *
 * First one line: this core's FMA peak for the build's vectors and the micro-kernel's rate alone
 * (packed operands in L1 and L2), the bound the products below are held to. Then, for each
 * Newton-Schulz shape and for 1 and 2 threads (omp_set_num_threads for muon,
 * openblas_set_num_threads for OpenBLAS) it runs one warm-up of each, then `reps` rounds that
 * alternate muon and CBLAS (so both see the same machine noise), and prints the median
 * GFLOP/s of each and their ratio. Flops: GEMM 2mnk; SYRK n(n+1)k (the triangle's work).
 * Not a test: timings on a shared machine are noisy; compare ratios from one run.
 */
#define _POSIX_C_SOURCE 200809L
#define MUON_IMPLEMENTATION
#include "muon.h"
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "bench_time.h"
#include "bench_env.h"

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct {
    const char *what;
    int syrk;
    size_t m, n, k; /* GEMM: C m x n, inner k; SYRK: n x n from n x k (m unused) */
} shape;

static void fill(float *x, size_t len, unsigned seed)
{
    size_t i;
    for (i = 0; i < len; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)((seed >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
}

/* One core's FMA peak for this build's vectors: 12 independent chains of muon.h's vector FMA
 * (enough to hide a 4-cycle latency on 2 pipes), 2 flops a lane; best of 3. */
static double fma_peak_gfs(void)
{
    muon__vf x = muon__vf_set1(1.0000001f), y = muon__vf_set1(0.9999999f);
    muon__vf a0 = muon__vf_set1(0.f), a1 = muon__vf_set1(1.f), a2 = muon__vf_set1(2.f), a3 = muon__vf_set1(3.f);
    muon__vf a4 = muon__vf_set1(4.f), a5 = muon__vf_set1(5.f), a6 = muon__vf_set1(6.f), a7 = muon__vf_set1(7.f);
    muon__vf a8 = muon__vf_set1(8.f), a9 = muon__vf_set1(9.f), a10 = muon__vf_set1(10.f), a11 = muon__vf_set1(11.f);
    const long n = 20000000 / MUON__VW;
    double best = 1e30, t;
    float out[MUON__VW];
    long i;
    int r;
    for (r = 0; r < 3; r++) {
        t = now_s();
        for (i = 0; i < n; i++) {
            a0 = muon__vf_fma(a0, x, y), a1 = muon__vf_fma(a1, x, y), a2 = muon__vf_fma(a2, x, y);
            a3 = muon__vf_fma(a3, x, y), a4 = muon__vf_fma(a4, x, y), a5 = muon__vf_fma(a5, x, y);
            a6 = muon__vf_fma(a6, x, y), a7 = muon__vf_fma(a7, x, y), a8 = muon__vf_fma(a8, x, y);
            a9 = muon__vf_fma(a9, x, y), a10 = muon__vf_fma(a10, x, y), a11 = muon__vf_fma(a11, x, y);
        }
        t = now_s() - t;
        if (t < best) best = t;
    }
    a0 = muon__vf_fma(a0, a1, a2), a3 = muon__vf_fma(a3, a4, a5), a6 = muon__vf_fma(a6, a7, a8);
    a9 = muon__vf_fma(a9, a10, a11), a0 = muon__vf_fma(a0, a3, a6), a0 = muon__vf_fma(a0, a9, x);
    muon__vf_store(out, a0);
    if (out[0] == 1234.5f) printf("(unlikely)\n"); /* keeps the chains live */
    return 12.0 * 2.0 * MUON__VW * (double)n / best * 1e-9;
}

/* The fp32 kernel's micro-kernel alone: one packed A micro-panel (MR x KC, in L1) against np
 * packed B panels (NR x KC each: 1 in L1, 16 in L2), C in L1; best of 5. */
static double ukr_gfs(const muon__gemm_kernel *kr, size_t np)
{
    size_t kc = kr->kc, mr = kr->mr, nr = kr->nr, i, q;
    float *a = (float *)malloc(mr * kc * sizeof(float)), *b = (float *)malloc(nr * kc * np * sizeof(float));
    float *c = (float *)calloc(mr * nr * np, sizeof(float));
    long reps = (long)(4e9 / (2.0 * (double)(mr * nr * kc * np))), k;
    double best = 1e30, t;
    int r;
    for (i = 0; i < mr * kc; i++) a[i] = (float)(i % 7) * 0.01f;
    for (i = 0; i < nr * kc * np; i++) b[i] = (float)(i % 5) * 0.01f;
    for (r = 0; r < 5; r++) {
        t = now_s();
        for (k = 0; k < reps; k++)
            for (q = 0; q < np; q++) kr->fn(kc, a, b + q * nr * kc, c + q * nr, nr * np, 1.0f, 1.0f);
        t = now_s() - t;
        if (t < best) best = t;
    }
    if (c[0] == 1234.5f) printf("(unlikely)\n");
    free(a); free(b); free(c);
    return 2.0 * (double)(mr * nr * kc * np) * (double)reps / best * 1e-9;
}

static void run_one(const shape *s, int impl, const float *A, const float *B, float *C, void *ws, size_t wsb)
{
    muon_status st = MUON_OK;
    if (!s->syrk) {
        if (impl == 0)
            st = muon_sgemm_ws(MUON_NO_TRANS, MUON_NO_TRANS, s->m, s->n, s->k, 1.0f, A, s->k, B, s->n, 0.0f, C,
                               s->n, ws, wsb);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)s->m, (int)s->n, (int)s->k, 1.0f, A,
                        (int)s->k, B, (int)s->n, 0.0f, C, (int)s->n);
    } else {
        if (impl == 0)
            st = muon_ssyrk_ws(MUON_NO_TRANS, s->n, s->k, 1.0f, A, s->k, 0.0f, C, s->n, ws, wsb);
        else
            cblas_ssyrk(CblasRowMajor, CblasLower, CblasNoTrans, (int)s->n, (int)s->k, 1.0f, A, (int)s->k, 0.0f, C,
                        (int)s->n);
    }
    if (st != MUON_OK) {
        fprintf(stderr, "muon failed: %s\n", muon_status_string(st));
        exit(1);
    }
}

int main(int argc, char **argv)
{
    static const shape shapes[] = {
        {"sgemm 768x768 . 768x768   (A.A / B.X, square)", 0, 768, 768, 768},
        {"sgemm 768x768 . 768x3072  (B.X)", 0, 768, 3072, 768},
        {"sgemm 1024x1024 . 1024x4096 (B.X)", 0, 1024, 4096, 1024},
        {"sgemm 2048x2048 . 2048x2048", 0, 2048, 2048, 2048},
        {"ssyrk X X^T, X 768x3072", 1, 0, 768, 3072},
        {"ssyrk X X^T, X 1024x4096", 1, 0, 1024, 4096},
        {"ssyrk A A^T, A 768x768", 1, 0, 768, 768},
    };
    int reps = argc > 1 ? atoi(argv[1]) : 7, threads[2] = {1, 2}, ti, nthr = argc > 2 ? atoi(argv[2]) : 2;
    size_t si, wsb, mc, nc;
    void *ws;
    muon__caches c;
    const muon__gemm_kernel *kr = muon__gemm_choose(0, 0);
    bench_openblas_env(argv, "gemm_bench");
    if (argc > 3) { /* forced cache sizes (KB) */
        unsigned long a = 0, b = 0, d = 0;
        if (sscanf(argv[3], "%lu,%lu,%lu", &a, &b, &d) < 2) {
            fprintf(stderr, "caches: l1d,l2[,l3] in KB\n");
            return 2;
        }
        c.l1d = (size_t)a * 1024, c.l2 = (size_t)b * 1024, c.l3 = (size_t)d * 1024;
        muon__caches_force(&c);
    }
    c = muon__caches_get();
    muon__gemm_bounds(kr, &mc, &nc);
    wsb = muon_gemm_workspace_size(2); /* (after the caches are forced: the size follows them) */
    ws = malloc(wsb);
    if (reps < 5) reps = 5;
    printf("muon kernel: %s; caches L1d %zu KB, L2 %zu KB, L3 %zu KB%s; blocks KC=%d MC=%d NC=%d; reps=%d (median)\n",
           kr->name, c.l1d / 1024, c.l2 / 1024, c.l3 / 1024, argc > 3 ? " (forced)" : "", (int)kr->kc, (int)mc,
           (int)nc, reps);
    printf("cblas: %s; OPENBLAS_CORETYPE=%s OPENBLAS_THREAD_TIMEOUT=%s\n", openblas_get_config(),
           getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "(unset)",
           getenv("OPENBLAS_THREAD_TIMEOUT") ? getenv("OPENBLAS_THREAD_TIMEOUT") : "(unset)");
    {
        double pk = fma_peak_gfs(), u1 = ukr_gfs(kr, 1), u16 = ukr_gfs(kr, 16);
        printf("1 thread: FMA peak %.1f GF/s (%d-float vectors); micro-kernel alone, B in L1 %.1f GF/s (%.2f of "
               "peak), B in L2 %.1f GF/s (%.2f)\n",
               pk, MUON__VW, u1, u1 / pk, u16, u16 / pk);
    }
    printf("%-46s %3s %10s %10s %7s\n", "shape", "thr", "muon GF/s", "cblas GF/s", "ratio");
    for (ti = 0; ti < 2 && threads[ti] <= nthr; ti++) {
#ifdef _OPENMP
        omp_set_num_threads(threads[ti]);
#endif
        openblas_set_num_threads(threads[ti]);
        for (si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            const shape *s = &shapes[si];
            size_t rowsA = s->syrk ? s->n : s->m, rowsC = s->syrk ? s->n : s->m;
            float *A = (float *)malloc(rowsA * s->k * sizeof(float));
            float *B = (float *)malloc(s->k * s->n * sizeof(float));
            float *C = (float *)malloc(rowsC * s->n * sizeof(float));
            double t[2][64], flops = s->syrk ? (double)s->n * (double)(s->n + 1) * (double)s->k
                                              : 2.0 * (double)s->m * (double)s->n * (double)s->k;
            double gf[2];
            int rep, impl;
            fill(A, rowsA * s->k, 1u);
            fill(B, s->k * s->n, 2u);
            memset(C, 0, rowsC * s->n * sizeof(float));
            run_one(s, 0, A, B, C, ws, wsb);
            run_one(s, 1, A, B, C, ws, wsb);
            for (rep = 0; rep < reps && rep < 64; rep++)
                for (impl = 0; impl < 2; impl++) {
                    double t0 = now_s();
                    run_one(s, impl, A, B, C, ws, wsb);
                    t[impl][rep] = now_s() - t0;
                }
            for (impl = 0; impl < 2; impl++) gf[impl] = flops / median(t[impl], reps < 64 ? reps : 64) * 1e-9;
            printf("%-46s %3d %10.1f %10.1f %7.2f\n", s->what, threads[ti], gf[0], gf[1], gf[0] / gf[1]);
            fflush(stdout);
            free(A); free(B); free(C);
        }
    }
    free(ws);
    return 0;
}
