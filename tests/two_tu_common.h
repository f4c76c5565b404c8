/* two_tu_common.h - shared declarations of the two-TU link check (two_tu_a.c, two_tu_b.c). */
#ifndef TWO_TU_H
#define TWO_TU_H
#define TWO_TU_ROWS 9
#define TWO_TU_COLS 7
#ifdef __cplusplus
extern "C" {
#endif
/* Runs a few entry points of both headers in the calling file's translation unit; nonzero if
 * any of them failed. */
int two_tu_b_compute(const float *G, float *ortho, double *diam, float *prn, const char **names);
#ifdef __cplusplus
}
#endif
#endif
