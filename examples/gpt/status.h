/* status.h - the trainer's one status type and its error messages (status.c).
 *
 * Every part of the trainer (model and backends, checkpoints, token files, tokenizer, plots)
 * returns a gpt_status; gpt_status_string names it. A function that also takes (err, errlen)
 * writes a message there that says what and where (a file, a field, a flag): gpt_fail formats
 * it and returns the status (gpt_errorf formats it alone, returning nothing).
 *
 * Beside it, the two small tools every part shares (status.c is linked into every binary): the
 * splitmix64 stream (weights, the data sampler, text sampling) and the monotonic clock.
 */
#ifndef GPT_STATUS_H
#define GPT_STATUS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gpt_status {
    GPT_OK = 0,
    GPT_ERR_NULL,      /* a required pointer is NULL */
    GPT_ERR_CONFIG,    /* a config field is out of range or inconsistent (see gpt_config_resolve) */
    GPT_ERR_SIZE,      /* a size is zero, too small, overflowing, or above a capacity */
    GPT_ERR_TOKEN,     /* a token id is outside [0, vocab_size) */
    GPT_ERR_STATE,     /* call out of order (e.g. backward without a forward with targets) */
    GPT_ERR_NOMEM,     /* allocation failed */
    GPT_ERR_BACKEND,   /* the backend failed (a device error; the CPU backend never returns it) */
    GPT_ERR_DOMAIN,    /* a parameter is out of range (B, T, a fraction, a vocabulary size, ...) */
    GPT_ERR_RANGE,     /* a value is out of range (a token id given to decode) */
    GPT_ERR_IO,        /* open/read/write/rename failed */
    GPT_ERR_TRUNCATED, /* a file is shorter than its header says */
    GPT_ERR_MAGIC,     /* not a file of the expected kind */
    GPT_ERR_VERSION,   /* a file of an unsupported version */
    GPT_ERR_CHECKSUM,  /* the content does not match the stored checksum */
    GPT_ERR_CORRUPT,   /* checksum fine but the content is malformed */
    GPT_ERR_MISSING,   /* a field the reader needs is absent */
    GPT_ERR_MISMATCH,  /* a field has another type or count than the reader expects */
    GPT_ERR_COMM,      /* a communication between ranks failed (MPI, NCCL; comm.h) */
    GPT_ERR_PEER       /* another rank failed (its own message says why) */
} gpt_status;

const char *gpt_status_string(gpt_status s);

/* Formats a message into err (nothing when err is NULL or errlen is 0; always terminated) and
 * returns s: `return gpt_fail(err, errlen, GPT_ERR_IO, "%s: ...", path);`. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 4, 5)))
#endif
gpt_status gpt_fail(char *err, size_t errlen, gpt_status s, const char *fmt, ...);
/* The message alone (as gpt_fail), where the status is decided apart from it. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
void gpt_errorf(char *err, size_t errlen, const char *fmt, ...);
void gpt_verrorf(char *err, size_t errlen, const char *fmt, va_list ap);

/* splitmix64: advances *state by the golden-ratio increment and returns its mix, a tiny,
 * well-mixed 64-bit stream (checkpoints store the state: the sequence is part of the format). */
uint64_t gpt_splitmix64(uint64_t *state);
/* Seconds on the monotonic clock (CLOCK_MONOTONIC; only differences mean anything). */
double gpt_now_seconds(void);

#ifdef __cplusplus
}
#endif
#endif /* GPT_STATUS_H */
