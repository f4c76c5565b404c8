/* cuda_bench.cu - GPU benchmark of the CUDA backend (`make bench-cuda`; needs a device).
 *
 * Prints, one line each (times from CUDA events, after warm-up):
 *   model     tokens/s and MFU of a full training step (forward, backward, device optimizers:
 *             Muon on block matrices, AdamW on the embedding, RowNorm on the head) for the
 *             trainer's default config and a GPT-2-small-sized one; MFU = gpt_flops_per_token x
 *             tokens/s / peak, peak = --peak TFLOP/s (default 494.7: H100/H200 SXM dense TF32 by
 *             the vendor's datasheet; the GEMMs run TF32)
 *   ns        Muon's Newton-Schulz (Jordan x 5) on a 768 x 3072 matrix: time and TFLOP/s
 *             (3 m^2 n + m^3 per step, SPEC 2.1) vs one fp32 cuBLAS GEMM of the same flops
 *   rownorm   RowNorm step at V = 50257, d = 768: time and effective bandwidth (9 array passes)
 *             vs cudaMemcpy device-to-device bandwidth
 *   diameter  exact D(S) of a RowNorm step at V = 50257, d = 768
 * Usage: bench_cuda [--quick] [--peak TFLOPS] [--steps N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.cuh"

static double peak_tflops = 494.7;

typedef struct timer {
    cudaEvent_t a, b;
} timer;
static void t_start(timer *t)
{
    cudaEventCreate(&t->a), cudaEventCreate(&t->b);
    cudaDeviceSynchronize();
    cudaEventRecord(t->a, 0);
}
static double t_stop_ms(timer *t)
{
    float ms = 0.0f;
    cudaDeviceSynchronize();
    cudaEventRecord(t->b, 0);
    cudaEventSynchronize(t->b);
    cudaEventElapsedTime(&ms, t->a, t->b);
    cudaEventDestroy(t->a), cudaEventDestroy(t->b);
    return (double)ms;
}

static void fill_dev(float *d, size_t n, double scale, unsigned seed)
{
    float *h = (float *)malloc(n * sizeof(float));
    size_t i;
    unsigned s = seed;
    for (i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        h[i] = (float)(scale * ((double)(s >> 8) / 8388608.0 - 1.0));
    }
    gpt_cuda_upload(d, h, n * sizeof(float));
    free(h);
}

/* one training step with the optimizers on the device */
typedef struct dev_opt {
    float **m, **v, **mom, *ws, *B;
    double *rnws;
} dev_opt;

static void opt_free(dev_opt *o, gpt_backend *be)
{
    int i;
    for (i = 0; o->m && i < be->layout.n_tensors; i++) {
        gpt_cuda_free(o->m[i]), gpt_cuda_free(o->v[i]);
        if (o->mom) gpt_cuda_free(o->mom[i]);
    }
    gpt_cuda_free(o->B), gpt_cuda_free(o->rnws), gpt_cuda_free(o->ws);
    free(o->m), free(o->v), free(o->mom);
    memset(o, 0, sizeof *o);
}

/* GPT_OK when every buffer was allocated, GPT_ERR_NOMEM otherwise */
static gpt_status opt_alloc(dev_opt *o, gpt_backend *be)
{
    int bad = 0;
    int nt = be->layout.n_tensors, i;
    size_t maxws = 0;
    o->m = (float **)calloc(nt, sizeof(float *)), o->v = (float **)calloc(nt, sizeof(float *));
    o->mom = (float **)calloc(nt, sizeof(float *));
    for (i = 0; i < nt; i++) {
        gpt_tensor t;
        size_t n;
        gpt_tensor_info(&be->config, i, &t);
        n = t.rows * t.cols;
        if (t.kind == GPT_TENSOR_EMBEDDING) {
            o->m[i] = (float *)gpt_cuda_malloc(n * 4), o->v[i] = (float *)gpt_cuda_malloc(n * 4);
            bad |= !o->m[i] || !o->v[i];
        } else if (t.kind == GPT_TENSOR_BLOCK_MATRIX) {
            size_t w = gpt_cuda_muon_workspace_floats(t.rows, t.cols);
            o->mom[i] = (float *)gpt_cuda_malloc(n * 4);
            bad |= !o->mom[i];
            maxws = w > maxws ? w : maxws;
        } else {
            o->B = (float *)gpt_cuda_malloc(n * 4);
            o->rnws = (double *)gpt_cuda_malloc(gpt_cuda_rownorm_workspace_doubles(t.rows, t.cols) * 8);
            bad |= !o->B || !o->rnws;
        }
    }
    o->ws = (float *)gpt_cuda_malloc(maxws * 4);
    return bad || !o->m || !o->v || !o->mom || !o->ws ? GPT_ERR_NOMEM : GPT_OK;
}

/* every tensor's step, even after one failed (as before); the first failure */
static gpt_status opt_step(dev_opt *o, gpt_backend *be, long long step)
{
    float *P = gpt_cuda_device_params(be), *G = gpt_cuda_device_grads(be);
    gpt_status st = GPT_OK, s;
    int i;
    for (i = 0; i < be->layout.n_tensors; i++) {
        gpt_tensor t;
        gpt_tensor_info(&be->config, i, &t);
        if (t.kind == GPT_TENSOR_EMBEDDING) {
            muon_adamw_config ac = muon_adamw_default();
            s = gpt_cuda_adamw_step(be, P + t.offset, G + t.offset, o->m[i], o->v[i], t.rows * t.cols, &ac, step, NULL);
        } else if (t.kind == GPT_TENSOR_BLOCK_MATRIX) {
            muon_config mc = muon_default();
            s = gpt_cuda_muon_step(be, P + t.offset, G + t.offset, o->mom[i], t.rows, t.cols, &mc, o->ws, NULL);
        } else {
            rn_rownorm_config rc = rn_rownorm_default();
            s = gpt_cuda_rownorm_step(be, P + t.offset, G + t.offset, o->B, t.rows, t.cols, &rc,
                                      (unsigned long long)(step - 1), NULL, o->rnws);
        }
        if (st == GPT_OK) st = s;
    }
    return st;
}

static void bench_model(const char *name, gpt_config cfg, int B, int T, int steps)
{
    gpt_backend *be = NULL;
    dev_opt o;
    int *in, *tg, s, i;
    size_t n = (size_t)B * T;
    float loss = 0.0f;
    double ms_fb, ms_all, fpt;
    timer tm;
    int ok = 1;
    if (gpt_cuda_backend.create(&cfg, B, T, 1, &be) != GPT_OK) {
        printf("model %-10s: cannot create (out of memory?)\n", name);
        return;
    }
    memset(&o, 0, sizeof o);
    in = (int *)malloc(n * sizeof(int)), tg = (int *)malloc(n * sizeof(int));
    if (opt_alloc(&o, be) != GPT_OK || !in || !tg) {
        printf("model %-10s: cannot allocate the optimizer state (out of memory?)\n", name);
        goto out;
    }
    for (i = 0; i < (int)n; i++) in[i] = (i * 7919) % be->config.vocab_size, tg[i] = (i * 104729 + 1) % be->config.vocab_size;
    /* every call is checked: a timing of work that failed is not printed */
#define BENCH_OK(x) ok &= (x) == GPT_OK
    for (s = 0; s < 2 && ok; s++) { /* warm-up */
        BENCH_OK(be->ops->zero_grad(be)), BENCH_OK(be->ops->forward(be, in, tg, &loss)), BENCH_OK(be->ops->backward(be));
        BENCH_OK(opt_step(&o, be, s + 1));
    }
    t_start(&tm);
    for (s = 0; s < steps && ok; s++) BENCH_OK(be->ops->forward(be, in, tg, &loss)), BENCH_OK(be->ops->backward(be));
    ms_fb = t_stop_ms(&tm) / steps;
    t_start(&tm);
    for (s = 0; s < steps && ok; s++) {
        /* zero_grad is a device memset (cuda.cu): inside the timed step, as in training */
        BENCH_OK(be->ops->zero_grad(be)), BENCH_OK(be->ops->forward(be, in, tg, &loss)), BENCH_OK(be->ops->backward(be));
        BENCH_OK(opt_step(&o, be, s + 3));
    }
    ms_all = t_stop_ms(&tm) / steps;
#undef BENCH_OK
    if (!ok || gpt_cuda_synchronize() != GPT_OK) {
        printf("model %-10s: a step failed (see the messages above): no timing\n", name);
        goto out;
    }
    fpt = gpt_flops_per_token(&be->config);
    printf("model %-10s: L %d d %d heads %d T %d V %d, B %d: %.2fM params; step %.2f ms (fwd+bwd %.2f ms, "
           "optimizers %.2f ms); %.0f tokens/s; MFU %.1f%% of %.1f TFLOP/s (fwd+bwd alone %.1f%%); loss %.4f\n",
           name, be->config.n_layers, be->config.d_model, be->config.n_heads, T, be->config.vocab_size, B,
           (double)be->layout.n_params / 1e6, ms_all, ms_fb, ms_all - ms_fb, n / (ms_all * 1e-3),
           100.0 * fpt * n / (ms_all * 1e-3) / (peak_tflops * 1e12), peak_tflops,
           100.0 * fpt * n / (ms_fb * 1e-3) / (peak_tflops * 1e12), loss);
out:
    opt_free(&o, be);
    free(in), free(tg);
    be->ops->destroy(be);
}

static void bench_ns(gpt_backend *be, int reps)
{
    size_t m = 768, n = 3072;
    float *w = (float *)gpt_cuda_malloc(m * n * 4), *g = (float *)gpt_cuda_malloc(m * n * 4);
    float *mom = (float *)gpt_cuda_malloc(m * n * 4), *ws = (float *)gpt_cuda_malloc(gpt_cuda_muon_workspace_floats(m, n) * 4);
    float *A = (float *)gpt_cuda_malloc(m * n * 4), *C = (float *)gpt_cuda_malloc(n * n * 4);
    muon_config mc = muon_default();
    gpt_cuda_ctx *c = gpt_cuda__ctx(be);
    double flops = 5.0 * (3.0 * m * m * n + (double)m * m * m), ms_ns, ms_gemm, ms_gemm_tf;
    int k, gn;
    timer tm;
    fill_dev(g, m * n, 1.0, 3), fill_dev(A, m * n, 1.0, 4);
    gpt_cuda_muon_step(be, w, g, mom, m, n, &mc, ws, NULL);
    t_start(&tm);
    for (k = 0; k < reps; k++) gpt_cuda_muon_step(be, w, g, mom, m, n, &mc, ws, NULL);
    ms_ns = t_stop_ms(&tm) / reps;
    /* a square-ish GEMM with the same flops: 2 gn^2 m' ... use M = N = gn, K = m with 2 gn^2 m = flops */
    gn = (int)(sqrt(flops / (2.0 * m)) + 0.5);
    if ((size_t)gn > n) gn = (int)n;
    {
        float *Bm = (float *)gpt_cuda_malloc((size_t)gn * m * 4), *Cm = (float *)gpt_cuda_malloc((size_t)gn * gn * 4);
        float *Am = (float *)gpt_cuda_malloc((size_t)gn * m * 4);
        double gflops = 2.0 * gn * (double)gn * m;
        gpt_cuda__gemm(c, 1, 0, 1, gn, gn, (int)m, 1.0f, Am, (int)m, 0, Bm, (int)m, 0, 0.0f, Cm, gn, 0, 1);
        t_start(&tm);
        for (k = 0; k < reps; k++)
            gpt_cuda__gemm(c, 1, 0, 1, gn, gn, (int)m, 1.0f, Am, (int)m, 0, Bm, (int)m, 0, 0.0f, Cm, gn, 0, 1);
        ms_gemm = t_stop_ms(&tm) / reps * flops / gflops;
        {
            gpt_cuda_math save = c->math;
            c->math = GPT_CUDA_MATH_TF32;
            t_start(&tm);
            for (k = 0; k < reps; k++)
                gpt_cuda__gemm(c, 0, 0, 1, gn, gn, (int)m, 1.0f, Am, (int)m, 0, Bm, (int)m, 0, 0.0f, Cm, gn, 0, 1);
            ms_gemm_tf = t_stop_ms(&tm) / reps * flops / gflops;
            c->math = save;
        }
        gpt_cuda_free(Am), gpt_cuda_free(Bm), gpt_cuda_free(Cm);
    }
    printf("ns        : Muon step %zux%zu, Jordan x 5 (NS %.3g GFLOP, fp32 SYRK/SYMM): %.3f ms = %.1f TFLOP/s; "
           "fp32 GEMM of the same flops %.3f ms (%.1f TFLOP/s), TF32 GEMM %.3f ms; NS / fp32 GEMM = %.2f\n",
           m, n, flops / 1e9, ms_ns, flops / (ms_ns * 1e9), ms_gemm, flops / (ms_gemm * 1e9), ms_gemm_tf,
           ms_ns / ms_gemm);
    gpt_cuda_free(w), gpt_cuda_free(g), gpt_cuda_free(mom), gpt_cuda_free(ws), gpt_cuda_free(A), gpt_cuda_free(C);
}

static void bench_head(gpt_backend *be, int reps)
{
    size_t V = 50257, d = 768, n = V * d;
    float *w = (float *)gpt_cuda_malloc(n * 4), *g = (float *)gpt_cuda_malloc(n * 4), *B = (float *)gpt_cuda_malloc(n * 4);
    float *S = (float *)gpt_cuda_malloc(n * 4), *cp = (float *)gpt_cuda_malloc(n * 4);
    double *ws = (double *)gpt_cuda_malloc(gpt_cuda_rownorm_workspace_doubles(V, d) * 8), D = 0.0, ms_rn, ms_cp, ms_d;
    rn_rownorm_config rc = rn_rownorm_default();
    size_t bi = 0, bj = 0;
    int k;
    timer tm;
    fill_dev(g, n, 1.0, 5), fill_dev(w, n, 0.02, 6);
    gpt_cuda_rownorm_step(be, w, g, B, V, d, &rc, 0, S, ws);
    t_start(&tm);
    for (k = 0; k < reps; k++) gpt_cuda_rownorm_step(be, w, g, B, V, d, &rc, (unsigned long long)k + 1, S, ws);
    ms_rn = t_stop_ms(&tm) / reps;
    cudaMemcpy(cp, w, n * 4, cudaMemcpyDeviceToDevice);
    t_start(&tm);
    for (k = 0; k < reps; k++) cudaMemcpy(cp, w, n * 4, cudaMemcpyDeviceToDevice);
    ms_cp = t_stop_ms(&tm) / reps;
    printf("rownorm   : V %zu d %zu, projections on, S written: %.3f ms, %.0f GB/s effective (9 passes of %.0f MB) "
           "vs copy %.0f GB/s (%.3f ms); step = %.2f copies\n",
           V, d, ms_rn, 9.0 * n * 4 / (ms_rn * 1e6), n * 4 / 1e6, 2.0 * n * 4 / (ms_cp * 1e6), ms_cp, ms_rn / ms_cp);
    t_start(&tm);
    gpt_cuda_row_diameter(be, S, V, d, &D, &bi, &bj);
    ms_d = t_stop_ms(&tm);
    printf("diameter  : exact D(S) of that RowNorm step, V %zu d %zu: %.1f ms (D = %.6g at pair %zu, %zu; budget 2 lr = %.6g)\n",
           V, d, ms_d, D, bi, bj, 2.0 * rc.lr);
    gpt_cuda_free(w), gpt_cuda_free(g), gpt_cuda_free(B), gpt_cuda_free(S), gpt_cuda_free(cp), gpt_cuda_free(ws);
}

int main(int argc, char **argv)
{
    int quick = 0, steps = 10, i;
    gpt_config def, small;
    gpt_backend *be = NULL;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) quick = 1;
        else if (strcmp(argv[i], "--peak") == 0 && i + 1 < argc) peak_tflops = atof(argv[++i]);
        else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc) steps = atoi(argv[++i]);
    }
    if (!gpt_cuda_available()) {
        fprintf(stderr, "bench_cuda: no CUDA device\n");
        return 2;
    }
    {
        cudaDeviceProp p;
        cudaGetDeviceProperties(&p, 0);
        printf("device    : %s, %d SMs, %.1f GB\n", p.name, p.multiProcessorCount, p.totalGlobalMem / 1e9);
    }
    memset(&def, 0, sizeof def); /* the trainer's defaults: 6 x 384, T 256, V 4096 */
    memset(&small, 0, sizeof small);
    small.n_layers = 12, small.d_model = 768, small.n_heads = 12, small.seq_len = 1024, small.vocab_size = 50257;
    small.mlp_hidden = 2048;
    if (gpt_cuda_backend.create(&def, 1, 8, 1, &be) != GPT_OK) return 1;
    bench_ns(be, quick ? 3 : 20);
    bench_head(be, quick ? 3 : 20);
    be->ops->destroy(be);
    bench_model("default", def, 32, 256, steps);
    bench_model("gpt2-small", small, quick ? 4 : 8, 1024, quick ? 3 : steps);
    return 0;
}
