/* test.h - the project's minimal test harness (C99 and C++).
 *
 * A test is a function `static void test_x(void)` that makes checks; main() runs
 * each with RUN(test_x) and ends with `return TEST_REPORT();`. A test passes
 * when it made at least one check and none failed: a test that checks nothing
 * is counted as failed, so a skipped branch can never report a pass.
 * The last line printed is "<variant>: N passed, N failed" (counts of tests).
 */
#ifndef TEST_H
#define TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef TEST_VARIANT
#define TEST_VARIANT "default"
#endif

static int t__passed, t__failed, t__checks, t__fails_here;
static const char *t__current = "";

static int t__fail(const char *file, int line, const char *what)
{
    fprintf(stderr, "%s:%d: [%s] %s: FAILED %s\n", file, line, TEST_VARIANT, t__current, what);
    t__fails_here++;
    return 0;
}

/* CHECK(cond): a boolean check. */
#define CHECK(cond) \
    (t__checks++, (cond) ? 1 : t__fail(__FILE__, __LINE__, #cond))

/* CHECK_MSG(cond, fmt, ...): boolean check with a formatted message on failure. */
#define CHECK_MSG(cond, ...)                                                     \
    do {                                                                         \
        t__checks++;                                                             \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: [%s] %s: FAILED %s: ", __FILE__, __LINE__,  \
                    TEST_VARIANT, t__current, #cond);                           \
            fprintf(stderr, __VA_ARGS__);                                        \
            fprintf(stderr, "\n");                                               \
            t__fails_here++;                                                     \
        }                                                                        \
    } while (0)

/* NaN / finite from the bits: these hold in the -Ofast variant (-ffast-math lets the compiler
 * assume no NaN/Inf and fold x != x, isnan, isfinite and fabsf(x) <= FLT_MAX away). A float
 * argument converts to double exactly (NaN stays NaN, Inf stays Inf). */
static inline int t_isnan(double x)
{
    unsigned long long b;
    memcpy(&b, &x, sizeof b);
    return (b & 0x7FFFFFFFFFFFFFFFULL) > 0x7FF0000000000000ULL;
}
static inline int t_finite(double x)
{
    unsigned long long b;
    memcpy(&b, &x, sizeof b);
    return (b & 0x7FF0000000000000ULL) != 0x7FF0000000000000ULL;
}

/* |got - want| <= abs_tol + rel_tol * |want|, and both finite (NaN never passes). */
static int t__near(double got, double want, double abs_tol, double rel_tol)
{
    double d;
    if (t_isnan(got) || t_isnan(want)) return 0;
    if (got == want) return 1; /* also equal infinities */
    d = fabs(got - want);
    return d <= abs_tol + rel_tol * fabs(want);
}

#define CHECK_NEAR(got, want, abs_tol, rel_tol)                                  \
    CHECK_MSG(t__near((double)(got), (double)(want), (abs_tol), (rel_tol)),      \
              "got %.17g want %.17g (abs %.3g rel %.3g)", (double)(got),        \
              (double)(want), (double)(abs_tol), (double)(rel_tol))

#define RUN(fn)                                                                  \
    do {                                                                         \
        int t__c0 = t__checks;                                                   \
        t__current = #fn;                                                        \
        t__fails_here = 0;                                                       \
        fn();                                                                    \
        if (t__checks == t__c0) {                                                \
            fprintf(stderr, "[%s] %s: FAILED (made no checks)\n", TEST_VARIANT, #fn); \
            t__failed++;                                                         \
        } else if (t__fails_here) {                                              \
            t__failed++;                                                         \
        } else {                                                                 \
            t__passed++;                                                         \
        }                                                                        \
    } while (0)

#define TEST_REPORT()                                                            \
    (printf("%s: %d passed, %d failed\n", TEST_VARIANT, t__passed, t__failed),  \
     fflush(stdout), t__failed ? 1 : 0)

/* Deterministic RNG for tests (splitmix64 + Box-Muller), no global state in the libraries. */
typedef struct { unsigned long long s; } t_rng;
static unsigned long long t_rng_u64(t_rng *r)
{
    unsigned long long z = (r->s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
static double t_rng_uniform(t_rng *r) /* in (0, 1) */
{
    return ((double)(t_rng_u64(r) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
static double t_rng_normal(t_rng *r)
{
    double u1 = t_rng_uniform(r), u2 = t_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2);
}

/* Matrices with NaN-poisoned padding (the edge suites): entries past `cols` inside a leading
 * dimension hold a quiet NaN with the bits T_POISON_BITS, so that a routine that reads them
 * gives NaN and one that writes them is caught by t_padding_intact. */
#define T_POISON_BITS 0x7fc0deadu
/* n floats from malloc (at least one); out of memory ends the program */
static inline float *t_floats(size_t n)
{
    float *p = (float *)malloc((n ? n : 1) * sizeof(float));
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}
static inline float t_nan_poison(void)
{
    unsigned int bits = T_POISON_BITS;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}
/* rows x cols normal entries times `scale`, leading dimension ld; the padding set to the poison */
static inline void t_fill_matrix(float *A, size_t rows, size_t cols, size_t ld, double scale,
                                 unsigned long long seed)
{
    t_rng r;
    size_t i, j;
    r.s = seed;
    for (i = 0; i < rows; i++)
        for (j = 0; j < ld; j++) A[i * ld + j] = j < cols ? (float)(scale * t_rng_normal(&r)) : t_nan_poison();
}
/* every entry of the rows x cols part finite */
static inline int t_all_finite_matrix(const float *A, size_t rows, size_t cols, size_t ld)
{
    size_t i, j;
    for (i = 0; i < rows; i++)
        for (j = 0; j < cols; j++)
            if (!t_finite(A[i * ld + j])) return 0;
    return 1;
}
/* the padding columns cols..ld-1 still hold the poison pattern */
static inline int t_padding_intact(const float *A, size_t rows, size_t cols, size_t ld)
{
    size_t i, j;
    unsigned int bits;
    for (i = 0; i < rows; i++)
        for (j = cols; j < ld; j++) {
            memcpy(&bits, A + i * ld + j, sizeof bits);
            if (bits != T_POISON_BITS) return 0;
        }
    return 1;
}
/* bitwise equality of the rows x cols parts of two matrices */
static inline int t_same_bits(const float *A, size_t lda, const float *B, size_t ldb, size_t rows, size_t cols)
{
    size_t i;
    for (i = 0; i < rows; i++)
        if (memcmp(A + i * lda, B + i * ldb, cols * sizeof(float)) != 0) return 0;
    return 1;
}

/* The one-thread size of a workspace-size query (the least a _ws call accepts; the sizes count
 * a per-thread tile for the OpenMP thread count at the query): the query under 1 thread. */
#ifdef _OPENMP
#define T_ONE_THREAD(expr, out)                                                  \
    do {                                                                         \
        int t__saved = omp_get_max_threads();                                    \
        omp_set_num_threads(1);                                                  \
        (out) = (expr);                                                          \
        omp_set_num_threads(t__saved);                                           \
    } while (0)
#else
#define T_ONE_THREAD(expr, out) ((out) = (expr))
#endif

/* orthonormal columns: Q (n x k, k <= n, row-major) from a Gaussian by modified Gram-Schmidt,
 * twice */
static inline void t_orthonormal(t_rng *r, size_t n, size_t k, double *Q)
{
    size_t i, j, l, pass;
    for (i = 0; i < n * k; i++) Q[i] = t_rng_normal(r);
    for (j = 0; j < k; j++) {
        double nn = 0.0;
        for (pass = 0; pass < 2; pass++)
            for (l = 0; l < j; l++) {
                double d = 0.0;
                for (i = 0; i < n; i++) d += Q[i * k + j] * Q[i * k + l];
                for (i = 0; i < n; i++) Q[i * k + j] -= d * Q[i * k + l];
            }
        for (i = 0; i < n; i++) nn += Q[i * k + j] * Q[i * k + j];
        nn = sqrt(nn);
        for (i = 0; i < n; i++) Q[i * k + j] /= nn;
    }
}

/* K float64 Newton-Schulz iterations of the schedule tr[0..count-1] (its last triple repeated)
 * on the normalised m x n iterate X (m <= n, in place); Y, A, B: m x n, m x m, m x m scratch */
static inline void t_ref_ns_iter(double *X, size_t m, size_t n, const double (*tr)[3], int count, int K, double *Y,
                                 double *A, double *B)
{
    size_t i, j, p;
    int k;
    for (k = 0; k < K; k++) {
        const double *t = tr[k < count ? k : count - 1];
        for (i = 0; i < m; i++)
            for (j = 0; j < m; j++) {
                double acc = 0.0;
                for (p = 0; p < n; p++) acc += X[i * n + p] * X[j * n + p];
                A[i * m + j] = acc;
            }
        for (i = 0; i < m; i++)
            for (j = 0; j < m; j++) {
                double acc = 0.0;
                for (p = 0; p < m; p++) acc += A[i * m + p] * A[p * m + j];
                B[i * m + j] = t[1] * A[i * m + j] + t[2] * acc;
            }
        for (i = 0; i < m; i++)
            for (j = 0; j < n; j++) {
                double acc = t[0] * X[i * n + j];
                for (p = 0; p < m; p++) acc += B[i * m + p] * X[p * n + j];
                Y[i * n + j] = acc;
            }
        memcpy(X, Y, m * n * sizeof(double));
    }
}

/* float64 reference Newton-Schulz on a rows x cols matrix (row-major, ld cols), full matrix
 * products: X = G / (safety ||G||_F + eps) (zero in, zero out), K steps of triples tr[0..count)
 * (the last repeated), tall matrices on the transpose; out rows x cols */
static inline void t_ref_ns(const double *G, size_t rows, size_t cols, const double (*tr)[3], int count, int K,
                            double safety, double eps, double *out)
{
    int tall = rows > cols;
    size_t m = tall ? cols : rows, n = tall ? rows : cols, i, j;
    double *X = (double *)malloc(m * n * sizeof(double)), *Y = (double *)malloc(m * n * sizeof(double));
    double *A = (double *)malloc(m * m * sizeof(double)), *B = (double *)malloc(m * m * sizeof(double)), nrm = 0.0;
    for (i = 0; i < rows * cols; i++) nrm += G[i] * G[i];
    nrm = sqrt(nrm);
    for (i = 0; i < rows; i++)
        for (j = 0; j < cols; j++) {
            double v = nrm > 0 ? G[i * cols + j] / (safety * nrm + eps) : 0.0;
            if (tall) X[j * n + i] = v; else X[i * n + j] = v;
        }
    t_ref_ns_iter(X, m, n, tr, count, K, Y, A, B);
    for (i = 0; i < rows; i++)
        for (j = 0; j < cols; j++) out[i * cols + j] = tall ? X[j * n + i] : X[i * n + j];
    free(X); free(Y); free(A); free(B);
}

/* rownorm.h's float64 references (SPEC 1.4, 1.5): test_rownorm.c, test_rownorm_float.c */
/* float64 PRN_eps(A) (SPEC 1.4) into out (rows x cols, ld cols) */
static inline void t_ref_prn(const double *A, size_t rows, size_t cols, double eps, double *out)
{
    double *mu = (double *)calloc(cols, sizeof(double)), *nu = (double *)calloc(cols, sizeof(double));
    size_t i, k;
    for (i = 0; i < rows; i++) for (k = 0; k < cols; k++) mu[k] += A[i * cols + k] / (double)rows;
    for (i = 0; i < rows; i++) {
        double n = 0.0;
        for (k = 0; k < cols; k++) { double d = A[i * cols + k] - mu[k]; n += d * d; }
        n = sqrt(n) + eps;
        for (k = 0; k < cols; k++) out[i * cols + k] = n > 0.0 ? (A[i * cols + k] - mu[k]) / n : 0.0;
    }
    for (i = 0; i < rows; i++) for (k = 0; k < cols; k++) nu[k] += out[i * cols + k] / (double)rows;
    for (i = 0; i < rows; i++) for (k = 0; k < cols; k++) out[i * cols + k] -= nu[k];
    free(mu); free(nu);
}

/* float64 golden of SPEC 1.5: nsteps steps from B = 0 on W (double), with flags. */
static inline void t_ref_rownorm(double *W, double *B, const float *const *Gs, size_t nsteps, size_t V, size_t d,
                        double lr, double beta, double eps, double wd, int compat)
{
    double *Bh = (double *)calloc(V * d, sizeof(double)), *S = (double *)calloc(V * d, sizeof(double));
    size_t t, i, k;
    for (t = 1; t <= nsteps; t++) {
        double bc = 1.0 - pow(beta, (double)t);
        for (i = 0; i < V * d; i++) B[i] = beta * B[i] + (1 - beta) * (double)Gs[t - 1][i];
        if (compat) { /* authors' code: normalise B with eps (1 - beta^t), no projections */
            for (i = 0; i < V; i++) {
                double n = 0.0;
                for (k = 0; k < d; k++) n += B[i * d + k] * B[i * d + k];
                n = sqrt(n) + eps * bc;
                for (k = 0; k < d; k++) S[i * d + k] = -lr * B[i * d + k] / n;
            }
        } else {
            for (i = 0; i < V * d; i++) Bh[i] = B[i] / bc;
            t_ref_prn(Bh, V, d, eps, S);
            for (i = 0; i < V * d; i++) S[i] *= -lr;
        }
        for (i = 0; i < V * d; i++) W[i] = (1 - lr * wd) * W[i] + S[i];
    }
    free(Bh); free(S);
}

/* float64 reference row diameter max_{a<b} ||s_a - s_b|| (rows x cols, ld), by brute force */
static inline double t_ref_diameter(const float *S, size_t rows, size_t cols, size_t ld)
{
    double best = 0.0;
    size_t a, b, k;
    for (a = 0; a < rows; a++)
        for (b = a + 1; b < rows; b++) {
            double s = 0.0;
            for (k = 0; k < cols; k++) {
                double d = (double)S[a * ld + k] - (double)S[b * ld + k];
                s += d * d;
            }
            if (s > best) best = s;
        }
    return sqrt(best);
}

#endif /* TEST_H */
