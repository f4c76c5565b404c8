/* spectra.h - the block matrices' norms and spectra over training (issue 50): an optional CSV
 * log beside train.csv, off by default (train_options.norms_every = 0 computes nothing).
 *
 * For every block matrix W (m x n: layers.L.wq .. w_down; not the embedding, not the head):
 *   frob         ||W||_F (sum of squares in double)
 *   spectral     ||W||_2 = sigma_1, from the exact singular values (muon_spectral_decomposition)
 *   row_factor   the row-magnitude factor max_i ||w_i|| (= ||r||_inf, r the row norms)
 *   coherence    the row-coherence factor ||W||_2 / max_i ||w_i||, in [1, sqrt(m)]: with unit rows
 *                d_i, C = D D^T and p = r / ||r||_inf, sqrt(lambda_max(diag(p) C diag(p))) (SPEC 2.3;
 *                the library computes it as the top singular value of the rows p_i d_i)
 *   min_entropy  H_inf = -log(sigma_1^2 / sum_k sigma_k^2) = log(||W||_F^2 / ||W||_2^2) (SPEC 2.4)
 * so spectral = row_factor * coherence. The decomposition is W = diag(r) D; the magnitude factor
 * is the largest row norm (not ||r||_2) because then the coherence factor is 1 for orthogonal
 * rows and sqrt(m) for identical ones, whatever the magnitudes, and the product is exact.
 *
 * The log (CSV, header line then one row per matrix per sample):
 *   step,tensor,rows,cols,frob,spectral,row_factor,coherence,min_entropy
 * sampled at step 0 (the initial weights), every `every` updates, and after the last update;
 * numbers %.17g. The exact singular values cost O(m n min(m, n)) per sweep of one-sided Jacobi
 * and allocate (muon_spectral_decomposition): a diagnostic for small models, every few updates. */
#ifndef GPT_SPECTRA_H
#define GPT_SPECTRA_H

#include <stddef.h>
#include <stdio.h>

#include "model.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct spectra_norms {
    double frob, spectral, row_factor, coherence, min_entropy;
} spectra_norms;

/* The five quantities of one m x n matrix (leading dimension ld). GPT_ERR_DOMAIN for W == 0 or
 * NaN/Inf in W, GPT_ERR_SIZE, GPT_ERR_NULL, GPT_ERR_NOMEM; *out untouched on error. */
gpt_status spectra_matrix(const float *W, size_t rows, size_t cols, size_t ld, spectra_norms *out);

/* The header line of the log. */
void spectra_log_header(FILE *f);
/* One row per block matrix of the model cfg with parameters params (the host block), at `step`.
 * On error the message (naming the tensor) is in err. */
gpt_status spectra_log_rows(FILE *f, long step, const gpt_config *cfg, const float *params, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif /* GPT_SPECTRA_H */
