/* cli.c - the trainer's command line and main() (cli.h). */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include "checkpoint.h"
#include "experiment.h"
#ifdef GPT_WITH_CUDA
#include "cuda_backend.h" /* --backend cuda (build/gpt/train_cuda, cuda.mk) */
#endif

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- the flag table ------------------------------------------------------------------------- */

typedef enum {
    K_SECTION, /* a heading of the usage text, not a flag */
    K_HELP,
    K_SWITCH,  /* no value: stores lo into an int */
    K_STR,     /* const char * */
    K_INT,     /* int in [lo, hi] */
    K_LONG,    /* long in [lo, hi] */
    K_SEED,    /* uint64_t from [lo, hi] */
    K_REAL,    /* double in [0, 1e30] */
    K_FRAC,    /* double in [0, 1] */
    K_HEAD,    /* optim_head_kind (and its defaults: applied before every other flag) */
    K_BLOCK,   /* optim_block_kind */
    K_CAP,     /* muon_cap_mode */
    K_NSPREC,  /* muon_ns_precision */
    K_NSSTEPS, /* int in [lo, hi], or auto (OPTIM_NS_AUTO) */
    K_BACKEND  /* const gpt_backend_ops * */
} cli_kind;

enum { M_RUN = 1, M_EXP = 2, M_ALL = 3 }; /* the modes a flag applies to */
enum { M_CK = 4 }; /* with --resume the checkpoint holds its value: a different one is refused */

typedef struct cli_flag {
    const char *name;
    cli_kind kind;
    size_t off; /* of the field in train_cli */
    long lo, hi;
    int modes;
    const char *arg; /* the value's name in the usage text (NULL: none) */
    const char *help;
} cli_flag;

#define F(field) offsetof(train_cli, field)
#define SECTION(text) {text, K_SECTION, 0, 0, 0, 0, NULL, NULL}
#define BIG (1L << 30)

static const cli_flag cli_flags[] = {
    SECTION("data and model"),
    {"--data", K_STR, F(opt.data_dir), 0, 0, M_ALL, "DIR", "tokenizer.bin, train.bin, val.bin from build/gpt/prepare (build/gpt/data)"},
    {"--layers", K_INT, F(opt.model.n_layers), 1, 1 << 16, M_ALL | M_CK, "N", "transformer blocks (2)"},
    {"--d-model", K_INT, F(opt.model.d_model), 2, 1 << 16, M_ALL | M_CK, "N", "model width (128)"},
    {"--heads", K_INT, F(opt.model.n_heads), 1, 1 << 16, M_ALL | M_CK, "N", "attention heads (2)"},
    {"--mlp", K_INT, F(opt.model.mlp_hidden), 1, 1 << 20, M_ALL | M_CK, "N", "SwiGLU hidden width (8/3 d)"},
    {"--batch", K_INT, F(opt.batch), 1, 1 << 16, M_ALL | M_CK, "B", "sequences per micro-batch, global over ranks (8)"},
    {"--seq", K_INT, F(opt.seq), 1, 1 << 16, M_ALL | M_CK, "T", "tokens per sequence (64)"},
    {"--accum", K_INT, F(opt.accum), 1, 1 << 16, M_ALL | M_CK, "K", "micro-batches per update (1)"},
    {"--steps", K_LONG, F(opt.steps), 1, OPTIM_MAX_STEPS, M_ALL | M_CK, "N", "updates in the schedule (200)"},
    {"--stop-at", K_LONG, F(opt.stop_at), 0, OPTIM_MAX_STEPS, M_RUN, "N", "save a checkpoint and stop after N updates, as if interrupted"},
    {"--seed", K_SEED, F(opt.seed), 0, 0x7fffffffL, M_ALL | M_CK, "S", "initialisation and data order (1; experiment: the first seed)"},
    SECTION("optimizers (SPEC 3; defaults in README.md)"),
    {"--head", K_HEAD, F(opt.recipe.head), 0, 0, M_RUN | M_CK, "adamw|rownorm|muon", "head optimizer and its defaults (adamw)"},
    {"--block", K_BLOCK, F(opt.recipe.block), 0, 0, M_ALL | M_CK, "muon|muown|normuon", "block-matrix optimizer (muon)"},
    {"--ns-per-head", K_SWITCH, F(opt.recipe.ns_per_head), 1, 0, M_ALL | M_CK, NULL, "Newton-Schulz per attention head: Q, K, V by rows, O by columns"},
    {"--cap", K_CAP, F(opt.recipe.cap), 0, 0, M_ALL | M_CK, "off|growth|always", "spectral cap on the block matrices (off)"},
    {"--ns-steps", K_NSSTEPS, F(opt.recipe.ns_steps), 1, 100, M_ALL | M_CK, "K|auto", "Newton-Schulz steps, Jordan schedule (5); auto: per matrix from its momentum's spectrum"},
    {"--ns-every", K_INT, F(opt.recipe.ns_every), 1, BIG, M_ALL | M_CK, "N", "with --ns-steps auto: budget every N updates (50)"},
    {"--ns-precision", K_NSPREC, F(opt.recipe.ns_precision), 0, 0, M_ALL | M_CK, "fp32|bf16", "Newton-Schulz arithmetic: bf16 as the reference Muon (fp32)"},
    {"--lr-muon", K_REAL, F(opt.recipe.muon_lr), 0, 0, M_ALL | M_CK, "X", "peak rate of the block matrices (0.02)"},
    {"--lr-embed", K_REAL, F(opt.recipe.embed_lr), 0, 0, M_ALL | M_CK, "X", "peak rate of the embedding (4e-3)"},
    {"--lr-head", K_REAL, F(opt.recipe.head_lr), 0, 0, M_RUN | M_CK, "X", "peak rate of the head (adamw 4e-3, rownorm 3.2e-3, muon 0.02)"},
    {"--wd-muon", K_REAL, F(opt.recipe.muon_wd), 0, 0, M_ALL | M_CK, "X", "decoupled weight decay of the block matrices (0.1)"},
    {"--wd-head", K_REAL, F(opt.recipe.head_wd), 0, 0, M_RUN | M_CK, "X", "decoupled weight decay of the head (adamw 0.1, rownorm 0, muon 0.1)"},
    {"--wd-embed", K_REAL, F(opt.recipe.embed_wd), 0, 0, M_ALL | M_CK, "X", "decoupled weight decay of the embedding (0)"},
    {"--warmup", K_FRAC, F(opt.recipe.warmup_frac), 0, 0, M_ALL | M_CK, "F", "share of the updates in the linear warm-up (0.1)"},
    {"--final-lr", K_FRAC, F(opt.recipe.final_frac), 0, 0, M_ALL | M_CK, "F", "final rate of the cosine, as a share of the peak (0.1)"},
    {"--clip", K_REAL, F(opt.recipe.clip), 0, 0, M_ALL | M_CK, "X", "global gradient-norm clip (1.0; 0 = off)"},
    SECTION("evaluation, diagnostics, logs"),
    {"--eval-every", K_INT, F(opt.eval_every), 0, BIG, M_ALL, "N", "evaluate every N updates, at step 0 and at the end (50)"},
    {"--eval-batches", K_INT, F(opt.eval_batches), 0, BIG, M_ALL, "N", "validation batches per evaluation (8; 0 = the whole split)"},
    {"--panel", K_INT, F(opt.panel_seqs), 0, 1 << 20, M_ALL, "N", "validation sequences in the Hilbert RMS panel (8)"},
    {"--diam-every", K_INT, F(opt.diam_every), 0, BIG, M_ALL, "N", "exact D of the head step every N updates and at the last (10)"},
    {"--log", K_STR, F(opt.log_path), 0, 0, M_RUN, "FILE", "CSV log (OUT/train.csv; 'none' for no log)"},
    {"--log-every", K_INT, F(opt.log_every), 0, BIG, M_ALL, "N", "a console line every N updates (1; 0 = quiet; experiment: 0, one line per run)"},
    {"--sv", K_STR, F(opt.sv_tensors), 0, 0, M_ALL, "LIST", "momentum spectra at each evaluation: tensor names, comma-separated, or all"},
    {"--sv-log", K_STR, F(opt.sv_log), 0, 0, M_RUN, "FILE", "CSV of those spectra (OUT/spectra.csv when --sv is given)"},
    {"--norms-every", K_INT, F(opt.norms_every), 0, BIG, M_RUN, "N", "block matrices' ||W||_F, ||W||_2, row factors, H_inf at step 0, every N updates, at the last (0: off)"},
    {"--norms-log", K_STR, F(opt.norms_log), 0, 0, M_RUN, "FILE", "CSV of those (OUT/norms.csv when --norms-every is given)"},
    {"--ns-log", K_STR, F(opt.ns_log), 0, 0, M_RUN, "FILE", "CSV of each --ns-steps auto budget, per matrix (OUT/ns_budget.csv)"},
    {"--progress", K_SWITCH, F(opt.progress), 1, 0, M_ALL, NULL, "progress bar and ETA (default: when stdout is a terminal)"},
    {"--no-progress", K_SWITCH, F(opt.progress), 0, 0, M_ALL, NULL, "no progress bar"},
    {"--progress-every", K_REAL, F(opt.progress_every), 0, 0, M_ALL, "S", "without the bar (stdout not a terminal): a plain progress line after S s without output (30; 0 = none)"},
    SECTION("checkpoints and sampling"),
    {"--ckpt", K_STR, F(opt.ckpt_path), 0, 0, M_RUN, "FILE", "checkpoint path (OUT/ckpt.bin; 'none' for none)"},
    {"--ckpt-every", K_INT, F(opt.ckpt_every), 0, BIG, M_ALL, "N", "also save every N updates (0)"},
    {"--resume", K_STR, F(opt.resume), 0, 0, M_RUN, "FILE", "resume (model, batch, schedule and recipe come from the checkpoint)"},
    {"--sample", K_INT, F(opt.sample_tokens), 0, 1 << 20, M_RUN, "N", "sample N tokens after training (0)"},
    {"--prompt", K_STR, F(opt.prompt), 0, 0, M_RUN, "TEXT", "the sample's prompt"},
    {"--temperature", K_REAL, F(opt.temperature), 0, 0, M_RUN, "X", "sampling temperature (0.8; 0 = greedy)"},
    {"--sample-seed", K_SEED, F(opt.sample_seed), 0, 0x7fffffffL, M_RUN, "S", "sampling seed"},
    SECTION("outputs and modes"),
    {"--out", K_STR, F(out_dir), 0, 0, M_ALL, "DIR", "output directory (build/gpt/run; experiment: build/gpt/experiment)"},
    {"--name", K_STR, F(opt.run_name), 0, 0, M_RUN, "NAME", "prefix of console lines"},
    {"--experiment", K_SWITCH, F(experiment), 1, 0, M_EXP, NULL, "paired AdamW-head vs RowNorm-head runs; writes table.md and SVG plots"},
    {"--seeds", K_INT, F(seeds), 1, 100, M_EXP, "N", "experiment: seeds S..S+N-1 at the best and at the paper's rates (3)"},
    {"--sweep-adamw", K_STR, F(sweep[0]), 0, 0, M_EXP, "LIST", "experiment: the AdamW arm's peak head rates (" EXP_SWEEP_ADAMW ")"},
    {"--sweep-rownorm", K_STR, F(sweep[1]), 0, 0, M_EXP, "LIST", "experiment: the RowNorm arm's peak head rates (" EXP_SWEEP_ROWNORM ")"},
    {"--sweep-extend", K_INT, F(sweep_extend), 0, 16, M_EXP, "N", "experiment: extend a grid whose best is at an edge, up to N times (2)"},
    {"--sweep-seeds", K_INT, F(sweep_seeds), 1, 100, M_EXP, "K", "experiment: seeds S..S+K-1 at every rate of the sweeps; the best rate has the lowest mean (2; at most --seeds)"},
    {"--lr-head-adamw", K_REAL, F(exp_head_lr[0]), 0, 0, M_EXP, "X", "experiment: fix the AdamW arm's head rate, no sweep (paper: 4e-3)"},
    {"--lr-head-rownorm", K_REAL, F(exp_head_lr[1]), 0, 0, M_EXP, "X", "experiment: fix the RowNorm arm's head rate, no sweep (paper: 3.2e-3)"},
    {"--backend", K_BACKEND, F(opt.backend), 0, 0, M_ALL, "cpu|cuda", "compute backend (cpu; cuda only in build/gpt/train_cuda)"},
    {"--host-optim", K_SWITCH, F(opt.host_optim), 1, 0, M_ALL, NULL, "with --backend cuda: the optimizer on the host (default: on the device)"},
    SECTION("many processes (build/gpt/train_mpi, train_cuda_nccl; mpirun -np N ...; --batch is global)"),
    {"--no-muon-split", K_SWITCH, F(opt.no_muon_split), 1, 0, M_ALL, NULL, "every rank runs every Muon step (default: each matrix on one owner)"},
    {"--shard-head", K_SWITCH, F(opt.shard_head), 1, 0, M_ALL, NULL, "RowNorm head: each rank steps its share of the vocabulary rows"},
    SECTION("help"),
    {"--help", K_HELP, 0, 0, 0, M_ALL, NULL, "this text (also -h)"},
};
#define N_FLAGS ((int)(sizeof cli_flags / sizeof cli_flags[0]))
typedef char cli_given_fits[N_FLAGS <= CLI_MAX_FLAGS ? 1 : -1]; /* train_cli.given has a slot per entry */

int cli_flag_count(void)
{
    int k, n = 0;
    for (k = 0; k < N_FLAGS; k++) n += cli_flags[k].kind != K_SECTION;
    return n;
}

const char *cli_flag_name(int k)
{
    int i;
    for (i = 0; i < N_FLAGS; i++)
        if (cli_flags[i].kind != K_SECTION && k-- == 0) return cli_flags[i].name;
    return NULL;
}

void cli_usage(FILE *f)
{
    int k;
    fprintf(f, "usage: train [flags]                 one training run\n"
               "       train --experiment [flags]    paired AdamW-head vs RowNorm-head runs over --seeds seeds\n"
               "(flags marked [run] apply to one run only, [experiment] to --experiment only; [ckpt]: with --resume\n"
               " the checkpoint's value holds, and a different one is refused)\n");
    for (k = 0; k < N_FLAGS; k++) {
        const cli_flag *c = &cli_flags[k];
        char left[64];
        if (c->kind == K_SECTION) {
            fprintf(f, "%s:\n", c->name);
            continue;
        }
        snprintf(left, sizeof left, "%s%s%s", c->name, c->arg ? " " : "", c->arg ? c->arg : "");
        fprintf(f, "  %-30s %s%s%s\n", left, c->help,
                (c->modes & M_ALL) == M_RUN ? " [run]" : (c->modes & M_ALL) == M_EXP ? " [experiment]" : "",
                c->modes & M_CK ? " [ckpt]" : "");
    }
}

/* ---- parsing -------------------------------------------------------------------------------- */

/* What to give instead of a flag that does not apply to the mode it is given in. */
static const char *other_mode_hint(const char *flag, int mode)
{
    static const struct {
        const char *flag, *hint;
        int mode;
    } hints[] = {
        {"--lr-head", "--lr-head-adamw / --lr-head-rownorm (a fixed rate per arm) or --sweep-adamw / --sweep-rownorm", M_EXP},
        {"--head", "nothing: the experiment runs both the AdamW and the RowNorm head", M_EXP},
        {"--wd-head", "nothing: each arm uses its paper decay (AdamW 0.1, RowNorm 0)", M_EXP},
        {"--log", "--out DIR (each run's log is DIR/<head>_lr<rate>_seed<S>.csv)", M_EXP},
        {"--ckpt", "--out DIR (each run's checkpoint is written beside its log)", M_EXP},
        {"--lr-head-adamw", "--head adamw --lr-head X", M_RUN},
        {"--lr-head-rownorm", "--head rownorm --lr-head X", M_RUN},
        {"--sweep-adamw", "--experiment (a sweep is part of the experiment)", M_RUN},
        {"--sweep-rownorm", "--experiment (a sweep is part of the experiment)", M_RUN},
        {"--sweep-seeds", "--experiment (a sweep is part of the experiment)", M_RUN},
        {"--seeds", "--seed S (one run), or --experiment --seeds N", M_RUN},
    };
    size_t k;
    for (k = 0; k < sizeof hints / sizeof hints[0]; k++)
        if (hints[k].mode == mode && strcmp(hints[k].flag, flag) == 0) return hints[k].hint;
    return NULL;
}

/* A decimal integer in [lo, hi] into *out; GPT_ERR_CONFIG (nothing written) for anything else
 * (the caller names the flag). */
static gpt_status parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > hi) return GPT_ERR_CONFIG;
    *out = v;
    return GPT_OK;
}

/* A number in [0, hi] into *out (NaN refused); GPT_ERR_CONFIG (nothing written) otherwise. */
static gpt_status parse_double(const char *s, double hi, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (!*s || *end || !(v == v) || v < 0.0 || v > hi) return GPT_ERR_CONFIG;
    *out = v;
    return GPT_OK;
}

static const cli_flag *find_flag(const char *a)
{
    int k;
    if (strcmp(a, "-h") == 0) a = "--help";
    for (k = 0; k < N_FLAGS; k++)
        if (cli_flags[k].kind != K_SECTION && strcmp(cli_flags[k].name, a) == 0) return &cli_flags[k];
    return NULL;
}

/* Stores value v of flag c into cli; GPT_ERR_CONFIG if v is not a value of c (the caller says so). */
static gpt_status store(train_cli *cli, const cli_flag *c, const char *v)
{
    char *field = (char *)cli + c->off;
    long n;
    double x;
    switch (c->kind) {
    case K_SWITCH: *(int *)(void *)field = (int)c->lo; return GPT_OK;
    case K_STR: *(const char **)(void *)field = v; return GPT_OK;
    case K_INT:
        if (parse_long(v, c->lo, c->hi, &n) != GPT_OK) return GPT_ERR_CONFIG;
        *(int *)(void *)field = (int)n;
        return GPT_OK;
    case K_LONG: return parse_long(v, c->lo, c->hi, (long *)(void *)field);
    case K_SEED:
        if (parse_long(v, c->lo, c->hi, &n) != GPT_OK) return GPT_ERR_CONFIG;
        *(uint64_t *)(void *)field = (uint64_t)n;
        return GPT_OK;
    case K_REAL: return parse_double(v, 1e30, (double *)(void *)field);
    case K_FRAC:
        if (parse_double(v, 1.0, &x) != GPT_OK) return GPT_ERR_CONFIG;
        *(double *)(void *)field = x;
        return GPT_OK;
    case K_HEAD: {
        optim_head_kind h;
        optim_recipe d;
        optim_recipe *r = &cli->opt.recipe;
        if (!optim_head_parse(v, &h)) return GPT_ERR_CONFIG;
        d = optim_default(h);
        r->head = h;
        r->head_lr = d.head_lr, r->head_beta1 = d.head_beta1, r->head_beta2 = d.head_beta2;
        r->head_eps = d.head_eps, r->head_wd = d.head_wd;
        return GPT_OK;
    }
    case K_BLOCK: return optim_block_parse(v, &cli->opt.recipe.block) ? GPT_OK : GPT_ERR_CONFIG;
    case K_CAP:
        if (strcmp(v, "off") == 0) cli->opt.recipe.cap = MUON_CAP_OFF;
        else if (strcmp(v, "growth") == 0) cli->opt.recipe.cap = MUON_CAP_GROWTH;
        else if (strcmp(v, "always") == 0) cli->opt.recipe.cap = MUON_CAP_ALWAYS;
        else return GPT_ERR_CONFIG;
        return GPT_OK;
    case K_NSSTEPS:
        if (strcmp(v, "auto") == 0) {
            *(int *)(void *)field = OPTIM_NS_AUTO;
            return GPT_OK;
        }
        if (parse_long(v, c->lo, c->hi, &n) != GPT_OK) return GPT_ERR_CONFIG;
        *(int *)(void *)field = (int)n;
        return GPT_OK;
    case K_NSPREC:
        if (strcmp(v, "fp32") == 0) cli->opt.recipe.ns_precision = MUON_NS_FP32;
        else if (strcmp(v, "bf16") == 0) cli->opt.recipe.ns_precision = MUON_NS_BF16;
        else return GPT_ERR_CONFIG;
        return GPT_OK;
    case K_BACKEND:
        if (strcmp(v, "cpu") == 0) cli->opt.backend = &gpt_cpu_backend;
#ifdef GPT_WITH_CUDA
        else if (strcmp(v, "cuda") == 0) cli->opt.backend = &gpt_cuda_backend;
#endif
        else return GPT_ERR_CONFIG;
        return GPT_OK;
    case K_SECTION:
    case K_HELP: break;
    }
    return GPT_ERR_CONFIG;
}

gpt_status cli_parse(train_cli *cli, int argc, char **argv)
{
    int i, pass, mode = M_RUN;
    gpt_status st;
    for (i = 1; i < argc; i++)
        if (strcmp(argv[i], "--experiment") == 0) mode = M_EXP;
    /* pass 0 checks every flag and applies --head (it sets the head defaults that --lr-head and
     * --wd-head override, wherever they stand); pass 1 applies the rest */
    for (pass = 0; pass < 2; pass++) {
        for (i = 1; i < argc; i++) {
            const char *a = argv[i], *v = NULL;
            const cli_flag *c = find_flag(a);
            int takes;
            if (!c) {
                fprintf(stderr, "train: unknown flag %s (see --help)\n", a);
                return GPT_ERR_CONFIG;
            }
            if (c->kind == K_HELP) {
                if (pass == 1) continue;
                cli_usage(stdout);
                cli->help = 1;
                return GPT_OK;
            }
            takes = c->arg != NULL;
            if (takes && i + 1 >= argc) {
                fprintf(stderr, "train: %s needs a value (%s)\n", a, c->arg);
                return GPT_ERR_CONFIG;
            }
            if (takes) v = argv[i + 1];
            if (takes && strncmp(v, "--", 2) == 0 && strlen(v) > 2) { /* the next flag taken as the value */
                fprintf(stderr, "train: %s needs a value (%s), got the flag %s\n", a, c->arg, v);
                return GPT_ERR_CONFIG;
            }
            if (!(c->modes & mode)) {
                const char *hint = other_mode_hint(a, mode);
                fprintf(stderr, "train: %s applies to %s only; %s%s\n", a,
                        (c->modes & M_ALL) == M_RUN ? "one run, not to --experiment" : "--experiment",
                        hint ? "use " : "see --help", hint ? hint : "");
                return GPT_ERR_CONFIG;
            }
            cli->given[c - cli_flags] = 1;
            if ((pass == 0) == (c->kind == K_HEAD) && store(cli, c, v) != GPT_OK) {
                fprintf(stderr, "train: bad value '%s' for %s (%s)\n", v ? v : "", a, c->arg ? c->arg : "");
                return GPT_ERR_CONFIG;
            }
            i += takes;
        }
    }
    { /* the model's rules, up front (the vocabulary, from the tokenizer, is checked with the data) */
        gpt_config c = cli->opt.model;
        char err[256];
        c.seq_len = cli->opt.seq;
        c.vocab_size = 257; /* the smallest tokenizer */
        if ((st = gpt_config_check(&c, err, sizeof err)) != GPT_OK) {
            fprintf(stderr, "train: %s\n", err);
            return st;
        }
    }
    { /* lr x weight decay of every optimizer within muon.h's / rownorm.h's domain, up front */
        char err[512];
        if ((st = optim_recipe_check(&cli->opt.recipe, mode == M_RUN, err, sizeof err)) != GPT_OK) {
            fprintf(stderr, "train: %s\n", err);
            return st;
        }
    }
    if (mode == M_EXP) { /* a fixed rate and a sweep for the same arm contradict each other */
        static const char *const arm[2] = {"adamw", "rownorm"};
        static const optim_head_kind arm_head[2] = {OPTIM_ADAMW, OPTIM_ROWNORM};
        double rates[EXP_MAX_RATES];
        char err[512], what[64], wd_what[64];
        int k, n = 0, j;
        for (k = 0; k < 2; k++) {
            double wd = optim_default(arm_head[k]).head_wd;
            if (cli->sweep[k] && cli->exp_head_lr[k] > 0.0) {
                fprintf(stderr, "train: --lr-head-%s fixes the %s arm's rate, --sweep-%s sweeps it: give one of them\n",
                        arm[k], arm[k], arm[k]);
                return GPT_ERR_CONFIG;
            }
            if (cli->sweep[k] && (st = exp_parse_rates(cli->sweep[k], rates, &n, err, sizeof err)) != GPT_OK) {
                fprintf(stderr, "train: --sweep-%s: %s\n", arm[k], err);
                return st;
            }
            /* the arm's head decay is its paper value: each rate it runs at must keep lr x wd <= 1 */
            snprintf(wd_what, sizeof wd_what, "the %s arm's head weight decay", arm[k]);
            if (cli->exp_head_lr[k] > 0.0) {
                snprintf(what, sizeof what, "--lr-head-%s", arm[k]);
                if ((st = optim_lr_wd_check(what, cli->exp_head_lr[k], wd_what, wd, err, sizeof err)) != GPT_OK) {
                    fprintf(stderr, "train: %s\n", err);
                    return st;
                }
            } else if (cli->sweep[k]) {
                snprintf(what, sizeof what, "--sweep-%s rate", arm[k]);
                for (j = 0; j < n; j++)
                    if ((st = optim_lr_wd_check(what, rates[j], wd_what, wd, err, sizeof err)) != GPT_OK) {
                        fprintf(stderr, "train: %s\n", err);
                        return st;
                    }
            }
        }
    }
    return GPT_OK;
}

/* ---- --resume against the flags the checkpoint decides ------------------------------------- */

/* The value of flag c in cli, as the user would write it. */
static void flag_value(const train_cli *cli, const cli_flag *c, char *out, size_t cap)
{
    const char *field = (const char *)cli + c->off;
    int prec;
    double x;
    switch (c->kind) {
    case K_SWITCH: snprintf(out, cap, "%s", *(const int *)(const void *)field ? "on" : "off"); return;
    case K_INT: snprintf(out, cap, "%d", *(const int *)(const void *)field); return;
    case K_LONG: snprintf(out, cap, "%ld", *(const long *)(const void *)field); return;
    case K_SEED: snprintf(out, cap, "%llu", (unsigned long long)*(const uint64_t *)(const void *)field); return;
    case K_REAL:
    case K_FRAC: /* the shortest form that reads back as the value */
        x = *(const double *)(const void *)field;
        for (prec = 6; prec <= 17; prec++) {
            snprintf(out, cap, "%.*g", prec, x);
            if (strtod(out, NULL) == x) break;
        }
        return;
    case K_HEAD: snprintf(out, cap, "%s", optim_head_name(cli->opt.recipe.head)); return;
    case K_BLOCK: snprintf(out, cap, "%s", optim_block_name(cli->opt.recipe.block)); return;
    case K_CAP:
        snprintf(out, cap, "%s", cli->opt.recipe.cap == MUON_CAP_OFF ? "off" : cli->opt.recipe.cap == MUON_CAP_GROWTH ? "growth" : "always");
        return;
    case K_NSPREC: snprintf(out, cap, "%s", cli->opt.recipe.ns_precision == MUON_NS_BF16 ? "bf16" : "fp32"); return;
    case K_NSSTEPS:
        if (*(const int *)(const void *)field == OPTIM_NS_AUTO) snprintf(out, cap, "auto");
        else snprintf(out, cap, "%d", *(const int *)(const void *)field);
        return;
    default: snprintf(out, cap, "?"); return;
    }
}

gpt_status cli_resume_conflicts(const train_cli *cli, int *count, char *err, size_t errlen)
{
    ckpt_reader ck;
    train_result res;
    train_cli at; /* the command line with the checkpoint's values */
    size_t used = 0;
    int k, n = 0;
    if (count) *count = 0;
    if (!cli->opt.resume) return GPT_OK;
    if (ckpt_read_file(&ck, cli->opt.resume, NULL, 0) != GPT_OK) return GPT_OK; /* train_run reports it */
    at = *cli;
    memset(&res, 0, sizeof res);
    if (train_check_checkpoint(&ck, &at.opt, &res) != GPT_OK) {
        ckpt_reader_free(&ck);
        return GPT_OK;
    }
    ckpt_reader_free(&ck);
    if (err && errlen) err[0] = 0;
    for (k = 0; k < N_FLAGS; k++) {
        const cli_flag *c = &cli_flags[k];
        char mine[64], theirs[64];
        if (!(c->modes & M_CK) || !cli->given[k]) continue;
        flag_value(cli, c, mine, sizeof mine);
        flag_value(&at, c, theirs, sizeof theirs);
        if (strcmp(mine, theirs) == 0) continue;
        if (err && used < errlen) {
            int w = c->kind == K_SWITCH
                        ? snprintf(err + used, errlen - used, "%s%s (the checkpoint's: %s)", n ? ", " : "", c->name, theirs)
                        : snprintf(err + used, errlen - used, "%s%s %s (the checkpoint's: %s)", n ? ", " : "", c->name,
                                   mine, theirs);
            used += w > 0 ? (size_t)w : 0;
        }
        n++;
    }
    if (count) *count = n;
    return n ? GPT_ERR_CONFIG : GPT_OK;
}

/* ---- main ------------------------------------------------------------------------------------ */

#ifndef GPT_CLI_NO_MAIN
#include <sys/stat.h>

static void make_dir(const char *dir)
{
    char path[1024];
    size_t i, n = strlen(dir);
    if (n == 0 || n >= sizeof path) return;
    memcpy(path, dir, n + 1);
    for (i = 1; i <= n; i++)
        if (path[i] == '/' || path[i] == 0) {
            char c = path[i];
            path[i] = 0;
            mkdir(path, 0777);
            path[i] = c;
        }
}

/* A finished run's plots (loss.svg, diameter.svg, hilbert_rms.svg in out_dir) from its log, with
 * the recipe and the rate in the caption; GPT_OK, or the failure (message printed). */
static gpt_status run_plots(const train_cli *cli)
{
    exp_log L;
    char err[512], name[64], *recipe, *cap;
    const char *names[1], *colors[1], *lr, *seed;
    gpt_status st;
    if ((st = exp_log_read(cli->opt.log_path, &L, err, sizeof err)) != GPT_OK) {
        fprintf(stderr, "train: plots: %s\n", err);
        return st;
    }
    snprintf(name, sizeof name, "%s head", optim_head_name(cli->opt.recipe.head));
    names[0] = name;
    colors[0] = exp_head_color(cli->opt.recipe.head);
    lr = exp_log_recipe(&L, "head_lr"), seed = exp_log_recipe(&L, "seed");
    recipe = exp_recipe_caption(&L);
    cap = recipe ? (char *)malloc(strlen(recipe) + 128) : NULL;
    if (!cap) {
        fprintf(stderr, "train: plots: out of memory\n");
        st = GPT_ERR_NOMEM;
    } else {
        sprintf(cap, "%s\n%s head lr %s; seed %s", recipe, optim_head_name(cli->opt.recipe.head), lr ? lr : "?",
                seed ? seed : "?");
        st = exp_write_plots(cli->out_dir, &L, 1, 1, names, colors, cap, err, sizeof err);
        if (st != GPT_OK) fprintf(stderr, "train: plots: %s\n", err);
        else printf("wrote %s/loss.svg, diameter.svg, hilbert_rms.svg\n", cli->out_dir);
    }
    free(recipe), free(cap);
    exp_log_free(&L);
    return st;
}

/* With --resume (rank 0): the flags that differ from the checkpoint's values, refused with a
 * message before anything runs (GPT_ERR_CONFIG; the other ranks are aborted). */
static gpt_status resume_check(const train_cli *cli)
{
    gpt_comm *comm = cli->opt.comm;
    if (cli->opt.resume && comm->rank == 0) {
        char why[2048];
        gpt_status st = cli_resume_conflicts(cli, NULL, why, sizeof why);
        if (st != GPT_OK) {
            fprintf(stderr, "train: --resume %s: the checkpoint holds the model, batch, schedule and recipe, and these "
                            "flags differ from it: %s; leave them out or give the checkpoint's values\n",
                    cli->opt.resume, why);
            if (comm->size > 1) comm->ops->abort(comm, 2);
            return st;
        }
    }
    return GPT_OK;
}

/* One run with the paths defaulted into out_dir, its messages printed: GPT_OK when it ran to its
 * end or stopped (*outcome says which: TRAIN_INTERRUPTED on SIGINT), else the run's status or
 * the plots'. */
static gpt_status one_run(train_cli *cli, train_outcome *outcome)
{
    char log_path[1100], ckpt_path[1100], sv_path[1100], norms_path[1100], ns_path[1100];
    gpt_comm *comm = cli->opt.comm;
    train_result res;
    gpt_status st;
    if (!cli->opt.log_path) snprintf(log_path, sizeof log_path, "%s/train.csv", cli->out_dir), cli->opt.log_path = log_path;
    if (!cli->opt.ckpt_path) snprintf(ckpt_path, sizeof ckpt_path, "%s/ckpt.bin", cli->out_dir), cli->opt.ckpt_path = ckpt_path;
    if (cli->opt.sv_tensors && !cli->opt.sv_log)
        snprintf(sv_path, sizeof sv_path, "%s/spectra.csv", cli->out_dir), cli->opt.sv_log = sv_path;
    if (cli->opt.norms_every > 0 && !cli->opt.norms_log)
        snprintf(norms_path, sizeof norms_path, "%s/norms.csv", cli->out_dir), cli->opt.norms_log = norms_path;
    if (!cli->opt.ns_log) /* opened only if the recipe (a resumed one's included) budgets */
        snprintf(ns_path, sizeof ns_path, "%s/ns_budget.csv", cli->out_dir), cli->opt.ns_log = ns_path;
    if (strcmp(cli->opt.log_path, "none") == 0) cli->opt.log_path = NULL;
    if (strcmp(cli->opt.ckpt_path, "none") == 0) cli->opt.ckpt_path = NULL;
    *outcome = train_run(&cli->opt, &res);
    if (res.outcome == TRAIN_FAILED && (comm->rank == 0 || !res.agreed)) {
        if (comm->size > 1) fprintf(stderr, "train (rank %d): error: %s\n", comm->rank, res.error);
        else fprintf(stderr, "train: error: %s\n", res.error);
    }
    st = res.outcome == TRAIN_FAILED ? res.status : GPT_OK;
    /* plots only from a log this process wrote to: a resume at the end of its schedule (to sample)
     * trains nothing and writes no log */
    if (res.outcome == TRAIN_DONE && res.n_steps > 0 && comm->rank == 0 && cli->opt.log_path)
        st = run_plots(cli);
    /* a failure the other ranks cannot know about would leave them waiting in a collective */
    if (res.outcome == TRAIN_FAILED && comm->size > 1 && !res.agreed) comm->ops->abort(comm, 1);
    train_result_free(&res);
    return st;
}

int main(int argc, char **argv)
{
    train_cli cli;
    int rc;
    gpt_status st;
    gpt_comm *comm;
#ifdef GPT_USE_MPI
    comm = gpt_comm_mpi_init(&argc, &argv);
    if (!comm) return 1;
#else
    comm = gpt_comm_single();
#endif
    memset(&cli, 0, sizeof cli);
    cli.opt = train_default_options();
    cli.opt.comm = comm;
    cli.seeds = 3;
    cli.sweep_extend = 2;
    cli.sweep_seeds = 2;
    if (comm->rank != 0 && !freopen("/dev/null", "w", stdout)) return 1; /* rank 0 alone prints */
    for (rc = 1; rc < argc; rc++) /* an experiment prints one line per run unless --log-every asks for more */
        if (strcmp(argv[rc], "--experiment") == 0) cli.opt.log_every = 0;
    st = cli_parse(&cli, argc, argv);
    if (st != GPT_OK || cli.help) { /* exit code 2: a bad command line; 0: --help */
        comm->ops->destroy(comm);
        return st != GPT_OK ? 2 : 0;
    }
#if defined(GPT_WITH_CUDA) && defined(GPT_USE_NCCL)
    if (cli.opt.backend == &gpt_cuda_backend && comm->size > 1) {
        if (gpt_nccl_select_device(comm->local_rank) != GPT_OK || !(cli.opt.dcomm = gpt_comm_nccl_create(comm))) {
            fprintf(stderr, "rank %d: cannot set up NCCL\n", comm->rank);
            comm->ops->abort(comm, 1);
        }
    }
#endif
    train_install_sigint();
    if (!cli.out_dir) cli.out_dir = cli.experiment ? "build/gpt/experiment" : "build/gpt/run";
    if (comm->rank == 0) make_dir(cli.out_dir);
    if (cli.experiment) {
        exp_options eo;
        memset(&eo, 0, sizeof eo);
        eo.opt = cli.opt;
        eo.out_dir = cli.out_dir;
        eo.seeds = cli.seeds, eo.sweep_seeds = cli.sweep_seeds, eo.sweep_extend = cli.sweep_extend;
        eo.sweep[0] = cli.sweep[0], eo.sweep[1] = cli.sweep[1];
        eo.head_lr[0] = cli.exp_head_lr[0], eo.head_lr[1] = cli.exp_head_lr[1];
        rc = experiment_main(&eo);
    } else if (resume_check(&cli) != GPT_OK) {
        rc = 2; /* the command line against --resume's checkpoint */
    } else {
        train_outcome outcome = TRAIN_FAILED;
        st = one_run(&cli, &outcome);
        rc = st != GPT_OK || outcome == TRAIN_FAILED ? 1 : outcome == TRAIN_INTERRUPTED ? 130 : 0;
    }
    if (cli.opt.dcomm) cli.opt.dcomm->ops->destroy(cli.opt.dcomm);
    comm->ops->destroy(comm);
    return rc;
}
#endif
