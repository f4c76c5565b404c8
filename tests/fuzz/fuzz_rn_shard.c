/* fuzz_rn_shard.c - the sharded RowNorm step: rn_rownorm_shard_exchange_size,
 * rn_rownorm_shard_begin, rn_rownorm_shard_middle, rn_rownorm_shard_finish, against
 * rn_rownorm_step on the same inputs, 1-3 steps, 1-4 shards of fuzzed sizes, fuzzed configs
 * (every flag bit, hostile numbers), gradients with NaN/Inf in some shard, in-place exchange
 * buffers, out-of-order calls and corrupted all-reduce results.
 * Checks: every rank returns the same status at each phase and the status matches the
 * unsharded step's (OK, RN_ERR_DOMAIN, RN_ERR_SIZE, RN_ERR_NONFINITE); on an error W, S and
 * every state (struct and state block bytes) are as before the step; out-of-order calls are
 * RN_ERR_PHASE and change nothing; on OK the union of the shards' B equals the unsharded B bit
 * for bit, t advanced once, and with one shard W and S equal the unsharded ones bit for bit;
 * the exchange counts are the documented formula. */
#include "rownorm.h"
#include "fuzz_common.h"

#define FZ_MAXP 4

typedef struct {
    rn_rownorm_state st;
    unsigned char *mem;
    size_t bytes;
} fz_state_snap;

static void snap_take(fz_state_snap *s, const rn_rownorm_state *st)
{
    s->st = *st;
    s->bytes = rn_rownorm_init_workspace_size(st->rows, st->cols);
    s->mem = (unsigned char *)fz_malloc(s->bytes);
    memcpy(s->mem, st->rn__mem, s->bytes);
}
static int snap_same(const fz_state_snap *s, const rn_rownorm_state *st)
{
    return memcmp(&s->st, st, sizeof *st) == 0 && memcmp(s->mem, st->rn__mem, s->bytes) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    uint8_t op = fz_u8(&in), op2 = fz_u8(&in);
    fz_shape s = fz_take_shape(&in, 40, 12);
    fz_valgen gw = fz_take_valgen(&in), gg = fz_take_valgen(&in);
    rn_rownorm_config cfg = rn_rownorm_default();
    static const double ord_lr[] = {3.2e-3, 0.0, 0.1, 1.0};
    static const double ord_b[] = {0.95, 0.0, 0.5, 0.9};
    static const double ord_eps[] = {1e-8, 0.0, 1e-3};
    rn_rownorm_state un, st[FZ_MAXP];
    size_t P, off[FZ_MAXP + 1], p, i, t, steps = 1 + fz_u8(&in) % 3, nx, ldw, lds, wn, sn;
    float *W1, *W2, *S1, *S2, *G;
    double *snd[FZ_MAXP], *rcv;
    int in_place = (op >> 2) & 1, with_s = (op >> 3) & 1;

    if (op & 1) {
        cfg.lr = fz_param(&in, ord_lr, 4);
        cfg.beta = fz_param(&in, ord_b, 4);
        cfg.eps = fz_param(&in, ord_eps, 3);
        cfg.weight_decay = fz_param(&in, ord_lr, 4);
        cfg.flags = fz_u8(&in) % 8 == 0 ? fz_u32(&in) : fz_u8(&in) % 32;
#ifdef FZ_AVOID_KNOWN_RN_TINY_EPS
        if (cfg.eps > 0.0 && cfg.eps < 1e-290) cfg.eps = 0.0;
#endif
    }
    if (s.bogus == 1) { /* no state can be made; the size query must refuse cols 0 */
        FZ_CHECK(s.cols != 0 || rn_rownorm_shard_exchange_size(0) == 0, "exchange size of 0 cols");
        return 0;
    }
    nx = rn_rownorm_shard_exchange_size(s.cols);
    FZ_CHECK(nx == 2 * s.cols + 2, "exchange size %zu for %zu cols", nx, s.cols);
    P = 1 + (size_t)(op >> 4) % FZ_MAXP;
    if (P > s.rows) P = s.rows;
    off[0] = 0; off[P] = s.rows;
    for (p = 1; p < P; p++) { /* strictly increasing cut points */
        size_t lo = off[p - 1] + 1, hi = s.rows - (P - p);
        off[p] = lo + fz_u8(&in) % (hi - lo + 1);
    }
    ldw = s.bogus ? s.ld : s.cols + fz_u8(&in) % 3;
    lds = s.bogus ? s.ld : s.cols + fz_u8(&in) % 2;
    wn = s.bogus ? s.alloc : fz_extent(s.rows, s.cols, ldw);
    sn = s.bogus ? s.alloc : fz_extent(s.rows, s.cols, lds);
    W1 = (float *)fz_malloc(wn * sizeof(float)); W2 = (float *)fz_malloc(wn * sizeof(float));
    S1 = (float *)fz_malloc(sn * sizeof(float)); S2 = (float *)fz_malloc(sn * sizeof(float));
    G = (float *)fz_malloc(s.alloc * sizeof(float));
    for (i = 0; i < wn; i++) W1[i] = W2[i] = fz_value(&gw, &in, s.bogus ? i : i % ldw);
    for (i = 0; i < sn; i++) S1[i] = S2[i] = -11.0f;
    FZ_CHECK(rn_rownorm_init(&un, s.rows, s.cols) == RN_OK, "init");
    for (p = 0; p < P; p++) {
        FZ_CHECK(rn_rownorm_init(&st[p], off[p + 1] - off[p], s.cols) == RN_OK, "init shard");
        snd[p] = (double *)fz_malloc(nx * sizeof(double));
    }
    rcv = (double *)fz_malloc(nx * sizeof(double));

    for (t = 0; t < steps; t++) {
        fz_state_snap sn0[FZ_MAXP];
        fz_snap sw = fz_take_snap(W2, wn * sizeof(float)), ss = fz_take_snap(S2, sn * sizeof(float));
        size_t n[FZ_MAXP], nr;
        rn_status ru, rb[FZ_MAXP], rm = RN_OK, rf;
        float *so1 = with_s ? S1 : NULL, *so2 = with_s ? S2 : NULL;
        for (i = 0; i < s.alloc; i++) G[i] = fz_value(&gg, &in, s.bogus ? i : i % s.ld);
        for (p = 0; p < P; p++) snap_take(&sn0[p], &st[p]);
        ru = rn_rownorm_step(&un, &cfg, W1, ldw, G, s.ld, so1, lds);
        if (op2 & 1) { /* out of order: middle and finish before begin */
            FZ_CHECK(rn_rownorm_shard_middle(&st[0], G, s.ld, rcv, snd[0], &n[0]) == RN_ERR_PHASE, "middle before begin");
            FZ_CHECK(rn_rownorm_shard_finish(&st[0], W2, ldw, rcv, so2, lds) == RN_ERR_PHASE, "finish before begin");
            FZ_CHECK(snap_same(&sn0[0], &st[0]) && fz_snap_same(&sw), "out-of-order call changed something");
        }
        for (p = 0; p < P; p++) {
            n[p] = 12345;
            rb[p] = rn_rownorm_shard_begin(&st[p], &cfg, s.bogus ? G : G + off[p] * s.ld, s.ld, snd[p], &n[p]); /* bogus ld: no offset arithmetic */
            /* the same config and ld everywhere: the same answer (a huge ld is fine for a
             * one-row shard, so only valid shapes must agree) */
            if (!s.bogus) FZ_CHECK(rb[p] == rb[0], "ranks disagree at begin: %d vs %d", (int)rb[p], (int)rb[0]);
            if (rb[p] != RN_OK) FZ_CHECK(snap_same(&sn0[p], &st[p]) && n[p] == 12345, "begin wrote on error");
            if (rb[p] != RN_OK && rb[0] == RN_OK) rb[0] = rb[p];
        }
        if (s.bogus) {
            int multi = 0;
            for (p = 0; p < P; p++) multi |= off[p + 1] - off[p] > 1;
            /* a huge ld is valid for shards of one row: nothing more to check then */
            FZ_CHECK(rb[0] != RN_OK || (!multi && s.ld >= s.cols), "invalid ld accepted");
            if (ru == RN_OK) ru = RN_ERR_SIZE; /* stop after this step */
            goto step_done;
        }
        if (rb[0] != RN_OK) {
            FZ_CHECK(ru == rb[0] || s.bogus, "begin %d, unsharded step %d", (int)rb[0], (int)ru);
            FZ_CHECK(ru != RN_OK, "begin failed, unsharded step OK");
            goto step_done;
        }
        FZ_CHECK(n[0] == ((cfg.flags & (RN_NO_CENTER_IN | RN_REFERENCE_COMPAT)) ? 2 : 2 + 2 * s.cols), "count %zu", n[0]);
        nr = n[0];
        for (i = 0; i < nr; i++) { double a = 0.0; for (p = 0; p < P; p++) a += snd[p][i]; rcv[i] = a; }
        if (op2 & 2) { /* a corrupted all-reduce (row count too small): refused, nothing changed */
            double keep = rcv[1];
            rcv[1] = (double)(s.rows > 1 ? off[1] - off[0] - 1 : 0) - 0.5;
            FZ_CHECK(rn_rownorm_shard_middle(&st[0], G, s.ld, rcv, snd[0], &n[0]) == RN_ERR_DOMAIN, "bad row count accepted");
            rcv[1] = keep;
        }
        for (p = 0; p < P; p++) {
            const double *r = rcv;
            rn_status x;
            if (in_place) { memcpy(snd[p], rcv, nr * sizeof(double)); r = snd[p]; }
            x = rn_rownorm_shard_middle(&st[p], G + off[p] * s.ld, s.ld, r, snd[p], &n[p]);
            if (p == 0) rm = x;
            FZ_CHECK(x == rm, "ranks disagree at middle: %d vs %d", (int)x, (int)rm);
        }
        FZ_CHECK(rm == RN_OK || rm == RN_ERR_NONFINITE, "middle %d", (int)rm);
        if (rm != RN_OK) {
            FZ_CHECK(ru == RN_ERR_NONFINITE, "sharded NONFINITE, unsharded %d", (int)ru);
            for (p = 0; p < P; p++) FZ_CHECK(snap_same(&sn0[p], &st[p]), "state changed by a refused step");
            FZ_CHECK(fz_snap_same(&sw) && fz_snap_same(&ss), "W or S changed by a refused step");
            goto step_done;
        }
        FZ_CHECK(ru == RN_OK, "sharded OK, unsharded %d", (int)ru);
        if (op2 & 4) FZ_CHECK(rn_rownorm_shard_begin(&st[0], &cfg, G, s.ld, snd[0], &n[0]) == RN_ERR_PHASE, "begin after middle");
        if (op2 & 8) FZ_CHECK(rn_rownorm_step(&st[0], &cfg, W2, ldw, G, s.ld, NULL, 0) == RN_ERR_PHASE, "step after middle");
        nr = n[0];
        for (p = 0; p < P; p++) FZ_CHECK(n[p] == nr, "ranks disagree on the count");
        FZ_CHECK(nr == ((cfg.flags & (RN_NO_CENTER_OUT | RN_REFERENCE_COMPAT)) ? 0 : s.cols), "count %zu", nr);
        for (i = 0; i < nr; i++) { double a = 0.0; for (p = 0; p < P; p++) a += snd[p][i]; rcv[i] = a; }
        for (p = 0; p < P; p++) {
            const double *r = nr ? rcv : NULL;
            if (in_place && nr) { memcpy(snd[p], rcv, nr * sizeof(double)); r = snd[p]; }
            rf = rn_rownorm_shard_finish(&st[p], W2 + off[p] * ldw, ldw, r, so2 ? so2 + off[p] * lds : NULL, lds);
            FZ_CHECK(rf == RN_OK, "finish %d", (int)rf);
        }
        for (p = 0; p < P; p++) {
            FZ_CHECK(st[p].t == un.t && st[p].rn__sphase == 0, "t %llu vs %llu", st[p].t, un.t);
            FZ_CHECK(memcmp(st[p].B, un.B + off[p] * s.cols, (off[p + 1] - off[p]) * s.cols * sizeof(float)) == 0,
                     "B of shard %zu differs", p);
        }
        if (P == 1) {
            FZ_CHECK(memcmp(W1, W2, wn * sizeof(float)) == 0, "one shard: W differs from rn_rownorm_step");
            FZ_CHECK(memcmp(S1, S2, sn * sizeof(float)) == 0, "one shard: S differs from rn_rownorm_step");
        }
    step_done:
        for (p = 0; p < P; p++) free(sn0[p].mem);
        fz_snap_free(&sw);
        fz_snap_free(&ss);
        if (ru != RN_OK) break;
    }
    rn_rownorm_free(&un);
    for (p = 0; p < P; p++) { rn_rownorm_free(&st[p]); free(snd[p]); }
    free(rcv); free(W1); free(W2); free(S1); free(S2); free(G);
    return 0;
}
