/* arena.c - see arena.h. The arena is one array; every block starts with a header (its size,
 * headers included, and whether it is in use); blocks tile the array, so coalescing is a walk. */
#include "arena.h"
#include <stdint.h>

#ifndef CM_ARENA_BYTES
#define CM_ARENA_BYTES 65536
#endif
#ifdef CM_ARENA_SECTION /* a large arena lives in the other SSRAM bank (link.ld) */
__attribute__((section(".cm_big"), aligned(8)))
#else
__attribute__((aligned(8)))
#endif
static unsigned char cm_arena[CM_ARENA_BYTES];

typedef struct cm_hdr {
    uint32_t size; /* of the block, this header included; a multiple of 8 */
    uint32_t used;
} cm_hdr;

static int cm_ready;
static size_t cm_use, cm_peak, cm_lim = CM_ARENA_BYTES;

static cm_hdr *cm_at(size_t off) { return (cm_hdr *)(void *)(cm_arena + off); }

void *cm_malloc(size_t bytes)
{
    size_t off = 0, need;
    if (!cm_ready) {
        cm_at(0)->size = CM_ARENA_BYTES;
        cm_at(0)->used = 0;
        cm_ready = 1;
    }
    if (bytes == 0 || bytes > CM_ARENA_BYTES) return NULL;
    need = (bytes + sizeof(cm_hdr) + 7u) & ~(size_t)7u;
    if (cm_use + need > cm_lim) return NULL;
    while (off < CM_ARENA_BYTES) {
        cm_hdr *h = cm_at(off);
        if (!h->used && h->size >= need) {
            if (h->size - need >= 16u) { /* split off the rest */
                cm_hdr *r = cm_at(off + need);
                r->size = h->size - (uint32_t)need;
                r->used = 0;
                h->size = (uint32_t)need;
            }
            h->used = 1;
            cm_use += h->size;
            if (cm_use > cm_peak) cm_peak = cm_use;
            return h + 1;
        }
        off += h->size;
    }
    return NULL;
}

void cm_free(void *p)
{
    size_t off = 0;
    cm_hdr *h;
    if (!p) return;
    h = (cm_hdr *)p - 1;
    h->used = 0;
    cm_use -= h->size;
    while (off < CM_ARENA_BYTES) { /* merge every run of free blocks */
        cm_hdr *a = cm_at(off);
        if (!a->used)
            while (off + a->size < CM_ARENA_BYTES && !cm_at(off + a->size)->used) a->size += cm_at(off + a->size)->size;
        off += a->size;
    }
}

void cm_arena_reset_peak(void) { cm_peak = cm_use; }
size_t cm_arena_peak(void) { return cm_peak; }
size_t cm_arena_in_use(void) { return cm_use; }
size_t cm_arena_bytes(void) { return CM_ARENA_BYTES; }
void cm_arena_limit(size_t bytes) { cm_lim = bytes ? bytes : CM_ARENA_BYTES; }
