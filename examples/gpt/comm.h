/* comm.h - the trainer's communicator: what data-parallel training needs from MPI or NCCL.
 *
 * One small function table, three implementations:
 *   gpt_comm_single()        one process (the default build: every call is a no-op or a copy)
 *   gpt_comm_mpi_init()      MPI_COMM_WORLD, host buffers (comm_mpi.c; built with mpicc
 *                            -DGPT_USE_MPI: `make mpi` -> build/gpt/train_mpi)
 *   gpt_comm_nccl_create()   NCCL, DEVICE buffers (comm_nccl.cu; `make cuda-nccl` ->
 *                            build/gpt/train_cuda_nccl); it needs an MPI communicator to pass the
 *                            ncclUniqueId, and implements only allreduce_f32 and share
 * The training loop (train.c) holds a host communicator (single or MPI) for the loss, the
 * agreed flags, checkpoints and diagnostics, and uses it for the gradient block and parameters
 * too when they are on the host; with the CUDA backend's device optimizer it uses the NCCL one
 * for the gradient block and the parameters.
 *
 * Semantics (every call is collective over all ranks unless it says otherwise; buffers are host
 * memory except for the NCCL communicator):
 *   allreduce_f32/f64   in-place element-wise sum over ranks; every rank receives the same bits
 *                       (MPI and NCCL both combine in one order for all ranks with their
 *                       ring / recursive-doubling algorithms; the trainer checks the parameters
 *                       for agreement at every evaluation anyway, train.c)
 *   bcast               bytes from root to all
 *   share               the segments of ONE float array: segment k (offset, count, owner) is
 *                       correct on its owner before the call and on every rank after it (the
 *                       Muon owner split and the sharded head both end with it). MPI: the owned
 *                       segments are packed and exchanged by one MPI_Allgatherv (per-segment
 *                       MPI_Bcast when a rank's total exceeds INT_MAX floats); NCCL: one
 *                       ncclBroadcast per segment inside a group, in place
 *   send / recv         point-to-point bytes (checkpoint gathers to rank 0); not collective
 *   barrier, abort      MPI_Barrier / MPI_Abort (abort ends every rank: used when one rank failed
 *                       where the others cannot know it)
 * Every call returns GPT_OK, or a status with a message on stderr (rank-prefixed): GPT_ERR_COMM
 * (the library failed), GPT_ERR_NOMEM, GPT_ERR_DOMAIN (a root or owner that is not a rank),
 * GPT_ERR_STATE (a call this communicator has not: point-to-point in one process, NCCL's missing
 * ones). Sizes are size_t; the MPI implementation splits anything above INT_MAX elements into
 * chunks.
 */
#ifndef GPT_COMM_H
#define GPT_COMM_H

#include <stddef.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gpt_comm gpt_comm;

/* One segment of a float array for share(): elements [offset, offset + count) belong to owner. */
typedef struct gpt_comm_segment {
    size_t offset, count;
    int owner;
} gpt_comm_segment;

typedef struct gpt_comm_ops {
    const char *name; /* "single", "mpi", "nccl" */
    gpt_status (*allreduce_f32)(gpt_comm *c, float *buf, size_t n);
    gpt_status (*allreduce_f64)(gpt_comm *c, double *buf, size_t n);
    gpt_status (*bcast)(gpt_comm *c, void *buf, size_t bytes, int root);
    gpt_status (*share)(gpt_comm *c, float *base, const gpt_comm_segment *segs, int n_segs);
    gpt_status (*send)(gpt_comm *c, const void *buf, size_t bytes, int dest);
    gpt_status (*recv)(gpt_comm *c, void *buf, size_t bytes, int src);
    gpt_status (*barrier)(gpt_comm *c);
    void (*abort)(gpt_comm *c, int code);
    void (*destroy)(gpt_comm *c); /* MPI: MPI_Finalize; NCCL: ncclCommDestroy */
} gpt_comm_ops;

struct gpt_comm {
    const gpt_comm_ops *ops;
    int rank, size;
    int local_rank;  /* rank among the processes of this node (device selection) */
    int on_device;   /* buffers are device pointers (NCCL) */
    void *impl;
    /* traffic counters (elements sent by this rank as the algorithms' payload, not the
     * wire-level bytes): filled by the implementations, reported by train.c */
    double bytes_allreduce, bytes_share;
};

/* The one-process communicator (static; destroy does nothing). */
gpt_comm *gpt_comm_single(void);

/* Convenience wrappers: NULL means the single-process communicator. */
static inline int gpt_comm_rank(const gpt_comm *c) { return c ? c->rank : 0; }
static inline int gpt_comm_size(const gpt_comm *c) { return c ? c->size : 1; }

/* Rows [lo, hi) of n rows that rank `rank` of `size` takes: contiguous blocks, the first n % size
 * ranks one row more. Used for the batch slice and the head's vocabulary shard. */
void gpt_comm_split(size_t n, int rank, int size, size_t *lo, size_t *hi);

/* Sum of one int flag over ranks (for decisions every rank must take together: stop, error):
 * GPT_OK, or the all-reduce's status. */
gpt_status gpt_comm_agree(gpt_comm *c, int flag, int *sum);

#ifdef GPT_USE_MPI
/* MPI_Init_thread (FUNNELED) and a communicator over MPI_COMM_WORLD; NULL on failure. destroy
 * calls MPI_Finalize. */
gpt_comm *gpt_comm_mpi_init(int *argc, char ***argv);
#endif

#ifdef GPT_USE_NCCL
/* An NCCL communicator over the ranks of `host` (an MPI one): rank 0 creates the ncclUniqueId,
 * host->ops->bcast sends it, every rank calls ncclCommInitRank on the current CUDA device
 * (gpt_nccl_select_device first). NULL on failure (message on stderr). */
gpt_comm *gpt_comm_nccl_create(gpt_comm *host);
/* cudaSetDevice(local_rank % device count): GPT_OK, or GPT_ERR_BACKEND (message on stderr). Call
 * before the backend is created. */
gpt_status gpt_nccl_select_device(int local_rank);
#endif

#ifdef __cplusplus
}
#endif
#endif /* GPT_COMM_H */
