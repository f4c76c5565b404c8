/* checkpoint.c - the checkpoint container (see checkpoint.h for the format). */
#include "checkpoint.h"

#include "data.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t type_size(uint32_t t) { return t == CKPT_F32 ? 4u : (t == CKPT_U64 || t == CKPT_F64) ? 8u : 0u; }

/* ---- writing ------------------------------------------------------------------------------ */

void ckpt_writer_init(ckpt_writer *w)
{
    memset(w, 0, sizeof *w);
    w->len = CKPT_HEADER_BYTES; /* the header is filled in by ckpt_finish */
}

static unsigned char *reserve(ckpt_writer *w, size_t n)
{
    if (w->failed) return NULL;
    if (n > (size_t)-1 - w->len - CKPT_TRAILER_BYTES) {
        w->failed = 1;
        return NULL;
    }
    if (w->len + n + CKPT_TRAILER_BYTES > w->cap) { /* room for the trailer is kept at all times */
        size_t need = w->len + n + CKPT_TRAILER_BYTES, cap = w->cap ? w->cap : 4096;
        unsigned char *nb;
        while (cap < need) cap = cap > (size_t)-1 / 2 ? need : cap * 2;
        nb = (unsigned char *)realloc(w->buf, cap);
        if (!nb) {
            w->failed = 1;
            return NULL;
        }
        if (!w->buf) memset(nb, 0, CKPT_HEADER_BYTES);
        w->buf = nb;
        w->cap = cap;
    }
    w->len += n;
    return w->buf + w->len - n;
}

/* Writes the field header and returns where `count` values of `type` go (NULL on failure). */
static unsigned char *put_field(ckpt_writer *w, const char *name, ckpt_type type, size_t count)
{
    size_t nl = strlen(name), es = type_size((uint32_t)type);
    unsigned char *p;
    if (nl == 0 || nl > CKPT_MAX_NAME || (count && es > (size_t)-1 / count)) {
        w->failed = 1;
        return NULL;
    }
    p = reserve(w, 4 + nl + 4 + 8 + es * count);
    if (!p) return NULL;
    data_put_u32le(p, (uint32_t)nl);
    memcpy(p + 4, name, nl);
    data_put_u32le(p + 4 + nl, (uint32_t)type);
    data_put_u64le(p + 8 + nl, (uint64_t)count);
    w->n_fields++;
    return p + 16 + nl;
}

void ckpt_put_u64(ckpt_writer *w, const char *name, const uint64_t *v, size_t count)
{
    unsigned char *p = put_field(w, name, CKPT_U64, count);
    size_t i;
    if (p) for (i = 0; i < count; i++) data_put_u64le(p + 8 * i, v[i]);
}

void ckpt_put_f64(ckpt_writer *w, const char *name, const double *v, size_t count)
{
    unsigned char *p = put_field(w, name, CKPT_F64, count);
    size_t i;
    if (p)
        for (i = 0; i < count; i++) {
            uint64_t bits;
            memcpy(&bits, &v[i], 8);
            data_put_u64le(p + 8 * i, bits);
        }
}

void ckpt_put_f32(ckpt_writer *w, const char *name, const float *v, size_t count)
{
    unsigned char *p = put_field(w, name, CKPT_F32, count);
    size_t i;
    if (p)
        for (i = 0; i < count; i++) {
            uint32_t bits;
            memcpy(&bits, &v[i], 4);
            data_put_u32le(p + 4 * i, bits);
        }
}

void ckpt_put_raw(ckpt_writer *w, const unsigned char *fields, size_t len, uint32_t n_fields)
{
    unsigned char *p;
    if (!len) return;
    p = reserve(w, len);
    if (!p) return;
    memcpy(p, fields, len);
    w->n_fields += n_fields;
}

size_t ckpt_writer_body(const ckpt_writer *w, const unsigned char **fields)
{
    *fields = w->buf ? w->buf + CKPT_HEADER_BYTES : NULL;
    return w->buf && !w->failed ? w->len - CKPT_HEADER_BYTES : 0;
}

void ckpt_put_u64_1(ckpt_writer *w, const char *name, uint64_t v) { ckpt_put_u64(w, name, &v, 1); }
void ckpt_put_f64_1(ckpt_writer *w, const char *name, double v) { ckpt_put_f64(w, name, &v, 1); }

gpt_status ckpt_finish(ckpt_writer *w, unsigned char **image, size_t *len)
{
    unsigned char *p;
    size_t total;
    if (!w || !image || !len) return GPT_ERR_NULL;
    if (!w->buf && !w->failed) reserve(w, 0);
    if (w->failed || !w->buf) return GPT_ERR_NOMEM;
    total = w->len + CKPT_TRAILER_BYTES; /* reserve() keeps room for the trailer */
    memcpy(w->buf, CKPT_MAGIC_BYTES, 4);
    data_put_u32le(w->buf + 4, CKPT_VERSION);
    data_put_u64le(w->buf + 8, (uint64_t)total);
    data_put_u32le(w->buf + 16, w->n_fields);
    data_put_u32le(w->buf + 20, 0);
    data_put_u64le(w->buf + w->len, data_fnv1a64(w->buf, w->len, DATA_FNV64_INIT));
    p = w->buf;
    *image = p;
    *len = total;
    memset(w, 0, sizeof *w); /* the caller owns the image now */
    return GPT_OK;
}

gpt_status ckpt_write_file(ckpt_writer *w, const char *path, char *err, size_t errlen)
{
    unsigned char *image;
    size_t len;
    gpt_status ds;
    gpt_status s = ckpt_finish(w, &image, &len);
    if (s != GPT_OK) return gpt_fail(err, errlen, s, "%s: cannot build the checkpoint: %s", path, gpt_status_string(s));
    ds = data_write_file_atomic(path, image, len, err, errlen);
    free(image);
    return ds == GPT_OK ? GPT_OK : GPT_ERR_IO;
}

void ckpt_writer_free(ckpt_writer *w)
{
    if (!w) return;
    free(w->buf);
    memset(w, 0, sizeof *w);
}

/* ---- reading ------------------------------------------------------------------------------ */

gpt_status ckpt_parse(ckpt_reader *r, const unsigned char *image, size_t len, const char *name,
                       char *err, size_t errlen)
{
    uint64_t total, stored;
    uint32_t version, n, k;
    size_t off, end;
    ckpt_field *fields;
    if (!r || !image) return gpt_fail(err, errlen, GPT_ERR_NULL, "checkpoint: NULL argument");
    if (!name) name = "checkpoint";
    if (len < 8)
        return gpt_fail(err, errlen, GPT_ERR_TRUNCATED, "%s: truncated: %zu bytes, shorter than a checkpoint header",
                        name, len);
    if (memcmp(image, CKPT_MAGIC_BYTES, 4) != 0)
        return gpt_fail(err, errlen, GPT_ERR_MAGIC, "%s: not a checkpoint (magic is not \"%s\")", name,
                        CKPT_MAGIC_BYTES);
    version = data_get_u32le(image + 4);
    if (version != CKPT_VERSION)
        return gpt_fail(err, errlen, GPT_ERR_VERSION, "%s: checkpoint version %u, this build reads version %u", name,
                        (unsigned)version, (unsigned)CKPT_VERSION);
    if (len < CKPT_HEADER_BYTES + CKPT_TRAILER_BYTES)
        return gpt_fail(err, errlen, GPT_ERR_TRUNCATED, "%s: truncated: %zu bytes, shorter than header and checksum",
                        name, len);
    total = data_get_u64le(image + 8);
    if (total > len)
        return gpt_fail(err, errlen, GPT_ERR_TRUNCATED, "%s: truncated: %zu bytes, the header says %llu", name, len,
                        (unsigned long long)total);
    if (total < len)
        return gpt_fail(err, errlen, GPT_ERR_CORRUPT, "%s: %zu bytes, the header says %llu (trailing bytes)", name, len,
                        (unsigned long long)total);
    end = len - CKPT_TRAILER_BYTES;
    stored = data_get_u64le(image + end);
    if (stored != data_fnv1a64(image, end, DATA_FNV64_INIT))
        return gpt_fail(err, errlen, GPT_ERR_CHECKSUM, "%s: checksum mismatch (the file is corrupted)", name);
    n = data_get_u32le(image + 16);
    if (n > (end - CKPT_HEADER_BYTES) / 16)
        return gpt_fail(err, errlen, GPT_ERR_CORRUPT, "%s: %u fields cannot fit in the file", name, (unsigned)n);
    fields = (ckpt_field *)calloc(n ? n : 1, sizeof *fields);
    if (!fields) return gpt_fail(err, errlen, GPT_ERR_NOMEM, "%s: out of memory", name);
    off = CKPT_HEADER_BYTES;
    for (k = 0; k < n; k++) {
        ckpt_field *f = &fields[k];
        uint32_t nl, j;
        size_t es;
        if (end - off < 4) goto bad;
        nl = data_get_u32le(image + off);
        if (nl == 0 || nl > CKPT_MAX_NAME || end - off - 4 < (size_t)nl + 12) goto bad;
        f->name = (const char *)(image + off + 4);
        f->name_len = nl;
        f->type = (ckpt_type)data_get_u32le(image + off + 4 + nl);
        f->count = data_get_u64le(image + off + 8 + nl);
        es = type_size((uint32_t)f->type);
        off += 16 + (size_t)nl;
        if (es == 0 || f->count > (uint64_t)((end - off) / es)) goto bad;
        f->data = image + off;
        off += es * (size_t)f->count;
        for (j = 0; j < k; j++)
            if (fields[j].name_len == nl && memcmp(fields[j].name, f->name, nl) == 0) goto bad;
    }
    if (off != end) goto bad;
    memset(r, 0, sizeof *r);
    r->len = len;
    r->fields = fields;
    r->n_fields = n;
    snprintf(r->file, sizeof r->file, "%s", name);
    return GPT_OK;
bad:
    free(fields);
    return gpt_fail(err, errlen, GPT_ERR_CORRUPT, "%s: malformed field %u (bad name, type, size or a duplicate name)",
                    name,
                    (unsigned)k);
}

gpt_status ckpt_read_file(ckpt_reader *r, const char *path, char *err, size_t errlen)
{
    unsigned char *buf;
    size_t n;
    gpt_status s;
    if (!r || !path) return gpt_fail(err, errlen, GPT_ERR_NULL, "checkpoint: NULL argument");
    if (data_read_file(path, &buf, &n, err, errlen) != GPT_OK) return GPT_ERR_IO;
    s = ckpt_parse(r, buf, n, path, err, errlen);
    if (s != GPT_OK) {
        free(buf);
        return s;
    }
    r->image = buf;
    return GPT_OK;
}

static const ckpt_field *find(const ckpt_reader *r, const char *name)
{
    size_t nl = strlen(name);
    uint32_t k;
    for (k = 0; k < r->n_fields; k++)
        if (r->fields[k].name_len == nl && memcmp(r->fields[k].name, name, nl) == 0) return &r->fields[k];
    return NULL;
}

int ckpt_has(const ckpt_reader *r, const char *name) { return r && name && find(r, name) != NULL; }

/* The field, if it exists with `count` values of `type`; else NULL with a message. */
static const ckpt_field *find_as(const ckpt_reader *r, const char *name, ckpt_type type, size_t count,
                                 gpt_status *s, char *err, size_t errlen)
{
    static const char *const tn[] = {"?", "u64", "f64", "f32"};
    const ckpt_field *f = find(r, name);
    if (!f) {
        *s = gpt_fail(err, errlen, GPT_ERR_MISSING, "%s: no field \"%s\"", r->file, name);
        return NULL;
    }
    if (f->type != type || f->count != (uint64_t)count) {
        *s = gpt_fail(err, errlen, GPT_ERR_MISMATCH, "%s: field \"%s\" is %llu x %s, expected %zu x %s", r->file, name,
                      (unsigned long long)f->count, tn[f->type <= 3 ? f->type : 0], count, tn[type]);
        return NULL;
    }
    return f;
}

/* Index of the first f32 / f64 value that is NaN or Inf, or (negative != 0) below zero; count
 * if none. *neg: whether that value is a finite negative one. */
static uint64_t first_bad(const ckpt_field *f, int negative, int *neg)
{
    uint64_t i;
    *neg = 0;
    for (i = 0; i < f->count; i++) {
        double v;
        if (f->type == CKPT_F32) {
            uint32_t bits = data_get_u32le(f->data + 4 * i);
            float x;
            memcpy(&x, &bits, 4);
            v = (double)x;
        } else if (f->type == CKPT_F64) {
            uint64_t bits = data_get_u64le(f->data + 8 * i);
            memcpy(&v, &bits, 8);
        } else {
            break;
        }
        if (!isfinite(v)) return i;
        if (negative && v < 0.0) {
            *neg = 1;
            return i;
        }
    }
    return f->type == CKPT_U64 ? f->count : i;
}

gpt_status ckpt_check_field(const ckpt_reader *r, const char *name, ckpt_type type, size_t count, int finite,
                             char *err, size_t errlen)
{
    const ckpt_field *f;
    gpt_status s = GPT_OK;
    uint64_t bad;
    int neg;
    if (!r || !name) return gpt_fail(err, errlen, GPT_ERR_NULL, "checkpoint: NULL argument");
    if (!(f = find_as(r, name, type, count, &s, err, errlen))) return s;
    if (finite && (bad = first_bad(f, finite == CKPT_NONNEGATIVE, &neg)) < f->count)
        return gpt_fail(err, errlen, GPT_ERR_CORRUPT, "%s: field \"%s\" holds %s (value %llu)", r->file, name,
                        neg ? "a negative value" : "a NaN or Inf", (unsigned long long)bad);
    return GPT_OK;
}

static gpt_status get(const ckpt_reader *r, const char *name, ckpt_type type, void *out, size_t count,
                       char *err, size_t errlen)
{
    const ckpt_field *f;
    gpt_status s = GPT_OK;
    size_t i;
    if (!r || !name || (!out && count)) return gpt_fail(err, errlen, GPT_ERR_NULL, "checkpoint: NULL argument");
    if (!(f = find_as(r, name, type, count, &s, err, errlen))) return s;
    for (i = 0; i < count; i++) {
        if (type == CKPT_F32) {
            uint32_t bits = data_get_u32le(f->data + 4 * i);
            memcpy((float *)out + i, &bits, 4);
        } else {
            uint64_t bits = data_get_u64le(f->data + 8 * i);
            memcpy((unsigned char *)out + 8 * i, &bits, 8);
        }
    }
    return GPT_OK;
}

gpt_status ckpt_get_u64(const ckpt_reader *r, const char *name, uint64_t *out, size_t count, char *err, size_t errlen)
{
    return get(r, name, CKPT_U64, out, count, err, errlen);
}
gpt_status ckpt_get_f64(const ckpt_reader *r, const char *name, double *out, size_t count, char *err, size_t errlen)
{
    return get(r, name, CKPT_F64, out, count, err, errlen);
}
gpt_status ckpt_get_f32(const ckpt_reader *r, const char *name, float *out, size_t count, char *err, size_t errlen)
{
    return get(r, name, CKPT_F32, out, count, err, errlen);
}

gpt_status ckpt_get_f32_range(const ckpt_reader *r, const char *name, size_t total, size_t first, size_t count,
                               float *out, char *err, size_t errlen)
{
    const ckpt_field *f;
    size_t i;
    if (!r || !name || (!out && count)) return gpt_fail(err, errlen, GPT_ERR_NULL, "checkpoint: NULL argument");
    if (first > total || count > total - first)
        return gpt_fail(err, errlen, GPT_ERR_MISMATCH, "%s: range [%zu, %zu) of field \"%s\" is outside %zu values",
                        r->file,
                    first, first + count, name, total);
    f = find(r, name);
    if (!f) return gpt_fail(err, errlen, GPT_ERR_MISSING, "%s: no field \"%s\"", r->file, name);
    if (f->type != CKPT_F32 || f->count != (uint64_t)total)
        return gpt_fail(err, errlen, GPT_ERR_MISMATCH, "%s: field \"%s\" is %llu values of type %u, expected %zu x f32",
                        r->file, name, (unsigned long long)f->count, (unsigned)f->type, total);
    for (i = 0; i < count; i++) {
        uint32_t bits = data_get_u32le(f->data + 4 * (first + i));
        memcpy(out + i, &bits, 4);
    }
    return GPT_OK;
}

void ckpt_reader_free(ckpt_reader *r)
{
    if (!r) return;
    free(r->image);
    free(r->fields);
    memset(r, 0, sizeof *r);
}
