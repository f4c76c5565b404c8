/* plot.c - line plots as standalone SVG (see plot.h). */
#include "plot.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *name;
    double *x, *y;
    size_t n;
    char color[8]; /* "" : the palette's */
    int dashed, markers;
    char **labels; /* NULL or n entries (NULL: none) */
    long ring;
    double *ylo, *yhi; /* NULL or n entries: the spread of each point */
} plot__series;

struct plot {
    char *title, *xlabel, *ylabel, *caption;
    int log_y, log_x, width, height;
    plot__series series[PLOT_MAX_SERIES];
    int n_series;
};

static const char *const plot__palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                            "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};

static char *plot__strdup(const char *s)
{
    size_t n;
    char *d;
    if (!s) return NULL;
    n = strlen(s);
    d = (char *)malloc(n + 1);
    if (d) memcpy(d, s, n + 1);
    return d;
}

plot *plot_create(const plot_desc *desc)
{
    plot *p = (plot *)calloc(1, sizeof(plot));
    if (!p) return NULL;
    p->width = 720;
    p->height = 450;
    if (desc) {
        if (desc->width > 0) p->width = desc->width < 200 ? 200 : desc->width;
        if (desc->height > 0) p->height = desc->height < 150 ? 150 : desc->height;
        p->log_y = desc->log_y != 0;
        p->log_x = desc->log_x != 0;
        p->title = plot__strdup(desc->title);
        p->xlabel = plot__strdup(desc->xlabel);
        p->ylabel = plot__strdup(desc->ylabel);
        p->caption = plot__strdup(desc->caption);
        if ((desc->title && !p->title) || (desc->xlabel && !p->xlabel) || (desc->ylabel && !p->ylabel) ||
            (desc->caption && !p->caption)) {
            plot_free(p);
            return NULL;
        }
    }
    return p;
}

static int plot__is_color(const char *c)
{
    int i;
    if (!c || c[0] != '#' || strlen(c) != 7) return 0;
    for (i = 1; i < 7; i++)
        if (!((c[i] >= '0' && c[i] <= '9') || (c[i] >= 'a' && c[i] <= 'f') || (c[i] >= 'A' && c[i] <= 'F'))) return 0;
    return 1;
}

static void plot__free_labels(char **labels, size_t n)
{
    size_t i;
    if (!labels) return;
    for (i = 0; i < n; i++) free(labels[i]);
    free(labels);
}

gpt_status plot_add_series(plot *p, const char *name, const double *x, const double *y, size_t n)
{
    return plot_add_series_style(p, name, x, y, n, NULL);
}

gpt_status plot_add_series_style(plot *p, const char *name, const double *x, const double *y, size_t n,
                                 const plot_style *style)
{
    plot__series s;
    size_t i;
    if (!p || (n && !y)) return GPT_ERR_NULL;
    if (p->n_series >= PLOT_MAX_SERIES) return GPT_ERR_DOMAIN;
    if (style && style->color && !plot__is_color(style->color)) return GPT_ERR_DOMAIN;
    if (n > ((size_t)-1) / sizeof(double)) return GPT_ERR_NOMEM;
    memset(&s, 0, sizeof s);
    s.ring = -1;
    if (style) {
        if (style->color) memcpy(s.color, style->color, 8);
        s.dashed = style->dashed != 0;
        s.markers = style->markers != 0;
        s.ring = style->ring >= 0 && (size_t)style->ring < n ? style->ring : -1;
        if (style->labels && n) {
            s.labels = (char **)calloc(n, sizeof *s.labels);
            if (!s.labels) return GPT_ERR_NOMEM;
            for (i = 0; i < n; i++)
                if (style->labels[i] && !(s.labels[i] = plot__strdup(style->labels[i]))) {
                    plot__free_labels(s.labels, n);
                    return GPT_ERR_NOMEM;
                }
        }
    }
    s.name = plot__strdup(name ? name : "");
    s.x = (double *)malloc((n ? n : 1) * sizeof(double));
    s.y = (double *)malloc((n ? n : 1) * sizeof(double));
    if (style && style->ylo && style->yhi) {
        s.ylo = (double *)malloc((n ? n : 1) * sizeof(double));
        s.yhi = (double *)malloc((n ? n : 1) * sizeof(double));
    }
    s.n = n;
    if (!s.name || !s.x || !s.y || (style && style->ylo && style->yhi && (!s.ylo || !s.yhi))) {
        free(s.name);
        free(s.x);
        free(s.y);
        free(s.ylo);
        free(s.yhi);
        plot__free_labels(s.labels, n);
        return GPT_ERR_NOMEM;
    }
    for (i = 0; i < n; i++) {
        s.x[i] = x ? x[i] : (double)i;
        s.y[i] = y[i];
        if (s.ylo) s.ylo[i] = style->ylo[i], s.yhi[i] = style->yhi[i];
    }
    p->series[p->n_series++] = s;
    return GPT_OK;
}

void plot_free(plot *p)
{
    int i;
    if (!p) return;
    for (i = 0; i < p->n_series; i++) {
        free(p->series[i].name);
        free(p->series[i].x);
        free(p->series[i].y);
        plot__free_labels(p->series[i].labels, p->series[i].n);
        free(p->series[i].ylo);
        free(p->series[i].yhi);
    }
    free(p->caption);
    free(p->title);
    free(p->xlabel);
    free(p->ylabel);
    free(p);
}

/* ---- string builder -------------------------------------------------------------------- */

typedef struct {
    char *s;
    size_t n, cap;
    int oom;
} plot__buf;

static void plot__printf(plot__buf *b, const char *fmt, ...)
{
    va_list ap;
    int need;
    if (b->oom) return;
    va_start(ap, fmt);
    need = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    if (need < 0) {
        b->oom = 1;
        return;
    }
    if ((size_t)need >= b->cap - b->n) {
        size_t ncap = b->cap * 2;
        char *ns;
        while (ncap - b->n <= (size_t)need) ncap *= 2;
        ns = (char *)realloc(b->s, ncap);
        if (!ns) {
            b->oom = 1;
            return;
        }
        b->s = ns;
        b->cap = ncap;
        va_start(ap, fmt);
        vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
    }
    b->n += (size_t)need;
}

/* Text content with &, <, >, " escaped; control bytes dropped (invalid in XML 1.0). */
static void plot__text(plot__buf *b, const char *s)
{
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '&') plot__printf(b, "&amp;");
        else if (c == '<') plot__printf(b, "&lt;");
        else if (c == '>') plot__printf(b, "&gt;");
        else if (c == '"') plot__printf(b, "&quot;");
        else if (c < 0x20 && c != '\t') continue;
        else plot__printf(b, "%c", c);
    }
}

/* ---- axes ------------------------------------------------------------------------------ */

/* The "nice" number nearest x: 1, 2, 5 or 10 times a power of ten. */
static double plot__nice(double x)
{
    double e = floor(log10(x)), f = x / pow(10.0, e);
    double nf = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
    return nf * pow(10.0, e);
}

typedef struct {
    double lo, hi;         /* axis range (log10 of the values on a log axis) */
    double ticks[64];      /* tick positions in axis units */
    int n_ticks;
    double step;           /* linear tick step, for label precision */
    int log;
} plot__axis;

/* tight: the range is [lo, hi] itself (ticks inside it); else widened to whole steps */
static void plot__linear_axis(plot__axis *a, double lo, double hi, int tight)
{
    double range, step, t, first;
    int i;
    if (!(hi > lo)) { /* one value or none: a unit window around it */
        double pad = lo == 0 ? 1 : fabs(lo) * 0.5;
        lo -= pad;
        hi += pad;
    }
    range = hi - lo;
    step = plot__nice(range / 5); /* about five steps */
    a->lo = tight ? lo : floor(lo / step) * step;
    a->hi = tight ? hi : ceil(hi / step) * step;
    a->step = step;
    a->log = 0;
    a->n_ticks = 0;
    first = ceil(a->lo / step - 1e-9) * step;
    for (i = 0; i < 64; i++) {
        t = first + i * step;
        if (t > a->hi + 1e-9 * step) break;
        a->ticks[a->n_ticks++] = fabs(t) < 1e-12 * step ? 0.0 : t;
    }
}

/* lo, hi > 0; pad > 0: the range is [log lo, log hi] widened by pad of its span on each side
 * (ticks inside it), else whole decades */
static void plot__log_axis(plot__axis *a, double lo, double hi, double pad)
{
    double elo = floor(log10(lo)), ehi = ceil(log10(hi)), e;
    int every;
    if (ehi <= elo) ehi = elo + 1;
    a->lo = elo;
    a->hi = ehi;
    if (pad > 0) {
        double l = log10(lo), h = log10(hi), w = h - l > 0.3 ? h - l : 0.3;
        a->lo = l - pad * w;
        a->hi = h + pad * w;
        elo = floor(a->lo);
        ehi = ceil(a->hi);
    }
    a->log = 1;
    a->step = 1;
    a->n_ticks = 0;
    every = (int)ceil((ehi - elo) / 10.0);
    for (e = elo; e <= ehi + 0.5 && a->n_ticks < 64; e += every) {
        double sub[3];
        int k, ns = 1;
        sub[0] = e;
        if (a->hi - a->lo <= 2.2 && e < ehi - 0.5) sub[1] = e + log10(2.0), sub[2] = e + log10(5.0), ns = 3;
        for (k = 0; k < ns && a->n_ticks < 64; k++)
            if (sub[k] >= a->lo - 1e-9 && sub[k] <= a->hi + 1e-9) a->ticks[a->n_ticks++] = sub[k];
    }
}

/* Tick label of value v on a linear axis with tick step `step` whose largest |tick| is amax
 * (one suffix for the whole axis); log axes print the value with %g. */
static void plot__label(char *out, size_t cap, double v, double step, double amax, int log_axis)
{
    double av = fabs(v);
    const char *suffix = "";
    double scale = 1;
    int dec;
    if (log_axis) {
        snprintf(out, cap, "%g", v);
        return;
    }
    if (amax >= 1e9) { scale = 1e9; suffix = "G"; }
    else if (amax >= 1e6) { scale = 1e6; suffix = "M"; }
    else if (amax >= 1e4) { scale = 1e3; suffix = "k"; }
    if (v == 0) {
        snprintf(out, cap, "0");
        return;
    }
    if (av < 1e-4 && scale == 1) {
        snprintf(out, cap, "%.1e", v);
        return;
    }
    dec = (int)-floor(log10(step / scale) + 1e-9);
    if (dec < 0) dec = 0;
    if (dec > 6) dec = 6;
    snprintf(out, cap, "%.*f%s", dec, v / scale, suffix);
}

static int plot__usable(double x, double y, int log_y, int log_x)
{
    if (!(fabs(x) <= 1e300) || !(fabs(y) <= 1e300)) return 0; /* also NaN */
    return (!log_y || y > 0) && (!log_x || x > 0);
}

/* Boxes already drawn (dots, rings, error bars, labels, the legend): what a label must not cover. */
typedef struct {
    double *b; /* 4 per box: x0, y0, x1, y1 */
    size_t n, cap;
} plot__boxes;

static int plot__box_add(plot__boxes *o, double x0, double y0, double x1, double y1)
{
    if (o->n == o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 64;
        double *nb = (double *)realloc(o->b, cap * 4 * sizeof(double));
        if (!nb) return -1;
        o->b = nb, o->cap = cap;
    }
    o->b[4 * o->n] = x0, o->b[4 * o->n + 1] = y0, o->b[4 * o->n + 2] = x1, o->b[4 * o->n + 3] = y1;
    o->n++;
    return 0;
}

static int plot__box_hits(const plot__boxes *o, double x0, double y0, double x1, double y1)
{
    size_t k;
    for (k = 0; k < o->n; k++) {
        const double *q = o->b + 4 * k;
        if (x0 < q[2] && q[0] < x1 && y0 < q[3] && q[1] < y1) return 1;
    }
    return 0;
}

/* the value of a log tick (a power of ten times 1, 2 or 5), rounded to its digit */
static double plot__log_tick_value(double t)
{
    double v = pow(10.0, t), dec = pow(10.0, floor(t + 1e-9));
    return floor(v / dec + 0.5) * dec;
}

gpt_status plot_render_svg(const plot *p, char **svg, size_t *len)
{
    plot__buf b;
    plot__axis ax, ay;
    double xmin = HUGE_VAL, xmax = -HUGE_VAL, ymin = HUGE_VAL, ymax = -HUGE_VAL;
    double L, R, T, Bm, W, H, lx = 0, ly = 0, lw = 0;
    plot__boxes obst = {NULL, 0, 0};
    int i, k, any = 0, n_caption = 0;
    size_t j;
    char lab[64];
    if (!p || !svg || !len) return GPT_ERR_NULL;
    for (i = 0; i < p->n_series; i++) {
        const plot__series *s = &p->series[i];
        for (j = 0; j < s->n; j++) {
            if (!plot__usable(s->x[j], s->y[j], p->log_y, p->log_x)) continue;
            any = 1;
            if (s->x[j] < xmin) xmin = s->x[j];
            if (s->x[j] > xmax) xmax = s->x[j];
            if (s->y[j] < ymin) ymin = s->y[j];
            if (s->y[j] > ymax) ymax = s->y[j];
            if (s->ylo && plot__usable(s->x[j], s->ylo[j], p->log_y, p->log_x) &&
                plot__usable(s->x[j], s->yhi[j], p->log_y, p->log_x)) {
                if (s->ylo[j] < ymin) ymin = s->ylo[j];
                if (s->yhi[j] > ymax) ymax = s->yhi[j];
            }
        }
    }
    if (!any) {
        xmin = p->log_x ? 1 : 0;
        xmax = p->log_x ? 10 : 1;
        ymin = p->log_y ? 1 : 0;
        ymax = p->log_y ? 10 : 1;
    }
    if (p->log_x) plot__log_axis(&ax, xmin, xmax, 0.04);
    else plot__linear_axis(&ax, xmin, xmax, 1);
    if (p->log_y) plot__log_axis(&ay, ymin, ymax, 0);
    else plot__linear_axis(&ay, ymin, ymax, 0);
    if (p->caption) {
        const char *c;
        for (c = p->caption, n_caption = 1; *c; c++) n_caption += *c == '\n';
    }

    W = p->width;
    H = p->height;
    L = 78;
    R = W - 20;
    T = p->title ? 40 : 20;
    Bm = H - 52;

    b.cap = 4096;
    b.n = 0;
    b.oom = 0;
    b.s = (char *)malloc(b.cap);
    if (!b.s) return GPT_ERR_NOMEM;
    b.s[0] = 0;
    plot__printf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                     "font-family=\"sans-serif\" font-size=\"12\">\n", p->width, p->height + 16 * n_caption, p->width,
                 p->height + 16 * n_caption);
    plot__printf(&b, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>\n", p->width,
                 p->height + 16 * n_caption);
    if (p->title) {
        plot__printf(&b, "<text x=\"%.1f\" y=\"24\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">",
                     (L + R) / 2);
        plot__text(&b, p->title);
        plot__printf(&b, "</text>\n");
    }
    /* grid, ticks and labels */
#define PLOT__X(v) (L + ((ax.log ? log10(v) : (v)) - ax.lo) / (ax.hi - ax.lo) * (R - L))
#define PLOT__XT(v) (L + ((v) - ax.lo) / (ax.hi - ax.lo) * (R - L)) /* a tick, in axis units */
#define PLOT__Y(v) (Bm - ((v) - ay.lo) / (ay.hi - ay.lo) * (Bm - T))
    plot__printf(&b, "<g stroke=\"#e0e0e0\" stroke-width=\"1\">\n");
    for (k = 0; k < ax.n_ticks; k++)
        plot__printf(&b, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>\n", PLOT__XT(ax.ticks[k]), T,
                     PLOT__XT(ax.ticks[k]), Bm);
    for (k = 0; k < ay.n_ticks; k++)
        plot__printf(&b, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>\n", L, PLOT__Y(ay.ticks[k]), R,
                     PLOT__Y(ay.ticks[k]));
    plot__printf(&b, "</g>\n<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"none\" stroke=\"black\"/>\n",
                 L, T, R - L, Bm - T);
    plot__printf(&b, "<g text-anchor=\"middle\">\n");
    for (k = 0; k < ax.n_ticks; k++) {
        if (ax.log) plot__label(lab, sizeof lab, plot__log_tick_value(ax.ticks[k]), 1, 1, 1);
        else plot__label(lab, sizeof lab, ax.ticks[k], ax.step, fabs(ax.lo) > fabs(ax.hi) ? fabs(ax.lo) : fabs(ax.hi), 0);
        plot__printf(&b, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"black\"/>", PLOT__XT(ax.ticks[k]),
                     Bm, PLOT__XT(ax.ticks[k]), Bm + 5);
        plot__printf(&b, "<text x=\"%.2f\" y=\"%.2f\">%s</text>\n", PLOT__XT(ax.ticks[k]), Bm + 18, lab);
    }
    plot__printf(&b, "</g>\n<g text-anchor=\"end\">\n");
    for (k = 0; k < ay.n_ticks; k++) {
        double v = ay.log ? plot__log_tick_value(ay.ticks[k]) : ay.ticks[k];
        plot__label(lab, sizeof lab, v, ay.step, fabs(ay.lo) > fabs(ay.hi) ? fabs(ay.lo) : fabs(ay.hi), ay.log);
        plot__printf(&b, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"black\"/>", L - 5,
                     PLOT__Y(ay.ticks[k]), L, PLOT__Y(ay.ticks[k]));
        plot__printf(&b, "<text x=\"%.2f\" y=\"%.2f\">%s</text>\n", L - 8, PLOT__Y(ay.ticks[k]) + 4, lab);
    }
    plot__printf(&b, "</g>\n");
    if (p->xlabel) {
        plot__printf(&b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", (L + R) / 2, H - 12);
        plot__text(&b, p->xlabel);
        plot__printf(&b, "</text>\n");
    }
    if (p->caption) { /* line by line under the x label */
        const char *c = p->caption;
        for (k = 0; k < n_caption; k++) {
            const char *e = strchr(c, '\n');
            size_t m = e ? (size_t)(e - c) : strlen(c);
            char *line = (char *)malloc(m + 1);
            if (!line) {
                b.oom = 1;
                break;
            }
            memcpy(line, c, m);
            line[m] = 0;
            plot__printf(&b, "<text x=\"12\" y=\"%.1f\" font-size=\"11\" fill=\"#444444\">", H + 16.0 * k);
            plot__text(&b, line);
            plot__printf(&b, "</text>\n");
            free(line);
            c = e ? e + 1 : c + m;
        }
    }
    if (p->ylabel) {
        plot__printf(&b, "<text transform=\"translate(16 %.1f) rotate(-90)\" text-anchor=\"middle\">", (T + Bm) / 2);
        plot__text(&b, p->ylabel);
        plot__printf(&b, "</text>\n");
    }
    /* the legend's box, an obstacle for the labels (drawn last, on top) */
    if (p->n_series > 0) {
        size_t maxlen = 0;
        for (i = 0; i < p->n_series; i++)
            if (strlen(p->series[i].name) > maxlen) maxlen = strlen(p->series[i].name);
        lw = 40 + 7.0 * (double)maxlen;
        lx = R - lw - 8;
        ly = T + 8;
        if (plot__box_add(&obst, lx, ly, lx + lw, ly + 8 + 18 * p->n_series)) b.oom = 1;
    }
    /* series: the spread first (a band, or error bars under the dots), then one path each, broken
     * at unusable points; isolated points as dots */
    for (i = 0; i < p->n_series; i++) {
        const plot__series *s = &p->series[i];
        const char *color = s->color[0] ? s->color : plot__palette[i % (int)(sizeof plot__palette / sizeof plot__palette[0])];
        int pen = 0;
        if (s->ylo && !s->markers) { /* a band: the upper edge left to right, the lower one back */
            size_t first = s->n, last = 0;
            for (j = 0; j < s->n; j++)
                if (plot__usable(s->x[j], s->ylo[j], p->log_y, p->log_x) && plot__usable(s->x[j], s->yhi[j], p->log_y, p->log_x)) {
                    if (first == s->n) first = j;
                    last = j;
                }
            if (first < s->n && last > first) {
                plot__printf(&b, "<path fill=\"%s\" fill-opacity=\"0.15\" stroke=\"none\" d=\"", color);
                for (j = first, pen = 0; j <= last; j++)
                    if (plot__usable(s->x[j], s->yhi[j], p->log_y, p->log_x) && plot__usable(s->x[j], s->ylo[j], p->log_y, p->log_x))
                        plot__printf(&b, "%s%.2f %.2f", pen++ ? " L" : " M", PLOT__X(s->x[j]),
                                     PLOT__Y(p->log_y ? log10(s->yhi[j]) : s->yhi[j]));
                for (j = last + 1; j-- > first;)
                    if (plot__usable(s->x[j], s->yhi[j], p->log_y, p->log_x) && plot__usable(s->x[j], s->ylo[j], p->log_y, p->log_x))
                        plot__printf(&b, " L%.2f %.2f", PLOT__X(s->x[j]), PLOT__Y(p->log_y ? log10(s->ylo[j]) : s->ylo[j]));
                plot__printf(&b, " Z\"/>\n");
            }
            pen = 0;
        }
        if (s->ylo && s->markers) /* error bars with caps */
            for (j = 0; j < s->n; j++) {
                double cx, y0, y1;
                if (!plot__usable(s->x[j], s->ylo[j], p->log_y, p->log_x) || !plot__usable(s->x[j], s->yhi[j], p->log_y, p->log_x))
                    continue;
                cx = PLOT__X(s->x[j]);
                y0 = PLOT__Y(p->log_y ? log10(s->ylo[j]) : s->ylo[j]);
                y1 = PLOT__Y(p->log_y ? log10(s->yhi[j]) : s->yhi[j]);
                plot__printf(&b, "<path class=\"bar\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.2\" d=\"M%.2f %.2f L%.2f %.2f "
                                 "M%.2f %.2f L%.2f %.2f M%.2f %.2f L%.2f %.2f\"/>\n", color, cx, y0, cx, y1, cx - 4, y0, cx + 4,
                             y0, cx - 4, y1, cx + 4, y1);
                if (plot__box_add(&obst, cx - 4, y1 < y0 ? y1 : y0, cx + 4, y1 < y0 ? y0 : y1)) b.oom = 1;
            }
        plot__printf(&b, "<path fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\" stroke-linejoin=\"round\"%s d=\"", color,
                     s->dashed ? " stroke-dasharray=\"6 4\"" : "");
        for (j = 0; j < s->n; j++) {
            double yv;
            if (!plot__usable(s->x[j], s->y[j], p->log_y, p->log_x)) {
                pen = 0;
                continue;
            }
            yv = p->log_y ? log10(s->y[j]) : s->y[j];
            plot__printf(&b, "%s%.2f %.2f", pen ? " L" : " M", PLOT__X(s->x[j]), PLOT__Y(yv));
            pen = 1;
        }
        plot__printf(&b, "\"/>\n");
        for (j = 0; j < s->n; j++) {
            int prev = j > 0 && plot__usable(s->x[j - 1], s->y[j - 1], p->log_y, p->log_x);
            int next = j + 1 < s->n && plot__usable(s->x[j + 1], s->y[j + 1], p->log_y, p->log_x);
            double cx, cy, r = 0;
            if (!plot__usable(s->x[j], s->y[j], p->log_y, p->log_x)) continue;
            cx = PLOT__X(s->x[j]);
            cy = PLOT__Y(p->log_y ? log10(s->y[j]) : s->y[j]);
            if (s->markers || (!prev && !next)) {
                plot__printf(&b, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"%s\" fill=\"%s\"/>\n", cx, cy,
                             s->markers ? "3.5" : "2.5", color);
                r = 3.5;
            }
            if ((long)j == s->ring) {
                plot__printf(&b, "<circle class=\"ring\" cx=\"%.2f\" cy=\"%.2f\" r=\"8\" fill=\"none\" stroke=\"%s\" "
                                 "stroke-width=\"2\"/>\n", cx, cy, color);
                r = 9;
            }
            if (r > 0 && plot__box_add(&obst, cx - r, cy - r, cx + r, cy + r)) b.oom = 1;
        }
    }
    /* the labels, each at the first free place around its point */
    for (i = 0; i < p->n_series; i++) {
        const plot__series *s = &p->series[i];
        const char *color = s->color[0] ? s->color : plot__palette[i % (int)(sizeof plot__palette / sizeof plot__palette[0])];
        for (j = 0; s->labels && j < s->n; j++) {
            /* candidate text boxes relative to the point: left edge dx, baseline dy; 10 px font,
             * about 6 px a character, 8 px above the baseline and 3 below */
            static const double dxr[8] = {9, -9, 9, -9, 11, -11, 0, 0}, dyr[8] = {-8, -8, 16, 16, 4, 4, -13, 21};
            static const int anchor[8] = {0, 1, 0, 1, 0, 1, 2, 2}; /* start, end, middle */
            double cx, cy, w, x0 = 0, y0 = 0;
            int c2, pick = 0;
            if (!s->labels[j] || !plot__usable(s->x[j], s->y[j], p->log_y, p->log_x)) continue;
            cx = PLOT__X(s->x[j]);
            cy = PLOT__Y(p->log_y ? log10(s->y[j]) : s->y[j]);
            w = 6.0 * (double)strlen(s->labels[j]);
            for (c2 = 0; c2 < 8; c2++) {
                double bx = cx + dxr[c2] - (anchor[c2] == 1 ? w : anchor[c2] == 2 ? w / 2 : 0), by = cy + dyr[c2];
                if (bx < L || bx + w > R || by - 8 < T || by + 3 > Bm) continue;
                if (!plot__box_hits(&obst, bx, by - 8, bx + w, by + 3)) {
                    pick = c2;
                    break;
                }
            }
            if (c2 == 8) pick = cx > R - 48 ? 1 : 0; /* nowhere free: beside it, inside the frame */
            x0 = cx + dxr[pick];
            y0 = cy + dyr[pick];
            {
                double bx = x0 - (anchor[pick] == 1 ? w : anchor[pick] == 2 ? w / 2 : 0);
                if (plot__box_add(&obst, bx, y0 - 8, bx + w, y0 + 3)) b.oom = 1;
            }
            plot__printf(&b, "<text class=\"label\" x=\"%.2f\" y=\"%.2f\" font-size=\"10\" fill=\"%s\"%s>", x0, y0, color,
                         anchor[pick] == 1 ? " text-anchor=\"end\"" : anchor[pick] == 2 ? " text-anchor=\"middle\"" : "");
            plot__text(&b, s->labels[j]);
            plot__printf(&b, "</text>\n");
        }
    }
#undef PLOT__X
#undef PLOT__XT
#undef PLOT__Y
    /* legend, top-right inside the frame */
    if (p->n_series > 0) {
        plot__printf(&b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"white\" fill-opacity=\"0.85\" "
                         "stroke=\"#999999\"/>\n", lx, ly, lw, 8 + 18 * p->n_series);
        for (i = 0; i < p->n_series; i++) {
            const plot__series *s = &p->series[i];
            const char *color = s->color[0] ? s->color : plot__palette[i % (int)(sizeof plot__palette / sizeof plot__palette[0])];
            double yy = ly + 16 + 18 * i;
            plot__printf(&b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2.5\"%s/>",
                         lx + 8, yy - 4, lx + 30, yy - 4, color, s->dashed ? " stroke-dasharray=\"6 4\"" : "");
            plot__printf(&b, "<text x=\"%.1f\" y=\"%.1f\">", lx + 36, yy);
            plot__text(&b, p->series[i].name);
            plot__printf(&b, "</text>\n");
        }
    }
    plot__printf(&b, "</svg>\n");
    free(obst.b);
    if (b.oom) {
        free(b.s);
        return GPT_ERR_NOMEM;
    }
    *svg = b.s;
    *len = b.n;
    return GPT_OK;
}

gpt_status plot_write_svg(const plot *p, const char *path, char *err, size_t errlen)
{
    char *svg, *tmp;
    size_t len, plen;
    FILE *f;
    int bad;
    gpt_status st;
    if (!p || !path) {
        if (err && errlen) snprintf(err, errlen, "plot_write_svg: null argument");
        return GPT_ERR_NULL;
    }
    st = plot_render_svg(p, &svg, &len);
    if (st != GPT_OK) {
        if (err && errlen) snprintf(err, errlen, "%s: %s", path, gpt_status_string(st));
        return st;
    }
    plen = strlen(path);
    tmp = (char *)malloc(plen + 5);
    if (!tmp) {
        free(svg);
        if (err && errlen) snprintf(err, errlen, "%s: out of memory", path);
        return GPT_ERR_NOMEM;
    }
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp", 5);
    f = fopen(tmp, "wb");
    if (!f) {
        if (err && errlen) snprintf(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
        free(svg);
        free(tmp);
        return GPT_ERR_IO;
    }
    bad = fwrite(svg, 1, len, f) != len;
    bad |= fflush(f) != 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) != 0) {
        if (err && errlen) snprintf(err, errlen, "%s: write failed", path);
        remove(tmp);
        free(svg);
        free(tmp);
        return GPT_ERR_IO;
    }
    free(svg);
    free(tmp);
    return GPT_OK;
}
