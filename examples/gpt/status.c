/* status.c - gpt_status_string, the error-formatting helpers, the splitmix64 stream and the
 * clock (status.h). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "status.h"

#include <stdio.h>
#include <time.h>

const char *gpt_status_string(gpt_status s)
{
    switch (s) {
    case GPT_OK: return "ok";
    case GPT_ERR_NULL: return "a required pointer is NULL";
    case GPT_ERR_CONFIG: return "config field out of range or inconsistent";
    case GPT_ERR_SIZE: return "size zero, too small, overflowing or above the capacity";
    case GPT_ERR_TOKEN: return "token id outside [0, vocab_size)";
    case GPT_ERR_STATE: return "call out of order";
    case GPT_ERR_NOMEM: return "out of memory";
    case GPT_ERR_BACKEND: return "backend failure";
    case GPT_ERR_DOMAIN: return "parameter out of range";
    case GPT_ERR_RANGE: return "value out of range";
    case GPT_ERR_IO: return "I/O error";
    case GPT_ERR_TRUNCATED: return "file truncated";
    case GPT_ERR_MAGIC: return "not a file of the expected kind (wrong magic)";
    case GPT_ERR_VERSION: return "unsupported file version";
    case GPT_ERR_CHECKSUM: return "checksum mismatch";
    case GPT_ERR_CORRUPT: return "malformed content";
    case GPT_ERR_MISSING: return "a required field is missing";
    case GPT_ERR_MISMATCH: return "a field has the wrong type or size";
    case GPT_ERR_COMM: return "communication between ranks failed";
    case GPT_ERR_PEER: return "another rank failed";
    }
    return "unknown gpt_status";
}

void gpt_verrorf(char *err, size_t errlen, const char *fmt, va_list ap)
{
    if (err && errlen) vsnprintf(err, errlen, fmt, ap);
}

void gpt_errorf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gpt_verrorf(err, errlen, fmt, ap);
    va_end(ap);
}

gpt_status gpt_fail(char *err, size_t errlen, gpt_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gpt_verrorf(err, errlen, fmt, ap);
    va_end(ap);
    return s;
}

uint64_t gpt_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

double gpt_now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
