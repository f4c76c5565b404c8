/* fuzz_gpt_files.c - the example trainer's file readers (examples/gpt): checkpoints (ckpt_parse /
 * ckpt_read_file, then train_check_checkpoint: the settings and field checks a --resume runs
 * before it allocates the model), token files (data_tokens_parse / data_tokens_read) and
 * tokenizer files (tok_parse / tok_load), and corpus snapshots (data_corpus_add_snapshot).
 * Input: a selector byte, then the file's bytes. Selector bits 0-1: the reader (0 and 3
 * checkpoint, 1 token file, 2 tokenizer); bit 2: first rewrite the checksum trailer (and a
 * checkpoint's declared size) to match the bytes, so mutations get past the checksum; bit 3: go
 * through a temporary file and the path reader instead of the in-memory parser; bit 4: the corpus
 * snapshot reader instead (always from a file; its documents must lie inside the input, in order,
 * each followed by its newline).
 * Checks: every error has a non-empty message and leaves the output object untouched; an
 * accepted checkpoint has every field inside the image, model.config of 6 values that match the
 * settings read, and param.* fields of exactly the sizes model.config implies, whose total (what
 * the resume allocates per copy of the parameters) fits in the input; an accepted token file has
 * exactly the declared tokens, all < vocab_size; an accepted tokenizer has consistent counts,
 * merges referring to earlier ids, tokens of at most TOK_MAX_CHUNK bytes, and encodes and decodes
 * bytes back exactly. Run with -malloc_limit_mb / -rss_limit_mb: a reader that allocates from a
 * declared size before checking it against the input is a finding. */
#include "checkpoint.h"
#include "data.h"
#include "model.h"
#include "tokenizer.h"
#include "train.h"
#include "fuzz_common.h"

#include <unistd.h>

/* FUZZ_GPT_VERBOSE=1: print each input's outcome (to check that the seeds are accepted) */
static void fz_say(const char *what, const char *msg)
{
    static int verbose = -1;
    if (verbose < 0) verbose = getenv("FUZZ_GPT_VERBOSE") != NULL;
    if (verbose) fprintf(stderr, "fuzz_gpt_files: %s: %s\n", what, msg);
}

static const char *fz_tmp_path(void)
{
    static char path[64];
    if (!path[0]) snprintf(path, sizeof path, "/tmp/fuzz_gpt_files.%ld", (long)getpid());
    return path;
}

static void fz_write_tmp(const unsigned char *p, size_t n)
{
    FILE *f = fopen(fz_tmp_path(), "wb");
    if (!f) abort();
    if (n && fwrite(p, 1, n, f) != n) abort();
    if (fclose(f)) abort();
}

/* the trailer (FNV-1a 64 of every byte before it) and, for a checkpoint, the declared size */
static void fz_fix(unsigned char *p, size_t n, int ckpt)
{
    if (n < 16) return;
    if (ckpt && n >= CKPT_HEADER_BYTES + CKPT_TRAILER_BYTES) data_put_u64le(p + 8, (uint64_t)n);
    data_put_u64le(p + n - 8, data_fnv1a64(p, n - 8, DATA_FNV64_INIT));
}

static const ckpt_field *fz_field(const ckpt_reader *ck, const char *name)
{
    uint32_t i;
    size_t l = strlen(name);
    for (i = 0; i < ck->n_fields; i++)
        if (ck->fields[i].name_len == l && memcmp(ck->fields[i].name, name, l) == 0) return &ck->fields[i];
    return NULL;
}

static void fz_checkpoint(const unsigned char *p, size_t n, int file)
{
    ckpt_reader ck, before;
    gpt_status st;
    char err[512];
    train_options opt;
    train_result res;
    gpt_config cfg;
    uint64_t words[6];
    uint32_t i;
    int t;

    memset(&ck, 0x5a, sizeof ck);
    before = ck;
    err[0] = 0;
    st = file ? ckpt_read_file(&ck, fz_tmp_path(), err, sizeof err)
              : ckpt_parse(&ck, p, n, "fuzz.ckpt", err, sizeof err);
    if (st != GPT_OK) {
        FZ_CHECK(err[0] != 0, "ckpt status %d (%s) with an empty message", (int)st, gpt_status_string(st));
        FZ_CHECK(memcmp(&ck, &before, sizeof ck) == 0, "ckpt reader changed on error %d", (int)st);
        fz_say("checkpoint", err);
        return;
    }
    FZ_CHECK(ck.len == n, "parsed length %zu of %zu bytes", ck.len, n);
    FZ_CHECK(n >= CKPT_HEADER_BYTES + CKPT_TRAILER_BYTES, "accepted a %zu-byte checkpoint", n);
    for (i = 0; i < ck.n_fields; i++) {
        const ckpt_field *f = &ck.fields[i];
        const unsigned char *img = file ? ck.image : p;
        size_t esz = f->type == CKPT_F32 ? 4 : 8;
        FZ_CHECK(f->type == CKPT_U64 || f->type == CKPT_F64 || f->type == CKPT_F32, "field %u type %d", i,
                 (int)f->type);
        FZ_CHECK(f->name_len >= 1 && f->name_len <= CKPT_MAX_NAME, "field %u name length %u", i, f->name_len);
        FZ_CHECK((const unsigned char *)f->name >= img + CKPT_HEADER_BYTES &&
                     (const unsigned char *)f->name + f->name_len <= img + n - CKPT_TRAILER_BYTES,
                 "field %u name outside the image", i);
        FZ_CHECK(f->data >= img + CKPT_HEADER_BYTES && f->count <= (uint64_t)(n / esz) &&
                     f->data + f->count * esz <= img + n - CKPT_TRAILER_BYTES,
                 "field %u data outside the image (count %llu)", i, (unsigned long long)f->count);
    }

    opt = train_default_options();
    memset(&res, 0, sizeof res);
    if (train_check_checkpoint(&ck, &opt, &res)) {
        FZ_CHECK(res.error[0] != 0, "resume check failed with an empty message");
        FZ_CHECK(res.outcome == TRAIN_FAILED, "resume check failed with outcome %d", (int)res.outcome);
        fz_say("checkpoint resume check", res.error);
        ckpt_reader_free(&ck);
        return;
    }
    /* accepted: sizes consistent with model.config, and bounded by the input */
    err[0] = 0;
    FZ_CHECK(ckpt_get_u64(&ck, "model.config", words, 6, err, sizeof err) == GPT_OK, "model.config: %s", err);
    FZ_CHECK(words[0] == (uint64_t)opt.model.n_layers && words[1] == (uint64_t)opt.model.d_model &&
                 words[2] == (uint64_t)opt.model.n_heads && words[3] == (uint64_t)opt.model.seq_len &&
                 words[4] == (uint64_t)opt.model.vocab_size && words[5] == (uint64_t)opt.model.mlp_hidden,
             "model.config does not match the settings read");
    FZ_CHECK(opt.seq == opt.model.seq_len && opt.batch >= 1 && opt.accum >= 1 && opt.steps >= 1,
             "settings seq %d (model %d) batch %d accum %d steps %ld", opt.seq, opt.model.seq_len, opt.batch,
             opt.accum, opt.steps);
    cfg = opt.model;
    FZ_CHECK(gpt_config_resolve(&cfg) == GPT_OK, "accepted model.config does not resolve");
    {
        gpt_layout lay = gpt_layout_of(&cfg);
        size_t total = 0;
        for (t = 0; t < lay.n_tensors; t++) {
            gpt_tensor ti;
            char name[64];
            const ckpt_field *f;
            gpt_tensor_info(&cfg, t, &ti);
            snprintf(name, sizeof name, "param.%s", ti.name);
            f = fz_field(&ck, name);
            FZ_CHECK(f && f->type == CKPT_F32 && f->count == (uint64_t)ti.rows * ti.cols,
                     "%s: accepted with count %llu, model.config implies %zu", name,
                     f ? (unsigned long long)f->count : 0ULL, ti.rows * ti.cols);
            total += ti.rows * ti.cols;
        }
        FZ_CHECK(total == lay.n_params, "param fields total %zu, layout %zu", total, lay.n_params);
        FZ_CHECK(lay.n_params <= n / 4, "model of %zu floats accepted from %zu bytes", lay.n_params, n);
    }
    fz_say("checkpoint", "accepted");
    ckpt_reader_free(&ck);
}

static void fz_tokens(const unsigned char *p, size_t n, int file)
{
    data_tokens d, before;
    gpt_status st;
    char err[512];
    size_t i;
    memset(&d, 0x5a, sizeof d);
    before = d;
    err[0] = 0;
    st = file ? data_tokens_read(&d, fz_tmp_path(), err, sizeof err)
              : data_tokens_parse(&d, p, n, "fuzz.bin", err, sizeof err);
    if (st != GPT_OK) {
        FZ_CHECK(err[0] != 0, "tokens status %d (%s) with an empty message", (int)st, gpt_status_string(st));
        FZ_CHECK(memcmp(&d, &before, sizeof d) == 0, "tokens output changed on error %d", (int)st);
        fz_say("tokens", err);
        return;
    }
    {
        uint32_t dtype = data_get_u32le(p + 12), version = n >= 8 ? data_get_u32le(p + 4) : 0;
        size_t hb = version == 2 ? 32 : DATA_HEADER_BYTES; /* version 2: no corpus_id */
        FZ_CHECK(version == 2 || version == DATA_VERSION, "accepted version %u", version);
        FZ_CHECK(n >= hb + DATA_TRAILER_BYTES, "accepted a %zu-byte token file", n);
        FZ_CHECK(d.corpus_id == (version == 2 ? 0 : data_get_u64le(p + 32)), "corpus_id, header differs");
        FZ_CHECK(dtype == 2 || dtype == 4, "accepted dtype %u", dtype);
        FZ_CHECK(d.vocab_size == data_get_u32le(p + 8), "vocab %u, header %u", d.vocab_size, data_get_u32le(p + 8));
        FZ_CHECK(d.n_tokens == data_get_u64le(p + 16), "n_tokens %zu, header differs", d.n_tokens);
        FZ_CHECK(d.tokenizer_id == data_get_u64le(p + 24), "tokenizer_id, header differs");
        FZ_CHECK(n == hb + DATA_TRAILER_BYTES + d.n_tokens * dtype,
                 "%zu tokens of %u bytes accepted from %zu bytes", d.n_tokens, dtype, n);
        for (i = 0; i < d.n_tokens; i++) {
            const uint8_t *t = p + hb;
            uint32_t v = dtype == 2 ? (uint32_t)t[2 * i] | (uint32_t)t[2 * i + 1] << 8 : data_get_u32le(t + 4 * i);
            FZ_CHECK(d.tokens[i] == v && v < d.vocab_size, "token %zu: %u (file %u), vocab %u", i, d.tokens[i], v,
                     d.vocab_size);
        }
    }
    fz_say("tokens", "accepted");
    data_tokens_free(&d);
}

static void fz_tokenizer(const unsigned char *p, size_t n, int file)
{
    tok_tokenizer t, before;
    gpt_status st;
    char err[512];
    uint32_t i;
    memset(&t, 0x5a, sizeof t);
    before = t;
    err[0] = 0;
    st = file ? tok_load(&t, fz_tmp_path(), err, sizeof err) : tok_parse(&t, p, n, "fuzz.tok", err, sizeof err);
    if (st != GPT_OK) {
        FZ_CHECK(err[0] != 0, "tokenizer status %d (%s) with an empty message", (int)st, gpt_status_string(st));
        FZ_CHECK(memcmp(&t, &before, sizeof t) == 0, "tokenizer output changed on error %d", (int)st);
        fz_say("tokenizer", err);
        return;
    }
    FZ_CHECK(t.vocab_size == 256u + t.n_merges + 1u && t.eot == t.vocab_size - 1u && t.vocab_size <= TOK_MAX_VOCAB,
             "vocab %u, merges %u, eot %u", t.vocab_size, t.n_merges, t.eot);
    FZ_CHECK(n == TOK_HEADER_BYTES + 8u * (size_t)t.n_merges + 8u, "%u merges accepted from %zu bytes", t.n_merges, n);
    for (i = 0; i < t.n_merges; i++)
        FZ_CHECK(t.merges[2 * i] < 256u + i && t.merges[2 * i + 1] < 256u + i, "merge %u: %u %u", i,
                 t.merges[2 * i], t.merges[2 * i + 1]);
    FZ_CHECK(t.tok_start[0] == 0, "tok_start[0] %u", t.tok_start[0]);
    for (i = 0; i < t.vocab_size; i++) {
        size_t l = 0;
        const unsigned char *b = tok_token_bytes(&t, i, &l);
        FZ_CHECK(t.tok_start[i + 1] >= t.tok_start[i], "tok_start not monotone at %u", i);
        FZ_CHECK(l <= TOK_MAX_CHUNK && (i == t.eot ? l == 0 : l >= 1 && b != NULL), "token %u: %zu bytes", i, l);
    }
    {
        /* the input's own bytes encode and decode back exactly */
        size_t m = n < 512 ? n : 512, n_ids = 0, nb = 0;
        uint32_t *ids = (uint32_t *)fz_malloc(m * sizeof *ids);
        unsigned char *back = (unsigned char *)fz_malloc(m);
        FZ_CHECK(tok_encode(&t, p, m, ids, m, &n_ids) == GPT_OK && n_ids <= m, "encode of %zu bytes", m);
        for (i = 0; i < n_ids; i++) FZ_CHECK(ids[i] < t.eot, "encode produced id %u (eot %u)", ids[i], t.eot);
        FZ_CHECK(tok_decode(&t, ids, n_ids, back, m, &nb) == GPT_OK && nb == m && memcmp(back, p, m) == 0,
                 "decode(encode(x)) != x (%zu bytes back of %zu)", nb, m);
        free(ids);
        free(back);
    }
    fz_say("tokenizer", "accepted");
    tok_free(&t);
}

static void fz_snapshot(const unsigned char *p, size_t n)
{
    data_corpus c, before;
    gpt_status st;
    char err[512];
    size_t k;
    memset(&c, 0, sizeof c);
    before = c;
    err[0] = 0;
    st = data_corpus_add_snapshot(&c, fz_tmp_path(), err, sizeof err);
    if (st != GPT_OK) {
        FZ_CHECK(err[0] != 0, "snapshot status %d (%s) with an empty message", (int)st, gpt_status_string(st));
        FZ_CHECK(memcmp(&c, &before, sizeof c) == 0, "corpus changed on error %d", (int)st);
        fz_say("snapshot", err);
        return;
    }
    FZ_CHECK(c.n_docs >= 1 && c.doc_start[0] == 0 && c.doc_start[c.n_docs] == c.n_bytes, "%zu documents, %zu bytes",
             c.n_docs, c.n_bytes);
    FZ_CHECK(c.n_bytes + c.n_docs * 6 <= n, "%zu bytes in %zu documents from a %zu-byte file", c.n_bytes, c.n_docs, n);
    for (k = 0; k < c.n_docs; k++) /* each document's bytes are the input's, followed by its newline */
        FZ_CHECK(c.doc_start[k] <= c.doc_start[k + 1], "document %zu ends before it starts", k);
    {
        size_t at = 0;
        for (k = 0; k < c.n_docs; k++) {
            size_t len = c.doc_start[k + 1] - c.doc_start[k];
            const unsigned char *hit = NULL;
            while (at + len + 1 <= n) { /* the document appears in the input, in order */
                if (memcmp(p + at, c.text + c.doc_start[k], len) == 0 && p[at + len] == '\n') {
                    hit = p + at;
                    break;
                }
                at++;
            }
            FZ_CHECK(hit != NULL, "document %zu is not in the input", k);
            at += len + 1;
        }
    }
    fz_say("snapshot", "accepted");
    data_corpus_free(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned sel;
    unsigned char *p;
    size_t n;
    int reader, file;
    if (size < 1) return 0;
    sel = data[0];
    n = size - 1;
    p = (unsigned char *)fz_malloc(n); /* its own allocation, exactly n bytes: ASan sees overreads */
    if (n) memcpy(p, data + 1, n);
    reader = (int)(sel & 3u);
    file = (sel & 8u) != 0;
    if (sel & 16u) {
        fz_write_tmp(p, n);
        fz_snapshot(p, n);
        unlink(fz_tmp_path());
        free(p);
        return 0;
    }
    if (sel & 4u) fz_fix(p, n, reader == 0 || reader == 3);
    if (file) fz_write_tmp(p, n);
    if (reader == 1)
        fz_tokens(p, n, file);
    else if (reader == 2)
        fz_tokenizer(p, n, file);
    else
        fz_checkpoint(p, n, file);
    if (file) unlink(fz_tmp_path());
    free(p);
    return 0;
}
