/* gpt_test.h - helpers shared by the trainer's tests (after tests/test.h). */
#ifndef GPT_TEST_H
#define GPT_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"
#include "status.h"

/* A parser of a file image into *out (data_tokens_parse, tok_parse, ...), behind a void * so that
 * one checker serves them all; name is the file name its messages must carry. */
typedef gpt_status (*gt_parse_fn)(void *out, const unsigned char *buf, size_t len, const char *name, char *err,
                                  size_t errlen);

/* Parses a damaged image into an object of `size` bytes poisoned with 0x5A: 1 when the parser
 * returns `want`, leaves the object byte-for-byte untouched, and names the file (and `word`, when
 * given) in its message; otherwise prints what it got and returns 0. */
static inline int gt_bad_case(gt_parse_fn parse, size_t size, const char *name, const unsigned char *buf, size_t len,
                              gpt_status want, const char *word)
{
    unsigned char *out = (unsigned char *)malloc(2 * size), *before = out + size;
    char err[256];
    gpt_status st;
    int ok;
    if (!out) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    memset(out, 0x5A, size);
    memcpy(before, out, size);
    err[0] = 0;
    st = parse(out, buf, len, name, err, sizeof err);
    ok = st == want && memcmp(out, before, size) == 0 && strstr(err, name) != NULL &&
         (!word || strstr(err, word) != NULL);
    if (!ok)
        fprintf(stderr, "  bad_case len %lu: status %s (want %s), message \"%s\"\n", (unsigned long)len,
                gpt_status_string(st), gpt_status_string(want), err);
    free(out);
    return ok;
}

/* Defines `static int bad_case(buf, len, want, word)`: gt_bad_case with PARSE, a parser of
 * objects of TYPE (data_tokens_parse, tok_parse, ...), on an image named NAME. */
#define GT_BAD_CASE(PARSE, TYPE, NAME)                                                                   \
    static gpt_status gt__parse(void *out, const unsigned char *buf, size_t len, const char *name, char *err, \
                                size_t errlen)                                                           \
    {                                                                                                    \
        return PARSE((TYPE *)out, buf, len, name, err, errlen);                                          \
    }                                                                                                    \
    static int bad_case(const unsigned char *buf, size_t len, gpt_status want, const char *word)         \
    {                                                                                                    \
        return gt_bad_case(gt__parse, sizeof(TYPE), NAME, buf, len, want, word);                         \
    }

/* Re-seals an edited image of len bytes: its last 8 bytes become the FNV-1a 64 checksum of the
 * others (the trailer of token files and tokenizer files), so that a parser gets past the
 * checksum to the damage under test. */
static inline void gt_refresh_checksum(unsigned char *b, size_t len)
{
    data_put_u64le(b + len - 8, data_fnv1a64(b, len - 8, DATA_FNV64_INIT));
}

#endif
