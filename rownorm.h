/* rownorm.h - v0.1.0 - geometry of the language-model head (SKELETON: being written)
 *
 * #define ROWNORM_IMPLEMENTATION in exactly one C or C++ file before including this header.
 */
#ifndef ROWNORM_H
#define ROWNORM_H

#include <stddef.h>

#define RN_VERSION_MAJOR 0
#define RN_VERSION_MINOR 1
#define RN_VERSION_PATCH 0

#ifndef RNDEF
#ifdef RN_STATIC
#define RNDEF static
#else
#define RNDEF extern
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rn_status {
    RN_OK = 0,
    RN_ERR_NULL,        /* a required pointer is NULL */
    RN_ERR_SIZE,        /* zero or overflowing size, or ld < cols */
    RN_ERR_NONFINITE,   /* NaN or Inf in an input */
    RN_ERR_DOMAIN,      /* parameter outside its domain (p <= 0, beta outside [0,1), lr < 0, ...) */
    RN_ERR_NOMEM,       /* allocation failed */
    RN_ERR_ALIAS,       /* buffers overlap where the function does not allow it */
    RN_ERR_NOCONVERGE   /* an iterative solver did not reach its certified tolerance */
} rn_status;

RNDEF const char *rn_status_string(rn_status s);

/* (the certified exact solver of the diameter-constrained step, SPEC 1.4) */
#include "wip/rownorm_exact_decl.inc"

#ifdef __cplusplus
}
#endif
#endif /* ROWNORM_H */

#ifdef ROWNORM_IMPLEMENTATION
#ifndef ROWNORM_IMPLEMENTATION_DONE
#define ROWNORM_IMPLEMENTATION_DONE

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(RN_MALLOC) && defined(RN_FREE)
#elif !defined(RN_MALLOC) && !defined(RN_FREE)
#define RN_MALLOC(sz) malloc(sz)
#define RN_FREE(p) free(p)
#else
#error "rownorm.h: define both RN_MALLOC and RN_FREE, or neither"
#endif

RNDEF const char *rn_status_string(rn_status s)
{
    switch (s) {
    case RN_OK: return "ok";
    case RN_ERR_NULL: return "a required pointer is NULL";
    case RN_ERR_SIZE: return "zero or overflowing size, or leading dimension smaller than cols";
    case RN_ERR_NONFINITE: return "input contains NaN or Inf";
    case RN_ERR_DOMAIN: return "parameter outside its domain";
    case RN_ERR_NOMEM: return "out of memory";
    case RN_ERR_ALIAS: return "buffers overlap where not allowed";
    case RN_ERR_NOCONVERGE: return "solver did not reach its certified tolerance";
    }
    return "unknown rn_status";
}

#include "wip/rownorm_exact_impl.inc"

#endif /* ROWNORM_IMPLEMENTATION_DONE */
#endif /* ROWNORM_IMPLEMENTATION */
