/* test_data.c - token files (round trip, every bad-file case), samplers (determinism from the
 * seed, state save/restore, sequential coverage), the corpus and the file helpers. */
#define _POSIX_C_SOURCE 200809L
#include "tests/test.h"
#include "gpt_test.h"
#include "data.h"
#include "tokenizer.h"

#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

static uint32_t *ramp(size_t n, uint32_t vocab)
{
    uint32_t *t = (uint32_t *)malloc((n ? n : 1) * sizeof(uint32_t));
    size_t i;
    for (i = 0; i < n; i++) t[i] = (uint32_t)(i % vocab);
    return t;
}

static void test_fnv_and_le(void)
{
    unsigned char b[8];
    CHECK(data_fnv1a64("", 0, DATA_FNV64_INIT) == 0xcbf29ce484222325ULL);
    CHECK(data_fnv1a64("a", 1, DATA_FNV64_INIT) == 0xaf63dc4c8601ec8cULL);
    CHECK(data_fnv1a64("foobar", 6, DATA_FNV64_INIT) == 0x85944171f73967e8ULL);
    data_put_u32le(b, 0x01020304u);
    CHECK(b[0] == 4 && b[3] == 1 && data_get_u32le(b) == 0x01020304u);
    data_put_u64le(b, 0x1122334455667788ULL);
    CHECK(b[0] == 0x88 && b[7] == 0x11 && data_get_u64le(b) == 0x1122334455667788ULL);
}

static void roundtrip_case(uint32_t vocab, size_t n, size_t want_dtype)
{
    const char *path = "test_data_tmp.bin";
    uint32_t *t = ramp(n, vocab);
    data_tokens d;
    char err[256];
    unsigned char *raw = NULL;
    size_t rawlen = 0;
    if (n) t[n - 1] = vocab - 1;
    memset(&d, 0, sizeof d);
    CHECK(data_tokens_write(path, t, n, vocab, 0x0123456789abcdefULL + n, 0xfedcba9876543210ULL - n, err, sizeof err) ==
          GPT_OK);
    CHECK(data_read_file(path, &raw, &rawlen, err, sizeof err) == GPT_OK);
    CHECK(rawlen == DATA_HEADER_BYTES + want_dtype * n + DATA_TRAILER_BYTES && memcmp(raw, "RNTD", 4) == 0);
    CHECK(data_tokens_read(&d, path, err, sizeof err) == GPT_OK);
    CHECK(d.vocab_size == vocab && d.tokenizer_id == 0x0123456789abcdefULL + n && d.n_tokens == n && (n == 0 || memcmp(d.tokens, t, n * sizeof(uint32_t)) == 0));
    CHECK(d.corpus_id == 0xfedcba9876543210ULL - n && data_get_u64le(raw + 32) == d.corpus_id);
    data_tokens_free(&d);
    free(raw);
    free(t);
    remove(path);
}

static void test_token_file_roundtrip(void)
{
    roundtrip_case(4096, 10000, 2);
    roundtrip_case(65536, 1000, 2);  /* largest vocab that still fits uint16 */
    roundtrip_case(65537, 1000, 4);
    roundtrip_case(300000, 5000, 4);
    roundtrip_case(50, 0, 2);        /* an empty token file is valid */
    {
        uint32_t t[3] = {1, 2, 50};
        unsigned char *b = NULL;
        size_t len = 0;
        char err[256];
        CHECK(data_tokens_serialize(t, 3, 50, 1, 2, &b, &len, err, sizeof err) == GPT_ERR_DOMAIN && b == NULL);
        CHECK(strstr(err, "vocab_size") != NULL);
        CHECK(data_tokens_serialize(t, 3, 0, 1, 2, &b, &len, err, sizeof err) == GPT_ERR_DOMAIN);
    }
}

/* bad_case: a damaged token file's status, message and untouched object (gt_bad_case) */
GT_BAD_CASE(data_tokens_parse, data_tokens, "val.bin")

static void test_bad_token_files(void)
{
    uint32_t *t = ramp(100, 1000);
    unsigned char *good = NULL, *b;
    size_t len = 0, i, cuts[] = {0, 2, 4, 6, 8, 16, 23, 24, 31, 32, 100, 0, 0};
    char err[256];
    int bad = 0;
    CHECK(data_tokens_serialize(t, 100, 1000, 1, 2, &good, &len, err, sizeof err) == GPT_OK && len == 40 + 200 + 8);
    b = (unsigned char *)malloc(len + 8);
    cuts[11] = len - 8;
    cuts[12] = len - 1;
    for (i = 0; i < sizeof cuts / sizeof cuts[0]; i++) bad += !bad_case(good, cuts[i], GPT_ERR_TRUNCATED, "truncated");
    CHECK_MSG(bad == 0, "%d truncations misreported", bad);
    memcpy(b, good, len);
    memcpy(b, "RNTK", 4); /* a tokenizer file is not a token file */
    CHECK(bad_case(b, len, GPT_ERR_MAGIC, "magic"));
    memcpy(b, good, len);
    data_put_u32le(b + 4, 7);
    CHECK(bad_case(b, len, GPT_ERR_VERSION, "version"));
    data_put_u32le(b + 4, 1); /* the format before the tokenizer's identity */
    CHECK(bad_case(b, len, GPT_ERR_VERSION, "re-run build/gpt/prepare"));
    { /* version 2 (no corpus identity, 32-byte header) still reads, with corpus_id 0 */
        unsigned char *v2 = (unsigned char *)malloc(len - 8);
        data_tokens o;
        memcpy(v2, good, 32);
        memcpy(v2 + 32, good + 40, len - 40);
        data_put_u32le(v2 + 4, 2);
        gt_refresh_checksum(v2, len - 8);
        memset(&o, 0x5A, sizeof o);
        CHECK(data_tokens_parse(&o, v2, len - 8, "val.bin", err, sizeof err) == GPT_OK && o.corpus_id == 0 &&
              o.tokenizer_id == 1 && o.n_tokens == 100 && o.tokens[99] == t[99]);
        if (o.n_tokens == 100) data_tokens_free(&o);
        CHECK(bad_case(v2, 31, GPT_ERR_TRUNCATED, "truncated"));
        free(v2);
    }
    for (i = 8, bad = 0; i < len; i++) {
        if (i >= 12 && i < 24) continue; /* dtype and count change the expected size */
        memcpy(b, good, len);
        b[i] ^= 0x01;
        bad += !bad_case(b, len, GPT_ERR_CHECKSUM, "checksum");
    }
    CHECK_MSG(bad == 0, "%d flipped bytes not caught by the checksum", bad);
    for (i = 12; i < 24; i++) { /* caught too, as truncation, checksum or corrupt header */
        data_tokens o;
        memcpy(b, good, len);
        b[i] ^= 0x01;
        if (data_tokens_parse(&o, b, len, "val.bin", err, sizeof err) == GPT_OK) bad++, data_tokens_free(&o);
    }
    CHECK(bad == 0);
    /* intact checksum, invalid content */
    memcpy(b, good, len);
    b[DATA_HEADER_BYTES + 2 * 10] = 0xE8; /* token 10 := 1000 (0x03E8) = vocab_size */
    b[DATA_HEADER_BYTES + 2 * 10 + 1] = 0x03;
    gt_refresh_checksum(b, len);
    CHECK(bad_case(b, len, GPT_ERR_CORRUPT, "index 10"));
    memcpy(b, good, len);
    data_put_u32le(b + 12, 4); /* dtype 4 for a small vocab */
    gt_refresh_checksum(b, len);
    CHECK(bad_case(b, len, GPT_ERR_CORRUPT, "dtype"));
    memcpy(b, good, len);
    memset(b + len, 0, 8);
    gt_refresh_checksum(b, len + 8);
    CHECK(bad_case(b, len + 8, GPT_ERR_CORRUPT, "corrupt"));
    /* through files: missing and truncated, with the path in the message */
    {
        data_tokens o;
        memset(&o, 0, sizeof o);
        CHECK(data_tokens_read(&o, "no_such_token_file.bin", err, sizeof err) == GPT_ERR_IO &&
              strstr(err, "no_such_token_file.bin") && o.tokens == NULL);
        CHECK(data_write_file_atomic("test_data_trunc.bin", good, len - 30, err, sizeof err) == GPT_OK);
        CHECK(data_tokens_read(&o, "test_data_trunc.bin", err, sizeof err) == GPT_ERR_TRUNCATED &&
              strstr(err, "test_data_trunc.bin") && o.tokens == NULL);
        remove("test_data_trunc.bin");
    }
    free(b);
    free(good);
    free(t);
}

static void test_random_sampler(void)
{
    data_tokens d;
    data_sampler s1, s2, s3;
    enum { B = 4, T = 16 };
    int in1[B * T], tg1[B * T], in2[B * T], tg2[B * T];
    int step, b, t, ok = 1, differs = 0;
    d.vocab_size = 1u << 30;
    d.n_tokens = 1000;
    d.tokens = ramp(1000, d.vocab_size); /* token i = i: each window tells its start */
    data_sampler_init(&s1, 1234);
    data_sampler_init(&s2, 1234);
    data_sampler_init(&s3, 1235);
    for (step = 0; step < 200; step++) {
        CHECK(data_batch_random(&d, &s1, B, T, in1, tg1) == GPT_OK);
        CHECK(data_batch_random(&d, &s2, B, T, in2, tg2) == GPT_OK);
        ok &= memcmp(in1, in2, sizeof in1) == 0 && memcmp(tg1, tg2, sizeof tg1) == 0;
        for (b = 0; b < B; b++) {
            int start = in1[b * T];
            ok &= start >= 0 && start <= 1000 - T - 1;
            for (t = 0; t < T; t++) ok &= in1[b * T + t] == start + t && tg1[b * T + t] == start + t + 1;
        }
        CHECK(data_batch_random(&d, &s3, B, T, in2, tg2) == GPT_OK);
        differs |= memcmp(in1, in2, sizeof in1) != 0;
    }
    CHECK(ok);
    CHECK(differs);
    /* the smallest corpus that works: exactly T + 1 tokens, one possible window */
    d.n_tokens = T + 1;
    CHECK(data_batch_random(&d, &s1, B, T, in1, tg1) == GPT_OK && in1[0] == 0 && tg1[T - 1] == T);
    d.n_tokens = T;
    memset(in1, 0x7F, sizeof in1);
    s2 = s1;
    CHECK(data_batch_random(&d, &s1, B, T, in1, tg1) == GPT_ERR_SIZE && in1[0] == 0x7F7F7F7F &&
          memcmp(&s1, &s2, sizeof s1) == 0);
    CHECK(data_batch_random(&d, &s1, 0, T, in1, tg1) == GPT_ERR_DOMAIN);
    CHECK(data_batch_random(&d, &s1, B, -1, in1, tg1) == GPT_ERR_DOMAIN);
    CHECK(data_batch_random(&d, NULL, B, T, in1, tg1) == GPT_ERR_NULL);
    free(d.tokens);
}

static void test_sampler_resume(void)
{
    data_tokens d;
    data_sampler s, saved;
    enum { B = 2, T = 8 };
    int a[5][B * T], x[B * T], y[B * T], i;
    d.vocab_size = 5000;
    d.n_tokens = 5000;
    d.tokens = ramp(5000, 5000);
    data_sampler_init(&s, 99);
    for (i = 0; i < 3; i++) CHECK(data_batch_random(&d, &s, B, T, x, y) == GPT_OK);
    saved = s; /* what a checkpoint stores: s.rng and s.pos */
    for (i = 0; i < 5; i++) CHECK(data_batch_random(&d, &s, B, T, a[i], y) == GPT_OK);
    s = saved;
    for (i = 0; i < 5; i++) {
        CHECK(data_batch_random(&d, &s, B, T, x, y) == GPT_OK);
        CHECK(memcmp(x, a[i], sizeof x) == 0);
    }
    free(d.tokens);
}

static void test_sequential_sampler(void)
{
    data_tokens d;
    data_sampler s;
    enum { B = 3, T = 10 };
    int in[B * T], tg[B * T], b, t, k, ok = 1;
    d.vocab_size = 1000;
    d.n_tokens = 100; /* (100 - 1) / 30 = 3 whole batches */
    d.tokens = ramp(100, 1000);
    CHECK(data_sequential_batches(&d, B, T) == 3);
    data_sampler_init(&s, 0);
    for (k = 0; k < 3; k++) {
        CHECK(data_batch_sequential(&d, &s, B, T, in, tg) == GPT_OK);
        for (b = 0; b < B; b++)
            for (t = 0; t < T; t++)
                ok &= in[b * T + t] == k * B * T + b * T + t && tg[b * T + t] == in[b * T + t] + 1;
    }
    CHECK(ok);
    CHECK(s.pos == 90);
    CHECK(data_batch_sequential(&d, &s, B, T, in, tg) == GPT_OK && in[0] == 0 && s.pos == 30); /* wrapped */
    d.n_tokens = 91; /* exactly 3 batches: the last target is token 90 */
    s.pos = 60;
    CHECK(data_batch_sequential(&d, &s, B, T, in, tg) == GPT_OK && in[0] == 60 && tg[B * T - 1] == 90);
    d.n_tokens = 30;
    memset(in, 0x11, sizeof in);
    s.pos = 0;
    CHECK(data_batch_sequential(&d, &s, B, T, in, tg) == GPT_ERR_SIZE && in[0] == 0x11111111 && s.pos == 0);
    CHECK(data_sequential_batches(&d, B, T) == 0);
    CHECK(data_sequential_batches(&d, 0, T) == 0);
    free(d.tokens);
}

static void test_corpus(void)
{
    data_corpus c, before;
    char root[64], err[256];
    const char *p1 = "test_data_doc1.txt", *p2 = "test_data_doc2.txt";
    memset(&c, 0, sizeof c);
    CHECK(data_write_file_atomic(p1, "hello\n", 6, err, sizeof err) == GPT_OK);
    CHECK(data_write_file_atomic(p2, "", 0, err, sizeof err) == GPT_OK);
    CHECK(data_corpus_add_file(&c, p1, err, sizeof err) == GPT_OK);
    CHECK(data_corpus_add_file(&c, p2, err, sizeof err) == GPT_OK);
    CHECK(data_corpus_add_file(&c, p1, err, sizeof err) == GPT_OK);
    CHECK(c.n_docs == 3 && c.n_bytes == 12 && c.doc_start[0] == 0 && c.doc_start[1] == 6 && c.doc_start[2] == 6 &&
          c.doc_start[3] == 12 && memcmp(c.text, "hello\nhello\n", 12) == 0);
    before = c;
    CHECK(data_corpus_add_file(&c, "no_such_corpus_file.txt", err, sizeof err) == GPT_ERR_IO);
    CHECK(strstr(err, "no_such_corpus_file.txt") != NULL && memcmp(&c, &before, sizeof c) == 0);
    data_corpus_free(&c);
    CHECK(c.text == NULL && c.n_docs == 0);
    remove(p1);
    remove(p2);
    CHECK(data_corpus_add_default(&c, "no_such_root_dir", err, sizeof err) == GPT_ERR_IO && c.n_docs == 0);
    /* the default corpus of this checkout (tests run from the repository root or build/gpt) */
    if (data_find_repo_root(root, sizeof root)) {
        CHECK(data_corpus_add_default(&c, root, err, sizeof err) == GPT_OK);
        CHECK(c.n_docs >= 2 && c.n_bytes > 1000);
        data_corpus_free(&c);
    } else {
        CHECK_MSG(0, "repository root not found from the working directory");
    }
}

/* Corpus snapshots: the round trip, the identity, every malformed file refused with c unchanged,
 * and the committed demo snapshot against its recorded identity. */
static void test_corpus_snapshot(void)
{
    static const char *const names[3] = {"a.md", "dir/b.c", "empty"};
    static const unsigned char d0[] = "line\n@@ 3 x\n", d1[] = "no newline at the end";
    const unsigned char *text[3] = {d0, d1, d0};
    size_t len[3] = {sizeof d0 - 1, sizeof d1 - 1, 0}, blen = 0, k;
    unsigned char *b = NULL;
    data_corpus c, f, before;
    char err[512], root[64];
    const char *path = "test_data_snap.txt";
    memset(&c, 0, sizeof c);
    memset(&f, 0, sizeof f);
    CHECK(data_snapshot_serialize(names, text, len, 3, &b, &blen, err, sizeof err) == GPT_OK);
    CHECK(data_write_file_atomic(path, b, blen, err, sizeof err) == GPT_OK);
    CHECK(data_corpus_add_snapshot(&c, path, err, sizeof err) == GPT_OK);
    CHECK(c.n_docs == 3 && c.doc_start[1] == len[0] && c.doc_start[2] == len[0] + len[1] && c.doc_start[3] == c.doc_start[2]);
    CHECK(memcmp(c.text, d0, len[0]) == 0 && memcmp(c.text + len[0], d1, len[1]) == 0);
    /* the identity: the documents' lengths and bytes, wherever they were read from */
    for (k = 0; k < 3; k++) {
        CHECK(data_write_file_atomic("test_data_doc.txt", text[k], len[k], err, sizeof err) == GPT_OK);
        CHECK(data_corpus_add_file(&f, "test_data_doc.txt", err, sizeof err) == GPT_OK);
    }
    remove("test_data_doc.txt");
    CHECK(data_corpus_id(&c) == data_corpus_id(&f) && data_corpus_id(&c) != 0);
    f.doc_start[1]--, f.doc_start[2]--; /* one byte moved between documents: another corpus */
    CHECK(data_corpus_id(&c) != data_corpus_id(&f));
    data_corpus_free(&f);
    /* malformed: each one refused, naming the file, c unchanged */
    {
        static const char *const bad[] = {
            "", "# not a snapshot\n",
            "# rownorm corpus snapshot 1: documents, each as a line \"@@ LENGTH NAME\", LENGTH bytes, a newline\n",
            "# rownorm corpus snapshot 1: documents, each as a line \"@@ LENGTH NAME\", LENGTH bytes, a newline\n@@ 3 a\nabc",
            "# rownorm corpus snapshot 1: documents, each as a line \"@@ LENGTH NAME\", LENGTH bytes, a newline\n@@ 4 a\nabc\n",
            "# rownorm corpus snapshot 1: documents, each as a line \"@@ LENGTH NAME\", LENGTH bytes, a newline\n@@ 2 a\nabc\n",
            "# rownorm corpus snapshot 1: documents, each as a line \"@@ LENGTH NAME\", LENGTH bytes, a newline\n@@ 3 \nabc\n",
            "# rownorm corpus snapshot 1: documents, each as a line \"@@ LENGTH NAME\", LENGTH bytes, a newline\n@@ x a\nabc\n",
            "# rownorm corpus snapshot 1: documents, each as a line \"@@ LENGTH NAME\", LENGTH bytes, a newline\n"
            "@@ 99999999999999999999 a\nabc\n",
            "# rownorm corpus snapshot 1: documents, each as a line \"@@ LENGTH NAME\", LENGTH bytes, a newline\n"
            "@@ 18446744073709551615 a\nabc\n",
            "# rownorm corpus snapshot 1: documents, each as a line \"@@ LENGTH NAME\", LENGTH bytes, a newline\n@@ 3 a\nabc\n"
            "trailing\n"};
        int n_bad = 0;
        for (k = 0; k < sizeof bad / sizeof bad[0]; k++) {
            gpt_status st;
            CHECK(data_write_file_atomic(path, bad[k], strlen(bad[k]), err, sizeof err) == GPT_OK);
            before = c;
            err[0] = 0;
            st = data_corpus_add_snapshot(&c, path, err, sizeof err);
            if (!((st == GPT_ERR_CORRUPT || st == GPT_ERR_MAGIC) && memcmp(&c, &before, sizeof c) == 0 &&
                  strstr(err, path) != NULL)) {
                fprintf(stderr, "  snapshot case %lu: %s \"%s\"\n", (unsigned long)k, gpt_status_string(st), err);
                n_bad++;
            }
        }
        CHECK_MSG(n_bad == 0, "%d malformed snapshots accepted or misreported", n_bad);
    }
    /* a name with a newline cannot be written */
    {
        const char *nl[1] = {"a\nb"};
        unsigned char *x = NULL;
        size_t xl = 0;
        CHECK(data_snapshot_serialize(nl, text, len, 1, &x, &xl, err, sizeof err) == GPT_ERR_DOMAIN && x == NULL);
    }
    /* data_corpus_add_input: a snapshot adds its documents, any other file is one document */
    CHECK(data_write_file_atomic(path, b, blen, err, sizeof err) == GPT_OK);
    data_corpus_free(&c);
    CHECK(data_corpus_add_input(&c, path, err, sizeof err) == GPT_OK && c.n_docs == 3);
    CHECK(data_corpus_add_input(&c, "test_data_snap_plain.txt", err, sizeof err) == GPT_ERR_IO && c.n_docs == 3);
    CHECK(data_write_file_atomic("test_data_snap_plain.txt", "@@ 1 x\ny\n", 9, err, sizeof err) == GPT_OK);
    CHECK(data_corpus_add_input(&c, "test_data_snap_plain.txt", err, sizeof err) == GPT_OK && c.n_docs == 4 &&
          c.doc_start[4] - c.doc_start[3] == 9);
    remove("test_data_snap_plain.txt");
    /* a demo snapshot of another identity is refused, and c keeps exactly the documents it had */
    mkdir("test_data_root", 0777), mkdir("test_data_root/examples", 0777), mkdir("test_data_root/examples/gpt", 0777);
    mkdir("test_data_root/examples/gpt/corpus", 0777);
    CHECK(data_write_file_atomic("test_data_root/" DATA_DEMO_CORPUS, b, blen, err, sizeof err) == GPT_OK);
    {
        uint64_t id0 = data_corpus_id(&c);
        size_t docs0 = c.n_docs, bytes0 = c.n_bytes;
        CHECK(data_corpus_add_demo(&c, "test_data_root", err, sizeof err) == GPT_ERR_MISMATCH && strstr(err, "identity"));
        CHECK(c.n_docs == docs0 && c.n_bytes == bytes0 && data_corpus_id(&c) == id0);
    }
    remove("test_data_root/" DATA_DEMO_CORPUS), rmdir("test_data_root/examples/gpt/corpus");
    rmdir("test_data_root/examples/gpt"), rmdir("test_data_root/examples"), rmdir("test_data_root");
    remove(path);
    free(b);
    data_corpus_free(&c);
    /* the committed demo snapshot is the one its identity records (the demo's table was made from it) */
    if (data_find_repo_root(root, sizeof root)) {
        char p[128];
        CHECK(data_corpus_add_demo(&c, root, err, sizeof err) == GPT_OK);
        CHECK_MSG(data_corpus_id(&c) == DATA_DEMO_CORPUS_ID, "%s", err);
        CHECK(c.n_docs >= 20 && c.n_bytes > 500000);
        data_corpus_free(&c);
        snprintf(p, sizeof p, "%s/%s", root, DATA_DEMO_CORPUS);
        CHECK(data_corpus_add_snapshot(&c, p, err, sizeof err) == GPT_OK && data_corpus_id(&c) == DATA_DEMO_CORPUS_ID);
        data_corpus_free(&c);
    } else {
        CHECK_MSG(0, "repository root not found from the working directory");
    }
}

/* The prepare pipeline in miniature: train, encode documents with EOT, write, read, decode. */
static void test_pipeline(void)
{
    static const char *docs[] = {"int main(void) { return 0; }\n", "", "The row norm of the head.\n\x00\xff"};
    size_t lens[3] = {29, 0, 28}, i, n = 0, n_out = 0, total = 0;
    unsigned char text[128], back[128];
    uint32_t ids[256];
    tok_tokenizer tk;
    data_tokens d;
    char err[256];
    for (i = 0; i < 3; i++) memcpy(text + total, docs[i], lens[i]), total += lens[i];
    memset(&tk, 0, sizeof tk);
    CHECK(tok_train(&tk, text, total, 300, err, sizeof err) == GPT_OK);
    for (i = 0, total = 0; i < 3; i++) {
        size_t k;
        ids[n++] = tk.eot;
        CHECK(tok_encode(&tk, (const unsigned char *)docs[i], lens[i], ids + n, lens[i], &k) == GPT_OK);
        n += k;
    }
    CHECK(data_tokens_write("test_data_pipe.bin", ids, n, tk.vocab_size, tok_identity(&tk), 0, err, sizeof err) == GPT_OK);
    CHECK(data_tokens_read(&d, "test_data_pipe.bin", err, sizeof err) == GPT_OK && d.n_tokens == n);
    CHECK(tok_decode(&tk, d.tokens, d.n_tokens, back, sizeof back, &n_out) == GPT_OK && n_out == 57);
    CHECK(memcmp(back, text, 57) == 0);
    data_tokens_free(&d);
    tok_free(&tk);
    remove("test_data_pipe.bin");
}


/* Readers take regular files only (after following symlinks): a device, a symlink to one or a
 * directory is refused at once, naming the path, instead of read until memory runs out. */
static void test_read_refuses_non_regular_files(void)
{
    static const char *const devs[] = {"/dev/null", "/dev/zero"};
    char dir[] = "/tmp/test_data_XXXXXX", link[128], err[256];
    unsigned char *buf = (unsigned char *)"untouched";
    size_t n = 12345, k;
    data_tokens d;
    CHECK(mkdtemp(dir) != NULL);
    for (k = 0; k < 2; k++) {
        err[0] = 0;
        CHECK(data_read_file(devs[k], &buf, &n, err, sizeof err) == GPT_ERR_IO);
        CHECK_MSG(strstr(err, devs[k]) && strstr(err, "not a regular file"), "error: %s", err);
        snprintf(link, sizeof link, "%s/link%u.bin", dir, (unsigned)k);
        CHECK(symlink(devs[k], link) == 0);
        err[0] = 0;
        CHECK(data_read_file(link, &buf, &n, err, sizeof err) == GPT_ERR_IO);
        CHECK_MSG(strstr(err, link) && strstr(err, "not a regular file"), "error: %s", err);
        memset(&d, 0, sizeof d);
        CHECK(data_tokens_read(&d, link, err, sizeof err) == GPT_ERR_IO && d.tokens == NULL);
        remove(link);
    }
    err[0] = 0;
    CHECK(data_read_file(dir, &buf, &n, err, sizeof err) == GPT_ERR_IO);
    CHECK_MSG(strstr(err, dir) && strstr(err, "not a regular file"), "error: %s", err);
    CHECK(n == 12345 && strcmp((const char *)buf, "untouched") == 0); /* outputs untouched on error */
    /* a regular file through a symlink reads as the file */
    snprintf(link, sizeof link, "%s/real.txt", dir);
    CHECK(data_write_file_atomic(link, "abc", 3, err, sizeof err) == GPT_OK);
    {
        char via[128];
        snprintf(via, sizeof via, "%s/via.txt", dir);
        CHECK(symlink("real.txt", via) == 0);
        CHECK(data_read_file(via, &buf, &n, err, sizeof err) == GPT_OK && n == 3 && memcmp(buf, "abc", 3) == 0);
        free(buf);
        remove(via);
    }
    remove(link);
    rmdir(dir);
}

static int is_symlink(const char *p)
{
    struct stat st;
    return lstat(p, &st) == 0 && S_ISLNK(st.st_mode);
}

static int file_is(const char *p, const char *want)
{
    unsigned char *b;
    size_t n;
    int same;
    if (data_read_file(p, &b, &n, NULL, 0) != GPT_OK) return 0;
    same = n == strlen(want) && memcmp(b, want, n) == 0;
    free(b);
    return same;
}

/* The atomic writer replaces regular files only, and writes through symlinks to their target
 * (the temp file next to the target); a non-regular file (a FIFO here: as root a device node
 * would be replaced the same way) or a directory is refused and left as it was. */
static void test_atomic_write_targets(void)
{
    char dir[] = "/tmp/test_data_XXXXXX", sub[96], p[128], q[128], t[136], err[256];
    struct stat st;
    CHECK(mkdtemp(dir) != NULL);
    snprintf(sub, sizeof sub, "%s/sub", dir);
    CHECK(mkdir(sub, 0777) == 0);
    /* a symlink to an existing file, relative to the link's directory, in another directory */
    snprintf(p, sizeof p, "%s/target.bin", sub);
    CHECK(data_write_file_atomic(p, "old", 3, err, sizeof err) == GPT_OK);
    snprintf(q, sizeof q, "%s/link.bin", dir);
    CHECK(symlink("sub/target.bin", q) == 0);
    CHECK(data_write_file_atomic(q, "new", 3, err, sizeof err) == GPT_OK);
    CHECK(is_symlink(q) && file_is(p, "new"));
    snprintf(t, sizeof t, "%s.tmp", p);
    CHECK(access(t, F_OK) != 0);
    snprintf(t, sizeof t, "%s.tmp", q);
    CHECK(access(t, F_OK) != 0);
    remove(q);
    /* a chain of links, the last one dangling: the file is created where it points */
    remove(p);
    CHECK(symlink("sub/target.bin", q) == 0);
    snprintf(t, sizeof t, "%s/link2.bin", dir);
    CHECK(symlink("link.bin", t) == 0);
    CHECK(data_write_file_atomic(t, "made", 4, err, sizeof err) == GPT_OK);
    CHECK(is_symlink(t) && is_symlink(q) && file_is(p, "made"));
    remove(t), remove(q), remove(p);
    /* a FIFO and a directory are refused, named, and left alone */
    snprintf(p, sizeof p, "%s/fifo", dir);
    CHECK(mkfifo(p, 0600) == 0);
    err[0] = 0;
    CHECK(data_write_file_atomic(p, "x", 1, err, sizeof err) == GPT_ERR_IO);
    CHECK_MSG(strstr(err, p) && strstr(err, "not a regular file"), "error: %s", err);
    CHECK(lstat(p, &st) == 0 && S_ISFIFO(st.st_mode));
    snprintf(q, sizeof q, "%s/fifo_link", dir);
    CHECK(symlink("fifo", q) == 0);
    CHECK(data_write_file_atomic(q, "x", 1, err, sizeof err) == GPT_ERR_IO);
    CHECK(is_symlink(q) && lstat(p, &st) == 0 && S_ISFIFO(st.st_mode));
    remove(q), remove(p);
    err[0] = 0;
    CHECK(data_write_file_atomic(sub, "x", 1, err, sizeof err) == GPT_ERR_IO);
    CHECK_MSG(strstr(err, sub) && strstr(err, "not a regular file"), "error: %s", err);
    CHECK(lstat(sub, &st) == 0 && S_ISDIR(st.st_mode));
    /* a symlink left at PATH.tmp is not written through */
    snprintf(p, sizeof p, "%s/out.bin", dir);
    snprintf(q, sizeof q, "%s/victim.txt", dir);
    CHECK(data_write_file_atomic(q, "keep", 4, err, sizeof err) == GPT_OK);
    snprintf(t, sizeof t, "%s.tmp", p);
    CHECK(symlink("victim.txt", t) == 0);
    (void)data_write_file_atomic(p, "data", 4, err, sizeof err);
    CHECK(file_is(q, "keep"));
    remove(t), remove(p), remove(q);
    rmdir(sub);
    CHECK(rmdir(dir) == 0);
}

int main(void)
{
    (void)t_rng_normal; /* harness helpers this file does not need */
    (void)t__near;
    RUN(test_fnv_and_le);
    RUN(test_token_file_roundtrip);
    RUN(test_bad_token_files);
    RUN(test_random_sampler);
    RUN(test_sampler_resume);
    RUN(test_sequential_sampler);
    RUN(test_corpus);
    RUN(test_corpus_snapshot);
    RUN(test_pipeline);
    RUN(test_read_refuses_non_regular_files);
    RUN(test_atomic_write_targets);
    return TEST_REPORT();
}
