/* cpu.c - the CPU backend: layers (cpu_layers.h) and the model's forward/backward on them
 * (backend.h). Every matmul goes through muon_sgemm, so muon.h's SIMD / CBLAS paths speed the
 * trainer; elementwise work and attention run under OpenMP over rows or (sequence, head).
 *
 * Activations kept for the backward, per layer (n = tokens in the batch):
 *   xn1, rstd1     pre-attention norm output (the QKV GEMM input) and its 1/rms
 *   qkv, rstd_qk   fused q|k|v GEMM output, q and k normalised in place per head (QK-norm)
 *   qr, kr         q and k after RoPE (the attention inputs); v is read from qkv
 *   att            softmax probabilities, one t x t block per (sequence, head)
 *   y              attention output (the wo GEMM input)
 *   xn2, rstd2     pre-MLP norm output (the gate|up GEMM input)
 *   gu, h          gate|up GEMM output and silu(gate) * up (the w_down GEMM input)
 * The residual stream is one buffer: the norms' backward needs only their outputs and 1/rms.
 * create() allocates everything (activations, scratch, GEMM packing workspace); forward,
 * backward and the diagnostics allocate nothing.
 */
#include "backend.h"
#include "cpu_layers.h"
#include "muon.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#ifdef _OPENMP
#include <omp.h>
#define GPT_OMP(x) _Pragma(#x)
static int thread_id(void) { return omp_get_thread_num(); }
static int max_threads(void) { return omp_get_max_threads(); }
/* The team of one of this file's loops over `work` elements (the attention's: multiply-adds),
 * wanting `threads` (0: all): one thread below GPT_PAR_MIN (the fork and join outweigh the work,
 * and on a busy machine a region can wait a scheduler time slice for its slowest member), else
 * muon_team's answer, which is one thread while muon.h's own regions find the machine short of
 * cores (docs/embedding.md, "Shared machines"). */
#define GPT_PAR_MIN 65536.0
static int team(double work, int threads) { return work < GPT_PAR_MIN ? 1 : muon_team(threads); }
#else
#define GPT_OMP(x)
static int thread_id(void) { return 0; }
static int max_threads(void) { return 1; }
#endif

gpt_gemm_ws gpt_gemm_ws_for(int threads)
{
    gpt_gemm_ws ws;
    size_t whole;
    if (threads <= 0) threads = max_threads();
    ws.mem = NULL;
    ws.threads = threads;
    ws.per_thread = muon_gemm_workspace_size(1);
    whole = muon_gemm_workspace_size(threads);
    ws.bytes = whole > (size_t)threads * ws.per_thread ? whole : (size_t)threads * ws.per_thread;
    return ws;
}

/* C = alpha op(A) op(B) + beta C through muon, in workspace (mem, bytes) when mem is not NULL.
 * A failing muon_sgemm here means a bug in this file (NULL or zero size), never bad user input. */
static void gemm(void *mem, size_t bytes, muon_transpose ta, muon_transpose tb, size_t m, size_t n,
                 size_t k, float alpha, const float *a, size_t lda, const float *b, size_t ldb,
                 float beta, float *c, size_t ldc)
{
    muon_status st =
        mem ? muon_sgemm_ws(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, mem, bytes)
            : muon_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    if (st != MUON_OK) {
        fprintf(stderr, "cpu.c: muon_sgemm failed: %s\n", muon_status_string(st));
        abort();
    }
}

/* ---- layers ------------------------------------------------------------------------------ */

void gpt_embedding_forward(float *x, const int *tokens, const float *wte, size_t n, size_t d)
{
    size_t i;
    for (i = 0; i < n; i++) memcpy(x + i * d, wte + (size_t)tokens[i] * d, d * sizeof(float));
}

void gpt_embedding_backward(float *dwte, const int *tokens, const float *dx, size_t n, size_t d)
{
    size_t i, j;
    for (i = 0; i < n; i++) {
        float *row = dwte + (size_t)tokens[i] * d;
        const float *g = dx + i * d;
        for (j = 0; j < d; j++) row[j] += g[j];
    }
}

void gpt_rmsnorm_forward(float *y, size_t ldy, float *rstd, const float *x, size_t ldx, size_t n,
                         size_t n_groups, size_t group_dim)
{
    size_t row;
    GPT_OMP(omp parallel for schedule(static) num_threads(team((double)n * (double)(n_groups * group_dim), 0)))
    for (row = 0; row < n; row++) {
        size_t g, j;
        for (g = 0; g < n_groups; g++) {
            const float *xg = x + row * ldx + g * group_dim;
            float *yg = y + row * ldy + g * group_dim;
            double ss = 0.0;
            float r;
            for (j = 0; j < group_dim; j++) ss += (double)xg[j] * xg[j];
            r = (float)(1.0 / sqrt(ss / (double)group_dim + GPT_RMSNORM_EPS));
            for (j = 0; j < group_dim; j++) yg[j] = xg[j] * r;
            rstd[row * n_groups + g] = r;
        }
    }
}

void gpt_rmsnorm_backward(float *dx, size_t lddx, const float *dy, size_t lddy, const float *y,
                          size_t ldy, const float *rstd, size_t n, size_t n_groups,
                          size_t group_dim, int accumulate)
{
    size_t row;
    GPT_OMP(omp parallel for schedule(static) num_threads(team((double)n * (double)(n_groups * group_dim), 0)))
    for (row = 0; row < n; row++) {
        size_t g, j;
        for (g = 0; g < n_groups; g++) {
            const float *dyg = dy + row * lddy + g * group_dim;
            const float *yg = y + row * ldy + g * group_dim;
            float *dxg = dx + row * lddx + g * group_dim;
            float r = rstd[row * n_groups + g], mean_dyy;
            double dot = 0.0;
            /* y = x r, r = (mean(x^2) + eps)^(-1/2)  =>  dx = r (dy - y mean(dy y)) */
            for (j = 0; j < group_dim; j++) dot += (double)dyg[j] * yg[j];
            mean_dyy = (float)(dot / (double)group_dim);
            if (accumulate)
                for (j = 0; j < group_dim; j++) dxg[j] += r * (dyg[j] - yg[j] * mean_dyy);
            else
                for (j = 0; j < group_dim; j++) dxg[j] = r * (dyg[j] - yg[j] * mean_dyy);
        }
    }
}

void gpt_rope_tables(float *cos_table, float *sin_table, int t_max, int head_dim)
{
    int pos, i, half = head_dim / 2;
    for (pos = 0; pos < t_max; pos++)
        for (i = 0; i < half; i++) {
            double angle = pos * pow(GPT_ROPE_BASE, -2.0 * i / head_dim);
            cos_table[pos * half + i] = (float)cos(angle);
            sin_table[pos * half + i] = (float)sin(angle);
        }
}

void gpt_rope(float *out, size_t ldo, const float *in, size_t ldi, int n_seq, int t, int n_heads,
              int head_dim, const float *cos_table, const float *sin_table, int inverse)
{
    long row, n = (long)n_seq * t;
    int half = head_dim / 2;
    float sign = inverse ? -1.0f : 1.0f; /* the inverse rotates by -angle */
    GPT_OMP(omp parallel for schedule(static) num_threads(team((double)n * n_heads * head_dim, 0)))
    for (row = 0; row < n; row++) {
        const float *c = cos_table + (size_t)(row % t) * half;
        const float *s = sin_table + (size_t)(row % t) * half;
        int h, i;
        for (h = 0; h < n_heads; h++) {
            const float *x = in + (size_t)row * ldi + (size_t)h * head_dim;
            float *o = out + (size_t)row * ldo + (size_t)h * head_dim;
            for (i = 0; i < half; i++) {
                float x0 = x[2 * i], x1 = x[2 * i + 1], si = sign * s[i];
                o[2 * i] = x0 * c[i] - x1 * si;
                o[2 * i + 1] = x0 * si + x1 * c[i];
            }
        }
    }
}

void gpt_attention_forward(float *out, size_t ldo, float *att, const float *q, size_t ldq,
                           const float *k, size_t ldk, const float *v, size_t ldv, int n_seq, int t,
                           int n_heads, int head_dim, const gpt_gemm_ws *ws)
{
    const float scale = (float)(1.0 / sqrt((double)head_dim));
    int use_ws = ws && ws->mem, threads = use_ws ? ws->threads : max_threads();
    long bh, n_bh = (long)n_seq * n_heads;
    (void)threads; /* used only by the OpenMP clause */
    GPT_OMP(omp parallel for schedule(static) num_threads(team(2.0 * (double)n_bh * t * t * head_dim, threads)))
    for (bh = 0; bh < n_bh; bh++) {
        size_t s = (size_t)(bh / n_heads), h = (size_t)(bh % n_heads), tt = (size_t)t;
        size_t hd = (size_t)head_dim, row0 = s * tt, i, j;
        float *p = att + (size_t)bh * tt * tt;
        void *mem = use_ws ? (char *)ws->mem + (size_t)thread_id() * ws->per_thread : NULL;
        size_t bytes = use_ws ? ws->per_thread : 0;
        /* scores for the full t x t square (one GEMM), then the causal mask in the softmax */
        gemm(mem, bytes, MUON_NO_TRANS, MUON_TRANS, tt, tt, hd, scale, q + row0 * ldq + h * hd, ldq,
             k + row0 * ldk + h * hd, ldk, 0.0f, p, tt);
        for (i = 0; i < tt; i++) {
            float *pi = p + i * tt, mx = pi[0], inv;
            double sum = 0.0;
            for (j = 1; j <= i; j++) mx = pi[j] > mx ? pi[j] : mx;
            for (j = 0; j <= i; j++) {
                pi[j] = expf(pi[j] - mx);
                sum += pi[j];
            }
            inv = (float)(1.0 / sum);
            for (j = 0; j <= i; j++) pi[j] *= inv;
            for (j = i + 1; j < tt; j++) pi[j] = 0.0f;
        }
        gemm(mem, bytes, MUON_NO_TRANS, MUON_NO_TRANS, tt, hd, tt, 1.0f, p, tt,
             v + row0 * ldv + h * hd, ldv, 0.0f, out + row0 * ldo + h * hd, ldo);
    }
}

void gpt_attention_backward(float *dq, size_t lddq, float *dk, size_t lddk, float *dv, size_t lddv,
                            float *scratch, const float *dout, size_t lddo, const float *att,
                            const float *q, size_t ldq, const float *k, size_t ldk, const float *v,
                            size_t ldv, int n_seq, int t, int n_heads, int head_dim,
                            const gpt_gemm_ws *ws)
{
    const float scale = (float)(1.0 / sqrt((double)head_dim));
    int use_ws = ws && ws->mem, threads = use_ws ? ws->threads : max_threads();
    long bh, n_bh = (long)n_seq * n_heads;
    (void)threads; /* used only by the OpenMP clause */
    GPT_OMP(omp parallel for schedule(static) num_threads(team(2.0 * (double)n_bh * t * t * head_dim, threads)))
    for (bh = 0; bh < n_bh; bh++) {
        size_t s = (size_t)(bh / n_heads), h = (size_t)(bh % n_heads), tt = (size_t)t;
        size_t hd = (size_t)head_dim, row0 = s * tt, i, j;
        const float *p = att + (size_t)bh * tt * tt;
        void *mem = use_ws ? (char *)ws->mem + (size_t)thread_id() * ws->per_thread : NULL;
        size_t bytes = use_ws ? ws->per_thread : 0;
        const float *dob = dout + row0 * lddo + h * hd;
        float *ds = scratch + (size_t)bh * tt * tt;
        /* dP = dO V^T;  dV = P^T dO */
        gemm(mem, bytes, MUON_NO_TRANS, MUON_TRANS, tt, tt, hd, 1.0f, dob, lddo,
             v + row0 * ldv + h * hd, ldv, 0.0f, ds, tt);
        gemm(mem, bytes, MUON_TRANS, MUON_NO_TRANS, tt, hd, tt, 1.0f, p, tt, dob, lddo, 0.0f,
             dv + row0 * lddv + h * hd, lddv);
        /* softmax backward: dS_ij = P_ij (dP_ij - sum_k P_ik dP_ik); masked entries stay 0 */
        for (i = 0; i < tt; i++) {
            const float *pi = p + i * tt;
            float *di = ds + i * tt, dot;
            double acc = 0.0;
            for (j = 0; j <= i; j++) acc += (double)pi[j] * di[j];
            dot = (float)acc;
            for (j = 0; j <= i; j++) di[j] = pi[j] * (di[j] - dot);
            for (j = i + 1; j < tt; j++) di[j] = 0.0f;
        }
        /* S = scale Q K^T  =>  dQ = scale dS K,  dK = scale dS^T Q */
        gemm(mem, bytes, MUON_NO_TRANS, MUON_NO_TRANS, tt, hd, tt, scale, ds, tt,
             k + row0 * ldk + h * hd, ldk, 0.0f, dq + row0 * lddq + h * hd, lddq);
        gemm(mem, bytes, MUON_TRANS, MUON_NO_TRANS, tt, hd, tt, scale, ds, tt,
             q + row0 * ldq + h * hd, ldq, 0.0f, dk + row0 * lddk + h * hd, lddk);
    }
}

void gpt_swiglu_forward(float *h, const float *gu, size_t n, size_t f)
{
    size_t row;
    GPT_OMP(omp parallel for schedule(static) num_threads(team((double)n * (double)f, 0)))
    for (row = 0; row < n; row++) {
        const float *gate = gu + row * 2 * f, *up = gate + f;
        float *hr = h + row * f;
        size_t j;
        for (j = 0; j < f; j++) hr[j] = gate[j] / (1.0f + expf(-gate[j])) * up[j];
    }
}

void gpt_swiglu_backward(float *dgu, const float *dh, const float *gu, size_t n, size_t f)
{
    size_t row;
    GPT_OMP(omp parallel for schedule(static) num_threads(team((double)n * (double)f, 0)))
    for (row = 0; row < n; row++) {
        const float *gate = gu + row * 2 * f, *up = gate + f, *dhr = dh + row * f;
        float *dgate = dgu + row * 2 * f, *dup = dgate + f;
        size_t j;
        for (j = 0; j < f; j++) {
            float g = gate[j], sig = 1.0f / (1.0f + expf(-g)), silu = g * sig;
            /* d silu / dg = sig (1 + g (1 - sig)) */
            dgate[j] = dhr[j] * up[j] * sig * (1.0f + g * (1.0f - sig));
            dup[j] = dhr[j] * silu;
        }
    }
}

void gpt_linear_forward(float *y, const float *x, const float *w, size_t n, size_t in, size_t out,
                        int accumulate, const gpt_gemm_ws *ws)
{
    void *mem = ws ? ws->mem : NULL;
    size_t bytes = ws ? ws->bytes : 0;
    gemm(mem, bytes, MUON_NO_TRANS, MUON_TRANS, n, out, in, 1.0f, x, in, w, in,
         accumulate ? 1.0f : 0.0f, y, out);
}

void gpt_linear_backward(float *dx, float *dw, const float *dy, const float *x, const float *w,
                         size_t n, size_t in, size_t out, int accumulate_dx, const gpt_gemm_ws *ws)
{
    void *mem = ws ? ws->mem : NULL;
    size_t bytes = ws ? ws->bytes : 0;
    gemm(mem, bytes, MUON_TRANS, MUON_NO_TRANS, out, in, n, 1.0f, dy, out, x, in, 1.0f, dw, in);
    if (dx)
        gemm(mem, bytes, MUON_NO_TRANS, MUON_NO_TRANS, n, in, out, 1.0f, dy, out, w, in,
             accumulate_dx ? 1.0f : 0.0f, dx, in);
}

/* e^x for x <= 0 (a logit minus its row's largest), within 2 ulp of e^x: x = k ln 2 + r with
 * |r| <= ln 2 / 2 (ln 2 in two parts, so k ln 2 is exact), e^r by its Taylor polynomial of degree
 * 7 (truncation below 6e-9 relative), 2^k from exponent bits in two factors, so that results down
 * to the subnormals are right. x is clamped at -104 (e^-104 is below half the smallest subnormal:
 * the result is 0 or that subnormal). The AVX2 form below computes the same formula 8 lanes at a
 * time (libm's expf is a call per element, and gcc -O2 vectorises no form of this loop). */
#define EXP_LOG2E 1.44269504088896341f
#define EXP_LN2_HI 0.693145751953125f
#define EXP_LN2_LO 1.42860682030941723212e-6f
static float exp_nonpos(float x)
{
    float xc = x > -104.0f ? x : -104.0f, k = floorf(xc * EXP_LOG2E + 0.5f), r, e;
    union {
        int32_t i;
        float f;
    } s1, s2; /* C99 reads a union member as another's bits */
    int32_t ki = (int32_t)k, k1 = ki >= 0 ? ki / 2 : -((1 - ki) / 2); /* floor(k / 2) */
    r = xc - k * EXP_LN2_HI;
    r = r - k * EXP_LN2_LO;
    e = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720 + r * (1.0f / 5040)))))));
    s1.i = (k1 + 127) * (1 << 23);
    s2.i = (ki - k1 + 127) * (1 << 23);
    return e * s1.f * s2.f;
}

/* One row: p[j] = e^(p[j] - mx), returning their sum (in double; 8 float lanes with AVX2). */
static double exp_row(float *p, size_t v, float mx)
{
    double sum = 0.0;
    size_t j = 0;
#if defined(__AVX2__) && defined(__FMA__)
    {
        const __m256 vmx = _mm256_set1_ps(mx), lo = _mm256_set1_ps(-104.0f);
        __m256 acc = _mm256_setzero_ps();
        float lanes[8];
        int l;
        for (; j + 8 <= v; j += 8) {
            __m256 x = _mm256_max_ps(_mm256_sub_ps(_mm256_loadu_ps(p + j), vmx), lo);
            __m256 k = _mm256_floor_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(EXP_LOG2E), _mm256_set1_ps(0.5f)));
            __m256i ki = _mm256_cvtps_epi32(k), k1 = _mm256_srai_epi32(ki, 1); /* floor(k / 2) */
            __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(EXP_LN2_HI), x), e;
            r = _mm256_fnmadd_ps(k, _mm256_set1_ps(EXP_LN2_LO), r);
            e = _mm256_fmadd_ps(r, _mm256_set1_ps(1.0f / 5040), _mm256_set1_ps(1.0f / 720));
            e = _mm256_fmadd_ps(r, e, _mm256_set1_ps(1.0f / 120));
            e = _mm256_fmadd_ps(r, e, _mm256_set1_ps(1.0f / 24));
            e = _mm256_fmadd_ps(r, e, _mm256_set1_ps(1.0f / 6));
            e = _mm256_fmadd_ps(r, e, _mm256_set1_ps(0.5f));
            e = _mm256_fmadd_ps(r, e, _mm256_set1_ps(1.0f));
            e = _mm256_fmadd_ps(r, e, _mm256_set1_ps(1.0f));
            e = _mm256_mul_ps(e, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k1, _mm256_set1_epi32(127)), 23)));
            e = _mm256_mul_ps(e, _mm256_castsi256_ps(_mm256_slli_epi32(
                                     _mm256_add_epi32(_mm256_sub_epi32(ki, k1), _mm256_set1_epi32(127)), 23)));
            _mm256_storeu_ps(p + j, e);
            acc = _mm256_add_ps(acc, e);
            if ((j & 2047) == 2040) { /* every 256 vectors: into the double sum */
                _mm256_storeu_ps(lanes, acc);
                for (l = 0; l < 8; l++) sum += lanes[l];
                acc = _mm256_setzero_ps();
            }
        }
        _mm256_storeu_ps(lanes, acc);
        for (l = 0; l < 8; l++) sum += lanes[l];
    }
#endif
    for (; j < v; j++) {
        p[j] = exp_nonpos(p[j] - mx);
        sum += p[j];
    }
    return sum;
}

void gpt_crossentropy_forward(float *losses, float *probs, const int *targets, size_t n, size_t v)
{
    size_t row;
    GPT_OMP(omp parallel for schedule(static) num_threads(team((double)n * (double)v, 0)))
    for (row = 0; row < n; row++) {
        float *p = probs + row * v, mx = p[0], target_logit = p[targets[row]], inv;
        double sum;
        size_t j;
        for (j = 1; j < v; j++) mx = p[j] > mx ? p[j] : mx;
        sum = exp_row(p, v, mx);
        inv = (float)(1.0 / sum);
        for (j = 0; j < v; j++) p[j] *= inv;
        losses[row] = (float)(log(sum) + mx - target_logit);
    }
}

void gpt_crossentropy_backward(float *dlogits, const float *probs, const int *targets, size_t n,
                               size_t v, float dloss)
{
    size_t row;
    GPT_OMP(omp parallel for schedule(static) num_threads(team((double)n * (double)v, 0)))
    for (row = 0; row < n; row++) {
        const float *p = probs + row * v;
        float *g = dlogits + row * v, p_target = p[targets[row]]; /* read before g overwrites p */
        size_t j;
        for (j = 0; j < v; j++) g[j] = dloss * p[j];
        g[targets[row]] = dloss * (p_target - 1.0f);
    }
}

/* ---- the backend -------------------------------------------------------------------------- */

typedef struct cpu_backend {
    gpt_backend base; /* first: a gpt_backend* points here */
    float *params, *grads;
    float *arena; /* every activation and scratch buffer below points into it */
    gpt_acts acts; /* activations and scratch (model.h), pointing into arena */
    gpt_gemm_ws ws; /* GEMM packing memory for OpenMP's thread count at create */
    int *inputs, *targets;
    int n_seq, t;       /* shape of the last forward */
    int backward_ready; /* the last activation-touching call was a forward with targets */
} cpu_backend;

static cpu_backend *cpu_of(gpt_backend *be) { return (cpu_backend *)be; }

static void cpu_destroy(gpt_backend *be)
{
    cpu_backend *c = cpu_of(be);
    if (!c) return;
    free(c->params);
    free(c->grads);
    free(c->arena);
    free(c->ws.mem);
    free(c->acts.layers);
    free(c->inputs);
    free(c->targets);
    free(c);
}

static gpt_status cpu_create(const gpt_config *cfg, int max_batch, int max_seq, uint64_t seed,
                             gpt_backend **out)
{
    gpt_config resolved;
    cpu_backend *c;
    double tokens, floats;
    size_t n, arena_floats;
    if (!out) return GPT_ERR_NULL;
    *out = NULL;
    if (!cfg) return GPT_ERR_NULL;
    resolved = *cfg;
    if (gpt_config_resolve(&resolved) != GPT_OK) return GPT_ERR_CONFIG;
    cfg = &resolved; /* zero fields take their defaults; be->config holds the result */
    if (max_batch < 1 || max_seq < 1 || max_seq > cfg->seq_len) return GPT_ERR_SIZE;
    /* a generous bound on the activation floats, in double so that it cannot overflow */
    tokens = (double)max_batch * max_seq;
    floats = (cfg->n_layers + 1.0) *
                 (tokens * (12.0 * cfg->d_model + 3.0 * cfg->mlp_hidden + 4.0 * cfg->n_heads + 3) +
                  tokens * (double)cfg->n_heads * max_seq) +
             tokens * ((double)cfg->vocab_size + 1) + 2.0 * cfg->seq_len * cfg->d_model;
    if (floats * sizeof(float) > 1e15) return GPT_ERR_NOMEM;
    n = (size_t)max_batch * (size_t)max_seq;

    c = (cpu_backend *)calloc(1, sizeof *c);
    if (!c) return GPT_ERR_NOMEM;
    c->base.ops = &gpt_cpu_backend;
    c->base.config = *cfg;
    c->base.layout = gpt_layout_of(cfg);
    c->base.max_batch = max_batch;
    c->base.max_seq = max_seq;
    arena_floats = gpt_carve_acts(&c->base.config, max_batch, max_seq, 1, NULL, NULL);
    c->params = (float *)malloc(c->base.layout.n_params * sizeof(float));
    c->grads = (float *)calloc(c->base.layout.n_params, sizeof(float));
    c->arena = (float *)malloc(arena_floats * sizeof(float));
    c->acts.layers = (gpt_layer_acts *)malloc((size_t)cfg->n_layers * sizeof *c->acts.layers);
    c->inputs = (int *)malloc(n * sizeof(int));
    c->targets = (int *)malloc(n * sizeof(int));
    c->ws = gpt_gemm_ws_for(0);
    c->ws.mem = malloc(c->ws.bytes);
    if (!c->params || !c->grads || !c->arena || !c->acts.layers || !c->inputs || !c->targets ||
        !c->ws.mem) {
        cpu_destroy(&c->base);
        return GPT_ERR_NOMEM;
    }
    gpt_carve_acts(&c->base.config, max_batch, max_seq, 1, c->arena, &c->acts);
    gpt_rope_tables(c->acts.rope_cos, c->acts.rope_sin, cfg->seq_len, cfg->d_model / cfg->n_heads);
    gpt_init_params(cfg, c->params, seed);
    *out = &c->base;
    return GPT_OK;
}

static float *cpu_params(gpt_backend *be) { return be ? cpu_of(be)->params : NULL; }
static float *cpu_grads(gpt_backend *be) { return be ? cpu_of(be)->grads : NULL; }
static gpt_status cpu_nothing_to_sync(gpt_backend *be) { return be ? GPT_OK : GPT_ERR_NULL; }

/* Embedding -> blocks -> final norm, for n_seq sequences of t tokens (c->inputs). Leaves the
 * head inputs in c->acts.xf. */
static void cpu_trunk_forward(cpu_backend *c, int n_seq, int t)
{
    const gpt_config *cfg = &c->base.config;
    size_t n = (size_t)n_seq * t, d = (size_t)cfg->d_model, f = (size_t)cfg->mlp_hidden;
    size_t nh = (size_t)cfg->n_heads;
    int hd = cfg->d_model / cfg->n_heads, l;
    gpt_embedding_forward(c->acts.x, c->inputs, c->params + c->base.layout.wte, n, d);
    for (l = 0; l < cfg->n_layers; l++) {
        gpt_layer_acts *a = &c->acts.layers[l];
        gpt_layer_ptrs w = gpt_layer_at(&c->base.layout, c->params, l);
        /* attention: x += wo(attn(rope(qknorm(q)), rope(qknorm(k)), v)), q|k|v = wqkv(norm(x)) */
        gpt_rmsnorm_forward(a->xn1, d, a->rstd1, c->acts.x, d, n, 1, d);
        gpt_linear_forward(a->qkv, a->xn1, w.wq, n, d, 3 * d, 0, &c->ws); /* wq|wk|wv: one GEMM */
        gpt_rmsnorm_forward(a->qkv, 3 * d, a->rstd_qk, a->qkv, 3 * d, n, 2 * nh, (size_t)hd);
        gpt_rope(a->qr, d, a->qkv, 3 * d, n_seq, t, (int)nh, hd, c->acts.rope_cos, c->acts.rope_sin, 0);
        gpt_rope(a->kr, d, a->qkv + d, 3 * d, n_seq, t, (int)nh, hd, c->acts.rope_cos, c->acts.rope_sin, 0);
        gpt_attention_forward(a->y, d, a->att, a->qr, d, a->kr, d, a->qkv + 2 * d, 3 * d, n_seq, t,
                              (int)nh, hd, &c->ws);
        gpt_linear_forward(c->acts.x, a->y, w.wo, n, d, d, 1, &c->ws);
        /* MLP: x += w_down(silu(w_gate(norm(x))) * w_up(norm(x))) */
        gpt_rmsnorm_forward(a->xn2, d, a->rstd2, c->acts.x, d, n, 1, d);
        gpt_linear_forward(a->gu, a->xn2, w.w_gate, n, d, 2 * f, 0, &c->ws); /* w_gate|w_up */
        gpt_swiglu_forward(a->h, a->gu, n, f);
        gpt_linear_forward(c->acts.x, a->h, w.w_down, n, f, d, 1, &c->ws);
    }
    gpt_rmsnorm_forward(c->acts.xf, d, c->acts.rstdf, c->acts.x, d, n, 1, d);
}

static gpt_status cpu_forward(gpt_backend *be, const int *inputs, const int *targets, float *loss)
{
    cpu_backend *c = cpu_of(be);
    size_t n, d, v, i;
    double sum = 0.0;
    if (!be || !inputs || !loss) return GPT_ERR_NULL;
    n = (size_t)be->max_batch * be->max_seq, d = (size_t)be->config.d_model;
    v = (size_t)be->config.vocab_size;
    if (!gpt_tokens_valid(inputs, n, be->config.vocab_size)) return GPT_ERR_TOKEN;
    if (targets && !gpt_tokens_valid(targets, n, be->config.vocab_size)) return GPT_ERR_TOKEN;
    memcpy(c->inputs, inputs, n * sizeof(int));
    c->n_seq = be->max_batch, c->t = be->max_seq;
    cpu_trunk_forward(c, c->n_seq, c->t);
    gpt_linear_forward(c->acts.logits, c->acts.xf, c->params + be->layout.lm_head, n, d, v, 0, &c->ws);
    c->backward_ready = targets != NULL;
    if (!targets) {
        *loss = 0.0f;
        return GPT_OK;
    }
    memcpy(c->targets, targets, n * sizeof(int));
    gpt_crossentropy_forward(c->acts.losses, c->acts.logits, c->targets, n, v);
    for (i = 0; i < n; i++) sum += c->acts.losses[i];
    *loss = (float)(sum / (double)n);
    return GPT_OK;
}

static gpt_status cpu_backward(gpt_backend *be)
{
    cpu_backend *c = cpu_of(be);
    const gpt_config *cfg;
    size_t n, d, f, v, nh;
    int hd, l;
    if (!be) return GPT_ERR_NULL;
    if (!c->backward_ready) return GPT_ERR_STATE;
    cfg = &be->config;
    n = (size_t)c->n_seq * c->t, d = (size_t)cfg->d_model, f = (size_t)cfg->mlp_hidden;
    v = (size_t)cfg->vocab_size, nh = (size_t)cfg->n_heads, hd = cfg->d_model / cfg->n_heads;
    c->backward_ready = 0; /* the probabilities are overwritten by their gradient below */

    /* head: loss = mean_i CE(logits_i), logits = xf W^T, xf = norm(x) */
    gpt_crossentropy_backward(c->acts.logits, c->acts.logits, c->targets, n, v, (float)(1.0 / (double)n));
    gpt_linear_backward(c->acts.dxn, c->grads + be->layout.lm_head, c->acts.logits, c->acts.xf,
                        c->params + be->layout.lm_head, n, d, v, 0, &c->ws);
    gpt_rmsnorm_backward(c->acts.dres, d, c->acts.dxn, d, c->acts.xf, d, c->acts.rstdf, n, 1, d, 0);

    for (l = cfg->n_layers - 1; l >= 0; l--) {
        gpt_layer_acts *a = &c->acts.layers[l];
        gpt_layer_ptrs w = gpt_layer_at(&be->layout, c->params, l);
        gpt_layer_ptrs g = gpt_layer_at(&be->layout, c->grads, l);
        /* MLP (dres is the gradient of the residual stream after this layer) */
        gpt_linear_backward(c->acts.dh, g.w_down, c->acts.dres, a->h, w.w_down, n, f, d, 0, &c->ws);
        gpt_swiglu_backward(c->acts.dgu, c->acts.dh, a->gu, n, f);
        gpt_linear_backward(c->acts.dxn, g.w_gate, c->acts.dgu, a->xn2, w.w_gate, n, d, 2 * f, 0, &c->ws);
        gpt_rmsnorm_backward(c->acts.dres, d, c->acts.dxn, d, a->xn2, d, a->rstd2, n, 1, d, 1);
        /* attention */
        gpt_linear_backward(c->acts.dy, g.wo, c->acts.dres, a->y, w.wo, n, d, d, 0, &c->ws);
        gpt_attention_backward(c->acts.dqkv, 3 * d, c->acts.dqkv + d, 3 * d, c->acts.dqkv + 2 * d, 3 * d, c->acts.datt,
                               c->acts.dy, d, a->att, a->qr, d, a->kr, d, a->qkv + 2 * d, 3 * d,
                               c->n_seq, c->t, (int)nh, hd, &c->ws);
        gpt_rope(c->acts.dqkv, 3 * d, c->acts.dqkv, 3 * d, c->n_seq, c->t, (int)nh, hd, c->acts.rope_cos,
                 c->acts.rope_sin, 1);
        gpt_rope(c->acts.dqkv + d, 3 * d, c->acts.dqkv + d, 3 * d, c->n_seq, c->t, (int)nh, hd, c->acts.rope_cos,
                 c->acts.rope_sin, 1);
        gpt_rmsnorm_backward(c->acts.dqkv, 3 * d, c->acts.dqkv, 3 * d, a->qkv, 3 * d, a->rstd_qk, n, 2 * nh,
                             (size_t)hd, 0);
        gpt_linear_backward(c->acts.dxn, g.wq, c->acts.dqkv, a->xn1, w.wq, n, d, 3 * d, 0, &c->ws);
        gpt_rmsnorm_backward(c->acts.dres, d, c->acts.dxn, d, a->xn1, d, a->rstd1, n, 1, d, 1);
    }
    gpt_embedding_backward(c->grads + be->layout.wte, c->inputs, c->acts.dres, n, d);
    return GPT_OK;
}

static gpt_status cpu_zero_grad(gpt_backend *be)
{
    if (!be) return GPT_ERR_NULL;
    memset(cpu_of(be)->grads, 0, be->layout.n_params * sizeof(float));
    return GPT_OK;
}

/* gpt_trunk_fn: one chunk of cpu_head_inputs */
static gpt_status cpu_trunk_chunk(void *ctx, const int *tokens, int n_seq, float *out)
{
    gpt_backend *be = (gpt_backend *)ctx;
    cpu_backend *c = cpu_of(be);
    size_t d = (size_t)be->config.d_model, t = (size_t)be->max_seq;
    c->backward_ready = 0;
    memcpy(c->inputs, tokens, (size_t)n_seq * t * sizeof(int));
    cpu_trunk_forward(c, n_seq, (int)t);
    memcpy(out, c->acts.xf, (size_t)n_seq * t * d * sizeof(float));
    return GPT_OK;
}

static gpt_status cpu_head_inputs(gpt_backend *be, const int *tokens, int n_seq, float *out)
{
    if (!be) return GPT_ERR_NULL;
    return gpt_head_inputs_chunked(&be->config, be->max_batch, be->max_seq, tokens, n_seq, out, cpu_trunk_chunk, be);
}

static gpt_status cpu_last_logits(gpt_backend *be, const int *context, int len, float *logits)
{
    cpu_backend *c = cpu_of(be);
    size_t d, v;
    gpt_status st;
    if (!be || !context || !logits) return GPT_ERR_NULL;
    if ((st = gpt_context_check(&be->config, be->max_seq, context, len)) != GPT_OK) return st;
    d = (size_t)be->config.d_model, v = (size_t)be->config.vocab_size;
    c->backward_ready = 0;
    memcpy(c->inputs, context, (size_t)len * sizeof(int));
    cpu_trunk_forward(c, 1, len);
    gpt_linear_forward(logits, c->acts.xf + (size_t)(len - 1) * d, c->params + be->layout.lm_head, 1, d,
                       v, 0, &c->ws);
    return GPT_OK;
}

const gpt_backend_ops gpt_cpu_backend = {
    "cpu",           cpu_create,          cpu_destroy,         cpu_params,
    cpu_grads,       cpu_nothing_to_sync, cpu_nothing_to_sync, cpu_nothing_to_sync,
    cpu_forward,     cpu_backward,        cpu_zero_grad,       cpu_head_inputs,
    cpu_last_logits, NULL, /* the host optimizer (optim.h) */
};
