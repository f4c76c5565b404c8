/* report.c - everything the experiment writes, from its runs and their logs: reading the logs,
 * the frontier's arithmetic, the statistics, its console lines, table.md (the frontier, the
 * matched-loss and pairs tables, the definitions, the verdicts), results.csv and the plots (see
 * report.h). */
#include "report.h"

#include "data.h"
#include "plot.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading logs ------------------------------------------------------------------------- */

/* kind,step,tokens,loss,lr,ms,tok_per_s,gflops,grad_norm,d_lo,d_hi,d_exact,val_loss,hilbert_rms[,head_lr[,opt_ms]]
 * (a resumed log may hold rows without the later columns above a header with them) */
#define EXP_COLS 16
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

gpt_status exp_log_read(const char *path, exp_log *out, char *err, size_t errlen)
{
    unsigned char *buf;
    size_t n, i = 0, line_no = 0;
    int cols = 0; /* from the header: 14 (older logs), 15 or 16 */
    exp_log L;
    gpt_status st = data_read_file(path, &buf, &n, err, errlen);
    if (st != GPT_OK) return st;
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
            if (cols < 14 || cols > EXP_COLS) goto bad;
            continue;
        }
        if (!line[0]) continue;
        /* split at commas; an empty cell is NaN */
        p = strchr(line, ',');
        if (!p) goto bad;
        *p++ = 0;
        for (c = 1; c < cols; c++) v[c] = NAN;
        for (c = 1; c < cols; c++) {
            char *q = strchr(p, ','), *end;
            if (q) *q = 0;
            else if (c < C_HRMS) goto bad; /* the 14 columns every log has */
            if (*p) {
                v[c] = strtod(p, &end);
                if (*end) goto bad;
            }
            if (!q) break;
            p = q + 1;
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
        gpt_errorf(err, errlen, "%s: empty log (no header line)", path);
        return GPT_ERR_CORRUPT;
    }
    *out = L;
    return GPT_OK;
bad:
    free(buf);
    exp_log_free(&L);
    gpt_errorf(err, errlen, "%s:%zu: not a trainer log row", path, line_no);
    return GPT_ERR_CORRUPT;
nomem:
    free(buf);
    exp_log_free(&L);
    gpt_errorf(err, errlen, "%s: out of memory", path);
    return GPT_ERR_NOMEM;
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

gpt_status exp_parse_rates(const char *list, double *out, int *count, char *err, size_t errlen)
{
    int n = 0, k, m;
    const char *p = list;
    if (!list || !*list || !out || !count) {
        gpt_errorf(err, errlen, "empty list of rates");
        return GPT_ERR_DOMAIN;
    }
    for (;;) {
        char *end;
        double v = strtod(p, &end);
        if (end == p || (*end && *end != ',') || !(v > 0.0) || !(v <= 1e30)) {
            gpt_errorf(err, errlen, "'%s': not a list of positive rates (e.g. 1e-3,4e-3,1.6e-2)", list);
            return GPT_ERR_DOMAIN;
        }
        if (n == EXP_MAX_RATES) {
            gpt_errorf(err, errlen, "'%s': more than %d rates", list, EXP_MAX_RATES);
            return GPT_ERR_SIZE;
        }
        out[n++] = v;
        if (!*end) break;
        p = end + 1;
    }
    qsort(out, (size_t)n, sizeof *out, cmp_double);
    for (k = m = 0; k < n; k++)
        if (m == 0 || out[k] != out[m - 1]) out[m++] = out[k];
    *count = m;
    return GPT_OK;
}

/* the usable points sorted by x: indices into idx[] */
int exp_frontier_order(const double *x, const double *loss, int n, int *idx)
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
    m = exp_frontier_order(x, loss, n, idx);
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
    m = exp_frontier_order(x, loss, n, idx);
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

void sb_printf(sbuf *b, const char *fmt, ...)
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

double exp_t975(int df)
{
    /* two-sided 95 % quantiles of Student's t, df 1..30; beyond, the Cornish-Fisher expansion in
     * 1/df around z = 1.959964 (its error at df = 30 is below 2e-4) */
    static const double t[30] = {12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
                                 2.2010,  2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
                                 2.0796,  2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423};
    double z = 1.959964, v = df, z3 = z * z * z, z5 = z3 * z * z;
    if (df < 1) return NAN;
    if (df <= 30) return t[df - 1];
    return z + (z3 + z) / (4 * v) + (5 * z5 + 16 * z3 + 3 * z) / (96 * v * v);
}

/* mean and 95 % interval of n paired values (NaN bounds for n < 2) */
static void interval(const double *x, int n, double *mean, double *lo, double *hi)
{
    double m, sd, h;
    exp_mean_sd(x, n, &m, &sd);
    h = n > 1 ? exp_t975(n - 1) * sd / sqrt((double)n) : NAN;
    *mean = m, *lo = m - h, *hi = m + h;
}

void exp_pair_summarize(const exp_final *a, const exp_final *b, int n, exp_pair_summary *s)
{
    double *x = (double *)malloc((size_t)(n > 0 ? n : 1) * sizeof *x);
    int k;
    memset(s, 0, sizeof *s);
    s->n = n;
    if (!x || n < 1) {
        free(x);
        s->delta = s->delta_lo = s->delta_hi = s->d_ratio = s->d_lo = s->d_hi = NAN;
        s->rms_ratio = s->rms_lo = s->rms_hi = NAN;
        return;
    }
    for (k = 0; k < n; k++) x[k] = b[k].val_loss - a[k].val_loss;
    interval(x, n, &s->delta, &s->delta_lo, &s->delta_hi);
    for (k = 0; k < n; k++) x[k] = log(a[k].diameter / b[k].diameter);
    interval(x, n, &s->d_ratio, &s->d_lo, &s->d_hi);
    s->d_ratio = exp(s->d_ratio), s->d_lo = exp(s->d_lo), s->d_hi = exp(s->d_hi);
    for (k = 0; k < n; k++) x[k] = log(a[k].hilbert_rms / b[k].hilbert_rms);
    interval(x, n, &s->rms_ratio, &s->rms_lo, &s->rms_hi);
    s->rms_ratio = exp(s->rms_ratio), s->rms_lo = exp(s->rms_lo), s->rms_hi = exp(s->rms_hi);
    free(x);
}

char *exp_table_markdown(const char *title, const exp_final *a, const exp_final *b, const long *seeds, int n)
{
    sbuf sb;
    double *x;
    exp_pair_summary ps;
    int k, q;
    memset(&sb, 0, sizeof sb);
    x = (double *)malloc((size_t)(n > 0 ? n : 1) * 9 * sizeof *x);
    if (!x || n < 1) {
        free(x);
        return NULL;
    }
    exp_pair_summarize(a, b, n, &ps);
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
    sb_printf(&sb, ")%s\n\n", n > 1 ? "; mean ± sd over seeds; the last column's intervals are 95 % (Student's t, "
                                      "paired over seeds; ratios: geometric means)" : "");
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
            sb_printf(&sb, "Δ %+.4f", ps.delta);
            if (n > 1) sb_printf(&sb, " [%+.4f, %+.4f]", ps.delta_lo, ps.delta_hi);
        } else {
            double r = q == 1 ? ps.d_ratio : ps.rms_ratio, lo = q == 1 ? ps.d_lo : ps.rms_lo,
                   hi = q == 1 ? ps.d_hi : ps.rms_hi;
            sb_printf(&sb, "AdamW / RowNorm %.2f", r);
            if (n > 1) sb_printf(&sb, " [%.2f, %.2f]", lo, hi);
        }
        sb_printf(&sb, " |\n");
    }
    sb_printf(&sb, "\nPer seed:\n\n| seed | val loss AdamW | val loss RowNorm | Δ | D AdamW | D RowNorm | D ratio | "
                   "RMS AdamW | RMS RowNorm | RMS ratio |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for (k = 0; k < n; k++)
        sb_printf(&sb, "| %ld | %.4f | %.4f | %+.4f | %.3e | %.3e | %.2f | %.3e | %.3e | %.2f |\n", seeds[k],
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
    return head == OPTIM_ROWNORM ? "#d62728" : head == OPTIM_MUON ? "#2ca02c" : "#1f77b4";
}

/* Point-wise mean over n logs of the (x, y) pairs picked by `which`, skipping NaN y (rows where a
 * value was not measured); all runs of an arm share the schedule, so the points line up. */
typedef enum { S_TRAIN_LOSS, S_EVAL_LOSS, S_D_EXACT, S_HILBERT } series_kind;

static size_t mean_series(const exp_log *logs, int n, series_kind which, double *x, double *y, double *lo, double *hi,
                          size_t cap)
{
    size_t m = 0, i;
    int k;
    for (i = 0;; i++) {
        double sum = 0.0, xi = NAN, mn = HUGE_VAL, mx = -HUGE_VAL;
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
            if (ys[i] == ys[i]) sum += ys[i], have++, xi = xs[i], mn = fmin(mn, ys[i]), mx = fmax(mx, ys[i]);
        }
        if (have == n && m < cap) {
            x[m] = xi, y[m] = sum / n;
            if (lo) lo[m] = mn, hi[m] = mx;
            m++;
        }
    }
}

static gpt_status one_plot(const char *dir, const char *file, const char *title, const char *ylabel, int log_y,
                    const exp_log *logs, int n_arms, int n, const char *const *names, const char *const *colors,
                    const char *caption, series_kind k1, series_kind k2, char *err, size_t errlen)
{
    char path[1100];
    plot_desc d;
    plot *p;
    size_t cap = 0, m;
    double *x, *y, *lo, *hi;
    gpt_status rc = GPT_OK;
    int arm, s;
    for (s = 0; s < n_arms * n; s++) {
        cap = logs[s].n_train > cap ? logs[s].n_train : cap;
        cap = logs[s].n_eval > cap ? logs[s].n_eval : cap;
    }
    memset(&d, 0, sizeof d);
    d.title = title, d.xlabel = "tokens", d.ylabel = ylabel, d.log_y = log_y, d.caption = caption;
    p = plot_create(&d);
    x = (double *)malloc((cap + 1) * sizeof *x);
    y = (double *)malloc((cap + 1) * sizeof *y);
    lo = (double *)malloc((cap + 1) * sizeof *lo);
    hi = (double *)malloc((cap + 1) * sizeof *hi);
    if (!p || !x || !y || !lo || !hi) {
        plot_free(p), free(x), free(y), free(lo), free(hi);
        gpt_errorf(err, errlen, "plots: out of memory");
        return GPT_ERR_NOMEM;
    }
    for (arm = 0; arm < n_arms && rc == 0; arm++) {
        const exp_log *L = logs + (size_t)arm * (size_t)n;
        plot_style st;
        char label[96];
        memset(&st, 0, sizeof st);
        st.color = colors[arm], st.ring = -1;
        m = mean_series(L, n, k1, x, y, lo, hi, cap);
        snprintf(label, sizeof label, "%s%s", names[arm], k2 != k1 ? " (validation)" : "");
        /* validation: solid with a dot per evaluation; training: dashed, drawn first underneath */
        if (k2 != k1) {
            size_t mt = mean_series(L, n, k2, x, y, NULL, NULL, cap);
            char tl[96];
            snprintf(tl, sizeof tl, "%s (training)", names[arm]);
            st.dashed = 1;
            if (plot_add_series_style(p, tl, x, y, mt, &st) != GPT_OK) rc = GPT_ERR_NOMEM;
            m = mean_series(L, n, k1, x, y, lo, hi, cap);
            st.dashed = 0, st.markers = 1;
        }
        /* the spread over seeds: a band (with dots, error bars) from the lowest to the highest seed */
        if (n > 1) st.ylo = lo, st.yhi = hi;
        if (plot_add_series_style(p, label, x, y, m, &st) != GPT_OK) rc = GPT_ERR_NOMEM;
    }
    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (rc) gpt_errorf(err, errlen, "%s: out of memory", path);
    else rc = plot_write_svg(p, path, err, errlen);
    plot_free(p), free(x), free(y), free(lo), free(hi);
    return rc;
}

gpt_status exp_write_plots(const char *dir, const exp_log *logs, int n_arms, int n, const char *const *names,
                    const char *const *colors, const char *caption, char *err, size_t errlen)
{
    const char *mean = n > 1 ? " (seed mean; spread min–max)" : "";
    char t1[128], t2[128], t3[128];
    snprintf(t1, sizeof t1, "Loss%s", mean);
    snprintf(t2, sizeof t2, "Exact step diameter D(S) of the head%s", mean);
    snprintf(t3, sizeof t3, "Hilbert RMS of the head step on the validation panel%s", mean);
    gpt_status st = one_plot(dir, "loss.svg", t1, "cross-entropy", 0, logs, n_arms, n, names, colors, caption,
                             S_EVAL_LOSS, S_TRAIN_LOSS, err, errlen);
    if (st == GPT_OK)
        st = one_plot(dir, "diameter.svg", t2, "D(S)", 1, logs, n_arms, n, names, colors, caption, S_D_EXACT, S_D_EXACT,
                      err, errlen);
    if (st == GPT_OK)
        st = one_plot(dir, "hilbert_rms.svg", t3, "Hilbert RMS", 1, logs, n_arms, n, names, colors, caption, S_HILBERT,
                      S_HILBERT, err, errlen);
    return st;
}


char *exp_recipe_caption(const exp_log *log)
{
    sbuf b;
    memset(&b, 0, sizeof b);
    exp_describe_recipe(&b, log, 1);
    if (b.failed) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

void exp_describe_recipe(sbuf *b, const exp_log *L, int caption)
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


/* ---- the experiment: its runs, its console lines, its tables, plots and files --------------- */

const char *const exp_arm_name[2] = {"AdamW head", "RowNorm head"};
const optim_head_kind exp_arm_head[2] = {OPTIM_ADAMW, OPTIM_ROWNORM};

exp_run *exp_find_run(const exp_results *x, int arm, double rate, long seed)
{
    int k;
    for (k = 0; k < x->n_runs; k++)
        if (x->runs[k].arm == arm && x->runs[k].rate == rate && x->runs[k].seed == seed) return &x->runs[k];
    return NULL;
}

exp_point exp_point_at(const exp_results *x, int arm, double rate, int k)
{
    exp_point p;
    double l[100];
    int s;
    memset(&p, 0, sizeof p);
    p.loss_min = p.d_min = p.rms_min = HUGE_VAL;
    p.loss_max = p.d_max = p.rms_max = -HUGE_VAL;
    for (s = 0; s < k && s < 100; s++) {
        exp_run *u = exp_find_run(x, arm, rate, x->seed0 + s);
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

void exp_run_files(const char *out_dir, int arm, double rate, long seed, char *log, size_t log_cap, char *ckpt,
                   size_t ckpt_cap, char *name, size_t name_cap)
{
    const char *head = optim_head_name(exp_arm_head[arm]);
    snprintf(log, log_cap, "%s/%s_lr%.6g_seed%ld.csv", out_dir, head, rate, seed);
    snprintf(ckpt, ckpt_cap, "%s/%s_lr%.6g_seed%ld.ckpt", out_dir, head, rate, seed);
    snprintf(name, name_cap, "%s %.4g s%ld", head, rate, seed);
}

static void fmt_duration(char *out, size_t cap, double s)
{
    if (s < 60) snprintf(out, cap, "%.0f s", s);
    else if (s < 3600) snprintf(out, cap, "%dm%02ds", (int)(s / 60), (int)s % 60);
    else snprintf(out, cap, "%dh%02dm", (int)(s / 3600), (int)(s / 60) % 60);
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
static int arm_points(const exp_results *x, const exp_grid *g, int arm, int k, long seed, int rms, double *sx,
                      double *sl, double *rate)
{
    int r, m = 0;
    for (r = 0; r < g->n; r++) {
        if (seed < 0) {
            exp_point p = exp_point_at(x, arm, g->rate[r], k);
            if (p.n != k) continue;
            sx[m] = rms ? p.rms : p.d, sl[m] = p.loss;
        } else {
            exp_run *u = exp_find_run(x, arm, g->rate[r], seed);
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

static void matched(const exp_results *x, const exp_grid *g, int k, int rms, exp_matched *mt)
{
    double sx[2][EXP_MAX_RATES], sl[2][EXP_MAX_RATES], a0 = HUGE_VAL, a1 = -HUGE_VAL, r0 = HUGE_VAL, r1 = -HUGE_VAL;
    int m[2], arm, s, j, in = 0, n_in = 0;
    double start = 0;
    memset(mt, 0, sizeof *mt);
    for (arm = 0; arm < 2; arm++) m[arm] = arm_points(x, &g[arm], arm, k, -1, rms, sx[arm], sl[arm], NULL);
    mt->target = exp_point_at(x, 1, g[1].rate[g[1].best], k).loss;
    for (arm = 0; arm < 2; arm++) mt->need[arm] = exp_matched_step(sx[arm], sl[arm], m[arm], mt->target, NULL);
    mt->ratio = mt->need[1] == mt->need[1] ? (mt->need[0] == mt->need[0] ? mt->need[0] / mt->need[1] : HUGE_VAL) : NAN;
    mt->ratio_min = HUGE_VAL, mt->ratio_max = -HUGE_VAL;
    for (s = 0; s < k; s++) { /* each seed's own frontiers, towards that seed's RowNorm loss at the best rate */
        double px[2][EXP_MAX_RATES], pl[2][EXP_MAX_RATES], nd[2], r;
        exp_run *u = exp_find_run(x, 1, g[1].rate[g[1].best], x->seed0 + s);
        int pm[2];
        if (!u || !u->ok) continue;
        for (arm = 0; arm < 2; arm++) {
            pm[arm] = arm_points(x, &g[arm], arm, k, x->seed0 + s, rms, px[arm], pl[arm], NULL);
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
static gpt_status frontier_plot(const exp_results *x, const exp_grid *g, int k, int rms, const char *caption, char *err,
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
            exp_point q = exp_point_at(x, arm, g[arm].rate[r], k);
            if (q.n != k) continue;
            pt[m] = q, px[m] = rms ? q.rms : q.d, pl[m] = q.loss, tx[m] = g[arm].rate[r]; /* tx: the rate, for now */
            m++;
        }
        m = exp_frontier_order(px, pl, m, idx); /* in increasing step size: the frontier read left to right */
        memset(&st, 0, sizeof st);
        st.color = exp_head_color(exp_arm_head[arm]);
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
        snprintf(name, sizeof name, "%s (labels: peak head rate; ring: best)", exp_arm_name[arm]);
        if (plot_add_series_style(p, name, tx, tl, (size_t)m, &st) != GPT_OK) {
            gpt_errorf(err, errlen, "plots: out of memory");
            rc = GPT_ERR_NOMEM;
        }
    }
    snprintf(path, sizeof path, "%s/%s", x->out_dir, rms ? "frontier_rms.svg" : "frontier_diameter.svg");
    if (rc == GPT_OK) rc = plot_write_svg(p, path, err, errlen);
    plot_free(p);
    return rc;
}

/* The pairs at rates ra (AdamW), rb (RowNorm) over the n seeds: the table under `title`, and
 * the summary (intervals) in *ps. */
static char *pairs_table(const exp_results *x, const char *title, double ra, double rb, int n, exp_pair_summary *ps)
{
    exp_final *f = (exp_final *)calloc((size_t)(2 * n), sizeof *f);
    long *seeds = (long *)calloc((size_t)n, sizeof *seeds);
    char *t = NULL;
    int k;
    if (f && seeds) {
        for (k = 0; k < n; k++) {
            seeds[k] = x->seed0 + k;
            f[k] = exp_find_run(x, 0, ra, seeds[k])->fin;
            f[n + k] = exp_find_run(x, 1, rb, seeds[k])->fin;
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
static gpt_status write_results(const exp_results *x, char *err, size_t errlen)
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
            sb_printf(&b, "%s,%.17g,%ld,ok,%.17g,%.17g,%.17g\n", optim_head_name(exp_arm_head[u->arm]), u->rate, u->seed,
                      u->fin.val_loss, u->fin.diameter, u->fin.hilbert_rms);
        else
            sb_printf(&b, "%s,%.17g,%ld,failed,,,\n", optim_head_name(exp_arm_head[u->arm]), u->rate, u->seed);
    }
    snprintf(path, sizeof path, "%s/results.csv", x->out_dir);
    if (b.failed) {
        gpt_errorf(err, errlen, "%s: out of memory", path);
        rc = GPT_ERR_NOMEM;
    } else {
        rc = data_write_file_atomic(path, b.s, b.len, err, errlen);
    }
    free(b.s);
    return rc;
}

/* ---- the console ------------------------------------------------------------------------- */

void exp_say_error(const char *fmt, ...)
{
    va_list ap;
    fputs("experiment: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void exp_say_plan(const exp_results *x, const optim_recipe *recipe, int definitions)
{
    int arm, ks = x->sweep_seeds, n = x->seeds;
    long seed0 = x->seed0;
    if (definitions) {
        sbuf out;
        memset(&out, 0, sizeof out);
        sb_printf(&out, "experiment: what the tables measure\n");
        sb_definitions(&out);
        if (!out.failed) printf("%s", out.s);
        free(out.s);
    }
    printf("experiment: outputs in %s\n", x->out_dir);
    for (arm = 0; arm < 2; arm++) {
        const exp_grid *g = &x->grid[arm];
        sbuf r;
        memset(&r, 0, sizeof r);
        sb_rates(&r, g);
        printf("experiment: %s: %s %s (warm-up %.0f%%, cosine to %.0f%% of peak), seed%s %ld%s%ld\n", exp_arm_name[arm],
               g->fixed ? "fixed rate" : "sweep over peak rates", r.s ? r.s : "?", 100.0 * recipe->warmup_frac,
               100.0 * recipe->final_frac, ks > 1 ? "s" : "", seed0, ks > 1 ? ".." : "", seed0 + ks - 1);
        free(r.s);
    }
    printf("experiment: the best rate of each: the lowest mean over %d seed%s; then %d seed%s (%ld..%ld) at each arm's "
           "best rate and at the paper's (AdamW %.3g, RowNorm %.3g)\n",
           ks, ks > 1 ? "s" : "", n, n > 1 ? "s" : "", seed0, seed0 + n - 1, x->paper[0], x->paper[1]);
}

void exp_say_run_start(int k, int planned, int arm, double rate, long seed, int sweep, double eta, int one_line)
{
    char e[32];
    if (eta >= 0) fmt_duration(e, sizeof e, eta);
    else snprintf(e, sizeof e, "after the first run");
    printf("experiment: run %d of %d: %s, rate %.4g, seed %ld%s (ETA %s)%s", k, planned, exp_arm_name[arm], rate, seed,
           sweep ? ", sweep" : "", e, one_line ? " ..." : "\n");
    fflush(stdout);
}

void exp_say_run_end(const exp_run *u, const char *name, train_outcome outcome, int one_line, int sweep,
                     const char *err, double seconds)
{
    if (one_line && outcome != TRAIN_DONE) printf(" %s\n", outcome == TRAIN_FAILED ? "failed" : "stopped");
    if (outcome == TRAIN_DONE && err) {
        if (one_line) printf("\n");
        exp_say_error("%s", err);
    } else if (outcome == TRAIN_DONE) {
        if (!one_line) printf("experiment: %s:", name);
        printf(" final val loss %.4f, D(S) %.3e, Hilbert RMS %.3e (%.1f s)\n", u->fin.val_loss, u->fin.diameter,
               u->fin.hilbert_rms, seconds);
    } else if (outcome == TRAIN_FAILED) {
        exp_say_error("%s: %s%s", name, u->error, sweep ? " (a failed point of the sweep)" : "");
    }
}

void exp_say_extension(int arm, double edge, double rate)
{
    printf("experiment: the best %s rate %.6g is at the edge of its grid: adding %.6g\n", exp_arm_name[arm], edge, rate);
}

void exp_say_done(int made, double seconds) { printf("experiment: %d runs in %.0f s\n\n", made, seconds); }

/* ---- table.md, results.csv, the plots ---------------------------------------------------- */

/* The frontier table: one row per arm and rate (mean ± sd, min … max over the sweep seeds), the
 * notes on edges and fixed rates. */
static void sb_frontier(sbuf *out, const exp_results *x)
{
    const exp_grid *g = x->grid;
    int arm, k, ks = x->sweep_seeds;
    long seed0 = x->seed0;
    sb_printf(out, "## The frontier (%d seed%s per peak head rate: %ld..%ld)\n\n", ks, ks > 1 ? "s" : "", seed0,
              seed0 + ks - 1);
    sb_printf(out, "| head | peak head rate | final val loss%s | min … max | final D(S) | Hilbert RMS | |\n"
                   "|---|---|---|---|---|---|---|\n", ks > 1 ? " (mean ± sd)" : "");
    for (arm = 0; arm < 2; arm++)
        for (k = 0; k < g[arm].n; k++) {
            exp_point p = exp_point_at(x, arm, g[arm].rate[k], ks);
            const char *tag = k == g[arm].best ? (g[arm].at_edge ? "**best (at the grid's edge)**" : "**best**") : "";
            if (p.n == ks) {
                sb_printf(out, "| %s | %.6g | %.4f", exp_arm_name[arm], g[arm].rate[k], p.loss);
                if (ks > 1) sb_printf(out, " ± %.4f | %.4f … %.4f", p.loss_sd, p.loss_min, p.loss_max);
                else sb_printf(out, " | —");
                sb_printf(out, " | %.3e | %.3e | %s |\n", p.d, p.rms, tag);
            } else {
                exp_run *u = NULL;
                int s;
                for (s = 0; s < ks && !u; s++) {
                    exp_run *v = exp_find_run(x, arm, g[arm].rate[k], seed0 + s);
                    if (v && !v->ok) u = v;
                }
                sb_printf(out, "| %s | %.6g | failed (%d of %d seeds): %s | | | | |\n", exp_arm_name[arm],
                          g[arm].rate[k], p.failed, ks, u ? u->error : "?");
            }
        }
    for (arm = 0; arm < 2; arm++) {
        if (g[arm].at_edge)
            sb_printf(out, "\nNote: the %s's best rate %.6g is at the edge of its grid%s: its real best may lie "
                           "beyond (give a wider --sweep-%s).\n", exp_arm_name[arm], x->best[arm],
                      g[arm].extended ? " even after extending it" : "", arm ? "rownorm" : "adamw");
        else if (g[arm].fixed)
            sb_printf(out, "\nThe %s's rate is fixed (--lr-head-%s %.6g): no sweep.\n", exp_arm_name[arm],
                      arm ? "rownorm" : "adamw", x->best[arm]);
    }
    if (g[0].extended || g[1].extended)
        sb_printf(out, "\n(Grids extended where a best was at an edge: up to --sweep-extend %d points per arm.)\n",
                  x->sweep_extend);
}

/* table.md: the definitions, the recipe (from the first tuned log), the frontier, the matched
 * loss, the tuned and the paper's pairs, the verdicts. */
static void sb_table(sbuf *out, const exp_results *x, const exp_log *log0)
{
    const double *best = x->best, *paper = x->paper;
    const char *corpus = exp_log_recipe(log0, "corpus");
    int ks = x->sweep_seeds, n = x->seeds;
    char title[256], *tt, *tp = NULL;
    exp_pair_summary tuned, at_paper;
    exp_matched mt[2];
    memset(&at_paper, 0, sizeof at_paper);
    matched(x, x->grid, ks, 0, &mt[0]);
    matched(x, x->grid, ks, 1, &mt[1]);
    snprintf(title, sizeof title, "## At each head's best rate (AdamW %.6g, RowNorm %.6g)", best[0], best[1]);
    tt = pairs_table(x, title, best[0], best[1], n, &tuned);
    snprintf(title, sizeof title, "## At the paper's rates (AdamW %.6g, RowNorm %.6g)%s", paper[0], paper[1],
             x->paper_same ? ": the same as the best" : "");
    if (!x->paper_same) tp = pairs_table(x, title, paper[0], paper[1], n, &at_paper);
    sb_printf(out, "# AdamW head vs RowNorm head: head-rate sweeps, the loss–step-size frontier, tuned pairs\n\n");
    sb_definitions(out);
    sb_printf(out, "\nRecipe (identical in every run but the head optimizer and its rate): ");
    exp_describe_recipe(out, log0, 0);
    sb_printf(out, ". Head AdamW betas (0.9, 0.999), eps 1e-10, wd 0.1; head RowNorm beta 0.95, eps 1e-8, wd 0 "
                   "(the paper's). Data: corpus %s%s. The logs record all of it (`# key=value` lines).\n\n",
              corpus ? corpus : "?",
              corpus && strtoull(corpus, NULL, 16) == DATA_DEMO_CORPUS_ID ? " (the demo's, " DATA_DEMO_CORPUS ")" : "");
    sb_frontier(out, x);
    sb_printf(out, "\n## Matched loss: the step size each head needs to reach the RowNorm head's best loss\n\n"
                   "Read off the mean frontiers (segments linear in log step size between sweep points), and off "
                   "each sweep seed's own frontier for the range.\n\n");
    sb_matched(out, &mt[0], 0, ks);
    sb_printf(out, "\n");
    sb_matched(out, &mt[1], 1, ks);
    sb_printf(out, "\n%s", tt ? tt : "(out of memory)\n");
    if (!x->paper_same) sb_printf(out, "\n%s", tp ? tp : "(out of memory)\n");
    else sb_printf(out, "\n%s\n", title);
    free(tt), free(tp);
    /* the answer */
    sb_printf(out, "\n## The answer at this scale\n\n");
    sb_frontier_verdict(out, &mt[0], 0);
    sb_frontier_verdict(out, &mt[1], 1);
    snprintf(title, sizeof title, "At each head's best rate (AdamW %.6g, RowNorm %.6g, chosen on the mean of %d seed%s)",
             best[0], best[1], ks, ks > 1 ? "s" : "");
    sb_pair_verdict(out, title, &tuned);
    if (!x->paper_same) {
        snprintf(title, sizeof title, "At the paper's rates (AdamW %.6g, RowNorm %.6g)", paper[0], paper[1]);
        sb_pair_verdict(out, title, &at_paper);
    }
}

/* The five plots, with the recipe and the rates in their captions. */
static gpt_status write_experiment_plots(const exp_results *x, const exp_log *logs, char *err, size_t errlen)
{
    const double *best = x->best;
    const char *names[2] = {exp_arm_name[0], exp_arm_name[1]};
    const char *colors[2] = {exp_head_color(exp_arm_head[0]), exp_head_color(exp_arm_head[1])};
    sbuf cap;
    gpt_status st;
    memset(&cap, 0, sizeof cap);
    exp_describe_recipe(&cap, &logs[0], 1);
    sb_printf(&cap, "\nhead rates: AdamW ");
    sb_rates(&cap, &x->grid[0]);
    sb_printf(&cap, " (best %.6g);\nRowNorm ", best[0]);
    sb_rates(&cap, &x->grid[1]);
    sb_printf(&cap, " (best %.6g); seeds %ld..%ld (mean; bars: min–max)", best[1], x->seed0,
              x->seed0 + x->sweep_seeds - 1);
    if (cap.failed) st = gpt_fail(err, errlen, GPT_ERR_NOMEM, "out of memory");
    else if ((st = frontier_plot(x, x->grid, x->sweep_seeds, 0, cap.s, err, errlen)) == GPT_OK)
        st = frontier_plot(x, x->grid, x->sweep_seeds, 1, cap.s, err, errlen);
    free(cap.s);
    if (st != GPT_OK) return st;
    memset(&cap, 0, sizeof cap);
    exp_describe_recipe(&cap, &logs[0], 1);
    sb_printf(&cap, "\nat each head's best rate: AdamW %.6g, RowNorm %.6g; seeds %ld..%ld", best[0], best[1], x->seed0,
              x->seed0 + x->seeds - 1);
    if (cap.failed) st = gpt_fail(err, errlen, GPT_ERR_NOMEM, "out of memory");
    else st = exp_write_plots(x->out_dir, logs, 2, x->seeds, names, colors, cap.s, err, errlen);
    free(cap.s);
    return st;
}

gpt_status exp_report(const exp_results *x)
{
    int n = x->seeds, arm, k;
    char err[512], path[1100];
    exp_log *logs;
    sbuf out;
    gpt_status st = GPT_OK;
    /* the tuned pairs' logs: the recipe and the curves */
    logs = (exp_log *)calloc((size_t)(2 * n), sizeof *logs);
    if (!logs) {
        exp_say_error("out of memory");
        return GPT_ERR_NOMEM;
    }
    for (k = 0; k < n && st == GPT_OK; k++)
        for (arm = 0; arm < 2 && st == GPT_OK; arm++)
            st = exp_log_read(exp_find_run(x, arm, x->best[arm], x->seed0 + k)->log, &logs[arm * n + k], err, sizeof err);
    memset(&out, 0, sizeof out);
    if (st == GPT_OK) {
        sb_table(&out, x, &logs[0]);
        snprintf(path, sizeof path, "%s/table.md", x->out_dir);
        if (out.failed) st = gpt_fail(err, sizeof err, GPT_ERR_NOMEM, "out of memory");
        else if ((st = data_write_file_atomic(path, out.s, out.len, err, sizeof err)) == GPT_OK &&
                 (st = write_results(x, err, sizeof err)) == GPT_OK)
            printf("%s\nwrote %s, results.csv\n", out.s, path);
    }
    if (st == GPT_OK && (st = write_experiment_plots(x, logs, err, sizeof err)) == GPT_OK)
        printf("wrote %s/frontier_diameter.svg, frontier_rms.svg, loss.svg, diameter.svg, hilbert_rms.svg\n", x->out_dir);
    if (st != GPT_OK) exp_say_error("%s", err);
    for (k = 0; k < 2 * n; k++) exp_log_free(&logs[k]);
    free(logs), free(out.s);
    return st;
}
