/* checkpoint.h - the trainer's checkpoint file: a checksummed list of named, typed arrays.
 *
 * This file knows the container only; what goes in it (model config, step, sampler state,
 * parameters, optimizer state) is decided by train.c and optim.c, which write and read fields by
 * name. A field is an array of u64, f64 or f32 values, so every backend (CPU or CUDA) writes the
 * same file from host copies of its tensors.
 *
 * File format (version 1), all integers little-endian, floats as their IEEE-754 bit patterns:
 *   offset  size  field
 *        0     4  magic, the bytes "RNCK"
 *        4     4  version (1)
 *        8     8  total file size in bytes (trailer included), to tell truncation from corruption
 *       16     4  number of fields
 *       20     4  reserved, 0
 *       24     -  fields, back to back, each:
 *                   u32 name length L (1..CKPT_MAX_NAME), L bytes of name (no NUL),
 *                   u32 type (1 = u64, 2 = f64, 3 = f32), u64 count, count values (8, 8 or 4 bytes)
 *      end     8  FNV-1a 64 (data_fnv1a64) of every byte before it
 * Names are unique within a file. Files are written atomically (data_write_file_atomic: a reader
 * sees the old file or the new one, never a torn one).
 *
 * Errors: a gpt_status and, when err is not NULL, a one-line message that names the file and the
 * problem (truncated, wrong magic, wrong version, bad checksum, malformed field, missing field,
 * wrong type or count). Nothing here calls exit().
 */
#ifndef GPT_CHECKPOINT_H
#define GPT_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CKPT_MAGIC_BYTES "RNCK"
#define CKPT_VERSION 1u
#define CKPT_HEADER_BYTES 24u
#define CKPT_TRAILER_BYTES 8u
#define CKPT_MAX_NAME 127u

typedef enum { CKPT_U64 = 1, CKPT_F64 = 2, CKPT_F32 = 3 } ckpt_type;

/* ---- writing: collect fields in memory, then write the file atomically ---------------- */
typedef struct {
    unsigned char *buf;
    size_t len, cap;
    uint32_t n_fields;
    int failed; /* an allocation failed: ckpt_write_file reports GPT_ERR_NOMEM */
} ckpt_writer;

void ckpt_writer_init(ckpt_writer *w);
void ckpt_put_u64(ckpt_writer *w, const char *name, const uint64_t *v, size_t count);
void ckpt_put_f64(ckpt_writer *w, const char *name, const double *v, size_t count);
void ckpt_put_f32(ckpt_writer *w, const char *name, const float *v, size_t count);
/* One-value conveniences. */
void ckpt_put_u64_1(ckpt_writer *w, const char *name, uint64_t v);
void ckpt_put_f64_1(ckpt_writer *w, const char *name, double v);
/* Data-parallel runs (train.c): a rank serialises the fields of the state it owns into its own
 * writer; ckpt_writer_body gives those encoded fields (bytes after the header; 0 bytes for an
 * empty or failed writer) and rank 0 appends them to its writer with ckpt_put_raw, so the file
 * is byte for byte the one a single process writes. */
size_t ckpt_writer_body(const ckpt_writer *w, const unsigned char **fields);
void ckpt_put_raw(ckpt_writer *w, const unsigned char *fields, size_t len, uint32_t n_fields);
/* Finishes the image (header, checksum) into a malloc'd buffer (freed by the caller). */
gpt_status ckpt_finish(ckpt_writer *w, unsigned char **image, size_t *len);
/* ckpt_finish + data_write_file_atomic. */
gpt_status ckpt_write_file(ckpt_writer *w, const char *path, char *err, size_t errlen);
void ckpt_writer_free(ckpt_writer *w);

/* ---- reading ------------------------------------------------------------------------------ */
typedef struct {
    const char *name;   /* points into the image, not NUL-terminated: name_len bytes */
    uint32_t name_len;
    ckpt_type type;
    uint64_t count;
    const unsigned char *data;
} ckpt_field;

typedef struct {
    unsigned char *image; /* owned when read from a file (ckpt_read_file) */
    size_t len;
    ckpt_field *fields;
    uint32_t n_fields;
    char file[256];       /* for messages */
} ckpt_reader;

/* Validates a whole image (checks in order: length, magic, version, declared size, checksum,
 * every field) and indexes its fields. The image must outlive the reader; it is not copied.
 * name is used in messages. On error *r is untouched. */
gpt_status ckpt_parse(ckpt_reader *r, const unsigned char *image, size_t len, const char *name,
                       char *err, size_t errlen);
/* data_read_file + ckpt_parse; the reader owns the image. */
gpt_status ckpt_read_file(ckpt_reader *r, const char *path, char *err, size_t errlen);
/* Copies field `name` into out, which must hold exactly `count` values of the type: MISSING if
 * there is no such field, MISMATCH for another type or count. out is written only on success. */
gpt_status ckpt_get_u64(const ckpt_reader *r, const char *name, uint64_t *out, size_t count,
                         char *err, size_t errlen);
gpt_status ckpt_get_f64(const ckpt_reader *r, const char *name, double *out, size_t count,
                         char *err, size_t errlen);
gpt_status ckpt_get_f32(const ckpt_reader *r, const char *name, float *out, size_t count,
                         char *err, size_t errlen);
/* Values [first, first + count) of an f32 field that must hold exactly `total` values (a rank's
 * rows of a vocabulary-sharded tensor). */
gpt_status ckpt_get_f32_range(const ckpt_reader *r, const char *name, size_t total, size_t first, size_t count,
                               float *out, char *err, size_t errlen);
/* Checks field `name` without copying it: MISSING if absent, MISMATCH for another type or
 * count (as the getters); with finite = CKPT_FINITE (1), CORRUPT if an f32 / f64 value is NaN or
 * Inf, with CKPT_NONNEGATIVE also if one is below zero (a second moment); the message names the
 * file, the field and the index. Lets a reader check a whole file before it allocates what the
 * fields will be copied into. */
enum { CKPT_FINITE = 1, CKPT_NONNEGATIVE = 2 };
gpt_status ckpt_check_field(const ckpt_reader *r, const char *name, ckpt_type type, size_t count, int finite,
                             char *err, size_t errlen);
/* 1 if the field exists. */
int ckpt_has(const ckpt_reader *r, const char *name);
void ckpt_reader_free(ckpt_reader *r);

#ifdef __cplusplus
}
#endif
#endif /* GPT_CHECKPOINT_H */
