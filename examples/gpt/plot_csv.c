/* plot_csv.c - a line plot (plot.h) from CSV rows "series,x,y[,ylo,yhi]" on stdin, for the
 * studies' scripts (results/cap, results/muown): series in the order they first appear, each
 * point's spread drawn when ylo and yhi are given.
 *   build/gpt/plot_csv --out FILE.svg [--title T] [--xlabel X] [--ylabel Y] [--log-x] [--log-y]
 *                      [--caption C] < rows.csv
 * Exit 0, or 1 with a message on stderr (bad row, too many series, write failure). */
#include "plot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char name[64];
    double *x, *y, *lo, *hi;
    size_t n, cap;
    int spread;
} series;

static int push(series *s, double x, double y, double lo, double hi, int spread)
{
    if (s->n == s->cap) {
        size_t c = s->cap ? 2 * s->cap : 64;
        double *nx = (double *)realloc(s->x, c * sizeof *nx), *ny, *nl, *nh;
        if (!nx) return -1;
        s->x = nx;
        if (!(ny = (double *)realloc(s->y, c * sizeof *ny))) return -1;
        s->y = ny;
        if (!(nl = (double *)realloc(s->lo, c * sizeof *nl))) return -1;
        s->lo = nl;
        if (!(nh = (double *)realloc(s->hi, c * sizeof *nh))) return -1;
        s->hi = nh;
        s->cap = c;
    }
    s->x[s->n] = x, s->y[s->n] = y, s->lo[s->n] = lo, s->hi[s->n] = hi, s->n++;
    s->spread |= spread;
    return 0;
}

int main(int argc, char **argv)
{
    plot_desc d;
    const char *out = NULL;
    series S[PLOT_MAX_SERIES];
    int ns = 0, i, rc = 0;
    long line_no = 0;
    char line[512], err[256];
    plot *p;
    memset(&d, 0, sizeof d);
    memset(S, 0, sizeof S);
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--log-x") == 0) d.log_x = 1;
        else if (strcmp(a, "--log-y") == 0) d.log_y = 1;
        else if (v && strcmp(a, "--out") == 0) out = v, i++;
        else if (v && strcmp(a, "--title") == 0) d.title = v, i++;
        else if (v && strcmp(a, "--xlabel") == 0) d.xlabel = v, i++;
        else if (v && strcmp(a, "--ylabel") == 0) d.ylabel = v, i++;
        else if (v && strcmp(a, "--caption") == 0) d.caption = v, i++;
        else {
            fprintf(stderr, "plot_csv: unknown flag or missing value: %s\n", a);
            return 1;
        }
    }
    if (!out) {
        fprintf(stderr, "plot_csv: --out FILE is needed\n");
        return 1;
    }
    while (fgets(line, sizeof line, stdin)) {
        char name[64];
        double x, y, lo = 0, hi = 0;
        int k, got;
        line_no++;
        if (line[0] == '\n' || line[0] == '#') continue;
        got = sscanf(line, "%63[^,],%lf,%lf,%lf,%lf", name, &x, &y, &lo, &hi);
        if (got != 3 && got != 5) {
            fprintf(stderr, "plot_csv: line %ld is not series,x,y[,ylo,yhi]\n", line_no);
            return 1;
        }
        for (k = 0; k < ns && strcmp(S[k].name, name) != 0; k++) {}
        if (k == ns) {
            if (ns == PLOT_MAX_SERIES) {
                fprintf(stderr, "plot_csv: more than %d series\n", PLOT_MAX_SERIES);
                return 1;
            }
            strcpy(S[ns++].name, name);
        }
        if (push(&S[k], x, y, lo, hi, got == 5)) {
            fprintf(stderr, "plot_csv: out of memory\n");
            return 1;
        }
    }
    p = plot_create(&d);
    if (!p) return 1;
    for (i = 0; i < ns && rc == 0; i++) {
        plot_style st;
        memset(&st, 0, sizeof st);
        st.ring = -1;
        if (S[i].spread) st.ylo = S[i].lo, st.yhi = S[i].hi;
        if (plot_add_series_style(p, S[i].name, S[i].x, S[i].y, S[i].n, &st) != GPT_OK) rc = 1;
    }
    if (rc == 0 && plot_write_svg(p, out, err, sizeof err) != GPT_OK) {
        fprintf(stderr, "plot_csv: %s\n", err);
        rc = 1;
    }
    plot_free(p);
    for (i = 0; i < ns; i++) free(S[i].x), free(S[i].y), free(S[i].lo), free(S[i].hi);
    return rc;
}
