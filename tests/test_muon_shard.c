/* tests/test_muon_shard.c - muon_assign_owners (data-parallel Muon work assignment).
 * The reference is a plain re-simulation written here from the documented rule: take the
 * matrices in decreasing m*n*min(m,n) (ties: lower index), give each to the least-loaded rank
 * (ties: lower rank). It uses O(count^2) selection and O(nranks) scans, nothing shared with
 * the library's heaps.
 */
#include <stdlib.h>
static int t_fail_alloc;
static void *t_malloc(size_t n) { return t_fail_alloc ? NULL : malloc(n); }
#define MUON_MALLOC(sz) t_malloc(sz)
#define MUON_FREE(p) free(p)
#define MUON_IMPLEMENTATION
#include "muon.h"
#include "test.h"

static double ref_cost(size_t m, size_t n) { return (double)m * (double)n * (double)(m < n ? m : n); }

/* the documented greedy, done the slow obvious way; returns 0 on allocation failure */
static int ref_assign(const size_t *rows, const size_t *cols, size_t count, int nranks, int *owner,
                      double *load)
{
    char *taken = (char *)calloc(count, 1);
    size_t step, i;
    int r;
    if (!taken) return 0;
    for (r = 0; r < nranks; r++) load[r] = 0.0;
    for (step = 0; step < count; step++) {
        size_t best = count;
        int rb = 0;
        for (i = 0; i < count; i++) /* strict >: the first of equal costs wins */
            if (!taken[i] && (best == count || ref_cost(rows[i], cols[i]) > ref_cost(rows[best], cols[best])))
                best = i;
        for (r = 1; r < nranks; r++)
            if (load[r] < load[rb]) rb = r;
        taken[best] = 1;
        owner[best] = rb;
        load[rb] += ref_cost(rows[best], cols[best]);
    }
    free(taken);
    return 1;
}

/* random layer shapes from a small menu (many ties) or arbitrary */
static void random_shapes(t_rng *g, size_t count, size_t *rows, size_t *cols, int menu)
{
    static const size_t dims[] = {64, 128, 256, 768, 1024, 3072, 4096};
    size_t i;
    for (i = 0; i < count; i++) {
        if (menu) {
            rows[i] = dims[t_rng_u64(g) % 7];
            cols[i] = dims[t_rng_u64(g) % 7];
        } else {
            rows[i] = 1 + (size_t)(t_rng_u64(g) % 5000);
            cols[i] = 1 + (size_t)(t_rng_u64(g) % 5000);
        }
    }
}

static void test_equal_sizes_round_robin(void)
{
    size_t rows[23], cols[23], i;
    int owner[23], nranks;
    double load[8];
    for (i = 0; i < 23; i++) {
        rows[i] = 768;
        cols[i] = 3072;
    }
    for (nranks = 1; nranks <= 8; nranks++) {
        CHECK(muon_assign_owners(rows, cols, 23, nranks, owner, load) == MUON_OK);
        for (i = 0; i < 23; i++) CHECK(owner[i] == (int)(i % (size_t)nranks));
        for (i = 0; i < (size_t)nranks; i++) {
            size_t mine = 23 / (size_t)nranks + (i < 23 % (size_t)nranks ? 1 : 0);
            CHECK(load[i] == (double)mine * 768.0 * 3072.0 * 768.0);
        }
    }
    /* transposed shapes cost the same: still dealt in index order */
    for (i = 0; i < 23; i += 2) {
        rows[i] = 3072;
        cols[i] = 768;
    }
    CHECK(muon_assign_owners(rows, cols, 23, 4, owner, NULL) == MUON_OK);
    for (i = 0; i < 23; i++) CHECK(owner[i] == (int)(i % 4));
}

static void test_small_hand_example(void)
{
    /* costs 1000 (10x10x10), 8 (2x2x2), 1000, 125 (5x5x5), 8000 (20x20x20) on 2 ranks:
     * order 4 (8000), 0 (1000), 2 (1000), 3 (125), 1 (8);
     * 4 -> r0 (8000); 0 -> r1 (1000); 2 -> r1 (2000); 3 -> r1 (2125); 1 -> r1 (2133) */
    size_t rows[5] = {10, 2, 10, 5, 20}, cols[5] = {10, 2, 10, 5, 20};
    int owner[5], want[5] = {1, 1, 1, 1, 0};
    double load[3];
    size_t i;
    CHECK(muon_assign_owners(rows, cols, 5, 2, owner, load) == MUON_OK);
    for (i = 0; i < 5; i++) CHECK(owner[i] == want[i]);
    CHECK(load[0] == 8000.0 && load[1] == 2133.0);
    /* cost uses min(m, n): 2 x 100 costs 2*100*2 = 400, 20 x 20 costs 8000 */
    rows[0] = 2;
    cols[0] = 100;
    CHECK(muon_assign_owners(rows, cols, 1, 3, owner, load) == MUON_OK);
    CHECK(owner[0] == 0 && load[0] == 400.0 && load[1] == 0.0 && load[2] == 0.0);
}

static void test_greedy_matches_resimulation(void)
{
    t_rng g = {12345};
    size_t count_list[] = {1, 2, 7, 40, 200, 1000};
    int rank_list[] = {1, 2, 3, 8, 64, 1500};
    size_t ci, i;
    int ri, trial;
    for (trial = 0; trial < 2; trial++)
        for (ci = 0; ci < sizeof count_list / sizeof count_list[0]; ci++)
            for (ri = 0; ri < (int)(sizeof rank_list / sizeof rank_list[0]); ri++) {
                size_t count = count_list[ci];
                int nranks = rank_list[ri], r, ok = 1;
                size_t *rows = (size_t *)malloc(count * sizeof(size_t)), *cols = (size_t *)malloc(count * sizeof(size_t));
                int *owner = (int *)malloc(count * sizeof(int)), *want = (int *)malloc(count * sizeof(int));
                double *load = (double *)malloc((size_t)nranks * sizeof(double));
                double *wload = (double *)malloc((size_t)nranks * sizeof(double));
                double total = 0.0, maxc = 0.0, maxload = 0.0, sum = 0.0;
                if (!rows || !cols || !owner || !want || !load || !wload) abort();
                random_shapes(&g, count, rows, cols, trial == 0);
                CHECK(muon_assign_owners(rows, cols, count, nranks, owner, load) == MUON_OK);
                CHECK(ref_assign(rows, cols, count, nranks, want, wload));
                for (i = 0; i < count; i++) ok &= owner[i] == want[i];
                for (r = 0; r < nranks; r++) ok &= load[r] == wload[r];
                CHECK_MSG(ok, "count %zu nranks %d shapes %s", count, nranks, trial ? "free" : "menu");
                /* load sums: each rank's load is the sum of its matrices' costs; totals agree */
                for (r = 0; r < nranks; r++) wload[r] = 0.0;
                for (i = 0; i < count; i++) {
                    double c = ref_cost(rows[i], cols[i]);
                    CHECK(owner[i] >= 0 && owner[i] < nranks);
                    wload[owner[i]] += c;
                    total += c;
                    if (c > maxc) maxc = c;
                }
                for (r = 0; r < nranks; r++) {
                    CHECK_NEAR(load[r], wload[r], 0.0, 1e-12);
                    sum += load[r];
                    if (load[r] > maxload) maxload = load[r];
                }
                CHECK_NEAR(sum, total, 0.0, 1e-12);
                /* LPT bound */
                CHECK(maxload <= total / nranks + maxc + 1e-9 * total);
                free(rows); free(cols); free(owner); free(want); free(load); free(wload);
            }
}

/* the greedy property checked step by step from the output alone: replay the documented order,
 * and at each matrix its owner must have had the least load (lowest rank among equals) */
static void test_greedy_property_replay(void)
{
    t_rng g = {777};
    size_t count = 300, i, k;
    int nranks = 7, r;
    size_t rows[300], cols[300], order[300];
    int owner[300];
    double loads[7];
    random_shapes(&g, count, rows, cols, 1);
    CHECK(muon_assign_owners(rows, cols, count, nranks, owner, NULL) == MUON_OK);
    /* insertion sort by (cost desc, index asc) */
    for (i = 0; i < count; i++) {
        size_t j = i;
        order[i] = i;
        while (j > 0 && ref_cost(rows[order[j - 1]], cols[order[j - 1]]) < ref_cost(rows[order[j]], cols[order[j]])) {
            size_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
            j--;
        }
    }
    for (r = 0; r < nranks; r++) loads[r] = 0.0;
    for (k = 0; k < count; k++) {
        size_t idx = order[k];
        int o = owner[idx], least = 1;
        for (r = 0; r < nranks; r++)
            if (loads[r] < loads[o] || (loads[r] == loads[o] && r < o)) least = 0;
        CHECK_MSG(least, "matrix %zu went to rank %d, which was not the least loaded", idx, o);
        loads[o] += ref_cost(rows[idx], cols[idx]);
    }
}

static void test_determinism_and_ws(void)
{
    t_rng g = {99};
    size_t count = 500, rows[500], cols[500], i, need;
    int a[500], b[500], c[500], nranks = 16, same = 1;
    double la[16], lb[16];
    void *ws;
    random_shapes(&g, count, rows, cols, 1);
    CHECK(muon_assign_owners(rows, cols, count, nranks, a, la) == MUON_OK);
    CHECK(muon_assign_owners(rows, cols, count, nranks, b, lb) == MUON_OK);
    need = muon_assign_owners_workspace_size(count, nranks);
    CHECK(need >= count * 16 + (size_t)nranks * 12);
    ws = malloc(need + 1);
    if (!ws) abort();
    /* unaligned workspace pointer, exact size: same answer */
    CHECK(muon_assign_owners_ws(rows, cols, count, nranks, c, NULL, (char *)ws + 1, need) == MUON_OK);
    for (i = 0; i < count; i++) same &= a[i] == b[i] && a[i] == c[i];
    CHECK(same);
    CHECK(memcmp(la, lb, sizeof la) == 0);
    /* the plain form works without the allocator when its 512-byte stack buffer suffices (24
     * matrices on 4 ranks: 496 bytes), and needs it otherwise (40 on 4: 752 bytes; 500) */
    t_fail_alloc = 1;
    CHECK(muon_assign_owners_workspace_size(24, 4) <= 512 && muon_assign_owners_workspace_size(40, 4) > 512);
    CHECK(muon_assign_owners(rows, cols, 24, 4, b, NULL) == MUON_OK);
    CHECK(muon_assign_owners(rows, cols, 40, 4, b, NULL) == MUON_ERR_NOMEM);
    memset(b, 0x5A, sizeof b);
    memcpy(c, b, sizeof c);
    CHECK(muon_assign_owners(rows, cols, count, nranks, b, lb) == MUON_ERR_NOMEM);
    CHECK(memcmp(b, c, sizeof b) == 0);
    CHECK(muon_assign_owners_ws(rows, cols, count, nranks, b, NULL, ws, need) == MUON_OK); /* never allocates */
    t_fail_alloc = 0;
    free(ws);
    CHECK(muon_assign_owners_workspace_size(0, 4) == 0);
    CHECK(muon_assign_owners_workspace_size(4, 0) == 0);
    CHECK(muon_assign_owners_workspace_size((size_t)-1 / 8, 4) == 0);
}

static void test_more_ranks_than_matrices_and_one_rank(void)
{
    size_t rows[3] = {100, 300, 200}, cols[3] = {100, 300, 200}, i;
    int owner[3];
    double load[10];
    /* nranks > count: biggest to rank 0, next to rank 1, ...; the rest stay empty */
    CHECK(muon_assign_owners(rows, cols, 3, 10, owner, load) == MUON_OK);
    CHECK(owner[1] == 0 && owner[2] == 1 && owner[0] == 2);
    CHECK(load[0] == 27e6 && load[1] == 8e6 && load[2] == 1e6);
    for (i = 3; i < 10; i++) CHECK(load[i] == 0.0);
    /* one rank owns everything */
    CHECK(muon_assign_owners(rows, cols, 3, 1, owner, load) == MUON_OK);
    CHECK(owner[0] == 0 && owner[1] == 0 && owner[2] == 0);
    CHECK(load[0] == 36e6);
    /* a single matrix */
    CHECK(muon_assign_owners(rows, cols, 1, 1, owner, NULL) == MUON_OK);
    CHECK(owner[0] == 0);
}

static void test_errors_leave_outputs_untouched(void)
{
    size_t rows[4] = {8, 16, 4, 2}, cols[4] = {8, 16, 4, 2}, zr[4] = {8, 0, 4, 2}, zc[4] = {8, 16, 4, 0};
    int owner[4], o0[4];
    double load[3], l0[3];
    unsigned char ws[1024];
    size_t need = muon_assign_owners_workspace_size(4, 3);
    memset(owner, 0x7B, sizeof owner);
    memset(load, 0x7C, sizeof load);
    memcpy(o0, owner, sizeof owner);
    memcpy(l0, load, sizeof load);
#define SAME() (memcmp(owner, o0, sizeof owner) == 0 && memcmp(load, l0, sizeof load) == 0)
    CHECK(muon_assign_owners(NULL, cols, 4, 3, owner, load) == MUON_ERR_NULL && SAME());
    CHECK(muon_assign_owners(rows, NULL, 4, 3, owner, load) == MUON_ERR_NULL && SAME());
    CHECK(muon_assign_owners(rows, cols, 4, 3, NULL, load) == MUON_ERR_NULL && SAME());
    CHECK(muon_assign_owners(rows, cols, 0, 3, owner, load) == MUON_ERR_SIZE && SAME());
    CHECK(muon_assign_owners(rows, cols, 4, 0, owner, load) == MUON_ERR_SIZE && SAME());
    CHECK(muon_assign_owners(rows, cols, 4, -2, owner, load) == MUON_ERR_SIZE && SAME());
    CHECK(muon_assign_owners(zr, cols, 4, 3, owner, load) == MUON_ERR_SIZE && SAME());
    CHECK(muon_assign_owners(rows, zc, 4, 3, owner, load) == MUON_ERR_SIZE && SAME());
    CHECK(muon_assign_owners(rows, cols, 4, 3, owner, (double *)(void *)owner) == MUON_ERR_ALIAS && SAME());
    CHECK(muon_assign_owners(rows, cols, 4, 3, (int *)(void *)rows, load) == MUON_ERR_ALIAS && SAME());
    CHECK(muon_assign_owners_ws(rows, cols, 4, 3, owner, load, NULL, need) == MUON_ERR_NULL && SAME());
    CHECK(muon_assign_owners_ws(rows, cols, 4, 3, owner, load, ws, need - 1) == MUON_ERR_SIZE && SAME());
    CHECK(muon_assign_owners_ws(rows, cols, 4, 3, owner, load, owner, need) == MUON_ERR_ALIAS && SAME());
    CHECK(muon_assign_owners_ws(rows, cols, 4, 3, owner, load, ws, need) == MUON_OK);
    CHECK(!SAME());
#undef SAME
    /* rows and cols may be the same array (square matrices) */
    CHECK(muon_assign_owners(rows, rows, 4, 3, owner, NULL) == MUON_OK);
    CHECK(owner[1] == 0 && owner[0] == 1 && owner[2] == 2 && owner[3] == 2);
}

int main(void)
{
    (void)t_rng_normal; /* test.h's, unused here */
    RUN(test_equal_sizes_round_robin);
    RUN(test_small_hand_example);
    RUN(test_greedy_matches_resimulation);
    RUN(test_greedy_property_replay);
    RUN(test_determinism_and_ws);
    RUN(test_more_ranks_than_matrices_and_one_rank);
    RUN(test_errors_leave_outputs_untouched);
    return TEST_REPORT();
}
