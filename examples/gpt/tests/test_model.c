/* test_model.c - the model (model.c) and its CPU backend (cpu.c).
 *
 * Each layer's float forward and backward is held to a float64 reference written here from the
 * math of SPEC §3 (not from cpu.c): forward outputs directly, gradients against central
 * differences of the float64 reference. The whole model at tiny size is checked the same way on a
 * sample of parameters of every tensor. Then: loss at init ~ ln(vocab), a tiny batch overfits,
 * runs are bit-identical (also across OpenMP thread counts), causal masking, layout, errors.
 *
 *   build/gpt/test_model                    the tests
 *   OMP_NUM_THREADS=2 build/gpt/test_model --bench [L d H V T B [steps]]
 *       times training steps against a 1024^3 muon_sgemm (default: the 12M config
 *       6 384 6 4096 256 4, 5 steps)
 */
#include "tests/test.h"

#include "backend.h"
#include "cpu_layers.h"
#include "model.h"
#include "muon.h"

#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ---- float64 reference layers (dense rows unless a stride is named) ----------------------- */

/* RMSNorm without gain over groups of gd within rows of ld (only n_groups*gd columns used). */
static void ref_rmsnorm(double *y, const double *x, size_t n, size_t n_groups, size_t gd, size_t ld)
{
    size_t i, g, j;
    for (i = 0; i < n; i++)
        for (g = 0; g < n_groups; g++) {
            const double *xg = x + i * ld + g * gd;
            double ss = 0, r;
            for (j = 0; j < gd; j++) ss += xg[j] * xg[j];
            r = 1.0 / sqrt(ss / (double)gd + 1e-6);
            for (j = 0; j < gd; j++) y[i * ld + g * gd + j] = xg[j] * r;
        }
}

/* RoPE on pairs (2i, 2i+1) of each head, angle pos * 10000^(-2i/hd), pos = row % t; in place. */
static void ref_rope(double *x, size_t ld, int n_seq, int t, int n_heads, int hd)
{
    int row, h, i;
    for (row = 0; row < n_seq * t; row++)
        for (h = 0; h < n_heads; h++)
            for (i = 0; i < hd / 2; i++) {
                double ang = (row % t) * pow(10000.0, -2.0 * i / hd), c = cos(ang), s = sin(ang);
                double *p = x + (size_t)row * ld + (size_t)h * hd + 2 * i, a = p[0], b = p[1];
                p[0] = a * c - b * s;
                p[1] = a * s + b * c;
            }
}

/* Causal attention; q, k, v, out rows of stride ld (head h at columns h*hd). */
static void ref_attention(double *out, size_t ldo, const double *q, const double *k,
                          const double *v, size_t ld, int n_seq, int t, int n_heads, int hd)
{
    int s, h, i, j, e;
    double *w = (double *)malloc((size_t)t * sizeof(double));
    for (s = 0; s < n_seq; s++)
        for (h = 0; h < n_heads; h++)
            for (i = 0; i < t; i++) {
                const double *qi = q + (size_t)(s * t + i) * ld + h * hd;
                double mx = -1e300, sum = 0;
                for (j = 0; j <= i; j++) {
                    const double *kj = k + (size_t)(s * t + j) * ld + h * hd;
                    double dot = 0;
                    for (e = 0; e < hd; e++) dot += qi[e] * kj[e];
                    w[j] = dot / sqrt((double)hd);
                    if (w[j] > mx) mx = w[j];
                }
                for (j = 0; j <= i; j++) sum += (w[j] = exp(w[j] - mx));
                for (e = 0; e < hd; e++) {
                    double acc = 0;
                    for (j = 0; j <= i; j++)
                        acc += w[j] / sum * v[(size_t)(s * t + j) * ld + h * hd + e];
                    out[(size_t)(s * t + i) * ldo + h * hd + e] = acc;
                }
            }
    free(w);
}

/* y (n x out, stride ldy) = x (n x in, stride ldx) W^T, W out x in; y += when acc. */
static void ref_linear(double *y, size_t ldy, const double *x, size_t ldx, const double *w,
                       size_t n, size_t in, size_t out, int acc)
{
    size_t i, o, j;
    for (i = 0; i < n; i++)
        for (o = 0; o < out; o++) {
            double s = 0;
            for (j = 0; j < in; j++) s += x[i * ldx + j] * w[o * in + j];
            y[i * ldy + o] = acc ? y[i * ldy + o] + s : s;
        }
}

static double ref_silu(double g) { return g / (1.0 + exp(-g)); }

/* mean over rows of logsumexp(logits) - logits[target] */
static double ref_crossentropy(const double *logits, const int *targets, size_t n, size_t v)
{
    size_t i, j;
    double total = 0;
    for (i = 0; i < n; i++) {
        const double *l = logits + i * v;
        double mx = l[0], s = 0;
        for (j = 1; j < v; j++) mx = l[j] > mx ? l[j] : mx;
        for (j = 0; j < v; j++) s += exp(l[j] - mx);
        total += log(s) + mx - l[targets[i]];
    }
    return total / (double)n;
}

/* The whole model in float64 from a double copy of the parameter block. xf_out (n x d) optional. */
static double ref_model_loss(const gpt_config *cfg, const double *P, const int *tokens,
                             const int *targets, int n_seq, int t, double *xf_out)
{
    gpt_layout lay = gpt_layout_of(cfg);
    size_t n = (size_t)n_seq * t, d = (size_t)cfg->d_model, f = (size_t)cfg->mlp_hidden;
    size_t v = (size_t)cfg->vocab_size, i, j;
    int hd = cfg->d_model / cfg->n_heads, l;
    double *x = (double *)calloc(n * d, sizeof(double)),
           *xn = (double *)calloc(n * d, sizeof(double));
    double *q = (double *)calloc(n * d, sizeof(double)),
           *k = (double *)calloc(n * d, sizeof(double));
    double *vv = (double *)calloc(n * d, sizeof(double)),
           *o = (double *)calloc(n * d, sizeof(double));
    double *g = (double *)calloc(n * f, sizeof(double)),
           *u = (double *)calloc(n * f, sizeof(double));
    double *logits = (double *)calloc(n * v, sizeof(double)), loss = 0;
    for (i = 0; i < n; i++)
        for (j = 0; j < d; j++) x[i * d + j] = P[lay.wte + (size_t)tokens[i] * d + j];
    for (l = 0; l < cfg->n_layers; l++) {
        const double *base = P + lay.layer0 + (size_t)l * lay.layer_stride;
        const double *wq = base + lay.in_layer[GPT_WQ], *wk = base + lay.in_layer[GPT_WK];
        const double *wv = base + lay.in_layer[GPT_WV], *wo = base + lay.in_layer[GPT_WO];
        const double *wg = base + lay.in_layer[GPT_W_GATE], *wu = base + lay.in_layer[GPT_W_UP];
        const double *wd = base + lay.in_layer[GPT_W_DOWN];
        ref_rmsnorm(xn, x, n, 1, d, d);
        ref_linear(q, d, xn, d, wq, n, d, d, 0);
        ref_linear(k, d, xn, d, wk, n, d, d, 0);
        ref_linear(vv, d, xn, d, wv, n, d, d, 0);
        ref_rmsnorm(q, q, n, (size_t)cfg->n_heads, (size_t)hd, d);
        ref_rmsnorm(k, k, n, (size_t)cfg->n_heads, (size_t)hd, d);
        ref_rope(q, d, n_seq, t, cfg->n_heads, hd);
        ref_rope(k, d, n_seq, t, cfg->n_heads, hd);
        ref_attention(o, d, q, k, vv, d, n_seq, t, cfg->n_heads, hd);
        ref_linear(x, d, o, d, wo, n, d, d, 1);
        ref_rmsnorm(xn, x, n, 1, d, d);
        ref_linear(g, f, xn, d, wg, n, d, f, 0);
        ref_linear(u, f, xn, d, wu, n, d, f, 0);
        for (i = 0; i < n * f; i++) g[i] = ref_silu(g[i]) * u[i];
        ref_linear(x, d, g, f, wd, n, f, d, 1);
    }
    ref_rmsnorm(xn, x, n, 1, d, d);
    if (xf_out) memcpy(xf_out, xn, n * d * sizeof(double));
    if (targets) {
        ref_linear(logits, v, xn, d, P + lay.lm_head, n, d, v, 0);
        loss = ref_crossentropy(logits, targets, n, v);
    }
    free(x), free(xn), free(q), free(k), free(vv), free(o), free(g), free(u), free(logits);
    return loss;
}

/* ---- helpers ------------------------------------------------------------------------------ */

static void fill_normal(float *x, size_t n, double std, t_rng *r)
{
    size_t i;
    for (i = 0; i < n; i++) x[i] = (float)(std * t_rng_normal(r));
}

static double *to_double(const float *x, size_t n)
{
    double *y = (double *)malloc(n * sizeof(double));
    size_t i;
    for (i = 0; i < n; i++) y[i] = x[i];
    return y;
}

/* sum(G * y) for the layer losses L(x) = <G, f(x)> */
static double dot_fd(const float *g, const double *y, size_t n)
{
    double s = 0;
    size_t i;
    for (i = 0; i < n; i++) s += (double)g[i] * y[i];
    return s;
}

/* A scalar float64 function of a double vector, for central differences. */
typedef double (*scalar_fn)(const double *x, const void *ctx);

/* Largest |analytic - central difference| over the listed indices (all when idx is NULL), and
 * the largest |central difference| (the scale the error is judged against). */
static void fd_compare(scalar_fn fn, const void *ctx, double *x, size_t n, const size_t *idx,
                       size_t n_idx, const float *analytic, double h, double *max_err,
                       double *max_grad, size_t *worst)
{
    size_t s;
    *max_err = 0, *max_grad = 0, *worst = 0;
    for (s = 0; s < (idx ? n_idx : n); s++) {
        size_t i = idx ? idx[s] : s;
        double keep = x[i], lp, lm, fd, err;
        x[i] = keep + h, lp = fn(x, ctx);
        x[i] = keep - h, lm = fn(x, ctx);
        x[i] = keep;
        fd = (lp - lm) / (2 * h);
        err = fabs(fd - (double)analytic[s]);
        if (fabs(fd) > *max_grad) *max_grad = fabs(fd);
        if (err > *max_err) *max_err = err, *worst = i;
    }
}

#define CHECK_GRAD(fn, ctx, x, n, idx, n_idx, analytic, what)                                      \
    do {                                                                                           \
        double e_, g_;                                                                             \
        size_t w_;                                                                                 \
        fd_compare(fn, ctx, x, n, idx, n_idx, analytic, 1e-5, &e_, &g_, &w_);                      \
        CHECK_MSG(g_ > 0 && e_ <= 2e-4 * g_ + 1e-7,                                                \
                  "%s: max |analytic - fd| %.3g at %zu, max |grad| %.3g", what, e_, w_, g_);       \
    } while (0)

static double max_abs_diff_fd(const float *a, const double *b, size_t n)
{
    double m = 0;
    size_t i;
    for (i = 0; i < n; i++)
        if (fabs(a[i] - b[i]) > m || a[i] != a[i]) m = a[i] != a[i] ? 1e300 : fabs(a[i] - b[i]);
    return m;
}

/* ---- layer tests -------------------------------------------------------------------------- */

typedef struct norm_ctx {
    const float *g;
    size_t n, groups, gd, ld;
} norm_ctx;
static double norm_loss(const double *x, const void *vctx)
{
    const norm_ctx *c = (const norm_ctx *)vctx;
    double *y = (double *)calloc(c->n * c->ld, sizeof(double)), s = 0;
    size_t i, j;
    ref_rmsnorm(y, x, c->n, c->groups, c->gd, c->ld);
    for (i = 0; i < c->n; i++)
        for (j = 0; j < c->groups * c->gd; j++) s += (double)c->g[i * c->ld + j] * y[i * c->ld + j];
    free(y);
    return s;
}

static void check_rmsnorm(size_t n, size_t groups, size_t gd, size_t ld, int accumulate)
{
    t_rng r = {42};
    size_t len = n * ld, i, j;
    float *x = (float *)calloc(len, sizeof(float)), *y = (float *)calloc(len, sizeof(float));
    float *g = (float *)calloc(len, sizeof(float)), *dx = (float *)calloc(len, sizeof(float));
    float *rstd = (float *)calloc(n * groups, sizeof(float)),
          *dx_used = (float *)calloc(len, sizeof(float));
    double *xd, *yd = (double *)calloc(len, sizeof(double));
    norm_ctx ctx;
    fill_normal(x, len, 1.5, &r);
    fill_normal(g, len, 1.0, &r);
    for (i = 0; i < len; i++) dx[i] = accumulate ? 0.25f : 0.0f;
    xd = to_double(x, len);
    gpt_rmsnorm_forward(y, ld, rstd, x, ld, n, groups, gd);
    gpt_rmsnorm_backward(dx, ld, g, ld, y, ld, rstd, n, groups, gd, accumulate);
    ref_rmsnorm(yd, xd, n, groups, gd, ld);
    for (i = 0; i < n; i++)
        for (j = 0; j < ld; j++) {
            if (j >= groups * gd) {
                yd[i * ld + j] = 0; /* padding columns: never written */
                CHECK(dx[i * ld + j] == (accumulate ? 0.25f : 0.0f));
            }
            dx_used[i * ld + j] = dx[i * ld + j] - (accumulate ? 0.25f : 0.0f);
        }
    CHECK_NEAR(max_abs_diff_fd(y, yd, len), 0, 2e-6, 0);
    ctx.g = g, ctx.n = n, ctx.groups = groups, ctx.gd = gd, ctx.ld = ld;
    {
        size_t *idx = (size_t *)malloc(n * groups * gd * sizeof(size_t));
        float *an = (float *)malloc(n * groups * gd * sizeof(float));
        size_t m = 0;
        for (i = 0; i < n; i++)
            for (j = 0; j < groups * gd; j++) idx[m] = i * ld + j, an[m++] = dx_used[i * ld + j];
        CHECK_GRAD(norm_loss, &ctx, xd, len, idx, m, an, "rmsnorm dx");
        free(idx), free(an);
    }
    free(x), free(y), free(g), free(dx), free(rstd), free(dx_used), free(xd), free(yd);
}

static void test_rmsnorm(void)
{
    check_rmsnorm(5, 1, 24, 24, 0); /* the block norm */
    check_rmsnorm(4, 1, 24, 24, 1); /* accumulating into the residual gradient */
}

static void test_qk_norm(void)
{
    check_rmsnorm(4, 6, 8, 51, 0); /* q|k heads inside a wider qkv row (stride 51, 48 used) */
}

typedef struct rope_ctx {
    const float *g;
    size_t ld;
    int n_seq, t, heads, hd;
} rope_ctx;
static double rope_loss(const double *x, const void *vctx)
{
    const rope_ctx *c = (const rope_ctx *)vctx;
    size_t len = (size_t)c->n_seq * c->t * c->ld;
    double *y = (double *)malloc(len * sizeof(double)), s;
    memcpy(y, x, len * sizeof(double));
    ref_rope(y, c->ld, c->n_seq, c->t, c->heads, c->hd);
    s = dot_fd(c->g, y, len);
    free(y);
    return s;
}

static void test_rope(void)
{
    enum { NS = 2, T = 7, H = 2, HD = 8, LD = H * HD };
    t_rng r = {7};
    float x[NS * T * LD], y[NS * T * LD], g[NS * T * LD], dx[NS * T * LD];
    float cs[T * HD / 2], sn[T * HD / 2];
    double xd[NS * T * LD], yd[NS * T * LD];
    rope_ctx ctx = {NULL, LD, NS, T, H, HD};
    size_t i;
    fill_normal(x, NS * T * LD, 1.0, &r);
    fill_normal(g, NS * T * LD, 1.0, &r);
    for (i = 0; i < NS * T * LD; i++) xd[i] = yd[i] = x[i];
    gpt_rope_tables(cs, sn, T, HD);
    gpt_rope(y, LD, x, LD, NS, T, H, HD, cs, sn, 0);
    ref_rope(yd, LD, NS, T, H, HD);
    CHECK_NEAR(max_abs_diff_fd(y, yd, NS * T * LD), 0, 2e-6, 0);
    /* position 0 is the identity; the rotation keeps each pair's norm */
    CHECK(y[0] == x[0] && y[1] == x[1]);
    memcpy(dx, g, sizeof dx);
    gpt_rope(dx, LD, dx, LD, NS, T, H, HD, cs, sn, 1); /* backward, in place */
    ctx.g = g;
    CHECK_GRAD(rope_loss, &ctx, xd, (size_t)NS * T * LD, NULL, 0, dx, "rope dx");
    /* backward of forward is the identity (an orthogonal map) */
    gpt_rope(y, LD, y, LD, NS, T, H, HD, cs, sn, 1);
    CHECK_NEAR(max_abs_diff_fd(y, xd, NS * T * LD), 0, 2e-6, 0);
}

typedef struct att_ctx {
    const float *g;
    size_t ld, ldo;
    int n_seq, t, heads, hd;
} att_ctx;
static double att_loss(const double *qkv, const void *vctx)
{
    const att_ctx *c = (const att_ctx *)vctx;
    size_t n = (size_t)c->n_seq * c->t, D = (size_t)c->heads * c->hd, i, j;
    double *o = (double *)calloc(n * c->ldo, sizeof(double)), s = 0;
    /* q, k, v live in one row of stride ld at column offsets 0, D, 2D */
    ref_attention(o, c->ldo, qkv, qkv + D, qkv + 2 * D, c->ld, c->n_seq, c->t, c->heads, c->hd);
    for (i = 0; i < n; i++)
        for (j = 0; j < D; j++) s += (double)c->g[i * c->ldo + j] * o[i * c->ldo + j];
    free(o);
    return s;
}

static void test_attention(void)
{
    enum { NS = 2, T = 6, H = 2, HD = 4, D = H * HD, LD = 3 * D + 1, LDO = D + 2, N = NS * T };
    t_rng r = {11};
    float qkv[N * LD], out[N * LDO], g[N * LDO], att[NS * H * T * T], scratch[NS * H * T * T];
    float dqkv[N * LD];
    double qkvd[N * LD], outd[N * LDO];
    att_ctx ctx = {NULL, LD, LDO, NS, T, H, HD};
    size_t i, j, idx[N * 3 * D];
    float an[N * 3 * D];
    int bad_mask = 0, bad_sum = 0;
    fill_normal(qkv, N * LD, 1.0, &r);
    fill_normal(g, N * LDO, 1.0, &r);
    for (i = 0; i < N * LDO; i++) out[i] = outd[i] = 0;
    for (i = 0; i < N * LD; i++) qkvd[i] = qkv[i], dqkv[i] = -7.0f;
    gpt_attention_forward(out, LDO, att, qkv, LD, qkv + D, LD, qkv + 2 * D, LD, NS, T, H, HD, NULL);
    ref_attention(outd, LDO, qkvd, qkvd + D, qkvd + 2 * D, LD, NS, T, H, HD);
    CHECK_NEAR(max_abs_diff_fd(out, outd, N * LDO), 0, 2e-6, 0);
    { /* with caller workspace (2 thread slices): the same bits */
        gpt_gemm_ws ws = gpt_gemm_ws_for(2);
        float out2[N * LDO], att2[NS * H * T * T];
        memcpy(out2, out, sizeof out2);
        ws.mem = malloc(ws.bytes);
        gpt_attention_forward(out2, LDO, att2, qkv, LD, qkv + D, LD, qkv + 2 * D, LD, NS, T, H, HD,
                              &ws);
        CHECK(memcmp(out2, out, sizeof out2) == 0 && memcmp(att2, att, sizeof att2) == 0);
        free(ws.mem);
    }
    for (i = 0; i < (size_t)NS * H * T; i++) { /* each probability row: sums to 1, zero above i */
        double s = 0;
        for (j = 0; j < T; j++) {
            s += att[i * T + j];
            if (j > i % T && att[i * T + j] != 0.0f) bad_mask++;
        }
        if (fabs(s - 1) > 1e-6) bad_sum++;
    }
    CHECK(bad_mask == 0 && bad_sum == 0);
    gpt_attention_backward(dqkv, LD, dqkv + D, LD, dqkv + 2 * D, LD, scratch, g, LDO, att, qkv, LD,
                           qkv + D, LD, qkv + 2 * D, LD, NS, T, H, HD, NULL);
    for (i = 0; i < N; i++) {
        CHECK(dqkv[i * LD + 3 * D] == -7.0f); /* the padding column is never written */
        for (j = 0; j < 3 * D; j++)
            idx[i * 3 * D + j] = i * LD + j, an[i * 3 * D + j] = dqkv[i * LD + j];
    }
    ctx.g = g;
    CHECK_GRAD(att_loss, &ctx, qkvd, (size_t)N * LD, idx, (size_t)N * 3 * D, an,
               "attention dq|dk|dv");
}

typedef struct swiglu_ctx {
    const float *g;
    size_t n, f;
} swiglu_ctx;
static double swiglu_loss(const double *gu, const void *vctx)
{
    const swiglu_ctx *c = (const swiglu_ctx *)vctx;
    double s = 0;
    size_t i, j;
    for (i = 0; i < c->n; i++)
        for (j = 0; j < c->f; j++)
            s += (double)c->g[i * c->f + j] * ref_silu(gu[i * 2 * c->f + j]) *
                 gu[i * 2 * c->f + c->f + j];
    return s;
}

static void test_swiglu(void)
{
    enum { N = 5, F = 7 };
    t_rng r = {13};
    float gu[N * 2 * F], h[N * F], g[N * F], dgu[N * 2 * F];
    double gud[N * 2 * F], hd[N * F];
    swiglu_ctx ctx = {NULL, N, F};
    size_t i, j;
    fill_normal(gu, N * 2 * F, 2.0, &r);
    fill_normal(g, N * F, 1.0, &r);
    for (i = 0; i < N * 2 * F; i++) gud[i] = gu[i];
    for (i = 0; i < N; i++)
        for (j = 0; j < F; j++)
            hd[i * F + j] = ref_silu(gud[i * 2 * F + j]) * gud[i * 2 * F + F + j];
    gpt_swiglu_forward(h, gu, N, F);
    CHECK_NEAR(max_abs_diff_fd(h, hd, N * F), 0, 2e-6, 0);
    gpt_swiglu_backward(dgu, g, gu, N, F);
    ctx.g = g;
    CHECK_GRAD(swiglu_loss, &ctx, gud, N * 2 * F, NULL, 0, dgu, "swiglu dgu");
}

typedef struct linear_ctx {
    const float *g;
    const double *x, *w;
    size_t n, in, out;
    int wrt_w;
} linear_ctx;
static double linear_loss(const double *z, const void *vctx)
{
    const linear_ctx *c = (const linear_ctx *)vctx;
    double *y = (double *)malloc(c->n * c->out * sizeof(double)), s;
    ref_linear(y, c->out, c->wrt_w ? c->x : z, c->in, c->wrt_w ? z : c->w, c->n, c->in, c->out, 0);
    s = dot_fd(c->g, y, c->n * c->out);
    free(y);
    return s;
}

static void test_linear(void)
{
    enum { N = 6, IN = 5, OUT = 4 };
    t_rng r = {17};
    float x[N * IN], w[OUT * IN], y[N * OUT], g[N * OUT], dx[N * IN], dw[OUT * IN], dw2[OUT * IN];
    double xd[N * IN], wd[OUT * IN], yd[N * OUT];
    linear_ctx ctx = {NULL, NULL, NULL, N, IN, OUT, 0};
    size_t i;
    fill_normal(x, N * IN, 1.0, &r);
    fill_normal(w, OUT * IN, 0.5, &r);
    fill_normal(g, N * OUT, 1.0, &r);
    for (i = 0; i < N * IN; i++) xd[i] = x[i], dx[i] = 3.0f;
    for (i = 0; i < OUT * IN; i++) wd[i] = w[i], dw[i] = 0.0f, dw2[i] = 1.0f;
    gpt_linear_forward(y, x, w, N, IN, OUT, 0, NULL);
    ref_linear(yd, OUT, xd, IN, wd, N, IN, OUT, 0);
    CHECK_NEAR(max_abs_diff_fd(y, yd, N * OUT), 0, 2e-6, 0);
    gpt_linear_forward(y, x, w, N, IN, OUT, 1, NULL); /* accumulate: y = 2 x W^T */
    CHECK_NEAR(y[3], 2 * yd[3], 1e-6, 1e-6);
    gpt_linear_backward(dx, dw, g, x, w, N, IN, OUT, 0, NULL);
    gpt_linear_backward(NULL, dw2, g, x, w, N, IN, OUT, 0, NULL); /* dW accumulates onto 1.0 */
    CHECK_NEAR(dw2[5] - 1.0f, dw[5], 1e-6, 1e-5);
    ctx.g = g, ctx.x = xd, ctx.w = wd;
    CHECK_GRAD(linear_loss, &ctx, xd, N * IN, NULL, 0, dx, "linear dx");
    ctx.wrt_w = 1;
    CHECK_GRAD(linear_loss, &ctx, wd, OUT * IN, NULL, 0, dw, "linear dW");
}

typedef struct ce_ctx {
    const int *targets;
    size_t n, v;
} ce_ctx;
static double ce_loss(const double *logits, const void *vctx)
{
    const ce_ctx *c = (const ce_ctx *)vctx;
    return ref_crossentropy(logits, c->targets, c->n, c->v);
}

static void test_crossentropy(void)
{
    enum { N = 4, V = 9 };
    t_rng r = {19};
    float logits[N * V], losses[N];
    double ld[N * V];
    int targets[N] = {0, 8, 3, 3};
    ce_ctx ctx = {NULL, N, V};
    double mean = 0;
    size_t i;
    fill_normal(logits, N * V, 3.0, &r);
    logits[5] = 60.0f; /* a large logit: the max-shift keeps exp() finite */
    for (i = 0; i < N * V; i++) ld[i] = logits[i];
    gpt_crossentropy_forward(losses, logits, targets, N, V);
    for (i = 0; i < N; i++) mean += losses[i] / (double)N;
    CHECK_NEAR(mean, ref_crossentropy(ld, targets, N, V), 1e-5, 1e-6);
    gpt_crossentropy_backward(logits, logits, targets, N, V, 1.0f / N); /* in place */
    ctx.targets = targets;
    CHECK_GRAD(ce_loss, &ctx, ld, N * V, NULL, 0, logits, "cross-entropy dlogits");
    { /* a wide row whose logits span 0 .. -100 below its largest (the exponential's whole range,
       * underflow included): every probability within 3e-7 relative, plus the rounding of the
       * float difference logit - max (6e-8 |difference|), or 1e-44 absolute, of the float64
       * softmax; the loss within 1e-6 */
        enum { W = 4099 };
        static float wl[W], wp[W];
        int t[1] = {77};
        double mx = -1e300, sum = 0, ref;
        size_t j;
        int bad = 0;
        for (j = 0; j < W; j++) wl[j] = 7.0f - 100.0f * (float)((j * 2654435761u) % W) / (float)(W - 1);
        for (j = 0; j < W; j++) mx = wl[j] > mx ? wl[j] : mx;
        for (j = 0; j < W; j++) sum += exp((double)wl[j] - mx);
        memcpy(wp, wl, sizeof wl);
        gpt_crossentropy_forward(losses, wp, t, 1, W);
        for (j = 0; j < W; j++) {
            double q = exp((double)wl[j] - mx) / sum;
            if (!(fabs(wp[j] - q) <= (3e-7 + 6e-8 * (mx - wl[j])) * q + 1e-44)) bad++;
        }
        ref = log(sum) + mx - wl[77];
        CHECK_MSG(bad == 0, "%d of %d probabilities off", bad, W);
        CHECK_NEAR(losses[0], ref, 1e-6, 1e-6);
    }
}

static void test_embedding(void)
{
    float wte[4 * 3] = {0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32}, x[3 * 3], dwte[4 * 3] = {0};
    float dx[3 * 3] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    int tokens[3] = {2, 0, 2};
    gpt_embedding_forward(x, tokens, wte, 3, 3);
    CHECK(x[0] == 20 && x[4] == 1 && x[8] == 22);
    gpt_embedding_backward(dwte, tokens, dx, 3, 3);
    CHECK(dwte[6] == 8 && dwte[7] == 10 && dwte[8] == 12 && dwte[0] == 4 && dwte[3] == 0);
}

/* ---- whole model -------------------------------------------------------------------------- */

static gpt_config tiny_config(void)
{
    gpt_config c = {2, 16, 2, 8, 32, 0}; /* mlp_hidden: default (40) */
    gpt_config_resolve(&c);
    return c;
}

static void random_tokens(int *t, size_t n, int vocab, t_rng *r)
{
    size_t i;
    for (i = 0; i < n; i++) t[i] = (int)(t_rng_u64(r) % (unsigned long long)vocab);
}

typedef struct model_ctx {
    const gpt_config *cfg;
    const int *in, *tg;
    int n_seq, t;
} model_ctx;
static double model_loss(const double *p, const void *vctx)
{
    const model_ctx *c = (const model_ctx *)vctx;
    return ref_model_loss(c->cfg, p, c->in, c->tg, c->n_seq, c->t, NULL);
}

static void test_model_gradients(void)
{
    enum { B = 2, T = 8 };
    gpt_config cfg = tiny_config();
    gpt_backend *be = NULL;
    int in[B * T], tg[B * T], ti;
    t_rng r = {23};
    float loss = 0, *params, *grads;
    double *pd;
    model_ctx ctx;
    size_t i;
    CHECK(gpt_cpu_backend.create(&cfg, B, T, 1234, &be) == GPT_OK);
    if (!be) return;
    params = be->ops->params(be), grads = be->ops->grads(be);
    /* larger weights than the 0.02 init so every path carries a visible gradient */
    fill_normal(params, be->layout.n_params, 0.3, &r);
    random_tokens(in, B * T, cfg.vocab_size, &r);
    random_tokens(tg, B * T, cfg.vocab_size, &r);
    CHECK(be->ops->forward(be, in, tg, &loss) == GPT_OK);
    CHECK(be->ops->backward(be) == GPT_OK);
    pd = to_double(params, be->layout.n_params);
    ctx.cfg = &cfg, ctx.in = in, ctx.tg = tg, ctx.n_seq = B, ctx.t = T;
    CHECK_NEAR(loss, model_loss(pd, &ctx), 1e-5, 1e-5);
    for (ti = 0; ti < be->layout.n_tensors; ti++) { /* 8 random entries of every tensor */
        gpt_tensor info;
        size_t idx[8];
        float an[8];
        gpt_tensor_info(&cfg, ti, &info);
        for (i = 0; i < 8; i++) {
            idx[i] = info.offset + (size_t)(t_rng_u64(&r) % (info.rows * info.cols));
            if (info.kind == GPT_TENSOR_EMBEDDING) /* rows of tokens that occur */
                idx[i] =
                    info.offset + (size_t)in[i] * info.cols + (size_t)(t_rng_u64(&r) % info.cols);
            an[i] = grads[idx[i]];
        }
        CHECK_GRAD(model_loss, &ctx, pd, be->layout.n_params, idx, 8, an, info.name);
    }
    free(pd);
    be->ops->destroy(be);
}

static void test_loss_at_init(void)
{
    enum { B = 4, T = 16 };
    gpt_config cfg = {2, 32, 2, 16, 256, 0};
    gpt_backend *be = NULL;
    int in[B * T], tg[B * T];
    t_rng r = {29};
    float loss = 0;
    CHECK(gpt_cpu_backend.create(&cfg, B, T, 1, &be) == GPT_OK);
    if (!be) return;
    random_tokens(in, B * T, 256, &r);
    random_tokens(tg, B * T, 256, &r);
    CHECK(be->ops->forward(be, in, tg, &loss) == GPT_OK);
    /* logits ~ N(0, 0.02^2 d) (the final norm gives unit RMS): E loss ~ ln V + 0.02^2 d / 2
     * = ln V + 0.006, with a spread over 64 tokens of about 0.02 sqrt(d) / 8 = 0.014 */
    CHECK_NEAR(loss, log(256.0), 0.05, 0);
    be->ops->destroy(be);
}

/* Adam written here (bias-corrected), on every parameter. */
static void test_overfit_tiny_batch(void)
{
    enum { B = 2, T = 8, STEPS = 300 };
    gpt_config cfg = tiny_config();
    gpt_backend *be = NULL;
    int in[B * T], tg[B * T], step;
    t_rng r = {31};
    float loss = 0, first = 0, *m, *v, *p, *g;
    size_t i, np;
    CHECK(gpt_cpu_backend.create(&cfg, B, T, 5, &be) == GPT_OK);
    if (!be) return;
    np = be->layout.n_params, p = be->ops->params(be), g = be->ops->grads(be);
    m = (float *)calloc(np, sizeof(float)), v = (float *)calloc(np, sizeof(float));
    random_tokens(in, B * T, cfg.vocab_size, &r);
    random_tokens(tg, B * T, cfg.vocab_size, &r);
    for (step = 1; step <= STEPS; step++) {
        double b1 = 1 - pow(0.9, step), b2 = 1 - pow(0.999, step);
        be->ops->zero_grad(be);
        be->ops->forward(be, in, tg, &loss);
        if (step == 1) first = loss;
        be->ops->backward(be);
        for (i = 0; i < np; i++) {
            m[i] = 0.9f * m[i] + 0.1f * g[i];
            v[i] = 0.999f * v[i] + 0.001f * g[i] * g[i];
            p[i] -= (float)(1e-2 * (m[i] / b1) / (sqrt(v[i] / b2) + 1e-8));
        }
    }
    be->ops->forward(be, in, tg, &loss);
    CHECK_MSG(loss < 0.05f, "loss %g after %d Adam steps (first %g)", loss, STEPS, first);
    free(m), free(v);
    be->ops->destroy(be);
}

/* Three SGD steps; returns losses and leaves the final parameters in out_params. */
static void run_three_steps(float *losses, float *out_params, const gpt_config *cfg)
{
    enum { B = 2, T = 8 };
    gpt_backend *be = NULL;
    int in[B * T], tg[B * T], s;
    t_rng r = {37};
    size_t i;
    if (gpt_cpu_backend.create(cfg, B, T, 99, &be) != GPT_OK) return;
    random_tokens(in, B * T, cfg->vocab_size, &r);
    random_tokens(tg, B * T, cfg->vocab_size, &r);
    for (s = 0; s < 3; s++) {
        float *p = be->ops->params(be), *g = be->ops->grads(be);
        be->ops->zero_grad(be);
        be->ops->forward(be, in, tg, &losses[s]);
        be->ops->backward(be);
        for (i = 0; i < be->layout.n_params; i++) p[i] -= 0.5f * g[i];
    }
    memcpy(out_params, be->ops->params(be), be->layout.n_params * sizeof(float));
    be->ops->destroy(be);
}

static void test_determinism(void)
{
    gpt_config cfg = tiny_config();
    size_t np = gpt_layout_of(&cfg).n_params;
    float la[3] = {0}, lb[3] = {1}, *pa = (float *)calloc(np, 4), *pb = (float *)calloc(np, 4);
    run_three_steps(la, pa, &cfg);
    run_three_steps(lb, pb, &cfg);
    CHECK(memcmp(la, lb, sizeof la) == 0 && memcmp(pa, pb, np * 4) == 0);
    CHECK(la[2] < la[0]); /* and the steps did something */
#ifdef _OPENMP
    {
        int threads = omp_get_max_threads();
        omp_set_num_threads(threads > 1 ? 1 : 3); /* a different thread count: same bits */
        run_three_steps(lb, pb, &cfg);
        omp_set_num_threads(threads);
        CHECK(memcmp(la, lb, sizeof la) == 0 && memcmp(pa, pb, np * 4) == 0);
    }
#endif
    free(pa), free(pb);
}

static void test_causal_and_sampling(void)
{
    enum { B = 2, T = 8, J = 5 };
    gpt_config cfg = tiny_config();
    gpt_backend *be = NULL;
    int a[B * T], b[B * T];
    size_t d = (size_t)cfg.d_model, v = (size_t)cfg.vocab_size, i, j;
    float ha[3 * T * 16], hb[3 * T * 16], logits[32], *w;
    t_rng r = {41};
    double *pd, xf[T * 16];
    int same_before = 1, differs_at = 0, bad = 0;
    CHECK(gpt_cpu_backend.create(&cfg, B, T, 3, &be) == GPT_OK);
    if (!be) return;
    fill_normal(be->ops->params(be), be->layout.n_params, 0.3, &r);
    random_tokens(a, B * T, cfg.vocab_size, &r);
    memcpy(b, a, sizeof a);
    b[J] = (a[J] + 1) % cfg.vocab_size; /* change one token of sequence 0 */
    CHECK(be->ops->head_inputs(be, a, 1, ha) == GPT_OK);
    CHECK(be->ops->head_inputs(be, b, 1, hb) == GPT_OK);
    for (i = 0; i < J * d; i++) same_before &= ha[i] == hb[i];
    for (i = J * d; i < (J + 1) * d; i++) differs_at |= ha[i] != hb[i];
    CHECK(same_before && differs_at);
    /* head inputs agree with the float64 reference's final-norm output */
    pd = to_double(be->ops->params(be), be->layout.n_params);
    ref_model_loss(&cfg, pd, a, NULL, 1, T, xf);
    CHECK_NEAR(max_abs_diff_fd(ha, xf, T * d), 0, 1e-5, 0);
    /* more sequences than max_batch go in chunks: 3 sequences with max_batch 2 */
    {
        int three[3 * T];
        memcpy(three, a, sizeof(int) * T), memcpy(three + T, b, sizeof(int) * T),
            memcpy(three + 2 * T, a, sizeof(int) * T);
        CHECK(be->ops->head_inputs(be, three, 3, ha) == GPT_OK);
        CHECK(memcmp(ha + 2 * T * d, ha, T * d * sizeof(float)) == 0 &&
              memcmp(ha + T * d, hb, T * d * sizeof(float)) == 0);
    }
    /* last_logits of a prefix = head(reference final-norm output at the prefix's last position) */
    CHECK(be->ops->last_logits(be, a, J, logits) == GPT_OK);
    w = be->ops->params(be) + be->layout.lm_head;
    for (j = 0; j < v; j++) {
        double want = 0;
        for (i = 0; i < d; i++) want += xf[(J - 1) * d + i] * w[j * d + i];
        bad += !t__near(logits[j], want, 1e-5, 1e-4);
    }
    CHECK(bad == 0);
    free(pd);
    be->ops->destroy(be);
}

/* Backward without zero_grad adds: two identical micro-batches give twice the gradient. */
static void test_gradient_accumulation(void)
{
    enum { B = 2, T = 8 };
    gpt_config cfg = tiny_config();
    gpt_backend *be = NULL;
    int in[B * T], tg[B * T], bad = 0;
    t_rng r = {43};
    float loss, *once, *g;
    size_t i, np;
    CHECK(gpt_cpu_backend.create(&cfg, B, T, 8, &be) == GPT_OK);
    if (!be) return;
    np = be->layout.n_params, g = be->ops->grads(be);
    once = (float *)malloc(np * sizeof(float));
    random_tokens(in, B * T, cfg.vocab_size, &r);
    random_tokens(tg, B * T, cfg.vocab_size, &r);
    be->ops->forward(be, in, tg, &loss);
    be->ops->backward(be);
    memcpy(once, g, np * sizeof(float));
    be->ops->forward(be, in, tg, &loss);
    be->ops->backward(be);
    for (i = 0; i < np; i++) bad += !t__near(g[i], 2.0 * once[i], 1e-9, 1e-5);
    CHECK(bad == 0);
    CHECK(be->ops->zero_grad(be) == GPT_OK && g[0] == 0.0f && g[np - 1] == 0.0f);
    free(once);
    be->ops->destroy(be);
}

/* ---- layout, config, errors --------------------------------------------------------------- */

static void test_layout_and_config(void)
{
    gpt_config c12 = {6, 384, 6, 256, 4096, 0}, bad = {2, 30, 4, 8, 32, 0},
               odd = {2, 12, 4, 8, 32, 0};
    gpt_config def = {0, 0, 0, 0, 0, 0}, keep;
    gpt_config cfg = tiny_config();
    gpt_layout lay = gpt_layout_of(&cfg);
    gpt_tensor t;
    size_t expect = 0, block = 0;
    int i, ok = 1;
    CHECK(gpt_config_resolve(&c12) == GPT_OK && c12.mlp_hidden == 1024);
    CHECK(gpt_config_resolve(&def) == GPT_OK && def.n_heads == 6 && def.d_model == 384);
    keep = bad;
    CHECK(gpt_config_resolve(&bad) == GPT_ERR_CONFIG && memcmp(&bad, &keep, sizeof bad) == 0);
    CHECK(gpt_config_resolve(&odd) == GPT_ERR_CONFIG); /* head_dim 3 is odd: RoPE needs pairs */
    CHECK(gpt_config_resolve(NULL) == GPT_ERR_NULL);
    /* tensors tile the block in order, without gaps */
    CHECK(lay.n_tensors == 2 + 7 * cfg.n_layers);
    for (i = 0; i < lay.n_tensors; i++) {
        ok &= gpt_tensor_info(&cfg, i, &t) == GPT_OK && t.offset == expect;
        expect += t.rows * t.cols;
        if (t.kind == GPT_TENSOR_BLOCK_MATRIX) block += t.rows * t.cols;
    }
    CHECK(ok && expect == lay.n_params);
    CHECK(gpt_tensor_info(&cfg, lay.n_tensors, &t) == GPT_ERR_SIZE);
    gpt_tensor_info(&cfg, 0, &t);
    CHECK(strcmp(t.name, "wte") == 0 && t.kind == GPT_TENSOR_EMBEDDING && t.rows == 32 &&
          t.cols == 16);
    gpt_tensor_info(&cfg, 1 + 7 + 6, &t); /* layer 1's w_down */
    CHECK(strcmp(t.name, "layers.1.w_down") == 0 && t.kind == GPT_TENSOR_BLOCK_MATRIX &&
          t.rows == 16 && t.cols == 40 && t.layer == 1);
    gpt_tensor_info(&cfg, lay.n_tensors - 1, &t);
    CHECK(strcmp(t.name, "lm_head") == 0 && t.kind == GPT_TENSOR_HEAD && t.offset == lay.lm_head);
    CHECK(block == (size_t)cfg.n_layers * (4 * 16 * 16 + 3 * 16 * 40));
    /* the 12M config: 6 * (4 d^2 + 3 d f) + 2 V d parameters; flops 6 N_matmul + 12 L T d */
    CHECK(gpt_layout_of(&c12).n_params == 6u * (4 * 384 * 384 + 3 * 384 * 1024) + 2u * 4096 * 384);
    CHECK_NEAR(gpt_flops_per_token(&c12),
               6.0 * (6 * (4.0 * 384 * 384 + 3.0 * 384 * 1024) + 4096.0 * 384) +
                   12.0 * 6 * 256 * 384,
               0, 1e-12);
    /* the same seed gives the same weights; their spread is 0.02 */
    {
        float *p1 = (float *)malloc(lay.n_params * 4), *p2 = (float *)malloc(lay.n_params * 4);
        double ss = 0;
        size_t k;
        gpt_init_params(&cfg, p1, 77);
        gpt_init_params(&cfg, p2, 77);
        for (k = 0; k < lay.n_params; k++) ss += (double)p1[k] * p1[k];
        CHECK(memcmp(p1, p2, lay.n_params * 4) == 0);
        CHECK_NEAR(sqrt(ss / (double)lay.n_params), 0.02, 0, 0.03);
        gpt_init_params(&cfg, p2, 78);
        CHECK(memcmp(p1, p2, lay.n_params * 4) != 0);
        free(p1), free(p2);
    }
}

static void test_errors(void)
{
    gpt_config cfg = tiny_config(), bad = {2, 30, 4, 8, 32, 0};
    gpt_backend *be = (gpt_backend *)&cfg;
    int in[2 * 8] = {0}, tg[2 * 8] = {0};
    float loss = 123.0f, logits[32];
    CHECK(gpt_cpu_backend.create(&bad, 2, 8, 0, &be) == GPT_ERR_CONFIG && be == NULL);
    CHECK(gpt_cpu_backend.create(&cfg, 2, 9, 0, &be) == GPT_ERR_SIZE &&
          be == NULL); /* T > seq_len */
    CHECK(gpt_cpu_backend.create(&cfg, 0, 8, 0, &be) == GPT_ERR_SIZE);
    CHECK(gpt_cpu_backend.create(&cfg, 2, 8, 0, &be) == GPT_OK);
    if (!be) return;
    CHECK(be->ops->backward(be) == GPT_ERR_STATE); /* no forward yet */
    in[3] = cfg.vocab_size;
    CHECK(be->ops->forward(be, in, tg, &loss) == GPT_ERR_TOKEN && loss == 123.0f);
    in[3] = 0, tg[5] = -1;
    CHECK(be->ops->forward(be, in, tg, &loss) == GPT_ERR_TOKEN && loss == 123.0f);
    tg[5] = 0;
    CHECK(be->ops->forward(be, in, NULL, &loss) == GPT_OK && loss == 0.0f);
    CHECK(be->ops->backward(be) == GPT_ERR_STATE); /* forward without targets */
    CHECK(be->ops->forward(be, in, tg, &loss) == GPT_OK && be->ops->backward(be) == GPT_OK);
    CHECK(be->ops->backward(be) == GPT_ERR_STATE); /* twice: the activations are spent */
    CHECK(be->ops->forward(be, in, tg, &loss) == GPT_OK);
    CHECK(be->ops->last_logits(be, in, 3, logits) == GPT_OK); /* clobbers the activations */
    CHECK(be->ops->backward(be) == GPT_ERR_STATE);
    CHECK(be->ops->last_logits(be, in, 9, logits) == GPT_ERR_SIZE);
    CHECK(be->ops->last_logits(be, in, 0, logits) == GPT_ERR_SIZE);
    CHECK(be->ops->head_inputs(be, in, 0, logits) == GPT_ERR_SIZE);
    CHECK(be->ops->forward(be, NULL, tg, &loss) == GPT_ERR_NULL);
    CHECK(be->ops->push_params(be) == GPT_OK && be->ops->pull_grads(be) == GPT_OK);
    CHECK(strcmp(gpt_status_string(GPT_ERR_TOKEN), "token id outside [0, vocab_size)") == 0);
    be->ops->destroy(be);
    gpt_cpu_backend.destroy(NULL);
}

/* ---- timing ------------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Alternates a training step (zero_grad + forward + backward) with a 1024^3 muon_sgemm so both
 * see the same machine noise; prints each step, then the medians and their ratio. */
static int bench(int argc, char **argv)
{
    enum { SQ = 1024 };
    gpt_config cfg = {6, 384, 6, 256, 4096, 0};
    int B = 4, steps = 5, s, *in, *tg;
    gpt_backend *be = NULL;
    gpt_status st;
    float loss = 0, *ga, *gb, *gc;
    double t0, t1, flops, *t_step, *t_fwd, *t_gemm, step_med, gemm_med;
    size_t n, i;
    t_rng r = {1};
    if (argc >= 8) {
        cfg.n_layers = atoi(argv[2]), cfg.d_model = atoi(argv[3]), cfg.n_heads = atoi(argv[4]);
        cfg.vocab_size = atoi(argv[5]), cfg.seq_len = atoi(argv[6]), B = atoi(argv[7]);
    }
    if (argc >= 9) steps = atoi(argv[8]);
    if (steps < 1) steps = 1;
    st = gpt_cpu_backend.create(&cfg, B, cfg.seq_len > 0 ? cfg.seq_len : 256, 1, &be);
    if (st != GPT_OK) {
        fprintf(stderr, "create: %s\n", gpt_status_string(st));
        return 1;
    }
    cfg = be->config;
    n = (size_t)B * cfg.seq_len;
    in = (int *)malloc(n * sizeof(int)), tg = (int *)malloc(n * sizeof(int));
    for (i = 0; i < n; i++)
        in[i] = (int)(t_rng_u64(&r) % (unsigned)cfg.vocab_size), tg[i] = in[(i + 1) % n];
    ga = (float *)malloc(SQ * SQ * sizeof(float)), gb = (float *)malloc(SQ * SQ * sizeof(float));
    gc = (float *)malloc(SQ * SQ * sizeof(float));
    fill_normal(ga, SQ * SQ, 1.0, &r), fill_normal(gb, SQ * SQ, 1.0, &r);
    t_step = (double *)malloc((size_t)steps * sizeof(double));
    t_fwd = (double *)malloc((size_t)steps * sizeof(double));
    t_gemm = (double *)malloc((size_t)steps * sizeof(double));
    flops = gpt_flops_per_token(&cfg) * (double)n;
    be->ops->forward(be, in, tg, &loss); /* warm-up: first touch of every buffer */
    be->ops->backward(be);
    muon_sgemm(MUON_NO_TRANS, MUON_NO_TRANS, SQ, SQ, SQ, 1.0f, ga, SQ, gb, SQ, 0.0f, gc, SQ);
    for (s = 0; s < steps; s++) {
        t0 = gpt_now_seconds();
        be->ops->zero_grad(be);
        be->ops->forward(be, in, tg, &loss);
        t1 = gpt_now_seconds();
        be->ops->backward(be);
        t_fwd[s] = t1 - t0, t_step[s] = gpt_now_seconds() - t0;
        t0 = gpt_now_seconds();
        muon_sgemm(MUON_NO_TRANS, MUON_NO_TRANS, SQ, SQ, SQ, 1.0f, ga, SQ, gb, SQ, 0.0f, gc, SQ);
        t_gemm[s] = gpt_now_seconds() - t0;
        printf("step %d: %.1f ms (forward %.1f ms), loss %.4f; sgemm %d^3: %.1f GFLOP/s\n", s,
               1e3 * t_step[s], 1e3 * t_fwd[s], loss, SQ, 2.0 * SQ * SQ * SQ / t_gemm[s] * 1e-9);
    }
    qsort(t_step, (size_t)steps, sizeof(double), cmp_double);
    qsort(t_gemm, (size_t)steps, sizeof(double), cmp_double);
    step_med = t_step[steps / 2], gemm_med = t_gemm[steps / 2];
    printf("config L=%d d=%d H=%d V=%d T=%d F=%d B=%d params=%zu threads=%d\n", cfg.n_layers,
           cfg.d_model, cfg.n_heads, cfg.vocab_size, cfg.seq_len, cfg.mlp_hidden, B,
           be->layout.n_params,
#ifdef _OPENMP
           omp_get_max_threads()
#else
           1
#endif
    );
    printf("median step %.1f ms (best %.1f): %.2f GFLOP/s (%.2f GFLOP per step = "
           "gpt_flops_per_token x tokens); median sgemm %d^3 %.2f GFLOP/s; ratio %.2f\n",
           1e3 * step_med, 1e3 * t_step[0], flops / step_med * 1e-9, flops * 1e-9, SQ,
           2.0 * SQ * SQ * SQ / gemm_med * 1e-9,
           (flops / step_med) / (2.0 * SQ * SQ * SQ / gemm_med));
    free(in), free(tg), free(ga), free(gb), free(gc), free(t_step), free(t_fwd), free(t_gemm);
    be->ops->destroy(be);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "--bench") == 0) return bench(argc, argv);
    RUN(test_rmsnorm);
    RUN(test_qk_norm);
    RUN(test_rope);
    RUN(test_attention);
    RUN(test_swiglu);
    RUN(test_linear);
    RUN(test_crossentropy);
    RUN(test_embedding);
    RUN(test_layout_and_config);
    RUN(test_model_gradients);
    RUN(test_loss_at_init);
    RUN(test_overfit_tiny_batch);
    RUN(test_gradient_accumulation);
    RUN(test_determinism);
    RUN(test_causal_and_sampling);
    RUN(test_errors);
    return TEST_REPORT();
}
