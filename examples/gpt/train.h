/* train.h - the training loop of the example trainer, usable from main() (cli.c) and tests.
 *
 * One loop for any backend (backend.h): micro-batches of B x T tokens accumulated `accum` times,
 * global-norm clipping, the optimizer set of optim.h with the warm-up + cosine schedule, the
 * head-geometry diagnostics of rownorm.h, evaluation on the validation split, a CSV log,
 * checkpoints (checkpoint.h) with exact resume, SIGINT handling and a NaN/Inf stop.
 *
 * Diagnostics (SPEC §1.2, §1.3, §3), all on the head step S of the latest update:
 *   every update          the O(Vd) bracket lo <= D(S) <= hi (rn_row_diameter_bounds)
 *   every diam_every      the exact D(S) (rn_row_diameter_ws, workspace allocated once), and
 *   and the last update   always at the last update
 *   every evaluation      the Hilbert RMS of S on a fixed validation panel: the head inputs of the
 *                         first panel_seqs validation sequences (be->ops->head_inputs), N x d
 *
 * CSV log: first the run's whole recipe as comment lines "# key=value" (model shape and
 * parameter count, batch, steps, seed, every optimizer's rate, betas, eps, decay, schedule,
 * diagnostics; values hold no comma; read with e.g. pandas' comment='#'), then one header line,
 * then one row per event (empty cells are values not measured):
 *   kind,step,tokens,loss,lr,ms,tok_per_s,gflops,grad_norm,d_lo,d_hi,d_exact,val_loss,hilbert_rms,head_lr
 *   kind "train": one per update (step = updates done, tokens = tokens trained on so far,
 *                 loss = mean of the micro-batch losses, lr = the block-matrix (Muon) rate,
 *                 head_lr = the head's rate at this update: its peak times the schedule)
 *   kind "eval":  one per evaluation (val_loss; hilbert_rms empty at step 0)
 *   kind "final": the run's final numbers: val_loss and hilbert_rms of the last evaluation and
 *                 the exact D of the last update's head step (d_exact)
 * Numbers are printed with %.17g, so they read back exactly.
 * A write, flush or close of a log (this one or sv_log) that fails, e.g. on a full disk or
 * /dev/full, fails the run with a message naming the log.
 *
 * Resume: every value read from the checkpoint is checked before it is used, with the command
 * line's rules (ranges of --layers .. --accum, --steps, the recipe's flags; finite numbers), the
 * optimizer step counters against OPTIM_MAX_STEPS (optim.h), and the type and size of every
 * param.* / opt.* field against model.config before the model is allocated; each error names
 * the file and the field. Checkpoints are written with data_write_file_atomic (data.h): only
 * over a regular file, through symlinks, synced to the disk before the run goes on.
 *
 * Data parallel (comm.h; README.md "Many processes"): with a communicator of n ranks, `batch` is
 * the GLOBAL micro-batch: every rank draws the same B sequences from the same sampler as a single
 * process would, and computes rows gpt_comm_split(B, rank, n) of them; the gradient block is
 * weighted by rows/B, all-reduced once per update (one call on the whole block), then clipped
 * and stepped; AdamW / RowNorm / clipping run on every rank with identical inputs, each Muon
 * matrix on its owner (optim_dist), and share() completes the parameters. So n ranks reproduce
 * the single-process run of the same flags up to floating-point reassociation. Rank 0 alone
 * prints, logs and writes checkpoints (the single-process format: the owners' states are gathered
 * to it); evaluation is split over the ranks the same way; the head diagnostics run on rank 0.
 * Stops (SIGINT/SIGTERM/SIGUSR1, errors, non-finite losses) are agreed by an all-reduce every
 * update, so no rank is left waiting in a collective.
 *
 * Optional (sv_tensors): at every evaluation after step 0, the singular-value quantiles of the
 * chosen tensors' Muon momentum buffers (SPEC §2.5, optim_momentum_spectrum), on the console and
 * in sv_log: step,tensor,q10,q50,q90,jordan_steps_q50 (sigma of M/||M||_F; least K of Jordan's
 * schedule with f_K(q50) >= 0.7).
 *
 * Optional (norms_every > 0, issue 50): ||W||_F, ||W||_2, its row-magnitude and row-coherence
 * factors and H_inf of every block matrix, at step 0, every norms_every updates and after the
 * last, in norms_log (spectra.h has the columns). Off, nothing is computed. A resume appends.
 */
#ifndef GPT_TRAIN_H
#define GPT_TRAIN_H

#include <stdint.h>
#include <stdio.h>

#include "backend.h"
#include "comm.h"
#include "optim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct train_options {
    const gpt_backend_ops *backend; /* NULL: the CPU backend */
    const char *data_dir;           /* tokenizer.bin, train.bin, val.bin (default build/gpt/data) */
    gpt_config model;               /* vocab_size comes from the tokenizer; seq_len = seq */
    int batch, seq, accum;          /* micro-batch B x T, accumulated accum times per update */
    long steps;                     /* updates in the schedule */
    long stop_at;                   /* > 0: stop (saving a checkpoint) after this many updates */
    uint64_t seed;                  /* initialisation and training-data order */
    optim_recipe recipe;
    int eval_every;                 /* evaluate every N updates (and at step 0 and the end) */
    int eval_batches;               /* validation batches per evaluation (0: the whole split) */
    int panel_seqs;                 /* sequences in the Hilbert RMS panel */
    int diam_every;                 /* exact D every N updates (and at the end) */
    const char *log_path;           /* CSV log (NULL: none) */
    const char *sv_tensors;         /* momentum spectra at every evaluation: comma-separated tensor
                                       names ("layers.0.wq,lm_head") or "all" (NULL: none) */
    const char *sv_log;             /* CSV of those spectra (NULL: console only) */
    int norms_every;                /* > 0: the block matrices' norms and spectra (spectra.h) at step 0,
                                       every N updates and at the last, into norms_log (0: none) */
    const char *norms_log;          /* CSV of those (needed when norms_every > 0) */
    const char *ns_log;             /* --ns-steps auto: CSV of each budget (step,tensor,rows,cols,q50,
                                       steps; NULL: console only) */
    const char *ckpt_path;          /* checkpoint written at ckpt_every, at the end, on SIGINT */
    int ckpt_every;                 /* 0: only at the end / on stop / on SIGINT */
    const char *resume;             /* checkpoint to resume from (NULL: fresh run) */
    int log_every;                  /* a console line every N updates (0: none) */
    int progress;                   /* progress bar + ETA: 1 on, 0 off, -1 when stdout is a tty */
    double progress_every;          /* without the bar (stdout not a terminal): a plain progress line
                                       when this many seconds passed without a console line (30;
                                       0: none), even when quiet */
    int line_open;                  /* the caller left the console line open ("... "): the first
                                       progress line starts a new one */
    const char *run_name;           /* prefix of console lines (NULL: none) */
    int quiet;                      /* no console lines (errors are in train_result; the bar as set) */
    int host_optim;                 /* CUDA backend: keep the optimizer on the host (default: device) */
    /* data parallel (NULL comm: one process) */
    gpt_comm *comm;                 /* host communicator: single or MPI */
    gpt_comm *dcomm;                /* device communicator (NCCL) for the CUDA device optimizer */
    int no_muon_split;              /* every rank steps every Muon matrix (default: one owner each) */
    int shard_head;                 /* RowNorm head: each rank steps its vocabulary rows */
    /* sampling after training (sample_tokens > 0) */
    const char *prompt;
    int sample_tokens;
    double temperature;             /* 0: greedy */
    uint64_t sample_seed;
} train_options;

/* Defaults: data build/gpt/data, model 2 layers x d 128 x 2 heads, B 8, T 64, accum 1, 200
 * steps, seed 1, head AdamW recipe, eval every 50 updates on 8 batches, panel 8 sequences,
 * exact D every 10 updates, console line every update. */
train_options train_default_options(void);

typedef struct train_step_rec {
    long step;
    double tokens, loss, lr, head_lr, ms, grad_norm, d_lo, d_hi, d_exact; /* ms: the update alone, without the head
                                                                           * diagnostics; d_exact NaN when not computed */
    double opt_ms; /* the optimizer's part of ms: its step and share() (the NS budget included) */
} train_step_rec;

typedef struct train_eval_rec {
    long step;
    double tokens, val_loss, hilbert_rms; /* hilbert_rms NaN at step 0 */
} train_eval_rec;

typedef enum {
    TRAIN_DONE = 0,        /* ran to the end of the schedule */
    TRAIN_STOPPED = 1,     /* stop_at reached (checkpoint saved) */
    TRAIN_INTERRUPTED = 2, /* SIGINT (checkpoint saved) */
    TRAIN_FAILED = 3       /* error: message in train_result.error */
} train_outcome;

typedef struct train_result {
    train_outcome outcome;
    gpt_status status;     /* why the run failed (outcome TRAIN_FAILED), else GPT_OK */
    char error[512];
    long first_step;       /* updates already done when this process started (resume) */
    long last_step;        /* updates done at the end */
    int n_steps, n_evals;
    train_step_rec *steps; /* updates run by this call, in order */
    train_eval_rec *evals;
    double final_val_loss, final_diameter, final_hilbert_rms; /* NaN unless outcome is DONE */
    double seconds;
    int agreed;            /* multi-rank: every rank knows of the failure (else main aborts the job) */
    int progress_lines;    /* plain progress lines printed (progress_every) */
} train_result;

/* Runs (or resumes) one training run. Always fills *res (free it with train_result_free);
 * returns res->outcome. */
train_outcome train_run(const train_options *opt, train_result *res);
void train_result_free(train_result *res);

/* The checks a resume runs on a checkpoint before anything is allocated for the model (tests,
 * fuzzing): the run settings are read into *opt (model, steps, batch, seq, accum, seed, recipe;
 * each in its flag's range), then every param.* / opt.* field is checked against model.config.
 * The comparison with the tokenizer's vocabulary, done by a resume in between, is left to the
 * caller (opt->model.vocab_size). Returns GPT_OK, or the status with the message in res->error
 * (res->outcome TRAIN_FAILED); *opt is written only on success. */
gpt_status train_check_checkpoint(const ckpt_reader *ck, train_options *opt, train_result *res);

/* Installs a SIGINT handler that asks running loops to save a checkpoint and stop (a second
 * SIGINT kills). Also clears a pending request. */
void train_install_sigint(void);


#ifdef __cplusplus
}
#endif
#endif /* GPT_TRAIN_H */
