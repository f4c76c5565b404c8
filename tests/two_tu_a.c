/* two_tu_a.c - first translation unit of the two-TU link check (tests/reliability.mk).
 *
 * One program of two files that both include muon.h and rownorm.h. Default build: this file
 * alone defines MUON_IMPLEMENTATION and ROWNORM_IMPLEMENTATION (extern linkage); with
 * -DTWO_TU_STATIC both files define them under MUON_STATIC / RN_STATIC. Either way the link
 * must succeed, and both files must compute bit-identical results from the same input (in the
 * static build they run distinct copies of the code, compiled with the same flags).
 * Built by tests/reliability.mk for gcc and clang, C99, C11, C++11 and C++17 with -Werror.
 */
#ifdef TWO_TU_STATIC
#define RN_STATIC
#define MUON_STATIC
#endif
#define MUON_IMPLEMENTATION
#define ROWNORM_IMPLEMENTATION
#include "muon.h"
#include "rownorm.h"
#include "two_tu_common.h"
#include "test.h"

#define N_ELEMS (TWO_TU_ROWS * TWO_TU_COLS)

static float g_in[N_ELEMS];

static void fill_input(void)
{
    t_rng r = {42};
    int i;
    for (i = 0; i < N_ELEMS; i++) g_in[i] = (float)t_rng_normal(&r);
}

static void test_both_units_agree(void)
{
    float oa[N_ELEMS], ob[N_ELEMS], pa[N_ELEMS], pb[N_ELEMS];
    double da = -1.0, db = -2.0;
    const char *na[2], *nb[2] = {NULL, NULL};
    int bad_a = 0;
    memset(oa, 0, sizeof oa);
    memset(ob, 0xff, sizeof ob);
    memset(pa, 0, sizeof pa);
    memset(pb, 0xff, sizeof pb);
    bad_a |= muon_orthogonalize(g_in, TWO_TU_ROWS, TWO_TU_COLS, TWO_TU_COLS, NULL, oa, TWO_TU_COLS) != MUON_OK;
    bad_a |= rn_row_diameter(g_in, TWO_TU_ROWS, TWO_TU_COLS, TWO_TU_COLS, &da, NULL, NULL) != RN_OK;
    bad_a |= rn_projected_rownorm(g_in, TWO_TU_ROWS, TWO_TU_COLS, TWO_TU_COLS, 1e-8f, pa, TWO_TU_COLS) != RN_OK;
    na[0] = muon_status_string(MUON_ERR_SIZE);
    na[1] = rn_status_string(RN_ERR_SIZE);
    CHECK(bad_a == 0);
    CHECK(two_tu_b_compute(g_in, ob, &db, pb, nb) == 0);
    CHECK(memcmp(oa, ob, sizeof oa) == 0);
    CHECK(memcmp(pa, pb, sizeof pa) == 0);
    CHECK(memcmp(&da, &db, sizeof da) == 0);
    CHECK(da > 0.0);
    CHECK(nb[0] != NULL && nb[1] != NULL && strcmp(na[0], nb[0]) == 0 && strcmp(na[1], nb[1]) == 0);
}

static void test_versions(void)
{
    char v[64];
    sprintf(v, "%d.%d.%d %d.%d.%d", MUON_VERSION_MAJOR, MUON_VERSION_MINOR, MUON_VERSION_PATCH,
            RN_VERSION_MAJOR, RN_VERSION_MINOR, RN_VERSION_PATCH);
    CHECK(strlen(v) >= 11);
    CHECK(strlen(muon_status_string(MUON_OK)) > 0 && strlen(rn_status_string(RN_OK)) > 0);
    /* Hilbert distance of two logit vectors that differ by (0, 1, 3): oscillation 3 */
    {
        const float z0[3] = {0.5f, -1.0f, 2.0f}, z1[3] = {0.5f, 0.0f, 5.0f};
        double d = -1.0;
        CHECK(rn_hilbert_logits(z0, z1, 3, &d) == RN_OK);
        CHECK_NEAR(d, 3.0, 0.0, 1e-12);
    }
}

int main(void)
{
    fill_input();
    RUN(test_both_units_agree);
    RUN(test_versions);
    return TEST_REPORT();
}
