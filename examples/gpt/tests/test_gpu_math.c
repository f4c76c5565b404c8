/* test_gpu_math.c - the CUDA backend's math (gpu_math.h) on the CPU, held to the CPU backend's
 * layers (cpu_layers.h) and to the headers (muon.h, rownorm.h) on identical inputs.
 *
 * Each test runs gpu_math.h's functions the way the kernels in cuda.cu / cuda_optim.cu call them:
 * 32 lanes per row (a warp) with the warp's butterfly reduction, one thread per column chunk,
 * the same strides and leading dimensions (odd shapes, ld > width), so an indexing mistake in the
 * shared code shows here without a GPU. What this cannot check (the launch geometry, cuBLAS
 * operand mapping, shared-memory reductions) is covered by tests/test_cuda.cu on a device.
 */
#include "tests/test.h"

#include "cpu_layers.h"
#include "gpu_math.h"
#include "model.h"
#include "muon.h"
#include "rownorm.h"

#include <float.h>
#include <stdint.h>

/* ---- helpers ---------------------------------------------------------------------------- */

static t_rng rng = {12345u};
static double urand(void) { return 2.0 * t_rng_uniform(&rng) - 1.0; } /* in (-1, 1) */
static double nrand(void) { return t_rng_normal(&rng); }
static void fill(float *x, size_t n, double scale)
{
    size_t i;
    for (i = 0; i < n; i++) x[i] = (float)(scale * urand());
}
static float *alloc_f(size_t n) { return (float *)calloc(n ? n : 1, sizeof(float)); }

/* max |a - b| / (abs_tol + rel_tol |b|) over n entries (<= 1 passes) */
static double worst(const float *a, const float *b, size_t n, double abs_tol, double rel_tol)
{
    double w = 0.0;
    size_t i;
    for (i = 0; i < n; i++) {
        double e = fabs((double)a[i] - (double)b[i]) / (abs_tol + rel_tol * fabs((double)b[i]));
        if (!(e <= w)) w = e; /* NaN wins */
    }
    return w;
}
static double worst_ld(const float *a, size_t lda, const float *b, size_t ldb, size_t rows, size_t cols,
                       double abs_tol, double rel_tol)
{
    double w = 0.0, e;
    size_t r;
    for (r = 0; r < rows; r++) {
        e = worst(a + r * lda, b + r * ldb, cols, abs_tol, rel_tol);
        if (!(e <= w)) w = e;
    }
    return w;
}

/* the warp: 32 lanes' partials combined as __shfl_xor does */
static double warp_sum(double *part) { return gm_butterfly_sum(part, GM_LANES); }

/* a block of `threads` (a multiple of 32): warp butterflies, then warp 0's over the warp sums
 * (gpt_block_sum in cuda_internal.cuh) */
static double block_sum(double *part, int threads)
{
    double w[GM_LANES];
    int nw = threads / 32, i;
    for (i = 0; i < GM_LANES; i++) w[i] = 0.0;
    for (i = 0; i < nw; i++) w[i] = gm_butterfly_sum(part + 32 * i, 32);
    return gm_butterfly_sum(w, GM_LANES);
}

/* ---- layers ----------------------------------------------------------------------------- */

static void test_constants(void)
{
    double p[GM_LANES];
    int i;
    CHECK_NEAR(GM_RMSNORM_EPS, GPT_RMSNORM_EPS, 0, 0);
    CHECK_NEAR(GM_ROPE_BASE, GPT_ROPE_BASE, 0, 0);
    for (i = 0; i < GM_LANES; i++) p[i] = i + 1;
    CHECK(warp_sum(p) == 528.0);
}

/* k_rmsnorm_forward / _backward: one warp per (row, group) */
static void sim_rmsnorm_forward(float *y, size_t ldy, float *rstd, const float *x, size_t ldx, size_t n,
                                int groups, int gdim)
{
    size_t row;
    int g, lane;
    for (row = 0; row < n; row++)
        for (g = 0; g < groups; g++) {
            const float *xg = x + row * ldx + (size_t)g * gdim;
            float *yg = y + row * ldy + (size_t)g * gdim, r;
            double part[GM_LANES];
            for (lane = 0; lane < GM_LANES; lane++) part[lane] = gm_sumsq_part(xg, gdim, lane, GM_LANES);
            r = gm_rmsnorm_rstd(warp_sum(part), gdim);
            for (lane = 0; lane < GM_LANES; lane++) gm_scale_part(yg, xg, r, gdim, lane, GM_LANES);
            rstd[row * groups + g] = r;
        }
}

static void sim_rmsnorm_backward(float *dx, size_t lddx, const float *dy, size_t lddy, const float *y, size_t ldy,
                                 const float *rstd, size_t n, int groups, int gdim, int acc)
{
    size_t row;
    int g, lane;
    for (row = 0; row < n; row++)
        for (g = 0; g < groups; g++) {
            const float *dyg = dy + row * lddy + (size_t)g * gdim, *yg = y + row * ldy + (size_t)g * gdim;
            float *dxg = dx + row * lddx + (size_t)g * gdim, m;
            double part[GM_LANES];
            for (lane = 0; lane < GM_LANES; lane++) part[lane] = gm_dot_part(dyg, yg, gdim, lane, GM_LANES);
            m = gm_rmsnorm_mean_dyy(warp_sum(part), gdim);
            for (lane = 0; lane < GM_LANES; lane++)
                gm_rmsnorm_backward_part(dxg, dyg, yg, rstd[row * groups + g], m, gdim, acc, lane, GM_LANES);
        }
}

static void test_rmsnorm(void)
{
    /* odd shapes: 7 rows, 3 groups of 42 (> 32 lanes, not a multiple), ld wider than the row */
    const size_t n = 7, ldx = 131, ldy = 129, ldd = 133;
    const int groups = 3, gdim = 42;
    float *x = alloc_f(n * ldx), *y0 = alloc_f(n * ldy), *y1 = alloc_f(n * ldy), *r0 = alloc_f(n * 3),
          *r1 = alloc_f(n * 3), *dy = alloc_f(n * ldd), *dx0 = alloc_f(n * ldd), *dx1 = alloc_f(n * ldd);
    int acc;
    fill(x, n * ldx, 3.0);
    fill(dy, n * ldd, 1.0);
    gpt_rmsnorm_forward(y0, ldy, r0, x, ldx, n, (size_t)groups, (size_t)gdim);
    sim_rmsnorm_forward(y1, ldy, r1, x, ldx, n, groups, gdim);
    CHECK_MSG(worst(r1, r0, n * 3, 0, 1e-6) <= 1, "rstd off by %g", worst(r1, r0, n * 3, 0, 1e-6));
    CHECK(worst_ld(y1, ldy, y0, ldy, n, 126, 1e-7, 1e-6) <= 1);
    CHECK(y1[126] == 0.0f && y1[ldy - 1] == 0.0f); /* nothing past the row's width */
    for (acc = 0; acc <= 1; acc++) {
        fill(dx0, n * ldd, 1.0);
        memcpy(dx1, dx0, n * ldd * sizeof(float));
        gpt_rmsnorm_backward(dx0, ldd, dy, ldd, y0, ldy, r0, n, (size_t)groups, (size_t)gdim, acc);
        sim_rmsnorm_backward(dx1, ldd, dy, ldd, y0, ldy, r0, n, groups, gdim, acc);
        CHECK_MSG(worst(dx1, dx0, n * ldd, 1e-6, 1e-5) <= 1, "acc %d: %g", acc, worst(dx1, dx0, n * ldd, 1e-6, 1e-5));
    }
    /* in place (y == x, same ld), as the QK-norm runs */
    memcpy(y1, x, n * 126 * sizeof(float));
    sim_rmsnorm_forward(y1, 126, r1, y1, 126, n, groups, gdim);
    gpt_rmsnorm_forward(y0, 126, r0, x, 126, n, (size_t)groups, (size_t)gdim);
    CHECK(worst(y1, y0, n * 126, 1e-7, 1e-6) <= 1);
    free(x), free(y0), free(y1), free(r0), free(r1), free(dy), free(dx0), free(dx1);
}

static void test_rope(void)
{
    const int t_max = 11, hd = 10, nh = 3, n_seq = 2, t = 7, half = hd / 2;
    const size_t ldi = 3 * 30 + 1, ldo = 31, n = (size_t)n_seq * t;
    float cs0[11 * 5], sn0[11 * 5], cs1[11 * 5], sn1[11 * 5];
    float *in = alloc_f(n * ldi), *o0 = alloc_f(n * ldo), *o1 = alloc_f(n * ldo);
    int pos, i, inverse;
    gpt_rope_tables(cs0, sn0, t_max, hd);
    for (pos = 0; pos < t_max; pos++)
        for (i = 0; i < half; i++) {
            double a = gm_rope_angle(pos, i, hd);
            cs1[pos * half + i] = (float)cos(a);
            sn1[pos * half + i] = (float)sin(a);
        }
    CHECK(memcmp(cs0, cs1, sizeof cs0) == 0 && memcmp(sn0, sn1, sizeof sn0) == 0);
    fill(in, n * ldi, 2.0);
    for (inverse = 0; inverse <= 1; inverse++) {
        size_t e;
        memset(o0, 0, n * ldo * sizeof(float));
        memset(o1, 0, n * ldo * sizeof(float));
        gpt_rope(o0, ldo, in + 30, ldi, n_seq, t, nh, hd, cs0, sn0, inverse);
        /* k_rope: one thread per (row, head, pair) */
        for (e = 0; e < n * (size_t)nh * half; e++) {
            size_t row = e / ((size_t)nh * half);
            int rest = (int)(e % ((size_t)nh * half)), h = rest / half, p = rest % half;
            size_t ps = row % (size_t)t, col = (size_t)h * hd + 2 * (size_t)p;
            const float *src = in + 30;
            gm_rope_pair(src[row * ldi + col], src[row * ldi + col + 1], cs1[ps * half + p], sn1[ps * half + p],
                         inverse, &o1[row * ldo + col], &o1[row * ldo + col + 1]);
        }
        CHECK_MSG(worst(o1, o0, n * ldo, 1e-7, 1e-6) <= 1, "inverse %d", inverse);
    }
    free(in), free(o0), free(o1);
}

static void test_swiglu(void)
{
    const size_t n = 5, f = 37;
    float *gu = alloc_f(n * 2 * f), *h0 = alloc_f(n * f), *h1 = alloc_f(n * f), *dh = alloc_f(n * f),
          *d0 = alloc_f(n * 2 * f), *d1 = alloc_f(n * 2 * f);
    size_t e;
    fill(gu, n * 2 * f, 6.0);
    fill(dh, n * f, 1.0);
    gpt_swiglu_forward(h0, gu, n, f);
    gpt_swiglu_backward(d0, dh, gu, n, f);
    for (e = 0; e < n * f; e++) { /* k_swiglu_*: one thread per output element */
        size_t row = e / f, j = e % f;
        h1[e] = gm_swiglu_forward(gu[row * 2 * f + j], gu[row * 2 * f + f + j]);
        gm_swiglu_backward(gu[row * 2 * f + j], gu[row * 2 * f + f + j], dh[e], &d1[row * 2 * f + j],
                           &d1[row * 2 * f + f + j]);
    }
    CHECK(worst(h1, h0, n * f, 1e-7, 1e-6) <= 1);
    CHECK(worst(d1, d0, n * 2 * f, 1e-7, 1e-6) <= 1);
    free(gu), free(h0), free(h1), free(dh), free(d0), free(d1);
}

/* k_causal_softmax on scores already scaled: one warp per row of each t x t block */
static void sim_causal_softmax(float *att, size_t rows, int t)
{
    size_t r;
    int lane;
    for (r = 0; r < rows; r++) {
        int i = (int)(r % (size_t)t);
        float *p = att + r * (size_t)t, mx = -INFINITY, inv;
        double part[GM_LANES];
        for (lane = 0; lane < GM_LANES; lane++) {
            float m = gm_max_part(p, i + 1, lane, GM_LANES);
            mx = m > mx ? m : mx;
        }
        for (lane = 0; lane < GM_LANES; lane++) part[lane] = gm_exp_part(p, i + 1, mx, lane, GM_LANES);
        inv = gm_inv_sum(warp_sum(part));
        for (lane = 0; lane < GM_LANES; lane++) {
            gm_scale_part(p, p, inv, i + 1, lane, GM_LANES);
            gm_zero_tail_part(p, i + 1, t, lane, GM_LANES);
        }
    }
}

static void sim_causal_softmax_backward(float *ds, const float *att, size_t rows, int t)
{
    size_t r;
    int lane, k;
    for (r = 0; r < rows; r++) {
        int i = (int)(r % (size_t)t);
        const float *p = att + r * (size_t)t;
        float *d = ds + r * (size_t)t, dot;
        double part[GM_LANES];
        for (lane = 0; lane < GM_LANES; lane++) part[lane] = gm_dot_part(p, d, i + 1, lane, GM_LANES);
        dot = (float)warp_sum(part);
        for (lane = 0; lane < GM_LANES; lane++) {
            for (k = lane; k <= i; k += GM_LANES) d[k] = gm_softmax_backward(p[k], d[k], dot);
            gm_zero_tail_part(d, i + 1, t, lane, GM_LANES);
        }
    }
}

/* the whole attention layer as cuda.cu composes it (GEMMs in double here), against cpu.c */
static void test_attention(void)
{
    const int n_seq = 2, t = 37, nh = 3, hd = 6; /* t > 32: rows wrap the warp */
    const size_t d = (size_t)nh * hd, ld = 3 * d + 5, n = (size_t)n_seq * t, tt = (size_t)t * t;
    const size_t rows = (size_t)n_seq * nh * t;
    float *qkv = alloc_f(n * ld), *out0 = alloc_f(n * d), *out1 = alloc_f(n * d), *att0 = alloc_f(rows * t),
          *att1 = alloc_f(rows * t), *dout = alloc_f(n * d), *dq0 = alloc_f(n * ld), *dq1 = alloc_f(n * ld),
          *scr = alloc_f(rows * t), *ds = alloc_f(rows * t);
    const float *q = qkv, *k = qkv + d, *v = qkv + 2 * d;
    float scale = (float)(1.0 / sqrt((double)hd));
    int s, h, i, j, l;
    fill(qkv, n * ld, 1.5);
    fill(dout, n * d, 1.0);
    gpt_attention_forward(out0, d, att0, q, ld, k, ld, v, ld, n_seq, t, nh, hd, NULL);
    for (s = 0; s < n_seq; s++)
        for (h = 0; h < nh; h++)
            for (i = 0; i < t; i++)
                for (j = 0; j < t; j++) {
                    double acc = 0.0;
                    for (l = 0; l < hd; l++)
                        acc += (double)q[(size_t)(s * t + i) * ld + (size_t)h * hd + l] *
                               k[(size_t)(s * t + j) * ld + (size_t)h * hd + l];
                    att1[((size_t)s * nh + h) * tt + (size_t)i * t + j] = (float)(scale * acc);
                }
    sim_causal_softmax(att1, rows, t);
    CHECK_MSG(worst(att1, att0, rows * t, 1e-6, 1e-5) <= 1, "P: %g", worst(att1, att0, rows * t, 1e-6, 1e-5));
    for (s = 0; s < n_seq; s++)
        for (h = 0; h < nh; h++)
            for (i = 0; i < t; i++)
                for (l = 0; l < hd; l++) {
                    double acc = 0.0;
                    for (j = 0; j < t; j++)
                        acc += (double)att1[((size_t)s * nh + h) * tt + (size_t)i * t + j] *
                               v[(size_t)(s * t + j) * ld + (size_t)h * hd + l];
                    out1[(size_t)(s * t + i) * d + (size_t)h * hd + l] = (float)acc;
                }
    CHECK(worst(out1, out0, n * d, 1e-5, 1e-4) <= 1);
    /* backward: dP = dO V^T, softmax backward (simulated kernel), dQ = scale dS K */
    gpt_attention_backward(dq0, ld, dq0 + d, ld, dq0 + 2 * d, ld, scr, dout, d, att0, q, ld, k, ld, v, ld, n_seq, t,
                           nh, hd, NULL);
    for (s = 0; s < n_seq; s++)
        for (h = 0; h < nh; h++)
            for (i = 0; i < t; i++)
                for (j = 0; j < t; j++) {
                    double acc = 0.0;
                    for (l = 0; l < hd; l++)
                        acc += (double)dout[(size_t)(s * t + i) * d + (size_t)h * hd + l] *
                               v[(size_t)(s * t + j) * ld + (size_t)h * hd + l];
                    ds[((size_t)s * nh + h) * tt + (size_t)i * t + j] = (float)acc;
                }
    sim_causal_softmax_backward(ds, att0, rows, t);
    CHECK(worst(ds, scr, rows * t, 1e-6, 1e-4) <= 1);
    for (s = 0; s < n_seq; s++)
        for (h = 0; h < nh; h++)
            for (i = 0; i < t; i++)
                for (l = 0; l < hd; l++) {
                    double acc = 0.0;
                    for (j = 0; j < t; j++)
                        acc += (double)ds[((size_t)s * nh + h) * tt + (size_t)i * t + j] *
                               k[(size_t)(s * t + j) * ld + (size_t)h * hd + l];
                    dq1[(size_t)(s * t + i) * ld + (size_t)h * hd + l] = (float)(scale * acc);
                }
    CHECK(worst_ld(dq1, ld, dq0, ld, n, d, 1e-5, 1e-3) <= 1);
    free(qkv), free(out0), free(out1), free(att0), free(att1), free(dout), free(dq0), free(dq1), free(scr);
    free(ds);
}

/* k_crossentropy_forward: one block of 256 threads per row */
static void test_crossentropy(void)
{
    const size_t n = 3, v = 1001;
    const int threads = 256;
    int targets[3] = {0, 500, 1000};
    float *lg = alloc_f(n * v), *p0 = alloc_f(n * v), *p1 = alloc_f(n * v), *l0 = alloc_f(n), *l1 = alloc_f(n),
          *g0 = alloc_f(n * v), *g1 = alloc_f(n * v);
    double part[256];
    size_t row, e;
    int th;
    fill(lg, n * v, 8.0);
    lg[1] = 40.0f; /* a dominant logit */
    memcpy(p0, lg, n * v * sizeof(float));
    memcpy(p1, lg, n * v * sizeof(float));
    gpt_crossentropy_forward(l0, p0, targets, n, v);
    for (row = 0; row < n; row++) {
        float *p = p1 + row * v, tl = p[targets[row]], mx = -INFINITY, inv;
        double sum;
        for (th = 0; th < threads; th++) {
            float m = gm_max_part(p, (int)v, th, threads);
            mx = m > mx ? m : mx;
        }
        for (th = 0; th < threads; th++) part[th] = gm_exp_part(p, (int)v, mx, th, threads);
        sum = block_sum(part, threads);
        inv = gm_inv_sum(sum);
        for (th = 0; th < threads; th++) gm_scale_part(p, p, inv, (int)v, th, threads);
        l1[row] = gm_ce_loss(sum, mx, tl);
    }
    CHECK(worst(l1, l0, n, 1e-6, 1e-6) <= 1);
    CHECK(worst(p1, p0, n * v, 1e-9, 1e-5) <= 1);
    gpt_crossentropy_backward(g0, p0, targets, n, v, 0.25f);
    for (e = 0; e < n * v; e++) g1[e] = gm_ce_grad(p0[e], (int)(e % v) == targets[e / v], 0.25f);
    CHECK(memcmp(g0, g1, n * v * sizeof(float)) == 0);
    free(lg), free(p0), free(p1), free(l0), free(l1), free(g0), free(g1);
}

/* ---- the cuBLAS operand mapping ---------------------------------------------------------- */

/* cuBLAS's sgemm semantics (column-major; element (i, j) of X at X[i + j ld]), naive, in double */
static void cm_sgemm(int ta, int tb, int m, int n, int k, float alpha, const float *A, int lda, const float *B, int ldb,
                     float beta, float *C, int ldc)
{
    int i, j, l;
    for (j = 0; j < n; j++)
        for (i = 0; i < m; i++) {
            double acc = 0.0;
            for (l = 0; l < k; l++) {
                double a = ta ? A[l + (size_t)i * lda] : A[i + (size_t)l * lda];
                double b = tb ? B[j + (size_t)l * ldb] : B[l + (size_t)j * ldb];
                acc += a * b;
            }
            C[i + (size_t)j * ldc] = (float)(alpha * acc + beta * C[i + (size_t)j * ldc]);
        }
}

/* gpt_cuda__gemm's call (gm_rowmajor_gemm, batched with strides) against muon_sgemm, row-major,
 * every transpose pair, odd sizes, leading dimensions wider than the rows */
static void test_gemm_mapping(void)
{
    const int m = 13, n = 7, k = 11, batch = 3;
    int ta, tb, b;
    for (ta = 0; ta <= 1; ta++)
        for (tb = 0; tb <= 1; tb++) {
            int lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 2, ldc = n + 5;
            int arows = ta ? k : m, brows = tb ? n : k;
            long long sa = (long long)arows * lda + 1, sb = (long long)brows * ldb + 2, sc = (long long)m * ldc + 3;
            float *A = alloc_f((size_t)sa * batch), *B = alloc_f((size_t)sb * batch), *C0 = alloc_f((size_t)sc * batch);
            float *C1 = alloc_f((size_t)sc * batch);
            gm_cublas_gemm g = gm_rowmajor_gemm(ta, tb, m, n, k, lda, sa, ldb, sb, ldc, sc);
            fill(A, (size_t)sa * batch, 1.0), fill(B, (size_t)sb * batch, 1.0), fill(C0, (size_t)sc * batch, 1.0);
            memcpy(C1, C0, (size_t)sc * batch * sizeof(float));
            for (b = 0; b < batch; b++) {
                CHECK(muon_sgemm((muon_transpose)ta, (muon_transpose)tb, (size_t)m, (size_t)n, (size_t)k, 0.75f,
                                 A + b * sa, (size_t)lda, B + b * sb, (size_t)ldb, 0.5f, C0 + b * sc, (size_t)ldc) ==
                      MUON_OK);
                /* cuBLAS's first operand is the row-major B, its second the row-major A */
                cm_sgemm(g.trans_first, g.trans_second, g.m, g.n, g.k, 0.75f, B + b * g.stride_first, g.ld_first,
                         A + b * g.stride_second, g.ld_second, 0.5f, C1 + b * g.stride_c, g.ldc);
            }
            CHECK_MSG(worst(C1, C0, (size_t)sc * batch, 1e-6, 1e-5) <= 1, "ta %d tb %d: %g", ta, tb,
                      worst(C1, C0, (size_t)sc * batch, 1e-6, 1e-5));
            free(A), free(B), free(C0), free(C1);
        }
}

/* ---- optimizers ------------------------------------------------------------------------- */

static void test_adamw(void)
{
    const size_t n = 333;
    muon_adamw_state st;
    muon_adamw_config cfg = muon_adamw_default();
    float *p0 = alloc_f(n), *p1 = alloc_f(n), *g = alloc_f(n), *m = alloc_f(n), *v = alloc_f(n);
    float *S0 = alloc_f(n), *S1 = alloc_f(n);
    long long t;
    size_t i;
    cfg.lr = 3e-3, cfg.beta1 = 0.9, cfg.beta2 = 0.999, cfg.eps = 1e-10, cfg.weight_decay = 0.1;
    CHECK(muon_adamw_init(&st, n) == MUON_OK);
    fill(p0, n, 0.5);
    memcpy(p1, p0, n * sizeof(float));
    for (t = 1; t <= 4; t++) {
        double bc1 = gm_bias_correction(cfg.beta1, (double)t), bc2 = gm_bias_correction(cfg.beta2, (double)t);
        fill(g, n, t == 2 ? 1e-6 : 1.0);
        CHECK(muon_adamw_step(&st, &cfg, p0, g, S0) == MUON_OK);
        for (i = 0; i < n; i++)
            S1[i] = gm_adamw_element(&p1[i], &m[i], &v[i], g[i], cfg.beta1, cfg.beta2, cfg.lr, cfg.eps,
                                     cfg.lr * cfg.weight_decay, bc1, bc2);
        CHECK_MSG(worst(S1, S0, n, 0, 1e-7) <= 1, "step %lld: S %g", t, worst(S1, S0, n, 0, 1e-7));
    }
    CHECK_MSG(worst(p1, p0, n, 0, 1e-7) <= 1, "param %g", worst(p1, p0, n, 0, 1e-7));
    CHECK(worst(m, st.m, n, 0, 1e-7) <= 1 && worst(v, st.v, n, 0, 1e-7) <= 1);
    CHECK(gm_bias_correction(0.0, 3.0) == 1.0);
    muon_adamw_free(&st);
    free(p0), free(p1), free(g), free(m), free(v), free(S0), free(S1);
}

/* k_scale: the clipping factor applied as muon_clip_grad_norm applies it */
static void test_clip_scale(void)
{
    const size_t n = 257;
    float *g0 = alloc_f(n), *g1 = alloc_f(n);
    float *ptr[1];
    size_t sizes[1] = {257}, i;
    double total = 0.0, ss = 0.0;
    fill(g0, n, 3.0);
    memcpy(g1, g0, n * sizeof(float));
    for (i = 0; i < n; i++) ss += (double)g1[i] * g1[i];
    ptr[0] = g0;
    CHECK(muon_clip_grad_norm(ptr, sizes, 1, 0.7, &total) == MUON_OK);
    CHECK_NEAR(total, sqrt(ss), 0, 1e-15);
    for (i = 0; i < n; i++) g1[i] = gm_clip_scale(g1[i], 0.7 / sqrt(ss));
    CHECK(memcmp(g0, g1, n * sizeof(float)) == 0);
    free(g0), free(g1);
}

static void test_ns_schedules(void)
{
    muon_ns_config zero, r, pe = muon_ns_preset(MUON_NS_POLAR_EXPRESS, 0), cyc;
    double sig[4] = {1e-3, 0.05, 0.3, 1.0};
    int i, k, kind;
    memset(&zero, 0, sizeof zero);
    CHECK(muon_ns_resolve(&zero, &r) == MUON_OK && r.count == 1 && r.steps == 5 && r.coeffs[0][0] == 3.4445 &&
          r.coeffs[0][1] == -4.7750 && r.coeffs[0][2] == 2.0315);
    CHECK(muon_ns_resolve(NULL, &r) == MUON_OK && r.steps == 5);
    /* the transfer built from gm_ns_triple equals muon.h's for every preset and a cycle schedule */
    memset(&cyc, 0, sizeof cyc);
    cyc.count = 2, cyc.steps = 5, cyc.mode = MUON_NS_CYCLE, cyc.safety = 1.0;
    cyc.coeffs[0][0] = 1.5, cyc.coeffs[0][1] = -0.5, cyc.coeffs[1][0] = 2.0, cyc.coeffs[1][1] = -1.5;
    cyc.coeffs[1][2] = 0.5;
    for (kind = 0; kind <= 4; kind++) {
        muon_ns_config src = kind < 4 ? muon_ns_preset((muon_ns_kind)kind, 0) : cyc;
        CHECK(muon_ns_resolve(&src, &r) == MUON_OK);
        for (i = 0; i < 4; i++) {
            double x = sig[i] / r.safety, want = muon_ns_transfer(&src, sig[i]);
            for (k = 0; k < r.steps; k++) {
                const double *tr = gm_ns_triple(&r, k);
                x = x * (tr[0] + x * x * (tr[1] + x * x * tr[2]));
            }
            CHECK_MSG(fabs(x - want) <= 1e-12 * (1 + fabs(want)), "kind %d sigma %g: %g vs %g", kind, sig[i], x, want);
        }
    }
    CHECK(gm_ns_triple(&pe, 0)[0] == pe.coeffs[0][0] && gm_ns_triple(&pe, 7)[0] == 1.875 &&
          gm_ns_triple(&pe, 12)[0] == 1.875);
    zero.count = -1;
    CHECK(muon_ns_resolve(&zero, &r) == MUON_ERR_DOMAIN);
}

/* cuBLAS's ssyrk (column-major; only the `lower` triangle i >= j of C written) and ssymm with
 * side right (C = alpha B A + beta C, A symmetric n x n read from its lower triangle), naive */
static void cm_ssyrk_lower(int trans, int n, int k, float alpha, const float *A, int lda, float beta, float *C, int ldc)
{
    int i, j, l;
    for (j = 0; j < n; j++)
        for (i = j; i < n; i++) {
            double acc = 0.0;
            for (l = 0; l < k; l++)
                acc += trans ? (double)A[l + (size_t)i * lda] * A[l + (size_t)j * lda]
                             : (double)A[i + (size_t)l * lda] * A[j + (size_t)l * lda];
            C[i + (size_t)j * ldc] = (float)(alpha * acc + beta * C[i + (size_t)j * ldc]);
        }
}

static void cm_ssymm_right_lower(int m, int n, float alpha, const float *A, int lda, const float *B, int ldb, float beta,
                                 float *C, int ldc)
{
    int i, j, l;
    for (j = 0; j < n; j++)
        for (i = 0; i < m; i++) {
            double acc = 0.0;
            for (l = 0; l < n; l++) {
                float a = l >= j ? A[l + (size_t)j * lda] : A[j + (size_t)l * lda]; /* A(l, j), lower */
                acc += (double)B[i + (size_t)l * ldb] * a;
            }
            C[i + (size_t)j * ldc] = (float)(alpha * acc + beta * C[i + (size_t)j * ldc]);
        }
}

/* gpt_cuda_muon_step's algorithm on the host: the same cuBLAS calls with the same arguments
 * (emulated above), the same index logic as its kernels, element work through gpu_math.h; for
 * comparison with muon_step */
static void sim_muon_step(float *w, const float *g, float *mom, size_t rows, size_t cols, const muon_config *cfg0)
{
    muon_config rc;
    const muon_config *cfg = &rc;
    muon_status rs = muon_config_resolve(cfg0, &rc); /* as gpt_cuda_muon_step */
    muon_ns_config ns = rc.ns;
    size_t split = rc.split_rows, r = rows / split, total = rows * cols, ch, e, i, j;
    float *U = alloc_f(total), *X = alloc_f(total), *Y = alloc_f(total), *A, *Bm;
    double scale = gm_muon_shape_scale((int)cfg->scale, cfg->scale_coeff, (double)r, (double)cols);
    int k;
    size_t m0 = r < cols ? r : cols;
    A = alloc_f(m0 * m0), Bm = alloc_f(m0 * m0);
    CHECK(rs == MUON_OK);
    for (e = 0; e < total; e++) {
        float nb;
        U[e] = gm_muon_direction(mom[e], g[e], cfg->momentum, cfg->nesterov, (int)cfg->momentum_form, &nb);
        mom[e] = nb;
    }
    for (ch = 0; ch < split; ch++) {
        float *Gc = U + ch * r * cols, *sw;
        int tall = r > cols;
        size_t m = tall ? cols : r, n = tall ? r : cols;
        double ss = 0.0, norm, inv;
        for (e = 0; e < r * cols; e++) ss += (double)Gc[e] * Gc[e];
        norm = sqrt(ss);
        inv = norm == 0.0 ? 0.0 : 1.0 / (ns.safety * norm + ns.eps);
        for (e = 0; e < r * cols; e++) X[gm_ns_index(e, r, cols, tall)] = (float)((double)Gc[e] * inv); /* k_ns_load */
        for (k = 0; k < ns.steps; k++) {
            const double *tr = gm_ns_triple(&ns, k);
            float a = (float)tr[0], b = (float)tr[1], c = (float)tr[2];
            memset(A, 0x7f, m * m * sizeof(float)); /* garbage where cuBLAS writes nothing */
            cm_ssyrk_lower(1, (int)m, (int)n, 1.0f, X, (int)n, 0.0f, A, (int)m);
            if (c != 0.0f) {
                for (e = 0; e < m * m; e++) { /* k_symmetrize */
                    i = e % m, j = e / m;
                    if (i < j) A[i + j * m] = A[j + i * m];
                }
                memcpy(Bm, A, m * m * sizeof(float));
                cm_ssyrk_lower(0, (int)m, (int)m, c, A, (int)m, b, Bm, (int)m);
                for (e = 0; e < m * m; e++) /* k_ns_poly, from B */
                    if (e % m == e / m) Bm[e] += a;
            } else {
                for (e = 0; e < m * m; e++) /* k_ns_poly, from A */
                    Bm[e] = e % m == e / m ? b * A[e] + a : b * A[e];
            }
            cm_ssymm_right_lower((int)n, (int)m, 1.0f, Bm, (int)m, X, (int)n, 0.0f, Y, (int)n);
            sw = X, X = Y, Y = sw;
        }
        for (e = 0; e < r * cols; e++) Gc[e] = (float)(-cfg->lr * scale) * X[gm_ns_index(e, r, cols, tall)]; /* k_ns_store */
    }
    for (e = 0; e < total; e++) w[e] = gm_decay_add(w[e], cfg->lr * cfg->weight_decay, U[e]);
    free(U), free(X), free(Y), free(A), free(Bm);
}

static void test_muon(void)
{
    struct { size_t rows, cols, split; int ns_kind, scale, form, nesterov; } cases[] = {
        {13, 29, 1, MUON_NS_JORDAN, MUON_SCALE_ORIGINAL, MUON_MOMENTUM_EMA, 1},
        {29, 13, 1, MUON_NS_JORDAN, MUON_SCALE_ORIGINAL, MUON_MOMENTUM_EMA, 1},
        {27, 10, 3, MUON_NS_POLAR_EXPRESS, MUON_SCALE_MATCH_ADAMW, MUON_MOMENTUM_SUM, 0},
        {17, 17, 1, MUON_NS_CUBIC, MUON_SCALE_SPECTRAL, MUON_MOMENTUM_EMA, 1},
        {1, 9, 1, MUON_NS_JORDAN, MUON_SCALE_NONE, MUON_MOMENTUM_EMA, 1},
    };
    size_t c;
    for (c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t rows = cases[c].rows, cols = cases[c].cols, total = rows * cols;
        muon_state st;
        muon_config cfg = muon_default();
        float *w0 = alloc_f(total), *w1 = alloc_f(total), *g = alloc_f(total), *mom = alloc_f(total);
        int step;
        cfg.lr = 0.02, cfg.weight_decay = 0.1, cfg.split_rows = cases[c].split;
        cfg.ns = muon_ns_preset((muon_ns_kind)cases[c].ns_kind, 0);
        cfg.scale = (muon_scale_mode)cases[c].scale, cfg.momentum_form = (muon_momentum_form)cases[c].form;
        cfg.nesterov = cases[c].nesterov;
        CHECK(muon_init(&st, rows, cols) == MUON_OK);
        fill(w0, total, 0.05);
        memcpy(w1, w0, total * sizeof(float));
        for (step = 0; step < 3; step++) {
            fill(g, total, step == 1 ? 1e-3 : 1.0);
            CHECK(muon_step(&st, &cfg, w0, cols, g, cols, NULL, 0) == MUON_OK);
            sim_muon_step(w1, g, mom, rows, cols, &cfg);
        }
        CHECK_MSG(worst(mom, st.momentum, total, 0, 1e-6) <= 1, "case %zu momentum", c);
        CHECK_MSG(worst(w1, w0, total, 2e-5 * cfg.lr, 1e-5) <= 1, "case %zu W: %g", c,
                  worst(w1, w0, total, 2e-5 * cfg.lr, 1e-5));
        muon_free(&st);
        free(w0), free(w1), free(g), free(mom);
    }
}

/* gpt_cuda_rownorm_step's passes on the host: column chunks of 256 rows (one thread per column),
 * one warp per row, elementwise write */
#define SIM_CHUNK 256
static void sim_rownorm_step(float *W, const float *G, float *B, size_t rows, size_t cols, const rn_rownorm_config *cfg,
                             unsigned long long t, float *S)
{
    size_t nch = (rows + SIM_CHUNK - 1) / SIM_CHUNK, ch, j, r, e;
    double *mu = (double *)calloc(cols, sizeof(double)), *nu = (double *)calloc(cols, sizeof(double));
    double *rowinv = (double *)calloc(rows, sizeof(double)), *part = (double *)calloc(nch * cols, sizeof(double));
    double part32[GM_LANES], bc, eps_t;
    int cin = !(cfg->flags & (RN_NO_CENTER_IN | RN_REFERENCE_COMPAT));
    int cout = !(cfg->flags & (RN_NO_CENTER_OUT | RN_REFERENCE_COMPAT)), lane;
    float beta = (float)cfg->beta, omb = (float)(1.0 - cfg->beta);
    bc = (cfg->flags & RN_NO_BIAS_CORRECTION) || cfg->beta == 0.0 ? 1.0 : gm_bias_correction(cfg->beta, (double)(t + 1));
    eps_t = cfg->eps * bc;
    if (!cin && !cout) { /* k_rn_plain */
        for (r = 0; r < rows; r++) {
            double inv;
            for (lane = 0; lane < GM_LANES; lane++)
                part32[lane] = gm_rn_plain_ema_part(B + r * cols, G + r * cols, (int)cols, beta, omb, lane, GM_LANES);
            inv = gm_rn_row_inv(warp_sum(part32), eps_t);
            for (lane = 0; lane < GM_LANES; lane++)
                gm_rn_plain_write_part(B + r * cols, -cfg->lr, inv, gm_rn_decay_amount(cfg->lr, cfg->weight_decay),
                                       W + r * cols, S ? S + r * cols : NULL, (int)cols, lane, GM_LANES);
        }
    } else {
        for (ch = 0; ch < nch; ch++) {
            size_t r0 = ch * SIM_CHUNK, r1 = r0 + SIM_CHUNK < rows ? r0 + SIM_CHUNK : rows;
            for (j = 0; j < cols; j++) part[ch * cols + j] = gm_rn_ema_column(B, G, cols, cols, j, r0, r1, beta, omb);
        }
        for (j = 0; j < cols; j++) mu[j] = cin ? gm_combine_chunks(part, nch, cols, j, rows) : 0.0;
        for (r = 0; r < rows; r++) {
            for (lane = 0; lane < GM_LANES; lane++)
                part32[lane] = gm_centred_sumsq_part(B + r * cols, mu, (int)cols, lane, GM_LANES);
            rowinv[r] = gm_rn_row_inv(warp_sum(part32), eps_t);
        }
        if (cout) {
            for (ch = 0; ch < nch; ch++) {
                size_t r0 = ch * SIM_CHUNK, r1 = r0 + SIM_CHUNK < rows ? r0 + SIM_CHUNK : rows;
                for (j = 0; j < cols; j++) part[ch * cols + j] = gm_rn_nu_column(B, cols, j, r0, r1, mu[j], rowinv);
            }
            for (j = 0; j < cols; j++) nu[j] = gm_combine_chunks(part, nch, cols, j, rows);
        }
        for (e = 0; e < rows * cols; e++) {
            float s;
            W[e] = gm_rn_write(B[e], mu[e % cols], rowinv[e / cols], nu[e % cols], -cfg->lr,
                               1.0 - cfg->lr * cfg->weight_decay, W[e], &s);
            if (S) S[e] = s;
        }
    }
    free(mu), free(nu), free(rowinv), free(part);
}

static void test_rownorm(void)
{
    const size_t rows = 517, cols = 37, total = rows * cols; /* 3 chunks, the last partial */
    unsigned flag_sets[4] = {0, RN_REFERENCE_COMPAT, RN_NO_CENTER_OUT, RN_NO_BIAS_CORRECTION};
    int fs;
    for (fs = 0; fs < 4; fs++) {
        rn_rownorm_state st;
        rn_rownorm_config cfg = rn_rownorm_default();
        float *w0 = alloc_f(total), *w1 = alloc_f(total), *g = alloc_f(total), *B = alloc_f(total),
              *s0 = alloc_f(total), *s1 = alloc_f(total);
        unsigned long long t;
        cfg.lr = 3.2e-3, cfg.weight_decay = fs == 3 ? 0.1 : 0.0, cfg.flags = flag_sets[fs];
        CHECK(rn_rownorm_init(&st, rows, cols) == RN_OK);
        fill(w0, total, 0.05);
        memcpy(w1, w0, total * sizeof(float));
        for (t = 0; t < 3; t++) {
            size_t e;
            fill(g, total, 1.0);
            for (e = 0; e < total; e++) g[e] += 0.5f; /* a common component: the projections matter */
            CHECK(rn_rownorm_step(&st, &cfg, w0, cols, g, cols, s0, cols) == RN_OK);
            sim_rownorm_step(w1, g, B, rows, cols, &cfg, t, s1);
        }
        CHECK_MSG(worst(B, st.B, total, 1e-7, 1e-6) <= 1, "flags %u: B %g", flag_sets[fs], worst(B, st.B, total, 1e-7, 1e-6));
        CHECK_MSG(worst(s1, s0, total, 1e-6 * cfg.lr, 1e-5) <= 1, "flags %u: S %g", flag_sets[fs],
                  worst(s1, s0, total, 1e-6 * cfg.lr, 1e-5));
        CHECK(worst(w1, w0, total, 1e-6 * cfg.lr, 1e-6) <= 1);
        rn_rownorm_free(&st);
        free(w0), free(w1), free(g), free(B), free(s0), free(s1);
    }
}

/* Issue 15 items 1 and 2: the device's decay without projections is rownorm.h's bit for bit,
 * also for lr wd near 3e-8 (a float decay factor 1 - lr wd gave none, or 186 % of it, there); a
 * zero centred row steps by 0 whatever eps (1/eps_t overflowed to a NaN step). */
static void test_rownorm_decay_and_zero_rows(void)
{
    const size_t rows = 40, cols = 24, total = rows * cols;
    const double wds[3] = {9.3e-6, 1e-5, 0.1}; /* lr wd = 2.98e-8, 3.2e-8, 3.2e-4 */
    int k;
    CHECK(gm_rn_row_inv(0.0, 1e-8) == 0.0 && gm_rn_row_inv(0.0, 0.0) == 0.0 && gm_rn_row_inv(4.0, 0.0) == 0.5);
    for (k = 0; k < 3; k++) {
        rn_rownorm_state st;
        rn_rownorm_config cfg = rn_rownorm_default();
        float *w0 = alloc_f(total), *w1 = alloc_f(total), *g = alloc_f(total), *B = alloc_f(total),
              *s0 = alloc_f(total), *s1 = alloc_f(total), *wi = alloc_f(total);
        size_t e, moved = 0;
        cfg.lr = 3.2e-3, cfg.weight_decay = wds[k], cfg.flags = RN_REFERENCE_COMPAT;
        CHECK(rn_rownorm_init(&st, rows, cols) == RN_OK);
        fill(w0, total, 0.5);
        memcpy(w1, w0, total * sizeof(float));
        memcpy(wi, w0, total * sizeof(float));
        memset(g, 0, total * sizeof(float)); /* zero rows: only the decay moves W */
        CHECK(rn_rownorm_step(&st, &cfg, w0, cols, g, cols, s0, cols) == RN_OK);
        sim_rownorm_step(w1, g, B, rows, cols, &cfg, 0, s1);
        CHECK_MSG(memcmp(w0, w1, total * sizeof(float)) == 0, "lr wd %g: W differs from rownorm.h", cfg.lr * wds[k]);
        for (e = 0; e < total; e++) moved += w1[e] != wi[e];
        CHECK_MSG(k < 2 || moved > total / 2, "lr wd %g: the decay moved %zu of %zu weights", cfg.lr * wds[k], moved, total);
        rn_rownorm_free(&st);
        free(w0), free(w1), free(g), free(B), free(s0), free(s1), free(wi);
    }
    { /* identical rows: every centred row is zero; a subnormal eps */
        rn_rownorm_state st;
        rn_rownorm_config cfg = rn_rownorm_default();
        float *w0 = alloc_f(total), *w1 = alloc_f(total), *g = alloc_f(total), *B = alloc_f(total),
              *s0 = alloc_f(total), *s1 = alloc_f(total);
        size_t e;
        int finite = 1;
        cfg.eps = 1e-320;
        CHECK(rn_rownorm_init(&st, rows, cols) == RN_OK);
        for (e = 0; e < total; e++) g[e] = (float)(0.25 + 0.01 * (double)(e % cols));
        CHECK(rn_rownorm_step(&st, &cfg, w0, cols, g, cols, s0, cols) == RN_OK);
        sim_rownorm_step(w1, g, B, rows, cols, &cfg, 0, s1);
        for (e = 0; e < total; e++) finite &= s1[e] == 0.0f && s0[e] == 0.0f;
        CHECK_MSG(finite, "a zero centred row must step by 0 (s1[0] = %g, s0[0] = %g)", s1[0], s0[0]);
        rn_rownorm_free(&st);
        free(w0), free(w1), free(g), free(B), free(s0), free(s1);
    }
}

/* beta 0, lr 1, W 0: the step is -P RN(P G), i.e. minus rn_projected_rownorm */
static void test_projected_rownorm(void)
{
    const size_t rows = 70, cols = 45, total = rows * cols;
    float *g = alloc_f(total), *B = alloc_f(total), *W = alloc_f(total), *S = alloc_f(total), *ref = alloc_f(total);
    rn_rownorm_config cfg = rn_rownorm_default();
    size_t e;
    cfg.beta = 0.0, cfg.lr = 1.0, cfg.weight_decay = 0.0;
    fill(g, total, 2.0);
    for (e = 0; e < total; e++) g[e] += 3.0f;
    sim_rownorm_step(W, g, B, rows, cols, &cfg, 0, S);
    CHECK(rn_projected_rownorm(g, rows, cols, cols, (float)cfg.eps, ref, cols) == RN_OK);
    for (e = 0; e < total; e++) ref[e] = -ref[e];
    CHECK_MSG(worst(S, ref, total, 1e-6, 1e-5) <= 1, "%g", worst(S, ref, total, 1e-6, 1e-5));
    free(g), free(B), free(W), free(S), free(ref);
}

/* ---- diagnostics ------------------------------------------------------------------------ */

/* gpt_cuda_row_diameter's algorithm: centre in double, Gram ranking, winner recomputed */
static double sim_diameter(const float *S, size_t rows, size_t cols, size_t *bi, size_t *bj)
{
    size_t nch = (rows + SIM_CHUNK - 1) / SIM_CHUNK, ch, j, i, l;
    double *mu = (double *)calloc(cols, sizeof(double)), *part = (double *)calloc(nch * cols, sizeof(double));
    double *n2 = (double *)calloc(rows, sizeof(double)), best = -1.0, part32[GM_LANES], acc;
    float *C = alloc_f(rows * cols);
    int lane;
    for (ch = 0; ch < nch; ch++) {
        size_t r0 = ch * SIM_CHUNK, r1 = r0 + SIM_CHUNK < rows ? r0 + SIM_CHUNK : rows;
        for (j = 0; j < cols; j++) part[ch * cols + j] = gm_column_sum(S, cols, j, r0, r1);
    }
    for (j = 0; j < cols; j++) mu[j] = gm_combine_chunks(part, nch, cols, j, rows);
    for (i = 0; i < rows; i++) {
        for (l = 0; l < cols; l++) C[i * cols + l] = (float)((double)S[i * cols + l] - mu[l]);
        for (lane = 0; lane < GM_LANES; lane++) part32[lane] = gm_sumsq_part(C + i * cols, (int)cols, lane, GM_LANES);
        n2[i] = warp_sum(part32);
    }
    /* pass 1: the largest Gram-form distance; pass 2: every pair within the fp32 error bound of
     * it, verified exactly in double (gpt_cuda_row_diameter) */
    {
        double max_n2 = 0.0, thr = 0.0, exact_best = -1.0;
        int pass;
        for (i = 0; i < rows; i++) max_n2 = n2[i] > max_n2 ? n2[i] : max_n2;
        *bi = *bj = 0;
        for (pass = 0; pass < 2; pass++) {
            for (i = 0; i < rows; i++)
                for (j = i + 1; j < rows; j++) {
                    float dot = 0.0f; /* a float Gram entry, as the fp32 GEMM gives */
                    double d2;
                    for (l = 0; l < cols; l++) dot += C[i * cols + l] * C[j * cols + l];
                    d2 = gm_gram_dist2(n2[i], n2[j], (double)dot);
                    if (pass == 0 && d2 > best) best = d2;
                    if (pass == 1 && d2 >= thr) {
                        acc = 0.0;
                        for (l = 0; l < cols; l++) {
                            double dd = (double)S[i * cols + l] - (double)S[j * cols + l];
                            acc += dd * dd;
                        }
                        if (acc > exact_best) exact_best = acc, *bi = i, *bj = j;
                    }
                }
            thr = best - 4.0 * (double)cols * ldexp(1.0, -24) * max_n2 * 1.01;
        }
        free(mu), free(part), free(n2), free(C);
        return sqrt(exact_best);
    }
}

static void test_diameter(void)
{
    const size_t rows = 301, cols = 23;
    float *S = alloc_f(rows * cols);
    int kind;
    for (kind = 0; kind < 3; kind++) {
        double d0, d1;
        size_t i0, j0, i1, j1, e;
        for (e = 0; e < rows * cols; e++) S[e] = (float)nrand();
        if (kind == 1) /* a large common component (1 c^T + small) */
            for (e = 0; e < rows * cols; e++) S[e] = 100.0f + 1e-3f * S[e];
        if (kind == 2) /* sphere-like rows (RowNorm steps): all of norm 1 */
            for (e = 0; e < rows; e++) {
                double nn = 0.0;
                size_t l;
                for (l = 0; l < cols; l++) nn += (double)S[e * cols + l] * S[e * cols + l];
                for (l = 0; l < cols; l++) S[e * cols + l] = (float)(S[e * cols + l] / sqrt(nn));
            }
        CHECK(rn_row_diameter(S, rows, cols, cols, &d0, &i0, &j0) == RN_OK);
        d1 = sim_diameter(S, rows, cols, &i1, &j1);
        CHECK_MSG(fabs(d1 - d0) <= 1e-12 * d0, "kind %d: %.17g vs %.17g (pairs %zu,%zu / %zu,%zu)", kind, d1, d0, i1, j1,
                  i0, j0);
    }
    free(S);
}

static void test_hilbert_rms(void)
{
    const size_t rows = 211, cols = 19, tokens = 45;
    float *S = alloc_f(rows * cols), *H = alloc_f(tokens * cols), *C = alloc_f(rows * cols);
    double want, acc = 0.0, mu[19];
    size_t t, r, l;
    int lane;
    fill(S, rows * cols, 1e-2);
    for (r = 0; r < rows * cols; r++) S[r] += 0.5f; /* common component */
    fill(H, tokens * cols, 3.0);
    CHECK(rn_hilbert_rms(S, rows, cols, cols, H, tokens, cols, &want) == RN_OK);
    for (l = 0; l < cols; l++) mu[l] = gm_column_sum(S, cols, l, 0, rows) / (double)rows;
    for (r = 0; r < rows; r++)
        for (l = 0; l < cols; l++) C[r * cols + l] = (float)((double)S[r * cols + l] - mu[l]);
    for (t = 0; t < tokens; t++) { /* tiles of 64 vocabulary rows; k_token_range per tile */
        float mx = -INFINITY, mn = INFINITY, z[64];
        size_t v0;
        for (v0 = 0; v0 < rows; v0 += 64) {
            size_t q = rows - v0 < 64 ? rows - v0 : 64, i;
            float lmx[GM_LANES], lmn[GM_LANES];
            for (i = 0; i < q; i++) {
                float dot = 0.0f;
                for (l = 0; l < cols; l++) dot += H[t * cols + l] * C[(v0 + i) * cols + l];
                z[i] = dot;
            }
            for (lane = 0; lane < GM_LANES; lane++) {
                lmx[lane] = mx, lmn[lane] = mn;
                gm_range_part(z, (int)q, lane, GM_LANES, &lmx[lane], &lmn[lane]);
            }
            for (lane = 0; lane < GM_LANES; lane++) {
                mx = lmx[lane] > mx ? lmx[lane] : mx;
                mn = lmn[lane] < mn ? lmn[lane] : mn;
            }
        }
        acc += ((double)mx - mn) * ((double)mx - mn);
    }
    CHECK_MSG(fabs(sqrt(acc / (double)tokens) - want) <= 1e-5 * want, "%.17g vs %.17g", sqrt(acc / (double)tokens), want);
    free(S), free(H), free(C);
}

int main(void)
{
    RUN(test_constants);
    RUN(test_rmsnorm);
    RUN(test_rope);
    RUN(test_swiglu);
    RUN(test_attention);
    RUN(test_crossentropy);
    RUN(test_gemm_mapping);
    RUN(test_adamw);
    RUN(test_clip_scale);
    RUN(test_ns_schedules);
    RUN(test_muon);
    RUN(test_rownorm);
    RUN(test_projected_rownorm);
    RUN(test_diameter);
    RUN(test_hilbert_rms);
    RUN(test_rownorm_decay_and_zero_rows);
    return TEST_REPORT();
}
