/* tokenizer.c - byte-level BPE (see tokenizer.h for the format and the rules). */
#include "tokenizer.h"
#include "data.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOK__EMPTY_KEY (~(uint64_t)0)
#define TOK__NO_RANK 0xffffffffu

/* data_write_file_atomic's status as the tokenizer's save reports it (a file too large to hold
 * is out of memory; anything else is an I/O error) */
static gpt_status tok__from_data_status(gpt_status s)
{
    switch (s) {
    case GPT_OK:
    case GPT_ERR_NULL:
    case GPT_ERR_NOMEM:
    case GPT_ERR_IO: return s;
    case GPT_ERR_SIZE: return GPT_ERR_NOMEM;
    default: return GPT_ERR_IO;
    }
}

/* A 64-bit finaliser (splitmix64's) used to spread keys over the hash tables. */
static uint64_t tok__mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static uint64_t tok__key(uint32_t l, uint32_t r) { return ((uint64_t)l << 32) | r; }

/* ---- pre-splitting --------------------------------------------------------------------- */

enum { TOK__LETTER, TOK__DIGIT, TOK__SPACE, TOK__OTHER };

static int tok__class(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80) return TOK__LETTER;
    if (c >= '0' && c <= '9') return TOK__DIGIT;
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') return TOK__SPACE;
    return TOK__OTHER;
}

/* End (exclusive) of the chunk that starts at i < n. */
static size_t tok__chunk_end(const unsigned char *s, size_t n, size_t i)
{
    size_t j = i;
    int cls;
    if (s[i] == ' ' && i + 1 < n && tok__class(s[i + 1]) != TOK__SPACE) {
        j = i + 1;
        cls = tok__class(s[j]);
    } else {
        cls = tok__class(s[i]);
    }
    while (j < n && tok__class(s[j]) == cls) j++;
    if (cls == TOK__SPACE && j < n && j - i > 1 && s[j - 1] == ' ') j--; /* leave ' ' for the next word */
    if (j - i > TOK_MAX_CHUNK) j = i + TOK_MAX_CHUNK;
    return j;
}

/* ---- building a tokenizer from merges -------------------------------------------------- */

static uint32_t tok__rank(const tok_tokenizer *t, uint32_t l, uint32_t r)
{
    uint64_t key = tok__key(l, r);
    uint32_t h = (uint32_t)tok__mix(key) & t->rank_mask;
    while (t->rank_keys[h] != TOK__EMPTY_KEY) {
        if (t->rank_keys[h] == key) return t->rank_vals[h];
        h = (h + 1) & t->rank_mask;
    }
    return TOK__NO_RANK;
}

static gpt_status tok__build(tok_tokenizer *out, const uint32_t *merges, uint32_t nm, const char *name,
                             char *err, size_t errlen)
{
    tok_tokenizer t;
    uint32_t i, vocab, cap;
    size_t total = 0;
    if (nm > TOK_MAX_VOCAB - 257) {
        gpt_errorf(err, errlen, "%s: %lu merges exceed the limit %lu", name, (unsigned long)nm,
                 (unsigned long)(TOK_MAX_VOCAB - 257));
        return GPT_ERR_CORRUPT;
    }
    vocab = 256 + nm + 1;
    for (i = 0; i < nm; i++) {
        if (merges[2 * i] >= 256 + i || merges[2 * i + 1] >= 256 + i) {
            gpt_errorf(err, errlen, "%s: corrupt: merge %lu uses id %lu, which is not defined before it", name,
                     (unsigned long)i,
                     (unsigned long)(merges[2 * i] >= 256 + i ? merges[2 * i] : merges[2 * i + 1]));
            return GPT_ERR_CORRUPT;
        }
    }
    memset(&t, 0, sizeof t);
    t.vocab_size = vocab;
    t.n_merges = nm;
    t.eot = vocab - 1;
    for (cap = 16; cap < 2 * nm + 2; cap *= 2) {}
    t.rank_mask = cap - 1;
    t.merges = (uint32_t *)malloc(2 * (size_t)nm * sizeof(uint32_t) + 1);
    t.tok_start = (uint32_t *)malloc(((size_t)vocab + 1) * sizeof(uint32_t));
    t.rank_keys = (uint64_t *)malloc((size_t)cap * sizeof(uint64_t));
    t.rank_vals = (uint32_t *)malloc((size_t)cap * sizeof(uint32_t));
    if (!t.merges || !t.tok_start || !t.rank_keys || !t.rank_vals) goto nomem;
    if (nm) memcpy(t.merges, merges, 2 * (size_t)nm * sizeof(uint32_t));
    /* token lengths, as prefix offsets: the bytes of a merge are its two children's bytes */
    t.tok_start[0] = 0;
    for (i = 0; i < vocab; i++) {
        uint32_t len;
        if (i < 256) len = 1;
        else if (i == vocab - 1) len = 0; /* EOT */
        else {
            uint32_t l = merges[2 * (i - 256)], r = merges[2 * (i - 256) + 1];
            len = (t.tok_start[l + 1] - t.tok_start[l]) + (t.tok_start[r + 1] - t.tok_start[r]);
            if (len > TOK_MAX_CHUNK) {
                gpt_errorf(err, errlen, "%s: corrupt: token %lu would be %lu bytes, over the chunk limit %u",
                         name, (unsigned long)i, (unsigned long)len, TOK_MAX_CHUNK);
                tok_free(&t);
                return GPT_ERR_CORRUPT;
            }
        }
        t.tok_start[i + 1] = t.tok_start[i] + len;
    }
    total = t.tok_start[vocab];
    t.tok_bytes = (unsigned char *)malloc(total + 1);
    if (!t.tok_bytes) goto nomem;
    for (i = 0; i < vocab - 1; i++) {
        unsigned char *dst = t.tok_bytes + t.tok_start[i];
        if (i < 256) {
            dst[0] = (unsigned char)i;
        } else {
            uint32_t l = merges[2 * (i - 256)], r = merges[2 * (i - 256) + 1];
            uint32_t ll = t.tok_start[l + 1] - t.tok_start[l];
            memcpy(dst, t.tok_bytes + t.tok_start[l], ll);
            memcpy(dst + ll, t.tok_bytes + t.tok_start[r], t.tok_start[r + 1] - t.tok_start[r]);
        }
    }
    for (i = 0; i < cap; i++) t.rank_keys[i] = TOK__EMPTY_KEY;
    for (i = 0; i < nm; i++) {
        uint64_t key = tok__key(merges[2 * i], merges[2 * i + 1]);
        uint32_t h = (uint32_t)tok__mix(key) & t.rank_mask;
        while (t.rank_keys[h] != TOK__EMPTY_KEY) {
            if (t.rank_keys[h] == key) {
                gpt_errorf(err, errlen, "%s: corrupt: merge %lu repeats the pair (%lu, %lu) of merge %lu", name,
                         (unsigned long)i, (unsigned long)merges[2 * i], (unsigned long)merges[2 * i + 1],
                         (unsigned long)t.rank_vals[h]);
                tok_free(&t);
                return GPT_ERR_CORRUPT;
            }
            h = (h + 1) & t.rank_mask;
        }
        t.rank_keys[h] = key;
        t.rank_vals[h] = i;
    }
    *out = t;
    return GPT_OK;
nomem:
    tok_free(&t);
    gpt_errorf(err, errlen, "%s: out of memory", name);
    return GPT_ERR_NOMEM;
}

gpt_status tok_from_merges(tok_tokenizer *out, const uint32_t *merges, uint32_t n_merges, char *err, size_t errlen)
{
    if (!out || (!merges && n_merges)) {
        gpt_errorf(err, errlen, "tok_from_merges: null argument");
        return GPT_ERR_NULL;
    }
    return tok__build(out, merges, n_merges, "merges", err, errlen);
}

void tok_free(tok_tokenizer *t)
{
    if (!t) return;
    free(t->merges);
    free(t->tok_start);
    free(t->tok_bytes);
    free(t->rank_keys);
    free(t->rank_vals);
    memset(t, 0, sizeof *t);
}

/* ---- training -------------------------------------------------------------------------- */

typedef struct {
    size_t off;      /* into the id pool */
    uint32_t len;    /* current length in tokens (shrinks as merges apply) */
    uint32_t stamp;  /* last merge (1-based) that visited this word */
    uint64_t weight; /* how many times the chunk occurs */
} tok__word;

typedef struct {
    uint64_t key;
    int64_t count;   /* weighted occurrences */
    uint32_t *where; /* words that held this pair at some point (may be stale, may repeat) */
    size_t n_where, cap_where;
    uint32_t stamp;  /* last merge (1-based) that touched this count */
} tok__pair;

typedef struct {
    int64_t count;
    uint64_t key;
} tok__heapent;

typedef struct {
    /* unique chunks */
    tok__word *words;
    size_t n_words, cap_words;
    uint32_t *ids;
    size_t n_ids, cap_ids;
    uint32_t *wslot; /* word index + 1, 0 = empty */
    size_t wmask;
    /* pairs */
    tok__pair *pairs;
    size_t n_pairs, cap_pairs;
    uint32_t *pslot; /* pair index + 1, 0 = empty */
    size_t pmask;
    /* lazy max-heap of (count, key) */
    tok__heapent *heap;
    size_t n_heap, cap_heap;
    uint32_t *touched;
    size_t n_touched, cap_touched;
} tok__trainer;

static int tok__grow(void **p, size_t *cap, size_t need, size_t elem)
{
    size_t ncap;
    void *np;
    if (need <= *cap) return 1;
    ncap = *cap ? *cap : 64;
    while (ncap < need) {
        if (ncap > ((size_t)-1 / 2) / elem) return 0;
        ncap *= 2;
    }
    np = realloc(*p, ncap * elem);
    if (!np) return 0;
    *p = np;
    *cap = ncap;
    return 1;
}

static uint64_t tok__hash_bytes(const unsigned char *s, size_t n)
{
    return tok__mix(data_fnv1a64(s, n, DATA_FNV64_INIT));
}

static int tok__rehash_words(tok__trainer *tr, size_t ncap)
{
    uint32_t *slots = (uint32_t *)calloc(ncap, sizeof(uint32_t));
    size_t w;
    if (!slots) return 0;
    for (w = 0; w < tr->n_words; w++) {
        const uint32_t *ids = tr->ids + tr->words[w].off;
        unsigned char tmp[TOK_MAX_CHUNK];
        uint32_t k;
        size_t h;
        for (k = 0; k < tr->words[w].len; k++) tmp[k] = (unsigned char)ids[k];
        h = (size_t)tok__hash_bytes(tmp, tr->words[w].len) & (ncap - 1);
        while (slots[h]) h = (h + 1) & (ncap - 1);
        slots[h] = (uint32_t)(w + 1);
    }
    free(tr->wslot);
    tr->wslot = slots;
    tr->wmask = ncap - 1;
    return 1;
}

/* Counts one occurrence of the chunk s[0..n) (before any merge, ids are bytes). */
static int tok__add_chunk(tok__trainer *tr, const unsigned char *s, size_t n)
{
    size_t h, k;
    if (2 * (tr->n_words + 1) > tr->wmask + 1 && !tok__rehash_words(tr, 2 * (tr->wmask + 1))) return 0;
    h = (size_t)tok__hash_bytes(s, n) & tr->wmask;
    while (tr->wslot[h]) {
        tok__word *w = &tr->words[tr->wslot[h] - 1];
        if (w->len == n) {
            const uint32_t *ids = tr->ids + w->off;
            for (k = 0; k < n && ids[k] == s[k]; k++) {}
            if (k == n) {
                w->weight++;
                return 1;
            }
        }
        h = (h + 1) & tr->wmask;
    }
    if (tr->n_words >= 0xfffffffeu) return 0;
    if (!tok__grow((void **)&tr->words, &tr->cap_words, tr->n_words + 1, sizeof(tok__word))) return 0;
    if (!tok__grow((void **)&tr->ids, &tr->cap_ids, tr->n_ids + n, sizeof(uint32_t))) return 0;
    tr->words[tr->n_words].off = tr->n_ids;
    tr->words[tr->n_words].len = (uint32_t)n;
    tr->words[tr->n_words].stamp = 0;
    tr->words[tr->n_words].weight = 1;
    for (k = 0; k < n; k++) tr->ids[tr->n_ids + k] = s[k];
    tr->n_ids += n;
    tr->n_words++;
    tr->wslot[h] = (uint32_t)tr->n_words;
    return 1;
}

static int tok__rehash_pairs(tok__trainer *tr, size_t ncap)
{
    uint32_t *slots = (uint32_t *)calloc(ncap, sizeof(uint32_t));
    size_t p;
    if (!slots) return 0;
    for (p = 0; p < tr->n_pairs; p++) {
        size_t h = (size_t)tok__mix(tr->pairs[p].key) & (ncap - 1);
        while (slots[h]) h = (h + 1) & (ncap - 1);
        slots[h] = (uint32_t)(p + 1);
    }
    free(tr->pslot);
    tr->pslot = slots;
    tr->pmask = ncap - 1;
    return 1;
}

/* Index of the pair, inserted with count 0 when absent; -1 when out of memory. */
static long tok__pair_index(tok__trainer *tr, uint64_t key, int insert)
{
    size_t h;
    if (insert && 2 * (tr->n_pairs + 1) > tr->pmask + 1 && !tok__rehash_pairs(tr, 2 * (tr->pmask + 1))) return -1;
    h = (size_t)tok__mix(key) & tr->pmask;
    while (tr->pslot[h]) {
        if (tr->pairs[tr->pslot[h] - 1].key == key) return (long)(tr->pslot[h] - 1);
        h = (h + 1) & tr->pmask;
    }
    if (!insert) return -1;
    if (tr->n_pairs >= 0x7ffffffeu) return -1;
    if (!tok__grow((void **)&tr->pairs, &tr->cap_pairs, tr->n_pairs + 1, sizeof(tok__pair))) return -1;
    memset(&tr->pairs[tr->n_pairs], 0, sizeof(tok__pair));
    tr->pairs[tr->n_pairs].key = key;
    tr->n_pairs++;
    tr->pslot[h] = (uint32_t)tr->n_pairs;
    return (long)(tr->n_pairs - 1);
}

/* Adds delta to the pair's count, records word w in its list when add_where, and remembers the
 * pair as touched by the current merge (stamp, 1-based) so its new count is pushed once.
 * 0 when out of memory. */
static int tok__bump(tok__trainer *tr, uint64_t key, int64_t delta, uint32_t w, int add_where, uint32_t stamp)
{
    long pi = tok__pair_index(tr, key, 1);
    tok__pair *p;
    if (pi < 0) return 0;
    p = &tr->pairs[pi];
    p->count += delta;
    if (add_where) {
        if (!tok__grow((void **)&p->where, &p->cap_where, p->n_where + 1, sizeof(uint32_t))) return 0;
        p->where[p->n_where++] = w;
    }
    if (stamp && p->stamp != stamp) {
        p->stamp = stamp;
        if (!tok__grow((void **)&tr->touched, &tr->cap_touched, tr->n_touched + 1, sizeof(uint32_t))) return 0;
        tr->touched[tr->n_touched++] = (uint32_t)pi;
    }
    return 1;
}

static int tok__heap_better(const tok__heapent *a, const tok__heapent *b)
{
    return a->count > b->count || (a->count == b->count && a->key < b->key);
}

static int tok__heap_push(tok__trainer *tr, int64_t count, uint64_t key)
{
    size_t i;
    if (!tok__grow((void **)&tr->heap, &tr->cap_heap, tr->n_heap + 1, sizeof(tok__heapent))) return 0;
    i = tr->n_heap++;
    tr->heap[i].count = count;
    tr->heap[i].key = key;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        tok__heapent tmp;
        if (!tok__heap_better(&tr->heap[i], &tr->heap[parent])) break;
        tmp = tr->heap[i];
        tr->heap[i] = tr->heap[parent];
        tr->heap[parent] = tmp;
        i = parent;
    }
    return 1;
}

static tok__heapent tok__heap_pop(tok__trainer *tr)
{
    tok__heapent top = tr->heap[0];
    size_t i = 0, n;
    tr->heap[0] = tr->heap[--tr->n_heap];
    n = tr->n_heap;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, best = i;
        tok__heapent tmp;
        if (l < n && tok__heap_better(&tr->heap[l], &tr->heap[best])) best = l;
        if (r < n && tok__heap_better(&tr->heap[r], &tr->heap[best])) best = r;
        if (best == i) break;
        tmp = tr->heap[i];
        tr->heap[i] = tr->heap[best];
        tr->heap[best] = tmp;
        i = best;
    }
    return top;
}

static void tok__trainer_free(tok__trainer *tr)
{
    size_t p;
    for (p = 0; p < tr->n_pairs; p++) free(tr->pairs[p].where);
    free(tr->pairs);
    free(tr->pslot);
    free(tr->words);
    free(tr->ids);
    free(tr->wslot);
    free(tr->heap);
    free(tr->touched);
}

/* Replaces every (a, b), left to right without overlap, by c; returns the new length. */
static uint32_t tok__merge_ids(uint32_t *ids, uint32_t len, uint32_t a, uint32_t b, uint32_t c)
{
    uint32_t r = 0, w = 0;
    while (r < len) {
        if (r + 1 < len && ids[r] == a && ids[r + 1] == b) {
            ids[w++] = c;
            r += 2;
        } else {
            ids[w++] = ids[r++];
        }
    }
    return w;
}

gpt_status tok_train(tok_tokenizer *out, const unsigned char *text, size_t n, uint32_t vocab_size,
                     char *err, size_t errlen)
{
    tok__trainer tr;
    uint32_t *merges = NULL, *where = NULL;
    uint32_t nm = 0, max_merges;
    size_t i, w, p;
    gpt_status st;
    if (!out || (!text && n)) {
        gpt_errorf(err, errlen, "tok_train: null argument");
        return GPT_ERR_NULL;
    }
    if (vocab_size < 257 || vocab_size > TOK_MAX_VOCAB) {
        gpt_errorf(err, errlen, "tok_train: vocab size %lu outside [257, %lu] (256 bytes + merges + end-of-text)",
                 (unsigned long)vocab_size, (unsigned long)TOK_MAX_VOCAB);
        return GPT_ERR_DOMAIN;
    }
    memset(&tr, 0, sizeof tr);
    max_merges = vocab_size - 257;
    merges = (uint32_t *)malloc(2 * (size_t)max_merges * sizeof(uint32_t) + 1);
    if (!merges || !tok__rehash_words(&tr, 1024) || !tok__rehash_pairs(&tr, 1024)) goto nomem;

    /* 1. unique chunks with their counts */
    for (i = 0; i < n;) {
        size_t e = tok__chunk_end(text, n, i);
        if (!tok__add_chunk(&tr, text + i, e - i)) goto nomem;
        i = e;
    }
    /* 2. weighted pair counts, with the words each pair occurs in */
    for (w = 0; w < tr.n_words; w++) {
        const uint32_t *ids = tr.ids + tr.words[w].off;
        uint32_t k;
        for (k = 0; k + 1 < tr.words[w].len; k++)
            if (!tok__bump(&tr, tok__key(ids[k], ids[k + 1]), (int64_t)tr.words[w].weight, (uint32_t)w, 1, 0))
                goto nomem;
    }
    for (p = 0; p < tr.n_pairs; p++)
        if (tr.pairs[p].count > 0 && !tok__heap_push(&tr, tr.pairs[p].count, tr.pairs[p].key)) goto nomem;

    /* 3. greedy merges */
    while (nm < max_merges) {
        tok__heapent top;
        long pi = -1;
        uint32_t a, b, c, stamp = nm + 1;
        size_t j, n_where;
        int found = 0;
        while (tr.n_heap > 0) {
            top = tok__heap_pop(&tr);
            pi = tok__pair_index(&tr, top.key, 0);
            if (pi >= 0 && tr.pairs[pi].count == top.count) { /* else a stale entry */
                found = 1;
                break;
            }
        }
        if (!found || top.count < 2) break;
        a = (uint32_t)(top.key >> 32);
        b = (uint32_t)(top.key & 0xffffffffu);
        c = 256 + nm;
        merges[2 * nm] = a;
        merges[2 * nm + 1] = b;
        nm++;
        /* take the pair's word list; no new occurrence of (a, b) can appear */
        where = tr.pairs[pi].where;
        n_where = tr.pairs[pi].n_where;
        tr.pairs[pi].where = NULL;
        tr.pairs[pi].n_where = tr.pairs[pi].cap_where = 0;
        tr.n_touched = 0;
        for (j = 0; j < n_where; j++) {
            uint32_t wi = where[j], k, len;
            tok__word *word = &tr.words[wi];
            uint32_t *ids = tr.ids + word->off;
            int64_t wt = (int64_t)word->weight;
            if (word->stamp == stamp) continue; /* listed twice */
            word->stamp = stamp;
            len = word->len;
            for (k = 0; k + 1 < len && !(ids[k] == a && ids[k + 1] == b); k++) {}
            if (k + 1 >= len) continue; /* stale entry: the pair left this word earlier */
            /* remove all its pairs, merge, add all its pairs back: simple and exact */
            for (k = 0; k + 1 < len; k++)
                if (!tok__bump(&tr, tok__key(ids[k], ids[k + 1]), -wt, wi, 0, stamp)) goto nomem;
            len = tok__merge_ids(ids, len, a, b, c);
            word->len = len;
            for (k = 0; k + 1 < len; k++)
                if (!tok__bump(&tr, tok__key(ids[k], ids[k + 1]), wt, wi, ids[k] == c || ids[k + 1] == c, stamp))
                    goto nomem;
        }
        free(where);
        where = NULL;
        for (j = 0; j < tr.n_touched; j++) {
            const tok__pair *tp = &tr.pairs[tr.touched[j]];
            if (tp->count > 0 && !tok__heap_push(&tr, tp->count, tp->key)) goto nomem;
        }
    }
    tok__trainer_free(&tr);
    st = tok__build(out, merges, nm, "tok_train", err, errlen);
    free(merges);
    return st;
nomem:
    free(where);
    free(merges);
    tok__trainer_free(&tr);
    gpt_errorf(err, errlen, "tok_train: out of memory");
    return GPT_ERR_NOMEM;
}

/* ---- encode / decode ------------------------------------------------------------------- */

gpt_status tok_encode(const tok_tokenizer *t, const unsigned char *text, size_t n, uint32_t *ids,
                      size_t cap, size_t *n_ids)
{
    size_t i, pos = 0;
    if (!t || !t->rank_keys || !t->merges || !n_ids || (n && (!text || !ids))) return GPT_ERR_NULL;
    if (cap < n) return GPT_ERR_SIZE;
    for (i = 0; i < n;) {
        size_t e = tok__chunk_end(text, n, i), k;
        uint32_t *w = ids + pos;
        uint32_t len = (uint32_t)(e - i);
        for (k = 0; k < len; k++) w[k] = text[i + k];
        for (;;) {
            uint32_t best = TOK__NO_RANK;
            for (k = 0; k + 1 < len; k++) {
                uint32_t r = tok__rank(t, w[k], w[k + 1]);
                if (r < best) best = r;
            }
            if (best == TOK__NO_RANK) break;
            len = tok__merge_ids(w, len, t->merges[2 * best], t->merges[2 * best + 1], 256 + best);
        }
        pos += len;
        i = e;
    }
    *n_ids = pos;
    return GPT_OK;
}

gpt_status tok_decode(const tok_tokenizer *t, const uint32_t *ids, size_t n, unsigned char *out,
                      size_t cap, size_t *n_bytes)
{
    size_t i, total = 0;
    if (!t || !t->tok_start || !t->tok_bytes || !n_bytes || (n && !ids)) return GPT_ERR_NULL;
    for (i = 0; i < n; i++) {
        if (ids[i] >= t->vocab_size) return GPT_ERR_RANGE;
        total += t->tok_start[ids[i] + 1] - t->tok_start[ids[i]];
    }
    *n_bytes = total;
    if (total > cap) return GPT_ERR_SIZE;
    if (total && !out) return GPT_ERR_NULL;
    for (i = 0; i < n; i++) {
        uint32_t len = t->tok_start[ids[i] + 1] - t->tok_start[ids[i]];
        memcpy(out, t->tok_bytes + t->tok_start[ids[i]], len);
        out += len;
    }
    return GPT_OK;
}

const unsigned char *tok_token_bytes(const tok_tokenizer *t, uint32_t id, size_t *len)
{
    if (!t || !t->tok_start || id >= t->vocab_size) {
        if (len) *len = 0;
        return NULL;
    }
    if (len) *len = t->tok_start[id + 1] - t->tok_start[id];
    return t->tok_bytes + t->tok_start[id];
}

/* ---- files ----------------------------------------------------------------------------- */

gpt_status tok_serialize(const tok_tokenizer *t, unsigned char **buf, size_t *len, char *err, size_t errlen)
{
    size_t total, i;
    unsigned char *b;
    if (!t || !buf || !len || (!t->merges && t->n_merges)) {
        gpt_errorf(err, errlen, "tok_serialize: null argument");
        return GPT_ERR_NULL;
    }
    total = TOK_HEADER_BYTES + 8 * (size_t)t->n_merges + 8;
    b = (unsigned char *)malloc(total);
    if (!b) {
        gpt_errorf(err, errlen, "tok_serialize: out of memory");
        return GPT_ERR_NOMEM;
    }
    memcpy(b, TOK_MAGIC_BYTES, 4);
    data_put_u32le(b + 4, TOK_VERSION);
    data_put_u32le(b + 8, t->vocab_size);
    data_put_u32le(b + 12, t->n_merges);
    data_put_u32le(b + 16, t->eot);
    data_put_u32le(b + 20, TOK_MAX_CHUNK);
    for (i = 0; i < 2 * (size_t)t->n_merges; i++) data_put_u32le(b + TOK_HEADER_BYTES + 4 * i, t->merges[i]);
    data_put_u64le(b + total - 8, data_fnv1a64(b, total - 8, DATA_FNV64_INIT));
    *buf = b;
    *len = total;
    return GPT_OK;
}

gpt_status tok_parse(tok_tokenizer *out, const unsigned char *buf, size_t len, const char *name,
                     char *err, size_t errlen)
{
    uint32_t version, vocab, nm, eot, chunk, i;
    size_t want;
    uint32_t *merges;
    gpt_status st;
    if (!out || (!buf && len)) {
        gpt_errorf(err, errlen, "tok_parse: null argument");
        return GPT_ERR_NULL;
    }
    if (!name) name = "tokenizer";
    if (len < 4) {
        gpt_errorf(err, errlen, "%s: truncated: %lu bytes, too short for a tokenizer header", name, (unsigned long)len);
        return GPT_ERR_TRUNCATED;
    }
    if (memcmp(buf, TOK_MAGIC_BYTES, 4) != 0) {
        gpt_errorf(err, errlen, "%s: wrong magic (not a tokenizer file; expected \"%s\")", name, TOK_MAGIC_BYTES);
        return GPT_ERR_MAGIC;
    }
    if (len < 8) {
        gpt_errorf(err, errlen, "%s: truncated: %lu bytes, header needs %u", name, (unsigned long)len, TOK_HEADER_BYTES);
        return GPT_ERR_TRUNCATED;
    }
    version = data_get_u32le(buf + 4);
    if (version != TOK_VERSION) {
        gpt_errorf(err, errlen, "%s: unsupported tokenizer version %lu (this build reads version %u)", name,
                 (unsigned long)version, TOK_VERSION);
        return GPT_ERR_VERSION;
    }
    if (len < TOK_HEADER_BYTES + 8) {
        gpt_errorf(err, errlen, "%s: truncated: %lu bytes, header and checksum need %u", name, (unsigned long)len,
                 TOK_HEADER_BYTES + 8);
        return GPT_ERR_TRUNCATED;
    }
    nm = data_get_u32le(buf + 12);
    want = nm <= TOK_MAX_VOCAB ? TOK_HEADER_BYTES + 8 * (size_t)nm + 8 : (size_t)-1;
    /* Checksum first: a file that matches it is intact, so any later complaint is about content. */
    if (data_fnv1a64(buf, len - 8, DATA_FNV64_INIT) != data_get_u64le(buf + len - 8)) {
        if (len < want) {
            gpt_errorf(err, errlen, "%s: truncated: %lu bytes, header promises %lu merges (%lu bytes)", name,
                     (unsigned long)len, (unsigned long)nm, (unsigned long)want);
            return GPT_ERR_TRUNCATED;
        }
        gpt_errorf(err, errlen, "%s: checksum mismatch (file corrupted)", name);
        return GPT_ERR_CHECKSUM;
    }
    vocab = data_get_u32le(buf + 8);
    eot = data_get_u32le(buf + 16);
    chunk = data_get_u32le(buf + 20);
    if (len != want || nm > TOK_MAX_VOCAB - 257 || vocab != 256 + nm + 1 || eot != vocab - 1) {
        gpt_errorf(err, errlen, "%s: corrupt header: vocab_size %lu, %lu merges, eot %lu, %lu bytes", name,
                 (unsigned long)vocab, (unsigned long)nm, (unsigned long)eot, (unsigned long)len);
        return GPT_ERR_CORRUPT;
    }
    if (chunk != TOK_MAX_CHUNK) {
        gpt_errorf(err, errlen, "%s: trained with chunk limit %lu, this build uses %u", name, (unsigned long)chunk,
                 TOK_MAX_CHUNK);
        return GPT_ERR_CORRUPT;
    }
    merges = (uint32_t *)malloc(2 * (size_t)nm * sizeof(uint32_t) + 1);
    if (!merges) {
        gpt_errorf(err, errlen, "%s: out of memory", name);
        return GPT_ERR_NOMEM;
    }
    for (i = 0; i < 2 * nm; i++) merges[i] = data_get_u32le(buf + TOK_HEADER_BYTES + 4 * (size_t)i);
    st = tok__build(out, merges, nm, name, err, errlen);
    free(merges);
    return st;
}

uint64_t tok_identity(const tok_tokenizer *t)
{
    unsigned char *b;
    size_t len;
    uint64_t h;
    if (tok_serialize(t, &b, &len, NULL, 0) != GPT_OK) return 0;
    h = data_fnv1a64(b, len, DATA_FNV64_INIT);
    free(b);
    return h;
}

gpt_status tok_check_tokens(const tok_tokenizer *t, const char *tok_path, const data_tokens *d, const char *data_path,
                            char *err, size_t errlen)
{
    uint64_t id = tok_identity(t);
    if (d->vocab_size == t->vocab_size && d->tokenizer_id == id) return GPT_OK;
    gpt_errorf(err, errlen, "%s was made with another tokenizer than %s (vocabulary %lu, tokenizer %016llx; %s: "
               "vocabulary %lu, %016llx): re-run build/gpt/prepare", data_path, tok_path, (unsigned long)d->vocab_size,
               (unsigned long long)d->tokenizer_id, tok_path, (unsigned long)t->vocab_size, (unsigned long long)id);
    return GPT_ERR_MISMATCH;
}

gpt_status tok_save(const tok_tokenizer *t, const char *path, char *err, size_t errlen)
{
    unsigned char *b;
    size_t len;
    gpt_status st;
    if (!path) {
        gpt_errorf(err, errlen, "tok_save: null path");
        return GPT_ERR_NULL;
    }
    st = tok_serialize(t, &b, &len, err, errlen);
    if (st != GPT_OK) return st;
    st = tok__from_data_status(data_write_file_atomic(path, b, len, err, errlen));
    free(b);
    return st;
}

gpt_status tok_load(tok_tokenizer *out, const char *path, char *err, size_t errlen)
{
    unsigned char *b;
    size_t len;
    gpt_status st;
    if (!out || !path) {
        gpt_errorf(err, errlen, "tok_load: null argument");
        return GPT_ERR_NULL;
    }
    st = tok__from_data_status(data_read_file(path, &b, &len, err, errlen));
    if (st != GPT_OK) return st;
    st = tok_parse(out, b, len, path, err, errlen);
    free(b);
    return st;
}
