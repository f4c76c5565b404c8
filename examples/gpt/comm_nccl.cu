/* comm_nccl.cu - the NCCL communicator of comm.h: DEVICE buffers, for the CUDA trainer's gradient
 * block and parameters (build/gpt/train_cuda_nccl, `make cuda-nccl`). It implements the two
 * calls the training loop makes on device memory, allreduce_f32 (the gradient block, once per
 * update) and share (the owners' matrices, one ncclBroadcast each inside one group, in place);
 * everything else (losses, agreed flags, checkpoints) goes through the host (MPI) communicator,
 * which also carries the ncclUniqueId. Compiled with -DGPT_USE_NCCL.
 *
 * Ordering: the backend computes on its own stream and the optimizer step ends with a stream
 * synchronisation; each call here first waits for the device (cudaDeviceSynchronize), runs NCCL
 * on its own stream and waits for it, so the next kernel on the backend's stream sees the result.
 * One GPU per rank: gpt_nccl_select_device(local rank) before the backend is created. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"

typedef struct nccl_impl {
    ncclComm_t comm;
    cudaStream_t stream;
} nccl_impl;

/* GPT_OK, or GPT_ERR_COMM (NCCL) / GPT_ERR_BACKEND (CUDA) with what failed on stderr. */
static gpt_status nccl_check(const gpt_comm *c, ncclResult_t r, const char *what)
{
    if (r == ncclSuccess) return GPT_OK;
    fprintf(stderr, "rank %d: %s failed: %s\n", c ? c->rank : -1, what, ncclGetErrorString(r));
    return GPT_ERR_COMM;
}

static gpt_status cuda_check(const gpt_comm *c, cudaError_t e, const char *what)
{
    if (e == cudaSuccess) return GPT_OK;
    fprintf(stderr, "rank %d: %s failed: %s\n", c ? c->rank : -1, what, cudaGetErrorString(e));
    return GPT_ERR_BACKEND;
}

static gpt_status n_allreduce_f32(gpt_comm *c, float *buf, size_t n)
{
    nccl_impl *m = (nccl_impl *)c->impl;
    gpt_status st = cuda_check(c, cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    if (st == GPT_OK) st = nccl_check(c, ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, m->comm, m->stream), "ncclAllReduce");
    if (st == GPT_OK) st = cuda_check(c, cudaStreamSynchronize(m->stream), "ncclAllReduce (stream)");
    if (st == GPT_OK) c->bytes_allreduce += 4.0 * (double)n;
    return st;
}

/* Every segment broadcast in place from its owner, all in one group (NCCL overlaps them). */
static gpt_status n_share(gpt_comm *c, float *base, const gpt_comm_segment *segs, int n_segs)
{
    nccl_impl *m = (nccl_impl *)c->impl;
    int k;
    gpt_status st = cuda_check(c, cudaDeviceSynchronize(), "cudaDeviceSynchronize"), sb = GPT_OK, se;
    if (st != GPT_OK || (st = nccl_check(c, ncclGroupStart(), "ncclGroupStart")) != GPT_OK) return st;
    for (k = 0; k < n_segs && sb == GPT_OK; k++) {
        float *p = base + segs[k].offset;
        sb = nccl_check(c, ncclBroadcast(p, p, segs[k].count, ncclFloat, segs[k].owner, m->comm, m->stream), "ncclBroadcast");
        if (segs[k].owner == c->rank) c->bytes_share += 4.0 * (double)segs[k].count;
    }
    se = nccl_check(c, ncclGroupEnd(), "ncclGroupEnd");
    if (se != GPT_OK || sb != GPT_OK) return se != GPT_OK ? se : sb;
    return cuda_check(c, cudaStreamSynchronize(m->stream), "ncclBroadcast (stream)");
}

static gpt_status n_unsupported(const gpt_comm *c, const char *what)
{
    fprintf(stderr, "rank %d: %s is not a device-communicator call (use the host communicator)\n", c->rank, what);
    return GPT_ERR_STATE;
}
static gpt_status n_allreduce_f64(gpt_comm *c, double *buf, size_t n)
{
    (void)buf, (void)n;
    return n_unsupported(c, "allreduce_f64");
}
static gpt_status n_bcast(gpt_comm *c, void *buf, size_t bytes, int root)
{
    (void)buf, (void)bytes, (void)root;
    return n_unsupported(c, "bcast");
}
static gpt_status n_send(gpt_comm *c, const void *buf, size_t bytes, int dest)
{
    (void)buf, (void)bytes, (void)dest;
    return n_unsupported(c, "send");
}
static gpt_status n_recv(gpt_comm *c, void *buf, size_t bytes, int src)
{
    (void)buf, (void)bytes, (void)src;
    return n_unsupported(c, "recv");
}
static gpt_status n_barrier(gpt_comm *c)
{
    nccl_impl *m = (nccl_impl *)c->impl;
    return cuda_check(c, cudaStreamSynchronize(m->stream), "cudaStreamSynchronize");
}
static void n_abort(gpt_comm *c, int code)
{
    nccl_impl *m = (nccl_impl *)c->impl;
    if (m) ncclCommAbort(m->comm);
    exit(code);
}
static void n_destroy(gpt_comm *c)
{
    nccl_impl *m;
    if (!c) return;
    m = (nccl_impl *)c->impl;
    if (m) {
        ncclCommDestroy(m->comm);
        cudaStreamDestroy(m->stream);
        free(m);
    }
    free(c);
}

static const gpt_comm_ops nccl_ops = {"nccl", n_allreduce_f32, n_allreduce_f64, n_bcast,  n_share,
                                      n_send, n_recv,          n_barrier,       n_abort,  n_destroy};

extern "C" gpt_status gpt_nccl_select_device(int local_rank)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n < 1) { /* say why: no device, a driver too old for the runtime, ... */
        (void)cudaGetLastError();
        fprintf(stderr, "local rank %d: no usable CUDA device: %s\n", local_rank,
                e != cudaSuccess ? cudaGetErrorString(e) : "the device count is 0");
        return GPT_ERR_BACKEND;
    }
    return cuda_check(NULL, cudaSetDevice(local_rank % n), "cudaSetDevice");
}

extern "C" gpt_comm *gpt_comm_nccl_create(gpt_comm *host)
{
    struct {
        int ok;
        ncclUniqueId id;
    } msg;
    gpt_comm *c;
    nccl_impl *m;
    int ok;
    if (!host) return NULL;
    memset(&msg, 0, sizeof msg);
    if (host->rank == 0) msg.ok = nccl_check(host, ncclGetUniqueId(&msg.id), "ncclGetUniqueId") == GPT_OK;
    /* rank 0 always sends (so no rank waits forever), with its status */
    if (host->ops->bcast(host, &msg, sizeof msg, 0) != GPT_OK || !msg.ok) return NULL;
    c = (gpt_comm *)calloc(1, sizeof *c);
    m = (nccl_impl *)calloc(1, sizeof *m);
    if (!c || !m) {
        free(c), free(m);
        return NULL;
    }
    ok = cuda_check(host, cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking), "cudaStreamCreate") == GPT_OK &&
         nccl_check(host, ncclCommInitRank(&m->comm, host->size, msg.id, host->rank), "ncclCommInitRank") == GPT_OK;
    if (!ok) {
        if (m->stream) cudaStreamDestroy(m->stream);
        free(c), free(m);
        return NULL;
    }
    c->ops = &nccl_ops;
    c->rank = host->rank, c->size = host->size, c->local_rank = host->local_rank;
    c->on_device = 1;
    c->impl = m;
    return c;
}
