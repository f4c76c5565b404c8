/* muon.h - v0.1.0 - the Muon family of optimizers (SKELETON: being written)
 *
 * #define MUON_IMPLEMENTATION in exactly one C or C++ file before including this header.
 */
#ifndef MUON_H
#define MUON_H

#include <stddef.h>

#define MUON_VERSION_MAJOR 0
#define MUON_VERSION_MINOR 1
#define MUON_VERSION_PATCH 0

#ifndef MUONDEF
#ifdef MUON_STATIC
#define MUONDEF static
#else
#define MUONDEF extern
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum muon_status {
    MUON_OK = 0,
    MUON_ERR_NULL,      /* a required pointer is NULL */
    MUON_ERR_SIZE,      /* zero or overflowing size, or ld < cols */
    MUON_ERR_NONFINITE, /* NaN or Inf in an input */
    MUON_ERR_DOMAIN,    /* parameter outside its domain */
    MUON_ERR_NOMEM,     /* allocation failed */
    MUON_ERR_ALIAS      /* buffers overlap where the function does not allow it */
} muon_status;

MUONDEF const char *muon_status_string(muon_status s);

/* ---- SGEMM / SSYRK (row-major) -------------------------------------------------------- */
typedef enum muon_transpose { MUON_NO_TRANS = 0, MUON_TRANS = 1 } muon_transpose;

/* C (m x n) = alpha * op(A) * op(B) + beta * C; op(A) is m x k, op(B) is k x n.
 * beta == 0: C is not read (NaN in C does not propagate). C must not overlap A or B. */
MUONDEF muon_status muon_sgemm(muon_transpose ta, muon_transpose tb, size_t m, size_t n, size_t k,
                               float alpha, const float *A, size_t lda, const float *B, size_t ldb,
                               float beta, float *C, size_t ldc);
/* C (n x n) = alpha * op(A) * op(A)^T + beta * C; op(A) is n x k; both triangles written. */
MUONDEF muon_status muon_ssyrk(muon_transpose ta, size_t n, size_t k, float alpha, const float *A,
                               size_t lda, float beta, float *C, size_t ldc);
/* Bytes of packing workspace the _ws forms need to run on up to `threads` threads. */
MUONDEF size_t muon_gemm_workspace_size(int threads);
MUONDEF muon_status muon_sgemm_ws(muon_transpose ta, muon_transpose tb, size_t m, size_t n, size_t k,
                                  float alpha, const float *A, size_t lda, const float *B, size_t ldb,
                                  float beta, float *C, size_t ldc, void *ws, size_t ws_bytes);
MUONDEF muon_status muon_ssyrk_ws(muon_transpose ta, size_t n, size_t k, float alpha, const float *A,
                                  size_t lda, float beta, float *C, size_t ldc, void *ws, size_t ws_bytes);

#ifdef __cplusplus
}
#endif
#endif /* MUON_H */

#ifdef MUON_IMPLEMENTATION
#ifndef MUON_IMPLEMENTATION_DONE
#define MUON_IMPLEMENTATION_DONE

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(MUON_MALLOC) && defined(MUON_FREE)
#elif !defined(MUON_MALLOC) && !defined(MUON_FREE)
#define MUON_MALLOC(sz) malloc(sz)
#define MUON_FREE(p) free(p)
#else
#error "muon.h: define both MUON_MALLOC and MUON_FREE, or neither"
#endif

MUONDEF const char *muon_status_string(muon_status s)
{
    switch (s) {
    case MUON_OK: return "ok";
    case MUON_ERR_NULL: return "a required pointer is NULL";
    case MUON_ERR_SIZE: return "zero or overflowing size, or leading dimension smaller than cols";
    case MUON_ERR_NONFINITE: return "input contains NaN or Inf";
    case MUON_ERR_DOMAIN: return "parameter outside its domain";
    case MUON_ERR_NOMEM: return "out of memory";
    case MUON_ERR_ALIAS: return "buffers overlap where not allowed";
    }
    return "unknown muon_status";
}

/* ---- SGEMM / SSYRK section (developed in wip/muon_gemm.inc, inlined at release) ---- */
#include "wip/muon_gemm.inc"

#endif /* MUON_IMPLEMENTATION_DONE */
#endif /* MUON_IMPLEMENTATION */
