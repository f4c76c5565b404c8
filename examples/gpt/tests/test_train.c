/* test_train.c - the training loop: exact resume, logs, the experiment table against its logs,
 * bad input files, NaN stop, SIGINT, the schedule and the head step S. Tiny models only. */
#define _POSIX_C_SOURCE 200809L
#include "tests/test.h"

#include "checkpoint.h"
#include "cli.h"
#include "data.h"
#include "experiment.h"
#include "optim.h"
#include "tokenizer.h"
#include "train.h"

#ifdef _OPENMP
#include <omp.h>
#endif
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_dir[64];      /* temp directory of this test run */
static char g_data[128];    /* g_dir/data: tokenizer.bin, train.bin, val.bin */

static void path_in(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", g_dir, name); }
static gpt_status parse_caught(int argc, char **argv, char *msg, size_t cap);

/* A small corpus with structure (random sentences over a few words), its tokenizer and splits. */
static int make_data(const char *dir)
{
    static const char *const words[] = {"the", "head", "row", "norm", "muon", "step", "loss", "token", "model",
                                        "update", "diameter", "of", "and", "a", "is", "small"};
    size_t cap = 60000, n = 0, n_ids = 0, i;
    char *text = (char *)malloc(cap), path[256];
    uint32_t *ids = (uint32_t *)malloc(cap * sizeof *ids);
    tok_tokenizer tok;
    t_rng rng = {7};
    int ok = 1;
    if (!text || !ids) return 0;
    mkdir(dir, 0777);
    while (n + 40 < cap) {
        int w = (int)(t_rng_u64(&rng) % 16), len = (int)(t_rng_u64(&rng) % 6) + 3, k;
        for (k = 0; k < len && n + 20 < cap; k++) n += (size_t)sprintf(text + n, "%s%s", k ? " " : "", words[(w + k * 3) % 16]);
        n += (size_t)sprintf(text + n, ".\n");
    }
    ok &= tok_train(&tok, (const unsigned char *)text, n, 300, NULL, 0) == GPT_OK;
    ok &= tok_encode(&tok, (const unsigned char *)text, n, ids, cap, &n_ids) == GPT_OK;
    snprintf(path, sizeof path, "%s/tokenizer.bin", dir);
    ok &= tok_save(&tok, path, NULL, 0) == GPT_OK;
    i = n_ids * 9 / 10;
    snprintf(path, sizeof path, "%s/train.bin", dir);
    ok &= data_tokens_write(path, ids, i, tok.vocab_size, tok_identity(&tok), 7, NULL, 0) == GPT_OK;
    snprintf(path, sizeof path, "%s/val.bin", dir);
    ok &= data_tokens_write(path, ids + i, n_ids - i, tok.vocab_size, tok_identity(&tok), 7, NULL, 0) == GPT_OK;
    tok_free(&tok);
    free(text);
    free(ids);
    return ok;
}

static train_options tiny(void)
{
    train_options o = train_default_options();
    o.data_dir = g_data;
    o.model.n_layers = 1;
    o.model.d_model = 16;
    o.model.n_heads = 2;
    o.batch = 2;
    o.seq = 16;
    o.steps = 12;
    o.eval_every = 4;
    o.eval_batches = 2;
    o.panel_seqs = 2;
    o.diam_every = 3;
    o.log_every = 0;
    o.progress = 0;
    return o;
}

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* Uninterrupted run vs (stop at k, resume): identical losses, finals and logged losses. */
static void resume_case_ph(optim_head_kind head, optim_block_kind block, muon_cap_mode cap, int accum, long stop_at,
                          int per_head, int ns_auto)
{
    train_options o = tiny();
    train_result full, part, rest;
    char ck[160], log_full[160], log_res[160];
    exp_log lf, lr;
    int k, all = 1;
    memset(&lf, 0, sizeof lf);
    memset(&lr, 0, sizeof lr);
    o.recipe = optim_default(head);
    o.recipe.block = block;
    o.recipe.cap = cap;
    o.recipe.ns_per_head = per_head;
    if (ns_auto) o.recipe.ns_steps = OPTIM_NS_AUTO, o.recipe.ns_every = 3; /* budgets at 3, 6, 9 */
    o.accum = accum;
    path_in(log_full, sizeof log_full, "full.csv");
    path_in(log_res, sizeof log_res, "resumed.csv");
    path_in(ck, sizeof ck, "ck.bin");
    o.log_path = log_full;
    CHECK(train_run(&o, &full) == TRAIN_DONE);
    o.log_path = log_res;
    o.ckpt_path = ck;
    o.stop_at = stop_at;
    CHECK(train_run(&o, &part) == TRAIN_STOPPED);
    CHECK(part.last_step == stop_at);
    /* resume with different flags: the checkpoint's settings win */
    o = tiny();
    o.batch = 5, o.seq = 9, o.steps = 99;
    o.log_path = log_res;
    o.ckpt_path = ck;
    o.resume = ck;
    CHECK(train_run(&o, &rest) == TRAIN_DONE);
    CHECK_MSG(rest.outcome == TRAIN_DONE, "%s", rest.error);
    CHECK(rest.first_step == stop_at && rest.n_steps == 12 - stop_at && full.n_steps == 12);
    for (k = 0; k < rest.n_steps && full.n_steps == 12; k++) {
        const train_step_rec *a = &full.steps[stop_at + k], *b = &rest.steps[k];
        all &= a->step == b->step && same_bits(a->loss, b->loss) && same_bits(a->grad_norm, b->grad_norm) &&
               same_bits(a->d_lo, b->d_lo) && same_bits(a->d_hi, b->d_hi);
    }
    CHECK_MSG(all, "losses after resume differ (head %s, accum %d)", optim_head_name(head), accum);
    CHECK(same_bits(full.final_val_loss, rest.final_val_loss));
    CHECK(same_bits(full.final_diameter, rest.final_diameter));
    CHECK(same_bits(full.final_hilbert_rms, rest.final_hilbert_rms));
    /* the resumed log reads like the uninterrupted one */
    CHECK(exp_log_read(log_full, &lf, NULL, 0) == 0);
    CHECK(exp_log_read(log_res, &lr, NULL, 0) == 0);
    CHECK(lf.n_train == 12 && lr.n_train == 12 && lf.n_eval == lr.n_eval && lf.has_final && lr.has_final);
    all = lf.n_train == lr.n_train;
    for (k = 0; all && k < (int)lf.n_train; k++)
        all &= same_bits(lf.train_loss[k], lr.train_loss[k]) && same_bits(lf.train_loss[k], full.steps[k].loss);
    CHECK(all);
    CHECK(same_bits(lf.final_val_loss, full.final_val_loss) && same_bits(lr.final_diameter, full.final_diameter));
    exp_log_free(&lf);
    exp_log_free(&lr);
    train_result_free(&full);
    train_result_free(&part);
    train_result_free(&rest);
}

static void resume_case(optim_head_kind head, optim_block_kind block, muon_cap_mode cap, int accum, long stop_at)
{
    resume_case_ph(head, block, cap, accum, stop_at, 0, 0);
}

static void test_resume_adamw_head(void) { resume_case(OPTIM_ADAMW, OPTIM_BLOCK_MUON, MUON_CAP_OFF, 1, 5); }
static void test_resume_rownorm_head_accum(void) { resume_case(OPTIM_ROWNORM, OPTIM_BLOCK_MUON, MUON_CAP_OFF, 2, 7); }
static void test_resume_muon_head_muown_cap(void) { resume_case(OPTIM_MUON, OPTIM_BLOCK_MUOWN, MUON_CAP_OFF, 1, 4); }
static void test_resume_cap(void) { resume_case(OPTIM_ROWNORM, OPTIM_BLOCK_MUON, MUON_CAP_GROWTH, 1, 6); }
/* NorMuon's row second moments (row_v) and the per-head switch travel in the checkpoint */
static void test_resume_normuon_per_head(void) { resume_case_ph(OPTIM_ADAMW, OPTIM_BLOCK_NORMUON, MUON_CAP_OFF, 1, 5, 1, 0); }
/* --ns-steps auto: the budget of update 3 steps updates 3..5, and the resume at 5 must bring it
 * back from the checkpoint (recomputing it from update 5's momentum would change the bits); the
 * Muown case too (its own momentum) */
static void test_resume_ns_auto(void)
{
    train_options o = tiny();
    train_result a, b;
    char nslog[160], line[256];
    FILE *f;
    int rows = 0, bad = 0, differs = 0, k;
    resume_case_ph(OPTIM_ROWNORM, OPTIM_BLOCK_MUON, MUON_CAP_OFF, 1, 5, 0, 1);
    resume_case_ph(OPTIM_MUON, OPTIM_BLOCK_MUOWN, MUON_CAP_OFF, 1, 4, 0, 1);
    /* the budget log: one row per block matrix (1 layer: 7) at updates 3, 6, 9, steps in range;
     * and the budget changes the run (these small matrices need fewer than 5 steps) */
    o.recipe = optim_default(OPTIM_ROWNORM);
    CHECK(train_run(&o, &a) == TRAIN_DONE);
    o.recipe.ns_steps = OPTIM_NS_AUTO, o.recipe.ns_every = 3;
    path_in(nslog, sizeof nslog, "ns_budget.csv");
    o.ns_log = nslog;
    CHECK(train_run(&o, &b) == TRAIN_DONE);
    for (k = 0; k < a.n_steps && k < b.n_steps; k++) differs |= !same_bits(a.steps[k].loss, b.steps[k].loss);
    CHECK_MSG(differs, "--ns-steps auto gave the losses of Jordan x 5");
    f = fopen(nslog, "r");
    CHECK(f != NULL);
    if (f) {
        CHECK(fgets(line, sizeof line, f) && strcmp(line, "step,tensor,rows,cols,q50,steps\n") == 0);
        while (fgets(line, sizeof line, f)) {
            long step;
            char name[64];
            size_t r, c;
            double q;
            int steps;
            if (sscanf(line, "%ld,%63[^,],%zu,%zu,%lf,%d", &step, name, &r, &c, &q, &steps) != 6 || step % 3 != 0 ||
                step < 3 || step > 9 || steps < 1 || steps > OPTIM_NS_AUTO_MAX || !(q > 0.0 && q < 1.0))
                bad++;
            rows++;
        }
        fclose(f);
    }
    CHECK_MSG(rows == 21 && bad == 0, "ns_budget.csv: %d rows (21 expected), %d bad", rows, bad);
    train_result_free(&a);
    train_result_free(&b);
}

/* A resumed log from before opt_ms: a header with 16 columns above rows with 15 cells reads */
static void test_log_reads_mixed_rows(void)
{
    char p[160];
    FILE *f;
    exp_log L;
    path_in(p, sizeof p, "mixed.csv");
    f = fopen(p, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs("# steps=2\nkind,step,tokens,loss,lr,ms,tok_per_s,gflops,grad_norm,d_lo,d_hi,d_exact,val_loss,hilbert_rms,head_lr,opt_ms\n"
          "train,1,64,5.5,0.01,3,1,1,0.5,0.1,0.2,,,,0.001\n"
          "train,2,128,5.25,0.01,3,1,1,0.5,0.1,0.2,,,,0.001,1.5\n"
          "final,2,128,,,,,,,,,0.15,5.0,0.01,,\n", f);
    fclose(f);
    memset(&L, 0, sizeof L);
    CHECK(exp_log_read(p, &L, NULL, 0) == GPT_OK);
    CHECK(L.n_train == 2 && L.train_loss[0] == 5.5 && L.train_loss[1] == 5.25 && L.has_final && L.final_val_loss == 5.0);
    exp_log_free(&L);
}

/* A momentum with a chosen spectrum: a row- and column-permuted, sign-flipped diagonal of
 * p = 33 values (rows x cols, p = min), whose median sits at sigma / ||s|| = t exactly (in
 * double, before the float rounding): 16 values near 1 above it, 16 near 1e-3 t below it. The
 * median's place: row pr, column pc. */
static void spectrum_matrix(float *M, size_t rows, size_t cols, double t, size_t *pr, size_t *pc)
{
    const size_t p = rows < cols ? rows : cols;
    double sv[64], S = 0.0;
    size_t i;
    memset(M, 0, rows * cols * sizeof *M);
    for (i = 0; i < p; i++) {
        if (i < p / 2) sv[i] = 1.0 - 0.01 * (double)i;
        else if (i > p / 2) sv[i] = 1e-3 * t * (1.0 - 0.01 * (double)(i - p / 2));
        if (i != p / 2) S += sv[i] * sv[i];
    }
    sv[p / 2] = t * sqrt(S / (1.0 - t * t)); /* x / sqrt(S + x^2) = t */
    for (i = 0; i < p; i++) {
        size_t r = (i * 7 + 3) % rows, c = (i * 13 + 1) % cols; /* 7, 13: coprime to 33 and 40 */
        M[r * cols + c] = (float)((i % 2 ? -1.0 : 1.0) * sv[i]);
        if (i == p / 2) *pr = r, *pc = c;
    }
}

/* The budget rule (optim_ns_budget_steps): a momentum whose median needs k Jordan steps gets k,
 * one a hair below that edge gets more, and the k chosen meets the tolerance: Newton-Schulz with
 * k steps lifts the median direction to >= tau (muon_orthogonalize on the same matrix). */
static void test_ns_budget_rule(void)
{
    static const size_t shapes[][2] = {{33, 40}, {40, 33}};
    int k, sh;
    for (sh = 0; sh < 2; sh++)
        for (k = 2; k <= 7; k++) {
            const size_t rows = shapes[sh][0], cols = shapes[sh][1];
            muon_ns_config jk = muon_ns_preset(MUON_NS_JORDAN, k), jk1 = muon_ns_preset(MUON_NS_JORDAN, k - 1);
            float *M = (float *)malloc(rows * cols * sizeof *M), *O = (float *)malloc(rows * cols * sizeof *O);
            double lo = 1e-6, hi = 1.0, edge, q50 = -1.0;
            size_t pr = 0, pc = 0;
            int it, got;
            /* the edge: the least sigma that k steps lift to tau (f_k increases up to it: scan
             * up in steps of 1 %, then bisect the step that crosses) */
            while (muon_ns_transfer(&jk, lo * 1.01) < OPTIM_NS_AUTO_TAU) lo *= 1.01;
            hi = lo * 1.01;
            for (it = 0; it < 100; it++) {
                double mid = 0.5 * (lo + hi);
                if (muon_ns_transfer(&jk, mid) >= OPTIM_NS_AUTO_TAU) hi = mid;
                else lo = mid;
            }
            edge = hi;
            CHECK(muon_ns_transfer(&jk1, edge) < OPTIM_NS_AUTO_TAU); /* k - 1 do not */
            spectrum_matrix(M, rows, cols, edge * (1.0 + 1e-4), &pr, &pc);
            got = optim_ns_budget_steps(M, rows, cols, &q50);
            CHECK_MSG(got == k, "%zux%zu at the edge of %d steps: budget %d (q50 %.9g, edge %.9g)", rows, cols, k, got,
                      q50, edge);
            CHECK(fabs(q50 / (edge * (1.0 + 1e-4)) - 1.0) < 1e-6);
            /* it meets the tolerance: k steps on the matrix itself */
            CHECK(muon_orthogonalize(M, rows, cols, cols, &jk, O, cols) == MUON_OK);
            CHECK_MSG(fabs(O[pr * cols + pc]) >= OPTIM_NS_AUTO_TAU * (1.0 - 1e-5), "%d steps lift the median to %.6f", k,
                      fabs(O[pr * cols + pc]));
            /* a hair below the edge: at least k + 1 */
            spectrum_matrix(M, rows, cols, edge * (1.0 - 1e-4), &pr, &pc);
            got = optim_ns_budget_steps(M, rows, cols, &q50);
            CHECK_MSG(got >= k + 1, "below the edge of %d steps: budget %d", k, got);
            free(M);
            free(O);
        }
    { /* a median no budget reaches: the most; a zero momentum: 0 (keep); NaN: -1 */
        float M[33 * 40], Z[4] = {0, 0, 0, 0};
        double q50;
        size_t pr, pc;
        spectrum_matrix(M, 33, 40, 1e-9, &pr, &pc);
        CHECK(optim_ns_budget_steps(M, 33, 40, &q50) == OPTIM_NS_AUTO_MAX);
        CHECK(optim_ns_budget_steps(Z, 2, 2, &q50) == 0);
        M[5] = NAN;
        CHECK(optim_ns_budget_steps(M, 33, 40, &q50) == -1);
    }
}

/* SIGINT: the loop saves a checkpoint and stops; resuming finishes the identical run. */
static void test_sigint_saves_and_resumes(void)
{
    train_options o = tiny();
    train_result full, part, rest;
    char ck[160];
    path_in(ck, sizeof ck, "sigint.bin");
    CHECK(train_run(&o, &full) == TRAIN_DONE);
    o.ckpt_path = ck;
    train_install_sigint();
    raise(SIGINT);
    CHECK(train_run(&o, &part) == TRAIN_INTERRUPTED);
    CHECK(part.last_step == 1);
    train_install_sigint(); /* clears the request */
    signal(SIGINT, SIG_DFL);
    o.resume = ck;
    CHECK(train_run(&o, &rest) == TRAIN_DONE);
    CHECK(rest.n_steps == 11 && same_bits(rest.steps[10].loss, full.steps[11].loss));
    CHECK(same_bits(rest.final_val_loss, full.final_val_loss));
    train_result_free(&full);
    train_result_free(&part);
    train_result_free(&rest);
}

/* The per-step record: losses fall, diagnostics are consistent. */
static void test_run_records(void)
{
    train_options o = tiny();
    train_result r;
    int k, bracket_ok = 1, exact_at = 0;
    o.recipe = optim_default(OPTIM_ROWNORM);
    o.steps = 20;
    CHECK(train_run(&o, &r) == TRAIN_DONE);
    CHECK(r.n_steps == 20 && r.n_evals == 6); /* steps 0, 4, 8, 12, 16, 20 */
    CHECK(r.evals[5].val_loss < r.evals[0].val_loss);
    CHECK(r.evals[0].hilbert_rms != r.evals[0].hilbert_rms && r.evals[1].hilbert_rms > 0);
    for (k = 0; k < r.n_steps; k++) {
        const train_step_rec *s = &r.steps[k];
        bracket_ok &= s->d_lo <= s->d_hi && s->d_hi <= 2 * s->d_lo * (1 + 1e-12);
        if (s->d_exact == s->d_exact) {
            exact_at++;
            bracket_ok &= s->d_lo <= s->d_exact * (1 + 1e-9) && s->d_exact <= s->d_hi * (1 + 1e-9);
        }
        /* RowNorm: every row moves at most lr, so D <= 2 lr (SPEC 1.4) */
        bracket_ok &= s->d_lo <= 2.0 * o.recipe.head_lr * s->lr / o.recipe.muon_lr * (1 + 1e-5);
    }
    CHECK(bracket_ok);
    CHECK(exact_at == 7); /* 3, 6, ..., 18 and the last step 20 */
    CHECK(same_bits(r.final_diameter, r.steps[19].d_exact));
    /* paper check: the final RowNorm diameter is about 2 x the final head rate */
    CHECK_NEAR(r.final_diameter, 2 * 0.1 * o.recipe.head_lr, 0, 0.05);
    train_result_free(&r);
}

/* The final row's (val_loss, d_exact, hilbert_rms) and a recipe value of a log, with a parser of
 * our own; 0 if the file or the row is missing. */
static int read_final(const char *path, double v[3], double *head_lr, char *head, size_t head_cap)
{
    unsigned char *buf;
    size_t n;
    char *p, *line, *q;
    int col, ok = 0;
    v[0] = v[1] = v[2] = NAN;
    if (data_read_file(path, &buf, &n, NULL, 0) != GPT_OK) return 0;
    buf[n ? n - 1 : 0] = 0;
    line = strstr((char *)buf, "\nfinal,");
    if (line) {
        for (p = line + 1, col = 0; col < 15 && p; col++) {
            if (col == 11) v[1] = strtod(p, NULL);
            if (col == 12) v[0] = strtod(p, NULL);
            if (col == 13) v[2] = strtod(p, NULL);
            p = strchr(p, ',');
            if (p) p++;
        }
        ok = 1;
    }
    q = strstr((char *)buf, "# head_lr=");
    *head_lr = q ? strtod(q + 10, NULL) : NAN;
    q = strstr((char *)buf, "# head=");
    if (head_cap) head[0] = 0;
    if (q && head_cap) {
        size_t k = 0;
        for (q += 7; *q && *q != '\n' && k + 1 < head_cap; q++) head[k++] = *q;
        head[k] = 0;
    }
    free(buf);
    return ok;
}

/* The experiment on the tiny config, two seeds at every sweep rate: the sweep (with one extension
 * per arm, to the side of the better mean), the best rates on the mean of both seeds, the tuned
 * and the paper's pairs; table.md holds exactly the numbers the logs say (means, sds, min … max,
 * the paired 95 % intervals with Student's t of 1 degree of freedom, the geometric-mean ratios),
 * the verdict, and results.csv one row per log. */
static void test_experiment_table_equals_logs(void)
{
    static const char *const heads[2] = {"adamw", "rownorm"};
    const double grid[2][2] = {{2e-3, 8e-3}, {4e-3, 1.6e-2}}, paper[2] = {4e-3, 3.2e-3};
    exp_options cli;
    char out[160], path[256], *table = NULL, want[256], head[16];
    unsigned char *buf;
    size_t n;
    double sweep[2][3], sv[2][3][2][3], v[2][2][3], best[2], rate, delta[2], m, sd, t1 = 12.7062;
    int arm, s, q, k, ns[2], bi[2], n_logs = 0, n_rows = 0;
    memset(&cli, 0, sizeof cli);
    cli.opt = tiny();
    cli.opt.seed = 11;
    cli.seeds = 2;
    cli.sweep_seeds = 2;
    cli.sweep[0] = "8e-3,2e-3";     /* unsorted on purpose */
    cli.sweep[1] = "4e-3,1.6e-2,4e-3"; /* with a repeat */
    cli.sweep_extend = 1;
    path_in(out, sizeof out, "exp");
    mkdir(out, 0777);
    cli.out_dir = out;
    CHECK(experiment_main(&cli) == 0);
    for (arm = 0; arm < 2; arm++) {
        /* the two points, and the one extension on the side of the better mean */
        double cand[4], mean[4] = {0, 0, 0, 0};
        int have[4];
        cand[0] = grid[arm][0] * grid[arm][0] / grid[arm][1], cand[1] = grid[arm][0], cand[2] = grid[arm][1];
        cand[3] = grid[arm][1] * grid[arm][1] / grid[arm][0];
        for (k = 0; k < 4; k++) {
            snprintf(path, sizeof path, "%s/%s_lr%.6g_seed11.csv", out, heads[arm], cand[k]);
            have[k] = access(path, R_OK) == 0;
        }
        CHECK(have[1] && have[2] && have[0] != have[3]);
        ns[arm] = 0;
        for (k = 0; k < 4; k++) {
            if (!have[k]) continue;
            for (s = 0; s < 2; s++) {
                snprintf(path, sizeof path, "%s/%s_lr%.6g_seed%d.csv", out, heads[arm], cand[k], 11 + s);
                CHECK(read_final(path, sv[arm][ns[arm]][s], &rate, head, sizeof head));
                CHECK_MSG(rate == cand[k] && strcmp(head, heads[arm]) == 0, "%s records head %s rate %.17g", path, head,
                          rate);
                mean[k] += sv[arm][ns[arm]][s][0] / 2;
            }
            sweep[arm][ns[arm]++] = cand[k];
        }
        /* the extension went to the better side of the first two (by the mean of both seeds) */
        CHECK((mean[1] < mean[2]) == have[0]);
        bi[arm] = 0;
        for (k = 1; k < ns[arm]; k++)
            if (sv[arm][k][0][0] + sv[arm][k][1][0] < sv[arm][bi[arm]][0][0] + sv[arm][bi[arm]][1][0]) bi[arm] = k;
        best[arm] = sweep[arm][bi[arm]];
        for (s = 0; s < 2; s++) {
            snprintf(path, sizeof path, "%s/%s_lr%.6g_seed%d.csv", out, heads[arm], best[arm], 11 + s);
            CHECK(read_final(path, v[arm][s], &rate, head, sizeof head) && rate == best[arm]);
            snprintf(path, sizeof path, "%s/%s_lr%.6g_seed%d.csv", out, heads[arm], paper[arm], 11 + s);
            CHECK_MSG(access(path, R_OK) == 0, "no paper-rate run %s", path);
        }
    }
    snprintf(path, sizeof path, "%s/table.md", out);
    CHECK(data_read_file(path, &buf, &n, NULL, 0) == GPT_OK);
    table = (char *)buf;
    if (!table) return;
    /* the frontier rows: mean ± sd, min … max, mean D and RMS */
    for (arm = 0; arm < 2; arm++)
        for (k = 0; k < ns[arm]; k++) {
            const double *a = sv[arm][k][0], *b = sv[arm][k][1];
            snprintf(want, sizeof want, "| %s head | %.6g | %.4f ± %.4f | %.4f … %.4f | %.3e | %.3e |",
                     arm ? "RowNorm" : "AdamW", sweep[arm][k], (a[0] + b[0]) / 2, fabs(a[0] - b[0]) / sqrt(2.0),
                     fmin(a[0], b[0]), fmax(a[0], b[0]), (a[1] + b[1]) / 2, (a[2] + b[2]) / 2);
            CHECK_MSG(strstr(table, want) != NULL, "table lacks '%s'", want);
        }
    /* the tuned pairs, under their rates */
    snprintf(want, sizeof want, "## At each head's best rate (AdamW %.6g, RowNorm %.6g)", best[0], best[1]);
    CHECK_MSG(strstr(table, want) != NULL, "table lacks '%s'", want);
    snprintf(want, sizeof want, "## At the paper's rates (AdamW 0.004, RowNorm 0.0032)");
    CHECK_MSG(strstr(table, want) != NULL, "table lacks '%s'", want);
    for (arm = 0; arm < 2; arm++)
        for (q = 0; q < 3; q++) {
            double x[2];
            char fm[32];
            x[0] = v[arm][0][q], x[1] = v[arm][1][q];
            m = (x[0] + x[1]) / 2, sd = fabs(x[0] - x[1]) / sqrt(2.0);
            snprintf(fm, sizeof fm, "%s ± %s", q ? "%.3e" : "%.4f", q ? "%.3e" : "%.4f");
            snprintf(want, sizeof want, fm, m, sd);
            CHECK_MSG(strstr(table, want) != NULL, "table lacks '%s'", want);
        }
    /* the paired 95 % intervals: mean ± t(0.975, 1) sd / sqrt(2) */
    for (s = 0; s < 2; s++) delta[s] = v[1][s][0] - v[0][s][0];
    m = (delta[0] + delta[1]) / 2, sd = fabs(delta[0] - delta[1]) / sqrt(2.0);
    snprintf(want, sizeof want, "Δ %+.4f [%+.4f, %+.4f]", m, m - t1 * sd / sqrt(2.0), m + t1 * sd / sqrt(2.0));
    CHECK_MSG(strstr(table, want) != NULL, "table lacks '%s'", want);
    for (q = 1; q < 3; q++) { /* geometric means of the ratios, the interval in log space */
        double l0 = log(v[0][0][q] / v[1][0][q]), l1 = log(v[0][1][q] / v[1][1][q]);
        m = (l0 + l1) / 2, sd = fabs(l0 - l1) / sqrt(2.0);
        snprintf(want, sizeof want, "AdamW / RowNorm %.2f [%.2f, %.2f]", exp(m), exp(m - t1 * sd / sqrt(2.0)),
                 exp(m + t1 * sd / sqrt(2.0)));
        CHECK_MSG(strstr(table, want) != NULL, "table lacks '%s'", want);
    }
    /* the per-seed row of seed 12 */
    snprintf(want, sizeof want, "| 12 | %.4f | %.4f | %+.4f |", v[0][1][0], v[1][1][0], delta[1]);
    CHECK_MSG(strstr(table, want) != NULL, "table lacks '%s'", want);
    /* the matched-loss table's target: the RowNorm head's best mean */
    snprintf(want, sizeof want, "| %.4f (the RowNorm head's best mean) |", (v[1][0][0] + v[1][1][0]) / 2);
    CHECK_MSG(strstr(table, want) != NULL, "table lacks '%s'", want);
    /* the definitions and the verdict, one line per claim */
    CHECK(strstr(table, "- **D(S)**") && strstr(table, "- **Hilbert RMS**") && strstr(table, "- **Frontier**"));
    CHECK(strstr(table, "## The answer at this scale") && strstr(table, "- At equal step size (D(S))") &&
          strstr(table, "- At equal step size (Hilbert RMS)") && strstr(table, "- At each head's best rate") &&
          strstr(table, "- At the paper's rates"));
    snprintf(want, sizeof want, "- At each head's best rate (AdamW %.6g, RowNorm %.6g, chosen on the mean of 2 seeds): "
                                "the RowNorm head's validation loss is %s by %.4f",
             best[0], best[1], delta[0] + delta[1] > 0 ? "higher (worse)" : "lower (better)",
             fabs(delta[0] + delta[1]) / 2);
    CHECK_MSG(strstr(table, want) != NULL, "table lacks '%s'", want);
    /* results.csv: one row per log */
    {
        DIR *dir = opendir(out);
        struct dirent *e;
        while (dir && (e = readdir(dir)) != NULL) {
            size_t l = strlen(e->d_name);
            n_logs += l > 4 && strcmp(e->d_name + l - 4, ".csv") == 0 && strcmp(e->d_name, "results.csv") != 0;
        }
        if (dir) closedir(dir);
        snprintf(path, sizeof path, "%s/results.csv", out);
        CHECK(data_read_file(path, &buf, &n, NULL, 0) == GPT_OK);
        for (k = 0; buf && (size_t)k < n; k++) n_rows += buf[k] == '\n';
        free(buf);
        CHECK_MSG(n_rows == n_logs + 1 && n_logs == 16, "%d rows, %d logs", n_rows, n_logs);
    }
    free(table);
    {
        static const char *const files[] = {"frontier_diameter.svg", "frontier_rms.svg", "loss.svg", "diameter.svg",
                                            "hilbert_rms.svg"};
        for (k = 0; k < 5; k++) {
            snprintf(path, sizeof path, "%s/%s", out, files[k]);
            CHECK_MSG(data_read_file(path, &buf, &n, NULL, 0) == GPT_OK, "no %s", files[k]);
            if (buf) { /* the caption states the model and the rates */
                snprintf(want, sizeof want, "%.6g", best[1]);
                CHECK_MSG(strstr((char *)buf, "1 layers, d 16") && strstr((char *)buf, want), "%s: caption", files[k]);
                free(buf);
            }
        }
    }
}

/* exp_matched_step / exp_frontier_at against values worked by hand; exp_parse_rates. */
static void test_frontier_math(void)
{
    const double x[4] = {1e-2, 1e-3, NAN, 1e-1}, l[4] = {3.0, 5.0, 1.0, 4.0}; /* unsorted, a NaN point */
    double r[EXP_MAX_RATES];
    char err[128];
    int exact = -1, nr = 0;
    CHECK(fabs(exp_matched_step(x, l, 4, 4.0, &exact) - sqrt(1e-5)) < 1e-15 && exact == 0);
    CHECK(exp_matched_step(x, l, 4, 6.0, &exact) == 1e-3 && exact == 1);
    CHECK(isnan(exp_matched_step(x, l, 4, 2.0, &exact)));
    CHECK(fabs(exp_matched_step(x, l, 4, 3.0, &exact) - 1e-2) < 1e-16 && exact == 0);
    CHECK(fabs(exp_frontier_at(x, l, 4, sqrt(1e-5)) - 4.0) < 1e-12);
    CHECK(fabs(exp_frontier_at(x, l, 4, sqrt(1e-3)) - 3.5) < 1e-12);
    CHECK(isnan(exp_frontier_at(x, l, 4, 5e-4)) && isnan(exp_frontier_at(x, l, 4, 0.2)));
    CHECK(exp_frontier_at(x, l, 4, 1e-1) == 4.0);
    CHECK(exp_parse_rates("3e-3,1e-3,3e-3,2e-3", r, &nr, err, sizeof err) == GPT_OK && nr == 3 && r[0] == 1e-3 &&
          r[1] == 2e-3 && r[2] == 3e-3);
    nr = -7;
    CHECK(exp_parse_rates("1e-3,", r, &nr, err, sizeof err) == GPT_ERR_DOMAIN && strstr(err, "positive rates") && nr == -7);
    CHECK(exp_parse_rates("1e-3,0", r, &nr, err, sizeof err) == GPT_ERR_DOMAIN);
    CHECK(exp_parse_rates("1e-3,-2", r, &nr, err, sizeof err) == GPT_ERR_DOMAIN);
    CHECK(exp_parse_rates("nan", r, &nr, err, sizeof err) == GPT_ERR_DOMAIN);
    CHECK(exp_parse_rates("", r, &nr, err, sizeof err) == GPT_ERR_DOMAIN);
    CHECK(exp_parse_rates("1e-3;2e-3", r, &nr, err, sizeof err) == GPT_ERR_DOMAIN);
    /* Student's t, 97.5 % quantiles (tables: 12.7062, 4.3027, 2.0423 at 30; 2.0211 at 40, 2.0003
     * at 60, 1.9799 at 120), and the normal's 1.95996 far out */
    CHECK(exp_t975(1) == 12.7062 && exp_t975(2) == 4.3027 && exp_t975(30) == 2.0423 && isnan(exp_t975(0)));
    CHECK(fabs(exp_t975(40) - 2.0211) < 2e-4 && fabs(exp_t975(60) - 2.0003) < 2e-4 && fabs(exp_t975(120) - 1.9799) < 2e-4);
    CHECK(fabs(exp_t975(100000) - 1.95996) < 1e-4 && exp_t975(31) < exp_t975(30) && exp_t975(31) > exp_t975(32));
}

/* Copies a file with its first `keep` bytes (or all) and optional byte patches. */
static void copy_damaged(const char *from, const char *to, size_t keep, size_t at, const void *patch, size_t plen)
{
    unsigned char *buf;
    size_t n;
    if (data_read_file(from, &buf, &n, NULL, 0) != GPT_OK) return;
    if (keep > n) keep = n;
    if (patch && at + plen <= keep) memcpy(buf + at, patch, plen);
    data_write_file_atomic(to, buf, keep, NULL, 0);
    free(buf);
}

static void expect_failure(const train_options *o, const char *w1, const char *w2)
{
    train_result r;
    CHECK(train_run(o, &r) == TRAIN_FAILED);
    CHECK_MSG(strstr(r.error, w1) != NULL && strstr(r.error, w2) != NULL, "error '%s' lacks '%s' / '%s'", r.error, w1, w2);
    train_result_free(&r);
}

static void test_bad_files_give_clear_errors(void)
{
    char bad[160], from[256], to[256], ck[160];
    train_options o = tiny();
    train_result r;
    uint32_t v9 = 9;
    unsigned char v9le[4];
    const char *files[3] = {"tokenizer.bin", "train.bin", "val.bin"};
    int f;
    path_in(bad, sizeof bad, "bad");
    mkdir(bad, 0777);
    for (f = 0; f < 3; f++) {
        int g;
        for (g = 0; g < 3; g++) { /* start from good copies */
            snprintf(from, sizeof from, "%s/%s", g_data, files[g]);
            snprintf(to, sizeof to, "%s/%s", bad, files[g]);
            copy_damaged(from, to, (size_t)-1, 0, NULL, 0);
        }
        snprintf(from, sizeof from, "%s/%s", g_data, files[f]);
        snprintf(to, sizeof to, "%s/%s", bad, files[f]);
        o.data_dir = bad;
        copy_damaged(from, to, 30, 0, NULL, 0);
        expect_failure(&o, files[f], "truncated");
        copy_damaged(from, to, (size_t)-1, 0, "XXXX", 4);
        expect_failure(&o, files[f], "magic");
        data_put_u32le(v9le, v9);
        copy_damaged(from, to, (size_t)-1, 4, v9le, 4);
        expect_failure(&o, files[f], "version");
        copy_damaged(from, to, (size_t)-1, 0, NULL, 0);
    }
    /* a missing data directory */
    o.data_dir = "/nonexistent/dir";
    expect_failure(&o, "tokenizer", "prepare");
    /* checkpoints */
    o = tiny();
    path_in(ck, sizeof ck, "good.ck");
    o.ckpt_path = ck;
    o.steps = 3;
    CHECK(train_run(&o, &r) == TRAIN_DONE);
    train_result_free(&r);
    path_in(bad, sizeof bad, "bad.ck");
    o = tiny();
    o.resume = bad;
    copy_damaged(ck, bad, 100, 0, NULL, 0);
    expect_failure(&o, "bad.ck", "truncated");
    copy_damaged(ck, bad, (size_t)-1, 0, "RNTD", 4);
    expect_failure(&o, "bad.ck", "magic");
    copy_damaged(ck, bad, (size_t)-1, 4, v9le, 4);
    expect_failure(&o, "bad.ck", "version 9");
    copy_damaged(ck, bad, (size_t)-1, 200, "\x01\x02", 2);
    expect_failure(&o, "bad.ck", "checksum");
    path_in(bad, sizeof bad, "missing.ck");
    o.resume = bad;
    expect_failure(&o, "missing.ck", "resume");
}

/* Copies checkpoint `from` to `to` with field `name` replaced by `count` values of `type`, or
 * dropped when v is NULL (a file from before the field existed), so the checksum stays valid.
 * 1 on success. */
static int ckpt_with(const char *from, const char *to, const char *name, ckpt_type type, const void *v, size_t count)
{
    ckpt_reader r;
    ckpt_writer w;
    uint32_t k;
    int found = 0, ok;
    if (ckpt_read_file(&r, from, NULL, 0) != GPT_OK) return 0;
    ckpt_writer_init(&w);
    for (k = 0; k < r.n_fields; k++) {
        const ckpt_field *f = &r.fields[k];
        size_t es = f->type == CKPT_F32 ? 4 : 8;
        if (f->name_len == strlen(name) && memcmp(f->name, name, f->name_len) == 0) {
            found = 1;
            if (!v) continue;
            if (type == CKPT_U64) ckpt_put_u64(&w, name, (const uint64_t *)v, count);
            else if (type == CKPT_F64) ckpt_put_f64(&w, name, (const double *)v, count);
            else ckpt_put_f32(&w, name, (const float *)v, count);
        } else { /* the field's bytes as they are: u32 length, name, u32 type, u64 count, values */
            ckpt_put_raw(&w, (const unsigned char *)f->name - 4, 16 + f->name_len + es * (size_t)f->count, 1);
        }
    }
    ok = found && ckpt_write_file(&w, to, NULL, 0) == GPT_OK;
    ckpt_writer_free(&w);
    ckpt_reader_free(&r);
    return ok;
}

static void expect_resume_failure(const char *good, const char *bad, const char *name, ckpt_type type, const void *v,
                                  size_t count, const char *words)
{
    train_options o = tiny();
    train_result r;
    o.resume = bad;
    CHECK_MSG(ckpt_with(good, bad, name, type, v, count), "cannot rewrite %s", name);
    CHECK(train_run(&o, &r) == TRAIN_FAILED);
    CHECK_MSG(strstr(r.error, bad) && strstr(r.error, words), "%s: error '%s' lacks the file or '%s'", name, r.error,
              words);
    train_result_free(&r);
}

/* Every value read from a checkpoint is checked as the command line checks it (ranges,
 * finiteness), and the optimizer step counters against OPTIM_MAX_STEPS; each error names the
 * file and the field. */
static void test_checkpoint_values_are_validated(void)
{
    char good[160], bad[160];
    train_options o = tiny();
    train_result r;
    const uint64_t huge = 0x7FFFFFFFFFFFFFFFULL, all = 0xFFFFFFFFFFFFFFFFULL, over = (uint64_t)OPTIM_MAX_STEPS + 1;
    const uint64_t zero = 0, big = 1u << 17;
    const double nan_v = NAN, e300 = 1e300, neg = -1.0, one = 1.0, inf_v = INFINITY;
    path_in(good, sizeof good, "values_good.ck");
    path_in(bad, sizeof bad, "values_bad.ck");
    o.ckpt_path = good;
    o.steps = 3;
    o.recipe = optim_default(OPTIM_ROWNORM);
    CHECK(train_run(&o, &r) == TRAIN_DONE);
    train_result_free(&r);
    /* optimizer step counters */
    expect_resume_failure(good, bad, "opt.wte.step", CKPT_U64, &huge, 1, "opt.wte.step");
    expect_resume_failure(good, bad, "opt.wte.step", CKPT_U64, &all, 1, "opt.wte.step");
    expect_resume_failure(good, bad, "opt.wte.step", CKPT_U64, &over, 1, "opt.wte.step");
    expect_resume_failure(good, bad, "opt.layers.0.wq.step", CKPT_U64, &huge, 1, "opt.layers.0.wq.step");
    expect_resume_failure(good, bad, "opt.lm_head.step", CKPT_U64, &all, 1, "opt.lm_head.step");
    /* the recipe: as --warmup, --lr-muon, ... */
    expect_resume_failure(good, bad, "recipe.warmup_frac", CKPT_F64, &nan_v, 1, "recipe.warmup_frac");
    expect_resume_failure(good, bad, "recipe.warmup_frac", CKPT_F64, &e300, 1, "recipe.warmup_frac");
    expect_resume_failure(good, bad, "recipe.final_frac", CKPT_F64, &inf_v, 1, "recipe.final_frac");
    expect_resume_failure(good, bad, "recipe.muon_lr", CKPT_F64, &neg, 1, "recipe.muon_lr");
    expect_resume_failure(good, bad, "recipe.head_lr", CKPT_F64, &e300, 1, "recipe.head_lr");
    expect_resume_failure(good, bad, "recipe.head_beta1", CKPT_F64, &one, 1, "recipe.head_beta1");
    expect_resume_failure(good, bad, "recipe.ns_steps", CKPT_U64, &big, 1, "recipe.ns_steps");
    expect_resume_failure(good, bad, "recipe.head", CKPT_U64, &big, 1, "recipe.head");
    /* the run settings: as --batch, --steps, ... */
    expect_resume_failure(good, bad, "train.batch", CKPT_U64, &zero, 1, "train.batch");
    expect_resume_failure(good, bad, "train.batch", CKPT_U64, &big, 1, "train.batch");
    expect_resume_failure(good, bad, "train.accum", CKPT_U64, &big, 1, "train.accum");
    expect_resume_failure(good, bad, "train.steps", CKPT_U64, &huge, 1, "train.steps");
    expect_resume_failure(good, bad, "train.step", CKPT_U64, &all, 1, "train.step");
    /* non-finite tensors */
    {
        ckpt_reader ck;
        float *w = NULL;
        size_t n = 0;
        uint32_t k;
        CHECK(ckpt_read_file(&ck, good, NULL, 0) == GPT_OK);
        for (k = 0; k < ck.n_fields; k++)
            if (ck.fields[k].name_len == 9 && memcmp(ck.fields[k].name, "param.wte", 9) == 0) n = (size_t)ck.fields[k].count;
        w = (float *)malloc((n ? n : 1) * sizeof *w);
        CHECK(w && ckpt_get_f32(&ck, "param.wte", w, n, NULL, 0) == GPT_OK);
        ckpt_reader_free(&ck);
        if (w && n > 7) {
            w[7] = INFINITY;
            expect_resume_failure(good, bad, "param.wte", CKPT_F32, w, n, "param.wte");
            w[7] = NAN;
            expect_resume_failure(good, bad, "param.wte", CKPT_F32, w, n, "param.wte");
        }
        free(w);
    }
    remove(good), remove(bad);
}

/* The trainer's NorMuon and per-head switches reach muon.h as the per-tensor configs they stand
 * for (Q, K, V cut by rows into n_heads blocks, O by columns, the MLP whole), and the trainer's
 * step of a block matrix is muon_step's with that config, bit for bit. */
static void test_block_switches(void)
{
    gpt_config cfg;
    optim_set os;
    optim_recipe rc = optim_default(OPTIM_ADAMW);
    gpt_layout lay;
    float *p, *g, *w0;
    t_rng rng = {11};
    size_t k;
    int i, step, same = 1;
    muon_state ref[GPT_N_LAYER_TENSORS];
    float *wref[GPT_N_LAYER_TENSORS];
    memset(&cfg, 0, sizeof cfg);
    cfg.n_layers = 1, cfg.d_model = 16, cfg.n_heads = 4, cfg.seq_len = 8, cfg.vocab_size = 40;
    CHECK(gpt_config_resolve(&cfg) == GPT_OK);
    lay = gpt_layout_of(&cfg);
    p = (float *)malloc(lay.n_params * sizeof *p);
    g = (float *)malloc(lay.n_params * sizeof *g);
    w0 = (float *)malloc(lay.n_params * sizeof *w0);
    CHECK(p && g && w0);
    if (!p || !g || !w0) return;
    gpt_init_params(&cfg, p, 7);
    memcpy(w0, p, lay.n_params * sizeof *p);
    rc.block = OPTIM_BLOCK_NORMUON;
    rc.ns_per_head = 1;
    CHECK(optim_create(&os, &rc, &cfg, p, NULL, 0) == GPT_OK);
    for (i = 0; i < GPT_N_LAYER_TENSORS; i++) {
        const optim_slot *s = &os.slots[1 + i];
        int attn_rows = i == GPT_WQ || i == GPT_WK || i == GPT_WV;
        CHECK_MSG(s->kind == OPTIM_MUON && s->muon_cfg.normuon == 1, "%s", s->t.name);
        /* 0 and 1 both mean "one block" (muon_default sets split_rows 1) */
        CHECK_MSG((s->muon_cfg.split_rows > 1 ? s->muon_cfg.split_rows : 1) == (attn_rows ? 4u : 1u) &&
                      (s->muon_cfg.split_cols > 1 ? s->muon_cfg.split_cols : 1) == (i == GPT_WO ? 4u : 1u),
                  "%s: split_rows %zu, split_cols %zu", s->t.name, s->muon_cfg.split_rows, s->muon_cfg.split_cols);
        CHECK(muon_init(&ref[i], s->t.rows, s->t.cols) == MUON_OK);
        wref[i] = (float *)malloc(s->t.rows * s->t.cols * sizeof(float));
        if (wref[i]) memcpy(wref[i], w0 + s->t.offset, s->t.rows * s->t.cols * sizeof(float));
    }
    for (step = 0; step < 3; step++) {
        for (k = 0; k < lay.n_params; k++) g[k] = (float)(1e-2 * t_rng_normal(&rng));
        CHECK(optim_step(&os, p, g, step, 10, NULL, 0) == GPT_OK);
        /* optim_step clipped g in place: the references step on the same gradient */
        for (i = 0; i < GPT_N_LAYER_TENSORS; i++) {
            const optim_slot *s = &os.slots[1 + i];
            muon_config c = muon_default();
            size_t ld = s->t.cols;
            c.lr = rc.muon_lr * os.last_lr_factor, c.momentum = rc.muon_beta, c.weight_decay = rc.muon_wd;
            c.nesterov = 1, c.momentum_form = MUON_MOMENTUM_EMA, c.scale = MUON_SCALE_ORIGINAL;
            c.ns = muon_ns_preset(MUON_NS_JORDAN, rc.ns_steps);
            c.normuon = 1;
            if (i == GPT_WQ || i == GPT_WK || i == GPT_WV) c.split_rows = 4;
            if (i == GPT_WO) c.split_cols = 4;
            CHECK(muon_step(&ref[i], &c, wref[i], ld, g + s->t.offset, ld, NULL, 0) == MUON_OK);
            same &= memcmp(wref[i], p + s->t.offset, s->t.rows * ld * sizeof(float)) == 0;
        }
    }
    CHECK_MSG(same, "the trainer's NorMuon per-head step differs from muon_step with the same config");
    /* and per head is not the whole matrix: from the same weights and gradient, the split
     * matrices step differently, the MLP's identically */
    {
        optim_set split, whole;
        optim_recipe r2 = rc;
        float *p2 = (float *)malloc(lay.n_params * sizeof *p2), *g2 = (float *)malloc(lay.n_params * sizeof *g2);
        const gpt_tensor *q = &os.slots[1 + GPT_WQ].t, *o = &os.slots[1 + GPT_WO].t, *up = &os.slots[1 + GPT_W_UP].t;
        CHECK(p2 && g2);
        r2.ns_per_head = 0;
        memcpy(p, w0, lay.n_params * sizeof *p);
        memcpy(p2, w0, lay.n_params * sizeof *p);
        for (k = 0; k < lay.n_params; k++) g[k] = (float)(1e-2 * t_rng_normal(&rng));
        memcpy(g2, g, lay.n_params * sizeof *g);
        CHECK(optim_create(&split, &rc, &cfg, p, NULL, 0) == GPT_OK &&
              optim_create(&whole, &r2, &cfg, p2, NULL, 0) == GPT_OK);
        CHECK(whole.slots[1 + GPT_WQ].muon_cfg.split_rows <= 1 && whole.slots[1 + GPT_WO].muon_cfg.split_cols <= 1);
        CHECK(optim_step(&split, p, g, 0, 10, NULL, 0) == GPT_OK &&
              optim_step(&whole, p2, g2, 0, 10, NULL, 0) == GPT_OK);
        CHECK(memcmp(p + q->offset, p2 + q->offset, q->rows * q->cols * sizeof *p) != 0);
        CHECK(memcmp(p + o->offset, p2 + o->offset, o->rows * o->cols * sizeof *p) != 0);
        CHECK(memcmp(p + up->offset, p2 + up->offset, up->rows * up->cols * sizeof *p) == 0);
        optim_free(&split), optim_free(&whole);
        free(p2), free(g2);
    }
    for (i = 0; i < GPT_N_LAYER_TENSORS; i++) muon_free(&ref[i]), free(wref[i]);
    optim_free(&os);
    free(p), free(g), free(w0);
}

/* --ns-precision bf16 (issue 17): every Muon block's config carries it, the step is muon_step's
 * with that config bit for bit, and it moves the block matrices differently from fp32 while the
 * AdamW tensors (embedding, head) step identically. */
static void test_ns_precision_bf16(void)
{
    gpt_config cfg;
    optim_set o16, o32;
    optim_recipe r16 = optim_default(OPTIM_ADAMW), r32 = r16;
    gpt_layout lay;
    float *p16, *p32, *g16, *g32, *w0;
    t_rng rng = {13};
    size_t k;
    int i, n_muon = 0;
    memset(&cfg, 0, sizeof cfg);
    cfg.n_layers = 1, cfg.d_model = 32, cfg.n_heads = 2, cfg.seq_len = 8, cfg.vocab_size = 40;
    CHECK(gpt_config_resolve(&cfg) == GPT_OK);
    lay = gpt_layout_of(&cfg);
    p16 = (float *)malloc(lay.n_params * sizeof(float)), p32 = (float *)malloc(lay.n_params * sizeof(float));
    g16 = (float *)malloc(lay.n_params * sizeof(float)), g32 = (float *)malloc(lay.n_params * sizeof(float));
    w0 = (float *)malloc(lay.n_params * sizeof(float));
    CHECK(p16 && p32 && g16 && g32 && w0);
    if (!p16 || !p32 || !g16 || !g32 || !w0) return;
    gpt_init_params(&cfg, p16, 7);
    memcpy(p32, p16, lay.n_params * sizeof(float));
    memcpy(w0, p16, lay.n_params * sizeof(float));
    for (k = 0; k < lay.n_params; k++) g16[k] = g32[k] = (float)(1e-2 * t_rng_normal(&rng));
    r16.ns_precision = MUON_NS_BF16;
    CHECK(optim_create(&o16, &r16, &cfg, p16, NULL, 0) == GPT_OK &&
          optim_create(&o32, &r32, &cfg, p32, NULL, 0) == GPT_OK);
    CHECK(optim_step(&o16, p16, g16, 0, 10, NULL, 0) == GPT_OK && optim_step(&o32, p32, g32, 0, 10, NULL, 0) == GPT_OK);
    for (i = 0; i < o16.n_slots; i++) {
        const optim_slot *s = &o16.slots[i];
        size_t n = s->t.rows * s->t.cols;
        if (s->kind == OPTIM_MUON) {
            muon_state ref;
            muon_config c = s->muon_cfg;
            float *w = (float *)malloc(n * sizeof(float));
            n_muon++;
            CHECK_MSG(s->muon_cfg.ns.precision == MUON_NS_BF16 && o32.slots[i].muon_cfg.ns.precision == MUON_NS_FP32,
                      "%s", s->t.name);
            CHECK(memcmp(p16 + s->t.offset, p32 + s->t.offset, n * sizeof(float)) != 0);
            c.lr = r16.muon_lr * o16.last_lr_factor;
            CHECK(w && muon_init(&ref, s->t.rows, s->t.cols) == MUON_OK);
            if (w) {
                memcpy(w, w0 + s->t.offset, n * sizeof(float));
                CHECK(muon_step(&ref, &c, w, s->t.cols, g16 + s->t.offset, s->t.cols, NULL, 0) == MUON_OK);
                CHECK_MSG(memcmp(w, p16 + s->t.offset, n * sizeof(float)) == 0, "%s: not muon_step's", s->t.name);
            }
            muon_free(&ref);
            free(w);
        } else {
            CHECK_MSG(memcmp(p16 + s->t.offset, p32 + s->t.offset, n * sizeof(float)) == 0, "%s", s->t.name);
        }
    }
    CHECK(n_muon == GPT_N_LAYER_TENSORS);
    optim_free(&o16), optim_free(&o32);
    free(p16), free(p32), free(g16), free(g32), free(w0);
}

/* NorMuon's checkpoint fields: a negative row second moment, a missing one under NorMuon and a
 * per-head switch out of range are refused naming the field; a file from before row_v and
 * ns_per_head existed (Muon blocks) still resumes. */
static void test_normuon_checkpoint_fields(void)
{
    char good[160], bad[160], old_a[160], old_b[160];
    train_options o = tiny();
    train_result r;
    const uint64_t two = 2;
    double v[16];
    int k, ok = 1;
    path_in(good, sizeof good, "normuon_good.ck");
    path_in(bad, sizeof bad, "normuon_bad.ck");
    path_in(old_a, sizeof old_a, "old_a.ck");
    path_in(old_b, sizeof old_b, "old_b.ck");
    o.ckpt_path = good;
    o.steps = 3;
    o.recipe.block = OPTIM_BLOCK_NORMUON;
    o.recipe.ns_per_head = 1;
    o.recipe.ns_precision = MUON_NS_BF16;
    CHECK(train_run(&o, &r) == TRAIN_DONE);
    train_result_free(&r);
    expect_resume_failure(good, bad, "recipe.ns_precision", CKPT_U64, &two, 1, "recipe.ns_precision");
    for (k = 0; k < 16; k++) v[k] = 0.5;
    v[3] = -1e-3;
    expect_resume_failure(good, bad, "opt.layers.0.wk.row_v", CKPT_F64, v, 16, "negative");
    expect_resume_failure(good, bad, "opt.layers.0.wk.row_v", CKPT_F64, NULL, 0, "opt.layers.0.wk.row_v");
    expect_resume_failure(good, bad, "recipe.ns_per_head", CKPT_U64, &two, 1, "recipe.ns_per_head");
    /* Muon blocks, written as a trainer before 0.3 wrote them: no row_v, no ns_per_head */
    o.recipe = optim_default(OPTIM_ADAMW);
    o.steps = 5, o.stop_at = 2;
    CHECK(train_run(&o, &r) == TRAIN_STOPPED);
    train_result_free(&r);
    ok &= ckpt_with(good, old_b, "recipe.ns_precision", CKPT_U64, NULL, 0); /* before bf16 NS too */
    ok &= ckpt_with(old_b, old_a, "recipe.ns_per_head", CKPT_U64, NULL, 0);
    for (k = 0; k < GPT_N_LAYER_TENSORS; k++) {
        static const char *const m[GPT_N_LAYER_TENSORS] = {"wq", "wk", "wv", "wo", "w_gate", "w_up", "w_down"};
        char name[64];
        snprintf(name, sizeof name, "opt.layers.0.%s.row_v", m[k]);
        ok &= ckpt_with(k % 2 ? old_b : old_a, k % 2 ? old_a : old_b, name, CKPT_F64, NULL, 0);
    }
    CHECK_MSG(ok, "cannot write the old-style checkpoint");
    o = tiny();
    o.resume = old_b; /* 7 drops after the first: the last one wrote old_b */
    CHECK(train_run(&o, &r) == TRAIN_DONE);
    CHECK_MSG(r.outcome == TRAIN_DONE && r.first_step == 2 && r.n_steps == 3, "%s", r.error);
    train_result_free(&r);
    remove(good), remove(bad), remove(old_a), remove(old_b);
}

/* The sizes of the fields are checked against model.config before the model is allocated: a
 * small checkpoint that claims a huge model fails naming the file and the first field that does
 * not match, not with "out of memory" after allocating it. */
static void test_checkpoint_sizes_checked_before_allocation(void)
{
    char good[160], bad[160];
    train_options o = tiny();
    train_result r;
    uint64_t words[6];
    ckpt_reader ck;
    path_in(good, sizeof good, "sizes_good.ck");
    path_in(bad, sizeof bad, "sizes_bad.ck");
    o.ckpt_path = good;
    o.steps = 2;
    CHECK(train_run(&o, &r) == TRAIN_DONE);
    train_result_free(&r);
    CHECK(ckpt_read_file(&ck, good, NULL, 0) == GPT_OK && ckpt_get_u64(&ck, "model.config", words, 6, NULL, 0) == GPT_OK);
    ckpt_reader_free(&ck);
    /* 4096 layers of d 4096: some 3 TB, which no allocator gives */
    words[0] = 4096, words[1] = 4096, words[5] = 10944;
    expect_resume_failure(good, bad, "model.config", CKPT_U64, words, 6, "param.wte");
    /* the case: d 4096 x 8 layers (6.4 GB) from a checkpoint of some 100 KB */
    words[0] = 8, words[1] = 4096, words[5] = 10944;
    expect_resume_failure(good, bad, "model.config", CKPT_U64, words, 6, "param.wte");
    /* a config the model rejects, and one out of the command line's ranges */
    words[0] = 1, words[1] = 15, words[5] = 40;
    expect_resume_failure(good, bad, "model.config", CKPT_U64, words, 6, "model.config");
    words[1] = 16, words[0] = 1u << 17;
    expect_resume_failure(good, bad, "model.config", CKPT_U64, words, 6, "model.config");
    remove(good), remove(bad);
}

/* Input files must be regular files: a symlink to /dev/zero as the tokenizer or a token file,
 * or --resume /dev/zero, fails at once naming the file. */
static void test_non_regular_inputs_refused(void)
{
    char dir[160], from[256], to[256];
    const char *files[3] = {"tokenizer.bin", "train.bin", "val.bin"};
    train_options o = tiny();
    int f, g;
    path_in(dir, sizeof dir, "devdata");
    mkdir(dir, 0777);
    o.data_dir = dir;
    for (f = 0; f < 3; f++) {
        for (g = 0; g < 3; g++) {
            snprintf(from, sizeof from, "%s/%s", g_data, files[g]);
            snprintf(to, sizeof to, "%s/%s", dir, files[g]);
            remove(to);
            if (g == f) CHECK(symlink("/dev/zero", to) == 0);
            else copy_damaged(from, to, (size_t)-1, 0, NULL, 0);
        }
        expect_failure(&o, files[f], "not a regular file");
    }
    o = tiny();
    o.resume = "/dev/zero";
    expect_failure(&o, "/dev/zero", "not a regular file");
    o.resume = g_dir; /* a directory */
    expect_failure(&o, g_dir, "not a regular file");
}

/* Outputs: a checkpoint path that is not a regular file (a FIFO; as root a device node like
 * /dev/full behaved the same) is refused and left alone; a symlink keeps pointing at its target,
 * which gets the checkpoint; a log that cannot be written (/dev/full) fails the run naming it. */
static void test_outputs_refused_or_written_through(void)
{
    char fifo[160], target[160], link[160];
    train_options o = tiny();
    train_result r;
    struct stat st;
    ckpt_reader ck;
    path_in(fifo, sizeof fifo, "ckpt.fifo");
    path_in(target, sizeof target, "real.ck");
    path_in(link, sizeof link, "link.ck");
    CHECK(mkfifo(fifo, 0600) == 0);
    o.steps = 2;
    o.ckpt_path = fifo;
    expect_failure(&o, fifo, "not a regular file");
    CHECK(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
    remove(fifo);
    CHECK(symlink("real.ck", link) == 0);
    o.ckpt_path = link;
    CHECK(train_run(&o, &r) == TRAIN_DONE);
    train_result_free(&r);
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(ckpt_read_file(&ck, target, NULL, 0) == GPT_OK);
    ckpt_reader_free(&ck);
    remove(link), remove(target);
    o.ckpt_path = NULL;
    o.log_path = "/dev/full";
    expect_failure(&o, "/dev/full", "log");
}

/* Same losses and diagnostics on 1 and 2 OpenMP threads (and from run to run). */
static void test_thread_count_does_not_change_results(void)
{
    train_options o = tiny();
    train_result a, b;
    int k, all = 1;
    o.recipe = optim_default(OPTIM_ROWNORM);
#ifdef _OPENMP
    int saved = omp_get_max_threads();
    omp_set_num_threads(1);
#endif
    CHECK(train_run(&o, &a) == TRAIN_DONE);
#ifdef _OPENMP
    omp_set_num_threads(2);
#endif
    CHECK(train_run(&o, &b) == TRAIN_DONE);
#ifdef _OPENMP
    omp_set_num_threads(saved);
#endif
    for (k = 0; k < a.n_steps && a.n_steps == b.n_steps; k++)
        all &= same_bits(a.steps[k].loss, b.steps[k].loss) && same_bits(a.steps[k].d_hi, b.steps[k].d_hi);
    CHECK(all && a.n_steps == 12);
    CHECK(same_bits(a.final_val_loss, b.final_val_loss) && same_bits(a.final_hilbert_rms, b.final_hilbert_rms));
    train_result_free(&a);
    train_result_free(&b);
}

/* A checkpoint at the end of its schedule trains nothing and samples from a prompt. */
static void test_sample_from_finished_checkpoint(void)
{
    train_options o = tiny();
    train_result r;
    char ck[160];
    path_in(ck, sizeof ck, "finished.ck");
    o.steps = 4;
    o.ckpt_path = ck;
    CHECK(train_run(&o, &r) == TRAIN_DONE);
    train_result_free(&r);
    o = tiny();
    o.resume = ck;
    o.ckpt_path = NULL;
    o.sample_tokens = 8;
    o.prompt = "the head";
    CHECK(train_run(&o, &r) == TRAIN_DONE);
    CHECK(r.n_steps == 0 && r.first_step == 4 && r.last_step == 4);
    CHECK(r.final_val_loss == r.final_val_loss && r.final_diameter > 0);
    train_result_free(&r);
    o.temperature = 0.0; /* greedy, and an empty prompt starts from end-of-text */
    o.prompt = NULL;
    CHECK(train_run(&o, &r) == TRAIN_DONE);
    train_result_free(&r);
}

/* lr x weight decay above 1 is refused up front, naming the flags, the product and the limit
 * (issue 41 item 6): by the command line, and by train_run before anything is trained. */
static void test_lr_wd_limit_named(void)
{
    char msg[512];
    char *a[] = {"train", "--lr-muon", "100"};
    char *b[] = {"train", "--head", "rownorm", "--wd-head", "1", "--lr-head", "3"};
    char *c[] = {"train", "--experiment", "--lr-head-adamw", "20"};
    char *d[] = {"train", "--experiment", "--sweep-rownorm", "1e-3", "--wd-embed", "0.5", "--lr-embed", "4"};
    train_options o = tiny();
    train_result r;
    CHECK_MSG(parse_caught(3, a, msg, sizeof msg) == GPT_ERR_DOMAIN &&
                  strstr(msg, "--lr-muon 100 with --wd-muon 0.1: lr x weight decay = 10 must be <= 1"), "%s", msg);
    CHECK_MSG(parse_caught(7, b, msg, sizeof msg) == GPT_ERR_DOMAIN && strstr(msg, "--lr-head 3 with --wd-head 1"), "%s", msg);
    CHECK_MSG(parse_caught(4, c, msg, sizeof msg) == GPT_ERR_DOMAIN && strstr(msg, "--lr-head-adamw 20") &&
                  strstr(msg, "adamw arm's head weight decay 0.1") && strstr(msg, "= 2 must be <= 1"), "%s", msg);
    CHECK_MSG(parse_caught(8, d, msg, sizeof msg) == GPT_ERR_DOMAIN && strstr(msg, "--lr-embed 4 with --wd-embed 0.5"), "%s", msg);
    o.recipe.head_lr = 20;
    CHECK(train_run(&o, &r) == TRAIN_FAILED && r.n_steps == 0);
    CHECK_MSG(strstr(r.error, "--lr-head 20 with --wd-head 0.1: lr x weight decay = 2 must be <= 1"), "%s", r.error);
    train_result_free(&r);
}

/* Each rule of the model config fails with its own message, naming the flags (issue 41 item 6). */
static void test_model_config_rules_named(void)
{
    static const struct {
        int layers, d, heads, mlp;
        const char *w1, *w2;
    } cases[] = {
        {1, 65, 2, 0, "--d-model 65", "not a multiple of --heads 2"},
        {1, 6, 2, 0, "--d-model 6 / --heads 2 = 3", "even"},
        {1, 16, 2, (1 << 20) + 1, "--mlp 1048577", "outside 1..1048576"},
        {1 << 20, 1 << 20, 2, 8, "parameters", "1e12"},
    };
    size_t k;
    for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        train_options o = tiny();
        train_result r;
        o.model.n_layers = cases[k].layers, o.model.d_model = cases[k].d, o.model.n_heads = cases[k].heads;
        o.model.mlp_hidden = cases[k].mlp;
        CHECK(train_run(&o, &r) == TRAIN_FAILED);
        CHECK_MSG(strstr(r.error, cases[k].w1) && strstr(r.error, cases[k].w2), "case %zu: '%s'", k, r.error);
        train_result_free(&r);
    }
}

/* A token file made with another tokenizer of the same vocabulary size is refused, naming both
 * files; so is one of the old format (version 1, no tokenizer recorded). */
static void test_token_files_carry_their_tokenizer(void)
{
    char dir[160], from[256], to[256];
    const char *files[2] = {"tokenizer.bin", "train.bin"};
    uint32_t ids[2000];
    tok_tokenizer other;
    train_options o = tiny();
    unsigned char one[4];
    size_t i;
    int f;
    path_in(dir, sizeof dir, "mixed");
    mkdir(dir, 0777);
    for (f = 0; f < 2; f++) {
        snprintf(from, sizeof from, "%s/%s", g_data, files[f]);
        snprintf(to, sizeof to, "%s/%s", dir, files[f]);
        copy_damaged(from, to, (size_t)-1, 0, NULL, 0);
    }
    { /* another tokenizer of 300 tokens: the merges of other text */
        char text[6000];
        size_t n = 0;
        while (n + 40 < sizeof text) n += (size_t)sprintf(text + n, "zq%lu xv%lu wy, ", (unsigned long)(n % 97), (unsigned long)(n % 89));
        CHECK(tok_train(&other, (const unsigned char *)text, n, 300, NULL, 0) == GPT_OK && other.vocab_size == 300);
        for (i = 0; i < 2000; i++) ids[i] = (uint32_t)(i * 7 % 300);
        snprintf(to, sizeof to, "%s/val.bin", dir);
        CHECK(data_tokens_write(to, ids, 2000, other.vocab_size, tok_identity(&other), 7, NULL, 0) == GPT_OK);
        tok_free(&other);
    }
    o.data_dir = dir;
    snprintf(from, sizeof from, "%s/tokenizer.bin", dir);
    expect_failure(&o, to, "another tokenizer than");
    expect_failure(&o, from, "prepare");
    snprintf(from, sizeof from, "%s/val.bin", g_data);
    data_put_u32le(one, 1);
    copy_damaged(from, to, (size_t)-1, 4, one, 4);
    expect_failure(&o, "val.bin: token file version 1", "re-run build/gpt/prepare");
    { /* the right tokenizer, but val.bin from another corpus (its recorded identity) */
        data_tokens d;
        tok_tokenizer t;
        char tp[160];
        snprintf(tp, sizeof tp, "%s/tokenizer.bin", g_data);
        CHECK(data_tokens_read(&d, from, NULL, 0) == GPT_OK && tok_load(&t, tp, NULL, 0) == GPT_OK);
        CHECK(data_tokens_write(to, d.tokens, d.n_tokens, d.vocab_size, tok_identity(&t), 8, NULL, 0) == GPT_OK);
        data_tokens_free(&d);
        tok_free(&t);
        expect_failure(&o, "different corpora", "0000000000000007, 0000000000000008");
    }
}

/* --resume with flags the checkpoint decides: each one whose value differs is named with the
 * checkpoint's value; the same values (or flags the checkpoint does not decide) pass. */
static void test_resume_conflicting_flags_named(void)
{
    train_options o = tiny();
    train_result r;
    train_cli cli;
    char ck[160], msg[1024];
    int n_conflicts = -1;
    path_in(ck, sizeof ck, "conflicts.ck");
    o.ckpt_path = ck;
    o.steps = 3;
    CHECK(train_run(&o, &r) == TRAIN_DONE);
    train_result_free(&r);
    {
        char *a[] = {"train", "--resume", ck, "--steps", "100", "--d-model", "128", "--head", "adamw", "--lr-head", "0.5",
                     "--ns-per-head", "--sample", "5"};
        memset(&cli, 0, sizeof cli);
        cli.opt = train_default_options();
        CHECK(cli_parse(&cli, 14, a) == GPT_OK);
        CHECK(cli_resume_conflicts(&cli, &n_conflicts, msg, sizeof msg) == GPT_ERR_CONFIG && n_conflicts == 4);
        CHECK_MSG(strstr(msg, "--steps 100 (the checkpoint's: 3)") && strstr(msg, "--d-model 128 (the checkpoint's: 16)") &&
                      strstr(msg, "--lr-head 0.5 (the checkpoint's: 0.004)") &&
                      strstr(msg, "--ns-per-head (the checkpoint's: off)") && !strstr(msg, "--head ") &&
                      !strstr(msg, "--sample"),
                  "%s", msg);
    }
    {
        char *b[] = {"train", "--resume", ck, "--steps", "3", "--d-model", "16", "--layers", "1", "--head", "adamw",
                     "--lr-head", "4e-3", "--sample", "5"};
        memset(&cli, 0, sizeof cli);
        cli.opt = train_default_options();
        CHECK(cli_parse(&cli, 15, b) == GPT_OK);
        CHECK_MSG(cli_resume_conflicts(&cli, &n_conflicts, msg, sizeof msg) == GPT_OK && n_conflicts == 0, "%s", msg);
    }
}

/* A diverging run stops naming the step, the loss and a tensor (or the activations). */
static void test_nonfinite_loss_stops(void)
{
    train_options o = tiny();
    train_result r;
    o.recipe.head_lr = 1e30;
    o.recipe.head_wd = 0.0; /* lr x wd <= 1, else refused before the first step */
    o.recipe.muon_lr = 1e30, o.recipe.muon_wd = 0.0; /* block matrices of 1e30: the activations overflow */
    o.recipe.clip = 0.0;
    o.recipe.warmup_frac = 0.0;
    CHECK(train_run(&o, &r) == TRAIN_FAILED);
    CHECK_MSG(strstr(r.error, "step ") != NULL && strstr(r.error, "loss is") != NULL &&
                  (strstr(r.error, "non-finite tensor") != NULL || strstr(r.error, "activations overflowed") != NULL),
              "error: %s", r.error);
    CHECK(r.last_step < 12);
    train_result_free(&r);
}

static void test_schedule(void)
{
    optim_recipe rc = optim_default(OPTIM_ADAMW);
    CHECK_NEAR(optim_lr_factor(&rc, 0, 100), 0.1, 1e-15, 0);  /* (0+1)/10 */
    CHECK_NEAR(optim_lr_factor(&rc, 9, 100), 1.0, 1e-15, 0);  /* end of warm-up */
    CHECK_NEAR(optim_lr_factor(&rc, 10, 100), 1.0, 1e-15, 0); /* cosine starts at the peak */
    CHECK_NEAR(optim_lr_factor(&rc, 99, 100), 0.1, 1e-15, 0); /* last update at 10 % */
    CHECK_NEAR(optim_lr_factor(&rc, 10 + 89 / 2, 100), 0.55, 0.02, 0);
    CHECK(optim_lr_factor(&rc, 50, 100) > optim_lr_factor(&rc, 51, 100));
}

/* The AdamW head step S (SPEC 1.6) equals the change of the head minus the decay. */
static void test_adamw_head_step(void)
{
    gpt_config cfg;
    optim_set os;
    optim_recipe rc = optim_default(OPTIM_ADAMW);
    gpt_layout lay;
    float *p, *g, *before;
    t_rng rng = {3};
    size_t i, V, d;
    double worst = 0.0, lr, decay;
    int ok = 1;
    memset(&cfg, 0, sizeof cfg);
    cfg.n_layers = 1, cfg.d_model = 16, cfg.n_heads = 2, cfg.seq_len = 8, cfg.vocab_size = 50;
    CHECK(gpt_config_resolve(&cfg) == GPT_OK);
    lay = gpt_layout_of(&cfg);
    p = (float *)malloc(lay.n_params * sizeof *p);
    g = (float *)malloc(lay.n_params * sizeof *g);
    before = (float *)malloc(lay.n_params * sizeof *before);
    gpt_init_params(&cfg, p, 5);
    CHECK(optim_create(&os, &rc, &cfg, p, NULL, 0) == GPT_OK);
    V = (size_t)cfg.vocab_size, d = (size_t)cfg.d_model;
    for (i = 0; i < 3 && ok; i++) {
        size_t k;
        for (k = 0; k < lay.n_params; k++) g[k] = (float)(1e-3 * t_rng_normal(&rng));
        memcpy(before, p, lay.n_params * sizeof *p);
        ok &= optim_step(&os, p, g, (long)i, 10, NULL, 0) == GPT_OK;
        lr = rc.head_lr * os.last_lr_factor;
        decay = 1.0 - lr * rc.head_wd;
        for (k = 0; k < V * d; k++) {
            double want = (double)p[lay.lm_head + k] - decay * (double)before[lay.lm_head + k];
            double e = fabs((double)os.head_step[k] - want);
            worst = e > worst ? e : worst;
        }
    }
    CHECK(ok);
    CHECK_MSG(worst < 1e-8, "worst |S - (W_after - (1 - lr wd) W_before)| = %g", worst);
    optim_free(&os);
    free(p), free(g), free(before);
}

/* cli_parse with stderr caught: its status, the message in msg */
static gpt_status parse_caught(int argc, char **argv, char *msg, size_t cap)
{
    train_cli cli;
    FILE *f = tmpfile();
    int saved = dup(2);
    gpt_status rc;
    size_t n = 0;
    memset(&cli, 0, sizeof cli);
    cli.opt = train_default_options();
    fflush(stderr);
    if (f && saved >= 0) dup2(fileno(f), 2);
    rc = cli_parse(&cli, argc, argv);
    fflush(stderr);
    if (saved >= 0) dup2(saved, 2), close(saved);
    if (f) {
        rewind(f);
        n = fread(msg, 1, cap - 1, f);
        fclose(f);
    }
    msg[n] = 0;
    return rc;
}

/* A flag given in the mode where it has no effect is an error that names the flag to use. */
static void test_flags_of_the_other_mode(void)
{
    char msg[512];
    char *a[] = {"train", "--experiment", "--lr-head", "0.01"};
    char *b[] = {"train", "--lr-head-rownorm", "0.01"};
    char *c[] = {"train", "--sweep-adamw", "1e-3,2e-3"};
    char *d[] = {"train", "--experiment", "--sweep-adamw", "1e-3,x"};
    char *e[] = {"train", "--experiment", "--sweep-rownorm", "1e-3", "--lr-head-rownorm", "2e-3"};
    char *f[] = {"train", "--experiment", "--head", "rownorm"};
    char *ok[] = {"train", "--experiment", "--sweep-adamw", "4e-3,1e-3", "--lr-head-rownorm", "2e-3", "--sweep-extend", "0"};
    train_cli cli;
    CHECK(parse_caught(4, a, msg, sizeof msg) == GPT_ERR_CONFIG && strstr(msg, "--lr-head-adamw") && strstr(msg, "--sweep-adamw"));
    CHECK_MSG(parse_caught(3, b, msg, sizeof msg) == GPT_ERR_CONFIG && strstr(msg, "--head rownorm --lr-head"), "%s", msg);
    CHECK(parse_caught(3, c, msg, sizeof msg) == GPT_ERR_CONFIG && strstr(msg, "--experiment"));
    CHECK(parse_caught(4, d, msg, sizeof msg) == GPT_ERR_DOMAIN && strstr(msg, "--sweep-adamw") && strstr(msg, "positive rates"));
    CHECK(parse_caught(6, e, msg, sizeof msg) == GPT_ERR_CONFIG && strstr(msg, "give one of them"));
    CHECK(parse_caught(4, f, msg, sizeof msg) == GPT_ERR_CONFIG && strstr(msg, "both"));
    { /* a flag taken as the value of the flag before it is named as such */
        char *g[] = {"train", "--steps", "--seed", "2"};
        CHECK_MSG(parse_caught(4, g, msg, sizeof msg) == GPT_ERR_CONFIG && strstr(msg, "--steps needs a value") &&
                      strstr(msg, "got the flag --seed"), "%s", msg);
    }
    memset(&cli, 0, sizeof cli);
    cli.opt = train_default_options();
    cli.sweep_extend = 2;
    CHECK(cli_parse(&cli, 8, ok) == GPT_OK && cli.sweep[0] && strcmp(cli.sweep[0], "4e-3,1e-3") == 0);
    CHECK(cli.exp_head_lr[1] == 2e-3 && cli.sweep[1] == NULL && cli.sweep_extend == 0);
}

/* A run's log records its recipe (read back by exp_log_recipe) and the head rate of every update. */
static void test_log_records_recipe(void)
{
    train_options o = tiny();
    train_result r;
    exp_log L;
    char log_path[256];
    const char *v;
    int k, ok = 1;
    path_in(log_path, sizeof log_path, "recipe.csv");
    o.log_path = log_path;
    o.recipe = optim_default(OPTIM_ROWNORM);
    o.recipe.head_lr = 0.0123;
    o.steps = 10;
    CHECK(train_run(&o, &r) == TRAIN_DONE);
    CHECK(exp_log_read(log_path, &L, NULL, 0) == 0);
    v = exp_log_recipe(&L, "head_lr");
    CHECK(v && strtod(v, NULL) == 0.0123);
    v = exp_log_recipe(&L, "head");
    CHECK(v && strcmp(v, "rownorm") == 0);
    v = exp_log_recipe(&L, "muon_lr");
    CHECK(v && strtod(v, NULL) == o.recipe.muon_lr);
    v = exp_log_recipe(&L, "d_model");
    CHECK(v && strcmp(v, "16") == 0);
    v = exp_log_recipe(&L, "block");
    CHECK(v && strcmp(v, "muon") == 0);
    v = exp_log_recipe(&L, "ns_per_head");
    CHECK(v && strcmp(v, "0") == 0);
    v = exp_log_recipe(&L, "ns_precision");
    CHECK(v && strcmp(v, "fp32") == 0);
    CHECK(exp_log_recipe(&L, "no_such_key") == NULL);
    exp_log_free(&L);
    { /* the head_lr column: the peak times the schedule factor of that update */
        unsigned char *buf;
        size_t n;
        char *line;
        CHECK(data_read_file(log_path, &buf, &n, NULL, 0) == GPT_OK);
        if (buf) {
            buf[n - 1] = 0;
            for (k = 0, line = strstr((char *)buf, "\ntrain,"); line; line = strstr(line + 1, "\ntrain,"), k++) {
                const char *p = line + 1;
                int col;
                for (col = 0; col < 14 && p; col++) p = strchr(p, ','), p = p ? p + 1 : NULL;
                if (!p || strtod(p, NULL) != 0.0123 * optim_lr_factor(&o.recipe, k, o.steps)) ok = 0;
            }
            CHECK(ok && k == 10);
            free(buf);
        }
    }
    train_result_free(&r);
}

static void test_flags(void)
{
    train_cli cli;
    char *ok_argv[] = {"train", "--head", "rownorm", "--steps", "7", "--lr-muon", "0.01", "--accum", "2", "--cap", "growth",
                       "--block", "muown", "--seed", "5", "--no-progress"};
    char *bad_argv[] = {"train", "--steps", "x"};
    char *unknown_argv[] = {"train", "--frobnicate", "1"};
    memset(&cli, 0, sizeof cli);
    cli.opt = train_default_options();
    CHECK(cli_parse(&cli, 16, ok_argv) == GPT_OK);
    CHECK(cli.opt.recipe.head == OPTIM_ROWNORM && cli.opt.recipe.head_lr == 3.2e-3 && cli.opt.steps == 7);
    CHECK(cli.opt.recipe.muon_lr == 0.01 && cli.opt.accum == 2 && cli.opt.recipe.cap == MUON_CAP_GROWTH);
    CHECK(cli.opt.recipe.block == OPTIM_BLOCK_MUOWN && cli.opt.seed == 5 && cli.opt.progress == 0);
    fprintf(stderr, "(nine flag errors expected below)\n");
    CHECK(cli_parse(&cli, 3, bad_argv) == GPT_ERR_CONFIG);
    CHECK(cli_parse(&cli, 3, unknown_argv) == GPT_ERR_CONFIG);
    { /* a flag of the other mode, a missing value, a value out of range */
        char *resume_exp[] = {"train", "--experiment", "--resume", "x.bin"};
        char *seeds_run[] = {"train", "--seeds", "2"};
        char *missing[] = {"train", "--steps"};
        char *range[] = {"train", "--warmup", "1.5"};
        char *exp_ok[] = {"train", "--seeds", "2", "--experiment", "--lr-head-rownorm", "0.01", "--steps", "9"};
        CHECK(cli_parse(&cli, 4, resume_exp) == GPT_ERR_CONFIG);
        CHECK(cli_parse(&cli, 3, seeds_run) == GPT_ERR_CONFIG);
        CHECK(cli_parse(&cli, 2, missing) == GPT_ERR_CONFIG);
        CHECK(cli_parse(&cli, 3, range) == GPT_ERR_CONFIG);
        memset(&cli, 0, sizeof cli);
        cli.opt = train_default_options();
        CHECK(cli_parse(&cli, 8, exp_ok) == GPT_OK && cli.experiment == 1 && cli.seeds == 2);
        CHECK(cli.exp_head_lr[1] == 0.01 && cli.opt.steps == 9);
    }
    { /* NorMuon blocks and per-head NS; an unknown block optimizer is refused */
        char *nm[] = {"train", "--block", "normuon", "--ns-per-head"};
        char *bad_block[] = {"train", "--block", "adam"};
        memset(&cli, 0, sizeof cli);
        cli.opt = train_default_options();
        CHECK(cli.opt.recipe.ns_per_head == 0);
        CHECK(cli_parse(&cli, 4, nm) == GPT_OK && cli.opt.recipe.block == OPTIM_BLOCK_NORMUON && cli.opt.recipe.ns_per_head == 1);
        CHECK(cli_parse(&cli, 3, bad_block) == GPT_ERR_CONFIG);
    }
    { /* --ns-steps: a count or auto (0 and other words refused), and the budget's period */
        char *au[] = {"train", "--ns-steps", "auto", "--ns-every", "7"}, *three[] = {"train", "--ns-steps", "3"};
        char *zero[] = {"train", "--ns-steps", "0"}, *word[] = {"train", "--ns-steps", "often"};
        memset(&cli, 0, sizeof cli);
        cli.opt = train_default_options();
        CHECK(cli.opt.recipe.ns_steps == 5 && cli.opt.recipe.ns_every == OPTIM_NS_AUTO_EVERY);
        CHECK(cli_parse(&cli, 5, au) == GPT_OK && cli.opt.recipe.ns_steps == OPTIM_NS_AUTO && cli.opt.recipe.ns_every == 7);
        CHECK(cli_parse(&cli, 3, three) == GPT_OK && cli.opt.recipe.ns_steps == 3);
        CHECK(cli_parse(&cli, 3, zero) == GPT_ERR_CONFIG);
        CHECK(cli_parse(&cli, 3, word) == GPT_ERR_CONFIG);
    }
    { /* bf16 Newton-Schulz; an unknown precision is refused */
        char *bf[] = {"train", "--ns-precision", "bf16"}, *fp[] = {"train", "--ns-precision", "fp32"};
        char *bad_prec[] = {"train", "--ns-precision", "fp16"};
        memset(&cli, 0, sizeof cli);
        cli.opt = train_default_options();
        CHECK(cli.opt.recipe.ns_precision == MUON_NS_FP32);
        CHECK(cli_parse(&cli, 3, bf) == GPT_OK && cli.opt.recipe.ns_precision == MUON_NS_BF16);
        CHECK(cli_parse(&cli, 3, fp) == GPT_OK && cli.opt.recipe.ns_precision == MUON_NS_FP32);
        CHECK(cli_parse(&cli, 3, bad_prec) == GPT_ERR_CONFIG);
    }
    { /* --head sets its defaults first: --lr-head before it still wins */
        char *order[] = {"train", "--lr-head", "0.5", "--head", "rownorm"};
        memset(&cli, 0, sizeof cli);
        cli.opt = train_default_options();
        CHECK(cli_parse(&cli, 5, order) == GPT_OK && cli.opt.recipe.head == OPTIM_ROWNORM && cli.opt.recipe.head_lr == 0.5);
    }
    { /* the usage text is the table: every flag is in it, and every flag is known to the parser */
        char buf[16384];
        FILE *f = tmpfile();
        size_t n;
        int k, all = 1;
        CHECK(f != NULL);
        if (!f) return;
        cli_usage(f);
        rewind(f);
        n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = 0;
        fclose(f);
        CHECK(cli_flag_count() > 40);
        for (k = 0; k < cli_flag_count(); k++) {
            char want[64];
            snprintf(want, sizeof want, "  %s", cli_flag_name(k));
            if (!strstr(buf, want)) all = 0, fprintf(stderr, "usage misses %s\n", cli_flag_name(k));
        }
        CHECK(all);
    }
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/test_train_XXXXXX");
    if (!mkdtemp(g_dir)) return 1;
    snprintf(g_data, sizeof g_data, "%s/data", g_dir);
    if (!make_data(g_data)) {
        fprintf(stderr, "cannot build the test corpus\n");
        return 1;
    }
    RUN(test_schedule);
    RUN(test_flags);
    RUN(test_flags_of_the_other_mode);
    RUN(test_log_records_recipe);
    RUN(test_adamw_head_step);
    RUN(test_run_records);
    RUN(test_resume_adamw_head);
    RUN(test_resume_rownorm_head_accum);
    RUN(test_resume_muon_head_muown_cap);
    RUN(test_resume_cap);
    RUN(test_resume_normuon_per_head);
    RUN(test_resume_ns_auto);
    RUN(test_log_reads_mixed_rows);
    RUN(test_ns_budget_rule);
    RUN(test_block_switches);
    RUN(test_ns_precision_bf16);
    RUN(test_normuon_checkpoint_fields);
    RUN(test_sigint_saves_and_resumes);
    RUN(test_experiment_table_equals_logs);
    RUN(test_frontier_math);
    RUN(test_bad_files_give_clear_errors);
    RUN(test_checkpoint_values_are_validated);
    RUN(test_checkpoint_sizes_checked_before_allocation);
    RUN(test_non_regular_inputs_refused);
    RUN(test_outputs_refused_or_written_through);
    RUN(test_nonfinite_loss_stops);
    RUN(test_model_config_rules_named);
    RUN(test_lr_wd_limit_named);
    RUN(test_resume_conflicting_flags_named);
    RUN(test_token_files_carry_their_tokenizer);
    RUN(test_sample_from_finished_checkpoint);
    RUN(test_thread_count_does_not_change_results);
    {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
    }
    return TEST_REPORT();
}
