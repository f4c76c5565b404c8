/* fuzz_muon_layers.c - muon_step_layers, muon_step_layers_ws, muon_step_layers_workspace_size:
 * 1-4 layers with fuzzed shapes, configs (rates, momentum forms, splits, NorMuon, the cap, thread
 * counts, out-of-range values), gradients (NaN/Inf, huge, denormal), poisoned momenta, step
 * counters, optional step outputs, and hostile placements between layers (two layers on one
 * state, one layer's W or step output inside another's G or W, a shared G, the shared workspace
 * inside a layer's W, workspaces too small, a state without a workspace).
 * Checks: an argument error (NULL, SIZE, DOMAIN, ALIAS, NaN/Inf in G) steps nothing: every W,
 * G, step output and state is as before, and the return value is the lowest-index failing
 * layer's status; otherwise each layer that reports OK holds exactly what muon_step gives on a
 * copy of its state and buffers (bit for bit), each layer that reports an error is as before
 * and muon_step on the copy reports the same error, and the return value is the lowest-index
 * error or OK. Two layers sharing a state, or one writing what another reads, are never OK. */
#include <limits.h>
#include "muon.h"
#include "fuzz_common.h"

enum { NL = 4 };

typedef struct {
    size_t rows, cols, ldw, ldg, lds;
    float *W, *G, *S; /* S NULL: no step output */
    int own_g;        /* G allocated for this layer (else another layer's) */
} lay_buf;

static void state_copy(muon_state *dst, const muon_state *src)
{
    size_t n = src->rows * src->cols;
    memcpy(dst->momentum, src->momentum, n * sizeof(float));
    memcpy(dst->cap_u, src->cap_u, src->rows * sizeof(double));
    memcpy(dst->cap_v, src->cap_v, src->cols * sizeof(double));
    if (src->row_v && dst->row_v) memcpy(dst->row_v, src->row_v, src->rows * sizeof(double));
    dst->step = src->step;
    dst->cap_sigma = src->cap_sigma;
    dst->cap_valid = src->cap_valid;
}

static int state_equal(const muon_state *a, const muon_state *b)
{
    size_t n = a->rows * a->cols;
    return a->rows == b->rows && a->cols == b->cols && a->step == b->step && a->cap_valid == b->cap_valid &&
           memcmp(&a->cap_sigma, &b->cap_sigma, sizeof a->cap_sigma) == 0 &&
           memcmp(a->momentum, b->momentum, n * sizeof(float)) == 0 &&
           memcmp(a->cap_u, b->cap_u, a->rows * sizeof(double)) == 0 &&
           memcmp(a->cap_v, b->cap_v, a->cols * sizeof(double)) == 0 &&
           (!a->row_v || !b->row_v || memcmp(a->row_v, b->row_v, a->rows * sizeof(double)) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    uint8_t op = fz_u8(&in), place = fz_u8(&in);
    size_t count = 1 + fz_u8(&in) % NL, i, j;
    int threads = (int)(fz_u8(&in) % 4) - (fz_u8(&in) % 16 == 0 ? 3 : 0); /* -3..3 */
    int use_ws = op & 1, hostile = 0, argbad = 0, lowest = -1;
    muon_state st[NL], ref[NL];
    muon_config cfg[NL];
    muon_layer L[NL];
    lay_buf b[NL];
    fz_snap snW[NL], snG[NL], snS[NL], snM[NL];
    muon_state before[NL];
    void *ws = NULL;
    size_t ws_bytes = 0;
    muon_status rs;
    static const double ord_lr[] = {0.02, 0.0, 1.0, -1.0};

    memset(st, 0, sizeof st);
    memset(b, 0, sizeof b);
    for (i = 0; i < count; i++) {
        fz_valgen gg = fz_take_valgen(&in), gw = fz_take_valgen(&in);
        uint8_t f = fz_u8(&in);
        size_t k, wn, gn;
        b[i].rows = 1 + fz_u8(&in) % 12;
        b[i].cols = 1 + fz_u8(&in) % 12;
        b[i].ldw = b[i].cols + f % 2;
        b[i].ldg = b[i].cols + (f >> 1) % 2;
        b[i].lds = b[i].cols;
        cfg[i] = muon_default();
        cfg[i].lr = fz_param(&in, ord_lr, 4);
        cfg[i].momentum_form = (muon_momentum_form)(fz_u8(&in) % 2);
        cfg[i].split_rows = (f >> 2) % 4; /* 3 may not divide rows: SIZE */
        cfg[i].normuon = (f >> 4) & 1;
        cfg[i].cap = (muon_cap_mode)((f >> 5) % 3);
        cfg[i].threads = (int)(fz_u8(&in) % 3);
        if (muon_init_ex(&st[i], b[i].rows, b[i].cols, use_ws ? MUON_INIT_NO_WORKSPACE : MUON_INIT_WORKSPACE) !=
                MUON_OK ||
            muon_init(&ref[i], b[i].rows, b[i].cols) != MUON_OK)
            abort();
        switch (fz_u8(&in) % 16) { /* a poisoned state: found while running (momentum) or before */
        case 0: st[i].momentum[fz_u8(&in) % (b[i].rows * b[i].cols)] = NAN; break;
        case 1: st[i].step = LLONG_MAX; break;
        case 2: st[i].momentum[0] = FLT_MAX, cfg[i].momentum_form = MUON_MOMENTUM_SUM; break;
        default: break;
        }
        wn = fz_extent(b[i].rows, b[i].cols, b[i].ldw);
        gn = fz_extent(b[i].rows, b[i].cols, b[i].ldg);
        b[i].W = (float *)fz_malloc(wn * sizeof(float));
        b[i].G = (float *)fz_malloc(gn * sizeof(float));
        b[i].own_g = 1;
        for (k = 0; k < wn; k++) b[i].W[k] = 0.1f * fz_value(&gw, &in, k % b[i].ldw);
        for (k = 0; k < gn; k++) b[i].G[k] = fz_value(&gg, &in, k % b[i].ldg);
        if (f & 0x80) {
            size_t sn = fz_extent(b[i].rows, b[i].cols, b[i].lds);
            b[i].S = (float *)fz_malloc(sn * sizeof(float));
            for (k = 0; k < sn; k++) b[i].S[k] = 55.0f;
        }
    }
    for (i = 0; i < count; i++) {
        memset(&L[i], 0, sizeof L[i]);
        L[i].state = &st[i];
        L[i].cfg = &cfg[i];
        L[i].W = b[i].W, L[i].ldw = b[i].ldw;
        L[i].G = b[i].G, L[i].ldg = b[i].ldg;
        L[i].step_out = b[i].S, L[i].lds = b[i].lds;
        L[i].status = (muon_status)-1;
    }
    /* hostile placements between two layers of the same shape */
    if (count >= 2 && b[0].rows == b[1].rows && b[0].cols == b[1].cols && b[0].ldg == b[1].ldg &&
        b[0].ldw == b[1].ldw) {
        switch (place % 8) {
        case 0: L[1].state = &st[0], hostile = 1; break;          /* ALIAS: one state, two layers */
        case 1: L[1].W = b[0].W, hostile = 1; break;              /* ALIAS */
        case 2: L[1].G = b[0].G; break;                           /* allowed: a shared G */
        case 3: /* ALIAS: reads what layer 0 writes (a G of the same extent as that W) */
            if (b[1].ldg == b[0].ldw) L[1].G = b[0].W, hostile = 1;
            break;
        case 4: if (b[0].S) L[1].step_out = b[0].S, hostile = 1; break; /* ALIAS */
        case 5: /* ALIAS: the shared workspace inside a layer's W (the _ws form only) */
            if (use_ws) hostile = 2;
            break;
        default: break;
        }
    }
    if (use_ws) {
        ws_bytes = muon_step_layers_workspace_size(L, count, threads);
        switch (fz_u8(&in) % 8) {
        case 0: ws_bytes /= 3; break;   /* maybe below the largest one-thread size: SIZE */
        case 1: ws_bytes = 64; break;    /* SIZE */
        default: break;
        }
        ws = fz_malloc(ws_bytes ? ws_bytes : 64);
        if (hostile == 2) { /* layer 1's W placed inside the workspace */
            size_t wn = fz_extent(b[1].rows, b[1].cols, b[1].ldw) * sizeof(float);
            free(ws);
            ws_bytes = (ws_bytes > wn ? ws_bytes : wn) + 64;
            ws = fz_malloc(ws_bytes);
            memcpy(ws, b[1].W, wn);
            L[1].W = (float *)ws;
        }
    }
    for (i = 0; i < count; i++) {
        snW[i] = fz_take_snap(b[i].W, fz_extent(b[i].rows, b[i].cols, b[i].ldw) * sizeof(float));
        snG[i] = fz_take_snap(b[i].G, fz_extent(b[i].rows, b[i].cols, b[i].ldg) * sizeof(float));
        snS[i] = fz_take_snap(b[i].S, b[i].S ? fz_extent(b[i].rows, b[i].cols, b[i].lds) * sizeof(float) : 0);
        snM[i] = fz_take_snap(st[i].momentum, b[i].rows * b[i].cols * sizeof(float));
        before[i] = st[i];
        state_copy(&ref[i], &st[i]);
    }
    rs = use_ws ? muon_step_layers_ws(L, count, threads, ws, ws_bytes ? ws_bytes : 64)
                : muon_step_layers(L, count, threads);
    for (i = 0; i < count; i++) {
        const muon_state *sp = L[i].state;
        const float *g = (const float *)(L[i].G == b[i].G ? snG[i].copy : L[i].G == b[0].G ? snG[0].copy : snW[0].copy);
        const float *w = (const float *)snW[i].copy;
        size_t r;
        FZ_CHECK(L[i].status != (muon_status)-1, "layer %zu status not written (rs %d)", i, (int)rs);
        if (L[i].status != MUON_OK && lowest < 0) lowest = (int)i;
        /* what the checks before any step see: arguments, NaN/Inf in G (in W under the cap), a
         * counter that cannot step; the rest (the momentum, the result's range) shows while running */
        if (L[i].status == MUON_ERR_NULL || L[i].status == MUON_ERR_SIZE || L[i].status == MUON_ERR_ALIAS ||
            L[i].status == MUON_ERR_DOMAIN)
            argbad = 1;
        for (r = 0; r < b[i].rows; r++) {
            if (!fz_all_finite_f(g + r * b[i].ldg, b[i].cols)) argbad = 1;
            if (cfg[i].cap != MUON_CAP_OFF && !fz_all_finite_f(w + r * b[i].ldw, b[i].cols)) argbad = 1;
        }
        if (sp->step == LLONG_MAX) argbad = 1;
    }
    if (hostile) FZ_CHECK(rs == MUON_ERR_ALIAS || (rs != MUON_OK && argbad), "a hostile placement gave %d", (int)rs);
    if (threads < 0) FZ_CHECK(rs == MUON_ERR_DOMAIN, "threads %d gave %d", threads, (int)rs);
    FZ_CHECK(rs == (lowest < 0 ? MUON_OK : L[lowest].status), "return %d, lowest failing layer %d", (int)rs, lowest);
    if (argbad || threads < 0) {
        /* an argument error: nothing stepped, anywhere */
        FZ_CHECK(rs != MUON_OK, "an argument error in a layer, and OK");
        for (i = 0; i < count; i++) {
            FZ_CHECK(fz_snap_same(&snW[i]) && fz_snap_same(&snG[i]) && fz_snap_same(&snS[i]) && fz_snap_same(&snM[i]),
                     "layer %zu written on argument error %d", i, (int)rs);
            FZ_CHECK(st[i].step == before[i].step, "layer %zu stepped on argument error %d", i, (int)rs);
        }
    } else {
        FZ_CHECK(!hostile, "a hostile placement ran (%d)", (int)rs);
        /* every layer ran: each as muon_step on a copy would leave it */
        for (i = 0; i < count; i++) {
            size_t wn = fz_extent(b[i].rows, b[i].cols, b[i].ldw);
            size_t sn = b[i].S ? fz_extent(b[i].rows, b[i].cols, b[i].lds) : 0;
            float *Wr = (float *)fz_malloc(wn * sizeof(float)), *Sr = b[i].S ? (float *)fz_malloc(sn * sizeof(float)) : NULL;
            muon_status r;
            memcpy(Wr, snW[i].copy, wn * sizeof(float));
            if (Sr) for (j = 0; j < sn; j++) Sr[j] = 55.0f;
            r = muon_step(&ref[i], &cfg[i], Wr, b[i].ldw, (const float *)(L[i].G == b[i].G ? snG[i].copy : snG[0].copy),
                          b[i].ldg, Sr, b[i].lds); /* a shared G (allowed) is layer 0's */
            FZ_CHECK(r == L[i].status, "layer %zu: muon_step gives %d, the layers call %d", i, (int)r, (int)L[i].status);
            FZ_CHECK(memcmp(Wr, b[i].W, wn * sizeof(float)) == 0, "layer %zu: W differs from muon_step's", i);
            FZ_CHECK(!Sr || memcmp(Sr, b[i].S, sn * sizeof(float)) == 0, "layer %zu: S differs from muon_step's", i);
            FZ_CHECK(state_equal(&ref[i], &st[i]), "layer %zu: state differs from muon_step's", i);
            free(Wr);
            free(Sr);
        }
    }
    for (i = 0; i < count; i++) {
        fz_snap_free(&snW[i]);
        fz_snap_free(&snG[i]);
        fz_snap_free(&snS[i]);
        fz_snap_free(&snM[i]);
        muon_free(&st[i]);
        muon_free(&ref[i]);
        free(b[i].W);
        free(b[i].G);
        free(b[i].S);
    }
    free(ws);
    return 0;
}
