/* cuda_runtime.h (emulated) - the subset of the CUDA runtime that examples/gpt's CUDA backend uses,
 * executed on the CPU, for `make test` on machines without a GPU (docs/cuda.md, "The CPU
 * emulation"). Not part of the product: tests only. The .cu sources are compiled as C++ with this
 * directory first on the include path, after tests/emu/launch.sed has rewritten every launch
 * `k<<<grid, block, shmem, stream>>>(args)` into `emu_launch(k, grid, block, shmem, stream)(args)`.
 *
 * What it models:
 *   - a kernel launch runs every block in turn; the threads of a block are fibers that switch at
 *     __syncthreads and at warp shuffles; a barrier that the live threads of a block reach at
 *     different places, or a shuffle whose mask names a lane that has exited or waits elsewhere,
 *     is an error (reported, and the launch fails with cudaErrorLaunchFailure);
 *   - launch geometry is checked against the device limits of cudaGetDeviceProperties;
 *   - device memory is separate from host memory: cudaMalloc'd pages are inaccessible
 *     (PROT_NONE) except while a kernel, a cuBLAS call or a cudaMemcpy/cudaMemset runs, so a
 *     host dereference of a device pointer faults; new allocations are filled with NaN;
 *   - cudaMemcpy checks that each pointer is on the side its kind says;
 *   - the last-error slot: a failed call sets it, cudaGetLastError returns and clears it;
 *   - emu_fail_malloc_after(n) makes the n-th next cudaMalloc fail (tests of error paths).
 * What it cannot model: races between threads or blocks (everything runs in one order, so a
 * race never shows), timing, streams running concurrently (every call completes before it
 * returns), warp-synchronous code that relies on lock-step execution without a shuffle or a
 * barrier, and TF32 rounding (GEMMs run in fp32 with double accumulation).
 */
#ifndef EMU_CUDA_RUNTIME_H
#define EMU_CUDA_RUNTIME_H

#ifndef __cplusplus
#error "the CUDA emulation compiles the .cu sources as C++"
#endif

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static /* one block runs at a time: a static is that block's shared memory */
#define __launch_bounds__(...)

struct uint3 {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};

typedef enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInitializationError = 3,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidDevicePointer = 17,
    cudaErrorInvalidMemcpyDirection = 21,
    cudaErrorInsufficientDriver = 35,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorLaunchFailure = 719
} cudaError_t;

enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4
};

typedef struct emu_stream *cudaStream_t;
typedef struct emu_event *cudaEvent_t;
#define cudaStreamNonBlocking 0x01u

struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem, sharedMemPerBlock;
    int warpSize, maxThreadsPerBlock, maxThreadsDim[3], maxGridSize[3];
    int multiProcessorCount, major, minor, clockRate, memoryClockRate, memoryBusWidth;
};

/* the runtime (emu.cpp) */
cudaError_t cudaMalloc(void **p, size_t bytes);
template <class T> inline cudaError_t cudaMalloc(T **p, size_t bytes) { return cudaMalloc((void **)p, bytes); }
cudaError_t cudaFree(void *p);
cudaError_t cudaMallocHost(void **p, size_t bytes);
cudaError_t cudaFreeHost(void *p);
template <class T> inline cudaError_t cudaMallocHost(T **p, size_t bytes) { return cudaMallocHost((void **)p, bytes); }
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s = 0);
cudaError_t cudaMemset(void *p, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t s = 0);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaStreamCreate(cudaStream_t *s);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaEventCreate(cudaEvent_t *e);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s = 0);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b);
cudaError_t cudaGetDeviceCount(int *n);
cudaError_t cudaSetDevice(int d);
cudaError_t cudaGetDevice(int *d);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d);
cudaError_t cudaDriverGetVersion(int *v);
cudaError_t cudaRuntimeGetVersion(int *v);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char *cudaGetErrorString(cudaError_t e);

/* ---- emulation controls and internals ----------------------------------------------------- */

/* the n-th next cudaMalloc (1: the next one) fails with cudaErrorMemoryAllocation; 0: none */
void emu_fail_malloc_after(int n);
/* launches that failed (a bad geometry, a deadlock, a divergent barrier, a partial shuffle) */
long emu_launch_failures(void);
/* 1 while device memory is accessible (inside a kernel, a cuBLAS call or a copy) */
int emu_device_open(void);
/* is p inside a live cudaMalloc'd block (and how many bytes remain from p)? */
int emu_is_device(const void *p, size_t *bytes_left);
/* device memory accessible (open > 0) or not, nested; for the cuBLAS emulation */
void emu_device_access(int open);
/* records a failure: message on stderr, the last-error slot set */
void emu_fail(cudaError_t e, const char *fmt, ...);

struct emu_thread {
    uint3 idx;
};
extern emu_thread *emu_cur;
extern uint3 emu_block_idx;
extern dim3 emu_block_dim, emu_grid_dim;
#define threadIdx (emu_cur->idx)
#define blockIdx emu_block_idx
#define blockDim emu_block_dim
#define gridDim emu_grid_dim
static const int warpSize = 32;

void emu_syncthreads(const char *file, int line);
#define __syncthreads() emu_syncthreads(__FILE__, __LINE__)
/* one lane's part of a shuffle: writes its value, waits for the mask, reads lane src's */
void emu_shfl(unsigned mask, const void *in, void *out, size_t size, int src, const char *file, int line);
void emu_syncwarp(unsigned mask, const char *file, int line);
#define __syncwarp(...) emu_syncwarp(0xffffffffu, __FILE__, __LINE__)

template <class T> inline T emu_shfl_t(unsigned mask, T v, int src, const char *file, int line)
{
    T out;
    emu_shfl(mask, &v, &out, sizeof v, src, file, line);
    return out;
}
int emu_lane(void); /* the calling thread's lane: its linear index in the block mod 32 */
#define __shfl_xor_sync(mask, v, lm, ...) emu_shfl_t((mask), (v), emu_lane() ^ (int)(lm), __FILE__, __LINE__)
#define __shfl_down_sync(mask, v, d, ...) \
    emu_shfl_t((mask), (v), emu_lane() + (int)(d) < 32 ? emu_lane() + (int)(d) : emu_lane(), __FILE__, __LINE__)
#define __shfl_sync(mask, v, src, ...) emu_shfl_t((mask), (v), (int)(src), __FILE__, __LINE__)

/* one block at a time, one fiber at a time: atomics are plain read-modify-writes */
template <class T> inline T atomicAdd(T *p, T v)
{
    T old = *p;
    *p = old + v;
    return old;
}
inline unsigned long long atomicAdd(unsigned long long *p, int v) { return atomicAdd(p, (unsigned long long)v); }
template <class T> inline T atomicMax(T *p, T v)
{
    T old = *p;
    if (v > old) *p = v;
    return old;
}

/* the launch: emu_launch(kernel, grid, block, shmem, stream)(args...) */
typedef void (*emu_body)(void *closure);
void emu_run_grid(dim3 grid, dim3 block, size_t shmem, cudaStream_t s, emu_body body, void *closure, const char *name);

template <class K> struct emu_launcher {
    K k;
    dim3 g, b;
    size_t sh;
    cudaStream_t s;
    const char *name;
    template <class L> static void thunk(void *p) { (*(L *)p)(); }
    template <class... A> void operator()(A... a) const
    {
        K kk = k;
        auto run = [&]() { kk(a...); };
        emu_run_grid(g, b, sh, s, &thunk<decltype(run)>, &run, name);
    }
};
template <class K> inline emu_launcher<K> emu_launch_named(K k, const char *name, dim3 g, dim3 b, size_t sh = 0,
                                                           cudaStream_t s = 0)
{
    emu_launcher<K> l = {k, g, b, sh, s, name};
    return l;
}
#define emu_launch(k, ...) emu_launch_named((k), #k, __VA_ARGS__)

#endif /* EMU_CUDA_RUNTIME_H */
