/* optim.c - the trainer's optimizer set (see optim.h). */
#include "optim.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

optim_recipe optim_default(optim_head_kind head)
{
    optim_recipe r;
    memset(&r, 0, sizeof r);
    r.head = head;
    r.block = OPTIM_BLOCK_MUON;
    r.cap = MUON_CAP_OFF;
    r.ns_steps = 5;
    r.ns_every = OPTIM_NS_AUTO_EVERY;
    /* The paper's backbone rate is 8e-3 at 190M parameters; the tiny demo models (d = 64..128)
     * train faster at muon.h's default 0.02 (measured on the demo config, see README.md). */
    r.muon_lr = 0.02;
    r.muon_beta = 0.95;
    r.muon_wd = 0.1;
    r.embed_lr = 4e-3;
    r.embed_beta1 = 0.9;
    r.embed_beta2 = 0.95;
    r.embed_eps = 1e-10;
    r.embed_wd = 0.0;
    switch (head) {
    case OPTIM_ROWNORM: /* SPEC §1.5: beta 0.95, eps 1e-8, lambda 0, lr 3.2e-3 */
        r.head_lr = 3.2e-3, r.head_beta1 = 0.95, r.head_beta2 = 0.0, r.head_eps = 1e-8, r.head_wd = 0.0;
        break;
    case OPTIM_MUON:
        r.head_lr = r.muon_lr, r.head_beta1 = 0.95, r.head_beta2 = 0.0, r.head_eps = 0.0, r.head_wd = 0.1;
        break;
    case OPTIM_ADAMW:
    default: /* SPEC §1.6: betas (0.9, 0.999), eps 1e-10, wd 0.1, lr 4e-3 */
        r.head = OPTIM_ADAMW;
        r.head_lr = 4e-3, r.head_beta1 = 0.9, r.head_beta2 = 0.999, r.head_eps = 1e-10, r.head_wd = 0.1;
        break;
    }
    r.warmup_frac = 0.1;
    r.final_frac = 0.1;
    r.clip = 1.0;
    return r;
}

const char *optim_head_name(optim_head_kind k)
{
    return k == OPTIM_ROWNORM ? "rownorm" : k == OPTIM_MUON ? "muon" : "adamw";
}

const char *optim_block_name(optim_block_kind k)
{
    return k == OPTIM_BLOCK_MUOWN ? "muown" : k == OPTIM_BLOCK_NORMUON ? "normuon" : "muon";
}

int optim_block_parse(const char *s, optim_block_kind *out)
{
    if (strcmp(s, "muon") == 0) *out = OPTIM_BLOCK_MUON;
    else if (strcmp(s, "muown") == 0) *out = OPTIM_BLOCK_MUOWN;
    else if (strcmp(s, "normuon") == 0) *out = OPTIM_BLOCK_NORMUON;
    else return 0;
    return 1;
}

int optim_head_parse(const char *s, optim_head_kind *out)
{
    if (strcmp(s, "adamw") == 0) *out = OPTIM_ADAMW;
    else if (strcmp(s, "rownorm") == 0) *out = OPTIM_ROWNORM;
    else if (strcmp(s, "muon") == 0) *out = OPTIM_MUON;
    else return 0;
    return 1;
}

double optim_lr_factor(const optim_recipe *r, long step, long total)
{
    const double pi = 3.14159265358979323846;
    long warm, span;
    double p;
    if (total < 1) return 1.0;
    warm = (long)ceil(r->warmup_frac * (double)total);
    if (step < warm) return (double)(step + 1) / (double)warm;
    span = total - 1 - warm;
    p = span > 0 ? (double)(step - warm) / (double)span : 1.0;
    if (p > 1.0) p = 1.0;
    return r->final_frac + (1.0 - r->final_frac) * 0.5 * (1.0 + cos(pi * p));
}

/* ---- creation ----------------------------------------------------------------------------- */

static muon_config block_muon_config(const optim_recipe *r, double lr, double beta, double wd, muon_cap_mode cap)
{
    muon_config c = muon_default();
    c.lr = lr;
    c.momentum = beta;
    c.weight_decay = wd;
    c.nesterov = 1;
    c.momentum_form = MUON_MOMENTUM_EMA;
    c.scale = MUON_SCALE_ORIGINAL;
    c.ns = muon_ns_preset(MUON_NS_JORDAN, r->ns_steps == OPTIM_NS_AUTO ? OPTIM_NS_AUTO_START : r->ns_steps);
    c.ns.precision = r->ns_precision;
    c.cap = cap;
    return c;
}

/* A block matrix's recipe switches: NorMuon, and the per-head cut of the attention matrices
 * (rows = output features, y = x W^T: Q, K, V's rows are the heads' outputs, O's columns the
 * heads' inputs; model.h). which: the block matrix's place in its layer (GPT_WQ, ...). */
static void block_switches(muon_config *c, const optim_recipe *r, const gpt_config *model, int which)
{
    c->normuon = r->block == OPTIM_BLOCK_NORMUON;
    if (r->ns_per_head && model->n_heads > 1) {
        if (which == GPT_WQ || which == GPT_WK || which == GPT_WV) c->split_rows = (size_t)model->n_heads;
        else if (which == GPT_WO) c->split_cols = (size_t)model->n_heads;
    }
}

/* The optimizer recipe r gives a tensor of kind k. */
static optim_kind kind_for(const optim_recipe *r, gpt_tensor_kind k)
{
    if (k == GPT_TENSOR_EMBEDDING) return OPTIM_ADAMW;
    if (k == GPT_TENSOR_BLOCK_MATRIX) return r->block == OPTIM_BLOCK_MUOWN ? OPTIM_MUOWN : OPTIM_MUON;
    return r->head == OPTIM_ROWNORM || r->head == OPTIM_MUON ? r->head : OPTIM_ADAMW; /* the head's choice is its rule */
}

/* A slot's rule as checkpoints number it (version 1 wrote 0 AdamW, 1 Muon, 2 Muown, 3 RowNorm: the
 * file's numbers, kept apart from optim_kind's order). */
static uint64_t kind_code(optim_kind k)
{
    static const uint64_t code[4] = {0, 3, 1, 2}; /* by optim_kind: ADAMW, ROWNORM, MUON, MUOWN */
    return code[k];
}

/* A failed muon.h / rownorm.h call as a gpt_status: a NULL, a size and out of memory as such,
 * a NaN/Inf or a result out of float range GPT_ERR_RANGE, anything else (a parameter outside
 * its domain, an alias, a phase) GPT_ERR_DOMAIN. */
static gpt_status from_muon(muon_status ms)
{
    switch (ms) {
    case MUON_OK: return GPT_OK;
    case MUON_ERR_NULL: return GPT_ERR_NULL;
    case MUON_ERR_SIZE: return GPT_ERR_SIZE;
    case MUON_ERR_NOMEM: return GPT_ERR_NOMEM;
    case MUON_ERR_NONFINITE:
    case MUON_ERR_RANGE: return GPT_ERR_RANGE;
    default: return GPT_ERR_DOMAIN;
    }
}
gpt_status optim_rn_status(rn_status rs)
{
    switch (rs) {
    case RN_OK: return GPT_OK;
    case RN_ERR_NULL: return GPT_ERR_NULL;
    case RN_ERR_SIZE: return GPT_ERR_SIZE;
    case RN_ERR_NOMEM: return GPT_ERR_NOMEM;
    case RN_ERR_NONFINITE: return GPT_ERR_RANGE;
    default: return GPT_ERR_DOMAIN;
    }
}

int optim_owns(const optim_set *o, int i)
{
    return !o->owner || o->owner[i] < 0 || o->owner[i] == o->rank;
}

gpt_status optim_create(optim_set *o, const optim_recipe *r, const gpt_config *model, const float *params,
                        char *err, size_t errlen)
{
    return optim_create_dist(o, r, model, params, NULL, err, errlen);
}

/* Owners of the block matrices (muon_assign_owners over the Muon / Muown slots). */
static gpt_status assign_owners(optim_set *o, char *err, size_t errlen)
{
    size_t *rows = (size_t *)malloc((size_t)o->n_slots * sizeof *rows);
    size_t *cols = (size_t *)malloc((size_t)o->n_slots * sizeof *cols);
    int *idx = (int *)malloc((size_t)o->n_slots * sizeof *idx), *own = (int *)malloc((size_t)o->n_slots * sizeof *own);
    int i, n = 0;
    gpt_status rc = GPT_OK;
    muon_status ms;
    if (!rows || !cols || !idx || !own) {
        rc = gpt_fail(err, errlen, GPT_ERR_NOMEM, "optimizer: out of memory");
        goto out;
    }
    for (i = 0; i < o->n_slots; i++)
        if (o->slots[i].t.kind == GPT_TENSOR_BLOCK_MATRIX) rows[n] = o->slots[i].t.rows, cols[n] = o->slots[i].t.cols, idx[n++] = i;
    if (n == 0) goto out;
    ms = muon_assign_owners(rows, cols, (size_t)n, o->nranks, own, o->load);
    if (ms != MUON_OK) {
        rc = gpt_fail(err, errlen, from_muon(ms), "optimizer: muon_assign_owners failed: %s", muon_status_string(ms));
        goto out;
    }
    for (i = 0; i < n; i++) o->owner[idx[i]] = own[i];
out:
    free(rows), free(cols), free(idx), free(own);
    return rc;
}

/* The segments share() completes after a step: every owned matrix, then the head's row shards;
 * and the head step S's row shards. */
static int build_segments(optim_set *o)
{
    int i, r, n = 0;
    size_t d = (size_t)o->model.d_model, V = (size_t)o->model.vocab_size;
    o->segs = (gpt_comm_segment *)calloc((size_t)(o->n_slots + o->nranks), sizeof *o->segs);
    o->step_segs = (gpt_comm_segment *)calloc((size_t)o->nranks, sizeof *o->step_segs);
    if (!o->segs || !o->step_segs) return -1;
    for (i = 0; i < o->n_slots; i++)
        if (o->owner[i] >= 0) {
            o->segs[n].offset = o->slots[i].t.offset;
            o->segs[n].count = o->slots[i].t.rows * o->slots[i].t.cols;
            o->segs[n++].owner = o->owner[i];
        }
    if (o->head_sharded)
        for (r = 0; r < o->nranks; r++) {
            size_t lo, hi;
            gpt_comm_split(V, r, o->nranks, &lo, &hi);
            o->segs[n].offset = o->slots[o->head_slot].t.offset + lo * d;
            o->segs[n].count = (hi - lo) * d;
            o->segs[n++].owner = r;
            o->step_segs[r].offset = lo * d;
            o->step_segs[r].count = (hi - lo) * d;
            o->step_segs[r].owner = r;
        }
    o->n_segs = n;
    o->n_step_segs = o->head_sharded ? o->nranks : 0;
    return 0;
}

gpt_status optim_lr_wd_check(const char *lr_what, double lr, const char *wd_what, double wd, char *err, size_t errlen)
{
    if (lr <= MUON_LR_MAX && lr * wd <= 1.0) return GPT_OK;
    if (lr > MUON_LR_MAX)
        return gpt_fail(err, errlen, GPT_ERR_DOMAIN, "%s %g is above the largest rate, %g", lr_what, lr, MUON_LR_MAX);
    return gpt_fail(err, errlen, GPT_ERR_DOMAIN, "%s %g with %s %g: lr x weight decay = %.6g must be <= 1 (the "
                    "decoupled decay multiplies the weights by 1 - lr x weight decay, which must stay in [0, 1])",
                    lr_what, lr, wd_what, wd, lr * wd);
}

gpt_status optim_recipe_check(const optim_recipe *r, int with_head, char *err, size_t errlen)
{
    gpt_status st = optim_lr_wd_check("--lr-muon", r->muon_lr, "--wd-muon", r->muon_wd, err, errlen);
    if (st == GPT_OK) st = optim_lr_wd_check("--lr-embed", r->embed_lr, "--wd-embed", r->embed_wd, err, errlen);
    if (st == GPT_OK && with_head)
        st = optim_lr_wd_check("--lr-head", r->head_lr, "--wd-head", r->head_wd, err, errlen);
    return st;
}

gpt_status optim_create_dist(optim_set *o, const optim_recipe *r, const gpt_config *model, const float *params,
                             const optim_dist *dist, char *err, size_t errlen)
{
    gpt_layout lay = gpt_layout_of(model);
    int i;
    char why[384];
    gpt_status st;
    memset(o, 0, sizeof *o);
    if ((st = optim_recipe_check(r, 1, why, sizeof why)) != GPT_OK) return gpt_fail(err, errlen, st, "optimizer: %s",
                                                                                    why);
    o->recipe = *r;
    o->model = *model;
    o->n_slots = lay.n_tensors;
    o->rank = dist && dist->nranks > 1 ? dist->rank : 0;
    o->nranks = dist && dist->nranks > 1 ? dist->nranks : 1;
    o->comm = dist ? dist->comm : NULL;
    o->slots = (optim_slot *)calloc((size_t)lay.n_tensors, sizeof *o->slots);
    o->grad_ptrs = (float **)calloc((size_t)lay.n_tensors, sizeof *o->grad_ptrs);
    o->grad_sizes = (size_t *)calloc((size_t)lay.n_tensors, sizeof *o->grad_sizes);
    o->muon_layers = (muon_layer *)calloc((size_t)lay.n_tensors, sizeof *o->muon_layers);
    o->muon_layer_slot = (int *)calloc((size_t)lay.n_tensors, sizeof *o->muon_layer_slot);
    o->head_step = (float *)calloc(lay.n_params - lay.lm_head, sizeof(float));
    o->owner = (int *)malloc((size_t)lay.n_tensors * sizeof *o->owner);
    o->load = (double *)calloc((size_t)o->nranks, sizeof *o->load);
    if (!o->slots || !o->grad_ptrs || !o->grad_sizes || !o->muon_layers || !o->muon_layer_slot || !o->head_step ||
        !o->owner || !o->load)
        goto nomem;
    for (i = 0; i < lay.n_tensors; i++) o->owner[i] = -1;
    for (i = 0; i < lay.n_tensors; i++) {
        optim_slot *s = &o->slots[i];
        gpt_tensor_info(model, i, &s->t);
        o->grad_sizes[i] = s->t.rows * s->t.cols;
        s->kind = kind_for(r, s->t.kind);
        if (s->t.kind == GPT_TENSOR_EMBEDDING) {
            s->peak_lr = r->embed_lr;
            s->adamw_cfg.beta1 = r->embed_beta1, s->adamw_cfg.beta2 = r->embed_beta2;
            s->adamw_cfg.eps = r->embed_eps, s->adamw_cfg.weight_decay = r->embed_wd;
        } else if (s->t.kind == GPT_TENSOR_BLOCK_MATRIX) {
            s->peak_lr = r->muon_lr;
            s->muon_cfg = block_muon_config(r, r->muon_lr, r->muon_beta, r->muon_wd, r->cap);
            block_switches(&s->muon_cfg, r, model, (i - 1) % GPT_N_LAYER_TENSORS);
            if (s->kind == OPTIM_MUOWN) {
                s->muown_cfg = muown_default();
                s->muown_cfg.muon = s->muon_cfg;
                s->muown_cfg.muon.cap = MUON_CAP_OFF;
                s->muown_cfg.mag_lr = r->muon_lr;
            }
        } else {
            o->head_slot = i;
            s->peak_lr = r->head_lr;
            if (s->kind == OPTIM_ROWNORM) {
                s->rownorm_cfg = rn_rownorm_default();
                s->rownorm_cfg.beta = r->head_beta1;
                s->rownorm_cfg.eps = r->head_eps;
                s->rownorm_cfg.weight_decay = r->head_wd;
            } else if (s->kind == OPTIM_MUON) {
                s->muon_cfg = block_muon_config(r, r->head_lr, r->head_beta1, r->head_wd, MUON_CAP_OFF);
            } else {
                s->adamw_cfg.beta1 = r->head_beta1, s->adamw_cfg.beta2 = r->head_beta2;
                s->adamw_cfg.eps = r->head_eps, s->adamw_cfg.weight_decay = r->head_wd;
            }
        }
    }
    o->head_lo = 0, o->head_hi = o->slots[o->head_slot].t.rows;
    if (o->nranks > 1 && dist->split_muon && (st = assign_owners(o, err, errlen)) != GPT_OK) {
        optim_free(o);
        return st;
    }
    if (o->nranks > 1 && dist->shard_head) {
        if (r->head != OPTIM_ROWNORM) {
            optim_free(o);
            return gpt_fail(err, errlen, GPT_ERR_CONFIG,
                            "optimizer: a sharded head needs the RowNorm head (--head rownorm)");
        }
        if ((size_t)o->nranks > o->slots[o->head_slot].t.rows) {
            optim_free(o);
            return gpt_fail(err, errlen, GPT_ERR_SIZE, "optimizer: %d ranks for a head of %zu rows", o->nranks,
                            o->slots[o->head_slot].t.rows);
        }
        o->head_sharded = 1;
        gpt_comm_split(o->slots[o->head_slot].t.rows, o->rank, o->nranks, &o->head_lo, &o->head_hi);
        o->xbuf = (double *)calloc(rn_rownorm_shard_exchange_size(o->slots[o->head_slot].t.cols), sizeof(double));
        if (!o->xbuf) goto nomem;
    }
    if (o->nranks > 1 && build_segments(o)) goto nomem;
    for (i = 0; i < lay.n_tensors; i++) {
        optim_slot *s = &o->slots[i];
        size_t n = s->t.rows * s->t.cols;
        gpt_status rc = GPT_OK;
        if (!optim_owns(o, i)) continue; /* its state lives on its owner */
        switch (s->kind) {
        case OPTIM_ADAMW: rc = from_muon(muon_adamw_init(&s->adamw, n)); break;
        case OPTIM_MUON: /* stepped from one shared workspace (muon_step_layers_ws, below) */
            rc = from_muon(muon_init_ex(&s->muon, s->t.rows, s->t.cols, MUON_INIT_NO_WORKSPACE));
            break;
        case OPTIM_MUOWN:
            rc = from_muon(muown_init(&s->muown, params + s->t.offset, s->t.rows, s->t.cols, s->t.cols));
            break;
        case OPTIM_ROWNORM:
            rc = optim_rn_status(
                rn_rownorm_init(&s->rownorm, i == o->head_slot ? o->head_hi - o->head_lo : s->t.rows, s->t.cols));
            break;
        }
        if (rc != GPT_OK) {
            optim_free(o);
            return gpt_fail(err, errlen, rc, "optimizer: cannot create the state of %s (out of memory, or a zero row "
                                             "for Muown)", s->t.name);
        }
    }
    { /* one workspace for every Muon matrix: each thread's slice for the one-matrix-per-thread
         region, or the largest full step (instead of a workspace per state) */
        int n = 0;
        for (i = 0; i < lay.n_tensors; i++)
            if (o->slots[i].kind == OPTIM_MUON && optim_owns(o, i)) {
                memset(&o->muon_layers[n], 0, sizeof o->muon_layers[n]);
                o->muon_layers[n].state = &o->slots[i].muon;
                o->muon_layers[n++].cfg = &o->slots[i].muon_cfg;
            }
        if (n) {
            o->muon_ws_bytes = muon_step_layers_workspace_size(o->muon_layers, (size_t)n, 0);
            if (!o->muon_ws_bytes) { /* muon.h gives no size for a config outside its domain */
                optim_free(o);
                return gpt_fail(err, errlen, GPT_ERR_CONFIG, "optimizer: muon.h refuses the block matrices' config "
                                "(no workspace size): a rate, momentum or decay outside its domain");
            }
            o->muon_ws = malloc(o->muon_ws_bytes);
            if (!o->muon_ws) goto nomem;
        }
    }
    return GPT_OK;
nomem:
    optim_free(o);
    return gpt_fail(err, errlen, GPT_ERR_NOMEM, "optimizer: out of memory");
}

void optim_free(optim_set *o)
{
    int i;
    if (!o) return;
    for (i = 0; o->slots && i < o->n_slots; i++) {
        muon_adamw_free(&o->slots[i].adamw);
        muon_free(&o->slots[i].muon);
        muown_free(&o->slots[i].muown);
        rn_rownorm_free(&o->slots[i].rownorm);
    }
    free(o->slots);
    free(o->grad_ptrs);
    free(o->grad_sizes);
    free(o->muon_layers);
    free(o->muon_layer_slot);
    free(o->muon_ws);
    free(o->head_step);
    free(o->owner);
    free(o->load);
    free(o->segs);
    free(o->step_segs);
    free(o->xbuf);
    memset(o, 0, sizeof *o);
}

/* ---- the step ----------------------------------------------------------------------------- */

int optim_first_nonfinite(const gpt_config *model, const float *block)
{
    gpt_layout lay = gpt_layout_of(model);
    int i;
    for (i = 0; i < lay.n_tensors; i++) {
        gpt_tensor t;
        size_t k, n;
        gpt_tensor_info(model, i, &t);
        n = t.rows * t.cols;
        for (k = 0; k < n; k++)
            if (!isfinite(block[t.offset + k])) return i;
    }
    return -1;
}

/* RowNorm on this rank's vocabulary rows of the head (SPEC 1.5 on the whole head: the column
 * statistics of the projections come from every rank through o->comm). */
static gpt_status rownorm_sharded_step(optim_set *o, optim_slot *s, float *W, const float *G, char *err, size_t errlen)
{
    size_t d = s->t.cols, off = o->head_lo * d, n = 0;
    gpt_comm *c = o->comm ? o->comm : gpt_comm_single();
    gpt_status cs;
    rn_status rs = rn_rownorm_shard_begin(&s->rownorm, &s->rownorm_cfg, G + off, d, o->xbuf, &n);
    if (rs != RN_OK)
        return gpt_fail(err, errlen, optim_rn_status(rs), "RowNorm (sharded) on %s failed: %s", s->t.name,
                        rn_status_string(rs));
    if ((cs = c->ops->allreduce_f64(c, o->xbuf, n)) != GPT_OK)
        return gpt_fail(err, errlen, cs, "RowNorm (sharded): all-reduce failed");
    rs = rn_rownorm_shard_middle(&s->rownorm, G + off, d, o->xbuf, o->xbuf, &n);
    if (rs != RN_OK)
        return gpt_fail(err, errlen, optim_rn_status(rs), "RowNorm (sharded) on %s failed: %s", s->t.name,
                        rn_status_string(rs));
    if (n && (cs = c->ops->allreduce_f64(c, o->xbuf, n)) != GPT_OK)
        return gpt_fail(err, errlen, cs, "RowNorm (sharded): all-reduce failed");
    rs = rn_rownorm_shard_finish(&s->rownorm, W + off, d, n ? o->xbuf : NULL, o->head_step + off, d);
    if (rs != RN_OK)
        return gpt_fail(err, errlen, optim_rn_status(rs), "RowNorm (sharded) on %s failed: %s", s->t.name,
                        rn_status_string(rs));
    return GPT_OK;
}

/* Every Muon matrix this rank owns in one muon_step_layers call: one parallel region for all of
 * them (one matrix per thread, the costliest first) instead of a few per product of each, the
 * same bits as a muon_step per matrix (muon.h). */
static gpt_status muon_layers_step(optim_set *o, float *params, const float *grads, double factor, char *err,
                                   size_t errlen)
{
    int i, n = 0;
    muon_status ms;
    for (i = 0; i < o->n_slots; i++) {
        optim_slot *s = &o->slots[i];
        muon_layer *L = &o->muon_layers[n];
        if (s->kind != OPTIM_MUON || !optim_owns(o, i)) continue;
        s->muon_cfg.lr = s->peak_lr * factor;
        memset(L, 0, sizeof *L);
        L->state = &s->muon;
        L->cfg = &s->muon_cfg;
        L->W = params + s->t.offset;
        L->G = grads + s->t.offset;
        L->ldw = L->ldg = L->lds = s->t.cols;
        L->step_out = i == o->head_slot ? o->head_step : NULL; /* the head's stepper writes its S */
        o->muon_layer_slot[n++] = i;
    }
    if (n == 0) return GPT_OK;
    ms = muon_step_layers_ws(o->muon_layers, (size_t)n, 0, o->muon_ws, o->muon_ws_bytes);
    if (ms == MUON_OK) return GPT_OK;
    for (i = 0; i < n; i++)
        if (o->muon_layers[i].status != MUON_OK)
            return gpt_fail(err, errlen, from_muon(o->muon_layers[i].status), "Muon step on %s failed: %s",
                            o->slots[o->muon_layer_slot[i]].t.name, muon_status_string(o->muon_layers[i].status));
    return gpt_fail(err, errlen, from_muon(ms), "Muon step failed: %s", muon_status_string(ms));
}

/* ---- the Newton-Schulz budget (--ns-steps auto) ------------------------------------------ */

/* Quantiles q[0..nq-1] of the singular values of M / ||M||_F (rows x cols, ld cols) into out,
 * from the Gram path (gram: cheap, for the budget) or the exact Jacobi (the --sv diagnostic):
 * 0, 1 when M is zero (no spectrum), -1 when the values cannot be computed. Allocates. */
static int momentum_quantiles(const float *M, size_t rows, size_t cols, int gram, const double *q, double *out, int nq)
{
    size_t k = rows < cols ? rows : cols, i;
    double *sv = (double *)malloc(k * sizeof *sv), ss = 0.0;
    int rc = 0, j;
    if (!sv) return -1;
    if ((gram ? muon_singular_values_gram(M, rows, cols, cols, sv) : muon_singular_values(M, rows, cols, cols, sv)) !=
        MUON_OK)
        rc = -1;
    for (i = 0; rc == 0 && i < k; i++) ss += sv[i] * sv[i];
    if (rc == 0 && !(ss > 0.0)) rc = 1;
    for (i = 0; rc == 0 && i < k; i++) sv[i] /= sqrt(ss);
    for (j = 0; rc == 0 && j < nq; j++)
        if (muon_sv_quantile(sv, k, q[j], &out[j]) != MUON_OK) rc = -1;
    free(sv);
    return rc;
}

int optim_ns_budget_steps(const float *M, size_t rows, size_t cols, double *q50)
{
    const double q = OPTIM_NS_AUTO_Q;
    muon_ns_config jordan = muon_ns_preset(MUON_NS_JORDAN, OPTIM_NS_AUTO_START);
    int rc, steps;
    *q50 = 0.0;
    rc = momentum_quantiles(M, rows, cols, 1, &q, q50, 1);
    if (rc != 0) return rc < 0 ? -1 : 0;
    steps = muon_ns_min_steps(&jordan, *q50, OPTIM_NS_AUTO_TAU, OPTIM_NS_AUTO_MAX);
    return steps > 0 ? steps : OPTIM_NS_AUTO_MAX;
}

int optim_ns_budget(optim_set *o, long step, char *err, size_t errlen)
{
    int i, bad = -1;
    if (o->recipe.ns_steps != OPTIM_NS_AUTO || o->recipe.ns_every < 1 || step <= 0 || step % o->recipe.ns_every != 0)
        return 0;
    /* one matrix per thread: each spectrum is serial, and independent of the thread count */
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(muon_team(0))
#endif
    for (i = 0; i < o->n_slots; i++) {
        optim_slot *s = &o->slots[i];
        const float *M = s->kind == OPTIM_MUON ? s->muon.momentum : s->kind == OPTIM_MUOWN ? s->muown.momentum : NULL;
        double q50 = 0.0;
        int k;
        if (!M || !optim_owns(o, i)) continue;
        k = optim_ns_budget_steps(M, s->t.rows, s->t.cols, &q50);
        if (k < 0) {
#ifdef _OPENMP
#pragma omp critical(optim_ns_budget_bad)
#endif
            if (bad < 0 || i < bad) bad = i;
            continue;
        }
        if (k == 0) continue; /* a zero momentum: keep the steps it has */
        s->ns_k = k;
        s->ns_q50 = q50;
        if (s->kind == OPTIM_MUON) s->muon_cfg.ns.steps = k;
        else s->muown_cfg.muon.ns.steps = k;
    }
    if (bad >= 0) {
        (void)gpt_fail(err, errlen, GPT_ERR_BACKEND, "Newton-Schulz budget: the spectrum of %s failed",
                       o->slots[bad].t.name);
        return -1;
    }
    return 1;
}

gpt_status optim_step(optim_set *o, float *params, float *grads, long step, long total, char *err, size_t errlen)
{
    double factor = optim_lr_factor(&o->recipe, step, total), norm = 0.0;
    muon_status ms;
    gpt_status st;
    int i;
    for (i = 0; i < o->n_slots; i++) o->grad_ptrs[i] = grads + o->slots[i].t.offset;
    /* clip gradients (never the orthogonalised updates: SPEC §4); with clipping off the norm is
     * still measured for the log */
    ms = muon_clip_grad_norm(o->grad_ptrs, o->grad_sizes, (size_t)o->n_slots,
                             o->recipe.clip > 0.0 ? o->recipe.clip : HUGE_VAL, &norm);
    if (ms == MUON_ERR_NONFINITE) {
        int bad = optim_first_nonfinite(&o->model, grads);
        return gpt_fail(err, errlen, GPT_ERR_RANGE, "non-finite gradient in tensor %s",
                        bad >= 0 ? o->slots[bad].t.name : "?");
    }
    if (ms != MUON_OK) return gpt_fail(err, errlen, from_muon(ms), "gradient clipping failed: %s",
                                       muon_status_string(ms));
    o->last_grad_norm = norm;
    o->last_lr_factor = factor;
    if (optim_ns_budget(o, step, err, errlen) < 0) return GPT_ERR_BACKEND;
    if ((st = muon_layers_step(o, params, grads, factor, err, errlen)) != GPT_OK) return st;
    for (i = 0; i < o->n_slots; i++) {
        optim_slot *s = &o->slots[i];
        float *W = params + s->t.offset;
        const float *G = grads + s->t.offset;
        double lr = s->peak_lr * factor;
        size_t ld = s->t.cols;
        int is_head = i == o->head_slot;
        float *S = is_head ? o->head_step : NULL; /* the head's stepper writes its step S */
        const char *what = NULL;
        rn_status rs = RN_OK;
        ms = MUON_OK;
        if (!optim_owns(o, i)) continue; /* stepped by its owner; share() brings the result */
        switch (s->kind) {
        case OPTIM_ADAMW:
            s->adamw_cfg.lr = lr;
            ms = muon_adamw_step(&s->adamw, &s->adamw_cfg, W, G, S);
            what = "AdamW";
            break;
        case OPTIM_MUON: /* stepped above, all in one muon_step_layers call */
            break;
        case OPTIM_MUOWN:
            s->muown_cfg.muon.lr = lr;
            s->muown_cfg.mag_lr = lr;
            ms = muown_step(&s->muown, &s->muown_cfg, W, ld, G, ld, S, ld);
            what = "Muown";
            break;
        case OPTIM_ROWNORM:
            s->rownorm_cfg.lr = lr;
            if (is_head && o->head_sharded) {
                if ((st = rownorm_sharded_step(o, s, W, G, err, errlen)) != GPT_OK) return st;
            } else {
                rs = rn_rownorm_step(&s->rownorm, &s->rownorm_cfg, W, ld, G, ld, S, ld);
            }
            what = "RowNorm";
            break;
        }
        if (ms != MUON_OK)
            return gpt_fail(err, errlen, from_muon(ms), "%s step on %s failed: %s", what, s->t.name,
                            muon_status_string(ms));
        if (rs != RN_OK)
            return gpt_fail(err, errlen, optim_rn_status(rs), "%s step on %s failed: %s", what, s->t.name,
                            rn_status_string(rs));
    }
    return GPT_OK;
}

int optim_momentum_spectrum(const optim_set *o, int slot, optim_spectrum *out)
{
    static const double q[3] = {0.1, 0.5, 0.9};
    const optim_slot *s = &o->slots[slot];
    const float *M = s->kind == OPTIM_MUON ? s->muon.momentum : s->kind == OPTIM_MUOWN ? s->muown.momentum : NULL;
    muon_ns_config jordan = muon_ns_preset(MUON_NS_JORDAN, 5);
    double v[3];
    int rc;
    if (!M) return 1;
    if ((rc = momentum_quantiles(M, s->t.rows, s->t.cols, 0, q, v, 3)) != 0) return rc;
    out->q10 = v[0], out->q50 = v[1], out->q90 = v[2];
    out->ns_steps_q50 = muon_ns_min_steps(&jordan, out->q50, 0.7, 100);
    return 0;
}

/* ---- checkpoint fields -------------------------------------------------------------------- */

void optim_recipe_save(const optim_recipe *r, ckpt_writer *w)
{
    ckpt_put_u64_1(w, "recipe.head", (uint64_t)r->head);
    ckpt_put_u64_1(w, "recipe.block", (uint64_t)r->block);
    ckpt_put_u64_1(w, "recipe.cap", (uint64_t)r->cap);
    ckpt_put_u64_1(w, "recipe.ns_steps", (uint64_t)r->ns_steps);
    ckpt_put_u64_1(w, "recipe.ns_per_head", (uint64_t)r->ns_per_head);
    ckpt_put_u64_1(w, "recipe.ns_every", (uint64_t)r->ns_every);
    ckpt_put_u64_1(w, "recipe.ns_precision", (uint64_t)r->ns_precision);
    ckpt_put_f64_1(w, "recipe.muon_lr", r->muon_lr);
    ckpt_put_f64_1(w, "recipe.muon_beta", r->muon_beta);
    ckpt_put_f64_1(w, "recipe.muon_wd", r->muon_wd);
    ckpt_put_f64_1(w, "recipe.embed_lr", r->embed_lr);
    ckpt_put_f64_1(w, "recipe.embed_beta1", r->embed_beta1);
    ckpt_put_f64_1(w, "recipe.embed_beta2", r->embed_beta2);
    ckpt_put_f64_1(w, "recipe.embed_eps", r->embed_eps);
    ckpt_put_f64_1(w, "recipe.embed_wd", r->embed_wd);
    ckpt_put_f64_1(w, "recipe.head_lr", r->head_lr);
    ckpt_put_f64_1(w, "recipe.head_beta1", r->head_beta1);
    ckpt_put_f64_1(w, "recipe.head_beta2", r->head_beta2);
    ckpt_put_f64_1(w, "recipe.head_eps", r->head_eps);
    ckpt_put_f64_1(w, "recipe.head_wd", r->head_wd);
    ckpt_put_f64_1(w, "recipe.warmup_frac", r->warmup_frac);
    ckpt_put_f64_1(w, "recipe.final_frac", r->final_frac);
    ckpt_put_f64_1(w, "recipe.clip", r->clip);
}

/* The recipe's f64 fields, their places in the recipe and the command line's range for each:
 * finite in [0, hi], with hi itself excluded for the betas. */
typedef struct {
    const char *name;
    size_t offset;
    double hi;
    int hi_open;
} recipe_f64;

#define RECIPE_F64(f, hi, open) {"recipe." #f, offsetof(optim_recipe, f), hi, open}
static const recipe_f64 recipe_f64s[] = {
    RECIPE_F64(muon_lr, 1e30, 0),     RECIPE_F64(muon_beta, 1.0, 1),    RECIPE_F64(muon_wd, 1e30, 0),
    RECIPE_F64(embed_lr, 1e30, 0),    RECIPE_F64(embed_beta1, 1.0, 1),  RECIPE_F64(embed_beta2, 1.0, 1),
    RECIPE_F64(embed_eps, 1e30, 0),   RECIPE_F64(embed_wd, 1e30, 0),    RECIPE_F64(head_lr, 1e30, 0),
    RECIPE_F64(head_beta1, 1.0, 1),   RECIPE_F64(head_beta2, 1.0, 1),   RECIPE_F64(head_eps, 1e30, 0),
    RECIPE_F64(head_wd, 1e30, 0),     RECIPE_F64(warmup_frac, 1.0, 0),  RECIPE_F64(final_frac, 1.0, 0),
    RECIPE_F64(clip, 1e30, 0)};
#undef RECIPE_F64

/* u64 field `name` into *out, which must be in [lo, hi]. */
static gpt_status recipe_u64(const ckpt_reader *rd, const char *name, uint64_t lo, uint64_t hi, uint64_t *out,
                             char *err, size_t errlen)
{
    gpt_status st = ckpt_get_u64(rd, name, out, 1, err, errlen);
    if (st != GPT_OK) return st;
    if (*out < lo || *out > hi)
        return gpt_fail(err, errlen, GPT_ERR_CORRUPT, "%s: field \"%s\" is %llu, expected %llu..%llu", rd->file, name,
                        (unsigned long long)*out, (unsigned long long)lo, (unsigned long long)hi);
    return GPT_OK;
}

gpt_status optim_recipe_load(optim_recipe *r, const ckpt_reader *rd, char *err, size_t errlen)
{
    optim_recipe t = *r;
    uint64_t u[6] = {0, 0, 0, 0, 0, 0}, u_every;
    size_t k;
    gpt_status st = recipe_u64(rd, "recipe.head", 0, OPTIM_MUON, &u[0], err, errlen);
    if (st == GPT_OK) st = recipe_u64(rd, "recipe.block", 0, OPTIM_BLOCK_NORMUON, &u[1], err, errlen);
    if (st == GPT_OK) st = recipe_u64(rd, "recipe.cap", 0, MUON_CAP_ALWAYS, &u[2], err, errlen);
    if (st == GPT_OK) st = recipe_u64(rd, "recipe.ns_steps", OPTIM_NS_AUTO, 100, &u[3], err, errlen);
    /* a checkpoint from before per-head NS has no such field: it ran without */
    if (st == GPT_OK && ckpt_has(rd, "recipe.ns_per_head"))
        st = recipe_u64(rd, "recipe.ns_per_head", 0, 1, &u[4], err, errlen);
    /* nor one from before the NS budget: the default period */
    u_every = OPTIM_NS_AUTO_EVERY;
    if (st == GPT_OK && ckpt_has(rd, "recipe.ns_every"))
        st = recipe_u64(rd, "recipe.ns_every", 1, (uint64_t)OPTIM_MAX_STEPS, &u_every, err, errlen);
    /* nor one from before bf16 NS: it ran in fp32 */
    if (st == GPT_OK && ckpt_has(rd, "recipe.ns_precision"))
        st = recipe_u64(rd, "recipe.ns_precision", MUON_NS_FP32, MUON_NS_BF16, &u[5], err, errlen);
    if (st != GPT_OK) return st;
    t.head = (optim_head_kind)u[0];
    t.block = (optim_block_kind)u[1];
    t.cap = (muon_cap_mode)u[2];
    t.ns_steps = (int)u[3];
    t.ns_per_head = (int)u[4];
    t.ns_every = (int)u_every;
    t.ns_precision = (muon_ns_precision)u[5];
    for (k = 0; k < sizeof recipe_f64s / sizeof recipe_f64s[0]; k++) {
        const recipe_f64 *f = &recipe_f64s[k];
        double v;
        if ((st = ckpt_get_f64(rd, f->name, &v, 1, err, errlen)) != GPT_OK) return st;
        if (!(v >= 0.0 && (f->hi_open ? v < f->hi : v <= f->hi)))
            return gpt_fail(err, errlen, GPT_ERR_CORRUPT, "%s: field \"%s\" is %g, expected a number in [0, %g%s",
                            rd->file, f->name, v, f->hi, f->hi_open ? ")" : "]");
        memcpy((char *)&t + f->offset, &v, sizeof v);
    }
    *r = t;
    return GPT_OK;
}

static void field(char *out, size_t cap, const optim_slot *s, const char *what)
{
    snprintf(out, cap, "opt.%s.%s", s->t.name, what);
}

/* The fields of one slot, in optim_save's order. B_full: a sharded head's gathered B (or NULL). */
static void save_slot(const optim_slot *s, ckpt_writer *w, const float *B_full)
{
    char name[96];
    size_t n = s->t.rows * s->t.cols;
    field(name, sizeof name, s, "kind");
    ckpt_put_u64_1(w, name, kind_code(s->kind));
    switch (s->kind) {
    case OPTIM_ADAMW:
        field(name, sizeof name, s, "step"), ckpt_put_u64_1(w, name, (uint64_t)s->adamw.step);
        field(name, sizeof name, s, "m"), ckpt_put_f32(w, name, s->adamw.m, n);
        field(name, sizeof name, s, "v"), ckpt_put_f32(w, name, s->adamw.v, n);
        break;
    case OPTIM_MUON: {
        double cap[2];
        cap[0] = s->muon.cap_sigma, cap[1] = (double)s->muon.cap_valid;
        field(name, sizeof name, s, "step"), ckpt_put_u64_1(w, name, (uint64_t)s->muon.step);
        field(name, sizeof name, s, "momentum"), ckpt_put_f32(w, name, s->muon.momentum, n);
        field(name, sizeof name, s, "cap_u"), ckpt_put_f64(w, name, s->muon.cap_u, s->t.rows);
        field(name, sizeof name, s, "cap_v"), ckpt_put_f64(w, name, s->muon.cap_v, s->t.cols);
        field(name, sizeof name, s, "cap"), ckpt_put_f64(w, name, cap, 2);
        field(name, sizeof name, s, "row_v"), ckpt_put_f64(w, name, s->muon.row_v, s->t.rows);
        if (s->ns_k > 0) field(name, sizeof name, s, "ns_steps"), ckpt_put_u64_1(w, name, (uint64_t)s->ns_k);
        break;
    }
    case OPTIM_MUOWN:
        field(name, sizeof name, s, "step"), ckpt_put_u64_1(w, name, (uint64_t)s->muown.step);
        field(name, sizeof name, s, "g"), ckpt_put_f64(w, name, s->muown.g, s->t.rows);
        field(name, sizeof name, s, "vnorm"), ckpt_put_f64(w, name, s->muown.vnorm, s->t.rows);
        field(name, sizeof name, s, "mag_m"), ckpt_put_f64(w, name, s->muown.mag_m, s->t.rows);
        field(name, sizeof name, s, "mag_v"), ckpt_put_f64(w, name, s->muown.mag_v, s->t.rows);
        field(name, sizeof name, s, "momentum"), ckpt_put_f32(w, name, s->muown.momentum, n);
        if (s->ns_k > 0) field(name, sizeof name, s, "ns_steps"), ckpt_put_u64_1(w, name, (uint64_t)s->ns_k);
        break;
    case OPTIM_ROWNORM:
        field(name, sizeof name, s, "step"), ckpt_put_u64_1(w, name, (uint64_t)s->rownorm.t);
        field(name, sizeof name, s, "B"), ckpt_put_f32(w, name, B_full ? B_full : s->rownorm.B, n);
        break;
    }
}

void optim_save(const optim_set *o, ckpt_writer *w)
{
    int i;
    for (i = 0; i < o->n_slots; i++) save_slot(&o->slots[i], w, NULL);
    ckpt_put_f32(w, "opt.head_step", o->head_step, o->slots[o->head_slot].t.rows * o->slots[o->head_slot].t.cols);
}

gpt_status optim_save_comm(const optim_set *o, ckpt_writer *w, gpt_comm *c, char *err, size_t errlen)
{
    int i, rank = gpt_comm_rank(c), size = gpt_comm_size(c);
    gpt_status cs;
    if (!c || size == 1 || o->nranks == 1) {
        if (rank == 0) optim_save(o, w);
        return GPT_OK;
    }
    for (i = 0; i < o->n_slots; i++) {
        const optim_slot *s = &o->slots[i];
        int owner = o->owner[i];
        if (i == o->head_slot && o->head_sharded) { /* gather B's rows on rank 0 */
            size_t d = s->t.cols, lo, hi;
            int r;
            if (rank != 0) {
                if ((cs = c->ops->send(c, s->rownorm.B, (o->head_hi - o->head_lo) * d * sizeof(float), 0)) != GPT_OK)
                    return gpt_fail(err, errlen, cs, "checkpoint: cannot send the head state to rank 0");
                continue;
            } else {
                float *B = (float *)malloc(s->t.rows * d * sizeof(float));
                if (!B) return gpt_fail(err, errlen, GPT_ERR_NOMEM, "checkpoint: out of memory");
                memcpy(B, s->rownorm.B, (o->head_hi - o->head_lo) * d * sizeof(float));
                for (r = 1; r < size; r++) {
                    gpt_comm_split(s->t.rows, r, size, &lo, &hi);
                    if ((cs = c->ops->recv(c, B + lo * d, (hi - lo) * d * sizeof(float), r)) != GPT_OK) {
                        free(B);
                        return gpt_fail(err, errlen, cs,
                                        "checkpoint: cannot receive the head state of rank %d", r);
                    }
                }
                save_slot(s, w, B);
                free(B);
            }
        } else if (owner <= 0) { /* every rank holds it, or rank 0 does */
            if (rank == 0) save_slot(s, w, NULL);
        } else if (rank == owner) { /* serialise here, send to rank 0 */
            ckpt_writer mine;
            const unsigned char *body;
            uint64_t hdr[2];
            ckpt_writer_init(&mine);
            save_slot(s, &mine, NULL);
            hdr[0] = (uint64_t)ckpt_writer_body(&mine, &body);
            hdr[1] = mine.n_fields;
            if ((cs = c->ops->send(c, hdr, sizeof hdr, 0)) != GPT_OK ||
                (hdr[0] && (cs = c->ops->send(c, body, (size_t)hdr[0], 0)) != GPT_OK)) {
                ckpt_writer_free(&mine);
                return gpt_fail(err, errlen, cs, "checkpoint: cannot send the state of %s to rank 0",
                                s->t.name);
            }
            ckpt_writer_free(&mine);
        } else if (rank == 0) {
            uint64_t hdr[2];
            unsigned char *body;
            if ((cs = c->ops->recv(c, hdr, sizeof hdr, owner)) != GPT_OK)
                return gpt_fail(err, errlen, cs, "checkpoint: cannot receive the state of %s", s->t.name);
            if (hdr[0] == 0)
                return gpt_fail(err, errlen, GPT_ERR_NOMEM, "checkpoint: rank %d could not serialise %s", owner,
                                s->t.name);
            body = (unsigned char *)malloc((size_t)hdr[0]);
            if (!body) return gpt_fail(err, errlen, GPT_ERR_NOMEM, "checkpoint: out of memory");
            if ((cs = c->ops->recv(c, body, (size_t)hdr[0], owner)) != GPT_OK) {
                free(body);
                return gpt_fail(err, errlen, cs, "checkpoint: cannot receive the state of %s", s->t.name);
            }
            ckpt_put_raw(w, body, (size_t)hdr[0], (uint32_t)hdr[1]);
            free(body);
        }
    }
    /* S: every rank has all of it (a sharded head's S is completed by share() each update) */
    if (rank == 0)
        ckpt_put_f32(w, "opt.head_step", o->head_step, o->slots[o->head_slot].t.rows * o->slots[o->head_slot].t.cols);
    return GPT_OK;
}

/* The arrays optim_save writes for a slot of each kind: name, type and size (a slot's
 * rows x cols, rows, cols, or 2 values). */
typedef enum { DIM_ALL, DIM_ROWS, DIM_COLS, DIM_TWO } slot_dim;
typedef struct {
    optim_kind kind;
    const char *what;
    ckpt_type type;
    slot_dim dim;
    int second_moment; /* every value >= 0 */
    int normuon_only;  /* may be absent (an older checkpoint) unless the tensor runs NorMuon */
} slot_array;

static const slot_array slot_arrays[] = {
    {OPTIM_ADAMW, "m", CKPT_F32, DIM_ALL, 0, 0},       {OPTIM_ADAMW, "v", CKPT_F32, DIM_ALL, 1, 0},
    {OPTIM_MUON, "momentum", CKPT_F32, DIM_ALL, 0, 0}, {OPTIM_MUON, "cap_u", CKPT_F64, DIM_ROWS, 0, 0},
    {OPTIM_MUON, "cap_v", CKPT_F64, DIM_COLS, 0, 0},   {OPTIM_MUON, "cap", CKPT_F64, DIM_TWO, 0, 0},
    {OPTIM_MUON, "row_v", CKPT_F64, DIM_ROWS, 1, 1},   {OPTIM_MUOWN, "g", CKPT_F64, DIM_ROWS, 0, 0},
    {OPTIM_MUOWN, "vnorm", CKPT_F64, DIM_ROWS, 0, 0},  {OPTIM_MUOWN, "mag_m", CKPT_F64, DIM_ROWS, 0, 0},
    {OPTIM_MUOWN, "mag_v", CKPT_F64, DIM_ROWS, 1, 0},  {OPTIM_MUOWN, "momentum", CKPT_F32, DIM_ALL, 0, 0},
    {OPTIM_ROWNORM, "B", CKPT_F32, DIM_ALL, 0, 0}};

/* The fields of one tensor's optimizer state (see optim_check_checkpoint). */
static gpt_status check_slot(const optim_slot *s, const ckpt_reader *rd, char *err, size_t errlen)
{
    char name[96];
    uint64_t v;
    size_t k;
    gpt_status st;
    field(name, sizeof name, s, "kind");
    if ((st = ckpt_get_u64(rd, name, &v, 1, err, errlen)) != GPT_OK) return st;
    if (v != kind_code(s->kind))
        return gpt_fail(err, errlen, GPT_ERR_MISMATCH, "%s: field \"%s\": tensor %s was trained with another optimizer "
                        "(kind %llu, this run %llu)", rd->file, name, s->t.name, (unsigned long long)v,
                        (unsigned long long)kind_code(s->kind));
    field(name, sizeof name, s, "step");
    if ((st = ckpt_get_u64(rd, name, &v, 1, err, errlen)) != GPT_OK) return st;
    if (v > (uint64_t)OPTIM_MAX_STEPS)
        return gpt_fail(err, errlen, GPT_ERR_CORRUPT, "%s: field \"%s\" is %llu, expected 0..%ld", rd->file, name,
                        (unsigned long long)v, OPTIM_MAX_STEPS);
    for (k = 0; k < sizeof slot_arrays / sizeof slot_arrays[0]; k++) {
        const slot_array *a = &slot_arrays[k];
        size_t n = a->dim == DIM_ALL ? s->t.rows * s->t.cols : a->dim == DIM_ROWS ? s->t.rows
                 : a->dim == DIM_COLS ? s->t.cols : 2;
        if (a->kind != s->kind) continue;
        field(name, sizeof name, s, a->what);
        if (a->normuon_only && !s->muon_cfg.normuon && !ckpt_has(rd, name)) continue; /* an older file */
        /* second moments (AdamW's v, NorMuon's row_v) are >= 0: a negative one gives NaN steps */
        st = ckpt_check_field(rd, name, a->type, n, a->second_moment ? CKPT_NONNEGATIVE : CKPT_FINITE, err, errlen);
        if (st != GPT_OK) return st;
    }
    return GPT_OK;
}

gpt_status optim_check_checkpoint(const optim_recipe *r, const gpt_config *model, const ckpt_reader *rd, char *err,
                                  size_t errlen)
{
    gpt_layout lay = gpt_layout_of(model);
    optim_slot s;
    size_t head_n = 0;
    int i;
    gpt_status st;
    memset(&s, 0, sizeof s);
    for (i = 0; i < lay.n_tensors; i++) {
        if ((st = gpt_tensor_info(model, i, &s.t)) != GPT_OK) return gpt_fail(err, errlen, st, "%s: bad model",
                                                                              rd->file);
        s.kind = kind_for(r, s.t.kind);
        memset(&s.muon_cfg, 0, sizeof s.muon_cfg); /* the head's Muon runs without the blocks' switches */
        if (s.t.kind == GPT_TENSOR_BLOCK_MATRIX) block_switches(&s.muon_cfg, r, model, (i - 1) % GPT_N_LAYER_TENSORS);
        if (s.t.kind == GPT_TENSOR_HEAD) head_n = s.t.rows * s.t.cols;
        if ((st = check_slot(&s, rd, err, errlen)) != GPT_OK) return st;
    }
    return ckpt_check_field(rd, "opt.head_step", CKPT_F32, head_n, 1, err, errlen);
}

gpt_status optim_load(optim_set *o, const ckpt_reader *r, char *err, size_t errlen)
{
    char name[96];
    int i;
    gpt_status st;
    /* every field is checked by ckpt_get_* before it is copied; a failure part-way leaves the set
     * partly loaded, which the caller treats as fatal */
    for (i = 0; i < o->n_slots; i++) {
        optim_slot *s = &o->slots[i];
        size_t n = s->t.rows * s->t.cols;
        uint64_t kind, step;
        field(name, sizeof name, s, "kind");
        if ((st = ckpt_get_u64(r, name, &kind, 1, err, errlen)) != GPT_OK) return st;
        if (kind != kind_code(s->kind))
            return gpt_fail(err, errlen, GPT_ERR_MISMATCH,
                            "%s: tensor %s was trained with another optimizer (kind %llu, "
                            "this run %llu)", r->file, s->t.name, (unsigned long long)kind,
                            (unsigned long long)kind_code(s->kind));
        field(name, sizeof name, s, "step");
        if ((st = ckpt_get_u64(r, name, &step, 1, err, errlen)) != GPT_OK) return st;
        if (step > (uint64_t)OPTIM_MAX_STEPS)
            return gpt_fail(err, errlen, GPT_ERR_CORRUPT, "%s: field \"%s\" is %llu, expected 0..%ld", r->file, name,
                            (unsigned long long)step, OPTIM_MAX_STEPS);
        if (!optim_owns(o, i)) continue; /* its owner loads it */
        field(name, sizeof name, s, "ns_steps"); /* an auto run's budget (absent before the first) */
        if ((s->kind == OPTIM_MUON || s->kind == OPTIM_MUOWN) && ckpt_has(r, name)) {
            uint64_t k;
            if ((st = ckpt_get_u64(r, name, &k, 1, err, errlen)) != GPT_OK) return st;
            if (o->recipe.ns_steps != OPTIM_NS_AUTO || k < 1 || k > OPTIM_NS_AUTO_MAX)
                return gpt_fail(err, errlen, GPT_ERR_CORRUPT, "%s: field \"%s\" is %llu, expected 1..%d in an auto run",
                                r->file, name, (unsigned long long)k, OPTIM_NS_AUTO_MAX);
            s->ns_k = (int)k;
            if (s->kind == OPTIM_MUON) s->muon_cfg.ns.steps = s->ns_k;
            else s->muown_cfg.muon.ns.steps = s->ns_k;
        }
        switch (s->kind) {
        case OPTIM_ADAMW:
            s->adamw.step = (long long)step;
            field(name, sizeof name, s, "m");
            if ((st = ckpt_get_f32(r, name, s->adamw.m, n, err, errlen)) != GPT_OK) return st;
            field(name, sizeof name, s, "v");
            if ((st = ckpt_get_f32(r, name, s->adamw.v, n, err, errlen)) != GPT_OK) return st;
            break;
        case OPTIM_MUON: {
            double cap[2];
            s->muon.step = (long long)step;
            field(name, sizeof name, s, "momentum");
            if ((st = ckpt_get_f32(r, name, s->muon.momentum, n, err, errlen)) != GPT_OK) return st;
            field(name, sizeof name, s, "cap_u");
            if ((st = ckpt_get_f64(r, name, s->muon.cap_u, s->t.rows, err, errlen)) != GPT_OK) return st;
            field(name, sizeof name, s, "cap_v");
            if ((st = ckpt_get_f64(r, name, s->muon.cap_v, s->t.cols, err, errlen)) != GPT_OK) return st;
            field(name, sizeof name, s, "cap");
            if ((st = ckpt_get_f64(r, name, cap, 2, err, errlen)) != GPT_OK) return st;
            s->muon.cap_sigma = cap[0];
            s->muon.cap_valid = cap[1] != 0.0;
            field(name, sizeof name, s, "row_v");
            if (!s->muon_cfg.normuon && !ckpt_has(r, name)) /* an older file: the state starts at zero */
                memset(s->muon.row_v, 0, s->t.rows * sizeof *s->muon.row_v);
            else if ((st = ckpt_get_f64(r, name, s->muon.row_v, s->t.rows, err, errlen)) != GPT_OK)
                return st;
            break;
        }
        case OPTIM_MUOWN:
            s->muown.step = (long long)step;
            field(name, sizeof name, s, "g");
            if ((st = ckpt_get_f64(r, name, s->muown.g, s->t.rows, err, errlen)) != GPT_OK) return st;
            field(name, sizeof name, s, "vnorm");
            if ((st = ckpt_get_f64(r, name, s->muown.vnorm, s->t.rows, err, errlen)) != GPT_OK) return st;
            field(name, sizeof name, s, "mag_m");
            if ((st = ckpt_get_f64(r, name, s->muown.mag_m, s->t.rows, err, errlen)) != GPT_OK) return st;
            field(name, sizeof name, s, "mag_v");
            if ((st = ckpt_get_f64(r, name, s->muown.mag_v, s->t.rows, err, errlen)) != GPT_OK) return st;
            field(name, sizeof name, s, "momentum");
            if ((st = ckpt_get_f32(r, name, s->muown.momentum, n, err, errlen)) != GPT_OK) return st;
            break;
        case OPTIM_ROWNORM:
            s->rownorm.t = (unsigned long long)step;
            field(name, sizeof name, s, "B");
            if (i == o->head_slot && o->head_sharded) {
                st = ckpt_get_f32_range(r, name, n, o->head_lo * s->t.cols, (o->head_hi - o->head_lo) * s->t.cols,
                                        s->rownorm.B, err, errlen);
            } else {
                st = ckpt_get_f32(r, name, s->rownorm.B, n, err, errlen);
            }
            if (st != GPT_OK) return st;
            rn_rownorm_sync(&s->rownorm); /* B was written directly: re-derive what the step tracks */
            break;
        }
    }
    return ckpt_get_f32(r, "opt.head_step", o->head_step, o->slots[o->head_slot].t.rows * o->slots[o->head_slot].t.cols,
                        err, errlen);
}

/* ---- the host implementation of gpt_optimizer ---------------------------------------------- */

typedef struct host_optimizer {
    gpt_optimizer base;
    int mirrored; /* the backend's host blocks mirror device memory */
} host_optimizer;

static gpt_status host_reduce(gpt_optimizer *go, double scale, char *err, size_t errlen)
{
    host_optimizer *h = (host_optimizer *)go;
    gpt_backend *be = go->be;
    float *grads;
    gpt_status gs;
    if (h->mirrored && (gs = be->ops->pull_grads(be)) != GPT_OK)
        return gpt_fail(err, errlen, gs, "pull_grads: %s", gpt_status_string(gs));
    grads = be->ops->grads(be);
    if (scale != 1.0) { /* the backward passes summed micro-batch means: average them (and weight
                           by this rank's share of the batch) */
        float f = (float)scale;
        size_t i, n = be->layout.n_params;
        for (i = 0; i < n; i++) grads[i] *= f;
    }
    if (go->comm->size > 1 && (gs = go->comm->ops->allreduce_f32(go->comm, grads, be->layout.n_params)) != GPT_OK)
        return gpt_fail(err, errlen, gs, "gradient all-reduce failed");
    return GPT_OK;
}

static gpt_status host_step(gpt_optimizer *go, long step, long total, char *err, size_t errlen)
{
    return optim_step(go->set, go->be->ops->params(go->be), go->be->ops->grads(go->be), step, total, err, errlen);
}

static gpt_status host_share(gpt_optimizer *go, char *err, size_t errlen)
{
    host_optimizer *h = (host_optimizer *)go;
    optim_set *o = go->set;
    gpt_status gs;
    if (o->n_segs > 0 && (gs = go->comm->ops->share(go->comm, go->be->ops->params(go->be), o->segs, o->n_segs)) != GPT_OK)
        return gpt_fail(err, errlen, gs, "parameter exchange failed");
    if (o->n_step_segs > 0 && (gs = go->comm->ops->share(go->comm, o->head_step, o->step_segs, o->n_step_segs)) != GPT_OK)
        return gpt_fail(err, errlen, gs, "head-step exchange failed");
    if (h->mirrored && (gs = go->be->ops->push_params(go->be)) != GPT_OK)
        return gpt_fail(err, errlen, gs, "push_params: %s", gpt_status_string(gs));
    return GPT_OK;
}

static const float *host_head_step(gpt_optimizer *go) { return go->set->head_step; }
static gpt_status host_nothing(gpt_optimizer *go)
{
    (void)go;
    return GPT_OK;
}
static void host_destroy(gpt_optimizer *go) { free(go); }

static const gpt_optimizer_ops host_optimizer_ops = {
    "host", 1, host_reduce, host_step, host_share, host_head_step, host_nothing, host_nothing, host_destroy,
};

gpt_status gpt_host_optimizer_create(const gpt_optimizer_env *env, int mirrored, gpt_optimizer **out, char *err,
                                     size_t errlen)
{
    host_optimizer *h;
    if (!env || !env->be || !env->set || !env->comm || !out)
        return gpt_fail(err, errlen, GPT_ERR_NULL, "optimizer: NULL argument");
    h = (host_optimizer *)calloc(1, sizeof *h);
    if (!h) return gpt_fail(err, errlen, GPT_ERR_NOMEM, "out of memory");
    h->base.ops = &host_optimizer_ops;
    h->base.set = env->set;
    h->base.be = env->be;
    h->base.comm = env->comm;
    h->mirrored = mirrored;
    *out = &h->base;
    return GPT_OK;
}

gpt_status gpt_optimizer_create(const gpt_optimizer_env *env, gpt_optimizer **out, char *note, size_t notelen,
                                char *err, size_t errlen)
{
    if (note && notelen) note[0] = '\0';
    if (!env || !env->be) return gpt_fail(err, errlen, GPT_ERR_NULL, "optimizer: NULL argument");
    if (env->be->ops->create_optimizer) return env->be->ops->create_optimizer(env, out, note, notelen, err, errlen);
    return gpt_host_optimizer_create(env, 0, out, err, errlen);
}

void gpt_optimizer_destroy(gpt_optimizer *o)
{
    if (o) o->ops->destroy(o);
}
