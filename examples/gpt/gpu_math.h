/* gpu_math.h - the per-element and per-row math of the CUDA backend, written once as
 * host/device inline functions so that the CPU test (tests/test_gpu_math.c, plain C99) runs the
 * very code the kernels run and holds it to the CPU backend's layers (cpu_layers.h) and to the
 * headers' routines (muon.h, rownorm.h) on identical inputs.
 *
 * Compiled by nvcc (GPU_HD = __host__ __device__) and by any C99 / C++ compiler (GPU_HD empty).
 *
 * Row functions take (lane, lanes): lane `lane` of `lanes` cooperating threads handles the
 * elements k = lane, lane + lanes, ... of a row. A kernel calls them with lane = threadIdx.x % 32
 * and lanes = 32 and combines the partial sums with gm_lane_sum's butterfly (shuffles on the
 * device); the CPU test runs the 32 lanes one after the other and combines the partials in the
 * same butterfly order (gm_butterfly_sum), so it exercises the kernels' indexing, strides and
 * leading dimensions, not a rewrite of them.
 *
 * Precision policy (the CPU backend's): sums of squares and dot products in double, element
 * results rounded to float once; exp in float (expf), logs and the RoPE angles in double.
 * The optimizer element updates copy the arithmetic of muon_adamw_step, muon.h's momentum rule
 * and rn_rownorm_step's row sweeps operation by operation; NS coefficients are read from a
 * muon_ns_config resolved by muon.h's own muon_config_resolve / muon_ns_resolve and read through
 * gm_ns_triple, never from a table here.
 */
#ifndef GPT_GPU_MATH_H
#define GPT_GPU_MATH_H

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "muon.h"

#ifdef __CUDACC__
#define GPU_HD __host__ __device__
#else
#define GPU_HD
#endif
#define GM_FN static inline GPU_HD

#define GM_RMSNORM_EPS 1e-6   /* = GPT_RMSNORM_EPS of cpu_layers.h (the test checks) */
#define GM_ROPE_BASE 10000.0  /* = GPT_ROPE_BASE */
#define GM_LANES 32           /* a warp */

/* ---- reductions ------------------------------------------------------------------------- */

/* The butterfly that a warp's xor-shuffle reduction performs, on the host: after it every lane
 * holds the same sum; lane 0's value is returned. v holds `lanes` (a power of two) partials and
 * is overwritten. */
static inline double gm_butterfly_sum(double *v, int lanes)
{
    double tmp[GM_LANES];
    int off, l;
    for (off = lanes / 2; off >= 1; off /= 2) {
        for (l = 0; l < lanes; l++) tmp[l] = v[l] + v[l ^ off];
        for (l = 0; l < lanes; l++) v[l] = tmp[l];
    }
    return v[0];
}

/* sum_k x_k^2 over this lane's elements, in double */
GM_FN double gm_sumsq_part(const float *x, int n, int lane, int lanes)
{
    double s = 0.0;
    int k;
    for (k = lane; k < n; k += lanes) s += (double)x[k] * (double)x[k];
    return s;
}

/* sum_k a_k b_k over this lane's elements, in double */
GM_FN double gm_dot_part(const float *a, const float *b, int n, int lane, int lanes)
{
    double s = 0.0;
    int k;
    for (k = lane; k < n; k += lanes) s += (double)a[k] * (double)b[k];
    return s;
}

/* max over this lane's elements of x[0..n) (n >= 1; lanes past n return -INFINITY) */
GM_FN float gm_max_part(const float *x, int n, int lane, int lanes)
{
    float m = -INFINITY;
    int k;
    for (k = lane; k < n; k += lanes) m = x[k] > m ? x[k] : m;
    return m;
}

/* ---- row-major GEMMs on column-major cuBLAS ----------------------------------------------- */

/* The column-major view of a row-major matrix is its transpose, so the row-major product
 * C (m x n, ldc) = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T: cuBLAS gets B as its
 * first operand and A as its second, the transpose flags unchanged, the sizes (n, m, k), and for
 * batched calls the strides swapped with the operands. gpt_cuda__gemm passes exactly these. */
typedef struct gm_cublas_gemm {
    int trans_first, trans_second; /* op flags of cuBLAS's A and B (1: transpose) */
    int m, n, k;                   /* cuBLAS's sizes */
    int ld_first, ld_second, ldc;
    long long stride_first, stride_second, stride_c;
    int first_is_b;                /* always 1: cuBLAS's A is the row-major B */
} gm_cublas_gemm;

static inline gm_cublas_gemm gm_rowmajor_gemm(int trans_a, int trans_b, int m, int n, int k, int lda,
                                              long long stride_a, int ldb, long long stride_b, int ldc,
                                              long long stride_c)
{
    gm_cublas_gemm g;
    g.trans_first = trans_b, g.trans_second = trans_a;
    g.m = n, g.n = m, g.k = k;
    g.ld_first = ldb, g.ld_second = lda, g.ldc = ldc;
    g.stride_first = stride_b, g.stride_second = stride_a, g.stride_c = stride_c;
    g.first_is_b = 1;
    return g;
}

/* ---- RMSNorm (cpu_layers.h gpt_rmsnorm_*) ------------------------------------------------ */

/* r = 1 / sqrt(mean(x^2) + eps) from the sum of squares of a group of dim elements */
GM_FN float gm_rmsnorm_rstd(double sumsq, int dim)
{
    return (float)(1.0 / sqrt(sumsq / (double)dim + GM_RMSNORM_EPS));
}

/* y = x r over this lane's elements (y may equal x) */
GM_FN void gm_scale_part(float *y, const float *x, float r, int n, int lane, int lanes)
{
    int k;
    for (k = lane; k < n; k += lanes) y[k] = x[k] * r;
}

/* mean(dy y) from the dot product */
GM_FN float gm_rmsnorm_mean_dyy(double dot, int dim) { return (float)(dot / (double)dim); }

/* dx = r (dy - y mean_dyy) (or dx += that) over this lane's elements; dx may equal dy when
 * !accumulate */
GM_FN void gm_rmsnorm_backward_part(float *dx, const float *dy, const float *y, float r,
                                    float mean_dyy, int n, int accumulate, int lane, int lanes)
{
    int k;
    if (accumulate)
        for (k = lane; k < n; k += lanes) dx[k] += r * (dy[k] - y[k] * mean_dyy);
    else
        for (k = lane; k < n; k += lanes) dx[k] = r * (dy[k] - y[k] * mean_dyy);
}

/* ---- RoPE (gpt_rope_tables, gpt_rope) ---------------------------------------------------- */

/* angle of position pos, pair i, in double */
GM_FN double gm_rope_angle(int pos, int i, int head_dim)
{
    return (double)pos * pow(GM_ROPE_BASE, -2.0 * (double)i / (double)head_dim);
}

/* rotates (x0, x1) by the table angle (inverse: by minus it) */
GM_FN void gm_rope_pair(float x0, float x1, float c, float s, int inverse, float *o0, float *o1)
{
    float si = (inverse ? -1.0f : 1.0f) * s;
    *o0 = x0 * c - x1 * si;
    *o1 = x0 * si + x1 * c;
}

/* ---- SwiGLU (gpt_swiglu_*) --------------------------------------------------------------- */

GM_FN float gm_swiglu_forward(float gate, float up) { return gate / (1.0f + expf(-gate)) * up; }

GM_FN void gm_swiglu_backward(float gate, float up, float dh, float *dgate, float *dup)
{
    float sig = 1.0f / (1.0f + expf(-gate)), silu = gate * sig;
    *dgate = dh * up * sig * (1.0f + gate * (1.0f - sig)); /* d silu / dg = sig (1 + g (1 - sig)) */
    *dup = dh * silu;
}

/* ---- softmax, attention softmax, cross-entropy ------------------------------------------ */

/* p = expf(p - mx) over this lane's elements of p[0..n); returns their sum in double */
GM_FN double gm_exp_part(float *p, int n, float mx, int lane, int lanes)
{
    double s = 0.0;
    int k;
    for (k = lane; k < n; k += lanes) {
        p[k] = expf(p[k] - mx);
        s += p[k];
    }
    return s;
}

/* 1 / sum, rounded to float as the CPU softmaxes do */
GM_FN float gm_inv_sum(double sum) { return (float)(1.0 / sum); }

/* causal softmax row i of a t-wide block (scores already scaled): columns j > i set to 0 */
GM_FN void gm_zero_tail_part(float *p, int from, int n, int lane, int lanes)
{
    int k;
    for (k = from + lane; k < n; k += lanes) p[k] = 0.0f;
}

/* softmax backward element: dS = P (dP - sum_k P_k dP_k) */
GM_FN float gm_softmax_backward(float p, float dp, float dot) { return p * (dp - dot); }

/* cross-entropy of one row from its max, exp-sum and target logit */
GM_FN float gm_ce_loss(double sum, float mx, float target_logit)
{
    return (float)(log(sum) + mx - target_logit);
}

/* dlogit = dloss (p - [target]) */
GM_FN float gm_ce_grad(float p, int is_target, float dloss)
{
    return is_target ? dloss * (p - 1.0f) : dloss * p;
}

/* ---- AdamW element (muon_adamw_step) ---------------------------------------------------- */

/* 1 - beta^t as -expm1(t log beta) (beta = 0 gives 1) */
GM_FN double gm_bias_correction(double beta, double t) { return -expm1(t * log(beta)); }

/* One element of muon_adamw_step: m, v updated and stored in float, the step
 * s = -lr m_hat / (sqrt(v_hat) + eps) in double from the unrounded moments, the decoupled decay
 * formed as p - (lr wd) p (lrwd = lr * weight_decay, never (float)(1 - lr wd), which rounds to 1
 * for tiny lr wd); bc1, bc2 from gm_bias_correction. Returns s rounded once (muon_adamw_step's
 * step_out). */
GM_FN float gm_adamw_element(float *param, float *m, float *v, float grad, double b1, double b2,
                             double lr, double eps, double lrwd, double bc1, double bc2)
{
    double g = (double)grad, p = (double)*param;
    double mm = b1 * (double)*m + (1.0 - b1) * g;
    double vv = b2 * (double)*v + (1.0 - b2) * g * g;
    double s = -(lr * (mm / bc1) / (sqrt(vv / bc2) + eps));
    *m = (float)mm;
    *v = (float)vv;
    *param = (float)((p - lrwd * p) + s);
    return (float)s;
}

/* muon_clip_grad_norm's scaling of one gradient entry by f = max_norm / total */
GM_FN float gm_clip_scale(float g, double f) { return (float)((double)g * f); }

/* ---- Muon (muon_step) -------------------------------------------------------------------- */

/* the update direction u from the old momentum b and gradient g; *bnew receives the new
 * momentum (form 0: EMA, 1: sum; muon_momentum_form) */
GM_FN float gm_muon_direction(float b, float g, double beta, int nesterov, int form, float *bnew)
{
    double gb = (double)g, nb;
    if (form == 0) {
        nb = beta * (double)b + (1.0 - beta) * gb;
        *bnew = (float)nb;
        return nesterov ? (float)((1.0 - beta) * gb + beta * (double)*bnew) : *bnew;
    }
    nb = beta * (double)b + gb;
    *bnew = (float)nb;
    return nesterov ? (float)(gb + beta * (double)*bnew) : *bnew;
}

/* muon_step's commit: W <- W - (lr lambda) W + d in double (lrwd = lr lambda; d = -lr scale O) */
GM_FN float gm_decay_add(float w, double lrwd, float d)
{
    return lrwd != 0.0 ? (float)(((double)w - lrwd * (double)w) + (double)d) : w + d;
}

/* the shape scale of muon_scale_mode for the r x c matrix NS saw */
static inline double gm_muon_shape_scale(int mode, double coeff, double r, double c)
{
    switch (mode) {
    case MUON_SCALE_ORIGINAL: return sqrt(r > c ? r / c : 1.0);
    case MUON_SCALE_MATCH_ADAMW: return coeff * sqrt(r > c ? r : c); /* coeff resolved (muon_config_resolve) */
    case MUON_SCALE_SPECTRAL: return sqrt(r / c);
    default: return 1.0;
    }
}

/* NS works on the wide orientation: element e of an r x cols chunk (row-major) sits at this
 * index of X (m x n, m = min(r, cols)): itself, or transposed when the chunk is tall (r > cols).
 * The load (G -> X) and the store (X -> D) both use it. */
GM_FN size_t gm_ns_index(size_t e, size_t r, size_t cols, int tall)
{
    return tall ? (e % cols) * r + e / cols : e;
}

/* the (a, b, c) triple of step k of a schedule resolved by muon_ns_resolve */
static inline const double *gm_ns_triple(const muon_ns_config *c, int k)
{
    if (c->count <= 0) return c->coeffs[0]; /* unresolved: never used by a valid step */
    if (k < c->count) return c->coeffs[k];
    if (c->mode == MUON_NS_CYCLE) return c->coeffs[k % c->count];
    return c->coeffs[c->count - 1];
}

/* ---- RowNorm (rn_rownorm_step's sweeps) -------------------------------------------------- */

/* b <- beta b + omb g in float */
GM_FN float gm_rn_ema(float b, float g, float beta, float omb) { return beta * b + omb * g; }

/* 1 / (||b - mu|| + eps_t) from the centred sum of squares; a zero row gives 0 whatever eps_t
 * (rownorm.h: no 1/eps overflow for a tiny eps, no 0/0 for eps 0) */
GM_FN double gm_rn_row_inv(double sumsq, double eps_t)
{
    return sumsq > 0.0 ? 1.0 / (sqrt(sumsq) + eps_t) : 0.0;
}

/* centred, normalised element (b - mu) inv: the outer-mean term */
GM_FN double gm_rn_normed(float b, double mu, double inv) { return ((double)b - mu) * inv; }

/* s = -lr ((b - mu) inv - nu); w <- w decay + s; *s_out = s (double, rounded once) */
GM_FN float gm_rn_write(float b, double mu, double inv, double nu, double neglr, double decay,
                        float w, float *s_out)
{
    double s = neglr * (((double)b - mu) * inv - nu);
    *s_out = (float)s;
    return (float)((double)w * decay + s);
}

/* no projections: s = alpha b (float); w <- w + fl(c w + s) with c = float(-lr wd) (rownorm.h's
 * decay: the amount as its own float, so a tiny lr wd still decays, by the right amount) */
GM_FN float gm_rn_write_plain(float b, float alpha, float c, float w, float *s_out)
{
    float s = alpha * b;
    *s_out = s;
    return w + fmaf(c, w, s);
}

/* the decay amount c of gm_rn_write_plain: float((1 - lr wd) - 1), as rownorm.h computes it */
static inline float gm_rn_decay_amount(double lr, double wd) { return (float)((1.0 - lr * wd) - 1.0); }

/* Column-chunk forms (a thread per column j walks rows [r0, r1) of a chunk; chunks are combined
 * in order by gm_combine_chunks): the EMA update with the column sum of the new B, and the
 * outer-mean sum of the centred, normalised rows. */
GM_FN double gm_rn_ema_column(float *B, const float *G, size_t ldg, size_t cols, size_t j, size_t r0,
                              size_t r1, float beta, float omb)
{
    double acc = 0.0;
    size_t r;
    for (r = r0; r < r1; r++) {
        float v = gm_rn_ema(B[r * cols + j], G[r * ldg + j], beta, omb);
        B[r * cols + j] = v;
        acc += (double)v;
    }
    return acc;
}

GM_FN double gm_rn_nu_column(const float *B, size_t cols, size_t j, size_t r0, size_t r1, double mu_j,
                             const double *rowinv)
{
    double acc = 0.0;
    size_t r;
    for (r = r0; r < r1; r++) acc += gm_rn_normed(B[r * cols + j], mu_j, rowinv[r]);
    return acc;
}

/* column j's sum of a chunk of rows (ld) in double */
GM_FN double gm_column_sum(const float *X, size_t ld, size_t j, size_t r0, size_t r1)
{
    double acc = 0.0;
    size_t r;
    for (r = r0; r < r1; r++) acc += (double)X[r * ld + j];
    return acc;
}

/* dst[j] = (sum of the n_chunks partials of column j, in chunk order) / rows */
GM_FN double gm_combine_chunks(const double *part, size_t n_chunks, size_t cols, size_t j, size_t rows)
{
    double acc = 0.0;
    size_t c;
    for (c = 0; c < n_chunks; c++) acc += part[c * cols + j];
    return acc / (double)rows;
}

/* sum_k (b_k - mu_k)^2 over this lane's elements, in double (mu NULL: 0) */
GM_FN double gm_centred_sumsq_part(const float *b, const double *mu, int n, int lane, int lanes)
{
    double s = 0.0;
    int k;
    for (k = lane; k < n; k += lanes) {
        double d = (double)b[k] - (mu ? mu[k] : 0.0);
        s += d * d;
    }
    return s;
}

/* no projections, pass 1 of a row: b <- EMA, returns this lane's sum of b^2 */
GM_FN double gm_rn_plain_ema_part(float *b, const float *g, int n, float beta, float omb, int lane,
                                  int lanes)
{
    double s = 0.0;
    int k;
    for (k = lane; k < n; k += lanes) {
        float v = gm_rn_ema(b[k], g[k], beta, omb);
        b[k] = v;
        s += (double)v * (double)v;
    }
    return s;
}

/* no projections, pass 2 of a row with inv = 1 / (||b|| + eps_t): s = -lr inv b, w <- w + fl(c w +
 * s), s_out (may be NULL) = s. As rownorm.h: in float with alpha = float(-lr inv) where alpha is
 * representable (0, or 1e-29 <= |alpha| <= 1e29), else s = -lr (b inv) in double, rounded once. */
GM_FN void gm_rn_plain_write_part(const float *b, double neglr, double inv, float c, float *w, float *s_out,
                                  int n, int lane, int lanes)
{
    double a = neglr * inv;
    int k, in_float = a == 0.0 || (fabs(a) >= 1e-29 && fabs(a) <= 1e29);
    for (k = lane; k < n; k += lanes) {
        float s;
        if (in_float) {
            w[k] = gm_rn_write_plain(b[k], (float)a, c, w[k], &s);
        } else {
            s = (float)(neglr * ((double)b[k] * inv));
            w[k] = w[k] + fmaf(c, w[k], s);
        }
        if (s_out) s_out[k] = s;
    }
}

/* ---- head diagnostics (rownorm.h 1.2, 1.3) ----------------------------------------------- */

/* squared distance of two rows from their squared norms and dot product (Gram form; only used
 * to rank pairs: the winner is recomputed directly) */
GM_FN double gm_gram_dist2(double ni, double nj, double dot)
{
    double d2 = ni + nj - 2.0 * dot;
    return d2 > 0.0 ? d2 : 0.0;
}

/* running (max, min) of one token's logits over a vocabulary tile (this lane's part) */
GM_FN void gm_range_part(const float *z, int n, int lane, int lanes, float *mx, float *mn)
{
    int k;
    for (k = lane; k < n; k += lanes) {
        *mx = z[k] > *mx ? z[k] : *mx;
        *mn = z[k] < *mn ? z[k] : *mn;
    }
}

#endif /* GPT_GPU_MATH_H */
