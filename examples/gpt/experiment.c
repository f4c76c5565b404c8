/* experiment.c - the experiment's driver: the runs, the sweeps and the choice of the best rates,
 * the pairs (see experiment.h). Everything it says and writes, console lines included, is made by
 * report.c from its runs (exp_results). */
#include "experiment.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h> /* isatty */

typedef struct {
    const exp_options *eo;
    exp_results res;   /* the runs, the grids, the seeds and the rates: what report.c reads */
    int cap;           /* of res.runs */
    int planned, made; /* for "run k of N" */
    double seconds;    /* spent in the runs made */
    int rc;            /* 0, 1 (failure), 130 (interrupted) */
    int rank0;
} exp_ctx;

/* Reads run u's log back and checks it is the run that was asked for: its recipe's head and
 * head rate, and the final validation loss the trainer returned. */
static gpt_status read_back(exp_run *u, double val_loss, char *err, size_t errlen)
{
    exp_log L;
    const char *h, *lr;
    gpt_status st = exp_log_read(u->log, &L, err, errlen);
    if (st != GPT_OK) return st;
    h = exp_log_recipe(&L, "head");
    lr = exp_log_recipe(&L, "head_lr");
    if (!L.has_final) {
        gpt_errorf(err, errlen, "%s: the log has no final row", u->log);
        st = GPT_ERR_MISSING;
    } else if (!h || strcmp(h, optim_head_name(exp_arm_head[u->arm])) != 0 || !lr || strtod(lr, NULL) != u->rate) {
        gpt_errorf(err, errlen, "%s: the log's recipe (head %s, head_lr %s) is not the run asked for (%s, %.17g)", u->log,
                   h ? h : "?", lr ? lr : "?", optim_head_name(exp_arm_head[u->arm]), u->rate);
        st = GPT_ERR_MISMATCH;
    } else if (!(L.final_val_loss == val_loss)) {
        gpt_errorf(err, errlen, "%s: final val_loss %.17g in the log, %.17g in the run", u->log, L.final_val_loss,
                   val_loss);
        st = GPT_ERR_MISMATCH;
    }
    u->fin.val_loss = L.final_val_loss;
    u->fin.diameter = L.final_diameter;
    u->fin.hilbert_rms = L.final_hilbert_rms;
    exp_log_free(&L);
    return st;
}

/* A new run (arm, rate, seed) in the list, not yet made; NULL out of memory. */
static exp_run *add_run(exp_ctx *x, int arm, double rate, long seed)
{
    exp_run *u;
    if (x->res.n_runs == x->cap) {
        int cap = x->cap ? 2 * x->cap : 32;
        exp_run *r = (exp_run *)realloc(x->res.runs, (size_t)cap * sizeof *r);
        if (!r) return NULL;
        x->res.runs = r, x->cap = cap;
    }
    u = &x->res.runs[x->res.n_runs++];
    memset(u, 0, sizeof *u);
    u->arm = arm, u->rate = rate, u->seed = seed;
    u->fin.val_loss = u->fin.diameter = u->fin.hilbert_rms = NAN;
    return u;
}

/* The run (arm, rate, seed): made now unless made already. In a sweep a failed run is a point
 * marked failed; elsewhere it fails the experiment. NULL once the experiment has failed. */
static exp_run *get_run(exp_ctx *x, int arm, double rate, long seed, int sweep)
{
    const exp_options *eo = x->eo;
    exp_run *u = exp_find_run(&x->res, arm, rate, seed);
    optim_recipe d = optim_default(exp_arm_head[arm]);
    train_options o = eo->opt;
    train_result res;
    char name[64], ckpt_path[1100], err[512];
    double t0;
    int one_line;
    if (u || x->rc) return x->rc ? NULL : u;
    if (!(u = add_run(x, arm, rate, seed))) {
        exp_say_error("out of memory");
        x->rc = 1;
        return NULL;
    }
    if (x->made + 1 > x->planned) x->planned = x->made + 1;
    /* one line per run: its start (flushed), then its result; with a progress bar or the
     * trainer's own lines in between, two */
    o.quiet = eo->opt.log_every == 0;
    one_line = o.quiet && !(o.progress > 0 || (o.progress < 0 && isatty(STDOUT_FILENO)));
    exp_say_run_start(x->made + 1, x->planned, arm, rate, seed, sweep,
                      x->made > 0 ? x->seconds / x->made * (x->planned - x->made) : -1.0, one_line);
    /* the runs differ only in the head optimizer, its paper hyper-parameters, its rate, the seed */
    o.resume = NULL;
    o.seed = (uint64_t)seed;
    o.recipe.head = exp_arm_head[arm];
    o.recipe.head_lr = rate, o.recipe.head_beta1 = d.head_beta1, o.recipe.head_beta2 = d.head_beta2;
    o.recipe.head_eps = d.head_eps, o.recipe.head_wd = d.head_wd;
    exp_run_files(eo->out_dir, arm, rate, seed, u->log, sizeof u->log, ckpt_path, sizeof ckpt_path, name, sizeof name);
    o.log_path = u->log;
    o.ckpt_path = ckpt_path;
    o.run_name = name;
    o.sample_tokens = 0;
    o.line_open = one_line; /* a progress line of the run (stdout not a terminal) starts a new one */
    t0 = gpt_now_seconds();
    train_run(&o, &res);
    x->seconds += gpt_now_seconds() - t0;
    x->made++;
    if (res.progress_lines) one_line = 0; /* the run's progress lines closed the start line */
    if (res.outcome == TRAIN_DONE) {
        int back;
        u->ok = 1;
        u->fin.val_loss = res.final_val_loss;
        back = x->rank0 && read_back(u, res.final_val_loss, err, sizeof err) != GPT_OK;
        if (back) x->rc = 1;
        exp_say_run_end(u, name, res.outcome, one_line, sweep, back ? err : NULL, gpt_now_seconds() - t0);
    } else {
        if (res.outcome == TRAIN_FAILED) memcpy(u->error, res.error, sizeof u->error);
        exp_say_run_end(u, name, res.outcome, one_line, sweep, NULL, gpt_now_seconds() - t0);
        if (res.outcome != TRAIN_FAILED) x->rc = 130;
        /* data parallel: a failure the other ranks do not know of would leave them waiting */
        else if (gpt_comm_size(o.comm) > 1 && !res.agreed) o.comm->ops->abort(o.comm, 1);
        if (res.outcome == TRAIN_FAILED && !sweep) x->rc = 1;
    }
    train_result_free(&res);
    return x->rc ? NULL : u;
}

/* Index of the best grid rate: the lowest mean final validation loss over the k sweep seeds,
 * among the rates where all k runs finished; -1 if none. */
static int grid_best(const exp_results *x, const exp_grid *g, int arm, int k)
{
    int r, best = -1;
    double bl = HUGE_VAL;
    for (r = 0; r < g->n; r++) {
        exp_point p = exp_point_at(x, arm, g->rate[r], k);
        if (p.n == k && p.loss < bl) bl = p.loss, best = r;
    }
    return best;
}

/* Sweeps one arm over the sweep seeds, extending the grid while its best sits at an edge; a
 * failure (x->rc) ends it. */
static void sweep_arm(exp_ctx *x, int arm)
{
    exp_grid *g = &x->res.grid[arm];
    long seed0 = x->res.seed0;
    int r, s, k = x->res.sweep_seeds;
    for (s = 0; s < k; s++)
        for (r = 0; r < g->n; r++)
            if (!get_run(x, arm, g->rate[r], seed0 + s, !g->fixed)) return;
    for (;;) {
        int b = grid_best(&x->res, g, arm, k), edge;
        double nr;
        if (b < 0) {
            exp_say_error("no rate of the %s sweep finished at every seed", exp_arm_name[arm]);
            x->rc = 1;
            return;
        }
        g->best = b;
        edge = !g->fixed && g->n >= 2 && (b == 0 || b == g->n - 1);
        g->at_edge = edge;
        if (!edge || g->extended >= x->eo->sweep_extend || g->n >= EXP_MAX_RATES) return;
        if (b == 0) { /* one grid step further out, geometrically */
            nr = g->rate[0] * (g->rate[0] / g->rate[1]);
            memmove(g->rate + 1, g->rate, (size_t)g->n * sizeof g->rate[0]);
            g->rate[0] = nr;
        } else {
            nr = g->rate[g->n - 1] * (g->rate[g->n - 1] / g->rate[g->n - 2]);
            g->rate[g->n] = nr;
        }
        g->n++;
        g->extended++;
        exp_say_extension(arm, g->rate[b == 0 ? 1 : g->n - 2], nr);
        x->planned += k;
        for (s = 0; s < k; s++)
            if (!get_run(x, arm, nr, seed0 + s, 1)) return;
    }
}

static int count_missing(const exp_results *x, int arm, double rate, int n)
{
    int k, m = 0;
    for (k = 0; k < n; k++) m += exp_find_run(x, arm, rate, x->seed0 + k) == NULL;
    return m;
}

/* The grids (fixed rates or parsed sweeps), the seeds, the paper's rates and the first count of
 * runs; GPT_OK, or exp_parse_rates's status with the message printed for a bad list of rates. */
static gpt_status plan(exp_ctx *x, const exp_options *eo)
{
    exp_results *e = &x->res;
    char err[512];
    gpt_status st;
    int arm, k, n = eo->seeds > 0 ? eo->seeds : 1, ks = eo->sweep_seeds > 0 ? eo->sweep_seeds : 1;
    memset(x, 0, sizeof *x);
    x->eo = eo;
    x->rank0 = gpt_comm_rank(eo->opt.comm) == 0;
    e->out_dir = eo->out_dir;
    e->seed0 = (long)eo->opt.seed;
    e->seeds = n;
    e->sweep_seeds = ks > n ? n : ks; /* seeds at every rate of the sweeps */
    e->sweep_extend = eo->sweep_extend;
    for (arm = 0; arm < 2; arm++) {
        exp_grid *g = &e->grid[arm];
        e->paper[arm] = optim_default(exp_arm_head[arm]).head_lr;
        if (eo->head_lr[arm] > 0.0) {
            g->rate[0] = eo->head_lr[arm], g->n = 1, g->fixed = 1;
        } else if ((st = exp_parse_rates(eo->sweep[arm] ? eo->sweep[arm] : arm ? EXP_SWEEP_ROWNORM : EXP_SWEEP_ADAMW,
                                         g->rate, &g->n, err, sizeof err)) != GPT_OK) {
            exp_say_error("--sweep-%s: %s", arm ? "rownorm" : "adamw", err);
            return st;
        }
    }
    ks = e->sweep_seeds;
    x->planned = ks * (e->grid[0].n + e->grid[1].n) + 2 * (n - ks);
    for (arm = 0; arm < 2; arm++) { /* the paper's pairs: at least these many more runs */
        int in_grid = 0;
        for (k = 0; k < e->grid[arm].n; k++) in_grid |= e->grid[arm].rate[k] == e->paper[arm];
        x->planned += in_grid ? n - ks : n;
    }
    return GPT_OK;
}

/* The tuned pairs at the best rates, then the paper's pairs (unless the same). */
static void pairs(exp_ctx *x)
{
    exp_results *e = &x->res;
    int arm, k, n = e->seeds;
    for (arm = 0; arm < 2; arm++) e->best[arm] = e->grid[arm].rate[e->grid[arm].best];
    e->paper_same = e->best[0] == e->paper[0] && e->best[1] == e->paper[1];
    x->planned = x->made;
    for (arm = 0; arm < 2; arm++)
        x->planned += count_missing(e, arm, e->best[arm], n) +
                      (e->paper_same || e->paper[arm] == e->best[arm] ? 0 : count_missing(e, arm, e->paper[arm], n));
    for (k = 0; k < n && x->rc == 0; k++)
        for (arm = 0; arm < 2 && x->rc == 0; arm++) get_run(x, arm, e->best[arm], e->seed0 + k, 0);
    for (k = 0; k < n && x->rc == 0 && !e->paper_same; k++)
        for (arm = 0; arm < 2 && x->rc == 0; arm++) get_run(x, arm, e->paper[arm], e->seed0 + k, 0);
}

int experiment_main(const exp_options *eo)
{
    exp_ctx x;
    int arm;
    if (plan(&x, eo) != GPT_OK) return 2; /* a bad list of rates: a command-line error */
    exp_say_plan(&x.res, &eo->opt.recipe, x.rank0);
    /* 1. the sweeps */
    for (arm = 0; arm < 2 && x.rc == 0; arm++) sweep_arm(&x, arm);
    /* 2. the tuned pairs, 3. the paper's pairs */
    if (x.rc == 0) pairs(&x);
    /* 4. rank 0 alone writes the tables and the plots */
    if (x.rc == 0 && x.rank0) {
        exp_say_done(x.made, x.seconds);
        if (exp_report(&x.res) != GPT_OK) x.rc = 1;
    }
    free(x.res.runs);
    return x.rc;
}
