/* test_tokenizer.c - byte-level BPE: round trips on arbitrary bytes, deterministic training,
 * encode == replay of the merges, save/load, and every bad-file case gives a clear error and
 * leaves the output untouched. */
#include "tests/test.h"
#include "gpt_test.h"
#include "tokenizer.h"
#include "data.h"

#include <stdint.h>
#include <time.h>

/* Deterministic pseudo-text: words, numbers, punctuation, indentation and some UTF-8. */
static unsigned char *make_text(size_t n, unsigned long long seed)
{
    static const char *const words[] = {
        "the", "row", "norm", "head", "matrix", "gradient", "step", "diameter", "Hilbert", "muon",
        "orthogonal", "return", "static", "void", "float", "size_t", "int", "for", "if", "else",
        "na\xc3\xafve", "gr\xc3\xb6\xc3\x9f\x65", "rn_row_diameter", "Newton", "Schulz", "of", "and", "a", "to", "in"};
    static const char *const seps[] = {" ", " ", " ", " ", ", ", ". ", "\n", "\n    ", "(", ");\n", " = ", " + ", "\t"};
    unsigned char *s = (unsigned char *)malloc(n + 1);
    t_rng r;
    size_t i = 0;
    r.s = seed;
    while (i < n) {
        const char *w;
        size_t k, len;
        unsigned long long u = t_rng_u64(&r);
        if (u % 11 == 0) {
            char num[24];
            sprintf(num, "%llu", (u >> 8) % 100000);
            w = num;
            len = strlen(w);
            for (k = 0; k < len && i < n; k++) s[i++] = (unsigned char)w[k];
        } else {
            w = words[(u >> 8) % (sizeof words / sizeof words[0])];
            len = strlen(w);
            for (k = 0; k < len && i < n; k++) s[i++] = (unsigned char)w[k];
        }
        w = seps[(u >> 32) % (sizeof seps / sizeof seps[0])];
        len = strlen(w);
        for (k = 0; k < len && i < n; k++) s[i++] = (unsigned char)w[k];
    }
    return s;
}

static tok_tokenizer trained(uint32_t vocab)
{
    tok_tokenizer t;
    unsigned char *text = make_text(40000, 7);
    char err[256];
    gpt_status st;
    memset(&t, 0, sizeof t);
    st = tok_train(&t, text, 40000, vocab, err, sizeof err);
    if (st != GPT_OK) fprintf(stderr, "tok_train: %s\n", err);
    free(text);
    return t;
}

static int roundtrip(const tok_tokenizer *t, const unsigned char *s, size_t n)
{
    uint32_t *ids = (uint32_t *)malloc((n ? n : 1) * sizeof(uint32_t));
    unsigned char *back = (unsigned char *)malloc(n ? n : 1);
    size_t n_ids = 12345, n_back = 12345, i;
    int ok = tok_encode(t, s, n, ids, n, &n_ids) == GPT_OK && n_ids <= n;
    for (i = 0; ok && i < n_ids; i++) ok = ids[i] < t->eot;
    ok = ok && tok_decode(t, ids, n_ids, back, n, &n_back) == GPT_OK && n_back == n &&
         (n == 0 || memcmp(back, s, n) == 0);
    free(ids);
    free(back);
    return ok;
}

static void test_roundtrip_arbitrary_bytes(void)
{
    tok_tokenizer t = trained(600);
    t_rng r;
    int trial, bad = 0;
    unsigned char buf[3000];
    CHECK(t.vocab_size == 600 && t.eot == 599 && t.n_merges == 343);
    CHECK(roundtrip(&t, (const unsigned char *)"", 0));
    r.s = 42;
    for (trial = 0; trial < 300; trial++) {
        size_t n = (size_t)(t_rng_u64(&r) % sizeof buf), i;
        int kind = trial % 6;
        for (i = 0; i < n; i++) {
            unsigned long long u = t_rng_u64(&r);
            switch (kind) {
            case 0: buf[i] = (unsigned char)u; break;                          /* any byte: invalid UTF-8, NUL */
            case 1: buf[i] = (unsigned char)(u % 4 == 0 ? 0 : 0x80 + u % 64); break; /* NULs and stray continuations */
            case 2: buf[i] = ' '; break;                                       /* one long run of spaces */
            case 3: buf[i] = (unsigned char)("the row\n  "[u % 10]); break;   /* text-like */
            case 4: buf[i] = 'a'; break;                                       /* long run of one letter */
            default: buf[i] = (unsigned char)(u % 3 == 0 ? '\n' : u % 3 == 1 ? ' ' : 'x'); break;
            }
        }
        if (!roundtrip(&t, buf, n)) bad++;
    }
    CHECK_MSG(bad == 0, "%d of 300 random byte strings failed to round-trip", bad);
    /* every single byte value alone, and a NUL-only string */
    for (trial = 0; trial < 256; trial++) {
        buf[0] = (unsigned char)trial;
        if (!roundtrip(&t, buf, 1)) bad++;
    }
    memset(buf, 0, 100);
    if (!roundtrip(&t, buf, 100)) bad++;
    CHECK(bad == 0);
    tok_free(&t);
}

static void test_empty_and_minimal_vocab(void)
{
    tok_tokenizer t;
    char err[256];
    size_t n_ids = 7, n_bytes = 7;
    uint32_t ids[4];
    unsigned char out[4];
    memset(&t, 0, sizeof t);
    /* empty training text: no merges, vocab = 256 bytes + EOT */
    CHECK(tok_train(&t, NULL, 0, 1000, err, sizeof err) == GPT_OK);
    CHECK(t.n_merges == 0 && t.vocab_size == 257 && t.eot == 256);
    CHECK(tok_encode(&t, NULL, 0, NULL, 0, &n_ids) == GPT_OK && n_ids == 0);
    CHECK(tok_decode(&t, NULL, 0, NULL, 0, &n_bytes) == GPT_OK && n_bytes == 0);
    CHECK(roundtrip(&t, (const unsigned char *)"ab\0c", 4));
    ids[0] = t.eot;
    CHECK(tok_decode(&t, ids, 1, out, sizeof out, &n_bytes) == GPT_OK && n_bytes == 0); /* EOT: no bytes */
    tok_free(&t);
    CHECK(tok_train(&t, (const unsigned char *)"x", 1, 256, err, sizeof err) == GPT_ERR_DOMAIN);
    CHECK(strstr(err, "vocab size") != NULL);
    CHECK(tok_train(&t, (const unsigned char *)"x", 1, TOK_MAX_VOCAB + 1, err, sizeof err) == GPT_ERR_DOMAIN);
    CHECK(tok_train(NULL, (const unsigned char *)"x", 1, 300, err, sizeof err) == GPT_ERR_NULL);
}

static void test_training_deterministic(void)
{
    tok_tokenizer a = trained(800), b = trained(800);
    unsigned char *ba = NULL, *bb = NULL;
    size_t la = 0, lb = 0;
    char err[256];
    CHECK(a.n_merges == b.n_merges && a.n_merges > 0);
    CHECK(a.n_merges == b.n_merges && memcmp(a.merges, b.merges, 2 * (size_t)a.n_merges * sizeof(uint32_t)) == 0);
    CHECK(tok_serialize(&a, &ba, &la, err, sizeof err) == GPT_OK);
    CHECK(tok_serialize(&b, &bb, &lb, err, sizeof err) == GPT_OK);
    CHECK(la == lb && la > 0 && memcmp(ba, bb, la) == 0);
    /* the first merges of a smaller vocab are a prefix of a larger one (greedy, same order) */
    {
        tok_tokenizer c = trained(400);
        CHECK(c.n_merges == 143 && memcmp(c.merges, a.merges, 2 * (size_t)c.n_merges * sizeof(uint32_t)) == 0);
        tok_free(&c);
    }
    free(ba);
    free(bb);
    tok_free(&a);
    tok_free(&b);
}

static void test_tie_break_lowest_pair(void)
{
    /* "ab" and "cd" each occur twice, "ba"-like pairs never: the first merge is the lowest pair. */
    tok_tokenizer t;
    char err[256];
    memset(&t, 0, sizeof t);
    CHECK(tok_train(&t, (const unsigned char *)"cd ab cd ab", 11, 258, err, sizeof err) == GPT_OK);
    CHECK(t.n_merges == 1 && t.merges[0] == ' ' && t.merges[1] == 'a'); /* " a","ab"," c","cd" x2: ' '<'a'<'c' */
    tok_free(&t);
}

static void test_compresses_and_no_word_crossing(void)
{
    tok_tokenizer t = trained(1024);
    unsigned char *text = make_text(20000, 99); /* different sample of the same distribution */
    uint32_t *ids = (uint32_t *)malloc(20000 * sizeof(uint32_t));
    size_t n_ids = 0, bad = 0;
    uint32_t id;
    CHECK(tok_encode(&t, text, 20000, ids, 20000, &n_ids) == GPT_OK);
    CHECK_MSG(n_ids * 3 < 20000, "%lu tokens for 20000 bytes", (unsigned long)n_ids);
    /* merges stay inside chunks: no token has a letter/digit followed by a space */
    for (id = 256; id < t.eot; id++) {
        size_t len, k;
        const unsigned char *b = tok_token_bytes(&t, id, &len);
        for (k = 0; k + 1 < len; k++)
            if (((b[k] | 32) >= 'a' && (b[k] | 32) <= 'z') && b[k + 1] == ' ') bad++;
        if (len == 0 || len > TOK_MAX_CHUNK) bad++;
    }
    CHECK(bad == 0);
    CHECK(tok_token_bytes(&t, t.vocab_size, &bad) == NULL && bad == 0);
    free(text);
    free(ids);
    tok_free(&t);
}

/* Reference: replay merge i = 0, 1, ... over the ids, each left to right (the training rule). */
static size_t replay(const tok_tokenizer *t, const unsigned char *s, size_t n, uint32_t *ids)
{
    size_t len = n, i, r, w;
    for (i = 0; i < n; i++) ids[i] = s[i];
    for (i = 0; i < t->n_merges; i++) {
        for (r = 0, w = 0; r < len;) {
            if (r + 1 < len && ids[r] == t->merges[2 * i] && ids[r + 1] == t->merges[2 * i + 1]) {
                ids[w++] = (uint32_t)(256 + i);
                r += 2;
            } else {
                ids[w++] = ids[r++];
            }
        }
        len = w;
    }
    return len;
}

static void test_encode_equals_replay(void)
{
    /* A run of letters shorter than TOK_MAX_CHUNK is one chunk, so encode must equal the replay. */
    static const char alpha[] = "theronmaidgsu_";
    tok_tokenizer t = trained(700);
    t_rng r;
    int trial, bad = 0;
    r.s = 5;
    for (trial = 0; trial < 500; trial++) {
        unsigned char s[64];
        uint32_t a[64], b[64];
        size_t n = 1 + (size_t)(t_rng_u64(&r) % 60), na, nb, i;
        for (i = 0; i < n; i++) s[i] = (unsigned char)alpha[t_rng_u64(&r) % (sizeof alpha - 1)];
        if (tok_encode(&t, s, n, a, 64, &na) != GPT_OK) { bad++; continue; }
        nb = replay(&t, s, n, b);
        if (na != nb || memcmp(a, b, na * sizeof(uint32_t)) != 0) bad++;
    }
    CHECK_MSG(bad == 0, "%d of 500 words encode differently from the merge replay", bad);
    tok_free(&t);
}

/* Reference training, written the slow obvious way: every chunk occurrence kept separately, all
 * pair counts recounted from scratch before each merge. The text is lowercase words joined by single
 * spaces, whose chunks are simply "word", " word", " word", ... */
static uint32_t naive_train(const unsigned char *s, size_t n, uint32_t n_merges, uint32_t *merges)
{
    enum { V = 256 + 200 };
    uint32_t *ids = (uint32_t *)malloc(n * sizeof(uint32_t));
    size_t *wstart = (size_t *)malloc((n + 1) * sizeof(size_t)), *wlen = (size_t *)malloc((n + 1) * sizeof(size_t));
    long long *cnt = (long long *)malloc((size_t)V * V * sizeof(long long));
    size_t nw = 0, i, w, k;
    uint32_t m;
    for (i = 0; i < n;) { /* chunks */
        size_t j = i + (s[i] == ' ' ? 1 : 0);
        while (j < n && s[j] != ' ') j++;
        wstart[nw] = i;
        wlen[nw++] = j - i;
        i = j;
    }
    for (i = 0; i < n; i++) ids[i] = s[i];
    for (m = 0; m < n_merges && 256 + m < V; m++) {
        long long best = 1;
        uint32_t bl = 0, br = 0, l, r;
        memset(cnt, 0, (size_t)V * V * sizeof(long long));
        for (w = 0; w < nw; w++)
            for (k = 0; k + 1 < wlen[w]; k++) cnt[(size_t)ids[wstart[w] + k] * V + ids[wstart[w] + k + 1]]++;
        for (l = 0; l < V; l++)
            for (r = 0; r < V; r++)
                if (cnt[(size_t)l * V + r] > best) best = cnt[(size_t)l * V + r], bl = l, br = r;
        if (best < 2) break;
        merges[2 * m] = bl;
        merges[2 * m + 1] = br;
        for (w = 0; w < nw; w++) {
            uint32_t *x = ids + wstart[w];
            size_t rd = 0, wr = 0;
            while (rd < wlen[w]) {
                if (rd + 1 < wlen[w] && x[rd] == bl && x[rd + 1] == br) x[wr++] = 256 + m, rd += 2;
                else x[wr++] = x[rd++];
            }
            wlen[w] = wr;
        }
    }
    free(ids);
    free(wstart);
    free(wlen);
    free(cnt);
    return m;
}

static void test_training_matches_naive_reference(void)
{
    size_t n = 6000, i = 0;
    unsigned char *s = (unsigned char *)malloc(n);
    uint32_t ref[400], nref;
    tok_tokenizer t;
    char err[256];
    t_rng r;
    r.s = 77;
    while (i < n) { /* words of 1..8 letters from a small alphabet, single spaces */
        size_t len = 1 + (size_t)(t_rng_u64(&r) % 8), k;
        if (i > 0 && i < n) s[i++] = ' ';
        for (k = 0; k < len && i < n; k++) s[i++] = (unsigned char)("abcde"[t_rng_u64(&r) % 5]);
    }
    if (s[n - 1] == ' ') s[n - 1] = 'a';
    nref = naive_train(s, n, 200, ref);
    memset(&t, 0, sizeof t);
    CHECK(tok_train(&t, s, n, 257 + 200, err, sizeof err) == GPT_OK);
    CHECK_MSG(t.n_merges == nref && nref > 100, "%lu merges vs %lu in the reference", (unsigned long)t.n_merges,
              (unsigned long)nref);
    CHECK(t.n_merges == nref && memcmp(t.merges, ref, 2 * (size_t)nref * sizeof(uint32_t)) == 0);
    tok_free(&t);
    free(s);
}

static void test_decode_errors_leave_output(void)
{
    tok_tokenizer t = trained(300);
    uint32_t ids[3];
    unsigned char out[8];
    size_t n = 999;
    ids[0] = 'h';
    ids[1] = t.vocab_size; /* out of range */
    ids[2] = 'i';
    memset(out, 0xAB, sizeof out);
    CHECK(tok_decode(&t, ids, 3, out, sizeof out, &n) == GPT_ERR_RANGE && n == 999 && out[0] == 0xAB);
    ids[1] = 'e';
    CHECK(tok_decode(&t, ids, 3, out, 2, &n) == GPT_ERR_SIZE && n == 3 && out[0] == 0xAB);
    CHECK(tok_decode(&t, ids, 3, out, 3, &n) == GPT_OK && n == 3 && memcmp(out, "hei", 3) == 0);
    CHECK(tok_encode(&t, (const unsigned char *)"hello", 5, ids, 3, &n) == GPT_ERR_SIZE);
    tok_free(&t);
}

static void test_save_load_roundtrip(void)
{
    const char *path = "test_tokenizer_tmp.bin";
    tok_tokenizer t = trained(500), u;
    char err[256], tmp[64];
    FILE *f;
    unsigned char *text = make_text(5000, 3);
    uint32_t *a = (uint32_t *)malloc(5000 * sizeof(uint32_t)), *b = (uint32_t *)malloc(5000 * sizeof(uint32_t));
    size_t na = 0, nb = 1;
    memset(&u, 0, sizeof u);
    CHECK(tok_save(&t, path, err, sizeof err) == GPT_OK);
    sprintf(tmp, "%s.tmp", path);
    f = fopen(tmp, "rb");
    CHECK(f == NULL); /* the temp file was renamed away */
    if (f) fclose(f);
    CHECK(tok_load(&u, path, err, sizeof err) == GPT_OK);
    CHECK(u.vocab_size == t.vocab_size && u.n_merges == t.n_merges && u.eot == t.eot);
    CHECK(memcmp(u.merges, t.merges, 2 * (size_t)t.n_merges * sizeof(uint32_t)) == 0);
    CHECK(tok_encode(&t, text, 5000, a, 5000, &na) == GPT_OK && tok_encode(&u, text, 5000, b, 5000, &nb) == GPT_OK);
    CHECK(na == nb && memcmp(a, b, na * sizeof(uint32_t)) == 0);
    /* saving again over an existing file works (rename replaces it) */
    CHECK(tok_save(&u, path, err, sizeof err) == GPT_OK);
    /* a directory that does not exist: a clear I/O error */
    CHECK(tok_save(&u, "no_such_dir_for_tok_test/tok.bin", err, sizeof err) == GPT_ERR_IO);
    CHECK(strstr(err, "no_such_dir_for_tok_test") != NULL);
    remove(path);
    CHECK(tok_load(&u, path, err, sizeof err) == GPT_ERR_IO && strstr(err, path) != NULL);
    free(text);
    free(a);
    free(b);
    tok_free(&t);
    tok_free(&u);
}

/* bad_case: a damaged tokenizer file's status, message and untouched object (gt_bad_case) */
GT_BAD_CASE(tok_parse, tok_tokenizer, "tok.bin")

static void test_bad_files(void)
{
    tok_tokenizer t = trained(300); /* 43 merges: 24 + 344 + 8 bytes */
    unsigned char *good = NULL, *b;
    size_t len = 0, i, cuts[] = {0, 1, 3, 4, 7, 8, 20, 24, 31, 32, 100, 0, 0};
    char err[256];
    int bad = 0;
    CHECK(tok_serialize(&t, &good, &len, err, sizeof err) == GPT_OK && len == 24 + 8 * 43 + 8);
    b = (unsigned char *)malloc(len + 16);
    cuts[11] = len - 8;
    cuts[12] = len - 1;
    for (i = 0; i < sizeof cuts / sizeof cuts[0]; i++) bad += !bad_case(good, cuts[i], GPT_ERR_TRUNCATED, "truncated");
    CHECK_MSG(bad == 0, "%d truncations misreported", bad);

    memcpy(b, good, len);
    b[0] = 'X';
    CHECK(bad_case(b, len, GPT_ERR_MAGIC, "magic"));
    memcpy(b, "RNTD", 4); /* a token file is not a tokenizer */
    CHECK(bad_case(b, len, GPT_ERR_MAGIC, "magic"));
    memcpy(b, good, len);
    data_put_u32le(b + 4, 2);
    CHECK(bad_case(b, len, GPT_ERR_VERSION, "version"));
    data_put_u32le(b + 4, 0);
    gt_refresh_checksum(b, len);
    CHECK(bad_case(b, len, GPT_ERR_VERSION, "version"));

    /* one flipped bit anywhere outside magic, version and the merge count: checksum error */
    for (i = 8, bad = 0; i < len; i++) {
        if (i >= 12 && i < 16) continue;
        memcpy(b, good, len);
        b[i] ^= 0x10;
        bad += !bad_case(b, len, GPT_ERR_CHECKSUM, "checksum");
    }
    CHECK_MSG(bad == 0, "%d flipped bytes not caught by the checksum", bad);
    /* a flipped merge count is caught too (as truncation or checksum) */
    memcpy(b, good, len);
    b[12] ^= 1;
    {
        tok_tokenizer o;
        CHECK(tok_parse(&o, b, len, "tok.bin", err, sizeof err) != GPT_OK);
    }
    /* trailing garbage */
    memcpy(b, good, len);
    memset(b + len, 0, 16);
    CHECK(bad_case(b, len + 16, GPT_ERR_CHECKSUM, "checksum"));
    gt_refresh_checksum(b, len + 16);
    CHECK(bad_case(b, len + 16, GPT_ERR_CORRUPT, "corrupt"));

    /* intact checksum, inconsistent content */
    memcpy(b, good, len);
    data_put_u32le(b + 8, t.vocab_size + 1);
    gt_refresh_checksum(b, len);
    CHECK(bad_case(b, len, GPT_ERR_CORRUPT, "vocab_size"));
    memcpy(b, good, len);
    data_put_u32le(b + 16, 3);
    gt_refresh_checksum(b, len);
    CHECK(bad_case(b, len, GPT_ERR_CORRUPT, "eot"));
    memcpy(b, good, len);
    data_put_u32le(b + TOK_HEADER_BYTES + 8 * 5, 256 + 5); /* merge 5 uses itself */
    gt_refresh_checksum(b, len);
    CHECK(bad_case(b, len, GPT_ERR_CORRUPT, "not defined"));
    memcpy(b, good, len);
    data_put_u32le(b + TOK_HEADER_BYTES + 8 * 7, 0xFFFFFFFFu);
    gt_refresh_checksum(b, len);
    CHECK(bad_case(b, len, GPT_ERR_CORRUPT, "not defined"));
    memcpy(b, good, len);
    memcpy(b + TOK_HEADER_BYTES + 8 * 9, b + TOK_HEADER_BYTES + 8 * 2, 8); /* duplicate merge */
    gt_refresh_checksum(b, len);
    CHECK(bad_case(b, len, GPT_ERR_CORRUPT, "repeats"));
    memcpy(b, good, len);
    data_put_u32le(b + 20, 32);
    gt_refresh_checksum(b, len);
    CHECK(bad_case(b, len, GPT_ERR_CORRUPT, "chunk"));
    /* merges whose bytes double each time exceed the chunk limit instead of overflowing */
    {
        uint32_t m[2 * 8];
        tok_tokenizer o;
        for (i = 0; i < 8; i++) m[2 * i] = m[2 * i + 1] = i == 0 ? 'a' : (uint32_t)(256 + i - 1);
        memset(&o, 0, sizeof o);
        CHECK(tok_from_merges(&o, m, 8, err, sizeof err) == GPT_ERR_CORRUPT && strstr(err, "chunk limit"));
        CHECK(tok_from_merges(&o, m, 6, err, sizeof err) == GPT_OK && o.tok_start[o.eot] - o.tok_start[o.eot - 1] == 64);
        tok_free(&o);
    }
    /* the untouched original still parses */
    {
        tok_tokenizer o;
        CHECK(tok_parse(&o, good, len, "tok.bin", err, sizeof err) == GPT_OK && o.n_merges == 43);
        tok_free(&o);
    }
    /* through a file: the message names the path */
    {
        const char *path = "test_tokenizer_trunc.bin";
        tok_tokenizer o;
        memcpy(b, good, len);
        CHECK(data_write_file_atomic(path, b, len / 2, err, sizeof err) == GPT_OK);
        memset(&o, 0, sizeof o);
        CHECK(tok_load(&o, path, err, sizeof err) == GPT_ERR_TRUNCATED && strstr(err, path) && o.merges == NULL);
        remove(path);
    }
    free(b);
    free(good);
    tok_free(&t);
}

static void test_training_speed_sanity(void)
{
    /* 400 KB to vocab 2048 must be quick (incremental counts); generous bound for slow CI. */
    size_t n = 400000;
    unsigned char *text = make_text(n, 11);
    tok_tokenizer t;
    char err[256];
    clock_t c0 = clock();
    double sec;
    memset(&t, 0, sizeof t);
    CHECK(tok_train(&t, text, n, 2048, err, sizeof err) == GPT_OK);
    sec = (double)(clock() - c0) / CLOCKS_PER_SEC;
    CHECK_MSG(sec < 10.0, "training took %.2f s", sec);
    CHECK(roundtrip(&t, text, n));
    free(text);
    tok_free(&t);
}

int main(void)
{
    (void)t_rng_normal; /* harness helpers this file does not need */
    (void)t__near;
    RUN(test_roundtrip_arbitrary_bytes);
    RUN(test_empty_and_minimal_vocab);
    RUN(test_training_deterministic);
    RUN(test_tie_break_lowest_pair);
    RUN(test_compresses_and_no_word_crossing);
    RUN(test_encode_equals_replay);
    RUN(test_training_matches_naive_reference);
    RUN(test_decode_errors_leave_output);
    RUN(test_save_load_roundtrip);
    RUN(test_bad_files);
    RUN(test_training_speed_sanity);
    return TEST_REPORT();
}
