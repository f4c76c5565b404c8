/* fuzz_muown.c - muown_default, muown_init, muown_step_workspace_size, muown_step, muown_step_ws,
 * muown_gradients, muown_resync, muown_free with fuzzed configs, shapes, leading dimensions
 * and values (zero rows, NaN/Inf, denormal, huge).
 * Checks: on an error the state (g, ||v||, magnitude moments, momentum, step), W and G are
 * untouched (muown_gradients: grad_g, grad_v untouched); invalid sizes and NaN/Inf in G never
 * OK; a zero row of W never passes muown_init. */
#include <limits.h>
#include "muon.h"
#include "fuzz_common.h"

typedef struct {
    muown_state st;
    double *d;
    float *mom;
} mw_snap;

static void mw_take(mw_snap *s, const muown_state *st)
{
    size_t r = st->rows;
    s->st = *st;
    s->d = (double *)fz_malloc(4 * r * sizeof(double));
    s->mom = (float *)fz_malloc(r * st->cols * sizeof(float));
    memcpy(s->d, st->g, r * sizeof(double));
    memcpy(s->d + r, st->vnorm, r * sizeof(double));
    memcpy(s->d + 2 * r, st->mag_m, r * sizeof(double));
    memcpy(s->d + 3 * r, st->mag_v, r * sizeof(double));
    memcpy(s->mom, st->momentum, r * st->cols * sizeof(float));
}
static int mw_same(const mw_snap *s, const muown_state *st)
{
    size_t r = st->rows;
    return memcmp(&s->st, st, sizeof *st) == 0 && memcmp(s->d, st->g, r * sizeof(double)) == 0 &&
           memcmp(s->d + r, st->vnorm, r * sizeof(double)) == 0 && memcmp(s->d + 2 * r, st->mag_m, r * sizeof(double)) == 0 &&
           memcmp(s->d + 3 * r, st->mag_v, r * sizeof(double)) == 0 &&
           memcmp(s->mom, st->momentum, r * st->cols * sizeof(float)) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    uint8_t op = fz_u8(&in);
    fz_shape s = fz_take_shape(&in, 12, 12);
    fz_valgen gw = fz_take_valgen(&in), gg = fz_take_valgen(&in);
    muown_config cfg = muown_default();
    static const double ord_lr[] = {0.02, 0.0, 0.5, 1e-3};
    static const double ord_b[] = {0.9, 0.95, 0.0, 0.5};
    static const double ord_eps[] = {1e-8, 1e-3, 1.0};
    float *W = fz_matrix(&s, &gw, &in), *G;
    muown_state st;
    muon_status rs;
    size_t steps = 1 + fz_u8(&in) % 3, t, i;
    int finite_w = fz_matrix_finite(W, &s);

    if (op & 1) {
        cfg.muon.lr = fz_param(&in, ord_lr, 4);
        cfg.muon.momentum = fz_param(&in, ord_b, 4);
        cfg.muon.weight_decay = fz_param(&in, ord_lr, 4);
        cfg.muon.nesterov = fz_u8(&in) & 1;
        cfg.muon.scale = (muon_scale_mode)(fz_u8(&in) % 5);
        cfg.muon.split_rows = fz_u8(&in) % 4;
        cfg.magnitude = (muown_magnitude_rule)(fz_u8(&in) % 4);
        cfg.mag_lr = fz_param(&in, ord_lr, 4);
        cfg.mag_beta1 = fz_param(&in, ord_b, 4);
        cfg.mag_beta2 = fz_param(&in, ord_b, 4);
        cfg.mag_eps = fz_param(&in, ord_eps, 3);
    }
    memset(&st, 0x6b, sizeof st);
    {
        muown_state st0 = st;
        fz_snap snW = fz_take_snap(W, s.alloc * sizeof(float));
        rs = muown_init(&st, W, s.rows, s.cols, s.ld);
        FZ_CHECK(fz_snap_same(&snW), "muown_init changed W");
        fz_snap_free(&snW);
        if (s.bogus || !finite_w) FZ_CHECK(rs != MUON_OK, "muown_init accepted invalid sizes or NaN/Inf");
        if (rs != MUON_OK) {
            FZ_CHECK(memcmp(&st, &st0, sizeof st) == 0, "muown_init wrote the state on error %d", (int)rs);
            free(W);
            return 0;
        }
        for (i = 0; i < s.rows; i++) {
            size_t j;
            int nz = 0;
            for (j = 0; j < s.cols; j++) nz |= W[i * s.ld + j] != 0.0f;
            FZ_CHECK(nz, "muown_init accepted a zero row %zu", i);
        }
    }
    G = fz_matrix(&s, &gg, &in);
    if (st.g) {
        switch (fz_u8(&in) % 16) { /* a counter restored from a file */
        case 0: st.step = LLONG_MAX; break;
        case 1: st.step = -1; break;
        default: break;
        }
    }
    for (t = 0; t < steps; t++) {
        int bad_count = st.step < 0 || st.step == LLONG_MAX;
        mw_snap ms;
        fz_snap snW = fz_take_snap(W, s.alloc * sizeof(float)), snG = fz_take_snap(G, s.alloc * sizeof(float));
        uint8_t which = fz_u8(&in) % 4, so = fz_u8(&in);
        /* the step output of the steps: NULL, or S with lds = cols + 0..2 (cols - 1 once in 8) */
        size_t lds = s.cols + so % 3, sn = 0, i2;
        float *S = NULL;
        fz_snap snS;
        if (so & 8) {
            if ((so >> 4) % 8 == 0 && s.cols > 1) lds = s.cols - 1;
            sn = fz_extent(s.rows, s.cols, lds);
            S = (float *)fz_malloc(sn * sizeof(float));
            for (i2 = 0; i2 < sn; i2++) S[i2] = 55.0f;
        }
        snS = fz_take_snap(S, S ? sn * sizeof(float) : 0);
        mw_take(&ms, &st);
        if (which == 0) {
            size_t need = muown_step_workspace_size(s.rows, s.cols, (fz_u8(&in) & 1) ? &cfg : NULL);
            size_t have = fz_u8(&in) % 8 == 0 ? need / 2 : need;
            void *ws = fz_malloc(have);
            rs = muown_step_ws(&st, &cfg, W, s.ld, G, s.ld, S, lds, ws, have);
            free(ws);
        } else if (which == 1) {
            double *gg_out = (double *)fz_malloc(s.rows * sizeof(double));
            float *gv = (float *)fz_malloc(s.alloc * sizeof(float));
            fz_snap a, b;
            memset(gg_out, 0x11, s.rows * sizeof(double));
            memset(gv, 0x22, s.alloc * sizeof(float));
            a = fz_take_snap(gg_out, s.rows * sizeof(double));
            b = fz_take_snap(gv, s.alloc * sizeof(float));
            rs = muown_gradients(&st, W, s.ld, G, s.ld, gg_out, gv, s.ld);
            if (rs != MUON_OK) FZ_CHECK(fz_snap_same(&a) && fz_snap_same(&b), "gradients written on error %d", (int)rs);
            FZ_CHECK(mw_same(&ms, &st), "muown_gradients changed the state");
            fz_snap_free(&a);
            fz_snap_free(&b);
            free(gg_out);
            free(gv);
        } else if (which == 2) {
            rs = muown_resync(&st, W, s.ld);
            FZ_CHECK(fz_snap_same(&snW), "muown_resync changed W");
        } else {
            rs = muown_step(&st, &cfg, W, s.ld, G, s.ld, S, lds);
        }
        if ((which == 0 || which == 3) && S) {
            if (lds < s.cols) FZ_CHECK(rs != MUON_OK, "lds %zu < cols %zu accepted", lds, s.cols);
            if (rs != MUON_OK) FZ_CHECK(fz_snap_same(&snS), "step_out written on error %d", (int)rs);
            else fz_check_step(S, lds, (const float *)snW.copy, W, s.ld, s.rows, s.cols,
                               cfg.muon.lr * cfg.muon.weight_decay, 0, 55.0f);
        }
        fz_snap_free(&snS);
        free(S);
        FZ_CHECK(fz_snap_same(&snG), "G changed");
        if (which != 2 && !fz_matrix_finite(G, &s)) FZ_CHECK(rs != MUON_OK, "NaN/Inf in G accepted");
        if ((which == 0 || which == 3) && bad_count) FZ_CHECK(rs != MUON_OK, "step counter %lld accepted", ms.st.step);
        if ((which == 0 || which == 3) && rs == MUON_OK) { /* finite in (W is checked), finite out */
            size_t r;
            for (r = 0; r < s.rows; r++)
                FZ_CHECK(fz_all_finite_f(W + r * s.ld, s.cols), "W not finite after a step, row %zu", r);
            for (r = 0; r < s.rows; r++) FZ_CHECK(st.g[r] == st.g[r] && fabs(st.g[r]) <= FLT_MAX, "g not finite");
        }
        if (rs != MUON_OK) {
            FZ_CHECK(fz_snap_same(&snW), "W changed on error %d (%s)", (int)rs, muon_status_string(rs));
            FZ_CHECK(mw_same(&ms, &st), "state changed on error %d (%s)", (int)rs, muon_status_string(rs));
        }
        free(ms.d);
        free(ms.mom);
        fz_snap_free(&snW);
        fz_snap_free(&snG);
        for (i = 0; i < s.alloc; i++) G[i] = fz_value(&gg, &in, i % s.ld);
    }
    muown_free(&st);
    free(W);
    free(G);
    return 0;
}
