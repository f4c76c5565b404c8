/* cpu_layers.h - the CPU backend's layers, one forward and one backward function each
 * (implemented in cpu.c; exposed so tests can hold each to a float64 reference).
 *
 * Conventions: activations are rows of tokens, row-major, with an explicit leading dimension
 * (ld, in floats) where a layer reads or writes a slice of a wider row (e.g. q inside qkv).
 * n = number of token rows = n_seq * t for a batch of n_seq sequences of t tokens each.
 * Backward functions overwrite their input gradients unless `accumulate` is given, and always
 * add into weight gradients (so micro-batches accumulate). Every matmul goes through muon_sgemm.
 * None allocates; all are deterministic and independent of the OpenMP thread count.
 */
#ifndef GPT_CPU_LAYERS_H
#define GPT_CPU_LAYERS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPT_RMSNORM_EPS 1e-6
#define GPT_ROPE_BASE 10000.0

/* GEMM packing workspace, handed to muon_sgemm_ws so that a training step allocates nothing.
 * The GEMMs of linear layers run one at a time and use the whole block (muon threads them);
 * attention issues its small GEMMs from inside its own parallel loop, thread i using slice i of
 * per_thread bytes, on at most `threads` threads. A NULL workspace pointer (or mem == NULL)
 * means muon_sgemm allocates per call. */
typedef struct gpt_gemm_ws {
    void *mem;
    size_t bytes;      /* max(muon_gemm_workspace_size(threads), threads * per_thread) */
    size_t per_thread; /* muon_gemm_workspace_size(1) */
    int threads;
} gpt_gemm_ws;

/* Sizes for up to `threads` threads (<= 0: OpenMP's current maximum); mem is left NULL. */
gpt_gemm_ws gpt_gemm_ws_for(int threads);

/* x (n x d, row v of wte for token v): x[i] = wte[tokens[i]]. Tokens must be in range. */
void gpt_embedding_forward(float *x, const int *tokens, const float *wte, size_t n, size_t d);
/* dwte[tokens[i]] += dx[i], in token order (deterministic). */
void gpt_embedding_backward(float *dwte, const int *tokens, const float *dx, size_t n, size_t d);

/* RMSNorm without gain, per group: each of the n rows of x (stride ldx) holds n_groups groups of
 * group_dim contiguous floats (the main norm: 1 group of d; QK-norm: one group per head);
 * y = x * r with r = 1 / sqrt(mean(x^2) + eps), rstd[row * n_groups + g] = r.
 * y may equal x (in place, same ld). */
void gpt_rmsnorm_forward(float *y, size_t ldy, float *rstd, const float *x, size_t ldx, size_t n,
                         size_t n_groups, size_t group_dim);
/* From the forward output y and rstd: dx = r * (dy - y * mean(dy * y)) per group; dx += that
 * when accumulate. dx may equal dy (in place, same ld) when !accumulate. */
void gpt_rmsnorm_backward(float *dx, size_t lddx, const float *dy, size_t lddy, const float *y,
                          size_t ldy, const float *rstd, size_t n, size_t n_groups,
                          size_t group_dim, int accumulate);

/* RoPE tables for positions [0, t_max) and pair index i in [0, head_dim/2):
 * angle = pos * GPT_ROPE_BASE^(-2i / head_dim), computed in double. Each table t_max*head_dim/2. */
void gpt_rope_tables(float *cos_table, float *sin_table, int t_max, int head_dim);
/* Rotates the adjacent pairs (2i, 2i+1) of every head of every token: token row r has position
 * r % t; n_heads heads of head_dim contiguous floats per row. inverse = 0: forward rotation;
 * inverse = 1: the transpose (the backward of the forward rotation). out may equal in. */
void gpt_rope(float *out, size_t ldo, const float *in, size_t ldi, int n_seq, int t, int n_heads,
              int head_dim, const float *cos_table, const float *sin_table, int inverse);

/* Causal softmax attention, scale 1/sqrt(head_dim), per (sequence, head):
 * P = softmax(scale * Q K^T) with P[i][j] = 0 for j > i, out = P V.
 * q, k, v, out: (n_seq * t) rows of n_heads * head_dim (head h at columns h*head_dim).
 * att receives P: n_seq * n_heads blocks of t x t, block (s, h) at (s * n_heads + h) * t * t. */
void gpt_attention_forward(float *out, size_t ldo, float *att, const float *q, size_t ldq,
                           const float *k, size_t ldk, const float *v, size_t ldv, int n_seq, int t,
                           int n_heads, int head_dim, const gpt_gemm_ws *ws);
/* Overwrites dq, dk, dv from dout and the forward's att, q, k, v. scratch: n_seq*n_heads*t*t. */
void gpt_attention_backward(float *dq, size_t lddq, float *dk, size_t lddk, float *dv, size_t lddv,
                            float *scratch, const float *dout, size_t lddo, const float *att,
                            const float *q, size_t ldq, const float *k, size_t ldk, const float *v,
                            size_t ldv, int n_seq, int t, int n_heads, int head_dim,
                            const gpt_gemm_ws *ws);

/* SwiGLU: gu is n x 2f (gate in columns [0, f), up in [f, 2f)); h = silu(gate) * up (n x f),
 * silu(g) = g * sigmoid(g). */
void gpt_swiglu_forward(float *h, const float *gu, size_t n, size_t f);
/* dgu (n x 2f) from dh (n x f) and the forward's gu. */
void gpt_swiglu_backward(float *dgu, const float *dh, const float *gu, size_t n, size_t f);

/* y (n x out) = x (n x in) W^T with W out x in (row-major, rows = output features);
 * y += ... when accumulate. */
void gpt_linear_forward(float *y, const float *x, const float *w, size_t n, size_t in, size_t out,
                        int accumulate, const gpt_gemm_ws *ws);
/* dW += dy^T x; dx = dy W (dx += when accumulate_dx); dx may be NULL (not computed). */
void gpt_linear_backward(float *dx, float *dw, const float *dy, const float *x, const float *w,
                         size_t n, size_t in, size_t out, int accumulate_dx, const gpt_gemm_ws *ws);

/* Softmax cross-entropy per row: logits (n x v) are replaced by softmax probabilities and
 * losses[i] = logsumexp(logits_i) - logits_i[targets[i]] (targets in [0, v)). */
void gpt_crossentropy_forward(float *losses, float *probs, const int *targets, size_t n, size_t v);
/* dlogits = dloss * (probs - onehot(target)) per row; dlogits may equal probs. */
void gpt_crossentropy_backward(float *dlogits, const float *probs, const int *targets, size_t n,
                               size_t v, float dloss);

#ifdef __cplusplus
}
#endif
#endif /* GPT_CPU_LAYERS_H */
