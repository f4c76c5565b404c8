/* arena.h - the static arena the Cortex-M programs give the headers (MUON_MALLOC / RN_MALLOC,
 * set on the command line by tests/rel_cortexm.sh): first fit, blocks coalesced on free, the
 * peak in use recorded. Its size is fixed at build time (CM_ARENA_BYTES). */
#ifndef CM_ARENA_H
#define CM_ARENA_H
#include <stddef.h>
void *cm_malloc(size_t bytes);
void cm_free(void *p);
void cm_arena_reset_peak(void);
size_t cm_arena_peak(void);   /* the most bytes in use at once since the reset, headers included */
size_t cm_arena_in_use(void);
size_t cm_arena_bytes(void);  /* the arena's size */
void cm_arena_limit(size_t bytes); /* allocate as if the arena had this many bytes (0: all) */
#endif
