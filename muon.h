/* muon.h - v0.1.0 - the Muon family of optimizers in one header (C99 / C++)
 *
 * Newton-Schulz orthogonalisation (any coefficient schedule), the Muon step, Muown (row
 * magnitudes as their own variable), a spectral cap (reconstructed from a paper's abstract),
 * exact singular-value diagnostics that pick the Newton-Schulz budget, a companion AdamW and
 * global-norm gradient clipping.
 * The math is SPEC.md section 2; section numbers below refer to it.
 *
 * Do this:
 *     #define MUON_IMPLEMENTATION
 * before you include this file in *one* C or C++ file to create the implementation.
 * It needs nothing else from this project (not rownorm.h); link with -lm.
 *
 * Usage:
 *     muon_config cfg = muon_default();          // lr 0.02, beta 0.95, Nesterov, EMA, Jordan x 5
 *     muon_state st;
 *     if (muon_init(&st, rows, cols) != MUON_OK) ...   // allocates momentum + workspace
 *     for (...) {
 *         compute G (rows x cols, leading dimension ldg);
 *         muon_status s = muon_step(&st, &cfg, W, ldw, G, ldg);  // G is never modified
 *     }
 *     muon_free(&st);
 *
 * Compile-time options (define before including):
 *     MUON_STATIC            all functions static (private to the including file)
 *     MUONDEF                override the linkage of every function
 *     MUON_MALLOC(sz) / MUON_FREE(p)   both or neither (default malloc/free)
 *     MUON_ASSERT(x)         default assert(x)
 *     MUON_USE_CBLAS         matrix products go to cblas_sgemm / cblas_ssyrk (link a CBLAS)
 *     MUON_NO_SIMD           scalar reference kernels only (the GEMM section's choice)
 *
 * Memory: no step function allocates. Every routine that needs scratch has a _ws form taking
 * caller memory and a *_workspace_size() query; the forms that allocate through MUON_MALLOC
 * (muon_orthogonalize, muon_singular_values, muon_init, ...) say so in their comment.
 * Columns past `cols` inside a leading dimension are never read or written.
 *
 * Errors: every function validates all of its inputs before it writes anything; on any status
 * other than MUON_OK the outputs and the state are byte-for-byte untouched.
 *
 * Threading: the Newton-Schulz products run on the threads of the GEMM section (OpenMP when
 * compiled with -fopenmp, or the CBLAS's own threads); batches of small matrices run one matrix
 * per OpenMP thread when given muon_ns_batched_workspace_size() bytes. The elementwise passes of
 * the step functions are split by rows under OpenMP. No global mutable state: distinct states may be
 * stepped from distinct threads.
 *
 * Determinism: every reduction that decides a result (Frobenius norms, dot products of the
 * spectral cap, AdamW bias corrections, the clipping norm) is accumulated in double in a fixed
 * order that does not depend on the thread count; elementwise passes are per element. The
 * results are therefore bit-identical across runs and thread counts exactly when the GEMM section
 * is (see its documentation; a threaded CBLAS generally is not).
 *
 * Numerics of the normalisation (SPEC 4, first pitfall): Newton-Schulz divides by
 * s*||G||_F + eps with an absolute eps (the contract of the presets: eps = 1e-7). The norm is
 * accumulated in double, and an all-zero input is caught explicitly (zero in, zero out), so
 * eps = 0 is safe and makes the result exactly scale invariant. With eps > 0 every singular
 * value is shrunk by ||G||_F / (s*||G||_F + eps): negligible for ||G||_F >> eps; at
 * ||G||_F = 1e-9 with eps = 1e-7 the iteration starts from a matrix of norm about 0.01 (Jordan's
 * slope of 485 at 0 still lifts the larger directions), and at ||G||_F = 1e-11 from 1e-4, where
 * the output is about 0.05 x orthogonal. Set ns.eps = 0 when gradients can be that small.
 */
#ifndef MUON_H
#define MUON_H

#include <stddef.h>

#define MUON_VERSION_MAJOR 0
#define MUON_VERSION_MINOR 1
#define MUON_VERSION_PATCH 0

#ifndef MUONDEF
#ifdef MUON_STATIC
#if defined(__GNUC__) || defined(__clang__)
#define MUONDEF static __attribute__((unused)) /* no unused-function warnings */
#else
#define MUONDEF static
#endif
#else
#define MUONDEF extern
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum muon_status {
    MUON_OK = 0,
    MUON_ERR_NULL,       /* a required pointer is NULL (also: a state that was never initialised) */
    MUON_ERR_SIZE,       /* zero or overflowing size, ld < cols, split_rows not dividing rows,
                            or a workspace below the one-thread size of its *_workspace_size() */
    MUON_ERR_NONFINITE,  /* NaN or Inf in an input */
    MUON_ERR_DOMAIN,     /* parameter outside its domain */
    MUON_ERR_NOMEM,      /* allocation failed */
    MUON_ERR_ALIAS,      /* buffers overlap where the function does not allow it */
    MUON_ERR_UNREACHABLE /* muon_ns_choose: no candidate meets the target within max_steps */
} muon_status;

/* A constant string naming the status; never NULL. */
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

/* ---- Newton-Schulz schedules (SPEC 2.1) ------------------------------------------------ */
#define MUON_NS_MAX_TRIPLES 32
#define MUON_NS_MAX_STEPS 1000

typedef enum muon_ns_kind {
    MUON_NS_JORDAN = 0,     /* (3.4445, -4.7750, 2.0315) repeated; 5 steps; safety 1; eps 1e-7 */
    MUON_NS_POLAR_EXPRESS,  /* 8 per-step minimax triples (first 7 divided as a/1.01, b/1.01^3,
                               c/1.01^5), last (1.875, -1.25, 0.375) repeated; 5 steps;
                               safety 1.01; eps 1e-7 */
    MUON_NS_DEEPSEEK_V4,    /* 8 x Jordan then 2 x (2, -1.5, 0.5), last repeated; 10 steps;
                               safety 1; eps 1e-7 */
    MUON_NS_CUBIC           /* (1.5, -0.5, 0) repeated: converges to the polar factor U V^T;
                               24 steps; safety 1; eps 1e-7 */
} muon_ns_kind;

typedef enum muon_ns_mode {
    MUON_NS_REPEAT_LAST = 0, /* step k >= count uses the last triple */
    MUON_NS_CYCLE = 1        /* step k uses triple k mod count */
} muon_ns_mode;

/* A schedule is plain data (no pointers): step k (0-based) applies
 * p_k(x) = a_k x + b_k x^3 + c_k x^5 to every singular value, with (a_k, b_k, c_k) =
 * coeffs[k] for k < count and then per `mode`.
 * Zero fields: count == 0 means the Jordan preset (every field but `steps` is ignored, and
 * steps <= 0 then means 5); with count > 0, steps == 0 means "each triple once" (steps = count)
 * and safety == 0 means 1. eps is always literal (0 allowed). A zeroed struct is Jordan x 5. */
typedef struct muon_ns_config {
    int count;         /* triples in use, 0..MUON_NS_MAX_TRIPLES (0: Jordan preset) */
    int steps;         /* K, the number of steps, 0..MUON_NS_MAX_STEPS */
    muon_ns_mode mode; /* what step k >= count uses */
    double safety;     /* s >= 1 typically: X0 = G / (s*||G||_F + eps) */
    double eps;        /* absolute, >= 0 (see the top comment on tiny norms) */
    double coeffs[MUON_NS_MAX_TRIPLES][3];
} muon_ns_config;

/* The preset `kind`; steps <= 0: the preset's own count. An unknown kind returns a config that
 * every function rejects with MUON_ERR_DOMAIN (count = -1). */
MUONDEF muon_ns_config muon_ns_preset(muon_ns_kind kind, int steps);

/* NS orthogonalisation of G (rows x cols, ld ldg) into out (rows x cols, ld ldo), SPEC 2.1:
 *     X = G / (s*||G||_F + eps)   (norm accumulated in double)
 *     tall (rows > cols): iterate on X^T so that the Gram matrix is the small one
 *     K times: A = X X^T (SSYRK); B = b A + c A A (SSYRK, A is symmetric); X = a X + B X (SGEMM)
 * ns NULL: Jordan x 5. Zero G gives zero out (never NaN). out may be G itself (same ld: in
 * place); any other overlap is MUON_ERR_ALIAS. Statuses: NULL, SIZE, DOMAIN (bad schedule),
 * ALIAS, NONFINITE (NaN/Inf in G), NOMEM. Allocates its workspace through MUON_MALLOC; the
 * _ws form does not. NS is approximate by design: Jordan x 5 is not exactly orthogonal; it maps
 * each singular value sigma of G/||G||_F to muon_ns_transfer(ns, sigma). */
MUONDEF muon_status muon_orthogonalize(const float *G, size_t rows, size_t cols, size_t ldg,
                                       const muon_ns_config *ns, float *out, size_t ldo);
/* Bytes of workspace for one rows x cols orthogonalisation (also per matrix of a batch), sized
 * for the GEMM section at the current OpenMP thread count. 0 on zero or overflowing sizes.
 * (A smaller workspace, down to the size for one thread, is accepted: the products then run on
 * fewer threads. So raising the thread count after sizing never turns a call into an error.) */
MUONDEF size_t muon_ns_workspace_size(size_t rows, size_t cols);
MUONDEF muon_status muon_orthogonalize_ws(const float *G, size_t rows, size_t cols, size_t ldg,
                                          const muon_ns_config *ns, float *out, size_t ldo,
                                          void *ws, size_t ws_bytes);
/* `count` same-shape matrices, matrix i at G + i*stride_g (out + i*stride_o): each one is
 * normalised and orthogonalised on its own (never across matrices). The _ws form needs at least
 * muon_ns_workspace_size(rows, cols) bytes and then runs the matrices one after the other;
 * given muon_ns_batched_workspace_size(count, rows, cols) bytes, small matrices (whose products
 * the GEMM would run on one thread) run concurrently, one per OpenMP thread, with bit-identical
 * results. The allocating form allocates the batched size. For count > 1 the strides
 * must keep the output matrices apart (stride_o >= (rows-1)*ldo + cols, else MUON_ERR_SIZE);
 * in place needs out == G, ldo == ldg, stride_o == stride_g. */
MUONDEF muon_status muon_orthogonalize_batched(const float *G, size_t count, size_t rows, size_t cols,
                                               size_t ldg, size_t stride_g, const muon_ns_config *ns,
                                               float *out, size_t ldo, size_t stride_o);
/* Bytes that let muon_orthogonalize_batched_ws run a batch concurrently (see above); equal to
 * muon_ns_workspace_size when it would not. 0 on zero or overflowing sizes. */
MUONDEF size_t muon_ns_batched_workspace_size(size_t count, size_t rows, size_t cols);
MUONDEF muon_status muon_orthogonalize_batched_ws(const float *G, size_t count, size_t rows, size_t cols,
                                                  size_t ldg, size_t stride_g, const muon_ns_config *ns,
                                                  float *out, size_t ldo, size_t stride_o,
                                                  void *ws, size_t ws_bytes);

/* ---- Transfer function and the NS budget (SPEC 2.1, 2.5) ------------------------------- */
/* f_K(sigma) = p_K(...p_1(x0)) in double with x0 = sigma / s, for sigma a singular value of
 * M/||M||_F and K = the schedule's steps. This is exactly what muon_orthogonalize applies to the
 * singular values when eps = 0; with eps > 0 the true start is sigma*||M||_F/(s*||M||_F + eps),
 * a relative difference of eps/(s*||M||_F). ns NULL: Jordan x 5. Invalid schedule: NaN. */
MUONDEF double muon_ns_transfer(const muon_ns_config *ns, double sigma);
/* The least K in 1..max_steps with f_K(sigma) >= tau, the schedule extended per its mode (its
 * own `steps` is ignored); -1 if none, or if ns is invalid or max_steps < 1. */
MUONDEF int muon_ns_min_steps(const muon_ns_config *ns, double sigma, double tau, int max_steps);
/* Quantile q in [0,1] (0 = smallest, 0.5 = median, 1 = largest) of n >= 1 values given in
 * non-increasing order (as muon_singular_values writes them), linear interpolation between order
 * statistics (position q*(n-1) in ascending order). DOMAIN for q outside [0,1], unsorted or
 * non-finite input. */
MUONDEF muon_status muon_sv_quantile(const double *sv, size_t n, double q, double *out);
/* Picks the cheapest schedule meeting f_K(sigma_q) >= tau: sigma_q is the q-quantile of
 * sv / sqrt(sum sv^2) (the singular values of any multiple of M, e.g. from
 * muon_singular_values(M); the normalisation to M/||M||_F is done here). Among `candidates`
 * (NULL with count 0: the four presets, in enum order) it takes the one with the least
 * muon_ns_min_steps(..., max_steps) (ties: the earlier one), writes it to *out with
 * out->steps = K and, if index_out is not NULL, its index. UNREACHABLE if no candidate meets
 * tau within max_steps (out untouched). DOMAIN for bad q, tau, max_steps, sv or candidates. */
MUONDEF muon_status muon_ns_choose(const double *sv, size_t n, double q, double tau, int max_steps,
                                   const muon_ns_config *candidates, size_t count,
                                   muon_ns_config *out, size_t *index_out);

/* ---- Exact singular values (SPEC 2.5) --------------------------------------------------- */
/* All min(rows, cols) singular values of M in double, non-increasing, into sv. Method:
 * one-sided (Hestenes) Jacobi on a double copy, with the min(rows,cols) columns (of M or M^T)
 * rotated until every pair is orthogonal to working precision. Chosen over an eigensolver on the
 * Gram matrix because it keeps relative accuracy on tiny singular values (the Gram matrix squares
 * them and loses everything below sqrt(eps_double)*sigma_1). Cost O(rows*cols*min) per sweep,
 * typically 6-10 sweeps: a diagnostic, not for every step of a large layer. Rank-deficient input
 * gives (near-)zero values. Statuses: NULL, SIZE, NONFINITE, NOMEM. Allocates; the _ws form
 * takes muon_sv_workspace_size(rows, cols) bytes. */
MUONDEF muon_status muon_singular_values(const float *M, size_t rows, size_t cols, size_t ld, double *sv);
MUONDEF size_t muon_sv_workspace_size(size_t rows, size_t cols);
MUONDEF muon_status muon_singular_values_ws(const float *M, size_t rows, size_t cols, size_t ld,
                                            double *sv, void *ws, size_t ws_bytes);

/* ---- The Muon step (SPEC 2.2, 2.4) ------------------------------------------------------ */
typedef enum muon_momentum_form {
    MUON_MOMENTUM_EMA = 0, /* B <- beta B + (1-beta) G;  Nesterov u = (1-beta) G + beta B */
    MUON_MOMENTUM_SUM = 1  /* B <- beta B + G;           Nesterov u = G + beta B          */
} muon_momentum_form;      /* without Nesterov u = B. Both agree after NS (up to eps). */

typedef enum muon_scale_mode {
    MUON_SCALE_ORIGINAL = 0,   /* sqrt(max(1, r/c)) */
    MUON_SCALE_MATCH_ADAMW,    /* scale_coeff * sqrt(max(r, c)) (0.2; DeepSeek-V4 uses 0.18) */
    MUON_SCALE_SPECTRAL,       /* sqrt(r/c) */
    MUON_SCALE_NONE            /* 1 */
} muon_scale_mode;             /* r x c: the matrix NS saw (a QKV chunk when split_rows > 1) */

typedef enum muon_cap_mode {
    MUON_CAP_OFF = 0,    /* no spectral cap */
    MUON_CAP_GROWTH,     /* remove c u1 v1^T from the increment when c = u1^T D v1 > 0 */
    MUON_CAP_ALWAYS      /* remove it whatever the sign of c */
} muon_cap_mode;

/* Zero fields: lr, momentum, weight_decay and nesterov are literal (a zeroed struct is a valid
 * config that moves nothing: lr 0); the enums' zero values are EMA, ORIGINAL and CAP_OFF;
 * scale_coeff 0 means 0.2; ns zeroed means Jordan x 5; split_rows 0 means 1; cap_iters 0 means 2.
 * Start from muon_default(). */
typedef struct muon_config {
    double lr;                        /* >= 0 */
    double momentum;                  /* beta in [0, 1) */
    double weight_decay;              /* lambda >= 0, decoupled: W <- W (1 - lr lambda) */
    int nesterov;                     /* nonzero: Nesterov */
    muon_momentum_form momentum_form;
    muon_scale_mode scale;
    double scale_coeff;               /* MATCH_ADAMW coefficient, >= 0 (0: 0.2) */
    muon_ns_config ns;
    size_t split_rows;                /* fused QKV: k equal row chunks, each its own NS (0, 1: none) */
    muon_cap_mode cap;                /* spectral cap (SPEC 2.4, reconstructed) */
    int cap_iters;                    /* warm power iterations per step, 0..100 (0: 2) */
} muon_config;

/* lr 0.02, momentum 0.95, Nesterov, EMA, ORIGINAL, scale_coeff 0.2, weight decay 0, Jordan x 5,
 * no split, cap off (cap_iters 2). */
MUONDEF muon_config muon_default(void);

#define MUON_CAP_COLD_ITERS 30 /* power iterations when the stored pair is not yet valid */

typedef struct muon_state {
    size_t rows, cols;
    long long step;         /* completed steps */
    float *momentum;        /* B, rows x cols, ld = cols, starts at 0 */
    double *cap_u, *cap_v;  /* top singular pair of W before the last capped step (rows, cols) */
    double cap_sigma;       /* its sigma_1 estimate (0 until the cap has run) */
    int cap_valid;          /* the pair is a warm start */
    void *workspace;        /* owned workspace for muon_step (NULL from muon_init_ex(.., 0)) */
    size_t workspace_bytes;
    void *block;            /* the single allocation behind all of the above */
} muon_state;

/* Allocates (MUON_MALLOC) the momentum, the cap pair and a workspace for muon_step of
 * muon_workspace_size(rows, cols, NULL) bytes. Statuses: NULL, SIZE, NOMEM; st untouched on
 * error. */
MUONDEF muon_status muon_init(muon_state *st, size_t rows, size_t cols);
/* As muon_init; with_workspace == 0 allocates no workspace, and then only muon_step_ws steps
 * (share one workspace across layers). */
MUONDEF muon_status muon_init_ex(muon_state *st, size_t rows, size_t cols, int with_workspace);
/* Bytes muon_step_ws needs for a rows x cols weight under cfg (split_rows matters; cfg NULL:
 * the no-split worst case), sized for the current OpenMP thread count (less, down to the
 * one-thread size, runs on fewer threads). 0 on overflow or zero size. */
MUONDEF size_t muon_workspace_size(size_t rows, size_t cols, const muon_config *cfg);
/* One Muon step on W (rows x cols, ld ldw) with gradient G (ld ldg), SPEC 2.2:
 *     u = Nesterov/plain momentum of G (cfg->momentum_form);  O = NS(u) per row chunk
 *     D = -lr * scale(chunk) * O;  spectral cap on D if cfg->cap (SPEC 2.4)
 *     W <- W (1 - lr*weight_decay) + D;   B and step committed last.
 * G is never modified and must not overlap W (ALIAS). Statuses: NULL (incl. an uninitialised
 * state, or muon_step on a state without workspace), SIZE (ld < cols, split_rows not dividing
 * rows, workspace too small), DOMAIN (cfg out of range), ALIAS, NONFINITE (NaN/Inf in G).
 * No allocation. */
MUONDEF muon_status muon_step(muon_state *st, const muon_config *cfg, float *W, size_t ldw,
                              const float *G, size_t ldg);
MUONDEF muon_status muon_step_ws(muon_state *st, const muon_config *cfg, float *W, size_t ldw,
                                 const float *G, size_t ldg, void *ws, size_t ws_bytes);
/* Frees what muon_init allocated and zeroes *st. NULL and zeroed states are fine. */
MUONDEF void muon_free(muon_state *st);

/* ---- Spectral cap and spectral diagnostics (SPEC 2.3, 2.4) ------------------------------ */
/* The spectral cap is RECONSTRUCTED from the source paper's abstract (SPEC 2.4 says so). The
 * abstract states the idea: project out only the first-order growth of the single top singular
 * direction from each update (the second-order term is non-negative), related to the min-entropy
 * of the spectrum. The details here (c = u1^T D v1 from a warm-started power-iteration pair kept
 * in the state, the growth-only and always modes, the iteration counts) are this library's
 * reading of it, not a published algorithm. */
/* iters >= 1 power iterations on W (rows x cols): v <- W^T u / ||.||, u <- W v / ||.||, sums in
 * double. v (cols) is the warm start; an all-zero v starts from a fixed pseudo-random vector.
 * Writes unit u (rows), unit v (cols) and sigma = ||W v||, the sigma_1 estimate. W == 0: sigma 0,
 * u zero, v the normalised start. Statuses: NULL, SIZE, DOMAIN (iters < 1 or non-finite v), NONFINITE. */
MUONDEF muon_status muon_top_singular_pair(const float *W, size_t rows, size_t cols, size_t ld, int iters,
                                           double *u, double *v, double *sigma);
/* c = u^T D v, sigma_1's first-order growth under W -> W + D (unit u, v: the top pair of W).
 * GROWTH: if c > 0, D <- D - c u v^T; ALWAYS: D <- D - c u v^T; OFF: D unchanged. *growth (may
 * be NULL) receives c before removal. Statuses: NULL, SIZE, DOMAIN (bad mode). */
MUONDEF muon_status muon_spectral_cap(float *D, size_t rows, size_t cols, size_t ldd, const double *u,
                                      const double *v, muon_cap_mode mode, double *growth);
/* Min-entropy H_inf = log(||W||_F^2 / sigma1^2) (the log of the stable rank) for a given
 * sigma1 > 0 (e.g. st.cap_sigma or the first of muon_singular_values). DOMAIN if sigma1 <= 0 or
 * non-finite, NONFINITE for NaN/Inf in W. */
MUONDEF muon_status muon_min_entropy(const float *W, size_t rows, size_t cols, size_t ld, double sigma1,
                                     double *h);

/* SPEC 2.3: with row norms n_i, unit rows d_i, C = D D^T and p = n/||n||_inf,
 *     ||W||_2 = ||n||_inf * sqrt(lambda_max(diag(p) C diag(p)))
 * spectral_norm from the exact singular values of W; row_factor = ||n||_inf; coherence =
 * sqrt(lambda_max(...)) in [1, sqrt(rows)], computed separately as the top singular value of
 * the matrix with rows p_i d_i; min_entropy = log(||W||_F^2/||W||_2^2). */
typedef struct muon_decomposition {
    double spectral_norm, row_factor, coherence, min_entropy;
} muon_decomposition;
/* Statuses: NULL, SIZE, NONFINITE, DOMAIN (W == 0), NOMEM. Allocates (MUON_MALLOC). */
MUONDEF muon_status muon_spectral_decomposition(const float *W, size_t rows, size_t cols, size_t ld,
                                                muon_decomposition *out);

/* ---- Muown (SPEC 2.3) ------------------------------------------------------------------- */
typedef enum muown_magnitude_rule {
    MUOWN_MAG_ADAM = 0, /* bias-corrected Adam on g (reference default) */
    MUOWN_MAG_SIGNUM,   /* g <- g - mag_lr * sign(EMA_beta1(grad_g)) */
    MUOWN_MAG_FIXED     /* g never moves */
} muown_magnitude_rule;

/* muon: the direction optimiser (lr, momentum, nesterov, momentum_form, scale, scale_coeff, ns,
 * split_rows, weight_decay; cap is ignored). All other fields are literal. */
typedef struct muown_config {
    muon_config muon;
    muown_magnitude_rule magnitude;
    double mag_lr;                 /* step size of the magnitude rule, >= 0 */
    double mag_beta1, mag_beta2;   /* Adam (Signum uses beta1), in [0, 1) */
    double mag_eps;                /* Adam, > 0 */
} muown_config;

/* muon_default() for the direction; Adam on magnitudes with mag_lr 0.02 (= lr; tune it),
 * betas (0.9, 0.95), eps 1e-8. */
MUONDEF muown_config muown_default(void);

typedef struct muown_state {
    size_t rows, cols;
    long long step;
    double *g;          /* row magnitudes (rows); ||W_i|| = g_i after every step when lambda = 0 */
    double *vnorm;      /* ||v_i|| (rows) */
    double *mag_m, *mag_v; /* magnitude optimiser moments (rows) */
    float *momentum;    /* Muon momentum of grad_v, rows x cols, ld = cols */
    void *workspace;
    size_t workspace_bytes;
    void *block;
} muown_state;

/* g = ||v|| = row norms of W (double). DOMAIN if a row of W is zero (its direction is
 * undefined), NONFINITE, NULL, SIZE, NOMEM. Allocates the state and a muown_step workspace. */
MUONDEF muon_status muown_init(muown_state *st, const float *W, size_t rows, size_t cols, size_t ldw);
MUONDEF size_t muown_workspace_size(size_t rows, size_t cols, const muown_config *cfg);
/* u = W/||W_i|| (rows), grad_g_i = <G_i, u_i>, grad_v = (g/||v||) o (G - u o grad_g) (rows
 * orthogonal to u); v_new = ||v|| u - lr*scale*NS(momentum of grad_v); g <- magnitude rule;
 * W = g o v_new/||v_new||; ||v|| <- ||v_new||; with weight_decay lambda != 0:
 * W <- W - lr*lambda*W_old, then g <- row norms of W. Statuses as muon_step_ws. No allocation. */
MUONDEF muon_status muown_step(muown_state *st, const muown_config *cfg, float *W, size_t ldw,
                               const float *G, size_t ldg);
MUONDEF muon_status muown_step_ws(muown_state *st, const muown_config *cfg, float *W, size_t ldw,
                                  const float *G, size_t ldg, void *ws, size_t ws_bytes);
/* The Muown gradients at the state's (g, ||v||) for W, G: grad_g (rows, double) and grad_v
 * (rows x cols, ld ldv). For tests and diagnostics. NULL, SIZE, NONFINITE. */
MUONDEF muon_status muown_gradients(const muown_state *st, const float *W, size_t ldw, const float *G,
                                    size_t ldg, double *grad_g, float *grad_v, size_t ldv);
/* Re-reads g from W's row norms (after the caller changed W); ||v|| is kept. */
MUONDEF muon_status muown_resync(muown_state *st, const float *W, size_t ldw);
MUONDEF void muown_free(muown_state *st);

/* ---- AdamW and clipping (SPEC 2.6) ------------------------------------------------------ */
/* All fields literal; start from muon_adamw_default(). */
typedef struct muon_adamw_config {
    double lr;           /* >= 0 */
    double beta1, beta2; /* in [0, 1) */
    double eps;          /* > 0 */
    double weight_decay; /* >= 0, decoupled: p <- p (1 - lr wd) */
} muon_adamw_config;
/* lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight decay 0.01. */
MUONDEF muon_adamw_config muon_adamw_default(void);

typedef struct muon_adamw_state {
    size_t size;
    long long step;
    float *m, *v;   /* first and second moments (size each) */
} muon_adamw_state;
/* Allocates 2*size floats (MUON_MALLOC), zeroed. NULL, SIZE, NOMEM. */
MUONDEF muon_status muon_adamw_init(muon_adamw_state *st, size_t size);
/* t <- t+1; p <- p (1 - lr wd); m, v EMA of g, g^2; p <- p - lr m_hat / (sqrt(v_hat) + eps) with
 * bias corrections 1 - beta^t computed as -expm1(t log beta). NULL, DOMAIN, NONFINITE (in grad),
 * ALIAS (param overlaps grad). No allocation. */
MUONDEF muon_status muon_adamw_step(muon_adamw_state *st, const muon_adamw_config *cfg, float *param,
                                    const float *grad);
MUONDEF void muon_adamw_free(muon_adamw_state *st);

/* Global-norm clipping over `count` tensors (grads[i] has sizes[i] floats; sizes may be 0):
 * total = sqrt(sum of all squares) in double; if total > max_norm every gradient is multiplied
 * by max_norm / total. Clip gradients, never the orthogonalised updates. *total_norm_out (may be
 * NULL) receives the norm before clipping. NULL, SIZE (count 0), DOMAIN (max_norm <= 0 or NaN),
 * NONFINITE (nothing is scaled). */
MUONDEF muon_status muon_clip_grad_norm(float **grads, const size_t *sizes, size_t count, double max_norm,
                                        double *total_norm_out);

#ifdef __cplusplus
}
#endif
#endif /* MUON_H */

#ifdef MUON_IMPLEMENTATION
#ifndef MUON_IMPLEMENTATION_DONE
#define MUON_IMPLEMENTATION_DONE

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(MUON_MALLOC) && defined(MUON_FREE)
#elif !defined(MUON_MALLOC) && !defined(MUON_FREE)
#define MUON_MALLOC(sz) malloc(sz)
#define MUON_FREE(p) free(p)
#else
#error "muon.h: define both MUON_MALLOC and MUON_FREE, or neither"
#endif

#ifndef MUON_ASSERT
#include <assert.h>
#define MUON_ASSERT(x) assert(x)
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
    case MUON_ERR_UNREACHABLE: return "no candidate schedule meets the target within max_steps";
    }
    return "unknown muon_status";
}

/* ---- SGEMM / SSYRK section (developed in wip/muon_gemm.inc, inlined at release) ---- */
#include "wip/muon_gemm.inc"

/* ======================================================================================== */
/* Everything below uses only the public GEMM entry points above.                          */

#ifndef MUON__OMP
#ifdef _OPENMP
#define MUON__OMP(x) _Pragma(#x)
#else
#define MUON__OMP(x)
#endif
#endif

#define MUON__ALIGN 64
#define MUON__PAR_MIN 65536.0 /* elements below which an elementwise pass stays on one thread */

/* finiteness from the exponent bits: stays correct under -ffast-math */
static int muon__u_isfinite(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return (b & 0x7FF0000000000000ULL) != 0x7FF0000000000000ULL;
}

/* a*b without overflow, else 0 (callers treat 0 as "does not fit") */
static int muon__u_mul(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > (size_t)-1 / a) return 0;
    *out = a * b;
    return 1;
}
static int muon__u_add(size_t a, size_t b, size_t *out)
{
    if (b > (size_t)-1 - a) return 0;
    *out = a + b;
    return 1;
}
/* round up to MUON__ALIGN, 0 on overflow */
static size_t muon__u_round(size_t bytes)
{
    if (bytes > (size_t)-1 - (MUON__ALIGN - 1)) return 0;
    return (bytes + (MUON__ALIGN - 1)) / MUON__ALIGN * MUON__ALIGN;
}
static unsigned char *muon__u_align_ptr(void *p)
{
    uintptr_t a = (uintptr_t)p;
    a = (a + (MUON__ALIGN - 1)) & ~(uintptr_t)(MUON__ALIGN - 1);
    return (unsigned char *)a;
}

/* elements spanned by a rows x cols matrix with leading dimension ld; 0 if it overflows */
static size_t muon__u_extent(size_t rows, size_t cols, size_t ld)
{
    size_t e;
    if (!muon__u_mul(rows - 1, ld, &e) || !muon__u_add(e, cols, &e)) return 0;
    if (e > (size_t)-1 / sizeof(double)) return 0;
    return e;
}

/* SIZE checks of one matrix: nonzero, ld >= cols, no overflow */
static muon_status muon__u_check_shape(size_t rows, size_t cols, size_t ld)
{
    if (rows == 0 || cols == 0 || ld < cols) return MUON_ERR_SIZE;
    if (muon__u_extent(rows, cols, ld) == 0) return MUON_ERR_SIZE;
    return MUON_OK;
}

static int muon__u_overlap(const void *a, size_t abytes, const void *b, size_t bbytes)
{
    uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b;
    if (!abytes || !bbytes) return 0;
    return pa < pb + bbytes && pb < pa + abytes;
}

static int muon__u_finite_matrix(const float *A, size_t rows, size_t cols, size_t ld)
{
    size_t i, j;
    for (i = 0; i < rows; i++) {
        const float *a = A + i * ld;
        uint32_t bad = 0;
        for (j = 0; j < cols; j++) { /* exponent all ones: Inf or NaN (branch-free, vectorisable) */
            uint32_t b;
            memcpy(&b, a + j, sizeof b);
            bad |= (uint32_t)((b & 0x7F800000u) == 0x7F800000u);
        }
        if (bad) return 0;
    }
    return 1;
}

/* ||A||_F^2 in double, rows in order */
static double muon__u_sumsq(const float *A, size_t rows, size_t cols, size_t ld)
{
    double s = 0.0;
    size_t i, j;
    for (i = 0; i < rows; i++) {
        const float *a = A + i * ld;
        for (j = 0; j < cols; j++) s += (double)a[j] * (double)a[j];
    }
    return s;
}

static int muon__u_threads(void)
{
#ifdef _OPENMP
    int t = omp_get_max_threads();
    return t > 0 ? t : 1;
#else
    return 1;
#endif
}

/* ---- schedules ------------------------------------------------------------------------- */

static void muon__ns_set(muon_ns_config *c, int i, double a, double b, double cc)
{
    c->coeffs[i][0] = a;
    c->coeffs[i][1] = b;
    c->coeffs[i][2] = cc;
}

MUONDEF muon_ns_config muon_ns_preset(muon_ns_kind kind, int steps)
{
    /* Published coefficient tables (SPEC 2.1). Polar Express: the paper's per-step minimax
     * triples for safety 1.01, every one but the last divided as (a/s, b/s^3, c/s^5). */
    static const double pe[7][3] = {
        {8.28721201814563, -23.595886519098837, 17.300387312530933},
        {4.107059111542203, -2.9478499167379106, 0.5448431082926601},
        {3.9486908534822946, -2.908902115962949, 0.5518191394370137},
        {3.3184196573706015, -2.488488024314874, 0.51004894012372},
        {2.300652019954817, -1.6689039845747493, 0.4188073119525673},
        {1.891301407787398, -1.2679958271945868, 0.37680408948524835},
        {1.8750014808534479, -1.2500016453999487, 0.3750001645474248}};
    muon_ns_config c;
    int i, own;
    memset(&c, 0, sizeof c);
    c.mode = MUON_NS_REPEAT_LAST;
    c.safety = 1.0;
    c.eps = 1e-7;
    switch (kind) {
    case MUON_NS_JORDAN:
        c.count = 1;
        muon__ns_set(&c, 0, 3.4445, -4.7750, 2.0315);
        own = 5;
        break;
    case MUON_NS_POLAR_EXPRESS: {
        const double s = 1.01;
        c.safety = s;
        c.count = 8;
        for (i = 0; i < 7; i++)
            muon__ns_set(&c, i, pe[i][0] / s, pe[i][1] / (s * s * s), pe[i][2] / (s * s * s * s * s));
        muon__ns_set(&c, 7, 1.875, -1.25, 0.375);
        own = 5;
        break;
    }
    case MUON_NS_DEEPSEEK_V4:
        c.count = 10;
        for (i = 0; i < 8; i++) muon__ns_set(&c, i, 3.4445, -4.7750, 2.0315);
        muon__ns_set(&c, 8, 2.0, -1.5, 0.5);
        muon__ns_set(&c, 9, 2.0, -1.5, 0.5);
        own = 10;
        break;
    case MUON_NS_CUBIC:
        c.count = 1;
        muon__ns_set(&c, 0, 1.5, -0.5, 0.0);
        own = 24;
        break;
    default:
        c.count = -1; /* rejected everywhere */
        own = 1;
        break;
    }
    c.steps = steps > 0 ? steps : own;
    return c;
}

/* Resolve the zero-field defaults of a schedule into *out and validate it. */
static muon_status muon__ns_resolve(const muon_ns_config *in, muon_ns_config *out)
{
    int i;
    if (!in) {
        *out = muon_ns_preset(MUON_NS_JORDAN, 0);
        return MUON_OK;
    }
    if (in->count == 0) {
        if (in->steps > MUON_NS_MAX_STEPS) return MUON_ERR_DOMAIN;
        *out = muon_ns_preset(MUON_NS_JORDAN, in->steps);
        return MUON_OK;
    }
    if (in->count < 0 || in->count > MUON_NS_MAX_TRIPLES) return MUON_ERR_DOMAIN;
    if (in->steps < 0 || in->steps > MUON_NS_MAX_STEPS) return MUON_ERR_DOMAIN;
    if (in->mode != MUON_NS_REPEAT_LAST && in->mode != MUON_NS_CYCLE) return MUON_ERR_DOMAIN;
    if (!muon__u_isfinite(in->safety) || in->safety < 0.0) return MUON_ERR_DOMAIN;
    if (!muon__u_isfinite(in->eps) || in->eps < 0.0) return MUON_ERR_DOMAIN;
    for (i = 0; i < in->count; i++)
        if (!muon__u_isfinite(in->coeffs[i][0]) || !muon__u_isfinite(in->coeffs[i][1]) ||
            !muon__u_isfinite(in->coeffs[i][2]))
            return MUON_ERR_DOMAIN;
    *out = *in;
    if (out->steps == 0) out->steps = out->count;
    if (out->safety == 0.0) out->safety = 1.0;
    return MUON_OK;
}

/* the triple of step k (0-based) of a resolved schedule */
static const double *muon__ns_triple(const muon_ns_config *c, int k)
{
    if (k < c->count) return c->coeffs[k];
    if (c->mode == MUON_NS_CYCLE) return c->coeffs[k % c->count];
    return c->coeffs[c->count - 1];
}

static double muon__ns_poly(const double *t, double x)
{
    double x2 = x * x;
    return x * (t[0] + x2 * (t[1] + x2 * t[2]));
}

MUONDEF double muon_ns_transfer(const muon_ns_config *ns, double sigma)
{
    muon_ns_config c;
    double x;
    int k;
    if (muon__ns_resolve(ns, &c) != MUON_OK) return NAN;
    x = sigma / c.safety;
    for (k = 0; k < c.steps; k++) x = muon__ns_poly(muon__ns_triple(&c, k), x);
    return x;
}

MUONDEF int muon_ns_min_steps(const muon_ns_config *ns, double sigma, double tau, int max_steps)
{
    muon_ns_config c;
    double x;
    int k;
    if (muon__ns_resolve(ns, &c) != MUON_OK || max_steps < 1) return -1;
    if (!muon__u_isfinite(sigma) || !muon__u_isfinite(tau)) return -1;
    x = sigma / c.safety;
    for (k = 0; k < max_steps; k++) {
        x = muon__ns_poly(muon__ns_triple(&c, k), x);
        if (x >= tau) return k + 1;
    }
    return -1;
}

MUONDEF muon_status muon_sv_quantile(const double *sv, size_t n, double q, double *out)
{
    size_t i, lo;
    double h, frac, a, b;
    if (!sv || !out) return MUON_ERR_NULL;
    if (n == 0) return MUON_ERR_SIZE;
    if (!(q >= 0.0 && q <= 1.0)) return MUON_ERR_DOMAIN;
    for (i = 0; i < n; i++) {
        if (!muon__u_isfinite(sv[i])) return MUON_ERR_DOMAIN;
        if (i > 0 && sv[i] > sv[i - 1]) return MUON_ERR_DOMAIN;
    }
    /* ascending order statistic j is sv[n-1-j] */
    h = q * (double)(n - 1);
    lo = (size_t)floor(h);
    if (lo >= n - 1) {
        *out = sv[0];
        return MUON_OK;
    }
    frac = h - (double)lo;
    a = sv[n - 1 - lo];
    b = sv[n - 2 - lo];
    *out = a + frac * (b - a);
    return MUON_OK;
}

MUONDEF muon_status muon_ns_choose(const double *sv, size_t n, double q, double tau, int max_steps,
                                   const muon_ns_config *candidates, size_t count,
                                   muon_ns_config *out, size_t *index_out)
{
    muon_ns_config presets[4], best;
    const muon_ns_config *list = candidates;
    double ss = 0.0, sq;
    size_t i, best_i = 0;
    int best_k = -1;
    muon_status s;
    if (!sv || !out) return MUON_ERR_NULL;
    if (!candidates && count != 0) return MUON_ERR_NULL;
    if (n == 0) return MUON_ERR_SIZE;
    if (!muon__u_isfinite(tau) || max_steps < 1 || max_steps > MUON_NS_MAX_STEPS) return MUON_ERR_DOMAIN;
    if (!candidates) {
        presets[0] = muon_ns_preset(MUON_NS_JORDAN, 0);
        presets[1] = muon_ns_preset(MUON_NS_POLAR_EXPRESS, 0);
        presets[2] = muon_ns_preset(MUON_NS_DEEPSEEK_V4, 0);
        presets[3] = muon_ns_preset(MUON_NS_CUBIC, 0);
        list = presets;
        count = 4;
    }
    for (i = 0; i < count; i++) {
        muon_ns_config tmp;
        if (muon__ns_resolve(&list[i], &tmp) != MUON_OK) return MUON_ERR_DOMAIN;
    }
    s = muon_sv_quantile(sv, n, q, &sq);
    if (s != MUON_OK) return s;
    for (i = 0; i < n; i++) ss += sv[i] * sv[i];
    if (!(ss > 0.0) || !muon__u_isfinite(ss)) return MUON_ERR_DOMAIN;
    sq /= sqrt(ss);
    for (i = 0; i < count; i++) {
        int k = muon_ns_min_steps(&list[i], sq, tau, max_steps);
        if (k > 0 && (best_k < 0 || k < best_k)) {
            best_k = k;
            best_i = i;
        }
    }
    if (best_k < 0) return MUON_ERR_UNREACHABLE;
    muon__ns_resolve(&list[best_i], &best);
    best.steps = best_k;
    *out = best;
    if (index_out) *index_out = best_i;
    return MUON_OK;
}

/* ---- Newton-Schulz ---------------------------------------------------------------------- */

/* Layout of one NS workspace (after aligning the base): X, Y (m x n), A, B (m x m), GEMM ws. */
static size_t muon__ns_ws_bytes(size_t rows, size_t cols, int single_thread)
{
    size_t m = rows < cols ? rows : cols, n = rows < cols ? cols : rows;
    size_t mn, mm, xb, ab, gb, total;
    if (rows == 0 || cols == 0) return 0;
    if (!muon__u_mul(m, n, &mn) || !muon__u_mul(mn, sizeof(float), &mn)) return 0;
    if (!muon__u_mul(m, m, &mm) || !muon__u_mul(mm, sizeof(float), &mm)) return 0;
    xb = muon__u_round(mn);
    ab = muon__u_round(mm);
    {
        /* GEMM packing space for the threads the products can use: the GEMM section runs
         * products below its parallel threshold on one thread (and uses fewer threads when the
         * workspace is smaller), so small layers do not carry per-thread buffers */
        int t = single_thread ? 1 : muon__u_threads();
        size_t graw;
#ifdef MUON_GEMM_PARALLEL_MIN
        if ((double)m * (double)m * (double)n < (double)MUON_GEMM_PARALLEL_MIN) t = 1;
#endif
        graw = muon_gemm_workspace_size(t);
        gb = muon__u_round(graw);
        if (!xb || !ab || (!gb && graw != 0)) return 0;
    }
    total = MUON__ALIGN;
    if (!muon__u_add(total, xb, &total) || !muon__u_add(total, xb, &total) ||
        !muon__u_add(total, ab, &total) || !muon__u_add(total, ab, &total) ||
        !muon__u_add(total, gb, &total))
        return 0;
    return total;
}

MUONDEF size_t muon_ns_workspace_size(size_t rows, size_t cols)
{
    return muon__ns_ws_bytes(rows, cols, 0);
}

/* How many matrices of a batch run concurrently: under OpenMP, when every product of one
 * matrix is below the GEMM section's parallel threshold (it would run them on one thread
 * anyway), the batch is split across threads, each with its own single-thread workspace slice.
 * Each matrix is still computed by the one-thread GEMM, so the result does not depend on it. */
static size_t muon__batch_lanes(size_t count, size_t rows, size_t cols, size_t ws_bytes)
{
#if defined(_OPENMP) && defined(MUON_GEMM_PARALLEL_MIN) && !defined(MUON_USE_CBLAS)
    size_t m = rows < cols ? rows : cols, n = rows < cols ? cols : rows;
    size_t one = muon__ns_ws_bytes(rows, cols, 1), lanes = (size_t)muon__u_threads();
    if (omp_in_parallel()) return 1;
    if ((double)m * (double)m * (double)n >= (double)MUON_GEMM_PARALLEL_MIN || one == 0) return 1;
    if (lanes > count) lanes = count;
    if (lanes > ws_bytes / one) lanes = ws_bytes / one;
    return lanes ? lanes : 1;
#else
    (void)count; (void)rows; (void)cols; (void)ws_bytes;
    return 1;
#endif
}

MUONDEF size_t muon_ns_batched_workspace_size(size_t count, size_t rows, size_t cols)
{
    size_t one = muon__ns_ws_bytes(rows, cols, 1), lanes, total;
    if (count == 0 || one == 0) return 0;
    lanes = muon__batch_lanes(count, rows, cols, (size_t)-1);
    if (lanes <= 1) return muon__ns_ws_bytes(rows, cols, 0);
    if (!muon__u_mul(lanes, one, &total)) return 0;
    return total;
}

/* One orthogonalisation; inputs validated, ns resolved, ws of muon__ns_ws_bytes(rows, cols).
 * G may equal out (same ld): G is fully read into X before out is written. */
static muon_status muon__ns_one(const float *G, size_t rows, size_t cols, size_t ldg,
                                const muon_ns_config *ns, float *out, size_t ldo, void *ws_raw,
                                size_t ws_bytes)
{
    int tall = rows > cols;
    size_t m = tall ? cols : rows, n = tall ? rows : cols;
    size_t xb = muon__u_round(m * n * sizeof(float)), ab = muon__u_round(m * m * sizeof(float));
    unsigned char *base = muon__u_align_ptr(ws_raw);
    float *X = (float *)base, *Y = (float *)(base + xb), *A = (float *)(base + 2 * xb),
          *B = (float *)(base + 2 * xb + ab);
    unsigned char *gws = base + 2 * xb + 2 * ab;
    size_t used = (size_t)(gws - (unsigned char *)ws_raw);
    size_t gbytes = ws_bytes > used ? ws_bytes - used : 0;
    double norm, inv;
    size_t i, j;
    int k;
    muon_status s;

    norm = sqrt(muon__u_sumsq(G, rows, cols, ldg));
    if (norm == 0.0) { /* zero in, zero out (no 0/0) */
        for (i = 0; i < rows; i++) memset(out + i * ldo, 0, cols * sizeof(float));
        return MUON_OK;
    }
    inv = 1.0 / (ns->safety * norm + ns->eps);
    if (!tall) {
        for (i = 0; i < rows; i++)
            for (j = 0; j < cols; j++) X[i * n + j] = (float)((double)G[i * ldg + j] * inv);
    } else {
        for (i = 0; i < rows; i++)
            for (j = 0; j < cols; j++) X[j * n + i] = (float)((double)G[i * ldg + j] * inv);
    }
    for (k = 0; k < ns->steps; k++) {
        const double *t = muon__ns_triple(ns, k);
        float a = (float)t[0], b = (float)t[1], c = (float)t[2];
        float *sw;
        /* A = X X^T (symmetric: SYRK) */
        s = muon_ssyrk_ws(MUON_NO_TRANS, m, n, 1.0f, X, n, 0.0f, A, m, gws, gbytes);
        if (s != MUON_OK) return s;
        /* B = b A + c A A; A A = A A^T since A is symmetric: SYRK again */
        if (c != 0.0f) {
            memcpy(B, A, m * m * sizeof(float));
            s = muon_ssyrk_ws(MUON_NO_TRANS, m, m, c, A, m, b, B, m, gws, gbytes);
            if (s != MUON_OK) return s;
        } else {
            for (i = 0; i < m * m; i++) B[i] = b * A[i];
        }
        /* X <- a X + B X = (B + a I) X: fold a into the diagonal, one GEMM */
        for (i = 0; i < m; i++) B[i * m + i] += a;
        s = muon_sgemm_ws(MUON_NO_TRANS, MUON_NO_TRANS, m, n, m, 1.0f, B, m, X, n, 0.0f, Y, n, gws, gbytes);
        if (s != MUON_OK) return s;
        sw = X;
        X = Y;
        Y = sw;
    }
    if (!tall) {
        for (i = 0; i < rows; i++) memcpy(out + i * ldo, X + i * n, cols * sizeof(float));
    } else {
        for (i = 0; i < rows; i++)
            for (j = 0; j < cols; j++) out[i * ldo + j] = X[j * n + i];
    }
    return MUON_OK;
}

MUONDEF muon_status muon_orthogonalize_batched_ws(const float *G, size_t count, size_t rows, size_t cols,
                                                  size_t ldg, size_t stride_g, const muon_ns_config *ns,
                                                  float *out, size_t ldo, size_t stride_o,
                                                  void *ws, size_t ws_bytes)
{
    muon_ns_config c;
    muon_status s;
    size_t eg, eo, tg, to, i, need;
    if (!G || !out || !ws) return MUON_ERR_NULL;
    if (count == 0) return MUON_ERR_SIZE;
    if ((s = muon__u_check_shape(rows, cols, ldg)) != MUON_OK) return s;
    if ((s = muon__u_check_shape(rows, cols, ldo)) != MUON_OK) return s;
    eg = muon__u_extent(rows, cols, ldg);
    eo = muon__u_extent(rows, cols, ldo);
    if (count > 1 && (stride_o < eo || stride_g == 0)) return MUON_ERR_SIZE;
    if (count == 1) {
        tg = eg;
        to = eo;
    } else {
        if (!muon__u_mul(count - 1, stride_g, &tg) || !muon__u_add(tg, eg, &tg)) return MUON_ERR_SIZE;
        if (!muon__u_mul(count - 1, stride_o, &to) || !muon__u_add(to, eo, &to)) return MUON_ERR_SIZE;
        if (tg > (size_t)-1 / sizeof(float) || to > (size_t)-1 / sizeof(float)) return MUON_ERR_SIZE;
    }
    need = muon__ns_ws_bytes(rows, cols, 1); /* the GEMM uses fewer threads in less space */
    if (need == 0 || ws_bytes < need) return MUON_ERR_SIZE;
    if ((s = muon__ns_resolve(ns, &c)) != MUON_OK) return s;
    if (muon__u_overlap(G, tg * sizeof(float), out, to * sizeof(float)) &&
        !(G == out && ldg == ldo && (count == 1 || stride_g == stride_o)))
        return MUON_ERR_ALIAS;
    if (muon__u_overlap(ws, ws_bytes, G, tg * sizeof(float)) ||
        muon__u_overlap(ws, ws_bytes, out, to * sizeof(float)))
        return MUON_ERR_ALIAS;
    for (i = 0; i < count; i++)
        if (!muon__u_finite_matrix(G + i * stride_g, rows, cols, ldg)) return MUON_ERR_NONFINITE;
#ifdef _OPENMP
    {
        size_t lanes = muon__batch_lanes(count, rows, cols, ws_bytes);
        if (lanes > 1) { /* small matrices: one matrix per thread, one workspace slice each */
            size_t one = muon__ns_ws_bytes(rows, cols, 1);
            int worst = (int)MUON_OK, nl = (int)lanes;
            MUON__OMP(omp parallel for num_threads(nl) schedule(static))
            for (i = 0; i < count; i++) {
                unsigned char *slice = (unsigned char *)ws + (size_t)omp_get_thread_num() * one;
                muon_status si = muon__ns_one(G + i * stride_g, rows, cols, ldg, &c, out + i * stride_o, ldo,
                                              slice, one);
                if (si != MUON_OK) {
                    MUON__OMP(omp critical(muon__batch_status))
                    worst = (int)si;
                }
            }
            return (muon_status)worst;
        }
    }
#endif
    for (i = 0; i < count; i++) {
        s = muon__ns_one(G + i * stride_g, rows, cols, ldg, &c, out + i * stride_o, ldo, ws, ws_bytes);
        if (s != MUON_OK) return s;
    }
    return MUON_OK;
}

MUONDEF muon_status muon_orthogonalize_batched(const float *G, size_t count, size_t rows, size_t cols,
                                               size_t ldg, size_t stride_g, const muon_ns_config *ns,
                                               float *out, size_t ldo, size_t stride_o)
{
    size_t need;
    void *ws;
    muon_status s;
    muon_ns_config c;
    if (!G || !out) return MUON_ERR_NULL;
    if (count == 0) return MUON_ERR_SIZE;
    if ((s = muon__u_check_shape(rows, cols, ldg)) != MUON_OK) return s;
    if ((s = muon__u_check_shape(rows, cols, ldo)) != MUON_OK) return s;
    if ((s = muon__ns_resolve(ns, &c)) != MUON_OK) return s;
    need = muon_ns_batched_workspace_size(count, rows, cols);
    if (need == 0) return MUON_ERR_SIZE;
    ws = MUON_MALLOC(need);
    if (!ws) return MUON_ERR_NOMEM;
    s = muon_orthogonalize_batched_ws(G, count, rows, cols, ldg, stride_g, ns, out, ldo, stride_o, ws, need);
    MUON_FREE(ws);
    return s;
}

MUONDEF muon_status muon_orthogonalize_ws(const float *G, size_t rows, size_t cols, size_t ldg,
                                          const muon_ns_config *ns, float *out, size_t ldo,
                                          void *ws, size_t ws_bytes)
{
    return muon_orthogonalize_batched_ws(G, 1, rows, cols, ldg, 0, ns, out, ldo, 0, ws, ws_bytes);
}

MUONDEF muon_status muon_orthogonalize(const float *G, size_t rows, size_t cols, size_t ldg,
                                       const muon_ns_config *ns, float *out, size_t ldo)
{
    return muon_orthogonalize_batched(G, 1, rows, cols, ldg, 0, ns, out, ldo, 0);
}

/* ---- exact singular values: one-sided Jacobi in double ---------------------------------- */

/* Hestenes one-sided Jacobi on p columns of length q (column j at A + j*q), q >= p.
 * Rotates pairs of columns until all are mutually orthogonal to working precision; the
 * singular values are then the column norms, written to sv in non-increasing order. */
static void muon__jacobi_sv(double *A, size_t q, size_t p, double *sv)
{
    const double tol = 1e-15;
    int sweep;
    size_t i, j, r;
    for (sweep = 0; sweep < 80; sweep++) {
        int rotated = 0;
        for (i = 0; i + 1 < p; i++) {
            for (j = i + 1; j < p; j++) {
                double *ai = A + i * q, *aj = A + j * q;
                double alpha = 0.0, beta = 0.0, gamma = 0.0, zeta, t, c, s;
                for (r = 0; r < q; r++) {
                    alpha += ai[r] * ai[r];
                    beta += aj[r] * aj[r];
                    gamma += ai[r] * aj[r];
                }
                if (gamma == 0.0 || fabs(gamma) <= tol * sqrt(alpha) * sqrt(beta)) continue;
                rotated = 1;
                zeta = (beta - alpha) / (2.0 * gamma);
                if (fabs(zeta) > 1e150)
                    t = 0.5 / zeta;
                else
                    t = (zeta >= 0.0 ? 1.0 : -1.0) / (fabs(zeta) + sqrt(1.0 + zeta * zeta));
                c = 1.0 / sqrt(1.0 + t * t);
                s = c * t;
                for (r = 0; r < q; r++) {
                    double x = ai[r], y = aj[r];
                    ai[r] = c * x - s * y;
                    aj[r] = s * x + c * y;
                }
            }
        }
        if (!rotated) break;
    }
    for (j = 0; j < p; j++) {
        double acc = 0.0;
        for (r = 0; r < q; r++) acc += A[j * q + r] * A[j * q + r];
        sv[j] = sqrt(acc);
    }
    for (i = 1; i < p; i++) { /* insertion sort, non-increasing */
        double v = sv[i];
        size_t k = i;
        while (k > 0 && sv[k - 1] < v) {
            sv[k] = sv[k - 1];
            k--;
        }
        sv[k] = v;
    }
}

MUONDEF size_t muon_sv_workspace_size(size_t rows, size_t cols)
{
    size_t b;
    if (rows == 0 || cols == 0) return 0;
    if (!muon__u_mul(rows, cols, &b) || !muon__u_mul(b, sizeof(double), &b)) return 0;
    if (!muon__u_add(b, MUON__ALIGN, &b)) return 0;
    return b;
}

/* copy M (or M^T) into Jacobi layout: p = min columns of length q = max */
static void muon__sv_load(const float *M, size_t rows, size_t cols, size_t ld, double *A)
{
    size_t i, j;
    if (rows >= cols) { /* columns of M */
        for (i = 0; i < rows; i++)
            for (j = 0; j < cols; j++) A[j * rows + i] = (double)M[i * ld + j];
    } else { /* columns of M^T = rows of M */
        for (i = 0; i < rows; i++)
            for (j = 0; j < cols; j++) A[i * cols + j] = (double)M[i * ld + j];
    }
}

MUONDEF muon_status muon_singular_values_ws(const float *M, size_t rows, size_t cols, size_t ld,
                                            double *sv, void *ws, size_t ws_bytes)
{
    muon_status s;
    size_t need, p, q;
    double *A;
    if (!M || !sv || !ws) return MUON_ERR_NULL;
    if ((s = muon__u_check_shape(rows, cols, ld)) != MUON_OK) return s;
    need = muon_sv_workspace_size(rows, cols);
    if (need == 0 || ws_bytes < need) return MUON_ERR_SIZE;
    p = rows < cols ? rows : cols;
    q = rows < cols ? cols : rows;
    if (muon__u_overlap(sv, p * sizeof(double), M, muon__u_extent(rows, cols, ld) * sizeof(float)) ||
        muon__u_overlap(ws, ws_bytes, M, muon__u_extent(rows, cols, ld) * sizeof(float)) ||
        muon__u_overlap(ws, ws_bytes, sv, p * sizeof(double)))
        return MUON_ERR_ALIAS;
    if (!muon__u_finite_matrix(M, rows, cols, ld)) return MUON_ERR_NONFINITE;
    A = (double *)muon__u_align_ptr(ws);
    muon__sv_load(M, rows, cols, ld, A);
    muon__jacobi_sv(A, q, p, sv);
    return MUON_OK;
}

MUONDEF muon_status muon_singular_values(const float *M, size_t rows, size_t cols, size_t ld, double *sv)
{
    muon_status s;
    size_t need;
    void *ws;
    if (!M || !sv) return MUON_ERR_NULL;
    if ((s = muon__u_check_shape(rows, cols, ld)) != MUON_OK) return s;
    need = muon_sv_workspace_size(rows, cols);
    if (need == 0) return MUON_ERR_SIZE;
    ws = MUON_MALLOC(need);
    if (!ws) return MUON_ERR_NOMEM;
    s = muon_singular_values_ws(M, rows, cols, ld, sv, ws, need);
    MUON_FREE(ws);
    return s;
}

/* ---- spectral cap and diagnostics (SPEC 2.3, 2.4) --------------------------------------- */

/* fixed pseudo-random start in [-1, 1] (splitmix64 of the index): no global state */
static double muon__u_hash_unit(size_t i)
{
    unsigned long long z = (unsigned long long)i * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return (double)(z >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

/* power iterations; inputs validated. Returns sigma; u, v updated (v unchanged if W v == 0). */
static double muon__power(const float *W, size_t rows, size_t cols, size_t ld, int iters, double *u, double *v)
{
    size_t i, j;
    double nv = 0.0, sigma = 0.0;
    int it;
    for (j = 0; j < cols; j++) nv += v[j] * v[j];
    if (!(nv > 0.0)) {
        nv = 0.0;
        for (j = 0; j < cols; j++) {
            v[j] = muon__u_hash_unit(j);
            nv += v[j] * v[j];
        }
    }
    nv = sqrt(nv);
    for (j = 0; j < cols; j++) v[j] /= nv;
    for (it = 0; it < iters; it++) {
        double nu = 0.0;
        /* u = W v */
        for (i = 0; i < rows; i++) {
            const float *w = W + i * ld;
            double acc = 0.0;
            for (j = 0; j < cols; j++) acc += (double)w[j] * v[j];
            u[i] = acc;
            nu += acc * acc;
        }
        sigma = sqrt(nu);
        if (sigma == 0.0) {
            for (i = 0; i < rows; i++) u[i] = 0.0;
            return 0.0;
        }
        for (i = 0; i < rows; i++) u[i] /= sigma;
        if (it + 1 == iters) break;
        /* v = W^T u / ||.|| */
        for (j = 0; j < cols; j++) v[j] = 0.0;
        for (i = 0; i < rows; i++) {
            const float *w = W + i * ld;
            double ui = u[i];
            for (j = 0; j < cols; j++) v[j] += (double)w[j] * ui;
        }
        nv = 0.0;
        for (j = 0; j < cols; j++) nv += v[j] * v[j];
        nv = sqrt(nv);
        for (j = 0; j < cols; j++) v[j] /= nv;
    }
    return sigma;
}

MUONDEF muon_status muon_top_singular_pair(const float *W, size_t rows, size_t cols, size_t ld, int iters,
                                           double *u, double *v, double *sigma)
{
    muon_status s;
    size_t j;
    double sg;
    if (!W || !u || !v || !sigma) return MUON_ERR_NULL;
    if ((s = muon__u_check_shape(rows, cols, ld)) != MUON_OK) return s;
    if (iters < 1) return MUON_ERR_DOMAIN;
    for (j = 0; j < cols; j++)
        if (!muon__u_isfinite(v[j])) return MUON_ERR_DOMAIN;
    if (muon__u_overlap(u, rows * sizeof(double), v, cols * sizeof(double))) return MUON_ERR_ALIAS;
    if (!muon__u_finite_matrix(W, rows, cols, ld)) return MUON_ERR_NONFINITE;
    sg = muon__power(W, rows, cols, ld, iters, u, v);
    *sigma = sg;
    return MUON_OK;
}

/* c = u^T D v in double, rows in order */
static double muon__cap_growth(const float *D, size_t rows, size_t cols, size_t ldd, const double *u,
                               const double *v)
{
    double c = 0.0;
    size_t i, j;
    for (i = 0; i < rows; i++) {
        const float *d = D + i * ldd;
        double acc = 0.0;
        for (j = 0; j < cols; j++) acc += (double)d[j] * v[j];
        c += u[i] * acc;
    }
    return c;
}

static void muon__cap_remove(float *D, size_t rows, size_t cols, size_t ldd, const double *u, const double *v,
                             double c)
{
    size_t i;
    MUON__OMP(omp parallel for schedule(static) if ((double)rows * (double)cols >= MUON__PAR_MIN))
    for (i = 0; i < rows; i++) {
        float *d = D + i * ldd;
        double cu = c * u[i];
        size_t j;
        for (j = 0; j < cols; j++) d[j] = (float)((double)d[j] - cu * v[j]);
    }
}

MUONDEF muon_status muon_spectral_cap(float *D, size_t rows, size_t cols, size_t ldd, const double *u,
                                      const double *v, muon_cap_mode mode, double *growth)
{
    muon_status s;
    double c;
    if (!D || !u || !v) return MUON_ERR_NULL;
    if ((s = muon__u_check_shape(rows, cols, ldd)) != MUON_OK) return s;
    if (mode != MUON_CAP_OFF && mode != MUON_CAP_GROWTH && mode != MUON_CAP_ALWAYS) return MUON_ERR_DOMAIN;
    c = muon__cap_growth(D, rows, cols, ldd, u, v);
    if (mode == MUON_CAP_ALWAYS || (mode == MUON_CAP_GROWTH && c > 0.0))
        muon__cap_remove(D, rows, cols, ldd, u, v, c);
    if (growth) *growth = c;
    return MUON_OK;
}

MUONDEF muon_status muon_min_entropy(const float *W, size_t rows, size_t cols, size_t ld, double sigma1,
                                     double *h)
{
    muon_status s;
    double f2;
    if (!W || !h) return MUON_ERR_NULL;
    if ((s = muon__u_check_shape(rows, cols, ld)) != MUON_OK) return s;
    if (!muon__u_isfinite(sigma1) || !(sigma1 > 0.0)) return MUON_ERR_DOMAIN;
    f2 = muon__u_sumsq(W, rows, cols, ld);
    if (!muon__u_isfinite(f2)) return MUON_ERR_NONFINITE;
    *h = log(f2 / (sigma1 * sigma1));
    return MUON_OK;
}

MUONDEF muon_status muon_spectral_decomposition(const float *W, size_t rows, size_t cols, size_t ld,
                                                muon_decomposition *out)
{
    muon_status s;
    size_t p, q, i, j, nbytes;
    double *A, *sv, *rn, nmax = 0.0, f2 = 0.0, spec, coh;
    unsigned char *mem;
    if (!W || !out) return MUON_ERR_NULL;
    if ((s = muon__u_check_shape(rows, cols, ld)) != MUON_OK) return s;
    if (!muon__u_finite_matrix(W, rows, cols, ld)) return MUON_ERR_NONFINITE;
    if (muon__u_sumsq(W, rows, cols, ld) == 0.0) return MUON_ERR_DOMAIN;
    p = rows < cols ? rows : cols;
    q = rows < cols ? cols : rows;
    nbytes = muon_sv_workspace_size(rows, cols);
    if (nbytes == 0 || !muon__u_add(nbytes, (p + rows) * sizeof(double), &nbytes)) return MUON_ERR_SIZE;
    mem = (unsigned char *)MUON_MALLOC(nbytes);
    if (!mem) return MUON_ERR_NOMEM;
    A = (double *)muon__u_align_ptr(mem);
    sv = A + p * q;
    rn = sv + p;
    /* spectral norm: exact singular values of W */
    muon__sv_load(W, rows, cols, ld, A);
    muon__jacobi_sv(A, q, p, sv);
    spec = sv[0];
    /* row norms n_i and their max */
    for (i = 0; i < rows; i++) {
        double acc = 0.0;
        for (j = 0; j < cols; j++) acc += (double)W[i * ld + j] * (double)W[i * ld + j];
        rn[i] = sqrt(acc);
        f2 += acc;
        if (rn[i] > nmax) nmax = rn[i];
    }
    /* coherence: top singular value of the matrix with rows p_i d_i (d_i the unit row) */
    for (i = 0; i < rows; i++) {
        double pi = rn[i] / nmax;
        for (j = 0; j < cols; j++) {
            double dij = rn[i] > 0.0 ? (double)W[i * ld + j] / rn[i] : 0.0;
            if (rows >= cols)
                A[j * rows + i] = pi * dij;
            else
                A[i * cols + j] = pi * dij;
        }
    }
    muon__jacobi_sv(A, q, p, sv);
    coh = sv[0];
    out->spectral_norm = spec;
    out->row_factor = nmax;
    out->coherence = coh;
    out->min_entropy = log(f2 / (spec * spec));
    MUON_FREE(mem);
    return MUON_OK;
}

/* ---- the Muon step (SPEC 2.2) ---------------------------------------------------------- */

MUONDEF muon_config muon_default(void)
{
    muon_config c;
    memset(&c, 0, sizeof c);
    c.lr = 0.02;
    c.momentum = 0.95;
    c.weight_decay = 0.0;
    c.nesterov = 1;
    c.momentum_form = MUON_MOMENTUM_EMA;
    c.scale = MUON_SCALE_ORIGINAL;
    c.scale_coeff = 0.2;
    c.ns = muon_ns_preset(MUON_NS_JORDAN, 5);
    c.split_rows = 1;
    c.cap = MUON_CAP_OFF;
    c.cap_iters = 2;
    return c;
}

/* cfg with zero-field defaults resolved and validated */
static muon_status muon__cfg_resolve(const muon_config *in, muon_config *out)
{
    muon_status s;
    *out = *in;
    if (!muon__u_isfinite(in->lr) || in->lr < 0.0) return MUON_ERR_DOMAIN;
    if (!(in->momentum >= 0.0 && in->momentum < 1.0)) return MUON_ERR_DOMAIN;
    if (!muon__u_isfinite(in->weight_decay) || in->weight_decay < 0.0) return MUON_ERR_DOMAIN;
    if (in->momentum_form != MUON_MOMENTUM_EMA && in->momentum_form != MUON_MOMENTUM_SUM) return MUON_ERR_DOMAIN;
    if (in->scale != MUON_SCALE_ORIGINAL && in->scale != MUON_SCALE_MATCH_ADAMW &&
        in->scale != MUON_SCALE_SPECTRAL && in->scale != MUON_SCALE_NONE)
        return MUON_ERR_DOMAIN;
    if (!muon__u_isfinite(in->scale_coeff) || in->scale_coeff < 0.0) return MUON_ERR_DOMAIN;
    if (in->cap != MUON_CAP_OFF && in->cap != MUON_CAP_GROWTH && in->cap != MUON_CAP_ALWAYS) return MUON_ERR_DOMAIN;
    if (in->cap_iters < 0 || in->cap_iters > 100) return MUON_ERR_DOMAIN;
    if ((s = muon__ns_resolve(&in->ns, &out->ns)) != MUON_OK) return s;
    if (out->scale_coeff == 0.0) out->scale_coeff = 0.2;
    if (out->split_rows == 0) out->split_rows = 1;
    if (out->cap_iters == 0) out->cap_iters = 2;
    return MUON_OK;
}

/* the shape scale of the r x c matrix NS saw */
static double muon__shape_scale(const muon_config *c, size_t r, size_t cols)
{
    double rr = (double)r, cc = (double)cols;
    switch (c->scale) {
    case MUON_SCALE_ORIGINAL: return sqrt(rr > cc ? rr / cc : 1.0);
    case MUON_SCALE_MATCH_ADAMW: return c->scale_coeff * sqrt(rr > cc ? rr : cc);
    case MUON_SCALE_SPECTRAL: return sqrt(rr / cc);
    case MUON_SCALE_NONE: return 1.0;
    }
    return 1.0;
}

/* workspace of a step: U (rows x cols floats) then one NS workspace for the chunk shape */
static size_t muon__step_ws_bytes(size_t rows, size_t cols, size_t split, size_t extra_doubles,
                                  int single_thread)
{
    size_t ub, nb, eb, total;
    if (rows == 0 || cols == 0 || split == 0 || rows % split != 0) return 0;
    if (!muon__u_mul(rows, cols, &ub) || !muon__u_mul(ub, sizeof(float), &ub)) return 0;
    ub = muon__u_round(ub);
    if (!muon__u_mul(extra_doubles, sizeof(double), &eb)) return 0;
    eb = muon__u_round(eb);
    nb = muon__ns_ws_bytes(rows / split, cols, single_thread);
    if (!ub || !nb || (extra_doubles && !eb)) return 0;
    total = MUON__ALIGN;
    if (!muon__u_add(total, ub, &total) || !muon__u_add(total, eb, &total) || !muon__u_add(total, nb, &total))
        return 0;
    return total;
}

MUONDEF size_t muon_workspace_size(size_t rows, size_t cols, const muon_config *cfg)
{
    size_t split = 1;
    if (cfg) split = cfg->split_rows ? cfg->split_rows : 1;
    return muon__step_ws_bytes(rows, cols, split, 0, 0);
}

MUONDEF muon_status muon_init_ex(muon_state *st, size_t rows, size_t cols, int with_workspace)
{
    size_t mb, pb, wb = 0, total;
    unsigned char *mem, *base;
    if (!st) return MUON_ERR_NULL;
    if (rows == 0 || cols == 0) return MUON_ERR_SIZE;
    if (!muon__u_mul(rows, cols, &mb) || !muon__u_mul(mb, sizeof(float), &mb)) return MUON_ERR_SIZE;
    mb = muon__u_round(mb);
    if (!muon__u_add(rows, cols, &pb) || !muon__u_mul(pb, sizeof(double), &pb)) return MUON_ERR_SIZE;
    pb = muon__u_round(pb);
    if (!mb || !pb) return MUON_ERR_SIZE;
    if (with_workspace) {
        wb = muon__step_ws_bytes(rows, cols, 1, 0, 0);
        if (!wb) return MUON_ERR_SIZE;
    }
    total = MUON__ALIGN;
    if (!muon__u_add(total, mb, &total) || !muon__u_add(total, pb, &total) || !muon__u_add(total, wb, &total))
        return MUON_ERR_SIZE;
    mem = (unsigned char *)MUON_MALLOC(total);
    if (!mem) return MUON_ERR_NOMEM;
    base = muon__u_align_ptr(mem);
    memset(base, 0, mb + pb);
    memset(st, 0, sizeof *st);
    st->rows = rows;
    st->cols = cols;
    st->block = mem;
    st->momentum = (float *)base;
    st->cap_u = (double *)(base + mb);
    st->cap_v = st->cap_u + rows;
    if (with_workspace) {
        st->workspace = base + mb + pb;
        st->workspace_bytes = wb;
    }
    return MUON_OK;
}

MUONDEF muon_status muon_init(muon_state *st, size_t rows, size_t cols)
{
    return muon_init_ex(st, rows, cols, 1);
}

MUONDEF void muon_free(muon_state *st)
{
    if (!st) return;
    if (st->block) MUON_FREE(st->block);
    memset(st, 0, sizeof *st);
}

/* The update direction u of SPEC 2.2 from the old momentum b and gradient g (new B not stored). */
static float muon__mom_dir(float b, float g, double beta, int nesterov, muon_momentum_form form, float *bnew)
{
    double gb = (double)g, nb;
    if (form == MUON_MOMENTUM_EMA) {
        nb = beta * (double)b + (1.0 - beta) * gb;
        *bnew = (float)nb;
        return nesterov ? (float)((1.0 - beta) * gb + beta * (double)*bnew) : *bnew;
    }
    nb = beta * (double)b + gb;
    *bnew = (float)nb;
    return nesterov ? (float)(gb + beta * (double)*bnew) : *bnew;
}

/* u = momentum direction of G into U (ld cols) without touching B */
static void muon__mom_fill(const float *B, const float *G, size_t ldg, size_t rows, size_t cols,
                           const muon_config *c, float *U)
{
    size_t i;
    MUON__OMP(omp parallel for schedule(static) if ((double)rows * (double)cols >= MUON__PAR_MIN))
    for (i = 0; i < rows; i++) {
        const float *b = B + i * cols, *g = G + i * ldg;
        float *u = U + i * cols;
        size_t j;
        float nb;
        for (j = 0; j < cols; j++) u[j] = muon__mom_dir(b[j], g[j], c->momentum, c->nesterov, c->momentum_form, &nb);
    }
}

static void muon__mom_commit(float *B, const float *G, size_t ldg, size_t rows, size_t cols, const muon_config *c)
{
    size_t i;
    MUON__OMP(omp parallel for schedule(static) if ((double)rows * (double)cols >= MUON__PAR_MIN))
    for (i = 0; i < rows; i++) {
        float *b = B + i * cols;
        const float *g = G + i * ldg;
        size_t j;
        float nb;
        for (j = 0; j < cols; j++) {
            (void)muon__mom_dir(b[j], g[j], c->momentum, c->nesterov, c->momentum_form, &nb);
            b[j] = nb;
        }
    }
}

/* NS of each of the k row chunks of U (rows x cols, ld cols) in place, then D = -lr*scale*O */
static muon_status muon__ns_chunks_scaled(float *U, size_t rows, size_t cols, const muon_config *c,
                                          void *nsws, size_t nsws_bytes)
{
    size_t k = c->split_rows, r = rows / k, ch, i;
    muon_status s;
    float f;
    for (ch = 0; ch < k; ch++) {
        s = muon__ns_one(U + ch * r * cols, r, cols, cols, &c->ns, U + ch * r * cols, cols, nsws, nsws_bytes);
        if (s != MUON_OK) return s;
    }
    f = (float)(-c->lr * muon__shape_scale(c, r, cols)); /* equal chunks: one scale */
    MUON__OMP(omp parallel for schedule(static) if ((double)rows * (double)cols >= MUON__PAR_MIN))
    for (i = 0; i < rows; i++) {
        float *u = U + i * cols;
        size_t j;
        for (j = 0; j < cols; j++) u[j] *= f;
    }
    return MUON_OK;
}

/* validation shared by muon_step_ws and muown_step_ws */
static muon_status muon__step_check(size_t rows, size_t cols, const float *W, size_t ldw, const float *G,
                                    size_t ldg, const muon_config *c, void *ws, size_t ws_bytes,
                                    size_t extra_doubles, const void *state_mem, size_t state_bytes)
{
    muon_status s;
    size_t need;
    if ((s = muon__u_check_shape(rows, cols, ldw)) != MUON_OK) return s;
    if ((s = muon__u_check_shape(rows, cols, ldg)) != MUON_OK) return s;
    if (rows % c->split_rows != 0) return MUON_ERR_SIZE;
    need = muon__step_ws_bytes(rows, cols, c->split_rows, extra_doubles, 1);
    if (need == 0 || ws_bytes < need) return MUON_ERR_SIZE;
    if (muon__u_overlap(W, muon__u_extent(rows, cols, ldw) * sizeof(float), G,
                        muon__u_extent(rows, cols, ldg) * sizeof(float)))
        return MUON_ERR_ALIAS;
    if (muon__u_overlap(ws, ws_bytes, W, muon__u_extent(rows, cols, ldw) * sizeof(float)) ||
        muon__u_overlap(ws, ws_bytes, G, muon__u_extent(rows, cols, ldg) * sizeof(float)))
        return MUON_ERR_ALIAS;
    if (state_mem && (muon__u_overlap(state_mem, state_bytes, W, muon__u_extent(rows, cols, ldw) * sizeof(float)) ||
                      muon__u_overlap(state_mem, state_bytes, G, muon__u_extent(rows, cols, ldg) * sizeof(float))))
        return MUON_ERR_ALIAS;
    if (!muon__u_finite_matrix(G, rows, cols, ldg)) return MUON_ERR_NONFINITE;
    return MUON_OK;
}

MUONDEF muon_status muon_step_ws(muon_state *st, const muon_config *cfg, float *W, size_t ldw,
                                 const float *G, size_t ldg, void *ws, size_t ws_bytes)
{
    muon_config c;
    muon_status s;
    size_t rows, cols, ub, i;
    unsigned char *base;
    float *U, decay;
    if (!st || !cfg || !W || !G || !ws) return MUON_ERR_NULL;
    if (!st->momentum || !st->cap_u || !st->cap_v) return MUON_ERR_NULL;
    /* the config first: split_rows is needed by the shape checks */
    if ((s = muon__cfg_resolve(cfg, &c)) != MUON_OK) return s;
    rows = st->rows;
    cols = st->cols;
    s = muon__step_check(rows, cols, W, ldw, G, ldg, &c, ws, ws_bytes, 0, st->momentum,
                         rows * cols * sizeof(float));
    if (s != MUON_OK) return s;

    base = muon__u_align_ptr(ws);
    ub = muon__u_round(rows * cols * sizeof(float));
    U = (float *)base;
    muon__mom_fill(st->momentum, G, ldg, rows, cols, &c, U);
    s = muon__ns_chunks_scaled(U, rows, cols, &c, base + ub, ws_bytes - (size_t)(base + ub - (unsigned char *)ws));
    if (s != MUON_OK) return s; /* nothing committed yet */

    if (c.cap != MUON_CAP_OFF) { /* SPEC 2.4: top pair of W (warm), remove sigma_1's growth */
        double sigma = muon__power(W, rows, cols, ldw, st->cap_valid ? c.cap_iters : MUON_CAP_COLD_ITERS,
                                   st->cap_u, st->cap_v);
        st->cap_sigma = sigma;
        st->cap_valid = sigma > 0.0;
        if (sigma > 0.0) {
            double g = muon__cap_growth(U, rows, cols, cols, st->cap_u, st->cap_v);
            if (c.cap == MUON_CAP_ALWAYS || g > 0.0) muon__cap_remove(U, rows, cols, cols, st->cap_u, st->cap_v, g);
        }
    }
    /* commit: momentum, then W <- W (1 - lr lambda) + D */
    muon__mom_commit(st->momentum, G, ldg, rows, cols, &c);
    decay = (float)(1.0 - c.lr * c.weight_decay);
    MUON__OMP(omp parallel for schedule(static) if ((double)rows * (double)cols >= MUON__PAR_MIN))
    for (i = 0; i < rows; i++) {
        float *w = W + i * ldw;
        const float *d = U + i * cols;
        size_t j;
        if (decay != 1.0f)
            for (j = 0; j < cols; j++) w[j] = w[j] * decay + d[j];
        else
            for (j = 0; j < cols; j++) w[j] += d[j];
    }
    st->step++;
    return MUON_OK;
}

MUONDEF muon_status muon_step(muon_state *st, const muon_config *cfg, float *W, size_t ldw, const float *G,
                              size_t ldg)
{
    if (!st) return MUON_ERR_NULL;
    if (!st->workspace) return MUON_ERR_NULL;
    return muon_step_ws(st, cfg, W, ldw, G, ldg, st->workspace, st->workspace_bytes);
}

/* ---- Muown (SPEC 2.3) ------------------------------------------------------------------- */

MUONDEF muown_config muown_default(void)
{
    muown_config c;
    memset(&c, 0, sizeof c);
    c.muon = muon_default();
    c.magnitude = MUOWN_MAG_ADAM;
    c.mag_lr = 0.02;
    c.mag_beta1 = 0.9;
    c.mag_beta2 = 0.95;
    c.mag_eps = 1e-8;
    return c;
}

MUONDEF size_t muown_workspace_size(size_t rows, size_t cols, const muown_config *cfg)
{
    size_t split = 1;
    if (cfg) split = cfg->muon.split_rows ? cfg->muon.split_rows : 1;
    return muon__step_ws_bytes(rows, cols, split, rows, 0);
}

/* row norms of W in double; returns 0 if some row is zero */
static int muon__row_norms(const float *W, size_t rows, size_t cols, size_t ld, double *out)
{
    size_t i, j;
    int ok = 1;
    for (i = 0; i < rows; i++) {
        double acc = 0.0;
        for (j = 0; j < cols; j++) acc += (double)W[i * ld + j] * (double)W[i * ld + j];
        out[i] = sqrt(acc);
        if (!(acc > 0.0)) ok = 0;
    }
    return ok;
}

MUONDEF muon_status muown_init(muown_state *st, const float *W, size_t rows, size_t cols, size_t ldw)
{
    muon_status s;
    size_t vb, mb, wb, total, i;
    unsigned char *mem, *base;
    double *tmp;
    if (!st || !W) return MUON_ERR_NULL;
    if ((s = muon__u_check_shape(rows, cols, ldw)) != MUON_OK) return s;
    if (!muon__u_mul(rows, 4 * sizeof(double), &vb)) return MUON_ERR_SIZE;
    vb = muon__u_round(vb);
    if (!muon__u_mul(rows, cols, &mb) || !muon__u_mul(mb, sizeof(float), &mb)) return MUON_ERR_SIZE;
    mb = muon__u_round(mb);
    wb = muon__step_ws_bytes(rows, cols, 1, rows, 0);
    if (!vb || !mb || !wb) return MUON_ERR_SIZE;
    total = MUON__ALIGN;
    if (!muon__u_add(total, vb, &total) || !muon__u_add(total, mb, &total) || !muon__u_add(total, wb, &total))
        return MUON_ERR_SIZE;
    if (!muon__u_finite_matrix(W, rows, cols, ldw)) return MUON_ERR_NONFINITE;
    mem = (unsigned char *)MUON_MALLOC(total);
    if (!mem) return MUON_ERR_NOMEM;
    base = muon__u_align_ptr(mem);
    tmp = (double *)base;
    if (!muon__row_norms(W, rows, cols, ldw, tmp)) {
        MUON_FREE(mem);
        return MUON_ERR_DOMAIN;
    }
    memset(st, 0, sizeof *st);
    st->rows = rows;
    st->cols = cols;
    st->block = mem;
    st->g = tmp;
    st->vnorm = st->g + rows;
    st->mag_m = st->vnorm + rows;
    st->mag_v = st->mag_m + rows;
    for (i = 0; i < rows; i++) {
        st->vnorm[i] = st->g[i];
        st->mag_m[i] = 0.0;
        st->mag_v[i] = 0.0;
    }
    st->momentum = (float *)(base + vb);
    memset(st->momentum, 0, mb);
    st->workspace = base + vb + mb;
    st->workspace_bytes = wb;
    return MUON_OK;
}

MUONDEF void muown_free(muown_state *st)
{
    if (!st) return;
    if (st->block) MUON_FREE(st->block);
    memset(st, 0, sizeof *st);
}

/* one row: unit direction u (written to urow), grad_g, and grad_v (written to gv) */
static double muon__muown_row(const float *w, const float *gr, size_t cols, double g, double vnorm,
                              double *urow_norm_out, float *gv)
{
    double wn = 0.0, gg = 0.0, inv, f;
    size_t j;
    for (j = 0; j < cols; j++) wn += (double)w[j] * (double)w[j];
    wn = sqrt(wn);
    inv = wn > 0.0 ? 1.0 / wn : 0.0;
    for (j = 0; j < cols; j++) gg += (double)gr[j] * ((double)w[j] * inv);
    f = vnorm > 0.0 ? g / vnorm : 0.0;
    if (gv)
        for (j = 0; j < cols; j++) gv[j] = (float)(f * ((double)gr[j] - (double)w[j] * inv * gg));
    *urow_norm_out = wn;
    return gg;
}

MUONDEF muon_status muown_gradients(const muown_state *st, const float *W, size_t ldw, const float *G,
                                    size_t ldg, double *grad_g, float *grad_v, size_t ldv)
{
    muon_status s;
    size_t i;
    if (!st || !W || !G || !grad_g || !grad_v) return MUON_ERR_NULL;
    if (!st->g) return MUON_ERR_NULL;
    if ((s = muon__u_check_shape(st->rows, st->cols, ldw)) != MUON_OK) return s;
    if ((s = muon__u_check_shape(st->rows, st->cols, ldg)) != MUON_OK) return s;
    if ((s = muon__u_check_shape(st->rows, st->cols, ldv)) != MUON_OK) return s;
    if (!muon__u_finite_matrix(G, st->rows, st->cols, ldg) || !muon__u_finite_matrix(W, st->rows, st->cols, ldw))
        return MUON_ERR_NONFINITE;
    for (i = 0; i < st->rows; i++) {
        double wn;
        grad_g[i] = muon__muown_row(W + i * ldw, G + i * ldg, st->cols, st->g[i], st->vnorm[i], &wn,
                                    grad_v + i * ldv);
    }
    return MUON_OK;
}

MUONDEF muon_status muown_resync(muown_state *st, const float *W, size_t ldw)
{
    muon_status s;
    size_t i;
    if (!st || !W) return MUON_ERR_NULL;
    if (!st->g) return MUON_ERR_NULL;
    if ((s = muon__u_check_shape(st->rows, st->cols, ldw)) != MUON_OK) return s;
    if (!muon__u_finite_matrix(W, st->rows, st->cols, ldw)) return MUON_ERR_NONFINITE;
    for (i = 0; i < st->rows; i++) {
        const float *w = W + i * ldw;
        double acc = 0.0;
        size_t j;
        for (j = 0; j < st->cols; j++) acc += (double)w[j] * (double)w[j];
        st->g[i] = sqrt(acc);
    }
    return MUON_OK;
}

MUONDEF muon_status muown_step_ws(muown_state *st, const muown_config *cfg, float *W, size_t ldw,
                                  const float *G, size_t ldg, void *ws, size_t ws_bytes)
{
    muon_config c;
    muon_status s;
    size_t rows, cols, ub, i;
    unsigned char *base;
    float *U;
    double *gg, lrwd, bc1 = 1.0, bc2 = 1.0;
    long long t;
    if (!st || !cfg || !W || !G || !ws) return MUON_ERR_NULL;
    if (!st->g || !st->momentum) return MUON_ERR_NULL;
    if ((s = muon__cfg_resolve(&cfg->muon, &c)) != MUON_OK) return s;
    if (cfg->magnitude != MUOWN_MAG_ADAM && cfg->magnitude != MUOWN_MAG_SIGNUM && cfg->magnitude != MUOWN_MAG_FIXED)
        return MUON_ERR_DOMAIN;
    if (!muon__u_isfinite(cfg->mag_lr) || cfg->mag_lr < 0.0) return MUON_ERR_DOMAIN;
    if (!(cfg->mag_beta1 >= 0.0 && cfg->mag_beta1 < 1.0) || !(cfg->mag_beta2 >= 0.0 && cfg->mag_beta2 < 1.0))
        return MUON_ERR_DOMAIN;
    if (!muon__u_isfinite(cfg->mag_eps) || !(cfg->mag_eps > 0.0)) return MUON_ERR_DOMAIN;
    rows = st->rows;
    cols = st->cols;
    s = muon__step_check(rows, cols, W, ldw, G, ldg, &c, ws, ws_bytes, rows, st->momentum,
                         rows * cols * sizeof(float));
    if (s != MUON_OK) return s;

    base = muon__u_align_ptr(ws);
    ub = muon__u_round(rows * cols * sizeof(float));
    U = (float *)base;
    gg = (double *)(base + ub);
    /* pass 1: grad_g, grad_v and its momentum direction (state untouched) */
    MUON__OMP(omp parallel for schedule(static) if ((double)rows * (double)cols >= MUON__PAR_MIN))
    for (i = 0; i < rows; i++) {
        float *u = U + i * cols;
        const float *b = st->momentum + i * cols;
        double wn;
        size_t j;
        float nb;
        gg[i] = muon__muown_row(W + i * ldw, G + i * ldg, cols, st->g[i], st->vnorm[i], &wn, u);
        for (j = 0; j < cols; j++) u[j] = muon__mom_dir(b[j], u[j], c.momentum, c.nesterov, c.momentum_form, &nb);
    }
    s = muon__ns_chunks_scaled(U, rows, cols, &c, base + ub + muon__u_round(rows * sizeof(double)),
                               ws_bytes - (size_t)(base + ub + muon__u_round(rows * sizeof(double)) -
                                                   (unsigned char *)ws));
    if (s != MUON_OK) return s;

    t = st->step + 1;
    if (cfg->magnitude == MUOWN_MAG_ADAM) {
        bc1 = -expm1((double)t * log(cfg->mag_beta1));
        bc2 = -expm1((double)t * log(cfg->mag_beta2));
    }
    lrwd = c.lr * c.weight_decay;
    /* commit row by row (rows are independent) */
    MUON__OMP(omp parallel for schedule(static) if ((double)rows * (double)cols >= MUON__PAR_MIN))
    for (i = 0; i < rows; i++) {
        float *w = W + i * ldw, *d = U + i * cols, *b = st->momentum + i * cols;
        const float *gr = G + i * ldg;
        double wn = 0.0, inv, f, gi = gg[i], nv = 0.0, gn = st->g[i], scale;
        size_t j;
        for (j = 0; j < cols; j++) wn += (double)w[j] * (double)w[j];
        wn = sqrt(wn);
        inv = wn > 0.0 ? 1.0 / wn : 0.0;
        f = st->vnorm[i] > 0.0 ? st->g[i] / st->vnorm[i] : 0.0;
        for (j = 0; j < cols; j++) {
            float gv = (float)(f * ((double)gr[j] - (double)w[j] * inv * gi)), nb;
            double vn;
            (void)muon__mom_dir(b[j], gv, c.momentum, c.nesterov, c.momentum_form, &nb);
            b[j] = nb;
            vn = st->vnorm[i] * ((double)w[j] * inv) + (double)d[j]; /* v_new = v - lr*scale*O */
            d[j] = (float)vn;
            nv += vn * vn;
        }
        nv = sqrt(nv);
        switch (cfg->magnitude) {
        case MUOWN_MAG_ADAM:
            st->mag_m[i] = cfg->mag_beta1 * st->mag_m[i] + (1.0 - cfg->mag_beta1) * gi;
            st->mag_v[i] = cfg->mag_beta2 * st->mag_v[i] + (1.0 - cfg->mag_beta2) * gi * gi;
            gn -= cfg->mag_lr * (st->mag_m[i] / bc1) / (sqrt(st->mag_v[i] / bc2) + cfg->mag_eps);
            break;
        case MUOWN_MAG_SIGNUM:
            st->mag_m[i] = cfg->mag_beta1 * st->mag_m[i] + (1.0 - cfg->mag_beta1) * gi;
            gn -= cfg->mag_lr * (st->mag_m[i] > 0.0 ? 1.0 : st->mag_m[i] < 0.0 ? -1.0 : 0.0);
            break;
        case MUOWN_MAG_FIXED: break;
        }
        if (nv > 0.0) {
            scale = gn / nv;
            st->vnorm[i] = nv;
        } else { /* degenerate: keep the old direction */
            scale = gn * inv;
            for (j = 0; j < cols; j++) d[j] = w[j];
        }
        if (lrwd != 0.0) {
            double acc = 0.0;
            for (j = 0; j < cols; j++) {
                float x = (float)(scale * (double)d[j] - lrwd * (double)w[j]);
                w[j] = x;
                acc += (double)x * (double)x;
            }
            st->g[i] = sqrt(acc); /* weight-decay resync */
        } else {
            for (j = 0; j < cols; j++) w[j] = (float)(scale * (double)d[j]);
            st->g[i] = gn;
        }
    }
    st->step = t;
    return MUON_OK;
}

MUONDEF muon_status muown_step(muown_state *st, const muown_config *cfg, float *W, size_t ldw, const float *G,
                               size_t ldg)
{
    if (!st) return MUON_ERR_NULL;
    if (!st->workspace) return MUON_ERR_NULL;
    return muown_step_ws(st, cfg, W, ldw, G, ldg, st->workspace, st->workspace_bytes);
}

/* ---- AdamW and clipping (SPEC 2.6) ------------------------------------------------------ */

MUONDEF muon_adamw_config muon_adamw_default(void)
{
    muon_adamw_config c;
    c.lr = 1e-3;
    c.beta1 = 0.9;
    c.beta2 = 0.999;
    c.eps = 1e-8;
    c.weight_decay = 0.01;
    return c;
}

MUONDEF muon_status muon_adamw_init(muon_adamw_state *st, size_t size)
{
    size_t b;
    float *mem;
    if (!st) return MUON_ERR_NULL;
    if (size == 0 || !muon__u_mul(size, 2 * sizeof(float), &b)) return MUON_ERR_SIZE;
    mem = (float *)MUON_MALLOC(b);
    if (!mem) return MUON_ERR_NOMEM;
    memset(mem, 0, b);
    st->size = size;
    st->step = 0;
    st->m = mem;
    st->v = mem + size;
    return MUON_OK;
}

MUONDEF void muon_adamw_free(muon_adamw_state *st)
{
    if (!st) return;
    if (st->m) MUON_FREE(st->m);
    memset(st, 0, sizeof *st);
}

MUONDEF muon_status muon_adamw_step(muon_adamw_state *st, const muon_adamw_config *cfg, float *param,
                                    const float *grad)
{
    size_t n, i;
    long long t;
    double bc1, bc2, lr, b1, b2, eps;
    float decay;
    if (!st || !cfg || !param || !grad) return MUON_ERR_NULL;
    if (!st->m || !st->v) return MUON_ERR_NULL;
    n = st->size;
    if (!muon__u_isfinite(cfg->lr) || cfg->lr < 0.0) return MUON_ERR_DOMAIN;
    if (!(cfg->beta1 >= 0.0 && cfg->beta1 < 1.0) || !(cfg->beta2 >= 0.0 && cfg->beta2 < 1.0)) return MUON_ERR_DOMAIN;
    if (!muon__u_isfinite(cfg->eps) || !(cfg->eps > 0.0)) return MUON_ERR_DOMAIN;
    if (!muon__u_isfinite(cfg->weight_decay) || cfg->weight_decay < 0.0) return MUON_ERR_DOMAIN;
    if (muon__u_overlap(param, n * sizeof(float), grad, n * sizeof(float))) return MUON_ERR_ALIAS;
    if (!muon__u_finite_matrix(grad, 1, n, n)) return MUON_ERR_NONFINITE;
    t = st->step + 1;
    b1 = cfg->beta1;
    b2 = cfg->beta2;
    eps = cfg->eps;
    lr = cfg->lr;
    bc1 = -expm1((double)t * log(b1)); /* 1 - beta1^t, exact for beta near 1 */
    bc2 = -expm1((double)t * log(b2));
    decay = (float)(1.0 - lr * cfg->weight_decay);
    MUON__OMP(omp parallel for schedule(static) if ((double)n >= MUON__PAR_MIN))
    for (i = 0; i < n; i++) {
        double g = (double)grad[i];
        double m = b1 * (double)st->m[i] + (1.0 - b1) * g;
        double v = b2 * (double)st->v[i] + (1.0 - b2) * g * g;
        st->m[i] = (float)m;
        st->v[i] = (float)v;
        param[i] = (float)((double)(param[i] * decay) - lr * (m / bc1) / (sqrt(v / bc2) + eps));
    }
    st->step = t;
    return MUON_OK;
}

MUONDEF muon_status muon_clip_grad_norm(float **grads, const size_t *sizes, size_t count, double max_norm,
                                        double *total_norm_out)
{
    size_t k, i;
    double ss = 0.0, total;
    if (!grads || !sizes) return MUON_ERR_NULL;
    if (count == 0) return MUON_ERR_SIZE;
    for (k = 0; k < count; k++)
        if (sizes[k] && !grads[k]) return MUON_ERR_NULL;
    if (!(max_norm > 0.0)) return MUON_ERR_DOMAIN;
    for (k = 0; k < count; k++)
        for (i = 0; i < sizes[k]; i++) ss += (double)grads[k][i] * (double)grads[k][i];
    total = sqrt(ss);
    if (!muon__u_isfinite(total)) return MUON_ERR_NONFINITE;
    if (total > max_norm) {
        double f = max_norm / total;
        for (k = 0; k < count; k++)
            for (i = 0; i < sizes[k]; i++) grads[k][i] = (float)((double)grads[k][i] * f);
    }
    if (total_norm_out) *total_norm_out = total;
    return MUON_OK;
}

#endif /* MUON_IMPLEMENTATION_DONE */
#endif /* MUON_IMPLEMENTATION */

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
