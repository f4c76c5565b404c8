/* train_bench.c - the example trainer's CPU step against this machine's sgemm, side by side.
 *
 *   make build/bench/train_bench
 *   OPENBLAS_CORETYPE=SkylakeX build/bench/train_bench [--reps N] [--threads 1,2] [--no-peers] [--compiled]
 *                                                      [L d H V T B]
 *
 * Default config: the 12M-parameter model (6 layers, d 384, 6 heads, vocab 4096, T 256,
 * batch 4). For each thread count, three jobs alternate rep by rep (the first one rotates, as in
 * bench.c): one training step's forward + backward on the CPU backend (every matmul through
 * muon_sgemm, the trainer's build), a 1024^3 muon_sgemm, and a 1024^3 cblas_sgemm (OpenBLAS).
 * Each figure is the median of `reps` (>= 5) after one warm-up. The step's GFLOP/s counts the
 * model's matmul flops (model.h's gpt_flops_per_token x tokens); the ratios are that rate over
 * each sgemm rate measured in the same run.
 * The Muon update of the block matrices (issue 17) is timed in the same rotation: muon_step_ws on
 * every block matrix of the model (Q, K, V, O: d x d; gate, up: mlp x d; down: d x mlp; Jordan x
 * 5) with fp32 and with bf16 Newton-Schulz (MUON_NS_BF16), and the Newton-Schulz part alone
 * (muon_orthogonalize_ws on the same gradients); the second table gives each, and the share of a
 * training step (forward + backward + Muon update) spent in Newton-Schulz, per precision. The fp32
 * update is also timed as one muon_step_layers call (issue 13; the third table), and so, per
 * Newton-Schulz budget (Jordan x 5, 4, 3) and precision, with the whole step it belongs to
 * (issue 49; the fourth table).
 * The PyTorch CPU peer (issue 49; the fifth table): bench/peers/peers.py --serve (bench_peer.h,
 * as bench.c runs it: one server per thread count) times bench/peers/gpt_step.py, the same model
 * written in eager fp32 PyTorch, in the same rotation: its forward + backward, its Muon update of
 * the block matrices (fp32 Newton-Schulz, torch.optim.Muon's rule; and torch.optim.Muon itself,
 * whose Newton-Schulz is bf16) and its whole step (forward + backward, gradient clipping, Muon on
 * the block matrices, AdamW on the embedding and the head). Ours for the whole step is one job too
 * (job_full): forward + backward, muon_clip_grad_norm, one muon_step_layers_ws call on the
 * backend's block matrices and muon_adamw_step on the embedding and the head, with optim.c's
 * default recipe (arm A, fp32 Newton-Schulz) at a small rate. Without python3 + numpy + torch
 * (or with --no-peers) the table is replaced by "peers: skipped (why)"; the rest runs as before.
 * --compiled adds the peer's forward + backward with the forward through torch.compile (a bonus
 * row, labelled: not eager; its first run, the warm-up, compiles for about a minute).
 * Not a test: nothing here is part of `make test`. */
#define _POSIX_C_SOURCE 200809L
#include "../examples/gpt/backend.h"
#include "../examples/gpt/model.h"
#include "muon.h"
#include "bench_peer.h"
#include "bench_env.h"
#include <cblas.h>
#include <signal.h>
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

enum { NMAT = 7 };
typedef struct ctx {
    gpt_backend *be;
    int *in, *tg;
    float *a, *b, *c;
    /* the block matrices: L x NMAT of them, W, G, NS output, one Muon state each */
    int nm;
    size_t *rows, *cols;
    float **W, **G, **O;
    muon_state *st;
    void *ws;
    size_t wsb;
    /* the whole step (job_full): the backend's own block matrices, their Muon states, the
     * embedding's and the head's AdamW, every gradient for the clip */
    muon_layer *fl;
    muon_state *fst;
    muon_config fcfg;
    void *fws;
    size_t fwsb;
    muon_adamw_state emb, head;
    muon_adamw_config emb_cfg, head_cfg;
    float **gp;
    size_t *gsz;
    int ng;
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
static void opt_all(ctx *x, muon_ns_precision p)
{
    muon_config c = muon_default();
    int i;
    c.lr = 1e-4; /* small: the weights barely move over the reps */
    c.ns.precision = p;
    for (i = 0; i < x->nm; i++)
        if (muon_step_ws(&x->st[i], &c, x->W[i], x->cols[i], x->G[i], x->cols[i], NULL, 0, x->ws, x->wsb) != MUON_OK)
            exit(3);
}
static void ns_all(ctx *x, muon_ns_precision p)
{
    muon_ns_config ns = muon_ns_preset(MUON_NS_JORDAN, 5);
    int i;
    ns.precision = p;
    for (i = 0; i < x->nm; i++)
        if (muon_orthogonalize_ws(x->G[i], x->rows[i], x->cols[i], x->cols[i], &ns, x->O[i], x->cols[i], x->ws,
                                  x->wsb) != MUON_OK)
            exit(3);
}
/* the update as one muon_step_layers_ws call, in one workspace of the size its query gives (as
 * the trainer runs it: optim.c), Jordan x `steps` in precision p */
static void layers_all(ctx *x, int steps, muon_ns_precision p)
{
    static muon_layer L[64 * NMAT];
    static void *ws;
    static size_t wsb;
    muon_config c = muon_default();
    int i;
    c.lr = 1e-4;
    c.ns.steps = steps;
    c.ns.precision = p;
    if (x->nm > 64 * NMAT) exit(3); /* at most 64 layers here */
    for (i = 0; i < x->nm; i++) {
        memset(&L[i], 0, sizeof L[i]);
        L[i].state = &x->st[i], L[i].cfg = &c, L[i].W = x->W[i], L[i].G = x->G[i];
        L[i].ldw = L[i].ldg = x->cols[i];
    }
    { /* sized for the current thread count (grown when it grows; warm-up calls do that) */
        size_t need = muon_step_layers_workspace_size(L, (size_t)x->nm, 0);
        if (!need) exit(3);
        if (need > wsb) {
            free(ws);
            if (!(ws = malloc(need))) exit(3);
            wsb = need;
        }
    }
    if (muon_step_layers_ws(L, (size_t)x->nm, 0, ws, wsb) != MUON_OK) exit(3);
}
static void job_layers32(ctx *x) { layers_all(x, 5, MUON_NS_FP32); }
static void job_layers32_j4(ctx *x) { layers_all(x, 4, MUON_NS_FP32); }
static void job_layers32_j3(ctx *x) { layers_all(x, 3, MUON_NS_FP32); }
static void job_layers16(ctx *x) { layers_all(x, 5, MUON_NS_BF16); }
static void job_layers16_j3(ctx *x) { layers_all(x, 3, MUON_NS_BF16); }
static void job_opt32(ctx *x) { opt_all(x, MUON_NS_FP32); }
static void job_opt16(ctx *x) { opt_all(x, MUON_NS_BF16); }
static void job_ns32(ctx *x) { ns_all(x, MUON_NS_FP32); }
static void job_ns16(ctx *x) { ns_all(x, MUON_NS_BF16); }
/* The trainer's whole step as optim_step runs it with the default recipe (less the schedule, a
 * scalar): forward + backward, clip at 1.0, Muon on the block matrices in one
 * muon_step_layers_ws call, AdamW on the embedding and the head. */
static void job_full(ctx *x)
{
    float *P = x->be->ops->params(x->be), *G = x->be->ops->grads(x->be);
    const gpt_layout *lay = &x->be->layout;
    job_step(x);
    if (muon_clip_grad_norm(x->gp, x->gsz, (size_t)x->ng, 1.0, NULL) != MUON_OK) exit(3);
    { /* sized for the current thread count (grown when it grows; warm-up calls do that) */
        size_t need = muon_step_layers_workspace_size(x->fl, (size_t)x->nm, 0);
        if (!need) exit(3);
        if (need > x->fwsb) {
            free(x->fws);
            if (!(x->fws = malloc(need))) exit(3);
            x->fwsb = need;
        }
    }
    if (muon_step_layers_ws(x->fl, (size_t)x->nm, 0, x->fws, x->fwsb) != MUON_OK) exit(3);
    if (muon_adamw_step(&x->emb, &x->emb_cfg, P + lay->wte, G + lay->wte, NULL) != MUON_OK ||
        muon_adamw_step(&x->head, &x->head_cfg, P + lay->lm_head, G + lay->lm_head, NULL) != MUON_OK)
        exit(3);
}
enum { NJOBS = 13, NPEER = 5, NALL = NJOBS + NPEER };
/* The peer's jobs (bench/peers/gpt_step.py), after ours in the rotation; the last one only with
 * --compiled */
static const char *const peer_job_name[NPEER] = {"fb", "muon32", "muon", "step", "fbcompiled"};

int main(int argc, char **argv)
{
    gpt_config cfg = {6, 384, 6, 256, 4096, 0};
    int B = 4, reps = 5, thr[2] = {1, 2}, nthr = 2, a, pos = 0, vals[6], ti, r, j, nall, npeer = NPEER - 1;
    void (*const jobs[NJOBS])(ctx *) = {job_step, job_muon, job_blas, job_opt32, job_opt16, job_ns32, job_ns16,
                                               job_layers32, job_layers32_j4, job_layers32_j3, job_layers16,
                                               job_layers16_j3, job_full};
    static const struct { int job, steps; const char *prec; } budgets[] = {
        {7, 5, "fp32"}, {8, 4, "fp32"}, {9, 3, "fp32"}, {10, 5, "bf16"}, {11, 3, "bf16"}};
    double bud_ms[2][5];
    static double t[NALL][MAXR];
    double opt_ms[2][2], ns_ms[2][2], step_ms[2], lay_ms[2], full_ms[2], l16_ms[2], peer_ms[2][NPEER];
    int peer_na[2][NPEER], peer_ran[2];
    char peer_key[NPEER][96];
    ctx x;
    size_t n, i;
    gpt_status st;
    bench_openblas_env(argv, "train_bench"); /* OpenBLAS's core and its workers' spin (bench_env.h) */
    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--reps") && a + 1 < argc) reps = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--threads") && a + 1 < argc) {
            const char *s = argv[++a];
            nthr = 0;
            if (strchr(s, '1')) thr[nthr++] = 1;
            if (strchr(s, '2')) thr[nthr++] = 2;
        } else if (!strcmp(argv[a], "--no-peers")) g_peers_on = 0;
        else if (!strcmp(argv[a], "--compiled")) npeer = NPEER;
        else if (pos < 6) vals[pos++] = atoi(argv[a]);
        else {
            fprintf(stderr, "usage: %s [--reps N] [--threads 1,2] [--no-peers] [--compiled] [L d H V T B]\n", argv[0]);
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
    signal(SIGPIPE, SIG_IGN); /* a dead peer server must not kill the run */
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
    { /* the block matrices of the model, with gradient-like random G */
        const size_t d = (size_t)cfg.d_model, h = (size_t)cfg.mlp_hidden;
        const size_t shp[NMAT][2] = {{d, d}, {d, d}, {d, d}, {d, d}, {h, d}, {h, d}, {d, h}};
        int l, k;
        x.nm = cfg.n_layers * NMAT;
        x.rows = (size_t *)malloc((size_t)x.nm * sizeof(size_t)), x.cols = (size_t *)malloc((size_t)x.nm * sizeof(size_t));
        x.W = (float **)malloc((size_t)x.nm * sizeof(float *)), x.G = (float **)malloc((size_t)x.nm * sizeof(float *));
        x.O = (float **)malloc((size_t)x.nm * sizeof(float *));
        x.st = (muon_state *)malloc((size_t)x.nm * sizeof(muon_state));
        if (!x.rows || !x.cols || !x.W || !x.G || !x.O || !x.st) return 1;
        for (l = 0; l < cfg.n_layers; l++)
            for (k = 0; k < NMAT; k++) {
                int m = l * NMAT + k;
                size_t e = shp[k][0] * shp[k][1], q, need;
                x.rows[m] = shp[k][0], x.cols[m] = shp[k][1];
                x.W[m] = (float *)malloc(e * sizeof(float)), x.G[m] = (float *)malloc(e * sizeof(float));
                x.O[m] = (float *)malloc(e * sizeof(float));
                if (!x.W[m] || !x.G[m] || !x.O[m] || muon_init(&x.st[m], shp[k][0], shp[k][1]) != MUON_OK) return 1;
                for (q = 0; q < e; q++) x.W[m][q] = (float)(0.02 * (urand() - 0.5)), x.G[m][q] = (float)(1e-3 * (urand() - 0.5));
                need = muon_step_workspace_size(shp[k][0], shp[k][1], NULL);
                if (need > x.wsb) x.wsb = need;
                need = muon_orthogonalize_workspace_size(shp[k][0], shp[k][1]);
                if (need > x.wsb) x.wsb = need;
            }
        x.ws = malloc(x.wsb);
        if (!x.ws) return 1;
    }
    { /* the whole step's optimizer on the backend's blocks, optim.c's default recipe (arm A) */
        float *P = x.be->ops->params(x.be), *G = x.be->ops->grads(x.be);
        const gpt_layout *lay = &x.be->layout;
        int l, k;
        x.fcfg = muon_default();
        x.fcfg.lr = 1e-4, x.fcfg.momentum = 0.95, x.fcfg.weight_decay = 0.1, x.fcfg.nesterov = 1;
        x.fcfg.momentum_form = MUON_MOMENTUM_EMA, x.fcfg.scale = MUON_SCALE_ORIGINAL;
        x.fcfg.ns = muon_ns_preset(MUON_NS_JORDAN, 5);
        x.fl = (muon_layer *)calloc((size_t)x.nm, sizeof *x.fl);
        x.fst = (muon_state *)calloc((size_t)x.nm, sizeof *x.fst);
        x.ng = lay->n_tensors;
        x.gp = (float **)malloc((size_t)x.ng * sizeof *x.gp), x.gsz = (size_t *)malloc((size_t)x.ng * sizeof *x.gsz);
        if (!x.fl || !x.fst || !x.gp || !x.gsz) return 1;
        for (k = 0; k < x.ng; k++) {
            gpt_tensor tn;
            if (gpt_tensor_info(&cfg, k, &tn) != GPT_OK) return 1;
            x.gp[k] = G + tn.offset, x.gsz[k] = tn.rows * tn.cols;
            if (tn.kind != GPT_TENSOR_BLOCK_MATRIX) continue;
            l = k - 1; /* block matrices are tensors 1 .. nm, in the order of x.rows / x.cols */
            if (muon_init(&x.fst[l], tn.rows, tn.cols) != MUON_OK) return 1;
            x.fl[l].state = &x.fst[l], x.fl[l].cfg = &x.fcfg, x.fl[l].W = P + tn.offset, x.fl[l].G = G + tn.offset;
            x.fl[l].ldw = x.fl[l].ldg = tn.cols;
        }
        x.emb_cfg = muon_adamw_default();
        x.emb_cfg.lr = 4e-3, x.emb_cfg.beta1 = 0.9, x.emb_cfg.beta2 = 0.95, x.emb_cfg.eps = 1e-10, x.emb_cfg.weight_decay = 0;
        x.head_cfg = x.emb_cfg;
        x.head_cfg.beta2 = 0.999, x.head_cfg.weight_decay = 0.1;
        if (muon_adamw_init(&x.emb, (size_t)cfg.vocab_size * (size_t)cfg.d_model) != MUON_OK ||
            muon_adamw_init(&x.head, (size_t)cfg.vocab_size * (size_t)cfg.d_model) != MUON_OK)
            return 1;
    }
    for (j = 0; j < NPEER; j++)
        snprintf(peer_key[j], sizeof peer_key[j], "gptstep/%dx%dx%dx%dx%dx%d/%s", cfg.n_layers, cfg.d_model,
                 cfg.n_heads, cfg.vocab_size, cfg.seq_len, B, peer_job_name[j]);
    for (i = 0; i < (size_t)SQ * SQ; i++) x.a[i] = (float)(urand() - 0.5), x.b[i] = (float)(urand() - 0.5);
    printf("train_bench: L=%d d=%d H=%d V=%d T=%d B=%d, %.2fM parameters, %.2f GFLOP per step "
           "(matmuls, forward + backward); OpenBLAS core %s; median of %d after one warm-up\n",
           cfg.n_layers, cfg.d_model, cfg.n_heads, cfg.vocab_size, cfg.seq_len, B,
           (double)x.be->layout.n_params * 1e-6, gpt_flops_per_token(&cfg) * (double)n * 1e-9,
           openblas_get_corename(), reps);
    printf("%-4s %14s %14s %16s %16s %12s %12s\n", "thr", "step ms", "step GF/s", "muon_sgemm GF/s",
           "cblas_sgemm GF/s", "vs muon", "vs OpenBLAS");
    for (ti = 0; ti < nthr; ti++) {
        double fl_step = gpt_flops_per_token(&cfg) * (double)n, fl_sq = 2.0 * SQ * SQ * SQ, med[NALL];
#ifdef _OPENMP
        omp_set_num_threads(thr[ti]);
#endif
        openblas_set_num_threads(thr[ti]);
        peer_open(thr[ti]); /* the peer's server for this thread count (none: peers off or skipped) */
        if (g_pto && (!strstr(g_peer_hello, "torch=") || strstr(g_peer_hello, "torch=none")))
            peer_disable("torch missing");
        nall = g_pto ? NJOBS + npeer : NJOBS;
        peer_ran[ti] = g_pto != NULL;
        for (j = 0; j < NPEER; j++) peer_na[ti][j] = 0;
        for (j = 0; j < nall; j++) { /* warm-up (the peer's first run of a key also builds its model) */
            if (j < NJOBS) jobs[j](&x);
            else if (peer_run(peer_key[j - NJOBS], 0) < 0) peer_na[ti][j - NJOBS] = 1;
        }
        for (r = 0; r < reps; r++)
            for (j = 0; j < nall; j++) {
                int k = (r + j) % nall;
                if (k < NJOBS) {
                    double t0 = now_s();
                    jobs[k](&x);
                    t[k][r] = now_s() - t0;
                } else if (!peer_na[ti][k - NJOBS]) { /* the time the script measured */
                    t[k][r] = peer_run(peer_key[k - NJOBS], 0);
                    if (t[k][r] < 0) peer_na[ti][k - NJOBS] = 1;
                }
            }
        peer_free(); /* the model's memory back before our next thread count */
        peer_close();
        for (j = 0; j < nall; j++) med[j] = j < NJOBS || !peer_na[ti][j - NJOBS] ? median(t[j], reps) : -1.0;
        full_ms[ti] = med[12], l16_ms[ti] = med[10];
        for (j = 0; j < NPEER; j++) peer_ms[ti][j] = NJOBS + j < nall ? med[NJOBS + j] : -1.0;
        printf("%-4d %14.1f %14.1f %16.1f %16.1f %12.2f %12.2f\n", thr[ti], 1e3 * med[0], fl_step / med[0] * 1e-9,
               fl_sq / med[1] * 1e-9, fl_sq / med[2] * 1e-9, (fl_step / med[0]) / (fl_sq / med[1]),
               (fl_step / med[0]) / (fl_sq / med[2]));
        opt_ms[ti][0] = med[3], opt_ms[ti][1] = med[4], ns_ms[ti][0] = med[5], ns_ms[ti][1] = med[6];
        lay_ms[ti] = med[7];
        for (j = 0; j < 5; j++) bud_ms[ti][j] = med[budgets[j].job];
        step_ms[ti] = med[0];
        fflush(stdout);
    }
    printf("Muon update of the %d block matrices (muon_step_ws; Newton-Schulz alone: muon_orthogonalize_ws), "
           "bf16 kernels compiled: %s\n", x.nm,
#if defined(__AMX_BF16__) && defined(__AVX512BF16__)
           "AMX (else AVX512-BF16)"
#elif defined(__AVX512BF16__)
           "AVX512-BF16"
#else
           "none (the emulation on the fp32 kernel)"
#endif
    );
    printf("%-4s %12s %12s %12s %12s %10s %18s %18s\n", "thr", "upd fp32 ms", "upd bf16 ms", "NS fp32 ms",
           "NS bf16 ms", "bf16 gain", "NS share fp32", "NS share bf16");
    for (ti = 0; ti < nthr; ti++) {
        double tot32 = step_ms[ti] + opt_ms[ti][0], tot16 = step_ms[ti] + opt_ms[ti][1];
        printf("%-4d %12.1f %12.1f %12.1f %12.1f %10.2f %17.1f%% %17.1f%%\n", thr[ti], 1e3 * opt_ms[ti][0],
               1e3 * opt_ms[ti][1], 1e3 * ns_ms[ti][0], 1e3 * ns_ms[ti][1], opt_ms[ti][0] / opt_ms[ti][1],
               100.0 * ns_ms[ti][0] / tot32, 100.0 * ns_ms[ti][1] / tot16);
    }
    printf("The fp32 update as one muon_step_layers_ws call (one region, one matrix per thread) against the\n"
           "muon_step_ws loop above, same rotation:\n%-4s %14s %14s %10s\n", "thr", "loop ms", "layers ms", "gain");
    for (ti = 0; ti < nthr; ti++)
        printf("%-4d %14.1f %14.1f %10.2f\n", thr[ti], 1e3 * opt_ms[ti][0], 1e3 * lay_ms[ti], opt_ms[ti][0] / lay_ms[ti]);
    printf("The trainer's update path (one muon_step_layers_ws call, as optim.c makes it) per Newton-Schulz\n"
           "budget and precision, and a whole training step = forward + backward + that update (same rotation;\n"
           "--ns-steps auto picks the budget per matrix: results/nsbudget has what it chose):\n"
           "%-4s %8s %6s %12s %12s %12s\n", "thr", "budget", "prec", "update ms", "step ms", "update share");
    for (ti = 0; ti < nthr; ti++)
        for (j = 0; j < 5; j++)
            printf("%-4d %6s%-2d %6s %12.1f %12.1f %11.1f%%\n", thr[ti], "J", budgets[j].steps, budgets[j].prec,
                   1e3 * bud_ms[ti][j], 1e3 * (step_ms[ti] + bud_ms[ti][j]), 100.0 * bud_ms[ti][j] / (step_ms[ti] + bud_ms[ti][j]));
    { /* the arithmetic ceiling of the share: NS's products per update against the step's */
        double per_step = 0.0, fb = gpt_flops_per_token(&cfg) * (double)n;
        int m;
        for (m = 0; m < x.nm; m++) {
            double lo = (double)(x.rows[m] < x.cols[m] ? x.rows[m] : x.cols[m]);
            double hi = (double)(x.rows[m] < x.cols[m] ? x.cols[m] : x.rows[m]);
            per_step += 3.0 * lo * lo * hi + lo * lo * lo; /* X X^T and A A symmetric (half), B X */
        }
        printf("Arithmetic: one Jordan step of all %d matrices is %.2f GFLOP (symmetric products at half), the\n"
               "forward + backward %.2f GFLOP (%d tokens); at equal rates the update's share would be", x.nm,
               per_step * 1e-9, fb * 1e-9, (int)n);
        for (j = 5; j >= 2; j--) printf(" J%d %.1f %%%s", j, 100.0 * j * per_step / (j * per_step + fb), j > 2 ? "," : "\n");
    }
    if (peer_ran[0] || (nthr > 1 && peer_ran[1])) {
        static const struct { const char *what; int peer; } prow[NPEER] = {
            {"forward + backward", 0}, {"Muon update, fp32 NS", 1}, {"Muon update, bf16 NS", 2}, {"whole step", 3},
            {"fwd+bwd torch.compile", 4}};
        printf("PyTorch CPU peer of the step: bench/peers/gpt_step.py, the same model in eager fp32 PyTorch\n"
               "(zero_grad + forward + backward; Muon on the %d block matrices: torch.optim.Muon's rule with fp32\n"
               "Newton-Schulz, and torch.optim.Muon itself, bf16 Newton-Schulz; whole step = forward + backward +\n"
               "clip + Muon fp32 + AdamW on embedding and head), in the same rotation. Ours: step ms above, layers\n"
               "J5 fp32 / bf16 (one muon_step_layers_ws call), and the whole step as one job. ratio = torch / ours\n"
               "(> 1: ours faster)%s:\n%-4s %-22s %12s %12s %8s\n", x.nm,
               npeer == NPEER ? "; fwd+bwd torch.compile: the peer's forward compiled (inductor), NOT eager,\n"
                                "against our same forward + backward" : "",
               "thr", "job", "ours ms",
               "torch ms", "ratio");
        for (ti = 0; ti < nthr; ti++) {
            double ours[NPEER];
            ours[0] = step_ms[ti], ours[1] = lay_ms[ti], ours[2] = l16_ms[ti], ours[3] = full_ms[ti];
            ours[4] = step_ms[ti];
            if (!peer_ran[ti]) {
                printf("%-4d (the peer did not run at this thread count)\n", thr[ti]);
                continue;
            }
            for (j = 0; j < npeer; j++) {
                double p = peer_ms[ti][prow[j].peer];
                if (p < 0) printf("%-4d %-22s %12.1f %12s %8s\n", thr[ti], prow[j].what, 1e3 * ours[j], "NA", "-");
                else printf("%-4d %-22s %12.1f %12.1f %8.2f\n", thr[ti], prow[j].what, 1e3 * ours[j], 1e3 * p, p / ours[j]);
            }
        }
    }
    printf("%s\n", !g_peers_on ? "peers: skipped (--no-peers)" : g_peer_note[0] ? g_peer_note : "peers: none run");
    x.be->ops->destroy(x.be);
    for (j = 0; j < x.nm; j++) muon_free(&x.fst[j]);
    muon_adamw_free(&x.emb), muon_adamw_free(&x.head);
    free(x.fl), free(x.fst), free(x.fws), free(x.gp), free(x.gsz);
    for (j = 0; j < x.nm; j++) muon_free(&x.st[j]), free(x.W[j]), free(x.G[j]), free(x.O[j]);
    free(x.rows), free(x.cols), free(x.W), free(x.G), free(x.O), free(x.st), free(x.ws);
    free(x.in), free(x.tg), free(x.a), free(x.b), free(x.c);
    return 0;
}
