/* muon.h - v0.3.0 - the Muon family of optimizers in one header (C99 / C++)
 *
 * Newton-Schulz orthogonalisation (any coefficient schedule), the Muon step, Muown (row
 * magnitudes as their own variable), a spectral cap (reconstructed from a paper's abstract),
 * exact singular-value diagnostics that pick the Newton-Schulz budget, a companion AdamW and
 * global-norm gradient clipping.
 * The math is SPEC.md section 2; section numbers below refer to it.
 *
 * CONTENTS: every banner of this file ("---- title ----"), numbered in the order of the file
 * (search for a title to find it), and under each banner of the declarations the public
 * functions it declares, in their order. tests/rel_contents.sh holds this list to the file.
 *
 *   Declarations (before the first banner: the version, MUONDEF, muon_status and
 *   muon_status_string)
 *     1. SGEMM / SSYRK (row-major)
 *          muon_sgemm, muon_ssyrk, muon_gemm_workspace_size, muon_sgemm_ws, muon_ssyrk_ws,
 *          muon_team (the library's thread-team rule, for a host's own loops)
 *     2. Newton-Schulz schedules (SPEC 2.1)
 *          muon_ns_preset, muon_ns_resolve, muon_orthogonalize,
 *          muon_orthogonalize_workspace_size, muon_orthogonalize_ws,
 *          muon_orthogonalize_batched, muon_orthogonalize_batched_workspace_size,
 *          muon_orthogonalize_batched_ws
 *     3. Transfer function and the NS budget (SPEC 2.1, 2.5)
 *          muon_ns_transfer, muon_ns_min_steps, muon_sv_quantile, muon_ns_choose
 *     4. Exact singular values (SPEC 2.5)
 *          muon_singular_values, muon_singular_values_workspace_size, muon_singular_values_ws,
 *          muon_singular_values_gram, muon_singular_values_gram_workspace_size,
 *          muon_singular_values_gram_ws
 *     5. The Muon step (SPEC 2.2, 2.4)
 *          muon_default, muon_config_resolve, muon_init, muon_init_ex,
 *          muon_step_workspace_size, muon_step, muon_step_ws, muon_free
 *     6. Many layers in one call: one parallel region for the whole model
 *          muon_step_layers (the example trainer's Muon path), muon_step_layers_workspace_size,
 *          muon_step_layers_ws, muon_matrix_shape (a PyTorch tensor's shape as matrices)
 *     7. Data-parallel Muon: which rank orthogonalises which matrix
 *          muon_assign_owners, muon_assign_owners_workspace_size, muon_assign_owners_ws
 *     8. Spectral cap and spectral diagnostics (SPEC 2.3, 2.4)
 *          muon_top_singular_pair, muon_spectral_cap, muon_min_entropy,
 *          muon_spectral_decomposition
 *     9. Muown (SPEC 2.3)
 *          muown_default, muown_config_resolve, muown_init, muown_step_workspace_size,
 *          muown_step, muown_step_ws, muown_gradients, muown_resync, muown_free
 *    10. AdamW and clipping (SPEC 2.6)
 *          muon_adamw_default, muon_adamw_config_resolve, muon_adamw_init,
 *          muon_adamw_init_workspace_size, muon_adamw_init_ws, muon_adamw_step,
 *          muon_adamw_free, muon_clip_grad_norm
 *
 *   Implementation (#ifdef MUON_IMPLEMENTATION; before the first banner: includes, allocator,
 *   muon_status_string), in three layers: the platform (11-12), the product engine (13-22),
 *   then, below the product interface's "====" line, the math, which holds no instruction-set
 *   code at all (tests/rel_seam.sh). The declarations' order, except that the spectral cap (26)
 *   comes before the Muon step (27), which calls it; muon_matrix_shape is defined with the step.
 *    11. platform layer
 *            the compiler's attributes, the instruction set, the vector layer muon__v* (AVX-512,
 *            AVX2, NEON, scalar) and its bit-identity policy, the shared helpers, the workspace
 *            carve, the elementwise passes written once on the layer, the caches' sizes
 *            (muon__caches_get: read once per process, for the cache blocks)
 *    12.   threads on a shared machine
 *            muon_team and the rule behind it (every team region of this file asks it)
 *    13. SGEMM / SSYRK (row-major)
 *    14.   micro-kernels
 *    15.   packing
 *    16.   bf16 products
 *    17.   bf16 Newton-Schulz on AMX with its operands packed once
 *            the AMX engine: a kernel-table entry's Newton-Schulz hooks (its size and run)
 *    18.   the kernel table
 *            every kernel described once (its blocks, packers, SSYRK variant, NS engine),
 *            the bf16 rule and the one chooser of a product's kernel (the bf16 dispatch)
 *    19.   driver
 *    20.   validation and entry points
 *    21.   the product interface
 *            what the rest of the file calls for its products and its engines (then a "===="
 *            line: what follows reaches the machine only through it and the platform layer)
 *    22. schedules
 *          presets, muon_ns_resolve, the transfer function and the NS budget (3 above)
 *    23. Newton-Schulz
 *    24. exact singular values: one-sided Jacobi, and the Gram matrix's eigenvalues
 *    25. spectral cap and diagnostics (SPEC 2.3, 2.4)
 *    26. the Muon step (SPEC 2.2)
 *    27. many layers in one region
 *    28. data-parallel work assignment
 *    29. Muown (SPEC 2.3)
 *    30. AdamW and clipping (SPEC 2.6)
 * Long-form API: docs/api-muon.md, docs/api-muon-gemm.md; numerics and measurements:
 * docs/numerics.md; changes: CHANGELOG.md.
 *
 * Config defaults (one rule for both headers): a field whose zero is not a valid value treats
 * 0 as its documented default (scale_coeff, split_rows, cap_iters, the schedule's count /
 * steps / safety / gram_restart, AdamW eps, Muown mag_eps); a field whose zero is valid (lr,
 * momenta, weight decay, ns.eps) is literal. Start from muon_default() and friends; the
 * *_resolve functions return the config a step actually runs.
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
 *         muon_status s = muon_step(&st, &cfg, W, ldw, G, ldg, NULL, 0);  // G is never modified
 *     }
 *     muon_free(&st);
 *
 * Compile-time options (define before including):
 *     MUON_STATIC            all functions static (private to the including file)
 *     MUONDEF                override the linkage of every function
 *     MUON_MALLOC(sz) / MUON_FREE(p)   both or neither (default malloc/free)
 *     MUON_USE_CBLAS         matrix products go to cblas_sgemm / cblas_ssyrk (link a CBLAS)
 *     MUON_NO_SIMD           scalar reference GEMM micro-kernel only (otherwise AVX-512F,
 *                            AVX2+FMA or NEON, chosen from the compiler's target macros)
 *     MUON_FORCE_AVX2        use the AVX2+FMA kernel even where AVX-512F is enabled
 *     MUON_NO_AMX            bf16 Newton-Schulz never uses AMX tiles (where the compiler
 *                            targets AMX-BF16 on Linux it does; AVX512-BF16 is used otherwise
 *                            where the CPU runs it faster than fp32 FMA, else a bit-exact
 *                            emulation on the fp32 kernel)
 *     MUON_NO_NEON_BF16      nor BFMMLA / BFDOT on AArch64 (used where the compiler targets BF16)
 *     MUON_GEMM_KC / _MC / _NC   fix every kernel's cache blocks (KC default 384; MC and NC
 *                            default: from this CPU's caches, read once at run time, e.g. 1022
 *                            / 512 at a 2 MB L2, 1008 / 512 where they cannot be read; see
 *                            "Cache blocking"); MUON_GEMM_PARALLEL_MIN: multiply-adds below which
 *                            a product stays on one thread; MUON_GEMM_STACK_BYTES: stack buffer
 *                            the plain GEMM forms use for small problems instead of allocating
 *                            (default 0: they always allocate)
 *     MUON_LAYERS_TEAM_MIN   Newton-Schulz work per thread (rows x cols x min(rows, cols) summed
 *                            over the layers one thread gets; default 2^27) from which
 *                            muon_step_layers' region of one matrix per thread keeps its team
 *                            through the shared-machine gate's one-thread periods
 *
 * Memory: no step function allocates. Every routine that needs scratch has a _ws form taking
 * caller memory and a *_workspace_size() query; the forms that allocate through MUON_MALLOC
 * (muon_orthogonalize, muon_singular_values, muon_init, ...) say so in their comment.
 * Columns past `cols` inside a leading dimension are never read or written.
 *
 * Errors: every function validates all of its inputs before it writes anything; on any status
 * other than MUON_OK the outputs and the state are byte-for-byte untouched.
 *
 * Gram Newton-Schulz: an opt-in evaluation of the same NS polynomials on the small Gram matrix
 * (fewer flops for wide/tall layers; ns.method = MUON_NS_GRAM; see muon_orthogonalize).
 * bf16 Newton-Schulz: the reference Muon's precision (ns.precision = MUON_NS_BF16; bf16 X and
 * product operands, fp32 accumulation; AMX / AVX512-BF16 kernels; docs/api-muon.md).
 *
 * Threading: the Newton-Schulz products run on the threads of the GEMM section (OpenMP when
 * compiled with -fopenmp, or the CBLAS's own threads); batches of small matrices run one matrix
 * per OpenMP thread when given muon_orthogonalize_batched_workspace_size() bytes. The elementwise passes of
 * the step functions are split by rows under OpenMP. On a machine short of cores (another
 * program's threads, busy processes) a team region waits for its slowest member: the library
 * watches its team regions and, while they are held up, runs its regions on the calling thread
 * for 20 ms to 1 s at a time (muon_team; docs/embedding.md, "Shared machines"); results do not
 * depend on it. That rule's four doubles (per process, OpenMP atomics), the bf16 rule's
 * once-per-process probe of the CPU's vdpbf16ps speed (a cached int, written with the same value
 * by any thread that races it) and the caches' sizes that the cache blocks follow (one word, set
 * once by compare-and-swap: "Cache blocking") are the only global mutable state: distinct states
 * may be stepped from distinct threads.
 *
 * Determinism: every reduction that decides a result (Frobenius norms, dot products of the
 * spectral cap, AdamW bias corrections, the clipping norm) is accumulated in double in a fixed
 * order that does not depend on the thread count; elementwise passes are per element. The
 * results are therefore bit-identical across runs and thread counts exactly when the GEMM section
 * is (see its documentation; a threaded CBLAS generally is not).
 *
 * Numerics of the normalisation (SPEC 4, first pitfall): NS divides by s*||G||_F + eps with
 * an absolute eps (the presets: 1e-7), the norm in double and zero in giving zero out, so eps = 0
 * is safe and exactly scale invariant; set ns.eps = 0 when gradients can be below ~1e-9 in
 * norm (docs/numerics.md has the numbers).
 */
#ifndef MUON_H
#define MUON_H

#include <stddef.h>

#define MUON_VERSION_MAJOR 0
#define MUON_VERSION_MINOR 3
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
    MUON_ERR_UNREACHABLE, /* muon_ns_choose: no candidate meets the target within max_steps */
    MUON_ERR_RANGE       /* finite inputs whose result does not fit a float (a SUM momentum
                            or a weight pushed past FLT_MAX); nothing is written */
} muon_status;

/* The largest learning rate any step accepts (larger: MUON_ERR_DOMAIN), the same bound as
 * rownorm.h's RN_LR_MAX. Every step also needs lr * weight_decay <= 1 (the decoupled decay
 * factor 1 - lr*wd stays in [0, 1]; one that flips the sign of W or grows it is DOMAIN). */
#define MUON_LR_MAX 1e30

/* A constant string naming the status; never NULL. */
MUONDEF const char *muon_status_string(muon_status s);

/* ---- SGEMM / SSYRK (row-major) -------------------------------------------------------- */
typedef enum muon_transpose { MUON_NO_TRANS = 0, MUON_TRANS = 1 } muon_transpose;

/* C (m x n) = alpha * op(A) * op(B) + beta * C; op(A) is m x k, op(B) is k x n, row-major,
 * leading dimensions in elements. beta == 0: C is not read (NaN in C does not propagate);
 * alpha == 0: C = beta * C without forming the product (Inf in A or B cannot make NaN).
 * C must not overlap the memory span of A or B (MUON_ERR_ALIAS; two interleaved submatrices of
 * one buffer count as overlapping). NULL -> MUON_ERR_NULL; m, n or k zero, overflowing sizes or
 * an ld below the stored row length -> MUON_ERR_SIZE; a transpose other than MUON_NO_TRANS /
 * MUON_TRANS -> MUON_ERR_DOMAIN; C untouched on every error. Allocates its packing buffers through
 * MUON_MALLOC (a problem whose packing fits MUON_GEMM_STACK_BYTES, default 0, uses a stack
 * buffer instead); use muon_sgemm_ws to avoid allocation. Deterministic: bit-identical
 * for every thread count and workspace size (k is never split across threads). */
MUONDEF muon_status muon_sgemm(muon_transpose ta, muon_transpose tb, size_t m, size_t n, size_t k,
                               float alpha, const float *A, size_t lda, const float *B, size_t ldb,
                               float beta, float *C, size_t ldc);
/* C (n x n) = alpha * op(A) * op(A)^T + beta * C; op(A) is n x k. Computes the lower triangle
 * (about half the GEMM's flops) and mirrors it: C == C^T bitwise. With beta != 0 only C's lower
 * triangle is read (pass a symmetric C, as with BLAS). Errors and allocation as muon_sgemm. */
MUONDEF muon_status muon_ssyrk(muon_transpose ta, size_t n, size_t k, float alpha, const float *A,
                               size_t lda, float beta, float *C, size_t ldc);
/* Bytes of packing workspace the _ws forms need to run on up to `threads` threads (threads <= 0:
 * the OpenMP maximum, or 1). The _ws forms never allocate: with a smaller buffer they use fewer
 * threads; if it cannot hold one thread's buffers they return MUON_ERR_SIZE; ws == NULL is
 * MUON_ERR_NULL; [ws, ws + ws_bytes) overlapping the span of A, B or C is MUON_ERR_ALIAS. */
MUONDEF size_t muon_gemm_workspace_size(int threads);
MUONDEF muon_status muon_sgemm_ws(muon_transpose ta, muon_transpose tb, size_t m, size_t n, size_t k,
                                  float alpha, const float *A, size_t lda, const float *B, size_t ldb,
                                  float beta, float *C, size_t ldc, void *ws, size_t ws_bytes);
MUONDEF muon_status muon_ssyrk_ws(muon_transpose ta, size_t n, size_t k, float alpha, const float *A,
                                  size_t lda, float beta, float *C, size_t ldc, void *ws, size_t ws_bytes);

/* The team the library's parallel regions use now for a region that could use `threads`
 * (<= 0: the OpenMP default): `threads`, or 1 while its recent team regions were held up by
 * other work on the machine (members waiting for a core; docs/embedding.md, "Shared
 * machines"), or 1 inside an active parallel region or without OpenMP. For a host's own
 * regions (num_threads(muon_team(0))), so that they share that decision; thread-safe. */
MUONDEF int muon_team(int threads);

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

/* How the steps are evaluated (the same polynomials either way; see muon_orthogonalize). */
typedef enum muon_ns_method {
    MUON_NS_PLAIN = 0, /* iterate on X (m x n): the default */
    MUON_NS_GRAM = 1   /* opt-in: iterate on m x m polynomials of the Gram matrix, with restarts;
                          only where max(rows, cols) >= 3 min(rows, cols): other shapes run the
                          plain iteration (same result up to rounding, no saving to be had) */
} muon_ns_method;
#define MUON_NS_GRAM_NEVER MUON_NS_MAX_STEPS /* gram_restart value: never restart */

/* How X0 is normalised (eps is ns.eps, s is ns.safety). */
typedef enum muon_ns_norm {
    MUON_NORM_ADD_EPS = 0, /* X0 = G / (s ||G||_F + eps): KellerJordan/Muon, modded-nanogpt, dion */
    MUON_NORM_MAX_EPS = 1  /* X0 = G / max(s ||G||_F, eps): torch.optim.Muon (norm().clamp(min=eps)) */
} muon_ns_norm;

/* The arithmetic of the iteration. */
typedef enum muon_ns_precision {
    MUON_NS_FP32 = 0, /* every product and combination in fp32: the default */
    MUON_NS_BF16 = 1  /* the reference's precision (KellerJordan/Muon, modded-nanogpt): X rounded
                         to bf16 after the normalisation and after every step, the products'
                         operands rounded to bf16 (X, A = X X^T, B = b A + c A A) and accumulated
                         in fp32, the combinations in fp32; plain iteration only (MUON_NS_GRAM:
                         DOMAIN). Kernels: AMX (the whole iteration in one engine that keeps X
                         packed in bf16), AVX512-BF16 (vdpbf16ps, where this CPU runs it faster
                         than fp32 FMA) or, elsewhere, a bit-exact emulation on the fp32 kernels;
                         accuracy in docs/numerics.md */
} muon_ns_precision;

/* A schedule is plain data (no pointers): step k (0-based) applies
 * p_k(x) = a_k x + b_k x^3 + c_k x^5 to every singular value, with (a_k, b_k, c_k) =
 * coeffs[k] for k < count and then per `mode`.
 * Zero fields: count == 0 means the Jordan preset (every field but `steps`, `method`,
 * `gram_restart` and `norm` is ignored, and steps <= 0 then means 5); with count > 0, steps == 0 means
 * "each triple once" (steps = count) and safety == 0 means 1. eps is always literal (0 allowed).
 * method 0 is the plain iteration; gram_restart 0 means 2. A zeroed struct is Jordan x 5, plain.
 * Domain: finite coefficients, safety >= 0, eps >= 0, and an iteration that stays inside
 * float's range for every input: the singular values start in [0, 1/safety] and step k maps
 * each exactly through p_k, so the header bounds them (max |p_k| over the previous bound,
 * widened by 2^-8 for rounding) and requires that the bound, its square, max |a + b x^2 + c x^4|
 * squared and (Gram) its product over a segment stay below 2^64. Every preset passes at any
 * step count; e.g. a = 1e30, or a = 10 for 10 steps, or safety 1e-30, is MUON_ERR_DOMAIN.
 * The presets and muon_default() use the plain iteration; MUON_NS_GRAM is an opt-in (its
 * accuracy and speed: muon_orthogonalize's comment). */
typedef struct muon_ns_config {
    int count;         /* triples in use, 0..MUON_NS_MAX_TRIPLES (0: Jordan preset) */
    int steps;         /* K, the number of steps, 0..MUON_NS_MAX_STEPS */
    muon_ns_mode mode; /* what step k >= count uses */
    double safety;     /* s >= 1 typically: X0 = G / (s*||G||_F + eps) */
    double eps;        /* absolute, >= 0 (see the top comment on tiny norms) */
    double coeffs[MUON_NS_MAX_TRIPLES][3];
    muon_ns_method method; /* MUON_NS_PLAIN (0) or MUON_NS_GRAM */
    int gram_restart;  /* MUON_NS_GRAM: restart after every r steps, 0..MUON_NS_MAX_STEPS (0: 2;
                          r >= steps, e.g. MUON_NS_GRAM_NEVER: never) */
    muon_ns_norm norm; /* MUON_NORM_ADD_EPS (0, every preset) or MUON_NORM_MAX_EPS; kept with
                          count == 0 too */
    muon_ns_precision precision; /* MUON_NS_FP32 (0, every preset) or MUON_NS_BF16; kept with
                                    count == 0 too */
} muon_ns_config;

/* The preset `kind`; steps <= 0: the preset's own step count (the K of the enum comments), which
 * is not always its number of triples: Polar Express holds 8 triples but defaults to 5 steps (the
 * "PE x 5" of SPEC 2.1's facts; pass steps = 8 to use every triple once). steps is stored as
 * given otherwise: above MUON_NS_MAX_STEPS the config is not clamped, and every function rejects
 * it with MUON_ERR_DOMAIN. An unknown kind returns a config that every function rejects with
 * MUON_ERR_DOMAIN (count = -1). */
MUONDEF muon_ns_config muon_ns_preset(muon_ns_kind kind, int steps);
/* The schedule every function runs for `in` (NULL: Jordan x 5): its zero-means-default fields
 * filled in (count 0: the Jordan preset with in->steps steps, in->method and in->gram_restart;
 * steps 0: count; safety 0: 1; gram_restart 0: 2), then validated against the domain above.
 * NULL (out NULL), DOMAIN (a schedule every function rejects; *out untouched). */
MUONDEF muon_status muon_ns_resolve(const muon_ns_config *in, muon_ns_config *out);

/* NS orthogonalisation of G (rows x cols, ld ldg) into out (rows x cols, ld ldo), SPEC 2.1:
 *     X = G / (s*||G||_F + eps)   (norm accumulated in double; ns->norm = MUON_NORM_MAX_EPS:
 *                                  X = G / max(s*||G||_F, eps), torch.optim.Muon's form)
 *     tall (rows > cols): iterate on X^T so that the Gram matrix is the small one
 *     K times: A = X X^T (SSYRK); B = b A + c A A (SSYRK, A is symmetric); X = a X + B X (SGEMM)
 * ns NULL: Jordan x 5. Zero G gives zero out (never NaN). out may be G itself (same ld: in
 * place); any other overlap is MUON_ERR_ALIAS. Statuses: NULL, SIZE, DOMAIN (bad schedule,
 * including one whose iteration could leave float's range: see muon_ns_config), ALIAS,
 * NONFINITE (NaN/Inf in G), NOMEM, RANGE (an iterate left float's range after all; out
 * untouched). Allocates its workspace through MUON_MALLOC; the
 * _ws form does not. NS is approximate by design: Jordan x 5 is not exactly orthogonal; it maps
 * each singular value sigma of G/||G||_F to muon_ns_transfer(ns, sigma).
 * Gram NS (ns->method = MUON_NS_GRAM, opt-in; the presets and muon_default() are plain): the
 * same K steps evaluated through the m x m Gram matrix (the published Gram Newton-Schulz):
 *     R = X X^T; Q = I; per step P = a I + b R + c R^2, Q <- Q P, R <- R P^2 (SYRK/GEMM on
 *     m x m only); after every r = ns->gram_restart steps (0: 2) the restart X <- Q X,
 *     R <- X X^T, Q <- I; at the end X <- Q X.
 * In float32 forming R squares the conditioning (an absolute error eps*||R|| on sigma^2), which
 * the restarts bound: keep r <= 3 (without restarts long schedules break down). Cost: Gram
 * needs about 25.5 m^3 multiply-adds (r = 2) against the plain 32.5 m^3 (n = 4m, Jordan x 5);
 * the measured accuracy and speed are in docs/numerics.md (muon_orthogonalize, Gram).
 * It runs only where max(rows, cols) >= 3*min(rows, cols)
 * (then it fits the plain workspace: the workspace sizes are the same for both methods); other
 * shapes, where it saves little or nothing, run the plain iteration. r = 1 restarts before
 * every step and is the plain iteration bit for bit. Deterministic as the plain form. */
MUONDEF muon_status muon_orthogonalize(const float *G, size_t rows, size_t cols, size_t ldg,
                                       const muon_ns_config *ns, float *out, size_t ldo);
/* Bytes of workspace for one rows x cols orthogonalisation (also per matrix of a batch), sized
 * for the GEMM section at the current OpenMP thread count. 0 on zero or overflowing sizes.
 * (A smaller workspace, down to the size for one thread, is accepted: the products then run on
 * fewer threads. So raising the thread count after sizing never turns a call into an error.) */
MUONDEF size_t muon_orthogonalize_workspace_size(size_t rows, size_t cols);
MUONDEF muon_status muon_orthogonalize_ws(const float *G, size_t rows, size_t cols, size_t ldg,
                                          const muon_ns_config *ns, float *out, size_t ldo,
                                          void *ws, size_t ws_bytes);
/* `count` same-shape matrices, matrix i at G + i*stride_g (out + i*stride_o): each one is
 * normalised and orthogonalised on its own (never across matrices). The _ws form needs at least
 * muon_orthogonalize_workspace_size(rows, cols) bytes and then runs the matrices one after the other;
 * given muon_orthogonalize_batched_workspace_size(count, rows, cols) bytes, small matrices (whose products
 * the GEMM would run on one thread) run concurrently, one per OpenMP thread, with bit-identical
 * results. The allocating form allocates the batched size. For count > 1 the strides
 * must keep the output matrices apart (stride_o >= (rows-1)*ldo + cols, else MUON_ERR_SIZE);
 * stride_g may be anything, 0 included (one input read count times); in place needs out == G,
 * ldo == ldg, stride_o == stride_g. Errors are found before any output is written, except
 * RANGE (an iterate that left float's range despite the schedule's bound): then the matrices
 * before the failing one may have been written. */
MUONDEF muon_status muon_orthogonalize_batched(const float *G, size_t count, size_t rows, size_t cols,
                                               size_t ldg, size_t stride_g, const muon_ns_config *ns,
                                               float *out, size_t ldo, size_t stride_o);
/* Bytes that let muon_orthogonalize_batched_ws run a batch concurrently (see above); equal to
 * muon_orthogonalize_workspace_size when it would not. 0 on zero or overflowing sizes. */
MUONDEF size_t muon_orthogonalize_batched_workspace_size(size_t count, size_t rows, size_t cols);
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
 * tau within max_steps (out untouched). DOMAIN for bad q, tau, max_steps, sv (non-finite,
 * unsorted, negative, all zero) or candidates. */
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
 * takes muon_singular_values_workspace_size(rows, cols) bytes. */
MUONDEF muon_status muon_singular_values(const float *M, size_t rows, size_t cols, size_t ld, double *sv);
MUONDEF size_t muon_singular_values_workspace_size(size_t rows, size_t cols);
MUONDEF muon_status muon_singular_values_ws(const float *M, size_t rows, size_t cols, size_t ld,
                                            double *sv, void *ws, size_t ws_bytes);
/* The same min(rows, cols) values, non-increasing, from the eigenvalues of the smaller Gram
 * matrix (M M^T or M^T M, formed in double): Householder tridiagonalisation, then the implicit
 * QL iteration (bisection on Sturm counts should it not converge). O(min^2 max + min^3) with
 * small constants: ~40x cheaper than the Jacobi above on a 384 x 1024 momentum, cheap enough to
 * budget Newton-Schulz from every few dozen updates (issue 49; the trainer's --ns-steps auto).
 * The Gram matrix squares the values: a value sigma is good to about p eps (sigma_1 / sigma)^2
 * relative (p = min(rows, cols), eps = 2^-52), so 1e-11 at 1e-2 sigma_1 and 1e-7 at 1e-4 sigma_1
 * for p = 384 (the quantiles a budget reads; tests/test_muon.c holds 16 p eps (sigma_1 / sigma)^2
 * against muon_singular_values), while values below 1e-8 sigma_1 are noise near 0. Statuses as
 * muon_singular_values; the _ws form takes muon_singular_values_gram_workspace_size(rows, cols)
 * bytes. Serial (one call per thread of a host's loop over matrices is the way to use several
 * cores). */
MUONDEF muon_status muon_singular_values_gram(const float *M, size_t rows, size_t cols, size_t ld, double *sv);
MUONDEF size_t muon_singular_values_gram_workspace_size(size_t rows, size_t cols);
MUONDEF muon_status muon_singular_values_gram_ws(const float *M, size_t rows, size_t cols, size_t ld,
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
    /* Blocks orthogonalised on their own (per-head NS, fused and GQA QKV, stacked layers): the
     * rows are cut by split_rows (equal) or row_sizes (unequal), the columns by split_cols or
     * col_sizes; every (row block, column block) pair is one NS and takes its own shape scale.
     * One of each pair at most (both set: DOMAIN); sizes must be > 0 and sum to rows / cols
     * (SIZE otherwise). The arrays are read during the call only. */
    size_t split_cols;                /* k equal column chunks (per-head output projection) (0, 1: none) */
    const size_t *row_sizes;          /* row_blocks row counts (a GQA QKV: d, d kv/h, d kv/h); NULL: none */
    size_t row_blocks;
    const size_t *col_sizes;          /* col_blocks column counts; NULL: none */
    size_t col_blocks;
    /* NorMuon (arXiv 2510.05491): after NS, each row of O is divided by sqrt(v_i) + eps, where
     * v_i is an EMA (beta2) of the row's mean square, then O is rescaled to its Frobenius norm
     * before the division; the shape scale applies after. State: muon_state.row_v. */
    int normuon;                      /* nonzero: NorMuon */
    double normuon_beta2;             /* in [0, 1) (0: 0.95) */
    double normuon_eps;               /* > 0 (0: 1e-8) */
    /* Cautious weight decay (arXiv 2510.12402; dion, modded-nanogpt): the decay lr*lambda*w only
     * on the entries where the update u = -D and w agree in sign, u*w >= 0 (d*w <= 0); elsewhere
     * w is not decayed. step_out's S is D as without it. */
    int cautious_wd;
    /* OpenMP threads of this step's parallel regions (its products and elementwise passes):
     * 0 = the OpenMP default (omp_get_max_threads()), n >= 1 = at most n, and never more than
     * that default (the state's workspace holds GEMM packing space for it; 1: the step opens no
     * parallel region at all). Per config, so a host program gives each call what it can
     * spare; no OpenMP setting of the host's is touched. While the library's team regions are
     * held up by other work on the machine its regions run on the calling thread for a while
     * (muon_team; docs/embedding.md, "Shared machines"), whatever this says. Regions below MUON__PAR_MIN elements / MUON_GEMM_PARALLEL_MIN
     * multiply-adds stay on one thread whatever this says, and so does a step called from
     * inside an active parallel region (muon_step_layers' team, or a host's own loop over
     * layers). Ignored without OpenMP, and by the products of a MUON_USE_CBLAS build (the BLAS
     * has its own threads). */
    int threads;
} muon_config;

/* lr 0.02, momentum 0.95, Nesterov, EMA, ORIGINAL, scale_coeff 0.2, weight decay 0, Jordan x 5,
 * no split, cap off (cap_iters 2), NorMuon off (beta2 0.95, eps 1e-8), plain weight decay. */
MUONDEF muon_config muon_default(void);
/* The config muon_step runs for *in: zero-means-default fields filled in (scale_coeff 0.2,
 * split_rows 1, cap_iters 2, ns through muon_ns_resolve), then validated. NULL, DOMAIN (*out
 * untouched). */
MUONDEF muon_status muon_config_resolve(const muon_config *in, muon_config *out);

#define MUON_CAP_COLD_ITERS 30 /* power iterations when the stored pair is not yet valid */

typedef struct muon_state {
    size_t rows, cols;
    long long step;         /* completed steps */
    float *momentum;        /* B, rows x cols, ld = cols, starts at 0 */
    double *cap_u, *cap_v;  /* top singular pair of W before the last capped step (rows, cols) */
    double *row_v;          /* NorMuon's per-row second moments (rows), start at 0 */
    double cap_sigma;       /* its sigma_1 estimate (0 until the cap has run) */
    int cap_valid;          /* the pair is a warm start */
    void *workspace;        /* owned workspace for muon_step (NULL from MUON_INIT_NO_WORKSPACE) */
    size_t workspace_bytes;
    void *block;            /* the single allocation behind all of the above */
} muon_state;

/* Allocates (MUON_MALLOC) the momentum, the cap pair and a workspace for muon_step of
 * muon_step_workspace_size(rows, cols, NULL) bytes. Statuses: NULL, SIZE, NOMEM; st untouched on
 * error. */
MUONDEF muon_status muon_init(muon_state *st, size_t rows, size_t cols);
/* What muon_init_ex allocates besides the momentum and the cap pair. */
typedef enum muon_init_mode {
    MUON_INIT_NO_WORKSPACE = 0, /* no workspace: only muon_step_ws steps (one workspace shared by layers) */
    MUON_INIT_WORKSPACE = 1     /* a workspace for muon_step, as muon_init */
} muon_init_mode;
/* As muon_init, with `mode` a muon_init_mode (an int, so that 0 and 1 keep working from C++);
 * any value other than MUON_INIT_NO_WORKSPACE allocates the workspace. */
MUONDEF muon_status muon_init_ex(muon_state *st, size_t rows, size_t cols, int mode);
/* Bytes muon_step_ws needs for a rows x cols weight under cfg (split_rows matters; cfg NULL:
 * the no-split worst case), sized for the current OpenMP thread count (less, down to the
 * one-thread size, runs on fewer threads). 0 on overflow or zero size. */
MUONDEF size_t muon_step_workspace_size(size_t rows, size_t cols, const muon_config *cfg);
/* One Muon step on W (rows x cols, ld ldw) with gradient G (ld ldg), SPEC 2.2:
 *     u = Nesterov/plain momentum of G (cfg->momentum_form);  O = NS(u) per row chunk
 *     D = -lr * scale(chunk) * O;  spectral cap on D if cfg->cap (SPEC 2.4)
 *     W <- W - lr*weight_decay*W + D;   B and step committed last.
 * The cap acts on the increment D only: the decay term -lr*lambda*W (which shrinks sigma_1) is
 * never capped, so W_new - (1 - lr*lambda) W = D_capped. The decay is computed in double as
 * w - (lr*lambda)*w, so it is not lost to rounding however small lr*lambda is.
 * G is never modified and must not overlap W (ALIAS); neither W, G nor ws may overlap the
 * state's buffers (momentum, cap_u, cap_v; ALIAS). Statuses: NULL (incl. an uninitialised
 * state, or muon_step on a state without workspace), SIZE (ld < cols, split_rows not dividing
 * rows, workspace too small), DOMAIN (cfg out of range: lr outside [0, MUON_LR_MAX],
 * lr * weight_decay > 1, a bad schedule; or st->step negative or LLONG_MAX), ALIAS, NONFINITE
 * (NaN/Inf in G or in the momentum; in W too when the cap is on, since it reads W), RANGE
 * (finite inputs whose result does not fit a float: the SUM momentum or u past FLT_MAX, the
 * scaled step or a finite entry of W pushed past FLT_MAX; with the cap the test is the
 * sufficient |w (1 - lr lambda)| + |d| + ||D||_F <= FLT_MAX). On every error W, step_out and
 * the whole state are as before. Without the cap W is not checked: a NaN/Inf already in W stays
 * in its own entry. No allocation.
 * step_out: NULL (nothing written, nothing costs), or receives the step S = D (capped), rows x
 * cols with ld lds >= cols (SIZE otherwise), the signed change excluding the decoupled decay:
 * W_after = fl((w - lr lambda w) + S) entrywise, so W_after - (1 - lr lambda) W_before = S to
 * rounding. It may overlap none of W, G, ws and the state (ALIAS). */
MUONDEF muon_status muon_step(muon_state *st, const muon_config *cfg, float *W, size_t ldw,
                              const float *G, size_t ldg, float *step_out, size_t lds);
MUONDEF muon_status muon_step_ws(muon_state *st, const muon_config *cfg, float *W, size_t ldw,
                                 const float *G, size_t ldg, float *step_out, size_t lds, void *ws,
                                 size_t ws_bytes);
/* Frees what muon_init allocated and zeroes *st. NULL and zeroed states are fine. */
MUONDEF void muon_free(muon_state *st);

/* ---- Many layers in one call: one parallel region for the whole model --------------------
 * A trainer steps each of its matrices; one muon_step per matrix opens a few parallel regions
 * per product, and small matrices pay a barrier for every one (inside a host program that keeps
 * its cores busy, a descheduled team member stalls the others at each). muon_step_layers steps
 * a list of layers with their own states and configs in one region instead: each layer runs on
 * one thread, the costliest first (greedy: a thread that finishes takes the costliest layer
 * left), so there is no barrier between layers and a slow thread only takes fewer of them.
 * A layer whose Newton-Schulz cost is more than its share (cost x threads > the total) runs
 * before that, alone, on the whole team. Every layer's result is bit-identical to muon_step's
 * (results never depend on the thread count). */
typedef struct muon_layer {
    muon_state *state;
    const muon_config *cfg;       /* may be shared by any number of layers */
    float *W;
    size_t ldw;
    const float *G;               /* read only: layers may share a G */
    size_t ldg;
    float *step_out;              /* optional (NULL), as muon_step's */
    size_t lds;
    muon_status status;           /* out: this layer's status (see muon_step_layers) */
} muon_layer;
/* Steps layers[0..count-1] as muon_step would each, up to `threads` layers at once (0: the
 * OpenMP default; n >= 1: at most n, never more than that default; a layer that runs alone gets
 * the team its cfg->threads asks for), each layer in its state's own workspace (muon_init).
 * First every layer's arguments are checked as muon_step checks them (NULL, SIZE, DOMAIN,
 * ALIAS, NaN/Inf in G), and the layers against one another: what one layer writes (W, step_out,
 * its state and workspace) may overlap nothing of another (ALIAS; so two layers cannot share a
 * state; checked also for a layer whose own checks found only NaN/Inf in G, which an overlap
 * turns into ALIAS: overlaps before contents). If any check fails nothing is stepped: the return value is the lowest-index layer's
 * error and every layer's `status` is its own check (MUON_OK for the layers that passed).
 * Otherwise every layer runs and its `status` is its result: MUON_OK (stepped), or NONFINITE /
 * RANGE from its momentum or its result, and that layer is as before (muon_step's rule) while
 * the others step; the return value is then MUON_OK, or the lowest-index layer's error.
 * Statuses: NULL (layers, or a state without workspace), SIZE (count 0), DOMAIN (threads < 0),
 * and the per-layer ones above. No allocation; O(count^2) pointer comparisons for the checks. */
MUONDEF muon_status muon_step_layers(muon_layer *layers, size_t count, int threads);
/* As muon_step_layers, in one workspace of ws_bytes (the states need none: MUON_INIT_NO_WORKSPACE):
 * at least the largest one-thread size of a layer; muon_step_layers_workspace_size(layers, count,
 * threads) bytes let every thread of the team run a layer at once (less runs fewer at once, with
 * the same results). The workspace may overlap nothing of any layer (ALIAS). */
MUONDEF size_t muon_step_layers_workspace_size(const muon_layer *layers, size_t count, int threads);
MUONDEF muon_status muon_step_layers_ws(muon_layer *layers, size_t count, int threads, void *ws, size_t ws_bytes);

/* The matrix Muon sees for an n-d parameter stored row-major (C order): the first stack_dims
 * dimensions are independent stacked matrices (layers, experts), the next is the rows (output
 * features), and the rest are flattened into the columns, so a conv kernel (out, in, kh, kw)
 * is out x (in kh kw) with the shape scale of that flattened matrix, and a stack [L, m, n] is
 * L matrices of m x n. Step the whole parameter as one (count rows) x cols matrix with one state
 * and cfg.split_rows = count (times the heads per matrix for per-head NS), so each stacked
 * matrix is orthogonalised and scaled on its own, never across the stack.
 * dims[0..ndim-1]; ndim - stack_dims >= 2 (a vector is not a Muon parameter: DOMAIN), stack_dims
 * >= 0. count, rows, cols receive the sizes (untouched on error). NULL, SIZE (a zero dimension,
 * or a product that overflows size_t), DOMAIN. */
MUONDEF muon_status muon_matrix_shape(const size_t *dims, int ndim, int stack_dims, size_t *count, size_t *rows,
                                      size_t *cols);

/* ---- Data-parallel Muon: which rank orthogonalises which matrix ------------------------- */
/* Assigns count matrices (rows[i] x cols[i]) to nranks ranks for data-parallel Muon: each rank
 * orthogonalises only the matrices it owns, then an all-gather (or one broadcast per matrix from
 * its owner) completes the step. Cost of a matrix = the flops of one NS iteration,
 * m*n*min(m,n) up to a constant (computed in double); matrices are taken in decreasing cost
 * (ties: lower index first) and each goes to the currently least-loaded rank (ties: lower rank),
 * so equal sizes are dealt round-robin (the LPT greedy: max load <= total/nranks + the largest
 * single cost). owner[i] receives the rank, in 0..nranks-1. Deterministic: the result depends
 * only on the arguments (exact double comparisons, loads summed in a fixed order), so every
 * rank computes the same answer. Optional load[nranks] (NULL allowed) receives each rank's
 * summed cost (ranks that own nothing get 0).
 * Memory and time: the _ws form takes muon_assign_owners_workspace_size(count, nranks) bytes (an index
 * permutation and the costs, 16 bytes per matrix; a heap of the ranks and their loads, 12 bytes
 * per rank; plus 64) and never allocates; O(count log count + count log nranks) time
 * (heapsort of the matrices, binary heap of the ranks). The plain form uses a 512-byte stack buffer when the
 * workspace fits (e.g. 24 matrices on 4 ranks) and MUON_MALLOC otherwise (MUON_ERR_NOMEM).
 * Errors, before anything is written (owner and load untouched): MUON_ERR_NULL (rows, cols,
 * owner; ws for the _ws form), MUON_ERR_SIZE (count 0, any zero dimension, nranks < 1,
 * overflowing workspace size, ws_bytes too small), MUON_ERR_ALIAS (owner, load, ws, rows and
 * cols overlap one another, except rows and cols, which are only read). */
MUONDEF muon_status muon_assign_owners(const size_t *rows, const size_t *cols, size_t count,
                                       int nranks, int *owner, double *load);
/* Bytes muon_assign_owners_ws needs; 0 when count == 0, nranks < 1 or the size overflows. */
MUONDEF size_t muon_assign_owners_workspace_size(size_t count, int nranks);
MUONDEF muon_status muon_assign_owners_ws(const size_t *rows, const size_t *cols, size_t count,
                                          int nranks, int *owner, double *load, void *ws,
                                          size_t ws_bytes);

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
 * u zero, v the normalised start. Statuses: NULL, SIZE, DOMAIN (iters < 1 or non-finite v),
 * ALIAS (u, v and W's span must not overlap one another), NONFINITE; u, v, sigma untouched on
 * every error. */
MUONDEF muon_status muon_top_singular_pair(const float *W, size_t rows, size_t cols, size_t ld, int iters,
                                           double *u, double *v, double *sigma);
/* c = u^T D v, sigma_1's first-order growth under W -> W + D (unit u, v: the top pair of W).
 * GROWTH: if c > 0, D <- D - c u v^T; ALWAYS: D <- D - c u v^T; OFF: D unchanged. *growth (may
 * be NULL) receives c before removal. Statuses: NULL, SIZE, DOMAIN (bad mode), NONFINITE
 * (NaN/Inf in D, u or v; D and *growth untouched). */
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
    MUOWN_MAG_FIXED,    /* g never moves */
    MUOWN_MAG_SGD,      /* g <- g - mag_lr * grad_g (the reference's "sgd") */
    MUOWN_MAG_LION      /* g <- g - mag_lr * sign(beta1 m + (1 - beta1) grad_g), then
                           m <- beta2 m + (1 - beta2) grad_g (the reference's "lion" hard-codes
                           betas 0.9, 0.99: set mag_beta2 = 0.99 to match) */
} muown_magnitude_rule;

/* muon: the direction optimiser (lr, momentum, nesterov, momentum_form, scale, scale_coeff, ns,
 * split_rows, weight_decay; cap is ignored). All other fields are literal. */
typedef struct muown_config {
    muon_config muon;
    muown_magnitude_rule magnitude;
    double mag_lr;                 /* step size of the magnitude rule, >= 0 */
    double mag_beta1, mag_beta2;   /* Adam (Signum uses beta1), in [0, 1) */
    double mag_eps;                /* Adam, > 0 (0: 1e-8) */
    /* nonzero: the reference Muown's (kcc-lion/muown) weight-decay resync g <- +||W_i|| (a
     * magnitude that went negative turns positive, so the row's direction flips while its
     * momentum does not); 0: the signed resync that keeps u = W/g along v_new (this library) */
    int reference_resync;
} muown_config;

/* muon_default() for the direction; Adam on magnitudes with mag_lr 0.02 (= lr; tune it),
 * betas (0.9, 0.95), eps 1e-8. */
MUONDEF muown_config muown_default(void);
/* The config muown_step runs for *in: the Muon part through muon_config_resolve, mag_eps 0 ->
 * 1e-8, then validated. NULL, DOMAIN (*out untouched). */
MUONDEF muon_status muown_config_resolve(const muown_config *in, muown_config *out);

typedef struct muown_state {
    size_t rows, cols;
    long long step;
    double *g;          /* row magnitudes (rows), signed: W_i = g_i v_i/||v_i||, and
                           ||W_i|| = |g_i| after every step when lambda = 0 */
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
MUONDEF size_t muown_step_workspace_size(size_t rows, size_t cols, const muown_config *cfg);
/* u = W/g (row-wise, signed: a row whose g_i has gone negative has u_i = -W_i/||W_i||, the
 * direction of v_i; computed as sign(g_i) W_i/||W_i||, equal under the invariant and exactly
 * unit), grad_g_i = <G_i, u_i>, grad_v = (g/||v||) o (G - u o grad_g) (rows orthogonal to u);
 * v_new = ||v|| u - lr*scale*NS(momentum of grad_v); g <- magnitude rule;
 * W = g o v_new/||v_new||; ||v|| <- ||v_new||; with weight_decay lambda != 0:
 * W <- W - lr*lambda*W_old (the decay term in double), then g <- +-row norms of W, the sign
 * that keeps u = W/g along v_new (the positive row norms while g > 0).
 * Zero rows: g_i landing exactly on 0 (lambda = 0) makes W_i = 0, which erases the row's
 * direction (v is not stored apart from W). A zero row has u_i = 0, grad_g_i = 0 and
 * grad_v_i = 0; it takes the direction of its next nonzero v_new row (from the momentum), and
 * until then stays W_i = 0 with g_i = 0. (g_i = 0 with W_i != 0 only arises from a state edited
 * by hand: u_i = W_i/||W_i||.)
 * Statuses as muon_step_ws, plus NONFINITE for NaN/Inf in W (W is read: it carries the
 * directions), DOMAIN for st->step negative or LLONG_MAX, and RANGE when a new magnitude g_i
 * or v_new would not fit a float (|g_new| (1 + 2^-23) + lr lambda max|W_i| <= FLT_MAX per
 * row); W, step_out and the state are untouched on every error; ws, W and G may not overlap
 * the state's buffers (ALIAS). No allocation.
 * step_out: NULL, or receives S = g_new o v_new/||v_new|| - W_before (formed in double, rounded
 * once; rows x cols, ld lds >= cols), the signed change excluding the decay: W_after =
 * fl(S + W_before - lr lambda W_before) to rounding. Aliasing rules as muon_step_ws. */
MUONDEF muon_status muown_step(muown_state *st, const muown_config *cfg, float *W, size_t ldw,
                               const float *G, size_t ldg, float *step_out, size_t lds);
MUONDEF muon_status muown_step_ws(muown_state *st, const muown_config *cfg, float *W, size_t ldw,
                                  const float *G, size_t ldg, float *step_out, size_t lds, void *ws,
                                  size_t ws_bytes);
/* The Muown gradients at the state's (g, ||v||) for W, G: grad_g (rows, double) and grad_v
 * (rows x cols, ld ldv). For tests and diagnostics. NULL, SIZE, NONFINITE. */
MUONDEF muon_status muown_gradients(const muown_state *st, const float *W, size_t ldw, const float *G,
                                    size_t ldg, double *grad_g, float *grad_v, size_t ldv);
/* Re-reads g from W's row norms (after the caller changed W), keeping each g_i's sign (the
 * orientation of v_i); ||v|| is kept. NULL, SIZE, NONFINITE. */
MUONDEF muon_status muown_resync(muown_state *st, const float *W, size_t ldw);
MUONDEF void muown_free(muown_state *st);

/* ---- AdamW and clipping (SPEC 2.6) ------------------------------------------------------ */
/* Start from muon_adamw_default(). lr, betas and weight_decay are literal (0 is a valid value);
 * eps 0 means the default 1e-8 (0 itself is not a valid eps). */
typedef struct muon_adamw_config {
    double lr;           /* >= 0 */
    double beta1, beta2; /* in [0, 1) */
    double eps;          /* > 0 (0: 1e-8) */
    double weight_decay; /* >= 0, decoupled: p <- p (1 - lr wd) */
} muon_adamw_config;
/* lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight decay 0.01. */
MUONDEF muon_adamw_config muon_adamw_default(void);
/* The config muon_adamw_step runs for *in (eps 0: 1e-8), validated. NULL, DOMAIN (*out untouched). */
MUONDEF muon_status muon_adamw_config_resolve(const muon_adamw_config *in, muon_adamw_config *out);

typedef struct muon_adamw_state {
    size_t size;
    long long step;
    float *m, *v;   /* first and second moments (size each) */
    void *muon__own; /* private: the block muon_adamw_free releases (NULL: caller memory) */
} muon_adamw_state;
/* Allocates 2*size floats (MUON_MALLOC), zeroed. NULL, SIZE, NOMEM; st untouched on error. */
MUONDEF muon_status muon_adamw_init(muon_adamw_state *st, size_t size);
/* Bytes of caller memory muon_adamw_init_ws needs (any alignment); 0 on zero or overflowing size. */
MUONDEF size_t muon_adamw_init_workspace_size(size_t size);
/* As muon_adamw_init, in caller memory (>= muon_adamw_init_workspace_size(size) bytes, kept
 * alive while the state is used; muon_adamw_free then frees nothing). NULL, SIZE (size 0 or
 * overflowing, mem_bytes too small); st untouched on error. */
MUONDEF muon_status muon_adamw_init_ws(muon_adamw_state *st, size_t size, void *mem, size_t mem_bytes);
/* t <- t+1; p <- p - (lr wd) p (in double: never lost to rounding); m, v EMA of g, g^2;
 * p <- p + s, s = -lr m_hat / (sqrt(v_hat) + eps) with bias corrections 1 - beta^t computed as
 * -expm1(t log beta). step_out: NULL, or receives s (size floats; the signed change without the
 * decoupled decay, formed in double from the unrounded moments and rounded once, so that
 * param_after = fl((p - lr wd p) + s) and param_after - (1 - lr wd) param_before = s to
 * rounding); it may overlap none of param, grad, m, v (ALIAS). v is formed in double and stored no larger than FLT_MAX, so the moments
 * stay finite for every finite gradient (a gradient above ~1e19 no longer leaves v = Inf,
 * which froze its entry). Statuses: NULL, DOMAIN (lr outside [0, MUON_LR_MAX],
 * lr * weight_decay > 1, betas outside [0, 1), eps <= 0, st->step negative or LLONG_MAX),
 * NONFINITE (NaN/Inf in grad, st->m or st->v), ALIAS (param overlaps grad, or param or grad
 * overlaps st->m or st->v), RANGE (a finite parameter or the step s would leave float's range:
 * only from a state written by hand or a rate near MUON_LR_MAX). A read-only pre-pass finds
 * every error, so on an error param, step_out and the state are untouched. No allocation. */
MUONDEF muon_status muon_adamw_step(muon_adamw_state *st, const muon_adamw_config *cfg, float *param,
                                    const float *grad, float *step_out);
MUONDEF void muon_adamw_free(muon_adamw_state *st);

/* Global-norm clipping over `count` tensors (grads[i] has sizes[i] floats; sizes may be 0):
 * total = sqrt(sum of all squares) in double, in one fixed order on every ISA and thread count
 * (each tensor in eight partial sums, entry j in sum j mod 8, added pairwise; the tensors in
 * order); if total > max_norm every entry g becomes (float)(g * (max_norm / total)), the scaling
 * threaded over the OpenMP team. Clip gradients, never the orthogonalised updates. *total_norm_out (may be
 * NULL) receives the norm before clipping. NULL, SIZE (count 0, a size overflowing bytes),
 * DOMAIN (max_norm <= 0 or NaN), ALIAS (two tensors overlap, e.g. one listed twice: it would be
 * counted and scaled twice; empty tensors overlap nothing), NONFINITE (nothing is scaled). */
MUONDEF muon_status muon_clip_grad_norm(float **grads, const size_t *sizes, size_t count, double max_norm,
                                        double *total_norm_out);

#ifdef __cplusplus
}
#endif
#endif /* MUON_H */

#ifdef MUON_IMPLEMENTATION
#ifndef MUON_IMPLEMENTATION_DONE
#define MUON_IMPLEMENTATION_DONE

/* C++ with -Wold-style-cast: the implementation is C99 and casts C-style throughout; the
 * diagnostic is silenced for the implementation only (pushed here, popped at its end), so the
 * including file keeps its own setting and the declarations above stay checked. */
#if defined(__cplusplus) && (defined(__GNUC__) || defined(__clang__))
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
/* GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which g++ reports as "may be used
 * uninitialized" (or, on plain loads, "is used uninitialized") once inlined: a false positive of
 * the compiler's own header, fixed in GCC 13 */
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#endif

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
/* the null pointer constant of the implementation: nullptr in C++11 and later (no
 * -Wzero-as-null-pointer-constant from clang++, which flags NULL; an add_subdirectory consumer
 * includes these headers with -I, not -isystem), NULL in C and C++98 (and MSVC without
 * /Zc:__cplusplus, which reports 199711L) */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define MUON__NULL nullptr
#else
#define MUON__NULL NULL
#endif
#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef MUON_USE_CBLAS
#include <cblas.h>
#endif

/* Internal functions: plain `static` (the one convention of this file), followed where needed by
 * MUON__NOINLINE / MUON__ALWAYS_INLINE, or MUON__GEMM_UNUSED for the GEMM section's functions
 * that a build may not call (rownorm.h spells the same rule RN__FN). */
#ifdef _OPENMP
#define MUON__OMP(x) _Pragma(#x)
#else
#define MUON__OMP(x)
#endif

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
    case MUON_ERR_UNREACHABLE: return "no candidate schedule meets the target within max_steps";
    case MUON_ERR_RANGE: return "the result does not fit a float (nothing written)";
    }
    return "unknown muon_status";
}

/* ---- platform layer ------------------------------------------------------------------------
 * Everything of this file that depends on the compiler or the instruction set, except the
 * product engine's own kernels (micro-kernels, packing, the AMX engine: as in BLIS, those stay
 * per ISA), defined once here; what follows the product interface's "====" line reaches the
 * machine only through this layer and the product interface (tests/rel_seam.sh enforces it):
 *   the compiler's attributes and the instruction set chosen from its target macros;
 *   the vector layer muon__v*: muon__vf holds MUON__VW floats, muon__vd MUON__VD doubles (the
 *     float lanes' first half, widened), muon__vu MUON__VW 32-bit lanes, for AVX-512, AVX2+FMA,
 *     NEON and a one-lane scalar form, with the 8 x 8 transposes and the bf16 rounding;
 *   the helpers every section shares (finiteness from the bits, overflow-safe sizes, alignment,
 *     the workspace carve);
 *   the thread rule (muon_team and the shared-machine gate behind it);
 *   the elementwise passes written once on the layer (finiteness and the sum of squares of a
 *     matrix, the bf16 rounding pass; AdamW's element kernel sits with AdamW, on this layer).
 * Bit-identity policy: the layer never fuses a multiply and an add unless its name says so
 * (muon__vf_fma: rounded once, as fmaf), and every elementwise result is formed by the same
 * operations on every ISA and thread count, so it is bit-identical across AVX-512, AVX2, NEON
 * and the scalar form (the scalar form's plain C may be contracted by a compiler in a GNU mode,
 * -ffp-contract=fast; the tests' builds are ISO C, where it is not). A reduction (the sum of
 * squares) keeps its eight lanes in one fixed order on every ISA: the same bits everywhere. */

#if defined(__GNUC__) || defined(__clang__)
#define MUON__NOINLINE __attribute__((noinline))
#define MUON__ALWAYS_INLINE __inline__ __attribute__((always_inline))
#elif defined(_MSC_VER)
#define MUON__NOINLINE __declspec(noinline)
#define MUON__ALWAYS_INLINE __forceinline
#else
#define MUON__NOINLINE
#define MUON__ALWAYS_INLINE
#endif
#if defined(__GNUC__) || defined(__clang__)
#define MUON__GEMM_UNUSED __attribute__((unused))
#define MUON__GEMM_RESTRICT __restrict__
#else
#define MUON__GEMM_UNUSED
#define MUON__GEMM_RESTRICT
#endif

/* Kernel selection: compile-time, from the compiler's target macros. */
#if !defined(MUON_NO_SIMD) && defined(__AVX512F__) && !defined(MUON_FORCE_AVX2)
#define MUON__GEMM_AVX512 1
#include <immintrin.h>
#elif !defined(MUON_NO_SIMD) && defined(__AVX2__) && defined(__FMA__)
#define MUON__GEMM_AVX2 1
#include <immintrin.h>
#elif !defined(MUON_NO_SIMD) && defined(__ARM_NEON) && defined(__aarch64__)
#define MUON__GEMM_NEON 1
#include <arm_neon.h>
#endif

/* bf16 kernels (the products of a bf16 Newton-Schulz): vdpbf16ps where the compiler targets
 * AVX512-BF16 (used where the CPU runs it faster than fp32 FMA: muon__bf16_dp_fast), AMX tiles
 * where it also targets AMX-BF16 on Linux (MUON_NO_AMX: never) */
#if defined(MUON__GEMM_AVX512) && defined(__AVX512BF16__) && defined(__AVX512BW__)
#define MUON__BF16_DP 1
/* (GCC spells the target macros __AMX_TILE__ / __AMX_BF16__, clang 14 __AMXTILE__ / __AMXBF16__) */
#if (defined(__AMX_TILE__) || defined(__AMXTILE__)) && (defined(__AMX_BF16__) || defined(__AMXBF16__)) && \
    defined(__linux__) && defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(MUON_NO_AMX)
#define MUON__BF16_AMX 1
#endif
#endif
#if defined(MUON__GEMM_NEON) && defined(__ARM_FEATURE_BF16_VECTOR_ARITHMETIC) && !defined(MUON_NO_NEON_BF16)
#define MUON__BF16_NEON 1 /* BFMMLA and BFDOT (Armv8.6 BF16) */
#endif

#define MUON__ALIGN 64
#define MUON__PAR_MIN 65536.0 /* elements below which an elementwise pass stays on one thread */
/* the clauses of a step's elementwise region: its team size nt (muon_config.threads), one
 * thread below MUON__PAR_MIN elements (the macro is expanded inside the pragma) */
#define MUON__PAR(nt, work) num_threads(nt) if ((nt) > 1 && (double)(work) >= MUON__PAR_MIN && muon__gate(nt) > 1)

/* Finiteness from the bits (memcpy into an integer): stays correct under -ffast-math, which
 * lets the compiler assume no NaN/Inf and fold x != x, isfinite(), fabsf(x) <= FLT_MAX and the
 * NaN outcome of !(a <= b) away. Every NaN/Inf test of this file goes through these; a
 * comparison is used only on a value these have shown not NaN. */
static int muon__u_isfinite(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return (b & 0x7FF0000000000000ULL) != 0x7FF0000000000000ULL;
}
/* |x| as bits (unsigned order = order of |x|; Inf 0x7F800000, NaN above) */
static uint32_t muon__u_absbits(float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    return b & 0x7FFFFFFFu;
}
static int muon__u_isfinitef(float x) { return muon__u_absbits(x) < 0x7F800000u; }
/* |x| <= FLT_MAX (x fits a float, NaN does not): unsigned order of |x|'s bits */
static int muon__u_fits_float(double x)
{
    const double fmax = (double)FLT_MAX;
    uint64_t b, m;
    memcpy(&b, &x, sizeof b);
    memcpy(&m, &fmax, sizeof m);
    return (b & 0x7FFFFFFFFFFFFFFFULL) <= m;
}
static int muon__u_isnan(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return (b & 0x7FFFFFFFFFFFFFFFULL) > 0x7FF0000000000000ULL;
}
/* x <= bound, false for NaN (bound not NaN) */
static int muon__u_le(double x, double bound) { return !muon__u_isnan(x) && x <= bound; }
/* 0 <= x < 1 (a decay rate), false for NaN */
static int muon__u_rate(double x) { return muon__u_isfinite(x) && x >= 0.0 && x < 1.0; }

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

/* The vector layer. Lanes: MUON__VW floats (16, 8, 4, 1), MUON__VD = MUON__VW / 2 doubles
 * (8, 4, 2; the scalar form 1). Loads and stores are unaligned. */
#if defined(MUON__GEMM_AVX512)
#define MUON__VW 16
#define MUON__VD 8
typedef __m512 muon__vf;
typedef __m512d muon__vd;
typedef __m512i muon__vu;
#define muon__vf_load(p) _mm512_loadu_ps(p)
#define muon__vf_store(p, v) _mm512_storeu_ps((p), (v))
#define muon__vf_set1(x) _mm512_set1_ps(x)
#define muon__vf_fma(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define muon__vd_loadf(p) _mm512_cvtps_pd(_mm256_loadu_ps(p))
#define muon__vd_storef(p, v) _mm256_storeu_ps((p), _mm512_cvtpd_ps(v))
#define muon__vd_load(p) _mm512_loadu_pd(p)
#define muon__vd_store(p, v) _mm512_storeu_pd((p), (v))
#define muon__vd_set1(x) _mm512_set1_pd(x)
#define muon__vd_zero() _mm512_setzero_pd()
#define muon__vd_add(a, b) _mm512_add_pd((a), (b))
#define muon__vd_sub(a, b) _mm512_sub_pd((a), (b))
#define muon__vd_mul(a, b) _mm512_mul_pd((a), (b))
#define muon__vd_div(a, b) _mm512_div_pd((a), (b))
#define muon__vd_sqrt(a) _mm512_sqrt_pd(a)
#define muon__vd_min(a, b) _mm512_min_pd((a), (b)) /* (b where a is NaN: callers pass no NaN) */
#define muon__vu_zero() _mm512_setzero_si512()
#define muon__vu_absmax(m, v) _mm512_max_epu32((m), _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7fffffff)))
#define muon__vu_bitsmax(m, v) _mm512_max_epu32((m), _mm512_castps_si512(v))
#define muon__vu_store(p, m) _mm512_storeu_si512((void *)(p), (m))
/* bf16 rounding of every lane: muon__bf16_round's integer form, the same bits (NaN included) */
static MUON__ALWAYS_INLINE muon__vf muon__vf_bf16(muon__vf x)
{
    __m512i u = _mm512_castps_si512(x);
    __m512i r = _mm512_and_si512(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)),
                                                  _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1))),
                                 _mm512_set1_epi32((int)0xffff0000u));
    __mmask16 normal = _mm512_test_epi32_mask(u, _mm512_set1_epi32(0x7f800000));
    __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
    r = _mm512_mask_blend_epi32(nan, r, _mm512_and_si512(_mm512_or_si512(u, _mm512_set1_epi32(0x00400000)),
                                                          _mm512_set1_epi32((int)0xffff0000u)));
    return _mm512_castsi512_ps(
        _mm512_mask_blend_epi32(normal, _mm512_and_si512(u, _mm512_set1_epi32((int)0x80000000u)), r));
}
#elif defined(MUON__GEMM_AVX2)
#define MUON__VW 8
#define MUON__VD 4
typedef __m256 muon__vf;
typedef __m256d muon__vd;
typedef __m256i muon__vu;
#define muon__vf_load(p) _mm256_loadu_ps(p)
#define muon__vf_store(p, v) _mm256_storeu_ps((p), (v))
#define muon__vf_set1(x) _mm256_set1_ps(x)
#define muon__vf_fma(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define muon__vd_loadf(p) _mm256_cvtps_pd(_mm_loadu_ps(p))
#define muon__vd_storef(p, v) _mm_storeu_ps((p), _mm256_cvtpd_ps(v))
#define muon__vd_load(p) _mm256_loadu_pd(p)
#define muon__vd_store(p, v) _mm256_storeu_pd((p), (v))
#define muon__vd_set1(x) _mm256_set1_pd(x)
#define muon__vd_zero() _mm256_setzero_pd()
#define muon__vd_add(a, b) _mm256_add_pd((a), (b))
#define muon__vd_sub(a, b) _mm256_sub_pd((a), (b))
#define muon__vd_mul(a, b) _mm256_mul_pd((a), (b))
#define muon__vd_div(a, b) _mm256_div_pd((a), (b))
#define muon__vd_sqrt(a) _mm256_sqrt_pd(a)
#define muon__vd_min(a, b) _mm256_min_pd((a), (b))
#define muon__vu_zero() _mm256_setzero_si256()
#define muon__vu_absmax(m, v) _mm256_max_epu32((m), _mm256_and_si256(_mm256_castps_si256(v), _mm256_set1_epi32(0x7fffffff)))
#define muon__vu_bitsmax(m, v) _mm256_max_epu32((m), _mm256_castps_si256(v))
#define muon__vu_store(p, m) _mm256_storeu_si256((__m256i *)(void *)(p), (m))
static MUON__ALWAYS_INLINE muon__vf muon__vf_bf16(muon__vf x)
{
    const __m256i hi = _mm256_set1_epi32((int)0xffff0000u);
    __m256i u = _mm256_castps_si256(x);
    __m256i r = _mm256_and_si256(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)),
                                                  _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1))), hi);
    /* |u| > Inf as signed 32-bit compares (both sides below 2^31) */
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
    __m256i tiny = _mm256_cmpeq_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7f800000)), _mm256_setzero_si256());
    r = _mm256_blendv_epi8(r, _mm256_and_si256(_mm256_or_si256(u, _mm256_set1_epi32(0x00400000)), hi), nan);
    return _mm256_castsi256_ps(_mm256_blendv_epi8(r, _mm256_and_si256(u, _mm256_set1_epi32((int)0x80000000u)), tiny));
}
#elif defined(MUON__GEMM_NEON)
#define MUON__VW 4
#define MUON__VD 2
typedef float32x4_t muon__vf;
typedef float64x2_t muon__vd;
typedef uint32x4_t muon__vu;
#define muon__vf_load(p) vld1q_f32(p)
#define muon__vf_store(p, v) vst1q_f32((p), (v))
#define muon__vf_set1(x) vdupq_n_f32(x)
#define muon__vf_fma(a, b, c) vfmaq_f32((c), (a), (b))
#define muon__vd_loadf(p) vcvt_f64_f32(vld1_f32(p))
#define muon__vd_storef(p, v) vst1_f32((p), vcvt_f32_f64(v))
#define muon__vd_load(p) vld1q_f64(p)
#define muon__vd_store(p, v) vst1q_f64((p), (v))
#define muon__vd_set1(x) vdupq_n_f64(x)
#define muon__vd_zero() vdupq_n_f64(0.0)
#define muon__vd_add(a, b) vaddq_f64((a), (b))
#define muon__vd_sub(a, b) vsubq_f64((a), (b))
#define muon__vd_mul(a, b) vmulq_f64((a), (b))
#define muon__vd_div(a, b) vdivq_f64((a), (b))
#define muon__vd_sqrt(a) vsqrtq_f64(a)
#define muon__vd_min(a, b) vminq_f64((a), (b))
#define muon__vu_zero() vdupq_n_u32(0)
#define muon__vu_absmax(m, v) vmaxq_u32((m), vandq_u32(vreinterpretq_u32_f32(v), vdupq_n_u32(0x7fffffffu)))
#define muon__vu_bitsmax(m, v) vmaxq_u32((m), vreinterpretq_u32_f32(v))
#define muon__vu_store(p, m) vst1q_u32((p), (m))
static MUON__ALWAYS_INLINE muon__vf muon__vf_bf16(muon__vf x)
{
    const uint32x4_t hi = vdupq_n_u32(0xffff0000u);
    uint32x4_t u = vreinterpretq_u32_f32(x);
    uint32x4_t r = vandq_u32(vaddq_u32(vaddq_u32(u, vdupq_n_u32(0x7fffu)), vandq_u32(vshrq_n_u32(u, 16), vdupq_n_u32(1u))), hi);
    uint32x4_t nan = vcgtq_u32(vandq_u32(u, vdupq_n_u32(0x7fffffffu)), vdupq_n_u32(0x7f800000u));
    uint32x4_t normal = vtstq_u32(u, vdupq_n_u32(0x7f800000u));
    r = vbslq_u32(nan, vandq_u32(vorrq_u32(u, vdupq_n_u32(0x00400000u)), hi), r);
    return vreinterpretq_f32_u32(vbslq_u32(normal, r, vandq_u32(u, vdupq_n_u32(0x80000000u))));
}
#else
#define MUON__VW 1
#define MUON__VD 1
typedef float muon__vf;
typedef double muon__vd;
typedef uint32_t muon__vu;
#define muon__vf_load(p) (*(p))
#define muon__vf_store(p, v) (*(p) = (v))
#define muon__vf_set1(x) (x)
#define muon__vf_fma(a, b, c) fmaf((a), (b), (c))
#define muon__vd_loadf(p) ((double)*(p))
#define muon__vd_storef(p, v) (*(p) = (float)(v))
#define muon__vd_load(p) (*(p))
#define muon__vd_store(p, v) (*(p) = (v))
#define muon__vd_set1(x) ((double)(x))
#define muon__vd_zero() 0.0
#define muon__vd_add(a, b) ((a) + (b))
#define muon__vd_sub(a, b) ((a) - (b))
#define muon__vd_mul(a, b) ((a) * (b))
#define muon__vd_div(a, b) ((a) / (b))
#define muon__vd_sqrt(a) sqrt(a)
#define muon__vd_min(a, b) ((a) < (b) ? (a) : (b))
#define muon__vu_zero() 0u
#define muon__vu_absmax(m, v) muon__vu_absmax1((m), (v), 0x7fffffffu)
#define muon__vu_bitsmax(m, v) muon__vu_absmax1((m), (v), 0xffffffffu)
#define muon__vu_store(p, m) (*(p) = (m))
static MUON__ALWAYS_INLINE uint32_t muon__vu_absmax1(uint32_t m, float v, uint32_t mask)
{
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    b &= mask;
    return b > m ? b : m;
}
#define muon__vf_bf16(x) muon__bf16_round(x)
#endif

#if defined(MUON__GEMM_AVX512) || defined(MUON__GEMM_AVX2)
/* 8 rows x 8 values -> 8 vectors of 8 rows each, stored at dst + c*width (c = 0..7). */
static void muon__v_tr8x8(const float *src, size_t ld, float *dst, size_t width)
{
    __m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + ld), r2 = _mm256_loadu_ps(src + 2 * ld);
    __m256 r3 = _mm256_loadu_ps(src + 3 * ld), r4 = _mm256_loadu_ps(src + 4 * ld);
    __m256 r5 = _mm256_loadu_ps(src + 5 * ld), r6 = _mm256_loadu_ps(src + 6 * ld);
    __m256 r7 = _mm256_loadu_ps(src + 7 * ld);
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    _mm256_storeu_ps(dst, _mm256_permute2f128_ps(s0, s4, 0x20));
    _mm256_storeu_ps(dst + width, _mm256_permute2f128_ps(s1, s5, 0x20));
    _mm256_storeu_ps(dst + 2 * width, _mm256_permute2f128_ps(s2, s6, 0x20));
    _mm256_storeu_ps(dst + 3 * width, _mm256_permute2f128_ps(s3, s7, 0x20));
    _mm256_storeu_ps(dst + 4 * width, _mm256_permute2f128_ps(s0, s4, 0x31));
    _mm256_storeu_ps(dst + 5 * width, _mm256_permute2f128_ps(s1, s5, 0x31));
    _mm256_storeu_ps(dst + 6 * width, _mm256_permute2f128_ps(s2, s6, 0x31));
    _mm256_storeu_ps(dst + 7 * width, _mm256_permute2f128_ps(s3, s7, 0x31));
}
/* 4 rows x 4 values -> 4 vectors of 4 rows each, at dst + c*width (the AVX2 kernel's 6-row A) */
static void muon__v_tr4x4(const float *src, size_t ld, float *dst, size_t width)
{
    __m128 r0 = _mm_loadu_ps(src), r1 = _mm_loadu_ps(src + ld), r2 = _mm_loadu_ps(src + 2 * ld);
    __m128 r3 = _mm_loadu_ps(src + 3 * ld);
    _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
    _mm_storeu_ps(dst, r0);
    _mm_storeu_ps(dst + width, r1);
    _mm_storeu_ps(dst + 2 * width, r2);
    _mm_storeu_ps(dst + 3 * width, r3);
}
#define MUON__GEMM_HAVE_TR8 1
#else
/* the same transposes element by element (every other build) */
static MUON__GEMM_UNUSED void muon__v_tr8x8(const float *src, size_t ld, float *dst, size_t width)
{
    size_t r, c;
    for (r = 0; r < 8; r++)
        for (c = 0; c < 8; c++) dst[c * width + r] = src[r * ld + c];
}
#endif
/* dst[c * width + r] = (float)((double)src[r * ld + c] * inv), r, c < 8: a scaled transposing
 * copy, each element one double product rounded once (the same bits on every path) */
static MUON__GEMM_UNUSED void muon__v_tr8x8_scaled(const float *src, size_t ld, double inv, float *dst, size_t width)
{
#ifdef MUON__GEMM_HAVE_TR8
    const __m256d vi = _mm256_set1_pd(inv);
    float tmp[64];
    size_t r;
    for (r = 0; r < 8; r++) {
        const float *g = src + r * ld;
        _mm_storeu_ps(tmp + 8 * r, _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(g)), vi)));
        _mm_storeu_ps(tmp + 8 * r + 4, _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(g + 4)), vi)));
    }
    muon__v_tr8x8(tmp, 8, dst, width);
#else
    size_t r, c;
    for (r = 0; r < 8; r++)
        for (c = 0; c < 8; c++) dst[c * width + r] = (float)((double)src[r * ld + c] * inv);
#endif
}

/* bf16 rounding, the scalar reference (the rule is described under "bf16 products") */
static float muon__bf16_round(float x)
{
    uint32_t u;
    uint32_t r;
    memcpy(&u, &x, sizeof u);
    r = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: quieted and truncated, as vcvtne2ps2bf16 does (the */
        r = (u | 0x00400000u) & 0xffff0000u; /* carry above would turn a full payload into zero or Inf) */
    u = (u & 0x7f800000u) ? r : (u & 0x80000000u); /* zero or subnormal: signed zero */
    memcpy(&x, &u, sizeof x);
    return x;
}

/* The caches of this CPU (bytes; 0: unknown), which the products' cache blocks follow
 * (muon__gemm_cache_blocks, under "Cache blocking"): l1d and l2 of one core, l3 of the one the
 * core shares, each as one instance of the cache reports it (not divided among the cores or
 * threads that share it). Read once per process, by the first thread that asks:
 *   x86 (GCC and clang through <cpuid.h>, MSVC through __cpuidex): the deterministic cache
 *     parameters, cpuid leaf 4 (Intel) or, where it lists none, 0x8000001D (AMD);
 *   else, or where cpuid named no L2, glibc's sysconf (_SC_LEVEL1_DCACHE_SIZE, ...), and macOS's
 *     sysctlbyname (hw.l1dcachesize, hw.l2cachesize, hw.l3cachesize);
 *   anywhere else (a microcontroller, another compiler): unknown, and every kernel keeps its
 *     fixed blocks (the values before the caches were read: MC 1008, NC 512).
 * The answer is one 64-bit word (sizes in KB), set once with a compare-and-swap (GCC's __atomic
 * builtins, MSVC's _InterlockedCompareExchange64; where neither is lock-free nothing is read and
 * the caches stay unknown): threads that race the first read each compute it, the first to
 * store wins and all of them use the stored word, so every workspace query and every product
 * of a process sees the same caches, even on a CPU whose cores differ (the caches of the core
 * that asked first). No environment variable; the tests force sizes with muon__caches_force. */
typedef struct muon__caches {
    size_t l1d, l2, l3;
} muon__caches;
#if (defined(__GNUC__) || defined(__clang__)) && defined(__GCC_ATOMIC_LLONG_LOCK_FREE) && \
    __GCC_ATOMIC_LLONG_LOCK_FREE == 2
#define MUON__CACHES_ATOMIC 1
#elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_IX86) || defined(_M_ARM64))
#define MUON__CACHES_ATOMIC 2
#include <intrin.h>
#endif
#ifdef MUON__CACHES_ATOMIC
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>
#define MUON__CACHES_CPUID(leaf, sub, r) __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3])
#elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_IX86))
#define MUON__CACHES_CPUID(leaf, sub, r) __cpuidex((int *)(r), (int)(leaf), (int)(sub))
#endif
#if defined(__linux__) && defined(__GLIBC__)
#include <unistd.h>
#define MUON__CACHES_SYSCONF 1
#elif defined(__APPLE__)
#include <sys/sysctl.h>
#define MUON__CACHES_SYSCTL 1
#endif
#endif
#define MUON__CACHES_SET (1ull << 63) /* the word holds an answer (whose sizes may all be 0) */
static unsigned long long muon__caches_word; /* 0: not read yet */
/* sizes <-> the word: l1d KB in bits 0-15, l2 KB in 16-35, l3 KB in 36-62 (larger: clamped) */
static unsigned long long muon__caches_pack(const muon__caches *c)
{
    unsigned long long a = c->l1d / 1024, b = c->l2 / 1024, d = c->l3 / 1024;
    if (a > 0xffffull) a = 0xffffull;
    if (b > 0xfffffull) b = 0xfffffull;
    if (d > 0x7ffffffull) d = 0x7ffffffull;
    return MUON__CACHES_SET | a | b << 16 | d << 36;
}
static size_t muon__caches_bytes(unsigned long long kb)
{
    return kb > (unsigned long long)(SIZE_MAX / 1024) ? SIZE_MAX : (size_t)kb * 1024;
}
static MUON__ALWAYS_INLINE muon__caches muon__caches_unpack(unsigned long long w)
{
    muon__caches c;
    c.l1d = muon__caches_bytes(w & 0xffffull);
    c.l2 = muon__caches_bytes(w >> 16 & 0xfffffull);
    c.l3 = muon__caches_bytes(w >> 36 & 0x7ffffffull);
    return c;
}
#ifdef MUON__CACHES_CPUID
/* cpuid's deterministic cache parameters from `leaf` (4 or 0x8000001D): size of each data or
 * unified cache at levels 1-3 = ways x partitions x line x sets */
static MUON__ALWAYS_INLINE void muon__caches_cpuid(unsigned leaf, muon__caches *c)
{
    unsigned r[4], sub;
    for (sub = 0; sub < 16; sub++) {
        unsigned type, level;
        size_t bytes;
        MUON__CACHES_CPUID(leaf, sub, r);
        type = r[0] & 31u, level = r[0] >> 5 & 7u;
        if (type == 0) break; /* no more caches */
        if (type == 2) continue; /* instructions */
        bytes = (size_t)((r[1] >> 22) + 1) * ((r[1] >> 12 & 0x3ffu) + 1) * ((r[1] & 0xfffu) + 1) * ((size_t)r[2] + 1);
        if (level == 1) c->l1d = bytes;
        if (level == 2) c->l2 = bytes;
        if (level == 3) c->l3 = bytes;
    }
}
#endif
#ifdef MUON__CACHES_SYSCTL
static MUON__ALWAYS_INLINE size_t muon__caches_sysctl(const char *name)
{
    unsigned long long v = 0; /* (a 4-byte answer fills the low half: both Apple ISAs are little endian) */
    size_t len = sizeof v;
    return sysctlbyname(name, &v, &len, MUON__NULL, 0) == 0 ? (size_t)v : 0;
}
#endif
#ifdef MUON__CACHES_ATOMIC
/* The first read: this CPU's caches as the CPU or the OS reports them (zeros where nothing
 * does), stored unless another thread stored its answer first; returns the word stored. (One
 * frame, the helpers inlined: it lies under every size query's stack path, tests/stack_budget.txt.) */
static MUON__NOINLINE unsigned long long muon__caches_first(void)
{
    muon__caches c;
    unsigned long long mine;
    c.l1d = c.l2 = c.l3 = 0;
#ifdef MUON__CACHES_CPUID
    {
        unsigned r[4];
        MUON__CACHES_CPUID(0u, 0u, r);
        if (r[0] >= 4) muon__caches_cpuid(4u, &c);
        MUON__CACHES_CPUID(0x80000000u, 0u, r);
        if (!c.l2 && r[0] >= 0x8000001Du) muon__caches_cpuid(0x8000001Du, &c);
    }
#endif
#ifdef MUON__CACHES_SYSCONF
    if (!c.l2) {
        long a = sysconf(_SC_LEVEL1_DCACHE_SIZE), b = sysconf(_SC_LEVEL2_CACHE_SIZE), d = sysconf(_SC_LEVEL3_CACHE_SIZE);
        c.l1d = a > 0 ? (size_t)a : 0;
        c.l2 = b > 0 ? (size_t)b : 0;
        c.l3 = d > 0 ? (size_t)d : 0;
    }
#endif
#ifdef MUON__CACHES_SYSCTL
    if (!c.l2) {
        c.l1d = muon__caches_sysctl("hw.l1dcachesize");
        c.l2 = muon__caches_sysctl("hw.l2cachesize");
        c.l3 = muon__caches_sysctl("hw.l3cachesize");
    }
#endif
    mine = muon__caches_pack(&c);
#if MUON__CACHES_ATOMIC == 1
    {
        unsigned long long was = 0;
        if (!__atomic_compare_exchange_n(&muon__caches_word, &was, mine, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            mine = was; /* another thread's answer came first */
    }
#else
    {
        __int64 was = _InterlockedCompareExchange64((volatile __int64 *)(void *)&muon__caches_word, (__int64)mine, 0);
        if (was) mine = (unsigned long long)was;
    }
#endif
    return mine;
}
#endif
/* The process's caches: read on the first call, the same answer on every later one */
static MUON__ALWAYS_INLINE muon__caches muon__caches_get(void)
{
#if MUON__CACHES_ATOMIC == 1
    unsigned long long w = __atomic_load_n(&muon__caches_word, __ATOMIC_ACQUIRE);
    if (!w) w = muon__caches_first();
#elif MUON__CACHES_ATOMIC == 2
    unsigned long long w = (unsigned long long)_InterlockedCompareExchange64(
        (volatile __int64 *)(void *)&muon__caches_word, 0, 0); /* an atomic read */
    if (!w) w = muon__caches_first();
#else
    unsigned long long w = muon__caches_word; /* (written by muon__caches_force only) */
#endif
    return muon__caches_unpack(w);
}
/* The tests' hook: the caches every later product and size query of this process uses (sizes in
 * whole KB), or, with c NULL, those of the CPU again (read on the next call). Not for a process
 * with products or workspaces in flight: a workspace sized before the change may be too small
 * after it (the _ws entry points then return MUON_ERR_SIZE). */
static MUON__GEMM_UNUSED void muon__caches_force(const muon__caches *c)
{
    unsigned long long w = c ? muon__caches_pack(c) : 0;
#if MUON__CACHES_ATOMIC == 1
    __atomic_store_n(&muon__caches_word, w, __ATOMIC_RELEASE);
#elif MUON__CACHES_ATOMIC == 2
    volatile __int64 *p = (volatile __int64 *)(void *)&muon__caches_word;
    __int64 was;
    do was = *p; /* (a torn read only fails the swap) */
    while (_InterlockedCompareExchange64(p, (__int64)w, was) != was);
#else
    muon__caches_word = w;
#endif
}

/* Problems below this many multiply-adds (m*n*k; default 128^3, about 40 us of one core) run
 * on the calling thread without forking a team. */
#ifndef MUON_GEMM_PARALLEL_MIN
#define MUON_GEMM_PARALLEL_MIN 2097152.0
#endif

/* ---- threads on a shared machine ----------------------------------------------------------
 * A team region ends when its slowest member does. On a machine with other work (a second
 * experiment beside this one, a test suite, busy processes) a member may wait a scheduler time
 * slice (milliseconds) to run, and under OpenMP's default wait policy the members that arrived
 * spin meanwhile, taking the cores the late one needs: a step of many short regions then runs
 * 2-100x slower than on one thread (issue 40, bench/host_share.c). So the library watches its
 * own team regions: the products' regions record when their last member started and their first
 * finished. When 40 % of 30 ms of team-region time was lost that way the machine is short of
 * cores, and the library's regions run on their calling thread for 20 ms, twice as long each
 * time the team is held up again soon after (at most 1 s), then try the team again. Nothing of the host's is changed (no omp_set_*, no environment); results do not
 * depend on the team (every product and pass computes each element the same on any thread), so
 * only the speed changes. The state is four doubles per process, read and written with OpenMP
 * atomics (a host may step from several threads). It needs OpenMP 3.1 (min/max reductions,
 * atomic read/write); older runtimes (MSVC's /openmp, 2.0) keep the team always.
 * muon_team() gives a host's own regions the same answer. */
#if defined(_OPENMP) && _OPENMP >= 201107
#define MUON__GATE_WINDOW 0.03    /* team-region seconds judged together */
#define MUON__GATE_LOST_FRAC 0.4   /* lost share of them that marks the team held up */
#define MUON__GATE_SOLO_MIN 0.02   /* the first one-thread period (s) */
#define MUON__GATE_SOLO_MAX 1.0    /* the longest */
#define MUON__GATE_RETRY 0.5       /* held up within (span + this) after a period ended: the next doubles */
static double muon__gate_until; /* omp_get_wtime() before which regions run on one thread */
static double muon__gate_span;  /* length of the last one-thread period */
static double muon__gate_wall;  /* team-region seconds since the last verdict */
static double muon__gate_lost;  /* ... and the seconds their members lost in them */

/* The team for a region that wants nt threads: nt, or 1 during a one-thread period. */
static int muon__gate(int nt)
{
    double until;
    if (nt <= 1) return nt;
    MUON__OMP(omp atomic read)
    until = muon__gate_until;
    return until > 0.0 && omp_get_wtime() < until ? 1 : nt;
}

/* After a team region that the calling thread forked at t0, whose members started by `last_in`
 * (the latest start) and began to wait from `first_out` (the earliest finish). */
static void muon__gate_note(double t0, double last_in, double first_out)
{
    double t1 = omp_get_wtime(), lost = (last_in - t0) + (t1 - first_out), wall = t1 - t0, span, until;
    MUON__OMP(omp atomic)
    muon__gate_lost += lost;
    MUON__OMP(omp atomic)
    muon__gate_wall += wall;
    MUON__OMP(omp atomic read)
    wall = muon__gate_wall;
    if (wall < MUON__GATE_WINDOW) return;
    MUON__OMP(omp atomic read)
    lost = muon__gate_lost;
    MUON__OMP(omp atomic write)
    muon__gate_wall = 0.0;
    MUON__OMP(omp atomic write)
    muon__gate_lost = 0.0;
    if (!(lost > MUON__GATE_LOST_FRAC * wall)) return;
    MUON__OMP(omp atomic read)
    span = muon__gate_span;
    MUON__OMP(omp atomic read)
    until = muon__gate_until;
    /* held up again soon after the last period ended: twice as long; else the shortest */
    if (until > 0.0 && t1 - until < span + MUON__GATE_RETRY)
        span = 2.0 * span > MUON__GATE_SOLO_MAX ? MUON__GATE_SOLO_MAX : 2.0 * span;
    else
        span = MUON__GATE_SOLO_MIN;
    MUON__OMP(omp atomic write)
    muon__gate_span = span;
    MUON__OMP(omp atomic write)
    muon__gate_until = t1 + span;
}
/* A watched region: MUON__GATE_VARS declares the forking function's locals (the fork time, the
 * latest start, the earliest finish, the team size), MUON__GATE_CLAUSES reduces them, each
 * member calls MUON__GATE_IN() first and MUON__GATE_OUT() last, and MUON__GATE_NOTE() after the
 * region judges it (a region that ran on one thread says nothing). */
#define MUON__GATE_VARS double gate_t0 = omp_get_wtime(), gate_in = gate_t0, gate_out = 1e300; int gate_n = 0
#define MUON__GATE_CLAUSES reduction(max : gate_in) reduction(min : gate_out) reduction(+ : gate_n)
#define MUON__GATE_IN() (gate_in = omp_get_wtime(), gate_n = 1)
#define MUON__GATE_OUT() (gate_out = omp_get_wtime())
#define MUON__GATE_NOTE() (gate_n > 1 ? muon__gate_note(gate_t0, gate_in, gate_out) : (void)0)
#else
#define MUON__GATE_VARS int gate_unused = 0
#define MUON__GATE_CLAUSES
#define MUON__GATE_IN() ((void)0)
#define MUON__GATE_OUT() ((void)0)
#define MUON__GATE_NOTE() ((void)gate_unused)
static int muon__gate(int nt) { return nt; }
#endif

/* The team for work of `mnk` multiply-adds: `cap` threads (<= 0: the OpenMP default), one when
 * nested or below MUON_GEMM_PARALLEL_MIN. */
static int muon__threads_for(double mnk, int cap)
{
    int t = 1;
#ifdef _OPENMP
    t = cap > 0 ? cap : omp_get_max_threads();
    if (omp_get_active_level() >= omp_get_max_active_levels()) t = 1; /* nested: no more threads */
#else
    (void)cap;
#endif
    if (mnk < MUON_GEMM_PARALLEL_MIN) t = 1;
    if (t < 1) t = 1;
    return muon__gate(t);
}
/* a host's region: the products' rule without their size threshold */
MUONDEF int muon_team(int threads) { return muon__threads_for(MUON_GEMM_PARALLEL_MIN, threads); }

/* an explicit team size, at most the OpenMP default: the workspaces hold packing space for that
 * many threads (a larger team would fall back in the products anyway), and a hostile count
 * must not make the runtime try to start millions of threads */
static int muon__u_threads_cap(int n)
{
#ifdef _OPENMP
    int p = omp_get_max_threads();
    if (p >= 1 && n > p) n = p;
#endif
    return n < 1 ? 1 : n;
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


/* The workspace carve: 64-byte aligned regions taken in order from one caller buffer (after
 * aligning its base), or counted by a size query (base MUON__NULL) with the same calls, so that
 * a size query and the code that lays its workspace out are one sequence and cannot drift. */
typedef struct muon__carve {
    unsigned char *p; /* the next region (MUON__NULL in a size query) */
    size_t used;      /* bytes from the buffer's start, the alignment's slack included */
    int ok;           /* 0 once a size overflowed */
} muon__carve;
/* base MUON__NULL: a size query (the worst alignment slack, MUON__ALIGN, counted) */
static MUON__ALWAYS_INLINE muon__carve muon__carve_begin(void *base)
{
    muon__carve c;
    c.p = base ? muon__u_align_ptr(base) : (unsigned char *)MUON__NULL;
    c.used = base ? (size_t)(c.p - (unsigned char *)base) : (size_t)MUON__ALIGN;
    c.ok = 1;
    return c;
}
/* the next region of `bytes` (rounded up to MUON__ALIGN): where it starts (MUON__NULL in a size query) */
static MUON__ALWAYS_INLINE unsigned char *muon__carve_take(muon__carve *c, size_t bytes)
{
    size_t r = muon__u_round(bytes);
    unsigned char *at = c->p;
    if (!c->ok || (r == 0 && bytes != 0) || !muon__u_add(c->used, r, &c->used)) {
        c->ok = 0;
        return MUON__NULL;
    }
    if (c->p) c->p += r;
    return at;
}
/* the size so far: 0 on overflow */
static MUON__ALWAYS_INLINE size_t muon__carve_size(const muon__carve *c) { return c->ok ? c->used : 0; }

/* every entry of A (rows x cols, ld) finite: the largest |bits| of each row below Inf's */
static MUON__NOINLINE int muon__u_finite_matrix(const float *A, size_t rows, size_t cols, size_t ld)
{
    size_t i, j;
    for (i = 0; i < rows; i++) {
        const float *a = A + i * ld;
        muon__vu m = muon__vu_zero();
        uint32_t lanes[MUON__VW], big = 0;
        int q;
        for (j = 0; j + MUON__VW <= cols; j += MUON__VW) m = muon__vu_absmax(m, muon__vf_load(a + j));
        muon__vu_store(lanes, m);
        for (q = 0; q < MUON__VW; q++) big = lanes[q] > big ? lanes[q] : big;
        for (; j < cols; j++) {
            uint32_t b = muon__u_absbits(a[j]);
            big = b > big ? b : big;
        }
        if (big >= 0x7F800000u) return 0;
    }
    return 1;
}

/* ||A||_F^2 in double: eight partial sums (element j of a row goes to sum j mod 8), rows in
 * order, added pairwise at the end; a fixed order on every ISA and thread count (x*x is exact
 * in double, so a lane's sum is the same whether its product is fused or not), and eight
 * independent additions per step instead of one chain of them (the one chain cost a 768 x 3072
 * bf16 NS a tenth of its time). The eight lanes are 8 / MUON__VD vectors of the layer. */
#define MUON__SQ_V (8 / MUON__VD)
static MUON__NOINLINE double muon__u_sumsq(const float *A, size_t rows, size_t cols, size_t ld)
{
    double s[8];
    muon__vd v[MUON__SQ_V];
    size_t i, j, q;
    for (q = 0; q < MUON__SQ_V; q++) v[q] = muon__vd_zero();
    for (i = 0; i < rows; i++) {
        const float *a = A + i * ld;
        for (j = 0; j + 8 <= cols; j += 8)
            for (q = 0; q < MUON__SQ_V; q++) {
                muon__vd x = muon__vd_loadf(a + j + q * MUON__VD);
                v[q] = muon__vd_add(v[q], muon__vd_mul(x, x));
            }
        if (j < cols) {
            for (q = 0; q < MUON__SQ_V; q++) muon__vd_store(s + q * MUON__VD, v[q]);
            for (q = 0; j < cols; j++, q++) s[q] += (double)a[j] * (double)a[j];
            for (q = 0; q < MUON__SQ_V; q++) v[q] = muon__vd_load(s + q * MUON__VD);
        }
    }
    for (q = 0; q < MUON__SQ_V; q++) muon__vd_store(s + q * MUON__VD, v[q]);
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

/* X[i] = bf16(fma(a, X[i], Y[i])) for i in [i0, i1) (a = 0, Y = 0: X = bf16(X)): the vector
 * rounding is muon__bf16_round's integer form and the FMA rounds once, as fmaf, so every build
 * gives the same bits. */
static void muon__bf16_axpy(ptrdiff_t i0, ptrdiff_t i1, float a, float *X, const float *Y)
{
    ptrdiff_t i = i0;
    const muon__vf va = muon__vf_set1(a);
    if (Y)
        for (; i + MUON__VW <= i1; i += MUON__VW)
            muon__vf_store(X + i, muon__vf_bf16(muon__vf_fma(va, muon__vf_load(X + i), muon__vf_load(Y + i))));
    else
        for (; i + MUON__VW <= i1; i += MUON__VW) muon__vf_store(X + i, muon__vf_bf16(muon__vf_load(X + i)));
    for (; i < i1; i++) X[i] = muon__bf16_round(Y ? fmaf(a, X[i], Y[i]) : X[i]);
}

/* ---- SGEMM / SSYRK (row-major) ---------------------------------------------------------
 * Serves SPEC.md 2.1: per Newton-Schulz
 * step A = X X^T (SSYRK), A A (SSYRK: A is symmetric), B X (SGEMM).
 *
 * Layering (BLIS): cache blocking -> packing -> register-blocked micro-kernel.
 *   threads split C: SSYRK by rows (whole MR micro-panels, equal triangle area); GEMM by rows
 *   when m >= n, else by NR column panels (the operand repacked by every thread is the smaller)
 *   per thread, for i0 over its rows in blocks of <= MC  (own packed A panel mc x kc)
 *     for p0 over k in blocks of KC                     (split fixed by k alone)
 *       pack A panel; for j0 over its columns in blocks of NC (SSYRK: left of the block only)
 *         pack B block kc x nc                          (own; sits in L2)
 *         for each MR-row micro-panel of A              (MR x kc: stays in L1)
 *           for each NR-column micro-panel of B         (kc x NR: streamed from L2)
 *             micro-kernel: MR x NR tile of C in registers, kc rank-1 updates, then
 *             C = alpha * tile + beta * C (beta = 1 after the first k block)
 * No data is shared between threads and there is no barrier (a 2-core machine shared with
 * other jobs punishes every barrier); the price is one operand packed by every thread.
 * Determinism: tiles start on multiples of MR / NR from C's origin whatever the thread count,
 * and each element's k-order is fixed by the k split, so results are bit-identical for every
 * thread count and for every workspace size. (Different kernels - AVX-512 vs AVX2 vs scalar -
 * and MUON_USE_CBLAS round differently.)
 * SSYRK computes only tiles touching the lower triangle (diagonal tiles through a masked
 * store), then each thread mirrors its finished rows into the upper triangle, which no tile
 * writes: C == C^T bitwise, about half the GEMM's flops.
 *
 * Micro-kernels (row-major C tile MR x NR; per k step: NR/VL vector loads of packed B,
 * MR broadcasts of packed A, MR*NR/VL FMAs):
 *   AVX-512F  14 x 32: 28 zmm accumulators + 2 B vectors + 1 broadcast = 31 of 32 zmm;
 *                      28 independent FMAs per k step cover 2 FMA ports x 4 cycles latency
 *                      3.5 times over; 16 loads per 28 FMAs (the load ports are not the limit).
 *                      NR = 32 divides every NS width (768, 1024, 2048, 3072, 4096).
 *   AVX2+FMA   6 x 16: 12 ymm accumulators + 2 B + 1 broadcast = 15 of 16 ymm.
 *   NEON       8 x  8: 16 q accumulators + 2 B + 2 A (lane-indexed vfmaq_laneq_f32), AArch64.
 *   scalar     4 x  8: plain C, compiled always (the reference; MUON_NO_SIMD selects it).
 * Packing turns all four transposes into one layout; the two strided cases (op(A) = A,
 * op(B) = B^T) go through 8 x 8 AVX transposes on x86 (16 x 16 with AVX-512 where the panel is a
 * multiple of 16 wide). SSYRK with the AVX-512, AVX2 or NEON kernel packs its operand once and
 * reads the A micro-panels in place (muon__gemm_syrk_direct).
 */


/* Cache blocking (elements), per kernel and per CPU (BLIS registers MR/NR and MC/KC/NC with each
 * micro-kernel, bli_blksz_init_easy; Eigen derives its blocks from the caches it reads). Each
 * kernel's entry in "the kernel table" names its KC and its fixed MC, NC (MUON__GEMM_BLK_*); at
 * run time muon__gemm_cache_blocks derives the kernel's MC and NC from this CPU's caches
 * (muon__caches_get, read once per process), and muon__gemm_blocking fits the three to the
 * problem (so the packing space of a small product is small). The loops (muon__gemm_part,
 * muon__gemm_macro): per MC row block and KC k block the A panel (MC x KC) is packed once; per
 * NC column block the B block (KC x NC) is packed and each A micro-panel (MR x KC) in turn runs
 * across all of its NR-wide micro-panels. Hence the rule, in bytes (esz: bytes per packed value):
 *   KC:  the kernel's constant, never derived from the caches: 384 for every kernel (the A
 *        micro-panel, 14 x 384 x 4 B = 21 KB, stays in a 48 KB L1d while B streams past it).
 *        KC is the k split, which fixes the order in which each element of C is accumulated:
 *        a KC that followed the caches would give other bits on another CPU (and break the
 *        bit-for-bit checks of the committed demo table). MC and NC only decide which tiles
 *        are computed when, never a bit of a result (tests/test_muon_gemm.c,
 *        test_cache_blocks_bits, which fails when KC follows the caches).
 *   NC:  B is the operand reused from L2 (every A micro-panel reads the whole B block), so
 *        KC x NC x esz is 3/8 of the L2, rounded down to a multiple of NR; the rest holds the
 *        A micro-panels and C tiles passing through and part of the A panel. (BLIS's L2 block,
 *        its A, is 29 % of the L2 on Zen 3: 144 x 256 x 4 B of 512 KB; 67 % on Haswell.)
 *   MC:  the A panel is re-read once per NC block, a micro-panel at a time (light reuse), and B
 *        is repacked once per MC block: so it is large, MC x KC x esz 3/4 of the L2, rounded
 *        down to a multiple of MR. It fits the L2 on its own with room for B's streaming
 *        micro-panels; beside the B block part of it is read from L3, once per NC block.
 * The L2 is clamped to [128 KB, 4 MB] first (below: a few micro-panels each; above, larger blocks
 * measured within noise and the workspace grows). An unknown L2 (0: the caches could not be
 * read) keeps the kernel's fixed blocks, the values tuned for the 14 x 32 AVX-512 kernel on a
 * Sapphire Rapids-class core (48 KB L1d, 2 MB L2) before the caches were read: MC 1008 (a
 * multiple of every fp32 MR, 4, 6, 8, 14), NC 512. L1d and L3 are read but do not enter: KC is
 * fixed, and the A panel is sized to the L2 alone (a core's share of L3 is often not what it
 * reports: the KVM guest of bench/RESULTS.md reports 480 MB). Values at KC 384 (bf16 kernels,
 * esz 2: twice the rows and columns, the same bytes):
 *   48 KB / 2 MB (Sapphire / Emerald Rapids): AVX-512 14 x 32 MC 1022 NC 512 (1008 and 1022
 *     cut every NS shape of the bench into the same row blocks), AVX2 6 x 16 1020 / 512;
 *   Zen 3, 32 KB / 512 KB / 32 MB: AVX2 6 x 16 MC 252 NC 128 (A panel 378 KB, B block 192 KB);
 *   Zen 4, 32 KB / 1 MB / 32 MB: AVX-512 MC 504 NC 256, AVX2 510 / 256;
 *   Cortex-A76-like, 64 KB / 512 KB: NEON 8 x 8 MC 256 NC 128.
 * The blocks actually used are split evenly (k = 1024 runs as 3 x 342, not 384 + 384 + 256;
 * m = 1024 on one thread as 518 + 506) and rounded to the kernel's MR / NR. On the NS shapes
 * KC 256/320/512 and NC 256/768/1024 measured within noise of these. -DMUON_GEMM_KC=... (and
 * _MC, _NC) sets that block of every kernel at compile time, and an _MC or _NC set so wins over
 * the caches. The workspace size follows the blocks: the size queries and the products ask the
 * same caches (one answer per process), so they agree. */
#ifdef MUON_GEMM_KC
#define MUON__GEMM_KC(dflt) ((size_t)(MUON_GEMM_KC))
#else
#define MUON__GEMM_KC(dflt) ((size_t)(dflt))
#endif
#ifdef MUON_GEMM_MC
#define MUON__GEMM_MC(dflt) ((size_t)(MUON_GEMM_MC))
#else
#define MUON__GEMM_MC(dflt) ((size_t)(dflt))
#endif
#ifdef MUON_GEMM_NC
#define MUON__GEMM_NC(dflt) ((size_t)(MUON_GEMM_NC))
#else
#define MUON__GEMM_NC(dflt) ((size_t)(dflt))
#endif
#define MUON__GEMM_L2_MIN ((size_t)128 * 1024) /* the L2 the rule takes, clamped (bytes) */
#define MUON__GEMM_L2_MAX ((size_t)4 * 1024 * 1024)
/* The rule above, a pure function: the MC and NC bounds of a kernel (mr x nr, esz bytes per
 * packed value, k block kc) under caches c, or its fixed mc0, nc0 where c's L2 is unknown (0).
 * MC: a multiple of mr, NC: of nr, neither below them. */
static void muon__gemm_cache_blocks(const muon__caches *c, size_t mr, size_t nr, size_t esz, size_t kc,
                                    size_t mc0, size_t nc0, size_t *mc, size_t *nc)
{
    size_t l2 = c->l2, row = kc * esz; /* bytes of one packed row (A) or column (B) of a k block */
    if (!l2 || !row) {
        *mc = mc0 / mr * mr;
        *nc = nc0 / nr * nr;
    } else {
        if (l2 < MUON__GEMM_L2_MIN) l2 = MUON__GEMM_L2_MIN;
        if (l2 > MUON__GEMM_L2_MAX) l2 = MUON__GEMM_L2_MAX;
        *mc = l2 / 4 * 3 / row / mr * mr;
        *nc = l2 / 8 * 3 / row / nr * nr;
    }
    if (*mc < mr) *mc = mr;
    if (*nc < nr) *nc = nr;
}

/* The plain forms pack problems whose packing space fits this many bytes in a stack buffer;
 * larger ones allocate it through MUON_MALLOC. Default 0 (always MUON_MALLOC): every path stays
 * within 2 KB of stack (docs/embedding.md); a malloc/free pair costs glibc about 20 ns, +9 % on
 * an 8^3 product and within the noise from 16^3 (0.3). 16384 was the default before 0.3. */
#ifndef MUON_GEMM_STACK_BYTES
#define MUON_GEMM_STACK_BYTES 0
#endif


#define MUON__GEMM_ALIGN 64u  /* packed buffers start on a cache line */
#define MUON__GEMM_NR_MAX 32u /* the largest MR / NR of any kernel (workspace bound) */

#define MUON__GEMM_MR_MAX 14u /* of the fp32 kernels (the bf16 ones size their own tile) */

/* A micro-kernel: C[0..MR)[0..NR) = alpha * sum_p a[p*MR + i] * b[p*NR + j] + beta * C
 * (beta == 0: C not read). a, b: packed micro-panels; always a full tile. */
typedef void (*muon__gemm_ukr_fn)(size_t kc, const float *a, const float *b, float *c, size_t ldc,
                                  float alpha, float beta);
/* SSYRK's kernels that read A in place from B panels: rows from a, then from a1 (the next panel) */
typedef void (*muon__gemm_ukr2_fn)(size_t kc, const float *a, const float *a1, const float *b, float *c,
                                   size_t ldc, float alpha, float beta);
/* How a kernel's operands are packed (the bf16 kinds round op(A) and op(B) to bf16 as they
 * pack them; see "bf16 products" below). */
typedef enum muon__gemm_pack_kind {
    MUON__PACK_F32 = 0, /* floats as given: A [p][MR], B [p][NR] */
    MUON__PACK_EMU,     /* bf16 values as floats, each k pair swapped: A [p^1][MR], B [p^1][NR] */
    MUON__PACK_DP,      /* bf16 pairs: A [p/2][MR][2], B [p/2][NR][2] (vdpbf16ps) */
    MUON__PACK_AMX,     /* A [p/32][MR][32] (tile rows), B [p/2][NR][2] (VNNI, as DP) */
    MUON__PACK_MMLA     /* bf16 quads: A [p/4][MR][4], B [p/4][NR][4] (BFMMLA: 2 x 4 by 4 x 2) */
} muon__gemm_pack_kind;
/* A kernel, described once (its entry in "the kernel table" below): what the blocked loops and
 * the macro-kernel need to run it, so that they never ask which kernel they hold. */
typedef struct muon__gemm_kernel muon__gemm_kernel;
/* Packs rows [i0, i0 + eff) of op(M) (A: micro-panel of MR rows; B: panel of NR columns), k
 * range [p0, p0 + kc), into dst in the kernel's layout, zero padded to MR / NR and kgran. */
typedef void (*muon__gemm_pack_fn)(const muon__gemm_kernel *kr, muon_transpose t, const float *M, size_t ld,
                                   size_t i0, size_t eff, size_t p0, size_t kc, unsigned char *dst);
/* Packs the NR panels [jq, jqend) of B (op(B) = B, n columns) in one pass (a whole NC block) */
typedef void (*muon__gemm_pack_block_fn)(const float *M, size_t ld, size_t jq, size_t jqend, size_t n, size_t p0,
                                         size_t kc, size_t kgran, unsigned char *dst);
/* SSYRK reading A in place from the B panels: the kernel instance for an A micro-panel whose
 * first n0 rows lie in one panel and the rest in the next (MUON__NULL: none for that split) */
typedef muon__gemm_ukr2_fn (*muon__gemm_syrk_fn)(size_t n0);
/* A Newton-Schulz schedule as an engine reads it: steps, and step k's triple (a, b, c) */
typedef struct muon__ns_coeffs {
    int steps;
    const double *(*triple)(const void *sched, int k);
    const void *sched;
} muon__ns_coeffs;
/* A kernel's Newton-Schulz engine (a whole NS in its own loops on operands packed once: AMX):
 * its region for an m x n iterate (m <= n) on t threads (0 on overflow), and the run of one NS
 * of G (rows x cols, ld ldg; normalised by inv) into out (ld ldo) in the region reg of regb
 * bytes (cache-line aligned) with a team of at most `threads` (0: the default): *ran = 0 (and
 * nothing read or written) when the region is too small for one thread, else 1 and the result */
typedef size_t (*muon__gemm_ns_bytes_fn)(const muon__gemm_kernel *kr, size_t m, size_t n, int t);
typedef muon_status (*muon__gemm_ns_run_fn)(const muon__gemm_kernel *kr, const muon__ns_coeffs *co, const float *G,
                                            size_t rows, size_t cols, size_t ldg, double inv, float *out, size_t ldo,
                                            unsigned char *reg, size_t regb, int threads, int *ran);
struct muon__gemm_kernel {
    const char *name;  /* precision, ISA, MR x NR (what the tests and the bench print) */
    int bf16;          /* 1: operands rounded to bf16 as packed, fp32 accumulation ("bf16 products") */
    muon__gemm_ukr_fn fn;
    size_t mr, nr;     /* register block */
    size_t mc, kc, nc; /* its cache blocks: kc, and the mc, nc kept where the caches are unknown
                        * (muon__gemm_bounds: the bounds on this CPU; muon__gemm_blocking fits them) */
    muon__gemm_pack_kind pack; /* the packed layout (documentation and the tests; the loops call pack_a/b) */
    size_t kgran, esz; /* packed k is a multiple of kgran (zero padded); bytes per packed value */
    muon__gemm_pack_fn pack_a, pack_b;
    muon__gemm_pack_block_fn pack_b_block; /* op(B) = B: whole blocks at once; MUON__NULL: panel by panel */
    muon__gemm_syrk_fn syrk;               /* SSYRK with A read in place; MUON__NULL: packed as a GEMM */
    void (*enter)(void), (*leave)(void);   /* per thread, around its share (AMX tile config) */
    /* the Newton-Schulz engine (MUON__NULL: a NS runs its products one by one on this kernel)
     * and its blocks: C blocks of at most ns_cb x ns_cb, k blocks of ns_kc (a multiple of 32) */
    muon__gemm_ns_bytes_fn ns_bytes;
    muon__gemm_ns_run_fn ns_run;
    size_t ns_cb, ns_kc;
};

static size_t muon__gemm_ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }
static size_t muon__gemm_round_up(size_t a, size_t b) { return muon__gemm_ceil_div(a, b) * b; }

/* ---- micro-kernels ---------------------------------------------------------------------- */
#define MUON__GEMM_SCALAR_MR 4
#define MUON__GEMM_SCALAR_NR 8
static void muon__gemm_ukr_scalar(size_t kc, const float *MUON__GEMM_RESTRICT a,
                                  const float *MUON__GEMM_RESTRICT b, float *MUON__GEMM_RESTRICT c,
                                  size_t ldc, float alpha, float beta)
{
    float acc[MUON__GEMM_SCALAR_MR][MUON__GEMM_SCALAR_NR];
    size_t p, i, j;
    for (i = 0; i < MUON__GEMM_SCALAR_MR; i++)
        for (j = 0; j < MUON__GEMM_SCALAR_NR; j++) acc[i][j] = 0.0f;
    for (p = 0; p < kc; p++) {
        for (i = 0; i < MUON__GEMM_SCALAR_MR; i++) {
            float ai = a[i];
            for (j = 0; j < MUON__GEMM_SCALAR_NR; j++) acc[i][j] += ai * b[j];
        }
        a += MUON__GEMM_SCALAR_MR;
        b += MUON__GEMM_SCALAR_NR;
    }
    for (i = 0; i < MUON__GEMM_SCALAR_MR; i++) {
        float *ci = c + i * ldc;
        if (beta == 0.0f)
            for (j = 0; j < MUON__GEMM_SCALAR_NR; j++) ci[j] = alpha * acc[i][j];
        else
            for (j = 0; j < MUON__GEMM_SCALAR_NR; j++) ci[j] = alpha * acc[i][j] + beta * ci[j];
    }
}

#ifdef MUON__GEMM_AVX512
#define MUON__GEMM_AVX512_MR 14
#define MUON__GEMM_AVX512_NR 32
/* One k step for row r: broadcast row r's value AR(r), FMA into both accumulators of that row. */
#define MUON__Z_ROW(r, AR)                                                                   \
    do {                                                                                     \
        __m512 ar_ = _mm512_set1_ps(AR(r));                                                  \
        c##r##0 = _mm512_fmadd_ps(ar_, b0, c##r##0);                                         \
        c##r##1 = _mm512_fmadd_ps(ar_, b1, c##r##1);                                         \
    } while (0)
#define MUON__Z_STEP(AR, ADV)                                                                \
    do {                                                                                     \
        __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);                        \
        MUON__Z_ROW(0, AR); MUON__Z_ROW(1, AR); MUON__Z_ROW(2, AR); MUON__Z_ROW(3, AR);      \
        MUON__Z_ROW(4, AR); MUON__Z_ROW(5, AR); MUON__Z_ROW(6, AR); MUON__Z_ROW(7, AR);      \
        MUON__Z_ROW(8, AR); MUON__Z_ROW(9, AR); MUON__Z_ROW(10, AR); MUON__Z_ROW(11, AR);    \
        MUON__Z_ROW(12, AR); MUON__Z_ROW(13, AR);                                            \
        ADV;                                                                                 \
        b += MUON__GEMM_AVX512_NR;                                                           \
    } while (0)
#define MUON__Z_STORE(r)                                                                     \
    do {                                                                                     \
        float *cr_ = c + (size_t)(r) * ldc;                                                  \
        if (beta == 0.0f) {                                                                  \
            _mm512_storeu_ps(cr_, _mm512_mul_ps(va, c##r##0));                               \
            _mm512_storeu_ps(cr_ + 16, _mm512_mul_ps(va, c##r##1));                          \
        } else if (beta == 1.0f) {                                                           \
            _mm512_storeu_ps(cr_, _mm512_fmadd_ps(va, c##r##0, _mm512_loadu_ps(cr_)));       \
            _mm512_storeu_ps(cr_ + 16, _mm512_fmadd_ps(va, c##r##1, _mm512_loadu_ps(cr_ + 16))); \
        } else {                                                                             \
            _mm512_storeu_ps(cr_, _mm512_fmadd_ps(va, c##r##0,                               \
                                                  _mm512_mul_ps(vb, _mm512_loadu_ps(cr_)))); \
            _mm512_storeu_ps(cr_ + 16, _mm512_fmadd_ps(va, c##r##1,                          \
                                                       _mm512_mul_ps(vb, _mm512_loadu_ps(cr_ + 16)))); \
        }                                                                                    \
    } while (0)
/* a k step with B's line 8 steps ahead prefetched */
#define MUON__Z_PSTEP(AR, ADV)                                                               \
    do {                                                                                     \
        _mm_prefetch((const char *)(b + 8 * MUON__GEMM_AVX512_NR), _MM_HINT_T0);             \
        _mm_prefetch((const char *)(b + 8 * MUON__GEMM_AVX512_NR + 16), _MM_HINT_T0);        \
        MUON__Z_STEP(AR, ADV);                                                               \
    } while (0)
/* The kernel's body: A's row r at k step p is AR(r) after p ADVs; B [kc][32] packed. */
#define MUON__Z_BODY(AR, ADV)                                                                \
    {                                                                                        \
        __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00; \
        __m512 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00; \
        __m512 c70 = c00, c71 = c00, c80 = c00, c81 = c00, c90 = c00, c91 = c00, c100 = c00, c101 = c00; \
        __m512 c110 = c00, c111 = c00, c120 = c00, c121 = c00, c130 = c00, c131 = c00;      \
        __m512 va, vb;                                                                       \
        size_t p;                                                                            \
        for (p = 0; p + 4 <= kc; p += 4) {                                                   \
            MUON__Z_PSTEP(AR, ADV); MUON__Z_PSTEP(AR, ADV);                                 \
            MUON__Z_PSTEP(AR, ADV); MUON__Z_PSTEP(AR, ADV);                                 \
        }                                                                                    \
        for (; p < kc; p++) MUON__Z_STEP(AR, ADV);                                           \
        va = _mm512_set1_ps(alpha);                                                          \
        vb = _mm512_set1_ps(beta);                                                           \
        MUON__Z_STORE(0); MUON__Z_STORE(1); MUON__Z_STORE(2); MUON__Z_STORE(3); MUON__Z_STORE(4); \
        MUON__Z_STORE(5); MUON__Z_STORE(6); MUON__Z_STORE(7); MUON__Z_STORE(8); MUON__Z_STORE(9); \
        MUON__Z_STORE(10); MUON__Z_STORE(11); MUON__Z_STORE(12); MUON__Z_STORE(13);          \
    }
#define MUON__Z_A(r) a[r]
static void muon__gemm_ukr_avx512(size_t kc, const float *a, const float *b, float *c, size_t ldc,
                                  float alpha, float beta)
MUON__Z_BODY(MUON__Z_A, a += MUON__GEMM_AVX512_MR)

/* SSYRK's A read in place from its packed B panels ([kc][32] each, muon__gemm_syrk_direct): row r
 * of the micro-panel is a[r] while r < N0, then a1[r - N0] (the next panel), both 32 floats a
 * k step. N0 is a compile-time constant: one instance per value the 14-row grid meets (a row
 * start ii, a multiple of 14, sits at lane ii % 32: 0, 2, ..., 30; the panel holds 32 - lane of
 * its 14 rows: all of them, or 2, 4, ..., 12). */
#define MUON__Z_ADV2 (a += MUON__GEMM_AVX512_NR, a1 += MUON__GEMM_AVX512_NR)
#define MUON__Z_SPLIT(r, N0) ((r) < (N0) ? a[(r)] : a1[(r) - (N0)])
#define MUON__Z_S2(r) MUON__Z_SPLIT(r, 2)
#define MUON__Z_S4(r) MUON__Z_SPLIT(r, 4)
#define MUON__Z_S6(r) MUON__Z_SPLIT(r, 6)
#define MUON__Z_S8(r) MUON__Z_SPLIT(r, 8)
#define MUON__Z_S10(r) MUON__Z_SPLIT(r, 10)
#define MUON__Z_S12(r) MUON__Z_SPLIT(r, 12)
#define MUON__Z_SKERNEL(name, AR)                                                             \
    static void name(size_t kc, const float *a, const float *a1, const float *b, float *c, size_t ldc, \
                     float alpha, float beta) MUON__Z_BODY(AR, MUON__Z_ADV2)
MUON__Z_SKERNEL(muon__gemm_ukr_avx512_s14, MUON__Z_A)
MUON__Z_SKERNEL(muon__gemm_ukr_avx512_s2, MUON__Z_S2)
MUON__Z_SKERNEL(muon__gemm_ukr_avx512_s4, MUON__Z_S4)
MUON__Z_SKERNEL(muon__gemm_ukr_avx512_s6, MUON__Z_S6)
MUON__Z_SKERNEL(muon__gemm_ukr_avx512_s8, MUON__Z_S8)
MUON__Z_SKERNEL(muon__gemm_ukr_avx512_s10, MUON__Z_S10)
MUON__Z_SKERNEL(muon__gemm_ukr_avx512_s12, MUON__Z_S12)
/* the instance for a micro-panel whose first n0 rows are in its first panel (n0 >= 14: all) */
static muon__gemm_ukr2_fn muon__gemm_ukr_avx512_split(size_t n0)
{
    static const muon__gemm_ukr2_fn by_half[7] = {muon__gemm_ukr_avx512_s14, muon__gemm_ukr_avx512_s2,
                                                  muon__gemm_ukr_avx512_s4,  muon__gemm_ukr_avx512_s6,
                                                  muon__gemm_ukr_avx512_s8,  muon__gemm_ukr_avx512_s10,
                                                  muon__gemm_ukr_avx512_s12};
    return n0 >= MUON__GEMM_AVX512_MR ? by_half[0] : n0 % 2 == 0 && n0 > 0 ? by_half[n0 / 2] : MUON__NULL;
}
#undef MUON__Z_SKERNEL
#undef MUON__Z_S2
#undef MUON__Z_S4
#undef MUON__Z_S6
#undef MUON__Z_S8
#undef MUON__Z_S10
#undef MUON__Z_S12
#undef MUON__Z_SPLIT
#undef MUON__Z_ADV2
#undef MUON__Z_A
#undef MUON__Z_BODY
#undef MUON__Z_PSTEP
#undef MUON__Z_ROW
#undef MUON__Z_STEP
#undef MUON__Z_STORE
#endif /* MUON__GEMM_AVX512 */

#ifdef MUON__GEMM_AVX2
#define MUON__GEMM_AVX2_MR 6
#define MUON__GEMM_AVX2_NR 16
#define MUON__Y_ROW(r, AR)                                                                   \
    do {                                                                                     \
        __m256 ar_ = _mm256_set1_ps(AR(r));                                                  \
        c##r##0 = _mm256_fmadd_ps(ar_, b0, c##r##0);                                         \
        c##r##1 = _mm256_fmadd_ps(ar_, b1, c##r##1);                                         \
    } while (0)
#define MUON__Y_STEP(AR, ADV)                                                                \
    do {                                                                                     \
        __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);                         \
        MUON__Y_ROW(0, AR); MUON__Y_ROW(1, AR); MUON__Y_ROW(2, AR);                          \
        MUON__Y_ROW(3, AR); MUON__Y_ROW(4, AR); MUON__Y_ROW(5, AR);                          \
        ADV;                                                                                 \
        b += MUON__GEMM_AVX2_NR;                                                             \
    } while (0)
#define MUON__Y_STORE(r)                                                                     \
    do {                                                                                     \
        float *cr_ = c + (size_t)(r) * ldc;                                                  \
        if (beta == 0.0f) {                                                                  \
            _mm256_storeu_ps(cr_, _mm256_mul_ps(va, c##r##0));                               \
            _mm256_storeu_ps(cr_ + 8, _mm256_mul_ps(va, c##r##1));                           \
        } else if (beta == 1.0f) {                                                           \
            _mm256_storeu_ps(cr_, _mm256_fmadd_ps(va, c##r##0, _mm256_loadu_ps(cr_)));       \
            _mm256_storeu_ps(cr_ + 8, _mm256_fmadd_ps(va, c##r##1, _mm256_loadu_ps(cr_ + 8))); \
        } else {                                                                             \
            _mm256_storeu_ps(cr_, _mm256_fmadd_ps(va, c##r##0,                               \
                                                  _mm256_mul_ps(vb, _mm256_loadu_ps(cr_)))); \
            _mm256_storeu_ps(cr_ + 8, _mm256_fmadd_ps(va, c##r##1,                           \
                                                      _mm256_mul_ps(vb, _mm256_loadu_ps(cr_ + 8)))); \
        }                                                                                    \
    } while (0)
/* The kernel's body: A's row r at k step p is AR(r) after p ADVs; B [kc][16] packed. */
#define MUON__Y_BODY(AR, ADV)                                                                \
    {                                                                                        \
        __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00; \
        __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;            \
        __m256 va, vb;                                                                       \
        size_t p;                                                                            \
        for (p = 0; p + 4 <= kc; p += 4) {                                                   \
            _mm_prefetch((const char *)(b + 8 * MUON__GEMM_AVX2_NR), _MM_HINT_T0);           \
            MUON__Y_STEP(AR, ADV);                                                           \
            MUON__Y_STEP(AR, ADV);                                                           \
            _mm_prefetch((const char *)(b + 8 * MUON__GEMM_AVX2_NR), _MM_HINT_T0);           \
            MUON__Y_STEP(AR, ADV);                                                           \
            MUON__Y_STEP(AR, ADV);                                                           \
        }                                                                                    \
        for (; p < kc; p++) MUON__Y_STEP(AR, ADV);                                           \
        va = _mm256_set1_ps(alpha);                                                          \
        vb = _mm256_set1_ps(beta);                                                           \
        MUON__Y_STORE(0); MUON__Y_STORE(1); MUON__Y_STORE(2);                                \
        MUON__Y_STORE(3); MUON__Y_STORE(4); MUON__Y_STORE(5);                                \
    }
#define MUON__Y_A(r) a[r]
static void muon__gemm_ukr_avx2(size_t kc, const float *a, const float *b, float *c, size_t ldc,
                                float alpha, float beta)
MUON__Y_BODY(MUON__Y_A, a += MUON__GEMM_AVX2_MR)

/* SSYRK's A read in place (muon__gemm_syrk_direct), as for AVX-512: a 6-row grid on 16-row
 * panels meets lanes 0, 2, ..., 14, so a micro-panel has all 6 rows in its panel, or 4 or 2. */
#define MUON__Y_ADV2 (a += MUON__GEMM_AVX2_NR, a1 += MUON__GEMM_AVX2_NR)
#define MUON__Y_S2(r) ((r) < 2 ? a[(r)] : a1[(r) - 2])
#define MUON__Y_S4(r) ((r) < 4 ? a[(r)] : a1[(r) - 4])
#define MUON__Y_SKERNEL(name, AR)                                                             \
    static void name(size_t kc, const float *a, const float *a1, const float *b, float *c, size_t ldc, \
                     float alpha, float beta) MUON__Y_BODY(AR, MUON__Y_ADV2)
MUON__Y_SKERNEL(muon__gemm_ukr_avx2_s6, MUON__Y_A)
MUON__Y_SKERNEL(muon__gemm_ukr_avx2_s2, MUON__Y_S2)
MUON__Y_SKERNEL(muon__gemm_ukr_avx2_s4, MUON__Y_S4)
/* the instance for a micro-panel whose first n0 rows are in its first panel (n0 >= 6: all) */
static muon__gemm_ukr2_fn muon__gemm_ukr_avx2_split(size_t n0)
{
    return n0 >= MUON__GEMM_AVX2_MR ? muon__gemm_ukr_avx2_s6
           : n0 == 4                ? muon__gemm_ukr_avx2_s4
           : n0 == 2                ? muon__gemm_ukr_avx2_s2
                                    : MUON__NULL;
}
#undef MUON__Y_SKERNEL
#undef MUON__Y_S2
#undef MUON__Y_S4
#undef MUON__Y_ADV2
#undef MUON__Y_A
#undef MUON__Y_BODY
#undef MUON__Y_ROW
#undef MUON__Y_STEP
#undef MUON__Y_STORE
#endif /* MUON__GEMM_AVX2 */

#ifdef MUON__GEMM_NEON
/* the 8 x 8 tile's update from two B vectors b0, b1 (columns 0-3, 4-7) and two A vectors a0, a1
 * (rows 0-3, 4-7): row r takes lane r % 4 of a0 / a1 through OP (fp32 FMA, or bf16 BFDOT) */
#define MUON__NEON_8X8(OP)                                                                       \
    do {                                                                                         \
        acc[0][0] = OP(acc[0][0], b0, a0, 0); acc[0][1] = OP(acc[0][1], b1, a0, 0);              \
        acc[1][0] = OP(acc[1][0], b0, a0, 1); acc[1][1] = OP(acc[1][1], b1, a0, 1);              \
        acc[2][0] = OP(acc[2][0], b0, a0, 2); acc[2][1] = OP(acc[2][1], b1, a0, 2);              \
        acc[3][0] = OP(acc[3][0], b0, a0, 3); acc[3][1] = OP(acc[3][1], b1, a0, 3);              \
        acc[4][0] = OP(acc[4][0], b0, a1, 0); acc[4][1] = OP(acc[4][1], b1, a1, 0);              \
        acc[5][0] = OP(acc[5][0], b0, a1, 1); acc[5][1] = OP(acc[5][1], b1, a1, 1);              \
        acc[6][0] = OP(acc[6][0], b0, a1, 2); acc[6][1] = OP(acc[6][1], b1, a1, 2);              \
        acc[7][0] = OP(acc[7][0], b0, a1, 3); acc[7][1] = OP(acc[7][1], b1, a1, 3);              \
    } while (0)
#define MUON__GEMM_NEON_MR 8
#define MUON__GEMM_NEON_NR 8
static void muon__gemm_ukr_neon(size_t kc, const float *a, const float *b, float *c, size_t ldc,
                                float alpha, float beta)
{
    float32x4_t acc[8][2];
    size_t p;
    int r;
    for (r = 0; r < 8; r++) acc[r][0] = acc[r][1] = vdupq_n_f32(0.0f);
    for (p = 0; p < kc; p++) {
        float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4);
        float32x4_t a0 = vld1q_f32(a), a1 = vld1q_f32(a + 4);
        MUON__NEON_8X8(vfmaq_laneq_f32);
        a += 8;
        b += 8;
    }
    for (r = 0; r < 8; r++) {
        float *cr = c + (size_t)r * ldc;
        float32x4_t x0 = vmulq_n_f32(acc[r][0], alpha), x1 = vmulq_n_f32(acc[r][1], alpha);
        if (beta != 0.0f) {
            x0 = vfmaq_n_f32(x0, vld1q_f32(cr), beta);
            x1 = vfmaq_n_f32(x1, vld1q_f32(cr + 4), beta);
        }
        vst1q_f32(cr, x0);
        vst1q_f32(cr + 4, x1);
    }
}
#endif /* MUON__GEMM_NEON */

/* ---- packing ----------------------------------------------------------------------------- */
/* The transposing copy both strided packings reduce to: rows [0, rows_eff) of src (ld apart,
 * kc contiguous values each) -> dst[p*width + r]; rows [rows_eff, width) are zero.
 * (op(A) NO_TRANS: src rows are A's rows, width MR; op(B) TRANS: src rows are B's rows, width NR.) */

#ifdef MUON__GEMM_AVX512
/* 16 x 16 transpose of 32-bit words (floats, or bf16 pairs) held in x0..x15, in named registers (as arrays
 * the three stages took 3 KB of stack): 32-bit unpacks, 64-bit unpacks, then 128-bit lane
 * shuffles; output row q (column q of the input) goes to the user's MUON__T16_ST(q, v). */
#define MUON__T16_S1(i, j) __m512i a##i = _mm512_unpacklo_epi32(x##i, x##j), a##j = _mm512_unpackhi_epi32(x##i, x##j)
#define MUON__T16_S2(i, i1, i2, i3) /* a i..i+3 -> 64-bit interleaves */                                 \
    __m512i b##i = _mm512_unpacklo_epi64(a##i, a##i2), b##i1 = _mm512_unpackhi_epi64(a##i, a##i2),       \
            b##i2 = _mm512_unpacklo_epi64(a##i1, a##i3), b##i3 = _mm512_unpackhi_epi64(a##i1, a##i3)
#define MUON__T16_S3(c, c4, c8, c12) /* b lane L holds column 4L + c of rows 4i..4i+3 */                 \
    do {                                                                                                 \
        __m512i u0 = _mm512_shuffle_i32x4(b##c, b##c4, 0x88), u1 = _mm512_shuffle_i32x4(b##c, b##c4, 0xDD); \
        __m512i v0 = _mm512_shuffle_i32x4(b##c8, b##c12, 0x88);                                          \
        __m512i v1 = _mm512_shuffle_i32x4(b##c8, b##c12, 0xDD);                                          \
        MUON__T16_ST(c, _mm512_shuffle_i32x4(u0, v0, 0x88));                                             \
        MUON__T16_ST(c8, _mm512_shuffle_i32x4(u0, v0, 0xDD));                                            \
        MUON__T16_ST(c4, _mm512_shuffle_i32x4(u1, v1, 0x88));                                            \
        MUON__T16_ST(c12, _mm512_shuffle_i32x4(u1, v1, 0xDD));                                           \
    } while (0)
/* x0..x15 declared by the user's LD(i) */
#define MUON__T16_LOAD(LD)                                                                               \
    LD(0); LD(1); LD(2); LD(3); LD(4); LD(5); LD(6); LD(7);                                              \
    LD(8); LD(9); LD(10); LD(11); LD(12); LD(13); LD(14); LD(15)
#define MUON__T16_BODY()                                                                                 \
    do {                                                                                                 \
        MUON__T16_S1(0, 1); MUON__T16_S1(2, 3); MUON__T16_S1(4, 5); MUON__T16_S1(6, 7);                  \
        MUON__T16_S1(8, 9); MUON__T16_S1(10, 11); MUON__T16_S1(12, 13); MUON__T16_S1(14, 15);            \
        {                                                                                                \
            MUON__T16_S2(0, 1, 2, 3); MUON__T16_S2(4, 5, 6, 7);                                          \
            MUON__T16_S2(8, 9, 10, 11); MUON__T16_S2(12, 13, 14, 15);                                    \
            MUON__T16_S3(0, 4, 8, 12);                                                                   \
            MUON__T16_S3(1, 5, 9, 13);                                                                   \
            MUON__T16_S3(2, 6, 10, 14);                                                                  \
            MUON__T16_S3(3, 7, 11, 15);                                                                  \
        }                                                                                                \
    } while (0)

/* 16 rows x 16 values (each row's whole cache line when aligned) -> 16 vectors of 16 rows each,
 * stored at dst + c*width (c = 0..15) */
#define MUON__TF_LD(i) __m512i x##i = _mm512_castps_si512(_mm512_loadu_ps(src + (size_t)(i) * ld))
#define MUON__T16_ST(q, v) _mm512_storeu_ps(dst + (size_t)(q) * width, _mm512_castsi512_ps(v))
static void muon__gemm_tr16x16(const float *src, size_t ld, float *dst, size_t width)
{
    MUON__T16_LOAD(MUON__TF_LD);
    MUON__T16_BODY();
}
#undef MUON__TF_LD
#undef MUON__T16_ST
#endif

static MUON__ALWAYS_INLINE void muon__gemm_pack_rows_tr(const float *src, size_t ld, size_t rows_eff, size_t kc, size_t width,
                                    float *MUON__GEMM_RESTRICT dst)
{
    size_t p = 0, r;
#ifdef MUON__GEMM_HAVE_TR8
    if (rows_eff == width && width >= 8) {
#ifdef MUON__GEMM_AVX512
        if (width % 16 == 0) /* 16 x 16 blocks: whole cache lines of the rows, half the shuffles */
            for (; p + 16 <= kc; p += 16)
                for (r = 0; r < width; r += 16) muon__gemm_tr16x16(src + r * ld + p, ld, dst + p * width + r, width);
#endif
        /* row groups of 8; the last group may overlap the previous one (same values rewritten) */
        for (; p + 8 <= kc; p += 8) {
            for (r = 0; r + 8 <= width; r += 8) muon__v_tr8x8(src + r * ld + p, ld, dst + p * width + r, width);
            if (r < width) muon__v_tr8x8(src + (width - 8) * ld + p, ld, dst + p * width + width - 8, width);
        }
    } else if (rows_eff == width && width >= 4) { /* 4 x 4 blocks, the last group overlapping */
        for (; p + 4 <= kc; p += 4) {
            for (r = 0; r + 4 <= width; r += 4) muon__v_tr4x4(src + r * ld + p, ld, dst + p * width + r, width);
            if (r < width) muon__v_tr4x4(src + (width - 4) * ld + p, ld, dst + p * width + width - 4, width);
        }
    }
#endif
    for (r = 0; r < rows_eff; r++) {
        const float *s = src + r * ld;
        size_t q;
        for (q = p; q < kc; q++) dst[q * width + r] = s[q];
    }
    for (r = rows_eff; r < width; r++) {
        size_t q;
        for (q = p; q < kc; q++) dst[q * width + r] = 0.0f;
    }
}

/* op(A) rows [i0, i0+mr_eff), k range [p0, p0+kc) -> dst[p*mr + r]; rows past mr_eff are 0. */
static MUON__NOINLINE void muon__gemm_pack_a(muon_transpose ta, const float *A, size_t lda, size_t i0, size_t mr_eff,
                              size_t p0, size_t kc, size_t mr, float *MUON__GEMM_RESTRICT dst)
{
    size_t p, r;
    if (ta == MUON_NO_TRANS) {
        muon__gemm_pack_rows_tr(A + i0 * lda + p0, lda, mr_eff, kc, mr, dst);
    } else {
        for (p = 0; p < kc; p++) {
            const float *src = A + (p0 + p) * lda + i0;
            float *d = dst + p * mr;
            for (r = 0; r < mr_eff; r++) d[r] = src[r];
            for (; r < mr; r++) d[r] = 0.0f;
        }
    }
}

/* op(B) k range [p0, p0+kc), columns [j0, j0+nr_eff) -> dst[p*nr + s]; columns past nr_eff 0. */
static MUON__NOINLINE void muon__gemm_pack_b(muon_transpose tb, const float *B, size_t ldb, size_t j0, size_t nr_eff,
                              size_t p0, size_t kc, size_t nr, float *MUON__GEMM_RESTRICT dst)
{
    size_t p, s;
    if (tb == MUON_NO_TRANS) {
        for (p = 0; p < kc; p++) {
            const float *src = B + (p0 + p) * ldb + j0;
            float *d = dst + p * nr;
            for (s = 0; s < nr_eff; s++) d[s] = src[s];
            for (; s < nr; s++) d[s] = 0.0f;
        }
    } else {
        muon__gemm_pack_rows_tr(B + j0 * ldb + p0, ldb, nr_eff, kc, nr, dst);
    }
}

/* ---- bf16 products ----------------------------------------------------------------------
 * The products of a bf16 Newton-Schulz (muon_ns_config.precision = MUON_NS_BF16): C = op(A) op(B)
 * (alpha 1, beta 0) with both operands rounded to bf16 as they are packed, each product of two
 * bf16 values exact in fp32, accumulated in fp32. Rounding: to nearest, ties to even, on the
 * float's bits; a float below FLT_MIN in magnitude becomes a signed zero (what vcvtne2ps2bf16,
 * vdpbf16ps and AMX do with subnormals); inputs are finite (validated before NS).
 * Accumulation order, per C element and KC block (the split of k, fixed by k alone, as for
 * fp32): for each k pair (2q, 2q+1): acc += a[2q+1] b[2q+1], then acc += a[2q] b[2q], each
 * addition rounded to fp32 (vdpbf16ps's documented order; a zero pads an odd block); then
 * C = acc for the first block and C = acc + C after it.
 * Kernels, fastest compiled first:
 *   AMX 32 x 32   2 x 2 tiles of 16 x 16 fp32, 32 k per tdpbf16ps; Linux, where the compiler
 *                 targets AMX-BF16 and the kernel grants the tile data (see muon__amx_ready);
 *                 its internal order and rounding are not documented (measured: neither the
 *                 sequential order nor one rounding per pair), so it matches the reference
 *                 within the bound tests/test_muon_bf16.c states, not bit for bit.
 *   DP 14 x 32    vdpbf16ps (AVX512-BF16): bit-identical to the reference.
 *   NEON 8 x 8    BFMMLA (AArch64 with BF16; the best there), or BFDOT (named by the tests):
 *                 each pair summed before it is added, rounded to odd (Arm's BFDotAdd; BFMMLA
 *                 is two of them per element): within the bound, as AMX.
 *   emulation     the build's fp32 micro-kernel (AVX-512, AVX2, NEON or scalar) on packed bf16
 *                 values with each k pair swapped: as the products are exact, an FMA or a
 *                 multiply and an add round once, as vdpbf16ps does, so it is bit-identical
 *                 to the reference, which is the scalar 4 x 8 kernel in that mode.
 * (Bit-identical where no partial sum falls below FLT_MIN in magnitude: vdpbf16ps flushes such
 * sums to zero, the emulation keeps them subnormal. Newton-Schulz never gets there: its
 * iterate is normalised and a row that small contributes nothing visible.)
 */
#ifdef MUON__BF16_DP
/* the first n lanes of 16 (n >= 16: all); of a 32-wide row with n valid, half h is
 * muon__mask16(n > 16 h ? n - 16 h : 0) */
static __mmask16 muon__mask16(size_t n) { return (__mmask16)(n >= 16 ? 0xffffu : (1u << n) - 1u); }
#define MUON__MASK_HALF(n, h) muon__mask16((n) > 16u * (h) ? (n) - 16u * (h) : 0u)
#endif
static uint16_t muon__bf16_bits(float x)
{
    uint32_t u;
    x = muon__bf16_round(x);
    memcpy(&u, &x, sizeof u);
    return (uint16_t)(u >> 16);
}

/* EMU: op(A) rows [i0, i0+mr_eff) (or op(B) columns, via `opa`), k [p0, p0+kc) -> dst[q*w + r]
 * with q the swapped k index (q ^ 1), zero past kc and past mr_eff; kc padded to even. */
static MUON__NOINLINE void muon__gemm_pack_emu(int opa, muon_transpose t, const float *M, size_t ld, size_t i0, size_t eff,
                                size_t p0, size_t kc, size_t w, float *MUON__GEMM_RESTRICT dst)
{
    size_t kk = muon__gemm_round_up(kc, 2), q, r;
    for (q = 0; q < kk; q++) {
        size_t p = q ^ 1u;
        float *d = dst + q * w;
        if (p >= kc) {
            for (r = 0; r < w; r++) d[r] = 0.0f;
            continue;
        }
        if (opa && t == MUON_TRANS) { /* op(A) = A^T: row p0 + p of A, contiguous in r */
            const float *src = M + (p0 + p) * ld + i0;
            for (r = 0; r < eff; r++) d[r] = muon__bf16_round(src[r]);
        } else if (!opa && t == MUON_NO_TRANS) { /* op(B) = B: row p0 + p of B */
            const float *src = M + (p0 + p) * ld + i0;
            for (r = 0; r < eff; r++) d[r] = muon__bf16_round(src[r]);
        } else { /* strided */
            const float *src = M + i0 * ld + p0 + p;
            for (r = 0; r < eff; r++) d[r] = muon__bf16_round(src[r * ld]);
        }
        for (r = eff; r < w; r++) d[r] = 0.0f;
    }
}

/* DP / AMX (g = 2) and BFMMLA (g = 4): values of op(A) (opa) or op(B) for output index r in
 * [0, w) and k group q as dst[(q*w + r)*g + e] = bf16(k = g q + e); zero past kc (padded to
 * kgran, a multiple of g) and past eff. */
static MUON__NOINLINE void muon__gemm_pack_pairs(int opa, muon_transpose t, const float *M, size_t ld, size_t i0, size_t eff,
                                  size_t p0, size_t kc, size_t w, size_t kgran, size_t g, uint16_t *MUON__GEMM_RESTRICT dst)
{
    const size_t lg = g == 4 ? 2 : 1; /* (shifts: this is the packers' inner loop) */
    size_t kk = muon__gemm_round_up(kc, kgran), q, r, e;
    int rowwise = opa ? t == MUON_NO_TRANS : t == MUON_TRANS; /* r's values contiguous in k */
    if (!rowwise) {
        for (q = 0; q < kk >> lg; q++)
            for (e = 0; e < g; e++) {
                size_t p = g * q + e;
                uint16_t *d = dst + q * w * g + e;
                if (p >= kc) {
                    for (r = 0; r < w; r++) d[g * r] = 0;
                    continue;
                }
                {
                    const float *src = M + (p0 + p) * ld + i0;
                    for (r = 0; r < eff; r++) d[g * r] = muon__bf16_bits(src[r]);
                    for (; r < w; r++) d[g * r] = 0;
                }
            }
        return;
    }
    for (r = 0; r < w; r++) {
        const float *src = M + (i0 + r) * ld + p0;
        uint16_t *d = dst + g * r;
        if (r >= eff) {
            for (q = 0; q < kk; q++) d[((q >> lg) * w << lg) + (q & (g - 1))] = 0;
            continue;
        }
        for (q = 0; q < kc; q++) d[((q >> lg) * w << lg) + (q & (g - 1))] = muon__bf16_bits(src[q]);
        for (; q < kk; q++) d[((q >> lg) * w << lg) + (q & (g - 1))] = 0;
    }
}

#ifdef MUON__BF16_AMX
/* AMX A: op(A) rows [i0, i0+eff), k [p0, p0+kc) -> dst[(s*mr + r)*32 + j] = bf16(k = 32 s + j). */
static MUON__NOINLINE void muon__gemm_pack_amx_a(muon_transpose t, const float *M, size_t ld, size_t i0, size_t eff, size_t p0,
                                  size_t kc, size_t mr, uint16_t *MUON__GEMM_RESTRICT dst)
{
    size_t ks = muon__gemm_ceil_div(kc, 32), s, r, j;
    for (r = 0; r < mr; r++) { /* along each row of op(A): a row of A is read in order */
        for (s = 0; s < ks; s++) {
            size_t kb = 32 * s, kn = kc - kb < 32 ? kc - kb : 32;
            uint16_t *d = dst + (s * mr + r) * 32;
            if (r >= eff) {
                memset(d, 0, 64);
            } else if (t == MUON_NO_TRANS) {
                const float *src = M + (i0 + r) * ld + p0 + kb;
                __mmask16 ml = MUON__MASK_HALF(kn, 0), mh = MUON__MASK_HALF(kn, 1);
                __m512 lo = _mm512_maskz_loadu_ps(ml, src), hi = _mm512_maskz_loadu_ps(mh, src + 16);
                _mm512_storeu_si512((void *)d, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
            } else {
                for (j = 0; j < kn; j++) d[j] = muon__bf16_bits(M[(p0 + kb + j) * ld + i0 + r]);
                for (; j < 32; j++) d[j] = 0;
            }
        }
    }
}
#endif

#ifdef MUON__BF16_DP
/* The B block of NR = 32 panels [jq, jqend) of op(B) = B (n columns in all), streamed row pair
 * by row pair across the whole block (the panel-at-a-time form strides through B) */
static MUON__NOINLINE void muon__gemm_pack_pairs_b_block(const float *M, size_t ld, size_t jq, size_t jqend, size_t n, size_t p0,
                                          size_t kc, size_t kgran, unsigned char *bpack)
{
    /* interleave rows 2q (lo) and 2q + 1 (hi): cvtne2ps_pbh(hi, lo) puts lo in 0..15, hi in 16..31 */
    const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8,
                                         23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    size_t kk = muon__gemm_round_up(kc, kgran), q, c, j0 = jq * 32, j1 = jqend * 32 < n ? jqend * 32 : n;
    for (q = 0; q < kk / 2; q++) {
        const float *r0 = M + (p0 + 2 * q) * ld, *r1 = r0 + ld;
        int have0 = 2 * q < kc, have1 = 2 * q + 1 < kc;
        for (c = j0; c < jqend * 32; c += 16) {
            size_t nv = c < j1 ? (j1 - c < 16 ? j1 - c : 16) : 0;
            __mmask16 mk = muon__mask16(nv);
            __m512 lo = have0 ? _mm512_maskz_loadu_ps(mk, r0 + c) : _mm512_setzero_ps();
            __m512 hi = have1 ? _mm512_maskz_loadu_ps(mk, r1 + c) : _mm512_setzero_ps();
            size_t panel = (c - j0) / 32, half = ((c - j0) / 16) & 1u;
            uint16_t *d = (uint16_t *)(void *)(bpack + panel * 32 * kk * 2) + q * 64 + 32 * half;
            _mm512_storeu_si512((void *)d, _mm512_permutexvar_epi16(idx, (__m512i)_mm512_cvtne2ps_pbh(hi, lo)));
        }
    }
}

/* Pairs where each output index r reads a contiguous run of k (op(A) = A, op(B) = B^T), w a
 * multiple of 16: 16 rows x 32 k converted (16 pairs each), transposed (MUON__T16_BODY), stored
 * 64 B at a time. */
#define MUON__P16_LD(i)                                                                                   \
    __m512i x##i = (size_t)(i) < nrow ? (__m512i)_mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(mh, s + (i) * ld + 16), \
                                                                    _mm512_maskz_loadu_ps(ml, s + (i) * ld))  \
                                      : _mm512_setzero_si512()
#define MUON__T16_ST(q, v) /* pair column q of the 16 rows */                                            \
    do {                                                                                                 \
        if ((size_t)(q) < qn) _mm512_storeu_si512((void *)(dst + ((kb / 2 + (q)) * w + rg) * 2), v);      \
    } while (0)
static MUON__NOINLINE void muon__gemm_pack_pairs_rowwise16(const float *M, size_t ld, size_t i0, size_t eff,
                                                           size_t p0, size_t kc, size_t w, size_t kgran,
                                                           uint16_t *MUON__GEMM_RESTRICT dst)
{
    size_t kk = muon__gemm_round_up(kc, kgran), kb, rg;
    for (kb = 0; kb < kk; kb += 32) {
        size_t kn = kc > kb ? (kc - kb < 32 ? kc - kb : 32) : 0, qn = kk - kb < 32 ? (kk - kb) / 2 : 16;
        __mmask16 ml = MUON__MASK_HALF(kn, 0), mh = MUON__MASK_HALF(kn, 1);
        for (rg = 0; rg < w; rg += 16) {
            /* rows past eff, and k blocks wholly past kc, are zero */
            size_t nrow = kn && rg < eff ? (eff - rg < 16 ? eff - rg : 16) : 0;
            const float *s = M + (i0 + rg) * ld + p0 + kb;
            MUON__T16_LOAD(MUON__P16_LD);
            MUON__T16_BODY();
        }
    }
}
#undef MUON__P16_LD
#undef MUON__T16_ST
#endif

/* Each kernel's packers (its table entry names them; the loops call kr->pack_a / kr->pack_b,
 * never asking the layout). Frames of their own: the packers stay off the stack path of the
 * micro-kernel call. */
static MUON__NOINLINE void muon__gemm_pack_a_f32(const muon__gemm_kernel *kr, muon_transpose t, const float *M,
                                                 size_t ld, size_t i0, size_t eff, size_t p0, size_t kc,
                                                 unsigned char *dst)
{
    muon__gemm_pack_a(t, M, ld, i0, eff, p0, kc, kr->mr, (float *)(void *)dst);
}
static MUON__NOINLINE void muon__gemm_pack_b_f32(const muon__gemm_kernel *kr, muon_transpose t, const float *M,
                                                 size_t ld, size_t i0, size_t eff, size_t p0, size_t kc,
                                                 unsigned char *dst)
{
    muon__gemm_pack_b(t, M, ld, i0, eff, p0, kc, kr->nr, (float *)(void *)dst);
}
#if defined(MUON__GEMM_AVX512) || defined(MUON__GEMM_AVX2) || defined(MUON__GEMM_NEON)
/* The build's SIMD kernel's B block, op(B) = B (n columns): its NR-wide panels [jq, jqend) packed
 * row by row across the whole block, each row's span prefetched MUON__GEMM_PACK_AHEAD rows ahead.
 * The panel-at-a-time form (muon__gemm_pack_b) reads one NR-float span per row of B at a stride of
 * ldb, which no hardware prefetcher follows: on a Zen 3 the AVX2 kernel's panels packed at
 * 3.4 GB/s, and B, repacked once per MC row block, cost the B.X products of Newton-Schulz 20-30 %
 * at MC 252 (bench/RESULTS.md, "B packed by rows"; the AVX-512 kernel on a Zen 5, 3-5 %,
 * "AVX-512 on a Zen 5"). The same values in the same places: the same bits (tests/test_muon_gemm.c,
 * test_pack_b_block). NR is a multiple of 2 MUON__VW (32, 16, 8). */
#if defined(MUON__GEMM_AVX512)
#define MUON__GEMM_PACK_NR MUON__GEMM_AVX512_NR
#elif defined(MUON__GEMM_AVX2)
#define MUON__GEMM_PACK_NR MUON__GEMM_AVX2_NR
#else
#define MUON__GEMM_PACK_NR MUON__GEMM_NEON_NR
#endif
#if defined(MUON__GEMM_NEON) && (defined(__GNUC__) || defined(__clang__))
#define MUON__GEMM_PREFETCH(p) __builtin_prefetch((p), 0, 3)
#elif defined(MUON__GEMM_NEON)
#define MUON__GEMM_PREFETCH(p) ((void)(p))
#else
#define MUON__GEMM_PREFETCH(p) _mm_prefetch((const char *)(p), _MM_HINT_T0)
#endif
#define MUON__GEMM_PACK_AHEAD 8
static MUON__NOINLINE void muon__gemm_pack_b_block_simd(const float *M, size_t ld, size_t jq, size_t jqend, size_t n,
                                                        size_t p0, size_t kc, size_t kgran, unsigned char *bpack)
{
    enum { nr = MUON__GEMM_PACK_NR };
    float *dst = (float *)(void *)bpack;
    const size_t ps = nr * kc, j0 = jq * nr, j1 = jqend * nr < n ? jqend * nr : n, nfull = (j1 - j0) / nr;
    size_t p, q, c, r;
    (void)kgran; /* 1: fp32 */
    for (p = 0; p < kc; p++) {
        const float *s = M + (p0 + p) * ld + j0;
        float *d = dst + p * nr;
        if (p + MUON__GEMM_PACK_AHEAD < kc)
            for (c = 0; c < j1 - j0; c += 16) MUON__GEMM_PREFETCH(s + MUON__GEMM_PACK_AHEAD * ld + c);
        for (q = 0; q < nfull; q++)
            for (c = 0; c < nr; c += 2 * MUON__VW) {
                muon__vf v0 = muon__vf_load(s + q * nr + c), v1 = muon__vf_load(s + q * nr + c + MUON__VW);
                muon__vf_store(d + q * ps + c, v0);
                muon__vf_store(d + q * ps + c + MUON__VW, v1);
            }
        for (; q < jqend - jq; q++) { /* past n: the last panel's tail, zero padded */
            size_t e = j1 > j0 + q * nr ? j1 - j0 - q * nr : 0;
            for (r = 0; r < nr; r++) d[q * ps + r] = r < e ? s[q * nr + r] : 0.0f;
        }
    }
}
#endif
/* the emulation: bf16 values as floats, k pairs swapped */
static MUON__NOINLINE void muon__gemm_pack_a_emu(const muon__gemm_kernel *kr, muon_transpose t, const float *M,
                                                 size_t ld, size_t i0, size_t eff, size_t p0, size_t kc,
                                                 unsigned char *dst)
{
    muon__gemm_pack_emu(1, t, M, ld, i0, eff, p0, kc, kr->mr, (float *)(void *)dst);
}
static MUON__NOINLINE void muon__gemm_pack_b_emu(const muon__gemm_kernel *kr, muon_transpose t, const float *M,
                                                 size_t ld, size_t i0, size_t eff, size_t p0, size_t kc,
                                                 unsigned char *dst)
{
    muon__gemm_pack_emu(0, t, M, ld, i0, eff, p0, kc, kr->nr, (float *)(void *)dst);
}
/* bf16 pairs (vdpbf16ps, BFDOT; AMX's B) and quads (BFMMLA); unused where no kernel packs them */
static MUON__GEMM_UNUSED MUON__NOINLINE void muon__gemm_pack_a_pairs(const muon__gemm_kernel *kr, muon_transpose t, const float *M,
                                                   size_t ld, size_t i0, size_t eff, size_t p0, size_t kc,
                                                   unsigned char *dst)
{
    muon__gemm_pack_pairs(1, t, M, ld, i0, eff, p0, kc, kr->mr, kr->kgran, 2, (uint16_t *)(void *)dst);
}
static MUON__GEMM_UNUSED MUON__NOINLINE void muon__gemm_pack_b_pairs(const muon__gemm_kernel *kr, muon_transpose t, const float *M,
                                                   size_t ld, size_t i0, size_t eff, size_t p0, size_t kc,
                                                   unsigned char *dst)
{
    muon__gemm_pack_pairs(0, t, M, ld, i0, eff, p0, kc, kr->nr, kr->kgran, 2, (uint16_t *)(void *)dst);
}
static MUON__GEMM_UNUSED MUON__NOINLINE void muon__gemm_pack_a_quads(const muon__gemm_kernel *kr, muon_transpose t, const float *M,
                                                   size_t ld, size_t i0, size_t eff, size_t p0, size_t kc,
                                                   unsigned char *dst)
{
    muon__gemm_pack_pairs(1, t, M, ld, i0, eff, p0, kc, kr->mr, kr->kgran, 4, (uint16_t *)(void *)dst);
}
static MUON__GEMM_UNUSED MUON__NOINLINE void muon__gemm_pack_b_quads(const muon__gemm_kernel *kr, muon_transpose t, const float *M,
                                                   size_t ld, size_t i0, size_t eff, size_t p0, size_t kc,
                                                   unsigned char *dst)
{
    muon__gemm_pack_pairs(0, t, M, ld, i0, eff, p0, kc, kr->nr, kr->kgran, 4, (uint16_t *)(void *)dst);
}
#ifdef MUON__BF16_DP
/* pairs for a 32-column kernel (vdpbf16ps, AMX): op(B) = B^T 16 rows at a time */
static MUON__NOINLINE void muon__gemm_pack_b_pairs32(const muon__gemm_kernel *kr, muon_transpose t, const float *M,
                                                     size_t ld, size_t i0, size_t eff, size_t p0, size_t kc,
                                                     unsigned char *dst)
{
    if (t == MUON_TRANS)
        muon__gemm_pack_pairs_rowwise16(M, ld, i0, eff, p0, kc, kr->nr, kr->kgran, (uint16_t *)(void *)dst);
    else
        muon__gemm_pack_pairs(0, t, M, ld, i0, eff, p0, kc, kr->nr, kr->kgran, 2, (uint16_t *)(void *)dst);
}
#endif
#ifdef MUON__BF16_AMX
static MUON__NOINLINE void muon__gemm_pack_a_amx(const muon__gemm_kernel *kr, muon_transpose t, const float *M,
                                                 size_t ld, size_t i0, size_t eff, size_t p0, size_t kc,
                                                 unsigned char *dst)
{
    muon__gemm_pack_amx_a(t, M, ld, i0, eff, p0, kc, kr->mr, (uint16_t *)(void *)dst);
}
#endif

#ifdef MUON__BF16_DP
#define MUON__GEMM_DP_MR 14
#define MUON__GEMM_DP_NR 32
/* 14 x 32 tile, kc even (packed pairs): per pair two B vectors, one broadcast pair per row. */
#define MUON__D_ROW(r)                                                                       \
    do {                                                                                     \
        int32_t pr_;                                                                         \
        __m512bh ar_;                                                                        \
        memcpy(&pr_, a + 2 * (r), sizeof pr_);                                               \
        ar_ = (__m512bh)_mm512_set1_epi32(pr_);                                              \
        c##r##0 = _mm512_dpbf16_ps(c##r##0, ar_, b0);                                        \
        c##r##1 = _mm512_dpbf16_ps(c##r##1, ar_, b1);                                        \
    } while (0)
static void muon__gemm_ukr_dp(size_t kc, const float *af, const float *bf, float *c, size_t ldc, float alpha,
                              float beta)
{
    const uint16_t *a = (const uint16_t *)(const void *)af, *b = (const uint16_t *)(const void *)bf;
    __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m512 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00;
    __m512 c70 = c00, c71 = c00, c80 = c00, c81 = c00, c90 = c00, c91 = c00, c100 = c00, c101 = c00;
    __m512 c110 = c00, c111 = c00, c120 = c00, c121 = c00, c130 = c00, c131 = c00;
    size_t q;
    (void)alpha;
    for (q = 0; q < kc / 2; q++) {
        __m512bh b0 = (__m512bh)_mm512_loadu_si512((const void *)b);
        __m512bh b1 = (__m512bh)_mm512_loadu_si512((const void *)(b + 32));
        MUON__D_ROW(0); MUON__D_ROW(1); MUON__D_ROW(2); MUON__D_ROW(3); MUON__D_ROW(4);
        MUON__D_ROW(5); MUON__D_ROW(6); MUON__D_ROW(7); MUON__D_ROW(8); MUON__D_ROW(9);
        MUON__D_ROW(10); MUON__D_ROW(11); MUON__D_ROW(12); MUON__D_ROW(13);
        a += 2 * MUON__GEMM_DP_MR;
        b += 2 * MUON__GEMM_DP_NR;
    }
#define MUON__D_STORE(r)                                                                     \
    do {                                                                                     \
        float *cr_ = c + (size_t)(r) * ldc;                                                  \
        if (beta == 0.0f) {                                                                  \
            _mm512_storeu_ps(cr_, c##r##0);                                                  \
            _mm512_storeu_ps(cr_ + 16, c##r##1);                                             \
        } else {                                                                             \
            _mm512_storeu_ps(cr_, _mm512_add_ps(c##r##0, _mm512_loadu_ps(cr_)));             \
            _mm512_storeu_ps(cr_ + 16, _mm512_add_ps(c##r##1, _mm512_loadu_ps(cr_ + 16)));   \
        }                                                                                    \
    } while (0)
    MUON__D_STORE(0); MUON__D_STORE(1); MUON__D_STORE(2); MUON__D_STORE(3); MUON__D_STORE(4);
    MUON__D_STORE(5); MUON__D_STORE(6); MUON__D_STORE(7); MUON__D_STORE(8); MUON__D_STORE(9);
    MUON__D_STORE(10); MUON__D_STORE(11); MUON__D_STORE(12); MUON__D_STORE(13);
#undef MUON__D_STORE
}
#undef MUON__D_ROW
#endif /* MUON__BF16_DP */

#ifdef MUON__BF16_NEON
#define MUON__GEMM_NBF_MR 8
#define MUON__GEMM_NBF_NR 8
/* 8 x 8 tile, kc even, DP layout (A [q][8][2], B [q][8][2]): per k pair two B vectors (columns
 * 0-3, 4-7, a pair each) and two A vectors (rows 0-3, 4-7); bfdot with the row's pair as lane.
 * BFDOT sums each pair of products before it adds (Arm's BFDotAdd, rounding to odd), so it is
 * not the reference's order: held to the same bound as AMX. */
static void muon__gemm_ukr_neon_bf16(size_t kc, const float *af, const float *bf, float *c, size_t ldc, float alpha,
                                     float beta)
{
    const uint16_t *a = (const uint16_t *)(const void *)af, *b = (const uint16_t *)(const void *)bf;
    float32x4_t acc[8][2];
    size_t q;
    int r;
    (void)alpha;
    for (r = 0; r < 8; r++) acc[r][0] = acc[r][1] = vdupq_n_f32(0.0f);
    for (q = 0; q < kc / 2; q++) {
        /* loaded as the uint16 the packer wrote (GCC 12 folds bf16 vector constants through fp16) */
        bfloat16x8_t b0 = vreinterpretq_bf16_u16(vld1q_u16(b)), b1 = vreinterpretq_bf16_u16(vld1q_u16(b + 8));
        bfloat16x8_t a0 = vreinterpretq_bf16_u16(vld1q_u16(a)), a1 = vreinterpretq_bf16_u16(vld1q_u16(a + 8));
        MUON__NEON_8X8(vbfdotq_laneq_f32);
        a += 16;
        b += 16;
    }
    for (r = 0; r < 8; r++) {
        float *cr = c + (size_t)r * ldc;
        if (beta != 0.0f) {
            acc[r][0] = vaddq_f32(acc[r][0], vld1q_f32(cr));
            acc[r][1] = vaddq_f32(acc[r][1], vld1q_f32(cr + 4));
        }
        vst1q_f32(cr, acc[r][0]);
        vst1q_f32(cr + 4, acc[r][1]);
    }
}
/* 8 x 8 tile, kc a multiple of 4, MMLA layout (A [q][8][4], B [q][8][4]): per 4 k, row pair
 * rp's 2 x 4 block and column pair cp's (the 4 x 2 block, transposed) are one q register each,
 * and BFMMLA adds their 2 x 2 product into acc[rp][cp] = {c(2rp, 2cp), c(2rp, 2cp + 1),
 * c(2rp + 1, 2cp), c(2rp + 1, 2cp + 1)}: 16 instructions of 16 multiply-adds per 8 loads (BFDOT:
 * 16 of 8 per 4). Each element is two BFDotAdds (pairs summed, then added; round to odd), the
 * arithmetic of two BFDOTs: held to the same bound. */
#define MUON__MM_ROW(rp)                                                                          \
    do {                                                                                          \
        bfloat16x8_t ar_ = vreinterpretq_bf16_u16(vld1q_u16(a + 8 * (rp)));                       \
        acc[rp][0] = vbfmmlaq_f32(acc[rp][0], ar_, b0);                                           \
        acc[rp][1] = vbfmmlaq_f32(acc[rp][1], ar_, b1);                                           \
        acc[rp][2] = vbfmmlaq_f32(acc[rp][2], ar_, b2);                                           \
        acc[rp][3] = vbfmmlaq_f32(acc[rp][3], ar_, b3);                                           \
    } while (0)
static void muon__gemm_ukr_neon_bfmmla(size_t kc, const float *af, const float *bf, float *c, size_t ldc, float alpha,
                                       float beta)
{
    const uint16_t *a = (const uint16_t *)(const void *)af, *b = (const uint16_t *)(const void *)bf;
    float32x4_t acc[4][4];
    size_t q;
    int r, h;
    (void)alpha;
    for (r = 0; r < 4; r++) acc[r][0] = acc[r][1] = acc[r][2] = acc[r][3] = vdupq_n_f32(0.0f);
    for (q = 0; q < kc / 4; q++) {
        bfloat16x8_t b0 = vreinterpretq_bf16_u16(vld1q_u16(b)), b1 = vreinterpretq_bf16_u16(vld1q_u16(b + 8));
        bfloat16x8_t b2 = vreinterpretq_bf16_u16(vld1q_u16(b + 16)), b3 = vreinterpretq_bf16_u16(vld1q_u16(b + 24));
        MUON__MM_ROW(0);
        MUON__MM_ROW(1);
        MUON__MM_ROW(2);
        MUON__MM_ROW(3);
        a += 32;
        b += 32;
    }
    for (r = 0; r < 4; r++) /* rows 2r (the blocks' first halves) and 2r + 1 (second), 4 columns at a time */
        for (h = 0; h < 2; h++) {
            float64x2_t x = vreinterpretq_f64_f32(acc[r][2 * h]), y = vreinterpretq_f64_f32(acc[r][2 * h + 1]);
            float32x4_t top = vreinterpretq_f32_f64(vzip1q_f64(x, y)), bot = vreinterpretq_f32_f64(vzip2q_f64(x, y));
            float *c0 = c + (size_t)(2 * r) * ldc + 4 * h, *c1 = c0 + ldc;
            if (beta != 0.0f) {
                top = vaddq_f32(top, vld1q_f32(c0));
                bot = vaddq_f32(bot, vld1q_f32(c1));
            }
            vst1q_f32(c0, top);
            vst1q_f32(c1, bot);
        }
}
#undef MUON__MM_ROW
#endif /* MUON__BF16_NEON */

#ifdef MUON__BF16_AMX
/* Tile data needs the kernel's permission on Linux (arch_prctl ARCH_REQ_XCOMP_PERM for
 * XFEATURE_XTILEDATA, 5.16 and later): asked before every bf16 product that would use AMX (an
 * idempotent system call of a microsecond, no global state); refused (an older kernel, a
 * hypervisor that hides AMX, a seccomp filter), the product runs on the DP kernel. */
static int muon__amx_ready(void)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "0"(158L), "D"(0x1023L), "S"(18L) : "rcx", "r11", "memory");
    return ret == 0;
}
typedef struct muon__amx_cfg {
    unsigned char palette, start_row, reserved[14];
    unsigned short colsb[16];
    unsigned char rows[16];
} muon__amx_cfg;
/* tiles 0-3: C (2 x 2 of 16 x 16 fp32); 4, 5: A (16 rows x 32 bf16); 6, 7: B (16 pairs x 16) */
static void muon__amx_enter(void)
{
    muon__amx_cfg cfg;
    int t;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (t = 0; t < 8; t++) {
        cfg.rows[t] = 16;
        cfg.colsb[t] = 64;
    }
    /* not _tile_loadconfig: GCC 12's names an 8-byte operand, so the stores past it are dead */
    __asm__ __volatile__("ldtilecfg %0" : : "m"(cfg));
}
static void muon__amx_leave(void) { _tile_release(); }
#define MUON__GEMM_AMX_MR 32
#define MUON__GEMM_AMX_NR 32
/* 32 x 32 tile; kc a multiple of 32; beta 0 (C written) or 1 (C accumulated in the tiles).
 * With pa / pb (the engine's): per 32 k, na lines (64 B) from pa and nb from pb are prefetched
 * into L2, spread over the loop (bunched before the call, the prefetches themselves stalled). */
static MUON__ALWAYS_INLINE void muon__amx_tile32(size_t kc, const unsigned char *a, const unsigned char *b, float *c,
                                                 size_t ldc, float beta, const char *pa, const char *pb, size_t na,
                                                 size_t nb)
{
    const size_t sc = ldc * sizeof(float);
    size_t s, l;
    if (beta == 0.0f) {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    } else {
        _tile_loadd(0, c, sc);
        _tile_loadd(1, c + 16, sc);
        _tile_loadd(2, c + 16 * ldc, sc);
        _tile_loadd(3, c + 16 * ldc + 16, sc);
    }
    for (s = 0; s < kc / 32; s++) {
        _tile_loadd(4, a, 64);
        _tile_loadd(5, a + 1024, 64);
        _tile_loadd(6, b, 128);
        _tile_loadd(7, b + 64, 128);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
        /* (offsets, not pointer steps: the generic kernel passes NULL with na = nb = 0) */
        for (l = 0; l < na; l++) _mm_prefetch(pa + (s * na + l) * 64, _MM_HINT_T1);
        for (l = 0; l < nb; l++) _mm_prefetch(pb + (s * nb + l) * 64, _MM_HINT_T1);
        a += 2048;
        b += 2048;
    }
    _tile_stored(0, c, sc);
    _tile_stored(1, c + 16, sc);
    _tile_stored(2, c + 16 * ldc, sc);
    _tile_stored(3, c + 16 * ldc + 16, sc);
}
static void muon__gemm_ukr_amx(size_t kc, const float *af, const float *bf, float *c, size_t ldc, float alpha,
                               float beta)
{
    (void)alpha;
    muon__amx_tile32(kc, (const unsigned char *)af, (const unsigned char *)bf, c, ldc, beta, MUON__NULL, MUON__NULL, 0, 0);
}
#endif /* MUON__BF16_AMX */

/* Which bf16 kernel: MUON__BF16_BEST (AMX if granted, else DP where this CPU runs it faster than
 * fp32 FMA, else the emulation on the build's fp32 kernel; on AArch64 with BF16, BFMMLA), or a
 * named one for the tests (one not compiled in gives the best). */
#ifdef MUON__BF16_AMX
/* ---- bf16 Newton-Schulz on AMX with its operands packed once -------------------------------
 * The same arithmetic as muon__ns_bf16 below (and the same bound against the reference), with
 * the iterate kept in bf16 in the three layouts its products read, written by the products
 * themselves: the generic driver converts X from fp32 in every product and again for every row
 * block (a third of an AMX NS's time went to packing, bench/RESULTS.md), and its C tiles go to
 * memory and back once per k block. Here every product computes C blocks of at most
 * XB x XB (the entry's ns_cb) in a per-thread buffer that stays in L2 across all of k, and each
 * finished 32 x 32 tile goes straight into what the next product reads:
 *   X X^T  -> A (fp32, the lower tiles: what the combination reads) and A as both operands of
 *             A A^T (the mirrored tile's layouts by pair transposes of the tile's own)
 *   A A^T  -> B = fma(c, AA, b A), packed as the A operand of B X
 *   B X    -> X' = bf16(fma(a, X, B X)) in its three layouts
 * G comes in, scaled, straight into X's layouts; the result goes from X's A layout into out once
 * the last product found every entry finite.
 * Layouts (uint16 bf16; m, n padded to mp, np, multiples of 32, zeros in the padding):
 *   "A operand" of an R x K matrix: panel I (32 rows) at I*32*K, [K/32][32 rows][32 k];
 *   "B operand" of a K x C matrix:  panel J (32 cols) at J*32*K, [K/2][32 cols][2 k] (VNNI);
 * both are what muon__gemm_ukr_amx reads, so a k block starting at k0 is at +32*k0. */
/* At most this many L2 prefetches per 32 k of one tile call: a diagonal block's first rows and
 * last columns have one or two calls to spread a whole panel's next k block over (up to 32 lines
 * per 32 k), and bunched prefetches stall the loop; the lines past the cap come on demand.
 * (Against no cap, one thread, 3 alternating pairs an iteration: 2048^2 1.5-5 %, 768 x 3072 1-11 %.) */
#define MUON__XPF 8u
typedef struct muon__xns {
    size_t m, n, mp, np;
    size_t xb, xkc;               /* the C block edge and the k block (the kernel entry's ns_cb, ns_kc) */
    const float *G;               /* the input (rows x cols, ld ldg; X = inv G, or inv G^T when tall) */
    size_t ldg, ldo;
    float *out;                   /* the result (as G), written once every entry is known finite */
    double inv;
    int tall;
    float *A;                     /* fp32 A = X X^T, its lower 32 x 32 tiles (muon__x_atile) */
    uint16_t *pax, *pbt, *pbn[2]; /* X as A operand; X^T as B operand; X as B operand (alternating) */
    uint16_t *paa, *pba, *pab;    /* A as A operand, A as B operand (A^T = A), B as A operand */
    unsigned char *scratch;       /* per thread (per bytes apart): C block (cbytes), two 32 x 32 fp32 tiles */
    size_t per, cbytes;
    float a, b, c;
    int cur, last, nt;
} muon__xns;

/* The engine's region for an m x n iterate on t threads: fp32 A (sz[0] bytes: the lower tiles,
 * each 4 KB contiguous, so that a tile's stores and loads run through consecutive lines rather
 * than 32 rows 4m bytes apart; about half of m^2 floats for large m), four layouts of X (sz[1] each; two of them X as a B operand, alternating), three of m x m matrices (sz[2] each),
 * and per thread (*per bytes) a C block (*cbytes: at most xb square, no larger than the
 * products' C), two 32 x 32 fp32 tiles and a flag. Returns the bytes (0 on overflow). */
static MUON__ALWAYS_INLINE size_t muon__xns_sizes(size_t xb, size_t m, size_t n, int t, size_t sz[3], size_t *per,
                                                   size_t *cbytes)
{
    size_t mp, np, th, tot = 0;
    if (m > (size_t)-1 - 32 || n > (size_t)-1 - 32) return 0;
    mp = muon__gemm_round_up(m, 32);
    np = muon__gemm_round_up(n, 32);
    *cbytes = (mp < xb ? mp : xb) * (np < xb ? np : xb) * 4u;
    *per = *cbytes + 2u * 4096u + 64u;
    if (!muon__u_mul(mp / 32, mp / 32 + 1, &sz[0]) || !muon__u_mul(sz[0] / 2, 4096u, &sz[0]) ||
        !(sz[0] = muon__u_round(sz[0])))
        return 0;
    if (!muon__u_mul(mp, np, &sz[1]) || !muon__u_mul(sz[1], 2, &sz[1]) || !(sz[1] = muon__u_round(sz[1]))) return 0;
    if (!muon__u_mul(mp, mp, &sz[2]) || !muon__u_mul(sz[2], 2, &sz[2]) || !(sz[2] = muon__u_round(sz[2]))) return 0;
    if (!muon__u_mul((size_t)(t > 0 ? t : 1), *per, &th)) return 0;
    if (!muon__u_add(tot, sz[0], &tot) || !muon__u_add(tot, sz[1], &tot) || !muon__u_add(tot, sz[1], &tot) ||
        !muon__u_add(tot, sz[1], &tot) || !muon__u_add(tot, sz[1], &tot) || !muon__u_add(tot, sz[2], &tot) ||
        !muon__u_add(tot, sz[2], &tot) || !muon__u_add(tot, sz[2], &tot) || !muon__u_add(tot, th, &tot))
        return 0;
    return tot;
}
/* the entry's ns_bytes hook */
static MUON__NOINLINE size_t muon__xns_bytes(const muon__gemm_kernel *kr, size_t m, size_t n, int t) /* (off the size queries' deepest path) */
{
    size_t sz[3] = {0, 0, 0}, per, cbytes;
    return muon__xns_sizes(kr->ns_cb, m, n, t, sz, &per, &cbytes);
}
/* thread tid's two 32 x 32 fp32 tiles (t, t + 1024), then its flag (t + 2048) */
static float *muon__x_tiles(const muon__xns *e, int tid)
{
    return (float *)(void *)(e->scratch + (size_t)tid * e->per + e->cbytes);
}
static int *muon__x_flag(const muon__xns *e, int tid) { return (int *)(void *)(muon__x_tiles(e, tid) + 2048); }


/* Rows 2q and 2q + 1 of a bf16 tile (32 each) into the pairs layout's row q at d (64 values:
 * d[c][e] = row 2q + e, column c) */
static MUON__ALWAYS_INLINE void muon__x_zip_rows(__m512i x0, __m512i x1, uint16_t *d)
{
    const __m512i lo = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8,
                                        39, 7, 38, 6, 37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
    const __m512i hi = _mm512_add_epi16(lo, _mm512_set1_epi16(16));
    _mm512_storeu_si512((void *)d, _mm512_permutex2var_epi16(x0, lo, x1));
    _mm512_storeu_si512((void *)(d + 32), _mm512_permutex2var_epi16(x0, hi, x1));
}
/* 32 x 32 fp32 tile t (ld 32) in bf16: its rows (A layout) to ra, its row pairs interleaved
 * (B layout, pb[q][c][e] = t[2q+e][c]) to pb */
static void muon__x_rows_pairs(const float *t, uint16_t *ra, uint16_t *pb)
{
    size_t r;
    for (r = 0; r < 32; r += 2) {
        __m512i x0 = (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(t + r * 32 + 16), _mm512_loadu_ps(t + r * 32));
        __m512i x1 = (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(t + r * 32 + 48), _mm512_loadu_ps(t + r * 32 + 32));
        _mm512_storeu_si512((void *)(ra + r * 32), x0);
        _mm512_storeu_si512((void *)(ra + (r + 1) * 32), x1);
        muon__x_zip_rows(x0, x1, pb + r * 32);
    }
}
/* 16 x 16 transpose of 32-bit words (bf16 pairs): dst[p*ldd + r] = src[r*lds + p]
 * (MUON__T16_BODY). A pair transpose turns one layout of a bf16 tile into the other's of the
 * transposed tile: rows(T^T) = pairT(pairs(T)), pairs(T^T) = pairT(rows(T)). */
#define MUON__T16_LD(i) __m512i x##i = _mm512_loadu_si512((const void *)(src + (i) * lds))
#define MUON__T16_ST(q, v) _mm512_storeu_si512((void *)(dst + (q) * ldd), v)
static void muon__x_t16(const uint32_t *src, size_t lds, uint32_t *dst, size_t ldd)
{
    MUON__T16_LOAD(MUON__T16_LD);
    MUON__T16_BODY();
}
#undef MUON__T16_LD
#undef MUON__T16_ST
/* rows layout (32 x 16 pairs) of a tile -> pairs layout (16 x 32) of its transpose, and back */
static void muon__x_rows_to_tpairs(const uint16_t *rows, uint16_t *d)
{
    const uint32_t *s = (const uint32_t *)(const void *)rows;
    uint32_t *o = (uint32_t *)(void *)d;
    muon__x_t16(s, 16, o, 32);
    muon__x_t16(s + 16 * 16, 16, o + 16, 32);
}
static void muon__x_pairs_to_trows(const uint16_t *pairs, uint16_t *d)
{
    const uint32_t *s = (const uint32_t *)(const void *)pairs;
    uint32_t *o = (uint32_t *)(void *)d;
    muon__x_t16(s, 32, o, 16);
    muon__x_t16(s + 16, 32, o + 16 * 16, 16);
}
/* fp32 M (ld ld, rows x cols valid) tile at (r0, c0) <-> t (ld 32); zeros outside */
static void muon__x_load(const float *M, size_t ld, size_t rows, size_t cols, size_t r0, size_t c0, float *t)
{
    size_t r, nc = cols > c0 ? (cols - c0 < 32 ? cols - c0 : 32) : 0;
    __mmask16 ml = MUON__MASK_HALF(nc, 0), mh = MUON__MASK_HALF(nc, 1);
    for (r = 0; r < 32; r++) {
        const float *s = M + (r0 + r) * ld + c0;
        int in = r0 + r < rows;
        _mm512_storeu_ps(t + r * 32, in ? _mm512_maskz_loadu_ps(ml, s) : _mm512_setzero_ps());
        _mm512_storeu_ps(t + r * 32 + 16, in ? _mm512_maskz_loadu_ps(mh, s + 16) : _mm512_setzero_ps());
    }
}
static void muon__x_store(const float *t, size_t lt, float *M, size_t ld, size_t rows, size_t cols, size_t r0,
                          size_t c0)
{
    size_t r, nc = cols > c0 ? (cols - c0 < 32 ? cols - c0 : 32) : 0;
    __mmask16 ml = MUON__MASK_HALF(nc, 0), mh = MUON__MASK_HALF(nc, 1);
    for (r = 0; r < 32 && r0 + r < rows; r++) {
        float *d = M + (r0 + r) * ld + c0;
        _mm512_mask_storeu_ps(d, ml, _mm512_loadu_ps(t + r * lt));
        _mm512_mask_storeu_ps(d + 16, mh, _mm512_loadu_ps(t + r * lt + 16));
    }
}

/* 32 x 32 fp32 tile s (ld 32) -> its transpose d (ld 32) */
static void muon__x_tr32(const float *s, float *d)
{
    size_t i, j;
    for (i = 0; i < 32; i += 8)
        for (j = 0; j < 32; j += 8) muon__v_tr8x8(s + i * 32 + j, 32, d + j * 32 + i, 32);
}
/* Tile (r0, c0) of the normalised iterate, (float)((double)g * inv) as muon__ns_copy_in forms it:
 * from G, or from G's transposed tile (through tmp) when tall; zeros outside m x n. */
static void muon__x_load_g(const muon__xns *e, size_t r0, size_t c0, float *t, float *tmp)
{
    const __m512d vi = _mm512_set1_pd(e->inv);
    size_t gr0 = e->tall ? c0 : r0, gc0 = e->tall ? r0 : c0, grows = e->tall ? e->n : e->m;
    size_t gcols = e->tall ? e->m : e->n, r, h, nc = gcols > gc0 ? (gcols - gc0 < 32 ? gcols - gc0 : 32) : 0;
    float *d = e->tall ? tmp : t;
    for (r = 0; r < 32; r++)
        for (h = 0; h < 2; h++) {
            __mmask16 k = gr0 + r < grows ? MUON__MASK_HALF(nc, h) : (__mmask16)0;
            __m512i x = _mm512_castps_si512(_mm512_maskz_loadu_ps(k, e->G + (gr0 + r) * e->ldg + gc0 + 16 * h));
            __m256 lo = _mm512_cvtpd_ps(_mm512_mul_pd(_mm512_cvtps_pd(_mm256_castsi256_ps(_mm512_castsi512_si256(x))), vi));
            __m256 hi = _mm512_cvtpd_ps(
                _mm512_mul_pd(_mm512_cvtps_pd(_mm256_castsi256_ps(_mm512_extracti64x4_epi64(x, 1))), vi));
            _mm512_storeu_si512((void *)(d + r * 32 + 16 * h),
                                _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_castps_si256(lo)), _mm256_castps_si256(hi), 1));
        }
    if (e->tall) muon__x_tr32(tmp, t);
}
/* 32 x 32 fp32 tile from its A layout (bf16: exact) */
static void muon__x_unrows(const uint16_t *px, float *t)
{
    int r, c;
    for (r = 0; r < 32; r++)
        for (c = 0; c < 32; c += 16)
            _mm512_storeu_ps(t + r * 32 + c, _mm512_castsi512_ps(_mm512_slli_epi32(
                _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(px + r * 32 + c))), 16)));
}

/* One row of X' = bf16(fma(a, X, Y)): X's 32 bf16 at px, Y's 32 fp32 at y; the row in bf16 */
static MUON__ALWAYS_INLINE __m512i muon__x_axpy_row(__m512 va, const uint16_t *px, const float *y)
{
    __m512i x = _mm512_loadu_si512((const void *)px);
    __m512 lo = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(x)), 16));
    __m512 hi = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(x, 1)), 16));
    return (__m512i)_mm512_cvtne2ps_pbh(_mm512_fmadd_ps(va, hi, _mm512_loadu_ps(y + 16)),
                                        _mm512_fmadd_ps(va, lo, _mm512_loadu_ps(y)));
}
/* fp32 A's tile (r0, c0), r0 >= c0 (multiples of 32): 32 x 32, ld 32, tiles row by row */
static MUON__ALWAYS_INLINE float *muon__x_atile(const muon__xns *e, size_t r0, size_t c0)
{
    size_t R = r0 / 32;
    return e->A + (R * (R + 1) / 2 + c0 / 32) * 1024u;
}
/* Row i (global) of a symmetric product's tile at column c0, from s (32 fp32): X X^T's row is
 * stored into fp32 A (its valid columns: masks ml, mh); A A^T's becomes B = fma(c, AA, b A) with
 * A's row read there (zero past m). The row in bf16. */
static MUON__ALWAYS_INLINE __m512i muon__x_sym_row(const muon__xns *e, int prod, const float *s, size_t i, size_t c0,
                                                   __mmask16 ml, __mmask16 mh, __m512 vb, __m512 vc)
{
    __m512 lo = _mm512_loadu_ps(s), hi = _mm512_loadu_ps(s + 16);
    if (i < e->m) {
        float *a = muon__x_atile(e, i - i % 32, c0) + (i % 32) * 32;
        if (prod == 0) {
            _mm512_mask_storeu_ps(a, ml, lo);
            _mm512_mask_storeu_ps(a + 16, mh, hi);
        } else {
            lo = _mm512_fmadd_ps(vc, lo, _mm512_mul_ps(vb, _mm512_maskz_loadu_ps(ml, a)));
            hi = _mm512_fmadd_ps(vc, hi, _mm512_mul_ps(vb, _mm512_maskz_loadu_ps(mh, a + 16)));
        }
    }
    return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
}
/* The finished tile (r0, c0) of a product (cb: ld ldb), into what reads it next (see above);
 * the layouts of the transposed tile by pair transposes of the ones just written (in L1). */
static int muon__x_epilogue(const muon__xns *e, int prod, const float *cb, size_t ldb, size_t r0, size_t c0,
                            float *t, float *tt)
{
    const size_t m = e->m, mp = e->mp, np = e->np;
    size_t r, c;
    if (prod < 2) { /* symmetric products: the lower tile, mirrored; diagonal tiles from their lower half */
        const float *s = cb;
        size_t ls = ldb;
        if (r0 == c0) {
            for (r = 0; r < 32; r++)
                for (c = 0; c < 32; c += 16) _mm512_storeu_ps(t + r * 32 + c, _mm512_loadu_ps(cb + r * ldb + c));
            for (r = 0; r < 32; r++)
                for (c = r + 1; c < 32; c++) t[r * 32 + c] = t[c * 32 + r];
            s = t;
            ls = 32;
        }
        { /* two rows at a time: X X^T's into fp32 A, and either's bf16 rows into the A operand
           * layout and their pair interleave into the B operand one (of the mirrored tile for
           * A A^T's B: to L1, for the transpose below) */
            const __m512 vb = _mm512_set1_ps(e->b), vc = _mm512_set1_ps(e->c);
            const size_t nc = m - c0 < 32 ? m - c0 : 32; /* (c0 <= r0 < m: the padding has no tiles of its own) */
            const __mmask16 ml = MUON__MASK_HALF(nc, 0), mh = MUON__MASK_HALF(nc, 1);
            uint16_t *ra = (prod == 0 ? e->paa : e->pab) + r0 * mp + c0 * 32;
            uint16_t *pb = prod == 0 ? e->pba + c0 * mp + r0 * 32 : (uint16_t *)(void *)tt;
            for (r = 0; r < 32; r += 2) {
                __m512i x0 = muon__x_sym_row(e, prod, s + r * ls, r0 + r, c0, ml, mh, vb, vc);
                __m512i x1 = muon__x_sym_row(e, prod, s + (r + 1) * ls, r0 + r + 1, c0, ml, mh, vb, vc);
                _mm512_storeu_si512((void *)(ra + r * 32), x0);
                _mm512_storeu_si512((void *)(ra + (r + 1) * 32), x1);
                muon__x_zip_rows(x0, x1, pb + r * 32);
            }
            if (r0 != c0) {
                muon__x_pairs_to_trows(pb, (prod == 0 ? e->paa : e->pab) + c0 * mp + r0 * 32);
                if (prod == 0) muon__x_rows_to_tpairs(ra, e->pba + r0 * mp + c0 * 32);
            }
        }
        return 0;
    }
    { /* X' = bf16(fma(a, X, Y)) two rows at a time, X's rows read from its A layout (bf16: exact
       * as fp32); vcvtne2ps2bf16 rounds as muon__bf16_round16 does (the same bits on every
       * non-NaN, and NaN stays NaN), then the pair interleave of the two rows for X as B operand */
        const __m512 va = _mm512_set1_ps(e->a);
        const __m512i ex = _mm512_set1_epi16(0x7F80);
        uint16_t *px = e->pax + r0 * np + c0 * 32, *pn = e->pbn[e->cur ^ 1] + c0 * mp + r0 * 32;
        __mmask32 bad = 0;
        for (r = 0; r < 32; r += 2) {
            __m512i x0 = muon__x_axpy_row(va, px + r * 32, cb + r * ldb);
            __m512i x1 = muon__x_axpy_row(va, px + (r + 1) * 32, cb + (r + 1) * ldb);
            _mm512_storeu_si512((void *)(px + r * 32), x0);
            _mm512_storeu_si512((void *)(px + (r + 1) * 32), x1);
            if (e->last) { /* the result: Inf or NaN anywhere (the backstop of muon__ns_one) */
                bad |= _mm512_cmpeq_epi16_mask(_mm512_and_si512(x0, ex), ex) |
                       _mm512_cmpeq_epi16_mask(_mm512_and_si512(x1, ex), ex);
                continue;
            }
            muon__x_zip_rows(x0, x1, pn + r * 32);
        }
        if (e->last) return bad != 0;
        muon__x_rows_to_tpairs(px, e->pbt + r0 * np + c0 * 32);
    }
    return 0;
}

/* L2 prefetch lines per 32 k of a tile call: nl lines over `steps` (calls x 32-k steps), at most MUON__XPF */
static size_t muon__x_pf_lines(size_t nl, size_t steps)
{
    size_t l = muon__gemm_ceil_div(nl, steps);
    return l < MUON__XPF ? l : MUON__XPF;
}

/* Block bidx of a product: the blocks below the diagonal row by row, then the diagonal ones
 * (half the work each: last, for balance) for the symmetric products; row-major for B X. */
static void muon__x_block_at(int prod, size_t bidx, size_t nbi, size_t nbj, size_t *bi, size_t *bj)
{
    if (prod < 2 && bidx < nbi * (nbi - 1) / 2) {
        size_t r = 1;
        while (r * (r + 1) / 2 <= bidx) r++;
        *bi = r;
        *bj = bidx - r * (r - 1) / 2;
    } else if (prod < 2) {
        *bi = *bj = bidx - nbi * (nbi - 1) / 2;
    } else {
        *bi = bidx / nbj;
        *bj = bidx % nbj;
    }
}

/* Product prod (0: X X^T, 1: A A^T, 2: B X): C blocks, each over all of k into this thread's
 * buffer, then its tiles' epilogues. Thread t of the team takes blocks t, t + nt, ... (each is
 * computed the same whichever thread takes it: the result does not depend on the team), so it
 * knows its next block and prefetches that block's first k block during its last one. */
static MUON__NOINLINE void muon__x_product(const muon__xns *e, int prod)
{
    const uint16_t *pa = prod == 0 ? e->pax : prod == 1 ? e->paa : e->pab;
    const uint16_t *pb = prod == 0 ? e->pbt : prod == 1 ? e->pba : e->pbn[e->cur];
    const size_t kp = prod == 0 ? e->np : e->mp, rows = e->mp, cols = prod == 2 ? e->np : e->mp;
    const size_t xb = e->xb, nbi = muon__gemm_ceil_div(rows, xb), nbj = muon__gemm_ceil_div(cols, xb);
    const size_t nkb = muon__gemm_ceil_div(kp, e->xkc), kcs = muon__gemm_round_up(muon__gemm_ceil_div(kp, nkb), 32);
    const size_t nblk = prod < 2 ? nbi * (nbi + 1) / 2 : nbi * nbj;
    MUON__OMP(omp parallel num_threads(e->nt) if (e->nt > 1 && muon__gate(e->nt) > 1))
    {
        int tid = 0, bad = 0;
        size_t nth = 1, bidx;
        float *cb, *t, *tt;
#ifdef _OPENMP
        tid = omp_get_thread_num();
        nth = (size_t)omp_get_num_threads();
#endif
        cb = (float *)(void *)(e->scratch + (size_t)tid * e->per);
        t = muon__x_tiles(e, tid);
        tt = t + 1024;
        muon__amx_enter();
        for (bidx = (size_t)tid; bidx < nblk; bidx += nth) {
            size_t bi, bj, i0, j0, bm, bn, k0, i, j, ni0 = 0, nj0 = 0;
            int diag, next = bidx + nth < nblk;
            muon__x_block_at(prod, bidx, nbi, nbj, &bi, &bj);
            i0 = bi * xb;
            j0 = bj * xb;
            bm = rows - i0 < xb ? rows - i0 : xb;
            bn = cols - j0 < xb ? cols - j0 : xb;
            diag = prod < 2 && i0 == j0; /* a diagonal block: tiles j <= i only */
            if (next) {
                muon__x_block_at(prod, bidx + nth, nbi, nbj, &ni0, &nj0);
                ni0 *= xb;
                nj0 *= xb;
            }
            for (k0 = 0; k0 < kp; k0 += kcs) {
                size_t kc = kp - k0 < kcs ? kp - k0 : kcs, k1 = k0 + kc, st = kc / 32;
                /* lines (64 B) of one panel's next k block (past the last: the next block's
                 * first), and the share of them each call prefetches into L2 (per 32 k of its
                 * own): the A panel of row i over the row's calls, the B panel of column j over
                 * the column's */
                size_t nl = k1 < kp ? (kp - k1 < kcs ? kp - k1 : kcs) : next ? kcs : 0;
                for (i = 0; i < bm; i += 32) {
                    const uint16_t *ap = pa + (i0 + i) * kp + k0 * 32;
                    const uint16_t *an = k1 < kp ? ap + kc * 32 : pa + (ni0 + i) * kp;
                    size_t ca = diag ? i / 32 + 1 : bn / 32, na = k1 < kp || ni0 + i < rows ? muon__x_pf_lines(nl, ca * st) : 0;
                    for (j = 0; j < bn; j += 32) {
                        const uint16_t *bp = pb + (j0 + j) * kp + k0 * 32;
                        const uint16_t *bnx = k1 < kp ? bp + kc * 32 : pb + (nj0 + j) * kp;
                        size_t cbn = diag ? (bm - j) / 32 : bm / 32;
                        size_t nb = k1 < kp || nj0 + j < cols ? muon__x_pf_lines(nl, cbn * st) : 0;
                        size_t ib = diag ? (i - j) / 32 : i / 32;
                        if (diag && j > i) break;
                        muon__amx_tile32(kc, (const unsigned char *)ap, (const unsigned char *)bp, cb + i * bn + j, bn,
                                         k0 ? 1.0f : 0.0f, (const char *)an + (j / 32) * na * st * 64,
                                         (const char *)bnx + ib * nb * st * 64, na, nb);
                    }
                }
            }
            for (i = 0; i < bm; i += 32)
                for (j = 0; j < bn; j += 32) {
                    if (diag && j > i) break;
                    if (j + 32 < bn && !(diag && j + 32 > i)) { /* the next tile's epilogue input */
                        size_t l;
                        if (prod == 1) /* (its rows below m: two lines each) */
                            for (l = 0; l < 64 && i0 + i + l / 2 < e->m; l++)
                                _mm_prefetch((const char *)muon__x_atile(e, i0 + i, j0 + j + 32) + l * 64, _MM_HINT_T0);
                        else if (prod == 2)
                            for (l = 0; l < 32; l++)
                                _mm_prefetch((const char *)(e->pax + (i0 + i) * e->np + (j0 + j + 32) * 32) + l * 64,
                                             _MM_HINT_T0);
                    }
                    bad |= muon__x_epilogue(e, prod, cb + i * bn + j, bn, i0 + i, j0 + j, t, tt);
                }
        }
        muon__amx_leave();
        *muon__x_flag(e, tid) = bad;
    }
}

/* The iterate in and out, tile by tile: in (out_dir 0) G * inv -> X in bf16, in its three
 * layouts; out (1) the result from X's A layout into out (transposed when tall). */
static MUON__NOINLINE void muon__x_io(const muon__xns *e, int out_dir)
{
    const size_t tj = e->np / 32;
    ptrdiff_t idx, cnt = (ptrdiff_t)(e->mp / 32 * tj);
    MUON__OMP(omp parallel num_threads(e->nt) if (e->nt > 1 && muon__gate(e->nt) > 1))
    {
        int tid = 0;
        float *t, *tt;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        t = muon__x_tiles(e, tid);
        tt = t + 1024;
        MUON__OMP(omp for schedule(static))
        for (idx = 0; idx < cnt; idx++) {
            size_t r0 = (size_t)idx / tj * 32, c0 = (size_t)idx % tj * 32;
            uint16_t *px = e->pax + r0 * e->np + c0 * 32;
            if (!out_dir) {
                muon__x_load_g(e, r0, c0, t, tt);
                muon__x_rows_pairs(t, px, e->pbn[0] + c0 * e->mp + r0 * 32);
                muon__x_rows_to_tpairs(px, e->pbt + r0 * e->np + c0 * 32);
                continue;
            }
            if (r0 >= e->m || c0 >= e->n) continue;
            muon__x_unrows(px, t);
            if (!e->tall) {
                muon__x_store(t, 32, e->out, e->ldo, e->m, e->n, r0, c0);
                continue;
            }
            muon__x_tr32(t, tt);
            muon__x_store(tt, 32, e->out, e->ldo, e->n, e->m, c0, r0);
        }
    }
}
/* B = b A when c == 0 (no A A^T): from A's lower tiles, as the A A^T epilogue forms B */
static MUON__NOINLINE void muon__x_scale_a(const muon__xns *e)
{
    size_t r0, c0, k;
    float *t = muon__x_tiles(e, 0), *tt = t + 1024;
    for (r0 = 0; r0 < e->mp; r0 += 32)
        for (c0 = 0; c0 <= r0; c0 += 32) { /* (the tile's rows past m, and columns, were never written) */
            muon__x_load(muon__x_atile(e, r0, c0), 32, e->m - r0 < 32 ? e->m - r0 : 32, e->m - c0 < 32 ? e->m - c0 : 32,
                         0, 0, t);
            for (k = 0; k < 1024; k++) t[k] = e->b * t[k];
            muon__x_rows_pairs(t, e->pab + r0 * e->mp + c0 * 32, (uint16_t *)(void *)tt);
            if (r0 != c0) muon__x_pairs_to_trows((const uint16_t *)(const void *)tt, e->pab + c0 * e->mp + r0 * 32);
        }
}

/* e's arrays in the region mem (muon__xns_bytes(e->m, e->n, nt) bytes, cache-line aligned: the
 * caller checked its size), laid out as muon__xns_sizes counts them; e->m, e->n set */
static void muon__xns_place(muon__xns *e, unsigned char *mem, int nt)
{
    size_t sz[3] = {0, 0, 0};
    (void)muon__xns_sizes(e->xb, e->m, e->n, nt, sz, &e->per, &e->cbytes);
    e->mp = muon__gemm_round_up(e->m, 32);
    e->np = muon__gemm_round_up(e->n, 32);
    e->A = (float *)(void *)mem;
    mem += sz[0];
    e->pax = (uint16_t *)(void *)mem;
    e->pbt = (uint16_t *)(void *)(mem + sz[1]);
    e->pbn[0] = (uint16_t *)(void *)(mem + 2 * sz[1]);
    e->pbn[1] = (uint16_t *)(void *)(mem + 3 * sz[1]);
    mem += 4 * sz[1];
    e->paa = (uint16_t *)(void *)mem;
    e->pba = (uint16_t *)(void *)(mem + sz[2]);
    e->pab = (uint16_t *)(void *)(mem + 2 * sz[2]);
    e->scratch = mem + 3 * sz[2];
    e->nt = nt;
}

/* The engine's bf16 NS of G (rows x cols, ld ldg; normalised by inv) into out (ld ldo), in the
 * region mem of muon__xns_bytes(m, n, nt) bytes (cache-line aligned), on nt threads. G may be
 * out: it is read in full before anything is written. MUON_ERR_RANGE (out untouched) where the
 * result is not finite. */
static MUON__NOINLINE muon_status muon__ns_bf16_amx(const muon__gemm_kernel *kr, const muon__ns_coeffs *co, const float *G,
                                                    size_t rows, size_t cols, size_t ldg, double inv, float *out, size_t ldo,
                                                    unsigned char *mem, int nt)
{
    muon__xns e;
    int k, tid;
    e.xb = kr->ns_cb;
    e.xkc = kr->ns_kc;
    e.tall = rows > cols;
    e.m = e.tall ? cols : rows;
    e.n = e.tall ? rows : cols;
    e.G = G;
    e.ldg = ldg;
    e.inv = inv;
    e.out = out;
    e.ldo = ldo;
    muon__xns_place(&e, mem, nt);
    e.cur = 0;
    e.last = 0;
    muon__x_io(&e, 0);
    for (k = 0; k < co->steps; k++) {
        const double *tr = co->triple(co->sched, k);
        e.a = (float)tr[0];
        e.b = (float)tr[1];
        e.c = (float)tr[2];
        e.last = k + 1 == co->steps;
        for (tid = 0; tid < nt; tid++) *muon__x_flag(&e, tid) = 0; /* the last product sets them */
        muon__x_product(&e, 0);
        if (e.c != 0.0f)
            muon__x_product(&e, 1);
        else
            muon__x_scale_a(&e);
        muon__x_product(&e, 2);
        e.cur ^= 1;
    }
    for (tid = 0; tid < nt && co->steps > 0; tid++)
        if (*muon__x_flag(&e, tid)) return MUON_ERR_RANGE;
    muon__x_io(&e, 1);
    return MUON_OK;
}
/* the entry's ns_run hook: on as many threads as the region holds (at most the products' team) */
static muon_status muon__xns_run(const muon__gemm_kernel *kr, const muon__ns_coeffs *co, const float *G, size_t rows,
                                 size_t cols, size_t ldg, double inv, float *out, size_t ldo, unsigned char *reg,
                                 size_t regb, int threads, int *ran)
{
    size_t m = rows < cols ? rows : cols, n = rows < cols ? cols : rows;
    int t = muon__threads_for((double)m * (double)m * (double)n, threads);
    while (t > 1 && muon__xns_bytes(kr, m, n, t) > regb) t--;
    *ran = muon__xns_bytes(kr, m, n, t) != 0 && muon__xns_bytes(kr, m, n, t) <= regb;
    if (!*ran) return MUON_OK;
    return muon__ns_bf16_amx(kr, co, G, rows, cols, ldg, inv, out, ldo, reg, t);
}
#endif /* MUON__BF16_AMX */

/* ---- the kernel table ------------------------------------------------------------------
 * Every kernel described once: its name (precision, ISA, MR x NR), the micro-kernel, its own
 * cache blocks (MC, KC, NC), its packed layout and packers, its SSYRK variant that reads A in
 * place, its per-thread enter/leave, and its Newton-Schulz engine (hooks and blocks; AMX). The blocked
 * loops and the macro-kernel read these fields; muon__gemm_choose is the one place a product's
 * kernel is chosen (bf16: the rule muon__gemm_pick_bf16_as). */
enum { /* a bf16 product's request (muon__ns_view.bf16_kernel; the tests name all of them) */
    MUON__BF16_BEST = 0,
    MUON__BF16_REF = 1,
    MUON__BF16_EMU = 2,
    MUON__BF16_DPK = 3,  /* vdpbf16ps; on AArch64 BFDOT */
    MUON__BF16_AMXK = 4, /* AMX (where not compiled: the best) */
    MUON__BF16_MMLAK = 5 /* AArch64 BFMMLA (where not compiled: the best without AMX) */
};
/* SSYRK's in-place split instances of the build's fp32 kernel (AVX-512, AVX2: muon__gemm_ukr_*_split) */
#if defined(MUON__GEMM_NEON)
/* NEON 8 x 8: A micro-panels and B panels have the same [kc][8] layout and grid, so an A
 * micro-panel is its rows' B panel: the kernel itself, a1 unused */
static void muon__gemm_ukr_neon_s8(size_t kc, const float *a, const float *a1, const float *b, float *c, size_t ldc,
                                   float alpha, float beta)
{
    (void)a1;
    muon__gemm_ukr_neon(kc, a, b, c, ldc, alpha, beta);
}
static muon__gemm_ukr2_fn muon__gemm_ukr_neon_split(size_t n0)
{
    return n0 >= MUON__GEMM_NEON_MR ? muon__gemm_ukr_neon_s8 : MUON__NULL;
}
#endif
/* Each kernel's cache blocks, MC, KC, NC (elements; see "Cache blocking" above): its KC, and the
 * MC and NC it keeps where the caches are unknown (elsewhere muon__gemm_cache_blocks derives
 * them from the caches and the kernel's MR, NR and KC). Every kernel has the values measured for
 * the 14 x 32 AVX-512 one: on the NS shapes other values measured within noise
 * (bench/RESULTS.md). -DMUON_GEMM_MC=... (KC, NC) sets them all, and wins over the caches. */
#define MUON__GEMM_BLOCKS(mc, kc, nc) MUON__GEMM_MC(mc), MUON__GEMM_KC(kc), MUON__GEMM_NC(nc)
#define MUON__GEMM_BLK_SCALAR MUON__GEMM_BLOCKS(1008, 384, 512)
#define MUON__GEMM_BLK_AVX512 MUON__GEMM_BLOCKS(1008, 384, 512)
#define MUON__GEMM_BLK_AVX2 MUON__GEMM_BLOCKS(1008, 384, 512)
#define MUON__GEMM_BLK_NEON MUON__GEMM_BLOCKS(1008, 384, 512)
#define MUON__GEMM_BLK_DP MUON__GEMM_BLOCKS(1008, 384, 512)
#define MUON__GEMM_BLK_NEON_BF16 MUON__GEMM_BLOCKS(1008, 384, 512)
#define MUON__GEMM_BLK_AMX MUON__GEMM_BLOCKS(1008, 384, 512)
/* Positional fields (C++11 has no designated initialisers): name, bf16, fn, mr, nr, mc, kc, nc,
 * pack, kgran, esz, pack_a, pack_b, pack_b_block, syrk, enter, leave, ns_bytes, ns_run, ns_cb,
 * ns_kc. */
#define MUON__GEMM_NO_ENGINE MUON__NULL, MUON__NULL, 0, 0
/* fp32: the scalar reference (the tests' path), and the build's kernel */
static const muon__gemm_kernel muon__gemm_k_scalar = {
    "scalar 4x8", 0, muon__gemm_ukr_scalar, MUON__GEMM_SCALAR_MR, MUON__GEMM_SCALAR_NR, MUON__GEMM_BLK_SCALAR,
    MUON__PACK_F32, 1, sizeof(float), muon__gemm_pack_a_f32, muon__gemm_pack_b_f32, MUON__NULL, MUON__NULL,
    MUON__NULL, MUON__NULL, MUON__GEMM_NO_ENGINE};
#if defined(MUON__GEMM_AVX512)
#define MUON__GEMM_B_UKR muon__gemm_ukr_avx512, MUON__GEMM_AVX512_MR, MUON__GEMM_AVX512_NR, MUON__GEMM_BLK_AVX512
static const muon__gemm_kernel muon__gemm_k_build = {
    "avx512 14x32", 0, MUON__GEMM_B_UKR, MUON__PACK_F32, 1, sizeof(float), muon__gemm_pack_a_f32,
    muon__gemm_pack_b_f32, muon__gemm_pack_b_block_simd, muon__gemm_ukr_avx512_split, MUON__NULL, MUON__NULL, MUON__GEMM_NO_ENGINE};
#elif defined(MUON__GEMM_AVX2)
#define MUON__GEMM_B_UKR muon__gemm_ukr_avx2, MUON__GEMM_AVX2_MR, MUON__GEMM_AVX2_NR, MUON__GEMM_BLK_AVX2
static const muon__gemm_kernel muon__gemm_k_build = {
    "avx2 6x16", 0, MUON__GEMM_B_UKR, MUON__PACK_F32, 1, sizeof(float), muon__gemm_pack_a_f32,
    muon__gemm_pack_b_f32, muon__gemm_pack_b_block_simd, muon__gemm_ukr_avx2_split, MUON__NULL, MUON__NULL, MUON__GEMM_NO_ENGINE};
#elif defined(MUON__GEMM_NEON)
#define MUON__GEMM_B_UKR muon__gemm_ukr_neon, MUON__GEMM_NEON_MR, MUON__GEMM_NEON_NR, MUON__GEMM_BLK_NEON
static const muon__gemm_kernel muon__gemm_k_build = {
    "neon 8x8", 0, MUON__GEMM_B_UKR, MUON__PACK_F32, 1, sizeof(float), muon__gemm_pack_a_f32,
    muon__gemm_pack_b_f32, muon__gemm_pack_b_block_simd, muon__gemm_ukr_neon_split, MUON__NULL, MUON__NULL, MUON__GEMM_NO_ENGINE};
#else
#define MUON__GEMM_B_UKR muon__gemm_ukr_scalar, MUON__GEMM_SCALAR_MR, MUON__GEMM_SCALAR_NR, MUON__GEMM_BLK_SCALAR
static const muon__gemm_kernel muon__gemm_k_build = {
    "scalar 4x8", 0, MUON__GEMM_B_UKR, MUON__PACK_F32, 1, sizeof(float), muon__gemm_pack_a_f32,
    muon__gemm_pack_b_f32, MUON__NULL, MUON__NULL, MUON__NULL, MUON__NULL, MUON__GEMM_NO_ENGINE};
#endif
/* bf16: the emulations pack bf16-rounded values into an fp32 kernel's layout (k in swapped
 * pairs, kgran 2): the reference on the scalar kernel, the emulation on the build's */
static const muon__gemm_kernel muon__gemm_k_bf16_ref = {
    "bf16 reference (scalar 4x8)", 1, muon__gemm_ukr_scalar, MUON__GEMM_SCALAR_MR, MUON__GEMM_SCALAR_NR,
    MUON__GEMM_BLK_SCALAR, MUON__PACK_EMU, 2, sizeof(float), muon__gemm_pack_a_emu, muon__gemm_pack_b_emu,
    MUON__NULL, MUON__NULL, MUON__NULL, MUON__NULL, MUON__GEMM_NO_ENGINE};
static const muon__gemm_kernel muon__gemm_k_bf16_emu = {
    "bf16 emulation", 1, MUON__GEMM_B_UKR, MUON__PACK_EMU, 2, sizeof(float), muon__gemm_pack_a_emu,
    muon__gemm_pack_b_emu, MUON__NULL, MUON__NULL, MUON__NULL, MUON__NULL, MUON__GEMM_NO_ENGINE};
#undef MUON__GEMM_B_UKR
#ifdef MUON__BF16_AMX
/* AMX: as a product's kernel (the generic loops), and as the bf16 NS's engine (the same
 * kernel for a single product; a Newton-Schulz on it runs muon__ns_bf16_amx) */
#define MUON__GEMM_K_AMX(engine)                                                                                \
    {"bf16 amx 32x32", 1, muon__gemm_ukr_amx, MUON__GEMM_AMX_MR, MUON__GEMM_AMX_NR, MUON__GEMM_BLK_AMX,         \
     MUON__PACK_AMX, 32, 2, muon__gemm_pack_a_amx, muon__gemm_pack_b_pairs32, muon__gemm_pack_pairs_b_block,    \
     MUON__NULL, muon__amx_enter, muon__amx_leave, engine}
/* the engine's hooks and blocks (C blocks 256: 128 and 512 measured no faster; k blocks 384:
 * 256 and 512 no faster) */
#define MUON__GEMM_AMX_ENGINE muon__xns_bytes, muon__xns_run, 256u, 384u
static const muon__gemm_kernel muon__gemm_k_bf16_amx = MUON__GEMM_K_AMX(MUON__GEMM_NO_ENGINE);
static const muon__gemm_kernel muon__gemm_k_bf16_amx_engine = MUON__GEMM_K_AMX(MUON__GEMM_AMX_ENGINE);
#undef MUON__GEMM_AMX_ENGINE
#undef MUON__GEMM_K_AMX
#endif
#if defined(MUON__BF16_NEON)
static const muon__gemm_kernel muon__gemm_k_bf16_dp = {
    "bf16 neon bfdot 8x8", 1, muon__gemm_ukr_neon_bf16, MUON__GEMM_NBF_MR, MUON__GEMM_NBF_NR,
    MUON__GEMM_BLK_NEON_BF16, MUON__PACK_DP, 2, 2, muon__gemm_pack_a_pairs, muon__gemm_pack_b_pairs, MUON__NULL,
    MUON__NULL, MUON__NULL, MUON__NULL, MUON__GEMM_NO_ENGINE};
static const muon__gemm_kernel muon__gemm_k_bf16_mmla = {
    "bf16 neon bfmmla 8x8", 1, muon__gemm_ukr_neon_bfmmla, MUON__GEMM_NBF_MR, MUON__GEMM_NBF_NR,
    MUON__GEMM_BLK_NEON_BF16, MUON__PACK_MMLA, 4, 2, muon__gemm_pack_a_quads, muon__gemm_pack_b_quads, MUON__NULL,
    MUON__NULL, MUON__NULL, MUON__NULL, MUON__GEMM_NO_ENGINE};
#elif defined(MUON__BF16_DP)
static const muon__gemm_kernel muon__gemm_k_bf16_dp = {
    "bf16 avx512-bf16 14x32", 1, muon__gemm_ukr_dp, MUON__GEMM_DP_MR, MUON__GEMM_DP_NR, MUON__GEMM_BLK_DP,
    MUON__PACK_DP, 2, 2, muon__gemm_pack_a_pairs, muon__gemm_pack_b_pairs32, muon__gemm_pack_pairs_b_block,
    MUON__NULL, MUON__NULL, MUON__NULL, MUON__GEMM_NO_ENGINE};
#endif
/* The kernels a product can run on, for the size queries (the largest packing space, or engine
 * region, over a range of them): the build's fp32 kernel first, then the bf16 ones as compiled
 * (AMX twice: its products, and its Newton-Schulz engine), then the bf16 reference (the tests'
 * path only) last. */
static const muon__gemm_kernel *const muon__gemm_table[] = {
    &muon__gemm_k_build, &muon__gemm_k_bf16_emu,
#if defined(MUON__BF16_NEON)
    &muon__gemm_k_bf16_dp, &muon__gemm_k_bf16_mmla,
#elif defined(MUON__BF16_DP)
    &muon__gemm_k_bf16_dp,
#endif
#ifdef MUON__BF16_AMX
    &muon__gemm_k_bf16_amx, &muon__gemm_k_bf16_amx_engine,
#endif
    &muon__gemm_k_bf16_ref};
#define MUON__GEMM_NTABLE (sizeof muon__gemm_table / sizeof muon__gemm_table[0])

#ifdef MUON__BF16_DP
/* The one run-time fact of the bf16 rule besides AMX's grant (muon__gemm_pick_bf16_as): whether
 * this CPU's vdpbf16ps outruns its fp32 FMA, asked once per process: the best of three timings
 * (rdtsc) of 12 independent chains of each; vdpbf16ps does 64 flops, a zmm FMA 32. The Xeon of
 * bench/RESULTS.md ("bf16 Newton-Schulz without AMX") retires one vdpbf16ps per two cycles and
 * two FMAs per cycle: there the fp32 kernel on bf16-rounded operands (the emulation) runs the
 * bf16 NS 1.4-1.6x faster. A CPU with a full-rate vdpbf16ps (twice the FMA's flops) gets the
 * dot-product kernel.
 * Why a probe and not a compile-time rule: both kinds of core are built with the same target
 * flags (-mavx512bf16, -march=sapphirerapids or znver4 alike), so the compiler's macros cannot
 * tell a half-rate vdpbf16ps from a full-rate one. The choice moves speed only, never a result:
 * the two kernels give the same bits (tests/test_muon_bf16.c, test_products_all_kernels), and
 * test_dp_choice forces each answer through the rule and checks the kernel it gives. */
#define MUON__DP_Z12(I) I " %0, %0, %%zmm20\n\t" I " %0, %0, %%zmm21\n\t" I " %0, %0, %%zmm22\n\t" \
    I " %0, %0, %%zmm23\n\t" I " %0, %0, %%zmm24\n\t" I " %0, %0, %%zmm25\n\t" I " %0, %0, %%zmm26\n\t" \
    I " %0, %0, %%zmm27\n\t" I " %0, %0, %%zmm28\n\t" I " %0, %0, %%zmm29\n\t" I " %0, %0, %%zmm30\n\t" \
    I " %0, %0, %%zmm31\n\t"
#define MUON__DP_ZERO "vpxord %%zmm20, %%zmm20, %%zmm20\n\t" "vmovaps %%zmm20, %%zmm21\n\t" \
    "vmovaps %%zmm20, %%zmm22\n\t" "vmovaps %%zmm20, %%zmm23\n\t" "vmovaps %%zmm20, %%zmm24\n\t" \
    "vmovaps %%zmm20, %%zmm25\n\t" "vmovaps %%zmm20, %%zmm26\n\t" "vmovaps %%zmm20, %%zmm27\n\t" \
    "vmovaps %%zmm20, %%zmm28\n\t" "vmovaps %%zmm20, %%zmm29\n\t" "vmovaps %%zmm20, %%zmm30\n\t" \
    "vmovaps %%zmm20, %%zmm31\n\t"
#define MUON__DP_CLOBBERS "ecx", "cc", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", \
    "xmm27", "xmm28", "xmm29", "xmm30", "xmm31"
/* cycles of 256 rounds of 12 independent vdpbf16ps (dp) or vfmadd231ps, the best of 3 (in asm:
 * the same instructions at every optimisation level; operands ~1e-3, no denormals) */
static unsigned long long muon__dp_time(int dp)
{
    const __m512 x = _mm512_set1_ps(1e-3f); /* as bf16 pairs: 0x3a83 0x126f, both normal */
    unsigned long long t, best = ~0ull;
    int rep;
    for (rep = 0; rep < 3; rep++) {
        t = __rdtsc();
        if (dp)
            __asm__ __volatile__(MUON__DP_ZERO "mov $256, %%ecx\n1:\n\t" MUON__DP_Z12("vdpbf16ps")
                                 "dec %%ecx\n\tjnz 1b" : : "v"(x) : MUON__DP_CLOBBERS);
        else
            __asm__ __volatile__(MUON__DP_ZERO "mov $256, %%ecx\n1:\n\t" MUON__DP_Z12("vfmadd231ps")
                                 "dec %%ecx\n\tjnz 1b" : : "v"(x) : MUON__DP_CLOBBERS);
        t = __rdtsc() - t;
        if (t < best) best = t;
    }
    return best;
}
#undef MUON__DP_Z12
#undef MUON__DP_ZERO
#undef MUON__DP_CLOBBERS
static int muon__bf16_dp_fast(void)
{
    static volatile int known = 0; /* 0: not asked yet; 1: vdpbf16ps; 2: the fp32 kernel */
    if (!known) {
        /* per flop: dp does 64 per instruction, fma 32; vdpbf16ps wins if t_dp < 2 t_fma / 1.1 */
        unsigned long long td = muon__dp_time(1), tf = muon__dp_time(0);
        int v = (double)td * 1.1 < 2.0 * (double)tf ? 1 : 2;
        __sync_bool_compare_and_swap(&known, 0, v); /* the first answer stays: one kernel per process */
    }
    return known == 1;
}
#endif

/* The bf16 rule: the kernel for request `which` given the two facts of the machine it depends
 * on, amx_ok (AMX compiled, and the kernel grants the tile data: muon__amx_ready) and dp_fast
 * (vdpbf16ps outruns the fp32 FMA: muon__bf16_dp_fast). A pure function, so that the tests can
 * force every outcome; muon__gemm_choose asks the facts. Fastest compiled first:
 *   REF, EMU: the scalar reference, the emulation on the build's kernel (the tests' names);
 *   BEST with AMX: the AMX engine (a single product: the AMX kernel); AMXK with AMX: the AMX kernel;
 *   AArch64 with BF16: BFMMLA unless BFDOT (DPK) is named (not timed: BFMMLA does twice BFDOT's
 *     multiply-adds per instruction and is what Arm's own bf16 GEMMs build on);
 *   x86 with AVX512-BF16: vdpbf16ps where dp_fast (DPK: always), else the emulation;
 *   otherwise the emulation. */
static const muon__gemm_kernel *muon__gemm_pick_bf16_as(int which, int amx_ok, int dp_fast)
{
    (void)amx_ok;
    (void)dp_fast;
    if (which == MUON__BF16_REF) return &muon__gemm_k_bf16_ref;
    if (which == MUON__BF16_EMU) return &muon__gemm_k_bf16_emu;
#ifdef MUON__BF16_AMX
    if (amx_ok && which == MUON__BF16_BEST) return &muon__gemm_k_bf16_amx_engine;
    if (amx_ok && which == MUON__BF16_AMXK) return &muon__gemm_k_bf16_amx;
#endif
#if defined(MUON__BF16_NEON)
    return which == MUON__BF16_DPK ? &muon__gemm_k_bf16_dp : &muon__gemm_k_bf16_mmla;
#elif defined(MUON__BF16_DP)
    return which == MUON__BF16_DPK || dp_fast ? &muon__gemm_k_bf16_dp : &muon__gemm_k_bf16_emu;
#else
    return &muon__gemm_k_bf16_emu;
#endif
}
/* The one chooser: the kernel of a product (bf16 0: fp32, `which` 1 for the scalar reference,
 * else the build's kernel; bf16 1: request `which`, a MUON__BF16_*). Called once per product by
 * the entry points, once per Newton-Schulz by muon__prod_make (whose kernel then runs all of
 * its products, and whose ns_run hook runs a bf16 NS as one engine: AMX's). */
static const muon__gemm_kernel *muon__gemm_choose(int bf16, int which)
{
    int amx_ok = 0, dp_fast = 0;
    if (!bf16) return which ? &muon__gemm_k_scalar : &muon__gemm_k_build;
#ifdef MUON__BF16_AMX
    if (which == MUON__BF16_BEST || which == MUON__BF16_AMXK) amx_ok = muon__amx_ready();
#endif
#ifdef MUON__BF16_DP /* (asked only where the rule reads it: the probe runs once per process) */
    if (!amx_ok && which != MUON__BF16_REF && which != MUON__BF16_EMU && which != MUON__BF16_DPK)
        dp_fast = muon__bf16_dp_fast();
#endif
    return muon__gemm_pick_bf16_as(which, amx_ok, dp_fast);
}

/* A partial tile (edge of C, or a tile crossing SSYRK's diagonal) from t (mr x nr, ld nr):
 * element (r, s) is written only where s - r <= diag (SSYRK: column <= row). */
static void muon__gemm_store_partial(const float *t, size_t nr, float *c, size_t ldc, size_t mr_eff,
                                     size_t nr_eff, float alpha, float beta, ptrdiff_t diag)
{
    size_t r, s;
    for (r = 0; r < mr_eff; r++) {
        ptrdiff_t lim = diag + (ptrdiff_t)r; /* s <= lim */
        size_t send;
        if (lim < 0) continue;
        send = (size_t)lim + 1 < nr_eff ? (size_t)lim + 1 : nr_eff;
        for (s = 0; s < send; s++) {
            float v = alpha * t[r * nr + s];
            c[r * ldc + s] = beta == 0.0f ? v : v + beta * c[r * ldc + s];
        }
    }
}

/* ---- driver ------------------------------------------------------------------------------ */
typedef struct muon__gemm_problem {
    muon_transpose ta, tb;
    size_t m, n, k;
    float alpha, beta;
    const float *A, *B;
    size_t lda, ldb, ldc;
    float *C;
    int syrk; /* C = op(A) op(A)^T: only tiles touching the lower triangle, then mirrored */
} muon__gemm_problem;


/* Block sizes of a problem. kc (the k split, which fixes every C element's summation order)
 * depends on k only; mc is the largest A panel any thread packs (threads block their own rows
 * in pieces of at most mc, always starting on a multiple of MR, so tiles never move). */
typedef struct muon__gemm_blocks {
    size_t mc, kc, nc; /* mc: multiple of mr; nc: multiple of nr */
    size_t kgran, esz; /* the kernel's: a packed k block holds round_up(kc, kgran) values */
    size_t tile;       /* the kernel's edge tile, MR x NR floats */
    size_t arows;      /* rows of the A region: mc, or up to 2 NR more (SSYRK's panels of its rows) */
} muon__gemm_blocks;

/* The blocks of kernel geometry mr x nr (k granule kgran, esz bytes a packed value) under the
 * cache bounds mcb, kcb, ncb (the kernel's, or the build's defaults for a size query). */
static MUON__ALWAYS_INLINE muon__gemm_blocks muon__gemm_blocking_geo(size_t mr, size_t nr, size_t kgran, size_t esz,
                                                                    size_t mcb, size_t kcb, size_t ncb, size_t m,
                                                                    size_t n, size_t k)
{
    muon__gemm_blocks bl;
    size_t mcmax = mcb / mr * mr, ncmax = ncb / nr * nr, kcmax = kcb, nb;
    if (mcmax < mr) mcmax = mr;
    if (ncmax < nr) ncmax = nr;
    if (kcmax < 1) kcmax = 1;
    bl.mc = muon__gemm_round_up(m, mr) < mcmax ? muon__gemm_round_up(m, mr) : mcmax;
    nb = muon__gemm_ceil_div(k, kcmax);
    bl.kc = muon__gemm_ceil_div(k, nb); /* balanced: k = 1024 runs as 3 x 342 */
    bl.nc = n < ncmax ? muon__gemm_round_up(n, nr) : ncmax;
    bl.kgran = kgran;
    bl.esz = esz;
    bl.tile = mr * nr;
    /* SSYRK's panels of a row block's rows span at most mc + 2 NR rows, and no more than op(A) */
    bl.arows = muon__gemm_round_up(m, nr) < bl.mc + 2 * nr ? muon__gemm_round_up(m, nr) : bl.mc + 2 * nr;
    if (bl.arows < bl.mc) bl.arows = bl.mc;
    return bl;
}
/* Kernel kr's MC and NC bounds on this CPU: from the caches (muon__gemm_cache_blocks), or as
 * -DMUON_GEMM_MC / _NC set them; its KC is kr->kc everywhere. */
static MUON__ALWAYS_INLINE void muon__gemm_bounds(const muon__gemm_kernel *kr, size_t *mc, size_t *nc)
{
    muon__caches c = muon__caches_get();
    muon__gemm_cache_blocks(&c, kr->mr, kr->nr, kr->esz, kr->kc, kr->mc, kr->nc, mc, nc);
#ifdef MUON_GEMM_MC
    *mc = kr->mc;
#endif
#ifdef MUON_GEMM_NC
    *nc = kr->nc;
#endif
}
static muon__gemm_blocks muon__gemm_blocking(const muon__gemm_kernel *kr, size_t m, size_t n, size_t k)
{
    size_t mcb, ncb;
    muon__gemm_bounds(kr, &mcb, &ncb);
    return muon__gemm_blocking_geo(kr->mr, kr->nr, kr->kgran, kr->esz, mcb, kr->kc, ncb, m, n, k);
}

/* Packing space per thread: its own A panel (mc x kc) and B block (kc x nc), cache-line aligned. */
static size_t muon__gemm_bytes_a(const muon__gemm_blocks *bl)
{
    return muon__gemm_round_up(bl->arows * muon__gemm_round_up(bl->kc, bl->kgran) * bl->esz, MUON__GEMM_ALIGN);
}
static size_t muon__gemm_bytes_b(const muon__gemm_blocks *bl)
{
    return muon__gemm_round_up(bl->nc * muon__gemm_round_up(bl->kc, bl->kgran) * bl->esz, MUON__GEMM_ALIGN);
}
/* The edge tile (C's partial tiles and SSYRK's diagonal go through it), per thread: from the
 * workspace, not the stack, so that a thread's frame stays small (docs/embedding.md, "Stack"). */
#define MUON__GEMM_BYTES_T \
    ((MUON__GEMM_MR_MAX * MUON__GEMM_NR_MAX * sizeof(float) + MUON__GEMM_ALIGN - 1) / MUON__GEMM_ALIGN * \
     MUON__GEMM_ALIGN)
static size_t muon__gemm_bytes_t(const muon__gemm_blocks *bl)
{
    return muon__gemm_round_up(bl->tile * sizeof(float), MUON__GEMM_ALIGN);
}
static size_t muon__gemm_bytes_per_thread(const muon__gemm_blocks *bl)
{
    return muon__gemm_bytes_a(bl) + muon__gemm_bytes_b(bl) + muon__gemm_bytes_t(bl);
}
static size_t muon__gemm_ws_need(const muon__gemm_blocks *bl, int threads)
{
    return MUON__GEMM_ALIGN + (size_t)threads * muon__gemm_bytes_per_thread(bl);
}

/* The part of C thread tid of nt owns: rows [r0, r1) and NR column panels [q0, q1).
 * Tiles stay on the grid anchored at C's origin whatever the split.
 * SSYRK: rows, in whole MR micro-panels of equal lower-triangle area (micro-panel q carries
 * about (q + 1) * MR columns). GEMM: each thread repacks the operand it shares, so split the
 * dimension that makes the smaller one shared: rows (B repacked per thread) when m >= n,
 * columns (A repacked per thread) when n > m - the NS product B X is m x m times m x n. */
static void muon__gemm_thread_part(const muon__gemm_problem *g, const muon__gemm_kernel *kr, int tid, int nt,
                                   size_t *r0, size_t *r1, size_t *q0, size_t *q1)
{
    size_t np = muon__gemm_ceil_div(g->m, kr->mr), nq = muon__gemm_ceil_div(g->n, kr->nr), a, b;
    if (g->syrk) {
        double total = 0.5 * (double)np * (double)(np + 1);
        double w0 = total * (double)tid / (double)nt, w1 = total * (double)(tid + 1) / (double)nt;
        a = 0;
        while (a < np && 0.5 * (double)a * (double)(a + 1) < w0) a++;
        b = a;
        while (b < np && 0.5 * (double)b * (double)(b + 1) < w1) b++;
        if (tid == nt - 1) b = np;
    } else {
        size_t parts = g->m >= g->n ? np : nq;
        a = parts * (size_t)tid / (size_t)nt;
        b = parts * (size_t)(tid + 1) / (size_t)nt;
    }
    if (g->syrk || g->m >= g->n) {
        *r0 = a * kr->mr < g->m ? a * kr->mr : g->m;
        *r1 = b * kr->mr < g->m ? b * kr->mr : g->m;
        *q0 = 0;
        *q1 = nq;
    } else {
        *r0 = 0;
        *r1 = g->m;
        *q0 = a;
        *q1 = b;
    }
}

/* The most threads a problem can use: one MR row panel (or NR column panel) each. */
static size_t muon__gemm_max_parts(const muon__gemm_problem *g, const muon__gemm_kernel *kr)
{
    return g->syrk || g->m >= g->n ? muon__gemm_ceil_div(g->m, kr->mr) : muon__gemm_ceil_div(g->n, kr->nr);
}

/* SSYRK: copy the lower triangle of rows [r0, r1) onto the upper one: C[j][i] = C[i][j], j < i.
 * In 32 x 32 blocks (source and destination both stay in L1): a block wholly below the diagonal
 * goes through 16 AVX 8 x 8 transposes; blocks on the diagonal, and every block without AVX,
 * element by element. */
static void muon__gemm_mirror_rows(float *C, size_t ldc, size_t r0, size_t r1)
{
    const size_t TB = 32;
    size_t ib, jb, i, j;
    for (ib = r0; ib < r1; ib += TB) {
        size_t ie = ib + TB < r1 ? ib + TB : r1;
        for (jb = 0; jb + 1 < ie; jb += TB) {
            size_t je = jb + TB;
#ifdef MUON__GEMM_HAVE_TR8
            if (ie - ib == TB && je <= ib) {
                size_t i8, j8;
                for (i8 = ib; i8 < ie; i8 += 8)
                    for (j8 = jb; j8 < je; j8 += 8) muon__v_tr8x8(C + i8 * ldc + j8, ldc, C + j8 * ldc + i8, ldc);
                continue;
            }
#endif
            for (i = ib; i < ie; i++) {
                size_t jend = je < i ? je : i;
                for (j = jb; j < jend; j++) C[j * ldc + i] = C[i * ldc + j];
            }
        }
    }
}

/* The macro-kernel (BLIS loops 2 and 1): C rows [i0, i0 + npa*MR) x columns of the NR panels
 * [jq, jqend) += the packed A panel (npa micro-panels, kc deep) times the packed B block, one
 * MR x NR micro-kernel call per tile; partial tiles (C's edges, SSYRK's diagonal) go through
 * `tile` and a masked store. beta applies to this k block (1 after the first). */
static void muon__gemm_macro(const muon__gemm_problem *g, const muon__gemm_kernel *kr,
                             const unsigned char *apack, const unsigned char *bpack, size_t i0, size_t npa,
                             size_t jq, size_t jqend, size_t kc, float beta, float *tile)
{
    const size_t mr = kr->mr, nr = kr->nr, kk = muon__gemm_round_up(kc, kr->kgran);
    size_t ir, q;
    for (ir = 0; ir < npa; ir++) {
        size_t ii = i0 + ir * mr, mre = g->m - ii < mr ? g->m - ii : mr;
        const float *ap = (const float *)(const void *)(apack + ir * mr * kk * kr->esz);
        for (q = jq; q < jqend; q++) {
            size_t jj = q * nr, nre = g->n - jj < nr ? g->n - jj : nr;
            const float *bp = (const float *)(const void *)(bpack + (q - jq) * nr * kk * kr->esz);
            float *cp = g->C + ii * g->ldc + jj;
            if (g->syrk && jj > ii + mre - 1) break; /* this tile and later: above */
            if (mre == mr && nre == nr && (!g->syrk || jj + nr - 1 <= ii)) {
                kr->fn(kk, ap, bp, cp, g->ldc, g->alpha, beta);
            } else {
                ptrdiff_t diag = g->syrk ? (ptrdiff_t)ii - (ptrdiff_t)jj : (ptrdiff_t)nr;
                kr->fn(kk, ap, bp, tile, nr, 1.0f, 0.0f);
                muon__gemm_store_partial(tile, nr, cp, g->ldc, mre, nre, g->alpha, beta, diag);
            }
        }
    }
}

/* SSYRK on a kernel with an in-place variant (kr->syrk: the build's AVX-512, AVX2 or NEON fp32
 * kernel). For row block [i0, i0 + mc) and k block [p0, p0 + kc): both operands are the same rows of
 * op(A), so each k block is packed once, as B panels ([kc][NR]).
 * The panels of the block's own rows (global panels [qr0, npb)) go to the A region (arows: mc + 2
 * NR rows hold them), where the split instances of the kernel read each A micro-panel in place
 * (kr->syrk); the columns left of them are packed a chunk at a time into the B region,
 * as for a GEMM. The same values in the same k order as packing A from X: the same
 * bits. (Rows past op(A)'s end read some packed values; their C rows are never stored.) */
static MUON__ALWAYS_INLINE void muon__gemm_syrk_tiles(const muon__gemm_problem *g, const muon__gemm_kernel *kr,
                                                   const float *ra, size_t qr0, size_t npb, const float *bp,
                                                   size_t jq, size_t jqend, size_t i0, size_t npa, size_t kc,
                                                   float beta, float *tile)
{
    const size_t mr = kr->mr, nr = kr->nr, ps = nr * kc;
    size_t ir, q;
    for (ir = 0; ir < npa; ir++) {
        size_t ii = i0 + ir * mr, mre = g->m - ii < mr ? g->m - ii : mr, pa = ii / nr, n0 = nr - ii % nr;
        const float *a = ra + (pa - qr0) * ps + ii % nr;
        const float *a1 = n0 < mr && pa + 1 < npb ? ra + (pa + 1 - qr0) * ps : a; /* the next panel */
        muon__gemm_ukr2_fn fn = kr->syrk(n0); /* (n0 is even: MR and NR are) */
        for (q = jq; q < jqend; q++) {
            size_t jj = q * nr, nre = g->n - jj < nr ? g->n - jj : nr;
            const float *bq = bp + (q - jq) * ps;
            float *cp = g->C + ii * g->ldc + jj;
            if (jj > ii + mre - 1) break; /* this tile and later: above */
            if (mre == mr && nre == nr && jj + nr - 1 <= ii) {
                fn(kc, a, a1, bq, cp, g->ldc, g->alpha, beta);
            } else {
                fn(kc, a, a1, bq, tile, nr, 1.0f, 0.0f);
                muon__gemm_store_partial(tile, nr, cp, g->ldc, mre, nre, g->alpha, beta, (ptrdiff_t)ii - (ptrdiff_t)jj);
            }
        }
    }
}
static MUON__ALWAYS_INLINE void muon__gemm_syrk_direct(const muon__gemm_problem *g, const muon__gemm_kernel *kr,
                                                    const muon__gemm_blocks *bl, size_t i0, size_t mc, size_t p0,
                                                    size_t kc, float beta, unsigned char *apack,
                                                    unsigned char *bpack, float *tile)
{
    const size_t nr = kr->nr, ncp = bl->nc / nr, ps = nr * kc;
    const size_t qr0 = i0 / nr, npb = muon__gemm_ceil_div(i0 + mc, nr), npa = muon__gemm_ceil_div(mc, kr->mr);
    float *ra = (float *)(void *)apack, *bp = (float *)(void *)bpack;
    size_t q, jq, jqend;
    for (q = qr0; q < npb; q++)
        muon__gemm_pack_b(g->tb, g->B, g->ldb, q * nr, g->n - q * nr < nr ? g->n - q * nr : nr, p0, kc, nr,
                          ra + (q - qr0) * ps);
    for (jq = 0; jq < qr0; jq = jqend) { /* the columns left of the block's rows */
        jqend = jq + ncp < qr0 ? jq + ncp : qr0;
        for (q = jq; q < jqend; q++) muon__gemm_pack_b(g->tb, g->B, g->ldb, q * nr, nr, p0, kc, nr, bp + (q - jq) * ps);
        muon__gemm_syrk_tiles(g, kr, ra, qr0, npb, bp, jq, jqend, i0, npa, kc, beta, tile);
    }
    for (jq = qr0; jq < npb; jq = jqend) { /* the block's own columns, read from the A region */
        jqend = jq + ncp < npb ? jq + ncp : npb;
        muon__gemm_syrk_tiles(g, kr, ra, qr0, npb, ra + (jq - qr0) * ps, jq, jqend, i0, npa, kc, beta, tile);
    }
}

/* One thread's share: rows [r0, r1) x column panels [q0, q1) of C, all of k: the blocked
 * loops (BLIS loops 5, 4, 3: MC row blocks, KC k blocks, NC column blocks) with their packing,
 * around the macro-kernel. No sharing, no barrier: it packs its own A panels and B blocks. */
static void muon__gemm_part(const muon__gemm_problem *g, const muon__gemm_kernel *kr,
                            const muon__gemm_blocks *bl, size_t r0, size_t r1, size_t q0, size_t q1,
                            unsigned char *apack, unsigned char *bpack, float *tile)
{
    const size_t mr = kr->mr, nr = kr->nr, ncp = bl->nc / nr;
    size_t nblk, mcs, i0, p0;
    if (r0 >= r1 || q0 >= q1) return;
    if (kr->enter) kr->enter();
    nblk = muon__gemm_ceil_div(r1 - r0, bl->mc); /* balanced row blocks, multiples of MR */
    mcs = muon__gemm_round_up(muon__gemm_ceil_div(r1 - r0, nblk), mr);
    for (i0 = r0; i0 < r1; i0 += mcs) {
        size_t mc = r1 - i0 < mcs ? r1 - i0 : mcs, npa = muon__gemm_ceil_div(mc, mr);
        size_t npb = g->syrk ? muon__gemm_ceil_div(i0 + mc, nr) : q1; /* SSYRK: the rest is above */
        for (p0 = 0; p0 < g->k; p0 += bl->kc) {
            size_t kc = g->k - p0 < bl->kc ? g->k - p0 : bl->kc, qa, jq;
            size_t pstride = muon__gemm_round_up(kc, kr->kgran) * kr->esz; /* bytes per packed row */
            float beta = p0 == 0 ? g->beta : 1.0f;
            if (g->syrk && kr->syrk) { /* A read in place from the B panels */
                muon__gemm_syrk_direct(g, kr, bl, i0, mc, p0, kc, beta, apack, bpack, tile);
                continue;
            }
            for (qa = 0; qa < npa; qa++) {
                size_t ii = i0 + qa * mr;
                kr->pack_a(kr, g->ta, g->A, g->lda, ii, g->m - ii < mr ? g->m - ii : mr, p0, kc,
                           apack + qa * mr * pstride);
            }
            for (jq = q0; jq < npb; jq += ncp) {
                size_t jqend = jq + ncp < npb ? jq + ncp : npb, q;
                if (kr->pack_b_block && g->tb == MUON_NO_TRANS) {
                    kr->pack_b_block(g->B, g->ldb, jq, jqend, g->n, p0, kc, kr->kgran, bpack);
                } else {
                    for (q = jq; q < jqend; q++) {
                        size_t jj = q * nr;
                        kr->pack_b(kr, g->tb, g->B, g->ldb, jj, g->n - jj < nr ? g->n - jj : nr, p0, kc,
                                   bpack + (q - jq) * nr * pstride);
                    }
                }
                muon__gemm_macro(g, kr, apack, bpack, i0, npa, jq, jqend, kc, beta, tile);
            }
        }
        /* SSYRK: these rows are final; their mirror lands in the upper triangle, which no
         * thread's tiles write (full tiles lie below the diagonal, partial ones are masked). */
        if (g->syrk) muon__gemm_mirror_rows(g->C, g->ldc, i0, i0 + mc);
    }
    if (kr->leave) kr->leave();
}


static MUON__ALWAYS_INLINE void muon__gemm_drive(const muon__gemm_problem *g, const muon__gemm_kernel *kr,
                             const muon__gemm_blocks *bl, unsigned char *ws, int nthreads)
{
    const size_t per = muon__gemm_bytes_per_thread(bl), ba = muon__gemm_bytes_a(bl), bb = muon__gemm_bytes_b(bl);
    if (nthreads <= 1) { /* no team at all (also the nested case: no fork/join cost) */
        muon__gemm_part(g, kr, bl, 0, g->m, 0, muon__gemm_ceil_div(g->n, kr->nr), ws, ws + ba,
                        (float *)(void *)(ws + ba + bb));
        return;
    }
    {
        MUON__GATE_VARS;
        MUON__OMP(omp parallel num_threads(nthreads) MUON__GATE_CLAUSES)
        {
            int tid = 0, nt = 1;
            size_t r0, r1, q0, q1;
            unsigned char *mine;
            MUON__GATE_IN();
#ifdef _OPENMP
            tid = omp_get_thread_num();
            nt = omp_get_num_threads();
#endif
            mine = ws + (size_t)tid * per;
            muon__gemm_thread_part(g, kr, tid, nt, &r0, &r1, &q0, &q1);
            muon__gemm_part(g, kr, bl, r0, r1, q0, q1, mine, mine + ba, (float *)(void *)(mine + ba + bb));
            MUON__GATE_OUT();
        }
        MUON__GATE_NOTE();
    }
}

/* ---- validation and entry points ---------------------------------------------------------- */
/* A rows x cols matrix stored with leading dimension ld: ld >= cols and rows*ld floats addressable. */
static int muon__gemm_bad_dims(size_t rows, size_t cols, size_t ld)
{
    if (!rows || !cols || ld < cols) return 1;
    if (rows > (SIZE_MAX / sizeof(float)) / ld) return 1;
#ifdef MUON_USE_CBLAS
    if (rows > (size_t)INT_MAX || cols > (size_t)INT_MAX || ld > (size_t)INT_MAX) return 1;
#endif
    return 0;
}

/* Do the memory spans [p, p + (rows-1)*ld + cols) overlap? (conservative: spans, not elements) */
static int muon__gemm_overlap(const float *x, size_t xr, size_t xc, size_t ldx, const float *y, size_t yr,
                              size_t yc, size_t ldy)
{
    uintptr_t xb = (uintptr_t)x, xe = xb + ((xr - 1) * ldx + xc) * sizeof(float);
    uintptr_t yb = (uintptr_t)y, ye = yb + ((yr - 1) * ldy + yc) * sizeof(float);
    return xb < ye && yb < xe;
}

static int muon__gemm_threads_wanted(const muon__gemm_problem *g, int cap)
{
    return muon__threads_for((double)g->m * (double)g->n * (double)g->k, cap);
}

static void muon__gemm_scale_c(const muon__gemm_problem *g)
{
    size_t i, j;
    for (i = 0; i < g->m; i++) {
        float *c = g->C + i * g->ldc;
        size_t jend = g->syrk ? i + 1 : g->n;
        if (g->beta == 0.0f)
            for (j = 0; j < jend; j++) c[j] = 0.0f;
        else if (g->beta != 1.0f)
            for (j = 0; j < jend; j++) c[j] *= g->beta;
    }
    if (g->syrk) muon__gemm_mirror_rows(g->C, g->ldc, 0, g->n);
}


static MUON__ALWAYS_INLINE void muon__gemm_exec(const muon__gemm_problem *g, const muon__gemm_kernel *kr,
                            const muon__gemm_blocks *bl, void *mem, int t)
{
    uintptr_t base = ((uintptr_t)mem + (MUON__GEMM_ALIGN - 1)) & ~(uintptr_t)(MUON__GEMM_ALIGN - 1);
    muon__gemm_drive(g, kr, bl, (unsigned char *)base, t);
}

/* A separate frame for the small-problem stack buffer, so that the workspace path (every
 * Newton-Schulz product of a step) does not carry MUON_GEMM_STACK_BYTES on its stack. */
static MUON__NOINLINE void muon__gemm_exec_stack(const muon__gemm_problem *g, const muon__gemm_kernel *kr,
                                                 const muon__gemm_blocks *bl, int t)
{
    float stackbuf[((size_t)MUON_GEMM_STACK_BYTES + MUON__GEMM_ALIGN) / sizeof(float)];
    muon__gemm_exec(g, kr, bl, stackbuf, t);
}

/* The blocks and thread count of a validated problem on kernel kr (muon__gemm_choose's); returns
 * 0 when alpha == 0 has already been handled (BLAS convention: op(A) op(B) not formed, no 0 * Inf).
 * threads <= 0: the OpenMP default. */
static int muon__gemm_setup(const muon__gemm_problem *g, const muon__gemm_kernel *kr, int threads,
                            muon__gemm_blocks *bl, int *t)
{
    if (g->alpha == 0.0f) {
        muon__gemm_scale_c(g);
        return 0;
    }
    *bl = muon__gemm_blocking(kr, g->m, g->n, g->k);
    *t = threads > 0 ? threads : muon__gemm_threads_wanted(g, 0);
    if ((size_t)*t > muon__gemm_max_parts(g, kr)) *t = (int)muon__gemm_max_parts(g, kr);
    return 1;
}

/* Runs a validated problem in caller workspace ws (not NULL): never allocates, and its call
 * paths never reach muon__gemm_exec_stack's buffer (a step's products stay shallow). */
static muon_status muon__gemm_run_ws(const muon__gemm_problem *g, const muon__gemm_kernel *kr, void *ws,
                                     size_t ws_bytes, int threads)
{
    muon__gemm_blocks bl;
    int t;
    if (!muon__gemm_setup(g, kr, threads, &bl, &t)) return MUON_OK;
    while (t > 1 && muon__gemm_ws_need(&bl, t) > ws_bytes) t--;
    if (muon__gemm_ws_need(&bl, t) > ws_bytes) return MUON_ERR_SIZE;
    muon__gemm_exec(g, kr, &bl, ws, t);
    return MUON_OK;
}

/* Runs a validated problem with its own packing space: the stack buffer when it fits
 * (no allocation), MUON_MALLOC otherwise. */
static muon_status muon__gemm_run(const muon__gemm_problem *g, const muon__gemm_kernel *kr, int threads)
{
    muon__gemm_blocks bl;
    int t;
    void *mem;
    if (!muon__gemm_setup(g, kr, threads, &bl, &t)) return MUON_OK;
    if (muon__gemm_ws_need(&bl, t) <= (size_t)MUON_GEMM_STACK_BYTES) {
        muon__gemm_exec_stack(g, kr, &bl, t);
        return MUON_OK;
    }
    mem = MUON_MALLOC(muon__gemm_ws_need(&bl, t));
    if (!mem) return MUON_ERR_NOMEM;
    muon__gemm_exec(g, kr, &bl, mem, t);
    MUON_FREE(mem);
    return MUON_OK;
}

/* Validation shared by every entry point: nothing is written before it passes. */
static muon_status muon__gemm_check(const muon__gemm_problem *g, const void *ws, int need_ws)
{
    size_t ar = g->ta == MUON_NO_TRANS ? g->m : g->k, ac = g->ta == MUON_NO_TRANS ? g->k : g->m;
    size_t br = g->tb == MUON_NO_TRANS ? g->k : g->n, bc = g->tb == MUON_NO_TRANS ? g->n : g->k;
    if (!g->A || !g->B || !g->C || (need_ws && !ws)) return MUON_ERR_NULL;
    if ((g->ta != MUON_NO_TRANS && g->ta != MUON_TRANS) || (g->tb != MUON_NO_TRANS && g->tb != MUON_TRANS))
        return MUON_ERR_DOMAIN;
    if (!g->m || !g->n || !g->k) return MUON_ERR_SIZE;
    if (muon__gemm_bad_dims(ar, ac, g->lda) || muon__gemm_bad_dims(br, bc, g->ldb) ||
        muon__gemm_bad_dims(g->m, g->n, g->ldc))
        return MUON_ERR_SIZE;
    if (muon__gemm_overlap(g->C, g->m, g->n, g->ldc, g->A, ar, ac, g->lda) ||
        muon__gemm_overlap(g->C, g->m, g->n, g->ldc, g->B, br, bc, g->ldb))
        return MUON_ERR_ALIAS;
    return MUON_OK;
}

/* The _ws forms: does [ws, ws + ws_bytes) overlap the span of A, B or C? (problem validated) */
static int muon__gemm_ws_overlaps(const muon__gemm_problem *g, const void *ws, size_t ws_bytes)
{
    size_t ar = g->ta == MUON_NO_TRANS ? g->m : g->k, ac = g->ta == MUON_NO_TRANS ? g->k : g->m;
    size_t br = g->tb == MUON_NO_TRANS ? g->k : g->n, bc = g->tb == MUON_NO_TRANS ? g->n : g->k;
    uintptr_t wb = (uintptr_t)ws, we = ws_bytes > UINTPTR_MAX - wb ? UINTPTR_MAX : wb + ws_bytes;
    const float *p[3];
    size_t r[3], c[3], ld[3], i;
    p[0] = g->A; r[0] = ar; c[0] = ac; ld[0] = g->lda;
    p[1] = g->B; r[1] = br; c[1] = bc; ld[1] = g->ldb;
    p[2] = g->C; r[2] = g->m; c[2] = g->n; ld[2] = g->ldc;
    if (!ws_bytes) return 0;
    for (i = 0; i < 3; i++) {
        uintptr_t xb = (uintptr_t)p[i], xe = xb + ((r[i] - 1) * ld[i] + c[i]) * sizeof(float);
        if (xb < we && wb < xe) return 1;
    }
    return 0;
}

static muon__gemm_problem muon__gemm_make(int syrk, muon_transpose ta, muon_transpose tb, size_t m, size_t n,
                                          size_t k, float alpha, const float *A, size_t lda, const float *B,
                                          size_t ldb, float beta, float *C, size_t ldc)
{
    muon__gemm_problem g;
    g.ta = ta; g.tb = tb; g.m = m; g.n = n; g.k = k; g.alpha = alpha; g.beta = beta;
    g.A = A; g.B = B; g.lda = lda; g.ldb = ldb; g.C = C; g.ldc = ldc; g.syrk = syrk;
    return g;
}

/* SSYRK as a GEMM: C = op(A) * op(A)^T, the second operand is A read with the other transpose. */
static muon__gemm_problem muon__gemm_make_syrk(muon_transpose ta, size_t n, size_t k, float alpha,
                                               const float *A, size_t lda, float beta, float *C, size_t ldc)
{
    muon_transpose tb = ta == MUON_NO_TRANS ? MUON_TRANS : MUON_NO_TRANS;
    if (ta != MUON_NO_TRANS && ta != MUON_TRANS) tb = ta; /* rejected by the check */
    return muon__gemm_make(1, ta, tb, n, n, k, alpha, A, lda, A, lda, beta, C, ldc);
}

/* Internal entry used by the tests: the built-in path (never CBLAS), a chosen kernel and
 * thread count (threads <= 0: default), allocation when ws is NULL. */
static MUON__GEMM_UNUSED muon_status muon__sgemm_builtin(int scalar, int threads, muon_transpose ta,
                                                         muon_transpose tb, size_t m, size_t n, size_t k,
                                                         float alpha, const float *A, size_t lda,
                                                         const float *B, size_t ldb, float beta, float *C,
                                                         size_t ldc)
{
    muon__gemm_problem g = muon__gemm_make(0, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    muon_status st = muon__gemm_check(&g, MUON__NULL, 0);
    return st != MUON_OK ? st : muon__gemm_run(&g, muon__gemm_choose(0, scalar), threads);
}

static MUON__GEMM_UNUSED muon_status muon__ssyrk_builtin(int scalar, int threads, muon_transpose ta, size_t n,
                                                         size_t k, float alpha, const float *A, size_t lda,
                                                         float beta, float *C, size_t ldc)
{
    muon__gemm_problem g = muon__gemm_make_syrk(ta, n, k, alpha, A, lda, beta, C, ldc);
    muon_status st = muon__gemm_check(&g, MUON__NULL, 0);
    return st != MUON_OK ? st : muon__gemm_run(&g, muon__gemm_choose(0, scalar), threads);
}

static MUON__GEMM_UNUSED const char *muon__gemm_kernel_name(int scalar)
{
    return muon__gemm_choose(0, scalar)->name;
}

#ifdef MUON_USE_CBLAS
static muon_status muon__gemm_cblas(const muon__gemm_problem *g)
{
    if (g->alpha == 0.0f) {
        muon__gemm_scale_c(g);
        return MUON_OK;
    }
    if (g->beta == 0.0f) { /* C is not read: clear it so no BLAS can propagate NaN from it */
        size_t i, j;
        for (i = 0; i < g->m; i++)
            for (j = 0; j < g->n; j++) g->C[i * g->ldc + j] = 0.0f;
    }
    if (!g->syrk) {
        cblas_sgemm(CblasRowMajor, g->ta == MUON_TRANS ? CblasTrans : CblasNoTrans,
                    g->tb == MUON_TRANS ? CblasTrans : CblasNoTrans, (int)g->m, (int)g->n, (int)g->k, g->alpha,
                    g->A, (int)g->lda, g->B, (int)g->ldb, g->beta, g->C, (int)g->ldc);
    } else {
        cblas_ssyrk(CblasRowMajor, CblasLower, g->ta == MUON_TRANS ? CblasTrans : CblasNoTrans, (int)g->n,
                    (int)g->k, g->alpha, g->A, (int)g->lda, g->beta, g->C, (int)g->ldc);
        muon__gemm_mirror_rows(g->C, g->ldc, 0, g->n);
    }
    return MUON_OK;
}
#define MUON__GEMM_EXEC(g) muon__gemm_cblas(g)
#define MUON__GEMM_EXEC_WS(g, kr, ws, ws_bytes, threads) ((void)(kr), (void)(threads), muon__gemm_cblas(g)) /* the BLAS threads itself */
#else
#define MUON__GEMM_EXEC(g) muon__gemm_run(g, muon__gemm_choose(0, 0), 0)
#define MUON__GEMM_EXEC_WS(g, kr, ws, ws_bytes, threads) muon__gemm_run_ws(g, kr, ws, ws_bytes, threads)
#endif

/* Per-thread packing space (and edge tile) for the largest blocks kernel kr can use. */
static size_t muon__gemm_ws_bound(const muon__gemm_kernel *kr)
{
    size_t mc, nc;
    muon__gemm_bounds(kr, &mc, &nc);
    mc += MUON__GEMM_MR_MAX + 2 * MUON__GEMM_NR_MAX, nc += MUON__GEMM_NR_MAX;
    return muon__gemm_round_up(mc * kr->kc * sizeof(float), MUON__GEMM_ALIGN) +
           muon__gemm_round_up(nc * kr->kc * sizeof(float), MUON__GEMM_ALIGN) + MUON__GEMM_BYTES_T;
}

MUONDEF size_t muon_gemm_workspace_size(int threads)
{
    /* the larger of the build's kernel and the scalar reference (the tests' path) */
    size_t bv = muon__gemm_ws_bound(muon__gemm_choose(0, 0)), bs = muon__gemm_ws_bound(muon__gemm_choose(0, 1));
    if (threads <= 0) {
#ifdef _OPENMP
        threads = omp_get_max_threads();
#endif
        if (threads <= 0) threads = 1;
    }
    return MUON__GEMM_ALIGN + (size_t)threads * (bv > bs ? bv : bs);
}

/* The _ws entry points with a team-size cap (the step's muon_config.threads; 0: the default):
 * a capped product still stays on one thread below MUON_GEMM_PARALLEL_MIN or when nested. */
/* The checks of a _ws product (a frame of its own: it returns before the product runs, so its
 * locals are not on the product's stack path) */
static MUON__NOINLINE muon_status muon__gemm_ws_check(const muon__gemm_problem *g, const void *ws, size_t ws_bytes)
{
    muon_status st = muon__gemm_check(g, ws, 1);
    if (st != MUON_OK) return st;
    {   /* the workspace contract holds in every build, CBLAS included */
        muon__gemm_blocks bl = muon__gemm_blocking(muon__gemm_choose(0, 0), g->m, g->n, g->k);
        if (muon__gemm_ws_need(&bl, 1) > ws_bytes) return MUON_ERR_SIZE;
        if (muon__gemm_ws_overlaps(g, ws, ws_bytes)) return MUON_ERR_ALIAS;
    }
    return MUON_OK;
}

static muon_status muon__gemm_ws_entry(const muon__gemm_problem *g, const muon__gemm_kernel *kr, void *ws,
                                       size_t ws_bytes, int threads)
{
    muon_status st = muon__gemm_ws_check(g, ws, ws_bytes);
    if (st != MUON_OK) return st;
    return MUON__GEMM_EXEC_WS(g, kr, ws, ws_bytes, threads > 0 ? muon__gemm_threads_wanted(g, threads) : 0);
}

static muon_status muon__sgemm_ws_t(int threads, muon_transpose ta, muon_transpose tb, size_t m, size_t n,
                                    size_t k, float alpha, const float *A, size_t lda, const float *B, size_t ldb,
                                    float beta, float *C, size_t ldc, void *ws, size_t ws_bytes)
{
    muon__gemm_problem g = muon__gemm_make(0, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    return muon__gemm_ws_entry(&g, muon__gemm_choose(0, 0), ws, ws_bytes, threads);
}

static muon_status muon__ssyrk_ws_t(int threads, muon_transpose ta, size_t n, size_t k, float alpha,
                                    const float *A, size_t lda, float beta, float *C, size_t ldc, void *ws,
                                    size_t ws_bytes)
{
    muon__gemm_problem g = muon__gemm_make_syrk(ta, n, k, alpha, A, lda, beta, C, ldc);
    return muon__gemm_ws_entry(&g, muon__gemm_choose(0, 0), ws, ws_bytes, threads);
}

/* Packing space on t threads of an m x n x k product, the largest over kernels [k0, k1) of
 * muon__gemm_table (each with its own blocks, fitted to the shape). */
static size_t muon__gemm_need_table(size_t k0, size_t k1, size_t m, size_t n, size_t k, int t)
{
    size_t best = 0, i;
    for (i = k0; i < k1; i++) {
        const muon__gemm_kernel *kr = muon__gemm_table[i]; /* (inline: the size queries' stack stays small) */
        size_t mcb, ncb;
        muon__gemm_blocks bl;
        muon__gemm_bounds(kr, &mcb, &ncb);
        bl = muon__gemm_blocking_geo(kr->mr, kr->nr, kr->kgran, kr->esz, mcb, kr->kc, ncb, m, n, k);
        size_t need = muon__gemm_ws_need(&bl, t);
        if (need > best) best = need;
    }
    return best;
}

/* An engine's region through a direct call to its hook (the size queries' stack is held to a
 * budget, tests/stack_budget.txt, and an indirect call there counts as the deepest kernel) */
static size_t muon__gemm_ns_bytes_direct(const muon__gemm_kernel *kr, size_t m, size_t n, int t)
{
#ifdef MUON__BF16_AMX
    if (kr->ns_bytes == muon__xns_bytes) return muon__xns_bytes(kr, m, n, t);
#endif
    (void)kr, (void)m, (void)n, (void)t;
    return 0; /* (no other engine: a new one adds its line above; until then it would find its
               * region too small and its NS would run on the products, never overrun) */
}
/* The largest Newton-Schulz engine region of the table's kernels for an m x n iterate on t
 * threads, with the alignment's slack (0 where no kernel has an engine); SIZE_MAX on overflow */
static size_t muon__gemm_ns_need_table(size_t m, size_t n, int t)
{
    size_t best = 0, i;
    for (i = 0; i < MUON__GEMM_NTABLE; i++) {
        const muon__gemm_kernel *kr = muon__gemm_table[i];
        size_t b;
        if (!kr->ns_bytes) continue;
        b = muon__gemm_ns_bytes_direct(kr, m, n, t);
        if (!b || !muon__u_add(b, MUON__ALIGN, &b)) return (size_t)-1;
        if (b > best) best = b;
    }
    return best;
}

/* ---- the product interface ---------------------------------------------------------------
 * What the rest of the file calls for its products (Newton-Schulz, plain, Gram and bf16):
 *   muon__prod_make   the kernel, chosen once (muon__gemm_choose) for all the products of one
 *                     Newton-Schulz, with the team-size cap and the caller's workspace;
 *   muon__prod_syrk   C = alpha X X^T + beta C (X n x k, row-major, as given);
 *   muon__prod_gemm   C = alpha A B + beta C (neither transposed);
 *   muon__prod_need   packing space of one product on any kernel a Newton-Schulz can choose;
 *   muon__prod_ns     a whole Newton-Schulz on the kernel's engine, where it has one (AMX) and
 *                     the workspace holds it: the chooser's kernel decides, nothing else;
 *   muon__prod_ns_need  the region an engine of the build may need (for the size queries).
 * fp32 products are validated and go to CBLAS under MUON_USE_CBLAS, as muon_sgemm_ws does; bf16
 * ones (alpha 1, beta 0: the operands rounded to bf16 as packed) are never CBLAS and trust their
 * caller's shapes (validated once, before the Newton-Schulz). */
typedef struct muon__prod {
    const muon__gemm_kernel *kr; /* kr->bf16: the products' precision; kr->ns_run: its NS engine */
    int threads;                 /* team-size cap (muon_config.threads; 0: the default) */
    void *ws;
    size_t ws_bytes;
} muon__prod;
static MUON__NOINLINE muon__prod muon__prod_make(int bf16, int which, int threads, void *ws, size_t ws_bytes)
{
    muon__prod p;
    p.kr = muon__gemm_choose(bf16, which);
    p.threads = threads;
    p.ws = ws;
    p.ws_bytes = ws_bytes;
    return p;
}
static MUON__ALWAYS_INLINE muon_status muon__prod_run(const muon__prod *p, const muon__gemm_problem *g)
{
    if (!p->kr->bf16) return muon__gemm_ws_entry(g, p->kr, p->ws, p->ws_bytes, p->threads);
    return muon__gemm_run_ws(g, p->kr, p->ws, p->ws_bytes, p->threads > 0 ? muon__gemm_threads_wanted(g, p->threads) : 0);
}
static MUON__NOINLINE muon_status muon__prod_syrk(const muon__prod *p, size_t n, size_t k, float alpha, const float *X, size_t ldx,
                                   float beta, float *C, size_t ldc)
{
    muon__gemm_problem g = muon__gemm_make_syrk(MUON_NO_TRANS, n, k, alpha, X, ldx, beta, C, ldc);
    return muon__prod_run(p, &g);
}
static MUON__NOINLINE muon_status muon__prod_gemm(const muon__prod *p, size_t m, size_t n, size_t k, float alpha, const float *A,
                                   size_t lda, const float *B, size_t ldb, float beta, float *C, size_t ldc)
{
    muon__gemm_problem g = muon__gemm_make(0, MUON_NO_TRANS, MUON_NO_TRANS, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    return muon__prod_run(p, &g);
}
static size_t muon__prod_need(size_t m, size_t n, size_t k, int t)
{
    return muon__gemm_need_table(0, MUON__GEMM_NTABLE - 1, m, n, k, t); /* all but the bf16 reference */
}
/* 1 when the kernel's engine ran the whole NS of G (rows x cols) into out in the region reg of
 * regb bytes (its status in *st), 0 when the kernel has none or the region cannot hold it */
static int muon__prod_ns(const muon__prod *p, const muon__ns_coeffs *co, const float *G, size_t rows, size_t cols,
                         size_t ldg, double inv, float *out, size_t ldo, unsigned char *reg, size_t regb,
                         muon_status *st)
{
    int ran = 0;
    if (!p->kr->ns_run) return 0;
    *st = p->kr->ns_run(p->kr, co, G, rows, cols, ldg, inv, out, ldo, reg, regb, p->threads, &ran);
    return ran;
}
/* bytes of the largest engine region (alignment included) for an m x n iterate on t threads;
 * 0: no engine in this build; SIZE_MAX: overflow */
static size_t muon__prod_ns_need(size_t m, size_t n, int t) { return muon__gemm_ns_need_table(m, n, t); }

/* Internal entries used by the tests: a bf16 product (C = op(A) op(B), or op(A) op(A)^T with
 * syrk) on request `which` (a MUON__BF16_*) with its own packing space, sized for every bf16
 * kernel; and the name of the kernel a request gets. */
static MUON__GEMM_UNUSED muon_status muon__bgemm_builtin(int which, int threads, int syrk, muon_transpose ta,
                                                         muon_transpose tb, size_t m, size_t n, size_t k,
                                                         const float *A, size_t lda, const float *B, size_t ldb,
                                                         float *C, size_t ldc)
{
    muon__gemm_problem g = syrk ? muon__gemm_make_syrk(ta, n, k, 1.0f, A, lda, 0.0f, C, ldc)
                                : muon__gemm_make(0, ta, tb, m, n, k, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
    muon_status st = muon__gemm_check(&g, MUON__NULL, 0);
    size_t need;
    void *mem;
    int t = threads > 0 ? threads : 1;
#ifdef _OPENMP
    if (threads <= 0) t = omp_get_max_threads();
#endif
    if (st != MUON_OK) return st;
    need = muon__gemm_need_table(1, MUON__GEMM_NTABLE, g.m, g.n, g.k, t);
    mem = MUON_MALLOC(need);
    if (!mem) return MUON_ERR_NOMEM;
    st = muon__gemm_run_ws(&g, muon__gemm_choose(1, which), mem, need,
                           threads > 0 ? muon__gemm_threads_wanted(&g, threads) : 0);
    MUON_FREE(mem);
    return st;
}
static MUON__GEMM_UNUSED const char *muon__bgemm_kernel_name(int which) { return muon__gemm_choose(1, which)->name; }

MUONDEF muon_status muon_sgemm_ws(muon_transpose ta, muon_transpose tb, size_t m, size_t n, size_t k,
                                  float alpha, const float *A, size_t lda, const float *B, size_t ldb,
                                  float beta, float *C, size_t ldc, void *ws, size_t ws_bytes)
{
    return muon__sgemm_ws_t(0, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, ws, ws_bytes);
}
MUONDEF muon_status muon_ssyrk_ws(muon_transpose ta, size_t n, size_t k, float alpha, const float *A,
                                  size_t lda, float beta, float *C, size_t ldc, void *ws, size_t ws_bytes)
{
    return muon__ssyrk_ws_t(0, ta, n, k, alpha, A, lda, beta, C, ldc, ws, ws_bytes);
}

MUONDEF muon_status muon_sgemm(muon_transpose ta, muon_transpose tb, size_t m, size_t n, size_t k,
                               float alpha, const float *A, size_t lda, const float *B, size_t ldb,
                               float beta, float *C, size_t ldc)
{
    muon__gemm_problem g = muon__gemm_make(0, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    muon_status st = muon__gemm_check(&g, MUON__NULL, 0);
    if (st != MUON_OK) return st;
    return MUON__GEMM_EXEC(&g);
}

MUONDEF muon_status muon_ssyrk(muon_transpose ta, size_t n, size_t k, float alpha, const float *A,
                               size_t lda, float beta, float *C, size_t ldc)
{
    muon__gemm_problem g = muon__gemm_make_syrk(ta, n, k, alpha, A, lda, beta, C, ldc);
    muon_status st = muon__gemm_check(&g, MUON__NULL, 0);
    if (st != MUON_OK) return st;
    return MUON__GEMM_EXEC(&g);
}

/* ======================================================================================== */
/* Everything below reaches the products only through the product interface above (muon__prod_make,
 * muon__prod_syrk, muon__prod_gemm, muon__prod_need, muon__prod_ns, muon__prod_ns_need) and
 * the public entry points, and the machine only through the platform layer (muon__v*, the
 * muon__u_* helpers, the carve, the thread rule): no instruction-set #if and no intrinsic
 * (tests/rel_seam.sh). */

/* ---- schedules ------------------------------------------------------------------------- */

/* A schedule as every internal function reads it: resolved fields and a pointer to its
 * triples (the caller's config, or a preset's table), so that validating or running a schedule
 * never copies the 800-byte muon_ns_config onto the stack (docs/embedding.md, "Stack"). */
typedef struct muon__ns_view {
    int count, steps, gram_restart;
    muon_ns_mode mode;
    muon_ns_method method;
    muon_ns_norm norm;
    muon_ns_precision precision;
    double safety, eps;
    const double (*coeffs)[3];
    int threads; /* the products' team size (0: the OpenMP default); set by the caller */
    int bf16_kernel; /* MUON__BF16_BEST (0); the tests name another to hold the kernels to each other */
} muon__ns_view;

#define MUON__NS_PRESET_TRIPLES 10 /* the most triples of any preset (DeepSeek V4) */

/* Preset `kind`'s triples written into t[0..count-1] and its fields into *v (steps <= 0: the
 * preset's own count); 0 for an unknown kind. The one table behind muon_ns_preset. */
static int muon__ns_preset_fill(muon_ns_kind kind, int steps, double (*t)[3], muon__ns_view *v)
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
    static const double jordan[3] = {3.4445, -4.7750, 2.0315}, quintic[3] = {2.0, -1.5, 0.5};
    int i, own = 1;
    v->mode = MUON_NS_REPEAT_LAST;
    v->method = MUON_NS_PLAIN;
    v->norm = MUON_NORM_ADD_EPS;
    v->precision = MUON_NS_FP32;
    v->gram_restart = 0;
    v->safety = 1.0;
    v->eps = 1e-7;
    v->coeffs = (const double (*)[3])t;
    v->threads = 0;
    v->bf16_kernel = 0;
    switch (kind) {
    case MUON_NS_JORDAN:
        v->count = 1;
        memcpy(t[0], jordan, sizeof jordan);
        own = 5;
        break;
    case MUON_NS_POLAR_EXPRESS: {
        const double s = 1.01;
        v->safety = s;
        v->count = 8;
        for (i = 0; i < 7; i++) {
            t[i][0] = pe[i][0] / s;
            t[i][1] = pe[i][1] / (s * s * s);
            t[i][2] = pe[i][2] / (s * s * s * s * s);
        }
        t[7][0] = 1.875;
        t[7][1] = -1.25;
        t[7][2] = 0.375;
        own = 5;
        break;
    }
    case MUON_NS_DEEPSEEK_V4:
        v->count = 10;
        for (i = 0; i < 8; i++) memcpy(t[i], jordan, sizeof jordan);
        memcpy(t[8], quintic, sizeof quintic);
        memcpy(t[9], quintic, sizeof quintic);
        own = 10;
        break;
    case MUON_NS_CUBIC:
        v->count = 1;
        t[0][0] = 1.5;
        t[0][1] = -0.5;
        t[0][2] = 0.0;
        own = 24;
        break;
    default:
        v->count = -1; /* rejected everywhere */
        break;
    }
    v->steps = steps > 0 ? steps : own;
    return v->count > 0;
}

/* muon_ns_preset written into *c, no temporary */
static void muon__ns_preset_into(muon_ns_kind kind, int steps, muon_ns_config *c)
{
    muon__ns_view v;
    memset(c, 0, sizeof *c);
    muon__ns_preset_fill(kind, steps, c->coeffs, &v);
    c->count = v.count;
    c->steps = v.steps;
    c->mode = v.mode;
    c->safety = v.safety;
    c->eps = v.eps;
}

MUONDEF muon_ns_config muon_ns_preset(muon_ns_kind kind, int steps)
{
    muon_ns_config c;
    muon__ns_preset_into(kind, steps, &c);
    return c;
}

/* the triple of step k (0-based) of a resolved schedule */
static const double *muon__ns_triple(const muon__ns_view *c, int k)
{
    if (k < c->count) return c->coeffs[k];
    if (c->mode == MUON_NS_CYCLE) return c->coeffs[k % c->count];
    return c->coeffs[c->count - 1];
}

/* max |p(x)| and max |p(x)/x| = max |a + b y + c y^2| (y = x^2) over x in [0, s], for
 * p(x) = a x + b x^3 + c x^5: the extremes sit at the ends or where a derivative vanishes. */
static void muon__ns_pbound(const double *t, double s, double *pmax, double *qmax)
{
    double a = t[0], b = t[1], c = t[2], y1 = s * s, pm, qm, y;
    pm = fabs(s * (a + y1 * (b + y1 * c)));
    qm = fabs(a) > fabs(a + y1 * (b + y1 * c)) ? fabs(a) : fabs(a + y1 * (b + y1 * c));
    if (c != 0.0) {
        double disc = 9.0 * b * b - 20.0 * a * c, yq = -b / (2.0 * c);
        if (yq > 0.0 && yq < y1) { /* q'(y) = 0 */
            double v = fabs(a + yq * (b + yq * c));
            if (v > qm) qm = v;
        }
        if (disc >= 0.0) { /* p'(x) = a + 3b y + 5c y^2 = 0 */
            int r;
            for (r = -1; r <= 1; r += 2) {
                y = (-3.0 * b + (double)r * sqrt(disc)) / (10.0 * c);
                if (y > 0.0 && y < y1) {
                    double v = fabs(sqrt(y) * (a + y * (b + y * c)));
                    if (v > pm) pm = v;
                }
            }
        }
    } else if (b != 0.0) {
        y = -a / (3.0 * b);
        if (y > 0.0 && y < y1) {
            double v = fabs(sqrt(y) * (a + y * b));
            if (v > pm) pm = v;
        }
    }
    *pmax = pm;
    *qmax = qm;
}

/* The schedule's domain beyond finite coefficients: the iteration must stay inside float's
 * range for every input. X0 has singular values in [0, 1/safety] (the Frobenius
 * normalisation), and step k maps each singular value x to p_k(x) exactly in real arithmetic,
 * so s_{k+1} = max |p_k| over [0, s_k] bounds them all; the interval is widened by 2^-8 per
 * step to cover float rounding. Every quantity a step forms is bounded by these: X by s,
 * A = X X^T by s^2, a I + b A + c A^2 by max |q|, and the Gram form's accumulated Q by the
 * product of max |q| over a segment. All must stay below 2^64 (float's range is 2^128), or
 * the schedule is MUON_ERR_DOMAIN. Every preset passes at any step count (its polynomials map
 * [0, ~1.2] into itself); a rejected schedule is one that would overflow on some input. */
#define MUON__NS_BOUND 18446744073709551616.0 /* 2^64 */
static int muon__ns_bounded(const muon__ns_view *c)
{
    double s = 1.0 / c->safety, qprod = 1.0, pm, qm;
    int k, seg = 0, restart = c->gram_restart > 0 ? c->gram_restart : 2;
    if (!muon__u_le(s, MUON__NS_BOUND)) return 0;
    for (k = 0; k < c->steps; k++) {
        if (c->method == MUON_NS_GRAM && seg == restart) {
            qprod = 1.0;
            seg = 0;
        }
        /* float rounding: 2^-8 per step; bf16 (X, A and B rounded to 8 bits): 2^-7 */
        muon__ns_pbound(muon__ns_triple(c, k), s * (c->precision == MUON_NS_BF16 ? 1.0 + 1.0 / 128.0 : 1.0 + 1.0 / 256.0),
                        &pm, &qm);
        qprod *= qm;
        if (!muon__u_le(s * s, MUON__NS_BOUND) || !muon__u_le(qm * qm, MUON__NS_BOUND) || !muon__u_le(pm, MUON__NS_BOUND) ||
            (c->method == MUON_NS_GRAM && !muon__u_le(qprod, MUON__NS_BOUND)))
            return 0;
        s = pm;
        seg++;
    }
    return 1;
}

/* The resolved view of `in` (NULL: Jordan x 5), validated as muon_ns_resolve documents; for
 * count 0 the Jordan triple comes from `jt`, which must outlive the view. Writes nothing else. */
static muon_status muon__ns_view_make(const muon_ns_config *in, muon__ns_view *v, double (*jt)[3])
{
    int i;
    if (!in) {
        muon__ns_preset_fill(MUON_NS_JORDAN, 0, jt, v);
        return MUON_OK;
    }
    if (in->method != MUON_NS_PLAIN && in->method != MUON_NS_GRAM) return MUON_ERR_DOMAIN;
    if (in->gram_restart < 0 || in->gram_restart > MUON_NS_MAX_STEPS) return MUON_ERR_DOMAIN;
    if (in->norm != MUON_NORM_ADD_EPS && in->norm != MUON_NORM_MAX_EPS) return MUON_ERR_DOMAIN;
    if (in->precision != MUON_NS_FP32 && in->precision != MUON_NS_BF16) return MUON_ERR_DOMAIN;
    if (in->precision == MUON_NS_BF16 && in->method == MUON_NS_GRAM) return MUON_ERR_DOMAIN;
    if (in->count == 0) {
        if (in->steps > MUON_NS_MAX_STEPS) return MUON_ERR_DOMAIN;
        muon__ns_preset_fill(MUON_NS_JORDAN, in->steps, jt, v);
    } else {
        if (in->count < 0 || in->count > MUON_NS_MAX_TRIPLES) return MUON_ERR_DOMAIN;
        if (in->steps < 0 || in->steps > MUON_NS_MAX_STEPS) return MUON_ERR_DOMAIN;
        if (in->mode != MUON_NS_REPEAT_LAST && in->mode != MUON_NS_CYCLE) return MUON_ERR_DOMAIN;
        if (!muon__u_isfinite(in->safety) || in->safety < 0.0) return MUON_ERR_DOMAIN;
        if (!muon__u_isfinite(in->eps) || in->eps < 0.0) return MUON_ERR_DOMAIN;
        for (i = 0; i < in->count; i++)
            if (!muon__u_isfinite(in->coeffs[i][0]) || !muon__u_isfinite(in->coeffs[i][1]) ||
                !muon__u_isfinite(in->coeffs[i][2]))
                return MUON_ERR_DOMAIN;
        v->count = in->count;
        v->steps = in->steps ? in->steps : in->count;
        v->mode = in->mode;
        v->safety = in->safety != 0.0 ? in->safety : 1.0;
        v->eps = in->eps;
        v->coeffs = (const double (*)[3])in->coeffs;
    }
    v->threads = 0;
    v->bf16_kernel = 0;
    v->method = in->method;
    v->gram_restart = in->gram_restart ? in->gram_restart : 2;
    v->norm = in->norm;
    v->precision = in->precision;
    return muon__ns_bounded(v) ? MUON_OK : MUON_ERR_DOMAIN;
}

MUONDEF muon_status muon_ns_resolve(const muon_ns_config *in, muon_ns_config *out)
{
    double jt[1][3];
    muon__ns_view v;
    muon_status s;
    if (!out) return MUON_ERR_NULL;
    if ((s = muon__ns_view_make(in, &v, jt)) != MUON_OK) return s;
    if (!in) {
        muon__ns_preset_into(MUON_NS_JORDAN, 0, out);
        return MUON_OK;
    }
    if (in->count == 0) { /* v holds what out needs of in (out may be in) */
        muon__ns_preset_into(MUON_NS_JORDAN, v.steps, out);
        out->method = v.method;
        out->gram_restart = v.gram_restart;
        out->norm = v.norm;
        out->precision = v.precision;
        return MUON_OK;
    }
    if (out != in) memcpy(out, in, sizeof *out);
    out->steps = v.steps;
    out->safety = v.safety;
    out->gram_restart = v.gram_restart;
    return MUON_OK;
}

static double muon__ns_poly(const double *t, double x)
{
    double x2 = x * x;
    return x * (t[0] + x2 * (t[1] + x2 * t[2]));
}

MUONDEF double muon_ns_transfer(const muon_ns_config *ns, double sigma)
{
    double jt[1][3], x;
    muon__ns_view c;
    int k;
    if (muon__ns_view_make(ns, &c, jt) != MUON_OK) return (double)NAN;
    x = sigma / c.safety;
    for (k = 0; k < c.steps; k++) x = muon__ns_poly(muon__ns_triple(&c, k), x);
    return x;
}

/* the first step count k <= max_steps at which sigma's image reaches tau, -1 if none */
static int muon__ns_min_steps_view(const muon__ns_view *c, double sigma, double tau, int max_steps)
{
    double x = sigma / c->safety;
    int k;
    for (k = 0; k < max_steps; k++) {
        x = muon__ns_poly(muon__ns_triple(c, k), x);
        if (x >= tau) return k + 1;
    }
    return -1;
}

MUONDEF int muon_ns_min_steps(const muon_ns_config *ns, double sigma, double tau, int max_steps)
{
    double jt[1][3];
    muon__ns_view c;
    if (muon__ns_view_make(ns, &c, jt) != MUON_OK || max_steps < 1) return -1;
    if (!muon__u_isfinite(sigma) || !muon__u_isfinite(tau)) return -1;
    return muon__ns_min_steps_view(&c, sigma, tau, max_steps);
}

MUONDEF muon_status muon_sv_quantile(const double *sv, size_t n, double q, double *out)
{
    size_t i, lo;
    double h, frac, a, b;
    if (!sv || !out) return MUON_ERR_NULL;
    if (n == 0) return MUON_ERR_SIZE;
    if (!muon__u_le(q, 1.0) || q < 0.0) return MUON_ERR_DOMAIN;
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
    static const muon_ns_kind kinds[4] = {MUON_NS_JORDAN, MUON_NS_POLAR_EXPRESS, MUON_NS_DEEPSEEK_V4,
                                          MUON_NS_CUBIC};
    double t[MUON__NS_PRESET_TRIPLES][3], ss = 0.0, sq;
    muon__ns_view v;
    size_t i, best_i = 0;
    int best_k = -1;
    muon_status s;
    if (!sv || !out) return MUON_ERR_NULL;
    if (!candidates && count != 0) return MUON_ERR_NULL;
    if (n == 0) return MUON_ERR_SIZE;
    if (!muon__u_isfinite(tau) || max_steps < 1 || max_steps > MUON_NS_MAX_STEPS) return MUON_ERR_DOMAIN;
    if (!candidates) count = 4; /* the presets */
    for (i = 0; candidates && i < count; i++)
        if (muon__ns_view_make(&candidates[i], &v, t) != MUON_OK) return MUON_ERR_DOMAIN;
    s = muon_sv_quantile(sv, n, q, &sq);
    if (s != MUON_OK) return s;
    if (sv[n - 1] < 0.0) return MUON_ERR_DOMAIN; /* descending (checked above): the last is the least */
    for (i = 0; i < n; i++) ss += sv[i] * sv[i];
    if (!(ss > 0.0) || !muon__u_isfinite(ss)) return MUON_ERR_DOMAIN;
    sq /= sqrt(ss);
    for (i = 0; i < count; i++) {
        int k;
        if (candidates)
            muon__ns_view_make(&candidates[i], &v, t); /* validated above */
        else
            muon__ns_preset_fill(kinds[i], 0, t, &v);
        k = muon__ns_min_steps_view(&v, sq, tau, max_steps);
        if (k > 0 && (best_k < 0 || k < best_k)) {
            best_k = k;
            best_i = i;
        }
    }
    if (best_k < 0) return MUON_ERR_UNREACHABLE;
    if (candidates)
        muon_ns_resolve(&candidates[best_i], out);
    else
        muon__ns_preset_into(kinds[best_i], 0, out);
    muon_ns_resolve(out, out); /* in place: the resolved fields (a preset's gram_restart 2) */
    out->steps = best_k;
    if (index_out) *index_out = best_i;
    return MUON_OK;
}



/* ---- Newton-Schulz ---------------------------------------------------------------------- */

/* GEMM packing space for every product of an NS (plain or Gram) on an m x n iterate (m <= n)
 * on t threads: SSYRK m x m with k = n or m, SGEMM m x n or m x m with k = m. Sized from the
 * blocks muon__gemm_blocking fits to these shapes, not from the largest blocks, so that a small
 * layer carries a small workspace (32 x 64: tens of KB, not the 2.4 MB of the default bound). */
static size_t muon__ns_gemm_bytes(size_t m, size_t n, int t)
{
    /* every product of either precision: the build's kernel and the bf16 ones but the reference */
    size_t a = muon__prod_need(m, m, n, t);
    size_t b = muon__prod_need(m, m, m, t);
    size_t c = muon__prod_need(m, n, m, t);
    return a > b ? (a > c ? a : c) : (b > c ? b : c);
}

/* One NS workspace, carved (muon__carve) as X, Y (m x n), A, B (m x m), then the GEMM packing
 * space for the threads the products can use; or, for a NS on a kernel with an engine (AMX),
 * the engine's region from the same base: the size is the larger of the two. The same sequence
 * lays it out (muon__ns_carve) and sizes it (base MUON__NULL). */
typedef struct muon__ns_ws {
    float *X, *Y, *A, *B;
    unsigned char *gws; /* the products' packing space, to the end of the workspace */
    size_t used;        /* bytes up to gws (0: overflow) */
} muon__ns_ws;
static MUON__ALWAYS_INLINE muon__ns_ws muon__ns_carve(void *base, size_t m, size_t n)
{
    muon__ns_ws w;
    muon__carve c = muon__carve_begin(base);
    size_t mn = 0, mm = 0;
    int ok = muon__u_mul(m, n, &mn) && muon__u_mul(mn, sizeof(float), &mn) && muon__u_mul(m, m, &mm) &&
             muon__u_mul(mm, sizeof(float), &mm);
    w.X = (float *)(void *)muon__carve_take(&c, mn);
    w.Y = (float *)(void *)muon__carve_take(&c, mn);
    w.A = (float *)(void *)muon__carve_take(&c, mm);
    w.B = (float *)(void *)muon__carve_take(&c, mm);
    w.gws = c.p;
    w.used = ok ? muon__carve_size(&c) : 0;
    return w;
}
static MUON__ALWAYS_INLINE size_t muon__ns_ws_generic(size_t rows, size_t cols, int single_thread)
{
    size_t m = rows < cols ? rows : cols, n = rows < cols ? cols : rows, graw, gb, total;
    int t;
    if (rows == 0 || cols == 0) return 0;
    /* GEMM packing space for the threads the products can use: the GEMM section runs products
     * below its parallel threshold on one thread (and uses fewer threads when the workspace is
     * smaller), so small layers do not carry per-thread buffers */
    t = single_thread || (double)m * (double)m * (double)n < (double)MUON_GEMM_PARALLEL_MIN ? 1 : muon__u_threads();
    total = muon__ns_carve(MUON__NULL, m, n).used;
    if (!total) return 0; /* (before the blocking: its sizes need m x n to fit) */
    graw = muon__ns_gemm_bytes(m, n, t);
    gb = muon__u_round(graw);
    if ((!gb && graw != 0) || !muon__u_add(total, gb, &total)) return 0;
    return total;
}
static size_t muon__ns_ws_bytes(size_t rows, size_t cols, int single_thread)
{
    size_t total = muon__ns_ws_generic(rows, cols, single_thread);
    if (total) { /* a kernel's Newton-Schulz engine (AMX), in the same workspace */
        size_t m = rows < cols ? rows : cols, n = rows < cols ? cols : rows, et;
        int xt = single_thread || (double)m * (double)m * (double)n < MUON_GEMM_PARALLEL_MIN ? 1 : muon__u_threads();
        et = muon__prod_ns_need(m, n, xt);
        if (et == (size_t)-1) return 0;
        if (et > total) total = et;
    }
    return total;
}

MUONDEF size_t muon_orthogonalize_workspace_size(size_t rows, size_t cols)
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

MUONDEF size_t muon_orthogonalize_batched_workspace_size(size_t count, size_t rows, size_t cols)
{
    size_t one = muon__ns_ws_bytes(rows, cols, 1), lanes, total;
    if (count == 0 || one == 0) return 0;
    lanes = muon__batch_lanes(count, rows, cols, (size_t)-1);
    if (lanes <= 1) return muon__ns_ws_bytes(rows, cols, 0);
    if (!muon__u_mul(lanes, one, &total)) return 0;
    return total;
}

/* M (m x m) <- (M + M^T) / 2: products of commuting symmetric matrices are symmetric only up
 * to rounding; keeping R and Q exactly symmetric makes the Gram form 1.3-2x more accurate. */
static void muon__ns_symmetrise(float *M, size_t m)
{
    size_t i, j;
    for (i = 0; i < m; i++)
        for (j = 0; j < i; j++) {
            float v = 0.5f * (M[i * m + j] + M[j * m + i]);
            M[i * m + j] = v;
            M[j * m + i] = v;
        }
}

/* Gram Newton-Schulz on X (m x n, ld n, n >= 3m), SPEC 2.1 evaluated through the Gram matrix:
 * every step maps X to P X with P = a I + b A + c A^2, A = X X^T, so after k steps of a segment
 * X_k = Q_k X_s, where X_s starts the segment, Q_k = P_k ... P_1 and A_k = X_k X_k^T; the steps
 * run on m x m matrices only:
 *     R = X_s X_s^T (SYRK); Q = I
 *     per step: P = a I + b R + c R R^T (SYRK, R symmetric); Q <- Q P (Q = I: Q <- P);
 *               R <- R P^2 (= P R P: polynomials in R commute; P^2 = P P^T by SYRK);
 *               skipped when the next step restarts or none follows
 *               (Q and R are made exactly symmetric after each product)
 *     restart (after every `gram_restart` steps): X_s <- Q X_s, then start a new segment
 *     at the end X <- Q X_s
 * Q and the target of its update live in A and B; R, P and P^2 in three m x m slots at the start
 * of the free m x n buffer (hence n >= 3m), which a restart or the final product overwrites once
 * they are dead. With gram_restart 1 every step is a restart and the operations are those of the
 * plain iteration, bit for bit. On return *Xp holds the result and *Yp the free buffer. */
static MUON__ALWAYS_INLINE muon_status muon__ns_gram(const muon__ns_view *ns, size_t m, size_t n, float **Xp, float **Yp,
                                 float *A, float *B, const muon__prod *pr)
{
    size_t mm = m * m, i;
    int restart = ns->gram_restart > 0 ? ns->gram_restart : 2, k, seg = 0, q_id = 1;
    float *X = *Xp, *Y = *Yp, *Q = A, *Qs = B, *R = Y, *P = Y + mm, *S = Y + 2 * mm, *sw;
    muon_status s;

    s = muon__prod_syrk(pr, m, n, 1.0f, X, n, 0.0f, R, m);
    if (s != MUON_OK) return s;
    for (k = 0; k < ns->steps; k++) {
        const double *t = muon__ns_triple(ns, k);
        float a = (float)t[0], b = (float)t[1], c = (float)t[2];
        int keep_r;
        if (seg == restart) { /* X_s <- Q X_s; R <- X_s X_s^T; Q <- I */
            s = muon__prod_gemm(pr, m, n, m, 1.0f, Q, m, X, n, 0.0f, Y, n);
            if (s != MUON_OK) return s;
            sw = X;
            X = Y;
            Y = sw;
            R = Y;
            P = Y + mm;
            S = Y + 2 * mm;
            s = muon__prod_syrk(pr, m, n, 1.0f, X, n, 0.0f, R, m);
            if (s != MUON_OK) return s;
            q_id = 1;
            seg = 0;
        }
        keep_r = k + 1 < ns->steps && seg + 1 < restart;
        /* P = b R + c R R^T + a I, formed as the plain iteration forms B */
        if (c != 0.0f) {
            memcpy(P, R, mm * sizeof(float));
            s = muon__prod_syrk(pr, m, m, c, R, m, b, P, m);
            if (s != MUON_OK) return s;
        } else {
            for (i = 0; i < mm; i++) P[i] = b * R[i];
        }
        for (i = 0; i < m; i++) P[i * m + i] += a;
        if (q_id) {
            memcpy(Q, P, mm * sizeof(float));
            q_id = 0;
        } else {
            s = muon__prod_gemm(pr, m, m, m, 1.0f, Q, m, P, m, 0.0f, Qs, m);
            if (s != MUON_OK) return s;
            muon__ns_symmetrise(Qs, m);
            sw = Q;
            Q = Qs;
            Qs = sw;
        }
        if (keep_r) { /* R <- R P^2 into P's slot, symmetrised; the old R's slot is free */
            s = muon__prod_syrk(pr, m, m, 1.0f, P, m, 0.0f, S, m);
            if (s != MUON_OK) return s;
            s = muon__prod_gemm(pr, m, m, m, 1.0f, R, m, S, m, 0.0f, P, m);
            if (s != MUON_OK) return s;
            muon__ns_symmetrise(P, m);
            sw = R;
            R = P;
            P = sw;
        }
        seg++;
    }
    if (!q_id) {
        s = muon__prod_gemm(pr, m, n, m, 1.0f, Q, m, X, n, 0.0f, Y, n);
        if (s != MUON_OK) return s;
        sw = X;
        X = Y;
        Y = sw;
    }
    *Xp = X;
    *Yp = Y;
    return MUON_OK;
}

/* bf16 Newton-Schulz on X (m x n, ld n, normalised in fp32), the reference's arithmetic:
 *     X <- bf16(X)
 *     per step: A = X X^T, AA = A A^T (bf16 SYRKs: operands rounded to bf16, fp32 accumulation)
 *               B = fma(c, AA, b A)                                  (fp32)
 *               X <- bf16(fma(a, X, B X))      (bf16 GEMM, combination in fp32, one rounding)
 * a is kept out of B (not folded into its diagonal, as the fp32 path does): bf16(B + a I) would
 * lose B's diagonal to a's 8-bit mantissa. The combinations use fmaf, so every build (with or
 * without hardware FMA, contracted or not) rounds them alike. On return *Xp holds the result. */
static MUON__ALWAYS_INLINE muon_status muon__ns_bf16(const muon__ns_view *ns, size_t m, size_t n, float **Xp, float **Yp, float *A,
                                 float *B, const muon__prod *pr)
{
    float *X = *Xp, *Y = *Yp;
    const ptrdiff_t mn = (ptrdiff_t)(m * n), mm = (ptrdiff_t)(m * m);
    int k, nt = ns->threads > 0 ? ns->threads : muon__u_threads();
    ptrdiff_t i;
    muon_status s;
    (void)nt;
    MUON__OMP(omp parallel for schedule(static) MUON__PAR(nt, mn))
    for (i = 0; i < mn; i += 4096) muon__bf16_axpy(i, i + 4096 < mn ? i + 4096 : mn, 0.0f, X, MUON__NULL);
    for (k = 0; k < ns->steps; k++) {
        const double *t = muon__ns_triple(ns, k);
        const float a = (float)t[0], b = (float)t[1], c = (float)t[2];
        s = muon__prod_syrk(pr, m, n, 1.0f, X, n, 0.0f, A, m);
        if (s != MUON_OK) return s;
        if (c != 0.0f) {
            s = muon__prod_syrk(pr, m, m, 1.0f, A, m, 0.0f, B, m);
            if (s != MUON_OK) return s;
            MUON__OMP(omp parallel for schedule(static) MUON__PAR(nt, mm))
            for (i = 0; i < mm; i++) B[i] = fmaf(c, B[i], b * A[i]);
        } else {
            for (i = 0; i < mm; i++) B[i] = b * A[i];
        }
        s = muon__prod_gemm(pr, m, n, m, 1.0f, B, m, X, n, 0.0f, Y, n);
        if (s != MUON_OK) return s;
        MUON__OMP(omp parallel for schedule(static) MUON__PAR(nt, mn))
        for (i = 0; i < mn; i += 4096) muon__bf16_axpy(i, i + 4096 < mn ? i + 4096 : mn, a, X, Y);
    }
    *Xp = X;
    *Yp = Y;
    return MUON_OK;
}

/* X (ld n) = G * inv (rows x cols, ld ldg), or its transpose when tall: the transposing copy in
 * 32 x 32 blocks (a row-at-a-time copy strides through X and cost a tall 3072 x 768 NS a
 * third of its time), row blocks split over the step's threads (0: the OpenMP default); each
 * element is the same product (float)(G * inv) either way. */
#define MUON__NS_TB 32
static MUON__NOINLINE void muon__ns_copy_in(const float *G, size_t rows, size_t cols, size_t ldg, double inv,
                                            float *X, size_t n, int tall, int threads)
{
    ptrdiff_t ib, nb = (ptrdiff_t)((rows + MUON__NS_TB - 1) / MUON__NS_TB);
    int nt = threads > 0 ? threads : muon__u_threads();
    (void)nt;
    MUON__OMP(omp parallel for schedule(static) MUON__PAR(nt, (double)rows * (double)cols))
    for (ib = 0; ib < nb; ib++) {
        size_t i0 = (size_t)ib * MUON__NS_TB, i1 = i0 + MUON__NS_TB < rows ? i0 + MUON__NS_TB : rows, i, j, jb;
        if (!tall) {
            for (i = i0; i < i1; i++)
                for (j = 0; j < cols; j++) X[i * n + j] = (float)((double)G[i * ldg + j] * inv);
            continue;
        }
        for (jb = 0; jb < cols; jb += MUON__NS_TB) {
            size_t j1 = jb + MUON__NS_TB < cols ? jb + MUON__NS_TB : cols;
            if (i1 - i0 == MUON__NS_TB && j1 - jb == MUON__NS_TB) { /* 8 x 8 blocks: scale and transpose */
                size_t i8, j8;
                for (i8 = i0; i8 < i1; i8 += 8)
                    for (j8 = jb; j8 < j1; j8 += 8) muon__v_tr8x8_scaled(G + i8 * ldg + j8, ldg, inv, X + j8 * n + i8, n);
                continue;
            }
            for (i = i0; i < i1; i++)
                for (j = jb; j < j1; j++) X[j * n + i] = (float)((double)G[i * ldg + j] * inv);
        }
    }
}
/* out (rows x cols, ld ldo) = X (ld n), or its transpose when tall, blocked as above. */
static MUON__NOINLINE void muon__ns_copy_out(const float *X, size_t n, size_t rows, size_t cols, float *out,
                                             size_t ldo, int tall, int threads)
{
    ptrdiff_t ib, nb = (ptrdiff_t)((rows + MUON__NS_TB - 1) / MUON__NS_TB);
    int nt = threads > 0 ? threads : muon__u_threads();
    (void)nt;
    MUON__OMP(omp parallel for schedule(static) MUON__PAR(nt, (double)rows * (double)cols))
    for (ib = 0; ib < nb; ib++) {
        size_t i0 = (size_t)ib * MUON__NS_TB, i1 = i0 + MUON__NS_TB < rows ? i0 + MUON__NS_TB : rows, i, j, jb;
        if (!tall) {
            for (i = i0; i < i1; i++) memcpy(out + i * ldo, X + i * n, cols * sizeof(float));
            continue;
        }
        for (jb = 0; jb < cols; jb += MUON__NS_TB) {
            size_t j1 = jb + MUON__NS_TB < cols ? jb + MUON__NS_TB : cols;
            if (i1 - i0 == MUON__NS_TB && j1 - jb == MUON__NS_TB) { /* out block = X block transposed */
                size_t i8, j8;
                for (j8 = jb; j8 < j1; j8 += 8)
                    for (i8 = i0; i8 < i1; i8 += 8) muon__v_tr8x8(X + j8 * n + i8, n, out + i8 * ldo + j8, ldo);
                continue;
            }
            for (i = i0; i < i1; i++)
                for (j = jb; j < j1; j++) out[i * ldo + j] = X[j * n + i];
        }
    }
}

/* The plain iteration (SPEC 2.1) on X (m x n, ld n): per step A = X X^T (SYRK), B = b A + c A A
 * (A A = A A^T as A is symmetric: SYRK again), X <- a X + B X = (B + a I) X (a folded into the
 * diagonal: one GEMM); X and Y swap. */
static MUON__ALWAYS_INLINE muon_status muon__ns_plain(const muon__ns_view *ns, size_t m, size_t n, float **Xp, float **Yp, float *A,
                                  float *B, const muon__prod *pr)
{
    float *X = *Xp, *Y = *Yp;
    size_t i;
    int k;
    muon_status s;
    for (k = 0; k < ns->steps; k++) {
        const double *t = muon__ns_triple(ns, k);
        float a = (float)t[0], b = (float)t[1], c = (float)t[2];
        float *sw;
        s = muon__prod_syrk(pr, m, n, 1.0f, X, n, 0.0f, A, m);
        if (s != MUON_OK) return s;
        if (c != 0.0f) {
            memcpy(B, A, m * m * sizeof(float));
            s = muon__prod_syrk(pr, m, m, c, A, m, b, B, m);
            if (s != MUON_OK) return s;
        } else {
            for (i = 0; i < m * m; i++) B[i] = b * A[i];
        }
        for (i = 0; i < m; i++) B[i * m + i] += a;
        s = muon__prod_gemm(pr, m, n, m, 1.0f, B, m, X, n, 0.0f, Y, n);
        if (s != MUON_OK) return s;
        sw = X;
        X = Y;
        Y = sw;
    }
    *Xp = X;
    *Yp = Y;
    return MUON_OK;
}

/* the schedule's triples as an engine reads them (muon__ns_coeffs) */
static const double *muon__ns_triple_of(const void *sched, int k)
{
    return muon__ns_triple((const muon__ns_view *)sched, k);
}

/* The iteration on the products (bf16, Gram or plain) from X (the result's place in *Xp) */
static MUON__ALWAYS_INLINE muon_status muon__ns_iterate(const muon__ns_view *ns, size_t m, size_t n, float **Xp, float *Y,
                                                   float *A, float *B, const muon__prod *pr)
{
    if (ns->precision == MUON_NS_BF16) return muon__ns_bf16(ns, m, n, Xp, &Y, A, B, pr); /* plain only (GRAM with BF16 is DOMAIN) */
    if (ns->method == MUON_NS_GRAM && n / 3 >= m) /* opt-in; n >= 3m: fits this workspace */
        return muon__ns_gram(ns, m, n, Xp, &Y, A, B, pr);
    return muon__ns_plain(ns, m, n, Xp, &Y, A, B, pr);
}

/* The whole NS on the chosen kernel's engine, where it has one and the region holds it: 1 (its
 * status in *st), else 0 (a call of its own: the schedule's view for the engine stays off the
 * deepest stack path, the products' iteration in muon__ns_one) */
static MUON__NOINLINE int muon__ns_engine(const muon__prod *pr, const muon__ns_view *ns, const float *G, size_t rows,
                                          size_t cols, size_t ldg, double inv, float *out, size_t ldo,
                                          unsigned char *reg, size_t regb, muon_status *st)
{
    muon__ns_coeffs co;
    if (!pr->kr->ns_run) return 0;
    co.steps = ns->steps;
    co.triple = muon__ns_triple_of;
    co.sched = ns;
    return muon__prod_ns(pr, &co, G, rows, cols, ldg, inv, out, ldo, reg, regb, st);
}

/* 1 / (s ||G|| + eps), or 1 / max(s ||G||, eps) (torch.optim.Muon's MUON_NORM_MAX_EPS; eps 0 allowed) */
static double muon__ns_inv(const muon__ns_view *ns, double norm)
{
    if (ns->norm == MUON_NORM_MAX_EPS) return 1.0 / (ns->safety * norm > ns->eps ? ns->safety * norm : ns->eps);
    return 1.0 / (ns->safety * norm + ns->eps);
}

/* One orthogonalisation; inputs validated, ns resolved, ws of muon__ns_ws_bytes(rows, cols).
 * G may equal out (same ld): G is fully read into X before out is written. A plain dispatch:
 * the norm (also the NaN/Inf check of a single matrix), then the chosen kernel's engine where it
 * has one and the workspace holds it (muon__prod_ns), else the iteration on the products
 * (bf16, Gram or plain), then the backstop and the copy out. */
/* The start of one orthogonalisation: the norm (also the NaN/Inf check of a single matrix;
 * nothing written yet), zero in giving zero out, the engine where the kernel has one, else X =
 * G / (s ||G|| + eps) at the workspace's aligned base. Its status when that finished the call,
 * else MUON__NS_GO (the iteration follows). A call of its own, with few arguments: its locals
 * stay off the deepest stack path (tests/stack_budget.txt). */
#define MUON__NS_GO (-1)
static MUON__NOINLINE int muon__ns_start(const float *G, size_t rows, size_t cols, size_t ldg, const muon__ns_view *ns,
                                         float *out, size_t ldo, void *ws_raw, size_t ws_bytes, const muon__prod *pr)
{
    const double norm = sqrt(muon__u_sumsq(G, rows, cols, ldg));
    unsigned char *reg = muon__u_align_ptr(ws_raw); /* X's place, and the engine's region */
    double inv;
    size_t i;
    muon_status st = MUON_OK;
    /* ||G||^2 in double is finite exactly when every entry is (FLT_MAX^2 = 1.2e77: no finite
     * sum overflows) */
    if (!muon__u_isfinite(norm)) return (int)MUON_ERR_NONFINITE;
    if (norm == 0.0) { /* zero in, zero out (no 0/0) */
        for (i = 0; i < rows; i++) memset(out + i * ldo, 0, cols * sizeof(float));
        return (int)MUON_OK;
    }
    inv = muon__ns_inv(ns, norm);
    if (muon__ns_engine(pr, ns, G, rows, cols, ldg, inv, out, ldo, reg, ws_bytes - (size_t)(reg - (unsigned char *)ws_raw), &st))
        return (int)st;
    muon__ns_copy_in(G, rows, cols, ldg, inv, (float *)(void *)reg, rows > cols ? rows : cols, rows > cols, ns->threads);
    return MUON__NS_GO;
}

static muon_status muon__ns_one(const float *G, size_t rows, size_t cols, size_t ldg,
                                const muon__ns_view *ns, float *out, size_t ldo, void *ws_raw,
                                size_t ws_bytes)
{
    const int bf16 = ns->precision == MUON_NS_BF16;
    const size_t m = rows > cols ? cols : rows, n = rows > cols ? rows : cols;
    const muon__ns_ws w = muon__ns_carve(ws_raw, m, n);
    /* the products' kernel, chosen once for the whole iteration (bf16: the one bf16 dispatch,
     * muon__gemm_choose), with the team cap and the rest of the workspace */
    const muon__prod pr = muon__prod_make(bf16, bf16 ? ns->bf16_kernel : 0, ns->threads, w.gws,
                                          ws_bytes > w.used ? ws_bytes - w.used : 0);
    float *X = w.X;
    muon_status s;
    int go = muon__ns_start(G, rows, cols, ldg, ns, out, ldo, ws_raw, ws_bytes, &pr);
    if (go != MUON__NS_GO) return (muon_status)go;
    s = muon__ns_iterate(ns, m, n, &X, w.Y, w.A, w.B, &pr);
    if (s != MUON_OK) return s;
    /* the schedule's bound (muon__ns_bounded) keeps X finite; this is the backstop that keeps
     * out untouched if rounding ever carried an iterate past it */
    if (!muon__u_finite_matrix(X, m, n, n)) return MUON_ERR_RANGE;
    muon__ns_copy_out(X, n, rows, cols, out, ldo, rows > cols, ns->threads);
    return MUON_OK;
}

MUONDEF muon_status muon_orthogonalize_batched_ws(const float *G, size_t count, size_t rows, size_t cols,
                                                  size_t ldg, size_t stride_g, const muon_ns_config *ns,
                                                  float *out, size_t ldo, size_t stride_o,
                                                  void *ws, size_t ws_bytes)
{
    double jt[1][3];
    muon__ns_view c;
    muon_status s;
    size_t eg, eo, tg, to, i, need;
    if (!G || !out || !ws) return MUON_ERR_NULL;
    if (count == 0) return MUON_ERR_SIZE;
    if ((s = muon__u_check_shape(rows, cols, ldg)) != MUON_OK) return s;
    if ((s = muon__u_check_shape(rows, cols, ldo)) != MUON_OK) return s;
    eg = muon__u_extent(rows, cols, ldg);
    eo = muon__u_extent(rows, cols, ldo);
    if (count > 1 && stride_o < eo) return MUON_ERR_SIZE; /* stride_g 0: one input read count times */
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
    if ((s = muon__ns_view_make(ns, &c, jt)) != MUON_OK) return s;
    if (muon__u_overlap(G, tg * sizeof(float), out, to * sizeof(float)) &&
        !(G == out && ldg == ldo && (count == 1 || stride_g == stride_o)))
        return MUON_ERR_ALIAS;
    if (muon__u_overlap(ws, ws_bytes, G, tg * sizeof(float)) ||
        muon__u_overlap(ws, ws_bytes, out, to * sizeof(float)))
        return MUON_ERR_ALIAS;
    /* a batch is checked whole before any matrix is written; one matrix by its norm's pass
     * (muon__ns_one: one read of G instead of two) */
    for (i = 0; i < count && count > 1; i++)
        if (!muon__u_finite_matrix(G + i * stride_g, rows, cols, ldg)) return MUON_ERR_NONFINITE;
#ifdef _OPENMP
    {
        size_t lanes = muon__batch_lanes(count, rows, cols, ws_bytes);
        if (lanes > 1) { /* small matrices: one matrix per thread, one workspace slice each */
            size_t one = muon__ns_ws_bytes(rows, cols, 1);
            int worst = (int)MUON_OK, nl = (int)lanes;
            MUON__OMP(omp parallel for num_threads(muon__gate(nl)) schedule(static))
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
    double jt[1][3];
    muon__ns_view c;
    if (!G || !out) return MUON_ERR_NULL;
    if (count == 0) return MUON_ERR_SIZE;
    if ((s = muon__u_check_shape(rows, cols, ldg)) != MUON_OK) return s;
    if ((s = muon__u_check_shape(rows, cols, ldo)) != MUON_OK) return s;
    if ((s = muon__ns_view_make(ns, &c, jt)) != MUON_OK) return s;
    need = muon_orthogonalize_batched_workspace_size(count, rows, cols);
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

/* ---- exact singular values: one-sided Jacobi, and the Gram matrix's eigenvalues ---------- */

/* x[0..n-1] in non-increasing order (insertion sort: the values arrive nearly sorted) */
static MUON__ALWAYS_INLINE void muon__sort_desc(double *x, size_t n)
{
    size_t i, k;
    for (i = 1; i < n; i++) {
        double v = x[i];
        for (k = i; k > 0 && x[k - 1] < v; k--) x[k] = x[k - 1];
        x[k] = v;
    }
}

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
    muon__sort_desc(sv, p);
}

MUONDEF size_t muon_singular_values_workspace_size(size_t rows, size_t cols)
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

/* The singular-value functions' checks (both methods), given the workspace the method needs:
 * NULL, SIZE (shape, then ws_bytes < need), ALIAS (M, sv and ws apart), NONFINITE. */
static MUON__ALWAYS_INLINE muon_status muon__sv_args(const float *M, size_t rows, size_t cols, size_t ld,
                                                     const double *sv, const void *ws, size_t ws_bytes, size_t need)
{
    muon_status s;
    size_t p = rows < cols ? rows : cols, mb;
    if (!M || !sv || !ws) return MUON_ERR_NULL;
    if ((s = muon__u_check_shape(rows, cols, ld)) != MUON_OK) return s;
    if (need == 0 || ws_bytes < need) return MUON_ERR_SIZE;
    mb = muon__u_extent(rows, cols, ld) * sizeof(float);
    if (muon__u_overlap(sv, p * sizeof(double), M, mb) || muon__u_overlap(ws, ws_bytes, M, mb) ||
        muon__u_overlap(ws, ws_bytes, sv, p * sizeof(double)))
        return MUON_ERR_ALIAS;
    if (!muon__u_finite_matrix(M, rows, cols, ld)) return MUON_ERR_NONFINITE;
    return MUON_OK;
}

/* the allocating form of either method (gram: the Gram matrix's eigenvalues, else Jacobi) */
static muon_status muon__sv_alloc(const float *M, size_t rows, size_t cols, size_t ld, double *sv, int gram);

MUONDEF muon_status muon_singular_values_ws(const float *M, size_t rows, size_t cols, size_t ld,
                                            double *sv, void *ws, size_t ws_bytes)
{
    const size_t need = muon_singular_values_workspace_size(rows, cols);
    muon_status s = muon__sv_args(M, rows, cols, ld, sv, ws, ws_bytes, need);
    size_t p = rows < cols ? rows : cols, q = rows < cols ? cols : rows;
    double *A;
    if (s != MUON_OK) return s;
    A = (double *)muon__u_align_ptr(ws);
    muon__sv_load(M, rows, cols, ld, A);
    muon__jacobi_sv(A, q, p, sv);
    return MUON_OK;
}

MUONDEF muon_status muon_singular_values(const float *M, size_t rows, size_t cols, size_t ld, double *sv)
{
    return muon__sv_alloc(M, rows, cols, ld, sv, 0);
}

/* singular values from the Gram matrix (issue 49's budget estimate) */
MUONDEF size_t muon_singular_values_gram_workspace_size(size_t rows, size_t cols)
{
    size_t p = rows < cols ? rows : cols, b;
    if (rows == 0 || cols == 0) return 0;
    /* the p x p Gram matrix, then the Householder vector, A v and the tridiagonal (4 p) */
    if (!muon__u_mul(p, p + 4, &b) || !muon__u_mul(b, sizeof(double), &b)) return 0;
    if (!muon__u_add(b, MUON__ALIGN, &b)) return 0;
    return b;
}

/* Dot products in double with eight running sums (in this fixed order on every build): the
 * single chain of a plain loop is latency-bound, 4-6x slower, and without reassociation no
 * compiler splits it. */
static double muon__dot8_f(const float *a, const float *b, size_t n)
{
    double s[8] = {0, 0, 0, 0, 0, 0, 0, 0}, t;
    size_t r = 0, q;
    for (; r + 8 <= n; r += 8)
        for (q = 0; q < 8; q++) s[q] += (double)a[r + q] * (double)b[r + q];
    for (q = 0; r < n; r++, q++) s[q] += (double)a[r] * (double)b[r];
    t = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    return t;
}
static double muon__dot8_d(const double *a, const double *b, size_t n)
{
    double s[8] = {0, 0, 0, 0, 0, 0, 0, 0}, t;
    size_t r = 0, q;
    for (; r + 8 <= n; r += 8)
        for (q = 0; q < 8; q++) s[q] += a[r + q] * b[r + q];
    for (q = 0; r < n; r++, q++) s[q] += a[r] * b[r];
    t = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    return t;
}

/* A (p x p, full) = the smaller Gram matrix of M, in double */
static void muon__gram_load(const float *M, size_t rows, size_t cols, size_t ld, double *A)
{
    size_t i, j, r;
    if (rows <= cols) { /* A = M M^T: dots of rows */
        for (i = 0; i < rows; i++)
            for (j = 0; j <= i; j++) A[i * rows + j] = A[j * rows + i] = muon__dot8_f(M + i * ld, M + j * ld, cols);
    } else { /* A = M^T M: rank-one updates of the lower triangle, row by row of M */
        for (i = 0; i < cols * cols; i++) A[i] = 0.0;
        for (r = 0; r < rows; r++) {
            const float *m = M + r * ld;
            for (i = 0; i < cols; i++) {
                double mi = (double)m[i];
                double *a = A + i * cols;
                for (j = 0; j <= i; j++) a[j] += mi * (double)m[j];
            }
        }
        for (i = 0; i < cols; i++)
            for (j = 0; j < i; j++) A[j * cols + i] = A[i * cols + j];
    }
}

/* Householder reduction of the symmetric p x p A to tridiagonal (d: diagonal, e: sub-diagonal,
 * e[p-1] = 0); v, w: p doubles each. A is destroyed. */
static void muon__tridiag(double *A, size_t p, double *d, double *e, double *v, double *w)
{
    size_t k, i, j;
    for (k = 0; k + 2 < p; k++) {
        const size_t n = p - k - 1; /* the column below the diagonal: rows k+1 .. p-1 */
        double nrm = 0.0, scale = 0.0, alpha, vv, tau, K;
        for (i = 0; i < n; i++) {
            double x = fabs(A[(k + 1 + i) * p + k]);
            if (x > scale) scale = x;
        }
        d[k] = A[k * p + k];
        if (scale == 0.0) { /* already reduced */
            e[k] = 0.0;
            continue;
        }
        for (i = 0; i < n; i++) {
            double x = A[(k + 1 + i) * p + k] / scale;
            v[i] = x;
            nrm += x * x;
        }
        nrm = sqrt(nrm);
        alpha = v[0] >= 0.0 ? -nrm : nrm; /* x -> alpha e1, no cancellation in v[0] */
        v[0] -= alpha;
        vv = 0.0;
        for (i = 0; i < n; i++) vv += v[i] * v[i];
        e[k] = alpha * scale;
        tau = 2.0 / vv;
        /* w = tau A22 v, then w -= (tau/2)(v'w) v; A22 -= v w' + w v' */
        for (i = 0; i < n; i++) w[i] = tau * muon__dot8_d(A + (k + 1 + i) * p + (k + 1), v, n);
        K = 0.5 * tau * muon__dot8_d(v, w, n);
        for (i = 0; i < n; i++) w[i] -= K * v[i];
        for (i = 0; i < n; i++) {
            double *a = A + (k + 1 + i) * p + (k + 1);
            const double vi = v[i], wi = w[i];
            for (j = 0; j < n; j++) a[j] -= vi * w[j] + wi * v[j];
        }
    }
    if (p >= 2) d[p - 2] = A[(p - 2) * p + (p - 2)], e[p - 2] = A[(p - 1) * p + (p - 2)];
    d[p - 1] = A[(p - 1) * p + (p - 1)];
    e[p - 1] = 0.0;
}

/* how many eigenvalues of the tridiagonal (d, e) are below x (Sturm count, LAPACK's pivmin guard) */
static size_t muon__sturm_below(const double *d, const double *e, size_t p, double x, double pivmin)
{
    size_t i, c = 0;
    double q = d[0] - x;
    if (fabs(q) < pivmin) q = -pivmin;
    if (q < 0.0) c++;
    for (i = 1; i < p; i++) {
        q = d[i] - x - e[i - 1] * e[i - 1] / q;
        if (fabs(q) < pivmin) q = -pivmin;
        if (q < 0.0) c++;
    }
    return c;
}

/* The eigenvalues of the symmetric tridiagonal (d, e; e[p-1] = 0), into d, by the implicit QL
 * iteration with Wilkinson's shift (eigenvalues only: O(p^2) in all). e is destroyed. Returns
 * 0 if some value needs more than 30 sweeps (d and e are then of no use: the caller bisects). */
static int muon__tridiag_ql(double *d, double *e, size_t p)
{
    size_t l, m, i;
    for (l = 0; l < p; l++) {
        int iter = 0;
        for (;;) {
            double g, r, sn, c, pp, f, b;
            int split = 0;
            for (m = l; m + 1 < p; m++) /* the first negligible sub-diagonal from l */
                if (fabs(e[m]) <= DBL_EPSILON * (fabs(d[m]) + fabs(d[m + 1]))) break;
            if (m == l) break; /* d[l] has converged */
            if (++iter > 30) return 0;
            /* the shift: the eigenvalue of the leading 2 x 2 nearer d[l] */
            g = (d[l + 1] - d[l]) / (2.0 * e[l]);
            r = sqrt(g * g + 1.0);
            g = d[m] - d[l] + e[l] / (g + (g >= 0.0 ? r : -r));
            sn = c = 1.0;
            pp = 0.0;
            for (i = m; i-- > l;) { /* plane rotations chase the bulge from m up to l */
                f = sn * e[i];
                b = c * e[i];
                r = sqrt(f * f + g * g);
                e[i + 1] = r;
                if (r == 0.0) { /* an exact split: restart the sweep */
                    d[i + 1] -= pp;
                    e[m] = 0.0;
                    split = 1;
                    break;
                }
                sn = f / r;
                c = g / r;
                g = d[i + 1] - pp;
                r = (d[i] - g) * sn + 2.0 * c * b;
                pp = sn * r;
                d[i + 1] = g + pp;
                g = c * r - b;
            }
            if (split) continue;
            d[l] -= pp;
            e[l] = g;
            e[m] = 0.0;
        }
    }
    return 1;
}

/* sv = the square roots of the eigenvalues of the positive semi-definite tridiagonal (d, e),
 * non-increasing, by bisection on Sturm counts (the fallback of muon__tridiag_ql; O(p^2 log)) */
static void muon__tridiag_bisect(const double *d, const double *e, size_t p, double *sv)
{
    size_t i, k;
    double lo = 0.0, hi = 0.0, emax = 0.0, pivmin;
    /* Gershgorin interval of the tridiagonal; every eigenvalue lies in [lo, hi] */
    for (i = 0; i < p; i++) {
        double r = fabs(e[i]) + (i ? fabs(e[i - 1]) : 0.0);
        if (i == 0 || d[i] - r < lo) lo = d[i] - r;
        if (i == 0 || d[i] + r > hi) hi = d[i] + r;
        if (e[i] * e[i] > emax) emax = e[i] * e[i];
    }
    if (hi <= 0.0) { /* M = 0 */
        for (i = 0; i < p; i++) sv[i] = 0.0;
        return;
    }
    pivmin = DBL_MIN * (emax > 1.0 ? emax : 1.0);
    /* the k-th largest eigenvalue: the least x with at least p - k values below it */
    for (k = 0; k < p; k++) {
        double a = lo, b = hi, lam;
        int it;
        for (it = 0; it < 128 && b - a > 2.0 * DBL_EPSILON * (fabs(a) > fabs(b) ? fabs(a) : fabs(b)) + pivmin; it++) {
            double mid = 0.5 * (a + b);
            if (muon__sturm_below(d, e, p, mid, pivmin) >= p - k) b = mid;
            else a = mid;
        }
        lam = 0.5 * (a + b);
        sv[k] = lam > 0.0 ? sqrt(lam) : 0.0; /* a Gram matrix is positive semi-definite */
        if (k > 0 && sv[k] > sv[k - 1]) sv[k] = sv[k - 1]; /* bisection ties */
        hi = b; /* the next one is no larger */
    }
}

MUONDEF muon_status muon_singular_values_gram_ws(const float *M, size_t rows, size_t cols, size_t ld,
                                                 double *sv, void *ws, size_t ws_bytes)
{
    const size_t need = muon_singular_values_gram_workspace_size(rows, cols);
    muon_status s = muon__sv_args(M, rows, cols, ld, sv, ws, ws_bytes, need);
    size_t p = rows < cols ? rows : cols, i;
    double *A, *d, *e, *v, *w;
    if (s != MUON_OK) return s;
    A = (double *)muon__u_align_ptr(ws);
    d = A + p * p, e = d + p, v = e + p, w = v + p;
    muon__gram_load(M, rows, cols, ld, A);
    muon__tridiag(A, p, d, e, v, w);
    memcpy(v, d, p * sizeof(double)); /* QL works on copies; bisection needs the tridiagonal */
    memcpy(w, e, p * sizeof(double));
    if (muon__tridiag_ql(v, w, p)) {
        muon__sort_desc(v, p);
        for (i = 0; i < p; i++) sv[i] = v[i] > 0.0 ? sqrt(v[i]) : 0.0; /* a Gram matrix is positive semi-definite */
        return MUON_OK;
    }
    muon__tridiag_bisect(d, e, p, sv);
    return MUON_OK;
}

MUONDEF muon_status muon_singular_values_gram(const float *M, size_t rows, size_t cols, size_t ld, double *sv)
{
    return muon__sv_alloc(M, rows, cols, ld, sv, 1);
}

static muon_status muon__sv_alloc(const float *M, size_t rows, size_t cols, size_t ld, double *sv, int gram)
{
    muon_status s;
    size_t need;
    void *ws;
    if (!M || !sv) return MUON_ERR_NULL;
    if ((s = muon__u_check_shape(rows, cols, ld)) != MUON_OK) return s;
    need = gram ? muon_singular_values_gram_workspace_size(rows, cols) : muon_singular_values_workspace_size(rows, cols);
    if (need == 0) return MUON_ERR_SIZE;
    ws = MUON_MALLOC(need);
    if (!ws) return MUON_ERR_NOMEM;
    s = gram ? muon_singular_values_gram_ws(M, rows, cols, ld, sv, ws, need)
             : muon_singular_values_ws(M, rows, cols, ld, sv, ws, need);
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
static MUON__NOINLINE double muon__power(const float *W, size_t rows, size_t cols, size_t ld, int iters, double *u, double *v)
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
    if (muon__u_overlap(u, rows * sizeof(double), v, cols * sizeof(double)) ||
        muon__u_overlap(u, rows * sizeof(double), W, muon__u_extent(rows, cols, ld) * sizeof(float)) ||
        muon__u_overlap(v, cols * sizeof(double), W, muon__u_extent(rows, cols, ld) * sizeof(float)))
        return MUON_ERR_ALIAS;
    for (j = 0; j < cols; j++) /* v's values only after the overlaps (issue 40) */
        if (!muon__u_isfinite(v[j])) return MUON_ERR_DOMAIN;
    if (!muon__u_finite_matrix(W, rows, cols, ld)) return MUON_ERR_NONFINITE;
    sg = muon__power(W, rows, cols, ld, iters, u, v);
    *sigma = sg;
    return MUON_OK;
}

/* c = u^T D v in double, rows in order */
static MUON__NOINLINE double muon__cap_growth(const float *D, size_t rows, size_t cols, size_t ldd, const double *u,
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

static MUON__NOINLINE void muon__cap_remove(float *D, size_t rows, size_t cols, size_t ldd, const double *u, const double *v,
                             double c)
{
    size_t i;
    MUON__OMP(omp parallel for schedule(static) if ((double)rows * (double)cols >= MUON__PAR_MIN && muon__gate(2) > 1))
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
    size_t i;
    if (!D || !u || !v) return MUON_ERR_NULL;
    if ((s = muon__u_check_shape(rows, cols, ldd)) != MUON_OK) return s;
    if (mode != MUON_CAP_OFF && mode != MUON_CAP_GROWTH && mode != MUON_CAP_ALWAYS) return MUON_ERR_DOMAIN;
    for (i = 0; i < rows; i++)
        if (!muon__u_isfinite(u[i])) return MUON_ERR_NONFINITE;
    for (i = 0; i < cols; i++)
        if (!muon__u_isfinite(v[i])) return MUON_ERR_NONFINITE;
    if (!muon__u_finite_matrix(D, rows, cols, ldd)) return MUON_ERR_NONFINITE;
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
    nbytes = muon_singular_values_workspace_size(rows, cols);
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

/* muon_default written into *c, no temporary */
static void muon__default_into(muon_config *c)
{
    memset(c, 0, sizeof *c);
    c->lr = 0.02;
    c->momentum = 0.95;
    c->weight_decay = 0.0;
    c->nesterov = 1;
    c->momentum_form = MUON_MOMENTUM_EMA;
    c->scale = MUON_SCALE_ORIGINAL;
    c->scale_coeff = 0.2;
    muon__ns_preset_into(MUON_NS_JORDAN, 5, &c->ns);
    c->split_rows = 1;
    c->cap = MUON_CAP_OFF;
    c->cap_iters = 2;
    c->normuon_beta2 = 0.95;
    c->normuon_eps = 1e-8;
}

MUONDEF muon_config muon_default(void)
{
    muon_config c;
    muon__default_into(&c);
    return c;
}

/* The domain of (lr, weight_decay) shared by every step (MUON_LR_MAX). */
static int muon__lr_wd_ok(double lr, double wd)
{
    return muon__u_isfinite(lr) && muon__u_isfinite(wd) && lr >= 0.0 && lr <= MUON_LR_MAX && wd >= 0.0 &&
           lr * wd <= 1.0; /* finite lr, wd: lr wd is not NaN (an overflow is Inf, > 1) */
}

/* A step counter that can take one more step (from a checkpoint it may be anything). */
static int muon__step_count_ok(long long step)
{
    return step >= 0 && step < LLONG_MAX;
}

/* muon_config_resolve's checks, reading *in only (no copy of it: docs/embedding.md, "Stack") */
static MUON__NOINLINE muon_status muon__config_check(const muon_config *in)
{
    double jt[1][3];
    muon__ns_view v;
    if (!muon__lr_wd_ok(in->lr, in->weight_decay)) return MUON_ERR_DOMAIN;
    if (!muon__u_rate(in->momentum)) return MUON_ERR_DOMAIN;
    if (in->momentum_form != MUON_MOMENTUM_EMA && in->momentum_form != MUON_MOMENTUM_SUM) return MUON_ERR_DOMAIN;
    if (in->scale != MUON_SCALE_ORIGINAL && in->scale != MUON_SCALE_MATCH_ADAMW &&
        in->scale != MUON_SCALE_SPECTRAL && in->scale != MUON_SCALE_NONE)
        return MUON_ERR_DOMAIN;
    if (!muon__u_isfinite(in->scale_coeff) || in->scale_coeff < 0.0) return MUON_ERR_DOMAIN;
    if (in->cap != MUON_CAP_OFF && in->cap != MUON_CAP_GROWTH && in->cap != MUON_CAP_ALWAYS) return MUON_ERR_DOMAIN;
    if (in->cap_iters < 0 || in->cap_iters > 100) return MUON_ERR_DOMAIN;
    if ((in->row_sizes != MUON__NULL) != (in->row_blocks != 0) || (in->col_sizes != MUON__NULL) != (in->col_blocks != 0))
        return MUON_ERR_DOMAIN; /* a sizes array without its count, or a count without sizes */
    if ((in->row_sizes && in->split_rows > 1) || (in->col_sizes && in->split_cols > 1)) return MUON_ERR_DOMAIN;
    if (!muon__u_rate(in->normuon_beta2)) return MUON_ERR_DOMAIN;
    if (!muon__u_isfinite(in->normuon_eps) || in->normuon_eps < 0.0) return MUON_ERR_DOMAIN;
    if (in->threads < 0) return MUON_ERR_DOMAIN;
    return muon__ns_view_make(&in->ns, &v, jt);
}

/* What a step reads of a muon_config, its zero-means-default fields filled in, the schedule
 * by pointer (resolved by view where it runs): a step's frame holds this (~170 bytes), not a
 * copy of the ~930-byte config (docs/embedding.md, "Stack"). */
typedef struct muon__step_cfg {
    double lr, momentum, weight_decay, scale_coeff, normuon_beta2, normuon_eps;
    int nesterov, cap_iters, normuon, cautious_wd;
    int threads; /* the step's team size, >= 1 (cfg->threads 0: the OpenMP default) */
    muon_momentum_form momentum_form;
    muon_scale_mode scale;
    muon_cap_mode cap;
    const muon_config *src; /* the block splits are read from it (muon__step_splits) */
    const muon_ns_config *ns;
} muon__step_cfg;

/* The one place the zero-means-default rule of muon_config lives (muon_config_resolve too). */
static void muon__step_cfg_make(const muon_config *in, muon__step_cfg *c)
{
    c->lr = in->lr;
    c->momentum = in->momentum;
    c->weight_decay = in->weight_decay;
    c->scale_coeff = in->scale_coeff != 0.0 ? in->scale_coeff : 0.2;
    c->normuon_beta2 = in->normuon_beta2 != 0.0 ? in->normuon_beta2 : 0.95;
    c->normuon_eps = in->normuon_eps != 0.0 ? in->normuon_eps : 1e-8;
    c->nesterov = in->nesterov;
    c->cap_iters = in->cap_iters ? in->cap_iters : 2;
    c->normuon = in->normuon != 0;
    c->cautious_wd = in->cautious_wd != 0;
    c->threads = in->threads > 0 ? muon__u_threads_cap(in->threads) : muon__u_threads();
#ifdef _OPENMP
    if (omp_in_parallel()) c->threads = 1; /* called from a team (muon_step_layers, a host's loop) */
#endif
    c->momentum_form = in->momentum_form;
    c->scale = in->scale;
    c->cap = in->cap;
    c->src = in;
    c->ns = &in->ns;
}

/* the zero-means-default fields of a checked config, filled in place */
static void muon__config_fill(muon_config *r)
{
    muon__step_cfg c;
    muon__step_cfg_make(r, &c);
    muon_ns_resolve(&r->ns, &r->ns); /* checked: cannot fail */
    r->scale_coeff = c.scale_coeff;
    r->split_rows = r->split_rows ? r->split_rows : 1;
    r->split_cols = r->split_cols ? r->split_cols : 1;
    r->cap_iters = c.cap_iters;
    r->normuon_beta2 = c.normuon_beta2;
    r->normuon_eps = c.normuon_eps;
    r->normuon = c.normuon;
    r->cautious_wd = c.cautious_wd;
}

MUONDEF muon_status muon_config_resolve(const muon_config *in, muon_config *out)
{
    muon_status s;
    if (!in || !out) return MUON_ERR_NULL;
    if ((s = muon__config_check(in)) != MUON_OK) return s;
    if (out != in) memcpy(out, in, sizeof *out);
    muon__config_fill(out);
    return MUON_OK;
}

/* The blocks along one axis of length n: k equal parts (sizes NULL) or sizes[0..k-1]. */
typedef struct muon__split {
    size_t n, k, max;
    const size_t *sizes;
} muon__split;

static size_t muon__split_len(const muon__split *p, size_t i)
{
    return p->sizes ? p->sizes[i] : p->n / p->k;
}

/* The partition of n by `equal` parts (0: 1) or by sizes[0..count-1]; 0 when it does not fit n
 * (a part of 0, a sum other than n, equal parts not dividing n). */
static int muon__split_make(size_t n, size_t equal, const size_t *sizes, size_t count, muon__split *p)
{
    size_t i, sum = 0;
    p->n = n;
    p->sizes = sizes;
    p->max = 0;
    if (!sizes) {
        p->k = equal ? equal : 1;
        if (n == 0 || n % p->k != 0) return 0;
        p->max = n / p->k;
        return 1;
    }
    p->k = count;
    if (count == 0) return 0;
    for (i = 0; i < count; i++) {
        if (sizes[i] == 0 || sizes[i] > n - sum) return 0; /* no overflow: sum <= n throughout */
        sum += sizes[i];
        if (sizes[i] > p->max) p->max = sizes[i];
    }
    return sum == n;
}

/* the row and column partitions of a rows x cols step under a resolved (or raw) config */
static int muon__step_splits(const muon__step_cfg *c, size_t rows, size_t cols, muon__split *rp, muon__split *cp)
{
    const muon_config *in = c->src; /* (split_make reads an equal count of 0 as 1) */
    return muon__split_make(rows, in->split_rows, in->row_sizes, in->row_blocks, rp) &&
           muon__split_make(cols, in->split_cols, in->col_sizes, in->col_blocks, cp);
}

/* the shape scale of the r x c matrix NS saw */
static double muon__shape_scale(const muon__step_cfg *c, size_t r, size_t cols)
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

/* workspace of a step: U (rows x cols floats), extra_doubles doubles, then one NS workspace for
 * the largest block (br x bc: the NS workspace grows with each dimension) */
static size_t muon__step_ws_bytes(size_t rows, size_t cols, size_t br, size_t bc, size_t extra_doubles,
                                  int single_thread)
{
    size_t ub, nb, eb, total;
    if (rows == 0 || cols == 0 || br == 0 || bc == 0 || br > rows || bc > cols) return 0;
    if (!muon__u_mul(rows, cols, &ub) || !muon__u_mul(ub, sizeof(float), &ub)) return 0;
    ub = muon__u_round(ub);
    if (!muon__u_mul(extra_doubles, sizeof(double), &eb)) return 0;
    eb = muon__u_round(eb);
    nb = muon__ns_ws_bytes(br, bc, single_thread);
    if (!ub || !nb || (extra_doubles && !eb)) return 0;
    total = MUON__ALIGN;
    if (!muon__u_add(total, ub, &total) || !muon__u_add(total, eb, &total) || !muon__u_add(total, nb, &total))
        return 0;
    return total;
}

/* How many blocks of a step run at once, one per thread (1: one after another, each on the
 * step's team). Blocks go one per thread when the workspace holds a one-thread NS workspace per
 * lane (muon_step_workspace_size counts them) and the lanes stay busy: the count divides evenly,
 * or is at least 4 per lane, or each block's products are below the GEMM's parallel threshold
 * (they would run on one thread anyway). */
static size_t muon__blocks_lanes(int threads, const muon__split *rp, const muon__split *cp, size_t ws_bytes)
{
#if defined(_OPENMP) && !defined(MUON_USE_CBLAS) /* a CBLAS threads each product itself */
    size_t nb = rp->k * cp->k, one, lanes = threads > 1 ? (size_t)threads : 1;
    double m = (double)(rp->max < cp->max ? rp->max : cp->max), n = (double)(rp->max < cp->max ? cp->max : rp->max);
    if (lanes <= 1 || nb <= 1) return 1;
    one = muon__u_round(muon__ns_ws_bytes(rp->max, cp->max, 1));
    if (one == 0) return 1;
    if (lanes > nb) lanes = nb;
    if (lanes > ws_bytes / one) lanes = ws_bytes / one;
    if (lanes <= 1) return 1;
    if (nb % lanes == 0 || nb >= 4 * lanes || m * m * n < (double)MUON_GEMM_PARALLEL_MIN) return lanes;
    return 1;
#else
    (void)threads; (void)rp; (void)cp; (void)ws_bytes;
    return 1;
#endif
}

/* a step's workspace with room for its blocks to run one per thread (muon__blocks_lanes) */
static size_t muon__step_ws_lanes(size_t rows, size_t cols, const muon__step_cfg *c, const muon__split *rp,
                                  const muon__split *cp, size_t extra_doubles)
{
    size_t full = muon__step_ws_bytes(rows, cols, rp->max, cp->max, extra_doubles, 0), lanes, base, one, with;
    if (!full) return 0;
    lanes = muon__blocks_lanes(c->threads, rp, cp, (size_t)-1);
    if (lanes <= 1) return full;
    base = muon__step_ws_bytes(rows, cols, rp->max, cp->max, extra_doubles, 1) -
           muon__u_round(muon__ns_ws_bytes(rp->max, cp->max, 1));
    one = muon__u_round(muon__ns_ws_bytes(rp->max, cp->max, 1));
    if (!muon__u_mul(lanes, one, &with) || !muon__u_add(with, base, &with)) return full;
    return with > full ? with : full;
}

MUONDEF size_t muon_step_workspace_size(size_t rows, size_t cols, const muon_config *cfg)
{
    muon__split rp, cp;
    muon__step_cfg c;
    if (!cfg) return muon__step_ws_bytes(rows, cols, rows, cols, rows, 0); /* NorMuon's rows included */
    muon__step_cfg_make(cfg, &c);
    if (!muon__step_splits(&c, rows, cols, &rp, &cp)) return 0;
    return muon__step_ws_lanes(rows, cols, &c, &rp, &cp, cfg->normuon ? rows : 0);
}

MUONDEF muon_status muon_init_ex(muon_state *st, size_t rows, size_t cols, int mode)
{
    size_t mb, pb, wb = 0, total;
    unsigned char *mem, *base;
    if (!st) return MUON_ERR_NULL;
    if (rows == 0 || cols == 0) return MUON_ERR_SIZE;
    if (!muon__u_mul(rows, cols, &mb) || !muon__u_mul(mb, sizeof(float), &mb)) return MUON_ERR_SIZE;
    mb = muon__u_round(mb);
    if (!muon__u_add(rows, cols, &pb) || !muon__u_add(pb, rows, &pb) || !muon__u_mul(pb, sizeof(double), &pb))
        return MUON_ERR_SIZE;
    pb = muon__u_round(pb);
    if (!mb || !pb) return MUON_ERR_SIZE;
    if (mode != MUON_INIT_NO_WORKSPACE) {
        wb = muon__step_ws_bytes(rows, cols, rows, cols, rows, 0);
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
    st->row_v = st->cap_v + cols;
    if (wb) {
        st->workspace = base + mb + pb;
        st->workspace_bytes = wb;
    }
    return MUON_OK;
}

MUONDEF muon_status muon_init(muon_state *st, size_t rows, size_t cols)
{
    return muon_init_ex(st, rows, cols, MUON_INIT_WORKSPACE);
}

MUONDEF void muon_free(muon_state *st)
{
    if (!st) return;
    if (st->block) MUON_FREE(st->block);
    memset(st, 0, sizeof *st);
}

MUONDEF muon_status muon_matrix_shape(const size_t *dims, int ndim, int stack_dims, size_t *count, size_t *rows,
                                      size_t *cols)
{
    size_t cnt = 1, c = 1;
    int i;
    if (!dims || !count || !rows || !cols) return MUON_ERR_NULL;
    if (stack_dims < 0 || ndim < 2 || stack_dims > ndim - 2) return MUON_ERR_DOMAIN;
    for (i = 0; i < ndim; i++)
        if (dims[i] == 0) return MUON_ERR_SIZE;
    for (i = 0; i < stack_dims; i++)
        if (!muon__u_mul(cnt, dims[i], &cnt)) return MUON_ERR_SIZE;
    for (i = stack_dims + 1; i < ndim; i++)
        if (!muon__u_mul(c, dims[i], &c)) return MUON_ERR_SIZE;
    { /* the whole parameter must be addressable as floats */
        size_t t;
        if (!muon__u_mul(cnt, dims[stack_dims], &t) || !muon__u_mul(t, c, &t) || !muon__u_mul(t, sizeof(float), &t))
            return MUON_ERR_SIZE;
    }
    *count = cnt;
    *rows = dims[stack_dims];
    *cols = c;
    return MUON_OK;
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

/* u = momentum direction of G into U (ld cols) without touching B. MUON_ERR_RANGE if the new
 * momentum or u overflows float (the SUM form with |G| near FLT_MAX (1 - beta); the EMA form
 * is a convex combination of finite floats and cannot), NONFINITE for NaN/Inf in B (a state
 * written by hand). */
static MUON__NOINLINE muon_status muon__mom_fill(const float *B, const float *G, size_t ldg, size_t rows, size_t cols,
                                  const muon__step_cfg *c, float *U)
{
    size_t i;
    int bad = 0, badb = 0;
    MUON__OMP(omp parallel for schedule(static) reduction(|:bad, badb) MUON__PAR(c->threads, (double)rows * (double)cols))
    for (i = 0; i < rows; i++) {
        const float *b = B + i * cols, *g = G + i * ldg;
        float *u = U + i * cols;
        size_t j;
        float nb;
        uint32_t nbmax = 0; /* max |nb| as bits: Inf and NaN are the largest */
        for (j = 0; j < cols; j++) {
            uint32_t nbb;
            u[j] = muon__mom_dir(b[j], g[j], c->momentum, c->nesterov, c->momentum_form, &nb);
            nbb = muon__u_absbits(nb);
            nbmax = nbb > nbmax ? nbb : nbmax;
        }
        bad |= nbmax >= 0x7F800000u || !muon__u_finite_matrix(u, 1, cols, cols);
        badb |= !muon__u_finite_matrix(b, 1, cols, cols);
    }
    if (badb) return MUON_ERR_NONFINITE;
    return bad ? MUON_ERR_RANGE : MUON_OK;
}

static MUON__NOINLINE void muon__mom_commit(float *B, const float *G, size_t ldg, size_t rows, size_t cols, const muon__step_cfg *c)
{
    size_t i;
    MUON__OMP(omp parallel for schedule(static) MUON__PAR(c->threads, (double)rows * (double)cols))
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

/* block b (row-major over the row and column blocks) of U: its offset and shape */
static float *muon__block_at(float *U, size_t cols, const muon__split *rp, const muon__split *cp, size_t b,
                             size_t *rl, size_t *cl)
{
    size_t bi = b / cp->k, bj = b % cp->k, r0 = 0, c0 = 0, i;
    for (i = 0; i < bi; i++) r0 += muon__split_len(rp, i);
    for (i = 0; i < bj; i++) c0 += muon__split_len(cp, i);
    *rl = muon__split_len(rp, bi);
    *cl = muon__split_len(cp, bj);
    return U + r0 * cols + c0; /* size_t offsets throughout */
}

/* muon__ns_blocks with the blocks one per thread (lanes > 1), each in its own one-thread slice
 * of nsws; a frame of its own, off the one-after-another path */
static MUON__NOINLINE muon_status muon__ns_blocks_lanes(float *U, size_t cols, const muon__ns_view *view,
                                                        const muon__split *rp, const muon__split *cp, void *nsws,
                                                        size_t lanes)
{
    size_t one = muon__u_round(muon__ns_ws_bytes(rp->max, cp->max, 1)), nb = rp->k * cp->k, bad = nb, b;
    muon_status first = MUON_OK;
    muon__ns_view v = *view;
    (void)lanes; /* without OpenMP (then never called) */
    v.threads = 1;
    MUON__OMP(omp parallel for num_threads(muon__gate((int)lanes)) schedule(dynamic, 1))
    for (b = 0; b < nb; b++) {
        size_t rl, cl, lane = 0;
        float *blk = muon__block_at(U, cols, rp, cp, b, &rl, &cl);
        muon_status sb;
#ifdef _OPENMP
        lane = (size_t)omp_get_thread_num();
#endif
        sb = muon__ns_one(blk, rl, cl, cols, &v, blk, cols, (unsigned char *)nsws + lane * one, one);
        if (sb != MUON_OK) {
            MUON__OMP(omp critical(muon__blocks_status))
            if (b < bad) bad = b, first = sb; /* the lowest block's, as one after another */
        }
    }
    return first;
}

/* NS of every block of U (rows x cols, ld cols) in place: U becomes O, unscaled. The nsws is
 * MUON__ALIGN-aligned. Results do not depend on how the blocks are spread over threads. */
static MUON__ALWAYS_INLINE muon_status muon__ns_blocks(float *U, size_t cols, const muon_ns_config *ns, int threads,
                                                       const muon__split *rp, const muon__split *cp, void *nsws,
                                                       size_t nsws_bytes)
{
    size_t b, nb = rp->k * cp->k, lanes = muon__blocks_lanes(threads, rp, cp, nsws_bytes);
    double jt[1][3];
    muon__ns_view v;
    muon_status s;
    if ((s = muon__ns_view_make(ns, &v, jt)) != MUON_OK) return s; /* checked: cannot fail */
    v.threads = threads;
    if (lanes > 1) return muon__ns_blocks_lanes(U, cols, &v, rp, cp, nsws, lanes);
    for (b = 0; b < nb; b++) {
        size_t rl, cl;
        float *blk = muon__block_at(U, cols, rp, cp, b, &rl, &cl);
        if ((s = muon__ns_one(blk, rl, cl, cols, &v, blk, cols, nsws, nsws_bytes)) != MUON_OK) return s;
    }
    return MUON_OK;
}

/* NorMuon on O (U, rows x cols, ld cols), SPEC 2.7: vnew_i = beta2 v_i + (1 - beta2) mean_j O_ij^2
 * (written to vnew, the state untouched), O_i <- O_i / (sqrt(vnew_i) + eps), then O rescaled to
 * its Frobenius norm before the division (sums in double). A zero row stays zero (0 / eps). */
static MUON__NOINLINE void muon__normuon(float *U, size_t rows, size_t cols, const muon__step_cfg *c, const double *v, double *vnew)
{
    double before = 0.0, after = 0.0, beta = c->normuon_beta2, eps = c->normuon_eps, f;
    size_t i;
    MUON__OMP(omp parallel for schedule(static) reduction(+:before, after) MUON__PAR(c->threads, (double)rows * (double)cols))
    for (i = 0; i < rows; i++) {
        float *u = U + i * cols;
        double ss = 0.0, d, q = 0.0;
        size_t j;
        for (j = 0; j < cols; j++) ss += (double)u[j] * (double)u[j];
        vnew[i] = beta * v[i] + (1.0 - beta) * (ss / (double)cols);
        d = 1.0 / (sqrt(vnew[i]) + eps);
        for (j = 0; j < cols; j++) {
            u[j] = (float)((double)u[j] * d);
            q += (double)u[j] * (double)u[j];
        }
        before += ss;
        after += q;
    }
    if (!(after > 0.0)) return;
    f = sqrt(before / after);
    MUON__OMP(omp parallel for schedule(static) MUON__PAR(c->threads, (double)rows * (double)cols))
    for (i = 0; i < rows; i++) {
        float *u = U + i * cols;
        size_t j;
        for (j = 0; j < cols; j++) u[j] = (float)((double)u[j] * f);
    }
}

/* D = -lr * scale(block) * O, each block with its own shape's scale. RANGE when a factor or an
 * entry of D leaves float's range. One block: one factor for the whole matrix, as before. */
static MUON__NOINLINE muon_status muon__blocks_scale(float *U, size_t cols, const muon__step_cfg *c, const muon__split *rp,
                                      const muon__split *cp)
{
    size_t bi, bj, r0 = 0, i;
    int bad = 0;
    for (bi = 0; bi < rp->k; bi++) {
        size_t rl = muon__split_len(rp, bi), rend = r0 + rl;
        for (bj = 0; bj < cp->k; bj++) /* every factor representable before anything is scaled */
            if (!muon__u_fits_float(c->lr * muon__shape_scale(c, rl, muon__split_len(cp, bj))))
                return MUON_ERR_RANGE;
        MUON__OMP(omp parallel for schedule(static) reduction(|:bad) MUON__PAR(c->threads, (double)rl * (double)cols))
        for (i = r0; i < rend; i++) {
            float *u = U + i * cols;
            size_t j, b, c0 = 0;
            for (b = 0; b < cp->k; b++) {
                size_t cl = muon__split_len(cp, b);
                float f = (float)(-c->lr * muon__shape_scale(c, rl, cl));
                for (j = c0; j < c0 + cl; j++) u[j] *= f;
                c0 += cl;
            }
            bad |= !muon__u_finite_matrix(u, 1, cols, cols);
        }
        r0 = rend;
    }
    return bad ? MUON_ERR_RANGE : MUON_OK;
}

/* Whether the decoupled decay applies to entry w with increment d: always, or with cautious
 * weight decay only where the update u = -d and w do not disagree in sign, u w >= 0 (dion,
 * modded-nanogpt's NorMuon path and arXiv 2510.12402 use the indicator of u * w >= 0). */
static double muon__decay_for(double lrwd, int cautious, float w, float d)
{
    return cautious && (double)w * (double)d > 0.0 ? 0.0 : lrwd;
}

/* w - lrwd w + d as muon_step_ws commits it (in double, rounded once) */
static float muon__step_new_w(float w, float d, double lrwd)
{
    return lrwd != 0.0 ? (float)(((double)w - lrwd * (double)w) + (double)d) : w + d;
}

/* Whether committing D (in U, ld cols) to W overflows no finite entry of W (an entry that is
 * already NaN/Inf stays so: W is not an input the step checks). With the spectral cap, D is
 * still to be capped: D - c u v^T with |c| <= ||D||_2 <= ||D||_F and unit u, v moves each entry
 * by at most ||D||_F, so the test is |w (1 - lrwd)| + |d| + ||D||_F <= FLT_MAX (in double),
 * a sufficient condition checked before the cap writes its pair into the state. */
static MUON__NOINLINE int muon__step_fits(const float *W, size_t ldw, const float *U, size_t rows, size_t cols, double lrwd,
                           int capped, int cautious, int threads)
{
    size_t i;
    int bad = 0;
    (void)threads; /* without OpenMP */
    double fro = capped ? sqrt(muon__u_sumsq(U, rows, cols, cols)) : 0.0;
    MUON__OMP(omp parallel for schedule(static) reduction(|:bad) MUON__PAR(threads, (double)rows * (double)cols))
    for (i = 0; i < rows; i++) {
        const float *w = W + i * ldw, *d = U + i * cols;
        size_t j;
        for (j = 0; j < cols; j++) {
            if (!muon__u_isfinitef(w[j])) continue;
            if (capped) /* cautious: the mask is not known before the cap, |w| bounds both */
                bad |= !muon__u_fits_float(fabs((double)w[j] * (cautious ? 1.0 : 1.0 - lrwd)) + fabs((double)d[j]) + fro);
            else
                bad |= !muon__u_isfinitef(muon__step_new_w(w[j], d[j], muon__decay_for(lrwd, cautious, w[j], d[j])));
        }
    }
    return !bad;
}

/* validation shared by muon_step_ws and muown_step_ws; the nreg state buffers reg[k] (reg_bytes[k]
 * bytes each) may overlap none of W, G, ws and S (the optional step output, ld lds) */
static MUON__NOINLINE muon_status muon__step_check(size_t rows, size_t cols, const float *W, size_t ldw, const float *G,
                                    size_t ldg, const float *S, size_t lds, const muon__step_cfg *c, void *ws,
                                    size_t ws_bytes, size_t extra_doubles, const void *const *reg,
                                    const size_t *reg_bytes, size_t nreg, muon__split *rp, muon__split *cp,
                                    int g_checked)
{
    muon_status s;
    size_t need, k, wb, gb, sb = 0;
    if ((s = muon__u_check_shape(rows, cols, ldw)) != MUON_OK) return s;
    if ((s = muon__u_check_shape(rows, cols, ldg)) != MUON_OK) return s;
    if (S && (s = muon__u_check_shape(rows, cols, lds)) != MUON_OK) return s;
    if (!muon__step_splits(c, rows, cols, rp, cp)) return MUON_ERR_SIZE;
    need = muon__step_ws_bytes(rows, cols, rp->max, cp->max, extra_doubles, 1);
    if (need == 0 || ws_bytes < need) return MUON_ERR_SIZE;
    wb = muon__u_extent(rows, cols, ldw) * sizeof(float);
    gb = muon__u_extent(rows, cols, ldg) * sizeof(float);
    if (S) sb = muon__u_extent(rows, cols, lds) * sizeof(float);
    if (muon__u_overlap(W, wb, G, gb)) return MUON_ERR_ALIAS;
    if (muon__u_overlap(ws, ws_bytes, W, wb) || muon__u_overlap(ws, ws_bytes, G, gb)) return MUON_ERR_ALIAS;
    if (S && (muon__u_overlap(S, sb, W, wb) || muon__u_overlap(S, sb, G, gb) || muon__u_overlap(S, sb, ws, ws_bytes)))
        return MUON_ERR_ALIAS;
    for (k = 0; k < nreg; k++)
        if (muon__u_overlap(reg[k], reg_bytes[k], W, wb) || muon__u_overlap(reg[k], reg_bytes[k], G, gb) ||
            muon__u_overlap(reg[k], reg_bytes[k], ws, ws_bytes) || (S && muon__u_overlap(reg[k], reg_bytes[k], S, sb)))
            return MUON_ERR_ALIAS;
    /* g_checked: muon_step_layers read G for NaN/Inf before stepping any layer, and nothing a
     * layer writes overlaps another's G (one pass over G saved per layer) */
    if (!g_checked && !muon__u_finite_matrix(G, rows, cols, ldg)) return MUON_ERR_NONFINITE;
    return MUON_OK;
}

/* muon_step_ws's checks of its state and arguments (muon_step_layers' too), in a frame of their
 * own: the state's buffers against the arguments (muon__step_check), NorMuon's rows, the step
 * count, W under the cap; the row and column partitions into rp, cp */
static MUON__NOINLINE muon_status muon__state_check(const muon_state *st, const muon__step_cfg *c, const float *W,
                                                    size_t ldw, const float *G, size_t ldg, const float *S,
                                                    size_t lds, void *ws, size_t ws_bytes, muon__split *rp,
                                                    muon__split *cp, int g_checked)
{
    const void *reg[4];
    size_t reg_bytes[4], rows = st->rows, cols = st->cols, i;
    muon_status s;
    if (c->normuon && !st->row_v) return MUON_ERR_NULL; /* a state from before 0.3 */
    reg[0] = st->momentum, reg_bytes[0] = rows * cols * sizeof(float);
    reg[1] = st->cap_u, reg_bytes[1] = rows * sizeof(double);
    reg[2] = st->cap_v, reg_bytes[2] = cols * sizeof(double);
    reg[3] = st->row_v, reg_bytes[3] = st->row_v ? rows * sizeof(double) : 0;
    s = muon__step_check(rows, cols, W, ldw, G, ldg, S, lds, c, ws, ws_bytes, c->normuon ? rows : 0, reg, reg_bytes, 4,
                         rp, cp, g_checked);
    if (s != MUON_OK) return s;
    if (c->normuon)
        for (i = 0; i < rows; i++)
            if (!muon__u_isfinite(st->row_v[i]) || st->row_v[i] < 0.0) return MUON_ERR_NONFINITE;
    if (!muon__step_count_ok(st->step)) return MUON_ERR_DOMAIN;
    /* the cap reads W (power iteration): NaN/Inf there would enter the stored pair */
    if (!g_checked && c->cap != MUON_CAP_OFF && !muon__u_finite_matrix(W, rows, cols, ldw)) return MUON_ERR_NONFINITE;
    return MUON_OK;
}

/* muon_step_ws before the orthogonalisation: the config and state checks, the row and column
 * partitions (rp, cp), the step's team size, then U (ws, aligned) = the momentum direction.
 * The step's settings (muon__step_cfg) live in this frame and muon__step_end's, never on the
 * Newton-Schulz path's stack. */
static MUON__NOINLINE muon_status muon__step_begin(const muon_state *st, const muon_config *cfg, const float *W,
                                                   size_t ldw, const float *G, size_t ldg, const float *S,
                                                   size_t lds, void *ws, size_t ws_bytes, float *U, muon__split *rp,
                                                   muon__split *cp, int *threads, int checked)
{
    muon__step_cfg c;
    muon_status s;
    if ((s = muon__config_check(cfg)) != MUON_OK) return s; /* first: the splits need it */
    muon__step_cfg_make(cfg, &c);
    if ((s = muon__state_check(st, &c, W, ldw, G, ldg, S, lds, ws, ws_bytes, rp, cp, checked)) != MUON_OK) return s;
    *threads = c.threads;
    return muon__mom_fill(st->momentum, G, ldg, st->rows, st->cols, &c, U);
}

/* muon_step_ws after the orthogonalisation (U holds O): NorMuon, the blocks' scales, the range
 * check, the cap, then the commit of momentum, NorMuon's row statistics (vnew), W and the step
 * output. A frame of its own, beside the Newton-Schulz path's stack. */
static MUON__NOINLINE muon_status muon__step_end(muon_state *st, const muon_config *cfg, float *W, size_t ldw,
                                                 const float *G, size_t ldg, float *U, float *step_out, size_t lds,
                                                 double *vnew, const muon__split *rp, const muon__split *cp)
{
    muon__step_cfg c;
    muon_status s;
    size_t rows = st->rows, cols = st->cols, i;
    double lrwd;
    muon__step_cfg_make(cfg, &c); /* checked by muon__step_begin */
    if (c.normuon) muon__normuon(U, rows, cols, &c, st->row_v, vnew);
    if ((s = muon__blocks_scale(U, cols, &c, rp, cp)) != MUON_OK) return s;
    lrwd = c.lr * c.weight_decay;
    if (!muon__step_fits(W, ldw, U, rows, cols, lrwd, c.cap != MUON_CAP_OFF, c.cautious_wd, c.threads))
        return MUON_ERR_RANGE;

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
    /* commit: momentum, then W <- W - lr lambda W + D (the cap saw D only, never the decay).
     * The decay is formed as w - (lr lambda) w in double, not as w * (float)(1 - lr lambda),
     * which rounds to 1.0f (no decay at all) once lr lambda < 2^-25. */
    muon__mom_commit(st->momentum, G, ldg, rows, cols, &c);
    if (c.normuon) memcpy(st->row_v, vnew, rows * sizeof(double));
    MUON__OMP(omp parallel for schedule(static) MUON__PAR(c.threads, (double)rows * (double)cols))
    for (i = 0; i < rows; i++) {
        float *w = W + i * ldw;
        const float *d = U + i * cols;
        size_t j;
        if (c.cautious_wd)
            for (j = 0; j < cols; j++) w[j] = muon__step_new_w(w[j], d[j], muon__decay_for(lrwd, 1, w[j], d[j]));
        else
            for (j = 0; j < cols; j++) w[j] = muon__step_new_w(w[j], d[j], lrwd);
        if (step_out) memcpy(step_out + i * lds, d, cols * sizeof(float)); /* S = D (capped) */
    }
    st->step++;
    return MUON_OK;
}

/* muon_step_ws; checked: the contents of G (and of W under the cap) were found finite by
 * muon_step_layers' checks, which also proved that no layer writes them */
static MUON__ALWAYS_INLINE muon_status muon__step_ws(muon_state *st, const muon_config *cfg, float *W, size_t ldw,
                                                     const float *G, size_t ldg, float *step_out, size_t lds,
                                                     void *ws, size_t ws_bytes, int checked)
{
    muon_status s;
    unsigned char *base;
    float *U;
    double *vnew = MUON__NULL;
    size_t nsoff;
    int threads = 1;
    muon__split rp, cp;
    if (!st || !cfg || !W || !G || !ws) return MUON_ERR_NULL;
    if (!st->momentum || !st->cap_u || !st->cap_v) return MUON_ERR_NULL;
    base = muon__u_align_ptr(ws);
    U = (float *)base;
    s = muon__step_begin(st, cfg, W, ldw, G, ldg, step_out, lds, ws, ws_bytes, U, &rp, &cp, &threads, checked);
    if (s != MUON_OK) return s;
    nsoff = muon__u_round(st->rows * st->cols * sizeof(float));
    if (cfg->normuon) {
        vnew = (double *)(base + nsoff);
        nsoff += muon__u_round(st->rows * sizeof(double));
    }
    s = muon__ns_blocks(U, st->cols, &cfg->ns, threads, &rp, &cp, base + nsoff,
                        ws_bytes - (size_t)(base + nsoff - (unsigned char *)ws));
    if (s != MUON_OK) return s; /* nothing committed yet */
    return muon__step_end(st, cfg, W, ldw, G, ldg, U, step_out, lds, vnew, &rp, &cp);
}

MUONDEF muon_status muon_step_ws(muon_state *st, const muon_config *cfg, float *W, size_t ldw,
                                 const float *G, size_t ldg, float *step_out, size_t lds, void *ws,
                                 size_t ws_bytes)
{
    return muon__step_ws(st, cfg, W, ldw, G, ldg, step_out, lds, ws, ws_bytes, 0);
}

MUONDEF muon_status muon_step(muon_state *st, const muon_config *cfg, float *W, size_t ldw, const float *G,
                              size_t ldg, float *step_out, size_t lds)
{
    if (!st) return MUON_ERR_NULL;
    if (!st->workspace) return MUON_ERR_NULL;
    return muon_step_ws(st, cfg, W, ldw, G, ldg, step_out, lds, st->workspace, st->workspace_bytes);
}

/* ---- many layers in one region ------------------------------------------------------------- */

/* The memory of one layer: regions 0..5 and 7 are written by its step (7, the state's own
 * workspace, only in muon_step_layers), 6 (G) is read only. Returns how many to consider. */
static size_t muon__layer_regions(const muon_layer *L, int own_ws, const void **p, size_t *b)
{
    const muon_state *st = L->state;
    size_t rows = st->rows, cols = st->cols;
    p[0] = L->W, b[0] = muon__u_extent(rows, cols, L->ldw) * sizeof(float);
    p[1] = L->step_out, b[1] = L->step_out ? muon__u_extent(rows, cols, L->lds) * sizeof(float) : 0;
    p[2] = st->momentum, b[2] = rows * cols * sizeof(float);
    p[3] = st->cap_u, b[3] = rows * sizeof(double);
    p[4] = st->cap_v, b[4] = cols * sizeof(double);
    p[5] = st->row_v, b[5] = st->row_v ? rows * sizeof(double) : 0;
    p[6] = L->G, b[6] = muon__u_extent(rows, cols, L->ldg) * sizeof(float);
    p[7] = st->workspace, b[7] = st->workspace_bytes;
    return own_ws ? 8 : 7;
}

/* A checked layer's Newton-Schulz cost: multiply-adds of one iteration over its blocks, up to a
 * constant (rows x cols x the smaller side of its largest block), as muon_assign_owners counts. */
static double muon__layer_cost(const muon_layer *L)
{
    muon__step_cfg c;
    muon__split rp, cp;
    size_t k;
    muon__step_cfg_make(L->cfg, &c);
    if (!muon__step_splits(&c, L->state->rows, L->state->cols, &rp, &cp)) return 0.0; /* checked */
    k = rp.max < cp.max ? rp.max : cp.max;
    return (double)L->state->rows * (double)L->state->cols * (double)k;
}

/* One layer's argument checks (muon_step_ws's, against the workspace it will get) and its
 * one-thread workspace need, rounded to MUON__ALIGN. */
static MUON__NOINLINE muon_status muon__layer_check(const muon_layer *L, void *ws, size_t ws_bytes, size_t *need)
{
    const muon_state *st = L->state;
    muon__step_cfg c;
    muon__split rp, cp;
    muon_status s;
    if (!st || !L->cfg || !L->W || !L->G || !ws) return MUON_ERR_NULL;
    if (!st->momentum || !st->cap_u || !st->cap_v) return MUON_ERR_NULL;
    if ((s = muon__config_check(L->cfg)) != MUON_OK) return s;
    muon__step_cfg_make(L->cfg, &c);
    s = muon__state_check(st, &c, L->W, L->ldw, L->G, L->ldg, L->step_out, L->lds, ws, ws_bytes, &rp, &cp, 0);
    if (s != MUON_OK) return s;
    *need = muon__u_round(muon__step_ws_bytes(st->rows, st->cols, rp.max, cp.max, c.normuon ? st->rows : 0, 1));
    return MUON_OK;
}

/* Checks every layer (against ws, or its state's own workspace when own_ws), then the layers
 * against one another and against ws. Every status is written; returns the lowest-index error,
 * else MUON_OK with the largest one-thread need and the total cost. */
/* a layer's status after its own checks that leaves its buffers' extents known */
#define MUON__LAYER_SHAPED(s) ((s) == MUON_OK || (s) == MUON_ERR_NONFINITE)
static MUON__NOINLINE muon_status muon__layers_check(muon_layer *layers, size_t count, int own_ws, void *ws,
                                                     size_t ws_bytes, size_t *need, double *total)
{
    const void *pi[8], *pj[8];
    size_t bi[8], bj[8], i, j, a, b, ni, nj, n;
    *need = 0;
    *total = 0.0;
    for (i = 0; i < count; i++) {
        muon_layer *L = layers + i;
        void *w = ws;
        size_t wb = ws_bytes;
        if (own_ws && L->state) w = L->state->workspace, wb = L->state->workspace_bytes;
        n = 0;
        L->status = muon__layer_check(L, w, wb, &n);
        if (L->status == MUON_OK && n > *need) *need = n;
    }
    /* the layers against one another and against ws, also for a layer whose own checks found
     * only NaN/Inf in its data (MUON_ERR_NONFINITE comes after all of its shape and overlap
     * checks, so its regions are known): an overlap is MUON_ERR_ALIAS whatever the contents
     * (issue 40: overlaps before contents) */
    for (i = 0; i < count; i++) {
        if (!MUON__LAYER_SHAPED(layers[i].status)) continue;
        ni = muon__layer_regions(layers + i, own_ws, pi, bi);
        for (a = 0; !own_ws && a < ni; a++)
            if (muon__u_overlap(pi[a], bi[a], ws, ws_bytes)) layers[i].status = MUON_ERR_ALIAS;
        for (j = i + 1; j < count; j++) {
            if (!MUON__LAYER_SHAPED(layers[j].status)) continue;
            nj = muon__layer_regions(layers + j, own_ws, pj, bj);
            for (a = 0; a < ni; a++)
                for (b = 0; b < nj; b++)
                    if ((a != 6 || b != 6) && muon__u_overlap(pi[a], bi[a], pj[b], bj[b]))
                        layers[i].status = layers[j].status = MUON_ERR_ALIAS;
        }
    }
    for (i = 0; i < count; i++)
        if (layers[i].status != MUON_OK) return layers[i].status;
    for (i = 0; i < count; i++) *total += muon__layer_cost(layers + i);
    return MUON_OK;
}
#undef MUON__LAYER_SHAPED

/* muon_step_layers' region of one matrix per thread and the shared-machine gate: the region has
 * no barrier until its end (each member takes the next matrix when it finishes one), so a member
 * that starts late (descheduled on a busy machine) costs the others only that delay and the wait
 * for the last matrix, not a wait at every product as in the products' regions. A short region
 * (the demo's 14 small matrices, ~2 ms) can still be made several times longer by one late start,
 * so it follows the gate; a long one keeps its team through the gate's one-thread periods: beside
 * two busy loops on 2 cores, the 12M model's update as one region on one thread (the gate closed
 * by the products of the forward and backward, or of earlier calls) took 1.2-1.5x the loop's
 * time, and on its two threads 0.55-0.7x (bench/layers_share). Long: the work per thread, the
 * layers' muon__layer_cost summed over those that share the region, over the lanes, at least
 * MUON_LAYERS_TEAM_MIN (2^27: about 27 ms of Jordan x 5 on one AVX-512 core, several scheduler
 * time slices). */
#ifndef MUON_LAYERS_TEAM_MIN
#define MUON_LAYERS_TEAM_MIN 134217728.0
#endif

/* The team of a muon_step_layers call: threads 0 = the OpenMP default, else at most that */
static int muon__layers_team(int threads)
{
#ifdef _OPENMP
    return threads > 0 ? muon__u_threads_cap(threads) : muon__u_threads();
#else
    (void)threads;
    return 1;
#endif
}

/* A layer runs alone on the whole team when its cost is more than its share of the total */
static int muon__layer_alone(const muon_layer *L, int team, double total)
{
    return team > 1 && muon__layer_cost(L) * (double)team > total;
}

/* The layer after `prev` (count: the first) in the order cost descending, then index ascending,
 * among those that do not run alone; count when none is left. O(count). */
static size_t muon__layers_next(const muon_layer *layers, size_t count, size_t prev, int team, double total)
{
    size_t i, best = count;
    double bc = 0.0, pc = prev < count ? muon__layer_cost(layers + prev) : 0.0;
    for (i = 0; i < count; i++) {
        double ci;
        if (muon__layer_alone(layers + i, team, total)) continue;
        ci = muon__layer_cost(layers + i);
        if (prev < count && !(ci < pc || (ci == pc && i > prev))) continue; /* not after prev */
        if (best == count || ci > bc) best = i, bc = ci;
    }
    return best;
}

/* one layer's step; inside the region (one layer per thread) the step runs on its own thread */
static MUON__ALWAYS_INLINE muon_status muon__layer_run(muon_layer *L, void *ws, size_t ws_bytes)
{
    if (!ws) ws = L->state->workspace, ws_bytes = L->state->workspace_bytes;
    return muon__step_ws(L->state, L->cfg, L->W, L->ldw, L->G, L->ldg, L->step_out, L->lds, ws, ws_bytes, 1);
}

/* ws NULL: every layer in its state's own workspace */
static muon_status muon__layers(muon_layer *layers, size_t count, int threads, void *ws, size_t ws_bytes)
{
    size_t need, i, lanes = 1, prev = count;
    double total;
    int team;
    muon_status s;
    unsigned char *base = MUON__NULL;
    if (!layers) return MUON_ERR_NULL;
    if (count == 0) return MUON_ERR_SIZE;
    if (threads < 0) {
        for (i = 0; i < count; i++) layers[i].status = MUON_ERR_DOMAIN;
        return MUON_ERR_DOMAIN;
    }
    if ((s = muon__layers_check(layers, count, ws == MUON__NULL, ws, ws_bytes, &need, &total)) != MUON_OK) return s;
    team = muon__layers_team(threads);
    /* the costliest layers, alone on the whole team */
    for (i = 0; i < count; i++)
        if (muon__layer_alone(layers + i, team, total)) layers[i].status = muon__layer_run(layers + i, ws, ws_bytes);
    if (ws) { /* one-thread slices of the workspace, one per lane */
        base = muon__u_align_ptr(ws);
        lanes = (ws_bytes - (size_t)(base - (unsigned char *)ws)) / need;
    } else
        lanes = (size_t)team;
    if (lanes > (size_t)team) lanes = (size_t)team;
    if (lanes > count) lanes = count;
#ifdef MUON_USE_CBLAS
    lanes = 1; /* the BLAS threads each product; its calls are not made from a parallel region */
#endif
    if (lanes <= 1) { /* one at a time, each on the whole team, in the same order */
        while ((prev = muon__layers_next(layers, count, prev, team, total)) < count)
            layers[prev].status = muon__layer_run(layers + prev, ws, ws_bytes);
    } else {
        int done = 0, nt = (int)lanes;
        double shared = 0.0;
        /* watched as the products' regions are: a member that starts late (descheduled on a
         * busy machine) makes the others wait at the region's end, and on a small model that
         * wait is most of the call (issue 49: the demo's update 5x slower beside two busy
         * loops); the gate then runs the next short calls on this thread, while a long region
         * keeps its team (MUON_LAYERS_TEAM_MIN above) */
        MUON__GATE_VARS;
        for (i = 0; i < count; i++)
            if (!muon__layer_alone(layers + i, team, total)) shared += muon__layer_cost(layers + i);
        if (shared / (double)lanes < MUON_LAYERS_TEAM_MIN) nt = muon__gate(nt);
        (void)nt; /* without OpenMP */
        MUON__OMP(omp parallel num_threads(nt) MUON__GATE_CLAUSES)
        {
            void *slice = MUON__NULL;
            size_t mine, tid = 0;
            MUON__GATE_IN();
#ifdef _OPENMP
            tid = (size_t)omp_get_thread_num();
#endif
            if (base) slice = base + tid * need;
            for (;;) {
                MUON__OMP(omp critical(muon__layers_pick))
                {
                    mine = done ? count : muon__layers_next(layers, count, prev, team, total);
                    if (mine < count) prev = mine;
                    else done = 1;
                }
                if (mine >= count) break;
                layers[mine].status = muon__layer_run(layers + mine, slice, need);
            }
            MUON__GATE_OUT();
        }
        MUON__GATE_NOTE();
    }
    for (i = 0; i < count; i++)
        if (layers[i].status != MUON_OK) return layers[i].status;
    return MUON_OK;
}

MUONDEF muon_status muon_step_layers(muon_layer *layers, size_t count, int threads)
{
    return muon__layers(layers, count, threads, MUON__NULL, 0);
}

MUONDEF muon_status muon_step_layers_ws(muon_layer *layers, size_t count, int threads, void *ws, size_t ws_bytes)
{
    if (!ws) {
        if (layers)
            for (; count; count--) layers[count - 1].status = MUON_ERR_NULL;
        return MUON_ERR_NULL;
    }
    return muon__layers(layers, count, threads, ws, ws_bytes);
}

MUONDEF size_t muon_step_layers_workspace_size(const muon_layer *layers, size_t count, int threads)
{
    size_t i, need = 0, big = 0, lanes = 0, total_b;
    double total = 0.0;
    int team;
    if (!layers || count == 0 || threads < 0) return 0;
    for (i = 0; i < count; i++) {
        const muon_layer *L = layers + i;
        muon__step_cfg c;
        muon__split rp, cp;
        size_t one, full;
        if (!L->state || !L->cfg || muon__config_check(L->cfg) != MUON_OK) return 0;
        muon__step_cfg_make(L->cfg, &c);
        if (!muon__step_splits(&c, L->state->rows, L->state->cols, &rp, &cp)) return 0;
        one = muon__u_round(muon__step_ws_bytes(L->state->rows, L->state->cols, rp.max, cp.max,
                                                c.normuon ? L->state->rows : 0, 1));
        full = muon_step_workspace_size(L->state->rows, L->state->cols, L->cfg);
        if (!one || !full) return 0;
        if (one > need) need = one;
        if (full > big) big = full;
        total += muon__layer_cost(L);
    }
    team = muon__layers_team(threads);
    for (i = 0; i < count; i++)
        if (!muon__layer_alone(layers + i, team, total)) lanes++;
    if (lanes > (size_t)team) lanes = (size_t)team;
    if (!muon__u_mul(lanes, need, &total_b) || !muon__u_add(total_b, MUON__ALIGN, &total_b)) return 0;
    return total_b > big ? total_b : big;
}

/* ---- data-parallel work assignment -------------------------------------------------------- */

/* Bytes of each part of the assignment workspace (after aligning the base): costs and loads
 * (double), the permutation (size_t), the rank heap (int). 0 on overflow. */
static size_t muon__assign_ws_bytes(size_t count, int nranks)
{
    size_t per_m = sizeof(double) + sizeof(size_t), per_r = sizeof(double) + sizeof(int), a, b, total;
    if (count == 0 || nranks < 1) return 0;
    if (!muon__u_mul(count, per_m, &a) || !muon__u_mul((size_t)nranks, per_r, &b)) return 0;
    total = MUON__ALIGN;
    if (!muon__u_add(total, a, &total) || !muon__u_add(total, b, &total)) return 0;
    return total;
}

MUONDEF size_t muon_assign_owners_workspace_size(size_t count, int nranks)
{
    return muon__assign_ws_bytes(count, nranks);
}

/* matrix i is taken after matrix j: lower cost, or equal cost and higher index */
static int muon__assign_after(const double *cost, size_t i, size_t j)
{
    return cost[i] < cost[j] || (cost[i] == cost[j] && i > j);
}

static void muon__assign_sift(size_t *perm, const double *cost, size_t root, size_t n)
{
    for (;;) {
        size_t child = 2 * root + 1, t;
        if (child >= n) return;
        if (child + 1 < n && muon__assign_after(cost, perm[child + 1], perm[child])) child++;
        if (!muon__assign_after(cost, perm[child], perm[root])) return;
        t = perm[root];
        perm[root] = perm[child];
        perm[child] = t;
        root = child;
    }
}

/* rank r is preferred to rank q: smaller load, or equal load and lower rank */
static int muon__assign_before(const double *load, int r, int q)
{
    return load[r] < load[q] || (load[r] == load[q] && r < q);
}

/* Inputs validated; ws aligned and large enough. */
static void muon__assign_run(const size_t *rows, const size_t *cols, size_t count, int nranks, int *owner,
                             double *load_out, unsigned char *base)
{
    double *cost = (double *)base, *load = cost + count;
    size_t *perm = (size_t *)(load + nranks);
    int *heap = (int *)(perm + count);
    size_t i, n = (size_t)nranks;
    int r;
    for (i = 0; i < count; i++) {
        double m = (double)rows[i], c = (double)cols[i];
        cost[i] = m * c * (m < c ? m : c);
        perm[i] = i;
    }
    /* heapsort: perm ends in the order the matrices are taken (cost down, index up) */
    for (i = count / 2; i-- > 0;) muon__assign_sift(perm, cost, i, count);
    for (i = count; i-- > 1;) {
        size_t t = perm[0];
        perm[0] = perm[i];
        perm[i] = t;
        muon__assign_sift(perm, cost, 0, i);
    }
    /* min-heap of the ranks by (load, rank): all loads 0, so 0..nranks-1 is already a heap */
    for (r = 0; r < nranks; r++) {
        load[r] = 0.0;
        heap[r] = r;
    }
    for (i = 0; i < count; i++) {
        size_t idx = perm[i], pos = 0;
        int top = heap[0];
        owner[idx] = top;
        load[top] += cost[idx];
        for (;;) { /* the root's load only grew: sift it down */
            size_t child = 2 * pos + 1;
            int t;
            if (child >= n) break;
            if (child + 1 < n && muon__assign_before(load, heap[child + 1], heap[child])) child++;
            if (!muon__assign_before(load, heap[child], heap[pos])) break;
            t = heap[pos];
            heap[pos] = heap[child];
            heap[child] = t;
            pos = child;
        }
    }
    if (load_out) memcpy(load_out, load, n * sizeof(double));
}

/* validation shared by both forms (ws may be NULL: the plain form) */
static muon_status muon__assign_check(const size_t *rows, const size_t *cols, size_t count, int nranks,
                                      const int *owner, const double *load, const void *ws, size_t ws_bytes)
{
    size_t i, ob, lb, ib;
    if (!rows || !cols || !owner) return MUON_ERR_NULL;
    if (count == 0 || nranks < 1) return MUON_ERR_SIZE;
    if (muon__assign_ws_bytes(count, nranks) == 0) return MUON_ERR_SIZE;
    ob = count * sizeof(int);   /* fit: the workspace size did not overflow */
    ib = count * sizeof(size_t);
    lb = load ? (size_t)nranks * sizeof(double) : 0;
    if (muon__u_overlap(owner, ob, rows, ib) || muon__u_overlap(owner, ob, cols, ib) ||
        muon__u_overlap(load, lb, rows, ib) || muon__u_overlap(load, lb, cols, ib) ||
        muon__u_overlap(load, lb, owner, ob))
        return MUON_ERR_ALIAS;
    if (ws && (muon__u_overlap(ws, ws_bytes, rows, ib) || muon__u_overlap(ws, ws_bytes, cols, ib) ||
               muon__u_overlap(ws, ws_bytes, owner, ob) || muon__u_overlap(ws, ws_bytes, load, lb)))
        return MUON_ERR_ALIAS;
    for (i = 0; i < count; i++) /* the shapes' values only after the overlaps (issue 40) */
        if (rows[i] == 0 || cols[i] == 0) return MUON_ERR_SIZE;
    return MUON_OK;
}

MUONDEF muon_status muon_assign_owners_ws(const size_t *rows, const size_t *cols, size_t count, int nranks,
                                          int *owner, double *load, void *ws, size_t ws_bytes)
{
    muon_status s;
    if (!ws) return MUON_ERR_NULL;
    if ((s = muon__assign_check(rows, cols, count, nranks, owner, load, ws, ws_bytes)) != MUON_OK) return s;
    if (ws_bytes < muon__assign_ws_bytes(count, nranks)) return MUON_ERR_SIZE;
    muon__assign_run(rows, cols, count, nranks, owner, load, muon__u_align_ptr(ws));
    return MUON_OK;
}

MUONDEF muon_status muon_assign_owners(const size_t *rows, const size_t *cols, size_t count, int nranks,
                                       int *owner, double *load)
{
    double stack_buf[64]; /* 512 bytes: the call stays small on a firmware thread */
    size_t need;
    void *mem;
    muon_status s;
    if ((s = muon__assign_check(rows, cols, count, nranks, owner, load, MUON__NULL, 0)) != MUON_OK) return s;
    need = muon__assign_ws_bytes(count, nranks);
    if (need <= sizeof stack_buf) {
        muon__assign_run(rows, cols, count, nranks, owner, load, muon__u_align_ptr(stack_buf));
        return MUON_OK;
    }
    mem = MUON_MALLOC(need);
    if (!mem) return MUON_ERR_NOMEM;
    muon__assign_run(rows, cols, count, nranks, owner, load, muon__u_align_ptr(mem));
    MUON_FREE(mem);
    return MUON_OK;
}

/* ---- Muown (SPEC 2.3) ------------------------------------------------------------------- */

MUONDEF muown_config muown_default(void)
{
    muown_config c;
    memset(&c, 0, sizeof c);
    muon__default_into(&c.muon);
    c.magnitude = MUOWN_MAG_ADAM;
    c.mag_lr = 0.02;
    c.mag_beta1 = 0.9;
    c.mag_beta2 = 0.95;
    c.mag_eps = 1e-8;
    return c;
}

MUONDEF size_t muown_step_workspace_size(size_t rows, size_t cols, const muown_config *cfg)
{
    muon__split rp, cp;
    muon__step_cfg c;
    if (!cfg) return muon__step_ws_bytes(rows, cols, rows, cols, rows, 0);
    muon__step_cfg_make(&cfg->muon, &c);
    if (!muon__step_splits(&c, rows, cols, &rp, &cp)) return 0;
    return muon__step_ws_lanes(rows, cols, &c, &rp, &cp, rows);
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
    wb = muon__step_ws_bytes(rows, cols, rows, cols, rows, 0);
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

/* u_i = W_i / g_i as a multiple of W_i: u = us * W_i with us = sign(g_i) / ||W_i|| (sign(0) = +1).
 * SPEC 2.3's u = W/g is signed: once g_i < 0, W_i = g_i v_i/||v_i|| points against v_i and u_i
 * must be v_i/||v_i||, not W_i/||W_i||. Dividing by ||W_i|| rather than |g_i| gives the same
 * vector while ||W_i|| = |g_i| (the invariant) and keeps u exactly unit in floating point.
 * A zero row (g_i reached exactly 0, which erases the direction W_i held) has none: us = 0. */
static double muon__muown_uscale(const float *w, size_t cols, double g)
{
    double wn = 0.0;
    size_t j;
    for (j = 0; j < cols; j++) wn += (double)w[j] * (double)w[j];
    wn = sqrt(wn);
    return wn > 0.0 ? (g < 0.0 ? -1.0 : 1.0) / wn : 0.0;
}

/* one row: grad_g = <G_i, u_i> (returned), grad_v = (g/||v||) (G_i - u_i grad_g) (written to gv
 * if not NULL) and u's scale (see muon__muown_uscale) in *uscale_out. A zero row of W gives
 * u = 0 and grad_g = 0; g_i = 0 (or ||v_i|| = 0) gives grad_v = 0. */
static double muon__muown_row(const float *w, const float *gr, size_t cols, double g, double vnorm,
                              double *uscale_out, float *gv)
{
    double gg = 0.0, us, f;
    size_t j;
    us = muon__muown_uscale(w, cols, g);
    for (j = 0; j < cols; j++) gg += (double)gr[j] * ((double)w[j] * us);
    f = vnorm > 0.0 ? g / vnorm : 0.0;
    if (gv)
        for (j = 0; j < cols; j++) gv[j] = (float)(f * ((double)gr[j] - (double)w[j] * us * gg));
    *uscale_out = us;
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
        double us;
        grad_g[i] = muon__muown_row(W + i * ldw, G + i * ldg, st->cols, st->g[i], st->vnorm[i], &us,
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
        st->g[i] = st->g[i] < 0.0 ? -sqrt(acc) : sqrt(acc); /* keeps v's orientation */
    }
    return MUON_OK;
}

/* What muown_step reads of a checked muown_config beyond the Muon part, defaults filled in. */
typedef struct muon__muown_cfg {
    muown_magnitude_rule magnitude;
    double mag_lr, mag_beta1, mag_beta2, mag_eps;
    int reference_resync;
} muon__muown_cfg;

static void muon__muown_cfg_make(const muown_config *in, muon__muown_cfg *c)
{
    c->magnitude = in->magnitude;
    c->mag_lr = in->mag_lr;
    c->mag_beta1 = in->mag_beta1;
    c->mag_beta2 = in->mag_beta2;
    c->mag_eps = in->mag_eps != 0.0 ? in->mag_eps : 1e-8;
    c->reference_resync = in->reference_resync;
}

/* muown_config_resolve's checks, reading *in only */
static muon_status muon__muown_check(const muown_config *in)
{
    muon_status s;
    if ((s = muon__config_check(&in->muon)) != MUON_OK) return s;
    /* NorMuon and cautious decay are Muon's: Muown's rows are normalised by construction and its
     * decay re-reads the magnitudes; refused rather than ignored */
    if (in->muon.normuon || in->muon.cautious_wd) return MUON_ERR_DOMAIN;
    if (in->magnitude != MUOWN_MAG_ADAM && in->magnitude != MUOWN_MAG_SIGNUM && in->magnitude != MUOWN_MAG_FIXED &&
        in->magnitude != MUOWN_MAG_SGD && in->magnitude != MUOWN_MAG_LION)
        return MUON_ERR_DOMAIN;
    if (!muon__u_isfinite(in->mag_lr) || in->mag_lr < 0.0) return MUON_ERR_DOMAIN;
    if (!muon__u_rate(in->mag_beta1) || !muon__u_rate(in->mag_beta2))
        return MUON_ERR_DOMAIN;
    if (!muon__u_isfinite(in->mag_eps) || in->mag_eps < 0.0) return MUON_ERR_DOMAIN;
    return MUON_OK;
}

MUONDEF muon_status muown_config_resolve(const muown_config *in, muown_config *out)
{
    muon__muown_cfg mc;
    muon_status s;
    if (!in || !out) return MUON_ERR_NULL;
    if ((s = muon__muown_check(in)) != MUON_OK) return s;
    if (out != in) memcpy(out, in, sizeof *out);
    muon__config_fill(&out->muon);
    muon__muown_cfg_make(out, &mc);
    out->mag_eps = mc.mag_eps;
    return MUON_OK;
}

/* The magnitude rule: g's new value from its gradient gi; *m_out, *v_out the rule's moments
 * (unchanged for the rules that do not use them). */
static double muon__muown_mag(const muon__muown_cfg *cfg, double g, double m, double v, double gi, double bc1,
                              double bc2, double *m_out, double *v_out)
{
    *m_out = m;
    *v_out = v;
    switch (cfg->magnitude) {
    case MUOWN_MAG_ADAM:
        *m_out = cfg->mag_beta1 * m + (1.0 - cfg->mag_beta1) * gi;
        *v_out = cfg->mag_beta2 * v + (1.0 - cfg->mag_beta2) * gi * gi;
        return g - cfg->mag_lr * (*m_out / bc1) / (sqrt(*v_out / bc2) + cfg->mag_eps);
    case MUOWN_MAG_SIGNUM:
        *m_out = cfg->mag_beta1 * m + (1.0 - cfg->mag_beta1) * gi;
        return g - cfg->mag_lr * (*m_out > 0.0 ? 1.0 : *m_out < 0.0 ? -1.0 : 0.0);
    case MUOWN_MAG_FIXED: break;
    case MUOWN_MAG_SGD: return g - cfg->mag_lr * gi;
    case MUOWN_MAG_LION: {
        double x = cfg->mag_beta1 * m + (1.0 - cfg->mag_beta1) * gi;
        *m_out = cfg->mag_beta2 * m + (1.0 - cfg->mag_beta2) * gi;
        return g - cfg->mag_lr * (x > 0.0 ? 1.0 : x < 0.0 ? -1.0 : 0.0);
    }
    }
    return g;
}

/* muown pass 1: grad_g (gg), grad_v and its momentum direction (U); the state untouched.
 * RANGE when a SUM momentum passes FLT_MAX (the EMA form cannot). */
static MUON__NOINLINE muon_status muon__muown_pass1(const muown_state *st, const muon__step_cfg *c, const float *W,
                                                    size_t ldw, const float *G, size_t ldg, float *U, double *gg)
{
    size_t rows = st->rows, cols = st->cols, i;
    int bad = 0;
    MUON__OMP(omp parallel for schedule(static) reduction(|:bad) MUON__PAR(c->threads, (double)rows * (double)cols))
    for (i = 0; i < rows; i++) {
        float *u = U + i * cols;
        const float *b = st->momentum + i * cols;
        double us;
        size_t j;
        float nb;
        gg[i] = muon__muown_row(W + i * ldw, G + i * ldg, cols, st->g[i], st->vnorm[i], &us, u);
        bad |= !muon__u_finite_matrix(u, 1, cols, cols) || !muon__u_finite_matrix(b, 1, cols, cols);
        for (j = 0; j < cols; j++) {
            u[j] = muon__mom_dir(b[j], u[j], c->momentum, c->nesterov, c->momentum_form, &nb);
            bad |= !muon__u_isfinitef(nb);
        }
        bad |= !muon__u_finite_matrix(u, 1, cols, cols) || !muon__u_isfinite(gg[i]);
    }
    return bad ? MUON_ERR_RANGE : MUON_OK;
}

/* muown_step_ws before the orthogonalisation, in a frame of its own (beside the Newton-Schulz
 * path's stack): the config, the state's buffers against the arguments, W finite (its rows
 * carry the directions: NaN/Inf there would enter g and ||v||), the count; the partitions, the
 * team size, then pass 1 (U, gg) */
static MUON__NOINLINE muon_status muon__muown_begin(const muown_state *st, const muown_config *cfg, const float *W,
                                                    size_t ldw, const float *G, size_t ldg, const float *S,
                                                    size_t lds, void *ws, size_t ws_bytes, float *U, double *gg,
                                                    muon__split *rp, muon__split *cp, int *threads)
{
    muon__step_cfg c;
    const void *reg[5];
    size_t reg_bytes[5], k, rows = st->rows, cols = st->cols;
    muon_status s;
    if ((s = muon__muown_check(cfg)) != MUON_OK) return s;
    muon__step_cfg_make(&cfg->muon, &c);
    reg[0] = st->momentum;
    reg_bytes[0] = rows * cols * sizeof(float);
    reg[1] = st->g;
    reg[2] = st->vnorm;
    reg[3] = st->mag_m;
    reg[4] = st->mag_v;
    for (k = 1; k < 5; k++) reg_bytes[k] = rows * sizeof(double);
    s = muon__step_check(rows, cols, W, ldw, G, ldg, S, lds, &c, ws, ws_bytes, rows, reg, reg_bytes, 5, rp, cp, 0);
    if (s != MUON_OK) return s;
    if (!muon__u_finite_matrix(W, rows, cols, ldw)) return MUON_ERR_NONFINITE;
    if (!muon__step_count_ok(st->step)) return MUON_ERR_DOMAIN;
    *threads = c.threads;
    return muon__muown_pass1(st, &c, W, ldw, G, ldg, U, gg);
}

/* muown_step_ws after the orthogonalisation (U holds O): the blocks' scales, then every row's new
 * magnitude and v_new checked to fit a float, then the commit row by row (rows are
 * independent). A frame of its own, beside the Newton-Schulz path's stack. */
static MUON__NOINLINE muon_status muon__muown_end(muown_state *st, const muown_config *cfg, float *W, size_t ldw,
                                                  const float *G, size_t ldg, float *U, const double *gg,
                                                  float *step_out, size_t lds, const muon__split *rp,
                                                  const muon__split *cp)
{
    muon__step_cfg c;
    muon__muown_cfg rc;
    muon_status s;
    size_t rows = st->rows, cols = st->cols, i;
    double lrwd, bc1 = 1.0, bc2 = 1.0;
    long long t = st->step + 1;
    int bad = 0;
    muon__step_cfg_make(&cfg->muon, &c); /* checked by muon__muown_begin */
    muon__muown_cfg_make(cfg, &rc);      /* from here on the filled-in fields, never cfg's own */
    if ((s = muon__blocks_scale(U, cols, &c, rp, cp)) != MUON_OK) return s;
    lrwd = c.lr * c.weight_decay;
    if (rc.magnitude == MUOWN_MAG_ADAM) {
        bc1 = -expm1((double)t * log(rc.mag_beta1));
        bc2 = -expm1((double)t * log(rc.mag_beta2));
    }
    /* nothing is committed unless every row's new magnitude and v_new fit a float */
    MUON__OMP(omp parallel for schedule(static) reduction(|:bad) MUON__PAR(c.threads, (double)rows * (double)cols))
    for (i = 0; i < rows; i++) {
        const float *w = W + i * ldw, *d = U + i * cols;
        double us = muon__muown_uscale(w, cols, st->g[i]), mm, vv, wmax = 0.0;
        double gn = muon__muown_mag(&rc, st->g[i], st->mag_m[i], st->mag_v[i], gg[i], bc1, bc2, &mm, &vv);
        size_t j;
        for (j = 0; j < cols; j++) {
            double vn = st->vnorm[i] * ((double)w[j] * us) + (double)d[j];
            bad |= !muon__u_fits_float(vn);
            wmax = fabs((double)w[j]) > wmax ? fabs((double)w[j]) : wmax;
        }
        /* |W_new| <= |g_new| (1 + 2^-23) + lr lambda |W| (v_new / ||v_new|| has unit rows) */
        bad |= !muon__u_fits_float(fabs(gn) * (1.0 + 1.0 / 8388608.0) + lrwd * wmax);
    }
    if (bad) return MUON_ERR_RANGE;
    /* commit row by row (rows are independent) */
    MUON__OMP(omp parallel for schedule(static) MUON__PAR(c.threads, (double)rows * (double)cols))
    for (i = 0; i < rows; i++) {
        float *w = W + i * ldw, *d = U + i * cols, *b = st->momentum + i * cols;
        float *so = step_out ? step_out + i * lds : MUON__NULL;
        const float *gr = G + i * ldg;
        double us, f, gi = gg[i], nv = 0.0, gn = st->g[i], scale;
        size_t j;
        us = muon__muown_uscale(w, cols, st->g[i]); /* u = W/g (signed), as in pass 1 */
        f = st->vnorm[i] > 0.0 ? st->g[i] / st->vnorm[i] : 0.0;
        for (j = 0; j < cols; j++) {
            float gv = (float)(f * ((double)gr[j] - (double)w[j] * us * gi)), nb;
            double vn;
            (void)muon__mom_dir(b[j], gv, c.momentum, c.nesterov, c.momentum_form, &nb);
            b[j] = nb;
            vn = st->vnorm[i] * ((double)w[j] * us) + (double)d[j]; /* v_new = v - lr*scale*O */
            d[j] = (float)vn;
            nv += vn * vn;
        }
        nv = sqrt(nv);
        gn = muon__muown_mag(&rc, gn, st->mag_m[i], st->mag_v[i], gi, bc1, bc2, &st->mag_m[i], &st->mag_v[i]);
        if (nv > 0.0) {
            scale = gn / nv;
            st->vnorm[i] = nv;
        } else { /* degenerate v_new = 0: keep the old direction u (a zero row has none: it stays 0) */
            scale = gn;
            for (j = 0; j < cols; j++) d[j] = (float)((double)w[j] * us);
            if (us == 0.0) gn = 0.0; /* W_i stays 0, so ||W_i|| = |g_i| keeps holding */
        }
        if (so) /* S = the new row without the decay minus the old: g_new v_new/||v_new|| - W_i */
            for (j = 0; j < cols; j++) so[j] = (float)(scale * (double)d[j] - (double)w[j]);
        if (lrwd != 0.0) {
            double acc = 0.0, dot = 0.0;
            for (j = 0; j < cols; j++) {
                float x = (float)(scale * (double)d[j] - lrwd * (double)w[j]);
                w[j] = x;
                acc += (double)x * (double)x;
                dot += (double)x * (double)d[j];
            }
            /* weight-decay resync: g = +-||W_i||, the sign that keeps u = W/g along v_new (so the
             * momentum, which lives in v's coordinates, stays consistent when g < 0) */
            st->g[i] = dot < 0.0 && !rc.reference_resync ? -sqrt(acc) : sqrt(acc);
        } else {
            for (j = 0; j < cols; j++) w[j] = (float)(scale * (double)d[j]);
            st->g[i] = gn;
        }
    }
    st->step = t;
    return MUON_OK;
}

MUONDEF muon_status muown_step_ws(muown_state *st, const muown_config *cfg, float *W, size_t ldw,
                                  const float *G, size_t ldg, float *step_out, size_t lds, void *ws,
                                  size_t ws_bytes)
{
    muon_status s;
    size_t ub, nsoff;
    unsigned char *base;
    float *U;
    double *gg;
    int threads = 1;
    muon__split rp, cp;
    if (!st || !cfg || !W || !G || !ws) return MUON_ERR_NULL;
    if (!st->g || !st->vnorm || !st->mag_m || !st->mag_v || !st->momentum) return MUON_ERR_NULL;
    base = muon__u_align_ptr(ws);
    ub = muon__u_round(st->rows * st->cols * sizeof(float));
    U = (float *)base;
    gg = (double *)(base + ub);
    s = muon__muown_begin(st, cfg, W, ldw, G, ldg, step_out, lds, ws, ws_bytes, U, gg, &rp, &cp, &threads);
    if (s != MUON_OK) return s;
    nsoff = ub + muon__u_round(st->rows * sizeof(double));
    s = muon__ns_blocks(U, st->cols, &cfg->muon.ns, threads, &rp, &cp, base + nsoff,
                        ws_bytes - (size_t)(base + nsoff - (unsigned char *)ws));
    if (s != MUON_OK) return s;
    return muon__muown_end(st, cfg, W, ldw, G, ldg, U, gg, step_out, lds, &rp, &cp);
}

MUONDEF muon_status muown_step(muown_state *st, const muown_config *cfg, float *W, size_t ldw, const float *G,
                               size_t ldg, float *step_out, size_t lds)
{
    if (!st) return MUON_ERR_NULL;
    if (!st->workspace) return MUON_ERR_NULL;
    return muown_step_ws(st, cfg, W, ldw, G, ldg, step_out, lds, st->workspace, st->workspace_bytes);
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

MUONDEF muon_status muon_adamw_config_resolve(const muon_adamw_config *in, muon_adamw_config *out)
{
    muon_adamw_config r;
    if (!in || !out) return MUON_ERR_NULL;
    r = *in;
    if (!muon__lr_wd_ok(in->lr, in->weight_decay)) return MUON_ERR_DOMAIN;
    if (!muon__u_rate(in->beta1) || !muon__u_rate(in->beta2)) return MUON_ERR_DOMAIN;
    if (!muon__u_isfinite(in->eps) || in->eps < 0.0) return MUON_ERR_DOMAIN;
    if (r.eps == 0.0) r.eps = 1e-8;
    *out = r;
    return MUON_OK;
}

/* 2 size floats (0 on zero or overflowing size) */
static size_t muon__adamw_bytes(size_t size)
{
    size_t b;
    if (size == 0 || !muon__u_mul(size, 2 * sizeof(float), &b)) return 0;
    return b;
}

static void muon__adamw_attach(muon_adamw_state *st, size_t size, float *mem, void *own)
{
    memset(mem, 0, size * 2 * sizeof(float));
    st->size = size;
    st->step = 0;
    st->m = mem;
    st->v = mem + size;
    st->muon__own = own;
}

MUONDEF muon_status muon_adamw_init(muon_adamw_state *st, size_t size)
{
    size_t b = muon__adamw_bytes(size);
    float *mem;
    if (!st) return MUON_ERR_NULL;
    if (!b) return MUON_ERR_SIZE;
    mem = (float *)MUON_MALLOC(b);
    if (!mem) return MUON_ERR_NOMEM;
    muon__adamw_attach(st, size, mem, mem);
    return MUON_OK;
}

MUONDEF size_t muon_adamw_init_workspace_size(size_t size)
{
    size_t b = muon__adamw_bytes(size);
    return b && b <= SIZE_MAX - (sizeof(float) - 1) ? b + (sizeof(float) - 1) : 0;
}

MUONDEF muon_status muon_adamw_init_ws(muon_adamw_state *st, size_t size, void *mem, size_t mem_bytes)
{
    size_t need = muon_adamw_init_workspace_size(size), off;
    if (!st || !mem) return MUON_ERR_NULL;
    if (!need || mem_bytes < need) return MUON_ERR_SIZE;
    off = (sizeof(float) - (size_t)((uintptr_t)mem % sizeof(float))) % sizeof(float);
    muon__adamw_attach(st, size, (float *)(void *)((unsigned char *)mem + off), MUON__NULL);
    return MUON_OK;
}

MUONDEF void muon_adamw_free(muon_adamw_state *st)
{
    if (!st) return;
    if (st->muon__own) MUON_FREE(st->muon__own);
    memset(st, 0, sizeof *st);
}

/* AdamW's element kernel, on the layer: MUON__VD elements at once, every operation in double as
 * the formula reads, none fused, so every ISA (and the scalar form) gives the same bits and an
 * element's result does not depend on which thread or block takes it. m is a convex
 * combination (finite for finite inputs); v = beta2 v + (1 - beta2) g^2 is formed in double and
 * stored no larger than FLT_MAX, so that a gradient of 1e20 or more (whose square overflows
 * float) leaves a finite second moment that decays again (an Inf would freeze the entry: m/Inf
 * = 0 forever). The parameter update uses the unclamped v of this step:
 *     s = -(lr (m / bc1) / (sqrt(v / bc2) + eps)),  p' = (p - (lr wd) p) + s
 * (the negation is taken on lr: -(x / y) and (-x) / y are the same bits in IEEE arithmetic). */
typedef struct muon__adamw_k {
    double b1, omb1, b2, omb2, nlr, lrwd, eps, bc1, bc2;
} muon__adamw_k;
static MUON__ALWAYS_INLINE void muon__adamw_vec(const muon__adamw_k *k, const float *p, const float *g, const float *m0,
                                                const float *v0, float *po, float *mo, float *vo, float *so, double *sd)
{
    const muon__vd P = muon__vd_loadf(p), G = muon__vd_loadf(g);
    const muon__vd M = muon__vd_add(muon__vd_mul(muon__vd_set1(k->b1), muon__vd_loadf(m0)), muon__vd_mul(muon__vd_set1(k->omb1), G));
    const muon__vd V = muon__vd_add(muon__vd_mul(muon__vd_set1(k->b2), muon__vd_loadf(v0)),
                                    muon__vd_mul(muon__vd_mul(muon__vd_set1(k->omb2), G), G));
    const muon__vd S = muon__vd_div(muon__vd_mul(muon__vd_set1(k->nlr), muon__vd_div(M, muon__vd_set1(k->bc1))),
                                    muon__vd_add(muon__vd_sqrt(muon__vd_div(V, muon__vd_set1(k->bc2))), muon__vd_set1(k->eps)));
    muon__vd_storef(mo, M);
    muon__vd_storef(vo, muon__vd_min(V, muon__vd_set1((double)FLT_MAX)));
    muon__vd_storef(po, muon__vd_add(muon__vd_sub(P, muon__vd_mul(muon__vd_set1(k->lrwd), P)), S));
    if (so) muon__vd_storef(so, S);
    if (sd) muon__vd_store(sd, S);
}
/* Block b (elements [b VD, b VD + VD) of n) in place, or, with chk, into scratch only: then
 * *chk |= 1 where a finite parameter would leave the floats or a step would not fit one. The
 * last, partial block goes through the same vector code on padded copies (muon__adamw_pad: a
 * call of its own, so that its buffers stay off the step's frame). */
static MUON__NOINLINE void muon__adamw_pad(const muon__adamw_k *k, size_t b, size_t n, float *param, const float *grad,
                                           float *m, float *v, float *step_out, int *chk);
static MUON__ALWAYS_INLINE void muon__adamw_block(const muon__adamw_k *k, size_t b, size_t n, float *param,
                                                  const float *grad, float *m, float *v, float *step_out, int *chk)
{
    const size_t i = b * MUON__VD;
    if (n - i >= MUON__VD && !chk)
        muon__adamw_vec(k, param + i, grad + i, m + i, v + i, param + i, m + i, v + i, step_out ? step_out + i : MUON__NULL,
                        MUON__NULL);
    else
        muon__adamw_pad(k, b, n, param, grad, m, v, step_out, chk);
}
static MUON__NOINLINE void muon__adamw_pad(const muon__adamw_k *k, size_t b, size_t n, float *param, const float *grad,
                                           float *m, float *v, float *step_out, int *chk)
{
    const size_t i = b * MUON__VD, r = n - i < MUON__VD ? n - i : MUON__VD;
    float bp[MUON__VD], bg[MUON__VD], bm[MUON__VD], bv[MUON__VD], bs[MUON__VD];
    double sd[MUON__VD];
    size_t q;
    for (q = 0; q < MUON__VD; q++) {
        bp[q] = q < r ? param[i + q] : 0.0f;
        bg[q] = q < r ? grad[i + q] : 0.0f;
        bm[q] = q < r ? m[i + q] : 0.0f;
        bv[q] = q < r ? v[i + q] : 0.0f;
    }
    if (chk) {
        float po[MUON__VD];
        muon__adamw_vec(k, bp, bg, bm, bv, po, bm, bv, MUON__NULL, sd);
        for (q = 0; q < r; q++) {
            if (muon__u_isfinitef(bp[q])) *chk |= !muon__u_isfinitef(po[q]);
            *chk |= !muon__u_fits_float(sd[q]); /* the step itself must fit a float */
        }
        return;
    }
    muon__adamw_vec(k, bp, bg, bm, bv, bp, bm, bv, bs, MUON__NULL);
    for (q = 0; q < r; q++) {
        param[i + q] = bp[q];
        m[i + q] = bm[q];
        v[i + q] = bv[q];
        if (step_out) step_out[i + q] = bs[q];
    }
}

/* The largest |bits| of x[0..n) (Inf 0x7F800000, NaN above), and with raw the largest bits
 * with the sign (above 0x80000000: a negative nonzero value): the screen's reductions */
static MUON__ALWAYS_INLINE uint32_t muon__adamw_absmax(const float *x, size_t n, int raw)
{
    muon__vu acc = muon__vu_zero();
    uint32_t lanes[MUON__VW], big = 0;
    size_t j = 0;
    int q;
    if (raw)
        for (; j + MUON__VW <= n; j += MUON__VW) acc = muon__vu_bitsmax(acc, muon__vf_load(x + j));
    else
        for (; j + MUON__VW <= n; j += MUON__VW) acc = muon__vu_absmax(acc, muon__vf_load(x + j));
    muon__vu_store(lanes, acc);
    for (q = 0; q < MUON__VW; q++) big = lanes[q] > big ? lanes[q] : big;
    for (; j < n; j++) {
        uint32_t u;
        memcpy(&u, x + j, sizeof u);
        if (!raw) u &= 0x7FFFFFFFu;
        big = u > big ? u : big;
    }
    return big;
}
static double muon__u_frombits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return (double)f;
}

#define MUON__ADAMW_CHUNK 4096 /* elements per unit of the screen's work */

MUONDEF muon_status muon_adamw_step(muon_adamw_state *st, const muon_adamw_config *cfg, float *param,
                                    const float *grad, float *step_out)
{
    size_t n, nb, nc;
    ptrdiff_t b, c;
    long long t;
    muon_adamw_config rc;
    muon__adamw_k k;
    uint32_t mg = 0, mm = 0, mv = 0, mp = 0, mvs = 0;
    int a, bi;
    if (!st || !cfg || !param || !grad) return MUON_ERR_NULL;
    if (!st->m || !st->v) return MUON_ERR_NULL;
    n = st->size;
    if (muon_adamw_config_resolve(cfg, &rc) != MUON_OK) return MUON_ERR_DOMAIN;
    if (!muon__step_count_ok(st->step)) return MUON_ERR_DOMAIN;
    {   /* every pair of the five buffers but the state's own two moments may not overlap */
        const void *buf[5];
        buf[0] = param;
        buf[1] = grad;
        buf[2] = st->m;
        buf[3] = st->v;
        buf[4] = step_out;
        for (a = 0; a < 5; a++)
            for (bi = a + 1; bi < 5; bi++)
                if (buf[a] && buf[bi] && !(a == 2 && bi == 3) &&
                    muon__u_overlap(buf[a], n * sizeof(float), buf[bi], n * sizeof(float)))
                    return MUON_ERR_ALIAS;
    }
    t = st->step + 1;
    k.b1 = rc.beta1;
    k.omb1 = 1.0 - rc.beta1;
    k.b2 = rc.beta2;
    k.omb2 = 1.0 - rc.beta2;
    k.nlr = -rc.lr;
    k.eps = rc.eps;
    k.bc1 = -expm1((double)t * log(rc.beta1)); /* 1 - beta1^t, exact for beta near 1 */
    k.bc2 = -expm1((double)t * log(rc.beta2));
    k.lrwd = rc.lr * rc.weight_decay; /* p - (lr wd) p in double: (float)(1 - lr wd) would round to 1 */
    nb = (n + MUON__VD - 1) / MUON__VD;
    nc = (n + MUON__ADAMW_CHUNK - 1) / MUON__ADAMW_CHUNK;
    /* the screen, one read-only pass of bit tests: G and the moments finite (NONFINITE), and
     * the largest |g|, |m|, |p|, from which a bound shows that no step and no finite parameter
     * can leave the floats; only where it cannot (a state written by hand, lr near MUON_LR_MAX,
     * a subnormal eps) the exact check runs the arithmetic once more without writing. So on
     * every error nothing is written, and the arithmetic runs once. */
    MUON__OMP(omp parallel if ((double)n >= MUON__PAR_MIN && muon__gate(2) > 1))
    {
        uint32_t lg = 0, lm = 0, lv = 0, lp = 0, ls = 0;
        MUON__OMP(omp for schedule(static))
        for (c = 0; c < (ptrdiff_t)nc; c++) {
            size_t i0 = (size_t)c * MUON__ADAMW_CHUNK, len = n - i0 < MUON__ADAMW_CHUNK ? n - i0 : MUON__ADAMW_CHUNK;
            uint32_t x;
            x = muon__adamw_absmax(grad + i0, len, 0);
            lg = x > lg ? x : lg;
            x = muon__adamw_absmax(st->m + i0, len, 0);
            lm = x > lm ? x : lm;
            x = muon__adamw_absmax(st->v + i0, len, 0);
            lv = x > lv ? x : lv;
            x = muon__adamw_absmax(st->v + i0, len, 1);
            ls = x > ls ? x : ls;
            x = muon__adamw_absmax(param + i0, len, 0);
            lp = x > lp ? x : lp;
        }
        MUON__OMP(omp critical(muon__adamw_screen))
        {
            mg = lg > mg ? lg : mg;
            mm = lm > mm ? lm : mm;
            mv = lv > mv ? lv : mv;
            mp = lp > mp ? lp : mp;
            mvs = ls > mvs ? ls : mvs;
        }
    }
    if (mg >= 0x7F800000u || mm >= 0x7F800000u || mv >= 0x7F800000u) return MUON_ERR_NONFINITE;
    {
        /* |m'| <= max(|m|, |g|) (a convex combination; 1e-12 covers its roundings and those
         * below), sqrt(v' / bc2) + eps >= eps where no v is negative (a state written by hand
         * may hold one: sqrt would give NaN, which the exact check finds), |p - (lr wd) p| <= |p|
         * (0 <= lr wd <= 1) */
        const double slack = 1.0 + 1e-12, gm = muon__u_frombits(mg), m0 = muon__u_frombits(mm);
        const double sb = rc.lr * ((gm > m0 ? gm : m0) * slack / k.bc1) * slack / k.eps * slack;
        const int fits = mp < 0x7F800000u && mvs <= 0x80000000u && muon__u_le(sb, (double)FLT_MAX) &&
                         muon__u_le((muon__u_frombits(mp) + sb) * slack, (double)FLT_MAX);
        if (!fits) {
            int bad = 0;
            MUON__OMP(omp parallel for schedule(static) reduction(|:bad) if ((double)n >= MUON__PAR_MIN && muon__gate(2) > 1))
            for (b = 0; b < (ptrdiff_t)nb; b++) muon__adamw_block(&k, (size_t)b, n, param, grad, st->m, st->v, MUON__NULL, &bad);
            if (bad) return MUON_ERR_RANGE;
        }
    }
    MUON__OMP(omp parallel for schedule(static) if ((double)n >= MUON__PAR_MIN && muon__gate(2) > 1))
    for (b = 0; b < (ptrdiff_t)nb; b++) muon__adamw_block(&k, (size_t)b, n, param, grad, st->m, st->v, step_out, MUON__NULL);
    st->step = t;
    return MUON_OK;
}

MUONDEF muon_status muon_clip_grad_norm(float **grads, const size_t *sizes, size_t count, double max_norm,
                                        double *total_norm_out)
{
    size_t k;
    double ss = 0.0, total;
    if (!grads || !sizes) return MUON_ERR_NULL;
    if (count == 0) return MUON_ERR_SIZE;
    for (k = 0; k < count; k++)
        if (sizes[k] && !grads[k]) return MUON_ERR_NULL;
    if (muon__u_isnan(max_norm) || !(max_norm > 0.0)) return MUON_ERR_DOMAIN;
    for (k = 0; k < count; k++) { /* a tensor listed twice would be scaled twice */
        size_t j;
        if (sizes[k] > (size_t)-1 / sizeof(float)) return MUON_ERR_SIZE;
        for (j = 0; j < k; j++)
            if (muon__u_overlap(grads[k], sizes[k] * sizeof(float), grads[j], sizes[j] * sizeof(float)))
                return MUON_ERR_ALIAS;
    }
    /* each tensor's squares in muon__u_sumsq's eight lanes (the tensor as one row), the tensors
     * in order: one fixed order on every ISA and team, and eight independent additions per step
     * instead of one chain (the chain cost the 12M trainer ~20 ms an update; issue 49) */
    for (k = 0; k < count; k++)
        if (sizes[k]) ss += muon__u_sumsq(grads[k], 1, sizes[k], sizes[k]);
    total = sqrt(ss);
    if (!muon__u_isfinite(total)) return MUON_ERR_NONFINITE;
    if (total > max_norm) {
        double f = max_norm / total;
        for (k = 0; k < count; k++) {
            float *g = grads[k];
            ptrdiff_t n = (ptrdiff_t)sizes[k], j;
            MUON__OMP(omp parallel for schedule(static) if ((double)n >= MUON__PAR_MIN && muon__gate(2) > 1))
            for (j = 0; j < n; j++) g[j] = (float)((double)g[j] * f);
        }
    }
    if (total_norm_out) *total_norm_out = total;
    return MUON_OK;
}

#if defined(__cplusplus) && (defined(__GNUC__) || defined(__clang__))
#pragma GCC diagnostic pop
#endif
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
