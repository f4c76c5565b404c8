/* optim.h - the trainer's optimizer set: one optimizer per tensor, the learning-rate schedule,
 * gradient clipping and the LM-head step S used by the diagnostics (SPEC.md §3, §1.5, §1.6, §2.2).
 *
 * Assignment (SPEC §3), by the tensor kinds of model.h:
 *   block matrices   Muon (muon.h; Nesterov, EMA momentum 0.95, Jordan x 5, scale sqrt(max(1, m/n)),
 *                    decoupled weight decay 0.1), Muown (--block muown) or NorMuon (--block normuon:
 *                    Muon's update normalised per row by its second moment, beta2 0.95, eps 1e-8,
 *                    rescaled to the Muon update's Frobenius norm), optionally with the spectral
 *                    cap (--cap growth|always; SPEC §2.4, reconstructed from the abstract; Muon and
 *                    NorMuon) and per-head Newton-Schulz of the attention matrices (--ns-per-head)
 *   embedding        AdamW (muon.h)
 *   LM head          AdamW (arm A), RowNorm (arm B, rownorm.h) or Muon
 * Every tensor's peak rate is multiplied by the same schedule factor (optim_lr_factor).
 *
 * The head step S (V x d) is the signed change of the head made by the step, excluding decoupled
 * weight decay: the head's stepper writes it (step_out of rn_rownorm_step, muon_adamw_step,
 * muon_step; for AdamW S = -lr m_hat/(sqrt(v_hat) + eps), SPEC §1.6).
 *
 * Where the set runs (gpt_optimizer below): the host (this file, on the backend's host blocks)
 * or the device of a backend that has its own (cuda_train.cu), behind one function table.
 *
 * Nothing here allocates inside optim_step; optim_create allocates every state and buffer.
 */
#ifndef GPT_OPTIM_H
#define GPT_OPTIM_H

#include "backend.h"
#include "checkpoint.h"
#include "comm.h"
#include "model.h"

#include "muon.h"
#include "rownorm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The update rule of a tensor, one enum: the head's choice is one of the first three (its number
 * is the recipe's, in checkpoints: recipe.head), block matrices take Muon or Muown, the embedding
 * AdamW. */
typedef enum { OPTIM_ADAMW = 0, OPTIM_ROWNORM = 1, OPTIM_MUON = 2, OPTIM_MUOWN = 3 } optim_kind;
/* The head's optimizer: OPTIM_ADAMW, OPTIM_ROWNORM or OPTIM_MUON. */
typedef optim_kind optim_head_kind;
/* Block matrices: Muon; Muown (row magnitudes as their own variable); NorMuon (Muon, then the
 * per-row second-moment normalisation of the orthogonalised update, muon_config.normuon). */
typedef enum { OPTIM_BLOCK_MUON = 0, OPTIM_BLOCK_MUOWN = 1, OPTIM_BLOCK_NORMUON = 2 } optim_block_kind;

/* Everything that decides the optimizer's arithmetic (stored in checkpoints). */
typedef struct optim_recipe {
    optim_head_kind head;
    optim_block_kind block;
    muon_cap_mode cap;     /* spectral cap on block matrices (Muon only) */
    int ns_steps;          /* Newton-Schulz steps (Jordan schedule); OPTIM_NS_AUTO: budgeted per
                              matrix from its momentum's spectrum (--ns-steps auto, below) */
    int ns_every;          /* --ns-steps auto: budget every this many updates (--ns-every) */
    int ns_per_head;       /* 1: Q, K, V orthogonalised per attention head (split_rows = n_heads),
                              the output projection per head's input columns (split_cols = n_heads);
                              each head's block takes its own shape scale (--ns-per-head) */
    muon_ns_precision ns_precision; /* MUON_NS_FP32 or MUON_NS_BF16 (--ns-precision): the Muon /
                              Muown Newton-Schulz arithmetic */
    double muon_lr;        /* block matrices, peak */
    double muon_beta;
    double muon_wd;
    double embed_lr, embed_beta1, embed_beta2, embed_eps, embed_wd;
    double head_lr;        /* peak rate of the head, whatever its optimizer */
    double head_beta1;     /* AdamW beta1, RowNorm beta, Muon momentum */
    double head_beta2;     /* AdamW only */
    double head_eps;       /* AdamW eps, RowNorm eps */
    double head_wd;
    double warmup_frac;    /* linear warm-up over this share of the updates */
    double final_frac;     /* cosine decay to this share of the peak */
    double clip;           /* global gradient-norm clip (<= 0: off) */
} optim_recipe;

/* The defaults for a head arm (documented in README.md):
 *   Muon (blocks): lr 0.02, beta 0.95 Nesterov, wd 0.1, Jordan x 5, scale sqrt(max(1, m/n))
 *   AdamW (embedding): lr 4e-3, betas (0.9, 0.95), eps 1e-10, wd 0
 *   head AdamW: lr 4e-3, betas (0.9, 0.999), eps 1e-10, wd 0.1   (paper, SPEC §1.6)
 *   head RowNorm: lr 3.2e-3, beta 0.95, eps 1e-8, wd 0            (paper, SPEC §1.5)
 *   head Muon: lr = the block rate, beta 0.95, wd 0.1
 *   schedule: warm-up 10 %, cosine to 10 % of peak; clip 1.0 */
optim_recipe optim_default(optim_head_kind head);

const char *optim_head_name(optim_head_kind k);   /* "adamw", "rownorm", "muon" */
int optim_head_parse(const char *s, optim_head_kind *out); /* 1 on success */
const char *optim_block_name(optim_block_kind k); /* "muon", "muown", "normuon" */
int optim_block_parse(const char *s, optim_block_kind *out); /* 1 on success */

/* Schedule factor of update `step` (0-based) out of `total`: (step+1)/W for step < W =
 * ceil(warmup_frac * total); then final + (1 - final) (1 + cos(pi p))/2 with p going from 0 at
 * step W to 1 at the last update (so the last update runs at final_frac of the peak). */
double optim_lr_factor(const optim_recipe *r, long step, long total);

/* A rownorm.h status as the trainer's (RN_ERR_NONFINITE: GPT_ERR_RANGE). */
gpt_status optim_rn_status(rn_status rs);

typedef struct optim_slot {
    gpt_tensor t;
    optim_kind kind;
    double peak_lr;
    int ns_k;              /* --ns-steps auto: this matrix's budgeted steps (0 before the first) */
    double ns_q50;         /* ... and the median sigma / ||M||_F it was chosen from */
    muon_adamw_state adamw;
    muon_adamw_config adamw_cfg;
    muon_state muon;
    muown_state muown;
    muon_config muon_cfg;
    muown_config muown_cfg;
    rn_rownorm_state rownorm;
    rn_rownorm_config rownorm_cfg;
} optim_slot;

/* Data-parallel settings (train.c; NULL or nranks 1 = one process, everything local):
 *   split_muon   each block matrix (Muon or Muown) is stepped by one owner rank, chosen by
 *                muon_assign_owners (NS cost balanced); its momentum exists on the owner only;
 *                the others get the new weights from share(). 0: every rank steps every matrix.
 *   shard_head   RowNorm head only: rank r steps vocabulary rows gpt_comm_split(V, r, nranks)
 *                (its B rows only), the column statistics of the projections are all-reduced
 *                through comm (d-vectors), and share() completes the head and its step S.
 * Everything else (embedding AdamW, an AdamW or Muon head, clipping) runs on every rank with
 * identical inputs (the all-reduced gradient block) and gives identical results. */
typedef struct optim_dist {
    int rank, nranks;
    int split_muon;
    int shard_head;
    gpt_comm *comm; /* host communicator (shard_head's d-vector all-reduces) */
} optim_dist;

typedef struct optim_set {
    optim_recipe recipe;
    gpt_config model;
    int n_slots;
    optim_slot *slots;
    int head_slot;         /* index of lm_head */
    float *head_step;      /* S of the last step, V x d (zero before the first step) */
    float **grad_ptrs;     /* for clipping */
    size_t *grad_sizes;
    muon_layer *muon_layers; /* this step's Muon matrices, stepped in one muon_step_layers call */
    int *muon_layer_slot;    /* the slot of each */
    void *muon_ws;           /* their one workspace (the states have none) */
    size_t muon_ws_bytes;
    double last_grad_norm; /* before clipping */
    double last_lr_factor;
    /* data-parallel layout (optim_create_dist; one process: rank 0 of 1, owner all -1) */
    int rank, nranks;
    gpt_comm *comm;
    int *owner;            /* per slot: the rank that steps it, or -1 (every rank) */
    double *load;          /* per rank: summed NS cost of its matrices (muon_assign_owners) */
    int head_sharded;      /* the head's rows [head_lo, head_hi) are this rank's */
    size_t head_lo, head_hi;
    gpt_comm_segment *segs;      /* parameter segments share() completes after a step */
    int n_segs;
    gpt_comm_segment *step_segs; /* head-step S segments (sharded head), offsets into head_step */
    int n_step_segs;
    double *xbuf;          /* sharded head: the column sums all-reduced in place (rownorm.h 1.5b) */
} optim_set;

/* 1 if this rank steps slot i (and holds its optimizer state). */
int optim_owns(const optim_set *o, int i);

/* Errors: every function below that takes (err, errlen) returns a gpt_status with a message in
 * err (status.h): a rate outside the libraries' domain GPT_ERR_DOMAIN, an inconsistent recipe
 * GPT_ERR_CONFIG, a failed exchange between ranks GPT_ERR_IO, a NaN/Inf gradient GPT_ERR_RANGE,
 * a checkpoint field out of range GPT_ERR_CORRUPT (another optimizer kind: GPT_ERR_MISMATCH),
 * out of memory GPT_ERR_NOMEM; what checkpoint.h's readers return is passed on. */

/* Allocates every state for the tensors of `model` (resolved) with weights `params` (Muown reads
 * the initial row norms). GPT_OK, or a status with a message in err. */
gpt_status optim_create(optim_set *o, const optim_recipe *r, const gpt_config *model, const float *params,
                        char *err, size_t errlen);
/* As optim_create for one rank of a data-parallel run (dist NULL: optim_create). Every rank
 * must pass the same model, recipe and dist (except rank) so that they agree on the owners. */
gpt_status optim_create_dist(optim_set *o, const optim_recipe *r, const gpt_config *model, const float *params,
                             const optim_dist *dist, char *err, size_t errlen);
void optim_free(optim_set *o);
/* The rates against muon.h's and rownorm.h's domain: lr <= MUON_LR_MAX and lr * weight decay <= 1
 * (the decoupled decay factor 1 - lr wd stays in [0, 1]). optim_lr_wd_check names the two values
 * with lr_what / wd_what (the flags) in its message; optim_recipe_check checks the block
 * matrices, the embedding and, with with_head, the head (--lr-muon / --wd-muon, ...). Both
 * return GPT_OK, or GPT_ERR_DOMAIN with the message in err. optim_create runs optim_recipe_check
 * first. */
gpt_status optim_lr_wd_check(const char *lr_what, double lr, const char *wd_what, double wd, char *err,
                             size_t errlen);
gpt_status optim_recipe_check(const optim_recipe *r, int with_head, char *err, size_t errlen);

/* One update, `step` of `total` (0-based): clip the gradient block by its global norm, then every
 * tensor's optimizer at peak * optim_lr_factor, and the head step S into o->head_step.
 * grads is modified by clipping. GPT_OK, or a status with a message (a non-finite gradient:
 * GPT_ERR_RANGE, and nothing was updated). */
gpt_status optim_step(optim_set *o, float *params, float *grads, long step, long total, char *err, size_t errlen);

/* The Newton-Schulz budget (--ns-steps auto; issue 49, SPEC 2.5). Every recipe.ns_every updates
 * (first at that update: before it, the burn-in, Jordan x OPTIM_NS_AUTO_START) each Muon
 * and Muown matrix this rank steps gets the fewest Jordan steps K (at most OPTIM_NS_AUTO_MAX)
 * whose transfer lifts the median singular value of its Frobenius-normalised momentum to
 * OPTIM_NS_AUTO_TAU: f_K(sigma_50) >= tau (the median matters most, SPEC 2.5; 0.7 is the low
 * edge of the band Jordan x 5 leaves the values in). The spectrum is the Gram path's
 * (muon_singular_values_gram: ~30 ms for a 384 x 1024 matrix). The budget is per matrix, over
 * the whole matrix even when --ns-per-head cuts it into blocks. */
#define OPTIM_NS_AUTO 0
#define OPTIM_NS_AUTO_START 5
#define OPTIM_NS_AUTO_EVERY 50 /* ns_every's default */
#define OPTIM_NS_AUTO_MAX 10
#define OPTIM_NS_AUTO_TAU 0.7
#define OPTIM_NS_AUTO_Q 0.5
/* The budget rule for one momentum M (rows x cols, ld cols): K in [1, OPTIM_NS_AUTO_MAX] (the
 * most when even that falls short of tau), with *q50 the median sigma / ||M||_F; 0 when M is
 * zero (no spectrum: the caller keeps its steps), -1 when the spectrum cannot be computed. */
int optim_ns_budget_steps(const float *M, size_t rows, size_t cols, double *q50);
/* At update `step` of an auto run, the budget of every owned Muon / Muown matrix (slots' ns_k,
 * ns_q50 and their configs' ns.steps); elsewhere nothing. Returns 1 when it budgeted, 0 when
 * not, -1 (with a message) when a spectrum failed. optim_step calls it first. */
int optim_ns_budget(optim_set *o, long step, char *err, size_t errlen);

/* The longest schedule (--steps) and the largest optimizer step counter a checkpoint may hold:
 * a counter counts the updates done, at most one per update, so it never exceeds the schedule;
 * with this bound a resumed run can add another OPTIM_MAX_STEPS updates and stay far below the
 * overflow of the libraries' counters (long long / unsigned long long) and within doubles'
 * exact integers. */
#define OPTIM_MAX_STEPS (1L << 30)

/* Checkpoint fields "recipe.*" (every field of the recipe). load returns GPT_OK or a status with a message
 * naming the file and the field, and checks every value as the command line does: head, block,
 * cap among the known kinds, ns_steps in [0, 100] (--ns-steps; 0 = OPTIM_NS_AUTO), ns_every in
 * [1, OPTIM_MAX_STEPS] (absent before it existed: OPTIM_NS_AUTO_EVERY), ns_per_head 0 or 1 (absent in a
 * checkpoint written before it existed: 0), every rate, decay, eps and the clip finite in
 * [0, 1e30], the betas in [0, 1), warmup_frac and final_frac in [0, 1]. On error *r is untouched. */
void optim_recipe_save(const optim_recipe *r, ckpt_writer *w);
gpt_status optim_recipe_load(optim_recipe *r, const ckpt_reader *rd, char *err, size_t errlen);

/* Checkpoint fields "opt.<tensor>.*" and "opt.head_step". load returns GPT_OK or a status with a
 * message.
 * A Muon tensor's "row_v" (NorMuon's per-row second moment, rows doubles) is written for every
 * Muon tensor; a checkpoint written before it existed lacks it and resumes as zeros, except
 * under NorMuon, which refuses it (its second moment would restart from zero).
 * optim_load reads what this rank holds (the states of the slots it owns, its rows of a sharded
 * head), so a checkpoint of any number of ranks resumes on any number of ranks. */
void optim_save(const optim_set *o, ckpt_writer *w);
gpt_status optim_load(optim_set *o, const ckpt_reader *r, char *err, size_t errlen);
/* Checks, without allocating, every "opt.*" field optim_load will read for a set of recipe r on
 * model (resolved): each tensor's optimizer kind is the one r gives it, each step counter is in
 * [0, OPTIM_MAX_STEPS], each array has its type and size for the tensor's shape, and every value
 * is finite (AdamW's second moment v >= 0 too). Call it before creating the model: a file whose
 * fields do not match its model.config fails here, whatever model it claims. GPT_OK, or a
 * status with a message naming the file and the field. */
gpt_status optim_check_checkpoint(const optim_recipe *r, const gpt_config *model, const ckpt_reader *rd, char *err,
                                  size_t errlen);
/* optim_save for a data-parallel set, collective over comm: rank 0's writer receives every field
 * in optim_save's order (the states of matrices owned elsewhere are serialised by their owners
 * and sent to rank 0; a sharded head's B rows are gathered), so the file is the one a single
 * process writes. Other ranks' writers get nothing. GPT_OK, or a status with a message (every
 * rank fails together only if comm does; the caller agrees on the outcome). */
gpt_status optim_save_comm(const optim_set *o, ckpt_writer *w, gpt_comm *comm, char *err, size_t errlen);

/* SPEC §2.5 diagnostic: singular values of the Frobenius-normalised momentum buffer of slot i
 * (Muon / Muown tensors), their 10/50/90 % quantiles, and the least number of Jordan steps K with
 * f_K(sigma_50) >= 0.7 (-1 if none within 100). Allocates (muon_singular_values): for evaluations,
 * not for every step. Returns 0, 1 when the slot has no momentum or it is still zero, -1 on error. */
typedef struct optim_spectrum {
    double q10, q50, q90;
    int ns_steps_q50;
} optim_spectrum;
int optim_momentum_spectrum(const optim_set *o, int slot, optim_spectrum *out);

/* First tensor of the block (params or grads layout) holding a NaN/Inf: its index in [0,
 * n_tensors), or -1 if all are finite. */
int optim_first_nonfinite(const gpt_config *model, const float *block);

/* ---- where the optimizer set runs ------------------------------------------------------------
 * One update of the training loop, after the backward passes of its micro-batches:
 *     o->ops->reduce(o, scale, ...)   gradients *= scale (the micro-batch average and this rank's
 *                                     share of the batch), then one all-reduce across the ranks
 *     o->ops->step(o, step, total, ...)   clipping and every owned tensor's step (optim_step)
 *     o->ops->share(o, ...)           the parameters (and head-step rows) stepped by their owners
 *     o->ops->head_step(o)            S of this step on the host (rank 0's diagnostics)
 * download brings the states to o->set's host copies (checkpoints, spectra); upload is its
 * inverse (create does it once). The host implementation steps the backend's host blocks (a
 * backend whose blocks are mirrors of device memory gets pull_grads before and push_params
 * after); a backend with its own (gpt_backend_ops.create_optimizer) steps where its parameters
 * live. Each returns GPT_OK or a status: reduce, step and share with a message in err; upload and
 * download the copy's (GPT_ERR_BACKEND: the device failed). */
typedef struct gpt_optimizer gpt_optimizer;
typedef struct gpt_optimizer_ops {
    const char *name;  /* "host", "cuda" */
    int agreed_errors; /* a step error happens on every rank alike (identical inputs) */
    gpt_status (*reduce)(gpt_optimizer *o, double scale, char *err, size_t errlen);
    gpt_status (*step)(gpt_optimizer *o, long step, long total, char *err, size_t errlen);
    gpt_status (*share)(gpt_optimizer *o, char *err, size_t errlen);
    const float *(*head_step)(gpt_optimizer *o); /* NULL if it cannot be read back */
    gpt_status (*upload)(gpt_optimizer *o);
    gpt_status (*download)(gpt_optimizer *o);
    void (*destroy)(gpt_optimizer *o);
} gpt_optimizer_ops;

/* What a run gives its optimizer. */
typedef struct gpt_optimizer_env {
    gpt_backend *be;
    optim_set *set;   /* the host states (created and, on resume, loaded before) */
    gpt_comm *comm;   /* host communicator (never NULL) */
    gpt_comm *dcomm;  /* device communicator (NCCL) or NULL */
    int host_only;    /* --host-optim: the host implementation whatever the backend */
} gpt_optimizer_env;

/* The common head of every implementation. comm: the communicator of reduce and share. */
struct gpt_optimizer {
    const gpt_optimizer_ops *ops;
    optim_set *set;
    gpt_backend *be;
    gpt_comm *comm;
};

/* The backend's optimizer (be->ops->create_optimizer) or the host one; when a backend's own
 * declines (a recipe or layout it cannot run), the host one with a reason in note (else note is
 * ""). GPT_OK or a status with a message. */
gpt_status gpt_optimizer_create(const gpt_optimizer_env *env, gpt_optimizer **out, char *note, size_t notelen,
                                char *err, size_t errlen);
/* The host implementation; mirrored: the backend's host blocks mirror device memory (pull_grads
 * before the step, push_params after). */
gpt_status gpt_host_optimizer_create(const gpt_optimizer_env *env, int mirrored, gpt_optimizer **out, char *err,
                                     size_t errlen);
void gpt_optimizer_destroy(gpt_optimizer *o); /* NULL is fine */

#ifdef __cplusplus
}
#endif
#endif /* GPT_OPTIM_H */
