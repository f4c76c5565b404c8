/* train.c - the example trainer's one training loop for any backend (train.h): evaluation,
 * diagnostics, logging, checkpoints and sampling. The command line and main() are cli.c; the
 * paired experiment is experiment.c. */
#define _POSIX_C_SOURCE 200809L
#include "train.h"

#include "checkpoint.h"
#include "data.h"
#include "tokenizer.h"
#include "spectra.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- small helpers ------------------------------------------------------------------------ */

static volatile sig_atomic_t train__sigint;

static void on_sigint(int sig)
{
    if (train__sigint) signal(sig, SIG_DFL); /* a second Ctrl-C kills at once */
    train__sigint = 1;
}

void train_install_sigint(void)
{
    train__sigint = 0;
    signal(SIGINT, on_sigint);
#ifdef GPT_USE_MPI
    /* mpirun turns its own SIGINT/SIGTERM into SIGTERM to every rank (then SIGKILL a few seconds
     * later) and forwards SIGUSR1; Slurm sends SIGTERM at the time limit (--signal for earlier) */
    signal(SIGTERM, on_sigint);
    signal(SIGUSR1, on_sigint);
#endif
}

/* The run fails with status st and the message: returns st. */
static gpt_status set_error(train_result *res, gpt_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gpt_verrorf(res->error, sizeof res->error, fmt, ap);
    va_end(ap);
    res->outcome = TRAIN_FAILED;
    res->status = st;
    return st;
}

/* Every rank passes its own status; returns it where it failed, else GPT_ERR_PEER when another
 * rank failed, or the all-reduce's status when that failed (counted as a failure here). A rank
 * that did not fail but learns that another did gets a message; either way the failure is then
 * known to all (res->agreed). */
static gpt_status agree_fail(train_result *res, gpt_comm *c, gpt_status mine, const char *where)
{
    int sum = mine != GPT_OK;
    gpt_status st;
    if (gpt_comm_size(c) > 1) {
        if ((st = gpt_comm_agree(c, mine != GPT_OK, &sum)) != GPT_OK) /* not agreed: main aborts the job */
            return mine != GPT_OK ? mine : set_error(res, st, "%s: communication failed", where);
        if (sum > 0) {
            res->agreed = 1;
            if (mine == GPT_OK)
                return set_error(res, GPT_ERR_PEER, "%s: %d other rank%s failed (see their messages)", where, sum,
                                 sum > 1 ? "s" : "");
        }
    }
    return mine;
}

train_options train_default_options(void)
{
    train_options o;
    memset(&o, 0, sizeof o);
    o.backend = &gpt_cpu_backend;
    o.data_dir = "build/gpt/data";
    o.model.n_layers = 2;
    o.model.d_model = 128;
    o.model.n_heads = 2;
    o.batch = 8;
    o.seq = 64;
    o.accum = 1;
    o.steps = 200;
    o.seed = 1;
    o.recipe = optim_default(OPTIM_ADAMW);
    o.eval_every = 50;
    o.eval_batches = 8;
    o.panel_seqs = 8;
    o.diam_every = 10;
    o.log_every = 1;
    o.progress = -1;
    o.progress_every = 30.0;
    o.temperature = 0.8;
    o.sample_seed = 1;
    o.sample_tokens = 0;
    return o;
}

void train_result_free(train_result *res)
{
    if (!res) return;
    free(res->steps);
    free(res->evals);
    res->steps = NULL;
    res->evals = NULL;
    res->n_steps = res->n_evals = 0;
}

/* ---- the run's state ---------------------------------------------------------------------- */

typedef struct run {
    train_options o;           /* resolved options (a resume overrides the recipe etc.) */
    train_result *res;
    tok_tokenizer tok;
    int have_tok;
    data_tokens train, val;
    gpt_backend *be;
    optim_set opt;
    int have_opt;
    data_sampler sampler;
    long step;                 /* updates done */
    long tokens_per_update;
    int *inputs, *targets;     /* one micro-batch */
    int panel_n;               /* sequences in the Hilbert panel */
    int *panel_tokens;
    float *panel_h;            /* panel_n * seq x d head inputs */
    void *diam_ws;
    size_t diam_ws_bytes;
    FILE *log;
    FILE *sv_log;
    FILE *norms_log;           /* spectra.h: block norms (norms_every > 0) */
    FILE *ns_log;              /* --ns-steps auto: each budget, per matrix */
    gpt_optimizer *optimizer;  /* where the optimizer set runs (optim.h): host or the backend's */
    /* data parallel */
    gpt_comm *comm;            /* host communicator (never NULL inside the loop) */
    int rank, size;
    int b_lo, b_hi;            /* this rank's rows of each micro-batch */
    double w_rank;             /* (b_hi - b_lo) / batch: its share of every batch mean */
    int *full_inputs, *full_targets; /* the whole global micro-batch (every rank draws it) */
    int stop_agreed;           /* some rank was asked to stop (SIGINT/SIGTERM/SIGUSR1) */
    int bar_shown;             /* a progress bar is on the current console line */
    double last_line;          /* when the last console line was printed (progress_every) */
    double t_start;
    double last_val_loss, last_hilbert, last_d_exact;
    const float *head_S;       /* the latest head step S: the optimizer's head_step (a device
                                  optimizer's pinned copy), or opt.head_step before any update */
} run;

static uint64_t data_seed(uint64_t seed) { return seed ^ 0xD1B54A32D192ED03ULL; }

/* Host copies of the optimizer states are current (the CUDA backend keeps them on the device and
 * refreshes the host only when they are read: checkpoints, spectra). */
static gpt_status sync_optimizer_to_host(run *r);
/* Checks the writes to a log (the CSV log section). */
static gpt_status log_ok(run *r, FILE *f, const char *path, int flush);

static void clear_bar(run *r)
{
    if (r->bar_shown) {
        fputs("\r\033[K", stdout);
        r->bar_shown = 0;
    }
}

static void console(run *r, const char *fmt, ...)
{
    va_list ap;
    if (r->rank != 0) return; /* rank 0 alone prints */
    clear_bar(r);
    if (r->o.quiet) return;
    if (r->o.line_open) putchar('\n'), r->o.line_open = 0;
    if (r->o.run_name) printf("[%s] ", r->o.run_name);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
    r->last_line = gpt_now_seconds();
}

/* Without the bar: a plain line (no carriage return, so a log file or pipe reads it) when
 * progress_every seconds passed since the last console line, quiet or not. */
static void progress_line(run *r, double elapsed, long done_here)
{
    double now = gpt_now_seconds(), eta;
    long k;
    if (r->rank != 0 || r->o.progress || !(r->o.progress_every > 0) || now - r->last_line < r->o.progress_every) return;
    eta = done_here > 0 ? elapsed / (double)done_here * (double)(r->o.steps - r->step) : 0.0;
    k = (long)(eta + 0.5);
    if (r->o.line_open) putchar('\n'), r->o.line_open = 0;
    if (r->o.run_name) printf("[%s] ", r->o.run_name);
    printf("progress: step %ld/%ld (%d%%), loss %.4f, %.0f s elapsed, ETA %ld:%02ld\n", r->step, r->o.steps,
           (int)(100.0 * (double)r->step / (double)r->o.steps + 0.5),
           r->res->n_steps > 0 ? r->res->steps[r->res->n_steps - 1].loss : NAN, elapsed, k / 60, k % 60);
    fflush(stdout);
    r->last_line = now;
    r->res->progress_lines++;
}

static void draw_bar(run *r, double elapsed, long done_here)
{
    char bar[41];
    long total = r->o.steps, k;
    double frac = total > 0 ? (double)r->step / (double)total : 1.0;
    double eta = done_here > 0 ? elapsed / (double)done_here * (double)(total - r->step) : 0.0;
    int filled = (int)(frac * 40.0 + 0.5), i;
    for (i = 0; i < 40; i++) bar[i] = i < filled ? '#' : '.';
    bar[40] = 0;
    k = (long)(eta + 0.5);
    clear_bar(r);
    printf("[%s] %3d%% %ld/%ld ETA %ld:%02ld", bar, (int)(frac * 100.0 + 0.5), r->step, total, k / 60, k % 60);
    fflush(stdout);
    r->bar_shown = 1;
}

/* ---- data --------------------------------------------------------------------------------- */

static gpt_status load_data(run *r)
{
    char tok_path[1024], path[1024], err[1024];
    gpt_status st;
    snprintf(tok_path, sizeof tok_path, "%s/tokenizer.bin", r->o.data_dir);
    if ((st = tok_load(&r->tok, tok_path, err, sizeof err)) != GPT_OK)
        return set_error(r->res, st, "tokenizer: %s (run build/gpt/prepare first)", err);
    r->have_tok = 1;
    /* each token file records the tokenizer it was made with (data.h): the same vocabulary size
     * is not enough */
    snprintf(path, sizeof path, "%s/train.bin", r->o.data_dir);
    if ((st = data_tokens_read(&r->train, path, err, sizeof err)) != GPT_OK ||
        (st = tok_check_tokens(&r->tok, tok_path, &r->train, path, err, sizeof err)) != GPT_OK)
        return set_error(r->res, st, "training data: %s", err);
    snprintf(path, sizeof path, "%s/val.bin", r->o.data_dir);
    if ((st = data_tokens_read(&r->val, path, err, sizeof err)) != GPT_OK ||
        (st = tok_check_tokens(&r->tok, tok_path, &r->val, path, err, sizeof err)) != GPT_OK)
        return set_error(r->res, st, "validation data: %s", err);
    /* and the corpus it comes from (format 3): both splits of one preparation */
    if (r->train.corpus_id != r->val.corpus_id)
        return set_error(r->res, GPT_ERR_MISMATCH, "%s/train.bin and %s come from different corpora (%016llx, %016llx): re-run "
                         "build/gpt/prepare", r->o.data_dir, path, (unsigned long long)r->train.corpus_id,
                         (unsigned long long)r->val.corpus_id);
    if (r->train.n_tokens < (size_t)r->o.seq + 1)
        return set_error(r->res, GPT_ERR_SIZE, "training data: %zu tokens, fewer than one sequence of %d + 1", r->train.n_tokens, r->o.seq);
    if (data_sequential_batches(&r->val, r->o.batch, r->o.seq) < 1)
        return set_error(r->res, GPT_ERR_SIZE, "validation data: %zu tokens, fewer than one batch of %d x %d + 1",
                         r->val.n_tokens, r->o.batch, r->o.seq);
    return GPT_OK;
}

/* ---- checkpoints -------------------------------------------------------------------------- */

static void config_words(const gpt_config *c, uint64_t w[6])
{
    w[0] = (uint64_t)c->n_layers, w[1] = (uint64_t)c->d_model, w[2] = (uint64_t)c->n_heads;
    w[3] = (uint64_t)c->seq_len, w[4] = (uint64_t)c->vocab_size, w[5] = (uint64_t)c->mlp_hidden;
}

/* Collective over the ranks: rank 0 writes the file, the owners of distributed optimizer state
 * send it to rank 0 (optim_save_comm), and every rank learns the outcome. */
static gpt_status save_checkpoint(run *r)
{
    const gpt_config *cfg = &r->be->config;
    ckpt_writer w;
    uint64_t words[6], sampler[2];
    char err[512];
    int i;
    gpt_status st = GPT_OK;
    if (!r->o.ckpt_path) return GPT_OK;
    /* the log holds every row up to the checkpoint before it exists */
    if (r->log) st = log_ok(r, r->log, r->o.log_path, 1);
    if (st == GPT_OK && (st = r->be->ops->pull_params(r->be)) != GPT_OK)
        set_error(r->res, st, "backend: cannot read the parameters back");
    if (st == GPT_OK) st = sync_optimizer_to_host(r);
    if ((st = agree_fail(r->res, r->comm, st, "checkpoint")) != GPT_OK) return st;
    ckpt_writer_init(&w);
    if (r->rank == 0) {
        config_words(cfg, words);
        ckpt_put_u64(&w, "model.config", words, 6);
        ckpt_put_u64_1(&w, "train.step", (uint64_t)r->step);
        ckpt_put_u64_1(&w, "train.steps", (uint64_t)r->o.steps);
        ckpt_put_u64_1(&w, "train.batch", (uint64_t)r->o.batch);
        ckpt_put_u64_1(&w, "train.seq", (uint64_t)r->o.seq);
        ckpt_put_u64_1(&w, "train.accum", (uint64_t)r->o.accum);
        ckpt_put_u64_1(&w, "train.seed", r->o.seed);
        sampler[0] = r->sampler.rng, sampler[1] = r->sampler.pos;
        ckpt_put_u64(&w, "train.sampler", sampler, 2);
        ckpt_put_u64_1(&w, "data.train_tokens", (uint64_t)r->train.n_tokens);
        ckpt_put_u64_1(&w, "data.vocab", (uint64_t)r->tok.vocab_size);
        optim_recipe_save(&r->opt.recipe, &w);
        for (i = 0; i < r->be->layout.n_tensors; i++) {
            gpt_tensor t;
            char name[64];
            gpt_tensor_info(cfg, i, &t);
            snprintf(name, sizeof name, "param.%s", t.name);
            ckpt_put_f32(&w, name, r->be->ops->params(r->be) + t.offset, t.rows * t.cols);
        }
    }
    if ((st = optim_save_comm(&r->opt, &w, r->comm, err, sizeof err)) == GPT_OK && r->rank == 0)
        st = ckpt_write_file(&w, r->o.ckpt_path, err, sizeof err);
    if (st != GPT_OK) set_error(r->res, st, "checkpoint: %s", err);
    ckpt_writer_free(&w);
    return agree_fail(r->res, r->comm, st, "checkpoint");
}

/* The checkpoint image: read by rank 0 and broadcast (ranks need not share a file system), then
 * parsed by every rank. Every rank fails the same way. */
static gpt_status read_checkpoint_image(run *r, ckpt_reader *ck)
{
    char err[512] = "";
    unsigned char *buf = NULL;
    uint64_t n = 0;
    gpt_status st = GPT_OK;
    if (r->size == 1) {
        if ((st = ckpt_read_file(ck, r->o.resume, err, sizeof err)) != GPT_OK) return set_error(r->res, st, "resume: %s", err);
        return GPT_OK;
    }
    if (r->rank == 0) {
        size_t len = 0;
        st = data_read_file(r->o.resume, &buf, &len, err, sizeof err);
        n = st == GPT_OK ? (uint64_t)len : UINT64_MAX;
    }
    if ((st = r->comm->ops->bcast(r->comm, &n, sizeof n, 0)) != GPT_OK) {
        free(buf);
        return set_error(r->res, st, "resume: cannot broadcast the checkpoint");
    }
    r->res->agreed = 1; /* from here on every rank takes the same branch */
    if (n == UINT64_MAX)
        return r->rank == 0 ? set_error(r->res, GPT_ERR_IO, "resume: %s", err)
                            : set_error(r->res, GPT_ERR_PEER, "resume: rank 0 cannot read the checkpoint");
    if (r->rank != 0 && !(buf = (unsigned char *)malloc(n ? (size_t)n : 1))) {
        r->res->agreed = 0;
        return set_error(r->res, GPT_ERR_NOMEM, "resume: out of memory for the checkpoint");
    }
    if ((st = r->comm->ops->bcast(r->comm, buf, (size_t)n, 0)) != GPT_OK) {
        free(buf);
        r->res->agreed = 0;
        return set_error(r->res, st, "resume: cannot broadcast the checkpoint");
    }
    if ((st = ckpt_parse(ck, buf, (size_t)n, r->o.resume, err, sizeof err)) != GPT_OK) {
        free(buf);
        return set_error(r->res, st, "resume: %s", err);
    }
    r->res->agreed = 0;
    ck->image = buf;
    return GPT_OK;
}

/* Value v of u64 field `name` (its element `what`, when the field has several) must be in
 * [lo, hi], the command line's range for the setting; else the run fails naming file and field. */
static gpt_status check_range(run *r, const ckpt_reader *ck, const char *name, const char *what, uint64_t v,
                              uint64_t lo, uint64_t hi)
{
    if (v >= lo && v <= hi) return GPT_OK;
    return set_error(r->res, GPT_ERR_CORRUPT, "resume: %s: field \"%s\"%s%s is %llu, expected %llu..%llu", ck->file, name,
                     what ? " " : "", what ? what : "", (unsigned long long)v, (unsigned long long)lo,
                     (unsigned long long)hi);
}

/* Reads the run settings of a checkpoint into r->o (before the backend exists), each checked
 * against the range of its flag (--layers, --d-model, ..., --steps, --batch, --seq, --accum). */
static gpt_status read_checkpoint_settings(run *r, const ckpt_reader *ck)
{
    static const char *const what[6] = {"n_layers", "d_model", "n_heads", "seq_len", "vocab_size", "mlp_hidden"};
    static const uint64_t lo[6] = {1, 2, 1, 1, 1, 1};
    static const uint64_t hi[6] = {1u << 16, 1u << 16, 1u << 16, 1u << 16, TOK_MAX_VOCAB, 1u << 20};
    uint64_t words[6], v[5];
    char err[512];
    int k;
    gpt_status st;
    if ((st = ckpt_get_u64(ck, "model.config", words, 6, err, sizeof err)) != GPT_OK ||
        (st = ckpt_get_u64(ck, "train.steps", &v[0], 1, err, sizeof err)) != GPT_OK ||
        (st = ckpt_get_u64(ck, "train.batch", &v[1], 1, err, sizeof err)) != GPT_OK ||
        (st = ckpt_get_u64(ck, "train.seq", &v[2], 1, err, sizeof err)) != GPT_OK ||
        (st = ckpt_get_u64(ck, "train.accum", &v[3], 1, err, sizeof err)) != GPT_OK ||
        (st = ckpt_get_u64(ck, "train.seed", &v[4], 1, err, sizeof err)) != GPT_OK)
        return set_error(r->res, st, "resume: %s", err);
    for (k = 0; k < 6; k++)
        if ((st = check_range(r, ck, "model.config", what[k], words[k], lo[k], hi[k])) != GPT_OK) return st;
    if ((st = check_range(r, ck, "train.steps", NULL, v[0], 1, OPTIM_MAX_STEPS)) != GPT_OK ||
        (st = check_range(r, ck, "train.batch", NULL, v[1], 1, 1u << 16)) != GPT_OK ||
        (st = check_range(r, ck, "train.seq", NULL, v[2], 1, 1u << 16)) != GPT_OK ||
        (st = check_range(r, ck, "train.accum", NULL, v[3], 1, 1u << 16)) != GPT_OK ||
        (st = check_range(r, ck, "model.config", "seq_len (= train.seq)", words[3], v[2], v[2])) != GPT_OK)
        return st;
    r->o.model.n_layers = (int)words[0], r->o.model.d_model = (int)words[1], r->o.model.n_heads = (int)words[2];
    r->o.model.seq_len = (int)words[3], r->o.model.vocab_size = (int)words[4], r->o.model.mlp_hidden = (int)words[5];
    r->o.steps = (long)v[0], r->o.batch = (int)v[1], r->o.seq = (int)v[2], r->o.accum = (int)v[3];
    r->o.seed = v[4];
    if ((st = optim_recipe_load(&r->o.recipe, ck, err, sizeof err)) != GPT_OK)
        return set_error(r->res, st, "resume: %s", err);
    return GPT_OK;
}

/* Before anything is allocated for the model: every field read_checkpoint_state and optim_load
 * will copy exists with the type and size that model.config implies, holds finite values, and
 * train.step is within the schedule. The fields lie inside the file, so what the resume then
 * allocates is bounded by the file's size. */
static gpt_status check_checkpoint_fields(run *r, const ckpt_reader *ck)
{
    gpt_config cfg = r->o.model;
    uint64_t step;
    char err[512];
    int i;
    gpt_status st;
    if ((st = gpt_config_check(&cfg, err, sizeof err)) != GPT_OK)
        return set_error(r->res, st, "resume: %s: field \"model.config\" is not a valid model (d_model %d, %d heads, mlp "
                         "%d, %d layers): %s", ck->file, r->o.model.d_model, r->o.model.n_heads, r->o.model.mlp_hidden,
                         r->o.model.n_layers, err);
    if ((st = ckpt_get_u64(ck, "train.step", &step, 1, err, sizeof err)) != GPT_OK ||
        (st = ckpt_check_field(ck, "train.sampler", CKPT_U64, 2, 0, err, sizeof err)) != GPT_OK ||
        (st = ckpt_check_field(ck, "data.train_tokens", CKPT_U64, 1, 0, err, sizeof err)) != GPT_OK ||
        (st = ckpt_check_field(ck, "data.vocab", CKPT_U64, 1, 0, err, sizeof err)) != GPT_OK)
        return set_error(r->res, st, "resume: %s", err);
    if ((st = check_range(r, ck, "train.step", NULL, step, 0, (uint64_t)r->o.steps)) != GPT_OK) return st;
    for (i = 0; i < gpt_layout_of(&cfg).n_tensors; i++) {
        gpt_tensor t;
        char name[64];
        gpt_tensor_info(&cfg, i, &t);
        snprintf(name, sizeof name, "param.%s", t.name);
        if ((st = ckpt_check_field(ck, name, CKPT_F32, t.rows * t.cols, 1, err, sizeof err)) != GPT_OK)
            return set_error(r->res, st, "resume: %s", err);
    }
    if ((st = optim_check_checkpoint(&r->o.recipe, &cfg, ck, err, sizeof err)) != GPT_OK)
        return set_error(r->res, st, "resume: %s", err);
    return GPT_OK;
}

gpt_status train_check_checkpoint(const ckpt_reader *ck, train_options *opt, train_result *res)
{
    run r;
    gpt_status st;
    memset(&r, 0, sizeof r);
    r.o = *opt;
    r.res = res;
    r.size = 1;
    if ((st = read_checkpoint_settings(&r, ck)) != GPT_OK || (st = check_checkpoint_fields(&r, ck)) != GPT_OK)
        return st;
    *opt = r.o;
    return GPT_OK;
}

/* Loads step, sampler, parameters and optimizer state (after the backend and optimizer exist). */
static gpt_status read_checkpoint_state(run *r, const ckpt_reader *ck)
{
    uint64_t step, sampler[2], ntrain, vocab;
    char err[512];
    float *params = r->be->ops->params(r->be);
    int i;
    gpt_status st;
    if ((st = ckpt_get_u64(ck, "train.step", &step, 1, err, sizeof err)) != GPT_OK ||
        (st = ckpt_get_u64(ck, "train.sampler", sampler, 2, err, sizeof err)) != GPT_OK ||
        (st = ckpt_get_u64(ck, "data.train_tokens", &ntrain, 1, err, sizeof err)) != GPT_OK ||
        (st = ckpt_get_u64(ck, "data.vocab", &vocab, 1, err, sizeof err)) != GPT_OK)
        return set_error(r->res, st, "resume: %s", err);
    if (ntrain != (uint64_t)r->train.n_tokens || vocab != (uint64_t)r->tok.vocab_size)
        return set_error(r->res, GPT_ERR_MISMATCH,
                         "resume: %s was trained on other data (%llu training tokens, vocab %llu; now %zu, %u)",
                         ck->file, (unsigned long long)ntrain, (unsigned long long)vocab, r->train.n_tokens,
                         (unsigned)r->tok.vocab_size);
    if (step > (uint64_t)r->o.steps) return set_error(r->res, GPT_ERR_CORRUPT, "resume: %s: step %llu beyond the schedule", ck->file, (unsigned long long)step);
    for (i = 0; i < r->be->layout.n_tensors; i++) {
        gpt_tensor t;
        char name[64];
        gpt_tensor_info(&r->be->config, i, &t);
        snprintf(name, sizeof name, "param.%s", t.name);
        if ((st = ckpt_get_f32(ck, name, params + t.offset, t.rows * t.cols, err, sizeof err)) != GPT_OK)
            return set_error(r->res, st, "resume: %s", err);
    }
    if ((st = r->be->ops->push_params(r->be)) != GPT_OK)
        return set_error(r->res, st, "backend: cannot upload the parameters");
    if ((st = optim_load(&r->opt, ck, err, sizeof err)) != GPT_OK) return set_error(r->res, st, "resume: %s", err);
    r->step = (long)step;
    r->sampler.rng = sampler[0];
    r->sampler.pos = sampler[1];
    return GPT_OK;
}

/* ---- the CSV log -------------------------------------------------------------------------- */

static const char *log_header =
    "kind,step,tokens,loss,lr,ms,tok_per_s,gflops,grad_norm,d_lo,d_hi,d_exact,val_loss,hilbert_rms,head_lr,opt_ms\n";

/* The run's whole recipe, one "# key=value" line each, above the header (train.h). */
/* The shortest %g form of v that reads back as v (buf of 32 bytes). */
/* --ns-steps as given: a count, or auto (OPTIM_NS_AUTO) */
static const char *ns_steps_text(int steps, char *buf)
{
    if (steps == OPTIM_NS_AUTO) return "auto";
    snprintf(buf, 32, "%d", steps);
    return buf;
}

static const char *exact_g(char *buf, double v)
{
    int prec;
    for (prec = 6; prec < 17; prec++) {
        snprintf(buf, 32, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) return buf;
    }
    snprintf(buf, 32, "%.17g", v);
    return buf;
}

static void log_recipe(run *r)
{
    char g[12][32];
    const gpt_config *c = &r->be->config;
    const optim_recipe *q = &r->opt.recipe;
    FILE *f = r->log;
    fprintf(f, "# gpt trainer log: the run's recipe, then one row per event\n");
    fprintf(f, "# params=%zu\n# layers=%d\n# d_model=%d\n# heads=%d\n# mlp=%d\n# vocab=%d\n", r->be->layout.n_params,
            c->n_layers, c->d_model, c->n_heads, c->mlp_hidden, c->vocab_size);
    fprintf(f, "# batch=%d\n# seq=%d\n# accum=%d\n# steps=%ld\n# tokens_per_update=%ld\n# seed=%llu\n", r->o.batch,
            r->o.seq, r->o.accum, r->o.steps, r->tokens_per_update, (unsigned long long)r->o.seed);
    fprintf(f, "# corpus=%016llx\n# train_tokens=%zu\n# val_tokens=%zu\n", (unsigned long long)r->train.corpus_id,
            r->train.n_tokens, r->val.n_tokens);
    fprintf(f, "# head=%s\n# head_lr=%s\n# head_beta1=%s\n# head_beta2=%s\n# head_eps=%s\n# head_wd=%s\n",
            optim_head_name(q->head), exact_g(g[0], q->head_lr), exact_g(g[1], q->head_beta1), exact_g(g[2], q->head_beta2),
            exact_g(g[3], q->head_eps), exact_g(g[4], q->head_wd));
    fprintf(f, "# block=%s\n# muon_lr=%s\n# muon_beta=%s\n# muon_wd=%s\n# ns_steps=%s\n# ns_every=%d\n# ns_per_head=%d\n"
               "# ns_precision=%s\n# cap=%s\n",
            optim_block_name(q->block), exact_g(g[0], q->muon_lr), exact_g(g[1], q->muon_beta),
            exact_g(g[2], q->muon_wd), ns_steps_text(q->ns_steps, g[3]), q->ns_every, q->ns_per_head, q->ns_precision == MUON_NS_BF16 ? "bf16" : "fp32",
            q->cap == MUON_CAP_OFF ? "off" : q->cap == MUON_CAP_GROWTH ? "growth" : "always");
    fprintf(f, "# embed_lr=%s\n# embed_beta1=%s\n# embed_beta2=%s\n# embed_eps=%s\n# embed_wd=%s\n",
            exact_g(g[0], q->embed_lr), exact_g(g[1], q->embed_beta1), exact_g(g[2], q->embed_beta2),
            exact_g(g[3], q->embed_eps), exact_g(g[4], q->embed_wd));
    fprintf(f, "# warmup=%s\n# final_lr=%s\n# clip=%s\n", exact_g(g[0], q->warmup_frac), exact_g(g[1], q->final_frac),
            exact_g(g[2], q->clip));
    fprintf(f, "# eval_every=%d\n# eval_batches=%d\n# panel=%d\n# diam_every=%d\n# ranks=%d\n", r->o.eval_every,
            r->o.eval_batches, r->o.panel_seqs, r->o.diam_every, r->size);
}

/* GPT_OK if every write to the log f at path has succeeded (and, with flush, reached the file);
 * else the run fails (GPT_ERR_IO) with a message naming the log. */
static gpt_status log_ok(run *r, FILE *f, const char *path, int flush)
{
    if (!ferror(f) && (!flush || fflush(f) == 0)) return GPT_OK;
    return set_error(r->res, GPT_ERR_IO, "%s: cannot write the log: %s", path, strerror(errno));
}

/* Closes a log; a failed write or close fails the run (unless it failed already). */
static void close_log(run *r, FILE *f, const char *path)
{
    int bad = ferror(f) != 0;
    bad |= fclose(f) != 0;
    if (bad && r->res->outcome != TRAIN_FAILED) set_error(r->res, GPT_ERR_IO, "%s: cannot write the log: %s", path, strerror(errno));
}

/* "%.17g", or an empty cell for NaN. */
static void cell(FILE *f, double v) { if (v == v) fprintf(f, ",%.17g", v); else fputs(",", f); }

/* On resume the log keeps its header and the rows up to the checkpoint's step (rows written
 * after the checkpoint by an interrupted process are dropped), then grows from there. */
static gpt_status open_log(run *r, int resuming)
{
    unsigned char *old = NULL;
    size_t n = 0;
    if (!r->o.log_path) return GPT_OK;
    if (resuming && data_read_file(r->o.log_path, &old, &n, NULL, 0) != GPT_OK) old = NULL;
    r->log = fopen(r->o.log_path, "w");
    if (!r->log) {
        free(old);
        return set_error(r->res, GPT_ERR_IO, "%s: cannot open the log for writing", r->o.log_path);
    }
    log_recipe(r);
    fputs(log_header, r->log);
    if (old) {
        size_t i = 0;
        while (i < n) {
            size_t j = i;
            char line[1024];
            while (j < n && old[j] != '\n') j++;
            if (j - i < sizeof line) {
                char kind[16];
                long step;
                memcpy(line, old + i, j - i);
                line[j - i] = 0;
                if (sscanf(line, "%15[a-z],%ld", kind, &step) == 2 && strcmp(kind, "final") != 0 && step <= r->step)
                    fprintf(r->log, "%s\n", line);
            }
            i = j + 1;
        }
        free(old);
    }
    return log_ok(r, r->log, r->o.log_path, 1);
}

static gpt_status log_train(run *r, const train_step_rec *s, double tok_s, double gflops)
{
    if (!r->log) return GPT_OK;
    fprintf(r->log, "train,%ld", s->step);
    cell(r->log, s->tokens), cell(r->log, s->loss), cell(r->log, s->lr), cell(r->log, s->ms);
    cell(r->log, tok_s), cell(r->log, gflops), cell(r->log, s->grad_norm), cell(r->log, s->d_lo);
    cell(r->log, s->d_hi), cell(r->log, s->d_exact), cell(r->log, NAN), cell(r->log, NAN), cell(r->log, s->head_lr);
    cell(r->log, s->opt_ms);
    fputc('\n', r->log);
    return log_ok(r, r->log, r->o.log_path, 0);
}

static gpt_status log_eval(run *r, const char *kind, long step, double tokens, double d_exact, double val, double hrms)
{
    int k;
    if (!r->log) return GPT_OK;
    fprintf(r->log, "%s,%ld", kind, step);
    cell(r->log, tokens);
    for (k = 0; k < 8; k++) cell(r->log, NAN); /* loss .. d_hi */
    cell(r->log, d_exact), cell(r->log, val), cell(r->log, hrms), cell(r->log, NAN), cell(r->log, NAN);
    fputc('\n', r->log);
    return log_ok(r, r->log, r->o.log_path, 1);
}

/* ---- evaluation and diagnostics ----------------------------------------------------------- */

static gpt_status evaluate(run *r, double *val_loss, double *hilbert_rms)
{
    const gpt_config *cfg = &r->be->config;
    data_sampler seq;
    size_t n = data_sequential_batches(&r->val, r->o.batch, r->o.seq), b;
    double sum = 0.0;
    rn_status rs;
    gpt_status gs = GPT_OK;
    if (r->o.eval_batches > 0 && (size_t)r->o.eval_batches < n) n = (size_t)r->o.eval_batches;
    seq.rng = 0, seq.pos = 0;
    /* each rank evaluates its rows of every validation batch; the batch mean is the weighted sum */
    for (b = 0; b < n && gs == GPT_OK; b++) {
        float loss;
        data_batch_sequential(&r->val, &seq, r->o.batch, r->o.seq, r->full_inputs, r->full_targets);
        gs = r->be->ops->forward(r->be, r->inputs, r->targets, &loss);
        if (gs != GPT_OK) set_error(r->res, gs, "evaluation: forward failed: %s", gpt_status_string(gs));
        sum += r->w_rank * (double)loss;
    }
    if ((gs = agree_fail(r->res, r->comm, gs, "evaluation")) != GPT_OK) return gs;
    if (r->size > 1 && (gs = r->comm->ops->allreduce_f64(r->comm, &sum, 1)) != GPT_OK)
        return set_error(r->res, gs, "evaluation: all-reduce failed");
    *val_loss = sum / (double)n;
    *hilbert_rms = NAN;
    if (r->rank == 0 && r->step > 0 && r->panel_n > 0) { /* the diagnostics run on rank 0 */
        size_t V = (size_t)cfg->vocab_size, d = (size_t)cfg->d_model, N = (size_t)r->panel_n * (size_t)r->o.seq;
        gs = r->be->ops->head_inputs(r->be, r->panel_tokens, r->panel_n, r->panel_h);
        if (gs != GPT_OK) return set_error(r->res, gs, "evaluation: head inputs failed: %s", gpt_status_string(gs));
        rs = rn_hilbert_rms(r->head_S, V, d, d, r->panel_h, N, d, hilbert_rms);
        if (rs != RN_OK)
            return set_error(r->res, optim_rn_status(rs), "evaluation: Hilbert RMS failed: %s", rn_status_string(rs));
    }
    return GPT_OK;
}

static gpt_status exact_diameter(run *r, double *D)
{
    const gpt_config *cfg = &r->be->config;
    rn_status rs;
    if (r->rank != 0) { /* the diagnostics run on rank 0 */
        *D = NAN;
        return GPT_OK;
    }
    rs = rn_row_diameter_ws(r->head_S, (size_t)cfg->vocab_size, (size_t)cfg->d_model,
                                      (size_t)cfg->d_model, r->diam_ws, r->diam_ws_bytes, D, NULL, NULL);
    if (rs != RN_OK)
        return set_error(r->res, optim_rn_status(rs), "step %ld: exact row diameter failed: %s", r->step,
                         rn_status_string(rs));
    return GPT_OK;
}

/* 1 if tensor `name` is in the comma-separated list (or the list is "all"). */
static int name_listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    const char *p = list;
    if (strcmp(list, "all") == 0) return 1;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) return 1;
        p += len + (e ? 1 : 0);
    }
    return 0;
}

/* Momentum spectra of the listed tensors: computed where the momentum lives (its owner), the
 * numbers sent to rank 0, which prints and logs them. */
static gpt_status log_spectra(run *r)
{
    int i;
    gpt_status st;
    if (!r->o.sv_tensors || r->step == 0) return GPT_OK;
    if ((st = agree_fail(r->res, r->comm, sync_optimizer_to_host(r), "spectra")) != GPT_OK) return st;
    for (i = 0; i < r->opt.n_slots; i++) {
        optim_spectrum sp;
        double v[5];
        int owner = r->opt.owner && r->opt.owner[i] >= 0 ? r->opt.owner[i] : 0;
        if (!name_listed(r->o.sv_tensors, r->opt.slots[i].t.name)) continue;
        if (r->rank == owner) {
            int rc = optim_momentum_spectrum(&r->opt, i, &sp);
            v[0] = rc, v[1] = sp.q10, v[2] = sp.q50, v[3] = sp.q90, v[4] = sp.ns_steps_q50;
            if (owner != 0 && (st = r->comm->ops->send(r->comm, v, sizeof v, 0)) != GPT_OK)
                return set_error(r->res, st, "spectra: cannot send to rank 0");
        } else if (r->rank == 0) {
            if ((st = r->comm->ops->recv(r->comm, v, sizeof v, owner)) != GPT_OK)
                return set_error(r->res, st, "spectra: cannot receive");
        } else {
            continue;
        }
        if (r->rank != 0) continue;
        if (v[0] < 0)
            return set_error(r->res, GPT_ERR_BACKEND, "step %ld: singular values of %s failed", r->step,
                             r->opt.slots[i].t.name);
        if (v[0] > 0) continue; /* no momentum buffer (AdamW / RowNorm) or still zero */
        sp.q10 = v[1], sp.q50 = v[2], sp.q90 = v[3], sp.ns_steps_q50 = (int)v[4];
        if (r->o.log_every > 0)
            console(r, "spectrum step %ld %s: sigma/||M||_F q10 %.3e q50 %.3e q90 %.3e; Jordan steps for f(q50) >= 0.7: %d\n",
                    r->step, r->opt.slots[i].t.name, sp.q10, sp.q50, sp.q90, sp.ns_steps_q50);
        if (r->sv_log)
            fprintf(r->sv_log, "%ld,%s,%.17g,%.17g,%.17g,%d\n", r->step, r->opt.slots[i].t.name, sp.q10, sp.q50,
                    sp.q90, sp.ns_steps_q50);
    }
    return r->sv_log ? log_ok(r, r->sv_log, r->o.sv_log, 1) : GPT_OK;
}

/* Data parallel: the replicated parameters must be bit-identical on every rank (identical inputs
 * to identical arithmetic). Checked at every evaluation: an FNV-1a hash of the parameter block
 * against rank 0's. */
static gpt_status check_replicas(run *r)
{
    uint64_t h, h0;
    int bad, sum;
    gpt_status st;
    if (r->size == 1) return GPT_OK;
    if ((st = r->be->ops->pull_params(r->be)) != GPT_OK)
        return set_error(r->res, st, "backend: cannot read the parameters back");
    h = h0 = data_fnv1a64(r->be->ops->params(r->be), r->be->layout.n_params * sizeof(float), DATA_FNV64_INIT);
    if ((st = r->comm->ops->bcast(r->comm, &h0, sizeof h0, 0)) != GPT_OK)
        return set_error(r->res, st, "replica check: broadcast failed");
    bad = h != h0;
    if ((st = gpt_comm_agree(r->comm, bad, &sum)) != GPT_OK) return set_error(r->res, st, "replica check: all-reduce failed");
    if (sum > 0) {
        r->res->agreed = 1;
        return set_error(r->res, GPT_ERR_MISMATCH, "step %ld: the parameters differ between ranks (%d of %d differ from "
                         "rank 0)", r->step, sum, r->size);
    }
    return GPT_OK;
}

static gpt_status do_eval(run *r, int is_final)
{
    double tokens = (double)r->step * (double)r->tokens_per_update;
    gpt_status st;
    if ((st = check_replicas(r)) != GPT_OK || (st = evaluate(r, &r->last_val_loss, &r->last_hilbert)) != GPT_OK)
        return st;
    if (r->res->n_evals % 64 == 0) {
        train_eval_rec *e = (train_eval_rec *)realloc(r->res->evals, (size_t)(r->res->n_evals + 64) * sizeof *e);
        if (!e) return set_error(r->res, GPT_ERR_NOMEM, "out of memory");
        r->res->evals = e;
    }
    r->res->evals[r->res->n_evals].step = r->step;
    r->res->evals[r->res->n_evals].tokens = tokens;
    r->res->evals[r->res->n_evals].val_loss = r->last_val_loss;
    r->res->evals[r->res->n_evals].hilbert_rms = r->last_hilbert;
    r->res->n_evals++;
    if ((st = log_eval(r, "eval", r->step, tokens, NAN, r->last_val_loss, r->last_hilbert)) != GPT_OK) return st;
    if (r->o.log_every > 0 || is_final) {
        if (r->last_hilbert == r->last_hilbert)
            console(r, "eval step %ld: val loss %.4f | Hilbert RMS %.4e\n", r->step, r->last_val_loss, r->last_hilbert);
        else
            console(r, "eval step %ld: val loss %.4f\n", r->step, r->last_val_loss);
    }
    return log_spectra(r);
}

/* Names the first non-finite tensor (parameters, then gradients) after a bad loss. */
static gpt_status report_nonfinite(run *r, float loss)
{
    const gpt_config *cfg = &r->be->config;
    int bad;
    gpt_tensor t;
    r->be->ops->pull_params(r->be);
    bad = optim_first_nonfinite(cfg, r->be->ops->params(r->be));
    if (bad >= 0) {
        gpt_tensor_info(cfg, bad, &t);
        return set_error(r->res, GPT_ERR_RANGE, "step %ld: loss is %g; first non-finite tensor: parameter %s",
                         r->step + 1, (double)loss, t.name);
    }
    return set_error(r->res, GPT_ERR_RANGE, "step %ld: loss is %g; every parameter is finite (the activations "
                     "overflowed)", r->step + 1, (double)loss);
}

/* ---- sampling ----------------------------------------------------------------------------- */

static gpt_status sample_text(run *r)
{
    const gpt_config *cfg = &r->be->config;
    size_t plen = r->o.prompt ? strlen(r->o.prompt) : 0, n_ids = 0, i;
    int V = cfg->vocab_size, T = r->o.seq, k, ctx_len;
    uint32_t *ids = (uint32_t *)malloc((plen + (size_t)r->o.sample_tokens + 1) * sizeof *ids);
    int *ctx = (int *)malloc((size_t)T * sizeof *ctx);
    float *logits = (float *)malloc((size_t)V * sizeof *logits);
    uint64_t rng = r->o.sample_seed;
    if (!ids || !ctx || !logits) {
        free(ids), free(ctx), free(logits);
        return set_error(r->res, GPT_ERR_NOMEM, "sampling: out of memory");
    }
    if (plen) tok_encode(&r->tok, (const unsigned char *)r->o.prompt, plen, ids, plen + 1, &n_ids);
    if (n_ids == 0) ids[n_ids++] = r->tok.eot; /* an empty prompt starts a new document */
    printf("--- sample (%d tokens, temperature %.2f) ---\n%s", r->o.sample_tokens, r->o.temperature,
           r->o.prompt ? r->o.prompt : "");
    for (k = 0; k < r->o.sample_tokens; k++) {
        size_t start = n_ids > (size_t)T ? n_ids - (size_t)T : 0, len;
        int next = 0;
        gpt_status gs;
        const unsigned char *bytes;
        ctx_len = (int)(n_ids - start);
        for (i = 0; i < (size_t)ctx_len; i++) ctx[i] = (int)ids[start + i];
        gs = r->be->ops->last_logits(r->be, ctx, ctx_len, logits);
        if (gs != GPT_OK) {
            free(ids), free(ctx), free(logits);
            return set_error(r->res, gs, "sampling: %s", gpt_status_string(gs));
        }
        if (r->o.temperature <= 0.0) {
            for (i = 1; i < (size_t)V; i++)
                if (logits[i] > logits[next]) next = (int)i;
        } else {
            double mx = logits[0], sum = 0.0, u, acc = 0.0;
            for (i = 1; i < (size_t)V; i++) mx = logits[i] > mx ? logits[i] : mx;
            for (i = 0; i < (size_t)V; i++) sum += exp(((double)logits[i] - mx) / r->o.temperature);
            u = (double)(gpt_splitmix64(&rng) >> 11) * (1.0 / 9007199254740992.0) * sum;
            for (i = 0; i < (size_t)V; i++) {
                acc += exp(((double)logits[i] - mx) / r->o.temperature);
                next = (int)i;
                if (acc > u) break;
            }
        }
        ids[n_ids++] = (uint32_t)next;
        bytes = tok_token_bytes(&r->tok, (uint32_t)next, &len);
        if (bytes && len) fwrite(bytes, 1, len, stdout);
    }
    printf("\n--- end of sample ---\n");
    fflush(stdout);
    free(ids), free(ctx), free(logits);
    return GPT_OK;
}

/* ---- the loop ----------------------------------------------------------------------------- */

/* The host copies of the optimizer states are current (a device optimizer keeps them where it
 * runs and brings them back only when they are read: checkpoints, spectra). */
static gpt_status sync_optimizer_to_host(run *r)
{
    gpt_status st;
    if (r->optimizer && (st = r->optimizer->ops->download(r->optimizer)) != GPT_OK)
        return set_error(r->res, st, "step %ld: cannot download the optimizer state", r->step);
    return GPT_OK;
}

static gpt_status setup(run *r)
{
    const gpt_config *cfg;
    gpt_status gs;
    ckpt_reader ck;
    int have_ck = 0;
    char err[512];
    size_t N, i;
    if (r->o.resume) {
        if ((gs = read_checkpoint_image(r, &ck)) != GPT_OK) return gs;
        have_ck = 1;
        if ((gs = read_checkpoint_settings(r, &ck)) != GPT_OK) goto done;
    }
    if (r->o.batch < 1 || r->o.seq < 1 || r->o.accum < 1 || r->o.steps < 1) {
        gs = set_error(r->res, GPT_ERR_DOMAIN, "batch, seq, accum and steps must be >= 1");
        goto done;
    }
    if (r->o.batch < r->size) {
        gs = set_error(r->res, GPT_ERR_DOMAIN, "--batch %d is the global micro-batch: it needs at least one sequence per rank (%d ranks)",
                  r->o.batch, r->size);
        goto done;
    }
    {
        size_t lo, hi;
        gpt_comm_split((size_t)r->o.batch, r->rank, r->size, &lo, &hi);
        r->b_lo = (int)lo, r->b_hi = (int)hi;
        r->w_rank = r->size == 1 ? 1.0 : (double)(hi - lo) / (double)r->o.batch;
    }
    if ((gs = load_data(r)) != GPT_OK) goto done;
    if (have_ck && r->o.model.vocab_size != (int)r->tok.vocab_size) {
        gs = set_error(r->res, GPT_ERR_MISMATCH, "resume: %s has a vocabulary of %d, the tokenizer %u", r->o.resume, r->o.model.vocab_size,
                  (unsigned)r->tok.vocab_size);
        goto done;
    }
    r->o.model.vocab_size = (int)r->tok.vocab_size;
    r->o.model.seq_len = r->o.seq;
    if (have_ck && (gs = check_checkpoint_fields(r, &ck)) != GPT_OK) goto done;
    {
        gpt_config c = r->o.model;
        if ((gs = gpt_config_check(&c, err, sizeof err)) != GPT_OK) {
            set_error(r->res, gs, "%s", err);
            goto done;
        }
    }
    gs = r->o.backend->create(&r->o.model, r->b_hi - r->b_lo, r->o.seq, r->o.seed, &r->be);
    if (gs != GPT_OK) {
        set_error(r->res, gs, "backend %s: cannot create the model: %s", r->o.backend->name, gpt_status_string(gs));
        goto done;
    }
    cfg = &r->be->config;
    {
        optim_dist dist;
        dist.rank = r->rank, dist.nranks = r->size, dist.comm = r->comm;
        dist.split_muon = !r->o.no_muon_split;
        dist.shard_head = r->o.shard_head;
        if (r->o.shard_head && r->o.recipe.head != OPTIM_ROWNORM) {
            gs = set_error(r->res, GPT_ERR_CONFIG, "--shard-head needs the RowNorm head (--head rownorm)");
            goto done;
        }
        if ((gs = optim_create_dist(&r->opt, &r->o.recipe, cfg, r->be->ops->params(r->be), &dist, err, sizeof err)) !=
            GPT_OK) {
            set_error(r->res, gs, "%s", err);
            goto done;
        }
    }
    r->have_opt = 1;
    data_sampler_init(&r->sampler, data_seed(r->o.seed));
    if (have_ck && (gs = read_checkpoint_state(r, &ck)) != GPT_OK) goto done;
    {
        gpt_optimizer_env env;
        char note[512];
        env.be = r->be, env.set = &r->opt, env.comm = r->comm, env.dcomm = r->o.dcomm;
        env.host_only = r->o.host_optim;
        if ((gs = gpt_optimizer_create(&env, &r->optimizer, note, sizeof note, err, sizeof err)) != GPT_OK) {
            set_error(r->res, gs, "%s", err);
            goto done;
        }
        if (note[0]) console(r, "note: optimizer on the host (%s)\n", note);
    }
    r->tokens_per_update = (long)r->o.batch * r->o.seq * r->o.accum;
    r->full_inputs = (int *)malloc((size_t)r->o.batch * (size_t)r->o.seq * sizeof(int));
    r->full_targets = (int *)malloc((size_t)r->o.batch * (size_t)r->o.seq * sizeof(int));
    r->inputs = r->full_inputs ? r->full_inputs + (size_t)r->b_lo * (size_t)r->o.seq : NULL; /* this rank's rows */
    r->targets = r->full_targets ? r->full_targets + (size_t)r->b_lo * (size_t)r->o.seq : NULL;
    r->panel_n = r->o.panel_seqs;
    if ((size_t)r->panel_n > r->val.n_tokens / (size_t)r->o.seq) r->panel_n = (int)(r->val.n_tokens / (size_t)r->o.seq);
    N = (size_t)r->panel_n * (size_t)r->o.seq;
    r->panel_tokens = (int *)malloc((N ? N : 1) * sizeof(int));
    r->panel_h = (float *)malloc((N ? N : 1) * (size_t)cfg->d_model * sizeof(float));
    r->diam_ws_bytes = rn_row_diameter_workspace_size((size_t)cfg->vocab_size, (size_t)cfg->d_model);
    r->diam_ws = malloc(r->diam_ws_bytes ? r->diam_ws_bytes : 1);
    if (!r->inputs || !r->targets || !r->panel_tokens || !r->panel_h || !r->diam_ws) {
        gs = set_error(r->res, GPT_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (i = 0; i < N; i++) r->panel_tokens[i] = (int)r->val.tokens[i]; /* the first panel_n sequences */
    if (r->rank == 0 && r->step < r->o.steps && (gs = open_log(r, have_ck)) != GPT_OK) goto done;
    if (r->rank == 0 && r->o.sv_tensors && r->o.sv_log) {
        r->sv_log = fopen(r->o.sv_log, have_ck ? "a" : "w");
        if (!r->sv_log) {
            gs = set_error(r->res, GPT_ERR_IO, "%s: cannot open the spectra log", r->o.sv_log);
            goto done;
        }
        if (!have_ck) fputs("step,tensor,q10,q50,q90,jordan_steps_q50\n", r->sv_log);
    }
done: /* every failure above has set r->res->outcome = TRAIN_FAILED */
    if (have_ck) ckpt_reader_free(&ck);
    return gs;
}

static void teardown(run *r)
{
    if (r->log) close_log(r, r->log, r->o.log_path);
    if (r->sv_log) close_log(r, r->sv_log, r->o.sv_log);
    if (r->norms_log) close_log(r, r->norms_log, r->o.norms_log);
    if (r->ns_log) close_log(r, r->ns_log, r->o.ns_log);
    gpt_optimizer_destroy(r->optimizer);
    if (r->have_opt) optim_free(&r->opt);
    if (r->be) r->be->ops->destroy(r->be);
    if (r->have_tok) tok_free(&r->tok);
    data_tokens_free(&r->train);
    data_tokens_free(&r->val);
    free(r->full_inputs), free(r->full_targets), free(r->panel_tokens), free(r->panel_h), free(r->diam_ws);
}

/* The accum micro-batches of one update, forward + backward (this rank's rows of each): the
 * weighted loss sum, or *failed (its status; message set) / *nonfinite (the bad loss in
 * *bad_loss). */
static double micro_batches(run *r, gpt_status *failed, int *nonfinite, float *bad_loss)
{
    gpt_backend *be = r->be;
    double loss_sum = 0.0;
    gpt_status gs;
    int a;
    for (a = 0; a < r->o.accum; a++) {
        float loss;
        /* every rank draws the whole global micro-batch (same sampler, same order) and computes
         * its rows */
        gpt_status ds = data_batch_random(&r->train, &r->sampler, r->o.batch, r->o.seq, r->full_inputs, r->full_targets);
        if (ds != GPT_OK) {
            *failed = set_error(r->res, ds, "training batch: %s", gpt_status_string(ds));
            break;
        }
        gs = be->ops->forward(be, r->inputs, r->targets, &loss);
        if (gs != GPT_OK) {
            *failed = set_error(r->res, gs, "step %ld: forward failed: %s", r->step + 1, gpt_status_string(gs));
            break;
        }
        if (!isfinite(loss)) {
            *nonfinite = 1, *bad_loss = loss;
            break;
        }
        gs = be->ops->backward(be);
        if (gs != GPT_OK) {
            *failed = set_error(r->res, gs, "step %ld: backward failed: %s", r->step + 1, gpt_status_string(gs));
            break;
        }
        loss_sum += r->w_rank * (double)loss;
    }
    return loss_sum;
}

/* What every rank must decide together after the micro-batches (one all-reduce): errors (this
 * rank's in failed), a non-finite loss, a stop request. Returns GPT_OK with the global loss sum in
 * *loss_sum, or the failure's status. */
static gpt_status agree(run *r, double *loss_sum, gpt_status failed, int nonfinite, float bad_loss)
{
    double flags[4];
    gpt_status st;
    flags[0] = *loss_sum, flags[1] = failed != GPT_OK, flags[2] = nonfinite, flags[3] = train__sigint ? 1.0 : 0.0;
    if (r->size > 1 && (st = r->comm->ops->allreduce_f64(r->comm, flags, 4)) != GPT_OK)
        return set_error(r->res, st, "step %ld: all-reduce of the losses failed", r->step + 1);
    if (flags[1] > 0.0) {
        r->res->agreed = r->size > 1;
        if (failed != GPT_OK) return failed;
        return set_error(r->res, GPT_ERR_PEER, "step %ld: %g other rank(s) failed (see their messages)", r->step + 1,
                         flags[1]);
    }
    if (flags[2] > 0.0) { /* the parameters are the same on every rank: so is the message */
        r->res->agreed = r->size > 1;
        return report_nonfinite(r, nonfinite ? bad_loss : (float)NAN);
    }
    *loss_sum = flags[0];
    r->stop_agreed = flags[3] > 0.0;
    return GPT_OK;
}

/* --ns-steps auto: the budget optim_step just set (at update `step`, 0-based), one row per matrix
 * this rank steps (rank 0's matrices in a data-parallel run that splits them) in ns_log, opened at
 * the first budget (a resume appends), and one console line. */
static gpt_status log_ns_budget(run *r, long step)
{
    int i, n = 0, lo = 100, hi = 0;
    double sum = 0.0;
    const int every = r->opt.recipe.ns_every;
    if (r->opt.recipe.ns_steps != OPTIM_NS_AUTO || every < 1 || step <= 0 || step % every != 0 || r->rank != 0)
        return GPT_OK;
    if (!r->ns_log && r->o.ns_log) {
        int fresh = step == every;
        if (!(r->ns_log = fopen(r->o.ns_log, fresh ? "w" : "a")))
            return set_error(r->res, GPT_ERR_IO, "%s: cannot open the Newton-Schulz budget log", r->o.ns_log);
        if (fresh) fputs("step,tensor,rows,cols,q50,steps\n", r->ns_log);
    }
    for (i = 0; i < r->opt.n_slots; i++) {
        const optim_slot *s = &r->opt.slots[i];
        if ((s->kind != OPTIM_MUON && s->kind != OPTIM_MUOWN) || !optim_owns(&r->opt, i) || s->ns_k <= 0) continue;
        if (r->ns_log)
            fprintf(r->ns_log, "%ld,%s,%zu,%zu,%.17g,%d\n", step, s->t.name, s->t.rows, s->t.cols, s->ns_q50, s->ns_k);
        n++, sum += s->ns_k;
        if (s->ns_k < lo) lo = s->ns_k;
        if (s->ns_k > hi) hi = s->ns_k;
    }
    if (n && r->o.log_every > 0)
        console(r, "ns budget at update %ld: %d matrices, Jordan steps %d..%d (mean %.2f; f(q50) >= %.2f)\n", step, n, lo,
                hi, sum / n, OPTIM_NS_AUTO_TAU);
    return r->ns_log ? log_ok(r, r->ns_log, r->o.ns_log, 1) : GPT_OK;
}

/* One update (SPEC §3): the micro-batches, the agreement, the gradient average and all-reduce,
 * the optimizer step, share() of what the owners stepped (all three where the optimizer runs),
 * then the head diagnostics on rank 0: the O(Vd) bracket of D(S) every update, the exact D(S)
 * every diam_every updates and at the last. rec->ms times the update alone (the diagnostics after
 * it), so tokens/s counts the training, not what is measured of it. */
static gpt_status update(run *r, train_step_rec *rec)
{
    gpt_optimizer *opt = r->optimizer;
    const gpt_config *cfg = &r->be->config;
    double loss_sum, t0 = gpt_now_seconds(), t_opt;
    float bad_loss = 0.0f;
    char err[512];
    gpt_status gs, failed = GPT_OK;
    int nonfinite = 0;
    if ((gs = r->be->ops->zero_grad(r->be)) != GPT_OK)
        return set_error(r->res, gs, "zero_grad: %s", gpt_status_string(gs));
    loss_sum = micro_batches(r, &failed, &nonfinite, &bad_loss);
    if ((gs = agree(r, &loss_sum, failed, nonfinite, bad_loss)) != GPT_OK) return gs;
    /* the gradient block is the same on every rank after reduce: clipping uses the global norm,
     * and a host step fails on every rank alike */
    if ((gs = opt->ops->reduce(opt, r->w_rank / (double)r->o.accum, err, sizeof err)) != GPT_OK)
        return set_error(r->res, gs, "step %ld: %s", r->step + 1, err);
    t_opt = gpt_now_seconds();
    if ((gs = opt->ops->step(opt, r->step, r->o.steps, err, sizeof err)) != GPT_OK) {
        r->res->agreed = r->size > 1 && opt->ops->agreed_errors && !r->opt.head_sharded;
        return set_error(r->res, gs, "step %ld: %s", r->step + 1, err);
    }
    if ((gs = opt->ops->share(opt, err, sizeof err)) != GPT_OK)
        return set_error(r->res, gs, "step %ld: %s", r->step + 1, err);
    rec->ms = 1e3 * (gpt_now_seconds() - t0);
    rec->opt_ms = 1e3 * (gpt_now_seconds() - t_opt);
    if ((gs = log_ns_budget(r, r->step)) != GPT_OK) return gs;
    r->step++;
    rec->step = r->step;
    rec->tokens = (double)r->step * (double)r->tokens_per_update;
    rec->loss = loss_sum / r->o.accum;
    rec->lr = r->opt.recipe.muon_lr * r->opt.last_lr_factor;
    rec->head_lr = r->opt.recipe.head_lr * r->opt.last_lr_factor;
    rec->grad_norm = r->opt.last_grad_norm;
    rec->d_lo = rec->d_hi = NAN;
    if (r->rank == 0) {
        const float *S = opt->ops->head_step(opt);
        rn_status rs;
        if (!S) return set_error(r->res, GPT_ERR_BACKEND, "step %ld: cannot read the head step back", r->step);
        r->head_S = S;
        rs = rn_row_diameter_bounds(S, (size_t)cfg->vocab_size, (size_t)cfg->d_model, (size_t)cfg->d_model,
                                    &rec->d_lo, &rec->d_hi);
        if (rs != RN_OK)
            return set_error(r->res, optim_rn_status(rs), "step %ld: diameter bounds failed: %s", r->step,
                             rn_status_string(rs));
    }
    rec->d_exact = NAN;
    if ((r->o.diam_every > 0 && r->step % r->o.diam_every == 0) || r->step == r->o.steps) {
        if ((gs = exact_diameter(r, &rec->d_exact)) != GPT_OK) return gs;
        if (r->rank == 0) r->last_d_exact = rec->d_exact;
    }
    return GPT_OK;
}

/* Rank 0's console: the split and the communication of every update (README.md "Many
 * processes" has the formulas). */
static void describe_ranks(run *r)
{
    const optim_set *o = &r->opt;
    double grad = 4.0 * (double)r->be->layout.n_params, share = 0.0, maxl = 0.0, suml = 0.0;
    int k, owned = 0;
    if (r->rank != 0) return;
    for (k = 0; k < o->n_segs; k++) share += 4.0 * (double)o->segs[k].count;
    for (k = 0; k < o->n_step_segs; k++) share += 4.0 * (double)o->step_segs[k].count;
    for (k = 0; k < o->n_slots; k++) owned += o->owner[k] >= 0;
    for (k = 0; k < o->nranks; k++) suml += o->load[k], maxl = o->load[k] > maxl ? o->load[k] : maxl;
    const char *via = r->comm->ops->name;
    char vias[128];
    if (r->optimizer->comm != r->comm) { /* a device optimizer on its own communicator */
        snprintf(vias, sizeof vias, "%s for gradients and parameters, %s for the rest", r->optimizer->comm->ops->name,
                 r->comm->ops->name);
        via = vias;
    }
    console(r, "data parallel: %d ranks (%s), global micro-batch %d = %d..%d rows per rank; Muon matrices: %s",
            r->size, via, r->o.batch, r->o.batch / r->size, (r->o.batch + r->size - 1) / r->size,
            owned ? "" : "stepped on every rank\n");
    if (owned) {
        for (k = 0; k < o->nranks; k++) {
            int j, cnt = 0;
            for (j = 0; j < o->n_slots; j++) cnt += o->owner[j] == k;
            printf("%srank %d: %d (NS load %.1f%%)", k ? ", " : "", k, cnt, suml > 0 ? 100.0 * o->load[k] / suml : 0.0);
        }
        printf("; max/mean load %.3f\n", suml > 0 ? maxl * o->nranks / suml : 1.0);
    }
    if (o->head_sharded) console(r, "head: RowNorm sharded by vocabulary rows (%zu..%zu rows per rank)\n",
                                 (size_t)r->be->config.vocab_size / (size_t)r->size,
                                 ((size_t)r->be->config.vocab_size + (size_t)r->size - 1) / (size_t)r->size);
    console(r, "communication per update: gradient all-reduce %.3f MB (the whole block, once), exchange of stepped "
               "parameters %.3f MB (all-gather%s)\n",
            grad / 1e6, share / 1e6, o->head_sharded ? ", head rows and head step S included" : "");
    fflush(stdout);
}

/* The block norms (spectra.h) of the weights after `step` updates, when norms_every asks for it
 * (every norms_every updates and after the last; rank 0: its parameters are complete after
 * share()). Its own error path (the message in res->error), so that it stays apart from the
 * loop's other functions. */
static gpt_status log_norms(run *r)
{
    gpt_status st;
    if (r->o.norms_every <= 0 || r->rank != 0 || (r->step % r->o.norms_every != 0 && r->step != r->o.steps))
        return GPT_OK;
    if (!r->norms_log) { /* opened at the first sample: a fresh run's step 0 writes it anew, a resume appends */
        r->norms_log = r->o.norms_log ? fopen(r->o.norms_log, r->step > 0 ? "a" : "w") : NULL;
        if (!r->norms_log)
            return set_error(r->res, GPT_ERR_IO, "%s: cannot open the block-norms log",
                             r->o.norms_log ? r->o.norms_log : "(no --norms-log given)");
        if (r->step == 0) spectra_log_header(r->norms_log);
    }
    if ((st = r->be->ops->pull_params(r->be)) != GPT_OK ||
        (st = spectra_log_rows(r->norms_log, r->step, &r->be->config, r->be->ops->params(r->be), r->res->error,
                               sizeof r->res->error)) != GPT_OK ||
        fflush(r->norms_log) != 0 || ferror(r->norms_log)) {
        if (st == GPT_OK) st = GPT_ERR_IO; /* the flush */
        if (!r->res->error[0]) snprintf(r->res->error, sizeof r->res->error, "%s: cannot write the block-norms log", r->o.norms_log);
        r->res->outcome = TRAIN_FAILED;
        r->res->status = st;
        return st;
    }
    return GPT_OK;
}

train_outcome train_run(const train_options *opt, train_result *res)
{
    run r;
    long done_here = 0;
    double flops_per_token;
    int interrupted = 0;
    memset(res, 0, sizeof *res);
    res->final_val_loss = res->final_diameter = res->final_hilbert_rms = NAN;
    memset(&r, 0, sizeof r);
    r.o = *opt;
    r.comm = r.o.comm ? r.o.comm : gpt_comm_single();
    r.rank = r.comm->rank, r.size = r.comm->size;
    if (!r.o.backend) r.o.backend = &gpt_cpu_backend;
    if (!r.o.data_dir) r.o.data_dir = "build/gpt/data";
    if (r.o.progress < 0) r.o.progress = isatty(STDOUT_FILENO);
    if (r.size > 1) r.o.progress = r.rank == 0 && opt->progress > 0; /* mpirun gives ranks a pty: bar only on request */
    r.res = res;
    r.last_d_exact = r.last_val_loss = r.last_hilbert = NAN;
    res->seconds = r.last_line = gpt_now_seconds();
    if (agree_fail(res, r.comm, setup(&r), "setup") != GPT_OK) goto out;
    r.head_S = r.opt.head_step; /* a resumed run's last S, until the first update */
    res->first_step = r.step;
    flops_per_token = gpt_flops_per_token(&r.be->config);
    if (r.step == 0) {
        const gpt_config *c = &r.be->config;
        console(&r, "model: %d layers, d %d, %d heads, mlp %d, vocab %d, T %d: %.2fM parameters; %s head, %s blocks%s; "
                    "B %d x accum %d, %ld steps, seed %llu\n",
                c->n_layers, c->d_model, c->n_heads, c->mlp_hidden, c->vocab_size, c->seq_len,
                (double)r.be->layout.n_params / 1e6, optim_head_name(r.opt.recipe.head),
                optim_block_name(r.opt.recipe.block), r.opt.recipe.ns_per_head ? " (NS per head)" : "", r.o.batch, r.o.accum, r.o.steps,
                (unsigned long long)r.o.seed);
        if (r.size > 1) describe_ranks(&r);
        if (do_eval(&r, 0) != GPT_OK) goto out;
    } else {
        console(&r, "resumed from %s at step %ld of %ld\n", r.o.resume, r.step, r.o.steps);
        if (r.size > 1) describe_ranks(&r);
    }
    r.t_start = gpt_now_seconds();
    while (r.step < r.o.steps) {
        train_step_rec rec;
        if (log_norms(&r) != GPT_OK) goto out; /* the weights before this update (a stop saves before it) */
        if (res->n_steps % 256 == 0) {
            train_step_rec *s = (train_step_rec *)realloc(res->steps, (size_t)(res->n_steps + 256) * sizeof *s);
            if (!s) {
                set_error(res, GPT_ERR_NOMEM, "out of memory");
                goto out;
            }
            res->steps = s;
        }
        if (update(&r, &rec) != GPT_OK) goto out;
        res->steps[res->n_steps++] = rec;
        done_here++;
        {
            double tok_s = (double)r.tokens_per_update / (rec.ms * 1e-3);
            double gflops = flops_per_token * tok_s * 1e-9;
            if (log_train(&r, &rec, tok_s, gflops) != GPT_OK) goto out;
            if (r.o.log_every > 0 && (r.step % r.o.log_every == 0 || r.step == r.o.steps)) {
                char dx[48] = "";
                if (rec.d_exact == rec.d_exact) snprintf(dx, sizeof dx, " D %.3e", rec.d_exact);
                console(&r, "step %5ld/%ld | loss %.4f | lr %.2e | %7.1f ms | %6.0f tok/s | %6.2f GFLOP/s | "
                            "D in [%.3e, %.3e]%s\n",
                        r.step, r.o.steps, rec.loss, rec.lr, rec.ms, tok_s, gflops, rec.d_lo, rec.d_hi, dx);
            }
        }
        if (r.o.eval_every > 0 && r.step % r.o.eval_every == 0 && r.step != r.o.steps)
            if (do_eval(&r, 0) != GPT_OK) goto out;
        if (r.step == r.o.steps) break;
        interrupted = r.size > 1 ? r.stop_agreed : train__sigint != 0; /* every rank decides alike */
        if (interrupted || (r.o.stop_at > 0 && r.step >= r.o.stop_at) ||
            (r.o.ckpt_every > 0 && r.step % r.o.ckpt_every == 0)) {
            if (save_checkpoint(&r) != GPT_OK) goto out;
            if (interrupted || (r.o.stop_at > 0 && r.step >= r.o.stop_at)) {
                res->outcome = interrupted ? TRAIN_INTERRUPTED : TRAIN_STOPPED;
                console(&r, "%s at step %ld: checkpoint %s\n", interrupted ? "interrupted" : "stopped", r.step,
                        r.o.ckpt_path ? r.o.ckpt_path : "(none: no --ckpt given)");
                goto out;
            }
        }
        if (r.o.progress) draw_bar(&r, gpt_now_seconds() - r.t_start, done_here);
        else progress_line(&r, gpt_now_seconds() - r.t_start, done_here);
    }
    /* the end of the schedule: final evaluation, exact D of the last step, checkpoint */
    if (done_here > 0 && log_norms(&r) != GPT_OK) goto out;
    if (done_here > 0) {
        if (do_eval(&r, 1) != GPT_OK) goto out;
    } else if (evaluate(&r, &r.last_val_loss, &r.last_hilbert) != GPT_OK) { /* resumed at the end: not logged */
        goto out;
    }
    if (!(r.last_d_exact == r.last_d_exact) && exact_diameter(&r, &r.last_d_exact) != GPT_OK) goto out;
    res->final_val_loss = r.last_val_loss;
    res->final_hilbert_rms = r.last_hilbert;
    res->final_diameter = r.last_d_exact;
    if (done_here > 0) {
        if (log_eval(&r, "final", r.step, (double)r.step * (double)r.tokens_per_update, r.last_d_exact,
                     r.last_val_loss, r.last_hilbert) != GPT_OK ||
            save_checkpoint(&r) != GPT_OK)
            goto out;
    }
    console(&r, "done: %ld steps, final val loss %.4f, D(S) %.4e, Hilbert RMS %.4e, %.1f s\n", r.step,
            res->final_val_loss, res->final_diameter, res->final_hilbert_rms, gpt_now_seconds() - res->seconds);
    res->outcome = TRAIN_DONE;
    if (r.o.sample_tokens > 0 && sample_text(&r) != GPT_OK) goto out;
out:
    clear_bar(&r);
    res->last_step = r.step;
    res->seconds = gpt_now_seconds() - res->seconds;
    teardown(&r);
    return res->outcome;
}
