/* data.c - token files, samplers, corpus and the shared file helpers (see data.h). */
#define _POSIX_C_SOURCE 200809L
#include "data.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- file helpers ---------------------------------------------------------------------- */

uint64_t data_fnv1a64(const void *p, size_t n, uint64_t h)
{
    const unsigned char *b = (const unsigned char *)p;
    size_t i;
    for (i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

void data_put_u32le(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v & 0xff);
    p[1] = (unsigned char)((v >> 8) & 0xff);
    p[2] = (unsigned char)((v >> 16) & 0xff);
    p[3] = (unsigned char)((v >> 24) & 0xff);
}

void data_put_u64le(unsigned char *p, uint64_t v)
{
    data_put_u32le(p, (uint32_t)(v & 0xffffffffu));
    data_put_u32le(p + 4, (uint32_t)(v >> 32));
}

uint32_t data_get_u32le(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

uint64_t data_get_u64le(const unsigned char *p)
{
    return (uint64_t)data_get_u32le(p) | ((uint64_t)data_get_u32le(p + 4) << 32);
}

/* Opens path for reading and checks, on the opened descriptor (so after symlinks are
 * followed), that it is a regular file whose size fits in memory. */
static FILE *data__open_regular(const char *path, size_t *size, gpt_status *st, char *err, size_t errlen)
{
    struct stat sb;
    FILE *f = fopen(path, "rb");
    if (!f) {
        gpt_errorf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        *st = GPT_ERR_IO;
        return NULL;
    }
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        gpt_errorf(err, errlen, "%s: not a regular file (only regular files are read)", path);
        *st = GPT_ERR_IO;
    } else if (sb.st_size < 0 || (uintmax_t)sb.st_size >= (uintmax_t)((size_t)-1)) {
        gpt_errorf(err, errlen, "%s: file too large", path);
        *st = GPT_ERR_SIZE;
    } else {
        *size = (size_t)sb.st_size;
        return f;
    }
    fclose(f);
    return NULL;
}

gpt_status data_read_file(const char *path, unsigned char **buf, size_t *n, char *err, size_t errlen)
{
    FILE *f;
    unsigned char *b;
    size_t size = 0, got;
    gpt_status st = GPT_OK;
    int bad;
    if (!path || !buf || !n) {
        gpt_errorf(err, errlen, "data_read_file: null argument");
        return GPT_ERR_NULL;
    }
    f = data__open_regular(path, &size, &st, err, errlen);
    if (!f) return st;
    b = (unsigned char *)malloc(size ? size : 1);
    if (!b) {
        fclose(f);
        gpt_errorf(err, errlen, "%s: out of memory reading %zu bytes", path, size);
        return GPT_ERR_NOMEM;
    }
    /* never more than the size fstat gave: one byte past it tells a file that grew meanwhile */
    got = size ? fread(b, 1, size, f) : 0;
    bad = ferror(f) || got != size || fgetc(f) != EOF;
    fclose(f);
    if (bad) {
        free(b);
        gpt_errorf(err, errlen, "%s: read error (%zu of %zu bytes, or the file changed while it was read)", path, got,
                  size);
        return GPT_ERR_IO;
    }
    *buf = b;
    *n = size;
    return GPT_OK;
}

/* ---- the atomic writer ------------------------------------------------------------------ */

/* A malloc'd, NUL-terminated copy of the first n bytes of s (NULL when out of memory). */
static char *data__strndup(const char *s, size_t n)
{
    char *d = (char *)malloc(n + 1);
    if (d) memcpy(d, s, n), d[n] = 0;
    return d;
}

/* The file a write to path lands on: path itself, or, through symlinks (a chain of up to 40,
 * relative ones taken from their link's directory), the file they end at, which may not exist
 * yet. Returns a malloc'd path, or NULL with a message. */
static char *data__write_target(const char *path, char *err, size_t errlen)
{
    char *cur = data__strndup(path, strlen(path));
    int hops;
    for (hops = 0; cur && hops < 40; hops++) {
        struct stat sb;
        char link[4096], *next;
        const char *slash;
        ssize_t len;
        size_t dlen;
        if (lstat(cur, &sb) != 0 || !S_ISLNK(sb.st_mode)) return cur; /* absent, or not a link */
        len = readlink(cur, link, sizeof link - 1);
        if (len < 0 || (size_t)len >= sizeof link - 1) {
            gpt_errorf(err, errlen, "%s: cannot read the symlink %s", path, cur);
            free(cur);
            return NULL;
        }
        link[len] = 0;
        slash = strrchr(cur, '/');
        dlen = link[0] != '/' && slash ? (size_t)(slash - cur) + 1 : 0; /* relative: from cur's directory */
        next = (char *)malloc(dlen + (size_t)len + 1);
        if (next) memcpy(next, cur, dlen), memcpy(next + dlen, link, (size_t)len + 1);
        free(cur);
        cur = next;
    }
    if (!cur) {
        gpt_errorf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    gpt_errorf(err, errlen, "%s: too many levels of symlinks", path);
    free(cur);
    return NULL;
}

/* GPT_OK if nothing is at p or a regular file is; else GPT_ERR_IO with a message naming path
 * (and p). */
static gpt_status data__replaceable(const char *path, const char *p, char *err, size_t errlen)
{
    struct stat sb;
    if (lstat(p, &sb) != 0 || S_ISREG(sb.st_mode)) return GPT_OK;
    if (strcmp(path, p) == 0) return gpt_fail(err, errlen, GPT_ERR_IO,
                                              "%s: not a regular file (refusing to replace it)", path);
    return gpt_fail(err, errlen, GPT_ERR_IO, "%s: %s is not a regular file (refusing to replace it)", path, p);
}

/* Writes all n bytes to fd and syncs them to the disk. */
static int data__write_all(int fd, const unsigned char *b, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        b += w, n -= (size_t)w;
    }
    return fsync(fd);
}

/* Syncs the directory holding p (so a rename in it survives a power loss). File systems that
 * cannot sync a directory (EINVAL) count as synced. */
static int data__sync_dir(const char *p)
{
    const char *slash = strrchr(p, '/');
    char *dir = slash ? data__strndup(p, slash == p ? 1 : (size_t)(slash - p)) : data__strndup(".", 1);
    int fd, rc, e;
    if (!dir) return -1;
    fd = open(dir, O_RDONLY);
    free(dir);
    if (fd < 0) return -1;
    rc = fsync(fd) == 0 || errno == EINVAL ? 0 : -1;
    e = errno;
    close(fd);
    errno = e;
    return rc;
}

/* Creates (or empties) the temp file tmp, refusing a symlink or any non-regular file there. */
static int data__open_temp(const char *tmp)
{
    struct stat sb;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK, 0666);
    if (fd < 0) return -1;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || ftruncate(fd, 0) != 0) {
        close(fd);
        errno = EEXIST;
        return -1;
    }
    return fd;
}

gpt_status data_write_file_atomic(const char *path, const void *buf, size_t n, char *err, size_t errlen)
{
    size_t plen;
    char *target, *tmp;
    int fd, bad, e;
    gpt_status st;
    if (!path || (!buf && n)) {
        gpt_errorf(err, errlen, "data_write_file_atomic: null argument");
        return GPT_ERR_NULL;
    }
    target = data__write_target(path, err, errlen);
    if (!target) return GPT_ERR_IO;
    if ((st = data__replaceable(path, target, err, errlen)) != GPT_OK) {
        free(target);
        return st;
    }
    plen = strlen(target);
    tmp = (char *)malloc(plen + 5);
    if (!tmp) {
        gpt_errorf(err, errlen, "%s: out of memory", path);
        free(target);
        return GPT_ERR_NOMEM;
    }
    memcpy(tmp, target, plen);
    memcpy(tmp + plen, ".tmp", 5);
    fd = data__open_temp(tmp);
    if (fd < 0) {
        gpt_errorf(err, errlen, "%s: cannot create %s: %s", path, tmp, strerror(errno));
        free(tmp), free(target);
        return GPT_ERR_IO;
    }
    bad = data__write_all(fd, (const unsigned char *)buf, n) != 0;
    e = errno;
    bad |= close(fd) != 0;
    if (bad) {
        gpt_errorf(err, errlen, "%s: write failed (%s): %s", tmp, path, strerror(e));
        remove(tmp);
        free(tmp), free(target);
        return GPT_ERR_IO;
    }
    if (rename(tmp, target) != 0) {
        gpt_errorf(err, errlen, "%s: cannot rename %s over it: %s", target, tmp, strerror(errno));
        remove(tmp);
        free(tmp), free(target);
        return GPT_ERR_IO;
    }
    bad = data__sync_dir(target) != 0;
    if (bad) gpt_errorf(err, errlen, "%s: written, but its directory cannot be synced: %s", target, strerror(errno));
    free(tmp), free(target);
    return bad ? GPT_ERR_IO : GPT_OK;
}

/* ---- token files ----------------------------------------------------------------------- */

static unsigned data__dtype(uint32_t vocab_size) { return vocab_size <= 65536u ? 2u : 4u; }

gpt_status data_tokens_serialize(const uint32_t *tokens, size_t n, uint32_t vocab_size, uint64_t tokenizer_id,
                                  uint64_t corpus_id, unsigned char **buf, size_t *len, char *err, size_t errlen)
{
    unsigned dt;
    size_t i, total;
    unsigned char *b, *p;
    if ((!tokens && n) || !buf || !len) {
        gpt_errorf(err, errlen, "data_tokens_serialize: null argument");
        return GPT_ERR_NULL;
    }
    if (vocab_size == 0) {
        gpt_errorf(err, errlen, "data_tokens_serialize: vocab_size is 0");
        return GPT_ERR_DOMAIN;
    }
    for (i = 0; i < n; i++) {
        if (tokens[i] >= vocab_size) {
            gpt_errorf(err, errlen, "data_tokens_serialize: token %lu at index %lu >= vocab_size %lu",
                      (unsigned long)tokens[i], (unsigned long)i, (unsigned long)vocab_size);
            return GPT_ERR_DOMAIN;
        }
    }
    dt = data__dtype(vocab_size);
    if (n > ((size_t)-1 - DATA_HEADER_BYTES - DATA_TRAILER_BYTES) / dt) {
        gpt_errorf(err, errlen, "data_tokens_serialize: too many tokens");
        return GPT_ERR_SIZE;
    }
    total = DATA_HEADER_BYTES + n * dt + DATA_TRAILER_BYTES;
    b = (unsigned char *)malloc(total);
    if (!b) {
        gpt_errorf(err, errlen, "data_tokens_serialize: out of memory");
        return GPT_ERR_NOMEM;
    }
    memcpy(b, DATA_MAGIC_BYTES, 4);
    data_put_u32le(b + 4, DATA_VERSION);
    data_put_u32le(b + 8, vocab_size);
    data_put_u32le(b + 12, dt);
    data_put_u64le(b + 16, (uint64_t)n);
    data_put_u64le(b + 24, tokenizer_id);
    data_put_u64le(b + 32, corpus_id);
    p = b + DATA_HEADER_BYTES;
    for (i = 0; i < n; i++) {
        if (dt == 2) {
            p[0] = (unsigned char)(tokens[i] & 0xff);
            p[1] = (unsigned char)(tokens[i] >> 8);
            p += 2;
        } else {
            data_put_u32le(p, tokens[i]);
            p += 4;
        }
    }
    data_put_u64le(p, data_fnv1a64(b, total - DATA_TRAILER_BYTES, DATA_FNV64_INIT));
    *buf = b;
    *len = total;
    return GPT_OK;
}

gpt_status data_tokens_write(const char *path, const uint32_t *tokens, size_t n, uint32_t vocab_size,
                              uint64_t tokenizer_id, uint64_t corpus_id, char *err, size_t errlen)
{
    unsigned char *b;
    size_t len;
    gpt_status st = data_tokens_serialize(tokens, n, vocab_size, tokenizer_id, corpus_id, &b, &len, err, errlen);
    if (st != GPT_OK) return st;
    st = data_write_file_atomic(path, b, len, err, errlen);
    free(b);
    return st;
}

gpt_status data_tokens_parse(data_tokens *out, const unsigned char *buf, size_t len, const char *name,
                              char *err, size_t errlen)
{
    uint32_t version, vocab, dt;
    uint64_t n64, sum;
    size_t n, i, want, hb; /* hb: the header's size in this file's version */
    uint32_t *toks;
    const unsigned char *p;
    if (!out || (!buf && len)) {
        gpt_errorf(err, errlen, "data_tokens_parse: null argument");
        return GPT_ERR_NULL;
    }
    if (!name) name = "token file";
    if (len < 4) {
        gpt_errorf(err, errlen, "%s: truncated: %lu bytes, too short for a token file header",
                  name, (unsigned long)len);
        return GPT_ERR_TRUNCATED;
    }
    if (memcmp(buf, DATA_MAGIC_BYTES, 4) != 0) {
        gpt_errorf(err, errlen, "%s: wrong magic (not a token file; expected \"%s\")", name, DATA_MAGIC_BYTES);
        return GPT_ERR_MAGIC;
    }
    if (len < 8) {
        gpt_errorf(err, errlen, "%s: truncated: %lu bytes, header needs %u", name, (unsigned long)len,
                  DATA_HEADER_BYTES);
        return GPT_ERR_TRUNCATED;
    }
    version = data_get_u32le(buf + 4);
    if (version == 1) { /* before the tokenizer's identity was recorded */
        gpt_errorf(err, errlen, "%s: token file version 1 does not record its tokenizer (this build reads version %u): "
                   "re-run build/gpt/prepare", name, DATA_VERSION);
        return GPT_ERR_VERSION;
    }
    if (version != DATA_VERSION && version != 2) { /* version 2: no corpus_id */
        gpt_errorf(err, errlen, "%s: unsupported token file version %lu (this build reads versions 2 and %u)",
                  name, (unsigned long)version, DATA_VERSION);
        return GPT_ERR_VERSION;
    }
    hb = version == 2 ? 32u : DATA_HEADER_BYTES;
    if (len < hb) {
        gpt_errorf(err, errlen, "%s: truncated: %lu bytes, header needs %lu", name, (unsigned long)len,
                  (unsigned long)hb);
        return GPT_ERR_TRUNCATED;
    }
    if (len < hb + DATA_TRAILER_BYTES) {
        gpt_errorf(err, errlen, "%s: truncated: %lu bytes, header and checksum need %lu", name,
                  (unsigned long)len, (unsigned long)(hb + DATA_TRAILER_BYTES));
        return GPT_ERR_TRUNCATED;
    }
    vocab = data_get_u32le(buf + 8);
    dt = data_get_u32le(buf + 12);
    n64 = data_get_u64le(buf + 16);
    want = (dt == 2 || dt == 4) && n64 <= (uint64_t)(((size_t)-1 - hb - DATA_TRAILER_BYTES) / 4)
               ? hb + (size_t)n64 * dt + DATA_TRAILER_BYTES
               : (size_t)-1;
    /* Checksum first: a file that matches it is intact, so any later complaint is about content. */
    sum = data_fnv1a64(buf, len - DATA_TRAILER_BYTES, DATA_FNV64_INIT);
    if (sum != data_get_u64le(buf + len - DATA_TRAILER_BYTES)) {
        if (len < want) {
            gpt_errorf(err, errlen, "%s: truncated: %lu bytes, header promises %llu tokens (%lu bytes)", name,
                      (unsigned long)len, (unsigned long long)n64, (unsigned long)want);
            return GPT_ERR_TRUNCATED;
        }
        gpt_errorf(err, errlen, "%s: checksum mismatch (file corrupted)", name);
        return GPT_ERR_CHECKSUM;
    }
    if (vocab == 0 || dt != data__dtype(vocab) || len != want) {
        gpt_errorf(err, errlen, "%s: corrupt header: vocab_size %lu, dtype %lu bytes, %llu tokens in %lu bytes",
                  name, (unsigned long)vocab, (unsigned long)dt, (unsigned long long)n64, (unsigned long)len);
        return GPT_ERR_CORRUPT;
    }
    n = (size_t)n64;
    toks = (uint32_t *)malloc(n ? n * sizeof(uint32_t) : 1);
    if (!toks) {
        gpt_errorf(err, errlen, "%s: out of memory for %lu tokens", name, (unsigned long)n);
        return GPT_ERR_NOMEM;
    }
    p = buf + hb;
    for (i = 0; i < n; i++) {
        uint32_t t = dt == 2 ? (uint32_t)p[2 * i] | ((uint32_t)p[2 * i + 1] << 8) : data_get_u32le(p + 4 * i);
        if (t >= vocab) {
            gpt_errorf(err, errlen, "%s: corrupt: token %lu at index %lu >= vocab_size %lu", name,
                      (unsigned long)t, (unsigned long)i, (unsigned long)vocab);
            free(toks);
            return GPT_ERR_CORRUPT;
        }
        toks[i] = t;
    }
    out->vocab_size = vocab;
    out->tokenizer_id = data_get_u64le(buf + 24);
    out->corpus_id = version == 2 ? 0 : data_get_u64le(buf + 32);
    out->n_tokens = n;
    out->tokens = toks;
    return GPT_OK;
}

gpt_status data_tokens_read(data_tokens *out, const char *path, char *err, size_t errlen)
{
    unsigned char *b;
    size_t len;
    gpt_status st;
    if (!out || !path) {
        gpt_errorf(err, errlen, "data_tokens_read: null argument");
        return GPT_ERR_NULL;
    }
    st = data_read_file(path, &b, &len, err, errlen);
    if (st != GPT_OK) return st;
    st = data_tokens_parse(out, b, len, path, err, errlen);
    free(b);
    return st;
}

void data_tokens_free(data_tokens *d)
{
    if (!d) return;
    free(d->tokens);
    d->tokens = NULL;
    d->n_tokens = 0;
    d->vocab_size = 0;
}

/* ---- samplers -------------------------------------------------------------------------- */

void data_sampler_init(data_sampler *s, uint64_t seed)
{
    if (!s) return;
    s->rng = seed;
    s->pos = 0;
}

static gpt_status data__check_batch(const data_tokens *d, const data_sampler *s, int B, int T,
                                     const int *inputs, const int *targets, size_t need)
{
    if (!d || !s || !inputs || !targets || (!d->tokens && d->n_tokens)) return GPT_ERR_NULL;
    if (B <= 0 || T <= 0 || d->vocab_size > 0x7fffffffu) return GPT_ERR_DOMAIN; /* ids must fit an int */
    if ((size_t)B > (size_t)-1 / (size_t)T) return GPT_ERR_SIZE;
    if (d->n_tokens < need) return GPT_ERR_SIZE;
    return GPT_OK;
}

gpt_status data_batch_random(const data_tokens *d, data_sampler *s, int B, int T, int *inputs, int *targets)
{
    gpt_status st = data__check_batch(d, s, B, T, inputs, targets, (size_t)(T > 0 ? T : 0) + 1);
    uint64_t range;
    int b, t;
    if (st != GPT_OK) return st;
    range = (uint64_t)(d->n_tokens - (size_t)T); /* starts 0 .. n-T-1 */
    for (b = 0; b < B; b++) {
        /* Modulo bias is at most range / 2^64: irrelevant for any corpus that fits in memory. */
        size_t start = (size_t)(gpt_splitmix64(&s->rng) % range);
        const uint32_t *w = d->tokens + start;
        for (t = 0; t < T; t++) {
            inputs[(size_t)b * T + t] = (int)w[t];
            targets[(size_t)b * T + t] = (int)w[t + 1];
        }
    }
    return GPT_OK;
}

gpt_status data_batch_sequential(const data_tokens *d, data_sampler *s, int B, int T, int *inputs, int *targets)
{
    size_t bt, pos;
    int b, t;
    gpt_status st = data__check_batch(d, s, B, T, inputs, targets, 1);
    if (st != GPT_OK) return st;
    bt = (size_t)B * (size_t)T;
    if (bt >= d->n_tokens) return GPT_ERR_SIZE; /* need bt + 1 tokens */
    pos = (size_t)s->pos;
    if ((uint64_t)pos != s->pos || pos > d->n_tokens - 1 - bt) pos = 0;
    for (b = 0; b < B; b++) {
        const uint32_t *w = d->tokens + pos + (size_t)b * T;
        for (t = 0; t < T; t++) {
            inputs[(size_t)b * T + t] = (int)w[t];
            targets[(size_t)b * T + t] = (int)w[t + 1];
        }
    }
    s->pos = (uint64_t)(pos + bt);
    return GPT_OK;
}

size_t data_sequential_batches(const data_tokens *d, int B, int T)
{
    size_t bt;
    if (!d || B <= 0 || T <= 0 || d->n_tokens == 0) return 0;
    if ((size_t)B > (size_t)-1 / (size_t)T) return 0;
    bt = (size_t)B * (size_t)T;
    return (d->n_tokens - 1) / bt;
}

/* ---- corpus ---------------------------------------------------------------------------- */

/* The project's own text, in a fixed order (the order changes the token stream, so keep it).
 * New docs or sources should be added here; missing entries are skipped. */
const char *const data_default_corpus_files[] = {
    "README.md",
    "docs/DESIGN.md",
    "docs/SPEC.md",
    "docs/TRAINER.md",
    "docs/RESULTS.md",
    "bench/RESULTS.md",
    "rownorm.h",
    "muon.h",
    "tests/test.h",
    "examples/gpt/README.md",
    "examples/gpt/model.h",
    "examples/gpt/model.c",
    "examples/gpt/backend.h",
    "examples/gpt/cpu_layers.h",
    "examples/gpt/cpu.c",
    "examples/gpt/libs.c",
    "examples/gpt/train.c",
    "examples/gpt/train_gpt.c",
    "examples/gpt/tokenizer.h",
    "examples/gpt/tokenizer.c",
    "examples/gpt/data.h",
    "examples/gpt/data.c",
    "examples/gpt/plot.h",
    "examples/gpt/plot.c",
    "examples/gpt/prepare.c",
    NULL
};

/* Appends n documents, document i being len[i] bytes at text + off[i], all or nothing. */
static gpt_status data__corpus_append(data_corpus *c, const unsigned char *text, const size_t *off, const size_t *len,
                                      size_t n, const char *name, char *err, size_t errlen)
{
    size_t i, total = 0, *starts;
    unsigned char *t;
    for (i = 0; i < n; i++) {
        if (len[i] > (size_t)-1 - total) total = (size_t)-1;
        else total += len[i];
    }
    if (total > (size_t)-1 - c->n_bytes - 1 || n > (size_t)-1 / sizeof(size_t) - c->n_docs - 2) {
        gpt_errorf(err, errlen, "%s: corpus too large", name);
        return GPT_ERR_SIZE;
    }
    t = (unsigned char *)realloc(c->text, c->n_bytes + total + 1);
    if (!t) {
        gpt_errorf(err, errlen, "%s: out of memory", name);
        return GPT_ERR_NOMEM;
    }
    c->text = t; /* a larger buffer with the same content: c is still consistent */
    starts = (size_t *)realloc(c->doc_start, (c->n_docs + n + 2) * sizeof(size_t));
    if (!starts) {
        gpt_errorf(err, errlen, "%s: out of memory", name);
        return GPT_ERR_NOMEM;
    }
    c->doc_start = starts;
    if (c->n_docs == 0) starts[0] = 0;
    for (i = 0; i < n; i++) {
        if (len[i]) memcpy(t + c->n_bytes, text + off[i], len[i]);
        c->n_bytes += len[i];
        c->n_docs += 1;
        starts[c->n_docs] = c->n_bytes;
    }
    return GPT_OK;
}

gpt_status data_corpus_add_file(data_corpus *c, const char *path, char *err, size_t errlen)
{
    unsigned char *b;
    size_t len, off = 0;
    gpt_status st;
    if (!c || !path) {
        gpt_errorf(err, errlen, "data_corpus_add_file: null argument");
        return GPT_ERR_NULL;
    }
    st = data_read_file(path, &b, &len, err, errlen);
    if (st != GPT_OK) return st;
    st = data__corpus_append(c, b, &off, &len, 1, path, err, errlen);
    free(b);
    return st;
}

/* FNV-1a 64 over documents first.. of c (data_corpus_id's definition). */
static uint64_t data__corpus_id_from(const data_corpus *c, size_t first)
{
    uint64_t h = DATA_FNV64_INIT;
    size_t i;
    for (i = first; i < c->n_docs; i++) {
        unsigned char l[8];
        size_t n = c->doc_start[i + 1] - c->doc_start[i];
        data_put_u64le(l, (uint64_t)n);
        h = data_fnv1a64(l, 8, h);
        h = data_fnv1a64(c->text + c->doc_start[i], n, h);
    }
    return h;
}

uint64_t data_corpus_id(const data_corpus *c) { return c ? data__corpus_id_from(c, 0) : 0; }

static const char data__snapshot_head[] =
    "# rownorm corpus snapshot 1: documents, each as a line \"@@ LENGTH NAME\", LENGTH bytes, a newline\n";

gpt_status data_snapshot_serialize(const char *const *names, const unsigned char *const *text, const size_t *len,
                                   size_t n, unsigned char **buf, size_t *buflen, char *err, size_t errlen)
{
    size_t i, total = sizeof data__snapshot_head - 1, at;
    unsigned char *b;
    if (!buf || !buflen || (n && (!names || !text || !len))) {
        gpt_errorf(err, errlen, "data_snapshot_serialize: null argument");
        return GPT_ERR_NULL;
    }
    for (i = 0; i < n; i++) {
        size_t nl = names[i] ? strlen(names[i]) : 0;
        if (nl == 0 || nl > 255 || strchr(names[i], '\n') || (len[i] && !text[i])) {
            gpt_errorf(err, errlen, "data_snapshot_serialize: document %lu: a name must be 1..255 bytes without a "
                       "newline", (unsigned long)i);
            return GPT_ERR_DOMAIN;
        }
        if (len[i] > ((size_t)-1 - total) / 2 - 300) {
            gpt_errorf(err, errlen, "data_snapshot_serialize: too large");
            return GPT_ERR_SIZE;
        }
        total += 3 + 20 + 1 + nl + 1 + len[i] + 1;
    }
    b = (unsigned char *)malloc(total);
    if (!b) {
        gpt_errorf(err, errlen, "data_snapshot_serialize: out of memory");
        return GPT_ERR_NOMEM;
    }
    memcpy(b, data__snapshot_head, sizeof data__snapshot_head - 1);
    at = sizeof data__snapshot_head - 1;
    for (i = 0; i < n; i++) {
        at += (size_t)sprintf((char *)b + at, "@@ %lu %s\n", (unsigned long)len[i], names[i]);
        if (len[i]) memcpy(b + at, text[i], len[i]);
        at += len[i];
        b[at++] = '\n';
    }
    *buf = b;
    *buflen = at;
    return GPT_OK;
}

gpt_status data_corpus_add_snapshot(data_corpus *c, const char *path, char *err, size_t errlen)
{
    unsigned char *b;
    size_t n, at, k = 0, cap = 0, line = 1, *off = NULL, *len = NULL;
    const size_t hl = sizeof data__snapshot_head - 1;
    gpt_status st;
    if (!c || !path) {
        gpt_errorf(err, errlen, "data_corpus_add_snapshot: null argument");
        return GPT_ERR_NULL;
    }
    st = data_read_file(path, &b, &n, err, errlen);
    if (st != GPT_OK) return st;
    if (n < hl || memcmp(b, data__snapshot_head, hl) != 0) {
        free(b);
        gpt_errorf(err, errlen, "%s:1: not a corpus snapshot (its first line must be: %.*s)", path, (int)hl - 1,
                   data__snapshot_head);
        return GPT_ERR_MAGIC;
    }
    at = hl;
    st = GPT_OK;
    while (at < n && st == GPT_OK) {
        size_t e = at, v = 0, digits = 0, q;
        line++;
        while (e < n && b[e] != '\n') e++;
        /* "@@ LENGTH NAME" */
        if (e == n || e - at < 6 || memcmp(b + at, "@@ ", 3) != 0) {
            st = GPT_ERR_CORRUPT;
            break;
        }
        for (q = at + 3; q < e && b[q] >= '0' && b[q] <= '9' && digits < 19; q++, digits++) v = 10 * v + (size_t)(b[q] - '0');
        if (digits == 0 || q >= e || b[q] != ' ' || q + 1 == e || v > n - e - 1 || n - e - 1 - v < 1 ||
            b[e + 1 + v] != '\n') {
            st = GPT_ERR_CORRUPT;
            break;
        }
        if (k == cap) {
            size_t nc = cap ? 2 * cap : 64, *o2, *l2;
            o2 = (size_t *)realloc(off, nc * sizeof *off);
            if (o2) off = o2;
            l2 = o2 ? (size_t *)realloc(len, nc * sizeof *len) : NULL;
            if (l2) len = l2;
            if (!o2 || !l2) {
                st = GPT_ERR_NOMEM;
                break;
            }
            cap = nc;
        }
        off[k] = e + 1, len[k] = v, k++;
        for (q = e + 1; q < e + 1 + v; q++) line += b[q] == '\n';
        line++; /* the document's closing newline */
        at = e + 1 + v + 1;
    }
    if (st == GPT_OK && k == 0) st = GPT_ERR_CORRUPT, line = 2;
    if (st == GPT_OK) st = data__corpus_append(c, b, off, len, k, path, err, errlen);
    else if (st == GPT_ERR_NOMEM) gpt_errorf(err, errlen, "%s: out of memory", path);
    else gpt_errorf(err, errlen, "%s:%lu: corrupt corpus snapshot: want a line \"@@ LENGTH NAME\", then LENGTH bytes "
                    "(within the file) and a newline", path, (unsigned long)line);
    free(b), free(off), free(len);
    return st;
}

gpt_status data_corpus_add_demo(data_corpus *c, const char *root, char *err, size_t errlen)
{
    char path[4096];
    size_t docs0, bytes0;
    gpt_status st;
    uint64_t id;
    int w;
    if (!c) {
        gpt_errorf(err, errlen, "data_corpus_add_demo: null argument");
        return GPT_ERR_NULL;
    }
    if (!root || !*root) root = ".";
    w = snprintf(path, sizeof path, "%s/%s", root, DATA_DEMO_CORPUS);
    if (w < 0 || (size_t)w >= sizeof path) {
        gpt_errorf(err, errlen, "%s: path too long", root);
        return GPT_ERR_DOMAIN;
    }
    docs0 = c->n_docs, bytes0 = c->n_bytes;
    st = data_corpus_add_snapshot(c, path, err, errlen);
    if (st != GPT_OK) return st;
    id = data__corpus_id_from(c, docs0);
    if (id != DATA_DEMO_CORPUS_ID) { /* back to the documents c had (its buffers stay larger) */
        c->n_docs = docs0, c->n_bytes = bytes0;
        gpt_errorf(err, errlen, "%s: its identity is %016llx, not the %016llx the demo's committed table was made from "
                   "(DATA_DEMO_CORPUS_ID in examples/gpt/data.h; examples/gpt/corpus/README.md says how to replace the "
                   "snapshot)", path, (unsigned long long)id, (unsigned long long)DATA_DEMO_CORPUS_ID);
        return GPT_ERR_MISMATCH;
    }
    return GPT_OK;
}

gpt_status data_corpus_add_input(data_corpus *c, const char *path, char *err, size_t errlen)
{
    static const char prefix[] = "# rownorm corpus snapshot "; /* data__snapshot_head, any version */
    char first[sizeof prefix];
    FILE *f = path ? fopen(path, "rb") : NULL;
    size_t got = f ? fread(first, 1, sizeof prefix - 1, f) : 0;
    if (f) fclose(f);
    if (got == sizeof prefix - 1 && memcmp(first, prefix, got) == 0) return data_corpus_add_snapshot(c, path, err, errlen);
    return data_corpus_add_file(c, path, err, errlen);
}

gpt_status data_corpus_add_default(data_corpus *c, const char *root, char *err, size_t errlen)
{
    size_t i, found = 0;
    char path[4096];
    if (!c) {
        gpt_errorf(err, errlen, "data_corpus_add_default: null argument");
        return GPT_ERR_NULL;
    }
    if (!root || !*root) root = ".";
    for (i = 0; data_default_corpus_files[i]; i++) {
        FILE *f;
        gpt_status st;
        int w = snprintf(path, sizeof path, "%s/%s", root, data_default_corpus_files[i]);
        if (w < 0 || (size_t)w >= sizeof path) {
            gpt_errorf(err, errlen, "%s: path too long", root);
            return GPT_ERR_DOMAIN;
        }
        f = fopen(path, "rb");
        if (!f) continue; /* not in this checkout: skip */
        fclose(f);
        st = data_corpus_add_file(c, path, err, errlen);
        if (st != GPT_OK) return st;
        found++;
    }
    if (!found) {
        gpt_errorf(err, errlen, "%s: none of the default corpus files found (is this the repository root?)", root);
        return GPT_ERR_IO;
    }
    return GPT_OK;
}

int data_find_repo_root(char *out, size_t cap)
{
    static const char *const cands[] = {".", "..", "../..", "../../.."};
    size_t i;
    char p[64];
    for (i = 0; i < sizeof cands / sizeof cands[0]; i++) {
        FILE *a, *b;
        snprintf(p, sizeof p, "%s/rownorm.h", cands[i]);
        a = fopen(p, "rb");
        snprintf(p, sizeof p, "%s/muon.h", cands[i]);
        b = fopen(p, "rb");
        if (a) fclose(a);
        if (b) fclose(b);
        if (a && b) {
            if (out && cap) snprintf(out, cap, "%s", cands[i]);
            return 1;
        }
    }
    if (out && cap) snprintf(out, cap, ".");
    return 0;
}

void data_corpus_free(data_corpus *c)
{
    if (!c) return;
    free(c->text);
    free(c->doc_start);
    memset(c, 0, sizeof *c);
}
