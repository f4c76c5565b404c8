/* fuzz_rn_shard_diam.c - the sharded exact diameter: rn_row_diameter_pair_ws,
 * rn_row_diameter_pair, rn_row_diameter_pair_workspace_size, rn_diameter_best_none,
 * rn_diameter_best_merge, rn_diameter_ring_rounds, rn_diameter_ring.
 * A fuzzed matrix is split into 1-5 shards of fuzzed sizes (each copied to its own buffer
 * with its own leading dimension, as on another process), the ring schedule is simulated
 * (with or without carrying each rank's best into its next call) and the ranks' results are
 * merged in a fuzzed order. Checks: the result equals rn_row_diameter of the whole matrix
 * exactly (distance bits and pair), or both report the same error; the schedule meets every
 * pair of shards once; direct calls with fuzzed offsets, incoming bests, workspace sizes and
 * shapes never return OK for invalid ones and never write *best on an error. */
#include "rownorm.h"
#include "fuzz_common.h"

#define FZ_MAXP 5

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    uint8_t op = fz_u8(&in);
    fz_shape s = fz_take_shape(&in, 48, 24);
    fz_valgen g = fz_take_valgen(&in);
    float *S = fz_matrix(&s, &g, &in), *blk[FZ_MAXP];
    size_t P, off[FZ_MAXP + 1], p, k, i, rounds, held[FZ_MAXP], next[FZ_MAXP], cover[FZ_MAXP][FZ_MAXP];
    size_t ldb[FZ_MAXP], maxrows = 0, need, ri = 0, rj = 0;
    rn_diameter_best best[FZ_MAXP], tot;
    rn_status whole, ring = RN_OK;
    double D = -1.0;
    void *ws;
    int carry = op & 1;

    if (s.bogus) { /* the kernel must refuse the shape; *best untouched */
        rn_diameter_best b = rn_diameter_best_none(), b0 = b;
        size_t nd = rn_row_diameter_pair_workspace_size(s.rows, 0, s.cols);
        void *w = fz_malloc(nd ? nd : 64);
        rn_status r = rn_row_diameter_pair_ws(S, s.rows, s.ld, 0, NULL, 0, 0, 0, s.cols, w, nd ? nd : 64, &b);
        FZ_CHECK(r != RN_OK && memcmp(&b, &b0, sizeof b) == 0, "bogus shape: %d", (int)r);
        free(w);
        free(S);
        return 0;
    }
    whole = rn_row_diameter(S, s.rows, s.cols, s.ld, &D, &ri, &rj);
    P = 1 + (size_t)(op >> 1) % FZ_MAXP;
    if (P > s.rows) P = s.rows;
    off[0] = 0; off[P] = s.rows;
    for (p = 1; p < P; p++) {
        size_t lo = off[p - 1] + 1, hi = s.rows - (P - p);
        off[p] = lo + fz_u8(&in) % (hi - lo + 1);
    }
    for (p = 0; p < P; p++) {
        size_t n = off[p + 1] - off[p];
        ldb[p] = s.cols + fz_u8(&in) % 3;
        blk[p] = (float *)fz_malloc(fz_extent(n, s.cols, ldb[p]) * sizeof(float));
        for (i = 0; i < n; i++) {
            memcpy(blk[p] + i * ldb[p], S + (off[p] + i) * s.ld, s.cols * sizeof(float));
            if (i + 1 < n) for (k = s.cols; k < ldb[p]; k++) blk[p][i * ldb[p] + k] = NAN; /* never read */
        }
        if (n > maxrows) maxrows = n;
        best[p] = rn_diameter_best_none();
        held[p] = p;
    }
    need = rn_row_diameter_pair_workspace_size(maxrows, maxrows, s.cols);
    FZ_CHECK(need > 0, "workspace size 0");
    ws = fz_malloc(need);
    rounds = rn_diameter_ring_rounds(P);
    FZ_CHECK(rounds == P / 2 + 1, "rounds");
    memset(cover, 0, sizeof cover);
    for (k = 0; k < rounds; k++) {
        if (k > 0) {
            for (p = 0; p < P; p++) {
                size_t sh = 0, to = 0, from = 0;
                FZ_CHECK(rn_diameter_ring(P, p, k, &sh, &to, &from) == RN_OK, "ring");
                FZ_CHECK(to == (p + P - 1) % P && from == (p + 1) % P, "ring neighbours");
                next[p] = held[from];
            }
            for (p = 0; p < P; p++) held[p] = next[p];
        }
        for (p = 0; p < P; p++) {
            size_t sh = 0, q;
            rn_diameter_best one = rn_diameter_best_none(), *acc = carry ? &best[p] : &one, keep;
            rn_status r;
            FZ_CHECK(rn_diameter_ring(P, p, k, &sh, NULL, NULL) == RN_OK, "ring");
            if (sh == (size_t)-1) continue;
            q = held[p];
            FZ_CHECK(sh == q, "schedule: computes %zu, holds %zu", sh, q);
            cover[p < q ? p : q][p < q ? q : p]++;
            keep = *acc;
            r = rn_row_diameter_pair_ws(blk[p], off[p + 1] - off[p], ldb[p], off[p], k ? blk[q] : NULL, off[q + 1] - off[q],
                                        ldb[q], off[q], s.cols, ws, need, acc);
            if (r != RN_OK) {
                FZ_CHECK(memcmp(&keep, acc, sizeof keep) == 0, "best written on error %d", (int)r);
                ring = r;
            }
            if (!carry) rn_diameter_best_merge(&best[p], &one);
        }
    }
    for (p = 0; p < P; p++)
        for (k = p; k < P; k++) FZ_CHECK(cover[p][k] == 1, "pair of shards (%zu, %zu) met %zu times", p, k, cover[p][k]);
    tot = rn_diameter_best_none();
    for (p = 0; p < P; p++) rn_diameter_best_merge(&tot, &best[(p + op) % P]); /* any order */
    if (whole != RN_OK) {
        FZ_CHECK(ring == whole, "whole %d, sharded %d", (int)whole, (int)ring);
    } else {
        FZ_CHECK(ring == RN_OK, "sharded %d", (int)ring);
        if (s.rows == 1) FZ_CHECK(tot.i == tot.j, "a pair from one row");
        else {
            double d = sqrt(tot.dist2);
            FZ_CHECK(tot.i < tot.j && memcmp(&d, &D, sizeof d) == 0 && tot.i == ri && tot.j == rj,
                     "sharded (%zu, %zu) %.17g, whole (%zu, %zu) %.17g, P %zu", tot.i, tot.j, d, ri, rj, D, P);
        }
    }
    /* direct calls with fuzzed offsets, incoming best and workspace size */
    if (P >= 2) {
        rn_diameter_best b, b0;
        size_t oa = fz_u8(&in), ob = fz_u8(&in), na = off[1], nb = off[2] - off[1], have = need - (fz_u8(&in) % 4 == 0);
        rn_status r;
        b.dist2 = (fz_u8(&in) & 1) ? -1.0 : fz_param(&in, (const double[]){0.0, 1.0, 4.5}, 3);
        b.i = fz_u8(&in) % 8;
        b.j = fz_u8(&in) % 8;
        b0 = b;
        r = rn_row_diameter_pair_ws(blk[0], na, ldb[0], oa, blk[1], nb, ldb[1], ob, s.cols, ws, have, &b);
        if (oa < ob + nb && ob < oa + na) FZ_CHECK(r != RN_OK, "overlapping index ranges accepted");
        if (have < need && rn_row_diameter_pair_workspace_size(na, nb, s.cols) > have) FZ_CHECK(r != RN_OK, "small ws");
        if (b0.i != b0.j && (b0.i > b0.j || !(b0.dist2 >= 0.0 && b0.dist2 <= DBL_MAX)))
            FZ_CHECK(r == RN_ERR_DOMAIN || r == RN_ERR_SIZE, "invalid incoming best accepted (%d)", (int)r);
        if (r != RN_OK) FZ_CHECK(memcmp(&b, &b0, sizeof b) == 0, "best written on error %d", (int)r);
        else {
            FZ_CHECK(b.i < b.j || (b.i == b.j && b0.i == b0.j && na * nb == 0), "result pair");
            FZ_CHECK(b.dist2 >= b0.dist2 || b0.i == b0.j, "result worse than the incoming best");
        }
    }
    for (p = 0; p < P; p++) free(blk[p]);
    free(ws);
    free(S);
    return 0;
}
