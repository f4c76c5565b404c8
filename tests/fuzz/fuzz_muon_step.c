/* fuzz_muon_step.c - muon_default, muon_init, muon_init_ex, muon_step_workspace_size, muon_step,
 * muon_step_ws, muon_free: 1-3 steps with fuzzed configs (every field, including out-of-range
 * enums and non-finite numbers), shapes, leading dimensions, QKV splits, gradients (NaN/Inf,
 * denormal, huge) and placements of G (separate or overlapping W).
 * Checks: on an error W, the state (step, momentum, cap pair, NorMuon's row_v) and G are untouched; G never
 * changes; invalid sizes, G overlapping W, NaN/Inf in G and a step counter that cannot take
 * another step (negative, LLONG_MAX: e.g. from a checkpoint) are never OK; an OK step maps a
 * finite W to a finite W and leaves a finite momentum, whatever the config and the values
 * (finite G near FLT_MAX with the SUM momentum, lr up to MUON_LR_MAX, huge scale_coeff: each
 * must be an error when the result would not fit a float). */
#include <limits.h>
#include "muon.h"
#include "fuzz_common.h"

typedef struct {
    muon_state st;
    float *mom;
    double *cu, *cv, *rv;
} state_snap;

static void snap_state(state_snap *s, const muon_state *st)
{
    size_t n = st->rows * st->cols;
    s->st = *st;
    s->mom = (float *)fz_malloc(n * sizeof(float));
    s->cu = (double *)fz_malloc(st->rows * sizeof(double));
    s->cv = (double *)fz_malloc(st->cols * sizeof(double));
    memcpy(s->mom, st->momentum, n * sizeof(float));
    memcpy(s->cu, st->cap_u, st->rows * sizeof(double));
    memcpy(s->cv, st->cap_v, st->cols * sizeof(double));
    s->rv = NULL;
    if (st->row_v) {
        s->rv = (double *)fz_malloc(st->rows * sizeof(double));
        memcpy(s->rv, st->row_v, st->rows * sizeof(double));
    }
}
static int state_same(const state_snap *s, const muon_state *st)
{
    return memcmp(&s->st, st, sizeof *st) == 0 &&
           memcmp(s->mom, st->momentum, st->rows * st->cols * sizeof(float)) == 0 &&
           memcmp(s->cu, st->cap_u, st->rows * sizeof(double)) == 0 &&
           memcmp(s->cv, st->cap_v, st->cols * sizeof(double)) == 0 &&
           (!st->row_v || memcmp(s->rv, st->row_v, st->rows * sizeof(double)) == 0);
}
static void free_snap(state_snap *s)
{
    free(s->mom);
    free(s->cu);
    free(s->cv);
    free(s->rv);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    uint8_t op = fz_u8(&in);
    fz_shape s = fz_take_shape(&in, 16, 16);
    size_t ldw = s.bogus ? s.ld : s.cols + fz_u8(&in) % 3, wn, gn, steps = 1 + fz_u8(&in) % 3, t, i;
    muon_config cfg = muon_default();
    size_t row_sizes[4];
    static const double ord_lr[] = {0.02, 0.0, 1.0, 1e-4};
    static const double ord_mom[] = {0.95, 0.0, 0.5, 0.99};
    static const double ord_wd[] = {0.0, 0.1, 0.01};
    static const double ord_sc[] = {0.0, 0.2, 0.18, 1.0};
    fz_valgen gw = fz_take_valgen(&in), gg = fz_take_valgen(&in);
    muon_state st;
    muon_status rs;
    float *W, *G, *buf;
    int overlap = (op >> 4) % 8 == 0;

    if (op & 1) {
        cfg.lr = fz_param(&in, ord_lr, 4);
        cfg.momentum = fz_param(&in, ord_mom, 4);
        cfg.weight_decay = fz_param(&in, ord_wd, 3);
        cfg.nesterov = fz_u8(&in) % 2;
        cfg.momentum_form = (muon_momentum_form)(fz_u8(&in) % 3);
        cfg.scale = (muon_scale_mode)(fz_u8(&in) % 5);
        cfg.scale_coeff = fz_param(&in, ord_sc, 4);
        cfg.split_rows = fz_u8(&in) % 5;
        cfg.cap = (muon_cap_mode)(fz_u8(&in) % 4);
        cfg.cap_iters = (int)(fz_u8(&in) % 8) - 1;
        if (fz_u8(&in) % 8 == 0) cfg.ns = muon_ns_preset((muon_ns_kind)(fz_u8(&in) % 5), (int)(fz_u8(&in) % 8));
        if (fz_u8(&in) % 16 == 0) cfg.ns.eps = fz_param(&in, ord_wd, 3);
        { /* issue 18's switches: column splits, unequal row blocks, NorMuon, max-eps, cautious */
            uint8_t o = fz_u8(&in);
            cfg.split_cols = o % 4;
            if (o & 0x04) {
                cfg.row_blocks = fz_u8(&in) % 5;
                for (i = 0; i < cfg.row_blocks; i++) row_sizes[i] = fz_u8(&in) % 6;
                if (fz_u8(&in) % 4) cfg.row_sizes = row_sizes; /* else: a count without sizes */
            }
            cfg.normuon = (o >> 3) & 1;
            if (o & 0x10) cfg.normuon_beta2 = fz_param(&in, ord_mom, 4);
            if (o & 0x20) cfg.normuon_eps = fz_param(&in, ord_wd, 3);
            cfg.ns.norm = (muon_ns_norm)((o >> 6) % 3);
            cfg.cautious_wd = fz_u8(&in) % 2;
        }
        { /* the team size: default, small counts, negative (DOMAIN) and hostile ones (capped) */
            static const int team[8] = {0, 1, 2, 3, -1, INT_MIN, INT_MAX, 0};
            cfg.threads = team[fz_u8(&in) % 8];
        }
    }
    /* the state fixes rows and cols; bad ones must fail muon_init with st untouched */
    memset(&st, 0x3c, sizeof st);
    if (s.bogus == 1) {
        muon_state st0 = st;
        rs = (op & 0x80) ? muon_init_ex(&st, s.rows, s.cols, 0) : muon_init(&st, s.rows, s.cols);
        FZ_CHECK(rs != MUON_OK, "muon_init accepted %zu x %zu", s.rows, s.cols);
        FZ_CHECK(memcmp(&st, &st0, sizeof st) == 0, "muon_init wrote the state on error %d", (int)rs);
        return 0;
    }
    memset(&st, 0, sizeof st);
    if ((op >> 1) % 8 != 0) { /* else: a zeroed, never initialised state */
        rs = (op & 0x80) ? muon_init_ex(&st, s.rows, s.cols, 0) : muon_init(&st, s.rows, s.cols);
        if (rs != MUON_OK) return 0;
        switch (fz_u8(&in) % 16) { /* a counter restored from a file */
        case 0: st.step = LLONG_MAX; break;
        case 1: st.step = LLONG_MAX - 1; break;
        case 2: st.step = -1; break;
        case 3: st.step = LLONG_MIN; break;
        default: break;
        }
    }
    gn = s.alloc;
    wn = s.bogus ? s.alloc : fz_extent(s.rows, s.cols, ldw);
    buf = (float *)fz_malloc((gn + wn) * sizeof(float));
    for (i = 0; i < gn + wn; i++) buf[i] = -7.0f;
    W = buf;
    G = overlap ? buf + fz_u8(&in) % (wn ? wn : 1) : buf + wn;
    for (i = 0; i < wn; i++) W[i] = fz_value(&gw, &in, i % ldw);

    for (t = 0; t < steps; t++) {
        state_snap ss;
        fz_snap snW, snG, snBuf;
        int finite_g, finite_w, bad_count = st.step < 0 || st.step == LLONG_MAX;
        void *ws = NULL;
        size_t ws_bytes = 0;
        int use_ws = fz_u8(&in) % 3 == 0;
        /* the step output: NULL, or S with lds = cols + 0..2 (cols - 1 once in 8: SIZE) */
        uint8_t so = fz_u8(&in);
        size_t lds = s.cols + so % 3, sn = 0;
        float *S = NULL;
        fz_snap snS;
        if (so & 8) {
            if ((so >> 4) % 8 == 0 && s.cols > 1 && !s.bogus) lds = s.cols - 1;
            sn = s.bogus ? 4 : fz_extent(s.rows, s.cols, lds);
            S = (float *)fz_malloc(sn * sizeof(float));
            for (i = 0; i < sn; i++) S[i] = 55.0f;
        }
        snS = fz_take_snap(S, S ? sn * sizeof(float) : 0);
        if (!overlap || t == 0) for (i = 0; i < gn; i++) G[i] = fz_value(&gg, &in, s.bogus ? i : i % s.ld);
        finite_g = fz_matrix_finite(G, &s);
        finite_w = 1;
        if (!s.bogus && !overlap)
            for (i = 0; i < s.rows; i++) finite_w &= fz_all_finite_f(W + i * ldw, s.cols);
        if (st.momentum) snap_state(&ss, &st);
        else memset(&ss, 0, sizeof ss), ss.st = st;
        snW = fz_take_snap(W, wn * sizeof(float));
        snG = fz_take_snap(G, gn * sizeof(float));
        snBuf = fz_take_snap(buf, (gn + wn) * sizeof(float));
        if (use_ws) {
            ws_bytes = muon_step_workspace_size(s.rows, s.cols, (fz_u8(&in) & 1) ? &cfg : NULL);
            if (fz_u8(&in) % 8 == 0 && ws_bytes) ws_bytes /= 3;
            ws = fz_malloc(ws_bytes);
            rs = muon_step_ws(&st, &cfg, W, ldw, G, s.ld, S, lds, ws, ws_bytes);
        } else {
            rs = muon_step(&st, &cfg, W, ldw, G, s.ld, S, lds);
        }
        if (S && lds < s.cols) FZ_CHECK(rs != MUON_OK, "lds %zu < cols %zu accepted", lds, s.cols);
        free(ws);
        if (s.bogus || !st.momentum) FZ_CHECK(rs != MUON_OK, "invalid ld or uninitialised state accepted");
        if (overlap) FZ_CHECK(rs != MUON_OK, "G overlapping W accepted");
        if (!finite_g) FZ_CHECK(rs != MUON_OK, "NaN/Inf in G accepted");
        if (bad_count && st.momentum) FZ_CHECK(rs != MUON_OK, "step counter %lld accepted", ss.st.step);
        if (rs != MUON_OK) {
            FZ_CHECK(fz_snap_same(&snBuf), "W or G changed on error %d (%s)", (int)rs, muon_status_string(rs));
            FZ_CHECK(fz_snap_same(&snS), "step_out written on error %d (%s)", (int)rs, muon_status_string(rs));
            FZ_CHECK(st.momentum == NULL ? memcmp(&ss.st, &st, sizeof st) == 0 : state_same(&ss, &st),
                     "state changed on error %d (%s)", (int)rs, muon_status_string(rs));
        } else {
            FZ_CHECK(fz_snap_same(&snG), "G changed");
            FZ_CHECK(st.step == ss.st.step + 1, "step count");
            if (finite_w) {
                for (i = 0; i < s.rows; i++)
                    FZ_CHECK(fz_all_finite_f(W + i * ldw, s.cols), "W not finite after step %zu, row %zu", t, i);
                FZ_CHECK(fz_all_finite_f(st.momentum, s.rows * s.cols), "momentum not finite after step %zu", t);
                FZ_CHECK(cfg.cap == MUON_CAP_OFF || st.cap_sigma == st.cap_sigma, "cap_sigma NaN");
            }
            if (st.row_v) { /* NorMuon's second moments: finite and >= 0; untouched without NorMuon */
                for (i = 0; i < s.rows; i++)
                    FZ_CHECK(cfg.normuon ? st.row_v[i] >= 0.0 && st.row_v[i] <= DBL_MAX : st.row_v[i] == ss.rv[i],
                             "row_v[%zu] = %g after a step (normuon %d)", i, st.row_v[i], cfg.normuon);
            }
            if (S)
                fz_check_step(S, lds, (const float *)snW.copy, W, ldw, s.rows, s.cols, cfg.lr * cfg.weight_decay,
                              cfg.cautious_wd, 55.0f);
            /* columns past cols inside ldw never written */
            for (i = 0; i + 1 < s.rows; i++)
                FZ_CHECK(memcmp(W + i * ldw + s.cols, (const float *)snW.copy + i * ldw + s.cols,
                                (ldw - s.cols) * sizeof(float)) == 0, "W padding written");
        }
        if (st.momentum || ss.mom) free_snap(&ss);
        fz_snap_free(&snW);
        fz_snap_free(&snG);
        fz_snap_free(&snBuf);
        fz_snap_free(&snS);
        free(S);
        if (rs != MUON_OK) break;
    }
    muon_free(&st);
    muon_free(&st); /* twice: a zeroed state is fine */
    free(buf);
    return 0;
}
