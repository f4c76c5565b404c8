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
 * Axes get "nice" ticks (steps of 1, 2 or 5 times a power of ten, range widened to whole steps);
 * large tick values are written with k/M/G suffixes. With log_y the y ticks sit at powers of ten
 * (with 2 and 5 in between when the data spans at most two decades). Gaps: a point whose x or y is
 * NaN, infinite, beyond 1e300 in magnitude, or (with log_y) not positive is not drawn and breaks
 * the line; an isolated point is drawn as a dot. The file holds no "nan" text in any case.
 * Series are drawn in order with a fixed palette and listed in a legend in the top-right corner.
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
    int width, height;  /* pixels; 0 means 720 x 450 */
} plot_desc;

typedef struct plot plot;

/* Allocates a plot (copies the strings); NULL when out of memory. desc may be NULL (defaults). */
plot *plot_create(const plot_desc *desc);
/* Copies n points of a series; x may be NULL (then x = 0, 1, ..., n-1). n may be 0. */
gpt_status plot_add_series(plot *p, const char *name, const double *x, const double *y, size_t n);
/* Renders into a malloc'd NUL-terminated string (*svg, freed by the caller) of *len bytes. */
gpt_status plot_render_svg(const plot *p, char **svg, size_t *len);
/* Renders and writes atomically; on error err (if not NULL) holds a message naming the file. */
gpt_status plot_write_svg(const plot *p, const char *path, char *err, size_t errlen);
void plot_free(plot *p);

#ifdef __cplusplus
}
#endif

#endif /* GPT_PLOT_H */
