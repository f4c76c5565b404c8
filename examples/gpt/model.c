/* model.c - configuration, parameter layout, initialisation and flop count (see model.h). */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

gpt_status gpt_config_check(gpt_config *cfg, char *err, size_t errlen)
{
    const int limit = 1 << 20; /* keeps every product below in 64-bit range and int-indexable */
    static const char *const flag[6] = {"--layers", "--d-model", "--heads", "--seq", "the tokenizer's vocabulary",
                                        "--mlp"};
    gpt_config c;
    double n_params;
    int v[6], k;
    if (!cfg) {
        gpt_errorf(err, errlen, "model: no config");
        return GPT_ERR_NULL;
    }
    c = *cfg;
    if (c.n_layers == 0) c.n_layers = 6;
    if (c.d_model == 0) c.d_model = 384;
    if (c.n_heads == 0) c.n_heads = c.d_model >= 64 ? c.d_model / 64 : 1;
    if (c.seq_len == 0) c.seq_len = 256;
    if (c.vocab_size == 0) c.vocab_size = 4096;
    if (c.mlp_hidden == 0) {
        /* 8/3 d rounded to the nearest multiple of 8 (at least 8) */
        c.mlp_hidden = (int)(((long long)c.d_model * 8 / 3 + 4) / 8 * 8);
        if (c.mlp_hidden < 8) c.mlp_hidden = 8;
    }
    v[0] = c.n_layers, v[1] = c.d_model, v[2] = c.n_heads, v[3] = c.seq_len, v[4] = c.vocab_size, v[5] = c.mlp_hidden;
    for (k = 0; k < 6; k++)
        if (v[k] < 1 || v[k] > limit) {
            gpt_errorf(err, errlen, "model: %s %d is outside 1..%d", flag[k], v[k], limit);
            return GPT_ERR_CONFIG;
        }
    if (c.d_model % c.n_heads != 0) {
        gpt_errorf(err, errlen, "model: --d-model %d is not a multiple of --heads %d", c.d_model, c.n_heads);
        return GPT_ERR_CONFIG;
    }
    if ((c.d_model / c.n_heads) % 2 != 0) {
        gpt_errorf(err, errlen, "model: the head dimension --d-model %d / --heads %d = %d must be even (RoPE rotates "
                   "pairs)", c.d_model, c.n_heads, c.d_model / c.n_heads);
        return GPT_ERR_CONFIG;
    }
    n_params =
        (double)c.vocab_size * c.d_model * 2 +
        (double)c.n_layers * ((double)c.d_model * c.d_model * 4 + 3.0 * c.d_model * c.mlp_hidden);
    if (n_params > 1e12) {
        gpt_errorf(err, errlen, "model: %.3g parameters (--layers %d, --d-model %d, --mlp %d, vocabulary %d) is above "
                   "the limit of 1e12", n_params, c.n_layers, c.d_model, c.mlp_hidden, c.vocab_size);
        return GPT_ERR_CONFIG;
    }
    *cfg = c;
    return GPT_OK;
}

gpt_status gpt_config_resolve(gpt_config *cfg) { return gpt_config_check(cfg, NULL, 0); }

gpt_layout gpt_layout_of(const gpt_config *cfg)
{
    gpt_layout lay;
    size_t d = (size_t)cfg->d_model, f = (size_t)cfg->mlp_hidden, v = (size_t)cfg->vocab_size;
    size_t off = 0;
    int i;
    memset(&lay, 0, sizeof lay);
    lay.wte = 0;
    lay.layer0 = v * d;
    /* per-layer order: wq wk wv (contiguous: one 3d x d matrix for the fused QKV GEMM), wo,
     * w_gate w_up (contiguous: one 2f x d matrix), w_down */
    {
        size_t sizes[GPT_N_LAYER_TENSORS];
        sizes[GPT_WQ] = sizes[GPT_WK] = sizes[GPT_WV] = sizes[GPT_WO] = d * d;
        sizes[GPT_W_GATE] = sizes[GPT_W_UP] = sizes[GPT_W_DOWN] = f * d;
        for (i = 0; i < GPT_N_LAYER_TENSORS; i++) {
            lay.in_layer[i] = off;
            off += sizes[i];
        }
    }
    lay.layer_stride = off;
    lay.lm_head = lay.layer0 + (size_t)cfg->n_layers * lay.layer_stride;
    lay.n_params = lay.lm_head + v * d;
    lay.n_tensors = 2 + GPT_N_LAYER_TENSORS * cfg->n_layers;
    return lay;
}

gpt_layer_ptrs gpt_layer_at(const gpt_layout *lay, float *block, int layer)
{
    gpt_layer_ptrs p;
    float *base = block + lay->layer0 + (size_t)layer * lay->layer_stride;
    p.wq = base + lay->in_layer[GPT_WQ];
    p.wk = base + lay->in_layer[GPT_WK];
    p.wv = base + lay->in_layer[GPT_WV];
    p.wo = base + lay->in_layer[GPT_WO];
    p.w_gate = base + lay->in_layer[GPT_W_GATE];
    p.w_up = base + lay->in_layer[GPT_W_UP];
    p.w_down = base + lay->in_layer[GPT_W_DOWN];
    return p;
}

gpt_status gpt_tensor_info(const gpt_config *cfg, int index, gpt_tensor *out)
{
    static const char *const names[GPT_N_LAYER_TENSORS] = {"wq",     "wk",   "wv",    "wo",
                                                           "w_gate", "w_up", "w_down"};
    gpt_layout lay;
    size_t d, f, v;
    if (!cfg || !out) return GPT_ERR_NULL;
    lay = gpt_layout_of(cfg);
    if (index < 0 || index >= lay.n_tensors) return GPT_ERR_SIZE;
    d = (size_t)cfg->d_model, f = (size_t)cfg->mlp_hidden, v = (size_t)cfg->vocab_size;
    memset(out, 0, sizeof *out);
    if (index == 0) {
        strcpy(out->name, "wte");
        out->kind = GPT_TENSOR_EMBEDDING;
        out->layer = -1;
        out->rows = v, out->cols = d, out->offset = lay.wte;
    } else if (index == lay.n_tensors - 1) {
        strcpy(out->name, "lm_head");
        out->kind = GPT_TENSOR_HEAD;
        out->layer = -1;
        out->rows = v, out->cols = d, out->offset = lay.lm_head;
    } else {
        int layer = (index - 1) / GPT_N_LAYER_TENSORS, which = (index - 1) % GPT_N_LAYER_TENSORS;
        snprintf(out->name, sizeof out->name, "layers.%d.%s", layer, names[which]);
        out->kind = GPT_TENSOR_BLOCK_MATRIX;
        out->layer = layer;
        out->rows = which == GPT_W_GATE || which == GPT_W_UP ? f : d;
        out->cols = which == GPT_W_DOWN ? f : d;
        out->offset = lay.layer0 + (size_t)layer * lay.layer_stride + lay.in_layer[which];
    }
    return GPT_OK;
}

static double gpt__uniform_open01(uint64_t *state) /* in (0, 1): never 0, so log() is finite */
{
    return ((double)(gpt_splitmix64(state) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

void gpt_init_params(const gpt_config *cfg, float *params, uint64_t seed)
{
    const double std = 0.02, two_pi = 6.283185307179586476925;
    gpt_layout lay = gpt_layout_of(cfg);
    uint64_t state = seed;
    size_t i;
    /* Box-Muller gives two normals per pair of uniforms; both are used. */
    for (i = 0; i < lay.n_params; i += 2) {
        double r = sqrt(-2.0 * log(gpt__uniform_open01(&state)));
        double a = two_pi * gpt__uniform_open01(&state);
        params[i] = (float)(std * r * cos(a));
        if (i + 1 < lay.n_params) params[i + 1] = (float)(std * r * sin(a));
    }
}

double gpt_flops_per_token(const gpt_config *cfg)
{
    double d = cfg->d_model, f = cfg->mlp_hidden, v = cfg->vocab_size, L = cfg->n_layers;
    double matmul_params = L * (4.0 * d * d + 3.0 * d * f) + v * d; /* blocks + head */
    double attention = L * 2.0 * 2.0 * cfg->seq_len * d;            /* QK^T and PV, forward */
    return 3.0 * (2.0 * matmul_params + attention);
}

/* Hands out count floats at *off from arena (only counts when arena is NULL); slices start on
 * multiples of align floats. */
static float *gpt_take(float *arena, size_t *off, size_t count, size_t align)
{
    float *p = arena ? arena + *off : NULL;
    *off += (count + align - 1) / align * align;
    return p;
}

size_t gpt_carve_acts(const gpt_config *cfg, int max_batch, int max_seq, size_t align, float *arena,
                      gpt_acts *acts)
{
    size_t n = (size_t)max_batch * (size_t)max_seq, d = (size_t)cfg->d_model;
    size_t f = (size_t)cfg->mlp_hidden, v = (size_t)cfg->vocab_size, nh = (size_t)cfg->n_heads;
    size_t att = (size_t)max_batch * nh * (size_t)max_seq * (size_t)max_seq;
    size_t rope = (size_t)cfg->seq_len * (d / nh / 2), off = 0;
    int l;
    if (align == 0) align = 1;
#define TAKE(count) gpt_take(arena, &off, (count), align)
    for (l = 0; l < cfg->n_layers; l++) {
        gpt_layer_acts a;
        a.xn1 = TAKE(n * d);
        a.rstd1 = TAKE(n);
        a.qkv = TAKE(n * 3 * d);
        a.rstd_qk = TAKE(n * 2 * nh);
        a.qr = TAKE(n * d);
        a.kr = TAKE(n * d);
        a.att = TAKE(att);
        a.y = TAKE(n * d);
        a.xn2 = TAKE(n * d);
        a.rstd2 = TAKE(n);
        a.gu = TAKE(n * 2 * f);
        a.h = TAKE(n * f);
        if (arena) acts->layers[l] = a;
    }
    {
        gpt_acts t;
        t.layers = acts ? acts->layers : NULL;
        t.x = TAKE(n * d);
        t.xf = TAKE(n * d);
        t.rstdf = TAKE(n);
        t.logits = TAKE(n * v);
        t.losses = TAKE(n);
        t.dres = TAKE(n * d);
        t.dxn = TAKE(n * d);
        t.dqkv = TAKE(n * 3 * d);
        t.dy = TAKE(n * d);
        t.dgu = TAKE(n * 2 * f);
        t.dh = TAKE(n * f);
        t.datt = TAKE(att);
        t.rope_cos = TAKE(rope);
        t.rope_sin = TAKE(rope);
        if (arena) *acts = t;
    }
#undef TAKE
    return off;
}

int gpt_tokens_valid(const int *tokens, size_t n, int vocab)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= vocab) return 0;
    return 1;
}

gpt_status gpt_head_inputs_chunked(const gpt_config *cfg, int max_batch, int max_seq, const int *tokens, int n_seq,
                                   float *out, gpt_trunk_fn trunk, void *ctx)
{
    size_t d, t;
    int s0;
    if (!cfg || !tokens || !out || !trunk) return GPT_ERR_NULL;
    if (n_seq < 1 || max_batch < 1 || max_seq < 1) return GPT_ERR_SIZE;
    d = (size_t)cfg->d_model, t = (size_t)max_seq;
    if (!gpt_tokens_valid(tokens, (size_t)n_seq * t, cfg->vocab_size)) return GPT_ERR_TOKEN;
    for (s0 = 0; s0 < n_seq; s0 += max_batch) {
        int chunk = n_seq - s0 < max_batch ? n_seq - s0 : max_batch;
        gpt_status st = trunk(ctx, tokens + (size_t)s0 * t, chunk, out + (size_t)s0 * t * d);
        if (st != GPT_OK) return st;
    }
    return GPT_OK;
}

gpt_status gpt_context_check(const gpt_config *cfg, int max_seq, const int *context, int len)
{
    if (len < 1 || len > max_seq) return GPT_ERR_SIZE;
    return gpt_tokens_valid(context, (size_t)len, cfg->vocab_size) ? GPT_OK : GPT_ERR_TOKEN;
}
