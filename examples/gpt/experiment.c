/* experiment.c - paired AdamW-head vs RowNorm-head runs, the table and the plots (see experiment.h). */
#include "experiment.h"

#include "data.h"
#include "plot.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading logs ------------------------------------------------------------------------- */

#define EXP_COLS 14 /* kind,step,tokens,loss,lr,ms,tok_per_s,gflops,grad_norm,d_lo,d_hi,d_exact,val_loss,hilbert_rms */
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

int exp_log_read(const char *path, exp_log *out, char *err, size_t errlen)
{
    unsigned char *buf;
    size_t n, i = 0, line_no = 0;
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
        if (line_no == 1) {
            if (strncmp(line, "kind,step,", 10) != 0) goto bad;
            continue;
        }
        if (!line[0]) continue;
        /* split at commas; an empty cell is NaN */
        p = strchr(line, ',');
        if (!p) goto bad;
        *p++ = 0;
        for (c = 1; c < EXP_COLS; c++) {
            char *q = strchr(p, ','), *end;
            if (q) *q = 0;
            else if (c != EXP_COLS - 1) goto bad;
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
    if (line_no == 0) {
        exp_log_free(&L);
        return gpt_errorf(err, errlen, "%s: empty log", path);
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

char *exp_table_markdown(const exp_final *a, const exp_final *b, const long *seeds, int n)
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
                    const exp_log *a, const exp_log *b, int n, series_kind k1, series_kind k2, char *err, size_t errlen)
{
    char path[1100];
    plot_desc d;
    plot *p;
    size_t cap = 0, m;
    double *x, *y;
    int rc = 0, arm, s;
    for (s = 0; s < n; s++) {
        cap = a[s].n_train > cap ? a[s].n_train : cap;
        cap = b[s].n_train > cap ? b[s].n_train : cap;
        cap = a[s].n_eval > cap ? a[s].n_eval : cap;
        cap = b[s].n_eval > cap ? b[s].n_eval : cap;
    }
    memset(&d, 0, sizeof d);
    d.title = title, d.xlabel = "tokens", d.ylabel = ylabel, d.log_y = log_y;
    p = plot_create(&d);
    x = (double *)malloc((cap + 1) * sizeof *x);
    y = (double *)malloc((cap + 1) * sizeof *y);
    if (!p || !x || !y) {
        plot_free(p), free(x), free(y);
        return gpt_errorf(err, errlen, "plots: out of memory");
    }
    for (arm = 0; arm < 2; arm++) {
        const exp_log *L = arm ? b : a;
        const char *name = arm ? "RowNorm head" : "AdamW head";
        char label[64];
        m = mean_series(L, n, k1, x, y, cap);
        snprintf(label, sizeof label, "%s%s", name, k2 != k1 ? " (validation)" : "");
        plot_add_series(p, label, x, y, m);
        if (k2 != k1) {
            m = mean_series(L, n, k2, x, y, cap);
            snprintf(label, sizeof label, "%s (training)", name);
            plot_add_series(p, label, x, y, m);
        }
    }
    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (plot_write_svg(p, path, err, errlen) != GPT_OK) rc = -1;
    plot_free(p), free(x), free(y);
    return rc;
}

int exp_write_plots(const char *dir, const exp_log *a, const exp_log *b, int n, char *err, size_t errlen)
{
    if (one_plot(dir, "loss.svg", "Loss (mean over seeds)", "cross-entropy", 0, a, b, n, S_EVAL_LOSS, S_TRAIN_LOSS,
                 err, errlen) ||
        one_plot(dir, "diameter.svg", "Exact step diameter D(S) of the head", "D(S)", 1, a, b, n, S_D_EXACT,
                 S_D_EXACT, err, errlen) ||
        one_plot(dir, "hilbert_rms.svg", "Hilbert RMS of the head step on the validation panel", "Hilbert RMS", 1, a,
                 b, n, S_HILBERT, S_HILBERT, err, errlen))
        return -1;
    return 0;
}

/* ---- the experiment ----------------------------------------------------------------------- */

int experiment_main(const train_cli *cli)
{
    int n = cli->seeds > 0 ? cli->seeds : 1, k, arm, rc = 0;
    exp_log *logs = (exp_log *)calloc((size_t)(2 * n), sizeof *logs);
    exp_final *fin = (exp_final *)calloc((size_t)(2 * n), sizeof *fin);
    long *seeds = (long *)calloc((size_t)n, sizeof *seeds);
    char err[512], path[1100], name[64];
    char *table = NULL;
    if (!logs || !fin || !seeds) {
        fprintf(stderr, "experiment: out of memory\n");
        free(logs), free(fin), free(seeds);
        return 1;
    }
    if (cli->opt.resume) fprintf(stderr, "experiment: --resume is ignored (each run starts fresh)\n");
    printf("experiment: head rates AdamW %.3g, RowNorm %.3g (warm-up %.0f%%, cosine to %.0f%% of peak)\n",
           cli->exp_head_lr[0] > 0.0 ? cli->exp_head_lr[0] : optim_default(OPTIM_HEAD_ADAMW).head_lr,
           cli->exp_head_lr[1] > 0.0 ? cli->exp_head_lr[1] : optim_default(OPTIM_HEAD_ROWNORM).head_lr,
           100.0 * cli->opt.recipe.warmup_frac, 100.0 * cli->opt.recipe.final_frac);
    printf("experiment: %d seed%s x {AdamW head, RowNorm head}, outputs in %s\n", n, n > 1 ? "s" : "", cli->out_dir);
    for (k = 0; k < n && rc == 0; k++) {
        seeds[k] = (long)cli->opt.seed + k;
        for (arm = 0; arm < 2 && rc == 0; arm++) {
            optim_head_kind head = arm ? OPTIM_HEAD_ROWNORM : OPTIM_HEAD_ADAMW;
            optim_recipe d = optim_default(head);
            train_options o = cli->opt;
            train_result res;
            char log_path[1100], ckpt_path[1100];
            o.resume = NULL;
            o.seed = (uint64_t)seeds[k];
            /* the pair differs only in the head optimizer and its paper hyper-parameters */
            o.recipe.head = head;
            o.recipe.head_lr = d.head_lr, o.recipe.head_beta1 = d.head_beta1, o.recipe.head_beta2 = d.head_beta2;
            o.recipe.head_eps = d.head_eps, o.recipe.head_wd = d.head_wd;
            if (cli->exp_head_lr[arm] > 0.0) o.recipe.head_lr = cli->exp_head_lr[arm];
            snprintf(log_path, sizeof log_path, "%s/%s_seed%ld.csv", cli->out_dir, optim_head_name(head), seeds[k]);
            snprintf(ckpt_path, sizeof ckpt_path, "%s/%s_seed%ld.ckpt", cli->out_dir, optim_head_name(head), seeds[k]);
            snprintf(name, sizeof name, "%s s%ld", optim_head_name(head), seeds[k]);
            o.log_path = log_path;
            o.ckpt_path = ckpt_path;
            o.run_name = name;
            o.sample_tokens = 0;
            train_run(&o, &res);
            if (res.outcome != TRAIN_DONE) {
                if (res.outcome == TRAIN_FAILED) fprintf(stderr, "experiment: %s: %s\n", name, res.error);
                rc = res.outcome == TRAIN_INTERRUPTED ? 130 : 1;
                /* data parallel: a failure the other ranks do not know of would leave them waiting */
                if (res.outcome == TRAIN_FAILED && gpt_comm_size(o.comm) > 1 && !res.agreed) o.comm->ops->abort(o.comm, 1);
            }
            train_result_free(&res);
        }
    }
    if (gpt_comm_rank(cli->opt.comm) != 0) { /* rank 0 alone writes the table and the plots */
        free(logs), free(fin), free(seeds);
        return rc;
    }
    /* the table and plots come from the logs, never from memory */
    for (k = 0; k < n && rc == 0; k++)
        for (arm = 0; arm < 2 && rc == 0; arm++) {
            exp_log *L = &logs[arm * n + k];
            snprintf(path, sizeof path, "%s/%s_seed%ld.csv", cli->out_dir, arm ? "rownorm" : "adamw", seeds[k]);
            if (exp_log_read(path, L, err, sizeof err)) {
                fprintf(stderr, "experiment: %s\n", err);
                rc = 1;
                break;
            }
            if (!L->has_final) {
                fprintf(stderr, "experiment: %s: the log has no final row\n", path);
                rc = 1;
                break;
            }
            fin[arm * n + k].val_loss = L->final_val_loss;
            fin[arm * n + k].diameter = L->final_diameter;
            fin[arm * n + k].hilbert_rms = L->final_hilbert_rms;
        }
    if (rc == 0) {
        table = exp_table_markdown(fin, fin + n, seeds, n);
        snprintf(path, sizeof path, "%s/table.md", cli->out_dir);
        if (!table || data_write_file_atomic(path, table, strlen(table), err, sizeof err) != GPT_OK) {
            fprintf(stderr, "experiment: %s\n", table ? err : "out of memory");
            rc = 1;
        } else {
            printf("\n%s\nwrote %s\n", table, path);
        }
    }
    if (rc == 0) {
        if (exp_write_plots(cli->out_dir, logs, logs + n, n, err, sizeof err)) {
            fprintf(stderr, "experiment: %s\n", err);
            rc = 1;
        } else {
            printf("wrote %s/loss.svg, %s/diameter.svg, %s/hilbert_rms.svg\n", cli->out_dir, cli->out_dir, cli->out_dir);
        }
    }
    for (k = 0; k < 2 * n; k++) exp_log_free(&logs[k]);
    free(logs), free(fin), free(seeds), free(table);
    return rc;
}
