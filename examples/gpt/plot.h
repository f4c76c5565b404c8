/* plot.h - line plots as standalone SVG files, for the trainer's curves (loss, step diameter D,
 * Hilbert RMS against tokens seen; AdamW head vs RowNorm head).
 *
 *   plot_desc d = {0};                 zero fields mean defaults
 *   d.title = "Validation loss"; d.xlabel = "tokens"; d.ylabel = "loss"; d.log_y = 0;
 *   plot *p = plot_create(&d);
 *   plot_add_series(p, "AdamW head", tokens, loss_a, n_a);
 *   plot_add_series(p, "RowNorm head", tokens, loss_r, n_r);
 *   plot_write_svg(p, "loss.svg", err, sizeof err);
 *   plot_free(p);
 *
 * Axes get "nice" ticks (steps of 1, 2 or 5 times a power of ten); the y range is widened to whole
 * steps, the x range ends at the data (ticks inside it). Large tick values are written with k/M/G
 * suffixes. A log axis (log_x, log_y) has ticks at powers of ten (with 2 and 5 in between when the
 * data spans at most two decades); a log x axis is padded by 4 % of its span on each side, so
 * markers and their labels at the ends stay inside the frame. Gaps: a point whose x or y is
 * NaN, infinite, beyond 1e300 in magnitude, or (with log_y) not positive is not drawn and breaks
 * the line; an isolated point is drawn as a dot. The file holds no "nan" text in any case.
 * Series are drawn in order, with a fixed palette unless a style (plot_add_series_style) names
 * the colour, solid or dashed, optionally with a dot at every point, a text label beside each
 * point, one point ringed (e.g. the best of a sweep) and a spread per point (ylo..yhi: an error bar
 * at each dot with markers, else a shaded band), and listed in a legend in the top-right corner.
 * Labels are placed after every series is drawn, each at the first of eight places around its
 * point (right-above, left-above, right-below, left-below, right, left, above, below) where it
 * overlaps no dot, ring, error bar, other label or the legend, and stays inside the frame (the
 * first place when none is free). A caption (desc.caption, lines separated by '\n') is printed under the x label; the
 * image grows by one line height per caption line.
 * plot_write_svg writes PATH.tmp and renames it over PATH. No global state.
 */
#ifndef GPT_PLOT_H
#define GPT_PLOT_H

#include <stddef.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PLOT_MAX_SERIES 16

typedef struct {
    const char *title;  /* NULL: none */
    const char *xlabel;
    const char *ylabel;
    int log_y;          /* nonzero: logarithmic y axis */
    int log_x;          /* nonzero: logarithmic x axis */
    int width, height;  /* pixels; 0 means 720 x 450 */
    const char *caption; /* NULL: none; '\n' separates lines */
} plot_desc;

typedef struct {
    const char *color;         /* "#rrggbb" (copied; NULL: the palette's colour of the series' index) */
    int dashed;                /* nonzero: a dashed line */
    int markers;               /* nonzero: a dot at every point */
    const char *const *labels; /* NULL, or n strings (NULL entries: none) written beside the points */
    long ring;                 /* index of a point drawn with a ring around it; -1: none */
    const double *ylo, *yhi;   /* NULL, or n values each: the spread of each point (a NaN pair: none) */
} plot_style;

typedef struct plot plot;

/* Allocates a plot (copies the strings); NULL when out of memory. desc may be NULL (defaults). */
plot *plot_create(const plot_desc *desc);
/* Copies n points of a series; x may be NULL (then x = 0, 1, ..., n-1). n may be 0. */
gpt_status plot_add_series(plot *p, const char *name, const double *x, const double *y, size_t n);
/* The same with a style (NULL: the default look); copies the colour and the labels. A colour
 * that is not "#" and six hex digits is GPT_ERR_DOMAIN (it goes into the SVG unescaped). */
gpt_status plot_add_series_style(plot *p, const char *name, const double *x, const double *y, size_t n,
                                 const plot_style *style);
/* Renders into a malloc'd NUL-terminated string (*svg, freed by the caller) of *len bytes. */
gpt_status plot_render_svg(const plot *p, char **svg, size_t *len);
/* Renders and writes atomically; on error err (if not NULL) holds a message naming the file. */
gpt_status plot_write_svg(const plot *p, const char *path, char *err, size_t errlen);
void plot_free(plot *p);

#ifdef __cplusplus
}
#endif

#endif /* GPT_PLOT_H */
