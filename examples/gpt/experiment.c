/* experiment.c - head-rate sweeps, the frontier, paired AdamW-head vs RowNorm-head runs, the tables
 * and the plots (see experiment.h). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "experiment.h"

#include "data.h"
#include "plot.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h> /* isatty */

/* ---- reading logs ------------------------------------------------------------------------- */

/* kind,step,tokens,loss,lr,ms,tok_per_s,gflops,grad_norm,d_lo,d_hi,d_exact,val_loss,hilbert_rms[,head_lr] */
#define EXP_COLS 15
enum { C_KIND, C_STEP, C_TOKENS, C_LOSS, C_LR, C_MS, C_TOKS, C_GFLOPS, C_GNORM, C_DLO, C_DHI, C_DEXACT, C_VAL, C_HRMS };

static int push(double **arr, size_t n, double v)
{
    if ((n & (n - 1)) == 0) { /* grow at powers of two */
        double *a = (double *)realloc(*arr, (n ? 2 * n : 1) * sizeof **arr);
        if (!a) return -1;
        *arr = a;
    }
    (*arr)[n] = v;
    return 0;
}

/* "# key=value": 1 stored, 0 a comment without '=', -1 malformed (key or value too long) */
static int recipe_line(exp_log *L, const char *line)
{
    const char *eq = strchr(line, '='), *k = line + 2;
    size_t kl, vl;
    if (strncmp(line, "# ", 2) != 0 || !eq) return 0;
    kl = (size_t)(eq - k), vl = strlen(eq + 1);
    if (kl == 0 || kl >= sizeof L->recipe_key[0] || vl >= sizeof L->recipe_value[0] || L->n_recipe >= EXP_MAX_RECIPE)
        return -1;
    memcpy(L->recipe_key[L->n_recipe], k, kl);
    L->recipe_key[L->n_recipe][kl] = 0;
    memcpy(L->recipe_value[L->n_recipe], eq + 1, vl + 1);
    L->n_recipe++;
    return 1;
}

const char *exp_log_recipe(const exp_log *log, const char *key)
{
    int i;
    for (i = 0; log && key && i < log->n_recipe; i++)
        if (strcmp(log->recipe_key[i], key) == 0) return log->recipe_value[i];
    return NULL;
}

int exp_log_read(const char *path, exp_log *out, char *err, size_t errlen)
{
    unsigned char *buf;
    size_t n, i = 0, line_no = 0;
    int cols = 0; /* from the header: 14 (older logs) or 15 */
    exp_log L;
    if (data_read_file(path, &buf, &n, err, errlen) != GPT_OK) return -1;
    memset(&L, 0, sizeof L);
    L.final_val_loss = L.final_diameter = L.final_hilbert_rms = NAN;
    while (i < n) {
        size_t j = i;
        char line[1024], *p;
        double v[EXP_COLS];
        int c;
        while (j < n && buf[j] != '\n') j++;
        line_no++;
        if (j - i >= sizeof line) goto bad;
        memcpy(line, buf + i, j - i);
        line[j - i] = 0;
        i = j + 1;
        if (line[0] == '#') {
            if (cols || recipe_line(&L, line) < 0) goto bad; /* the recipe comes before the header */
            continue;
        }
        if (!cols) {
            const char *q;
            if (strncmp(line, "kind,step,", 10) != 0) goto bad;
            for (q = line, cols = 1; *q; q++) cols += *q == ',';
            if (cols != 14 && cols != 15) goto bad;
            continue;
        }
        if (!line[0]) continue;
        /* split at commas; an empty cell is NaN */
        p = strchr(line, ',');
        if (!p) goto bad;
        *p++ = 0;
        for (c = 1; c < cols; c++) {
            char *q = strchr(p, ','), *end;
            if (q) *q = 0;
            else if (c != cols - 1) goto bad;
            if (!*p) {
                v[c] = NAN;
            } else {
                v[c] = strtod(p, &end);
                if (*end) goto bad;
            }
            p = q ? q + 1 : p + strlen(p);
        }
        if (strcmp(line, "train") == 0) {
            if (push(&L.train_tokens, L.n_train, v[C_TOKENS]) || push(&L.train_loss, L.n_train, v[C_LOSS]) ||
                push(&L.train_d_exact, L.n_train, v[C_DEXACT]))
                goto nomem;
            L.n_train++;
        } else if (strcmp(line, "eval") == 0) {
            if (push(&L.eval_tokens, L.n_eval, v[C_TOKENS]) || push(&L.eval_loss, L.n_eval, v[C_VAL]) ||
                push(&L.eval_hilbert, L.n_eval, v[C_HRMS]))
                goto nomem;
            L.n_eval++;
        } else if (strcmp(line, "final") == 0) {
            L.has_final = 1;
            L.final_step = (long)v[C_STEP];
            L.final_val_loss = v[C_VAL];
            L.final_diameter = v[C_DEXACT];
            L.final_hilbert_rms = v[C_HRMS];
        } else {
            goto bad;
        }
    }
    free(buf);
    if (!cols) {
        exp_log_free(&L);
        return gpt_errorf(err, errlen, "%s: empty log (no header line)", path);
    }
    *out = L;
    return 0;
bad:
    free(buf);
    exp_log_free(&L);
    return gpt_errorf(err, errlen, "%s:%zu: not a trainer log row", path, line_no);
nomem:
    free(buf);
    exp_log_free(&L);
    return gpt_errorf(err, errlen, "%s: out of memory", path);
}

void exp_log_free(exp_log *log)
{
    if (!log) return;
    free(log->train_tokens), free(log->train_loss), free(log->train_d_exact);
    free(log->eval_tokens), free(log->eval_loss), free(log->eval_hilbert);
    memset(log, 0, sizeof *log);
}

/* ---- rates and frontiers ------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int exp_parse_rates(const char *list, double *out, char *err, size_t errlen)
{
    int n = 0, k, m;
    const char *p = list;
    if (!list || !*list) return gpt_errorf(err, errlen, "empty list of rates");
    for (;;) {
        char *end;
        double v = strtod(p, &end);
        if (end == p || (*end && *end != ',') || !(v > 0.0) || !(v <= 1e30))
            return gpt_errorf(err, errlen, "'%s': not a list of positive rates (e.g. 1e-3,4e-3,1.6e-2)", list);
        if (n == EXP_MAX_RATES) return gpt_errorf(err, errlen, "'%s': more than %d rates", list, EXP_MAX_RATES);
        out[n++] = v;
        if (!*end) break;
        p = end + 1;
    }
    qsort(out, (size_t)n, sizeof *out, cmp_double);
    for (k = m = 0; k < n; k++)
        if (m == 0 || out[k] != out[m - 1]) out[m++] = out[k];
    return m;
}

/* the usable points sorted by x: indices into idx[] */
static int frontier_order(const double *x, const double *loss, int n, int *idx)
{
    int m = 0, a, b;
    for (a = 0; a < n; a++)
        if (x[a] > 0 && x[a] <= 1e300 && loss[a] == loss[a] && fabs(loss[a]) <= 1e300) idx[m++] = a;
    for (a = 1; a < m; a++) /* insertion sort: a handful of points */
        for (b = a; b > 0 && x[idx[b - 1]] > x[idx[b]]; b--) {
            int t = idx[b];
            idx[b] = idx[b - 1], idx[b - 1] = t;
        }
    return m;
}

double exp_matched_step(const double *x, const double *loss, int n, double target, int *exact)
{
    int idx[4 * EXP_MAX_RATES], m, k;
    if (exact) *exact = 0;
    if (n <= 0 || n > 4 * EXP_MAX_RATES) return NAN;
    m = frontier_order(x, loss, n, idx);
    if (m > 0 && loss[idx[0]] <= target) {
        if (exact) *exact = 1;
        return x[idx[0]];
    }
    for (k = 1; k < m; k++) {
        double l0 = loss[idx[k - 1]], l1 = loss[idx[k]];
        if (l1 <= target) { /* l0 > target >= l1 */
            double t = (l0 - target) / (l0 - l1), a = log(x[idx[k - 1]]), b = log(x[idx[k]]);
            return exp(a + t * (b - a));
        }
    }
    return NAN;
}

double exp_frontier_at(const double *x, const double *loss, int n, double x0)
{
    int idx[4 * EXP_MAX_RATES], m, k;
    if (n <= 0 || n > 4 * EXP_MAX_RATES || !(x0 > 0)) return NAN;
    m = frontier_order(x, loss, n, idx);
    if (m == 0 || x0 < x[idx[0]] || x0 > x[idx[m - 1]]) return NAN;
    if (m == 1) return loss[idx[0]];
    for (k = 1; k < m; k++)
        if (x0 <= x[idx[k]]) {
            double a = log(x[idx[k - 1]]), b = log(x[idx[k]]);
            double t = b > a ? (log(x0) - a) / (b - a) : 1.0;
            return loss[idx[k - 1]] + t * (loss[idx[k]] - loss[idx[k - 1]]);
        }
    return loss[idx[m - 1]];
}

/* ---- the table ---------------------------------------------------------------------------- */

void exp_mean_sd(const double *x, int n, double *mean, double *sd)
{
    double s = 0.0, q = 0.0;
    int k;
    for (k = 0; k < n; k++) s += x[k];
    *mean = n > 0 ? s / n : NAN;
    for (k = 0; k < n; k++) q += (x[k] - *mean) * (x[k] - *mean);
    *sd = n > 1 ? sqrt(q / (n - 1)) : 0.0;
}

typedef struct {
    char *s;
    size_t len, cap;
    int failed;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    int need;
    if (b->failed) return;
    va_start(ap, fmt);
    need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (need < 0) return;
    if (b->len + (size_t)need + 1 > b->cap) {
        size_t cap = (b->cap ? b->cap : 1024);
        char *ns;
        while (cap < b->len + (size_t)need + 1) cap *= 2;
        ns = (char *)realloc(b->s, cap);
        if (!ns) {
            b->failed = 1;
            return;
        }
        b->s = ns, b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)need + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)need;
}

/* "mean ± sd" (sd left out for one seed). */
static void sb_pm(sbuf *b, const char *fmt_mean, const char *fmt_sd, const double *x, int n)
{
    double m, sd;
    exp_mean_sd(x, n, &m, &sd);
    sb_printf(b, fmt_mean, m);
    if (n > 1) {
        sb_printf(b, " ± ");
        sb_printf(b, fmt_sd, sd);
    }
}

char *exp_table_markdown(const char *title, const exp_final *a, const exp_final *b, const long *seeds, int n)
{
    sbuf sb;
    double *x;
    int k, q;
    memset(&sb, 0, sizeof sb);
    x = (double *)malloc((size_t)(n > 0 ? n : 1) * 9 * sizeof *x);
    if (!x || n < 1) {
        free(x);
        return NULL;
    }
    /* columns of x: 0-2 AdamW loss, D, RMS; 3-5 RowNorm; 6 delta loss, 7 ratio D, 8 ratio RMS */
    for (k = 0; k < n; k++) {
        x[0 * n + k] = a[k].val_loss, x[1 * n + k] = a[k].diameter, x[2 * n + k] = a[k].hilbert_rms;
        x[3 * n + k] = b[k].val_loss, x[4 * n + k] = b[k].diameter, x[5 * n + k] = b[k].hilbert_rms;
        x[6 * n + k] = b[k].val_loss - a[k].val_loss;
        x[7 * n + k] = a[k].diameter / b[k].diameter;
        x[8 * n + k] = a[k].hilbert_rms / b[k].hilbert_rms;
    }
    if (title) sb_printf(&sb, "%s\n\n", title);
    sb_printf(&sb, "AdamW head vs RowNorm head, %d seed%s (", n, n > 1 ? "s" : "");
    for (k = 0; k < n; k++) sb_printf(&sb, "%s%ld", k ? ", " : "", seeds[k]);
    sb_printf(&sb, ")%s\n\n", n > 1 ? "; mean ± sd over seeds" : "");
    sb_printf(&sb, "| quantity | AdamW head | RowNorm head | RowNorm vs AdamW |\n|---|---|---|---|\n");
    for (q = 0; q < 3; q++) {
        static const char *const names[3] = {"final validation loss", "final step diameter D(S)",
                                             "Hilbert RMS (validation panel)"};
        const char *fmt = q == 0 ? "%.4f" : "%.3e";
        sb_printf(&sb, "| %s | ", names[q]);
        sb_pm(&sb, fmt, fmt, x + q * n, n);
        sb_printf(&sb, " | ");
        sb_pm(&sb, fmt, fmt, x + (3 + q) * n, n);
        sb_printf(&sb, " | ");
        if (q == 0) {
            sb_printf(&sb, "Δ ");
            sb_pm(&sb, "%+.4f", "%.4f", x + 6 * n, n);
        } else {
            sb_pm(&sb, "%.1f", "%.1f", x + (6 + q) * n, n);
            sb_printf(&sb, "× smaller");
        }
        sb_printf(&sb, " |\n");
    }
    sb_printf(&sb, "\nPer seed:\n\n| seed | val loss AdamW | val loss RowNorm | Δ | D AdamW | D RowNorm | D ratio | "
                   "RMS AdamW | RMS RowNorm | RMS ratio |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for (k = 0; k < n; k++)
        sb_printf(&sb, "| %ld | %.4f | %.4f | %+.4f | %.3e | %.3e | %.1f | %.3e | %.3e | %.1f |\n", seeds[k],
                  x[k], x[3 * n + k], x[6 * n + k], x[n + k], x[4 * n + k], x[7 * n + k], x[2 * n + k],
                  x[5 * n + k], x[8 * n + k]);
    free(x);
    if (sb.failed) {
        free(sb.s);
        return NULL;
    }
    return sb.s;
}

/* ---- plots -------------------------------------------------------------------------------- */

const char *exp_head_color(optim_head_kind head)
{
    return head == OPTIM_HEAD_ROWNORM ? "#d62728" : head == OPTIM_HEAD_MUON ? "#2ca02c" : "#1f77b4";
}

/* Point-wise mean over n logs of the (x, y) pairs picked by `which`, skipping NaN y (rows where a
 * value was not measured); all runs of an arm share the schedule, so the points line up. */
typedef enum { S_TRAIN_LOSS, S_EVAL_LOSS, S_D_EXACT, S_HILBERT } series_kind;

static size_t mean_series(const exp_log *logs, int n, series_kind which, double *x, double *y, size_t cap)
{
    size_t m = 0, i;
    int k;
    for (i = 0;; i++) {
        double sum = 0.0, xi = NAN;
        int have = 0;
        for (k = 0; k < n; k++) {
            const exp_log *L = &logs[k];
            const double *xs = which == S_TRAIN_LOSS || which == S_D_EXACT ? L->train_tokens : L->eval_tokens;
            const double *ys = which == S_TRAIN_LOSS ? L->train_loss
                               : which == S_D_EXACT  ? L->train_d_exact
                               : which == S_EVAL_LOSS ? L->eval_loss
                                                      : L->eval_hilbert;
            size_t len = which == S_TRAIN_LOSS || which == S_D_EXACT ? L->n_train : L->n_eval;
            if (i >= len) return m;
            if (ys[i] == ys[i]) sum += ys[i], have++, xi = xs[i];
        }
        if (have == n && m < cap) x[m] = xi, y[m] = sum / n, m++;
    }
}

static int one_plot(const char *dir, const char *file, const char *title, const char *ylabel, int log_y,
                    const exp_log *logs, int n_arms, int n, const char *const *names, const char *const *colors,
                    const char *caption, series_kind k1, series_kind k2, char *err, size_t errlen)
{
    char path[1100];
    plot_desc d;
    plot *p;
    size_t cap = 0, m;
    double *x, *y;
    int rc = 0, arm, s;
    for (s = 0; s < n_arms * n; s++) {
        cap = logs[s].n_train > cap ? logs[s].n_train : cap;
        cap = logs[s].n_eval > cap ? logs[s].n_eval : cap;
    }
    memset(&d, 0, sizeof d);
    d.title = title, d.xlabel = "tokens", d.ylabel = ylabel, d.log_y = log_y, d.caption = caption;
    p = plot_create(&d);
    x = (double *)malloc((cap + 1) * sizeof *x);
    y = (double *)malloc((cap + 1) * sizeof *y);
    if (!p || !x || !y) {
        plot_free(p), free(x), free(y);
        return gpt_errorf(err, errlen, "plots: out of memory");
    }
    for (arm = 0; arm < n_arms && rc == 0; arm++) {
        const exp_log *L = logs + (size_t)arm * (size_t)n;
        plot_style st;
        char label[96];
        memset(&st, 0, sizeof st);
        st.color = colors[arm], st.ring = -1;
        m = mean_series(L, n, k1, x, y, cap);
        snprintf(label, sizeof label, "%s%s", names[arm], k2 != k1 ? " (validation)" : "");
        /* validation: solid with a dot per evaluation; training: dashed, drawn first underneath */
        if (k2 != k1) {
            size_t mt = mean_series(L, n, k2, x, y, cap);
            char tl[96];
            snprintf(tl, sizeof tl, "%s (training)", names[arm]);
            st.dashed = 1;
            if (plot_add_series_style(p, tl, x, y, mt, &st) != GPT_OK) rc = -1;
            m = mean_series(L, n, k1, x, y, cap);
            st.dashed = 0, st.markers = 1;
        }
        if (plot_add_series_style(p, label, x, y, m, &st) != GPT_OK) rc = -1;
    }
    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (rc) gpt_errorf(err, errlen, "%s: out of memory", path);
    else if (plot_write_svg(p, path, err, errlen) != GPT_OK) rc = -1;
    plot_free(p), free(x), free(y);
    return rc;
}

int exp_write_plots(const char *dir, const exp_log *logs, int n_arms, int n, const char *const *names,
                    const char *const *colors, const char *caption, char *err, size_t errlen)
{
    const char *mean = n > 1 ? " (mean over seeds)" : "";
    char t1[128], t2[128], t3[128];
    snprintf(t1, sizeof t1, "Loss%s", mean);
    snprintf(t2, sizeof t2, "Exact step diameter D(S) of the head%s", mean);
    snprintf(t3, sizeof t3, "Hilbert RMS of the head step on the validation panel%s", mean);
    if (one_plot(dir, "loss.svg", t1, "cross-entropy", 0, logs, n_arms, n, names, colors, caption, S_EVAL_LOSS,
                 S_TRAIN_LOSS, err, errlen) ||
        one_plot(dir, "diameter.svg", t2, "D(S)", 1, logs, n_arms, n, names, colors, caption, S_D_EXACT, S_D_EXACT,
                 err, errlen) ||
        one_plot(dir, "hilbert_rms.svg", t3, "Hilbert RMS", 1, logs, n_arms, n, names, colors, caption, S_HILBERT,
                 S_HILBERT, err, errlen))
        return -1;
    return 0;
}

/* ---- the experiment ----------------------------------------------------------------------- */

static const char *const arm_name[2] = {"AdamW head", "RowNorm head"};
static const optim_head_kind arm_head[2] = {OPTIM_HEAD_ADAMW, OPTIM_HEAD_ROWNORM};

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
    const train_cli *cli;
    exp_run *runs;
    int n_runs, cap;
    int planned, made; /* for "run k of N" */
    double seconds;    /* spent in the runs made */
    int rc;            /* 0, 1 (failure), 130 (interrupted) */
    int rank0;
} exp_ctx;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

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
static int read_back(exp_run *u, double val_loss, char *err, size_t errlen)
{
    exp_log L;
    const char *h, *lr;
    int bad = 0;
    if (exp_log_read(u->log, &L, err, errlen)) return -1;
    h = exp_log_recipe(&L, "head");
    lr = exp_log_recipe(&L, "head_lr");
    if (!L.has_final) bad = gpt_errorf(err, errlen, "%s: the log has no final row", u->log);
    else if (!h || strcmp(h, optim_head_name(arm_head[u->arm])) != 0 || !lr || strtod(lr, NULL) != u->rate)
        bad = gpt_errorf(err, errlen, "%s: the log's recipe (head %s, head_lr %s) is not the run asked for (%s, %.17g)",
                         u->log, h ? h : "?", lr ? lr : "?", optim_head_name(arm_head[u->arm]), u->rate);
    else if (!(L.final_val_loss == val_loss))
        bad = gpt_errorf(err, errlen, "%s: final val_loss %.17g in the log, %.17g in the run", u->log, L.final_val_loss,
                         val_loss);
    u->fin.val_loss = L.final_val_loss;
    u->fin.diameter = L.final_diameter;
    u->fin.hilbert_rms = L.final_hilbert_rms;
    exp_log_free(&L);
    return bad;
}

/* The run (arm, rate, seed): made now unless made already. In a sweep a failed run is a point
 * marked failed; elsewhere it fails the experiment. NULL once the experiment has failed. */
static exp_run *get_run(exp_ctx *x, int arm, double rate, long seed, int sweep)
{
    const train_cli *cli = x->cli;
    exp_run *u = find_run(x, arm, rate, seed);
    optim_recipe d = optim_default(arm_head[arm]);
    train_options o = cli->opt;
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
    o.quiet = cli->opt.log_every == 0;
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
    snprintf(u->log, sizeof u->log, "%s/%s_lr%.6g_seed%ld.csv", cli->out_dir, optim_head_name(arm_head[arm]), rate, seed);
    snprintf(ckpt_path, sizeof ckpt_path, "%s/%s_lr%.6g_seed%ld.ckpt", cli->out_dir, optim_head_name(arm_head[arm]),
             rate, seed);
    snprintf(name, sizeof name, "%s %.4g s%ld", optim_head_name(arm_head[arm]), rate, seed);
    o.log_path = u->log;
    o.ckpt_path = ckpt_path;
    o.run_name = name;
    o.sample_tokens = 0;
    o.line_open = one_line; /* a progress line of the run (stdout not a terminal) starts a new one */
    t0 = now_s();
    train_run(&o, &res);
    x->seconds += now_s() - t0;
    x->made++;
    if (res.progress_lines) one_line = 0; /* the run's progress lines closed the start line */
    if (one_line && res.outcome != TRAIN_DONE) printf(" %s\n", res.outcome == TRAIN_FAILED ? "failed" : "stopped");
    if (res.outcome == TRAIN_DONE) {
        u->ok = 1;
        u->fin.val_loss = res.final_val_loss;
        if (x->rank0 && read_back(u, res.final_val_loss, err, sizeof err)) {
            if (one_line) printf("\n");
            fprintf(stderr, "experiment: %s\n", err);
            x->rc = 1;
        } else {
            if (!one_line) printf("experiment: %s:", name);
            printf(" final val loss %.4f, D(S) %.3e, Hilbert RMS %.3e (%.1f s)\n", u->fin.val_loss, u->fin.diameter,
                   u->fin.hilbert_rms, now_s() - t0);
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

/* Index of the best (lowest final validation loss) finished run of the grid, -1 if none. */
static int grid_best(exp_ctx *x, const exp_grid *g, int arm, long seed)
{
    int k, best = -1;
    double bl = HUGE_VAL;
    for (k = 0; k < g->n; k++) {
        exp_run *u = find_run(x, arm, g->rate[k], seed);
        if (u && u->ok && u->fin.val_loss < bl) bl = u->fin.val_loss, best = k;
    }
    return best;
}

/* Sweeps one arm, extending the grid while its best sits at an edge. 0 or -1. */
static int sweep_arm(exp_ctx *x, exp_grid *g, int arm, long seed)
{
    int k;
    for (k = 0; k < g->n; k++)
        if (!get_run(x, arm, g->rate[k], seed, !g->fixed)) return -1;
    for (;;) {
        int b = grid_best(x, g, arm, seed), edge;
        double r;
        if (b < 0) {
            fprintf(stderr, "experiment: every run of the %s sweep failed\n", arm_name[arm]);
            x->rc = 1;
            return -1;
        }
        g->best = b;
        edge = !g->fixed && g->n >= 2 && (b == 0 || b == g->n - 1);
        g->at_edge = edge;
        if (!edge || g->extended >= x->cli->sweep_extend || g->n >= EXP_MAX_RATES) return 0;
        if (b == 0) { /* one grid step further out, geometrically */
            r = g->rate[0] * (g->rate[0] / g->rate[1]);
            memmove(g->rate + 1, g->rate, (size_t)g->n * sizeof g->rate[0]);
            g->rate[0] = r;
        } else {
            r = g->rate[g->n - 1] * (g->rate[g->n - 1] / g->rate[g->n - 2]);
            g->rate[g->n] = r;
        }
        g->n++;
        g->extended++;
        printf("experiment: the best %s rate %.4g is at the edge of its grid: adding %.4g\n", arm_name[arm],
               g->rate[b == 0 ? 1 : g->n - 2], r);
        x->planned++;
        if (!get_run(x, arm, r, seed, 1)) return -1;
    }
}

static int count_missing(exp_ctx *x, int arm, double rate, long seed0, int n)
{
    int k, m = 0;
    for (k = 0; k < n; k++) m += find_run(x, arm, rate, seed0 + k) == NULL;
    return m;
}

/* "0.002, 0.004, ..." */
static void sb_rates(sbuf *b, const exp_grid *g)
{
    int k;
    for (k = 0; k < g->n; k++) sb_printf(b, "%s%.4g", k ? ", " : "", g->rate[k]);
}

static const char *fmt_or_dash(char *buf, size_t cap, double v, const char *fmt)
{
    if (v == v) snprintf(buf, cap, fmt, v);
    else snprintf(buf, cap, "—");
    return buf;
}

/* The frontier of one arm at the first seed: (step size, loss) of its finished sweep runs. */
static int arm_points(exp_ctx *x, const exp_grid *g, int arm, long seed, int rms, double *sx, double *sl, double *rate)
{
    int k, m = 0;
    for (k = 0; k < g->n; k++) {
        exp_run *u = find_run(x, arm, g->rate[k], seed);
        if (!u || !u->ok) continue;
        sx[m] = rms ? u->fin.hilbert_rms : u->fin.diameter;
        sl[m] = u->fin.val_loss;
        if (rate) rate[m] = g->rate[k];
        m++;
    }
    return m;
}

/* The matched-loss table and the region where RowNorm's frontier lies below AdamW's, for D
 * (rms 0) or the Hilbert RMS (rms 1). */
static void sb_matched(sbuf *b, exp_ctx *x, const exp_grid *g, long seed, int rms)
{
    double sx[2][EXP_MAX_RATES], sl[2][EXP_MAX_RATES], lo = 0, hi = 0, best[2];
    int m[2], arm, t, k, in = 0, n_int = 0;
    const char *q = rms ? "Hilbert RMS" : "D(S)";
    char c1[32], c2[32], c3[32];
    for (arm = 0; arm < 2; arm++) {
        m[arm] = arm_points(x, &g[arm], arm, seed, rms, sx[arm], sl[arm], NULL);
        best[arm] = find_run(x, arm, g[arm].rate[g[arm].best], seed)->fin.val_loss;
    }
    sb_printf(b, "| target loss | %s the AdamW head needs | %s the RowNorm head needs | AdamW / RowNorm |\n"
                 "|---|---|---|---|\n", q, q);
    for (t = 1; t >= 0; t--) {
        double target = best[t], need[2];
        int exact[2];
        for (arm = 0; arm < 2; arm++) need[arm] = exp_matched_step(sx[arm], sl[arm], m[arm], target, &exact[arm]);
        sb_printf(b, "| %.4f (the %s's best) |", target, t ? "RowNorm head" : "AdamW head");
        for (arm = 0; arm < 2; arm++) {
            if (need[arm] == need[arm]) sb_printf(b, " %s%.3e |", exact[arm] ? "≤ " : "", need[arm]);
            else sb_printf(b, " not reached (best %.4f) |", best[arm]);
        }
        if (need[0] == need[0] && need[1] == need[1]) sb_printf(b, " %.1f× |\n", need[0] / need[1]);
        else sb_printf(b, " — |\n");
    }
    /* the region: 256 log-spaced points over the range both sweeps cover */
    if (m[0] && m[1]) {
        double a0 = HUGE_VAL, a1 = -HUGE_VAL, r0 = HUGE_VAL, r1 = -HUGE_VAL, l0, l1, start = 0;
        for (k = 0; k < m[0]; k++) a0 = fmin(a0, sx[0][k]), a1 = fmax(a1, sx[0][k]);
        for (k = 0; k < m[1]; k++) r0 = fmin(r0, sx[1][k]), r1 = fmax(r1, sx[1][k]);
        lo = fmax(a0, r0), hi = fmin(a1, r1);
        if (lo < hi) {
            sb_printf(b, "\nWhere both sweeps reach (%s %s to %s), the RowNorm head's frontier is below the AdamW "
                         "head's (lower loss at the same step size) for %s in ",
                      q, fmt_or_dash(c1, sizeof c1, lo, "%.3e"), fmt_or_dash(c2, sizeof c2, hi, "%.3e"), q);
            for (k = 0; k <= 256; k++) {
                double v = exp(log(lo) + (log(hi) - log(lo)) * k / 256.0);
                int below;
                l0 = exp_frontier_at(sx[0], sl[0], m[0], v);
                l1 = exp_frontier_at(sx[1], sl[1], m[1], v);
                below = l1 < l0;
                if (below && !in) start = v, in = 1;
                if ((!below || k == 256) && in) {
                    sb_printf(b, "%s[%s, %s]", n_int ? ", " : "", fmt_or_dash(c1, sizeof c1, start, "%.3e"),
                              fmt_or_dash(c3, sizeof c3, v, "%.3e"));
                    n_int++, in = 0;
                }
            }
            sb_printf(b, "%s.\n", n_int ? "" : "no part of it");
        } else {
            sb_printf(b, "\nThe two sweeps' %s ranges do not overlap.\n", q);
        }
    }
}

/* The recipe paragraph and the caption of the plots, from a log's recipe lines. */
static void describe_recipe(sbuf *b, const exp_log *L, int caption);

char *exp_recipe_caption(const exp_log *log)
{
    sbuf b;
    memset(&b, 0, sizeof b);
    describe_recipe(&b, log, 1);
    if (b.failed) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

static void describe_recipe(sbuf *b, const exp_log *L, int caption)
{
    enum { LAYERS, DMODEL, HEADS, MLP, VOCAB, PARAMS, STEPS, BATCH, SEQ, ACCUM, TPU, BLOCK, MUON_LR, MUON_WD, NS,
           PER_HEAD, EMBED_LR, WARMUP, FINAL, CLIP, N_KEYS };
    static const char *const keys[N_KEYS] = {"layers", "d_model", "heads", "mlp", "vocab", "params", "steps",
                                             "batch", "seq", "accum", "tokens_per_update", "block", "muon_lr",
                                             "muon_wd", "ns_steps", "ns_per_head", "embed_lr", "warmup", "final_lr",
                                             "clip"};
    const char *v[N_KEYS];
    double num[N_KEYS], tokens;
    char tok[32];
    int k;
    for (k = 0; k < N_KEYS; k++) {
        v[k] = exp_log_recipe(L, keys[k]);
        if (!v[k]) v[k] = "?";
        num[k] = strtod(v[k], NULL);
    }
    tokens = num[STEPS] * num[TPU];
    if (tokens >= 1e6) snprintf(tok, sizeof tok, "%.3gM", tokens / 1e6);
    else snprintf(tok, sizeof tok, "%.3gk", tokens / 1e3);
    sb_printf(b, "%s layers, d %s, %s heads, mlp %s, vocab %s: %.2fM parameters;%s%s updates of %s x %s tokens%s%s = %s "
                 "tokens per run;%s%s blocks lr %.4g wd %.4g (NS %s%s), embedding AdamW lr %.4g; warm-up %.0f%%, "
                 "cosine to %.0f%%, clip %.4g",
              v[LAYERS], v[DMODEL], v[HEADS], v[MLP], v[VOCAB], num[PARAMS] / 1e6, caption ? "\n" : " ", v[STEPS], v[BATCH], v[SEQ],
              num[ACCUM] > 1 ? " x accum " : "", num[ACCUM] > 1 ? v[ACCUM] : "", tok, caption ? "\n" : " ", v[BLOCK],
              num[MUON_LR], num[MUON_WD], v[NS], num[PER_HEAD] == 1 ? " per head" : "", num[EMBED_LR], 100 * num[WARMUP],
              100 * num[FINAL], num[CLIP]);
}

/* frontier_diameter.svg or frontier_rms.svg */
static int frontier_plot(exp_ctx *x, const exp_grid *g, long seed, int rms, const char *caption, char *err,
                         size_t errlen)
{
    plot_desc d;
    plot *p;
    int arm, rc = 0;
    char path[1100];
    memset(&d, 0, sizeof d);
    d.title = rms ? "Loss against the Hilbert RMS of the head step (one run per head rate)"
                  : "Loss against the step diameter D(S) of the head (one run per head rate)";
    d.xlabel = rms ? "final Hilbert RMS of the head step (log)" : "final exact D(S) of the head step (log)";
    d.ylabel = "final validation loss";
    d.log_x = 1;
    d.caption = caption;
    p = plot_create(&d);
    if (!p) return gpt_errorf(err, errlen, "plots: out of memory");
    for (arm = 0; arm < 2 && rc == 0; arm++) {
        double sx[EXP_MAX_RATES], sl[EXP_MAX_RATES], rate[EXP_MAX_RATES], tx[EXP_MAX_RATES], tl[EXP_MAX_RATES];
        char lab[EXP_MAX_RATES][24], name[96];
        const char *labels[EXP_MAX_RATES];
        int m = arm_points(x, &g[arm], arm, seed, rms, sx, sl, rate), idx[EXP_MAX_RATES], k;
        plot_style st;
        m = frontier_order(sx, sl, m, idx); /* in increasing step size: the frontier read left to right */
        memset(&st, 0, sizeof st);
        st.color = exp_head_color(arm_head[arm]);
        st.markers = 1;
        st.ring = -1;
        for (k = 0; k < m; k++) {
            tx[k] = sx[idx[k]], tl[k] = sl[idx[k]];
            snprintf(lab[k], sizeof lab[k], "%.3g", rate[idx[k]]);
            labels[k] = lab[k];
            if (rate[idx[k]] == g[arm].rate[g[arm].best]) st.ring = k;
        }
        st.labels = labels;
        snprintf(name, sizeof name, "%s (labels: peak head rate; ring: best)", arm_name[arm]);
        if (plot_add_series_style(p, name, tx, tl, (size_t)m, &st) != GPT_OK) rc = gpt_errorf(err, errlen, "plots: out of memory");
    }
    snprintf(path, sizeof path, "%s/%s", x->cli->out_dir, rms ? "frontier_rms.svg" : "frontier_diameter.svg");
    if (rc == 0 && plot_write_svg(p, path, err, errlen) != GPT_OK) rc = -1;
    plot_free(p);
    return rc;
}

/* The pairs at rates ra (AdamW), rb (RowNorm) over seeds seed0..: the table under `title`. */
static char *pairs_table(exp_ctx *x, const char *title, double ra, double rb, long seed0, int n)
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
    }
    free(f), free(seeds);
    return t;
}

int experiment_main(const train_cli *cli)
{
    exp_ctx x;
    exp_grid g[2];
    sbuf out, cap;
    int n = cli->seeds > 0 ? cli->seeds : 1, arm, k, rc = 0, paper_same = 0;
    long seed0 = (long)cli->opt.seed;
    double paper[2], best[2] = {0, 0};
    char err[512], path[1100], title[256], *t;
    exp_log *logs = NULL;
    memset(&x, 0, sizeof x);
    memset(g, 0, sizeof g);
    memset(&out, 0, sizeof out);
    memset(&cap, 0, sizeof cap);
    x.cli = cli;
    x.rank0 = gpt_comm_rank(cli->opt.comm) == 0;
    for (arm = 0; arm < 2; arm++) {
        paper[arm] = optim_default(arm_head[arm]).head_lr;
        if (cli->exp_head_lr[arm] > 0.0) {
            g[arm].rate[0] = cli->exp_head_lr[arm], g[arm].n = 1, g[arm].fixed = 1;
        } else {
            g[arm].n = exp_parse_rates(cli->sweep[arm] ? cli->sweep[arm] : arm ? EXP_SWEEP_ROWNORM : EXP_SWEEP_ADAMW,
                                       g[arm].rate, err, sizeof err);
            if (g[arm].n < 0) {
                fprintf(stderr, "experiment: --sweep-%s: %s\n", arm ? "rownorm" : "adamw", err);
                return 2;
            }
        }
    }
    x.planned = g[0].n + g[1].n + 2 * (n - 1);
    for (arm = 0; arm < 2; arm++) { /* the paper's pairs: at least these many more runs */
        int in_grid = 0;
        for (k = 0; k < g[arm].n; k++) in_grid |= g[arm].rate[k] == paper[arm];
        x.planned += in_grid ? n - 1 : n;
    }
    printf("experiment: outputs in %s\n", cli->out_dir);
    for (arm = 0; arm < 2; arm++) {
        sbuf r;
        memset(&r, 0, sizeof r);
        sb_rates(&r, &g[arm]);
        printf("experiment: %s: %s %s (warm-up %.0f%%, cosine to %.0f%% of peak), seed %ld\n", arm_name[arm],
               g[arm].fixed ? "fixed rate" : "sweep over peak rates", r.s ? r.s : "?",
               100.0 * cli->opt.recipe.warmup_frac, 100.0 * cli->opt.recipe.final_frac, seed0);
        free(r.s);
    }
    printf("experiment: then %d seed%s (%ld..%ld) at each arm's best rate and at the paper's (AdamW %.3g, RowNorm %.3g)\n",
           n, n > 1 ? "s" : "", seed0, seed0 + n - 1, paper[0], paper[1]);
    /* 1. the sweeps */
    for (arm = 0; arm < 2 && x.rc == 0; arm++) sweep_arm(&x, &g[arm], arm, seed0);
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
        sb_printf(&out, "# AdamW head vs RowNorm head: head-rate sweeps, the loss–step-size frontier, tuned pairs\n\n");
        sb_printf(&out, "Recipe (identical in every run but the head optimizer and its rate): ");
        describe_recipe(&out, &logs[0], 0);
        sb_printf(&out, ". Head AdamW betas (0.9, 0.999), eps 1e-10, wd 0.1; head RowNorm beta 0.95, eps 1e-8, wd 0 "
                        "(the paper's). The logs record all of it (`# key=value` lines).\n\n");
        sb_printf(&out, "## The frontier (seed %ld, one run per peak head rate)\n\n", seed0);
        sb_printf(&out, "| head | peak head rate | final val loss | final D(S) | Hilbert RMS | |\n|---|---|---|---|---|---|\n");
        for (arm = 0; arm < 2; arm++)
            for (k = 0; k < g[arm].n; k++) {
                exp_run *u = find_run(&x, arm, g[arm].rate[k], seed0);
                if (u->ok)
                    sb_printf(&out, "| %s | %.4g | %.4f | %.3e | %.3e | %s |\n", arm_name[arm], u->rate, u->fin.val_loss,
                              u->fin.diameter, u->fin.hilbert_rms,
                              k == g[arm].best ? (g[arm].at_edge ? "**best (at the grid's edge)**" : "**best**") : "");
                else
                    sb_printf(&out, "| %s | %.4g | failed: %s | | | |\n", arm_name[arm], u->rate, u->error);
            }
        for (arm = 0; arm < 2; arm++) {
            if (g[arm].at_edge)
                sb_printf(&out, "\nNote: the %s's best rate %.4g is at the edge of its grid%s: its real best may lie "
                                "beyond (give a wider --sweep-%s).\n", arm_name[arm], best[arm],
                          g[arm].extended ? " even after extending it" : "", arm ? "rownorm" : "adamw");
            else if (g[arm].fixed)
                sb_printf(&out, "\nThe %s's rate is fixed (--lr-head-%s %.4g): no sweep.\n", arm_name[arm],
                          arm ? "rownorm" : "adamw", best[arm]);
        }
        if (ext) sb_printf(&out, "\n(Grids extended where a best was at an edge: up to --sweep-extend %d points per arm.)\n",
                           cli->sweep_extend);
        sb_printf(&out, "\n## Matched loss: the step size each head needs to reach a loss\n\n"
                        "Read off the frontier (segments linear in log step size between sweep points; \"≤\": the "
                        "smallest step of the sweep already reaches it).\n\n");
        sb_matched(&out, &x, g, seed0, 0);
        sb_printf(&out, "\n");
        sb_matched(&out, &x, g, seed0, 1);
        snprintf(title, sizeof title, "## At each head's best rate (AdamW %.4g, RowNorm %.4g)", best[0], best[1]);
        t = pairs_table(&x, title, best[0], best[1], seed0, n);
        sb_printf(&out, "\n%s", t ? t : "(out of memory)\n");
        free(t);
        snprintf(title, sizeof title, "## At the paper's rates (AdamW %.4g, RowNorm %.4g)%s", paper[0], paper[1],
                 paper_same ? ": the same as the best" : "");
        if (!paper_same) {
            t = pairs_table(&x, title, paper[0], paper[1], seed0, n);
            sb_printf(&out, "\n%s", t ? t : "(out of memory)\n");
            free(t);
        } else {
            sb_printf(&out, "\n%s\n", title);
        }
        if (out.failed) {
            fprintf(stderr, "experiment: out of memory\n");
            rc = 1;
        }
    }
    if (rc == 0) {
        snprintf(path, sizeof path, "%s/table.md", cli->out_dir);
        if (data_write_file_atomic(path, out.s, out.len, err, sizeof err) != GPT_OK) {
            fprintf(stderr, "experiment: %s\n", err);
            rc = 1;
        } else {
            printf("%s\nwrote %s\n", out.s, path);
        }
    }
    if (rc == 0) { /* the plots, with the recipe and the rates in their captions */
        const char *names[2] = {arm_name[0], arm_name[1]};
        const char *colors[2] = {exp_head_color(arm_head[0]), exp_head_color(arm_head[1])};
        describe_recipe(&cap, &logs[0], 1);
        sb_printf(&cap, "\nhead rates: AdamW ");
        sb_rates(&cap, &g[0]);
        sb_printf(&cap, " (best %.4g);\nRowNorm ", best[0]);
        sb_rates(&cap, &g[1]);
        sb_printf(&cap, " (best %.4g); seed %ld", best[1], seed0);
        if (cap.failed || frontier_plot(&x, g, seed0, 0, cap.s, err, sizeof err) ||
            frontier_plot(&x, g, seed0, 1, cap.s, err, sizeof err)) {
            fprintf(stderr, "experiment: %s\n", cap.failed ? "out of memory" : err);
            rc = 1;
        }
        free(cap.s);
        memset(&cap, 0, sizeof cap);
        describe_recipe(&cap, &logs[0], 1);
        sb_printf(&cap, "\nat each head's best rate: AdamW %.4g, RowNorm %.4g; seeds %ld..%ld", best[0], best[1], seed0,
                  seed0 + n - 1);
        if (rc == 0 && (cap.failed || exp_write_plots(cli->out_dir, logs, 2, n, names, colors, cap.s, err, sizeof err))) {
            fprintf(stderr, "experiment: %s\n", cap.failed ? "out of memory" : err);
            rc = 1;
        }
        if (rc == 0)
            printf("wrote %s/frontier_diameter.svg, frontier_rms.svg, loss.svg, diameter.svg, hilbert_rms.svg\n",
                   cli->out_dir);
    }
    for (k = 0; logs && k < 2 * n; k++) exp_log_free(&logs[k]);
    free(logs), free(out.s), free(cap.s), free(x.runs);
    return rc;
}
