/* rownorm.h - v0.3.0 - geometry of the language-model head: Hilbert distances, exact row
 * diameter, Hilbert RMS, projected RowNorm and the RowNorm head optimizer (SPEC.md section 1).
 *
 * CONTENTS: every banner of this file ("---- title ----", or a "====" line and a one-line
 * title), numbered in the order of the file (search for a title to find it; a title's own
 * number, 1.1 to 1.5b, is its section of SPEC.md), and under each banner of the declarations
 * the public functions it declares, in their order. tests/rel_contents.sh holds this list to
 * the file.
 *
 *   Declarations (before the first banner: the version, RNDEF, rn_status and the conventions,
 *   rn_status_string)
 *     1. 1.1 Hilbert projective distance
 *          rn_hilbert_logits, rn_hilbert_probs, rn_tv_bound
 *     2. 1.2 Row diameter
 *          rn_row_diameter, rn_row_diameter_workspace_size, rn_row_diameter_ws
 *     3. 1.2b The exact diameter with the rows split across processes
 *          rn_diameter_best_none, rn_diameter_best_merge, rn_row_diameter_pair_workspace_size,
 *          rn_row_diameter_pair_ws, rn_row_diameter_pair, rn_diameter_ring_rounds,
 *          rn_diameter_ring, rn_row_diameter_bounds, rn_row_diameter_bounds_workspace_size,
 *          rn_row_diameter_bounds_ws, rn_worst_hidden_state
 *     4. 1.3 Hilbert RMS
 *          rn_hilbert_rms, rn_hilbert_rms_workspace_size, rn_hilbert_rms_partial_ws,
 *          rn_hilbert_rms_center_sums, rn_hilbert_rms_partial_centered_ws,
 *          rn_hilbert_rms_from_range
 *     5. 1.4 Projected RowNorm
 *          rn_projected_rownorm, rn_projected_rownorm_workspace_size, rn_projected_rownorm_ws
 *     6. 1.5 The RowNorm head optimizer
 *          rn_rownorm_default, rn_rownorm_config_resolve, rn_rownorm_init,
 *          rn_rownorm_init_workspace_size, rn_rownorm_init_ws, rn_rownorm_step,
 *          rn_rownorm_sync, rn_rownorm_free (and RN_CHUNK_ROWS, the step's chunk size)
 *     7. 1.5b The RowNorm step with the vocabulary split across processes
 *          rn_rownorm_shard_exchange_size, rn_rownorm_shard_begin, rn_rownorm_shard_middle,
 *          rn_rownorm_shard_finish
 *     8. Certified exact diameter-constrained steepest step (SPEC 1.4), small V
 *          rn_exact_step_workspace_size, rn_exact_step_ws, rn_exact_step
 *
 *   Implementation (#ifdef ROWNORM_IMPLEMENTATION; before the first banner: includes,
 *   allocator, assertions, SIMD selection, rn_status_string). The declarations' order; 1.2b
 *   is implemented within 1.2.
 *     9. validation helpers
 *    10. Kernels
 *    11.   SIMD layer
 *    12.   panel micro-kernels (per ISA, BLIS-style register blocks)
 *    13.   int8 tile products (the exact diameter's int8 screen)
 *    14. 1.1 Hilbert distance
 *    15. 1.2 Row diameter
 *    16.   threads on a shared machine
 *            the thread-team rule of every team region of this file (docs/embedding.md)
 *    17. 1.3 Hilbert RMS
 *    18. 1.4 Projected RowNorm
 *    19. 1.5 RowNorm optimizer
 *          the step's two projections: "The two projections of the RowNorm step"
 *    20. 1.5b the sharded step
 *    21. Certified exact diameter-constrained steepest step (SPEC 1.4): implementation
 * Long-form API: docs/api-rownorm.md; numerics and measurements: docs/numerics.md;
 * changes: CHANGELOG.md.
 *
 * #define ROWNORM_IMPLEMENTATION in exactly one C or C++ file before including this header.
 * It needs <math.h> (link -lm).
 *
 * Usage:
 *     #define ROWNORM_IMPLEMENTATION
 *     #include "rownorm.h"
 *
 *     rn_rownorm_state st;
 *     rn_rownorm_config cfg = rn_rownorm_default();   // lr 3.2e-3, beta 0.95, eps 1e-8
 *     rn_rownorm_init(&st, V, d);                     // momentum B = 0, t = 0
 *     for (...) rn_rownorm_step(&st, &cfg, U, d, G, d, RN__NULL, 0);
 *     double D; size_t i, j;
 *     rn_row_diameter(S, V, d, d, &D, &i, &j);       // exact D(S) and a maximising pair
 *     rn_rownorm_free(&st);
 *
 * Compile-time options (define before the implementation include):
 *     RN_STATIC           all functions static
 *     RN_MALLOC/RN_FREE   allocator used by the functions documented as allocating (both or neither)
 *     RN_ASSERT(x)        internal assertions (default: abort() on failure, no stdio; nothing
 *                         under NDEBUG); RN_ASSERT_STDIO: assert from <assert.h>
 *     RN_NO_SIMD          use the scalar reference kernels only
 *     RN_FLOAT_ARITH      for single-precision FPUs (Cortex-M4F): the RowNorm step's and projected
 *                         RowNorm's per-element arithmetic in float (centres, column sums and
 *                         per-row factors stay double); implies RN_NO_SIMD. Accuracy: docs/numerics.md
 *     RN_FORCE_AVX2       on an AVX-512 build, use the AVX2 kernels instead
 *     RN_USE_CBLAS        send the GEMM-shaped tiles (diameter, Hilbert RMS) to cblas_sgemm
 *                         (include path for <cblas.h> and a CBLAS library are then needed)
 * SIMD is chosen at compile time from the compiler's macros: __AVX512F__, then __AVX2__ with
 * __FMA__, then __ARM_NEON (AArch64); otherwise the scalar reference. The scalar reference of
 * every kernel is always compiled (internal names rn__*_scalar) and the tests hold every
 * vector path to it.
 *
 * Config defaults (one rule for both headers): a field whose zero is not a valid value treats
 * 0 as its documented default; a field whose zero is valid is literal. Every rn_rownorm_config
 * field is of the second kind (a zeroed config means lr 0, beta 0, eps 0): start from
 * rn_rownorm_default(); rn_rownorm_config_resolve says what a step will run.
 *
 * Determinism: every function gives bit-identical results across runs and across OpenMP
 * thread counts for a given build (fixed blocking, reductions combined in a fixed order).
 * Different SIMD paths may differ in the last bits (different summation order, FMA).
 *
 * Threading: functions are reentrant. Built with -fopenmp, the RowNorm step parallelises over
 * fixed chunks of RN_CHUNK_ROWS = 256 rows (partial sums combined in chunk order; one thread
 * below 65536 elements), the exact diameter over tile rows (ties broken by index) and the Hilbert RMS over
 * token panels (one parallel region; per-token max/min, which do not depend on order): results
 * are independent of the thread count. On a machine short of cores the library's team regions
 * wait for their slowest member; while they are held up its regions run on the calling thread
 * for 20 ms to 1 s at a time (docs/embedding.md, "Shared machines"); that rule's four doubles
 * (per process, OpenMP atomics) are its only global state. Without OpenMP everything is
 * single-threaded.
 *
 * Vocabulary split across processes (sections 1.2b, 1.3, 1.5b): the RowNorm step in three
 * phases around two all-reduces of column sums, the Hilbert RMS by per-token max/min, the
 * exact diameter by a block-pair kernel over a ring schedule; each equals the unsharded call
 * bit for bit when its reductions are exact (the diameter and the RMS's max/min always are).
 */
#ifndef ROWNORM_H
#define ROWNORM_H

#include <stddef.h>

#define RN_VERSION_MAJOR 0
#define RN_VERSION_MINOR 3
#define RN_VERSION_PATCH 0

#ifndef RNDEF
#ifdef RN_STATIC
#if defined(__GNUC__) || defined(__clang__)
#define RNDEF static __attribute__((unused)) /* no warning for the functions a file does not call */
#else
#define RNDEF static
#endif
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
    RN_ERR_SIZE,        /* zero or overflowing size, or ld < cols, or workspace too small */
    RN_ERR_NONFINITE,   /* NaN or Inf in an input */
    RN_ERR_DOMAIN,      /* parameter outside its domain (p <= 0, beta outside [0,1), lr < 0 or > RN_LR_MAX, ...) */
    RN_ERR_NOMEM,       /* allocation failed */
    RN_ERR_ALIAS,       /* buffers overlap where the function does not allow it */
    RN_ERR_NOCONVERGE,  /* an iterative solver did not reach its certified tolerance */
    RN_ERR_PHASE        /* a phased (sharded) call out of order: see rn_rownorm_shard_begin */
} rn_status;

/* Conventions for every function below (docs/api-rownorm.md has the long form):
 * - matrices are row-major float32 with a leading dimension ld (elements); columns past
 *   `cols` inside a leading dimension are never read or written;
 * - rows, cols, n, tokens of 0 is RN_ERR_SIZE; ld < cols or (rows-1)*ld + cols overflowing
 *   size_t bytes is RN_ERR_SIZE;
 * - every input is validated before anything is written: on any error the outputs (and the
 *   optimizer state) are untouched;
 * - float inputs are checked for NaN/Inf (RN_ERR_NONFINITE) unless stated otherwise. */

/* Name of a status code (never NULL). */
RNDEF const char *rn_status_string(rn_status s);

/* ---- 1.1 Hilbert projective distance ------------------------------------------------ */

/* d_H(softmax z0, softmax z1) = osc(z1 - z0) = max_i (z1_i - z0_i) - min_i (z1_i - z0_i),
 * computed from the logits in double (never through softmax; exact at |z| ~ 1e4).
 * RN_ERR_NULL, RN_ERR_SIZE (n = 0), RN_ERR_NONFINITE. Writes *out only on success. */
RNDEF rn_status rn_hilbert_logits(const float *z0, const float *z1, size_t n, double *out);

/* d_H(p, q) = max_i log(p_i/q_i) - min_i log(p_i/q_i) for positive vectors (scale-free:
 * p and q need not be normalised). Entries <= 0 are RN_ERR_DOMAIN, NaN/Inf RN_ERR_NONFINITE. */
RNDEF rn_status rn_hilbert_probs(const float *p, const float *q, size_t n, double *out);

/* Total-variation bound TV(p,q) <= tanh(d_H/4) (SPEC 1.1). d < 0 or NaN gives NaN. */
RNDEF double rn_tv_bound(double hilbert_distance);

/* ---- 1.2 Row diameter ---------------------------------------------------------------- */

/* D(S) = max_{i<j} ||s_i - s_j||_2 and a maximising pair (*i < *j; 0,0 when rows == 1).
 * Exact: the returned D is the double-precision distance of the returned pair, and no pair is
 * farther (relative 1e-12 beyond double rounding); ties go to the lexicographically smallest
 * pair. Rows are centred in double; pruning (radius, block and farthest-point bounds) is sound
 * with a margin from the float32 error bound of the tile products, and candidates are verified
 * in double from S itself. Any finite S works (spreads from subnormal to near FLT_MAX): the
 * tiles see the centred rows scaled by a power of two, so their float32 products neither
 * overflow nor underflow. `i`, `j` may be NULL. Allocates rn_row_diameter_workspace_size bytes
 * through RN_MALLOC (RN_ERR_NOMEM); rn_row_diameter_ws takes caller memory instead. */
RNDEF rn_status rn_row_diameter(const float *S, size_t rows, size_t cols, size_t ld,
                                double *diameter, size_t *i, size_t *j);
/* Bytes of workspace rn_row_diameter_ws needs (0 if the size overflows): the scan's data and one
 * 16 KB float tile per OpenMP thread at the query (omp_get_max_threads(); 1 inside a parallel
 * region or without OpenMP), so that no tile lives on the stack. */
RNDEF size_t rn_row_diameter_workspace_size(size_t rows, size_t cols);
/* As rn_row_diameter, with caller memory `ws` of `ws_bytes` >= the size above (any alignment;
 * RN_ERR_NULL if ws is NULL, RN_ERR_SIZE if below the one-thread size). A workspace sized for
 * fewer threads than OpenMP now has runs the scan on as many threads as it has tiles: the
 * result is the same. No allocation. */
RNDEF rn_status rn_row_diameter_ws(const float *S, size_t rows, size_t cols, size_t ld,
                                   void *ws, size_t ws_bytes,
                                   double *diameter, size_t *i, size_t *j);

/* ---- 1.2b The exact diameter with the rows split across processes --------------------
 *
 * D(S) over all pairs = the best over all pairs of shards (each shard with itself, and every
 * two shards) of the best pair between them. rn_row_diameter's result is the pair of largest
 * double distance (rn__sumsq_ff of the two rows, the same value whichever buffers hold them)
 * with ties to the lexicographically smallest pair; the block-pair kernel below gives exactly
 * that over its pairs, with global row indices, so merging the per-pair results gives exactly
 * rn_row_diameter of the whole matrix: the same distance bits and the same (i, j).
 *
 * Protocol (P ranks, rank r holding the contiguous rows [off_r, off_r + n_r) of S):
 *     rn_diameter_best best = rn_diameter_best_none();
 *     for (k = 0; k < rn_diameter_ring_rounds(P); k++) {
 *         rn_diameter_ring(P, r, k, &s, &to, &from);
 *         if (k > 0) MPI_Sendrecv(held, .. to, recv, .. from, ..);  // held: own block at k = 1
 *         if (s != (size_t)-1)        // k = 0: s = r, the self pair (B = NULL)
 *             rn_row_diameter_pair_ws(own, n_r, ld, off_r, k ? recv : NULL, n_s, ld, off_s, d,
 *                                     ws, ws_bytes, &best);
 *         swap(held, recv);
 *     }
 *     gather every rank's best (3 doubles: dist2, i, j) and rn_diameter_best_merge them in any
 *     order; D = sqrt(dist2), or D = 0 and (0, 0) if no pair (one row in all).
 * Passing the rank's running best into each call (it is in/out) lets the kernel prune with
 * it; the final result does not depend on it. The ring: in round k >= 1 every rank sends the
 * block it holds to rank r - 1 and receives from r + 1 (mod P), so it then holds shard
 * (r + k) mod P and computes the pair {r, (r + k) mod P}. Rounds k = 0 .. floor(P/2): every
 * unordered pair of shards differs by k or P - k for one k <= P/2, so each is met once; for
 * P even the last round (k = P/2) meets {r, r + P/2} from both sides and only r < P/2
 * computes it. P/2 + 1 rounds, one send and one receive of a block per round. */

/* The best pair so far: the largest dist2 (squared distance, in double), then the smallest
 * (i, j), global row indices, i < j. i == j means "no pair yet" (a zeroed struct is empty). */
typedef struct rn_diameter_best {
    double dist2;
    size_t i, j;
} rn_diameter_best;
/* The empty result {-1, 0, 0}. */
RNDEF rn_diameter_best rn_diameter_best_none(void);
/* acc <- the better of acc and x (larger dist2, then smaller (i, j); an empty one never wins).
 * Commutative and associative: merge the ranks' results in any order. NULL is a no-op. */
RNDEF void rn_diameter_best_merge(rn_diameter_best *acc, const rn_diameter_best *x);
/* Bytes of workspace rn_row_diameter_pair_ws needs (rows_b = 0 for the self pair; 0 if the
 * size overflows or rows_a or cols is 0); a 16 KB tile per OpenMP thread at the query, as
 * rn_row_diameter_workspace_size (down to the one-thread size: fewer threads, same result). */
RNDEF size_t rn_row_diameter_pair_workspace_size(size_t rows_a, size_t rows_b, size_t cols);
/* Block-pair kernel: *best <- merge(*best, the best pair (a in A, b in B)) with global indices
 * off_a + row of A, off_b + row of B; B = NULL: the pairs within A (rows_b, ldb, off_b are then
 * ignored; rows_a = 1 has none). Exact in the sense of rn_row_diameter (pruning sound with the
 * float32 error margin, candidates verified in double from A and B, ties to the smallest pair).
 * RN_ERR_NULL (A, ws, best), RN_ERR_SIZE (shapes, ws_bytes), RN_ERR_DOMAIN (index ranges that
 * overflow or overlap, *best neither empty nor a valid pair), RN_ERR_NONFINITE (NaN/Inf in A
 * or B), RN_ERR_ALIAS (ws or best overlapping A or B, best inside ws). *best is written only on
 * RN_OK. Deterministic across thread counts. No allocation. */
RNDEF rn_status rn_row_diameter_pair_ws(const float *A, size_t rows_a, size_t lda, size_t off_a,
                                        const float *B, size_t rows_b, size_t ldb, size_t off_b,
                                        size_t cols, void *ws, size_t ws_bytes, rn_diameter_best *best);
/* As rn_row_diameter_pair_ws, allocating the workspace through RN_MALLOC (RN_ERR_NOMEM). */
RNDEF rn_status rn_row_diameter_pair(const float *A, size_t rows_a, size_t lda, size_t off_a,
                                     const float *B, size_t rows_b, size_t ldb, size_t off_b,
                                     size_t cols, rn_diameter_best *best);
/* Rounds of the ring schedule for nshards shards: nshards/2 + 1 (0 for 0). */
RNDEF size_t rn_diameter_ring_rounds(size_t nshards);
/* Round `round` of rank `rank`: *shard = the shard whose block pairs with the own one
 * ((rank + round) mod nshards; rank itself in round 0), or (size_t)-1 if the rank computes
 * nothing this round; *send_to / *recv_from (may be NULL) = the ranks of the block exchange
 * that precedes the round (rank itself in round 0: no exchange). RN_ERR_NULL (shard),
 * RN_ERR_SIZE (nshards 0), RN_ERR_DOMAIN (rank or round out of range). The modular
 * arithmetic never wraps: exact for every nshards up to SIZE_MAX. */
RNDEF rn_status rn_diameter_ring(size_t nshards, size_t rank, size_t round, size_t *shard,
                                 size_t *send_to, size_t *recv_from);

/* O(rows*cols) bracket lo <= D(S) <= hi <= 2 lo: lo from farthest-point sweeps (an attained
 * distance), hi = min(2 max_i ||s_i - c||, 2 lo) with c the mean row (in double). The mean
 * takes cols doubles: on the stack up to RN_BOUNDS_STACK_COLS columns (default 128: 1 KB), else
 * RN_MALLOC (RN_ERR_NOMEM); the _ws form takes rn_row_diameter_bounds_workspace_size(cols)
 * bytes (it may overlap none of S, lo, hi: RN_ERR_ALIAS) and never allocates. Same results
 * either way. */
RNDEF rn_status rn_row_diameter_bounds(const float *S, size_t rows, size_t cols, size_t ld,
                                       double *lo, double *hi);
RNDEF size_t rn_row_diameter_bounds_workspace_size(size_t cols);
RNDEF rn_status rn_row_diameter_bounds_ws(const float *S, size_t rows, size_t cols, size_t ld,
                                          double *lo, double *hi, void *ws, size_t ws_bytes);

/* The worst-case hidden state of SPEC 1.2: h = radius (s_i - s_j)/||s_i - s_j|| (cols floats),
 * which attains sup_{||h|| <= radius} osc(S h) = radius * D(S) when (i, j) is a maximising
 * pair. If s_i == s_j (or i == j) every h attains 0 and h = 0 is written. Each entry is the
 * float nearest its value (computed in double), so ||h|| = radius to float precision; a radius
 * near or below the subnormal range (< 2^-126 sqrt(cols)) keeps only the absolute precision of
 * subnormals, 2^-150 per entry (radius 8e-46 gives an entry 2^-149; 1e-46 gives h = 0).
 * RN_ERR_DOMAIN for i or j >= rows, radius < 0, NaN or above FLT_MAX (so every entry of h is
 * a finite float); RN_ERR_ALIAS if h overlaps S (its whole extent, (rows-1)*ld + cols floats).
 * No allocation. */
RNDEF rn_status rn_worst_hidden_state(const float *S, size_t rows, size_t cols, size_t ld,
                                      size_t i, size_t j, double radius, float *h);

/* ---- 1.3 Hilbert RMS ------------------------------------------------------------------ */

/* RMS = sqrt((1/N) sum_l osc(S h_l)^2) over the N = tokens hidden states h_l (rows of H,
 * cols wide each). Streams vocabulary tiles against panels of H (GEMM-shaped, float32 products
 * of rows centred in double; squares summed in double); never a rows x tokens buffer (the
 * vocabulary is packed 16 blocks of 64 rows at a time: 4096 cols bytes). One OpenMP parallel
 * region (two barriers per 1024 vocabulary rows); deterministic across thread counts. Any
 * finite magnitudes of S and H: each token row and each block of 64 vocabulary rows is packed
 * scaled by a power of two (undone in double), so the float32 products never overflow or
 * underflow.
 * Allocates rn_hilbert_rms_workspace_size(cols, tokens) + 2 tokens doubles through RN_MALLOC
 * (H packed once: about tokens*cols floats). */
RNDEF rn_status rn_hilbert_rms(const float *S, size_t rows, size_t cols, size_t lds,
                               const float *H, size_t tokens, size_t ldh, double *rms);
/* Bytes of workspace rn_hilbert_rms_partial_ws needs (its tile and per-token max/min, 24 KB, per
 * OpenMP thread at the query, as rn_row_diameter_workspace_size: a smaller workspace down to the
 * one-thread size runs on fewer threads, same result; 0 if the size overflows, tokens near
 * SIZE_MAX included). */
RNDEF size_t rn_hilbert_rms_workspace_size(size_t cols, size_t tokens);
/* Per-token range of the logit change for a vocabulary shard: tok_max[l] = max_i s_i.h_l and
 * tok_min[l] = min_i s_i.h_l over the rows given (double arrays of `tokens`). A vocabulary split
 * across processes combines by elementwise max of tok_max and min of tok_min (e.g. two
 * all-reduces, MPI_MAX and MPI_MIN), then calls rn_hilbert_rms_from_range. The rows are centred
 * on the shard's own mean here, so the combined result equals rn_hilbert_rms within rounding
 * (the float32 tiles see differently centred rows: ~1e-7 relative of the ranges); for bit-for-bit
 * the unsharded result use the centred form below. No allocation. */
RNDEF rn_status rn_hilbert_rms_partial_ws(const float *S, size_t rows, size_t cols, size_t lds,
                                          const float *H, size_t tokens, size_t ldh,
                                          void *ws, size_t ws_bytes,
                                          double *tok_max, double *tok_min);
/* Sharded Hilbert RMS with a common centre, bit for bit rn_hilbert_rms when the sum is exact:
 *     rn_hilbert_rms_center_sums(S_r, n_r, d, lds, sums);         // d + 1 doubles
 *     MPI_Allreduce(MPI_IN_PLACE, sums, d + 1, MPI_DOUBLE, MPI_SUM, comm);
 *     rn_hilbert_rms_partial_centered_ws(S_r, n_r, d, lds, sums, H, N, ldh, ws, wsb, mx, mn);
 *     MPI_Allreduce(MPI_IN_PLACE, mx, N, MPI_DOUBLE, MPI_MAX, comm);  (mn: MPI_MIN)
 *     rn_hilbert_rms_from_range(mx, mn, N, &rms);
 * Every rank then centres on the global mean sums[k] / sums[d] (rn_hilbert_rms uses the mean
 * of the rows summed in order: with one shard, or when every double addition of the column
 * sums is exact, the centre has the same bits), the per-block scales are powers of two (a
 * row's tile values do not depend on its block), and max/min combine exactly: the ranges and
 * the RMS are then bit-identical to rn_hilbert_rms of the whole S (barring packed values in
 * float32's subnormal range, below 2^-126 of their block's largest row). Otherwise the centre
 * differs by double rounding and the result by a few ulps. Under RN_USE_CBLAS the tile
 * products come from cblas_sgemm, whose rounding may depend on the block's size and the
 * library's threads: the sharded result then agrees to float rounding, not bit for bit
 * (docs/numerics.md). Communication: d + 1 doubles, then
 * 2 N. center_sums: sums[0..cols) = column sums of S in double (rows in order), sums[cols] =
 * rows; RN_ERR_NONFINITE for NaN/Inf in S, RN_ERR_ALIAS if sums overlaps S. partial_centered:
 * as rn_hilbert_rms_partial_ws with the centre from sums (cols + 1 doubles, reduced over all
 * shards): RN_ERR_NULL if sums is NULL, RN_ERR_NONFINITE if a sum is not finite, RN_ERR_DOMAIN
 * if sums[cols] is not an integer >= rows, RN_ERR_ALIAS if sums overlaps an output or ws. */
RNDEF rn_status rn_hilbert_rms_center_sums(const float *S, size_t rows, size_t cols, size_t lds, double *sums);
RNDEF rn_status rn_hilbert_rms_partial_centered_ws(const float *S, size_t rows, size_t cols, size_t lds,
                                                   const double *sums, const float *H, size_t tokens,
                                                   size_t ldh, void *ws, size_t ws_bytes,
                                                   double *tok_max, double *tok_min);
/* sqrt(mean_l (tok_max[l] - tok_min[l])^2), summed in double. RN_ERR_DOMAIN if some
 * tok_max < tok_min, RN_ERR_NONFINITE for NaN/Inf. */
RNDEF rn_status rn_hilbert_rms_from_range(const double *tok_max, const double *tok_min,
                                          size_t tokens, double *rms);

/* ---- 1.4 Projected RowNorm ------------------------------------------------------------ */

/* out = P RN_eps(P A) (SPEC 1.4): centre the rows (mean row subtracted, in double), divide each
 * by (||row|| + eps) (a zero row stays zero), centre again. Column sums of out are 0 and every
 * row of RN has norm <= 1. In place is allowed when out == A and ldo == lda; any other overlap
 * is RN_ERR_ALIAS. eps < 0 or non-finite: RN_ERR_DOMAIN. Allocates
 * rn_projected_rownorm_workspace_size(cols) bytes through RN_MALLOC; the _ws form does not. */
RNDEF rn_status rn_projected_rownorm(const float *A, size_t rows, size_t cols, size_t lda, float eps,
                                     float *out, size_t ldo);
RNDEF size_t rn_projected_rownorm_workspace_size(size_t cols);
RNDEF rn_status rn_projected_rownorm_ws(const float *A, size_t rows, size_t cols, size_t lda, float eps,
                                        float *out, size_t ldo, void *ws, size_t ws_bytes);

/* ---- 1.5 The RowNorm head optimizer ---------------------------------------------------- */

/* Flags of rn_rownorm_config.flags. */
#define RN_NO_BIAS_CORRECTION 1u  /* normalise B itself (eps not scaled by 1 - beta^t) */
#define RN_NO_CENTER_IN       2u  /* skip the inner P (use when 1^T G = 0 is known) */
#define RN_NO_CENTER_OUT      4u  /* skip the outer P */
#define RN_REFERENCE_COMPAT   8u  /* the authors' released rule: no projections, B normalised
                                     with eps (1 - beta^t) (= B-hat with eps); the same step as
                                     RN_NO_CENTER_IN | RN_NO_CENTER_OUT, a name for it (the two
                                     bits are what rn_rownorm_config_resolve reports) */
#define RN_SKIP_CHECKS        16u /* skip the finiteness test of G; a NaN/Inf in G then propagates
                                     into B and W unreported. Saves the read-only pre-pass over G
                                     only when the inner P is off (the pre-pass also yields the
                                     column mean of G that the inner P needs) */

/* Rows per chunk of the RowNorm step's column reductions (the inner and outer projections' mean
 * rows): each chunk's column sums are formed alone and the chunks are added in order, so the
 * bits do not depend on the thread count. Fixed, not an option: a reimplementation that must
 * give the same bits (the example trainer's CUDA step) reads this constant. */
#define RN_CHUNK_ROWS 256

/* The largest learning rate the step accepts: a larger lr is RN_ERR_DOMAIN, so that the step
 * |S| <= 2 lr can never overflow float (FLT_MAX is about 3.4e38). */
#define RN_LR_MAX 1e30

/* The step's hyper-parameters. Fields are literal values (a zeroed struct is valid: lr 0,
 * beta 0, eps 0); start from rn_rownorm_default(). Domain (else RN_ERR_DOMAIN, nothing
 * written): 0 <= lr <= RN_LR_MAX, 0 <= beta < 1, eps finite >= 0, weight_decay finite >= 0
 * with lr * weight_decay <= 1 (the decay factor 1 - lr wd stays in [0, 1]: a decay that flips
 * the sign of W or grows it is refused), flags from the RN_* bits above. */
typedef struct rn_rownorm_config {
    double lr;           /* gamma_t in [0, RN_LR_MAX] (the caller applies its schedule) */
    double beta;         /* EMA momentum in [0, 1); default 0.95 */
    double eps;          /* finite, >= 0; default 1e-8 */
    double weight_decay; /* lambda finite >= 0, lr*lambda <= 1, decoupled: U <- (1 - lr*lambda) U + S; default 0 */
    unsigned flags;      /* RN_* flags above; default 0 (projections on, bias correction on) */
} rn_rownorm_config;

/* The optimizer state. B (rows x cols, leading dimension cols) is the EMA momentum, t the
 * number of steps taken. Other fields are private. */
typedef struct rn_rownorm_state {
    float *B;
    size_t rows, cols;
    unsigned long long t;
    double *rn__part, *rn__part2; /* per-chunk column partial sums (chunks of RN_CHUNK_ROWS rows) */
    double *rn__rowinv;           /* 1/(||b_i - mu|| + eps_t) per row */
    double *rn__mu, *rn__nu;      /* mean rows of the inner and outer projections (SPEC 1.5) */
    double *rn__meanb;            /* column mean of B (tracked across steps) */
    size_t rn__nchunks;
    void *rn__mem;
    int rn__owns, rn__meanb_ok;   /* meanb_ok: 0 stale, 1 rn__meanb = mean of B, 2 = column sums */
    /* the sharded step in flight (all zero when none is): its config, the total row count
     * over the shards, and the phase (1 after begin, 2 after middle) */
    double rn__slr, rn__sbeta, rn__seps, rn__swd, rn__srows;
    unsigned rn__sflags;
    int rn__sphase;
} rn_rownorm_state;

/* lr 3.2e-3 (the paper's head rate at its smallest size), beta 0.95, eps 1e-8, weight_decay 0,
 * flags 0. */
RNDEF rn_rownorm_config rn_rownorm_default(void);
/* The config rn_rownorm_step runs for *in: validated against the domain above, with
 * RN_REFERENCE_COMPAT spelled out as the two flags it implies (no field has a zero default: every
 * zero is a valid value). RN_ERR_NULL, RN_ERR_DOMAIN (*out untouched). */
RNDEF rn_status rn_rownorm_config_resolve(const rn_rownorm_config *in, rn_rownorm_config *out);
/* Allocates the state (rn_rownorm_init_workspace_size bytes) through RN_MALLOC; B = 0, t = 0. */
RNDEF rn_status rn_rownorm_init(rn_rownorm_state *st, size_t rows, size_t cols);
/* Bytes of caller memory rn_rownorm_init_ws needs (0 if the size overflows). */
RNDEF size_t rn_rownorm_init_workspace_size(size_t rows, size_t cols);
/* As rn_rownorm_init, in caller memory (any alignment, >= rn_rownorm_init_workspace_size bytes, kept
 * alive until the state is no longer used; rn_rownorm_free then frees nothing). */
RNDEF rn_status rn_rownorm_init_ws(rn_rownorm_state *st, size_t rows, size_t cols,
                                   void *mem, size_t mem_bytes);
/* One step (SPEC 1.5):
 *     B <- beta B + (1 - beta) G;  t <- t + 1;  B-hat = B / (1 - beta^t)   (1 - beta^t = -expm1(t log beta))
 *     S = -lr P RN_eps(P B-hat);   W <- (1 - lr*weight_decay) W + S
 * W is rows x cols (ldw), G likewise (ldg; never modified). step_out: NULL, or receives S
 * (lds). No allocation. G is checked for NaN/Inf by a read-only pass first (RN_ERR_NONFINITE;
 * RN_SKIP_CHECKS skips it); W is not checked (a NaN in W stays in its own entry).
 * W, G, step_out and the state must not overlap (RN_ERR_ALIAS). RN_ERR_NULL for an
 * uninitialised state; RN_ERR_DOMAIN for lr, eps, weight_decay < 0 or non-finite, lr > RN_LR_MAX,
 * lr * weight_decay > 1, beta outside [0, 1), unknown flags (the domain above
 * rn_rownorm_config). On any error (NaN/Inf in G included) W, step_out, the struct and the
 * whole state block (B and the private scratch, every byte of the init_ws memory) are as before
 * the call. The inner centre is the column mean of B, tracked across steps in double: call
 * rn_rownorm_sync after writing B directly. With the inner projection, rows of B_{t-1} all
 * equal and rows of G all equal give S = 0 exactly. Memory traffic, the accuracy of the tracked
 * centre and of tiny weight decay: docs/numerics.md (rn_rownorm_step). */
RNDEF rn_status rn_rownorm_step(rn_rownorm_state *st, const rn_rownorm_config *cfg, float *W, size_t ldw,
                                const float *G, size_t ldg, float *step_out, size_t lds);
/* Call after writing st->B directly (e.g. restoring a checkpoint): the column mean of B that
 * the step tracks across steps is then recomputed (one read of B) at the next step. */
RNDEF void rn_rownorm_sync(rn_rownorm_state *st);
/* Frees what rn_rownorm_init allocated (nothing for _ws) and zeroes the struct. NULL is ok. */
RNDEF void rn_rownorm_free(rn_rownorm_state *st);

/* ---- 1.5b The RowNorm step with the vocabulary split across processes ------------------
 *
 * Each process (rank) holds a contiguous block of rows of W and G (its vocabulary shard, any
 * size, any order of the blocks) and its own rn_rownorm_state initialised for those rows.
 * The only cross-process data are column sums (for the two centring means) and counts; the
 * step runs in three phases around two all-reduces (elementwise SUM of doubles):
 *
 *     double *snd = malloc(rn_rownorm_shard_exchange_size(d) * sizeof(double));
 *     double *rcv = malloc(rn_rownorm_shard_exchange_size(d) * sizeof(double));
 *     size_t n;
 *     rn_rownorm_shard_begin(&st, &cfg, G, d, snd, &n);            // count, rows, sums of G, B
 *     MPI_Allreduce(snd, rcv, (int)n, MPI_DOUBLE, MPI_SUM, comm);
 *     rc = rn_rownorm_shard_middle(&st, G, d, rcv, snd, &n);       // B update, norms, sums
 *     if (rc == RN_ERR_NONFINITE) continue;   // NaN/Inf in some rank's G: every rank gets
 *                                             // this, all states as before begin; skip step
 *     MPI_Allreduce(snd, rcv, (int)n, MPI_DOUBLE, MPI_SUM, comm);
 *     rn_rownorm_shard_finish(&st, W, d, rcv, step_out, d);         // W (and S) written, t+1
 *
 * (MPI_IN_PLACE works too: recv may be the same buffer as send.) Every rank gets the same n
 * at each phase (it depends on cols and cfg->flags only); n may be 0 at the second phase
 * (then the all-reduce may be skipped and finish's recv may be NULL).
 * Communication per step, in doubles: phase 1: 2 cols + 2 with the inner centre (sums of G and
 * of B, the non-finite count, the row count), 2 without (RN_NO_CENTER_IN, RN_REFERENCE_COMPAT);
 * phase 2: cols with the outer centre, 0 without. Default: 3 cols + 2 (d = 768: 18 KiB).
 * Memory traffic per step (full passes over the local arrays): as rn_rownorm_step, plus one
 * without the outer centre (RN_NO_CENTER_OUT, RN_REFERENCE_COMPAT: B is updated in middle and
 * W written in finish, so the write cannot be fused into the update).
 *
 * Result. With one shard (recv = send) the three phases give bit for bit the W, B, step_out
 * and t of rn_rownorm_step, for every config. With several shards the union of the shards'
 * B is always bit-identical (the update is row-local), and W and step_out are bit-identical
 * to the unsharded step whenever the sums are exact: the only difference is the order in
 * which the column sums are added (rn_rownorm_step sums rows within chunks of RN_CHUNK_ROWS
 * rows, then the chunks in order; here each rank sums its own chunks and the all-reduce adds the ranks in
 * its own order), so when every such double addition is exact (e.g. dyadic data with few
 * significant bits, as in the tests) the results coincide. Otherwise the centres differ from
 * the unsharded ones by double rounding (~1e-16 relative) and W, step_out can differ in the
 * last float bit, rarely (measured: docs/numerics.md).
 * Deterministic for a fixed shard layout and a deterministic all-reduce.
 *
 * Errors. Every phase validates before it writes (RN_ERR_NULL, RN_ERR_SIZE, RN_ERR_DOMAIN,
 * RN_ERR_ALIAS as rn_rownorm_step); on these, everything is untouched and the phase may be
 * called again. A NaN/Inf in G is not an error of begin: begin returns RN_OK and counts the
 * non-finite values into the exchange, so that every rank sees the sum and returns
 * RN_ERR_NONFINITE from middle, with the state (struct and state block) as before begin and
 * no step taken (RN_SKIP_CHECKS: not counted, NaN propagates as in rn_rownorm_step). Order:
 * begin is accepted when no step is in flight or after a begin (it restarts: nothing was
 * committed), middle only after begin, finish only after middle; otherwise RN_ERR_PHASE,
 * untouched. rn_rownorm_step is refused (RN_ERR_PHASE) between middle and finish, and a
 * successful one discards a pending begin. B is updated by middle; t advances in finish
 * (the phase that writes W), so between them st->B holds the new B and st->t the old count.
 * No phase allocates. G must be the same array (same values) in begin and middle. */

/* Doubles each exchange buffer must hold: 2 cols + 2 (0 if cols is 0 or it overflows). */
RNDEF size_t rn_rownorm_shard_exchange_size(size_t cols);
/* Phase 1: validates cfg (as rn_rownorm_step) and G (st->rows x st->cols, ldg), counts the
 * non-finite values of G and writes to send the *count doubles to all-reduce:
 *     send[0] = non-finite values in G, send[1] = st->rows,
 *     [with the inner centre] send[2 .. 2+cols) = column sums of G, send[2+cols .. 2+2cols) =
 *     column sums of B (tracked from the previous step; summed from B after init_ws, sync,
 *     or a step without the inner centre), all in double.
 * Keeps a copy of cfg for the later phases. State untouched apart from the phase record.
 * RN_ERR_ALIAS if send overlaps G or the state block. */
RNDEF rn_status rn_rownorm_shard_begin(rn_rownorm_state *st, const rn_rownorm_config *cfg,
                                       const float *G, size_t ldg, double *send, size_t *count);
/* Phase 2: recv = the all-reduced phase-1 buffer. RN_ERR_DOMAIN if recv's row count is not an
 * integer >= st->rows; RN_ERR_NONFINITE (state restored to before begin, step abandoned) if
 * its non-finite count is not 0 or (without RN_SKIP_CHECKS) its sums are not finite.
 * Otherwise updates B <- beta B + (1 - beta) G, the centred row norms, and writes to send the
 * *count doubles to all-reduce: the column sums of the local rows of RN(P B) (outer centre).
 * send may equal recv (same pointer); any other overlap among send, recv, G and the state
 * block is RN_ERR_ALIAS. */
RNDEF rn_status rn_rownorm_shard_middle(rn_rownorm_state *st, const float *G, size_t ldg,
                                        const double *recv, double *send, size_t *count);
/* Phase 3: recv = the all-reduced phase-2 buffer (may be NULL when phase 2's count was 0).
 * Writes W <- (1 - lr wd) W + S and step_out (NULL or S, lds) as rn_rownorm_step, t += 1.
 * RN_ERR_NONFINITE (untouched) if recv is not finite (without RN_SKIP_CHECKS); RN_ERR_ALIAS
 * if W, step_out, recv and the state block overlap. */
RNDEF rn_status rn_rownorm_shard_finish(rn_rownorm_state *st, float *W, size_t ldw, const double *recv,
                                        float *step_out, size_t lds);

/* ---- Certified exact diameter-constrained steepest step (SPEC 1.4), small V ----------------
 *
 * Problem. For a gradient G (V x d) and a diameter budget eta > 0, the exact steepest step is
 *     Delta* = max -<G, S>   subject to   ||s_i - s_j||_2 <= eta  for all i < j.
 * Common row shifts of S are free, so the problem is bounded only when 1^T G = 0: the solver
 * works with the centred gradient P.G (the mean row is subtracted, in double) and Delta* below
 * always means the optimum for P.G (for a G with 1^T G = 0, such as an exact cross-entropy
 * gradient, that is the same thing). Its dual is the minimum-cost vector flow
 *     Delta* = eta * T(G),  T(G) = min sum_{i<j} ||y_ij||_2  s.t.  sum_{j != i} y_ij = g_i - gbar
 * (y_ji = -y_ij). RowNorm's step S = -(eta/2) PRN(G) (epsilon = 0) decreases by
 * (eta/2) sum_i ||g_i - gbar||, and SPEC 1.4 bounds that against Delta* by sqrt((k+1)/(2k)),
 * k = rank(P.G): this solver is the research tool that measures the ratio.
 *
 * Certificate. On RN_OK the solver returns BOTH
 *   - a primal step S (V x d, double) with 1^T S = 0 and D(S) = max ||s_i - s_j|| <= eta, checked
 *     pairwise in double after the final scaling: decrease_lo = -<P.G, S> <= Delta*;
 *   - a dual flow y (one d-vector per pair i < j) that satisfies the flow constraint up to double
 *     rounding (it is repaired exactly on the complete graph, see docs/api-rownorm-exact.md):
 *     decrease_hi = eta * sum ||y_ij|| >= Delta*;
 * and decrease_hi - decrease_lo <= rel_tol * decrease_hi. "Certified" means up to double rounding
 * (relative ~1e-14 of the values), not in interval arithmetic.
 *
 * Method: the rows are reduced to the row space of P.G (pivoted Gram-Schmidt with
 * reorthogonalisation, in double; directions whose total weight cannot move the bounds by more
 * than rel_tol/4 are dropped, and the dual repair accounts for them), the translation freedom is
 * removed (last row fixed at 0), and a primal log-barrier interior-point method (damped Newton,
 * blocked dense Cholesky in double, slacks in double-double) follows
 * min t<G,S> - sum_{i<j} log(eta^2 - ||s_i - s_j||^2), t -> inf. The barrier multipliers
 * lambda_ij = 1/(t (eta^2 - ||s_i - s_j||^2)) give the flow y_ij = 2 lambda_ij (s_j - s_i); near
 * the end they are re-fitted to the flow constraint by least squares, and the residual is
 * repaired exactly (y_ij += (r_i - r_j)/V). S is scaled about its centroid to D(S) = eta.
 *
 * Cost. n = (V-1) k unknowns, k <= min(V-1, d) the numerical rank: each Newton step assembles
 * O(V^2 k^2) and factors n^3/3 flops (about 6-7 GFLOP/s, one thread); typically 35-50 Newton
 * steps, more (up to a few hundred cheap ones) for low rank with many rows. Workspace about
 * 8 (max(n, V(V-1)/2)^2 + 5 V d + k d) bytes; measured times in docs/numerics.md. Note that a float matrix built as a rounded
 * low-rank product is full rank at the 1e-7 level: at rel_tol 1e-6 its rounding noise is below
 * the truncation threshold and is dropped; at much smaller rel_tol it is kept (and costs).
 * Tolerances down to about 1e-11 are reached; below that the gap sits at the rounding floor.
 *
 * Deterministic (single-threaded, fixed order). No I/O, no global state.
 */

/* The largest V the exact solver accepts. */
#define RN_EXACT_MAX_ROWS 64

/* What rn_exact_step reports (written only on RN_OK). */
typedef struct rn_exact_result {
    double decrease_lo;      /* -<P.G, S> of the returned feasible S: a lower bound on Delta*   */
    double decrease_hi;      /* eta * sum_{i<j} ||y_ij|| of the returned dual flow: upper bound  */
    double decrease_rownorm; /* RowNorm's first-order decrease (eta/2) sum_i ||g_i - gbar||,     */
                             /* computed in double: the ratio is decrease_rownorm / Delta*       */
    double diameter;         /* D(S) of the returned S, computed pairwise in double (<= eta)      */
    size_t rank;             /* k: dimension of the row space the solver used                     */
    unsigned newton_steps;   /* Newton steps taken                                                */
    unsigned barrier_rounds; /* barrier parameter increases                                       */
} rn_exact_result;

/* Bytes of workspace rn_exact_step_ws needs for a rows x cols gradient (includes alignment
 * slack, so any pointer works). Returns 0 when rows or cols is 0, rows > RN_EXACT_MAX_ROWS, or
 * the size overflows size_t. */
RNDEF size_t rn_exact_step_workspace_size(size_t rows, size_t cols);

/* Certified exact solver of the diameter-constrained steepest step (SPEC 1.4), V = rows <= 64.
 *   G        rows x cols float, row-major, leading dimension ldg >= cols (columns past cols are
 *            never read). Centred internally (P.G); G itself is never modified.
 *   eta      diameter budget, finite and > 0.
 *   rel_tol  certified relative gap, in (0, 1): on RN_OK, hi - lo <= rel_tol * hi. 1e-6 is the
 *            intended default; down to ~1e-11 is reached, below ~1e-12 expect NOCONVERGE.
 *   S        optional (may be NULL): rows x cols double, leading dimension lds >= cols: the
 *            feasible step, 1^T S = 0, D(S) <= eta, -<P.G,S> = res->decrease_lo.
 *   flow     optional (may be NULL): rows(rows-1)/2 rows of cols doubles, leading dimension
 *            ldf >= cols: row p(i,j) = i*rows - i*(i+1)/2 + (j - i - 1) holds y_ij for i < j
 *            (y_ji = -y_ij); sum_{j != i} y_ij = g_i - gbar up to rounding, and
 *            eta * sum ||y_ij|| = res->decrease_hi. For rows = 1 the flow has no rows and is not
 *            touched (it may be any pointer or NULL).
 *   res      required: the bounds and diagnostics.
 *   ws       caller memory of ws_bytes >= rn_exact_step_workspace_size(rows, cols); any alignment.
 * Special cases: V = 1 or P.G = 0 give Delta* = 0, S = 0, flow = 0; V = 2 is solved in closed
 * form (Delta* = eta ||g_1 - gbar||, S = -(eta/2) (g_i - gbar)/||g_i - gbar||).
 * Status: RN_ERR_NULL (G, res or ws NULL), RN_ERR_SIZE (rows or cols 0, rows > 64, ldg/lds/ldf
 * < cols, an overflowing extent, ws_bytes too small), RN_ERR_DOMAIN (eta not finite or below
 * DBL_MIN: zero, negative or subnormal, rel_tol not in (0, 1), or eta * sum ||g_i - gbar|| >
 * 1e300), RN_ERR_NONFINITE (NaN/Inf in G), RN_ERR_ALIAS (any two of G, S, flow, res, ws
 * overlap), RN_ERR_NOCONVERGE (the gap did not close within 2000 Newton steps, or stalled at
 * the rounding floor). On every error S, flow and res are
 * untouched (ws is scratch). Deterministic. Never allocates. */
RNDEF rn_status rn_exact_step_ws(const float *G, size_t rows, size_t cols, size_t ldg, double eta,
                                 double rel_tol, double *S, size_t lds, double *flow, size_t ldf,
                                 rn_exact_result *res, void *ws, size_t ws_bytes);

/* Same as rn_exact_step_ws, with the workspace allocated through RN_MALLOC and freed before it
 * returns (RN_ERR_NOMEM if that fails). */
RNDEF rn_status rn_exact_step(const float *G, size_t rows, size_t cols, size_t ldg, double eta,
                              double rel_tol, double *S, size_t lds, double *flow, size_t ldf,
                              rn_exact_result *res);

#ifdef __cplusplus
}
#endif
#endif /* ROWNORM_H */

/* ======================================================================================= */
#ifdef ROWNORM_IMPLEMENTATION
#ifndef ROWNORM_IMPLEMENTATION_DONE
#define ROWNORM_IMPLEMENTATION_DONE

/* C++ with -Wold-style-cast: the implementation is C99 and casts C-style throughout; the
 * diagnostic is silenced for the implementation only (pushed here, popped at its end), so the
 * including file keeps its own setting and the declarations above stay checked. */
#if defined(__cplusplus) && (defined(__GNUC__) || defined(__clang__))
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
#endif

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <float.h>
#include <limits.h>
#include <stdint.h>
/* the null pointer constant of the implementation: nullptr in C++11 and later (no
 * -Wzero-as-null-pointer-constant from clang++, which flags NULL; an add_subdirectory consumer
 * includes these headers with -I, not -isystem), NULL in C and C++98 (and MSVC without
 * /Zc:__cplusplus, which reports 199711L) */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define RN__NULL nullptr
#else
#define RN__NULL NULL
#endif

#if defined(RN_MALLOC) && defined(RN_FREE)
#elif !defined(RN_MALLOC) && !defined(RN_FREE)
#define RN_MALLOC(sz) malloc(sz)
#define RN_FREE(p) free(p)
#else
#error "rownorm.h: define both RN_MALLOC and RN_FREE, or neither"
#endif

/* Internal checks of what cannot happen (workspace carving). The default costs no stdio (a
 * failed check calls abort(), from <stdlib.h>; a firmware image stays free of printf) and, like
 * assert, nothing under NDEBUG; RN_ASSERT_STDIO: the C library's assert (file and line on
 * stderr). */
#ifndef RN_ASSERT
#if defined(RN_ASSERT_STDIO)
#include <assert.h>
#define RN_ASSERT(x) assert(x)
#elif defined(NDEBUG)
#define RN_ASSERT(x) ((void)0)
#else
#define RN_ASSERT(x) ((x) ? (void)0 : abort())
#endif
#endif

#ifdef _OPENMP
#include <omp.h>
#define RN__OMP(x) _Pragma(#x)
#else
#define RN__OMP(x)
#endif

#if defined(__GNUC__) || defined(__clang__)
#define RN__MAYBE_UNUSED __attribute__((unused))
#else
#define RN__MAYBE_UNUSED
#endif
/* internal functions: static, possibly unused in a given build. The one qualifier of every
 * internal function of this file (none is declared plain `static`): RN__FN, then RN__NOINLINE
 * where it applies */
#define RN__FN static RN__MAYBE_UNUSED
/* a function kept out of its callers, so that its locals are not on their frames */
#if defined(__GNUC__) || defined(__clang__)
#define RN__NOINLINE __attribute__((noinline))
#elif defined(_MSC_VER)
#define RN__NOINLINE __declspec(noinline)
#else
#define RN__NOINLINE
#endif

#if !defined(RN_NO_SIMD) && !defined(RN_FLOAT_ARITH)
#if defined(__AVX512F__) && !defined(RN_FORCE_AVX2)
#define RN__AVX512 1
#include <immintrin.h>
#elif defined(__AVX2__) && defined(__FMA__)
#define RN__AVX2 1
#include <immintrin.h>
#elif defined(__ARM_NEON) && defined(__aarch64__)
#define RN__NEON 1
#include <arm_neon.h>
#endif
#endif

#ifdef RN_USE_CBLAS
#include <cblas.h>
#endif

#define RN__BS 64          /* rows per block of the diameter and Hilbert RMS tiles */

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
    case RN_ERR_PHASE: return "phased call out of order (sharded step: begin, middle, finish)";
    }
    return "unknown rn_status";
}

/* ---- validation helpers ------------------------------------------------------------------ */

/* Elements spanned by a rows x cols matrix with leading dimension ld; 0 on invalid/overflow. */
RN__FN size_t rn__extent(size_t rows, size_t cols, size_t ld)
{
    size_t e;
    if (rows == 0 || cols == 0 || ld < cols || cols > (size_t)-1 / sizeof(float)) return 0;
    if (rows - 1 > ((size_t)-1 / sizeof(float)) / ld) return 0;
    e = (rows - 1) * ld;
    if (e > (size_t)-1 / sizeof(float) - cols) return 0;
    return e + cols;
}

/* Byte ranges [a, a+na) and [b, b+nb) overlap. */
RN__FN int rn__overlap(const void *a, size_t na, const void *b, size_t nb)
{
    const char *pa = (const char *)a, *pb = (const char *)b;
    if (!a || !b || na == 0 || nb == 0) return 0;
    return pa < pb + nb && pb < pa + na;
}

RN__FN size_t rn__align_up(size_t x, size_t a) { return (x + (a - 1)) & ~(a - 1); }

/* Carve `bytes` (64-aligned) from *cursor; returns NULL if past end. */
RN__FN void *rn__carve(char **cursor, char *end, size_t bytes)
{
    size_t addr = (size_t)*cursor;
    char *p = *cursor + (rn__align_up(addr, 64) - addr);
    if (p > end || (size_t)(end - p) < bytes) return RN__NULL;
    *cursor = p + bytes;
    return p;
}

/* a + b, a * b with overflow to (size_t)-1 (sticky) */
RN__FN size_t rn__add(size_t a, size_t b) { return (a > (size_t)-1 - b) ? (size_t)-1 : a + b; }
RN__FN size_t rn__mul(size_t a, size_t b)
{
    if (a == (size_t)-1 || b == (size_t)-1) return (size_t)-1;
    if (a != 0 && b > (size_t)-1 / a) return (size_t)-1;
    return a * b;
}

/* ======================================================================================= */
/* Kernels */
/* Every row kernel rn__X has a scalar reference rn__X_scalar, compiled always; rn__X
 * is written once on the SIMD layer below (or is the reference when there is no SIMD). */

/* All n floats finite. */
RN__FN int rn__all_finite_scalar(const float *x, size_t n)
{
    unsigned int m = 0;
    size_t k;
    for (k = 0; k < n; k++) {
        unsigned int u;
        memcpy(&u, x + k, sizeof u);
        u &= 0x7fffffffu;
        m = u > m ? u : m;
    }
    return m < 0x7f800000u;
}

/* One value finite / NaN, from the exponent bits. -ffast-math (-ffinite-math-only) lets the
 * compiler assume no NaN or Inf, and it folds x != x, x - x == 0, isfinite() and comparisons
 * with FLT_MAX / DBL_MAX / HUGE_VAL away; integer tests on the bits hold under any flags. A
 * double is tested on its high word (no 64-bit constants: C++98). */
RN__FN int rn__finite_f(float x)
{
    unsigned int u;
    memcpy(&u, &x, sizeof u);
    return (u & 0x7f800000u) != 0x7f800000u;
}
RN__FN uint32_t rn__d_hi(double x, uint32_t *lo)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    *lo = (uint32_t)u;
    return (uint32_t)(u >> 32);
}
RN__FN int rn__finite_d(double x)
{
    uint32_t lo, hi = rn__d_hi(x, &lo);
    return (hi & 0x7ff00000u) != 0x7ff00000u;
}
RN__FN int rn__nan_d(double x)
{
    uint32_t lo, hi = rn__d_hi(x, &lo) & 0x7fffffffu;
    return hi > 0x7ff00000u || (hi == 0x7ff00000u && lo != 0u);
}

/* sum_k (x_k - mu_k)^2 in double; mu may be NULL (then 0). */
RN__FN double rn__sumsq_fd_scalar(const float *x, const double *mu, size_t n)
{
    double s = 0.0;
    size_t k;
    if (mu) {
        for (k = 0; k < n; k++) { double d = (double)x[k] - mu[k]; s += d * d; }
    } else {
        for (k = 0; k < n; k++) { double d = (double)x[k]; s += d * d; }
    }
    return s;
}

/* sum_k (x_k - y_k)^2 in double (the differences of floats are exact in double). */
RN__FN double rn__sumsq_ff_scalar(const float *x, const float *y, size_t n)
{
    double s = 0.0;
    size_t k;
    for (k = 0; k < n; k++) { double d = (double)x[k] - (double)y[k]; s += d * d; }
    return s;
}

/* b <- beta b + omb g (float); colacc (may be NULL) += b_new in double. */
RN__FN void rn__row_ema_scalar(float *b, const float *g, size_t n, float beta, float omb, double *colacc)
{
    size_t k;
    for (k = 0; k < n; k++) {
        float v = beta * b[k] + omb * g[k];
        b[k] = v;
        if (colacc) colacc[k] += (double)v;
    }
}

/* b <- beta b + omb g (float); returns sum of b_new^2 in double (the no-projection fast path). */
RN__FN double rn__row_ema_sq_scalar(float *b, const float *g, size_t n, float beta, float omb)
{
    double s = 0.0;
    size_t k;
    for (k = 0; k < n; k++) {
        float v = beta * b[k] + omb * g[k];
        b[k] = v;
        s += (double)v * (double)v;
    }
    return s;
}

/* s = alpha b (float); w <- w + fl(c w + s) with c = float(decay - 1) = -lr wd (the decay
 * amount as its own float: decay = 1 - lr wd itself rounded to float would be off by up to
 * 60% of lr wd near lr wd = 1e-7); sout (may be NULL) = s. */
RN__FN void rn__row_axpby_scalar(const float *b, float alpha, double decay, float *w, float *sout, size_t n)
{
    float c = (float)(decay - 1.0); /* exact difference in double */
    size_t k;
    for (k = 0; k < n; k++) {
        float s = alpha * b[k];
        w[k] = w[k] + fmaf(c, w[k], s);
        if (sout) sout[k] = s;
    }
}

RN__FN double rn__row_ema_stats_scalar(float *b, const float *g, size_t n, float beta, float omb,
                                       const double *mu, double *colacc)
{
    double s = 0.0;
    size_t k;
    for (k = 0; k < n; k++) {
        float v = beta * b[k] + omb * g[k];
        double d = (double)v - mu[k];
        b[k] = v;
        colacc[k] += (double)v;
        s += d * d;
    }
    return s;
}

/* acc += g (double); returns whether all of g is finite. */
RN__FN int rn__row_gsum_scalar(const float *g, size_t n, double *acc)
{
    size_t k;
    for (k = 0; k < n; k++) acc[k] += (double)g[k];
    return rn__all_finite_scalar(g, n);
}

/* acc += (b - mu) * inv, in double: a row's share of nu, the mean row that the outer centring
 * projection subtracts (SPEC 1.5; see "The two projections" before rn__sweep). */
RN__FN void rn__row_nu_scalar(const float *b, const double *mu, double inv, double *acc, size_t n)
{
    size_t k;
    for (k = 0; k < n; k++) acc[k] += ((double)b[k] - mu[k]) * inv;
}

/* s = neglr ((b - mu) inv - nu); w <- w decay + s; sout (may be NULL) = s. Double, rounded once.
 * b - mu is the inner centring projection, "- nu" the outer one (SPEC 1.5). */
RN__FN void rn__row_write_scalar(const float *b, const double *mu, double inv, const double *nu,
                                 double neglr, double decay, float *w, float *sout, size_t n)
{
    size_t k;
    for (k = 0; k < n; k++) {
        double s = neglr * (((double)b[k] - mu[k]) * inv - nu[k]);
        w[k] = (float)((double)w[k] * decay + s);
        if (sout) sout[k] = (float)s;
    }
}

/* Packed panels (the GEMM-shaped tiles of the diameter and the Hilbert RMS): a block of up to
 * RN__BS = 64 rows of length k is stored transposed, P[l*64 + r] (columns r past the block's
 * rows are zero). rn__panel_tile computes the 64 x 64 product of two panels,
 * C[r*64 + c] = sum_l Pa[l*64 + r] Pb[l*64 + c], in float32, summing in l order. */
RN__FN void rn__panel_tile_scalar(const float *Pa, const float *Pb, size_t k, float *C)
{
    size_t r, c, l;
    for (r = 0; r < 64 * 64; r++) C[r] = 0.0f;
    for (l = 0; l < k; l++) {
        const float *pa = Pa + l * 64, *pb = Pb + l * 64;
        for (r = 0; r < 64; r++) {
            float ar = pa[r];
            float *cr = C + r * 64;
            for (c = 0; c < 64; c++) cr[c] += ar * pb[c];
        }
    }
}

/* ---- SIMD layer -------------------------------------------------------------------------
 * The vector operations the row kernels use, defined once per ISA; each row kernel is then
 * written once on top of them (below), so AVX-512, AVX2 and NEON share one source. rn__vf holds
 * RN__VW floats; rn__vd holds RN__VD = RN__VW / 2 doubles (one half of an rn__vf, widened:
 * rn__vd_lo / rn__vd_hi; rn__vd_loadi widens RN__VD int32s); rn__vu holds RN__VW 32-bit lanes
 * (the finiteness scan, and the int8 products' correction: rn__vu_set1 takes an int32, rn__vu_sub
 * wraps modulo 2^32). Every multiply-add is fused (rn__vf_fma(a, b, c) = a b + c rounded once; rn__vd_fms = a b - c).
 * The panel micro-kernels (GEMM-shaped register blocks) stay per ISA, as in BLIS.
 *
 * Bit-identity policy (stb_image_resize2 states one; this is ours). The vector kernels round
 * every element the same way on every ISA: an elementwise result (the moments, the weights,
 * the column sums, nu, the written step) is bit-identical across AVX-512, AVX2 and NEON, and
 * the finiteness scans agree exactly. A reduction (a sum of squares) adds the same terms in a
 * width-dependent order, so it differs across ISAs by a few ulps of the sum; an ISA gives the
 * same bits on every run and thread count. AVX-512 finishes a reduction's row with a masked
 * vector (RN__VTAIL: lanes past the end are zero), the other ISAs element by element (both as
 * in 0.1.0, so every ISA's bits are unchanged). The scalar references rn__X_scalar are the literal
 * formulas (unfused: the moment update b' = beta b + omb g rounds twice where the vector kernels
 * round once) and hold every path to within the tolerances of tests/test_rownorm.c. */
#if defined(RN__AVX512) && defined(__GNUC__) && !defined(__clang__)
/* GCC's AVX-512 headers self-initialise _mm512_undefined_*(), which -Wmaybe-uninitialized
 * flags in C++ once inlined; the values are never used. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#if defined(RN__AVX512)
#define RN__SIMD 1
#define RN__VW 16
typedef __m512 rn__vf;
typedef __m512d rn__vd;
typedef __m512i rn__vu;
#define rn__vf_load(p) _mm512_loadu_ps(p)
#define rn__vf_store(p, v) _mm512_storeu_ps((p), (v))
#define rn__vf_set1(x) _mm512_set1_ps(x)
#define rn__vf_mul(a, b) _mm512_mul_ps((a), (b))
#define rn__vf_add(a, b) _mm512_add_ps((a), (b))
#define rn__vf_fma(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define rn__vd_lo(v) _mm512_cvtps_pd(_mm512_castps512_ps256(v))
#define rn__vd_hi(v) _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)))
#define rn__vd_loadf(p) _mm512_cvtps_pd(_mm256_loadu_ps(p))
#define rn__vd_storef(p, v) _mm256_storeu_ps((p), _mm512_cvtpd_ps(v))
#define rn__vd_load(p) _mm512_loadu_pd(p)
#define rn__vd_store(p, v) _mm512_storeu_pd((p), (v))
#define rn__vd_set1(x) _mm512_set1_pd(x)
#define rn__vd_zero() _mm512_setzero_pd()
#define rn__vd_add(a, b) _mm512_add_pd((a), (b))
#define rn__vd_sub(a, b) _mm512_sub_pd((a), (b))
#define rn__vd_mul(a, b) _mm512_mul_pd((a), (b))
#define rn__vd_fma(a, b, c) _mm512_fmadd_pd((a), (b), (c))
#define rn__vd_fms(a, b, c) _mm512_fmsub_pd((a), (b), (c))
#define rn__vd_hsum(v) _mm512_reduce_add_pd(v)
#define rn__vu_zero() _mm512_setzero_si512()
#define rn__vu_absmax(m, v) _mm512_max_epu32((m), _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7fffffff)))
#define rn__vu_store(p, m) _mm512_storeu_si512((void *)(p), (m))
#define rn__vd_loadi(p) _mm512_cvtepi32_pd(_mm256_loadu_si256((const __m256i *)(const void *)(p)))
#define rn__vd_max(a, b) _mm512_max_pd((a), (b))
#define rn__vd_hmax(v) _mm512_reduce_max_pd(v)
#define rn__vu_load(p) _mm512_loadu_si512((const void *)(p))
#define rn__vu_set1(x) _mm512_set1_epi32(x)
#define rn__vu_sub(a, b) _mm512_sub_epi32((a), (b))
/* Masked remainders (AVX-512 only, RN__VTAIL): the reductions run their vector loop to the end
 * of the row, the last vector masked (lanes past the end are zero). The *_r operations take r,
 * the count of elements left from p (ptrdiff_t; >= the width: a full vector; <= 0: no lane). */
#define RN__VTAIL 1
#define rn__vf_loadr(p, r) _mm512_maskz_loadu_ps(rn__mask16(r), (p))
#define rn__vf_storer(p, v, r) rn__vf_storer_((p), (v), (r))
#define rn__vd_loadr(p, r) _mm512_maskz_loadu_pd(rn__mask8(r), (p))
#define rn__vd_storer(p, v, r) rn__vd_storer_((p), (v), (r))
RN__FN __mmask16 rn__mask16(ptrdiff_t r) { return (__mmask16)(r >= 16 ? 0xffffu : r <= 0 ? 0u : (1u << r) - 1u); }
RN__FN __mmask8 rn__mask8(ptrdiff_t r) { return (__mmask8)(r >= 8 ? 0xffu : r <= 0 ? 0u : (1u << r) - 1u); }
/* A full vector is stored unmasked, only the row's last partial one masked: the same bytes, but
 * a masked store to a line not in cache is slow on AMD Zen cores (a Zen 5: the compatible
 * RowNorm step at 26-29 GB/s with every vector's store masked, 47-57 GB/s with full vectors
 * unmasked; bench/RESULTS.md, "AVX-512 on a Zen 5") */
RN__FN void rn__vf_storer_(float *p, __m512 v, ptrdiff_t r)
{
    if (r >= 16) _mm512_storeu_ps(p, v);
    else _mm512_mask_storeu_ps(p, rn__mask16(r), v);
}
RN__FN void rn__vd_storer_(double *p, __m512d v, ptrdiff_t r)
{
    if (r >= 8) _mm512_storeu_pd(p, v);
    else _mm512_mask_storeu_pd(p, rn__mask8(r), v);
}

#elif defined(RN__AVX2)
#define RN__SIMD 1
#define RN__VW 8
typedef __m256 rn__vf;
typedef __m256d rn__vd;
typedef __m256i rn__vu;
#define rn__vf_load(p) _mm256_loadu_ps(p)
#define rn__vf_store(p, v) _mm256_storeu_ps((p), (v))
#define rn__vf_set1(x) _mm256_set1_ps(x)
#define rn__vf_mul(a, b) _mm256_mul_ps((a), (b))
#define rn__vf_add(a, b) _mm256_add_ps((a), (b))
#define rn__vf_fma(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define rn__vd_lo(v) _mm256_cvtps_pd(_mm256_castps256_ps128(v))
#define rn__vd_hi(v) _mm256_cvtps_pd(_mm256_extractf128_ps((v), 1))
#define rn__vd_loadf(p) _mm256_cvtps_pd(_mm_loadu_ps(p))
#define rn__vd_storef(p, v) _mm_storeu_ps((p), _mm256_cvtpd_ps(v))
#define rn__vd_load(p) _mm256_loadu_pd(p)
#define rn__vd_store(p, v) _mm256_storeu_pd((p), (v))
#define rn__vd_set1(x) _mm256_set1_pd(x)
#define rn__vd_zero() _mm256_setzero_pd()
#define rn__vd_add(a, b) _mm256_add_pd((a), (b))
#define rn__vd_sub(a, b) _mm256_sub_pd((a), (b))
#define rn__vd_mul(a, b) _mm256_mul_pd((a), (b))
#define rn__vd_fma(a, b, c) _mm256_fmadd_pd((a), (b), (c))
#define rn__vd_fms(a, b, c) _mm256_fmsub_pd((a), (b), (c))
#define rn__vd_hsum(v) rn__hsum256d(v)
#define rn__vu_zero() _mm256_setzero_si256()
#define rn__vu_absmax(m, v) _mm256_max_epu32((m), _mm256_and_si256(_mm256_castps_si256(v), _mm256_set1_epi32(0x7fffffff)))
#define rn__vu_store(p, m) _mm256_storeu_si256((__m256i *)(void *)(p), (m))
#define rn__vd_loadi(p) _mm256_cvtepi32_pd(_mm_loadu_si128((const __m128i *)(const void *)(p)))
#define rn__vd_max(a, b) _mm256_max_pd((a), (b))
#define rn__vd_hmax(v) rn__hmax256d(v)
#define rn__vu_load(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define rn__vu_set1(x) _mm256_set1_epi32(x)
#define rn__vu_sub(a, b) _mm256_sub_epi32((a), (b))
RN__FN double rn__hsum256d(__m256d v)
{
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    s = _mm_add_sd(s, _mm_unpackhi_pd(s, s));
    return _mm_cvtsd_f64(s);
}
RN__FN double rn__hmax256d(__m256d v)
{
    double mv[4], m;
    _mm256_storeu_pd(mv, v);
    m = mv[0] > mv[1] ? mv[0] : mv[1];
    m = mv[2] > m ? mv[2] : m;
    return mv[3] > m ? mv[3] : m;
}

#elif defined(RN__NEON)
#define RN__SIMD 1
#define RN__VW 4
typedef float32x4_t rn__vf;
typedef float64x2_t rn__vd;
typedef uint32x4_t rn__vu;
#define rn__vf_load(p) vld1q_f32(p)
#define rn__vf_store(p, v) vst1q_f32((p), (v))
#define rn__vf_set1(x) vdupq_n_f32(x)
#define rn__vf_mul(a, b) vmulq_f32((a), (b))
#define rn__vf_add(a, b) vaddq_f32((a), (b))
#define rn__vf_fma(a, b, c) vfmaq_f32((c), (a), (b))
#define rn__vd_lo(v) vcvt_f64_f32(vget_low_f32(v))
#define rn__vd_hi(v) vcvt_high_f64_f32(v)
#define rn__vd_loadf(p) vcvt_f64_f32(vld1_f32(p))
#define rn__vd_storef(p, v) vst1_f32((p), vcvt_f32_f64(v))
#define rn__vd_load(p) vld1q_f64(p)
#define rn__vd_store(p, v) vst1q_f64((p), (v))
#define rn__vd_set1(x) vdupq_n_f64(x)
#define rn__vd_zero() vdupq_n_f64(0.0)
#define rn__vd_add(a, b) vaddq_f64((a), (b))
#define rn__vd_sub(a, b) vsubq_f64((a), (b))
#define rn__vd_mul(a, b) vmulq_f64((a), (b))
#define rn__vd_fma(a, b, c) vfmaq_f64((c), (a), (b))
#define rn__vd_fms(a, b, c) vfmaq_f64(vnegq_f64(c), (a), (b))
#define rn__vd_hsum(v) vaddvq_f64(v)
#define rn__vu_zero() vdupq_n_u32(0)
#define rn__vu_absmax(m, v) vmaxq_u32((m), vandq_u32(vreinterpretq_u32_f32(v), vdupq_n_u32(0x7fffffffu)))
#define rn__vu_store(p, m) vst1q_u32((p), (m))
#define rn__vd_loadi(p) vcvtq_f64_s64(vmovl_s32(vld1_s32(p)))
#define rn__vd_max(a, b) vmaxq_f64((a), (b))
#define rn__vd_hmax(v) vmaxvq_f64(v)
#define rn__vu_load(p) vld1q_u32(p)
#define rn__vu_set1(x) vdupq_n_u32((uint32_t)(x))
#define rn__vu_sub(a, b) vsubq_u32((a), (b))
#endif

/* A read prefetch into L1 (a hint), and whether the centred sweeps ask for the next row's
 * streams (rn__sweep_chunk): on AVX-512, where it measured faster (the default step on a Zen 5,
 * 32768x2048 and 50257x768: 27-35 % less time); in the AVX2 build on the same CPU it gained 6 %
 * at 2048 columns and lost 5 % at 768, so the rest keep the hardware's prefetch alone. */
#if defined(RN__AVX512)
#define RN__PREFETCH(p) _mm_prefetch((const char *)(p), _MM_HINT_T0)
#define RN__ROW_PREFETCH 1
#else
#define RN__PREFETCH(p) ((void)(p))
#define RN__ROW_PREFETCH 0
#endif

#if defined(RN__SIMD)
#define RN__VD (RN__VW / 2)
#if defined(RN__VTAIL)
#define RN__VEND(n) (n) /* the reductions' vector loops run to the end (last vector masked) */
#else
#define RN__VEND(n) ((n) - (n) % RN__VW) /* full vectors; the rest element by element */
#define rn__vf_loadr(p, r) ((void)(r), rn__vf_load(p)) /* r >= the width whenever reached */
#define rn__vf_storer(p, v, r) ((void)(r), rn__vf_store((p), (v)))
#define rn__vd_loadr(p, r) ((void)(r), rn__vd_load(p))
#define rn__vd_storer(p, v, r) ((void)(r), rn__vd_store((p), (v)))
#endif
/* elements left from k (the count the *_r operations take) */
#define RN__LEFT(n, k) ((ptrdiff_t)(n) - (ptrdiff_t)(k))

/* The row kernels, once, on the layer: full vectors, then the remainder element by element
 * with the same fused formulas (so the remainder rounds as the vectors do). */

/* The elements before w's next 64-byte boundary (at most n), where rn__row_axpby starts its
 * 64-byte vectors on AVX-512 when W's row and B's sit alike on their lines: W is the caller's
 * array, from malloc commonly 16 bytes past a line, and there every 64-byte store (and the load
 * before it) straddled two lines: on a Zen 5 the compatible step at 2048 columns took 30 ms with
 * W 16 bytes past a line against 21 ms with W on a line (a G so placed costs nothing;
 * bench/RESULTS.md, "AVX-512 on a Zen 5"). Each element's arithmetic is its own, so where the
 * vectors start changes no bit. rn__row_write's accesses are 32 bytes wide: a head measured no
 * gain there. 32-byte vectors (AVX2) straddle half as often: no head. */
#if defined(RN__AVX512)
RN__FN size_t rn__head64(const float *w, size_t n)
{
    size_t h = (size_t)((64u - ((uintptr_t)(const void *)w & 63u)) & 63u) / sizeof(float);
    return h < n ? h : n;
}
#define RN__HEAD64(w, n) rn__head64((w), (n))
#else
#define RN__HEAD64(w, n) ((void)(w), (size_t)0)
#endif
RN__FN int rn__all_finite(const float *x, size_t n)
{
    rn__vu m = rn__vu_zero();
    unsigned int lanes[RN__VW], r = 0;
    size_t k = 0, nv = n - n % RN__VW;
    int q;
    for (; k < nv; k += RN__VW) m = rn__vu_absmax(m, rn__vf_load(x + k));
    rn__vu_store(lanes, m);
    for (q = 0; q < RN__VW; q++) r = lanes[q] > r ? lanes[q] : r;
    return r < 0x7f800000u && rn__all_finite_scalar(x + k, n - k);
}
RN__FN double rn__sumsq_fd(const float *x, const double *mu, size_t n)
{
    rn__vd s0 = rn__vd_zero(), s1 = rn__vd_zero();
    size_t k = 0, nv = RN__VEND(n);
    for (; k < nv; k += RN__VW) {
        rn__vf v = rn__vf_loadr(x + k, RN__LEFT(n, k));
        rn__vd lo = rn__vd_lo(v), hi = rn__vd_hi(v);
        if (mu) {
            lo = rn__vd_sub(lo, rn__vd_loadr(mu + k, RN__LEFT(n, k)));
            hi = rn__vd_sub(hi, rn__vd_loadr(mu + k + RN__VD, RN__LEFT(n, k + RN__VD)));
        }
        s0 = rn__vd_fma(lo, lo, s0);
        s1 = rn__vd_fma(hi, hi, s1);
    }
    if (k > n) k = n;
    return rn__vd_hsum(rn__vd_add(s0, s1)) + rn__sumsq_fd_scalar(x + k, mu ? mu + k : RN__NULL, n - k);
}
RN__FN double rn__sumsq_ff(const float *x, const float *y, size_t n)
{
    rn__vd s0 = rn__vd_zero(), s1 = rn__vd_zero();
    size_t k = 0, nv = RN__VEND(n);
    for (; k < nv; k += RN__VW) {
        rn__vf a = rn__vf_loadr(x + k, RN__LEFT(n, k)), b = rn__vf_loadr(y + k, RN__LEFT(n, k));
        rn__vd lo = rn__vd_sub(rn__vd_lo(a), rn__vd_lo(b)), hi = rn__vd_sub(rn__vd_hi(a), rn__vd_hi(b));
        s0 = rn__vd_fma(lo, lo, s0);
        s1 = rn__vd_fma(hi, hi, s1);
    }
    if (k > n) k = n;
    return rn__vd_hsum(rn__vd_add(s0, s1)) + rn__sumsq_ff_scalar(x + k, y + k, n - k);
}
/* colacc[k..k+VW) += the VW floats of v, widened. */
#define RN__COLACC(acc, v)                                                            \
    do {                                                                              \
        rn__vd_store((acc), rn__vd_add(rn__vd_load(acc), rn__vd_lo(v)));              \
        rn__vd_store((acc) + RN__VD, rn__vd_add(rn__vd_load((acc) + RN__VD), rn__vd_hi(v))); \
    } while (0)
RN__FN void rn__row_ema(float *b, const float *g, size_t n, float beta, float omb, double *colacc)
{
    rn__vf vb = rn__vf_set1(beta), vo = rn__vf_set1(omb);
    size_t k = 0, nv = n - n % RN__VW;
    for (; k < nv; k += RN__VW) {
        rn__vf v = rn__vf_fma(vb, rn__vf_load(b + k), rn__vf_mul(vo, rn__vf_load(g + k)));
        rn__vf_store(b + k, v);
        if (colacc) RN__COLACC(colacc + k, v);
    }
    for (; k < n; k++) {
        float v = fmaf(beta, b[k], omb * g[k]);
        b[k] = v;
        if (colacc) colacc[k] += (double)v;
    }
}
RN__FN double rn__row_ema_sq(float *b, const float *g, size_t n, float beta, float omb)
{
    rn__vf vb = rn__vf_set1(beta), vo = rn__vf_set1(omb);
    rn__vd s0 = rn__vd_zero(), s1 = rn__vd_zero();
    double s;
    size_t k = 0, nv = RN__VEND(n);
    for (; k < nv; k += RN__VW) {
        ptrdiff_t r = RN__LEFT(n, k);
        rn__vf v = rn__vf_fma(vb, rn__vf_loadr(b + k, r), rn__vf_mul(vo, rn__vf_loadr(g + k, r)));
        rn__vd lo = rn__vd_lo(v), hi = rn__vd_hi(v);
        rn__vf_storer(b + k, v, r);
        s0 = rn__vd_fma(lo, lo, s0);
        s1 = rn__vd_fma(hi, hi, s1);
    }
    if (k > n) k = n;
    s = rn__vd_hsum(rn__vd_add(s0, s1));
    for (; k < n; k++) {
        float v = fmaf(beta, b[k], omb * g[k]);
        b[k] = v;
        s += (double)v * (double)v;
    }
    return s;
}
/* elements [k, n) of rn__row_axpby by its scalar formula (the vectors' head and remainder) */
RN__FN void rn__row_axpby_from(const float *b, float alpha, float c, float *w, float *sout, size_t k, size_t n)
{
    for (; k < n; k++) {
        float sv = alpha * b[k];
        w[k] = w[k] + fmaf(c, w[k], sv);
        if (sout) sout[k] = sv;
    }
}
RN__FN void rn__row_axpby(const float *b, float alpha, double decay, float *w, float *sout, size_t n)
{
    float c = (float)(decay - 1.0); /* see rn__row_axpby_scalar */
    rn__vf va, vc;
    size_t k, h, nv;
#if defined(RN__AVX512)
    if ((((uintptr_t)(const void *)w - (uintptr_t)(const void *)b) & 63u) != 0) {
        /* w and b (the state's row, on a line when cols is a multiple of 16) cannot both start
         * on a line: 32-byte vectors, which straddle one in two lines of each, not every one of
         * b's (on a Zen 5 the compatible step with W 16 bytes past a line: 27-28 ms with 64-byte
         * vectors from w's line, 22-24 ms so, as with W on a line; rn_align) */
        __m256 ya = _mm256_set1_ps(alpha), yc = _mm256_set1_ps(c);
        for (k = 0, nv = n - n % 8; k < nv; k += 8) {
            __m256 sv = _mm256_mul_ps(ya, _mm256_loadu_ps(b + k)), wv = _mm256_loadu_ps(w + k);
            _mm256_storeu_ps(w + k, _mm256_add_ps(wv, _mm256_fmadd_ps(yc, wv, sv)));
            if (sout) _mm256_storeu_ps(sout + k, sv);
        }
        rn__row_axpby_from(b, alpha, c, w, sout, k, n);
        return;
    }
#endif
    va = rn__vf_set1(alpha), vc = rn__vf_set1(c), h = RN__HEAD64(w, n);
    rn__row_axpby_from(b, alpha, c, w, sout, 0, h);
    for (k = h, nv = h + (n - h) - (n - h) % RN__VW; k < nv; k += RN__VW) { /* from w's line (RN__HEAD64) */
        rn__vf sv = rn__vf_mul(va, rn__vf_load(b + k)), wv = rn__vf_load(w + k);
        rn__vf_store(w + k, rn__vf_add(wv, rn__vf_fma(vc, wv, sv)));
        if (sout) rn__vf_store(sout + k, sv);
    }
    rn__row_axpby_from(b, alpha, c, w, sout, k, n);
}
RN__FN double rn__row_ema_stats(float *b, const float *g, size_t n, float beta, float omb,
                                const double *mu, double *colacc)
{
    rn__vf vb = rn__vf_set1(beta), vo = rn__vf_set1(omb);
    rn__vd s0 = rn__vd_zero(), s1 = rn__vd_zero();
    double s;
    size_t k = 0, nv = RN__VEND(n);
    for (; k < nv; k += RN__VW) {
        ptrdiff_t r = RN__LEFT(n, k), rh = RN__LEFT(n, k + RN__VD);
        rn__vf v = rn__vf_fma(vb, rn__vf_loadr(b + k, r), rn__vf_mul(vo, rn__vf_loadr(g + k, r)));
        rn__vd lo = rn__vd_lo(v), hi = rn__vd_hi(v);
        rn__vd d0 = rn__vd_sub(lo, rn__vd_loadr(mu + k, r));
        rn__vd d1 = rn__vd_sub(hi, rn__vd_loadr(mu + k + RN__VD, rh));
        rn__vf_storer(b + k, v, r);
        rn__vd_storer(colacc + k, rn__vd_add(rn__vd_loadr(colacc + k, r), lo), r);
        rn__vd_storer(colacc + k + RN__VD, rn__vd_add(rn__vd_loadr(colacc + k + RN__VD, rh), hi), rh);
        s0 = rn__vd_fma(d0, d0, s0);
        s1 = rn__vd_fma(d1, d1, s1);
    }
    if (k > n) k = n;
    s = rn__vd_hsum(rn__vd_add(s0, s1));
    for (; k < n; k++) {
        float v = fmaf(beta, b[k], omb * g[k]);
        double d = (double)v - mu[k];
        b[k] = v;
        colacc[k] += (double)v;
        s += d * d;
    }
    return s;
}
RN__FN int rn__row_gsum(const float *g, size_t n, double *acc)
{
    size_t k = 0, nv = n - n % RN__VW;
    for (; k < nv; k += RN__VW) {
        rn__vf v = rn__vf_load(g + k);
        RN__COLACC(acc + k, v);
    }
    for (; k < n; k++) acc[k] += (double)g[k];
    return rn__all_finite(g, n); /* the row is in L1 now */
}
RN__FN void rn__row_nu(const float *b, const double *mu, double inv, double *acc, size_t n)
{
    rn__vd vi = rn__vd_set1(inv);
    size_t k = 0, nv = n - n % RN__VD;
    for (; k < nv; k += RN__VD) {
        rn__vd d = rn__vd_sub(rn__vd_loadf(b + k), rn__vd_load(mu + k));
        rn__vd_store(acc + k, rn__vd_fma(d, vi, rn__vd_load(acc + k)));
    }
    for (; k < n; k++) acc[k] = fma((double)b[k] - mu[k], inv, acc[k]);
}
RN__FN void rn__row_write(const float *b, const double *mu, double inv, const double *nu,
                          double neglr, double decay, float *w, float *sout, size_t n)
{
    rn__vd vi = rn__vd_set1(inv), vl = rn__vd_set1(neglr), vd = rn__vd_set1(decay);
    size_t k = 0, nv = n - n % RN__VD;
    for (; k < nv; k += RN__VD) {
        rn__vd d = rn__vd_sub(rn__vd_loadf(b + k), rn__vd_load(mu + k)); /* inner projection: b - mu */
        /* the outer projection (SPEC 1.5): (b - mu) inv - nu, subtracted inside the fused
         * multiply-subtract */
        rn__vd s = rn__vd_mul(vl, rn__vd_fms(d, vi, rn__vd_load(nu + k)));
        rn__vd_storef(w + k, rn__vd_fma(rn__vd_loadf(w + k), vd, s));
        if (sout) rn__vd_storef(sout + k, s);
    }
    for (; k < n; k++) {
        double s = neglr * fma((double)b[k] - mu[k], inv, -nu[k]); /* both projections, as above */
        w[k] = (float)fma((double)w[k], decay, s);
        if (sout) sout[k] = (float)s;
    }
}
#undef RN__COLACC
#elif defined(RN_FLOAT_ARITH)
/* Single-precision FPUs: the RowNorm rows' arithmetic in float. The centre mu and the outer mean
 * nu stay double arrays (each entry converted once per use); the column sums run as float pairs
 * (TwoSum, rn__ff_acc) within a row chunk and are widened to double at its end (rn__ff_widen),
 * so the combine and the sharded exchange see doubles as before; the per-row factors are formed
 * in double; sums of squares run in four float partial sums. A factor a float cannot carry (1/||row|| past 1e29:
 * rows below about 1e-29; |lr| outside [1e-29, 1e29]) sends that row to the double formulas. */
#define rn__all_finite rn__all_finite_scalar
#define rn__sumsq_fd rn__sumsq_fd_scalar
#define rn__sumsq_ff rn__sumsq_ff_scalar
#define rn__row_axpby rn__row_axpby_scalar
#define rn__row_gsum rn__row_gsum_scalar
RN__FN int rn__f_ok(double x) { return x == 0.0 || (fabs(x) >= 1e-29 && fabs(x) <= 1e29); }
/* A chunk's column sums as float pairs (hi, lo) in the 8 bytes of each double slot: TwoSum
 * (Knuth) keeps hi + lo = the running sum but for lo's own rounding (about 48 bits in all, so a
 * column of equal values sums to within a float rounding of the value's own multiple);
 * rn__ff_widen turns the chunk's pairs into the doubles every later pass reads. */
RN__FN void rn__ff_acc(double *acc, size_t k, float x)
{
    float *p = (float *)(void *)(acc + k), hi = p[0], s = hi + x, bb = s - hi;
    p[1] += (hi - (s - bb)) + (x - bb);
    p[0] = s;
}
RN__FN void rn__ff_widen(double *acc, size_t n)
{
    size_t k;
    for (k = 0; k < n; k++) {
        const float *p = (const float *)(void *)(acc + k);
        double v = (double)p[0] + (double)p[1];
        acc[k] = v;
    }
}
RN__FN void rn__row_ema(float *b, const float *g, size_t n, float beta, float omb, double *colacc)
{
    size_t k;
    for (k = 0; k < n; k++) {
        float v = beta * b[k] + omb * g[k];
        b[k] = v;
        if (colacc) rn__ff_acc(colacc, k, v);
    }
}
/* a chunk's G column sums (rn__gpass): float pairs; returns whether g is finite */
RN__FN int rn__row_gsum_ff(const float *g, size_t n, double *acc)
{
    size_t k;
    for (k = 0; k < n; k++) rn__ff_acc(acc, k, g[k]);
    return rn__all_finite_scalar(g, n);
}
/* A float sum of squares is trusted when its largest term's root m lies in [2^-50, 2^50] (or
 * is 0): no square under- or overflows and 2^24 terms stay below FLT_MAX. Else the row's sum is
 * taken again in double (rows of huge or tiny values: the results of the default build). */
#define RN__F_SQ_OK(m) ((m) == 0.0f || ((m) >= 8.8817842e-16f && (m) <= 1.1258999e15f))
/* sum_k (x_k - mu_k)^2, float arithmetic (mu NULL: 0) */
RN__FN double rn__csumsq(const float *x, const double *mu, size_t n)
{
    float s[4] = {0.0f, 0.0f, 0.0f, 0.0f}, m = 0.0f;
    size_t k;
    for (k = 0; k < n; k++) {
        float d = mu ? x[k] - (float)mu[k] : x[k];
        m = fabsf(d) > m ? fabsf(d) : m;
        s[k & 3] = fmaf(d, d, s[k & 3]);
    }
    if (!RN__F_SQ_OK(m)) return rn__sumsq_fd_scalar(x, mu, n);
    return (double)((s[0] + s[1]) + (s[2] + s[3]));
}
RN__FN double rn__row_ema_sq(float *b, const float *g, size_t n, float beta, float omb)
{
    float s[4] = {0.0f, 0.0f, 0.0f, 0.0f}, m = 0.0f;
    size_t k;
    for (k = 0; k < n; k++) {
        float v = beta * b[k] + omb * g[k];
        b[k] = v;
        m = fabsf(v) > m ? fabsf(v) : m;
        s[k & 3] = fmaf(v, v, s[k & 3]);
    }
    if (!RN__F_SQ_OK(m)) return rn__sumsq_fd_scalar(b, RN__NULL, n);
    return (double)((s[0] + s[1]) + (s[2] + s[3]));
}
RN__FN double rn__row_ema_stats(float *b, const float *g, size_t n, float beta, float omb, const double *mu,
                                double *colacc)
{
    float s[4] = {0.0f, 0.0f, 0.0f, 0.0f}, m = 0.0f;
    size_t k;
    for (k = 0; k < n; k++) {
        float v = beta * b[k] + omb * g[k], d = v - (float)mu[k];
        b[k] = v;
        rn__ff_acc(colacc, k, v);
        m = fabsf(d) > m ? fabsf(d) : m;
        s[k & 3] = fmaf(d, d, s[k & 3]);
    }
    if (!RN__F_SQ_OK(m)) return rn__sumsq_fd_scalar(b, mu, n);
    return (double)((s[0] + s[1]) + (s[2] + s[3]));
}
RN__FN void rn__row_nu(const float *b, const double *mu, double inv, double *acc, size_t n)
{
    size_t k;
    float fi = (float)inv;
    if (!rn__f_ok(inv)) { /* the factor in double, the sum in float pairs as the rest */
        for (k = 0; k < n; k++) rn__ff_acc(acc, k, (float)(((double)b[k] - mu[k]) * inv));
        return;
    }
    for (k = 0; k < n; k++) rn__ff_acc(acc, k, (b[k] - (float)mu[k]) * fi);
}
/* s = neglr ((b - mu) inv - nu); w <- w + fl(c w + s) with c = float(decay - 1), as the
 * no-projection path commits it */
RN__FN void rn__row_write(const float *b, const double *mu, double inv, const double *nu, double neglr,
                          double decay, float *w, float *sout, size_t n)
{
    size_t k;
    float fi = (float)inv, fl = (float)neglr, c = (float)(decay - 1.0);
    if (!rn__f_ok(inv) || !rn__f_ok(neglr)) {
        rn__row_write_scalar(b, mu, inv, nu, neglr, decay, w, sout, n);
        return;
    }
    for (k = 0; k < n; k++) {
        /* the inner projection (- mu) and the outer one (- nu) */
        float sv = fl * fmaf(b[k] - (float)mu[k], fi, -(float)nu[k]);
        w[k] = w[k] + fmaf(c, w[k], sv);
        if (sout) sout[k] = sv;
    }
}
#else /* no SIMD: the references are the kernels */
#define rn__all_finite rn__all_finite_scalar
#define rn__sumsq_fd rn__sumsq_fd_scalar
#define rn__sumsq_ff rn__sumsq_ff_scalar
#define rn__row_ema rn__row_ema_scalar
#define rn__row_ema_sq rn__row_ema_sq_scalar
#define rn__row_axpby rn__row_axpby_scalar
#define rn__row_ema_stats rn__row_ema_stats_scalar
#define rn__row_gsum rn__row_gsum_scalar
#define rn__row_nu rn__row_nu_scalar
#define rn__row_write rn__row_write_scalar
#endif /* RN__SIMD */
#if !defined(RN_FLOAT_ARITH)
#define rn__csumsq rn__sumsq_fd /* the RowNorm rows' centred sums of squares */
#define rn__row_gsum_ff rn__row_gsum /* a chunk's G column sums */
#define rn__ff_widen(acc, n) ((void)0)
#endif

/* ---- panel micro-kernels (per ISA, BLIS-style register blocks) ------------------------- */
#define RN__KC 128 /* k-chunk of the panel micro-kernels: the micro-panels stay in L1 */
#if defined(RN__AVX512)
/* 8 x 32 register block (16 zmm accumulators): per l, two loads of Pb, eight broadcasts of Pa. */
RN__FN void rn__panel_tile_avx512(const float *Pa, const float *Pb, size_t k, float *C)
{
    size_t kc, i0, j0, l;
    for (kc = 0; kc < k; kc += RN__KC) {
        size_t kn = k - kc < RN__KC ? k - kc : RN__KC;
        for (j0 = 0; j0 < 64; j0 += 32)
            for (i0 = 0; i0 < 64; i0 += 8) {
                float *c = C + i0 * 64 + j0;
                const float *pa = Pa + kc * 64 + i0, *pb = Pb + kc * 64 + j0;
                __m512 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51, c60, c61, c70, c71;
                if (kc == 0) {
                    c00 = _mm512_setzero_ps();
                    c01 = c10 = c11 = c20 = c21 = c30 = c31 = c00;
                    c40 = c41 = c50 = c51 = c60 = c61 = c70 = c71 = c00;
                } else {
#define RN__LC(R) c##R##0 = _mm512_loadu_ps(c + R * 64); c##R##1 = _mm512_loadu_ps(c + R * 64 + 16);
                    RN__LC(0) RN__LC(1) RN__LC(2) RN__LC(3) RN__LC(4) RN__LC(5) RN__LC(6) RN__LC(7)
#undef RN__LC
                }
                for (l = 0; l < kn; l++, pa += 64, pb += 64) {
                    __m512 b0 = _mm512_loadu_ps(pb), b1 = _mm512_loadu_ps(pb + 16), a;
#define RN__FM(R) a = _mm512_set1_ps(pa[R]); c##R##0 = _mm512_fmadd_ps(a, b0, c##R##0); c##R##1 = _mm512_fmadd_ps(a, b1, c##R##1);
                    RN__FM(0) RN__FM(1) RN__FM(2) RN__FM(3) RN__FM(4) RN__FM(5) RN__FM(6) RN__FM(7)
#undef RN__FM
                }
#define RN__SC(R) _mm512_storeu_ps(c + R * 64, c##R##0); _mm512_storeu_ps(c + R * 64 + 16, c##R##1);
                RN__SC(0) RN__SC(1) RN__SC(2) RN__SC(3) RN__SC(4) RN__SC(5) RN__SC(6) RN__SC(7)
#undef RN__SC
            }
    }
    if (k == 0) memset(C, 0, 64 * 64 * sizeof(float));
}
#endif /* RN__AVX512 */

#if defined(RN__AVX2)
/* 4 x 16 register block (8 ymm accumulators + 2 loads + 1 broadcast of the 16 registers). */
RN__FN void rn__panel_tile_avx2(const float *Pa, const float *Pb, size_t k, float *C)
{
    size_t kc, i0, j0, l;
    for (kc = 0; kc < k; kc += RN__KC) {
        size_t kn = k - kc < RN__KC ? k - kc : RN__KC;
        for (j0 = 0; j0 < 64; j0 += 16)
            for (i0 = 0; i0 < 64; i0 += 4) {
                float *c = C + i0 * 64 + j0;
                const float *pa = Pa + kc * 64 + i0, *pb = Pb + kc * 64 + j0;
                __m256 c00, c01, c10, c11, c20, c21, c30, c31;
                if (kc == 0) {
                    c00 = _mm256_setzero_ps();
                    c01 = c10 = c11 = c20 = c21 = c30 = c31 = c00;
                } else {
#define RN__LC(R) c##R##0 = _mm256_loadu_ps(c + R * 64); c##R##1 = _mm256_loadu_ps(c + R * 64 + 8);
                    RN__LC(0) RN__LC(1) RN__LC(2) RN__LC(3)
#undef RN__LC
                }
                for (l = 0; l < kn; l++, pa += 64, pb += 64) {
                    __m256 b0 = _mm256_loadu_ps(pb), b1 = _mm256_loadu_ps(pb + 8), a;
#define RN__FM(R) a = _mm256_broadcast_ss(pa + R); c##R##0 = _mm256_fmadd_ps(a, b0, c##R##0); c##R##1 = _mm256_fmadd_ps(a, b1, c##R##1);
                    RN__FM(0) RN__FM(1) RN__FM(2) RN__FM(3)
#undef RN__FM
                }
#define RN__SC(R) _mm256_storeu_ps(c + R * 64, c##R##0); _mm256_storeu_ps(c + R * 64 + 8, c##R##1);
                RN__SC(0) RN__SC(1) RN__SC(2) RN__SC(3)
#undef RN__SC
            }
    }
    if (k == 0) memset(C, 0, 64 * 64 * sizeof(float));
}
#endif /* RN__AVX2 */

#if defined(RN__NEON)
/* 4 x 16 register block (16 q accumulators). */
RN__FN void rn__panel_tile_neon(const float *Pa, const float *Pb, size_t k, float *C)
{
    size_t kc, i0, j0, l;
    int r, q;
    for (kc = 0; kc < k; kc += RN__KC) {
        size_t kn = k - kc < RN__KC ? k - kc : RN__KC;
        for (j0 = 0; j0 < 64; j0 += 16)
            for (i0 = 0; i0 < 64; i0 += 4) {
                float *c = C + i0 * 64 + j0;
                const float *pa = Pa + kc * 64 + i0, *pb = Pb + kc * 64 + j0;
                float32x4_t acc[4][4];
                for (r = 0; r < 4; r++)
                    for (q = 0; q < 4; q++)
                        acc[r][q] = kc == 0 ? vdupq_n_f32(0.0f) : vld1q_f32(c + r * 64 + q * 4);
                for (l = 0; l < kn; l++, pa += 64, pb += 64) {
                    float32x4_t b0 = vld1q_f32(pb), b1 = vld1q_f32(pb + 4), b2 = vld1q_f32(pb + 8), b3 = vld1q_f32(pb + 12);
                    for (r = 0; r < 4; r++) {
                        float32x4_t a = vdupq_n_f32(pa[r]);
                        acc[r][0] = vfmaq_f32(acc[r][0], a, b0);
                        acc[r][1] = vfmaq_f32(acc[r][1], a, b1);
                        acc[r][2] = vfmaq_f32(acc[r][2], a, b2);
                        acc[r][3] = vfmaq_f32(acc[r][3], a, b3);
                    }
                }
                for (r = 0; r < 4; r++)
                    for (q = 0; q < 4; q++) vst1q_f32(c + r * 64 + q * 4, acc[r][q]);
            }
    }
    if (k == 0) memset(C, 0, 64 * 64 * sizeof(float));
}
#endif /* RN__NEON */
#if defined(RN__AVX512) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

RN__FN void rn__panel_tile(const float *Pa, const float *Pb, size_t k, float *C)
{
#if defined(RN_USE_CBLAS)
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, 64, 64, (int)k, 1.0f, Pa, 64, Pb, 64, 0.0f, C, 64);
#elif defined(RN__AVX512)
    rn__panel_tile_avx512(Pa, Pb, k, C);
#elif defined(RN__AVX2)
    rn__panel_tile_avx2(Pa, Pb, k, C);
#elif defined(RN__NEON)
    rn__panel_tile_neon(Pa, Pb, k, C);
#else
    rn__panel_tile_scalar(Pa, Pb, k, C);
#endif
}

/* ---- int8 tile products (the exact diameter's int8 screen) ---------------------------------
 * Int8 panels (the diameter's int8 screen, see rn__row_diameter_core): a block of up to 64
 * quantised rows of kq k-quads (k = 4 kq, past cols zero) is stored by quads,
 * Q[l*256 + 4r + t] = q of row r at k = 4l + t, for both sides of a product (a 32-bit lane holds
 * one row's quad: the layout of vpdpbusd and of NEON's sdot). rn__q8_tile computes
 * C[r*64 + c] = sum_k qa_k,r qb_k,c exactly in int32 (|q| <= 127: |C| <= 127^2 k < 2^31 for
 * k <= RN__Q8_MAXCOLS; the VNNI kernel's sums with the unsigned operand q + 128 wrap modulo 2^32
 * and are exact again once 128 sum q is taken off), so every path gives the same bits.
 *
 * The int8 screen's choices, all here: the build's int8 product (RN__Q8_VNNI, RN__Q8_AVX2,
 * RN__Q8_SDOT, else the scalar kernel), whether it is faster than the float32 one (RN__Q8_FAST:
 * the scan's default screen, rn__diam_screen), the quantised values' range (RN__Q8_QMAX, the
 * quantiser rn__quant16's levels), and the limits past which the screen gives way to float32
 * products: rows wider than RN__Q8_MAXCOLS (the whole scan), and per tile an int8 bound over
 * RN__Q8_WIDE LB^2 or more than RN__Q8_MAXCAND candidates (rn__diam_row, rn__diam_q8). */
#if defined(RN__AVX512) && defined(__AVX512VNNI__) && defined(__AVX512BW__)
#define RN__Q8_VNNI 1
#define RN__Q8_FAST 1 /* a faster int8 product than float32 FMA: 64 products an instruction */
#define RN__Q8_QMAX 127 /* the quantised values' range [-QMAX, QMAX] */
#elif defined(RN__AVX2)
#define RN__Q8_AVX2 1
#define RN__Q8_FAST 1 /* vpmaddubsw: 32 products an instruction (two of them per multiply of FMA's 8) */
#define RN__Q8_QMAX 63 /* 7-bit values: vpmaddubsw's int16 pair sums (q + 64) q' <= 2 127 63 never saturate */
#elif defined(RN__NEON) && defined(__ARM_FEATURE_DOTPROD)
#define RN__Q8_SDOT 1
#define RN__Q8_FAST 1 /* sdot: 16 products an instruction against fmla's 4 */
#define RN__Q8_QMAX 127
#else
#define RN__Q8_QMAX 127 /* the scalar kernel (the screen only where asked for) */
#endif
#if defined(RN__Q8_FAST)
#define RN__Q8_AUTO 1 /* a scan's default screen is int8 (rn__diam_screen) */
#else
#define RN__Q8_AUTO 0 /* float32: the int8 screen runs only where asked for */
#endif
#define RN__Q8_MAXCOLS 65536u /* widest rows of the int8 screen (the int32 sums stay exact) */
#define RN__Q8_WIDE 0.125 /* int8 bound over LB^2 past which a tile uses float32 products */
#define RN__Q8_MAXCAND 64 /* a tile's int8 candidates past which its float32 product is cheaper */
#define RN__Q8_PANEL(kq) ((size_t)(kq) * 256u) /* bytes of one block's int8 panel */
RN__FN void rn__q8_tile_scalar(const signed char *Qa, const signed char *Qb, size_t kq, int32_t *C)
{
    size_t r, c, l;
    for (r = 0; r < 64 * 64; r++) C[r] = 0;
    for (l = 0; l < kq; l++) {
        const signed char *pa = Qa + l * 256, *pb = Qb + l * 256;
        for (r = 0; r < 64; r++) {
            int32_t a0 = pa[4 * r], a1 = pa[4 * r + 1], a2 = pa[4 * r + 2], a3 = pa[4 * r + 3];
            int32_t *cr = C + r * 64;
            for (c = 0; c < 64; c++)
                cr[c] += a0 * pb[4 * c] + a1 * pb[4 * c + 1] + a2 * pb[4 * c + 2] + a3 * pb[4 * c + 3];
        }
    }
}

/* Quantise 16 rows of a float panel (P: their first column; stride RN__BS) with the reciprocal
 * scales inv and scales s: q = x inv rounded to nearest (ties to even; |x inv| <= QMAX (1 + 2^-52)),
 * stored by quads (Q: the rows' first byte, stride 256 a quad, the quad past cols zero-filled);
 * err[r] = sum (x - s q)^2, qq[r] = sum q^2 (exact), qs[r] = sum q, in k order.
 * rn__quant16_scalar, the literal formulas, is compiled in every build (the reference the tests
 * hold the vector one to); rn__quant16 is the build's (chosen with rn__q8_tile): the AVX-512 one
 * with the VNNI kernel (the same operations on 16 rows at once: the same bits), else the scalar. */
RN__FN void rn__quant16_scalar(const float *P, size_t cols, const double *inv, const double *s, signed char *Q,
                               double *err, double *qq, int32_t *qs)
{
    size_t l, r, kq = (cols + 3) / 4;
    for (r = 0; r < 16; r++) { err[r] = 0.0; qq[r] = 0.0; qs[r] = 0; }
    for (l = 0; l < 4 * kq; l++) {
        const float *x = P + l * RN__BS;
        signed char *qd = Q + (l >> 2) * 256 + (l & 3);
        for (r = 0; r < 16; r++) {
            double q = l < cols ? rint((double)x[r] * inv[r]) : 0.0, d;
            if (l >= cols) { qd[4 * r] = 0; continue; }
            qd[4 * r] = (signed char)(int)q;
            d = (double)x[r] - s[r] * q;
            err[r] += d * d;
            qq[r] += q * q;
            qs[r] += (int32_t)q;
        }
    }
}

/* The int8 micro-kernels' walk, one for every ISA: k-chunks of RN__QKC quads, in each the tile's
 * register blocks of ib rows by jb columns, each made by blk(pa, pb, kn, first, c): over the kn
 * quads at pa (the block's rows) and pb (its columns), c[i*64 + j] (+)= sum qa_i qb_j (from zero
 * where first: the first chunk). */
#define RN__QKC 128 /* k-quads per chunk of the int8 micro-kernels (the B micro-panel: 16 KB) */
typedef void (*rn__q8_block)(const signed char *pa, const signed char *pb, size_t kn, int first, int32_t *c);
RN__FN void rn__q8_walk(const signed char *Qa, const signed char *Qb, size_t kq, size_t ib, size_t jb, rn__q8_block blk,
                        int32_t *C)
{
    size_t kc, i0, j0;
    for (kc = 0; kc < kq; kc += RN__QKC) {
        size_t kn = kq - kc < RN__QKC ? kq - kc : RN__QKC;
        for (j0 = 0; j0 < 64; j0 += jb)
            for (i0 = 0; i0 < 64; i0 += ib) blk(Qa + kc * 256 + i0 * 4, Qb + kc * 256 + j0 * 4, kn, kc == 0, C + i0 * 64 + j0);
    }
    if (kq == 0) memset(C, 0, 64 * 64 * sizeof(int32_t));
}

#if defined(RN__Q8_VNNI) || defined(RN__Q8_AVX2)
/* The unsigned-operand kernels' correction, on the SIMD layer: C[r*64 + c] -= off qsa[r], modulo
 * 2^32 (off = 128 or 64, the bias of the unsigned operand; qsa: the rows' sums of q). */
RN__FN void rn__q8_unbias(int32_t *C, const int32_t *qsa, int32_t off)
{
    size_t r, l;
    for (r = 0; r < 64; r++) {
        rn__vu o = rn__vu_set1(off * qsa[r]);
        uint32_t *cr = (uint32_t *)(void *)(C + r * 64);
        for (l = 0; l < 64; l += RN__VW) rn__vu_store(cr + l, rn__vu_sub(rn__vu_load(cr + l), o));
    }
}
#endif

#if defined(RN__Q8_VNNI)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
/* 8 x 32 register block of vpdpbusd (16 zmm accumulators). vpdpbusd multiplies unsigned by
 * signed bytes: Pb's quads are made unsigned (q + 128, an XOR of the sign bit) and Pa's broadcast
 * signed, so each sum carries 128 sum_k qa_k,r (taken off by rn__q8_unbias). */
RN__FN RN__NOINLINE void rn__q8_block_vnni(const signed char *pa, const signed char *pb, size_t kn, int first, int32_t *c)
{
    const __m512i flip = _mm512_set1_epi8((char)-128);
    size_t l;
    __m512i c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51, c60, c61, c70, c71;
    if (first) {
        c00 = _mm512_setzero_si512();
        c01 = c10 = c11 = c20 = c21 = c30 = c31 = c00;
        c40 = c41 = c50 = c51 = c60 = c61 = c70 = c71 = c00;
    } else {
#define RN__LC(R) c##R##0 = _mm512_loadu_si512((const void *)(c + R * 64)); c##R##1 = _mm512_loadu_si512((const void *)(c + R * 64 + 16));
        RN__LC(0) RN__LC(1) RN__LC(2) RN__LC(3) RN__LC(4) RN__LC(5) RN__LC(6) RN__LC(7)
#undef RN__LC
    }
    for (l = 0; l < kn; l++, pa += 256, pb += 256) {
        __m512i b0 = _mm512_xor_si512(_mm512_loadu_si512((const void *)pb), flip);
        __m512i b1 = _mm512_xor_si512(_mm512_loadu_si512((const void *)(pb + 64)), flip), a;
        int32_t w;
#define RN__FM(R) memcpy(&w, pa + 4 * R, 4); a = _mm512_set1_epi32(w); c##R##0 = _mm512_dpbusd_epi32(c##R##0, b0, a); c##R##1 = _mm512_dpbusd_epi32(c##R##1, b1, a);
        RN__FM(0) RN__FM(1) RN__FM(2) RN__FM(3) RN__FM(4) RN__FM(5) RN__FM(6) RN__FM(7)
#undef RN__FM
    }
#define RN__SC(R) _mm512_storeu_si512((void *)(c + R * 64), c##R##0); _mm512_storeu_si512((void *)(c + R * 64 + 16), c##R##1);
    RN__SC(0) RN__SC(1) RN__SC(2) RN__SC(3) RN__SC(4) RN__SC(5) RN__SC(6) RN__SC(7)
#undef RN__SC
}
/* rn__quant16 (above) on 16 rows at once */
RN__FN void rn__quant16_avx512(const float *P, size_t cols, const double *inv, const double *s, signed char *Q,
                               double *err, double *qq, int32_t *qs)
{
    __m512d il = _mm512_loadu_pd(inv), ih = _mm512_loadu_pd(inv + 8), sl = _mm512_loadu_pd(s), sh = _mm512_loadu_pd(s + 8);
    __m512d el = _mm512_setzero_pd(), eh = el, nl = el, nh = el;
    __m512i qsum = _mm512_setzero_si512();
    size_t m, t, kq = (cols + 3) / 4;
    for (m = 0; m < kq; m++) {
        __m128i b[4], t01l, t01h, t23l, t23h;
        signed char *qd = Q + m * 256;
        for (t = 0; t < 4; t++) {
            size_t l = 4 * m + t;
            __m512 x;
            __m512d xl, xh, ql, qh, dl, dh;
            __m256i il32, ih32;
            if (l >= cols) { b[t] = _mm_setzero_si128(); continue; }
            x = _mm512_loadu_ps(P + l * RN__BS);
            xl = _mm512_cvtps_pd(_mm512_castps512_ps256(x));
            xh = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
            il32 = _mm512_cvt_roundpd_epi32(_mm512_mul_pd(xl, il), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            ih32 = _mm512_cvt_roundpd_epi32(_mm512_mul_pd(xh, ih), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            ql = _mm512_cvtepi32_pd(il32);
            qh = _mm512_cvtepi32_pd(ih32);
            dl = _mm512_sub_pd(xl, _mm512_mul_pd(sl, ql));
            dh = _mm512_sub_pd(xh, _mm512_mul_pd(sh, qh));
            el = _mm512_add_pd(el, _mm512_mul_pd(dl, dl));
            eh = _mm512_add_pd(eh, _mm512_mul_pd(dh, dh));
            nl = _mm512_add_pd(nl, _mm512_mul_pd(ql, ql));
            nh = _mm512_add_pd(nh, _mm512_mul_pd(qh, qh));
            {
                __m512i q16 = _mm512_inserti64x4(_mm512_castsi256_si512(il32), ih32, 1);
                qsum = _mm512_add_epi32(qsum, q16);
                b[t] = _mm512_cvtepi32_epi8(q16);
            }
        }
        /* 4 k x 16 rows of bytes -> 16 rows x 4 k */
        t01l = _mm_unpacklo_epi8(b[0], b[1]); t01h = _mm_unpackhi_epi8(b[0], b[1]);
        t23l = _mm_unpacklo_epi8(b[2], b[3]); t23h = _mm_unpackhi_epi8(b[2], b[3]);
        _mm_storeu_si128((__m128i *)(void *)qd, _mm_unpacklo_epi16(t01l, t23l));
        _mm_storeu_si128((__m128i *)(void *)(qd + 16), _mm_unpackhi_epi16(t01l, t23l));
        _mm_storeu_si128((__m128i *)(void *)(qd + 32), _mm_unpacklo_epi16(t01h, t23h));
        _mm_storeu_si128((__m128i *)(void *)(qd + 48), _mm_unpackhi_epi16(t01h, t23h));
    }
    _mm512_storeu_pd(err, el); _mm512_storeu_pd(err + 8, eh);
    _mm512_storeu_pd(qq, nl); _mm512_storeu_pd(qq + 8, nh);
    _mm512_storeu_si512((void *)qs, qsum);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#elif defined(RN__Q8_AVX2)
/* 8 x 8 register block (8 ymm int32 accumulators; 15 registers live, none spilled). Two k-quads
 * at a time: Pb's bytes made unsigned (q + 64), each row's quads broadcast signed, vpmaddubsw's
 * int16 pair sums of the two quads added (|.| <= 4 127 63 = 32004: no wrap) and widened to int32
 * by vpmaddwd with ones; each sum then carries 64 sum_k qa_k,r (taken off by rn__q8_unbias). */
RN__FN RN__NOINLINE void rn__q8_block_avx2(const signed char *pa, const signed char *pb, size_t kn, int first, int32_t *c)
{
    const __m256i off = _mm256_set1_epi8(64), ones = _mm256_set1_epi16(1);
    size_t l;
    __m256i c0, c1, c2, c3, c4, c5, c6, c7, b0, b1, a, ah;
    int32_t w;
    if (first) {
        c0 = _mm256_setzero_si256();
        c1 = c2 = c3 = c4 = c5 = c6 = c7 = c0;
    } else {
#define RN__LC(R) c##R = _mm256_loadu_si256((const __m256i *)(const void *)(c + R * 64));
        RN__LC(0) RN__LC(1) RN__LC(2) RN__LC(3) RN__LC(4) RN__LC(5) RN__LC(6) RN__LC(7)
#undef RN__LC
    }
    for (l = 0; l + 1 < kn; l += 2, pa += 512, pb += 512) {
        b0 = _mm256_add_epi8(_mm256_loadu_si256((const __m256i *)(const void *)pb), off);
        b1 = _mm256_add_epi8(_mm256_loadu_si256((const __m256i *)(const void *)(pb + 256)), off);
#define RN__FM(R)                                                                                            \
    memcpy(&w, pa + 4 * R, 4); a = _mm256_set1_epi32(w);                                                    \
    memcpy(&w, pa + 256 + 4 * R, 4); ah = _mm256_set1_epi32(w);                                             \
    a = _mm256_add_epi16(_mm256_maddubs_epi16(b0, a), _mm256_maddubs_epi16(b1, ah));                        \
    c##R = _mm256_add_epi32(c##R, _mm256_madd_epi16(a, ones));
        RN__FM(0) RN__FM(1) RN__FM(2) RN__FM(3) RN__FM(4) RN__FM(5) RN__FM(6) RN__FM(7)
#undef RN__FM
    }
    if (l < kn) { /* the chunk's last quad, alone */
        b0 = _mm256_add_epi8(_mm256_loadu_si256((const __m256i *)(const void *)pb), off);
#define RN__FM(R)                                                                                            \
    memcpy(&w, pa + 4 * R, 4); a = _mm256_set1_epi32(w);                                                    \
    c##R = _mm256_add_epi32(c##R, _mm256_madd_epi16(_mm256_maddubs_epi16(b0, a), ones));
        RN__FM(0) RN__FM(1) RN__FM(2) RN__FM(3) RN__FM(4) RN__FM(5) RN__FM(6) RN__FM(7)
#undef RN__FM
    }
#define RN__SC(R) _mm256_storeu_si256((__m256i *)(void *)(c + R * 64), c##R);
    RN__SC(0) RN__SC(1) RN__SC(2) RN__SC(3) RN__SC(4) RN__SC(5) RN__SC(6) RN__SC(7)
#undef RN__SC
}
#elif defined(RN__Q8_SDOT)
/* 4 x 16 register block of sdot (16 q accumulators): per k-quad one load of Pa's four rows
 * (a lane each) and four of Pb's sixteen columns; signed by signed, so no correction. */
RN__FN void rn__q8_block_sdot(const signed char *pa, const signed char *pb, size_t kn, int first, int32_t *c)
{
    size_t l;
    int r, q;
    int32x4_t acc[4][4];
    for (r = 0; r < 4; r++)
        for (q = 0; q < 4; q++) acc[r][q] = first ? vdupq_n_s32(0) : vld1q_s32(c + r * 64 + q * 4);
    for (l = 0; l < kn; l++, pa += 256, pb += 256) {
        int8x16_t a = vld1q_s8(pa);
        int8x16_t b0 = vld1q_s8(pb), b1 = vld1q_s8(pb + 16), b2 = vld1q_s8(pb + 32), b3 = vld1q_s8(pb + 48);
#define RN__DOT(R)                                                                                 \
    acc[R][0] = vdotq_laneq_s32(acc[R][0], b0, a, R); acc[R][1] = vdotq_laneq_s32(acc[R][1], b1, a, R); \
    acc[R][2] = vdotq_laneq_s32(acc[R][2], b2, a, R); acc[R][3] = vdotq_laneq_s32(acc[R][3], b3, a, R);
        RN__DOT(0) RN__DOT(1) RN__DOT(2) RN__DOT(3)
#undef RN__DOT
    }
    for (r = 0; r < 4; r++)
        for (q = 0; q < 4; q++) vst1q_s32(c + r * 64 + q * 4, acc[r][q]);
}
#endif

RN__FN RN__NOINLINE void rn__q8_tile(const signed char *Qa, const signed char *Qb, size_t kq, const int32_t *qsa, int32_t *C)
{
#if defined(RN__Q8_VNNI)
    rn__q8_walk(Qa, Qb, kq, 8, 32, rn__q8_block_vnni, C);
    rn__q8_unbias(C, qsa, 128);
#elif defined(RN__Q8_AVX2)
    rn__q8_walk(Qa, Qb, kq, 8, 8, rn__q8_block_avx2, C);
    rn__q8_unbias(C, qsa, 64);
#elif defined(RN__Q8_SDOT)
    (void)qsa;
    rn__q8_walk(Qa, Qb, kq, 4, 16, rn__q8_block_sdot, C);
#else
    (void)qsa;
    rn__q8_tile_scalar(Qa, Qb, kq, C);
#endif
}
#if defined(RN__Q8_VNNI)
#define rn__quant16 rn__quant16_avx512
#else
#define rn__quant16 rn__quant16_scalar
#endif

/* The int8 screen's estimates for row a of a tile against its first n columns (n <= 64):
 * e[b] = (na + nb[b]) - (ga sb[b]) C[b], in double, unfused on every path (the bound in
 * rn__row_diameter_core allows the rounding either way); returns their maximum (-HUGE_VAL for
 * n = 0). The scalar form is the reference and the vector loop's remainder. */
RN__FN double rn__q8_erow_scalar(double na, double ga, const double *nb, const double *sb, const int32_t *Crow,
                                 size_t n, double *e)
{
    size_t b;
    double m = -HUGE_VAL;
    for (b = 0; b < n; b++) {
        double t1 = na + nb[b], t2 = ga * sb[b];
        e[b] = t1 - t2 * (double)Crow[b];
        m = e[b] > m ? e[b] : m;
    }
    return m;
}
#if defined(RN__SIMD)
#if defined(RN__AVX512) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
RN__FN double rn__q8_erow(double na, double ga, const double *nb, const double *sb, const int32_t *Crow, size_t n,
                          double *e)
{
    rn__vd vna = rn__vd_set1(na), vga = rn__vd_set1(ga), vm = rn__vd_set1(-HUGE_VAL);
    double m, t;
    size_t b = 0;
    for (; b + RN__VD <= n; b += RN__VD) {
        rn__vd t1 = rn__vd_add(vna, rn__vd_load(nb + b)), t2 = rn__vd_mul(vga, rn__vd_load(sb + b));
        rn__vd ev = rn__vd_sub(t1, rn__vd_mul(t2, rn__vd_loadi(Crow + b)));
        rn__vd_store(e + b, ev);
        vm = rn__vd_max(vm, ev);
    }
    m = rn__vd_hmax(vm);
    t = rn__q8_erow_scalar(na, ga, nb + b, sb + b, Crow + b, n - b, e + b);
    return t > m ? t : m;
}
#if defined(RN__AVX512) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#else
#define rn__q8_erow rn__q8_erow_scalar
#endif

/* Pack one row into column r of a panel (k x 64): P[l*64 + r] = float((row_l - mu_l) sc) with
 * the subtraction and the scaling in double, rounded once (mu may be NULL; sc is a power of two,
 * chosen by the caller so that the packed values and their products stay far from float32
 * overflow and underflow); returns the squared norm of the stored floats. */
RN__FN double rn__pack_row(const float *row, const double *mu, double sc, size_t k, float *P, size_t r)
{
    double s = 0.0;
    size_t l;
    for (l = 0; l < k; l++) {
        float v = (float)(((double)row[l] - (mu ? mu[l] : 0.0)) * sc);
        P[l * 64 + r] = v;
        s += (double)v * (double)v;
    }
    return s;
}
RN__FN void rn__pack_zero(size_t k, float *P, size_t r)
{
    size_t l;
    for (l = 0; l < k; l++) P[l * 64 + r] = 0.0f;
}

/* The exponent e with 2^e <= x < 2^(e+1) (x > 0 finite), 0 otherwise: a panel scaled by 2^-e
 * has norms in [1, 2), so float32 products of such panels neither overflow nor underflow. */
RN__FN int rn__exp2_of(double x)
{
    return (rn__finite_d(x) && x > 0.0) ? ilogb(x) : 0;
}

/* Matrix finite check, row by row (columns past cols never read). */
RN__FN int rn__mat_finite(const float *A, size_t rows, size_t cols, size_t ld)
{
    size_t r;
    for (r = 0; r < rows; r++)
        if (!rn__all_finite(A + r * ld, cols)) return 0;
    return 1;
}

/* Column mean of A in double into mu (cols) and the finiteness check, in one read of A.
 * Returns 0 (mu then partial) if A has a NaN/Inf. */
RN__FN int rn__col_mean_finite(const float *A, size_t rows, size_t cols, size_t ld, double *mu)
{
    size_t r, k;
    for (k = 0; k < cols; k++) mu[k] = 0.0;
    for (r = 0; r < rows; r++)
        if (!rn__row_gsum(A + r * ld, cols, mu)) return 0;
    for (k = 0; k < cols; k++) mu[k] /= (double)rows;
    return 1;
}

/* dst[k] = sum_r A[r][k] in double, rows in order */
RN__FN void rn__col_sum(const float *A, size_t rows, size_t cols, size_t ld, double *dst)
{
    size_t r, k;
    for (k = 0; k < cols; k++) dst[k] = 0.0;
    for (r = 0; r < rows; r++) {
        const float *a = A + r * ld;
        for (k = 0; k < cols; k++) dst[k] += (double)a[k];
    }
}

/* Column mean of A in double into mu (cols): rn__col_sum, then one division per column. */
RN__FN void rn__col_mean(const float *A, size_t rows, size_t cols, size_t ld, double *mu)
{
    size_t k;
    rn__col_sum(A, rows, cols, ld, mu);
    for (k = 0; k < cols; k++) mu[k] /= (double)rows;
}

/* All n doubles finite (from the bits: see rn__finite_d). */
RN__FN int rn__dfinite(const double *x, size_t n)
{
    size_t k;
    for (k = 0; k < n; k++)
        if (!rn__finite_d(x[k])) return 0;
    return 1;
}

/* ======================================================================================= */
/* 1.1 Hilbert distance */

RNDEF rn_status rn_hilbert_logits(const float *z0, const float *z1, size_t n, double *out)
{
    double mx = -HUGE_VAL, mn = HUGE_VAL;
    size_t k;
    if (!z0 || !z1 || !out) return RN_ERR_NULL;
    if (n == 0 || n > (size_t)-1 / sizeof(float)) return RN_ERR_SIZE;
    if (!rn__all_finite(z0, n) || !rn__all_finite(z1, n)) return RN_ERR_NONFINITE;
    for (k = 0; k < n; k++) {
        double d = (double)z1[k] - (double)z0[k]; /* exact for floats within 2^29 of each other */
        mx = d > mx ? d : mx;
        mn = d < mn ? d : mn;
    }
    *out = mx - mn;
    return RN_OK;
}

RNDEF rn_status rn_hilbert_probs(const float *p, const float *q, size_t n, double *out)
{
    double mx = 0.0, mn = HUGE_VAL;
    size_t k;
    if (!p || !q || !out) return RN_ERR_NULL;
    if (n == 0 || n > (size_t)-1 / sizeof(float)) return RN_ERR_SIZE;
    if (!rn__all_finite(p, n) || !rn__all_finite(q, n)) return RN_ERR_NONFINITE;
    for (k = 0; k < n; k++)
        if (!(p[k] > 0.0f) || !(q[k] > 0.0f)) return RN_ERR_DOMAIN;
    /* log is monotone: osc(log p - log q) = log(max ratio / min ratio); float ratios cannot
     * overflow double, and neither can their quotient (<= 2^(2*277)). */
    for (k = 0; k < n; k++) {
        double r = (double)p[k] / (double)q[k];
        mx = r > mx ? r : mx;
        mn = r < mn ? r : mn;
    }
    *out = log(mx / mn);
    return RN_OK;
}

RNDEF double rn_tv_bound(double hilbert_distance)
{
    if (rn__nan_d(hilbert_distance) || hilbert_distance < 0.0) return (double)NAN;
    return tanh(0.25 * hilbert_distance);
}

/* ======================================================================================= */
/* 1.2 Row diameter */

typedef struct rn__radidx { double r; size_t idx; } rn__radidx;

RN__FN int rn__cmp_radidx(const void *a, const void *b)
{
    const rn__radidx *x = (const rn__radidx *)a, *y = (const rn__radidx *)b;
    if (x->r > y->r) return -1;
    if (x->r < y->r) return 1;
    return (x->idx < y->idx) ? -1 : (x->idx > y->idx);
}

/* Best pair so far, with the deterministic tie rule (larger distance, then smaller (i, j)). */
typedef struct rn__best { double d2; size_t i, j; } rn__best;

RN__FN void rn__best_offer(rn__best *b, double d2, size_t i, size_t j)
{
    if (i > j) { size_t t = i; i = j; j = t; }
    if (i == j) return;
    if (d2 > b->d2 || (d2 == b->d2 && (i < b->i || (i == b->i && j < b->j)))) {
        b->d2 = d2; b->i = i; b->j = j;
    }
}

/* Farthest-point sweeps from the row of largest radius: lower bound (an attained distance, its
 * pair in *best) and the max radius about mu. 3 sweeps, each O(rows*cols) in double. */
RN__FN void rn__farthest_sweeps(const float *S, size_t rows, size_t cols, size_t ld,
                                size_t a, rn__best *best)
{
    size_t r, sweep;
    for (sweep = 0; sweep < 3; sweep++) {
        size_t farthest = a;
        double fd = -1.0;
        for (r = 0; r < rows; r++) {
            double d2;
            if (r == a) continue;
            d2 = rn__sumsq_ff(S + r * ld, S + a * ld, cols);
            if (d2 > fd) { fd = d2; farthest = r; }
        }
        rn__best_offer(best, fd, a, farthest);
        if (farthest == a) break;
        a = farthest;
    }
}

/* Radius of the farthest row from mu (its index in *a). */
RN__FN double rn__max_radius(const float *S, size_t rows, size_t cols, size_t ld, const double *mu, size_t *a)
{
    size_t r;
    double rmax2 = -1.0;
    *a = 0;
    for (r = 0; r < rows; r++) {
        double d2 = rn__sumsq_fd(S + r * ld, mu, cols);
        if (d2 > rmax2) { rmax2 = d2; *a = r; }
    }
    return sqrt(rmax2);
}

#ifndef RN_BOUNDS_STACK_COLS
#define RN_BOUNDS_STACK_COLS 128 /* columns whose mean rn_row_diameter_bounds keeps on its stack */
#endif

/* the bracket of a validated S (rows >= 2) about its mean, mu: cols doubles of scratch */
RN__FN void rn__bounds_core(const float *S, size_t rows, size_t cols, size_t ld, double *mu, double *lo, double *hi)
{
    rn__best best;
    size_t a;
    double rmax, l, h;
    best.d2 = -1.0; best.i = 0; best.j = 0;
    rn__col_mean(S, rows, cols, ld, mu);
    rmax = rn__max_radius(S, rows, cols, ld, mu, &a);
    rn__farthest_sweeps(S, rows, cols, ld, a, &best);
    l = sqrt(best.d2 > 0.0 ? best.d2 : 0.0);
    h = 2.0 * rmax;
    if (h > 2.0 * l) h = 2.0 * l; /* D <= 2 r_a <= 2 lo (SPEC 1.2 bracket) */
    if (h < l) h = l;
    *lo = l;
    *hi = h;
}

/* the argument checks both forms of the bracket share */
RN__FN rn_status rn__bounds_check(const float *S, size_t rows, size_t cols, size_t ld, double *lo, double *hi)
{
    if (!S || !lo || !hi) return RN_ERR_NULL;
    if (!rn__extent(rows, cols, ld)) return RN_ERR_SIZE;
    return RN_OK; /* the finiteness of S is checked by the callers after any overlap check */
}

RNDEF size_t rn_row_diameter_bounds_workspace_size(size_t cols)
{
    if (cols == 0 || cols > ((size_t)-1 - 64) / sizeof(double)) return 0;
    return cols * sizeof(double) + 64;
}

RNDEF rn_status rn_row_diameter_bounds_ws(const float *S, size_t rows, size_t cols, size_t ld,
                                          double *lo, double *hi, void *ws, size_t ws_bytes)
{
    rn_status st = rn__bounds_check(S, rows, cols, ld, lo, hi);
    size_t need;
    char *cur, *end;
    double *mu;
    if (st != RN_OK) return st;
    if (!ws) return RN_ERR_NULL;
    need = rn_row_diameter_bounds_workspace_size(cols);
    if (need == 0 || ws_bytes < need) return RN_ERR_SIZE;
    if (rn__overlap(ws, ws_bytes, S, rn__extent(rows, cols, ld) * sizeof(float)) ||
        rn__overlap(ws, ws_bytes, lo, sizeof *lo) || rn__overlap(ws, ws_bytes, hi, sizeof *hi))
        return RN_ERR_ALIAS;
    if (!rn__mat_finite(S, rows, cols, ld)) return RN_ERR_NONFINITE; /* after the overlaps (issue 40) */
    if (rows == 1) { *lo = 0.0; *hi = 0.0; return RN_OK; }
    cur = (char *)ws; end = cur + ws_bytes;
    mu = (double *)rn__carve(&cur, end, cols * sizeof(double));
    RN_ASSERT(mu);
    rn__bounds_core(S, rows, cols, ld, mu, lo, hi);
    return RN_OK;
}

RNDEF rn_status rn_row_diameter_bounds(const float *S, size_t rows, size_t cols, size_t ld,
                                       double *lo, double *hi)
{
    double mu_stack[RN_BOUNDS_STACK_COLS > 0 ? RN_BOUNDS_STACK_COLS : 1], *mu = mu_stack;
    rn_status st = rn__bounds_check(S, rows, cols, ld, lo, hi);
    if (st != RN_OK) return st;
    if (!rn__mat_finite(S, rows, cols, ld)) return RN_ERR_NONFINITE;
    if (rows == 1) { *lo = 0.0; *hi = 0.0; return RN_OK; }
    if (cols > (size_t)RN_BOUNDS_STACK_COLS) {
        if (cols > (size_t)-1 / sizeof(double)) return RN_ERR_SIZE;
        mu = (double *)RN_MALLOC(cols * sizeof(double));
        if (!mu) return RN_ERR_NOMEM;
    }
    rn__bounds_core(S, rows, cols, ld, mu, lo, hi);
    if (mu != mu_stack) RN_FREE(mu);
    return RN_OK;
}

/* One side of the diameter's tile scan (the whole matrix, or one block of a block pair): its
 * rows (global indices off + r), the rows in radius order, and the packed panels of its
 * first nbact blocks. Units: the radii in ord and brad[2P+1] are those of S; the packed
 * panels X, their squared norms sqn, the block centres bcen and block radii brad[2P] are in
 * scaled units (times sc = 2^-e). */
typedef struct rn__diam_side {
    const float *S;
    size_t ld, rows, off, nbact;
    float *X;
    rn__radidx *ord;
    double *sqn, *bcen, *brad;
    /* the int8 screen (rn__diam_quant): panels Q, per row (radius order) the scale qs and the
     * sum qsum of its quantised values, per block bq[2P] = max eps, bq[2P+1] = Rb (scaled units) */
    signed char *Q;
    double *qs, *bq;
    int32_t *qsum;
} rn__diam_side;

/* Shared read-only data of the tile scan: side b is side a for the pairs within one block
 * (self), another block otherwise. Rf, M and dabs are in scaled units. */
typedef struct rn__diam_ctx {
    rn__diam_side a, b;
    int self, screen;
    size_t cols, kq;
    double M, up, Rf, sc, dabs, qmul;
} rn__diam_ctx;

/* The screens of the tile scan: float32 products (every build), the int8 screen where it is
 * faster (RN__Q8_FAST: AVX512-VNNI, AVX2, Armv8.2 dot product) and the rows fit
 * (RN__Q8_MAXCOLS), a tile falling back to float32 where the int8 bound is too wide to screen
 * (RN__Q8_WIDE) or lets too many pairs through (RN__Q8_MAXCAND);
 * RN__SCREEN_Q8_ONLY (tests) uses int8 for every tile, on any build; RN__SCREEN_Q8 asks for the
 * int8 screen (with its fallbacks) on any build. */
enum { RN__SCREEN_AUTO = 0, RN__SCREEN_F32 = 1, RN__SCREEN_Q8 = 2, RN__SCREEN_Q8_ONLY = 3 };

/* Work counters of one diameter call: tiles met (float32 or int8 products, or the fallback),
 * of them int8 (q8tiles), and pairs verified in double (internal: the tests hold the pruning's
 * effectiveness to them). screen: the screen asked for (in; RN__SCREEN_AUTO: the build's
 * choice), then the one used (out). qmul (in): the int8 bound's factor, 1 unless a test shrinks
 * it to show that its inputs reach the bound (0 reads as 1). */
typedef struct rn__diam_stats { size_t tiles, q8tiles, verified; int screen; double qmul; } rn__diam_stats;

/* Verify one candidate pair (positions pa of side a, qb of side b, in radius order) in double. */
RN__FN void rn__diam_verify(const rn__diam_ctx *c, size_t pa, size_t qb, rn__best *best, rn__diam_stats *cnt)
{
    size_t ia = c->a.ord[pa].idx, ib = c->b.ord[qb].idx;
    cnt->verified++;
    rn__best_offer(best, rn__sumsq_ff(c->a.S + ia * c->a.ld, c->b.S + ib * c->b.ld, c->cols), c->a.off + ia,
                   c->b.off + ib);
}

/* The threshold of a tile's estimates (each within Mt of its pair's squared distance, scaled
 * units; sc the scale): a pair whose estimate is below it cannot reach LB, the best distance so
 * far (see rn__row_diameter_core). */
RN__FN double rn__diam_thr(const rn__best *best, double sc, double Mt)
{
    double LBs = sqrt(best->d2 > 0.0 ? best->d2 : 0.0) * sc;
    return LBs * LBs * (1.0 - 1e-12) - Mt - 1e-300;
}

/* A tile of the scan (block p of side a against block q of side b: rows p0 .. p0 + pm, columns
 * q0 .. q0 + qm, the pairs b < a only on the diagonal of the self scan) with its estimates of the
 * pairs' squared distances, within Mt: the float32 products C (Mt = M) or the int8 screen's
 * products Ci (Mt = Mq). e: a row of estimates (RN__BS doubles, after the thread's tile). */
typedef struct rn__tile {
    size_t p0, q0, pm, qm;
    int diag;
    const float *C;
    const int32_t *Ci;
    double *e, Mt;
} rn__tile;

/* The tile of blocks p, q in the thread's tile C, with the float32 products' estimates. */
RN__FN void rn__tile_init(const rn__diam_ctx *c, size_t p, size_t q, float *C, rn__tile *t)
{
    t->p0 = p * RN__BS;
    t->q0 = q * RN__BS;
    t->pm = (t->p0 + RN__BS < c->a.rows ? t->p0 + RN__BS : c->a.rows) - t->p0;
    t->qm = (t->q0 + RN__BS < c->b.rows ? t->q0 + RN__BS : c->b.rows) - t->q0;
    t->diag = c->self && p == q;
    t->C = C;
    t->Ci = RN__NULL;
    t->e = (double *)(void *)(C + RN__BS * RN__BS);
    t->Mt = c->M;
}

/* The estimates of row a of tile t into t->e; returns their maximum (-HUGE_VAL: no pair). */
RN__FN double rn__tile_erow(const rn__diam_ctx *c, const rn__tile *t, size_t a)
{
    const rn__diam_side *A = &c->a, *B = &c->b;
    size_t n = t->diag ? a : t->qm, b;
    double m = -HUGE_VAL;
    if (t->Ci)
        return rn__q8_erow(A->sqn[t->p0 + a], 2.0 * A->qs[t->p0 + a], B->sqn + t->q0, B->qs + t->q0,
                           t->Ci + a * RN__BS, n, t->e);
    for (b = 0; b < n; b++) {
        double e = A->sqn[t->p0 + a] + B->sqn[t->q0 + b] - 2.0 * (double)t->C[a * RN__BS + b];
        t->e[b] = e;
        m = e > m ? e : m;
    }
    return m;
}

/* The tile's largest estimate (-HUGE_VAL: no pair), in row *bi (the first such row). */
RN__FN double rn__tile_max(const rn__diam_ctx *c, const rn__tile *t, size_t *bi)
{
    double emax = -HUGE_VAL;
    size_t a;
    *bi = 0;
    for (a = 0; a < t->pm; a++) {
        double m = rn__tile_erow(c, t, a);
        if (m > emax) { emax = m; *bi = a; }
    }
    return emax;
}

/* The verification of a tile's candidates, for both screens: nothing where its largest estimate
 * emax (in row bi) is below the threshold; else that pair first (it raises LB and tightens the
 * rest), then every pair whose estimate reaches the threshold, which rises with the best. */
RN__FN void rn__tile_verify(const rn__diam_ctx *c, const rn__tile *t, double emax, size_t bi, rn__best *best,
                            rn__diam_stats *cnt)
{
    size_t a, b, bj = 0;
    double thr;
    if (!rn__finite_d(emax)) return; /* still -HUGE_VAL: no pair in the tile */
    thr = rn__diam_thr(best, c->sc, t->Mt);
    if (emax < thr) return;
    rn__tile_erow(c, t, bi);
    for (b = 0; b < (t->diag ? bi : t->qm); b++)
        if (t->e[b] == emax) { bj = b; break; }
    rn__diam_verify(c, t->p0 + bi, t->q0 + bj, best, cnt);
    thr = rn__diam_thr(best, c->sc, t->Mt);
    for (a = 0; a < t->pm; a++) {
        size_t bend = t->diag ? a : t->qm;
        if (rn__tile_erow(c, t, a) < thr) continue;
        for (b = 0; b < bend; b++) {
            if (t->e[b] >= thr && !(a == bi && b == bj)) {
                double d2o = best->d2;
                rn__diam_verify(c, t->p0 + a, t->q0 + b, best, cnt);
                if (best->d2 > d2o) thr = rn__diam_thr(best, c->sc, t->Mt);
            }
        }
    }
}

/* The int8 screen's error bound for the pairs of block p (side a) and block q (side b): every
 * estimate e of such a pair is within Mq of the pair's true squared distance (scaled units; see
 * rn__row_diameter_core). */
RN__FN double rn__q8_bound(const rn__diam_ctx *c, size_t p, size_t q)
{
    const rn__diam_side *A = &c->a, *B = &c->b;
    return (c->M + 2.0 * (A->bq[2 * p] * B->bq[2 * q + 1] + A->bq[2 * p + 1] * B->bq[2 * q]) * (1.0 + 1e-12)) * c->qmul;
}

/* The tile of block p (side a) and block q (side b) with the int8 screen: estimates e from the
 * exact int32 products, every pair with e >= LB_s^2 - Mq verified (rn__tile_verify).
 * Returns 0, having verified nothing, where more than RN__Q8_MAXCAND pairs would be (unless
 * int8 is asked for every tile): the caller then runs the float32 tile, whose tighter bound lets
 * fewer through. C: the thread's tile (the int32 products), then RN__BS doubles (a row of e);
 * t: the caller's tile record, made the int8 tile's (one record on the stack, not two). */
RN__FN int rn__diam_q8(const rn__diam_ctx *c, size_t p, size_t q, double Mq, rn__best *best, rn__diam_stats *cnt,
                       float *C, rn__tile *t)
{
    const rn__diam_side *A = &c->a, *B = &c->b;
    size_t a, b, bi;
    double emax, thr;
    rn__tile_init(c, p, q, C, t);
    t->C = RN__NULL;
    t->Ci = (const int32_t *)(void *)C;
    t->Mt = Mq;
    rn__q8_tile(A->Q + p * RN__Q8_PANEL(c->kq), B->Q + q * RN__Q8_PANEL(c->kq), c->kq, A->qsum + t->p0,
                (int32_t *)(void *)C);
    emax = rn__tile_max(c, t, &bi);
    thr = rn__diam_thr(best, c->sc, Mq);
    if (rn__finite_d(emax) && emax >= thr && c->screen != RN__SCREEN_Q8_ONLY) {
        /* many candidates (rows the int8 bound serves badly): the float32 tile instead */
        size_t n = 0;
        for (a = 0; a < t->pm && n <= RN__Q8_MAXCAND; a++) {
            if (rn__tile_erow(c, t, a) < thr) continue;
            for (b = 0; b < (t->diag ? a : t->qm); b++) n += t->e[b] >= thr;
        }
        if (n > RN__Q8_MAXCAND) return 0;
    }
    cnt->tiles++;
    cnt->q8tiles++;
    rn__tile_verify(c, t, emax, bi, best, cnt);
    return 1;
}

/* Block row p of side a against the blocks of side b (q <= p for the self scan), improving
 * *best (see the bounds at rn__row_diameter_core); C: the thread's RN__BS x RN__BS tile. */
RN__FN void rn__diam_row(const rn__diam_ctx *c, size_t p, rn__best *best, rn__diam_stats *cnt, float *C)
{
    const rn__diam_side *A = &c->a, *B = &c->b;
    size_t cols = c->cols, q, qend = c->self ? p + 1 : B->nbact;
    double M = c->M, up = c->up, Rf = c->Rf, sc = c->sc;
    size_t p0 = p * RN__BS, pm = (p0 + RN__BS < A->rows ? p0 + RN__BS : A->rows) - p0;
    double LB = sqrt(best->d2 > 0.0 ? best->d2 : 0.0), LBs;
    if (B->nbact == 0) return;
    /* radii sorted descending: the best partner block is block 0 */
    if ((A->brad[2 * p + 1] + B->brad[1]) * (1.0 + 1e-12) < LB) return;
    for (q = 0; q < qend; q++) {
        size_t q0 = q * RN__BS, qm = (q0 + RN__BS < B->rows ? q0 + RN__BS : B->rows) - q0;
        size_t a, b, bi;
        int diag = c->self && p == q;
        double emax;
        rn__tile t;
        LB = sqrt(best->d2 > 0.0 ? best->d2 : 0.0);
        if ((A->brad[2 * p + 1] + B->brad[2 * q + 1]) * (1.0 + 1e-12) < LB) break; /* later q smaller */
        if (!diag) {
            size_t kk;
            double s2 = 0.0;
            for (kk = 0; kk < cols; kk++) {
                double d = A->bcen[p * cols + kk] - B->bcen[q * cols + kk];
                s2 += d * d;
            }
            if ((sqrt(s2) + A->brad[2 * p] + B->brad[2 * q] + up * 2.0 * Rf + c->dabs) * (1.0 + 1e-12) < LB * sc) continue;
        }
        if (!rn__finite_d(M)) { /* M = HUGE_VAL (bits: -ffast-math folds M == HUGE_VAL) */
            /* no usable float32 error bound: every pair of the tile is verified in double */
            for (a = 0; a < pm; a++) {
                size_t bend = diag ? a : qm;
                for (b = 0; b < bend; b++) rn__diam_verify(c, p0 + a, q0 + b, best, cnt);
            }
            cnt->tiles++;
            continue;
        }
        if (c->screen >= RN__SCREEN_Q8) {
            /* the int8 bound of this block pair (rn__row_diameter_core); a float32 tile where
             * it is too wide to screen (unless int8 is asked for every tile) */
            double Mq = rn__q8_bound(c, p, q);
            LBs = LB * sc;
            if ((c->screen == RN__SCREEN_Q8_ONLY || Mq <= RN__Q8_WIDE * LBs * LBs) &&
                rn__diam_q8(c, p, q, Mq, best, cnt, C, &t))
                continue;
        }
        rn__panel_tile(A->X + p * cols * RN__BS, B->X + q * cols * RN__BS, cols, C);
        cnt->tiles++;
        rn__tile_init(c, p, q, C, &t);
        emax = rn__tile_max(c, &t, &bi);
        rn__tile_verify(c, &t, emax, bi, best, cnt);
    }
}

/* The tile scan's float32 tiles, one per thread (RN__BS x RN__BS floats each, 16 KB), are
 * workspace, not stack (docs/embedding.md, "Stack"); the workspace sizes count rn__team() of
 * them, and a smaller workspace (down to one tile) runs the scan on fewer threads. */
#define RN__TILE_FLOATS ((size_t)RN__BS * RN__BS)
#define RN__DIAM_TILE_FLOATS (RN__TILE_FLOATS + 2 * RN__BS) /* + a row of int8-screen estimates (doubles) */
RN__FN size_t rn__team(void)
{
#ifdef _OPENMP
    int t = omp_in_parallel() ? 1 : omp_get_max_threads();
    return t > 1 ? (size_t)t : 1;
#else
    return 1;
#endif
}
/* ---- threads on a shared machine ----------------------------------------------------------
 * A team region ends when its slowest member does. On a machine with other work (a second
 * experiment, a test suite, busy processes) a member may wait a scheduler time slice to run,
 * and under OpenMP's default wait policy the members that arrived spin meanwhile, taking the
 * cores the late one needs (issue 40, bench/host_share.c). So the library watches its team
 * regions (the RowNorm sweep, the diameter's tile scan, the RMS tiles): each notes when its last
 * member started and its first finished. When 40 % of 30 ms of team-region time was lost that
 * way the machine is short of cores, and the library's regions run on the calling thread for
 * 20 ms, twice as long each time the team is held up again soon after (at most 1 s), then try
 * the team again. Nothing of the host's is changed; results do not depend on the team (the
 * passes are per row chunk, the scans' tie rule is thread-free), so only the speed changes. Elementwise passes below RN__PAR_MIN elements stay on one thread. The
 * state is four doubles per process, read and written with OpenMP atomics; it needs OpenMP 3.1
 * (older runtimes keep the team always). muon.h does the same for its regions (muon_team). */
#define RN__PAR_MIN 65536.0 /* elements below which a RowNorm pass stays on one thread */
#if defined(_OPENMP) && _OPENMP >= 201107
#define RN__GATE_WINDOW 0.03    /* team-region seconds judged together */
#define RN__GATE_LOST_FRAC 0.4   /* lost share of them that marks the team held up */
#define RN__GATE_SOLO_MIN 0.02   /* the first one-thread period (s) */
#define RN__GATE_SOLO_MAX 1.0    /* the longest */
#define RN__GATE_RETRY 0.5       /* held up within (span + this) after a period ended: the next doubles */
static double rn__gate_until; /* omp_get_wtime() before which regions run on one thread */
static double rn__gate_span;  /* length of the last one-thread period */
static double rn__gate_wall;  /* team-region seconds since the last verdict */
static double rn__gate_lost;  /* ... and the seconds their members lost in them */

/* The team for a region that wants nt threads: nt, or 1 during a one-thread period. */
RN__FN size_t rn__gate(size_t nt)
{
    double until;
    if (nt <= 1) return nt;
    RN__OMP(omp atomic read)
    until = rn__gate_until;
    return until > 0.0 && omp_get_wtime() < until ? 1 : nt;
}

/* After a team region forked at t0 whose members started by last_in and began to wait from
 * first_out. */
RN__FN void rn__gate_note(double t0, double last_in, double first_out)
{
    double t1 = omp_get_wtime(), lost = (last_in - t0) + (t1 - first_out), wall = t1 - t0, span, until;
    RN__OMP(omp atomic)
    rn__gate_lost += lost;
    RN__OMP(omp atomic)
    rn__gate_wall += wall;
    RN__OMP(omp atomic read)
    wall = rn__gate_wall;
    if (wall < RN__GATE_WINDOW) return;
    RN__OMP(omp atomic read)
    lost = rn__gate_lost;
    RN__OMP(omp atomic write)
    rn__gate_wall = 0.0;
    RN__OMP(omp atomic write)
    rn__gate_lost = 0.0;
    if (!(lost > RN__GATE_LOST_FRAC * wall)) return;
    RN__OMP(omp atomic read)
    span = rn__gate_span;
    RN__OMP(omp atomic read)
    until = rn__gate_until;
    /* held up again soon after the last period ended: twice as long; else the shortest */
    if (until > 0.0 && t1 - until < span + RN__GATE_RETRY)
        span = 2.0 * span > RN__GATE_SOLO_MAX ? RN__GATE_SOLO_MAX : 2.0 * span;
    else
        span = RN__GATE_SOLO_MIN;
    RN__OMP(omp atomic write)
    rn__gate_span = span;
    RN__OMP(omp atomic write)
    rn__gate_until = t1 + span;
}
#define RN__GATE_VARS double gate_t0 = omp_get_wtime(), gate_in = gate_t0, gate_out = 1e300; int gate_n = 0
#define RN__GATE_CLAUSES reduction(max : gate_in) reduction(min : gate_out) reduction(+ : gate_n)
#define RN__GATE_IN() (gate_in = omp_get_wtime(), gate_n = 1)
#define RN__GATE_OUT() (gate_out = omp_get_wtime())
#define RN__GATE_NOTE() (gate_n > 1 ? rn__gate_note(gate_t0, gate_in, gate_out) : (void)0)
#else
#define RN__GATE_VARS int gate_unused = 0
#define RN__GATE_CLAUSES
#define RN__GATE_IN() ((void)0)
#define RN__GATE_OUT() ((void)0)
#define RN__GATE_NOTE() ((void)gate_unused)
RN__FN size_t rn__gate(size_t nt) { return nt; }
#endif
/* a pass over `work` elements on the team? */
#define RN__PAR(work) if ((double)(work) >= RN__PAR_MIN && rn__gate(rn__team()) > 1)

RN__FN size_t rn__diam_tiles_bytes(size_t nt)
{
    return rn__add(rn__mul(rn__mul(nt, RN__DIAM_TILE_FLOATS), sizeof(float)), 64);
}

/* Workspace of one side of rows x cols. */
RN__FN size_t rn__diam_side_bytes(size_t rows, size_t cols)
{
    size_t nb, s;
    if (rows == 0) return 0;
    nb = rows / RN__BS + 1;
    s = rn__mul(rn__mul(rn__mul(nb, RN__BS), cols), sizeof(float));          /* panels */
    s = rn__add(s, rn__mul(rows, sizeof(rn__radidx)));                       /* order */
    s = rn__add(s, rn__mul(rows, sizeof(double)));                           /* sqn */
    s = rn__add(s, rn__mul(rn__mul(nb, cols), sizeof(double)));              /* block centres */
    s = rn__add(s, rn__mul(nb, 2 * sizeof(double)));                         /* block radii */
    s = rn__add(s, rn__mul(nb, RN__Q8_PANEL(cols / 4 + 1)));                 /* int8 panels */
    s = rn__add(s, rn__mul(rows, sizeof(double)));                           /* scales */
    s = rn__add(s, rn__mul(rn__mul(nb, RN__BS), sizeof(int32_t)));           /* sums */
    s = rn__add(s, rn__mul(nb, 2 * sizeof(double)));                         /* int8 bounds */
    return rn__add(s, 9 * 64);
}

/* rn_row_diameter_workspace_size with room for nt tiles (nt 1: the least that works) */
RN__FN size_t rn__diam_ws_bytes(size_t rows, size_t cols, size_t nt)
{
    size_t s;
    if (rows == 0 || cols == 0) return 0;
    s = rn__add(rn__diam_side_bytes(rows, cols), rn__mul(cols, sizeof(double))); /* + mu */
    s = rn__add(s, 3 * 64);
    s = rn__add(s, rn__diam_tiles_bytes(nt));
    return s == (size_t)-1 ? 0 : s;
}

RNDEF size_t rn_row_diameter_workspace_size(size_t rows, size_t cols)
{
    return rn__diam_ws_bytes(rows, cols, rn__team());
}

RN__FN void rn__diam_carve_side(rn__diam_side *sd, const float *S, size_t rows, size_t cols, size_t ld, size_t off,
                                char **cur, char *end)
{
    size_t nb = (rows + RN__BS - 1) / RN__BS;
    sd->S = S; sd->rows = rows; sd->ld = ld; sd->off = off; sd->nbact = 0;
    sd->X = (float *)rn__carve(cur, end, nb * RN__BS * cols * sizeof(float));
    sd->ord = (rn__radidx *)rn__carve(cur, end, rows * sizeof(rn__radidx));
    sd->sqn = (double *)rn__carve(cur, end, rows * sizeof(double));
    sd->bcen = (double *)rn__carve(cur, end, nb * cols * sizeof(double));
    sd->brad = (double *)rn__carve(cur, end, nb * 2 * sizeof(double));
    sd->Q = (signed char *)rn__carve(cur, end, nb * RN__Q8_PANEL((cols + 3) / 4));
    sd->qs = (double *)rn__carve(cur, end, rows * sizeof(double));
    sd->qsum = (int32_t *)rn__carve(cur, end, nb * RN__BS * sizeof(int32_t));
    sd->bq = (double *)rn__carve(cur, end, nb * 2 * sizeof(double));
    RN_ASSERT(sd->X && sd->ord && sd->sqn && sd->bcen && sd->brad && sd->Q && sd->qs && sd->qsum && sd->bq);
}

/* Radii about mu in ord, sorted descending (ties by index): ord[0].idx is the first row of
 * largest radius. */
RN__FN void rn__diam_radii(rn__diam_side *sd, size_t cols, const double *mu)
{
    size_t r;
    for (r = 0; r < sd->rows; r++) {
        sd->ord[r].r = sqrt(rn__sumsq_fd(sd->S + r * sd->ld, mu, cols));
        sd->ord[r].idx = r;
    }
    qsort(sd->ord, sd->rows, sizeof(rn__radidx), rn__cmp_radidx);
}

/* Blocks whose largest radius plus Rother stays below LB0 never pair with anything (radii are
 * sorted, LB only grows): only a prefix of them is packed. */
RN__FN void rn__diam_active(rn__diam_side *sd, double Rother, double LB0)
{
    size_t nb = (sd->rows + RN__BS - 1) / RN__BS, n = 0;
    while (n < nb && !((sd->ord[n * RN__BS].r + Rother) * (1.0 + 1e-12) < LB0)) n++;
    sd->nbact = n;
}

/* Centred float rows in radius order, scaled by sc, packed as panels of RN__BS rows; their
 * squared norms, the block centres (double) and radii of the float rows, and brad[2P+1] = the
 * block's largest exact radius. Returns the largest packed norm (scaled units) or Rf. */
RN__FN double rn__diam_pack(rn__diam_side *sd, size_t cols, const double *mu, double sc, double Rf)
{
    size_t p, r, k;
    for (p = 0; p < sd->nbact * RN__BS; p++) {
        float *P = sd->X + (p / RN__BS) * cols * RN__BS;
        if (p < sd->rows) {
            sd->sqn[p] = rn__pack_row(sd->S + sd->ord[p].idx * sd->ld, mu, sc, cols, P, p % RN__BS);
            if (sqrt(sd->sqn[p]) > Rf) Rf = sqrt(sd->sqn[p]);
        } else {
            rn__pack_zero(cols, P, p % RN__BS);
        }
    }
    for (p = 0; p < sd->nbact; p++) {
        size_t r0 = p * RN__BS, cnt = (r0 + RN__BS < sd->rows ? r0 + RN__BS : sd->rows) - r0;
        const float *P = sd->X + p * cols * RN__BS;
        /* d2: the rows' squared distances to the centre, in the int8 scales' place (written later
         * by rn__diam_quant), not on the stack (docs/embedding.md, "Stack") */
        double *c = sd->bcen + p * cols, rho = 0.0, *d2 = sd->qs + r0;
        for (r = 0; r < cnt; r++) d2[r] = 0.0;
        for (k = 0; k < cols; k++) {
            double m = 0.0;
            for (r = 0; r < cnt; r++) m += (double)P[k * RN__BS + r];
            c[k] = m / (double)cnt;
            for (r = 0; r < cnt; r++) { double d = (double)P[k * RN__BS + r] - c[k]; d2[r] += d * d; }
        }
        for (r = 0; r < cnt; r++) rho = d2[r] > rho ? d2[r] : rho;
        sd->brad[2 * p] = sqrt(rho);
        sd->brad[2 * p + 1] = sd->ord[r0].r;
    }
    return Rf;
}

/* The float32 error bound M of the tile estimates (see rn__row_diameter_core), from Rf. */
RN__FN void rn__diam_bound(rn__diam_ctx *ctx, size_t cols, double sc, double Rf)
{
    double up = ldexp(1.0, -24) * (1.0 + ldexp(1.0, -28)), tau = ldexp(1.0, -126);
    double gk = ((double)cols + 16.0) * ldexp(1.0, -24), M;
    gk = gk / (1.0 - gk);
    Rf *= 1.0 + 1e-6;
    M = (2.0 * gk + 8.2 * up + 1e-12) * Rf * Rf
        + (6.0 * ((double)cols + 16.0) + 32.0 * sqrt((double)cols) + 64.0) * tau;
    /* cols ~ 2^22 and beyond (no useful float bound) or scaled data that float32 cannot hold
     * (not expected: the packed values are below 2 in magnitude): verify without tiles */
    if (!(gk < 0.25) || !rn__finite_d(M)) M = HUGE_VAL;
    ctx->cols = cols; ctx->M = M; ctx->up = up; ctx->Rf = Rf; ctx->sc = sc;
    ctx->dabs = 2.0 * sqrt((double)cols) * tau;
}

/* The int8 screen's data of a side's active blocks, from its float panels (after rn__diam_bound):
 * each row x (scaled units, radius order) becomes q = round(x / s), s = max|x_k| / 127 (a zero
 * row: s = 0, q = 0), stored as int8 panels (RN__Q8_PANEL); qs = s, qsum = sum_k q_k (zero
 * for the padding rows). Per block, bq[2P] bounds eps_r >= ||s q_r - y_r|| and bq[2P+1] = Rb_P
 * bounds ||y_r|| and ||s q_r|| (y_r the exact scaled row; see rn__row_diameter_core). Rows are
 * done 16 at a time, k outer, so the panel is read along its rows. */
RN__FN void rn__diam_quant(rn__diam_side *sd, const rn__diam_ctx *ctx, double *scr)
{
    size_t cols = ctx->cols, kq = ctx->kq, p, r0, r, l;
    /* 16 rows' scratch, in the workspace (the tiles' place, unused until the scan), not on the
     * stack (docs/embedding.md, "Stack"): max|x| (as doubles), 1/s, s, the error and q sums */
    double *mx = scr, *inv = scr + 16, *s = scr + 32, *err = scr + 48, *qq = scr + 64;
    int32_t *qs = (int32_t *)(void *)(scr + 80);
    /* ||x - y|| <= u' Rf + sqrt(cols) tau (the float rounding), plus the double rounding of
     * the computed ||x - s q|| (2^-53 of |s q| and of the difference, per element) */
    double eadd = ctx->up * ctx->Rf + 0.5 * ctx->dabs + 3e-16 * sqrt((double)cols) * ctx->Rf;
    for (p = 0; p < sd->nbact; p++) {
        const float *P = sd->X + p * cols * RN__BS;
        signed char *Q = sd->Q + p * RN__Q8_PANEL(kq);
        double emax = 0.0, rb = sd->brad[2 * p + 1] * ctx->sc * (1.0 + 1e-12);
        for (r0 = 0; r0 < RN__BS; r0 += 16) {
            float fm[16]; /* 64 bytes: the column maxima in float, vectorised */
            for (r = 0; r < 16; r++) fm[r] = 0.0f;
            for (l = 0; l < cols; l++) {
                const float *x = P + l * RN__BS + r0;
                for (r = 0; r < 16; r++) {
                    float a = x[r] < 0.0f ? -x[r] : x[r];
                    fm[r] = a > fm[r] ? a : fm[r];
                }
            }
            for (r = 0; r < 16; r++) {
                mx[r] = (double)fm[r];
                s[r] = mx[r] / (double)RN__Q8_QMAX;
                inv[r] = mx[r] > 0.0 ? (double)RN__Q8_QMAX / mx[r] : 0.0;
            }
            rn__quant16(P + r0, cols, inv, s, Q + 4 * r0, err, qq, qs);
            for (r = 0; r < 16; r++) {
                size_t pos = p * RN__BS + r0 + r;
                double ny = s[r] * sqrt(qq[r]) * (1.0 + 1e-9), ep = sqrt(err[r]) * (1.0 + 1e-9) + eadd;
                sd->qsum[pos] = qs[r];
                if (pos >= sd->rows) continue;
                sd->qs[pos] = s[r];
                emax = ep > emax ? ep : emax;
                rb = ny > rb ? ny : rb;
            }
        }
        sd->bq[2 * p] = emax;
        sd->bq[2 * p + 1] = rb * (1.0 + 1e-9);
    }
}

/* The screen of a scan (rn__diam_ctx.screen): the one asked for in stats, else int8 where it is
 * faster; float32 where the int8 sums could overflow or no float bound holds (M = HUGE_VAL:
 * the tiles are verified pair by pair). Sets kq and the int8 data of both sides. */
#define RN__Q8_SCRATCH (88 * sizeof(double)) /* rn__diam_quant's scratch */
RN__FN void rn__diam_screen(rn__diam_ctx *ctx, rn__diam_stats *stats, char *cur, char *end)
{
    double *scr;
    int req = stats ? stats->screen : RN__SCREEN_AUTO;
    if (req == RN__SCREEN_AUTO) req = RN__Q8_AUTO ? RN__SCREEN_Q8 : RN__SCREEN_F32;
    if (ctx->cols > RN__Q8_MAXCOLS || !rn__finite_d(ctx->M)) req = RN__SCREEN_F32;
    ctx->screen = req;
    ctx->kq = (ctx->cols + 3) / 4;
    ctx->qmul = stats && stats->qmul > 0.0 ? stats->qmul : 1.0;
    if (stats) stats->screen = req;
    if (req < RN__SCREEN_Q8) return;
    scr = (double *)rn__carve(&cur, end, RN__Q8_SCRATCH); /* within the first tile (see rn__diam_scan) */
    RN_ASSERT(scr);
    rn__diam_quant(&ctx->a, ctx, scr);
    if (!ctx->self) rn__diam_quant(&ctx->b, ctx, scr);
}

/* The tile scan over the active blocks of side a, in parallel; *best improved. Each thread's
 * float32 tile comes from the workspace left in [cur, end) (rn__diam_tiles_bytes): as many
 * threads as tiles fit, at least one (the size checks guarantee it). */
RN__FN void rn__diam_scan(const rn__diam_ctx *ctx, char *cur, char *end, rn__best *best, rn__diam_stats *stats)
{
    long pl, nbl = (long)ctx->a.nbact;
    size_t left = (size_t)(end - cur), nt = rn__team();
    float *tiles;
    while (nt > 1 && left < rn__diam_tiles_bytes(nt)) nt--;
    tiles = (float *)rn__carve(&cur, end, nt * RN__DIAM_TILE_FLOATS * sizeof(float));
    RN_ASSERT(tiles);
    /* each thread keeps its own best (sound: it is a lower bound of D); the tie rule makes the
     * combined result independent of the thread count. Each starts from a copy of *best taken
     * before the region: reading *best inside it raced with a faster thread's merge, and a late
     * thread could read the new distance with the old pair, then win the tie with it. */
    {
        rn__best start = *best;
        RN__GATE_VARS;
        RN__OMP(omp parallel num_threads((int)nt) if (rn__gate(nt) > 1) RN__GATE_CLAUSES)
        {
            rn__best mine = start;
            rn__diam_stats cnt;
            float *C = tiles;
            RN__GATE_IN();
#ifdef _OPENMP
            C += (size_t)omp_get_thread_num() * RN__DIAM_TILE_FLOATS;
#endif
            cnt.tiles = 0; cnt.q8tiles = 0; cnt.verified = 0; cnt.screen = ctx->screen;
            RN__OMP(omp for schedule(dynamic, 1) nowait)
            for (pl = 0; pl < nbl; pl++) rn__diam_row(ctx, (size_t)pl, &mine, &cnt, C);
            RN__GATE_OUT();
            RN__OMP(omp critical(rn__diam_best))
            {
                rn__best_offer(best, mine.d2, mine.i, mine.j);
                if (stats) { stats->tiles += cnt.tiles; stats->q8tiles += cnt.q8tiles; stats->verified += cnt.verified; }
            }
        }
        RN__GATE_NOTE();
    }
}

/* The pairs within one matrix (global indices off + r), improving *best; mu = its mean row.
 * rows >= 2. */
RN__FN void rn__diam_self(const float *S, size_t rows, size_t cols, size_t ld, size_t off, const double *mu,
                          char **cur, char *end, rn__best *best, rn__diam_stats *stats)
{
    rn__diam_ctx ctx;
    rn__best loc;
    double R, sc, Rf;
    memset(&ctx, 0, sizeof ctx);
    rn__diam_carve_side(&ctx.a, S, rows, cols, ld, off, cur, end);
    rn__diam_radii(&ctx.a, cols, mu);
    /* farthest-point sweeps from the row of largest radius (local indices, then shifted: the
     * order of pairs is the same) */
    loc.d2 = -1.0; loc.i = 0; loc.j = 1;
    rn__farthest_sweeps(S, rows, cols, ld, ctx.a.ord[0].idx, &loc);
    if (loc.d2 >= 0.0) rn__best_offer(best, loc.d2, off + loc.i, off + loc.j);
    R = ctx.a.ord[0].r;
    if (R == 0.0) { rn__best_offer(best, 0.0, off, off + 1); return; } /* all rows equal: D = 0 */
    rn__diam_active(&ctx.a, R, sqrt(best->d2 > 0.0 ? best->d2 : 0.0));
    /* the packed rows have norms <= R sc (1 + 2^-23) + dabs/2: Rf bounds them with room */
    sc = ldexp(1.0, -rn__exp2_of(R));
    Rf = rn__diam_pack(&ctx.a, cols, mu, sc, R * sc);
    ctx.b = ctx.a;
    ctx.self = 1;
    rn__diam_bound(&ctx, cols, sc, Rf);
    rn__diam_screen(&ctx, stats, *cur, end);
    rn__diam_scan(&ctx, *cur, end, best, stats);
}

/* The pairs (a in A, b in B) of two blocks (global indices offa + r, offb + r), improving
 * *best; mu = the mean row of both. */
RN__FN void rn__diam_cross(const float *A, size_t ra, size_t lda, size_t offa, const float *B, size_t rb, size_t ldb,
                           size_t offb, size_t cols, const double *mu, char **cur, char *end, rn__best *best,
                           rn__diam_stats *stats)
{
    rn__diam_ctx ctx;
    double RA, RB, R, sc, Rf, LB0;
    size_t x, sweep, r;
    memset(&ctx, 0, sizeof ctx);
    rn__diam_carve_side(&ctx.a, A, ra, cols, lda, offa, cur, end);
    rn__diam_carve_side(&ctx.b, B, rb, cols, ldb, offb, cur, end);
    rn__diam_radii(&ctx.a, cols, mu);
    rn__diam_radii(&ctx.b, cols, mu);
    /* farthest-point sweeps across: from A's largest-radius row to its farthest in B, back */
    x = ctx.a.ord[0].idx;
    for (sweep = 0; sweep < 3; sweep++) {
        int from_a = !(sweep & 1);
        const float *xr = from_a ? A + x * lda : B + x * ldb;
        const float *O = from_a ? B : A;
        size_t on = from_a ? rb : ra, old = from_a ? ldb : lda, farthest = 0;
        double fd = -1.0;
        for (r = 0; r < on; r++) {
            double d2 = rn__sumsq_ff(O + r * old, xr, cols);
            if (d2 > fd) { fd = d2; farthest = r; }
        }
        if (from_a) rn__best_offer(best, fd, offa + x, offb + farthest);
        else rn__best_offer(best, fd, offb + x, offa + farthest);
        x = farthest;
    }
    RA = ctx.a.ord[0].r; RB = ctx.b.ord[0].r;
    R = RA > RB ? RA : RB;
    if (R == 0.0) { rn__best_offer(best, 0.0, offa, offb); return; } /* all rows equal */
    LB0 = sqrt(best->d2 > 0.0 ? best->d2 : 0.0);
    rn__diam_active(&ctx.a, RB, LB0);
    rn__diam_active(&ctx.b, RA, LB0);
    if (ctx.a.nbact == 0 || ctx.b.nbact == 0) return;
    sc = ldexp(1.0, -rn__exp2_of(R));
    Rf = rn__diam_pack(&ctx.a, cols, mu, sc, R * sc);
    Rf = rn__diam_pack(&ctx.b, cols, mu, sc, Rf);
    ctx.self = 0;
    rn__diam_bound(&ctx, cols, sc, Rf);
    rn__diam_screen(&ctx, stats, *cur, end);
    rn__diam_scan(&ctx, *cur, end, best, stats);
}

/* Exact diameter (SPEC 1.2). Soundness of the pruning, with x_i = s_i - mu (mu the double mean;
 * any common shift leaves distances unchanged), r_i = ||x_i|| (double), R = max r_i. The rows
 * are packed scaled by the power of two sc = 2^-e, e = ilogb(R) (exact in double), so that the
 * packed rows have norms in [1, 2) whatever the magnitude of S and float32 tile products
 * neither overflow nor (except for entries tiny against R) underflow; everything below is in
 * these scaled units, y_i = sc x_i, LB_s = sc LB. xf_i = float32(y_i), with
 * |xf_il - y_il| <= u' |y_il| + tau (u' = 2^-24 (1 + 2^-28); tau = 2^-126 covers subnormal
 * rounding and flush-to-zero):
 *  - radius bound (unscaled, double): ||x_i - x_j|| <= r_i + r_j, so a block pair whose largest
 *    radii sum below the current lower bound LB cannot contain a better pair (rows are sorted
 *    by radius);
 *  - block bound: ||xf_i - xf_j|| <= ||c_P - c_Q|| + rho_P + rho_Q (block centres c, radii rho
 *    of the float rows), and ||y_i - y_j|| <= ||xf_i - xf_j|| + 2 u' Rf + dabs,
 *    dabs = 2 sqrt(cols) tau;
 *  - tile estimate E_ij = n_i + n_j - 2 fl(xf_i . xf_j) with n_i = ||xf_i||^2 in double:
 *    |fl(xf_i . xf_j) - xf_i . xf_j| <= gamma_k ||xf_i|| ||xf_j|| + 2.5 k tau (any summation
 *    order, with or without FMA, gradual underflow or flush-to-zero; gamma_k = k u/(1 - k u),
 *    k = cols + 16), so |E - ||y_i - y_j||^2| <= M with
 *    M = (2 gamma_k + 8.2 u' + 1e-12) Rf^2 + (6 k + 32 sqrt(cols) + 64) tau
 *    (Rf = max(R sc, max ||xf_i||) (1 + 1e-6) <= ~2) + double rounding. A pair is verified
 *    (distance recomputed in double from S) when E >= LB_s^2 - M; all comparisons carry a
 *    relative slack of 1e-12 for the double rounding of the bounds.
 *  - fallback: if the bound is unusable (cols ~ 2^22 and beyond, or non-finite scaled data)
 *    M = HUGE_VAL and the tiles that survive the radius and block bounds are verified pair by
 *    pair in double, without float32 products.
 *  - int8 screen (rn__diam_screen: where RN__Q8_FAST, cols <= RN__Q8_MAXCOLS): the rows are
 *    also quantised per row, yq_i = s_i q_i with q_i in [-127, 127] and eps_i >= ||yq_i - y_i||
 *    computed per row (rn__diam_quant); a tile's estimates E_ij = n_i + n_j - 2 s_i s_j (q_i.q_j)
 *    take the exact int32 products, and |E - ||y_i - y_j||^2| <= M + 2 (eps_i R_j + R_i eps_j)
 *    (Cauchy-Schwarz on yq_i.yq_j - y_i.y_j = (yq_i - y_i).yq_j + y_i.(yq_j - y_j); R bounds
 *    ||y|| and ||yq||), taken per block pair (rn__q8_bound). Pairs are verified against that
 *    bound as above, so the result is the same on every build. docs/numerics.md, "The exact
 *    diameter's int8 screen", has the derivation and the tests that hold it sharp.
 * Every pair whose true distance can reach LB is thus verified, so the result is the maximum
 * of the double distances (ties included: a pair at distance LB is verified, and the tie
 * rule keeps the smallest pair). The block-pair kernel (rn_row_diameter_pair_ws) runs the
 * same scan on two blocks with a common centre and scale, starting from the caller's best.
 * stats (may be NULL) receives the work counters. */
RN__FN rn_status rn__row_diameter_core(const float *S, size_t rows, size_t cols, size_t ld,
                                       void *ws, size_t ws_bytes,
                                       double *diameter, size_t *oi, size_t *oj, rn__diam_stats *stats)
{
    char *cur, *end;
    double *mu;
    size_t need;
    rn__best best;
    if (!S || !diameter || !ws) return RN_ERR_NULL;
    if (!rn__extent(rows, cols, ld)) return RN_ERR_SIZE;
    need = rn__diam_ws_bytes(rows, cols, 1); /* a tile per thread beyond it, as many as fit */
    if (need == 0 || ws_bytes < need) return RN_ERR_SIZE;
#ifdef RN_USE_CBLAS
    if ((size_t)INT_MAX < cols) return RN_ERR_SIZE;
#endif
    if (rn__overlap(ws, ws_bytes, S, rn__extent(rows, cols, ld) * sizeof(float))) return RN_ERR_ALIAS;
    cur = (char *)ws; end = cur + ws_bytes;
    mu = (double *)rn__carve(&cur, end, cols * sizeof(double));
    RN_ASSERT(mu);
    /* the finiteness check and the mean row in one read of S (only the workspace is written) */
    if (!rn__col_mean_finite(S, rows, cols, ld, mu)) return RN_ERR_NONFINITE;
    if (stats) { stats->tiles = 0; stats->q8tiles = 0; stats->verified = 0; }
    if (rows == 1) {
        *diameter = 0.0;
        if (oi) *oi = 0;
        if (oj) *oj = 0;
        return RN_OK;
    }
    best.d2 = -1.0; best.i = 0; best.j = 1;
    rn__diam_self(S, rows, cols, ld, 0, mu, &cur, end, &best, stats);
    if (best.d2 < 0.0) { best.d2 = 0.0; best.i = 0; best.j = 1; }
    *diameter = sqrt(best.d2);
    if (oi) *oi = best.i;
    if (oj) *oj = best.j;
    return RN_OK;
}

RNDEF rn_diameter_best rn_diameter_best_none(void)
{
    rn_diameter_best b;
    b.dist2 = -1.0; b.i = 0; b.j = 0;
    return b;
}

/* x holds a pair: i < j and a finite dist2 >= 0 */
RN__FN int rn__db_pair(const rn_diameter_best *x) { return x->i != x->j; }
RN__FN int rn__db_valid(const rn_diameter_best *x)
{
    return !rn__db_pair(x) || (x->i < x->j && rn__finite_d(x->dist2) && x->dist2 >= 0.0);
}

RNDEF void rn_diameter_best_merge(rn_diameter_best *acc, const rn_diameter_best *x)
{
    if (!acc || !x || !rn__db_pair(x)) return;
    if (!rn__db_pair(acc) || x->dist2 > acc->dist2 ||
        (x->dist2 == acc->dist2 && (x->i < acc->i || (x->i == acc->i && x->j < acc->j))))
        *acc = *x;
}

RN__FN size_t rn__diam_pair_ws_bytes(size_t rows_a, size_t rows_b, size_t cols, size_t nt)
{
    size_t s;
    if (rows_a == 0 || cols == 0) return 0;
    s = rn__add(rn__diam_side_bytes(rows_a, cols), rn__diam_side_bytes(rows_b, cols));
    s = rn__add(s, rn__mul(cols, sizeof(double)));
    s = rn__add(s, 3 * 64);
    s = rn__add(s, rn__diam_tiles_bytes(nt));
    return s == (size_t)-1 ? 0 : s;
}

RNDEF size_t rn_row_diameter_pair_workspace_size(size_t rows_a, size_t rows_b, size_t cols)
{
    return rn__diam_pair_ws_bytes(rows_a, rows_b, cols, rn__team());
}

/* rn_row_diameter_pair_ws with the work counters and the screen (stats may be NULL) */
RN__FN rn_status rn__diam_pair_core(const float *A, size_t rows_a, size_t lda, size_t off_a, const float *B,
                                    size_t rows_b, size_t ldb, size_t off_b, size_t cols, void *ws, size_t ws_bytes,
                                    rn_diameter_best *best, rn__diam_stats *stats)
{
    size_t ea, eb = 0, need, r, k;
    char *cur, *end;
    double *mu;
    rn__best bb;
    if (!A || !ws || !best) return RN_ERR_NULL;
    ea = rn__extent(rows_a, cols, lda);
    if (!ea) return RN_ERR_SIZE;
    if (B) { eb = rn__extent(rows_b, cols, ldb); if (!eb) return RN_ERR_SIZE; }
    need = rn__diam_pair_ws_bytes(rows_a, B ? rows_b : 0, cols, 1);
    if (need == 0 || ws_bytes < need) return RN_ERR_SIZE;
#ifdef RN_USE_CBLAS
    if ((size_t)INT_MAX < cols) return RN_ERR_SIZE;
#endif
    if (off_a > (size_t)-1 - rows_a || (B && off_b > (size_t)-1 - rows_b)) return RN_ERR_DOMAIN;
    if (B && off_a < off_b + rows_b && off_b < off_a + rows_a) return RN_ERR_DOMAIN; /* same rows twice */
    /* the overlaps before *best is read: best inside A, B or ws is RN_ERR_ALIAS whatever its
     * bytes decode to (issue 40) */
    if (rn__overlap(ws, ws_bytes, A, ea * sizeof(float)) || rn__overlap(ws, ws_bytes, B, eb * sizeof(float)) ||
        rn__overlap(best, sizeof *best, A, ea * sizeof(float)) || rn__overlap(best, sizeof *best, B, eb * sizeof(float)) ||
        rn__overlap(best, sizeof *best, ws, ws_bytes))
        return RN_ERR_ALIAS;
    if (!rn__db_valid(best)) return RN_ERR_DOMAIN;
    cur = (char *)ws; end = cur + ws_bytes;
    mu = (double *)rn__carve(&cur, end, cols * sizeof(double));
    RN_ASSERT(mu);
    /* finiteness and the mean row of both blocks, in one read (only the workspace is written) */
    for (k = 0; k < cols; k++) mu[k] = 0.0;
    for (r = 0; r < rows_a; r++)
        if (!rn__row_gsum(A + r * lda, cols, mu)) return RN_ERR_NONFINITE;
    for (r = 0; B && r < rows_b; r++)
        if (!rn__row_gsum(B + r * ldb, cols, mu)) return RN_ERR_NONFINITE;
    for (k = 0; k < cols; k++) mu[k] /= (double)rows_a + (B ? (double)rows_b : 0.0);
    if (rn__db_pair(best)) { bb.d2 = best->dist2; bb.i = best->i; bb.j = best->j; }
    else { bb.d2 = -1.0; bb.i = 0; bb.j = 1; }
    if (B) rn__diam_cross(A, rows_a, lda, off_a, B, rows_b, ldb, off_b, cols, mu, &cur, end, &bb, stats);
    else if (rows_a >= 2) rn__diam_self(A, rows_a, cols, lda, off_a, mu, &cur, end, &bb, stats);
    if (bb.d2 >= 0.0 && bb.i != bb.j) { best->dist2 = bb.d2; best->i = bb.i; best->j = bb.j; }
    return RN_OK;
}

RNDEF rn_status rn_row_diameter_pair_ws(const float *A, size_t rows_a, size_t lda, size_t off_a,
                                        const float *B, size_t rows_b, size_t ldb, size_t off_b,
                                        size_t cols, void *ws, size_t ws_bytes, rn_diameter_best *best)
{
    return rn__diam_pair_core(A, rows_a, lda, off_a, B, rows_b, ldb, off_b, cols, ws, ws_bytes, best, RN__NULL);
}

RNDEF rn_status rn_row_diameter_pair(const float *A, size_t rows_a, size_t lda, size_t off_a,
                                     const float *B, size_t rows_b, size_t ldb, size_t off_b,
                                     size_t cols, rn_diameter_best *best)
{
    size_t need;
    void *ws;
    rn_status st;
    if (!A || !best) return RN_ERR_NULL;
    need = rn_row_diameter_pair_workspace_size(rows_a, B ? rows_b : 0, cols);
    if (need == 0 || !rn__extent(rows_a, cols, lda) || (B && !rn__extent(rows_b, cols, ldb))) return RN_ERR_SIZE;
    ws = RN_MALLOC(need);
    if (!ws) return RN_ERR_NOMEM;
    st = rn_row_diameter_pair_ws(A, rows_a, lda, off_a, B, rows_b, ldb, off_b, cols, ws, need, best);
    RN_FREE(ws);
    return st;
}

RNDEF size_t rn_diameter_ring_rounds(size_t nshards)
{
    return nshards == 0 ? 0 : nshards / 2 + 1;
}

RNDEF rn_status rn_diameter_ring(size_t nshards, size_t rank, size_t round, size_t *shard,
                                 size_t *send_to, size_t *recv_from)
{
    size_t P = nshards, s;
    if (!shard) return RN_ERR_NULL;
    if (P == 0) return RN_ERR_SIZE;
    if (rank >= P || round >= rn_diameter_ring_rounds(P)) return RN_ERR_DOMAIN;
    /* (rank + round) mod P and rank -+ 1 mod P without forming rank + round or rank + P - 1,
     * which wrap for P > SIZE_MAX / 2 (rank < P, round <= P / 2 < P) */
    s = round >= P - rank ? round - (P - rank) : rank + round;
    /* P even, last round: the pair {r, r + P/2} is met by both; only the lower rank computes
     * it. P = 1 has one round (the self pair); P = 2: rounds 0 (self) and 1 (rank 0 only). */
    if (round > 0 && 2 * round == P && rank >= P / 2) s = (size_t)-1;
    *shard = s;
    if (send_to) *send_to = round == 0 ? rank : (rank == 0 ? P - 1 : rank - 1);
    if (recv_from) *recv_from = round == 0 ? rank : (rank == P - 1 ? 0 : rank + 1);
    return RN_OK;
}

RNDEF rn_status rn_row_diameter_ws(const float *S, size_t rows, size_t cols, size_t ld,
                                   void *ws, size_t ws_bytes,
                                   double *diameter, size_t *oi, size_t *oj)
{
    return rn__row_diameter_core(S, rows, cols, ld, ws, ws_bytes, diameter, oi, oj, RN__NULL);
}

RNDEF rn_status rn_row_diameter(const float *S, size_t rows, size_t cols, size_t ld,
                                double *diameter, size_t *i, size_t *j)
{
    size_t need;
    void *ws;
    rn_status st;
    if (!S || !diameter) return RN_ERR_NULL;
    if (!rn__extent(rows, cols, ld)) return RN_ERR_SIZE;
    need = rn_row_diameter_workspace_size(rows, cols);
    if (need == 0) return RN_ERR_SIZE;
    ws = RN_MALLOC(need);
    if (!ws) return RN_ERR_NOMEM;
    st = rn_row_diameter_ws(S, rows, cols, ld, ws, need, diameter, i, j);
    RN_FREE(ws);
    return st;
}

RNDEF rn_status rn_worst_hidden_state(const float *S, size_t rows, size_t cols, size_t ld,
                                      size_t i, size_t j, double radius, float *h)
{
    double n2, sc;
    size_t k;
    if (!S || !h) return RN_ERR_NULL;
    if (!rn__extent(rows, cols, ld)) return RN_ERR_SIZE;
    if (i >= rows || j >= rows || !rn__finite_d(radius) || radius < 0.0 || radius > (double)FLT_MAX) return RN_ERR_DOMAIN;
    if (rn__overlap(h, cols * sizeof(float), S, rn__extent(rows, cols, ld) * sizeof(float))) return RN_ERR_ALIAS;
    if (!rn__all_finite(S + i * ld, cols) || !rn__all_finite(S + j * ld, cols)) return RN_ERR_NONFINITE;
    n2 = rn__sumsq_ff(S + i * ld, S + j * ld, cols);
    sc = n2 > 0.0 ? radius / sqrt(n2) : 0.0;
    for (k = 0; k < cols; k++) h[k] = (float)(((double)S[i * ld + k] - (double)S[j * ld + k]) * sc);
    return RN_OK;
}

/* ======================================================================================= */
/* 1.3 Hilbert RMS */

#define RN__RMS_SB 16 /* vocabulary blocks (of RN__BS rows) packed per parallel step */
#define RN__RMS_FEW 8 /* fewer token panels than this: the threads split vocabulary blocks */

/* Per thread of the RMS scan, from the workspace (not the stack): its float32 tile and, for
 * few tokens, its own per-token max/min (RN__RMS_FEW panels of RN__BS tokens). */
#define RN__RMS_THREAD_BYTES (RN__TILE_FLOATS * sizeof(float) + 2 * RN__RMS_FEW * RN__BS * sizeof(double))

/* rn_hilbert_rms_workspace_size with room for nt threads (nt 1: the least that works) */
RN__FN size_t rn__rms_ws_bytes(size_t cols, size_t tokens, size_t nt)
{
    size_t s;
    if (cols == 0 || tokens == 0 || tokens > (size_t)-1 - (RN__BS - 1)) return 0;
    s = rn__mul(rn__mul(rn__mul((tokens + RN__BS - 1) / RN__BS + 1, RN__BS), cols), sizeof(float));
    s = rn__add(s, rn__mul(rn__mul(RN__RMS_SB * RN__BS, cols), sizeof(float)));
    s = rn__add(s, rn__mul(cols, sizeof(double)));
    s = rn__add(s, RN__RMS_SB * sizeof(double));
    s = rn__add(s, 5 * 64);
    s = rn__add(s, rn__add(rn__mul(nt, RN__RMS_THREAD_BYTES), 64));
    return s == (size_t)-1 ? 0 : s;
}

RNDEF size_t rn_hilbert_rms_workspace_size(size_t cols, size_t tokens)
{
    return rn__rms_ws_bytes(cols, tokens, rn__team());
}

/* e_l of a token row h_l: ilogb ||h_l|| (0 for h_l = 0), the same value at packing and at the end. */
RN__FN int rn__rms_token_exp(const float *h, size_t cols)
{
    return rn__exp2_of(sqrt(rn__sumsq_fd(h, RN__NULL, cols)));
}

/* Pack vocabulary block `bl` (rows bl*64 ..) centred by mu, scaled by 2^-f (f = ilogb of its
 * largest centred row norm), into the panel P; returns 2^f. */
RN__FN double rn__rms_pack_block(const float *S, size_t rows, size_t cols, size_t lds, const double *mu, size_t bl,
                                 float *P)
{
    size_t r0 = bl * RN__BS, rm = rows - r0 < RN__BS ? rows - r0 : RN__BS, a;
    double nmax = 0.0;
    int f;
    for (a = 0; a < rm; a++) {
        double n2 = rn__sumsq_fd(S + (r0 + a) * lds, mu, cols);
        nmax = n2 > nmax ? n2 : nmax;
    }
    f = rn__exp2_of(sqrt(nmax));
    for (a = 0; a < RN__BS; a++) {
        if (a < rm) rn__pack_row(S + (r0 + a) * lds, mu, ldexp(1.0, -f), cols, P, a);
        else rn__pack_zero(cols, P, a);
    }
    return ldexp(1.0, f);
}

/* One tile: token panel tp against the packed vocabulary block P (rm rows, scale unscale);
 * the per-token max/min of the block's rows, unscaled (exact: a power of two), into mx/mn
 * (indexed from the panel's first token). */
RN__FN void rn__rms_tile(const float *Hpan, const float *P, size_t cols, size_t tm, size_t rm, double unscale,
                         double *mx, double *mn, float *C)
{
    size_t b, i;
    rn__panel_tile(Hpan, P, cols, C);
    for (b = 0; b < tm; b++) {
        const float *c = C + b * RN__BS;
        float fx = c[0], fn = c[0];
        double dmx, dmn;
        for (i = 1; i < rm; i++) { fx = c[i] > fx ? c[i] : fx; fn = c[i] < fn ? c[i] : fn; }
        dmx = (double)fx * unscale;
        dmn = (double)fn * unscale;
        if (dmx > mx[b]) mx[b] = dmx;
        if (dmn < mn[b]) mn[b] = dmn;
    }
}

/* Validated core: per-token max/min of s_i . h_l into tmax/tmin (tokens). H is packed once
 * (panels of RN__BS tokens); the vocabulary is packed RN__RMS_SB blocks of RN__BS rows at a
 * time (centred, one scale per block), and every packed block meets every token panel, so
 * the packing is O((rows + tokens) cols) against 2 rows tokens cols flops. One OpenMP
 * parallel region: per group of blocks, the threads pack the blocks (one barrier), then
 * split the token panels (dynamic schedule: each token's range has one owner per group, the
 * groups are separated by barriers) and run each panel against all the group's blocks (the
 * panel stays in L2); with fewer than RN__RMS_FEW panels (at most 448 tokens) they split the
 * group's blocks instead, with a per-thread max/min merged at the end. Max and min do not
 * depend on the order or the owner, and each tile is the same arithmetic whoever computes it:
 * the results are bit-identical for every thread count (and to the previous one-block-at-a-
 * time scan).
 * Centre: mu = the mean row of S (rows summed in order), or sums[k] / sums[cols] when `sums`
 * is given (the sharded form, rn_hilbert_rms_center_sums). Any common centre is exact in
 * exact arithmetic (s.h = (s - mu).h + mu.h); it only decides the rounding.
 * Range: every token row h_l is packed scaled by 2^-e_l (e_l = ilogb ||h_l||) and every
 * vocabulary block by 2^-f (f = ilogb of its largest centred row norm), both exact powers of
 * two, so the float32 tile products have magnitude <= 4 and neither overflow nor underflow
 * whatever the magnitudes of S and H; the block's 2^f is undone in double on the tile's
 * max/min, and the token's 2^e_l at the end (the range of a token row that is tiny against
 * the vocabulary block's rows keeps its relative accuracy too: the scales are per token).
 * As the scales are powers of two, a row's tile values do not depend on which block holds it
 * (unless packed values fall to float32's subnormal range). */
RN__FN void rn__rms_range(const float *S, size_t rows, size_t cols, size_t lds,
                          const float *H, size_t tokens, size_t ldh, float *Hp, float *Sp, double *bsc,
                          const double *sums, double *mu, double *tmax, double *tmin, char *team, size_t nt)
{
    size_t ntp = (tokens + RN__BS - 1) / RN__BS, nvb = (rows + RN__BS - 1) / RN__BS, l, k;
    size_t ngroups = (nvb + RN__RMS_SB - 1) / RN__RMS_SB;
    int few = ntp < RN__RMS_FEW;
    long tl, ntl = (long)(ntp * RN__BS);
    (void)nt; /* the team size: used by OpenMP only */
    if (sums) for (k = 0; k < cols; k++) mu[k] = sums[k] / sums[cols];
    else rn__col_mean(S, rows, cols, lds, mu);
    for (l = 0; l < tokens; l++) { tmax[l] = -HUGE_VAL; tmin[l] = HUGE_VAL; }
    RN__GATE_VARS; /* (C99: a declaration here, so that its clock starts at the fork) */
    RN__OMP(omp parallel num_threads((int)nt) if (rn__gate(nt) > 1) RN__GATE_CLAUSES)
    {
        char *mine = team; /* the thread's tile and max/min, from the workspace */
        float *C;
        double *lmax, *lmin;
        size_t g, j; /* private to the thread */
        RN__GATE_IN();
#ifdef _OPENMP
        mine += (size_t)omp_get_thread_num() * RN__RMS_THREAD_BYTES;
#endif
        C = (float *)(void *)mine;
        lmax = (double *)(void *)(mine + RN__TILE_FLOATS * sizeof(float));
        lmin = lmax + RN__RMS_FEW * RN__BS;
        if (few) for (j = 0; j < tokens; j++) { lmax[j] = -HUGE_VAL; lmin[j] = HUGE_VAL; }
        RN__OMP(omp for schedule(static))
        for (tl = 0; tl < ntl; tl++) {
            size_t t = (size_t)tl;
            float *P = Hp + (t / RN__BS) * cols * RN__BS;
            if (t < tokens) rn__pack_row(H + t * ldh, RN__NULL, ldexp(1.0, -rn__rms_token_exp(H + t * ldh, cols)), cols, P, t % RN__BS);
            else rn__pack_zero(cols, P, t % RN__BS);
        }
        for (g = 0; g < ngroups; g++) {
            long b, b0 = (long)(g * RN__RMS_SB), b1 = (long)(g * RN__RMS_SB + RN__RMS_SB < nvb ? g * RN__RMS_SB + RN__RMS_SB : nvb);
            long tp, ntpl = (long)ntp;
            RN__OMP(omp for schedule(static))
            for (b = b0; b < b1; b++)
                bsc[b - b0] = rn__rms_pack_block(S, rows, cols, lds, mu, (size_t)b, Sp + (size_t)(b - b0) * cols * RN__BS);
            if (!few) {
                RN__OMP(omp for schedule(dynamic, 1))
                for (tp = 0; tp < ntpl; tp++) {
                    size_t t0 = (size_t)tp * RN__BS, tm = tokens - t0 < RN__BS ? tokens - t0 : RN__BS;
                    for (b = b0; b < b1; b++) {
                        size_t r0 = (size_t)b * RN__BS, rm = rows - r0 < RN__BS ? rows - r0 : RN__BS;
                        rn__rms_tile(Hp + (size_t)tp * cols * RN__BS, Sp + (size_t)(b - b0) * cols * RN__BS, cols, tm, rm,
                                     bsc[b - b0], tmax + t0, tmin + t0, C);
                    }
                }
            } else {
                RN__OMP(omp for schedule(dynamic, 1))
                for (b = b0; b < b1; b++) {
                    size_t r0 = (size_t)b * RN__BS, rm = rows - r0 < RN__BS ? rows - r0 : RN__BS;
                    for (tp = 0; tp < ntpl; tp++) {
                        size_t t0 = (size_t)tp * RN__BS, tm = tokens - t0 < RN__BS ? tokens - t0 : RN__BS;
                        rn__rms_tile(Hp + (size_t)tp * cols * RN__BS, Sp + (size_t)(b - b0) * cols * RN__BS, cols, tm, rm,
                                     bsc[b - b0], lmax + t0, lmin + t0, C);
                    }
                }
            }
        }
        if (few) {
            RN__OMP(omp critical(rn__rms_merge))
            for (j = 0; j < tokens; j++) {
                if (lmax[j] > tmax[j]) tmax[j] = lmax[j];
                if (lmin[j] < tmin[j]) tmin[j] = lmin[j];
            }
        }
        RN__GATE_OUT();
    }
    RN__GATE_NOTE();
    /* undo the token scale and restore the common shift: s_i . h = (s_i - mu) . h + mu . h */
    for (l = 0; l < tokens; l++) {
        const float *h = H + l * ldh;
        double sh = 0.0, te = ldexp(1.0, rn__rms_token_exp(h, cols));
        for (k = 0; k < cols; k++) sh += mu[k] * (double)h[k];
        tmax[l] *= te;
        tmin[l] *= te;
        tmax[l] += sh;
        tmin[l] += sh;
    }
}

RN__FN rn_status rn__rms_check(const float *S, size_t rows, size_t cols, size_t lds,
                               const float *H, size_t tokens, size_t ldh)
{
    if (!S || !H) return RN_ERR_NULL;
    if (!rn__extent(rows, cols, lds) || !rn__extent(tokens, cols, ldh)) return RN_ERR_SIZE;
    if (tokens > (size_t)-1 / (2 * sizeof(double)) - 64) return RN_ERR_SIZE;
#ifdef RN_USE_CBLAS
    if ((size_t)INT_MAX < cols) return RN_ERR_SIZE;
#endif
    return RN_OK; /* the finiteness of S and H: rn__rms_finite, after any overlap check */
}

RN__FN rn_status rn__rms_finite(const float *S, size_t rows, size_t cols, size_t lds,
                                const float *H, size_t tokens, size_t ldh)
{
    if (!rn__mat_finite(S, rows, cols, lds) || !rn__mat_finite(H, tokens, cols, ldh)) return RN_ERR_NONFINITE;
    return RN_OK;
}

/* Carve the RMS workspace. */
/* The RMS workspace's parts; *team: the per-thread areas, as many threads as fit (>= 1). */
RN__FN void rn__rms_carve(void *ws, size_t ws_bytes, size_t cols, size_t tokens,
                          float **Hp, float **Sp, double **bsc, double **mu, char **team, size_t *nt)
{
    char *cur = (char *)ws, *end = cur + ws_bytes;
    size_t ntp = (tokens + RN__BS - 1) / RN__BS, t = rn__team();
    *Hp = (float *)rn__carve(&cur, end, ntp * RN__BS * cols * sizeof(float));
    *Sp = (float *)rn__carve(&cur, end, RN__RMS_SB * RN__BS * cols * sizeof(float));
    *bsc = (double *)rn__carve(&cur, end, RN__RMS_SB * sizeof(double));
    *mu = (double *)rn__carve(&cur, end, cols * sizeof(double));
    while (t > 1 && (size_t)(end - cur) < t * RN__RMS_THREAD_BYTES + 64) t--;
    *team = (char *)rn__carve(&cur, end, t * RN__RMS_THREAD_BYTES);
    *nt = t;
    RN_ASSERT(*Hp && *Sp && *bsc && *mu && *team);
}

RN__FN rn_status rn__rms_partial(const float *S, size_t rows, size_t cols, size_t lds, const double *sums,
                                 const float *H, size_t tokens, size_t ldh, void *ws, size_t ws_bytes,
                                 double *tok_max, double *tok_min)
{
    float *Hp, *Sp;
    double *mu, *bsc;
    char *team;
    size_t need, nt;
    rn_status st;
    if (!ws || !tok_max || !tok_min) return RN_ERR_NULL;
    st = rn__rms_check(S, rows, cols, lds, H, tokens, ldh);
    if (st != RN_OK) return st;
    need = rn__rms_ws_bytes(cols, tokens, 1); /* a thread area beyond it per thread, as many as fit */
    if (need == 0 || ws_bytes < need) return RN_ERR_SIZE;
    {
        size_t tb = tokens * sizeof(double), sb = rn__extent(rows, cols, lds) * sizeof(float);
        size_t hb = rn__extent(tokens, cols, ldh) * sizeof(float), cb = sums ? (cols + 1) * sizeof(double) : 0;
        if (rn__overlap(tok_max, tb, tok_min, tb) || rn__overlap(tok_max, tb, S, sb) ||
            rn__overlap(tok_max, tb, H, hb) || rn__overlap(tok_min, tb, S, sb) || rn__overlap(tok_min, tb, H, hb) ||
            rn__overlap(ws, ws_bytes, S, sb) || rn__overlap(ws, ws_bytes, H, hb) ||
            rn__overlap(ws, ws_bytes, tok_max, tb) || rn__overlap(ws, ws_bytes, tok_min, tb) ||
            rn__overlap(sums, cb, ws, ws_bytes) || rn__overlap(sums, cb, tok_max, tb) || rn__overlap(sums, cb, tok_min, tb))
            return RN_ERR_ALIAS;
    }
    /* the contents only now, after the overlaps (issue 40) */
    st = rn__rms_finite(S, rows, cols, lds, H, tokens, ldh);
    if (st != RN_OK) return st;
    if (sums) {
        if (!rn__finite_d(sums[cols]) ||
            !(sums[cols] >= (double)rows && sums[cols] <= 9007199254740992.0 && sums[cols] == floor(sums[cols])))
            return RN_ERR_DOMAIN;
        if (!rn__dfinite(sums, cols)) return RN_ERR_NONFINITE;
    }
    rn__rms_carve(ws, ws_bytes, cols, tokens, &Hp, &Sp, &bsc, &mu, &team, &nt);
    rn__rms_range(S, rows, cols, lds, H, tokens, ldh, Hp, Sp, bsc, sums, mu, tok_max, tok_min, team, nt);
    return RN_OK;
}

RNDEF rn_status rn_hilbert_rms_partial_ws(const float *S, size_t rows, size_t cols, size_t lds,
                                          const float *H, size_t tokens, size_t ldh,
                                          void *ws, size_t ws_bytes,
                                          double *tok_max, double *tok_min)
{
    return rn__rms_partial(S, rows, cols, lds, RN__NULL, H, tokens, ldh, ws, ws_bytes, tok_max, tok_min);
}

RNDEF rn_status rn_hilbert_rms_center_sums(const float *S, size_t rows, size_t cols, size_t lds, double *sums)
{
    size_t es;
    if (!S || !sums) return RN_ERR_NULL;
    es = rn__extent(rows, cols, lds);
    if (!es || cols > (size_t)-1 / sizeof(double) - 1) return RN_ERR_SIZE;
    if (rn__overlap(sums, (cols + 1) * sizeof(double), S, es * sizeof(float))) return RN_ERR_ALIAS;
    if (!rn__mat_finite(S, rows, cols, lds)) return RN_ERR_NONFINITE;
    rn__col_sum(S, rows, cols, lds, sums);
    sums[cols] = (double)rows;
    return RN_OK;
}

RNDEF rn_status rn_hilbert_rms_partial_centered_ws(const float *S, size_t rows, size_t cols, size_t lds,
                                                   const double *sums, const float *H, size_t tokens,
                                                   size_t ldh, void *ws, size_t ws_bytes,
                                                   double *tok_max, double *tok_min)
{
    if (!sums) return RN_ERR_NULL;
    return rn__rms_partial(S, rows, cols, lds, sums, H, tokens, ldh, ws, ws_bytes, tok_max, tok_min);
}

RNDEF rn_status rn_hilbert_rms_from_range(const double *tok_max, const double *tok_min,
                                          size_t tokens, double *rms)
{
    double s = 0.0;
    size_t l;
    if (!tok_max || !tok_min || !rms) return RN_ERR_NULL;
    if (tokens == 0) return RN_ERR_SIZE;
    for (l = 0; l < tokens; l++) {
        double d = tok_max[l] - tok_min[l];
        if (!rn__finite_d(d)) return RN_ERR_NONFINITE;
        if (d < 0.0) return RN_ERR_DOMAIN;
        s += d * d;
    }
    *rms = sqrt(s / (double)tokens);
    return RN_OK;
}

RNDEF rn_status rn_hilbert_rms(const float *S, size_t rows, size_t cols, size_t lds,
                               const float *H, size_t tokens, size_t ldh, double *rms)
{
    char *mem, *team;
    float *Hp, *Sp;
    double *mu, *bsc, *tmax, *tmin;
    size_t need, tb, nt;
    rn_status st;
    if (!rms) return RN_ERR_NULL;
    st = rn__rms_check(S, rows, cols, lds, H, tokens, ldh);
    if (st == RN_OK) st = rn__rms_finite(S, rows, cols, lds, H, tokens, ldh);
    if (st != RN_OK) return st;
    need = rn_hilbert_rms_workspace_size(cols, tokens);
    tb = rn__align_up(tokens * sizeof(double), 64);
    if (need == 0 || need > (size_t)-1 - 2 * tb) return RN_ERR_SIZE;
    mem = (char *)RN_MALLOC(need + 2 * tb);
    if (!mem) return RN_ERR_NOMEM;
    rn__rms_carve(mem, need, cols, tokens, &Hp, &Sp, &bsc, &mu, &team, &nt);
    tmax = (double *)(void *)(mem + need);
    tmin = (double *)(void *)(mem + need + tb);
    rn__rms_range(S, rows, cols, lds, H, tokens, ldh, Hp, Sp, bsc, RN__NULL, mu, tmax, tmin, team, nt);
    st = rn_hilbert_rms_from_range(tmax, tmin, tokens, rms);
    RN_FREE(mem);
    return st;
}

/* ======================================================================================= */
/* 1.4 Projected RowNorm */

RNDEF size_t rn_projected_rownorm_workspace_size(size_t cols)
{
    size_t s;
    if (cols == 0) return 0;
    s = rn__add(rn__mul(rn__mul(cols, 2), sizeof(double)), 2 * 64);
    return s == (size_t)-1 ? 0 : s;
}

RNDEF rn_status rn_projected_rownorm_ws(const float *A, size_t rows, size_t cols, size_t lda, float eps,
                                        float *out, size_t ldo, void *ws, size_t ws_bytes)
{
    size_t ea, eo, need, r, k;
    char *cur, *end;
    double *mu, *nu;
    if (!A || !out || !ws) return RN_ERR_NULL;
    ea = rn__extent(rows, cols, lda);
    eo = rn__extent(rows, cols, ldo);
    if (!ea || !eo) return RN_ERR_SIZE;
    need = rn_projected_rownorm_workspace_size(cols);
    if (need == 0 || ws_bytes < need) return RN_ERR_SIZE;
    if (!rn__finite_f(eps) || eps < 0.0f) return RN_ERR_DOMAIN;
    if (!(out == A && ldo == lda) && rn__overlap(A, ea * sizeof(float), out, eo * sizeof(float)))
        return RN_ERR_ALIAS;
    if (rn__overlap(ws, ws_bytes, A, ea * sizeof(float)) || rn__overlap(ws, ws_bytes, out, eo * sizeof(float)))
        return RN_ERR_ALIAS;
    if (!rn__mat_finite(A, rows, cols, lda)) return RN_ERR_NONFINITE;
    cur = (char *)ws; end = cur + ws_bytes;
    mu = (double *)rn__carve(&cur, end, cols * sizeof(double));
    nu = (double *)rn__carve(&cur, end, cols * sizeof(double));
    RN_ASSERT(mu && nu);
    rn__col_mean(A, rows, cols, lda, mu); /* the inner projection P A (SPEC 1.4): subtract mu */
    /* the outer projection P RN(.): the mean of the normalised rows,
     * nu = (1/rows) sum_i (a_i - mu)/(||a_i - mu|| + eps) */
    for (k = 0; k < cols; k++) nu[k] = 0.0;
    for (r = 0; r < rows; r++) {
        const float *a = A + r * lda;
        double n = rn__csumsq(a, mu, cols); /* a zero centred row stays zero (no 0/0) */
        if (n > 0.0) rn__row_nu(a, mu, 1.0 / (sqrt(n) + (double)eps), nu, cols);
    }
    rn__ff_widen(nu, cols); /* RN_FLOAT_ARITH: the float pairs to doubles */
    for (k = 0; k < cols; k++) nu[k] /= (double)rows;
    /* out_i = (a_i - mu)/(||a_i - mu|| + eps) - nu, both projections: same formula, elementwise
     * (in place ok) */
    for (r = 0; r < rows; r++) {
        const float *a = A + r * lda;
        float *o = out + r * ldo;
        double n = rn__csumsq(a, mu, cols);
        double inv = n > 0.0 ? 1.0 / (sqrt(n) + (double)eps) : 0.0;
#ifdef RN_FLOAT_ARITH
        if (rn__f_ok(inv)) {
            float fi = (float)inv;
            for (k = 0; k < cols; k++) o[k] = fmaf(a[k] - (float)mu[k], fi, -(float)nu[k]);
            continue;
        }
#endif
        for (k = 0; k < cols; k++) o[k] = (float)(((double)a[k] - mu[k]) * inv - nu[k]);
    }
    return RN_OK;
}

RNDEF rn_status rn_projected_rownorm(const float *A, size_t rows, size_t cols, size_t lda, float eps,
                                     float *out, size_t ldo)
{
    size_t need;
    void *ws;
    rn_status st;
    if (!A || !out) return RN_ERR_NULL;
    if (!rn__extent(rows, cols, lda) || !rn__extent(rows, cols, ldo)) return RN_ERR_SIZE;
    need = rn_projected_rownorm_workspace_size(cols);
    if (need == 0) return RN_ERR_SIZE;
    ws = RN_MALLOC(need);
    if (!ws) return RN_ERR_NOMEM;
    st = rn_projected_rownorm_ws(A, rows, cols, lda, eps, out, ldo, ws, need);
    RN_FREE(ws);
    return st;
}

/* ======================================================================================= */
/* 1.5 RowNorm optimizer */

RNDEF rn_rownorm_config rn_rownorm_default(void)
{
    rn_rownorm_config c;
    c.lr = 3.2e-3;
    c.beta = 0.95;
    c.eps = 1e-8;
    c.weight_decay = 0.0;
    c.flags = 0u;
    return c;
}

RNDEF size_t rn_rownorm_init_workspace_size(size_t rows, size_t cols)
{
    size_t nch, s;
    if (rows == 0 || cols == 0) return 0;
    nch = (rows + RN_CHUNK_ROWS - 1) / RN_CHUNK_ROWS;
    s = rn__mul(rn__mul(rows, cols), sizeof(float));                 /* B */
    s = rn__add(s, rn__mul(rn__mul(rn__mul(nch, cols), 2), sizeof(double))); /* 2 partials */
    s = rn__add(s, rn__mul(rows, sizeof(double)));                   /* 1/(n_i + eps) */
    s = rn__add(s, rn__mul(rn__mul(cols, 3), sizeof(double)));       /* mu, nu, mean of B */
    s = rn__add(s, 9 * 64);
    return s == (size_t)-1 ? 0 : s;
}

RNDEF rn_status rn_rownorm_init_ws(rn_rownorm_state *st, size_t rows, size_t cols,
                                   void *mem, size_t mem_bytes)
{
    size_t need, nch;
    char *cur, *end;
    rn_rownorm_state s;
    if (!st || !mem) return RN_ERR_NULL;
    if (!rn__extent(rows, cols, cols)) return RN_ERR_SIZE;
    need = rn_rownorm_init_workspace_size(rows, cols);
    if (need == 0 || mem_bytes < need) return RN_ERR_SIZE;
    nch = (rows + RN_CHUNK_ROWS - 1) / RN_CHUNK_ROWS;
    cur = (char *)mem; end = cur + mem_bytes;
    memset(&s, 0, sizeof s);
    s.B = (float *)rn__carve(&cur, end, rows * cols * sizeof(float));
    s.rn__part = (double *)rn__carve(&cur, end, nch * cols * sizeof(double));
    s.rn__part2 = (double *)rn__carve(&cur, end, nch * cols * sizeof(double));
    s.rn__rowinv = (double *)rn__carve(&cur, end, rows * sizeof(double));
    s.rn__mu = (double *)rn__carve(&cur, end, cols * sizeof(double));
    s.rn__nu = (double *)rn__carve(&cur, end, cols * sizeof(double));
    s.rn__meanb = (double *)rn__carve(&cur, end, cols * sizeof(double));
    RN_ASSERT(s.B && s.rn__part && s.rn__part2 && s.rn__rowinv && s.rn__mu && s.rn__nu && s.rn__meanb);
    memset(s.B, 0, rows * cols * sizeof(float));
    memset(s.rn__meanb, 0, cols * sizeof(double));
    memset(s.rn__part, 0, nch * cols * sizeof(double)); /* kept zero between steps (see the step) */
    s.rows = rows; s.cols = cols; s.t = 0; s.rn__nchunks = nch;
    s.rn__meanb_ok = 1; /* B = 0: its mean is 0 */
    s.rn__mem = mem; s.rn__owns = 0;
    *st = s;
    return RN_OK;
}

RNDEF rn_status rn_rownorm_init(rn_rownorm_state *st, size_t rows, size_t cols)
{
    size_t need;
    void *mem;
    rn_status r;
    if (!st) return RN_ERR_NULL;
    if (!rn__extent(rows, cols, cols)) return RN_ERR_SIZE;
    need = rn_rownorm_init_workspace_size(rows, cols);
    if (need == 0) return RN_ERR_SIZE;
    mem = RN_MALLOC(need);
    if (!mem) return RN_ERR_NOMEM;
    r = rn_rownorm_init_ws(st, rows, cols, mem, need);
    if (r != RN_OK) { RN_FREE(mem); return r; }
    st->rn__owns = 1;
    return RN_OK;
}

RNDEF void rn_rownorm_sync(rn_rownorm_state *st)
{
    if (st) st->rn__meanb_ok = 0;
}

RNDEF void rn_rownorm_free(rn_rownorm_state *st)
{
    if (!st) return;
    if (st->rn__owns && st->rn__mem) RN_FREE(st->rn__mem);
    memset(st, 0, sizeof *st);
}

/* Whether the row's EMA formed in double, beta b + omb g (both products exact in double, one
 * rounding of the sum), equals the inner centre mu in every column: the row then lies on the
 * centre and its RN row is 0 (its stored float b differs from mu only by the float rounding
 * of the EMA, which must not be normalised to a unit row). This is what makes equal rows give
 * S = 0: for rows of B_{t-1} all equal and rows of G all equal (one row; or G with equal rows
 * from B = 0) the column means are those rows exactly (sums of up to 2^29 equal floats are
 * exact in double), so mu = beta mean(B_{t-1}) + (1 - beta) mean(G) is this very double
 * expression. Reads b before the update; stops at the first column that differs (for general
 * data the first), so the row is in L1 for the update and the test costs nothing measurable. */
RN__FN int rn__row_at_centre(const float *b, const float *g, size_t n, float beta, float omb, const double *mu)
{
    size_t k;
    for (k = 0; k < n; k++) {
        double x = (double)beta * (double)b[k] + (double)omb * (double)g[k]; /* rounded to double,
                                                      as mu was (also under x87 excess precision) */
        if (!(x == mu[k])) return 0;
    }
    return 1;
}

/* The two projections of the RowNorm step (SPEC 1.5: S = -lr P RN_eps(P B-hat), P the centring
 * projection of SPEC's notation, which subtracts the mean row; 1.4 for PRN):
 *   - the inner (centring) projection P B-hat: mu = the mean row of the new B, computed in
 *     rn_rownorm_step ("the inner projection") or rn_rownorm_shard_middle from column sums, and
 *     subtracted from every row b before its norm (rn__row_ema_stats / rn__csumsq measure
 *     ||b - mu||) and again where the row is used (rn__row_nu, rn__row_write: b - mu);
 *   - the outer projection P RN(.): nu = the mean of the normalised rows (b - mu) inv, summed per
 *     chunk by rn__row_nu (sweep A), combined in rn_rownorm_step ("the outer projection") or by
 *     the caller's all-reduce before rn_rownorm_shard_finish, and subtracted in rn__row_write
 *     (rn__vd_fms(d, inv, nu) = (b - mu) inv - nu; the scalar tail's fma(.., -nu)).
 * RN_NO_CENTER_IN sets mu = 0, RN_NO_CENTER_OUT leaves nu = 0 (both off: the plain sweep).
 *
 * One sweep over a chunk of rows [r0, r1) doing the enabled parts, in this order per row:
 * EMA update (+ column sums of the new B into acc1), centred norm -> rowinv, outer-mean
 * accumulation into acc2, write of W (and S). Each row is touched once per sweep, so it stays
 * in L1 between the parts. */
typedef struct rn__sweep {
    float *B; size_t cols;
    float *W; size_t ldw; const float *G; size_t ldg; float *so; size_t lds;
    float beta, omb;
    const double *mu, *nu; /* the inner and outer projections' mean rows (0 when that one is off) */
    double *rowinv;
    double epsb, neglr, decay;
    int upd, colsum, norm, nuacc, write, plain;
    int atc; /* with the inner centre: a row whose EMA lies on mu exactly gets a zero RN row */
} rn__sweep;

RN__FN void rn__sweep_chunk(const rn__sweep *w, size_t r0, size_t r1, double *acc1, double *acc2)
{
    size_t r, k, n = w->cols;
    if (w->plain) {
        /* no projections: one visit per row; s = alpha b and w + fl(-lr wd w + s) in float.
         * plain 2 (sharded middle) stops after the update and inv, plain 3 (sharded finish)
         * starts from the stored inv: together the same arithmetic as plain 1 */
        for (r = r0; r < r1; r++) {
            float *b = w->B + r * n;
            double inv, a;
            float *wr, *so;
            if (w->plain != 3) {
                double ss = rn__row_ema_sq(b, w->G + r * w->ldg, n, w->beta, w->omb);
                /* a zero row stays zero whatever eps (no 1/eps overflow, no 0/0); a nonzero float
                 * row has ss >= 2^-298, so inv <= 2^149 is finite */
                inv = ss > 0.0 ? 1.0 / (sqrt(ss) + w->epsb) : 0.0;
                if (w->plain == 2) { w->rowinv[r] = inv; continue; }
            } else {
                inv = w->rowinv[r];
            }
            a = w->neglr * inv;
            wr = w->W + r * w->ldw;
            so = w->so ? w->so + r * w->lds : RN__NULL;
            if (a == 0.0 || (fabs(a) >= 1e-29 && fabs(a) <= 1e29)) {
                rn__row_axpby(b, (float)a, w->decay, wr, so, n);
            } else {
                /* alpha = -lr/(||b|| + eps) not representable in float (tiny rows: 1/||b|| up
                 * to 2^149; tiny lr): s = -lr (b/(||b|| + eps)) in double, |b inv| <= 1,
                 * rounded once; same w + fl(c w + s) update */
                float c = (float)(w->decay - 1.0);
                for (k = 0; k < n; k++) {
                    float sv = (float)(w->neglr * ((double)b[k] * inv));
                    wr[k] = wr[k] + fmaf(c, wr[k], sv);
                    if (so) so[k] = sv;
                }
            }
        }
        return;
    }
    if (w->colsum) for (k = 0; k < n; k++) acc1[k] = 0.0;
    if (w->nuacc) for (k = 0; k < n; k++) acc2[k] = 0.0;
    for (r = r0; r < r1; r++) {
        float *b = w->B + r * n;
        double inv;
        /* The next row's streams asked for now (RN__ROW_PREFETCH): each row is visited several
         * times in L1 (the update with its sums, the nu sums; the write), in double, and in the
         * meantime the hardware prefetcher ran dry (the default step at 32768x2048 on a Zen 5:
         * 96-106 ms without, 69-76 ms with; bench/rn_align) */
        if (RN__ROW_PREFETCH && r + 1 < r1)
            for (k = 0; k < n; k += 16) {
                RN__PREFETCH(b + n + k);
                if (w->upd) RN__PREFETCH(w->G + (r + 1) * w->ldg + k);
                if (w->write) RN__PREFETCH(w->W + (r + 1) * w->ldw + k);
            }
        if (w->upd && !w->norm) rn__row_ema(b, w->G + r * w->ldg, n, w->beta, w->omb, w->colsum ? acc1 : RN__NULL);
        if (w->norm) {
            double nr;
            int on_centre = w->upd && w->atc && rn__row_at_centre(b, w->G + r * w->ldg, n, w->beta, w->omb, w->mu);
            if (w->upd && w->colsum) /* update, column sums and centred norm in one visit */
                nr = rn__row_ema_stats(b, w->G + r * w->ldg, n, w->beta, w->omb, w->mu, acc1);
            else {
                if (w->upd) rn__row_ema(b, w->G + r * w->ldg, n, w->beta, w->omb, w->colsum ? acc1 : RN__NULL);
                nr = rn__csumsq(b, w->mu, n);
            }
            if (on_centre) nr = 0.0; /* b - mu is the EMA's float rounding only */
            /* a zero centred row stays zero whatever eps (no 1/eps overflow for a subnormal
             * eps, no 0/0 for eps 0); a nonzero one has a norm of at least about 2^-300 (a
             * float minus a double mean of floats), so inv is finite and |(b - mu) inv| <= 1 */
            inv = nr > 0.0 ? 1.0 / (sqrt(nr) + w->epsb) : 0.0;
            w->rowinv[r] = inv;
            if (w->nuacc) rn__row_nu(b, w->mu, inv, acc2, n); /* sums for the outer projection's nu */
        } else {
            inv = w->rowinv[r];
        }
        if (w->write)
            rn__row_write(b, w->mu, inv, w->nu, w->neglr, w->decay, w->W + r * w->ldw,
                          w->so ? w->so + r * w->lds : RN__NULL, n);
    }
    if (w->colsum) rn__ff_widen(acc1, n); /* RN_FLOAT_ARITH: the chunk's float pairs to doubles */
    if (w->nuacc) rn__ff_widen(acc2, n);
}

RN__FN void rn__sweep_all(const rn__sweep *w, size_t rows, size_t nch, double *part1, double *part2)
{
    long c, nc = (long)nch;
    RN__GATE_VARS;
    RN__OMP(omp parallel RN__PAR((double)rows * (double)w->cols) RN__GATE_CLAUSES)
    {
        RN__GATE_IN();
        /* dynamic: a member that loses its core mid-sweep leaves its share to the others (each
         * chunk's result is its own, so the bits do not change) */
        RN__OMP(omp for schedule(dynamic, 1) nowait)
        for (c = 0; c < nc; c++) {
            size_t r0 = (size_t)c * RN_CHUNK_ROWS;
            size_t r1 = r0 + RN_CHUNK_ROWS < rows ? r0 + RN_CHUNK_ROWS : rows;
            rn__sweep_chunk(w, r0, r1, part1 ? part1 + (size_t)c * w->cols : RN__NULL,
                            part2 ? part2 + (size_t)c * w->cols : RN__NULL);
        }
        RN__GATE_OUT();
    }
    RN__GATE_NOTE();
}

/* The read-only pre-pass over G: finiteness (unless skipped) and, when `part` is given, the
 * per-chunk column sums of G in double. Returns 0 if a NaN/Inf was found. */
RN__FN int rn__gpass(const float *G, size_t ldg, size_t rows, size_t cols, size_t nch, int check,
                     double *part)
{
    long c, nc = (long)nch;
    int bad = 0;
    RN__OMP(omp parallel for schedule(static) reduction(| : bad) RN__PAR((double)rows * (double)cols))
    for (c = 0; c < nc; c++) {
        size_t r0 = (size_t)c * RN_CHUNK_ROWS, r, k;
        size_t r1 = r0 + RN_CHUNK_ROWS < rows ? r0 + RN_CHUNK_ROWS : rows;
        double *acc = part ? part + (size_t)c * cols : RN__NULL;
        if (acc) for (k = 0; k < cols; k++) acc[k] = 0.0;
        for (r = r0; r < r1; r++) {
            const float *g = G + r * ldg;
            if (acc) { if (!rn__row_gsum_ff(g, cols, acc) && check) bad = 1; }
            else if (check && !rn__all_finite(g, cols)) bad = 1;
        }
        if (acc) rn__ff_widen(acc, cols);
    }
    return !bad;
}

/* dst = (sum over chunks in order) / rows */
RN__FN void rn__combine(const double *part, size_t nch, size_t cols, size_t rows, double *dst)
{
    size_t c, k;
    for (k = 0; k < cols; k++) dst[k] = 0.0;
    for (c = 0; c < nch; c++)
        for (k = 0; k < cols; k++) dst[k] += part[c * cols + k];
    for (k = 0; k < cols; k++) dst[k] /= (double)rows;
}

/* The config's domain (shared by rn_rownorm_step and rn_rownorm_shard_begin). */
RN__FN int rn__cfg_ok(const rn_rownorm_config *cfg)
{
    double lr = cfg->lr, beta = cfg->beta, eps = cfg->eps, wd = cfg->weight_decay;
    /* lr <= RN_LR_MAX keeps |S| <= 2 lr a finite float; lr wd <= 1 keeps the decay factor
     * 1 - lr wd in [0, 1] (it neither flips the sign of W nor grows it); an overflowing lr wd
     * is Inf and fails that test */
    if (!rn__finite_d(lr) || !rn__finite_d(beta) || !rn__finite_d(eps) || !rn__finite_d(wd)) return 0;
    return (lr >= 0.0 && lr <= RN_LR_MAX) && (beta >= 0.0 && beta < 1.0) && eps >= 0.0 && wd >= 0.0 &&
           (lr * wd <= 1.0) && !(cfg->flags & ~31u);
}

/* A flags word with what RN_REFERENCE_COMPAT implies spelled out (no centring). */
RN__FN unsigned rn__flags_expand(unsigned flags)
{
    return (flags & RN_REFERENCE_COMPAT) ? flags | RN_NO_CENTER_IN | RN_NO_CENTER_OUT : flags;
}

/* The centring and checking a flags word selects. */
RN__FN void rn__flag_modes(unsigned flags, int *cin, int *cout, int *check)
{
    flags = rn__flags_expand(flags);
    if (cin) *cin = !(flags & RN_NO_CENTER_IN);
    if (cout) *cout = !(flags & RN_NO_CENTER_OUT);
    if (check) *check = !(flags & RN_SKIP_CHECKS);
}

RNDEF rn_status rn_rownorm_config_resolve(const rn_rownorm_config *in, rn_rownorm_config *out)
{
    rn_rownorm_config r;
    if (!in || !out) return RN_ERR_NULL;
    if (!rn__cfg_ok(in)) return RN_ERR_DOMAIN;
    r = *in;
    r.flags = rn__flags_expand(r.flags);
    *out = r;
    return RN_OK;
}

/* Every pointer of an initialised state. */
RN__FN int rn__state_ok(const rn_rownorm_state *st)
{
    return st->B && st->rn__part && st->rn__part2 && st->rn__rowinv && st->rn__mu && st->rn__nu &&
           st->rn__meanb && st->rn__mem;
}

/* No sharded step in flight: every shard field zero. */
RN__FN void rn__shard_clear(rn_rownorm_state *st)
{
    st->rn__slr = 0.0; st->rn__sbeta = 0.0; st->rn__seps = 0.0; st->rn__swd = 0.0; st->rn__srows = 0.0;
    st->rn__sflags = 0u;
    st->rn__sphase = 0;
}

RNDEF rn_status rn_rownorm_step(rn_rownorm_state *st, const rn_rownorm_config *cfg, float *W, size_t ldw,
                                const float *G, size_t ldg, float *step_out, size_t lds)
{
    size_t rows, cols, ew, eg, es = 0, nb, nch, k;
    unsigned flags;
    double bc, lr, beta, eps, wd;
    int cin, cout, check;
    rn__sweep sw;
    if (!st || !cfg || !W || !G) return RN_ERR_NULL;
    if (!rn__state_ok(st)) return RN_ERR_NULL;
    if (st->rn__sphase == 2) return RN_ERR_PHASE; /* a sharded step is half done: finish it */
    rows = st->rows; cols = st->cols; nch = st->rn__nchunks;
    ew = rn__extent(rows, cols, ldw);
    eg = rn__extent(rows, cols, ldg);
    if (!ew || !eg) return RN_ERR_SIZE;
    if (step_out) { es = rn__extent(rows, cols, lds); if (!es) return RN_ERR_SIZE; }
    lr = cfg->lr; beta = cfg->beta; eps = cfg->eps; wd = cfg->weight_decay; flags = cfg->flags;
    if (!rn__cfg_ok(cfg)) return RN_ERR_DOMAIN;
    nb = rn_rownorm_init_workspace_size(rows, cols); /* the whole state block: B and the scratch */
    if (rn__overlap(W, ew * sizeof(float), G, eg * sizeof(float)) ||
        rn__overlap(W, ew * sizeof(float), step_out, es * sizeof(float)) ||
        rn__overlap(G, eg * sizeof(float), step_out, es * sizeof(float)) ||
        rn__overlap(W, ew * sizeof(float), st->rn__mem, nb) || rn__overlap(G, eg * sizeof(float), st->rn__mem, nb) ||
        rn__overlap(step_out, es * sizeof(float), st->rn__mem, nb))
        return RN_ERR_ALIAS;
    rn__flag_modes(flags, &cin, &cout, &check);

    /* pre-pass over G (read-only on G, W and step_out): the finiteness check and, with the
     * inner P, the per-chunk column sums of G into rn__part. rn__part is all zeros between
     * steps (zeroed at init and at the end of every step that used it), so a rejected step
     * restores it by zeroing: the whole state block is then byte-identical to before the call
     * (without an extra read of G to validate it first). */
    if ((check || cin) && !rn__gpass(G, ldg, rows, cols, nch, check, cin ? st->rn__part : RN__NULL)) {
        if (cin) memset(st->rn__part, 0, nch * cols * sizeof(double));
        return RN_ERR_NONFINITE;
    }

    /* bias correction: B-hat = B / bc; RN_eps(P B-hat) = RN_{eps bc}(P B), so B is never divided */
    if ((flags & RN_NO_BIAS_CORRECTION) || beta == 0.0) bc = 1.0;
    else bc = -expm1((double)(st->t + 1) * log(beta));

    memset(&sw, 0, sizeof sw);
    sw.B = st->B; sw.cols = cols;
    sw.W = W; sw.ldw = ldw; sw.G = G; sw.ldg = ldg; sw.so = step_out; sw.lds = lds;
    sw.beta = (float)beta; sw.omb = (float)(1.0 - beta);
    sw.mu = st->rn__mu; sw.nu = st->rn__nu; sw.rowinv = st->rn__rowinv;
    sw.epsb = eps * bc; sw.neglr = -lr; sw.decay = 1.0 - lr * wd;
    memset(st->rn__nu, 0, cols * sizeof(double));

    if (!cin && !cout) {
        /* no projections: G and B read once, B and W written once (5 array passes) */
        sw.plain = 1;
        rn__sweep_all(&sw, rows, nch, RN__NULL, RN__NULL);
        st->rn__meanb_ok = 0; /* the mean of B was not tracked */
        st->t += 1;
        rn__shard_clear(st); /* a pending sharded begin is discarded */
        return RN_OK;
    }
    if (cin) {
        /* the inner projection (centring, SPEC 1.5's P B-hat): its mean row mu = mean(B_new) =
         * beta mean(B) + (1 - beta) mean(G), with mean(B) carried
         * from the previous step (accumulated from the stored floats, so rounding never
         * accumulates across steps) and mean(G) from the pre-pass */
        if (st->rn__meanb_ok != 1) { rn__col_mean(st->B, rows, cols, cols, st->rn__meanb); st->rn__meanb_ok = 1; }
        rn__combine(st->rn__part, nch, cols, rows, st->rn__mu);
        for (k = 0; k < cols; k++)
            st->rn__mu[k] = (double)sw.beta * st->rn__meanb[k] + (double)sw.omb * st->rn__mu[k];
    } else {
        memset(st->rn__mu, 0, cols * sizeof(double));
    }
    /* sweep A: update B (+ its column sums), centred norms, outer-mean sums (or, without the
     * outer P, the write) */
    sw.upd = 1; sw.colsum = 1; sw.norm = 1; sw.nuacc = cout; sw.write = !cout; sw.atc = cin;
    rn__sweep_all(&sw, rows, nch, st->rn__part, st->rn__part2);
    rn__combine(st->rn__part, nch, cols, rows, st->rn__meanb);
    memset(st->rn__part, 0, nch * cols * sizeof(double)); /* the invariant (1/128 of B's bytes) */
    st->rn__meanb_ok = 1;
    if (cout) {
        /* the outer projection (SPEC 1.5's P RN(.)): nu = the mean of the normalised rows, from
         * sweep A's per-chunk sums; sweep B subtracts it in rn__row_write */
        rn__combine(st->rn__part2, nch, cols, rows, st->rn__nu);
        /* sweep B: the write */
        sw.upd = 0; sw.colsum = 0; sw.norm = 0; sw.nuacc = 0; sw.write = 1;
        rn__sweep_all(&sw, rows, nch, RN__NULL, RN__NULL);
    }
    st->t += 1;
    rn__shard_clear(st);
    return RN_OK;
}

/* ---- 1.5b the sharded step --------------------------------------------------------------- */

/* dst[k] = sum over chunks, in chunk order, of part[c][k] (rn__combine before the division) */
RN__FN void rn__chunk_sum(const double *part, size_t nch, size_t cols, double *dst)
{
    size_t c, k;
    for (k = 0; k < cols; k++) dst[k] = 0.0;
    for (c = 0; c < nch; c++)
        for (k = 0; k < cols; k++) dst[k] += part[c * cols + k];
}


/* Non-finite entries of x. */
RN__FN size_t rn__count_nonfinite(const float *x, size_t n)
{
    size_t k, c = 0;
    for (k = 0; k < n; k++) {
        unsigned int u;
        memcpy(&u, x + k, sizeof u);
        c += (u & 0x7fffffffu) >= 0x7f800000u;
    }
    return c;
}

/* rn__gpass that counts the non-finite values (when `check`) instead of stopping at one. */
RN__FN size_t rn__gpass_count(const float *G, size_t ldg, size_t rows, size_t cols, size_t nch, int check,
                              double *part)
{
    long c, nc = (long)nch;
    size_t bad = 0;
    RN__OMP(omp parallel for schedule(static) reduction(+ : bad) RN__PAR((double)rows * (double)cols))
    for (c = 0; c < nc; c++) {
        size_t r0 = (size_t)c * RN_CHUNK_ROWS, r, k;
        size_t r1 = r0 + RN_CHUNK_ROWS < rows ? r0 + RN_CHUNK_ROWS : rows;
        double *acc = part ? part + (size_t)c * cols : RN__NULL;
        if (acc) for (k = 0; k < cols; k++) acc[k] = 0.0;
        for (r = r0; r < r1; r++) {
            const float *g = G + r * ldg;
            int ok = acc ? rn__row_gsum_ff(g, cols, acc) : (!check || rn__all_finite(g, cols));
            if (!ok && check) bad += rn__count_nonfinite(g, cols);
        }
        if (acc) rn__ff_widen(acc, cols); /* RN_FLOAT_ARITH: as rn__gpass */
    }
    return bad;
}


RNDEF size_t rn_rownorm_shard_exchange_size(size_t cols)
{
    if (cols == 0 || cols > ((size_t)-1 / sizeof(double) - 2) / 2) return 0;
    return 2 * cols + 2;
}

RNDEF rn_status rn_rownorm_shard_begin(rn_rownorm_state *st, const rn_rownorm_config *cfg,
                                       const float *G, size_t ldg, double *send, size_t *count)
{
    size_t rows, cols, nch, eg, nx, nb, n, bad = 0;
    int cin, check;
    if (!st || !cfg || !G || !send || !count) return RN_ERR_NULL;
    if (!rn__state_ok(st)) return RN_ERR_NULL;
    if (st->rn__sphase == 2) return RN_ERR_PHASE;
    rows = st->rows; cols = st->cols; nch = st->rn__nchunks;
    eg = rn__extent(rows, cols, ldg);
    nx = rn_rownorm_shard_exchange_size(cols);
    if (!eg || !nx) return RN_ERR_SIZE;
    if (!rn__cfg_ok(cfg)) return RN_ERR_DOMAIN;
    nb = rn_rownorm_init_workspace_size(rows, cols);
    if (rn__overlap(G, eg * sizeof(float), st->rn__mem, nb) || rn__overlap(send, nx * sizeof(double), G, eg * sizeof(float)) ||
        rn__overlap(send, nx * sizeof(double), st->rn__mem, nb) || rn__overlap(count, sizeof *count, send, nx * sizeof(double)) ||
        rn__overlap(count, sizeof *count, st->rn__mem, nb))
        return RN_ERR_ALIAS;
    rn__flag_modes(cfg->flags, &cin, RN__NULL, &check);
    n = cin ? 2 + 2 * cols : 2;
    /* rn__part is zero between steps: it holds the per-chunk sums of G for a moment */
    if (check || cin) bad = rn__gpass_count(G, ldg, rows, cols, nch, check, cin ? st->rn__part : RN__NULL);
    if (cin) {
        rn__chunk_sum(st->rn__part, nch, cols, send + 2);
        memset(st->rn__part, 0, nch * cols * sizeof(double));
        if (st->rn__meanb_ok == 2) memcpy(send + 2 + cols, st->rn__meanb, cols * sizeof(double));
        else rn__col_sum(st->B, rows, cols, cols, send + 2 + cols);
    }
    send[0] = (double)bad;
    send[1] = (double)rows;
    st->rn__slr = cfg->lr; st->rn__sbeta = cfg->beta; st->rn__seps = cfg->eps; st->rn__swd = cfg->weight_decay;
    st->rn__sflags = cfg->flags; st->rn__srows = 0.0;
    st->rn__sphase = 1;
    *count = n;
    return RN_OK;
}

/* The sweep description of the pending sharded step (config from begin). */
RN__FN void rn__shard_sweep(const rn_rownorm_state *st, rn__sweep *sw)
{
    double beta = st->rn__sbeta, bc;
    if ((st->rn__sflags & RN_NO_BIAS_CORRECTION) || beta == 0.0) bc = 1.0;
    else bc = -expm1((double)(st->t + 1) * log(beta));
    memset(sw, 0, sizeof *sw);
    sw->B = st->B; sw->cols = st->cols;
    sw->beta = (float)beta; sw->omb = (float)(1.0 - beta);
    sw->mu = st->rn__mu; sw->nu = st->rn__nu; sw->rowinv = st->rn__rowinv;
    sw->epsb = st->rn__seps * bc; sw->neglr = -st->rn__slr; sw->decay = 1.0 - st->rn__slr * st->rn__swd;
}

RNDEF rn_status rn_rownorm_shard_middle(rn_rownorm_state *st, const float *G, size_t ldg,
                                        const double *recv, double *send, size_t *count)
{
    size_t rows, cols, nch, eg, nx, nb, n1, k;
    unsigned flags;
    int cin, cout, check;
    double R;
    rn__sweep sw;
    if (!st || !G || !recv || !send || !count) return RN_ERR_NULL;
    if (!rn__state_ok(st)) return RN_ERR_NULL;
    if (st->rn__sphase != 1) return RN_ERR_PHASE;
    rows = st->rows; cols = st->cols; nch = st->rn__nchunks; flags = st->rn__sflags;
    eg = rn__extent(rows, cols, ldg);
    nx = rn_rownorm_shard_exchange_size(cols);
    if (!eg || !nx) return RN_ERR_SIZE;
    rn__flag_modes(flags, &cin, &cout, &check);
    n1 = cin ? 2 + 2 * cols : 2;
    nb = rn_rownorm_init_workspace_size(rows, cols);
    if (rn__overlap(G, eg * sizeof(float), st->rn__mem, nb) || rn__overlap(send, nx * sizeof(double), G, eg * sizeof(float)) ||
        rn__overlap(send, nx * sizeof(double), st->rn__mem, nb) || rn__overlap(recv, n1 * sizeof(double), st->rn__mem, nb) ||
        (recv != send && rn__overlap(recv, n1 * sizeof(double), send, nx * sizeof(double))) ||
        rn__overlap(count, sizeof *count, send, nx * sizeof(double)) || rn__overlap(count, sizeof *count, st->rn__mem, nb) ||
        rn__overlap(count, sizeof *count, recv, n1 * sizeof(double)))
        return RN_ERR_ALIAS;
    R = recv[1];
    if (!rn__finite_d(R) || !(R >= (double)rows && R <= 9007199254740992.0 && R == floor(R))) return RN_ERR_DOMAIN;
    if (!rn__finite_d(recv[0]) || recv[0] != 0.0 || (check && cin && !rn__dfinite(recv + 2, 2 * cols))) {
        /* some rank's G has a NaN/Inf: every rank abandons the step. begin changed nothing but
         * the shard fields (rn__part was re-zeroed), so the state is now as before begin */
        rn__shard_clear(st);
        return RN_ERR_NONFINITE;
    }
    rn__shard_sweep(st, &sw);
    sw.G = G; sw.ldg = ldg;
    if (!cin && !cout) {
        sw.plain = 2; /* the update and 1/(||b|| + eps); the write waits for finish */
        rn__sweep_all(&sw, rows, nch, RN__NULL, RN__NULL);
        st->rn__meanb_ok = 0;
        *count = 0;
    } else {
        if (cin) {
            /* the inner projection, as rn_rownorm_step: mu = beta mean(B_{t-1}) + (1 - beta) mean(G),
             * global means */
            for (k = 0; k < cols; k++)
                st->rn__mu[k] = (double)sw.beta * (recv[2 + cols + k] / R) + (double)sw.omb * (recv[2 + k] / R);
        } else {
            memset(st->rn__mu, 0, cols * sizeof(double));
        }
        /* recv is consumed: send may be the same buffer */
        sw.upd = 1; sw.colsum = 1; sw.norm = 1; sw.nuacc = cout; sw.write = 0; sw.atc = cin;
        rn__sweep_all(&sw, rows, nch, st->rn__part, st->rn__part2);
        rn__chunk_sum(st->rn__part, nch, cols, st->rn__meanb); /* local column sums of the new B */
        memset(st->rn__part, 0, nch * cols * sizeof(double));
        st->rn__meanb_ok = 2;
        if (cout) rn__chunk_sum(st->rn__part2, nch, cols, send);
        *count = cout ? cols : 0;
    }
    st->rn__srows = R;
    st->rn__sphase = 2;
    return RN_OK;
}

RNDEF rn_status rn_rownorm_shard_finish(rn_rownorm_state *st, float *W, size_t ldw, const double *recv,
                                        float *step_out, size_t lds)
{
    size_t rows, cols, nch, ew, es = 0, nb, n2, k;
    unsigned flags;
    int cin, cout, check;
    rn__sweep sw;
    if (!st || !W) return RN_ERR_NULL;
    if (!rn__state_ok(st)) return RN_ERR_NULL;
    if (st->rn__sphase != 2) return RN_ERR_PHASE;
    rows = st->rows; cols = st->cols; nch = st->rn__nchunks; flags = st->rn__sflags;
    rn__flag_modes(flags, &cin, &cout, &check);
    n2 = cout ? cols : 0;
    if (n2 && !recv) return RN_ERR_NULL;
    ew = rn__extent(rows, cols, ldw);
    if (!ew) return RN_ERR_SIZE;
    if (step_out) { es = rn__extent(rows, cols, lds); if (!es) return RN_ERR_SIZE; }
    nb = rn_rownorm_init_workspace_size(rows, cols);
    if (rn__overlap(W, ew * sizeof(float), step_out, es * sizeof(float)) ||
        rn__overlap(W, ew * sizeof(float), st->rn__mem, nb) || rn__overlap(step_out, es * sizeof(float), st->rn__mem, nb) ||
        (n2 && (rn__overlap(recv, n2 * sizeof(double), W, ew * sizeof(float)) ||
                rn__overlap(recv, n2 * sizeof(double), step_out, es * sizeof(float)) ||
                rn__overlap(recv, n2 * sizeof(double), st->rn__mem, nb))))
        return RN_ERR_ALIAS;
    if (n2 && check && !rn__dfinite(recv, n2)) return RN_ERR_NONFINITE;
    rn__shard_sweep(st, &sw);
    sw.W = W; sw.ldw = ldw; sw.so = step_out; sw.lds = lds;
    if (!cin && !cout) {
        sw.plain = 3;
    } else {
        /* the outer projection's nu: the all-reduced sums of the normalised rows over all rows */
        if (cout) for (k = 0; k < cols; k++) st->rn__nu[k] = recv[k] / st->rn__srows;
        else memset(st->rn__nu, 0, cols * sizeof(double));
        sw.write = 1;
    }
    rn__sweep_all(&sw, rows, nch, RN__NULL, RN__NULL);
    st->t += 1;
    rn__shard_clear(st);
    return RN_OK;
}

/* ---- Certified exact diameter-constrained steepest step (SPEC 1.4): implementation ----------
 * The last part of rownorm.h's implementation section. Private names rn__ex_*.
 * Internally the problem is normalised: eta = 1 and the reduced gradient h = Q^T (P.G) / sigma
 * with sigma = sum_i ||g_i - gbar|| / 2, so that Delta*' is in [1, sqrt(2)]. */

#define RN__EX_MAX_NEWTON 2000u  /* Newton steps before RN_ERR_NOCONVERGE */
#define RN__EX_NB 48             /* Cholesky block size */
#define RN__EX_MU_MIN 4.0        /* barrier parameter growth per round: adaptive in [MIN, MAX] */
#define RN__EX_MU_MAX 100.0

typedef struct rn__ex_ws {
    size_t V, d, kmax, n, P, k, mmax;
    double *gc;   /* V x d   centred G (double)                       */
    double *q;    /* kmax x d orthonormal basis rows                   */
    double *e;    /* V x d   Gram-Schmidt residual, later flow residual */
    double *h;    /* V x kmax reduced, normalised gradient            */
    double *x;    /* V x kmax iterate (row V-1 is 0)                  */
    double *xn;   /* V x kmax trial iterate                           */
    double *dx;   /* V x kmax Newton direction (row V-1 is 0)         */
    double *grad; /* n */
    double *H;    /* n x n Hessian (or the multiplier system); Cholesky factor in the lower part */
    double *T;    /* RN__EX_NB x mmax transposed Cholesky panel       */
    double *hd;   /* n  Hessian diagonal (for refactoring)            */
    double *s;    /* P  slacks 1 - ||x_i - x_j||^2                    */
    double *sn;   /* P  trial slacks                                  */
    double *ud;   /* P  <u, delta>                                    */
    double *dd;   /* P  ||delta||^2                                   */
    double *w;    /* P  flow weights: y_ij = w_ij (p_j - p_i)         */
    double *p;    /* V x d   positions in R^d (S before centring/scale) */
    double *sf;   /* V x d   the certified S (actual units)           */
} rn__ex_ws;

/* a*b + c into *out with overflow check; returns 0 on overflow. */
RN__FN int rn__ex_muladd(size_t a, size_t b, size_t c, size_t *out)
{
    if (a && b > ((size_t)-1 - c) / a) return 0;
    *out = a * b + c;
    return 1;
}

/* Number of doubles of the workspace; 0 on overflow/invalid. */
RN__FN size_t rn__ex_doubles(size_t V, size_t d)
{
    size_t kmax, n, P, m, tot = 0;
    if (V == 0 || d == 0 || V > RN_EXACT_MAX_ROWS) return 0;
    kmax = V - 1 < d ? V - 1 : d;
    n = (V - 1) * kmax;
    P = V * (V - 1) / 2;
    if (!rn__ex_muladd(V, d, 0, &tot)) return 0;                /* V d          */
    if (!rn__ex_muladd(tot, 5, 0, &tot)) return 0;              /* gc, e, p, sf + spare */
    if (!rn__ex_muladd(kmax, d, tot, &tot)) return 0;           /* q            */
    if (!rn__ex_muladd(4 * V, kmax, tot, &tot)) return 0;       /* h, x, xn, dx */
    m = n > P ? n : P;
    if (!rn__ex_muladd(n, 2, tot, &tot)) return 0;              /* grad, hd     */
    if (!rn__ex_muladd(m, m + RN__EX_NB, tot, &tot)) return 0;  /* H (or M), T  */
    if (!rn__ex_muladd(6, P, tot + 8, &tot)) return 0;          /* pair arrays  */
    if (tot > ((size_t)-1 - 2 * sizeof(double)) / sizeof(double)) return 0;
    return tot;
}

RNDEF size_t rn_exact_step_workspace_size(size_t rows, size_t cols)
{
    size_t nd = rn__ex_doubles(rows, cols);
    return nd ? nd * sizeof(double) + sizeof(double) : 0;
}

RN__FN void rn__ex_carve(rn__ex_ws *w, size_t V, size_t d, double *base)
{
    double *c = base;
    w->V = V; w->d = d;
    w->kmax = V - 1 < d ? V - 1 : d;
    w->n = (V - 1) * w->kmax;
    w->P = V * (V - 1) / 2;
    w->k = 0;
    w->gc = c; c += V * d;
    w->e = c; c += V * d;
    w->p = c; c += V * d;
    w->sf = c; c += V * d;
    w->q = c; c += w->kmax * d;
    w->h = c; c += V * w->kmax;
    w->x = c; c += V * w->kmax;
    w->xn = c; c += V * w->kmax;
    w->dx = c; c += V * w->kmax;
    w->grad = c; c += w->n;
    w->hd = c; c += w->n;
    w->mmax = w->n > w->P ? w->n : w->P;
    w->H = c; c += w->mmax * w->mmax;
    w->T = c; c += w->mmax * RN__EX_NB;
    w->s = c; c += w->P;
    w->sn = c; c += w->P;
    w->ud = c; c += w->P;
    w->dd = c; c += w->P;
    w->w = c; c += w->P;
}

RN__FN double rn__ex_dot(const double *a, const double *b, size_t n)
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += a[i] * b[i];
        s1 += a[i + 1] * b[i + 1];
        s2 += a[i + 2] * b[i + 2];
        s3 += a[i + 3] * b[i + 3];
    }
    for (; i < n; i++) s0 += a[i] * b[i];
    return (s0 + s1) + (s2 + s3);
}

/* Euclidean norm of a double vector, scaled against overflow/underflow. */
RN__FN double rn__ex_norm(const double *a, size_t n)
{
    double m = 0.0, s = 0.0;
    size_t i;
    for (i = 0; i < n; i++) {
        double v = fabs(a[i]);
        if (v > m) m = v;
    }
    if (m == 0.0) return 0.0;
    for (i = 0; i < n; i++) {
        double v = a[i] / m;
        s += v * v;
    }
    return m * sqrt(s);
}

/* Norm of a - b (d-vectors), scaled. */
RN__FN double rn__ex_dist(const double *a, const double *b, size_t n)
{
    double m = 0.0, s = 0.0;
    size_t i;
    for (i = 0; i < n; i++) {
        double v = fabs(a[i] - b[i]);
        if (v > m) m = v;
    }
    if (m == 0.0) return 0.0;
    for (i = 0; i < n; i++) {
        double v = (a[i] - b[i]) / m;
        s += v * v;
    }
    return m * sqrt(s);
}

/* Unblocked Cholesky of the n x n diagonal block at A (row stride ld), lower part. */
RN__FN int rn__ex_chol_unblocked(double *A, size_t n, size_t ld)
{
    size_t i, j;
    for (i = 0; i < n; i++) {
        double *ri = A + i * ld;
        for (j = 0; j < i; j++) {
            const double *rj = A + j * ld;
            ri[j] = (ri[j] - rn__ex_dot(ri, rj, j)) / rj[j];
        }
        {
            double sum = ri[i] - rn__ex_dot(ri, ri, i);
            if (!(sum > 0.0)) return 0;
            ri[i] = sqrt(sum);
        }
    }
    return 1;
}


/* In-place Cholesky of the symmetric n x n row-major A (lower part used and overwritten,
 * strict upper part untouched). Right-looking, blocked by RN__EX_NB: factor the diagonal block,
 * solve the panel below it, copy the panel transposed into T (RN__EX_NB x n scratch), and update
 * the trailing lower triangle 2 rows x 8 columns at a time (fixed-size accumulators that
 * compilers turn into vector FMAs; plain C, same arithmetic on every target). Returns 0 on a
 * non-positive pivot. */
RN__FN int rn__ex_chol(double *A, size_t n, double *T)
{
    size_t kb, i, j, p, c;
    for (kb = 0; kb < n; kb += RN__EX_NB) {
        size_t nb = n - kb < RN__EX_NB ? n - kb : RN__EX_NB, e = kb + nb;
        if (!rn__ex_chol_unblocked(A + kb * n + kb, nb, n)) return 0;
        /* panel: L21 = A21 L11^-T, row by row; T[p][i] = L[i][kb + p] */
        for (i = e; i < n; i++) {
            double *ri = A + i * n + kb;
            for (j = 0; j < nb; j++) {
                const double *rj = A + (kb + j) * n + kb;
                ri[j] = (ri[j] - rn__ex_dot(ri, rj, j)) / rj[j];
                T[j * n + i] = ri[j];
            }
        }
        /* trailing update A22 -= L21 L21^T, lower triangle */
        for (i = e; i < n; i += 2) {
            int two = i + 1 < n;
            const double *li0 = A + i * n + kb, *li1 = two ? li0 + n : li0;
            double *ai0 = A + i * n, *ai1 = two ? ai0 + n : ai0;
            size_t jend = two ? i + 2 : i + 1; /* columns e .. jend-1 */
            for (j = e; j < jend; j += 8) {
                double acc0[8], acc1[8];
                if (j + 8 <= n) {
                    for (c = 0; c < 8; c++) acc0[c] = acc1[c] = 0.0;
                    for (p = 0; p < nb; p++) {
                        const double *tp = T + p * n + j;
                        double a0 = li0[p], a1 = li1[p];
                        for (c = 0; c < 8; c++) {
                            acc0[c] += a0 * tp[c];
                            acc1[c] += a1 * tp[c];
                        }
                    }
                } else {
                    size_t cw = n - j;
                    for (c = 0; c < 8; c++) acc0[c] = acc1[c] = 0.0;
                    for (p = 0; p < nb; p++) {
                        const double *tp = T + p * n + j;
                        double a0 = li0[p], a1 = li1[p];
                        for (c = 0; c < cw; c++) {
                            acc0[c] += a0 * tp[c];
                            acc1[c] += a1 * tp[c];
                        }
                    }
                }
                for (c = 0; c < 8 && j + c < jend; c++) {
                    if (j + c <= i) ai0[j + c] -= acc0[c];
                    if (two) ai1[j + c] -= acc1[c];
                }
            }
        }
    }
    return 1;
}

/* Solve L L^T x = b in place (b -> x). */
RN__FN void rn__ex_cholsolve(const double *L, size_t n, double *b)
{
    size_t i, j;
    for (i = 0; i < n; i++) b[i] = (b[i] - rn__ex_dot(L + i * n, b, i)) / L[i * n + i];
    for (i = n; i-- > 0;) {
        double v = b[i];
        for (j = i + 1; j < n; j++) v -= L[j * n + i] * b[j];
        b[i] = v / L[i * n + i];
    }
}

/* Error-free transformations: a + b = s + *err (Knuth), a * b = p + *err (Dekker, Veltkamp
 * splitting; no FMA needed). Exact in IEEE double arithmetic when the compiler does not contract
 * a*b+c across these statements (ISO C/C++ modes, -ffp-contract=off/on); under contraction they
 * are only as good as plain double. Only the accuracy of the slacks depends on it, never the
 * validity of the certificate. */
RN__FN double rn__ex_two_sum(double a, double b, double *err)
{
    double s = a + b, bb = s - a;
    *err = (a - (s - bb)) + (b - bb);
    return s;
}

RN__FN double rn__ex_two_prod(double a, double b, double *err)
{
    const double split = 134217729.0; /* 2^27 + 1 */
    double p = a * b, c, ah, al, bh, bl;
    c = split * a;
    ah = c - (c - a);
    al = a - ah;
    c = split * b;
    bh = c - (c - b);
    bl = b - bh;
    *err = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
    return p;
}

/* Slacks 1 - ||x_i - x_j||^2 of iterate x into s; returns the smallest. The slack of a nearly
 * active pair is tiny (1e-8 and below), and 1 - ||u||^2 in plain double would carry an absolute
 * error of ~1e-16, i.e. a large relative error in the multipliers 1/(t s): the difference and
 * the squares are therefore formed exactly (double-double) and rounded once at the end. */
RN__FN double rn__ex_slacks(const rn__ex_ws *w, const double *x, double *s)
{
    size_t i, j, a, idx = 0, V = w->V, k = w->k, K = w->kmax;
    double mn = 1.0;
    for (i = 0; i < V; i++)
        for (j = i + 1; j < V; j++, idx++) {
            double qh = 0.0, ql = 0.0;
            for (a = 0; a < k; a++) {
                double ue, pe, se, uh, ph;
                uh = rn__ex_two_sum(x[i * K + a], -x[j * K + a], &ue);
                ph = rn__ex_two_prod(uh, uh, &pe);
                qh = rn__ex_two_sum(qh, ph, &se);
                ql += se + pe + (2.0 * uh + ue) * ue;
            }
            s[idx] = (1.0 - qh) - ql; /* 1 - qh is exact near the boundary (Sterbenz) */
            if (!(s[idx] >= mn)) mn = s[idx]; /* NaN propagates */
        }
    return mn;
}

/* Gradient and Hessian of f(x) = t <h, x> - sum log s_ij at x (slacks s current). */
RN__FN RN__NOINLINE void rn__ex_assemble(rn__ex_ws *w, double t)
{
    size_t V = w->V, k = w->k, K = w->kmax, n = w->n, i, j, a, b, idx = 0;
    double *H = w->H, *g = w->grad;
    double u[RN_EXACT_MAX_ROWS];
    memset(H, 0, n * n * sizeof(double));
    for (i = 0; i + 1 < V; i++)
        for (a = 0; a < k; a++) g[i * k + a] = t * w->h[i * K + a];
    for (i = 0; i < V; i++)
        for (j = i + 1; j < V; j++, idx++) {
            double si = w->s[idx], c1 = 2.0 / si, c2 = 4.0 / (si * si);
            int jin = j + 1 < V;
            for (a = 0; a < k; a++) u[a] = w->x[i * K + a] - w->x[j * K + a];
            for (a = 0; a < k; a++) {
                g[i * k + a] += c1 * u[a];
                if (jin) g[j * k + a] -= c1 * u[a];
            }
            for (a = 0; a < k; a++) {
                double *hi = H + (i * k + a) * n;
                double *hj = H + (j * k + a) * n;
                for (b = 0; b < k; b++) {
                    double m = c2 * u[a] * u[b] + (a == b ? c1 : 0.0);
                    hi[i * k + b] += m;
                    if (jin) {
                        hj[j * k + b] += m;
                        hi[j * k + b] -= m;
                        hj[i * k + b] -= m;
                    }
                }
            }
        }
    for (i = 0; i < n; i++) w->hd[i] = H[i * n + i];
}

/* Newton direction into w->dx (row V-1 zero); returns the squared Newton decrement, or -1 when
 * the Hessian could not be factored even with regularisation. */
RN__FN RN__NOINLINE double rn__ex_direction(rn__ex_ws *w)
{
    size_t n = w->n, k = w->k, K = w->kmax, i, j, a, tries;
    double dmax = 0.0, shift = 0.0, dec2;
    double *H = w->H;
    for (i = 0; i < n; i++)
        if (w->hd[i] > dmax) dmax = w->hd[i];
    for (tries = 0; tries < 12; tries++) {
        if (tries) {
            shift = shift == 0.0 ? 1e-15 * dmax : shift * 100.0;
            for (i = 0; i < n; i++) {
                for (j = 0; j < i; j++) H[i * n + j] = H[j * n + i];
                H[i * n + i] = w->hd[i] + shift;
            }
        }
        if (rn__ex_chol(H, n, w->T)) break;
    }
    if (tries == 12) return -1.0;
    for (i = 0; i < n; i++) w->xn[i] = -w->grad[i]; /* xn as a scratch n-vector (n <= V K) */
    rn__ex_cholsolve(H, n, w->xn);
    dec2 = -rn__ex_dot(w->grad, w->xn, n);
    memset(w->dx, 0, w->V * K * sizeof(double));
    for (i = 0; i + 1 < w->V; i++)
        for (a = 0; a < k; a++) w->dx[i * K + a] = w->xn[i * k + a];
    return dec2;
}

/* Damped Newton step with backtracking: feasibility first, then Armijo on an accurately computed
 * decrease. Returns 1 if a step was taken. */
RN__FN RN__NOINLINE int rn__ex_step(rn__ex_ws *w, double t, double dec2)
{
    size_t V = w->V, k = w->k, K = w->kmax, i, j, a, idx, tries;
    double lin = 0.0, alpha = 1.0, dec = sqrt(dec2 > 0.0 ? dec2 : 0.0);
    for (i = 0; i + 1 < V; i++)
        for (a = 0; a < k; a++) lin += w->h[i * K + a] * w->dx[i * K + a];
    lin *= t;
    idx = 0;
    for (i = 0; i < V; i++)
        for (j = i + 1; j < V; j++, idx++) {
            double ud = 0.0, dd = 0.0;
            for (a = 0; a < k; a++) {
                double u = w->x[i * K + a] - w->x[j * K + a];
                double dl = w->dx[i * K + a] - w->dx[j * K + a];
                ud += u * dl;
                dd += dl * dl;
            }
            w->ud[idx] = ud;
            w->dd[idx] = dd;
        }
    for (tries = 0; tries < 80; tries++, alpha *= 0.5) {
        double df = alpha * lin;
        int ok = 1;
        for (idx = 0; idx < w->P; idx++) {
            double qv = alpha * (2.0 * w->ud[idx] + alpha * w->dd[idx]) / w->s[idx];
            if (!(qv < 1.0)) { ok = 0; break; }
            df -= log1p(-qv);
        }
        if (!ok) continue;
        for (i = 0; i < V * K; i++) w->xn[i] = w->x[i] + alpha * w->dx[i];
        if (!(rn__ex_slacks(w, w->xn, w->sn) > 0.0)) continue;
        if (dec < 0.2 || df <= 0.25 * alpha * (-dec2)) {
            memcpy(w->x, w->xn, V * K * sizeof(double));
            memcpy(w->s, w->sn, w->P * sizeof(double));
            return 1;
        }
    }
    return 0;
}

/* D of the V x d rows of S (packed), pairwise in double. */
RN__FN double rn__ex_diam(const double *S, size_t V, size_t d)
{
    double D = 0.0;
    size_t i, j;
    for (i = 0; i < V; i++)
        for (j = i + 1; j < V; j++) {
            double dij = rn__ex_dist(S + i * d, S + j * d, d);
            if (!(dij <= D)) D = dij; /* NaN propagates */
        }
    return D;
}

/* Certificate for positions p (V x d, normalised units) and pair weights w (flow
 * y_ij = w_ij (p_j - p_i), actual units). Dual: residual r_i = gc_i - sum_j y_ij, repaired flow
 * y_ij + (r_i - r_j)/V, hi = eta sum ||.||. Primal: S = p centred and scaled about its centroid to
 * D(S) = eta (checked pairwise in double, shrunk by a few ulps if rounding left it above eta or
 * left -<G,S> above hi), lo = -<gc, S>. Writes S into w->sf and, if flow != NULL, the flow. */
RN__FN RN__NOINLINE void rn__ex_certify(rn__ex_ws *w, double eta, double *lo, double *hi, double *diam,
                           double *flow, size_t ldf)
{
    size_t V = w->V, d = w->d, i, j, c, idx;
    double D, l = 0.0, u = 0.0, invV = 1.0 / (double)V, f, shrink = 4.0 * 2.220446049250313e-16;
    double *sf = w->sf, *r = w->e, *p = w->p;
    /* dual */
    memcpy(r, w->gc, V * d * sizeof(double));
    idx = 0;
    for (i = 0; i < V; i++)
        for (j = i + 1; j < V; j++, idx++) {
            double wt = w->w[idx];
            if (wt == 0.0) continue;
            for (c = 0; c < d; c++) {
                double y = wt * (p[j * d + c] - p[i * d + c]);
                r[i * d + c] -= y;
                r[j * d + c] += y;
            }
        }
    idx = 0;
    for (i = 0; i < V; i++)
        for (j = i + 1; j < V; j++, idx++) {
            double wt = w->w[idx], m = 0.0, s = 0.0;
            for (c = 0; c < d; c++) {
                double y = wt * (p[j * d + c] - p[i * d + c]) + (r[i * d + c] - r[j * d + c]) * invV;
                double a = fabs(y);
                if (flow) flow[idx * ldf + c] = y;
                if (a > m) m = a;
            }
            if (m > 0.0) {
                for (c = 0; c < d; c++) {
                    double y = (wt * (p[j * d + c] - p[i * d + c]) + (r[i * d + c] - r[j * d + c]) * invV) / m;
                    s += y * y;
                }
                u += m * sqrt(s);
            }
        }
    u *= eta;
    /* primal */
    for (c = 0; c < d; c++) {
        double m = 0.0;
        for (i = 0; i < V; i++) m += p[i * d + c];
        m *= invV;
        for (i = 0; i < V; i++) sf[i * d + c] = eta * (p[i * d + c] - m);
    }
    D = rn__ex_diam(sf, V, d);
    f = D > 0.0 ? eta / D : 1.0;
    for (;;) {
        if (!rn__finite_d(D) || !rn__finite_d(u)) {
            *lo = *hi = *diam = HUGE_VAL; /* overflow: the caller maps it to RN_ERR_DOMAIN */
            return;
        }
        if (f != 1.0) {
            for (i = 0; i < V * d; i++) sf[i] *= f;
            D = rn__ex_diam(sf, V, d);
        }
        l = 0.0;
        for (i = 0; i < V * d; i++) l -= w->gc[i] * sf[i];
        if (D <= eta && l <= u) break;
        /* rounding left D a hair above eta, or lo a hair above hi where they meet: shrink */
        f = 1.0 - shrink;
        shrink = shrink < 0.25 ? 2.0 * shrink : 0.5;
    }
    *lo = l;
    *hi = u;
    *diam = D;
}

/* Positions p_i = sum_a x_ia q_a and weights w_ij = sigma * 2 / (t s_ij). */
RN__FN RN__NOINLINE void rn__ex_positions(rn__ex_ws *w, double t, double sigma)
{
    size_t V = w->V, d = w->d, k = w->k, K = w->kmax, i, a, c, idx;
    memset(w->p, 0, V * d * sizeof(double));
    for (i = 0; i < V; i++)
        for (a = 0; a < k; a++) {
            double xa = w->x[i * K + a];
            const double *qa = w->q + a * d;
            if (xa == 0.0) continue;
            for (c = 0; c < d; c++) w->p[i * d + c] += xa * qa[c];
        }
    for (idx = 0; idx < w->P; idx++) w->w[idx] = sigma * 2.0 / (t * w->s[idx]);
}

/* Multiplier refinement: the barrier multipliers satisfy the flow constraint only as well as
 * the Newton iteration converged, and at large t the Hessian is too ill-conditioned for that to
 * be good. Given the positions, the flow is linear in the weights: re-fit the weights of the
 * pairs that carry flow (w >= 1e-4 max w) by least squares, (B^T B + ridge) delta = B^T r0 with
 * B_a = (+u_a at node i, -u_a at node j), u_a = x_j - x_i, r0 the reduced residual. Any weights
 * give a valid certificate (the exact repair in R^d follows), so this only tightens hi. Uses
 * H, T, xn, sn, ud as scratch (free between a Newton direction and the line search). */
RN__FN RN__NOINLINE void rn__ex_refine(rn__ex_ws *w, double sigma)
{
    size_t V = w->V, k = w->k, K = w->kmax, i, j, a, p, q, idx, m = 0;
    double *r0 = w->xn, *rhs = w->sn, *act = w->ud, *M = w->H, wmax = 0.0, dmax = 0.0;
    const double *x = w->x;
    for (i = 0; i < V; i++)
        for (a = 0; a < k; a++) r0[i * K + a] = sigma * w->h[i * K + a];
    idx = 0;
    for (i = 0; i < V; i++)
        for (j = i + 1; j < V; j++, idx++) {
            double wt = w->w[idx];
            if (wt > wmax) wmax = wt;
            for (a = 0; a < k; a++) {
                double y = wt * (x[j * K + a] - x[i * K + a]);
                r0[i * K + a] -= y;
                r0[j * K + a] += y;
            }
        }
    idx = 0;
    for (i = 0; i < V; i++)
        for (j = i + 1; j < V; j++, idx++)
            if (w->w[idx] >= 1e-4 * wmax) act[m++] = (double)(i * V + j); /* exact: < 2^53 */
    if (!m) return;
    for (p = 0; p < m; p++) {
        size_t ip = (size_t)act[p] / V, jp = (size_t)act[p] % V;
        double rr = 0.0;
        for (a = 0; a < k; a++) rr += (x[jp * K + a] - x[ip * K + a]) * (r0[ip * K + a] - r0[jp * K + a]);
        rhs[p] = rr;
        for (q = 0; q <= p; q++) {
            size_t iq = (size_t)act[q] / V, jq = (size_t)act[q] % V;
            int sg = (ip == iq) - (ip == jq) - (jp == iq) + (jp == jq);
            double dot = 0.0;
            if (sg)
                for (a = 0; a < k; a++)
                    dot += (x[jp * K + a] - x[ip * K + a]) * (x[jq * K + a] - x[iq * K + a]);
            M[p * m + q] = M[q * m + p] = (double)sg * dot;
        }
        if (M[p * m + p] > dmax) dmax = M[p * m + p];
    }
    if (!(dmax > 0.0)) return;
    for (p = 0; p < m; p++) M[p * m + p] += 1e-13 * dmax;
    if (!rn__ex_chol(M, m, w->T)) return;
    rn__ex_cholsolve(M, m, rhs);
    for (p = 0; p < m; p++) {
        size_t ip = (size_t)act[p] / V, jp = (size_t)act[p] % V;
        size_t pi = ip * V - ip * (ip + 1) / 2 + (jp - ip - 1);
        if (rhs[p] == rhs[p]) w->w[pi] += rhs[p];
    }
}

RN__FN int rn__ex_overlap(const void *a, size_t abytes, const void *b, size_t bbytes)
{
    uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b;
    if (!a || !b || !abytes || !bbytes) return 0;
    return pa - pb < bbytes || pb - pa < abytes; /* unsigned wrap: pa in [pb, pb+bb) or vice versa */
}

/* Every check but the workspace; fills the byte extents of G, S, flow. */
RN__FN rn_status rn__ex_validate(const float *G, size_t V, size_t d, size_t ldg, double eta,
                                 double rel_tol, const double *S, size_t lds, const double *flow,
                                 size_t ldf, const rn_exact_result *res, size_t *gb, size_t *sb,
                                 size_t *fb, int check_g)
{
    size_t P, i, c;
    *gb = *sb = *fb = 0;
    if (!G || !res) return RN_ERR_NULL;
    if (!V || !d || V > RN_EXACT_MAX_ROWS || ldg < d) return RN_ERR_SIZE;
    P = V * (V - 1) / 2;
    if (!P) flow = RN__NULL;
    if (S && lds < d) return RN_ERR_SIZE;
    if (flow && ldf < d) return RN_ERR_SIZE;
    if (!rn__ex_muladd(V - 1, ldg, d, gb) || !rn__ex_muladd(*gb, sizeof(float), 0, gb))
        return RN_ERR_SIZE;
    if (S && (!rn__ex_muladd(V - 1, lds, d, sb) || !rn__ex_muladd(*sb, sizeof(double), 0, sb)))
        return RN_ERR_SIZE;
    if (flow && (!rn__ex_muladd(P - 1, ldf, d, fb) || !rn__ex_muladd(*fb, sizeof(double), 0, fb)))
        return RN_ERR_SIZE;
    if (!rn_exact_step_workspace_size(V, d)) return RN_ERR_SIZE;
    /* a subnormal eta is refused: the normalised problem's scale-back (S = eta S') loses
     * the relative precision that the certificate D(S) <= eta needs */
    if (!rn__finite_d(eta) || !(eta >= DBL_MIN)) return RN_ERR_DOMAIN;
    if (!rn__finite_d(rel_tol) || !(rel_tol > 0.0) || !(rel_tol < 1.0)) return RN_ERR_DOMAIN;
    if (rn__ex_overlap(G, *gb, S, *sb) || rn__ex_overlap(G, *gb, flow, *fb) ||
        rn__ex_overlap(S, *sb, flow, *fb) || rn__ex_overlap(G, *gb, res, sizeof(*res)) ||
        rn__ex_overlap(S, *sb, res, sizeof(*res)) || rn__ex_overlap(flow, *fb, res, sizeof(*res)))
        return RN_ERR_ALIAS;
    /* check_g = 0: rn_exact_step_ws checks G's values itself, after the workspace overlaps */
    for (i = 0; check_g && i < V; i++)
        for (c = 0; c < d; c++) {
            float v = G[i * ldg + c];
            if (!rn__finite_f(v)) return RN_ERR_NONFINITE;
        }
    return RN_OK;
}

RNDEF rn_status rn_exact_step_ws(const float *G, size_t rows, size_t cols, size_t ldg, double eta,
                                 double rel_tol, double *S, size_t lds, double *flow, size_t ldf,
                                 rn_exact_result *res, void *ws, size_t ws_bytes)
{
    size_t V = rows, d = cols, i, c, a, gb, sb, fb, P;
    rn__ex_ws w;
    double *base, sumn = 0.0, sigma, lo = 0.0, hi = 0.0, D = 0.0, t;
    unsigned steps = 0, rounds = 0;
    int done = 0;
    rn_status st = rn__ex_validate(G, V, d, ldg, eta, rel_tol, S, lds, flow, ldf, res, &gb, &sb, &fb, 0);

    if (st != RN_OK) return st;
    if (!ws) return RN_ERR_NULL;
    if (ws_bytes < rn_exact_step_workspace_size(V, d)) return RN_ERR_SIZE;
    P = V * (V - 1) / 2;
    if (!P) flow = RN__NULL;
    if (rn__ex_overlap(ws, ws_bytes, G, gb) || rn__ex_overlap(ws, ws_bytes, S, sb) ||
        rn__ex_overlap(ws, ws_bytes, flow, fb) || rn__ex_overlap(ws, ws_bytes, res, sizeof(*res)))
        return RN_ERR_ALIAS;
    for (i = 0; i < V; i++) /* G's values only after every overlap check (issue 40) */
        for (c = 0; c < d; c++)
            if (!(G[i * ldg + c] - G[i * ldg + c] == 0.0f)) return RN_ERR_NONFINITE;

    {
        size_t off = (size_t)((uintptr_t)ws % sizeof(double));
        base = (double *)(void *)((char *)ws + (off ? sizeof(double) - off : 0));
    }
    rn__ex_carve(&w, V, d, base);

    /* centre in double */
    for (c = 0; c < d; c++) {
        double m = 0.0;
        for (i = 0; i < V; i++) m += (double)G[i * ldg + c];
        m /= (double)V;
        for (i = 0; i < V; i++) w.gc[i * d + c] = (double)G[i * ldg + c] - m;
    }
    for (i = 0; i < V; i++) sumn += rn__ex_norm(w.gc + i * d, d);
    sigma = 0.5 * sumn;
    if (!rn__finite_d(sumn) || !rn__finite_d(eta * sumn) || !(eta * sumn <= 1e300)) return RN_ERR_DOMAIN;
    memset(w.p, 0, V * d * sizeof(double));
    memset(w.w, 0, (P ? P : 1) * sizeof(double));
    memset(w.x, 0, V * w.kmax * sizeof(double));
    t = 0.0;

    if (sumn == 0.0 || V == 1) {
        done = 1; /* Delta* = 0: S = 0, flow = 0 */
    } else if (V == 2) {
        /* closed form: s_i = -(1/2) g_i/||g_i||, y_12 = ||g_1|| (p_2 - p_1) */
        double n0 = rn__ex_norm(w.gc, d), n1 = rn__ex_norm(w.gc + d, d);
        for (c = 0; c < d; c++) {
            w.p[c] = -0.5 * w.gc[c] / n0;
            w.p[d + c] = -0.5 * w.gc[d + c] / n1;
        }
        w.w[0] = 0.5 * (n0 + n1);
        done = 1;
    } else {
        /* row space basis: pivoted modified Gram-Schmidt with reorthogonalisation */
        double thr = 0.125 * rel_tol * sumn;
        size_t k = 0;
        memcpy(w.e, w.gc, V * d * sizeof(double));
        while (k < w.kmax) {
            double en, best = 0.0, tot = 0.0, nq = 0.0;
            size_t piv = 0, pass;
            double *qk = w.q + k * d;
            for (i = 0; i < V; i++) {
                en = rn__ex_norm(w.e + i * d, d);
                tot += en;
                if (en > best) { best = en; piv = i; }
            }
            if (!(tot > thr) || best == 0.0) break;
            for (c = 0; c < d; c++) qk[c] = w.e[piv * d + c] / best;
            for (pass = 0; pass < 2; pass++) {
                for (a = 0; a < k; a++) {
                    double cf = rn__ex_dot(qk, w.q + a * d, d);
                    for (c = 0; c < d; c++) qk[c] -= cf * w.q[a * d + c];
                }
                nq = rn__ex_norm(qk, d);
                if (!(nq > 0.0)) break;
                for (c = 0; c < d; c++) qk[c] /= nq;
            }
            if (!(nq > 0.0)) break;
            for (i = 0; i < V; i++) {
                double cf = rn__ex_dot(w.e + i * d, qk, d);
                for (c = 0; c < d; c++) w.e[i * d + c] -= cf * qk[c];
            }
            k++;
        }
        w.k = k;
        w.n = (V - 1) * k;
        /* H was carved for kmax (mmax); with k <= kmax the n x n block fits in that space */
        for (i = 0; i < V; i++)
            for (a = 0; a < w.kmax; a++)
                w.h[i * w.kmax + a] = a < k ? rn__ex_dot(w.gc + i * d, w.q + a * d, d) / sigma : 0.0;
    }

    if (!done) {
        unsigned round_steps = 0;
        t = (double)P; /* normalised Delta* is in [1, sqrt 2]: the first gap is about 1 */
        rn__ex_slacks(&w, w.x, w.s);
        while (steps < RN__EX_MAX_NEWTON) {
            double dec2, gap = -1.0, mu;
            rn__ex_assemble(&w, t);
            dec2 = rn__ex_direction(&w);
            steps++;
            round_steps++;
            if (!(dec2 >= 0.0)) break;
            if (dec2 < 1e-3) {
                rn__ex_positions(&w, t, sigma);
                rn__ex_certify(&w, eta, &lo, &hi, &D, RN__NULL, 0);
                gap = (hi - lo) / hi;
                if (hi - lo <= rel_tol * hi) { done = 1; break; }
                /* close, or at the end of a round: re-fit the multipliers (O(m^2 k + m^3/3),
                 * m <= P pairs carrying flow) */
                if (gap < 10.0 * rel_tol || ((double)P <= 10.0 * rel_tol * t &&
                                               (dec2 <= 1e-10 || round_steps >= 40))) {
                    rn__ex_refine(&w, sigma);
                    rn__ex_certify(&w, eta, &lo, &hi, &D, RN__NULL, 0);
                    gap = (hi - lo) / hi;
                    if (hi - lo <= rel_tol * hi) { done = 1; break; }
                }
            }
            /* centred (or stalled at the rounding floor): increase t */
            if (dec2 <= 1e-10 || (dec2 < 1e-3 && round_steps >= 40) || !rn__ex_step(&w, t, dec2)) {
                /* the gap is about P/t: aim a little past the target */
                mu = gap > 0.0 ? 3.0 * gap / rel_tol : RN__EX_MU_MIN;
                if (!(mu >= RN__EX_MU_MIN)) mu = RN__EX_MU_MIN;
                if (mu > RN__EX_MU_MAX) mu = RN__EX_MU_MAX;
                t *= mu;
                rounds++;
                round_steps = 0;
                /* at the central point the gap is below P/t (normalised Delta* >= 1): far past
                 * that, the certificate is stuck at the rounding floor */
                if (t > 1e4 * (double)P / rel_tol) break;
            }
        }
        if (!done) return RN_ERR_NOCONVERGE;
    }

    rn__ex_certify(&w, eta, &lo, &hi, &D, RN__NULL, 0);
    if (!rn__finite_d(hi) || !rn__finite_d(lo)) return RN_ERR_DOMAIN;
    if (!(hi - lo <= rel_tol * hi) && !(hi == 0.0 && lo == 0.0)) return RN_ERR_NOCONVERGE;
    if (flow) rn__ex_certify(&w, eta, &lo, &hi, &D, flow, ldf);
    if (S)
        for (i = 0; i < V; i++)
            for (c = 0; c < d; c++) S[i * lds + c] = w.sf[i * d + c];
    res->decrease_lo = lo;
    res->decrease_hi = hi;
    res->decrease_rownorm = 0.5 * eta * sumn;
    res->diameter = D;
    res->rank = V == 2 && sumn > 0.0 ? 1 : w.k;
    res->newton_steps = steps;
    res->barrier_rounds = rounds;
    return RN_OK;
}

RNDEF rn_status rn_exact_step(const float *G, size_t rows, size_t cols, size_t ldg, double eta,
                              double rel_tol, double *S, size_t lds, double *flow, size_t ldf,
                              rn_exact_result *res)
{
    size_t need, gb, sb, fb;
    void *ws;
    rn_status st = rn__ex_validate(G, rows, cols, ldg, eta, rel_tol, S, lds, flow, ldf, res, &gb,
                                   &sb, &fb, 1);
    if (st != RN_OK) return st;
    need = rn_exact_step_workspace_size(rows, cols);
    ws = RN_MALLOC(need);
    if (!ws) return RN_ERR_NOMEM;
    st = rn_exact_step_ws(G, rows, cols, ldg, eta, rel_tol, S, lds, flow, ldf, res, ws, need);
    RN_FREE(ws);
    return st;
}

#if defined(__cplusplus) && (defined(__GNUC__) || defined(__clang__))
#pragma GCC diagnostic pop
#endif
#endif /* ROWNORM_IMPLEMENTATION_DONE */
#endif /* ROWNORM_IMPLEMENTATION */

/*
------------------------------------------------------------------------------
This software is available under 2 licenses -- choose whichever you prefer.
------------------------------------------------------------------------------
ALTERNATIVE A - MIT License
Copyright (c) 2026 The rownorm authors
Permission is hereby granted, free of charge, to any person obtaining a copy of
this software and associated documentation files (the "Software"), to deal in
the Software without restriction, including without limitation the rights to
use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies
of the Software, and to permit persons to whom the Software is furnished to do
so, subject to the following conditions:
The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.
THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
------------------------------------------------------------------------------
ALTERNATIVE B - Public Domain (www.unlicense.org)
This is free and unencumbered software released into the public domain.
Anyone is free to copy, modify, publish, use, compile, sell, or distribute this
software, either in source code form or as a compiled binary, for any purpose,
commercial or non-commercial, and by any means.
In jurisdictions that recognize copyright laws, the author or authors of this
software dedicate any and all copyright interest in the software to the public
domain. We make this dedication for the benefit of the public at large and to
the detriment of our heirs and successors. We intend this dedication to be an
overt act of relinquishment in perpetuity of all present and future rights to
this software under copyright law.
THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN
ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION
WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
------------------------------------------------------------------------------
*/
