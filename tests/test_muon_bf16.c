/* Tests of muon.h's bf16 Newton-Schulz (muon_ns_config.precision = MUON_NS_BF16) and of the bf16
 * products under it, against references written here from the math:
 *   - rounding: a float64 round-to-nearest-even onto 8 significant bits (frexp / rint), not the
 *     bit trick the header uses;
 *   - products: the exact sum (float64 holds every product of two bf16 values exactly; the sum is
 *     accumulated in long double and compared within (k + 2) 2^-24 sum |a b|, the fp32
 *     accumulation bound); between kernels: the emulation and vdpbf16ps bit for bit with the
 *     scalar reference, AMX within the same bound (its order is undocumented);
 *   - Newton-Schulz: the same polynomial iteration in float64 on matrices with known singular
 *     values; the bound is the one PyTorch's bf16 NS (the reference implementation, torch 2.15)
 *     meets on the same matrices (docs/numerics.md, "bf16 Newton-Schulz").
 * Every variant runs these: scalar (reference kernel), AVX2 / AVX-512 / NEON (emulation on the
 * fp32 kernels), bf16 (AVX512-BF16 and AMX, where the CPU has them), aarch64-neonbf16 (BFMMLA
 * and BFDOT, Armv8.6-A BF16, under qemu). */
#define MUON_IMPLEMENTATION
#include "muon.h"
#include "test.h"
#include <float.h>
#include <stdint.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ---- float64 references ------------------------------------------------------------------ */
/* x rounded to 8 significant bits, ties to even; |x| < FLT_MIN gives a signed zero. */
static double ref_bf16(double x)
{
    int e;
    double f, q;
    if (x == 0.0 || fabs(x) < (double)FLT_MIN) return x < 0.0 || (x == 0.0 && signbit(x)) ? -0.0 : 0.0;
    f = frexp(x, &e);             /* x = f 2^e, 0.5 <= |f| < 1 */
    q = rint(ldexp(f, 8));        /* 8 significant bits; rint rounds ties to even */
    return ldexp(q, e - 8);
}

static float frombits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static uint32_t tobits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static void test_round_matches_reference(void)
{
    t_rng r = {11};
    size_t i, bad = 0;
    /* named cases: ties to even downwards and upwards, carry into the exponent, the largest
     * float (rounds to Inf), subnormals (flushed), signed zero */
    const float cases[] = {1.0f + 1.0f / 256.0f, 1.0f + 3.0f / 256.0f, 1.9980469f, -1.0f - 1.0f / 256.0f,
                           FLT_MAX, FLT_MIN, -FLT_MIN, 1e-40f, -1e-40f, 0.0f, -0.0f, 3.0e38f, 1.00390625f};
    CHECK(muon__bf16_round(1.0f + 1.0f / 256.0f) == 1.0f);                  /* tie, even below */
    CHECK(muon__bf16_round(1.0f + 3.0f / 256.0f) == 1.0f + 4.0f / 256.0f);  /* tie, even above */
    CHECK(isinf(muon__bf16_round(FLT_MAX)));
    CHECK_NEAR(muon__bf16_round(3.14159265f), 3.140625, 0.0, 0.0); /* 1.1001001b x 2 */
    CHECK(tobits(muon__bf16_round(-1e-40f)) == 0x80000000u);
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double want = ref_bf16((double)cases[i]);
        float got = muon__bf16_round(cases[i]);
        CHECK_MSG((isinf(got) && want > (double)FLT_MAX) || (double)got == want, "x %a got %a want %a",
                  (double)cases[i], (double)got, want);
    }
    /* every finite float pattern on a stride, and random ones */
    for (i = 0; i < 600000; i++) {
        uint32_t u = i < 300000 ? (uint32_t)(i * 14316u + 7u) : (uint32_t)t_rng_u64(&r);
        float x = frombits(u), got;
        double want;
        if ((u & 0x7f800000u) == 0x7f800000u) continue; /* NaN/Inf: below */
        got = muon__bf16_round(x);
        want = ref_bf16((double)x);
        if (!((double)got == want || (isinf(got) && fabs(want) > (double)FLT_MAX)) ||
            !signbit(got) != !signbit(want))
            bad++;
    }
    CHECK_MSG(bad == 0, "%zu patterns differ from the float64 rounding", bad);
    /* NaN stays NaN (quieted, as vcvtne2ps2bf16 does) and Inf stays Inf, whatever the payload:
     * a mantissa of all ones once carried into the sign bit (0x7fffffff became -0) */
    {
        const uint32_t nan[] = {0x7fffffffu, 0xffffffffu, 0x7fff8000u, 0x7f800001u, 0x7fc00000u, 0xffc00000u,
                                0x7f80ffffu, 0xff80ffffu};
        for (i = 0; i < sizeof nan / sizeof nan[0]; i++) {
            float got = muon__bf16_round(frombits(nan[i]));
            CHECK_MSG(isnan(got) && (tobits(got) & 0xffffu) == 0 && !signbit(got) == !(nan[i] >> 31),
                      "NaN %08x -> %08x", (unsigned)nan[i], (unsigned)tobits(got));
        }
        CHECK(tobits(muon__bf16_round(frombits(0x7f800000u))) == 0x7f800000u);
        CHECK(tobits(muon__bf16_round(frombits(0xff800000u))) == 0xff800000u);
    }
}

#ifdef MUON__BF16_DP
/* The hardware conversion the packers and the AMX engine use (vcvtne2ps2bf16) gives the same
 * bits, NaN included; and so does muon__vf_bf16 (the vector layer's rounding of the updates). */
static void test_round_hardware_conversion(void)
{
    size_t i, bad = 0, bad16 = 0;
    float in[32], r16[32];
    uint16_t out[32];
    for (i = 0; i < 4000000; i += 32) {
        size_t j;
        for (j = 0; j < 32; j++) {
            uint32_t u = (uint32_t)((i + j) * 1073u + 3u);
            if (i % 64 == 0 && j < 8) u |= 0x7f800000u; /* Inf and NaN of every payload too */
            in[j] = frombits(u);
        }
        _mm512_storeu_si512((void *)out, (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(in + 16), _mm512_loadu_ps(in)));
        muon__vf_store(r16, muon__vf_bf16(muon__vf_load(in)));
        muon__vf_store(r16 + 16, muon__vf_bf16(muon__vf_load(in + 16)));
        for (j = 0; j < 32; j++) {
            if (out[j] != muon__bf16_bits(in[j])) bad++;
            if (tobits(r16[j]) != (uint32_t)out[j] << 16) bad16++;
        }
    }
    CHECK_MSG(bad == 0, "%zu conversions differ", bad);
    CHECK_MSG(bad16 == 0, "%zu AVX-512 roundings differ", bad16);
}
#endif

/* The vector layer's rounding (muon__vf_bf16: AVX-512, AVX2, NEON or the scalar form, whichever
 * this build has) and the rounding pass built on it (muon__bf16_axpy, whose vector body and
 * element tail must agree) give muon__bf16_round's bits on every lane: a sweep of bit patterns
 * with every exponent (zeros, subnormals, Inf and NaN of many payloads, round-to-even ties). */
static void test_round_layer(void)
{
    size_t i, bad = 0, badax = 0;
    float in[4 * MUON__VW + 3], r[4 * MUON__VW + 3], x[4 * MUON__VW + 3], y[4 * MUON__VW + 3];
    const size_t nv = 4 * MUON__VW + 3;
    for (i = 0; i < 3000000; i += nv) {
        size_t j;
        for (j = 0; j < nv; j++) {
            uint32_t u = (uint32_t)((i + j) * 2654435761u);
            if (j % 5 == 1) u = (u & 0xffff0000u) | 0x8000u; /* a tie */
            if (j % 7 == 2) u |= 0x7f800000u;                 /* Inf and NaN */
            if (j % 11 == 3) u &= 0x807fffffu;                /* zero or subnormal */
            in[j] = frombits(u);
        }
        for (j = 0; j + MUON__VW <= nv; j += MUON__VW) muon__vf_store(r + j, muon__vf_bf16(muon__vf_load(in + j)));
        for (j = 0; j < nv - nv % MUON__VW; j++)
            if (tobits(r[j]) != tobits(muon__bf16_round(in[j]))) bad++;
        /* the pass: X = bf16(fma(a, X, Y)) over an odd length, against the scalar formula */
        for (j = 0; j < nv; j++) {
            x[j] = (float)((double)((i + j) % 1000u) / 250.0 - 2.0);
            y[j] = muon__u_isfinitef(in[j]) ? in[j] : 0.5f;
        }
        muon__bf16_axpy(0, (ptrdiff_t)nv, 0.75f, x, y);
        for (j = 0; j < nv; j++) {
            float want = muon__bf16_round(fmaf(0.75f, (float)((double)((i + j) % 1000u) / 250.0 - 2.0), y[j]));
            if (tobits(x[j]) != tobits(want)) badax++;
        }
    }
    CHECK_MSG(bad == 0, "%zu layer roundings differ from muon__bf16_round (%d lanes)", bad, MUON__VW);
    CHECK_MSG(badax == 0, "%zu muon__bf16_axpy results differ from the scalar formula", badax);
}

/* ---- products ----------------------------------------------------------------------------- */
typedef struct {
    size_t m, n, k;
} shape3;

static float *randm(size_t count, t_rng *r, double scale)
{
    float *v = (float *)malloc(count * sizeof(float));
    size_t i;
    for (i = 0; i < count; i++) v[i] = (float)(scale * t_rng_normal(r));
    return v;
}

static double op_el(const float *M, size_t ld, muon_transpose t, size_t r, size_t c)
{
    return ref_bf16((double)(t == MUON_NO_TRANS ? M[r * ld + c] : M[c * ld + r]));
}

/* The exact sums (ex) and sum |a b| (sa) of op(A) op(B) on the bf16-rounded operands, once per
 * case (every product of two bf16 values is exact in double; the sum in long double). */
static void exact_sums(size_t m, size_t n, size_t k, int syrk, muon_transpose ta, muon_transpose tb, const float *A,
                       size_t lda, const float *B, size_t ldb, long double *ex, double *sa)
{
    size_t i, j, p;
    for (i = 0; i < m; i++)
        for (j = 0; j < n; j++) {
            long double s = 0.0L;
            double t = 0.0;
            for (p = 0; p < k; p++) {
                double a = op_el(A, lda, ta, i, p);
                double b = syrk ? op_el(A, lda, ta, j, p) : op_el(B, ldb, tb, p, j);
                s += (long double)(a * b);
                t += fabs(a * b);
            }
            ex[i * n + j] = s;
            sa[i * n + j] = t;
        }
}

/* max over elements of |C - exact| / ((k + 2) 2^-24 sum |a b|): at most 1 passes */
static double worst_vs_exact(const float *C, size_t count, size_t k, const long double *ex, const double *sa)
{
    double worst = 0.0;
    size_t i;
    for (i = 0; i < count; i++) {
        double err = fabs((double)((long double)C[i] - ex[i]));
        if (sa[i] > 0.0) err /= ((double)k + 2.0) * ldexp(1.0, -24) * sa[i];
        else err = err > 0.0 ? 1e30 : 0.0;
        if (err > worst) worst = err;
    }
    return worst;
}

static void test_products_all_kernels(void)
{
    const shape3 shapes[] = {{37, 45, 800}, {64, 64, 64}, {100, 33, 7}, {32, 32, 32}, {1, 1, 1},
                             {33, 70, 385}, {15, 200, 33}, {47, 47, 769}};
    const muon_transpose TR[2] = {MUON_NO_TRANS, MUON_TRANS};
    t_rng r = {5};
    size_t s;
    int syrk, x, y;
    printf("  bf16 kernels: best %s, dp %s, mmla %s, emulation %s, reference %s\n",
           muon__bgemm_kernel_name(MUON__BF16_BEST), muon__bgemm_kernel_name(MUON__BF16_DPK),
           muon__bgemm_kernel_name(MUON__BF16_MMLAK), muon__bgemm_kernel_name(MUON__BF16_EMU),
           muon__bgemm_kernel_name(MUON__BF16_REF));
    for (s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (syrk = 0; syrk < 2; syrk++)
            for (x = 0; x < 2; x++)
                for (y = 0; y < 2; y++) {
                    size_t m = shapes[s].m, n = syrk ? m : shapes[s].n, k = shapes[s].k;
                    size_t ar = x ? k : m, ac = x ? m : k, br = y ? n : k, bc = y ? k : n;
                    float *A, *B, *C[6];
                    long double *ex;
                    double worst[6], *sa;
                    int w;
                    if (syrk && y) continue;
                    A = randm(ar * ac, &r, 1.0);
                    B = randm(br * bc, &r, 1.0);
                    ex = (long double *)malloc(m * n * sizeof(long double));
                    sa = (double *)malloc(m * n * sizeof(double));
                    exact_sums(m, n, k, syrk, TR[x], TR[y], A, ac, B, bc, ex, sa);
                    for (w = 1; w <= 5; w++) {
                        size_t i;
                        C[w] = (float *)malloc(m * n * sizeof(float));
                        for (i = 0; i < m * n; i++) C[w][i] = frombits(0x7fc0beefu); /* poison */
                        CHECK(muon__bgemm_builtin(w, 0, syrk, TR[x], TR[y], m, n, k, A, ac, syrk ? A : B,
                                                  syrk ? ac : bc, C[w], n) == MUON_OK);
                        worst[w] = worst_vs_exact(C[w], m * n, k, ex, sa);
                        CHECK_MSG(worst[w] <= 1.0, "kernel %d m %zu n %zu k %zu syrk %d ta %d tb %d: %.3g of the bound",
                                  w, m, n, k, syrk, x, y, worst[w]);
                    }
                    /* the emulation and vdpbf16ps: the reference's bits */
                    CHECK_MSG(memcmp(C[1], C[2], m * n * sizeof(float)) == 0, "emulation m %zu n %zu k %zu syrk %d", m,
                              n, k, syrk);
#ifndef MUON__BF16_NEON /* vdpbf16ps (or the emulation standing in for it); BFDOT: the bound only */
                    CHECK_MSG(memcmp(C[1], C[3], m * n * sizeof(float)) == 0, "dp m %zu n %zu k %zu syrk %d", m, n, k,
                              syrk);
#else /* BFMMLA: two BFDotAdds per element, over k in BFDOT's order: BFDOT's bits */
                    CHECK_MSG(memcmp(C[3], C[5], m * n * sizeof(float)) == 0, "bfmmla vs bfdot m %zu n %zu k %zu syrk %d",
                              m, n, k, syrk);
#endif
                    if (syrk) { /* C == C^T bitwise */
                        size_t i, j;
                        int sym = 1;
                        for (i = 0; i < m; i++)
                            for (j = 0; j < i; j++) sym &= tobits(C[4][i * n + j]) == tobits(C[4][j * n + i]);
                        CHECK(sym);
                    }
                    for (w = 1; w <= 5; w++) free(C[w]);
                    free(ex);
                    free(sa);
                    free(A);
                    free(B);
                }
}

/* Bit-identical for every thread count (each element's k order is fixed by k alone). */
static void test_products_thread_invariant(void)
{
    t_rng r = {9};
    const size_t m = 150, n = 260, k = 700;
    float *A = randm(m * k, &r, 1.0), *B = randm(k * n, &r, 1.0);
    float *C1 = (float *)malloc(m * n * sizeof(float)), *C2 = (float *)malloc(m * n * sizeof(float));
    int w;
    for (w = 0; w <= 5; w++) {
        CHECK(muon__bgemm_builtin(w, 1, 0, MUON_NO_TRANS, MUON_NO_TRANS, m, n, k, A, k, B, n, C1, n) == MUON_OK);
        CHECK(muon__bgemm_builtin(w, 3, 0, MUON_NO_TRANS, MUON_NO_TRANS, m, n, k, A, k, B, n, C2, n) == MUON_OK);
        CHECK_MSG(memcmp(C1, C2, m * n * sizeof(float)) == 0, "kernel %d: 1 vs 3 threads", w);
        CHECK(muon__bgemm_builtin(w, 1, 1, MUON_NO_TRANS, MUON_TRANS, m, m, k, A, k, A, k, C1, m) == MUON_OK);
        CHECK(muon__bgemm_builtin(w, 2, 1, MUON_NO_TRANS, MUON_TRANS, m, m, k, A, k, A, k, C2, m) == MUON_OK);
        CHECK_MSG(memcmp(C1, C2, m * m * sizeof(float)) == 0, "kernel %d syrk: 1 vs 2 threads", w);
    }
    free(A); free(B); free(C1); free(C2);
}

/* ---- Newton-Schulz ------------------------------------------------------------------------ */
/* G = U diag(sv) V^T, rows x cols, with min(rows, cols) singular values sv */
static float *known_spectrum(size_t rows, size_t cols, const double *sv, t_rng *r)
{
    size_t q = rows < cols ? rows : cols, i, j, p;
    double *U = (double *)malloc(rows * q * sizeof(double)), *V = (double *)malloc(cols * q * sizeof(double));
    float *G = (float *)malloc(rows * cols * sizeof(float));
    t_orthonormal(r, rows, q, U);
    t_orthonormal(r, cols, q, V);
    for (i = 0; i < rows; i++)
        for (j = 0; j < cols; j++) {
            double s = 0.0;
            for (p = 0; p < q; p++) s += U[i * q + p] * sv[p] * V[j * q + p];
            G[i * cols + j] = (float)s;
        }
    free(U);
    free(V);
    return G;
}

/* the schedule's iteration in float64 (t_ref_ns of tests/test.h) on the float input */
static void ns_f64(const float *G, size_t rows, size_t cols, const muon_ns_config *ns, double *out)
{
    double *Gd = (double *)malloc(rows * cols * sizeof(double));
    muon_ns_config rs;
    size_t i;
    muon_ns_resolve(ns, &rs);
    for (i = 0; i < rows * cols; i++) Gd[i] = (double)G[i];
    t_ref_ns(Gd, rows, cols, (const double (*)[3])rs.coeffs, rs.count, rs.steps, rs.safety, rs.eps, out);
    free(Gd);
}

/* ||O - R||_F / ||R||_F */
static double rel_frob(const float *O, const double *R, size_t count)
{
    double num = 0.0, den = 0.0;
    size_t i;
    for (i = 0; i < count; i++) {
        double d = (double)O[i] - R[i];
        num += d * d;
        den += R[i] * R[i];
    }
    return sqrt(num / den);
}

/* Accuracy on known spectra (flat, geometric to 1e-3, one dominant direction and the rest at
 * 0.05), wide, square and tall, Jordan x 5 and Polar Express x 5, as the relative Frobenius
 * distance to the float64 iteration: within the worst that PyTorch's bf16 NS (the reference's
 * code, torch 2.15) reaches on matrices of the same shapes and spectra, per spectrum 0.098,
 * 0.178, 0.038 (bench/peers/ns_bf16_accuracy.py; docs/numerics.md), while fp32 stays near 1e-6;
 * and clearly off the fp32 result (the bf16 path is the one that ran). */
static void test_ns_bf16_accuracy(void)
{
    const double torch_worst[3] = {0.098, 0.178, 0.038};
    const size_t shapes[3][2] = {{48, 96}, {64, 64}, {96, 40}};
    const muon_ns_kind kinds[2] = {MUON_NS_JORDAN, MUON_NS_POLAR_EXPRESS};
    t_rng r = {21};
    size_t s, i;
    int spec, kd;
    for (s = 0; s < 3; s++)
        for (spec = 0; spec < 3; spec++)
            for (kd = 0; kd < 2; kd++) {
                size_t rows = shapes[s][0], cols = shapes[s][1], q = rows < cols ? rows : cols, cnt = rows * cols;
                double *sv = (double *)malloc(q * sizeof(double)), *R = (double *)malloc(cnt * sizeof(double));
                float *G, *O16 = (float *)malloc(cnt * sizeof(float)), *O32 = (float *)malloc(cnt * sizeof(float));
                muon_ns_config ns = muon_ns_preset(kinds[kd], 0);
                double e16, e32;
                int exact_bf16 = 1;
                for (i = 0; i < q; i++)
                    sv[i] = spec == 0 ? 1.0 : spec == 1 ? pow(1e-3, (double)i / (double)(q - 1)) : (i == 0 ? 1.0 : 0.05);
                G = known_spectrum(rows, cols, sv, &r);
                ns_f64(G, rows, cols, &ns, R);
                CHECK(muon_orthogonalize(G, rows, cols, cols, &ns, O32, cols) == MUON_OK);
                ns.precision = MUON_NS_BF16;
                CHECK(muon_orthogonalize(G, rows, cols, cols, &ns, O16, cols) == MUON_OK);
                e16 = rel_frob(O16, R, cnt);
                e32 = rel_frob(O32, R, cnt);
                for (i = 0; i < cnt; i++) exact_bf16 &= muon__bf16_round(O16[i]) == O16[i];
                CHECK_MSG(e16 <= torch_worst[spec], "%zux%zu spectrum %d kind %d: bf16 error %.4g", rows, cols, spec,
                          kd, e16);
                CHECK_MSG(e32 <= 1e-4, "%zux%zu spectrum %d kind %d: fp32 error %.4g", rows, cols, spec, kd, e32);
                CHECK_MSG(e16 > 10.0 * e32 && e16 > 1e-4, "%zux%zu: bf16 %.3g vs fp32 %.3g", rows, cols, e16, e32);
                CHECK_MSG(exact_bf16, "%zux%zu: an output entry is not a bf16 value", rows, cols);
                free(sv); free(R); free(G); free(O16); free(O32);
            }
}

/* Tall input runs on the transpose: NS(G) == NS(G^T)^T bit for bit; in place equals out of place;
 * zero in, zero out; bit-identical for every thread count. */
static void test_ns_bf16_properties(void)
{
    t_rng r = {33};
    const size_t rows = 70, cols = 30;
    float *G = randm(rows * cols, &r, 0.01), *GT = (float *)malloc(rows * cols * sizeof(float));
    float *O = (float *)malloc(rows * cols * sizeof(float)), *OT = (float *)malloc(rows * cols * sizeof(float));
    float *Z = (float *)calloc(rows * cols, sizeof(float));
    muon_ns_config ns = muon_ns_preset(MUON_NS_JORDAN, 0);
    size_t i, j;
    int same = 1;
    ns.precision = MUON_NS_BF16;
    for (i = 0; i < rows; i++)
        for (j = 0; j < cols; j++) GT[j * rows + i] = G[i * cols + j];
    CHECK(muon_orthogonalize(G, rows, cols, cols, &ns, O, cols) == MUON_OK);
    CHECK(muon_orthogonalize(GT, cols, rows, rows, &ns, OT, rows) == MUON_OK);
    for (i = 0; i < rows; i++)
        for (j = 0; j < cols; j++) same &= tobits(O[i * cols + j]) == tobits(OT[j * rows + i]);
    CHECK(same);
    memcpy(OT, G, rows * cols * sizeof(float));
    CHECK(muon_orthogonalize(OT, rows, cols, cols, &ns, OT, cols) == MUON_OK);
    CHECK(memcmp(OT, O, rows * cols * sizeof(float)) == 0);
    CHECK(muon_orthogonalize(Z, rows, cols, cols, &ns, OT, cols) == MUON_OK);
    for (i = 0, same = 1; i < rows * cols; i++) same &= tobits(OT[i]) == 0u;
    CHECK(same);
#ifdef _OPENMP
    {
        int saved = omp_get_max_threads();
        float *big = randm(300 * 500, &r, 1.0), *o1 = (float *)malloc(300 * 500 * sizeof(float));
        float *o2 = (float *)malloc(300 * 500 * sizeof(float));
        omp_set_num_threads(1);
        CHECK(muon_orthogonalize(big, 300, 500, 500, &ns, o1, 500) == MUON_OK);
        omp_set_num_threads(2);
        CHECK(muon_orthogonalize(big, 300, 500, 500, &ns, o2, 500) == MUON_OK);
        omp_set_num_threads(saved);
        CHECK(memcmp(o1, o2, 300 * 500 * sizeof(float)) == 0);
        free(big); free(o1); free(o2);
    }
#endif
    free(G); free(GT); free(O); free(OT); free(Z);
}

/* Bad precision values and bf16 with the Gram form are DOMAIN, with nothing written; resolve
 * keeps the field (also for count 0); the batched form and the Muon step run it. */
static void test_ns_bf16_config(void)
{
    t_rng r = {44};
    float *G = randm(32 * 48, &r, 1.0), *O = (float *)malloc(32 * 48 * sizeof(float));
    float *W = randm(32 * 48, &r, 0.1), *W0 = (float *)malloc(32 * 48 * sizeof(float));
    muon_ns_config ns = muon_ns_preset(MUON_NS_JORDAN, 0), rs;
    muon_config cfg = muon_default();
    muon_state st;
    size_t i;
    int untouched = 1, moved = 0;
    for (i = 0; i < 32 * 48; i++) O[i] = 7.0f;
    ns.precision = (muon_ns_precision)2;
    CHECK(muon_orthogonalize(G, 32, 48, 48, &ns, O, 48) == MUON_ERR_DOMAIN);
    ns.precision = (muon_ns_precision)-1;
    CHECK(muon_orthogonalize(G, 32, 48, 48, &ns, O, 48) == MUON_ERR_DOMAIN);
    ns.precision = MUON_NS_BF16;
    ns.method = MUON_NS_GRAM;
    CHECK(muon_orthogonalize(G, 32, 48, 48, &ns, O, 48) == MUON_ERR_DOMAIN);
    CHECK(muon_ns_resolve(&ns, &rs) == MUON_ERR_DOMAIN);
    for (i = 0; i < 32 * 48; i++) untouched &= O[i] == 7.0f;
    CHECK(untouched);
    ns.method = MUON_NS_PLAIN;
    CHECK(muon_ns_resolve(&ns, &rs) == MUON_OK && rs.precision == MUON_NS_BF16);
    { /* every preset passes the bf16 range bound at any step count */
        int kind, steps, bad = 0;
        for (kind = 0; kind < 4; kind++)
            for (steps = 1; steps <= MUON_NS_MAX_STEPS; steps += steps < 50 ? 1 : 97) {
                muon_ns_config p = muon_ns_preset((muon_ns_kind)kind, steps);
                p.precision = MUON_NS_BF16;
                bad += muon_ns_resolve(&p, &rs) != MUON_OK;
            }
        CHECK(bad == 0);
    }
    memset(&ns, 0, sizeof ns);
    ns.precision = MUON_NS_BF16;
    CHECK(muon_ns_resolve(&ns, &rs) == MUON_OK && rs.precision == MUON_NS_BF16 && rs.steps == 5);
    CHECK(muon_orthogonalize_batched(G, 2, 16, 48, 48, 16 * 48, &ns, O, 48, 16 * 48) == MUON_OK);
    {
        float *O1 = (float *)malloc(16 * 48 * sizeof(float));
        CHECK(muon_orthogonalize(G + 16 * 48, 16, 48, 48, &ns, O1, 48) == MUON_OK);
        CHECK(memcmp(O1, O + 16 * 48, 16 * 48 * sizeof(float)) == 0);
        free(O1);
    }
    cfg.ns.precision = MUON_NS_BF16;
    memcpy(W0, W, 32 * 48 * sizeof(float));
    CHECK(muon_init(&st, 32, 48) == MUON_OK);
    CHECK(muon_step(&st, &cfg, W, 48, G, 48, NULL, 0) == MUON_OK);
    for (i = 0; i < 32 * 48; i++) moved |= W[i] != W0[i] && isfinite(W[i]);
    CHECK(moved);
    muon_free(&st);
    free(G); free(O); free(W); free(W0);
}

#ifdef MUON__BF16_DP
/* Without AMX the best bf16 kernel is vdpbf16ps or the fp32 kernel on bf16-rounded operands,
 * whichever this CPU runs faster (asked once: the same answer every time); the two give the
 * same bits (test_products_all_kernels), so the choice moves no result. The timing sees the
 * instructions: each of 3072 takes at least a fraction of a cycle, and the flops ratio between
 * the two is within what any AVX-512 core has (1/4 .. 4 per flop). */
static void test_dp_choice(void)
{
    int a = muon__bf16_dp_fast(), b = muon__bf16_dp_fast();
    unsigned long long td = muon__dp_time(1), tf = muon__dp_time(0);
    const muon__gemm_kernel *k = muon__gemm_pick_bf16_as(MUON__BF16_BEST, 0, a);
    double per_flop = ((double)td / 64.0) / ((double)tf / 32.0);
    t_rng r = {77};
    const size_t m = 70, n = 90, kk = 131;
    float *A = randm(m * kk, &r, 1.0), *B = randm(kk * n, &r, 1.0);
    float *C1 = (float *)malloc(m * n * sizeof(float)), *C2 = (float *)malloc(m * n * sizeof(float));
    int syrk;
    printf("  without AMX: %s (vdpbf16ps %llu, fma %llu cycles of 3072; per flop dp/fma %.2f)\n", k->name, td, tf,
           per_flop);
    CHECK(a == b);
    CHECK(k == (a ? &muon__gemm_k_bf16_dp : &muon__gemm_k_bf16_emu));
    CHECK(muon__gemm_pick_bf16_as(MUON__BF16_DPK, 0, 0) == &muon__gemm_k_bf16_dp);
    CHECK(td > 300 && tf > 300);
    CHECK(per_flop > 0.25 && per_flop < 4.0);
    /* the probe's two answers forced through the rule: the kernel each names (an AMX request
     * without AMX falls back the same way), and the chooser agrees with the rule here */
    CHECK(muon__gemm_pick_bf16_as(MUON__BF16_BEST, 0, 1) == &muon__gemm_k_bf16_dp);
    CHECK(muon__gemm_pick_bf16_as(MUON__BF16_BEST, 0, 0) == &muon__gemm_k_bf16_emu);
    CHECK(muon__gemm_pick_bf16_as(MUON__BF16_AMXK, 0, 1) == &muon__gemm_k_bf16_dp);
    CHECK(muon__gemm_pick_bf16_as(MUON__BF16_AMXK, 0, 0) == &muon__gemm_k_bf16_emu);
    CHECK(muon__gemm_pick_bf16_as(MUON__BF16_REF, 0, 1) == &muon__gemm_k_bf16_ref);
    CHECK(muon__gemm_pick_bf16_as(MUON__BF16_EMU, 0, 1) == &muon__gemm_k_bf16_emu);
#ifdef MUON__BF16_AMX
    CHECK(muon__gemm_pick_bf16_as(MUON__BF16_BEST, 1, a) == &muon__gemm_k_bf16_amx_engine);
    CHECK(muon__gemm_pick_bf16_as(MUON__BF16_AMXK, 1, a) == &muon__gemm_k_bf16_amx);
    CHECK(muon__gemm_pick_bf16_as(MUON__BF16_DPK, 1, a) == &muon__gemm_k_bf16_dp);
    CHECK(muon__gemm_k_bf16_amx_engine.ns_run && !muon__gemm_k_bf16_amx.ns_run);
    if (!muon__amx_ready())
#endif
        CHECK(muon__gemm_choose(1, MUON__BF16_BEST) == k && muon__gemm_choose(1, MUON__BF16_AMXK) == k);
    CHECK(!muon__gemm_k_bf16_dp.ns_run && !muon__gemm_k_bf16_emu.ns_run);
    /* ... and the same bits from either (the probe moves speed, never a result) */
    for (syrk = 0; syrk < 2; syrk++) {
        memset(C1, 0, m * n * sizeof(float));
        memset(C2, 0, m * n * sizeof(float));
        CHECK(muon__bgemm_builtin(MUON__BF16_DPK, 1, syrk, MUON_NO_TRANS, MUON_NO_TRANS, m, syrk ? m : n, kk, A, kk,
                                  B, n, C1, n) == MUON_OK);
        CHECK(muon__bgemm_builtin(MUON__BF16_EMU, 1, syrk, MUON_NO_TRANS, MUON_NO_TRANS, m, syrk ? m : n, kk, A, kk,
                                  B, n, C2, n) == MUON_OK);
        CHECK_MSG(memcmp(C1, C2, m * n * sizeof(float)) == 0, "syrk %d: vdpbf16ps vs emulation", syrk);
    }
    free(A), free(B), free(C1), free(C2);
}
#endif

#ifdef MUON__BF16_NEON
/* AArch64 with BF16: BFMMLA is the best, BFDOT only when named; neither is the emulation, and
 * they pack differently (k in fours, in pairs) */
static void test_neon_choice(void)
{
    CHECK(muon__gemm_choose(1, MUON__BF16_BEST) == &muon__gemm_k_bf16_mmla);
    CHECK(muon__gemm_choose(1, MUON__BF16_MMLAK) == &muon__gemm_k_bf16_mmla);
    CHECK(muon__gemm_choose(1, MUON__BF16_AMXK) == &muon__gemm_k_bf16_mmla);
    CHECK(muon__gemm_choose(1, MUON__BF16_DPK) == &muon__gemm_k_bf16_dp);
    CHECK(muon__gemm_k_bf16_mmla.pack == MUON__PACK_MMLA && muon__gemm_k_bf16_mmla.kgran == 4);
    CHECK(muon__gemm_k_bf16_dp.pack == MUON__PACK_DP && muon__gemm_k_bf16_dp.kgran == 2);
}
#endif

#ifdef MUON__BF16_AMX
/* One NS through muon__ns_one with the bf16 kernel `which` (BEST: the AMX engine where it fits
 * in ws_bytes; 0: the full workspace) and the triples of cfg (or, with tr, those triples
 * unvalidated: the range test's). */
static muon_status ns_run(const float *G, size_t rows, size_t cols, const muon_ns_config *cfg, int which,
                          const double (*tr)[3], size_t ws_bytes, float *out)
{
    double jt[1][3];
    muon__ns_view v;
    size_t full = muon__ns_ws_bytes(rows, cols, 0);
    void *ws;
    muon_status s;
    CHECK(muon__ns_view_make(cfg, &v, jt) == MUON_OK);
    v.bf16_kernel = which;
    if (tr) {
        v.coeffs = tr;
        v.count = 1;
    }
    ws = malloc(full);
    CHECK(ws != NULL);
    if (ws) memset(ws, 0xff, full); /* NaN everywhere: a read of what the NS did not write shows */
    s = muon__ns_one(G, rows, cols, cols, &v, out, cols, ws, ws_bytes ? ws_bytes : full);
    free(ws);
    return s;
}

/* The AMX engine (muon__ns_bf16_amx: X kept in bf16 in the layouts its products read, C blocks
 * in L2 over all of k, each product's tiles packed for the next as they finish) against the
 * same iteration on the generic driver with the AMX kernel and with the reference's bits (the
 * emulation): shapes on and off the 32 grid, wide, square and tall, several C blocks and k
 * blocks, Jordan and Polar Express, one step, and a schedule with c = 0 (no A A^T). AMX sums in
 * an order of its own, and a k split other than the generic driver's, so the engine is held to
 * the generic AMX path's own distance from the reference's bits (within 2x of it, and 2 %),
 * and to the fp32 result within the bound of test_ns_bf16_accuracy's worst spectrum. Where the
 * workspace holds the generic path but not the engine, the generic path runs (same bits as the
 * AMX kernel's); a result that leaves float's range is MUON_ERR_RANGE with out untouched. */
static void test_ns_bf16_engine(void)
{
    const size_t shapes[][2] = {{300, 500}, {40, 900}, {520, 270}, {600, 700}, {64, 64}, {33, 97}, {70, 30}, {1, 40}};
    t_rng r = {61};
    size_t s, i;
    int kd, fallbacks = 0;
    double worst_e = 0.0, worst_a = 0.0;
    if (!muon__amx_ready()) {
        /* no engine here: asking for the AMX kernel must give the best kernel's bits (the
         * documented fallback where AMX is not compiled or not granted), on every shape */
        printf("  AMX not granted here: the engine is not run; the AMX request's fallback is checked\n");
        for (s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            size_t rows = shapes[s][0], cols = shapes[s][1], cnt = rows * cols;
            float *G = randm(cnt, &r, 1.0), *E = (float *)malloc(cnt * sizeof(float));
            float *Am = (float *)malloc(cnt * sizeof(float));
            muon_ns_config ns = muon_ns_preset(MUON_NS_JORDAN, 0);
            ns.precision = MUON_NS_BF16;
            CHECK(ns_run(G, rows, cols, &ns, MUON__BF16_BEST, NULL, 0, E) == MUON_OK);
            CHECK(ns_run(G, rows, cols, &ns, MUON__BF16_AMXK, NULL, 0, Am) == MUON_OK);
            CHECK_MSG(memcmp(E, Am, cnt * sizeof(float)) == 0, "%zux%zu: the AMX request without AMX", rows, cols);
            free(G), free(E), free(Am);
        }
        return;
    }
    for (s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (kd = 0; kd < 4; kd++) {
            size_t rows = shapes[s][0], cols = shapes[s][1], cnt = rows * cols;
            float *G = randm(cnt, &r, 1.0), *E = (float *)malloc(cnt * sizeof(float));
            float *Am = (float *)malloc(cnt * sizeof(float)), *R = (float *)malloc(cnt * sizeof(float));
            float *F = (float *)malloc(cnt * sizeof(float));
            muon_ns_config ns = muon_ns_preset(kd == 1 ? MUON_NS_POLAR_EXPRESS : MUON_NS_JORDAN, kd == 2 ? 1 : 0);
            double num_e = 0.0, num_a = 0.0, num_f = 0.0, den = 0.0;
            int exact = 1;
            if (kd == 3) { /* the cubic Newton-Schulz: c = 0 */
                ns.count = 1;
                ns.coeffs[0][0] = 1.5;
                ns.coeffs[0][1] = -0.5;
                ns.coeffs[0][2] = 0.0;
                ns.steps = 8;
            }
            ns.precision = MUON_NS_FP32;
            CHECK(ns_run(G, rows, cols, &ns, MUON__BF16_BEST, NULL, 0, F) == MUON_OK);
            ns.precision = MUON_NS_BF16;
            CHECK(ns_run(G, rows, cols, &ns, MUON__BF16_BEST, NULL, 0, E) == MUON_OK);
            CHECK(ns_run(G, rows, cols, &ns, MUON__BF16_AMXK, NULL, 0, Am) == MUON_OK);
            CHECK(ns_run(G, rows, cols, &ns, MUON__BF16_EMU, NULL, 0, R) == MUON_OK);
            for (i = 0; i < cnt; i++) {
                double de = (double)E[i] - R[i], da = (double)Am[i] - R[i], df = (double)E[i] - F[i];
                num_e += de * de;
                num_a += da * da;
                num_f += df * df;
                den += (double)R[i] * R[i];
                exact &= muon__bf16_round(E[i]) == E[i];
            }
            num_e = sqrt(num_e / den);
            num_a = sqrt(num_a / den);
            num_f = sqrt(num_f / den);
            CHECK_MSG(num_e <= 2.0 * num_a + 1e-6 && num_e <= 0.02, "%zux%zu kind %d: engine %.3g, generic amx %.3g from the reference",
                      rows, cols, kd, num_e, num_a);
            if (num_e > worst_e) worst_e = num_e;
            if (num_a > worst_a) worst_a = num_a;
            CHECK_MSG(num_f <= 0.178, "%zux%zu kind %d: engine %.3g from fp32", rows, cols, kd, num_f);
            CHECK_MSG(exact, "%zux%zu kind %d: an entry is not a bf16 value", rows, cols, kd);
            if (kd == 0) {
                size_t gen = muon__ns_ws_generic(rows, cols, 1), eng = MUON__ALIGN + muon__xns_bytes(
                    &muon__gemm_k_bf16_amx_engine, rows < cols ? rows : cols, rows < cols ? cols : rows, 1);
                if (gen < eng) { /* the engine does not fit: the generic path, the AMX kernel's bits */
                    CHECK(ns_run(G, rows, cols, &ns, MUON__BF16_BEST, NULL, gen, E) == MUON_OK);
                    CHECK_MSG(memcmp(E, Am, cnt * sizeof(float)) == 0, "%zux%zu: fallback", rows, cols);
                    fallbacks++;
                }
            }
            if (kd == 0) { /* out of range: RANGE, out untouched, as on the generic path */
                static const double huge[1][3] = {{1e30, 0.0, 0.0}};
                for (i = 0; i < cnt; i++) E[i] = frombits(0x7fc0beefu);
                memcpy(Am, E, cnt * sizeof(float));
                CHECK(ns_run(G, rows, cols, &ns, MUON__BF16_BEST, huge, 0, E) == MUON_ERR_RANGE);
                CHECK(memcmp(E, Am, cnt * sizeof(float)) == 0);
                CHECK(ns_run(G, rows, cols, &ns, MUON__BF16_AMXK, huge, 0, E) == MUON_ERR_RANGE);
            }
            free(G); free(E); free(Am); free(R); free(F);
        }
    printf("  AMX engine: worst distance to the reference's bits %.3g (generic AMX path %.3g); fallback on %d shapes\n",
           worst_e, worst_a, fallbacks);
    CHECK(fallbacks > 0);
}
#endif

int main(void)
{
    RUN(test_round_matches_reference);
    RUN(test_round_layer);
#ifdef MUON__BF16_DP
    RUN(test_round_hardware_conversion);
    RUN(test_dp_choice);
#endif
#ifdef MUON__BF16_NEON
    RUN(test_neon_choice);
#endif
    RUN(test_products_all_kernels);
    RUN(test_products_thread_invariant);
    RUN(test_ns_bf16_accuracy);
    RUN(test_ns_bf16_properties);
    RUN(test_ns_bf16_config);
#ifdef MUON__BF16_AMX
    RUN(test_ns_bf16_engine);
#endif
    return TEST_REPORT();
}
