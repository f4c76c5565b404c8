/* amx_ceiling.c - the AMX engine of bf16 Newton-Schulz against the tile unit's ceilings on this
 * core (issue 17: where the engine's time goes, and what a change to its blocking can gain).
 *
 * Build and run (from the repository root; one thread; Linux, a compiler and CPU with AMX-BF16):
 *   make build/bench/amx_ceiling && build/bench/amx_ceiling [rounds]      (rounds >= 3, default 7)
 *
 * Part 1, the tile loop alone: 256 x 256 C blocks computed by the engine's own 32 x 32 tile call
 * (muon__amx_tile32: 2 x 2 tiles, A panel reused across a block row), row tile by row tile, the
 * C block in a 256 KB buffer, in these regimes, each the median of `rounds` timings:
 *   hot       one k block of 384, the A and B blocks in L2 (the same block again and again)
 *   l2        k 768 in two k blocks, everything in L2: C goes through its buffer per k block
 *   stream    k 2048 in k blocks of 352 (the engine's split), 4 C blocks each with its own A and
 *             B rows (16 MB: from L3), without prefetching, and with the engine's prefetch of the
 *             next k block into L2 from inside the tile calls
 *   3x2       hot and stream again with a 48 x 32 call (3 x 2 tiles: six C tiles, the A tile
 *             reloaded from L1 for each, a B tile from L2 read once per three dot products: a
 *             third less L2 traffic than 2 x 2)
 *   4x1, 5x1  the same with 64 x 16 and 80 x 16 calls (four or five C tiles down one column
 *             tile, the A tiles through two registers in turn: a B tile per 4 or 5 products)
 * Part 2, the engine itself: one Newton-Schulz iteration's three products (X X^T, A A^T, B X) on
 * the bench's NS shapes, each the median of `rounds`, as TF/s of the flops each performs.
 * Not a test: a probe of this machine (bench/RESULTS.md quotes it with the CPU).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#define MUON_IMPLEMENTATION
#include "muon.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef MUON__BF16_AMX
int main(void)
{
    puts("amx_ceiling: this build has no AMX engine (needs -mamx-tile -mamx-bf16 on Linux x86-64)");
    return 0;
}
#else
#include "bench_time.h"

static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void *alloc64(size_t bytes, void **raw)
{
    *raw = malloc(bytes + 64);
    if (!*raw) {
        fputs("amx_ceiling: out of memory\n", stderr);
        exit(1);
    }
    return (void *)(((size_t)*raw + 63u) & ~(size_t)63u);
}

/* The next k block of a C block's operands as one list of lines: A's panels (npa, kl lines each,
 * panel p at a + p * ps), then B's (npb, at b) */
typedef struct {
    const char *a, *b;
    size_t npa, npb, kl, ps;
} pf_list;
static const char *pf_line(const pf_list *P, size_t l)
{
    size_t pn = l / P->kl, r = l % P->kl;
    return pn < P->npa ? P->a + pn * P->ps + r * 64 : P->b + (pn - P->npa) * P->ps + r * 64;
}

/* 48 x 32 C (rows 0-47 of c, 3 x 2 tiles) += A rows (three 16-row tiles at a0, a1, a2, step 2048
 * per 32 k) times the B panel at b; the A tile register is reloaded for every dot product. Lines
 * [l0, l1) of P are prefetched into L2, per lines per 32 k. */
static void tile48(size_t kc, const unsigned char *a0, const unsigned char *a1, const unsigned char *a2,
                   const unsigned char *b, float *c, size_t ldc, int beta, const pf_list *P, size_t l0, size_t l1,
                   size_t per)
{
    const size_t sc = ldc * sizeof(float);
    size_t s, l;
    if (!beta) {
        _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3); _tile_zero(4); _tile_zero(5);
    } else {
        _tile_loadd(0, c, sc); _tile_loadd(1, c + 16, sc);
        _tile_loadd(2, c + 16 * ldc, sc); _tile_loadd(3, c + 16 * ldc + 16, sc);
        _tile_loadd(4, c + 32 * ldc, sc); _tile_loadd(5, c + 32 * ldc + 16, sc);
    }
    for (s = 0; s < kc / 32; s++) {
        _tile_loadd(7, b, 128);
        _tile_loadd(6, a0, 64); _tile_dpbf16ps(0, 6, 7);
        _tile_loadd(6, a1, 64); _tile_dpbf16ps(2, 6, 7);
        _tile_loadd(6, a2, 64); _tile_dpbf16ps(4, 6, 7);
        _tile_loadd(7, b + 64, 128);
        _tile_loadd(6, a0, 64); _tile_dpbf16ps(1, 6, 7);
        _tile_loadd(6, a1, 64); _tile_dpbf16ps(3, 6, 7);
        _tile_loadd(6, a2, 64); _tile_dpbf16ps(5, 6, 7);
        for (l = l0 + s * per; l < l0 + (s + 1) * per && l < l1; l++) _mm_prefetch(pf_line(P, l), _MM_HINT_T1);
        a0 += 2048; a1 += 2048; a2 += 2048; b += 2048;
    }
    _tile_stored(0, c, sc); _tile_stored(1, c + 16, sc);
    _tile_stored(2, c + 16 * ldc, sc); _tile_stored(3, c + 16 * ldc + 16, sc);
    _tile_stored(4, c + 32 * ldc, sc); _tile_stored(5, c + 32 * ldc + 16, sc);
}

/* R x 16 C (R = 64 or 80: 4 or 5 C tiles down one 16-column tile) += A rows (row tiles at ar[0..R/16),
 * step 2048 per 32 k) times the half panel at b (stride 128): one B tile per R/16 dot products, the
 * A tiles through two registers in turn (from L1). Prefetch as tile48. */
static void tile_r16(int R, size_t kc, const unsigned char *const *ar, const unsigned char *b, float *c, size_t ldc,
                     int beta, const pf_list *P, size_t l0, size_t l1, size_t per)
{
    const size_t sc = ldc * sizeof(float);
    const unsigned char *a0 = ar[0], *a1 = ar[1], *a2 = ar[2], *a3 = ar[3], *a4 = ar[4];
    size_t s, l;
    if (!beta) {
        _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
        if (R > 64) _tile_zero(4);
    } else {
        _tile_loadd(0, c, sc); _tile_loadd(1, c + 16 * ldc, sc);
        _tile_loadd(2, c + 32 * ldc, sc); _tile_loadd(3, c + 48 * ldc, sc);
        if (R > 64) _tile_loadd(4, c + 64 * ldc, sc);
    }
    for (s = 0; s < kc / 32; s++) {
        _tile_loadd(7, b, 128);
        _tile_loadd(5, a0, 64); _tile_loadd(6, a1, 64); _tile_dpbf16ps(0, 5, 7); _tile_dpbf16ps(1, 6, 7);
        _tile_loadd(5, a2, 64); _tile_loadd(6, a3, 64); _tile_dpbf16ps(2, 5, 7); _tile_dpbf16ps(3, 6, 7);
        if (R > 64) {
            _tile_loadd(5, a4, 64);
            _tile_dpbf16ps(4, 5, 7);
        }
        for (l = l0 + s * per; l < l0 + (s + 1) * per && l < l1; l++) _mm_prefetch(pf_line(P, l), _MM_HINT_T1);
        a0 += 2048; a1 += 2048; a2 += 2048; a3 += 2048; a4 += 2048; b += 2048;
    }
    _tile_stored(0, c, sc); _tile_stored(1, c + 16 * ldc, sc);
    _tile_stored(2, c + 32 * ldc, sc); _tile_stored(3, c + 48 * ldc, sc);
    if (R > 64) _tile_stored(4, c + 64 * ldc, sc);
}

/* nblk C blocks of BM x 256 (BM 256, 240 for 3 x 2 and 5 x 1), each over k = kt in k blocks of kcs, from
 * its own A rows and B columns, in the engine's operand layouts
 * (A: panel of 32 rows at +32*kt per panel, [kt/32][32][32]; B: panel of 32 columns, VNNI pairs).
 * pf: prefetch the next k block into L2 from inside the calls (2 x 2: the engine's spread, each
 * panel over the calls that read it; 3 x 2: all lines evenly over the k block's calls). */
static double run_blocks(int shape, size_t kt, size_t kcs, int nblk, int pf, const uint16_t *A, const uint16_t *B,
                         float *C)
{
    /* shape 0: 2 x 2 (32 x 32 calls), 1: 3 x 2 (48 x 32), 2: 4 x 1 (64 x 16), 3: 5 x 1 (80 x 16) */
    const size_t bn = 256, bm = shape == 1 || shape == 3 ? 240 : 256;
    const size_t rstep = shape == 0 ? 32 : shape == 1 ? 48 : shape == 2 ? 64 : 80, cstep = shape >= 2 ? 16 : 32;
    double t0 = now_s();
    int bl;
    for (bl = 0; bl < nblk; bl++) {
        const uint16_t *ab = A + (size_t)bl * 256 * kt, *bb = B + (size_t)bl * bn * kt;
        size_t k0;
        for (k0 = 0; k0 < kt; k0 += kcs) {
            size_t kc = kt - k0 < kcs ? kt - k0 : kcs, st = kc / 32, k1 = k0 + kc;
            size_t nl = pf && k1 < kt ? (kt - k1 < kcs ? kt - k1 : kcs) : 0, i, j, call = 0;
            const size_t calls = (bm / rstep) * (bn / cstep), tot = (256 / 32 + bn / 32) * nl;
            const size_t per = muon__gemm_ceil_div(tot, calls * st);
            const pf_list P = {(const char *)(ab + k1 * 32), (const char *)(bb + k1 * 32), 256 / 32, bn / 32, nl,
                               kt * 64};
            for (i = 0; i + rstep <= bm; i += rstep) {
                const uint16_t *ap = ab + i * kt + k0 * 32;
                size_t na = nl ? muon__x_pf_lines(nl, (bn / 32) * st) : 0;
                for (j = 0; j < bn; j += cstep) {
                    const uint16_t *bp = bb + (j / 32 * 32) * kt + k0 * 32 + (j % 32 ? 32 : 0);
                    size_t nb = nl ? muon__x_pf_lines(nl, (bm / rstep) * st) : 0;
                    if (shape == 0) {
                        muon__amx_tile32(kc, (const unsigned char *)ap, (const unsigned char *)bp, C + i * bn + j, bn,
                                         k0 ? 1.0f : 0.0f, (const char *)(ap + kc * 32) + (j / 32) * na * st * 64,
                                         (const char *)(bp + kc * 32) + (i / 32) * nb * st * 64, na, nb);
                    } else { /* row tiles t, t+1, ... (16 rows each) of the 32-row panels */
                        const unsigned char *ar[5];
                        size_t q;
                        for (q = 0; q < 5; q++) {
                            size_t tq = i / 16 + q;
                            ar[q] = (const unsigned char *)(ab + (tq / 2) * 32 * kt + k0 * 32) + (tq % 2) * 1024;
                        }
                        if (shape == 1)
                            tile48(kc, ar[0], ar[1], ar[2], (const unsigned char *)bp, C + i * bn + j, bn, k0 != 0, &P,
                                   call * st * per, tot, per);
                        else
                            tile_r16(shape == 2 ? 64 : 80, kc, ar, (const unsigned char *)bp, C + i * bn + j, bn,
                                     k0 != 0, &P, call * st * per, tot, per);
                    }
                    call++;
                }
            }
        }
    }
    return now_s() - t0;
}

static void part1(int rounds)
{
    /* 4 blocks of A rows (256 x 2048) and B columns (2048 x 256): 4 MB each side */
    const size_t kt_max = 2048;
    void *ra, *rb, *rc;
    uint16_t *A = (uint16_t *)alloc64((4 * 256 + 64) * kt_max * 2, &ra), *B = (uint16_t *)alloc64(4 * 256 * kt_max * 2, &rb);
    float *C = (float *)alloc64(256 * 256 * 4, &rc);
    struct {
        const char *name;
        int shape;
        size_t kt, kcs;
        int nblk, pf;
    } cases[] = {{"hot    2x2  k 384, 1 k block, in L2", 0, 384, 384, 1, 0},
                 {"l2     2x2  k 768, 2 k blocks, in L2", 0, 768, 384, 1, 0},
                 {"stream 2x2  k 2048 / 352, 4 blocks, no prefetch", 0, 2048, 352, 4, 0},
                 {"stream 2x2  k 2048 / 352, 4 blocks, engine prefetch", 0, 2048, 352, 4, 1},
                 {"hot    3x2  k 384, 1 k block, in L2", 1, 384, 384, 1, 0},
                 {"stream 3x2  k 2048 / 256, 4 blocks, prefetch", 1, 2048, 256, 4, 1},
                 {"hot    4x1  k 384, 1 k block, in L2", 2, 384, 384, 1, 0},
                 {"stream 4x1  k 2048 / 256, 4 blocks, prefetch", 2, 2048, 256, 4, 1},
                 {"hot    5x1  k 256, 1 k block, in L2", 3, 256, 256, 1, 0},
                 {"stream 5x1  k 2048 / 192, 4 blocks, prefetch", 3, 2048, 192, 4, 1}};
    double tf[10], *t = (double *)malloc((size_t)rounds * sizeof(double));
    size_t i, c;
    int r;
    for (i = 0; i < (4 * 256 + 64) * kt_max; i++) A[i] = (uint16_t)(0x3f00u + (i * 7u) % 128u); /* ~0.5 .. 1 */
    for (i = 0; i < 4 * 256 * kt_max; i++) B[i] = (uint16_t)(0x3c00u + (i * 13u) % 128u);
    memset(C, 0, 256 * 256 * 4);
    muon__amx_enter();
    printf("tile loop, one thread (TF/s of the flops computed; medians of %d):\n", rounds);
    for (c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const size_t bm = cases[c].shape == 1 || cases[c].shape == 3 ? 240 : 256;
        int reps = cases[c].nblk == 1 ? 40 : 4; /* ~ the same time per timing */
        for (r = 0; r < rounds; r++) {
            double s = 0.0;
            int q;
            (void)run_blocks(cases[c].shape, cases[c].kt, cases[c].kcs, cases[c].nblk, cases[c].pf, A, B, C);
            for (q = 0; q < reps; q++)
                s += run_blocks(cases[c].shape, cases[c].kt, cases[c].kcs, cases[c].nblk, cases[c].pf, A, B, C);
            t[r] = s / reps;
        }
        tf[c] = 2.0 * (double)bm * 256.0 * (double)cases[c].kt * cases[c].nblk / median_of(t, rounds) * 1e-12;
        printf("  %-52s %6.3f TF/s  (%.2f of hot 2x2)\n", cases[c].name, tf[c], tf[c] / tf[0]);
    }
    muon__amx_leave();
    free(t);
    free(ra);
    free(rb);
    free(rc);
}

/* The engine's region for an m x n iterate on one thread, set up as muon__ns_bf16_amx does, X
 * from a random G; then each product timed (the iterate moves on through B X each round). */
static void part2(int rounds)
{
    static const size_t shapes[][2] = {{768, 768}, {768, 3072}, {2048, 2048}, {1024, 4096}};
    size_t s;
    printf("engine products, one thread (muon__x_product; TF/s of the flops each performs; medians of %d):\n",
           rounds);
    for (s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const size_t m = shapes[s][0], n = shapes[s][1];
        size_t bytes = muon__xns_bytes(&muon__gemm_k_bf16_amx_engine, m, n, 1), i;
        void *rm, *rg;
        unsigned char *mem = (unsigned char *)alloc64(bytes, &rm);
        float *G = (float *)alloc64(m * n * sizeof(float), &rg);
        double *t = (double *)malloc(3 * (size_t)rounds * sizeof(double)), fl[3], med[3];
        muon__xns e;
        int r, q;
        memset(&e, 0, sizeof e);
        memset(mem, 0, bytes);
        for (i = 0; i < m * n; i++) G[i] = (float)((double)((i * 2654435761u) % 1000u) / 1000.0 - 0.5);
        e.m = m;
        e.n = n;
        e.xb = muon__gemm_k_bf16_amx_engine.ns_cb; /* the engine's blocks, from its kernel entry */
        e.xkc = muon__gemm_k_bf16_amx_engine.ns_kc;
        e.G = G;
        e.ldg = n;
        e.inv = 1.0 / (0.29 * sqrt((double)m * (double)n));
        e.out = G;
        e.ldo = n;
        muon__xns_place(&e, mem, 1);
        muon__x_io(&e, 0);
        e.a = 3.4445f; /* the Jordan triple */
        e.b = -4.7750f;
        e.c = 2.0315f;
        fl[0] = (double)m * (double)m * (double)n; /* the lower triangle's share, as in the bench */
        fl[1] = (double)m * (double)m * (double)m;
        fl[2] = 2.0 * (double)m * (double)m * (double)n;
        for (q = 0; q < 3; q++) muon__x_product(&e, q); /* untimed: the steady state */
        e.cur ^= 1;
        for (r = 0; r < rounds; r++) {
            for (q = 0; q < 3; q++) {
                double t0 = now_s();
                muon__x_product(&e, q);
                t[q * rounds + r] = now_s() - t0;
            }
            e.cur ^= 1;
        }
        for (q = 0; q < 3; q++) med[q] = median_of(t + q * rounds, rounds);
        printf("  %4zu x %-4zu  X X^T %6.2f ms %5.2f TF/s   A A^T %6.2f ms %5.2f TF/s   B X %6.2f ms %5.2f TF/s"
               "   iteration %6.2f ms\n",
               m, n, med[0] * 1e3, fl[0] / med[0] * 1e-12, med[1] * 1e3, fl[1] / med[1] * 1e-12, med[2] * 1e3,
               fl[2] / med[2] * 1e-12, (med[0] + med[1] + med[2]) * 1e3);
        free(t);
        free(rm);
        free(rg);
    }
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 7;
    if (rounds < 3) rounds = 3;
    if (!muon__amx_ready()) {
        puts("amx_ceiling: the kernel does not grant AMX tile data here");
        return 0;
    }
    printf("machine: one thread; muon__amx_tile32 and the engine of muon.h\n");
    part1(rounds);
    part2(rounds);
    return 0;
}
#endif
