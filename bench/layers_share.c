/* layers_share.c - muon_step_layers against the loop of muon_step_ws, idle and beside busy loops
 * (issue 49: the trainer's update path must never be slower than the loop it replaces).
 *
 *   make build/bench/layers_share
 *   build/bench/layers_share [--reps N] [--threads 1,2] [--only demo,12m,gpt2]
 *
 * Model sets (the trainer's block matrices: Q, K, V, O d x d; gate, up mlp x d; down d x mlp):
 *   demo   make demo's model: 2 layers, d 64, mlp 168 (14 matrices)
 *   12m    train_bench's 12M model: 6 layers, d 384, mlp 1024 (42 matrices)
 *   gpt2   one GPT-2-small-width layer: d 768, mlp 2048 (7 matrices)
 * Loads: alone; busy1 beside one busy loop (a process spinning on a core); busy2 beside two.
 * For each set, load and thread count, one process alternates a round of the loop and a round of
 * the layers call (the first of the two rotates rep by rep), in the default environment (no OMP_*
 * variable: OpenMP's own wait policy); a round repeats the whole update enough times to take
 * about 20 ms, and each figure is the mean round of --reps (7) after a second of both paths
 * (the warm-up in which the shared-machine gate settles under the load, as in a trainer's loop).
 * gain = loop / layers (issue 49's target: >= 1.00 everywhere). Both paths run the same
 * matrices from the same states, so the bits are the same (tests/test_muon_layers.c holds that).
 * Not a test: nothing here is part of `make test`. */
#define _POSIX_C_SOURCE 200809L
#define MUON_IMPLEMENTATION
#include "../muon.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_time.h"
#include "bench_proc.h"

enum { NMAT = 7, MAXM = 64, MAXREPS = 31 };

typedef struct set {
    const char *name;
    int layers, d, mlp;
} set;

typedef struct model {
    int nm;
    muon_state st[MAXM];
    muon_layer L[MAXM];
    float *W[MAXM], *G[MAXM];
    muon_config cfg;
    void *ws;
    size_t wsb;
} model;

static unsigned long long g_rng = 0x9e3779b97f4a7c15ull;
static float urand(void)
{
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return (float)((double)(g_rng >> 11) * (1.0 / 9007199254740992.0) - 0.5);
}

static int model_init(model *x, const set *s, int threads)
{
    const size_t d = (size_t)s->d, h = (size_t)s->mlp;
    const size_t shp[NMAT][2] = {{d, d}, {d, d}, {d, d}, {d, d}, {h, d}, {h, d}, {d, h}};
    int l, k;
    memset(x, 0, sizeof *x);
    x->cfg = muon_default();
    x->cfg.lr = 1e-4, x->cfg.threads = threads;
    x->nm = s->layers * NMAT;
    for (l = 0; l < s->layers; l++)
        for (k = 0; k < NMAT; k++) {
            int m = l * NMAT + k;
            size_t e = shp[k][0] * shp[k][1], q, need;
            x->W[m] = (float *)malloc(e * sizeof(float)), x->G[m] = (float *)malloc(e * sizeof(float));
            if (!x->W[m] || !x->G[m] || muon_init_ex(&x->st[m], shp[k][0], shp[k][1], MUON_INIT_NO_WORKSPACE) != MUON_OK)
                return 1;
            for (q = 0; q < e; q++) x->W[m][q] = 0.04f * urand(), x->G[m][q] = 2e-3f * urand();
            x->L[m].state = &x->st[m], x->L[m].cfg = &x->cfg, x->L[m].W = x->W[m], x->L[m].G = x->G[m];
            x->L[m].ldw = x->L[m].ldg = shp[k][1];
            need = muon_step_workspace_size(shp[k][0], shp[k][1], &x->cfg);
            if (need > x->wsb) x->wsb = need;
        }
    {
        size_t need = muon_step_layers_workspace_size(x->L, (size_t)x->nm, threads);
        if (!need) return 1;
        if (need > x->wsb) x->wsb = need;
    }
    return !(x->ws = malloc(x->wsb));
}

static void model_free(model *x)
{
    int m;
    for (m = 0; m < x->nm; m++) free(x->W[m]), free(x->G[m]), muon_free(&x->st[m]);
    free(x->ws);
}

static int run_loop(model *x)
{
    int m;
    for (m = 0; m < x->nm; m++)
        if (muon_step_ws(&x->st[m], &x->cfg, x->W[m], x->L[m].ldw, x->G[m], x->L[m].ldg, NULL, 0, x->ws, x->wsb) != MUON_OK)
            return 1;
    return 0;
}
static int run_layers(model *x, int threads)
{
    return muon_step_layers_ws(x->L, (size_t)x->nm, threads, x->ws, x->wsb) != MUON_OK;
}

/* the mean round: each path's time over its rounds. Not the median: beside busy loops a round of
 * a few scheduler time slices runs on a core of its own or on half of one, its times fall in two
 * groups, and their median jumps between them from run to run (bench/host_share.c's child()) */
static double mean(const double *t, int n)
{
    double s = 0.0;
    int i;
    for (i = 0; i < n; i++) s += t[i];
    return s / n;
}

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* one cell: the mean round (ms) of each path, and the ratio of their medians (earlier records'
 * figure); 0 on success */
static int cell(const set *s, int threads, int reps, double *loop_ms, double *layers_ms, double *med_gain)
{
    model x;
    double tl[MAXREPS], ty[MAXREPS], t0;
    int r, k, inner = 1, bad = 0;
    if (model_init(&x, s, threads)) return 1;
    t0 = now_s();
    bad |= run_loop(&x) | run_layers(&x, threads);
    t0 = now_s() - t0;
    if (t0 < 0.04) inner = (int)(0.04 / (t0 > 1e-6 ? t0 : 1e-6)) + 1; /* a round of ~20 ms per path */
    /* a second of both paths first: the shared-machine gate's state under this load settles (a
     * trainer calls the update every step, so its steady state is what it runs in) */
    for (t0 = now_s(); now_s() - t0 < 1.0 && !bad;)
        for (k = 0; k < inner; k++) bad |= run_loop(&x) | run_layers(&x, threads);
    for (r = 0; r < reps && !bad; r++) {
        int first;
        for (first = 0; first < 2; first++) {
            int which = (first + r) & 1;
            double a = now_s();
            for (k = 0; k < inner; k++) bad |= which ? run_layers(&x, threads) : run_loop(&x);
            a = (now_s() - a) * 1e3 / inner;
            if (which) ty[r] = a;
            else tl[r] = a;
        }
    }
    model_free(&x);
    if (bad) return 1;
    *loop_ms = mean(tl, reps), *layers_ms = mean(ty, reps);
    *med_gain = median(tl, reps) / median(ty, reps);
    return 0;
}

int main(int argc, char **argv)
{
    static const set sets[] = {{"demo", 2, 64, 168}, {"12m", 6, 384, 1024}, {"gpt2", 1, 768, 2048}};
    static const char *loads[] = {"alone", "busy1", "busy2"};
    const char *only = NULL;
    int reps = 7, thr[4] = {1, 2}, nthr = 2, a, si, li, ti, worst_set = -1;
    double worst = 1e300;
    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--reps") && a + 1 < argc) reps = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--only") && a + 1 < argc) only = argv[++a];
        else if (!strcmp(argv[a], "--threads") && a + 1 < argc) {
            char *p = argv[++a];
            for (nthr = 0; nthr < 4 && *p;) {
                thr[nthr++] = (int)strtol(p, &p, 10);
                if (*p == ',') p++;
            }
        } else {
            fprintf(stderr, "usage: %s [--reps N] [--threads 1,2] [--only demo,12m,gpt2]\n", argv[0]);
            return 2;
        }
    }
    if (reps < 3 || reps > MAXREPS) reps = reps < 3 ? 3 : MAXREPS;
    printf("layers_share: muon_step_layers_ws vs the muon_step_ws loop, mean round of %d (ms), default\n"
           "environment; gain = loop / layers (target >= 1.00); median: the ratio of the median rounds\n"
           "%-5s %-6s %4s %10s %10s %7s %7s\n",
           reps, "set", "load", "thr", "loop", "layers", "gain", "median");
    for (si = 0; si < 3; si++) {
        if (only && !strstr(only, sets[si].name)) continue;
        for (li = 0; li < 3; li++)
            for (ti = 0; ti < nthr; ti++) {
                pid_t busy[2];
                int nb = li, b, rc;
                double lo = 0, ly = 0, mg = 0;
                for (b = 0; b < nb; b++) busy[b] = spinner();
                rc = cell(&sets[si], thr[ti], reps, &lo, &ly, &mg);
                for (b = 0; b < nb; b++) kill(busy[b], SIGKILL), waitpid(busy[b], NULL, 0);
                if (rc) {
                    fprintf(stderr, "layers_share: %s failed\n", sets[si].name);
                    return 1;
                }
                printf("%-5s %-6s %4d %10.2f %10.2f %6.2fx %6.2fx\n", sets[si].name, loads[li], thr[ti], lo, ly, lo / ly, mg);
                fflush(stdout);
                if (lo / ly < worst) worst = lo / ly, worst_set = si;
            }
    }
    if (worst_set >= 0) printf("layers_share: lowest gain %.2fx (%s)\n", worst, sets[worst_set].name);
    return 0;
}
