/* model.h - the example trainer's model: configuration, parameter layout, initialisation,
 * parameter groups and flop count (SPEC.md §3). No backend code here: backends (cpu.c, cuda.cu)
 * implement the forward/backward behind backend.h on a parameter block laid out as described
 * below.
 *
 * Architecture (SPEC §3): decoder-only transformer; pre-norm RMSNorm without gain (eps 1e-6);
 * causal self-attention, head_dim = d_model / n_heads, QK RMSNorm per head (no gain) followed by
 * RoPE (base 10000, adjacent pairs (2i, 2i+1) rotated by pos * 10000^(-2i/head_dim)); SwiGLU MLP
 * down(silu(gate(x)) * up(x)); untied token embedding and LM head; no biases; a final RMSNorm
 * before the head; softmax cross-entropy averaged over tokens; float32.
 *
 * MLP width: the default is 8/3 * d_model rounded to the nearest multiple of 8, which gives a
 * SwiGLU MLP the parameter count of a 4d GELU MLP (3 * d * 8d/3 = 8 d^2); any width may be set.
 *
 * Parameter block: ONE float array, in this order (the offsets are in gpt_layout):
 *   wte                      vocab x d        token embedding (row v = vector of token v)
 *   for each layer l:        (contiguous per layer, so q,k,v and gate,up each feed one GEMM)
 *     wq, wk, wv, wo         d x d each       rows = output features (y = x W^T)
 *     w_gate, w_up           mlp_hidden x d
 *     w_down                 d x mlp_hidden
 *   lm_head                  vocab x d        logits = h W^T; row v = the head vector of token v
 * Gradients use the same layout. gpt_layer_ptrs() turns a block base into per-layer pointers.
 */
#ifndef GPT_MODEL_H
#define GPT_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Zero fields mean "default" (gpt_config_resolve fills them). */
typedef struct gpt_config {
    int n_layers;   /* default 6 */
    int d_model;    /* default 384 */
    int n_heads;    /* default d_model / 64 (at least 1) */
    int seq_len;    /* maximum context length T (RoPE table size); default 256 */
    int vocab_size; /* default 4096 */
    int mlp_hidden; /* SwiGLU width; default 8/3 * d_model rounded to a multiple of 8 */
} gpt_config;

/* Fills zero fields with defaults and validates: every field > 0 after defaults, d_model a
 * multiple of n_heads, head_dim = d_model / n_heads even (RoPE rotates pairs), and sizes small
 * enough that every product used fits. On error *cfg is untouched. */
gpt_status gpt_config_resolve(gpt_config *cfg);
/* As gpt_config_resolve, and on error a message in err that names the rule that failed and the
 * trainer's flags of the fields in it (e.g. "--d-model 65 is not a multiple of --heads 2"). */
gpt_status gpt_config_check(gpt_config *cfg, char *err, size_t errlen);

/* What an optimizer should do with a tensor (SPEC §3): Muon on every block matrix, AdamW on the
 * embedding, AdamW / RowNorm / Muon on the head depending on the experiment arm. */
typedef enum gpt_tensor_kind {
    GPT_TENSOR_EMBEDDING = 0,
    GPT_TENSOR_BLOCK_MATRIX = 1,
    GPT_TENSOR_HEAD = 2
} gpt_tensor_kind;

/* Which matrix of a layer (index into the per-layer order of the block). */
enum { GPT_WQ = 0, GPT_WK, GPT_WV, GPT_WO, GPT_W_GATE, GPT_W_UP, GPT_W_DOWN, GPT_N_LAYER_TENSORS };

typedef struct gpt_tensor {
    char name[32]; /* "wte", "layers.3.wq", ..., "lm_head" */
    gpt_tensor_kind kind;
    int layer;         /* -1 for wte and lm_head */
    size_t rows, cols; /* row-major, leading dimension = cols */
    size_t offset;     /* in floats from the start of the parameter (or gradient) block */
} gpt_tensor;

/* Offsets (in floats) of every tensor in the block; all derived from a resolved config. */
typedef struct gpt_layout {
    size_t wte;
    size_t layer0;                        /* start of layer 0 */
    size_t layer_stride;                  /* floats per layer */
    size_t in_layer[GPT_N_LAYER_TENSORS]; /* offset of each matrix inside a layer */
    size_t lm_head;
    size_t n_params; /* total floats in the block */
    int n_tensors;   /* 2 + 7 * n_layers */
} gpt_layout;

/* Per-layer pointers into a parameter or gradient block. */
typedef struct gpt_layer_ptrs {
    float *wq, *wk, *wv, *wo, *w_gate, *w_up, *w_down;
} gpt_layer_ptrs;

/* cfg must be resolved (gpt_config_resolve returned GPT_OK). */
gpt_layout gpt_layout_of(const gpt_config *cfg);
gpt_layer_ptrs gpt_layer_at(const gpt_layout *lay, float *block, int layer);

/* Tensor `index` in [0, n_tensors): 0 = wte, then 7 per layer in the order above, last =
 * lm_head. Returns GPT_ERR_SIZE for an index out of range. No allocation. */
gpt_status gpt_tensor_info(const gpt_config *cfg, int index, gpt_tensor *out);

/* Every weight ~ N(0, 0.02^2) (SPEC §3) from a splitmix64 + Box-Muller stream seeded by `seed`;
 * the result depends only on (cfg, seed). params holds gpt_layout_of(cfg).n_params floats. */
void gpt_init_params(const gpt_config *cfg, float *params, uint64_t seed);

/* Matmul flops of one token for forward + backward (= 3 x forward): 6 * (block matrices + head)
 * + 12 * n_layers * seq_len * d_model for the attention products Q K^T and P V, counted over the
 * full T x T square that the GEMMs compute (the causal half is masked after the product). The
 * embedding lookup, norms, softmax and elementwise work are not counted. */
double gpt_flops_per_token(const gpt_config *cfg);

/* The activations and scratch buffers of one forward + backward, the same for every backend
 * (host memory for cpu.c, device memory for cuda.cu): per layer, then the residual stream, the
 * final norm, the head, the backward scratch and the RoPE tables. */
typedef struct gpt_layer_acts {
    float *xn1, *rstd1, *qkv, *rstd_qk, *qr, *kr, *att, *y, *xn2, *rstd2, *gu, *h;
} gpt_layer_acts;
typedef struct gpt_acts {
    gpt_layer_acts *layers;                           /* n_layers entries, caller-allocated */
    float *x, *xf, *rstdf, *logits, *losses;         /* residual stream, final norm, head */
    float *dres, *dxn, *dqkv, *dy, *dgu, *dh, *datt; /* backward scratch */
    float *rope_cos, *rope_sin;
} gpt_acts;
/* Points every buffer of acts into arena (acts->layers must hold n_layers entries), or only
 * counts when arena is NULL; each slice starts on a multiple of align floats (>= 1). Returns
 * the floats needed for batches of max_batch x max_seq tokens. */
size_t gpt_carve_acts(const gpt_config *cfg, int max_batch, int max_seq, size_t align, float *arena,
                      gpt_acts *acts);

/* 1 when every one of the n token ids is in [0, vocab). */
int gpt_tokens_valid(const int *tokens, size_t n, int vocab);

/* The checks of a backend's last_logits on a context of len tokens: GPT_ERR_SIZE unless
 * 1 <= len <= max_seq, GPT_ERR_TOKEN for an id outside [0, vocab_size), else GPT_OK. */
gpt_status gpt_context_check(const gpt_config *cfg, int max_seq, const int *context, int len);

/* A backend's trunk (embedding -> blocks -> final norm) over n_seq <= max_batch sequences of
 * max_seq tokens (row-major, valid ids): writes their final-norm outputs, (n_seq * max_seq) x
 * d_model floats, to out (host memory). */
typedef gpt_status (*gpt_trunk_fn)(void *ctx, const int *tokens, int n_seq, float *out);
/* The LM-head inputs of any n_seq >= 1 sequences (backend.h's head_inputs): checks the arguments
 * (GPT_ERR_NULL, GPT_ERR_SIZE for n_seq < 1, GPT_ERR_TOKEN for an id outside [0, vocab_size)),
 * then runs trunk(ctx, ...) on chunks of at most max_batch sequences, in order, each writing
 * its rows of out; stops at the first chunk that fails and returns its status. The one loop of
 * both backends (cpu.c, cuda.cu). */
gpt_status gpt_head_inputs_chunked(const gpt_config *cfg, int max_batch, int max_seq, const int *tokens, int n_seq,
                                   float *out, gpt_trunk_fn trunk, void *ctx);

#ifdef __cplusplus
}
#endif
#endif /* GPT_MODEL_H */
