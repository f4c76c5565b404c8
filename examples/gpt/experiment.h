/* experiment.h - the paper's comparison at small scale, answered honestly: AdamW head vs RowNorm
 * head, each at its own best rate, with the loss–step-size frontier that neither a fixed-rate
 * pair nor the paper shows.
 *
 *   1. Sweep: per arm, a grid of peak head rates (--sweep-adamw / --sweep-rownorm, defaults below),
 *      one run per rate at each of the first --sweep-seeds seeds (2), every other setting
 *      identical. Each arm's best rate is the one with the lowest mean final validation loss over
 *      those seeds (one seed's noise can move a single-seed optimum by a grid step); a best at an
 *      edge of its grid extends the grid geometrically (--sweep-extend times; then the output says
 *      it is at the edge). A run that fails (e.g. a non-finite loss at a high rate) is a point
 *      marked "failed".
 *   2. Tuned pairs: --seeds N paired runs (seeds S..S+N-1) at the two best rates.
 *   3. Paper pairs: the same seeds at the paper's rates (AdamW 4e-3, RowNorm 3.2e-3), for reference.
 *   A run already made (same arm, rate and seed) is not made again: the trainer is deterministic
 *   for a given thread count, so the sweep's runs at the best rates are the tuned pairs' first
 *   seeds (and the default grids start at the paper's rates, so theirs too).
 *   --lr-head-adamw X (--lr-head-rownorm X) fixes that arm at X: no sweep for it.
 *   4. The answer: the definitions (D(S), Hilbert RMS, the frontier), the frontier (mean, sd and
 *      min … max over the sweep seeds), the matched-loss ratios (on the mean frontiers, with the
 *      range of each seed's own), the pairs with their 95 % intervals paired over seeds, and one
 *      verdict line per claim, marked as beyond the seed noise or within it.
 *
 * Every number in the tables and the plots is read back from the runs' CSV logs (train.h), the
 * rates and the recipe included, and checked against what was asked for. Files in the output
 * directory:
 *   <arm>_lr<rate>_seed<S>.csv              the log of each run
 *   table.md                                the definitions, the recipe, the frontier table, the
 *                                           matched-loss table, the tuned and the paper pairs, the
 *                                           verdict (also printed)
 *   results.csv                             one row per run: head, rate, seed, status, final val
 *                                           loss, D(S), Hilbert RMS (what tests/demo_table.sh
 *                                           compares with the committed copy)
 *   frontier_diameter.svg, frontier_rms.svg final validation loss against final D(S) / Hilbert RMS
 *                                           (mean over the sweep seeds, bars min … max)
 *   loss.svg, diameter.svg, hilbert_rms.svg the tuned pairs against tokens (mean over seeds, the
 *                                           spread min … max)
 */
#ifndef GPT_EXPERIMENT_H
#define GPT_EXPERIMENT_H

#include <stddef.h>

#include "cli.h"

#ifdef __cplusplus
extern "C" {
#endif

#define EXP_MAX_RATES 32  /* per arm, after extension */
#define EXP_MAX_RECIPE 64 /* "# key=value" lines kept from a log */

/* The default sweeps: factors of 2 from the paper's rates up (so the paper pairs reuse the sweep's
 * runs); at the demo's size each arm's best lies inside its grid or one extension away. */
#define EXP_SWEEP_ADAMW "4e-3,8e-3,1.6e-2,3.2e-2,6.4e-2"
#define EXP_SWEEP_ROWNORM "3.2e-3,6.4e-3,1.28e-2,2.56e-2,5.12e-2"

/* One CSV log read back. Cells left empty in the log are NaN here. */
typedef struct exp_log {
    size_t n_train;
    double *train_tokens, *train_loss, *train_d_exact;
    size_t n_eval;
    double *eval_tokens, *eval_loss, *eval_hilbert;
    int has_final;
    long final_step;
    double final_val_loss, final_diameter, final_hilbert_rms;
    int n_recipe; /* the recipe lines, in order */
    char recipe_key[EXP_MAX_RECIPE][32], recipe_value[EXP_MAX_RECIPE][48];
} exp_log;

/* Reads a log written by train_run; 0 on success, else -1 with a message (missing file, bad
 * header, malformed row or recipe line). */
int exp_log_read(const char *path, exp_log *out, char *err, size_t errlen);
void exp_log_free(exp_log *log);
/* The value of a recipe key ("head_lr"), NULL when the log has none. */
const char *exp_log_recipe(const exp_log *log, const char *key);

/* Parses a comma-separated list of rates (each finite and > 0, at most EXP_MAX_RATES) into
 * out[], sorted ascending without repeats. Returns the count, or -1 with a message. */
int exp_parse_rates(const char *list, double *out, char *err, size_t errlen);

typedef struct exp_final {
    double val_loss, diameter, hilbert_rms;
} exp_final;

/* The Markdown table for n >= 1 seed pairs (a[k], b[k] from seed seeds[k]), under the heading
 * line `title`: a summary (mean ± sd; sd is the sample standard deviation, left out when n = 1)
 * with the paired 95 % intervals of exp_pair_summarize, and one row per seed. delta = RowNorm -
 * AdamW loss, ratio = AdamW / RowNorm. Formats: losses %.4f, differences %+.4f, D and RMS %.3e,
 * ratios %.2f. Returns a malloc'd string (NULL when out of memory). */
char *exp_table_markdown(const char *title, const exp_final *adamw, const exp_final *rownorm, const long *seeds,
                         int n);

/* Mean and sample sd of n values (sd 0 for n = 1). */
void exp_mean_sd(const double *x, int n, double *mean, double *sd);

/* The two-sided 95 % quantile of Student's t with df degrees of freedom (df >= 1; NaN below). */
double exp_t975(int df);

/* n seed pairs summarised, RowNorm (b) against AdamW (a), each with its 95 % interval paired over
 * the seeds (Student's t with n - 1 degrees of freedom; NaN bounds for n = 1): delta = mean of
 * b - a validation losses; the D and Hilbert RMS ratios a / b as geometric means (the interval
 * of the mean log ratio, exponentiated). */
typedef struct exp_pair_summary {
    int n;
    double delta, delta_lo, delta_hi;
    double d_ratio, d_lo, d_hi;
    double rms_ratio, rms_lo, rms_hi;
} exp_pair_summary;
void exp_pair_summarize(const exp_final *a, const exp_final *b, int n, exp_pair_summary *s);

/* The smallest step size x (D or Hilbert RMS) at which an arm's frontier reaches loss `target`:
 * the n points (x[i], loss[i]) taken in increasing x, joined by segments linear in log x; the
 * first crossing of loss <= target. NaN points are skipped. Returns the x, or NaN when no point
 * reaches the target. *exact is 1 when the answer is a measured point (the first one already
 * reaches it), 0 when interpolated. */
double exp_matched_step(const double *x, const double *loss, int n, double target, int *exact);

/* The loss of an arm's frontier at step size x0 (the same segments), NaN outside [min x, max x]. */
double exp_frontier_at(const double *x, const double *loss, int n, double x0);

/* Writes loss.svg, diameter.svg and hilbert_rms.svg into dir from n_arms arms of n logs each
 * (logs[arm * n + k]; mean per arm across the n seeds, point by point), arm names and colours
 * from names[] / colors[], the caption under each plot. 0 or -1 with a message. */
int exp_write_plots(const char *dir, const exp_log *logs, int n_arms, int n, const char *const *names,
                    const char *const *colors, const char *caption, char *err, size_t errlen);

/* The recipe of a log as a plot caption (model, tokens per run, block and embedding rates,
 * schedule; lines separated by '\n'); malloc'd, NULL when out of memory. */
char *exp_recipe_caption(const exp_log *log);

/* The colour of an arm in every plot: AdamW blue, RowNorm red, Muon green. */
const char *exp_head_color(optim_head_kind head);

/* The whole experiment from parsed flags: sweeps, pairs, tables, plots. Returns a process exit
 * code. */
int experiment_main(const train_cli *cli);

#ifdef __cplusplus
}
#endif
#endif /* GPT_EXPERIMENT_H */
