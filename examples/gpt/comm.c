/* comm.c - the single-process communicator and the helpers every implementation shares
 * (comm.h). The MPI one is comm_mpi.c, the NCCL one comm_nccl.cu. */
#include "comm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static gpt_status single_allreduce_f32(gpt_comm *c, float *buf, size_t n) { (void)c, (void)buf, (void)n; return GPT_OK; }
static gpt_status single_allreduce_f64(gpt_comm *c, double *buf, size_t n) { (void)c, (void)buf, (void)n; return GPT_OK; }
static gpt_status single_bcast(gpt_comm *c, void *buf, size_t bytes, int root)
{
    (void)c, (void)buf, (void)bytes;
    return root == 0 ? GPT_OK : GPT_ERR_DOMAIN;
}
static gpt_status single_share(gpt_comm *c, float *base, const gpt_comm_segment *segs, int n_segs)
{
    int k;
    (void)c, (void)base;
    for (k = 0; k < n_segs; k++)
        if (segs[k].owner != 0) return GPT_ERR_DOMAIN;
    return GPT_OK;
}
static gpt_status single_send(gpt_comm *c, const void *buf, size_t bytes, int dest)
{
    (void)c, (void)buf, (void)bytes, (void)dest;
    fprintf(stderr, "comm: send in a one-process run\n");
    return GPT_ERR_STATE;
}
static gpt_status single_recv(gpt_comm *c, void *buf, size_t bytes, int src)
{
    (void)c, (void)buf, (void)bytes, (void)src;
    fprintf(stderr, "comm: recv in a one-process run\n");
    return GPT_ERR_STATE;
}
static gpt_status single_barrier(gpt_comm *c) { (void)c; return GPT_OK; }
static void single_abort(gpt_comm *c, int code) { (void)c; exit(code); }
static void single_destroy(gpt_comm *c) { (void)c; }

static const gpt_comm_ops single_ops = {"single",     single_allreduce_f32, single_allreduce_f64,
                                        single_bcast, single_share,         single_send,
                                        single_recv,  single_barrier,       single_abort,
                                        single_destroy};

gpt_comm *gpt_comm_single(void)
{
    static gpt_comm one;
    one.ops = &single_ops;
    one.rank = 0, one.size = 1, one.local_rank = 0, one.on_device = 0, one.impl = NULL;
    return &one;
}

void gpt_comm_split(size_t n, int rank, int size, size_t *lo, size_t *hi)
{
    size_t q, r, k;
    if (size < 1) size = 1;
    if (rank < 0) rank = 0;
    if (rank >= size) rank = size - 1;
    q = n / (size_t)size, r = n % (size_t)size, k = (size_t)rank;
    *lo = k * q + (k < r ? k : r);
    *hi = *lo + q + (k < r ? 1 : 0);
}

gpt_status gpt_comm_agree(gpt_comm *c, int flag, int *sum)
{
    double v = (double)flag;
    gpt_status st;
    if (!c || c->size == 1) {
        *sum = flag;
        return GPT_OK;
    }
    if ((st = c->ops->allreduce_f64(c, &v, 1)) != GPT_OK) return st;
    *sum = (int)v;
    return GPT_OK;
}
