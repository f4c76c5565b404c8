/* cuda_internal.cuh - what the CUDA backend's translation units (cuda.cu, cuda_optim.cu) share:
 * error checks, the row-major GEMM mapping onto cuBLAS, warp/block reductions, the context.
 * Not a public header: callers use cuda_backend.h. */
#ifndef GPT_CUDA_INTERNAL_CUH
#define GPT_CUDA_INTERNAL_CUH

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "cuda_backend.h"
#include "gpu_math.h"

/* What every device routine needs from a backend object. */
#define GPT_CUDA_SUMSQ_BLOCKS 1024 /* the most blocks of a sum of squares; scratch holds their partials */
typedef struct gpt_cuda_ctx {
    cublasHandle_t blas;
    cudaStream_t stream;
    gpt_cuda_math math;
    double *scratch;  /* device, GPT_CUDA_SUMSQ_BLOCKS + 1 doubles: reductions (allocated once) */
    double *h_scalar; /* pinned host double: a reduction's result comes back here */
} gpt_cuda_ctx;

/* The context of a CUDA backend (NULL for NULL or another backend). */
gpt_cuda_ctx *gpt_cuda__ctx(gpt_backend *be);

/* GPT_OK on success; otherwise prints what failed and where and returns GPT_ERR_BACKEND (so are
 * CU_OK, BLAS_OK and LAUNCH_OK, and every launcher built on them: test with != GPT_OK). */
gpt_status gpt_cuda__ok(cudaError_t e, const char *what, const char *file, int line);
gpt_status gpt_cuda__blas_ok(cublasStatus_t s, const char *what, const char *file, int line);
#define CU_OK(x) gpt_cuda__ok((x), #x, __FILE__, __LINE__)
#define BLAS_OK(x) gpt_cuda__blas_ok((x), #x, __FILE__, __LINE__)
#define LAUNCH_OK() gpt_cuda__ok(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)

/* Row-major C (m x n, ldc) = alpha op(A) op(B) + beta C through cuBLAS's column-major GEMM
 * (the column-major view of a row-major matrix is its transpose, so C^T = op(B)^T op(A)^T:
 * the operands swap, the transpose flags stay). precise = 1 forces fp32 compute whatever the
 * backend's math mode; batch > 1 uses the strides (in floats) of A, B and C. GPT_OK, or
 * GPT_ERR_BACKEND after cuBLAS's error is printed (an empty product is GPT_OK). */
gpt_status gpt_cuda__gemm(const gpt_cuda_ctx *c, int precise, int trans_a, int trans_b, int m, int n, int k,
                          float alpha, const float *A, int lda, long long stride_a, const float *B, int ldb,
                          long long stride_b, float beta, float *C, int ldc, long long stride_c, int batch);

/* ---- device reductions (the butterfly of gm_butterfly_sum) ------------------------------- */

__device__ __forceinline__ double gpt_warp_sum(double v)
{
    int off;
    for (off = 16; off >= 1; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

__device__ __forceinline__ float gpt_warp_max(float v)
{
    int off;
    for (off = 16; off >= 1; off /= 2) {
        float o = __shfl_xor_sync(0xffffffffu, v, off);
        v = o > v ? o : v;
    }
    return v;
}

/* Sum over a block of blockDim.x (a multiple of 32, <= 1024) threads; every thread gets the
 * result. sh: 32 doubles of shared memory. Fixed order: warp butterflies, then warp 0's. */
__device__ __forceinline__ double gpt_block_sum(double v, double *sh)
{
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = gpt_warp_sum(v);
    __syncthreads();
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    v = lane < nw ? sh[lane] : 0.0;
    v = gpt_warp_sum(v);
    return v;
}

__device__ __forceinline__ float gpt_block_max(float v, float *sh)
{
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = gpt_warp_max(v);
    __syncthreads();
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    v = lane < nw ? sh[lane] : -INFINITY;
    return gpt_warp_max(v);
}

static inline unsigned gpt_blocks(size_t n, unsigned threads)
{
    size_t b = (n + threads - 1) / threads;
    return (unsigned)(b < 1 ? 1 : b > 65535u * 16u ? 65535u * 16u : b);
}

#endif /* GPT_CUDA_INTERNAL_CUH */
