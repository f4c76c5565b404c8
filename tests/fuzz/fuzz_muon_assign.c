/* fuzz_muon_assign.c - muon_assign_owners, muon_assign_owners_ws, muon_assign_owners_workspace_size:
 * fuzzed shape lists (small, tied, huge and zero dimensions), rank counts (negative, zero, more
 * than the matrices), load NULL or not, workspaces exact, short, unaligned or NULL.
 * Checks: on an error owner and load are untouched; count 0, a zero dimension, nranks < 1 and a
 * short workspace are never OK; rows and cols never change; on OK every owner is in range, the
 * loads are the per-rank sums of m*n*min(m,n), the greedy rule holds step by step (replayed
 * here: each matrix, taken in decreasing cost with ties by index, went to a least-loaded rank,
 * the lowest among equals), max load <= total/nranks + the largest cost, and the plain and _ws
 * forms give identical answers. */
#include "muon.h"
#include "fuzz_common.h"

#define MAXC 64

static double cost_of(size_t m, size_t n) { return (double)m * (double)n * (double)(m < n ? m : n); }

static size_t take_dim(fz_in *in)
{
    static const size_t menu[] = {1, 2, 3, 64, 128, 768, 1024, 3072, 4096, 50257};
    uint8_t k = fz_u8(in);
    if (k < 160) return menu[k % 10];
    if (k < 250) return 1 + fz_u8(in) % 200;
    if (k < 253) return 0;
    if (k == 253) return (size_t)-1;
    return (size_t)fz_u32(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    size_t count = fz_u8(&in) % (MAXC + 1), i, k, need;
    size_t rows[MAXC], cols[MAXC], rows0[MAXC], cols0[MAXC];
    int nranks, owner[MAXC], owner0[MAXC], owner2[MAXC], r, invalid = 0, form, with_load;
    double load[80], load0[80], load2[80];
    unsigned char *ws = NULL;
    size_t ws_bytes = 0;
    muon_status st;
    uint8_t rk = fz_u8(&in);

    nranks = rk < 240 ? (int)(rk % 72) - 2 : (rk < 250 ? 1 : (rk == 250 ? -2147483647 - 1 : 2147483647));
    for (i = 0; i < count; i++) {
        rows[i] = take_dim(&in);
        cols[i] = take_dim(&in);
        if (rows[i] == 0 || cols[i] == 0) invalid = 1;
    }
    if (count == 0 || nranks < 1) invalid = 1;
    if (nranks > 70 && !invalid) nranks = 70; /* keep load[] in bounds; INT_MAX only on errors */
    form = fz_u8(&in) % 4;     /* 0, 1: plain; 2: _ws exact (maybe unaligned); 3: _ws short or NULL */
    with_load = fz_u8(&in) & 1;
    memcpy(rows0, rows, sizeof rows);
    memcpy(cols0, cols, sizeof cols);
    memset(owner, 0x6D, sizeof owner);
    memset(load, 0x6E, sizeof load);
    memcpy(owner0, owner, sizeof owner);
    memcpy(load0, load, sizeof load);

    need = muon_assign_owners_workspace_size(count, nranks);
    if (count == 0 || nranks < 1) FZ_CHECK(need == 0, "workspace size %zu (count %zu, nranks %d)", need, count, nranks);
    else FZ_CHECK(need >= 64 + 16 * count + 12 * (size_t)nranks, "workspace size %zu (count %zu, nranks %d)", need, count, nranks);
    {
        uint8_t nullsel = fz_u8(&in); /* 1 in 32: one of rows, cols, owner NULL */
        const size_t *pr = rows, *pc = cols;
        int *po = owner;
        double *pl = with_load ? load : NULL;
        if (nullsel < 8) {
            if (nullsel % 3 == 0) pr = NULL;
            else if (nullsel % 3 == 1) pc = NULL;
            else po = NULL;
            invalid = 1;
        }
        if (form >= 2) {
            size_t off = fz_u8(&in) % 8;
            int ws_null = 0;
            ws_bytes = need;
            if (form == 3) {
                uint8_t d = fz_u8(&in);
                if (d < 128) ws_bytes = need > 16 ? need - 1 - d % 16 : 0;
                else if (d >= 250) ws_null = 1;
            }
            if (ws_bytes > (1u << 20)) ws_bytes = 1u << 20; /* huge nranks: short (must fail) */
            if (ws_null) {
                st = muon_assign_owners_ws(pr, pc, count, nranks, po, pl, NULL, ws_bytes);
                FZ_CHECK(st != MUON_OK, "NULL workspace accepted");
            } else {
                ws = (unsigned char *)fz_malloc(ws_bytes + off);
                st = muon_assign_owners_ws(pr, pc, count, nranks, po, pl, ws + off, ws_bytes);
            }
            if (need == 0 || ws_bytes < need) FZ_CHECK(st != MUON_OK, "short workspace accepted (%zu < %zu)", ws_bytes, need);
        } else {
            st = muon_assign_owners(pr, pc, count, nranks, po, pl);
        }
    }
    FZ_CHECK(memcmp(rows, rows0, sizeof rows) == 0 && memcmp(cols, cols0, sizeof cols) == 0, "inputs changed");
    if (invalid) FZ_CHECK(st != MUON_OK, "invalid arguments accepted (count %zu nranks %d)", count, nranks);
    if (st != MUON_OK) {
        FZ_CHECK(memcmp(owner, owner0, sizeof owner) == 0 && memcmp(load, load0, sizeof load) == 0,
                 "outputs written on status %d", (int)st);
        free(ws);
        return 0;
    }

    /* OK: the documented properties */
    {
        double sums[80], loads[80], total = 0.0, maxc = 0.0, maxload = 0.0;
        char taken[MAXC];
        for (r = 0; r < nranks; r++) sums[r] = loads[r] = 0.0;
        for (i = 0; i < count; i++) {
            double c = cost_of(rows[i], cols[i]);
            FZ_CHECK(owner[i] >= 0 && owner[i] < nranks, "owner[%zu] = %d of %d", i, owner[i], nranks);
            sums[owner[i]] += c;
            total += c;
            if (c > maxc) maxc = c;
        }
        if (with_load) {
            for (r = 0; r < nranks; r++) {
                FZ_CHECK(fabs(load[r] - sums[r]) <= 1e-12 * sums[r], "load[%d] %.17g, sum %.17g", r, load[r], sums[r]);
                if (load[r] > maxload) maxload = load[r];
            }
            for (r = nranks; r < 80; r++) FZ_CHECK(memcmp(&load[r], &load0[r], sizeof(double)) == 0, "load[%d] past nranks written", r);
            FZ_CHECK(maxload <= total / nranks + maxc + 1e-12 * total, "max load %.17g > %.17g/%d + %.17g", maxload, total, nranks, maxc);
        }
        for (i = count; i < MAXC; i++) FZ_CHECK(owner[i] == owner0[i], "owner[%zu] past count written", i);
        /* replay: the next matrix is the first of the largest remaining costs */
        memset(taken, 0, sizeof taken);
        for (k = 0; k < count; k++) {
            size_t best = count;
            int o;
            for (i = 0; i < count; i++)
                if (!taken[i] && (best == count || cost_of(rows[i], cols[i]) > cost_of(rows[best], cols[best]))) best = i;
            taken[best] = 1;
            o = owner[best];
            for (r = 0; r < nranks; r++)
                FZ_CHECK(loads[r] > loads[o] || (loads[r] == loads[o] && r >= o),
                         "matrix %zu went to rank %d (load %.17g), rank %d had %.17g", best, o, loads[o], r, loads[r]);
            loads[o] += cost_of(rows[best], cols[best]);
        }
    }
    /* the other form gives the same answer */
    {
        size_t n2 = muon_assign_owners_workspace_size(count, nranks);
        unsigned char *w2 = (unsigned char *)fz_malloc(n2);
        memset(owner2, 0, sizeof owner2);
        if (form >= 2) st = muon_assign_owners(rows, cols, count, nranks, owner2, load2);
        else st = muon_assign_owners_ws(rows, cols, count, nranks, owner2, load2, w2, n2);
        FZ_CHECK(st == MUON_OK, "second form failed: %d", (int)st);
        FZ_CHECK(memcmp(owner, owner2, count * sizeof(int)) == 0, "forms disagree on owners");
        if (with_load) FZ_CHECK(memcmp(load, load2, (size_t)nranks * sizeof(double)) == 0, "forms disagree on loads");
        free(w2);
    }
    free(ws);
    return 0;
}
