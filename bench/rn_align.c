/* rn_align.c - the RowNorm step against where the caller's arrays sit relative to a 64-byte line.
 *
 *   make build/bench/rn_align && build/bench/rn_align [rows cols reps]   (default 32768 2048 9)
 *
 * G and W are placed 0 or 16 bytes past a line (malloc of a large block commonly returns 16
 * bytes past one); the state's B is the library's own (64-byte aligned). For each placement and
 * for the three configurations the bench's rownorm section times (compat + SKIP_CHECKS, compat,
 * default), the median of `reps` steps in ms and the 5-pass GB/s (G read, B and W read and
 * written). Why it exists: on a Zen 5, AVX-512 stores that straddle two lines made the step 1.4x
 * slower with W 16 bytes past a line (bench/RESULTS.md, "AVX-512 on a Zen 5"). One thread
 * unless built with OpenMP. Not a test.
 */
#define _POSIX_C_SOURCE 200809L
#define ROWNORM_IMPLEMENTATION
#include "rownorm.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_time.h"

static float *place(size_t n, size_t off_floats, void **base)
{
    if (posix_memalign(base, 64, (n + 16) * sizeof(float)) != 0) {
        fprintf(stderr, "rn_align: out of memory\n");
        exit(2);
    }
    return (float *)*base + off_floats;
}

int main(int argc, char **argv)
{
    size_t rows = argc > 1 ? (size_t)atol(argv[1]) : 32768, cols = argc > 2 ? (size_t)atol(argv[2]) : 2048;
    int reps = argc > 3 ? atoi(argv[3]) : 9, p, f, r;
    static const unsigned flags[3] = {RN_REFERENCE_COMPAT | RN_SKIP_CHECKS, RN_REFERENCE_COMPAT, 0u};
    static const char *names[3] = {"compat+SKIP_CHECKS", "compat", "default"};
    static const size_t offs[4][2] = {{0, 0}, {4, 0}, {0, 4}, {4, 4}}; /* G, W: floats past a line */
    double t[64];
    size_t n = rows * cols, i;
    if (reps < 1 || reps > 64 || rows == 0 || cols == 0) {
        fprintf(stderr, "usage: rn_align [rows cols reps(1..64)]\n");
        return 2;
    }
    printf("RowNorm step %zux%zu, median of %d (ms, and GB/s for 5 passes)\n", rows, cols, reps);
    printf("%-10s %-10s %22s %22s %22s\n", "G", "W", names[0], names[1], names[2]);
    for (p = 0; p < 4; p++) {
        void *gb, *wb;
        float *G = place(n, offs[p][0], &gb), *W = place(n, offs[p][1], &wb);
        rn_rownorm_state st;
        printf("%-10s %-10s", offs[p][0] ? "+16 B" : "on a line", offs[p][1] ? "+16 B" : "on a line");
        for (i = 0; i < n; i++) {
            G[i] = (float)((i * 2654435761u) % 1000u) * 1e-6f - 5e-4f;
            W[i] = 0.02f;
        }
        if (rn_rownorm_init(&st, rows, cols) != RN_OK) return 3;
        for (f = 0; f < 3; f++) {
            rn_rownorm_config cfg = rn_rownorm_default();
            cfg.flags = flags[f];
            if (rn_rownorm_step(&st, &cfg, W, cols, G, cols, NULL, 0) != RN_OK) return 4; /* warm-up */
            for (r = 0; r < reps; r++) {
                double t0 = now_s();
                if (rn_rownorm_step(&st, &cfg, W, cols, G, cols, NULL, 0) != RN_OK) return 4;
                t[r] = now_s() - t0;
            }
            qsort(t, (size_t)reps, sizeof t[0], cmp_double);
            printf(" %10.2f ms %6.1f GB/s", t[reps / 2] * 1e3, 5.0 * (double)n * sizeof(float) / t[reps / 2] * 1e-9);
        }
        printf("\n");
        fflush(stdout);
        rn_rownorm_free(&st);
        free(gb);
        free(wb);
    }
    return 0;
}
