/* tokenizer.h - byte-level BPE tokenizer for the example trainer: train, encode, decode, save, load.
 *
 * Tokens: ids 0..255 are the bytes; id 256+i is merge i (the concatenation of the two tokens in
 * merges[2i], merges[2i+1]); the last id, TOK_EOT = vocab_size - 1 = 256 + n_merges, is the
 * end-of-text token that separates documents. It decodes to no bytes. Every byte string, including
 * invalid UTF-8, NUL bytes and the empty string, encodes and decodes back exactly.
 *
 * Pre-splitting (ASCII-based, GPT-2-like): the text is cut into chunks and merges never cross a
 * chunk boundary. Byte classes: letter = A-Z, a-z, '_' and every byte >= 0x80 (so UTF-8 words stay
 * whole); digit = 0-9; space = ' ', \t, \n, \r, \v, \f; other = everything else. A chunk is
 *   - an optional single ' ' followed by a run of letters, or of digits, or of "other" bytes; or
 *   - a run of spaces; when it is followed by a non-space and its last byte is ' ', that ' ' is
 *     left to start the next chunk (so " word" stays one chunk after indentation).
 * Chunks are cut at TOK_MAX_CHUNK bytes, which also bounds the byte length of any token.
 *
 * Training (tok_train): greedy BPE. Chunks are deduplicated with their counts; every merge takes
 * the adjacent pair with the highest count, ties broken by the lowest left id and then the lowest
 * right id, so training is deterministic (same text and vocab size, same merges, same file bytes).
 * Pair counts are updated incrementally (only words holding the merged pair are touched) with a
 * lazy max-heap. Training stops early when no pair occurs twice: vocab_size may then be smaller
 * than requested (read tok->vocab_size).
 *
 * Encoding applies, within each chunk, the lowest-rank mergeable pair first (all its occurrences,
 * left to right) until none applies: the same result as replaying the merges in order.
 *
 * File format (version 1), little-endian:
 *   offset  size  field
 *        0     4  magic, the bytes "RNTK"
 *        4     4  version (1)
 *        8     4  vocab_size (= 256 + n_merges + 1)
 *       12     4  n_merges
 *       16     4  eot id (= vocab_size - 1)
 *       20     4  max chunk bytes used when training (TOK_MAX_CHUNK)
 *       24  8*n_merges  merges: (left id, right id) as two u32; merge i needs ids < 256 + i
 *      end     8  FNV-1a 64 of every byte before it
 * Save is atomic (PATH.tmp, then rename). Load rejects, with a message naming the file and the
 * problem: truncation, wrong magic, wrong version, bad checksum, inconsistent counts, ids out of
 * range, duplicate merges, and tokens longer than the chunk limit.
 *
 * Errors: a gpt_status and, when err is not NULL, a one-line message in err (errlen bytes).
 * Output objects are written only on success. Nothing here calls exit().
 */
#ifndef GPT_TOKENIZER_H
#define GPT_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "data.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TOK_MAGIC_BYTES "RNTK"
#define TOK_VERSION 1u
#define TOK_HEADER_BYTES 24u
#define TOK_MAX_CHUNK 64u
#define TOK_MAX_VOCAB (1u << 20)

typedef struct {
    uint32_t vocab_size;    /* 256 + n_merges + 1 */
    uint32_t n_merges;
    uint32_t eot;           /* end-of-text id = vocab_size - 1 */
    uint32_t *merges;       /* 2 * n_merges ids */
    uint32_t *tok_start;    /* vocab_size + 1 offsets into tok_bytes: bytes of token i */
    unsigned char *tok_bytes;
    uint64_t *rank_keys;    /* open-addressing map (left << 32 | right) -> merge index; */
    uint32_t *rank_vals;    /* empty slots have key ~0 */
    uint32_t rank_mask;     /* capacity - 1 (capacity a power of two) */
} tok_tokenizer;

/* Trains on n bytes of text up to vocab_size tokens (257 <= vocab_size <= TOK_MAX_VOCAB).
 * Allocates; *out is written only on success (old contents are not freed). */
gpt_status tok_train(tok_tokenizer *out, const unsigned char *text, size_t n, uint32_t vocab_size,
                     char *err, size_t errlen);

/* Builds a tokenizer from an explicit merge list (2*n_merges ids); validates like tok_load. */
gpt_status tok_from_merges(tok_tokenizer *out, const uint32_t *merges, uint32_t n_merges,
                           char *err, size_t errlen);

/* Encodes n bytes into ids (cap >= n always suffices: a token covers at least one byte; cap < n
 * gives GPT_ERR_SIZE). *n_ids receives the count. The EOT token is never produced here: the
 * caller inserts tok->eot between documents. Does not allocate. */
gpt_status tok_encode(const tok_tokenizer *t, const unsigned char *text, size_t n, uint32_t *ids,
                      size_t cap, size_t *n_ids);

/* Decodes ids into bytes (EOT decodes to nothing). *n_bytes receives the decoded length, also
 * when it returns GPT_ERR_SIZE (cap too small; out untouched), so a first call with cap 0 sizes
 * the buffer. Any id >= vocab_size: GPT_ERR_RANGE, out untouched. */
gpt_status tok_decode(const tok_tokenizer *t, const uint32_t *ids, size_t n, unsigned char *out,
                      size_t cap, size_t *n_bytes);

/* Bytes of one token (NULL and *len = 0 when id is out of range). */
const unsigned char *tok_token_bytes(const tok_tokenizer *t, uint32_t id, size_t *len);

/* Serialises to a malloc'd buffer / parses a file image (name is for messages only). */
gpt_status tok_serialize(const tok_tokenizer *t, unsigned char **buf, size_t *len, char *err, size_t errlen);
gpt_status tok_parse(tok_tokenizer *out, const unsigned char *buf, size_t len, const char *name,
                     char *err, size_t errlen);

gpt_status tok_save(const tok_tokenizer *t, const char *path, char *err, size_t errlen);
gpt_status tok_load(tok_tokenizer *out, const char *path, char *err, size_t errlen);

/* The tokenizer's identity: FNV-1a 64 of its file image (tok_serialize), i.e. of the
 * tokenizer.bin tok_save writes. Token files record it (data.h); 0 if out of memory. */
uint64_t tok_identity(const tok_tokenizer *t);

/* Token file d, read from data_path, was made for tokenizer t, read from tok_path: same
 * vocabulary and same identity. GPT_OK, or GPT_ERR_MISMATCH with a message naming both files
 * (and telling to re-run build/gpt/prepare). */
gpt_status tok_check_tokens(const tok_tokenizer *t, const char *tok_path, const data_tokens *d, const char *data_path,
                            char *err, size_t errlen);

void tok_free(tok_tokenizer *t);

#ifdef __cplusplus
}
#endif

#endif /* GPT_TOKENIZER_H */
