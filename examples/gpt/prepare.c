/* prepare.c - turn text files into a tokenizer and train/val token files for the trainer.
 *
 *   prepare [--vocab N] [--val-fraction F] [--out DIR] [--root DIR] [--project-text | FILE...]
 *   prepare --check DIR
 *   prepare --write-snapshot FILE [--root DIR]
 *
 * With no FILE, the corpus is the demo's: the committed snapshot of the project's own text
 * (DATA_DEMO_CORPUS under the repository root, found from the working directory or given with
 * --root; its identity checked against DATA_DEMO_CORPUS_ID), so it runs on a fresh checkout with no
 * download and gives the same tokens on every commit. --project-text takes the project's text as
 * it is now instead (data_default_corpus_files); --write-snapshot writes that text as a new
 * snapshot. A FILE that is a corpus snapshot (its first line says so) adds its documents.
 * Writes DIR/tokenizer.bin, DIR/train.bin and DIR/val.bin (atomically; DIR is created), each
 * token file recording the corpus's identity, and prints what it did.
 *
 * Defaults: --vocab 2048 (the project's text is a few hundred KB: 2048 tokens leave every merge
 * seen many times; at 4096 the late merges are rare words), --val-fraction 0.1, --out build/gpt/data.
 *
 * Split: every document is encoded on its own; its first (1 - F) of tokens go to train.bin and the
 * rest to val.bin, each part preceded by the end-of-text token. So validation samples every file
 * (headers, docs, sources) rather than whichever files come last.
 */
#define _POSIX_C_SOURCE 200809L
#include "data.h"
#include "tokenizer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* The trainer's default micro-batch (train_default_options): a split shorter than one batch of it
 * cannot be trained or evaluated at the defaults. */
#define PREPARE_B 8
#define PREPARE_T 64
#define PREPARE_MIN_TOKENS (PREPARE_B * PREPARE_T + 1)

static void usage(FILE *f)
{
    fprintf(f, "usage: prepare [--vocab N] [--val-fraction F] [--out DIR] [--root DIR] [--project-text | FILE...]\n"
               "       prepare --check DIR   exit 0 if DIR's files are of this build's formats, agree with its\n"
               "                             tokenizer.bin and come from the demo's corpus, else 1 with the reason\n"
               "       prepare --write-snapshot FILE   write the project's text as it is now as a corpus snapshot\n"
               "  --vocab N          tokenizer size, 257..%u (default 2048)\n"
               "  --val-fraction F   share of each document's tokens kept for validation, (0, 0.5] (default 0.1)\n"
               "  --out DIR          where tokenizer.bin, train.bin, val.bin go (default build/gpt/data)\n"
               "  --root DIR         repository root for the default corpus (default: found from here)\n"
               "  --project-text     the project's own text as it is now, instead of the demo's snapshot of it\n"
               "  FILE...            text files (or corpus snapshots) to use instead of the default corpus,\n"
               "                     the demo's snapshot of the project's text (" DATA_DEMO_CORPUS ")\n",
            TOK_MAX_VOCAB);
}

/* mkdir -p: creates each missing component of dir. GPT_ERR_SIZE for an empty or too long dir,
 * GPT_ERR_IO (errno set by mkdir) when a component cannot be made. */
static gpt_status make_dirs(const char *dir)
{
    char path[4096];
    size_t i, n = strlen(dir);
    if (n == 0 || n >= sizeof path) return GPT_ERR_SIZE;
    memcpy(path, dir, n + 1);
    for (i = 1; i <= n; i++) {
        if (path[i] == '/' || path[i] == 0) {
            char c = path[i];
            path[i] = 0;
            if (mkdir(path, 0777) != 0 && errno != EEXIST) return GPT_ERR_IO;
            path[i] = c;
        }
    }
    return GPT_OK;
}

/* --check DIR: GPT_OK when DIR holds a tokenizer.bin and a train.bin and val.bin that this build
 * reads, that were made with that tokenizer and from the demo's corpus; else the first failure
 * with the reason on stderr (exit code 1: the demo re-prepares then, train.mk). */
static gpt_status check_dir(const char *dir)
{
    static const char *const split[2] = {"train.bin", "val.bin"};
    char tok_path[4200], path[4200], err[1024];
    tok_tokenizer tok;
    gpt_status st;
    int k;
    snprintf(tok_path, sizeof tok_path, "%s/tokenizer.bin", dir);
    if ((st = tok_load(&tok, tok_path, err, sizeof err)) != GPT_OK) {
        fprintf(stderr, "prepare: %s\n", err);
        return st;
    }
    /* formats and tokenizer first (both files), then the corpus */
    for (k = 0; k < 4 && st == GPT_OK; k++) {
        data_tokens d;
        snprintf(path, sizeof path, "%s/%s", dir, split[k % 2]);
        if ((st = data_tokens_read(&d, path, err, sizeof err)) == GPT_OK) {
            if (k < 2)
                st = tok_check_tokens(&tok, tok_path, &d, path, err, sizeof err);
            else if (d.corpus_id != DATA_DEMO_CORPUS_ID)
                st = gpt_fail(err, sizeof err, GPT_ERR_MISMATCH, "%s comes from corpus %016llx%s, not the demo's "
                              "(%016llx, %s)", path, (unsigned long long)d.corpus_id,
                              d.corpus_id ? "" : " (unknown: an older format)", (unsigned long long)DATA_DEMO_CORPUS_ID,
                              DATA_DEMO_CORPUS);
            data_tokens_free(&d);
        }
        if (st != GPT_OK) fprintf(stderr, "prepare: %s\n", err);
    }
    tok_free(&tok);
    if (st == GPT_OK)
        printf("prepare: %s is up to date (tokenizer.bin, train.bin, val.bin of this build's formats, from the demo's "
               "corpus %016llx)\n", dir, (unsigned long long)DATA_DEMO_CORPUS_ID);
    return st;
}

/* --write-snapshot FILE: the project's text as it is now (data_default_corpus_files under root),
 * one document per file, named by its path under the root. GPT_OK, or the failure (message on
 * stderr; GPT_ERR_IO when none of the files is there). */
static gpt_status write_snapshot(const char *out, const char *root)
{
    const char *names[64];
    const unsigned char *text[64];
    size_t len[64], n = 0, i, blen;
    unsigned char *b = NULL;
    char err[512], path[4200];
    data_corpus c;
    gpt_status st = GPT_OK;
    memset(&c, 0, sizeof c);
    for (i = 0; data_default_corpus_files[i] && n < 64; i++) {
        FILE *f;
        snprintf(path, sizeof path, "%s/%s", root, data_default_corpus_files[i]);
        if (!(f = fopen(path, "rb"))) continue;
        fclose(f);
        if ((st = data_corpus_add_file(&c, path, err, sizeof err)) != GPT_OK) {
            fprintf(stderr, "prepare: %s\n", err);
            goto done;
        }
        names[n++] = data_default_corpus_files[i];
    }
    for (i = 0; i < n; i++) text[i] = c.text + c.doc_start[i], len[i] = c.doc_start[i + 1] - c.doc_start[i];
    if (n == 0) {
        fprintf(stderr, "prepare: none of the project's files found under %s\n", root);
        st = GPT_ERR_IO;
    } else if ((st = data_snapshot_serialize(names, text, len, n, &b, &blen, err, sizeof err)) != GPT_OK ||
               (st = data_write_file_atomic(out, b, blen, err, sizeof err)) != GPT_OK) {
        fprintf(stderr, "prepare: %s\n", err);
    } else {
        printf("prepare: wrote %s: %lu documents, %lu bytes of text, corpus identity %016llx\n", out,
               (unsigned long)n, (unsigned long)c.n_bytes, (unsigned long long)data_corpus_id(&c));
    }
done:
    free(b);
    data_corpus_free(&c);
    return st;
}

static double seconds(clock_t a, clock_t b) { return (double)(b - a) / CLOCKS_PER_SEC; }

int main(int argc, char **argv)
{
    long vocab = 2048;
    double val_fraction = 0.1;
    const char *out_dir = "build/gpt/data", *root = NULL, *snapshot_out = NULL;
    int project_text = 0;
    uint64_t corpus_id;
    char root_buf[64], err[512], path[4200];
    data_corpus corpus;
    tok_tokenizer tok;
    uint32_t *train = NULL, *val = NULL, *ids = NULL;
    size_t n_train = 0, n_val = 0, n_eot = 0, d, n_files = 0, max_doc = 0;
    clock_t c0, c1, c2;
    int i, rc = 1;

    memset(&corpus, 0, sizeof corpus);
    memset(&tok, 0, sizeof tok);
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        char *end = NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--vocab") == 0 && i + 1 < argc) {
            vocab = strtol(argv[++i], &end, 10);
            if (!*argv[i] || *end || vocab < 257 || vocab > (long)TOK_MAX_VOCAB) {
                fprintf(stderr, "prepare: --vocab %s: want an integer in [257, %u]\n", argv[i], TOK_MAX_VOCAB);
                return 2;
            }
        } else if (strcmp(a, "--val-fraction") == 0 && i + 1 < argc) {
            val_fraction = strtod(argv[++i], &end);
            if (!*argv[i] || *end || !(val_fraction > 0 && val_fraction <= 0.5)) {
                fprintf(stderr, "prepare: --val-fraction %s: want a number in (0, 0.5]\n", argv[i]);
                return 2;
            }
        } else if (strcmp(a, "--out") == 0 && i + 1 < argc) {
            out_dir = argv[++i];
        } else if (strcmp(a, "--check") == 0 && i + 1 < argc) {
            return check_dir(argv[++i]) == GPT_OK ? 0 : 1;
        } else if (strcmp(a, "--root") == 0 && i + 1 < argc) {
            root = argv[++i];
        } else if (strcmp(a, "--write-snapshot") == 0 && i + 1 < argc) {
            snapshot_out = argv[++i];
        } else if (strcmp(a, "--project-text") == 0) {
            project_text = 1;
        } else if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, "prepare: unknown or incomplete option %s\n", a);
            usage(stderr);
            return 2;
        } else {
            if (data_corpus_add_input(&corpus, a, err, sizeof err) != GPT_OK) {
                fprintf(stderr, "prepare: %s\n", err);
                goto done;
            }
            n_files++;
        }
    }
    if (project_text && n_files) {
        fprintf(stderr, "prepare: --project-text and FILE arguments exclude each other\n");
        goto done;
    }
    if (n_files == 0 || snapshot_out) {
        if (!root) {
            if (!data_find_repo_root(root_buf, sizeof root_buf)) {
                fprintf(stderr, "prepare: no FILE given and no repository root (rownorm.h, muon.h) found from "
                                "here; use --root DIR or name text files\n");
                goto done;
            }
            root = root_buf;
        }
        if (snapshot_out) {
            if (n_files) {
                fprintf(stderr, "prepare: --write-snapshot takes no FILE (it writes the project's text)\n");
                goto done;
            }
            rc = write_snapshot(snapshot_out, root) == GPT_OK ? 0 : 1;
            goto done;
        }
        if (project_text) {
            if (data_corpus_add_default(&corpus, root, err, sizeof err) != GPT_OK) {
                fprintf(stderr, "prepare: %s\n", err);
                goto done;
            }
            printf("prepare: corpus: the project's own text as it is now, %lu files under %s\n",
                   (unsigned long)corpus.n_docs, root);
        } else {
            if (data_corpus_add_demo(&corpus, root, err, sizeof err) != GPT_OK) {
                fprintf(stderr, "prepare: %s\n", err);
                goto done;
            }
            printf("prepare: default corpus: the demo's snapshot of the project's text, %s/%s (%lu documents)\n",
                   root, DATA_DEMO_CORPUS, (unsigned long)corpus.n_docs);
        }
    } else {
        printf("prepare: corpus: %lu documents\n", (unsigned long)corpus.n_docs);
    }
    corpus_id = data_corpus_id(&corpus);
    printf("prepare: %lu bytes, corpus identity %016llx\n", (unsigned long)corpus.n_bytes, (unsigned long long)corpus_id);

    c0 = clock();
    if (tok_train(&tok, corpus.text, corpus.n_bytes, (uint32_t)vocab, err, sizeof err) != GPT_OK) {
        fprintf(stderr, "prepare: %s\n", err);
        goto done;
    }
    c1 = clock();
    printf("prepare: tokenizer: vocab %lu (%lu merges, end-of-text id %lu) trained in %.2f s%s\n",
           (unsigned long)tok.vocab_size, (unsigned long)tok.n_merges, (unsigned long)tok.eot, seconds(c0, c1),
           tok.vocab_size < (uint32_t)vocab ? " (stopped early: no pair left that occurs twice)" : "");

    for (d = 0; d < corpus.n_docs; d++)
        if (corpus.doc_start[d + 1] - corpus.doc_start[d] > max_doc) max_doc = corpus.doc_start[d + 1] - corpus.doc_start[d];
    train = (uint32_t *)malloc((corpus.n_bytes + corpus.n_docs + 1) * sizeof(uint32_t));
    val = (uint32_t *)malloc((corpus.n_bytes + corpus.n_docs + 1) * sizeof(uint32_t));
    ids = (uint32_t *)malloc((max_doc + 1) * sizeof(uint32_t));
    if (!train || !val || !ids) {
        fprintf(stderr, "prepare: out of memory\n");
        goto done;
    }
    for (d = 0; d < corpus.n_docs; d++) {
        size_t start = corpus.doc_start[d], len = corpus.doc_start[d + 1] - start, n = 0, n_keep;
        if (tok_encode(&tok, corpus.text + start, len, ids, max_doc + 1, &n) != GPT_OK) {
            fprintf(stderr, "prepare: encoding document %lu failed\n", (unsigned long)d);
            goto done;
        }
        n_keep = n - (size_t)((double)n * val_fraction);
        train[n_train++] = tok.eot;
        n_eot++;
        memcpy(train + n_train, ids, n_keep * sizeof(uint32_t));
        n_train += n_keep;
        if (n_keep < n) {
            val[n_val++] = tok.eot;
            n_eot++;
            memcpy(val + n_val, ids + n_keep, (n - n_keep) * sizeof(uint32_t));
            n_val += n - n_keep;
        }
    }
    c2 = clock();
    printf("prepare: tokens: %lu train + %lu val, end-of-text included (%.2f bytes per token) encoded in %.2f s\n", (unsigned long)n_train,
           (unsigned long)n_val, n_train + n_val > n_eot ? (double)corpus.n_bytes / (double)(n_train + n_val - n_eot) : 0.0,
           seconds(c1, c2));
    /* the trainer at its default shape needs one batch of each split: B x T + 1 tokens */
    if (n_train < PREPARE_MIN_TOKENS || n_val < PREPARE_MIN_TOKENS) {
        fprintf(stderr,
                "prepare: the corpus is too small: %lu training and %lu validation tokens; the trainer's default shape "
                "(--batch %d --seq %d) needs at least %d of each (one batch); give more text, or a larger "
                "--val-fraction\n",
                (unsigned long)n_train, (unsigned long)n_val, PREPARE_B, PREPARE_T, PREPARE_MIN_TOKENS);
        goto done;
    }
    if (n_val < 1000) printf("prepare: warning: only %lu validation tokens\n", (unsigned long)n_val);

    if (make_dirs(out_dir) != GPT_OK) {
        fprintf(stderr, "prepare: cannot create directory %s: %s\n", out_dir, strerror(errno));
        goto done;
    }
    snprintf(path, sizeof path, "%s/tokenizer.bin", out_dir);
    if (tok_save(&tok, path, err, sizeof err) != GPT_OK) {
        fprintf(stderr, "prepare: %s\n", err);
        goto done;
    }
    snprintf(path, sizeof path, "%s/train.bin", out_dir);
    if (data_tokens_write(path, train, n_train, tok.vocab_size, tok_identity(&tok), corpus_id, err, sizeof err) != GPT_OK) {
        fprintf(stderr, "prepare: %s\n", err);
        goto done;
    }
    snprintf(path, sizeof path, "%s/val.bin", out_dir);
    if (data_tokens_write(path, val, n_val, tok.vocab_size, tok_identity(&tok), corpus_id, err, sizeof err) != GPT_OK) {
        fprintf(stderr, "prepare: %s\n", err);
        goto done;
    }
    printf("prepare: wrote %s/tokenizer.bin, %s/train.bin, %s/val.bin\n", out_dir, out_dir, out_dir);
    rc = 0;
done:
    free(train);
    free(val);
    free(ids);
    tok_free(&tok);
    data_corpus_free(&corpus);
    return rc;
}
