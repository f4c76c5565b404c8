/* data.h - token files, batch samplers and the default corpus for the example trainer.
 *
 * Three things live here:
 *   1. File helpers shared by every binary file the trainer writes (tokenizer, token files,
 *      checkpoints): little-endian integer packing, an FNV-1a 64-bit checksum, a whole-file
 *      reader (regular files only) and an atomic writer (write PATH.tmp, fsync, rename over
 *      PATH, fsync the directory).
 *   2. Token files (train.bin / val.bin) and two samplers over them: a seeded random one for
 *      training and a sequential one for validation. A sampler's whole state is two integers,
 *      so a checkpoint can store it and resume the exact stream.
 *   3. The corpus: a list of documents read from text files or from a corpus snapshot (one file
 *      holding many documents, format below). The default corpus is the committed snapshot of
 *      the project's own text, DATA_DEMO_CORPUS (so the demo needs no download on a fresh
 *      checkout, and its answer does not drift as the project's text changes); its identity is
 *      recorded in DATA_DEMO_CORPUS_ID. A corpus's identity (data_corpus_id) is recorded in
 *      every token file made from it.
 *
 * Token file format (version 3), all integers little-endian:
 *   offset  size  field
 *        0     4  magic, the bytes "RNTD"
 *        4     4  version (2)
 *        8     4  vocab_size (every token id is < vocab_size)
 *       12     4  dtype: bytes per token, 2 (uint16, when vocab_size <= 65536) or 4 (uint32)
 *       16     8  n_tokens
 *       24     8  tokenizer_id: the identity of the tokenizer that made the tokens (tok_identity
 *                 in tokenizer.h: FNV-1a 64 of its tokenizer.bin), which the trainer compares
 *       32     8  corpus_id: the identity of the corpus the tokens come from (data_corpus_id), 0 when
 *                 unknown
 *       40     -  n_tokens tokens of dtype bytes each
 *      end     8  FNV-1a 64 of every byte before it (header and tokens)
 * Version 2 (no corpus_id, 32-byte header) is read with corpus_id 0. Version 1 (no tokenizer_id,
 * 24-byte header) is refused with a message to re-run prepare.
 *
 * Corpus snapshot format (version 1), text:
 *   line 1   "# rownorm corpus snapshot 1: documents, each as a line "@@ LENGTH NAME", LENGTH bytes, a newline"
 *   then, per document: "@@ " LENGTH (decimal) " " NAME (no newline) "
", exactly LENGTH bytes of the
 *   document, "
". Nothing else; the file ends after the last document's newline.
 *
 * Errors: every function that can fail returns a gpt_status and, when err is not NULL, writes
 * a one-line message naming the file and the problem into err (errlen bytes, NUL-terminated).
 * On error, output objects are left exactly as they were. Nothing here calls exit().
 */
#ifndef GPT_DATA_H
#define GPT_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- 1. file helpers ------------------------------------------------------------------- */

#define DATA_FNV64_INIT 0xcbf29ce484222325ULL
/* FNV-1a 64 of n bytes, continuing from h (start with DATA_FNV64_INIT). */
uint64_t data_fnv1a64(const void *p, size_t n, uint64_t h);

void     data_put_u32le(unsigned char *p, uint32_t v);
void     data_put_u64le(unsigned char *p, uint64_t v);
uint32_t data_get_u32le(const unsigned char *p);
uint64_t data_get_u64le(const unsigned char *p);

/* Reads the whole file into a malloc'd buffer (*buf, freed by the caller; a 0-byte file gives a
 * 1-byte allocation and *n = 0). Regular files only, after following symlinks (the opened
 * descriptor is fstat'ed: a device such as /dev/zero, a FIFO or a directory is GPT_ERR_IO,
 * "not a regular file"), and never more bytes than fstat's size (a file that changes size while
 * it is read is GPT_ERR_IO). On error *buf and *n are untouched. */
gpt_status data_read_file(const char *path, unsigned char **buf, size_t *n, char *err, size_t errlen);

/* Writes n bytes to TARGET.tmp, fsyncs and closes it, renames it over TARGET and fsyncs
 * TARGET's directory, so a reader sees the old file or the new one, never a torn one, and the
 * new one survives a power loss once GPT_OK is returned. TARGET is path, or, when path is a
 * symlink (or a chain of them), the file the links end at (which may not exist yet): the links
 * stay, their target is replaced. Only a regular file is ever replaced: a device node, FIFO,
 * socket or directory at TARGET is GPT_ERR_IO ("not a regular file", naming path), as is a
 * symlink or non-regular file at TARGET.tmp. On error the temp file is removed and TARGET is
 * untouched. */
gpt_status data_write_file_atomic(const char *path, const void *buf, size_t n, char *err, size_t errlen);

/* ---- 2. token files and samplers ------------------------------------------------------- */

#define DATA_MAGIC_BYTES "RNTD"
#define DATA_VERSION 3u
#define DATA_HEADER_BYTES 40u    /* version 3; version 2's is 32 */
#define DATA_TRAILER_BYTES 8u

typedef struct {
    uint32_t vocab_size;
    uint64_t tokenizer_id; /* the tokenizer the tokens were made with (tok_identity) */
    uint64_t corpus_id;    /* the corpus they come from (data_corpus_id); 0 unknown (version 2) */
    size_t n_tokens;
    uint32_t *tokens; /* malloc'd by the loader; data_tokens_free() releases it */
} data_tokens;

/* Serialises tokens (each < vocab_size, else GPT_ERR_DOMAIN) into a malloc'd buffer, with the
 * identities of their tokenizer and corpus (0: unknown). */
gpt_status data_tokens_serialize(const uint32_t *tokens, size_t n, uint32_t vocab_size, uint64_t tokenizer_id,
                                  uint64_t corpus_id, unsigned char **buf, size_t *len, char *err, size_t errlen);
/* Serialises and writes atomically. */
gpt_status data_tokens_write(const char *path, const uint32_t *tokens, size_t n, uint32_t vocab_size,
                              uint64_t tokenizer_id, uint64_t corpus_id, char *err, size_t errlen);
/* Parses a token file image; name is used in messages only. Allocates out->tokens. Checks in
 * order: length >= 4 (else TRUNCATED), magic, version, complete header, dtype, length, checksum,
 * every id < vocab_size. *out is written only on success (its old contents are not freed). */
gpt_status data_tokens_parse(data_tokens *out, const unsigned char *buf, size_t len, const char *name,
                              char *err, size_t errlen);
/* data_read_file + data_tokens_parse. */
gpt_status data_tokens_read(data_tokens *out, const char *path, char *err, size_t errlen);
void data_tokens_free(data_tokens *d);

/* Sampler state: rng is a splitmix64 counter, pos the next sequential position. Checkpoints store
 * both fields and restore them to resume the identical stream. */
typedef struct {
    uint64_t rng;
    uint64_t pos;
} data_sampler;

void data_sampler_init(data_sampler *s, uint64_t seed);

/* Random batch: B rows, each a window of T+1 consecutive tokens starting at a position drawn
 * uniformly from [0, n_tokens - T - 1]; inputs[b*T+t] = tok[start+t], targets[b*T+t] =
 * tok[start+t+1]. Needs n_tokens >= T + 1 (else GPT_ERR_SIZE) and vocab_size <= INT_MAX. Advances s->rng by B draws. Writes nothing on error. */
gpt_status data_batch_random(const data_tokens *d, data_sampler *s, int B, int T, int *inputs, int *targets);

/* Sequential batch: rows start at s->pos, s->pos + T, ..., s->pos + (B-1)T; then s->pos += B*T.
 * If the batch would run past the end (needs pos + B*T + 1 <= n_tokens) it starts over at 0.
 * For a full validation pass: set s->pos = 0 and take data_sequential_batches() batches. */
gpt_status data_batch_sequential(const data_tokens *d, data_sampler *s, int B, int T, int *inputs, int *targets);
/* Number of whole sequential batches in d: (n_tokens - 1) / (B*T), 0 if invalid. */
size_t data_sequential_batches(const data_tokens *d, int B, int T);

/* ---- 3. corpus ------------------------------------------------------------------------- */

typedef struct {
    unsigned char *text; /* all documents back to back (no separator) */
    size_t n_bytes;
    size_t n_docs;
    size_t *doc_start;   /* n_docs + 1 offsets into text; document i is [doc_start[i], doc_start[i+1]) */
} data_corpus;

/* The default corpus: the snapshot of the project's own text committed for the demo (relative to
 * the repository root), and its identity (data_corpus_id of its documents). The demo's committed
 * table (examples/gpt/results/demo/table.md) was made from exactly this corpus; prepare refuses
 * a snapshot whose identity differs (examples/gpt/corpus/README.md says how to make a new one). */
#define DATA_DEMO_CORPUS "examples/gpt/corpus/project-text.txt"
#define DATA_DEMO_CORPUS_ID 0x0af5d03aa0cbd0f1ULL

/* The project's own text at this commit, relative to the repository root, NULL-terminated: the
 * headers, README, docs and the example trainer's sources (missing ones are skipped). What a new
 * snapshot is made from (prepare --write-snapshot), or, with prepare --project-text, the corpus. */
extern const char *const data_default_corpus_files[];

/* The corpus's identity: FNV-1a 64 over, per document in order, its length (8 bytes,
 * little-endian) and its bytes. Independent of where the documents were read from. */
uint64_t data_corpus_id(const data_corpus *c);
/* Appends the documents of a corpus snapshot file (format above). Strict: a malformed header,
 * length or separator is GPT_ERR_CORRUPT naming the file and line; on error c is unchanged. */
gpt_status data_corpus_add_snapshot(data_corpus *c, const char *path, char *err, size_t errlen);
/* Serialises n documents (names[i], text[i] of len[i] bytes) as a snapshot into a malloc'd
 * buffer. A name must be non-empty, without newline, at most 255 bytes (else GPT_ERR_DOMAIN). */
gpt_status data_snapshot_serialize(const char *const *names, const unsigned char *const *text, const size_t *len,
                                   size_t n, unsigned char **buf, size_t *buflen, char *err, size_t errlen);

/* Appends the file as one document. c must be zero-initialised or hold documents already.
 * On error c is unchanged. */
gpt_status data_corpus_add_file(data_corpus *c, const char *path, char *err, size_t errlen);
/* Appends every file of data_default_corpus_files that exists under root (files that cannot be
 * opened are skipped); GPT_ERR_IO if none was found. The project's text as it is now (it changes
 * with every commit): the demo uses the snapshot instead (data_corpus_add_demo). */
gpt_status data_corpus_add_default(data_corpus *c, const char *root, char *err, size_t errlen);
/* Appends the documents of root/DATA_DEMO_CORPUS after checking that their identity is
 * DATA_DEMO_CORPUS_ID (GPT_ERR_MISMATCH, naming both, when it is not: c then holds the documents
 * it had). */
gpt_status data_corpus_add_demo(data_corpus *c, const char *root, char *err, size_t errlen);
/* A file given by a user: a corpus snapshot (its first line says so) adds its documents
 * (data_corpus_add_snapshot), any other file is one document (data_corpus_add_file). */
gpt_status data_corpus_add_input(data_corpus *c, const char *path, char *err, size_t errlen);
/* Looks for the repository root (a directory holding rownorm.h and muon.h) at ".", "..",
 * "../.." and "../../.."; writes it to out. Returns 1 when found, 0 otherwise (out = "."). */
int data_find_repo_root(char *out, size_t cap);
void data_corpus_free(data_corpus *c);

#ifdef __cplusplus
}
#endif

#endif /* GPT_DATA_H */
