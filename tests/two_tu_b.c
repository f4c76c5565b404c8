/* two_tu_b.c - second translation unit of the two-TU link check (tests/reliability.mk).
 *
 * Includes both headers. Without TWO_TU_STATIC only two_tu_a.c defines the implementations
 * and this file uses the extern definitions from there; with TWO_TU_STATIC both files define
 * them under RN_STATIC / MUON_STATIC, so each file has its own private copy and the link must
 * still see no duplicate symbol. two_tu_a.c compares this file's results with its own.
 */
#ifdef TWO_TU_STATIC
#define RN_STATIC
#define MUON_STATIC
#define MUON_IMPLEMENTATION
#define ROWNORM_IMPLEMENTATION
#endif
#include "muon.h"
#include "rownorm.h"
#include "two_tu_common.h"

int two_tu_b_compute(const float *G, float *ortho, double *diam, float *prn, const char **names)
{
    int bad = 0;
    bad |= muon_orthogonalize(G, TWO_TU_ROWS, TWO_TU_COLS, TWO_TU_COLS, NULL, ortho, TWO_TU_COLS) != MUON_OK;
    bad |= rn_row_diameter(G, TWO_TU_ROWS, TWO_TU_COLS, TWO_TU_COLS, diam, NULL, NULL) != RN_OK;
    bad |= rn_projected_rownorm(G, TWO_TU_ROWS, TWO_TU_COLS, TWO_TU_COLS, 1e-8f, prn, TWO_TU_COLS) != RN_OK;
    names[0] = muon_status_string(MUON_ERR_SIZE);
    names[1] = rn_status_string(RN_ERR_SIZE);
    return bad;
}
