/* cuda_train.cu - the training loop's optimizer set (optim.h) on the device: device copies of
 * every optimizer state and optim_step's sequence (clip, schedule, per-tensor step, head step S)
 * on the CUDA backend's parameter and gradient blocks (cuda_backend.h, gpt_cuda_optim_*).
 * Data parallel (optim_create_dist): only the slots this rank owns get device state and are
 * stepped; the gradient block is all-reduced before the step and the owners' matrices shared
 * after it over the device communicator (comm_nccl.cu).
 * gpt_cuda_create_optimizer wraps it as the backend's gpt_optimizer (optim.h), the one update
 * path of train.c. The per-tensor steps are cuda_optim.cu's; the element math is gpu_math.h's. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.cuh"
#include "optim.h"

#define GS_LOOP(i, n) for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
                           i += (size_t)gridDim.x * blockDim.x)

typedef struct cuda_slot {
    float *m, *v;   /* AdamW */
    float *mom;     /* Muon */
    float *B;       /* RowNorm */
} cuda_slot;

struct gpt_cuda_optim {
    gpt_backend *be;
    int n_slots;
    cuda_slot *slots;
    float *head_step;   /* S, V x d: written by the head's stepper */
    float *h_step;      /* pinned host copy of S (head_step op: one download per update) */
    float *muon_ws;
    double *rn_ws;
};

static float *dalloc(size_t floats)
{
    return (float *)gpt_cuda_malloc((floats ? floats : 1) * sizeof(float));
}

void gpt_cuda_optim_free(gpt_cuda_optim *d)
{
    int i;
    if (!d) return;
    for (i = 0; d->slots && i < d->n_slots; i++) {
        gpt_cuda_free(d->slots[i].m), gpt_cuda_free(d->slots[i].v);
        gpt_cuda_free(d->slots[i].mom), gpt_cuda_free(d->slots[i].B);
    }
    gpt_cuda_free(d->head_step), gpt_cuda_free(d->muon_ws), gpt_cuda_free(d->rn_ws);
    if (d->h_step) cudaFreeHost(d->h_step);
    free(d->slots);
    free(d);
}

static gpt_status up(float *dst, const float *src, size_t n)
{
    return n && src ? gpt_cuda_upload(dst, src, n * sizeof(float)) : GPT_OK;
}

gpt_status gpt_cuda_optim_upload(gpt_cuda_optim *d, const struct optim_set *o)
{
    int i;
    gpt_status st = GPT_OK;
    if (!d || !o) return GPT_ERR_NULL;
    for (i = 0; i < o->n_slots && st == GPT_OK; i++) {
        const optim_slot *s = &o->slots[i];
        size_t n = s->t.rows * s->t.cols;
        if (s->kind == OPTIM_ADAMW) {
            st = up(d->slots[i].m, s->adamw.m, n);
            if (st == GPT_OK) st = up(d->slots[i].v, s->adamw.v, n);
        } else if (s->kind == OPTIM_MUON) {
            st = up(d->slots[i].mom, s->muon.momentum, n);
        } else if (s->kind == OPTIM_ROWNORM) {
            st = up(d->slots[i].B, s->rownorm.B, n);
        }
    }
    if (st == GPT_OK && o->head_step && o->head_slot >= 0)
        st = up(d->head_step, o->head_step, o->slots[o->head_slot].t.rows * o->slots[o->head_slot].t.cols);
    return st;
}

gpt_status gpt_cuda_optim_create(gpt_backend *be, const struct optim_set *o, gpt_cuda_optim **out, char *err,
                                 size_t errlen)
{
    gpt_cuda_optim *d;
    size_t muon_ws = 0, rn_ws = 0, head_n;
    int i;
    gpt_status st;
    if (!out) return gpt_fail(err, errlen, GPT_ERR_NULL, "gpt_cuda_optim_create: NULL output");
    *out = NULL;
    if (!gpt_cuda__ctx(be) || !o)
        return gpt_fail(err, errlen, GPT_ERR_NULL, "gpt_cuda_optim_create: needs a CUDA backend and an optimizer set");
    if (o->head_sharded) return gpt_fail(err, errlen, GPT_ERR_CONFIG, "the sharded RowNorm head has no CUDA version");
    if (o->recipe.ns_steps == OPTIM_NS_AUTO) /* the budget reads the host's momentum (optim_ns_budget) */
        return gpt_fail(err, errlen, GPT_ERR_CONFIG, "--ns-steps auto has no CUDA version (use the CPU backend, or a "
                        "fixed --ns-steps)");
    d = (gpt_cuda_optim *)calloc(1, sizeof *d);
    if (!d) return gpt_fail(err, errlen, GPT_ERR_NOMEM, "out of memory");
    d->be = be;
    d->n_slots = o->n_slots;
    d->slots = (cuda_slot *)calloc((size_t)o->n_slots, sizeof *d->slots);
    if (!d->slots) {
        gpt_cuda_optim_free(d);
        return gpt_fail(err, errlen, GPT_ERR_NOMEM, "out of memory");
    }
    for (i = 0; i < o->n_slots; i++) {
        const optim_slot *s = &o->slots[i];
        size_t n = s->t.rows * s->t.cols, w;
        int ok = 1;
        switch (s->kind) {
        case OPTIM_ADAMW:
            ok = (d->slots[i].m = dalloc(n)) != NULL && (d->slots[i].v = dalloc(n)) != NULL;
            break;
        case OPTIM_MUON:
            if (s->muon_cfg.cap != MUON_CAP_OFF) {
                gpt_cuda_optim_free(d);
                return gpt_fail(err, errlen, GPT_ERR_CONFIG, "%s: the spectral cap has no CUDA version (use the CPU "
                                "backend)", s->t.name);
            }
            if (!gpt_cuda_muon_supported(&s->muon_cfg)) {
                gpt_cuda_optim_free(d);
                return gpt_fail(err, errlen, GPT_ERR_CONFIG, "%s: NorMuon, per-head (column-split) NS, cautious decay "
                                "and bf16 NS have no CUDA version", s->t.name);
            }
            if (!optim_owns(o, i)) break; /* data parallel: its momentum lives on its owner */
            ok = (d->slots[i].mom = dalloc(n)) != NULL;
            w = gpt_cuda_muon_workspace_floats(s->t.rows, s->t.cols);
            muon_ws = w > muon_ws ? w : muon_ws;
            break;
        case OPTIM_ROWNORM:
            ok = (d->slots[i].B = dalloc(n)) != NULL;
            w = gpt_cuda_rownorm_workspace_doubles(s->t.rows, s->t.cols);
            rn_ws = w > rn_ws ? w : rn_ws;
            break;
        case OPTIM_MUOWN:
            gpt_cuda_optim_free(d);
            return gpt_fail(err, errlen, GPT_ERR_CONFIG, "%s: Muown has no CUDA version (use the CPU backend)",
                            s->t.name);
        }
        if (!ok) {
            gpt_cuda_optim_free(d);
            return gpt_fail(err, errlen, GPT_ERR_NOMEM, "out of device memory for the state of %s", s->t.name);
        }
    }
    head_n = o->head_slot >= 0 ? o->slots[o->head_slot].t.rows * o->slots[o->head_slot].t.cols : 0;
    d->head_step = dalloc(head_n);
    if (cudaMallocHost((void **)&d->h_step, (head_n ? head_n : 1) * sizeof(float)) != cudaSuccess) {
        (void)cudaGetLastError();
        d->h_step = NULL;
    }
    d->muon_ws = muon_ws ? dalloc(muon_ws) : NULL;
    d->rn_ws = rn_ws ? (double *)gpt_cuda_malloc(rn_ws * sizeof(double)) : NULL;
    if (!d->head_step || !d->h_step || (muon_ws && !d->muon_ws) || (rn_ws && !d->rn_ws)) {
        gpt_cuda_optim_free(d);
        return gpt_fail(err, errlen, GPT_ERR_NOMEM, "out of device memory for the optimizer workspaces");
    }
    if ((st = gpt_cuda_optim_upload(d, o)) != GPT_OK) {
        gpt_cuda_optim_free(d);
        return gpt_fail(err, errlen, st, "cannot upload the optimizer state");
    }
    *out = d;
    return GPT_OK;
}

gpt_status gpt_cuda_optim_step(gpt_cuda_optim *d, struct optim_set *o, long step, long total, char *err, size_t errlen)
{
    gpt_backend *be;
    gpt_cuda_ctx *c;
    float *P, *G;
    double factor, ss = 0.0, norm, clip;
    int i;
    gpt_status gs;
    if (!d || !o) return gpt_fail(err, errlen, GPT_ERR_NULL, "gpt_cuda_optim_step: NULL");
    be = d->be;
    c = gpt_cuda__ctx(be);
    P = gpt_cuda_device_params(be), G = gpt_cuda_device_grads(be);
    factor = optim_lr_factor(&o->recipe, step, total);
    /* clip by the global norm of the whole gradient block (the slots tile it) */
    if ((gs = gpt_cuda_sumsq(be, G, be->layout.n_params, &ss)) != GPT_OK)
        return gpt_fail(err, errlen, gs, "gradient norm failed");
    norm = sqrt(ss);
    if (!isfinite(norm)) {
        int bad;
        if (be->ops->pull_grads(be) != GPT_OK) return gpt_fail(err, errlen, GPT_ERR_RANGE, "non-finite gradient");
        bad = optim_first_nonfinite(&o->model, be->ops->grads(be));
        return gpt_fail(err, errlen, GPT_ERR_RANGE, "non-finite gradient in tensor %s",
                        bad >= 0 ? o->slots[bad].t.name : "?");
    }
    clip = o->recipe.clip > 0.0 ? o->recipe.clip : HUGE_VAL;
    if (norm > clip && (gs = gpt_cuda_scale(be, G, be->layout.n_params, clip / norm)) != GPT_OK)
        return gpt_fail(err, errlen, gs, "gradient clipping failed");
    o->last_grad_norm = norm;
    o->last_lr_factor = factor;
    for (i = 0; i < o->n_slots; i++) {
        optim_slot *s = &o->slots[i];
        cuda_slot *ds = &d->slots[i];
        float *W = P + s->t.offset;
        const float *Gs = G + s->t.offset;
        double lr = s->peak_lr * factor;
        size_t n = s->t.rows * s->t.cols;
        float *S = i == o->head_slot ? d->head_step : NULL; /* the head's stepper writes S */
        gpt_status st = GPT_OK;
        if (!optim_owns(o, i)) continue; /* data parallel: stepped by its owner, then shared */
        switch (s->kind) {
        case OPTIM_ADAMW: {
            muon_adamw_config ac = s->adamw_cfg;
            long long t = s->adamw.step + 1;
            ac.lr = lr;
            st = gpt_cuda_adamw_step(be, W, Gs, ds->m, ds->v, n, &ac, t, S);
            if (st == GPT_OK) s->adamw.step = t;
            break;
        }
        case OPTIM_MUON: {
            muon_config mc = s->muon_cfg;
            mc.lr = lr;
            st = gpt_cuda_muon_step(be, W, Gs, ds->mom, s->t.rows, s->t.cols, &mc, d->muon_ws, S);
            if (st == GPT_OK) s->muon.step++;
            break;
        }
        case OPTIM_ROWNORM: {
            rn_rownorm_config rc = s->rownorm_cfg;
            rc.lr = lr;
            st = gpt_cuda_rownorm_step(be, W, Gs, ds->B, s->t.rows, s->t.cols, &rc, s->rownorm.t,
                                       S, d->rn_ws);
            if (st == GPT_OK) s->rownorm.t++;
            break;
        }
        case OPTIM_MUOWN:
            st = GPT_ERR_CONFIG;
            break;
        }
        if (st != GPT_OK)
            return gpt_fail(err, errlen, st, "device step on %s failed: %s", s->t.name, gpt_status_string(st));
    }
    if (CU_OK(cudaStreamSynchronize(c->stream)) != GPT_OK)
        return gpt_fail(err, errlen, GPT_ERR_BACKEND, "device optimizer step failed");
    return GPT_OK;
}

static gpt_status dn(float *dst, const float *src, size_t n)
{
    return n && dst ? gpt_cuda_download(dst, src, n * sizeof(float)) : GPT_OK;
}

gpt_status gpt_cuda_optim_download(gpt_cuda_optim *d, struct optim_set *o)
{
    int i;
    gpt_status st = GPT_OK;
    if (!d || !o) return GPT_ERR_NULL;
    for (i = 0; i < o->n_slots && st == GPT_OK; i++) {
        optim_slot *s = &o->slots[i];
        size_t n = s->t.rows * s->t.cols;
        if (s->kind == OPTIM_ADAMW) {
            st = dn(s->adamw.m, d->slots[i].m, n);
            if (st == GPT_OK) st = dn(s->adamw.v, d->slots[i].v, n);
        } else if (s->kind == OPTIM_MUON) {
            st = dn(s->muon.momentum, d->slots[i].mom, n);
        } else if (s->kind == OPTIM_ROWNORM) {
            st = dn(s->rownorm.B, d->slots[i].B, n);
            rn_rownorm_sync(&s->rownorm); /* B was written directly */
        }
    }
    if (st == GPT_OK && o->head_step && o->head_slot >= 0)
        st = dn(o->head_step, d->head_step, o->slots[o->head_slot].t.rows * o->slots[o->head_slot].t.cols);
    return st;
}

const float *gpt_cuda_optim_head_step(const gpt_cuda_optim *d)
{
    return d ? d->head_step : NULL;
}

/* ---- gpt_optimizer on the device (optim.h) ------------------------------------------------ */

typedef struct cuda_optimizer {
    gpt_optimizer base;
    gpt_cuda_optim *d;
} cuda_optimizer;

static gpt_status dev_reduce(gpt_optimizer *go, double scale, char *err, size_t errlen)
{
    gpt_backend *be = go->be;
    float *dg = gpt_cuda_device_grads(be);
    gpt_status st;
    if (scale != 1.0 && (st = gpt_cuda_scale(be, dg, be->layout.n_params, scale)) != GPT_OK)
        return gpt_fail(err, errlen, st, "cannot scale the gradients");
    if (go->comm->size > 1 && (st = go->comm->ops->allreduce_f32(go->comm, dg, be->layout.n_params)) != GPT_OK)
        return gpt_fail(err, errlen, st, "gradient all-reduce failed");
    return GPT_OK;
}

static gpt_status dev_step(gpt_optimizer *go, long step, long total, char *err, size_t errlen)
{
    return gpt_cuda_optim_step(((cuda_optimizer *)go)->d, go->set, step, total, err, errlen);
}

static gpt_status dev_share(gpt_optimizer *go, char *err, size_t errlen)
{
    optim_set *o = go->set;
    gpt_status st;
    if (o->n_segs > 0 && (st = go->comm->ops->share(go->comm, gpt_cuda_device_params(go->be), o->segs, o->n_segs)) != GPT_OK)
        return gpt_fail(err, errlen, st, "parameter exchange failed");
    return GPT_OK;
}

/* S into pinned host memory (a pageable destination would be staged by the driver: a second
 * copy of V x d floats every update); o->head_step (the checkpoint's) is written by download */
static const float *dev_head_step(gpt_optimizer *go)
{
    optim_set *o = go->set;
    gpt_cuda_optim *d = ((cuda_optimizer *)go)->d;
    size_t n = o->slots[o->head_slot].t.rows * o->slots[o->head_slot].t.cols;
    if (gpt_cuda_download(d->h_step, gpt_cuda_optim_head_step(d), n * sizeof(float)) != GPT_OK) return NULL;
    return d->h_step;
}

static gpt_status dev_upload(gpt_optimizer *go) { return gpt_cuda_optim_upload(((cuda_optimizer *)go)->d, go->set); }

static gpt_status dev_download(gpt_optimizer *go) { return gpt_cuda_optim_download(((cuda_optimizer *)go)->d, go->set); }

static void dev_destroy(gpt_optimizer *go)
{
    gpt_cuda_optim_free(((cuda_optimizer *)go)->d);
    free(go);
}

static const gpt_optimizer_ops cuda_optimizer_ops = {
    "cuda", 0, dev_reduce, dev_step, dev_share, dev_head_step, dev_upload, dev_download, dev_destroy,
};

/* the host implementation instead, with the reason */
static gpt_status host_instead(const gpt_optimizer_env *env, gpt_optimizer **out, char *note, size_t notelen, char *err,
                               size_t errlen, const char *why)
{
    if (note && notelen) snprintf(note, notelen, "%s", why);
    return gpt_host_optimizer_create(env, 1, out, err, errlen);
}

gpt_status gpt_cuda_create_optimizer(const gpt_optimizer_env *env, gpt_optimizer **out, char *note, size_t notelen,
                                     char *err, size_t errlen)
{
    cuda_optimizer *co;
    gpt_cuda_optim *d = NULL;
    char why[512];
    gpt_comm *comm;
    if (!env || !env->be || !env->set || !env->comm || !out)
        return gpt_fail(err, errlen, GPT_ERR_NULL, "optimizer: NULL argument");
    if (env->host_only) return gpt_host_optimizer_create(env, 1, out, err, errlen);
    if (env->set->head_sharded)
        return host_instead(env, out, note, notelen, err, errlen, "the sharded RowNorm head has no device version");
    comm = env->dcomm ? env->dcomm : env->comm;
    if (env->comm->size > 1 && (!env->dcomm || !env->dcomm->on_device))
        return host_instead(env, out, note, notelen, err, errlen, "no device communicator: build train_cuda_nccl");
    if (gpt_cuda_optim_create(env->be, env->set, &d, why, sizeof why) != GPT_OK)
        return host_instead(env, out, note, notelen, err, errlen, why);
    co = (cuda_optimizer *)calloc(1, sizeof *co);
    if (!co) {
        gpt_cuda_optim_free(d);
        return gpt_fail(err, errlen, GPT_ERR_NOMEM, "out of memory");
    }
    co->base.ops = &cuda_optimizer_ops;
    co->base.set = env->set;
    co->base.be = env->be;
    co->base.comm = comm;
    co->d = d;
    *out = &co->base;
    return GPT_OK;
}
