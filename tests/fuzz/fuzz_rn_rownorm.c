/* fuzz_rn_rownorm.c - rn_rownorm_default, rn_rownorm_init, rn_rownorm_init_ws,
 * rn_rownorm_init_workspace_size, rn_rownorm_step, rn_rownorm_sync, rn_rownorm_free: 1-3 steps with
 * fuzzed configs (every flag bit, non-finite and negative numbers), shapes, leading
 * dimensions, gradients and placements of G and step_out (separate or overlapping W).
 * Checks: on an error W, step_out, G and the state (the struct, B) are untouched (the private
 * scratch inside the state block may be written: it is recomputed by every step);
 * G never changes; invalid sizes, overlaps, unknown flags and NaN/Inf in G (without
 * RN_SKIP_CHECKS) are never OK; with finite tame values and a finite config W stays finite,
 * step_out's columns sum to ~0 when both projections are on, and padding is never written. */
#include "rownorm.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    uint8_t op = fz_u8(&in), place = fz_u8(&in);
    fz_shape s = fz_take_shape(&in, 20, 16);
    fz_valgen gw = fz_take_valgen(&in), gg = fz_take_valgen(&in);
    rn_rownorm_config cfg = rn_rownorm_default();
    static const double ord_lr[] = {3.2e-3, 0.0, 0.1, 1.0};
    static const double ord_b[] = {0.95, 0.0, 0.5, 0.9};
    static const double ord_eps[] = {1e-8, 0.0, 1e-3};
    rn_rownorm_state st;
    rn_status rs;
    size_t ldw = s.bogus ? s.ld : s.cols + fz_u8(&in) % 3, lds = s.bogus ? s.ld : s.cols + fz_u8(&in) % 2;
    size_t wn, gn, sn, tot, steps = 1 + fz_u8(&in) % 3, t, i, j, mem_bytes = 0;
    float *buf, *W, *G, *S = NULL;
    void *mem = NULL;
    int use_ws = op & 2, with_step = (op >> 2) & 1, ovl = (place % 8);

    if (op & 1) {
        cfg.lr = fz_param(&in, ord_lr, 4);
        cfg.beta = fz_param(&in, ord_b, 4);
        cfg.eps = fz_param(&in, ord_eps, 3);
        cfg.weight_decay = fz_param(&in, ord_lr, 4);
        cfg.flags = fz_u8(&in) % 8 == 0 ? fz_u32(&in) : fz_u8(&in) % 32;
#ifdef FZ_AVOID_KNOWN_RN_TINY_EPS /* to explore past the known subnormal-eps finding (docs/reliability.md) */
        if (cfg.eps > 0.0 && cfg.eps < 1e-290) cfg.eps = 0.0;
#endif
    }
    /* the state fixes rows and cols */
    memset(&st, 0x3c, sizeof st);
    if (s.bogus == 1) {
        rn_rownorm_state st0 = st;
        if (use_ws) {
            static char small[64];
            rs = rn_rownorm_init_ws(&st, s.rows, s.cols, small, sizeof small);
        } else {
            rs = rn_rownorm_init(&st, s.rows, s.cols);
        }
        FZ_CHECK(rs != RN_OK, "init accepted %zu x %zu", s.rows, s.cols);
        FZ_CHECK(memcmp(&st, &st0, sizeof st) == 0, "init wrote the state on error %d", (int)rs);
        FZ_CHECK(rn_rownorm_init_workspace_size(s.rows, s.cols) == 0, "state_size of invalid sizes");
        return 0;
    }
    if (use_ws) {
        mem_bytes = rn_rownorm_init_workspace_size(s.rows, s.cols);
        FZ_CHECK(mem_bytes > 0, "state_size 0 for %zu x %zu", s.rows, s.cols);
        if (fz_u8(&in) % 16 == 0) mem_bytes--;
        mem = fz_malloc(mem_bytes);
        rs = rn_rownorm_init_ws(&st, s.rows, s.cols, mem, mem_bytes);
        if (rs != RN_OK) {
            FZ_CHECK(mem_bytes < rn_rownorm_init_workspace_size(s.rows, s.cols), "init_ws failed: %d", (int)rs);
            free(mem);
            return 0;
        }
    } else {
        rs = rn_rownorm_init(&st, s.rows, s.cols);
        FZ_CHECK(rs == RN_OK, "init failed: %d", (int)rs);
        mem_bytes = rn_rownorm_init_workspace_size(s.rows, s.cols);
        mem = NULL;
    }
    wn = s.bogus ? s.alloc : fz_extent(s.rows, s.cols, ldw);
    gn = s.alloc;
    sn = s.bogus ? s.alloc : fz_extent(s.rows, s.cols, lds);
    tot = wn + gn + sn;
    buf = (float *)fz_malloc(tot * sizeof(float));
    for (i = 0; i < tot; i++) buf[i] = -11.0f;
    W = buf;
    G = buf + wn;
    if (with_step) S = buf + wn + gn;
    if (ovl == 1) G = buf + fz_u8(&in) % wn;                          /* G overlaps W */
    if (ovl == 2 && with_step) S = buf + wn + fz_u8(&in) % (gn ? gn : 1); /* step_out overlaps G */
    if (ovl == 3 && with_step) S = buf + fz_u8(&in) % wn;             /* step_out overlaps W */
    for (i = 0; i < wn; i++) W[i] = fz_value(&gw, &in, s.bogus ? i : i % ldw);
    if (op & 8) rn_rownorm_sync(&st);
    for (t = 0; t < steps; t++) {
        rn_rownorm_state s0 = st;
        fz_snap sb, smem, sB;
        int finite_g;
        if (ovl != 1 || t == 0) for (i = 0; i < gn; i++) G[i] = fz_value(&gg, &in, s.bogus ? i : i % s.ld);
        finite_g = fz_matrix_finite(G, &s);
        sb = fz_take_snap(buf, tot * sizeof(float));
        smem = fz_take_snap(mem ? mem : (void *)buf, mem ? mem_bytes : 0);
        sB = fz_take_snap(st.B, s.rows * s.cols * sizeof(float));
        rs = rn_rownorm_step(&st, &cfg, W, ldw, G, s.ld, S, lds);
        if (s.bogus) FZ_CHECK(rs != RN_OK, "invalid ld accepted");
        if (ovl == 1 || (with_step && (ovl == 2 || ovl == 3))) FZ_CHECK(rs != RN_OK, "overlap accepted (%d)", ovl);
        if (!finite_g && !(cfg.flags & RN_SKIP_CHECKS)) FZ_CHECK(rs != RN_OK, "NaN/Inf in G accepted");
        if (cfg.flags & ~31u) FZ_CHECK(rs != RN_OK, "unknown flags 0x%x accepted", cfg.flags);
        if (rs != RN_OK) {
            FZ_CHECK(fz_snap_same(&sb), "W, G or step_out changed on error %d (%s)", (int)rs, rn_status_string(rs));
            FZ_CHECK(memcmp(&s0, &st, sizeof st) == 0 && fz_snap_same(&sB), "state changed on error %d (%s)", (int)rs,
                     rn_status_string(rs));
        } else {
            FZ_CHECK(memcmp(G, (const float *)sb.copy + (G - buf), gn * sizeof(float)) == 0, "G changed");
            FZ_CHECK(st.t == s0.t + 1, "t");
            for (i = 0; i + 1 < s.rows; i++) {
                for (j = s.cols; j < ldw; j++)
                    FZ_CHECK(memcmp(W + i * ldw + j, (const float *)sb.copy + i * ldw + j, sizeof(float)) == 0 || ovl,
                             "W padding written");
                for (j = s.cols; S && j < lds; j++) FZ_CHECK(S[i * lds + j] == -11.0f || ovl, "step_out padding written");
            }
            if (fz_valgen_tame(&gw) && fz_valgen_tame(&gg) && cfg.lr <= 1.0 && cfg.weight_decay <= 1.0 && cfg.eps > 0.0) {
                for (i = 0; i < s.rows; i++)
                    FZ_CHECK(fz_all_finite_f(W + i * ldw, s.cols), "W not finite, row %zu", i);
                if (S && !(cfg.flags & (RN_NO_CENTER_OUT | RN_REFERENCE_COMPAT)))
                    for (j = 0; j < s.cols; j++) {
                        double cs = 0.0, mag = 0.0;
                        for (i = 0; i < s.rows; i++) {
                            cs += S[i * lds + j];
                            mag += fabs(S[i * lds + j]);
                        }
                        /* rounding: relative to the column, plus an absolute floor at the step's scale (a
                         * projection of exactly-equal rows leaves ~1e-19 * lr, not 0, on FMA builds) */
                        FZ_CHECK(fabs(cs) <= 1e-5 * mag + 1e-9 * cfg.lr * (double)s.rows + 1e-30,
                                 "step column %zu sums to %.3g (|S| %.3g)", j, cs, mag);
                    }
            }
        }
        fz_snap_free(&sb);
        fz_snap_free(&smem);
        fz_snap_free(&sB);
        if (rs != RN_OK) break;
    }
    rn_rownorm_free(&st);
    rn_rownorm_free(&st);
    free(mem);
    free(buf);
    return 0;
}
