/* train_bench.c - the example trainer's CPU step against this machine's sgemm, side by side.
 *
 *   make build/bench/train_bench
 *   OPENBLAS_CORETYPE=SkylakeX build/bench/train_bench [--reps N] [--threads 1,2] [L d H V T B]
 *
 * Default config: the 12M-parameter model (6 layers, d 384, 6 heads, vocab 4096, T 256,
 * batch 4). For each thread count, three jobs alternate rep by rep (the first one rotates, as in
 * bench.c): one training step's forward + backward on the CPU backend (every matmul through
 * muon_sgemm, the trainer's build), a 1024^3 muon_sgemm, and a 1024^3 cblas_sgemm (OpenBLAS).
 * Each figure is the median of `reps` (>= 5) after one warm-up. The step's GFLOP/s counts the
 * model's matmul flops (model.h's gpt_flops_per_token x tokens); the ratios are that rate over
 * each sgemm rate measured in the same run. The optimizer step is not included (it is O(params),
 * memory-bound, and measured by bench.c's RowNorm / NS rows).
 * Not a test: nothing here is part of `make test`. */
#define _POSIX_C_SOURCE 200809L
#include "../examples/gpt/backend.h"
#include "../examples/gpt/model.h"
#include "muon.h"
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

char *openblas_get_corename(void);
void openblas_set_num_threads(int n);

enum { SQ = 1024, MAXR = 64 };

#include "bench_time.h"

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

static unsigned long long g_rng = 0x9e3779b97f4a7c15ull;
static double urand(void)
{
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) * (1.0 / 9007199254740992.0);
}

typedef struct ctx {
    gpt_backend *be;
    int *in, *tg;
    float *a, *b, *c;
} ctx;

static void job_step(ctx *x)
{
    float loss;
    x->be->ops->zero_grad(x->be);
    x->be->ops->forward(x->be, x->in, x->tg, &loss);
    x->be->ops->backward(x->be);
}
static void job_muon(ctx *x)
{
    muon_sgemm(MUON_NO_TRANS, MUON_NO_TRANS, SQ, SQ, SQ, 1.0f, x->a, SQ, x->b, SQ, 0.0f, x->c, SQ);
}
static void job_blas(ctx *x)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, SQ, SQ, SQ, 1.0f, x->a, SQ, x->b, SQ, 0.0f, x->c, SQ);
}

int main(int argc, char **argv)
{
    gpt_config cfg = {6, 384, 6, 256, 4096, 0};
    int B = 4, reps = 5, thr[2] = {1, 2}, nthr = 2, a, pos = 0, vals[6], ti, r, j;
    void (*const jobs[3])(ctx *) = {job_step, job_muon, job_blas};
    static double t[3][MAXR];
    ctx x;
    size_t n, i;
    gpt_status st;
    if (!getenv("OPENBLAS_CORETYPE")) { /* before OpenBLAS initialises: re-execute (see bench.c) */
        setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
        execv("/proc/self/exe", argv);
    }
    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--reps") && a + 1 < argc) reps = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--threads") && a + 1 < argc) {
            const char *s = argv[++a];
            nthr = 0;
            if (strchr(s, '1')) thr[nthr++] = 1;
            if (strchr(s, '2')) thr[nthr++] = 2;
        } else if (pos < 6) vals[pos++] = atoi(argv[a]);
        else {
            fprintf(stderr, "usage: %s [--reps N] [--threads 1,2] [L d H V T B]\n", argv[0]);
            return 2;
        }
    }
    if (pos == 6) {
        cfg.n_layers = vals[0], cfg.d_model = vals[1], cfg.n_heads = vals[2];
        cfg.vocab_size = vals[3], cfg.seq_len = vals[4], B = vals[5];
    } else if (pos) {
        fprintf(stderr, "train_bench: give all of L d H V T B or none\n");
        return 2;
    }
    if (reps < 5) reps = 5;
    if (reps > MAXR) reps = MAXR;
    memset(&x, 0, sizeof x);
    st = gpt_cpu_backend.create(&cfg, B, cfg.seq_len > 0 ? cfg.seq_len : 256, 1, &x.be);
    if (st != GPT_OK) {
        fprintf(stderr, "train_bench: create: %s\n", gpt_status_string(st));
        return 1;
    }
    cfg = x.be->config;
    n = (size_t)B * (size_t)cfg.seq_len;
    x.in = (int *)malloc(n * sizeof(int)), x.tg = (int *)malloc(n * sizeof(int));
    x.a = (float *)malloc((size_t)SQ * SQ * sizeof(float)), x.b = (float *)malloc((size_t)SQ * SQ * sizeof(float));
    x.c = (float *)malloc((size_t)SQ * SQ * sizeof(float));
    if (!x.in || !x.tg || !x.a || !x.b || !x.c) {
        fprintf(stderr, "train_bench: out of memory\n");
        return 1;
    }
    for (i = 0; i < n; i++) x.in[i] = (int)(urand() * cfg.vocab_size), x.tg[i] = (int)(urand() * cfg.vocab_size);
    for (i = 0; i < (size_t)SQ * SQ; i++) x.a[i] = (float)(urand() - 0.5), x.b[i] = (float)(urand() - 0.5);
    printf("train_bench: L=%d d=%d H=%d V=%d T=%d B=%d, %.2fM parameters, %.2f GFLOP per step "
           "(matmuls, forward + backward); OpenBLAS core %s; median of %d after one warm-up\n",
           cfg.n_layers, cfg.d_model, cfg.n_heads, cfg.vocab_size, cfg.seq_len, B,
           (double)x.be->layout.n_params * 1e-6, gpt_flops_per_token(&cfg) * (double)n * 1e-9,
           openblas_get_corename(), reps);
    printf("%-4s %14s %14s %16s %16s %12s %12s\n", "thr", "step ms", "step GF/s", "muon_sgemm GF/s",
           "cblas_sgemm GF/s", "vs muon", "vs OpenBLAS");
    for (ti = 0; ti < nthr; ti++) {
        double fl_step = gpt_flops_per_token(&cfg) * (double)n, fl_sq = 2.0 * SQ * SQ * SQ, med[3];
#ifdef _OPENMP
        omp_set_num_threads(thr[ti]);
#endif
        openblas_set_num_threads(thr[ti]);
        for (j = 0; j < 3; j++) jobs[j](&x); /* warm-up */
        for (r = 0; r < reps; r++)
            for (j = 0; j < 3; j++) {
                int k = (r + j) % 3;
                double t0 = now_s();
                jobs[k](&x);
                t[k][r] = now_s() - t0;
            }
        for (j = 0; j < 3; j++) med[j] = median(t[j], reps);
        printf("%-4d %14.1f %14.1f %16.1f %16.1f %12.2f %12.2f\n", thr[ti], 1e3 * med[0], fl_step / med[0] * 1e-9,
               fl_sq / med[1] * 1e-9, fl_sq / med[2] * 1e-9, (fl_step / med[0]) / (fl_sq / med[1]),
               (fl_step / med[0]) / (fl_sq / med[2]));
        fflush(stdout);
    }
    x.be->ops->destroy(x.be);
    free(x.in), free(x.tg), free(x.a), free(x.b), free(x.c);
    return 0;
}
