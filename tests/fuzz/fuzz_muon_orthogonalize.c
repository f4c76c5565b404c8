/* fuzz_muon_orthogonalize.c - muon_orthogonalize, muon_orthogonalize_ws,
 * muon_orthogonalize_batched, muon_orthogonalize_batched_ws, muon_orthogonalize_workspace_size,
 * muon_orthogonalize_batched_workspace_size, with fuzzed schedules, shapes, leading dimensions, strides,
 * values and placements of the output (separate, in place, overlapping).
 * Checks: on an error the output buffer (all of it) is untouched and G too; G never changes
 * unless the call is in place; invalid sizes never return OK; an overlap other than exact in
 * place is never OK; NaN/Inf in G is never OK; finite G gives finite output with any accepted schedule;
 * in place gives the bits of out of place; every batched matrix equals the single call. */
#include "muon.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    uint8_t op = fz_u8(&in), place = fz_u8(&in), nsk = fz_u8(&in);
    int batched = op & 1, use_ws = (op >> 1) & 1, preset = 1;
    fz_shape s = fz_take_shape(&in, 20, 20);
    size_t count = batched ? 1 + fz_u8(&in) % 4 : 1, ldo = s.ld, stride_g = 0, stride_o = 0;
    size_t gtot, otot, i, tot;
    fz_valgen g = fz_take_valgen(&in);
    muon_ns_config ns, *nsp = &ns;
    float *G, *O, *buf;
    int inplace = 0, overlap = 0;
    muon_status st;
    fz_snap snG, snO;
    void *ws = NULL;
    size_t ws_bytes = 0;

    if (nsk < 100) nsp = NULL;
    else if (nsk < 200) ns = muon_ns_preset((muon_ns_kind)(nsk % 4), (int)(fz_u8(&in) % 12));
    else {
        static const double ord[] = {3.4445, -4.7750, 2.0315, 1.5, -0.5, 0.0, 1e-7, 1.0, 1.01};
        int k;
        preset = 0;
        memset(&ns, 0, sizeof ns);
        ns.count = (int)(fz_u8(&in) % 6) - 1;
        ns.steps = (int)(fz_u8(&in) % 12) - 1;
        ns.mode = (muon_ns_mode)(fz_u8(&in) % 3);
        ns.safety = fz_param(&in, ord, 9);
        ns.eps = fz_param(&in, ord, 9);
        for (k = 0; k < 6; k++) {
            ns.coeffs[k][0] = fz_param(&in, ord, 9);
            ns.coeffs[k][1] = fz_param(&in, ord, 9);
            ns.coeffs[k][2] = fz_param(&in, ord, 9);
        }
    }
    if (!s.bogus) ldo = s.cols + fz_u8(&in) % 3;
    if (batched) {
        stride_g = s.bogus ? 1 : s.alloc + fz_u8(&in) % 5;
        stride_o = s.bogus ? 1 : fz_extent(s.rows, s.cols, ldo) + fz_u8(&in) % 5;
        if (fz_u8(&in) % 16 == 0 && stride_o > 2) stride_o -= 2; /* too small: outputs overlap */
    }
    gtot = s.bogus ? s.alloc : (count - 1) * stride_g + s.alloc;
    otot = s.bogus ? s.alloc : (count - 1) * stride_o + fz_extent(s.rows, s.cols, ldo);
    switch (place % 4) {
    case 1: /* in place: out == G, ldo == ldg, same stride */
        if (s.bogus) break;
        ldo = s.ld;
        stride_o = stride_g;
        otot = gtot;
        inplace = 1;
        break;
    case 2: /* overlapping by an offset */
        overlap = gtot > 1;
        break;
    default: break;
    }
    {
        size_t off = overlap ? 1 + fz_u8(&in) % (gtot - 1) : 0;
        tot = inplace ? gtot : overlap ? (off + otot > gtot ? off + otot : gtot) : gtot + otot;
        buf = (float *)fz_malloc(tot * sizeof(float));
        for (i = 0; i < tot; i++) buf[i] = fz_value(&g, &in, s.bogus ? i : (i % (stride_g ? stride_g : s.alloc ? s.alloc : 1)) % s.ld);
        G = buf;
        O = inplace ? buf : overlap ? buf + off : buf + gtot;
        if (!inplace && !overlap) /* the output region starts as garbage */
            for (i = 0; i < otot; i++) O[i] = -12345.0f;
        if (!s.bogus) /* padding of G: NaN, never read */
            for (i = 0; i < gtot; i++)
                if ((i % (stride_g ? stride_g : gtot)) % s.ld >= s.cols && !overlap) G[i] = NAN;
        if (overlap) gtot = tot; /* both snapshots cover the whole buffer */
    }
    if (use_ws) {
        size_t need = batched ? muon_orthogonalize_batched_workspace_size(count, s.rows, s.cols) : muon_orthogonalize_workspace_size(s.rows, s.cols);
        uint8_t w = fz_u8(&in);
        ws_bytes = w % 8 == 0 && need ? need / 2 : need;
        if (batched && w % 8 == 1) ws_bytes = muon_orthogonalize_workspace_size(s.rows, s.cols);
        ws = fz_malloc(ws_bytes);
    }
    snG = fz_take_snap(G, gtot * sizeof(float));
    snO = fz_take_snap(overlap ? buf : O, (overlap ? tot : otot) * sizeof(float));
    if (nsp) { /* the iteration form (read last, so the kept corpus keeps its meaning) */
        uint8_t mb = fz_u8(&in), rb = fz_u8(&in);
        ns.method = mb % 2 ? MUON_NS_GRAM : MUON_NS_PLAIN;
        if (mb == 255) ns.method = (muon_ns_method)7; /* invalid: MUON_ERR_DOMAIN */
        ns.gram_restart = rb == 255 ? -1 : rb % 5;    /* -1 invalid; 0 = default */
    }
    if (batched)
        st = use_ws ? muon_orthogonalize_batched_ws(G, count, s.rows, s.cols, s.ld, stride_g, nsp, O, ldo, stride_o, ws, ws_bytes)
                    : muon_orthogonalize_batched(G, count, s.rows, s.cols, s.ld, stride_g, nsp, O, ldo, stride_o);
    else
        st = use_ws ? muon_orthogonalize_ws(G, s.rows, s.cols, s.ld, nsp, O, ldo, ws, ws_bytes)
                    : muon_orthogonalize(G, s.rows, s.cols, s.ld, nsp, O, ldo);

    if (s.bogus) FZ_CHECK(st != MUON_OK, "invalid sizes accepted: %zu x %zu ld %zu", s.rows, s.cols, s.ld);
    if (!s.bogus && count > 1 && stride_o < fz_extent(s.rows, s.cols, ldo))
        FZ_CHECK(st != MUON_OK, "overlapping output matrices accepted (stride_o %zu)", stride_o);
    if (st != MUON_OK) {
        FZ_CHECK(fz_snap_same(&snO), "output changed on error %d (%s)", (int)st, muon_status_string(st));
        FZ_CHECK(fz_snap_same(&snG), "G changed on error %d", (int)st);
    } else {
        int finite = 1;
        size_t b, r;
        FZ_CHECK(!overlap || O == G, "overlapping output accepted");
        if (!inplace) FZ_CHECK(fz_snap_same(&snG), "G changed");
        for (b = 0; b < count; b++)
            for (r = 0; r < s.rows; r++) {
                const float *row = (const float *)snG.copy + b * stride_g + r * s.ld;
                if (!fz_all_finite_f(row, s.cols)) finite = 0;
            }
        FZ_CHECK(finite, "non-finite G accepted");
        /* any accepted schedule keeps a finite input finite (the schedule's bound, else RANGE) */
        (void)preset;
            for (b = 0; b < count; b++)
                for (r = 0; r < s.rows; r++)
                    FZ_CHECK(fz_all_finite_f(O + b * stride_o + r * ldo, s.cols), "non-finite output, matrix %zu row %zu", b, r);
        /* padding of the output never written */
        if (!inplace)
            for (b = 0; b < count; b++)
                for (r = 0; r < s.rows; r++)
                    for (i = s.cols; i < ldo && r * ldo + i < fz_extent(s.rows, s.cols, ldo) && !overlap; i++)
                        FZ_CHECK(O[b * stride_o + r * ldo + i] == -12345.0f, "output padding written");
        /* every matrix equals the single, out-of-place, allocating call */
        {
            float *o1 = (float *)fz_malloc(fz_extent(s.rows, s.cols, s.cols) * sizeof(float));
            for (b = 0; b < count; b++) {
                muon_status s1 = muon_orthogonalize((const float *)snG.copy + b * stride_g, s.rows, s.cols, s.ld, nsp, o1, s.cols);
                FZ_CHECK(s1 == MUON_OK, "single call failed: %d", (int)s1);
                for (r = 0; r < s.rows; r++)
                    FZ_CHECK(memcmp(o1 + r * s.cols, O + b * stride_o + r * ldo, s.cols * sizeof(float)) == 0,
                             "matrix %zu row %zu differs from the single out-of-place call", b, r);
            }
            free(o1);
        }
    }
    fz_snap_free(&snG);
    fz_snap_free(&snO);
    free(ws);
    free(buf);
    return 0;
}
