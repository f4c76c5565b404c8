/* fuzz_rn_shard_rms.c - the sharded Hilbert RMS: rn_hilbert_rms_center_sums,
 * rn_hilbert_rms_partial_centered_ws (and rn_hilbert_rms_partial_ws per shard) combined by
 * max/min, against rn_hilbert_rms of the whole S; 1-4 shards of fuzzed sizes, token counts on
 * both sides of the parallel-mode switch (448), fuzzed values (NaN/Inf, huge, tiny), corrupted
 * reduced sums and short workspaces.
 * Checks: the same status as the whole call; one shard with the common centre gives the
 * whole call's RMS bit for bit; several shards (common or local centres) agree within
 * rounding for tame values; errors leave sums, tok_max and tok_min untouched. */
#include "rownorm.h"
#include "fuzz_common.h"

#define FZ_MAXP 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    uint8_t op = fz_u8(&in);
    fz_shape s = fz_take_shape(&in, 40, 16);
    fz_valgen gs = fz_take_valgen(&in), gh = fz_take_valgen(&in);
    size_t N = (op & 1) ? 449 + fz_u8(&in) % 100 : 1 + fz_u8(&in) % 80, ldh, P, off[FZ_MAXP + 1], p, l, k, need;
    float *S = fz_matrix(&s, &gs, &in), *H;
    double *sums, *part, *mx, *mn, *pmx, *pmn, rms_whole = -1.0, rms = -1.0;
    rn_status whole, r = RN_OK;
    int centred = (op >> 1) & 1;
    void *ws;

    if (s.bogus) {
        double sm[4] = {7, 7, 7, 7};
        if (s.cols <= 3) FZ_CHECK(rn_hilbert_rms_center_sums(S, s.rows, s.cols, s.ld, sm) != RN_OK && sm[0] == 7.0,
                                  "bogus shape accepted");
        free(S);
        return 0;
    }
    ldh = s.cols + fz_u8(&in) % 2;
    H = (float *)fz_malloc(fz_extent(N, s.cols, ldh) * sizeof(float));
    for (l = 0; l < fz_extent(N, s.cols, ldh); l++) H[l] = fz_value(&gh, &in, l % ldh);
    whole = rn_hilbert_rms(S, s.rows, s.cols, s.ld, H, N, ldh, &rms_whole);
    P = 1 + (size_t)(op >> 2) % FZ_MAXP;
    if (P > s.rows) P = s.rows;
    off[0] = 0; off[P] = s.rows;
    for (p = 1; p < P; p++) {
        size_t lo = off[p - 1] + 1, hi = s.rows - (P - p);
        off[p] = lo + fz_u8(&in) % (hi - lo + 1);
    }
    need = rn_hilbert_rms_workspace_size(s.cols, N);
    FZ_CHECK(need > 0, "workspace size 0");
    ws = fz_malloc(need);
    sums = (double *)fz_malloc((s.cols + 1) * sizeof(double));
    part = (double *)fz_malloc((s.cols + 1) * sizeof(double));
    mx = (double *)fz_malloc(N * sizeof(double)); mn = (double *)fz_malloc(N * sizeof(double));
    pmx = (double *)fz_malloc(N * sizeof(double)); pmn = (double *)fz_malloc(N * sizeof(double));
    for (k = 0; k <= s.cols; k++) sums[k] = 0.0;
    for (l = 0; l < N; l++) { mx[l] = -HUGE_VAL; mn[l] = HUGE_VAL; }
    for (p = 0; p < P && centred; p++) {
        rn_status x;
        for (k = 0; k <= s.cols; k++) part[k] = -5.0;
        x = rn_hilbert_rms_center_sums(S + off[p] * s.ld, off[p + 1] - off[p], s.cols, s.ld, part);
        if (x != RN_OK) {
            FZ_CHECK(x == RN_ERR_NONFINITE, "center_sums %d", (int)x);
            for (k = 0; k <= s.cols; k++) FZ_CHECK(part[k] == -5.0, "sums written on error");
            r = x;
        }
        for (k = 0; k <= s.cols; k++) sums[k] += part[k];
    }
    if (centred && r == RN_OK && (op & 0x40)) { /* a corrupted reduction: too few rows in all */
        double keep = sums[s.cols];
        sums[s.cols] = (double)(off[1] - off[0]) - 0.5;
        for (l = 0; l < N; l++) pmx[l] = pmn[l] = 3.0;
        r = rn_hilbert_rms_partial_centered_ws(S, off[1], s.cols, s.ld, sums, H, N, ldh, ws, need, pmx, pmn);
        FZ_CHECK(r == RN_ERR_DOMAIN || (r == RN_ERR_NONFINITE && whole == RN_ERR_NONFINITE), "bad row count: %d", (int)r);
        r = RN_OK;
        for (l = 0; l < N; l++) FZ_CHECK(pmx[l] == 3.0 && pmn[l] == 3.0, "ranges written on error");
        sums[s.cols] = keep;
    }
    for (p = 0; p < P && r == RN_OK; p++) {
        size_t have = need - ((op & 0x80) && p == 0);
        for (l = 0; l < N; l++) pmx[l] = pmn[l] = 3.0;
        if (centred)
            r = rn_hilbert_rms_partial_centered_ws(S + off[p] * s.ld, off[p + 1] - off[p], s.cols, s.ld, sums, H, N, ldh, ws,
                                                   have, pmx, pmn);
        else
            r = rn_hilbert_rms_partial_ws(S + off[p] * s.ld, off[p + 1] - off[p], s.cols, s.ld, H, N, ldh, ws, have, pmx,
                                          pmn);
        if (have < need) FZ_CHECK(r == RN_ERR_SIZE || (r == RN_ERR_NONFINITE && whole == RN_ERR_NONFINITE), "short ws: %d", (int)r);
        if (r != RN_OK) {
            for (l = 0; l < N; l++) FZ_CHECK(pmx[l] == 3.0 && pmn[l] == 3.0, "ranges written on error %d", (int)r);
            break;
        }
        for (l = 0; l < N; l++) {
            FZ_CHECK(pmx[l] >= pmn[l], "token %zu: max < min", l);
            if (pmx[l] > mx[l]) mx[l] = pmx[l];
            if (pmn[l] < mn[l]) mn[l] = pmn[l];
        }
    }
    if (op & 0x80) goto done; /* shard 0 was refused: nothing to compare */
    if (r == RN_OK) r = rn_hilbert_rms_from_range(mx, mn, N, &rms);
    FZ_CHECK(r == whole, "whole %d, sharded %d", (int)whole, (int)r);
    if (r == RN_OK) {
        if (P == 1 && centred) FZ_CHECK(memcmp(&rms, &rms_whole, sizeof rms) == 0, "one shard: %.17g vs %.17g", rms, rms_whole);
        if (fz_valgen_tame(&gs) && fz_valgen_tame(&gh) && gs.mode != 9 && gs.mode != 10 && gh.mode != 9 && gh.mode != 10)
            FZ_CHECK(fabs(rms - rms_whole) <= 1e-4 * rms_whole + 1e-30, "sharded %.17g, whole %.17g (P %zu)", rms,
                     rms_whole, P);
    }
done:
    free(ws); free(sums); free(part); free(mx); free(mn); free(pmx); free(pmn); free(S); free(H);
    return 0;
}
