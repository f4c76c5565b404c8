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

#include "report.h"
#include "train.h"

#ifdef __cplusplus
extern "C" {
#endif


/* The default sweeps: factors of 2 from the paper's rates up (so the paper pairs reuse the sweep's
 * runs); at the demo's size each arm's best lies inside its grid or one extension away. */
#define EXP_SWEEP_ADAMW "4e-3,8e-3,1.6e-2,3.2e-2,6.4e-2"
#define EXP_SWEEP_ROWNORM "3.2e-3,6.4e-3,1.28e-2,2.56e-2,5.12e-2"

/* The experiment's settings (cli.c fills them from the command line). */
typedef struct exp_options {
    train_options opt;    /* every run's settings; the head optimizer, its rate and seed are set per run */
    const char *out_dir;  /* where the logs, table.md, results.csv and the plots go */
    int seeds;            /* seeds S..S+seeds-1 at the best and at the paper's rates (S = opt.seed) */
    int sweep_seeds;      /* seeds at every rate of the sweeps; the best rate has the lowest mean (0 or 1: S alone; at most seeds) */
    int sweep_extend;     /* grid extensions when a best rate is at an edge */
    const char *sweep[2]; /* the AdamW / RowNorm arm's rates, comma-separated (NULL: the defaults above) */
    double head_lr[2];    /* a fixed head rate of the AdamW / RowNorm arm (0: sweep) */
} exp_options;

/* The whole experiment: sweeps, pairs, tables, plots. Returns a process exit code. */
int experiment_main(const exp_options *eo);
#ifdef __cplusplus
}
#endif
#endif /* GPT_EXPERIMENT_H */
