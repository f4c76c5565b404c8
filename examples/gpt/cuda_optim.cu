/* cuda_optim.cu - the optimizer steps and head diagnostics of the CUDA backend (cuda_backend.h):
 * AdamW (muon_adamw_step), Muon (muon_step: momentum, Newton-Schulz as cuBLAS SYRK/SYMM products
 * with the coefficients of the caller's muon_ns_config, shape scale, decoupled decay), RowNorm
 * (rn_rownorm_step, bandwidth-bound passes), the exact row diameter (fp32 Gram tiles + a max
 * reduction, the winner recomputed in double) and the Hilbert RMS (streamed vocabulary tiles).
 * Element math: gpu_math.h. Reductions are fixed-order (no atomics).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.cuh"

#define GS_LOOP(i, n) for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
                           i += (size_t)gridDim.x * blockDim.x)
/* rows per column-sum chunk of the RowNorm step: RN_CHUNK_ROWS, rownorm.h's own (public) constant,
 * so that the device's chunk sums are the CPU step's */

/* ---- clipping helpers --------------------------------------------------------------------- */

__global__ void k_sumsq_blocks(double *part, const float *x, size_t n)
{
    __shared__ double sh[32];
    double s = 0.0;
    GS_LOOP(i, n) s += (double)x[i] * (double)x[i];
    s = gpt_block_sum(s, sh);
    if (threadIdx.x == 0) part[blockIdx.x] = s;
}

__global__ void k_sum_doubles(double *out, const double *part, int n)
{
    __shared__ double sh[32];
    double s = 0.0;
    int i;
    for (i = threadIdx.x; i < n; i += blockDim.x) s += part[i];
    s = gpt_block_sum(s, sh);
    if (threadIdx.x == 0) *out = s;
}

__global__ void k_scale(float *x, size_t n, double f)
{
    GS_LOOP(i, n) x[i] = gm_clip_scale(x[i], f);
}

/* *dst (device) = sum of x[i]^2 over every SM: per-block partials in the context's scratch (no
 * allocation per call), then one block sums them in a fixed order (reproducible run to run) */
static gpt_status launch_sumsq(const gpt_cuda_ctx *c, double *dst, const float *x, size_t n)
{
    unsigned nb = gpt_blocks(n, 256);
    if (nb > GPT_CUDA_SUMSQ_BLOCKS) nb = GPT_CUDA_SUMSQ_BLOCKS;
    k_sumsq_blocks<<<nb, 256, 0, c->stream>>>(c->scratch, x, n);
    k_sum_doubles<<<1, 1024, 0, c->stream>>>(dst, c->scratch, (int)nb);
    return LAUNCH_OK();
}

gpt_status gpt_cuda_sumsq(gpt_backend *be, const float *x, size_t n, double *out)
{
    gpt_cuda_ctx *c = gpt_cuda__ctx(be);
    if (!c || !x || !out) return GPT_ERR_NULL;
    if (launch_sumsq(c, c->scratch + GPT_CUDA_SUMSQ_BLOCKS, x, n) == GPT_OK &&
        CU_OK(cudaMemcpyAsync(c->h_scalar, c->scratch + GPT_CUDA_SUMSQ_BLOCKS, sizeof(double), cudaMemcpyDeviceToHost,
                              c->stream)) == GPT_OK &&
        CU_OK(cudaStreamSynchronize(c->stream)) == GPT_OK) {
        *out = *c->h_scalar;
        return GPT_OK;
    }
    return GPT_ERR_BACKEND;
}

gpt_status gpt_cuda_scale(gpt_backend *be, float *x, size_t n, double f)
{
    gpt_cuda_ctx *c = gpt_cuda__ctx(be);
    if (!c || !x) return GPT_ERR_NULL;
    k_scale<<<gpt_blocks(n, 256), 256, 0, c->stream>>>(x, n, f);
    return LAUNCH_OK();
}

/* ---- AdamW ------------------------------------------------------------------------------- */

__global__ void k_adamw(float *param, const float *grad, float *m, float *v, size_t n, double b1, double b2,
                        double lr, double eps, double lrwd, double bc1, double bc2, float *step_out)
{
    GS_LOOP(i, n) {
        float s = gm_adamw_element(&param[i], &m[i], &v[i], grad[i], b1, b2, lr, eps, lrwd, bc1, bc2);
        if (step_out) step_out[i] = s;
    }
}

gpt_status gpt_cuda_adamw_step(gpt_backend *be, float *param, const float *grad, float *m, float *v, size_t n,
                               const muon_adamw_config *cfg, long long t, float *step_out)
{
    gpt_cuda_ctx *c = gpt_cuda__ctx(be);
    double bc1, bc2;
    if (!c || !param || !grad || !m || !v || !cfg) return GPT_ERR_NULL;
    if (n == 0 || t < 1) return GPT_ERR_SIZE;
    if (!(cfg->lr >= 0.0) || !(cfg->beta1 >= 0.0 && cfg->beta1 < 1.0) || !(cfg->beta2 >= 0.0 && cfg->beta2 < 1.0) ||
        !(cfg->eps > 0.0) || !(cfg->weight_decay >= 0.0))
        return GPT_ERR_CONFIG;
    bc1 = gm_bias_correction(cfg->beta1, (double)t);
    bc2 = gm_bias_correction(cfg->beta2, (double)t);
    k_adamw<<<gpt_blocks(n, 256), 256, 0, c->stream>>>(param, grad, m, v, n, cfg->beta1, cfg->beta2, cfg->lr,
                                                       cfg->eps, cfg->lr * cfg->weight_decay, bc1, bc2, step_out);
    return LAUNCH_OK();
}

/* ---- Muon -------------------------------------------------------------------------------- */

int gpt_cuda_muon_supported(const muon_config *c)
{
    return c && !c->normuon && c->split_cols <= 1 && !c->row_sizes && !c->col_sizes && !c->cautious_wd &&
           c->ns.norm == MUON_NORM_ADD_EPS && c->ns.precision == MUON_NS_FP32;
}

/* U = momentum direction, momentum <- its new value */
__global__ void k_muon_direction(float *U, float *mom, const float *g, size_t n, double beta, int nesterov,
                                 int form)
{
    GS_LOOP(i, n) {
        float nb;
        U[i] = gm_muon_direction(mom[i], g[i], beta, nesterov, form, &nb);
        mom[i] = nb;
    }
}

/* one block: *out = sum of squares of n contiguous floats, in double */
/* X (m x n) = G / (safety ||G|| + eps), transposed when the chunk is tall (r > cols) */
__global__ void k_ns_load(float *X, const float *G, size_t r, size_t cols, const double *sumsq, double safety,
                          double eps, int tall)
{
    double norm = sqrt(*sumsq);
    double inv = norm == 0.0 ? 0.0 : 1.0 / (safety * norm + eps); /* zero in, zero out */
    GS_LOOP(e, r * cols) X[gm_ns_index(e, r, cols, tall)] = (float)((double)G[e] * inv);
}

/* A (m x m, lower triangle filled by SYRK) -> full symmetric */
__global__ void k_symmetrize(float *A, size_t m)
{
    GS_LOOP(e, m * m) {
        size_t i = e % m, j = e / m; /* column-major (i, j) */
        if (i < j) A[i + j * m] = A[j + i * m];
    }
}

/* B (m x m lower) <- B + a I, or b A + a I when from_a */
__global__ void k_ns_poly(float *B, const float *A, size_t m, float a, float b, int from_a)
{
    GS_LOOP(e, m * m) {
        size_t i = e % m, j = e / m;
        float v = from_a ? b * A[e] : B[e];
        B[e] = i == j ? v + a : v;
    }
}

/* D chunk (r x cols) = f X (transposed back when tall) */
__global__ void k_ns_store(float *D, const float *X, size_t r, size_t cols, float f, int tall)
{
    GS_LOOP(e, r * cols) D[e] = f * X[gm_ns_index(e, r, cols, tall)];
}

__global__ void k_decay_add(float *w, const float *d, size_t n, double lrwd)
{
    GS_LOOP(i, n) w[i] = gm_decay_add(w[i], lrwd, d[i]);
}

size_t gpt_cuda_muon_workspace_floats(size_t rows, size_t cols)
{
    size_t mn = rows * cols, m = rows < cols ? rows : cols;
    /* U, X, Y (each at most rows x cols), A and B (m x m), the norm (2 floats = 1 double) */
    return 3 * mn + 2 * m * m + 64;
}

gpt_status gpt_cuda_muon_step(gpt_backend *be, float *w, const float *g, float *momentum, size_t rows, size_t cols,
                              const muon_config *cfg, float *ws, float *step_out)
{
    gpt_cuda_ctx *c = gpt_cuda__ctx(be);
    muon_ns_config ns;
    muon_config rc;
    size_t split, r, ch, total;
    float *U, *X, *Y, *A, *Bm;
    double *sumsq, scale;
    int k;
    const float one = 1.0f, zero = 0.0f;
    if (!c || !w || !g || !momentum || !cfg || !ws) return GPT_ERR_NULL;
    if (rows == 0 || cols == 0) return GPT_ERR_SIZE;
    if (cfg->cap != MUON_CAP_OFF) return GPT_ERR_CONFIG; /* not on the device (see the header) */
    if (!gpt_cuda_muon_supported(cfg)) return GPT_ERR_CONFIG;
    if (muon_config_resolve(cfg, &rc) != MUON_OK) return GPT_ERR_CONFIG; /* muon_step's own rules */
    if (rc.ns.method != MUON_NS_PLAIN) return GPT_ERR_CONFIG; /* Gram NS: not on the device (see the header) */
    cfg = &rc;
    ns = rc.ns;
    split = rc.split_rows;
    if (rows % split != 0) return GPT_ERR_SIZE;
    r = rows / split;
    total = rows * cols;
    sumsq = (double *)ws; /* 64 floats reserved at the front */
    U = ws + 64;
    A = U + 3 * total;
    {
        size_t m0 = r < cols ? r : cols;
        Bm = A + m0 * m0;
    }
    k_muon_direction<<<gpt_blocks(total, 256), 256, 0, c->stream>>>(U, momentum, g, total, cfg->momentum,
                                                                    cfg->nesterov, (int)cfg->momentum_form);
    if (LAUNCH_OK() != GPT_OK) return GPT_ERR_BACKEND;
    scale = gm_muon_shape_scale((int)cfg->scale, cfg->scale_coeff, (double)r, (double)cols);
    for (ch = 0; ch < split; ch++) {
        float *Gc = U + ch * r * cols;
        X = U + total, Y = X + total; /* the result lands in either: reset per chunk */
        int tall = r > cols;
        size_t m = tall ? cols : r, n = tall ? r : cols;
        if (launch_sumsq(c, sumsq, Gc, r * cols) != GPT_OK) return GPT_ERR_BACKEND;
        k_ns_load<<<gpt_blocks(r * cols, 256), 256, 0, c->stream>>>(X, Gc, r, cols, sumsq, ns.safety, ns.eps, tall);
        if (LAUNCH_OK() != GPT_OK) return GPT_ERR_BACKEND;
        for (k = 0; k < ns.steps; k++) {
            const double *tr = gm_ns_triple(&ns, k);
            float a = (float)tr[0], b = (float)tr[1], cc = (float)tr[2], *sw;
            /* X row-major m x n is column-major n x m (Xc): A = X X^T = Xc^T Xc (SYRK, lower) */
            if (BLAS_OK(cublasSsyrk(c->blas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, (int)m, (int)n, &one, X, (int)n,
                                    &zero, A, (int)m)) != GPT_OK)
                return GPT_ERR_BACKEND;
            if (cc != 0.0f) {
                /* B = b A + c A A^T (A symmetric: A A = A A^T, SYRK again on the full A) */
                k_symmetrize<<<gpt_blocks(m * m, 256), 256, 0, c->stream>>>(A, m);
                if (LAUNCH_OK() != GPT_OK ||
                    CU_OK(cudaMemcpyAsync(Bm, A, m * m * sizeof(float), cudaMemcpyDeviceToDevice, c->stream)) !=
                        GPT_OK ||
                    BLAS_OK(cublasSsyrk(c->blas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, (int)m, (int)m, &cc, A, (int)m,
                                        &b, Bm, (int)m)) != GPT_OK)
                    return GPT_ERR_BACKEND;
                k_ns_poly<<<gpt_blocks(m * m, 256), 256, 0, c->stream>>>(Bm, A, m, a, b, 0);
            } else {
                k_ns_poly<<<gpt_blocks(m * m, 256), 256, 0, c->stream>>>(Bm, A, m, a, b, 1);
            }
            if (LAUNCH_OK() != GPT_OK) return GPT_ERR_BACKEND;
            /* X <- (B + a I) X: row-major Y = Bs X is column-major Yc = Xc Bs (SYMM, right side) */
            if (BLAS_OK(cublasSsymm(c->blas, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, (int)n, (int)m, &one, Bm,
                                    (int)m, X, (int)n, &zero, Y, (int)n)) != GPT_OK)
                return GPT_ERR_BACKEND;
            sw = X, X = Y, Y = sw;
        }
        k_ns_store<<<gpt_blocks(r * cols, 256), 256, 0, c->stream>>>(Gc, X, r, cols, (float)(-cfg->lr * scale),
                                                                    tall);
        if (LAUNCH_OK() != GPT_OK) return GPT_ERR_BACKEND;
    }
    k_decay_add<<<gpt_blocks(total, 256), 256, 0, c->stream>>>(w, U, total, cfg->lr * cfg->weight_decay);
    if (LAUNCH_OK() != GPT_OK) return GPT_ERR_BACKEND;
    if (step_out &&
        CU_OK(cudaMemcpyAsync(step_out, U, total * sizeof(float), cudaMemcpyDeviceToDevice, c->stream)) != GPT_OK)
        return GPT_ERR_BACKEND; /* S = D, as muon_step's step_out */
    return GPT_OK;
}

/* ---- RowNorm ----------------------------------------------------------------------------- */

/* grid (column tiles, row chunks): B <- EMA, part[chunk][j] = column sum of the new B */
__global__ void k_rn_ema_colsum(float *B, const float *G, size_t rows, size_t cols, float beta, float omb,
                                double *part)
{
    size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x, r0 = (size_t)blockIdx.y * RN_CHUNK_ROWS;
    size_t r1 = r0 + RN_CHUNK_ROWS < rows ? r0 + RN_CHUNK_ROWS : rows;
    if (j >= cols) return;
    part[blockIdx.y * cols + j] = gm_rn_ema_column(B, G, cols, cols, j, r0, r1, beta, omb);
}

__global__ void k_colsum(const float *X, size_t rows, size_t cols, double *part)
{
    size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x, r0 = (size_t)blockIdx.y * RN_CHUNK_ROWS;
    size_t r1 = r0 + RN_CHUNK_ROWS < rows ? r0 + RN_CHUNK_ROWS : rows;
    if (j >= cols) return;
    part[blockIdx.y * cols + j] = gm_column_sum(X, cols, j, r0, r1);
}

__global__ void k_rn_nu_colsum(const float *B, size_t rows, size_t cols, const double *mu, const double *rowinv,
                               double *part)
{
    size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x, r0 = (size_t)blockIdx.y * RN_CHUNK_ROWS;
    size_t r1 = r0 + RN_CHUNK_ROWS < rows ? r0 + RN_CHUNK_ROWS : rows;
    if (j >= cols) return;
    part[blockIdx.y * cols + j] = gm_rn_nu_column(B, cols, j, r0, r1, mu[j], rowinv);
}

__global__ void k_combine(double *dst, const double *part, size_t n_chunks, size_t cols, size_t rows)
{
    size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j < cols) dst[j] = gm_combine_chunks(part, n_chunks, cols, j, rows);
}

/* one warp per row: rowinv[r] = 1 / (||b_r - mu|| + eps_t) */
__global__ void k_rn_row_inv(const float *B, size_t rows, size_t cols, const double *mu, double eps_t,
                             double *rowinv)
{
    size_t r = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x & 31;
    double ss;
    if (r >= rows) return;
    ss = gpt_warp_sum(gm_centred_sumsq_part(B + r * cols, mu, (int)cols, lane, 32));
    if (lane == 0) rowinv[r] = gm_rn_row_inv(ss, eps_t);
}

__global__ void k_rn_write(const float *B, size_t rows, size_t cols, const double *mu, const double *rowinv,
                           const double *nu, double neglr, double decay, float *W, float *S)
{
    GS_LOOP(e, rows * cols) {
        size_t r = e / cols, j = e % cols;
        float s;
        W[e] = gm_rn_write(B[e], mu[j], rowinv[r], nu[j], neglr, decay, W[e], &s);
        if (S) S[e] = s;
    }
}

/* no projections: one warp per row, EMA + norm + write fused */
__global__ void k_rn_plain(float *B, const float *G, size_t rows, size_t cols, float beta, float omb,
                           double eps_t, double neglr, float c, float *W, float *S)
{
    size_t r = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x & 31;
    double inv;
    if (r >= rows) return;
    inv = gm_rn_row_inv(gpt_warp_sum(gm_rn_plain_ema_part(B + r * cols, G + r * cols, (int)cols, beta, omb, lane,
                                                          32)),
                        eps_t);
    gm_rn_plain_write_part(B + r * cols, neglr, inv, c, W + r * cols, S ? S + r * cols : NULL, (int)cols, lane, 32);
}

size_t gpt_cuda_rownorm_workspace_doubles(size_t rows, size_t cols)
{
    size_t nch = (rows + RN_CHUNK_ROWS - 1) / RN_CHUNK_ROWS;
    return 2 * cols + rows + nch * cols;
}

gpt_status gpt_cuda_rownorm_step(gpt_backend *be, float *w, const float *g, float *B, size_t rows, size_t cols,
                                 const rn_rownorm_config *cfg, unsigned long long t, float *step_out, double *ws)
{
    gpt_cuda_ctx *c = gpt_cuda__ctx(be);
    size_t nch = (rows + RN_CHUNK_ROWS - 1) / RN_CHUNK_ROWS;
    double *mu, *nu, *rowinv, *part, bc, eps_t;
    unsigned flags;
    int cin, cout;
    float beta, omb;
    dim3 cgrid;
    if (!c || !w || !g || !B || !cfg || !ws) return GPT_ERR_NULL;
    if (rows == 0 || cols == 0) return GPT_ERR_SIZE;
    flags = cfg->flags;
    if (!(cfg->lr >= 0.0) || !(cfg->beta >= 0.0 && cfg->beta < 1.0) || !(cfg->eps >= 0.0) ||
        !(cfg->weight_decay >= 0.0) || (flags & ~31u))
        return GPT_ERR_CONFIG;
    cin = !(flags & (RN_NO_CENTER_IN | RN_REFERENCE_COMPAT));
    cout = !(flags & (RN_NO_CENTER_OUT | RN_REFERENCE_COMPAT));
    bc = (flags & RN_NO_BIAS_CORRECTION) || cfg->beta == 0.0 ? 1.0 : gm_bias_correction(cfg->beta, (double)(t + 1));
    eps_t = cfg->eps * bc;
    beta = (float)cfg->beta;
    omb = (float)(1.0 - cfg->beta);
    mu = ws, nu = ws + cols, rowinv = ws + 2 * cols, part = rowinv + rows;
    cgrid = dim3((unsigned)((cols + 127) / 128), (unsigned)nch);
    if (!cin && !cout) {
        k_rn_plain<<<gpt_blocks(rows * 32, 256), 256, 0, c->stream>>>(B, g, rows, cols, beta, omb, eps_t, -cfg->lr,
                                                                      gm_rn_decay_amount(cfg->lr, cfg->weight_decay), w,
                                                                      step_out);
        return LAUNCH_OK();
    }
    /* pass 1: B <- EMA and its column sums (mu = mean of the new B: the inner centre) */
    k_rn_ema_colsum<<<cgrid, 128, 0, c->stream>>>(B, g, rows, cols, beta, omb, part);
    if (LAUNCH_OK() != GPT_OK) return GPT_ERR_BACKEND;
    if (cin) {
        k_combine<<<gpt_blocks(cols, 128), 128, 0, c->stream>>>(mu, part, nch, cols, rows);
        if (LAUNCH_OK() != GPT_OK) return GPT_ERR_BACKEND;
    } else if (CU_OK(cudaMemsetAsync(mu, 0, cols * sizeof(double), c->stream)) != GPT_OK) {
        return GPT_ERR_BACKEND;
    }
    /* pass 2: centred row norms; pass 3: the outer mean (without the outer P: nu = 0) */
    k_rn_row_inv<<<gpt_blocks(rows * 32, 256), 256, 0, c->stream>>>(B, rows, cols, mu, eps_t, rowinv);
    if (LAUNCH_OK() != GPT_OK) return GPT_ERR_BACKEND;
    if (cout) {
        k_rn_nu_colsum<<<cgrid, 128, 0, c->stream>>>(B, rows, cols, mu, rowinv, part);
        k_combine<<<gpt_blocks(cols, 128), 128, 0, c->stream>>>(nu, part, nch, cols, rows);
        if (LAUNCH_OK() != GPT_OK) return GPT_ERR_BACKEND;
    } else if (CU_OK(cudaMemsetAsync(nu, 0, cols * sizeof(double), c->stream)) != GPT_OK) {
        return GPT_ERR_BACKEND;
    }
    /* pass 4: the write of W (and S) */
    k_rn_write<<<gpt_blocks(rows * cols, 256), 256, 0, c->stream>>>(B, rows, cols, mu, rowinv, nu, -cfg->lr,
                                                                    1.0 - cfg->lr * cfg->weight_decay, w, step_out);
    return LAUNCH_OK();
}

/* ---- exact row diameter ------------------------------------------------------------------- */

/* C = S - mu (float), norms2[r] = ||C_r||^2 in double (one warp per row) */
__global__ void k_centre_rows(float *C, double *norms2, const float *S, size_t rows, size_t cols, const double *mu)
{
    size_t r = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x & 31;
    size_t k;
    if (r >= rows) return;
    for (k = lane; k < cols; k += 32) C[r * cols + k] = (float)((double)S[r * cols + k] - mu[k]);
    __syncwarp();
    {
        double ss = gpt_warp_sum(gm_sumsq_part(C + r * cols, (int)cols, lane, 32));
        if (lane == 0) norms2[r] = ss;
    }
}

typedef struct pair_best {
    double d2;
    long long i, j;
} pair_best;

/* Gram block Gm (p rows i0.. x q cols j0.., ld q): per block, the largest Gram-form distance over
 * j > i (ties: the first in row-major order within the block) */
__global__ void k_pair_max(pair_best *out, const float *Gm, size_t p, size_t q, size_t i0, size_t j0,
                           const double *norms2)
{
    __shared__ pair_best sh[256];
    pair_best best = {-1.0, -1, -1};
    size_t e;
    int s;
    for (e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < p * q; e += (size_t)gridDim.x * blockDim.x) {
        size_t i = i0 + e / q, j = j0 + e % q;
        if (j > i) {
            double d2 = gm_gram_dist2(norms2[i], norms2[j], (double)Gm[e]);
            if (d2 > best.d2) best.d2 = d2, best.i = (long long)i, best.j = (long long)j;
        }
    }
    sh[threadIdx.x] = best;
    __syncthreads();
    for (s = 128; s >= 1; s /= 2) {
        if ((int)threadIdx.x < s) {
            pair_best o = sh[threadIdx.x + s];
            pair_best me = sh[threadIdx.x];
            if (o.d2 > me.d2 || (o.d2 == me.d2 && o.d2 >= 0.0 && (o.i < me.i || (o.i == me.i && o.j < me.j))))
                sh[threadIdx.x] = o;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = sh[0];
}

/* entries of a Gram block whose Gram-form distance reaches thr: appended to (ci, cj) (order of
 * arrival is free: the caller's choice among them does not depend on it) */
__global__ void k_pair_collect(long long *ci, long long *cj, unsigned long long *count, unsigned long long cap,
                               const float *Gm, size_t p, size_t q, size_t i0, size_t j0, const double *norms2,
                               double thr)
{
    GS_LOOP(e, p * q) {
        size_t i = i0 + e / q, j = j0 + e % q;
        if (j > i && gm_gram_dist2(norms2[i], norms2[j], (double)Gm[e]) >= thr) {
            unsigned long long k = atomicAdd(count, 1ull);
            if (k < cap) ci[k] = (long long)i, cj[k] = (long long)j;
        }
    }
}

/* one warp per candidate: the exact squared distance of rows i and j of S, in double */
__global__ void k_pair_exact(double *d2, const long long *ci, const long long *cj, size_t count, const float *S,
                             size_t cols)
{
    size_t k = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32, l;
    int lane = threadIdx.x & 31;
    double acc = 0.0;
    if (k >= count) return;
    for (l = lane; l < cols; l += 32) {
        double dd = (double)S[(size_t)ci[k] * cols + l] - (double)S[(size_t)cj[k] * cols + l];
        acc += dd * dd;
    }
    acc = gpt_warp_sum(acc);
    if (lane == 0) d2[k] = acc;
}

#define DIAM_MAX_CANDIDATES ((size_t)1 << 20)

/* Two passes over fp32 Gram blocks of the centred rows: the first finds the largest Gram-form
 * distance g*; the second collects every pair within the fp32 error bound of g* (|error| of a
 * Gram-form d^2 <= 2 gamma max_i ||c_i||^2 with gamma = cols 2^-24, counted twice for g*'s own
 * error), whose exact distances are then computed in double from S: the result is the exact
 * maximum, ties to the smallest (i, j), independent of the order the candidates arrive in. */
gpt_status gpt_cuda_row_diameter(gpt_backend *be, const float *S, size_t rows, size_t cols, double *D, size_t *i_out,
                                 size_t *j_out)
{
    gpt_cuda_ctx *c = gpt_cuda__ctx(be);
    size_t nch, panel, i0, k, n_cand = 0;
    const unsigned blocks = 1024;
    float *C = NULL, *Gm = NULL;
    double *mu = NULL, *part = NULL, *norms2 = NULL, *h_norms = NULL, *d_d2 = NULL, *h_d2 = NULL, max_n2 = 0.0, thr;
    long long *d_ci = NULL, *h_ci = NULL;
    unsigned long long *d_count = NULL, h_count = 0;
    pair_best *d_best = NULL, h_best[1024], best = {-1.0, -1, -1};
    gpt_status st = GPT_ERR_BACKEND;
    int pass;
    if (!c || !S || !D) return GPT_ERR_NULL;
    if (rows == 0 || cols == 0) return GPT_ERR_SIZE;
    if (rows == 1) {
        *D = 0.0;
        if (i_out) *i_out = 0;
        if (j_out) *j_out = 0;
        return GPT_OK;
    }
    nch = (rows + RN_CHUNK_ROWS - 1) / RN_CHUNK_ROWS;
    panel = ((size_t)1 << 28) / rows; /* rows of one Gram block of at most 2^28 floats (1 GiB) */
    if (panel < 1) panel = 1;
    if (panel > rows) panel = rows;
    h_norms = (double *)malloc(rows * sizeof(double));
    if (!h_norms) return GPT_ERR_NOMEM;
    if (CU_OK(cudaMalloc((void **)&C, rows * cols * sizeof(float))) != GPT_OK ||
        CU_OK(cudaMalloc((void **)&Gm, panel * rows * sizeof(float))) != GPT_OK ||
        CU_OK(cudaMalloc((void **)&mu, cols * sizeof(double))) != GPT_OK ||
        CU_OK(cudaMalloc((void **)&part, nch * cols * sizeof(double))) != GPT_OK ||
        CU_OK(cudaMalloc((void **)&norms2, rows * sizeof(double))) != GPT_OK ||
        CU_OK(cudaMalloc((void **)&d_best, blocks * sizeof(pair_best))) != GPT_OK ||
        CU_OK(cudaMalloc((void **)&d_ci, 2 * DIAM_MAX_CANDIDATES * sizeof(long long))) != GPT_OK ||
        CU_OK(cudaMalloc((void **)&d_d2, DIAM_MAX_CANDIDATES * sizeof(double))) != GPT_OK ||
        CU_OK(cudaMalloc((void **)&d_count, sizeof(unsigned long long))) != GPT_OK)
        goto out;
    /* centre in double (the Gram form would cancel on a large common component) */
    k_colsum<<<dim3((unsigned)((cols + 127) / 128), (unsigned)nch), 128, 0, c->stream>>>(S, rows, cols, part);
    k_combine<<<gpt_blocks(cols, 128), 128, 0, c->stream>>>(mu, part, nch, cols, rows);
    k_centre_rows<<<gpt_blocks(rows * 32, 256), 256, 0, c->stream>>>(C, norms2, S, rows, cols, mu);
    if (LAUNCH_OK() != GPT_OK || CU_OK(cudaMemsetAsync(d_count, 0, sizeof h_count, c->stream)) != GPT_OK ||
        CU_OK(cudaMemcpyAsync(h_norms, norms2, rows * sizeof(double), cudaMemcpyDeviceToHost, c->stream)) != GPT_OK ||
        CU_OK(cudaStreamSynchronize(c->stream)) != GPT_OK)
        goto out;
    for (k = 0; k < rows; k++) max_n2 = h_norms[k] > max_n2 ? h_norms[k] : max_n2;
    thr = 0.0;
    for (pass = 0; pass < 2; pass++) {
        for (i0 = 0; i0 < rows; i0 += panel) {
            size_t p = rows - i0 < panel ? rows - i0 : panel, q = rows - i0; /* columns j >= i0 */
            if (gpt_cuda__gemm(c, 1, 0, 1, (int)p, (int)q, (int)cols, 1.0f, C + i0 * cols, (int)cols, 0, C + i0 * cols,
                               (int)cols, 0, 0.0f, Gm, (int)q, 0, 1) != GPT_OK)
                goto out;
            if (pass == 0) {
                k_pair_max<<<blocks, 256, 0, c->stream>>>(d_best, Gm, p, q, i0, i0, norms2);
                if (LAUNCH_OK() != GPT_OK ||
                    CU_OK(cudaMemcpyAsync(h_best, d_best, blocks * sizeof(pair_best), cudaMemcpyDeviceToHost,
                                          c->stream)) != GPT_OK ||
                    CU_OK(cudaStreamSynchronize(c->stream)) != GPT_OK)
                    goto out;
                for (k = 0; k < blocks; k++)
                    if (h_best[k].d2 > best.d2) best = h_best[k];
            } else {
                k_pair_collect<<<blocks, 256, 0, c->stream>>>(d_ci, d_ci + DIAM_MAX_CANDIDATES, d_count,
                                                              DIAM_MAX_CANDIDATES, Gm, p, q, i0, i0, norms2, thr);
                if (LAUNCH_OK() != GPT_OK) goto out;
            }
        }
        if (pass == 0) {
            double gamma = (double)cols * ldexp(1.0, -24);
            if (best.i < 0) goto out;
            thr = best.d2 - 4.0 * gamma * max_n2 * 1.01;
        }
    }
    if (CU_OK(cudaMemcpyAsync(&h_count, d_count, sizeof h_count, cudaMemcpyDeviceToHost, c->stream)) != GPT_OK ||
        CU_OK(cudaStreamSynchronize(c->stream)) != GPT_OK)
        goto out;
    n_cand = h_count < DIAM_MAX_CANDIDATES ? (size_t)h_count : DIAM_MAX_CANDIDATES;
    if (h_count > DIAM_MAX_CANDIDATES)
        fprintf(stderr, "gpt_cuda_row_diameter: %llu candidate pairs, %zu verified: D may be short by the fp32 "
                        "Gram error\n", h_count, n_cand);
    if (n_cand == 0) goto out; /* cannot happen: the first pass's winner qualifies */
    k_pair_exact<<<gpt_blocks(n_cand * 32, 256), 256, 0, c->stream>>>(d_d2, d_ci, d_ci + DIAM_MAX_CANDIDATES, n_cand,
                                                                      S, cols);
    h_ci = (long long *)malloc(2 * n_cand * sizeof(long long));
    h_d2 = (double *)malloc(n_cand * sizeof(double));
    if (!h_ci || !h_d2) {
        st = GPT_ERR_NOMEM;
        goto out;
    }
    if (LAUNCH_OK() != GPT_OK ||
        CU_OK(cudaMemcpyAsync(h_ci, d_ci, n_cand * sizeof(long long), cudaMemcpyDeviceToHost, c->stream)) != GPT_OK ||
        CU_OK(cudaMemcpyAsync(h_ci + n_cand, d_ci + DIAM_MAX_CANDIDATES, n_cand * sizeof(long long),
                              cudaMemcpyDeviceToHost, c->stream)) != GPT_OK ||
        CU_OK(cudaMemcpyAsync(h_d2, d_d2, n_cand * sizeof(double), cudaMemcpyDeviceToHost, c->stream)) != GPT_OK ||
        CU_OK(cudaStreamSynchronize(c->stream)) != GPT_OK)
        goto out;
    best.d2 = -1.0, best.i = best.j = -1;
    for (k = 0; k < n_cand; k++) {
        long long ki = h_ci[k], kj = h_ci[n_cand + k];
        if (h_d2[k] > best.d2 || (h_d2[k] == best.d2 && (ki < best.i || (ki == best.i && kj < best.j))))
            best.d2 = h_d2[k], best.i = ki, best.j = kj;
    }
    *D = sqrt(best.d2);
    if (i_out) *i_out = (size_t)best.i;
    if (j_out) *j_out = (size_t)best.j;
    st = GPT_OK;
out:
    free(h_norms);
    free(h_ci);
    free(h_d2);
    cudaFree(C);
    cudaFree(Gm);
    cudaFree(mu);
    cudaFree(part);
    cudaFree(norms2);
    cudaFree(d_best);
    cudaFree(d_ci);
    cudaFree(d_d2);
    cudaFree(d_count);
    return st;
}

/* ---- Hilbert RMS -------------------------------------------------------------------------- */

/* one warp per token: running (max, min) over a tile of L (tokens x q, ld q) */
__global__ void k_token_range(const float *L, size_t tokens, size_t q, float *tmax, float *tmin)
{
    size_t tkn = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x & 31;
    float mx, mn;
    if (tkn >= tokens) return;
    mx = tmax[tkn], mn = tmin[tkn];
    gm_range_part(L + tkn * q, (int)q, lane, 32, &mx, &mn);
    mx = gpt_warp_max(mx);
    mn = -gpt_warp_max(-mn);
    if (lane == 0) tmax[tkn] = mx, tmin[tkn] = mn;
}

__global__ void k_fill(float *x, size_t n, float v)
{
    GS_LOOP(i, n) x[i] = v;
}

gpt_status gpt_cuda_hilbert_rms(gpt_backend *be, const float *S, size_t rows, size_t cols, const float *H,
                                size_t n_tokens, double *rms)
{
    gpt_cuda_ctx *c = gpt_cuda__ctx(be);
    size_t tile, v0, k, nch;
    float *L = NULL, *tmax = NULL, *tmin = NULL, *h = NULL, *C = NULL;
    double acc = 0.0, *mu = NULL, *part = NULL, *norms2 = NULL;
    gpt_status st = GPT_ERR_BACKEND;
    if (!c || !S || !H || !rms) return GPT_ERR_NULL;
    if (rows == 0 || cols == 0 || n_tokens == 0) return GPT_ERR_SIZE;
    tile = ((size_t)1 << 26) / n_tokens; /* 256 MiB of logits per tile */
    tile = tile < 1 ? 1 : tile > rows ? rows : tile;
    if (CU_OK(cudaMalloc((void **)&L, n_tokens * tile * sizeof(float))) != GPT_OK ||
        CU_OK(cudaMalloc((void **)&tmax, n_tokens * sizeof(float))) != GPT_OK ||
        CU_OK(cudaMalloc((void **)&tmin, n_tokens * sizeof(float))) != GPT_OK)
        goto out;
    /* centre the rows of S in double first: osc(S h) ignores a common row, and without it a large
     * common component would swamp the float products */
    nch = (rows + RN_CHUNK_ROWS - 1) / RN_CHUNK_ROWS;
    if (CU_OK(cudaMalloc((void **)&C, rows * cols * sizeof(float))) != GPT_OK ||
        CU_OK(cudaMalloc((void **)&mu, cols * sizeof(double))) != GPT_OK ||
        CU_OK(cudaMalloc((void **)&part, nch * cols * sizeof(double))) != GPT_OK ||
        CU_OK(cudaMalloc((void **)&norms2, rows * sizeof(double))) != GPT_OK)
        goto out;
    k_colsum<<<dim3((unsigned)((cols + 127) / 128), (unsigned)nch), 128, 0, c->stream>>>(S, rows, cols, part);
    k_combine<<<gpt_blocks(cols, 128), 128, 0, c->stream>>>(mu, part, nch, cols, rows);
    k_centre_rows<<<gpt_blocks(rows * 32, 256), 256, 0, c->stream>>>(C, norms2, S, rows, cols, mu);
    if (LAUNCH_OK() != GPT_OK) goto out;
    S = C;
    k_fill<<<gpt_blocks(n_tokens, 256), 256, 0, c->stream>>>(tmax, n_tokens, -INFINITY);
    k_fill<<<gpt_blocks(n_tokens, 256), 256, 0, c->stream>>>(tmin, n_tokens, INFINITY);
    if (LAUNCH_OK() != GPT_OK) goto out;
    for (v0 = 0; v0 < rows; v0 += tile) {
        size_t q = rows - v0 < tile ? rows - v0 : tile;
        /* L (tokens x q) = H S_tile^T, fp32 */
        if (gpt_cuda__gemm(c, 1, 0, 1, (int)n_tokens, (int)q, (int)cols, 1.0f, H, (int)cols, 0, S + v0 * cols,
                           (int)cols, 0, 0.0f, L, (int)q, 0, 1) != GPT_OK)
            goto out;
        k_token_range<<<gpt_blocks(n_tokens * 32, 256), 256, 0, c->stream>>>(L, n_tokens, q, tmax, tmin);
        if (LAUNCH_OK() != GPT_OK) goto out;
    }
    h = (float *)malloc(2 * n_tokens * sizeof(float));
    if (!h) {
        st = GPT_ERR_NOMEM;
        goto out;
    }
    if (CU_OK(cudaMemcpyAsync(h, tmax, n_tokens * sizeof(float), cudaMemcpyDeviceToHost, c->stream)) != GPT_OK ||
        CU_OK(cudaMemcpyAsync(h + n_tokens, tmin, n_tokens * sizeof(float), cudaMemcpyDeviceToHost, c->stream)) !=
            GPT_OK ||
        CU_OK(cudaStreamSynchronize(c->stream)) != GPT_OK)
        goto out;
    for (k = 0; k < n_tokens; k++) {
        double dlt = (double)h[k] - (double)h[n_tokens + k];
        acc += dlt * dlt;
    }
    *rms = sqrt(acc / (double)n_tokens);
    st = GPT_OK;
out:
    free(h);
    cudaFree(C);
    cudaFree(mu);
    cudaFree(part);
    cudaFree(norms2);
    cudaFree(L);
    cudaFree(tmax);
    cudaFree(tmin);
    return st;
}
