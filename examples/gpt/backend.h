/* backend.h - what a compute backend gives the training loop (cpu.c; cuda.cu in build/gpt/train_cuda).
 *
 * A backend owns the parameters, the gradients and the activations of one model, and computes
 * forward + backward of a batch. The training loop (train.c) drives any backend through the
 * function table below; the parameter and gradient blocks are laid out as model.h describes
 * (gpt_layout / gpt_tensor_info name every tensor with its kind, so the optimizer set assigns
 * Muon to block matrices, AdamW to the embedding and AdamW / RowNorm / Muon to the head, and
 * checkpoints store names).
 *
 * Typical update:
 *     be->ops->zero_grad(be);
 *     be->ops->forward(be, inputs, targets, &loss);   // B x T tokens each, row-major
 *     be->ops->backward(be);
 *     opt->ops->reduce / step / share                  // optim.h gpt_optimizer: on the host
 *                                                      // blocks, or where the backend keeps them
 * The optimizer comes from gpt_optimizer_create (optim.h): the backend's own
 * (create_optimizer), or the host one on params()/grads().
 *
 * Host blocks: params(be) and grads(be) return host arrays of gpt_layout_of(cfg).n_params floats
 * that stay valid until destroy. Whoever writes params on the host (init, optimizer, checkpoint
 * load) calls push_params afterwards; whoever reads them after the device changed them calls
 * pull_params first. The CPU backend computes on these very arrays, so the sync calls do nothing.
 *
 * Threading: a backend is used from one thread at a time; it may use OpenMP inside.
 * Determinism: the CPU backend gives bit-identical losses and gradients across runs and across
 * OpenMP thread counts, provided muon_sgemm is itself deterministic (muon.h's policy).
 * Errors: every call validates first; on error nothing observable changes.
 */
#ifndef GPT_BACKEND_H
#define GPT_BACKEND_H

#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gpt_backend gpt_backend;
struct gpt_optimizer_env; /* optim.h */
struct gpt_optimizer;

typedef struct gpt_backend_ops {
    const char *name; /* "cpu", ... */

    /* Allocates everything for batches of up to max_batch sequences of up to max_seq tokens
     * (max_seq <= seq_len); cfg is resolved first (zero fields = defaults; the result is in
     * be->config). Parameters are initialised by
     * gpt_init_params(cfg, params, seed) and gradients zeroed. GPT_ERR_SIZE / GPT_ERR_CONFIG /
     * GPT_ERR_NOMEM; *out is NULL on error. */
    gpt_status (*create)(const gpt_config *cfg, int max_batch, int max_seq, uint64_t seed,
                         gpt_backend **out);
    void (*destroy)(gpt_backend *be); /* NULL is allowed */

    float *(*params)(gpt_backend *be);          /* host parameter block (see above) */
    float *(*grads)(gpt_backend *be);           /* host gradient block, same layout */
    gpt_status (*push_params)(gpt_backend *be); /* host params -> device */
    gpt_status (*pull_params)(gpt_backend *be); /* device params -> host */
    gpt_status (*pull_grads)(gpt_backend *be);  /* device grads -> host */

    /* Forward of the full batch (max_batch x max_seq tokens, row-major, ids in [0, vocab)).
     * targets may be NULL (no loss: *loss is set to 0 and backward is not allowed); otherwise
     * *loss = mean over all tokens of -log softmax(logits)[target]. */
    gpt_status (*forward)(gpt_backend *be, const int *inputs, const int *targets, float *loss);
    /* Adds d(loss)/d(params) of the last forward to the gradient block (so micro-batches
     * accumulate); GPT_ERR_STATE unless the last call that touched activations was a forward
     * with targets. */
    gpt_status (*backward)(gpt_backend *be);
    gpt_status (*zero_grad)(gpt_backend *be); /* a device backend: its host view (grads) is stale until pull_grads */

    /* Diagnostics: the LM-head inputs (final-norm outputs) of n_seq sequences of max_seq tokens
     * each (tokens row-major), written to out as (n_seq * max_seq) x d_model, row-major. Any
     * n_seq >= 1 (processed max_batch at a time). Clobbers the activations of the last forward. */
    gpt_status (*head_inputs)(gpt_backend *be, const int *tokens, int n_seq, float *out);
    /* Sampling: the vocab_size logits of the last position of one context of len tokens
     * (1 <= len <= max_seq). Clobbers the activations of the last forward. */
    gpt_status (*last_logits)(gpt_backend *be, const int *context, int len, float *logits);

    /* The optimizer set run where this backend keeps its parameters (optim.h): GPT_OK with *out
     * set, or a status with a message in err; it may hand out the host implementation instead
     * (mirrored) with the reason in note. NULL: the host implementation on params()/grads() (the
     * CPU backend, whose blocks are the ones it computes on). */
    gpt_status (*create_optimizer)(const struct gpt_optimizer_env *env, struct gpt_optimizer **out, char *note,
                                   size_t notelen, char *err, size_t errlen);
} gpt_backend_ops;

/* The common head of every backend object (a backend's private struct starts with it). */
struct gpt_backend {
    const gpt_backend_ops *ops;
    gpt_config config; /* resolved */
    gpt_layout layout;
    int max_batch, max_seq;
};

/* The CPU backend (cpu.c): every matmul through muon_sgemm, OpenMP over rows / (batch, head). */
extern const gpt_backend_ops gpt_cpu_backend;

#ifdef __cplusplus
}
#endif
#endif /* GPT_BACKEND_H */
