/* experiment.h - the paper's comparison at small scale: paired runs (same seed, same data, same
 * everything but the head optimizer) of an AdamW head vs a RowNorm head over several seeds, the
 * Markdown table of SPEC §3 (final validation loss and its difference, final step diameter D and
 * the ratio, Hilbert RMS and the ratio; mean ± sd over seeds) and SVG plots against tokens.
 *
 * Every number in the table and the plots is read back from the runs' CSV logs (train.h), so the
 * table says exactly what the logs say. Files in the output directory:
 *   adamw_seed<S>.csv, rownorm_seed<S>.csv   the logs of each run
 *   table.md                                 the table (also printed)
 *   loss.svg, diameter.svg, hilbert_rms.svg  mean over seeds per arm against tokens
 */
#ifndef GPT_EXPERIMENT_H
#define GPT_EXPERIMENT_H

#include <stddef.h>

#include "cli.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One CSV log read back. Cells left empty in the log are NaN here. */
typedef struct exp_log {
    size_t n_train;
    double *train_tokens, *train_loss, *train_d_exact;
    size_t n_eval;
    double *eval_tokens, *eval_loss, *eval_hilbert;
    int has_final;
    long final_step;
    double final_val_loss, final_diameter, final_hilbert_rms;
} exp_log;

/* Reads a log written by train_run; 0 on success, else -1 with a message (missing file, bad
 * header, malformed row). */
int exp_log_read(const char *path, exp_log *out, char *err, size_t errlen);
void exp_log_free(exp_log *log);

typedef struct exp_final {
    double val_loss, diameter, hilbert_rms;
} exp_final;

/* The Markdown table for n >= 1 seed pairs (a[k], b[k] from seed seeds[k]): a summary (mean ± sd;
 * sd is the sample standard deviation, left out when n = 1) and one row per seed. Differences and
 * ratios are taken per seed, then averaged: delta = RowNorm - AdamW loss, ratio = AdamW / RowNorm.
 * Formats: losses %.4f, differences %+.4f, D and RMS %.3e, ratios %.1f. Returns a malloc'd
 * string (NULL when out of memory). */
char *exp_table_markdown(const exp_final *adamw, const exp_final *rownorm, const long *seeds, int n);

/* Mean and sample sd of n values (sd 0 for n = 1). */
void exp_mean_sd(const double *x, int n, double *mean, double *sd);

/* Writes loss.svg, diameter.svg and hilbert_rms.svg into dir from the logs (mean per arm across
 * the n seeds, point by point). 0 or -1 with a message. */
int exp_write_plots(const char *dir, const exp_log *adamw, const exp_log *rownorm, int n, char *err, size_t errlen);

/* The whole experiment from parsed flags: runs, table, plots. Returns a process exit code. */
int experiment_main(const train_cli *cli);

#ifdef __cplusplus
}
#endif
#endif /* GPT_EXPERIMENT_H */
