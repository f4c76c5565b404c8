/* fuzz_common.h - shared decoding and checking helpers of the libFuzzer targets in tests/fuzz/.
 *
 * A target decodes shapes, leading dimensions, flags, parameters and values from the input
 * bytes, calls one family of public entry points, and abort()s (a libFuzzer finding) when
 *   - a call returns an error status but changed an output, the optimizer state, or an input;
 *   - a call returns OK where the sizes were certainly invalid (the buffers are smaller than
 *     the extent the sizes claim: the function must have rejected them);
 *   - a documented property of an OK result fails (stated at each check).
 * Crashes, ASan and UBSan reports are findings by themselves. Every buffer is allocated at its
 * exact extent ((rows-1)*ld + cols elements) so that ASan sees a read past the last column.
 */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* helpers: each target uses some of them */
#define FZ_FN static __attribute__((unused))

typedef struct {
    const uint8_t *p;
    size_t n;
} fz_in;

FZ_FN uint8_t fz_u8(fz_in *in)
{
    if (!in->n) return 0;
    in->n--;
    return *in->p++;
}
FZ_FN uint32_t fz_u32(fz_in *in)
{
    uint32_t v = fz_u8(in);
    v |= (uint32_t)fz_u8(in) << 8;
    v |= (uint32_t)fz_u8(in) << 16;
    v |= (uint32_t)fz_u8(in) << 24;
    return v;
}

#define FZ_CHECK(cond, ...)                                                                  \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "fuzz finding at %s:%d: %s: ", __FILE__, __LINE__, #cond);      \
            fprintf(stderr, __VA_ARGS__);                                                    \
            fprintf(stderr, "\n");                                                           \
            abort();                                                                         \
        }                                                                                    \
    } while (0)

FZ_FN void *fz_malloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) abort();
    return p;
}

/* ---- values ---------------------------------------------------------------------------- */
FZ_FN uint64_t fz_mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

FZ_FN float fz_special(unsigned k)
{
    switch (k % 14) {
    case 0: return 0.0f;
    case 1: return -0.0f;
    case 2: return FLT_MIN;
    case 3: return 1e-42f; /* denormal */
    case 4: return -3e-39f; /* denormal */
    case 5: return FLT_MAX;
    case 6: return -FLT_MAX;
    case 7: return 1e30f;
    case 8: return -1e-30f;
    case 9: return NAN;
    case 10: return INFINITY;
    case 11: return -INFINITY;
    case 12: return 1.0f;
    default: return -1.0f;
    }
}

/* How the values of one buffer are made (one byte of input):
 *   0-7  finite, roughly N(0, 1) from a seeded generator (the common case: valid inputs)
 *   8    finite, times 1e30          9   finite, times 1e-30       10  finite, denormal scale
 *   11   all zero                    12  a constant row pattern (equal rows)
 *   13   finite with ~1/8 specials (zeros, denormals, FLT_MAX, 1e+-30, +-1)
 *   14   like 13 with NaN/Inf too    15  raw float bits from the input                     */
typedef struct {
    int mode;
    uint64_t seed;
} fz_valgen;

FZ_FN fz_valgen fz_take_valgen(fz_in *in)
{
    fz_valgen g;
    g.mode = fz_u8(in) % 16;
    g.seed = fz_u32(in);
    return g;
}
FZ_FN int fz_valgen_finite(const fz_valgen *g) { return g->mode < 14; }
/* values whose products and sums stay far from overflow (oracle checks use these) */
FZ_FN int fz_valgen_tame(const fz_valgen *g) { return g->mode < 13 && g->mode != 8; }

FZ_FN float fz_value(fz_valgen *g, fz_in *in, size_t col)
{
    uint64_t r = fz_mix(&g->seed);
    /* sum of four uniforms, centred: roughly normal, never NaN */
    double u = ((double)(r & 0xffff) + (double)((r >> 16) & 0xffff) + (double)((r >> 32) & 0xffff) +
                (double)((r >> 48) & 0xffff)) / 65536.0 - 2.0;
    switch (g->mode) {
    case 8: return (float)(u * 1e30);
    case 9: return (float)(u * 1e-30);
    case 10: return (float)(u * 1e-40);
    case 11: return 0.0f;
    case 12: return (float)(col % 7) - 3.0f;
    case 13: {
        static const unsigned finite_specials[11] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 13};
        if ((r >> 60) == 0) return fz_special(finite_specials[(r >> 8) % 11]);
        return (float)u;
    }
    case 14:
        if ((r >> 60) == 0) return fz_special((unsigned)(r >> 8));
        return (float)u;
    case 15: {
        uint32_t bits = fz_u32(in);
        float f;
        memcpy(&f, &bits, sizeof f);
        return f;
    }
    default: return (float)u;
    }
}

/* ---- shapes ----------------------------------------------------------------------------- */
/* A matrix argument: the sizes passed to the function and the extent actually allocated.
 * bogus: the sizes claim more than any buffer holds (overflowing extent), or are invalid
 * (zero, ld < cols): the call must not return OK. */
typedef struct {
    size_t rows, cols, ld;
    size_t alloc; /* elements allocated */
    int bogus;    /* 0: valid; 1: bad rows or cols; 2: bad ld */
} fz_shape;

FZ_FN size_t fz_extent(size_t rows, size_t cols, size_t ld) { return rows ? (rows - 1) * ld + cols : 0; }

/* rows, cols in 1..max; ld = cols + 0..3; 1 in 16 inputs get a bad shape */
FZ_FN fz_shape fz_take_shape(fz_in *in, size_t max_rows, size_t max_cols)
{
    fz_shape s;
    uint8_t m = fz_u8(in);
    s.rows = 1 + fz_u8(in) % max_rows;
    s.cols = 1 + fz_u8(in) % max_cols;
    s.ld = s.cols + (m >> 4) % 4;
    s.bogus = 0;
    s.alloc = fz_extent(s.rows, s.cols, s.ld);
    switch (m % 16) {
    case 0: s.rows = 0; s.bogus = 1; break;
    case 1: s.cols = 0; s.bogus = 1; break;
    case 2:
        if (s.cols > 1) { s.ld = s.cols - 1; s.bogus = 2; }
        break;
    case 3: s.rows = SIZE_MAX / 2 + 1; s.bogus = 1; break;           /* (rows-1)*ld overflows */
    case 4: s.ld = SIZE_MAX / 2 + 7; if (s.rows < 2) { s.rows = 2; s.alloc = fz_extent(2, s.cols, s.cols); } s.bogus = 2; break;
    case 5: /* (rows-1)*ld + cols elements overflow size_t bytes */
#ifdef FZ_AVOID_KNOWN_RN_EXTENT /* to explore past the known rn__extent finding (docs/reliability.md) */
        if (s.rows < 2) s.rows = 2;
#endif
        s.cols = s.ld = SIZE_MAX - 1;
        s.bogus = 1;
        break;
    default: break;
    }
    return s;
}

/* allocate and fill a matrix at its exact extent; padding columns get NaN (never to be read) */
FZ_FN float *fz_matrix(const fz_shape *s, fz_valgen *g, fz_in *in)
{
    float *A = (float *)fz_malloc(s->alloc * sizeof(float));
    size_t i;
    for (i = 0; i < s->alloc; i++)
        A[i] = (s->bogus || i % s->ld < s->cols) ? fz_value(g, in, s->bogus ? i : i % s->ld) : NAN;
    return A;
}

FZ_FN int fz_all_finite_f(const float *a, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (!(fabsf(a[i]) <= FLT_MAX)) return 0;
    return 1;
}

/* finite over the rows x cols part of a shape */
FZ_FN int fz_matrix_finite(const float *A, const fz_shape *s)
{
    size_t i;
    if (s->bogus) return 0;
    for (i = 0; i < s->rows; i++)
        if (!fz_all_finite_f(A + i * s->ld, s->cols)) return 0;
    return 1;
}

/* ---- snapshots ---------------------------------------------------------------------------- */
typedef struct {
    const void *p;
    void *copy;
    size_t n;
} fz_snap;

FZ_FN fz_snap fz_take_snap(const void *p, size_t n)
{
    fz_snap s;
    s.p = p;
    s.n = n;
    s.copy = fz_malloc(n);
    if (n) memcpy(s.copy, p, n);
    return s;
}
FZ_FN int fz_snap_same(const fz_snap *s) { return s->n == 0 || memcmp(s->copy, s->p, s->n) == 0; }
FZ_FN void fz_snap_free(fz_snap *s)
{
    free(s->copy);
    s->copy = NULL;
}

/* The step output S of a stepper (rows x cols, ld lds) against the change it claims:
 * S = W_after - (1 - lrwd) W_before to the roundings of W_after and S (and 2^-149 for
 * subnormals), plus a few double roundings of W_before's size (the steppers form both from
 * terms of that size in double: where lrwd is near 1 and the update near -W, W_after and S are
 * tiny and those roundings, 2^-53 |W_before| each, are the whole error; the check's own
 * (1 - lrwd) W_before is exact in double, 1 - lrwd by Sterbenz), for every entry whose W_before
 * was finite; S's padding (lds > cols, between
 * rows) still `pad`. Wb is W_before (ld ldw), Wa W_after. cautious: decay only where the update
 * -S and W agree in sign (S w <= 0), as muon_config.cautious_wd says; elsewhere S = W_after -
 * W_before. */
FZ_FN void fz_check_step(const float *S, size_t lds, const float *Wb, const float *Wa, size_t ldw, size_t rows,
                         size_t cols, double lrwd, int cautious, float pad)
{
    size_t i, j;
    for (i = 0; i < rows; i++) {
        for (j = 0; j < cols; j++) {
            double wb = Wb[i * ldw + j], wa = Wa[i * ldw + j], sv = S[i * lds + j];
            double lw = cautious && wb * sv > 0.0 ? 0.0 : lrwd;
            if (!(fabs(wb) <= FLT_MAX)) continue; /* a NaN/Inf in W stays in its own entry */
            FZ_CHECK(fabs(sv - (wa - (1.0 - lw) * wb)) <=
                         ldexp(1.0, -23) * (fabs(wa) + fabs(sv)) + ldexp(1.0, -50) * fabs(wb) + ldexp(1.0, -149),
                     "S[%zu,%zu] = %.9g, W %.9g -> %.9g, lr wd %.3g%s", i, j, sv, wb, wa, lrwd,
                     cautious ? " (cautious)" : "");
        }
        for (j = cols; j < lds && i + 1 < rows; j++) FZ_CHECK(S[i * lds + j] == pad, "S padding written");
    }
}

/* a double parameter: mostly from a table of ordinary values, sometimes hostile */
FZ_FN double fz_param(fz_in *in, const double *ordinary, int n_ordinary)
{
    uint8_t k = fz_u8(in);
    if (k < 200) return ordinary[k % n_ordinary];
    switch (k % 12) {
    case 0: return 0.0;
    case 1: return -0.0;
    case 2: return -1.0;
    case 3: return NAN;
    case 4: return INFINITY;
    case 5: return -INFINITY;
    case 6: return 1e300;
    case 7: return 1e-300;
    case 8: return 1.0;
    case 9: return 0.999999999;
    case 10: return 5e-324;
    default: {
        uint64_t b = (uint64_t)fz_u32(in) | ((uint64_t)fz_u32(in) << 32);
        double d;
        memcpy(&d, &b, sizeof d);
        return d;
    }
    }
}

#endif /* FUZZ_COMMON_H */
