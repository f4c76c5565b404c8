/* experiment.c - the experiment's driver: the runs, the sweeps and the choice of the best rates,
 * the pairs, the frontier's comparison and the verdict (see experiment.h); what it writes is made
 * by report.c. */
#include "experiment.h"

#include "data.h"
#include "plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h> /* isatty */

/* ---- the experiment ----------------------------------------------------------------------- */

static const char *const arm_name[2] = {"AdamW head", "RowNorm head"};
static const optim_head_kind arm_head[2] = {OPTIM_ADAMW, OPTIM_ROWNORM};

typedef struct {
    int arm;
    double rate;
    long seed;
    int ok;          /* 1 ran to the end; 0 failed (error says why) */
    char error[512];
    exp_final fin;   /* from the log (rank 0); val_loss on every rank */
    char log[1100];
} exp_run;

typedef struct {
    const exp_options *eo;
    exp_run *runs;
    int n_runs, cap;
    int planned, made; /* for "run k of N" */
    double seconds;    /* spent in the runs made */
    int rc;            /* 0, 1 (failure), 130 (interrupted) */
    int rank0;
} exp_ctx;

static void fmt_duration(char *out, size_t cap, double s)
{
    if (s < 60) snprintf(out, cap, "%.0f s", s);
    else if (s < 3600) snprintf(out, cap, "%dm%02ds", (int)(s / 60), (int)s % 60);
    else snprintf(out, cap, "%dh%02dm", (int)(s / 3600), (int)(s / 60) % 60);
}

static exp_run *find_run(exp_ctx *x, int arm, double rate, long seed)
{
    int k;
    for (k = 0; k < x->n_runs; k++)
        if (x->runs[k].arm == arm && x->runs[k].rate == rate && x->runs[k].seed == seed) return &x->runs[k];
    return NULL;
}

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
    } else if (!h || strcmp(h, optim_head_name(arm_head[u->arm])) != 0 || !lr || strtod(lr, NULL) != u->rate) {
        gpt_errorf(err, errlen, "%s: the log's recipe (head %s, head_lr %s) is not the run asked for (%s, %.17g)", u->log,
                   h ? h : "?", lr ? lr : "?", optim_head_name(arm_head[u->arm]), u->rate);
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

/* The run (arm, rate, seed): made now unless made already. In a sweep a failed run is a point
 * marked failed; elsewhere it fails the experiment. NULL once the experiment has failed. */
static exp_run *get_run(exp_ctx *x, int arm, double rate, long seed, int sweep)
{
    const exp_options *eo = x->eo;
    exp_run *u = find_run(x, arm, rate, seed);
    optim_recipe d = optim_default(arm_head[arm]);
    train_options o = eo->opt;
    train_result res;
    char name[64], ckpt_path[1100], eta[32], err[512];
    double t0;
    int one_line;
    if (u || x->rc) return x->rc ? NULL : u;
    if (x->n_runs == x->cap) {
        int cap = x->cap ? 2 * x->cap : 32;
        exp_run *r = (exp_run *)realloc(x->runs, (size_t)cap * sizeof *r);
        if (!r) {
            fprintf(stderr, "experiment: out of memory\n");
            x->rc = 1;
            return NULL;
        }
        x->runs = r, x->cap = cap;
    }
    u = &x->runs[x->n_runs++];
    memset(u, 0, sizeof *u);
    u->arm = arm, u->rate = rate, u->seed = seed;
    u->fin.val_loss = u->fin.diameter = u->fin.hilbert_rms = NAN;
    if (x->made + 1 > x->planned) x->planned = x->made + 1;
    if (x->made > 0) {
        fmt_duration(eta, sizeof eta, x->seconds / x->made * (x->planned - x->made));
    } else {
        snprintf(eta, sizeof eta, "after the first run");
    }
    /* one line per run: its start (flushed), then its result; with a progress bar or the
     * trainer's own lines in between, two */
    o.quiet = eo->opt.log_every == 0;
    one_line = o.quiet && !(o.progress > 0 || (o.progress < 0 && isatty(STDOUT_FILENO)));
    printf("experiment: run %d of %d: %s, rate %.4g, seed %ld%s (ETA %s)%s", x->made + 1, x->planned, arm_name[arm],
           rate, seed, sweep ? ", sweep" : "", eta, one_line ? " ..." : "\n");
    fflush(stdout);
    /* the runs differ only in the head optimizer, its paper hyper-parameters, its rate, the seed */
    o.resume = NULL;
    o.seed = (uint64_t)seed;
    o.recipe.head = arm_head[arm];
    o.recipe.head_lr = rate, o.recipe.head_beta1 = d.head_beta1, o.recipe.head_beta2 = d.head_beta2;
    o.recipe.head_eps = d.head_eps, o.recipe.head_wd = d.head_wd;
    snprintf(u->log, sizeof u->log, "%s/%s_lr%.6g_seed%ld.csv", eo->out_dir, optim_head_name(arm_head[arm]), rate, seed);
    snprintf(ckpt_path, sizeof ckpt_path, "%s/%s_lr%.6g_seed%ld.ckpt", eo->out_dir, optim_head_name(arm_head[arm]),
             rate, seed);
    snprintf(name, sizeof name, "%s %.4g s%ld", optim_head_name(arm_head[arm]), rate, seed);
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
    if (one_line && res.outcome != TRAIN_DONE) printf(" %s\n", res.outcome == TRAIN_FAILED ? "failed" : "stopped");
    if (res.outcome == TRAIN_DONE) {
        u->ok = 1;
        u->fin.val_loss = res.final_val_loss;
        if (x->rank0 && read_back(u, res.final_val_loss, err, sizeof err) != GPT_OK) {
            if (one_line) printf("\n");
            fprintf(stderr, "experiment: %s\n", err);
            x->rc = 1;
        } else {
            if (!one_line) printf("experiment: %s:", name);
            printf(" final val loss %.4f, D(S) %.3e, Hilbert RMS %.3e (%.1f s)\n", u->fin.val_loss, u->fin.diameter,
                   u->fin.hilbert_rms, gpt_now_seconds() - t0);
        }
    } else if (res.outcome == TRAIN_INTERRUPTED || res.outcome == TRAIN_STOPPED) {
        x->rc = 130;
    } else {
        snprintf(u->error, sizeof u->error, "%s", res.error);
        fprintf(stderr, "experiment: %s: %s%s\n", name, res.error, sweep ? " (a failed point of the sweep)" : "");
        /* data parallel: a failure the other ranks do not know of would leave them waiting */
        if (gpt_comm_size(o.comm) > 1 && !res.agreed) o.comm->ops->abort(o.comm, 1);
        if (!sweep) x->rc = 1;
    }
    train_result_free(&res);
    return x->rc ? NULL : u;
}

typedef struct {
    double rate[EXP_MAX_RATES];
    int n, fixed, extended, best, at_edge;
} exp_grid;

/* One sweep point: the runs of an arm at a rate over seeds seed0..seed0+k-1 (those that finished). */
typedef struct {
    int n, failed;                  /* finished runs, failed runs */
    double loss, loss_sd, loss_min, loss_max;
    double d, d_min, d_max, rms, rms_min, rms_max; /* means (arithmetic) and extremes */
} exp_point;

static exp_point point_at(exp_ctx *x, int arm, double rate, long seed0, int k)
{
    exp_point p;
    double l[100];
    int s;
    memset(&p, 0, sizeof p);
    p.loss_min = p.d_min = p.rms_min = HUGE_VAL;
    p.loss_max = p.d_max = p.rms_max = -HUGE_VAL;
    for (s = 0; s < k && s < 100; s++) {
        exp_run *u = find_run(x, arm, rate, seed0 + s);
        if (!u) continue;
        if (!u->ok) {
            p.failed++;
            continue;
        }
        l[p.n++] = u->fin.val_loss;
        p.d += u->fin.diameter, p.rms += u->fin.hilbert_rms;
        p.loss_min = fmin(p.loss_min, u->fin.val_loss), p.loss_max = fmax(p.loss_max, u->fin.val_loss);
        p.d_min = fmin(p.d_min, u->fin.diameter), p.d_max = fmax(p.d_max, u->fin.diameter);
        p.rms_min = fmin(p.rms_min, u->fin.hilbert_rms), p.rms_max = fmax(p.rms_max, u->fin.hilbert_rms);
    }
    if (p.n) {
        exp_mean_sd(l, p.n, &p.loss, &p.loss_sd);
        p.d /= p.n, p.rms /= p.n;
    } else {
        p.loss = p.loss_sd = p.d = p.rms = NAN;
    }
    return p;
}

/* Index of the best grid rate: the lowest mean final validation loss over the k sweep seeds,
 * among the rates where all k runs finished; -1 if none. */
static int grid_best(exp_ctx *x, const exp_grid *g, int arm, long seed0, int k)
{
    int r, best = -1;
    double bl = HUGE_VAL;
    for (r = 0; r < g->n; r++) {
        exp_point p = point_at(x, arm, g->rate[r], seed0, k);
        if (p.n == k && p.loss < bl) bl = p.loss, best = r;
    }
    return best;
}

/* Sweeps one arm over k seeds, extending the grid while its best sits at an edge. 0 or -1. */
static int sweep_arm(exp_ctx *x, exp_grid *g, int arm, long seed0, int k)
{
    int r, s;
    for (s = 0; s < k; s++)
        for (r = 0; r < g->n; r++)
            if (!get_run(x, arm, g->rate[r], seed0 + s, !g->fixed)) return -1;
    for (;;) {
        int b = grid_best(x, g, arm, seed0, k), edge;
        double nr;
        if (b < 0) {
            fprintf(stderr, "experiment: no rate of the %s sweep finished at every seed\n", arm_name[arm]);
            x->rc = 1;
            return -1;
        }
        g->best = b;
        edge = !g->fixed && g->n >= 2 && (b == 0 || b == g->n - 1);
        g->at_edge = edge;
        if (!edge || g->extended >= x->eo->sweep_extend || g->n >= EXP_MAX_RATES) return 0;
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
        printf("experiment: the best %s rate %.6g is at the edge of its grid: adding %.6g\n", arm_name[arm],
               g->rate[b == 0 ? 1 : g->n - 2], nr);
        x->planned += k;
        for (s = 0; s < k; s++)
            if (!get_run(x, arm, nr, seed0 + s, 1)) return -1;
    }
}

static int count_missing(exp_ctx *x, int arm, double rate, long seed0, int n)
{
    int k, m = 0;
    for (k = 0; k < n; k++) m += find_run(x, arm, rate, seed0 + k) == NULL;
    return m;
}

/* "0.002, 0.004, ..." (every rate exactly: %.6g keeps 0.1024) */
static void sb_rates(sbuf *b, const exp_grid *g)
{
    int k;
    for (k = 0; k < g->n; k++) sb_printf(b, "%s%.6g", k ? ", " : "", g->rate[k]);
}

static const char *fmt_or_dash(char *buf, size_t cap, double v, const char *fmt)
{
    if (v == v) snprintf(buf, cap, fmt, v);
    else snprintf(buf, cap, "—");
    return buf;
}

/* An arm's frontier: (step size, loss) per finished grid point; seed < 0: the means over the k
 * sweep seeds (points where all k finished), else that seed's runs alone. */
static int arm_points(exp_ctx *x, const exp_grid *g, int arm, long seed0, int k, long seed, int rms, double *sx,
                      double *sl, double *rate)
{
    int r, m = 0;
    for (r = 0; r < g->n; r++) {
        if (seed < 0) {
            exp_point p = point_at(x, arm, g->rate[r], seed0, k);
            if (p.n != k) continue;
            sx[m] = rms ? p.rms : p.d, sl[m] = p.loss;
        } else {
            exp_run *u = find_run(x, arm, g->rate[r], seed);
            if (!u || !u->ok) continue;
            sx[m] = rms ? u->fin.hilbert_rms : u->fin.diameter, sl[m] = u->fin.val_loss;
        }
        if (rate) rate[m] = g->rate[r];
        m++;
    }
    return m;
}

/* What the frontiers say at equal step size, for D (rms 0) or the Hilbert RMS (rms 1): the step
 * each arm needs to reach the RowNorm head's best (mean) loss, on the mean frontiers and on each
 * sweep seed's own, and where the RowNorm head's mean frontier lies below the AdamW head's. */
typedef struct {
    double target;                /* the RowNorm head's best mean loss */
    double need[2];               /* on the mean frontiers (NaN: not reached) */
    double ratio, ratio_min, ratio_max; /* AdamW / RowNorm: mean frontiers; over seeds (Inf: AdamW never reaches it) */
    int seeds_above, seeds;       /* seeds whose ratio is > 1 (RowNorm needs the smaller step), of those counted */
    double lo, hi;                /* the range both mean frontiers cover (lo >= hi: they do not overlap) */
    double below[4][2];           /* up to 4 intervals of it where RowNorm's mean frontier is lower */
    int n_below;
    double below_share;           /* share of [lo, hi] (in log step size) where it is lower */
} exp_matched;

static void matched(exp_ctx *x, const exp_grid *g, long seed0, int k, int rms, exp_matched *mt)
{
    double sx[2][EXP_MAX_RATES], sl[2][EXP_MAX_RATES], a0 = HUGE_VAL, a1 = -HUGE_VAL, r0 = HUGE_VAL, r1 = -HUGE_VAL;
    int m[2], arm, s, j, in = 0, n_in = 0;
    double start = 0;
    memset(mt, 0, sizeof *mt);
    for (arm = 0; arm < 2; arm++) m[arm] = arm_points(x, &g[arm], arm, seed0, k, -1, rms, sx[arm], sl[arm], NULL);
    mt->target = point_at(x, 1, g[1].rate[g[1].best], seed0, k).loss;
    for (arm = 0; arm < 2; arm++) mt->need[arm] = exp_matched_step(sx[arm], sl[arm], m[arm], mt->target, NULL);
    mt->ratio = mt->need[1] == mt->need[1] ? (mt->need[0] == mt->need[0] ? mt->need[0] / mt->need[1] : HUGE_VAL) : NAN;
    mt->ratio_min = HUGE_VAL, mt->ratio_max = -HUGE_VAL;
    for (s = 0; s < k; s++) { /* each seed's own frontiers, towards that seed's RowNorm loss at the best rate */
        double px[2][EXP_MAX_RATES], pl[2][EXP_MAX_RATES], nd[2], r;
        exp_run *u = find_run(x, 1, g[1].rate[g[1].best], seed0 + s);
        int pm[2];
        if (!u || !u->ok) continue;
        for (arm = 0; arm < 2; arm++) {
            pm[arm] = arm_points(x, &g[arm], arm, seed0, k, seed0 + s, rms, px[arm], pl[arm], NULL);
            nd[arm] = exp_matched_step(px[arm], pl[arm], pm[arm], u->fin.val_loss, NULL);
        }
        if (nd[1] != nd[1]) continue;
        r = nd[0] == nd[0] ? nd[0] / nd[1] : HUGE_VAL;
        mt->seeds++;
        mt->seeds_above += r > 1.0;
        mt->ratio_min = fmin(mt->ratio_min, r), mt->ratio_max = fmax(mt->ratio_max, r);
    }
    if (!mt->seeds) mt->ratio_min = mt->ratio_max = NAN;
    for (j = 0; j < m[0]; j++) a0 = fmin(a0, sx[0][j]), a1 = fmax(a1, sx[0][j]);
    for (j = 0; j < m[1]; j++) r0 = fmin(r0, sx[1][j]), r1 = fmax(r1, sx[1][j]);
    mt->lo = fmax(a0, r0), mt->hi = fmin(a1, r1);
    if (!(mt->lo < mt->hi)) return;
    for (j = 0; j <= 256; j++) { /* 257 log-spaced points over the shared range */
        double v = exp(log(mt->lo) + (log(mt->hi) - log(mt->lo)) * j / 256.0);
        int below = exp_frontier_at(sx[1], sl[1], m[1], v) < exp_frontier_at(sx[0], sl[0], m[0], v);
        n_in += below;
        if (below && !in) start = v, in = 1;
        if ((!below || j == 256) && in) {
            if (mt->n_below < 4) mt->below[mt->n_below][0] = start, mt->below[mt->n_below][1] = v, mt->n_below++;
            in = 0;
        }
    }
    mt->below_share = n_in / 257.0;
}

static void sb_ratio(sbuf *b, double r)
{
    if (r == HUGE_VAL) sb_printf(b, "∞ (AdamW never reaches it)");
    else if (r == r) sb_printf(b, "%.2f×", r);
    else sb_printf(b, "—");
}

/* The matched-loss table for D or the Hilbert RMS. */
static void sb_matched(sbuf *b, const exp_matched *mt, int rms, int k)
{
    const char *q = rms ? "Hilbert RMS" : "D(S)";
    char c1[32], c2[32];
    int arm, j;
    sb_printf(b, "| target loss | %s the AdamW head needs | %s the RowNorm head needs | AdamW / RowNorm | range over "
                 "the %d seeds (each seed's frontiers, to its own RowNorm loss at the best rate) |\n|---|---|---|---|---|\n",
              q, q, k);
    sb_printf(b, "| %.4f (the RowNorm head's best mean) |", mt->target);
    for (arm = 0; arm < 2; arm++) {
        if (mt->need[arm] == mt->need[arm]) sb_printf(b, " %.3e |", mt->need[arm]);
        else sb_printf(b, " not reached |");
    }
    sb_printf(b, " ");
    sb_ratio(b, mt->ratio);
    sb_printf(b, " | ");
    if (mt->seeds) {
        sb_ratio(b, mt->ratio_min);
        sb_printf(b, " … ");
        sb_ratio(b, mt->ratio_max);
        sb_printf(b, " (%d of %d seeds above 1) |\n", mt->seeds_above, mt->seeds);
    } else {
        sb_printf(b, "— |\n");
    }
    if (mt->lo < mt->hi) {
        sb_printf(b, "\nWhere both mean frontiers reach (%s %s to %s), the RowNorm head's lies below the AdamW head's "
                     "(lower loss at the same step size) over %.0f %% of the range (log scale)%s", q,
                  fmt_or_dash(c1, sizeof c1, mt->lo, "%.3e"), fmt_or_dash(c2, sizeof c2, mt->hi, "%.3e"),
                  100 * mt->below_share, mt->n_below ? ": " : ".\n");
        for (j = 0; j < mt->n_below; j++)
            sb_printf(b, "%s[%.3e, %.3e]", j ? ", " : "", mt->below[j][0], mt->below[j][1]);
        if (mt->n_below) sb_printf(b, ".\n");
    } else {
        sb_printf(b, "\nThe two sweeps' %s ranges do not overlap.\n", q);
    }
}

/* frontier_diameter.svg or frontier_rms.svg: mean over the sweep seeds, bars min–max */
static gpt_status frontier_plot(exp_ctx *x, const exp_grid *g, long seed0, int k, int rms, const char *caption, char *err,
                         size_t errlen)
{
    plot_desc d;
    plot *p;
    gpt_status rc = GPT_OK;
    int arm;
    char path[1100];
    memset(&d, 0, sizeof d);
    d.title = rms ? "Loss against the Hilbert RMS of the head step (one point per head rate)"
                  : "Loss against the step diameter D(S) of the head (one point per head rate)";
    d.xlabel = rms ? "final Hilbert RMS of the head step (log)" : "final exact D(S) of the head step (log)";
    d.ylabel = "final validation loss";
    d.log_x = 1;
    d.caption = caption;
    p = plot_create(&d);
    if (!p) {
        gpt_errorf(err, errlen, "plots: out of memory");
        return GPT_ERR_NOMEM;
    }
    for (arm = 0; arm < 2 && rc == 0; arm++) {
        double tx[EXP_MAX_RATES], tl[EXP_MAX_RATES], lo[EXP_MAX_RATES], hi[EXP_MAX_RATES];
        char lab[EXP_MAX_RATES][24], name[128];
        const char *labels[EXP_MAX_RATES];
        int idx[EXP_MAX_RATES], r, m = 0, j;
        exp_point pt[EXP_MAX_RATES];
        double px[EXP_MAX_RATES], pl[EXP_MAX_RATES];
        plot_style st;
        for (r = 0; r < g[arm].n; r++) { /* the points where every sweep seed finished */
            exp_point q = point_at(x, arm, g[arm].rate[r], seed0, k);
            if (q.n != k) continue;
            pt[m] = q, px[m] = rms ? q.rms : q.d, pl[m] = q.loss, tx[m] = g[arm].rate[r]; /* tx: the rate, for now */
            m++;
        }
        m = exp_frontier_order(px, pl, m, idx); /* in increasing step size: the frontier read left to right */
        memset(&st, 0, sizeof st);
        st.color = exp_head_color(arm_head[arm]);
        st.markers = 1;
        st.ring = -1;
        {
            double rate[EXP_MAX_RATES];
            for (j = 0; j < m; j++) rate[j] = tx[idx[j]];
            for (j = 0; j < m; j++) {
                tx[j] = px[idx[j]], tl[j] = pl[idx[j]];
                lo[j] = pt[idx[j]].loss_min, hi[j] = pt[idx[j]].loss_max;
                snprintf(lab[j], sizeof lab[j], "%.6g", rate[j]);
                labels[j] = lab[j];
                if (rate[j] == g[arm].rate[g[arm].best]) st.ring = j;
            }
        }
        st.labels = labels;
        if (k > 1) st.ylo = lo, st.yhi = hi;
        snprintf(name, sizeof name, "%s (labels: peak head rate; ring: best)", arm_name[arm]);
        if (plot_add_series_style(p, name, tx, tl, (size_t)m, &st) != GPT_OK) {
            gpt_errorf(err, errlen, "plots: out of memory");
            rc = GPT_ERR_NOMEM;
        }
    }
    snprintf(path, sizeof path, "%s/%s", x->eo->out_dir, rms ? "frontier_rms.svg" : "frontier_diameter.svg");
    if (rc == GPT_OK) rc = plot_write_svg(p, path, err, errlen);
    plot_free(p);
    return rc;
}

/* The pairs at rates ra (AdamW), rb (RowNorm) over seeds seed0..: the table under `title`, and
 * the summary (intervals) in *ps. */
static char *pairs_table(exp_ctx *x, const char *title, double ra, double rb, long seed0, int n, exp_pair_summary *ps)
{
    exp_final *f = (exp_final *)calloc((size_t)(2 * n), sizeof *f);
    long *seeds = (long *)calloc((size_t)n, sizeof *seeds);
    char *t = NULL;
    int k;
    if (f && seeds) {
        for (k = 0; k < n; k++) {
            seeds[k] = seed0 + k;
            f[k] = find_run(x, 0, ra, seeds[k])->fin;
            f[n + k] = find_run(x, 1, rb, seeds[k])->fin;
        }
        t = exp_table_markdown(title, f, f + n, seeds, n);
        exp_pair_summarize(f, f + n, n, ps);
    }
    free(f), free(seeds);
    return t;
}

/* The definitions that open the output and table.md. */
static void sb_definitions(sbuf *b)
{
    sb_printf(b, "- **D(S)**, the step diameter: for a head step S (the change of the V × d output matrix in one "
                 "update), the largest distance between two of its rows, max ‖s_i − s_j‖. A softmax ignores shifts "
                 "shared by all logits, so D(S) bounds how far any prediction can move (in Hilbert's projective "
                 "distance, by at most D(S)·‖h‖ for a hidden state h); measured exactly on the last update.\n"
                 "- **Hilbert RMS**: how far the predictions actually moved in that update: the root mean square, "
                 "over a fixed panel of validation positions, of the Hilbert distance between the predicted "
                 "distributions before and after it.\n"
                 "- **Frontier**: final validation loss against one of these step sizes, one point per peak head "
                 "rate (mean over the sweep seeds, bars from the lowest to the highest seed). Lower at the same step "
                 "size is better: the lower curve reaches a loss with a smaller change of the predictions.\n"
                 "- **Beyond seed noise**: a difference whose 95 %% interval, paired over seeds (Student's t), excludes "
                 "no difference; for the frontier, a ratio above 1 on every seed's own frontier.\n");
}

/* One verdict line: holds beyond the seed noise or not. */
static const char *mark(int beyond) { return beyond ? "**beyond seed noise**" : "*within seed noise*"; }

/* "X× smaller in D(S) (AdamW / RowNorm 95 % interval lo to hi, beyond seed noise)", or larger */
static void sb_step_ratio(sbuf *b, const char *lead, const char *q, double r, double lo, double hi, int n)
{
    sb_printf(b, "%s %.2f× %s in %s", lead, r >= 1 ? r : 1 / r, r >= 1 ? "smaller" : "larger", q);
    if (n > 1) sb_printf(b, " (AdamW / RowNorm %.2f to %.2f: %s)", lo, hi, mark(lo > 1 || hi < 1));
}

static void sb_pair_verdict(sbuf *b, const char *where, const exp_pair_summary *ps)
{
    int n = ps->n, beyond = n > 1 && (ps->delta_lo > 0 || ps->delta_hi < 0);
    sb_printf(b, "- %s: the RowNorm head's validation loss is %s by %.4f", where,
              ps->delta > 0 ? "higher (worse)" : "lower (better)", fabs(ps->delta));
    if (n > 1) sb_printf(b, " (95 %% interval %+.4f to %+.4f, %d seeds): %s", ps->delta_lo, ps->delta_hi, n, mark(beyond));
    sb_step_ratio(b, "; its steps are", "D(S)", ps->d_ratio, ps->d_lo, ps->d_hi, n);
    sb_step_ratio(b, " and", "Hilbert RMS", ps->rms_ratio, ps->rms_lo, ps->rms_hi, n);
    sb_printf(b, ".\n");
}

static void sb_frontier_verdict(sbuf *b, const exp_matched *mt, int rms)
{
    const char *q = rms ? "Hilbert RMS" : "D(S)";
    int beyond = mt->seeds > 1 && mt->seeds_above == mt->seeds;
    sb_printf(b, "- At equal step size (%s): ", q);
    if (!(mt->ratio == mt->ratio)) {
        sb_printf(b, "the RowNorm head's best loss is not on its own mean frontier (no matched step).\n");
        return;
    }
    sb_printf(b, "to reach the RowNorm head's best mean loss (%.4f) the AdamW head needs ", mt->target);
    sb_ratio(b, mt->ratio);
    sb_printf(b, " the %s the RowNorm head needs (each seed's own frontiers: ", q);
    sb_ratio(b, mt->ratio_min);
    sb_printf(b, " to ");
    sb_ratio(b, mt->ratio_max);
    sb_printf(b, "), so %s: %s; the RowNorm head's mean frontier is the lower one over %.0f %% of the %s range "
                 "both reach.\n",
              mt->ratio > 1 ? "the RowNorm head gets there with the smaller step"
                            : "the AdamW head gets there with the smaller step",
              mt->ratio > 1 ? mark(beyond) : mark(mt->seeds > 1 && mt->seeds_above == 0), 100 * mt->below_share, q);
}

/* results.csv: one row per run, every number the tables are made of (what the demo_table test
 * compares with the committed copy). */
static gpt_status write_results(exp_ctx *x, char *err, size_t errlen)
{
    sbuf b;
    char path[1100];
    gpt_status rc;
    int k;
    memset(&b, 0, sizeof b);
    sb_printf(&b, "head,rate,seed,status,val_loss,diameter,hilbert_rms\n");
    for (k = 0; k < x->n_runs; k++) {
        const exp_run *u = &x->runs[k];
        if (u->ok)
            sb_printf(&b, "%s,%.17g,%ld,ok,%.17g,%.17g,%.17g\n", optim_head_name(arm_head[u->arm]), u->rate, u->seed,
                      u->fin.val_loss, u->fin.diameter, u->fin.hilbert_rms);
        else
            sb_printf(&b, "%s,%.17g,%ld,failed,,,\n", optim_head_name(arm_head[u->arm]), u->rate, u->seed);
    }
    snprintf(path, sizeof path, "%s/results.csv", x->eo->out_dir);
    if (b.failed) {
        gpt_errorf(err, errlen, "%s: out of memory", path);
        rc = GPT_ERR_NOMEM;
    } else {
        rc = data_write_file_atomic(path, b.s, b.len, err, errlen);
    }
    free(b.s);
    return rc;
}

int experiment_main(const exp_options *eo)
{
    exp_ctx x;
    exp_grid g[2];
    sbuf out, cap;
    int n = eo->seeds > 0 ? eo->seeds : 1, arm, k, rc = 0, paper_same = 0, ks;
    long seed0 = (long)eo->opt.seed;
    double paper[2], best[2] = {0, 0};
    char err[512], path[1100], title[256];
    exp_log *logs = NULL;
    exp_pair_summary tuned, at_paper;
    exp_matched mt[2];
    memset(&x, 0, sizeof x);
    memset(g, 0, sizeof g);
    memset(&out, 0, sizeof out);
    memset(&cap, 0, sizeof cap);
    memset(&at_paper, 0, sizeof at_paper);
    x.eo = eo;
    x.rank0 = gpt_comm_rank(eo->opt.comm) == 0;
    ks = eo->sweep_seeds > 0 ? eo->sweep_seeds : 1; /* seeds at every rate of the sweeps */
    if (ks > n) ks = n;
    for (arm = 0; arm < 2; arm++) {
        paper[arm] = optim_default(arm_head[arm]).head_lr;
        if (eo->head_lr[arm] > 0.0) {
            g[arm].rate[0] = eo->head_lr[arm], g[arm].n = 1, g[arm].fixed = 1;
        } else {
            if (exp_parse_rates(eo->sweep[arm] ? eo->sweep[arm] : arm ? EXP_SWEEP_ROWNORM : EXP_SWEEP_ADAMW, g[arm].rate,
                                &g[arm].n, err, sizeof err) != GPT_OK) {
                fprintf(stderr, "experiment: --sweep-%s: %s\n", arm ? "rownorm" : "adamw", err);
                return 2;
            }
        }
    }
    x.planned = ks * (g[0].n + g[1].n) + 2 * (n - ks);
    for (arm = 0; arm < 2; arm++) { /* the paper's pairs: at least these many more runs */
        int in_grid = 0;
        for (k = 0; k < g[arm].n; k++) in_grid |= g[arm].rate[k] == paper[arm];
        x.planned += in_grid ? n - ks : n;
    }
    if (x.rank0) {
        memset(&out, 0, sizeof out);
        sb_printf(&out, "experiment: what the tables measure\n");
        sb_definitions(&out);
        if (!out.failed) printf("%s", out.s);
        free(out.s);
        memset(&out, 0, sizeof out);
    }
    printf("experiment: outputs in %s\n", eo->out_dir);
    for (arm = 0; arm < 2; arm++) {
        sbuf r;
        memset(&r, 0, sizeof r);
        sb_rates(&r, &g[arm]);
        printf("experiment: %s: %s %s (warm-up %.0f%%, cosine to %.0f%% of peak), seed%s %ld%s%ld\n", arm_name[arm],
               g[arm].fixed ? "fixed rate" : "sweep over peak rates", r.s ? r.s : "?", 100.0 * eo->opt.recipe.warmup_frac,
               100.0 * eo->opt.recipe.final_frac, ks > 1 ? "s" : "", seed0, ks > 1 ? ".." : "", seed0 + ks - 1);
        free(r.s);
    }
    printf("experiment: the best rate of each: the lowest mean over %d seed%s; then %d seed%s (%ld..%ld) at each arm's "
           "best rate and at the paper's (AdamW %.3g, RowNorm %.3g)\n",
           ks, ks > 1 ? "s" : "", n, n > 1 ? "s" : "", seed0, seed0 + n - 1, paper[0], paper[1]);
    /* 1. the sweeps */
    for (arm = 0; arm < 2 && x.rc == 0; arm++) sweep_arm(&x, &g[arm], arm, seed0, ks);
    /* 2. the tuned pairs, 3. the paper's pairs */
    if (x.rc == 0) {
        for (arm = 0; arm < 2; arm++) best[arm] = g[arm].rate[g[arm].best];
        paper_same = best[0] == paper[0] && best[1] == paper[1];
        x.planned = x.made;
        for (arm = 0; arm < 2; arm++)
            x.planned += count_missing(&x, arm, best[arm], seed0, n) +
                         (paper_same || paper[arm] == best[arm] ? 0 : count_missing(&x, arm, paper[arm], seed0, n));
        for (k = 0; k < n && x.rc == 0; k++)
            for (arm = 0; arm < 2 && x.rc == 0; arm++) get_run(&x, arm, best[arm], seed0 + k, 0);
        for (k = 0; k < n && x.rc == 0 && !paper_same; k++)
            for (arm = 0; arm < 2 && x.rc == 0; arm++) get_run(&x, arm, paper[arm], seed0 + k, 0);
    }
    if (x.rc || !x.rank0) { /* rank 0 alone writes the tables and the plots */
        rc = x.rc;
        free(x.runs);
        return rc;
    }
    printf("experiment: %d runs in %.0f s\n\n", x.made, x.seconds);
    /* the tuned pairs' logs: the recipe and the curves */
    logs = (exp_log *)calloc((size_t)(2 * n), sizeof *logs);
    if (!logs) {
        fprintf(stderr, "experiment: out of memory\n");
        free(x.runs);
        return 1;
    }
    for (k = 0; k < n && rc == 0; k++)
        for (arm = 0; arm < 2 && rc == 0; arm++)
            if (exp_log_read(find_run(&x, arm, best[arm], seed0 + k)->log, &logs[arm * n + k], err, sizeof err)) {
                fprintf(stderr, "experiment: %s\n", err);
                rc = 1;
            }
    if (rc == 0) {
        int ext = g[0].extended || g[1].extended;
        const char *corpus = exp_log_recipe(&logs[0], "corpus");
        char *tt, *tp = NULL;
        matched(&x, g, seed0, ks, 0, &mt[0]);
        matched(&x, g, seed0, ks, 1, &mt[1]);
        snprintf(title, sizeof title, "## At each head's best rate (AdamW %.6g, RowNorm %.6g)", best[0], best[1]);
        tt = pairs_table(&x, title, best[0], best[1], seed0, n, &tuned);
        snprintf(title, sizeof title, "## At the paper's rates (AdamW %.6g, RowNorm %.6g)%s", paper[0], paper[1],
                 paper_same ? ": the same as the best" : "");
        if (!paper_same) tp = pairs_table(&x, title, paper[0], paper[1], seed0, n, &at_paper);
        sb_printf(&out, "# AdamW head vs RowNorm head: head-rate sweeps, the loss–step-size frontier, tuned pairs\n\n");
        sb_definitions(&out);
        sb_printf(&out, "\nRecipe (identical in every run but the head optimizer and its rate): ");
        exp_describe_recipe(&out, &logs[0], 0);
        sb_printf(&out, ". Head AdamW betas (0.9, 0.999), eps 1e-10, wd 0.1; head RowNorm beta 0.95, eps 1e-8, wd 0 "
                        "(the paper's). Data: corpus %s%s. The logs record all of it (`# key=value` lines).\n\n",
                  corpus ? corpus : "?",
                  corpus && strtoull(corpus, NULL, 16) == DATA_DEMO_CORPUS_ID ? " (the demo's, " DATA_DEMO_CORPUS ")" : "");
        sb_printf(&out, "## The frontier (%d seed%s per peak head rate: %ld..%ld)\n\n", ks, ks > 1 ? "s" : "", seed0,
                  seed0 + ks - 1);
        sb_printf(&out, "| head | peak head rate | final val loss%s | min … max | final D(S) | Hilbert RMS | |\n"
                        "|---|---|---|---|---|---|---|\n", ks > 1 ? " (mean ± sd)" : "");
        for (arm = 0; arm < 2; arm++)
            for (k = 0; k < g[arm].n; k++) {
                exp_point p = point_at(&x, arm, g[arm].rate[k], seed0, ks);
                const char *tag = k == g[arm].best ? (g[arm].at_edge ? "**best (at the grid's edge)**" : "**best**") : "";
                if (p.n == ks) {
                    sb_printf(&out, "| %s | %.6g | %.4f", arm_name[arm], g[arm].rate[k], p.loss);
                    if (ks > 1) sb_printf(&out, " ± %.4f | %.4f … %.4f", p.loss_sd, p.loss_min, p.loss_max);
                    else sb_printf(&out, " | —");
                    sb_printf(&out, " | %.3e | %.3e | %s |\n", p.d, p.rms, tag);
                } else {
                    exp_run *u = NULL;
                    int s;
                    for (s = 0; s < ks && !u; s++) {
                        exp_run *v = find_run(&x, arm, g[arm].rate[k], seed0 + s);
                        if (v && !v->ok) u = v;
                    }
                    sb_printf(&out, "| %s | %.6g | failed (%d of %d seeds): %s | | | | |\n", arm_name[arm], g[arm].rate[k],
                              p.failed, ks, u ? u->error : "?");
                }
            }
        for (arm = 0; arm < 2; arm++) {
            if (g[arm].at_edge)
                sb_printf(&out, "\nNote: the %s's best rate %.6g is at the edge of its grid%s: its real best may lie "
                                "beyond (give a wider --sweep-%s).\n", arm_name[arm], best[arm],
                          g[arm].extended ? " even after extending it" : "", arm ? "rownorm" : "adamw");
            else if (g[arm].fixed)
                sb_printf(&out, "\nThe %s's rate is fixed (--lr-head-%s %.6g): no sweep.\n", arm_name[arm],
                          arm ? "rownorm" : "adamw", best[arm]);
        }
        if (ext) sb_printf(&out, "\n(Grids extended where a best was at an edge: up to --sweep-extend %d points per arm.)\n",
                           eo->sweep_extend);
        sb_printf(&out, "\n## Matched loss: the step size each head needs to reach the RowNorm head's best loss\n\n"
                        "Read off the mean frontiers (segments linear in log step size between sweep points), and off "
                        "each sweep seed's own frontier for the range.\n\n");
        sb_matched(&out, &mt[0], 0, ks);
        sb_printf(&out, "\n");
        sb_matched(&out, &mt[1], 1, ks);
        sb_printf(&out, "\n%s", tt ? tt : "(out of memory)\n");
        if (!paper_same) sb_printf(&out, "\n%s", tp ? tp : "(out of memory)\n");
        else sb_printf(&out, "\n%s\n", title);
        free(tt), free(tp);
        /* the answer */
        sb_printf(&out, "\n## The answer at this scale\n\n");
        sb_frontier_verdict(&out, &mt[0], 0);
        sb_frontier_verdict(&out, &mt[1], 1);
        snprintf(title, sizeof title, "At each head's best rate (AdamW %.6g, RowNorm %.6g, chosen on the mean of %d seed%s)",
                 best[0], best[1], ks, ks > 1 ? "s" : "");
        sb_pair_verdict(&out, title, &tuned);
        if (!paper_same) {
            snprintf(title, sizeof title, "At the paper's rates (AdamW %.6g, RowNorm %.6g)", paper[0], paper[1]);
            sb_pair_verdict(&out, title, &at_paper);
        }
        if (out.failed) {
            fprintf(stderr, "experiment: out of memory\n");
            rc = 1;
        }
    }
    if (rc == 0) {
        snprintf(path, sizeof path, "%s/table.md", eo->out_dir);
        if (data_write_file_atomic(path, out.s, out.len, err, sizeof err) != GPT_OK || write_results(&x, err, sizeof err) != GPT_OK) {
            fprintf(stderr, "experiment: %s\n", err);
            rc = 1;
        } else {
            printf("%s\nwrote %s, results.csv\n", out.s, path);
        }
    }
    if (rc == 0) { /* the plots, with the recipe and the rates in their captions */
        const char *names[2] = {arm_name[0], arm_name[1]};
        const char *colors[2] = {exp_head_color(arm_head[0]), exp_head_color(arm_head[1])};
        exp_describe_recipe(&cap, &logs[0], 1);
        sb_printf(&cap, "\nhead rates: AdamW ");
        sb_rates(&cap, &g[0]);
        sb_printf(&cap, " (best %.6g);\nRowNorm ", best[0]);
        sb_rates(&cap, &g[1]);
        sb_printf(&cap, " (best %.6g); seeds %ld..%ld (mean; bars: min–max)", best[1], seed0, seed0 + ks - 1);
        if (cap.failed || frontier_plot(&x, g, seed0, ks, 0, cap.s, err, sizeof err) != GPT_OK ||
            frontier_plot(&x, g, seed0, ks, 1, cap.s, err, sizeof err) != GPT_OK) {
            fprintf(stderr, "experiment: %s\n", cap.failed ? "out of memory" : err);
            rc = 1;
        }
        free(cap.s);
        memset(&cap, 0, sizeof cap);
        exp_describe_recipe(&cap, &logs[0], 1);
        sb_printf(&cap, "\nat each head's best rate: AdamW %.6g, RowNorm %.6g; seeds %ld..%ld", best[0], best[1], seed0,
                  seed0 + n - 1);
        if (rc == 0 && (cap.failed || exp_write_plots(eo->out_dir, logs, 2, n, names, colors, cap.s, err, sizeof err) != GPT_OK)) {
            fprintf(stderr, "experiment: %s\n", cap.failed ? "out of memory" : err);
            rc = 1;
        }
        if (rc == 0)
            printf("wrote %s/frontier_diameter.svg, frontier_rms.svg, loss.svg, diameter.svg, hilbert_rms.svg\n",
                   eo->out_dir);
    }
    for (k = 0; logs && k < 2 * n; k++) exp_log_free(&logs[k]);
    free(logs), free(out.s), free(cap.s), free(x.runs);
    return rc;
}
