/* cli.h - the trainer's command line (cli.c): one table of flags drives the parser and the
 * usage text, so --help cannot drift from what is parsed, and a flag that is unknown, misses its
 * value, has a bad value, or does not apply to the mode (one run, or --experiment) is an error.
 *
 *   build/gpt/train [flags]                      one run (train.c's train_run)
 *   build/gpt/train --experiment --seeds 3       head-rate sweeps, then paired AdamW-head vs
 *                                                RowNorm-head runs at the best and at the paper's
 *                                                rates (experiment.c)
 *
 * cli.c also holds main(); a test that links cli.c defines GPT_CLI_NO_MAIN.
 */
#ifndef GPT_CLI_H
#define GPT_CLI_H

#include <stdio.h>

#include "train.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CLI_MAX_FLAGS 128 /* entries of cli.c's flag table (headings included), at most */

typedef struct train_cli {
    train_options opt;
    int experiment;        /* --experiment: paired AdamW vs RowNorm runs */
    int seeds;             /* experiment: number of seeds (seed, seed+1, ...) */
    const char *out_dir;   /* outputs (NULL: build/gpt/run; experiment: build/gpt/experiment) */
    double exp_head_lr[2]; /* experiment: a fixed head rate of the AdamW / RowNorm arm (0: sweep) */
    const char *sweep[2];  /* experiment: the AdamW / RowNorm arm's rates, comma-separated (NULL:
                              experiment.h's defaults) */
    int sweep_extend;      /* experiment: grid extensions when a best rate is at an edge */
    int sweep_seeds;       /* experiment: seeds at every rate of the sweeps, the best chosen on their
                              mean (0 or 1: the first seed alone; at most seeds) */
    unsigned char given[CLI_MAX_FLAGS]; /* cli_parse: 1 for each entry of the flag table given */
    int help;              /* cli_parse: 1 when --help printed the usage (the flags after it unread) */
} train_cli;

/* Parses argv into *cli (starting from its current values; --head first, since it sets the head
 * defaults the other flags may override). Returns GPT_OK on success and for --help (usage printed
 * on stdout, cli->help set: nothing to run); on a bad flag, a message on stderr, *cli partly
 * written, and GPT_ERR_CONFIG, or the status of the check that refused the values (the model's
 * rules, the recipe's lr x weight decay, a --sweep list). */
gpt_status cli_parse(train_cli *cli, int argc, char **argv);
/* With --resume: the flags given on the command line that the checkpoint decides (marked [ckpt]
 * in the usage: model, batch, schedule, recipe) whose value differs from the checkpoint's.
 * GPT_ERR_CONFIG when there are any: their number in *count (count may be NULL) and their list
 * in err ("--steps 100 (the checkpoint's: 12), ..."); GPT_OK with *count 0 when there are none,
 * and also when the checkpoint cannot be read or is invalid (train_run reports that). */
gpt_status cli_resume_conflicts(const train_cli *cli, int *count, char *err, size_t errlen);
/* The usage text, from the flag table: every flag with its value, its help and its mode. */
void cli_usage(FILE *f);
/* The number of flags in the table, and the name of flag k (tests: every flag is documented and
 * parses). */
int cli_flag_count(void);
const char *cli_flag_name(int k);

#ifdef __cplusplus
}
#endif
#endif /* GPT_CLI_H */
