/* cuda.cu - the CUDA backend (cuda_backend.h): the model's forward and backward on one GPU,
 * step for step the CPU backend's (cpu.c), with the same activations kept for the backward and
 * the same parameter layout (model.h). Per-element and per-row math comes from gpu_math.h
 * (held to cpu_layers.h by tests/test_gpu_math.c); matmuls go through cuBLAS (cuda_internal.cuh).
 *
 * Kernel shapes: rows (RMSNorm groups, attention softmax rows) are one warp each, lanes striding
 * over the row as gpu_math.h's *_part functions describe; cross-entropy rows are one block of
 * 256 threads (V is large); elementwise work is a grid-stride loop. No reduction uses atomics,
 * so results are reproducible run to run. The embedding backward accumulates in token order per
 * column (deterministic, like the CPU's).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.cuh"

/* ---- errors, context, GEMM ---------------------------------------------------------------- */

gpt_status gpt_cuda__ok(cudaError_t e, const char *what, const char *file, int line)
{
    if (e == cudaSuccess) return GPT_OK;
    fprintf(stderr, "%s:%d: CUDA error in %s: %s\n", file, line, what, cudaGetErrorString(e));
    /* reported here: clear the last-error slot, or the next launch check (LAUNCH_OK reads it)
     * would report this error again for a launch that succeeded (sticky errors stay anyway) */
    (void)cudaGetLastError();
    return GPT_ERR_BACKEND;
}

gpt_status gpt_cuda__blas_ok(cublasStatus_t s, const char *what, const char *file, int line)
{
    if (s == CUBLAS_STATUS_SUCCESS) return GPT_OK;
    fprintf(stderr, "%s:%d: cuBLAS error %d in %s\n", file, line, (int)s, what);
    return GPT_ERR_BACKEND;
}

gpt_status gpt_cuda__gemm(const gpt_cuda_ctx *c, int precise, int trans_a, int trans_b, int m, int n, int k,
                          float alpha, const float *A, int lda, long long stride_a, const float *B, int ldb,
                          long long stride_b, float beta, float *C, int ldc, long long stride_c, int batch)
{
    gm_cublas_gemm g = gm_rowmajor_gemm(trans_a, trans_b, m, n, k, lda, stride_a, ldb, stride_b, ldc, stride_c);
    cublasOperation_t o1 = g.trans_first ? CUBLAS_OP_T : CUBLAS_OP_N, o2 = g.trans_second ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasComputeType_t ct =
        (precise || c->math == GPT_CUDA_MATH_FP32) ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_FAST_TF32;
    if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return GPT_OK;
    if (batch == 1)
        return BLAS_OK(cublasGemmEx(c->blas, o1, o2, g.m, g.n, g.k, &alpha, B, CUDA_R_32F, g.ld_first, A,
                                    CUDA_R_32F, g.ld_second, &beta, C, CUDA_R_32F, g.ldc, ct, CUBLAS_GEMM_DEFAULT));
    return BLAS_OK(cublasGemmStridedBatchedEx(c->blas, o1, o2, g.m, g.n, g.k, &alpha, B, CUDA_R_32F, g.ld_first,
                                              g.stride_first, A, CUDA_R_32F, g.ld_second, g.stride_second, &beta,
                                              C, CUDA_R_32F, g.ldc, g.stride_c, batch, ct, CUBLAS_GEMM_DEFAULT));
}

int gpt_cuda_available(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError(); /* clear the sticky "no device" error */
        return 0;
    }
    return n > 0;
}

void *gpt_cuda_malloc(size_t bytes)
{
    void *p = NULL;
    if (bytes == 0) bytes = 1;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    if (cudaMemset(p, 0, bytes) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
        cudaFree(p);
        return NULL;
    }
    return p;
}

void gpt_cuda_free(void *p)
{
    if (p) cudaFree(p);
}

gpt_status gpt_cuda_upload(void *dev_dst, const void *host_src, size_t bytes)
{
    if (!dev_dst || !host_src) return GPT_ERR_NULL;
    if (CU_OK(cudaDeviceSynchronize()) != GPT_OK ||
        CU_OK(cudaMemcpy(dev_dst, host_src, bytes, cudaMemcpyHostToDevice)) != GPT_OK)
        return GPT_ERR_BACKEND;
    return CU_OK(cudaDeviceSynchronize()); /* the copy has landed */
}

gpt_status gpt_cuda_download(void *host_dst, const void *dev_src, size_t bytes)
{
    if (!host_dst || !dev_src) return GPT_ERR_NULL;
    /* after every stream's work (the backend's stream is not the legacy default one) */
    if (CU_OK(cudaDeviceSynchronize()) != GPT_OK) return GPT_ERR_BACKEND;
    return CU_OK(cudaMemcpy(host_dst, dev_src, bytes, cudaMemcpyDeviceToHost));
}

gpt_status gpt_cuda_synchronize(void)
{
    return CU_OK(cudaDeviceSynchronize());
}

/* ---- layer kernels ------------------------------------------------------------------------ */

#define GS_LOOP(i, n) for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
                           i += (size_t)gridDim.x * blockDim.x)

__global__ void k_embedding_forward(float *x, const int *tokens, const float *wte, size_t n, size_t d)
{
    GS_LOOP(e, n * d) x[e] = wte[(size_t)tokens[e / d] * d + e % d];
}

/* one thread per column, tokens in order: dwte[tok[i]][j] += dx[i][j] (deterministic; the
 * reference form, used by the GPU suite) */
__global__ void k_embedding_backward(float *dwte, const int *tokens, const float *dx, size_t n, size_t d)
{
    size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x, i;
    if (j >= d) return;
    for (i = 0; i < n; i++) dwte[(size_t)tokens[i] * d + j] += dx[i * d + j];
}

/* the same sums in parallel over distinct tokens: segment s (blockIdx.x) lists the positions of
 * token seg_tok[s] in increasing order (perm[seg_off[s] .. seg_off[s+1])), so each row of dwte
 * receives its additions in token order, exactly as the CPU backend adds them */
__global__ void k_embedding_backward_sorted(float *dwte, const int *perm, const int *seg_off, const int *seg_tok,
                                            const float *dx, size_t d)
{
    size_t j = (size_t)blockIdx.y * blockDim.x + threadIdx.x;
    int s = blockIdx.x, p;
    float *row;
    float acc;
    if (j >= d) return;
    row = dwte + (size_t)seg_tok[s] * d;
    acc = row[j];
    for (p = seg_off[s]; p < seg_off[s + 1]; p++) acc += dx[(size_t)perm[p] * d + j];
    row[j] = acc;
}

/* one warp per (row, group) */
__global__ void k_rmsnorm_forward(float *y, size_t ldy, float *rstd, const float *x, size_t ldx, size_t n,
                                  int n_groups, int gdim)
{
    size_t w = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32, row = w / (size_t)n_groups;
    int lane = threadIdx.x & 31, g = (int)(w % (size_t)n_groups);
    const float *xg;
    float *yg, r;
    if (row >= n) return;
    xg = x + row * ldx + (size_t)g * gdim;
    yg = y + row * ldy + (size_t)g * gdim;
    r = gm_rmsnorm_rstd(gpt_warp_sum(gm_sumsq_part(xg, gdim, lane, 32)), gdim);
    __syncwarp();
    gm_scale_part(yg, xg, r, gdim, lane, 32);
    if (lane == 0) rstd[row * n_groups + g] = r;
}

__global__ void k_rmsnorm_backward(float *dx, size_t lddx, const float *dy, size_t lddy, const float *y,
                                   size_t ldy, const float *rstd, size_t n, int n_groups, int gdim,
                                   int accumulate)
{
    size_t w = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32, row = w / (size_t)n_groups;
    int lane = threadIdx.x & 31, g = (int)(w % (size_t)n_groups);
    const float *dyg, *yg;
    float *dxg, m;
    if (row >= n) return;
    dyg = dy + row * lddy + (size_t)g * gdim;
    yg = y + row * ldy + (size_t)g * gdim;
    dxg = dx + row * lddx + (size_t)g * gdim;
    m = gm_rmsnorm_mean_dyy(gpt_warp_sum(gm_dot_part(dyg, yg, gdim, lane, 32)), gdim);
    __syncwarp(); /* every lane has read dy before any writes dx (in place) */
    gm_rmsnorm_backward_part(dxg, dyg, yg, rstd[row * n_groups + g], m, gdim, accumulate, lane, 32);
}

/* one thread per (row, head, pair) */
__global__ void k_rope(float *out, size_t ldo, const float *in, size_t ldi, size_t n, int t, int n_heads,
                       int head_dim, const float *cos_t, const float *sin_t, int inverse)
{
    int half = head_dim / 2;
    GS_LOOP(e, n * (size_t)n_heads * half) {
        size_t row = e / ((size_t)n_heads * half);
        int rest = (int)(e % ((size_t)n_heads * half)), h = rest / half, i = rest % half;
        size_t pos = row % (size_t)t, col = (size_t)h * head_dim + 2 * (size_t)i;
        float o0, o1;
        gm_rope_pair(in[row * ldi + col], in[row * ldi + col + 1], cos_t[pos * half + i],
                     sin_t[pos * half + i], inverse, &o0, &o1);
        out[row * ldo + col] = o0;
        out[row * ldo + col + 1] = o1;
    }
}

/* one warp per row of the t x t blocks: causal softmax of the (already scaled) scores */
__global__ void k_causal_softmax(float *att, size_t rows, int t)
{
    size_t r = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x & 31, i;
    float *p, mx, inv;
    if (r >= rows) return;
    i = (int)(r % (size_t)t);
    p = att + r * (size_t)t;
    mx = gpt_warp_max(gm_max_part(p, i + 1, lane, 32));
    inv = gm_inv_sum(gpt_warp_sum(gm_exp_part(p, i + 1, mx, lane, 32)));
    gm_scale_part(p, p, inv, i + 1, lane, 32);
    gm_zero_tail_part(p, i + 1, t, lane, 32);
}

/* ds (holding dP) <- P (dP - rowsum(P dP)) on the causal part, 0 above it */
__global__ void k_causal_softmax_backward(float *ds, const float *att, size_t rows, int t)
{
    size_t r = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x & 31, i, k;
    const float *p;
    float *d, dot;
    if (r >= rows) return;
    i = (int)(r % (size_t)t);
    p = att + r * (size_t)t;
    d = ds + r * (size_t)t;
    dot = (float)gpt_warp_sum(gm_dot_part(p, d, i + 1, lane, 32));
    for (k = lane; k <= i; k += 32) d[k] = gm_softmax_backward(p[k], d[k], dot);
    gm_zero_tail_part(d, i + 1, t, lane, 32);
}

__global__ void k_swiglu_forward(float *h, const float *gu, size_t n, size_t f)
{
    GS_LOOP(e, n * f) {
        size_t row = e / f, j = e % f;
        h[e] = gm_swiglu_forward(gu[row * 2 * f + j], gu[row * 2 * f + f + j]);
    }
}

__global__ void k_swiglu_backward(float *dgu, const float *dh, const float *gu, size_t n, size_t f)
{
    GS_LOOP(e, n * f) {
        size_t row = e / f, j = e % f;
        float dg, du;
        gm_swiglu_backward(gu[row * 2 * f + j], gu[row * 2 * f + f + j], dh[e], &dg, &du);
        dgu[row * 2 * f + j] = dg;
        dgu[row * 2 * f + f + j] = du;
    }
}

#define CE_THREADS 256
/* one block per row: logits -> probabilities in place, losses[row] */
__global__ void k_crossentropy_forward(float *losses, float *probs, const int *targets, size_t v)
{
    __shared__ double shd[32];
    __shared__ float shf[32];
    size_t row = blockIdx.x;
    float *p = probs + row * v, target_logit = p[targets[row]], mx, inv;
    double sum;
    mx = gpt_block_max(gm_max_part(p, (int)v, threadIdx.x, blockDim.x), shf);
    sum = gpt_block_sum(gm_exp_part(p, (int)v, mx, threadIdx.x, blockDim.x), shd);
    inv = gm_inv_sum(sum);
    gm_scale_part(p, p, inv, (int)v, threadIdx.x, blockDim.x);
    if (threadIdx.x == 0) losses[row] = gm_ce_loss(sum, mx, target_logit);
}

__global__ void k_crossentropy_backward(float *dlogits, const float *probs, const int *targets, size_t n,
                                        size_t v, float dloss)
{
    GS_LOOP(e, n * v) dlogits[e] = gm_ce_grad(probs[e], (int)(e % v) == targets[e / v], dloss);
}

/* one block: mean of n floats in double, fixed order */
__global__ void k_mean(double *out, const float *x, size_t n)
{
    __shared__ double sh[32];
    double s = 0.0;
    size_t i;
    for (i = threadIdx.x; i < n; i += blockDim.x) s += x[i];
    s = gpt_block_sum(s, sh);
    if (threadIdx.x == 0) *out = s / (double)n;
}

/* ---- the backend -------------------------------------------------------------------------- */

typedef struct cuda_backend {
    gpt_backend base; /* first */
    gpt_cuda_ctx ctx;
    float *h_params, *h_grads; /* host mirrors */
    float *params, *grads;     /* device blocks */
    float *arena;              /* device activations and scratch */
    gpt_acts acts; /* activations and scratch (model.h), pointing into arena */
    double *loss_dev;
    int *inputs, *targets; /* device */
    int *emb_dev;          /* device: perm (n), seg_off (n + 1), seg_tok (n) of the last forward */
    int *emb_host;         /* the same on the host, then the token counts (vocab + 1) */
    int n_segments;
    int n_seq, t;
    int backward_ready;
} cuda_backend;

static cuda_backend *cuda_of(gpt_backend *be)
{
    return be && be->ops == &gpt_cuda_backend ? (cuda_backend *)be : NULL;
}

gpt_cuda_ctx *gpt_cuda__ctx(gpt_backend *be)
{
    cuda_backend *c = cuda_of(be);
    return c ? &c->ctx : NULL;
}

gpt_status gpt_cuda_set_math(gpt_backend *be, gpt_cuda_math math)
{
    cuda_backend *c = cuda_of(be);
    if (!c) return GPT_ERR_NULL;
    if (math != GPT_CUDA_MATH_TF32 && math != GPT_CUDA_MATH_FP32) return GPT_ERR_CONFIG;
    c->ctx.math = math;
    return GPT_OK;
}

float *gpt_cuda_device_params(gpt_backend *be)
{
    cuda_backend *c = cuda_of(be);
    return c ? c->params : NULL;
}

float *gpt_cuda_device_grads(gpt_backend *be)
{
    cuda_backend *c = cuda_of(be);
    return c ? c->grads : NULL;
}

static void cuda_destroy(gpt_backend *be)
{
    cuda_backend *c = cuda_of(be);
    if (!c) return;
    if (c->ctx.blas) cublasDestroy(c->ctx.blas);
    if (c->ctx.stream) cudaStreamDestroy(c->ctx.stream);
    cudaFree(c->ctx.scratch);
    if (c->ctx.h_scalar) cudaFreeHost(c->ctx.h_scalar);
    cudaFree(c->params);
    cudaFree(c->grads);
    cudaFree(c->arena);
    cudaFree(c->loss_dev);
    cudaFree(c->inputs);
    cudaFree(c->targets);
    cudaFree(c->emb_dev);
    free(c->emb_host);
    free(c->h_params);
    free(c->h_grads);
    free(c->acts.layers);
    free(c);
}

static gpt_status cuda_create(const gpt_config *cfg, int max_batch, int max_seq, uint64_t seed,
                              gpt_backend **out)
{
    gpt_config resolved;
    cuda_backend *c;
    size_t arena_floats, n, np, rope;
    const char *math;
    float *h_rope;
    int hd;
    if (!out) return GPT_ERR_NULL;
    *out = NULL;
    if (!cfg) return GPT_ERR_NULL;
    resolved = *cfg;
    if (gpt_config_resolve(&resolved) != GPT_OK) return GPT_ERR_CONFIG;
    cfg = &resolved;
    if (max_batch < 1 || max_seq < 1 || max_seq > cfg->seq_len) return GPT_ERR_SIZE;
    {
        int nd = 0;
        cudaError_t e = cudaGetDeviceCount(&nd);
        if (e != cudaSuccess || nd < 1) { /* say why: no device, or a driver too old for this runtime, ... */
            fprintf(stderr, "cuda backend: no usable CUDA device: %s\n",
                    e != cudaSuccess ? cudaGetErrorString(e) : "the device count is 0");
            (void)cudaGetLastError();
            return GPT_ERR_BACKEND;
        }
    }
    n = (size_t)max_batch * (size_t)max_seq;
    c = (cuda_backend *)calloc(1, sizeof *c);
    if (!c) return GPT_ERR_NOMEM;
    c->base.ops = &gpt_cuda_backend;
    c->base.config = *cfg;
    c->base.layout = gpt_layout_of(cfg);
    c->base.max_batch = max_batch;
    c->base.max_seq = max_seq;
    math = getenv("GPT_CUDA_MATH");
    c->ctx.math = math && strcmp(math, "fp32") == 0 ? GPT_CUDA_MATH_FP32 : GPT_CUDA_MATH_TF32;
    np = c->base.layout.n_params;
    arena_floats = gpt_carve_acts(&c->base.config, max_batch, max_seq, 64, NULL, NULL);
    c->h_params = (float *)malloc(np * sizeof(float));
    c->h_grads = (float *)calloc(np, sizeof(float));
    c->acts.layers = (gpt_layer_acts *)malloc((size_t)cfg->n_layers * sizeof *c->acts.layers);
    c->emb_host = (int *)malloc((3 * n + 1 + (size_t)cfg->vocab_size + 1) * sizeof(int));
    if (!c->h_params || !c->h_grads || !c->acts.layers || !c->emb_host) {
        cuda_destroy(&c->base);
        return GPT_ERR_NOMEM;
    }
    if (CU_OK(cudaStreamCreate(&c->ctx.stream)) != GPT_OK || BLAS_OK(cublasCreate(&c->ctx.blas)) != GPT_OK ||
        BLAS_OK(cublasSetStream(c->ctx.blas, c->ctx.stream)) != GPT_OK) {
        cuda_destroy(&c->base);
        return GPT_ERR_BACKEND;
    }
    if (CU_OK(cudaMalloc((void **)&c->params, np * sizeof(float))) != GPT_OK ||
        CU_OK(cudaMalloc((void **)&c->grads, np * sizeof(float))) != GPT_OK ||
        CU_OK(cudaMalloc((void **)&c->arena, arena_floats * sizeof(float))) != GPT_OK ||
        CU_OK(cudaMalloc((void **)&c->loss_dev, sizeof(double))) != GPT_OK ||
        CU_OK(cudaMalloc((void **)&c->inputs, n * sizeof(int))) != GPT_OK ||
        CU_OK(cudaMalloc((void **)&c->targets, n * sizeof(int))) != GPT_OK ||
        CU_OK(cudaMalloc((void **)&c->emb_dev, (3 * n + 1) * sizeof(int))) != GPT_OK ||
        CU_OK(cudaMalloc((void **)&c->ctx.scratch, (GPT_CUDA_SUMSQ_BLOCKS + 1) * sizeof(double))) != GPT_OK ||
        CU_OK(cudaMallocHost((void **)&c->ctx.h_scalar, sizeof(double))) != GPT_OK) {
        cuda_destroy(&c->base);
        return GPT_ERR_NOMEM;
    }
    gpt_carve_acts(&c->base.config, max_batch, max_seq, 64, c->arena, &c->acts);
    /* RoPE tables: computed on the host exactly as the CPU backend's (gm_rope_angle) */
    hd = cfg->d_model / cfg->n_heads;
    rope = (size_t)cfg->seq_len * (size_t)(hd / 2);
    h_rope = (float *)malloc(2 * rope * sizeof(float));
    if (!h_rope) {
        cuda_destroy(&c->base);
        return GPT_ERR_NOMEM;
    }
    {
        int pos, i;
        for (pos = 0; pos < cfg->seq_len; pos++)
            for (i = 0; i < hd / 2; i++) {
                double angle = gm_rope_angle(pos, i, hd);
                h_rope[(size_t)pos * (hd / 2) + i] = (float)cos(angle);
                h_rope[rope + (size_t)pos * (hd / 2) + i] = (float)sin(angle);
            }
    }
    gpt_init_params(cfg, c->h_params, seed);
    if (CU_OK(cudaMemcpy(c->acts.rope_cos, h_rope, rope * sizeof(float), cudaMemcpyHostToDevice)) != GPT_OK ||
        CU_OK(cudaMemcpy(c->acts.rope_sin, h_rope + rope, rope * sizeof(float), cudaMemcpyHostToDevice)) != GPT_OK ||
        CU_OK(cudaMemcpy(c->params, c->h_params, np * sizeof(float), cudaMemcpyHostToDevice)) != GPT_OK ||
        CU_OK(cudaMemset(c->grads, 0, np * sizeof(float))) != GPT_OK) {
        free(h_rope);
        cuda_destroy(&c->base);
        return GPT_ERR_BACKEND;
    }
    free(h_rope);
    *out = &c->base;
    return GPT_OK;
}

static float *cuda_params(gpt_backend *be)
{
    cuda_backend *c = cuda_of(be);
    return c ? c->h_params : NULL;
}

static float *cuda_grads(gpt_backend *be)
{
    cuda_backend *c = cuda_of(be);
    return c ? c->h_grads : NULL;
}

static gpt_status cuda_copy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s)
{
    if (CU_OK(cudaMemcpyAsync(dst, src, bytes, kind, s)) != GPT_OK) return GPT_ERR_BACKEND;
    return CU_OK(cudaStreamSynchronize(s));
}

static gpt_status cuda_push_params(gpt_backend *be)
{
    cuda_backend *c = cuda_of(be);
    if (!c) return GPT_ERR_NULL;
    return cuda_copy(c->params, c->h_params, be->layout.n_params * sizeof(float), cudaMemcpyHostToDevice,
                     c->ctx.stream);
}

static gpt_status cuda_pull_params(gpt_backend *be)
{
    cuda_backend *c = cuda_of(be);
    if (!c) return GPT_ERR_NULL;
    return cuda_copy(c->h_params, c->params, be->layout.n_params * sizeof(float), cudaMemcpyDeviceToHost,
                     c->ctx.stream);
}

static gpt_status cuda_pull_grads(gpt_backend *be)
{
    cuda_backend *c = cuda_of(be);
    if (!c) return GPT_ERR_NULL;
    return cuda_copy(c->h_grads, c->grads, be->layout.n_params * sizeof(float), cudaMemcpyDeviceToHost,
                     c->ctx.stream);
}

/* ---- layer launchers (the cpu_layers.h signatures, on device pointers) -------------------- */

static gpt_status rmsnorm_forward(const cuda_backend *c, float *y, size_t ldy, float *rstd, const float *x, size_t ldx,
                                  size_t n, int groups, int gdim)
{
    size_t warps = n * (size_t)groups;
    k_rmsnorm_forward<<<gpt_blocks(warps * 32, 256), 256, 0, c->ctx.stream>>>(y, ldy, rstd, x, ldx, n, groups,
                                                                             gdim);
    return LAUNCH_OK();
}

static gpt_status rmsnorm_backward(const cuda_backend *c, float *dx, size_t lddx, const float *dy, size_t lddy,
                                   const float *y, size_t ldy, const float *rstd, size_t n, int groups, int gdim,
                                   int acc)
{
    size_t warps = n * (size_t)groups;
    k_rmsnorm_backward<<<gpt_blocks(warps * 32, 256), 256, 0, c->ctx.stream>>>(dx, lddx, dy, lddy, y, ldy, rstd,
                                                                              n, groups, gdim, acc);
    return LAUNCH_OK();
}

static gpt_status rope(const cuda_backend *c, float *o, size_t ldo, const float *in, size_t ldi, int n_seq, int t,
                       int inverse)
{
    int nh = c->base.config.n_heads, hd = c->base.config.d_model / nh;
    size_t n = (size_t)n_seq * t;
    k_rope<<<gpt_blocks(n * nh * (hd / 2), 256), 256, 0, c->ctx.stream>>>(o, ldo, in, ldi, n, t, nh, hd,
                                                                          c->acts.rope_cos, c->acts.rope_sin, inverse);
    return LAUNCH_OK();
}

/* y (n x out) = x W^T (+= when acc) */
static gpt_status linear_forward(const cuda_backend *c, float *y, const float *x, const float *w, size_t n, size_t in,
                                 size_t out, int acc)
{
    return gpt_cuda__gemm(&c->ctx, 0, 0, 1, (int)n, (int)out, (int)in, 1.0f, x, (int)in, 0, w, (int)in, 0,
                          acc ? 1.0f : 0.0f, y, (int)out, 0, 1);
}

/* dW += dy^T x; dx = dy W (+= when acc_dx) */
static gpt_status linear_backward(const cuda_backend *c, float *dx, float *dw, const float *dy, const float *x,
                                  const float *w, size_t n, size_t in, size_t out, int acc_dx)
{
    if (gpt_cuda__gemm(&c->ctx, 0, 1, 0, (int)out, (int)in, (int)n, 1.0f, dy, (int)out, 0, x, (int)in, 0, 1.0f, dw,
                       (int)in, 0, 1) != GPT_OK)
        return GPT_ERR_BACKEND;
    if (!dx) return GPT_OK;
    return gpt_cuda__gemm(&c->ctx, 0, 0, 0, (int)n, (int)in, (int)out, 1.0f, dy, (int)out, 0, w, (int)in, 0,
                          acc_dx ? 1.0f : 0.0f, dx, (int)in, 0, 1);
}

/* causal attention of cpu_layers.h, per sequence: strided-batched GEMMs over the heads */
static gpt_status attention_forward(const cuda_backend *c, float *out, size_t ldo, float *att, const float *q,
                                    size_t ldq, const float *k, size_t ldk, const float *v, size_t ldv, int n_seq,
                                    int t)
{
    int nh = c->base.config.n_heads, hd = c->base.config.d_model / nh, s;
    float scale = (float)(1.0 / sqrt((double)hd));
    long long tt = (long long)t * t;
    size_t rows = (size_t)n_seq * nh * t;
    for (s = 0; s < n_seq; s++) {
        size_t r0 = (size_t)s * t;
        if (gpt_cuda__gemm(&c->ctx, 0, 0, 1, t, t, hd, scale, q + r0 * ldq, (int)ldq, hd, k + r0 * ldk, (int)ldk, hd,
                           0.0f, att + (size_t)s * nh * tt, t, tt, nh) != GPT_OK)
            return GPT_ERR_BACKEND;
    }
    k_causal_softmax<<<gpt_blocks(rows * 32, 256), 256, 0, c->ctx.stream>>>(att, rows, t);
    if (LAUNCH_OK() != GPT_OK) return GPT_ERR_BACKEND;
    for (s = 0; s < n_seq; s++) {
        size_t r0 = (size_t)s * t;
        if (gpt_cuda__gemm(&c->ctx, 0, 0, 0, t, hd, t, 1.0f, att + (size_t)s * nh * tt, t, tt, v + r0 * ldv, (int)ldv,
                           hd, 0.0f, out + r0 * ldo, (int)ldo, hd, nh) != GPT_OK)
            return GPT_ERR_BACKEND;
    }
    return GPT_OK;
}

static gpt_status attention_backward(const cuda_backend *c, float *dq, size_t lddq, float *dk, size_t lddk, float *dv,
                                     size_t lddv, float *ds, const float *dout, size_t lddo, const float *att,
                                     const float *q, size_t ldq, const float *k, size_t ldk, const float *v, size_t ldv,
                                     int n_seq, int t)
{
    int nh = c->base.config.n_heads, hd = c->base.config.d_model / nh, s;
    float scale = (float)(1.0 / sqrt((double)hd));
    long long tt = (long long)t * t;
    size_t rows = (size_t)n_seq * nh * t;
    for (s = 0; s < n_seq; s++) {
        size_t r0 = (size_t)s * t;
        const float *p = att + (size_t)s * nh * tt;
        float *d = ds + (size_t)s * nh * tt;
        /* dP = dO V^T;  dV = P^T dO */
        if (gpt_cuda__gemm(&c->ctx, 0, 0, 1, t, t, hd, 1.0f, dout + r0 * lddo, (int)lddo, hd, v + r0 * ldv, (int)ldv,
                           hd, 0.0f, d, t, tt, nh) != GPT_OK ||
            gpt_cuda__gemm(&c->ctx, 0, 1, 0, t, hd, t, 1.0f, p, t, tt, dout + r0 * lddo, (int)lddo, hd, 0.0f,
                           dv + r0 * lddv, (int)lddv, hd, nh) != GPT_OK)
            return GPT_ERR_BACKEND;
    }
    k_causal_softmax_backward<<<gpt_blocks(rows * 32, 256), 256, 0, c->ctx.stream>>>(ds, att, rows, t);
    if (LAUNCH_OK() != GPT_OK) return GPT_ERR_BACKEND;
    for (s = 0; s < n_seq; s++) {
        size_t r0 = (size_t)s * t;
        const float *d = ds + (size_t)s * nh * tt;
        /* dQ = scale dS K;  dK = scale dS^T Q */
        if (gpt_cuda__gemm(&c->ctx, 0, 0, 0, t, hd, t, scale, d, t, tt, k + r0 * ldk, (int)ldk, hd, 0.0f,
                           dq + r0 * lddq, (int)lddq, hd, nh) != GPT_OK ||
            gpt_cuda__gemm(&c->ctx, 0, 1, 0, t, hd, t, scale, d, t, tt, q + r0 * ldq, (int)ldq, hd, 0.0f,
                           dk + r0 * lddk, (int)lddk, hd, nh) != GPT_OK)
            return GPT_ERR_BACKEND;
    }
    return GPT_OK;
}

/* ---- model forward / backward (cpu.c's, on the device) ------------------------------------ */

static gpt_status cuda_trunk_forward(cuda_backend *c, int n_seq, int t)
{
    const gpt_config *cfg = &c->base.config;
    size_t n = (size_t)n_seq * t, d = (size_t)cfg->d_model, f = (size_t)cfg->mlp_hidden;
    int nh = cfg->n_heads, hd = cfg->d_model / cfg->n_heads, l;
    cudaStream_t st = c->ctx.stream;
    k_embedding_forward<<<gpt_blocks(n * d, 256), 256, 0, st>>>(c->acts.x, c->inputs, c->params + c->base.layout.wte,
                                                               n, d);
    if (LAUNCH_OK() != GPT_OK) return GPT_ERR_BACKEND;
    for (l = 0; l < cfg->n_layers; l++) {
        gpt_layer_acts *a = &c->acts.layers[l];
        gpt_layer_ptrs w = gpt_layer_at(&c->base.layout, c->params, l);
        if (rmsnorm_forward(c, a->xn1, d, a->rstd1, c->acts.x, d, n, 1, (int)d) != GPT_OK ||
            linear_forward(c, a->qkv, a->xn1, w.wq, n, d, 3 * d, 0) != GPT_OK ||
            rmsnorm_forward(c, a->qkv, 3 * d, a->rstd_qk, a->qkv, 3 * d, n, 2 * nh, hd) != GPT_OK ||
            rope(c, a->qr, d, a->qkv, 3 * d, n_seq, t, 0) != GPT_OK ||
            rope(c, a->kr, d, a->qkv + d, 3 * d, n_seq, t, 0) != GPT_OK ||
            attention_forward(c, a->y, d, a->att, a->qr, d, a->kr, d, a->qkv + 2 * d, 3 * d, n_seq, t) != GPT_OK ||
            linear_forward(c, c->acts.x, a->y, w.wo, n, d, d, 1) != GPT_OK ||
            rmsnorm_forward(c, a->xn2, d, a->rstd2, c->acts.x, d, n, 1, (int)d) != GPT_OK ||
            linear_forward(c, a->gu, a->xn2, w.w_gate, n, d, 2 * f, 0) != GPT_OK)
            return GPT_ERR_BACKEND;
        k_swiglu_forward<<<gpt_blocks(n * f, 256), 256, 0, st>>>(a->h, a->gu, n, f);
        if (LAUNCH_OK() != GPT_OK || linear_forward(c, c->acts.x, a->h, w.w_down, n, f, d, 1) != GPT_OK)
            return GPT_ERR_BACKEND;
    }
    return rmsnorm_forward(c, c->acts.xf, d, c->acts.rstdf, c->acts.x, d, n, 1, (int)d);
}

/* Groups the positions of the batch by token (a stable counting sort, O(n + vocab) on the host)
 * for the embedding backward, and uploads the groups. */
static gpt_status embedding_groups(cuda_backend *c, const int *tokens, size_t n)
{
    int vocab = c->base.config.vocab_size, *perm = c->emb_host, *off = perm + n, *tok = off + n + 1;
    int *count = tok + n, v, s = 0;
    size_t i;
    for (v = 0; v <= vocab; v++) count[v] = 0;
    for (i = 0; i < n; i++) count[tokens[i] + 1]++;
    for (v = 0; v < vocab; v++) count[v + 1] += count[v]; /* count[v] = first slot of token v */
    for (v = 0; v < vocab; v++)
        if (count[v + 1] > count[v]) off[s] = count[v], tok[s] = v, s++;
    off[s] = (int)n;
    for (i = 0; i < n; i++) perm[count[tokens[i]]++] = (int)i; /* stable: positions in order */
    c->n_segments = s;
    if (CU_OK(cudaMemcpyAsync(c->emb_dev, c->emb_host, (3 * n + 1) * sizeof(int), cudaMemcpyHostToDevice,
                              c->ctx.stream)) != GPT_OK)
        return GPT_ERR_BACKEND;
    return CU_OK(cudaStreamSynchronize(c->ctx.stream)); /* the host buffer is reused next step */
}

static gpt_status cuda_forward(gpt_backend *be, const int *inputs, const int *targets, float *loss)
{
    cuda_backend *c = cuda_of(be);
    size_t n, d, v;
    double mean;
    cudaStream_t st;
    if (!c || !inputs || !loss) return GPT_ERR_NULL;
    n = (size_t)be->max_batch * be->max_seq, d = (size_t)be->config.d_model;
    v = (size_t)be->config.vocab_size;
    if (!gpt_tokens_valid(inputs, n, be->config.vocab_size)) return GPT_ERR_TOKEN;
    if (targets && !gpt_tokens_valid(targets, n, be->config.vocab_size)) return GPT_ERR_TOKEN;
    st = c->ctx.stream;
    c->backward_ready = 0;
    if (CU_OK(cudaMemcpyAsync(c->inputs, inputs, n * sizeof(int), cudaMemcpyHostToDevice, st)) != GPT_OK)
        return GPT_ERR_BACKEND;
    if (targets && CU_OK(cudaMemcpyAsync(c->targets, targets, n * sizeof(int), cudaMemcpyHostToDevice, st)) != GPT_OK)
        return GPT_ERR_BACKEND;
    if (targets && embedding_groups(c, inputs, n) != GPT_OK) return GPT_ERR_BACKEND;
    c->n_seq = be->max_batch, c->t = be->max_seq;
    if (cuda_trunk_forward(c, c->n_seq, c->t) != GPT_OK ||
        linear_forward(c, c->acts.logits, c->acts.xf, c->params + be->layout.lm_head, n, d, v, 0) != GPT_OK)
        return GPT_ERR_BACKEND;
    if (!targets) {
        *loss = 0.0f;
        return CU_OK(cudaStreamSynchronize(st));
    }
    k_crossentropy_forward<<<(unsigned)n, CE_THREADS, 0, st>>>(c->acts.losses, c->acts.logits, c->targets, v);
    if (LAUNCH_OK() != GPT_OK) return GPT_ERR_BACKEND;
    k_mean<<<1, 1024, 0, st>>>(c->loss_dev, c->acts.losses, n);
    if (LAUNCH_OK() != GPT_OK) return GPT_ERR_BACKEND;
    if (cuda_copy(&mean, c->loss_dev, sizeof mean, cudaMemcpyDeviceToHost, st) != GPT_OK) return GPT_ERR_BACKEND;
    *loss = (float)mean;
    c->backward_ready = 1;
    return GPT_OK;
}

static gpt_status cuda_backward(gpt_backend *be)
{
    cuda_backend *c = cuda_of(be);
    const gpt_config *cfg;
    size_t n, d, f, v;
    int nh, hd, l;
    cudaStream_t st;
    if (!c) return GPT_ERR_NULL;
    if (!c->backward_ready) return GPT_ERR_STATE;
    cfg = &be->config;
    n = (size_t)c->n_seq * c->t, d = (size_t)cfg->d_model, f = (size_t)cfg->mlp_hidden;
    v = (size_t)cfg->vocab_size, nh = cfg->n_heads, hd = cfg->d_model / cfg->n_heads;
    st = c->ctx.stream;
    c->backward_ready = 0;
    k_crossentropy_backward<<<gpt_blocks(n * v, 256), 256, 0, st>>>(c->acts.logits, c->acts.logits, c->targets, n, v,
                                                                   (float)(1.0 / (double)n));
    if (LAUNCH_OK() != GPT_OK ||
        linear_backward(c, c->acts.dxn, c->grads + be->layout.lm_head, c->acts.logits, c->acts.xf,
                        c->params + be->layout.lm_head, n, d, v, 0) != GPT_OK ||
        rmsnorm_backward(c, c->acts.dres, d, c->acts.dxn, d, c->acts.xf, d, c->acts.rstdf, n, 1, (int)d, 0) != GPT_OK)
        return GPT_ERR_BACKEND;
    for (l = cfg->n_layers - 1; l >= 0; l--) {
        gpt_layer_acts *a = &c->acts.layers[l];
        gpt_layer_ptrs w = gpt_layer_at(&be->layout, c->params, l);
        gpt_layer_ptrs g = gpt_layer_at(&be->layout, c->grads, l);
        if (linear_backward(c, c->acts.dh, g.w_down, c->acts.dres, a->h, w.w_down, n, f, d, 0) != GPT_OK)
            return GPT_ERR_BACKEND;
        k_swiglu_backward<<<gpt_blocks(n * f, 256), 256, 0, st>>>(c->acts.dgu, c->acts.dh, a->gu, n, f);
        if (LAUNCH_OK() != GPT_OK ||
            linear_backward(c, c->acts.dxn, g.w_gate, c->acts.dgu, a->xn2, w.w_gate, n, d, 2 * f, 0) != GPT_OK ||
            rmsnorm_backward(c, c->acts.dres, d, c->acts.dxn, d, a->xn2, d, a->rstd2, n, 1, (int)d, 1) != GPT_OK ||
            linear_backward(c, c->acts.dy, g.wo, c->acts.dres, a->y, w.wo, n, d, d, 0) != GPT_OK ||
            attention_backward(c, c->acts.dqkv, 3 * d, c->acts.dqkv + d, 3 * d, c->acts.dqkv + 2 * d, 3 * d,
                               c->acts.datt, c->acts.dy, d, a->att, a->qr, d, a->kr, d, a->qkv + 2 * d, 3 * d, c->n_seq,
                               c->t) != GPT_OK ||
            rope(c, c->acts.dqkv, 3 * d, c->acts.dqkv, 3 * d, c->n_seq, c->t, 1) != GPT_OK ||
            rope(c, c->acts.dqkv + d, 3 * d, c->acts.dqkv + d, 3 * d, c->n_seq, c->t, 1) != GPT_OK ||
            rmsnorm_backward(c, c->acts.dqkv, 3 * d, c->acts.dqkv, 3 * d, a->qkv, 3 * d, a->rstd_qk, n, 2 * nh, hd,
                             0) != GPT_OK ||
            linear_backward(c, c->acts.dxn, g.wq, c->acts.dqkv, a->xn1, w.wq, n, d, 3 * d, 0) != GPT_OK ||
            rmsnorm_backward(c, c->acts.dres, d, c->acts.dxn, d, a->xn1, d, a->rstd1, n, 1, (int)d, 1) != GPT_OK)
            return GPT_ERR_BACKEND;
    }
    {
        int *perm = c->emb_dev, *off = perm + n, *tok = off + n + 1;
        dim3 grid((unsigned)c->n_segments, (unsigned)((d + 127) / 128));
        k_embedding_backward_sorted<<<grid, 128, 0, st>>>(c->grads + be->layout.wte, perm, off, tok, c->acts.dres, d);
    }
    if (LAUNCH_OK() != GPT_OK) return GPT_ERR_BACKEND;
    return CU_OK(cudaStreamSynchronize(st));
}

static gpt_status cuda_zero_grad(gpt_backend *be)
{
    cuda_backend *c = cuda_of(be);
    if (!c) return GPT_ERR_NULL;
    /* the device block only: the host mirror is written whole by pull_grads before anyone reads it */
    if (CU_OK(cudaMemsetAsync(c->grads, 0, be->layout.n_params * sizeof(float), c->ctx.stream)) != GPT_OK)
        return GPT_ERR_BACKEND;
    return CU_OK(cudaStreamSynchronize(c->ctx.stream));
}

/* gpt_trunk_fn: one chunk of cuda_head_inputs (tokens up, the final-norm outputs down) */
static gpt_status cuda_trunk_chunk(void *ctx, const int *tokens, int n_seq, float *out)
{
    gpt_backend *be = (gpt_backend *)ctx;
    cuda_backend *c = cuda_of(be);
    size_t d = (size_t)be->config.d_model, t = (size_t)be->max_seq;
    c->backward_ready = 0;
    if (cuda_copy(c->inputs, tokens, (size_t)n_seq * t * sizeof(int), cudaMemcpyHostToDevice, c->ctx.stream) !=
            GPT_OK ||
        cuda_trunk_forward(c, n_seq, (int)t) != GPT_OK ||
        cuda_copy(out, c->acts.xf, (size_t)n_seq * t * d * sizeof(float), cudaMemcpyDeviceToHost, c->ctx.stream) !=
            GPT_OK)
        return GPT_ERR_BACKEND;
    return GPT_OK;
}

static gpt_status cuda_head_inputs(gpt_backend *be, const int *tokens, int n_seq, float *out)
{
    if (!cuda_of(be)) return GPT_ERR_NULL;
    return gpt_head_inputs_chunked(&be->config, be->max_batch, be->max_seq, tokens, n_seq, out, cuda_trunk_chunk, be);
}

static gpt_status cuda_last_logits(gpt_backend *be, const int *context, int len, float *logits)
{
    cuda_backend *c = cuda_of(be);
    size_t d, v;
    gpt_status st;
    if (!c || !context || !logits) return GPT_ERR_NULL;
    if ((st = gpt_context_check(&be->config, be->max_seq, context, len)) != GPT_OK) return st;
    d = (size_t)be->config.d_model, v = (size_t)be->config.vocab_size;
    c->backward_ready = 0;
    if (cuda_copy(c->inputs, context, (size_t)len * sizeof(int), cudaMemcpyHostToDevice, c->ctx.stream) != GPT_OK ||
        cuda_trunk_forward(c, 1, len) != GPT_OK ||
        linear_forward(c, c->acts.logits, c->acts.xf + (size_t)(len - 1) * d, c->params + be->layout.lm_head, 1, d, v,
                       0) != GPT_OK ||
        cuda_copy(logits, c->acts.logits, v * sizeof(float), cudaMemcpyDeviceToHost, c->ctx.stream) != GPT_OK)
        return GPT_ERR_BACKEND;
    return GPT_OK;
}

extern "C" const gpt_backend_ops gpt_cuda_backend = {
    "cuda",          cuda_create,      cuda_destroy,      cuda_params,
    cuda_grads,      cuda_push_params, cuda_pull_params,  cuda_pull_grads,
    cuda_forward,    cuda_backward,    cuda_zero_grad,    cuda_head_inputs,
    cuda_last_logits, gpt_cuda_create_optimizer, /* cuda_train.cu */
};
