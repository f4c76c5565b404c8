/* fuzz_muon_adamw.c - muon_adamw_default, muon_adamw_init, muon_adamw_step, muon_adamw_free,
 * muon_clip_grad_norm, with fuzzed configs, sizes, values and param/grad overlaps.
 * Checks: on an error param, m, v, step (AdamW) and every gradient and *total_norm_out
 * (clipping) are untouched; grad never changes; NaN/Inf in grad, overlaps and a step counter
 * that cannot take another step (negative, LLONG_MAX) never OK; an OK step maps finite
 * param, m, v to finite param, m, v for any finite gradient (v = beta2 v + (1-beta2) g^2 must
 * not overflow) and any config, also from a hostile state (m, v written with any finite
 * values); with finite gradients the clipped global norm is <= max_norm (relative 1e-6); a
 * tensor listed twice (or overlapping another) for clipping is never OK. */
#include <limits.h>
#include "muon.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    uint8_t op = fz_u8(&in);
    fz_valgen g = fz_take_valgen(&in);
    static const double ord_lr[] = {1e-3, 0.0, 0.1, 1.0};
    static const double ord_b[] = {0.9, 0.999, 0.0, 0.5};
    static const double ord_eps[] = {1e-8, 1e-3, 1.0};
    static const double ord_norm[] = {1.0, 0.5, 10.0, 1e-3};
    size_t n = 1 + fz_u8(&in) % 64, i;

    if (op & 1) {
        muon_adamw_state st;
        muon_adamw_config cfg = muon_adamw_default();
        size_t steps = 1 + fz_u8(&in) % 3, t;
        int overlap = fz_u8(&in) % 8 == 0;
        float *buf = (float *)fz_malloc(2 * n * sizeof(float)), *p = buf, *gr;
        if (op & 2) {
            cfg.lr = fz_param(&in, ord_lr, 4);
            cfg.beta1 = fz_param(&in, ord_b, 4);
            cfg.beta2 = fz_param(&in, ord_b, 4);
            cfg.eps = fz_param(&in, ord_eps, 3);
            cfg.weight_decay = fz_param(&in, ord_lr, 4);
        }
        gr = overlap ? buf + fz_u8(&in) % n : buf + n;
        for (i = 0; i < 2 * n; i++) buf[i] = fz_value(&g, &in, i);
        memset(&st, 0x44, sizeof st);
        {
            muon_adamw_state st0 = st;
            size_t sz = (op & 4) && fz_u8(&in) % 4 == 0 ? 0 : n;
            muon_status rs = muon_adamw_init(&st, sz);
            if (rs != MUON_OK) {
                FZ_CHECK(sz == 0, "init failed for size %zu", sz);
                FZ_CHECK(memcmp(&st, &st0, sizeof st) == 0, "adamw_init wrote the state on error");
                free(buf);
                return 0;
            }
        }
        switch (fz_u8(&in) % 16) { /* a counter restored from a file */
        case 0: st.step = LLONG_MAX; break;
        case 1: st.step = LLONG_MAX - 1; break;
        case 2: st.step = -1; break;
        case 3: st.step = LLONG_MIN; break;
        case 4: /* a hostile state: any values in the moments */
            for (i = 0; i < n; i++) {
                st.m[i] = fz_value(&g, &in, i);
                st.v[i] = fz_value(&g, &in, i + 1);
            }
            break;
        default: break;
        }
        for (t = 0; t < steps; t++) {
            muon_adamw_state s0 = st;
            int bad_count = st.step < 0 || st.step == LLONG_MAX;
            int finite_before = fz_all_finite_f(p, n) && fz_all_finite_f(st.m, n) && fz_all_finite_f(st.v, n);
            fz_snap sb = fz_take_snap(buf, 2 * n * sizeof(float)), sm = fz_take_snap(st.m, n * sizeof(float)),
                    sv = fz_take_snap(st.v, n * sizeof(float));
            int finite = fz_all_finite_f(gr, n);
            /* the step output: NULL, a separate buffer, or (once in 8) the gradient (ALIAS) */
            uint8_t so = fz_u8(&in);
            float *S = (so & 8) ? (float *)fz_malloc(n * sizeof(float)) : NULL, *Sarg = S;
            fz_snap snS;
            muon_status rs;
            if (S) for (i = 0; i < n; i++) S[i] = 55.0f;
            if (S && (so >> 4) % 8 == 0) Sarg = gr;
            snS = fz_take_snap(S, S ? n * sizeof(float) : 0);
            rs = muon_adamw_step(&st, &cfg, p, gr, Sarg);
            if (Sarg && Sarg == gr) FZ_CHECK(rs != MUON_OK, "step_out over grad accepted");
            if (rs != MUON_OK) FZ_CHECK(fz_snap_same(&snS), "step_out written on error %d", (int)rs);
            else if (S) fz_check_step(S, n, (const float *)sb.copy + (p - buf), p, n, 1, n, cfg.lr * cfg.weight_decay, 0, 55.0f);
            fz_snap_free(&snS);
            free(S);
            if (overlap || !finite) FZ_CHECK(rs != MUON_OK, "overlap or NaN/Inf accepted");
            if (bad_count) FZ_CHECK(rs != MUON_OK, "step counter %lld accepted", s0.step);
            if (rs == MUON_OK && finite_before)
                FZ_CHECK(fz_all_finite_f(p, n) && fz_all_finite_f(st.m, n) && fz_all_finite_f(st.v, n),
                         "finite param/moments became non-finite");
            if (rs != MUON_OK) {
                FZ_CHECK(fz_snap_same(&sb) && fz_snap_same(&sm) && fz_snap_same(&sv) && memcmp(&s0, &st, sizeof st) == 0,
                         "state or param changed on error %d (%s)", (int)rs, muon_status_string(rs));
            } else {
                FZ_CHECK(memcmp(gr, (const float *)sb.copy + (gr - buf), n * sizeof(float)) == 0, "grad changed");
                FZ_CHECK(st.step == s0.step + 1, "step count");
            }
            fz_snap_free(&sb);
            fz_snap_free(&sm);
            fz_snap_free(&sv);
            if (rs != MUON_OK) break;
            if (!overlap)
                for (i = 0; i < n; i++) gr[i] = fz_value(&g, &in, i);
        }
        muon_adamw_free(&st);
        muon_adamw_free(&st);
        free(buf);
    } else {
        /* clipping over up to 4 tensors, some of size 0 or NULL */
        size_t count = fz_u8(&in) % 5, sizes[4], tot = 0, k;
        float *grads[4], *all;
        double max_norm = fz_param(&in, ord_norm, 4), total = -9.0, ss = 0.0;
        fz_snap sn;
        muon_status rs;
        int finite = 1, has_null = 0, dup;
        for (k = 0; k < 4; k++) {
            sizes[k] = fz_u8(&in) % 4 == 0 ? 0 : 1 + fz_u8(&in) % 32;
            tot += sizes[k];
        }
        all = (float *)fz_malloc((tot ? tot : 1) * sizeof(float));
        for (i = 0, k = 0; k < 4; k++) {
            grads[k] = (sizes[k] == 0 && fz_u8(&in) % 2) ? NULL : all + i;
            i += sizes[k];
        }
        dup = 0;
        if (count > 1 && fz_u8(&in) % 4 == 0) { /* tensor k listed again (or a part of it) */
            size_t a = fz_u8(&in) % count, b = fz_u8(&in) % count;
            if (a != b && sizes[a] && grads[a]) {
                size_t off = fz_u8(&in) % sizes[a];
                grads[b] = grads[a] + off;
                sizes[b] = sizes[a] - off;
                dup = 1;
            }
        }
        for (i = 0; i < tot; i++) all[i] = fz_value(&g, &in, i);
        for (k = 0; k < count; k++) {
            if (!grads[k]) has_null = 1;
            else if (!fz_all_finite_f(grads[k], sizes[k])) finite = 0;
        }
        sn = fz_take_snap(all, tot * sizeof(float));
        rs = muon_clip_grad_norm(grads, sizes, count, max_norm, (op & 2) ? NULL : &total);
        if (!finite) FZ_CHECK(rs != MUON_OK, "NaN/Inf accepted");
        if (dup) FZ_CHECK(rs != MUON_OK, "a tensor listed twice accepted");
        if (rs != MUON_OK) {
            FZ_CHECK(fz_snap_same(&sn), "gradients changed on error %d (%s)", (int)rs, muon_status_string(rs));
            FZ_CHECK(total == -9.0, "total written on error %d", (int)rs);
        } else {
            (void)has_null;
            for (k = 0; k < count; k++)
                for (i = 0; grads[k] && i < sizes[k]; i++) ss += (double)grads[k][i] * grads[k][i];
            /* float rounding of the scaled values, subnormal results included */
            double slack = 1e-6 * max_norm + sqrt((double)tot) * 1.5e-45;
            if (g.mode < 13) FZ_CHECK(sqrt(ss) <= max_norm + slack || sqrt(ss) <= total * (1.0 + 1e-6) + 1e-300,
                                     "clipped norm %.17g > max_norm %.17g", sqrt(ss), max_norm);
        }
        fz_snap_free(&sn);
        free(all);
    }
    return 0;
}
