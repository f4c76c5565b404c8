/* cuda_backend.h - the CUDA backend of the example trainer (cuda.cu, cuda_optim.cu), usable from
 * plain C: no CUDA header is needed to include this file. Built by `make cuda` (cuda.mk).
 *
 * gpt_cuda_backend implements backend.h on one GPU: the parameters, gradients and activations
 * live in device memory; params()/grads() return host mirrors that push_params / pull_params /
 * pull_grads copy to and from the device. Forward and backward run entirely on the device:
 * matmuls through cuBLAS (TF32 tensor cores by default, fp32 accumulate, fp32 master weights;
 * GPT_CUDA_MATH=fp32 in the environment, or gpt_cuda_set_math, for plain fp32), RMSNorm, QK-norm,
 * RoPE, SwiGLU, the causal attention softmax and the softmax cross-entropy as kernels
 * (attention = cuBLAS strided-batched GEMMs per sequence + a fused causal softmax kernel).
 * The logits never leave the device: forward returns the mean loss only (last_logits copies the
 * one row sampling asks for).
 *
 * The optimizer steps and the head diagnostics below work on DEVICE pointers (the backend's
 * blocks from gpt_cuda_device_params / _grads, or gpt_cuda_malloc'ed state). Their per-element
 * math is gpu_math.h's, shared with the CPU test that holds it to muon.h / rownorm.h.
 *
 * Determinism: no atomics in any reduction; a run is bit-reproducible on one GPU and one cuBLAS
 * version (cuBLAS is deterministic for a given handle/stream/workspace configuration).
 * Errors: a CUDA or cuBLAS failure gives GPT_ERR_BACKEND with a message on stderr.
 */
#ifndef GPT_CUDA_BACKEND_H
#define GPT_CUDA_BACKEND_H

#include <stddef.h>

#include "backend.h"
#include "muon.h"
#include "rownorm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The backend (name "cuda"). create returns GPT_ERR_BACKEND when no device is usable. */
extern const gpt_backend_ops gpt_cuda_backend;

/* 1 when a CUDA device is present and usable, else 0 (never aborts). */
int gpt_cuda_available(void);

typedef enum gpt_cuda_math {
    GPT_CUDA_MATH_TF32 = 0, /* default: TF32 tensor cores, fp32 accumulate */
    GPT_CUDA_MATH_FP32 = 1  /* plain fp32 GEMMs (the CPU-comparison tests use this) */
} gpt_cuda_math;
gpt_status gpt_cuda_set_math(gpt_backend *be, gpt_cuda_math math);

/* The device parameter / gradient blocks (gpt_layout order), valid until destroy. */
float *gpt_cuda_device_params(gpt_backend *be);
float *gpt_cuda_device_grads(gpt_backend *be);

/* Device memory helpers for callers without CUDA headers. gpt_cuda_malloc returns zeroed
 * memory or NULL. */
void *gpt_cuda_malloc(size_t bytes);
void gpt_cuda_free(void *p);
gpt_status gpt_cuda_upload(void *dev_dst, const void *host_src, size_t bytes);
gpt_status gpt_cuda_download(void *host_dst, const void *dev_src, size_t bytes);
gpt_status gpt_cuda_synchronize(void);

/* ---- optimizers (device pointers; the caller owns every state buffer) --------------------- */

/* *out = sum of squares of n device floats, in double, fixed order (global-norm clipping; a
 * NaN/Inf anywhere makes it non-finite, which doubles as the finiteness check). */
gpt_status gpt_cuda_sumsq(gpt_backend *be, const float *x, size_t n, double *out);
/* x <- (float)(x * f) on the device (the clipping factor, as muon_clip_grad_norm applies it). */
gpt_status gpt_cuda_scale(gpt_backend *be, float *x, size_t n, double f);

/* muon_adamw_step on the device: t = the step number being taken (1 for the first); step_out
 * (device, n floats, or NULL) receives the step s as muon_adamw_step's does. */
gpt_status gpt_cuda_adamw_step(gpt_backend *be, float *param, const float *grad, float *m, float *v,
                               size_t n, const muon_adamw_config *cfg, long long t, float *step_out);

/* muon_step on the device (rows x cols, ld = cols; momentum rows x cols): momentum rule of cfg,
 * NS of cfg->ns as cuBLAS SYRK/SYMM products (coefficients read from the muon_ns_config), the
 * shape scale of the NS'd matrix (QKV chunks when split_rows > 1), decoupled weight decay.
 * The spectral cap is not implemented on the device (GPT_ERR_CONFIG if cfg->cap is on), nor
 * NorMuon, column splits (per-head output projections), unequal splits, cautious decay, the
 * max(||G||, eps) normalisation or bf16 NS (gpt_cuda_muon_supported is 0 for those; the step refuses them
 * with GPT_ERR_CONFIG and the trainer runs such recipes with the host optimizer).
 * ws: gpt_cuda_muon_workspace_floats(rows, cols) device floats. step_out (device, rows x cols,
 * or NULL) receives the step D, as muon_step's does. */
size_t gpt_cuda_muon_workspace_floats(size_t rows, size_t cols);
int gpt_cuda_muon_supported(const muon_config *cfg);
gpt_status gpt_cuda_muon_step(gpt_backend *be, float *w, const float *g, float *momentum, size_t rows,
                              size_t cols, const muon_config *cfg, float *ws, float *step_out);

/* rn_rownorm_step on the device (rows x cols, ld = cols, B rows x cols): t = steps already
 * taken (the state's t before the step). step_out (device, may be NULL) receives S.
 * ws: gpt_cuda_rownorm_workspace_doubles(rows, cols) device doubles. */
size_t gpt_cuda_rownorm_workspace_doubles(size_t rows, size_t cols);
gpt_status gpt_cuda_rownorm_step(gpt_backend *be, float *w, const float *g, float *B, size_t rows,
                                 size_t cols, const rn_rownorm_config *cfg, unsigned long long t,
                                 float *step_out, double *ws);

/* ---- the training loop's optimizer set on the device (cuda_train.cu) ---------------------- */

/* Device copies of every state of an optim_set (optim.h): AdamW moments, Muon momenta, the
 * RowNorm momentum, the head step S. gpt_cuda_optim_step is optim_step on the device: global-norm
 * clipping of the device gradient block, the schedule factor, every tensor's step with its
 * optim_slot config, the head step S on the device. It keeps the host states' step counters
 * (adamw.step, muon.step, rownorm.t) and o->last_grad_norm / last_lr_factor current, so the
 * loop's logging works unchanged; call gpt_cuda_optim_download before optim_save, spectra or any
 * host read of the states or of o->head_step. Muown and the spectral cap are CPU-only (create
 * fails with GPT_ERR_CONFIG and a message). create and step return GPT_OK or a status with a
 * message in err, as optim.h's functions do. */
struct optim_set;
typedef struct gpt_cuda_optim gpt_cuda_optim;
gpt_status gpt_cuda_optim_create(gpt_backend *be, const struct optim_set *o, gpt_cuda_optim **out, char *err,
                                 size_t errlen);
void gpt_cuda_optim_free(gpt_cuda_optim *d);
/* Uploads the host states of o (after optim_load on resume). */
gpt_status gpt_cuda_optim_upload(gpt_cuda_optim *d, const struct optim_set *o);
gpt_status gpt_cuda_optim_step(gpt_cuda_optim *d, struct optim_set *o, long step, long total, char *err,
                               size_t errlen);
/* Device states -> o's host states (RowNorm's cached mean re-synced) and S -> o->head_step. */
gpt_status gpt_cuda_optim_download(gpt_cuda_optim *d, struct optim_set *o);
/* The device head step S of the last step (V x d), e.g. for gpt_cuda_row_diameter. */
const float *gpt_cuda_optim_head_step(const gpt_cuda_optim *d);

/* gpt_cuda_backend's create_optimizer (optim.h gpt_optimizer): the set above, reducing and
 * sharing over env->dcomm; the host implementation (mirrored, with the reason in note) for
 * --host-optim, a sharded RowNorm head, several ranks without a device communicator, or a
 * recipe the device cannot run (Muown, the spectral cap). */
struct gpt_optimizer_env;
struct gpt_optimizer;
gpt_status gpt_cuda_create_optimizer(const struct gpt_optimizer_env *env, struct gpt_optimizer **out, char *note,
                                     size_t notelen, char *err, size_t errlen);

/* ---- head diagnostics --------------------------------------------------------------------- */

/* Exact row diameter D(S) of a device matrix S (rows x cols, ld = cols) and a maximising pair
 * (i < j): rows centred in double, fp32 Gram tiles (cuBLAS, never TF32) ranked by
 * ||a||^2 + ||b||^2 - 2 a.b, the winning pair recomputed directly in double. Allocates its device
 * workspace per call (a diagnostic, not a step function). */
gpt_status gpt_cuda_row_diameter(gpt_backend *be, const float *S, size_t rows, size_t cols, double *D,
                                 size_t *i, size_t *j);

/* Hilbert RMS (rownorm.h 1.3) of the head step S (device, rows x cols) on a panel H of n_tokens
 * hidden states (device, n_tokens x cols): streams vocabulary tiles of H S^T (fp32 cuBLAS),
 * keeps a running max/min per token, RMS of the oscillations in double. Allocates per call. */
gpt_status gpt_cuda_hilbert_rms(gpt_backend *be, const float *S, size_t rows, size_t cols,
                                const float *H, size_t n_tokens, double *rms);

#ifdef __cplusplus
}
#endif
#endif /* GPT_CUDA_BACKEND_H */
