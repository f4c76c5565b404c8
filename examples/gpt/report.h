/* report.h - everything the experiment writes, made from its runs and their logs: reading a log
 * back, the loss–step-size frontier's arithmetic, the seed statistics (means, sds, paired 95 %
 * intervals), its console lines, table.md, results.csv and the plots. Used by the experiment
 * (experiment.c, which makes the runs and chooses the rates) and by a single run's plots (cli.c). */
#ifndef GPT_REPORT_H
#define GPT_REPORT_H

#include <stddef.h>

#include "optim.h"
#include "status.h"
#include "train.h"

#ifdef __cplusplus
extern "C" {
#endif

#define EXP_MAX_RATES 32  /* per arm, after extension */
#define EXP_MAX_RECIPE 64 /* "# key=value" lines kept from a log */

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

/* Reads a log written by train_run: GPT_OK, or the status with a message (missing file, bad
 * header, malformed row or recipe line). */
gpt_status exp_log_read(const char *path, exp_log *out, char *err, size_t errlen);
void exp_log_free(exp_log *log);
/* The value of a recipe key ("head_lr"), NULL when the log has none. */
const char *exp_log_recipe(const exp_log *log, const char *key);

/* Parses a comma-separated list of rates (each finite and > 0, at most EXP_MAX_RATES) into
 * out[], sorted ascending without repeats, their number in *count; else GPT_ERR_DOMAIN (or
 * GPT_ERR_SIZE: too many) with a message. */
gpt_status exp_parse_rates(const char *list, double *out, int *count, char *err, size_t errlen);

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
/* The usable points (x > 0, finite loss) of n, as indices in idx[] sorted by x; their number. */
int exp_frontier_order(const double *x, const double *loss, int n, int *idx);

/* Writes loss.svg, diameter.svg and hilbert_rms.svg into dir from n_arms arms of n logs each
 * (logs[arm * n + k]; mean per arm across the n seeds, point by point), arm names and colours
 * from names[] / colors[], the caption under each plot; with n > 1 each point's spread over the
 * seeds (min … max). GPT_OK, or the status with a message. */
gpt_status exp_write_plots(const char *dir, const exp_log *logs, int n_arms, int n, const char *const *names,
                    const char *const *colors, const char *caption, char *err, size_t errlen);

/* A growing text: sb_printf appends (failed set, and later appends ignored, when out of memory). */
typedef struct {
    char *s;
    size_t len, cap;
    int failed;
} sbuf;
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
void sb_printf(sbuf *b, const char *fmt, ...);

/* The recipe of a log in words (model, tokens per run, block and embedding rates, schedule), one
 * paragraph or (caption) lines separated by '\n'. */
void exp_describe_recipe(sbuf *b, const exp_log *L, int caption);
/* The same as a plot caption; malloc'd, NULL when out of memory. */
char *exp_recipe_caption(const exp_log *log);

/* The colour of an arm in every plot: AdamW blue, RowNorm red, Muon green. */
const char *exp_head_color(optim_head_kind head);


/* ---- the experiment's runs (experiment.c makes them; what it says of them is made here) ---- */

/* The two arms: their names in every table and line, their head optimizers. */
extern const char *const exp_arm_name[2];        /* "AdamW head", "RowNorm head" */
extern const optim_head_kind exp_arm_head[2];    /* OPTIM_ADAMW, OPTIM_ROWNORM */

/* One run of the experiment. */
typedef struct exp_run {
    int arm;
    double rate;
    long seed;
    int ok;          /* 1 ran to the end; 0 failed (error says why) */
    char error[512];
    exp_final fin;   /* from the log (rank 0); val_loss on every rank */
    char log[1100];
} exp_run;

/* An arm's head rates: fixed (--lr-head-*) or swept, the best's index, extended at an edge. */
typedef struct exp_grid {
    double rate[EXP_MAX_RATES];
    int n, fixed, extended, best, at_edge;
} exp_grid;

/* One sweep point: the runs of an arm at a rate over the first k seeds (those that finished). */
typedef struct exp_point {
    int n, failed;                  /* finished runs, failed runs */
    double loss, loss_sd, loss_min, loss_max;
    double d, d_min, d_max, rms, rms_min, rms_max; /* means (arithmetic) and extremes */
} exp_point;

/* The experiment so far: its runs, the arms' grids, the seeds, the chosen and the paper's rates. */
typedef struct exp_results {
    const char *out_dir;
    exp_run *runs;
    int n_runs;
    exp_grid grid[2];
    long seed0;       /* seeds seed0..seed0+seeds-1; the sweeps use the first sweep_seeds */
    int seeds, sweep_seeds, sweep_extend;
    double best[2], paper[2];
    int paper_same;   /* the best rates are the paper's */
} exp_results;

/* The run (arm, rate, seed), NULL if not made. */
exp_run *exp_find_run(const exp_results *x, int arm, double rate, long seed);
/* The point of arm at rate over the first k seeds. */
exp_point exp_point_at(const exp_results *x, int arm, double rate, int k);
/* The names of a run: its log and checkpoint in out_dir, its console label. */
void exp_run_files(const char *out_dir, int arm, double rate, long seed, char *log, size_t log_cap, char *ckpt,
                   size_t ckpt_cap, char *name, size_t name_cap);

/* The console: each line starts "experiment: ". An error (to stderr). */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 1, 2)))
#endif
void exp_say_error(const char *fmt, ...);
/* Before the runs: what the tables measure (with definitions), the outputs, each arm's grid and
 * the plan, from the recipe's schedule. */
void exp_say_plan(const exp_results *x, const optim_recipe *recipe, int definitions);
/* Run k of planned starting (eta < 0: no estimate yet); one_line: its result follows on the line. */
void exp_say_run_start(int k, int planned, int arm, double rate, long seed, int sweep, double eta, int one_line);
/* The run u ended with outcome (label name, seconds); err: when it finished but its log does not
 * read back as the run asked for, why (else NULL). */
void exp_say_run_end(const exp_run *u, const char *name, train_outcome outcome, int one_line, int sweep,
                     const char *err, double seconds);
/* An arm's best rate at the edge of its grid: rate added beside edge. */
void exp_say_extension(int arm, double edge, double rate);
/* The runs made, and their time. */
void exp_say_done(int made, double seconds);

/* The experiment's outputs in x->out_dir from its runs and the tuned pairs' logs: table.md (also
 * printed), results.csv, frontier_diameter.svg, frontier_rms.svg, loss.svg, diameter.svg,
 * hilbert_rms.svg (experiment.h). GPT_OK, or the status (its message on stderr). */
gpt_status exp_report(const exp_results *x);

#ifdef __cplusplus
}
#endif
#endif /* GPT_REPORT_H */
