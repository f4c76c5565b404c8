/* report.c - the experiment's outputs from its logs: reading them, the frontier's arithmetic, the
 * statistics, the Markdown tables and the curve plots (see report.h). */
#include "report.h"

#include "data.h"
#include "plot.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

gpt_status exp_log_read(const char *path, exp_log *out, char *err, size_t errlen)
{
    unsigned char *buf;
    size_t n, i = 0, line_no = 0;
    int cols = 0; /* from the header: 14 (older logs) or 15 */
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

