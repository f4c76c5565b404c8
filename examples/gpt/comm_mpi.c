/* comm_mpi.c - the MPI communicator of comm.h (MPI_COMM_WORLD, host buffers). Compiled only with
 * -DGPT_USE_MPI (mpicc; `make mpi`). Counts above INT_MAX elements go in chunks. */
#ifdef GPT_USE_MPI
#include "comm.h"

#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK ((size_t)1 << 30) /* elements per MPI call (below INT_MAX) */

typedef struct mpi_impl {
    float *pack;      /* share(): this rank's owned segments, packed */
    float *gather;    /* share(): everyone's, packed by owner */
    size_t pack_cap, gather_cap;
    int *counts, *displs;
} mpi_impl;

static gpt_status check(gpt_comm *c, int rc, const char *what)
{
    if (rc == MPI_SUCCESS) return GPT_OK;
    {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        fprintf(stderr, "rank %d: %s failed: %.*s\n", c->rank, what, len, msg);
    }
    return GPT_ERR_COMM;
}

static gpt_status m_allreduce_f32(gpt_comm *c, float *buf, size_t n)
{
    size_t i;
    for (i = 0; i < n; i += CHUNK) {
        size_t k = n - i < CHUNK ? n - i : CHUNK;
        if (check(c, MPI_Allreduce(MPI_IN_PLACE, buf + i, (int)k, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce"))
            return GPT_ERR_COMM;
    }
    c->bytes_allreduce += 4.0 * (double)n;
    return GPT_OK;
}

static gpt_status m_allreduce_f64(gpt_comm *c, double *buf, size_t n)
{
    size_t i;
    for (i = 0; i < n; i += CHUNK) {
        size_t k = n - i < CHUNK ? n - i : CHUNK;
        if (check(c, MPI_Allreduce(MPI_IN_PLACE, buf + i, (int)k, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce"))
            return GPT_ERR_COMM;
    }
    return GPT_OK;
}

static gpt_status m_bcast(gpt_comm *c, void *buf, size_t bytes, int root)
{
    size_t i;
    for (i = 0; i < bytes; i += CHUNK) {
        size_t k = bytes - i < CHUNK ? bytes - i : CHUNK;
        if (check(c, MPI_Bcast((char *)buf + i, (int)k, MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast")) return GPT_ERR_COMM;
    }
    return GPT_OK;
}

/* *p holds at least n floats (its contents dropped when it grows), or GPT_ERR_NOMEM. */
static gpt_status grow(float **p, size_t *cap, size_t n)
{
    if (n <= *cap) return GPT_OK;
    free(*p);
    *p = (float *)malloc(n * sizeof(float));
    *cap = *p ? n : 0;
    return *p ? GPT_OK : GPT_ERR_NOMEM;
}

/* Segments owned by each rank, packed in segment order, one MPI_Allgatherv. */
static gpt_status m_share(gpt_comm *c, float *base, const gpt_comm_segment *segs, int n_segs)
{
    mpi_impl *m = (mpi_impl *)c->impl;
    size_t total = 0, mine = 0, *per = NULL, *cur = NULL;
    int k, r, big = 0;
    gpt_status rc = GPT_OK;
    per = (size_t *)calloc((size_t)c->size, sizeof *per);
    cur = (size_t *)calloc((size_t)c->size, sizeof *cur);
    if (!per || !cur) goto nomem;
    for (k = 0; k < n_segs; k++) {
        if (segs[k].owner < 0 || segs[k].owner >= c->size) {
            fprintf(stderr, "rank %d: share: segment %d has owner %d\n", c->rank, k, segs[k].owner);
            rc = GPT_ERR_DOMAIN;
            goto out;
        }
        per[segs[k].owner] += segs[k].count;
        total += segs[k].count;
    }
    mine = per[c->rank];
    for (r = 0; r < c->size; r++) big |= per[r] > (size_t)INT_MAX;
    if (big) { /* one broadcast per segment (no int-count limit per call beyond CHUNK) */
        for (k = 0; k < n_segs && rc == GPT_OK; k++)
            rc = m_bcast(c, base + segs[k].offset, segs[k].count * sizeof(float), segs[k].owner);
        goto out;
    }
    if (grow(&m->pack, &m->pack_cap, mine ? mine : 1) != GPT_OK || grow(&m->gather, &m->gather_cap, total ? total : 1) != GPT_OK)
        goto nomem;
    {
        size_t off = 0;
        for (k = 0; k < n_segs; k++)
            if (segs[k].owner == c->rank) {
                memcpy(m->pack + off, base + segs[k].offset, segs[k].count * sizeof(float));
                off += segs[k].count;
            }
        off = 0;
        for (r = 0; r < c->size; r++) {
            m->counts[r] = (int)per[r];
            m->displs[r] = (int)off; /* total may exceed INT_MAX only when big */
            cur[r] = off;
            off += per[r];
        }
        if (off > (size_t)INT_MAX) { /* displacements overflow: per-segment broadcasts */
            for (k = 0; k < n_segs && rc == GPT_OK; k++)
                rc = m_bcast(c, base + segs[k].offset, segs[k].count * sizeof(float), segs[k].owner);
            goto out;
        }
    }
    rc = check(c, MPI_Allgatherv(m->pack, (int)mine, MPI_FLOAT, m->gather, m->counts, m->displs, MPI_FLOAT,
                                 MPI_COMM_WORLD),
               "MPI_Allgatherv");
    if (rc == GPT_OK)
        for (k = 0; k < n_segs; k++) {
            int o = segs[k].owner;
            if (o != c->rank) memcpy(base + segs[k].offset, m->gather + cur[o], segs[k].count * sizeof(float));
            cur[o] += segs[k].count;
        }
out:
    if (rc == GPT_OK) c->bytes_share += 4.0 * (double)mine;
    free(per), free(cur);
    return rc;
nomem:
    fprintf(stderr, "rank %d: share: out of memory\n", c->rank);
    free(per), free(cur);
    return GPT_ERR_NOMEM;
}

static gpt_status m_send(gpt_comm *c, const void *buf, size_t bytes, int dest)
{
    size_t i;
    for (i = 0; i < bytes; i += CHUNK) {
        size_t k = bytes - i < CHUNK ? bytes - i : CHUNK;
        if (check(c, MPI_Send((const char *)buf + i, (int)k, MPI_BYTE, dest, 7, MPI_COMM_WORLD), "MPI_Send")) return GPT_ERR_COMM;
    }
    return GPT_OK;
}

static gpt_status m_recv(gpt_comm *c, void *buf, size_t bytes, int src)
{
    size_t i;
    for (i = 0; i < bytes; i += CHUNK) {
        size_t k = bytes - i < CHUNK ? bytes - i : CHUNK;
        if (check(c, MPI_Recv((char *)buf + i, (int)k, MPI_BYTE, src, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv"))
            return GPT_ERR_COMM;
    }
    return GPT_OK;
}

static gpt_status m_barrier(gpt_comm *c) { return check(c, MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

static void m_abort(gpt_comm *c, int code)
{
    (void)c;
    MPI_Abort(MPI_COMM_WORLD, code);
    exit(code);
}

static void m_destroy(gpt_comm *c)
{
    mpi_impl *m;
    if (!c) return;
    m = (mpi_impl *)c->impl;
    if (m) {
        free(m->pack), free(m->gather), free(m->counts), free(m->displs);
        free(m);
    }
    free(c);
    MPI_Finalize();
}

static const gpt_comm_ops mpi_ops = {"mpi",  m_allreduce_f32, m_allreduce_f64, m_bcast, m_share,
                                     m_send, m_recv,          m_barrier,       m_abort, m_destroy};

gpt_comm *gpt_comm_mpi_init(int *argc, char ***argv)
{
    gpt_comm *c;
    mpi_impl *m;
    int provided = 0, rank = 0, size = 1, local = 0;
    MPI_Comm node;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "MPI_Init_thread failed\n");
        return NULL;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* the rank within this node: for choosing a GPU */
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_rank(node, &local);
        MPI_Comm_free(&node);
    }
    c = (gpt_comm *)calloc(1, sizeof *c);
    m = (mpi_impl *)calloc(1, sizeof *m);
    if (c && m) {
        m->counts = (int *)calloc((size_t)size, sizeof(int));
        m->displs = (int *)calloc((size_t)size, sizeof(int));
    }
    if (!c || !m || !m->counts || !m->displs) {
        fprintf(stderr, "rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
        return NULL;
    }
    c->ops = &mpi_ops;
    c->rank = rank, c->size = size, c->local_rank = local, c->on_device = 0, c->impl = m;
    return c;
}
#else
/* ISO C forbids an empty translation unit. */
typedef int gpt_comm_mpi_unused;
#endif
